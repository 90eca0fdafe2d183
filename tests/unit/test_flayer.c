/* test_flayer.c - gwr_args, the plugin and functional registries,
 * gwr_call and the FLayerInfo memo, gwr_build_gpt. */
#include <stdlib.h>
#include <string.h>

#include "gwr/gwr.h"
#include "unit/check.h"

/* ---- gwr_args ---- */

TEST(args_basics) {
    gwr_args *a = gwr_args_new();
    if (!CHECK(a)) return;
    CHECK_OK(gwr_args_set_int(a, "n", 3));
    CHECK_OK(gwr_args_set_float(a, "eps", 1e-5));
    CHECK_OK(gwr_args_set_string(a, "mode", "tanh"));
    int64_t iv[3] = {1, 2, 3};
    double fv[2] = {0.5, 0.25};
    CHECK_OK(gwr_args_set_ints(a, "axes", 3, iv));
    CHECK_OK(gwr_args_set_floats(a, "scales", 2, fv));
    CHECK_OK(gwr_args_set_none(a, "bias"));
    CHECK_EQ_INT(gwr_args_count(a), 6);
    CHECK_STR(gwr_args_name(a, 2), "mode");
    CHECK_EQ_INT(gwr_args_type(a, 3), GWR_ARG_INTS);
    /* Replacing keeps the position. */
    CHECK_OK(gwr_args_set_string(a, "n", "three"));
    CHECK_EQ_INT(gwr_args_find(a, "n"), 0);
    CHECK_EQ_INT(gwr_args_type(a, 0), GWR_ARG_STRING);
    int64_t i = 42;
    CHECK_EQ_INT(gwr_args_get_int(a, "n", &i), GWR_ERR_TYPE);
    CHECK_EQ_INT(i, 42);
    CHECK_CONTAINS(gwr_args_errmsg(a), "'n' is string");
    CHECK_EQ_INT(gwr_args_get_int(a, "missing", &i), GWR_ERR_NOT_FOUND);
    double f = 0;
    CHECK_OK(gwr_args_get_float(a, "eps", &f));
    CHECK(f == 1e-5);
    const int64_t *ip;
    int n = 0;
    CHECK_OK(gwr_args_get_ints(a, "axes", &ip, &n));
    CHECK(n == 3 && ip[2] == 3);
    gwr_tensor *t = (gwr_tensor *)&i;
    CHECK_OK(gwr_args_get_tensor(a, "bias", &t));
    CHECK(t == NULL);
    CHECK(gwr_args_is_none(a, "bias"));
    /* A clone is deep and independent. */
    gwr_args *c = gwr_args_clone(a);
    CHECK_OK(gwr_args_set_int(a, "axes", 7));
    CHECK_OK(gwr_args_get_ints(c, "axes", &ip, &n));
    CHECK(n == 3 && ip[0] == 1);
    CHECK_OK(gwr_args_remove(c, "mode"));
    CHECK_EQ_INT(gwr_args_count(c), 5);
    CHECK_EQ_INT(gwr_args_remove(c, "mode"), GWR_ERR_NOT_FOUND);
    /* Bad input. */
    CHECK_EQ_INT(gwr_args_set_ints(a, "x", -1, iv), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_args_set_ints(a, "x", 2, NULL), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_args_set_int(a, "", 1), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_args_set_int(NULL, "x", 1), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_args_get_int(NULL, "x", &i), GWR_ERR_INVALID_ARG);
    CHECK(gwr_args_clone(NULL) == NULL);
    CHECK_EQ_INT(gwr_args_count(NULL), -1);
    gwr_args_free(c);
    gwr_args_free(a);
    gwr_args_free(NULL);
}

/* ---- helpers ---- */

static gwr_tensor *const_f32(gwr_network *net, int64_t n, float v) {
    float *p = malloc((size_t)n * sizeof *p);
    for (int64_t i = 0; i < n; i++) p[i] = v;
    gwr_tensor *t = gwr_constant(net, GWR_FLOAT32, 1, &n, p);
    free(p);
    return t;
}

/* qkv input (batch 2, seq 5, 3*hidden) with hidden = 4 heads * 8. */
/* A gpt_attention call on qkv (4 heads of 8); outs gets its two outputs.
 * The context, or NULL. */
static gwr_tensor *attention_on(gwr_network *net, gwr_tensor *qkv, gwr_tensor *outs[2]) {
    gwr_args *a = gwr_args_new();
    gwr_args_set_tensor(a, "qkv", qkv);
    gwr_args_set_int(a, "num_heads", 4);
    gwr_args_set_int(a, "head_size", 8);
    int n = 0;
    gwr_status s = gwr_call(net, GWR_GPT_ATTENTION, a, outs, 2, &n);
    gwr_args_free(a);
    return s || n != 2 ? NULL : outs[0];
}

static gwr_network *attention_net(gwr_tensor **qkv_out, gwr_layer **plugin, gwr_tensor *outs[2]) {
    gwr_network *net = gwr_network_new("attn");
    gwr_dim d[3] = {2, 5, 96};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 3, d);
    gwr_tensor *qkv = gwr_relu(net, x);
    if (!attention_on(net, qkv, outs)) return net;
    gwr_tensor_set_name(outs[0], "context");
    gwr_network_mark_output(net, outs[0]);
    *qkv_out = qkv;
    *plugin = gwr_tensor_parent(outs[0]);
    return net;
}

TEST(gpt_attention_records_flayer) {
    gwr_tensor *qkv = NULL, *outs[2] = {NULL, NULL};
    gwr_layer *pl = NULL;
    gwr_network *net = attention_net(&qkv, &pl, outs);
    if (!CHECK(pl)) {
        fprintf(stderr, "%s\n", gwr_network_errmsg(net));
        gwr_network_free(net);
        return;
    }
    CHECK_EQ_INT(gwr_layer_type(pl), GWR_LAYER_PLUGIN);
    CHECK_STR(gwr_layer_domain(pl), "gwr");
    CHECK_STR(gwr_layer_op(pl), "GPTAttention");
    int64_t v = 0;
    CHECK_OK(gwr_layer_get_int(pl, "num_heads", &v));
    CHECK_EQ_INT(v, 4);
    CHECK_OK(gwr_layer_get_int(pl, "remove_padding", &v));
    CHECK_EQ_INT(v, 0);
    /* Output types: context (2,5,32), present (2,2,4,5,8). */
    CHECK_EQ_INT(gwr_tensor_rank(outs[0]), 3);
    CHECK_EQ_INT(gwr_tensor_dim(outs[0], 2), 32);
    CHECK_EQ_INT(gwr_tensor_rank(outs[1]), 5);
    CHECK_EQ_INT(gwr_tensor_dim(outs[1], 4), 8);
    gwr_flayer *f = gwr_flayer_get(net, pl);
    if (!CHECK(f)) goto out;
    CHECK_STR(gwr_flayer_kind(f), "gpt_attention");
    CHECK(gwr_flayer_layer(f) == pl);
    CHECK(gwr_flayer_get_input(f, "qkv") == qkv);
    CHECK(gwr_flayer_get_input(f, "qkv_bias") == NULL);
    /* Every parameter is recorded, defaults included, in signature order. */
    const gwr_args *in = gwr_flayer_inputs(f);
    CHECK_EQ_INT(gwr_args_count(in), 6);
    CHECK_STR(gwr_args_name(in, 0), "qkv");
    CHECK_OK(gwr_args_get_int(in, "remove_padding", &v));
    CHECK_EQ_INT(v, 0);
    CHECK_EQ_INT(gwr_flayer_num_outputs(f), 2);
    CHECK(gwr_flayer_output(f, 1) == outs[1]);
    CHECK(gwr_flayer_output(f, 2) == NULL);
    CHECK_EQ_INT(gwr_flayer_memo_size(net), 1);
    /* Only the recorded layer has an FLayerInfo. */
    CHECK(gwr_flayer_get(net, gwr_tensor_parent(qkv)) == NULL);
    CHECK_OK(gwr_network_verify(net));
out:
    gwr_network_free(net);
}

TEST(flayer_follows_replace_all_uses) {
    gwr_tensor *qkv = NULL, *outs[2];
    gwr_layer *pl = NULL;
    gwr_network *net = attention_net(&qkv, &pl, outs);
    if (!CHECK(pl)) goto out;
    gwr_flayer *f = gwr_flayer_get(net, pl);
    /* Replace qkv by another tensor: the plugin and its FLayerInfo follow. */
    gwr_tensor *other = gwr_sigmoid(net, gwr_layer_input(gwr_tensor_parent(qkv), 0));
    CHECK_OK(gwr_tensor_replace_all_uses_with(qkv, other));
    CHECK(gwr_layer_input(pl, 0) == other);
    CHECK(gwr_flayer_get_input(f, "qkv") == other);
    /* replace_input_with really replaces, in the layer and the record. */
    gwr_tensor *third = gwr_tanh(net, gwr_network_input(net, 0));
    CHECK_OK(gwr_flayer_replace_input_with(f, other, third));
    CHECK(gwr_layer_input(pl, 0) == third);
    CHECK(gwr_flayer_get_input(f, "qkv") == third);
    CHECK_EQ_INT(gwr_tensor_num_users(other), 0);
    /* ...and refuses what is not an input, a dtype change, a cycle. */
    CHECK_EQ_INT(gwr_flayer_replace_input_with(f, other, third), GWR_ERR_NOT_FOUND);
    gwr_tensor *as_int = gwr_cast(net, third, GWR_INT32);
    CHECK_EQ_INT(gwr_flayer_replace_input_with(f, third, as_int), GWR_ERR_TYPE);
    gwr_tensor *after = gwr_relu(net, outs[0]);
    gwr_dim d[3] = {2, 5, 96};
    (void)d;
    gwr_tensor *cyc = gwr_concat(net, 3, (gwr_tensor *[]){after, after, after}, -1);
    if (CHECK(cyc)) CHECK_EQ_INT(gwr_flayer_replace_input_with(f, third, cyc), GWR_ERR_CYCLE);
    CHECK(gwr_layer_input(pl, 0) == third);
    CHECK(gwr_flayer_get_input(f, "qkv") == third);
    CHECK_OK(gwr_network_verify(net));
out:
    gwr_network_free(net);
}

TEST(flayer_replace_outputs_and_removal) {
    gwr_tensor *qkv = NULL, *outs[2];
    gwr_layer *pl = NULL;
    gwr_network *net = attention_net(&qkv, &pl, outs);
    if (!CHECK(pl)) goto out;
    gwr_flayer *f = gwr_flayer_get(net, pl);
    /* Re-create the plugin with remove_padding on a (1, 10, 96) input,
     * the reference's second example. */
    gwr_args *in = gwr_flayer_clone_inputs(f);
    gwr_dim d[3] = {1, 10, 96};
    gwr_tensor *packed = gwr_network_add_input(net, "packed_qkv", GWR_FLOAT32, 3, d);
    CHECK_OK(gwr_args_set_tensor(in, "qkv", packed));
    CHECK_OK(gwr_args_set_int(in, "remove_padding", 1));
    gwr_tensor *nouts[2];
    int n = 0;
    CHECK_OK(gwr_call(net, GWR_GPT_ATTENTION, in, nouts, 2, &n));
    gwr_args_free(in);
    /* The clone was independent: the old record is unchanged. */
    CHECK(gwr_flayer_get_input(f, "qkv") == qkv);
    /* Count and types are checked before anything changes. */
    CHECK_EQ_INT(gwr_flayer_replace_outputs_uses_with(f, 1, nouts), GWR_ERR_INVALID_ARG);
    gwr_tensor *wrong[2] = {gwr_cast(net, nouts[0], GWR_FLOAT16), nouts[1]};
    CHECK_EQ_INT(gwr_flayer_replace_outputs_uses_with(f, 2, wrong), GWR_ERR_TYPE);
    CHECK(gwr_network_output(net, 0) == outs[0]);
    CHECK_OK(gwr_flayer_replace_outputs_uses_with(f, 2, nouts));
    /* The new context took the output's place and its name. */
    CHECK(gwr_network_output(net, 0) == nouts[0]);
    CHECK_STR(gwr_tensor_name(nouts[0]), "context");
    CHECK_OK(gwr_layer_mark_as_removed(pl));
    CHECK(gwr_flayer_get(net, pl) == NULL); /* dropped with the layer */
    CHECK_EQ_INT(gwr_flayer_memo_size(net), 1);
    int64_t dropped = 0;
    CHECK_OK(gwr_network_prune(net, &dropped));
    CHECK(dropped >= 2); /* the old plugin, the relu feeding it, the casts */
    CHECK_OK(gwr_network_verify(net));
    gwr_layer *np = gwr_tensor_parent(nouts[0]);
    gwr_flayer *nf = gwr_flayer_get(net, np);
    if (CHECK(nf)) {
        int64_t rp = 0;
        CHECK_OK(gwr_args_get_int(gwr_flayer_inputs(nf), "remove_padding", &rp));
        CHECK_EQ_INT(rp, 1);
        CHECK(gwr_flayer_get_input(nf, "qkv") == packed);
    }
out:
    gwr_network_free(net);
}

TEST(gwr_call_errors) {
    gwr_network *net = gwr_network_new("errors");
    gwr_dim d[3] = {2, 5, 90};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 3, d);
    gwr_args *a = gwr_args_new();
    gwr_tensor *outs[2];
    CHECK_EQ_INT(gwr_call(net, "no_such_functional", a, outs, 2, NULL), GWR_ERR_NOT_FOUND);
    CHECK_CONTAINS(gwr_network_errmsg(net), "no_such_functional");
    gwr_args_set_tensor(a, "qkv", x);
    gwr_args_set_int(a, "num_heads", 4);
    gwr_args_set_int(a, "head_size", 8);
    /* 90 is not 3 * 4 * 8. */
    CHECK_EQ_INT(gwr_call(net, GWR_GPT_ATTENTION, a, outs, 2, NULL), GWR_ERR_SHAPE);
    CHECK_CONTAINS(gwr_network_errmsg(net), "qkv");
    gwr_args_set_int(a, "head_size", 0);
    CHECK(gwr_call(net, GWR_GPT_ATTENTION, a, outs, 2, NULL) != GWR_OK);
    gwr_args_set_int(a, "head_size", 8);
    gwr_args_set_int(a, "bogus", 1);
    CHECK_EQ_INT(gwr_call(net, GWR_GPT_ATTENTION, a, outs, 2, NULL), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(gwr_network_errmsg(net), "bogus");
    gwr_args_remove(a, "bogus");
    gwr_args_set_none(a, "qkv");
    CHECK_EQ_INT(gwr_call(net, GWR_GPT_ATTENTION, a, outs, 2, NULL), GWR_ERR_INVALID_ARG);
    /* A bias that is not a constant is refused. */
    gwr_dim d2[3] = {2, 5, 96};
    gwr_tensor *x2 = gwr_network_add_input(net, "x2", GWR_FLOAT32, 3, d2);
    gwr_dim bd[1] = {96};
    gwr_tensor *vb = gwr_network_add_input(net, "vb", GWR_FLOAT32, 1, bd);
    gwr_args_set_tensor(a, "qkv", x2);
    gwr_args_set_tensor(a, "qkv_bias", vb);
    CHECK_EQ_INT(gwr_call(net, GWR_GPT_ATTENTION, a, outs, 2, NULL), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(gwr_network_errmsg(net), "constant");
    /* A constant bias of the right size is accepted. */
    gwr_args_set_tensor(a, "qkv_bias", const_f32(net, 96, 0.5f));
    CHECK_OK(gwr_call(net, GWR_GPT_ATTENTION, a, outs, 2, NULL));
    /* Failed calls left nothing live behind. */
    CHECK_EQ_INT(gwr_flayer_memo_size(net), 1);
    CHECK_EQ_INT(gwr_call(NULL, GWR_GPT_ATTENTION, a, outs, 2, NULL), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_call(net, GWR_GPT_ATTENTION, a, NULL, 2, NULL), GWR_ERR_INVALID_ARG);
    gwr_args_free(a);
    CHECK_OK(gwr_network_verify(net));
    gwr_network_free(net);
}

/* ---- user plugins and functionals ---- */

static int infer_calls;

static gwr_status scale_infer(gwr_layer *l, void *user) {
    infer_calls += user == (void *)&infer_calls;
    gwr_tensor *x = gwr_layer_input(l, 0);
    if (!x) return GWR_ERR_INVALID_ARG;
    return gwr_tensor_set_type(gwr_layer_output(l, 0), gwr_tensor_dtype(x), gwr_tensor_rank(x), gwr_tensor_dims(x));
}

static gwr_status two_layer_fn(gwr_network *net, const gwr_args *args, gwr_tensor **outs, int max_outs,
                               int *nouts, void *user) {
    (void)user;
    gwr_tensor *x = NULL;
    double factor = 0;
    if (gwr_args_get_tensor(args, "x", &x) || !x || gwr_args_get_float(args, "factor", &factor))
        return GWR_ERR_INVALID_ARG;
    gwr_tensor *r = gwr_relu(net, x);
    gwr_args *fields = gwr_args_new();
    gwr_args_set_float(fields, "factor", factor);
    gwr_layer *l = gwr_plugin_create(net, "com.example", "Scale", NULL, 1, &r, fields);
    gwr_args_free(fields);
    if (!l || max_outs < 1) return GWR_ERR_INVALID_ARG;
    outs[0] = gwr_layer_output(l, 0);
    *nouts = 1;
    return GWR_OK;
}

TEST(user_plugin_and_functional) {
    CHECK_OK(gwr_plugin_register("com.example", "Scale", 1, scale_infer, &infer_calls));
    CHECK_EQ_INT(gwr_plugin_register("com.example", "Scale", 1, scale_infer, NULL), GWR_ERR_DUPLICATE);
    CHECK_EQ_INT(gwr_plugin_register("", "Add", 1, scale_infer, NULL), GWR_ERR_DUPLICATE);
    CHECK_EQ_INT(gwr_plugin_register("com.example", "NoInfer", 1, NULL, NULL), GWR_ERR_INVALID_ARG);
    CHECK(gwr_plugin_is_registered("com.example", "Scale"));
    CHECK(!gwr_plugin_is_registered("com.example", "Nope"));
    gwr_args *params = gwr_args_new();
    gwr_args_set_none(params, "x");
    gwr_args_set_float(params, "factor", 2.0);
    CHECK_OK(gwr_functional_register("relu_scale", two_layer_fn, params, NULL));
    CHECK_EQ_INT(gwr_functional_register("relu_scale", two_layer_fn, params, NULL), GWR_ERR_DUPLICATE);
    gwr_args_free(params);

    gwr_network *net = gwr_network_new("plugins");
    gwr_dim d[2] = {gwr_network_dim_sym(net, "n"), 7};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT16, 2, d);
    gwr_args *a = gwr_args_new();
    gwr_args_set_tensor(a, "x", x);
    gwr_tensor *y = NULL;
    int n = 0;
    CHECK_OK(gwr_call(net, "relu_scale", a, &y, 1, &n));
    CHECK_EQ_INT(n, 1);
    CHECK(infer_calls == 1);
    gwr_layer *pl = gwr_tensor_parent(y);
    CHECK_EQ_INT(gwr_layer_type(pl), GWR_LAYER_PLUGIN);
    CHECK_STR(gwr_layer_domain(pl), "com.example");
    float fv = 0;
    CHECK_OK(gwr_layer_get_float(pl, "factor", &fv));
    CHECK(fv == 2.0f); /* the default, recorded */
    CHECK_EQ_INT(gwr_tensor_dtype(y), GWR_FLOAT16);
    CHECK_STR(gwr_network_dim_name(net, gwr_tensor_dim(y, 0)), "n");
    /* Recorded on the last layer created (the plugin), not the relu. */
    gwr_flayer *f = gwr_flayer_get(net, pl);
    CHECK(f && gwr_flayer_get(net, gwr_tensor_parent(gwr_layer_input(pl, 0))) == NULL);
    double factor = 0;
    if (f) CHECK_OK(gwr_args_get_float(gwr_flayer_inputs(f), "factor", &factor));
    CHECK(factor == 2.0);
    /* gwr_layer_infer re-runs the plugin's inference. */
    CHECK_OK(gwr_layer_infer(pl));
    CHECK(infer_calls == 2);
    /* Unregistered kinds are refused by gwr_plugin_create. */
    CHECK(gwr_plugin_create(net, "com.example", "Nope", NULL, 1, &x, NULL) == NULL);
    CHECK_CONTAINS(gwr_network_errmsg(net), "not registered");
    gwr_args_free(a);
    CHECK_OK(gwr_network_verify(net));
    gwr_network_free(net);
}

/* ---- the generator ---- */

TEST(build_gpt) {
    for (int plugin = 0; plugin <= 1; plugin++) {
        gwr_network *net = gwr_network_new("gpt");
        gwr_gpt_config cfg = {.blocks = 3, .hidden = 32, .heads = 4, .use_plugin = plugin, .share_weights = plugin,
                              .seed = 7};
        gwr_tensor *y = gwr_build_gpt(net, &cfg);
        if (!CHECK(y)) {
            fprintf(stderr, "%s\n", gwr_network_errmsg(net));
            gwr_network_free(net);
            continue;
        }
        CHECK_STR(gwr_tensor_name(y), "y");
        CHECK_EQ_INT(gwr_tensor_rank(y), 3);
        CHECK_STR(gwr_network_dim_name(net, gwr_tensor_dim(y, 0)), "batch");
        CHECK_EQ_INT(gwr_tensor_dim(y, 2), 32);
        CHECK_OK(gwr_network_verify(net));
        CHECK_EQ_INT(gwr_flayer_memo_size(net), plugin ? 3 : 0);
        int64_t n = 0;
        CHECK_OK(gwr_network_prune(net, &n));
        CHECK_EQ_INT(n, 0); /* nothing dead */
        gwr_network_free(net);
    }
    gwr_network *net = gwr_network_new("bad");
    gwr_gpt_config bad = {.blocks = 1, .hidden = 30, .heads = 4};
    CHECK(gwr_build_gpt(net, &bad) == NULL);
    CHECK_CONTAINS(gwr_network_errmsg(net), "multiple of heads");
    CHECK(gwr_build_gpt(NULL, &bad) == NULL);
    gwr_network_free(net);
}

/* The memo's index from a tensor to the FLayerInfos that name it: more
 * referrers than an entry holds inline, entries freed and reused, an
 * argument naming a pruned layer's output, and a subgraph's FLayerInfo
 * naming a tensor of the enclosing network. */

TEST(flayer_index_many_referrers) {
    gwr_network *net = gwr_network_new("many");
    gwr_dim d[3] = {2, 5, 96};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 3, d);
    gwr_tensor *qkv = gwr_relu(net, x), *ctx[5], *two[2];
    gwr_flayer *f[5];
    for (int i = 0; i < 5; i++) {
        ctx[i] = attention_on(net, qkv, two);
        if (!CHECK(ctx[i])) goto out;
        if (i % 2 == 0) gwr_network_mark_output(net, ctx[i]); /* 1 and 3 are removed below */
        f[i] = gwr_flayer_get(net, gwr_tensor_parent(ctx[i]));
    }
    CHECK_EQ_INT(gwr_flayer_memo_size(net), 5);
    /* Five referrers of one tensor: all follow a replacement. */
    gwr_tensor *other = gwr_sigmoid(net, x);
    CHECK_OK(gwr_tensor_replace_all_uses_with(qkv, other));
    for (int i = 0; i < 5; i++) CHECK(gwr_flayer_get_input(f[i], "qkv") == other);
    /* Two leave; the other three still follow, twice over. */
    CHECK_OK(gwr_layer_mark_as_removed(gwr_tensor_parent(ctx[1])));
    CHECK_OK(gwr_layer_mark_as_removed(gwr_tensor_parent(ctx[3])));
    CHECK_EQ_INT(gwr_flayer_memo_size(net), 3);
    gwr_tensor *third = gwr_tanh(net, x);
    gwr_tensor *fourth = gwr_abs(net, x);
    for (int i = 0; i < 5; i += 2) CHECK_OK(gwr_flayer_replace_input_with(f[i], other, third));
    CHECK_OK(gwr_tensor_replace_all_uses_with(third, fourth));
    for (int i = 0; i < 5; i += 2) {
        CHECK(gwr_flayer_get_input(f[i], "qkv") == fourth);
        CHECK(gwr_layer_input(gwr_tensor_parent(ctx[i]), 0) == fourth);
    }
    /* A new record after the removals (freed entries are reused) is
     * indexed like the others. */
    gwr_tensor *c5 = attention_on(net, fourth, two);
    if (!CHECK(c5)) goto out;
    gwr_network_mark_output(net, c5);
    gwr_flayer *f5 = gwr_flayer_get(net, gwr_tensor_parent(c5));
    gwr_tensor *fifth = gwr_exp(net, x);
    CHECK_OK(gwr_tensor_replace_all_uses_with(fourth, fifth));
    CHECK(gwr_flayer_get_input(f5, "qkv") == fifth);
    CHECK(gwr_flayer_get_input(f[4], "qkv") == fifth);
    /* An argument that names a tensor the layer does not read: when its
     * producer is pruned, the argument becomes none. */
    gwr_tensor *dead = gwr_neg(net, x);
    gwr_layer *host = gwr_tensor_parent(gwr_sqrt(net, fifth));
    gwr_network_mark_output(net, gwr_layer_output(host, 0));
    gwr_args *a = gwr_args_new();
    gwr_args_set_tensor(a, "qkv", dead);
    CHECK_OK(gwr_flayer_record(net, host, GWR_GPT_ATTENTION, a));
    gwr_args_free(a);
    gwr_flayer *fh = gwr_flayer_get(net, host);
    CHECK(gwr_flayer_get_input(fh, "qkv") == dead);
    int64_t dropped = 0;
    CHECK_OK(gwr_network_prune(net, &dropped));
    CHECK(dropped >= 3); /* two plugins, the Neg, the replaced activations */
    CHECK(gwr_flayer_get_input(fh, "qkv") == NULL);
    CHECK_EQ_INT(gwr_flayer_memo_size(net), 5);
    CHECK_OK(gwr_network_verify(net));
out:
    gwr_network_free(net);
}

TEST(flayer_index_subgraph_reads_outer_tensor) {
    gwr_network *net = gwr_network_new("outer");
    gwr_dim d[3] = {2, 5, 96};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 3, d);
    gwr_tensor *y = gwr_relu(net, x), *z = gwr_tanh(net, x);
    gwr_network *sub = gwr_network_new_subgraph(net, "body");
    if (!CHECK(sub)) goto out;
    /* A layer of the subgraph reads y from the enclosing network; its
     * FLayerInfo names y. */
    gwr_layer *l = gwr_tensor_parent(gwr_sigmoid(sub, y));
    if (!CHECK(l)) goto out;
    gwr_args *a = gwr_args_new();
    gwr_args_set_tensor(a, "qkv", y);
    CHECK_OK(gwr_flayer_record(sub, l, GWR_GPT_ATTENTION, a));
    gwr_args_free(a);
    gwr_flayer *f = gwr_flayer_get(sub, l);
    CHECK(gwr_flayer_get(net, l) == NULL); /* not the outer network's */
    CHECK_EQ_INT(gwr_flayer_memo_size(sub), 1);
    CHECK_EQ_INT(gwr_flayer_memo_size(net), 0);
    CHECK_OK(gwr_flayer_replace_input_with(f, y, z));
    CHECK(gwr_flayer_get_input(f, "qkv") == z);
    CHECK(gwr_layer_input(l, 0) == z);
    CHECK_EQ_INT(gwr_flayer_replace_input_with(f, y, z), GWR_ERR_NOT_FOUND);
    CHECK_OK(gwr_layer_mark_as_removed(l));
    CHECK_EQ_INT(gwr_flayer_memo_size(sub), 0);
out:
    gwr_network_free(sub);
    gwr_network_free(net);
}

int main(void) {
    RUN(args_basics);
    RUN(gpt_attention_records_flayer);
    RUN(flayer_follows_replace_all_uses);
    RUN(flayer_replace_outputs_and_removal);
    RUN(gwr_call_errors);
    RUN(user_plugin_and_functional);
    RUN(build_gpt);
    RUN(flayer_index_many_referrers);
    RUN(flayer_index_subgraph_reads_outer_tensor);
    return check_report();
}
