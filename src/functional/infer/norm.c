/* norm.c - shape rules of the normalizations (BatchNormalization and its
 * running statistics, InstanceNormalization, LayerNormalization with its
 * mean and inverse deviation, and the shape-keeping LpNormalization,
 * MeanVarianceNormalization and LRN) and of Softmax, LogSoftmax and
 * Hardmax. As in exec/kernels/norm.c. */

#include <string.h>

#include "functional/infer/infer_internal.h"

/* The channel count of X (N, C, ...): dim 1, or 1 for a 1-D X. */
static gwr_dim channels(const shp *xs) {
    if (xs->rank < 0) return GWR_DIM_UNKNOWN;
    return xs->rank >= 2 ? xs->d[1] : 1;
}

static gwr_status infer_batch_norm(ictx *c) {
    static const char *const names[] = {"X", "scale", "B", "input_mean", "input_var"};
    gwr_tensor *t[5];
    shp xs, cs;
    gwr_dim ch;
    for (int i = 0; i < 5; i++)
        if (!(t[i] = gwr_fi_need(c, i, names[i]))) return c->st;
    if (!gwr_fi_same_dtype(c, t[1], t[2]) || !gwr_fi_same_dtype(c, t[3], t[4])) return c->st;
    gwr_fi_shp_get(t[0], &xs);
    ch = channels(&xs);
    for (int i = 1; i < 5; i++)
        if (!gwr_fi_want_vec(c, t[i], ch, names[i])) return c->st;
    cs.rank = 1;
    cs.d[0] = ch;
    if (gwr_fi_put(c, 0, dt_of(t[0]), &xs) != GWR_OK || gwr_fi_put(c, 1, dt_of(t[3]), &cs) != GWR_OK) return c->st;
    return gwr_fi_put(c, 2, dt_of(t[3]), &cs);
}

static gwr_status infer_instance_norm(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input"), *sc = gwr_fi_need(c, 1, "scale"), *b = gwr_fi_need(c, 2, "B");
    shp xs;
    if (!x || !sc || !b || !gwr_fi_same_dtype(c, x, sc) || !gwr_fi_same_dtype(c, x, b)) return c->st;
    gwr_fi_shp_get(x, &xs);
    if (!gwr_fi_want_rank(c, x, &xs, 2, GWR_MAX_RANK, "input") || !gwr_fi_want_vec(c, sc, channels(&xs), "scale") ||
        !gwr_fi_want_vec(c, b, channels(&xs), "B"))
        return c->st;
    return gwr_fi_put(c, 0, dt_of(x), &xs);
}

static gwr_status infer_layer_norm(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X"), *sc = gwr_fi_need(c, 1, "Scale"), *b = inp(c, 2);
    shp xs, ms, ss, tail;
    int64_t axis, stash;
    sbuf p, q;
    if (!x || !sc || !gwr_fi_same_dtype(c, x, sc) || !gwr_fi_same_dtype(c, x, b)) return c->st;
    axis = gwr_fi_aint(c, "axis", -1);
    stash = gwr_fi_aint(c, "stash_type", GWR_FLOAT32);
    gwr_fi_afloat(c, "epsilon", 1e-5f);
    if (c->st) return c->st;
    gwr_fi_shp_get(x, &xs);
    if (!gwr_dtype_is_valid((gwr_dtype)stash) || stash == GWR_UNDEFINED)
        return gwr_fi_fail(c, GWR_ERR_TYPE, "stash_type %lld is not a dtype", (long long)stash);
    if (xs.rank < 0) {
        if (gwr_fi_put(c, 0, dt_of(x), NULL) || gwr_fi_put(c, 1, (gwr_dtype)stash, NULL)) return c->st;
        return gwr_fi_put(c, 2, (gwr_dtype)stash, NULL);
    }
    if (!gwr_fi_norm_axis(c, axis, xs.rank, 0, &axis)) return c->st;
    tail.rank = xs.rank - (int)axis;
    memcpy(tail.d, xs.d + axis, (size_t)tail.rank * sizeof xs.d[0]);
    for (int i = 1; i < 3; i++) {
        gwr_tensor *t = inp(c, i);
        if (!t) continue;
        gwr_fi_shp_get(t, &ss);
        if (!gwr_fi_ubcast_ok(&tail, &ss))
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "%s %s does not broadcast to the normalized dims of %s",
                               i == 1 ? "Scale" : "B", gwr_fi_tstr(t, &p), gwr_fi_tstr(x, &q));
    }
    ms = xs;
    for (int i = (int)axis; i < ms.rank; i++) ms.d[i] = 1;
    if (gwr_fi_put(c, 0, dt_of(x), &xs) || gwr_fi_put(c, 1, (gwr_dtype)stash, &ms)) return c->st;
    return gwr_fi_put(c, 2, (gwr_dtype)stash, &ms);
}

/* Softmax, LogSoftmax, Hardmax: the input's type, with the axis checked. */
static gwr_status infer_softmax(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input");
    shp xs;
    int64_t axis;
    if (!x) return c->st;
    axis = gwr_fi_aint(c, "axis", -1);
    if (c->st) return c->st;
    gwr_fi_shp_get(x, &xs);
    if (xs.rank >= 0 && !(xs.rank == 0 && (axis == 0 || axis == -1)) && !gwr_fi_norm_axis(c, axis, xs.rank, 0, &axis))
        return c->st;
    return gwr_fi_put(c, 0, dt_of(x), &xs);
}

const gwr_fi_entry gwr_fi_rules_norm[] = {
    {GWR_OP_BatchNormalization, infer_batch_norm},
    {GWR_OP_InstanceNormalization, infer_instance_norm},
    {GWR_OP_LayerNormalization, infer_layer_norm},
    {GWR_OP_RMSNormalization, infer_layer_norm}, /* LayerNormalization's with no B and no statistics outputs */
    {GWR_OP_LpNormalization, gwr_fi_rule_same},
    {GWR_OP_MeanVarianceNormalization, gwr_fi_rule_same},
    {GWR_OP_LRN, gwr_fi_rule_same},
    {GWR_OP_Softmax, infer_softmax},
    {GWR_OP_LogSoftmax, infer_softmax},
    {GWR_OP_Hardmax, infer_softmax},
    {GWR_OP_CUSTOM, NULL},
};
