/* test_norm.c - fuse_layer_norm and fuse_matmul_add through gwr_optimize
 * --only: each form where it must fire (and the ops left), where it must
 * not, and the outputs before (a gwr_network_clone) and after on seeded
 * random inputs, run by the executor, within the tolerance of the pass's
 * row. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "pass_test.h"

/* ---- fuse_layer_norm ------------------------------------------------------------ */

enum {
    LN_SQUARE = 1,       /* Mul(d, d) instead of Pow(d, 2) */
    LN_RECIP = 2,        /* d * Reciprocal(std) instead of d / std */
    LN_AXES_INPUT = 4,   /* opset 18: axes a constant input ([2], not [-1]) */
    LN_AFFINE = 8,       /* * gamma + beta */
    LN_GAMMA_ONLY = 16,  /* * gamma */
    LN_MEAN_READ = 32,   /* the mean is read by a Relu that is an output */
    LN_VAR_OUTPUT = 64,  /* the variance is a network output */
    LN_AXIS_1 = 128,     /* the ReduceMeans reduce axis 1, not the last */
    LN_GAMMA_INPUT = 256, /* gamma is a graph input */
    LN_OTHER_X = 512,    /* Sub reads another tensor than the mean's input */
    LN_NO_OPSET = 1024,  /* no opset set */
    LN_WIDE = 2048,      /* x [2, 1, 768] */
    LN_MIXED = 4096,     /* d / Reciprocal(std), or with LN_RECIP d * std: not a normalization */
};

/* ReduceMean(x) over one axis, keepdims 1: axes an attribute, or (opset 18)
 * a constant input, a form the op table's builders do not make. */
static gwr_tensor *reduce_mean(gwr_network *net, gwr_tensor *x, int64_t axis, int as_input) {
    if (!as_input) return gwr_reduce_mean(net, x, 1, &axis, 1);
    gwr_tensor *in[2] = {x, gwr_constant_i64s(net, 1, &axis)};
    gwr_layer *l = gwr_network_add_layer(net, "ReduceMean", "", NULL, 2, in, 1, NULL);
    if (!l || gwr_layer_set_int(l, "keepdims", 1) || gwr_layer_infer(l)) {
        fprintf(stderr, "ReduceMean: %s\n", gwr_network_errmsg(net));
        return NULL;
    }
    return gwr_layer_output(l, 0);
}

static gwr_tensor *op1(gwr_network *net, const char *name, gwr_tensor *x) {
    gwr_tensor *y = NULL;
    return gwr_op_call(net, "", name, 1, &x, NULL, 1, &y) ? y : NULL;
}

/* The exporters' LayerNormalization over x [2, 3, 8] at `opset`. */
static gwr_network *ln_model(unsigned f, int64_t opset) {
    rng_state = 4242;
    gwr_network *net = gwr_network_new("layer_norm");
    const int64_t c = f & LN_WIDE ? 768 : 8, xd[3] = {2, f & LN_WIDE ? 1 : 3, c};
    if (!(f & LN_NO_OPSET)) gwr_network_set_opset(net, "", f & LN_AXES_INPUT && opset < 18 ? 18 : opset);
    gwr_tensor *x = input(net, "x", 3, xd), *x2 = f & LN_OTHER_X ? input(net, "x2", 3, xd) : x;
    int as_in = !!(f & LN_AXES_INPUT);
    int64_t axis = f & LN_AXIS_1 ? 1 : as_in ? 2 : -1;
    gwr_tensor *mean = reduce_mean(net, x, axis, as_in);
    gwr_tensor *d = gwr_sub(net, x2, mean);
    gwr_tensor *sq = f & LN_SQUARE ? gwr_mul(net, d, d) : gwr_pow(net, d, gwr_constant_f32(net, 2));
    gwr_tensor *var = reduce_mean(net, sq, axis, as_in);
    gwr_tensor *sd = op1(net, "Sqrt", gwr_add(net, var, gwr_constant_f32(net, 1e-5f)));
    gwr_tensor *y;
    if (f & LN_MIXED) y = f & LN_RECIP ? gwr_mul(net, d, sd) : gwr_div(net, d, op1(net, "Reciprocal", sd));
    else y = f & LN_RECIP ? gwr_mul(net, d, op1(net, "Reciprocal", sd)) : gwr_div(net, d, sd);
    if (f & (LN_AFFINE | LN_GAMMA_ONLY | LN_GAMMA_INPUT)) {
        gwr_tensor *g = f & LN_GAMMA_INPUT ? input(net, "gamma", 1, &c) : rconst(net, 1, &c, 0.5, 1.5);
        y = f & LN_SQUARE ? gwr_mul(net, g, y) : gwr_mul(net, y, g);
    }
    if (f & LN_AFFINE) y = f & LN_RECIP ? gwr_add(net, rconst(net, 1, &c, -1, 1), y) : gwr_add(net, y, rconst(net, 1, &c, -1, 1));
    gwr_network_mark_output(net, y);
    if (f & LN_MEAN_READ) gwr_network_mark_output(net, gwr_relu(net, mean));
    if (f & LN_VAR_OUTPUT) gwr_network_mark_output(net, var);
    return net;
}

TEST(fuse_layer_norm_fires) {
    double worst = 0;
    static const unsigned affine[] = {0, LN_GAMMA_ONLY, LN_AFFINE};
    for (unsigned form = 0; form < 8; form++)
        for (int a = 0; a < 3; a++) {
            unsigned f = form | affine[a];
            gwr_network *net = ln_model(f, 17), *keep = gwr_network_clone(net);
            worst = fmax(worst, expect(net, "fuse_layer_norm", GWR_TARGET_ONNX, 1, 4));
            CHECK_EQ_INT(run_pass(keep, "fuse_layer_norm", GWR_TARGET_GWR), 1);
            CHECK_EQ_INT(count_op(keep, "LayerNormalization"), 1);
            CHECK_EQ_INT(count_op(keep, "ReduceMean") + count_op(keep, "Sub") + count_op(keep, "Pow") +
                             count_op(keep, "Sqrt") + count_op(keep, "Div") + count_op(keep, "Reciprocal") +
                             count_op(keep, "Mul") + count_op(keep, "Add"),
                         0);
            /* gamma and beta are the LayerNormalization's inputs; bias absent without beta */
            for (int64_t i = 0; i < gwr_network_num_layers(keep); i++) {
                gwr_layer *l = gwr_network_layer(keep, i);
                if (gwr_layer_is_removed(l) || strcmp(gwr_layer_op(l), "LayerNormalization")) continue;
                CHECK_EQ_INT(gwr_layer_num_inputs(l), a == 2 ? 3 : 2);
                int64_t axis = 0;
                gwr_layer_get_int(l, "axis", &axis);
                CHECK_EQ_INT(axis, -1);
            }
            CHECK_EQ_INT(run_pass(keep, "fuse_layer_norm", GWR_TARGET_ONNX), 0);
            gwr_network_free(keep);
        }
    /* no opset set: the API's networks get it */
    worst = fmax(worst, expect(ln_model(LN_NO_OPSET | LN_AFFINE, 0), "fuse_layer_norm", GWR_TARGET_ORT, 1, 4));
    /* a wider range: the normalized outputs do not grow with x */
    worst = fmax(worst, expect(ln_model(LN_AFFINE, 17), "fuse_layer_norm", GWR_TARGET_ONNX, 1, 100));
    /* a BERT-sized row: the chain's float32 sums over 768 values */
    worst = fmax(worst, expect(ln_model(LN_AFFINE | LN_WIDE, 17), "fuse_layer_norm", GWR_TARGET_ONNX, 1, 4));
    worst = fmax(worst, expect(ln_model(LN_RECIP | LN_SQUARE | LN_WIDE, 17), "fuse_layer_norm", GWR_TARGET_ONNX, 1, 100));
    fprintf(stderr, "fuse_layer_norm: worst difference %g\n", worst);
}

TEST(fuse_layer_norm_refuses) {
    static const unsigned cases[] = {LN_MEAN_READ, LN_VAR_OUTPUT, LN_AXIS_1, LN_OTHER_X, LN_AXIS_1 | LN_AXES_INPUT,
                                     LN_MEAN_READ | LN_RECIP | LN_AFFINE, LN_MIXED, LN_MIXED | LN_RECIP,
                                     LN_MIXED | LN_SQUARE | LN_AFFINE};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gwr_network *net = ln_model(cases[i], 17);
        CHECK_EQ_INT(run_pass(net, "fuse_layer_norm", GWR_TARGET_ONNX), 0);
        CHECK_EQ_INT(count_op(net, "LayerNormalization"), 0);
        gwr_network_free(net);
    }
    /* ONNX's opset 16 has no LayerNormalization: target onnx keeps the
     * chain; ort (onnxruntime registers its own from opset 1) and gwr fuse,
     * and the result runs on gwr's executor (expect compares it) */
    for (unsigned t = GWR_TARGET_ONNX; t <= GWR_TARGET_GWR; t <<= 1) {
        gwr_network *net = ln_model(LN_AFFINE, 16);
        if (t != GWR_TARGET_ONNX) { /* expect frees net */
            expect(net, "fuse_layer_norm", t, 1, 4);
            continue;
        }
        CHECK_EQ_INT(run_pass(net, "fuse_layer_norm", t), 0);
        gwr_network_free(net);
    }
    /* a non-constant gamma: the core fuses, the Mul by gamma stays */
    gwr_network *net = ln_model(LN_GAMMA_INPUT, 17), *keep = gwr_network_clone(net);
    expect(net, "fuse_layer_norm", GWR_TARGET_ONNX, 1, 4);
    CHECK_EQ_INT(run_pass(keep, "fuse_layer_norm", GWR_TARGET_ONNX), 1);
    CHECK_EQ_INT(count_op(keep, "Mul"), 1);
    CHECK_EQ_INT(count_op(keep, "LayerNormalization"), 1);
    gwr_network_free(keep);
}

/* ---- fuse_matmul_add ------------------------------------------------------------ */

enum {
    MA_CMN = 1,          /* C is [M, N], not [N] */
    MA_SWAP = 2,         /* Add(C, MatMul) */
    MA_RANK3 = 4,        /* a is [2, 3, 4] */
    MA_B_INPUT = 8,      /* B is a graph input */
    MA_C_BIG = 16,       /* C [2, 3, 5] broadcasts the result to a bigger shape */
    MA_SECOND_READER = 32, /* the MatMul's output is read by a Relu too */
    MA_C1N = 64,         /* C is [1, N] */
    MA_WIDE = 128,       /* a [3, 512], B [512, 64], C [64] */
};

static gwr_network *ma_model(unsigned f) {
    rng_state = 99;
    gwr_network *net = gwr_network_new("matmul_add");
    const int64_t a3[3] = {2, 3, 4}, a2[2] = {3, 4}, bd[2] = {4, 5}, n = 5, cmn[2] = {3, 5}, c1n[2] = {1, 5},
                  cbig[3] = {2, 3, 5};
    const int64_t aw[2] = {3, 512}, bw[2] = {512, 64}, nw = 64;
    gwr_tensor *a = f & MA_RANK3 ? input(net, "a", 3, a3) : input(net, "a", 2, f & MA_WIDE ? aw : a2);
    gwr_tensor *b = f & MA_B_INPUT ? input(net, "b", 2, bd) : rconst(net, 2, f & MA_WIDE ? bw : bd, -1, 1);
    gwr_tensor *c = f & MA_CMN ? rconst(net, 2, cmn, -1, 1)
                    : f & MA_C1N ? rconst(net, 2, c1n, -1, 1)
                    : f & MA_C_BIG ? rconst(net, 3, cbig, -1, 1)
                                   : rconst(net, 1, f & MA_WIDE ? &nw : &n, -1, 1);
    gwr_tensor *mm = gwr_matmul(net, a, b);
    gwr_network_mark_output(net, f & MA_SWAP ? gwr_add(net, c, mm) : gwr_add(net, mm, c));
    if (f & MA_SECOND_READER) gwr_network_mark_output(net, gwr_relu(net, mm));
    return net;
}

TEST(fuse_matmul_add_fires) {
    double worst = 0;
    static const unsigned cs[] = {0, MA_CMN, MA_C1N};
    for (int k = 0; k < 3; k++)
        for (unsigned swap = 0; swap <= MA_SWAP; swap += MA_SWAP) {
            gwr_network *net = ma_model(cs[k] | swap), *keep = gwr_network_clone(net);
            worst = fmax(worst, expect(net, "fuse_matmul_add", GWR_TARGET_ONNX, 1, 4));
            CHECK_EQ_INT(run_pass(keep, "fuse_matmul_add", GWR_TARGET_GWR), 1);
            CHECK_EQ_INT(count_op(keep, "Gemm"), 1);
            CHECK_EQ_INT(count_op(keep, "MatMul") + count_op(keep, "Add"), 0);
            CHECK_EQ_INT(run_pass(keep, "fuse_matmul_add", GWR_TARGET_GWR), 0);
            gwr_network_free(keep);
        }
    /* 512-term sums, inputs in [-4, 4) */
    worst = fmax(worst, expect(ma_model(MA_WIDE), "fuse_matmul_add", GWR_TARGET_ONNX, 1, 4));
    fprintf(stderr, "fuse_matmul_add: worst difference %g\n", worst);
}

TEST(fuse_matmul_add_refuses) {
    static const unsigned cases[] = {MA_RANK3, MA_B_INPUT, MA_C_BIG, MA_SECOND_READER, MA_RANK3 | MA_SWAP};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gwr_network *net = ma_model(cases[i]);
        CHECK_EQ_INT(run_pass(net, "fuse_matmul_add", GWR_TARGET_ONNX), 0);
        CHECK_EQ_INT(count_op(net, "Gemm"), 0);
        gwr_network_free(net);
    }
}

int main(void) {
    RUN(fuse_layer_norm_fires);
    RUN(fuse_layer_norm_refuses);
    RUN(fuse_matmul_add_fires);
    RUN(fuse_matmul_add_refuses);
    return check_report();
}
