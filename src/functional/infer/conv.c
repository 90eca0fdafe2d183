/* conv.c - shape rules of the convolutions: Conv, ConvInteger, QLinearConv
 * (one rule, told where X, W and B are) and ConvTranspose, over any number
 * of spatial dims. The spatial parameters (strides, pads, auto_pad ...)
 * are read by common.c, which pool.c shares. As in exec/kernels/conv.c. */

#include "functional/infer/infer_internal.h"

/* Conv, ConvInteger, QLinearConv: x, w, bias at the given inputs. */
static gwr_status infer_conv(ictx *c, int xi, int wi, int bi, gwr_dtype dt) {
    gwr_tensor *x = gwr_fi_need(c, xi, "X"), *w = gwr_fi_need(c, wi, "W"), *b = bi >= 0 ? inp(c, bi) : NULL;
    shp xs, ws, out;
    spatial sp;
    int64_t group;
    sbuf p, q;
    if (!x || !w) return c->st;
    if ((c->id == GWR_OP_Conv || c->id == GWR_OP_MS_FusedConv) && (!gwr_fi_same_dtype(c, x, w) || !gwr_fi_same_dtype(c, x, b))) return c->st;
    if (dt == GWR_UNDEFINED) dt = dt_of(x);
    gwr_fi_shp_get(x, &xs);
    gwr_fi_shp_get(w, &ws);
    if (!gwr_fi_want_rank(c, x, &xs, 3, GWR_MAX_RANK, "X") || !gwr_fi_want_rank(c, w, &ws, 3, GWR_MAX_RANK, "W"))
        return c->st;
    if (xs.rank >= 0 && ws.rank >= 0 && xs.rank != ws.rank)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "X %s and W %s differ in rank", gwr_fi_tstr(x, &p), gwr_fi_tstr(w, &q));
    if (xs.rank < 0 && ws.rank < 0) return gwr_fi_put(c, 0, dt, NULL);
    sp.n = (xs.rank >= 0 ? xs.rank : ws.rank) - 2;
    group = gwr_fi_aint(c, "group", 1);
    if (c->st) return c->st;
    if (group < 1) return gwr_fi_fail(c, GWR_ERR_SHAPE, "group %lld is invalid", (long long)group);
    if (!gwr_fi_read_ints_n(c, "kernel_shape", sp.n, 1, GWR_DIM_UNKNOWN, sp.k) || !gwr_fi_read_spatial(c, &sp))
        return c->st;
    if (ws.rank >= 0) {
        for (int i = 0; i < sp.n; i++) {
            gwr_dim m;
            if (sp.k[i] == GWR_DIM_UNKNOWN)
                sp.k[i] = ws.d[2 + i];
            else if (!gwr_fi_dmerge(sp.k[i], ws.d[2 + i], &m))
                return gwr_fi_fail(c, GWR_ERR_SHAPE, "kernel_shape disagrees with W %s", gwr_fi_tstr(w, &p));
        }
        if (xs.rank >= 0 && GWR_DIM_IS_KNOWN(xs.d[1]) && GWR_DIM_IS_KNOWN(ws.d[1]) &&
            xs.d[1] != gwr_fi_dmul(ws.d[1], group))
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "X %s has %lld channels, W %s expects %lld x group %lld",
                               gwr_fi_tstr(x, &p), (long long)xs.d[1], gwr_fi_tstr(w, &q), (long long)ws.d[1],
                               (long long)group);
        if (GWR_DIM_IS_KNOWN(ws.d[0]) && ws.d[0] % group != 0)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "W %s: %lld output channels do not split into %lld groups",
                               gwr_fi_tstr(w, &p), (long long)ws.d[0], (long long)group);
        if (!gwr_fi_want_vec(c, b, ws.d[0], "B")) return c->st;
    }
    out.rank = sp.n + 2;
    out.d[0] = xs.rank >= 0 ? xs.d[0] : GWR_DIM_UNKNOWN;
    out.d[1] = ws.rank >= 0 ? ws.d[0] : GWR_DIM_UNKNOWN;
    for (int i = 0; i < sp.n; i++) {
        gwr_dim in = xs.rank >= 0 ? xs.d[2 + i] : GWR_DIM_UNKNOWN;
        out.d[2 + i] = GWR_DIM_IS_KNOWN(sp.k[i]) ? gwr_fi_conv_out(c, &sp, i, in, 0) : GWR_DIM_UNKNOWN;
        if (c->st) return c->st;
    }
    return gwr_fi_put(c, 0, dt, &out);
}

/* Conv, and the Conv part of com.microsoft's FusedConv (fused_cnn.c). */
gwr_status gwr_fi_rule_conv(ictx *c) { return infer_conv(c, 0, 1, 2, GWR_UNDEFINED); }
static gwr_status infer_conv_integer(ictx *c) { return infer_conv(c, 0, 1, -1, GWR_INT32); }
static gwr_status infer_qlinear_conv(ictx *c) { return infer_conv(c, 0, 3, 8, dt_of(inp(c, 7))); }

static gwr_status infer_conv_transpose(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X"), *w = gwr_fi_need(c, 1, "W"), *b = inp(c, 2);
    shp xs, ws, out;
    spatial sp;
    int64_t group, n;
    const int64_t *os;
    sbuf p, q;
    if (!x || !w || !gwr_fi_same_dtype(c, x, w) || !gwr_fi_same_dtype(c, x, b)) return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_shp_get(w, &ws);
    if (!gwr_fi_want_rank(c, x, &xs, 3, GWR_MAX_RANK, "X") || !gwr_fi_want_rank(c, w, &ws, 3, GWR_MAX_RANK, "W"))
        return c->st;
    if (xs.rank >= 0 && ws.rank >= 0 && xs.rank != ws.rank)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "X %s and W %s differ in rank", gwr_fi_tstr(x, &p), gwr_fi_tstr(w, &q));
    if (xs.rank < 0 && ws.rank < 0) return gwr_fi_put(c, 0, dt_of(x), NULL);
    sp.n = (xs.rank >= 0 ? xs.rank : ws.rank) - 2;
    group = gwr_fi_aint(c, "group", 1);
    if (c->st) return c->st;
    if (group < 1) return gwr_fi_fail(c, GWR_ERR_SHAPE, "group %lld is invalid", (long long)group);
    if (!gwr_fi_read_ints_n(c, "kernel_shape", sp.n, 1, GWR_DIM_UNKNOWN, sp.k) || !gwr_fi_read_spatial(c, &sp))
        return c->st;
    out.rank = sp.n + 2;
    out.d[0] = xs.rank >= 0 ? xs.d[0] : GWR_DIM_UNKNOWN;
    out.d[1] = GWR_DIM_UNKNOWN;
    if (ws.rank >= 0) {
        gwr_dim m;
        for (int i = 0; i < sp.n; i++)
            if (sp.k[i] == GWR_DIM_UNKNOWN) sp.k[i] = ws.d[2 + i];
        if (xs.rank >= 0 && !gwr_fi_dmerge(xs.d[1], ws.d[0], &m))
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "X %s has %lld channels, W %s expects %lld", gwr_fi_tstr(x, &p),
                               (long long)xs.d[1], gwr_fi_tstr(w, &q), (long long)ws.d[0]);
        out.d[1] = gwr_fi_dmul(ws.d[1], group);
        if (!gwr_fi_want_vec(c, b, out.d[1], "B")) return c->st;
    }
    if (gwr_fi_aints(c, "output_shape", &os, &n)) {
        if (n != sp.n && n != sp.n + 2)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "output_shape has %lld values, expected %d", (long long)n, sp.n);
        for (int i = 0; i < sp.n; i++) {
            if (os[n - sp.n + i] < 0) return gwr_fi_fail(c, GWR_ERR_SHAPE, "output_shape[%d] is negative", i);
            out.d[2 + i] = os[n - sp.n + i];
        }
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    if (c->st) return c->st;
    for (int i = 0; i < sp.n; i++) {
        gwr_dim in = xs.rank >= 0 ? xs.d[2 + i] : GWR_DIM_UNKNOWN;
        int64_t k = sp.k[i], s = sp.s[i], ek, o;
        if (!GWR_DIM_IS_KNOWN(k)) {
            out.d[2 + i] = GWR_DIM_UNKNOWN;
            continue;
        }
        if (k < 1 || sp.d[i] > (INT64_MAX / 4) / k || s > (INT64_MAX / 4))
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "kernel extent %lld is invalid", (long long)k);
        ek = (k - 1) * sp.d[i] + 1;
        if (!GWR_DIM_IS_KNOWN(in)) {
            int keep = s == 1 && (sp.mode == PAD_SAME_UPPER || sp.mode == PAD_SAME_LOWER ||
                                  (ek == 1 && sp.op[i] == 0 && sp.pads[i] == 0 && sp.pads[sp.n + i] == 0));
            out.d[2 + i] = keep ? in : GWR_DIM_UNKNOWN;
            continue;
        }
        if (in > (INT64_MAX / 4) / s) {
            out.d[2 + i] = GWR_DIM_UNKNOWN;
            continue;
        }
        if (sp.mode == PAD_SAME_UPPER || sp.mode == PAD_SAME_LOWER)
            o = in * s;
        else
            o = s * (in - 1) + sp.op[i] + ek - sp.pads[i] - sp.pads[sp.n + i];
        if (o < 0)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "spatial dim %d: output extent %lld is negative", i, (long long)o);
        out.d[2 + i] = o;
    }
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

const gwr_fi_entry gwr_fi_rules_conv[] = {
    {GWR_OP_Conv, gwr_fi_rule_conv},
    {GWR_OP_ConvInteger, infer_conv_integer},
    {GWR_OP_QLinearConv, infer_qlinear_conv},
    {GWR_OP_ConvTranspose, infer_conv_transpose},
    {GWR_OP_CUSTOM, NULL},
};
