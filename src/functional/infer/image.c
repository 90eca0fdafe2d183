/* image.c - shape rules of detection and sampling, as exec/kernels/image.c:
 * NonMaxSuppression, RoiAlign, MaxRoiPool, GridSample. */

#include "functional/infer/infer_internal.h"

static gwr_status infer_nms(ictx *c) {
    shp out = {2, {GWR_DIM_UNKNOWN, 3}};
    if (!gwr_fi_need(c, 0, "boxes") || !gwr_fi_need(c, 1, "scores")) return c->st;
    return gwr_fi_put(c, 0, GWR_INT64, &out);
}

/* RoiAlign, MaxRoiPool: (num_rois, C, pooled h, pooled w). */
static gwr_status infer_roi(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X"), *rois = gwr_fi_need(c, 1, "rois");
    shp xs, rs, out = {4, {GWR_DIM_UNKNOWN, GWR_DIM_UNKNOWN, 1, 1}};
    const int64_t *ps;
    int64_t n;
    if (!x || !rois) return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_shp_get(rois, &rs);
    if (rs.rank == 2) out.d[0] = rs.d[0];
    if (xs.rank == 4) out.d[1] = xs.d[1];
    if (c->id == GWR_OP_RoiAlign) {
        out.d[2] = gwr_fi_aint(c, "output_height", 1);
        out.d[3] = gwr_fi_aint(c, "output_width", 1);
    } else if (gwr_fi_aints(c, "pooled_shape", &ps, &n) && n == 2) {
        out.d[2] = ps[0];
        out.d[3] = ps[1];
    } else if (!c->st) {
        return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "missing attribute pooled_shape with 2 values");
    }
    if (c->st) return c->st;
    if (out.d[2] < 0 || out.d[3] < 0) return gwr_fi_fail(c, GWR_ERR_SHAPE, "pooled extents are negative");
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

static gwr_status infer_grid_sample(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X"), *g = gwr_fi_need(c, 1, "grid");
    shp xs, gs, out;
    if (!x || !g) return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_shp_get(g, &gs);
    if (gs.rank < 3 || (xs.rank >= 0 && xs.rank != gs.rank))
        return gs.rank < 0 ? gwr_fi_put(c, 0, dt_of(x), NULL)
                           : gwr_fi_fail(c, GWR_ERR_SHAPE, "grid and X differ in rank");
    out.rank = gs.rank;
    out.d[0] = gs.d[0];
    out.d[1] = xs.rank >= 0 ? xs.d[1] : GWR_DIM_UNKNOWN;
    for (int i = 2; i < gs.rank; i++) out.d[i] = gs.d[i - 1];
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

const gwr_fi_entry gwr_fi_rules_image[] = {
    {GWR_OP_NonMaxSuppression, infer_nms},  {GWR_OP_RoiAlign, infer_roi}, {GWR_OP_MaxRoiPool, infer_roi},
    {GWR_OP_GridSample, infer_grid_sample}, {GWR_OP_CUSTOM, NULL},
};
