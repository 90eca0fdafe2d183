/* gpt_attention_remove_padding.c - the second seed example: a GPTAttention
 * plugin, opaque to the graph, is re-created through the call signature
 * recorded when it was built (its FLayerInfo) with qkv packed to
 * (1, batch_size * in_len, hidden_size) and remove_padding set. The
 * shapes come from the manager's args, as `self.args` in the reference.
 *
 * The pattern is gwr_pattern_gpt_attention_remove_padding
 * (src/passes/seed.c). Exit status 0 when the result is as expected. */
#include <stdio.h>
#include <string.h>

#include "gwr/gwr.h"

static void show(gwr_network *net, const char *when) {
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        gwr_flayer *f = gwr_flayer_get(net, l);
        if (!f) continue;
        char ty[96];
        int64_t rp = -1;
        gwr_tensor *qkv = gwr_flayer_get_input(f, "qkv");
        gwr_tensor_type_str(qkv, ty, sizeof ty);
        gwr_args_get_int(gwr_flayer_inputs(f), "remove_padding", &rp);
        printf("%s: %s = %s(qkv=%s:%s, remove_padding=%lld)\n", when, gwr_layer_name(l), gwr_flayer_kind(f),
               gwr_tensor_name(qkv), ty, (long long)rp);
    }
}

int main(void) {
    gwr_network *net = gwr_network_new("gpt");
    gwr_gpt_config cfg = {.blocks = 2, .hidden = 32, .heads = 2, .use_plugin = 1, .seed = 7};
    if (!gwr_build_gpt(net, &cfg)) {
        fprintf(stderr, "%s\n", gwr_network_errmsg(net));
        return 1;
    }
    show(net, "before");

    gwr_args *args = gwr_args_new();
    gwr_args_set_int(args, "batch_size", 4);
    gwr_args_set_int(args, "in_len", 10);
    gwr_args_set_int(args, "hidden_size", 3 * cfg.hidden); /* the width of qkv */
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    gwr_passes_add(m, "gpt_attention_remove_padding");
    gwr_rewrite_manager_trace(m, stdout, GWR_TRACE_TEXT, 0);
    if (gwr_rewrite_manager_rewrite(m, net, args)) {
        fprintf(stderr, "rewrite failed: %s\n", gwr_rewrite_manager_errmsg(m));
        return 1;
    }
    show(net, "after");

    int ok = gwr_network_verify(net) == GWR_OK && gwr_flayer_memo_size(net) == 2;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        gwr_flayer *f = gwr_flayer_get(net, l);
        if (!f) continue;
        gwr_tensor *qkv = gwr_layer_input(l, 0);
        int64_t rp = 0;
        gwr_layer_get_int(l, "remove_padding", &rp);
        ok = ok && rp == 1 && gwr_flayer_get_input(f, "qkv") == qkv && gwr_tensor_dim(qkv, 0) == 1 &&
             gwr_tensor_dim(qkv, 1) == 40 && gwr_tensor_dim(qkv, 2) == 96;
    }
    /* A second run finds every plugin converted already. */
    gwr_rewrite_summary s;
    ok = ok && !gwr_rewrite_manager_rewrite(m, net, args) && !gwr_rewrite_manager_summary(m, &s) && s.rewrites == 0;
    printf("%s\n", ok ? "as expected" : "WRONG");
    gwr_rewrite_manager_free(m);
    gwr_args_free(args);
    gwr_network_free(net);
    return ok ? 0 : 1;
}
