/* test_pass_case.c - the pattern-test harness of pass_case.h, on the
 * built-in fold_constants: it fires once per foldable layer where every
 * input is constant, and not at all where an input is not (the network is
 * then left as it was); the outputs stay the same. And the harness itself:
 * a pattern that changes the numbers (replace_add_with_sub) is caught,
 * naming the output, and a wrong expected count is reported. */
#include <stdlib.h>

#include "check.h"
#include "pass_case.h"

static gwr_tensor *constant(gwr_network *net, const char *name, float start) {
    int64_t n = 3;
    float v[3] = {start, start + 1, start + 2};
    gwr_buffer *b = gwr_buffer_new_copy(v, sizeof v);
    gwr_weights w = {GWR_FLOAT32, 1, &n, gwr_buffer_data(b), sizeof v, b, NULL};
    gwr_tensor *t = gwr_network_add_constant(net, name, &w);
    gwr_buffer_release(b);
    return t;
}

static gwr_tensor *op2(gwr_network *net, const char *op, const char *name, gwr_tensor *x, gwr_tensor *y) {
    gwr_layer *l = gwr_network_add_layer(net, op, "", name, 2, (gwr_tensor *[]){x, y}, 1, NULL);
    gwr_tensor *t = l ? gwr_layer_output(l, 0) : NULL;
    if (t) gwr_tensor_set_type(t, GWR_FLOAT32, 1, (gwr_dim[]){3});
    return t;
}

/* out = x + (c1 + c2) * c3, out2 = c1 - c3: three layers of constants
 * only (add, mul, sub), two that read x. */
static gwr_network *build_foldable(void) {
    gwr_network *net = gwr_network_new("foldable");
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, (gwr_dim[]){3});
    gwr_tensor *c1 = constant(net, "c1", 1), *c2 = constant(net, "c2", -0.5f), *c3 = constant(net, "c3", 0.25f);
    gwr_tensor *m = op2(net, "Mul", "mul", op2(net, "Add", "add", c1, c2), c3);
    gwr_network_mark_output(net, op2(net, "Add", "out", x, m));
    gwr_network_mark_output(net, op2(net, "Sub", "out2", c1, c3));
    return net;
}

/* out = (x + c1) * x: every layer reads x; nothing folds. */
static gwr_network *build_not_constant(void) {
    gwr_network *net = gwr_network_new("not_constant");
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, (gwr_dim[]){3});
    gwr_tensor *c1 = constant(net, "c1", 1);
    gwr_network_mark_output(net, op2(net, "Mul", "out", op2(net, "Add", "add", x, c1), x));
    return net;
}

/* The same with a symbolic dim: y = relu(x) + x over float32[batch, 3]. */
static gwr_network *build_symbolic(void) {
    gwr_network *net = gwr_network_new("symbolic");
    gwr_dim b = gwr_network_dim_sym(net, "batch");
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, (gwr_dim[]){b, 3});
    gwr_layer *relu = gwr_network_add_layer(net, "Relu", "", "relu", 1, &x, 1, NULL);
    gwr_layer *add = gwr_network_add_layer(net, "Add", "", "out", 2, (gwr_tensor *[]){gwr_layer_output(relu, 0), x}, 1,
                                           NULL);
    gwr_network_mark_output(net, gwr_layer_output(add, 0));
    return net;
}

TEST(fold_fires) { CHECK(pass_case_check(build_foldable, "fold_constants", 3, 1e-6)); }

TEST(fold_does_not_fire) {
    CHECK(pass_case_check(build_not_constant, "fold_constants", 0, 0));
    CHECK(pass_case_check_pattern(build_not_constant, &gwr_pattern_fold_constants, 0, 0));
    gwr_dim_binding bind[1] = {{"batch", 4}};
    pass_case c = {.build = build_symbolic, .label = "fold_constants", .expect = 0, .nbind = 1, .bind = bind};
    CHECK(pass_case_check_case(&c));
}

/* The harness catches what it is for. */
TEST(harness_catches) {
    /* A pattern that changes the numbers: caught, naming the output. */
    pass_case c = {.build = build_not_constant, .pattern = &gwr_pattern_replace_add_with_sub, .label = "add_to_sub",
                   .expect = 1, .atol = 1e-6};
    pass_case_result r = pass_case_run(&c);
    CHECK(r.built && r.rewrote && r.verified && r.compared);
    CHECK_EQ_INT(r.fired, 1);
    CHECK(!r.numeric_pass && !r.ok);
    CHECK_STR(r.worst, "out");
    CHECK_CONTAINS(r.why, "output 'out' differs");
    /* A wrong count. */
    pass_case w = {.build = build_foldable, .label = "fold_constants", .expect = 2, .atol = 1e-6};
    r = pass_case_run(&w);
    CHECK(!r.ok && r.numeric_pass);
    CHECK_EQ_INT(r.fired, 3);
    CHECK_CONTAINS(r.why, "fired 3 times, expected 2");
    /* An unknown label. */
    pass_case u = {.build = build_foldable, .label = "no_such_pattern", .expect = 0};
    r = pass_case_run(&u);
    CHECK(!r.ok && !r.rewrote);
    CHECK_CONTAINS(r.why, "no_such_pattern");
}

int main(void) {
    RUN(fold_fires);
    RUN(fold_does_not_fire);
    RUN(harness_catches);
    return check_report();
}
