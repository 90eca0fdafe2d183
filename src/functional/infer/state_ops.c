/* state_ops.c - shape rules of the state-carrying ops of opsets 24-27 and
 * of ai.onnx.preview FlexAttention (kernels: exec/kernels/state_ops.c and
 * attention_linear.c).
 *
 *   TensorScatter        present_cache: past_cache's type; update must
 *                        match it but along axis
 *   CausalConvWithState  output: input's (B, C, L); present_state (B, C,
 *                        k - 1) from weight (C, 1, k)
 *   LinearAttention      output (B, T, q_num_heads * dv), dv = value's last
 *                        dim / kv_num_heads; present_state (B, kv_heads, dk,
 *                        dv), dk = query's last dim / q_num_heads, in
 *                        past_state's dtype (the query's without one)
 *   FlexAttention        Y (B, Hq, L, Ev) from Q (B, Hq, L, E), V (B, Hkv,
 *                        S, Ev)
 * Unknown dims stay unknown; known ones that contradict are errors. */
#include "functional/infer/infer_internal.h"

static gwr_status infer_tensor_scatter(ictx *c) {
    gwr_tensor *p = gwr_fi_need(c, 0, "past_cache"), *u = gwr_fi_need(c, 1, "update");
    if (!p || !u || !gwr_fi_same_dtype(c, p, u)) return c->st;
    shp ps, us;
    sbuf x, y;
    gwr_fi_shp_get(p, &ps);
    gwr_fi_shp_get(u, &us);
    int64_t axis = gwr_fi_aint(c, "axis", -2), ax;
    if (c->st) return c->st;
    if (ps.rank >= 0) {
        if (!gwr_fi_norm_axis(c, axis, ps.rank, 0, &ax)) return c->st;
        if (ax == 0) return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "axis %lld is the batch dim", (long long)axis);
        int ok = us.rank < 0 || us.rank == ps.rank;
        for (int i = 0; ok && us.rank >= 0 && i < ps.rank; i++)
            ok = i == ax ? !(GWR_DIM_IS_KNOWN(us.d[i]) && GWR_DIM_IS_KNOWN(ps.d[i]) && us.d[i] > ps.d[i])
                         : gwr_fi_dmerge(ps.d[i], us.d[i], &ps.d[i]);
        if (!ok)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "update %s does not fit past_cache %s along axis %lld", gwr_fi_tstr(u, &x),
                               gwr_fi_tstr(p, &y), (long long)axis);
    }
    if (!gwr_fi_want_dtype(c, inp(c, 2), GWR_INT64, "write_indices")) return c->st;
    return gwr_fi_put(c, 0, dt_of(p), &ps);
}

static gwr_status infer_causal_conv(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input"), *w = gwr_fi_need(c, 1, "weight");
    if (!x || !w || !gwr_fi_same_dtype(c, x, w) || !gwr_fi_same_dtype(c, x, inp(c, 2)) || !gwr_fi_same_dtype(c, x, inp(c, 3)))
        return c->st;
    shp xs, ws, st = {.rank = 3};
    gwr_fi_shp_get(x, &xs);
    gwr_fi_shp_get(w, &ws);
    if (!gwr_fi_want_rank(c, x, &xs, 3, 3, "input") || !gwr_fi_want_rank(c, w, &ws, 3, 3, "weight")) return c->st;
    if (xs.rank < 0) gwr_fi_shp_unknown_dims(&xs, 3);
    st.d[0] = xs.d[0], st.d[1] = xs.d[1];
    st.d[2] = ws.rank == 3 && GWR_DIM_IS_KNOWN(ws.d[2]) ? ws.d[2] - 1 : GWR_DIM_UNKNOWN;
    if (ws.rank == 3 && !gwr_fi_dmerge(xs.d[1], ws.d[0], &st.d[1])) {
        sbuf a, b;
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "weight %s does not have input %s's channels", gwr_fi_tstr(w, &a), gwr_fi_tstr(x, &b));
    }
    xs.d[1] = st.d[1];
    if (gwr_fi_put(c, 0, dt_of(x), &xs)) return c->st;
    return gwr_fi_put(c, 1, dt_of(x), &st);
}

static gwr_dim div_dim(gwr_dim a, int64_t b) { return GWR_DIM_IS_KNOWN(a) && b > 0 ? a / b : GWR_DIM_UNKNOWN; }

static gwr_status infer_linear_attention(ictx *c) {
    gwr_tensor *q = gwr_fi_need(c, 0, "query"), *k = gwr_fi_need(c, 1, "key"), *v = gwr_fi_need(c, 2, "value");
    gwr_tensor *ps = inp(c, 3);
    if (!q || !k || !v || !gwr_fi_same_dtype(c, q, k) || !gwr_fi_same_dtype(c, q, v)) return c->st;
    int64_t qh = gwr_fi_aint(c, "q_num_heads", 0), kvh = gwr_fi_aint(c, "kv_num_heads", 0);
    if (c->st) return c->st;
    if (qh <= 0 || kvh <= 0 || qh % kvh)
        return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "q_num_heads (%lld) must be a positive multiple of kv_num_heads (%lld)",
                           (long long)qh, (long long)kvh);
    shp qs, vs, y = {.rank = 3}, s = {.rank = 4};
    gwr_fi_shp_get(q, &qs);
    gwr_fi_shp_get(v, &vs);
    if (!gwr_fi_want_rank(c, q, &qs, 3, 3, "query") || !gwr_fi_want_rank(c, v, &vs, 3, 3, "value")) return c->st;
    if (qs.rank < 0) gwr_fi_shp_unknown_dims(&qs, 3);
    if (vs.rank < 0) gwr_fi_shp_unknown_dims(&vs, 3);
    gwr_dim dv = div_dim(vs.d[2], kvh);
    y.d[0] = s.d[0] = qs.d[0], y.d[1] = qs.d[1], y.d[2] = gwr_fi_dmul(qh, dv);
    s.d[1] = kvh, s.d[2] = div_dim(qs.d[2], qh), s.d[3] = dv;
    if (gwr_fi_put(c, 0, dt_of(q), &y)) return c->st;
    return gwr_fi_put(c, 1, ps && dt_of(ps) != GWR_UNDEFINED ? dt_of(ps) : dt_of(q), &s);
}

static gwr_status infer_flex_attention(ictx *c) {
    gwr_tensor *q = gwr_fi_need(c, 0, "Q"), *k = gwr_fi_need(c, 1, "K"), *v = gwr_fi_need(c, 2, "V");
    if (!q || !k || !v || !gwr_fi_same_dtype(c, q, k) || !gwr_fi_same_dtype(c, q, v)) return c->st;
    shp qs, ks, vs, y = {.rank = 4};
    gwr_fi_shp_get(q, &qs);
    gwr_fi_shp_get(k, &ks);
    gwr_fi_shp_get(v, &vs);
    if (!gwr_fi_want_rank(c, q, &qs, 4, 4, "Q") || !gwr_fi_want_rank(c, k, &ks, 4, 4, "K") ||
        !gwr_fi_want_rank(c, v, &vs, 4, 4, "V"))
        return c->st;
    if (qs.rank < 0) gwr_fi_shp_unknown_dims(&qs, 4);
    if (vs.rank < 0) gwr_fi_shp_unknown_dims(&vs, 4);
    y.d[0] = qs.d[0], y.d[1] = qs.d[1], y.d[2] = qs.d[2], y.d[3] = vs.d[3];
    return gwr_fi_put(c, 0, dt_of(q), &y);
}

const gwr_fi_entry gwr_fi_rules_state_ops[] = {
    {GWR_OP_TensorScatter, infer_tensor_scatter},
    {GWR_OP_CausalConvWithState, infer_causal_conv},
    {GWR_OP_LinearAttention, infer_linear_attention},
    {GWR_OP_PREVIEW_FlexAttention, infer_flex_attention},
    {GWR_OP_CUSTOM, NULL},
};
