/* replace_add_with_sub.c - the first seed example of TensorRT-LLM's graph
 * rewriting module: every elementwise SUM becomes a SUB with the same
 * inputs and the same consumers.
 *
 * The pattern itself is gwr_pattern_replace_add_with_sub (src/passes/seed.c:
 * root class ELEMENTWISE, separate match and rewrite, the four stages of a
 * rewrite). This program puts it in a manager, applies it to a small
 * network, and checks the result with a PatternAnalyzer of its own that
 * counts SUMs and SUBs. Exit status 0 when everything is as expected. */
#include <stdio.h>
#include <string.h>

#include "gwr/gwr.h"

/* An analyzer: counts the layers of each elementwise operation. */
typedef struct counts {
    int sum, sub, other;
} counts;

static gwr_status count_ops(gwr_rewrite_ctx *c, gwr_layer *const *layers, int n) {
    counts *k = gwr_rewrite_ctx_user(c);
    for (int i = 0; i < n; i++) {
        gwr_ew_op op = gwr_layer_ew_op(layers[i]);
        if (op == GWR_EW_SUM) k->sum++;
        else if (op == GWR_EW_SUB) k->sub++;
        else k->other++;
    }
    return GWR_OK;
}

static counts count(gwr_network *net) {
    counts k = {0, 0, 0};
    gwr_pattern_analyzer a = {
        .name = "count_elementwise",
        .root_classes = GWR_ROOT_CLASS(GWR_LAYER_ELEMENTWISE),
        .analyze = count_ops,
        .user = &k,
    };
    gwr_analysis_manager *am = gwr_analysis_manager_new();
    if (!am || gwr_analysis_manager_add(am, "count", &a, 0) || gwr_analysis_manager_analyze(am, net, NULL))
        fprintf(stderr, "analysis failed: %s\n", am ? gwr_analysis_manager_errmsg(am) : "out of memory");
    gwr_analysis_manager_free(am);
    return k;
}

int main(void) {
    /* x, y -> a = x + y -> b = a * y -> out = b + x */
    gwr_network *net = gwr_network_new("add_to_sub");
    gwr_dim dims[2] = {2, 3};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, dims);
    gwr_tensor *y = gwr_network_add_input(net, "y", GWR_FLOAT32, 2, dims);
    gwr_tensor *a = gwr_add(net, x, y);
    gwr_tensor *b = gwr_mul(net, a, y);
    gwr_tensor *out = gwr_add(net, b, x);
    if (!out || gwr_tensor_set_name(out, "out") || gwr_network_mark_output(net, out)) {
        fprintf(stderr, "%s\n", gwr_network_errmsg(net));
        return 1;
    }
    counts before = count(net);
    printf("before: %d SUM, %d SUB, %d other elementwise layers\n", before.sum, before.sub, before.other);

    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    gwr_rewrite_manager_add(m, "replace_add_with_sub", &gwr_pattern_replace_add_with_sub, 1);
    gwr_rewrite_manager_trace(m, stdout, GWR_TRACE_TEXT, 0);
    if (gwr_rewrite_manager_rewrite(m, net, NULL)) {
        fprintf(stderr, "rewrite failed: %s\n", gwr_rewrite_manager_errmsg(m));
        return 1;
    }
    counts after = count(net);
    printf("after:  %d SUM, %d SUB, %d other elementwise layers\n", after.sum, after.sub, after.other);

    /* The output keeps its name; its producer is now a Sub reading b and x. */
    gwr_tensor *o = gwr_network_output(net, 0);
    gwr_layer *p = gwr_tensor_parent(o);
    int ok = after.sum == 0 && after.sub == 2 && after.other == 1 && !strcmp(gwr_tensor_name(o), "out") &&
             !strcmp(gwr_layer_op(p), "Sub") && gwr_layer_input(p, 1) == x &&
             gwr_network_num_layers(net) == 3 && gwr_network_verify(net) == GWR_OK;
    printf("output '%s' is produced by %s(%s, %s): %s\n", gwr_tensor_name(o), gwr_layer_op(p),
           gwr_tensor_name(gwr_layer_input(p, 0)), gwr_tensor_name(gwr_layer_input(p, 1)), ok ? "as expected" : "WRONG");
    gwr_rewrite_manager_free(m);
    gwr_network_free(net);
    return ok ? 0 : 1;
}
