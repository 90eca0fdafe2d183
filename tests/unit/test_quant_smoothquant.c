/* test_quant_smoothquant.c - SmoothQuant (src/quant/smoothquant.c): the
 * float network computes the same after the scales are folded (outputs
 * within 1e-4), the defining property of alpha 0.5 holds (each channel's
 * max |X_j| over the calibration set equals its max |W_j| over the
 * readers' weights), a LayerNormalization or a Mul by a per-channel
 * constant takes the scales, a normalization read by anything but a
 * MatMul is left alone, and on activations with outlier channels the int8
 * dynamic quantization's output error drops. */
#include "check.h"
#include "quant/quant_internal.h"
#include "quant_case.h"

#define K 16
#define N1 24
#define N2 8

/* x [4, 8, K] -> LayerNormalization(gamma with outlier channels 3 and 11,
 * beta) -> MatMul W1 [K, N1] and MatMul W2 [K, N2] -> two outputs; with
 * use_mul, x * c (c [K], the same outliers) instead of the normalization;
 * with extra, the normalization's output is also added to itself. */
static gwr_network *model(int use_mul, int extra) {
    uint64_t seed = 7;
    float gamma[K], beta[K], w1[K * N1], w2[K * N2];
    for (int j = 0; j < K; j++) gamma[j] = 0.5f + (float)qc_unif(&seed), beta[j] = 0.1f * (float)qc_normal(&seed);
    gamma[3] = 40, gamma[11] = -25;
    for (int i = 0; i < K * N1; i++) w1[i] = 0.2f * (float)qc_normal(&seed);
    for (int i = 0; i < K * N2; i++) w2[i] = 0.2f * (float)qc_normal(&seed);
    gwr_network *net = gwr_network_new("sq");
    gwr_network_set_opset(net, "", 17);
    int64_t xd[3] = {4, 8, K}, kd[1] = {K}, w1d[2] = {K, N1}, w2d[2] = {K, N2};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 3, xd), *h;
    if (use_mul) h = gwr_mul(net, x, qc_const(net, 1, kd, gamma));
    else h = gwr_layer_norm(net, x, qc_const(net, 1, kd, gamma), qc_const(net, 1, kd, beta), -1, 1e-5f);
    gwr_layer_set_name(gwr_tensor_parent(h), "norm");
    gwr_network_mark_output(net, gwr_matmul(net, h, qc_const(net, 2, w1d, w1)));
    gwr_network_mark_output(net, gwr_matmul(net, h, qc_const(net, 2, w2d, w2)));
    if (extra) gwr_network_mark_output(net, gwr_add(net, h, h));
    return net;
}

static gwr_value *sample(uint64_t *seed) {
    float x[4 * 8 * K];
    for (int i = 0; i < 4 * 8 * K; i++) x[i] = (float)qc_normal(seed);
    int64_t d[3] = {4, 8, K};
    return qc_value(3, d, x);
}

static gwr_calib *calib(uint64_t seed, int n) {
    gwr_calib *c = gwr_calib_new();
    const char *nm = "x";
    for (int i = 0; i < n; i++) {
        gwr_value *v = sample(&seed);
        gwr_calib_add(c, 1, &nm, &v);
        gwr_value_release(v);
    }
    return c;
}

/* The float outputs unchanged; with alpha 0.5, max|X_j| = max|W_j| per channel. */
TEST(float_unchanged_and_balanced) {
    for (int use_mul = 0; use_mul < 2; use_mul++) {
        gwr_network *fp = model(use_mul, 0), *sq = gwr_network_clone(fp);
        gwr_calib *cal = calib(11, 6);
        gwr_quantize_options o = {.mode = GWR_QUANT_DYNAMIC, .smoothquant_alpha = 0.5, .calib = cal};
        gwr_quant_report *rep = gwr_q_report_new();
        gwr_status st = gwr_q_smoothquant(sq, &o, rep);
        if (!CHECK_OK(st)) fprintf(stderr, "  %s\n", gwr_network_errmsg(sq));
        CHECK_OK(gwr_network_verify(sq));
        if (CHECK_EQ_INT(rep->n, 1)) {
            CHECK_STR(rep->e[0].layer, "norm");
            CHECK_CONTAINS(rep->e[0].what, "folded into 2 MatMuls");
        }
        gwr_quant_report_free(rep);
        /* the same outputs */
        uint64_t seed = 99;
        for (int t = 0; t < 3; t++) {
            gwr_value *x = sample(&seed);
            for (int out = 0; out < 2; out++) {
                int64_t n1 = 0, n2 = 0;
                float *a = qc_run(sq, x, out, &n1), *b = qc_run(fp, x, out, &n2);
                if (CHECK(a && b && n1 == n2)) CHECK(qc_rel(a, b, n1) < 1e-4);
                free(a), free(b);
            }
            gwr_value_release(x);
        }
        /* balanced: the normalization's output over the calibration set against the new weights */
        gwr_layer *mm[2] = {NULL, NULL};
        int nm = 0;
        for (int64_t i = 0; i < gwr_network_num_layers(sq) && nm < 2; i++)
            if (!strcmp(gwr_layer_op(gwr_network_layer(sq, i)), "MatMul")) mm[nm++] = gwr_network_layer(sq, i);
        if (!CHECK_EQ_INT(nm, 2)) continue;
        gwr_tensor *h = gwr_layer_input(mm[0], 0);
        gwr_network_mark_output(sq, h);
        float xmax[K] = {0}, wmax[K] = {0};
        for (int i = 0; i < gwr_calib_count(cal); i++) {
            gwr_value *const *vals;
            gwr_calib_sample(cal, i, NULL, &vals);
            int64_t n = 0;
            float *a = qc_run(sq, vals[0], 2, &n);
            if (!CHECK(a)) break;
            for (int64_t r = 0; r < n / K; r++)
                for (int j = 0; j < K; j++) xmax[j] = fmaxf(xmax[j], fabsf(a[r * K + j]));
            free(a);
        }
        for (int m = 0; m < 2; m++) {
            const int64_t *dims = NULL;
            const float *w = qc_const_data(gwr_layer_input(mm[m], 1), NULL, NULL, &dims);
            if (CHECK(w && dims))
                for (int j = 0; j < K; j++)
                    for (int64_t c = 0; c < dims[1]; c++) wmax[j] = fmaxf(wmax[j], fabsf(w[j * dims[1] + c]));
        }
        for (int j = 0; j < K; j++)
            if (!CHECK(fabsf(xmax[j] - wmax[j]) <= 1e-4f * wmax[j]))
                fprintf(stderr, "  channel %d: max|X| %g, max|W| %g\n", j, xmax[j], wmax[j]);
        gwr_calib_free(cal);
        gwr_network_free(fp), gwr_network_free(sq);
    }
}

/* A normalization whose output is read by an Add too is left alone. */
TEST(other_reader_skipped) {
    gwr_network *net = model(0, 1);
    gwr_calib *cal = calib(11, 2);
    gwr_quantize_options o = {.mode = GWR_QUANT_DYNAMIC, .smoothquant_alpha = 0.5, .calib = cal};
    gwr_quant_report *rep = gwr_q_report_new();
    gwr_layer *ln = qc_find_op(net, "LayerNormalization");
    gwr_tensor *gamma = ln ? gwr_layer_input(ln, 1) : NULL;
    CHECK_OK(gwr_q_smoothquant(net, &o, rep));
    CHECK_EQ_INT(rep->n, 0);
    ln = qc_find_op(net, "LayerNormalization");
    CHECK(ln && gwr_layer_input(ln, 1) == gamma);
    gwr_quant_report_free(rep);
    gwr_calib_free(cal);
    gwr_network_free(net);
}

/* Dynamic int8 with and without SmoothQuant: the outlier channels set the
 * activation's one scale, so without it most channels get few levels. */
TEST(int8_error_drops) {
    double err[2];
    gwr_calib *cal = calib(5, 8);
    for (int k = 0; k < 2; k++) {
        gwr_network *fp = model(0, 0), *q = gwr_network_clone(fp);
        gwr_quantize_options o = {.mode = GWR_QUANT_DYNAMIC, .target = GWR_TARGET_GWR, .smoothquant_alpha = k ? 0.5 : 0,
                                  .calib = cal};
        gwr_status st = gwr_quantize(q, &o, NULL);
        if (!CHECK_OK(st)) fprintf(stderr, "  %s\n", gwr_network_errmsg(q));
        CHECK_EQ_INT(count_op(q, "DynamicQuantizeLinear"), 1); /* shared by both MatMuls */
        uint64_t seed = 1234;
        double dd = 0, bb = 0;
        for (int t = 0; t < 8; t++) {
            gwr_value *x = sample(&seed);
            for (int out = 0; out < 2; out++) {
                int64_t n1 = 0, n2 = 0;
                float *a = qc_run(q, x, out, &n1), *b = qc_run(fp, x, out, &n2);
                if (CHECK(a && b && n1 == n2))
                    for (int64_t i = 0; i < n1; i++) dd += (a[i] - b[i]) * (double)(a[i] - b[i]), bb += (double)b[i] * b[i];
                free(a), free(b);
            }
            gwr_value_release(x);
        }
        err[k] = sqrt(dd / bb);
        gwr_network_free(fp), gwr_network_free(q);
    }
    printf("dynamic int8 output rel. RMS error with outlier channels: plain %.4f, SmoothQuant 0.5 %.4f (%.2fx)\n", err[0],
           err[1], err[1] / err[0]);
    CHECK(err[1] < 0.7 * err[0]);
    gwr_calib_free(cal);
}

int main(void) {
    RUN(float_unchanged_and_balanced);
    RUN(other_reader_skipped);
    RUN(int8_error_drops);
    return check_report();
}
