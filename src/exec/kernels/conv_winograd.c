/* conv_winograd.c - Winograd F(2x2, 3x3) for float32 3x3 stride-1
 * convolutions, group 1 (Lavin & Gray, "Fast Algorithms for
 * Convolutional Neural Networks", 2015).
 *
 * im2col + GEMM does 9 multiply-adds per input channel per output; F(2x2,
 * 3x3) computes a 2x2 block of outputs from a 4x4 input tile with 16
 * products instead of 36: 2.25x fewer. The weights become U = G g G^T
 * (16 matrices [M, C], built once at planning by the layer's prepare
 * hook, see gwr_ku_wino_prepare), each input tile d becomes V = B^T d B
 * (16 matrices [C, tiles]), 16 sgemm calls make the products
 * Mx = U V (16 matrices [M, tiles]) and each tile's 2x2 outputs are
 * A^T Mx A. Tiles run in blocks sized so that V and Mx of a block stay in
 * L2. The transforms add and subtract inputs before the products and
 * products after them, so the rounding differs from the direct sum: about
 * 3e-6 at most on outputs near 1 (test_conv_winograd.c), the usual price
 * of the algorithm. The bias, Z and activation run afterwards (conv.c).
 *
 *   B^T = [1  0 -1  0]    G = [ 1    0    0 ]    A^T = [1 1  1  0]
 *         [0  1  1  0]        [1/2  1/2  1/2]          [0 1 -1 -1]
 *         [0 -1  1  0]        [1/2 -1/2  1/2]
 *         [0  1  0 -1]        [ 0    0    1 ] */
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

#include "exec/blas.h"
#include "exec/kernels/cnn_isa.h"
#include "exec/kernels/kernel_util.h"
#include "exec/kernels/sgemm.h"
#include "exec/kernels/vec4.h"
#include "exec/kernels/vec8.h"

/* Below these im2col stays as fast or faster (measured on ResNet-18's
 * layers, one thread, see choose_alg in conv.c): 16 channels even, 32
 * 1.2x faster; 16 tiles (7x7 outputs, 512 channels) 10% slower, 49
 * tiles (14x14, 256) 1.4x faster: the 16 GEMMs of N = tiles get too
 * narrow to pay for reading U (16/9 of the weights). */
#define WINO_MIN_CH 32
#define WINO_MIN_TILES 32
/* Bytes of V and Mx of one block of tiles (both stay in L2): 384 KiB to
 * 1.5 MiB measured the same on ResNet-18, 3 MiB 15% slower at 64
 * channels 56x56. */
#define WINO_BLOCK_BYTES ((size_t)768 << 10)

int gwr_ku_wino_supports(const gwr_ku_window *g, int64_t C, int64_t M) {
    if (g->nsp != 2 || g->k[1] != 3 || g->k[2] != 3) return 0;
    if (g->s[1] != 1 || g->s[2] != 1 || g->d[1] != 1 || g->d[2] != 1) return 0;
    int64_t tiles = ((g->out[1] + 1) / 2) * ((g->out[2] + 1) / 2);
    return C >= WINO_MIN_CH && M >= WINO_MIN_CH && tiles >= WINO_MIN_TILES;
}

/* U[xi][m][c] = (G g G^T)[xi] for w [M, C, 3, 3]. */
void gwr_ku_wino_weights(const float *w, int64_t M, int64_t C, float *U) {
    int64_t MC = M * C;
    for (int64_t mc = 0; mc < MC; mc++) {
        const float *g = w + mc * 9;
        float t[4][3]; /* G g: 4 x 3 */
        for (int j = 0; j < 3; j++) {
            float a = g[j], b = g[3 + j], c = g[6 + j];
            t[0][j] = a;
            t[1][j] = 0.5f * (a + b + c);
            t[2][j] = 0.5f * (a - b + c);
            t[3][j] = c;
        }
        for (int i = 0; i < 4; i++) { /* (G g) G^T: 4 x 4 */
            float a = t[i][0], b = t[i][1], c = t[i][2];
            U[(i * 4 + 0) * MC + mc] = a;
            U[(i * 4 + 1) * MC + mc] = 0.5f * (a + b + c);
            U[(i * 4 + 2) * MC + mc] = 0.5f * (a - b + c);
            U[(i * 4 + 3) * MC + mc] = c;
        }
    }
}

/* The padded planes of one image. */
static int64_t wino_pad_floats(const gwr_ku_window *g, int64_t C) {
    int64_t th = (g->out[1] + 1) / 2, tw = (g->out[2] + 1) / 2;
    return C * (2 * th + 2) * (2 * tw + 2);
}

/* One thread's share: V and M of a block of nb tiles, two output rows. */
static int64_t wino_slab_floats(const gwr_ku_window *g, int64_t C, int64_t M, int64_t nb) {
    return 16 * (C + M) * nb + 4 * ((g->out[2] + 1) / 2);
}

int64_t gwr_ku_wino_scratch(const gwr_ku_window *g, int64_t C, int64_t M, int threads, int64_t *block) {
    int64_t tiles = ((g->out[1] + 1) / 2) * ((g->out[2] + 1) / 2);
    int64_t nb = (int64_t)(WINO_BLOCK_BYTES / ((size_t)(16 * (C + M)) * sizeof(float)));
    if (nb < 64) nb = 64; /* narrower GEMMs lose more than the cache gains */
    if (nb > tiles) nb = tiles;
    if (nb < 1) nb = 1;
    *block = nb;
    return wino_pad_floats(g, C) + (threads < 1 ? 1 : threads) * wino_slab_floats(g, C, M, nb);
}

/* The input plane x (H x W) into xp (Hp x Wp) at (pt, pl), zeros
 * around it (pt + H <= Hp, pl + W <= Wp). */
static void pad_plane(const float *x, int64_t H, int64_t W, int64_t pt, int64_t pl, int64_t Hp, int64_t Wp, float *xp) {
    for (int64_t r = 0; r < Hp; r++) {
        float *row = xp + r * Wp;
        if (r < pt || r >= pt + H) {
            memset(row, 0, (size_t)Wp * sizeof *row);
            continue;
        }
        memset(row, 0, (size_t)pl * sizeof *row);
        memcpy(row + pl, x + (r - pt) * W, (size_t)W * sizeof *x);
        memset(row + pl + W, 0, (size_t)(Wp - pl - W) * sizeof *row);
    }
}

#if defined(__clang__)
#define SHUF(a, b, i, j, k, l) __builtin_shufflevector(a, b, i, j, k, l)
#else
#define SHUF(a, b, i, j, k, l) __builtin_shuffle(a, b, (v4i){i, j, k, l})
#endif

/* One input tile's 16 values of V = B^T d B, d's columns j of its four
 * rows given as c[i][j] (T: float, or v4f for four tiles at once). */
#define INPUT_TRANSFORM(T, c, v, t, ld, STORE)                                                     \
    do {                                                                                           \
        T u[4][4]; /* B^T d */                                                                     \
        for (int j = 0; j < 4; j++)                                                                \
            u[0][j] = c[0][j] - c[2][j], u[1][j] = c[1][j] + c[2][j], u[2][j] = c[2][j] - c[1][j], \
            u[3][j] = c[1][j] - c[3][j];                                                           \
        for (int i = 0; i < 4; i++) {                                                              \
            STORE(v + (4 * i + 0) * ld + t, u[i][0] - u[i][2]);                                    \
            STORE(v + (4 * i + 1) * ld + t, u[i][1] + u[i][2]);                                    \
            STORE(v + (4 * i + 2) * ld + t, u[i][2] - u[i][1]);                                    \
            STORE(v + (4 * i + 3) * ld + t, u[i][1] - u[i][3]);                                    \
        }                                                                                          \
    } while (0)
#define STORE1(p, x) (*(p) = (x))
#define LOAD1(p) (*(p))

/* A^T m A of one tile (or of a vector of tiles, T v4f / v8f: element xi
 * at q[xi * ld]): the 2x2 outputs (e0 d0 / e1 d1), rows of output first. */
#define OUTPUT_TRANSFORM(T, q, ld, LOAD, e0, d0, e1, d1)                                                   \
    do {                                                                                                   \
        T a_[4], b_[4];                                                                                    \
        for (int j = 0; j < 4; j++) {                                                                      \
            T p0 = LOAD((q) + j * (ld)), p1 = LOAD((q) + (4 + j) * (ld)), p2 = LOAD((q) + (8 + j) * (ld)), \
              p3 = LOAD((q) + (12 + j) * (ld));                                                            \
            a_[j] = p0 + p1 + p2, b_[j] = p1 - p2 - p3;                                                    \
        }                                                                                                  \
        e0 = a_[0] + a_[1] + a_[2], d0 = a_[1] - a_[2] - a_[3];                                            \
        e1 = b_[0] + b_[1] + b_[2], d1 = b_[1] - b_[2] - b_[3];                                            \
    } while (0)

/* V = B^T d B of tiles tx in [x0, x1) of tile row ty (V's column
 * tx - x0, ld apart between V's 16 matrices) from the padded plane xp
 * (Wp wide). Four tiles at a time: a row's 8 loaded inputs split into
 * even and odd lanes are column j of four neighbouring tiles. */
static void input_row(const float *xp, int64_t Wp, int64_t ty, int64_t x0, int64_t x1, float *v, int64_t ld) {
    const float *r = xp + 2 * ty * Wp;
    int64_t tx = x0;
    for (; tx + 4 <= x1; tx += 4) {
        v4f c[4][4];
        for (int i = 0; i < 4; i++) {
            const float *p = r + i * Wp + 2 * tx;
            v4f a0 = ld4(p), a1 = ld4(p + 4), b0 = ld4(p + 2), b1 = ld4(p + 6);
            c[i][0] = SHUF(a0, a1, 0, 2, 4, 6), c[i][1] = SHUF(a0, a1, 1, 3, 5, 7);
            c[i][2] = SHUF(b0, b1, 0, 2, 4, 6), c[i][3] = SHUF(b0, b1, 1, 3, 5, 7);
        }
        INPUT_TRANSFORM(v4f, c, v, tx - x0, ld, st4);
    }
    for (; tx < x1; tx++) {
        float c[4][4];
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) c[i][j] = r[i * Wp + 2 * tx + j];
        INPUT_TRANSFORM(float, c, v, tx - x0, ld, STORE1);
    }
}

/* The 2x2 outputs A^T m A of tiles tx in [x0, x1) of a tile row (m's
 * element xi of tile tx at m[xi * ld + tx - x0]) into the two rows o0,
 * o1 (2 * tx, 2 * tx + 1 of each), four tiles at a time. */
static void output_row(const float *m, int64_t ld, int64_t x0, int64_t x1, float *o0, float *o1) {
    int64_t tx = x0;
    for (; tx + 4 <= x1; tx += 4) {
        v4f e0, d0, e1, d1;
        OUTPUT_TRANSFORM(v4f, m + (tx - x0), ld, ld4, e0, d0, e1, d1);
        st4(o0 + 2 * tx, SHUF(e0, d0, 0, 4, 1, 5)), st4(o0 + 2 * tx + 4, SHUF(e0, d0, 2, 6, 3, 7));
        st4(o1 + 2 * tx, SHUF(e1, d1, 0, 4, 1, 5)), st4(o1 + 2 * tx + 4, SHUF(e1, d1, 2, 6, 3, 7));
    }
    for (; tx < x1; tx++) {
        OUTPUT_TRANSFORM(float, m + (tx - x0), ld, LOAD1, o0[2 * tx], o0[2 * tx + 1], o1[2 * tx], o1[2 * tx + 1]);
    }
}

#ifdef GWR_VEC8_X86
/* input_row and output_row eight tiles a step on AVX2 (one register per
 * value; the transforms only add and subtract, so the bits are the four-
 * wide path's), the last step overlapping the one before (its tiles
 * written again, the same values); a run under eight tiles by them.
 * The bodies take no vector argument, so the AVX2 functions inline them
 * (clang refuses a call that passes a 32-byte vector from an AVX2
 * function to one built without). */
V8_INLINE void input_row8_body(const float *xp, int64_t Wp, int64_t ty, int64_t x0, int64_t x1, float *v, int64_t ld) {
    const float *r = xp + 2 * ty * Wp;
    if (x1 - x0 < 8) {
        input_row(xp, Wp, ty, x0, x1, v, ld);
        return;
    }
    for (int64_t t8 = x0; t8 < x1; t8 += 8) {
        int64_t tx = t8 + 8 <= x1 ? t8 : x1 - 8; /* the last step overlaps: same values again */
        v8f c[4][4];
        for (int i = 0; i < 4; i++) {
            const float *p = r + i * Wp + 2 * tx;
            v8f a0 = ld8(p), a1 = ld8(p + 8), b0 = ld8(p + 2), b1 = ld8(p + 10);
            c[i][0] = evens8(a0, a1), c[i][1] = odds8(a0, a1), c[i][2] = evens8(b0, b1), c[i][3] = odds8(b0, b1);
        }
        INPUT_TRANSFORM(v8f, c, v, tx - x0, ld, st8);
    }
}

V8_INLINE void output_row8_body(const float *m, int64_t ld, int64_t x0, int64_t x1, float *o0, float *o1) {
    if (x1 - x0 < 8) {
        output_row(m, ld, x0, x1, o0, o1);
        return;
    }
    for (int64_t t8 = x0; t8 < x1; t8 += 8) {
        int64_t tx = t8 + 8 <= x1 ? t8 : x1 - 8;
        v8f e0, d0, e1, d1;
        OUTPUT_TRANSFORM(v8f, m + (tx - x0), ld, ld8, e0, d0, e1, d1);
        st8(o0 + 2 * tx, zip_lo8(e0, d0)), st8(o0 + 2 * tx + 8, zip_hi8(e0, d0));
        st8(o1 + 2 * tx, zip_lo8(e1, d1)), st8(o1 + 2 * tx + 8, zip_hi8(e1, d1));
    }
}
GWR_AVX2_FN static void input_row8(const float *xp, int64_t Wp, int64_t ty, int64_t x0, int64_t x1, float *v, int64_t ld) {
    input_row8_body(xp, Wp, ty, x0, x1, v, ld);
}
GWR_AVX2_FN static void output_row8(const float *m, int64_t ld, int64_t x0, int64_t x1, float *o0, float *o1) {
    output_row8_body(m, ld, x0, x1, o0, o1);
}
#endif

typedef struct {
    const float *U, *xp;
    const gwr_kctx *k;
    const gwr_ku_window *g;
    int64_t C, M, block, slab;
    float *slabs, *y;
    int own;
    void (*in_row)(const float *, int64_t, int64_t, int64_t, int64_t, float *, int64_t);
    void (*out_row)(const float *, int64_t, int64_t, int64_t, float *, float *);
} wino_job;

/* Tile blocks [b0, b1) of one image, on this thread's slab: each block's
 * 16 products run serially inside (a parallel loop does not nest), so a
 * block's bits do not depend on the thread count. */
static void wino_blocks(void *ctx, int64_t b0, int64_t b1) {
    const wino_job *j = ctx;
    int64_t C = j->C, M = j->M, block = j->block, OH = j->g->out[1], OW = j->g->out[2];
    int64_t tw = (OW + 1) / 2, th = (OH + 1) / 2, tiles = th * tw, Hp = 2 * th + 2, Wp = 2 * tw + 2;
    float *V = j->slabs + (int64_t)gwr_par_thread() * j->slab, *Mx = V + 16 * C * block, *orow = Mx + 16 * M * block;
    for (int64_t t0 = b0 * block; t0 < tiles && t0 < b1 * block; t0 += block) {
        int64_t nb = tiles - t0 < block ? tiles - t0 : block;
        for (int64_t c = 0; c < C; c++)
            for (int64_t t = t0; t < t0 + nb;) {
                int64_t ty = t / tw, x0 = t % tw, x1 = x0 + (t0 + nb - t) < tw ? x0 + (t0 + nb - t) : tw;
                j->in_row(j->xp + c * Hp * Wp, Wp, ty, x0, x1, V + c * nb + (t - t0), C * nb);
                t += x1 - x0;
            }
        for (int xi = 0; xi < 16; xi++) { /* sgemm.c, both in place, where it is wide enough */
            const float *Ux = j->U + xi * M * C, *Vx = V + xi * C * nb;
            float *Mxx = Mx + xi * M * nb;
            if (nb < gwr_sgemm_min_n() || !j->own ||
                gwr_sgemm(j->k->tpool, 0, 0, (int)M, (int)nb, (int)C, 1.0f, Ux, (int)C, Vx, (int)nb, 0.0f, Mxx, (int)nb))
                gwr_ku_sgemm(0, 0, (int)M, (int)nb, (int)C, 1.0f, Ux, (int)C, Vx, (int)nb, 0.0f, Mxx, (int)nb);
        }
        for (int64_t m = 0; m < M; m++)
            for (int64_t t = t0; t < t0 + nb;) {
                int64_t ty = t / tw, x0 = t % tw, x1 = x0 + (t0 + nb - t) < tw ? x0 + (t0 + nb - t) : tw;
                int64_t o = m * OH * OW + 2 * ty * OW + 2 * x0, n = (2 * x1 < OW ? 2 * x1 : OW) - 2 * x0;
                j->out_row(Mx + m * nb + (t - t0), M * nb, x0, x1, orow, orow + 2 * tw);
                for (int r = 0; r < 2 && 2 * ty + r < OH; r++)
                    memcpy(j->y + o + r * OW, orow + r * 2 * tw + 2 * x0, (size_t)n * sizeof *j->y);
                t += x1 - x0;
            }
    }
}

void gwr_ku_wino_image_f32(const float *x, const float *U, const gwr_kctx *k, const gwr_ku_window *g, int64_t C, int64_t M, float *scratch,
                           int64_t block, float *y) {
    int64_t H = g->in[1], W = g->in[2], OH = g->out[1], OW = g->out[2];
    int64_t tw = (OW + 1) / 2, th = (OH + 1) / 2, tiles = th * tw, Hp = 2 * th + 2, Wp = 2 * tw + 2;
    wino_job j = {U, scratch, k, g, C, M, block, wino_slab_floats(g, C, M, block), scratch + wino_pad_floats(g, C), y,
                  gwr_sgemm_for(k), input_row, output_row};
#ifdef GWR_VEC8_X86
    if (gwr_ku_cnn_avx2()) j.in_row = input_row8, j.out_row = output_row8;
#endif
    for (int64_t c = 0; c < C; c++) pad_plane(x + c * H * W, H, W, g->pb[1], g->pb[2], Hp, Wp, scratch + c * Hp * Wp);
    /* Blocks split over k's threads, each on its slab of the scratch, where
     * there are a few a thread; else (14 x 14 outputs: one block) one
     * after the other, their products split by sgemm.c. */
    int64_t nblk = (tiles + block - 1) / block;
    if (nblk >= 2 * gwr_tpool_size(k->tpool)) gwr_k_parallel(k, nblk, 1, wino_blocks, &j);
    else wino_blocks(&j, 0, nblk);
}

/* Whether N output positions are a narrow product: from 2 to one vector
 * less. There sgemm.c's tiles of W's rows by a panel of N columns fill
 * N of a vector's lanes (openWakeWord's mel spectrogram, 257 x 5 x 512:
 * 40 us, 33 GFLOP/s), while the transposed product, x's N columns by W^T
 * packed at planning, fills a tile of N rows by whole vectors (21 us, 64
 * GFLOP/s; bench: 2 to 7 columns win, 8 even, 1 loses). */
int gwr_ku_conv_narrow_n(int64_t N) { return N >= 2 && N < gwr_sgemm_min_n(); }

int gwr_ku_conv_narrow(const gwr_kctx *k) {
    const gwr_value *w = k->nin > 1 ? k->in[1] : NULL;
    const gwr_tensor *y = gwr_layer_output(k->layer, 0);
    if (!w || w->rank < 3 || !w->dims[0] || !gwr_sgemm_enabled() || gwr_k_int(k, "group", 1) != 1 || !y ||
        gwr_tensor_rank(y) != w->rank || !gwr_ku_fits_int(w->numel))
        return 0;
    int64_t S = 1;
    for (int a = 2; a < w->rank; a++) {
        gwr_dim d = gwr_tensor_dim(y, a);
        if (d < 0) return 0;
        S *= d;
    }
    return gwr_ku_conv_narrow_n(S);
}

/* An ints attribute absent or all 1 (strides, dilations). */
static int all_ones(const gwr_kctx *k, const char *name) {
    const int64_t *v;
    int64_t n = gwr_k_ints(k, name, &v);
    for (int64_t i = 0; i < n; i++)
        if (v[i] != 1) return 0;
    return 1;
}

gwr_status gwr_ku_conv_prepare(gwr_kctx *k, void **state) {
    *state = NULL;
    const gwr_value *w = k->nin > 1 ? k->in[1] : NULL;
    if (w && w->dtype == GWR_FLOAT32 && gwr_ku_conv_narrow(k)) {
        gwr_ku_conv_prep *p = gwr_calloc(1, sizeof *p);
        int64_t K = w->dims[0] ? w->numel / w->dims[0] : 0;
        if (p && !(p->wt = gwr_sgemm_pack_b(1, (int)K, (int)w->dims[0], w->data, (int)K))) gwr_free(p), p = NULL;
        if (!p) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory packing the weights");
        p->M = w->dims[0], p->C = w->dims[1];
        *state = p;
        return GWR_OK;
    }
    if (!w || w->dtype != GWR_FLOAT32 || w->rank != 4 || w->dims[2] != 3 || w->dims[3] != 3) return GWR_OK;
    if (gwr_k_int(k, "group", 1) != 1 || !all_ones(k, "strides") || !all_ones(k, "dilations")) return GWR_OK;
    gwr_ku_window g;
    gwr_ku_window_init(&g, 2);
    g.k[1] = g.k[2] = 3;
    g.out[1] = g.out[2] = INT32_MAX; /* unknown: maybe large enough */
    const gwr_tensor *yt = gwr_layer_output(k->layer, 0);
    if (yt && gwr_tensor_rank(yt) == 4 && gwr_tensor_dim(yt, 2) >= 0 && gwr_tensor_dim(yt, 3) >= 0)
        g.out[1] = gwr_tensor_dim(yt, 2), g.out[2] = gwr_tensor_dim(yt, 3);
    if (!gwr_ku_wino_supports(&g, w->dims[1], w->dims[0])) return GWR_OK;
    gwr_ku_conv_prep *p = gwr_calloc(1, sizeof *p);
    float *U = p ? gwr_malloc((size_t)(16 * w->numel / 9) * sizeof *U) : NULL;
    if (!U) {
        gwr_free(p);
        return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory preparing the Winograd weights");
    }
    gwr_ku_wino_weights(w->data, w->dims[0], w->dims[1], U);
    p->M = w->dims[0], p->C = w->dims[1], p->U = U;
    *state = p;
    return GWR_OK;
}

void gwr_ku_conv_prep_free(void *state) {
    gwr_ku_conv_prep *p = state;
    if (!p) return;
    gwr_sgemm_pack_free(p->wt);
    gwr_free(p->U);
    gwr_free(p);
}
