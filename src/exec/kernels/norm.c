/* norm.c - the norm kernel family: BatchNormalization,
 * InstanceNormalization, LayerNormalization, RMSNormalization,
 * GroupNormalization, MeanVarianceNormalization, LRN, Softmax, LogSoftmax and Hardmax.
 *
 * float32 has direct loops on the hot paths (Softmax and LayerNormalization
 * over the last axis, BatchNormalization); everything else loads rows as
 * doubles, computes, and stores back in the value's dtype (float16 and
 * bfloat16 included). Statistics accumulate in double. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec/kernels/fast_math.h"
#include "exec/kernels/kernel_util.h"

/* A whole value as doubles (malloc'd; NULL after gwr_k_fail). */
static double *all_f64(gwr_kctx *k, const gwr_value *v) {
    double *d = gwr_malloc((size_t)(v->numel ? v->numel : 1) * sizeof *d);
    if (!d) gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    else gwr_ku_load_f64(v, 0, v->numel, d);
    return d;
}

/* A per-channel parameter: input i, floating, holding exactly n values
 * (any shape); copied into dst as doubles. */
static int param_vec(gwr_kctx *k, int i, const char *what, int64_t n, double *dst) {
    const gwr_value *v = gwr_ku_need_float(k, i, what);
    if (!v) return -1;
    if (v->numel != n) {
        gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %d (%s) has %lld values, expected %lld", i, what, (long long)v->numel,
                   (long long)n);
        return -1;
    }
    gwr_ku_load_f64(v, 0, n, dst);
    return 0;
}

/* ---- Softmax, LogSoftmax, Hardmax ---------------------------------------- */

enum { SM_SOFT, SM_LOG, SM_HARD };

/* float32 row kernels written so that gcc and clang vectorize them: no
 * branches, eight independent partial sums (floating-point addition is
 * not reassociated without them). gcc vectorizes only at -O3. HOTV ones
 * are also compiled per CPU (GWR_VEC_CLONES, fast_math.h): AVX-512 / AVX2
 * where present. */
#if defined(__GNUC__) && !defined(__clang__)
#define HOT __attribute__((optimize("O3")))
#else
#define HOT
#endif
#define HOTV GWR_VEC_CLONES HOT

/* exp(x) for x <= 0 (no NaN): 0 below -87, else within 3e-7 relative. */
static inline float exp_nonpos(float x) {
    int32_t keep = -(int32_t)(x >= -87.0f), xb, lo, rb;
    float lim = -87.0f, xs, sc, p;
    memcpy(&xb, &x, 4);
    memcpy(&lo, &lim, 4);
    xb = (xb & keep) | (lo & ~keep);
    memcpy(&xs, &xb, 4);
    float n = (xs * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round(x / ln 2) */
    float r = xs - n * 0.693145751953125f - n * 1.428606765330187045e-06f;
    p = 1.f + r * (1.f + r * (0.5f + r * (0.16666667f + r * (0.041666668f + r * (0.008333334f + r * 0.0013888889f)))));
    int32_t e = ((int32_t)n + 127) << 23; /* 2^n, n in [-126, 0] */
    memcpy(&sc, &e, 4);
    p *= sc;
    memcpy(&rb, &p, 4);
    rb &= keep;
    memcpy(&p, &rb, 4);
    return p;
}

static HOTV float max_f32(const float *x, int64_t n, int *nan) {
    float a[8];
    int bad[8] = {0};
    for (int q = 0; q < 8; q++) a[q] = -INFINITY;
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int q = 0; q < 8; q++) {
            a[q] = x[j + q] > a[q] ? x[j + q] : a[q];
            bad[q] |= x[j + q] != x[j + q];
        }
    float m = -INFINITY;
    int b = 0;
    for (; j < n; j++) m = x[j] > m ? x[j] : m, b |= x[j] != x[j];
    for (int q = 0; q < 8; q++) m = a[q] > m ? a[q] : m, b |= bad[q];
    *nan = b;
    return m;
}

/* sum_f32 and sqdev_f32 (LayerNormalization's two passes over a row, the
 * row hot in L1 for the second) in explicit sixteen-float vectors, two of
 * them so that two additions are in flight: one AVX-512 register each in
 * that clone, two AVX2 or four SSE registers in the others. (The 8-lane
 * arrays they replace made GCC transpose the row with permutes in the
 * AVX-512 clone: sqdev took 2.5x sum's time.) The sums differ from a
 * serial loop by reassociation only. */
typedef float v16f __attribute__((vector_size(64)));
#define LD16(v, p) memcpy(&(v), (p), sizeof(v16f))

static HOTV float sum_f32(const float *x, int64_t n) {
    v16f a = {0}, b = {0}, u, w;
    int64_t j = 0;
    for (; j + 32 <= n; j += 32) {
        LD16(u, x + j), LD16(w, x + j + 16);
        a += u, b += w;
    }
    if (j + 16 <= n) {
        LD16(u, x + j);
        a += u, j += 16;
    }
    a += b;
    float s = 0;
    for (; j < n; j++) s += x[j];
    for (int q = 0; q < 16; q++) s += a[q];
    return s;
}

/* Sum of (x - m)^2. */
static HOTV float sqdev_f32(const float *x, int64_t n, float m) {
    v16f a = {0}, b = {0}, u, w;
    int64_t j = 0;
    for (; j + 32 <= n; j += 32) {
        LD16(u, x + j), LD16(w, x + j + 16);
        u -= m, w -= m;
        a += u * u, b += w * w;
    }
    if (j + 16 <= n) {
        LD16(u, x + j);
        u -= m, a += u * u, j += 16;
    }
    a += b;
    float s = 0;
    for (; j < n; j++) s += (x[j] - m) * (x[j] - m);
    for (int q = 0; q < 16; q++) s += a[q];
    return s;
}

float gwr_ku_row_sqdev_f32(const float *x, int64_t n, float m) { return sqdev_f32(x, n, m); }

static HOTV void exp_shift_f32(const float *restrict x, float *restrict y, int64_t n, float m) {
    for (int64_t j = 0; j < n; j++) y[j] = exp_nonpos(x[j] - m);
}

static HOT void scale_f32(float *y, int64_t n, float a) {
    for (int64_t j = 0; j < n; j++) y[j] *= a;
}

static HOT void shift_f32(const float *restrict x, float *restrict y, int64_t n, float b) {
    for (int64_t j = 0; j < n; j++) y[j] = x[j] - b;
}

static HOT void affine_f32(const float *restrict x, float *restrict y, int64_t n, float a, float b) {
    for (int64_t j = 0; j < n; j++) y[j] = x[j] * a + b;
}

/* y = (x - m) * inv * s + b, per element s and b. */
static HOTV void norm_affine_f32(const float *restrict x, float *restrict y, int64_t n, float m, float inv,
                                const float *restrict s, const float *restrict b) {
    for (int64_t j = 0; j < n; j++) y[j] = (x[j] - m) * inv * s[j] + b[j];
}

static void softmax_f64(double *x, int64_t n, int64_t st, int kind);

/* A contiguous float32 row; rows with NaN or infinite maxima go the
 * double way, which keeps the reference's NaN semantics. */
static void softmax_row_f32(const float *x, float *y, int64_t n, int kind, double *tmp) {
    int nan;
    float m = max_f32(x, n, &nan);
    if (nan || !isfinite(m)) {
        for (int64_t j = 0; j < n; j++) tmp[j] = x[j];
        softmax_f64(tmp, n, 1, kind);
        for (int64_t j = 0; j < n; j++) y[j] = (float)tmp[j];
        return;
    }
    exp_shift_f32(x, y, n, m);
    float s = sum_f32(y, n);
    if (kind == SM_SOFT) scale_f32(y, n, 1.0f / s);
    else shift_f32(x, y, n, m + logf(s));
}

/* Along a strided axis: x[j * st] for j < n. */
static void softmax_f64(double *x, int64_t n, int64_t st, int kind) {
    double m = -INFINITY;
    int64_t arg = 0;
    for (int64_t j = 0; j < n; j++) {
        double v = x[j * st];
        if (v > m || (v != v && m == m)) m = v, arg = j;
    }
    if (kind == SM_HARD) {
        for (int64_t j = 0; j < n; j++) x[j * st] = j == arg;
        return;
    }
    double s = 0;
    for (int64_t j = 0; j < n; j++) s += exp(x[j * st] - m);
    if (kind == SM_SOFT) {
        for (int64_t j = 0; j < n; j++) x[j * st] = exp(x[j * st] - m) / s;
    } else {
        double l = m + log(s);
        for (int64_t j = 0; j < n; j++) x[j * st] -= l;
    }
}

/* Softmax of a half-type row (float16, bfloat16) step by step in that
 * type, as the ONNX reference computes it with NumPy (and ml_dtypes for
 * bfloat16): x - max, its exp and the quotient each rounded to the type;
 * the sum of the rounded exps in float32 then rounded (NumPy's float16
 * sum), or rounded after each addition (ml_dtypes' bfloat16 add). Rows
 * with NaN or an infinite maximum keep the double way's semantics. */
static void softmax_half(double *x, int64_t n, int64_t st, gwr_dtype t) {
    double m = -INFINITY;
    for (int64_t j = 0; j < n; j++) {
        double v = x[j * st];
        if (v != v || v > m) m = v;
    }
    if (m != m || !isfinite(m)) {
        softmax_f64(x, n, st, SM_SOFT);
        return;
    }
    double s = 0;
    float s32 = 0;
    for (int64_t j = 0; j < n; j++) {
        double e = gwr_ku_round(t, exp(gwr_ku_round(t, x[j * st] - m)));
        x[j * st] = e;
        if (t == GWR_BFLOAT16) s = gwr_ku_round(t, s + e);
        else s32 += (float)e;
    }
    if (t != GWR_BFLOAT16) s = gwr_ku_round(t, s32);
    for (int64_t j = 0; j < n; j++) x[j * st] = gwr_ku_round(t, x[j * st] / s);
}

/* softmax_family's float32 rows: one loop index a row. */
typedef struct sm_loop {
    const float *x;
    float *y;
    int64_t n;
    int kind;
    double *tmp; /* n doubles per thread */
} sm_loop;

static void softmax_range(void *ctx, int64_t r0, int64_t r1) {
    const sm_loop *l = ctx;
    double *tmp = l->tmp + (int64_t)gwr_par_thread() * l->n;
    for (int64_t o = r0; o < r1; o++) softmax_row_f32(l->x + o * l->n, l->y + o * l->n, l->n, l->kind, tmp);
}

static gwr_status softmax_family(gwr_kctx *k, int kind) {
    const gwr_value *x = gwr_ku_need_float(k, 0, "input");
    if (!x) return GWR_ERR_INVALID_ARG;
    int r = x->rank;
    int v13 = k->opset <= 0 || k->opset >= 13; /* no import (-1, or 0): the latest */
    int64_t axis = gwr_k_int(k, "axis", v13 ? -1 : 1);
    int64_t outer = 1, n = 1, inner = 1;
    if (r > 0) {
        /* Before opset 13 the input is coerced to 2-D at axis (axis may be r). */
        int a = v13 ? gwr_axis(axis, r) : axis >= -r && axis <= r ? (int)(axis < 0 ? axis + r : axis) : -1;
        if (a < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)axis, r);
        for (int i = 0; i < r; i++) {
            if (i < a) outer *= x->dims[i];
            else if (i == a || !v13) n *= x->dims[i];
            else inner *= x->dims[i];
        }
    }
    gwr_value *y = gwr_k_out(k, 0, x->dtype, r, x->dims);
    if (!y) return GWR_ERR_NOMEM;
    if (!y->numel) return GWR_OK;
    if (x->dtype == GWR_FLOAT32 && inner == 1 && kind != SM_HARD) {
        int64_t grain = gwr_par_grain(4 * n); /* max, exp, sum, scale */
        int nt = gwr_tpool_splits(k->tpool, outer, grain) ? gwr_tpool_size(k->tpool) : 1;
        sm_loop l = {x->data, y->data, n, kind, gwr_malloc((size_t)(nt * n) * sizeof(double))};
        if (!l.tmp) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
        gwr_k_parallel(k, outer, grain, softmax_range, &l);
        gwr_free(l.tmp);
        return GWR_OK;
    }
    double *b = gwr_malloc((size_t)(n * inner) * sizeof *b);
    if (!b) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    for (int64_t o = 0; o < outer; o++) {
        gwr_ku_load_f64(x, o * n * inner, n * inner, b);
        for (int64_t j = 0; j < inner; j++)
            if (kind == SM_SOFT && gwr_ku_is_half(x->dtype)) softmax_half(b + j, n, inner, x->dtype);
            else softmax_f64(b + j, n, inner, kind);
        gwr_ku_store_f64(y, o * n * inner, n * inner, b);
    }
    gwr_free(b);
    return GWR_OK;
}

static gwr_status k_softmax(gwr_kctx *k) { return softmax_family(k, SM_SOFT); }
static gwr_status k_log_softmax(gwr_kctx *k) { return softmax_family(k, SM_LOG); }
static gwr_status k_hardmax(gwr_kctx *k) { return softmax_family(k, SM_HARD); }

/* ---- BatchNormalization --------------------------------------------------- */

static gwr_status k_batch_norm(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_float(k, 0, "X");
    if (!x) return GWR_ERR_INVALID_ARG;
    if (k->nin < 5) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "takes 5 inputs (X, scale, B, mean, var), got %d", k->nin);
    if (x->rank < 2) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "X must have rank 2 or more (N x C x ...), got %d", x->rank);
    int64_t N = x->dims[0], C = x->dims[1], S = 1;
    for (int i = 2; i < x->rank; i++) S *= x->dims[i];
    double eps = gwr_k_float(k, "epsilon", 1e-5f), mom = gwr_k_float(k, "momentum", 0.9f);
    /* Before opset 9, spatial = 0 gives one parameter per C x D1 x ... element. */
    int per_elem = k->opset > 0 && k->opset < 9 && gwr_k_int(k, "spatial", 1) == 0;
    int training;
    if (k->opset <= 0 || k->opset >= 14) {
        training = gwr_k_int(k, "training_mode", 0) != 0;
    } else {
        int used = 0;
        for (int o = 1; o < k->nout; o++) used |= gwr_k_out_used(k, o);
        training = used && gwr_k_int(k, "is_test", 0) == 0;
    }
    if (training) per_elem = 0;
    int64_t P = per_elem ? C * S : C; /* parameters */
    double *pm = gwr_malloc((size_t)(4 * (P ? P : 1)) * sizeof *pm);
    if (!pm) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    double *sc = pm, *bi = pm + P, *mean = pm + 2 * P, *var = pm + 3 * P;
    gwr_status rc = GWR_OK;
    if (param_vec(k, 1, "scale", P, sc) || param_vec(k, 2, "B", P, bi) || param_vec(k, 3, "mean", P, mean) ||
        param_vec(k, 4, "var", P, var)) {
        gwr_free(pm);
        return GWR_ERR_INVALID_ARG;
    }
    gwr_value *y = gwr_k_out(k, 0, x->dtype, x->rank, x->dims);
    if (!y) {
        gwr_free(pm);
        return GWR_ERR_NOMEM;
    }
    double *bm = NULL, *bv = NULL;
    if (training) {
        /* Batch statistics over N and the spatial dims; population variance. */
        bm = gwr_calloc((size_t)(2 * (C ? C : 1)), sizeof *bm);
        double *row = gwr_malloc((size_t)(S ? S : 1) * sizeof *row);
        if (!bm || !row) {
            gwr_free(row), gwr_free(bm), gwr_free(pm);
            return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
        }
        bv = bm + C;
        double cnt = (double)(N * S);
        for (int64_t c = 0; c < C; c++) {
            double s = 0, q = 0;
            for (int64_t nn = 0; nn < N; nn++) {
                gwr_ku_load_f64(x, (nn * C + c) * S, S, row);
                for (int64_t j = 0; j < S; j++) s += row[j];
            }
            double m = cnt > 0 ? s / cnt : 0;
            for (int64_t nn = 0; nn < N; nn++) {
                gwr_ku_load_f64(x, (nn * C + c) * S, S, row);
                for (int64_t j = 0; j < S; j++) q += (row[j] - m) * (row[j] - m);
            }
            bm[c] = m, bv[c] = cnt > 0 ? q / cnt : 0;
        }
        gwr_free(row);
        /* Running statistics (opset 14+: outputs 1, 2; before: 1, 2 and the saved 3, 4). */
        for (int o = 1; o < k->nout && o <= 4; o++) {
            if (!gwr_k_out_used(k, o)) continue;
            const gwr_value *like = k->in[o == 2 || o == 4 ? 4 : 3];
            gwr_value *ov = gwr_k_out(k, o, like->dtype, 1, &C);
            if (!ov) {
                gwr_free(bm), gwr_free(pm);
                return GWR_ERR_NOMEM;
            }
            for (int64_t c = 0; c < C; c++) {
                double v = o == 1 ? mean[c] * mom + bm[c] * (1 - mom)
                           : o == 2 ? var[c] * mom + bv[c] * (1 - mom)
                           : o == 3 ? bm[c] : bv[c];
                gwr_v_set_f64(ov, c, v);
            }
        }
        for (int64_t c = 0; c < C; c++) mean[c] = bm[c], var[c] = bv[c];
    }
    /* y = x * a + b per parameter. */
    for (int64_t p = 0; p < P; p++) {
        double a = sc[p] / sqrt(var[p] + eps);
        sc[p] = a, bi[p] = bi[p] - mean[p] * a;
    }
    if (x->dtype == GWR_FLOAT32) {
        const float *xs = x->data;
        float *ys = y->data;
        for (int64_t nn = 0; nn < N; nn++)
            for (int64_t c = 0; c < C; c++) {
                const float *xr = xs + (nn * C + c) * S;
                float *yr = ys + (nn * C + c) * S;
                if (!per_elem) {
                    affine_f32(xr, yr, S, (float)sc[c], (float)bi[c]);
                } else {
                    for (int64_t j = 0; j < S; j++) yr[j] = (float)(xr[j] * sc[c * S + j] + bi[c * S + j]);
                }
            }
    } else {
        double *row = gwr_malloc((size_t)(S ? S : 1) * sizeof *row);
        if (!row) rc = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
        for (int64_t nn = 0; row && nn < N; nn++)
            for (int64_t c = 0; c < C; c++) {
                gwr_ku_load_f64(x, (nn * C + c) * S, S, row);
                for (int64_t j = 0; j < S; j++) {
                    int64_t p = per_elem ? c * S + j : c;
                    row[j] = row[j] * sc[p] + bi[p];
                }
                gwr_ku_store_f64(y, (nn * C + c) * S, S, row);
            }
        gwr_free(row);
    }
    gwr_free(bm), gwr_free(pm);
    return rc;
}

/* ---- InstanceNormalization, GroupNormalization --------------------------- */

/* Mean and 1/sqrt(var + eps) of n doubles. */
static void moments(const double *x, int64_t n, double eps, double *mean, double *inv) {
    double s = 0, q = 0;
    for (int64_t j = 0; j < n; j++) s += x[j];
    double m = n ? s / (double)n : 0;
    for (int64_t j = 0; j < n; j++) q += (x[j] - m) * (x[j] - m);
    *mean = m;
    *inv = 1.0 / sqrt((n ? q / (double)n : 0) + eps);
}

static gwr_status k_instance_norm(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_float(k, 0, "input");
    if (!x) return GWR_ERR_INVALID_ARG;
    if (k->nin < 3) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "takes 3 inputs (input, scale, B), got %d", k->nin);
    if (x->rank < 2) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input must have rank 2 or more (N x C x ...), got %d", x->rank);
    int64_t N = x->dims[0], C = x->dims[1], S = 1;
    for (int i = 2; i < x->rank; i++) S *= x->dims[i];
    double eps = gwr_k_float(k, "epsilon", 1e-5f);
    double *pm = gwr_malloc((size_t)(2 * C + S + 1) * sizeof *pm);
    if (!pm) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    double *sc = pm, *bi = pm + C, *row = pm + 2 * C;
    if (param_vec(k, 1, "scale", C, sc) || param_vec(k, 2, "B", C, bi)) {
        gwr_free(pm);
        return GWR_ERR_INVALID_ARG;
    }
    gwr_value *y = gwr_k_out(k, 0, x->dtype, x->rank, x->dims);
    if (!y) {
        gwr_free(pm);
        return GWR_ERR_NOMEM;
    }
    for (int64_t nn = 0; nn < N; nn++)
        for (int64_t c = 0; c < C; c++) {
            int64_t off = (nn * C + c) * S;
            double m, inv;
            gwr_ku_load_f64(x, off, S, row);
            moments(row, S, eps, &m, &inv);
            double a = inv * sc[c], b = bi[c] - m * a;
            for (int64_t j = 0; j < S; j++) row[j] = row[j] * a + b;
            gwr_ku_store_f64(y, off, S, row);
        }
    gwr_free(pm);
    return GWR_OK;
}

static gwr_status k_group_norm(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_float(k, 0, "X");
    if (!x) return GWR_ERR_INVALID_ARG;
    if (k->nin < 3) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "takes 3 inputs (X, scale, bias), got %d", k->nin);
    if (x->rank < 2) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "X must have rank 2 or more (N x C x ...), got %d", x->rank);
    int64_t G = gwr_k_int(k, "num_groups", 0);
    int64_t N = x->dims[0], C = x->dims[1], S = 1;
    for (int i = 2; i < x->rank; i++) S *= x->dims[i];
    if (G <= 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "num_groups must be given and positive");
    if (C % G) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%lld channels do not split into %lld groups", (long long)C, (long long)G);
    const gwr_value *s = gwr_ku_need_float(k, 1, "scale");
    if (!s) return GWR_ERR_INVALID_ARG;
    /* Opset 18: one scale per group; 21: one per channel. */
    int64_t P = s->numel == C && (s->numel != G || k->opset <= 0 || k->opset >= 21) ? C : G;
    double eps = gwr_k_float(k, "epsilon", 1e-5f);
    int64_t blk = C / G * S;
    double *pm = gwr_malloc((size_t)(2 * P + blk + 1) * sizeof *pm);
    if (!pm) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    double *sc = pm, *bi = pm + P, *row = pm + 2 * P;
    if (param_vec(k, 1, "scale", P, sc) || param_vec(k, 2, "bias", P, bi)) {
        gwr_free(pm);
        return GWR_ERR_INVALID_ARG;
    }
    gwr_value *y = gwr_k_out(k, 0, x->dtype, x->rank, x->dims);
    if (!y) {
        gwr_free(pm);
        return GWR_ERR_NOMEM;
    }
    for (int64_t nn = 0; nn < N; nn++)
        for (int64_t g = 0; g < G; g++) {
            int64_t off = (nn * G + g) * blk;
            double m, inv;
            gwr_ku_load_f64(x, off, blk, row);
            moments(row, blk, eps, &m, &inv);
            for (int64_t j = 0; j < blk; j++) {
                int64_t p = P == C ? g * (C / G) + j / (S ? S : 1) : g;
                row[j] = (row[j] - m) * inv * sc[p] + bi[p];
            }
            gwr_ku_store_f64(y, off, blk, row);
        }
    gwr_free(pm);
    return GWR_OK;
}

/* ---- LayerNormalization ------------------------------------------------------ */

/* Broadcasts parameter input i (shape unidirectionally broadcastable to
 * dims[0..nd)) into n doubles. */
static int bcast_param(gwr_kctx *k, int i, const char *what, int nd, const int64_t *dims, int64_t n, double *dst) {
    const gwr_value *v = gwr_ku_need_float(k, i, what);
    if (!v) return -1;
    if (v->numel == n && v->rank <= nd) { /* the usual case: the normalized shape itself */
        int same = 1;
        for (int j = 0; j < v->rank; j++) same &= v->dims[v->rank - 1 - j] == dims[nd - 1 - j];
        if (same) {
            gwr_ku_load_f64(v, 0, n, dst);
            return 0;
        }
    }
    int ok = v->rank <= nd;
    for (int j = 0; ok && j < v->rank; j++) {
        int64_t a = v->dims[v->rank - 1 - j], b = dims[nd - 1 - j];
        ok = a == b || a == 1;
    }
    if (!ok) {
        gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %d (%s) does not broadcast to the normalized shape", i, what);
        return -1;
    }
    int64_t st[GWR_MAX_RANK], idx[GWR_MAX_RANK] = {0};
    gwr_bcast_strides(v->rank, v->dims, nd, dims, st);
    int64_t off = 0;
    for (int64_t e = 0; e < n; e++) {
        dst[e] = gwr_v_get_f64(v, off);
        for (int d = nd - 1; d >= 0; d--) {
            off += st[d];
            if (++idx[d] < dims[d]) break;
            off -= st[d] * dims[d];
            idx[d] = 0;
        }
    }
    return 0;
}

/* LayerNormalization's and RMSNormalization's rows: the axis attribute of
 * X (rank >= 1) as *a, the outer count and the row length; -1 after
 * gwr_k_fail. */
static int norm_rows(gwr_kctx *k, const gwr_value *x, int *a, int64_t *outer, int64_t *n) {
    int r = x->rank;
    if (r < 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "X must have rank 1 or more"), -1;
    int64_t axis = gwr_k_int(k, "axis", -1);
    *a = gwr_axis(axis, r);
    if (*a < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)axis, r), -1;
    *outer = 1, *n = 1;
    for (int i = 0; i < r; i++) *(i < *a ? outer : n) *= x->dims[i];
    return 0;
}

static gwr_dtype declared_or(const gwr_kctx *k, int o, gwr_dtype def) {
    gwr_tensor *t = gwr_layer_output(k->layer, o);
    gwr_dtype d = t ? gwr_tensor_dtype(t) : GWR_UNDEFINED;
    return gwr_ku_is_float(d) ? d : def;
}

/* k_layer_norm's float32 rows: one loop index a row. */
typedef struct ln_loop {
    const float *x, *sc, *bi;
    float *y;
    gwr_value *mo, *io; /* the mean and inverse deviation outputs, or NULL */
    int64_t n;
    double eps;
} ln_loop;

static void layer_norm_range(void *ctx, int64_t r0, int64_t r1) {
    const ln_loop *l = ctx;
    int64_t n = l->n;
    for (int64_t o = r0; o < r1; o++) {
        const float *xr = l->x + o * n;
        float *yr = l->y + o * n;
        float m = sum_f32(xr, n) / (float)n;
        float inv = (float)(1.0 / sqrt((double)sqdev_f32(xr, n, m) / (double)n + l->eps));
        norm_affine_f32(xr, yr, n, m, inv, l->sc, l->bi);
        if (l->mo) gwr_v_set_f64(l->mo, o, m);
        if (l->io) gwr_v_set_f64(l->io, o, inv);
    }
}

static gwr_status k_layer_norm(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_float(k, 0, "X");
    if (!x) return GWR_ERR_INVALID_ARG;
    if (k->nin < 2 || !k->in[1]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input 1 (Scale) is missing");
    int r = x->rank, a;
    int64_t outer, n;
    if (norm_rows(k, x, &a, &outer, &n)) return GWR_ERR_INVALID_ARG;
    double eps = gwr_k_float(k, "epsilon", 1e-5f);
    double *pm = gwr_malloc((size_t)(3 * n + 1) * sizeof *pm);
    if (!pm) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    double *sc = pm, *bi = pm + n, *row = pm + 2 * n;
    int has_b = k->nin > 2 && k->in[2];
    if (bcast_param(k, 1, "Scale", r - a, x->dims + a, n, sc) ||
        (has_b && bcast_param(k, 2, "B", r - a, x->dims + a, n, bi))) {
        gwr_free(pm);
        return GWR_ERR_INVALID_ARG;
    }
    if (!has_b) memset(bi, 0, (size_t)n * sizeof *bi);
    gwr_value *y = gwr_k_out(k, 0, x->dtype, r, x->dims), *mo = NULL, *io = NULL;
    if (!y) {
        gwr_free(pm);
        return GWR_ERR_NOMEM;
    }
    int64_t sd[GWR_MAX_RANK];
    for (int i = 0; i < r; i++) sd[i] = i < a ? x->dims[i] : 1;
    int64_t stash = gwr_k_int(k, "stash_type", 1);
    gwr_dtype st = gwr_ku_is_float((gwr_dtype)stash) ? (gwr_dtype)stash : GWR_FLOAT32;
    if (k->nout > 1 && gwr_k_out_used(k, 1) && !(mo = gwr_k_out(k, 1, declared_or(k, 1, st), r, sd))) {
        gwr_free(pm);
        return GWR_ERR_NOMEM;
    }
    if (k->nout > 2 && gwr_k_out_used(k, 2) && !(io = gwr_k_out(k, 2, declared_or(k, 2, st), r, sd))) {
        gwr_free(pm);
        return GWR_ERR_NOMEM;
    }
    if (x->dtype == GWR_FLOAT32) {
        float *fs = gwr_malloc((size_t)(2 * n + 1) * sizeof *fs);
        if (!fs) {
            gwr_free(pm);
            return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
        }
        float *fsc = fs, *fbi = fs + n;
        for (int64_t j = 0; j < n; j++) fsc[j] = (float)sc[j], fbi[j] = (float)bi[j];
        ln_loop l = {x->data, fsc, fbi, y->data, mo, io, n, eps};
        gwr_k_parallel(k, outer, gwr_par_grain(3 * n), layer_norm_range, &l); /* three passes a row */
        gwr_free(fs);
    } else {
        for (int64_t o = 0; o < outer; o++) {
            double m, inv;
            gwr_ku_load_f64(x, o * n, n, row);
            moments(row, n, eps, &m, &inv);
            for (int64_t j = 0; j < n; j++) row[j] = (row[j] - m) * inv * sc[j] + bi[j];
            gwr_ku_store_f64(y, o * n, n, row);
            if (mo) gwr_v_set_f64(mo, o, m);
            if (io) gwr_v_set_f64(io, o, inv);
        }
    }
    gwr_free(pm);
    return GWR_OK;
}

/* ---- RMSNormalization (opset 23) --------------------------------------------- */

/* Y = X / sqrt(mean(X^2 over the dims from axis on) + epsilon) * Scale, the
 * Scale broadcast to those dims as LayerNormalization's; the mean and the
 * scaling in double (at least stash_type's float32). */
static gwr_status k_rms_norm(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_float(k, 0, "X");
    if (!x) return GWR_ERR_INVALID_ARG;
    int r = x->rank, a;
    int64_t outer, n;
    if (norm_rows(k, x, &a, &outer, &n)) return GWR_ERR_INVALID_ARG;
    double eps = gwr_k_float(k, "epsilon", 1e-5f);
    double *sc = gwr_malloc((size_t)(2 * n + 1) * sizeof *sc), *row = sc ? sc + n : NULL;
    if (!sc) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    if (bcast_param(k, 1, "scale", r - a, x->dims + a, n, sc)) {
        gwr_free(sc);
        return GWR_ERR_INVALID_ARG;
    }
    gwr_value *y = gwr_k_out(k, 0, x->dtype, r, x->dims);
    for (int64_t o = 0; y && o < outer; o++) {
        double ss = 0;
        gwr_ku_load_f64(x, o * n, n, row);
        for (int64_t j = 0; j < n; j++) ss += row[j] * row[j];
        double inv = 1.0 / sqrt(ss / (double)n + eps);
        for (int64_t j = 0; j < n; j++) row[j] = row[j] * inv * sc[j];
        gwr_ku_store_f64(y, o * n, n, row);
    }
    gwr_free(sc);
    return y ? GWR_OK : GWR_ERR_NOMEM;
}

/* ---- MeanVarianceNormalization ------------------------------------------------ */

static gwr_status k_mvn(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_float(k, 0, "X");
    if (!x) return GWR_ERR_INVALID_ARG;
    int r = x->rank;
    static const int64_t def_axes[3] = {0, 2, 3};
    const int64_t *axes;
    int64_t na = gwr_k_ints(k, "axes", &axes);
    if (na < 0) axes = def_axes, na = 3;
    uint8_t red[GWR_MAX_RANK] = {0};
    if (gwr_ku_axes_mask(k, axes, na, r, red, NULL)) return GWR_ERR_INVALID_ARG;
    gwr_value *y = gwr_k_out(k, 0, x->dtype, r, x->dims);
    if (!y) return GWR_ERR_NOMEM;
    if (!x->numel) return GWR_OK;
    /* Statistics per kept index; each element's kept index by an odometer. */
    int64_t kst[GWR_MAX_RANK], nk = 1, cnt = 1;
    for (int i = r - 1; i >= 0; i--) {
        kst[i] = red[i] ? 0 : nk;
        if (red[i]) cnt *= x->dims[i];
        else nk *= x->dims[i];
    }
    double *d = all_f64(k, x);
    double *st = gwr_calloc((size_t)(2 * nk), sizeof *st);
    if (!d || !st) {
        gwr_free(d), gwr_free(st);
        return d ? gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory") : GWR_ERR_NOMEM;
    }
    double *mean = st, *var = st + nk;
    for (int pass = 0; pass < 3; pass++) {
        int64_t idx[GWR_MAX_RANK] = {0}, o = 0;
        for (int64_t e = 0; e < x->numel; e++) {
            if (pass == 0) mean[o] += d[e];
            else if (pass == 1) var[o] += (d[e] - mean[o]) * (d[e] - mean[o]);
            else d[e] = (d[e] - mean[o]) / (sqrt(var[o]) + 1e-9);
            for (int i = r - 1; i >= 0; i--) {
                o += kst[i];
                if (++idx[i] < x->dims[i]) break;
                o -= kst[i] * x->dims[i];
                idx[i] = 0;
            }
        }
        for (int64_t i = 0; i < nk; i++) {
            if (pass == 0) mean[i] /= (double)cnt;
            if (pass == 1) var[i] /= (double)cnt;
        }
    }
    gwr_ku_store_f64(y, 0, x->numel, d);
    gwr_free(d), gwr_free(st);
    return GWR_OK;
}

/* ---- LRN ------------------------------------------------------------------------ */

static gwr_status k_lrn(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_float(k, 0, "X");
    if (!x) return GWR_ERR_INVALID_ARG;
    if (x->rank < 2) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "X must have rank 2 or more (N x C x ...), got %d", x->rank);
    int64_t size = gwr_k_int(k, "size", 0);
    if (size <= 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "size must be given and positive");
    double alpha = gwr_k_float(k, "alpha", 1e-4f), beta = gwr_k_float(k, "beta", 0.75f), bias = gwr_k_float(k, "bias", 1.0f);
    int64_t N = x->dims[0], C = x->dims[1], S = 1;
    for (int i = 2; i < x->rank; i++) S *= x->dims[i];
    gwr_value *y = gwr_k_out(k, 0, x->dtype, x->rank, x->dims);
    if (!y) return GWR_ERR_NOMEM;
    if (!x->numel) return GWR_OK;
    double *d = all_f64(k, x);
    double *o = gwr_malloc((size_t)x->numel * sizeof *o), *sq = gwr_malloc((size_t)(S ? S : 1) * sizeof *sq);
    if (!d || !o || !sq) {
        gwr_free(d), gwr_free(o), gwr_free(sq);
        return d ? gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory") : GWR_ERR_NOMEM;
    }
    int64_t lo = (size - 1) / 2, hi = size - 1 - lo; /* floor and ceil of (size - 1) / 2 */
    for (int64_t nn = 0; nn < N; nn++)
        for (int64_t c = 0; c < C; c++) {
            memset(sq, 0, (size_t)S * sizeof *sq);
            int64_t c0 = c - lo < 0 ? 0 : c - lo, c1 = c + hi > C - 1 ? C - 1 : c + hi;
            for (int64_t q = c0; q <= c1; q++) {
                const double *xr = d + (nn * C + q) * S;
                for (int64_t j = 0; j < S; j++) sq[j] += xr[j] * xr[j];
            }
            const double *xr = d + (nn * C + c) * S;
            double *yr = o + (nn * C + c) * S;
            for (int64_t j = 0; j < S; j++) yr[j] = xr[j] / pow(bias + alpha / (double)size * sq[j], beta);
        }
    gwr_ku_store_f64(y, 0, x->numel, o);
    gwr_free(d), gwr_free(o), gwr_free(sq);
    return GWR_OK;
}

/* ---- LpNormalization --------------------------------------------------------- */

/* y = x / (sum |x|^p along axis)^(1/p), p 1 or 2; where the norm is 0, y is 0
 * (onnx's reference: 0 / 0 gives 0, not NaN). */
static gwr_status k_lp_norm(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_float(k, 0, "input");
    if (!x) return GWR_ERR_INVALID_ARG;
    int r = x->rank;
    int64_t axis = gwr_k_int(k, "axis", -1), p = gwr_k_int(k, "p", 2);
    int a = gwr_axis(axis, r);
    if (a < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)axis, r);
    if (p != 1 && p != 2) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "p must be 1 or 2, not %lld", (long long)p);
    gwr_value *y = gwr_k_out(k, 0, x->dtype, r, x->dims);
    if (!y) return GWR_ERR_NOMEM;
    if (!x->numel) return GWR_OK;
    int64_t outer = 1, n = x->dims[a], inner = 1;
    for (int i = 0; i < r; i++)
        if (i != a) *(i < a ? &outer : &inner) *= x->dims[i];
    double *d = all_f64(k, x);
    if (!d) return GWR_ERR_NOMEM;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            double *row = d + o * n * inner + j, sum = 0;
            for (int64_t i = 0; i < n; i++) sum += p == 1 ? fabs(row[i * inner]) : row[i * inner] * row[i * inner];
            double norm = p == 1 ? sum : sqrt(sum);
            for (int64_t i = 0; i < n; i++) row[i * inner] = norm == 0 ? 0 : row[i * inner] / norm;
        }
    gwr_ku_store_f64(y, 0, x->numel, d);
    gwr_free(d);
    return GWR_OK;
}

const gwr_kernel_entry gwr_kernels_norm[] = {
    GWR_KERNEL(BatchNormalization, k_batch_norm),
    GWR_KERNEL(InstanceNormalization, k_instance_norm),
    /* ONNX's since opset 17; onnxruntime's own since opset 1 (a contrib
     * kernel in the ONNX domain), which the optimizer's targets ort and gwr
     * fuse into models of any opset: any opset. */
    GWR_KERNEL(LayerNormalization, k_layer_norm, .first_opset = 1),
    /* opset 18, not in ops.def yet */
    GWR_KERNEL_CUSTOM("", "GroupNormalization", k_group_norm),
    GWR_KERNEL(MeanVarianceNormalization, k_mvn),
    GWR_KERNEL(LRN, k_lrn),
    GWR_KERNEL(LpNormalization, k_lp_norm),
    GWR_KERNEL(RMSNormalization, k_rms_norm),
    GWR_KERNEL(Softmax, k_softmax),
    GWR_KERNEL(LogSoftmax, k_log_softmax),
    GWR_KERNEL(Hardmax, k_hardmax),
    {.fn = NULL},
};
