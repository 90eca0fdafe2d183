/* swiglu.c - the kernel of gwr::SwiGLU (the fuse_swiglu pass makes it):
 *
 *   X (..., 2F)  ->  Y (..., F),  Y[..., j] = silu(X[..., j]) * X[..., F + j],
 *   silu(g) = g sigmoid(g) = g / (1 + e^-g)
 *
 * the gated MLP of Llama-style decoders after the gate and up projections
 * were merged into one MatMul of [W_gate | W_up]. One pass over each row
 * reads both halves and writes the product: the unfused graph wrote the
 * two projections, the SiLU and the product as four tensors.
 *
 * float32 rows are one vectorized loop (GWR_VEC_CLONES: AVX-512 / AVX2
 * clones on x86) with fast_math.h's e^x, in QuickGelu's expression at
 * alpha 1 (act_rows.c) times the up half, uncontracted: the bits of
 * fuse_silu's QuickGelu followed by the Mul on this executor. float16 and
 * bfloat16 rows are widened, computed the same way and rounded once;
 * float64 rows use the C library's exp. Rows split over the pool. */
#include <stdint.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "no-trapping-math", "fp-contract=off")
#endif

#include "exec/kernels/fast_math.h"
#include "exec/kernels/kernel_util.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* y[j] = silu(x[j]) * x[F + j] over one row. */
GWR_VEC_CLONES static void swiglu_row_f32(const float *restrict x, float *restrict y, int64_t F) {
    const float *restrict g = x, *restrict u = x + F;
    for (int64_t j = 0; j < F; j++) {
        float v = g[j] + 0.0f; /* QuickGelu's expression (act_rows.c): -0 becomes +0 as there */
        y[j] = v / (1.0f + fast_expf(-v)) * u[j];
    }
}

typedef struct swiglu_job {
    const gwr_value *x;
    gwr_value *y;
    int64_t F;
} swiglu_job;

/* Rows [r0, r1). Half rows go through a float row on the stack in blocks. */
static void swiglu_rows(void *ctx, int64_t r0, int64_t r1) {
    const swiglu_job *j = ctx;
    int64_t F = j->F;
    gwr_dtype dt = j->x->dtype;
    if (dt == GWR_FLOAT32) {
        for (int64_t r = r0; r < r1; r++) swiglu_row_f32((const float *)j->x->data + r * 2 * F, (float *)j->y->data + r * F, F);
    } else if (dt == GWR_FLOAT64) {
        for (int64_t r = r0; r < r1; r++) {
            const double *x = (const double *)j->x->data + r * 2 * F;
            double *y = (double *)j->y->data + r * F;
            for (int64_t c = 0; c < F; c++) y[c] = x[c] / (1.0 + exp(-x[c])) * x[F + c];
        }
    } else { /* float16 / bfloat16: blocks of 256 columns */
        enum { B = 256 };
        float in[2 * B], out[B];
        for (int64_t r = r0; r < r1; r++) {
            const uint16_t *x = (const uint16_t *)j->x->data + r * 2 * F;
            uint16_t *y = (uint16_t *)j->y->data + r * F;
            for (int64_t c0 = 0; c0 < F; c0 += B) {
                int64_t w = F - c0 < B ? F - c0 : B;
                gwr_ku_half_to_f32(dt, x + c0, 1, in, w);
                gwr_ku_half_to_f32(dt, x + F + c0, 1, in + w, w);
                for (int64_t c = 0; c < w; c++) {
                    float v = in[c] + 0.0f;
                    out[c] = v / (1.0f + fast_expf(-v)) * in[w + c];
                }
                gwr_ku_f32_to_half(dt, out, y + c0, w);
            }
        }
    }
}

static gwr_status k_swiglu(gwr_kctx *k) {
    if (k->nin != 1 || !k->in[0] || k->nout != 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "takes X and gives Y");
    const gwr_value *x = k->in[0];
    if (!gwr_ku_is_float(x->dtype)) return gwr_k_fail(k, GWR_ERR_TYPE, "X must be a float tensor");
    if (x->rank < 1 || x->dims[x->rank - 1] % 2)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "X's last axis must be of even length (the gate and the up halves)");
    int64_t dims[GWR_MAX_RANK];
    for (int i = 0; i < x->rank; i++) dims[i] = x->dims[i];
    int64_t F = dims[x->rank - 1] / 2, rows = F ? x->numel / (2 * F) : 0;
    dims[x->rank - 1] = F;
    gwr_value *y = gwr_k_out(k, 0, x->dtype, x->rank, dims);
    if (!y) return GWR_ERR_NOMEM;
    swiglu_job j = {x, y, F};
    gwr_k_parallel(k, rows, gwr_par_grain(8 * F), swiglu_rows, &j); /* e^x and a division: ~8 adds' work */
    return GWR_OK;
}

const gwr_kernel_entry gwr_kernels_swiglu[] = {
    GWR_KERNEL_CUSTOM("gwr", "SwiGLU", k_swiglu),
    {.fn = NULL},
};
