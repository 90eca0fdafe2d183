/* pool.c - shape rules of pooling: AveragePool, MaxPool (and its Indices),
 * LpPool, their Global forms, and MaxUnpool. As in exec/kernels/pool.c;
 * RoiAlign and MaxRoiPool are in image.c. */

#include "functional/infer/infer_internal.h"

static gwr_status infer_pool(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X");
    const int64_t *k;
    int64_t nk;
    shp xs, out;
    spatial sp;
    sbuf p;
    if (!x) return c->st;
    gwr_fi_shp_get(x, &xs);
    if (!gwr_fi_aints(c, "kernel_shape", &k, &nk))
        return c->st ? c->st : gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "missing attribute kernel_shape");
    if (nk < 1 || nk > GWR_MAX_RANK - 2)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "kernel_shape has %lld values", (long long)nk);
    if (xs.rank >= 0 && xs.rank != nk + 2)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "X %s does not fit a %lld-D kernel_shape", gwr_fi_tstr(x, &p),
                           (long long)nk);
    sp.n = (int)nk;
    for (int i = 0; i < sp.n; i++) {
        if (k[i] < 1) return gwr_fi_fail(c, GWR_ERR_SHAPE, "kernel_shape[%d] = %lld is invalid", i, (long long)k[i]);
        sp.k[i] = k[i];
    }
    if (!gwr_fi_read_spatial(c, &sp)) return c->st;
    out.rank = sp.n + 2;
    out.d[0] = xs.rank >= 0 ? xs.d[0] : GWR_DIM_UNKNOWN;
    out.d[1] = xs.rank >= 0 ? xs.d[1] : GWR_DIM_UNKNOWN;
    for (int i = 0; i < sp.n; i++) {
        out.d[2 + i] = gwr_fi_conv_out(c, &sp, i, xs.rank >= 0 ? xs.d[2 + i] : GWR_DIM_UNKNOWN, 1);
        if (c->st) return c->st;
    }
    if (gwr_fi_put(c, 0, dt_of(x), &out) != GWR_OK) return c->st;
    return gwr_fi_put(c, 1, GWR_INT64, &out); /* MaxPool's Indices, when asked for */
}

static gwr_status infer_global_pool(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X");
    shp s;
    if (!x) return c->st;
    gwr_fi_shp_get(x, &s);
    if (!gwr_fi_want_rank(c, x, &s, 2, GWR_MAX_RANK, "X")) return c->st;
    for (int i = 2; i < s.rank; i++) s.d[i] = 1;
    return gwr_fi_put(c, 0, dt_of(x), &s);
}

static gwr_status infer_max_unpool(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X");
    const int64_t *k;
    int64_t nk;
    shp xs, out;
    spatial sp;
    ival os;
    if (!x) return c->st;
    gwr_fi_shp_get(x, &xs);
    if (inp(c, 2)) {
        gwr_fi_iv_in(c, 2, &os);
        if (os.n < 0) return gwr_fi_put(c, 0, dt_of(x), NULL);
        gwr_fi_shp_unknown_dims(&out, os.n);
        for (int i = 0; i < os.n && i < GWR_MAX_RANK; i++)
            if (os.k[i] == IV_VAL && os.v[i] >= 0) out.d[i] = os.v[i];
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    if (!gwr_fi_aints(c, "kernel_shape", &k, &nk) || xs.rank < 0 || xs.rank != nk + 2) {
        if (c->st) return c->st;
        gwr_fi_shp_unknown_dims(&out, xs.rank);
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    sp.n = (int)nk;
    for (int i = 0; i < sp.n; i++) sp.k[i] = k[i];
    if (!gwr_fi_read_spatial(c, &sp)) return c->st;
    out = xs;
    for (int i = 0; i < sp.n; i++) {
        gwr_dim in = xs.d[2 + i];
        out.d[2 + i] = GWR_DIM_UNKNOWN;
        if (GWR_DIM_IS_KNOWN(in) && in < INT64_MAX / 4 / sp.s[i] && k[i] < INT64_MAX / 4) {
            int64_t o = (in - 1) * sp.s[i] + k[i] - sp.pads[i] - sp.pads[sp.n + i];
            out.d[2 + i] = o >= 0 ? o : GWR_DIM_UNKNOWN;
        }
    }
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

const gwr_fi_entry gwr_fi_rules_pool[] = {
    {GWR_OP_AveragePool, infer_pool},
    {GWR_OP_MaxPool, infer_pool},
    {GWR_OP_LpPool, infer_pool},
    {GWR_OP_GlobalAveragePool, infer_global_pool},
    {GWR_OP_GlobalMaxPool, infer_global_pool},
    {GWR_OP_GlobalLpPool, infer_global_pool},
    {GWR_OP_MaxUnpool, infer_max_unpool},
    {GWR_OP_CUSTOM, NULL},
};
