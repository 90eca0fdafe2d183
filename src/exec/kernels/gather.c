/* gather.c - the gather kernel family: Gather, GatherElements, GatherND,
 * their scatter counterparts (Scatter, ScatterElements, ScatterND, with
 * ONNX's reductions), and Unique, which selects elements too (with its
 * indices, inverse indices and counts, sorted or in order of first
 * occurrence). Elements move as bytes (every dtype of whole bytes,
 * STRING entries through gwr_value_set_string); reductions work on every
 * numeric dtype and bool. Every index is checked before it is used:
 * negative ones wrap once (-n..-1), anything else out of range is an
 * error naming the index and the bound. */
#include <stdlib.h>
#include <string.h>

#include "exec/kernels/kernel_util.h"

#define MAXR GWR_MAX_RANK

/* A copy of v as output 0 (the start of every scatter). */
static gwr_value *copy_out(gwr_kctx *k, const gwr_value *v, int64_t esz) {
    gwr_value *o = gwr_k_out(k, 0, v->dtype, v->rank, v->dims);
    if (o && gwr_ku_copy_run(k, o, 0, v, 0, v->numel, esz)) return NULL;
    return o;
}

static int is_index(const gwr_value *v) { return v->dtype == GWR_INT64 || v->dtype == GWR_INT32; }

static int64_t index_at(const gwr_value *v, int64_t j) {
    if (v->dtype == GWR_INT64) {
        int64_t x;
        memcpy(&x, (const int64_t *)v->data + j, sizeof x);
        return x;
    }
    int32_t x;
    memcpy(&x, (const int32_t *)v->data + j, sizeof x);
    return x;
}

/* Index j of v wrapped into [0, n); -1 after gwr_k_fail when out of range. */
static int64_t wrap_index(gwr_kctx *k, const gwr_value *v, int64_t j, int64_t n, const char *what) {
    int64_t i = index_at(v, j), w = i < 0 ? i + n : i;
    if (w < 0 || w >= n)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s %lld (entry %lld) is out of range for a dim of %lld", what,
                          (long long)i, (long long)j, (long long)n), -1;
    return w;
}

/* ---- Gather --------------------------------------------------------------- */

static gwr_status k_gather(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need(k, 0), *ix = gwr_ku_need(k, 1);
    if (!x || !ix) return GWR_ERR_INVALID_ARG;
    int64_t esz = gwr_ku_elem_size(k, x->dtype);
    if (esz < 0) return GWR_ERR_UNSUPPORTED;
    if (!is_index(ix)) return gwr_k_fail(k, GWR_ERR_TYPE, "indices must be int32 or int64, not %s", gwr_dtype_name(ix->dtype));
    int r = x->rank, q = ix->rank;
    if (r < 1) return gwr_k_fail(k, GWR_ERR_SHAPE, "data must have rank 1 or more");
    int64_t axis_attr = gwr_k_int(k, "axis", 0);
    int axis = gwr_axis(axis_attr, r);
    if (axis < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)axis_attr, r);
    if (r - 1 + q > MAXR) return gwr_k_fail(k, GWR_ERR_SHAPE, "the output rank would exceed %d", MAXR);
    int64_t od[MAXR], n = x->dims[axis];
    int orank = 0;
    for (int i = 0; i < axis; i++) od[orank++] = x->dims[i];
    for (int i = 0; i < q; i++) od[orank++] = ix->dims[i];
    for (int i = axis + 1; i < r; i++) od[orank++] = x->dims[i];
    for (int64_t j = 0; j < ix->numel; j++)
        if (wrap_index(k, ix, j, n, "index") < 0) return GWR_ERR_INVALID_ARG;
    gwr_value *o = gwr_k_out(k, 0, x->dtype, orank, od);
    if (!o) return GWR_ERR_NOMEM;
    if (!o->numel) return GWR_OK;
    int64_t outer = gwr_shape_numel(axis, x->dims), inner = gwr_shape_numel(r - axis - 1, x->dims + axis + 1);
    int64_t ni = ix->numel, oi = 0;
    if (esz == 4 && inner == 1) { /* gathering single floats / int32s */
        const char *s = x->data;
        char *d = o->data;
        for (int64_t p = 0; p < outer; p++)
            for (int64_t j = 0; j < ni; j++) {
                int64_t i = index_at(ix, j);
                if (i < 0) i += n;
                memcpy(d + 4 * oi++, s + 4 * (p * n + i), 4);
            }
        return GWR_OK;
    }
    for (int64_t p = 0; p < outer; p++)
        for (int64_t j = 0; j < ni; j++) {
            int64_t i = index_at(ix, j);
            if (i < 0) i += n;
            if (gwr_ku_copy_run(k, o, oi, x, (p * n + i) * inner, inner, esz)) return GWR_ERR_NOMEM;
            oi += inner;
        }
    return GWR_OK;
}

/* ---- GatherElements, ScatterElements, Scatter ---------------------------- */

/* Checks the common frame of GatherElements / ScatterElements: indices of
 * the data's rank, no larger than the data off the axis; sets *axis. */
static gwr_status elements_axis(gwr_kctx *k, const gwr_value *x, const gwr_value *ix, int *axis) {
    if (!is_index(ix)) return gwr_k_fail(k, GWR_ERR_TYPE, "indices must be int32 or int64, not %s", gwr_dtype_name(ix->dtype));
    int r = x->rank;
    if (r < 1) return gwr_k_fail(k, GWR_ERR_SHAPE, "data must have rank 1 or more");
    if (ix->rank != r) return gwr_k_fail(k, GWR_ERR_SHAPE, "indices have rank %d, data rank %d", ix->rank, r);
    int64_t axis_attr = gwr_k_int(k, "axis", 0);
    if ((*axis = gwr_axis(axis_attr, r)) < 0)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)axis_attr, r);
    for (int i = 0; i < r; i++)
        if (i != *axis && ix->dims[i] > x->dims[i])
            return gwr_k_fail(k, GWR_ERR_SHAPE, "indices dim %d is %lld, larger than the data's %lld", i, (long long)ix->dims[i],
                              (long long)x->dims[i]);
    return GWR_OK;
}

/* Calls each (j, data offset) of the index tensor in order: the data
 * offset of element j of ix with its axis coordinate replaced by the index
 * (wrapped and checked). Written as a macro so the body is inlined. */
#define FOR_ELEMENTS(k, x, ix, axis, J, OFF, BODY)                                                      \
    do {                                                                                                \
        int64_t xs_[MAXR], idx_[MAXR] = {0}, base_ = 0, n_ = (x)->dims[axis];                           \
        int r_ = (x)->rank;                                                                             \
        gwr_strides(r_, (x)->dims, xs_);                                                                \
        for (int64_t J = 0; J < (ix)->numel; J++) {                                                     \
            int64_t w_ = wrap_index(k, ix, J, n_, "index");                                             \
            if (w_ < 0) return GWR_ERR_INVALID_ARG;                                                     \
            int64_t OFF = base_ + w_ * xs_[axis];                                                       \
            BODY;                                                                                       \
            for (int a_ = r_ - 1; a_ >= 0; a_--) {                                                      \
                if (a_ != (axis)) base_ += xs_[a_];                                                     \
                if (++idx_[a_] < (ix)->dims[a_]) break;                                                 \
                if (a_ != (axis)) base_ -= xs_[a_] * idx_[a_];                                          \
                idx_[a_] = 0;                                                                           \
            }                                                                                           \
        }                                                                                               \
    } while (0)

static gwr_status k_gather_elements(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need(k, 0), *ix = gwr_ku_need(k, 1);
    if (!x || !ix) return GWR_ERR_INVALID_ARG;
    int64_t esz = gwr_ku_elem_size(k, x->dtype);
    if (esz < 0) return GWR_ERR_UNSUPPORTED;
    int axis;
    gwr_status rc = elements_axis(k, x, ix, &axis);
    if (rc) return rc;
    gwr_value *o = gwr_k_out(k, 0, x->dtype, ix->rank, ix->dims);
    if (!o) return GWR_ERR_NOMEM;
    FOR_ELEMENTS(k, x, ix, axis, j, off, if (gwr_ku_copy_run(k, o, j, x, off, 1, esz)) return GWR_ERR_NOMEM);
    return GWR_OK;
}

/* ---- reductions ------------------------------------------------------------ */

enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN };

/* The reduction attribute (opset 16: none/add/mul, 18: max/min too). */
static gwr_status reduction_of(gwr_kctx *k, const gwr_value *x, int *mode) {
    const char *s = gwr_k_string(k, "reduction", "none");
    int m = !strcmp(s, "none") ? RED_NONE
            : !strcmp(s, "add") ? RED_ADD
            : !strcmp(s, "mul") ? RED_MUL
            : !strcmp(s, "max") ? RED_MAX
            : !strcmp(s, "min") ? RED_MIN
                                : -1;
    if (m < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "unknown reduction '%s'", s);
    if (m != RED_NONE && (x->dtype == GWR_STRING || x->dtype == GWR_COMPLEX64 || x->dtype == GWR_COMPLEX128 ||
                          x->dtype >= GWR_FLOAT8E4M3FN))
        return gwr_k_fail(k, GWR_ERR_TYPE, "reduction '%s' is not supported for %s", s, gwr_dtype_name(x->dtype));
    *mode = m;
    return GWR_OK;
}

/* T the element type, U the type arithmetic is done in (unsigned for the
 * integers: wrapping without undefined behaviour; compare in T). */
#define RED_T(T, U)                                                                                      \
    for (int64_t j = 0; j < n; j++) {                                                                    \
        T a, b;                                                                                          \
        memcpy(&a, d + j * sizeof(T), sizeof(T));                                                        \
        memcpy(&b, s + j * sizeof(T), sizeof(T));                                                        \
        a = mode == RED_ADD   ? (T)((U)a + (U)b)                                                         \
            : mode == RED_MUL ? (T)((U)a * (U)b)                                                         \
            : mode == RED_MAX ? (a > b ? a : b)                                                          \
                              : (a < b ? a : b);                                                         \
        memcpy(d + j * sizeof(T), &a, sizeof(T));                                                        \
    }

#define RED_H(TO, FROM)                                                                                  \
    for (int64_t j = 0; j < n; j++) {                                                                    \
        uint16_t ha, hb;                                                                                 \
        memcpy(&ha, d + 2 * j, 2);                                                                       \
        memcpy(&hb, s + 2 * j, 2);                                                                       \
        float a = FROM(ha), b = FROM(hb);                                                                \
        a = mode == RED_ADD ? a + b : mode == RED_MUL ? a * b : mode == RED_MAX ? (a > b ? a : b) : (a < b ? a : b); \
        ha = TO(a);                                                                                      \
        memcpy(d + 2 * j, &ha, 2);                                                                       \
    }

/* d[0..n) = d op s (element-wise), for dtype dt. */
static void reduce_run(gwr_dtype dt, int mode, char *d, const char *s, int64_t n) {
    switch (dt) {
    case GWR_FLOAT32: RED_T(float, float) break;
    case GWR_FLOAT64: RED_T(double, double) break;
    case GWR_INT8: RED_T(int8_t, uint32_t) break;
    case GWR_UINT8: RED_T(uint8_t, uint32_t) break;
    case GWR_INT16: RED_T(int16_t, uint32_t) break;
    case GWR_UINT16: RED_T(uint16_t, uint32_t) break;
    case GWR_INT32: RED_T(int32_t, uint32_t) break;
    case GWR_UINT32: RED_T(uint32_t, uint32_t) break;
    case GWR_INT64: RED_T(int64_t, uint64_t) break;
    case GWR_UINT64: RED_T(uint64_t, uint64_t) break;
    case GWR_FLOAT16: RED_H(gwr_f32_to_f16, gwr_f16_to_f32) break;
    case GWR_BFLOAT16: RED_H(gwr_f32_to_bf16, gwr_bf16_to_f32) break;
    case GWR_BOOL:
        for (int64_t j = 0; j < n; j++) {
            int a = d[j] != 0, b = s[j] != 0;
            d[j] = (char)(mode == RED_ADD || mode == RED_MAX ? (a | b) : (a & b));
        }
        break;
    default: break;
    }
}

static gwr_status apply(gwr_kctx *k, gwr_value *o, int64_t oi, const gwr_value *u, int64_t ui, int64_t n, int64_t esz,
                        int mode) {
    if (mode == RED_NONE) return gwr_ku_copy_run(k, o, oi, u, ui, n, esz);
    char *d = (char *)o->data + oi * esz;
    const char *s = (const char *)u->data + ui * esz;
    reduce_run(o->dtype, mode, d, s, n);
    return GWR_OK;
}

static gwr_status scatter_elements(gwr_kctx *k, int with_reduction) {
    const gwr_value *x = gwr_ku_need(k, 0), *ix = gwr_ku_need(k, 1), *u = gwr_ku_need(k, 2);
    if (!x || !ix || !u) return GWR_ERR_INVALID_ARG;
    int64_t esz = gwr_ku_elem_size(k, x->dtype);
    if (esz < 0) return GWR_ERR_UNSUPPORTED;
    int axis;
    gwr_status rc = elements_axis(k, x, ix, &axis);
    if (rc) return rc;
    if (u->dtype != x->dtype)
        return gwr_k_fail(k, GWR_ERR_TYPE, "updates are %s, data %s", gwr_dtype_name(u->dtype), gwr_dtype_name(x->dtype));
    if (u->rank != ix->rank || memcmp(u->dims, ix->dims, (size_t)ix->rank * sizeof *u->dims))
        return gwr_k_fail(k, GWR_ERR_SHAPE, "updates and indices differ in shape");
    int mode = RED_NONE;
    if (with_reduction && (rc = reduction_of(k, x, &mode))) return rc;
    /* Check every index before writing anything. */
    for (int64_t j = 0; j < ix->numel; j++)
        if (wrap_index(k, ix, j, x->dims[axis], "index") < 0) return GWR_ERR_INVALID_ARG;
    gwr_value *o = copy_out(k, x, esz);
    if (!o) return GWR_ERR_NOMEM;
    FOR_ELEMENTS(k, o, ix, axis, j, off, if (apply(k, o, off, u, j, 1, esz, mode)) return GWR_ERR_NOMEM);
    return GWR_OK;
}

static gwr_status k_scatter_elements(gwr_kctx *k) { return scatter_elements(k, 1); }
static gwr_status k_scatter(gwr_kctx *k) { return scatter_elements(k, 0); }

/* ---- GatherND, ScatterND ----------------------------------------------------- */

static gwr_status k_gather_nd(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need(k, 0), *ix = gwr_ku_need(k, 1);
    if (!x || !ix) return GWR_ERR_INVALID_ARG;
    int64_t esz = gwr_ku_elem_size(k, x->dtype);
    if (esz < 0) return GWR_ERR_UNSUPPORTED;
    if (!is_index(ix)) return gwr_k_fail(k, GWR_ERR_TYPE, "indices must be int64, not %s", gwr_dtype_name(ix->dtype));
    int r = x->rank, q = ix->rank;
    int64_t b = gwr_k_int(k, "batch_dims", 0);
    if (r < 1 || q < 1) return gwr_k_fail(k, GWR_ERR_SHAPE, "data and indices must have rank 1 or more");
    if (b < 0 || b >= q || b >= r)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "batch_dims %lld must be below both ranks (%d and %d)", (long long)b, r, q);
    int64_t m = ix->dims[q - 1];
    if (m < 1 || m > r - b)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "the last dim of indices is %lld, must be in [1, %lld]", (long long)m, (long long)(r - b));
    for (int i = 0; i < b; i++)
        if (ix->dims[i] != x->dims[i])
            return gwr_k_fail(k, GWR_ERR_SHAPE, "batch dim %d is %lld in indices, %lld in data", i, (long long)ix->dims[i],
                              (long long)x->dims[i]);
    int64_t od[MAXR], xs[MAXR];
    if (q - 1 + r - b - m > MAXR) return gwr_k_fail(k, GWR_ERR_SHAPE, "the output rank would exceed %d", MAXR);
    int orank = 0;
    for (int i = 0; i < q - 1; i++) od[orank++] = ix->dims[i];
    for (int i = (int)(b + m); i < r; i++) od[orank++] = x->dims[i];
    gwr_strides(r, x->dims, xs);
    int64_t nb = gwr_shape_numel((int)b, x->dims), slice = gwr_shape_numel(r - (int)(b + m), x->dims + b + m);
    int64_t per = nb ? ix->numel / m / nb : 0, bstride = b ? xs[b - 1] : 0;
    /* Check first, then copy. */
    for (int64_t t = 0; t < ix->numel; t++)
        if (wrap_index(k, ix, t, x->dims[b + t % m], "index") < 0) return GWR_ERR_INVALID_ARG;
    gwr_value *o = gwr_k_out(k, 0, x->dtype, orank, od);
    if (!o) return GWR_ERR_NOMEM;
    int64_t oi = 0, t = 0;
    for (int64_t bi = 0; bi < nb; bi++)
        for (int64_t p = 0; p < per; p++) {
            int64_t off = bi * bstride;
            for (int64_t c = 0; c < m; c++, t++) {
                int64_t i = index_at(ix, t);
                off += (i < 0 ? i + x->dims[b + c] : i) * xs[b + c];
            }
            if (gwr_ku_copy_run(k, o, oi, x, off, slice, esz)) return GWR_ERR_NOMEM;
            oi += slice;
        }
    return GWR_OK;
}

static gwr_status k_scatter_nd(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need(k, 0), *ix = gwr_ku_need(k, 1), *u = gwr_ku_need(k, 2);
    if (!x || !ix || !u) return GWR_ERR_INVALID_ARG;
    int64_t esz = gwr_ku_elem_size(k, x->dtype);
    if (esz < 0) return GWR_ERR_UNSUPPORTED;
    if (!is_index(ix)) return gwr_k_fail(k, GWR_ERR_TYPE, "indices must be int64, not %s", gwr_dtype_name(ix->dtype));
    if (u->dtype != x->dtype)
        return gwr_k_fail(k, GWR_ERR_TYPE, "updates are %s, data %s", gwr_dtype_name(u->dtype), gwr_dtype_name(x->dtype));
    int r = x->rank, q = ix->rank;
    if (r < 1 || q < 1) return gwr_k_fail(k, GWR_ERR_SHAPE, "data and indices must have rank 1 or more");
    int64_t m = ix->dims[q - 1];
    if (m < 1 || m > r) return gwr_k_fail(k, GWR_ERR_SHAPE, "the last dim of indices is %lld, must be in [1, %d]", (long long)m, r);
    /* updates: indices.shape[:-1] + data.shape[m:] */
    int ur = q - 1 + r - (int)m, ok = u->rank == ur;
    for (int i = 0; ok && i < q - 1; i++) ok = u->dims[i] == ix->dims[i];
    for (int i = (int)m; ok && i < r; i++) ok = u->dims[q - 1 + i - m] == x->dims[i];
    if (!ok) return gwr_k_fail(k, GWR_ERR_SHAPE, "updates must have shape indices.shape[:-1] + data.shape[%lld:]", (long long)m);
    int mode;
    gwr_status rc = reduction_of(k, x, &mode);
    if (rc) return rc;
    for (int64_t t = 0; t < ix->numel; t++)
        if (wrap_index(k, ix, t, x->dims[t % m], "index") < 0) return GWR_ERR_INVALID_ARG;
    int64_t xs[MAXR];
    gwr_strides(r, x->dims, xs);
    int64_t slice = gwr_shape_numel(r - (int)m, x->dims + m), nt = ix->numel / m;
    gwr_value *o = copy_out(k, x, esz);
    if (!o) return GWR_ERR_NOMEM;
    for (int64_t p = 0, t = 0; p < nt; p++) {
        int64_t off = 0;
        for (int64_t c = 0; c < m; c++, t++) {
            int64_t i = index_at(ix, t);
            off += (i < 0 ? i + x->dims[c] : i) * xs[c];
        }
        if (apply(k, o, off, u, p * slice, slice, esz, mode)) return GWR_ERR_NOMEM;
    }
    return GWR_OK;
}

/* ---- Unique ------------------------------------------------------------------ */

/* Total order on floats: numbers as usual (-0 == 0), NaN after all, equal
 * to itself. */
static int cmp_f64(double a, double b) {
    int na = a != a, nb = b != b;
    if (na || nb) return na - nb;
    return (a > b) - (a < b);
}

static int cmp_elem(const gwr_value *x, int64_t a, int64_t b) {
    switch (x->dtype) {
    case GWR_FLOAT32: return cmp_f64(((const float *)x->data)[a], ((const float *)x->data)[b]);
    case GWR_FLOAT64: return cmp_f64(((const double *)x->data)[a], ((const double *)x->data)[b]);
    case GWR_FLOAT16:
    case GWR_BFLOAT16: return cmp_f64(gwr_v_get_f64(x, a), gwr_v_get_f64(x, b));
    case GWR_COMPLEX64: {
        const float *p = x->data;
        int c = cmp_f64(p[2 * a], p[2 * b]);
        return c ? c : cmp_f64(p[2 * a + 1], p[2 * b + 1]);
    }
    case GWR_COMPLEX128: {
        const double *p = x->data;
        int c = cmp_f64(p[2 * a], p[2 * b]);
        return c ? c : cmp_f64(p[2 * a + 1], p[2 * b + 1]);
    }
    case GWR_UINT64: {
        uint64_t u = ((const uint64_t *)x->data)[a], v = ((const uint64_t *)x->data)[b];
        return (u > v) - (u < v);
    }
    case GWR_BOOL: {
        int u = ((const uint8_t *)x->data)[a] != 0, v = ((const uint8_t *)x->data)[b] != 0;
        return u - v;
    }
    case GWR_STRING: return gwr_ku_cmp_bytes((const gwr_bytes *)x->data + a, (const gwr_bytes *)x->data + b);
    default: {
        int64_t u = gwr_v_get_i64(x, a), v = gwr_v_get_i64(x, b);
        return (u > v) - (u < v);
    }
    }
}

typedef struct {
    const gwr_value *x;
    int64_t n, outer, inner; /* slice s: elements o*n*inner + s*inner + j */
} slices;

static int cmp_slices(const void *ctx, int64_t a, int64_t b) {
    const slices *s = ctx;
    for (int64_t o = 0; o < s->outer; o++) {
        int64_t base = o * s->n * s->inner;
        for (int64_t j = 0; j < s->inner; j++) {
            int c = cmp_elem(s->x, base + a * s->inner + j, base + b * s->inner + j);
            if (c) return c;
        }
    }
    return 0;
}

static int cmp_i64(const void *ctx, int64_t a, int64_t b) {
    const int64_t *v = ctx;
    return (v[a] > v[b]) - (v[a] < v[b]);
}

static gwr_status k_unique(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_named(k, 0, "X");
    if (!x) return GWR_ERR_INVALID_ARG;
    int bits = gwr_dtype_bits(x->dtype);
    if (x->dtype != GWR_STRING && (bits < 8 || bits % 8 || x->dtype >= GWR_FLOAT8E4M3FN))
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "X of dtype %s is not supported", gwr_dtype_name(x->dtype));
    int64_t esz = bits / 8, sorted = gwr_k_int(k, "sorted", 1), axis_attr;
    if (sorted != 0 && sorted != 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "sorted must be 0 or 1, not %lld", (long long)sorted);
    int has_axis = !gwr_layer_get_int(k->layer, "axis", &axis_attr), axis = -1;
    slices sl = {x, x->numel, 1, 1};
    if (has_axis) {
        if ((axis = gwr_axis(axis_attr, x->rank)) < 0)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)axis_attr, x->rank);
        sl.n = x->dims[axis];
        sl.outer = gwr_shape_numel(axis, x->dims);
        sl.inner = gwr_shape_numel(x->rank - axis - 1, x->dims + axis + 1);
    }
    int64_t n = sl.n;
    /* perm: slices in sorted order (ties by position); grp: each slice's
     * run; first / count: each run's first slice and size; order: the
     * runs in output order; pos: each run's output position. */
    int64_t *mem = gwr_ku_scratch(k, gwr_ku_mul_max(n, 7, INT64_MAX), sizeof(int64_t));
    if (!mem) return GWR_ERR_NOMEM;
    int64_t *perm = mem, *tmp = mem + n, *grp = mem + 2 * n, *first = mem + 3 * n, *count = mem + 4 * n,
            *order = mem + 5 * n, *pos = mem + 6 * n, nu = 0;
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    gwr_ku_merge_sort(perm, tmp, n, cmp_slices, &sl);
    for (int64_t i = 0; i < n; i++) {
        if (i == 0 || cmp_slices(&sl, perm[i - 1], perm[i])) {
            first[nu] = perm[i], count[nu] = 0;
            nu++;
        }
        grp[perm[i]] = nu - 1;
        count[nu - 1]++;
    }
    for (int64_t u = 0; u < nu; u++) order[u] = u;
    if (!sorted) gwr_ku_merge_sort(order, tmp, nu, cmp_i64, first); /* by first occurrence */
    for (int64_t u = 0; u < nu; u++) pos[order[u]] = u;

    int64_t yd[GWR_MAX_RANK];
    int yr = has_axis ? x->rank : 1;
    if (has_axis) memcpy(yd, x->dims, (size_t)x->rank * sizeof *yd), yd[axis] = nu;
    else yd[0] = nu;
    gwr_status rc = GWR_OK;
    gwr_value *y = gwr_k_out(k, 0, x->dtype, yr, yd);
    if (!y) rc = GWR_ERR_NOMEM;
    for (int64_t o = 0; o < sl.outer && !rc && sl.inner; o++)
        for (int64_t u = 0; u < nu && !rc; u++) {
            int64_t src = (o * n + first[order[u]]) * sl.inner, dst = (o * nu + u) * sl.inner;
            rc = gwr_ku_copy_run(k, y, dst, x, src, sl.inner, esz);
        }
    gwr_value *oi = !rc && k->nout > 1 ? gwr_k_out(k, 1, GWR_INT64, 1, &nu) : NULL;
    gwr_value *ov = !rc && k->nout > 2 ? gwr_k_out(k, 2, GWR_INT64, 1, &n) : NULL;
    gwr_value *oc = !rc && k->nout > 3 ? gwr_k_out(k, 3, GWR_INT64, 1, &nu) : NULL;
    if (!rc && ((k->nout > 1 && !oi) || (k->nout > 2 && !ov) || (k->nout > 3 && !oc))) rc = GWR_ERR_NOMEM;
    for (int64_t u = 0; u < nu && !rc; u++) {
        if (oi) ((int64_t *)oi->data)[u] = first[order[u]];
        if (oc) ((int64_t *)oc->data)[u] = count[order[u]];
    }
    for (int64_t i = 0; i < n && ov && !rc; i++) ((int64_t *)ov->data)[i] = pos[grp[i]];
    gwr_free(mem);
    return rc;
}

const gwr_kernel_entry gwr_kernels_gather[] = {
    GWR_KERNEL(Gather, k_gather),
    GWR_KERNEL(GatherElements, k_gather_elements),
    GWR_KERNEL(GatherND, k_gather_nd),
    GWR_KERNEL(Scatter, k_scatter),
    GWR_KERNEL(ScatterElements, k_scatter_elements),
    GWR_KERNEL(ScatterND, k_scatter_nd),
    GWR_KERNEL(Unique, k_unique),
    {.fn = NULL},
};
