/* activation.c - fuse_hard_swish: the exporters' spellings of HardSwish
 * and HardSigmoid become the one layer.
 *
 *   x * Clip(x + 3, 0, 6) / 6          -> HardSwish(x)    (Div by 6, or Mul by 1/6)
 *   x * HardSigmoid(x; 1/6, 0.5)       -> HardSwish(x)
 *   Clip(x + 3, 0, 6) / 6              -> HardSigmoid(x; alpha 1/6, beta 0.5)
 *
 * Add and Mul are commutative, so either operand order matches; the Clip
 * bounds are inputs (opset >= 11, or none imported) or attributes (a
 * network importing an older opset; HardSigmoid only then). 1/6 is compared
 * within 1e-6 relative: PyTorch's other HardSigmoid, alpha 0.2, is not
 * one. x * (Clip(x + 3, 0, 6) / 6) fuses in two steps, HardSigmoid first.
 * HardSwish exists from opset 14. Below it (targets onnx and ort: both
 * load only the ops of the model's opset) the HardSwish forms become
 * x * HardSigmoid(x), HardSigmoid being opset 6, which still saves three
 * layers and lets a Conv before it take the HardSigmoid as its activation;
 * target gwr gets HardSwish at any opset (its executor runs it at every
 * opset); a network with no opset import (built by the API) gets it too. The replacement must
 * have the root's type: a splat constant that broadcasts x to a larger
 * shape refuses, and x must be a float tensor. */
#include <math.h>
#include <string.h>

#include "gwr/match.h"
#include "gwr/passes.h"
#include "passes/pass_util.h"
#include "util/util.h"

enum { X, K3, LO, HI, K6, NCAP };

#define SIXTH (1.0 / 6.0)
#define SIXTH_TOL (1e-6 / 6.0)

/* The constant of the root's Mul is 1/6 within 1e-6 relative. */
static int is_sixth(const gwr_match *m, int node, void *user) {
    (void)node, (void)user;
    return gwr_match_const_is_splat(m->captures[K6], SIXTH, SIXTH_TOL);
}

#define ADD3 GWR_M_OP("Add", GWR_M_CAP(X), GWR_M_SPLAT(K3, 3.0))
#define CLIP_IN GWR_M_OP("Clip", GWR_M_NODE(0), GWR_M_SPLAT(LO, 0.0), GWR_M_SPLAT(HI, 6.0))
#define CLIP_ATTR {.op = "Clip", .in = {GWR_M_NODE(0)}, .attrs = {GWR_MA_FLOAT("min", 0.0, 1e-6), GWR_MA_FLOAT("max", 6.0, 1e-6)}}
#define XMUL GWR_M_OP("Mul", GWR_M_CAP(X), GWR_M_NODE(1))
#define DIV6(n) GWR_M_OP("Div", GWR_M_NODE(n), GWR_M_SPLAT(K6, 6.0))
#define MUL6(n) {.op = "Mul", .in = {GWR_M_NODE(n), GWR_M_CONST(K6)}, .pred = is_sixth}

/* HardSwish: x * Clip(x + 3, 0, 6) / 6 and x * Clip(x + 3, 0, 6) * (1/6).
 * (No Clip-attribute forms: those models are older than opset 11, so older
 * than HardSwish.) */
static const gwr_match_node hs_div[] = {ADD3, CLIP_IN, XMUL, DIV6(2)};
static const gwr_match_node hs_mul[] = {ADD3, CLIP_IN, XMUL, MUL6(2)};
/* HardSwish: x * HardSigmoid(x) with alpha 1/6 (no default: it is 0.2) and beta 0.5. */
static const gwr_match_node hs_hsig[] = {
    {.op = "HardSigmoid",
     .in = {GWR_M_CAP(X)},
     .attrs = {GWR_MA_FLOAT("alpha", SIXTH, SIXTH_TOL), GWR_MA_FLOAT_OR_ABSENT("beta", 0.5, 1e-6)}},
    GWR_M_OP("Mul", GWR_M_CAP(X), GWR_M_NODE(0)),
};
/* HardSigmoid: Clip(x + 3, 0, 6) / 6 and Clip(x + 3, 0, 6) * (1/6). */
static const gwr_match_node sig_div_in[] = {ADD3, CLIP_IN, DIV6(1)};
static const gwr_match_node sig_mul_in[] = {ADD3, CLIP_IN, MUL6(1)};
static const gwr_match_node sig_div_attr[] = {ADD3, CLIP_ATTR, DIV6(1)};
static const gwr_match_node sig_mul_attr[] = {ADD3, CLIP_ATTR, MUL6(1)};

/* Tables [0, NSWISH) make a HardSwish, the rest a HardSigmoid; those from
 * FIRST_ATTR on read Clip's attributes. */
#define NSWISH 3
#define FIRST_ATTR 5
static const gwr_match_pattern tables[] = {
    {"hard_swish.div", GWR_M_NODES(hs_div), NULL, NULL},
    {"hard_swish.mul", GWR_M_NODES(hs_mul), NULL, NULL},
    {"hard_swish.hard_sigmoid", GWR_M_NODES(hs_hsig), NULL, NULL},
    {"hard_sigmoid.div", GWR_M_NODES(sig_div_in), NULL, NULL},
    {"hard_sigmoid.mul", GWR_M_NODES(sig_mul_in), NULL, NULL},
    {"hard_sigmoid.div_clip_attrs", GWR_M_NODES(sig_div_attr), NULL, NULL},
    {"hard_sigmoid.mul_clip_attrs", GWR_M_NODES(sig_mul_attr), NULL, NULL},
};
#define NTABLES ((int)(sizeof tables / sizeof tables[0]))

/* Table k applies at this default-domain opset (-1: none imported): Clip's
 * min and max are attributes only before 11 (from 11 on, and with no
 * opset, the executor reads Clip's inputs). x * HardSigmoid(x) is already
 * as fused as it gets where HardSwish is not available. */
static int applies(int k, int64_t opset, int hard_swish) {
    if (k == NSWISH - 1) return hard_swish;
    if (k < NSWISH) return opset < 0 || opset >= 11;
    return k < FIRST_ATTR || (opset >= 0 && opset < 11);
}

/* May the pass write HardSwish: target gwr, or an opset that has it. */
static int hard_swish_ok(gwr_rewrite_ctx *c, int64_t opset) {
    return (gwr_ps_target(c) & GWR_TARGET_GWR) || opset < 0 || opset >= 14;
}

/* x a float tensor of known rank with the root output's shape. */
static int same_type(const gwr_tensor *x, const gwr_tensor *y) {
    gwr_dtype t = gwr_tensor_dtype(x);
    int r = gwr_tensor_rank(x);
    if (!gwr_match_dtype_real_float(t)) return 0;
    if (t != gwr_tensor_dtype(y) || r < 0 || r != gwr_tensor_rank(y)) return 0;
    return !r || !memcmp(gwr_tensor_dims(x), gwr_tensor_dims(y), (size_t)r * sizeof(gwr_dim));
}

static gwr_tensor *hard_sigmoid(gwr_network *net, gwr_tensor *x) {
    gwr_args *a = gwr_args_new();
    gwr_tensor *y = NULL;
    if (a && !gwr_args_set_float(a, "alpha", SIXTH) && !gwr_args_set_float(a, "beta", 0.5))
        gwr_op_call(net, "", "HardSigmoid", 1, &x, a, 1, &y);
    gwr_args_free(a);
    return y;
}

static int fuse(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    if (*gwr_layer_domain(l) || gwr_layer_num_outputs(l) != 1) return gwr_rewrite_no_match(c, "not an ONNX Mul or Div");
    int64_t opset = gwr_network_opset(net, "");
    int hswish = hard_swish_ok(c, opset);
    gwr_match m;
    int k = 0, rc = 0;
    for (; k < NTABLES && !rc; k++)
        if (applies(k, opset, hswish) && (rc = gwr_match_layer(&tables[k], l, &m)) < 0)
            return gwr_rewrite_fail(c, (gwr_status)-rc, "%s", gwr_last_errmsg());
    if (!rc) return gwr_rewrite_no_match(c, "no HardSwish or HardSigmoid form");
    k--;
    gwr_tensor *x = m.captures[X], *out = gwr_layer_output(l, 0);
    if (!same_type(x, out))
        return gwr_rewrite_no_match(c, "'%s' is not a float tensor of the result's shape", gwr_tensor_name(x));
    gwr_tensor *y;
    if (k >= NSWISH) y = hard_sigmoid(net, x);
    else if (hswish) y = gwr_hard_swish(net, x);
    else y = (y = hard_sigmoid(net, x)) ? gwr_mul(net, x, y) : NULL; /* HardSwish's own definition */
    if (!y) return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "%s", gwr_network_errmsg(net));
    gwr_status s = gwr_match_replace(&m, 1, &y);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}

static const char *const roots[] = {"Div", "Mul", NULL};

const gwr_pattern_rewriter gwr_pattern_fuse_hard_swish = {
    .name = "fuse_hard_swish",
    .root_ops = roots,
    .match_and_rewrite = fuse,
};

/* ---- fuse_gelu ---------------------------------------------------------------
 *
 * The exporters' GELU, 0.5 x (1 + Erf(x / sqrt2)) (a Div by sqrt2 or a Mul
 * by 1/sqrt2) and 0.5 x (1 + Tanh(sqrt(2/pi) (x + 0.044715 x^3))) (x^3 as
 * Pow(x, 3) or x*x*x; or 0.044715 x^3 as x * (x * (0.044715 x)), jax2tf's), with the 0.5 multiplied first (0.5x * (1 + ...)),
 * last ((x * (1 + ...)) * 0.5) or in the middle (x * ((1 + ...) * 0.5)),
 * become Gelu(x) and Gelu(x, approximate "tanh"). The irrational constants
 * are compared within 1e-4 relative (exporters round them to float32 or
 * fewer digits); 0.5, 1 and 3 are SPLATs (1e-6). Gelu is opset 20: for
 * target onnx the default opset must be 20 or more or unset; for target
 * gwr any opset (the executor runs Gelu at every opset); target ort gets
 * onnxruntime's com.microsoft Gelu (erf) or FastGelu (tanh) at any opset,
 * which fuse_bias_gelu then merges with a bias Add before it. No "target"
 * arg (a plain manager run) is treated as onnx. */

enum { GX, GHALF, GONE, GSQ, GCUBE, GC, GT, GNCAP };

#define GELU_RTOL 1e-4
#define SQRT2 1.41421356237309504880
#define SQRT_2_PI 0.79788456080286535588 /* sqrt(2/pi) */
#define GELU_C 0.044715

static int near(const gwr_tensor *t, double v) { return gwr_match_const_is_splat(t, v, GELU_RTOL * v); }

/* The root's predicate: the irrational constants the table captured. */
static int gelu_consts(const gwr_match *m, int node, void *user) {
    (void)node, (void)user;
    const gwr_tensor *sq = m->captures[GSQ];
    if (sq && !near(sq, strcmp(gwr_layer_op(m->layers[0]), "Div") ? 1.0 / SQRT2 : SQRT2)) return 0;
    if (m->captures[GC] && !near(m->captures[GC], GELU_C)) return 0;
    return !m->captures[GT] || near(m->captures[GT], SQRT_2_PI);
}

/* the cores, ending in the Add of 1 (node c below) */
#define ERF_CORE(op)                                                                                       \
    GWR_M_OP(op, GWR_M_CAP(GX), GWR_M_CONST(GSQ)), GWR_M_OP("Erf", GWR_M_NODE(0)),                         \
        GWR_M_OP("Add", GWR_M_NODE(1), GWR_M_SPLAT(GONE, 1.0))
#define TANH_REST(n)                                                                                       \
    GWR_M_OP("Mul", GWR_M_NODE(n), GWR_M_CONST(GC)), GWR_M_OP("Add", GWR_M_CAP(GX), GWR_M_NODE((n) + 1)), \
        GWR_M_OP("Mul", GWR_M_NODE((n) + 2), GWR_M_CONST(GT)), GWR_M_OP("Tanh", GWR_M_NODE((n) + 3)),     \
        GWR_M_OP("Add", GWR_M_NODE((n) + 4), GWR_M_SPLAT(GONE, 1.0))
#define TANH_POW GWR_M_OP("Pow", GWR_M_CAP(GX), GWR_M_SPLAT(GCUBE, 3.0)), TANH_REST(0)
#define TANH_CUBE GWR_M_OP("Mul", GWR_M_CAP(GX), GWR_M_CAP(GX)), GWR_M_OP("Mul", GWR_M_NODE(0), GWR_M_CAP(GX)), TANH_REST(1)
/* jax2tf's (magika): x * (x * (0.044715 x)), the constant first, then x + that */
#define TANH_CX3                                                                                           \
    GWR_M_OP("Mul", GWR_M_CAP(GX), GWR_M_CONST(GC)), GWR_M_OP("Mul", GWR_M_CAP(GX), GWR_M_NODE(0)),        \
        GWR_M_OP("Mul", GWR_M_CAP(GX), GWR_M_NODE(1)), GWR_M_OP("Add", GWR_M_CAP(GX), GWR_M_NODE(2)),      \
        GWR_M_OP("Mul", GWR_M_NODE(3), GWR_M_CONST(GT)), GWR_M_OP("Tanh", GWR_M_NODE(4)),                 \
        GWR_M_OP("Add", GWR_M_NODE(5), GWR_M_SPLAT(GONE, 1.0))
/* the tails: where the 0.5 goes */
#define HALF_LAST(c)                                                                                       \
    GWR_M_OP("Mul", GWR_M_CAP(GX), GWR_M_NODE(c)),                                                         \
        {.op = "Mul", .in = {GWR_M_NODE((c) + 1), GWR_M_SPLAT(GHALF, 0.5)}, .pred = gelu_consts}
#define HALF_FIRST(c)                                                                                      \
    GWR_M_OP("Mul", GWR_M_CAP(GX), GWR_M_SPLAT(GHALF, 0.5)),                                               \
        {.op = "Mul", .in = {GWR_M_NODE((c) + 1), GWR_M_NODE(c)}, .pred = gelu_consts}
#define HALF_MID(c)                                                                                        \
    GWR_M_OP("Mul", GWR_M_NODE(c), GWR_M_SPLAT(GHALF, 0.5)),                                               \
        {.op = "Mul", .in = {GWR_M_CAP(GX), GWR_M_NODE((c) + 1)}, .pred = gelu_consts}

static const gwr_match_node erf_div_last[] = {ERF_CORE("Div"), HALF_LAST(2)};
static const gwr_match_node erf_div_first[] = {ERF_CORE("Div"), HALF_FIRST(2)};
static const gwr_match_node erf_div_mid[] = {ERF_CORE("Div"), HALF_MID(2)};
static const gwr_match_node erf_mul_last[] = {ERF_CORE("Mul"), HALF_LAST(2)};
static const gwr_match_node erf_mul_first[] = {ERF_CORE("Mul"), HALF_FIRST(2)};
static const gwr_match_node erf_mul_mid[] = {ERF_CORE("Mul"), HALF_MID(2)};
static const gwr_match_node tanh_pow_last[] = {TANH_POW, HALF_LAST(5)};
static const gwr_match_node tanh_pow_first[] = {TANH_POW, HALF_FIRST(5)};
static const gwr_match_node tanh_pow_mid[] = {TANH_POW, HALF_MID(5)};
static const gwr_match_node tanh_cube_last[] = {TANH_CUBE, HALF_LAST(6)};
static const gwr_match_node tanh_cube_first[] = {TANH_CUBE, HALF_FIRST(6)};
static const gwr_match_node tanh_cube_mid[] = {TANH_CUBE, HALF_MID(6)};
static const gwr_match_node tanh_cx3_last[] = {TANH_CX3, HALF_LAST(6)};
static const gwr_match_node tanh_cx3_first[] = {TANH_CX3, HALF_FIRST(6)};
static const gwr_match_node tanh_cx3_mid[] = {TANH_CX3, HALF_MID(6)};

/* the first NGELU_ERF make the erf Gelu, the rest the tanh one */
#define NGELU_ERF 6
static const gwr_match_pattern gelu_tables[] = {
    {"gelu.erf_div_last", GWR_M_NODES(erf_div_last), NULL, NULL},
    {"gelu.erf_div_first", GWR_M_NODES(erf_div_first), NULL, NULL},
    {"gelu.erf_div_mid", GWR_M_NODES(erf_div_mid), NULL, NULL},
    {"gelu.erf_mul_last", GWR_M_NODES(erf_mul_last), NULL, NULL},
    {"gelu.erf_mul_first", GWR_M_NODES(erf_mul_first), NULL, NULL},
    {"gelu.erf_mul_mid", GWR_M_NODES(erf_mul_mid), NULL, NULL},
    {"gelu.tanh_pow_last", GWR_M_NODES(tanh_pow_last), NULL, NULL},
    {"gelu.tanh_pow_first", GWR_M_NODES(tanh_pow_first), NULL, NULL},
    {"gelu.tanh_pow_mid", GWR_M_NODES(tanh_pow_mid), NULL, NULL},
    {"gelu.tanh_cube_last", GWR_M_NODES(tanh_cube_last), NULL, NULL},
    {"gelu.tanh_cube_first", GWR_M_NODES(tanh_cube_first), NULL, NULL},
    {"gelu.tanh_cube_mid", GWR_M_NODES(tanh_cube_mid), NULL, NULL},
    {"gelu.tanh_cx3_last", GWR_M_NODES(tanh_cx3_last), NULL, NULL},
    {"gelu.tanh_cx3_first", GWR_M_NODES(tanh_cx3_first), NULL, NULL},
    {"gelu.tanh_cx3_mid", GWR_M_NODES(tanh_cx3_mid), NULL, NULL},
};
#define NGELU ((int)(sizeof gelu_tables / sizeof gelu_tables[0]))

/* Does an Erf or Tanh make an input of l, or of a Mul or Add up to `depth`
 * producers above through Muls and Adds? Every form of the tables has one
 * within 3 (the root, the Mul by 0.5 or x or the Add of 1, the Add of 1,
 * then Erf or Tanh): the tables' twelve matches cost ~100 us a Mul, and a
 * model's Muls are mostly not GELUs (a Mul/Add chain of 10^5 layers spent
 * 20 s in them). */
static int erf_or_tanh_near(const gwr_layer *l, int depth) {
    for (int i = 0; i < gwr_layer_num_inputs(l); i++) {
        const gwr_tensor *t = gwr_layer_input(l, i);
        const gwr_layer *p = t ? gwr_tensor_parent(t) : NULL;
        if (!p) continue;
        if (gwr_layer_op_id(p) == GWR_OP_Erf || gwr_layer_op_id(p) == GWR_OP_Tanh) return 1;
        int op = gwr_layer_op_id(p);
        if (depth > 1 && (op == GWR_OP_Mul || op == GWR_OP_Add) && erf_or_tanh_near(p, depth - 1)) return 1;
    }
    return 0;
}

static int fuse_gelu(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    if (*gwr_layer_domain(l) || gwr_layer_num_outputs(l) != 1) return gwr_rewrite_no_match(c, "not an ONNX Mul");
    if (!erf_or_tanh_near(l, 3)) return gwr_rewrite_no_match(c, "no Erf or Tanh within 3 producers");
    int64_t opset = gwr_network_opset(net, ""), target = gwr_ps_target(c);
    if (target == GWR_TARGET_ONNX && opset >= 0 && opset < 20)
        return gwr_rewrite_no_match(c, "Gelu needs opset 20 (the network imports %lld) for target onnx",
                                    (long long)opset);
    gwr_match m;
    int k = 0, rc = 0;
    for (; k < NGELU && !rc; k++)
        if ((rc = gwr_match_layer(&gelu_tables[k], l, &m)) < 0)
            return gwr_rewrite_fail(c, (gwr_status)-rc, "%s", gwr_last_errmsg());
    if (!rc) return gwr_rewrite_no_match(c, "no GELU form");
    k--;
    gwr_tensor *x = m.captures[GX], *out = gwr_layer_output(l, 0);
    if (!same_type(x, out))
        return gwr_rewrite_no_match(c, "'%s' is not a float tensor of the result's shape", gwr_tensor_name(x));
    gwr_tensor *y = NULL;
    if (target == GWR_TARGET_ORT) /* onnxruntime's own, at any opset */
        gwr_op_call(net, "com.microsoft", k < NGELU_ERF ? "Gelu" : "FastGelu", 1, &x, NULL, 1, &y);
    else
        y = gwr_gelu(net, x, k < NGELU_ERF ? NULL : "tanh");
    if (!y) return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "%s", gwr_network_errmsg(net));
    gwr_status s = gwr_match_replace(&m, 1, &y);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}

static const char *const gelu_roots[] = {"Mul", NULL};

const gwr_pattern_rewriter gwr_pattern_fuse_gelu = {
    .name = "fuse_gelu",
    .root_ops = gelu_roots,
    .match_and_rewrite = fuse_gelu,
};

/* ---- fuse_clip_chains --------------------------------------------------------
 *
 * Chains of clamps become one layer, bit for bit (NaN and the sign of zero
 * included, as gwr's kernels compute them):
 *
 *   Relu(Relu(x))                 -> Relu(x)
 *   Clip(Relu(x), lo, hi)         -> Clip(x, lo, hi)          lo >= +0 (not -0.0)
 *   Clip(Clip(x, a, b), c, d)     -> Clip(x, max(a, c), min(b, d))
 *   Max(x, 0)                     -> Relu(x)                  x first, +0.0
 *   Min(Max(x, lo), hi)           -> Clip(x, lo, hi)          x first, the Max first
 *   Min(Relu(x), hi)              -> Clip(x, +0, hi)          the Relu first (Max(x, 0) turns into one first)
 *
 * Bounds are scalar constants of x's dtype, never NaN. Clip(Clip): each
 * present pair in order (a <= b, c <= d) and the intervals overlapping
 * (max(a, c) <= min(b, d)); an absent bound is no bound; no bound -0.0
 * there or in Clip(Relu) (Min(Max) may have one: Max, Min and Clip then
 * compare alike) (with only +0.0 zeros, a -0.0 input compares as +0.0 in both forms and
 * either passes through or becomes the same bound). Max(0, x) and
 * Min(hi, Max(lo, x)) stay: gwr's Max/Min return their first operand on
 * a tie, so Max(+0, -0.0) is +0.0 where Relu(-0.0) is -0.0. The Clip
 * forms need Clip's bounds as inputs: default opset 11 or more, or unset.
 * Standard ONNX ops only: every target. */

enum { CX, CA, CB, CC, CD, CNCAP };

static const gwr_match_node relu_relu[] = {GWR_M_OP("Relu", GWR_M_CAP(CX)), GWR_M_OP("Relu", GWR_M_NODE(0))};
static const gwr_match_node clip_relu[] = {
    GWR_M_OP("Relu", GWR_M_CAP(CX)), GWR_M_OP("Clip", GWR_M_NODE(0), GWR_M_CONST(CC), GWR_M_OPT_CAP(CD))};
static const gwr_match_node clip_clip[] = {
    GWR_M_OP("Clip", GWR_M_CAP(CX), GWR_M_OPT_CONST(CA), GWR_M_OPT_CONST(CB)),
    GWR_M_OP("Clip", GWR_M_NODE(0), GWR_M_OPT_CONST(CC), GWR_M_OPT_CONST(CD))};
static const gwr_match_node max_zero[] = {GWR_M_OP("Max", GWR_M_CAP(CX), GWR_M_CONST(CC))};
static const gwr_match_node min_relu[] = {GWR_M_OP("Relu", GWR_M_CAP(CX)), GWR_M_OP("Min", GWR_M_NODE(0), GWR_M_CONST(CB))};
static const gwr_match_node min_max[] = {GWR_M_OP("Max", GWR_M_CAP(CX), GWR_M_CONST(CA)),
                                         GWR_M_OP("Min", GWR_M_NODE(0), GWR_M_CONST(CB))};

enum { T_RELU_RELU, T_CLIP_RELU, T_CLIP_CLIP, T_MAX_ZERO, T_MIN_RELU, T_MIN_MAX };
static const gwr_match_pattern clip_tables[] = {
    {"clip_chains.relu_relu", GWR_M_NODES(relu_relu), NULL, NULL},
    {"clip_chains.clip_relu", GWR_M_NODES(clip_relu), NULL, NULL},
    {"clip_chains.clip_clip", GWR_M_NODES(clip_clip), NULL, NULL},
    {"clip_chains.max_zero", GWR_M_NODES(max_zero), NULL, NULL},
    {"clip_chains.min_relu", GWR_M_NODES(min_relu), NULL, NULL},
    {"clip_chains.min_max", GWR_M_NODES(min_max), NULL, NULL},
};
#define NCLIP ((int)(sizeof clip_tables / sizeof clip_tables[0]))

/* t is absent (*v = dflt), or a one-element constant of dtype, not NaN,
 * and not -0.0 unless negzero. */
static int bound_z(const gwr_tensor *t, gwr_dtype dtype, double dflt, double *v, int negzero) {
    *v = dflt;
    if (!t) return 1;
    if (!gwr_match_const_scalar(t, v) || gwr_tensor_dtype(t) != dtype) return 0;
    return !isnan(*v) && (negzero || !(*v == 0 && signbit(*v)));
}
static int bound(const gwr_tensor *t, gwr_dtype dtype, double dflt, double *v) { return bound_z(t, dtype, dflt, v, 0); }

/* Clip(Clip(x, a, b), c, d): the bounds of the one Clip, or 0. */
static int merge_clips(const gwr_match *m, gwr_dtype t, gwr_tensor **lo, gwr_tensor **hi) {
    double a, b, c, d;
    gwr_tensor *const *k = m->captures;
    if (!bound(k[CA], t, -INFINITY, &a) || !bound(k[CB], t, INFINITY, &b) || !bound(k[CC], t, -INFINITY, &c) ||
        !bound(k[CD], t, INFINITY, &d))
        return 0;
    if (a > b || c > d || fmax(a, c) > fmin(b, d)) return 0;
    *lo = !k[CC] || (k[CA] && a >= c) ? k[CA] : k[CC];
    *hi = !k[CD] || (k[CB] && b <= d) ? k[CB] : k[CD];
    return 1;
}

/* A rank-0 copy of one-element constant t (t itself when rank 0). */
static gwr_tensor *rank0(gwr_network *net, gwr_tensor *t) {
    gwr_match_const k;
    if (gwr_tensor_rank(t) == 0) return t;
    return gwr_match_const_get(t, &k) ? gwr_constant(net, k.dtype, 0, NULL, k.data) : NULL;
}

/* The replacement of table k's match; NULL with *why set when refused (nothing made), NULL with *why NULL
 * when building failed. */
static gwr_tensor *clip_of(gwr_network *net, int k, const gwr_match *m, const char **why) {
    gwr_tensor *x = m->captures[CX], *lo = NULL, *hi = NULL;
    gwr_dtype t = gwr_tensor_dtype(x);
    double v;
    *why = "a bound that is not a scalar constant of x's dtype, NaN, -0.0 or out of order";
    switch (k) {
    case T_CLIP_RELU:
        if (!bound(m->captures[CC], t, 0, &v) || v < 0) return NULL;
        *why = NULL;
        return gwr_clip(net, x, m->captures[CC], m->captures[CD]);
    case T_CLIP_CLIP:
        if (!merge_clips(m, t, &lo, &hi)) return NULL;
        *why = NULL;
        return gwr_clip(net, x, lo, hi);
    case T_MAX_ZERO:
        if (gwr_layer_input(m->layers[0], 0) != x) return *why = "Max(0, x) (ties differ from Relu's)", NULL;
        if (!bound(m->captures[CC], t, 0, &v) || v != 0) return *why = "not Max(x, +0.0)", NULL;
        *why = NULL;
        return gwr_relu(net, x);
    case T_MIN_RELU: { /* Max(x, 0) became a Relu before the Min saw it */
        static const unsigned char zero[8] = {0}; /* +0 in every float dtype */
        if (gwr_layer_input(m->layers[1], 0) != gwr_layer_output(m->layers[0], 0))
            return *why = "Min(hi, Relu(x)) (ties differ from Clip's)", NULL;
        if (!bound_z(m->captures[CB], t, 0, &v, 1)) return NULL;
        *why = NULL;
        lo = gwr_constant(net, t, 0, NULL, zero), hi = rank0(net, m->captures[CB]);
        return lo && hi ? gwr_clip(net, x, lo, hi) : NULL;
    }
    default: /* T_MIN_MAX */
        if (gwr_layer_input(m->layers[0], 0) != x || gwr_layer_input(m->layers[1], 0) != gwr_layer_output(m->layers[0], 0))
            return *why = "not Min(Max(x, lo), hi) in that operand order (ties differ from Clip's)", NULL;
        /* Max and Clip compare alike, so a -0.0 bound is fine here */
        if (!bound_z(m->captures[CA], t, 0, &v, 1) || !bound_z(m->captures[CB], t, 0, &v, 1)) return NULL;
        *why = NULL;
        lo = rank0(net, m->captures[CA]), hi = rank0(net, m->captures[CB]);
        return lo && hi ? gwr_clip(net, x, lo, hi) : NULL;
    }
}

static int fuse_clip_chain(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    if (*gwr_layer_domain(l) || gwr_layer_num_outputs(l) != 1) return gwr_rewrite_no_match(c, "not an ONNX layer");
    int64_t opset = gwr_network_opset(net, "");
    int clip_inputs = opset < 0 || opset >= 11;
    gwr_match m;
    int k = 0, rc = 0;
    for (; k < NCLIP && !rc; k++)
        if ((k == T_RELU_RELU || k == T_MAX_ZERO || clip_inputs) && (rc = gwr_match_layer(&clip_tables[k], l, &m)) < 0)
            return gwr_rewrite_fail(c, (gwr_status)-rc, "%s", gwr_last_errmsg());
    if (!rc) return gwr_rewrite_no_match(c, "no clamp chain%s", clip_inputs ? "" : " (Clip with inputs needs opset 11)");
    k--;
    gwr_tensor *x = m.captures[CX], *out = gwr_layer_output(l, 0);
    if (k == T_RELU_RELU) { /* the inner Relu stays and takes the outer's readers */
        gwr_tensor *inner = gwr_layer_output(m.layers[0], 0);
        gwr_status s = gwr_match_replace_layer(l, 1, &inner);
        return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
    }
    if (!same_type(x, out))
        return gwr_rewrite_no_match(c, "'%s' is not a float tensor of the result's shape", gwr_tensor_name(x));
    const char *why = NULL;
    gwr_tensor *y = clip_of(net, k, &m, &why);
    if (!y && why) return gwr_rewrite_no_match(c, "%s", why);
    if (!y) return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "%s", gwr_network_errmsg(net));
    gwr_status s = gwr_match_replace(&m, 1, &y);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}

static const char *const clip_roots[] = {"Relu", "Clip", "Max", "Min", NULL};

const gwr_pattern_rewriter gwr_pattern_fuse_clip_chains = {
    .name = "fuse_clip_chains",
    .root_ops = clip_roots,
    .match_and_rewrite = fuse_clip_chain,
};

/* ---- the pass table's rows (pass_table.h) ---- */
#include "passes/pass_table.h"

GWR_PASS(fuse_clip_chains, FUSE, .pattern = &gwr_pattern_fuse_clip_chains, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_EXACT,
         .summary = "merge Relu(Relu), Clip(Relu), Clip(Clip) into one; Max(x,0) into Relu, Min(Max(x,lo),hi) into "
                    "Clip");

GWR_PASS(fuse_hard_swish, FUSE, .pattern = &gwr_pattern_fuse_hard_swish, .level = GWR_LEVEL_EXTENDED,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-5,
         .summary = "turn x*Clip(x+3,0,6)/6 and x*HardSigmoid(x) into HardSwish (opset >= 14 or target gwr; else "
                    "x*HardSigmoid(x)), Clip(x+3,0,6)/6 into HardSigmoid");

GWR_PASS(fuse_gelu, FUSE, .pattern = &gwr_pattern_fuse_gelu, .level = GWR_LEVEL_EXTENDED,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_APPROX, .tolerance = 5e-5,
         .summary = "turn the erf and tanh GELU formulas into Gelu (opset >= 20, or any opset for target gwr)");
