/* test_exec_signal.c - src/exec/kernels/signal.c: DFT, STFT,
 * MelWeightMatrix. A hand-computed 4-point DFT and its inverse, onesided
 * shapes, the inverse onesided DFT (IRFFT), long transforms of every path
 * (radix-2, direct, Bluestein) against the direct sum computed here, and
 * every bad input as a named error; ONNX's test data covers the common
 * cases. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "exec_run.h"
#include "gwr/gwr.h"

static const double PI = 3.14159265358979323846;

/* One input of the op under test: a constant, or absent (data NULL). */
typedef struct in_spec {
    gwr_dtype dtype;
    int rank;
    int64_t dims[4];
    const void *data;
} in_spec;

/* An integer attribute. */
typedef struct attr {
    const char *name;
    int64_t v;
} attr;

/* Builds `op` over constant inputs (opset 0: none imported), runs it,
 * returns output 0 (or NULL with the message in msg). */
static gwr_value *run_op(const char *op, int64_t opset, int n, const in_spec *in, int na, const attr *at, char *msg,
                         size_t size) {
    gwr_network *net = gwr_network_new("m");
    if (opset) gwr_network_set_opset(net, "", opset);
    gwr_tensor *t[6];
    for (int i = 0; i < n; i++) t[i] = in[i].data ? gwr_constant(net, in[i].dtype, in[i].rank, in[i].dims, in[i].data) : NULL;
    gwr_layer *l = gwr_network_add_layer(net, op, "", "L", n, t, 1, NULL);
    for (int i = 0; i < na; i++) gwr_layer_set_int(l, at[i].name, at[i].v);
    return run_layer_output0(net, l, msg, size);
}

static int check_shape(const gwr_value *v, int rank, const int64_t *dims) {
    if (!CHECK_EQ_INT(gwr_value_rank(v), rank)) return 0;
    int ok = 1;
    for (int i = 0; i < rank; i++) ok &= CHECK_EQ_INT(gwr_value_dims(v)[i], dims[i]);
    return ok;
}

static int near(double a, double b, double tol) { return fabs(a - b) <= tol * (1 + fabs(b)); }

/* ---- DFT ----------------------------------------------------------------- */

/* x = [1, 2, 3, 4] (real): X = [10, -2+2i, -2, -2-2i]. */
static const float x4[4] = {1, 2, 3, 4};
static const double X4[8] = {10, 0, -2, 2, -2, 0, -2, -2};

TEST(dft_hand_computed) {
    char msg[512];
    in_spec in[1] = {{GWR_FLOAT32, 3, {1, 4, 1}, x4}};
    gwr_value *v = run_op("DFT", 17, 1, in, 0, NULL, msg, sizeof msg);
    if (!CHECK(v)) {
        fprintf(stderr, "  %s\n", msg);
        return;
    }
    static const int64_t want[3] = {1, 4, 2};
    if (check_shape(v, 3, want))
        for (int i = 0; i < 8; i++) CHECK(near(gwr_value_get_f64(v, i), X4[i], 1e-6));
    CHECK_EQ_INT(gwr_value_dtype(v), GWR_FLOAT32);
    gwr_value_release(v);

    /* onesided: the first 4/2 + 1 bins */
    attr one[1] = {{"onesided", 1}};
    v = run_op("DFT", 17, 1, in, 1, one, msg, sizeof msg);
    if (CHECK(v)) {
        static const int64_t w3[3] = {1, 3, 2};
        if (check_shape(v, 3, w3))
            for (int i = 0; i < 6; i++) CHECK(near(gwr_value_get_f64(v, i), X4[i], 1e-6));
        gwr_value_release(v);
    }

    /* dft_length 6 zero-pads: X[1] = sum x[t] e^{-i pi t / 3} */
    static const int64_t six = 6;
    in_spec pad[2] = {in[0], {GWR_INT64, 0, {0}, &six}};
    v = run_op("DFT", 17, 2, pad, 0, NULL, msg, sizeof msg);
    if (CHECK(v)) {
        static const int64_t w6[3] = {1, 6, 2};
        double re = 0, im = 0;
        for (int t = 0; t < 4; t++) re += x4[t] * cos(-PI * t / 3), im += x4[t] * sin(-PI * t / 3);
        if (check_shape(v, 3, w6)) {
            CHECK(near(gwr_value_get_f64(v, 2), re, 1e-6));
            CHECK(near(gwr_value_get_f64(v, 3), im, 1e-6));
        }
        gwr_value_release(v);
    }
    /* dft_length 2 truncates: [1 + 2, 1 - 2] */
    static const int32_t two = 2;
    in_spec cut[2] = {in[0], {GWR_INT32, 1, {1}, &two}};
    v = run_op("DFT", 17, 2, cut, 0, NULL, msg, sizeof msg);
    if (CHECK(v)) {
        CHECK_EQ_INT(gwr_value_dims(v)[1], 2);
        CHECK(near(gwr_value_get_f64(v, 0), 3, 1e-6));
        CHECK(near(gwr_value_get_f64(v, 2), -1, 1e-6));
        gwr_value_release(v);
    }
}

/* The inverse of X4 (complex, double) is x4 with zero imaginary parts;
 * IRFFT of its one-sided half gives x4 as a real signal. */
TEST(dft_inverse_round_trip) {
    char msg[512];
    in_spec in[1] = {{GWR_FLOAT64, 3, {1, 4, 2}, X4}};
    attr inv[1] = {{"inverse", 1}};
    gwr_value *v = run_op("DFT", 17, 1, in, 1, inv, msg, sizeof msg);
    if (!CHECK(v)) {
        fprintf(stderr, "  %s\n", msg);
        return;
    }
    CHECK_EQ_INT(gwr_value_dtype(v), GWR_FLOAT64);
    for (int t = 0; t < 4; t++) {
        CHECK(near(gwr_value_get_f64(v, 2 * t), x4[t], 1e-12));
        CHECK(fabs(gwr_value_get_f64(v, 2 * t + 1)) < 1e-12);
    }
    gwr_value_release(v);

    /* IRFFT: 3 bins -> 2 * (3 - 1) = 4 real points, last dim 1 */
    in_spec half[1] = {{GWR_FLOAT64, 3, {1, 3, 2}, X4}};
    attr irfft[2] = {{"inverse", 1}, {"onesided", 1}};
    v = run_op("DFT", 17, 1, half, 2, irfft, msg, sizeof msg);
    if (CHECK(v)) {
        static const int64_t want[3] = {1, 4, 1};
        if (check_shape(v, 3, want))
            for (int t = 0; t < 4; t++) CHECK(near(gwr_value_get_f64(v, t), x4[t], 1e-12));
        gwr_value_release(v);
    } else {
        fprintf(stderr, "  %s\n", msg);
    }
}

/* Axis 2 of [2, 3, 4, 1] in float16, and the same axis given as input 2
 * (opset 20): each row of 4 along the last signal dim is transformed. */
TEST(dft_axis_and_half) {
    char msg[512];
    uint16_t h[24];
    float xf[24];
    for (int i = 0; i < 24; i++) xf[i] = (float)(i % 5) - 1.5f;
    /* float16 of small halves is exact: build it through a value */
    int64_t d[4] = {2, 3, 4, 1};
    gwr_value *hv = gwr_value_new(GWR_FLOAT16, 4, d);
    for (int i = 0; i < 24; i++) gwr_value_set_f64(hv, i, xf[i]);
    memcpy(h, gwr_value_cdata(hv), sizeof h);
    gwr_value_release(hv);
    in_spec in[1] = {{GWR_FLOAT16, 4, {2, 3, 4, 1}, h}};
    attr ax[1] = {{"axis", 2}};
    gwr_value *v = run_op("DFT", 17, 1, in, 1, ax, msg, sizeof msg);
    if (!CHECK(v)) {
        fprintf(stderr, "  %s\n", msg);
        return;
    }
    static const int64_t want[4] = {2, 3, 4, 2};
    if (check_shape(v, 4, want)) {
        CHECK_EQ_INT(gwr_value_dtype(v), GWR_FLOAT16);
        for (int row = 0; row < 6; row++)
            for (int q = 0; q < 4; q++) {
                double re = 0, im = 0;
                for (int t = 0; t < 4; t++)
                    re += xf[row * 4 + t] * cos(-2 * PI * q * t / 4), im += xf[row * 4 + t] * sin(-2 * PI * q * t / 4);
                CHECK(near(gwr_value_get_f64(v, (row * 4 + q) * 2), re, 1e-3));
                CHECK(near(gwr_value_get_f64(v, (row * 4 + q) * 2 + 1), im, 1e-3));
            }
    }
    /* opset 20: axis -2 (the default) is the same axis */
    gwr_value *w = run_op("DFT", 20, 1, in, 0, NULL, msg, sizeof msg);
    if (CHECK(w)) {
        for (int i = 0; i < 48; i++) CHECK(gwr_value_get_f64(w, i) == gwr_value_get_f64(v, i));
        gwr_value_release(w);
    }
    static const int64_t one = 1;
    in_spec in20[3] = {in[0], {GWR_INT64, 0, {0}, NULL}, {GWR_INT64, 0, {0}, &one}};
    w = run_op("DFT", 20, 3, in20, 0, NULL, msg, sizeof msg); /* axis 1: columns of 3 */
    if (CHECK(w)) {
        static const int64_t w1[4] = {2, 3, 4, 2};
        check_shape(w, 4, w1);
        double re = xf[0] + xf[4] + xf[8]; /* bin 0 of the first column */
        CHECK(near(gwr_value_get_f64(w, 0), re, 1e-3));
        gwr_value_release(w);
    }
    gwr_value_release(v);
}

/* Lengths for each path: 1024 (radix-2), 100 (direct), 1000 and 257
 * (Bluestein), complex input, forward and inverse, against the direct sum. */
TEST(dft_long_lengths) {
    static const int64_t lens[4] = {1024, 100, 1000, 257};
    char msg[512];
    for (int li = 0; li < 4; li++) {
        int64_t n = lens[li];
        double *x = malloc((size_t)n * 2 * sizeof *x);
        if (!CHECK(x)) return;
        for (int64_t t = 0; t < 2 * n; t++) x[t] = sin(0.37 * (double)t * (double)t) + 0.25 * (double)(t % 7);
        for (int inv = 0; inv < 2; inv++) {
            in_spec in[1] = {{GWR_FLOAT64, 3, {1, n, 2}, x}};
            attr a[1] = {{"inverse", inv}};
            gwr_value *v = run_op("DFT", 17, 1, in, 1, a, msg, sizeof msg);
            if (!CHECK(v)) {
                fprintf(stderr, "  n %lld: %s\n", (long long)n, msg);
                continue;
            }
            double worst = 0, sign = inv ? 1 : -1, scale = inv ? 1.0 / (double)n : 1;
            for (int64_t q = 0; q < n; q++) {
                double re = 0, im = 0;
                for (int64_t t = 0; t < n; t++) {
                    double ang = sign * 2 * PI * (double)((q * t) % n) / (double)n;
                    re += x[2 * t] * cos(ang) - x[2 * t + 1] * sin(ang);
                    im += x[2 * t] * sin(ang) + x[2 * t + 1] * cos(ang);
                }
                worst = fmax(worst, fabs(gwr_value_get_f64(v, 2 * q) - re * scale));
                worst = fmax(worst, fabs(gwr_value_get_f64(v, 2 * q + 1) - im * scale));
            }
            if (!CHECK(worst < 1e-9)) fprintf(stderr, "  n %lld inverse %d: error %g\n", (long long)n, inv, worst);
            gwr_value_release(v);
        }
        free(x);
    }
}

TEST(dft_errors_named) {
    char msg[512];
    static const float c3[6] = {0};
    static const int32_t i4[4] = {0};
    static const int64_t zero = 0, big = (int64_t)1 << 40;
    in_spec bad_last[1] = {{GWR_FLOAT32, 3, {1, 2, 3}, c3}};
    CHECK(!run_op("DFT", 17, 1, bad_last, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "layer 'L'");
    CHECK_CONTAINS(msg, "last dim of the input must be 1 (real) or 2 (complex), not 3");

    in_spec ints[1] = {{GWR_INT32, 3, {1, 4, 1}, i4}};
    CHECK(!run_op("DFT", 17, 1, ints, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "input must be float16, float, double or bfloat16, not int32");

    in_spec real[1] = {{GWR_FLOAT32, 3, {1, 4, 1}, x4}};
    attr ax[1] = {{"axis", 2}};
    CHECK(!run_op("DFT", 17, 1, real, 1, ax, msg, sizeof msg));
    CHECK_CONTAINS(msg, "axis 2 is out of range for an input of rank 3");
    attr axn[1] = {{"axis", -1}};
    CHECK(!run_op("DFT", 17, 1, real, 1, axn, msg, sizeof msg));
    CHECK_CONTAINS(msg, "axis -1 is out of range");
    CHECK(!run_op("DFT", 20, 1, real, 1, ax, msg, sizeof msg));
    CHECK_CONTAINS(msg, "axis is an input from opset 20 on");
    static const int64_t axis1 = 1;
    in_spec ax_in[3] = {real[0], {GWR_INT64, 0, {0}, NULL}, {GWR_INT64, 0, {0}, &axis1}};
    CHECK(!run_op("DFT", 17, 3, ax_in, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "axis is an input only from opset 20 (the model imports opset 17)");
    CHECK(!run_op("DFT", 0, 3, ax_in, 1, ax, msg, sizeof msg));
    CHECK_CONTAINS(msg, "axis is given both as an attribute and as input 2");

    attr inv2[1] = {{"inverse", 2}};
    CHECK(!run_op("DFT", 17, 1, real, 1, inv2, msg, sizeof msg));
    CHECK_CONTAINS(msg, "inverse must be 0 or 1, not 2");

    static const float cplx[8] = {0};
    in_spec complex_in[1] = {{GWR_FLOAT32, 3, {1, 4, 2}, cplx}};
    attr one[1] = {{"onesided", 1}};
    CHECK(!run_op("DFT", 17, 1, complex_in, 1, one, msg, sizeof msg));
    CHECK_CONTAINS(msg, "onesided needs a real input");
    attr irfft[2] = {{"inverse", 1}, {"onesided", 1}};
    CHECK(!run_op("DFT", 17, 1, real, 2, irfft, msg, sizeof msg));
    CHECK_CONTAINS(msg, "IRFFT) needs a complex input");

    in_spec zlen[2] = {real[0], {GWR_INT64, 0, {0}, &zero}};
    CHECK(!run_op("DFT", 17, 2, zlen, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "dft_length must be positive, not 0");
    in_spec blen[2] = {real[0], {GWR_INT64, 0, {0}, &big}};
    CHECK(!run_op("DFT", 17, 2, blen, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "dft_length 1099511627776 is over the limit");
    in_spec flen[2] = {real[0], {GWR_FLOAT32, 0, {0}, x4}};
    CHECK(!run_op("DFT", 17, 2, flen, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "dft_length (input 1) must be an int32 or int64 scalar");
    in_spec two_vals[2] = {real[0], {GWR_INT32, 1, {2}, i4}};
    CHECK(!run_op("DFT", 17, 2, two_vals, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "dft_length (input 1) must be an int32 or int64 scalar");

    /* an empty signal axis gives no length to infer */
    in_spec empty[1] = {{GWR_FLOAT32, 3, {1, 0, 1}, x4}};
    CHECK(!run_op("DFT", 17, 1, empty, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "axis 1 has 0 points");
    in_spec rank1[1] = {{GWR_FLOAT32, 1, {1}, x4}};
    CHECK(!run_op("DFT", 17, 1, rank1, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "not rank 1");
}

/* ---- STFT ---------------------------------------------------------------- */

/* signal 0..9, frames of 4 every 3: 3 frames; onesided 3 bins. */
TEST(stft_frames_and_window) {
    char msg[512];
    float sig[10];
    for (int i = 0; i < 10; i++) sig[i] = (float)i;
    static const int64_t step = 3, flen = 4;
    static const float win[4] = {0.5f, 1, 1, 0.5f};
    in_spec in[4] = {{GWR_FLOAT32, 3, {1, 10, 1}, sig},
                     {GWR_INT64, 0, {0}, &step},
                     {GWR_FLOAT32, 1, {4}, win},
                     {GWR_INT64, 0, {0}, &flen}};
    gwr_value *v = run_op("STFT", 17, 4, in, 0, NULL, msg, sizeof msg);
    if (!CHECK(v)) {
        fprintf(stderr, "  %s\n", msg);
        return;
    }
    static const int64_t want[4] = {1, 3, 3, 2};
    if (check_shape(v, 4, want))
        for (int f = 0; f < 3; f++)
            for (int q = 0; q < 3; q++) {
                double re = 0, im = 0;
                for (int t = 0; t < 4; t++) {
                    double s = sig[3 * f + t] * win[t];
                    re += s * cos(-2 * PI * q * t / 4), im += s * sin(-2 * PI * q * t / 4);
                }
                CHECK(near(gwr_value_get_f64(v, (f * 3 + q) * 2), re, 1e-6));
                CHECK(near(gwr_value_get_f64(v, (f * 3 + q) * 2 + 1), im, 1e-6));
            }
    gwr_value_release(v);

    /* two-sided, no window: frame 1 is [3, 4, 5, 6], bin 0 = 18 */
    in_spec nowin[4] = {in[0], in[1], {GWR_FLOAT32, 1, {4}, NULL}, in[3]};
    attr two[1] = {{"onesided", 0}};
    v = run_op("STFT", 17, 4, nowin, 1, two, msg, sizeof msg);
    if (CHECK(v)) {
        static const int64_t w2[4] = {1, 3, 4, 2};
        if (check_shape(v, 4, w2)) CHECK(near(gwr_value_get_f64(v, (1 * 4 + 0) * 2), 18, 1e-6));
        gwr_value_release(v);
    }
}

TEST(stft_errors_named) {
    char msg[512];
    static const float sig[10] = {0};
    static const double dwin[4] = {1, 1, 1, 1};
    static const float win5[5] = {1, 1, 1, 1, 1};
    static const int64_t step = 2, zero = 0, neg = -1, l11 = 11, l4 = 4;
    in_spec base[4] = {{GWR_FLOAT32, 3, {1, 10, 1}, sig}, {GWR_INT64, 0, {0}, &step}, {0}, {GWR_INT64, 0, {0}, &l4}};
    in_spec s[4];

    memcpy(s, base, sizeof s), s[3].data = &l11;
    CHECK(!run_op("STFT", 17, 4, s, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "layer 'L'");
    CHECK_CONTAINS(msg, "frame_length 11 is longer than the signal (10 samples)");
    memcpy(s, base, sizeof s), s[1].data = &zero;
    CHECK(!run_op("STFT", 17, 4, s, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "frame_step must be positive, not 0");
    memcpy(s, base, sizeof s), s[1].data = &neg;
    CHECK(!run_op("STFT", 17, 4, s, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "frame_step must be positive, not -1");
    memcpy(s, base, sizeof s), s[3].data = &neg;
    CHECK(!run_op("STFT", 17, 4, s, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "frame_length must be positive, not -1");
    memcpy(s, base, sizeof s), s[2] = (in_spec){GWR_FLOAT32, 1, {5}, win5};
    CHECK(!run_op("STFT", 17, 4, s, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "the window has 5 points but frame_length is 4");
    memcpy(s, base, sizeof s), s[2] = (in_spec){GWR_FLOAT64, 1, {4}, dwin};
    CHECK(!run_op("STFT", 17, 4, s, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "window must be float32 like the signal, not float64");
    memcpy(s, base, sizeof s), s[0].dims[2] = 3, s[0].dims[1] = 2;
    CHECK(!run_op("STFT", 17, 4, s, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "signal must be [batch, length, 1 or 2]");
    memcpy(s, base, sizeof s), s[0].dims[2] = 2, s[0].dims[1] = 5;
    CHECK(!run_op("STFT", 17, 4, s, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "onesided needs a real signal");
    memcpy(s, base, sizeof s);
    CHECK(!run_op("STFT", 17, 1, s, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "frame_step (input 1) is missing");
}

/* ---- MelWeightMatrix ----------------------------------------------------- */

/* 2 bands, dft 8 (5 bins), rate 8, 0..4 Hz. Corners at mel points
 * i * mel(4) / 4, i < 4: in Hz 0, ~0.99966, ~1.99955, ~2.99966; bins
 * floor(9 * hz / 8) = 0, 1, 2, 3. Triangles [0,1,2] and [1,2,3]. */
TEST(mel_hand_computed) {
    char msg[512];
    static const int64_t nmel = 2, dft = 8, rate = 8;
    static const float lo = 0, hi = 4;
    in_spec in[5] = {{GWR_INT64, 0, {0}, &nmel}, {GWR_INT64, 0, {0}, &dft}, {GWR_INT64, 0, {0}, &rate},
                     {GWR_FLOAT32, 0, {0}, &lo}, {GWR_FLOAT32, 0, {0}, &hi}};
    attr dt[1] = {{"output_datatype", GWR_FLOAT64}};
    gwr_value *v = run_op("MelWeightMatrix", 17, 5, in, 1, dt, msg, sizeof msg);
    if (!CHECK(v)) {
        fprintf(stderr, "  %s\n", msg);
        return;
    }
    static const int64_t want[2] = {5, 2};
    static const double w[10] = {0, 0, 1, 0, 0, 1, 0, 0, 0, 0};
    if (check_shape(v, 2, want))
        for (int i = 0; i < 10; i++) CHECK(gwr_value_get_f64(v, i) == w[i]);
    CHECK_EQ_INT(gwr_value_dtype(v), GWR_FLOAT64);
    gwr_value_release(v);

    /* an integer output type */
    attr it[1] = {{"output_datatype", GWR_INT32}};
    v = run_op("MelWeightMatrix", 17, 5, in, 1, it, msg, sizeof msg);
    if (CHECK(v)) {
        CHECK_EQ_INT(gwr_value_dtype(v), GWR_INT32);
        CHECK_EQ_INT(gwr_value_get_i64(v, 2), 1);
        gwr_value_release(v);
    }
}

TEST(mel_errors_named) {
    char msg[512];
    static const int64_t nmel = 2, dft = 8, rate = 8, zero = 0;
    static const float lo = 0, hi = 4, neg = -1, over = 40;
    in_spec base[5] = {{GWR_INT64, 0, {0}, &nmel}, {GWR_INT64, 0, {0}, &dft}, {GWR_INT64, 0, {0}, &rate},
                       {GWR_FLOAT32, 0, {0}, &lo}, {GWR_FLOAT32, 0, {0}, &hi}};
    in_spec s[5];
    memcpy(s, base, sizeof s), s[4].data = &over;
    CHECK(!run_op("MelWeightMatrix", 17, 5, s, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "layer 'L'");
    CHECK_CONTAINS(msg, "upper_edge_hertz 40 reaches past the 5 bins");
    memcpy(s, base, sizeof s), s[3].data = &neg;
    CHECK(!run_op("MelWeightMatrix", 17, 5, s, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "lower_edge_hertz -1 is negative");
    memcpy(s, base, sizeof s), s[3].data = &over;
    CHECK(!run_op("MelWeightMatrix", 17, 5, s, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "lower_edge_hertz 40 is above upper_edge_hertz 4");
    memcpy(s, base, sizeof s), s[0].data = &zero;
    CHECK(!run_op("MelWeightMatrix", 17, 5, s, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "num_mel_bins 0 is out of range");
    memcpy(s, base, sizeof s), s[2].data = &zero;
    CHECK(!run_op("MelWeightMatrix", 17, 5, s, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "sample_rate must be positive, not 0");
    memcpy(s, base, sizeof s), s[1].data = &zero;
    CHECK(!run_op("MelWeightMatrix", 17, 5, s, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "dft_length 0 is out of range");
    memcpy(s, base, sizeof s), s[3] = (in_spec){GWR_INT64, 0, {0}, &zero};
    CHECK(!run_op("MelWeightMatrix", 17, 5, s, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "lower_edge_hertz (input 3) must be a float scalar");
    attr bad[1] = {{"output_datatype", GWR_STRING}};
    CHECK(!run_op("MelWeightMatrix", 17, 5, base, 1, bad, msg, sizeof msg));
    CHECK_CONTAINS(msg, "output_datatype 8 is not an integer or float type");
    CHECK(!run_op("MelWeightMatrix", 17, 4, base, 0, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "upper_edge_hertz (input 4) is missing");
}

int main(void) {
    RUN(dft_hand_computed);
    RUN(dft_inverse_round_trip);
    RUN(dft_axis_and_half);
    RUN(dft_long_lengths);
    RUN(dft_errors_named);
    RUN(stft_frames_and_window);
    RUN(stft_errors_named);
    RUN(mel_hand_computed);
    RUN(mel_errors_named);
    return check_report();
}
