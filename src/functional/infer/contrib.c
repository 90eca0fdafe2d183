/* contrib.c - shape rules of onnxruntime's com.microsoft contrib ops that
 * `gwr optimize --target ort` emits (docs/ContribOperators.md, version 1):
 * SkipLayerNormalization, BiasGelu, Gelu, FastGelu, QuickGelu and
 * FusedMatMul, SkipSimplifiedLayerNormalization, and SimplifiedLayerNormalization (its RMSNorm, which it
 * registers in the default domain). As in exec/kernels/contrib.c.
 *
 * The bias-like inputs (gamma, beta, bias of SkipLayerNormalization, the
 * bias of BiasGelu and FastGelu) are 1-D over the last axis, as
 * onnxruntime's kernels require; SkipLayerNormalization's input is of rank
 * 2 or 3 (onnxruntime's check) and its skip of the input's shape or
 * broadcasting to it along the leading dims. FusedMatMul's transBatchA and
 * transBatchB are refused (not implemented). */

#include <string.h>

#include "functional/infer/infer_internal.h"

/* 1-D input i (may be absent) of x's dtype and last dim. */
static int last_axis_vec(ictx *c, int i, const gwr_tensor *x, const shp *xs, const char *what) {
    gwr_tensor *t = inp(c, i);
    if (!t) return 1;
    if (!gwr_fi_same_dtype(c, x, t)) return 0;
    return gwr_fi_want_vec(c, t, xs->rank > 0 ? xs->d[xs->rank - 1] : GWR_DIM_UNKNOWN, what);
}

static gwr_status infer_skip_layer_norm(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input"), *skip = gwr_fi_need(c, 1, "skip"), *g = gwr_fi_need(c, 2, "gamma");
    shp xs, ss, ms;
    sbuf p, q;
    if (!x || !skip || !g || !gwr_fi_same_dtype(c, x, skip)) return c->st;
    gwr_fi_afloat(c, "epsilon", 1e-12f);
    if (c->st) return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_shp_get(skip, &ss);
    if (!gwr_fi_want_rank(c, x, &xs, 2, 3, "input") || !gwr_fi_want_rank(c, skip, &ss, 2, 3, "skip")) return c->st;
    if (xs.rank >= 0 && ss.rank >= 0 &&
        (!gwr_fi_ubcast_ok(&xs, &ss) || !gwr_fi_dmerge(xs.d[xs.rank - 1], ss.d[ss.rank - 1], &ms.d[0])))
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "skip %s does not broadcast to input %s", gwr_fi_tstr(skip, &p),
                           gwr_fi_tstr(x, &q));
    /* SkipSimplifiedLayerNormalization has no beta: its bias is input 3 */
    int simple = c->id == GWR_OP_MS_SkipSimplifiedLayerNormalization;
    if (!last_axis_vec(c, 2, x, &xs, "gamma") || !last_axis_vec(c, 3, x, &xs, simple ? "bias" : "beta") ||
        (!simple && !last_axis_vec(c, 4, x, &xs, "bias")))
        return c->st;
    if (xs.rank < 0) {
        for (int i = 0; i < 4; i++)
            if (gwr_fi_put(c, i, i == 1 || i == 2 ? GWR_FLOAT32 : dt_of(x), NULL)) return c->st;
        return GWR_OK;
    }
    ms = xs;
    ms.d[ms.rank - 1] = 1;
    if (gwr_fi_put(c, 0, dt_of(x), &xs) || gwr_fi_put(c, 1, GWR_FLOAT32, &ms) || gwr_fi_put(c, 2, GWR_FLOAT32, &ms))
        return c->st;
    return gwr_fi_put(c, 3, dt_of(x), &xs);
}

/* BiasGelu(A, B) and FastGelu(X, [bias]): the input's type, the bias 1-D
 * over its last axis. */
static gwr_status infer_biased(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, c->id == GWR_OP_MS_BiasGelu ? "A" : "X");
    shp xs;
    if (!x) return c->st;
    if (c->id == GWR_OP_MS_BiasGelu && !gwr_fi_need(c, 1, "B")) return c->st;
    gwr_fi_shp_get(x, &xs);
    if (!gwr_fi_want_rank(c, x, &xs, 1, GWR_MAX_RANK, "input") || !last_axis_vec(c, 1, x, &xs, "bias")) return c->st;
    return gwr_fi_same_as_input(c, GWR_UNDEFINED);
}

static gwr_status infer_quick_gelu(ictx *c) {
    if (!gwr_fi_need(c, 0, "X")) return c->st;
    gwr_fi_afloat(c, "alpha", 1.702f);
    return c->st ? c->st : gwr_fi_same_as_input(c, GWR_UNDEFINED);
}

/* Shape s with its last two dims swapped when t (rank >= 2 when known). */
static int transposed(ictx *c, const gwr_tensor *x, int64_t t, shp *s, const char *what) {
    sbuf b;
    gwr_fi_shp_get(x, s);
    if (!t || s->rank < 0) return 1;
    if (s->rank < 2) {
        gwr_fi_fail(c, GWR_ERR_SHAPE, "trans%s needs %s of rank >= 2, got %s", what, what, gwr_fi_tstr(x, &b));
        return 0;
    }
    gwr_dim d = s->d[s->rank - 1];
    s->d[s->rank - 1] = s->d[s->rank - 2];
    s->d[s->rank - 2] = d;
    return 1;
}

/* FusedMatMul: alpha op(A) op(B), op a transpose of the last two dims;
 * then NumPy matmul's shapes. */
static gwr_status infer_fused_matmul(ictx *c) {
    gwr_tensor *a = gwr_fi_need(c, 0, "A"), *b = gwr_fi_need(c, 1, "B");
    shp sa, sb, ba, bb, out;
    gwr_dim k;
    sbuf x, y;
    if (!a || !b || !gwr_fi_same_dtype(c, a, b)) return c->st;
    int64_t ta = gwr_fi_aint(c, "transA", 0), tb = gwr_fi_aint(c, "transB", 0);
    int64_t tba = gwr_fi_aint(c, "transBatchA", 0), tbb = gwr_fi_aint(c, "transBatchB", 0);
    gwr_fi_afloat(c, "alpha", 1.0f);
    if (c->st) return c->st;
    if (tba || tbb) return gwr_fi_fail(c, GWR_ERR_UNSUPPORTED, "transBatchA and transBatchB are not implemented");
    if (!transposed(c, a, ta, &sa, "A") || !transposed(c, b, tb, &sb, "B")) return c->st;
    if (sa.rank == 0 || sb.rank == 0)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "operands must have rank >= 1, got %s and %s", gwr_fi_tstr(a, &x),
                           gwr_fi_tstr(b, &y));
    if (sa.rank < 0 || sb.rank < 0) return gwr_fi_put(c, 0, dt_of(a), NULL);
    if (!gwr_fi_dmerge(sa.d[sa.rank - 1], sb.d[sb.rank == 1 ? 0 : sb.rank - 2], &k))
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "inner dimensions differ: %s x %s (transA=%lld, transB=%lld)",
                           gwr_fi_tstr(a, &x), gwr_fi_tstr(b, &y), (long long)ta, (long long)tb);
    ba.rank = sa.rank > 2 ? sa.rank - 2 : 0;
    bb.rank = sb.rank > 2 ? sb.rank - 2 : 0;
    memcpy(ba.d, sa.d, (size_t)ba.rank * sizeof sa.d[0]);
    memcpy(bb.d, sb.d, (size_t)bb.rank * sizeof sb.d[0]);
    if (!gwr_fi_bcast(&ba, &bb, &out))
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "cannot broadcast the batch dims of %s and %s", gwr_fi_tstr(a, &x),
                           gwr_fi_tstr(b, &y));
    if (sa.rank >= 2) out.d[out.rank++] = sa.d[sa.rank - 2];
    if (sb.rank >= 2) out.d[out.rank++] = sb.d[sb.rank - 1];
    return gwr_fi_put(c, 0, dt_of(a), &out);
}

/* SimplifiedLayerNormalization (onnxruntime's RMSNorm, default domain):
 * X's type; scale over the normalized dims [axis, rank); inv_std_var float
 * with those dims 1. */
static gwr_status infer_simplified_ln(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X"), *sc = gwr_fi_need(c, 1, "scale");
    shp xs, ss, tail, ms;
    int64_t axis;
    sbuf p, q;
    if (!x || !sc || !gwr_fi_same_dtype(c, x, sc)) return c->st;
    axis = gwr_fi_aint(c, "axis", -1);
    gwr_fi_afloat(c, "epsilon", 1e-5f);
    if (c->st) return c->st;
    gwr_fi_shp_get(x, &xs);
    if (xs.rank < 0) return gwr_fi_put(c, 0, dt_of(x), NULL) ? c->st : gwr_fi_put(c, 1, GWR_FLOAT32, NULL);
    if (!gwr_fi_norm_axis(c, axis, xs.rank, 0, &axis)) return c->st;
    tail.rank = xs.rank - (int)axis;
    memcpy(tail.d, xs.d + axis, (size_t)tail.rank * sizeof xs.d[0]);
    gwr_fi_shp_get(sc, &ss);
    if (!gwr_fi_ubcast_ok(&tail, &ss))
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "scale %s does not broadcast to the normalized dims of %s",
                           gwr_fi_tstr(sc, &p), gwr_fi_tstr(x, &q));
    ms = xs;
    for (int i = (int)axis; i < ms.rank; i++) ms.d[i] = 1;
    return gwr_fi_put(c, 0, dt_of(x), &xs) ? c->st : gwr_fi_put(c, 1, GWR_FLOAT32, &ms);
}

const gwr_fi_entry gwr_fi_rules_contrib[] = {
    {GWR_OP_SimplifiedLayerNormalization, infer_simplified_ln},
    {GWR_OP_MS_SkipLayerNormalization, infer_skip_layer_norm},
    {GWR_OP_MS_SkipSimplifiedLayerNormalization, infer_skip_layer_norm},
    {GWR_OP_MS_BiasGelu, infer_biased},
    {GWR_OP_MS_Gelu, gwr_fi_rule_same},
    {GWR_OP_MS_FastGelu, infer_biased},
    {GWR_OP_MS_QuickGelu, infer_quick_gelu},
    {GWR_OP_MS_FusedMatMul, infer_fused_matmul},
    {GWR_OP_CUSTOM, NULL},
};
