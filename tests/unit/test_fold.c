/* test_fold.c - the fold_constants pattern (src/passes/fold.c): what folds,
 * what must not, the size limit, and that the folded network computes what
 * the original computed (run on the executor). Uses only ops whose
 * kernels are part of the core (Constant, Identity) and Shape, which
 * folds from types alone; tests/cli/test_fold.sh folds ONNX's conformance
 * models. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"

static gwr_tensor *constant(gwr_network *net, const char *name, int64_t n, float start) {
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = start + (float)i;
    gwr_buffer *b = gwr_buffer_new_copy(v, (size_t)n * sizeof *v);
    free(v);
    gwr_weights w = {GWR_FLOAT32, 1, &n, gwr_buffer_data(b), (size_t)n * sizeof(float), b, NULL};
    gwr_tensor *t = gwr_network_add_constant(net, name, &w);
    gwr_buffer_release(b);
    return t;
}

static gwr_tensor *unary(gwr_network *net, const char *op, const char *name, gwr_tensor *x) {
    gwr_layer *l = gwr_network_add_layer(net, op, "", name, 1, &x, 1, NULL);
    return l ? gwr_layer_output(l, 0) : NULL;
}

/* Runs the pattern; returns the number of rewrites (or -1). */
static int64_t fold(gwr_network *net, gwr_args *args) {
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    gwr_rewrite_summary sum;
    int64_t n = -1;
    if (CHECK_OK(gwr_passes_add(m, "fold_constants")) && CHECK_OK(gwr_rewrite_manager_rewrite(m, net, args)) &&
        CHECK_OK(gwr_rewrite_manager_summary(m, &sum)))
        n = sum.rewrites;
    gwr_rewrite_manager_free(m);
    return n;
}

static int count_op(gwr_network *net, const char *op) {
    int n = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++)
        n += !strcmp(gwr_layer_op(gwr_network_layer(net, i)), op) && !gwr_layer_is_removed(gwr_network_layer(net, i));
    return n;
}

/* Runs net (inputs: "x" float32[3] when it has one) and returns output 0. */
static gwr_value *run0(gwr_network *net) {
    gwr_session *s = gwr_session_new_raw(net, NULL);
    if (!CHECK(s)) {
        fprintf(stderr, "  %s\n", gwr_last_errmsg());
        return NULL;
    }
    int64_t three = 3;
    gwr_value *x = gwr_value_new(GWR_FLOAT32, 1, &three), *y[4] = {0};
    const char *xn = "x";
    int has_x = gwr_network_num_inputs(net) > 0;
    if (!CHECK_OK(gwr_session_run(s, has_x, has_x ? &xn : NULL, has_x ? &x : NULL, gwr_network_num_outputs(net), NULL, y)))
        fprintf(stderr, "  %s\n", gwr_session_errmsg(s));
    for (int i = 1; i < 4; i++) gwr_value_release(y[i]);
    gwr_value_release(x);
    gwr_session_free(s);
    return y[0];
}

TEST(chain_folds_in_one_run) {
    gwr_network *net = gwr_network_new("f");
    gwr_tensor *k = constant(net, "k", 4, 1.0f);
    gwr_tensor *y = unary(net, "Identity", "b", unary(net, "Identity", "a", k));
    gwr_tensor_set_name(y, "y");
    gwr_network_mark_output(net, y);
    gwr_value *before = run0(net);
    CHECK_EQ_INT(fold(net, NULL), 2);
    CHECK_EQ_INT(count_op(net, "Identity"), 0);
    CHECK_EQ_INT(gwr_network_num_live_layers(net), 1); /* one constant; the others pruned */
    gwr_tensor *out = gwr_network_output(net, 0);
    CHECK_STR(gwr_tensor_name(out), "y"); /* the interface is unchanged */
    CHECK(gwr_layer_type(gwr_tensor_parent(out)) == GWR_LAYER_CONSTANT);
    gwr_value *after = run0(net);
    if (CHECK(before && after)) {
        CHECK_EQ_INT(gwr_value_numel(after), 4);
        CHECK(!memcmp(gwr_value_cdata(before), gwr_value_cdata(after), 16));
        CHECK(gwr_value_get_f64(after, 3) == 4.0);
    }
    gwr_value_release(before), gwr_value_release(after);
    CHECK_OK(gwr_network_verify(net));
    gwr_network_free(net);
}

TEST(shape_of_known_dims) {
    gwr_network *net = gwr_network_new("s");
    gwr_dim d[3] = {2, 5, 7};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 3, d);
    gwr_tensor *r = unary(net, "Identity", "r", x);
    gwr_tensor_set_type(r, GWR_FLOAT32, 3, d); /* as shape inference would */
    gwr_tensor *s = unary(net, "Shape", "s", r); /* reads a computed tensor: folds from its type */
    gwr_layer *sl = gwr_network_add_layer(net, "Shape", "", "s2", 1, &x, 1, NULL);
    gwr_layer_set_int(sl, "start", -2);
    gwr_network_mark_output(net, s);
    gwr_network_mark_output(net, gwr_layer_output(sl, 0));
    /* the Identity (and its input) must survive as long as r is read */
    gwr_network_mark_output(net, r);
    CHECK_EQ_INT(fold(net, NULL), 2);
    CHECK_EQ_INT(count_op(net, "Shape"), 0);
    const gwr_weights *w;
    gwr_layer *c0 = gwr_tensor_parent(gwr_network_output(net, 0)), *c1 = gwr_tensor_parent(gwr_network_output(net, 1));
    if (CHECK_OK(gwr_layer_get_tensor(c0, "value", &w))) {
        CHECK(w->dtype == GWR_INT64 && w->rank == 1 && w->dims[0] == 3);
        const int64_t *v = w->data;
        CHECK(v[0] == 2 && v[1] == 5 && v[2] == 7);
    }
    if (CHECK_OK(gwr_layer_get_tensor(c1, "value", &w))) {
        CHECK(w->dims[0] == 2 && ((const int64_t *)w->data)[0] == 5 && ((const int64_t *)w->data)[1] == 7);
    }
    gwr_network_free(net);
}

TEST(what_does_not_fold) {
    gwr_network *net = gwr_network_new("n");
    gwr_dim d[1] = {3}, sym[1] = {gwr_network_dim_sym(net, "n")};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, d);
    gwr_tensor *z = gwr_network_add_input(net, "z", GWR_FLOAT32, 1, sym);
    gwr_network_mark_output(net, unary(net, "Identity", "nonconst", x));      /* a graph input */
    gwr_network_mark_output(net, unary(net, "Shape", "symshape", z));         /* a symbolic dim */
    gwr_tensor *k = constant(net, "k", 3, 0.0f);
    gwr_network_mark_output(net, unary(net, "RandomNormalLike", "rnd", k));  /* random */
    gwr_network_mark_output(net, unary(net, "NoSuchOp", "nokernel", k));     /* no kernel */
    gwr_tensor *big = constant(net, "big", 1000, 0.0f);
    gwr_network_mark_output(net, unary(net, "Identity", "big_id", big));     /* 4000 bytes > limit */
    gwr_args *args = gwr_args_new();
    gwr_args_set_int(args, "fold_max_bytes", 100);
    CHECK_EQ_INT(fold(net, args), 0);
    CHECK_EQ_INT(gwr_network_num_live_layers(net), 7);
    gwr_args_set_int(args, "fold_max_bytes", 4000); /* the limit is inclusive */
    CHECK_EQ_INT(fold(net, args), 1);
    CHECK(!gwr_network_find_layer(net, "big_id"));
    gwr_args_free(args);
    gwr_network_free(net);
}

/* A subgraph layer is not folded even when its inputs are constants. */
TEST(subgraphs_not_folded) {
    gwr_network *net = gwr_network_new("g");
    gwr_tensor *k = constant(net, "k", 1, 1.0f);
    gwr_layer *l = gwr_network_add_layer(net, "If", "", "if", 1, &k, 1, NULL);
    gwr_network *then_g = gwr_network_new_subgraph(net, "then");
    gwr_network_mark_output(then_g, constant(then_g, "t", 1, 5.0f));
    gwr_layer_set_graph(l, "then_branch", then_g);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    CHECK_EQ_INT(fold(net, NULL), 0);
    CHECK(gwr_network_find_layer(net, "if") != NULL);
    gwr_network_free(net);
}

int main(void) {
    RUN(chain_folds_in_one_run);
    RUN(shape_of_known_dims);
    RUN(what_does_not_fold);
    RUN(subgraphs_not_folded);
    return check_report();
}
