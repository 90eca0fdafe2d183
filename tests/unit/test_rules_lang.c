/* test_rules_lang.c - one case per feature of the .rules language
 * (docs/rules.md): op alternatives and sub-pattern alternatives, attribute
 * captures with defaults, where clauses, constraints, absent and variadic
 * inputs, <...n> copies, eliminations, constant arithmetic computed at
 * rewrite time (BatchNormalization folded into a Conv's weights, checked
 * against arithmetic done by hand here), and the target/opset gate. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "rules_util.h"

/* A layer of op over inputs, types inferred. */
static gwr_tensor *op(gwr_network *net, const char *name, int n, gwr_tensor *const *in) {
    gwr_layer *l = gwr_network_add_layer(net, name, "", NULL, n, in, 1, NULL);
    if (!l || gwr_layer_infer(l)) return NULL;
    return gwr_layer_output(l, 0);
}

static gwr_network *new_net(gwr_tensor **x, int rank, const gwr_dim *dims, gwr_dtype dt) {
    gwr_network *net = gwr_network_new("t");
    gwr_network_set_opset(net, "", 17);
    *x = gwr_network_add_input(net, "x", dt, rank, dims);
    return net;
}

static const float XS[12] = {-2.5f, -1, -0.25f, 0, 0.5f, 1, 1.75f, 3, -4, 2, 0.125f, -0.5f};

/* Runs net on XS (shape dims) before and after applying text: the rewrite
 * count, the outputs equal within tol. */
static int64_t apply_same(gwr_network *net, int rank, const int64_t *dims, const char *text, double tol) {
    float before[64], after[64];
    int64_t n = rt_run(net, rank, dims, XS, before, 64);
    int64_t k = rt_apply(net, text);
    CHECK_EQ_INT(rt_run(net, rank, dims, XS, after, 64), n);
    for (int64_t i = 0; i < n && i < 64; i++)
        if (!CHECK(fabs(before[i] - after[i]) <= tol)) break;
    return k;
}

TEST(op_alternatives) {
    const char *r = "rule relu_idem:\n  Relu|Abs(Relu(x)) => Relu(x)\n";
    for (int k = 0; k < 3; k++) {
        gwr_tensor *x;
        gwr_dim d[1] = {12};
        gwr_network *net = new_net(&x, 1, d, GWR_FLOAT32);
        gwr_tensor *y = gwr_relu(net, x);
        y = k == 0 ? gwr_relu(net, y) : k == 1 ? op(net, "Abs", 1, &y) : gwr_sigmoid(net, y);
        gwr_network_mark_output(net, y);
        int64_t dims[1] = {12};
        CHECK_EQ_INT(apply_same(net, 1, dims, r, 0), k < 2 ? 1 : 0);
        CHECK_EQ_INT(rt_count(net, NULL), k < 2 ? 1 : 2);
        gwr_network_free(net);
    }
}

TEST(pattern_alternatives) {
    const char *r = "rule to_neg:\n  (Mul(x, -1.0) | Div(x, -1)) => Neg(x)\n";
    for (int k = 0; k < 3; k++) {
        gwr_tensor *x;
        gwr_dim d[1] = {12};
        gwr_network *net = new_net(&x, 1, d, GWR_FLOAT32);
        gwr_tensor *m1 = gwr_constant_f32(net, k == 2 ? -2.0f : -1.0f);
        gwr_tensor *y = k == 1 ? gwr_div(net, x, m1) : gwr_mul(net, m1, x);
        gwr_network_mark_output(net, y);
        int64_t dims[1] = {12};
        CHECK_EQ_INT(apply_same(net, 1, dims, r, 0), k < 2 ? 1 : 0);
        CHECK_EQ_INT(rt_count(net, "Neg"), k < 2 ? 1 : 0);
        gwr_network_free(net);
    }
}

/* Flatten(x) with axis 1 (given, or absent: the default) of a rank-2 x is x. */
TEST(attribute_capture_default_and_where) {
    const char *r = "rule drop_flatten:\n  Flatten<axis=a default 1>(x) => x\n  where rank(x) == 2\n  where a == 1\n";
    for (int k = 0; k < 3; k++) { /* axis absent, axis 1, axis 0 */
        gwr_tensor *x;
        gwr_dim d[2] = {3, 4};
        gwr_network *net = new_net(&x, 2, d, GWR_FLOAT32);
        gwr_layer *l = gwr_network_add_layer(net, "Flatten", "", NULL, 1, &x, 1, NULL);
        if (k) gwr_layer_set_int(l, "axis", k == 1 ? 1 : 0);
        gwr_layer_infer(l);
        gwr_network_mark_output(net, gwr_relu(net, gwr_layer_output(l, 0)));
        int64_t dims[2] = {3, 4};
        CHECK_EQ_INT(apply_same(net, 2, dims, r, 0), k < 2 ? 1 : 0);
        CHECK_EQ_INT(rt_count(net, "Flatten"), k < 2 ? 0 : 1);
        gwr_network_free(net);
    }
}

TEST(constraints) {
    static const char *const rules[] = {
        "rule a: Neg(Neg(x: f16)) => x",           /* float32 x: no */
        "rule a: Neg(Neg(x: float rank 1..2)) => x", /* yes */
        "rule a: Neg(Neg(x: f32 rank 3)) => x",      /* no */
        "rule a: Neg(Neg(x: f32 shape [N])) => x where N == 12", /* yes */
        "rule a: Neg(Neg(x: shape [_, _])) => x",    /* no: rank 1 */
    };
    static const int fires[] = {0, 1, 0, 1, 0};
    for (int k = 0; k < 5; k++) {
        gwr_tensor *x;
        gwr_dim d[1] = {12};
        gwr_network *net = new_net(&x, 1, d, GWR_FLOAT32);
        gwr_network_mark_output(net, gwr_relu(net, gwr_neg(net, gwr_neg(net, x))));
        int64_t dims[1] = {12};
        CHECK_EQ_INT(apply_same(net, 1, dims, rules[k], 0), fires[k]);
        gwr_network_free(net);
    }
}

TEST(absent_and_variadic_inputs) {
    const char *r = "rule clip_nothing: Clip(x, none, none) => x\n"
                    "rule concat_id: Identity(Concat<axis=ax>(xs...)) => Concat<axis=ax>(xs)\n";
    gwr_tensor *x;
    gwr_dim d[1] = {12};
    gwr_network *net = new_net(&x, 1, d, GWR_FLOAT32);
    gwr_tensor *c1 = gwr_clip(net, x, NULL, NULL);
    gwr_tensor *c2 = gwr_clip(net, x, gwr_constant_f32(net, 0), NULL); /* a bound: stays */
    gwr_tensor *parts[3] = {c1, c2, gwr_neg(net, x)};
    gwr_tensor *cat = gwr_concat(net, 3, parts, 0);
    gwr_network_mark_output(net, op(net, "Identity", 1, &cat));
    int64_t dims[1] = {12};
    CHECK_EQ_INT(apply_same(net, 1, dims, r, 0), 2);
    CHECK_EQ_INT(rt_count(net, "Clip"), 1);
    CHECK_EQ_INT(rt_count(net, "Identity"), 0);
    CHECK_EQ_INT(rt_count(net, "Concat"), 1);
    gwr_network_free(net);
}

/* Mul(Mul(x, a), b) => Mul(x, a * b): the product computed at rewrite time. */
TEST(constant_arithmetic) {
    const char *r = "rule mul_mul:\n  Mul(Mul(x, a: const), b: const) => Mul(x, a * b)\n"
                    "rule add_t: Add(x, Transpose<perm=[1, 0]>(c: const)) => Add(x, transpose(c, [1, 0]))\n";
    gwr_tensor *x;
    gwr_dim d[2] = {4, 3};
    gwr_network *net = new_net(&x, 2, d, GWR_FLOAT32);
    static const float a[3] = {2, 3, -0.5f}, ct[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    int64_t ad[1] = {3}, cd[2] = {3, 4};
    gwr_tensor *y = gwr_mul(net, gwr_mul(net, x, gwr_constant(net, GWR_FLOAT32, 1, ad, a)), gwr_constant_f32(net, 0.5f));
    int64_t perm[2] = {1, 0};
    y = gwr_add(net, y, gwr_transpose(net, gwr_constant(net, GWR_FLOAT32, 2, cd, ct), 2, perm));
    gwr_network_mark_output(net, y);
    int64_t dims[2] = {4, 3};
    CHECK_EQ_INT(apply_same(net, 2, dims, r, 1e-6), 2);
    CHECK_EQ_INT(rt_count(net, "Mul"), 1);
    CHECK_EQ_INT(rt_count(net, "Transpose"), 0);
    /* The constants by hand: a * 0.5 = {1, 1.5, -0.25}; c transposed: row i is c's column i. */
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (gwr_layer_is_removed(l) || gwr_layer_type(l) == GWR_LAYER_CONSTANT) continue;
        double v[16];
        int64_t n;
        int rank;
        int64_t dd[GWR_MAX_RANK];
        if (!strcmp(gwr_layer_op(l), "Mul") && CHECK_OK(gwr_match_const_f64(gwr_layer_input(l, 1), v, 16, &n, &rank, dd))) {
            CHECK_EQ_INT(n, 3);
            CHECK(v[0] == 1 && v[1] == 1.5 && v[2] == -0.25);
        }
        if (!strcmp(gwr_layer_op(l), "Add") && CHECK_OK(gwr_match_const_f64(gwr_layer_input(l, 1), v, 16, &n, &rank, dd))) {
            CHECK_EQ_INT(rank, 2);
            CHECK(dd[0] == 4 && dd[1] == 3);
            for (int r0 = 0; r0 < 4; r0++)
                for (int c0 = 0; c0 < 3; c0++) CHECK(v[r0 * 3 + c0] == ct[c0 * 4 + r0]);
        }
    }
    gwr_network_free(net);
}

/* BatchNormalization(Conv(x, w, b)) folded into the Conv: w' = w * s / sqrt(var + eps),
 * b' = (b - mu) * s / sqrt(var + eps) + bb, the Conv's attributes copied with <...n>. */
TEST(batchnorm_fold) {
    const char *r =
        "rule fold_bn_into_conv:\n"
        "  BatchNormalization<epsilon=eps default 1e-5>(n@Conv(x, w: const, b: const), s: const, bb: const,\n"
        "                                               mu: const, var: const)\n"
        "    => Conv<...n>(x, w * reshape(s / sqrt(var + eps), [-1, 1, 1, 1]), (b - mu) * s / sqrt(var + eps) + bb)\n";
    gwr_tensor *x;
    gwr_dim d[4] = {1, 1, 2, 3};
    gwr_network *net = new_net(&x, 4, d, GWR_FLOAT32);
    static const float w[2] = {2, -3}, b[2] = {0.5f, 1}, s[2] = {1.5f, 0.5f}, bb[2] = {0.1f, -0.2f},
                       mu[2] = {0.25f, -1}, var[2] = {3, 0};
    int64_t wd[4] = {2, 1, 1, 1}, cd[1] = {2};
    gwr_tensor *cv = gwr_conv(net, x, gwr_constant(net, GWR_FLOAT32, 4, wd, w), gwr_constant(net, GWR_FLOAT32, 1, cd, b), NULL);
    gwr_tensor *y = gwr_batch_norm(net, cv, gwr_constant(net, GWR_FLOAT32, 1, cd, s), gwr_constant(net, GWR_FLOAT32, 1, cd, bb),
                                   gwr_constant(net, GWR_FLOAT32, 1, cd, mu), gwr_constant(net, GWR_FLOAT32, 1, cd, var), 1.0f);
    gwr_network_mark_output(net, y);
    int64_t dims[4] = {1, 1, 2, 3};
    float out[12];
    CHECK_EQ_INT(apply_same(net, 4, dims, r, 1e-6), 1);
    CHECK_EQ_INT(rt_count(net, NULL), 3); /* the Conv and its two new constants */
    CHECK_EQ_INT(rt_count(net, "Conv"), 1);
    /* By hand, eps 1: sqrt(var + eps) = {2, 1};
     * channel 0: 1.5 * (2x + 0.5 - 0.25) / 2 + 0.1 = 1.5x + 0.2875;
     * channel 1: 0.5 * (-3x + 1 + 1) / 1 - 0.2 = -1.5x + 0.8. */
    CHECK_EQ_INT(rt_run(net, 4, dims, XS, out, 12), 12);
    for (int i = 0; i < 6; i++) {
        CHECK(fabs(out[i] - (1.5 * XS[i] + 0.2875)) < 1e-6);
        CHECK(fabs(out[6 + i] - (-1.5 * XS[i] + 0.8)) < 1e-6);
    }
    gwr_network_free(net);
}

TEST(gate) {
    static const char *const rules[] = {
        "rule a target gwr: Neg(Neg(x)) => x",
        "rule a target onnx, ort: Neg(Neg(x)) => x",
        "rule a opset 18: Neg(Neg(x)) => x",
        "rule a opset 17: Neg(Neg(x)) => x",
        "rule a: Neg(Neg(x)) => Gelu(x)", /* Gelu is opset 20: the network imports 17 */
    };
    static const int fires[] = {0, 1, 0, 1, 0};
    for (int k = 0; k < 5; k++) {
        gwr_tensor *x;
        gwr_dim d[1] = {12};
        gwr_network *net = new_net(&x, 1, d, GWR_FLOAT32);
        gwr_network_mark_output(net, gwr_relu(net, gwr_neg(net, gwr_neg(net, x))));
        CHECK_EQ_INT(rt_apply(net, rules[k]), fires[k]);
        gwr_network_free(net);
    }
    /* The manager arg "target" picks target gwr. */
    gwr_tensor *x;
    gwr_dim d[1] = {12};
    gwr_network *net = new_net(&x, 1, d, GWR_FLOAT32);
    gwr_network_mark_output(net, gwr_relu(net, gwr_neg(net, gwr_neg(net, x))));
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    gwr_args *args = gwr_args_new();
    gwr_args_set_int(args, "target", GWR_TARGET_GWR);
    CHECK_OK(gwr_rules_load(m, rules[0]));
    CHECK_OK(gwr_rewrite_manager_rewrite(m, net, args));
    CHECK_EQ_INT(rt_count(net, "Neg"), 0);
    gwr_args_free(args);
    gwr_rewrite_manager_free(m);
    gwr_network_free(net);
}

/* A replacement that does not fit this match is undone: no change, the reason in the trace. */
TEST(replacement_that_does_not_fit) {
    const char *r = "rule bad_shape: Neg(Neg(x)) => Reshape(x, [3, 4])\n";
    gwr_tensor *x;
    gwr_dim d[1] = {12};
    gwr_network *net = new_net(&x, 1, d, GWR_FLOAT32);
    gwr_network_mark_output(net, gwr_relu(net, gwr_neg(net, gwr_neg(net, x))));
    int n = rt_count(net, NULL);
    CHECK_EQ_INT(rt_apply(net, r), 0);
    CHECK_EQ_INT(rt_count(net, NULL), n);
    CHECK_OK(gwr_network_verify(net));
    gwr_network_free(net);
}

/* A constant expression with no value on this match (reshape of 3 values
 * to 5) refuses before anything is built: under debug (which fails a
 * pattern that reports no match but changed the network) the run passes. */
TEST(expression_without_value_changes_nothing) {
    const char *r = "rule bad_reshape: Mul(x, c: const) => Add(Neg(x), reshape(c, [5]))\n"; /* Neg first */
    gwr_tensor *x;
    gwr_dim d[1] = {3};
    gwr_network *net = new_net(&x, 1, d, GWR_FLOAT32);
    static const float c[3] = {1, 2, 3};
    int64_t cd[1] = {3};
    gwr_network_mark_output(net, gwr_mul(net, x, gwr_constant(net, GWR_FLOAT32, 1, cd, c)));
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    gwr_rewrite_options o = {.debug = 1};
    gwr_rewrite_manager_set_options(m, &o);
    CHECK_OK(gwr_rules_load(m, r));
    CHECK_OK(gwr_rewrite_manager_rewrite(m, net, NULL));
    gwr_rewrite_summary sum;
    gwr_rewrite_manager_summary(m, &sum);
    CHECK_EQ_INT(sum.rewrites, 0);
    gwr_rewrite_manager_free(m);
    gwr_network_free(net);
}

int main(void) {
    RUN(op_alternatives);
    RUN(pattern_alternatives);
    RUN(attribute_capture_default_and_where);
    RUN(constraints);
    RUN(absent_and_variadic_inputs);
    RUN(constant_arithmetic);
    RUN(batchnorm_fold);
    RUN(gate);
    RUN(replacement_that_does_not_fit);
    RUN(expression_without_value_changes_nothing);
    return check_report();
}
