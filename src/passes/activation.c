/* activation.c - fuse_clip_chains (fuse_hard_swish and fuse_gelu are rule
 * files: src/passes/rules/hard_swish.rules, gelu.rules). It stays
 * hand-written: its bounds need NaN and -0.0 tests on constants, operand
 * orders that matter (Max/Min ties) and Clip bounds rebuilt as rank-0 copies. */
#include <math.h>
#include <string.h>
#include "gwr/match.h"
#include "gwr/passes.h"
#include "passes/pass_util.h"
#include "util/util.h"

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
    int64_t opset = gwr_match_opset(l);
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
    if (!gwr_match_same_type(x, out))
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
#include "passes/rules_pass.h"

GWR_PASS(fuse_clip_chains, FUSE, .pattern = &gwr_pattern_fuse_clip_chains, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_EXACT,
         .summary = "merge Relu(Relu), Clip(Relu), Clip(Clip) into one; Max(x,0) into Relu, Min(Max(x,lo),hi) into "
                    "Clip");

GWR_PASS(fuse_hard_swish, FUSE, .pattern = &gwr_ps_pattern_fuse_hard_swish, .level = GWR_LEVEL_EXTENDED,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-5,
         .summary = "turn x*Clip(x+3,0,6)/6 and x*HardSigmoid(x) into HardSwish (opset >= 14 or target gwr; else "
                    "x*HardSigmoid(x)), Clip(x+3,0,6)/6 into HardSigmoid");

GWR_PASS(fuse_gelu, FUSE, .pattern = &gwr_ps_pattern_fuse_gelu, .level = GWR_LEVEL_EXTENDED,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_APPROX, .tolerance = 5e-5,
         .summary = "turn the erf and tanh GELU formulas into Gelu (opset >= 20, or any opset for target gwr)");
