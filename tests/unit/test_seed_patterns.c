/* test_seed_patterns.c - the three seed patterns (src/passes/seed.c): they
 * fire where they should, keep connectivity, FLayerInfo and output names
 * right, and do not fire on their negative cases. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "net_count.h"


/* The reader counts of the live layers of `op`, in network order, into
 * out (at most max); returns how many layers there are. */
static int64_t readers_of(gwr_network *net, const char *op, int64_t *out, int64_t max) {
    int64_t n = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (gwr_layer_is_removed(l) || strcmp(gwr_layer_op(l), op)) continue;
        if (n < max) out[n] = gwr_tensor_num_users(gwr_layer_output(l, 0));
        n++;
    }
    return n;
}

static gwr_network *gpt(int blocks) {
    gwr_network *net = gwr_network_new("gpt");
    gwr_gpt_config cfg = {.blocks = blocks, .hidden = 64, .heads = 4, .use_plugin = 1, .seed = 3};
    if (!gwr_build_gpt(net, &cfg)) {
        gwr_network_free(net);
        return NULL;
    }
    return net;
}

static gwr_status apply(gwr_network *net, const char *const *labels, int n, const gwr_args *args,
                        gwr_rewrite_summary *sum, char *msg, size_t msgsize) {
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    gwr_status s = GWR_OK;
    for (int i = 0; i < n && !s; i++) s = gwr_passes_add(m, labels[i]);
    if (!s) s = gwr_rewrite_manager_set_options(m, &(gwr_rewrite_options){.debug = 1});
    if (!s) s = gwr_rewrite_manager_rewrite(m, net, args);
    if (sum) gwr_rewrite_manager_summary(m, sum);
    if (msg) snprintf(msg, msgsize, "%s", gwr_rewrite_manager_errmsg(m));
    gwr_rewrite_manager_free(m);
    return s;
}

/* Every live plugin's FLayerInfo agrees with the layer. */
static void check_flayers(gwr_network *net, int64_t expect_plugins) {
    int64_t n = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (strcmp(gwr_layer_op(l), "GPTAttention")) continue;
        n++;
        gwr_flayer *f = gwr_flayer_get(net, l);
        if (!CHECK(f)) continue;
        CHECK(gwr_flayer_layer(f) == l);
        CHECK_STR(gwr_flayer_kind(f), "gpt_attention");
        CHECK(gwr_flayer_get_input(f, "qkv") == gwr_layer_input(l, 0));
        CHECK(gwr_flayer_get_input(f, "qkv_bias") == gwr_layer_input(l, 1));
        CHECK_EQ_INT(gwr_flayer_num_outputs(f), gwr_layer_num_outputs(l));
        for (int k = 0; k < gwr_flayer_num_outputs(f); k++) CHECK(gwr_flayer_output(f, k) == gwr_layer_output(l, k));
    }
    CHECK_EQ_INT(n, expect_plugins);
    CHECK_EQ_INT(gwr_flayer_memo_size(net), expect_plugins);
}

TEST(replace_add_with_sub_on_gpt) {
    gwr_network *net = gpt(2);
    if (!CHECK(net)) return;
    int64_t adds = count_op(net, "Add"), subs = count_op(net, "Sub"), layers = gwr_network_num_live_layers(net);
    CHECK_EQ_INT(adds, 12); /* 4 biases + 2 residuals per block */
    int64_t readers_before[16], readers_after[16];
    CHECK_EQ_INT(readers_of(net, "Add", readers_before, 16), 12);
    static const char *const labels[] = {"replace_add_with_sub"};
    gwr_rewrite_summary sum;
    CHECK_OK(apply(net, labels, 1, NULL, &sum, NULL, 0));
    CHECK_EQ_INT(sum.rewrites, 12);
    CHECK_EQ_INT(count_op(net, "Add"), 0);
    CHECK_EQ_INT(count_op(net, "Sub"), subs + 12);
    CHECK_EQ_INT(gwr_network_num_live_layers(net), layers);
    CHECK_EQ_INT(gwr_network_num_layers(net), layers); /* pruned */
    /* The Subs are made in the order the Adds are visited (network order)
     * and appended, so the k-th Sub replaces the k-th Add: same number of
     * readers each. Exact connectivity is checked on a small network below
     * and, independently, by python3-onnx in tests/cli. */
    CHECK_EQ_INT(readers_of(net, "Sub", readers_after, 16), subs + 12);
    for (int k = 0; k < 12; k++) CHECK_EQ_INT(readers_after[subs + k], readers_before[k]);
    CHECK_STR(gwr_tensor_name(gwr_network_output(net, 0)), "y");
    CHECK_EQ_INT(gwr_network_num_outputs(net), 1);
    CHECK_OK(gwr_network_verify(net));
    check_flayers(net, 2);
    gwr_network_free(net);
}

/* Precise connectivity on a tiny network: each Sub reads the Add's inputs
 * in order and feeds exactly the Add's readers, slot for slot. */
TEST(replace_add_with_sub_connectivity) {
    gwr_network *net = gwr_network_new("t");
    gwr_dim d[1] = {3};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, d);
    gwr_tensor *y = gwr_network_add_input(net, "y", GWR_FLOAT32, 1, d);
    gwr_tensor *a = gwr_add(net, x, y);
    gwr_tensor *m = gwr_mul(net, a, a);
    gwr_tensor *r = gwr_relu(net, a);
    gwr_tensor_set_name(a, "a");
    gwr_network_mark_output(net, a);
    gwr_network_mark_output(net, m);
    gwr_network_mark_output(net, r);
    static const char *const labels[] = {"replace_add_with_sub"};
    CHECK_OK(apply(net, labels, 1, NULL, NULL, NULL, 0));
    gwr_tensor *na = gwr_network_output(net, 0);
    CHECK_STR(gwr_tensor_name(na), "a"); /* the output's name stays */
    gwr_layer *sub = gwr_tensor_parent(na);
    if (!CHECK(sub)) return;
    CHECK_STR(gwr_layer_op(sub), "Sub");
    CHECK(gwr_layer_input(sub, 0) == x && gwr_layer_input(sub, 1) == y);
    CHECK_EQ_INT(gwr_tensor_num_users(na), 3);
    gwr_layer *ml = gwr_tensor_parent(m), *rl = gwr_tensor_parent(r);
    CHECK(gwr_layer_input(ml, 0) == na && gwr_layer_input(ml, 1) == na);
    CHECK(gwr_layer_input(rl, 0) == na);
    CHECK_EQ_INT(gwr_network_num_layers(net), 3);
    CHECK_OK(gwr_network_verify(net));
    gwr_network_free(net);
}

TEST(fuse_attention_with_bias_on_gpt) {
    gwr_network *net = gpt(3);
    if (!CHECK(net)) return;
    int64_t adds = count_op(net, "Add"), layers = gwr_network_num_live_layers(net);
    static const char *const labels[] = {"fuse_attention_with_bias"};
    gwr_rewrite_summary sum;
    CHECK_OK(apply(net, labels, 1, NULL, &sum, NULL, 0));
    CHECK_EQ_INT(sum.rewrites, 3);
    CHECK_EQ_INT(count_op(net, "Add"), adds - 3);
    CHECK_EQ_INT(count_op(net, "GPTAttention"), 3);
    /* the Add went; the constant stayed (now read by the plugin) */
    CHECK_EQ_INT(gwr_network_num_layers(net), layers - 3);
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (strcmp(gwr_layer_op(l), "GPTAttention")) continue;
        gwr_tensor *qkv = gwr_layer_input(l, 0), *bias = gwr_layer_input(l, 1);
        CHECK_STR(gwr_layer_op(gwr_tensor_parent(qkv)), "MatMul");
        if (CHECK(bias)) {
            CHECK_STR(gwr_layer_op(gwr_tensor_parent(bias)), "Constant");
            CHECK_EQ_INT(gwr_tensor_dim(bias, 0), 192);
        }
    }
    check_flayers(net, 3);
    CHECK_STR(gwr_tensor_name(gwr_network_output(net, 0)), "y");
    CHECK_OK(gwr_network_verify(net));
    /* A second run finds nothing to do. */
    CHECK_OK(apply(net, labels, 1, NULL, &sum, NULL, 0));
    CHECK_EQ_INT(sum.rewrites, 0);
    gwr_network_free(net);
}

/* x (1,4,12) -> MatMul(w) -> Add(bias) -> gpt_attention(qkv); variants
 * for the negative cases. */
enum { NEG_NONE, NEG_USED_TWICE, NEG_NONCONST, NEG_BIAS_SET, NEG_OUTPUT, NEG_BIAS_2D };

static gwr_network *attention_case(int variant, gwr_layer **plugin) {
    gwr_network *net = gwr_network_new("att");
    gwr_dim d[3] = {2, 5, 12};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 3, d);
    int64_t wd[2] = {12, 12}, bd[1] = {12}, bd2[2] = {1, 12};
    float wv[144] = {0}, bv[12] = {0};
    gwr_tensor *w = gwr_constant(net, GWR_FLOAT32, 2, wd, wv);
    gwr_tensor *b = variant == NEG_BIAS_2D ? gwr_constant(net, GWR_FLOAT32, 2, bd2, bv) : gwr_constant(net, GWR_FLOAT32, 1, bd, bv);
    gwr_tensor *mm = gwr_matmul(net, x, w);
    gwr_tensor *q = variant == NEG_NONCONST ? gwr_add(net, mm, x) : gwr_add(net, mm, b);
    gwr_args *a = gwr_args_new();
    gwr_args_set_tensor(a, "qkv", q);
    if (variant == NEG_BIAS_SET) gwr_args_set_tensor(a, "qkv_bias", b);
    gwr_args_set_int(a, "num_heads", 2);
    gwr_args_set_int(a, "head_size", 2);
    gwr_tensor *outs[2] = {0};
    gwr_status s = gwr_call(net, "gpt_attention", a, outs, 2, NULL);
    gwr_args_free(a);
    if (s) {
        fprintf(stderr, "attention_case %d: %s\n", variant, gwr_network_errmsg(net));
        gwr_network_free(net);
        return NULL;
    }
    gwr_tensor_set_name(outs[0], "ctx");
    gwr_network_mark_output(net, outs[0]);
    if (variant == NEG_USED_TWICE) gwr_network_mark_output(net, gwr_relu(net, q));
    if (variant == NEG_OUTPUT) gwr_network_mark_output(net, q);
    if (plugin) *plugin = gwr_tensor_parent(outs[0]);
    return net;
}

typedef struct reasons {
    char text[1024];
} reasons;

static void on_failed(void *ctx, const char *label, gwr_layer *root, const char *reason) {
    (void)root;
    reasons *r = ctx;
    size_t n = strlen(r->text);
    snprintf(r->text + n, sizeof r->text - n, "%s: %s;", label, reason);
}

TEST(fuse_attention_with_bias_negative) {
    static const char *const why[] = {
        [NEG_USED_TWICE] = "has 2 readers",
        [NEG_NONCONST] = "neither input is a constant",
        [NEG_BIAS_SET] = "qkv_bias is already set",
        [NEG_OUTPUT] = "is a network output",
        [NEG_BIAS_2D] = "not a 1-D constant",
    };
    for (int v = NEG_NONE; v <= NEG_BIAS_2D; v++) {
        gwr_layer *plugin;
        gwr_network *net = attention_case(v, &plugin);
        if (!CHECK(net)) continue;
        int64_t layers = gwr_network_num_layers(net);
        gwr_rewrite_manager *m = gwr_rewrite_manager_new();
        reasons r = {""};
        gwr_rewrite_listener ls = {.match_failed = on_failed, .ctx = &r};
        gwr_rewrite_manager_add_listener(m, &ls);
        CHECK_OK(gwr_passes_add(m, "fuse_attention_with_bias"));
        CHECK_OK(gwr_rewrite_manager_rewrite(m, net, NULL));
        gwr_rewrite_summary sum;
        gwr_rewrite_manager_summary(m, &sum);
        if (v == NEG_NONE) {
            CHECK_EQ_INT(sum.rewrites, 1);
            CHECK_EQ_INT(gwr_network_num_layers(net), layers - 1);
            CHECK_EQ_INT(count_op(net, "Add"), 0);
        } else {
            CHECK_EQ_INT(sum.rewrites, 0);
            CHECK_CONTAINS(r.text, why[v]);
            CHECK(gwr_tensor_parent(gwr_network_output(net, 0)) == plugin);
        }
        CHECK_STR(gwr_tensor_name(gwr_network_output(net, 0)), "ctx");
        CHECK_OK(gwr_network_verify(net));
        gwr_rewrite_manager_free(m);
        gwr_network_free(net);
    }
}

TEST(remove_padding_on_gpt) {
    gwr_network *net = gpt(2);
    if (!CHECK(net)) return;
    gwr_args *args = gwr_args_new();
    gwr_args_set_int(args, "batch_size", 2);
    gwr_args_set_int(args, "in_len", 8);
    gwr_args_set_int(args, "hidden_size", 192);
    static const char *const labels[] = {"gpt_attention_remove_padding"};
    gwr_rewrite_summary sum;
    char msg[512];
    CHECK_OK(apply(net, labels, 1, args, &sum, msg, sizeof msg));
    CHECK_EQ_INT(sum.rewrites, 2);
    CHECK_EQ_INT(count_op(net, "GPTAttention"), 2);
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (strcmp(gwr_layer_op(l), "GPTAttention")) continue;
        int64_t rp = 0;
        CHECK_OK(gwr_layer_get_int(l, "remove_padding", &rp));
        CHECK_EQ_INT(rp, 1);
        gwr_tensor *qkv = gwr_layer_input(l, 0);
        CHECK_EQ_INT(gwr_tensor_dim(qkv, 0), 1);
        CHECK_EQ_INT(gwr_tensor_dim(qkv, 1), 16);
        CHECK_EQ_INT(gwr_tensor_dim(qkv, 2), 192);
        /* qkv is packed from the old qkv (the bias Add) by a Reshape */
        gwr_layer *pack = gwr_tensor_parent(qkv);
        CHECK_STR(gwr_layer_op(pack), "Reshape");
        CHECK_STR(gwr_layer_op(gwr_tensor_parent(gwr_layer_input(pack, 0))), "Add");
        /* the context is unpacked to (2, 8, 64) before its reader */
        gwr_tensor *ctx = gwr_layer_output(l, 0);
        CHECK_EQ_INT(gwr_tensor_dim(ctx, 1), 16);
        if (CHECK(gwr_tensor_num_users(ctx) == 1)) {
            gwr_layer *unpack = gwr_tensor_user(ctx, 0, NULL);
            CHECK_STR(gwr_layer_op(unpack), "Reshape");
            gwr_tensor *u = gwr_layer_output(unpack, 0);
            CHECK_EQ_INT(gwr_tensor_dim(u, 0), 2);
            CHECK_EQ_INT(gwr_tensor_dim(u, 1), 8);
            CHECK_EQ_INT(gwr_tensor_dim(u, 2), 64);
            CHECK_STR(gwr_layer_op(gwr_tensor_user(u, 0, NULL)), "MatMul");
        }
    }
    /* both plugins' packing Reshapes read one shared shape constant */
    gwr_tensor *shapes[2] = {NULL, NULL};
    int ns = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (!strcmp(gwr_layer_op(l), "GPTAttention") && ns < 2)
            shapes[ns++] = gwr_layer_input(gwr_tensor_parent(gwr_layer_input(l, 0)), 1);
    }
    CHECK_EQ_INT(ns, 2);
    CHECK(shapes[0] && shapes[0] == shapes[1]);
    CHECK_STR(gwr_tensor_name(shapes[0]), "gwr.reshape_to.1x16x192");
    check_flayers(net, 2);
    CHECK_STR(gwr_tensor_name(gwr_network_output(net, 0)), "y");
    CHECK_OK(gwr_network_verify(net));
    /* converted layers are skipped */
    CHECK_OK(apply(net, labels, 1, args, &sum, NULL, 0));
    CHECK_EQ_INT(sum.rewrites, 0);
    gwr_args_free(args);
    gwr_network_free(net);
}

TEST(remove_padding_needs_args) {
    gwr_network *net = gpt(1);
    if (!CHECK(net)) return;
    static const char *const labels[] = {"gpt_attention_remove_padding"};
    char msg[512];
    CHECK_EQ_INT(apply(net, labels, 1, NULL, NULL, msg, sizeof msg), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(msg, "pattern 'gpt_attention_remove_padding' failed at layer");
    CHECK_CONTAINS(msg, "batch_size, in_len and hidden_size");
    CHECK_OK(gwr_network_verify(net));
    /* args that disagree with qkv's known width: no rewrite */
    gwr_args *args = gwr_args_new();
    gwr_args_set_int(args, "batch_size", 2);
    gwr_args_set_int(args, "in_len", 8);
    gwr_args_set_int(args, "hidden_size", 100);
    gwr_rewrite_summary sum;
    CHECK_OK(apply(net, labels, 1, args, &sum, NULL, 0));
    CHECK_EQ_INT(sum.rewrites, 0);
    gwr_args_set_string(args, "hidden_size", "192");
    CHECK_EQ_INT(apply(net, labels, 1, args, &sum, NULL, 0), GWR_ERR_INVALID_ARG);
    gwr_args_free(args);
    gwr_network_free(net);
}

TEST(remove_padding_skips_read_present) {
    gwr_layer *plugin;
    gwr_network *net = attention_case(NEG_NONE, &plugin);
    if (!CHECK(net)) return;
    gwr_network_mark_output(net, gwr_layer_output(plugin, 1));
    gwr_args *args = gwr_args_new();
    gwr_args_set_int(args, "batch_size", 2);
    gwr_args_set_int(args, "in_len", 5);
    gwr_args_set_int(args, "hidden_size", 12);
    static const char *const labels[] = {"gpt_attention_remove_padding"};
    gwr_rewrite_summary sum;
    CHECK_OK(apply(net, labels, 1, args, &sum, NULL, 0));
    CHECK_EQ_INT(sum.rewrites, 0);
    /* wrong batch for qkv's known dims: no rewrite either */
    gwr_network_unmark_output(net, gwr_layer_output(plugin, 1));
    gwr_args_set_int(args, "batch_size", 3);
    CHECK_OK(apply(net, labels, 1, args, &sum, NULL, 0));
    CHECK_EQ_INT(sum.rewrites, 0);
    gwr_args_set_int(args, "batch_size", 2);
    CHECK_OK(apply(net, labels, 1, args, &sum, NULL, 0));
    CHECK_EQ_INT(sum.rewrites, 1);
    gwr_args_free(args);
    gwr_network_free(net);
}

/* All three together: the fusion (earlier in the pass table: the higher benefit) takes the qkv bias Adds
 * before replace_add_with_sub sees them, and the new plugins
 * are then converted to remove-padding mode. */
TEST(all_three) {
    gwr_network *net = gpt(2);
    if (!CHECK(net)) return;
    gwr_args *args = gwr_args_new();
    gwr_args_set_int(args, "batch_size", 1);
    gwr_args_set_int(args, "in_len", 4);
    gwr_args_set_int(args, "hidden_size", 192);
    static const char *const labels[] = {"replace_add_with_sub", "gpt_attention_remove_padding",
                                         "fuse_attention_with_bias"};
    gwr_rewrite_summary sum;
    CHECK_OK(apply(net, labels, 3, args, &sum, NULL, 0));
    CHECK_EQ_INT(sum.rewrites, 2 + 10 + 2);
    CHECK_EQ_INT(count_op(net, "Add"), 0);
    CHECK_EQ_INT(count_op(net, "Sub"), 10);
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (strcmp(gwr_layer_op(l), "GPTAttention")) continue;
        int64_t rp = 0;
        gwr_layer_get_int(l, "remove_padding", &rp);
        CHECK_EQ_INT(rp, 1);
        CHECK(gwr_layer_input(l, 1) != NULL);
    }
    check_flayers(net, 2);
    CHECK_OK(gwr_network_verify(net));
    gwr_args_free(args);
    gwr_network_free(net);
}

/* A plugin read back from ONNX has no recorded call until
 * gwr_passes_recover_flayers rebuilds it; then the patterns work on it. */
TEST(recovered_flayers) {
    gwr_network *net = gpt(2);
    if (!CHECK(net)) return;
    void *buf = NULL;
    size_t size = 0;
    if (!CHECK_OK(gwr_onnx_save_memory(net, &buf, &size))) return;
    gwr_onnx_load_options lo = {.infer_shapes = 1};
    gwr_network *back = gwr_onnx_load_memory(buf, size, NULL, "gpt.onnx", &lo);
    free(buf);
    if (!CHECK(back)) {
        fprintf(stderr, "%s\n", gwr_last_errmsg());
        gwr_network_free(net);
        return;
    }
    CHECK_EQ_INT(gwr_flayer_memo_size(back), 0);
    static const char *const labels[] = {"fuse_attention_with_bias"};
    gwr_rewrite_summary sum;
    CHECK_OK(apply(back, labels, 1, NULL, &sum, NULL, 0));
    CHECK_EQ_INT(sum.rewrites, 0); /* no FLayerInfo: nothing to re-create */
    int64_t n = -1;
    CHECK_OK(gwr_passes_recover_flayers(back, &n));
    CHECK_EQ_INT(n, 2);
    check_flayers(back, 2);
    CHECK_OK(gwr_passes_recover_flayers(back, &n));
    CHECK_EQ_INT(n, 0); /* idempotent */
    CHECK_OK(apply(back, labels, 1, NULL, &sum, NULL, 0));
    CHECK_EQ_INT(sum.rewrites, 2);
    check_flayers(back, 2);
    /* gwr_flayer_record's refusals */
    gwr_layer *p = NULL;
    for (int64_t i = 0; i < gwr_network_num_layers(back) && !p; i++)
        if (!strcmp(gwr_layer_op(gwr_network_layer(back, i)), "GPTAttention")) p = gwr_network_layer(back, i);
    if (CHECK(p)) {
        CHECK_EQ_INT(gwr_flayer_record(back, p, "gpt_attention", NULL), GWR_ERR_DUPLICATE);
        gwr_layer *other = gwr_network_layer(back, 0);
        CHECK_EQ_INT(gwr_flayer_record(back, other, "no_such_kind", NULL), GWR_ERR_NOT_FOUND);
        gwr_args *bad = gwr_args_new();
        gwr_args_set_int(bad, "bogus", 1);
        CHECK_EQ_INT(gwr_flayer_record(back, other, "gpt_attention", bad), GWR_ERR_INVALID_ARG);
        CHECK_CONTAINS(gwr_network_errmsg(back), "unknown argument 'bogus'");
        gwr_args_free(bad);
        CHECK_EQ_INT(gwr_flayer_record(net, other, "gpt_attention", NULL), GWR_ERR_INVALID_ARG);
        CHECK_EQ_INT(gwr_flayer_record(NULL, other, "gpt_attention", NULL), GWR_ERR_INVALID_ARG);
    }
    CHECK_OK(gwr_network_verify(back));
    gwr_network_free(back);
    gwr_network_free(net);
}

int main(void) {
    RUN(replace_add_with_sub_on_gpt);
    RUN(replace_add_with_sub_connectivity);
    RUN(fuse_attention_with_bias_on_gpt);
    RUN(fuse_attention_with_bias_negative);
    RUN(remove_padding_on_gpt);
    RUN(remove_padding_needs_args);
    RUN(remove_padding_skips_read_present);
    RUN(all_three);
    RUN(recovered_flayers);
    return check_report();
}
