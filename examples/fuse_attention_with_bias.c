/* fuse_attention_with_bias.c - the third seed example (the one real pass of
 * TensorRT-LLM's graph rewriting module): an Add of a non-constant tensor
 * and a constant bias, read only by a GPTAttention plugin's qkv, is folded
 * into the plugin's qkv_bias; the plugin is re-created through its
 * FLayerInfo and the Add disappears.
 *
 * Two attention layers are built: one whose bias Add is read only by the
 * plugin (fused), one whose Add is also read elsewhere (left alone). The
 * pattern is gwr_pattern_fuse_attention_with_bias (src/passes/seed.c). Exit
 * status 0 when the result is as expected. */
#include <stdio.h>
#include <string.h>

#include "gwr/gwr.h"

/* qkv = x @ w + b, then gpt_attention(qkv); returns the plugin's context. */
static gwr_tensor *attention(gwr_network *net, gwr_tensor *x, gwr_tensor **qkv_out) {
    int64_t wd[2] = {8, 24}, bd[1] = {24};
    float w[8 * 24], b[24];
    for (int i = 0; i < 8 * 24; i++) w[i] = (float)(i % 7) * 0.1f;
    for (int i = 0; i < 24; i++) b[i] = (float)i * 0.01f;
    gwr_tensor *qkv = gwr_add(net, gwr_matmul(net, x, gwr_constant(net, GWR_FLOAT32, 2, wd, w)),
                              gwr_constant(net, GWR_FLOAT32, 1, bd, b));
    gwr_args *a = gwr_args_new();
    gwr_args_set_tensor(a, "qkv", qkv);
    gwr_args_set_int(a, "num_heads", 2);
    gwr_args_set_int(a, "head_size", 4);
    gwr_tensor *outs[2] = {NULL, NULL};
    gwr_status s = gwr_call(net, GWR_GPT_ATTENTION, a, outs, 2, NULL);
    gwr_args_free(a);
    if (qkv_out) *qkv_out = qkv;
    return s ? NULL : outs[0];
}

int main(void) {
    gwr_network *net = gwr_network_new("fuse");
    gwr_dim dims[3] = {1, 5, 8};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 3, dims);
    gwr_tensor *qkv2;
    gwr_tensor *c1 = attention(net, x, NULL);
    gwr_tensor *c2 = attention(net, x, &qkv2);
    /* the second qkv is also a network output: its Add must stay */
    if (!c1 || !c2 || gwr_tensor_set_name(c1, "ctx1") || gwr_tensor_set_name(c2, "ctx2") ||
        gwr_tensor_set_name(qkv2, "qkv2") || gwr_network_mark_output(net, c1) || gwr_network_mark_output(net, c2) ||
        gwr_network_mark_output(net, qkv2)) {
        fprintf(stderr, "%s\n", gwr_network_errmsg(net));
        return 1;
    }
    int64_t before = gwr_network_num_live_layers(net);

    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    gwr_passes_add(m, "fuse_attention_with_bias");
    gwr_rewrite_manager_trace(m, stdout, GWR_TRACE_TEXT, 1); /* match failures too, with reasons */
    if (gwr_rewrite_manager_rewrite(m, net, NULL)) {
        fprintf(stderr, "rewrite failed: %s\n", gwr_rewrite_manager_errmsg(m));
        return 1;
    }
    gwr_layer *p1 = gwr_tensor_parent(gwr_network_output(net, 0));
    gwr_layer *p2 = gwr_tensor_parent(gwr_network_output(net, 1));
    gwr_flayer *f1 = gwr_flayer_get(net, p1);
    printf("%s: qkv=%s qkv_bias=%s\n", gwr_layer_name(p1), gwr_tensor_name(gwr_layer_input(p1, 0)),
           gwr_layer_input(p1, 1) ? gwr_tensor_name(gwr_layer_input(p1, 1)) : "none");
    printf("%s: qkv=%s qkv_bias=%s\n", gwr_layer_name(p2), gwr_tensor_name(gwr_layer_input(p2, 0)),
           gwr_layer_input(p2, 1) ? gwr_tensor_name(gwr_layer_input(p2, 1)) : "none");
    printf("layers: %lld -> %lld\n", (long long)before, (long long)gwr_network_num_live_layers(net));
    int ok = f1 && gwr_layer_input(p1, 1) && gwr_flayer_get_input(f1, "qkv_bias") == gwr_layer_input(p1, 1) &&
             !strcmp(gwr_layer_op(gwr_tensor_parent(gwr_layer_input(p1, 0))), "MatMul") && !gwr_layer_input(p2, 1) &&
             gwr_network_num_live_layers(net) == before - 1 &&
             !strcmp(gwr_tensor_name(gwr_network_output(net, 0)), "ctx1") && gwr_network_verify(net) == GWR_OK;
    printf("%s\n", ok ? "as expected" : "WRONG");
    gwr_rewrite_manager_free(m);
    gwr_network_free(net);
    return ok ? 0 : 1;
}
