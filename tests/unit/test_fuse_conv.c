/* test_fuse_conv.c - onnxruntime's CNN fusions: the com.microsoft FusedConv
 * and FusedGemm ops (kernels against values numpy computed, shape rules
 * and their errors, the ONNX round trip) and the passes that emit them
 * (fuse_conv_activation, fuse_conv_add_activation, fuse_gemm_activation):
 * where they fire, where they must not (a second reader, a graph output,
 * a broadcasting residual, non-constant Clip bounds, an activation the
 * fused op lacks, target onnx), and the outputs before and after, which
 * must be bit-identical on this executor. onnxruntime itself runs the
 * optimized models in tests/cli/test_fuse_conv_ort.sh. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "pass_case.h"
#include "pass_test.h"
#include "util/util.h"

/* ---- the kernels against numpy ------------------------------------------------ */

/* The test data: x [1, 2, 3, 3], w [2, 2, 2, 2], b [2], z [1, 2, 2, 2];
 * a [2, 3], bm [3, 4], c [4] for Gemm. numpy computed the outputs in
 * float64 from the same float32 inputs (tests/unit/fuse_conv_expected.py). */
static float xv[18], wv[16], zv[8], av[6], bmv[12];
static const float bv[2] = {0.25f, -0.5f}, cv[4] = {0.5f, -1, 0.25f, 2};

static void fill_data(void) {
    for (int i = 0; i < 18; i++) xv[i] = (float)(((i * 7) % 11 - 5) / 4.0);
    for (int i = 0; i < 16; i++) wv[i] = (float)(((i * 5) % 9 - 4) / 5.0);
    for (int i = 0; i < 8; i++) zv[i] = (float)(((i * 3) % 7 - 3) / 4.0);
    for (int i = 0; i < 6; i++) av[i] = (float)(((i * 7) % 11 - 5) / 4.0);
    for (int i = 0; i < 12; i++) bmv[i] = (float)(((i * 5) % 9 - 4) / 5.0);
}

typedef struct act_case {
    const char *act;   /* NULL: none */
    int nparams;
    double p[2];
    int with_z;
    float want[8];
} act_case;

static const act_case conv_cases[] = {
    {NULL, 0, {0, 0}, 0, {-0.25000003f, -0.25000003f, -2.45000006f, 1.40000004f, 1.11758709e-08f, 0.250000015f, 0.200000014f, -0.649999999f}},
    {"LeakyRelu", 1, {0.1, 0}, 1, {-0.100000003f, -0.025000003f, -0.170000006f, 1.15000004f, 0.500000011f, -0.0249999985f, 0.450000014f, -0.14f}},
    {"Clip", 2, {-0.5, 0.5}, 1, {-0.5f, -0.25000003f, -0.5f, 0.5f, 0.5f, -0.249999985f, 0.450000014f, -0.5f}},
    {"HardSigmoid", 2, {0.2, 0.5}, 0, {0.449999994f, 0.449999994f, 0.00999998748f, 0.780000007f, 0.500000002f, 0.550000003f, 0.540000003f, 0.37f}},
    {"Sigmoid", 0, {0, 0}, 0, {0.437823492f, 0.437823492f, 0.0794385446f, 0.802183894f, 0.500000003f, 0.562176505f, 0.549834001f, 0.342989538f}},
    {"Tanh", 0, {0, 0}, 1, {-0.761594168f, -0.24491869f, -0.935409078f, 0.81775409f, 0.462117166f, -0.244918648f, 0.421899017f, -0.885351648f}},
    {"Relu", 0, {0, 0}, 0, {0, 0, 0, 1.40000004f, 1.11758709e-08f, 0.250000015f, 0.200000014f, 0}},
};

static const act_case gemm_cases[] = {
    {"Relu", 0, {0, 0}, 0, {1.30000001f, 0, 0.800000027f, 2.20000001f, 0, 1.86264515e-08f, 0, 3.15000003f}},
    {"LeakyRelu", 1, {0.2, 0}, 0, {1.30000001f, -0.109999997f, 0.800000027f, 2.20000001f, -0.120000003f, 1.86264515e-08f, -0.140000007f, 3.15000003f}},
    {"HardSigmoid", 2, {0.3, 0.4}, 0, {0.790000004f, 0.235000004f, 0.640000008f, 1, 0.219999995f, 0.400000006f, 0.18999999f, 1}},
    {"Sigmoid", 0, {0, 0}, 0, {0.785834985f, 0.365864412f, 0.689974487f, 0.900249512f, 0.35434369f, 0.500000005f, 0.331812221f, 0.958908723f}},
};

static gwr_tensor *k4(gwr_network *net, int rank, const int64_t *d, const float *v) {
    return gwr_constant(net, GWR_FLOAT32, rank, d, v);
}

/* One fused layer over the test data; y, or NULL (message on net). */
static gwr_tensor *fused_layer(gwr_network *net, int gemm, const act_case *c, gwr_tensor *x) {
    static const int64_t wd[4] = {2, 2, 2, 2}, zd[4] = {1, 2, 2, 2}, bd = 2, bmd[2] = {3, 4}, cd = 4;
    gwr_args *a = gwr_args_new();
    gwr_tensor *y = NULL;
    if (!a) return NULL;
    if (c->act) gwr_args_set_string(a, "activation", c->act);
    if (c->nparams && !gemm) gwr_args_set_floats(a, "activation_params", c->nparams, c->p);
    if (c->nparams && gemm) gwr_args_set_float(a, "activation_alpha", c->p[0]);
    if (c->nparams > 1 && gemm) gwr_args_set_float(a, "activation_beta", c->p[1]);
    if (gemm) {
        gwr_tensor *in[3] = {x, k4(net, 2, bmd, bmv), k4(net, 1, &cd, cv)};
        gwr_op_call(net, "com.microsoft", "FusedGemm", 3, in, a, 1, &y);
    } else {
        gwr_tensor *in[4] = {x, k4(net, 4, wd, wv), k4(net, 1, &bd, bv), c->with_z ? k4(net, 4, zd, zv) : NULL};
        gwr_op_call(net, "com.microsoft", "FusedConv", c->with_z ? 4 : 3, in, a, 1, &y);
    }
    gwr_args_free(a);
    return y;
}

/* Runs the one-layer network on the test data; 1 when every output is
 * within 1e-5 of c->want. */
static int kernel_matches(int gemm, const act_case *c) {
    static const int64_t xd[4] = {1, 2, 3, 3}, ad[2] = {2, 3};
    gwr_network *net = gwr_network_new("fused");
    gwr_tensor *x = input(net, "x", gemm ? 2 : 4, gemm ? ad : xd), *y = fused_layer(net, gemm, c, x);
    if (!CHECK(y != NULL) || !CHECK(!gwr_network_mark_output(net, y))) {
        fprintf(stderr, "  %s: %s\n", c->act ? c->act : "none", gwr_network_errmsg(net));
        gwr_network_free(net);
        return 0;
    }
    gwr_value *in = gwr_value_new(GWR_FLOAT32, gemm ? 2 : 4, gemm ? ad : xd), *out[8] = {0};
    memcpy(gwr_value_data(in), gemm ? av : xv, gemm ? sizeof av : sizeof xv);
    const char *names[1] = {"x"};
    int ok = CHECK(run_net(net, 1, names, &in, out) == 1) && CHECK(gwr_value_numel(out[0]) == 8);
    for (int i = 0; ok && i < 8; i++) {
        float got = ((const float *)gwr_value_cdata(out[0]))[i];
        if (!CHECK(fabsf(got - c->want[i]) <= 1e-5f)) {
            fprintf(stderr, "  %s %s: element %d is %.9g, numpy says %.9g\n", gemm ? "FusedGemm" : "FusedConv",
                    c->act ? c->act : "none", i, got, c->want[i]);
            ok = 0;
        }
    }
    gwr_value_release(in);
    gwr_value_release(out[0]);
    gwr_network_free(net);
    return ok;
}

TEST(test_kernels_match_numpy) {
    fill_data();
    for (size_t i = 0; i < sizeof conv_cases / sizeof *conv_cases; i++) kernel_matches(0, &conv_cases[i]);
    for (size_t i = 0; i < sizeof gemm_cases / sizeof *gemm_cases; i++) kernel_matches(1, &gemm_cases[i]);
}

/* net with output y, or NULL (and net freed) when y is NULL. */
static gwr_network *done(gwr_network *net, gwr_tensor *y) {
    if (!y || gwr_network_mark_output(net, y)) {
        if (net) fprintf(stderr, "  build: %s\n", gwr_network_errmsg(net));
        gwr_network_free(net);
        return NULL;
    }
    return net;
}

/* FusedConv(x, w, b, z; act) against Conv, Add, act as separate layers, in
 * dtype dt, every operand a network input (seeded random values, NaN and
 * infinities among them): the same bits, float16 and bfloat16 rounded
 * after the sum and after the activation as the separate layers round. */
static gwr_network *conv_pair(gwr_dtype dt, const char *act, int fused) {
    static const gwr_dim xd[4] = {1, 2, 4, 4}, wd[4] = {3, 2, 3, 3}, bd[1] = {3}, zd[4] = {1, 3, 2, 2};
    gwr_network *net = gwr_network_new(fused ? "fused" : "plain");
    gwr_tensor *in[4] = {gwr_network_add_input(net, "x", dt, 4, xd), gwr_network_add_input(net, "w", dt, 4, wd),
                         gwr_network_add_input(net, "b", dt, 1, bd), gwr_network_add_input(net, "z", dt, 4, zd)};
    gwr_args *a = gwr_args_new();
    gwr_tensor *y = NULL, *c = NULL;
    static const double params[2] = {0.25, 0.5};
    if (fused) {
        gwr_args_set_string(a, "activation", act);
        if (!strcmp(act, "LeakyRelu") || !strcmp(act, "HardSigmoid") || !strcmp(act, "QuickGelu"))
            gwr_args_set_floats(a, "activation_params", !strcmp(act, "HardSigmoid") ? 2 : 1, params);
        gwr_op_call(net, "com.microsoft", "FusedConv", 4, in, a, 1, &y);
    } else if (gwr_op_call(net, "", "Conv", 3, in, NULL, 1, &c)) {
        gwr_tensor *s = gwr_add(net, c, in[3]);
        if (!strcmp(act, "LeakyRelu")) gwr_args_set_float(a, "alpha", params[0]);
        if (!strcmp(act, "HardSigmoid")) gwr_args_set_float(a, "alpha", params[0]), gwr_args_set_float(a, "beta", params[1]);
        if (!strcmp(act, "QuickGelu")) gwr_args_set_float(a, "alpha", params[0]);
        gwr_op_call(net, strcmp(act, "QuickGelu") ? "" : "com.microsoft", act, 1, &s, a, 1, &y);
    }
    gwr_args_free(a);
    if (y && gwr_tensor_set_name(y, "y")) y = NULL;
    return done(net, y);
}

TEST(test_kernels_bits_of_the_unfused_layers) {
    static const gwr_dtype dts[] = {GWR_FLOAT32, GWR_FLOAT64, GWR_FLOAT16, GWR_BFLOAT16};
    /* HardSwish: gwr's extension of FusedConv, against the HardSwish kernel */
    static const char *const acts[] = {"Relu", "Tanh", "Sigmoid", "LeakyRelu", "HardSigmoid", "HardSwish"};
    for (size_t d = 0; d < sizeof dts / sizeof *dts; d++)
        for (size_t i = 0; i < sizeof acts / sizeof *acts; i++) {
            gwr_network *a = conv_pair(dts[d], acts[i], 0), *b = conv_pair(dts[d], acts[i], 1);
            int64_t bits = -1;
            if (CHECK(a && b) && !CHECK(max_diff(a, b, 29, 2.0, 1, &bits) == 0 && bits == 0))
                fprintf(stderr, "  FusedConv %s in %s: %lld bytes differ\n", acts[i], gwr_dtype_name(dts[d]),
                        (long long)bits);
            gwr_network_free(a);
            gwr_network_free(b);
        }
    /* QuickGelu (gwr's extension) in float32 and float64: its float16 and
     * bfloat16 go through double in its own kernel, through float here */
    for (size_t d = 0; d < 2; d++) {
        gwr_network *a = conv_pair(dts[d], "QuickGelu", 0), *b = conv_pair(dts[d], "QuickGelu", 1);
        int64_t bits = -1;
        if (CHECK(a && b) && !CHECK(max_diff(a, b, 31, 2.0, 1, &bits) == 0 && bits == 0))
            fprintf(stderr, "  FusedConv QuickGelu in %s: %lld bytes differ\n", gwr_dtype_name(dts[d]), (long long)bits);
        gwr_network_free(a);
        gwr_network_free(b);
    }
}

/* ---- shape rules --------------------------------------------------------------- */

/* Builds FusedConv (or FusedGemm) on x of rank `rank` with the activation
 * and params given; 1 when the builder refused with `want` in the message. */
static int refused(int gemm, int rank, const char *act, int nparams, int bad_z, const char *want) {
    static const int64_t xd[4] = {1, 2, 3, 3}, ad[2] = {2, 3}, zd[4] = {1, 2, 3, 3};
    gwr_network *net = gwr_network_new("bad");
    act_case c = {.act = act, .nparams = nparams, .p = {0.1, 0.2}, .with_z = 1};
    gwr_tensor *x = input(net, "x", rank, rank == 2 ? ad : xd), *y = NULL;
    if (bad_z) {
        static const int64_t wd[4] = {2, 2, 2, 2};
        gwr_args *a = gwr_args_new();
        gwr_tensor *in[4] = {x, k4(net, 4, wd, wv), NULL, gwr_constant(net, GWR_FLOAT32, 4, zd, xv)};
        gwr_op_call(net, "com.microsoft", "FusedConv", 4, in, a, 1, &y);
        gwr_args_free(a);
    } else {
        y = fused_layer(net, gemm, &c, x);
    }
    int ok = CHECK(y == NULL) && CHECK(strstr(gwr_network_errmsg(net), want) != NULL);
    if (!ok) fprintf(stderr, "  wanted '%s', got '%s'\n", want, gwr_network_errmsg(net));
    gwr_network_free(net);
    return ok;
}

TEST(test_shape_rules) {
    fill_data();
    /* output shapes: FusedConv as Conv, FusedGemm as Gemm */
    static const int64_t xd[4] = {1, 2, 3, 3}, ad[2] = {2, 3};
    gwr_network *net = gwr_network_new("shapes");
    act_case relu = {.act = "Relu", .with_z = 1};
    gwr_tensor *y = fused_layer(net, 0, &relu, input(net, "x", 4, xd));
    gwr_tensor *g = fused_layer(net, 1, &relu, input(net, "a", 2, ad));
    if (CHECK(y && g)) {
        CHECK_EQ_INT(gwr_tensor_rank(y), 4);
        CHECK_EQ_INT(gwr_tensor_dim(y, 1), 2);
        CHECK_EQ_INT(gwr_tensor_dim(y, 3), 2);
        CHECK_EQ_INT(gwr_tensor_rank(g), 2);
        CHECK_EQ_INT(gwr_tensor_dim(g, 1), 4);
    }
    gwr_network_free(net);
    refused(0, 4, "Softsign", 0, 0, "activation 'Softsign' is not one of");
    refused(1, 2, "HardSwish", 0, 0, "activation 'HardSwish' is not one of"); /* FusedConv's only */
    refused(0, 4, "QuickGelu", 0, 0, "needs 1 activation_params");
    refused(0, 4, "LeakyRelu", 0, 0, "needs 1 activation_params");
    refused(0, 4, "Clip", 1, 0, "needs 2 activation_params");
    refused(0, 2, "Relu", 0, 0, "rank");
    refused(0, 4, NULL, 0, 1, "is not of the output's shape");
    refused(1, 2, NULL, 0, 0, "attribute 'activation' is required");
    refused(1, 2, "Clip", 0, 0, "activation 'Clip' is not one of");
    refused(1, 4, "Relu", 0, 0, "rank");
}

/* ---- the passes ------------------------------------------------------------------ */

enum { C_PLAIN, C_SECOND_READER, C_NET_OUTPUT, C_F64 };

/* x [1, 3, 6, 6] -> Conv(W, B; pads 1) [-> op(..., extra inputs)] as kind says. */
static gwr_tensor *conv_of(gwr_network *net, gwr_tensor *x, int with_bias) {
    int64_t wd[4] = {3, 3, 3, 3}, bd = 3;
    static const int64_t pads[4] = {1, 1, 1, 1};
    gwr_dtype dt = gwr_tensor_dtype(x);
    gwr_tensor *w = dt == GWR_FLOAT32 ? rconst(net, 4, wd, -0.5, 0.5) : NULL;
    if (dt == GWR_FLOAT64) {
        double v[81];
        for (int i = 0; i < 81; i++) v[i] = urand(-0.5, 0.5);
        w = gwr_constant(net, GWR_FLOAT64, 4, wd, v);
    }
    gwr_tensor *in[3] = {x, w, with_bias && dt == GWR_FLOAT32 ? rconst(net, 1, &bd, -1, 1) : NULL}, *y = NULL;
    gwr_args *a = gwr_args_new();
    if (a && !gwr_args_set_ints(a, "pads", 4, pads)) gwr_op_call(net, "", "Conv", in[2] ? 3 : 2, in, a, 1, &y);
    gwr_args_free(a);
    return y;
}

static gwr_network *new_net(int64_t opset) {
    gwr_network *net = gwr_network_new("cnn");
    if (net && opset && gwr_network_set_opset(net, "", opset)) {
        gwr_network_free(net);
        return NULL;
    }
    return net;
}

/* act(Conv(x)) with extra inputs (Clip bounds) and attributes. */
static gwr_network *conv_act(const char *act, int kind, int64_t opset, gwr_tensor *(*extra)(gwr_network *, int)) {
    static const gwr_dim xd[4] = {1, 3, 6, 6};
    gwr_network *net = new_net(opset);
    gwr_tensor *x = gwr_network_add_input(net, "x", kind == C_F64 ? GWR_FLOAT64 : GWR_FLOAT32, 4, xd);
    gwr_tensor *c = conv_of(net, x, 1), *in[3] = {c, extra ? extra(net, 1) : NULL, extra ? extra(net, 2) : NULL};
    int nin = extra ? (in[2] ? 3 : in[1] ? 2 : 1) : 1;
    gwr_tensor *y = NULL;
    gwr_args *a = gwr_args_new();
    if (!strcmp(act, "LeakyRelu")) gwr_args_set_float(a, "alpha", 0.25);
    if (!strcmp(act, "HardSigmoid")) gwr_args_set_float(a, "alpha", 0.3), gwr_args_set_float(a, "beta", 0.6);
    if (!strcmp(act, "Clip") && opset && opset < 11)
        gwr_args_set_float(a, "min", -0.5), gwr_args_set_float(a, "max", 0.75);
    if (!strcmp(act, "QuickGelu")) gwr_args_set_float(a, "alpha", 0.75);
    gwr_op_call(net, strcmp(act, "QuickGelu") ? "" : "com.microsoft", act, nin, in, a, 1, &y);
    gwr_args_free(a);
    if (kind == C_SECOND_READER && y) y = gwr_add(net, y, gwr_relu(net, c));
    if (kind == C_NET_OUTPUT && c && gwr_network_mark_output(net, c)) y = NULL;
    return done(net, y);
}

static gwr_tensor *clip_bounds(gwr_network *net, int i) { return gwr_constant_f32(net, i == 1 ? -0.5f : 0.75f); }
static gwr_tensor *clip_low_only(gwr_network *net, int i) { return i == 1 ? gwr_constant_f32(net, 0) : NULL; }
/* a bound from a graph input: not a constant */
static gwr_tensor *clip_input_bound(gwr_network *net, int i) {
    return i == 1 ? gwr_constant_f32(net, 0) : gwr_network_add_input(net, "hi", GWR_FLOAT32, 0, NULL);
}

/* The pass alone (gwr_optimize --only, target ort) fires `fired` times and
 * the outputs stay bit-identical (the rows' tolerance is 0), also with
 * NaN, infinities and signed zeros among the inputs. */
static void check_pass_for(gwr_network *net, const char *label, unsigned target, int64_t fired) {
    if (!CHECK(net != NULL)) return;
    gwr_network *before = gwr_network_clone(net);
    int64_t bits = -1;
    if (CHECK(before != NULL) && CHECK_EQ_INT(run_pass(net, label, target), fired)) {
        double d = max_diff(before, net, 17, 3.0, 1, &bits);
        if (!CHECK(d == 0 && bits == 0))
            fprintf(stderr, "  %s: difference %g, %lld bytes differ\n", label, d, (long long)bits);
    }
    gwr_network_free(before);
    gwr_network_free(net);
}

static void check_pass(gwr_network *net, const char *label, int64_t fired) {
    check_pass_for(net, label, GWR_TARGET_ORT, fired);
}

TEST(test_conv_activation_fires) {
    static const char *const acts[] = {"Relu", "Tanh", "Sigmoid", "LeakyRelu", "HardSigmoid"};
    for (size_t i = 0; i < sizeof acts / sizeof *acts; i++) {
        gwr_network *net = conv_act(acts[i], C_PLAIN, 13, NULL);
        gwr_network *probe = gwr_network_clone(net);
        check_pass(net, "fuse_conv_activation", 1);
        /* the result: one FusedConv with the activation, no Conv left */
        if (CHECK(probe) && CHECK_EQ_INT(run_pass(probe, "fuse_conv_activation", GWR_TARGET_GWR), 1)) {
            CHECK_EQ_INT(count_op(probe, "FusedConv"), 1);
            CHECK_EQ_INT(count_op(probe, "Conv"), 0);
            CHECK_EQ_INT(count_op(probe, acts[i]), 0);
        }
        gwr_network_free(probe);
    }
    check_pass(conv_act("Clip", C_PLAIN, 13, clip_bounds), "fuse_conv_activation", 1);
    check_pass(conv_act("Clip", C_PLAIN, 13, clip_low_only), "fuse_conv_activation", 1);
    check_pass(conv_act("Clip", C_PLAIN, 13, NULL), "fuse_conv_activation", 1);
    check_pass(conv_act("Clip", C_PLAIN, 10, NULL), "fuse_conv_activation", 1); /* min/max attributes */
}

TEST(test_conv_activation_idle) {
    check_pass(conv_act("Relu", C_SECOND_READER, 13, NULL), "fuse_conv_activation", 0);
    check_pass(conv_act("Relu", C_NET_OUTPUT, 13, NULL), "fuse_conv_activation", 0);
    check_pass(conv_act("Relu", C_F64, 13, NULL), "fuse_conv_activation", 0);
    check_pass(conv_act("Clip", C_PLAIN, 13, clip_input_bound), "fuse_conv_activation", 0);
    check_pass(conv_act("HardSwish", C_PLAIN, 14, NULL), "fuse_conv_activation", 0); /* target ort */
    check_pass(conv_act("Elu", C_PLAIN, 13, NULL), "fuse_conv_activation", 0);
}

static gwr_network *conv_hswish_net(void);

/* HardSwish after a Conv: into FusedConv (activation "HardSwish", gwr's
 * extension) for target gwr only, bit for bit; never for ort (onnxruntime's
 * FusedConv refuses it), nor onnx, nor without a target. */
TEST(test_conv_hard_swish_for_gwr_only) {
    check_pass_for(conv_act("HardSwish", C_PLAIN, 14, NULL), "fuse_conv_activation", GWR_TARGET_GWR, 1);
    check_pass_for(conv_act("HardSwish", C_SECOND_READER, 14, NULL), "fuse_conv_activation", GWR_TARGET_GWR, 0);
    check_pass_for(conv_act("HardSwish", C_NET_OUTPUT, 14, NULL), "fuse_conv_activation", GWR_TARGET_GWR, 0);
    check_pass_for(conv_act("HardSwish", C_F64, 14, NULL), "fuse_conv_activation", GWR_TARGET_GWR, 0);
    check_pass_for(conv_act("HardSwish", C_PLAIN, 14, NULL), "fuse_conv_activation", GWR_TARGET_ORT, 0);
    gwr_network *net = conv_act("HardSwish", C_PLAIN, 14, NULL);
    if (CHECK(net) && CHECK_EQ_INT(run_pass(net, "fuse_conv_activation", GWR_TARGET_GWR), 1)) {
        CHECK_EQ_INT(count_op(net, "HardSwish") + count_op(net, "Conv"), 0);
        for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
            gwr_layer *l = gwr_network_layer(net, i);
            const char *a = NULL;
            const float *p = NULL;
            int64_t n = -1;
            if (gwr_layer_is_removed(l) || strcmp(gwr_layer_op(l), "FusedConv")) continue;
            CHECK(!gwr_layer_get_string(l, "activation", &a, NULL) && a && !strcmp(a, "HardSwish"));
            CHECK(gwr_layer_get_floats(l, "activation_params", &p, &n) != GWR_OK);
        }
    }
    gwr_network_free(net);
    /* no target (a plain `gwr rewrite --pattern` run) and target onnx: none */
    gwr_args *args = gwr_args_new();
    pass_case c = {.build = conv_hswish_net, .label = "fuse_conv_activation", .args = NULL, .expect = 0, .seed = 3};
    CHECK(pass_case_check_case(&c));
    gwr_args_set_int(args, "target", GWR_TARGET_ONNX);
    c.args = args;
    CHECK(pass_case_check_case(&c));
    gwr_args_set_int(args, "target", GWR_TARGET_ORT);
    CHECK(pass_case_check_case(&c));
    gwr_args_set_int(args, "target", GWR_TARGET_GWR);
    c.expect = 1;
    CHECK(pass_case_check_case(&c));
    gwr_args_free(args);
}

/* Written for target gwr and loaded back: the FusedConv keeps activation
 * "HardSwish" (the file is for gwr's executor) and the same bits. */
TEST(test_hard_swish_round_trip) {
    gwr_network *net = conv_hswish_net(), *back = NULL;
    gwr_optimize_options o = {.level = GWR_LEVEL_EXTENDED, .target = GWR_TARGET_GWR, .debug = 1};
    void *buf = NULL;
    size_t size = 0;
    if (CHECK(net) && CHECK(!gwr_optimize(net, &o, NULL)) && CHECK(!gwr_network_prune(net, NULL)) &&
        CHECK(!gwr_onnx_save_memory(net, &buf, &size)))
        back = gwr_onnx_load_memory(buf, size, NULL, "hswish.onnx", NULL);
    if (CHECK(back != NULL)) {
        CHECK_EQ_INT(count_op(back, "FusedConv"), 1);
        CHECK_EQ_INT(count_op(back, "HardSwish"), 0);
        for (int64_t i = 0; i < gwr_network_num_layers(back); i++) {
            gwr_layer *l = gwr_network_layer(back, i);
            const char *a = NULL;
            if (!strcmp(gwr_layer_op(l), "FusedConv"))
                CHECK(!gwr_layer_get_string(l, "activation", &a, NULL) && a && !strcmp(a, "HardSwish"));
        }
        int64_t bits = -1;
        CHECK(max_diff(net, back, 5, 3.0, 1, &bits) == 0 && bits == 0);
    }
    free(buf);
    gwr_network_free(back);
    gwr_network_free(net);
}

/* QuickGelu after a Conv: FusedConv "QuickGelu" with its alpha, for target
 * gwr only, bit for bit; and x * Sigmoid(x) after a Conv (the SiLU) through
 * fuse_silu then fuse_conv_activation, within fuse_silu's 1e-5. */
TEST(test_conv_quick_gelu_for_gwr_only) {
    check_pass_for(conv_act("QuickGelu", C_PLAIN, 14, NULL), "fuse_conv_activation", GWR_TARGET_GWR, 1);
    check_pass_for(conv_act("QuickGelu", C_SECOND_READER, 14, NULL), "fuse_conv_activation", GWR_TARGET_GWR, 0);
    check_pass_for(conv_act("QuickGelu", C_PLAIN, 14, NULL), "fuse_conv_activation", GWR_TARGET_ORT, 0);
    static const gwr_dim xd[4] = {1, 3, 6, 6};
    gwr_network *net = new_net(14);
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 4, xd), *c = conv_of(net, x, 1);
    net = done(net, gwr_mul(net, c, gwr_sigmoid(net, c)));
    gwr_network *before = net ? gwr_network_clone(net) : NULL;
    gwr_optimize_options o = {.only = "fuse_silu,fuse_conv_activation", .target = GWR_TARGET_GWR, .debug = 1};
    if (CHECK(before) && CHECK(!gwr_optimize(net, &o, NULL))) {
        CHECK_EQ_INT(count_op(net, "FusedConv"), 1);
        CHECK_EQ_INT(count_op(net, "Conv") + count_op(net, "Mul") + count_op(net, "QuickGelu"), 0);
        for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
            gwr_layer *l = gwr_network_layer(net, i);
            const char *a = NULL;
            const float *p = NULL;
            int64_t n = 0;
            if (gwr_layer_is_removed(l) || strcmp(gwr_layer_op(l), "FusedConv")) continue;
            CHECK(!gwr_layer_get_string(l, "activation", &a, NULL) && a && !strcmp(a, "QuickGelu"));
            CHECK(!gwr_layer_get_floats(l, "activation_params", &p, &n) && n == 1 && p[0] == 1.0f);
        }
        double d = max_diff(before, net, 9, 3.0, 0, NULL);
        if (!CHECK(d >= 0 && d <= 1e-5)) fprintf(stderr, "  SiLU fused: difference %g\n", d);
    }
    gwr_network_free(before);
    gwr_network_free(net);
}

/* Relu(Add(Conv(x), z)) with z as `zkind` says; swap: Add(z, Conv). */
enum { Z_INPUT, Z_BROADCAST, Z_SELF, Z_GROWS, Z_CONV_READ_TWICE, Z_CONV_IS_OUTPUT };
static gwr_network *conv_add(int zkind, int swap, int relu) {
    static const gwr_dim xd[4] = {1, 3, 6, 6}, bd[4] = {1, 3, 1, 1}, gd[4] = {2, 3, 6, 6};
    gwr_network *net = new_net(13);
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 4, xd), *c = conv_of(net, x, zkind != Z_INPUT);
    gwr_tensor *z = zkind == Z_INPUT || zkind >= Z_CONV_READ_TWICE ? gwr_network_add_input(net, "z", GWR_FLOAT32, 4, xd)
                    : zkind == Z_BROADCAST ? gwr_network_add_input(net, "z", GWR_FLOAT32, 4, bd)
                    : zkind == Z_GROWS     ? gwr_network_add_input(net, "z", GWR_FLOAT32, 4, gd)
                                           : c;
    gwr_tensor *s = swap ? gwr_add(net, z, c) : gwr_add(net, c, z);
    if (zkind == Z_CONV_READ_TWICE) s = gwr_mul(net, s, gwr_sigmoid(net, c));
    if (zkind == Z_CONV_IS_OUTPUT && gwr_network_mark_output(net, c)) s = NULL;
    return done(net, relu ? gwr_relu(net, s) : s);
}

TEST(test_conv_add) {
    check_pass(conv_add(Z_INPUT, 0, 0), "fuse_conv_add_activation", 1);
    check_pass(conv_add(Z_INPUT, 1, 1), "fuse_conv_add_activation", 1);
    check_pass(conv_add(Z_BROADCAST, 0, 1), "fuse_conv_add_activation", 0);
    check_pass(conv_add(Z_GROWS, 1, 1), "fuse_conv_add_activation", 0);
    check_pass(conv_add(Z_SELF, 0, 1), "fuse_conv_add_activation", 0);
    check_pass(conv_add(Z_CONV_READ_TWICE, 0, 1), "fuse_conv_add_activation", 0);
    check_pass(conv_add(Z_CONV_IS_OUTPUT, 1, 0), "fuse_conv_add_activation", 0);
    /* with the activation pass too: one FusedConv(x, W, B, z; Relu), bit for bit */
    gwr_network *net = conv_add(Z_INPUT, 1, 1), *before = gwr_network_clone(net);
    gwr_optimize_options o = {
        .only = "fuse_conv_add_activation,fuse_conv_activation", .target = GWR_TARGET_ORT, .debug = 1};
    if (CHECK(before) && CHECK(!gwr_optimize(net, &o, NULL))) {
        CHECK_EQ_INT(count_op(net, "FusedConv"), 1);
        CHECK_EQ_INT(count_op(net, "Relu") + count_op(net, "Add") + count_op(net, "Conv"), 0);
        for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
            gwr_layer *l = gwr_network_layer(net, i);
            const char *a = NULL;
            if (gwr_layer_is_removed(l) || strcmp(gwr_layer_op(l), "FusedConv")) continue;
            CHECK_EQ_INT(gwr_layer_num_inputs(l), 4);
            CHECK(!gwr_layer_get_string(l, "activation", &a, NULL) && a && !strcmp(a, "Relu"));
        }
        int64_t bits = -1;
        CHECK(max_diff(before, net, 3, 3.0, 1, &bits) == 0 && bits == 0);
    }
    gwr_network_free(before);
    gwr_network_free(net);
}

/* act(Gemm(a, B, C)); second: the Gemm's output also read by a Relu. */
static gwr_network *gemm_act(const char *act, int second) {
    static const gwr_dim ad[2] = {3, 4};
    int64_t bd[2] = {4, 5}, cd = 5;
    gwr_network *net = new_net(13);
    gwr_tensor *g = gwr_gemm(net, gwr_network_add_input(net, "a", GWR_FLOAT32, 2, ad), rconst(net, 2, bd, -1, 1),
                             rconst(net, 1, &cd, -1, 1), 1.0f, 1.0f, 0, 0);
    gwr_tensor *y = NULL, *in[3] = {g, gwr_constant_f32(net, -0.5f), gwr_constant_f32(net, 0.5f)};
    gwr_args *a = gwr_args_new();
    if (!strcmp(act, "LeakyRelu")) gwr_args_set_float(a, "alpha", 0.3);
    gwr_op_call(net, "", act, strcmp(act, "Clip") ? 1 : 3, in, a, 1, &y);
    gwr_args_free(a);
    if (second && y) y = gwr_add(net, y, gwr_relu(net, g));
    return done(net, y);
}

TEST(test_gemm_activation) {
    static const char *const acts[] = {"Relu", "Tanh", "Sigmoid", "LeakyRelu", "HardSigmoid"};
    for (size_t i = 0; i < sizeof acts / sizeof *acts; i++) check_pass(gemm_act(acts[i], 0), "fuse_gemm_activation", 1);
    check_pass(gemm_act("Clip", 0), "fuse_gemm_activation", 0);
    check_pass(gemm_act("Relu", 1), "fuse_gemm_activation", 0);
}

static gwr_network *conv_relu_net(void) { return conv_act("Relu", C_PLAIN, 13, NULL); }
static gwr_network *conv_hswish_net(void) { return conv_act("HardSwish", C_PLAIN, 14, NULL); }
static gwr_network *conv_add_net(void) { return conv_add(Z_INPUT, 0, 1); }
static gwr_network *gemm_relu_net(void) { return gemm_act("Relu", 0); }

/* Never for target onnx: the level leaves the passes out, --only refuses,
 * and the pass itself refuses under the manager arg target = onnx. */
TEST(test_not_for_target_onnx) {
    gwr_network *net = conv_act("Relu", C_PLAIN, 13, NULL);
    gwr_optimize_options o = {.level = GWR_LEVEL_ALL, .target = GWR_TARGET_ONNX};
    if (CHECK(net) && CHECK(!gwr_optimize(net, &o, NULL))) CHECK_EQ_INT(count_op(net, "FusedConv"), 0);
    o.only = "fuse_conv_activation";
    if (net) CHECK_EQ_INT(gwr_optimize(net, &o, NULL), GWR_ERR_INVALID_ARG);
    gwr_network_free(net);
    gwr_args *args = gwr_args_new();
    gwr_args_set_int(args, "target", GWR_TARGET_ONNX);
    static const char *const labels[] = {"fuse_conv_activation", "fuse_conv_add_activation", "fuse_gemm_activation"};
    static gwr_network *(*const builds[])(void) = {conv_relu_net, conv_add_net, gemm_relu_net};
    for (int i = 0; i < 3; i++) {
        pass_case c = {.build = builds[i], .label = labels[i], .args = args, .expect = 0, .seed = 3};
        CHECK(pass_case_check_case(&c));
    }
    gwr_args_free(args);
}

/* ---- the ONNX round trip ----------------------------------------------------------- */

/* Optimized for ort, saved and loaded back: FusedConv (with and without Z)
 * and FusedGemm keep their op, domain and attributes, the model imports
 * com.microsoft at version 1, and the outputs are the same bits. */
TEST(test_onnx_round_trip) {
    static const gwr_dim xd[4] = {1, 3, 6, 6};
    gwr_network *net = new_net(13);
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 4, xd);
    gwr_tensor *r1 = gwr_relu(net, conv_of(net, x, 1));
    gwr_tensor *r2 = gwr_relu(net, gwr_add(net, x, conv_of(net, r1, 1)));
    int64_t shape[2] = {1, 108}, bd[2] = {108, 4};
    gwr_tensor *f = gwr_reshape(net, r2, 2, shape);
    gwr_tensor *g = gwr_gemm(net, f, rconst(net, 2, bd, -0.1, 0.1), NULL, 1.0f, 1.0f, 0, 0);
    gwr_args *a = gwr_args_new();
    gwr_tensor *y = NULL;
    gwr_args_set_float(a, "alpha", 0.125);
    gwr_op_call(net, "", "LeakyRelu", 1, &g, a, 1, &y);
    gwr_args_free(a);
    net = done(net, y);
    gwr_optimize_options o = {.level = GWR_LEVEL_EXTENDED, .target = GWR_TARGET_ORT, .debug = 1};
    void *buf = NULL;
    size_t size = 0;
    gwr_network *back = NULL;
    if (CHECK(net) && CHECK(!gwr_optimize(net, &o, NULL)) && CHECK(!gwr_network_prune(net, NULL)) &&
        CHECK(!gwr_onnx_save_memory(net, &buf, &size)))
        back = gwr_onnx_load_memory(buf, size, NULL, "fused.onnx", NULL);
    if (CHECK(back != NULL)) {
        CHECK_EQ_INT(count_op(back, "FusedConv"), 2);
        CHECK_EQ_INT(count_op(back, "FusedGemm"), 1);
        CHECK_EQ_INT(count_op(back, "Relu") + count_op(back, "LeakyRelu") + count_op(back, "Add"), 0);
        CHECK_EQ_INT(gwr_network_opset(back, "com.microsoft"), 1);
        int with_z = 0;
        for (int64_t i = 0; i < gwr_network_num_layers(back); i++) {
            gwr_layer *l = gwr_network_layer(back, i);
            if (!strcmp(gwr_layer_op(l), "FusedConv")) with_z += gwr_layer_num_inputs(l) == 4;
            if (!strcmp(gwr_layer_op(l), "FusedGemm")) {
                float alpha = 0;
                CHECK(!gwr_layer_get_float(l, "activation_alpha", &alpha) && alpha == 0.125f);
                CHECK(!strcmp(gwr_layer_domain(l), "com.microsoft") && gwr_layer_op_id(l) == GWR_OP_MS_FusedGemm);
            }
        }
        CHECK_EQ_INT(with_z, 1);
        int64_t bits = -1;
        CHECK(max_diff(net, back, 5, 3.0, 0, &bits) == 0 && bits == 0);
    }
    free(buf);
    gwr_network_free(back);
    gwr_network_free(net);
}

/* ---- out of memory ----------------------------------------------------------------- */

/* The fusions and the fused kernels with the n-th allocation failing (once,
 * then from the n-th on), n = 1, 2, ... until a run completes: a failed
 * run returns an error with a message and leaves the network verifying;
 * the complete run fuses everything (the sanitizer build checks leaks). */
static void alloc_failures(int sticky) {
    int64_t runs = 0;
    for (int64_t n = 1; n < 100000; n++, runs++) {
        gwr_network *net = gwr_network_new("oom");
        static const gwr_dim xd[4] = {1, 3, 6, 6};
        gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 4, xd);
        gwr_tensor *r = gwr_relu(net, gwr_add(net, x, conv_of(net, gwr_relu(net, conv_of(net, x, 1)), 0)));
        net = done(net, r);
        if (!CHECK(net)) return;
        gwr_optimize_options o = {.target = GWR_TARGET_ORT};
        gwr_alloc_hook_arm(n, sticky);
        gwr_status s = gwr_optimize(net, &o, NULL);
        gwr_value *in = s ? NULL : gwr_value_new(GWR_FLOAT32, 4, (const int64_t[]){1, 3, 6, 6}), *out[8] = {0};
        const char *names[1] = {"x"};
        gwr_session *ss = in ? gwr_session_new_raw(net, NULL) : NULL;
        int ran = ss && !gwr_session_run(ss, 1, names, &in, 1, NULL, out) ? 1 : -1;
        gwr_session_free(ss);
        int64_t failed = gwr_alloc_hook_failures();
        gwr_alloc_hook_arm(0, 0);
        if (failed && s) CHECK(*gwr_network_errmsg(net));
        CHECK_OK(gwr_network_verify(net));
        if (!failed) {
            CHECK_OK(s);
            CHECK_EQ_INT(ran, 1);
            CHECK_EQ_INT(count_op(net, "FusedConv"), 2);
            CHECK_EQ_INT(count_op(net, "Relu") + count_op(net, "Add"), 0);
        }
        gwr_value_release(in);
        gwr_value_release(out[0]);
        gwr_network_free(net);
        if (!failed) break;
    }
    CHECK(runs > 10);
}

TEST(test_out_of_memory) {
    alloc_failures(0);
    alloc_failures(1);
}

int main(void) {
    RUN(test_kernels_match_numpy);
    RUN(test_kernels_bits_of_the_unfused_layers);
    RUN(test_shape_rules);
    RUN(test_conv_activation_fires);
    RUN(test_conv_activation_idle);
    RUN(test_conv_hard_swish_for_gwr_only);
    RUN(test_hard_swish_round_trip);
    RUN(test_conv_quick_gelu_for_gwr_only);
    RUN(test_conv_add);
    RUN(test_gemm_activation);
    RUN(test_not_for_target_onnx);
    RUN(test_onnx_round_trip);
    RUN(test_out_of_memory);
    return check_report();
}
