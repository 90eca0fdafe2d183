/* ew_chain.c - the kernel of gwr::ElementwiseChain (src/functional/
 * functional_api.h): a chain of float32 element-wise links in one pass over
 * memory. The output is walked in blocks that stay in L1; each link runs
 * over the block in place. Every link is the expression, and the
 * compilation (cloned per CPU or not), of the layer kernel it stands for
 * (activation.c, elementwise.c), and rounds to float as that kernel does,
 * so the chain's result is bit for bit the unfused layers'. */
#include <math.h>
#include <stdint.h>

#include "exec/exec_internal.h"

/* as in activation.c / elementwise.c: GCC's -O2 vectorizes few loops */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "no-trapping-math", "fp-contract=off")
#endif

#include "exec/kernels/fast_math.h"
#include "exec/kernels/kernel_util.h"
#include "functional/functional_api.h"

/* 2048 floats: 8 KiB, the block and a side row fit L1 */
#define EWC_BLOCK 2048

typedef struct ewc_link {
    int64_t code;
    float a, b;
    const float *side;     /* binary links */
    int64_t period, inner; /* side element of output i: (i / inner) % period */
} ewc_link;

typedef struct ewc_run {
    const float *x;
    float *o;
    int64_t n;
    int nlinks;
    ewc_link links[GWR_EWC_MAX_LINKS];
} ewc_run;

/* ---- unary links: activation.c's and elementwise.c's float expressions ---- */

/* Every link loop is compiled per CPU (GWR_VEC_CLONES), also those whose
 * layer kernel is not: a link is in L1, so its loop is compute-bound and
 * the wider vectors are the point of fusing. Bits stay the layer's: the
 * exec room is built with -ffp-contract=fast, so GCC is told fp-contract=off
 * above, as activation.c is, and clang is told not to below
 * (its default contracts within an expression, which only the FMA clones
 * could do). Sigmoid comes first: its layer kernel (activation.c's ACT_FV)
 * is itself cloned under the default, so it keeps that. */
/* dst = EXPR(src) over n; src == dst runs in place (the loops are split
 * so that each has restrict pointers and vectorizes). */
#define EWC_U(fname, EXPR)                                                                  \
    GWR_VEC_CLONES static void fname(const float *src, float *dst, int64_t n, float A, float B) { \
        (void)A, (void)B;                                                                   \
        if (src == dst) {                                                                   \
            float *restrict v = dst;                                                        \
            for (int64_t i = 0; i < n; i++) {                                               \
                float x = v[i];                                                             \
                v[i] = (float)(EXPR);                                                       \
            }                                                                               \
        } else {                                                                            \
            const float *restrict a = src;                                                  \
            float *restrict o = dst;                                                        \
            for (int64_t i = 0; i < n; i++) {                                               \
                float x = a[i];                                                             \
                o[i] = (float)(EXPR);                                                       \
            }                                                                               \
        }                                                                                   \
    }

EWC_U(u_sigmoid, 1.0f / (1.0f + fast_expf(-x)))

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

EWC_U(u_relu, x < 0 ? 0.0f : x)
EWC_U(u_leaky, x < 0 ? A * x : x)
EWC_U(u_clip, (x < A ? A : x) > B ? B : (x < A ? A : x))
EWC_U(u_tanh, fast_tanhf(x))
EWC_U(u_hsig, fast_clamp01f(A * x + B))
EWC_U(u_neg, -x)
EWC_U(u_abs, fabsf(x))
EWC_U(u_exp, expf(x))
EWC_U(u_log, logf(x))
EWC_U(u_sqrt, sqrtf(x))
EWC_U(u_recip, 1.0f / x)
EWC_U(u_erf, fast_erff(x))
/* log(1 + e^x) without overflow */
EWC_U(u_softplus, x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x)))

typedef void (*ewc_unary_fn)(const float *src, float *dst, int64_t n, float A, float B);

static ewc_unary_fn unary_of(int64_t code) {
    switch (code) {
    case GWR_EWC_RELU: return u_relu;
    case GWR_EWC_LEAKY_RELU: return u_leaky;
    case GWR_EWC_CLIP: return u_clip;
    case GWR_EWC_SIGMOID: return u_sigmoid;
    case GWR_EWC_TANH: return u_tanh;
    case GWR_EWC_HARD_SIGMOID: return u_hsig;
    case GWR_EWC_NEG: return u_neg;
    case GWR_EWC_ABS: return u_abs;
    case GWR_EWC_EXP: return u_exp;
    case GWR_EWC_LOG: return u_log;
    case GWR_EWC_SQRT: return u_sqrt;
    case GWR_EWC_RECIPROCAL: return u_recip;
    case GWR_EWC_ERF: return u_erf;
    default: return u_softplus;
    }
}

/* ---- binary links: elementwise.c's R2_F expressions, x the left operand ---- */

/* dst = EXPR(x, y) with x from src over a scalar side c (_s) or a side
 * row w (_v); with `swap` the chain value is the right operand. src ==
 * dst runs in place (split loops, as EWC_U). */
#define EWC_LOOPS(EXPR, X_SIDE, Y_SIDE)                                                         \
    if (src == dst) {                                                                       \
        float *restrict v = dst;                                                            \
        if (swap)                                                                           \
            for (int64_t i = 0; i < n; i++) {                                               \
                float x = X_SIDE, y = v[i];                                                 \
                v[i] = (float)(EXPR);                                                       \
            }                                                                               \
        else                                                                                \
            for (int64_t i = 0; i < n; i++) {                                               \
                float x = v[i], y = Y_SIDE;                                                 \
                v[i] = (float)(EXPR);                                                       \
            }                                                                               \
    } else {                                                                                \
        const float *restrict a = src;                                                      \
        float *restrict o = dst;                                                            \
        if (swap)                                                                           \
            for (int64_t i = 0; i < n; i++) {                                               \
                float x = X_SIDE, y = a[i];                                                 \
                o[i] = (float)(EXPR);                                                       \
            }                                                                               \
        else                                                                                \
            for (int64_t i = 0; i < n; i++) {                                               \
                float x = a[i], y = Y_SIDE;                                                 \
                o[i] = (float)(EXPR);                                                       \
            }                                                                               \
    }
#define EWC_B(name, EXPR)                                                                            \
    GWR_VEC_CLONES static void name##_s(const float *src, float *dst, int64_t n, float c, int swap) {          \
        EWC_LOOPS(EXPR, c, c)                                                                            \
    }                                                                                                \
    GWR_VEC_CLONES static void name##_v(const float *src, float *dst, int64_t n, const float *restrict w, int swap) { \
        EWC_LOOPS(EXPR, w[i], w[i])                                                                      \
    }

EWC_B(b_add, x + y)
EWC_B(b_sub, x - y)
EWC_B(b_mul, x *y)
EWC_B(b_div, x / y)
/* numpy.maximum / minimum: NaN wins */
EWC_B(b_max, (x >= y || x != x) ? x : y)
EWC_B(b_min, (x <= y || x != x) ? x : y)

typedef void (*ewc_bs_fn)(const float *src, float *dst, int64_t n, float c, int swap);
typedef void (*ewc_bv_fn)(const float *src, float *dst, int64_t n, const float *w, int swap);

static void binary_of(int64_t code, ewc_bs_fn *fs, ewc_bv_fn *fv) {
    switch ((code - GWR_EWC_ADD) % GWR_EWC_SWAP + GWR_EWC_ADD) {
    case GWR_EWC_ADD: *fs = b_add_s, *fv = b_add_v; break;
    case GWR_EWC_SUB: *fs = b_sub_s, *fv = b_sub_v; break;
    case GWR_EWC_MUL: *fs = b_mul_s, *fv = b_mul_v; break;
    case GWR_EWC_DIV: *fs = b_div_s, *fv = b_div_v; break;
    case GWR_EWC_MAX: *fs = b_max_s, *fv = b_max_v; break;
    default: *fs = b_min_s, *fv = b_min_v; break;
    }
}

/* Link L from src into dst, the block of output elements [s, e). */
static void apply_binary(const ewc_link *L, const float *src, float *dst, int64_t s, int64_t e) {
    ewc_bs_fn fs;
    ewc_bv_fn fv;
    binary_of(L->code, &fs, &fv);
    int swap = L->code >= GWR_EWC_ADD + GWR_EWC_SWAP;
    if (L->period == 1) {
        fs(src, dst, e - s, L->side[0], swap);
        return;
    }
    for (int64_t i = s; i < e;) {
        int64_t q = i / L->inner, r = i % L->inner, c = q % L->period, len;
        if (L->inner == 1) { /* a run of the side row */
            len = L->period - c < e - i ? L->period - c : e - i;
            fv(src + (i - s), dst + (i - s), len, L->side + c, swap);
        } else { /* a run over which the side value is one */
            len = L->inner - r < e - i ? L->inner - r : e - i;
            fs(src + (i - s), dst + (i - s), len, L->side[c], swap);
        }
        i += len;
    }
}

/* The first link reads the input block, the others the output in place. */
static void run_blocks(void *ctx, int64_t b0, int64_t b1) {
    const ewc_run *R = ctx;
    for (int64_t b = b0; b < b1; b++) {
        int64_t s = b * EWC_BLOCK, e = s + EWC_BLOCK < R->n ? s + EWC_BLOCK : R->n;
        float *v = R->o + s;
        const float *src = R->x + s;
        for (int l = 0; l < R->nlinks; l++, src = v) {
            const ewc_link *L = &R->links[l];
            if (gwr_ewc_arity(L->code) == 1) unary_of(L->code)(src, v, e - s, L->a, L->b);
            else apply_binary(L, src, v, s, e);
        }
    }
}

/* The program and side operands into R; GWR_OK or a failure recorded on k. */
static gwr_status ewc_setup(gwr_kctx *k, const gwr_value *x, ewc_run *R) {
    const int64_t *ops;
    const float *al = NULL, *be = NULL;
    int64_t nops = gwr_k_ints(k, "ops", &ops);
    if (nops < 1 || nops > GWR_EWC_MAX_LINKS)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "ops must be INTS of 1 to %d link codes", GWR_EWC_MAX_LINKS);
    int64_t na = gwr_k_floats(k, "alphas", &al), nb = gwr_k_floats(k, "betas", &be);
    if ((na >= 0 && na != nops) || (nb >= 0 && nb != nops))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "alphas and betas must have one value per link (%lld)", (long long)nops);
    int side = 1;
    R->nlinks = (int)nops;
    for (int64_t i = 0; i < nops; i++) {
        ewc_link *L = &R->links[i];
        int a = gwr_ewc_arity(ops[i]);
        if (!a) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "link %lld has unknown op code %lld", (long long)i, (long long)ops[i]);
        *L = (ewc_link){.code = ops[i], .a = na > 0 ? al[i] : 0.0f, .b = nb > 0 ? be[i] : 0.0f};
        if (a == 1) continue;
        if (side >= k->nin) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "binary link %lld has no side operand", (long long)i);
        const gwr_value *t = k->in[side++];
        if (!t || t->dtype != GWR_FLOAT32) return gwr_k_fail(k, GWR_ERR_TYPE, "input %d must be float32", side - 1);
        if (!gwr_ewc_side_map(x->rank, x->dims, t->rank, t->dims, &L->period, &L->inner)) {
            char ty[96];
            gwr_value_type_str(t, ty, sizeof ty);
            return gwr_k_fail(k, GWR_ERR_SHAPE, "input %d %s does not broadcast into the output as the op allows", side - 1, ty);
        }
        L->side = t->data;
    }
    if (side != k->nin)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%d binary links need %d inputs, %d given", side - 1, side, k->nin);
    return GWR_OK;
}

static gwr_status k_ew_chain(gwr_kctx *k) {
    if (k->nin < 1 || !k->in[0] || k->nout != 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "takes x and side operands, gives 1 output");
    const gwr_value *x = k->in[0];
    if (x->dtype != GWR_FLOAT32) return gwr_k_fail(k, GWR_ERR_TYPE, "input 0 must be float32");
    ewc_run *R = gwr_malloc(sizeof *R);
    if (!R) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    gwr_status st = ewc_setup(k, x, R);
    gwr_value *o = st ? NULL : gwr_k_out_over(k, 0, 0, GWR_FLOAT32, x->rank, x->dims);
    if (!st && !o) st = GWR_ERR_NOMEM;
    if (!st) {
        R->x = x->data, R->o = o->data, R->n = x->numel;
        gwr_k_parallel(k, (R->n + EWC_BLOCK - 1) / EWC_BLOCK, 8, run_blocks, R);
    }
    gwr_free(R);
    return st;
}

const gwr_kernel_entry gwr_kernels_ew_chain[] = {
    GWR_KERNEL_CUSTOM("gwr", "ElementwiseChain", k_ew_chain),
    {.fn = NULL},
};
