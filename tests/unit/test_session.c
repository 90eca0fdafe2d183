/* test_session.c - the session that compiles (src/passes/session_opt.c):
 * gwr_session_new optimizes a private copy of the network for gwr's
 * executor, leaves the caller's network as it was, runs what the raw plan
 * runs within the passes' tolerances, falls back to the network as written
 * when the optimizer fails (and says why), and plans exactly the network
 * it was given when told not to optimize. The reference outputs are the
 * raw session's: the executor's unfused kernels, which no pass touches. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"

/* The loosest tolerance of the passes that fire here (fuse_attention,
 * fuse_hard_swish, fuse_conv_*: 1e-4 relative at most), as gwr verify
 * applies it. */
#define ATOL 1e-4
#define RTOL 1e-4

/* Seeded random inputs of net with every symbolic dim bound to 4. */
static int make_in(gwr_network *net, gwr_inputs *in) {
    gwr_input_options io = {.seed = 7, .default_dim = 4};
    return CHECK_OK(gwr_exec_make_inputs(net, &io, in));
}

/* The single output of net run by a session of the given mode, or NULL. */
static gwr_value *run_mode(gwr_network *net, gwr_session_optimize mode, const gwr_inputs *in, int *optimized) {
    gwr_session_options so = {.optimize = mode};
    gwr_session *s = gwr_session_new(net, &so);
    if (!CHECK(s)) return NULL;
    gwr_value *out = NULL;
    if (!CHECK_OK(gwr_session_run(s, in->n, in->names, in->values, 1, NULL, &out))) out = NULL;
    if (optimized) *optimized = gwr_session_optimized(s);
    gwr_session_free(s);
    return out;
}

/* Largest |a - b| / (ATOL + RTOL |b|) (infinity on another shape). */
static double excess(const gwr_value *a, const gwr_value *b) {
    if (!a || !b || gwr_value_numel(a) != gwr_value_numel(b) || gwr_value_rank(a) != gwr_value_rank(b)) return INFINITY;
    double worst = 0;
    for (int64_t i = 0; i < gwr_value_numel(a); i++) {
        double x = gwr_value_get_f64(a, i), y = gwr_value_get_f64(b, i);
        double e = fabs(x - y) / (ATOL + RTOL * fabs(y));
        if (!(e <= worst)) worst = e; /* NaN counts as beyond */
    }
    return worst;
}

static int count_op(gwr_network *net, const char *op) {
    int n = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        n += !gwr_layer_is_removed(l) && !strcmp(gwr_layer_op(l), op);
    }
    return n;
}

/* Optimized against raw on net; the caller's network must not change. */
static void check_against_raw(gwr_network *net, const char *fused_op) {
    gwr_network *before = gwr_network_clone(net);
    gwr_inputs in = {0};
    if (!CHECK(before) || !make_in(net, &in)) {
        gwr_network_free(before);
        return;
    }
    gwr_session *s = gwr_session_new(net, NULL);
    if (CHECK(s)) {
        CHECK(gwr_session_optimized(s));
        CHECK_STR(gwr_session_optimize_msg(s), "");
        gwr_network *planned = gwr_session_network(s);
        CHECK(planned && planned != net);
        CHECK(gwr_network_num_live_layers(planned) < gwr_network_num_live_layers(net));
        CHECK(count_op(planned, fused_op) > 0);
        CHECK_EQ_INT(count_op(net, fused_op), 0);
    }
    gwr_value *raw = run_mode(net, GWR_SESSION_RAW, &in, NULL), *opt = NULL;
    if (s && CHECK_OK(gwr_session_run(s, in.n, in.names, in.values, 1, NULL, &opt))) {
        double e = excess(opt, raw);
        if (!CHECK(e <= 1)) fprintf(stderr, "  optimized vs raw: excess %g\n", e);
    }
    gwr_session_free(s);
    char why[256] = "";
    if (!CHECK(gwr_network_equal(before, net, why, sizeof why))) fprintf(stderr, "  network changed: %s\n", why);
    gwr_value_release(raw), gwr_value_release(opt);
    gwr_inputs_free(&in);
    gwr_network_free(before);
}

TEST(gpt_optimized_matches_raw) {
    gwr_network *net = gwr_network_new("gpt");
    gwr_gpt_config cfg = {.blocks = 2, .hidden = 32, .heads = 2, .seed = 3};
    gwr_tensor *y = gwr_build_gpt(net, &cfg);
    if (CHECK(y)) check_against_raw(net, "Attention");
    gwr_network_free(net);
}

static gwr_tensor *weights(gwr_network *net, int rank, const int64_t *dims, float scale, uint64_t *st) {
    float v[8 * 8 * 9];
    int64_t n = gwr_shape_numel(rank, dims);
    for (int64_t i = 0; i < n && i < (int64_t)(sizeof v / sizeof *v); i++) {
        *st = *st * 6364136223846793005ULL + 1442695040888963407ULL;
        v[i] = scale * ((float)(*st >> 40) / (float)(1u << 24) * 2.0f - 1.0f);
    }
    return gwr_constant(net, GWR_FLOAT32, rank, dims, v);
}

static gwr_tensor *conv3(gwr_network *net, gwr_tensor *x, uint64_t *st) {
    int64_t wd[4] = {8, 8, 3, 3}, bd[1] = {8}, pads[4] = {1, 1, 1, 1};
    gwr_conv_params p = {.nspatial = 2, .pads = pads};
    return gwr_conv(net, x, weights(net, 4, wd, 0.2f, st), weights(net, 1, bd, 0.1f, st), &p);
}

/* Conv+Relu, Conv+Add(residual)+Relu, and HardSwish as exporters write it
 * (x * Clip(x + 3, 0, 6) / 6): FusedConv and HardSwish for gwr. */
static gwr_network *small_cnn(void) {
    gwr_network *net = gwr_network_new("cnn");
    gwr_dim xd[4] = {1, 8, 6, 6};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 4, xd);
    uint64_t st = 11;
    gwr_tensor *h = gwr_relu(net, conv3(net, x, &st));
    h = gwr_relu(net, gwr_add(net, conv3(net, h, &st), x));
    gwr_tensor *c = gwr_clip(net, gwr_add(net, h, gwr_constant_f32(net, 3)), gwr_constant_f32(net, 0),
                             gwr_constant_f32(net, 6));
    gwr_tensor *y = gwr_div(net, gwr_mul(net, h, c), gwr_constant_f32(net, 6));
    if (!CHECK(y) || !CHECK_OK(gwr_network_mark_output(net, y))) {
        gwr_network_free(net);
        return NULL;
    }
    return net;
}

TEST(cnn_optimized_matches_raw) {
    gwr_network *net = small_cnn();
    if (net) check_against_raw(net, "FusedConv");
    gwr_network_free(net);
}

/* The exporters' HardSwish, x * Clip(x + 3, 0, 6) / 6. */
static gwr_tensor *hard_swish_chain(gwr_network *net, gwr_tensor *x) {
    gwr_tensor *c = gwr_clip(net, gwr_add(net, x, gwr_constant_f32(net, 3)), gwr_constant_f32(net, 0),
                             gwr_constant_f32(net, 6));
    return gwr_div(net, gwr_mul(net, x, c), gwr_constant_f32(net, 6));
}

/* A MobileNetV3-style block: expand Conv + HardSwish, depthwise Conv +
 * HardSwish (the exporters' chains), project Conv + residual Add. */
static gwr_network *mbv3_block(void) {
    gwr_network *net = gwr_network_new("mbv3");
    gwr_dim xd[4] = {1, 8, 6, 6};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 4, xd);
    uint64_t st = 5;
    int64_t dwd[4] = {8, 1, 3, 3}, bd[1] = {8}, pads[4] = {1, 1, 1, 1};
    gwr_conv_params dw = {.nspatial = 2, .pads = pads, .group = 8};
    gwr_tensor *h = hard_swish_chain(net, conv3(net, x, &st));
    h = hard_swish_chain(net, gwr_conv(net, h, weights(net, 4, dwd, 0.5f, &st), weights(net, 1, bd, 0.1f, &st), &dw));
    gwr_tensor *y = gwr_add(net, conv3(net, h, &st), x);
    if (!CHECK(y) || !CHECK_OK(gwr_network_mark_output(net, y))) {
        gwr_network_free(net);
        return NULL;
    }
    return net;
}

/* FusedConv layers of net whose activation is act. */
static int count_fused_act(gwr_network *net, const char *act) {
    int n = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        const char *a = NULL;
        if (gwr_layer_is_removed(l) || strcmp(gwr_layer_op(l), "FusedConv")) continue;
        n += !gwr_layer_get_string(l, "activation", &a, NULL) && a && !strcmp(a, act);
    }
    return n;
}

/* The default session fuses both HardSwish chains into their Convs
 * (target gwr's FusedConv "HardSwish"): no HardSwish, Clip or Div left,
 * and the outputs those of the raw plan. */
TEST(mbv3_hard_swish_fused_into_conv) {
    gwr_network *net = mbv3_block();
    if (!net) return;
    check_against_raw(net, "FusedConv");
    gwr_session *s = gwr_session_new(net, NULL);
    if (CHECK(s)) {
        gwr_network *planned = gwr_session_network(s);
        CHECK_EQ_INT(count_fused_act(planned, "HardSwish"), 2);
        CHECK_EQ_INT(count_op(planned, "HardSwish") + count_op(planned, "Clip") + count_op(planned, "Div"), 0);
        CHECK_EQ_INT(count_op(planned, "FusedConv"), 3);
    }
    gwr_session_free(s);
    gwr_network_free(net);
}

/* GWR_SESSION_RAW plans exactly the network given: the same network, no
 * copy; gwr_session_new_raw too; BASIC optimizes without fusing. */
TEST(options_choose_the_plan) {
    gwr_network *net = small_cnn();
    if (!net) return;
    gwr_session_options so = {.optimize = GWR_SESSION_RAW};
    gwr_session *s = gwr_session_new(net, &so);
    if (CHECK(s)) {
        CHECK(!gwr_session_optimized(s));
        CHECK(gwr_session_network(s) == net);
        CHECK_STR(gwr_session_optimize_msg(s), "off");
    }
    gwr_session_free(s);
    s = gwr_session_new_raw(net, NULL);
    if (CHECK(s)) {
        CHECK(!gwr_session_optimized(s) && gwr_session_network(s) == net);
        CHECK_STR(gwr_session_optimize_msg(s), "planned as written");
    }
    gwr_session_free(s);
    so.optimize = GWR_SESSION_BASIC;
    s = gwr_session_new(net, &so);
    if (CHECK(s)) {
        CHECK(gwr_session_optimized(s) && gwr_session_network(s) != net);
        CHECK_EQ_INT(count_op(gwr_session_network(s), "FusedConv"), 0);
        CHECK_EQ_INT(count_op(gwr_session_network(s), "HardSwish"), 0);
    }
    gwr_session_free(s);
    so.optimize = (gwr_session_optimize)9;
    CHECK(!gwr_session_new(net, &so));
    CHECK_CONTAINS(gwr_last_errmsg(), "unknown optimize mode 9");
    CHECK(!gwr_session_new(NULL, NULL));
    CHECK(!gwr_session_optimized(NULL));
    gwr_network_free(net);
}

/* y = Identity(Relu(x)), x [2, 3], y declared [3, 2]: the optimizer's
 * interface guard refuses the copy once the Identity goes, so the session
 * runs the network as written and says why. */
TEST(failed_optimization_runs_raw) {
    gwr_network *net = gwr_network_new("lie");
    gwr_dim xd[2] = {2, 3}, yd[2] = {3, 2};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, xd);
    gwr_tensor *h = gwr_relu(net, x);
    const char *yn = "y";
    gwr_layer *id = h ? gwr_network_add_layer(net, "Identity", "", "id", 1, &h, 1, &yn) : NULL;
    if (!CHECK(id)) {
        gwr_network_free(net);
        return;
    }
    gwr_tensor *y = gwr_layer_output(id, 0);
    CHECK_OK(gwr_network_mark_output(net, y));
    CHECK_OK(gwr_tensor_set_type(y, GWR_FLOAT32, 2, yd));
    gwr_network *before = gwr_network_clone(net);
    gwr_session *s = gwr_session_new(net, NULL);
    if (CHECK(s)) {
        CHECK(!gwr_session_optimized(s));
        CHECK(gwr_session_network(s) == net);
        CHECK_CONTAINS(gwr_session_optimize_msg(s), "optimizing: ");
        CHECK_CONTAINS(gwr_session_optimize_msg(s), "output 'y'");
        int64_t d[2] = {2, 3};
        gwr_value *v = gwr_value_new(GWR_FLOAT32, 2, d), *out = NULL;
        const char *names[1] = {"x"};
        gwr_value_set_f64(v, 4, -2.0), gwr_value_set_f64(v, 5, 1.5);
        if (CHECK_OK(gwr_session_run(s, 1, names, &v, 1, NULL, &out))) {
            CHECK(gwr_value_get_f64(out, 4) == 0.0 && gwr_value_get_f64(out, 5) == 1.5); /* Relu */
            CHECK_EQ_INT(gwr_value_dims(out)[0], 2);
        }
        gwr_value_release(v), gwr_value_release(out);
    }
    gwr_session_free(s);
    CHECK(before && gwr_network_equal(before, net, NULL, 0));
    gwr_network_free(before);
    gwr_network_free(net);
}

int main(void) {
    RUN(gpt_optimized_matches_raw);
    RUN(cnn_optimized_matches_raw);
    RUN(mbv3_hard_swish_fused_into_conv);
    RUN(options_choose_the_plan);
    RUN(failed_optimization_runs_raw);
    return check_report();
}
