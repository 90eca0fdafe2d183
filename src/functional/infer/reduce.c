/* reduce.c - shape rules of the reductions: Reduce* over a set of axes
 * (from the axes input or, in older opsets, the attribute), ArgMax and
 * ArgMin, TopK, CumSum and CumProd. As in exec/kernels/reduce.c. */

#include <string.h>

#include "functional/infer/infer_internal.h"

/* Reduces the flagged axes of xs. */
static void reduce_dims(const shp *xs, const unsigned char *red, int keep, shp *out) {
    out->rank = 0;
    for (int i = 0; i < xs->rank; i++) {
        if (!red[i])
            out->d[out->rank++] = xs->d[i];
        else if (keep)
            out->d[out->rank++] = 1;
    }
}

static gwr_status infer_reduce(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "data");
    shp xs, out;
    ival av;
    int64_t keep, noop, axes[IV_MAX];
    unsigned char red[GWR_MAX_RANK];
    int have;
    if (!x) return c->st;
    keep = gwr_fi_aint(c, "keepdims", 1);
    noop = gwr_fi_aint(c, "noop_with_empty_axes", 0);
    have = gwr_fi_iv_param(c, 1, "axes", &av);
    if (c->st) return c->st;
    gwr_fi_shp_get(x, &xs);
    if (have && av.rank > 1) return gwr_fi_fail(c, GWR_ERR_SHAPE, "axes must be 1-D");
    if (have && !gwr_fi_iv_exact(&av)) {
        /* Which axes go is unknown: with keepdims every dim is kept or 1. */
        if (!keep || xs.rank < 0) return gwr_fi_put(c, 0, dt_of(x), NULL);
        out = xs;
        for (int i = 0; i < out.rank; i++)
            if (out.d[i] != 1) out.d[i] = GWR_DIM_UNKNOWN;
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    if (!have || av.n == 0) {
        if (noop) return gwr_fi_put(c, 0, dt_of(x), &xs);
        if (xs.rank < 0 && keep) return gwr_fi_put(c, 0, dt_of(x), NULL);
        if (xs.rank < 0) { /* everything reduced away: a scalar */
            out.rank = 0;
            return gwr_fi_put(c, 0, dt_of(x), &out);
        }
        memset(red, 1, sizeof red);
    } else {
        if (xs.rank < 0) return gwr_fi_put(c, 0, dt_of(x), NULL);
        if (!gwr_fi_norm_axes(c, &av, xs.rank, axes)) return c->st;
        memset(red, 0, sizeof red);
        for (int i = 0; i < av.n; i++) red[axes[i]] = 1;
    }
    reduce_dims(&xs, red, keep != 0, &out);
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

static gwr_status infer_argmax(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "data");
    shp xs, out;
    int64_t axis, keep;
    unsigned char red[GWR_MAX_RANK] = {0};
    if (!x) return c->st;
    axis = gwr_fi_aint(c, "axis", 0);
    keep = gwr_fi_aint(c, "keepdims", 1);
    if (c->st) return c->st;
    gwr_fi_shp_get(x, &xs);
    if (xs.rank < 0) return gwr_fi_put(c, 0, GWR_INT64, NULL);
    if (!gwr_fi_norm_axis(c, axis, xs.rank, 0, &axis)) return c->st;
    red[axis] = 1;
    reduce_dims(&xs, red, keep != 0, &out);
    return gwr_fi_put(c, 0, GWR_INT64, &out);
}

static gwr_status infer_topk(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X"), *k = gwr_fi_need(c, 1, "K");
    shp xs;
    ival kv;
    int64_t axis;
    sbuf p;
    if (!x || !k || !gwr_fi_want_dtype(c, k, GWR_INT64, "K")) return c->st;
    axis = gwr_fi_aint(c, "axis", -1);
    if (c->st) return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_iv_in(c, 1, &kv);
    if (xs.rank >= 0) {
        if (!gwr_fi_norm_axis(c, axis, xs.rank, 0, &axis)) return c->st;
        xs.d[axis] = GWR_DIM_UNKNOWN;
        if (kv.n == 1 && kv.k[0] == IV_VAL) {
            gwr_dim d = gwr_tensor_dim(x, (int)axis);
            if (kv.v[0] < 0 || (GWR_DIM_IS_KNOWN(d) && kv.v[0] > d))
                return gwr_fi_fail(c, GWR_ERR_SHAPE, "K = %lld does not fit axis %lld of %s", (long long)kv.v[0],
                                   (long long)axis, gwr_fi_tstr(x, &p));
            xs.d[axis] = kv.v[0];
        } else if (kv.n == 1 && kv.k[0] == IV_SYM) {
            xs.d[axis] = kv.v[0];
        }
    }
    if (gwr_fi_put(c, 0, dt_of(x), &xs) != GWR_OK) return c->st;
    return gwr_fi_put(c, 1, GWR_INT64, &xs);
}

static gwr_status infer_cumsum(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "x"), *ax = gwr_fi_need(c, 1, "axis");
    ival av;
    int64_t axis;
    if (!x || !ax || !gwr_fi_want_index_dtype(c, ax, "axis")) return c->st;
    gwr_fi_iv_in(c, 1, &av);
    if (av.n == 1 && av.k[0] == IV_VAL && gwr_tensor_rank(x) >= 0 &&
        !gwr_fi_norm_axis(c, av.v[0], gwr_tensor_rank(x), 0, &axis))
        return c->st;
    return gwr_fi_same_as_input(c, GWR_UNDEFINED);
}

const gwr_fi_entry gwr_fi_rules_reduce[] = {
    {GWR_OP_ReduceSum, infer_reduce},
    {GWR_OP_ReduceMean, infer_reduce},
    {GWR_OP_ReduceMax, infer_reduce},
    {GWR_OP_ReduceMin, infer_reduce},
    {GWR_OP_ReduceProd, infer_reduce},
    {GWR_OP_ReduceL1, infer_reduce},
    {GWR_OP_ReduceL2, infer_reduce},
    {GWR_OP_ReduceLogSum, infer_reduce},
    {GWR_OP_ReduceLogSumExp, infer_reduce},
    {GWR_OP_ReduceSumSquare, infer_reduce},
    {GWR_OP_ArgMax, infer_argmax},
    {GWR_OP_ArgMin, infer_argmax},
    {GWR_OP_TopK, infer_topk},
    {GWR_OP_CumSum, infer_cumsum},
    {GWR_OP_CumProd, infer_cumsum},
    {GWR_OP_CUSTOM, NULL},
};
