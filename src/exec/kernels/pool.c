/* pool.c - pooling over 1 to 3 spatial dims, NCHW: MaxPool (with Indices,
 * storage_order, ceil_mode, dilations), AveragePool (count_include_pad),
 * LpPool, their Global forms, and MaxUnpool.
 *
 * Windows are held as 3-D (leading spatial dims of size 1). For every
 * output position along each dim the valid kernel taps (those that land
 * inside the input) are computed once, so the inner loops run without
 * bounds checks; without Indices a row of outputs is updated per tap, so
 * the compares of neighbouring outputs overlap. float32 and float64 run
 * natively; float16, bfloat16,
 * int8 and uint8 are widened to float32 (exact) and narrowed back. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec_internal.h"
#include "exec/kernels/cnn_isa.h"
#include "exec/kernels/fast_math.h"
#include "exec/kernels/kernel_util.h"

#define MAXSP GWR_KU_MAXSP
#define ATTR_MAX ((int64_t)1 << 24)
#define DIM_MAX ((int64_t)1 << 36)

enum { POOL_MAX, POOL_AVG, POOL_LP };

typedef gwr_ku_window geom;

/* Per dim and output position: the first input index of the window, the
 * valid taps [lo, hi), and the taps inside the padded input (for
 * count_include_pad). */
typedef struct taps {
    int64_t *start[MAXSP], *lo[MAXSP], *hi[MAXSP], *padded[MAXSP];
    int64_t *mem;
} taps;

/* Checks x (N, C, spatial...) and reads the window of the layer into g,
 * output size included. auto_pad only when with_auto_pad. */
static gwr_status read_pool(gwr_kctx *k, const gwr_value *x, int with_auto_pad, geom *g) {
    if (x->rank < 3) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "X has rank %d, expected at least 3 (N, C, spatial...)", x->rank);
    if (x->rank > 2 + MAXSP) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "X has rank %d (1 to %d spatial dims supported)", x->rank, MAXSP);
    for (int i = 0; i < x->rank; i++)
        if (x->dims[i] > DIM_MAX) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "dims too large");
    int nsp = x->rank - 2, off = MAXSP - nsp;
    gwr_ku_window_init(g, nsp);
    const int64_t *ks;
    int r;
    if ((r = gwr_ku_attr_list(k, "kernel_shape", nsp, 1, ATTR_MAX, &ks)) < 0) return GWR_ERR_INVALID_ARG;
    if (!r) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "kernel_shape is required");
    for (int i = 0; i < nsp; i++) g->k[off + i] = ks[i], g->in[off + i] = x->dims[2 + i];
    if (gwr_ku_window_attrs(k, g, ATTR_MAX)) return GWR_ERR_INVALID_ARG;
    int ap = with_auto_pad ? gwr_ku_auto_pad(k) : GWR_KU_PAD_NOTSET;
    if (ap < 0) return GWR_ERR_INVALID_ARG;
    return gwr_ku_window_out(k, g, ap, gwr_k_int(k, "ceil_mode", 0) != 0);
}

static gwr_status taps_new(gwr_kctx *k, const geom *g, taps *t) {
    int64_t total = g->out[0] + g->out[1] + g->out[2];
    if (!(t->mem = gwr_malloc((size_t)(4 * total) * sizeof *t->mem))) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    int64_t *p = t->mem;
    for (int i = 0; i < MAXSP; i++) {
        t->start[i] = p, t->lo[i] = p + g->out[i], t->hi[i] = p + 2 * g->out[i], t->padded[i] = p + 3 * g->out[i];
        p += 4 * g->out[i];
        for (int64_t o = 0; o < g->out[i]; o++) {
            int64_t st = o * g->s[i] - g->pb[i], lo = gwr_ku_ceildiv(-st, g->d[i]), hi = gwr_ku_ceildiv(g->in[i] - st, g->d[i]);
            int64_t phi = gwr_ku_ceildiv(g->in[i] + g->pe[i] - st, g->d[i]);
            if (lo < 0) lo = 0;
            if (hi > g->k[i]) hi = g->k[i];
            if (hi < lo) hi = lo;
            if (phi > g->k[i]) phi = g->k[i];
            if (phi < 0) phi = 0;
            t->start[i][o] = st, t->lo[i][o] = lo, t->hi[i][o] = hi, t->padded[i][o] = phi;
        }
    }
    return GWR_OK;
}

/* Over planes of g->in into planes of g->out: max (and the flat index of
 * the first max when idx), average, or Lp norm. */
#define DEFINE_POOL(T, SFX)                                                                                             \
    static void pool_##SFX(int kind, const T *x, T *y, int64_t *idx, int64_t planes, const geom *g, const taps *t,     \
                           int include_pad, int storage_order, double p) {                                              \
        int64_t I0 = g->in[0], I1 = g->in[1], I2 = g->in[2], XS = I0 * I1 * I2;                                         \
        int64_t d0 = g->d[0], d1 = g->d[1], d2 = g->d[2];                                                               \
        for (int64_t pl = 0; pl < planes; pl++) {                                                                       \
            const T *xp = x + pl * XS;                                                                                  \
            for (int64_t o0 = 0; o0 < g->out[0]; o0++)                                                                  \
                for (int64_t o1 = 0; o1 < g->out[1]; o1++)                                                              \
                    for (int64_t o2 = 0; o2 < g->out[2]; o2++) {                                                        \
                        int64_t s0 = t->start[0][o0], s1 = t->start[1][o1], s2 = t->start[2][o2];                       \
                        int64_t l0 = t->lo[0][o0], h0 = t->hi[0][o0], l1 = t->lo[1][o1], h1 = t->hi[1][o1];             \
                        int64_t l2 = t->lo[2][o2], h2 = t->hi[2][o2];                                                   \
                        if (kind == POOL_MAX) {                                                                         \
                            T m = -(T)INFINITY;                                                                         \
                            int64_t at = -1;                                                                            \
                            for (int64_t k0 = l0; k0 < h0; k0++)                                                        \
                                for (int64_t k1 = l1; k1 < h1; k1++) {                                                  \
                                    int64_t row = ((s0 + k0 * d0) * I1 + s1 + k1 * d1) * I2 + s2;                       \
                                    for (int64_t k2 = l2; k2 < h2; k2++)                                                \
                                        if (xp[row + k2 * d2] > m) m = xp[row + k2 * d2], at = row + k2 * d2;           \
                                }                                                                                       \
                            *y++ = m;                                                                                   \
                            if (idx) {                                                                                  \
                                if (at >= 0 && storage_order) {                                                         \
                                    int64_t a2 = at % I2, a1 = (at / I2) % I1, a0 = at / (I1 * I2);                     \
                                    at = a0 + I0 * (a1 + I1 * a2);                                                      \
                                }                                                                                       \
                                *idx++ = at < 0 ? -1 : pl * XS + at;                                                    \
                            }                                                                                           \
                        } else {                                                                                        \
                            double sum = 0;                                                                             \
                            for (int64_t k0 = l0; k0 < h0; k0++)                                                        \
                                for (int64_t k1 = l1; k1 < h1; k1++) {                                                  \
                                    int64_t row = ((s0 + k0 * d0) * I1 + s1 + k1 * d1) * I2 + s2;                       \
                                    if (kind == POOL_AVG)                                                               \
                                        for (int64_t k2 = l2; k2 < h2; k2++) sum += xp[row + k2 * d2];                       \
                                    else if (p == 2)                                                                    \
                                        for (int64_t k2 = l2; k2 < h2; k2++) sum += (double)xp[row + k2 * d2] * xp[row + k2 * d2]; \
                                    else if (p == 1)                                                                    \
                                        for (int64_t k2 = l2; k2 < h2; k2++) sum += fabs((double)xp[row + k2 * d2]);         \
                                    else                                                                                \
                                        for (int64_t k2 = l2; k2 < h2; k2++) sum += pow(fabs((double)xp[row + k2 * d2]), p); \
                                }                                                                                       \
                            if (kind == POOL_AVG) {                                                                     \
                                int64_t n = include_pad ? t->padded[0][o0] * t->padded[1][o1] * t->padded[2][o2]        \
                                                        : (h0 - l0) * (h1 - l1) * (h2 - l2);                            \
                                *y++ = (T)(n ? sum / (double)n : NAN);                                                  \
                            } else {                                                                                    \
                                *y++ = (T)(p == 2 ? sqrt(sum) : p == 1 ? sum : pow(sum, 1.0 / p));                      \
                            }                                                                                           \
                        }                                                                                               \
                    }                                                                                                   \
        }                                                                                                               \
    }
DEFINE_POOL(float, f32)
DEFINE_POOL(double, f64)

/* The same without indices, a row of outputs at a time: every tap updates
 * a run of outputs, so the runs are independent chains (the per-output
 * loop above waits on each compare). ka / kb: per tap along dim 2, the
 * outputs whose read lands in the input; acc: O2 scratch doubles. */
#define DEFINE_POOL_ROWS(T, SFX)                                                                                        \
    static void pool_rows_##SFX(int kind, const T *x, T *y, int64_t planes, const geom *g, const taps *t, int include_pad, \
                                double p, const int64_t *ka, const int64_t *kb, double *acc) {                          \
        int64_t I1 = g->in[1], I2 = g->in[2], XS = g->in[0] * I1 * I2, O2 = g->out[2], s2 = g->s[2];                   \
        T *macc = (T *)(void *)acc;                                                                                     \
        for (int64_t pl = 0; pl < planes; pl++) {                                                                       \
            const T *xp = x + pl * XS;                                                                                  \
            for (int64_t o0 = 0; o0 < g->out[0]; o0++)                                                                  \
                for (int64_t o1 = 0; o1 < g->out[1]; o1++) {                                                            \
                    int64_t s0 = t->start[0][o0], s1 = t->start[1][o1];                                                 \
                    if (kind == POOL_MAX)                                                                               \
                        for (int64_t o2 = 0; o2 < O2; o2++) macc[o2] = -(T)INFINITY;                                    \
                    else                                                                                                \
                        for (int64_t o2 = 0; o2 < O2; o2++) acc[o2] = 0;                                                \
                    for (int64_t k0 = t->lo[0][o0]; k0 < t->hi[0][o0]; k0++)                                            \
                        for (int64_t k1 = t->lo[1][o1]; k1 < t->hi[1][o1]; k1++) {                                      \
                            const T *row = xp + ((s0 + k0 * g->d[0]) * I1 + s1 + k1 * g->d[1]) * I2;                    \
                            for (int64_t k2 = 0; k2 < g->k[2]; k2++) {                                                  \
                                int64_t st = k2 * g->d[2] - g->pb[2];                                                   \
                                if (kind == POOL_MAX && sizeof(T) == sizeof(float)) { /* vectorized: cnn_isa.h */   \
                                    if (ka[k2] < kb[k2])                                                                \
                                        gwr_ku_max_row_f32((float *)(void *)macc + ka[k2],                              \
                                                           (const float *)(const void *)row + ka[k2] * s2 + st, s2,     \
                                                           kb[k2] - ka[k2]);                                            \
                                } else if (kind == POOL_MAX) {                                                          \
                                    for (int64_t o2 = ka[k2]; o2 < kb[k2]; o2++) {                                      \
                                        T v = row[o2 * s2 + st];                                                        \
                                        macc[o2] = v > macc[o2] ? v : macc[o2];                                         \
                                    }                                                                                   \
                                } else if (kind == POOL_AVG) {                                                          \
                                    for (int64_t o2 = ka[k2]; o2 < kb[k2]; o2++) acc[o2] += row[o2 * s2 + st];          \
                                } else if (p == 2) {                                                                    \
                                    for (int64_t o2 = ka[k2]; o2 < kb[k2]; o2++)                                        \
                                        acc[o2] += (double)row[o2 * s2 + st] * row[o2 * s2 + st];                       \
                                } else {                                                                                \
                                    for (int64_t o2 = ka[k2]; o2 < kb[k2]; o2++)                                        \
                                        acc[o2] += p == 1 ? fabs((double)row[o2 * s2 + st]) : pow(fabs((double)row[o2 * s2 + st]), p); \
                                }                                                                                       \
                            }                                                                                           \
                        }                                                                                               \
                    if (kind == POOL_MAX) {                                                                             \
                        memcpy(y, macc, (size_t)O2 * sizeof *y);                                                        \
                    } else if (kind == POOL_AVG) {                                                                      \
                        int64_t n01 = include_pad ? t->padded[0][o0] * t->padded[1][o1]                                 \
                                                  : (t->hi[0][o0] - t->lo[0][o0]) * (t->hi[1][o1] - t->lo[1][o1]);      \
                        for (int64_t o2 = 0; o2 < O2; o2++) {                                                           \
                            int64_t n = n01 * (include_pad ? t->padded[2][o2] : t->hi[2][o2] - t->lo[2][o2]);           \
                            y[o2] = (T)(n ? acc[o2] / (double)n : NAN);                                                 \
                        }                                                                                               \
                    } else {                                                                                            \
                        for (int64_t o2 = 0; o2 < O2; o2++)                                                             \
                            y[o2] = (T)(p == 2 ? sqrt(acc[o2]) : p == 1 ? acc[o2] : pow(acc[o2], 1.0 / p));             \
                    }                                                                                                   \
                    y += O2;                                                                                            \
                }                                                                                                       \
        }                                                                                                               \
    }
DEFINE_POOL_ROWS(float, f32)
DEFINE_POOL_ROWS(double, f64)

/* ---- dtypes -------------------------------------------------------------- */

static int pool_dtype_ok(gwr_dtype t, int ints) {
    return gwr_ku_is_float(t) ||
           (ints && (t == GWR_INT8 || t == GWR_UINT8));
}

static const gwr_value *input0(gwr_kctx *k) {
    const gwr_value *x = k->nin > 0 ? k->in[0] : NULL;
    if (!x) gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input X is missing");
    return x;
}

/* Runs the pool of g over x into y (and indices into ind when given). */
static gwr_status pool_exec(gwr_kctx *k, int kind, const gwr_value *x, gwr_value *y, int64_t *ind, const geom *g, int include_pad,
                            int storage_order, double p) {
    taps t;
    gwr_status st = taps_new(k, g, &t);
    if (st) return st;
    int64_t planes = x->dims[0] * x->dims[1], K2 = g->k[2], O2 = g->out[2];
    int64_t *kr = ind ? NULL : gwr_malloc((size_t)(2 * K2) * sizeof *kr);
    double *acc = ind ? NULL : gwr_malloc((size_t)(O2 ? O2 : 1) * sizeof *acc);
    if (!ind && (!kr || !acc)) {
        gwr_free(t.mem), gwr_free(kr), gwr_free(acc);
        return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    }
    for (int64_t k2 = 0; kr && k2 < K2; k2++) gwr_ku_valid_range(O2, g->s[2], k2 * g->d[2] - g->pb[2], g->in[2], &kr[k2], &kr[K2 + k2]);
    const void *xv = x->data;
    void *yv = y->data;
    float *xf = NULL, *yf = NULL;
    if (x->dtype != GWR_FLOAT32 && x->dtype != GWR_FLOAT64) {
        xf = gwr_ku_widen(x), yf = gwr_malloc((size_t)(y->numel ? y->numel : 1) * sizeof *yf);
        xv = xf, yv = yf;
        if (!xf || !yf) st = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    }
    if (!st) {
        if (x->dtype == GWR_FLOAT64) {
            if (ind) pool_f64(kind, xv, yv, ind, planes, g, &t, include_pad, storage_order, p);
            else pool_rows_f64(kind, xv, yv, planes, g, &t, include_pad, p, kr, kr + K2, acc);
        } else {
            if (ind) pool_f32(kind, xv, yv, ind, planes, g, &t, include_pad, storage_order, p);
            else pool_rows_f32(kind, xv, yv, planes, g, &t, include_pad, p, kr, kr + K2, acc);
        }
        if (yf) gwr_ku_narrow(yf, y);
    }
    gwr_free(xf), gwr_free(yf), gwr_free(kr), gwr_free(acc), gwr_free(t.mem);
    return st;
}

static gwr_status out_dims(const gwr_value *x, const geom *g, int64_t *dims) {
    dims[0] = x->dims[0], dims[1] = x->dims[1];
    for (int i = 0; i < g->nsp; i++) dims[2 + i] = g->out[MAXSP - g->nsp + i];
    return GWR_OK;
}

/* The Lp pools' p: an int (opset 2+) or a float (opset 1). */
static int read_p(gwr_kctx *k, double *p) {
    int64_t pi;
    float pf;
    if (!gwr_layer_get_int(k->layer, "p", &pi)) *p = (double)pi;
    else if (!gwr_layer_get_float(k->layer, "p", &pf)) *p = pf;
    else *p = 2;
    if (!(*p >= 1 && *p <= 1e6)) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "p = %g, expected at least 1", *p), -1;
    return 0;
}

static gwr_status pool_op(gwr_kctx *k, int kind) {
    const gwr_value *x = input0(k);
    if (!x) return GWR_ERR_INVALID_ARG;
    if (!pool_dtype_ok(x->dtype, kind == POOL_MAX)) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "dtype %s is not supported", gwr_dtype_name(x->dtype));
    geom g = {0};
    gwr_status st = read_pool(k, x, 1, &g);
    if (st) return st;
    double p = 2;
    if (kind == POOL_LP && read_p(k, &p)) return GWR_ERR_INVALID_ARG;
    int64_t storage_order = gwr_k_int(k, "storage_order", 0);
    if (storage_order != 0 && storage_order != 1)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "storage_order = %lld, expected 0 or 1", (long long)storage_order);
    int64_t dims[2 + MAXSP];
    out_dims(x, &g, dims);
    gwr_value *y = gwr_k_out(k, 0, x->dtype, x->rank, dims), *ind = NULL;
    if (!y) return GWR_ERR_NOMEM;
    if (kind == POOL_MAX && k->nout > 1 && gwr_k_out_used(k, 1) && !(ind = gwr_k_out(k, 1, GWR_INT64, x->rank, dims)))
        return GWR_ERR_NOMEM;
    return pool_exec(k, kind, x, y, ind ? ind->data : NULL, &g, (int)gwr_k_int(k, "count_include_pad", 0), (int)storage_order, p);
}

static gwr_status k_maxpool(gwr_kctx *k) { return pool_op(k, POOL_MAX); }
static gwr_status k_avgpool(gwr_kctx *k) { return pool_op(k, POOL_AVG); }
static gwr_status k_lppool(gwr_kctx *k) { return pool_op(k, POOL_LP); }

/* ---- global pools -------------------------------------------------------- */

/* The sum of n float32 in float64, in eight independent lanes the compiler
 * vectorizes: one serial chain of double adds (and the per-element choice
 * of the pool's kind) held squeeze-excite's GlobalAveragePool at a add's
 * latency per element. Cloned for AVX-512 / AVX2 (GWR_VEC_CLONES: eight
 * doubles in one or two registers instead of four SSE2 ones); the lanes
 * and the order of the adds are the same in every clone, so are the bits.
 * A name no other unit has: clang makes the clones' resolver global. */
GWR_VEC_CLONES static double pool_gap_sum_f32(const float *x, int64_t n) {
    double s[8] = {0, 0, 0, 0, 0, 0, 0, 0}, t = 0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) s[j] += (double)x[i + j];
    for (; i < n; i++) t += (double)x[i];
    return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7])) + t;
}

/* Planes [p0, p1) of a global pool (gjob): one output each, so shares
 * of planes run in parallel. */
typedef struct gjob {
    int kind;
    int64_t S;
    double p;
    const float *xf32;
    const double *xf64;
    void *y;
    float *yf; /* float16 / bfloat16 / int8: float32 results, narrowed after */
} gjob;

static void global_planes(void *ctx, int64_t p0, int64_t p1) {
    const gjob *j = ctx;
    int kind = j->kind;
    int64_t S = j->S;
    double p = j->p;
    const float *xf32 = j->xf32;
    const double *xf64 = j->xf64;
    float *yf = j->yf;
    for (int64_t pl = p0; pl < p1; pl++) {
        double r;
        if (kind == POOL_MAX) {
            r = -INFINITY;
            if (xf64) {
                for (int64_t i = 0; i < S; i++)
                    if (xf64[pl * S + i] > r) r = xf64[pl * S + i];
            } else {
                float m = -INFINITY;
                for (int64_t i = 0; i < S; i++)
                    if (xf32[pl * S + i] > m) m = xf32[pl * S + i];
                r = m;
            }
        } else if (kind == POOL_AVG && !xf64) {
            r = S ? pool_gap_sum_f32(xf32 + pl * S, S) / (double)S : NAN;
        } else {
            double sum = 0;
            for (int64_t i = 0; i < S; i++) {
                double v = xf64 ? xf64[pl * S + i] : xf32[pl * S + i];
                sum += kind == POOL_AVG ? v : p == 2 ? v * v : p == 1 ? fabs(v) : pow(fabs(v), p);
            }
            r = kind == POOL_AVG ? (S ? sum / (double)S : NAN) : p == 2 ? sqrt(sum) : p == 1 ? sum : pow(sum, 1.0 / p);
        }
        if (xf64) ((double *)j->y)[pl] = r;
        else if (!yf) ((float *)j->y)[pl] = (float)r;
        else yf[pl] = (float)r;
    }
}

static gwr_status global_op(gwr_kctx *k, int kind) {
    const gwr_value *x = input0(k);
    if (!x) return GWR_ERR_INVALID_ARG;
    if (!pool_dtype_ok(x->dtype, kind == POOL_MAX)) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "dtype %s is not supported", gwr_dtype_name(x->dtype));
    if (x->rank < 2) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "X has rank %d, expected at least 2 (N, C, spatial...)", x->rank);
    double p = 2;
    if (kind == POOL_LP && read_p(k, &p)) return GWR_ERR_INVALID_ARG;
    int64_t dims[64];
    if (x->rank > 64) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "rank %d", x->rank);
    int64_t planes = x->dims[0] * x->dims[1], S = 1;
    for (int i = 0; i < x->rank; i++) dims[i] = i < 2 ? x->dims[i] : 1;
    for (int i = 2; i < x->rank; i++) S *= x->dims[i];
    gwr_value *y = gwr_k_out(k, 0, x->dtype, x->rank, dims);
    if (!y) return GWR_ERR_NOMEM;
    const float *xf32 = x->dtype == GWR_FLOAT32 ? x->data : NULL;
    const double *xf64 = x->dtype == GWR_FLOAT64 ? x->data : NULL;
    float *tmp = NULL, *yf = NULL;
    if (!xf32 && !xf64) {
        tmp = gwr_ku_widen(x), yf = gwr_malloc((size_t)(planes ? planes : 1) * sizeof *yf);
        if (!tmp || !yf) {
            gwr_free(tmp), gwr_free(yf);
            return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
        }
        xf32 = tmp;
    }
    gjob j = {kind, S, p, xf32, xf64, y->data, yf};
    gwr_k_parallel(k, planes, S ? 4096 / S + 1 : planes, global_planes, &j); /* about 4096 inputs a share at least */
    if (yf) gwr_ku_narrow(yf, y);
    gwr_free(tmp), gwr_free(yf);
    return GWR_OK;
}

static gwr_status k_global_maxpool(gwr_kctx *k) { return global_op(k, POOL_MAX); }
static gwr_status k_global_avgpool(gwr_kctx *k) { return global_op(k, POOL_AVG); }
static gwr_status k_global_lppool(gwr_kctx *k) { return global_op(k, POOL_LP); }

/* ---- MaxUnpool ----------------------------------------------------------- */

/* X and I of one shape; Y zero except Y.flat[I[j]] = X[j]. The output shape
 * is the optional third input or (in - 1) * stride + kernel - pads. */
static gwr_status k_maxunpool(gwr_kctx *k) {
    const gwr_value *x = input0(k), *ix = k->nin > 1 ? k->in[1] : NULL, *os = k->nin > 2 ? k->in[2] : NULL;
    if (!x) return GWR_ERR_INVALID_ARG;
    if (!ix) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input I is missing");
    if (!pool_dtype_ok(x->dtype, 0)) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "dtype %s is not supported", gwr_dtype_name(x->dtype));
    if (ix->dtype != GWR_INT64) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "I must be int64, not %s", gwr_dtype_name(ix->dtype));
    if (ix->rank != x->rank || memcmp(ix->dims, x->dims, (size_t)x->rank * sizeof *x->dims))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "I must have the shape of X");
    if (x->rank < 3 || x->rank > 2 + MAXSP)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "X has rank %d, expected 3 to %d", x->rank, 2 + MAXSP);
    int nsp = x->rank - 2;
    const int64_t *ks, *st, *pd;
    int r;
    if ((r = gwr_ku_attr_list(k, "kernel_shape", nsp, 1, ATTR_MAX, &ks)) < 0) return GWR_ERR_INVALID_ARG;
    if (!r) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "kernel_shape is required");
    int hs = gwr_ku_attr_list(k, "strides", nsp, 1, ATTR_MAX, &st), hp = gwr_ku_attr_list(k, "pads", 2 * nsp, 0, ATTR_MAX, &pd);
    if (hs < 0 || hp < 0) return GWR_ERR_INVALID_ARG;
    int64_t inf[2 + MAXSP], dims[2 + MAXSP]; /* the shape the indices address, and the output's */
    inf[0] = x->dims[0], inf[1] = x->dims[1];
    for (int i = 0; i < nsp; i++) {
        if (x->dims[2 + i] > DIM_MAX) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "dims too large");
        int64_t v = (x->dims[2 + i] - 1) * (hs ? st[i] : 1) + ks[i] - (hp ? pd[i] + pd[nsp + i] : 0);
        if (v < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "output spatial dim %d would be %lld", i, (long long)v);
        inf[2 + i] = v;
    }
    memcpy(dims, inf, sizeof dims);
    if (os) {
        int64_t n = gwr_k_in_ints(k, 2, dims, 2 + MAXSP);
        if (n < 0) return GWR_ERR_INVALID_ARG;
        if (n != x->rank) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "output_shape has %lld values, expected %d", (long long)n, x->rank);
        if (dims[0] != x->dims[0] || dims[1] != x->dims[1])
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "output_shape must keep N and C of X");
        for (int i = 2; i < x->rank; i++)
            if (dims[i] < 0 || dims[i] > DIM_MAX) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "output_shape[%d] = %lld", i, (long long)dims[i]);
    }
    gwr_value *y = gwr_k_out(k, 0, x->dtype, x->rank, dims);
    if (!y) return GWR_ERR_NOMEM;
    memset(y->data, 0, y->nbytes);
    /* Indices address the shape the attributes imply (as MaxPool made
     * them); that block sits at the origin of a given output_shape. */
    int64_t ninf = gwr_shape_numel(x->rank, inf);
    const int64_t *iv = ix->data;
    size_t esz = gwr_dtype_size(x->dtype);
    for (int64_t j = 0; j < x->numel; j++) {
        if (iv[j] < 0 || iv[j] >= ninf)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "index %lld (I[%lld]) is outside the %lld elements of the unpooled shape",
                              (long long)iv[j], (long long)j, (long long)ninf);
        int64_t rem = iv[j], at = 0, mul = 1, inside = 1;
        for (int d = x->rank - 1; d >= 0; d--) {
            int64_t c = rem % inf[d];
            rem /= inf[d];
            if (c >= dims[d]) inside = 0;
            at += c * mul, mul *= dims[d];
        }
        if (inside) memcpy((char *)y->data + (size_t)at * esz, (const char *)x->data + (size_t)j * esz, esz);
    }
    return GWR_OK;
}

const gwr_kernel_entry gwr_kernels_pool[] = {
    GWR_KERNEL(MaxPool, k_maxpool),
    GWR_KERNEL(AveragePool, k_avgpool),
    GWR_KERNEL(LpPool, k_lppool),
    GWR_KERNEL(GlobalMaxPool, k_global_maxpool),
    GWR_KERNEL(GlobalAveragePool, k_global_avgpool),
    GWR_KERNEL(GlobalLpPool, k_global_lppool),
    GWR_KERNEL(MaxUnpool, k_maxunpool),
    {.fn = NULL},
};
