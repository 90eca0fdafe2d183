/* kernel_util.h - what kernel families share (src/exec/kernels only):
 * dtype tests, element conversion by rows, inputs and attributes read the
 * way several families read them, GEMM over the loaded OpenBLAS, and
 * small algorithms (sorting, copying runs of elements). One copy of each,
 * here and in kernel_util.c, so that a fix lands everywhere; kernel files
 * use each other only through it. Names: gwr_ku_*. The float32 math the
 * vectorized rows inline is in fast_math.h. */
#ifndef GWR_EXEC_KERNEL_UTIL_H
#define GWR_EXEC_KERNEL_UTIL_H

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "exec/exec_internal.h"

/* ---- dtypes -------------------------------------------------------------- */

static inline int gwr_ku_is_half(gwr_dtype t) { return t == GWR_FLOAT16 || t == GWR_BFLOAT16; }
/* float32, float64, float16, bfloat16 */
static inline int gwr_ku_is_float(gwr_dtype t) { return t == GWR_FLOAT32 || t == GWR_FLOAT64 || gwr_ku_is_half(t); }
static inline int gwr_ku_is_sint(gwr_dtype t) {
    return t == GWR_INT8 || t == GWR_INT16 || t == GWR_INT32 || t == GWR_INT64;
}
static inline int gwr_ku_is_uint(gwr_dtype t) {
    return t == GWR_UINT8 || t == GWR_UINT16 || t == GWR_UINT32 || t == GWR_UINT64;
}
static inline int gwr_ku_is_int(gwr_dtype t) { return gwr_ku_is_sint(t) || gwr_ku_is_uint(t); }
/* int8 or uint8, the quantized types */
static inline int gwr_ku_is_q8(gwr_dtype t) { return t == GWR_INT8 || t == GWR_UINT8; }

/* Element i of an int8 / uint8 value. */
static inline double gwr_ku_q8(const gwr_value *v, int64_t i) {
    return v->dtype == GWR_INT8 ? (double)((const int8_t *)v->data)[i] : (double)((const uint8_t *)v->data)[i];
}

/* ---- quantization (docs/conformance.md, "Quantized ops") ----------------- */

/* [lo, hi] of a quantized integer dtype (uint8 / int8 / uint16 / int16 /
 * int32); 0 for any other dtype. */
int gwr_ku_qrange(gwr_dtype t, double *lo, double *hi);

/* saturate(round(q) + zp) into [lo, hi], q rounded half to even. ±inf
 * and out-of-range values saturate; NaN gives lo, as onnxruntime's
 * quantizers do. Every float-to-integer step of the quantizing kernels goes
 * through here, so no NaN, infinity or out-of-range value reaches a C
 * conversion. The rounding adds and subtracts 1.5 * 2^52 (the default
 * rounding mode rounds the sum to an integer, ties to even) instead of
 * calling nearbyint, which saves and restores the floating-point
 * environment per element; |q| >= 2^51 saturates whatever its rounding. */
static inline double gwr_ku_qround(double q, double zp, double lo, double hi) {
    double r = fabs(q) < 0x1p51 ? (q + 0x1.8p52) - 0x1.8p52 : q;
    double v = r + zp;
    return v >= lo ? (v <= hi ? v : hi) : lo;
}

/* DynamicQuantizeLinear's scale and zero point of the n float32 values x
 * (quant.c, where its comment says how) and one element quantized with
 * them: round(x / scale) (float32 division, half to even) + zp saturated
 * to [0, 255]; NaN gives 0. */
void gwr_ku_dql_params(const float *x, int64_t n, float *scale, int *zp);
static inline int gwr_ku_dql_one(float x, float scale, int zp) {
    float q = x / scale;
    /* |q| < 2^22 rounds half to even through 1.5 * 2^23 (the sum lies in
     * [2^23, 2^24), whose float32 step is 1); a larger |q| saturates anyway */
    float r = fabsf(q) < 0x1p22f ? (q + 0x1.8p23f) - 0x1.8p23f : q;
    float v = r + (float)zp;
    return v >= 0.0f ? (v <= 255.0f ? (int)v : 255) : 0;
}

/* gwr_ku_dql_one over n values into out (AVX2 where the CPU has it, the
 * same bits; quant.c). */
void gwr_ku_dql_row(const float *x, int64_t n, float scale, int zp, uint8_t *out);

/* An exact integer sum (|v| < 2^63) wrapped to int32 the way 32-bit
 * two's-complement accumulation wraps: the spec's MatMulInteger /
 * ConvInteger / QLinear* accumulators ("may overflow if and only if in 32
 * bits"). */
static inline int32_t gwr_ku_wrap_i32(double v) {
    uint32_t u = (uint32_t)(uint64_t)(int64_t)v;
    return u <= INT32_MAX ? (int32_t)u : (int32_t)(u - 0x80000000u) - INT32_MAX - 1;
}

/* QLinearConv's / QLinearMatMul's output element: the int32 accumulator
 * times the float32 multiplier a_scale * b_scale / y_scale, in float32 (the
 * scales' type, as onnxruntime computes it), then gwr_ku_qround. */
static inline double gwr_ku_requant(int32_t acc, float mult, double zp, double lo, double hi) {
    return gwr_ku_qround((double)((float)acc * mult), zp, lo, hi);
}
/* The same for an 8-bit y (zp, lo, hi within [-128, 255]), all in float32:
 * |q| < 2^22 rounds half to even through 1.5 * 2^23 exactly as the double
 * path does, a larger |q| saturates either way, NaN gives lo. */
static inline int gwr_ku_requant8(int32_t acc, float mult, float zp, float lo, float hi) {
    float q = (float)acc * mult;
    float r = fabsf(q) < 0x1p22f ? (q + 0x1.8p23f) - 0x1.8p23f : q;
    float v = r + zp;
    return (int)(v >= lo ? (v <= hi ? v : hi) : lo);
}

/* Element i as double / set from a double, float32 without a call (any
 * numeric dtype; gwr_v_get_f64 / gwr_v_set_f64 for the others). */
static inline double gwr_ku_get(const gwr_value *v, int64_t i) {
    return v->dtype == GWR_FLOAT32 ? (double)((const float *)v->data)[i] : gwr_v_get_f64(v, i);
}
static inline void gwr_ku_set(gwr_value *v, int64_t i, double x) {
    if (v->dtype == GWR_FLOAT32) ((float *)v->data)[i] = (float)x;
    else gwr_v_set_f64(v, i, x);
}

/* Size of an element in bytes (0 for STRING); -1 after gwr_k_fail for a
 * dtype whose elements are not whole bytes. */
int64_t gwr_ku_elem_size(gwr_kctx *k, gwr_dtype dt);

/* ---- conversion by rows -------------------------------------------------- */

/* n float16 elements to float32 and back with the F16C instructions (the
 * portable functions' bits): 1 when done, 0 when the CPU lacks them. */
int gwr_ku_f16_to_f32_fast(const uint16_t *s, float *d, int64_t n);
int gwr_ku_f32_to_f16_fast(const float *s, uint16_t *d, int64_t n);
/* n float16 / bfloat16 (type t) elements, stride apart, to float32 and back
 * (float16 in rows: F16C where the CPU has it). */
void gwr_ku_half_to_f32(gwr_dtype t, const uint16_t *h, int64_t stride, float *f, int64_t n);
void gwr_ku_f32_to_half(gwr_dtype t, const float *f, uint16_t *h, int64_t n);
/* A malloc'd float32 copy of a float32, float16, bfloat16, int8 or uint8
 * value (exact); NULL when out of memory. */
float *gwr_ku_widen(const gwr_value *v);
/* f (v->numel values) into v: float16 / bfloat16 rounded to nearest even,
 * int8 / uint8 saturated (NaN: 0), float32 copied. */
void gwr_ku_narrow(const float *f, gwr_value *v);
/* x rounded to float32, float16 or bfloat16 (through float32) when t is one
 * of them; other types: x. */
double gwr_ku_round(gwr_dtype t, double x);
/* n elements of v from element off as doubles, and back (any numeric
 * dtype; float32, float64, int32 and int64 without a call per element). */
void gwr_ku_load_f64(const gwr_value *v, int64_t off, int64_t n, double *dst);
void gwr_ku_store_f64(gwr_value *v, int64_t off, int64_t n, const double *src);

/* ---- inputs and attributes ----------------------------------------------- */

/* Input i, or NULL for an absent one. */
static inline const gwr_value *gwr_ku_opt(const gwr_kctx *k, int i) { return i < k->nin ? k->in[i] : NULL; }
/* Input i; NULL after gwr_k_fail ("input 2 is missing", or with the
 * input's name "input 2 (B) is missing") when absent. */
const gwr_value *gwr_ku_need(gwr_kctx *k, int i);
const gwr_value *gwr_ku_need_named(gwr_kctx *k, int i, const char *name);
/* gwr_ku_need_named, and a floating-point dtype ("input 0 (X) is int64,
 * not a floating-point tensor" otherwise). */
const gwr_value *gwr_ku_need_float(gwr_kctx *k, int i, const char *name);

/* Marks axes[0..n) (negative ones count from the end) in mask[rank],
 * writing each normalized into out[] when out is not NULL;
 * GWR_ERR_INVALID_ARG after gwr_k_fail when one is out of range or
 * repeated. */
gwr_status gwr_ku_axes_mask(gwr_kctx *k, const int64_t *axes, int64_t n, int rank, uint8_t *mask, int *out);

/* An INTS attribute of exactly `want` values, each in [lo, hi]: 1 and *v
 * set, 0 when absent, -1 after gwr_k_fail. */
int gwr_ku_attr_list(gwr_kctx *k, const char *name, int64_t want, int64_t lo, int64_t hi, const int64_t **v);

/* The auto_pad attribute of convolutions and pools; -1 after gwr_k_fail. */
enum { GWR_KU_PAD_NOTSET, GWR_KU_PAD_SAME_UPPER, GWR_KU_PAD_SAME_LOWER, GWR_KU_PAD_VALID };
int gwr_ku_auto_pad(gwr_kctx *k);

/* ---- integer arithmetic -------------------------------------------------- */

static inline int64_t gwr_ku_floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    if (a % b != 0 && (a < 0) != (b < 0)) q--;
    return q;
}
static inline int64_t gwr_ku_ceildiv(int64_t a, int64_t b) { return -gwr_ku_floordiv(-a, b); }
/* Does v fit a BLAS int dimension? */
static inline int gwr_ku_fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }
/* a * b, or -1 when either is negative or the product passes max. */
static inline int64_t gwr_ku_mul_max(int64_t a, int64_t b, int64_t max) {
    if (a < 0 || b < 0 || (a && b > max / a)) return -1;
    return a * b;
}

/* A window over nsp spatial dims, held as 3-D (leading dims of size 1),
 * so that one loop nest serves 1-D, 2-D and 3-D convolutions and pools. */
#define GWR_KU_MAXSP 3
typedef struct gwr_ku_window {
    int nsp;
    int64_t in[GWR_KU_MAXSP], out[GWR_KU_MAXSP], k[GWR_KU_MAXSP], s[GWR_KU_MAXSP], d[GWR_KU_MAXSP],
        pb[GWR_KU_MAXSP], pe[GWR_KU_MAXSP];
} gwr_ku_window;

/* g for nsp spatial dims: every dim 1, no pads. */
void gwr_ku_window_init(gwr_ku_window *g, int nsp);
/* The strides, dilations (each in [1, max]) and pads ([0, max])
 * attributes, where present, into g's last nsp dims; GWR_ERR_INVALID_ARG
 * after gwr_k_fail. */
gwr_status gwr_ku_window_attrs(gwr_kctx *k, gwr_ku_window *g, int64_t max);
/* g->out from g->in (set) and the window, and the pads that auto_pad
 * implies; with ceil_mode (pools), a last partial window counts unless it
 * starts in the end padding. */
gwr_status gwr_ku_window_out(gwr_kctx *k, gwr_ku_window *g, int autopad, int ceil_mode);

/* Outputs o in [0, n) whose read o*s + start lands in [0, in): [*lo, *hi). */
static inline void gwr_ku_valid_range(int64_t n, int64_t s, int64_t start, int64_t in, int64_t *lo, int64_t *hi) {
    int64_t a = gwr_ku_ceildiv(-start, s), b = gwr_ku_ceildiv(in - start, s);
    if (a < 0) a = 0;
    if (b > n) b = n;
    if (b < a) b = a;
    *lo = a, *hi = b;
}

/* ---- copies and scratch -------------------------------------------------- */

gwr_status gwr_ku_copy_strings(gwr_kctx *k, gwr_value *o, int64_t oi, const gwr_value *v, int64_t vi, int64_t n);

/* Copies n elements of v from vi to o at oi (esz bytes each; 0: strings). */
static inline gwr_status gwr_ku_copy_run(gwr_kctx *k, gwr_value *o, int64_t oi, const gwr_value *v, int64_t vi,
                                         int64_t n, int64_t esz) {
    if (n <= 0) return GWR_OK;
    if (!esz) return gwr_ku_copy_strings(k, o, oi, v, vi, n);
    char *d = (char *)o->data + oi * esz;
    const char *s = (const char *)v->data + vi * esz;
    switch (n * esz) { /* single elements: no memcpy call */
    case 4: memcpy(d, s, 4); break;
    case 8: memcpy(d, s, 8); break;
    default: memcpy(d, s, (size_t)(n * esz)); break;
    }
    return GWR_OK;
}

/* n elements of size sz from malloc (at least one byte); NULL after
 * gwr_k_fail(NOMEM). */
void *gwr_ku_scratch(gwr_kctx *k, int64_t n, size_t sz);

/* ---- sorting ------------------------------------------------------------- */

/* A stable merge sort of n int64 keys by cmp(ctx, a, b) (< 0: a first);
 * tmp holds n keys. */
typedef int (*gwr_ku_cmp_fn)(const void *ctx, int64_t a, int64_t b);
void gwr_ku_merge_sort(int64_t *a, int64_t *tmp, int64_t n, gwr_ku_cmp_fn cmp, const void *ctx);
/* Byte strings in memcmp order, a prefix first. */
int gwr_ku_cmp_bytes(const gwr_bytes *a, const gwr_bytes *b);

/* ---- GEMM (OpenBLAS, loaded: kernels flagged GWR_KF_BLAS) ---------------- */

/* C (M x N, row-major, rows ldc apart) = alpha A' B' + beta C, where A' is
 * A (M x K) or, with ta, A^T, and B' likewise. K = 0 is handled (C = beta
 * C: BLAS rejects lda = 0). */
/* The sum of (x[j] - m)^2 over a float32 row, in sixteen-float vectors
 * (norm.c: LayerNormalization's and SkipLayerNormalization's second pass;
 * differs from a serial sum by reassociation only). */
float gwr_ku_row_sqdev_f32(const float *x, int64_t n, float m);

void gwr_ku_sgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                  float beta, float *C, int ldc);
void gwr_ku_dgemm(int ta, int tb, int M, int N, int K, double alpha, const double *A, int lda, const double *B, int ldb,
                  double beta, double *C, int ldc);

/* ---- GEMM layers' prepared B (gemm_prep.c) ---------------------------------- */

/* The prepare hook of MatMul, Gemm, FusedGemm and FusedMatMul (see
 * gwr_kprepare_fn): a constant B as float32 [K, N], op(B) of the layer,
 * where that saves the run work (a float16 B widened, a transposed one
 * laid out for sgemm), and a float32 B packed for sgemm.c (gemm_prep.c). */
struct gwr_sgemm_pack;
typedef struct gwr_mm_prep {
    float *b;          /* [K, N] row-major; NULL: B is read in place */
    int64_t K, N;
    gwr_dtype dtype;   /* B's own */
    struct gwr_sgemm_pack *pk; /* op(B) packed for sgemm.c (float32 layers); NULL: none */
} gwr_mm_prep;

gwr_status gwr_ku_mm_prepare(gwr_kctx *k, void **state);
void gwr_ku_mm_prep_free(void *state);
/* k's prepared B, when it has one (pp->b) and it is of b (B's value this run). */
const gwr_mm_prep *gwr_ku_mm_prep(const gwr_kctx *k, const gwr_value *b);
/* C (M x N, rows ldc apart) = alpha op(A) op(B) + beta C over k's packed B
 * when it has one of b: 0 when done, -1 when the caller is to multiply
 * (no packed B, or out of scratch). */
int gwr_ku_mm_packed(const gwr_kctx *k, const gwr_value *b, int ta, int M, const float *A, int lda, float alpha, float beta, float *C,
                     int ldc);

/* ---- kernels other kernels extend ----------------------------------------- */

/* The Conv kernel (conv.c) and the Gemm kernel (linalg.c), whole: inputs,
 * attributes and output 0 of k as Conv's and Gemm's. com.microsoft's
 * FusedConv and FusedGemm (fused_cnn.c) run them, then their activation,
 * so that a fused layer computes what the unfused pair computes. */
gwr_status gwr_ku_conv_kernel(gwr_kctx *k);
gwr_status gwr_ku_gemm_kernel(gwr_kctx *k);

/* ONNX Attention (opset 23 to 25) in double, every form and output
 * (attention.c): the reference that attention_cache.c's float32 kernel
 * runs what it does not cover with, and that its tests compare against.
 * Its inputs must be dense (no strided KV-cache view). */
gwr_status gwr_ku_attention_ref(gwr_kctx *k);

/* ---- the convolution epilogue and its algorithms --------------------------- */

/* An activation as FusedConv / FusedGemm name it (fused_cnn.c), with its
 * parameters: LeakyRelu alpha; Clip min, max; HardSigmoid alpha, beta;
 * HardSwish (FusedConv's "HardSwish", a gwr extension) alpha 1/6, beta
 * 1/2; QuickGelu x * sigmoid(alpha x) (FusedConv's "QuickGelu", a gwr
 * extension: SiLU at alpha 1) alpha. */
typedef enum {
    GWR_KU_ACT_NONE, GWR_KU_ACT_RELU, GWR_KU_ACT_TANH, GWR_KU_ACT_SIGMOID, GWR_KU_ACT_LEAKY,
    GWR_KU_ACT_CLIP, GWR_KU_ACT_HSIG, GWR_KU_ACT_HSWISH, GWR_KU_ACT_QGELU
} gwr_ku_act_kind;
typedef struct gwr_ku_act {
    gwr_ku_act_kind kind;
    float p[2];
} gwr_ku_act;

/* y[0..n) = act((y + *b) + z) in place (b, z may be NULL), with the
 * expressions of the Add and activation kernels, so that a fused layer
 * gives the bits of the separate layers (act_rows.c). */
void gwr_ku_act_f32(const gwr_ku_act *a, float *y, const float *b, const float *z, int64_t n);
void gwr_ku_act_f64(const gwr_ku_act *a, double *y, const double *b, const double *z, int64_t n);

/* The Conv kernel with FusedConv's epilogue: Y = act(Conv(X, W, B) + Z),
 * applied to each output tile while it is in cache (a NULL act: none; a
 * NULL z: no sum). Z, when given, is checked to have Y's dtype and shape.
 * float32 and float64 apply all of it; *done says whether the act and Z
 * were applied (for float16 / bfloat16 they are not: the caller rounds
 * after each step as separate layers would). */
gwr_status gwr_ku_conv_epilogue_kernel(gwr_kctx *k, const gwr_ku_act *act, const gwr_value *z, int *done);

/* Direct depthwise 2-D convolution of one float32 plane (conv_depthwise.c):
 * y (out[1] x out[2]) = x (in[1] x in[2]) correlated with the k[1] x k[2]
 * window w, with g's strides and pads, no bias. gwr_ku_dw_supports says
 * whether g is one it runs (3x3 or 5x5, strides 1 or 2 equal in both
 * dims, dilation 1, any pads, 2-D). The plane is staged into pad, a
 * buffer of gwr_ku_dw_scratch(g) floats zeroed before the first plane
 * (its border stays zero from plane to plane). */
int gwr_ku_dw_supports(const gwr_ku_window *g);
int64_t gwr_ku_dw_scratch(const gwr_ku_window *g);
void gwr_ku_dw_plane_f32(const float *x, const float *w, const gwr_ku_window *g, float *pad, float *y);
/* The same, then y = act(y + *b) on each vector before it is stored (b,
 * act may be NULL), for the activations gwr_ku_dw_epi_supports takes
 * (none, Relu, Clip, HardSwish), with gwr_ku_act_f32's bits. */
int gwr_ku_dw_epi_supports(const gwr_ku_act *a);
void gwr_ku_dw_plane_epi_f32(const float *x, const float *w, const gwr_ku_window *g, const float *b, const gwr_ku_act *act, float *pad,
                             float *y);
/* The same on nc <= 8 planes at once, vectors across the planes
 * (small planes, where a row fills little of a vector): y[c] from x[c]
 * and the window w[c], b[c] (b may be NULL), the same bits as the plane
 * kernel. gwr_ku_dwc_wanted: g's planes are small enough that it is the
 * faster (gwr_ku_dwc_set_max_ow moves the bound, for tests). pad: a
 * buffer of gwr_ku_dwc_scratch(g) floats zeroed before the first block. */
int gwr_ku_dwc_wanted(const gwr_ku_window *g);
void gwr_ku_dwc_set_max_ow(int64_t w);
int64_t gwr_ku_dwc_scratch(const gwr_ku_window *g);
void gwr_ku_dwc_block_f32(const float *const *x, const float *const *w, int nc, const gwr_ku_window *g, const float *b, const gwr_ku_act *act,
                          float *pad, float *const *y);

/* Winograd F(2x2, 3x3) of float32 3x3 stride-1 group-1 convolutions
 * (conv_winograd.c). gwr_ku_wino_supports: g (2-D, 3x3, stride 1,
 * dilation 1, any pads) with C inputs and M outputs is one it runs faster
 * than im2col. gwr_ku_wino_weights: U, 16 matrices [M, C], from w [M, C,
 * 3, 3]. gwr_ku_wino_scratch: the floats of scratch one image needs on
 * `threads` threads (gwr_tpool_size of k's pool), and *block, the tiles
 * per block. gwr_ku_wino_image_f32: y (M planes of
 * g->out) from one image x (C planes of g->in), no bias (its products
 * on k's workers). */
int gwr_ku_wino_supports(const gwr_ku_window *g, int64_t C, int64_t M);
void gwr_ku_wino_weights(const float *w, int64_t M, int64_t C, float *U);
int64_t gwr_ku_wino_scratch(const gwr_ku_window *g, int64_t C, int64_t M, int threads, int64_t *block);
void gwr_ku_wino_image_f32(const float *x, const float *U, const gwr_kctx *k, const gwr_ku_window *g, int64_t C, int64_t M, float *scratch,
                           int64_t block, float *y);
/* The prepare hook of Conv and FusedConv (see gwr_kprepare_fn): a constant
 * float32 W of a layer Winograd may run, transformed once; or, of a layer
 * whose outputs are few positions (conv.c, narrow_gemm), W^T packed for
 * sgemm.c. */
typedef struct gwr_ku_conv_prep {
    int64_t M, C;
    float *U; /* 16 x [M, C] */
    struct gwr_sgemm_pack *wt; /* W^T [C * window, M] packed, or NULL */
} gwr_ku_conv_prep;
gwr_status gwr_ku_conv_prepare(gwr_kctx *k, void **state);
/* Whether k (a Conv or FusedConv) has group 1 and few output positions
 * (conv_winograd.c, beside the planning that packs its W^T then), and
 * whether N output positions are that few (conv.c's product picks the
 * transposed form by it). */
int gwr_ku_conv_narrow(const gwr_kctx *k);
int gwr_ku_conv_narrow_n(int64_t N);
void gwr_ku_conv_prep_free(void *state);

#endif
