/* conv_depthwise.c - direct depthwise convolution, float32: one input
 * plane correlated with one k x k window, no im2col.
 *
 * A depthwise layer's GEMM has one output row (M = 1 per group), so
 * im2col + GEMM copies each input element k*k times to do k*k
 * multiply-adds with it: the copy costs as much as the arithmetic. Here
 * each output is the k*k taps summed straight from the input. The plane
 * splits into an interior, where every tap of the window lands in the
 * input (no bounds checks: rows of outputs vectorized, four lanes twice
 * with GCC/Clang vector extensions for stride 1, a loop the compiler
 * vectorizes for stride 2), and a border, where each tap is checked
 * against the padding. Both sum the taps in the same order (window row,
 * then column, from 0), so an output does not depend on which of them
 * computed it. 16-byte vectors are the baseline of x86-64 (SSE2) and
 * AArch64 (NEON): no runtime CPU check is needed. */
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

#include "exec/kernels/kernel_util.h"

typedef float v4f __attribute__((vector_size(16)));

static inline v4f ld4(const float *p) {
    v4f v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void st4(float *p, v4f v) { memcpy(p, &v, sizeof v); }

int gwr_ku_dw_supports(const gwr_ku_window *g) {
    if (g->nsp != 2 || g->k[1] != g->k[2] || (g->k[1] != 3 && g->k[1] != 5)) return 0;
    if (g->s[1] != g->s[2] || (g->s[1] != 1 && g->s[1] != 2)) return 0;
    return g->d[1] == 1 && g->d[2] == 1;
}

/* One output at (oy, ox) with every tap checked against the input. */
static inline float dw_point(const float *x, const float *w, int64_t H, int64_t W, int64_t iy0, int64_t ix0, int K) {
    float s = 0.0f;
    for (int ky = 0; ky < K; ky++) {
        int64_t iy = iy0 + ky;
        if (iy < 0 || iy >= H) continue;
        for (int kx = 0; kx < K; kx++) {
            int64_t ix = ix0 + kx;
            if (ix >= 0 && ix < W) s += w[ky * K + kx] * x[iy * W + ix];
        }
    }
    return s;
}

/* Outputs [lo, hi) of one interior row, stride 1: xr[0..K) are the
 * window's input rows, output o's first tap is column o - pl. */
static inline __attribute__((always_inline)) void dw_row_s1(const float *const *xr, const float *w, int64_t lo, int64_t hi,
                                                           int64_t pl, float *y, const int K) {
    int64_t o = lo;
    for (; o + 8 <= hi; o += 8) {
        v4f a0 = {0.0f, 0.0f, 0.0f, 0.0f}, a1 = a0;
        for (int ky = 0; ky < K; ky++)
            for (int kx = 0; kx < K; kx++) {
                float t = w[ky * K + kx];
                a0 += ld4(xr[ky] + (o - pl + kx)) * t;
                a1 += ld4(xr[ky] + (o - pl + kx + 4)) * t;
            }
        st4(y + o, a0);
        st4(y + o + 4, a1);
    }
    for (; o < hi; o++) {
        float s = 0.0f;
        for (int ky = 0; ky < K; ky++)
            for (int kx = 0; kx < K; kx++) s += w[ky * K + kx] * xr[ky][o - pl + kx];
        y[o] = s;
    }
}

/* The same for stride 2: output o reads columns 2o - pl + kx. */
static inline __attribute__((always_inline)) void dw_row_s2(const float *const *xr, const float *w, int64_t lo, int64_t hi,
                                                           int64_t pl, float *y, const int K) {
    for (int64_t o = lo; o < hi; o++) {
        float s = 0.0f;
        for (int ky = 0; ky < K; ky++)
            for (int kx = 0; kx < K; kx++) s += w[ky * K + kx] * xr[ky][2 * o - pl + kx];
        y[o] = s;
    }
}

/* Outputs [lo, hi) of the plane's dim d (1: rows, 2: columns) whose taps
 * all land in the input; *hi == *lo when there are none. */
static void interior(const gwr_ku_window *g, int d, int64_t *lo, int64_t *hi) {
    int64_t t;
    gwr_ku_valid_range(g->out[d], g->s[d], -g->pb[d], g->in[d], lo, &t);
    gwr_ku_valid_range(g->out[d], g->s[d], -g->pb[d] + g->k[d] - 1, g->in[d], &t, hi);
    if (*hi < *lo) *hi = *lo;
}

static inline __attribute__((always_inline)) void dw_plane(const float *restrict x, const float *restrict w, const gwr_ku_window *g,
                                                          float *restrict y, const int K, const int S) {
    int64_t H = g->in[1], W = g->in[2], OH = g->out[1], OW = g->out[2], pt = g->pb[1], pl = g->pb[2];
    int64_t ylo, yhi, xlo, xhi;
    interior(g, 1, &ylo, &yhi);
    interior(g, 2, &xlo, &xhi);
    for (int64_t oy = 0; oy < OH; oy++) {
        float *yr = y + oy * OW;
        int64_t iy0 = oy * S - pt;
        if (oy < ylo || oy >= yhi) {
            for (int64_t ox = 0; ox < OW; ox++) yr[ox] = dw_point(x, w, H, W, iy0, ox * S - pl, K);
            continue;
        }
        for (int64_t ox = 0; ox < xlo; ox++) yr[ox] = dw_point(x, w, H, W, iy0, ox * S - pl, K);
        const float *xr[5];
        for (int ky = 0; ky < K; ky++) xr[ky] = x + (iy0 + ky) * W;
        if (S == 1) dw_row_s1(xr, w, xlo, xhi, pl, yr, K);
        else dw_row_s2(xr, w, xlo, xhi, pl, yr, K);
        for (int64_t ox = xhi; ox < OW; ox++) yr[ox] = dw_point(x, w, H, W, iy0, ox * S - pl, K);
    }
}

void gwr_ku_dw_plane_f32(const float *x, const float *w, const gwr_ku_window *g, float *y) {
    int K = (int)g->k[1], S = (int)g->s[1];
    if (K == 3 && S == 1) dw_plane(x, w, g, y, 3, 1);
    else if (K == 3) dw_plane(x, w, g, y, 3, 2);
    else if (S == 1) dw_plane(x, w, g, y, 5, 1);
    else dw_plane(x, w, g, y, 5, 2);
}
