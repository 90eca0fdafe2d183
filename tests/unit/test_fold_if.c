/* test_fold_if.c - fold_constant_if (src/passes/fold_if.c): an If whose
 * condition is a constant single-element bool becomes the branch it takes.
 * Fires: a true and a false condition (several layers, reads of an
 * enclosing tensor), a nested If (kept as a body of a copied layer, or
 * folded too when its own condition is constant), an If output that is a
 * network output (its name kept), a branch that outputs the enclosing
 * tensor itself. Must not fire: a condition that is a graph input, a
 * two-element bool, an int condition (the spec wants a bool). Every case
 * goes through pass_case.h (debug rewrite, verify, outputs bit for bit on
 * seeded inputs); the interface case also checks names and what is left. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "net_count.h"
#include "pass_case.h"

#define FOLD_IF "fold_constant_if"

static const gwr_dim d23[2] = {2, 3};

static gwr_tensor *input(gwr_network *net, const char *name) {
    return gwr_network_add_input(net, name, GWR_FLOAT32, 2, d23);
}

static gwr_tensor *bool_const(gwr_network *net, int n, int v) {
    uint8_t b[2] = {(uint8_t)v, (uint8_t)v};
    int64_t d = n;
    return gwr_constant(net, GWR_BOOL, n == 1 ? 0 : 1, &d, b);
}

/* then: Mul(Relu(x), x) + x (three layers, x read from outside) plus, with
 * nest, If(inner){Sigmoid(r)}{Neg(x)} on r = Relu(x) of the branch;
 * else: Neg(x). */
static gwr_tensor *if_layer(gwr_network *net, gwr_tensor *cond, gwr_tensor *x, gwr_tensor *inner) {
    gwr_layer *iff = gwr_network_add_layer(net, "If", "", NULL, 1, &cond, 1, NULL);
    gwr_network *th = gwr_network_new_subgraph(net, "then"), *el = gwr_network_new_subgraph(net, "else");
    gwr_tensor *r = gwr_relu(th, x), *y = gwr_add(th, gwr_mul(th, r, x), x);
    if (inner) {
        gwr_layer *in = gwr_network_add_layer(th, "If", "", NULL, 1, &inner, 1, NULL);
        gwr_network *t2 = gwr_network_new_subgraph(th, "then2"), *e2 = gwr_network_new_subgraph(th, "else2");
        gwr_network_mark_output(t2, gwr_sigmoid(t2, r));
        gwr_network_mark_output(e2, gwr_neg(e2, x));
        if (!in || gwr_layer_set_graph(in, "then_branch", t2) || gwr_layer_set_graph(in, "else_branch", e2)) {
            gwr_network_free(t2), gwr_network_free(e2);
            y = NULL;
        } else {
            gwr_tensor_set_type(gwr_layer_output(in, 0), GWR_FLOAT32, 2, d23);
            y = gwr_add(th, y, gwr_layer_output(in, 0));
        }
    }
    gwr_network_mark_output(th, y);
    gwr_network_mark_output(el, gwr_neg(el, x));
    if (!iff || gwr_layer_set_graph(iff, "then_branch", th) || gwr_layer_set_graph(iff, "else_branch", el)) {
        gwr_network_free(th);
        gwr_network_free(el);
        return NULL;
    }
    gwr_tensor_set_type(gwr_layer_output(iff, 0), GWR_FLOAT32, 2, d23);
    return gwr_layer_output(iff, 0);
}

static gwr_network *finish(gwr_network *net, gwr_tensor *y) {
    if (!y || gwr_network_mark_output(net, y)) {
        gwr_network_free(net);
        return NULL;
    }
    return net;
}

/* y = If(cond) + x */
static gwr_network *with_cond(int kind, int v, int nest) {
    gwr_network *net = gwr_network_new("if");
    gwr_tensor *x = input(net, "x"), *c;
    if (kind == 0) c = bool_const(net, 1, v);
    else if (kind == 1) c = gwr_network_add_input(net, "c", GWR_BOOL, 0, NULL);
    else if (kind == 2) c = bool_const(net, 2, v);
    else c = gwr_constant_i64(net, v);
    gwr_tensor *inner = nest == 1 ? gwr_network_add_input(net, "c2", GWR_BOOL, 0, NULL)
                        : nest == 2 ? bool_const(net, 1, 0)
                                    : NULL;
    return finish(net, gwr_add(net, if_layer(net, c, x, inner), x));
}

static gwr_network *const_true(void) { return with_cond(0, 1, 0); }
static gwr_network *const_false(void) { return with_cond(0, 0, 0); }
static gwr_network *nested_input(void) { return with_cond(0, 1, 1); }
static gwr_network *nested_const(void) { return with_cond(0, 1, 2); }
static gwr_network *cond_input(void) { return with_cond(1, 1, 0); }
static gwr_network *cond_two(void) { return with_cond(2, 1, 0); }
static gwr_network *cond_int(void) { return with_cond(3, 1, 0); }

/* outputs y = If(true){...}{...}, z = If(true){Identity(x)}{Neg(x)}: x as the
 * taken branch's output; both If outputs are the network's outputs. */
static gwr_network *outputs(void) {
    gwr_network *net = gwr_network_new("outs");
    gwr_tensor *x = input(net, "x");
    gwr_tensor *y = if_layer(net, bool_const(net, 1, 1), x, NULL);
    if (!y || gwr_tensor_set_name(y, "y") || gwr_network_mark_output(net, y)) return gwr_network_free(net), NULL;
    gwr_tensor *cz = bool_const(net, 1, 1);
    gwr_layer *iff = gwr_network_add_layer(net, "If", "", NULL, 1, &cz, 1, NULL);
    gwr_network *th = gwr_network_new_subgraph(net, "t"), *el = gwr_network_new_subgraph(net, "e");
    /* the enclosing tensor itself, through the Identity the importer puts
     * in (a body's outputs are its own tensors) */
    gwr_layer *id = gwr_network_add_layer(th, "Identity", "", NULL, 1, &x, 1, NULL);
    gwr_network_mark_output(th, id ? gwr_layer_output(id, 0) : NULL);
    gwr_network_mark_output(el, gwr_neg(el, x));
    if (!iff || gwr_layer_set_graph(iff, "then_branch", th) || gwr_layer_set_graph(iff, "else_branch", el)) {
        gwr_network_free(th), gwr_network_free(el), gwr_network_free(net);
        return NULL;
    }
    gwr_tensor *z = gwr_layer_output(iff, 0);
    gwr_tensor_set_type(z, GWR_FLOAT32, 2, d23);
    if (gwr_tensor_set_name(z, "z")) return gwr_network_free(net), NULL;
    return finish(net, z);
}

TEST(fires) {
    pass_case_check(const_true, FOLD_IF, 1, 0);
    pass_case_check(const_false, FOLD_IF, 1, 0);
    pass_case_check(nested_input, FOLD_IF, 1, 0);
    pass_case_check(nested_const, FOLD_IF, 2, 0);
    pass_case_check(outputs, FOLD_IF, 2, 0);
}

TEST(refuses) {
    pass_case_check(cond_input, FOLD_IF, 0, 0);
    /* Invalid (the executor refuses it too): left alone, nothing to compare. */
    pass_case c = {.build = cond_two, .label = FOLD_IF, .expect = 0};
    pass_case_result r = pass_case_run(&c);
    CHECK_EQ_INT(r.fired, 0);
    CHECK(r.unchanged);
    pass_case_check(cond_int, FOLD_IF, 0, 0);
}

/* What is left: the branch's layers in the outer network, a nested If
 * with a non-constant condition kept with its bodies, the interface. */
TEST(structure) {
    gwr_network *n = nested_input();
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    if (!CHECK(n && m)) goto out;
    gwr_rewrite_options o = {.debug = 1};
    CHECK_OK(gwr_passes_add(m, FOLD_IF));
    CHECK_OK(gwr_rewrite_manager_set_options(m, &o));
    CHECK_OK(gwr_rewrite_manager_rewrite(m, n, NULL));
    CHECK_OK(gwr_network_verify(n));
    CHECK_EQ_INT(count_op(n, "If"), 1); /* the inner one, now in n */
    CHECK_EQ_INT(count_op(n, "Relu"), 1);
    CHECK_EQ_INT(count_op(n, "Mul"), 1);
    CHECK_EQ_INT(count_op(n, "Neg"), 0);
    for (int64_t i = 0; i < gwr_network_num_layers(n); i++) {
        gwr_layer *l = gwr_network_layer(n, i);
        gwr_network *g = NULL;
        if (!strcmp(gwr_layer_op(l), "If") && CHECK_OK(gwr_layer_get_graph(l, "then_branch", &g)))
            CHECK(gwr_network_parent(g) == n);
    }
    gwr_rewrite_manager_free(m);
    m = NULL;
    gwr_network_free(n);
    n = outputs();
    m = gwr_rewrite_manager_new();
    if (!CHECK(n && m)) goto out;
    CHECK_OK(gwr_passes_add(m, FOLD_IF));
    CHECK_OK(gwr_rewrite_manager_set_options(m, &o));
    CHECK_OK(gwr_rewrite_manager_rewrite(m, n, NULL));
    CHECK_EQ_INT(count_op(n, "If"), 0);
    CHECK_EQ_INT(gwr_network_num_outputs(n), 2);
    CHECK(!strcmp(gwr_tensor_name(gwr_network_output(n, 0)), "y"));
    CHECK(!strcmp(gwr_tensor_name(gwr_network_output(n, 1)), "z"));
    CHECK_OK(gwr_network_verify(n));
out:
    gwr_rewrite_manager_free(m);
    gwr_network_free(n);
}

/* gwr_network_inline_subgraph refuses what it cannot inline, changing nothing. */
TEST(inline_refuses) {
    gwr_network *n = gwr_network_new("n");
    gwr_tensor *outs[1] = {NULL};
    if (!CHECK(n)) return;
    CHECK_EQ_INT(gwr_network_inline_subgraph(n, outs), GWR_ERR_INVALID_ARG); /* not a subgraph */
    CHECK_EQ_INT(gwr_network_inline_subgraph(NULL, outs), GWR_ERR_INVALID_ARG);
    gwr_network *b = gwr_network_new_subgraph(n, "loop_body");
    gwr_tensor *i = b ? gwr_network_add_input(b, "i", GWR_INT64, 0, NULL) : NULL;
    if (CHECK(i)) {
        gwr_network_mark_output(b, gwr_neg(b, i));
        CHECK_EQ_INT(gwr_network_inline_subgraph(b, outs), GWR_ERR_INVALID_ARG); /* it has inputs */
        CHECK_EQ_INT(gwr_network_num_layers(n), 0);
    }
    gwr_network_free(b);
    gwr_network_free(n);
}

int main(void) {
    RUN(inline_refuses);
    RUN(fires);
    RUN(refuses);
    RUN(structure);
    return check_report();
}
