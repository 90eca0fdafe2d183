/* test_rows_f32.c - the float32 rows of LayerNormalization (norm.c: sum_f32,
 * sqdev_f32) and of the GELUs (contrib.c's gelu_rows_f32: BiasGelu,
 * com.microsoft Gelu, FastGelu, QuickGelu) against references in double
 * written here from the ONNX / contrib definitions. The kernels run their
 * clone for this CPU (AVX-512 or AVX2 with FMA where present); fast_gelu
 * itself is also called here, compiled as this file is (baseline x86-64,
 * no FMA): the portable path at the same bound. Row lengths around the
 * kernels' 16- and 32-float blocks; values over the whole float range,
 * with NaN, infinities, signed zeros and subnormals. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "exec/kernels/fast_math.h"
#include "gwr/gwr.h"

static float lcg(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f; /* [-1, 1) */
}

/* Runs one layer op (domain dom) over input x [R, n] and the constant
 * float inputs c[0..nc) of n values each; attribute fa = fv when fa. The
 * output's floats (the caller frees them), NULL on error. */
static float *run_rows(const char *op, const char *dom, const float *x, int64_t R, int64_t n, int nc,
                       const float *const *c, const char *fa, float fv) {
    gwr_network *net = gwr_network_new(op);
    gwr_network_set_opset(net, "", 17);
    gwr_network_set_opset(net, "com.microsoft", 1);
    gwr_dim dx[2] = {R, n};
    gwr_tensor *in[4] = {gwr_network_add_input(net, "x", GWR_FLOAT32, 2, dx)};
    for (int i = 0; i < nc; i++) in[1 + i] = gwr_constant(net, GWR_FLOAT32, 1, &n, c[i]);
    gwr_layer *l = gwr_network_add_layer(net, op, dom, "l", 1 + nc, in, 1, NULL);
    if (fa) gwr_layer_set_float(l, fa, fv);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    int64_t dv[2] = {R, n};
    gwr_value *v = gwr_value_new(GWR_FLOAT32, 2, dv), *y = NULL;
    if (v) memcpy(gwr_value_data(v), x, (size_t)(R * n) * sizeof *x);
    const char *names[1] = {"x"};
    gwr_session *s = gwr_session_new_raw(net, NULL);
    gwr_status st = s && v ? gwr_session_run(s, 1, names, &v, 1, NULL, &y) : GWR_ERR_INVALID_ARG;
    if (st) fprintf(stderr, "  %s: %s\n", op, s ? gwr_session_errmsg(s) : gwr_last_errmsg());
    float *out = !st && y ? malloc((size_t)(R * n) * sizeof *out) : NULL;
    if (out) memcpy(out, gwr_value_data(y), (size_t)(R * n) * sizeof *out);
    gwr_value_release(y);
    gwr_value_release(v);
    gwr_session_free(s);
    gwr_network_free(net);
    return out;
}

/* |y - ref| <= rtol |ref| + atol, NaN only against NaN; the worst ratio of
 * error to bound goes to *worst. */
static int close_to(float y, double ref, double rtol, double atol, double *worst) {
    if (isnan(ref) || isnan(y)) return isnan(ref) && isnan(y);
    if (isinf(ref) || isinf(y)) return (double)y == ref;
    double e = fabs((double)y - ref) / (rtol * fabs(ref) + atol);
    if (e > *worst) *worst = e;
    return e <= 1.0;
}

/* ---- LayerNormalization ----------------------------------------------------------- */

/* The rows normalized in double, two passes (ONNX's definition); each
 * row's standard deviation into sd. */
static void ln_ref(const float *x, int64_t R, int64_t n, const float *g, const float *b, double eps, double *y,
                   double *sd) {
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * n;
        double m = 0, v = 0;
        for (int64_t j = 0; j < n; j++) m += xr[j];
        m /= (double)n;
        for (int64_t j = 0; j < n; j++) v += (xr[j] - m) * (xr[j] - m);
        sd[r] = sqrt(v / (double)n + eps);
        for (int64_t j = 0; j < n; j++) y[r * n + j] = (xr[j] - m) / sd[r] * g[j] + b[j];
    }
}

/* Rows of values in [-1, 1) around `offset`, gamma in [0.5, 1.5). The
 * float mean is off by its rounding (half an ulp, |offset| eps / 2 or
 * less) and the reassociated sums' (32 lanes of n / 32 values of about
 * |offset|, then the lanes and the tail added up: about |offset| eps
 * sqrt(n) / 8), allowed 2 |offset| eps (1 + sqrt(n) / 8) together (the worst seen: 0.3 of that); every
 * deviation moves by that, the output by gamma / sd times it (sd the row's
 * standard deviation); plus 2e-6, a few ulps of outputs about 1 (the
 * variance's own rounding, relative). */
static void ln_case(int64_t R, int64_t n, float offset, int specials) {
    uint32_t s = (uint32_t)(R * 977 + n * 31 + (int64_t)offset);
    float *x = malloc((size_t)(R * n) * sizeof *x), *g = malloc((size_t)n * sizeof *g), *b = malloc((size_t)n * sizeof *b);
    double *ref = malloc((size_t)(R * n) * sizeof *ref), *sd = malloc((size_t)R * sizeof *sd);
    float *y = NULL;
    if (!CHECK(x && g && b && ref && sd)) goto out;
    for (int64_t i = 0; i < R * n; i++) x[i] = offset + lcg(&s);
    for (int64_t j = 0; j < n; j++) g[j] = 1.0f + 0.5f * lcg(&s), b[j] = lcg(&s);
    if (specials && R >= 3) x[n + n / 2] = NAN, x[2 * n] = INFINITY; /* rows 1 and 2: all NaN */
    ln_ref(x, R, n, g, b, 1e-5, ref, sd);
    const float *c[2] = {g, b};
    y = run_rows("LayerNormalization", "", x, R, n, 2, c, "epsilon", 1e-5f);
    double dm = 2.0 * fabs(offset) * FLT_EPSILON * (1.0 + sqrt((double)n) / 8.0), worst = 0;
    int bad = 0;
    for (int64_t i = 0; y && i < R * n; i++) bad += !close_to(y[i], ref[i], 2e-6, 2e-6 + 1.5 * dm / sd[i / n], &worst);
    if (!CHECK(y && !bad))
        fprintf(stderr, "  LayerNormalization [%lld, %lld] offset %g: %d beyond, worst %.3g of the bound\n", (long long)R,
                (long long)n, offset, bad, worst);
out:
    free(y), free(x), free(g), free(b), free(ref), free(sd);
}

TEST(layer_norm_rows) {
    static const int64_t ns[] = {1, 2, 15, 16, 17, 31, 32, 33, 47, 48, 63, 64, 65, 100, 768, 1031};
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
        ln_case(1, ns[i], 0.0f, 0);
        ln_case(3, ns[i], 0.0f, 1);
        ln_case(2, ns[i], 1000.0f, 0); /* mean far above the spread: one-pass sum of squares would cancel */
        ln_case(2, ns[i], -37.5f, 0);
    }
}

/* ---- the GELUs ------------------------------------------------------------------- */

enum { G_ERF, G_TANH, G_QUICK };

static double gelu_ref(int kind, double v, double alpha) {
    if (kind == G_ERF) return 0.5 * v * erfc(-v * 0.70710678118654752440); /* = 0.5 v (1 + erf(v / sqrt2)) */
    /* 0.5 v (1 + tanh u) written as v / (1 + e^-2u), the same function
     * without 1 + tanh u's cancellation in double for u < -19 */
    if (kind == G_TANH) return v / (1.0 + exp(-1.5957691216057308 * (v + 0.044715 * v * v * v)));
    return v / (1.0 + exp(-alpha * v));
}

/* Inputs over the float range: dense in [-16, 16], magnitudes 2^-149 to
 * 2^127 of both signs, zeros, infinities and NaN; n of them. */
static void sweep(float *x, int64_t n) {
    static const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN, 1e-45f, -1e-45f};
    uint32_t s = 7;
    for (int64_t i = 0; i < n; i++) {
        if (i < (int64_t)(sizeof sp / sizeof *sp)) x[i] = sp[i];
        else if (i % 3) x[i] = 16.0f * lcg(&s);
        else x[i] = ldexpf(lcg(&s), (int)(i % 277) - 149);
    }
}

/* Stated bounds, relative to the double formula plus 1e-37 absolute (the
 * tails below FLT_MIN go subnormal): Gelu through fast_gelu 2e-5 (the
 * Chebyshev fit's tail), 1e-6 within |x| < 1.3; FastGelu and QuickGelu,
 * v / (1 + e^-w) through fast_expf, w = 1.6 (v + 0.044715 v^3) or alpha v:
 * a few ulps of the quotient, 1e-6, plus where e^-w dominates the
 * denominator (w < 0) w's own rounding, 1e-6 |w|. */
#define GELU_ATOL 1e-37

static double gelu_rtol(int kind, float v, float alpha) {
    if (kind == G_ERF) return fabsf(v) < 1.3f ? 1e-6 : 2e-5;
    double w = kind == G_TANH ? 1.5957691216057308 * (v + 0.044715 * (double)v * v * v) : (double)alpha * v;
    return 1e-6 * (1.0 + (w < 0 ? -w : 0.0));
}

static void gelu_case(const char *op, int kind, int64_t R, int64_t n, int bias, float alpha) {
    float *x = malloc((size_t)(R * n) * sizeof *x), *b = malloc((size_t)n * sizeof *b);
    if (!CHECK(x && b)) goto out;
    sweep(x, R * n);
    uint32_t s = (uint32_t)n;
    for (int64_t j = 0; j < n; j++) b[j] = 2.0f * lcg(&s);
    const float *c[1] = {b};
    float *y = run_rows(op, "com.microsoft", x, R, n, bias, c, kind == G_QUICK ? "alpha" : NULL, alpha);
    double worst = 0;
    int bad = 0;
    for (int64_t i = 0; y && i < R * n; i++) {
        float v = bias ? x[i] + b[i % n] : x[i]; /* the float sum, as the unfused Add gives */
        bad += !close_to(y[i], gelu_ref(kind, v, alpha), gelu_rtol(kind, v, alpha), GELU_ATOL, &worst);
    }
    if (!CHECK(y && !bad))
        fprintf(stderr, "  %s [%lld, %lld]: %d beyond, worst %.3g of the bound\n", op, (long long)R, (long long)n, bad, worst);
    else if (n == 3072) fprintf(stderr, "%s (bias %d): worst %.3g of the bound\n", op, bias, worst);
    free(y);
out:
    free(x), free(b);
}

TEST(gelu_rows) {
    static const int64_t ns[] = {1, 3, 16, 63, 64, 65, 200, 3072};
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
        int64_t R = ns[i] < 64 ? 40 : 3;
        gelu_case("BiasGelu", G_ERF, R, ns[i], 1, 0);
        gelu_case("Gelu", G_ERF, R, ns[i], 0, 0);
        gelu_case("FastGelu", G_TANH, R, ns[i], 1, 0);
        gelu_case("FastGelu", G_TANH, R, ns[i], 0, 0);
        gelu_case("QuickGelu", G_QUICK, R, ns[i], 0, 1.702f);
        gelu_case("QuickGelu", G_QUICK, R, ns[i], 0, -0.5f);
    }
}

/* fast_gelu compiled here: the portable path (no clone, no FMA). */
TEST(fast_gelu_portable) {
    enum { N = 1 << 16 };
    float *x = malloc(N * sizeof *x);
    if (!CHECK(x)) return;
    sweep(x, N);
    double worst = 0;
    int bad = 0;
    for (int64_t i = 0; i < N; i++) bad += !close_to(fast_gelu(x[i]), gelu_ref(G_ERF, x[i], 0), gelu_rtol(G_ERF, x[i], 0), GELU_ATOL, &worst);
    for (float v = -16.0f; v <= 16.0f; v += 1.0f / 1024) /* every step of 2^-10 */
        bad += !close_to(fast_gelu(v), gelu_ref(G_ERF, v, 0), gelu_rtol(G_ERF, v, 0), GELU_ATOL, &worst);
    if (!CHECK(!bad)) fprintf(stderr, "  fast_gelu: %d beyond, worst %.3g of the bound\n", bad, worst);
    fprintf(stderr, "fast_gelu: worst %.3g of the bound\n", worst);
    free(x);
}

/* The kernels refuse what they cannot run: a bias of the wrong length. */
TEST(gelu_bad_bias) {
    float x[6] = {0}, b[2] = {0};
    const float *c[1] = {b};
    /* n = 3 but the bias has 2 values: run_rows declares the constant with n
     * values, so build it here by hand */
    gwr_network *net = gwr_network_new("bad");
    gwr_network_set_opset(net, "com.microsoft", 1);
    gwr_dim dx[2] = {2, 3};
    int64_t nb = 2;
    gwr_tensor *in[2] = {gwr_network_add_input(net, "x", GWR_FLOAT32, 2, dx), gwr_constant(net, GWR_FLOAT32, 1, &nb, c[0])};
    gwr_layer *l = gwr_network_add_layer(net, "BiasGelu", "com.microsoft", "l", 2, in, 1, NULL);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    int64_t dv[2] = {2, 3};
    gwr_value *v = gwr_value_new(GWR_FLOAT32, 2, dv), *y = NULL;
    if (v) memcpy(gwr_value_data(v), x, sizeof x);
    const char *names[1] = {"x"};
    gwr_session *s = gwr_session_new_raw(net, NULL);
    CHECK(!s || gwr_session_run(s, 1, names, &v, 1, NULL, &y) != GWR_OK);
    gwr_value_release(y);
    gwr_value_release(v);
    gwr_session_free(s);
    gwr_network_free(net);
}

int main(void) {
    RUN(layer_norm_rows);
    RUN(gelu_rows);
    RUN(fast_gelu_portable);
    RUN(gelu_bad_bias);
    return check_report();
}
