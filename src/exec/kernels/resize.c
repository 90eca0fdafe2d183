/* resize.c - the resize kernel family: Resize (opsets 10 to 19: nearest,
 * linear and cubic, N-D, every coordinate transformation, antialias, axes,
 * keep_aspect_ratio_policy) and Upsample (7, 9).
 *
 * Each resized axis gets a table: for every output index, the source
 * indices and weights along that axis (or "extrapolate" for
 * tf_crop_and_resize outside the input). Nearest gathers elements as raw
 * bytes through the tables, so every dtype is exact; linear and cubic are
 * separable and apply one axis at a time to a double buffer, skipping axes
 * whose table is the identity. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec/kernels/kernel_util.h"

typedef enum { M_NEAREST, M_LINEAR, M_CUBIC } rmode;
typedef enum { CT_HALF_PIXEL, CT_HALF_PIXEL_SYM, CT_PYTORCH, CT_ALIGN, CT_ASYM, CT_TF_CROP, CT_TF_NN } ctmode;
typedef enum { NM_ROUND_FLOOR, NM_ROUND_CEIL, NM_FLOOR, NM_CEIL, NM_SIMPLE } nmode;

typedef struct rsz {
    rmode mode;
    ctmode ct;
    nmode nm;
    double a;         /* cubic_coeff_a */
    int exclude;      /* exclude_outside */
    int antialias;
    double extrap;
    int rank;
    int64_t in[GWR_MAX_RANK], out[GWR_MAX_RANK];
    double scale[GWR_MAX_RANK], roi0[GWR_MAX_RANK], roi1[GWR_MAX_RANK];
    /* The output length as the reference's coordinate formulas see it:
     * in * scale before flooring (sizes given: the size itself). */
    double outf[GWR_MAX_RANK];
} rsz;

/* One axis: for output i, taps idx[i * nt + t] with weights w[...];
 * idx[i * nt] == -1 means the extrapolation value. */
typedef struct axis_tab {
    int nt;
    int identity;
    int64_t *idx;
    double *w;
} axis_tab;

static int lookup(const char *s, const char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

/* The source coordinate of output index i along axis d; *out_of_range for
 * tf_crop_and_resize outside the input. */
static double src_coord(const rsz *p, int d, int64_t i, int *out_of_range) {
    double s = p->scale[d], L = (double)p->in[d], O = p->outf[d], x = (double)i;
    *out_of_range = 0;
    switch (p->ct) {
    case CT_HALF_PIXEL: return (x + 0.5) / s - 0.5;
    case CT_HALF_PIXEL_SYM: {
        double adj = (double)p->out[d] / O, center = L / 2;
        return center * (1 - adj) + (x + 0.5) / s - 0.5;
    }
    case CT_PYTORCH: return O != 1 ? (x + 0.5) / s - 0.5 : -0.5;
    case CT_ALIGN: return O == 1 ? 0 : x * (L - 1) / (O - 1);
    case CT_ASYM: return x / s;
    case CT_TF_NN: return (x + 0.5) / s;
    case CT_TF_CROP: {
        double a = p->roi0[d], b = p->roi1[d];
        double v = O != 1 ? a * (L - 1) + x * (b - a) * (L - 1) / (O - 1) : 0.5 * (a + b) * (L - 1);
        if (v < 0 || v > L - 1) *out_of_range = 1;
        return v;
    }
    }
    return x;
}

static double cubic_w(double x, double A) {
    x = fabs(x);
    if (x <= 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
    if (x < 2) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    return 0;
}

static int64_t clampi(int64_t v, int64_t n) { return v < 0 ? 0 : v >= n ? n - 1 : v; }

/* Builds the table of axis d; -1 when out of memory. */
static int build_tab(const rsz *p, int d, axis_tab *t) {
    int64_t L = p->in[d], O = p->out[d];
    double s = p->scale[d];
    double sa = p->antialias && p->mode != M_NEAREST && s < 1 ? s : 1; /* kernel stretch when downsampling */
    int nt;
    int64_t start;
    /* Taps base + start .. base + start + nt - 1 around base = floor(x): the
     * kernel's support (1 for linear, 2 for cubic) stretched by 1 / sa. */
    if (p->mode == M_NEAREST) nt = 1, start = 0;
    else start = (int64_t)floor((p->mode == M_LINEAR ? -1 : -2) / sa) + 1, nt = (int)(2 - 2 * start);
    t->nt = nt;
    t->idx = gwr_malloc((size_t)(O ? O : 1) * (size_t)nt * sizeof *t->idx);
    t->w = gwr_malloc((size_t)(O ? O : 1) * (size_t)nt * sizeof *t->w);
    if (!t->idx || !t->w) return -1;
    t->identity = L == O;
    for (int64_t i = 0; i < O; i++) {
        int oor;
        double x = src_coord(p, d, i, &oor);
        int64_t *ix = t->idx + i * nt;
        double *w = t->w + i * nt;
        if (oor || x != x) {
            ix[0] = -1;
            t->identity = 0;
            continue;
        }
        if (x != (double)i) t->identity = 0;
        double fb = floor(x);
        int64_t base = fb < -1e15 ? (int64_t)-1e15 : fb > 1e15 ? (int64_t)1e15 : (int64_t)fb;
        double r = x - fb;
        if (p->mode == M_NEAREST) {
            int up;
            if (r == 0) up = 0;
            else switch (p->nm) {
                case NM_ROUND_FLOOR: up = r > 0.5; break;
                case NM_ROUND_CEIL: up = r >= 0.5; break;
                case NM_FLOOR: up = 0; break;
                case NM_CEIL: up = 1; break;
                default: up = s < 1 || x < 0; break; /* simple: ceil when downsampling, else truncate */
                }
            ix[0] = clampi(base + up, L);
            w[0] = 1;
            continue;
        }
        if (p->antialias && r == 0) base -= 1, r = 1; /* as the reference: the window of an integer x */
        double sum = 0;
        for (int q = 0; q < nt; q++) {
            double arg = ((double)(start + q) - r) * sa;
            double c = p->mode == M_LINEAR ? (fabs(arg) < 1 ? 1 - fabs(arg) : 0) : cubic_w(arg, p->a);
            w[q] = c;
            sum += c;
        }
        if (p->antialias && sum != 0)
            for (int q = 0; q < nt; q++) w[q] /= sum;
        if (p->exclude) {
            double s2 = 0;
            for (int q = 0; q < nt; q++) {
                int64_t j = base + start + q;
                if (j < 0 || j >= L) w[q] = 0;
                s2 += w[q];
            }
            if (s2 != 0)
                for (int q = 0; q < nt; q++) w[q] /= s2;
        }
        for (int q = 0; q < nt; q++) ix[q] = clampi(base + start + q, L);
    }
    return 0;
}

static gwr_status run_nearest(gwr_kctx *k, const rsz *p, const gwr_value *x, gwr_value *y, axis_tab *tab) {
    int r = p->rank;
    size_t es = gwr_dtype_size(x->dtype);
    int64_t st[GWR_MAX_RANK], idx[GWR_MAX_RANK] = {0};
    gwr_strides(r, x->dims, st);
    /* Extrapolation value in the output's dtype, as bytes. */
    unsigned char ev[16] = {0};
    if (p->ct == CT_TF_CROP) {
        gwr_value *tmp = gwr_value_new(x->dtype, 0, NULL);
        if (!tmp) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
        gwr_v_set_f64(tmp, 0, p->extrap);
        memcpy(ev, tmp->data, es);
        gwr_value_release(tmp);
    }
    const char *xs = x->data;
    char *ys = y->data;
    int64_t last = r ? p->out[r - 1] : 1, rows = r ? y->numel / last : 1;
    int64_t prev_base = -1, prev_ext = -1; /* the row before: an upsampled row repeats it */
    for (int64_t row = 0; row < rows; row++) {
        int64_t base = 0, ext = 0;
        for (int d = 0; d + 1 < r; d++) {
            int64_t j = tab[d].idx[idx[d]];
            if (j < 0) ext = 1;
            else base += j * st[d];
        }
        char *dst = ys + (size_t)(row * last) * es;
        if (row && base == prev_base && ext == prev_ext) {
            memcpy(dst, dst - (size_t)last * es, (size_t)last * es);
        } else if (es == 4) { /* float32 / int32: copies of a constant size, inlined */
            const char *src = xs + (size_t)base * 4;
            for (int64_t i = 0; i < last; i++) {
                int64_t j = r ? tab[r - 1].idx[i] : 0;
                memcpy(dst + (size_t)i * 4, ext || j < 0 ? (const char *)ev : src + (size_t)j * 4, 4);
            }
        } else {
            for (int64_t i = 0; i < last; i++) {
                int64_t j = r ? tab[r - 1].idx[i] : 0;
                memcpy(dst + (size_t)i * es, ext || j < 0 ? (const char *)ev : xs + (size_t)(base + j) * es, es);
            }
        }
        prev_base = base, prev_ext = ext;
        for (int d = r - 2; d >= 0; d--) {
            if (++idx[d] < p->out[d]) break;
            idx[d] = 0;
        }
    }
    return GWR_OK;
}

static gwr_status run_interp(gwr_kctx *k, const rsz *p, const gwr_value *x, gwr_value *y, axis_tab *tab) {
    int r = p->rank;
    int64_t cur[GWR_MAX_RANK];
    memcpy(cur, p->in, (size_t)r * sizeof *cur);
    double *a = gwr_malloc((size_t)(x->numel ? x->numel : 1) * sizeof *a);
    if (!a) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    for (int64_t j = 0; j < x->numel; j++) a[j] = gwr_v_get_f64(x, j);
    /* Shrinking axes first keeps the intermediate buffers small. */
    for (int step = 0; step < 2 * r; step++) {
        int d = step % r;
        if (tab[d].identity || (step < r) != (p->out[d] <= cur[d])) continue;
        int64_t outer = 1, inner = 1, L = cur[d], O = p->out[d];
        for (int i = 0; i < d; i++) outer *= cur[i];
        for (int i = d + 1; i < r; i++) inner *= cur[i];
        int64_t n = outer * O * inner;
        double *b = gwr_calloc((size_t)(n ? n : 1), sizeof *b);
        if (!b) {
            gwr_free(a);
            return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
        }
        int nt = tab[d].nt;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < O; i++) {
                double *dst = b + (o * O + i) * inner;
                const int64_t *ix = tab[d].idx + i * nt;
                const double *w = tab[d].w + i * nt;
                if (ix[0] < 0) {
                    for (int64_t j = 0; j < inner; j++) dst[j] = p->extrap;
                    continue;
                }
                for (int q = 0; q < nt; q++) {
                    if (w[q] == 0) continue;
                    const double *src = a + (o * L + ix[q]) * inner;
                    double wq = w[q];
                    for (int64_t j = 0; j < inner; j++) dst[j] += wq * src[j];
                }
            }
        gwr_free(a);
        a = b;
        cur[d] = O;
    }
    for (int64_t j = 0; j < y->numel; j++) gwr_v_set_f64(y, j, a[j]);
    gwr_free(a);
    return GWR_OK;
}

/* Sizes from scales (or the reverse), then the tables, then the work. */
static gwr_status resize_run(gwr_kctx *k, rsz *p, const gwr_value *x) {
    if (x->dtype == GWR_STRING || !gwr_dtype_size(x->dtype) || gwr_dtype_size(x->dtype) > 16 || gwr_dtype_bits(x->dtype) < 8)
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "cannot resize %s values", gwr_dtype_name(x->dtype));
    gwr_dtype t = x->dtype;
    if (p->mode != M_NEAREST && !gwr_dtype_is_int(t) && t != GWR_FLOAT32 && t != GWR_FLOAT64 && t != GWR_FLOAT16 &&
        t != GWR_BFLOAT16)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s interpolation needs numbers, not %s",
                          p->mode == M_LINEAR ? "linear" : "cubic", gwr_dtype_name(t));
    gwr_value *y = gwr_k_out(k, 0, x->dtype, p->rank, p->out);
    if (!y) return GWR_ERR_NOMEM;
    if (!y->numel) return GWR_OK;
    for (int d = 0; d < p->rank; d++)
        if (!p->in[d]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "dim %d of the input is 0: nothing to resize from", d);
    axis_tab tab[GWR_MAX_RANK];
    memset(tab, 0, sizeof tab);
    gwr_status rc = GWR_OK;
    for (int d = 0; d < p->rank && !rc; d++)
        if (build_tab(p, d, &tab[d])) rc = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    if (!rc) rc = p->mode == M_NEAREST ? run_nearest(k, p, x, y, tab) : run_interp(k, p, x, y, tab);
    for (int d = 0; d < p->rank; d++) gwr_free(tab[d].idx), gwr_free(tab[d].w);
    return rc;
}

/* Output dims from per-axis scales: floor(in * scale). */
static int sizes_from_scales(gwr_kctx *k, rsz *p) {
    int64_t total = 1;
    for (int d = 0; d < p->rank; d++) {
        double s = p->scale[d];
        if (!(s > 0) || !isfinite(s)) {
            gwr_k_fail(k, GWR_ERR_INVALID_ARG, "scale %g for axis %d: scales must be positive", s, d);
            return -1;
        }
        double o = floor((double)p->in[d] * s);
        if (o > (double)((int64_t)1 << 40)) {
            gwr_k_fail(k, GWR_ERR_INVALID_ARG, "scale %g makes axis %d too large", s, d);
            return -1;
        }
        p->out[d] = (int64_t)o;
        p->outf[d] = (double)p->in[d] * s;
        if (p->out[d] && total > ((int64_t)1 << 40) / p->out[d]) {
            gwr_k_fail(k, GWR_ERR_INVALID_ARG, "the output would be too large");
            return -1;
        }
        total *= p->out[d] ? p->out[d] : 1;
    }
    return 0;
}

static int read_scales(gwr_kctx *k, const gwr_value *v, int n, double *dst, const int *axes) {
    if (!gwr_dtype_is_float(v->dtype) || v->rank > 1) {
        gwr_k_fail(k, GWR_ERR_INVALID_ARG, "scales must be a 1-D floating-point tensor");
        return -1;
    }
    if (v->numel != n) {
        gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%lld scales for %d axes", (long long)v->numel, n);
        return -1;
    }
    for (int i = 0; i < n; i++) dst[axes[i]] = gwr_v_get_f64(v, i);
    return 0;
}

static const char *const mode_names[] = {"nearest", "linear", "cubic"};
static const char *const ct_names[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                       "asymmetric", "tf_crop_and_resize",   "tf_half_pixel_for_nn"};
static const char *const nm_names[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};

static gwr_status k_resize(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_named(k, 0, "X");
    if (!x) return GWR_ERR_INVALID_ARG;
    rsz p;
    memset(&p, 0, sizeof p);
    p.rank = x->rank;
    int r = x->rank;
    memcpy(p.in, x->dims, (size_t)r * sizeof *p.in);
    const char *ms = gwr_k_string(k, "mode", "nearest");
    int m = lookup(ms, mode_names, 3);
    if (m < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "unknown mode '%s'", ms);
    p.mode = (rmode)m;
    int v10 = k->opset > 0 && k->opset < 11;
    if (v10) {
        if (p.mode == M_CUBIC) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "mode 'cubic' needs opset 11");
        p.ct = CT_ASYM, p.nm = NM_SIMPLE;
    } else {
        const char *cs = gwr_k_string(k, "coordinate_transformation_mode", "half_pixel");
        int c = lookup(cs, ct_names, 7);
        if (c < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "unknown coordinate_transformation_mode '%s'", cs);
        p.ct = (ctmode)c;
        const char *ns = gwr_k_string(k, "nearest_mode", "round_prefer_floor");
        int nmi = lookup(ns, nm_names, 4);
        if (nmi < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "unknown nearest_mode '%s'", ns);
        p.nm = (nmode)nmi;
    }
    p.a = gwr_k_float(k, "cubic_coeff_a", -0.75f);
    p.exclude = gwr_k_int(k, "exclude_outside", 0) != 0;
    p.extrap = gwr_k_float(k, "extrapolation_value", 0.0f);
    p.antialias = gwr_k_int(k, "antialias", 0) != 0;
    /* axes (opset 18): the axes that scales, sizes and roi name. */
    int axes[GWR_MAX_RANK], na = r;
    const int64_t *av;
    int64_t nav = gwr_k_ints(k, "axes", &av);
    uint8_t seen[GWR_MAX_RANK] = {0};
    if (nav >= 0) {
        if (nav > r) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%lld axes for a rank-%d input", (long long)nav, r);
        na = (int)nav;
        if (gwr_ku_axes_mask(k, av, na, r, seen, axes)) return GWR_ERR_INVALID_ARG;
    } else {
        for (int i = 0; i < r; i++) axes[i] = i;
    }
    for (int d = 0; d < r; d++) p.scale[d] = 1, p.roi0[d] = 0, p.roi1[d] = 1, p.out[d] = p.in[d], p.outf[d] = (double)p.in[d];
    const gwr_value *roi = NULL, *scales, *sizes = NULL;
    if (v10) {
        scales = k->nin > 1 ? k->in[1] : NULL;
        if (!scales) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input 1 (scales) is missing");
    } else {
        roi = k->nin > 1 ? k->in[1] : NULL;
        scales = k->nin > 2 ? k->in[2] : NULL;
        sizes = k->nin > 3 ? k->in[3] : NULL;
        if (scales && !scales->numel) scales = NULL; /* opset 11 passes an empty one beside sizes */
        if (sizes && !sizes->numel) sizes = NULL;
        if (!scales == !sizes) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "exactly one of scales and sizes must be given");
    }
    if (roi && roi->numel && p.ct == CT_TF_CROP) {
        if (!gwr_dtype_is_float(roi->dtype) || roi->rank > 1 || roi->numel != 2 * na)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "roi must be a 1-D floating-point tensor of %d values", 2 * na);
        for (int i = 0; i < na; i++) p.roi0[axes[i]] = gwr_v_get_f64(roi, i), p.roi1[axes[i]] = gwr_v_get_f64(roi, na + i);
    }
    if (scales) {
        if (read_scales(k, scales, na, p.scale, axes) || sizes_from_scales(k, &p)) return GWR_ERR_INVALID_ARG;
    } else {
        int64_t sz[GWR_MAX_RANK];
        if (sizes->numel != na)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%lld sizes for %d axes", (long long)sizes->numel, na);
        if (gwr_k_in_ints(k, 3, sz, GWR_MAX_RANK) < 0) return GWR_ERR_INVALID_ARG;
        for (int i = 0; i < na; i++)
            if (sz[i] < 0 || sz[i] > ((int64_t)1 << 40))
                return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "size %lld for axis %d is out of range", (long long)sz[i], axes[i]);
        const char *pol = gwr_k_string(k, "keep_aspect_ratio_policy", "stretch");
        if (!strcmp(pol, "stretch")) {
            for (int i = 0; i < na; i++) {
                int d = axes[i];
                p.out[d] = sz[i];
                p.outf[d] = (double)sz[i];
                p.scale[d] = p.in[d] ? (double)sz[i] / (double)p.in[d] : 1;
            }
        } else if (!strcmp(pol, "not_larger") || !strcmp(pol, "not_smaller")) {
            int larger = !strcmp(pol, "not_smaller");
            double s = larger ? 0 : INFINITY;
            for (int i = 0; i < na; i++) {
                double si = p.in[axes[i]] ? (double)sz[i] / (double)p.in[axes[i]] : 1;
                s = larger ? fmax(s, si) : fmin(s, si);
            }
            if (!na) s = 1;
            for (int i = 0; i < na; i++) {
                int d = axes[i];
                p.scale[d] = s;
                p.out[d] = (int64_t)nearbyint(s * (double)p.in[d]);
                p.outf[d] = s * (double)p.in[d];
            }
        } else {
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "unknown keep_aspect_ratio_policy '%s'", pol);
        }
        for (int d = 0; d < r; d++)
            if (!(p.scale[d] > 0) && p.in[d]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "size 0 for axis %d", d);
        int64_t total = 1;
        for (int d = 0; d < r; d++) {
            if (p.out[d] && total > ((int64_t)1 << 40) / p.out[d]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "the output would be too large");
            total *= p.out[d] ? p.out[d] : 1;
        }
    }
    return resize_run(k, &p, x);
}

/* Upsample: asymmetric coordinates; scales an attribute (7) or input 1 (9). */
static gwr_status k_upsample(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_named(k, 0, "X");
    if (!x) return GWR_ERR_INVALID_ARG;
    rsz p;
    memset(&p, 0, sizeof p);
    p.rank = x->rank;
    memcpy(p.in, x->dims, (size_t)x->rank * sizeof *p.in);
    const char *ms = gwr_k_string(k, "mode", "nearest");
    if (!strcmp(ms, "nearest")) p.mode = M_NEAREST;
    else if (!strcmp(ms, "linear") || !strcmp(ms, "bilinear")) p.mode = M_LINEAR;
    else return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "unknown mode '%s'", ms);
    p.ct = CT_ASYM, p.nm = NM_SIMPLE;
    int axes[GWR_MAX_RANK];
    for (int i = 0; i < x->rank; i++) axes[i] = i;
    if (k->nin > 1 && k->in[1]) {
        if (read_scales(k, k->in[1], x->rank, p.scale, axes)) return GWR_ERR_INVALID_ARG;
    } else {
        const float *fs;
        int64_t n = gwr_k_floats(k, "scales", &fs);
        if (n < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "no scales: neither input 1 nor attribute scales");
        if (n != x->rank) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%lld scales for rank %d", (long long)n, x->rank);
        for (int i = 0; i < x->rank; i++) p.scale[i] = fs[i];
    }
    if (sizes_from_scales(k, &p)) return GWR_ERR_INVALID_ARG;
    return resize_run(k, &p, x);
}

const gwr_kernel_entry gwr_kernels_resize[] = {
    GWR_KERNEL(Resize, k_resize),
    GWR_KERNEL(Upsample, k_upsample),
    {.fn = NULL},
};
