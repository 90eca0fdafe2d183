/* fuse_conv.c - onnxruntime's CNN fusions, for targets ort and gwr (plain
 * ONNX runtimes lack the com.microsoft ops, so never for target onnx):
 *
 *   fuse_conv_activation      act(Conv(x, W, B?))             -> FusedConv(x, W, B?; act)
 *                             act(FusedConv(x, W, B?, Z?))    -> FusedConv(x, W, B?, Z?; act)
 *                                 (a FusedConv without an activation: the
 *                                 one fuse_conv_add_activation makes)
 *   fuse_conv_add_activation  Add(Conv(x, W, B?), z)           -> FusedConv(x, W, B?, z)
 *                                 (either operand order; z of the Conv
 *                                 output's exact shape, so the Add does
 *                                 not broadcast; the activation after it
 *                                 then fuses as above)
 *   fuse_gemm_activation      act(Gemm(a, b, c?))             -> FusedGemm(a, b, c?; act)
 *
 * act is one of Relu, Tanh, Sigmoid, LeakyRelu (alpha), HardSigmoid
 * (alpha, beta) and, for FusedConv only (onnxruntime's FusedGemm has no
 * Clip), Clip with constant one-element bounds (inputs from opset 11,
 * attributes before; an absent bound is +-inf as the Clip kernel reads
 * it). Every attribute of the Conv or Gemm is kept; the activation goes
 * into "activation" and "activation_params" (FusedConv) or
 * "activation_alpha" / "activation_beta" (FusedGemm), always written out
 * since onnxruntime's functors require them. onnxruntime's kernels for
 * both ops are float32 only: so is every tensor here.
 *
 * For target gwr only (the manager arg "target" is gwr), act may also be
 * HardSwish, written as FusedConv's activation "HardSwish" without
 * parameters: a gwr extension for gwr's own executor (its conv epilogue
 * applies it per tile) that onnxruntime's FusedConv refuses, so never for
 * target ort nor without a target. fuse_hard_swish (benefit 40) makes the
 * HardSwish from the exporters' x*Clip(x+3,0,6)/6 first; until then the
 * Conv's output has two readers and nothing here fires. Likewise
 * com.microsoft's QuickGelu (alpha), which fuse_silu (40) makes from
 * x * Sigmoid(x), becomes FusedConv's activation "QuickGelu" with
 * activation_params [alpha].
 *
 * The Conv's or Gemm's output (and for the activation of a FusedConv, its
 * output) must have no reader outside the match and not be a network
 * output (the matcher's rule). On gwr's executor the fused kernels run
 * the Conv and Gemm kernels and then the activations' own expressions, so
 * the outputs are bit-identical. The manager arg "target" set to onnx
 * refuses; no arg (a plain `gwr rewrite --pattern` run, which names the
 * pass itself) fuses.
 *
 * Not a rule file: the activation's parameters become FusedConv's activation_params (a list
 * computed per activation kind), and a FusedConv without an activation is extended in place.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "gwr/match.h"
#include "gwr/passes.h"
#include "rewrite/rewrite_api.h"
#include "util/util.h"

enum { X, W, B, Z, LO, HI, NCAP };

/* act(Conv), act(FusedConv without activation), Add(Conv, z), act(Gemm);
 * the activation roots are any op (checked in the callback), the producer
 * their input 0. */
#define ANY_ROOT(...) {.op = NULL, .op_id = GWR_OP_CUSTOM, .in = {__VA_ARGS__}}
static const gwr_match_node conv_act[] = {
    GWR_M_OP("Conv", GWR_M_CAP(X), GWR_M_CAP(W), GWR_M_OPT_CAP(B)),
    ANY_ROOT(GWR_M_NODE(0), GWR_M_OPT_CAP(LO), GWR_M_OPT_CAP(HI)),
};
static const gwr_match_node fused_act[] = {
    {.op = "com.microsoft::FusedConv",
     .in = {GWR_M_CAP(X), GWR_M_CAP(W), GWR_M_OPT_CAP(B), GWR_M_OPT_CAP(Z)},
     .attrs = {GWR_MA_ABSENT("activation")}},
    ANY_ROOT(GWR_M_NODE(0), GWR_M_OPT_CAP(LO), GWR_M_OPT_CAP(HI)),
};
static const gwr_match_node conv_add[] = {
    GWR_M_OP("Conv", GWR_M_CAP(X), GWR_M_CAP(W), GWR_M_OPT_CAP(B)),
    GWR_M_OP("Add", GWR_M_NODE(0), GWR_M_CAP(Z)),
};
static const gwr_match_node gemm_act[] = {
    GWR_M_OP("Gemm", GWR_M_CAP(X), GWR_M_CAP(W), GWR_M_OPT_CAP(B)),
    ANY_ROOT(GWR_M_NODE(0), GWR_M_OPT_CAP(LO), GWR_M_OPT_CAP(HI)),
};
static const gwr_match_pattern t_conv_act = {"conv_activation.conv", GWR_M_NODES(conv_act), NULL, NULL};
static const gwr_match_pattern t_fused_act = {"conv_activation.fused_conv", GWR_M_NODES(fused_act), NULL, NULL};
static const gwr_match_pattern t_conv_add = {"conv_add", GWR_M_NODES(conv_add), NULL, NULL};
static const gwr_match_pattern t_gemm_act = {"gemm_activation", GWR_M_NODES(gemm_act), NULL, NULL};

/* ---- the activation --------------------------------------------------------- */

/* The optimizer's target (manager arg "target"); 0 without one. */
static int64_t target_of(gwr_rewrite_ctx *c) {
    const gwr_args *a = gwr_rewrite_ctx_args(c);
    int64_t t = 0;
    if (!a || gwr_args_get_int(a, "target", &t)) t = 0;
    return t;
}

typedef struct act {
    const char *name;
    int nparams;
    float p[2];
} act;

/* gwr's FusedConv extensions, which onnxruntime's kernel refuses: for
 * target gwr only. NULL, or why not. */
static const char *gwr_only(int gemm, int64_t target) {
    if (gemm) return "FusedGemm has no HardSwish or QuickGelu";
    if (target != GWR_TARGET_GWR)
        return "HardSwish and QuickGelu fuse into FusedConv for target gwr only (onnxruntime lacks them)";
    return NULL;
}

/* com.microsoft's QuickGelu (fuse_silu's x * Sigmoid(x) at alpha 1). */
static const char *read_quick_gelu(gwr_layer *r, int gemm, int64_t target, act *a) {
    const char *why = gwr_only(gemm, target);
    if (why) return why;
    if (gwr_layer_num_inputs(r) != 1 || gwr_layer_num_outputs(r) != 1) return "QuickGelu with other than 1 input";
    a->name = "QuickGelu", a->nparams = 1, a->p[0] = 1.702f; /* the op's default */
    gwr_layer_get_float(r, "alpha", &a->p[0]);
    return NULL;
}

/* The root's activation into *a. NULL when it is one the fused op takes,
 * else why not. */
static const char *read_act(gwr_network *net, const gwr_match *m, int gemm, int64_t target, act *a) {
    gwr_layer *r = m->layers[m->nlayers - 1];
    static const char *const names[] = {"Relu", "Tanh", "Sigmoid", "LeakyRelu", "HardSigmoid", "Clip"};
    memset(a, 0, sizeof *a);
    if (gwr_match_is_op(r, "com.microsoft::QuickGelu"))
        return read_quick_gelu(r, gemm, target, a);
    if (*gwr_layer_domain(r) || gwr_layer_num_outputs(r) != 1) return "not an ONNX activation";
    for (size_t i = 0; i < sizeof names / sizeof *names && !a->name; i++)
        if (!strcmp(gwr_layer_op(r), names[i])) a->name = names[i];
    if (!a->name && !strcmp(gwr_layer_op(r), "HardSwish")) {
        const char *why = gwr_only(gemm, target);
        if (why) return why;
        a->name = "HardSwish";
        return gwr_layer_num_inputs(r) > 1 ? "too many inputs" : NULL;
    }
    if (!a->name) return "not Relu, Tanh, Sigmoid, LeakyRelu, HardSigmoid, Clip or (target gwr) HardSwish";
    int nin = gwr_layer_num_inputs(r), clip = !strcmp(a->name, "Clip");
    if (nin > (clip ? 3 : 1)) return "too many inputs";
    if (!strcmp(a->name, "LeakyRelu")) {
        a->nparams = 1, a->p[0] = 0.01f;
        gwr_layer_get_float(r, "alpha", &a->p[0]);
    } else if (!strcmp(a->name, "HardSigmoid")) {
        a->nparams = 2, a->p[0] = 0.2f, a->p[1] = 0.5f;
        gwr_layer_get_float(r, "alpha", &a->p[0]);
        gwr_layer_get_float(r, "beta", &a->p[1]);
    } else if (clip) {
        if (gemm) return "onnxruntime's FusedGemm has no Clip";
        a->nparams = 2;
        int64_t opset = gwr_network_opset(net, "");
        if (opset >= 0 && opset < 11) { /* bounds are attributes; the kernel's defaults */
            a->p[0] = -FLT_MAX, a->p[1] = FLT_MAX;
            gwr_layer_get_float(r, "min", &a->p[0]);
            gwr_layer_get_float(r, "max", &a->p[1]);
        } else {
            gwr_tensor *const bound[2] = {m->captures[LO], m->captures[HI]};
            for (int i = 0; i < 2; i++) {
                double v = i ? INFINITY : -INFINITY;
                if (bound[i] && (gwr_tensor_dtype(bound[i]) != GWR_FLOAT32 || !gwr_match_const_scalar(bound[i], &v)))
                    return "a Clip bound is not a one-element float constant";
                a->p[i] = (float)v;
            }
        }
        if (a->p[0] != a->p[0] || a->p[1] != a->p[1] || !(a->p[0] <= a->p[1])) return "Clip bounds NaN or out of order";
    }
    return NULL;
}

/* Writes a's attributes on l, FusedConv's or FusedGemm's way. */
static gwr_status set_act(gwr_layer *l, const act *a, int gemm) {
    gwr_status s = gwr_layer_set_string(l, "activation", a->name);
    if (s || !a->nparams) return s;
    if (!gemm) return gwr_layer_set_floats(l, "activation_params", a->p, a->nparams);
    s = gwr_layer_set_float(l, "activation_alpha", a->p[0]);
    return s || a->nparams < 2 ? s : gwr_layer_set_float(l, "activation_beta", a->p[1]);
}

/* ---- the rewrite ------------------------------------------------------------ */

/* Matches p at l; 1 and *m, or what gwr_rewrite_* returns for the caller
 * to return (0 or < 0). */
static int match(gwr_rewrite_ctx *c, const gwr_match_pattern *p, gwr_layer *l, gwr_match *m) {
    if (target_of(c) == GWR_TARGET_ONNX)
        return gwr_rewrite_no_match(c, "com.microsoft ops are not for target onnx");
    int rc = gwr_match_layer(p, l, m);
    if (rc < 0) return gwr_rewrite_fail(c, (gwr_status)-rc, "%s", gwr_last_errmsg());
    if (!rc) {
        char why[256] = "";
        if (rw_ctx_wants_reason(c)) gwr_match_why(m, why, sizeof why);
        return gwr_rewrite_no_match(c, "%s", why);
    }
    gwr_tensor *y = gwr_layer_output(l, 0);
    if (gwr_tensor_dtype(m->captures[X]) != GWR_FLOAT32 || gwr_tensor_dtype(y) != GWR_FLOAT32)
        return gwr_rewrite_no_match(c, "not float32 (onnxruntime's kernels are float32 only)");
    return 1;
}

/* A new `op` layer of com.microsoft reading in[0..n) (trailing NULLs
 * dropped) with from's attributes, a's (may be NULL) and inferred types;
 * it replaces m's root. 1, or what gwr_rewrite_fail returns. */
static int replace(gwr_rewrite_ctx *c, const gwr_match *m, const char *op, gwr_layer *from, int n,
                   gwr_tensor *const *in, const act *a) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    while (n > 2 && !in[n - 1]) n--;
    gwr_layer *l = gwr_network_add_layer(net, op, "com.microsoft", NULL, n, in, 1, NULL);
    if (!l) return gwr_rewrite_fail(c, GWR_ERR_INVALID_ARG, "%s", gwr_network_errmsg(net));
    int gemm = !strcmp(op, "FusedGemm");
    gwr_status s = gwr_match_copy_attrs(l, from);
    if (!s && a) s = set_act(l, a, gemm);
    if (!s && (s = gwr_layer_infer(l))) gwr_set_last_error(s, "%s", gwr_network_errmsg(net));
    gwr_tensor *y = gwr_layer_output(l, 0);
    if (!s) s = gwr_match_replace(m, 1, &y);
    if (s) {
        gwr_layer_mark_as_removed(l);
        return gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg());
    }
    return 1;
}

static int conv_activation(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_tensor *in0 = gwr_layer_num_inputs(l) > 0 ? gwr_layer_input(l, 0) : NULL;
    gwr_layer *p = in0 ? gwr_tensor_parent(in0) : NULL;
    int fused = gwr_match_is_op(p, "com.microsoft::FusedConv");
    gwr_match m;
    int rc = match(c, fused ? &t_fused_act : &t_conv_act, l, &m);
    if (rc != 1) return rc;
    act a;
    const char *why = read_act(gwr_rewrite_ctx_network(c), &m, 0, target_of(c), &a);
    if (why) return gwr_rewrite_no_match(c, "%s", why);
    gwr_tensor *in[4] = {m.captures[X], m.captures[W], m.captures[B], m.captures[Z]};
    return replace(c, &m, "FusedConv", m.layers[0], 4, in, &a);
}

/* z has the known shape of t: the same rank, every dim equal and known or
 * the same symbol. */
static int same_shape(const gwr_tensor *z, const gwr_tensor *t) {
    int r = gwr_tensor_rank(z);
    if (r < 0 || r != gwr_tensor_rank(t)) return 0;
    for (int i = 0; i < r; i++)
        if (gwr_tensor_dim(z, i) == GWR_DIM_UNKNOWN || gwr_tensor_dim(z, i) != gwr_tensor_dim(t, i)) return 0;
    return 1;
}

static int conv_add_activation(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_match m;
    int rc = match(c, &t_conv_add, l, &m);
    if (rc != 1) return rc;
    gwr_tensor *y = gwr_layer_output(m.layers[0], 0), *z = m.captures[Z];
    if (z == y) return gwr_rewrite_no_match(c, "the Conv's output added to itself");
    if (!same_shape(z, y) || !same_shape(y, gwr_layer_output(l, 0)) || gwr_tensor_dtype(z) != GWR_FLOAT32)
        return gwr_rewrite_no_match(c, "'%s' is not a float32 tensor of the Conv output's known shape",
                                    gwr_tensor_name(z));
    gwr_tensor *in[4] = {m.captures[X], m.captures[W], m.captures[B], z};
    return replace(c, &m, "FusedConv", m.layers[0], 4, in, NULL);
}

static int gemm_activation(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_match m;
    int rc = match(c, &t_gemm_act, l, &m);
    if (rc != 1) return rc;
    act a;
    const char *why = read_act(gwr_rewrite_ctx_network(c), &m, 1, target_of(c), &a);
    if (why) return gwr_rewrite_no_match(c, "%s", why);
    gwr_tensor *in[3] = {m.captures[X], m.captures[W], m.captures[B]};
    return replace(c, &m, "FusedGemm", m.layers[0], 3, in, &a);
}

static const char *const act_roots[] = {"Relu", "Tanh", "Sigmoid", "LeakyRelu", "HardSigmoid", "Clip", "HardSwish",
                                         "com.microsoft::QuickGelu", NULL};
static const char *const gemm_roots[] = {"Relu", "Tanh", "Sigmoid", "LeakyRelu", "HardSigmoid", NULL};
static const char *const add_roots[] = {"Add", NULL};

const gwr_pattern_rewriter gwr_pattern_fuse_conv_activation = {
    .name = "fuse_conv_activation",
    .root_ops = act_roots,
    .match_and_rewrite = conv_activation,
};
const gwr_pattern_rewriter gwr_pattern_fuse_conv_add_activation = {
    .name = "fuse_conv_add_activation",
    .root_ops = add_roots,
    .match_and_rewrite = conv_add_activation,
};
const gwr_pattern_rewriter gwr_pattern_fuse_gemm_activation = {
    .name = "fuse_gemm_activation",
    .root_ops = gemm_roots,
    .match_and_rewrite = gemm_activation,
};

/* ---- the pass table's rows (pass_table.h) ---- */
#include "passes/pass_table.h"

GWR_PASS(fuse_conv_add_activation, LOWER, .pattern = &gwr_pattern_fuse_conv_add_activation, .level = GWR_LEVEL_EXTENDED,
         .targets = GWR_TARGET_ORT | GWR_TARGET_GWR, .numerics = GWR_NUMERICS_EXACT,
         .summary = "turn Conv + Add of a residual z of the Conv output's exact shape into FusedConv(x, W, B, z); the "
                    "activation after it then fuses too");

GWR_PASS(fuse_conv_activation, LOWER, .pattern = &gwr_pattern_fuse_conv_activation, .level = GWR_LEVEL_EXTENDED,
         .targets = GWR_TARGET_ORT | GWR_TARGET_GWR, .numerics = GWR_NUMERICS_EXACT,
         .summary = "turn Conv (or a FusedConv without one) + Relu/Tanh/Sigmoid/LeakyRelu/HardSigmoid/Clip into "
                    "com.microsoft FusedConv (float32; constant Clip bounds); + HardSwish or QuickGelu (SiLU) too for "
                    "target gwr (gwr's extensions)");

GWR_PASS(fuse_gemm_activation, LOWER, .pattern = &gwr_pattern_fuse_gemm_activation, .level = GWR_LEVEL_EXTENDED,
         .targets = GWR_TARGET_ORT | GWR_TARGET_GWR, .numerics = GWR_NUMERICS_EXACT,
         .summary = "turn Gemm + Relu/Tanh/Sigmoid/LeakyRelu/HardSigmoid into com.microsoft FusedGemm (float32)");
