/* tour.c - the README's tour of the C API: build a network, find a
 * tensor's parent and users, replace its uses, prune, and print DOT.
 * Exits non-zero if anything does not behave as the tour says. */
#include <stdio.h>
#include <string.h>

#include <gwr/gwr.h>

#define CHECK(cond)                                                   \
    do {                                                              \
        if (!(cond)) {                                                \
            fprintf(stderr, "tour: %s failed: %s\n", #cond, gwr_network_errmsg(net)); \
            gwr_network_free(net);                                    \
            return 1;                                                 \
        }                                                             \
    } while (0)

int main(void) {
    gwr_network *net = gwr_network_new("tour");
    if (!net) return 1;

    /* y = relu(a + b) * b, with a symbolic batch dimension. */
    gwr_dim dims[2] = {gwr_network_dim_sym(net, "batch"), 16};
    gwr_tensor *a = gwr_network_add_input(net, "a", GWR_FLOAT32, 2, dims);
    gwr_tensor *b = gwr_network_add_input(net, "b", GWR_FLOAT32, 2, dims);
    gwr_tensor *sum = gwr_add(net, a, b);
    gwr_tensor *act = gwr_relu(net, sum);
    gwr_tensor *y = gwr_mul(net, act, b);
    CHECK(y && gwr_tensor_set_name(y, "y") == GWR_OK && gwr_network_mark_output(net, y) == GWR_OK);

    /* Walk: the parent of `sum` is the Add layer; `b` has two users. */
    gwr_layer *add = gwr_tensor_parent(sum);
    CHECK(gwr_layer_type(add) == GWR_LAYER_ELEMENTWISE && gwr_layer_ew_op(add) == GWR_EW_SUM);
    CHECK(gwr_tensor_num_users(b) == 2);
    printf("'%s' is made by %s '%s'; '%s' feeds", gwr_tensor_name(sum), gwr_layer_op(add), gwr_layer_name(add),
           gwr_tensor_name(b));
    for (int64_t i = 0; i < gwr_tensor_num_users(b); i++) printf(" '%s'", gwr_layer_name(gwr_tensor_user(b, i, NULL)));
    printf("\n");

    /* Rewrite: replace the Add by a Sub, the reference's first example. */
    gwr_tensor *diff = gwr_sub(net, gwr_layer_input(add, 0), gwr_layer_input(add, 1));
    CHECK(diff && gwr_tensor_replace_all_uses_with(sum, diff) == GWR_OK);
    CHECK(gwr_layer_mark_as_removed(add) == GWR_OK);
    CHECK(gwr_tensor_parent(gwr_layer_input(gwr_tensor_parent(act), 0)) == gwr_tensor_parent(diff));

    /* Prune drops the removed Add; the network still verifies and keeps
     * its interface. */
    int64_t dropped = 0;
    CHECK(gwr_network_prune(net, &dropped) == GWR_OK && dropped == 1);
    CHECK(gwr_network_verify(net) == GWR_OK);
    CHECK(gwr_network_num_layers(net) == 3 && !strcmp(gwr_tensor_name(gwr_network_output(net, 0)), "y"));

    /* Print a Graphviz picture. */
    CHECK(gwr_network_write_dot(net, stdout) == GWR_OK);
    gwr_network_free(net);
    return 0;
}
