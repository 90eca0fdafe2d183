/* test_exec_compare.c - gwr_exec_make_inputs and gwr_exec_compare (src/exec/inputs.c,
 * verify.c): seeded inputs that are the same for the same seed and bound
 * symbols; identical networks compare equal to the bit; a network against
 * a clone in which one Add became Sub fails, naming the output; interface
 * mismatches are errors with a message, before anything runs; NaN against
 * NaN is equal and NaN against a number is not; a failing run says which
 * network failed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"

static gwr_tensor *constant(gwr_network *net, const char *name, const float *v, int64_t n) {
    gwr_buffer *b = gwr_buffer_new_copy(v, (size_t)n * sizeof *v);
    gwr_weights w = {GWR_FLOAT32, 1, &n, gwr_buffer_data(b), (size_t)n * sizeof(float), b, NULL};
    gwr_tensor *t = gwr_network_add_constant(net, name, &w);
    gwr_buffer_release(b);
    return t;
}

static gwr_tensor *binary(gwr_network *net, const char *op, const char *name, gwr_tensor *x, gwr_tensor *y) {
    gwr_layer *l = gwr_network_add_layer(net, op, "", name, 2, (gwr_tensor *[]){x, y}, 1, NULL);
    return l ? gwr_layer_output(l, 0) : NULL;
}

/* x: float32[batch, 3], y: int64[2]; out1 = (x + c) * x, out2 = relu(x),
 * out3 = y + y. */
static gwr_network *small(const char *xname, gwr_dtype out3_dtype) {
    gwr_network *net = gwr_network_new("small");
    gwr_dim batch = gwr_network_dim_sym(net, "batch");
    gwr_tensor *x = gwr_network_add_input(net, xname, GWR_FLOAT32, 2, (gwr_dim[]){batch, 3});
    gwr_tensor *y = gwr_network_add_input(net, "y", GWR_INT64, 1, (gwr_dim[]){2});
    gwr_tensor *c = constant(net, "c", (float[]){0.5f, -1.0f, 2.0f}, 3);
    gwr_tensor *t = binary(net, "Add", "add", x, c);
    gwr_tensor *o1 = binary(net, "Mul", "out1", t, x);
    gwr_layer *relu = gwr_network_add_layer(net, "Relu", "", "out2", 1, &x, 1, NULL);
    gwr_tensor *o3 = binary(net, "Add", "out3", y, y);
    gwr_tensor_set_type(o1, GWR_FLOAT32, 2, (gwr_dim[]){batch, 3});
    gwr_tensor_set_type(o3, out3_dtype, 1, (gwr_dim[]){2});
    gwr_network_mark_output(net, o1);
    gwr_network_mark_output(net, gwr_layer_output(relu, 0));
    gwr_network_mark_output(net, o3);
    return net;
}

/* ---- inputs ---------------------------------------------------------------- */

TEST(make_inputs_seeded) {
    gwr_network *net = small("x", GWR_INT64);
    gwr_dim_binding bind[1] = {{"batch", 4}};
    gwr_input_options o = {.seed = 7, .nbind = 1, .bind = bind};
    gwr_inputs a, b, c;
    CHECK_OK(gwr_exec_make_inputs(net, &o, &a));
    CHECK_OK(gwr_exec_make_inputs(net, &o, &b));
    o.seed = 8;
    CHECK_OK(gwr_exec_make_inputs(net, &o, &c));
    if (!CHECK_EQ_INT(a.n, 2)) return;
    CHECK_STR(a.names[0], "x");
    CHECK_EQ_INT(gwr_value_rank(a.values[0]), 2);
    CHECK_EQ_INT(gwr_value_dims(a.values[0])[0], 4);
    CHECK_EQ_INT(gwr_value_dims(a.values[0])[1], 3);
    CHECK(!memcmp(gwr_value_cdata(a.values[0]), gwr_value_cdata(b.values[0]), gwr_value_nbytes(a.values[0])));
    CHECK(memcmp(gwr_value_cdata(a.values[0]), gwr_value_cdata(c.values[0]), gwr_value_nbytes(a.values[0])));
    int in_range = 1;
    for (int64_t i = 0; i < 12; i++) {
        double v = gwr_value_get_f64(a.values[0], i);
        in_range &= v >= -1 && v < 1;
    }
    for (int64_t i = 0; i < 2; i++) {
        int64_t v = gwr_value_get_i64(a.values[1], i);
        in_range &= v >= 0 && v <= 3;
    }
    CHECK(in_range);
    gwr_inputs_free(&a), gwr_inputs_free(&b), gwr_inputs_free(&c);
    /* Unbound symbols take default_dim (0: 1). */
    gwr_input_options d = {.default_dim = 5};
    CHECK_OK(gwr_exec_make_inputs(net, &d, &a));
    CHECK_EQ_INT(gwr_value_dims(a.values[0])[0], 5);
    gwr_inputs_free(&a);
    CHECK_OK(gwr_exec_make_inputs(net, NULL, &a));
    CHECK_EQ_INT(gwr_value_dims(a.values[0])[0], 1);
    /* A given value is used as is. */
    gwr_input_options g = {.ngiven = 1, .given_names = (const char *[]){"y"}, .given_values = &a.values[1]};
    CHECK_OK(gwr_exec_make_inputs(net, &g, &b));
    CHECK(b.values[1] == a.values[1]);
    gwr_inputs_free(&b);
    gwr_inputs_free(&a);
    gwr_network_free(net);
}

TEST(make_inputs_errors) {
    gwr_network *net = small("x", GWR_INT64);
    gwr_inputs in;
    gwr_input_shape bad_rank[1] = {{"x", 1, (int64_t[]){3}}};
    gwr_input_options o = {.nshapes = 1, .shapes = bad_rank};
    CHECK_EQ_INT(gwr_exec_make_inputs(net, &o, &in), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(in.bad_shape, 0);
    CHECK_STR(gwr_last_errmsg(), "input 'x' has rank 2");
    gwr_input_shape bad_dim[1] = {{"x", 2, (int64_t[]){2, 4}}};
    o.shapes = bad_dim;
    CHECK_EQ_INT(gwr_exec_make_inputs(net, &o, &in), GWR_ERR_INVALID_ARG);
    CHECK_STR(gwr_last_errmsg(), "dim 1 of 'x' is 3");
    gwr_input_shape good[1] = {{"x", 2, (int64_t[]){6, 3}}};
    o.shapes = good;
    CHECK_OK(gwr_exec_make_inputs(net, &o, &in));
    CHECK_EQ_INT(gwr_value_dims(in.values[0])[0], 6);
    gwr_inputs_free(&in);
    gwr_input_shape nosuch[1] = {{"zz", 0, NULL}};
    o.shapes = nosuch;
    CHECK_EQ_INT(gwr_exec_make_inputs(net, &o, &in), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(in.bad_shape, 0);
    CHECK_STR(gwr_last_errmsg(), "the model has no such input");
    gwr_value *v = gwr_value_new(GWR_FLOAT32, 0, NULL);
    gwr_input_options g = {.ngiven = 1, .given_names = (const char *[]){"zz"}, .given_values = &v};
    CHECK_EQ_INT(gwr_exec_make_inputs(net, &g, &in), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(in.bad_given, 0);
    gwr_value_release(v);
    /* An input without a tensor type must be given. */
    gwr_network_add_input(net, "untyped", GWR_UNDEFINED, -1, NULL);
    CHECK_EQ_INT(gwr_exec_make_inputs(net, NULL, &in), GWR_ERR_TYPE);
    CHECK_STR(in.bad_input, "untyped");
    CHECK_EQ_INT(in.n, 0);
    gwr_network_free(net);
}

/* ---- comparing -------------------------------------------------------------------- */

TEST(compare_identical) {
    gwr_network *a = small("x", GWR_INT64), *b = gwr_network_clone(a);
    gwr_compare_report rep;
    gwr_compare_options o = GWR_COMPARE_DEFAULTS;
    o.inputs.nbind = 1, o.inputs.bind = (gwr_dim_binding[]){{"batch", 3}};
    if (!CHECK_OK(gwr_exec_compare(a, b, &o, &rep))) fprintf(stderr, "  %s\n", gwr_last_errmsg());
    CHECK(rep.pass);
    CHECK_EQ_INT(rep.noutputs, 3);
    CHECK(rep.max_abs == 0 && rep.max_rel == 0);
    CHECK_EQ_INT(rep.worst, -1);
    CHECK(rep.worst_name == NULL);
    CHECK(rep.noutputs == 3 && rep.outputs[0].numel == 9 && rep.outputs[0].same_type && rep.outputs[0].pass);
    gwr_compare_report_free(&rep);
    /* Against itself, with exact tolerances and NULL options. */
    gwr_compare_options exact = {0};
    CHECK_OK(gwr_exec_compare(a, a, &exact, &rep));
    CHECK(rep.pass);
    gwr_compare_report_free(&rep);
    CHECK_OK(gwr_exec_compare(a, b, NULL, &rep));
    CHECK(rep.pass);
    gwr_compare_report_free(&rep);
    gwr_network_free(a), gwr_network_free(b);
}

/* In a clone, the Add of out1 becomes a Sub: out1 fails, the rest pass. */
TEST(compare_add_became_sub) {
    gwr_network *a = small("x", GWR_INT64), *b = gwr_network_clone(a);
    gwr_layer *add = gwr_network_find_layer(b, "add");
    gwr_tensor *sub = binary(b, "Sub", "sub", gwr_layer_input(add, 0), gwr_layer_input(add, 1));
    CHECK_OK(gwr_tensor_replace_all_uses_with(gwr_layer_output(add, 0), sub));
    CHECK_OK(gwr_layer_mark_as_removed(add));
    CHECK_OK(gwr_network_prune(b, NULL));
    gwr_compare_report rep;
    CHECK_OK(gwr_exec_compare(a, b, NULL, &rep));
    CHECK(!rep.pass);
    CHECK_STR(rep.worst_name, "out1");
    CHECK_EQ_INT(rep.worst, 0);
    if (CHECK_EQ_INT(rep.noutputs, 3)) {
        CHECK(!rep.outputs[0].pass && rep.outputs[0].nbad > 0 && rep.outputs[0].excess > 1);
        /* (x + c) x - (x - c) x = 2 c x: at most 2 * 2 * 1 */
        CHECK(rep.outputs[0].max_abs > 0 && rep.outputs[0].max_abs <= 4);
        CHECK(rep.outputs[1].pass && rep.outputs[2].pass);
        CHECK(rep.max_abs == rep.outputs[0].max_abs);
    }
    gwr_compare_report_free(&rep);
    /* A tolerance wide enough lets it pass. */
    gwr_compare_options wide = {.atol = 5};
    CHECK_OK(gwr_exec_compare(a, b, &wide, &rep));
    CHECK(rep.pass);
    CHECK_STR(rep.worst_name, "out1"); /* still the one that differs most */
    gwr_compare_report_free(&rep);
    gwr_network_free(a), gwr_network_free(b);
}

TEST(compare_interface_mismatch) {
    gwr_network *a = small("x", GWR_INT64), *b = small("x2", GWR_INT64), *c = small("x", GWR_INT32);
    gwr_compare_report rep;
    CHECK_EQ_INT(gwr_exec_compare(a, b, NULL, &rep), GWR_ERR_TYPE);
    CHECK_CONTAINS(gwr_last_errmsg(), "no input 'x'");
    CHECK_EQ_INT(rep.noutputs, 0);
    CHECK_EQ_INT(rep.error_in, 0);
    gwr_compare_report_free(&rep);
    CHECK_EQ_INT(gwr_exec_compare(a, c, NULL, &rep), GWR_ERR_TYPE);
    CHECK_CONTAINS(gwr_last_errmsg(), "output 'out3' is int64 in the first network, int32 in the second");
    /* An output the other lacks, both ways. */
    gwr_network *d = gwr_network_clone(a);
    gwr_network_unmark_output(d, gwr_network_output(d, 1));
    CHECK_EQ_INT(gwr_exec_compare(a, d, NULL, &rep), GWR_ERR_TYPE);
    CHECK_CONTAINS(gwr_last_errmsg(), "output 'out2' of the first network is not an output of the second");
    CHECK_EQ_INT(gwr_exec_compare(d, a, NULL, &rep), GWR_ERR_TYPE);
    CHECK_CONTAINS(gwr_last_errmsg(), "output 'out2' of the second network is not an output of the first");
    /* An input of another dtype. */
    gwr_network *e = gwr_network_new("e");
    gwr_tensor *x = gwr_network_add_input(e, "x", GWR_FLOAT64, 1, (gwr_dim[]){3});
    gwr_network_mark_output(e, gwr_layer_output(gwr_network_add_layer(e, "Identity", "", "out1", 1, &x, 1, NULL), 0));
    CHECK_EQ_INT(gwr_exec_compare(a, e, NULL, &rep), GWR_ERR_TYPE);
    CHECK_CONTAINS(gwr_last_errmsg(), "input 'x' is float32 in the first network, float64 in the second");
    CHECK_EQ_INT(gwr_exec_compare(NULL, a, NULL, &rep), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_exec_compare(a, a, NULL, NULL), GWR_ERR_INVALID_ARG);
    gwr_compare_options neg = {.atol = -1};
    CHECK_EQ_INT(gwr_exec_compare(a, a, &neg, &rep), GWR_ERR_INVALID_ARG);
    gwr_network_free(a), gwr_network_free(b), gwr_network_free(c), gwr_network_free(d), gwr_network_free(e);
}

/* out = x + c, with c holding a NaN (or a number) in its first place. */
static gwr_network *nan_net(float c0) {
    gwr_network *net = gwr_network_new("nan");
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, (gwr_dim[]){3});
    gwr_tensor *c = constant(net, "c", (float[]){c0, 1, 2}, 3);
    gwr_network_mark_output(net, binary(net, "Add", "out", x, c));
    return net;
}

TEST(compare_nan) {
    gwr_network *a = nan_net(NAN), *b = nan_net(NAN), *c = nan_net(0);
    gwr_compare_report rep;
    CHECK_OK(gwr_exec_compare(a, b, NULL, &rep));
    CHECK(rep.pass);
    CHECK(rep.max_abs == 0);
    gwr_compare_report_free(&rep);
    gwr_compare_options exact = {0};
    CHECK_OK(gwr_exec_compare(a, b, &exact, &rep));
    CHECK(rep.pass);
    gwr_compare_report_free(&rep);
    CHECK_OK(gwr_exec_compare(a, c, NULL, &rep));
    CHECK(!rep.pass);
    CHECK_STR(rep.worst_name, "out");
    CHECK(rep.noutputs == 1 && rep.outputs[0].nbad == 1 && isinf(rep.outputs[0].max_abs));
    gwr_compare_report_free(&rep);
    CHECK_OK(gwr_exec_compare(c, a, NULL, &rep));
    CHECK(!rep.pass && rep.noutputs == 1 && rep.outputs[0].nbad == 1);
    gwr_compare_report_free(&rep);
    gwr_network_free(a), gwr_network_free(b), gwr_network_free(c);
}

/* Outputs of another shape fail; a run that fails says which network. */
TEST(compare_shape_and_run_errors) {
    gwr_network *a = nan_net(1), *b = gwr_network_new("b");
    gwr_tensor *x = gwr_network_add_input(b, "x", GWR_FLOAT32, 1, (gwr_dim[]){3});
    gwr_layer *cat = gwr_network_add_layer(b, "Concat", "", "out", 2, (gwr_tensor *[]){x, x}, 1, NULL);
    gwr_layer_set_int(cat, "axis", 0);
    gwr_network_mark_output(b, gwr_layer_output(cat, 0));
    gwr_compare_report rep;
    CHECK_OK(gwr_exec_compare(a, b, NULL, &rep));
    CHECK(!rep.pass && rep.noutputs == 1 && !rep.outputs[0].same_type);
    CHECK_STR(rep.worst_name, "out");
    gwr_compare_report_free(&rep);
    gwr_network *k = gwr_network_new("k");
    x = gwr_network_add_input(k, "x", GWR_FLOAT32, 1, (gwr_dim[]){3});
    gwr_network_mark_output(k, gwr_layer_output(gwr_network_add_layer(k, "NoKernel", "test", "out", 1, &x, 1, NULL), 0));
    CHECK(gwr_exec_compare(a, k, NULL, &rep) != GWR_OK);
    CHECK_EQ_INT(rep.error_in, 2);
    CHECK_CONTAINS(gwr_last_errmsg(), "NoKernel");
    gwr_compare_report_free(&rep);
    CHECK(gwr_exec_compare(k, a, NULL, &rep) != GWR_OK);
    CHECK_EQ_INT(rep.error_in, 1);
    gwr_compare_report_free(&rep);
    gwr_network_free(a), gwr_network_free(b), gwr_network_free(k);
}

/* The decoder of the functional API against its clone, symbols bound. */
TEST(compare_gpt_clone) {
    gwr_network *a = gwr_network_new("gpt");
    gwr_gpt_config cfg = {.blocks = 1, .hidden = 8, .heads = 2, .use_plugin = 0, .seed = 1};
    if (!CHECK(gwr_build_gpt(a, &cfg) != NULL)) return;
    gwr_network *b = gwr_network_clone(a);
    gwr_compare_options o = GWR_COMPARE_DEFAULTS;
    gwr_dim_binding bind[2] = {{"batch", 2}, {"seq", 5}};
    o.inputs.nbind = 2, o.inputs.bind = bind, o.inputs.seed = 42;
    gwr_compare_report rep;
    if (!CHECK_OK(gwr_exec_compare(a, b, &o, &rep))) fprintf(stderr, "  %s\n", gwr_last_errmsg());
    CHECK(rep.pass);
    CHECK(rep.noutputs == 1 && rep.outputs[0].numel == 2 * 5 * 8);
    gwr_compare_report_free(&rep);
    gwr_network_free(a), gwr_network_free(b);
}

int main(void) {
    RUN(make_inputs_seeded);
    RUN(make_inputs_errors);
    RUN(compare_identical);
    RUN(compare_add_became_sub);
    RUN(compare_interface_mismatch);
    RUN(compare_nan);
    RUN(compare_shape_and_run_errors);
    RUN(compare_gpt_clone);
    return check_report();
}
