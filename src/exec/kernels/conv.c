/* conv.c - the convolutions: Conv, ConvTranspose, ConvInteger and
 * QLinearConv, over 1 to 3 spatial dims, NCHW.
 *
 * Conv is im2col + GEMM (CBLAS) per image and group: the columns of a
 * group hold, for every output position, the input patch it reads (zeros
 * in the padding), so the group's output is W_g (Mg x Cg*K) times them.
 * The columns are built a block of output rows at a time (a few hundred
 * KiB), so the GEMM packs them from cache: a third of the time of one
 * GEMM over all columns. A 1x1 stride-1 unpadded conv reads the input as
 * its own columns, a depthwise 2-D 3x3 / 5x5 conv runs direct
 * (conv_depthwise.c) and a float32 3x3 stride-1 conv of enough channels
 * and outputs as Winograd F(2x2, 3x3) (conv_winograd.c): choose_alg has
 * the rules.
 * The bias, FusedConv's residual Z and its activation run as an epilogue
 * over each output tile right after the GEMM (or the depthwise plane)
 * wrote it, while it is in cache, not as passes over the whole output.
 * ConvTranspose is the same read backwards: one GEMM makes the columns
 * W_g^T X_g, and col2im adds each into the output position it came from.
 *
 * Every geometry is held as 3-D (leading spatial dims of size 1), so one
 * im2col / col2im serves 1-D, 2-D and 3-D. float32 and float64 go straight
 * to sgemm / dgemm; float16 and bfloat16 are widened to float32; the
 * integer convolutions run in float64 (exact for any realistic sum) after
 * the zero points are subtracted. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/blas.h"
#include "exec/kernels/cnn_isa.h"
#include "exec/kernels/igemm.h"
#include "exec/kernels/kernel_util.h"
#include "exec/kernels/sgemm.h"

#define MAXSP GWR_KU_MAXSP
#define ATTR_MAX ((int64_t)1 << 24) /* kernel, stride, dilation, pad: keeps every product in range */
#define DIM_MAX ((int64_t)1 << 36)

typedef gwr_ku_window geom;

static int64_t prod3(const int64_t *v) { return v[0] * v[1] * v[2]; }

/* kernel_shape (checked against the weights' wk), strides, dilations and
 * pads of nsp spatial dims into g (in and out left to the caller). */
static gwr_status read_window(gwr_kctx *k, int nsp, const int64_t *wk, geom *g) {
    if (nsp < 1 || nsp > MAXSP)
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "%d spatial dims (1 to %d supported)", nsp, MAXSP);
    gwr_ku_window_init(g, nsp);
    int off = MAXSP - nsp;
    const int64_t *ks;
    int r;
    if ((r = gwr_ku_attr_list(k, "kernel_shape", nsp, 1, ATTR_MAX, &ks)) < 0) return GWR_ERR_INVALID_ARG;
    for (int i = 0; i < nsp; i++) {
        if (wk[i] < 1 || wk[i] > ATTR_MAX)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "weight spatial dim %d is %lld", i, (long long)wk[i]);
        if (r && ks[i] != wk[i])
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "kernel_shape[%d] = %lld but the weights have %lld", i, (long long)ks[i],
                              (long long)wk[i]);
        g->k[off + i] = wk[i];
    }
    return gwr_ku_window_attrs(k, g, ATTR_MAX);
}

/* ---- im2col / col2im ----------------------------------------------------- */

/* Columns for the output rows [r0, r1) (a row: one (o0, o1) pair, O2
 * positions): col is C*K rows of (r1 - r0) * O2 elements, read from x (C
 * planes of g->in), zeros in the padding. Type-agnostic: it only moves
 * elements of esz bytes. */
static void im2col(const char *x, const geom *g, int64_t C, size_t esz, int64_t r0, int64_t r1, char *col) {
    int64_t I0 = g->in[0], I1 = g->in[1], I2 = g->in[2], O1 = g->out[1], O2 = g->out[2];
    int64_t XS = prod3(g->in), s2 = g->s[2];
    char *dst = col;
    for (int64_t c = 0; c < C; c++) {
        const char *xc = x + (size_t)(c * XS) * esz;
        for (int64_t k0 = 0; k0 < g->k[0]; k0++)
            for (int64_t k1 = 0; k1 < g->k[1]; k1++)
                for (int64_t k2 = 0; k2 < g->k[2]; k2++) {
                    int64_t st2 = k2 * g->d[2] - g->pb[2], lo2, hi2;
                    gwr_ku_valid_range(O2, s2, st2, I2, &lo2, &hi2);
                    /* input rows read in order: with stride 1 and O2 == I2,
                     * consecutive output rows of one o0 read consecutive,
                     * adjacent input rows at the same offset st2 (a k x 1
                     * kernel over an [H, 1] plane; a 1 x k one padded to
                     * keep W), so a run of them is one copy, the padding
                     * columns zeroed after it */
                    int whole = s2 == 1 && lo2 < hi2 && O2 == I2 && g->s[1] == 1;
                    for (int64_t r = r0; r < r1; r++, dst += (size_t)O2 * esz) {
                        int64_t o0 = r / O1, o1 = r - o0 * O1;
                        int64_t i0 = o0 * g->s[0] - g->pb[0] + k0 * g->d[0], i1 = o1 * g->s[1] - g->pb[1] + k1 * g->d[1];
                        if (i0 < 0 || i0 >= I0 || i1 < 0 || i1 >= I1 || lo2 == hi2) {
                            memset(dst, 0, (size_t)O2 * esz);
                            continue;
                        }
                        const char *src = xc + (size_t)((i0 * I1 + i1) * I2) * esz;
                        if (whole) { /* rows r .. r + n - 1 in one copy */
                            int64_t n = r1 - r;
                            if (O1 - o1 < n) n = O1 - o1;
                            if (I1 - i1 < n) n = I1 - i1;
                            memcpy(dst + (size_t)lo2 * esz, src + (size_t)(lo2 + st2) * esz, (size_t)(n * O2 - lo2 - (O2 - hi2)) * esz);
                            if (lo2 || hi2 < O2)
                                for (int64_t j = 0; j < n; j++) {
                                    char *row = dst + (size_t)(j * O2) * esz;
                                    if (lo2) memset(row, 0, (size_t)lo2 * esz);
                                    if (hi2 < O2) memset(row + (size_t)hi2 * esz, 0, (size_t)(O2 - hi2) * esz);
                                }
                            r += n - 1, dst += (size_t)((n - 1) * O2) * esz;
                            continue;
                        }
                        if (lo2) memset(dst, 0, (size_t)lo2 * esz);
                        if (s2 == 1) {
                            memcpy(dst + (size_t)lo2 * esz, src + (size_t)(lo2 + st2) * esz, (size_t)(hi2 - lo2) * esz);
                        } else if (esz == 4) { /* float32: the strided gather vectorized (im2col_rows.c) */
                            gwr_ku_gather_f32((const float *)(const void *)src + lo2 * s2 + st2, s2, hi2 - lo2,
                                              (float *)(void *)dst + lo2);
                        } else {
                            for (int64_t o2 = lo2; o2 < hi2; o2++)
                                memcpy(dst + (size_t)o2 * esz, src + (size_t)(o2 * s2 + st2) * esz, esz);
                        }
                        if (hi2 < O2) memset(dst + (size_t)hi2 * esz, 0, (size_t)(O2 - hi2) * esz);
                    }
                }
    }
}

/* y (C planes of g->in) += col read back to where im2col took it from. */
#define DEFINE_COL2IM(T, SFX)                                                                         \
    static void col2im_##SFX(const T *col, const geom *g, int64_t C, T *y) {                          \
        int64_t I1 = g->in[1], I2 = g->in[2], O0 = g->out[0], O1 = g->out[1], O2 = g->out[2];         \
        int64_t YS = prod3(g->in);                                                                    \
        const T *src = col;                                                                           \
        for (int64_t c = 0; c < C; c++) {                                                             \
            T *yc = y + c * YS;                                                                       \
            for (int64_t k0 = 0; k0 < g->k[0]; k0++)                                                  \
                for (int64_t k1 = 0; k1 < g->k[1]; k1++)                                              \
                    for (int64_t k2 = 0; k2 < g->k[2]; k2++) {                                        \
                        int64_t st2 = k2 * g->d[2] - g->pb[2], lo2, hi2;                              \
                        gwr_ku_valid_range(O2, g->s[2], st2, I2, &lo2, &hi2);                                \
                        for (int64_t o0 = 0; o0 < O0; o0++) {                                         \
                            int64_t i0 = o0 * g->s[0] - g->pb[0] + k0 * g->d[0];                      \
                            if (i0 < 0 || i0 >= g->in[0]) {                                           \
                                src += O1 * O2;                                                       \
                                continue;                                                             \
                            }                                                                         \
                            for (int64_t o1 = 0; o1 < O1; o1++, src += O2) {                          \
                                int64_t i1 = o1 * g->s[1] - g->pb[1] + k1 * g->d[1];                  \
                                if (i1 < 0 || i1 >= I1) continue;                                     \
                                T *dst = yc + (i0 * I1 + i1) * I2;                                    \
                                for (int64_t o2 = lo2; o2 < hi2; o2++) dst[o2 * g->s[2] + st2] += src[o2]; \
                            }                                                                         \
                        }                                                                             \
                    }                                                                                 \
        }                                                                                             \
    }
DEFINE_COL2IM(float, f32)
DEFINE_COL2IM(double, f64)

/* ---- the typed pieces ---------------------------------------------------- */

/* C (M x N, row-major) = A' B' + beta C; A' is A (M x K) or A^T. */
typedef void (*gemm_fn)(int ta, int M, int N, int K, const void *A, int lda, const void *B, int ldb, double beta, void *C, int ldc);

static void gemm_f32(int ta, int M, int N, int K, const void *A, int lda, const void *B, int ldb, double beta, void *C, int ldc) {
    gwr_ku_sgemm(ta, 0, M, N, K, 1.0f, A, lda, B, ldb, (float)beta, C, ldc);
}

static void gemm_f64(int ta, int M, int N, int K, const void *A, int lda, const void *B, int ldb, double beta, void *C, int ldc) {
    gwr_ku_dgemm(ta, 0, M, N, K, 1.0, A, lda, B, ldb, beta, C, ldc);
}

/* The epilogue of a forward convolution: y = act(y + b[m] + z) over a
 * tile, z at the tile's offset in the output y0 (b, z, act may be NULL). */
typedef struct cepi {
    const void *b;
    const void *z;
    const gwr_ku_act *act;
    const void *y0;
} cepi;

static int epi_active(const cepi *e) { return e && (e->b || e->z || (e->act && e->act->kind != GWR_KU_ACT_NONE)); }

typedef struct cops {
    size_t esz;
    gemm_fn gemm;
    void (*col2im)(const void *col, const geom *g, int64_t C, void *y);
    void (*fill)(void *y, int64_t M, int64_t S, const void *b); /* row m = b[m] (0 without b) */
    /* the epilogue over rows [m0, m0 + rows) of n elements, ld apart, at y */
    void (*epi)(const cepi *e, void *y, int64_t m0, int64_t rows, int64_t ld, int64_t n);
} cops;

static void col2im_f32v(const void *col, const geom *g, int64_t C, void *y) { col2im_f32(col, g, C, y); }
static void col2im_f64v(const void *col, const geom *g, int64_t C, void *y) { col2im_f64(col, g, C, y); }

static void fill_f32(void *yv, int64_t M, int64_t S, const void *bv) {
    float *y = yv;
    const float *b = bv;
    for (int64_t m = 0; m < M; m++)
        for (int64_t s = 0; s < S; s++) y[m * S + s] = b ? b[m] : 0.0f;
}
static void fill_f64(void *yv, int64_t M, int64_t S, const void *bv) {
    double *y = yv;
    const double *b = bv;
    for (int64_t m = 0; m < M; m++)
        for (int64_t s = 0; s < S; s++) y[m * S + s] = b ? b[m] : 0.0;
}

/* The bias is added after the GEMM, then Z, then the activation: the
 * order of Conv, Add and the activation layers, so FusedConv gives their
 * bits. */
#define DEFINE_EPI(T, SFX, ACT)                                                                     \
    static void epi_##SFX(const cepi *e, void *yv, int64_t m0, int64_t rows, int64_t ld, int64_t n) { \
        static const gwr_ku_act none = {GWR_KU_ACT_NONE, {0, 0}};                                   \
        const gwr_ku_act *a = e->act ? e->act : &none;                                              \
        for (int64_t r = 0; r < rows; r++) {                                                        \
            T *y = (T *)yv + r * ld;                                                                \
            const T *z = e->z ? (const T *)e->z + (y - (const T *)e->y0) : NULL;                    \
            ACT(a, y, e->b ? (const T *)e->b + m0 + r : NULL, z, n);                                \
        }                                                                                           \
    }
DEFINE_EPI(float, f32, gwr_ku_act_f32)
DEFINE_EPI(double, f64, gwr_ku_act_f64)

static const cops OPS_F32 = {sizeof(float), gemm_f32, col2im_f32v, fill_f32, epi_f32};
static const cops OPS_F64 = {sizeof(double), gemm_f64, col2im_f64v, fill_f64, epi_f64};

/* ---- the problem --------------------------------------------------------- */

typedef struct cprob {
    geom g;              /* forward geometry; for ConvTranspose from Y (g.in) to X (g.out) */
    int transpose;
    int64_t N, C, M, G;  /* images, input channels, output channels, groups */
    int64_t K;           /* kernel elements */
    int64_t XS, YS;      /* spatial elements of X and of Y */
    int rank;
    int64_t ydims[2 + MAXSP];
} cprob;

/* Shapes and attributes of a convolution of x by w (ConvTranspose when
 * transpose) into p. */
static gwr_status conv_setup(gwr_kctx *k, const gwr_value *x, const gwr_value *w, int transpose, cprob *p) {
    memset(p, 0, sizeof *p);
    p->transpose = transpose;
    if (x->rank < 3) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "X has rank %d, expected at least 3 (N, C, spatial...)", x->rank);
    if (x->rank > 2 + MAXSP) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "X has rank %d (1 to %d spatial dims supported)", x->rank, MAXSP);
    if (w->rank != x->rank) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "W has rank %d, X has rank %d", w->rank, x->rank);
    for (int i = 0; i < x->rank; i++)
        if (x->dims[i] > DIM_MAX || w->dims[i] > DIM_MAX) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "dims too large");
    int nsp = x->rank - 2, off = MAXSP - nsp;
    int64_t G = gwr_k_int(k, "group", 1);
    if (G < 1 || G > ATTR_MAX) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "group = %lld", (long long)G);
    p->N = x->dims[0], p->C = x->dims[1], p->G = G;
    if (p->C % G) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%lld input channels are not divisible by group %lld", (long long)p->C, (long long)G);
    if (!transpose) {
        p->M = w->dims[0];
        if (p->M % G) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%lld output channels are not divisible by group %lld", (long long)p->M, (long long)G);
        if (w->dims[1] != p->C / G)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "W has %lld channels per group, X has %lld / group %lld", (long long)w->dims[1],
                              (long long)p->C, (long long)G);
    } else {
        if (w->dims[0] != p->C)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "W dim 0 is %lld, X has %lld channels", (long long)w->dims[0], (long long)p->C);
        p->M = w->dims[1] * G;
    }
    gwr_status st = read_window(k, nsp, w->dims + 2, &p->g);
    if (st) return st;
    int ap = gwr_ku_auto_pad(k);
    if (ap < 0) return GWR_ERR_INVALID_ARG;
    geom *g = &p->g;
    p->K = prod3(g->k);
    if (!transpose) {
        for (int i = 0; i < nsp; i++) g->in[off + i] = x->dims[2 + i];
        if ((st = gwr_ku_window_out(k, g, ap, 0))) return st;
        p->XS = prod3(g->in), p->YS = prod3(g->out);
        for (int i = 0; i < nsp; i++) p->ydims[2 + i] = g->out[off + i];
    } else {
        const int64_t *op = NULL, *os = NULL;
        int hop = gwr_ku_attr_list(k, "output_padding", nsp, 0, ATTR_MAX, &op);
        if (hop < 0) return GWR_ERR_INVALID_ARG;
        int64_t nos = gwr_k_ints(k, "output_shape", &os);
        if (nos >= 0 && nos != nsp && nos != nsp + 2)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "output_shape has %lld values, expected %d", (long long)nos, nsp);
        if (nos > nsp) os += 2;
        for (int i = 0; i < nsp; i++) {
            int j = off + i;
            int64_t xin = x->dims[2 + i], ek = (g->k[j] - 1) * g->d[j] + 1, opad = hop ? op[i] : 0, full, yo;
            if (xin < 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "X spatial dim %d is %lld", i, (long long)xin);
            full = g->s[j] * (xin - 1) + opad + ek;
            if (nos >= 0 || ap == GWR_KU_PAD_SAME_UPPER || ap == GWR_KU_PAD_SAME_LOWER) {
                if (nos >= 0) {
                    yo = os[i];
                    if (yo < 1 || yo > DIM_MAX) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "output_shape[%d] = %lld", i, (long long)yo);
                } else {
                    yo = xin * g->s[j];
                }
                int64_t total = full - yo;
                if (ap == GWR_KU_PAD_SAME_UPPER) g->pb[j] = gwr_ku_floordiv(total, 2), g->pe[j] = total - g->pb[j];
                else g->pe[j] = gwr_ku_floordiv(total, 2), g->pb[j] = total - g->pe[j];
            } else {
                if (ap == GWR_KU_PAD_VALID) g->pb[j] = g->pe[j] = 0;
                yo = full - g->pb[j] - g->pe[j];
                if (yo < 1)
                    return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "output spatial dim %d would be %lld (pads too large)", i, (long long)yo);
            }
            g->in[j] = yo, g->out[j] = xin;
            p->ydims[2 + i] = yo;
        }
        p->XS = prod3(g->out), p->YS = prod3(g->in);
    }
    p->rank = x->rank;
    p->ydims[0] = p->N, p->ydims[1] = p->M;
    int64_t Cg = p->C / G, Mg = p->M / G;
    int64_t rows = transpose ? Mg * p->K : Cg * p->K;
    if (!gwr_ku_fits_int(rows) || !gwr_ku_fits_int(p->XS) || !gwr_ku_fits_int(p->YS) || !gwr_ku_fits_int(Mg) || !gwr_ku_fits_int(Cg) ||
        (double)rows * (double)(transpose ? p->XS : p->YS) > (double)((int64_t)1 << 40))
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "convolution too large for this executor");
    return GWR_OK;
}

/* ---- forward: the algorithms ---------------------------------------------- */

typedef enum { ALG_IM2COL, ALG_GEMM, ALG_DEPTHWISE, ALG_WINOGRAD } calg;

/* The algorithm of a forward convolution, from its attributes and shapes:
 *   ALG_DEPTHWISE  float32, one input channel per group (group == C; any
 *                  number of outputs per group), a 2-D 3x3 or 5x5 window,
 *                  strides 1 or 2 (equal), dilation 1, any pads: each
 *                  output plane summed straight from its input plane
 *                  (conv_depthwise.c). im2col would copy each input k*k
 *                  times for a GEMM of one row.
 *   ALG_WINOGRAD   float32, group 1, a 2-D 3x3 window, stride 1,
 *                  dilation 1, any pads, at least WINO_MIN_CH inputs and
 *                  outputs (conv_winograd.c): F(2x2, 3x3), 2.25x fewer
 *                  multiply-adds than im2col's GEMM.
 *   ALG_GEMM       a 1x1 window, stride 1, no pads (any group): a group's
 *                  input planes [Cg, H*W] are the GEMM's B as they lie.
 *   ALG_IM2COL     the rest (dilations, 1-D / 3-D, other windows, strided
 *                  1x1, which the columns gather): columns a block of
 *                  output rows at a time, then a GEMM per block. */
static calg choose_alg(const cprob *p, size_t esz) {
    const geom *g = &p->g;
    if (esz == sizeof(float) && p->C / p->G == 1 && gwr_ku_dw_supports(g)) return ALG_DEPTHWISE;
    if (esz == sizeof(float) && p->G == 1 && gwr_ku_wino_supports(g, p->C, p->M)) return ALG_WINOGRAD;
    int direct = p->K == 1;
    for (int i = 0; i < MAXSP; i++) direct &= g->s[i] == 1 && g->pb[i] == 0 && g->pe[i] == 0;
    return direct ? ALG_GEMM : ALG_IM2COL;
}

/* Depthwise: output plane m of group gi from input plane gi, its bias
 * and activation on the vectors before they are stored (Z and the
 * activations with exp: a pass over the plane while it is in cache). The planes (n, m) split
 * into chunks, each with its own staging buffer, that run in parallel
 * (several per worker, so that uneven shares even out). */
typedef struct dwjob {
    const cprob *p;
    const cepi *e;
    const float *x, *w;
    float *y, *pad;
    int64_t np, per; /* floats of one staging buffer; planes per chunk */
} dwjob;

static void dw_chunks(void *ctx, int64_t b0, int64_t b1) {
    const dwjob *j = ctx;
    const cprob *p = j->p;
    const cepi *e = j->e;
    int64_t Mg = p->M / p->G, planes = p->N * p->M;
    int inreg = !e->z && gwr_ku_dw_epi_supports(e->act); /* bias and activation on the vectors as stored */
    for (int64_t b = b0; b < b1; b++) {
        float *pad = j->pad + b * j->np;
        memset(pad, 0, (size_t)j->np * sizeof *pad); /* by the chunk's worker: its border stays zero */
        int64_t q1 = (b + 1) * j->per < planes ? (b + 1) * j->per : planes;
        for (int64_t q = b * j->per; q < q1; q++) {
            int64_t n = q / p->M, m = q - n * p->M;
            float *ym = j->y + q * p->YS;
            const float *xm = j->x + (n * p->C + m / Mg) * p->XS, *wm = j->w + m * p->K;
            if (inreg) {
                gwr_ku_dw_plane_epi_f32(xm, wm, &p->g, e->b ? (const float *)e->b + m : NULL, e->act, pad, ym);
                continue;
            }
            gwr_ku_dw_plane_f32(xm, wm, &p->g, pad, ym);
            if (epi_active(e)) epi_f32(e, ym, m, 1, p->YS, p->YS);
        }
    }
}

/* Small planes: blocks of eight planes (n, m) in order, vectors across
 * them (gwr_ku_dwc_block_f32); j->per blocks per chunk. */
static void dwc_chunks(void *ctx, int64_t b0, int64_t b1) {
    const dwjob *j = ctx;
    const cprob *p = j->p;
    const cepi *e = j->e;
    int64_t Mg = p->M / p->G, planes = p->N * p->M;
    int inreg = !e->z && gwr_ku_dw_epi_supports(e->act);
    for (int64_t b = b0; b < b1; b++) {
        float *pad = j->pad + b * j->np;
        memset(pad, 0, (size_t)j->np * sizeof *pad);
        int64_t q1 = (b + 1) * j->per * 8 < planes ? (b + 1) * j->per * 8 : planes;
        for (int64_t q0 = b * j->per * 8; q0 < q1; q0 += 8) {
            const float *xs[8], *ws[8];
            float *ys[8], bs[8];
            int nc = q1 - q0 < 8 ? (int)(q1 - q0) : 8;
            for (int c = 0; c < nc; c++) {
                int64_t q = q0 + c, n = q / p->M, m = q - n * p->M;
                xs[c] = j->x + (n * p->C + m / Mg) * p->XS, ws[c] = j->w + m * p->K, ys[c] = j->y + q * p->YS;
                bs[c] = e->b ? ((const float *)e->b)[m] : 0.0f;
            }
            gwr_ku_dwc_block_f32(xs, ws, nc, &p->g, inreg && e->b ? bs : NULL, inreg ? e->act : NULL, pad, ys);
            for (int c = 0; !inreg && epi_active(e) && c < nc; c++) epi_f32(e, ys[c], (q0 + c) % p->M, 1, p->YS, p->YS);
        }
    }
}

/* The depthwise layer's items (planes, or blocks of eight planes) in about
 * four chunks a thread, each chunk with a staging buffer of np floats. */
static gwr_status dw_run(gwr_kctx *k, dwjob *j, int64_t items, gwr_par_fn chunks) {
    int64_t T = gwr_tpool_size(k->tpool), nb = T > 1 ? 4 * T : 1;
    if (nb > items) nb = items;
    j->per = (items + nb - 1) / nb;
    nb = (items + j->per - 1) / j->per;
    if (!(j->pad = gwr_malloc((size_t)(nb * j->np) * sizeof *j->pad))) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory for the staged planes");
    gwr_k_parallel(k, nb, 1, chunks, j);
    gwr_free(j->pad);
    return GWR_OK;
}

static gwr_status conv_depthwise(gwr_kctx *k, const cprob *p, const cepi *e, const float *x, const float *w, float *y) {
    int64_t planes = p->N * p->M;
    if (!planes) return GWR_OK;
    dwjob j = {p, e, x, w, y, NULL, 0, 0};
    if (gwr_ku_dwc_wanted(&p->g)) { /* blocks of eight planes */
        j.np = gwr_ku_dwc_scratch(&p->g);
        return dw_run(k, &j, (planes + 7) / 8, dwc_chunks);
    }
    j.np = gwr_ku_dw_scratch(&p->g);
    return dw_run(k, &j, planes, dw_chunks);
}

/* Winograd F(2x2, 3x3), an image at a time, the epilogue over each
 * image's output (on each run of outputs as written, it measured 2%
 * slower on ResNet-18); U from the layer's prepare when it made it. */
static gwr_status conv_winograd(gwr_kctx *k, const cprob *p, const cepi *e, const float *x, const float *w, float *y) {
    const gwr_ku_conv_prep *pp = k->prep;
    int64_t block, ns = gwr_ku_wino_scratch(&p->g, p->C, p->M, gwr_tpool_size(k->tpool), &block);
    float *U = NULL, *s = gwr_malloc((size_t)ns * sizeof *s);
    const float *Uc = pp && pp->M == p->M && pp->C == p->C ? pp->U : NULL;
    if (s && !Uc && (U = gwr_malloc((size_t)(16 * p->M * p->C) * sizeof *U))) gwr_ku_wino_weights(w, p->M, p->C, U), Uc = U;
    if (!s || !Uc) {
        gwr_free(s), gwr_free(U);
        return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory for the Winograd buffers");
    }
    gwr_blas_threads(k->threads);
    for (int64_t n = 0; n < p->N; n++) {
        int64_t yo = n * p->M * p->YS;
        gwr_ku_wino_image_f32(x + n * p->C * p->XS, Uc, k, &p->g, p->C, p->M, s, block, y + yo);
        if (epi_active(e)) epi_f32(e, y + yo, 0, p->M, p->YS, p->YS);
    }
    gwr_free(s), gwr_free(U);
    return GWR_OK;
}

/* A forward GEMM, W [M, K] by B [K, N] (rows ldb apart): float32 on
 * sgemm.c, both read in place (the weights as fast as packed, see
 * sgemm.h), where N is wide enough for it or the weights are many
 * (OpenBLAS packs all of them on every call: openWakeWord's mel
 * spectrogram, 257 x 512 weights by 5 columns, spent 34% of its time in
 * sgemm_oncopy); else o->gemm. */
#define FWD_PACK_MIN ((int64_t)1 << 14) /* weights OpenBLAS would pack */

/* C [M, N] (rows ldc apart) = W B as (B^T W^T)^T, W^T packed at planning
 * (gwr_ku_conv_prepare): 0, or -1 (out of scratch, C untouched). */
static int narrow_gemm(const gwr_kctx *k, const gwr_sgemm_pack *wt, int M, int N, const float *B, int ldb, float *C, int ldc) {
    float *t = gwr_malloc((size_t)M * (size_t)N * sizeof *t);
    if (!t || gwr_sgemm_pb(k->tpool, 1, N, B, ldb, wt, 1.0f, 0.0f, t, M)) {
        gwr_free(t);
        return -1;
    }
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) C[(size_t)m * ldc + n] = t[(size_t)n * M + m];
    gwr_free(t);
    return 0;
}

static void fwd_gemm(const gwr_kctx *k, const cops *o, int M, int N, int K, const void *w, const void *B, int ldb, void *C, int ldc) {
    const gwr_ku_conv_prep *pp = k->prep;
    if (o->esz == sizeof(float) && pp && pp->wt && pp->wt->N == M && pp->wt->K == K && gwr_ku_conv_narrow_n(N) && gwr_sgemm_for(k) &&
        !narrow_gemm(k, pp->wt, M, N, B, ldb, C, ldc))
        return;
    if (o->esz == sizeof(float) && (N >= gwr_sgemm_min_n() || (int64_t)M * K >= FWD_PACK_MIN) && gwr_sgemm_for(k) &&
        !gwr_sgemm(k->tpool, 0, 0, M, N, K, 1.0f, w, K, B, ldb, 0.0f, C, ldc))
        return;
    o->gemm(0, M, N, K, w, K, B, ldb, 0.0, C, ldc);
}

/* The im2col blocks of one image and group (conv_forward): each thread
 * makes its blocks in its own col buffer and multiplies them serially (a
 * loop does not nest), so the bits do not depend on the thread count. */
typedef struct {
    const gwr_kctx *k;
    const cops *o;
    const cprob *p;
    const cepi *e;
    const char *xg, *wg;
    char *yg, *col;
    size_t col_bytes; /* one thread's col buffer */
    int64_t gi, per;
    int epi;
} colblk;

static void col_blocks(void *ctx, int64_t b0, int64_t b1) {
    const colblk *c = ctx;
    const cprob *p = c->p;
    const geom *g = &p->g;
    size_t esz = c->o->esz;
    int64_t Cg = p->C / p->G, Mg = p->M / p->G, rows = Cg * p->K, nrows = g->out[0] * g->out[1], O2 = g->out[2];
    char *col = c->col + (size_t)gwr_par_thread() * c->col_bytes;
    for (int64_t r0 = b0 * c->per; r0 < nrows && r0 < b1 * c->per; r0 += c->per) {
        int64_t r1 = r0 + c->per < nrows ? r0 + c->per : nrows, nb = (r1 - r0) * O2;
        char *yt = c->yg + (size_t)(r0 * O2) * esz;
        im2col(c->xg, g, Cg, esz, r0, r1, col);
        fwd_gemm(c->k, c->o, (int)Mg, (int)nb, (int)rows, c->wg, col, (int)nb, yt, (int)p->YS);
        if (c->epi) c->o->epi(c->e, yt, c->gi * Mg, Mg, p->YS, nb);
    }
}

/* Columns of the 1x1 GEMM per block when an epilogue follows: the tile
 * (Mg x block) stays in L2 and the GEMM is still wide. */
#define EPI_TILE_BYTES ((size_t)256 << 10)

/* Forward convolution of dense x, w into y, the epilogue e (its bias, M
 * values, or none) on each tile. The columns are made a block of output
 * rows at a time, sized to stay in cache while the GEMM packs them. */
#define COL_BLOCK_BYTES ((size_t)384 << 10)
static gwr_status conv_forward(gwr_kctx *k, const cops *o, const cprob *p, const char *x, const char *w, const cepi *e, char *y) {
    const geom *g = &p->g;
    int64_t G = p->G, Cg = p->C / G, Mg = p->M / G, rows = Cg * p->K;
    int64_t nrows = g->out[0] * g->out[1], O2 = g->out[2]; /* output rows of O2 positions */
    size_t esz = o->esz;
    calg alg = choose_alg(p, esz);
    int epi = epi_active(e);
    if (alg == ALG_DEPTHWISE)
        return conv_depthwise(k, p, e, (const float *)(const void *)x, (const float *)(const void *)w, (float *)(void *)y);
    if (alg == ALG_WINOGRAD)
        return conv_winograd(k, p, e, (const float *)(const void *)x, (const float *)(const void *)w, (float *)(void *)y);
    int64_t per = (int64_t)(COL_BLOCK_BYTES / ((size_t)(rows * O2) * esz + 1));
    if (per * O2 < 256) per = (256 + O2 - 1) / (O2 ? O2 : 1); /* GEMMs narrower than this lose more than the cache gains */
    if (per > nrows) per = nrows;
    if (per < 1) per = 1;
    int64_t cols = p->YS; /* ALG_GEMM: columns per GEMM */
    if (epi) {
        cols = (int64_t)(EPI_TILE_BYTES / ((size_t)Mg * esz + 1));
        if (cols < 256) cols = 256;
        if (cols > p->YS) cols = p->YS;
    }
    char *col = NULL;
    if (alg == ALG_IM2COL && rows && p->YS && p->N && Mg) {
        col = gwr_malloc((size_t)(rows * per * O2) * esz * (size_t)gwr_tpool_size(k->tpool)); /* one block a thread */
        if (!col) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory for the im2col buffer");
    }
    gwr_blas_threads(k->threads);
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t gi = 0; gi < G; gi++) {
            const char *xg = x + (size_t)((n * p->C + gi * Cg) * p->XS) * esz;
            char *yg = y + (size_t)((n * p->M + gi * Mg) * p->YS) * esz;
            const char *wg = w + (size_t)(gi * Mg * rows) * esz;
            if (alg == ALG_GEMM) {
                for (int64_t c0 = 0; c0 < p->YS; c0 += cols) {
                    int64_t nb = p->YS - c0 < cols ? p->YS - c0 : cols;
                    fwd_gemm(k, o, (int)Mg, (int)nb, (int)rows, wg, xg + (size_t)c0 * esz, (int)p->YS, yg + (size_t)c0 * esz,
                             (int)p->YS);
                    if (epi) o->epi(e, yg + (size_t)c0 * esz, gi * Mg, Mg, p->YS, nb);
                }
                continue;
            }
            if (!col) {
                o->fill(yg, Mg, p->YS, NULL); /* no input channels: the bias alone */
                if (epi) o->epi(e, yg, gi * Mg, Mg, p->YS, p->YS);
                continue;
            }
            colblk cb = {k, o, p, e, xg, wg, yg, col, (size_t)(rows * per * O2) * esz, gi, per, epi};
            int64_t nblk = (nrows + per - 1) / per; /* few: one after the other, each GEMM split */
            if (nblk >= 2 * gwr_tpool_size(k->tpool)) gwr_k_parallel(k, nblk, 1, col_blocks, &cb);
            else col_blocks(&cb, 0, nblk);
        }
    gwr_free(col);
    return GWR_OK;
}

/* Transposed convolution: x (N, C, g.out) by w (C, M/G, k) into y (N, M, g.in). */
static gwr_status conv_transpose(gwr_kctx *k, const cops *o, const cprob *p, const char *x, const char *w, const char *b, char *y) {
    const geom *g = &p->g;
    int64_t G = p->G, Cg = p->C / G, Mg = p->M / G, rows = Mg * p->K;
    size_t esz = o->esz;
    int direct = p->K == 1 && p->XS == p->YS;
    for (int i = 0; i < MAXSP; i++) direct &= g->s[i] == 1 && g->pb[i] == 0 && g->in[i] == g->out[i];
    char *col = NULL;
    if (!direct && rows && p->XS && p->N) {
        col = gwr_malloc((size_t)(rows * p->XS) * esz);
        if (!col) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory for the col2im buffer");
    }
    gwr_blas_threads(k->threads);
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t gi = 0; gi < G; gi++) {
            const char *xg = x + (size_t)((n * p->C + gi * Cg) * p->XS) * esz;
            char *yg = y + (size_t)((n * p->M + gi * Mg) * p->YS) * esz;
            const char *wg = w + (size_t)(gi * Cg * rows) * esz;
            o->fill(yg, Mg, p->YS, b ? b + (size_t)(gi * Mg) * esz : NULL);
            if (direct) {
                o->gemm(1, (int)Mg, (int)p->XS, (int)Cg, wg, (int)Mg, xg, (int)p->XS, 1.0, yg, (int)p->YS);
            } else if (col) {
                o->gemm(1, (int)rows, (int)p->XS, (int)Cg, wg, (int)rows, xg, (int)p->XS, 0.0, col, (int)p->XS);
                o->col2im(col, g, Mg, yg);
            }
        }
    gwr_free(col);
    return GWR_OK;
}

/* The convolution of p; e's act and z (forward only) may be NULL. */
static gwr_status conv_run(gwr_kctx *k, const cops *o, const cprob *p, const void *x, const void *w, const void *b, void *y,
                           const gwr_ku_act *act, const void *z) {
    cepi e = {b, z, act, y};
    return p->transpose ? conv_transpose(k, o, p, x, w, b, y) : conv_forward(k, o, p, x, w, &e, y);
}

/* ---- dtype handling ------------------------------------------------------ */

/* Z of FusedConv: Y's dtype and shape; GWR_OK, or the failure recorded. */
static gwr_status check_z(gwr_kctx *k, const gwr_value *z, const gwr_value *y) {
    if (z->dtype != y->dtype)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "Z is %s, Y is %s", gwr_dtype_name(z->dtype), gwr_dtype_name(y->dtype));
    int same = z->rank == y->rank;
    for (int i = 0; same && i < y->rank; i++) same = z->dims[i] == y->dims[i];
    return same ? GWR_OK : gwr_k_fail(k, GWR_ERR_INVALID_ARG, "Z is not of the output's shape");
}

/* Conv and ConvTranspose: X, W, optional B, all of one float dtype; act
 * and z (Conv only, either may be NULL) for float32 and float64, *done
 * set when they were applied. */
static gwr_status conv_float(gwr_kctx *k, int transpose, const gwr_ku_act *act, const gwr_value *z, int *done) {
    const gwr_value *x = k->nin > 0 ? k->in[0] : NULL, *w = k->nin > 1 ? k->in[1] : NULL, *b = k->nin > 2 ? k->in[2] : NULL;
    if (!x || !w) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %s is missing", x ? "W" : "X");
    if (!gwr_ku_is_float(x->dtype)) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "dtype %s is not supported", gwr_dtype_name(x->dtype));
    if (w->dtype != x->dtype || (b && b->dtype != x->dtype))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "X is %s but %s is %s", gwr_dtype_name(x->dtype), w->dtype != x->dtype ? "W" : "B",
                          gwr_dtype_name(w->dtype != x->dtype ? w->dtype : b->dtype));
    cprob p;
    gwr_status st = conv_setup(k, x, w, transpose, &p);
    if (st) return st;
    if (b && (b->rank != 1 || b->dims[0] != p.M))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "B must have shape [%lld]", (long long)p.M);
    gwr_value *y = gwr_k_out(k, 0, x->dtype, p.rank, p.ydims);
    if (!y) return GWR_ERR_NOMEM;
    if (z && (st = check_z(k, z, y))) return st;
    int full = x->dtype == GWR_FLOAT32 || x->dtype == GWR_FLOAT64;
    if (done) *done = full;
    const void *zd = z ? z->data : NULL;
    if (x->dtype == GWR_FLOAT32) return conv_run(k, &OPS_F32, &p, x->data, w->data, b ? b->data : NULL, y->data, act, zd);
    if (x->dtype == GWR_FLOAT64) return conv_run(k, &OPS_F64, &p, x->data, w->data, b ? b->data : NULL, y->data, act, zd);
    float *xf = gwr_ku_widen(x), *wf = gwr_ku_widen(w), *bf = b ? gwr_ku_widen(b) : NULL;
    float *yf = gwr_malloc((size_t)(y->numel ? y->numel : 1) * sizeof *yf);
    if (!xf || !wf || (b && !bf) || !yf) st = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    else if (!(st = conv_run(k, &OPS_F32, &p, xf, wf, bf, yf, NULL, NULL))) gwr_ku_narrow(yf, y);
    gwr_free(xf), gwr_free(wf), gwr_free(bf), gwr_free(yf);
    return st;
}

gwr_status gwr_ku_conv_kernel(gwr_kctx *k) { return conv_float(k, 0, NULL, NULL, NULL); }
gwr_status gwr_ku_conv_epilogue_kernel(gwr_kctx *k, const gwr_ku_act *act, const gwr_value *z, int *done) {
    return conv_float(k, 0, act, z, done);
}
static gwr_status k_conv(gwr_kctx *k) { return gwr_ku_conv_kernel(k); }
static gwr_status k_conv_transpose(gwr_kctx *k) { return conv_float(k, 1, NULL, NULL, NULL); }

/* ---- integer convolutions ------------------------------------------------ */

/* A zero point (or scale): absent (def), a scalar / one element, or, when
 * per > 0, `per` values. count set to 1 or per; -1 after gwr_k_fail. */
static int check_param(gwr_kctx *k, const gwr_value *v, const char *name, gwr_dtype want, int64_t per) {
    if (!v) return 0;
    if (want != GWR_UNDEFINED && v->dtype != want)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s is %s, expected %s", name, gwr_dtype_name(v->dtype), gwr_dtype_name(want)), -1;
    if (v->numel == 1 && v->rank <= 1) return 1;
    if (per > 0 && v->rank == 1 && v->numel == per) return 2;
    return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s must be a scalar%s", name, per > 0 ? " or one value per output channel" : ""), -1;
}

/* x - xzp and w - wzp[m] as float64 arrays; NULL after gwr_k_fail. */
static gwr_status q_operands(gwr_kctx *k, const gwr_value *x, const gwr_value *xzp, const gwr_value *w, const gwr_value *wzp,
                             int64_t M, double **xd, double **wd) {
    *xd = gwr_malloc((size_t)(x->numel ? x->numel : 1) * sizeof **xd);
    *wd = gwr_malloc((size_t)(w->numel ? w->numel : 1) * sizeof **wd);
    if (!*xd || !*wd) {
        gwr_free(*xd), gwr_free(*wd);
        *xd = *wd = NULL;
        return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    }
    double zx = xzp ? gwr_ku_q8(xzp, 0) : 0;
    for (int64_t i = 0; i < x->numel; i++) (*xd)[i] = gwr_ku_q8(x, i) - zx;
    int64_t per = M ? w->numel / M : 0;
    for (int64_t i = 0; i < w->numel; i++) {
        double zw = !wzp ? 0 : wzp->numel == 1 ? gwr_ku_q8(wzp, 0) : gwr_ku_q8(wzp, i / per);
        (*wd)[i] = gwr_ku_q8(w, i) - zw;
    }
    return GWR_OK;
}

/* ConvInteger on igemm.c's exact integer product: per image and group,
 * the im2col columns of x minus its zero point (int16, so the padding's
 * zeros are the zero point's), packed as B, times W minus its per-channel
 * zero points packed once per group as A. -1 when the sizes do not fit the
 * product's ints (the caller takes the float64 path), else the status. */
static int conv_integer_igemm(gwr_kctx *k, const cprob *p, const gwr_value *x, const gwr_value *xzp, const gwr_value *w,
                              const gwr_value *wzp, int32_t *y) {
    int64_t G = p->G, Cg = p->C / G, Mg = p->M / G, rows = Cg * p->K, nrows = p->g.out[0] * p->g.out[1];
    if (!rows || !Mg || !p->YS || !gwr_ku_fits_int(rows * p->YS * 2) || !gwr_ku_fits_int(Mg * rows * 8)) return -1;
    int32_t zx = xzp ? (int32_t)gwr_ku_q8(xzp, 0) : 0;
    int32_t *zw = gwr_malloc((size_t)p->M * sizeof *zw);
    int16_t *xs = gwr_malloc((size_t)(x->numel ? x->numel : 1) * sizeof *xs);
    int16_t *col = gwr_malloc((size_t)(rows * p->YS) * sizeof *col);
    int16_t *bp = gwr_malloc(gwr_ku_igemm_b_size((int)rows, (int)p->YS) * sizeof *bp);
    int16_t *ap = gwr_malloc(gwr_ku_igemm_a_size((int)Mg, (int)rows) * (size_t)G * sizeof *ap);
    gwr_status st = GWR_OK;
    if (!zw || !xs || !col || !bp || !ap) st = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    else {
        for (int64_t m = 0; m < p->M; m++) zw[m] = !wzp ? 0 : (int32_t)gwr_ku_q8(wzp, wzp->numel == 1 ? 0 : m);
        if (x->dtype == GWR_INT8)
            for (int64_t i = 0; i < x->numel; i++) xs[i] = (int16_t)(((const int8_t *)x->data)[i] - zx);
        else
            for (int64_t i = 0; i < x->numel; i++) xs[i] = (int16_t)(((const uint8_t *)x->data)[i] - zx);
        size_t asz = gwr_ku_igemm_a_size((int)Mg, (int)rows), wsz = gwr_dtype_size(w->dtype);
        for (int64_t gi = 0; gi < G; gi++)
            gwr_ku_igemm_pack_a((const char *)w->data + (size_t)(gi * Mg * rows) * wsz, w->dtype == GWR_INT8, (int)Mg, (int)rows,
                                zw + gi * Mg, (int)Mg, ap + (size_t)gi * asz);
        for (int64_t n = 0; n < p->N && !st; n++)
            for (int64_t gi = 0; gi < G && !st; gi++) {
                const int16_t *xg = xs + (n * p->C + gi * Cg) * p->XS;
                im2col((const char *)xg, &p->g, Cg, sizeof *xs, 0, nrows, (char *)col);
                gwr_ku_igemm_pack_b(col, GWR_KU_IGEMM_I16, (int)rows, (int)p->YS, NULL, 0, bp);
                if (gwr_ku_igemm((int)Mg, (int)p->YS, (int)rows, ap + (size_t)gi * asz, bp, y + (n * p->M + gi * Mg) * p->YS,
                                 (int)p->YS))
                    st = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
            }
    }
    gwr_free(zw), gwr_free(xs), gwr_free(col), gwr_free(bp), gwr_free(ap);
    return st;
}

/* ConvInteger: x, w (int8 / uint8), optional zero points; int32 out. */
static gwr_status k_conv_integer(gwr_kctx *k) {
    const gwr_value *x = k->nin > 0 ? k->in[0] : NULL, *w = k->nin > 1 ? k->in[1] : NULL;
    const gwr_value *xzp = k->nin > 2 ? k->in[2] : NULL, *wzp = k->nin > 3 ? k->in[3] : NULL;
    if (!x || !w) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %s is missing", x ? "w" : "x");
    if (!gwr_ku_is_q8(x->dtype) || !gwr_ku_is_q8(w->dtype))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "x and w must be int8 or uint8 (got %s, %s)", gwr_dtype_name(x->dtype), gwr_dtype_name(w->dtype));
    cprob p;
    gwr_status st = conv_setup(k, x, w, 0, &p);
    if (st) return st;
    if (check_param(k, xzp, "x_zero_point", x->dtype, 0) < 0 || check_param(k, wzp, "w_zero_point", w->dtype, p.M) < 0)
        return GWR_ERR_INVALID_ARG;
    gwr_value *y = gwr_k_out(k, 0, GWR_INT32, p.rank, p.ydims);
    if (!y) return GWR_ERR_NOMEM;
    if (!y->numel) return GWR_OK;
    int fast = conv_integer_igemm(k, &p, x, xzp, w, wzp, y->data);
    if (fast >= 0) return (gwr_status)fast;
    double *xd, *wd, *yd = gwr_malloc((size_t)(y->numel ? y->numel : 1) * sizeof *yd);
    if (!yd) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    if ((st = q_operands(k, x, xzp, w, wzp, p.M, &xd, &wd))) {
        gwr_free(yd);
        return st;
    }
    if (!(st = conv_run(k, &OPS_F64, &p, xd, wd, NULL, yd, NULL, NULL))) {
        int32_t *yo = y->data;
        for (int64_t i = 0; i < y->numel; i++) yo[i] = gwr_ku_wrap_i32(yd[i]); /* exact sums, wrapped as int32 */
    }
    gwr_free(xd), gwr_free(wd), gwr_free(yd);
    return st;
}

/* QLinearConv: x, x_scale, x_zero_point, w, w_scale, w_zero_point,
 * y_scale, y_zero_point, optional B (int32). */
static gwr_status k_qlinear_conv(gwr_kctx *k) {
    if (k->nin < 8) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "QLinearConv takes 8 or 9 inputs, got %d", k->nin);
    static const char *const names[8] = {"x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale", "y_zero_point"};
    for (int i = 0; i < 8; i++)
        if (!k->in[i]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %s is missing", names[i]);
    const gwr_value *x = k->in[0], *xs = k->in[1], *xzp = k->in[2], *w = k->in[3], *ws = k->in[4], *wzp = k->in[5];
    const gwr_value *ys = k->in[6], *yzp = k->in[7], *b = k->nin > 8 ? k->in[8] : NULL;
    if (!gwr_ku_is_q8(x->dtype) || !gwr_ku_is_q8(w->dtype) || !gwr_ku_is_q8(yzp->dtype))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "x, w and y_zero_point must be int8 or uint8");
    cprob p;
    gwr_status st = conv_setup(k, x, w, 0, &p);
    if (st) return st;
    if (check_param(k, xs, "x_scale", GWR_FLOAT32, 0) < 0 || check_param(k, xzp, "x_zero_point", x->dtype, 0) < 0 ||
        check_param(k, ws, "w_scale", GWR_FLOAT32, p.M) < 0 || check_param(k, wzp, "w_zero_point", w->dtype, p.M) < 0 ||
        check_param(k, ys, "y_scale", GWR_FLOAT32, 0) < 0 || check_param(k, yzp, "y_zero_point", GWR_UNDEFINED, 0) < 0)
        return GWR_ERR_INVALID_ARG;
    if (b && (b->dtype != GWR_INT32 || b->rank != 1 || b->dims[0] != p.M))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "B must be int32 of shape [%lld]", (long long)p.M);
    gwr_value *y = gwr_k_out(k, 0, yzp->dtype, p.rank, p.ydims);
    if (!y) return GWR_ERR_NOMEM;
    if (!y->numel) return GWR_OK;
    /* the exact int32 sums: igemm.c's product where the sizes fit it, else float64 (exact too) */
    int32_t *acc = gwr_malloc((size_t)y->numel * sizeof *acc);
    if (!acc) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    int fast = conv_integer_igemm(k, &p, x, xzp, w, wzp, acc);
    if (fast > 0) st = (gwr_status)fast;
    else if (fast < 0) {
        double *xd, *wd, *yd = gwr_malloc((size_t)y->numel * sizeof *yd);
        if (!yd) st = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
        else if (!(st = q_operands(k, x, xzp, w, wzp, p.M, &xd, &wd))) {
            if (!(st = conv_run(k, &OPS_F64, &p, xd, wd, NULL, yd, NULL, NULL)))
                for (int64_t i = 0; i < y->numel; i++) acc[i] = gwr_ku_wrap_i32(yd[i]);
            gwr_free(xd), gwr_free(wd);
        }
        gwr_free(yd);
    }
    if (!st) {
        /* the int32 accumulator (sum plus bias, wrapping) times x_scale *
         * w_scale / y_scale, in float32; a zero y_scale saturates (NaN: 0 / 0
         * gives the low end) */
        float xsc = ((const float *)xs->data)[0], ysc = ((const float *)ys->data)[0];
        double zy = gwr_ku_q8(yzp, 0), lo, hi;
        gwr_ku_qrange(yzp->dtype, &lo, &hi);
        int64_t plane = p.YS, nplanes = plane ? y->numel / plane : 0;
        for (int64_t pl = 0; pl < nplanes; pl++) { /* one output channel's plane: one scale, one bias */
            int64_t m = pl % p.M;
            float scale = xsc * ((const float *)ws->data)[ws->numel == 1 ? 0 : m] / ysc;
            uint32_t bm = b ? (uint32_t)((const int32_t *)b->data)[m] : 0u;
            const int32_t *ar = acc + pl * plane;
            if (y->dtype == GWR_INT8)
                for (int64_t i = 0; i < plane; i++)
                    ((int8_t *)y->data)[pl * plane + i] = (int8_t)gwr_ku_requant8((int32_t)((uint32_t)ar[i] + bm), scale, (float)zy, -128.0f, 127.0f);
            else
                for (int64_t i = 0; i < plane; i++)
                    ((uint8_t *)y->data)[pl * plane + i] = (uint8_t)gwr_ku_requant8((int32_t)((uint32_t)ar[i] + bm), scale, (float)zy, 0.0f, 255.0f);
        }
    }
    gwr_free(acc);
    return st;
}

const gwr_kernel_entry gwr_kernels_conv[] = {
    GWR_KERNEL(Conv, k_conv, .flags = GWR_KF_BLAS, .prepare = gwr_ku_conv_prepare, .prep_free = gwr_ku_conv_prep_free),
    GWR_KERNEL(ConvTranspose, k_conv_transpose, .flags = GWR_KF_BLAS),
    GWR_KERNEL(ConvInteger, k_conv_integer, .flags = GWR_KF_BLAS),
    GWR_KERNEL(QLinearConv, k_qlinear_conv, .flags = GWR_KF_BLAS),
    {.fn = NULL},
};
