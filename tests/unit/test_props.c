/* test_props.c - properties, opset imports, input defaults, topo_order. */
#include <stdlib.h>
#include <string.h>

#include "gwr/gwr.h"
#include "unit/check.h"

static gwr_network *small_net(gwr_tensor **x, gwr_layer **l) {
    gwr_network *net = gwr_network_new("p");
    gwr_dim d[1] = {4};
    *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, d);
    gwr_tensor *y = gwr_relu(net, *x);
    gwr_network_mark_output(net, y);
    *l = gwr_tensor_parent(y);
    return net;
}

TEST(network_props) {
    gwr_tensor *x;
    gwr_layer *l;
    gwr_network *net = small_net(&x, &l);
    CHECK_EQ_INT(gwr_network_num_props(net), 0);
    CHECK(gwr_network_prop(net, "producer", NULL) == NULL);
    CHECK_OK(gwr_network_set_prop(net, "producer", "pytorch", 7));
    CHECK_OK(gwr_network_set_prop(net, "bin", "a\0b", 3));
    CHECK_OK(gwr_network_set_prop(net, "empty", NULL, 0));
    size_t len = 0;
    const char *v = gwr_network_prop(net, "bin", &len);
    CHECK(v && len == 3 && !memcmp(v, "a\0b", 3) && v[3] == 0);
    v = gwr_network_prop(net, "empty", &len);
    CHECK(v && len == 0 && v[0] == 0);
    /* Replacing keeps the order of first setting. */
    CHECK_OK(gwr_network_set_prop(net, "producer", "onnx", 4));
    CHECK_STR(gwr_network_prop_key(net, 0), "producer");
    CHECK_STR(gwr_network_prop(net, "producer", NULL), "onnx");
    CHECK_EQ_INT(gwr_network_num_props(net), 3);
    CHECK_OK(gwr_network_remove_prop(net, "bin"));
    CHECK_EQ_INT(gwr_network_remove_prop(net, "bin"), GWR_ERR_NOT_FOUND);
    CHECK_STR(gwr_network_prop_key(net, 1), "empty");
    CHECK(gwr_network_prop_key(net, 2) == NULL);
    CHECK_EQ_INT(gwr_network_set_prop(net, "", "x", 1), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_network_set_prop(net, "k", NULL, 3), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_network_set_prop(NULL, "k", "x", 1), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_network_num_props(NULL), -1);
    gwr_network_free(net);
}

TEST(layer_and_tensor_props) {
    gwr_tensor *x;
    gwr_layer *l;
    gwr_network *net = small_net(&x, &l);
    gwr_tensor *y = gwr_layer_output(l, 0);
    CHECK_EQ_INT(gwr_layer_num_props(l), 0);
    CHECK_OK(gwr_layer_set_prop(l, "onnx.name", "", 0));
    CHECK_OK(gwr_tensor_set_prop(y, "doc", "the output", 10));
    CHECK_OK(gwr_tensor_set_prop(x, "doc", "the input", 9));
    CHECK_EQ_INT(gwr_layer_num_props(l), 1);
    CHECK_STR(gwr_tensor_prop(y, "doc", NULL), "the output");
    CHECK_STR(gwr_tensor_prop(x, "doc", NULL), "the input");
    CHECK_STR(gwr_layer_prop_key(l, 0), "onnx.name");
    /* The doc string is a property too. */
    CHECK_OK(gwr_layer_set_doc(l, "relu here"));
    CHECK_STR(gwr_layer_doc(l), "relu here");
    CHECK_STR(gwr_layer_prop(l, "doc", NULL), "relu here");
    CHECK_OK(gwr_layer_set_doc(l, ""));
    CHECK_STR(gwr_layer_doc(l), "");
    CHECK_OK(gwr_tensor_remove_prop(y, "doc"));
    CHECK_EQ_INT(gwr_tensor_remove_prop(y, "doc"), GWR_ERR_NOT_FOUND);
    CHECK_EQ_INT(gwr_tensor_num_props(y), 0);
    /* Properties go with their layer at prune (ASan would see a leak or a
     * stale entry otherwise), and survive replace_all_uses_with. */
    gwr_tensor *z = gwr_sigmoid(net, x);
    CHECK_OK(gwr_layer_set_prop(gwr_tensor_parent(z), "k", "v", 1));
    CHECK_OK(gwr_tensor_set_prop(z, "k", "v", 1));
    int64_t n = 0;
    CHECK_OK(gwr_network_prune(net, &n));
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(gwr_layer_num_props(NULL), -1);
    CHECK(gwr_layer_prop(NULL, "k", NULL) == NULL);
    CHECK_EQ_INT(gwr_layer_set_prop(NULL, "k", "v", 1), GWR_ERR_INVALID_ARG);
    gwr_network_free(net);
}

TEST(opsets) {
    gwr_network *net = gwr_network_new("o");
    gwr_network *sub = gwr_network_new_subgraph(net, "body");
    CHECK_EQ_INT(gwr_network_opset(net, ""), -1);
    CHECK_OK(gwr_network_set_opset(net, "", 13));
    CHECK_OK(gwr_network_set_opset(sub, "ai.onnx.ml", 3)); /* lands on the root */
    CHECK_OK(gwr_network_set_opset(net, "ai.onnx", 17));   /* the default domain's other name */
    CHECK_EQ_INT(gwr_network_num_opsets(net), 2);
    CHECK_EQ_INT(gwr_network_opset(net, ""), 17);
    CHECK_EQ_INT(gwr_network_opset(sub, "ai.onnx"), 17);
    CHECK_EQ_INT(gwr_network_opset(net, "ai.onnx.ml"), 3);
    CHECK_STR(gwr_network_opset_domain(net, 1), "ai.onnx.ml");
    CHECK(gwr_network_opset_domain(net, 2) == NULL);
    CHECK_EQ_INT(gwr_network_set_opset(net, "x", -1), GWR_ERR_INVALID_ARG);
    gwr_network_free(sub);
    gwr_network_free(net);
}

static int released;
static void on_release(void *ctx, const void *data, size_t size) {
    (void)ctx, (void)data, (void)size;
    released++;
}

TEST(input_defaults) {
    gwr_tensor *x;
    gwr_layer *l;
    gwr_network *net = small_net(&x, &l);
    static const float vals[4] = {1, 2, 3, 4};
    int64_t dims[1] = {4};
    gwr_buffer *b = gwr_buffer_wrap(vals, sizeof vals, on_release, NULL);
    gwr_weights w = {GWR_FLOAT32, 1, dims, vals, sizeof vals, b, NULL};
    CHECK(gwr_tensor_default(x) == NULL);
    CHECK_OK(gwr_tensor_set_default(x, &w));
    gwr_buffer_release(b);
    CHECK_EQ_INT(released, 0); /* shared, not copied */
    const gwr_weights *d = gwr_tensor_default(x);
    CHECK(d && d->data == vals && d->rank == 1 && d->dims[0] == 4);
    CHECK_EQ_INT(gwr_tensor_set_default(gwr_layer_output(l, 0), &w), GWR_ERR_INVALID_ARG);
    gwr_weights bad = w;
    bad.nbytes = 3;
    bad.buffer = NULL;
    CHECK(gwr_tensor_set_default(x, &bad) != GWR_OK);
    CHECK(gwr_tensor_default(x) != NULL); /* unchanged */
    CHECK_OK(gwr_tensor_set_default(x, NULL));
    CHECK_EQ_INT(released, 1);
    CHECK(gwr_tensor_default(x) == NULL);
    /* A default still set is released with the network. */
    b = gwr_buffer_wrap(vals, sizeof vals, on_release, NULL);
    w.buffer = b;
    CHECK_OK(gwr_tensor_set_default(x, &w));
    gwr_buffer_release(b);
    gwr_network_free(net);
    CHECK_EQ_INT(released, 2);
}

TEST(topo_order) {
    gwr_network *net = gwr_network_new("t");
    gwr_dim d[1] = {4};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, d);
    gwr_tensor *a = gwr_relu(net, x);
    gwr_tensor *b = gwr_sigmoid(net, x);
    gwr_tensor *c = gwr_add(net, a, b);
    gwr_network_mark_output(net, c);
    /* Make the Relu read b: network order is no longer topological. */
    CHECK_OK(gwr_layer_set_input(gwr_tensor_parent(a), 0, b));
    gwr_layer *order[3];
    CHECK_OK(gwr_network_topo_order(net, order));
    CHECK(order[0] == gwr_tensor_parent(b) && order[1] == gwr_tensor_parent(a) && order[2] == gwr_tensor_parent(c));
    /* Network order itself is untouched. */
    CHECK(gwr_network_layer(net, 0) == gwr_tensor_parent(a));
    CHECK_EQ_INT(gwr_network_topo_order(NULL, order), GWR_ERR_INVALID_ARG);
    gwr_network_free(net);
}

static const gwr_tensor *removed_input;
static void on_input_removed(void *ctx, gwr_tensor *t) {
    (void)ctx;
    removed_input = t;
}

/* gwr_network_remove_input: only an input nothing reads and no output; its
 * default goes with it, listeners hear of it, and the later inputs move up. */
TEST(remove_input) {
    gwr_tensor *x;
    gwr_layer *l;
    gwr_network *net = small_net(&x, &l);
    gwr_dim d[1] = {4};
    gwr_tensor *u = gwr_network_add_input(net, "u", GWR_FLOAT32, 1, d);
    gwr_tensor *v = gwr_network_add_input(net, "v", GWR_FLOAT32, 1, d);
    static const float vals[4] = {1, 2, 3, 4};
    int64_t dims[1] = {4};
    int before = released;
    gwr_buffer *b = gwr_buffer_wrap(vals, sizeof vals, on_release, NULL);
    gwr_weights w = {GWR_FLOAT32, 1, dims, vals, sizeof vals, b, NULL};
    CHECK_OK(gwr_tensor_set_default(u, &w));
    gwr_buffer_release(b);
    gwr_listener ls = {.input_removed = on_input_removed};
    CHECK(gwr_network_add_listener(net, &ls) >= 0);
    CHECK_EQ_INT(gwr_network_remove_input(net, x), GWR_ERR_STATE);                    /* read by the Relu */
    CHECK_EQ_INT(gwr_network_remove_input(net, gwr_layer_output(l, 0)), GWR_ERR_INVALID_ARG); /* no input */
    CHECK_OK(gwr_network_mark_output(net, v));
    CHECK_EQ_INT(gwr_network_remove_input(net, v), GWR_ERR_STATE);                    /* an output */
    CHECK_EQ_INT(gwr_network_num_inputs(net), 3);
    CHECK(removed_input == NULL); /* the refusals above told no one */
    CHECK_OK(gwr_network_remove_input(net, u));
    CHECK(removed_input == u);
    CHECK_EQ_INT(released, before + 1); /* the default went with it */
    CHECK_EQ_INT(gwr_network_num_inputs(net), 2);
    CHECK(gwr_network_input(net, 0) == x && gwr_network_input(net, 1) == v);
    CHECK(gwr_network_find_tensor(net, "u") == NULL);
    CHECK_OK(gwr_network_verify(net));
    CHECK(gwr_network_add_input(net, "u", GWR_FLOAT32, 1, d) != NULL); /* the name is free again */
    CHECK_OK(gwr_network_verify(net));
    gwr_network_free(net);
}

int main(void) {
    RUN(network_props);
    RUN(layer_and_tensor_props);
    RUN(opsets);
    RUN(input_defaults);
    RUN(remove_input);
    RUN(topo_order);
    return check_report();
}
