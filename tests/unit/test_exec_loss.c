/* test_exec_loss.c - NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
 * (src/exec/kernels/loss.c): hand-computed weighted means with an ignored
 * target, and every bad input as a named error. ONNX's test data covers
 * the rest (test_nllloss_*, test_sce_*). */
#include <math.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"

static gwr_tensor *cf(gwr_network *net, int rank, const int64_t *dims, const float *v) {
    return gwr_constant(net, GWR_FLOAT32, rank, dims, v);
}

static gwr_tensor *ci(gwr_network *net, int rank, const int64_t *dims, const int64_t *v) {
    return gwr_constant(net, GWR_INT64, rank, dims, v);
}

/* Runs a network of constants; *out gets output 0 (or the message). */
static gwr_status run(gwr_network *net, gwr_value **out, char *msg, size_t size) {
    gwr_session *s = gwr_session_new_raw(net, NULL);
    gwr_status st = s ? GWR_OK : GWR_ERR_UNSUPPORTED;
    *out = NULL;
    if (s && (st = gwr_session_run(s, 0, NULL, NULL, 1, NULL, out))) snprintf(msg, size, "%s", gwr_session_errmsg(s));
    gwr_session_free(s);
    return st;
}

static gwr_layer *loss(gwr_network *net, const char *op, gwr_tensor *x, gwr_tensor *t, gwr_tensor *w,
                       const char *reduction) {
    gwr_tensor *in[3] = {x, t, w};
    gwr_layer *l = gwr_network_add_layer(net, op, "", "L", w ? 3 : 2, in, 1, NULL);
    if (reduction) gwr_layer_set_string(l, "reduction", reduction);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    return l;
}

TEST(weighted_mean_with_ignore) {
    /* logp (N=3, C=2); targets 0, 1, 1 with the last ignored; weights 2, 3:
     * loss = -(2*(-1) + 3*(-4)) / (2 + 3) = 14 / 5 */
    gwr_network *net = gwr_network_new("nll");
    static const float lp[6] = {-1, -2, -3, -4, -5, -6}, w[2] = {2, 3};
    static const int64_t tg[3] = {0, 1, 1}, d2[2] = {3, 2}, d1[1] = {3}, dw[1] = {2};
    gwr_layer *l = loss(net, "NegativeLogLikelihoodLoss", cf(net, 2, d2, lp), ci(net, 1, d1, tg), cf(net, 1, dw, w), NULL);
    gwr_layer_set_int(l, "ignore_index", 1);
    /* ignore_index 1 ignores both targets 1: loss = -(2 * -1) / 2 = 1 */
    gwr_value *v;
    char msg[512] = "";
    if (CHECK_OK(run(net, &v, msg, sizeof msg))) {
        CHECK_EQ_INT(gwr_value_rank(v), 0);
        CHECK(fabs(gwr_value_get_f64(v, 0) - 1.0) < 1e-6);
        gwr_value_release(v);
    }
    gwr_layer_remove_attr(l, "ignore_index");
    gwr_layer_set_string(l, "reduction", "none");
    if (CHECK_OK(run(net, &v, msg, sizeof msg))) {
        CHECK_EQ_INT(gwr_value_numel(v), 3);
        CHECK(gwr_value_get_f64(v, 0) == 2 && gwr_value_get_f64(v, 1) == 12 && gwr_value_get_f64(v, 2) == 18);
        gwr_value_release(v);
    }
    gwr_layer_set_string(l, "reduction", "mean");
    if (CHECK_OK(run(net, &v, msg, sizeof msg))) {
        CHECK(fabs(gwr_value_get_f64(v, 0) - 32.0 / 8.0) < 1e-6); /* (2 + 12 + 18) / (2 + 3 + 3) */
        gwr_value_release(v);
    }
    gwr_network_free(net);
}

TEST(softmax_cross_entropy) {
    /* scores (1, 2) = (0, 0), label 1: -log(1/2) */
    gwr_network *net = gwr_network_new("sce");
    static const float x[2] = {0, 0};
    static const int64_t t[1] = {1}, dx[2] = {1, 2}, dt[1] = {1};
    loss(net, "SoftmaxCrossEntropyLoss", cf(net, 2, dx, x), ci(net, 1, dt, t), NULL, "sum");
    gwr_value *v;
    char msg[512] = "";
    if (CHECK_OK(run(net, &v, msg, sizeof msg))) {
        CHECK(fabs(gwr_value_get_f64(v, 0) - log(2.0)) < 1e-6);
        gwr_value_release(v);
    }
    gwr_network_free(net);
}

static void expect_error(const char *what, const char *op, int xr, const int64_t *xd, int tr, const int64_t *td,
                         const int64_t *tv, const char *reduction, int with_weight, const char *needle) {
    gwr_network *net = gwr_network_new("bad");
    float xv[64] = {0}, wv[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    int64_t wd[1] = {5};
    loss(net, op, cf(net, xr, xd, xv), ci(net, tr, td, tv), with_weight ? cf(net, 1, wd, wv) : NULL, reduction);
    gwr_value *v = NULL;
    char msg[512] = "";
    if (!CHECK(run(net, &v, msg, sizeof msg) != GWR_OK)) fprintf(stderr, "  %s: ran\n", what);
    else if (!CHECK(strstr(msg, needle) && strstr(msg, "layer 'L'"))) fprintf(stderr, "  %s: '%s'\n", what, msg);
    gwr_value_release(v);
    gwr_network_free(net);
}

TEST(bad_inputs_named) {
    static const int64_t x2[2] = {2, 3}, t1[1] = {2}, t1b[1] = {3}, x1[1] = {3};
    static const int64_t ok[3] = {0, 2, 1}, far[3] = {0, 3, 0}, neg[3] = {-1, 0, 0};
    expect_error("bad reduction", "NegativeLogLikelihoodLoss", 2, x2, 1, t1, ok, "avg", 0, "reduction 'avg'");
    expect_error("target past C", "NegativeLogLikelihoodLoss", 2, x2, 1, t1, far, NULL, 0, "target 3 is outside [0, 3)");
    expect_error("negative target", "SoftmaxCrossEntropyLoss", 2, x2, 1, t1, neg, NULL, 0, "target -1 is outside");
    expect_error("target of the wrong shape", "NegativeLogLikelihoodLoss", 2, x2, 1, t1b, ok, NULL, 0, "target must have shape");
    expect_error("scores of rank 1", "SoftmaxCrossEntropyLoss", 1, x1, 1, t1, ok, NULL, 0, "rank >= 2");
    expect_error("weight of the wrong length", "NegativeLogLikelihoodLoss", 2, x2, 1, t1, ok, NULL, 1, "weight must be");
}

int main(void) {
    RUN(weighted_mean_with_ignore);
    RUN(softmax_cross_entropy);
    RUN(bad_inputs_named);
    return check_report();
}
