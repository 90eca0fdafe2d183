/* consts.c - reading constants for patterns: a CONSTANT layer's value in
 * any numeric dtype, widened to double, and the splat, scalar and
 * per-channel tests patterns ask of them. Public API only. */
#include <math.h>
#include <string.h>

#include "gwr/match.h"
#include "util/util.h"

static int readable(gwr_dtype t) {
    switch (t) {
    case GWR_FLOAT32: case GWR_FLOAT64: case GWR_FLOAT16: case GWR_BFLOAT16: case GWR_BOOL:
    case GWR_INT8: case GWR_UINT8: case GWR_INT16: case GWR_UINT16:
    case GWR_INT32: case GWR_UINT32: case GWR_INT64: case GWR_UINT64:
        return 1;
    default: return 0;
    }
}

int gwr_match_const_get(const gwr_tensor *t, gwr_match_const *out) {
    if (!t || !out) return 0;
    const gwr_layer *l = gwr_tensor_parent(t);
    if (!l || gwr_layer_type(l) != GWR_LAYER_CONSTANT || gwr_layer_is_removed(l) || gwr_layer_num_outputs(l) != 1) return 0;
    memset(out, 0, sizeof *out);
    const gwr_weights *w;
    const float *fs;
    const int64_t *is;
    int64_t n;
    if (gwr_layer_find_attr(l, "value") >= 0) {
        if (gwr_layer_attr_type(l, gwr_layer_find_attr(l, "value")) != GWR_ATTR_TENSOR || gwr_layer_get_tensor(l, "value", &w))
            return 0;
        int64_t numel = gwr_shape_numel(w->rank, w->dims);
        if (!readable(w->dtype) || numel < 0 || (size_t)numel * gwr_dtype_size(w->dtype) > w->nbytes) return 0;
        out->dtype = w->dtype, out->rank = w->rank, out->dims = w->dims, out->numel = numel, out->data = w->data;
        return 1;
    }
    out->dims = &out->dim0_;
    int idx;
    if ((idx = gwr_layer_find_attr(l, "value_float")) >= 0 && gwr_layer_attr_type(l, idx) == GWR_ATTR_FLOAT) {
        gwr_layer_get_float(l, "value_float", &out->scalar_.f);
        out->dtype = GWR_FLOAT32, out->numel = 1, out->data = &out->scalar_.f, out->dims = NULL;
    } else if ((idx = gwr_layer_find_attr(l, "value_int")) >= 0 && gwr_layer_attr_type(l, idx) == GWR_ATTR_INT) {
        gwr_layer_get_int(l, "value_int", &out->scalar_.i);
        out->dtype = GWR_INT64, out->numel = 1, out->data = &out->scalar_.i, out->dims = NULL;
    } else if ((idx = gwr_layer_find_attr(l, "value_floats")) >= 0 && gwr_layer_attr_type(l, idx) == GWR_ATTR_FLOATS &&
               !gwr_layer_get_floats(l, "value_floats", &fs, &n)) {
        out->dtype = GWR_FLOAT32, out->rank = 1, out->dim0_ = out->numel = n, out->data = fs;
    } else if ((idx = gwr_layer_find_attr(l, "value_ints")) >= 0 && gwr_layer_attr_type(l, idx) == GWR_ATTR_INTS &&
               !gwr_layer_get_ints(l, "value_ints", &is, &n)) {
        out->dtype = GWR_INT64, out->rank = 1, out->dim0_ = out->numel = n, out->data = is;
    } else {
        return 0;
    }
    return 1;
}

static double half_to_f64(uint16_t h) {
    int sign = h >> 15, e = (h >> 10) & 0x1f, f = h & 0x3ff;
    double v = e == 0 ? ldexp(f, -24) : e == 31 ? (f ? NAN : INFINITY) : ldexp(f + 1024, e - 25);
    return sign ? -v : v;
}

static double bf16_to_f64(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

int gwr_match_const_int_at(const gwr_match_const *c, int64_t i, int64_t *v) {
    if (!c || !c->data || i < 0 || i >= c->numel || !v) return 0;
    const char *p = (const char *)c->data + (size_t)i * gwr_dtype_size(c->dtype);
#define RD(T) do { T v_; memcpy(&v_, p, sizeof v_); *v = (int64_t)v_; return 1; } while (0)
    switch (c->dtype) {
    case GWR_INT8: RD(int8_t);
    case GWR_UINT8: RD(uint8_t);
    case GWR_INT16: RD(int16_t);
    case GWR_UINT16: RD(uint16_t);
    case GWR_INT32: RD(int32_t);
    case GWR_UINT32: RD(uint32_t);
    case GWR_INT64: RD(int64_t);
    case GWR_UINT64: {
        uint64_t u;
        memcpy(&u, p, sizeof u);
        if (u > (uint64_t)INT64_MAX) return 0; /* not an int64: refused, never wrapped */
        *v = (int64_t)u;
        return 1;
    }
    default: return 0;
    }
#undef RD
}

double gwr_match_const_at(const gwr_match_const *c, int64_t i) {
    if (!c || !c->data || i < 0 || i >= c->numel) return NAN;
    const char *p = (const char *)c->data + (size_t)i * gwr_dtype_size(c->dtype);
    int64_t k;
    if (c->dtype != GWR_UINT64 && gwr_match_const_int_at(c, i, &k)) return (double)k;
#define RD(T) do { T v_; memcpy(&v_, p, sizeof v_); return (double)v_; } while (0)
    switch (c->dtype) {
    case GWR_FLOAT32: RD(float);
    case GWR_FLOAT64: RD(double);
    case GWR_UINT64: RD(uint64_t);
    case GWR_BOOL: return *p ? 1.0 : 0.0;
    case GWR_FLOAT16: { uint16_t h; memcpy(&h, p, 2); return half_to_f64(h); }
    case GWR_BFLOAT16: { uint16_t h; memcpy(&h, p, 2); return bf16_to_f64(h); }
    default: return NAN;
    }
#undef RD
}

int gwr_match_const_ints(const gwr_tensor *t, int64_t *v, int cap) {
    gwr_match_const k;
    if (!t || !gwr_match_const_get(t, &k) || !gwr_dtype_is_int(k.dtype) || k.rank > 1 || k.numel > cap) return -1;
    for (int64_t i = 0; i < k.numel; i++)
        if (!gwr_match_const_int_at(&k, i, &v[i])) return -1;
    return (int)k.numel;
}

gwr_status gwr_match_const_f64(const gwr_tensor *t, double *out, int64_t cap, int64_t *n, int *rank, int64_t *dims) {
    gwr_match_const c;
    if (!t) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_match_const_f64: NULL tensor");
    if (!gwr_match_const_get(t, &c))
        return gwr_set_last_error(GWR_ERR_TYPE, "'%s' is not a constant of a numeric dtype", gwr_tensor_name(t));
    if (n) *n = c.numel;
    if (rank) *rank = c.rank;
    if (dims && c.rank) memcpy(dims, c.dims, (size_t)c.rank * sizeof *dims);
    if (c.numel > cap || (c.numel && !out))
        return gwr_set_last_error(GWR_ERR_SHAPE, "constant '%s' has %lld elements, room for %lld", gwr_tensor_name(t),
                                  (long long)c.numel, (long long)cap);
    for (int64_t i = 0; i < c.numel; i++) out[i] = gwr_match_const_at(&c, i);
    return GWR_OK;
}

int gwr_match_const_is_splat(const gwr_tensor *t, double v, double tol) {
    gwr_match_const c;
    if (!gwr_match_const_get(t, &c) || c.numel < 1) return 0;
    for (int64_t i = 0; i < c.numel; i++)
        if (!(fabs(gwr_match_const_at(&c, i) - v) <= tol)) return 0;
    return 1;
}

int gwr_match_const_scalar(const gwr_tensor *t, double *v) {
    gwr_match_const c;
    if (!gwr_match_const_get(t, &c) || c.numel != 1) return 0;
    if (v) *v = gwr_match_const_at(&c, 0);
    return 1;
}

int gwr_match_const_per_channel(const gwr_tensor *t, int rank, int axis, int64_t *channels) {
    gwr_match_const c;
    if (!gwr_match_const_get(t, &c) || rank < 1 || c.rank > rank) return 0;
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return 0;
    int64_t ch = 1;
    for (int d = 0; d < c.rank; d++) {
        int full = d + rank - c.rank;   /* the dim it aligns with */
        if (full == axis) ch = c.dims[d];
        else if (c.dims[d] != 1) return 0;
    }
    if (channels) *channels = ch;
    return 1;
}

int gwr_match_dtype_real_float(gwr_dtype t) {
    return t == GWR_FLOAT32 || t == GWR_FLOAT16 || t == GWR_FLOAT64 || t == GWR_BFLOAT16;
}
