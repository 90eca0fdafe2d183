/* conv_depthwise.c - direct depthwise convolution, float32: one input
 * plane correlated with one k x k window, no im2col.
 *
 * A depthwise layer's GEMM has one output row (M = 1 per group), so
 * im2col + GEMM copies each input element k*k times to do k*k
 * multiply-adds with it: the copy costs as much as the arithmetic. Here
 * each output is the k*k taps summed straight from the input plane. A
 * padded layer first copies its plane into the middle of a buffer whose
 * border stays zero (the caller's, zeroed once per layer): one copy of
 * the plane instead of bounds checks on every tap, so that every output
 * runs the same unchecked loop. Rows of outputs are vectorized with
 * GCC/Clang vector extensions, four lanes twice; stride 2 reads eight
 * inputs and keeps the even ones. The taps are summed in one order
 * (window row, then column, from 0) on every path. 16-byte vectors are
 * the baseline of x86-64 (SSE2) and AArch64 (NEON): no runtime CPU check
 * is needed. */
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

#include "exec/kernels/kernel_util.h"
#include "exec/kernels/vec4.h"

/* The even lanes of a, b: elements 0, 2, 4, 6 of their concatenation. */
static inline v4f evens(v4f a, v4f b) {
#if defined(__clang__)
    return __builtin_shufflevector(a, b, 0, 2, 4, 6);
#else
    return __builtin_shuffle(a, b, (v4i){0, 2, 4, 6});
#endif
}

int gwr_ku_dw_supports(const gwr_ku_window *g) {
    if (g->nsp != 2 || g->k[1] != g->k[2] || (g->k[1] != 3 && g->k[1] != 5)) return 0;
    if (g->s[1] != g->s[2] || (g->s[1] != 1 && g->s[1] != 2)) return 0;
    return g->d[1] == 1 && g->d[2] == 1;
}

int64_t gwr_ku_dw_scratch(const gwr_ku_window *g) {
    if (!g->pb[1] && !g->pb[2] && !g->pe[1] && !g->pe[2]) return 0;
    return (g->in[1] + g->pb[1] + g->pe[1]) * (g->in[2] + g->pb[2] + g->pe[2]);
}

/* One output row: xr[0..K) are the window's input rows (Wp elements
 * each), output o's first tap is column S*o. */
static inline __attribute__((always_inline)) void dw_row(const float *const *xr, const float *w, int64_t OW, int64_t Wp, float *y,
                                                        const int K, const int S) {
    int64_t o = 0;
    /* eight outputs a step; stride 2 loads one element past its last tap */
    for (; o + 8 <= OW && S * (o + 7) + K - 1 + (S - 1) < Wp; o += 8) {
        v4f a0 = {0.0f, 0.0f, 0.0f, 0.0f}, a1 = a0;
#pragma GCC unroll 5
        for (int ky = 0; ky < K; ky++) {
#pragma GCC unroll 5
            for (int kx = 0; kx < K; kx++) {
                float t = w[ky * K + kx];
                const float *p = xr[ky] + S * o + kx;
                if (S == 1) {
                    a0 += ld4(p) * t;
                    a1 += ld4(p + 4) * t;
                } else {
                    a0 += evens(ld4(p), ld4(p + 4)) * t;
                    a1 += evens(ld4(p + 8), ld4(p + 12)) * t;
                }
            }
        }
        st4(y + o, a0);
        st4(y + o + 4, a1);
    }
    for (; o < OW; o++) {
        float s = 0.0f;
        for (int ky = 0; ky < K; ky++)
            for (int kx = 0; kx < K; kx++) s += w[ky * K + kx] * xr[ky][S * o + kx];
        y[o] = s;
    }
}

static inline __attribute__((always_inline)) void dw_plane(const float *x, int64_t Wp, const float *w, const gwr_ku_window *g,
                                                          float *y, const int K, const int S) {
    int64_t OH = g->out[1], OW = g->out[2];
    for (int64_t oy = 0; oy < OH; oy++) {
        const float *xr[5];
        for (int ky = 0; ky < K; ky++) xr[ky] = x + (oy * S + ky) * Wp;
        dw_row(xr, w, OW, Wp, y + oy * OW, K, S);
    }
}

void gwr_ku_dw_plane_f32(const float *x, const float *w, const gwr_ku_window *g, float *pad, float *y) {
    int K = (int)g->k[1], S = (int)g->s[1];
    int64_t H = g->in[1], W = g->in[2], Wp = W;
    if (gwr_ku_dw_scratch(g)) {
        Wp = W + g->pb[2] + g->pe[2];
        for (int64_t r = 0; r < H; r++) memcpy(pad + (r + g->pb[1]) * Wp + g->pb[2], x + r * W, (size_t)W * sizeof *x);
        x = pad;
    }
    if (K == 3 && S == 1) dw_plane(x, Wp, w, g, y, 3, 1);
    else if (K == 3) dw_plane(x, Wp, w, g, y, 3, 2);
    else if (S == 1) dw_plane(x, Wp, w, g, y, 5, 1);
    else dw_plane(x, Wp, w, g, y, 5, 2);
}
