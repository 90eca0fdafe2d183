/* test_swiglu.c - gwr::SwiGLU (shape rule, kernel) and the passes
 * merge_gate_up_matmuls and fuse_swiglu (src/passes/fuse_swiglu.c):
 *
 *   - the kernel against silu(g) * u computed here in double from the
 *     definition (g / (1 + e^-g) * u), float32 and float16, the tails
 *     (g = +-100, NaN) included; the shape rule refuses an odd last axis;
 *   - the gated MLP SiLU(x W1) * (x W3), SiLU written x * Sigmoid(x) in
 *     either order or QuickGelu(alpha 1), the product in either order:
 *     the merge fires for target gwr (one MatMul + a Split), then
 *     fuse_swiglu (one SwiGLU), outputs against the unfused graph run by
 *     the executor within the passes' tolerance;
 *   - the merge for target ort too (SiLU kept), nothing for onnx;
 *   - must not fire: gate and up of different inputs, a
 *     bias, the SiLU's output or input read elsewhere, QuickGelu of
 *     another alpha, a weight read elsewhere or not constant, and
 *     fuse_swiglu without the merge;
 *   - Phi-3's fused form (one MatMul, two Slices of the halves) and a
 *     Split in two: fuse_swiglu fires; Slices of the halves swapped or of
 *     step 2: not. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "pass_test.h"

#define K 8
#define F 6

enum {
    S_QG = 1 << 0,       /* SiLU as com.microsoft QuickGelu(alpha 1) */
    S_SIG_FIRST = 1 << 1, /* Mul(Sigmoid(g), g) */
    S_UP_FIRST = 1 << 2, /* Mul(u, silu) */
    S_DIFF_X = 1 << 3,   /* up reads another input (idle) */
    S_BIAS = 1 << 4,     /* gate + bias before the SiLU (idle) */
    S_SILU_OUT = 1 << 5, /* the SiLU's output is a network output too (idle) */
    S_G_OUT = 1 << 6,    /* the gate projection is read by a Relu output too (idle) */
    S_ALPHA = 1 << 7,    /* QuickGelu with alpha 1.702 (idle) */
    S_SHARED = 1 << 8,   /* W1 read by another MatMul (idle) */
    S_NONCONST = 1 << 9, /* W3 a graph input (idle) */
};

static gwr_tensor *quick_gelu(gwr_network *net, gwr_tensor *g, float alpha) {
    gwr_layer *l = gwr_network_add_layer(net, "QuickGelu", "com.microsoft", NULL, 1, &g, 1, NULL);
    gwr_layer_set_float(l, "alpha", alpha);
    gwr_layer_infer(l);
    return gwr_layer_output(l, 0);
}

static gwr_network *mlp_model(unsigned f) {
    rng_state = 11 + f;
    gwr_network *net = gwr_network_new("mlp");
    int64_t xd[3] = {2, 3, K}, wd[2] = {K, F}, dd[2] = {F, 4}, fd = F;
    gwr_tensor *x = input(net, "x", 3, xd), *x2 = f & S_DIFF_X ? input(net, "x2", 3, xd) : x;
    gwr_tensor *w1 = rconst(net, 2, wd, -0.5, 0.5), *w3 = f & S_NONCONST ? input(net, "w3", 2, wd) : rconst(net, 2, wd, -0.5, 0.5);
    gwr_tensor *g = gwr_matmul(net, x, w1), *u = gwr_matmul(net, x2, w3);
    if (f & S_BIAS) g = gwr_add(net, g, rconst(net, 1, &fd, -0.5, 0.5));
    gwr_tensor *s;
    if (f & (S_QG | S_ALPHA)) s = quick_gelu(net, g, f & S_ALPHA ? 1.702f : 1.0f);
    else if (f & S_SIG_FIRST) s = gwr_mul(net, gwr_sigmoid(net, g), g);
    else s = gwr_mul(net, g, gwr_sigmoid(net, g));
    gwr_tensor *y = f & S_UP_FIRST ? gwr_mul(net, u, s) : gwr_mul(net, s, u);
    gwr_network_mark_output(net, gwr_matmul(net, y, rconst(net, 2, dd, -0.5, 0.5)));
    if (f & S_SILU_OUT) gwr_network_mark_output(net, s);
    if (f & S_G_OUT) gwr_network_mark_output(net, gwr_relu(net, g));
    if (f & S_SHARED) gwr_network_mark_output(net, gwr_matmul(net, gwr_relu(net, x), w1));
    return net;
}

static int64_t count_swiglu(gwr_network *net) {
    int64_t n = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        n += !gwr_layer_is_removed(l) && !strcmp(gwr_layer_domain(l), "gwr") && !strcmp(gwr_layer_op(l), "SwiGLU");
    }
    return n;
}

/* The merge, then SwiGLU, for target gwr: each against the graph before. */
TEST(merge_and_swiglu_fire) {
    static const unsigned forms[] = {0, S_QG, S_SIG_FIRST, S_UP_FIRST, S_QG | S_UP_FIRST};
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        gwr_network *net = mlp_model(forms[i]), *copy = gwr_network_clone(net);
        CHECK_EQ_INT(run_pass(copy, "merge_gate_up_matmuls", GWR_TARGET_GWR), 1);
        gwr_network_prune(copy, NULL);
        CHECK_EQ_INT(count_op(copy, "MatMul"), 2); /* [W1 | W3] and the down projection */
        CHECK_EQ_INT(count_op(copy, "Split"), 1);
        CHECK_EQ_INT(run_pass(copy, "fuse_swiglu", GWR_TARGET_GWR), 1);
        gwr_network_prune(copy, NULL);
        CHECK_EQ_INT(count_swiglu(copy), 1);
        CHECK_EQ_INT(count_op(copy, "Split") + count_op(copy, "Mul") + count_op(copy, "Sigmoid") + count_op(copy, "QuickGelu"), 0);
        double d = max_diff(net, copy, 5, 3.0, 0, NULL);
        if (!CHECK(d >= 0 && d <= pass_tolerance("fuse_swiglu"))) fprintf(stderr, "  form %#x: difference %g\n", forms[i], d);
        gwr_network_free(copy);
        expect(net, "merge_gate_up_matmuls", GWR_TARGET_GWR, 1, 3.0);
    }
    /* idempotent: the merged form has one MatMul of x */
    gwr_network *net = mlp_model(0);
    CHECK_EQ_INT(run_pass(net, "merge_gate_up_matmuls", GWR_TARGET_GWR), 1);
    CHECK_EQ_INT(run_pass(net, "merge_gate_up_matmuls", GWR_TARGET_GWR), 0);
    gwr_network_free(net);
}

TEST(merge_idle) {
    static const unsigned forms[] = {S_DIFF_X, S_BIAS, S_SILU_OUT, S_G_OUT, S_ALPHA, S_SHARED, S_NONCONST};
    gwr_network *net;
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        net = mlp_model(forms[i]);
        if (!CHECK_EQ_INT(run_pass(net, "merge_gate_up_matmuls", GWR_TARGET_GWR), 0)) fprintf(stderr, "  form %#x\n", forms[i]);
        gwr_network_free(net);
    }
    /* not for target onnx: every pass of it leaves the two projections */
    net = mlp_model(0);
    CHECK_EQ_INT(run_pass(net, "merge_gate_up_matmuls", GWR_TARGET_ONNX), -1); /* refused: not a pass of onnx */
    gwr_optimize_options o = {.target = GWR_TARGET_ONNX, .level = GWR_LEVEL_ALL, .debug = 1};
    CHECK(!gwr_optimize(net, &o, NULL));
    gwr_network_prune(net, NULL);
    CHECK_EQ_INT(count_op(net, "MatMul"), 3);
    gwr_network_free(net);
    /* target ort: the merge (onnxruntime runs it faster), the SiLU kept as QuickGelu, no SwiGLU */
    net = mlp_model(0);
    o.target = GWR_TARGET_ORT;
    CHECK(!gwr_optimize(net, &o, NULL));
    gwr_network_prune(net, NULL);
    CHECK_EQ_INT(count_op(net, "MatMul"), 2);
    CHECK_EQ_INT(count_op(net, "QuickGelu"), 1);
    CHECK_EQ_INT(count_swiglu(net), 0);
    gwr_network_free(net);
    /* SwiGLU is never emitted without the merge */
    net = mlp_model(0);
    CHECK_EQ_INT(run_pass(net, "fuse_swiglu", GWR_TARGET_GWR), 0);
    gwr_network_free(net);
}

/* Y = x [K, 2F], cut in halves by two Slices (Phi-3's export) or a Split;
 * how: 0 Slices, 1 Split, 2 Slices swapped (the SiLU of the second half:
 * idle), 3 Slices of step 2 (idle), 4 Slices [0, F) and [F, 2F) of a Y of
 * 2F + 2 columns (not its halves: idle). */
static gwr_network *fused_model(int how) {
    rng_state = 99 + (unsigned)how;
    gwr_network *net = gwr_network_new("phi3");
    int64_t xd[3] = {2, 3, K}, wd[2] = {K, how == 4 ? 2 * F + 2 : 2 * F};
    gwr_tensor *x = input(net, "x", 3, xd), *y = gwr_matmul(net, x, rconst(net, 2, wd, -0.5, 0.5)), *g, *u;
    int64_t ax = -1, z = 0, half = F, end = how == 3 ? 2 * F : how == 4 ? 2 * F : INT64_MAX, step = how == 3 ? 2 : 1;
    if (how == 1) {
        gwr_tensor *h[2];
        gwr_split(net, y, -1, 2, NULL, h);
        g = h[0], u = h[1];
    } else {
        int64_t gs = how == 3 ? 0 : z, ge = how == 3 ? F : half, us = how == 3 ? 1 : half; /* step 2: the even and odd columns */
        g = gwr_slice(net, y, 1, &gs, &ge, &ax, &step);
        u = gwr_slice(net, y, 1, &us, &end, &ax, &step);
        if (how == 3) g = gwr_slice(net, y, 1, &z, &end, &ax, &step), u = gwr_slice(net, y, 1, &us, &end, &ax, &step);
        if (how == 2) {
            gwr_tensor *t = g;
            g = u, u = t;
        }
    }
    gwr_network_mark_output(net, gwr_mul(net, gwr_mul(net, g, gwr_sigmoid(net, g)), u));
    return net;
}

TEST(swiglu_of_fused_gate_up) {
    for (int how = 0; how < 2; how++) {
        gwr_network *net = fused_model(how), *copy = gwr_network_clone(net);
        CHECK_EQ_INT(run_pass(copy, "fuse_swiglu", GWR_TARGET_GWR), 1);
        gwr_network_prune(copy, NULL);
        CHECK_EQ_INT(count_swiglu(copy), 1);
        CHECK_EQ_INT(count_op(copy, "Slice") + count_op(copy, "Split") + count_op(copy, "Mul"), 0);
        gwr_network_free(copy);
        expect(net, "fuse_swiglu", GWR_TARGET_GWR, 1, 3.0);
        net = fused_model(how);
        CHECK_EQ_INT(run_pass(net, "fuse_swiglu", GWR_TARGET_ORT), -1); /* refused: gwr's own op */
        gwr_network_free(net);
    }
    for (int how = 2; how < 5; how++) {
        gwr_network *net = fused_model(how);
        if (!CHECK_EQ_INT(run_pass(net, "fuse_swiglu", GWR_TARGET_GWR), 0)) fprintf(stderr, "  how %d\n", how);
        gwr_network_free(net);
    }
}

/* ---- the op itself ------------------------------------------------------------- */

static double silu_ref(double g) { return g / (1.0 + exp(-g)); }

/* SwiGLU over X [R, 2 Fk] of dtype dt against the formula in double. */
static void kernel_case(gwr_dtype dt, int64_t R, int64_t Fk, double tol) {
    gwr_network *net = gwr_network_new("k");
    gwr_dim xd[2] = {R, 2 * Fk};
    gwr_tensor *x = gwr_network_add_input(net, "x", dt, 2, xd);
    gwr_layer *l = gwr_plugin_create(net, "gwr", "SwiGLU", NULL, 1, &x, NULL);
    if (!CHECK(l != NULL)) {
        gwr_network_free(net);
        return;
    }
    gwr_tensor *y = gwr_layer_output(l, 0);
    CHECK_EQ_INT(gwr_tensor_rank(y), 2);
    CHECK_EQ_INT(gwr_tensor_dim(y, 1), Fk);
    CHECK_EQ_INT(gwr_tensor_dtype(y), dt);
    gwr_network_mark_output(net, y);
    int64_t dims[2] = {R, 2 * Fk};
    gwr_value *in = gwr_value_new(dt, 2, dims), *out = NULL;
    rng_state = 1234;
    for (int64_t i = 0; i < R * 2 * Fk; i++) gwr_value_set_f64(in, i, urand(-6, 6));
    /* the tails: silu(-100) * u = -0 or 0, silu(100) * u = 100 u, NaN stays */
    gwr_value_set_f64(in, 0, -100.0), gwr_value_set_f64(in, 1, 100.0), gwr_value_set_f64(in, 2, NAN);
    const char *names[1] = {"x"};
    gwr_session *s = gwr_session_new_raw(net, NULL);
    if (CHECK(s != NULL) && CHECK_OK(gwr_session_run(s, 1, names, &in, 1, NULL, &out))) {
        double worst = 0;
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < Fk; j++) {
                double g = gwr_value_get_f64(in, r * 2 * Fk + j), u = gwr_value_get_f64(in, r * 2 * Fk + Fk + j);
                double want = silu_ref(g) * u, got = gwr_value_get_f64(out, r * Fk + j);
                if (isnan(want)) {
                    CHECK(isnan(got));
                    continue;
                }
                double e = fabs(got - want) / (fabs(want) + 1e-3);
                if (e > worst) worst = e;
            }
        if (!CHECK(worst <= tol)) fprintf(stderr, "  dtype %d R %lld F %lld: relative error %g\n", (int)dt, (long long)R, (long long)Fk, worst);
    }
    gwr_value_release(in), gwr_value_release(out);
    gwr_session_free(s);
    gwr_network_free(net);
}

TEST(swiglu_kernel) {
    kernel_case(GWR_FLOAT32, 3, 37, 1e-6);   /* rows of a length past a vector's */
    kernel_case(GWR_FLOAT32, 1, 1408, 1e-6); /* a decode step's row */
    kernel_case(GWR_FLOAT16, 2, 300, 2e-3);  /* blocks of 256 and a tail; float16's rounding */
    kernel_case(GWR_FLOAT64, 2, 5, 1e-12);
}

TEST(swiglu_shape_rule) {
    gwr_network *net = gwr_network_new("odd");
    gwr_dim xd[2] = {2, 7}, sd[2] = {2, GWR_DIM_UNKNOWN};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, xd), *xs = gwr_network_add_input(net, "xs", GWR_FLOAT32, 2, sd);
    gwr_tensor *xi = gwr_network_add_input(net, "xi", GWR_INT32, 2, xd);
    CHECK(gwr_plugin_create(net, "gwr", "SwiGLU", NULL, 1, &x, NULL) == NULL); /* odd last axis */
    CHECK(gwr_plugin_create(net, "gwr", "SwiGLU", NULL, 1, &xi, NULL) == NULL); /* not a float */
    gwr_layer *l = gwr_plugin_create(net, "gwr", "SwiGLU", NULL, 1, &xs, NULL);
    if (CHECK(l != NULL)) CHECK(!GWR_DIM_IS_KNOWN(gwr_tensor_dim(gwr_layer_output(l, 0), 1)));
    gwr_network_free(net);
}

int main(void) {
    RUN(merge_and_swiglu_fire);
    RUN(merge_idle);
    RUN(swiglu_of_fused_gate_up);
    RUN(swiglu_kernel);
    RUN(swiglu_shape_rule);
    return check_report();
}
