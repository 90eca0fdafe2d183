/* geometry.c - shape rules of CenterCropPad, Col2Im, AffineGrid and
 * DeformConv. As in exec/kernels/geometry.c. */

#include "functional/infer/infer_internal.h"

/* CenterCropPad: input_data's shape with the axes (all, or the axes
 * attribute's) set to the shape input's values. */
static gwr_status infer_center_crop_pad(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input_data"), *sh = gwr_fi_need(c, 1, "shape");
    shp xs, out;
    ival sv, av;
    int64_t axes[IV_MAX];
    if (!x || !sh || !gwr_fi_want_index_dtype(c, sh, "shape")) return c->st;
    gwr_fi_shp_get(x, &xs);
    if (xs.rank < 0) return gwr_fi_put(c, 0, dt_of(x), NULL);
    if (xs.rank == 0) return gwr_fi_fail(c, GWR_ERR_SHAPE, "input_data must have rank 1 or more, not a scalar");
    int have_axes = gwr_fi_iv_param(c, c->nin, "axes", &av), n = xs.rank;
    if (c->st) return c->st;
    if (have_axes && !gwr_fi_iv_exact(&av)) {
        gwr_fi_shp_unknown_dims(&out, xs.rank);
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    if (have_axes) {
        if (!gwr_fi_norm_axes(c, &av, xs.rank, axes)) return c->st;
        n = av.n;
    } else {
        for (int i = 0; i < n; i++) axes[i] = i;
    }
    gwr_fi_iv_in(c, 1, &sv);
    if (sv.n >= 0 && sv.n != n) return gwr_fi_fail(c, GWR_ERR_SHAPE, "shape has %d values for %d axes", sv.n, n);
    out = xs;
    for (int i = 0; i < n; i++) {
        int known = sv.n > i && sv.k[i] == IV_VAL;
        if (known && sv.v[i] < 0)
            return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "shape[%d] = %lld is negative", i, (long long)sv.v[i]);
        out.d[axes[i]] = known ? sv.v[i] : GWR_DIM_UNKNOWN;
    }
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

/* Col2Im: (N, C, image_shape...), C = input dim 1 / prod(block_shape). */
static gwr_status infer_col2im(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input"), *im = gwr_fi_need(c, 1, "image_shape"), *bl = gwr_fi_need(c, 2, "block_shape");
    shp xs, out;
    ival iv, bv;
    if (!x || !im || !bl || !gwr_fi_want_index_dtype(c, im, "image_shape") || !gwr_fi_want_index_dtype(c, bl, "block_shape"))
        return c->st;
    gwr_fi_shp_get(x, &xs);
    if (!gwr_fi_want_rank(c, x, &xs, 3, 3, "input")) return c->st;
    gwr_fi_iv_in(c, 1, &iv);
    gwr_fi_iv_in(c, 2, &bv);
    if (iv.n < 0) return gwr_fi_put(c, 0, dt_of(x), NULL);
    if (iv.n < 1 || iv.n + 2 > GWR_MAX_RANK || (bv.n >= 0 && bv.n != iv.n))
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "image_shape and block_shape must have the same length >= 1");
    out.rank = iv.n + 2;
    out.d[0] = xs.rank == 3 ? xs.d[0] : GWR_DIM_UNKNOWN;
    out.d[1] = GWR_DIM_UNKNOWN;
    int64_t kprod = 1;
    for (int i = 0; i < bv.n; i++) {
        if (bv.k[i] != IV_VAL || bv.v[i] < 1 || bv.v[i] > (int64_t)1 << 30) {
            kprod = -1;
            break;
        }
        kprod *= bv.v[i];
        if (kprod > (int64_t)1 << 40) kprod = -1;
        if (kprod < 0) break;
    }
    if (kprod > 0 && xs.rank == 3 && GWR_DIM_IS_KNOWN(xs.d[1])) {
        if (xs.d[1] % kprod)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "input dim 1 (%lld) is not a multiple of prod(block_shape) = %lld",
                               (long long)xs.d[1], (long long)kprod);
        out.d[1] = xs.d[1] / kprod;
    }
    for (int i = 0; i < iv.n; i++) {
        if (iv.k[i] == IV_VAL && iv.v[i] < 0)
            return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "image_shape[%d] = %lld is negative", i, (long long)iv.v[i]);
        out.d[2 + i] = iv.k[i] == IV_VAL ? iv.v[i] : GWR_DIM_UNKNOWN;
    }
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

/* AffineGrid: size (N, C, H, W) -> (N, H, W, 2); (N, C, D, H, W) -> (N, D,
 * H, W, 3). */
static gwr_status infer_affine_grid(ictx *c) {
    gwr_tensor *th = gwr_fi_need(c, 0, "theta"), *sz = gwr_fi_need(c, 1, "size");
    shp ts, out;
    ival sv;
    if (!th || !sz || !gwr_fi_want_index_dtype(c, sz, "size")) return c->st;
    gwr_fi_shp_get(th, &ts);
    if (!gwr_fi_want_rank(c, th, &ts, 3, 3, "theta")) return c->st;
    gwr_fi_iv_in(c, 1, &sv);
    if (sv.n < 0) return gwr_fi_put(c, 0, dt_of(th), NULL);
    if (sv.n != 4 && sv.n != 5)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "size must be (N, C, H, W) or (N, C, D, H, W), not %d values", sv.n);
    int nsp = sv.n - 2;
    out.rank = nsp + 2;
    out.d[0] = sv.k[0] == IV_VAL ? sv.v[0] : ts.rank == 3 ? ts.d[0] : GWR_DIM_UNKNOWN;
    for (int i = 0; i < nsp; i++) {
        if (sv.k[2 + i] == IV_VAL && sv.v[2 + i] < 0)
            return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "size[%d] = %lld is negative", 2 + i, (long long)sv.v[2 + i]);
        out.d[1 + i] = sv.k[2 + i] == IV_VAL ? sv.v[2 + i] : GWR_DIM_UNKNOWN;
    }
    out.d[nsp + 1] = nsp;
    return gwr_fi_put(c, 0, dt_of(th), &out);
}

/* DeformConv: (N, oC, offset's spatial dims). */
static gwr_status infer_deform_conv(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X"), *w = gwr_fi_need(c, 1, "W"), *off = gwr_fi_need(c, 2, "offset");
    shp xs, ws, os, out;
    if (!x || !w || !off || !gwr_fi_same_dtype(c, x, w) || !gwr_fi_same_dtype(c, x, off)) return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_shp_get(w, &ws);
    gwr_fi_shp_get(off, &os);
    int r = xs.rank >= 0 ? xs.rank : ws.rank >= 0 ? ws.rank : os.rank;
    if (r < 0) return gwr_fi_put(c, 0, dt_of(x), NULL);
    if (!gwr_fi_want_rank(c, x, &xs, 3, GWR_MAX_RANK, "X") || !gwr_fi_want_rank(c, w, &ws, r, r, "W") ||
        !gwr_fi_want_rank(c, off, &os, r, r, "offset"))
        return c->st;
    gwr_fi_shp_unknown_dims(&out, r);
    if (xs.rank == r) out.d[0] = xs.d[0];
    if (ws.rank == r) out.d[1] = ws.d[0];
    if (os.rank == r) {
        if (!gwr_fi_dmerge(out.d[0], os.d[0], &out.d[0]))
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "offset's batch differs from X's");
        for (int i = 2; i < r; i++) out.d[i] = os.d[i];
    }
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

const gwr_fi_entry gwr_fi_rules_geometry[] = {
    {GWR_OP_CenterCropPad, infer_center_crop_pad},
    {GWR_OP_Col2Im, infer_col2im},
    {GWR_OP_AffineGrid, infer_affine_grid},
    {GWR_OP_DeformConv, infer_deform_conv},
    {GWR_OP_CUSTOM, NULL},
};
