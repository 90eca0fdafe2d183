/* reduce.c - the reduce kernel family: Reduce* over any set of axes,
 * ArgMax / ArgMin, TopK, CumSum and CumProd.
 *
 * Reductions merge adjacent dims that are all reduced or all kept, so any
 * axes set becomes alternating groups; the input is walked once in memory
 * order, one row (the last group) at a time: a kept last group adds
 * elementwise into the accumulators, a reduced one folds into a single
 * accumulator. Floats accumulate in double; integers in int64 (wrapping)
 * for the ops that stay integral, so int64 sums are exact. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec/kernels/kernel_util.h"

/* ---- element access by rows ------------------------------------------------ */

/* n elements as int64 (uint64 with the sign bit flipped when `order`, so
 * signed comparisons order them). */
static void load_i64(const gwr_value *v, int64_t off, int64_t n, int64_t *dst, int order) {
    const void *p = v->data;
    switch (v->dtype) {
    case GWR_INT32: {
        const int32_t *s = (const int32_t *)p + off;
        for (int64_t j = 0; j < n; j++) dst[j] = s[j];
        break;
    }
    case GWR_INT64: memcpy(dst, (const int64_t *)p + off, (size_t)n * sizeof *dst); break;
    case GWR_UINT64: {
        const uint64_t *s = (const uint64_t *)p + off;
        uint64_t flip = order ? (uint64_t)1 << 63 : 0;
        for (int64_t j = 0; j < n; j++) dst[j] = (int64_t)(s[j] ^ flip);
        break;
    }
    default:
        for (int64_t j = 0; j < n; j++) dst[j] = gwr_v_get_i64(v, off + j);
    }
}

/* Stores int64s into an integer value, wrapping as a C conversion does. */
static void store_i64(gwr_value *v, int64_t off, int64_t n, const int64_t *src, int order) {
    void *p = v->data;
    for (int64_t j = 0; j < n; j++) {
        int64_t x = src[j];
        switch (v->dtype) {
        case GWR_INT8: ((int8_t *)p)[off + j] = (int8_t)x; break;
        case GWR_UINT8: ((uint8_t *)p)[off + j] = (uint8_t)x; break;
        case GWR_INT16: ((int16_t *)p)[off + j] = (int16_t)x; break;
        case GWR_UINT16: ((uint16_t *)p)[off + j] = (uint16_t)x; break;
        case GWR_INT32: ((int32_t *)p)[off + j] = (int32_t)x; break;
        case GWR_UINT32: ((uint32_t *)p)[off + j] = (uint32_t)x; break;
        case GWR_INT64: ((int64_t *)p)[off + j] = x; break;
        case GWR_UINT64: ((uint64_t *)p)[off + j] = (uint64_t)x ^ (order ? (uint64_t)1 << 63 : 0); break;
        case GWR_BOOL: ((uint8_t *)p)[off + j] = x != 0; break;
        default: break;
        }
    }
}

/* Smallest / largest value of an integer dtype, in the order-key space of
 * load_i64(order = 1). */
static int64_t int_lowest(gwr_dtype t) {
    switch (t) {
    case GWR_INT8: return INT8_MIN;
    case GWR_INT16: return INT16_MIN;
    case GWR_INT32: return INT32_MIN;
    case GWR_INT64: return INT64_MIN;
    case GWR_UINT64: return INT64_MIN; /* 0 with the sign bit flipped */
    default: return 0;
    }
}

static int64_t int_highest(gwr_dtype t) {
    switch (t) {
    case GWR_INT8: return INT8_MAX;
    case GWR_UINT8: return UINT8_MAX;
    case GWR_INT16: return INT16_MAX;
    case GWR_UINT16: return UINT16_MAX;
    case GWR_INT32: return INT32_MAX;
    case GWR_UINT32: return UINT32_MAX;
    case GWR_BOOL: return 1; /* ReduceMin of no bools: true */
    default: return INT64_MAX; /* int64, and UINT64_MAX flipped */
    }
}

static int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

/* Reads a single axis from attribute-free input i of k (CumSum, CumProd). */
static int read_axis(gwr_kctx *k, int i, int64_t *axis) {
    const gwr_value *v = k->in[i];
    if ((v->dtype != GWR_INT32 && v->dtype != GWR_INT64) || v->rank > 1 || v->numel != 1) {
        gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %d (axis) must be one int32 or int64 value", i);
        return -1;
    }
    *axis = gwr_v_get_i64(v, 0);
    return 0;
}

/* ---- Reduce* --------------------------------------------------------------- */

typedef enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_LOGSUM, R_LSE, R_SUMSQ } rop;

static const char *const rop_names[] = {"ReduceSum",  "ReduceMean", "ReduceMax",    "ReduceMin",       "ReduceProd",
                                        "ReduceL1",   "ReduceL2",   "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};

/* The input shape as groups of merged dims (size-1 dims dropped). */
typedef struct groups {
    int n;
    int64_t size[GWR_MAX_RANK];
    int red[GWR_MAX_RANK];
    int64_t ostride[GWR_MAX_RANK]; /* output stride of each kept group, 0 for reduced */
} groups;

static void make_groups(int rank, const int64_t *dims, const uint8_t *reduced, groups *g) {
    g->n = 0;
    for (int i = 0; i < rank; i++) {
        if (dims[i] == 1) continue;
        int r = reduced[i] != 0;
        if (g->n && g->red[g->n - 1] == r) {
            g->size[g->n - 1] *= dims[i];
        } else {
            g->size[g->n] = dims[i];
            g->red[g->n++] = r;
        }
    }
    if (!g->n) g->size[0] = 1, g->red[0] = 0, g->n = 1;
    int64_t s = 1;
    for (int i = g->n - 1; i >= 0; i--) {
        g->ostride[i] = g->red[i] ? 0 : s;
        if (!g->red[i]) s *= g->size[i];
    }
}

typedef struct rctx {
    rop op;
    const gwr_value *x;
    double *acc, *shift; /* float accumulators; shift: LogSumExp's max */
    int64_t *iacc;       /* integer accumulators */
    double *row;
    int64_t *irow;
    int pass;            /* LogSumExp: 0 the max, 1 the sum */
} rctx;

static void frow(rctx *c, int64_t in_off, int64_t n, int64_t o, int red) {
    double *x = c->row, *a = c->acc + o;
    gwr_ku_load_f64(c->x, in_off, n, x);
    rop op = c->op;
    if (op == R_LSE && c->pass == 0) op = R_MAX;
    if (op == R_LSE) {
        const double *m = c->shift + o;
        if (red) {
            double sh = isfinite(m[0]) ? m[0] : 0, s = a[0];
            for (int64_t j = 0; j < n; j++) s += exp(x[j] - sh);
            a[0] = s;
        } else {
            for (int64_t j = 0; j < n; j++) a[j] += exp(x[j] - (isfinite(m[j]) ? m[j] : 0));
        }
        return;
    }
    switch (op) {
    case R_SUM: case R_MEAN: case R_LOGSUM:
        if (red) {
            double s = a[0];
            for (int64_t j = 0; j < n; j++) s += x[j];
            a[0] = s;
        } else {
            for (int64_t j = 0; j < n; j++) a[j] += x[j];
        }
        break;
    case R_L1:
        if (red) {
            double s = a[0];
            for (int64_t j = 0; j < n; j++) s += fabs(x[j]);
            a[0] = s;
        } else {
            for (int64_t j = 0; j < n; j++) a[j] += fabs(x[j]);
        }
        break;
    case R_L2: case R_SUMSQ:
        if (red) {
            double s = a[0];
            for (int64_t j = 0; j < n; j++) s += x[j] * x[j];
            a[0] = s;
        } else {
            for (int64_t j = 0; j < n; j++) a[j] += x[j] * x[j];
        }
        break;
    case R_PROD:
        if (red) {
            double s = a[0];
            for (int64_t j = 0; j < n; j++) s *= x[j];
            a[0] = s;
        } else {
            for (int64_t j = 0; j < n; j++) a[j] *= x[j];
        }
        break;
    case R_MAX: /* NaN wins: once there, no comparison replaces it */
        for (int64_t j = 0; j < n; j++) {
            double *d = red ? a : a + j;
            if (x[j] > *d || x[j] != x[j]) *d = x[j];
        }
        break;
    case R_MIN:
        for (int64_t j = 0; j < n; j++) {
            double *d = red ? a : a + j;
            if (x[j] < *d || x[j] != x[j]) *d = x[j];
        }
        break;
    default: break;
    }
}

static void irow(rctx *c, int64_t in_off, int64_t n, int64_t o, int red) {
    int64_t *x = c->irow, *a = c->iacc + o;
    load_i64(c->x, in_off, n, x, c->op == R_MAX || c->op == R_MIN);
    for (int64_t j = 0; j < n; j++) {
        int64_t *d = red ? a : a + j, v = x[j];
        switch (c->op) {
        case R_SUM: case R_MEAN: *d = wrap_add(*d, v); break;
        case R_L1: *d = wrap_add(*d, v < 0 ? (int64_t)(0 - (uint64_t)v) : v); break;
        case R_SUMSQ: *d = wrap_add(*d, wrap_mul(v, v)); break;
        case R_PROD: *d = wrap_mul(*d, v); break;
        case R_MAX: if (v > *d) *d = v; break;
        case R_MIN: if (v < *d) *d = v; break;
        default: break;
        }
    }
}

/* Calls row() for every row (last group) of x whose index in the first
 * group is in [i0, i1), in memory order. */
static void walk(const groups *g, rctx *c, void (*row)(rctx *, int64_t, int64_t, int64_t, int), int64_t i0,
                 int64_t i1) {
    int64_t idx[GWR_MAX_RANK] = {0};
    int last = g->n - 1;
    int64_t len = g->size[last], rows = 1, below = 1; /* below: elements of x under one first-group index */
    for (int i = 1; i < g->n; i++) below *= g->size[i];
    for (int i = 0; i < last; i++) rows *= i ? g->size[i] : i1 - i0;
    if (last == 0) rows = 1; /* one group: one row */
    int64_t in_off = i0 * below, o = i0 * g->ostride[0];
    if (last > 0) idx[0] = i0;
    for (int64_t r = 0; r < rows; r++) {
        row(c, in_off, len, o, g->red[last]);
        in_off += len;
        for (int i = last - 1; i >= 0; i--) { /* odometer over the outer groups */
            o += g->ostride[i];
            if (++idx[i] < g->size[i]) break;
            o -= g->ostride[i] * g->size[i];
            idx[i] = 0;
        }
    }
}

/* reduce's walks on threads: the first group kept, its indices own
 * disjoint outputs, each accumulated in the serial order; rows holds a
 * row's scratch per thread (the rctx's row or irow, rowlen long). */
typedef struct rwalk {
    const groups *g;
    const rctx *c;
    void (*row)(rctx *, int64_t, int64_t, int64_t, int);
    int64_t rowlen;
} rwalk;

static void walk_range(void *ctx, int64_t i0, int64_t i1) {
    const rwalk *w = ctx;
    rctx c = *w->c;
    int t = gwr_par_thread();
    if (c.row) c.row += t * w->rowlen;
    if (c.irow) c.irow += t * w->rowlen;
    walk(w->g, &c, w->row, i0, i1);
}

/* walk over every row, on the session's threads where the first group is
 * kept; 0, or -1 out of memory (for per-thread rows). */
static int walk_all(gwr_kctx *k, const groups *g, rctx *c, void (*row)(rctx *, int64_t, int64_t, int64_t, int)) {
    int64_t rowlen = g->size[g->n - 1] ? g->size[g->n - 1] : 1, n0 = g->size[0];
    int64_t grain = gwr_par_grain(g->n > 1 ? gwr_shape_numel(g->n - 1, g->size + 1) : n0);
    if (g->n < 2 || g->red[0] || !gwr_tpool_splits(k->tpool, n0, grain)) {
        walk(g, c, row, 0, n0);
        return 0;
    }
    int nt = gwr_tpool_size(k->tpool);
    rctx cc = *c;
    void *rows = gwr_malloc((size_t)(nt * rowlen) * (c->row ? sizeof *c->row : sizeof *c->irow));
    if (!rows) return -1;
    if (c->row) cc.row = rows;
    else cc.irow = rows;
    rwalk w = {g, &cc, row, rowlen};
    gwr_k_parallel(k, n0, grain, walk_range, &w);
    gwr_free(rows);
    return 0;
}

static gwr_status reduce(gwr_kctx *k, rop op) {
    const gwr_value *x = k->nin > 0 ? k->in[0] : NULL;
    if (!x) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input 0 (data) is missing");
    int fl = gwr_ku_is_float(x->dtype);
    if (!fl && !gwr_ku_is_int(x->dtype) && !(x->dtype == GWR_BOOL && (op == R_MAX || op == R_MIN))) /* bool: opset 20 */
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s does not take %s", rop_names[op], gwr_dtype_name(x->dtype));
    int r = x->rank;
    int64_t axes[GWR_MAX_RANK];
    int64_t na;
    /* Axes: an input from opset 13 (ReduceSum) / 18 (the others), an
     * attribute before; either is read when present. */
    if (k->nin > 1 && k->in[1]) {
        if (k->in[1]->numel > r && k->in[1]->numel > 0)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%lld axes for a rank-%d input", (long long)k->in[1]->numel, r);
        if ((na = gwr_k_in_ints(k, 1, axes, GWR_MAX_RANK)) < 0) return GWR_ERR_INVALID_ARG;
    } else {
        const int64_t *av;
        na = gwr_k_ints(k, "axes", &av);
        if (na < 0) na = 0;
        if (na > r) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%lld axes for a rank-%d input", (long long)na, r);
        for (int64_t i = 0; i < na; i++) axes[i] = av[i];
    }
    int64_t keepdims = gwr_k_int(k, "keepdims", 1);
    if (na == 0 && gwr_k_int(k, "noop_with_empty_axes", 0)) {
        gwr_k_set_out(k, 0, (gwr_value *)x);
        return GWR_OK;
    }
    uint8_t red[GWR_MAX_RANK] = {0};
    if (gwr_ku_axes_mask(k, axes, na, r, red, NULL)) return GWR_ERR_INVALID_ARG;
    if (na == 0) memset(red, 1, sizeof red);
    int64_t od[GWR_MAX_RANK];
    int orank = 0;
    int64_t cnt = 1;
    for (int i = 0; i < r; i++) {
        if (red[i]) cnt *= x->dims[i];
        if (!red[i]) od[orank++] = x->dims[i];
        else if (keepdims) od[orank++] = 1;
    }
    gwr_value *y = gwr_k_out(k, 0, x->dtype, orank, od);
    if (!y) return GWR_ERR_NOMEM;
    int64_t on = y->numel;
    if (!on) return GWR_OK;
    groups g;
    make_groups(r, x->dims, red, &g);
    rctx c = {op, x, NULL, NULL, NULL, NULL, NULL, 0};
    int64_t rowlen = g.size[g.n - 1];
    int intpath = !fl && op != R_L2 && op != R_LOGSUM && op != R_LSE;
    gwr_status rc = GWR_OK;
    if (intpath) {
        c.iacc = gwr_malloc((size_t)on * sizeof *c.iacc);
        c.irow = gwr_malloc((size_t)(rowlen ? rowlen : 1) * sizeof *c.irow);
        if (!c.iacc || !c.irow) {
            rc = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
            goto done;
        }
        int64_t init = op == R_PROD ? 1 : op == R_MAX ? int_lowest(x->dtype) : op == R_MIN ? int_highest(x->dtype) : 0;
        for (int64_t i = 0; i < on; i++) c.iacc[i] = init;
        if (x->numel && walk_all(k, &g, &c, irow)) {
            rc = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
            goto done;
        }
        if (op == R_MEAN)
            for (int64_t i = 0; i < on; i++) c.iacc[i] = cnt ? c.iacc[i] / cnt : 0;
        store_i64(y, 0, on, c.iacc, op == R_MAX || op == R_MIN);
    } else {
        c.acc = gwr_malloc((size_t)on * sizeof *c.acc);
        c.row = gwr_malloc((size_t)(rowlen ? rowlen : 1) * sizeof *c.row);
        if (op == R_LSE) c.shift = gwr_malloc((size_t)on * sizeof *c.shift);
        if (!c.acc || !c.row || (op == R_LSE && !c.shift)) {
            rc = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
            goto done;
        }
        double init = op == R_PROD ? 1 : op == R_MAX ? -INFINITY : op == R_MIN ? INFINITY : 0;
        if (op == R_LSE) {
            for (int64_t i = 0; i < on; i++) c.shift[i] = -INFINITY;
            double *a = c.acc;
            c.acc = c.shift;
            int bad = x->numel && walk_all(k, &g, &c, frow);
            c.acc = a;
            if (bad) {
                rc = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
                goto done;
            }
            c.pass = 1;
        }
        for (int64_t i = 0; i < on; i++) c.acc[i] = init;
        if (x->numel && walk_all(k, &g, &c, frow)) {
            rc = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
            goto done;
        }
        for (int64_t i = 0; i < on; i++) {
            double v = c.acc[i];
            switch (op) {
            case R_MEAN: v = cnt ? v / (double)cnt : NAN; break;
            case R_L2: v = sqrt(v); break;
            case R_LOGSUM: v = log(v); break;
            case R_LSE: v = log(v) + (isfinite(c.shift[i]) ? c.shift[i] : 0); break;
            default: break;
            }
            c.acc[i] = v;
        }
        gwr_ku_store_f64(y, 0, on, c.acc);
    }
done:
    gwr_free(c.acc), gwr_free(c.shift), gwr_free(c.iacc), gwr_free(c.row), gwr_free(c.irow);
    return rc;
}

static gwr_status k_reduce_sum(gwr_kctx *k) { return reduce(k, R_SUM); }
static gwr_status k_reduce_mean(gwr_kctx *k) { return reduce(k, R_MEAN); }
static gwr_status k_reduce_max(gwr_kctx *k) { return reduce(k, R_MAX); }
static gwr_status k_reduce_min(gwr_kctx *k) { return reduce(k, R_MIN); }
static gwr_status k_reduce_prod(gwr_kctx *k) { return reduce(k, R_PROD); }
static gwr_status k_reduce_l1(gwr_kctx *k) { return reduce(k, R_L1); }
static gwr_status k_reduce_l2(gwr_kctx *k) { return reduce(k, R_L2); }
static gwr_status k_reduce_log_sum(gwr_kctx *k) { return reduce(k, R_LOGSUM); }
static gwr_status k_reduce_log_sum_exp(gwr_kctx *k) { return reduce(k, R_LSE); }
static gwr_status k_reduce_sum_square(gwr_kctx *k) { return reduce(k, R_SUMSQ); }

/* ---- ArgMax / ArgMin --------------------------------------------------------- */

/* outer x n x inner around axis a. */
static void split_axis(const gwr_value *x, int a, int64_t *outer, int64_t *n, int64_t *inner) {
    *outer = *inner = 1;
    for (int i = 0; i < a; i++) *outer *= x->dims[i];
    for (int i = a + 1; i < x->rank; i++) *inner *= x->dims[i];
    *n = x->rank ? x->dims[a] : 1;
}

static gwr_status arg_extreme(gwr_kctx *k, int want_max) {
    const gwr_value *x = k->nin > 0 ? k->in[0] : NULL;
    if (!x) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input 0 (data) is missing");
    int fl = gwr_ku_is_float(x->dtype);
    if (!fl && !gwr_ku_is_int(x->dtype))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s does not take %s", want_max ? "ArgMax" : "ArgMin",
                          gwr_dtype_name(x->dtype));
    int64_t axis = gwr_k_int(k, "axis", 0);
    int r = x->rank;
    int a = gwr_axis(axis, r ? r : 1);
    if (a < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)axis, r);
    int keepdims = gwr_k_int(k, "keepdims", 1) != 0, last = gwr_k_int(k, "select_last_index", 0) != 0;
    int64_t outer, n, inner;
    split_axis(x, a, &outer, &n, &inner);
    if (n == 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %d is empty: no index to select", a);
    int64_t od[GWR_MAX_RANK];
    int orank = 0;
    for (int i = 0; i < r; i++) {
        if (i != a) od[orank++] = x->dims[i];
        else if (keepdims) od[orank++] = 1;
    }
    gwr_value *y = gwr_k_out(k, 0, GWR_INT64, orank, od);
    if (!y) return GWR_ERR_NOMEM;
    if (!y->numel) return GWR_OK;
    int64_t *out = y->data;
    /* Best values as doubles for floats, order keys for integers. */
    double *bv = NULL, *fr = NULL;
    int64_t *iv = NULL, *ir = NULL;
    if (fl) bv = gwr_malloc((size_t)inner * sizeof *bv), fr = gwr_malloc((size_t)inner * sizeof *fr);
    else iv = gwr_malloc((size_t)inner * sizeof *iv), ir = gwr_malloc((size_t)inner * sizeof *ir);
    if ((fl && (!bv || !fr)) || (!fl && (!iv || !ir))) {
        gwr_free(bv), gwr_free(fr), gwr_free(iv), gwr_free(ir);
        return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    }
    for (int64_t o = 0; o < outer; o++) {
        int64_t *bi = out + o * inner;
        memset(bi, 0, (size_t)inner * sizeof *bi);
        for (int64_t i = 0; i < n; i++) {
            int64_t off = (o * n + i) * inner;
            if (fl) {
                gwr_ku_load_f64(x, off, inner, i ? fr : bv);
                if (!i) continue;
                for (int64_t j = 0; j < inner; j++) {
                    double v = fr[j], b = bv[j];
                    int better;
                    if (v != v) better = last || b == b; /* the first NaN (the last one with select_last_index) */
                    else if (b != b) better = 0;
                    else better = want_max ? (last ? v >= b : v > b) : (last ? v <= b : v < b);
                    if (better) bv[j] = v, bi[j] = i;
                }
            } else {
                load_i64(x, off, inner, i ? ir : iv, 1);
                if (!i) continue;
                for (int64_t j = 0; j < inner; j++) {
                    int64_t v = ir[j], b = iv[j];
                    int better = want_max ? (last ? v >= b : v > b) : (last ? v <= b : v < b);
                    if (better) iv[j] = v, bi[j] = i;
                }
            }
        }
    }
    gwr_free(bv), gwr_free(fr), gwr_free(iv), gwr_free(ir);
    return GWR_OK;
}

static gwr_status k_argmax(gwr_kctx *k) { return arg_extreme(k, 1); }
static gwr_status k_argmin(gwr_kctx *k) { return arg_extreme(k, 0); }

/* ---- TopK ---------------------------------------------------------------------- */

typedef struct tk_item {
    double f;
    int64_t i, idx;
} tk_item;

/* Orders: larger (or smaller) first, NaN last, ties by lower index. */
static int tk_cmp_f_desc(const void *pa, const void *pb) {
    const tk_item *a = pa, *b = pb;
    int an = a->f != a->f, bn = b->f != b->f;
    if (an != bn) return an - bn;
    if (!an && a->f != b->f) return a->f > b->f ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}
static int tk_cmp_f_asc(const void *pa, const void *pb) {
    const tk_item *a = pa, *b = pb;
    int an = a->f != a->f, bn = b->f != b->f;
    if (an != bn) return an - bn;
    if (!an && a->f != b->f) return a->f < b->f ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}
static int tk_cmp_i_desc(const void *pa, const void *pb) {
    const tk_item *a = pa, *b = pb;
    if (a->i != b->i) return a->i > b->i ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}
static int tk_cmp_i_asc(const void *pa, const void *pb) {
    const tk_item *a = pa, *b = pb;
    if (a->i != b->i) return a->i < b->i ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

static gwr_status k_topk(gwr_kctx *k) {
    const gwr_value *x = k->nin > 0 ? k->in[0] : NULL;
    if (!x) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input 0 (X) is missing");
    int fl = gwr_ku_is_float(x->dtype);
    if (!fl && !gwr_ku_is_int(x->dtype)) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "TopK does not take %s", gwr_dtype_name(x->dtype));
    if (x->rank < 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "X must have rank 1 or more");
    int64_t kk;
    if (k->nin > 1 && k->in[1]) {
        const gwr_value *kv = k->in[1];
        if ((kv->dtype != GWR_INT64 && kv->dtype != GWR_INT32) || kv->rank > 1 || kv->numel != 1)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "K must be a 1-D int64 tensor of one value");
        kk = gwr_v_get_i64(kv, 0);
    } else {
        kk = gwr_k_int(k, "k", -1);
        if (kk < 0 && k->nin < 2) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "no K: neither input 1 nor attribute k");
    }
    int64_t axis = gwr_k_int(k, "axis", -1);
    int a = gwr_axis(axis, x->rank);
    if (a < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
    int64_t outer, n, inner;
    split_axis(x, a, &outer, &n, &inner);
    if (kk < 0 || kk > n)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "K = %lld is outside [0, %lld] (the size of axis %d)", (long long)kk,
                          (long long)n, a);
    int largest = gwr_k_int(k, "largest", 1) != 0;
    int64_t od[GWR_MAX_RANK];
    memcpy(od, x->dims, (size_t)x->rank * sizeof *od);
    od[a] = kk;
    gwr_value *vals = gwr_k_out(k, 0, x->dtype, x->rank, od);
    if (!vals) return GWR_ERR_NOMEM;
    gwr_value *idxs = gwr_k_out(k, 1, GWR_INT64, x->rank, od);
    if (!idxs) return GWR_ERR_NOMEM;
    if (!vals->numel) return GWR_OK;
    tk_item *it = gwr_malloc((size_t)n * sizeof *it);
    if (!it) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    int (*cmp)(const void *, const void *) =
        fl ? (largest ? tk_cmp_f_desc : tk_cmp_f_asc) : (largest ? tk_cmp_i_desc : tk_cmp_i_asc);
    size_t es = gwr_dtype_size(x->dtype);
    const char *xs = x->data;
    char *vs = vals->data;
    int64_t *is = idxs->data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            for (int64_t i = 0; i < n; i++) {
                int64_t off = (o * n + i) * inner + j;
                it[i].idx = i;
                if (fl) it[i].f = gwr_v_get_f64(x, off);
                else load_i64(x, off, 1, &it[i].i, 1);
            }
            qsort(it, (size_t)n, sizeof *it, cmp); /* sorted = 0 may give any order: sorted is one */
            for (int64_t q = 0; q < kk; q++) {
                int64_t so = (o * n + it[q].idx) * inner + j, d = (o * kk + q) * inner + j;
                memcpy(vs + (size_t)d * es, xs + (size_t)so * es, es);
                is[d] = it[q].idx;
            }
        }
    gwr_free(it);
    return GWR_OK;
}

/* ---- CumSum, CumProd ------------------------------------------------------------ */

/* The running sum (prod 0) or product (prod 1) along the axis input;
 * exclusive starts from the identity (0 or 1), reverse runs from the end.
 * Integers wrap as two's complement. */
static gwr_status cumulative(gwr_kctx *k, int prod) {
    const char *op = prod ? "CumProd" : "CumSum";
    const gwr_value *x = k->nin > 0 ? k->in[0] : NULL;
    if (!x) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input 0 (x) is missing");
    if (k->nin < 2 || !k->in[1]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input 1 (axis) is missing");
    int fl = gwr_ku_is_float(x->dtype);
    if (!fl && !gwr_ku_is_int(x->dtype)) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s does not take %s", op, gwr_dtype_name(x->dtype));
    int64_t axis;
    if (read_axis(k, 1, &axis)) return GWR_ERR_INVALID_ARG;
    if (x->rank < 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "x must have rank 1 or more");
    int a = gwr_axis(axis, x->rank);
    if (a < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
    int excl = gwr_k_int(k, "exclusive", 0) != 0, rev = gwr_k_int(k, "reverse", 0) != 0;
    gwr_value *y = gwr_k_out(k, 0, x->dtype, x->rank, x->dims);
    if (!y) return GWR_ERR_NOMEM;
    if (!y->numel) return GWR_OK;
    int64_t outer, n, inner;
    split_axis(x, a, &outer, &n, &inner);
    double *fs = NULL, *fr = NULL, *fo = NULL;
    int64_t *is = NULL, *ir = NULL, *io = NULL;
    size_t sz = (size_t)inner * 8;
    if (fl) fs = gwr_malloc(sz), fr = gwr_malloc(sz), fo = gwr_malloc(sz);
    else is = gwr_malloc(sz), ir = gwr_malloc(sz), io = gwr_malloc(sz);
    if (fl ? !fs || !fr || !fo : !is || !ir || !io) {
        gwr_free(fs), gwr_free(fr), gwr_free(fo), gwr_free(is), gwr_free(ir), gwr_free(io);
        return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    }
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t j = 0; j < inner; j++) {
            if (fl) fs[j] = prod;
            else is[j] = prod;
        }
        for (int64_t q = 0; q < n; q++) {
            int64_t i = rev ? n - 1 - q : q, off = (o * n + i) * inner;
            if (fl) {
                gwr_ku_load_f64(x, off, inner, fr);
                for (int64_t j = 0; j < inner; j++) {
                    if (excl) fo[j] = fs[j];
                    fs[j] = prod ? fs[j] * fr[j] : fs[j] + fr[j];
                    if (!excl) fo[j] = fs[j];
                }
                gwr_ku_store_f64(y, off, inner, fo);
            } else {
                load_i64(x, off, inner, ir, 0);
                for (int64_t j = 0; j < inner; j++) {
                    if (excl) io[j] = is[j];
                    is[j] = prod ? wrap_mul(is[j], ir[j]) : wrap_add(is[j], ir[j]);
                    if (!excl) io[j] = is[j];
                }
                store_i64(y, off, inner, io, 0);
            }
        }
    }
    gwr_free(fs), gwr_free(fr), gwr_free(fo), gwr_free(is), gwr_free(ir), gwr_free(io);
    return GWR_OK;
}

static gwr_status k_cumsum(gwr_kctx *k) { return cumulative(k, 0); }
static gwr_status k_cumprod(gwr_kctx *k) { return cumulative(k, 1); }

const gwr_kernel_entry gwr_kernels_reduce[] = {
    GWR_KERNEL(ReduceSum, k_reduce_sum, .flags = GWR_KF_ALIAS),
    GWR_KERNEL(ReduceMean, k_reduce_mean, .flags = GWR_KF_ALIAS),
    GWR_KERNEL(ReduceMax, k_reduce_max, .flags = GWR_KF_ALIAS),
    GWR_KERNEL(ReduceMin, k_reduce_min, .flags = GWR_KF_ALIAS),
    GWR_KERNEL(ReduceProd, k_reduce_prod, .flags = GWR_KF_ALIAS),
    GWR_KERNEL(ReduceL1, k_reduce_l1, .flags = GWR_KF_ALIAS),
    GWR_KERNEL(ReduceL2, k_reduce_l2, .flags = GWR_KF_ALIAS),
    GWR_KERNEL(ReduceLogSum, k_reduce_log_sum, .flags = GWR_KF_ALIAS),
    GWR_KERNEL(ReduceLogSumExp, k_reduce_log_sum_exp, .flags = GWR_KF_ALIAS),
    GWR_KERNEL(ReduceSumSquare, k_reduce_sum_square, .flags = GWR_KF_ALIAS),
    GWR_KERNEL(ArgMax, k_argmax),
    GWR_KERNEL(ArgMin, k_argmin),
    GWR_KERNEL(TopK, k_topk),
    GWR_KERNEL(CumSum, k_cumsum),
    GWR_KERNEL(CumProd, k_cumprod),
    {.fn = NULL},
};
