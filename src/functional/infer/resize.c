/* resize.c - the shape rule of Resize and Upsample: output sizes from the
 * sizes input, or from the input's dims times constant scales. As in
 * exec/kernels/resize.c. */

#include <math.h>

#include "functional/infer/infer_internal.h"

static gwr_status infer_resize(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X");
    int scales_at = (c->id == GWR_OP_Upsample || c->nin == 2) ? 1 : 2;
    gwr_tensor *sizes = c->id == GWR_OP_Resize ? inp(c, 3) : NULL;
    shp xs, out;
    double sc[GWR_MAX_RANK];
    int ns;
    sbuf p;
    if (!x) return c->st;
    gwr_fi_shp_get(x, &xs);
    if (xs.rank < 0) return gwr_fi_put(c, 0, dt_of(x), NULL);
    gwr_fi_shp_unknown_dims(&out, xs.rank);
    if (gwr_layer_has_attr(c->l, "axes")) /* opset 18: a subset of axes */
        return gwr_fi_put(c, 0, dt_of(x), &out);
    if (sizes) {
        ival sv;
        gwr_fi_iv_in(c, 3, &sv);
        if (sv.n >= 0 && sv.n != xs.rank)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "sizes has %d values for %s", sv.n, gwr_fi_tstr(x, &p));
        for (int i = 0; i < sv.n; i++)
            if (sv.k[i] != IV_UNK) out.d[i] = sv.v[i];
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    ns = gwr_fi_const_f64s(inp(c, scales_at), sc, GWR_MAX_RANK);
    if (ns > 0 && ns != xs.rank)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "scales has %d values for %s", ns, gwr_fi_tstr(x, &p));
    for (int i = 0; i < ns; i++) {
        double o = floor((double)xs.d[i] * sc[i]);
        if (sc[i] <= 0 || !isfinite(sc[i]))
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "scales[%d] = %g is invalid", i, sc[i]);
        if (sc[i] == 1.0)
            out.d[i] = xs.d[i];
        else if (GWR_DIM_IS_KNOWN(xs.d[i]) && o < 9.0e18)
            out.d[i] = (gwr_dim)o;
    }
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

const gwr_fi_entry gwr_fi_rules_resize[] = {
    {GWR_OP_Resize, infer_resize},
    {GWR_OP_Upsample, infer_resize},
    {GWR_OP_CUSTOM, NULL},
};
