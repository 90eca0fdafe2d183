/* test_fuse.c - the scale-folding and activation passes of the pass table
 * (fold_batchnorm, fuse_hard_swish) through gwr_optimize --only: where
 * each must fire (and the ops left), where it must not, and the outputs
 * before (a gwr_network_clone) and after on seeded random inputs, run by
 * the executor, within the tolerance of the pass's row. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "pass_test.h"

/* ---- fold_batchnorm ------------------------------------------------------------- */

enum {
    BN_BIAS = 1,         /* the producer has a bias */
    BN_SECOND_READER = 2, /* the producer's output is read by a Relu too */
    BN_NET_OUTPUT = 4,   /* the producer's output is a network output */
    BN_INPUT_SCALE = 8,  /* the BN's scale is a graph input, not a constant */
    BN_TRAINING = 16,    /* training_mode 1 */
    BN_SHARED_W = 32,    /* a second Conv reads the same weights */
    BN_CONVT = 64,       /* ConvTranspose instead of Conv */
    BN_INPUT_MEAN = 128, /* the mean is a graph input */
};

/* BN(Conv(x, W, B)) over x [2, 4, 5, 5], 6 output channels, group g. */
static gwr_network *conv_bn(unsigned flags, int64_t group) {
    rng_state = 12345;
    gwr_network *net = gwr_network_new("conv_bn");
    const int64_t xd[4] = {2, 4, 5, 5}, cout = 6, cin = 4;
    gwr_tensor *x = input(net, "x", 4, xd);
    int64_t wd[4] = {cout, cin / group, 3, 3};
    if (flags & BN_CONVT) wd[0] = cin, wd[1] = cout / group;
    gwr_tensor *w = rconst(net, 4, wd, -0.5, 0.5);
    gwr_tensor *b = flags & BN_BIAS ? rconst(net, 1, &cout, -1, 1) : NULL;
    const int64_t pads[4] = {1, 1, 1, 1};
    gwr_conv_params p = {.nspatial = 2, .pads = pads, .group = group};
    gwr_tensor *y = flags & BN_CONVT ? gwr_conv_transpose(net, x, w, b, &p) : gwr_conv(net, x, w, b, &p);
    gwr_tensor *gamma = flags & BN_INPUT_SCALE ? input(net, "gamma", 1, &cout) : rconst(net, 1, &cout, 0.5, 1.5);
    gwr_tensor *beta = rconst(net, 1, &cout, -1, 1);
    gwr_tensor *mean = flags & BN_INPUT_MEAN ? input(net, "mean", 1, &cout) : rconst(net, 1, &cout, -1, 1);
    gwr_tensor *var = rconst(net, 1, &cout, 0.1, 2);
    gwr_tensor *z = gwr_batch_norm(net, y, gamma, beta, mean, var, 1e-5f);
    if (!z) return net;
    if (flags & BN_TRAINING) gwr_layer_set_int(gwr_tensor_parent(z), "training_mode", 1);
    gwr_network_mark_output(net, gwr_relu(net, z));
    if (flags & BN_SECOND_READER) gwr_network_mark_output(net, gwr_relu(net, y));
    if (flags & BN_NET_OUTPUT) gwr_network_mark_output(net, y);
    if (flags & BN_SHARED_W) gwr_network_mark_output(net, gwr_conv(net, x, w, NULL, &p));
    return net;
}

TEST(fold_batchnorm_conv) {
    double worst = 0;
    for (int64_t g = 1; g <= 2; g++)
        for (unsigned bias = 0; bias <= BN_BIAS; bias++) {
            gwr_network *net = conv_bn(bias, g);
            gwr_network *keep = gwr_network_clone(net);
            worst = fmax(worst, expect(net, "fold_batchnorm", GWR_TARGET_ONNX, 1, 2));
            CHECK_EQ_INT(run_pass(keep, "fold_batchnorm", GWR_TARGET_ONNX), 1);
            CHECK_EQ_INT(count_op(keep, "BatchNormalization"), 0);
            CHECK_EQ_INT(count_op(keep, "Conv"), 1);
            /* the new Conv keeps its group and reads a bias */
            for (int64_t i = 0; i < gwr_network_num_layers(keep); i++) {
                gwr_layer *l = gwr_network_layer(keep, i);
                if (gwr_layer_is_removed(l) || strcmp(gwr_layer_op(l), "Conv")) continue;
                int64_t gg = 1;
                gwr_layer_get_int(l, "group", &gg);
                CHECK_EQ_INT(gg, g);
                CHECK_EQ_INT(gwr_layer_num_inputs(l), 3);
            }
            /* a second run finds nothing */
            CHECK_EQ_INT(run_pass(keep, "fold_batchnorm", GWR_TARGET_ONNX), 0);
            gwr_network_free(keep);
        }
    /* shared weights: the pass builds new constants, the other Conv keeps the old ones */
    gwr_network *net = conv_bn(BN_BIAS | BN_SHARED_W, 1);
    worst = fmax(worst, expect(net, "fold_batchnorm", GWR_TARGET_GWR, 1, 2));
    fprintf(stderr, "fold_batchnorm Conv: worst difference %g\n", worst);
}

TEST(fold_batchnorm_conv_transpose) {
    double worst = 0;
    for (int64_t g = 1; g <= 2; g++)
        for (unsigned bias = 0; bias <= BN_BIAS; bias++) {
            gwr_network *net = conv_bn(BN_CONVT | bias, g);
            gwr_network *keep = gwr_network_clone(net);
            worst = fmax(worst, expect(net, "fold_batchnorm", GWR_TARGET_ONNX, 1, 2));
            CHECK_EQ_INT(run_pass(keep, "fold_batchnorm", GWR_TARGET_ORT), 1);
            CHECK_EQ_INT(count_op(keep, "BatchNormalization"), 0);
            CHECK_EQ_INT(count_op(keep, "ConvTranspose"), 1);
            gwr_network_free(keep);
        }
    fprintf(stderr, "fold_batchnorm ConvTranspose: worst difference %g\n", worst);
}

TEST(fold_batchnorm_refuses) {
    static const unsigned cases[] = {BN_BIAS | BN_SECOND_READER, BN_BIAS | BN_NET_OUTPUT, BN_INPUT_SCALE,
                                     BN_INPUT_MEAN, BN_TRAINING, BN_CONVT | BN_SECOND_READER,
                                     BN_CONVT | BN_INPUT_SCALE};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gwr_network *net = conv_bn(cases[i], 2);
        CHECK_EQ_INT(run_pass(net, "fold_batchnorm", GWR_TARGET_ONNX), 0);
        CHECK_EQ_INT(count_op(net, "BatchNormalization"), 1);
        gwr_network_free(net);
    }
    /* a BN whose running statistics are read (training outputs) */
    gwr_network *net = gwr_network_new("bn3");
    const int64_t xd[4] = {1, 2, 3, 3}, c = 2, wd[4] = {2, 2, 1, 1};
    gwr_tensor *x = input(net, "x", 4, xd);
    gwr_tensor *y = gwr_conv(net, x, rconst(net, 4, wd, -1, 1), NULL, NULL);
    gwr_tensor *in[5] = {y, rconst(net, 1, &c, 1, 2), rconst(net, 1, &c, 0, 1), rconst(net, 1, &c, 0, 1),
                         rconst(net, 1, &c, 1, 2)}, *outs[3];
    if (CHECK(gwr_op_call(net, "", "BatchNormalization", 5, in, NULL, 3, outs) != NULL)) {
        gwr_network_mark_output(net, outs[0]);
        gwr_network_mark_output(net, outs[1]);
        CHECK_EQ_INT(run_pass(net, "fold_batchnorm", GWR_TARGET_ONNX), 0);
    }
    gwr_network_free(net);
}

/* BN(Gemm(a, B, C)) or BN(MatMul(a, W)); a [3, 4] (or [2, 5, 4]), 5 columns. */
static gwr_network *gemm_bn(int matmul, int trans_b, int with_c, int rank3) {
    rng_state = 777;
    gwr_network *net = gwr_network_new("gemm_bn");
    const int64_t ad[3] = {2, 5, 4}, a2[2] = {3, 4}, n = 5;
    gwr_tensor *a = rank3 ? input(net, "a", 3, ad) : input(net, "a", 2, a2);
    int64_t bd[2] = {trans_b ? 5 : 4, trans_b ? 4 : 5};
    gwr_tensor *bt = rconst(net, 2, bd, -1, 1), *y;
    if (matmul) y = gwr_matmul(net, a, bt);
    else y = gwr_gemm(net, a, bt, with_c ? rconst(net, 1, &n, -1, 1) : NULL, 0.7f, 0.3f, 0, trans_b);
    gwr_tensor *z = gwr_batch_norm(net, y, rconst(net, 1, &n, 0.5, 1.5), rconst(net, 1, &n, -1, 1),
                                   rconst(net, 1, &n, -1, 1), rconst(net, 1, &n, 0.1, 2), 1e-3f);
    gwr_network_mark_output(net, z);
    return net;
}

TEST(fold_batchnorm_gemm_matmul) {
    double worst = 0;
    for (int tb = 0; tb < 2; tb++)
        for (int wc = 0; wc < 2; wc++) {
            gwr_network *net = gemm_bn(0, tb, wc, 0), *keep = gwr_network_clone(net);
            worst = fmax(worst, expect(net, "fold_batchnorm", GWR_TARGET_ONNX, 1, 2));
            CHECK_EQ_INT(run_pass(keep, "fold_batchnorm", GWR_TARGET_ONNX), 1);
            CHECK_EQ_INT(count_op(keep, "BatchNormalization"), 0);
            CHECK_EQ_INT(count_op(keep, "Gemm"), 1);
            gwr_network_free(keep);
        }
    gwr_network *net = gemm_bn(1, 0, 0, 0), *keep = gwr_network_clone(net);
    worst = fmax(worst, expect(net, "fold_batchnorm", GWR_TARGET_ONNX, 1, 2));
    CHECK_EQ_INT(run_pass(keep, "fold_batchnorm", GWR_TARGET_ONNX), 1);
    CHECK_EQ_INT(count_op(keep, "MatMul") + count_op(keep, "BatchNormalization"), 0);
    CHECK_EQ_INT(count_op(keep, "Gemm"), 1);
    gwr_network_free(keep);
    /* rank 3: BN's channel axis 1 is not the MatMul's last axis */
    net = gemm_bn(1, 0, 0, 1);
    CHECK_EQ_INT(run_pass(net, "fold_batchnorm", GWR_TARGET_ONNX), 0);
    gwr_network_free(net);
    fprintf(stderr, "fold_batchnorm Gemm/MatMul: worst difference %g\n", worst);
}


/* ---- fuse_hard_swish ------------------------------------------------------------ */

enum { HS_DIV, HS_MUL, HS_HSIG, HS_INNER, HS_SIG_ONLY };
typedef struct hs_case {
    int form, swap, clip_attrs;
    double k3, hi, sixth, alpha; /* 0: the right value */
    int other_x;                 /* the Mul reads y, not x */
    int64_t opset;               /* 0: none set */
} hs_case;

static gwr_tensor *kf(gwr_network *net, double v) { return gwr_constant_f32(net, (float)v); }

static gwr_tensor *clip06(gwr_network *net, gwr_tensor *a, const hs_case *c) {
    double hi = c->hi ? c->hi : 6;
    if (!c->clip_attrs) return gwr_clip(net, a, kf(net, 0), kf(net, hi));
    gwr_args *args = gwr_args_new();
    gwr_tensor *y = NULL;
    gwr_args_set_float(args, "min", 0);
    gwr_args_set_float(args, "max", hi);
    gwr_op_call(net, "", "Clip", 1, &a, args, 1, &y);
    gwr_args_free(args);
    return y;
}

static gwr_network *hs_model(const hs_case *c) {
    gwr_network *net = gwr_network_new("hswish");
    const int64_t d[2] = {4, 8};
    gwr_tensor *x = input(net, "x", 2, d), *y = c->other_x ? input(net, "y", 2, d) : x;
    gwr_tensor *k3 = kf(net, c->k3 ? c->k3 : 3), *m = c->other_x ? y : x, *out;
    double sixth = c->sixth ? c->sixth : 1.0 / 6;
    if (c->opset) gwr_network_set_opset(net, "", c->opset);
    if (c->form == HS_HSIG) {
        gwr_args *args = gwr_args_new();
        gwr_tensor *h = NULL;
        gwr_args_set_float(args, "alpha", c->alpha ? c->alpha : 1.0 / 6);
        gwr_args_set_float(args, "beta", 0.5);
        gwr_op_call(net, "", "HardSigmoid", 1, &x, args, 1, &h);
        gwr_args_free(args);
        out = c->swap ? gwr_mul(net, h, m) : gwr_mul(net, m, h);
    } else {
        gwr_tensor *clip = clip06(net, c->swap ? gwr_add(net, k3, x) : gwr_add(net, x, k3), c);
        gwr_tensor *xc = c->form > HS_MUL ? NULL : c->swap ? gwr_mul(net, clip, m) : gwr_mul(net, m, clip);
        switch (c->form) {
        case HS_DIV: out = gwr_div(net, xc, kf(net, 6)); break;
        case HS_MUL: out = c->swap ? gwr_mul(net, kf(net, sixth), xc) : gwr_mul(net, xc, kf(net, sixth)); break;
        case HS_INNER: out = gwr_mul(net, m, gwr_div(net, clip, kf(net, 6))); break;
        default: out = c->swap ? gwr_mul(net, kf(net, sixth), clip) : gwr_div(net, clip, kf(net, 6)); break;
        }
    }
    gwr_network_mark_output(net, gwr_relu(net, out));
    gwr_network_mark_output(net, out);
    return net;
}

TEST(fuse_hard_swish_fires) {
    double worst = 0;
    for (int form = HS_DIV; form <= HS_INNER; form++)
        for (int swap = 0; swap < 2; swap++) {
            hs_case c = {.form = form, .swap = swap, .opset = swap ? 0 : 14}; /* opset 14, or none set */
            gwr_network *net = hs_model(&c), *keep = gwr_network_clone(net);
            worst = fmax(worst, expect(net, "fuse_hard_swish", GWR_TARGET_ONNX, form == HS_INNER ? 2 : 1, 8));
            CHECK(run_pass(keep, "fuse_hard_swish", GWR_TARGET_GWR) >= 1);
            CHECK_EQ_INT(count_op(keep, "HardSwish"), 1);
            CHECK_EQ_INT(count_op(keep, "Clip") + count_op(keep, "Div") + count_op(keep, "Add") +
                             count_op(keep, "HardSigmoid") + count_op(keep, "Mul"),
                         0);
            gwr_network_free(keep);
        }
    fprintf(stderr, "fuse_hard_swish: worst difference %g\n", worst);
    /* 1/6 a little off, within 1e-6 relative: outputs up to 8 then differ by up to 8e-6 */
    hs_case c = {.form = HS_MUL, .sixth = 1.0 / 6 * (1 + 5e-7)};
    worst = expect(hs_model(&c), "fuse_hard_swish", GWR_TARGET_ORT, 1, 8);
    fprintf(stderr, "fuse_hard_swish, 1/6 * (1 + 5e-7): worst difference %g\n", worst);
}

TEST(fuse_hard_sigmoid) {
    double worst = 0;
    for (int swap = 0; swap < 2; swap++)
        for (int attrs = 0; attrs < 2; attrs++) {
            hs_case c = {.form = HS_SIG_ONLY, .swap = swap, .clip_attrs = attrs, .opset = attrs ? 10 : 0};
            gwr_network *net = hs_model(&c), *keep = gwr_network_clone(net);
            worst = fmax(worst, expect(net, "fuse_hard_swish", GWR_TARGET_ONNX, 1, 8));
            CHECK_EQ_INT(run_pass(keep, "fuse_hard_swish", GWR_TARGET_ONNX), 1);
            CHECK_EQ_INT(count_op(keep, "HardSigmoid"), 1);
            CHECK_EQ_INT(count_op(keep, "Clip") + count_op(keep, "Div") + count_op(keep, "Mul"), 0);
            gwr_network_free(keep);
        }
    /* opset 13, and opset 10 with Clip's attributes: no HardSwish, but x * (Clip(x+3,0,6)/6) gets its
     * HardSigmoid */
    for (int attrs = 0; attrs < 2; attrs++) {
        hs_case c = {.form = HS_INNER, .clip_attrs = attrs, .opset = attrs ? 10 : 13};
        gwr_network *net = hs_model(&c), *keep = gwr_network_clone(net);
        worst = fmax(worst, expect(net, "fuse_hard_swish", GWR_TARGET_ONNX, 1, 8));
        CHECK_EQ_INT(run_pass(keep, "fuse_hard_swish", GWR_TARGET_ONNX), 1);
        CHECK_EQ_INT(count_op(keep, "HardSigmoid"), 1);
        CHECK_EQ_INT(count_op(keep, "HardSwish") + count_op(keep, "Clip"), 0);
        gwr_network_free(keep);
    }
    fprintf(stderr, "fuse_hard_swish (HardSigmoid): worst difference %g\n", worst);
}

/* Below opset 14 (PaddleOCR's exports are opset 11 and 12): targets onnx and
 * ort get HardSwish's own definition, x * HardSigmoid(x; 1/6, 0.5), which
 * the opset has; target gwr gets HardSwish, which its executor runs at any
 * opset. */
TEST(fuse_hard_swish_old_opset) {
    double worst = 0;
    static const unsigned targets[] = {GWR_TARGET_ONNX, GWR_TARGET_ORT};
    for (int form = HS_DIV; form <= HS_MUL; form++)
        for (int t = 0; t < 2; t++) {
            hs_case c = {.form = form, .swap = t, .opset = t ? 11 : 13};
            gwr_network *net = hs_model(&c), *keep = gwr_network_clone(net), *own = gwr_network_clone(net);
            worst = fmax(worst, expect(net, "fuse_hard_swish", targets[t], 1, 8));
            CHECK_EQ_INT(run_pass(keep, "fuse_hard_swish", targets[t]), 1);
            CHECK_EQ_INT(count_op(keep, "HardSigmoid"), 1);
            CHECK_EQ_INT(count_op(keep, "Mul"), 1);
            CHECK_EQ_INT(count_op(keep, "HardSwish") + count_op(keep, "Clip") + count_op(keep, "Div") +
                             count_op(keep, "Add"),
                         0);
            /* a second run finds nothing: x * HardSigmoid(x) is as far as it goes */
            CHECK_EQ_INT(run_pass(keep, "fuse_hard_swish", targets[t]), 0);
            CHECK_EQ_INT(run_pass(own, "fuse_hard_swish", GWR_TARGET_GWR), 1);
            CHECK_EQ_INT(count_op(own, "HardSwish"), 1);
            CHECK_EQ_INT(count_op(own, "HardSigmoid") + count_op(own, "Mul"), 0);
            gwr_network_free(keep);
            gwr_network_free(own);
        }
    /* opset 13's x * HardSigmoid(x): HardSwish for gwr only */
    hs_case c = {.form = HS_HSIG, .opset = 13};
    gwr_network *net = hs_model(&c);
    CHECK_EQ_INT(run_pass(net, "fuse_hard_swish", GWR_TARGET_ORT), 0);
    CHECK_EQ_INT(run_pass(net, "fuse_hard_swish", GWR_TARGET_GWR), 1);
    CHECK_EQ_INT(count_op(net, "HardSwish"), 1);
    gwr_network_free(net);
    fprintf(stderr, "fuse_hard_swish below opset 14: worst difference %g\n", worst);
}

TEST(fuse_hard_swish_refuses) {
    const hs_case cases[] = {
        {.form = HS_HSIG, .alpha = 0.2},          /* PyTorch's other HardSigmoid */
        {.form = HS_DIV, .hi = 5},                /* Clip(x+3, 0, 5) */
        {.form = HS_SIG_ONLY, .clip_attrs = 1, .hi = 5, .opset = 10},
        {.form = HS_SIG_ONLY, .hi = 5},
        {.form = HS_DIV, .clip_attrs = 1, .opset = 10},  /* an opset-10 model has no HardSwish */
        {.form = HS_SIG_ONLY, .clip_attrs = 1},          /* no opset: Clip's attributes are not its bounds */
        {.form = HS_DIV, .k3 = 2},                /* x + 2 */
        {.form = HS_DIV, .other_x = 1},           /* y * Clip(x+3,0,6) / 6 */
        {.form = HS_HSIG, .other_x = 1},          /* y * HardSigmoid(x) */
        {.form = HS_HSIG, .opset = 13},           /* no HardSwish before opset 14: already x * HardSigmoid(x) */
        {.form = HS_MUL, .sixth = 0.17},          /* not 1/6 */
        {.form = HS_MUL, .sixth = 1.0 / 6 * (1 + 3e-6)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gwr_network *net = hs_model(&cases[i]);
        int64_t sig = count_op(net, "HardSigmoid");
        CHECK_EQ_INT(run_pass(net, "fuse_hard_swish", GWR_TARGET_ONNX), 0);
        CHECK_EQ_INT(count_op(net, "HardSwish"), 0);
        CHECK_EQ_INT(count_op(net, "HardSigmoid"), sig);
        gwr_network_free(net);
    }
    /* opset 13 has no HardSwish: target ort (onnxruntime has none of its
     * own before 14) makes no HardSwish (x * HardSigmoid(x) instead, see
     * fuse_hard_swish_old_opset); target gwr fuses (gwr's kernel runs it at
     * every opset; expect runs both on the executor) */
    for (int form = HS_DIV; form <= HS_MUL; form++) {
        hs_case c13 = {.form = form, .opset = 13};
        gwr_network *n13 = hs_model(&c13);
        CHECK_EQ_INT(run_pass(n13, "fuse_hard_swish", GWR_TARGET_ORT), 1);
        CHECK_EQ_INT(count_op(n13, "HardSwish"), 0);
        gwr_network_free(n13);
        expect(hs_model(&c13), "fuse_hard_swish", GWR_TARGET_GWR, 1, 8);
    }
    /* an intermediate read outside the chain */
    hs_case c = {.form = HS_DIV};
    gwr_network *net = hs_model(&c);
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++)
        if (!strcmp(gwr_layer_op(gwr_network_layer(net, i)), "Clip"))
            gwr_network_mark_output(net, gwr_layer_output(gwr_network_layer(net, i), 0));
    CHECK_EQ_INT(run_pass(net, "fuse_hard_swish", GWR_TARGET_ONNX), 0);
    gwr_network_free(net);
    /* a splat 6 that broadcasts x [4, 8] to [1, 4, 8]: the result's shape is not x's */
    net = gwr_network_new("bcast");
    const int64_t d[2] = {4, 8}, d3[3] = {1, 1, 1};
    static const float six = 6;
    gwr_tensor *x = input(net, "x", 2, d);
    gwr_tensor *xc = gwr_mul(net, x, gwr_clip(net, gwr_add(net, x, kf(net, 3)), kf(net, 0), kf(net, 6)));
    gwr_network_mark_output(net, gwr_div(net, xc, gwr_constant(net, GWR_FLOAT32, 3, d3, &six)));
    CHECK_EQ_INT(run_pass(net, "fuse_hard_swish", GWR_TARGET_ONNX), 0);
    gwr_network_free(net);
}

int main(void) {
    RUN(fold_batchnorm_conv);
    RUN(fold_batchnorm_conv_transpose);
    RUN(fold_batchnorm_refuses);
    RUN(fold_batchnorm_gemm_matmul);
    RUN(fuse_hard_swish_fires);
    RUN(fuse_hard_sigmoid);
    RUN(fuse_hard_swish_old_opset);
    RUN(fuse_hard_swish_refuses);
    return check_report();
}
