/* activation.c - ONNX's activation functions: Relu and its relatives
 * (LeakyRelu Elu Selu Celu ThresholdedRelu PRelu), the smooth ones
 * (Sigmoid HardSigmoid HardSwish Softplus Softsign Gelu Mish Swish), SwiGLU,
 * Shrink and Dropout.
 *
 * Each function is a row over float and double, generated from one
 * expression with its attributes (A, B, C) hoisted out of the loop;
 * float16 and bfloat16 go through the float row in stack-sized chunks,
 * the integer types Relu, Shrink and PRelu allow through typed rows or
 * double. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec_internal.h"

/* GCC's -O2 vectorizes almost no loop (its "very cheap" cost model); the
 * row loops here are what this file is for. */
/* fp-contract=off (and clang's pragma): the build contracts the exec room's
 * a * b + c into FMAs (CMakeLists.txt), but the cloned Sigmoid here must
 * give the bits of act_rows.c's, which keeps ISO C's evaluation. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "no-trapping-math", "fp-contract=off")
#endif
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* after the pragma: their inline functions take its options */
#include "exec/kernels/fast_math.h"
#include "exec/kernels/kernel_util.h"

#define NDT 17 /* dtype codes handled here: up to GWR_BFLOAT16 */
#define CHUNK 256

/* ---- rows ------------------------------------------------------------------ */

/* p: the op's parameters (attributes), read once per row. */
typedef void (*act_fn)(const void *x, void *o, int64_t n, const double *p);

#define ACT(fname, T, EXPR) ACT_WITH(, fname, T, EXPR)
#define ACT_WITH(attr, fname, T, EXPR)                                     \
    attr static void fname(const void *px, void *po, int64_t n, const double *p) { \
        const T *restrict a = px;                                          \
        T *restrict o = po;                                                \
        const T A = (T)p[0], B = (T)p[1], C = (T)p[2];                     \
        (void)A, (void)B, (void)C;                                         \
        for (int64_t i = 0; i < n; i++) {                                  \
            T x = a[i];                                                    \
            o[i] = (T)(EXPR);                                              \
        }                                                                  \
    }
/* one expression for float (E32) and double (E64) */
#define ACT_F(op, E32, E64) ACT(op##_f32, float, E32) ACT(op##_f64, double, E64)
/* the same, float compiled per CPU (fast_math.h): the costly expressions */
#define ACT_FV(op, E32, E64) ACT_WITH(GWR_VEC_CLONES, op##_f32, float, E32) ACT(op##_f64, double, E64)

ACT_F(relu, x < 0 ? 0.0f : x, x < 0 ? 0.0 : x)
ACT(relu_i8, int8_t, x < 0 ? 0 : x)
ACT(relu_i16, int16_t, x < 0 ? 0 : x)
ACT(relu_i32, int32_t, x < 0 ? 0 : x)
ACT(relu_i64, int64_t, x < 0 ? 0 : x)
ACT_F(leaky, x < 0 ? A * x : x, x < 0 ? A * x : x)
ACT_F(elu, x < 0 ? A * expm1f(x) : x, x < 0 ? A * expm1(x) : x)
/* Selu: A alpha, B gamma */
ACT_F(selu, x <= 0 ? B * (A * expf(x) - A) : B * x, x <= 0 ? B * (A * exp(x) - A) : B * x)
/* Celu: A alpha */
ACT_F(celu, (x > 0 ? x : 0.0f) + fminf(0.0f, A * expm1f(x / A)), (x > 0 ? x : 0.0) + fmin(0.0, A * expm1(x / A)))
ACT_F(thrrelu, x > A ? x : 0.0f, x > A ? x : 0.0)
ACT_FV(sigmoid, 1.0f / (1.0f + fast_expf(-x)), 1.0 / (1.0 + exp(-x)))
/* HardSigmoid: A alpha, B beta (HardSwish: 1/6, 1/2) */
ACT_F(hsig, fast_clamp01f(A * x + B), fast_clamp01(A * x + B))
ACT_F(hswish, x *fast_clamp01f(A * x + B), x *fast_clamp01(A * x + B))
/* log(1 + e^x) without overflow */
ACT_F(softplus, x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x)), x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)))
ACT_F(softsign, x / (1.0f + fabsf(x)), x / (1.0 + fabs(x)))
ACT_FV(gelu, fast_gelu(x), x < 0 ? 0.5 * x * erfc(-x * 0.70710678118654752440) : 0.5 * x * (1.0 + erf(x * 0.70710678118654752440)))
/* the tanh approximation, 0.5 x (1 + tanh u) = x / (1 + e^-2u) with
 * u = sqrt(2/pi) (x + 0.044715 x^3) */
ACT_FV(gelu_tanh, x / (1.0f + fast_expf(-1.5957691216057308f * (x + 0.044715f * x * x * x))),
      x / (1.0 + exp(-1.5957691216057307118 * (x + 0.044715 * x * x * x))))
ACT_F(mish, x *tanhf(x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x))),
      x *tanh(x > 0 ? x + log1p(exp(-x)) : log1p(exp(x))))
/* Swish (SwiGLU's gate): x sigmoid(A x), A alpha */
ACT_FV(swish, x / (1.0f + fast_expf(-A * x)), x / (1.0 + exp(-A * x)))
/* Shrink: A lambd, B bias */
ACT_F(shrink, x < -A ? x + B : x > A ? x - B : 0.0f, x < -A ? x + B : x > A ? x - B : 0.0)

#define A_F(op) [GWR_FLOAT32] = op##_f32, [GWR_FLOAT64] = op##_f64

typedef struct act {
    act_fn f[NDT];
    int ints_via_f64; /* integer inputs through the double row */
} act;

static const act a_relu = {{A_F(relu), [GWR_INT8] = relu_i8, [GWR_INT16] = relu_i16, [GWR_INT32] = relu_i32,
                            [GWR_INT64] = relu_i64},
                           0};
static const act a_leaky = {{A_F(leaky)}, 0};
static const act a_elu = {{A_F(elu)}, 0};
static const act a_selu = {{A_F(selu)}, 0};
static const act a_celu = {{A_F(celu)}, 0};
static const act a_thrrelu = {{A_F(thrrelu)}, 0};
static const act a_sigmoid = {{A_F(sigmoid)}, 0};
static const act a_hsig = {{A_F(hsig)}, 0};
static const act a_hswish = {{A_F(hswish)}, 0};
static const act a_softplus = {{A_F(softplus)}, 0};
static const act a_softsign = {{A_F(softsign)}, 0};
static const act a_gelu = {{A_F(gelu)}, 0};
static const act a_gelu_tanh = {{A_F(gelu_tanh)}, 0};
static const act a_mish = {{A_F(mish)}, 0};
static const act a_shrink = {{A_F(shrink)}, 1};
static const act a_swish = {{A_F(swish)}, 0};

/* ---- running --------------------------------------------------------------- */

static gwr_status check_unary(gwr_kctx *k) {
    if (k->nin != 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "takes 1 input, %d given", k->nin);
    if (!k->in[0]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input 0 is missing");
    if (k->nout < 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "has no output");
    return GWR_OK;
}

/* An activation's loop over blocks of CHUNK elements. */
typedef struct act_loop {
    act_fn f;
    int via; /* 1: halves through float; 2: integers through double */
    double p[3];
    const gwr_value *x;
    gwr_value *o;
} act_loop;

static void act_range(void *ctx, int64_t b0, int64_t b1) {
    const act_loop *l = ctx;
    const gwr_value *x = l->x;
    gwr_value *o = l->o;
    gwr_dtype t = x->dtype;
    const double *p = l->p;
    int64_t n = b1 * CHUNK < x->numel ? b1 * CHUNK : x->numel;
    if (!l->via && o->data == x->data) {
        /* in place: the rows' pointers are restrict, so a chunk at a time
         * through the stack (L1), then back */
        size_t es = (size_t)gwr_dtype_bits(t) / 8;
        double res[CHUNK];
        for (int64_t s = b0 * CHUNK; s < n; s += CHUNK) {
            int64_t m = n - s < CHUNK ? n - s : CHUNK;
            l->f((char *)o->data + (size_t)s * es, res, m, p);
            memcpy((char *)o->data + (size_t)s * es, res, (size_t)m * es);
        }
    } else if (!l->via) {
        size_t es = (size_t)gwr_dtype_bits(t) / 8;
        int64_t s = b0 * CHUNK;
        l->f((const char *)x->data + (size_t)s * es, (char *)o->data + (size_t)s * es, n - s, p);
    } else if (l->via == 1) {
        float buf[CHUNK], res[CHUNK];
        for (int64_t s = b0 * CHUNK; s < n; s += CHUNK) {
            int64_t m = n - s < CHUNK ? n - s : CHUNK;
            gwr_ku_half_to_f32(t, (const uint16_t *)x->data + s, 1, buf, m);
            l->f(buf, res, m, p);
            gwr_ku_f32_to_half(t, res, (uint16_t *)o->data + s, m);
        }
    } else {
        double buf[CHUNK], res[CHUNK];
        for (int64_t s = b0 * CHUNK; s < n; s += CHUNK) {
            int64_t m = n - s < CHUNK ? n - s : CHUNK;
            for (int64_t i = 0; i < m; i++) buf[i] = gwr_v_get_f64(x, s + i);
            l->f(buf, res, m, p);
            for (int64_t i = 0; i < m; i++) gwr_v_set_f64(o, s + i, res[i]);
        }
    }
}

static gwr_status run_act(gwr_kctx *k, const act *op, double a, double b, double c) {
    gwr_status rc = check_unary(k);
    if (rc) return rc;
    const gwr_value *x = k->in[0];
    gwr_dtype t = x->dtype;
    act_fn f = t > 0 && t < NDT ? op->f[t] : NULL;
    int via = 0; /* 1: halves through float; 2: integers through double */
    if (!f && gwr_ku_is_half(t)) f = op->f[GWR_FLOAT32], via = 1;
    if (!f && gwr_ku_is_int(t) && op->ints_via_f64) f = op->f[GWR_FLOAT64], via = 2;
    if (!f) return gwr_k_fail(k, GWR_ERR_TYPE, "input 0: dtype %s is not supported", gwr_dtype_name(t));
    gwr_value *o = gwr_k_out_over(k, 0, 0, t, x->rank, x->dims);
    if (!o) return GWR_ERR_NOMEM;
    act_loop l = {f, via, {a, b, c}, x, o};
    gwr_k_parallel(k, (x->numel + CHUNK - 1) / CHUNK, gwr_par_grain(CHUNK), act_range, &l);
    return GWR_OK;
}

static gwr_status k_relu(gwr_kctx *k) { return run_act(k, &a_relu, 0, 0, 0); }
static gwr_status k_leaky_relu(gwr_kctx *k) { return run_act(k, &a_leaky, gwr_k_float(k, "alpha", 0.01f), 0, 0); }
static gwr_status k_elu(gwr_kctx *k) { return run_act(k, &a_elu, gwr_k_float(k, "alpha", 1.0f), 0, 0); }
static gwr_status k_selu(gwr_kctx *k) {
    return run_act(k, &a_selu, gwr_k_float(k, "alpha", 1.67326319217681884765625f),
                   gwr_k_float(k, "gamma", 1.05070102214813232421875f), 0);
}
static gwr_status k_celu(gwr_kctx *k) {
    float alpha = gwr_k_float(k, "alpha", 1.0f);
    if (alpha == 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "alpha must not be 0");
    return run_act(k, &a_celu, alpha, 0, 0);
}
static gwr_status k_thresholded_relu(gwr_kctx *k) {
    return run_act(k, &a_thrrelu, gwr_k_float(k, "alpha", 1.0f), 0, 0);
}
static gwr_status k_sigmoid(gwr_kctx *k) { return run_act(k, &a_sigmoid, 0, 0, 0); }
static gwr_status k_hard_sigmoid(gwr_kctx *k) {
    return run_act(k, &a_hsig, gwr_k_float(k, "alpha", 0.2f), gwr_k_float(k, "beta", 0.5f), 0);
}
static gwr_status k_hard_swish(gwr_kctx *k) { return run_act(k, &a_hswish, 1.0 / 6.0, 0.5, 0); }
static gwr_status k_softplus(gwr_kctx *k) { return run_act(k, &a_softplus, 0, 0, 0); }
static gwr_status k_softsign(gwr_kctx *k) { return run_act(k, &a_softsign, 0, 0, 0); }
static gwr_status k_mish(gwr_kctx *k) { return run_act(k, &a_mish, 0, 0, 0); }
static gwr_status k_shrink(gwr_kctx *k) {
    float lambd = gwr_k_float(k, "lambd", 0.5f);
    if (lambd < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "lambd must not be negative (%g)", (double)lambd);
    return run_act(k, &a_shrink, lambd, gwr_k_float(k, "bias", 0.0f), 0);
}

static gwr_status k_swish(gwr_kctx *k) { return run_act(k, &a_swish, gwr_k_float(k, "alpha", 1.0f), 0, 0); }

/* SwiGLU (opset 28): Y = Swish_alpha(A) * B, A and B of one dtype and one
 * shape (no broadcasting). Float rows as Swish's, halves through float in
 * chunks; the product rounds once to the output type. */
static gwr_status k_swiglu(gwr_kctx *k) {
    if (k->nin != 2 || !k->in[0] || !k->in[1]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "takes inputs A and B");
    const gwr_value *a = k->in[0], *b = k->in[1];
    gwr_dtype t = a->dtype;
    char ta[128], tb[128];
    gwr_value_type_str(a, ta, sizeof ta), gwr_value_type_str(b, tb, sizeof tb);
    if (t != GWR_FLOAT32 && t != GWR_FLOAT64 && !gwr_ku_is_half(t))
        return gwr_k_fail(k, GWR_ERR_TYPE, "A must be float, double, float16 or bfloat16, got %s", ta);
    if (b->dtype != t || b->rank != a->rank || memcmp(a->dims, b->dims, (size_t)a->rank * sizeof *a->dims))
        return gwr_k_fail(k, GWR_ERR_SHAPE, "A %s and B %s must have one dtype and one shape (no broadcasting)", ta, tb);
    double p[3] = {gwr_k_float(k, "alpha", 1.0f), 0, 0};
    gwr_value *o = gwr_k_out(k, 0, t, a->rank, a->dims);
    if (!o) return GWR_ERR_NOMEM;
    if (t == GWR_FLOAT64) {
        const double *pb = b->data;
        double *po = o->data;
        swish_f64(a->data, po, a->numel, p);
        for (int64_t i = 0; i < a->numel; i++) po[i] *= pb[i];
        return GWR_OK;
    }
    float fa[CHUNK], fb[CHUNK], fo[CHUNK];
    for (int64_t s = 0; s < a->numel; s += CHUNK) {
        int64_t m = a->numel - s < CHUNK ? a->numel - s : CHUNK;
        const float *xa = fa, *xb = fb;
        float *xo = t == GWR_FLOAT32 ? (float *)o->data + s : fo;
        if (t == GWR_FLOAT32) {
            xa = (const float *)a->data + s, xb = (const float *)b->data + s;
        } else {
            gwr_ku_half_to_f32(t, (const uint16_t *)a->data + s, 1, fa, m);
            gwr_ku_half_to_f32(t, (const uint16_t *)b->data + s, 1, fb, m);
        }
        swish_f32(xa, xo, m, p);
        for (int64_t i = 0; i < m; i++) xo[i] *= xb[i];
        if (t != GWR_FLOAT32) gwr_ku_f32_to_half(t, fo, (uint16_t *)o->data + s, m);
    }
    return GWR_OK;
}

static gwr_status k_gelu(gwr_kctx *k) {
    const char *ap = gwr_k_string(k, "approximate", "none");
    if (!strcmp(ap, "none")) return run_act(k, &a_gelu, 0, 0, 0);
    if (!strcmp(ap, "tanh")) return run_act(k, &a_gelu_tanh, 0, 0, 0);
    return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "approximate must be 'none' or 'tanh', not '%s'", ap);
}

/* ---- PRelu ----------------------------------------------------------------- */

/* A row of y = x < 0 ? slope * x : x, the slope with stride 0 or 1. */
#define PRELU_ROW(fname, T)                                                                     \
    static void fname(const void *px, const void *ps, int64_t ss, void *po, int64_t n) {         \
        const T *x = px, *s = ps;                                                               \
        T *o = po;                                                                              \
        if (ss == 1)                                                                            \
            for (int64_t i = 0; i < n; i++) o[i] = x[i] < 0 ? (T)(s[i] * x[i]) : x[i];           \
        else if (ss == 0) {                                                                     \
            T a = s[0];                                                                         \
            for (int64_t i = 0; i < n; i++) o[i] = x[i] < 0 ? (T)(a * x[i]) : x[i];              \
        } else                                                                                  \
            for (int64_t i = 0; i < n; i++) o[i] = x[i] < 0 ? (T)(s[i * ss] * x[i]) : x[i];      \
    }
PRELU_ROW(prelu_f32, float)
PRELU_ROW(prelu_f64, double)
/* signed integers: the product wraps, computed unsigned */
#define PRELU_IROW(fname, T, U)                                                                  \
    static void fname(const void *px, const void *ps, int64_t ss, void *po, int64_t n) {          \
        const T *x = px, *s = ps;                                                                \
        T *o = po;                                                                               \
        for (int64_t i = 0; i < n; i++) o[i] = x[i] < 0 ? (T)((U)s[i * ss] * (U)x[i]) : x[i];     \
    }
PRELU_IROW(prelu_i8, int8_t, uint32_t)
PRELU_IROW(prelu_i16, int16_t, uint32_t)
PRELU_IROW(prelu_i32, int32_t, uint32_t)
PRELU_IROW(prelu_i64, int64_t, uint64_t)

/* unsigned values are never negative */
static void prelu_copy(const void *px, const void *ps, int64_t ss, void *po, int64_t n) {
    (void)px, (void)ps, (void)ss, (void)po, (void)n; /* a marker: the kernel copies */
}

typedef void (*prelu_fn)(const void *x, const void *s, int64_t ss, void *o, int64_t n);

static gwr_status k_prelu(gwr_kctx *k) {
    if (k->nin != 2) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "takes 2 inputs, %d given", k->nin);
    if (!k->in[0] || !k->in[1]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %d is missing", k->in[0] ? 1 : 0);
    if (k->nout < 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "has no output");
    const gwr_value *x = k->in[0], *sl = k->in[1];
    gwr_dtype t = x->dtype;
    if (sl->dtype != t)
        return gwr_k_fail(k, GWR_ERR_TYPE, "slope dtype %s differs from input's %s", gwr_dtype_name(sl->dtype),
                          gwr_dtype_name(t));
    prelu_fn f;
    switch (gwr_ku_is_half(t) ? GWR_FLOAT32 : t) {
    case GWR_FLOAT32: f = prelu_f32; break;
    case GWR_FLOAT64: f = prelu_f64; break;
    case GWR_INT8: f = prelu_i8; break;
    case GWR_INT16: f = prelu_i16; break;
    case GWR_INT32: f = prelu_i32; break;
    case GWR_INT64: f = prelu_i64; break;
    case GWR_UINT8: case GWR_UINT16: case GWR_UINT32: case GWR_UINT64: f = prelu_copy; break;
    default: return gwr_k_fail(k, GWR_ERR_TYPE, "input 0: dtype %s is not supported", gwr_dtype_name(t));
    }
    /* the slope broadcasts to X (unidirectionally); a 1-D slope of X's
     * channel count, as opset 6 and older exporters wrote it, applies per
     * channel (axis 1) */
    int64_t sdims[GWR_MAX_RANK] = {0};
    int srank = sl->rank;
    if (srank) memcpy(sdims, sl->dims, (size_t)srank * sizeof *sdims);
    int64_t od[GWR_MAX_RANK];
    int orank;
    int ok = !gwr_broadcast(x->rank, x->dims, srank, sdims, &orank, od) && orank == x->rank &&
             gwr_shape_numel(orank, od) == x->numel;
    if (!ok && srank == 1 && x->rank >= 2 && sdims[0] == x->dims[1]) {
        srank = x->rank - 1;
        for (int d = 1; d < srank; d++) sdims[d] = 1;
        ok = 1;
    }
    if (!ok) {
        char a[128], b[128];
        gwr_value_type_str(x, a, sizeof a), gwr_value_type_str(sl, b, sizeof b);
        return gwr_k_fail(k, GWR_ERR_SHAPE, "slope %s does not broadcast to input %s", b, a);
    }
    gwr_value *o = gwr_k_out(k, 0, t, x->rank, x->dims);
    if (!o) return GWR_ERR_NOMEM;
    if (f == prelu_copy) {
        if (x->nbytes) memcpy(o->data, x->data, x->nbytes);
        return GWR_OK;
    }
    int r = x->rank;
    int64_t st[GWR_MAX_RANK], idx[GWR_MAX_RANK];
    gwr_bcast_strides(srank, sdims, r, x->dims, st);
    int64_t inner = r ? x->dims[r - 1] : 1, rows = inner ? x->numel / inner : 0, ss = r ? st[r - 1] : 0;
    size_t es = (size_t)gwr_dtype_bits(t) / 8;
    memset(idx, 0, sizeof idx);
    int64_t off = 0;
    float fx[CHUNK], fs[CHUNK], fo[CHUNK];
    for (int64_t row = 0; row < rows; row++) {
        const char *xr = (const char *)x->data + (size_t)(row * inner) * es, *sr = (const char *)sl->data + (size_t)off * es;
        char *orow = (char *)o->data + (size_t)(row * inner) * es;
        if (!gwr_ku_is_half(t)) {
            f(xr, sr, ss, orow, inner);
        } else {
            for (int64_t s = 0; s < inner; s += CHUNK) {
                int64_t m = inner - s < CHUNK ? inner - s : CHUNK;
                gwr_ku_half_to_f32(t, (const uint16_t *)xr + s, 1, fx, m);
                if (ss) gwr_ku_half_to_f32(t, (const uint16_t *)sr + s, 1, fs, m);
                else gwr_ku_half_to_f32(t, (const uint16_t *)sr, 1, fs, 1);
                f(fx, fs, ss ? 1 : 0, fo, m);
                gwr_ku_f32_to_half(t, fo, (uint16_t *)orow + s, m);
            }
        }
        for (int d = r - 2; d >= 0; d--) {
            if (++idx[d] < x->dims[d]) {
                off += st[d];
                break;
            }
            idx[d] = 0;
            off -= st[d] * (x->dims[d] - 1);
        }
    }
    return GWR_OK;
}

/* ---- Dropout --------------------------------------------------------------- */

/* MT19937 seeded as NumPy's legacy np.random.seed(int) seeds it, and its
 * doubles as np.random.uniform(0, 1) draws them (53 bits from two words),
 * so that a seeded training-mode Dropout drops what ONNX's reference does. */
typedef struct mt19937 {
    uint32_t s[624];
    int i;
} mt19937;

static void mt_seed(mt19937 *m, uint32_t seed) {
    m->s[0] = seed;
    for (int i = 1; i < 624; i++) m->s[i] = 1812433253u * (m->s[i - 1] ^ (m->s[i - 1] >> 30)) + (uint32_t)i;
    m->i = 624;
}

static uint32_t mt_next(mt19937 *m) {
    if (m->i >= 624) {
        for (int i = 0; i < 624; i++) {
            uint32_t y = (m->s[i] & 0x80000000u) | (m->s[(i + 1) % 624] & 0x7fffffffu);
            m->s[i] = m->s[(i + 397) % 624] ^ (y >> 1) ^ ((y & 1) ? 0x9908b0dfu : 0);
        }
        m->i = 0;
    }
    uint32_t y = m->s[m->i++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    return y ^ (y >> 18);
}

static double mt_double(mt19937 *m) {
    uint32_t a = mt_next(m) >> 5, b = mt_next(m) >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
}

/* Inference (the default, and every opset before 12): the output is the
 * input and the mask all true. Training mode (opset 12's third input) with
 * a ratio > 0 drops each element with probability ratio and scales the
 * rest by 1 / (1 - ratio), drawing as NumPy does from `seed` (0 when
 * absent). */
static gwr_status k_dropout(gwr_kctx *k) {
    if (k->nin < 1 || k->nin > 3) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "takes 1 to 3 inputs, %d given", k->nin);
    if (!k->in[0]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input 0 is missing");
    if (k->nout < 1 || k->nout > 2) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "has 1 or 2 outputs, not %d", k->nout);
    const gwr_value *x = k->in[0];
    gwr_dtype t = x->dtype;
    if (t != GWR_FLOAT32 && t != GWR_FLOAT64 && !gwr_ku_is_half(t))
        return gwr_k_fail(k, GWR_ERR_TYPE, "input 0: dtype %s is not supported", gwr_dtype_name(t));
    double ratio = 0.5;
    int training = 0;
    if (k->opset && k->opset < 12) {
        ratio = gwr_k_float(k, "ratio", 0.5f);
        if (k->nin != 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "takes 1 input before opset 12, %d given", k->nin);
        if (k->opset < 7 && gwr_k_int(k, "is_test", 0) == 0) training = 1;
    } else {
        if (k->nin > 1 && k->in[1]) {
            const gwr_value *r = k->in[1];
            if (r->numel != 1 || (r->dtype != GWR_FLOAT32 && r->dtype != GWR_FLOAT64 && !gwr_ku_is_half(r->dtype)))
                return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "ratio must be a float scalar");
            ratio = gwr_v_get_f64(r, 0);
        }
        if (k->nin > 2 && k->in[2]) {
            const gwr_value *m = k->in[2];
            if (m->numel != 1 || m->dtype != GWR_BOOL)
                return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "training_mode must be a bool scalar");
            training = ((const uint8_t *)m->data)[0] != 0;
        }
    }
    if (!(ratio >= 0 && ratio <= 1)) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "ratio must be in [0, 1], not %g", ratio);
    int want_mask = k->nout > 1 && gwr_k_out_used(k, 1);
    gwr_dtype mt = k->opset && k->opset < 10 ? t : GWR_BOOL;
    gwr_value *mask = NULL;
    if (want_mask && !(mask = gwr_k_out(k, 1, mt, x->rank, x->dims))) return GWR_ERR_NOMEM;
    if (!training || ratio == 0) {
        gwr_k_set_out(k, 0, k->in[0]);
        if (mask && mt == GWR_BOOL) memset(mask->data, 1, (size_t)x->numel);
        else if (mask)
            for (int64_t i = 0; i < x->numel; i++) gwr_v_set_f64(mask, i, 1.0);
        return GWR_OK;
    }
    gwr_value *o = gwr_k_out(k, 0, t, x->rank, x->dims);
    if (!o) return GWR_ERR_NOMEM;
    mt19937 *rng = gwr_malloc(sizeof *rng);
    if (!rng) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    mt_seed(rng, (uint32_t)gwr_k_int(k, "seed", 0));
    double scale = ratio < 1 ? 1.0 / (1.0 - ratio) : 0.0;
    for (int64_t i = 0; i < x->numel; i++) {
        double u = mt_double(rng);
        int keep = u >= ratio;
        gwr_v_set_f64(o, i, keep ? gwr_v_get_f64(x, i) * scale : 0.0);
        if (mask) gwr_v_set_f64(mask, i, keep);
    }
    gwr_free(rng);
    return GWR_OK;
}

const gwr_kernel_entry gwr_kernels_activation[] = {
    GWR_KERNEL(Relu, k_relu),
    GWR_KERNEL(LeakyRelu, k_leaky_relu),
    GWR_KERNEL(Elu, k_elu),
    GWR_KERNEL(Selu, k_selu),
    GWR_KERNEL(Celu, k_celu),
    GWR_KERNEL(ThresholdedRelu, k_thresholded_relu),
    GWR_KERNEL(PRelu, k_prelu),
    GWR_KERNEL(Sigmoid, k_sigmoid),
    GWR_KERNEL(HardSigmoid, k_hard_sigmoid),
    /* ONNX's since opset 14; the optimizer's target gwr fuses it into
     * models of any opset: any opset. */
    GWR_KERNEL(HardSwish, k_hard_swish, .first_opset = 1),
    GWR_KERNEL(Softplus, k_softplus),
    GWR_KERNEL(Softsign, k_softsign),
    /* Gelu is opset 20, but gwr's builders and tests write it into models
     * of opset 17 (ops.def's other ops stop there): any opset. */
    GWR_KERNEL(Gelu, k_gelu, .first_opset = 1),
    /* opset 18, not in ops.def yet */
    GWR_KERNEL_CUSTOM("", "Mish", k_mish),
    GWR_KERNEL(Shrink, k_shrink),
    GWR_KERNEL(Dropout, k_dropout, .flags = GWR_KF_ALIAS),
    GWR_KERNEL(Swish, k_swish),
    GWR_KERNEL(SwiGLU, k_swiglu),
    {.fn = NULL},
};
