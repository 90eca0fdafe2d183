/* geometry.c - ops that move pixels by position: CenterCropPad (a centred
 * crop or zero pad of chosen axes), Col2Im (column blocks summed back into
 * an N-D image, the inverse of im2col), AffineGrid (the sampling grid of
 * affine matrices, for GridSample) and DeformConv (a convolution whose
 * taps read the input at learned fractional offsets, optionally masked).
 *
 * Semantics follow ONNX's operator specification; where it is silent,
 * PyTorch's (AffineGrid's base coordinates, a one-pixel axis at 0) and
 * torchvision's (DeformConv's bilinear taps, zero outside the input).
 * Every input and attribute is checked first: a bad rank, a negative or
 * mismatched size, an output too large is an error with a message.
 * Arithmetic in double. */
#include <math.h>
#include <string.h>

#include "exec/kernels/kernel_util.h"

/* The most elements an output of these ops may have. */
#define MAX_ELEMS ((int64_t)1 << 32)

/* Advances the multi-index idx over dims[0..n) (last fastest); 0 after
 * the last one. */
static int next_index(int64_t *idx, const int64_t *dims, int n) {
    for (int i = n - 1; i >= 0; i--) {
        if (++idx[i] < dims[i]) return 1;
        idx[i] = 0;
    }
    return 0;
}

/* ---- CenterCropPad ------------------------------------------------------------ */

static gwr_status k_center_crop_pad(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_named(k, 0, "input_data");
    if (!x || !gwr_ku_need_named(k, 1, "shape")) return GWR_ERR_INVALID_ARG;
    int64_t esz = gwr_ku_elem_size(k, x->dtype);
    if (esz < 0) return GWR_ERR_UNSUPPORTED;
    if (!esz) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "string tensors have no zero to pad with");
    int r = x->rank;
    if (r < 1) return gwr_k_fail(k, GWR_ERR_SHAPE, "input_data must have rank 1 or more, not a scalar");
    int64_t shape[GWR_MAX_RANK], ns = gwr_k_in_ints(k, 1, shape, GWR_MAX_RANK);
    if (ns < 0) return GWR_ERR_INVALID_ARG;
    const int64_t *axes;
    int64_t na = gwr_k_ints(k, "axes", &axes);
    int ax[GWR_MAX_RANK];
    if (na >= 0) {
        uint8_t mask[GWR_MAX_RANK] = {0};
        if (gwr_ku_axes_mask(k, axes, na, r, mask, ax) != GWR_OK) return GWR_ERR_INVALID_ARG;
    } else {
        na = r;
        for (int i = 0; i < r; i++) ax[i] = i;
    }
    if (ns != na)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "shape has %lld values for %lld axes", (long long)ns, (long long)na);
    int64_t od[GWR_MAX_RANK], off[GWR_MAX_RANK] = {0};
    memcpy(od, x->dims, (size_t)r * sizeof *od);
    for (int64_t i = 0; i < na; i++) {
        int64_t t = shape[i], d = x->dims[ax[i]];
        if (t < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "shape[%lld] = %lld is negative", (long long)i, (long long)t);
        od[ax[i]] = t;
        /* output index o reads input o + off: a crop starts at floor((d - t) / 2),
         * a pad puts floor((t - d) / 2) zeros first (the odd one last) */
        off[ax[i]] = d >= t ? (d - t) / 2 : -((t - d) / 2);
    }
    int64_t ny = gwr_shape_numel(r, od);
    if (ny < 0 || ny > MAX_ELEMS) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "the output is too large");
    gwr_value *y = gwr_k_out(k, 0, x->dtype, r, od);
    if (!y) return GWR_ERR_NOMEM;
    if (!ny) return GWR_OK;
    memset(y->data, 0, (size_t)(ny * esz));
    /* rows along the last axis: one copy of the part inside the input */
    int64_t idx[GWR_MAX_RANK] = {0}, xs[GWR_MAX_RANK], row = od[r - 1], last = x->dims[r - 1];
    gwr_strides(r, x->dims, xs);
    int64_t lo = off[r - 1] < 0 ? -off[r - 1] : 0, hi = last - off[r - 1] < row ? last - off[r - 1] : row;
    for (int64_t o = 0; o < ny; o += row) {
        int64_t src = 0, inside = hi > lo;
        for (int i = 0; i < r - 1 && inside; i++) {
            int64_t s = idx[i] + off[i];
            inside = s >= 0 && s < x->dims[i];
            src += s * xs[i];
        }
        if (inside) gwr_ku_copy_run(k, y, o + lo, x, src + lo + off[r - 1], hi - lo, esz);
        if (r > 1) next_index(idx, od, r - 1);
    }
    return GWR_OK;
}

/* ---- Col2Im ------------------------------------------------------------------- */

/* Spatial parameters shared by Col2Im and DeformConv: strides, dilations
 * (>= 1) and pads (>= 0) for n dims, defaults 1 and 0; -1 after gwr_k_fail. */
static int read_window(gwr_kctx *k, int n, int64_t *s, int64_t *d, int64_t *pb, int64_t *pe) {
    const int64_t *v;
    int has;
    for (int i = 0; i < n; i++) s[i] = d[i] = 1, pb[i] = pe[i] = 0;
    if ((has = gwr_ku_attr_list(k, "strides", n, 1, (int64_t)1 << 30, &v)) < 0) return -1;
    if (has) memcpy(s, v, (size_t)n * sizeof *s);
    if ((has = gwr_ku_attr_list(k, "dilations", n, 1, (int64_t)1 << 30, &v)) < 0) return -1;
    if (has) memcpy(d, v, (size_t)n * sizeof *d);
    if ((has = gwr_ku_attr_list(k, "pads", 2 * n, 0, (int64_t)1 << 30, &v)) < 0) return -1;
    if (has) memcpy(pb, v, (size_t)n * sizeof *pb), memcpy(pe, v + n, (size_t)n * sizeof *pe);
    return 0;
}

/* The count of windows of kernel kk along an axis of `in` pixels: 0 or
 * more. */
static int64_t windows(int64_t in, int64_t kk, int64_t s, int64_t d, int64_t pb, int64_t pe) {
    int64_t span = in + pb + pe - (d * (kk - 1) + 1);
    return span < 0 ? 0 : span / s + 1;
}

static gwr_status k_col2im(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_float(k, 0, "input");
    if (!x) return GWR_ERR_INVALID_ARG;
    int64_t img[GWR_MAX_RANK], blk[GWR_MAX_RANK];
    int64_t ni = gwr_k_in_ints(k, 1, img, GWR_MAX_RANK - 2), nb = ni < 0 ? -1 : gwr_k_in_ints(k, 2, blk, GWR_MAX_RANK - 2);
    if (ni < 0 || nb < 0) return GWR_ERR_INVALID_ARG;
    if (ni < 1 || ni != nb)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "image_shape and block_shape must have the same length >= 1, not %lld and %lld",
                          (long long)ni, (long long)nb);
    if (x->rank != 3) return gwr_k_fail(k, GWR_ERR_SHAPE, "input must be [N, C * prod(block_shape), L], not rank %d", x->rank);
    int n = (int)ni;
    int64_t s[GWR_MAX_RANK], d[GWR_MAX_RANK], pb[GWR_MAX_RANK], pe[GWR_MAX_RANK], nw[GWR_MAX_RANK], kprod = 1, L = 1;
    if (read_window(k, n, s, d, pb, pe)) return GWR_ERR_INVALID_ARG;
    for (int i = 0; i < n; i++) {
        if (img[i] < 0 || blk[i] < 1)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "image_shape[%d] = %lld must be >= 0 and block_shape[%d] = %lld >= 1", i,
                              (long long)img[i], i, (long long)blk[i]);
        if (blk[i] > (int64_t)1 << 30 || img[i] > (int64_t)1 << 40)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "image_shape or block_shape %d is too large", i);
        nw[i] = windows(img[i], blk[i], s[i], d[i], pb[i], pe[i]);
        kprod = gwr_ku_mul_max(kprod, blk[i], MAX_ELEMS);
        L = gwr_ku_mul_max(L, nw[i], MAX_ELEMS);
        if (kprod < 0 || L < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "block_shape or the block count is too large");
    }
    if (x->dims[1] % kprod)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "input dim 1 (%lld) is not a multiple of prod(block_shape) = %lld", (long long)x->dims[1],
                          (long long)kprod);
    if (x->dims[2] != L)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "input has %lld blocks, image_shape and block_shape give %lld", (long long)x->dims[2],
                          (long long)L);
    int64_t N = x->dims[0], C = x->dims[1] / kprod, od[GWR_MAX_RANK];
    od[0] = N, od[1] = C;
    memcpy(od + 2, img, (size_t)n * sizeof *od);
    int64_t ny = gwr_shape_numel(n + 2, od), plane = ny < 0 ? 0 : gwr_shape_numel(n, img);
    if (ny < 0 || ny > MAX_ELEMS) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "the output is too large");
    gwr_value *y = gwr_k_out(k, 0, x->dtype, n + 2, od);
    if (!y) return GWR_ERR_NOMEM;
    if (!ny) return GWR_OK;
    double *acc = gwr_ku_scratch(k, ny, sizeof *acc);
    if (!acc) return GWR_ERR_NOMEM;
    memset(acc, 0, (size_t)ny * sizeof *acc);
    int64_t ist[GWR_MAX_RANK];
    gwr_strides(n, img, ist);
    for (int64_t b = 0; b < N; b++)
        for (int64_t c = 0; c < C; c++) {
            int64_t kk[GWR_MAX_RANK] = {0};
            for (int64_t kf = 0; kf < kprod; kf++, next_index(kk, blk, n)) {
                int64_t w[GWR_MAX_RANK] = {0};
                for (int64_t l = 0; l < L; l++, next_index(w, nw, n)) {
                    int64_t pos = 0, in = 1;
                    for (int i = 0; i < n && in; i++) {
                        int64_t p = w[i] * s[i] - pb[i] + kk[i] * d[i];
                        in = p >= 0 && p < img[i];
                        pos += p * ist[i];
                    }
                    if (in) acc[(b * C + c) * plane + pos] += gwr_v_get_f64(x, ((b * x->dims[1]) + c * kprod + kf) * L + l);
                }
            }
        }
    gwr_ku_store_f64(y, 0, ny, acc);
    gwr_free(acc);
    return GWR_OK;
}

/* ---- AffineGrid --------------------------------------------------------------- */

/* Coordinate i of an axis of d points in [-1, 1]: the corner pixels'
 * centres (align) or outer edges; a one-point axis is at 0. */
static double base_coord(int64_t i, int64_t d, int align) {
    if (align) return d > 1 ? -1 + 2.0 * (double)i / (double)(d - 1) : 0;
    return (2.0 * (double)i + 1) / (double)d - 1;
}

static gwr_status k_affine_grid(gwr_kctx *k) {
    const gwr_value *th = gwr_ku_need_float(k, 0, "theta");
    if (!th) return GWR_ERR_INVALID_ARG;
    int64_t size[6], ns = gwr_k_in_ints(k, 1, size, 6);
    if (ns < 0) return GWR_ERR_INVALID_ARG;
    if (ns != 4 && ns != 5)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "size must be (N, C, H, W) or (N, C, D, H, W), not %lld values", (long long)ns);
    int nsp = (int)ns - 2;
    if (th->rank != 3 || th->dims[1] != nsp || th->dims[2] != nsp + 1)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "theta must be (N, %d, %d) for a %d-D size", nsp, nsp + 1, nsp);
    if (th->dims[0] != size[0])
        return gwr_k_fail(k, GWR_ERR_SHAPE, "theta has %lld matrices for a batch of %lld", (long long)th->dims[0], (long long)size[0]);
    int64_t ac = gwr_k_int(k, "align_corners", 0);
    if (ac != 0 && ac != 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "align_corners must be 0 or 1, not %lld", (long long)ac);
    int64_t od[5];
    od[0] = size[0], od[nsp + 1] = nsp;
    for (int i = 0; i < nsp; i++) {
        if (size[2 + i] < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "size[%d] = %lld is negative", 2 + i, (long long)size[2 + i]);
        od[1 + i] = size[2 + i];
    }
    int64_t ny = gwr_shape_numel(nsp + 2, od);
    if (ny < 0 || ny > MAX_ELEMS) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "the output is too large");
    gwr_value *y = gwr_k_out(k, 0, th->dtype, nsp + 2, od);
    if (!y) return GWR_ERR_NOMEM;
    int64_t pts = ny / (nsp ? nsp : 1) / (od[0] ? od[0] : 1);
    for (int64_t b = 0; b < od[0] && pts; b++) {
        double m[3][4];
        for (int r = 0; r < nsp; r++)
            for (int c = 0; c <= nsp; c++) m[r][c] = gwr_v_get_f64(th, (b * nsp + r) * (nsp + 1) + c);
        int64_t idx[3] = {0};
        for (int64_t p = 0; p < pts; p++, next_index(idx, od + 1, nsp)) {
            /* homogeneous (x, y[, z], 1): x runs along the last axis */
            double v[4];
            for (int i = 0; i < nsp; i++) v[i] = base_coord(idx[nsp - 1 - i], od[nsp - i], (int)ac);
            v[nsp] = 1;
            for (int r = 0; r < nsp; r++) {
                double a = 0;
                for (int c = 0; c <= nsp; c++) a += m[r][c] * v[c];
                gwr_v_set_f64(y, (b * pts + p) * nsp + r, a);
            }
        }
    }
    return GWR_OK;
}

/* ---- DeformConv --------------------------------------------------------------- */

/* X's plane (n spatial dims, extents dims, strides st) at the fractional
 * position p by multilinear interpolation, each corner outside the plane
 * a zero; NaN at a NaN position. */
static double sample_at(const gwr_value *x, int64_t base, int n, const int64_t *dims, const int64_t *st, const double *p) {
    int64_t lo[GWR_MAX_RANK];
    double t[GWR_MAX_RANK];
    for (int i = 0; i < n; i++) {
        if (p[i] != p[i]) return NAN;
        double q = p[i] < -2 ? -2 : p[i] > (double)dims[i] + 1 ? (double)dims[i] + 1 : p[i], f = floor(q);
        lo[i] = (int64_t)f, t[i] = q - f;
    }
    double acc = 0;
    for (int corner = 0; corner < 1 << n; corner++) {
        double w = 1;
        int64_t pos = base;
        int in = 1;
        for (int i = 0; i < n && in; i++) {
            int up = corner >> i & 1;
            int64_t j = lo[i] + up;
            in = j >= 0 && j < dims[i];
            w *= up ? t[i] : 1 - t[i];
            pos += j * st[i];
        }
        if (in && w != 0) acc += w * gwr_v_get_f64(x, pos);
    }
    return acc;
}

static gwr_status k_deform_conv(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_float(k, 0, "X"), *w = gwr_ku_need_float(k, 1, "W"), *off = gwr_ku_need_float(k, 2, "offset");
    if (!x || !w || !off) return GWR_ERR_INVALID_ARG;
    const gwr_value *bias = gwr_ku_opt(k, 3), *mask = gwr_ku_opt(k, 4);
    if (x->rank < 3 || x->rank > 2 + 3) return gwr_k_fail(k, GWR_ERR_SHAPE, "X must be (N, C, D1, ...) with 1 to 3 spatial dims, not rank %d", x->rank);
    int n = x->rank - 2;
    if (w->rank != x->rank) return gwr_k_fail(k, GWR_ERR_SHAPE, "W must have X's rank %d, not %d", x->rank, w->rank);
    int64_t N = x->dims[0], C = x->dims[1], OC = w->dims[0], group = gwr_k_int(k, "group", 1), og = gwr_k_int(k, "offset_group", 1);
    if (group < 1 || og < 1)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "group (%lld) and offset_group (%lld) must be >= 1", (long long)group, (long long)og);
    if (C % group || OC % group || w->dims[1] != C / group)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "X's %lld channels and W's (%lld, %lld, ...) do not fit group %lld", (long long)C,
                          (long long)OC, (long long)w->dims[1], (long long)group);
    if (C % og) return gwr_k_fail(k, GWR_ERR_SHAPE, "X's %lld channels are not a multiple of offset_group %lld", (long long)C, (long long)og);
    const int64_t *ks;
    int has = gwr_ku_attr_list(k, "kernel_shape", n, 1, INT64_MAX, &ks);
    if (has < 0) return GWR_ERR_INVALID_ARG;
    int64_t s[3], d[3], pb[3], pe[3], od[5], K = 1;
    if (read_window(k, n, s, d, pb, pe)) return GWR_ERR_INVALID_ARG;
    od[0] = N, od[1] = OC;
    for (int i = 0; i < n; i++) {
        if (has && ks[i] != w->dims[2 + i])
            return gwr_k_fail(k, GWR_ERR_SHAPE, "kernel_shape[%d] = %lld differs from W's %lld", i, (long long)ks[i],
                              (long long)w->dims[2 + i]);
        if (w->dims[2 + i] < 1 || w->dims[2 + i] > (int64_t)1 << 30)
            return gwr_k_fail(k, GWR_ERR_SHAPE, "W's kernel dim %d is %lld, not in [1, 2^30]", i, (long long)w->dims[2 + i]);
        od[2 + i] = windows(x->dims[2 + i], w->dims[2 + i], s[i], d[i], pb[i], pe[i]);
        if ((K = gwr_ku_mul_max(K, w->dims[2 + i], MAX_ELEMS)) < 0) return gwr_k_fail(k, GWR_ERR_SHAPE, "W's kernel is too large");
    }
    if (off->rank != x->rank || off->dims[0] != N || off->dims[1] != og * K * n)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "offset must be (N, offset_group * prod(kernel) * %d = %lld, ...)", n, (long long)(og * K * n));
    if (mask && (mask->rank != x->rank || mask->dims[0] != N || mask->dims[1] != og * K || mask->dtype != x->dtype))
        return gwr_k_fail(k, GWR_ERR_SHAPE, "mask must be (N, offset_group * prod(kernel) = %lld, ...) of X's dtype", (long long)(og * K));
    for (int i = 0; i < n; i++)
        if (off->dims[2 + i] != od[2 + i] || (mask && mask->dims[2 + i] != od[2 + i]))
            return gwr_k_fail(k, GWR_ERR_SHAPE, "offset and mask spatial dim %d must be the output's %lld", i, (long long)od[2 + i]);
    if (bias && (bias->rank != 1 || bias->dims[0] != OC || bias->dtype != x->dtype))
        return gwr_k_fail(k, GWR_ERR_SHAPE, "B must be (%lld) of X's dtype", (long long)OC);
    if (w->dtype != x->dtype || off->dtype != x->dtype) return gwr_k_fail(k, GWR_ERR_TYPE, "W and offset must have X's dtype");
    int64_t ny = gwr_shape_numel(n + 2, od), P = gwr_shape_numel(n, od + 2), plane = gwr_shape_numel(n, x->dims + 2);
    if (ny < 0 || ny > MAX_ELEMS) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "the output is too large");
    int64_t ncol = gwr_ku_mul_max(gwr_ku_mul_max(C, K, MAX_ELEMS), P, MAX_ELEMS);
    if (ncol < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "the sampled columns (C x kernel x output) are too many");
    gwr_value *y = gwr_k_out(k, 0, x->dtype, n + 2, od);
    if (!y || !ny) return y ? GWR_OK : GWR_ERR_NOMEM;
    double *col = gwr_ku_scratch(k, ncol ? ncol : 1, sizeof *col), *acc = col ? gwr_ku_scratch(k, P, sizeof *acc) : NULL;
    if (!acc) return gwr_free(col), GWR_ERR_NOMEM;
    int64_t xst[3];
    gwr_strides(n, x->dims + 2, xst);
    int64_t cpg = C / group, opg = OC / group, cpo = C / og;
    for (int64_t b = 0; b < N; b++) {
        /* col[c][kk][p]: X's channel c read at tap kk of output p, masked */
        for (int64_t c = 0; c < C; c++) {
            int64_t g = c / cpo, kk[3] = {0};
            for (int64_t kf = 0; kf < K; kf++, next_index(kk, w->dims + 2, n)) {
                int64_t o[3] = {0};
                for (int64_t p = 0; p < P; p++, next_index(o, od + 2, n)) {
                    double pos[3];
                    for (int i = 0; i < n; i++)
                        pos[i] = (double)(o[i] * s[i] - pb[i] + kk[i] * d[i]) +
                                 gwr_v_get_f64(off, ((b * og + g) * K * n + kf * n + i) * P + p);
                    double v = sample_at(x, (b * C + c) * plane, n, x->dims + 2, xst, pos);
                    if (mask) v *= gwr_v_get_f64(mask, ((b * og + g) * K + kf) * P + p);
                    col[(c * K + kf) * P + p] = v;
                }
            }
        }
        for (int64_t oc = 0; oc < OC; oc++) {
            int64_t g = oc / opg;
            double b0 = bias ? gwr_v_get_f64(bias, oc) : 0;
            for (int64_t p = 0; p < P; p++) acc[p] = b0;
            for (int64_t ci = 0; ci < cpg; ci++)
                for (int64_t kf = 0; kf < K; kf++) {
                    double wv = gwr_v_get_f64(w, (oc * cpg + ci) * K + kf);
                    const double *cr = col + ((g * cpg + ci) * K + kf) * P;
                    for (int64_t p = 0; p < P; p++) acc[p] += wv * cr[p];
                }
            gwr_ku_store_f64(y, (b * OC + oc) * P, P, acc);
        }
    }
    gwr_free(col), gwr_free(acc);
    return GWR_OK;
}

const gwr_kernel_entry gwr_kernels_geometry[] = {
    GWR_KERNEL(CenterCropPad, k_center_crop_pad),
    GWR_KERNEL(Col2Im, k_col2im),
    GWR_KERNEL(AffineGrid, k_affine_grid),
    GWR_KERNEL(DeformConv, k_deform_conv),
    {.fn = NULL},
};
