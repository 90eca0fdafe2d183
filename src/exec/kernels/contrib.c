/* contrib.c - onnxruntime's com.microsoft contrib ops that `gwr optimize
 * --target ort` emits, so that the executor runs (and --verify checks)
 * what it writes: SkipLayerNormalization, BiasGelu, Gelu, FastGelu,
 * QuickGelu, FusedMatMul and SkipSimplifiedLayerNormalization
 * (docs/ContribOperators.md, version 1), and
 * SimplifiedLayerNormalization (its RMSNorm, registered in the default
 * domain).
 *
 * float32 runs float rows: the GELUs through fast_math.h (compiled per
 * CPU), SkipLayerNormalization in three passes over a row (the sum and
 * its total, the variance, the normalized row) with sixteen-lane float
 * statistics, also compiled per CPU, over rows in parallel. The other dtypes load rows as
 * doubles, compute, and store back in the value's dtype (float16 and
 * bfloat16 included): one rounding, as the unfused chain in double would
 * give; SkipLayerNormalization forms input + skip + bias row by row and
 * normalizes it as LayerNormalization does (statistics in double).
 * FusedMatMul is MatMul with the last two
 * dims of A and/or B transposed and the product scaled by alpha, through
 * the same GEMM (OpenBLAS) as MatMul; transBatchA / transBatchB are
 * refused. */
#include <math.h>
#include <stdint.h>
#include <string.h>

/* The float32 rows vectorize (GCC's -O2 cost model vectorizes almost none). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "no-trapping-math")
#endif

/* after the pragma: its inline functions take its options */
#include "exec/kernels/fast_math.h"
#include "exec/blas.h"
#include "exec/kernels/kernel_util.h"

#define MAXR 16 /* batch dims of a matrix product */

/* Optional input i: absent (0), or x's dtype with exactly n values over
 * the last axis, loaded into dst (1); -1 after gwr_k_fail. */
static int last_axis_param(gwr_kctx *k, int i, const char *what, const gwr_value *x, int64_t n, double *dst) {
    const gwr_value *v = gwr_ku_opt(k, i);
    if (!v) return 0;
    if (v->dtype != x->dtype)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %d (%s) is %s, input 0 is %s", i, what,
                          gwr_dtype_name(v->dtype), gwr_dtype_name(x->dtype)), -1;
    if (v->rank != 1 || v->numel != n)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %d (%s) must be 1-D of %lld values (the last dim)", i, what,
                          (long long)n), -1;
    gwr_ku_load_f64(v, 0, n, dst);
    return 1;
}

/* ---- the GELUs ---------------------------------------------------------------- */

enum { G_ERF, G_TANH, G_QUICK };

static double gelu_of(int kind, double x, double alpha) {
    switch (kind) {
    case G_ERF: /* x/2 erfc(-x/sqrt2): the tail keeps its relative precision */
        return 0.5 * x * erfc(-x * 0.70710678118654752440);
    case G_TANH: /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
        return 0.5 * x * (1.0 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
    default: /* x sigmoid(alpha x) */
        return x / (1.0 + exp(-alpha * x));
    }
}

/* float32 rows of y = gelu(x + b) (b: n values, or NULL), one loop per
 * kind so that each vectorizes: erf through fast_gelu (relative error
 * ~1e-7, the tail's included), tanh through fast_expf; QuickGelu through
 * act_rows.c, uncontracted (no bias: QuickGelu has none). */
GWR_VEC_CLONES static void gelu_rows_f32(int kind, const float *restrict x, const float *restrict b, float *restrict y, int64_t rows,
                          int64_t n, float alpha) {
    static const float zero[64];
    for (int64_t r = 0; r < rows; r++) {
        const float *restrict xr = x + r * n;
        float *restrict yr = y + r * n;
        for (int64_t j0 = 0; j0 < n; j0 += 64) {
            int64_t w = n - j0 < 64 ? n - j0 : 64;
            const float *restrict br = b ? b + j0 : zero;
            if (kind == G_ERF)
                for (int64_t j = 0; j < w; j++) yr[j0 + j] = fast_gelu(xr[j0 + j] + br[j]);
            else if (kind == G_TANH)
                for (int64_t j = 0; j < w; j++) {
                    float v = xr[j0 + j] + br[j];
                    yr[j0 + j] = v / (1.0f + fast_expf(-1.5957691216057308f * (v + 0.044715f * v * v * v)));
                }
            else { /* QuickGelu: act_rows.c's row, whose bits FusedConv's QuickGelu gives */
                const gwr_ku_act qg = {GWR_KU_ACT_QGELU, {alpha, 0}};
                memmove(yr + j0, xr + j0, (size_t)w * sizeof *yr); /* y may be x (in place) */
                gwr_ku_act_f32(&qg, yr + j0, NULL, NULL, w);
            }
        }
    }
}

/* gelu_rows_f32 over rows [r0, r1) of the layer: one loop index a row. */
typedef struct gelu_loop {
    int kind;
    const float *x, *b;
    float *y;
    int64_t n;
    float alpha;
} gelu_loop;

static void gelu_range(void *ctx, int64_t r0, int64_t r1) {
    const gelu_loop *g = ctx;
    gelu_rows_f32(g->kind, g->x + r0 * g->n, g->b, g->y + r0 * g->n, r1 - r0, g->n, g->alpha);
}

/* y = gelu(x + bias), the bias (input bias_in, or none) over the last axis. */
static gwr_status run_gelu(gwr_kctx *k, int kind, int bias_in, double alpha) {
    const gwr_value *x = gwr_ku_need_float(k, 0, "X");
    if (!x) return GWR_ERR_INVALID_ARG;
    if (x->rank < 1 && bias_in >= 0 && gwr_ku_opt(k, bias_in))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "a bias needs an input of rank 1 or more");
    int64_t n = x->rank ? x->dims[x->rank - 1] : 1, rows = n ? x->numel / n : 0;
    double *buf = gwr_ku_scratch(k, 2 * n + 1, sizeof *buf);
    if (!buf) return GWR_ERR_NOMEM;
    double *row = buf + n; /* after the test: NULL + n is undefined */
    int hb = bias_in >= 0 ? last_axis_param(k, bias_in, "bias", x, n, buf) : 0;
    if (hb < 0) {
        gwr_free(buf);
        return GWR_ERR_INVALID_ARG;
    }
    gwr_value *y = gwr_k_out(k, 0, x->dtype, x->rank, x->dims);
    if (y && x->dtype == GWR_FLOAT32) {
        const gwr_value *bv = hb ? gwr_ku_opt(k, bias_in) : NULL;
        gelu_loop g = {kind, x->data, bv ? bv->data : NULL, y->data, n, (float)alpha};
        gwr_k_parallel(k, rows, gwr_par_grain(4 * n), gelu_range, &g); /* exp or erf: ~4 adds' work */
        rows = 0;
    }
    for (int64_t r = 0; y && r < rows; r++) {
        gwr_ku_load_f64(x, r * n, n, row);
        for (int64_t j = 0; j < n; j++) row[j] = gelu_of(kind, hb ? row[j] + buf[j] : row[j], alpha);
        gwr_ku_store_f64(y, r * n, n, row);
    }
    gwr_free(buf);
    return y ? GWR_OK : GWR_ERR_NOMEM;
}

static gwr_status k_bias_gelu(gwr_kctx *k) {
    if (!gwr_ku_need_named(k, 1, "B")) return GWR_ERR_INVALID_ARG;
    return run_gelu(k, G_ERF, 1, 0);
}
static gwr_status k_ms_gelu(gwr_kctx *k) { return run_gelu(k, G_ERF, -1, 0); }
static gwr_status k_fast_gelu(gwr_kctx *k) { return run_gelu(k, G_TANH, 1, 0); }
static gwr_status k_quick_gelu(gwr_kctx *k) { return run_gelu(k, G_QUICK, -1, gwr_k_float(k, "alpha", 1.702f)); }

/* ---- SkipLayerNormalization ----------------------------------------------------- */

/* Rows of skip: skip's dims, leading 1s dropped, must be x's trailing
 * dims (the same shape, or [1, S, H] / [S, H] against [B, S, H]); 0 after
 * gwr_k_fail when not. */
static int64_t skip_rows(gwr_kctx *k, const gwr_value *x, const gwr_value *s) {
    int lead = 0;
    while (lead < s->rank - 1 && s->dims[lead] == 1) lead++;
    int r = s->rank - lead, ok = r >= 1 && r <= x->rank;
    for (int i = 0; ok && i < r; i++) ok = s->dims[s->rank - 1 - i] == x->dims[x->rank - 1 - i];
    if (!ok || !x->dims[x->rank - 1]) {
        gwr_k_fail(k, GWR_ERR_INVALID_ARG, "skip does not broadcast to input along its leading dims");
        return 0;
    }
    return s->numel / x->dims[x->rank - 1];
}

typedef struct sln_out {
    gwr_value *y, *mean, *inv, *sum;
} sln_out;

static gwr_status sln_outputs(gwr_kctx *k, const gwr_value *x, sln_out *o) {
    int64_t md[GWR_MAX_RANK];
    memcpy(md, x->dims, (size_t)x->rank * sizeof *md);
    md[x->rank - 1] = 1;
    memset(o, 0, sizeof *o);
    if (!(o->y = gwr_k_out(k, 0, x->dtype, x->rank, x->dims))) return GWR_ERR_NOMEM;
    if (k->nout > 1 && gwr_k_out_used(k, 1) && !(o->mean = gwr_k_out(k, 1, GWR_FLOAT32, x->rank, md)))
        return GWR_ERR_NOMEM;
    if (k->nout > 2 && gwr_k_out_used(k, 2) && !(o->inv = gwr_k_out(k, 2, GWR_FLOAT32, x->rank, md)))
        return GWR_ERR_NOMEM;
    if (k->nout > 3 && gwr_k_out_used(k, 3) && !(o->sum = gwr_k_out(k, 3, x->dtype, x->rank, x->dims)))
        return GWR_ERR_NOMEM;
    return GWR_OK;
}

/* The float32 parameters of skip_norm: input i's data, or NULL when absent. */
static const float *f32_param(gwr_kctx *k, int i, int present) { return present ? gwr_ku_opt(k, i)->data : NULL; }

/* float32 statistics and rows of skip_norm. Sixteen float lanes, so that
 * the loops vectorize (16-wide with AVX-512, the clones of
 * GWR_VEC_CLONES); the sums therefore differ from a serial loop by
 * reassociation only. */
#define SL 16

/* v = x + s (+ b), returning the sum of v: one pass for both. */
GWR_VEC_CLONES static float add_sum_f32(const float *restrict x, const float *restrict s, const float *restrict b,
                                        float *restrict v, int64_t n) {
    float a[SL] = {0}, t = 0;
    int64_t j = 0;
    if (b)
        for (; j + SL <= n; j += SL)
            for (int q = 0; q < SL; q++) a[q] += v[j + q] = x[j + q] + s[j + q] + b[j + q];
    else
        for (; j + SL <= n; j += SL)
            for (int q = 0; q < SL; q++) a[q] += v[j + q] = x[j + q] + s[j + q];
    for (; j < n; j++) t += v[j] = x[j] + s[j] + (b ? b[j] : 0.0f);
    for (int q = 0; q < SL; q++) t += a[q];
    return t;
}

/* y = (v - m) inv gamma (+ beta); y may be v itself (the row normalized in
 * place), hence no restrict on them. */
GWR_VEC_CLONES static void norm_row_f32(const float *v, float *y, int64_t n, float m, float inv,
                                        const float *restrict ga, const float *restrict be) {
    if (be)
        for (int64_t j = 0; j < n; j++) y[j] = (v[j] - m) * inv * ga[j] + be[j];
    else
        for (int64_t j = 0; j < n; j++) y[j] = (v[j] - m) * inv * ga[j];
}

/* What the rows of a float32 skip_norm read and write. */
typedef struct sln_rows {
    const sln_out *o;
    const float *x, *s, *ga, *be, *bi;
    int64_t n, srows;
    int simple;
    double eps;
} sln_rows;

/* Rows [r0, r1): v = x + skip + bias into o->sum's row when it is wanted,
 * else into y's row (normalized there in place): one pass for v and its
 * sum, one for the variance (two passes, as LayerNormalization: no
 * cancellation), one for y. */
static void skip_rows_f32(void *ctx, int64_t r0, int64_t r1) {
    const sln_rows *c = ctx;
    int64_t n = c->n;
    for (int64_t r = r0; r < r1; r++) {
        float *yr = (float *)c->o->y->data + r * n, *v = c->o->sum ? (float *)c->o->sum->data + r * n : yr;
        float tot = add_sum_f32(c->x + r * n, c->s + (r % c->srows) * n, c->bi, v, n);
        float mean = c->simple ? 0.0f : tot / (float)n; /* RMS: the deviation from 0 */
        float inv = (float)(1.0 / sqrt((double)gwr_ku_row_sqdev_f32(v, n, mean) / (double)n + c->eps));
        norm_row_f32(v, yr, n, mean, inv, c->ga, c->be);
        if (c->o->mean) gwr_v_set_f64(c->o->mean, r, mean);
        if (c->o->inv) gwr_v_set_f64(c->o->inv, r, inv);
    }
}

/* SkipLayerNormalization, and SkipSimplifiedLayerNormalization (simple:
 * RMS normalization, no beta, the bias at input 3). */
static gwr_status skip_norm(gwr_kctx *k, int simple) {
    const gwr_value *x = gwr_ku_need_float(k, 0, "input"), *s = x ? gwr_ku_need_float(k, 1, "skip") : NULL;
    if (!s) return GWR_ERR_INVALID_ARG;
    if (s->dtype != x->dtype) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "skip is not of input's dtype");
    if (x->rank < 2 || x->rank > 3 || s->rank < 2 || s->rank > 3)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input and skip must have rank 2 or 3");
    if (!gwr_ku_need_named(k, 2, "gamma")) return GWR_ERR_INVALID_ARG;
    int64_t n = x->dims[x->rank - 1], rows = n ? x->numel / n : 0, srows = skip_rows(k, x, s);
    if (!srows) return GWR_ERR_INVALID_ARG;
    double eps = gwr_k_float(k, "epsilon", 1e-12f);
    double *pm = gwr_ku_scratch(k, 5 * n + 1, sizeof *pm);
    if (!pm) return GWR_ERR_NOMEM;
    double *ga = pm, *be = pm + n, *bi = pm + 2 * n, *row = pm + 3 * n, *sk = pm + 4 * n;
    int hg = last_axis_param(k, 2, "gamma", x, n, ga);
    int hbe = hg < 0 ? -1 : simple ? 0 : last_axis_param(k, 3, "beta", x, n, be);
    int hbi = hbe < 0 ? -1 : last_axis_param(k, simple ? 3 : 4, "bias", x, n, bi);
    sln_out o;
    gwr_status st = hbi < 0 ? GWR_ERR_INVALID_ARG : sln_outputs(k, x, &o);
    if (!st && x->dtype == GWR_FLOAT32) {
        sln_rows c = {&o, x->data, s->data, f32_param(k, 2, hg), f32_param(k, 3, hbe), f32_param(k, simple ? 3 : 4, hbi),
                      n, srows, simple, eps};
        gwr_k_parallel(k, rows, 16384 / n + 1, skip_rows_f32, &c); /* rows of about 16K values or more */
        rows = 0;
    }
    for (int64_t r = 0; !st && r < rows; r++) {
        gwr_ku_load_f64(x, r * n, n, row);
        gwr_ku_load_f64(s, (r % srows) * n, n, sk);
        double mean = 0, var = 0;
        for (int64_t j = 0; j < n; j++) mean += row[j] += sk[j] + (hbi ? bi[j] : 0);
        if (o.sum) gwr_ku_store_f64(o.sum, r * n, n, row);
        mean = simple ? 0 : mean / (double)n; /* RMS: the deviation from 0 */
        for (int64_t j = 0; j < n; j++) var += (row[j] - mean) * (row[j] - mean);
        double inv = 1.0 / sqrt(var / (double)n + eps);
        for (int64_t j = 0; j < n; j++) row[j] = (row[j] - mean) * inv * ga[j] + (hbe ? be[j] : 0);
        gwr_ku_store_f64(o.y, r * n, n, row);
        if (o.mean) gwr_v_set_f64(o.mean, r, mean);
        if (o.inv) gwr_v_set_f64(o.inv, r, inv);
    }
    gwr_free(pm);
    return st;
}

/* ---- FusedMatMul ------------------------------------------------------------------ */

typedef struct fmm {
    int ta, tb;
    int64_t M, N, K, batch;
    int orank;
    int64_t odims[MAXR + 2], sa[MAXR], sb[MAXR], bd[MAXR];
    int nb;
} fmm;

/* The product's shapes: op(A) is [..., M, K], op(B) [..., K, N]. */
static gwr_status fmm_setup(gwr_kctx *k, const gwr_value *a, const gwr_value *b, fmm *p) {
    if (a->rank < 1 || b->rank < 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "operands must have rank 1 or more");
    if (a->rank > MAXR + 2 || b->rank > MAXR + 2) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "rank above %d", MAXR + 2);
    if ((p->ta && a->rank < 2) || (p->tb && b->rank < 2))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "transA / transB need an operand of rank 2 or more");
    int ra = a->rank, rb = b->rank;
    p->M = ra > 1 ? a->dims[ra - (p->ta ? 1 : 2)] : 1;
    p->K = ra > 1 ? a->dims[ra - (p->ta ? 2 : 1)] : a->dims[0];
    int64_t kb = rb > 1 ? b->dims[rb - (p->tb ? 1 : 2)] : b->dims[0];
    p->N = rb > 1 ? b->dims[rb - (p->tb ? 2 : 1)] : 1;
    if (kb != p->K)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "inner dims differ: op(A) has %lld columns, op(B) %lld rows",
                          (long long)p->K, (long long)kb);
    int abr = ra > 2 ? ra - 2 : 0, bbr = rb > 2 ? rb - 2 : 0;
    if (gwr_broadcast(abr, a->dims, bbr, b->dims, &p->nb, p->bd))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "batch dims of A and B do not broadcast");
    gwr_bcast_strides(abr, a->dims, p->nb, p->bd, p->sa);
    gwr_bcast_strides(bbr, b->dims, p->nb, p->bd, p->sb);
    p->batch = gwr_shape_numel(p->nb, p->bd);
    p->orank = p->nb;
    memcpy(p->odims, p->bd, (size_t)p->nb * sizeof *p->bd);
    if (ra > 1) p->odims[p->orank++] = p->M;
    if (rb > 1) p->odims[p->orank++] = p->N;
    if (!gwr_ku_fits_int(p->M) || !gwr_ku_fits_int(p->N) || !gwr_ku_fits_int(p->K))
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "matrix dims too large for BLAS");
    return GWR_OK;
}

/* Y[t] = alpha op(A[t]) op(B[t]) for every batch matrix t, in float or double. */
static void fmm_run(const fmm *p, int dbl, const void *A, const void *B, void *Y, double alpha) {
    int M = (int)p->M, N = (int)p->N, K = (int)p->K, lda = p->ta ? M : K, ldb = p->tb ? K : N;
    int64_t idx[MAXR] = {0}, ao = 0, bo = 0;
    for (int64_t t = 0; t < p->batch; t++) {
        int64_t ya = t * p->M * p->N, aa = ao * p->M * p->K, bb = bo * p->K * p->N;
        if (dbl)
            gwr_ku_dgemm(p->ta, p->tb, M, N, K, alpha, (const double *)A + aa, lda, (const double *)B + bb, ldb, 0,
                         (double *)Y + ya, N);
        else
            gwr_ku_sgemm(p->ta, p->tb, M, N, K, (float)alpha, (const float *)A + aa, lda, (const float *)B + bb, ldb,
                         0, (float *)Y + ya, N);
        for (int d = p->nb - 1; d >= 0; d--) {
            ao += p->sa[d], bo += p->sb[d];
            if (++idx[d] < p->bd[d]) break;
            ao -= p->sa[d] * p->bd[d], bo -= p->sb[d] * p->bd[d], idx[d] = 0;
        }
    }
}

static gwr_status k_fused_matmul(gwr_kctx *k) {
    const gwr_value *a = gwr_ku_need_float(k, 0, "A"), *b = a ? gwr_ku_need_float(k, 1, "B") : NULL;
    if (!b) return GWR_ERR_INVALID_ARG;
    if (a->dtype != b->dtype)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "A is %s but B is %s", gwr_dtype_name(a->dtype), gwr_dtype_name(b->dtype));
    if (gwr_k_int(k, "transBatchA", 0) || gwr_k_int(k, "transBatchB", 0))
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "transBatchA and transBatchB are not implemented");
    fmm p = {.ta = gwr_k_int(k, "transA", 0) != 0, .tb = gwr_k_int(k, "transB", 0) != 0};
    gwr_status st = fmm_setup(k, a, b, &p);
    if (st) return st;
    gwr_value *y = gwr_k_out(k, 0, a->dtype, p.orank, p.odims);
    if (!y) return GWR_ERR_NOMEM;
    double alpha = gwr_k_float(k, "alpha", 1.0f);
    gwr_blas_threads(k->threads);
    /* B packed at planning (rank 2): the batch of A is one product of batch * M rows */
    if (a->dtype == GWR_FLOAT32 && !p.ta && b->rank == 2 && gwr_ku_fits_int(p.batch * p.M) &&
        !gwr_ku_mm_packed(k, b, 0, (int)(p.batch * p.M), a->data, (int)p.K, (float)alpha, 0.0f, y->data, (int)p.N))
        return GWR_OK;
    const gwr_mm_prep *pp = gwr_ku_mm_prep(k, b); /* B prepared at planning: float32 [K, N] */
    if (pp) p.tb = 0;
    if (a->dtype == GWR_FLOAT64 || (a->dtype == GWR_FLOAT32 && !pp)) {
        fmm_run(&p, a->dtype == GWR_FLOAT64, a->data, b->data, y->data, alpha);
        return GWR_OK;
    }
    int wide = a->dtype != GWR_FLOAT32;
    float *af = wide ? gwr_ku_widen(a) : a->data, *bf = pp ? pp->b : gwr_ku_widen(b);
    float *yf = wide ? gwr_malloc((size_t)(y->numel ? y->numel : 1) * sizeof *yf) : y->data;
    if (!af || !bf || !yf) st = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    else fmm_run(&p, 0, af, bf, yf, alpha);
    if (!st && wide) gwr_ku_narrow(yf, y);
    if (wide) gwr_free(af), gwr_free(yf);
    if (!pp) gwr_free(bf);
    return st;
}

/* ---- SimplifiedLayerNormalization ---------------------------------------------- */

/* y = x / sqrt(mean(x^2) + epsilon) * scale over the dims from axis on;
 * scale holds exactly their count of values (the usual 1-D [H]). */
static gwr_status k_simplified_ln(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_float(k, 0, "X"), *sc = x ? gwr_ku_need_float(k, 1, "scale") : NULL;
    if (!sc) return GWR_ERR_INVALID_ARG;
    int r = x->rank, a = r ? gwr_axis(gwr_k_int(k, "axis", -1), r) : -1;
    if (a < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis is out of range for rank %d", r);
    int64_t n = gwr_shape_numel(r - a, x->dims + a), md[GWR_MAX_RANK];
    for (int i = 0; i < r; i++) md[i] = i < a ? x->dims[i] : 1;
    if (sc->numel != n || sc->dtype != x->dtype)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "scale must be of X's dtype with %lld values", (long long)n);
    double eps = gwr_k_float(k, "epsilon", 1e-5f);
    int64_t rows = n ? x->numel / n : 0;
    double *buf = gwr_ku_scratch(k, 2 * n + 1, sizeof *buf);
    if (!buf) return GWR_ERR_NOMEM;
    double *row = buf + n;
    gwr_ku_load_f64(sc, 0, n, buf);
    gwr_value *y = gwr_k_out(k, 0, x->dtype, r, x->dims), *inv = NULL;
    gwr_status st = y ? GWR_OK : GWR_ERR_NOMEM;
    if (!st && k->nout > 1 && gwr_k_out_used(k, 1) && !(inv = gwr_k_out(k, 1, GWR_FLOAT32, r, md))) st = GWR_ERR_NOMEM;
    for (int64_t o = 0; !st && o < rows; o++) {
        double ss = 0;
        gwr_ku_load_f64(x, o * n, n, row);
        for (int64_t j = 0; j < n; j++) ss += row[j] * row[j];
        double iv = 1.0 / sqrt(ss / (double)n + eps);
        for (int64_t j = 0; j < n; j++) row[j] = row[j] * iv * buf[j];
        gwr_ku_store_f64(y, o * n, n, row);
        if (inv) gwr_v_set_f64(inv, o, iv);
    }
    gwr_free(buf);
    return st;
}

static gwr_status k_skip_layer_norm(gwr_kctx *k) { return skip_norm(k, 0); }
static gwr_status k_skip_simplified_layer_norm(gwr_kctx *k) { return skip_norm(k, 1); }

const gwr_kernel_entry gwr_kernels_contrib[] = {
    GWR_KERNEL(MS_SkipSimplifiedLayerNormalization, k_skip_simplified_layer_norm),
    GWR_KERNEL(SimplifiedLayerNormalization, k_simplified_ln),
    GWR_KERNEL(MS_SkipLayerNormalization, k_skip_layer_norm),
    GWR_KERNEL(MS_BiasGelu, k_bias_gelu),
    GWR_KERNEL(MS_Gelu, k_ms_gelu),
    GWR_KERNEL(MS_FastGelu, k_fast_gelu),
    GWR_KERNEL(MS_QuickGelu, k_quick_gelu),
    GWR_KERNEL(MS_FusedMatMul, k_fused_matmul, .flags = GWR_KF_BLAS, .prepare = gwr_ku_mm_prepare,
               .prep_free = gwr_ku_mm_prep_free),
    {0},
};
