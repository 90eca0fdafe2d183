/* test_fuse_transformer.c - onnxruntime's com.microsoft contrib ops (shape
 * rules, kernels against values numpy computed, export and import) and the
 * transformer fusions that emit them (src/passes/fuse_transformer.c,
 * fuse_gelu's ort forms): cases where each fires, with the outputs of the
 * unfused graph within the pass's tolerance, and cases where it must not.
 * tests/cli/test_optimize_ort.sh runs the emitted models on onnxruntime. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "pass_test.h"

#define MS "com.microsoft"

static gwr_tensor *cvec(gwr_network *net, int64_t n, const float *v) { return gwr_constant(net, GWR_FLOAT32, 1, &n, v); }

/* A contrib layer; NULL when refused. */
static gwr_layer *ms(gwr_network *net, const char *op, int nin, gwr_tensor *const *in, const gwr_args *a, int nout,
                     gwr_tensor **outs) {
    return gwr_op_call(net, MS, op, nin, in, a, nout, outs);
}

static gwr_args *args_f(const char *name, double v) {
    gwr_args *a = gwr_args_new();
    gwr_args_set_float(a, name, v);
    return a;
}

/* Runs net (no inputs) and checks output o against want[n] within tol. */
static void check_outputs(gwr_network *net, int o, const double *want, int64_t n, double tol) {
    gwr_value *out[8] = {0};
    int nout = run_net(net, 0, NULL, NULL, out);
    if (CHECK(nout > o && out[o] != NULL) && CHECK_EQ_INT(gwr_value_numel(out[o]), n))
        for (int64_t i = 0; i < n; i++)
            if (!CHECK(fabs(gwr_value_get_f64(out[o], i) - want[i]) <= tol))
                fprintf(stderr, "  output %d element %lld: %.9g, numpy %.9g\n", o, (long long)i,
                        gwr_value_get_f64(out[o], i), want[i]);
    for (int i = 0; i < 8; i++) gwr_value_release(out[i]);
}

/* Rewrites of pattern `label` run by a plain manager with the arg target
 * (gwr_optimize refuses --only of a pass for a target it does not serve;
 * this shows the pattern itself refuses); frees net. */
static int64_t manager_run(gwr_network *net, const char *label, unsigned target) {
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    gwr_args *a = gwr_args_new();
    gwr_pattern_stats ps = {0};
    int64_t n = -1;
    if (m && a && !gwr_args_set_int(a, "target", target) && !gwr_passes_add(m, label) &&
        !gwr_rewrite_manager_rewrite(m, net, a) && !gwr_rewrite_manager_stats(m, 0, &ps))
        n = ps.rewrites;
    gwr_args_free(a);
    gwr_rewrite_manager_free(m);
    gwr_network_free(net);
    return n;
}

/* Not for target onnx: the pattern refuses, gwr_optimize --only refuses the run. */
static void not_for_onnx(gwr_network *a, gwr_network *b, const char *label) {
    CHECK_EQ_INT(manager_run(a, label, GWR_TARGET_ONNX), 0);
    gwr_optimize_options o = {.only = label, .target = GWR_TARGET_ONNX};
    CHECK_EQ_INT(gwr_optimize(b, &o, NULL), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(gwr_network_errmsg(b), "does not serve target onnx");
    gwr_network_free(b);
}

/* ---- kernels against numpy (float64, rounded to float32) ---------------------------- */

static const float X8[8] = {-3, -1, -0.5f, 0, 0.5f, 1, 2, 3.5f};
static const float B8[8] = {0.25f, -0.5f, 0, 1, -1, 0.5f, 0.125f, -2};

TEST(kernel_gelus) {
    static const double quick[8] = {-0.018071310594677925, -0.15420423448085785, -0.14961156249046326, 0.0,
                                    0.35038843750953674, 0.845795750617981, 1.935658574104309, 3.490966558456421};
    static const double bias_gelu[8] = {-0.008194348774850368, -0.10021080076694489, -0.1542687714099884,
                                        0.8413447737693787, -0.1542687714099884, 1.3997892141342163,
                                        2.0893142223358154, 1.3997892141342163};
    static const double fast[8] = {-0.007723144255578518, -0.10042842477560043, -0.1542859971523285,
                                   0.8411920070648193, -0.1542859971523285, 1.3995715379714966, 2.089519500732422,
                                   1.3995715379714966};
    gwr_network *net = gwr_network_new("gelus");
    gwr_tensor *in[2] = {cvec(net, 8, X8), cvec(net, 8, B8)}, *y[4] = {0};
    gwr_args *a = args_f("alpha", 1.702);
    CHECK(ms(net, "QuickGelu", 1, in, a, 1, &y[0]) != NULL);
    CHECK(ms(net, "BiasGelu", 2, in, NULL, 1, &y[1]) != NULL);
    CHECK(ms(net, "FastGelu", 2, in, NULL, 1, &y[2]) != NULL);
    gwr_tensor *xb = gwr_add(net, in[0], in[1]);
    CHECK(ms(net, "Gelu", 1, &xb, NULL, 1, &y[3]) != NULL);
    for (int i = 0; i < 4; i++) CHECK_OK(gwr_network_mark_output(net, y[i]));
    check_outputs(net, 0, quick, 8, 1e-6);
    check_outputs(net, 1, bias_gelu, 8, 1e-6);
    check_outputs(net, 2, fast, 8, 1e-6);
    check_outputs(net, 3, bias_gelu, 8, 1e-6);
    gwr_args_free(a);
    gwr_network_free(net);
}

TEST(kernel_skip_layer_norm) {
    static const float x[8] = {1, 2, 3, 4, -1, 0.5f, 2, -3}, s[8] = {0.5f, -1, 0, 2, 1, 1, -1, 0.25f};
    static const float g[4] = {1, 0.5f, 2, -1}, be[4] = {0, 0.1f, -0.2f, 0.3f}, bi[4] = {0.25f, 0, -0.5f, 1};
    static const double sum[8] = {1.75, 1.0, 2.5, 7.0, 0.25, 1.5, 0.5, -1.75};
    static const double y[8] = {-0.5622529983520508, -0.3417702317237854, -0.6819311380386353, -1.3867590427398682,
                                0.1059994101524353, 0.6829967498779297, 0.4359964430332184, 1.889991044998169};
    int64_t d[3] = {1, 2, 4};
    gwr_network *net = gwr_network_new("sln");
    gwr_tensor *in[5] = {gwr_constant(net, GWR_FLOAT32, 3, d, x), gwr_constant(net, GWR_FLOAT32, 3, d, s),
                         cvec(net, 4, g), cvec(net, 4, be), cvec(net, 4, bi)};
    gwr_tensor *o[4] = {0};
    gwr_args *a = args_f("epsilon", 1e-5);
    CHECK(ms(net, "SkipLayerNormalization", 5, in, a, 4, o) != NULL);
    CHECK_OK(gwr_network_mark_output(net, o[0]));
    CHECK_OK(gwr_network_mark_output(net, o[3]));
    CHECK_EQ_INT(gwr_tensor_rank(o[1]), 3);
    CHECK_EQ_INT(gwr_tensor_dim(o[1], 2), 1);
    check_outputs(net, 0, y, 8, 2e-6);
    check_outputs(net, 1, sum, 8, 0);
    gwr_args_free(a);
    gwr_network_free(net);
}

/* the same rows through SkipSimplifiedLayerNormalization (RMS; its bias is input 3) */
TEST(kernel_skip_simplified_layer_norm) {
    static const float x[8] = {1, 2, 3, 4, -1, 0.5f, 2, -3}, s[8] = {0.5f, -1, 0, 2, 1, 1, -1, 0.25f};
    static const float g[4] = {1, 0.5f, 2, -1}, bi[4] = {0.25f, 0, -0.5f, 1};
    static const double y[8] = {0.4544590711593628, 0.12984545528888702, 1.2984545230865479, -1.8178362846374512,
                                0.21081775426864624, 0.6324532628059387, 0.843271017074585, 1.4757243394851685};
    int64_t d[3] = {1, 2, 4};
    gwr_network *net = gwr_network_new("ssln");
    gwr_tensor *in[4] = {gwr_constant(net, GWR_FLOAT32, 3, d, x), gwr_constant(net, GWR_FLOAT32, 3, d, s),
                         cvec(net, 4, g), cvec(net, 4, bi)};
    gwr_tensor *o[4] = {0};
    gwr_args *a = args_f("epsilon", 1e-5);
    CHECK(ms(net, "SkipSimplifiedLayerNormalization", 4, in, a, 1, o) != NULL);
    CHECK_OK(gwr_network_mark_output(net, o[0]));
    check_outputs(net, 0, y, 8, 2e-6);
    gwr_args_free(a);
    gwr_network_free(net);
}

TEST(kernel_fused_matmul) {
    static const float a[6] = {1, 2, 3, -1, 0, 0.5f}, b[6] = {0.5f, 1, -1, 2, 0.25f, -0.5f};
    static const double want[9] = {-0.75, 0.375, -0.25, 0.5, 1.0, -1.0, 1.25, 1.5625, -1.625};
    int64_t d[2] = {2, 3};
    gwr_network *net = gwr_network_new("fmm");
    gwr_tensor *in[2] = {gwr_constant(net, GWR_FLOAT32, 2, d, a), gwr_constant(net, GWR_FLOAT32, 2, d, b)}, *y = NULL;
    gwr_args *ar = args_f("alpha", 0.5);
    gwr_args_set_int(ar, "transA", 1);
    CHECK(ms(net, "FusedMatMul", 2, in, ar, 1, &y) != NULL); /* 0.5 A^T [3, 2] B [2, 3] */
    CHECK_EQ_INT(gwr_tensor_dim(y, 0), 3);
    CHECK_EQ_INT(gwr_tensor_dim(y, 1), 3);
    CHECK_OK(gwr_network_mark_output(net, y));
    check_outputs(net, 0, want, 9, 1e-6);
    gwr_args_free(ar);
    gwr_network_free(net);
}

/* ---- shape rules: bad input is an error with a message ---------------------------------- */

static void refused(gwr_network *net, const char *op, int nin, gwr_tensor *const *in, const gwr_args *a,
                    const char *msg) {
    gwr_tensor *o[4] = {0};
    if (!CHECK(ms(net, op, nin, in, a, 1, o) == NULL)) return;
    CHECK_CONTAINS(gwr_network_errmsg(net), msg);
}

TEST(shape_rules_refuse) {
    gwr_dim d3[3] = {2, 4, 8}, d4[4] = {1, 2, 4, 8}, d2[2] = {4, 6};
    gwr_network *net = gwr_network_new("bad");
    gwr_tensor *x = input(net, "x", 3, (int64_t[]){2, 4, 8}), *x4 = gwr_network_add_input(net, "x4", GWR_FLOAT32, 4, d4);
    gwr_tensor *w = gwr_network_add_input(net, "w", GWR_FLOAT32, 2, d2), *g7 = cvec(net, 7, X8), *g8 = cvec(net, 8, X8);
    (void)d3;
    refused(net, "SkipLayerNormalization", 3, (gwr_tensor *[]){x, x, g7}, NULL, "gamma");
    refused(net, "SkipLayerNormalization", 3, (gwr_tensor *[]){x4, x4, g8}, NULL, "rank");
    refused(net, "SkipLayerNormalization", 3, (gwr_tensor *[]){x, w, g8}, NULL, "skip");
    refused(net, "BiasGelu", 2, (gwr_tensor *[]){x, g7}, NULL, "bias");
    refused(net, "FastGelu", 2, (gwr_tensor *[]){x, g7}, NULL, "bias");
    refused(net, "FusedMatMul", 2, (gwr_tensor *[]){x, w}, NULL, "inner dimensions");
    gwr_args *a = gwr_args_new();
    gwr_args_set_int(a, "transBatchA", 1);
    refused(net, "FusedMatMul", 2, (gwr_tensor *[]){x, x}, a, "transBatchA");
    gwr_args_free(a);
    gwr_network_free(net);
}

/* ---- export and import ---------------------------------------------------------------- */

TEST(export_import_round_trip) {
    gwr_network *net = gwr_network_new("rt");
    int64_t d[3] = {2, 4, 8};
    gwr_tensor *x = input(net, "x", 3, d), *r = input(net, "r", 3, d), *o[4] = {0}, *y = NULL, *z = NULL, *q = NULL;
    gwr_tensor *g = cvec(net, 8, X8), *b = cvec(net, 8, B8);
    gwr_args *a = args_f("epsilon", 1e-5);
    CHECK(ms(net, "SkipLayerNormalization", 5, (gwr_tensor *[]){x, r, g, b, b}, a, 4, o) != NULL);
    CHECK(ms(net, "BiasGelu", 2, (gwr_tensor *[]){o[0], b}, NULL, 1, &y) != NULL);
    gwr_args *t = gwr_args_new();
    gwr_args_set_int(t, "transB", 1);
    gwr_args_set_float(t, "alpha", 0.25);
    CHECK(ms(net, "FusedMatMul", 2, (gwr_tensor *[]){y, o[3]}, t, 1, &z) != NULL);
    CHECK(ms(net, "QuickGelu", 1, &z, NULL, 1, &q) != NULL);
    CHECK_OK(gwr_network_mark_output(net, q));
    void *buf = NULL;
    size_t size = 0;
    CHECK_OK(gwr_onnx_save_memory(net, &buf, &size));
    gwr_network *back = buf ? gwr_onnx_load_memory(buf, size, NULL, "rt", NULL) : NULL;
    if (CHECK(back != NULL)) {
        CHECK_EQ_INT(gwr_network_opset(back, MS), 1);
        CHECK_EQ_INT(count_op(back, "SkipLayerNormalization") + count_op(back, "BiasGelu") +
                         count_op(back, "FusedMatMul") + count_op(back, "QuickGelu"),
                     4);
        for (int64_t i = 0; i < gwr_network_num_layers(back); i++) {
            gwr_layer *l = gwr_network_layer(back, i);
            if (!strcmp(gwr_layer_op(l), "FusedMatMul")) {
                CHECK_STR(gwr_layer_domain(l), MS);
                CHECK_EQ_INT(gwr_layer_op_id(l), GWR_OP_MS_FusedMatMul);
            }
        }
        CHECK(max_diff(net, back, 3, 2, 0, NULL) == 0);
    }
    free(buf);
    gwr_network_free(back);
    gwr_args_free(a);
    gwr_args_free(t);
    gwr_network_free(net);
}

/* ---- fuse_skip_layer_norm -------------------------------------------------------------------- */

enum { SL_PLAIN, SL_SHARED, SL_OUTPUT, SL_BIAS, SL_BIAS_INNER, SL_SKIP_2D, SL_GAMMA_INPUT, SL_AXIS1, SL_MEAN_READ,
       SL_INNER_SHARED, SL_RANK4 };

/* LayerNormalization(x + r) in the forms above; the sum's other reader
 * (SL_SHARED) is a Relu that is a network output. */
static gwr_network *skip_ln(int form) {
    int rank = form == SL_RANK4 ? 4 : 3;
    int64_t d[4] = {2, 2, 4, 8}, *dx = rank == 4 ? d : d + 1;
    gwr_network *net = gwr_network_new("skip_ln");
    gwr_tensor *x = input(net, "x", rank, dx), *r = input(net, "r", form == SL_SKIP_2D ? 2 : rank,
                                                        form == SL_SKIP_2D ? dx + rank - 2 : dx);
    gwr_tensor *bias = rconst(net, 1, d + 3, -1, 1), *s;
    if (form == SL_BIAS) s = gwr_add(net, gwr_add(net, x, r), bias);
    else if (form == SL_BIAS_INNER) s = gwr_add(net, x, gwr_add(net, bias, r));
    else s = gwr_add(net, x, r);
    if (form == SL_INNER_SHARED) {
        gwr_tensor *inner = s;
        s = gwr_add(net, inner, bias);
        gwr_network_mark_output(net, gwr_relu(net, inner));
    }
    gwr_tensor *g = form == SL_GAMMA_INPUT ? input(net, "g", 1, d + 3) : rconst(net, 1, d + 3, 0.5, 1.5);
    gwr_tensor *ln = NULL, *in[3] = {s, g, rconst(net, 1, d + 3, -0.5, 0.5)}, *outs[3] = {0};
    gwr_args *a = gwr_args_new();
    gwr_args_set_int(a, "axis", form == SL_AXIS1 ? 1 : -1);
    gwr_args_set_float(a, "epsilon", 1e-5);
    if (form == SL_AXIS1) in[1] = rconst(net, 2, d + 2, 0.5, 1.5), in[2] = NULL;
    gwr_op_call(net, "", "LayerNormalization", in[2] ? 3 : 2, in, a, form == SL_MEAN_READ ? 2 : 1, outs);
    gwr_args_free(a);
    ln = outs[0];
    gwr_network_mark_output(net, ln);
    if (form == SL_SHARED) gwr_network_mark_output(net, gwr_relu(net, s));
    if (form == SL_OUTPUT) gwr_network_mark_output(net, s);
    if (form == SL_MEAN_READ) gwr_network_mark_output(net, outs[1]);
    return net;
}

/* The live SkipLayerNormalization's input count and live output readers of output 3. */
static void sln_shape(gwr_network *net, int *nin, int64_t *sum_users, int *sum_out) {
    *nin = -1, *sum_users = -1, *sum_out = -1;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (gwr_layer_is_removed(l) || strcmp(gwr_layer_op(l), "SkipLayerNormalization")) continue;
        *nin = gwr_layer_num_inputs(l);
        if (gwr_layer_num_outputs(l) == 4) {
            *sum_users = gwr_tensor_num_live_users(gwr_layer_output(l, 3));
            *sum_out = gwr_tensor_output_index(gwr_layer_output(l, 3));
        }
    }
}

TEST(skip_layer_norm_fires) {
    static const struct { int form, nin; int64_t users; int out; } want[] = {
        {SL_PLAIN, 4, -1, -1}, {SL_SHARED, 4, 1, -1}, {SL_OUTPUT, 4, 0, 1}, {SL_BIAS, 5, -1, -1},
        {SL_BIAS_INNER, 5, -1, -1}, {SL_SKIP_2D, 4, -1, -1},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        gwr_network *net = skip_ln(want[i].form), *keep = gwr_network_clone(net);
        expect(net, "fuse_skip_layer_norm", GWR_TARGET_ORT, 1, 3);
        if (!CHECK_EQ_INT(run_pass(keep, "fuse_skip_layer_norm", GWR_TARGET_GWR), 1)) continue;
        CHECK_OK(gwr_network_prune(keep, NULL));
        int nin;
        int64_t users;
        int out;
        sln_shape(keep, &nin, &users, &out);
        if (!CHECK_EQ_INT(nin, want[i].nin) || !CHECK_EQ_INT(users, want[i].users) || !CHECK_EQ_INT(out, want[i].out))
            fprintf(stderr, "  skip_ln form %d\n", want[i].form);
        CHECK_EQ_INT(count_op(keep, "Add"), 0);
        CHECK_EQ_INT(count_op(keep, "LayerNormalization"), 0);
        gwr_network_free(keep);
    }
}

TEST(skip_layer_norm_idle) {
    static const int forms[] = {SL_GAMMA_INPUT, SL_AXIS1, SL_MEAN_READ, SL_INNER_SHARED, SL_RANK4};
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++)
        expect(skip_ln(forms[i]), "fuse_skip_layer_norm", GWR_TARGET_ORT, 0, 3);
    not_for_onnx(skip_ln(SL_PLAIN), skip_ln(SL_PLAIN), "fuse_skip_layer_norm");
}

/* fuse_skip_layer_norm's level depends on the target: all for ort (its
 * kernel is slower than Add + LayerNormalization), extended for gwr. */
TEST(skip_layer_norm_level_per_target) {
    const gwr_pass_info *p = NULL;
    for (int i = 0; i < gwr_passes_count(); i++)
        if (!strcmp(gwr_passes_label(i), "fuse_skip_layer_norm")) p = gwr_passes_info(i);
    if (!CHECK(p != NULL)) return;
    CHECK_EQ_INT(gwr_pass_level_for(p, GWR_TARGET_ORT), GWR_LEVEL_ALL);
    CHECK_EQ_INT(gwr_pass_level_for(p, GWR_TARGET_GWR), GWR_LEVEL_EXTENDED);
    CHECK_EQ_INT(gwr_pass_level_for(gwr_passes_info(0), GWR_TARGET_GWR), gwr_passes_info(0)->level);
    CHECK_EQ_INT(gwr_pass_level_for(NULL, GWR_TARGET_GWR), GWR_LEVEL_NONE);
    static const struct { gwr_pass_level level; unsigned target; int fused; } runs[] = {
        {GWR_LEVEL_EXTENDED, GWR_TARGET_ORT, 0}, {GWR_LEVEL_ALL, GWR_TARGET_ORT, 1},
        {GWR_LEVEL_EXTENDED, GWR_TARGET_GWR, 1}, {GWR_LEVEL_BASIC, GWR_TARGET_GWR, 0}};
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        gwr_network *net = skip_ln(SL_BIAS);
        gwr_optimize_options o = {.level = runs[i].level, .target = runs[i].target};
        CHECK_OK(gwr_optimize(net, &o, NULL));
        if (!CHECK_EQ_INT(count_op(net, "SkipLayerNormalization"), runs[i].fused))
            fprintf(stderr, "  level %d target %u\n", (int)runs[i].level, runs[i].target);
        gwr_network_free(net);
    }
}

/* ---- fuse_bias_gelu, fuse_gelu for ort ------------------------------------------------------- */

enum { BG_ONNX, BG_TANH, BG_MS, BG_SHARED, BG_WIDE_BIAS, BG_INPUT_BIAS };

static gwr_network *bias_gelu(int form) {
    int64_t d[2] = {3, 8}, bd[2] = {3, 8};
    gwr_network *net = gwr_network_new("bias_gelu");
    gwr_tensor *x = input(net, "x", 2, d), *b;
    if (form == BG_WIDE_BIAS) b = rconst(net, 2, bd, -1, 1);
    else if (form == BG_INPUT_BIAS) b = input(net, "b", 1, d + 1);
    else b = rconst(net, 1, d + 1, -1, 1);
    gwr_tensor *s = gwr_add(net, x, b), *y = NULL;
    if (form == BG_MS) ms(net, "Gelu", 1, &s, NULL, 1, &y);
    else y = gwr_gelu(net, s, form == BG_TANH ? "tanh" : NULL);
    gwr_network_mark_output(net, y);
    if (form == BG_SHARED) gwr_network_mark_output(net, s);
    return net;
}

TEST(bias_gelu_cases) {
    static const struct { int form; const char *op; } fires[] = {
        {BG_ONNX, "BiasGelu"}, {BG_TANH, "FastGelu"}, {BG_MS, "BiasGelu"}};
    for (size_t i = 0; i < sizeof fires / sizeof *fires; i++) {
        expect(bias_gelu(fires[i].form), "fuse_bias_gelu", GWR_TARGET_ORT, 1, 4);
        gwr_network *net = bias_gelu(fires[i].form);
        CHECK_EQ_INT(run_pass(net, "fuse_bias_gelu", GWR_TARGET_GWR), 1);
        CHECK_EQ_INT(count_op(net, fires[i].op), 1);
        gwr_network_free(net);
    }
    expect(bias_gelu(BG_SHARED), "fuse_bias_gelu", GWR_TARGET_ORT, 0, 4);
    expect(bias_gelu(BG_WIDE_BIAS), "fuse_bias_gelu", GWR_TARGET_ORT, 0, 4);
    expect(bias_gelu(BG_INPUT_BIAS), "fuse_bias_gelu", GWR_TARGET_ORT, 0, 4);
    not_for_onnx(bias_gelu(BG_ONNX), bias_gelu(BG_ONNX), "fuse_bias_gelu");
}

/* The exporters' erf GELU of x + bias at opset 17 ends, for target ort, as
 * one BiasGelu: fuse_gelu makes com.microsoft Gelu, fuse_bias_gelu takes
 * the Add. */
TEST(erf_formula_plus_bias_is_one_bias_gelu) {
    int64_t d[2] = {3, 8};
    gwr_network *net = gwr_network_new("gelu17");
    gwr_network_set_opset(net, "", 17);
    gwr_tensor *x = gwr_add(net, input(net, "x", 2, d), rconst(net, 1, d + 1, -1, 1));
    gwr_tensor *e = gwr_div(net, x, gwr_constant_f32(net, 1.4142135f)), *erf = NULL;
    gwr_op_call(net, "", "Erf", 1, &e, NULL, 1, &erf);
    gwr_tensor *y = gwr_mul(net, gwr_mul(net, x, gwr_add(net, erf, gwr_constant_f32(net, 1))), gwr_constant_f32(net, 0.5f));
    CHECK_OK(gwr_network_mark_output(net, y));
    gwr_network *before = gwr_network_clone(net);
    gwr_optimize_options o = {.target = GWR_TARGET_ORT, .debug = 1};
    CHECK_OK(gwr_optimize(net, &o, NULL));
    CHECK_OK(gwr_network_prune(net, NULL));
    CHECK_EQ_INT(count_op(net, "BiasGelu"), 1);
    CHECK_EQ_INT(gwr_network_num_live_layers(net) - count_op(net, "Constant"), 1);
    double dmax = max_diff(before, net, 5, 6, 0, NULL);
    CHECK(dmax >= 0 && dmax <= pass_tolerance("fuse_gelu") + pass_tolerance("fuse_bias_gelu"));
    gwr_network_free(before);
    gwr_network_free(net);
}

/* ---- fuse_matmul_scale ------------------------------------------------------------------------ */

enum { MS_QKT, MS_DIV_OUT, MS_SCALE_IN, MS_TRANS_A, MS_NOT_SPLAT, MS_NOT_CONST, MS_BAD_PERM, MS_T_SHARED, MS_CONST_T };

static gwr_network *matmul_scale(int form) {
    int64_t d[4] = {2, 2, 4, 8};
    static const int64_t swap[4] = {0, 1, 3, 2}, bad[4] = {1, 0, 3, 2}; /* bad: also the batch axes */
    gwr_network *net = gwr_network_new("matmul_scale");
    gwr_tensor *q = input(net, "q", 4, d), *k = input(net, "k", 4, d), *y;
    gwr_tensor *kt = gwr_transpose(net, k, 4, form == MS_BAD_PERM || form == MS_NOT_CONST ? bad : swap);
    switch (form) {
    case MS_DIV_OUT: y = gwr_div(net, gwr_matmul(net, q, kt), gwr_constant_f32(net, 2.8284271f)); break;
    case MS_SCALE_IN: y = gwr_matmul(net, gwr_mul(net, gwr_constant_f32(net, 0.125f), q), kt); break;
    case MS_TRANS_A: y = gwr_matmul(net, gwr_transpose(net, q, 4, swap), k); break;
    case MS_NOT_SPLAT: y = gwr_mul(net, gwr_matmul(net, q, kt), rconst(net, 1, d + 2, 0.1, 0.2)); break;
    case MS_NOT_CONST: y = gwr_mul(net, gwr_matmul(net, q, kt), input(net, "s", 0, d)); break;
    case MS_BAD_PERM: y = gwr_matmul(net, q, kt); break;
    case MS_CONST_T: /* a Transpose of a constant weight: left to fold_constants */
        y = gwr_matmul(net, q, gwr_transpose(net, rconst(net, 4, d, -1, 1), 4, swap));
        break;
    case MS_T_SHARED:
        y = gwr_matmul(net, q, kt);
        gwr_network_mark_output(net, kt);
        break;
    default: y = gwr_mul(net, gwr_matmul(net, q, kt), gwr_constant_f32(net, 0.125f)); break;
    }
    gwr_network_mark_output(net, y);
    return net;
}

static void fmm_attrs(gwr_network *net, double *alpha, int64_t *ta, int64_t *tb) {
    *alpha = 0, *ta = *tb = -1;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        float a = 0;
        if (gwr_layer_is_removed(l) || strcmp(gwr_layer_op(l), "FusedMatMul")) continue;
        gwr_layer_attr_float(l, "alpha", 1.0f, &a);
        gwr_layer_attr_int(l, "transA", 0, ta);
        gwr_layer_attr_int(l, "transB", 0, tb);
        *alpha = a;
    }
}

TEST(matmul_scale_cases) {
    static const struct { int form; double alpha; int64_t ta, tb; } fires[] = {
        {MS_QKT, 0.125, 0, 1}, {MS_DIV_OUT, 1 / 2.8284271, 0, 1}, {MS_SCALE_IN, 0.125, 0, 1}, {MS_TRANS_A, 1, 1, 0}};
    for (size_t i = 0; i < sizeof fires / sizeof *fires; i++) {
        expect(matmul_scale(fires[i].form), "fuse_matmul_scale", GWR_TARGET_ORT, 1, 2);
        gwr_network *net = matmul_scale(fires[i].form);
        CHECK_EQ_INT(run_pass(net, "fuse_matmul_scale", GWR_TARGET_GWR), 1);
        CHECK_OK(gwr_network_prune(net, NULL));
        double a;
        int64_t ta, tb;
        fmm_attrs(net, &a, &ta, &tb);
        CHECK(fabs(a - fires[i].alpha) < 1e-7);
        CHECK_EQ_INT(ta, fires[i].ta);
        CHECK_EQ_INT(tb, fires[i].tb);
        CHECK_EQ_INT(count_op(net, "Transpose") + count_op(net, "Mul") + count_op(net, "Div"), 0);
        gwr_network_free(net);
    }
    /* a non-splat or non-constant scale, another perm, a Transpose read elsewhere */
    expect(matmul_scale(MS_NOT_SPLAT), "fuse_matmul_scale", GWR_TARGET_ORT, 1, 2); /* the Transpose only */
    gwr_network *net = matmul_scale(MS_NOT_SPLAT);
    CHECK_EQ_INT(run_pass(net, "fuse_matmul_scale", GWR_TARGET_ORT), 1);
    CHECK_EQ_INT(count_op(net, "Mul"), 1);
    gwr_network_free(net);
    expect(matmul_scale(MS_NOT_CONST), "fuse_matmul_scale", GWR_TARGET_ORT, 0, 2);
    expect(matmul_scale(MS_BAD_PERM), "fuse_matmul_scale", GWR_TARGET_ORT, 0, 2);
    expect(matmul_scale(MS_T_SHARED), "fuse_matmul_scale", GWR_TARGET_ORT, 0, 2);
    expect(matmul_scale(MS_CONST_T), "fuse_matmul_scale", GWR_TARGET_ORT, 0, 2);
    not_for_onnx(matmul_scale(MS_QKT), matmul_scale(MS_QKT), "fuse_matmul_scale");
}

/* In the half types the constant scale stays a layer (folding it into
 * alpha rounds once where the layers round twice: a step of the type, far
 * beyond the pass's 1e-5); the Transpose still folds. The expanded
 * Attention tests of onnx's backend data (bfloat16, float16) pass
 * optimized because of it. */
static void matmul_scale_half(gwr_dtype dt, uint16_t eighth) {
    int64_t d[4] = {2, 2, 4, 8};
    static const int64_t swap[4] = {0, 1, 3, 2};
    gwr_network *net = gwr_network_new("matmul_scale_bf16");
    gwr_tensor *q = gwr_network_add_input(net, "q", dt, 4, d);
    gwr_tensor *k = gwr_network_add_input(net, "k", dt, 4, d);
    gwr_tensor *y = gwr_mul(net, gwr_matmul(net, q, gwr_transpose(net, k, 4, swap)),
                            gwr_constant(net, dt, 0, NULL, &eighth));
    gwr_network_mark_output(net, y);
    CHECK_EQ_INT(run_pass(net, "fuse_matmul_scale", GWR_TARGET_GWR), 1);
    CHECK_OK(gwr_network_prune(net, NULL));
    double a;
    int64_t ta, tb;
    fmm_attrs(net, &a, &ta, &tb);
    CHECK(a == 1.0 && ta == 0 && tb == 1);
    CHECK_EQ_INT(count_op(net, "Mul"), 1);
    CHECK_EQ_INT(count_op(net, "Transpose"), 0);
    gwr_network_free(net);
}

TEST(matmul_scale_keeps_half_scales) {
    matmul_scale_half(GWR_BFLOAT16, 0x3E00); /* 0.125 */
    matmul_scale_half(GWR_FLOAT16, 0x3000);
}

/* ---- fuse_silu, fuse_transpose_into_gemm ----------------------------------------------------------- */

static gwr_network *silu(int shared) {
    int64_t d[2] = {3, 8};
    gwr_network *net = gwr_network_new("silu");
    gwr_tensor *x = input(net, "x", 2, d), *s = gwr_sigmoid(net, x);
    gwr_network_mark_output(net, gwr_mul(net, s, x));
    if (shared) gwr_network_mark_output(net, s);
    return net;
}

TEST(silu_cases) {
    expect(silu(0), "fuse_silu", GWR_TARGET_ORT, 1, 6);
    not_for_onnx(silu(0), silu(0), "fuse_silu");
    expect(silu(1), "fuse_silu", GWR_TARGET_ORT, 0, 6);
    gwr_network *net = silu(0);
    CHECK_EQ_INT(run_pass(net, "fuse_silu", GWR_TARGET_GWR), 1);
    CHECK_EQ_INT(count_op(net, "QuickGelu"), 1);
    gwr_network_free(net);
}

static gwr_network *gemm_t(int both, int shared) {
    int64_t da[2] = {6, 4}, dw[2] = {5, 6};
    static const int64_t perm[2] = {1, 0};
    gwr_network *net = gwr_network_new("gemm_t");
    gwr_tensor *at = gwr_transpose(net, input(net, "a", 2, da), 2, perm), *w = rconst(net, 2, dw, -1, 1);
    gwr_tensor *y = gwr_gemm(net, at, both ? gwr_transpose(net, w, 2, perm) : w, NULL, 0.5f, 1.0f, 0, !both);
    gwr_network_mark_output(net, y);
    if (shared) gwr_network_mark_output(net, at);
    return net;
}

TEST(transpose_into_gemm_cases) {
    for (unsigned t = GWR_TARGET_ONNX; t <= GWR_TARGET_GWR; t <<= 1) {
        expect(gemm_t(0, 0), "fuse_transpose_into_gemm", t, 1, 2);
        expect(gemm_t(1, 0), "fuse_transpose_into_gemm", t, 1, 2);
        expect(gemm_t(0, 1), "fuse_transpose_into_gemm", t, 0, 2);
    }
    gwr_network *net = gemm_t(1, 0);
    CHECK_EQ_INT(run_pass(net, "fuse_transpose_into_gemm", GWR_TARGET_ONNX), 1);
    CHECK_EQ_INT(count_op(net, "Transpose"), 0);
    gwr_network_free(net);
}

/* ---- fuse_rms_norm, SimplifiedLayerNormalization ----------------------------------------------- */

TEST(kernel_simplified_layer_norm) {
    static const float x[8] = {1, 2, 3, 4, -1, 0.5f, 2, -3}, g[4] = {1, 0.5f, 2, -1};
    static const double want[8] = {0.36514812707901, 0.36514812707901, 2.1908888816833496, -1.46059250831604,
                                   -0.529812216758728, 0.132453054189682, 2.119248867034912, 1.589436650276184};
    int64_t d[2] = {2, 4};
    gwr_network *net = gwr_network_new("sln");
    gwr_tensor *in[2] = {gwr_constant(net, GWR_FLOAT32, 2, d, x), cvec(net, 4, g)}, *y = NULL;
    gwr_args *a = args_f("epsilon", 1e-5);
    CHECK(gwr_op_call(net, "", "SimplifiedLayerNormalization", 2, in, a, 1, &y) != NULL);
    CHECK_OK(gwr_network_mark_output(net, y));
    check_outputs(net, 0, want, 8, 1e-6);
    in[1] = cvec(net, 3, g);
    CHECK(gwr_op_call(net, "", "SimplifiedLayerNormalization", 2, in, a, 1, &y) == NULL);
    CHECK_CONTAINS(gwr_network_errmsg(net), "scale");
    gwr_args_free(a);
    gwr_network_free(net);
}

enum { RMS_RECIP, RMS_DIV_SQUARE, RMS_NO_GAMMA, RMS_AXIS0, RMS_SHARED, RMS_GAMMA_INPUT, RMS_ONE_OVER, RMS_TWO_OVER,
       RMS_MUL_SQRT, RMS_DIV_RECIP, RMS_DIV_ONE_OVER, /* these three: a Div/Mul mixed with the other form: not RMS */
       RMS_POW_HALF, RMS_POW_QUARTER, RMS_DIV_POW_HALF }; /* x * Pow(.., -0.5); -0.25: not RMS; Div by it: not either */

static gwr_network *rms(int form) {
    int64_t d[3] = {2, 4, 8};
    static const int64_t last[1] = {-1}, first[1] = {0};
    gwr_network *net = gwr_network_new("rms");
    gwr_tensor *x = input(net, "x", 3, d);
    gwr_tensor *sq = form == RMS_DIV_SQUARE ? gwr_mul(net, x, x) : NULL;
    if (!sq) {
        gwr_tensor *in[2] = {x, gwr_constant_f32(net, 2)};
        gwr_op_call(net, "", "Pow", 2, in, NULL, 1, &sq);
    }
    gwr_args *a = gwr_args_new();
    gwr_args_set_ints(a, "axes", 1, form == RMS_AXIS0 ? first : last);
    gwr_tensor *m = NULL;
    gwr_op_call(net, "", "ReduceMean", 1, &sq, a, 1, &m);
    gwr_args_free(a);
    gwr_tensor *s = NULL, *e = gwr_add(net, m, gwr_constant_f32(net, 1e-6f)), *n;
    gwr_op_call(net, "", "Sqrt", 1, &e, NULL, 1, &s);
    if (form == RMS_DIV_SQUARE) {
        n = gwr_div(net, x, s);
    } else if (form == RMS_MUL_SQRT) {
        n = gwr_mul(net, x, s);
    } else if (form == RMS_DIV_RECIP || form == RMS_DIV_ONE_OVER) {
        gwr_tensor *r = NULL;
        if (form == RMS_DIV_RECIP) gwr_op_call(net, "", "Reciprocal", 1, &s, NULL, 1, &r);
        else r = gwr_div(net, gwr_constant_f32(net, 1), s);
        n = gwr_div(net, x, r);
    } else if (form == RMS_POW_HALF || form == RMS_POW_QUARTER || form == RMS_DIV_POW_HALF) {
        gwr_tensor *in[2] = {e, gwr_constant_f32(net, form == RMS_POW_QUARTER ? -0.25f : -0.5f)}, *r = NULL;
        gwr_op_call(net, "", "Pow", 2, in, NULL, 1, &r);
        n = form == RMS_DIV_POW_HALF ? gwr_div(net, x, r) : gwr_mul(net, x, r);
    } else if (form == RMS_ONE_OVER || form == RMS_TWO_OVER) { /* T5's x * (1 / Sqrt(...)); 2 / ...: not one */
        n = gwr_mul(net, x, gwr_div(net, gwr_constant_f32(net, form == RMS_ONE_OVER ? 1 : 2), s));
    } else {
        gwr_tensor *r = NULL;
        gwr_op_call(net, "", "Reciprocal", 1, &s, NULL, 1, &r);
        n = gwr_mul(net, x, r);
    }
    if (form == RMS_SHARED) gwr_network_mark_output(net, s);
    gwr_tensor *g = form == RMS_GAMMA_INPUT ? input(net, "g", 1, d + 2) : rconst(net, 1, d + 2, 0.5, 1.5);
    gwr_network_mark_output(net, form == RMS_NO_GAMMA ? n : gwr_mul(net, g, n));
    gwr_network_prune(net, NULL); /* the Pow forms leave the Sqrt unread */
    return net;
}

TEST(rms_norm_cases) {
    static const struct { int form; int64_t muls; } fires[] = {
        {RMS_RECIP, 0}, {RMS_DIV_SQUARE, 0}, {RMS_NO_GAMMA, 0}, {RMS_GAMMA_INPUT, 1}, {RMS_ONE_OVER, 0}, {RMS_POW_HALF, 0}};
    for (size_t i = 0; i < sizeof fires / sizeof *fires; i++) {
        expect(rms(fires[i].form), "fuse_rms_norm", GWR_TARGET_ORT, 1, 4);
        gwr_network *net = rms(fires[i].form);
        CHECK_EQ_INT(run_pass(net, "fuse_rms_norm", GWR_TARGET_GWR), 1);
        CHECK_OK(gwr_network_prune(net, NULL));
        CHECK_EQ_INT(count_op(net, "SimplifiedLayerNormalization"), 1);
        if (!CHECK_EQ_INT(count_op(net, "Mul"), fires[i].muls)) fprintf(stderr, "  rms form %d\n", fires[i].form);
        CHECK_EQ_INT(count_op(net, "ReduceMean"), 0);
        gwr_network_free(net);
    }
    expect(rms(RMS_AXIS0), "fuse_rms_norm", GWR_TARGET_ORT, 0, 4);
    expect(rms(RMS_SHARED), "fuse_rms_norm", GWR_TARGET_ORT, 0, 4);
    expect(rms(RMS_TWO_OVER), "fuse_rms_norm", GWR_TARGET_ORT, 0, 4);
    expect(rms(RMS_MUL_SQRT), "fuse_rms_norm", GWR_TARGET_ORT, 0, 4);
    expect(rms(RMS_DIV_RECIP), "fuse_rms_norm", GWR_TARGET_ORT, 0, 4);
    expect(rms(RMS_DIV_ONE_OVER), "fuse_rms_norm", GWR_TARGET_ORT, 0, 4);
    expect(rms(RMS_POW_QUARTER), "fuse_rms_norm", GWR_TARGET_ORT, 0, 4);
    expect(rms(RMS_DIV_POW_HALF), "fuse_rms_norm", GWR_TARGET_ORT, 0, 4);
    not_for_onnx(rms(RMS_RECIP), rms(RMS_RECIP), "fuse_rms_norm");
}

/* The half-precision exports' RMSNorm (Hugging Face's LlamaRMSNorm in float16):
 *   g16 * Cast(Cast(x, float) * Div(1, Sqrt(ReduceMean(Pow(Cast(x, float), 2)) + eps)), float16)
 * x a float16 input (HALF_IN), or float32 (HALF_F32: the exporters' float32 residual stream, no
 * Cast in), or float16 with its float Cast also read elsewhere (HALF_CAST_SHARED). Must not take
 * the tail: the Cast to float16 read elsewhere (HALF_TAIL_SHARED), gamma an input (HALF_GAMMA_INPUT),
 * a Cast to float64 (HALF_TO_DOUBLE). */
enum { HALF_IN, HALF_F32, HALF_CAST_SHARED, HALF_TAIL_SHARED, HALF_GAMMA_INPUT, HALF_TO_DOUBLE };

static gwr_network *rms_half(int form) {
    /* 1, 0.5, 1.5, 1.25, 0.75, 2, 0.625, 1.125: exact in float16 */
    static const uint16_t g16[8] = {0x3C00, 0x3800, 0x3E00, 0x3D00, 0x3A00, 0x4000, 0x3900, 0x3C80};
    static const int64_t last[1] = {-1}, h = 8;
    gwr_dim d[3] = {2, 4, 8};
    gwr_network *net = gwr_network_new("rms_half");
    gwr_dtype half = form == HALF_TO_DOUBLE ? GWR_FLOAT64 : GWR_FLOAT16;
    gwr_tensor *x = gwr_network_add_input(net, "x", form == HALF_F32 ? GWR_FLOAT32 : GWR_FLOAT16, 3, d);
    gwr_tensor *xf = form == HALF_F32 ? x : gwr_cast(net, x, GWR_FLOAT32), *sq = NULL, *m = NULL, *s = NULL;
    gwr_tensor *pin[2] = {xf, gwr_constant_f32(net, 2)};
    gwr_op_call(net, "", "Pow", 2, pin, NULL, 1, &sq);
    gwr_args *a = gwr_args_new();
    gwr_args_set_ints(a, "axes", 1, last);
    gwr_op_call(net, "", "ReduceMean", 1, &sq, a, 1, &m);
    gwr_args_free(a);
    gwr_tensor *e = gwr_add(net, m, gwr_constant_f32(net, 1e-6f));
    gwr_op_call(net, "", "Sqrt", 1, &e, NULL, 1, &s);
    gwr_tensor *n = gwr_mul(net, xf, gwr_div(net, gwr_constant_f32(net, 1), s)), *c = gwr_cast(net, n, half);
    gwr_tensor *g = form == HALF_GAMMA_INPUT ? gwr_network_add_input(net, "g", GWR_FLOAT16, 1, d + 2)
                  : form == HALF_TO_DOUBLE   ? gwr_constant(net, GWR_FLOAT64, 1, &h, (const double[8]){1, 0.5, 1.5, 1, 1, 2, 1, 1})
                                             : gwr_constant(net, GWR_FLOAT16, 1, &h, g16);
    gwr_network_mark_output(net, gwr_mul(net, g, c));
    if (form == HALF_CAST_SHARED) gwr_network_mark_output(net, gwr_relu(net, xf));
    if (form == HALF_TAIL_SHARED) gwr_network_mark_output(net, gwr_relu(net, c));
    return net;
}

TEST(rms_norm_half_casts) {
    static const struct { int form; gwr_dtype x_dtype; int64_t casts, muls; } cases[] = {
        {HALF_IN, GWR_FLOAT16, 0, 0},          /* SimplifiedLayerNormalization(x16, g16) */
        {HALF_F32, GWR_FLOAT32, 1, 0},         /* SimplifiedLayerNormalization(x, float(g16)) + Cast */
        {HALF_CAST_SHARED, GWR_FLOAT32, 2, 0}, /* the same, x's Cast kept for its other reader */
        {HALF_TAIL_SHARED, GWR_FLOAT32, 2, 1}, /* the float chain only: the tail stays */
        {HALF_GAMMA_INPUT, GWR_FLOAT32, 2, 1},
        {HALF_TO_DOUBLE, GWR_FLOAT32, 2, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        gwr_network *net = rms_half(cases[i].form), *before = gwr_network_clone(net);
        CHECK_EQ_INT(run_pass(net, "fuse_rms_norm", GWR_TARGET_ORT), 1);
        CHECK_OK(gwr_network_prune(net, NULL));
        CHECK_EQ_INT(count_op(net, "SimplifiedLayerNormalization"), 1);
        CHECK_EQ_INT(count_op(net, "ReduceMean") + count_op(net, "Div") + count_op(net, "Sqrt"), 0);
        int ok = CHECK_EQ_INT(count_op(net, "Cast"), cases[i].casts);
        ok &= CHECK_EQ_INT(count_op(net, "Mul"), cases[i].muls);
        if (!ok)
            fprintf(stderr, "  half form %d\n", cases[i].form);
        for (int l = 0; l < gwr_network_num_layers(net); l++) {
            gwr_layer *ly = gwr_network_layer(net, l);
            if (!gwr_layer_is_removed(ly) && !strcmp(gwr_layer_op(ly), "SimplifiedLayerNormalization"))
                CHECK_EQ_INT(gwr_tensor_dtype(gwr_layer_input(ly, 0)), cases[i].x_dtype);
        }
        /* the product with gamma rounds once to float16 instead of twice: within a step of the type
         * (outputs up to 2 * sqrt(8): steps of 2^-8) */
        for (unsigned seed = 1; seed <= 3; seed++) {
            double dd = max_diff(before, net, seed * 7919u, 4, 0, NULL);
            if (!CHECK(dd >= 0 && dd <= 4e-3)) fprintf(stderr, "  half form %d: difference %g\n", cases[i].form, dd);
        }
        gwr_network_free(before);
        gwr_network_free(net);
    }
}

/* Add + SimplifiedLayerNormalization -> SkipSimplifiedLayerNormalization,
 * the sum also read elsewhere (output 3); a bias Add stays outside. */
static gwr_network *skip_rms(int bias, int shared) {
    int64_t d[3] = {2, 4, 8};
    gwr_network *net = gwr_network_new("skip_rms");
    gwr_tensor *s = gwr_add(net, input(net, "x", 3, d), input(net, "r", 3, d)), *y = NULL;
    if (bias) s = gwr_add(net, s, rconst(net, 1, d + 2, -1, 1));
    gwr_tensor *in[2] = {s, rconst(net, 1, d + 2, 0.5, 1.5)};
    gwr_args *a = args_f("epsilon", 1e-6);
    gwr_op_call(net, "", "SimplifiedLayerNormalization", 2, in, a, 1, &y);
    gwr_args_free(a);
    gwr_network_mark_output(net, y);
    if (shared) gwr_network_mark_output(net, gwr_relu(net, s));
    return net;
}

TEST(skip_simplified_layer_norm_cases) {
    for (int shared = 0; shared <= 1; shared++) {
        expect(skip_rms(0, shared), "fuse_skip_rms_norm", GWR_TARGET_ORT, 1, 3);
        expect(skip_rms(0, shared), "fuse_skip_layer_norm", GWR_TARGET_ORT, 0, 3); /* LayerNormalization's row */
        gwr_network *net = skip_rms(0, shared);
        CHECK_EQ_INT(run_pass(net, "fuse_skip_rms_norm", GWR_TARGET_ORT), 1);
        CHECK_OK(gwr_network_prune(net, NULL));
        CHECK_EQ_INT(count_op(net, "SkipSimplifiedLayerNormalization"), 1);
        CHECK_EQ_INT(count_op(net, "Add") + count_op(net, "SimplifiedLayerNormalization"), 0);
        gwr_network_free(net);
    }
    /* x + r + bias: the bias Add is not folded into SkipSimplifiedLayerNormalization */
    expect(skip_rms(1, 0), "fuse_skip_rms_norm", GWR_TARGET_ORT, 0, 3);
    /* the default level (extended) fuses it for both targets (onnxruntime's transformers optimizer
     * does too), level basic for neither */
    static const struct { gwr_pass_level level; unsigned target; int fused; } runs[] = {
        {GWR_LEVEL_EXTENDED, GWR_TARGET_ORT, 1}, {GWR_LEVEL_EXTENDED, GWR_TARGET_GWR, 1},
        {GWR_LEVEL_BASIC, GWR_TARGET_ORT, 0}, {GWR_LEVEL_EXTENDED, GWR_TARGET_ONNX, 0}};
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        gwr_network *net = skip_rms(0, 1);
        gwr_optimize_options o = {.level = runs[i].level, .target = runs[i].target};
        CHECK_OK(gwr_optimize(net, &o, NULL));
        if (!CHECK_EQ_INT(count_op(net, "SkipSimplifiedLayerNormalization"), runs[i].fused))
            fprintf(stderr, "  level %d target %u\n", (int)runs[i].level, runs[i].target);
        gwr_network_free(net);
    }
}

int main(void) {
    RUN(kernel_skip_simplified_layer_norm);
    RUN(skip_simplified_layer_norm_cases);
    RUN(kernel_simplified_layer_norm);
    RUN(rms_norm_cases);
    RUN(rms_norm_half_casts);
    RUN(kernel_gelus);
    RUN(kernel_skip_layer_norm);
    RUN(kernel_fused_matmul);
    RUN(shape_rules_refuse);
    RUN(export_import_round_trip);
    RUN(skip_layer_norm_fires);
    RUN(skip_layer_norm_idle);
    RUN(skip_layer_norm_level_per_target);
    RUN(bias_gelu_cases);
    RUN(erf_formula_plus_bias_is_one_bias_gelu);
    RUN(matmul_scale_cases);
    RUN(matmul_scale_keeps_half_scales);
    RUN(silu_cases);
    RUN(transpose_into_gemm_cases);
    return check_report();
}
