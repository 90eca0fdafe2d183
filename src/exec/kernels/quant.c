/* quant.c - linear quantization: QuantizeLinear (round half to even,
 * saturate), DequantizeLinear, per tensor, per axis or blocked (opset 21's
 * block_size), and DynamicQuantizeLinear (uint8 with the scale and zero
 * point of the input's range, the spec's float32 formula). The quantized
 * products (QLinearMatMul, ConvInteger ...) live with their float forms in
 * linalg.c and conv.c. The float-to-integer step is gwr_ku_qround
 * (kernel_util.h); docs/conformance.md says where the spec leaves a case
 * open and what gwr does there. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/kernels/cnn_isa.h"
#include "exec/kernels/kernel_util.h"
#include "exec/kernels/vec8.h"
#include "util/util.h"

#ifdef GWR_VEC8_X86
#include <immintrin.h>
#endif

/* Which scale and zero point element applies to element i of x: per
 * tensor (kind 0), per axis (1: the index along the axis) or blocked (2:
 * the element of the scale's shape, the axis index divided by block). */
typedef struct qmap {
    int kind;
    int64_t inner; /* product of x's dims after the axis */
    int64_t dim;   /* x's extent along the axis */
    int64_t sdim;  /* the scale's extent along the axis (blocked) */
    int64_t block;
} qmap;

static inline int64_t qindex(const qmap *m, int64_t i) {
    if (m->kind == 0) return 0;
    int64_t d = (i / m->inner) % m->dim;
    if (m->kind == 1) return d;
    return ((i / m->inner / m->dim) * m->sdim + d / m->block) * m->inner + i % m->inner;
}

/* The granularity from the scale's shape: a scalar or one value (per
 * tensor), 1-D of the axis' extent (per axis), or x's rank with the axis
 * dim ceil(D / block_size) (blocked). */
static gwr_status qparams(gwr_kctx *k, const gwr_value *x, const gwr_value *scale, const gwr_value *zp, qmap *m) {
    memset(m, 0, sizeof *m);
    /* a scalar scale with a [1] zero point (onnx's own tests write them so) is one per-tensor pair */
    int one = zp && scale->rank <= 1 && zp->rank <= 1 && scale->numel == 1 && zp->numel == 1;
    if (zp && !one && (zp->rank != scale->rank || memcmp(zp->dims, scale->dims, (size_t)scale->rank * sizeof *zp->dims)))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "scale and zero point must have the same shape");
    int64_t block = gwr_k_int(k, "block_size", 0);
    if (block < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "block_size %lld is negative", (long long)block);
    if (!block && (scale->rank == 0 || (scale->rank == 1 && scale->numel == 1))) return GWR_OK;
    if (!block && scale->rank != 1)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "scale must be a scalar or 1-D, not rank %d (blocked scales need block_size)", scale->rank);
    int axis = gwr_axis(gwr_k_int(k, "axis", 1), x->rank);
    if (axis < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis is out of range for rank %d", x->rank);
    m->kind = block ? 2 : 1, m->inner = 1, m->dim = x->dims[axis], m->block = block ? block : 1;
    for (int i = axis + 1; i < x->rank; i++) m->inner *= x->dims[i];
    if (!block) {
        if (x->dims[axis] != scale->numel)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%lld scales for axis %d of extent %lld", (long long)scale->numel, axis,
                              (long long)x->dims[axis]);
        return GWR_OK;
    }
    m->sdim = scale->rank == x->rank ? scale->dims[axis] : -1;
    int ok = scale->rank == x->rank && m->sdim == (x->dims[axis] + block - 1) / block;
    for (int i = 0; ok && i < x->rank; i++) ok = i == axis || scale->dims[i] == x->dims[i];
    if (!ok)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "blocked scale must have x's shape with dim %d = ceil(%lld / block_size %lld)", axis,
                          (long long)x->dims[axis], (long long)block);
    return GWR_OK;
}

/* n float32 elements of x quantized with one scale and zero point into y
 * (ot: 8 or 16-bit), the division in float32. */
static void quant_run_f32(const float *x, int64_t n, float s, double z, double lo, double hi, gwr_dtype ot, void *y) {
    switch (ot) {
    case GWR_UINT8:
        for (int64_t i = 0; i < n; i++) ((uint8_t *)y)[i] = (uint8_t)gwr_ku_qround(x[i] / s, z, lo, hi);
        break;
    case GWR_INT8:
        for (int64_t i = 0; i < n; i++) ((int8_t *)y)[i] = (int8_t)gwr_ku_qround(x[i] / s, z, lo, hi);
        break;
    case GWR_UINT16:
        for (int64_t i = 0; i < n; i++) ((uint16_t *)y)[i] = (uint16_t)gwr_ku_qround(x[i] / s, z, lo, hi);
        break;
    default:
        for (int64_t i = 0; i < n; i++) ((int16_t *)y)[i] = (int16_t)gwr_ku_qround(x[i] / s, z, lo, hi);
        break;
    }
}

/* The saturation range of the small integer types. */
static int small_qrange(gwr_dtype t, double *lo, double *hi) {
    switch (t) {
    case GWR_UINT4: *lo = 0, *hi = 15; return 1;
    case GWR_INT4: *lo = -8, *hi = 7; return 1;
    case GWR_UINT2: *lo = 0, *hi = 3; return 1;
    case GWR_INT2: *lo = -2, *hi = 1; return 1;
    default: return 0;
    }
}

/* A zero point's element q as a double (exact: the float8 / float4 ones
 * by their value). */
static double zp_at(const gwr_value *zp, int64_t q) {
    if (!zp) return 0;
    return gwr_small_is_float(zp->dtype) ? gwr_v_get_f64(zp, q) : (double)gwr_v_get_i64(zp, q);
}

/* QuantizeLinear into float8 / float4: x / y_scale (in the scale's
 * precision) plus the zero point, cast as Cast casts (round to nearest
 * even; `saturate` as the attribute says). */
static gwr_status quantize_small_float(gwr_kctx *k, const gwr_value *x, const gwr_value *scale, const gwr_value *zp,
                                       const qmap *m, int wide, gwr_value *y) {
    int sat = gwr_k_int(k, "saturate", 1) != 0, bits = gwr_dtype_bits(y->dtype);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t q = qindex(m, i);
        double s = gwr_ku_get(scale, q), z = zp_at(zp, q);
        double r = wide ? gwr_ku_get(x, i) / s + z : (double)((float)gwr_ku_get(x, i) / (float)s + (float)z);
        gwr_packed_set(y->data, bits, i, gwr_small_encode(y->dtype, r, sat, GWR_E8M0_UP));
    }
    return GWR_OK;
}

static gwr_status k_quantize(gwr_kctx *k) {
    const gwr_value *x = k->nin > 0 ? k->in[0] : NULL, *scale = k->nin > 1 ? k->in[1] : NULL,
                    *zp = k->nin > 2 ? k->in[2] : NULL;
    if (!x || !scale) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "needs x and y_scale");
    if (!gwr_ku_is_float(x->dtype) && x->dtype != GWR_INT32)
        return gwr_k_fail(k, GWR_ERR_TYPE, "x must be float or int32, not %s", gwr_dtype_name(x->dtype));
    if (!gwr_ku_is_float(scale->dtype)) return gwr_k_fail(k, GWR_ERR_TYPE, "y_scale must be float, not %s", gwr_dtype_name(scale->dtype));
    int64_t odt = gwr_k_int(k, "output_dtype", 0);
    if (zp && odt && odt != zp->dtype)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "output_dtype %lld is not y_zero_point's %s", (long long)odt, gwr_dtype_name(zp->dtype));
    gwr_dtype ot = zp ? zp->dtype : odt ? (gwr_dtype)odt : GWR_UINT8;
    double lo = 0, hi = 0;
    int small_float = gwr_small_is_float(ot) && ot != GWR_FLOAT8E8M0;
    if (!small_float && !small_qrange(ot, &lo, &hi) && (!gwr_ku_qrange(ot, &lo, &hi) || ot == GWR_INT32))
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "quantizing to %s is not supported", gwr_dtype_name(ot));
    qmap m;
    if (qparams(k, x, scale, zp, &m)) return GWR_ERR_INVALID_ARG;
    gwr_value *y = gwr_k_out(k, 0, ot, x->rank, x->dims);
    if (!y) return GWR_ERR_NOMEM;
    if (gwr_small_is_small(ot) && y->nbytes) memset(y->data, 0, y->nbytes); /* packed: the padding bits */
    /* x / y_scale in float32 (the scales' type in the spec; float64 when
     * x or the scale is float64), rounded half to even, plus the zero point,
     * saturated. */
    int wide = x->dtype == GWR_FLOAT64 || scale->dtype == GWR_FLOAT64;
    if (small_float) return quantize_small_float(k, x, scale, zp, &m, wide, y);
    if (x->dtype == GWR_FLOAT32 && scale->dtype == GWR_FLOAT32 && m.kind != 2 && !gwr_small_is_small(ot)) {
        /* runs of elements sharing a scale: all of x, or `inner` per axis index */
        int64_t run = m.kind == 0 ? x->numel : m.inner, esz = gwr_dtype_bits(ot) / 8;
        for (int64_t i = 0; i < x->numel; i += run) {
            int64_t q = qindex(&m, i);
            quant_run_f32((const float *)x->data + i, run, ((const float *)scale->data)[q], zp ? (double)gwr_v_get_i64(zp, q) : 0, lo,
                          hi, ot, (char *)y->data + i * esz);
        }
        return GWR_OK;
    }
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t q = qindex(&m, i);
        double s = gwr_ku_get(scale, q), z = zp ? (double)gwr_v_get_i64(zp, q) : 0;
        double r = wide ? gwr_ku_get(x, i) / s : (double)((float)gwr_ku_get(x, i) / (float)s);
        gwr_v_set_f64(y, i, gwr_ku_qround(r, z, lo, hi));
    }
    return GWR_OK;
}

/* n elements of an 8 / 16-bit x from element off, minus z, times s in
 * float32, into y. */
static void dequant_run_f32(const gwr_value *x, int64_t off, int64_t n, double z, float s, float *y) {
    switch (x->dtype) {
    case GWR_UINT8:
        for (int64_t i = 0; i < n; i++) y[i] = (float)(((const uint8_t *)x->data)[off + i] - z) * s;
        break;
    case GWR_INT8:
        for (int64_t i = 0; i < n; i++) y[i] = (float)(((const int8_t *)x->data)[off + i] - z) * s;
        break;
    case GWR_UINT16:
        for (int64_t i = 0; i < n; i++) y[i] = (float)(((const uint16_t *)x->data)[off + i] - z) * s;
        break;
    default:
        for (int64_t i = 0; i < n; i++) y[i] = (float)(((const int16_t *)x->data)[off + i] - z) * s;
        break;
    }
}

static gwr_status k_dequantize(gwr_kctx *k) {
    const gwr_value *x = k->nin > 0 ? k->in[0] : NULL, *scale = k->nin > 1 ? k->in[1] : NULL,
                    *zp = k->nin > 2 ? k->in[2] : NULL;
    double lo, hi;
    if (!x || !scale) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "needs x and x_scale");
    int small = gwr_small_is_small(x->dtype) && x->dtype != GWR_FLOAT8E8M0;
    if (!small && !gwr_ku_qrange(x->dtype, &lo, &hi))
        return gwr_k_fail(k, GWR_ERR_TYPE, "x must be a 2, 4, 8, 16 or 32-bit integer, a float8 or float4e2m1, not %s",
                          gwr_dtype_name(x->dtype));
    if (!gwr_ku_is_float(scale->dtype)) return gwr_k_fail(k, GWR_ERR_TYPE, "x_scale must be float");
    if (zp && zp->dtype != x->dtype) return gwr_k_fail(k, GWR_ERR_TYPE, "x_zero_point must have x's dtype");
    int64_t odt = gwr_k_int(k, "output_dtype", 0);
    if (odt && (odt < 0 || odt >= GWR_DTYPE_COUNT || !gwr_ku_is_float((gwr_dtype)odt)))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "output_dtype %lld is not float32, float64, float16 or bfloat16", (long long)odt);
    qmap m;
    if (qparams(k, x, scale, zp, &m)) return GWR_ERR_INVALID_ARG;
    gwr_value *y = gwr_k_out(k, 0, odt ? (gwr_dtype)odt : scale->dtype, x->rank, x->dims);
    if (!y) return GWR_ERR_NOMEM;
    /* (x - x_zero_point) exactly (an int32 zero point does not wrap), then
     * times the scale in the output's precision: float32 for float32 (and
     * float16 / bfloat16, rounded once more: exact for 8 and 16-bit x). */
    if (y->dtype == GWR_FLOAT32 && scale->dtype == GWR_FLOAT32 && x->dtype != GWR_INT32 && !small && m.kind != 2) {
        int64_t run = m.kind == 0 ? x->numel : m.inner;
        for (int64_t i = 0; i < x->numel; i += run) {
            int64_t q = qindex(&m, i);
            dequant_run_f32(x, i, run, zp ? (double)gwr_v_get_i64(zp, q) : 0, ((const float *)scale->data)[q], (float *)y->data + i);
        }
        return GWR_OK;
    }
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t q = qindex(&m, i);
        double d = (gwr_small_is_float(x->dtype) ? gwr_v_get_f64(x, i) : (double)gwr_v_get_i64(x, i)) - zp_at(zp, q);
        double s = gwr_ku_get(scale, q);
        gwr_ku_set(y, i, y->dtype == GWR_FLOAT64 ? d * s : (double)((float)d * (float)s));
    }
    return GWR_OK;
}

/* DynamicQuantizeLinear, as the spec writes it, in float32:
 *   y_scale = (max(0, max(x)) - min(0, min(x))) / 255
 *   y_zero_point = round(saturate(0 - min / y_scale))
 *   y = saturate(round(x / y_scale) + y_zero_point)
 * every operation a float32 one (onnxruntime's too; a scale one float step
 * off flips uint8 values that compound over a network). The cases the
 * spec leaves open follow onnxruntime: NaN elements do not count in the
 * range and quantize to 0; a zero range (all zeros, empty, all NaN) has
 * scale 1 and zero point 0; a NaN zero point (an infinite range) is 255.
 * A range past FLT_MAX (max - min overflowing float32, where onnxruntime
 * returns an infinite scale) takes the exact difference: the spec's value. */
#ifdef GWR_VEC8_X86
/* min(x < m ? x : m) and max over 8 lanes at a time: vminps / vmaxps
 * return their second operand when the first is NaN or both are zeros,
 * which is the scalar loop's "NaN compares false, 0 stays +0". */
GWR_AVX2_FN static int64_t minmax_avx2(const float *x, int64_t n, float *mn, float *mx) {
    __m256 lo = _mm256_setzero_ps(), hi = lo;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        lo = _mm256_min_ps(v, lo), hi = _mm256_max_ps(v, hi);
    }
    float l[8], h[8];
    _mm256_storeu_ps(l, lo), _mm256_storeu_ps(h, hi);
    for (int k = 0; k < 8; k++) {
        if (l[k] < *mn) *mn = l[k];
        if (h[k] > *mx) *mx = h[k];
    }
    return i;
}

/* gwr_ku_dql_one on 8 lanes: the same float32 division, rounding through
 * 1.5 * 2^23, + zp, clamp to [0, 255] (vmaxps gives 0 for NaN). */
GWR_AVX2_FN static int64_t dql_avx2(const float *x, int64_t n, float scale, int zp, uint8_t *out) {
    const __m256 s = _mm256_set1_ps(scale), magic = _mm256_set1_ps(0x1.8p23f), lim = _mm256_set1_ps(0x1p22f), z = _mm256_set1_ps((float)zp);
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)), top = _mm256_set1_ps(255.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 q = _mm256_div_ps(_mm256_loadu_ps(x + i), s);
        __m256 r = _mm256_blendv_ps(q, _mm256_sub_ps(_mm256_add_ps(q, magic), magic), _mm256_cmp_ps(_mm256_and_ps(q, absm), lim, _CMP_LT_OQ));
        __m256 v = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(r, z), _mm256_setzero_ps()), top);
        __m256i k = _mm256_cvttps_epi32(v);
        __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(k), _mm256_extracti128_si256(k, 1));
        _mm_storel_epi64((__m128i *)(out + i), _mm_packus_epi16(w, w));
    }
    return i;
}
#endif

void gwr_ku_dql_row(const float *x, int64_t n, float scale, int zp, uint8_t *out) {
    int64_t i = 0;
#ifdef GWR_VEC8_X86
    if (gwr_ku_cnn_avx2()) i = dql_avx2(x, n, scale, zp, out);
#endif
    for (; i < n; i++) out[i] = (uint8_t)gwr_ku_dql_one(x[i], scale, zp);
}

void gwr_ku_dql_params(const float *xd, int64_t n, float *scale_out, int *zp_out) {
    float mn = 0, mx = 0; /* the range always includes 0; NaN compares false */
    int64_t i0 = 0;
#ifdef GWR_VEC8_X86
    if (gwr_ku_cnn_avx2()) i0 = minmax_avx2(xd, n, &mn, &mx);
#endif
    for (int64_t i = i0; i < n; i++) {
        if (xd[i] < mn) mn = xd[i];
        if (xd[i] > mx) mx = xd[i];
    }
    float range = mx - mn, scale;
    if (mx == mn) scale = 1.0f;
    else if (isinf(range) && isfinite(mn) && isfinite(mx)) scale = (float)(((double)mx - (double)mn) / 255.0);
    else scale = range / 255.0f;
    float zf = 0.0f - mn / scale;
    *scale_out = scale;
    *zp_out = isnan(zf) ? 255 : (int)gwr_ku_qround(zf, 0, 0, 255);
}

static gwr_status k_dynamic_quantize(gwr_kctx *k) {
    const gwr_value *x = k->nin > 0 ? k->in[0] : NULL;
    if (!x || x->dtype != GWR_FLOAT32) return gwr_k_fail(k, GWR_ERR_TYPE, "x must be float32");
    const float *xd = x->data;
    float scale;
    int zp;
    gwr_ku_dql_params(xd, x->numel, &scale, &zp);
    gwr_value *y = gwr_k_out(k, 0, GWR_UINT8, x->rank, x->dims), *ys = gwr_k_out(k, 1, GWR_FLOAT32, 0, NULL),
              *yz = gwr_k_out(k, 2, GWR_UINT8, 0, NULL);
    if (!y || !ys || !yz) return GWR_ERR_NOMEM;
    *(float *)ys->data = scale;
    *(uint8_t *)yz->data = (uint8_t)zp;
    uint8_t *yd = y->data;
    gwr_ku_dql_row(xd, x->numel, scale, zp, yd);
    return GWR_OK;
}

const gwr_kernel_entry gwr_kernels_quant[] = {
    GWR_KERNEL(QuantizeLinear, k_quantize),
    GWR_KERNEL(DequantizeLinear, k_dequantize),
    GWR_KERNEL(DynamicQuantizeLinear, k_dynamic_quantize),
    {.fn = NULL},
};
