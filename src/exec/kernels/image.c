/* image.c - the image ops of detection models: NonMaxSuppression (boxes
 * kept per batch and class), RoiAlign (average or max of bilinear samples
 * over each region) and GridSample (a 2-D or 3-D image read at a grid of
 * normalized coordinates).
 *
 * Semantics follow ONNX's operator specification and, where it is silent,
 * ONNX's reference implementation and ONNX Runtime: RoiAlign's max mode
 * takes the largest weighted corner, GridSample's bilinear and nearest modes
 * pad the coordinate while bicubic pads each tap (as PyTorch does). Every
 * input, attribute and index is checked first; what no conforming model can
 * hold (a NaN region, a grid of 10^30 samples) is an error or, for
 * GridSample's NaN coordinates, a NaN output, never undefined behaviour. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/kernels/kernel_util.h"

/* The most elements an output of these ops may have, and the most samples
 * RoiAlign may take for one output element. */
#define MAX_ELEMS ((int64_t)1 << 32)
#define MAX_SAMPLES ((int64_t)1 << 24)

/* ---- NonMaxSuppression --------------------------------------------------------- */

/* An optional scalar input (rank 0 or one element; absent or empty: *has
 * 0). -1 after gwr_k_fail. */
static int opt_scalar(gwr_kctx *k, int i, const char *name, int want_int, double *d, int64_t *n, int *has) {
    const gwr_value *v = gwr_ku_opt(k, i);
    *has = 0;
    if (!v || v->numel == 0) return 0;
    if (want_int ? (v->dtype != GWR_INT64 && v->dtype != GWR_INT32) : !gwr_ku_is_float(v->dtype))
        return gwr_k_fail(k, GWR_ERR_TYPE, "%s must be %s, not %s", name, want_int ? "int64" : "float", gwr_dtype_name(v->dtype)), -1;
    if (v->numel != 1) return gwr_k_fail(k, GWR_ERR_SHAPE, "%s must be a scalar, not %lld values", name, (long long)v->numel), -1;
    *has = 1;
    if (want_int) *n = gwr_v_get_i64(v, 0);
    else *d = gwr_v_get_f64(v, 0);
    return 0;
}

typedef struct {
    double x0, y0, x1, y1, area; /* x0 <= x1, y0 <= y1 */
} nbox;

/* Does b suppress a: their IoU above the threshold (boxes of no area, or
 * that do not overlap, never suppress). */
static int suppresses(const nbox *a, const nbox *b, double thr) {
    double ix0 = a->x0 > b->x0 ? a->x0 : b->x0, ix1 = a->x1 < b->x1 ? a->x1 : b->x1;
    double iy0 = a->y0 > b->y0 ? a->y0 : b->y0, iy1 = a->y1 < b->y1 ? a->y1 : b->y1;
    if (!(ix1 > ix0) || !(iy1 > iy0) || !(a->area > 0) || !(b->area > 0)) return 0;
    double inter = (ix1 - ix0) * (iy1 - iy0), uni = a->area + b->area - inter;
    return uni > 0 && inter / uni > thr;
}

/* Higher score first; NaN scores last. */
static int cmp_score(const void *ctx, int64_t a, int64_t b) {
    const double *s = ctx;
    int na = s[a] != s[a], nb = s[b] != s[b];
    if (na || nb) return na - nb;
    return (s[a] < s[b]) - (s[a] > s[b]);
}

static gwr_status k_nms(gwr_kctx *k) {
    const gwr_value *bx = gwr_ku_need_named(k, 0, "boxes"), *sc = gwr_ku_need_named(k, 1, "scores");
    if (!bx || !sc) return GWR_ERR_INVALID_ARG;
    if (!gwr_ku_is_float(bx->dtype) || !gwr_ku_is_float(sc->dtype))
        return gwr_k_fail(k, GWR_ERR_TYPE, "boxes and scores must be float, not %s and %s", gwr_dtype_name(bx->dtype),
                          gwr_dtype_name(sc->dtype));
    if (bx->rank != 3 || bx->dims[2] != 4) return gwr_k_fail(k, GWR_ERR_SHAPE, "boxes must be [num_batches, spatial_dimension, 4]");
    if (sc->rank != 3) return gwr_k_fail(k, GWR_ERR_SHAPE, "scores must be [num_batches, num_classes, spatial_dimension]");
    int64_t nb = bx->dims[0], ns = bx->dims[1], nc = sc->dims[1];
    if (sc->dims[0] != nb || sc->dims[2] != ns)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "scores [%lld, %lld, %lld] do not match boxes [%lld, %lld, 4]", (long long)sc->dims[0],
                          (long long)nc, (long long)sc->dims[2], (long long)nb, (long long)ns);
    int64_t cpb = gwr_k_int(k, "center_point_box", 0), maxout = 0;
    if (cpb != 0 && cpb != 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "center_point_box must be 0 or 1, not %lld", (long long)cpb);
    double iou = 0, sthr = 0, unused;
    int has_max, has_iou, has_s;
    if (opt_scalar(k, 2, "max_output_boxes_per_class", 1, &unused, &maxout, &has_max) ||
        opt_scalar(k, 3, "iou_threshold", 0, &iou, NULL, &has_iou) || opt_scalar(k, 4, "score_threshold", 0, &sthr, NULL, &has_s))
        return GWR_ERR_INVALID_ARG;
    if (!(iou >= 0 && iou <= 1)) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "iou_threshold %g is not in [0, 1]", iou);
    if (maxout < 0) maxout = 0;
    if (maxout > ns) maxout = ns;
    int64_t cap = gwr_ku_mul_max(gwr_ku_mul_max(nb, nc, INT64_MAX), maxout, INT64_MAX);
    if (cap < 0 || cap > MAX_ELEMS) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "up to %lld selections is too many", (long long)cap);
    nbox *boxes = gwr_ku_scratch(k, ns, sizeof *boxes);
    double *score = boxes ? gwr_ku_scratch(k, ns, sizeof *score) : NULL;
    int64_t *cand = score ? gwr_ku_scratch(k, 2 * ns + maxout, sizeof *cand) : NULL, *sel = NULL;
    if (cand) sel = gwr_ku_scratch(k, 3 * cap, sizeof *sel);
    if (!sel) {
        gwr_free(boxes), gwr_free(score), gwr_free(cand);
        return GWR_ERR_NOMEM;
    }
    int64_t *tmp = cand + ns, *chosen = cand + 2 * ns, nsel = 0;
    for (int64_t b = 0; b < nb; b++) {
        for (int64_t i = 0; i < ns; i++) {
            double v[4];
            for (int j = 0; j < 4; j++) v[j] = gwr_v_get_f64(bx, (b * ns + i) * 4 + j);
            nbox *p = &boxes[i];
            if (cpb) {
                p->x0 = v[0] - v[2] / 2, p->x1 = v[0] + v[2] / 2, p->y0 = v[1] - v[3] / 2, p->y1 = v[1] + v[3] / 2;
            } else {
                p->y0 = v[0] < v[2] ? v[0] : v[2], p->y1 = v[0] < v[2] ? v[2] : v[0];
                p->x0 = v[1] < v[3] ? v[1] : v[3], p->x1 = v[1] < v[3] ? v[3] : v[1];
            }
            p->area = (p->x1 - p->x0) * (p->y1 - p->y0);
        }
        for (int64_t c = 0; c < nc; c++) {
            int64_t m = 0, nch = 0;
            for (int64_t i = 0; i < ns; i++) {
                score[i] = gwr_v_get_f64(sc, (b * nc + c) * ns + i);
                if (!has_s || score[i] > sthr) cand[m++] = i;
            }
            gwr_ku_merge_sort(cand, tmp, m, cmp_score, score);
            for (int64_t t = 0; t < m && nch < maxout; t++) {
                int keep = 1;
                for (int64_t s = 0; s < nch && keep; s++) keep = !suppresses(&boxes[cand[t]], &boxes[chosen[s]], iou);
                if (!keep) continue;
                chosen[nch++] = cand[t];
                sel[3 * nsel] = b, sel[3 * nsel + 1] = c, sel[3 * nsel + 2] = cand[t];
                nsel++;
            }
        }
    }
    int64_t od[2] = {nsel, 3};
    gwr_value *y = gwr_k_out(k, 0, GWR_INT64, 2, od);
    if (y && nsel) memcpy(y->data, sel, (size_t)nsel * 3 * sizeof *sel);
    gwr_free(boxes), gwr_free(score), gwr_free(cand), gwr_free(sel);
    return y ? GWR_OK : GWR_ERR_NOMEM;
}

/* ---- RoiAlign --------------------------------------------------------------------- */

typedef struct {
    int64_t pos[4];
    double w[4];
} sample;

static gwr_status k_roi_align(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_named(k, 0, "X"), *rois = gwr_ku_need_named(k, 1, "rois"), *bi = gwr_ku_need_named(k, 2, "batch_indices");
    if (!x || !rois || !bi) return GWR_ERR_INVALID_ARG;
    if (!gwr_ku_is_float(x->dtype) || !gwr_ku_is_float(rois->dtype))
        return gwr_k_fail(k, GWR_ERR_TYPE, "X and rois must be float, not %s and %s", gwr_dtype_name(x->dtype),
                          gwr_dtype_name(rois->dtype));
    if (bi->dtype != GWR_INT64 && bi->dtype != GWR_INT32)
        return gwr_k_fail(k, GWR_ERR_TYPE, "batch_indices must be int64, not %s", gwr_dtype_name(bi->dtype));
    if (x->rank != 4) return gwr_k_fail(k, GWR_ERR_SHAPE, "X must be [N, C, H, W], not rank %d", x->rank);
    if (rois->rank != 2 || rois->dims[1] != 4) return gwr_k_fail(k, GWR_ERR_SHAPE, "rois must be [num_rois, 4]");
    int64_t nr = rois->dims[0];
    if (bi->rank != 1 || bi->dims[0] != nr)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "batch_indices must be [%lld], one per roi", (long long)nr);
    const char *ms = gwr_k_string(k, "mode", "avg");
    int maxmode = !strcmp(ms, "max");
    if (!maxmode && strcmp(ms, "avg")) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "mode '%s' is not avg or max", ms);
    /* Opset 10 had no coordinate_transformation_mode: it did what
     * output_half_pixel does. */
    const char *ct = gwr_k_string(k, "coordinate_transformation_mode", k->opset && k->opset < 16 ? "output_half_pixel" : "half_pixel");
    int half = !strcmp(ct, "half_pixel");
    if (!half && strcmp(ct, "output_half_pixel"))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "coordinate_transformation_mode '%s' is not half_pixel or output_half_pixel", ct);
    int64_t oh = gwr_k_int(k, "output_height", 1), ow = gwr_k_int(k, "output_width", 1), sr = gwr_k_int(k, "sampling_ratio", 0);
    double scale = gwr_k_float(k, "spatial_scale", 1.0f);
    if (oh < 1 || ow < 1)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "output_height and output_width must be >= 1, not %lld and %lld", (long long)oh,
                          (long long)ow);
    if (sr < 0 || sr > 4096) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "sampling_ratio %lld is not in [0, 4096]", (long long)sr);
    if (!isfinite(scale)) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "spatial_scale is not finite");
    int64_t n = x->dims[0], ch = x->dims[1], h = x->dims[2], wd = x->dims[3];
    for (int64_t r = 0; r < nr; r++) {
        int64_t b = gwr_v_get_i64(bi, r);
        if (b < 0 || b >= n)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "batch_indices[%lld] = %lld is out of range for a batch of %lld", (long long)r,
                              (long long)b, (long long)n);
        for (int j = 0; j < 4; j++)
            if (!isfinite(gwr_v_get_f64(rois, 4 * r + j)))
                return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "roi %lld has a coordinate that is not finite", (long long)r);
    }
    int64_t od[4] = {nr, ch, oh, ow}, ny = gwr_shape_numel(4, od);
    if (ny < 0 || ny > MAX_ELEMS)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "an output of %lld x %lld x %lld x %lld is too large", (long long)nr, (long long)ch,
                          (long long)oh, (long long)ow);
    gwr_value *y = gwr_k_out(k, 0, x->dtype, 4, od);
    if (!y) return GWR_ERR_NOMEM;
    sample *sm = NULL;
    int64_t cap = 0;
    double off = half ? 0.5 : 0.0;
    for (int64_t r = 0; r < nr; r++) {
        int64_t b = gwr_v_get_i64(bi, r);
        double x0 = gwr_v_get_f64(rois, 4 * r) * scale - off, y0 = gwr_v_get_f64(rois, 4 * r + 1) * scale - off;
        double rw = gwr_v_get_f64(rois, 4 * r + 2) * scale - off - x0, rh = gwr_v_get_f64(rois, 4 * r + 3) * scale - off - y0;
        if (!half) rw = rw > 1 ? rw : 1, rh = rh > 1 ? rh : 1; /* malformed rois become 1 x 1 */
        double bh = rh / (double)oh, bw = rw / (double)ow;
        double gh = sr ? (double)sr : ceil(bh), gw = sr ? (double)sr : ceil(bw);
        gh = gh > 0 ? gh : 0, gw = gw > 0 ? gw : 0;
        if (gh > (double)MAX_SAMPLES || gw > (double)MAX_SAMPLES || gh * gw > (double)MAX_SAMPLES)
            return gwr_free(sm), gwr_k_fail(k, GWR_ERR_INVALID_ARG, "roi %lld needs %.0f x %.0f samples per output element, more than %lld",
                                        (long long)r, gh, gw, (long long)MAX_SAMPLES);
        int64_t ngh = (int64_t)gh, ngw = (int64_t)gw, ns = ngh * ngw, count = ns > 1 ? ns : 1;
        if (ns > cap) {
            sample *t = gwr_realloc(sm, (size_t)ns * sizeof *sm);
            if (!t) return gwr_free(sm), gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
            sm = t, cap = ns;
        }
        for (int64_t ph = 0; ph < oh; ph++)
            for (int64_t pw = 0; pw < ow; pw++) {
                for (int64_t iy = 0; iy < ngh; iy++)
                    for (int64_t ix = 0; ix < ngw; ix++) {
                        double yy = y0 + (double)ph * bh + ((double)iy + 0.5) * bh / gh;
                        double xx = x0 + (double)pw * bw + ((double)ix + 0.5) * bw / gw;
                        sample *s = &sm[iy * ngw + ix];
                        if (yy < -1.0 || yy > (double)h || xx < -1.0 || xx > (double)wd || !h || !wd) {
                            s->pos[0] = -1; /* outside the map (or no map): contributes 0 */
                            continue;
                        }
                        yy = yy > 0 ? yy : 0, xx = xx > 0 ? xx : 0;
                        int64_t yl = (int64_t)yy, xl = (int64_t)xx, yh, xh;
                        if (yl >= h - 1) yh = yl = h - 1, yy = (double)yl;
                        else yh = yl + 1;
                        if (xl >= wd - 1) xh = xl = wd - 1, xx = (double)xl;
                        else xh = xl + 1;
                        double ly = yy - (double)yl, lx = xx - (double)xl, hy = 1 - ly, hx = 1 - lx;
                        s->pos[0] = yl * wd + xl, s->pos[1] = yl * wd + xh, s->pos[2] = yh * wd + xl, s->pos[3] = yh * wd + xh;
                        s->w[0] = hy * hx, s->w[1] = hy * lx, s->w[2] = ly * hx, s->w[3] = ly * lx;
                    }
                for (int64_t c = 0; c < ch; c++) {
                    int64_t base = (b * ch + c) * h * wd;
                    double acc = 0;
                    for (int64_t i = 0; i < ns; i++) {
                        const sample *s = &sm[i];
                        if (s->pos[0] < 0) {
                            if (maxmode) acc = i == 0 || acc < 0 ? 0 : acc;
                        } else if (!maxmode) {
                            for (int j = 0; j < 4; j++) acc += s->w[j] * gwr_v_get_f64(x, base + s->pos[j]);
                        } else {
                            /* the largest weighted corner, as the reference does */
                            double v = s->w[0] * gwr_v_get_f64(x, base + s->pos[0]);
                            for (int j = 1; j < 4; j++) {
                                double t = s->w[j] * gwr_v_get_f64(x, base + s->pos[j]);
                                if (t > v) v = t;
                            }
                            acc = i == 0 || v > acc ? v : acc;
                        }
                    }
                    gwr_v_set_f64(y, ((r * ch + c) * oh + ph) * ow + pw, maxmode ? acc : acc / (double)count);
                }
            }
    }
    gwr_free(sm);
    return GWR_OK;
}

/* ---- GridSample ----------------------------------------------------------------------- */

enum { GS_LINEAR, GS_NEAREST, GS_CUBIC };
enum { PAD_ZEROS, PAD_BORDER, PAD_REFLECT };

/* x reflected into [lo, hi] by its borders, as often as it takes. */
static double reflect(double x, double lo, double hi) {
    double rng = hi - lo;
    if (!(rng > 0)) return lo;
    if (x >= lo && x <= hi) return x;
    double dx = x < lo ? lo - x : x - hi, r = fmod(dx, rng), flips = floor(dx / rng);
    int even = fmod(flips, 2.0) == 0;
    return x < lo ? (even ? lo + r : hi - r) : (even ? hi - r : lo + r);
}

typedef struct {
    int mode, pad, align;
} gs_opts;

/* The pixel index padding gives integer coordinate i of an axis of d
 * pixels; -1 for a zero. */
static int64_t gs_pixel(const gs_opts *o, int64_t i, int64_t d) {
    if (o->pad == PAD_ZEROS) return i < 0 || i >= d ? -1 : i;
    if (o->pad == PAD_REFLECT) i = (int64_t)reflect((double)i, o->align ? 0 : -0.5, o->align ? (double)d - 1 : (double)d - 0.5);
    return i < 0 ? 0 : i >= d ? d - 1 : i;
}

/* The taps (pixel index, weight) that sample normalized coordinate gn on
 * an axis of d pixels; their count, 0 when the coordinate is NaN (or
 * reflects from infinity). */
static int gs_taps(const gs_opts *o, double gn, int64_t d, int64_t *ix, double *w) {
    double v = o->align ? (gn + 1) / 2 * (double)(d - 1) : ((gn + 1) * (double)d - 1) / 2;
    double lo = o->align ? 0 : -0.5, hi = o->align ? (double)d - 1 : (double)d - 0.5;
    if (o->mode == GS_NEAREST) v = nearbyint(v); /* ties to even, as PyTorch */
    if (o->mode != GS_CUBIC && (v < lo || v > hi)) {
        if (o->pad == PAD_BORDER) v = v < 0 ? 0 : v > (double)d - 1 ? (double)d - 1 : v;
        else if (o->pad == PAD_REFLECT) v = isfinite(v) ? reflect(v, lo, hi) : NAN;
    } else if (o->mode == GS_CUBIC && o->pad == PAD_REFLECT && hi > lo) {
        /* Bicubic pads each tap, not the coordinate (as PyTorch and ONNX
         * Runtime do). Reflection repeats every 2 (hi - lo), a whole number
         * of pixels: moving v by periods keeps every tap's pixel. */
        double per = 2 * (hi - lo);
        v = isfinite(v) ? v - per * floor((v - lo) / per) : NAN;
    }
    if (v != v) return 0;
    /* Far outside, every tap reads a zero (or the edge, which the cubic
     * weights, summing to 1, return as it is): keep the numbers small. */
    if (o->pad != PAD_REFLECT && v < -8) v = -8;
    if (o->pad != PAD_REFLECT && v > (double)d + 8) v = (double)d + 8;
    if (o->mode == GS_NEAREST) {
        ix[0] = gs_pixel(o, (int64_t)v, d), w[0] = 1;
        return 1;
    }
    double f = floor(v), t = v - f;
    int64_t i0 = (int64_t)f;
    if (o->mode == GS_LINEAR) {
        ix[0] = gs_pixel(o, i0, d), ix[1] = gs_pixel(o, i0 + 1, d);
        w[0] = 1 - t, w[1] = t;
        return 2;
    }
    /* Keys' cubic convolution, a = -0.75, at distances 1 + t, t, 1 - t, 2 - t */
    const double a = -0.75;
    double t1 = t + 1, t2 = 1 - t, t3 = 2 - t;
    w[0] = ((a * t1 - 5 * a) * t1 + 8 * a) * t1 - 4 * a;
    w[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
    w[2] = ((a + 2) * t2 - (a + 3)) * t2 * t2 + 1;
    w[3] = ((a * t3 - 5 * a) * t3 + 8 * a) * t3 - 4 * a;
    for (int j = 0; j < 4; j++) ix[j] = gs_pixel(o, i0 - 1 + j, d);
    return 4;
}

static gwr_status k_grid_sample(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_named(k, 0, "X"), *gr = gwr_ku_need_named(k, 1, "grid");
    if (!x || !gr) return GWR_ERR_INVALID_ARG;
    if (!gwr_ku_is_float(x->dtype) || !gwr_ku_is_float(gr->dtype))
        return gwr_k_fail(k, GWR_ERR_TYPE, "X and grid must be float, not %s and %s", gwr_dtype_name(x->dtype), gwr_dtype_name(gr->dtype));
    if (x->rank < 3) return gwr_k_fail(k, GWR_ERR_SHAPE, "X must be [N, C, H, W] or [N, C, D, H, W], not rank %d", x->rank);
    if (x->rank > 5) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "only 3-D to 5-D X are supported, not rank %d", x->rank);
    /* nsp spatial dims (1 to 3); the grid's last dim lists x (the last
     * axis) first */
    int nsp = x->rank - 2;
    if (gr->rank != x->rank || gr->dims[0] != x->dims[0] || gr->dims[nsp + 1] != nsp)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "grid must be [N, %s, %d] with X's N (%lld)",
                          nsp == 1 ? "W_out" : nsp == 2 ? "H_out, W_out" : "D_out, H_out, W_out",
                          nsp, (long long)x->dims[0]);
    const char *ms = gwr_k_string(k, "mode", "bilinear"), *ps = gwr_k_string(k, "padding_mode", "zeros");
    gs_opts o;
    o.mode = !strcmp(ms, "bilinear") || !strcmp(ms, "linear")  ? GS_LINEAR
             : !strcmp(ms, "nearest")                          ? GS_NEAREST
             : !strcmp(ms, "bicubic") || !strcmp(ms, "cubic") ? GS_CUBIC
                                                               : -1;
    if (o.mode < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "mode '%s' is not bilinear, nearest or bicubic", ms);
    if (o.mode == GS_CUBIC && nsp != 2) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "mode '%s' takes a 4-D X only", ms);
    o.pad = !strcmp(ps, "zeros") ? PAD_ZEROS : !strcmp(ps, "border") ? PAD_BORDER : !strcmp(ps, "reflection") ? PAD_REFLECT : -1;
    if (o.pad < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "padding_mode '%s' is not zeros, border or reflection", ps);
    int64_t ac = gwr_k_int(k, "align_corners", 0);
    if (ac != 0 && ac != 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "align_corners must be 0 or 1, not %lld", (long long)ac);
    o.align = (int)ac;
    int64_t n = x->dims[0], ch = x->dims[1], od[5], plane = 1, pts = 1;
    od[0] = n, od[1] = ch;
    for (int i = 0; i < nsp; i++) {
        od[2 + i] = gr->dims[1 + i];
        plane = gwr_ku_mul_max(plane, x->dims[2 + i], MAX_ELEMS);
        pts = gwr_ku_mul_max(pts, od[2 + i], MAX_ELEMS);
    }
    int64_t ny = gwr_shape_numel(x->rank, od);
    if (ny < 0 || ny > MAX_ELEMS || plane < 0 || pts < 0)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "an output of %lld x %lld x %lld points is too large", (long long)n, (long long)ch,
                          (long long)pts);
    if (ny && !plane) {
        if (nsp == 1) return gwr_k_fail(k, GWR_ERR_SHAPE, "X has no pixels (W = 0) to sample");
        if (nsp == 2)
            return gwr_k_fail(k, GWR_ERR_SHAPE, "X has no pixels (H = %lld, W = %lld) to sample", (long long)x->dims[2],
                              (long long)x->dims[3]);
        return gwr_k_fail(k, GWR_ERR_SHAPE, "X has no pixels (D = %lld, H = %lld, W = %lld) to sample", (long long)x->dims[2],
                          (long long)x->dims[3], (long long)x->dims[4]);
    }
    gwr_value *y = gwr_k_out(k, 0, x->dtype, x->rank, od);
    if (!y) return GWR_ERR_NOMEM;
    for (int64_t b = 0; b < n; b++)
        for (int64_t p = 0; p < pts; p++) {
            /* taps per spatial axis a (0 the outermost); axis a reads grid
             * component nsp - 1 - a */
            int64_t t[3][4], st[3];
            double w[3][4];
            int nt[3], none = 0;
            int64_t g = (b * pts + p) * nsp;
            int64_t s = 1;
            for (int a = nsp - 1; a >= 0; a--) {
                nt[a] = gs_taps(&o, gwr_v_get_f64(gr, g + nsp - 1 - a), x->dims[2 + a], t[a], w[a]);
                none |= !nt[a];
                st[a] = s, s *= x->dims[2 + a];
            }
            for (int a = nsp; a < 3; a++) nt[a] = 1, t[a][0] = 0, w[a][0] = 1, st[a] = 0; /* unused axes: one tap */
            for (int64_t c = 0; c < ch; c++) {
                int64_t base = (b * ch + c) * plane;
                double acc = none ? NAN : 0;
                for (int i = 0; i < nt[0] && !none; i++)
                    for (int j = 0; j < nt[1]; j++)
                        for (int l = 0; l < nt[2]; l++)
                            if (t[0][i] >= 0 && t[1][j] >= 0 && t[2][l] >= 0)
                                acc += w[0][i] * w[1][j] * w[2][l] * gwr_v_get_f64(x, base + t[0][i] * st[0] + t[1][j] * st[1] + t[2][l] * st[2]);
                gwr_v_set_f64(y, (b * ch + c) * pts + p, acc);
            }
        }
    return GWR_OK;
}

const gwr_kernel_entry gwr_kernels_image[] = {
    GWR_KERNEL(NonMaxSuppression, k_nms),
    GWR_KERNEL(RoiAlign, k_roi_align),
    GWR_KERNEL(GridSample, k_grid_sample),
    {.fn = NULL},
};
