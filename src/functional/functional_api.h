/* functional_api.h - what the functional room gives the rooms above it
 * (exec, passes) beyond include/gwr: the program of gwr::ElementwiseChain.
 *
 * gwr::ElementwiseChain, gwr's own op for a chain of float32
 * element-wise layers run as one loop (the ew_chain pass makes it, the
 * ew_chain kernel runs it, ew_chain.c here is its shape rule).
 *
 *   inputs   x (float32, any shape), then one side operand per binary link,
 *            in link order; each float32 and either one element, x's shape,
 *            or a shape whose dims other than 1 form one run of axes equal
 *            to x's there (a per-channel [C, 1, 1] or trailing [D] bias).
 *   fields   ops (INTS): the links, first applied first (GWR_EWC_* codes);
 *            alphas, betas (FLOATS, one per link, optional): LeakyRelu's
 *            alpha, Clip's min (alpha) and max (beta), HardSigmoid's alpha
 *            and beta; other links ignore theirs.
 *   output   x's shape, float32: each link computed in float as the
 *            layer's own kernel computes it, so bit for bit the unfused
 *            chain's result. */
#ifndef GWR_FUNCTIONAL_API_H
#define GWR_FUNCTIONAL_API_H

#include <stdint.h>

#include "gwr/gwr.h"

#define GWR_EWC_OP "ElementwiseChain"

/* gwr::SwiGLU, gwr's own op for a gated MLP's activation after the gate
 * and up projections were merged into one MatMul (the fuse_swiglu pass
 * makes it, kernels/swiglu.c runs it, swiglu.c here is its shape rule):
 *   input    X (..., 2F), float32, float16, bfloat16 or float64;
 *   output   Y (..., F) of X's dtype, Y[..., j] = silu(X[..., j]) X[..., F + j],
 *            silu(g) = g sigmoid(g). */
#define GWR_SWIGLU_OP "SwiGLU"
#define GWR_EWC_MAX_LINKS 64

/* Link codes (stable: they are saved in models). Binary codes B apply
 * `chain B side`; B + GWR_EWC_SWAP applies `side B chain`. */
enum {
    GWR_EWC_RELU = 1,
    GWR_EWC_LEAKY_RELU = 2,
    GWR_EWC_CLIP = 3,
    GWR_EWC_SIGMOID = 4,
    GWR_EWC_TANH = 5,
    GWR_EWC_HARD_SIGMOID = 6,
    GWR_EWC_NEG = 7,
    GWR_EWC_ABS = 8,
    GWR_EWC_EXP = 9,
    GWR_EWC_LOG = 10,
    GWR_EWC_SQRT = 11,
    GWR_EWC_RECIPROCAL = 12,
    GWR_EWC_ERF = 13,
    GWR_EWC_SOFTPLUS = 14,
    GWR_EWC_ADD = 20,
    GWR_EWC_SUB = 21,
    GWR_EWC_MUL = 22,
    GWR_EWC_DIV = 23,
    GWR_EWC_MAX = 24,
    GWR_EWC_MIN = 25,
    GWR_EWC_SWAP = 20,
};

/* 1: a unary link, 2: binary, 0: no link. */
static inline int gwr_ewc_arity(int64_t code) {
    if (code >= GWR_EWC_RELU && code <= GWR_EWC_SOFTPLUS) return 1;
    if (code >= GWR_EWC_ADD && code <= GWR_EWC_MIN + GWR_EWC_SWAP) return 2;
    return 0;
}

/* How a side operand of dims s (rank sr) broadcasts into the output of
 * dims o (rank orank): element i of the output reads side element
 * (i / inner) % period. 0 when the shape is not one the op takes. Dims
 * must be known (>= 0). */
static inline int gwr_ewc_side_map(int orank, const int64_t *o, int sr, const int64_t *s, int64_t *period,
                                   int64_t *inner) {
    if (sr > orank) return 0;
    /* axes where the output has size 1 do not move the index: skipped */
    int first = -1, last = -1, gap = 0;
    for (int ax = 0; ax < orank; ax++) {
        int64_t sd = ax < orank - sr ? 1 : s[ax - (orank - sr)];
        if (o[ax] == 1) {
            if (sd != 1) return 0;
            continue;
        }
        if (sd == 1) {
            gap = first >= 0;
            continue;
        }
        if (sd != o[ax] || gap) return 0;
        if (first < 0) first = ax;
        last = ax;
    }
    *period = 1, *inner = 1;
    if (first < 0) return 1;
    for (int ax = first; ax <= last; ax++) *period *= o[ax];
    for (int ax = last + 1; ax < orank; ax++) *inner *= o[ax];
    return 1;
}

#endif
