/* gather.c - shape rules of Gather, GatherElements, GatherND and their
 * scatter counterparts (Scatter, ScatterElements, ScatterND), and Unique. As in
 * exec/kernels/gather.c. */

#include "functional/infer/infer_internal.h"

static gwr_status infer_gather(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "data"), *idx = gwr_fi_need(c, 1, "indices");
    shp xs, is, out;
    int64_t axis;
    sbuf p;
    if (!x || !idx || !gwr_fi_want_index_dtype(c, idx, "indices")) return c->st;
    axis = gwr_fi_aint(c, "axis", 0);
    if (c->st) return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_shp_get(idx, &is);
    if (xs.rank == 0) return gwr_fi_fail(c, GWR_ERR_SHAPE, "data must have rank >= 1, got %s", gwr_fi_tstr(x, &p));
    if (xs.rank >= 0 && !gwr_fi_norm_axis(c, axis, xs.rank, 0, &axis)) return c->st;
    if (xs.rank < 0 || is.rank < 0) return gwr_fi_put(c, 0, dt_of(x), NULL);
    if (xs.rank - 1 + is.rank > GWR_MAX_RANK)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "output rank exceeds %d", GWR_MAX_RANK);
    out.rank = 0;
    for (int i = 0; i < axis; i++) out.d[out.rank++] = xs.d[i];
    for (int i = 0; i < is.rank; i++) out.d[out.rank++] = is.d[i];
    for (int i = (int)axis + 1; i < xs.rank; i++) out.d[out.rank++] = xs.d[i];
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

static gwr_status infer_gather_elements(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "data"), *idx = gwr_fi_need(c, 1, "indices");
    shp xs, is;
    int64_t axis;
    sbuf p, q;
    if (!x || !idx || !gwr_fi_want_index_dtype(c, idx, "indices")) return c->st;
    axis = gwr_fi_aint(c, "axis", 0);
    if (c->st) return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_shp_get(idx, &is);
    if (xs.rank >= 0 && is.rank >= 0 && xs.rank != is.rank)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "data %s and indices %s differ in rank", gwr_fi_tstr(x, &p),
                           gwr_fi_tstr(idx, &q));
    if (xs.rank >= 0 && !gwr_fi_norm_axis(c, axis, xs.rank, 0, &axis)) return c->st;
    return gwr_fi_put(c, 0, dt_of(x), &is);
}

static gwr_status infer_gather_nd(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "data"), *idx = gwr_fi_need(c, 1, "indices");
    shp xs, is, out;
    int64_t b, last;
    sbuf p, q;
    if (!x || !idx || !gwr_fi_want_dtype(c, idx, GWR_INT64, "indices")) return c->st;
    b = gwr_fi_aint(c, "batch_dims", 0);
    if (c->st) return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_shp_get(idx, &is);
    if (xs.rank < 0 || is.rank < 0 || is.rank < 1 || !GWR_DIM_IS_KNOWN(is.d[is.rank - 1]))
        return gwr_fi_put(c, 0, dt_of(x), NULL);
    last = is.d[is.rank - 1];
    if (b < 0 || b >= is.rank || b >= xs.rank || last > xs.rank - b)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "indices %s do not fit data %s with batch_dims %lld", gwr_fi_tstr(idx, &q),
                           gwr_fi_tstr(x, &p), (long long)b);
    out.rank = 0;
    for (int i = 0; i < is.rank - 1; i++) out.d[out.rank++] = is.d[i];
    for (int i = (int)(b + last); i < xs.rank; i++) out.d[out.rank++] = xs.d[i];
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

/* Scatter, ScatterElements, ScatterND: the data's type. */
static gwr_status infer_scatter(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "data"), *idx = gwr_fi_need(c, 1, "indices"), *upd = gwr_fi_need(c, 2, "updates");
    if (!x || !idx || !upd || !gwr_fi_same_dtype(c, x, upd) || !gwr_fi_want_index_dtype(c, idx, "indices"))
        return c->st;
    return gwr_fi_same_as_input(c, GWR_UNDEFINED);
}

/* Unique: the values (flattened, or along axis) and three int64 index lists. */
static gwr_status infer_unique(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X");
    shp xs, out, idx = {1, {GWR_DIM_UNKNOWN}};
    int64_t axis;
    if (!x) return c->st;
    gwr_fi_shp_get(x, &xs);
    if (gwr_layer_has_attr(c->l, "axis") && xs.rank >= 0) {
        axis = gwr_fi_aint(c, "axis", 0);
        if (c->st || !gwr_fi_norm_axis(c, axis, xs.rank, 0, &axis)) return c->st;
        out = xs;
        out.d[axis] = GWR_DIM_UNKNOWN;
    } else {
        out = idx;
    }
    if (gwr_fi_put(c, 0, dt_of(x), &out)) return c->st;
    for (int i = 1; i < 4; i++)
        if (gwr_fi_put(c, i, GWR_INT64, &idx)) return c->st;
    return GWR_OK;
}

const gwr_fi_entry gwr_fi_rules_gather[] = {
    {GWR_OP_Gather, infer_gather},      {GWR_OP_GatherElements, infer_gather_elements},
    {GWR_OP_GatherND, infer_gather_nd}, {GWR_OP_Unique, infer_unique},
    {GWR_OP_Scatter, infer_scatter},    {GWR_OP_ScatterElements, infer_scatter},
    {GWR_OP_ScatterND, infer_scatter},  {GWR_OP_CUSTOM, NULL},
};
