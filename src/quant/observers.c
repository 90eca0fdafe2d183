/* observers.c - activation range estimators for static quantization, fed
 * one calibration sample at a time (gwr_q_collect's callback), so that
 * calibration holds a histogram per tensor, never the samples.
 *
 *   minmax      the extremes seen.
 *   percentile  the p-th percentile of |x| (symmetric), or the (100 - p) / 2
 *               lower and upper tails (asymmetric), read off the histogram
 *               (a bin's outer edge: a percentile never cuts inside a bin).
 *   entropy     the threshold t (a bin edge, at least 128 bins out) whose
 *               clipped histogram of |x| loses the least information when
 *               merged into 128 levels: KL(P || Q), P the histogram up to t
 *               with everything beyond added to its last bin, Q the same
 *               bins merged 128 ways and spread back evenly over the bins
 *               that held values (the method TensorRT published, which
 *               onnxruntime's calibrator follows).
 *   mse         the threshold t (a bin edge) whose quantize-dequantize with
 *               the range clipped to t has the least squared error over the
 *               histogram (each bin's values taken at its centre).
 *
 * The histogram: 2048 bins per sign over [-T, T], T the first sample's
 * largest |x|. A later value beyond T doubles T as often as needed, each
 * doubling merging neighbouring pairs of bins (the edges line up, so no
 * count moves across an edge): the idea of onnxruntime's collector, which
 * grows its range by whole bins as data arrives, kept at a fixed memory. */
#include <math.h>
#include <string.h>

#include "quant/quant_internal.h"

#define NB GWR_Q_HIST_BINS  /* bins per sign */
#define QLEVELS 128         /* entropy: quantized levels */

struct gwr_q_observer {
    gwr_calib_method method;
    double pct;
    int sym;
    double mn, mx;  /* finite extremes seen */
    int64_t count;  /* finite values seen */
    double T;       /* histogram half range; 0 until a nonzero value came */
    int64_t zeros;  /* zeros seen before T was set */
    int64_t *h;     /* 2 * NB bins: bin i is [-T + i w, -T + (i + 1) w), w = T / NB */
};

gwr_q_observer *gwr_q_observer_new(gwr_calib_method method, double percentile, int symmetric) {
    gwr_q_observer *ob = gwr_calloc(1, sizeof *ob);
    if (!ob) return NULL;
    ob->method = method, ob->pct = percentile > 0 ? percentile : 99.999, ob->sym = symmetric;
    ob->mn = INFINITY, ob->mx = -INFINITY;
    if (method != GWR_CALIB_MINMAX && !(ob->h = gwr_calloc(2 * NB, sizeof *ob->h))) {
        gwr_free(ob);
        return NULL;
    }
    return ob;
}

void gwr_q_observer_free(gwr_q_observer *ob) {
    if (!ob) return;
    gwr_free(ob->h);
    gwr_free(ob);
}

/* Doubles T until it covers m, merging bin pairs each time. */
static void grow(gwr_q_observer *ob, double m) {
    while (m > ob->T) {
        int64_t *h = ob->h;
        int64_t merged[NB]; /* the new middle half, built from all old bins */
        memset(merged, 0, sizeof merged);
        for (int i = 0; i < 2 * NB; i++) merged[i / 2] += h[i];
        memset(h, 0, 2 * NB * sizeof *h);
        memcpy(h + NB / 2, merged, sizeof merged);
        ob->T *= 2;
    }
}

static int bin_of(const gwr_q_observer *ob, double x) {
    double f = (x + ob->T) / ob->T * NB;
    int i = (int)floor(f);
    return i < 0 ? 0 : i >= 2 * NB ? 2 * NB - 1 : i;
}

void gwr_q_observer_add(gwr_q_observer *ob, const float *x, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = x[i];
        if (!isfinite(v)) continue;
        if (v < ob->mn) ob->mn = v;
        if (v > ob->mx) ob->mx = v;
        if (fabs(v) > m) m = fabs(v);
        ob->count++;
    }
    if (!ob->h) return;
    if (m > 0 && ob->T == 0) {
        ob->T = m;
        ob->h[NB] += ob->zeros; /* zero's bin */
        ob->zeros = 0;
    }
    if (ob->T == 0) { /* only zeros so far */
        for (int64_t i = 0; i < n; i++) ob->zeros += x[i] == 0;
        return;
    }
    grow(ob, m);
    for (int64_t i = 0; i < n; i++)
        if (isfinite(x[i])) ob->h[bin_of(ob, x[i])]++;
}

/* |x| histogram: a[j] counts |x| in [j w, (j + 1) w). */
static void abs_hist(const gwr_q_observer *ob, double *a) {
    for (int j = 0; j < NB; j++) a[j] = (double)ob->h[NB + j] + (double)ob->h[NB - 1 - j];
}

/* Smallest k with a[0..k) holding at least frac of total (k in 1..n). */
static int cum_index(const double *a, int n, double total, double frac) {
    double c = 0, need = frac * total;
    for (int k = 0; k < n; k++) {
        c += a[k];
        if (c >= need) return k + 1;
    }
    return n;
}

static void percentile_range(const gwr_q_observer *ob, double *lo, double *hi) {
    double w = ob->T / NB, total = (double)ob->count, p = ob->pct / 100;
    if (ob->sym) {
        double a[NB];
        abs_hist(ob, a);
        double t = cum_index(a, NB, total, p) * w;
        *lo = -t, *hi = t;
        return;
    }
    double c[2 * NB];
    for (int i = 0; i < 2 * NB; i++) c[i] = (double)ob->h[i];
    double tail = (1 - p) / 2;
    /* lower: the first bin where the count below reaches the tail; its lower edge */
    int k = cum_index(c, 2 * NB, total, tail);
    if (tail <= 0) k = 1;
    while (k > 1 && c[k - 1] == 0) k--; /* a zero tail fraction: the first nonempty bin */
    *lo = -ob->T + (k - 1) * w;
    int u = cum_index(c, 2 * NB, total, 1 - tail);
    *hi = -ob->T + u * w;
}

/* KL(P || Q) of the first i bins of a (TensorRT's candidate at i). */
static double kl_at(const double *a, int i, double beyond, double *p, double *q) {
    for (int j = 0; j < i; j++) p[j] = a[j];
    p[i - 1] += beyond;
    for (int k = 0; k < QLEVELS; k++) {
        int b0 = (int)((int64_t)k * i / QLEVELS), b1 = (int)((int64_t)(k + 1) * i / QLEVELS);
        double sum = 0;
        int nz = 0;
        for (int j = b0; j < b1; j++) sum += a[j], nz += a[j] > 0;
        for (int j = b0; j < b1; j++) q[j] = a[j] > 0 ? sum / nz : 0;
    }
    double ps = 0, qs = 0;
    for (int j = 0; j < i; j++) ps += p[j], qs += q[j];
    if (ps <= 0 || qs <= 0) return INFINITY;
    double kl = 0;
    for (int j = 0; j < i; j++) {
        if (p[j] <= 0) continue;
        double pj = p[j] / ps, qj = q[j] / qs;
        /* Q empty where P is not (the outliers' bin): smoothed, as the
         * published method does, by a small floor */
        if (qj <= 0) qj = 1e-4 / i;
        kl += pj * log(pj / qj);
    }
    return kl;
}

static double entropy_threshold(const gwr_q_observer *ob) {
    double a[NB], p[NB], q[NB], w = ob->T / NB;
    abs_hist(ob, a);
    int last = NB; /* the last nonempty bin bounds the search */
    while (last > 1 && a[last - 1] == 0) last--;
    if (last <= QLEVELS) return last * w;
    double beyond = 0, best = INFINITY;
    for (int j = QLEVELS; j < NB; j++) beyond += a[j];
    int besti = last;
    for (int i = QLEVELS; i <= last; i++) {
        double kl = kl_at(a, i, beyond, p, q);
        if (kl < best) best = kl, besti = i;
        if (i < NB) beyond -= a[i];
    }
    return besti * w;
}

/* Squared error of quantize-dequantize of value c with (scale, zp) over
 * [qmin, qmax]. */
static double qdq_err(double c, double s, double zp, double qmin, double qmax) {
    double q = nearbyint(c / s) + zp;
    q = q < qmin ? qmin : q > qmax ? qmax : q;
    double d = (q - zp) * s - c;
    return d * d;
}

static double mse_threshold(const gwr_q_observer *ob) {
    double w = ob->T / NB, m = fmax(fabs(ob->mn), fabs(ob->mx));
    double best = INFINITY, bestt = m;
    for (int j = 1; j <= NB; j++) {
        double t = j * w;
        int done = t >= m;
        if (done) t = m;
        double err = 0;
        if (ob->sym) {
            double s = t / 127;
            for (int i = 0; i < 2 * NB; i++)
                if (ob->h[i]) err += (double)ob->h[i] * qdq_err(-ob->T + (i + 0.5) * w, s, 0, -127, 127);
        } else {
            float s;
            int zp;
            gwr_q_act_params(fmax(ob->mn, -t), fmin(ob->mx, t), 0, &s, &zp);
            for (int i = 0; i < 2 * NB; i++)
                if (ob->h[i]) err += (double)ob->h[i] * qdq_err(-ob->T + (i + 0.5) * w, s, zp, 0, 255);
        }
        if (err < best) best = err, bestt = t;
        if (done) break;
    }
    return bestt;
}

int gwr_q_observer_range(const gwr_q_observer *ob, double *lo, double *hi) {
    *lo = *hi = 0;
    if (!ob->count) return 0;
    double mn = ob->mn, mx = ob->mx;
    if (ob->method != GWR_CALIB_MINMAX && ob->T > 0) {
        double t;
        switch (ob->method) {
        case GWR_CALIB_PERCENTILE: {
            double l, h;
            percentile_range(ob, &l, &h);
            mn = fmax(mn, l), mx = fmin(mx, h);
            break;
        }
        case GWR_CALIB_ENTROPY:
            t = entropy_threshold(ob);
            mn = fmax(mn, -t), mx = fmin(mx, t);
            break;
        default:
            t = mse_threshold(ob);
            mn = fmax(mn, -t), mx = fmin(mx, t);
            break;
        }
    }
    if (ob->sym) {
        double a = fmax(fabs(mn), fabs(mx));
        mn = -a, mx = a;
    }
    *lo = fmin(mn, 0), *hi = fmax(mx, 0);
    return 1;
}

void gwr_q_act_params(double lo, double hi, int int8, float *scale, int *zero_point) {
    lo = fmin(lo, 0), hi = fmax(hi, 0);
    if (int8) {
        double a = fmax(-lo, hi);
        *scale = a > 0 ? (float)(a / 127) : 1.0f;
        *zero_point = 0;
        return;
    }
    double s = (hi - lo) / 255;
    if (!(s > 0)) {
        *scale = 1.0f, *zero_point = 0;
        return;
    }
    *scale = (float)s;
    double zp = nearbyint(-lo / (double)*scale);
    *zero_point = zp < 0 ? 0 : zp > 255 ? 255 : (int)zp;
}
