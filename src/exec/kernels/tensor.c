/* tensor.c - the tensor kernel family: ops that move, view or make
 * elements without arithmetic on them (Reshape, Transpose, Concat, Slice,
 * Pad, ...). Every data-movement op works for every dtype of whole bytes,
 * STRING included (entries copied with gwr_value_set_string); the 4-bit
 * types only where the bytes are shared as they are (Reshape and its kin).
 *
 * Most of them are one strided copy (copy_view): the output written in
 * order from a view of the input given by dims and element strides (0 for
 * a broadcast dim, negative for a reversed one). The view is simplified
 * first (dims of 1 dropped, adjacent dims merged where the strides allow),
 * so a Transpose of [B,S,H,D] into [B,H,S,D] copies runs of D elements
 * with memcpy, and an Expand of a row fills with whole rows. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/kernels/kernel_util.h"

#define MAXR GWR_MAX_RANK
/* The most elements an op that makes its output from sizes (Expand, Tile,
 * ConstantOfShape, Range, Pad, OneHot) may produce. */
#define MAX_ELEMS ((int64_t)1 << 31)

/* ---- helpers ------------------------------------------------------------- */

/* Input i, or NULL after gwr_k_fail when it is missing. */
/* Fills n elements of o from oi with the element at val (esz bytes; for
 * strings, val is a gwr_bytes). */
static gwr_status fill_run(gwr_kctx *k, gwr_value *o, int64_t oi, const void *val, int64_t n, int64_t esz) {
    if (n <= 0) return GWR_OK;
    if (!esz) {
        const gwr_bytes *b = val;
        for (int64_t j = 0; j < n; j++)
            if (gwr_value_set_string(o, oi + j, b->data, b->len)) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
        return GWR_OK;
    }
    char *d = (char *)o->data + oi * esz;
    int zero = 1;
    for (int64_t b = 0; b < esz; b++) zero &= ((const char *)val)[b] == 0;
    if (zero) {
        memset(d, 0, (size_t)(n * esz));
        return GWR_OK;
    }
    memcpy(d, val, (size_t)esz);
    int64_t done = 1; /* doubling copies */
    while (done < n) {
        int64_t c = done < n - done ? done : n - done;
        memcpy(d + done * esz, d, (size_t)(c * esz));
        done += c;
    }
    return GWR_OK;
}

/* Strided gather of a fixed-size element type: n elements, stride st. */
#define GATHER_LOOP(SZ)                                                                   \
    for (int64_t j = 0; j < n; j++) memcpy(dst + j * (SZ), p + j * st * (SZ), (SZ));

static void strided_run(char *dst, const char *p, int64_t n, int64_t st, int64_t esz) {
    switch (esz) {
    case 1: for (int64_t j = 0; j < n; j++) dst[j] = p[j * st]; break;
    case 2: GATHER_LOOP(2) break;
    case 4: GATHER_LOOP(4) break;
    case 8: GATHER_LOOP(8) break;
    default:
        for (int64_t j = 0; j < n; j++) memcpy(dst + j * esz, p + j * st * esz, (size_t)esz);
        break;
    }
}

/* A 2-D transpose block (rows x cols of the output, the input read with
 * row stride 1 and column stride cs): tiled so both sides stay in cache. */
static void transpose_2d(char *dst, const char *src, int64_t rows, int64_t cols, int64_t cs, int64_t esz) {
    enum { T = 32 };
    for (int64_t i0 = 0; i0 < rows; i0 += T)
        for (int64_t j0 = 0; j0 < cols; j0 += T) {
            int64_t i1 = i0 + T < rows ? i0 + T : rows, j1 = j0 + T < cols ? j0 + T : cols;
            for (int64_t i = i0; i < i1; i++)
                strided_run(dst + (i * cols + j0) * esz, src + (i + j0 * cs) * esz, j1 - j0, cs, esz);
        }
}

/* Writes the view of v (first element at vi; dims and element strides,
 * rank entries) into o from oi, in row-major order. */
static gwr_status copy_view(gwr_kctx *k, gwr_value *o, int64_t oi, const gwr_value *v, int64_t vi, int rank,
                            const int64_t *dims, const int64_t *st, int64_t esz) {
    int64_t d[2 * MAXR + 2], s[2 * MAXR + 2], idx[2 * MAXR + 2];
    int r = 0;
    for (int i = 0; i < rank; i++) {
        if (dims[i] == 0) return GWR_OK;
        if (dims[i] == 1) continue;
        if (r && s[r - 1] == st[i] * dims[i]) {
            d[r - 1] *= dims[i];
            s[r - 1] = st[i];
        } else {
            d[r] = dims[i], s[r] = st[i], r++;
        }
    }
    if (!r) d[0] = 1, s[0] = 1, r = 1;
    int64_t n = d[r - 1], is = s[r - 1], off = vi;
    /* A transposed pair of inner dims: tiles. */
    int tiled = esz && r >= 2 && s[r - 2] == 1 && is != 1 && is != 0 && n >= 8 && d[r - 2] >= 8;
    int outer = r - (tiled ? 2 : 1);
    int64_t run = tiled ? n * d[r - 2] : n;
    for (int i = 0; i < outer; i++) idx[i] = 0;
    char *dst = esz ? (char *)o->data + oi * esz : NULL;
    const char *src = v->data;
    for (;;) {
        if (!esz) {
            for (int64_t j = 0; j < n; j++)
                if (gwr_ku_copy_strings(k, o, oi + j, v, off + j * is, 1)) return GWR_ERR_NOMEM;
            oi += n;
        } else if (tiled) {
            transpose_2d(dst, src + off * esz, d[r - 2], n, is, esz);
            dst += run * esz;
        } else if (is == 1) {
            memcpy(dst, src + off * esz, (size_t)(n * esz));
            dst += n * esz;
        } else if (is == 0) {
            fill_run(k, o, (dst - (char *)o->data) / esz, src + off * esz, n, esz);
            dst += n * esz;
        } else {
            strided_run(dst, src + off * esz, n, is, esz);
            dst += n * esz;
        }
        int i = outer - 1;
        for (; i >= 0; i--) {
            off += s[i];
            if (++idx[i] < d[i]) break;
            off -= s[i] * d[i];
            idx[i] = 0;
        }
        if (i < 0) break;
    }
    return GWR_OK;
}

/* Axes from input i (when present) or attribute `name`: count, -1 after
 * gwr_k_fail, -2 when neither is there. */
static int64_t axes_of(gwr_kctx *k, int i, const char *name, int64_t *out, int64_t max) {
    if (gwr_ku_opt(k, i)) {
        int64_t n = gwr_k_in_ints(k, i, out, max);
        return n < 0 ? -1 : n;
    }
    const int64_t *a;
    int64_t n = gwr_k_ints(k, name, &a);
    if (n < 0) return -2;
    if (n > max) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s has %lld entries, at most %lld allowed", name,
                                   (long long)n, (long long)max), -1;
    if (n) memcpy(out, a, (size_t)n * sizeof *a);
    return n;
}

static gwr_status bad_count(gwr_kctx *k, int64_t n, int64_t max) {
    return gwr_k_fail(k, GWR_ERR_SHAPE, "the output would have %lld elements (at most %lld allowed)", (long long)n,
                      (long long)max);
}

static void fmt_dims(char *buf, size_t size, int rank, const int64_t *d) {
    size_t n = 0;
    n += (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < rank && n < size; i++) n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? "," : "", (long long)d[i]);
    if (n < size) snprintf(buf + n, size - n, "]");
}

/* ---- views: Reshape, Flatten, Squeeze, Unsqueeze -------------------------- */

static gwr_status k_reshape(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need(k, 0);
    if (!x) return GWR_ERR_INVALID_ARG;
    int64_t sh[MAXR], od[MAXR];
    int64_t n = axes_of(k, 1, "shape", sh, MAXR);
    if (n == -1) return GWR_ERR_INVALID_ARG;
    if (n == -2) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "no shape (input 1)");
    int allowzero = gwr_k_int(k, "allowzero", 0) != 0;
    int neg = -1;
    int64_t known = 1;
    for (int i = 0; i < n; i++) {
        if (sh[i] == -1) {
            if (neg >= 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "shape has more than one -1 (entries %d and %d)", neg, i);
            neg = i;
            od[i] = 1;
            continue;
        }
        if (sh[i] < -1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "shape entry %d is %lld", i, (long long)sh[i]);
        if (sh[i] == 0 && !allowzero) {
            if (i >= x->rank)
                return gwr_k_fail(k, GWR_ERR_SHAPE, "shape entry %d is 0 (copy the input's dim) but the input has rank %d",
                                  i, x->rank);
            od[i] = x->dims[i];
        } else {
            od[i] = sh[i];
        }
    }
    known = gwr_shape_numel((int)n, od);
    if (known < 0) return gwr_k_fail(k, GWR_ERR_SHAPE, "shape overflows");
    if (neg >= 0) {
        if (known == 0)
            return gwr_k_fail(k, GWR_ERR_SHAPE, "cannot infer the -1 of the shape: the other entries make 0 elements");
        if (x->numel % known)
            return gwr_k_fail(k, GWR_ERR_SHAPE, "cannot reshape %lld elements with %lld per -1", (long long)x->numel,
                              (long long)known);
        od[neg] = x->numel / known;
        known = x->numel;
    }
    if (known != x->numel) {
        char a[256], b[256];
        fmt_dims(a, sizeof a, x->rank, x->dims), fmt_dims(b, sizeof b, (int)n, od);
        return gwr_k_fail(k, GWR_ERR_SHAPE, "cannot reshape %s (%lld elements) into %s", a, (long long)x->numel, b);
    }
    return gwr_k_alias(k, 0, (gwr_value *)x, (int)n, od);
}

static gwr_status k_flatten(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need(k, 0);
    if (!x) return GWR_ERR_INVALID_ARG;
    int64_t axis = gwr_k_int(k, "axis", 1);
    if (axis < -x->rank || axis > x->rank)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
    if (axis < 0) axis += x->rank;
    int64_t od[2] = {1, 1};
    for (int i = 0; i < x->rank; i++) od[i < axis ? 0 : 1] *= x->dims[i];
    return gwr_k_alias(k, 0, (gwr_value *)x, 2, od);
}

static gwr_status k_squeeze(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need(k, 0);
    if (!x) return GWR_ERR_INVALID_ARG;
    int64_t ax[MAXR], od[MAXR];
    uint8_t drop[MAXR] = {0};
    int64_t n = axes_of(k, 1, "axes", ax, MAXR);
    if (n == -1) return GWR_ERR_INVALID_ARG;
    if (n == -2) {
        for (int i = 0; i < x->rank; i++) drop[i] = x->dims[i] == 1;
    } else {
        for (int64_t j = 0; j < n; j++) {
            int a = gwr_axis(ax[j], x->rank);
            if (a < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)ax[j], x->rank);
            if (drop[a]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld is repeated", (long long)ax[j]);
            if (x->dims[a] != 1)
                return gwr_k_fail(k, GWR_ERR_SHAPE, "cannot squeeze axis %d of size %lld", a, (long long)x->dims[a]);
            drop[a] = 1;
        }
    }
    int r = 0;
    for (int i = 0; i < x->rank; i++)
        if (!drop[i]) od[r++] = x->dims[i];
    return gwr_k_alias(k, 0, (gwr_value *)x, r, od);
}

static gwr_status k_unsqueeze(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need(k, 0);
    if (!x) return GWR_ERR_INVALID_ARG;
    int64_t ax[MAXR], od[MAXR];
    uint8_t add[MAXR] = {0};
    int64_t n = axes_of(k, 1, "axes", ax, MAXR);
    if (n == -1) return GWR_ERR_INVALID_ARG;
    if (n == -2) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "no axes");
    if (x->rank + n > MAXR) return gwr_k_fail(k, GWR_ERR_SHAPE, "the output rank would exceed %d", MAXR);
    int r = x->rank + (int)n;
    for (int64_t j = 0; j < n; j++) {
        int a = gwr_axis(ax[j], r);
        if (a < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld is out of range for output rank %d", (long long)ax[j], r);
        if (add[a]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld is repeated", (long long)ax[j]);
        add[a] = 1;
    }
    for (int i = 0, j = 0; i < r; i++) od[i] = add[i] ? 1 : x->dims[j++];
    return gwr_k_alias(k, 0, (gwr_value *)x, r, od);
}

/* ---- Transpose, DepthToSpace, SpaceToDepth ------------------------------- */

static gwr_status k_transpose(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need(k, 0);
    if (!x) return GWR_ERR_INVALID_ARG;
    int64_t esz = gwr_ku_elem_size(k, x->dtype);
    if (esz < 0) return GWR_ERR_UNSUPPORTED;
    const int64_t *perm;
    int64_t np = gwr_k_ints(k, "perm", &perm), p[MAXR], od[MAXR], xs[MAXR], st[MAXR];
    uint8_t seen[MAXR] = {0};
    int r = x->rank, ident = 1;
    if (np >= 0 && np != r)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "perm has %lld entries for rank %d", (long long)np, r);
    for (int i = 0; i < r; i++) {
        p[i] = np >= 0 ? perm[i] : r - 1 - i;
        int a = gwr_axis(p[i], r);
        if (a < 0 || seen[a]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "perm is not a permutation of 0..%d", r - 1);
        seen[a] = 1, p[i] = a, ident &= a == i;
    }
    if (ident) {
        gwr_k_set_out(k, 0, (gwr_value *)x);
        return GWR_OK;
    }
    gwr_strides(r, x->dims, xs);
    for (int i = 0; i < r; i++) od[i] = x->dims[p[i]], st[i] = xs[p[i]];
    gwr_value *o = gwr_k_out(k, 0, x->dtype, r, od);
    if (!o) return GWR_ERR_NOMEM;
    return copy_view(k, o, 0, x, 0, r, od, st, esz);
}

static gwr_status space_depth(gwr_kctx *k, int to_space) {
    const gwr_value *x = gwr_ku_need(k, 0);
    if (!x) return GWR_ERR_INVALID_ARG;
    int64_t esz = gwr_ku_elem_size(k, x->dtype);
    if (esz < 0) return GWR_ERR_UNSUPPORTED;
    if (x->rank != 4) return gwr_k_fail(k, GWR_ERR_SHAPE, "input must have rank 4, not %d", x->rank);
    int64_t b = gwr_k_int(k, "blocksize", 0);
    if (b <= 0 || b > (int64_t)1 << 20) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "blocksize %lld must be positive", (long long)b);
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], od[4], vd[6], st[6];
    if (C > INT64_MAX / (b * b) || H > INT64_MAX / b || W > INT64_MAX / b)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "the output dims would overflow");
    if (to_space) {
        const char *mode = gwr_k_string(k, "mode", "DCR");
        int crd = !strcmp(mode, "CRD");
        if (!crd && strcmp(mode, "DCR")) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "unknown mode '%s'", mode);
        if (C % (b * b)) return gwr_k_fail(k, GWR_ERR_SHAPE, "channels %lld are not a multiple of blocksize^2 %lld", (long long)C, (long long)(b * b));
        int64_t c = C / (b * b);
        od[0] = N, od[1] = c, od[2] = H * b, od[3] = W * b;
        vd[0] = N, vd[1] = c, vd[2] = H, vd[3] = b, vd[4] = W, vd[5] = b;
        st[0] = C * H * W, st[2] = W, st[4] = 1;
        if (crd) st[1] = b * b * H * W, st[3] = b * H * W, st[5] = H * W;
        else st[1] = H * W, st[3] = b * c * H * W, st[5] = c * H * W;
    } else {
        /* opset 28's mode: output channels ordered (row, column, depth) for
         * DCR, (depth, row, column) for CRD */
        const char *mode = gwr_k_string(k, "mode", "DCR");
        int crd = !strcmp(mode, "CRD");
        if (!crd && strcmp(mode, "DCR")) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "unknown mode '%s'", mode);
        if (H % b || W % b)
            return gwr_k_fail(k, GWR_ERR_SHAPE, "height %lld and width %lld must be multiples of blocksize %lld", (long long)H,
                              (long long)W, (long long)b);
        int64_t h = H / b, w = W / b;
        od[0] = N, od[1] = C * b * b, od[2] = h, od[3] = w;
        if (crd) {
            vd[0] = N, vd[1] = C, vd[2] = b, vd[3] = b, vd[4] = h, vd[5] = w;
            st[0] = C * H * W, st[1] = H * W, st[2] = W, st[3] = 1, st[4] = b * W, st[5] = b;
        } else {
            vd[0] = N, vd[1] = b, vd[2] = b, vd[3] = C, vd[4] = h, vd[5] = w;
            st[0] = C * H * W, st[1] = W, st[2] = 1, st[3] = H * W, st[4] = b * W, st[5] = b;
        }
    }
    gwr_value *o = gwr_k_out(k, 0, x->dtype, 4, od);
    if (!o) return GWR_ERR_NOMEM;
    return copy_view(k, o, 0, x, 0, 6, vd, st, esz);
}

static gwr_status k_depth_to_space(gwr_kctx *k) { return space_depth(k, 1); }
static gwr_status k_space_to_depth(gwr_kctx *k) { return space_depth(k, 0); }

/* ---- Concat, Split -------------------------------------------------------- */

static gwr_status k_concat(gwr_kctx *k) {
    if (k->nin < 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "no inputs");
    const gwr_value *x0 = gwr_ku_need(k, 0);
    if (!x0) return GWR_ERR_INVALID_ARG;
    int64_t esz = gwr_ku_elem_size(k, x0->dtype);
    if (esz < 0) return GWR_ERR_UNSUPPORTED;
    int r = x0->rank;
    if (r == 0) return gwr_k_fail(k, GWR_ERR_SHAPE, "cannot concatenate scalars");
    /* axis became required at opset 4; before, it defaulted to 1 */
    int old = k->opset && k->opset < 4;
    if (!old && !gwr_layer_has_attr(k->layer, "axis")) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "no axis");
    int64_t axis_attr = gwr_k_int(k, "axis", 1);
    int axis = gwr_axis(axis_attr, r);
    if (axis < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)axis_attr, r);
    int64_t od[MAXR];
    memcpy(od, x0->dims, (size_t)r * sizeof *od);
    od[axis] = 0;
    for (int i = 0; i < k->nin; i++) {
        const gwr_value *x = gwr_ku_need(k, i);
        if (!x) return GWR_ERR_INVALID_ARG;
        if (x->dtype != x0->dtype)
            return gwr_k_fail(k, GWR_ERR_TYPE, "input %d is %s, input 0 %s", i, gwr_dtype_name(x->dtype), gwr_dtype_name(x0->dtype));
        if (x->rank != r) return gwr_k_fail(k, GWR_ERR_SHAPE, "input %d has rank %d, input 0 rank %d", i, x->rank, r);
        for (int d = 0; d < r; d++)
            if (d != axis && x->dims[d] != x0->dims[d])
                return gwr_k_fail(k, GWR_ERR_SHAPE, "input %d has dim %d = %lld, input 0 %lld", i, d, (long long)x->dims[d],
                                  (long long)x0->dims[d]);
        od[axis] += x->dims[axis];
    }
    gwr_value *o = gwr_k_out(k, 0, x0->dtype, r, od);
    if (!o) return GWR_ERR_NOMEM;
    if (!o->numel) return GWR_OK;
    int64_t outer = gwr_shape_numel(axis, od), inner = gwr_shape_numel(r - axis - 1, od + axis + 1);
    int64_t orow = od[axis] * inner, at = 0;
    for (int i = 0; i < k->nin; i++) {
        const gwr_value *x = k->in[i];
        int64_t row = x->dims[axis] * inner;
        if (!row) continue;
        if (esz && outer > 1 && row * esz <= 64) { /* short rows: no memcpy call each */
            const char *s = x->data;
            char *d = (char *)o->data + at * esz;
            for (int64_t q = 0; q < outer; q++)
                for (int64_t b = 0; b < row * esz; b++) d[q * orow * esz + b] = s[q * row * esz + b];
        } else {
            for (int64_t q = 0; q < outer; q++)
                if (gwr_ku_copy_run(k, o, q * orow + at, x, q * row, row, esz)) return GWR_ERR_NOMEM;
        }
        at += row;
    }
    return GWR_OK;
}

static gwr_status k_split(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need(k, 0);
    if (!x) return GWR_ERR_INVALID_ARG;
    int64_t esz = gwr_ku_elem_size(k, x->dtype);
    if (esz < 0) return GWR_ERR_UNSUPPORTED;
    int r = x->rank;
    int64_t axis_attr = gwr_k_int(k, "axis", 0);
    int axis = gwr_axis(axis_attr, r);
    if (axis < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)axis_attr, r);
    int nout = k->nout;
    if (nout < 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "no outputs");
    int64_t *sz = gwr_malloc((size_t)nout * sizeof *sz);
    if (!sz) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    gwr_status rc = GWR_OK;
    int64_t dim = x->dims[axis];
    const gwr_value *sv = gwr_ku_opt(k, 1);
    const int64_t *sa;
    int64_t ns = -1;
    if (sv) {
        if (sv->dtype != GWR_INT64 || sv->rank != 1) {
            rc = gwr_k_fail(k, GWR_ERR_TYPE, "split must be a 1-D int64 tensor");
            goto done;
        }
        ns = sv->numel, sa = sv->data;
    } else {
        ns = gwr_k_ints(k, "split", &sa);
    }
    if (ns >= 0) {
        if (ns != nout) {
            rc = gwr_k_fail(k, GWR_ERR_INVALID_ARG, "split has %lld entries for %d outputs", (long long)ns, nout);
            goto done;
        }
        int64_t sum = 0;
        for (int i = 0; i < nout; i++) {
            int64_t s;
            memcpy(&s, &sa[i], sizeof s);
            if (s < 0 || s > dim) {
                rc = gwr_k_fail(k, GWR_ERR_INVALID_ARG, "split entry %d is %lld", i, (long long)s);
                goto done;
            }
            sz[i] = s, sum += s;
        }
        if (sum != dim) {
            rc = gwr_k_fail(k, GWR_ERR_SHAPE, "split sums to %lld, the axis has %lld", (long long)sum, (long long)dim);
            goto done;
        }
    } else {
        int64_t nattr = gwr_k_int(k, "num_outputs", nout);
        if (nattr != nout) {
            rc = gwr_k_fail(k, GWR_ERR_INVALID_ARG, "num_outputs is %lld for %d outputs", (long long)nattr, nout);
            goto done;
        }
        if (k->opset && k->opset < 18 && dim % nout) {
            rc = gwr_k_fail(k, GWR_ERR_SHAPE, "axis of %lld does not split into %d equal parts", (long long)dim, nout);
            goto done;
        }
        int64_t chunk = (dim + nout - 1) / nout, left = dim;
        for (int i = 0; i < nout; i++) sz[i] = chunk < left ? chunk : left, left -= sz[i];
    }
    int64_t outer = gwr_shape_numel(axis, x->dims), inner = gwr_shape_numel(r - axis - 1, x->dims + axis + 1);
    int64_t od[MAXR], at = 0;
    memcpy(od, x->dims, (size_t)r * sizeof *od);
    for (int i = 0; i < nout && !rc; i++) {
        od[axis] = sz[i];
        int64_t row = sz[i] * inner;
        if (gwr_k_out_used(k, i)) {
            if (esz && (outer == 1 || !row)) { /* one contiguous block: share the input's bytes */
                gwr_value *v = gwr_value_over(x->buf, (char *)x->data + at * esz, x->dtype, r, od);
                if (!v) {
                    rc = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
                    break;
                }
                gwr_k_set_out(k, i, v);
                gwr_value_release(v);
            } else {
                gwr_value *o = gwr_k_out(k, i, x->dtype, r, od);
                if (!o) {
                    rc = GWR_ERR_NOMEM;
                    break;
                }
                for (int64_t q = 0; q < outer && !rc; q++) rc = gwr_ku_copy_run(k, o, q * row, x, q * dim * inner + at, row, esz);
            }
        }
        at += row;
    }
done:
    gwr_free(sz);
    return rc;
}

/* ---- Slice ---------------------------------------------------------------- */

static gwr_status k_slice(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need(k, 0);
    if (!x) return GWR_ERR_INVALID_ARG;
    int64_t esz = gwr_ku_elem_size(k, x->dtype);
    if (esz < 0) return GWR_ERR_UNSUPPORTED;
    int r = x->rank;
    int64_t starts[MAXR], ends[MAXR], axes[MAXR], steps[MAXR], ns = -2, ne = -2, na = -2, nst = -2;
    if (k->nin >= 2) {
        if ((ns = gwr_k_in_ints(k, 1, starts, MAXR)) < 0) return GWR_ERR_INVALID_ARG;
        if ((ne = gwr_k_in_ints(k, 2, ends, MAXR)) < 0) return GWR_ERR_INVALID_ARG;
        if (gwr_ku_opt(k, 3) && (na = gwr_k_in_ints(k, 3, axes, MAXR)) < 0) return GWR_ERR_INVALID_ARG;
        if (gwr_ku_opt(k, 4) && (nst = gwr_k_in_ints(k, 4, steps, MAXR)) < 0) return GWR_ERR_INVALID_ARG;
    } else {
        if ((ns = axes_of(k, 99, "starts", starts, MAXR)) < 0 || (ne = axes_of(k, 99, "ends", ends, MAXR)) < 0)
            return ns == -1 || ne == -1 ? GWR_ERR_INVALID_ARG : gwr_k_fail(k, GWR_ERR_INVALID_ARG, "no starts or ends");
        if ((na = axes_of(k, 99, "axes", axes, MAXR)) == -1) return GWR_ERR_INVALID_ARG;
    }
    if (ns != ne) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "starts has %lld entries, ends %lld", (long long)ns, (long long)ne);
    if (na >= 0 && na != ns) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axes has %lld entries, starts %lld", (long long)na, (long long)ns);
    if (nst >= 0 && nst != ns) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "steps has %lld entries, starts %lld", (long long)nst, (long long)ns);
    if (na < 0 && ns > r) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%lld starts for rank %d", (long long)ns, r);
    int64_t od[MAXR], xs[MAXR], st[MAXR], base = 0;
    uint8_t seen[MAXR] = {0};
    gwr_strides(r, x->dims, xs);
    memcpy(od, x->dims, (size_t)r * sizeof *od);
    memcpy(st, xs, (size_t)r * sizeof *st);
    for (int64_t j = 0; j < ns; j++) {
        int a = na >= 0 ? gwr_axis(axes[j], r) : (int)j;
        if (a < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)axes[j], r);
        if (seen[a]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %d is repeated", a);
        seen[a] = 1;
        int64_t step = nst >= 0 ? steps[j] : 1, dim = x->dims[a], s = starts[j], e = ends[j], cnt;
        if (step == 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "step %lld is 0", (long long)j);
        if (step < -INT64_MAX) step = -INT64_MAX; /* the same slice, and -step exists */
        if (s < 0) s += dim;
        if (e < 0) e += dim;
        if (step > 0) {
            s = s < 0 ? 0 : s > dim ? dim : s;
            e = e < 0 ? 0 : e > dim ? dim : e;
            cnt = e > s ? (e - s - 1) / step + 1 : 0;
        } else {
            s = s < 0 ? -1 : s > dim - 1 ? dim - 1 : s;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
            cnt = s > e ? (s - e - 1) / -step + 1 : 0;
        }
        od[a] = cnt;
        if (cnt) base += s * xs[a];
        st[a] = cnt > 1 ? xs[a] * step : xs[a]; /* cnt > 1: |step| < dim, no overflow */
    }
    gwr_value *o;
    /* A contiguous range of the input (leading dims of 1, then one sliced
     * dim with step 1, then whole dims): share its bytes. */
    int lead = 0;
    while (lead < r && od[lead] == 1) lead++;
    int contiguous = esz && gwr_shape_numel(r, od) > 0;
    for (int i = lead + 1; i < r && contiguous; i++) contiguous = od[i] == x->dims[i];
    if (contiguous && lead < r) contiguous = st[lead] == xs[lead];
    if (contiguous) {
        if (!(o = gwr_value_over(x->buf, (char *)x->data + base * esz, x->dtype, r, od)))
            return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
        gwr_k_set_out(k, 0, o);
        gwr_value_release(o);
        return GWR_OK;
    }
    if (!(o = gwr_k_out(k, 0, x->dtype, r, od))) return GWR_ERR_NOMEM;
    return copy_view(k, o, 0, x, base, r, od, st, esz);
}

/* ---- Expand, Tile --------------------------------------------------------- */

static gwr_status k_expand(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need(k, 0);
    if (!x || !gwr_ku_need(k, 1)) return GWR_ERR_INVALID_ARG;
    int64_t esz = gwr_ku_elem_size(k, x->dtype);
    if (esz < 0) return GWR_ERR_UNSUPPORTED;
    int64_t sh[MAXR], od[MAXR], st[MAXR];
    int64_t n = gwr_k_in_ints(k, 1, sh, MAXR);
    if (n < 0) return GWR_ERR_INVALID_ARG;
    for (int64_t i = 0; i < n; i++)
        if (sh[i] < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "shape entry %lld is %lld", (long long)i, (long long)sh[i]);
    int r;
    if (gwr_broadcast(x->rank, x->dims, (int)n, sh, &r, od)) {
        char a[256], b[256];
        fmt_dims(a, sizeof a, x->rank, x->dims), fmt_dims(b, sizeof b, (int)n, sh);
        return gwr_k_fail(k, GWR_ERR_SHAPE, "cannot expand %s to %s", a, b);
    }
    int64_t total = gwr_shape_numel(r, od);
    if (total < 0 || total > MAX_ELEMS) return bad_count(k, total, MAX_ELEMS);
    gwr_bcast_strides(x->rank, x->dims, r, od, st);
    if (total == x->numel) {
        if (x->dtype != GWR_STRING) return gwr_k_alias(k, 0, (gwr_value *)x, r, od);
    }
    gwr_value *o = gwr_k_out(k, 0, x->dtype, r, od);
    if (!o) return GWR_ERR_NOMEM;
    return copy_view(k, o, 0, x, 0, r, od, st, esz);
}

static gwr_status k_tile(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need(k, 0);
    if (!x || !gwr_ku_need(k, 1)) return GWR_ERR_INVALID_ARG;
    int64_t esz = gwr_ku_elem_size(k, x->dtype);
    if (esz < 0) return GWR_ERR_UNSUPPORTED;
    int r = x->rank;
    int64_t rep[MAXR], od[MAXR], xs[MAXR], vd[2 * MAXR], vs[2 * MAXR];
    int64_t n = gwr_k_in_ints(k, 1, rep, MAXR);
    if (n < 0) return GWR_ERR_INVALID_ARG;
    if (n != r) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "repeats has %lld entries for rank %d", (long long)n, r);
    gwr_strides(r, x->dims, xs);
    for (int i = 0; i < r; i++) {
        if (rep[i] < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "repeats entry %d is %lld", i, (long long)rep[i]);
        if (rep[i] && x->dims[i] > INT64_MAX / rep[i])
            return gwr_k_fail(k, GWR_ERR_SHAPE, "repeats entry %d makes dim %d overflow", i, i);
        od[i] = x->dims[i] * rep[i];
        vd[2 * i] = rep[i], vd[2 * i + 1] = x->dims[i];
        vs[2 * i] = 0, vs[2 * i + 1] = xs[i];
    }
    int64_t total = gwr_shape_numel(r, od);
    if (total < 0 || total > MAX_ELEMS) return bad_count(k, total, MAX_ELEMS);
    gwr_value *o = gwr_k_out(k, 0, x->dtype, r, od);
    if (!o) return GWR_ERR_NOMEM;
    return copy_view(k, o, 0, x, 0, 2 * r, vd, vs, esz);
}

/* ---- Pad ------------------------------------------------------------------ */

static gwr_status k_pad(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need(k, 0);
    if (!x) return GWR_ERR_INVALID_ARG;
    int64_t esz = gwr_ku_elem_size(k, x->dtype);
    if (esz < 0) return GWR_ERR_UNSUPPORTED;
    int r = x->rank;
    const char *mode = gwr_k_string(k, "mode", "constant");
    enum { CONST, REFLECT, EDGE, WRAP } m;
    if (!strcmp(mode, "constant")) m = CONST;
    else if (!strcmp(mode, "reflect")) m = REFLECT;
    else if (!strcmp(mode, "edge")) m = EDGE;
    else if (!strcmp(mode, "wrap")) m = WRAP;
    else return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "unknown mode '%s'", mode);
    int64_t pads[2 * MAXR], axes[MAXR], np, na = -2;
    if ((np = axes_of(k, 1, "pads", pads, 2 * MAXR)) == -1) return GWR_ERR_INVALID_ARG;
    if (np == -2 && (np = axes_of(k, 99, "paddings", pads, 2 * MAXR)) == -1) return GWR_ERR_INVALID_ARG; /* opset 1 */
    if (np == -2) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "no pads");
    if (gwr_ku_opt(k, 3) && (na = gwr_k_in_ints(k, 3, axes, MAXR)) < 0) return GWR_ERR_INVALID_ARG;
    int64_t nax = na >= 0 ? na : r;
    if (np != 2 * nax) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "pads has %lld entries, expected %lld", (long long)np, (long long)(2 * nax));
    int64_t lo[MAXR] = {0}, hi[MAXR] = {0}, od[MAXR];
    uint8_t seen[MAXR] = {0};
    for (int64_t j = 0; j < nax; j++) {
        int a = na >= 0 ? gwr_axis(axes[j], r) : (int)j;
        if (a < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)axes[j], r);
        if (seen[a]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %d is repeated", a);
        seen[a] = 1;
        lo[a] = pads[j], hi[a] = pads[j + nax];
    }
    for (int a = 0; a < r; a++) {
        if (lo[a] < -MAX_ELEMS || lo[a] > MAX_ELEMS || hi[a] < -MAX_ELEMS || hi[a] > MAX_ELEMS)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "pads of axis %d are out of range", a);
        od[a] = x->dims[a] + lo[a] + hi[a];
        if (od[a] < 0) return gwr_k_fail(k, GWR_ERR_SHAPE, "pads make axis %d negative (%lld)", a, (long long)od[a]);
        if (od[a] > MAX_ELEMS) return bad_count(k, od[a], MAX_ELEMS);
        if (m != CONST && x->dims[a] == 0 && od[a] > 0)
            return gwr_k_fail(k, GWR_ERR_SHAPE, "cannot %s-pad the empty axis %d", mode, a);
    }
    int64_t total = gwr_shape_numel(r, od);
    if (total < 0 || total > MAX_ELEMS) return bad_count(k, total, MAX_ELEMS);
    /* The constant: input 2 (opset 11) or the attribute value (float). */
    union {
        char b[16];
        gwr_bytes s;
        double align;
    } cval;
    memset(&cval, 0, sizeof cval);
    const gwr_value *cv = gwr_ku_opt(k, 2);
    if (cv && cv->numel > 0) {
        if (cv->dtype != x->dtype)
            return gwr_k_fail(k, GWR_ERR_TYPE, "constant_value is %s, the input %s", gwr_dtype_name(cv->dtype), gwr_dtype_name(x->dtype));
        if (esz) memcpy(cval.b, cv->data, (size_t)esz);
        else cval.s = *(const gwr_bytes *)cv->data;
    } else if (esz && x->dtype != GWR_STRING && gwr_dtype_bits(x->dtype) >= 8 && x->dtype != GWR_COMPLEX64 &&
               x->dtype != GWR_COMPLEX128 && x->dtype < GWR_FLOAT8E4M3FN) {
        gwr_value tmp;
        memset(&tmp, 0, sizeof tmp);
        tmp.dtype = x->dtype, tmp.data = cval.b, tmp.numel = 1;
        gwr_v_set_f64(&tmp, 0, gwr_k_float(k, "value", 0.0f));
    }
    gwr_value *o = gwr_k_out(k, 0, x->dtype, r, od);
    if (!o) return GWR_ERR_NOMEM;
    if (!total) return GWR_OK;
    if (r == 0) return gwr_ku_copy_run(k, o, 0, x, 0, 1, esz);
    /* Per axis, the input index of each output index (-1: the constant). */
    int64_t nmap = 0, off[MAXR], xs[MAXR];
    for (int a = 0; a < r; a++) off[a] = nmap, nmap += od[a];
    int64_t *map = gwr_malloc((size_t)nmap * sizeof *map);
    if (!map) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    for (int a = 0; a < r; a++) {
        int64_t n = x->dims[a];
        for (int64_t i = 0; i < od[a]; i++) {
            int64_t j = i - lo[a], v;
            if (j >= 0 && j < n) v = j;
            else if (m == CONST) v = -1;
            else if (m == EDGE) v = j < 0 ? 0 : n - 1;
            else if (m == WRAP) v = ((j % n) + n) % n;
            else if (n == 1) v = 0;
            else {
                int64_t p = 2 * (n - 1);
                v = ((j % p) + p) % p;
                if (v >= n) v = p - v;
            }
            map[off[a] + i] = v;
        }
    }
    gwr_strides(r, x->dims, xs);
    int64_t idx[MAXR] = {0}, oi = 0, n = od[r - 1];
    const int64_t *im = map + off[r - 1];
    gwr_status rc = GWR_OK;
    for (;;) {
        int64_t src = 0;
        int inside = 1;
        for (int a = 0; a < r - 1; a++) {
            int64_t v = map[off[a] + idx[a]];
            if (v < 0) inside = 0;
            src += v * xs[a];
        }
        if (!inside) {
            rc = fill_run(k, o, oi, &cval, n, esz);
        } else {
            for (int64_t j = 0; j < n && !rc;) {
                int64_t v = im[j], l = 1;
                if (v < 0) {
                    while (j + l < n && im[j + l] < 0) l++;
                    rc = fill_run(k, o, oi + j, &cval, l, esz);
                } else {
                    while (j + l < n && im[j + l] == v + l) l++;
                    rc = gwr_ku_copy_run(k, o, oi + j, x, src + v, l, esz);
                }
                j += l;
            }
        }
        if (rc) break;
        oi += n;
        int a = r - 2;
        for (; a >= 0; a--) {
            if (++idx[a] < od[a]) break;
            idx[a] = 0;
        }
        if (a < 0) break;
    }
    gwr_free(map);
    return rc;
}

/* ---- Shape, Size, ConstantOfShape, Range, EyeLike ------------------------ */

static gwr_status k_shape(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need(k, 0);
    if (!x) return GWR_ERR_INVALID_ARG;
    int64_t r = x->rank, s = gwr_k_int(k, "start", 0), e = gwr_k_int(k, "end", r);
    if (s < 0) s += r;
    if (e < 0) e += r;
    s = s < 0 ? 0 : s > r ? r : s;
    e = e < 0 ? 0 : e > r ? r : e;
    int64_t n = e > s ? e - s : 0;
    gwr_value *o = gwr_k_out(k, 0, GWR_INT64, 1, &n);
    if (!o) return GWR_ERR_NOMEM;
    if (n) memcpy(o->data, x->dims + s, (size_t)n * sizeof(int64_t));
    return GWR_OK;
}

static gwr_status k_size(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need(k, 0);
    if (!x) return GWR_ERR_INVALID_ARG;
    gwr_value *o = gwr_k_out(k, 0, GWR_INT64, 0, NULL);
    if (!o) return GWR_ERR_NOMEM;
    *(int64_t *)o->data = x->numel;
    return GWR_OK;
}

static gwr_status k_constant_of_shape(gwr_kctx *k) {
    if (!gwr_ku_need(k, 0)) return GWR_ERR_INVALID_ARG;
    int64_t sh[MAXR];
    int64_t n = gwr_k_in_ints(k, 0, sh, MAXR);
    if (n < 0) return GWR_ERR_INVALID_ARG;
    for (int64_t i = 0; i < n; i++)
        if (sh[i] < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "shape entry %lld is %lld", (long long)i, (long long)sh[i]);
    int64_t total = gwr_shape_numel((int)n, sh);
    if (total < 0 || total > MAX_ELEMS) return bad_count(k, total, MAX_ELEMS);
    const gwr_weights *w;
    gwr_dtype dt = GWR_FLOAT32;
    union {
        char b[16];
        gwr_bytes s;
        double align;
    } val;
    memset(&val, 0, sizeof val);
    if (!gwr_layer_get_tensor(k->layer, "value", &w)) {
        if (gwr_shape_numel(w->rank, w->dims) != 1)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "value must hold one element");
        dt = w->dtype;
        int64_t esz = gwr_ku_elem_size(k, dt);
        if (esz < 0) return GWR_ERR_UNSUPPORTED;
        if (esz > 16 || (esz && w->nbytes < (size_t)esz)) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "value has no data");
        if (esz) memcpy(val.b, w->data, (size_t)esz);
        else val.s = *(const gwr_bytes *)w->data;
    }
    gwr_value *o = gwr_k_out(k, 0, dt, (int)n, sh);
    if (!o) return GWR_ERR_NOMEM;
    return fill_run(k, o, 0, &val, total, dt == GWR_STRING ? 0 : (int64_t)gwr_dtype_size(dt));
}

static int is_plain_numeric(gwr_dtype dt) {
    return dt != GWR_STRING && dt != GWR_COMPLEX64 && dt != GWR_COMPLEX128 && dt != GWR_UNDEFINED &&
           gwr_dtype_bits(dt) >= 8 && dt < GWR_FLOAT8E4M3FN;
}

static gwr_status k_range(gwr_kctx *k) {
    const gwr_value *v[3];
    for (int i = 0; i < 3; i++) {
        if (!(v[i] = gwr_ku_need(k, i))) return GWR_ERR_INVALID_ARG;
        if (v[i]->numel != 1) return gwr_k_fail(k, GWR_ERR_SHAPE, "input %d must be a scalar", i);
        if (v[i]->dtype != v[0]->dtype) return gwr_k_fail(k, GWR_ERR_TYPE, "inputs differ in dtype");
    }
    gwr_dtype dt = v[0]->dtype;
    if (!is_plain_numeric(dt) || dt == GWR_BOOL)
        return gwr_k_fail(k, GWR_ERR_TYPE, "dtype %s is not supported", gwr_dtype_name(dt));
    int64_t n;
    if (gwr_dtype_is_int(dt)) {
        int64_t s = gwr_v_get_i64(v[0], 0), l = gwr_v_get_i64(v[1], 0), d = gwr_v_get_i64(v[2], 0);
        if (!d) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "delta is 0");
        if (d > 0) n = l > s ? (int64_t)(((uint64_t)l - (uint64_t)s - 1) / (uint64_t)d + 1) : 0;
        else n = s > l ? (int64_t)(((uint64_t)s - (uint64_t)l - 1) / (uint64_t)(-(d + 1) + 1ull) + 1) : 0;
        if (n < 0 || n > MAX_ELEMS) return bad_count(k, n, MAX_ELEMS);
        gwr_value *o = gwr_k_out(k, 0, dt, 1, &n);
        if (!o) return GWR_ERR_NOMEM;
        if (dt == GWR_INT64) {
            int64_t *p = o->data;
            for (int64_t i = 0; i < n; i++) p[i] = (int64_t)((uint64_t)s + (uint64_t)i * (uint64_t)d);
        } else if (dt == GWR_INT32) {
            int32_t *p = o->data;
            for (int64_t i = 0; i < n; i++) p[i] = (int32_t)(s + i * d);
        } else {
            for (int64_t i = 0; i < n; i++) gwr_v_set_f64(o, i, (double)(s + i * d));
        }
        return GWR_OK;
    }
    double s = gwr_v_get_f64(v[0], 0), l = gwr_v_get_f64(v[1], 0), d = gwr_v_get_f64(v[2], 0);
    if (d == 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "delta is 0");
    double c = ceil((l - s) / d);
    if (!(c == c) || c > (double)MAX_ELEMS) return gwr_k_fail(k, GWR_ERR_SHAPE, "the range has too many elements (or NaN bounds)");
    n = c > 0 ? (int64_t)c : 0;
    gwr_value *o = gwr_k_out(k, 0, dt, 1, &n);
    if (!o) return GWR_ERR_NOMEM;
    if (dt == GWR_FLOAT32) {
        float *p = o->data, fs = (float)s, fd = (float)d;
        for (int64_t i = 0; i < n; i++) p[i] = fs + (float)i * fd;
    } else {
        for (int64_t i = 0; i < n; i++) gwr_v_set_f64(o, i, s + (double)i * d);
    }
    return GWR_OK;
}

static gwr_status k_eye_like(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need(k, 0);
    if (!x) return GWR_ERR_INVALID_ARG;
    if (x->rank != 2) return gwr_k_fail(k, GWR_ERR_SHAPE, "input must have rank 2, not %d", x->rank);
    int64_t dti = gwr_k_int(k, "dtype", x->dtype), kk = gwr_k_int(k, "k", 0);
    gwr_dtype dt = (gwr_dtype)dti;
    if (dti < 0 || dti >= GWR_DTYPE_COUNT || !is_plain_numeric(dt))
        return gwr_k_fail(k, GWR_ERR_TYPE, "dtype %lld is not supported", (long long)dti);
    gwr_value *o = gwr_k_out(k, 0, dt, 2, x->dims);
    if (!o) return GWR_ERR_NOMEM;
    if (o->nbytes) memset(o->data, 0, o->nbytes);
    int64_t rows = x->dims[0], cols = x->dims[1];
    if (kk <= -rows || kk >= cols) return GWR_OK;
    for (int64_t i = kk < 0 ? -kk : 0; i < rows && i + kk < cols; i++) gwr_v_set_f64(o, i * cols + i + kk, 1.0);
    return GWR_OK;
}

/* ---- NonZero, OneHot, Trilu, ReverseSequence, Compress ------------------- */

static int nonzero_at(const gwr_value *x, int64_t i, int64_t esz) {
    const char *p = (const char *)x->data + i * esz;
    switch (x->dtype) {
    case GWR_FLOAT32: { float f; memcpy(&f, p, 4); return f != 0; }
    case GWR_FLOAT64: { double f; memcpy(&f, p, 8); return f != 0; }
    case GWR_FLOAT16:
    case GWR_BFLOAT16: { uint16_t h; memcpy(&h, p, 2); return (h & 0x7fff) != 0; }
    case GWR_STRING: return ((const gwr_bytes *)x->data)[i].len != 0;
    default:
        for (int64_t b = 0; b < esz; b++)
            if (p[b]) return 1;
        return 0;
    }
}

static gwr_status k_nonzero(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need(k, 0);
    if (!x) return GWR_ERR_INVALID_ARG;
    int64_t esz = gwr_ku_elem_size(k, x->dtype);
    if (esz < 0) return GWR_ERR_UNSUPPORTED;
    if (x->dtype == GWR_COMPLEX64 || x->dtype == GWR_COMPLEX128 || x->dtype >= GWR_FLOAT8E4M3FN)
        return gwr_k_fail(k, GWR_ERR_TYPE, "dtype %s is not supported", gwr_dtype_name(x->dtype));
    int64_t nnz = 0;
    for (int64_t i = 0; i < x->numel; i++) nnz += nonzero_at(x, i, esz);
    int r = x->rank ? x->rank : 1;
    int64_t od[2] = {r, nnz};
    gwr_value *o = gwr_k_out(k, 0, GWR_INT64, 2, od);
    if (!o) return GWR_ERR_NOMEM;
    int64_t *p = o->data, idx[MAXR] = {0}, j = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        if (nonzero_at(x, i, esz)) {
            for (int a = 0; a < r; a++) p[a * nnz + j] = x->rank ? idx[a] : 0;
            j++;
        }
        for (int a = x->rank - 1; a >= 0; a--) {
            if (++idx[a] < x->dims[a]) break;
            idx[a] = 0;
        }
    }
    return GWR_OK;
}

static gwr_status k_one_hot(gwr_kctx *k) {
    const gwr_value *ind = gwr_ku_need(k, 0), *dep = gwr_ku_need(k, 1), *val = gwr_ku_need(k, 2);
    if (!ind || !dep || !val) return GWR_ERR_INVALID_ARG;
    if (!is_plain_numeric(ind->dtype) || !is_plain_numeric(dep->dtype))
        return gwr_k_fail(k, GWR_ERR_TYPE, "indices and depth must be numeric");
    if (dep->numel != 1) return gwr_k_fail(k, GWR_ERR_SHAPE, "depth must hold one element");
    if (val->numel != 2) return gwr_k_fail(k, GWR_ERR_SHAPE, "values must hold two elements, not %lld", (long long)val->numel);
    int64_t esz = gwr_ku_elem_size(k, val->dtype);
    if (esz < 0) return GWR_ERR_UNSUPPORTED;
    double dd = gwr_v_get_f64(dep, 0);
    if (!(dd >= 1) || dd > (double)MAX_ELEMS) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "depth %g must be a positive count", dd);
    int64_t depth = (int64_t)dd, r = ind->rank, axis = gwr_k_int(k, "axis", -1);
    if (r + 1 > MAXR) return gwr_k_fail(k, GWR_ERR_SHAPE, "rank too large");
    if (axis < -(r + 1) || axis > r)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld is out of range for output rank %lld", (long long)axis, (long long)(r + 1));
    if (axis < 0) axis += r + 1;
    int64_t od[MAXR];
    for (int i = 0, j = 0; i <= r; i++) od[i] = i == axis ? depth : ind->dims[j++];
    int64_t total = gwr_shape_numel((int)r + 1, od);
    if (total < 0 || total > MAX_ELEMS) return bad_count(k, total, MAX_ELEMS);
    gwr_value *o = gwr_k_out(k, 0, val->dtype, (int)r + 1, od);
    if (!o) return GWR_ERR_NOMEM;
    const void *off = esz ? (const void *)val->data : (const void *)&((const gwr_bytes *)val->data)[0];
    if (fill_run(k, o, 0, off, total, esz)) return GWR_ERR_NOMEM;
    int64_t inner = gwr_shape_numel((int)(r - axis), ind->dims + axis), outer = inner ? ind->numel / inner : 0;
    for (int64_t q = 0; q < outer; q++)
        for (int64_t i = 0; i < inner; i++) {
            double f = gwr_v_get_f64(ind, q * inner + i);
            if (!(f > -(double)depth - 1 && f < (double)depth)) continue;
            int64_t id = (int64_t)f;
            if (id < 0) id += depth;
            if (id < 0 || id >= depth) continue;
            if (gwr_ku_copy_run(k, o, (q * depth + id) * inner + i, val, 1, 1, esz)) return GWR_ERR_NOMEM;
        }
    return GWR_OK;
}

static gwr_status k_trilu(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need(k, 0);
    if (!x) return GWR_ERR_INVALID_ARG;
    int64_t esz = gwr_ku_elem_size(k, x->dtype);
    if (esz < 0) return GWR_ERR_UNSUPPORTED;
    if (x->rank < 2) return gwr_k_fail(k, GWR_ERR_SHAPE, "input must have rank 2 or more, not %d", x->rank);
    int64_t kk = 0;
    const gwr_value *kv = gwr_ku_opt(k, 1);
    if (kv) {
        if (kv->numel != 1 || (kv->dtype != GWR_INT64 && kv->dtype != GWR_INT32))
            return gwr_k_fail(k, GWR_ERR_TYPE, "k must be one int64");
        kk = gwr_v_get_i64(kv, 0);
    }
    int upper = gwr_k_int(k, "upper", 1) != 0;
    int64_t n = x->dims[x->rank - 2], m = x->dims[x->rank - 1];
    if (kk > n + m) kk = n + m;
    if (kk < -(n + m)) kk = -(n + m);
    gwr_value *o = gwr_k_out(k, 0, x->dtype, x->rank, x->dims);
    if (!o) return GWR_ERR_NOMEM;
    if (!o->numel) return GWR_OK;
    int64_t nb = x->numel / (n * m);
    for (int64_t b = 0; b < nb; b++)
        for (int64_t i = 0; i < n; i++) {
            int64_t row = (b * n + i) * m, from, to; /* kept: [from, to) */
            if (upper) from = i + kk < 0 ? 0 : i + kk > m ? m : i + kk, to = m;
            else from = 0, to = i + kk + 1 < 0 ? 0 : i + kk + 1 > m ? m : i + kk + 1;
            if (gwr_ku_copy_run(k, o, row + from, x, row + from, to - from, esz)) return GWR_ERR_NOMEM;
            if (esz) {
                char *d = o->data;
                memset(d + row * esz, 0, (size_t)(from * esz));
                if (to < from) to = from;
                memset(d + (row + to) * esz, 0, (size_t)((m - to) * esz));
            }
        }
    return GWR_OK;
}

static gwr_status k_reverse_sequence(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need(k, 0), *lens = gwr_ku_need(k, 1);
    if (!x || !lens) return GWR_ERR_INVALID_ARG;
    int64_t esz = gwr_ku_elem_size(k, x->dtype);
    if (esz < 0) return GWR_ERR_UNSUPPORTED;
    if (x->rank < 2) return gwr_k_fail(k, GWR_ERR_SHAPE, "input must have rank 2 or more, not %d", x->rank);
    int64_t ba = gwr_k_int(k, "batch_axis", 1), ta = gwr_k_int(k, "time_axis", 0);
    if (!((ba == 0 && ta == 1) || (ba == 1 && ta == 0)))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "batch_axis %lld and time_axis %lld must be 0 and 1", (long long)ba, (long long)ta);
    int64_t B = x->dims[ba], T = x->dims[ta], inner = gwr_shape_numel(x->rank - 2, x->dims + 2);
    if ((lens->dtype != GWR_INT64 && lens->dtype != GWR_INT32) || lens->rank != 1 || lens->numel != B)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "sequence_lens must be a 1-D integer tensor of %lld entries", (long long)B);
    for (int64_t b = 0; b < B; b++) {
        int64_t l = gwr_v_get_i64(lens, b);
        if (l < 0 || l > T) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "sequence_lens[%lld] = %lld is out of [0, %lld]", (long long)b, (long long)l, (long long)T);
    }
    gwr_value *o = gwr_k_out(k, 0, x->dtype, x->rank, x->dims);
    if (!o) return GWR_ERR_NOMEM;
    for (int64_t b = 0; b < B; b++) {
        int64_t l = gwr_v_get_i64(lens, b);
        for (int64_t t = 0; t < T; t++) {
            int64_t s = t < l ? l - 1 - t : t;
            int64_t oi = (ta == 0 ? t * B + b : b * T + t) * inner, si = (ta == 0 ? s * B + b : b * T + s) * inner;
            if (gwr_ku_copy_run(k, o, oi, x, si, inner, esz)) return GWR_ERR_NOMEM;
        }
    }
    return GWR_OK;
}

static gwr_status k_compress(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need(k, 0), *c = gwr_ku_need(k, 1);
    if (!x || !c) return GWR_ERR_INVALID_ARG;
    int64_t esz = gwr_ku_elem_size(k, x->dtype);
    if (esz < 0) return GWR_ERR_UNSUPPORTED;
    if (c->dtype != GWR_BOOL || c->rank != 1) return gwr_k_fail(k, GWR_ERR_TYPE, "condition must be a 1-D bool tensor");
    int has_axis = gwr_layer_has_attr(k->layer, "axis");
    int64_t axis_attr = gwr_k_int(k, "axis", 0);
    int r = has_axis ? x->rank : 1, axis = 0;
    int64_t od[MAXR], flat = x->numel;
    const int64_t *dims = has_axis ? x->dims : &flat;
    if (has_axis && (axis = gwr_axis(axis_attr, r)) < 0)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)axis_attr, r);
    const uint8_t *cond = c->data;
    int64_t dim = dims[axis], cnt = 0;
    for (int64_t i = 0; i < c->numel; i++) {
        if (!cond[i]) continue;
        if (i >= dim)
            return gwr_k_fail(k, GWR_ERR_SHAPE, "condition selects entry %lld of an axis of %lld", (long long)i, (long long)dim);
        cnt++;
    }
    memcpy(od, dims, (size_t)r * sizeof *od);
    od[axis] = cnt;
    gwr_value *o = gwr_k_out(k, 0, x->dtype, r, od);
    if (!o) return GWR_ERR_NOMEM;
    int64_t outer = gwr_shape_numel(axis, dims), inner = gwr_shape_numel(r - axis - 1, dims + axis + 1), oi = 0;
    for (int64_t q = 0; q < outer; q++)
        for (int64_t i = 0; i < c->numel && i < dim; i++)
            if (cond[i]) {
                if (gwr_ku_copy_run(k, o, oi, x, (q * dim + i) * inner, inner, esz)) return GWR_ERR_NOMEM;
                oi += inner;
            }
    return GWR_OK;
}

const gwr_kernel_entry gwr_kernels_tensor[] = {
    GWR_KERNEL(Reshape, k_reshape, .flags = GWR_KF_ALIAS),
    GWR_KERNEL(Flatten, k_flatten, .flags = GWR_KF_ALIAS),
    GWR_KERNEL(Squeeze, k_squeeze, .flags = GWR_KF_ALIAS),
    GWR_KERNEL(Unsqueeze, k_unsqueeze, .flags = GWR_KF_ALIAS),
    GWR_KERNEL(Transpose, k_transpose, .flags = GWR_KF_ALIAS),
    GWR_KERNEL(DepthToSpace, k_depth_to_space),
    GWR_KERNEL(SpaceToDepth, k_space_to_depth),
    GWR_KERNEL(Concat, k_concat),
    GWR_KERNEL(Split, k_split, .flags = GWR_KF_ALIAS),
    GWR_KERNEL(Slice, k_slice, .flags = GWR_KF_ALIAS),
    GWR_KERNEL(Expand, k_expand, .flags = GWR_KF_ALIAS),
    GWR_KERNEL(Tile, k_tile),
    GWR_KERNEL(Pad, k_pad),
    GWR_KERNEL(Shape, k_shape, .flags = GWR_KF_CACHE), /* they read dims only: a KV cache is not copied */
    GWR_KERNEL(Size, k_size, .flags = GWR_KF_CACHE),
    GWR_KERNEL(ConstantOfShape, k_constant_of_shape),
    GWR_KERNEL(Range, k_range),
    GWR_KERNEL(EyeLike, k_eye_like),
    GWR_KERNEL(NonZero, k_nonzero),
    GWR_KERNEL(OneHot, k_one_hot),
    GWR_KERNEL(Trilu, k_trilu),
    GWR_KERNEL(ReverseSequence, k_reverse_sequence),
    GWR_KERNEL(Compress, k_compress),
    {.fn = NULL},
};
