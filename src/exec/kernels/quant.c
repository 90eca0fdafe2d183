/* quant.c - linear quantization: QuantizeLinear (round half to even,
 * saturate), DequantizeLinear, per tensor or per axis, and
 * DynamicQuantizeLinear (uint8 with the scale and zero point of the
 * input's range). The quantized products (QLinearMatMul, ConvInteger ...)
 * live with their float forms in linalg.c and conv.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/kernels/kernel_util.h"

static int quant_range(gwr_dtype t, double *lo, double *hi) {
    switch (t) {
    case GWR_UINT8: *lo = 0, *hi = 255; return 1;
    case GWR_INT8: *lo = -128, *hi = 127; return 1;
    case GWR_UINT16: *lo = 0, *hi = 65535; return 1;
    case GWR_INT16: *lo = -32768, *hi = 32767; return 1;
    case GWR_INT32: *lo = -2147483648.0, *hi = 2147483647.0; return 1;
    default: return 0;
    }
}

/* Where scale and zero point apply: per tensor (scalar or one value) or
 * per axis (a 1-D tensor of the axis' extent). *inner is the product of
 * the dims after the axis; *n the count of scales. */
static gwr_status qparams(gwr_kctx *k, const gwr_value *x, const gwr_value *scale, const gwr_value *zp, int64_t *n,
                          int64_t *inner) {
    if (zp && (zp->rank != scale->rank || zp->numel != scale->numel))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "scale and zero point must have the same shape");
    *n = scale->numel, *inner = 1;
    if (scale->rank == 0 || (scale->rank == 1 && scale->numel == 1)) {
        *n = 1;
        return GWR_OK;
    }
    if (scale->rank != 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "scale must be a scalar or 1-D, not rank %d", scale->rank);
    int axis = gwr_axis(gwr_k_int(k, "axis", 1), x->rank);
    if (axis < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis is out of range for rank %d", x->rank);
    if (x->dims[axis] != scale->numel)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%lld scales for axis %d of extent %lld", (long long)scale->numel, axis,
                          (long long)x->dims[axis]);
    for (int i = axis + 1; i < x->rank; i++) *inner *= x->dims[i];
    return GWR_OK;
}

static double round_even(double v) { return v - floor(v) == 0.5 ? 2.0 * round(v / 2.0) : round(v); }

static gwr_status k_quantize(gwr_kctx *k) {
    const gwr_value *x = k->nin > 0 ? k->in[0] : NULL, *scale = k->nin > 1 ? k->in[1] : NULL,
                    *zp = k->nin > 2 ? k->in[2] : NULL;
    if (!x || !scale) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "needs x and y_scale");
    if (!gwr_ku_is_float(x->dtype) && x->dtype != GWR_INT32)
        return gwr_k_fail(k, GWR_ERR_TYPE, "x must be float or int32, not %s", gwr_dtype_name(x->dtype));
    gwr_dtype ot = zp ? zp->dtype : GWR_UINT8;
    double lo, hi;
    if (!quant_range(ot, &lo, &hi) || ot == GWR_INT32)
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "quantizing to %s is not supported", gwr_dtype_name(ot));
    int64_t n, inner;
    if (qparams(k, x, scale, zp, &n, &inner)) return GWR_ERR_INVALID_ARG;
    gwr_value *y = gwr_k_out(k, 0, ot, x->rank, x->dims);
    if (!y) return GWR_ERR_NOMEM;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t q = n == 1 ? 0 : (i / inner) % n;
        double s = gwr_v_get_f64(scale, q), z = zp ? (double)gwr_v_get_i64(zp, q) : 0;
        /* x / scale in x's precision, as the spec's reference does. */
        double r = x->dtype == GWR_FLOAT64 ? gwr_v_get_f64(x, i) / s : (double)((float)gwr_v_get_f64(x, i) / (float)s);
        double v = round_even(r) + z;
        gwr_v_set_f64(y, i, isnan(v) ? 0 : v < lo ? lo : v > hi ? hi : v);
    }
    return GWR_OK;
}

static gwr_status k_dequantize(gwr_kctx *k) {
    const gwr_value *x = k->nin > 0 ? k->in[0] : NULL, *scale = k->nin > 1 ? k->in[1] : NULL,
                    *zp = k->nin > 2 ? k->in[2] : NULL;
    double lo, hi;
    if (!x || !scale) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "needs x and x_scale");
    if (!quant_range(x->dtype, &lo, &hi))
        return gwr_k_fail(k, GWR_ERR_TYPE, "x must be an 8, 16 or 32-bit integer, not %s", gwr_dtype_name(x->dtype));
    if (!gwr_ku_is_float(scale->dtype)) return gwr_k_fail(k, GWR_ERR_TYPE, "x_scale must be float");
    if (zp && zp->dtype != x->dtype) return gwr_k_fail(k, GWR_ERR_TYPE, "x_zero_point must have x's dtype");
    int64_t n, inner;
    if (qparams(k, x, scale, zp, &n, &inner)) return GWR_ERR_INVALID_ARG;
    gwr_value *y = gwr_k_out(k, 0, scale->dtype, x->rank, x->dims);
    if (!y) return GWR_ERR_NOMEM;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t q = n == 1 ? 0 : (i / inner) % n;
        double z = zp ? (double)gwr_v_get_i64(zp, q) : 0;
        gwr_v_set_f64(y, i, ((double)gwr_v_get_i64(x, i) - z) * gwr_v_get_f64(scale, q));
    }
    return GWR_OK;
}

static gwr_status k_dynamic_quantize(gwr_kctx *k) {
    const gwr_value *x = k->nin > 0 ? k->in[0] : NULL;
    if (!x || x->dtype != GWR_FLOAT32) return gwr_k_fail(k, GWR_ERR_TYPE, "x must be float32");
    double mn = 0, mx = 0; /* the range always includes 0 */
    for (int64_t i = 0; i < x->numel; i++) {
        double v = ((const float *)x->data)[i];
        if (v < mn) mn = v;
        if (v > mx) mx = v;
    }
    float scale = (float)((mx - mn) / 255.0);
    double zpd = scale ? round_even(fmin(255.0, fmax(0.0, 0.0 - mn / scale))) : 0;
    gwr_value *y = gwr_k_out(k, 0, GWR_UINT8, x->rank, x->dims), *ys = gwr_k_out(k, 1, GWR_FLOAT32, 0, NULL),
              *yz = gwr_k_out(k, 2, GWR_UINT8, 0, NULL);
    if (!y || !ys || !yz) return GWR_ERR_NOMEM;
    *(float *)ys->data = scale;
    *(uint8_t *)yz->data = (uint8_t)zpd;
    for (int64_t i = 0; i < x->numel; i++) {
        double v = scale ? round_even(((const float *)x->data)[i] / scale) + zpd : zpd;
        ((uint8_t *)y->data)[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
    return GWR_OK;
}

const gwr_kernel_entry gwr_kernels_quant[] = {
    GWR_KERNEL(QuantizeLinear, k_quantize),
    GWR_KERNEL(DequantizeLinear, k_dequantize),
    GWR_KERNEL(DynamicQuantizeLinear, k_dynamic_quantize),
    {.fn = NULL},
};
