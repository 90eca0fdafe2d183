/* test_exec_reduce.c - the reduce, norm and resize kernel families
 * (src/exec/kernels/reduce.c, norm.c, resize.c) where ONNX's test data
 * does not reach: hand-computed edge cases (empty reductions, keepdims,
 * NaN, ties, -inf rows, opset-dependent semantics) and every bad input a
 * model can give, which must fail with a status and a message naming the
 * problem, never crash. Each test builds a one-layer network whose inputs
 * are the given values. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"

#include "one_layer.h"

/* ---- reductions ----------------------------------------------------------------- */

/* [2, 3, 2] = 0..11 over axes {0, 2}: 14, 22, 30; axes as input or attribute. */
TEST(reduce_axes_and_keepdims) {
    float d[12];
    for (int i = 0; i < 12; i++) d[i] = (float)i;
    int64_t xd[3] = {2, 3, 2}, two = 2, ax[2] = {0, -1};
    gwr_value *in[2] = {vf(3, xd, d), vi(1, &two, ax)}, *out[1];
    gwr_layer *l = layer("ReduceSum", 2, in, 1);
    gwr_layer_set_int(l, "keepdims", 0);
    if (CHECK_OK(run(13, 2, in, 1, out))) {
        int64_t od[1] = {3};
        CHECK(dims_are(out[0], 1, od));
        CHECK(at(out[0], 0) == 14 && at(out[0], 1) == 22 && at(out[0], 2) == 30);
    }
    rel(1, out);
    /* ReduceMean, axes attribute (opset 13), keepdims default: [1, 3, 1] */
    l = layer("ReduceMean", 1, in, 1);
    gwr_layer_set_ints(l, "axes", ax, 2);
    if (CHECK_OK(run(13, 1, in, 1, out))) {
        int64_t od[3] = {1, 3, 1};
        CHECK(dims_are(out[0], 3, od));
        CHECK(near(at(out[0], 0), 3.5) && near(at(out[0], 2), 7.5));
    }
    rel(1, out);
    /* no axes: everything, keepdims -> [1, 1, 1] */
    layer("ReduceMax", 1, in, 1);
    if (CHECK_OK(run(13, 1, in, 1, out))) {
        int64_t od[3] = {1, 1, 1};
        CHECK(dims_are(out[0], 3, od) && at(out[0], 0) == 11);
    }
    rel(1, out);
    /* empty axes input with noop_with_empty_axes: the input unchanged */
    int64_t zero = 0;
    gwr_value *in2[2] = {in[0], vi(1, &zero, NULL)};
    l = layer("ReduceSum", 2, in2, 1);
    gwr_layer_set_int(l, "noop_with_empty_axes", 1);
    if (CHECK_OK(run(13, 2, in2, 1, out))) CHECK(dims_are(out[0], 3, xd) && at(out[0], 5) == 5);
    rel(1, out);
    /* empty axes input without it: all axes */
    layer("ReduceSum", 2, in2, 1);
    if (CHECK_OK(run(13, 2, in2, 1, out))) CHECK(gwr_value_numel(out[0]) == 1 && at(out[0], 0) == 66);
    rel(1, out);
    /* every other reduction over axis 1 of [[1, -2], [3, 4]] */
    int64_t sd[2] = {2, 2}, one = 1;
    float s[4] = {1, -2, 3, 4};
    gwr_value *sin[2] = {vf(2, sd, s), vi(1, &one, &one)};
    struct {
        const char *op;
        double r0, r1;
    } cases[] = {
        {"ReduceL1", 3, 7},         {"ReduceL2", sqrt(5), 5},          {"ReduceSumSquare", 5, 25},
        {"ReduceProd", -2, 12},     {"ReduceMin", -2, 3},              {"ReduceLogSumExp", log(exp(1) + exp(-2)), log(exp(3) + exp(4))},
        {"ReduceLogSum", NAN, log(7)},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        layer(cases[c].op, 2, sin, 1);
        if (CHECK_OK(run(18, 2, sin, 1, out))) {
            CHECK(gwr_value_numel(out[0]) == 2);
            CHECK(isnan(cases[c].r0) ? isnan(at(out[0], 0)) : near(at(out[0], 0), cases[c].r0));
            CHECK(near(at(out[0], 1), cases[c].r1));
        }
        rel(1, out);
    }
    rel(2, sin);
    gwr_value_release(in2[1]);
    rel(2, in);
}

/* Reducing a zero-size dim gives the identity of each reduction. */
TEST(reduce_empty) {
    int64_t xd[2] = {2, 0}, one = 1;
    gwr_value *in[2] = {vf(2, xd, NULL), vi(1, &one, &one)}, *out[1];
    struct {
        const char *op;
        double v;
    } cases[] = {{"ReduceSum", 0},        {"ReduceProd", 1},        {"ReduceMax", -INFINITY},
                 {"ReduceMin", INFINITY}, {"ReduceMean", NAN},      {"ReduceLogSum", -INFINITY},
                 {"ReduceL2", 0},         {"ReduceLogSumExp", -INFINITY}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        layer(cases[c].op, 2, in, 1);
        if (CHECK_OK(run(18, 2, in, 1, out))) {
            int64_t od[2] = {2, 1};
            CHECK(dims_are(out[0], 2, od));
            double v = at(out[0], 1);
            CHECK(isnan(cases[c].v) ? isnan(v) : v == cases[c].v);
        }
        rel(1, out);
    }
    /* reducing the non-empty axis of an empty tensor: an empty output */
    int64_t zero = 0;
    gwr_value *in0[2] = {in[0], vi(1, &one, &zero)};
    layer("ReduceSum", 2, in0, 1);
    if (CHECK_OK(run(18, 2, in0, 1, out))) CHECK(gwr_value_numel(out[0]) == 0);
    rel(1, out);
    gwr_value_release(in0[1]);
    /* an int32 ReduceMax of nothing: the lowest int32 */
    gwr_value *ii = gwr_value_new(GWR_INT32, 2, xd);
    gwr_value *iin[2] = {ii, in[1]};
    layer("ReduceMax", 2, iin, 1);
    if (CHECK_OK(run(18, 2, iin, 1, out))) CHECK(gwr_value_get_i64(out[0], 0) == INT32_MIN);
    rel(1, out);
    gwr_value_release(ii);
    rel(2, in);
}

/* int64 sums stay exact past 2^53; NaN wins Max and Min. */
TEST(reduce_int_and_nan) {
    int64_t two = 2, big[2] = {((int64_t)1 << 53) + 1, 1};
    gwr_value *in[1] = {vi(1, &two, big)}, *out[1];
    layer("ReduceSum", 1, in, 1);
    if (CHECK_OK(run(13, 1, in, 1, out))) CHECK(gwr_value_get_i64(out[0], 0) == ((int64_t)1 << 53) + 2);
    rel(1, out);
    rel(1, in);
    int64_t three = 3;
    float d[3] = {1, NAN, 3};
    gwr_value *f[1] = {vf(1, &three, d)};
    layer("ReduceMax", 1, f, 1);
    if (CHECK_OK(run(13, 1, f, 1, out))) CHECK(isnan(at(out[0], 0)));
    rel(1, out);
    layer("ReduceMin", 1, f, 1);
    if (CHECK_OK(run(13, 1, f, 1, out))) CHECK(isnan(at(out[0], 0)));
    rel(1, out);
    rel(1, f);
}

TEST(reduce_errors) {
    int64_t xd[2] = {2, 3}, one = 1, two = 2;
    gwr_value *x = vf(2, xd, NULL), *out[2];
    int64_t bad[2] = {2, 0}, dup[2] = {1, -1};
    gwr_value *in[2] = {x, vi(1, &one, bad)};
    layer("ReduceSum", 2, in, 1);
    CHECK_EQ_INT(run(13, 2, in, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "axis 2 is out of range");
    CHECK_CONTAINS(t_err, "layer 'L'");
    gwr_value_release(in[1]);
    in[1] = vi(1, &two, dup);
    layer("ReduceSum", 2, in, 1);
    CHECK_EQ_INT(run(13, 2, in, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "repeated");
    gwr_value_release(in[1]);
    /* axes attribute, too many of them */
    int64_t many[3] = {0, 1, 0};
    gwr_layer *l = layer("ReduceMean", 1, in, 1);
    gwr_layer_set_ints(l, "axes", many, 3);
    CHECK_EQ_INT(run(13, 1, in, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "3 axes for a rank-2 input");
    /* axes of a float tensor */
    in[1] = vf(1, &one, NULL);
    layer("ReduceSum", 2, in, 1);
    CHECK_EQ_INT(run(13, 2, in, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "int64");
    gwr_value_release(in[1]);
    /* a bool input */
    gwr_value *b = gwr_value_new(GWR_BOOL, 2, xd);
    layer("ReduceSum", 1, &b, 1);
    CHECK_EQ_INT(run(13, 1, &b, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "does not take bool");
    /* ArgMax: bad axis, empty axis, bool */
    l = layer("ArgMax", 1, &x, 1);
    gwr_layer_set_int(l, "axis", -3);
    CHECK_EQ_INT(run(13, 1, &x, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "axis -3 is out of range");
    gwr_value *e = vf(2, bad, NULL);
    l = layer("ArgMin", 1, &e, 1);
    gwr_layer_set_int(l, "axis", 1);
    CHECK_EQ_INT(run(13, 1, &e, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "is empty");
    layer("ArgMax", 1, &b, 1);
    CHECK_EQ_INT(run(13, 1, &b, 1, out), GWR_ERR_INVALID_ARG);
    gwr_value_release(e), gwr_value_release(b);
    /* a missing input */
    gwr_value *none[1] = {NULL};
    layer("ReduceSum", 1, none, 1);
    CHECK_EQ_INT(run(13, 1, none, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "missing");
    gwr_value_release(x);
}

/* ---- ArgMax / ArgMin / TopK / CumSum ------------------------------------------- */

TEST(argmax_nan_and_ties) {
    int64_t four = 4;
    float d[4] = {1, NAN, 3, NAN};
    gwr_value *x = vf(1, &four, d), *out[1];
    layer("ArgMax", 1, &x, 1);
    if (CHECK_OK(run(13, 1, &x, 1, out))) {
        int64_t one = 1;
        CHECK(dims_are(out[0], 1, &one) && gwr_value_get_i64(out[0], 0) == 1); /* first NaN */
    }
    rel(1, out);
    gwr_layer *l = layer("ArgMax", 1, &x, 1);
    gwr_layer_set_int(l, "select_last_index", 1);
    gwr_layer_set_int(l, "keepdims", 0);
    if (CHECK_OK(run(13, 1, &x, 1, out))) CHECK(gwr_value_rank(out[0]) == 0 && gwr_value_get_i64(out[0], 0) == 3);
    rel(1, out);
    gwr_value_release(x);
    /* ties: first index, or last with select_last_index; along axis 0 of [3, 2] */
    int64_t xd[2] = {3, 2};
    float t[6] = {2, 5, 1, 5, 1, 0};
    x = vf(2, xd, t);
    layer("ArgMin", 1, &x, 1);
    if (CHECK_OK(run(13, 1, &x, 1, out))) CHECK(gwr_value_get_i64(out[0], 0) == 1 && gwr_value_get_i64(out[0], 1) == 2);
    rel(1, out);
    layer("ArgMax", 1, &x, 1);
    if (CHECK_OK(run(13, 1, &x, 1, out))) CHECK(gwr_value_get_i64(out[0], 0) == 0 && gwr_value_get_i64(out[0], 1) == 0);
    rel(1, out);
    l = layer("ArgMax", 1, &x, 1);
    gwr_layer_set_int(l, "select_last_index", 1);
    if (CHECK_OK(run(13, 1, &x, 1, out))) CHECK(gwr_value_get_i64(out[0], 0) == 0 && gwr_value_get_i64(out[0], 1) == 1);
    rel(1, out);
    gwr_value_release(x);
}

TEST(topk) {
    int64_t four = 4, one = 1, two = 2;
    float d[4] = {3, 1, 3, 2};
    gwr_value *in[2] = {vf(1, &four, d), vi(1, &one, &two)}, *out[2];
    layer("TopK", 2, in, 2);
    if (CHECK_OK(run(11, 2, in, 2, out))) {
        CHECK(at(out[0], 0) == 3 && at(out[0], 1) == 3);
        CHECK(gwr_value_get_i64(out[1], 0) == 0 && gwr_value_get_i64(out[1], 1) == 2); /* ties: lower index first */
    }
    rel(2, out);
    int64_t three = 3;
    gwr_value_release(in[1]);
    in[1] = vi(1, &one, &three);
    gwr_layer *l = layer("TopK", 2, in, 2);
    gwr_layer_set_int(l, "largest", 0);
    if (CHECK_OK(run(11, 2, in, 2, out))) {
        CHECK(at(out[0], 0) == 1 && at(out[0], 1) == 2 && at(out[0], 2) == 3);
        CHECK(gwr_value_get_i64(out[1], 2) == 0);
    }
    rel(2, out);
    /* K = 0: empty outputs */
    int64_t zero = 0;
    gwr_value_release(in[1]);
    in[1] = vi(1, &one, &zero);
    layer("TopK", 2, in, 2);
    if (CHECK_OK(run(11, 2, in, 2, out))) CHECK(gwr_value_numel(out[0]) == 0 && gwr_value_numel(out[1]) == 0);
    rel(2, out);
    /* K larger than the axis, negative, two values; a bad axis */
    int64_t five = 5, neg = -1, ks[2] = {1, 2};
    gwr_value_release(in[1]);
    in[1] = vi(1, &one, &five);
    layer("TopK", 2, in, 2);
    CHECK_EQ_INT(run(11, 2, in, 2, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "K = 5 is outside [0, 4]");
    gwr_value_release(in[1]);
    in[1] = vi(1, &one, &neg);
    layer("TopK", 2, in, 2);
    CHECK_EQ_INT(run(11, 2, in, 2, out), GWR_ERR_INVALID_ARG);
    gwr_value_release(in[1]);
    in[1] = vi(1, &two, ks);
    layer("TopK", 2, in, 2);
    CHECK_EQ_INT(run(11, 2, in, 2, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "one value");
    gwr_value_release(in[1]);
    in[1] = vi(1, &one, &one);
    l = layer("TopK", 2, in, 2);
    gwr_layer_set_int(l, "axis", 1);
    CHECK_EQ_INT(run(11, 2, in, 2, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "axis 1 is out of range");
    /* opset 1: k as an attribute */
    l = layer("TopK", 1, in, 2);
    gwr_layer_set_int(l, "k", 1);
    if (CHECK_OK(run(1, 1, in, 2, out))) CHECK(at(out[0], 0) == 3 && gwr_value_get_i64(out[1], 0) == 0);
    rel(2, out);
    rel(2, in);
}

TEST(cumsum) {
    int64_t three = 3, one = 1;
    int64_t d[3] = {1, 2, 3};
    gwr_value *in[2] = {vi(1, &three, d), vi(0, NULL, &one)}, *out[1];
    *(int64_t *)gwr_value_data(in[1]) = 0;
    struct {
        int excl, rev;
        int64_t e[3];
    } cases[] = {{0, 0, {1, 3, 6}}, {1, 0, {0, 1, 3}}, {0, 1, {6, 5, 3}}, {1, 1, {5, 3, 0}}};
    for (int c = 0; c < 4; c++) {
        gwr_layer *l = layer("CumSum", 2, in, 1);
        gwr_layer_set_int(l, "exclusive", cases[c].excl);
        gwr_layer_set_int(l, "reverse", cases[c].rev);
        if (CHECK_OK(run(14, 2, in, 1, out)))
            for (int i = 0; i < 3; i++) CHECK_EQ_INT(gwr_value_get_i64(out[0], i), cases[c].e[i]);
        rel(1, out);
    }
    /* axis as a float, out of range, missing */
    gwr_value *fa = vf(0, NULL, NULL);
    gwr_value *bad[2] = {in[0], fa};
    layer("CumSum", 2, bad, 1);
    CHECK_EQ_INT(run(14, 2, bad, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "axis");
    gwr_value_release(fa);
    *(int64_t *)gwr_value_data(in[1]) = 1;
    layer("CumSum", 2, in, 1);
    CHECK_EQ_INT(run(14, 2, in, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "axis 1 is out of range");
    layer("CumSum", 1, in, 1);
    CHECK_EQ_INT(run(14, 1, in, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "input 1 (axis) is missing");
    rel(2, in);
}

/* ---- Softmax family -------------------------------------------------------------- */

TEST(softmax_edges) {
    int64_t xd[2] = {3, 2};
    float d[6] = {-INFINITY, -INFINITY, 0, -INFINITY, 1, 1};
    gwr_value *x = vf(2, xd, d), *out[1];
    layer("Softmax", 1, &x, 1);
    if (CHECK_OK(run(13, 1, &x, 1, out))) {
        CHECK(isnan(at(out[0], 0)) && isnan(at(out[0], 1))); /* exp(x) / sum: 0 / 0 */
        CHECK(at(out[0], 2) == 1 && at(out[0], 3) == 0);
        CHECK(near(at(out[0], 4), 0.5));
    }
    rel(1, out);
    layer("LogSoftmax", 1, &x, 1);
    if (CHECK_OK(run(13, 1, &x, 1, out))) {
        CHECK(at(out[0], 2) == 0 && at(out[0], 3) == -INFINITY);
        CHECK(near(at(out[0], 5), -log(2)));
    }
    rel(1, out);
    layer("Hardmax", 1, &x, 1);
    if (CHECK_OK(run(13, 1, &x, 1, out))) CHECK(at(out[0], 4) == 1 && at(out[0], 5) == 0); /* ties: the first */
    rel(1, out);
    gwr_value_release(x);
    /* axis 0 at opset 13: along the column; at opset 11: over everything */
    float e[4] = {0, 0, 0, 0};
    int64_t sd[2] = {2, 2};
    x = vf(2, sd, e);
    gwr_layer *l = layer("Softmax", 1, &x, 1);
    gwr_layer_set_int(l, "axis", 0);
    if (CHECK_OK(run(13, 1, &x, 1, out))) CHECK(near(at(out[0], 0), 0.5));
    rel(1, out);
    l = layer("Softmax", 1, &x, 1);
    gwr_layer_set_int(l, "axis", 0);
    if (CHECK_OK(run(11, 1, &x, 1, out))) CHECK(near(at(out[0], 0), 0.25));
    rel(1, out);
    /* opset 11 default axis 1 on [2, 2]: rows */
    layer("Softmax", 1, &x, 1);
    if (CHECK_OK(run(11, 1, &x, 1, out))) CHECK(near(at(out[0], 0), 0.5));
    rel(1, out);
    /* float16 and float64 through the generic path */
    gwr_value *h = gwr_value_new(GWR_FLOAT16, 2, sd), *g = gwr_value_new(GWR_FLOAT64, 2, sd);
    layer("Softmax", 1, &h, 1);
    if (CHECK_OK(run(13, 1, &h, 1, out))) CHECK(gwr_value_dtype(out[0]) == GWR_FLOAT16 && near(at(out[0], 3), 0.5));
    rel(1, out);
    layer("LogSoftmax", 1, &g, 1);
    if (CHECK_OK(run(13, 1, &g, 1, out))) CHECK(near(at(out[0], 3), -log(2)));
    rel(1, out);
    /* errors: axis out of range, an int input */
    l = layer("Softmax", 1, &x, 1);
    gwr_layer_set_int(l, "axis", 2);
    CHECK_EQ_INT(run(13, 1, &x, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "axis 2 is out of range");
    gwr_value *iv = vi(2, sd, NULL);
    layer("Softmax", 1, &iv, 1);
    CHECK_EQ_INT(run(13, 1, &iv, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "not a floating-point tensor");
    gwr_value_release(iv), gwr_value_release(h), gwr_value_release(g), gwr_value_release(x);
}

/* ---- normalizations ------------------------------------------------------------------ */

TEST(layer_norm) {
    int64_t xd[2] = {2, 3}, three = 3;
    float d[6] = {1, 2, 3, 5, 5, 5}, s[3] = {1, 1, 2}, b[3] = {0, 1, 0};
    gwr_value *in[3] = {vf(2, xd, d), vf(1, &three, s), vf(1, &three, b)}, *out[3];
    gwr_layer *l = layer("LayerNormalization", 3, in, 3);
    gwr_layer_set_float(l, "epsilon", 0);
    if (CHECK_OK(run(17, 3, in, 3, out))) {
        double z = sqrt(1.5);
        CHECK(near(at(out[0], 0), -z) && near(at(out[0], 1), 1) && near(at(out[0], 2), 2 * z));
        int64_t md[2] = {2, 1};
        CHECK(dims_are(out[1], 2, md) && near(at(out[1], 0), 2) && near(at(out[1], 1), 5));
        CHECK(near(at(out[2], 0), sqrt(1.5)));
        CHECK(isinf(at(out[2], 1))); /* zero variance, epsilon 0 */
    }
    rel(3, out);
    /* a scale of one value broadcasts; a scale of 2 does not */
    int64_t one = 1, two = 2;
    gwr_value *s1[2] = {in[0], vf(1, &one, s)};
    layer("LayerNormalization", 2, s1, 1);
    if (CHECK_OK(run(17, 2, s1, 1, out))) CHECK(near(at(out[0], 1), 0));
    rel(1, out);
    gwr_value_release(s1[1]);
    s1[1] = vf(1, &two, s);
    layer("LayerNormalization", 2, s1, 1);
    CHECK_EQ_INT(run(17, 2, s1, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "Scale");
    gwr_value_release(s1[1]);
    l = layer("LayerNormalization", 3, in, 1);
    gwr_layer_set_int(l, "axis", 2);
    CHECK_EQ_INT(run(17, 3, in, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "axis 2 is out of range");
    rel(3, in);
}

TEST(batch_norm) {
    int64_t xd[3] = {2, 2, 2}, two = 2;
    float d[8] = {1, 3, 0, 0, 5, 7, 0, 0};
    float sc[2] = {1, 2}, bi[2] = {0, 1}, mu[2] = {4, 0}, var[2] = {4, 1};
    gwr_value *in[5] = {vf(3, xd, d), vf(1, &two, sc), vf(1, &two, bi), vf(1, &two, mu), vf(1, &two, var)}, *out[3];
    gwr_layer *l = layer("BatchNormalization", 5, in, 1);
    gwr_layer_set_float(l, "epsilon", 0);
    if (CHECK_OK(run(15, 5, in, 1, out))) {
        CHECK(near(at(out[0], 0), -1.5) && near(at(out[0], 1), -0.5)); /* (x - 4) / 2 */
        CHECK(near(at(out[0], 2), 1));                                  /* 2 * 0 + 1 */
        CHECK(near(at(out[0], 5), 1.5));
    }
    rel(1, out);
    /* training: batch statistics, running ones updated with momentum */
    l = layer("BatchNormalization", 5, in, 3);
    gwr_layer_set_int(l, "training_mode", 1);
    gwr_layer_set_float(l, "momentum", 0.5f);
    gwr_layer_set_float(l, "epsilon", 0);
    if (CHECK_OK(run(15, 5, in, 3, out))) {
        /* channel 0: {1, 3, 5, 7}: mean 4, var 5 */
        CHECK(near(at(out[0], 0), -3 / sqrt(5)));
        CHECK(near(at(out[1], 0), 4) && near(at(out[2], 0), 4.5));
        CHECK(near(at(out[1], 1), 0) && near(at(out[2], 1), 0.5));
    }
    rel(3, out);
    /* float16 input */
    gwr_value *h = gwr_value_new(GWR_FLOAT16, 3, xd);
    gwr_value *hin[5] = {h, in[1], in[2], in[3], in[4]};
    layer("BatchNormalization", 5, hin, 1);
    if (CHECK_OK(run(15, 5, hin, 1, out))) CHECK(gwr_value_dtype(out[0]) == GWR_FLOAT16 && near(at(out[0], 0), -2));
    rel(1, out);
    gwr_value_release(h);
    /* errors: wrong parameter length, rank 1, too few inputs */
    int64_t three = 3;
    gwr_value *bad[5] = {in[0], in[1], vf(1, &three, NULL), in[3], in[4]};
    layer("BatchNormalization", 5, bad, 1);
    CHECK_EQ_INT(run(15, 5, bad, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "input 2 (B) has 3 values, expected 2");
    gwr_value_release(bad[2]);
    gwr_value *r1[5] = {in[1], in[1], in[2], in[3], in[4]};
    layer("BatchNormalization", 5, r1, 1);
    CHECK_EQ_INT(run(15, 5, r1, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "rank 2 or more");
    layer("BatchNormalization", 3, in, 1);
    CHECK_EQ_INT(run(15, 3, in, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "takes 5 inputs");
    rel(5, in);
}

TEST(other_norms) {
    int64_t xd[3] = {1, 4, 2}, four = 4, two = 2;
    float d[8] = {0, 2, 1, 1, 4, 4, 3, 5};
    gwr_value *x = vf(3, xd, d), *out[1];
    /* InstanceNormalization: per channel; zero variance gives 0 */
    float s4[4] = {1, 1, 1, 1}, b4[4] = {0, 0, 0, 0};
    gwr_value *in[3] = {x, vf(1, &four, s4), vf(1, &four, b4)};
    gwr_layer *l = layer("InstanceNormalization", 3, in, 1);
    gwr_layer_set_float(l, "epsilon", 0);
    if (CHECK_OK(run(6, 3, in, 1, out))) CHECK(near(at(out[0], 0), -1) && near(at(out[0], 1), 1) && isnan(at(out[0], 2)));
    rel(1, out);
    /* GroupNormalization, 2 groups: {0, 2, 1, 1} and {4, 4, 3, 5} */
    float s2[2] = {1, 2}, b2[2] = {0, 10};
    gwr_value *gin[3] = {x, vf(1, &two, s2), vf(1, &two, b2)};
    l = layer("GroupNormalization", 3, gin, 1);
    gwr_layer_set_int(l, "num_groups", 2);
    gwr_layer_set_float(l, "epsilon", 0);
    if (CHECK_OK(run(18, 3, gin, 1, out))) {
        CHECK(near(at(out[0], 0), -1 / sqrt(0.5)));
        CHECK(near(at(out[0], 4), 10) && near(at(out[0], 6), 10 - 2 / sqrt(0.5)));
    }
    rel(1, out);
    l = layer("GroupNormalization", 3, gin, 1);
    gwr_layer_set_int(l, "num_groups", 3);
    CHECK_EQ_INT(run(18, 3, gin, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "4 channels do not split into 3 groups");
    layer("GroupNormalization", 3, gin, 1);
    CHECK_EQ_INT(run(18, 3, gin, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "num_groups");
    rel(2, gin + 1);
    /* MeanVarianceNormalization over axis 2 */
    int64_t ax = 2;
    l = layer("MeanVarianceNormalization", 1, &x, 1);
    gwr_layer_set_ints(l, "axes", &ax, 1);
    if (CHECK_OK(run(13, 1, &x, 1, out))) CHECK(near(at(out[0], 0), -1) && near(at(out[0], 7), 1) && at(out[0], 2) == 0);
    rel(1, out);
    int64_t bad = 3;
    l = layer("MeanVarianceNormalization", 1, &x, 1);
    gwr_layer_set_ints(l, "axes", &bad, 1);
    CHECK_EQ_INT(run(13, 1, &x, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "axis 3 is out of range");
    /* LRN size 1: x / (bias + alpha x^2)^beta */
    l = layer("LRN", 1, &x, 1);
    gwr_layer_set_int(l, "size", 1);
    gwr_layer_set_float(l, "alpha", 1);
    gwr_layer_set_float(l, "beta", 1);
    if (CHECK_OK(run(13, 1, &x, 1, out))) CHECK(near(at(out[0], 1), 2.0 / 5));
    rel(1, out);
    layer("LRN", 1, &x, 1);
    CHECK_EQ_INT(run(13, 1, &x, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "size");
    {   /* LpNormalization: rows [3, 4] and [0, 0] by their L2 norm (5, and 0
         * gives 0), [1, -3] by its L1 norm 4; p 3 refused */
        int64_t d22[2] = {2, 2};
        float lx[4] = {3, 4, 0, 0}, l1x[4] = {1, -3, 2, 2};
        gwr_value *vl = vf(2, d22, lx), *vl1 = vf(2, d22, l1x);
        layer("LpNormalization", 1, &vl, 1);
        if (CHECK_OK(run(13, 1, &vl, 1, out)))
            CHECK(near(at(out[0], 0), 0.6) && near(at(out[0], 1), 0.8) && at(out[0], 2) == 0 && at(out[0], 3) == 0);
        rel(1, out);
        l = layer("LpNormalization", 1, &vl1, 1);
        gwr_layer_set_int(l, "p", 1);
        if (CHECK_OK(run(13, 1, &vl1, 1, out))) CHECK(near(at(out[0], 0), 0.25) && near(at(out[0], 1), -0.75));
        rel(1, out);
        l = layer("LpNormalization", 1, &vl1, 1);
        gwr_layer_set_int(l, "axis", 0);
        if (CHECK_OK(run(13, 1, &vl1, 1, out))) CHECK(near(at(out[0], 1), -3 / sqrt(13)));
        rel(1, out);
        l = layer("LpNormalization", 1, &vl1, 1);
        gwr_layer_set_int(l, "p", 3);
        CHECK_EQ_INT(run(13, 1, &vl1, 1, out), GWR_ERR_INVALID_ARG);
        CHECK_CONTAINS(t_err, "p must be 1 or 2");
        gwr_value_release(vl), gwr_value_release(vl1);
    }
    rel(2, in + 1);
    gwr_value_release(x);
}

/* RMSNormalization (opset 23): rows [3, 4] and [1, 1] over their root mean
 * square (sqrt(12.5) and 1) times scale [1, 2]; axis 0 over all four values
 * (mean square 27 / 4) with a one-value scale broadcast; a scale of 3 values
 * refused. */
TEST(rms_norm) {
    int64_t xd[2] = {2, 2}, two = 2, one = 1, three = 3;
    float d[4] = {3, 4, 1, 1}, sc[3] = {1, 2, 2};
    gwr_value *in[2] = {vf(2, xd, d), vf(1, &two, sc)}, *out[1];
    gwr_layer *l = layer("RMSNormalization", 2, in, 1);
    gwr_layer_set_float(l, "epsilon", 0);
    if (CHECK_OK(run(23, 2, in, 1, out)))
        CHECK(dims_are(out[0], 2, xd) && near(at(out[0], 0), 3 / sqrt(12.5)) && near(at(out[0], 1), 8 / sqrt(12.5)) &&
              near(at(out[0], 2), 1) && near(at(out[0], 3), 2));
    rel(1, out);
    gwr_value_release(in[1]);
    in[1] = vf(1, &one, sc + 1);
    l = layer("RMSNormalization", 2, in, 1);
    gwr_layer_set_int(l, "axis", 0);
    gwr_layer_set_float(l, "epsilon", 0.25f);
    if (CHECK_OK(run(23, 2, in, 1, out))) CHECK(near(at(out[0], 1), 2 * 4 / sqrt(27.0 / 4 + 0.25)));
    rel(1, out);
    gwr_value_release(in[1]);
    in[1] = vf(1, &three, sc);
    layer("RMSNormalization", 2, in, 1);
    CHECK_EQ_INT(run(23, 2, in, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "scale");
    rel(2, in);
}

/* RotaryEmbedding (opset 23): one head [1, 2, 3, 4] at position 1, whose
 * cache row turns pair 0 by 90 degrees (cos 0, sin 1) and pair 1 by 0:
 * halves pair (1, 3) and (2, 4), giving [-3, 2, 1, 4]; interleaved pairs (1,
 * 2) and (3, 4), giving [-2, 1, 3, 4]; the 3-D form with num_heads 1 as the
 * 4-D one; a position past the cache refused. */
TEST(rotary_embedding) {
    int64_t xd[4] = {1, 1, 1, 4}, x3[3] = {1, 1, 4}, cd[2] = {2, 2}, pd[2] = {1, 1}, p1 = 1, p5 = 5;
    float x[4] = {1, 2, 3, 4}, c[4] = {1, 1, 0, 1}, sn[4] = {0, 0, 1, 0};
    gwr_value *in[4] = {vf(4, xd, x), vf(2, cd, c), vf(2, cd, sn), vi(2, pd, &p1)}, *out[1];
    layer("RotaryEmbedding", 4, in, 1);
    if (CHECK_OK(run(23, 4, in, 1, out)))
        CHECK(dims_are(out[0], 4, xd) && at(out[0], 0) == -3 && at(out[0], 1) == 2 && at(out[0], 2) == 1 && at(out[0], 3) == 4);
    rel(1, out);
    gwr_layer *l = layer("RotaryEmbedding", 4, in, 1);
    gwr_layer_set_int(l, "interleaved", 1);
    if (CHECK_OK(run(23, 4, in, 1, out)))
        CHECK(at(out[0], 0) == -2 && at(out[0], 1) == 1 && at(out[0], 2) == 3 && at(out[0], 3) == 4);
    rel(1, out);
    gwr_value *in3[4] = {vf(3, x3, x), in[1], in[2], in[3]};
    l = layer("RotaryEmbedding", 4, in3, 1);
    gwr_layer_set_int(l, "num_heads", 1);
    if (CHECK_OK(run(23, 4, in3, 1, out))) CHECK(dims_are(out[0], 3, x3) && at(out[0], 0) == -3 && at(out[0], 2) == 1);
    rel(1, out);
    gwr_value_release(in3[0]);
    gwr_value_release(in[3]);
    in[3] = vi(2, pd, &p5);
    layer("RotaryEmbedding", 4, in, 1);
    CHECK_EQ_INT(run(23, 4, in, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "position id 5");
    rel(4, in);
}

/* RotaryEmbedding on float32 with several heads and positions and a
 * partial rotary_embedding_dim (4 of 6: the last two values of each head
 * copied), halves and interleaved, against the formula of the ONNX spec
 * computed here in double: x1 cos - x2 sin, x1 sin + x2 cos. */
TEST(rotary_embedding_partial_f32) {
    enum { H = 2, S = 3, D = 6, R = 4, P = 4 };
    int64_t xd[4] = {1, H, S, D}, cd[2] = {P, R / 2}, pd[2] = {1, S}, pos[S] = {2, 0, 3};
    float x[H * S * D], c[P * R / 2], sn[P * R / 2];
    for (int i = 0; i < H * S * D; i++) x[i] = (float)((i * 7 % 13) - 6) / 4;
    for (int i = 0; i < P * R / 2; i++) c[i] = (float)cos(0.3 * i + 0.1), sn[i] = (float)sin(0.3 * i + 0.1);
    gwr_value *in[4] = {vf(4, xd, x), vf(2, cd, c), vf(2, cd, sn), vi(2, pd, pos)}, *out[1];
    for (int il = 0; il < 2; il++) {
        gwr_layer *l = layer("RotaryEmbedding", 4, in, 1);
        gwr_layer_set_int(l, "rotary_embedding_dim", R);
        gwr_layer_set_int(l, "interleaved", il);
        if (!CHECK_OK(run(23, 4, in, 1, out))) continue;
        int bad = 0;
        for (int h = 0; h < H; h++)
            for (int s = 0; s < S; s++) {
                const float *xr = x + (h * S + s) * D;
                double want[D];
                for (int d = 0; d < D; d++) want[d] = xr[d];
                for (int i = 0; i < R / 2; i++) {
                    int i1 = il ? 2 * i : i, i2 = il ? 2 * i + 1 : i + R / 2;
                    double cc = c[pos[s] * R / 2 + i], ss = sn[pos[s] * R / 2 + i];
                    want[i1] = xr[i1] * cc - xr[i2] * ss, want[i2] = xr[i1] * ss + xr[i2] * cc;
                }
                for (int d = 0; d < D; d++) bad += fabs(at(out[0], (h * S + s) * D + d) - want[d]) > 1e-5;
            }
        CHECK_EQ_INT(bad, 0);
        rel(1, out);
    }
    rel(4, in);
}

/* Attention (opset 23), one head of size 1, scale 1: queries [1, 1] against
 * keys [0, ln 3] weigh values [4, 8] by softmax [1/4, 3/4], giving 7; causal,
 * query 0 sees key 0 alone (4); a bool mask [true, false] keeps key 0 for
 * both; two query heads share the one kv head (GQA); a past key 0 and value
 * 4 before key ln 3 and value 8 give 7 and the presents [0, ln 3], [4, 8]. */
TEST(onnx_attention) {
    int64_t qd[4] = {1, 1, 2, 1}, md = 2, gd[4] = {1, 2, 1, 1}, pd[4] = {1, 1, 1, 1};
    float q[2] = {1, 1}, k[2] = {0, (float)log(3.0)}, v[2] = {4, 8};
    gwr_value *in[6] = {vf(4, qd, q), vf(4, qd, k), vf(4, qd, v), NULL, NULL, NULL}, *out[4];
    gwr_layer *l = layer("Attention", 3, in, 1);
    gwr_layer_set_float(l, "scale", 1);
    if (CHECK_OK(run(23, 3, in, 1, out))) CHECK(dims_are(out[0], 4, qd) && near(at(out[0], 0), 7) && near(at(out[0], 1), 7));
    rel(1, out);
    l = layer("Attention", 3, in, 4);
    gwr_layer_set_float(l, "scale", 1);
    gwr_layer_set_int(l, "is_causal", 1);
    gwr_layer_set_int(l, "qk_matmul_output_mode", 3);
    if (CHECK_OK(run(23, 3, in, 4, out))) {
        CHECK(near(at(out[0], 0), 4) && near(at(out[0], 1), 7));
        CHECK(near(at(out[3], 0), 1) && at(out[3], 1) == 0 && near(at(out[3], 2), 0.25) && near(at(out[3], 3), 0.75));
    }
    rel(4, out);
    in[3] = gwr_value_new(GWR_BOOL, 1, &md);
    ((uint8_t *)gwr_value_data(in[3]))[0] = 1, ((uint8_t *)gwr_value_data(in[3]))[1] = 0;
    l = layer("Attention", 4, in, 1);
    gwr_layer_set_float(l, "scale", 1);
    if (CHECK_OK(run(23, 4, in, 1, out))) CHECK(near(at(out[0], 0), 4) && near(at(out[0], 1), 4));
    rel(1, out);
    gwr_value_release(in[3]), in[3] = NULL;
    gwr_value *g[3] = {vf(4, gd, q), in[1], in[2]};
    l = layer("Attention", 3, g, 1);
    gwr_layer_set_float(l, "scale", 1);
    if (CHECK_OK(run(23, 3, g, 1, out))) CHECK(dims_are(out[0], 4, gd) && near(at(out[0], 0), 7) && near(at(out[0], 1), 7));
    rel(1, out);
    gwr_value_release(g[0]);
    gwr_value *p[6] = {vf(4, pd, q), vf(4, pd, k + 1), vf(4, pd, v + 1), NULL, vf(4, pd, k), vf(4, pd, v)};
    l = layer("Attention", 6, p, 3);
    gwr_layer_set_float(l, "scale", 1);
    if (CHECK_OK(run(23, 6, p, 3, out))) {
        int64_t kd[4] = {1, 1, 2, 1};
        CHECK(near(at(out[0], 0), 7) && dims_are(out[1], 4, kd) && dims_are(out[2], 4, kd));
        CHECK(at(out[1], 0) == 0 && near(at(out[1], 1), log(3.0)) && at(out[2], 0) == 4 && at(out[2], 1) == 8);
    }
    rel(3, out);
    rel(6, p);
    /* K with a head size other than Q's: refused */
    int64_t kd2[4] = {1, 1, 1, 2};
    gwr_value *bad[3] = {in[0], vf(4, kd2, k), in[2]};
    layer("Attention", 3, bad, 1);
    CHECK_EQ_INT(run(23, 3, bad, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "head");
    gwr_value_release(bad[1]);
    rel(3, in);
}

/* ---- Resize / Upsample -------------------------------------------------------------- */

/* nearest upsampling of a float32 [1, 2, 2, 3] by 2 x 2 (asymmetric,
 * floor): y[c, i, j] = x[c, i / 2, j / 2], every repeated row too; then
 * tf_crop_and_resize to [1, 2, 3, 2] with the roi H [0, 2], W [0, 1]:
 * source row i (row 2 past the input: the extrapolation value), column 2 j */
TEST(resize_nearest_rows) {
    int64_t xd[4] = {1, 2, 2, 3}, four = 4, zero = 0;
    float d[12], sc[4] = {1, 1, 2, 2};
    for (int i = 0; i < 12; i++) d[i] = (float)(i + 1);
    gwr_value *in[4] = {vf(4, xd, d), vf(1, &zero, NULL), vf(1, &four, sc), NULL}, *out[1];
    gwr_layer *l = layer("Resize", 3, in, 1);
    gwr_layer_set_string(l, "coordinate_transformation_mode", "asymmetric");
    gwr_layer_set_string(l, "nearest_mode", "floor");
    if (CHECK_OK(run(13, 3, in, 1, out))) {
        int64_t od[4] = {1, 2, 4, 6};
        CHECK(dims_are(out[0], 4, od));
        int bad = 0;
        for (int c = 0; c < 2; c++)
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 6; j++) bad += at(out[0], (c * 4 + i) * 6 + j) != d[(c * 2 + i / 2) * 3 + j / 2];
        CHECK_EQ_INT(bad, 0);
    }
    rel(1, out);
    float roi[8] = {0, 0, 0, 0, 1, 1, 2, 1};
    int64_t sz[4] = {1, 2, 3, 2};
    gwr_value *cin[4] = {in[0], vf(1, (int64_t[]){8}, roi), NULL, vi(1, &four, sz)};
    l = layer("Resize", 4, cin, 1);
    gwr_layer_set_string(l, "coordinate_transformation_mode", "tf_crop_and_resize");
    gwr_layer_set_float(l, "extrapolation_value", -7);
    if (CHECK_OK(run(13, 4, cin, 1, out))) {
        int bad = 0;
        for (int c = 0; c < 2; c++)
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 2; j++) bad += at(out[0], (c * 3 + i) * 2 + j) != (i < 2 ? d[(c * 2 + i) * 3 + 2 * j] : -7);
        CHECK_EQ_INT(bad, 0);
    }
    rel(1, out);
    gwr_value_release(cin[1]), gwr_value_release(cin[3]);
    for (int i = 0; i < 3; i++) gwr_value_release(in[i]);
}

TEST(resize) {
    int64_t xd[2] = {1, 2}, two = 2, zero = 0;
    float d[2] = {1, 3}, sc[2] = {1, 2};
    gwr_value *in[4] = {vf(2, xd, d), vf(1, &zero, NULL), vf(1, &two, sc), NULL}, *out[1];
    gwr_layer *l = layer("Resize", 3, in, 1);
    gwr_layer_set_string(l, "coordinate_transformation_mode", "asymmetric");
    if (CHECK_OK(run(13, 3, in, 1, out))) {
        int64_t od[2] = {1, 4};
        CHECK(dims_are(out[0], 2, od));
        CHECK(at(out[0], 0) == 1 && at(out[0], 1) == 1 && at(out[0], 2) == 3 && at(out[0], 3) == 3);
    }
    rel(1, out);
    /* linear, align_corners: 1, 1.667, 2.333, 3 */
    l = layer("Resize", 3, in, 1);
    gwr_layer_set_string(l, "mode", "linear");
    gwr_layer_set_string(l, "coordinate_transformation_mode", "align_corners");
    if (CHECK_OK(run(13, 3, in, 1, out))) CHECK(near(at(out[0], 1), 5.0 / 3) && near(at(out[0], 3), 3));
    rel(1, out);
    /* sizes, linear half_pixel: [1, 1.5, 2.5, 3] */
    int64_t sz[2] = {1, 4};
    gwr_value *sin[4] = {in[0], NULL, NULL, vi(1, &two, sz)};
    l = layer("Resize", 4, sin, 1);
    gwr_layer_set_string(l, "mode", "linear");
    if (CHECK_OK(run(13, 4, sin, 1, out))) CHECK(near(at(out[0], 0), 1) && near(at(out[0], 1), 1.5) && near(at(out[0], 3), 3));
    rel(1, out);
    /* tf_crop_and_resize outside the roi: the extrapolation value */
    float roi[4] = {0, 0, 1, 2};
    gwr_value *cin[4] = {in[0], vf(1, (int64_t[]){4}, roi), NULL, sin[3]};
    l = layer("Resize", 4, cin, 1);
    gwr_layer_set_string(l, "mode", "linear");
    gwr_layer_set_string(l, "coordinate_transformation_mode", "tf_crop_and_resize");
    gwr_layer_set_float(l, "extrapolation_value", -7);
    if (CHECK_OK(run(13, 4, cin, 1, out))) CHECK(near(at(out[0], 0), 1) && at(out[0], 3) == -7);
    rel(1, out);
    gwr_value_release(cin[1]);
    /* uint8 nearest: gathered exactly */
    gwr_value *u = gwr_value_new(GWR_UINT8, 2, xd);
    ((uint8_t *)gwr_value_data(u))[1] = 200;
    gwr_value *uin[3] = {u, in[1], in[2]};
    layer("Resize", 3, uin, 1);
    if (CHECK_OK(run(13, 3, uin, 1, out))) CHECK(gwr_value_dtype(out[0]) == GWR_UINT8 && gwr_value_get_i64(out[0], 3) == 200);
    rel(1, out);
    gwr_value_release(u);
    /* errors */
    gwr_value *both[4] = {in[0], NULL, in[2], sin[3]};
    layer("Resize", 4, both, 1);
    CHECK_EQ_INT(run(13, 4, both, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "exactly one of scales and sizes");
    float neg[2] = {1, -2}, three[3] = {1, 1, 1};
    gwr_value *nin[3] = {in[0], NULL, vf(1, &two, neg)};
    layer("Resize", 3, nin, 1);
    CHECK_EQ_INT(run(13, 3, nin, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "scales must be positive");
    gwr_value_release(nin[2]);
    int64_t n3 = 3;
    nin[2] = vf(1, &n3, three);
    layer("Resize", 3, nin, 1);
    CHECK_EQ_INT(run(13, 3, nin, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "3 scales for 2 axes");
    gwr_value_release(nin[2]);
    float huge[2] = {1, 1e30f};
    nin[2] = vf(1, &two, huge);
    layer("Resize", 3, nin, 1);
    CHECK_EQ_INT(run(13, 3, nin, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "too large");
    gwr_value_release(nin[2]);
    l = layer("Resize", 3, in, 1);
    gwr_layer_set_string(l, "mode", "bicubic");
    CHECK_EQ_INT(run(13, 3, in, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "unknown mode 'bicubic'");
    l = layer("Resize", 3, in, 1);
    gwr_layer_set_string(l, "coordinate_transformation_mode", "sideways");
    CHECK_EQ_INT(run(13, 3, in, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "sideways");
    int64_t negsz[2] = {1, -4};
    gwr_value *zin[4] = {in[0], NULL, NULL, vi(1, &two, negsz)};
    layer("Resize", 4, zin, 1);
    CHECK_EQ_INT(run(13, 4, zin, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "size -4");
    gwr_value_release(zin[3]);
    /* axes (opset 18): sizes for the last axis only */
    int64_t ax = -1, four = 4, one = 1;
    gwr_value *ain[4] = {in[0], NULL, NULL, vi(1, &one, &four)};
    l = layer("Resize", 4, ain, 1);
    gwr_layer_set_ints(l, "axes", &ax, 1);
    if (CHECK_OK(run(18, 4, ain, 1, out))) {
        int64_t od[2] = {1, 4};
        CHECK(dims_are(out[0], 2, od));
    }
    rel(1, out);
    gwr_value_release(ain[3]);
    /* Upsample 7: scales attribute, nearest; a missing one fails */
    l = layer("Upsample", 1, in, 1);
    float us[2] = {2, 2};
    gwr_layer_set_floats(l, "scales", us, 2);
    if (CHECK_OK(run(7, 1, in, 1, out))) {
        int64_t od[2] = {2, 4};
        CHECK(dims_are(out[0], 2, od) && at(out[0], 5) == 1 && at(out[0], 7) == 3);
    }
    rel(1, out);
    layer("Upsample", 1, in, 1);
    CHECK_EQ_INT(run(7, 1, in, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "no scales");
    gwr_value_release(sin[3]);
    rel(3, in);
}

int main(void) {
    RUN(reduce_axes_and_keepdims);
    RUN(reduce_empty);
    RUN(reduce_int_and_nan);
    RUN(reduce_errors);
    RUN(argmax_nan_and_ties);
    RUN(topk);
    RUN(cumsum);
    RUN(softmax_edges);
    RUN(layer_norm);
    RUN(batch_norm);
    RUN(other_norms);
    RUN(resize);
    RUN(resize_nearest_rows);
    RUN(rms_norm);
    RUN(rotary_embedding);
    RUN(rotary_embedding_partial_f32);
    RUN(onnx_attention);
    return check_report();
}
