/* ew_chain.c - the ew_chain pass (target gwr): a chain of two or more
 * float32 element-wise layers, each intermediate read only by the next
 * link, becomes one gwr::ElementwiseChain (src/functional/functional_api.h) that
 * runs them in one loop. Exact: the kernel computes every link as the
 * layer's own kernel does.
 *
 * A link is a unary op of the list below, or Add/Sub/Mul/Div/Max/Min of
 * two inputs where one input (the chain) has the output's dtype and shape
 * and the other (the side operand) is float32 and broadcasts into it as
 * the op allows (a scalar, the same shape, one run of axes). The root is
 * the chain's last link; the pass walks up from it. It runs at benefit 5,
 * below every other fusion, and refuses chains that other fusions read
 * later in network order: the statistics of a norm (a chain on a Reduce*
 * result, or read as a broadcast operand) and chains feeding Softmax, Gelu,
 * the norms (or a ReduceMean: their formula), MatMul or Gemm (attention's scale and mask, BiasGelu, the
 * scalar folds around a MatMul).
 *
 * Not a rule file: the chain has any length and any mix of element-wise ops; the fused layer
 * carries the chain as a program.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "functional/functional_api.h"
#include "gwr/passes.h"
#include "passes/pass_util.h"

static const struct {
    const char *op;
    int64_t code;
} unary_ops[] = {
    {"Relu", GWR_EWC_RELU},     {"LeakyRelu", GWR_EWC_LEAKY_RELU}, {"Clip", GWR_EWC_CLIP},
    {"Sigmoid", GWR_EWC_SIGMOID}, {"Tanh", GWR_EWC_TANH},           {"HardSigmoid", GWR_EWC_HARD_SIGMOID},
    {"Neg", GWR_EWC_NEG},       {"Abs", GWR_EWC_ABS},              {"Exp", GWR_EWC_EXP},
    {"Log", GWR_EWC_LOG},       {"Sqrt", GWR_EWC_SQRT},            {"Reciprocal", GWR_EWC_RECIPROCAL},
    {"Erf", GWR_EWC_ERF},       {"Softplus", GWR_EWC_SOFTPLUS},
};
static const struct {
    const char *op;
    int64_t code;
} binary_ops[] = {
    {"Add", GWR_EWC_ADD}, {"Sub", GWR_EWC_SUB}, {"Mul", GWR_EWC_MUL},
    {"Div", GWR_EWC_DIV}, {"Max", GWR_EWC_MAX}, {"Min", GWR_EWC_MIN},
};

/* One link: its code, parameters, side operand and chain input slot. */
typedef struct ewc_link {
    gwr_layer *l;
    int64_t code;
    double a, b;
    gwr_tensor *side;
    int slot;
} ewc_link;

static int known_f32(const gwr_tensor *t, int64_t *dims, int *rank) {
    int r = gwr_tensor_rank(t);
    if (!t || gwr_tensor_dtype(t) != GWR_FLOAT32 || r < 0) return 0;
    for (int a = 0; a < r; a++)
        if (!GWR_DIM_IS_KNOWN(dims[a] = gwr_tensor_dim(t, a))) return 0;
    *rank = r;
    return 1;
}

static int same_dims(int ra, const int64_t *a, int rb, const int64_t *b) {
    return ra == rb && (!ra || !memcmp(a, b, (size_t)ra * sizeof *a));
}

/* A float32 scalar constant bound of Clip, or the default when absent. */
static int clip_bound(const gwr_layer *l, int slot, double dflt, double *v) {
    gwr_tensor *t = slot < gwr_layer_num_inputs(l) ? gwr_layer_input(l, slot) : NULL;
    gwr_match_const k;
    if (!t) return *v = dflt, 1;
    if (!gwr_match_const_get(t, &k) || k.dtype != GWR_FLOAT32 || k.numel != 1) return 0;
    *v = gwr_match_const_at(&k, 0);
    return 1;
}

static int unary_params(const gwr_layer *l, ewc_link *k) {
    float f;
    if (k->code == GWR_EWC_LEAKY_RELU) return !gwr_layer_attr_float(l, "alpha", 0.01f, &f) && (k->a = f, 1);
    if (k->code == GWR_EWC_HARD_SIGMOID) {
        float g;
        if (gwr_layer_attr_float(l, "alpha", 0.2f, &f) || gwr_layer_attr_float(l, "beta", 0.5f, &g)) return 0;
        return k->a = f, k->b = g, 1;
    }
    if (k->code != GWR_EWC_CLIP) return gwr_layer_num_inputs(l) == 1;
    if (gwr_layer_has_attr(l, "min") || gwr_layer_has_attr(l, "max")) { /* before opset 11 */
        float lo, hi;
        if (gwr_layer_num_inputs(l) != 1 || gwr_layer_attr_float(l, "min", -FLT_MAX, &lo) ||
            gwr_layer_attr_float(l, "max", FLT_MAX, &hi))
            return 0;
        return k->a = lo, k->b = hi, 1;
    }
    return gwr_layer_num_inputs(l) <= 3 && clip_bound(l, 1, -INFINITY, &k->a) && clip_bound(l, 2, INFINITY, &k->b);
}

static int is_link_op(const gwr_layer *p) {
    if (!p || gwr_layer_is_removed(p) || *gwr_layer_domain(p)) return 0;
    for (size_t i = 0; i < sizeof unary_ops / sizeof *unary_ops; i++)
        if (!strcmp(gwr_layer_op(p), unary_ops[i].op)) return 1;
    for (size_t i = 0; i < sizeof binary_ops / sizeof *binary_ops; i++)
        if (!strcmp(gwr_layer_op(p), binary_ops[i].op)) return 1;
    return 0;
}

/* Which input of binary l is the chain: one of the output's shape; of two,
 * input 0 unless only input 1 comes from a link read by l alone (x *
 * Sigmoid(x)). -1: none. */
static int chain_slot(gwr_layer *l, int orank, const int64_t *od) {
    int64_t d[GWR_MAX_RANK];
    int r, ok[2], linked[2];
    for (int i = 0; i < 2; i++) {
        gwr_tensor *t = gwr_layer_input(l, i);
        ok[i] = t && known_f32(t, d, &r) && same_dims(r, d, orank, od);
        linked[i] = ok[i] && gwr_match_sole_reader(t) == l && is_link_op(gwr_tensor_parent(t));
    }
    if (ok[0] && ok[1]) return !linked[0] && linked[1];
    return ok[0] ? 0 : ok[1] ? 1 : -1;
}

/* 1 and *k filled when l is a link. */
static int as_link(gwr_layer *l, ewc_link *k) {
    int64_t od[GWR_MAX_RANK], sd[GWR_MAX_RANK], period, inner;
    int orank, srank;
    if (!l || gwr_layer_is_removed(l) || *gwr_layer_domain(l) || gwr_layer_num_outputs(l) != 1 ||
        !known_f32(gwr_layer_output(l, 0), od, &orank))
        return 0;
    const char *op = gwr_layer_op(l);
    *k = (ewc_link){.l = l};
    for (size_t i = 0; i < sizeof unary_ops / sizeof *unary_ops; i++)
        if (!strcmp(op, unary_ops[i].op)) {
            int64_t xd[GWR_MAX_RANK];
            int xr;
            k->code = unary_ops[i].code;
            return unary_params(l, k) && known_f32(gwr_layer_input(l, 0), xd, &xr) && same_dims(xr, xd, orank, od);
        }
    for (size_t i = 0; i < sizeof binary_ops / sizeof *binary_ops; i++)
        if (!strcmp(op, binary_ops[i].op)) {
            if (gwr_layer_num_inputs(l) != 2 || (k->slot = chain_slot(l, orank, od)) < 0) return 0;
            k->side = gwr_layer_input(l, 1 - k->slot);
            if (!known_f32(k->side, sd, &srank) || !gwr_ewc_side_map(orank, od, srank, sd, &period, &inner)) return 0;
            k->code = binary_ops[i].code + (k->slot ? GWR_EWC_SWAP : 0);
            return 1;
        }
    return 0;
}

/* Why the chain ending in `tail` (output y) is left for another fusion, or
 * NULL. */
static const char *wanted_elsewhere(const gwr_tensor *x, const gwr_tensor *y) {
    /* ReduceMean: a norm's formula, which fuse_layer_norm / fuse_rms_norm
     * turn into a LayerNormalization later in network order */
    static const char *const readers[] = {"Softmax", "Gelu", "LayerNormalization", "SimplifiedLayerNormalization",
                                          "MatMul", "Gemm", "ReduceMean"};
    gwr_layer *p = gwr_tensor_parent(x);
    if (p && !strncmp(gwr_layer_op(p), "Reduce", 6)) return "the chain reads a Reduce (a norm's statistics)";
    for (int64_t i = 0; i < gwr_tensor_num_users(y); i++) {
        int slot;
        gwr_layer *u = gwr_tensor_user(y, i, &slot);
        ewc_link k;
        if (gwr_layer_is_removed(u)) continue;
        for (size_t j = 0; j < sizeof readers / sizeof *readers; j++)
            if (!strcmp(gwr_layer_op(u), readers[j])) return "the chain feeds a fusion of another pass";
        if (as_link(u, &k) && k.side == y && k.slot != slot) return "the chain is a broadcast operand (a norm's statistics)";
    }
    return NULL;
}

static int build(gwr_rewrite_ctx *c, ewc_link *links, int n) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    gwr_tensor *in[GWR_EWC_MAX_LINKS + 1];
    int64_t ops[GWR_EWC_MAX_LINKS];
    double al[GWR_EWC_MAX_LINKS], be[GWR_EWC_MAX_LINKS];
    int nin = 0;
    in[nin++] = gwr_layer_input(links[0].l, links[0].slot);
    for (int i = 0; i < n; i++) {
        ops[i] = links[i].code, al[i] = links[i].a, be[i] = links[i].b;
        if (links[i].side) in[nin++] = links[i].side;
    }
    gwr_args *a = gwr_args_new();
    gwr_status s = a ? GWR_OK : GWR_ERR_NOMEM;
    if (!s) s = gwr_args_set_ints(a, "ops", n, ops);
    if (!s) s = gwr_args_set_floats(a, "alphas", n, al);
    if (!s) s = gwr_args_set_floats(a, "betas", n, be);
    gwr_layer *f = s ? NULL : gwr_plugin_create(net, GWR_PLUGIN_DOMAIN, GWR_EWC_OP, NULL, nin, in, a);
    gwr_args_free(a);
    if (!f) return gwr_rewrite_fail(c, s ? s : GWR_ERR_SHAPE, "ElementwiseChain: %s", gwr_last_errmsg());
    gwr_tensor *y = gwr_layer_output(f, 0);
    s = gwr_match_replace_layer(links[n - 1].l, 1, &y);
    for (int i = 0; !s && i < n - 1; i++) s = gwr_layer_mark_as_removed(links[i].l);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}

static int fuse_ew_chain(gwr_rewrite_ctx *c, gwr_layer *l) {
    if (gwr_match_target(c) != GWR_TARGET_GWR) return gwr_rewrite_no_match(c, "ElementwiseChain is gwr's own op (target gwr)");
    ewc_link links[GWR_EWC_MAX_LINKS], k;
    if (!as_link(l, &links[GWR_EWC_MAX_LINKS - 1])) return gwr_rewrite_no_match(c, "not a float32 link of known shape");
    gwr_tensor *y = gwr_layer_output(l, 0);
    gwr_layer *r = gwr_match_sole_reader(y);
    if (r && as_link(r, &k) && gwr_layer_input(r, k.slot) == y) return gwr_rewrite_no_match(c, "not the chain's last link");
    int first = GWR_EWC_MAX_LINKS - 1;
    while (first > 0) {
        gwr_tensor *t = gwr_layer_input(links[first].l, links[first].slot);
        gwr_layer *p = gwr_tensor_parent(t);
        if (gwr_match_sole_reader(t) != links[first].l || !as_link(p, &links[first - 1])) break;
        first--;
    }
    int n = GWR_EWC_MAX_LINKS - first;
    if (n < 2) return gwr_rewrite_no_match(c, "a single element-wise layer");
    const char *why = wanted_elsewhere(gwr_layer_input(links[first].l, links[first].slot), y);
    if (why) return gwr_rewrite_no_match(c, "%s", why);
    return build(c, links + first, n);
}

static const char *const ew_roots[] = {"Relu", "LeakyRelu", "Clip", "Sigmoid", "Tanh", "HardSigmoid", "Neg",
                                       "Abs",  "Exp",       "Log",  "Sqrt",    "Reciprocal", "Erf", "Softplus", "Add",
                                       "Sub",  "Mul",       "Div",  "Max",     "Min",  NULL};

const gwr_pattern_rewriter gwr_pattern_fuse_elementwise_chain = {
    .name = "fuse_elementwise_chain",
    .root_ops = ew_roots,
    .match_and_rewrite = fuse_ew_chain,
};

/* ---- the pass table's row (pass_table.h) ---- */
#include "passes/pass_table.h"

GWR_PASS(fuse_elementwise_chain, KERNEL, .pattern = &gwr_pattern_fuse_elementwise_chain, .level = GWR_LEVEL_EXTENDED,
         .targets = GWR_TARGET_GWR, .numerics = GWR_NUMERICS_EXACT,
         .summary = "turn chains of 2+ float32 element-wise layers (unary activations and math, "
                    "Add/Sub/Mul/Div/Max/Min with a scalar, same-shape or per-channel operand) into one "
                    "gwr::ElementwiseChain loop");
