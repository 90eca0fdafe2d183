/* test_fold_scale.c - fold_scale_into_conv, fold_scale_into_gemm,
 * fold_scalar_around_matmul and fold_pad_into_conv through the pass_case
 * harness (debug rewrite, firings counted, outputs compared with a clone
 * on seeded inputs within the pass's tolerance): every broadcast form
 * that must fire, every one that must not, and the refusals (a second
 * reader, a graph-output intermediate, a non-constant operand, a Div by
 * zero, a broadcast that grows the output, the Pad forms of each opset).
 * One Gemm case checks the new constants against values numpy computed
 * (double, then one rounding to float32). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "pass_case.h"
#include "pass_test.h"

static gwr_tensor *call(gwr_network *net, const char *name, int nin, gwr_tensor *const *in, const gwr_args *a) {
    gwr_tensor *out = NULL;
    return gwr_op_call(net, "", name, nin, in, a, 1, &out) ? out : NULL;
}

static gwr_tensor *ints(gwr_network *net, int64_t n, const int64_t *v) {
    return gwr_constant(net, GWR_INT64, 1, &n, v);
}

/* A build that failed: NULL, so that the harness reports it (an idle
 * case must not pass on a network that lost its layers). */
static gwr_network *failed(gwr_network *net) {
    fprintf(stderr, "  build failed: %s\n", gwr_network_errmsg(net));
    gwr_network_free(net);
    return NULL;
}

/* The largest output difference seen per pass, printed at the end (what
 * the tolerances of the table rows are measured against). */
static double worst_conv, worst_gemm, worst_around, worst_pad;

static int check_pass(pass_case_build_fn build, const char *label, int64_t expect_n) {
    pass_case c = {.build = build, .label = label, .expect = expect_n, .atol = pass_tolerance(label), .seed = 7};
    pass_case_result r = pass_case_run(&c);
    double *w = strstr(label, "conv") ? (strstr(label, "pad") ? &worst_pad : &worst_conv)
                                      : strstr(label, "gemm") ? &worst_gemm : &worst_around;
    if (r.compared && r.max_abs > *w) *w = r.max_abs;
    return pass_case_check_case(&c);
}

/* ---- constants after a linear layer ------------------------------------------------ */

enum { L_CONV, L_CONVT, L_CONV1D, L_GEMM, L_MATMUL };
enum {
    F_BIAS = 1,          /* the producer reads a bias (Gemm: C [5]) */
    F_SECOND_READER = 2, /* the producer's output is also read by a Relu (an output) */
    F_NET_OUTPUT = 4,    /* the producer's output is a network output too */
    F_K_INPUT = 8,       /* k is a graph input, not a constant */
    F_W_INPUT = 16,      /* the weights are a graph input */
    F_SHARED_W = 32,     /* a second producer reads the same weights */
    F_ZERO_K = 64,       /* k's first element is 0 */
    F_K_FIRST = 128,     /* k is the first operand (k / y for Div) */
    F_C_PER_ROW = 256,   /* Gemm's C is [3, 5] */
};

typedef struct after_cfg {
    int kind;
    const char *op;      /* Mul, Div, Add, Sub */
    int krank;
    int64_t kdims[5];
    unsigned flags;
    int64_t group;
    int trans_b;
} after_cfg;
static after_cfg acfg;

static gwr_tensor *producer(gwr_network *net, gwr_tensor *x, gwr_tensor *w, gwr_tensor *b) {
    const int64_t strides[2] = {1, 1};
    gwr_conv_params p = {.nspatial = acfg.kind == L_CONV1D ? 1 : 2, .strides = strides, .group = acfg.group};
    switch (acfg.kind) {
    case L_CONV:
    case L_CONV1D: return gwr_conv(net, x, w, b, &p);
    case L_CONVT: return gwr_conv_transpose(net, x, w, b, &p);
    case L_GEMM: return gwr_gemm(net, x, w, b, 0.7f, 0.3f, 0, acfg.trans_b);
    default: return gwr_matmul(net, x, w);
    }
}

/* y = producer(x, W, B); z = y op k. Outputs [2,4,4,4] (Conv, ConvTranspose),
 * [2,4,4] (1-D Conv), [3,5] (Gemm), [2,3,5] (MatMul). */
static gwr_network *build_after(void) {
    rng_state = 4242;
    gwr_network *net = gwr_network_new("after");
    int64_t g = acfg.group ? acfg.group : 1, xd[4] = {2, 4, 6, 6}, wd[4] = {4, 4 / g, 3, 3}, nch = 4;
    int xr = 4, wr = 4;
    switch (acfg.kind) {
    case L_CONVT: xd[2] = xd[3] = 2; break;
    case L_CONV1D: xr = wr = 3; break;
    case L_GEMM:
        xr = wr = 2, nch = 5;
        xd[0] = 3, xd[1] = 4, wd[0] = acfg.trans_b ? 5 : 4, wd[1] = acfg.trans_b ? 4 : 5;
        break;
    case L_MATMUL: xr = 3, wr = 2, nch = 5, xd[0] = 2, xd[1] = 3, xd[2] = 4, wd[0] = 4, wd[1] = 5; break;
    default: break;
    }
    gwr_tensor *x = input(net, "x", xr, xd);
    gwr_tensor *w = acfg.flags & F_W_INPUT ? input(net, "w", wr, wd) : rconst(net, wr, wd, -0.5, 0.5), *b = NULL;
    if (acfg.flags & F_C_PER_ROW) {
        const int64_t cd[2] = {3, 5};
        b = rconst(net, 2, cd, -1, 1);
    } else if (acfg.flags & F_BIAS) {
        b = rconst(net, 1, &nch, -1, 1);
    }
    gwr_tensor *y = producer(net, x, w, b), *k;
    if (acfg.flags & F_K_INPUT) {
        k = input(net, "k", acfg.krank, acfg.kdims);
    } else {
        k = rconst(net, acfg.krank, acfg.kdims, 0.5, 1.5);
        if (k && (acfg.flags & F_ZERO_K)) {
            int64_t n = 1;
            for (int i = 0; i < acfg.krank; i++) n *= acfg.kdims[i];
            float *v = calloc((size_t)n, sizeof *v);
            for (int64_t i = 1; i < n; i++) v[i] = 1.5f;
            k = gwr_constant(net, GWR_FLOAT32, acfg.krank, acfg.kdims, v);
            free(v);
        }
    }
    int first = acfg.flags & F_K_FIRST;
    gwr_tensor *in[2] = {first ? k : y, first ? y : k};
    gwr_tensor *z = call(net, acfg.op, 2, in, NULL);
    if (!z || gwr_network_mark_output(net, z)) return failed(net);
    if (acfg.flags & F_SECOND_READER) gwr_network_mark_output(net, gwr_relu(net, y));
    if (acfg.flags & F_NET_OUTPUT) gwr_network_mark_output(net, y);
    if (acfg.flags & F_SHARED_W) gwr_network_mark_output(net, producer(net, x, w, NULL));
    return net;
}

static const char *const all_ops[] = {"Mul", "Div", "Add", "Sub"};

/* Every op, both operand orders (Sub: k - y), with and without a bias;
 * Gemm with transB = every_trans_b. */
static int every_trans_b;
static void fires_every_op(int kind, int krank, const int64_t *kdims, const char *label) {
    for (int o = 0; o < 4; o++)
        for (unsigned fl = 0; fl < 4; fl++) {
            unsigned flags = (fl & 1 ? F_BIAS : 0) | (fl & 2 ? F_K_FIRST : 0);
            if ((flags & F_K_FIRST) && o == 1) continue; /* k / y is not linear */
            acfg = (after_cfg){.kind = kind, .op = all_ops[o], .krank = krank, .flags = flags, .trans_b = every_trans_b};
            memcpy(acfg.kdims, kdims, (size_t)krank * sizeof *kdims);
            if (!check_pass(build_after, label, 1))
                fprintf(stderr, "  %s kind %d, %s, k rank %d, flags %u\n", label, kind, all_ops[o], krank, flags);
        }
}

TEST(scale_into_conv_broadcast_forms) {
    /* per channel or scalar on [2, 4, 4, 4]: [], [1], [4,1,1], [1,4,1,1], [1,1,1] */
    static const int64_t f1[1] = {1}, f3[3] = {4, 1, 1}, f4[4] = {1, 4, 1, 1}, f31[3] = {1, 1, 1};
    fires_every_op(L_CONV, 0, f1, "fold_scale_into_conv");
    fires_every_op(L_CONV, 1, f1, "fold_scale_into_conv");
    fires_every_op(L_CONV, 3, f3, "fold_scale_into_conv");
    fires_every_op(L_CONV, 4, f4, "fold_scale_into_conv");
    fires_every_op(L_CONV, 3, f31, "fold_scale_into_conv");
    /* 1-D Conv [2, 4, 4]: [4, 1] and [1, 4, 1] */
    static const int64_t g2[2] = {4, 1}, g3[3] = {1, 4, 1};
    fires_every_op(L_CONV1D, 2, g2, "fold_scale_into_conv");
    fires_every_op(L_CONV1D, 3, g3, "fold_scale_into_conv");
    /* ConvTranspose, groups 1 and 2 */
    for (int64_t g = 1; g <= 2; g++)
        for (int o = 0; o < 4; o++) {
            acfg = (after_cfg){.kind = L_CONVT, .op = all_ops[o], .krank = 4, .kdims = {1, 4, 1, 1}, .group = g,
                               .flags = F_BIAS};
            CHECK(check_pass(build_after, "fold_scale_into_conv", 1));
            acfg.flags = 0, acfg.krank = 3, acfg.kdims[0] = 4, acfg.kdims[1] = acfg.kdims[2] = 1;
            CHECK(check_pass(build_after, "fold_scale_into_conv", 1));
        }
    /* grouped Conv */
    acfg = (after_cfg){.kind = L_CONV, .op = "Mul", .krank = 4, .kdims = {1, 4, 1, 1}, .group = 2, .flags = F_BIAS};
    CHECK(check_pass(build_after, "fold_scale_into_conv", 1));
}

TEST(scale_into_conv_refuses) {
    /* shapes that are not per channel on [2, 4, 4, 4] (each a valid broadcast) */
    static const struct { int rank; int64_t d[5]; } bad[] = {
        {1, {4}},             /* runs along the last axis */
        {2, {4, 1}},          /* along H */
        {5, {1, 1, 1, 1, 1}}, /* grows the rank */
        {4, {2, 1, 1, 1}},    /* along the batch */
        {4, {1, 4, 4, 4}},    /* varies along H and W */
        {3, {1, 1, 4}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        for (int o = 0; o < 4; o++) {
            acfg = (after_cfg){.kind = L_CONV, .op = all_ops[o], .krank = bad[i].rank, .flags = F_BIAS};
            memcpy(acfg.kdims, bad[i].d, sizeof bad[i].d);
            if (!check_pass(build_after, "fold_scale_into_conv", 0)) fprintf(stderr, "  bad shape %zu, %s\n", i, all_ops[o]);
        }
    /* the refusals of the structure */
    static const unsigned flags[] = {F_SECOND_READER, F_NET_OUTPUT, F_K_INPUT, F_W_INPUT};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        for (int o = 0; o < 4; o++) {
            acfg = (after_cfg){.kind = L_CONV, .op = all_ops[o], .krank = 4, .kdims = {1, 4, 1, 1},
                               .flags = F_BIAS | flags[i]};
            if (!check_pass(build_after, "fold_scale_into_conv", 0)) fprintf(stderr, "  flags %u, %s\n", flags[i], all_ops[o]);
        }
    /* Div by a zero channel; k / y */
    acfg = (after_cfg){.kind = L_CONV, .op = "Div", .krank = 3, .kdims = {4, 1, 1}, .flags = F_BIAS | F_ZERO_K};
    CHECK(check_pass(build_after, "fold_scale_into_conv", 0));
    acfg.flags = F_BIAS | F_K_FIRST;
    CHECK(check_pass(build_after, "fold_scale_into_conv", 0));
    /* a Gemm is the other pass's */
    acfg = (after_cfg){.kind = L_GEMM, .op = "Mul", .krank = 1, .kdims = {5}};
    CHECK(check_pass(build_after, "fold_scale_into_conv", 0));
}

TEST(scale_into_conv_shared_weights) {
    /* the weights are copied: the second Conv keeps the old ones (the
     * harness compares its output too) */
    for (int o = 0; o < 4; o++) {
        acfg = (after_cfg){.kind = L_CONV, .op = all_ops[o], .krank = 3, .kdims = {4, 1, 1},
                           .flags = F_BIAS | F_SHARED_W};
        CHECK(check_pass(build_after, "fold_scale_into_conv", 1));
    }
}

/* Conv -> Mul [1,4,1,1] -> Add [4,1,1] -> Sub scalar -> Div [1] -> Relu */
static gwr_network *build_chain(void) {
    rng_state = 99;
    gwr_network *net = gwr_network_new("chain");
    const int64_t xd[4] = {1, 3, 5, 5}, wd[4] = {4, 3, 3, 3}, k4[4] = {1, 4, 1, 1}, k3[3] = {4, 1, 1}, k1 = 1;
    gwr_tensor *y = gwr_conv(net, input(net, "x", 4, xd), rconst(net, 4, wd, -1, 1), NULL, NULL);
    y = gwr_mul(net, y, rconst(net, 4, k4, 0.5, 2));
    y = gwr_add(net, rconst(net, 3, k3, -1, 1), y);
    y = gwr_sub(net, y, rconst(net, 0, NULL, -1, 1));
    y = gwr_div(net, y, rconst(net, 1, &k1, 2, 3));
    gwr_network_mark_output(net, gwr_relu(net, y));
    return net;
}

TEST(scale_into_conv_chain) {
    CHECK(check_pass(build_chain, "fold_scale_into_conv", 4));
    gwr_network *net = build_chain();
    CHECK_EQ_INT(run_pass(net, "fold_scale_into_conv", GWR_TARGET_ONNX), 4);
    gwr_network_prune(net, NULL);
    CHECK_EQ_INT(count_op(net, "Conv"), 1);
    CHECK_EQ_INT(count_op(net, "Mul") + count_op(net, "Add") + count_op(net, "Sub") + count_op(net, "Div"), 0);
    /* idempotent: nothing left to fold */
    CHECK_EQ_INT(run_pass(net, "fold_scale_into_conv", GWR_TARGET_ONNX), 0);
    gwr_network_free(net);
}

/* Conv -> Add 3 -> Clip(0, 6) -> Div 6 (the exporters' HardSigmoid) stays
 * for fuse_hard_swish; Conv -> Add 3 -> Relu folds. */
static int hsig_clip;
static gwr_network *build_hard_sigmoid(void) {
    rng_state = 77;
    gwr_network *net = gwr_network_new("hsig");
    const int64_t xd[4] = {1, 3, 5, 5}, wd[4] = {4, 3, 1, 1};
    gwr_tensor *y = gwr_conv(net, input(net, "x", 4, xd), rconst(net, 4, wd, -1, 1), NULL, NULL);
    y = gwr_add(net, y, gwr_constant_f32(net, 3));
    if (hsig_clip)
        y = gwr_div(net, gwr_clip(net, y, gwr_constant_f32(net, 0), gwr_constant_f32(net, 6)), gwr_constant_f32(net, 6));
    else
        y = gwr_relu(net, y);
    if (!y || gwr_network_mark_output(net, y)) return failed(net);
    return net;
}

TEST(scale_into_conv_leaves_hard_sigmoid) {
    hsig_clip = 1;
    CHECK(check_pass(build_hard_sigmoid, "fold_scale_into_conv", 0));
    hsig_clip = 0;
    CHECK(check_pass(build_hard_sigmoid, "fold_scale_into_conv", 1));
}

TEST(scale_into_gemm) {
    static const int64_t s1[1] = {1}, c5[1] = {5}, r15[2] = {1, 5};
    for (int tb = 0; tb < 2; tb++) {
        every_trans_b = tb;
        fires_every_op(L_GEMM, 0, s1, "fold_scale_into_gemm");
        fires_every_op(L_GEMM, 1, c5, "fold_scale_into_gemm");
        fires_every_op(L_GEMM, 2, r15, "fold_scale_into_gemm");
        acfg = (after_cfg){.kind = L_GEMM, .op = "Mul", .krank = 1, .kdims = {5}, .trans_b = tb, .flags = F_BIAS};
        CHECK(check_pass(build_after, "fold_scale_into_gemm", 1));
    }
    every_trans_b = 0;
    /* not per column: [3, 1] (per row), [3, 5], [1, 1, 5] (grows the rank);
     * C varying along M; a shared B is copied */
    static const struct { int rank; int64_t d[3]; } bad[] = {{2, {3, 1}}, {2, {3, 5}}, {3, {1, 1, 5}}};
    for (size_t i = 0; i < 3; i++) {
        acfg = (after_cfg){.kind = L_GEMM, .op = "Mul", .krank = bad[i].rank, .flags = F_BIAS};
        memcpy(acfg.kdims, bad[i].d, sizeof bad[i].d);
        CHECK(check_pass(build_after, "fold_scale_into_gemm", 0));
    }
    acfg = (after_cfg){.kind = L_GEMM, .op = "Add", .krank = 1, .kdims = {5}, .flags = F_C_PER_ROW};
    CHECK(check_pass(build_after, "fold_scale_into_gemm", 0));
    acfg.flags = F_BIAS | F_SHARED_W;
    CHECK(check_pass(build_after, "fold_scale_into_gemm", 1));
    acfg.flags = F_BIAS | F_SECOND_READER;
    CHECK(check_pass(build_after, "fold_scale_into_gemm", 0));
    acfg.op = "Div", acfg.flags = F_ZERO_K;
    CHECK(check_pass(build_after, "fold_scale_into_gemm", 0));
}

TEST(scale_into_matmul) {
    /* [2, 3, 5] after MatMul(x, W [4, 5]): Mul and Div by [5], [1,1,5], [] */
    static const struct { int rank; int64_t d[4]; } good[] = {{1, {5}}, {3, {1, 1, 5}}, {0, {1}}, {2, {1, 5}}};
    for (size_t i = 0; i < 4; i++)
        for (int o = 0; o < 2; o++) {
            acfg = (after_cfg){.kind = L_MATMUL, .op = all_ops[o], .krank = good[i].rank};
            memcpy(acfg.kdims, good[i].d, sizeof good[i].d);
            CHECK(check_pass(build_after, "fold_scale_into_gemm", 1));
        }
    /* Add and Sub are fuse_matmul_add's; [1,1,1,5] grows the rank, [3, 1] is per row */
    acfg = (after_cfg){.kind = L_MATMUL, .op = "Add", .krank = 1, .kdims = {5}};
    CHECK(check_pass(build_after, "fold_scale_into_gemm", 0));
    acfg.op = "Sub";
    CHECK(check_pass(build_after, "fold_scale_into_gemm", 0));
    acfg = (after_cfg){.kind = L_MATMUL, .op = "Mul", .krank = 4, .kdims = {1, 1, 1, 5}};
    CHECK(check_pass(build_after, "fold_scale_into_gemm", 0));
    acfg = (after_cfg){.kind = L_MATMUL, .op = "Mul", .krank = 2, .kdims = {3, 1}};
    CHECK(check_pass(build_after, "fold_scale_into_gemm", 0));
    acfg = (after_cfg){.kind = L_MATMUL, .op = "Mul", .krank = 1, .kdims = {5}, .flags = F_W_INPUT};
    CHECK(check_pass(build_after, "fold_scale_into_gemm", 0));
}

/* Gemm(a, B, C; alpha 0.7, beta 0.3) * k: the new C is beta * C * k in
 * double, rounded once. Expected bits from numpy:
 *   np.float32(np.float64(np.float32(0.3)) * np.float64(c) * np.float64(k))
 * for c = -1.42f, -0.79f, 0.1f and k = 2.87f, 1.63f, 0.9f, where the
 * float32 chain (beta * c) * k gives 0xbf9c7ecf and 0xbec5ca6e for the
 * first two (one bit off); B' = B * k per column likewise. */
static const uint32_t gemm_expect_c[3] = {0xbf9c7ed0u, 0xbec5ca6du, 0x3cdd2f1bu};
static const uint32_t gemm_expect_b[6] = {0x3e92f1aau, 0x3ea6e979u, 0x3e8a3d71u, 0x3f92f1aau, 0x3f50a3d7u, 0x3f0a3d71u};

static gwr_network *build_gemm_exact(void) {
    static const float bm[6] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f}, c[3] = {-1.42f, -0.79f, 0.1f},
                       k[3] = {2.87f, 1.63f, 0.9f};
    const int64_t ad[2] = {2, 2}, bd[2] = {2, 3}, n = 3;
    gwr_network *net = gwr_network_new("gemm_exact");
    gwr_tensor *y = gwr_gemm(net, input(net, "a", 2, ad), gwr_constant(net, GWR_FLOAT32, 2, bd, bm),
                             gwr_constant(net, GWR_FLOAT32, 1, &n, c), 0.7f, 0.3f, 0, 0);
    gwr_network_mark_output(net, gwr_mul(net, y, gwr_constant(net, GWR_FLOAT32, 1, &n, k)));
    return net;
}

TEST(scale_into_gemm_rounds_once) {
    CHECK(check_pass(build_gemm_exact, "fold_scale_into_gemm", 1));
    gwr_network *net = build_gemm_exact();
    CHECK_EQ_INT(run_pass(net, "fold_scale_into_gemm", GWR_TARGET_ONNX), 1);
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (gwr_layer_is_removed(l) || strcmp(gwr_layer_op(l), "Gemm")) continue;
        double v[6];
        int64_t nv = 0;
        float beta = 0;
        gwr_layer_attr_float(l, "beta", 1, &beta);
        CHECK(beta == 1.0f);
        CHECK(!gwr_match_const_f64(gwr_layer_input(l, 2), v, 6, &nv, NULL, NULL) && nv == 3);
        for (int j = 0; j < 3; j++) {
            float f = (float)v[j];
            uint32_t bits;
            memcpy(&bits, &f, 4);
            if (!CHECK_EQ_INT(bits, gemm_expect_c[j])) fprintf(stderr, "  C'[%d] = %.9g\n", j, f);
        }
        CHECK(!gwr_match_const_f64(gwr_layer_input(l, 1), v, 6, &nv, NULL, NULL) && nv == 6);
        for (int j = 0; j < 6; j++) {
            float f = (float)v[j];
            uint32_t bits;
            memcpy(&bits, &f, 4);
            if (!CHECK_EQ_INT(bits, gemm_expect_b[j])) fprintf(stderr, "  B'[%d] = %.9g\n", j, f);
        }
    }
    gwr_network_free(net);
}

/* ---- fold_scalar_around_matmul ---------------------------------------------------------- */

enum {
    S_GEMM = 1,          /* Gemm instead of MatMul */
    S_W_FIRST = 2,       /* the constant is the first operand */
    S_OUTPUT = 4,        /* the scale is on the output */
    S_DIV = 8,           /* Div instead of Mul */
    S_OTHER_INPUT = 16,  /* the other operand is a graph input (q @ k^T) */
    S_VECTOR = 32,       /* s is [4], not a scalar */
    S_SECOND_READER = 64, /* the scaled tensor is also a network output */
    S_ZERO = 128,        /* s is 0 */
    S_RANK = 256,        /* s is [1,1,1,1] on a rank-3 (rank-2 for Gemm) tensor */
    S_S_INPUT = 512,     /* s is a graph input */
    S_C = 1024,          /* Gemm reads a C [3, 5] */
};
static unsigned scfg;

/* MatMul: x [2, 3, 4] @ W [4, 5], or W [5, 3] @ x. Gemm: a [3, 4] and B
 * [4, 5], either constant, C [3, 5]. The scale s = 0.3 (or [4] of
 * 0.5.., or 0) on the non-constant input or on the output. */
static gwr_network *build_around(void) {
    rng_state = 31337;
    gwr_network *net = gwr_network_new("around");
    unsigned f = scfg;
    int gemm = f & S_GEMM, wfirst = f & S_W_FIRST;
    const int64_t x3[3] = {2, 3, 4}, x2[2] = {3, 4}, w45[2] = {4, 5}, w53[2] = {5, 3}, c35[2] = {3, 5}, one4[4] = {1, 1, 1, 1};
    const int64_t *xd = gemm ? (wfirst ? w45 : x2) : x3, *wd = gemm ? (wfirst ? x2 : w45) : (wfirst ? w53 : w45);
    int xr = gemm ? 2 : 3;
    gwr_tensor *x = input(net, "x", xr, xd);
    gwr_tensor *w = f & S_OTHER_INPUT ? input(net, "w", 2, wd) : rconst(net, 2, wd, -1, 1);
    gwr_tensor *s;
    int64_t four = 4;
    if (f & S_S_INPUT) s = input(net, "s", 0, NULL);
    else if (f & S_VECTOR) s = rconst(net, 1, &four, 0.5, 1.5);
    else if (f & S_RANK) s = gwr_constant(net, GWR_FLOAT32, 4, one4, (const float[]){0.3f});
    else s = gwr_constant_f32(net, f & S_ZERO ? 0.0f : 0.3f); /* not a power of 2: the fold rounds */
    const char *sop = f & S_DIV ? "Div" : "Mul";
    gwr_tensor *sx = x;
    if (!(f & S_OUTPUT)) sx = call(net, sop, 2, (gwr_tensor *const[]){x, s}, NULL);
    gwr_tensor *a = wfirst ? w : sx, *b = wfirst ? sx : w, *y;
    if (gemm) y = gwr_gemm(net, a, b, f & S_C ? rconst(net, 2, c35, -1, 1) : NULL, 0.5f, 0.75f, 0, 0);
    else y = gwr_matmul(net, a, b);
    gwr_tensor *z = f & S_OUTPUT ? call(net, sop, 2, (gwr_tensor *const[]){y, s}, NULL) : y;
    if (!z || gwr_network_mark_output(net, z)) return failed(net);
    if (f & S_SECOND_READER) gwr_network_mark_output(net, f & S_OUTPUT ? y : sx);
    return net;
}

/* MatMul(h * 0.5, W) with h = x * (1 + Erf(x / sqrt 2)) (gelu_tail) or
 * h = Relu(x); x [3, 4]. */
static int gelu_tail;
static gwr_network *build_gelu_matmul(void) {
    rng_state = 2718;
    gwr_network *net = gwr_network_new("gelu_mm");
    const int64_t xd[2] = {3, 4}, wd[2] = {4, 5};
    gwr_tensor *x = input(net, "x", 2, xd), *h;
    if (gelu_tail) {
        gwr_tensor *e = gwr_div(net, x, gwr_constant_f32(net, 1.4142135f));
        h = gwr_mul(net, x, gwr_add(net, call(net, "Erf", 1, &e, NULL), gwr_constant_f32(net, 1)));
    } else {
        h = gwr_relu(net, x);
    }
    gwr_tensor *y = gwr_matmul(net, gwr_mul(net, h, gwr_constant_f32(net, 0.5f)), rconst(net, 2, wd, -1, 1));
    if (!y || gwr_network_mark_output(net, y)) return failed(net);
    return net;
}

TEST(scalar_around_matmul) {
    for (unsigned f = 0; f < 16; f++) {
        scfg = f;
        if (!check_pass(build_around, "fold_scalar_around_matmul", 1)) fprintf(stderr, "  flags %u\n", f);
        if (f & S_GEMM) {
            scfg = f | S_C;
            if (!check_pass(build_around, "fold_scalar_around_matmul", 1)) fprintf(stderr, "  flags %u\n", scfg);
        }
    }
    static const unsigned refuse[] = {S_OTHER_INPUT, S_VECTOR, S_SECOND_READER, S_ZERO | S_DIV, S_RANK, S_S_INPUT,
                                      S_OUTPUT | S_OTHER_INPUT, S_OUTPUT | S_SECOND_READER, S_OUTPUT | S_RANK,
                                      S_GEMM | S_OTHER_INPUT, S_GEMM | S_VECTOR, S_GEMM | S_OUTPUT | S_ZERO | S_DIV};
    for (size_t i = 0; i < sizeof refuse / sizeof refuse[0]; i++) {
        scfg = refuse[i];
        if (!check_pass(build_around, "fold_scalar_around_matmul", 0)) fprintf(stderr, "  refuse flags %u\n", scfg);
    }
    /* GELU with its 0.5 last, then a MatMul: the 0.5 stays for fuse_gelu;
     * the same scale after a Relu folds */
    gelu_tail = 1;
    CHECK(check_pass(build_gelu_matmul, "fold_scalar_around_matmul", 0));
    gelu_tail = 0;
    CHECK(check_pass(build_gelu_matmul, "fold_scalar_around_matmul", 1));
    /* a Mul by 0 is folded (x*0 @ W and x @ 0*W are both 0, NaN for an
     * infinite x) */
    scfg = S_ZERO;
    CHECK(check_pass(build_around, "fold_scalar_around_matmul", 1));
}

/* ---- fold_pad_into_conv ------------------------------------------------------------- */

enum { P_INPUTS, P_ATTRS, P_AXES };
enum { R_CONV, R_AVG, R_AVG0, R_MAX };
typedef struct pad_cfg {
    int form, reader;
    int64_t pads[8];      /* begins then ends of the 4 axes (P_AXES: of axes 2, 3 in pads[0..3]) */
    float value;
    const char *mode;
    int second_reader, auto_pad, ceil_mode, value_input;
    int paddings;         /* P_ATTRS: opset 1's attribute name */
} pad_cfg;
static pad_cfg pcfg;

/* x [1, 2, 5, 5] -> Pad -> Conv (W [3, 2, 3, 3], pads [1, 0, 0, 1]) or
 * AveragePool / MaxPool (kernel 3x3, pads [1, 1, 0, 0]). */
static gwr_network *build_pad(void) {
    rng_state = 5150;
    gwr_network *net = gwr_network_new("pad");
    int64_t opset = pcfg.form == P_ATTRS ? (pcfg.paddings ? 1 : 10) : pcfg.form == P_AXES ? 18 : 13;
    if (gwr_network_set_opset(net, "", opset)) return net;
    const int64_t xd[4] = {1, 2, 5, 5}, wd[4] = {3, 2, 3, 3}, axes[2] = {-2, 3}, kern[2] = {3, 3};
    const int64_t cpads[4] = {1, 0, 0, 1}, ppads[4] = {1, 1, 0, 0};
    gwr_tensor *x = input(net, "x", 4, xd), *p = NULL;
    /* The opset-10 attribute form and the opset-18 axes input are what the
     * importer reads; gwr_op_call knows Pad's inputs of opset 13 only, so
     * the layer is added as it would be imported, its type set here. */
    gwr_tensor *in[4] = {x, NULL, NULL, NULL};
    int nin = 1;
    if (pcfg.form != P_ATTRS) {
        in[1] = ints(net, pcfg.form == P_AXES ? 4 : 8, pcfg.pads), nin = 2;
        if (pcfg.value != 0 || pcfg.value_input) in[2] = gwr_constant_f32(net, pcfg.value), nin = 3;
        if (pcfg.form == P_AXES) in[3] = ints(net, 2, axes), nin = 4;
    }
    gwr_layer *pl = gwr_network_add_layer(net, "Pad", "", NULL, nin, in, 1, NULL);
    if (!pl) return failed(net);
    if (pcfg.mode) gwr_layer_set_string(pl, "mode", pcfg.mode);
    if (pcfg.form == P_ATTRS) gwr_layer_set_ints(pl, pcfg.paddings ? "paddings" : "pads", pcfg.pads, 8);
    if (pcfg.form == P_ATTRS && pcfg.value != 0) gwr_layer_set_float(pl, "value", pcfg.value);
    gwr_dim pd[4];
    for (int i = 0; i < 4; i++) {
        int64_t lo = pcfg.pads[i], hi = pcfg.pads[i + 4];
        if (pcfg.form == P_AXES) lo = i < 2 ? 0 : pcfg.pads[i - 2], hi = i < 2 ? 0 : pcfg.pads[i];
        pd[i] = xd[i] + lo + hi;
    }
    p = gwr_layer_output(pl, 0);
    if (gwr_tensor_set_type(p, GWR_FLOAT32, 4, pd)) return failed(net);
    gwr_conv_params cp = {.nspatial = 2, .pads = pcfg.reader == R_CONV ? cpads : ppads, .kernel = kern,
                          .auto_pad = pcfg.auto_pad ? "SAME_UPPER" : NULL, .ceil_mode = pcfg.ceil_mode,
                          .count_include_pad = pcfg.reader == R_AVG};
    if (pcfg.auto_pad) cp.pads = NULL;
    gwr_tensor *y;
    if (pcfg.reader == R_CONV) y = gwr_conv(net, p, rconst(net, 4, wd, -1, 1), NULL, &cp);
    else if (pcfg.reader == R_MAX) y = gwr_max_pool(net, p, &cp);
    else y = gwr_avg_pool(net, p, &cp);
    if (!y || gwr_network_mark_output(net, y)) return failed(net);
    if (pcfg.second_reader) gwr_network_mark_output(net, gwr_relu(net, p));
    return net;
}

TEST(pad_into_conv) {
    static const pad_cfg fires[] = {
        {.form = P_INPUTS, .reader = R_CONV, .pads = {0, 0, 1, 2, 0, 0, 2, 1}},
        {.form = P_INPUTS, .reader = R_CONV, .pads = {0, 0, 1, 2, 0, 0, 2, 1}, .value_input = 1, .mode = "constant"},
        {.form = P_ATTRS, .reader = R_CONV, .pads = {0, 0, 1, 2, 0, 0, 2, 1}},
        {.form = P_ATTRS, .reader = R_CONV, .pads = {0, 0, 0, 1, 0, 0, 0, 0}, .mode = "constant"},
        {.form = P_ATTRS, .reader = R_CONV, .pads = {0, 0, 1, 2, 0, 0, 2, 1}, .paddings = 1},
        {.form = P_AXES, .reader = R_CONV, .pads = {1, 2, 2, 1}},
        {.form = P_INPUTS, .reader = R_AVG, .pads = {0, 0, 1, 1, 0, 0, 1, 1}},
        {.form = P_ATTRS, .reader = R_AVG, .pads = {0, 0, 0, 1, 0, 0, 2, 0}},
    };
    for (size_t i = 0; i < sizeof fires / sizeof fires[0]; i++) {
        pcfg = fires[i];
        if (!check_pass(build_pad, "fold_pad_into_conv", 1)) fprintf(stderr, "  firing case %zu\n", i);
    }
    /* the folded Conv reads x directly with pads [1+1, 0+2, 0+2, 1+1] */
    pcfg = fires[0];
    gwr_network *net = build_pad();
    CHECK_EQ_INT(run_pass(net, "fold_pad_into_conv", GWR_TARGET_ONNX), 1);
    gwr_network_prune(net, NULL);
    CHECK_EQ_INT(count_op(net, "Pad"), 0);
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (gwr_layer_is_removed(l) || strcmp(gwr_layer_op(l), "Conv")) continue;
        const int64_t *p = NULL;
        int64_t np = 0;
        CHECK(!gwr_layer_get_ints(l, "pads", &p, &np) && np == 4);
        CHECK(p && p[0] == 2 && p[1] == 2 && p[2] == 2 && p[3] == 2);
        CHECK(gwr_layer_input(l, 0) == gwr_network_input(net, 0));
    }
    gwr_network_free(net);
}

TEST(pad_into_conv_refuses) {
    static const pad_cfg idle[] = {
        {.form = P_INPUTS, .reader = R_AVG0, .pads = {0, 0, 1, 1, 0, 0, 1, 1}}, /* count_include_pad 0 */
        {.form = P_INPUTS, .reader = R_MAX, .pads = {0, 0, 1, 1, 0, 0, 1, 1}},
        {.form = P_INPUTS, .reader = R_MAX, .pads = {0, 0, 1, 1, 0, 0, 1, 1}, .value = -INFINITY},
        {.form = P_INPUTS, .reader = R_CONV, .pads = {0, 0, 1, 1, 0, 0, 1, 1}, .value = 1},
        {.form = P_ATTRS, .reader = R_CONV, .pads = {0, 0, 1, 1, 0, 0, 1, 1}, .value = 0.5f},
        {.form = P_INPUTS, .reader = R_AVG, .pads = {0, 1, 0, 0, 0, 1, 0, 0}}, /* the channel axis */
        {.form = P_INPUTS, .reader = R_CONV, .pads = {1, 0, 0, 0, 0, 0, 0, 0}}, /* the batch axis */
        {.form = P_INPUTS, .reader = R_CONV, .pads = {0, 0, -1, 1, 0, 0, 1, 1}}, /* a crop */
        {.form = P_INPUTS, .reader = R_CONV, .pads = {0, 0, 1, 1, 0, 0, 1, 1}, .mode = "reflect"},
        {.form = P_ATTRS, .reader = R_CONV, .pads = {0, 0, 1, 1, 0, 0, 1, 1}, .mode = "edge"},
        {.form = P_INPUTS, .reader = R_CONV, .pads = {0, 0, 1, 1, 0, 0, 1, 1}, .second_reader = 1},
        {.form = P_INPUTS, .reader = R_CONV, .pads = {0, 0, 1, 1, 0, 0, 1, 1}, .auto_pad = 1},
        {.form = P_INPUTS, .reader = R_AVG, .pads = {0, 0, 2, 0, 0, 0, 0, 0}},   /* pool pad 3 >= kernel 3 */
        {.form = P_INPUTS, .reader = R_AVG, .pads = {0, 0, 1, 0, 0, 0, 0, 0}, .ceil_mode = 1},
    };
    for (size_t i = 0; i < sizeof idle / sizeof idle[0]; i++) {
        pcfg = idle[i];
        if (!check_pass(build_pad, "fold_pad_into_conv", 0)) fprintf(stderr, "  idle case %zu\n", i);
    }
}

int main(void) {
    RUN(scale_into_conv_broadcast_forms);
    RUN(scale_into_conv_refuses);
    RUN(scale_into_conv_shared_weights);
    RUN(scale_into_conv_chain);
    RUN(scale_into_conv_leaves_hard_sigmoid);
    RUN(scale_into_gemm);
    RUN(scale_into_matmul);
    RUN(scale_into_gemm_rounds_once);
    RUN(scalar_around_matmul);
    RUN(pad_into_conv);
    RUN(pad_into_conv_refuses);
    fprintf(stderr, "worst differences: fold_scale_into_conv %g, fold_scale_into_gemm %g, "
                    "fold_scalar_around_matmul %g, fold_pad_into_conv %g\n",
            worst_conv, worst_gemm, worst_around, worst_pad);
    return check_report();
}
