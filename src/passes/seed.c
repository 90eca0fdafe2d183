/* seed.c - the three seed patterns of TensorRT-LLM's Graph Rewriting
 * module, written as a gwr user would write them. Each follows the four
 * stages of a rewrite: take the old subgraph's inputs and outputs, build
 * the replacement from those inputs, redirect the old outputs' users, mark
 * the old layers removed (the manager prunes them at the end).
 *
 * Not rule files: these are the seed's patterns as a user writes them in C against the public API
 * (FLayerInfo, plugins), kept as such.
 */
#include <stdlib.h>
#include <string.h>

#include "gwr/passes.h"
#include "passes/pass_util.h"
#include "util/util.h"

/* ---- replace_add_with_sub ------------------------------------------------ */

static int add_match(gwr_rewrite_ctx *c, gwr_layer *l) {
    if (gwr_layer_ew_op(l) != GWR_EW_SUM) return gwr_rewrite_no_match(c, "not a SUM");
    if (gwr_layer_num_inputs(l) != 2) return gwr_rewrite_no_match(c, "a SUM of %d inputs", gwr_layer_num_inputs(l));
    return 1;
}

static gwr_status add_rewrite(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    /* 1: the old layer's inputs and output. */
    gwr_tensor *a = gwr_layer_input(l, 0), *b = gwr_layer_input(l, 1), *o = gwr_layer_output(l, 0);
    /* 2: the replacement, reading the same inputs. */
    gwr_tensor *d = gwr_sub(net, a, b);
    if (!d) return GWR_ERR_SHAPE;
    /* 3: every reader of o (and its network-output mark) moves to d. */
    gwr_status s = gwr_tensor_replace_all_uses_with(o, d);
    if (s) return s;
    /* 4: the old layer is dead. */
    return gwr_layer_mark_as_removed(l);
}

const gwr_pattern_rewriter gwr_pattern_replace_add_with_sub = {
    .name = "replace_add_with_sub",
    .root_classes = GWR_ROOT_CLASS(GWR_LAYER_ELEMENTWISE),
    .separate_match_rewrite = 1,
    .match = add_match,
    .rewrite = add_rewrite,
};

/* ---- helpers for the plugin patterns ---------------------------------------- */

static int is_gpt_attention(const gwr_layer *l) {
    return l && !strcmp(gwr_layer_op(l), "GPTAttention") && !strcmp(gwr_layer_domain(l), GWR_PLUGIN_DOMAIN);
}

static int is_constant(const gwr_tensor *t) {
    gwr_layer *p = gwr_tensor_parent(t);
    return p && gwr_layer_type(p) == GWR_LAYER_CONSTANT;
}

/* Re-creates the recorded functional of f with `args`, redirects the old
 * outputs to new ones (after `fix`, which may wrap them) and marks the old
 * layer removed. Returns 1, or < 0 through gwr_rewrite_fail. */
typedef gwr_status (*fix_outputs_fn)(gwr_rewrite_ctx *c, gwr_tensor **outs, int n);

static int recreate(gwr_rewrite_ctx *c, gwr_flayer *f, const gwr_args *args, fix_outputs_fn fix) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    gwr_layer *old = gwr_flayer_layer(f);
    gwr_tensor *outs[8] = {0};
    int n = 0;
    gwr_status s = gwr_call(net, gwr_flayer_kind(f), args, outs, 8, &n);
    if (s) return gwr_rewrite_fail(c, s, "re-creating %s: %s", gwr_flayer_kind(f), gwr_network_errmsg(net));
    if (fix && (s = fix(c, outs, n))) return gwr_rewrite_fail(c, s, "%s", gwr_network_errmsg(net));
    s = gwr_flayer_replace_outputs_uses_with(f, n, outs);
    if (!s) s = gwr_layer_mark_as_removed(old);
    if (s) return gwr_rewrite_fail(c, s, "%s", gwr_network_errmsg(net));
    return 1;
}

/* ---- gpt_attention_remove_padding ------------------------------------------- */

/* x reshaped to `dims` (3 values). Every plugin of a network is packed to
 * the same shape, so the shape constant is shared: one layer per distinct
 * shape, found again by its name, instead of one per rewrite. */
/* Writes v in decimal at p; returns the end. (snprintf's cost showed in
 * every rewrite of this pattern.) */
static char *put_i64(char *p, int64_t v) {
    char d[24];
    int k = 0;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do d[k++] = (char)('0' + u % 10);
    while ((u /= 10) != 0);
    if (v < 0) *p++ = '-';
    while (k) *p++ = d[--k];
    return p;
}

static gwr_tensor *reshape3(gwr_network *net, gwr_tensor *x, const int64_t dims[3]) {
    /* "gwr.reshape_to.<d0>x<d1>x<d2>" */
    static const char prefix[] = "gwr.reshape_to.";
    char name[sizeof prefix + 3 * 21];
    char *p = name + sizeof prefix - 1;
    memcpy(name, prefix, sizeof prefix - 1);
    for (int i = 0; i < 3; i++) {
        if (i) *p++ = 'x';
        p = put_i64(p, dims[i]);
    }
    *p = 0;
    gwr_layer *k = gwr_network_find_layer(net, name);
    const gwr_weights *w = NULL;
    int ok = k && !gwr_layer_is_removed(k) && gwr_layer_type(k) == GWR_LAYER_CONSTANT &&
             !gwr_layer_get_tensor(k, "value", &w) && w->dtype == GWR_INT64 && w->rank == 1 && w->dims[0] == 3 &&
             w->nbytes == sizeof(int64_t) * 3 && !memcmp(w->data, dims, sizeof(int64_t) * 3);
    gwr_tensor *shape = ok ? gwr_layer_output(k, 0) : NULL;
    if (!shape) {
        shape = gwr_constant_i64s(net, 3, dims);
        /* Named for reuse when the name is free; a clash just means no reuse. */
        if (shape && !k && !gwr_layer_set_name(gwr_tensor_parent(shape), name)) gwr_tensor_set_name(shape, name);
    }
    gwr_tensor *in[2] = {x, shape}, *out = NULL;
    return shape && gwr_op_call(net, "", "Reshape", 2, in, NULL, 1, &out) ? out : NULL;
}

/* The sequence lengths of b sequences of s tokens, as a 1-D int64
 * constant ("gwr.seq_lengths.<b>x<s>", shared like reshape3's shapes):
 * what tells a packed plugin where each sequence starts. */
static gwr_tensor *seq_lengths(gwr_network *net, int64_t b, int64_t s) {
    static const char prefix[] = "gwr.seq_lengths.";
    char name[sizeof prefix + 2 * 21];
    char *p = name + sizeof prefix - 1;
    memcpy(name, prefix, sizeof prefix - 1);
    p = put_i64(p, b);
    *p++ = 'x';
    *put_i64(p, s) = 0;
    gwr_layer *k = gwr_network_find_layer(net, name);
    const gwr_weights *w = NULL;
    if (k && !gwr_layer_is_removed(k) && gwr_layer_type(k) == GWR_LAYER_CONSTANT &&
        !gwr_layer_get_tensor(k, "value", &w) && w->dtype == GWR_INT64 && w->rank == 1 && w->dims[0] == b)
        return gwr_layer_output(k, 0);
    int64_t *v = gwr_malloc((size_t)b * sizeof *v);
    if (!v) return NULL;
    for (int64_t i = 0; i < b; i++) v[i] = s;
    gwr_tensor *t = gwr_constant(net, GWR_INT64, 1, &b, v);
    gwr_free(v);
    if (t && !k && !gwr_layer_set_name(gwr_tensor_parent(t), name)) gwr_tensor_set_name(t, name);
    return t;
}

static int get_arg(gwr_rewrite_ctx *c, const char *name, int64_t *v) {
    return gwr_args_get_int(gwr_rewrite_ctx_args(c), name, v) == GWR_OK && *v > 0 && *v <= (INT64_C(1) << 31);
}

static gwr_status unpad_context(gwr_rewrite_ctx *c, gwr_tensor **outs, int n) {
    (void)n;
    int64_t b, s;
    get_arg(c, "batch_size", &b);
    get_arg(c, "in_len", &s);
    int64_t back[3] = {b, s, gwr_tensor_dim(outs[0], 2)};
    gwr_tensor *t = reshape3(gwr_rewrite_ctx_network(c), outs[0], back);
    if (!t) return GWR_ERR_SHAPE;
    outs[0] = t;
    return GWR_OK;
}

static int remove_padding(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    gwr_flayer *f = gwr_flayer_get(net, l);
    if (!f) return gwr_rewrite_no_match(c, "no FLayerInfo recorded");
    int64_t rp = 0, b, s, h;
    gwr_args_get_int(gwr_flayer_inputs(f), "remove_padding", &rp);
    if (rp) return gwr_rewrite_no_match(c, "already in remove-padding mode");
    if (!get_arg(c, "batch_size", &b) || !get_arg(c, "in_len", &s) || !get_arg(c, "hidden_size", &h))
        return gwr_rewrite_fail(c, GWR_ERR_INVALID_ARG,
                                "needs positive int args batch_size, in_len and hidden_size from the manager");
    gwr_tensor *qkv = gwr_flayer_get_input(f, "qkv");
    if (!qkv || gwr_tensor_rank(qkv) != 3) return gwr_rewrite_no_match(c, "qkv is not of rank 3");
    const int64_t want[3] = {b, s, h};
    for (int i = 0; i < 3; i++) {
        gwr_dim d = gwr_tensor_dim(qkv, i);
        if (GWR_DIM_IS_KNOWN(d) && d != want[i])
            return gwr_rewrite_no_match(c, "qkv dim %d is %lld, the args say %lld", i, (long long)d,
                                        (long long)want[i]);
    }
    for (int i = 1; i < gwr_layer_num_outputs(l); i++) {
        gwr_tensor *o = gwr_layer_output(l, i);
        if (gwr_tensor_num_live_users(o) || gwr_tensor_output_index(o) >= 0)
            return gwr_rewrite_no_match(c, "output '%s' is read (its packed layout would differ)", gwr_tensor_name(o));
    }
    const int64_t packed_dims[3] = {1, b * s, h};
    gwr_tensor *packed = reshape3(net, qkv, packed_dims);
    if (!packed) return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "packing qkv: %s", gwr_network_errmsg(net));
    gwr_args *args = gwr_flayer_clone_inputs(f);
    if (!args) return gwr_rewrite_fail(c, GWR_ERR_NOMEM, "out of memory");
    int r = -1;
    /* Packed, the batch rows run together: without a mask, whose (batch,
     * seq) shape marks them, the plugin gets the lengths. */
    gwr_tensor *lengths = gwr_flayer_get_input(f, "attention_mask") ? NULL : seq_lengths(net, b, s);
    if (!gwr_flayer_get_input(f, "attention_mask") && !lengths)
        r = gwr_rewrite_fail(c, GWR_ERR_NOMEM, "out of memory");
    else if (!gwr_args_set_tensor(args, "qkv", packed) && !gwr_args_set_int(args, "remove_padding", 1) &&
             (!lengths || !gwr_args_set_tensor(args, "attention_mask", lengths)))
        r = recreate(c, f, args, unpad_context);
    else
        r = gwr_rewrite_fail(c, GWR_ERR_NOMEM, "out of memory");
    gwr_args_free(args);
    return r;
}

static const char *const gpt_attention_ops[] = {"gwr::GPTAttention", NULL};

const gwr_pattern_rewriter gwr_pattern_gpt_attention_remove_padding = {
    .name = "gpt_attention_remove_padding",
    .root_ops = gpt_attention_ops,
    .match_and_rewrite = remove_padding,
};

/* ---- fuse_attention_with_bias ----------------------------------------------- */

static int fuse_bias(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    if (gwr_layer_ew_op(l) != GWR_EW_SUM || gwr_layer_num_inputs(l) != 2)
        return gwr_rewrite_no_match(c, "not a two-input SUM");
    gwr_tensor *o = gwr_layer_output(l, 0);
    if (gwr_tensor_output_index(o) >= 0) return gwr_rewrite_no_match(c, "'%s' is a network output", gwr_tensor_name(o));
    gwr_layer *user = gwr_match_sole_reader(o); /* o is not a network output (above) */
    if (!user) return gwr_rewrite_no_match(c, "'%s' has %lld readers", gwr_tensor_name(o), (long long)gwr_tensor_num_live_users(o));
    if (!is_gpt_attention(user)) return gwr_rewrite_no_match(c, "read by '%s', not a GPTAttention", gwr_layer_name(user));
    gwr_flayer *f = gwr_flayer_get(net, user);
    if (!f) return gwr_rewrite_no_match(c, "'%s' has no FLayerInfo", gwr_layer_name(user));
    if (gwr_flayer_get_input(f, "qkv") != o) return gwr_rewrite_no_match(c, "not the plugin's qkv");
    if (gwr_flayer_get_input(f, "qkv_bias")) return gwr_rewrite_no_match(c, "qkv_bias is already set");
    gwr_tensor *in[2] = {gwr_layer_input(l, 0), gwr_layer_input(l, 1)};
    int k = is_constant(in[1]) ? 1 : is_constant(in[0]) ? 0 : -1;
    if (k < 0) return gwr_rewrite_no_match(c, "neither input is a constant");
    gwr_tensor *bias = in[k], *x = in[1 - k];
    if (is_constant(x)) return gwr_rewrite_no_match(c, "both inputs are constants");
    /* The bias must be 1-D over qkv's last dim, and x already of qkv's
     * shape (the Add must not broadcast x). */
    int r = gwr_tensor_rank(o);
    if (gwr_tensor_rank(bias) != 1 || r < 1 || gwr_tensor_dim(bias, 0) != gwr_tensor_dim(o, -1) ||
        !GWR_DIM_IS_KNOWN(gwr_tensor_dim(bias, 0)) || gwr_tensor_rank(x) != r ||
        memcmp(gwr_tensor_dims(x), gwr_tensor_dims(o), (size_t)r * sizeof(gwr_dim)) ||
        gwr_tensor_dtype(x) != gwr_tensor_dtype(bias))
        return gwr_rewrite_no_match(c, "the bias is not a 1-D constant over qkv's last dim");
    gwr_args *args = gwr_flayer_clone_inputs(f);
    if (!args) return gwr_rewrite_fail(c, GWR_ERR_NOMEM, "out of memory");
    int ret;
    if (!gwr_args_set_tensor(args, "qkv", x) && !gwr_args_set_tensor(args, "qkv_bias", bias)) {
        ret = recreate(c, f, args, NULL);
        if (ret > 0 && gwr_layer_mark_as_removed(l)) ret = gwr_rewrite_fail(c, GWR_ERR_STATE, "cannot remove the Add");
    } else {
        ret = gwr_rewrite_fail(c, GWR_ERR_NOMEM, "out of memory");
    }
    gwr_args_free(args);
    return ret;
}

const gwr_pattern_rewriter gwr_pattern_fuse_attention_with_bias = {
    .name = "fuse_attention_with_bias",
    .root_classes = GWR_ROOT_CLASS(GWR_LAYER_ELEMENTWISE),
    .match_and_rewrite = fuse_bias,
};

/* ---- FLayerInfo for plugins loaded from files ------------------------------- */

gwr_status gwr_passes_recover_flayers(gwr_network *net, int64_t *nrecorded) {
    if (!net) return GWR_ERR_INVALID_ARG;
    int64_t n = 0;
    gwr_status s = GWR_OK;
    for (int64_t i = 0; i < gwr_network_num_layers(net) && !s; i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (!is_gpt_attention(l) || gwr_layer_is_removed(l) || gwr_flayer_get(net, l)) continue;
        gwr_args *a = gwr_args_new();
        if (!a) return GWR_ERR_NOMEM;
        static const char *const tensors[] = {"qkv", "qkv_bias", "attention_mask"};
        static const char *const ints[] = {"num_heads", "head_size", "remove_padding"};
        for (int k = 0; k < 3; k++)
            if (k < gwr_layer_num_inputs(l) && gwr_layer_input(l, k)) gwr_args_set_tensor(a, tensors[k], gwr_layer_input(l, k));
        for (int k = 0; k < 3; k++) {
            int64_t v;
            if (!gwr_layer_get_int(l, ints[k], &v)) gwr_args_set_int(a, ints[k], v);
        }
        s = gwr_flayer_record(net, l, GWR_GPT_ATTENTION, a);
        gwr_args_free(a);
        n += !s;
    }
    if (nrecorded) *nrecorded = n;
    return s;
}

/* ---- the pass table's rows (pass_table.h) ---- */
#include "passes/pass_table.h"

GWR_PASS(fuse_attention_with_bias, LOWER, .pattern = &gwr_pattern_fuse_attention_with_bias, .level = GWR_LEVEL_NONE,
         .targets = GWR_TARGET_GWR, .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-5,
         .summary = "fold a constant Add feeding a GPTAttention's qkv into its qkv_bias");

GWR_PASS(gpt_attention_remove_padding, LOWER, .pattern = &gwr_pattern_gpt_attention_remove_padding, .level = GWR_LEVEL_NONE,
         .targets = GWR_TARGET_GWR, .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-5,
         .summary = "re-create GPTAttention plugins in remove-padding mode (args batch_size, in_len, hidden_size)");

GWR_PASS(replace_add_with_sub, LOWER, .pattern = &gwr_pattern_replace_add_with_sub, .level = GWR_LEVEL_NONE,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_CHANGES,
         .summary = "turn every two-input Add into a Sub (the tutorial pattern; changes the numbers)");
