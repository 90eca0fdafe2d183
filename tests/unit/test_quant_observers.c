/* test_quant_observers.c - the activation range observers of static
 * quantization (src/quant/observers.c) on synthetic data whose answers
 * are worked out by hand here: exact extremes, percentiles of evenly
 * spaced values, a clipped outlier, the histogram's growth, and the MSE
 * threshold against a brute-force search over the exact values. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "quant/quant_internal.h"

#define NEAR(a, lo, hi) ((a) >= (lo) && (a) <= (hi))

static gwr_q_observer *feed(gwr_calib_method m, double pct, int sym, const float *x, int64_t n) {
    gwr_q_observer *ob = gwr_q_observer_new(m, pct, sym);
    if (ob) gwr_q_observer_add(ob, x, n);
    return ob;
}

/* n evenly spaced values over [a, b): a + (b - a) (i + 0.5) / n */
static float *grid(int64_t n, double a, double b, int extra) {
    float *x = malloc((size_t)(n + extra) * sizeof *x);
    for (int64_t i = 0; x && i < n; i++) x[i] = (float)(a + (b - a) * ((double)i + 0.5) / (double)n);
    return x;
}

TEST(minmax_is_exact_over_samples) {
    float a[] = {-3.0f, 1.5f, 0.25f}, b[] = {2.0f, -1.0f, NAN, INFINITY};
    gwr_q_observer *ob = gwr_q_observer_new(GWR_CALIB_MINMAX, 0, 0);
    if (!CHECK(ob)) return;
    double lo, hi;
    CHECK_EQ_INT(gwr_q_observer_range(ob, &lo, &hi), 0); /* nothing fed */
    gwr_q_observer_add(ob, a, 3);
    gwr_q_observer_add(ob, b, 4); /* NaN and inf skipped */
    CHECK(gwr_q_observer_range(ob, &lo, &hi));
    CHECK(lo == -3.0 && hi == 2.0);
    gwr_q_observer_free(ob);
    /* positive data: zero stays in the range; symmetric: [-max|x|, max|x|] */
    float c[] = {1.0f, 5.0f};
    ob = feed(GWR_CALIB_MINMAX, 0, 0, c, 2);
    gwr_q_observer_range(ob, &lo, &hi);
    CHECK(lo == 0.0 && hi == 5.0);
    gwr_q_observer_free(ob);
    ob = feed(GWR_CALIB_MINMAX, 0, 1, a, 3);
    gwr_q_observer_range(ob, &lo, &hi);
    CHECK(lo == -3.0 && hi == 3.0);
    gwr_q_observer_free(ob);
}

/* 100000 values evenly over [-1, 1) and one at 100: the 99.9th percentile
 * of |x| is 0.999; the histogram's bins are 100 / 2048 wide, and the
 * percentile is read at a bin's outer edge: [0.999, 0.999 + 0.049]. */
TEST(percentile_clips_an_outlier) {
    int64_t n = 100000;
    float *x = grid(n, -1, 1, 1);
    if (!CHECK(x)) return;
    x[n] = 100.0f;
    double lo, hi;
    gwr_q_observer *ob = feed(GWR_CALIB_PERCENTILE, 99.9, 1, x, n + 1);
    gwr_q_observer_range(ob, &lo, &hi);
    CHECK(NEAR(hi, 0.999, 0.999 + 100.0 / 2048) && lo == -hi);
    gwr_q_observer_free(ob);
    /* asymmetric: both tails, 0.05% each; values over [0, 2) and one at 100:
     * low 0.001 (zero kept in the range: 0), high 1.999 */
    free(x);
    x = grid(n, 0, 2, 1);
    x[n] = 100.0f;
    ob = feed(GWR_CALIB_PERCENTILE, 99.9, 0, x, n + 1);
    gwr_q_observer_range(ob, &lo, &hi);
    CHECK(lo == 0 && NEAR(hi, 1.999, 1.999 + 100.0 / 2048));
    gwr_q_observer_free(ob);
    /* 100: the extremes */
    ob = feed(GWR_CALIB_PERCENTILE, 100, 0, x, n + 1);
    gwr_q_observer_range(ob, &lo, &hi);
    CHECK(lo == 0 && hi == 100.0);
    gwr_q_observer_free(ob);
    free(x);
}

/* A second sample four times wider grows the histogram twice (pairs of
 * bins merged): 1000 values over [0, 1) then 1000 over [0, 4). The median
 * of |x|: 1000 min(t, 1) + 250 t = 1000 gives t = 0.8, read at the outer
 * edge of a bin 4 / 2048 wide. */
TEST(histogram_grows_without_losing_counts) {
    float *a = grid(1000, 0, 1, 0), *b = grid(1000, 0, 4, 0);
    gwr_q_observer *ob = gwr_q_observer_new(GWR_CALIB_PERCENTILE, 50, 1);
    if (!CHECK(a && b && ob)) return;
    gwr_q_observer_add(ob, a, 1000);
    gwr_q_observer_add(ob, b, 1000);
    double lo, hi;
    gwr_q_observer_range(ob, &lo, &hi);
    CHECK(NEAR(hi, 0.8, 0.8 + 4.0 / 2048 + 1e-9));
    gwr_q_observer_free(ob);
    /* zeros before any nonzero value are counted: 1000 zeros and 1000 values
     * over [0, 1): the median of |x| is the first bin's edge, 1 / 2048 */
    float z[1000] = {0};
    ob = gwr_q_observer_new(GWR_CALIB_PERCENTILE, 50, 1);
    gwr_q_observer_add(ob, z, 1000);
    gwr_q_observer_add(ob, a, 1000);
    gwr_q_observer_range(ob, &lo, &hi);
    CHECK(hi <= 1.0 / 2048 + 1e-9 && hi > 0);
    gwr_q_observer_free(ob);
    free(a), free(b);
}

/* Entropy (KL threshold over 128 levels): uniform data keeps its whole
 * range (clipping a flat histogram piles its tail into the last bin);
 * one outlier at 100 over a bulk in [-1, 1] is clipped to at most 256 bins
 * (12.5) and the bulk kept (at least 1). */
TEST(entropy_keeps_uniform_clips_outlier) {
    int64_t n = 100000;
    float *x = grid(n, -1, 1, 1);
    if (!CHECK(x)) return;
    double lo, hi;
    gwr_q_observer *ob = feed(GWR_CALIB_ENTROPY, 0, 1, x, n);
    gwr_q_observer_range(ob, &lo, &hi);
    CHECK(NEAR(hi, 0.95, 1.0));
    gwr_q_observer_free(ob);
    x[n] = 100.0f;
    ob = feed(GWR_CALIB_ENTROPY, 0, 1, x, n + 1);
    gwr_q_observer_range(ob, &lo, &hi);
    CHECK(NEAR(hi, 1.0, 12.5) && lo == -hi);
    gwr_q_observer_free(ob);
    /* asymmetric: a ReLU-like bulk in [0, 1] keeps lo = 0 */
    float *y = grid(n, 0, 1, 1);
    y[n] = 100.0f;
    ob = feed(GWR_CALIB_ENTROPY, 0, 0, y, n + 1);
    gwr_q_observer_range(ob, &lo, &hi);
    CHECK(lo == 0 && NEAR(hi, 1.0, 12.5));
    gwr_q_observer_free(ob);
    free(x), free(y);
}

/* Exact squared error of int8 symmetric quantize-dequantize at threshold t. */
static double sym_err(const float *x, int64_t n, double t) {
    double s = t / 127, e = 0;
    for (int64_t i = 0; i < n; i++) {
        double q = nearbyint(x[i] / s);
        q = q < -127 ? -127 : q > 127 ? 127 : q;
        e += (q * s - x[i]) * (q * s - x[i]);
    }
    return e;
}

/* MSE on Laplace-distributed values (x = -sign(u) ln(1 - 2|u|) over an
 * even grid of u): its threshold is within 2% of the least error found by
 * brute force over 2000 thresholds on the exact values, and below the
 * largest |x| (the tail is clipped a little: 8 bits keep most of it). */
TEST(mse_threshold_near_brute_force) {
    int64_t n = 20000;
    float *x = malloc((size_t)n * sizeof *x);
    if (!CHECK(x)) return;
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double u = -0.5 + ((double)i + 0.5) / (double)n;
        x[i] = (float)(-(u < 0 ? -1 : 1) * log(1 - 2 * fabs(u)));
        m = fmax(m, fabs(x[i]));
    }
    double best = INFINITY;
    for (int k = 1; k <= 2000; k++) best = fmin(best, sym_err(x, n, m * k / 2000));
    double lo, hi;
    gwr_q_observer *ob = feed(GWR_CALIB_MSE, 0, 1, x, n);
    gwr_q_observer_range(ob, &lo, &hi);
    double e = sym_err(x, n, hi), full = sym_err(x, n, m);
    CHECK(hi < m); /* brute force (numpy, same grid): 9.42 of 9.90 */
    CHECK(e <= 1.02 * best);
    CHECK(e < full);
    gwr_q_observer_free(ob);
    free(x);
}

/* uint8: [-1, 3] -> scale 4/255, zero point round(1 / (4/255)) = 64;
 * int8: scale 3/127, zero point 0; an empty range: scale 1. */
TEST(activation_params) {
    float s;
    int zp;
    gwr_q_act_params(-1, 3, 0, &s, &zp);
    CHECK(s == (float)(4.0 / 255) && zp == 64);
    gwr_q_act_params(-1, 3, 1, &s, &zp);
    CHECK(s == (float)(3.0 / 127) && zp == 0);
    gwr_q_act_params(0, 0, 0, &s, &zp);
    CHECK(s == 1.0f && zp == 0);
    gwr_q_act_params(0.5, 2, 0, &s, &zp); /* zero joins the range */
    CHECK(s == (float)(2.0 / 255) && zp == 0);
}

int main(void) {
    RUN(minmax_is_exact_over_samples);
    RUN(percentile_clips_an_outlier);
    RUN(histogram_grows_without_losing_counts);
    RUN(entropy_keeps_uniform_clips_outlier);
    RUN(mse_threshold_near_brute_force);
    RUN(activation_params);
    return check_report();
}
