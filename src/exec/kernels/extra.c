/* extra.c - the extra kernel family: text (StringNormalizer,
 * TfIdfVectorizer), set and detection ops (Unique, NonMaxSuppression) and
 * sampling (RoiAlign, GridSample).
 *
 * Semantics follow ONNX's operator specification and, where it is silent,
 * ONNX's reference implementation and ONNX Runtime: RoiAlign's max mode
 * takes the largest weighted corner, GridSample's bilinear and nearest modes
 * pad the coordinate while bicubic pads each tap (as PyTorch does). Every input, attribute and index is checked first; what no
 * conforming model can hold (a NaN region, a grid of 10^30 samples) is an
 * error or, for GridSample's NaN coordinates, a NaN output, never undefined
 * behaviour. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/kernels/kernel_util.h"

/* The most elements an output of these ops may have, and the most samples
 * RoiAlign may take for one output element. */
#define MAX_ELEMS ((int64_t)1 << 32)
#define MAX_SAMPLES ((int64_t)1 << 24)

/* ---- StringNormalizer ------------------------------------------------------ */

/* The case of one code point: ASCII, and the letters of Latin-1, Latin
 * Extended-A, Greek and Cyrillic whose both cases are two UTF-8 bytes (so
 * a string keeps its length; modern Greek only; dotted / dotless i and
 * long s, whose other case is one byte, stay as they are). */
static uint32_t case_map(uint32_t c, int upper) {
    int pair_even_upper = (c >= 0x100 && c <= 0x12F) || (c >= 0x132 && c <= 0x137) || (c >= 0x14A && c <= 0x177);
    int pair_odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    if (pair_even_upper || pair_odd_upper) {
        int is_upper = (int)(c & 1) == pair_odd_upper;
        return is_upper == upper ? c : upper ? c - 1 : c + 1;
    }
    if (upper) {
        if (c >= 'a' && c <= 'z') return c - 0x20;
        if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 0x20;
        if (c == 0xFF) return 0x178;
        if (c == 0x3C2) return 0x3A3; /* final sigma */
        if (c == 0x3AC) return 0x386;
        if (c >= 0x3AD && c <= 0x3AF) return c - 0x25;
        if (c == 0x3CC) return 0x38C;
        if (c == 0x3CD || c == 0x3CE) return c - 0x3F;
        if (c >= 0x3B1 && c <= 0x3CB) return c - 0x20;
        if (c >= 0x430 && c <= 0x44F) return c - 0x20;
        if (c >= 0x450 && c <= 0x45F) return c - 0x50;
    } else {
        if (c >= 'A' && c <= 'Z') return c + 0x20;
        if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 0x20;
        if (c == 0x178) return 0xFF;
        if (c == 0x386) return 0x3AC;
        if (c >= 0x388 && c <= 0x38A) return c + 0x25;
        if (c == 0x38C) return 0x3CC;
        if (c == 0x38E || c == 0x38F) return c + 0x3F;
        if (c >= 0x391 && c <= 0x3AB && c != 0x3A2) return c + 0x20;
        if (c >= 0x410 && c <= 0x42F) return c + 0x20;
        if (c >= 0x400 && c <= 0x40F) return c + 0x50;
    }
    return c;
}

/* dst[0..n) = src with its case changed; bytes that are not ASCII or a
 * well-formed two-byte sequence are copied as they are. */
static void change_case(char *dst, const char *src, size_t n, int upper) {
    const unsigned char *s = (const unsigned char *)src;
    for (size_t i = 0; i < n;) {
        if (s[i] < 0x80) {
            dst[i] = (char)case_map(s[i], upper);
            i++;
        } else if (s[i] >= 0xC2 && s[i] <= 0xDF && i + 1 < n && (s[i + 1] & 0xC0) == 0x80) {
            uint32_t c = case_map(((uint32_t)(s[i] & 0x1F) << 6) | (s[i + 1] & 0x3F), upper);
            dst[i] = (char)(0xC0 | (c >> 6));
            dst[i + 1] = (char)(0x80 | (c & 0x3F));
            i += 2;
        } else {
            dst[i] = (char)s[i];
            i++;
        }
    }
}

enum { CASE_NONE, CASE_LOWER, CASE_UPPER };

static gwr_status k_string_normalizer(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_named(k, 0, "X");
    if (!x) return GWR_ERR_INVALID_ARG;
    if (x->dtype != GWR_STRING) return gwr_k_fail(k, GWR_ERR_TYPE, "X must be string, not %s", gwr_dtype_name(x->dtype));
    if (!(x->rank == 1 || (x->rank == 2 && x->dims[0] == 1)))
        return gwr_k_fail(k, GWR_ERR_SHAPE, "X must be [C] or [1, C], not rank %d%s", x->rank,
                          x->rank == 2 ? " with a first dim other than 1" : "");
    const char *act = gwr_k_string(k, "case_change_action", "NONE");
    int action = !strcmp(act, "NONE") ? CASE_NONE : !strcmp(act, "LOWER") ? CASE_LOWER : !strcmp(act, "UPPER") ? CASE_UPPER : -1;
    if (action < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "case_change_action '%s' is not LOWER, UPPER or NONE", act);
    int64_t sens = gwr_k_int(k, "is_case_sensitive", 0);
    if (sens != 0 && sens != 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "is_case_sensitive must be 0 or 1, not %lld", (long long)sens);
    /* Case rules here are the locale-independent ones; Turkish and Azeri
     * map i and I differently, which this kernel does not do. */
    const char *loc = gwr_k_string(k, "locale", "");
    if (!strncmp(loc, "tr", 2) || !strncmp(loc, "az", 2))
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "locale '%s' has case rules this kernel does not implement", loc);
    const gwr_bytes *sw = NULL;
    int64_t nsw = 0;
    if (gwr_layer_get_strings(k->layer, "stopwords", &sw, &nsw)) sw = NULL, nsw = 0;

    const gwr_bytes *xs = x->data;
    int64_t c = x->numel;
    size_t maxlen = 0;
    for (int64_t i = 0; i < c; i++)
        if (xs[i].len > maxlen) maxlen = xs[i].len;
    for (int64_t i = 0; i < nsw; i++)
        if (sw[i].len > maxlen) maxlen = sw[i].len;
    /* Case-insensitive matching compares upper-cased copies (so that both
     * sigmas match); the stop words are folded once, into one block. */
    size_t swbytes = 0;
    if (!sens)
        for (int64_t i = 0; i < nsw; i++) swbytes += sw[i].len;
    char *buf = gwr_ku_scratch(k, (int64_t)(maxlen + swbytes + 1), 1);
    char *keep = buf ? gwr_ku_scratch(k, c, 1) : NULL;
    if (!keep) {
        free(buf);
        return GWR_ERR_NOMEM;
    }
    char *folded = buf + maxlen;
    if (!sens)
        for (int64_t i = 0, off = 0; i < nsw; off += (int64_t)sw[i].len, i++) change_case(folded + off, sw[i].data, sw[i].len, 1);
    int64_t m = 0;
    for (int64_t i = 0; i < c; i++) {
        const char *s = xs[i].data;
        if (!sens) {
            change_case(buf, xs[i].data, xs[i].len, 1);
            s = buf;
        }
        int stop = 0;
        for (int64_t j = 0, off = 0; j < nsw && !stop; off += (int64_t)sw[j].len, j++)
            stop = sw[j].len == xs[i].len && (!xs[i].len || !memcmp(s, sens ? sw[j].data : folded + off, xs[i].len));
        keep[i] = (char)!stop;
        m += !stop;
    }
    /* Everything filtered: one empty string, [1] or [1, 1]. */
    int64_t od[2] = {1, m ? m : 1};
    gwr_value *y = x->rank == 1 ? gwr_k_out(k, 0, GWR_STRING, 1, od + 1) : gwr_k_out(k, 0, GWR_STRING, 2, od);
    gwr_status rc = y ? GWR_OK : GWR_ERR_NOMEM;
    /* the empty string as a string (not a NULL entry) */
    if (!rc && !m && gwr_value_set_string(y, 0, "", 0)) rc = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    for (int64_t i = 0, o = 0; i < c && !rc; i++) {
        if (!keep[i]) continue;
        const char *s = xs[i].data;
        if (action != CASE_NONE) {
            change_case(buf, xs[i].data, xs[i].len, action == CASE_UPPER);
            s = buf;
        }
        if (gwr_value_set_string(y, o++, s, xs[i].len)) rc = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    }
    free(buf);
    free(keep);
    return rc;
}

/* ---- Unique ------------------------------------------------------------------ */

/* Total order on floats: numbers as usual (-0 == 0), NaN after all, equal
 * to itself. */
static int cmp_f64(double a, double b) {
    int na = a != a, nb = b != b;
    if (na || nb) return na - nb;
    return (a > b) - (a < b);
}

static int cmp_elem(const gwr_value *x, int64_t a, int64_t b) {
    switch (x->dtype) {
    case GWR_FLOAT32: return cmp_f64(((const float *)x->data)[a], ((const float *)x->data)[b]);
    case GWR_FLOAT64: return cmp_f64(((const double *)x->data)[a], ((const double *)x->data)[b]);
    case GWR_FLOAT16:
    case GWR_BFLOAT16: return cmp_f64(gwr_v_get_f64(x, a), gwr_v_get_f64(x, b));
    case GWR_COMPLEX64: {
        const float *p = x->data;
        int c = cmp_f64(p[2 * a], p[2 * b]);
        return c ? c : cmp_f64(p[2 * a + 1], p[2 * b + 1]);
    }
    case GWR_COMPLEX128: {
        const double *p = x->data;
        int c = cmp_f64(p[2 * a], p[2 * b]);
        return c ? c : cmp_f64(p[2 * a + 1], p[2 * b + 1]);
    }
    case GWR_UINT64: {
        uint64_t u = ((const uint64_t *)x->data)[a], v = ((const uint64_t *)x->data)[b];
        return (u > v) - (u < v);
    }
    case GWR_BOOL: {
        int u = ((const uint8_t *)x->data)[a] != 0, v = ((const uint8_t *)x->data)[b] != 0;
        return u - v;
    }
    case GWR_STRING: return gwr_ku_cmp_bytes((const gwr_bytes *)x->data + a, (const gwr_bytes *)x->data + b);
    default: {
        int64_t u = gwr_v_get_i64(x, a), v = gwr_v_get_i64(x, b);
        return (u > v) - (u < v);
    }
    }
}

typedef struct {
    const gwr_value *x;
    int64_t n, outer, inner; /* slice s: elements o*n*inner + s*inner + j */
} slices;

static int cmp_slices(const void *ctx, int64_t a, int64_t b) {
    const slices *s = ctx;
    for (int64_t o = 0; o < s->outer; o++) {
        int64_t base = o * s->n * s->inner;
        for (int64_t j = 0; j < s->inner; j++) {
            int c = cmp_elem(s->x, base + a * s->inner + j, base + b * s->inner + j);
            if (c) return c;
        }
    }
    return 0;
}

static int cmp_i64(const void *ctx, int64_t a, int64_t b) {
    const int64_t *v = ctx;
    return (v[a] > v[b]) - (v[a] < v[b]);
}

static gwr_status k_unique(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_named(k, 0, "X");
    if (!x) return GWR_ERR_INVALID_ARG;
    int bits = gwr_dtype_bits(x->dtype);
    if (x->dtype != GWR_STRING && (bits < 8 || bits % 8 || x->dtype >= GWR_FLOAT8E4M3FN))
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "X of dtype %s is not supported", gwr_dtype_name(x->dtype));
    int64_t esz = bits / 8, sorted = gwr_k_int(k, "sorted", 1), axis_attr;
    if (sorted != 0 && sorted != 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "sorted must be 0 or 1, not %lld", (long long)sorted);
    int has_axis = !gwr_layer_get_int(k->layer, "axis", &axis_attr), axis = -1;
    slices sl = {x, x->numel, 1, 1};
    if (has_axis) {
        if ((axis = gwr_axis(axis_attr, x->rank)) < 0)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)axis_attr, x->rank);
        sl.n = x->dims[axis];
        sl.outer = gwr_shape_numel(axis, x->dims);
        sl.inner = gwr_shape_numel(x->rank - axis - 1, x->dims + axis + 1);
    }
    int64_t n = sl.n;
    /* perm: slices in sorted order (ties by position); grp: each slice's
     * run; first / count: each run's first slice and size; order: the
     * runs in output order; pos: each run's output position. */
    int64_t *mem = gwr_ku_scratch(k, gwr_ku_mul_max(n, 7, INT64_MAX), sizeof(int64_t));
    if (!mem) return GWR_ERR_NOMEM;
    int64_t *perm = mem, *tmp = mem + n, *grp = mem + 2 * n, *first = mem + 3 * n, *count = mem + 4 * n,
            *order = mem + 5 * n, *pos = mem + 6 * n, nu = 0;
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    gwr_ku_merge_sort(perm, tmp, n, cmp_slices, &sl);
    for (int64_t i = 0; i < n; i++) {
        if (i == 0 || cmp_slices(&sl, perm[i - 1], perm[i])) {
            first[nu] = perm[i], count[nu] = 0;
            nu++;
        }
        grp[perm[i]] = nu - 1;
        count[nu - 1]++;
    }
    for (int64_t u = 0; u < nu; u++) order[u] = u;
    if (!sorted) gwr_ku_merge_sort(order, tmp, nu, cmp_i64, first); /* by first occurrence */
    for (int64_t u = 0; u < nu; u++) pos[order[u]] = u;

    int64_t yd[GWR_MAX_RANK];
    int yr = has_axis ? x->rank : 1;
    if (has_axis) memcpy(yd, x->dims, (size_t)x->rank * sizeof *yd), yd[axis] = nu;
    else yd[0] = nu;
    gwr_status rc = GWR_OK;
    gwr_value *y = gwr_k_out(k, 0, x->dtype, yr, yd);
    if (!y) rc = GWR_ERR_NOMEM;
    for (int64_t o = 0; o < sl.outer && !rc && sl.inner; o++)
        for (int64_t u = 0; u < nu && !rc; u++) {
            int64_t src = (o * n + first[order[u]]) * sl.inner, dst = (o * nu + u) * sl.inner;
            if (esz) {
                memcpy((char *)y->data + dst * esz, (const char *)x->data + src * esz, (size_t)(sl.inner * esz));
            } else {
                const gwr_bytes *b = (const gwr_bytes *)x->data + src;
                for (int64_t j = 0; j < sl.inner && !rc; j++)
                    if (gwr_value_set_string(y, dst + j, b[j].data, b[j].len)) rc = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
            }
        }
    gwr_value *oi = !rc && k->nout > 1 ? gwr_k_out(k, 1, GWR_INT64, 1, &nu) : NULL;
    gwr_value *ov = !rc && k->nout > 2 ? gwr_k_out(k, 2, GWR_INT64, 1, &n) : NULL;
    gwr_value *oc = !rc && k->nout > 3 ? gwr_k_out(k, 3, GWR_INT64, 1, &nu) : NULL;
    if (!rc && ((k->nout > 1 && !oi) || (k->nout > 2 && !ov) || (k->nout > 3 && !oc))) rc = GWR_ERR_NOMEM;
    for (int64_t u = 0; u < nu && !rc; u++) {
        if (oi) ((int64_t *)oi->data)[u] = first[order[u]];
        if (oc) ((int64_t *)oc->data)[u] = count[order[u]];
    }
    for (int64_t i = 0; i < n && ov && !rc; i++) ((int64_t *)ov->data)[i] = pos[grp[i]];
    free(mem);
    return rc;
}

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
        free(boxes), free(score), free(cand);
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
    free(boxes), free(score), free(cand), free(sel);
    return y ? GWR_OK : GWR_ERR_NOMEM;
}

/* ---- TfIdfVectorizer ------------------------------------------------------------ */

/* N-grams as keys: int64 items as they are, strings as their rank among
 * the pool's distinct strings (-1 for an input string not in the pool). */
typedef struct {
    const int64_t *pk;  /* key of each pool item */
    const int64_t *off; /* first pool item of n-gram g */
    int64_t n;          /* the n-gram length of this table */
} grams;

static int cmp_grams(const void *ctx, int64_t a, int64_t b) {
    const grams *g = ctx;
    for (int64_t t = 0; t < g->n; t++) {
        int64_t u = g->pk[g->off[a] + t], v = g->pk[g->off[b] + t];
        if (u != v) return u < v ? -1 : 1;
    }
    return 0;
}

static int cmp_pool_str(const void *ctx, int64_t a, int64_t b) {
    const gwr_bytes *s = ctx;
    return gwr_ku_cmp_bytes(&s[a], &s[b]);
}

/* The n-gram of table tab (ntab entries) equal to the keys key[0], key[s],
 * ..., or -1. */
static int64_t find_gram(const grams *g, const int64_t *tab, int64_t ntab, const int64_t *key, int64_t s) {
    int64_t lo = 0, hi = ntab;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2, c = 0;
        for (int64_t t = 0; t < g->n && !c; t++) {
            int64_t u = g->pk[g->off[tab[mid]] + t], v = key[t * s];
            c = u < v ? -1 : u > v;
        }
        if (!c) return tab[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

static gwr_status req_int(gwr_kctx *k, const char *name, int64_t *v) {
    if (gwr_layer_get_int(k->layer, name, v)) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attribute %s is missing", name);
    return GWR_OK;
}

enum { TF_TF, TF_IDF, TF_TFIDF };

static gwr_status k_tfidf(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_named(k, 0, "X");
    if (!x) return GWR_ERR_INVALID_ARG;
    if (x->dtype != GWR_INT32 && x->dtype != GWR_INT64 && x->dtype != GWR_STRING)
        return gwr_k_fail(k, GWR_ERR_TYPE, "X must be int32, int64 or string, not %s", gwr_dtype_name(x->dtype));
    if (x->rank > 2) return gwr_k_fail(k, GWR_ERR_SHAPE, "X must be [C] or [N, C], not rank %d", x->rank);
    int64_t rows = x->rank == 2 ? x->dims[0] : 1, c = x->rank == 0 ? 1 : x->dims[x->rank - 1];
    const char *ms;
    if (gwr_layer_get_string(k->layer, "mode", &ms, NULL)) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attribute mode is missing");
    int mode = !strcmp(ms, "TF") ? TF_TF : !strcmp(ms, "IDF") ? TF_IDF : !strcmp(ms, "TFIDF") ? TF_TFIDF : -1;
    if (mode < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "mode '%s' is not TF, IDF or TFIDF", ms);
    int64_t mn, mx, skip;
    if (req_int(k, "min_gram_length", &mn) || req_int(k, "max_gram_length", &mx) || req_int(k, "max_skip_count", &skip))
        return GWR_ERR_INVALID_ARG;
    if (mn < 1 || mx < mn)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "gram lengths [%lld, %lld] must satisfy 1 <= min <= max", (long long)mn, (long long)mx);
    if (skip < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "max_skip_count %lld is negative", (long long)skip);
    const int64_t *counts, *idx, *pint = NULL;
    const gwr_bytes *pstr = NULL;
    const float *w = NULL;
    int64_t ncounts = gwr_k_ints(k, "ngram_counts", &counts), nidx = gwr_k_ints(k, "ngram_indexes", &idx), np, nw;
    if (ncounts < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attribute ngram_counts is missing");
    if (nidx < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attribute ngram_indexes is missing");
    int64_t npi = gwr_k_ints(k, "pool_int64s", &pint), nps = -1;
    if (gwr_layer_get_strings(k->layer, "pool_strings", &pstr, &nps)) nps = -1;
    if ((npi < 0) == (nps < 0)) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "exactly one of pool_int64s and pool_strings must be set");
    if ((nps >= 0) != (x->dtype == GWR_STRING))
        return gwr_k_fail(k, GWR_ERR_TYPE, "X of dtype %s needs %s", gwr_dtype_name(x->dtype),
                          nps >= 0 ? "pool_int64s, not pool_strings" : "pool_strings, not pool_int64s");
    np = npi >= 0 ? npi : nps;
    /* The pool: ngram_counts[i] is where the (i+1)-grams start. */
    int64_t total = 0;
    for (int64_t i = 0; i < ncounts; i++) {
        int64_t end = i + 1 < ncounts ? counts[i + 1] : np;
        if (counts[i] < 0 || counts[i] > np || (i == 0 && counts[i] != 0) || end < counts[i])
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "ngram_counts must rise from 0 to at most the pool size %lld (entry %lld is %lld)",
                              (long long)np, (long long)i, (long long)counts[i]);
        if ((end - counts[i]) % (i + 1))
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "the %lld-grams span %lld pool entries, not a multiple of %lld", (long long)(i + 1),
                              (long long)(end - counts[i]), (long long)(i + 1));
        total += (end - counts[i]) / (i + 1);
    }
    if (nidx != total)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "ngram_indexes has %lld entries, the pool %lld n-grams", (long long)nidx,
                          (long long)total);
    int64_t ncol = 0;
    for (int64_t i = 0; i < nidx; i++) {
        if (idx[i] < 0 || idx[i] >= MAX_ELEMS)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "ngram_indexes[%lld] = %lld is out of range", (long long)i, (long long)idx[i]);
        if (idx[i] + 1 > ncol) ncol = idx[i] + 1;
    }
    int64_t ny = gwr_ku_mul_max(rows, ncol, INT64_MAX);
    if (ny < 0 || ny > MAX_ELEMS)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "an output of %lld x %lld is too large", (long long)rows, (long long)ncol);
    nw = gwr_k_floats(k, "weights", &w);
    if (nw >= 0 && nw != nidx)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "weights has %lld entries, ngram_indexes %lld", (long long)nw, (long long)nidx);
    if (nw < 0) w = NULL;

    /* Keys of pool and input, the start of every n-gram, one table per
     * length, frequencies. */
    int64_t *mem = gwr_ku_scratch(k, 3 * np + x->numel + 4 * total + 2 * ncounts, sizeof(int64_t));
    if (!mem) return GWR_ERR_NOMEM;
    int64_t *pk = mem, *xk = pk + np, *off = xk + x->numel, *tab = off + total, *tmp = tab + total, *perm = tmp + total,
            *ptmp = perm + np, *cnt = ptmp + np;
    if (pint) {
        memcpy(pk, pint, (size_t)np * sizeof *pk);
        for (int64_t i = 0; i < x->numel; i++) xk[i] = gwr_v_get_i64(x, i);
    } else {
        for (int64_t i = 0; i < np; i++) perm[i] = i;
        gwr_ku_merge_sort(perm, ptmp, np, cmp_pool_str, pstr);
        for (int64_t i = 0, id = -1; i < np; i++) {
            if (i == 0 || gwr_ku_cmp_bytes(&pstr[perm[i - 1]], &pstr[perm[i]])) id++;
            pk[perm[i]] = id;
        }
        const gwr_bytes *xs = x->data;
        for (int64_t i = 0; i < x->numel; i++) {
            int64_t lo = 0, hi = np;
            xk[i] = -1;
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                int cc = gwr_ku_cmp_bytes(&pstr[perm[mid]], &xs[i]);
                if (!cc) {
                    xk[i] = pk[perm[mid]];
                    break;
                }
                if (cc < 0) lo = mid + 1;
                else hi = mid;
            }
        }
    }
    /* tf[n-1] / tl[n-1]: where the n-grams sit in tab, sorted, duplicates
     * dropped (a later duplicate wins, as in the reference); none for the
     * lengths outside [min, max]. */
    int64_t g = 0, nmax = mx < ncounts ? mx : ncounts, *tf = cnt + total, *tl = tf + ncounts;
    for (int64_t i = 0; i < ncounts; i++) {
        int64_t n = i + 1, end = i + 1 < ncounts ? counts[i + 1] : np, ng = (end - counts[i]) / n;
        for (int64_t j = 0; j < ng; j++) off[g + j] = counts[i] + j * n, tab[g + j] = g + j;
        tf[i] = g, tl[i] = 0;
        if (n >= mn && n <= mx && ng) {
            grams gc = {pk, off, n};
            gwr_ku_merge_sort(tab + g, tmp, ng, cmp_grams, &gc);
            int64_t m = 0;
            for (int64_t j = 0; j < ng; j++) {
                if (m && !cmp_grams(&gc, tab[g + m - 1], tab[g + j])) tab[g + m - 1] = tab[g + j];
                else tab[g + m++] = tab[g + j];
            }
            tl[i] = m;
        }
        g += ng;
    }
    int64_t od[2] = {rows, ncol};
    gwr_value *y = x->rank == 2 ? gwr_k_out(k, 0, GWR_FLOAT32, 2, od) : gwr_k_out(k, 0, GWR_FLOAT32, 1, od + 1);
    int64_t smax = skip + 1 < c ? skip + 1 : c;
    for (int64_t r = 0; y && r < rows; r++) {
        const int64_t *row = xk + r * c;
        memset(cnt, 0, (size_t)total * sizeof *cnt);
        for (int64_t s = 1; s <= smax; s++)
            for (int64_t n = s > 1 && mn < 2 ? 2 : mn; n <= nmax; n++) {
                int64_t span = (n - 1) * s;
                if (!tl[n - 1] || span >= c) continue;
                grams gc = {pk, off, n};
                for (int64_t st = 0; st + span < c; st++) {
                    int64_t hit = find_gram(&gc, tab + tf[n - 1], tl[n - 1], row + st, s);
                    if (hit >= 0) cnt[hit]++;
                }
            }
        /* Weights belong to pool n-grams (as the spec and ONNX Runtime have
         * it). Where several n-grams share a column, TF and TFIDF add up;
         * IDF takes the weight of the last n-gram found, in pool order. */
        float *yr = (float *)y->data + r * ncol;
        for (int64_t j = 0; j < ncol; j++) yr[j] = 0;
        for (int64_t i = 0; i < total; i++) {
            double f = (double)cnt[i], wt = w ? w[i] : 1.0;
            if (!cnt[i]) continue;
            if (mode == TF_TF) yr[idx[i]] += (float)f;
            else if (mode == TF_TFIDF) yr[idx[i]] += (float)(f * wt);
            else yr[idx[i]] = (float)wt;
        }
    }
    free(mem);
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
            return free(sm), gwr_k_fail(k, GWR_ERR_INVALID_ARG, "roi %lld needs %.0f x %.0f samples per output element, more than %lld",
                                        (long long)r, gh, gw, (long long)MAX_SAMPLES);
        int64_t ngh = (int64_t)gh, ngw = (int64_t)gw, ns = ngh * ngw, count = ns > 1 ? ns : 1;
        if (ns > cap) {
            sample *t = realloc(sm, (size_t)ns * sizeof *sm);
            if (!t) return free(sm), gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
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
    free(sm);
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
    if (x->rank < 3) return gwr_k_fail(k, GWR_ERR_SHAPE, "X must be [N, C, H, W], not rank %d", x->rank);
    if (x->rank != 4) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "only 4-D X is supported, not rank %d", x->rank);
    if (gr->rank != 4 || gr->dims[0] != x->dims[0] || gr->dims[3] != 2)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "grid must be [N, H_out, W_out, 2] with X's N (%lld)", (long long)x->dims[0]);
    const char *ms = gwr_k_string(k, "mode", "bilinear"), *ps = gwr_k_string(k, "padding_mode", "zeros");
    gs_opts o;
    o.mode = !strcmp(ms, "bilinear") || !strcmp(ms, "linear")  ? GS_LINEAR
             : !strcmp(ms, "nearest")                          ? GS_NEAREST
             : !strcmp(ms, "bicubic") || !strcmp(ms, "cubic") ? GS_CUBIC
                                                               : -1;
    if (o.mode < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "mode '%s' is not bilinear, nearest or bicubic", ms);
    o.pad = !strcmp(ps, "zeros") ? PAD_ZEROS : !strcmp(ps, "border") ? PAD_BORDER : !strcmp(ps, "reflection") ? PAD_REFLECT : -1;
    if (o.pad < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "padding_mode '%s' is not zeros, border or reflection", ps);
    int64_t ac = gwr_k_int(k, "align_corners", 0);
    if (ac != 0 && ac != 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "align_corners must be 0 or 1, not %lld", (long long)ac);
    o.align = (int)ac;
    int64_t n = x->dims[0], ch = x->dims[1], h = x->dims[2], wd = x->dims[3], ho = gr->dims[1], wo = gr->dims[2];
    int64_t od[4] = {n, ch, ho, wo}, ny = gwr_shape_numel(4, od);
    if (ny < 0 || ny > MAX_ELEMS)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "an output of %lld x %lld x %lld x %lld is too large", (long long)n, (long long)ch,
                          (long long)ho, (long long)wo);
    if (ny && (!h || !wd))
        return gwr_k_fail(k, GWR_ERR_SHAPE, "X has no pixels (H = %lld, W = %lld) to sample", (long long)h, (long long)wd);
    gwr_value *y = gwr_k_out(k, 0, x->dtype, 4, od);
    if (!y) return GWR_ERR_NOMEM;
    for (int64_t b = 0; b < n; b++)
        for (int64_t p = 0; p < ho * wo; p++) {
            int64_t tx[4], ty[4];
            double wx[4], wy[4];
            int64_t g = (b * ho * wo + p) * 2;
            int nx = gs_taps(&o, gwr_v_get_f64(gr, g), wd, tx, wx), nyt = gs_taps(&o, gwr_v_get_f64(gr, g + 1), h, ty, wy);
            for (int64_t c = 0; c < ch; c++) {
                int64_t base = (b * ch + c) * h * wd;
                double acc = nx && nyt ? 0 : NAN;
                for (int i = 0; i < nyt; i++)
                    for (int j = 0; j < nx; j++)
                        if (ty[i] >= 0 && tx[j] >= 0) acc += wy[i] * wx[j] * gwr_v_get_f64(x, base + ty[i] * wd + tx[j]);
                gwr_v_set_f64(y, (b * ch + c) * ho * wo + p, acc);
            }
        }
    return GWR_OK;
}

const gwr_kernel_entry gwr_kernels_extra[] = {
    GWR_KERNEL(StringNormalizer, k_string_normalizer),
    GWR_KERNEL(Unique, k_unique),
    GWR_KERNEL(NonMaxSuppression, k_nms),
    GWR_KERNEL(TfIdfVectorizer, k_tfidf),
    GWR_KERNEL(RoiAlign, k_roi_align),
    GWR_KERNEL(GridSample, k_grid_sample),
    {.fn = NULL},
};
