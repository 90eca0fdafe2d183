/* eliminate.c - the optimizer's elimination passes (level basic, every
 * target, exact): layers whose output provably equals one of their inputs
 * are removed and their readers read that input, and two Transposes in a
 * row become one (or none).
 *
 *   eliminate_identity      Identity; Dropout in inference form
 *   eliminate_noop_arith    x+0, 0+x, x-0, x*1, 1*x, x/1 with an exact splat that keeps x's shape
 *   eliminate_noop_reshape  Cast to its own dtype, Reshape/Expand to the same shape, an identity
 *                           Transpose, a Slice of everything, a Pad by zeros, a Tile by ones,
 *                           a one-input Concat, a one-output Split
 *   compose_transposes      Transpose(Transpose(x, p1), p2) -> Transpose(x, p1[p2]) or x
 *
 * Every proof uses only what is known: constants read exactly (no
 * tolerance), shapes from known dims, and a dim that is not known makes a
 * pass refuse unless the proof holds for any extent (a broadcast by 1).
 *
 * The interface: replacing a network output by another tensor keeps the
 * output's name (gwr_tensor_replace_all_uses_with swaps the names, or puts
 * an Identity in between when the new tensor is a graph input, another
 * output or a tensor of an enclosing network). An Identity in exactly that
 * position is therefore left alone, or the pass would replace it by a new
 * Identity forever. Every other rewrite removes at least one layer that
 * is not an Identity (or, for compose_transposes, turns two layers into at
 * most one), so the passes converge. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "gwr/match.h"
#include "gwr/passes.h"
#include "passes/pass_util.h"
#include "util/util.h"

enum { X, K, T, NCAP };

/* Why the matcher refused, for listeners and the trace. */
static int refused(gwr_rewrite_ctx *c, const gwr_match *m) {
    return gwr_rewrite_no_match(c, "node %d: %s", m->why_node, m->why ? m->why : "no match");
}

/* Would replacing o (an output of l) by x need the IR to insert an
 * Identity to carry o's name? */
static int needs_carrier(const gwr_layer *l, const gwr_tensor *o, const gwr_tensor *x) {
    return gwr_tensor_output_index(o) >= 0 &&
           (gwr_tensor_is_input(x) || gwr_tensor_output_index(x) >= 0 || gwr_tensor_network(x) != gwr_layer_network(l));
}

/* Is an output other than the first read or a network output? */
static int extra_outputs_used(const gwr_layer *l) {
    for (int o = 1; o < gwr_layer_num_outputs(l); o++) {
        gwr_tensor *t = gwr_layer_output(l, o);
        if (gwr_tensor_num_live_users(t) || gwr_tensor_output_index(t) >= 0) return 1;
    }
    return 0;
}

/* Can x stand for l's first output? 1, or 0 through gwr_rewrite_no_match:
 * checked before anything changes, so that a mismatch (a model whose
 * declared types disagree) refuses instead of failing the run. */
static int can_replace(gwr_rewrite_ctx *c, gwr_layer *l, const gwr_tensor *x) {
    gwr_tensor *o = gwr_layer_output(l, 0);
    gwr_dtype a = gwr_tensor_dtype(o), b = gwr_tensor_dtype(x);
    if (a != GWR_UNDEFINED && b != GWR_UNDEFINED && a != b)
        return gwr_rewrite_no_match(c, "'%s' is %s, '%s' is %s", gwr_tensor_name(o), gwr_dtype_name(a),
                                    gwr_tensor_name(x), gwr_dtype_name(b));
    if (gwr_tensor_kind(o) != gwr_tensor_kind(x)) return gwr_rewrite_no_match(c, "the value kinds differ");
    if (gwr_layer_num_outputs(l) > 2 || extra_outputs_used(l)) return gwr_rewrite_no_match(c, "another output is read");
    return 1;
}

/* Readers of l's first output read x instead; l (and, with a match, the
 * other matched layers) removed. */
static int replace_by(gwr_rewrite_ctx *c, gwr_layer *l, const gwr_match *m, gwr_tensor *x) {
    gwr_tensor *outs[2] = {x, NULL};
    if (!can_replace(c, l, x)) return 0;
    int n = gwr_layer_num_outputs(l);
    gwr_status s = m ? gwr_match_replace(m, n, outs) : gwr_match_replace_layer(l, n, outs);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}

/* The default-domain opset of l's outermost network (0 when none). */
static int64_t opset_of(const gwr_layer *l) {
    const gwr_network *n = gwr_layer_network(l);
    while (gwr_network_parent(n)) n = gwr_network_parent(n);
    int64_t v = gwr_network_opset(n, "");
    return v < 0 ? 0 : v;
}

/* ---- eliminate_identity ----------------------------------------------------- */

/* Dropout computes its input when not training: opset 12's training_mode
 * input absent or a constant false, and before opset 7 is_test set (its
 * default, 0, meant training). Its mask output must be unread. */
static int dropout_inference(const gwr_match *m, int node, void *user) {
    (void)user;
    gwr_layer *l = m->layers[node];
    int64_t opset = opset_of(l), is_test = 0;
    if (opset && opset < 7 && (gwr_layer_attr_int(l, "is_test", 0, &is_test) || !is_test)) return 0;
    if (opset && opset < 12 && gwr_layer_num_inputs(l) > 1) return 0;
    if (m->captures[T] && !gwr_match_const_is_splat(m->captures[T], 0, 0)) return 0;
    return !extra_outputs_used(l);
}

static const gwr_match_node identity_nodes[] = {GWR_M_OP("Identity", GWR_M_CAP(X))};
static const gwr_match_node dropout_nodes[] = {
    {.op = "Dropout", .in = {GWR_M_CAP(X), GWR_M_OPT_CAP(-1), GWR_M_OPT_CONST(T)}, .pred = dropout_inference},
};

static int to_input(gwr_rewrite_ctx *c, const gwr_match *m) {
    gwr_layer *l = m->layers[m->nlayers - 1];
    gwr_tensor *o = gwr_layer_output(l, 0), *x = m->captures[X];
    if (gwr_layer_op_id(l) == GWR_OP_Identity && needs_carrier(l, o, x))
        return gwr_rewrite_no_match(c, "the Identity carries output '%s' of '%s'", gwr_tensor_name(o),
                                    gwr_tensor_name(x));
    return replace_by(c, l, m, x);
}

static const gwr_match_pattern identity_p = {"eliminate_identity", GWR_M_NODES(identity_nodes), to_input, NULL};
static const gwr_match_pattern dropout_p = {"eliminate_dropout", GWR_M_NODES(dropout_nodes), to_input, NULL};

static int eliminate_identity(gwr_rewrite_ctx *c, gwr_layer *l) {
    const gwr_match_pattern *p = gwr_layer_op_id(l) == GWR_OP_Identity ? &identity_p : &dropout_p;
    gwr_match m;
    int r = gwr_match_layer(p, l, &m);
    if (r < 0) return gwr_rewrite_fail(c, (gwr_status)-r, "%s", gwr_last_errmsg());
    return r ? p->rewrite(c, &m) : refused(c, &m);
}

static const char *const identity_ops[] = {"Identity", "Dropout", NULL};

const gwr_pattern_rewriter gwr_pattern_eliminate_identity = {
    .name = "eliminate_identity",
    .root_ops = identity_ops,
    .match_and_rewrite = eliminate_identity,
};

/* ---- eliminate_noop_arith --------------------------------------------------- */

/* Does x op k have exactly x's dtype and shape? k's dims, right-aligned,
 * must each be 1 or x's known extent, and k no longer than x's rank. */
static int keeps_x(const gwr_tensor *x, const gwr_tensor *k, const gwr_tensor *y) {
    gwr_dtype dt = gwr_tensor_dtype(x), dy = gwr_tensor_dtype(y);
    gwr_match_const c;
    if (!(gwr_dtype_is_float(dt) || gwr_dtype_is_int(dt)) || gwr_tensor_dtype(k) != dt) return 0;
    if ((dy != GWR_UNDEFINED && dy != dt) || !gwr_match_const_get(k, &c)) return 0;
    int r = gwr_tensor_rank(x);
    if (r < 0 || c.rank > r) return 0;
    for (int d = 0; d < c.rank; d++) {
        gwr_dim xd = gwr_tensor_dim(x, r - c.rank + d);
        if (c.dims[d] != 1 && !(GWR_DIM_IS_KNOWN(xd) && xd == c.dims[d])) return 0;
    }
    return 1;
}

/* user: the neutral value (0 or 1), compared exactly. */
static int neutral(const gwr_match *m, int node, void *user) {
    const gwr_tensor *y = gwr_layer_output(m->layers[node], 0);
    return gwr_match_const_is_splat(m->captures[K], *(const double *)user, 0) &&
           keeps_x(m->captures[X], m->captures[K], y);
}

static int to_x(gwr_rewrite_ctx *c, const gwr_match *m) {
    return replace_by(c, m->layers[m->nlayers - 1], m, m->captures[X]);
}

static double zero = 0, one = 1;
#define NOOP_TABLE(var, name) \
    static const gwr_match_node var##_nodes[] = {{.op = name, .in = {GWR_M_CAP(X), GWR_M_CONST(K)}, .pred = neutral}}
NOOP_TABLE(add, "Add");
NOOP_TABLE(sub, "Sub");
NOOP_TABLE(mul, "Mul");
NOOP_TABLE(div, "Div");
/* Add and Mul are commutative: the matcher tries 0 + x and 1 * x too. */
static const gwr_match_pattern arith_p[] = {
    {"x+0", GWR_M_NODES(add_nodes), to_x, &zero},
    {"x-0", GWR_M_NODES(sub_nodes), to_x, &zero},
    {"x*1", GWR_M_NODES(mul_nodes), to_x, &one},
    {"x/1", GWR_M_NODES(div_nodes), to_x, &one},
};

static int eliminate_noop_arith(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_op_id id = gwr_layer_op_id(l);
    const gwr_match_pattern *p = id == GWR_OP_Add ? &arith_p[0] : id == GWR_OP_Sub ? &arith_p[1]
                                 : id == GWR_OP_Mul ? &arith_p[2] : &arith_p[3];
    gwr_match m;
    int r = gwr_match_layer(p, l, &m);
    if (r < 0) return gwr_rewrite_fail(c, (gwr_status)-r, "%s", gwr_last_errmsg());
    return r ? p->rewrite(c, &m) : refused(c, &m);
}

static const char *const arith_ops[] = {"Add", "Sub", "Mul", "Div", NULL};

const gwr_pattern_rewriter gwr_pattern_eliminate_noop_arith = {
    .name = "eliminate_noop_arith",
    .root_ops = arith_ops,
    .match_and_rewrite = eliminate_noop_arith,
};

/* ---- eliminate_noop_reshape ------------------------------------------------- */
/* One layer each: a check on the layer returns the input its output
 * equals, or NULL with the reason in *why. */

static gwr_tensor *noop_cast(gwr_layer *l, const char **why) {
    gwr_tensor *x = gwr_layer_input(l, 0);
    gwr_dtype dt = gwr_tensor_dtype(x), to = GWR_UNDEFINED;
    int64_t v;
    if (gwr_layer_op_id(l) == GWR_OP_Cast) to = gwr_layer_get_int(l, "to", &v) ? GWR_UNDEFINED : (gwr_dtype)v;
    else if (gwr_layer_num_inputs(l) == 2 && gwr_layer_input(l, 1)) to = gwr_tensor_dtype(gwr_layer_input(l, 1));
    if (dt == GWR_UNDEFINED || to != dt) return *why = "casts to another (or an unknown) dtype", NULL;
    return x;
}

/* Reshape to x's own shape: each entry x's known extent, a 0 that copies
 * it (allowzero unset), or one -1 when every other extent is known and
 * positive (so the -1 can only be x's). */
static gwr_tensor *noop_reshape_op(gwr_layer *l, const char **why) {
    gwr_tensor *x = gwr_layer_input(l, 0);
    int64_t v[GWR_MAX_RANK];
    int r = gwr_tensor_rank(x), n = gwr_match_const_ints(gwr_layer_input(l, 1), v, GWR_MAX_RANK), minus = -1, positive = 1;
    int64_t allowzero = 0;
    gwr_layer_attr_int(l, "allowzero", 0, &allowzero);
    if (r < 0 || n != r) return *why = "the shape is not a constant of x's rank", NULL;
    for (int i = 0; i < r; i++) {
        gwr_dim xd = gwr_tensor_dim(x, i);
        if (v[i] == -1 && minus < 0) {
            minus = i;
            continue;
        }
        if (!(v[i] == 0 && !allowzero) && !(GWR_DIM_IS_KNOWN(xd) && v[i] == xd))
            return *why = "the shape differs from x's known shape", NULL;
        positive &= GWR_DIM_IS_KNOWN(xd) && xd > 0;
    }
    if (minus >= 0 && !positive) return *why = "a -1 beside an unknown or zero extent", NULL;
    return x;
}

/* Expand by a shape that broadcasts to x's own: no longer than x's rank,
 * each entry 1 or x's known extent. */
static gwr_tensor *noop_expand(gwr_layer *l, const char **why) {
    gwr_tensor *x = gwr_layer_input(l, 0);
    int64_t v[GWR_MAX_RANK];
    int r = gwr_tensor_rank(x), n = gwr_match_const_ints(gwr_layer_input(l, 1), v, GWR_MAX_RANK);
    if (r < 0 || n < 0 || n > r) return *why = "the shape is not a constant within x's rank", NULL;
    for (int i = 0; i < n; i++) {
        gwr_dim xd = gwr_tensor_dim(x, r - n + i);
        if (v[i] != 1 && !(GWR_DIM_IS_KNOWN(xd) && v[i] == xd)) return *why = "the expansion grows x", NULL;
    }
    return x;
}

static gwr_tensor *noop_transpose(gwr_layer *l, const char **why) {
    gwr_tensor *x = gwr_layer_input(l, 0);
    const int64_t *p;
    int64_t n;
    int r = gwr_tensor_rank(x);
    if (gwr_layer_get_ints(l, "perm", &p, &n)) /* the default reverses the axes */
        return r >= 0 && r <= 1 ? x : (*why = "the default perm of rank > 1 (or unknown)", NULL);
    if (r >= 0 && n != r) return *why = "a perm of another rank", NULL;
    for (int64_t i = 0; i < n; i++)
        if (p[i] != i) return *why = "not the identity perm", NULL;
    return x;
}

/* Slice of everything: every sliced axis starts at 0 with step 1 and ends
 * at or past its extent (past 2^62 when the extent is unknown). Opset 10's
 * inputs or opset 1's attributes. */
static gwr_tensor *noop_slice(gwr_layer *l, const char **why) {
    gwr_tensor *x = gwr_layer_input(l, 0);
    int64_t st[GWR_MAX_RANK], en[GWR_MAX_RANK], ax[GWR_MAX_RANK], sp[GWR_MAX_RANK];
    int r = gwr_tensor_rank(x), nin = gwr_layer_num_inputs(l), n, na = -1, ns = -1;
    if (nin == 1) {
        const int64_t *a[3];
        int64_t k[3] = {0, -1, -1};
        if (gwr_layer_get_ints(l, "starts", &a[0], &k[0]) || gwr_layer_get_ints(l, "ends", &a[1], &k[1]) ||
            k[0] != k[1] || k[0] > GWR_MAX_RANK || (!gwr_layer_get_ints(l, "axes", &a[2], &k[2]) && k[2] != k[0]))
            return *why = "malformed attributes", NULL;
        for (int64_t i = 0; i < k[0]; i++) st[i] = a[0][i], en[i] = a[1][i];
        for (int64_t i = 0; i < k[2]; i++) ax[i] = a[2][i];
        n = (int)k[0], na = (int)k[2];
    } else {
        n = gwr_match_const_ints(gwr_layer_input(l, 1), st, GWR_MAX_RANK);
        if (n < 0 || gwr_match_const_ints(nin > 2 ? gwr_layer_input(l, 2) : NULL, en, GWR_MAX_RANK) != n)
            return *why = "starts and ends are not constants", NULL;
        if (nin > 3 && gwr_layer_input(l, 3) && (na = gwr_match_const_ints(gwr_layer_input(l, 3), ax, GWR_MAX_RANK)) != n)
            return *why = "the axes are not a constant", NULL;
        if (nin > 4 && gwr_layer_input(l, 4) && (ns = gwr_match_const_ints(gwr_layer_input(l, 4), sp, GWR_MAX_RANK)) != n)
            return *why = "the steps are not a constant", NULL;
    }
    if (r < 0) return *why = "x's rank is unknown", NULL;
    for (int i = 0; i < n; i++) {
        int64_t a = na >= 0 ? ax[i] : i;
        if (a < 0) a += r;
        if (a < 0 || a >= r) return *why = "an axis out of range", NULL;
        gwr_dim d = gwr_tensor_dim(x, (int)a);
        if (st[i] != 0 || (ns >= 0 && sp[i] != 1)) return *why = "a start other than 0 or a step other than 1", NULL;
        if (GWR_DIM_IS_KNOWN(d) ? en[i] < d : en[i] < ((int64_t)1 << 62)) return *why = "an end before the extent", NULL;
    }
    return x;
}

/* Pad by zeros in every mode (nothing is added, whatever the mode). */
static gwr_tensor *noop_pad(gwr_layer *l, const char **why) {
    int64_t v[2 * GWR_MAX_RANK];
    const int64_t *p;
    int64_t np;
    int n = -1;
    if (gwr_layer_num_inputs(l) == 1) {
        if (!gwr_layer_get_ints(l, "pads", &p, &np) && np <= 2 * GWR_MAX_RANK)
            for (n = 0; n < np; n++) v[n] = p[n];
    } else {
        n = gwr_match_const_ints(gwr_layer_input(l, 1), v, 2 * GWR_MAX_RANK);
    }
    if (n < 0) return *why = "the pads are not a constant", NULL;
    for (int i = 0; i < n; i++)
        if (v[i] != 0) return *why = "a pad other than 0", NULL;
    return gwr_layer_input(l, 0);
}

static gwr_tensor *noop_tile(gwr_layer *l, const char **why) {
    int64_t v[GWR_MAX_RANK];
    int n = gwr_match_const_ints(gwr_layer_input(l, 1), v, GWR_MAX_RANK);
    if (n < 0) return *why = "the repeats are not a constant", NULL;
    for (int i = 0; i < n; i++)
        if (v[i] != 1) return *why = "a repeat other than 1", NULL;
    return gwr_layer_input(l, 0);
}

static gwr_tensor *noop_concat_split(gwr_layer *l, const char **why) {
    if (gwr_layer_op_id(l) == GWR_OP_Concat ? gwr_layer_num_inputs(l) != 1 : gwr_layer_num_outputs(l) != 1)
        return *why = "more than one part", NULL;
    return gwr_layer_input(l, 0);
}

static int eliminate_noop_reshape(gwr_rewrite_ctx *c, gwr_layer *l) {
    const char *why = "not an elimination candidate";
    gwr_tensor *x = NULL;
    if (gwr_layer_num_inputs(l) < 1 || !gwr_layer_input(l, 0)) return gwr_rewrite_no_match(c, "no input");
    switch (gwr_layer_op_id(l)) {
    case GWR_OP_Cast:
    case GWR_OP_CastLike: x = noop_cast(l, &why); break;
    case GWR_OP_Reshape: x = noop_reshape_op(l, &why); break;
    case GWR_OP_Expand: x = noop_expand(l, &why); break;
    case GWR_OP_Transpose: x = noop_transpose(l, &why); break;
    case GWR_OP_Slice: x = noop_slice(l, &why); break;
    case GWR_OP_Pad: x = noop_pad(l, &why); break;
    case GWR_OP_Tile: x = noop_tile(l, &why); break;
    case GWR_OP_Concat:
    case GWR_OP_Split: x = noop_concat_split(l, &why); break;
    default: break;
    }
    return x ? replace_by(c, l, NULL, x) : gwr_rewrite_no_match(c, "%s", why);
}

static const char *const reshape_ops[] = {"Cast", "CastLike", "Reshape", "Expand", "Transpose",
                                          "Slice", "Pad", "Tile", "Concat", "Split", NULL};

const gwr_pattern_rewriter gwr_pattern_eliminate_noop_reshape = {
    .name = "eliminate_noop_reshape",
    .root_ops = reshape_ops,
    .match_and_rewrite = eliminate_noop_reshape,
};

/* ---- compose_transposes ----------------------------------------------------- */

static const gwr_match_node tt_nodes[] = {
    GWR_M_OP("Transpose", GWR_M_CAP(X)),
    GWR_M_OP("Transpose", GWR_M_NODE(0)),
};

/* out[j] = mid[p2[j]] = x[p1[p2[j]]]. */
static int compose(gwr_rewrite_ctx *c, const gwr_match *m) {
    gwr_tensor *x = m->captures[X];
    int64_t p1[GWR_MAX_RANK], p2[GWR_MAX_RANK], q[GWR_MAX_RANK];
    int n1 = gwr_ps_transpose_perm(m->layers[0], gwr_tensor_rank(x), p1);
    int n2 = gwr_ps_transpose_perm(m->layers[1], gwr_tensor_rank(gwr_layer_output(m->layers[0], 0)), p2), ident = 1;
    if (n1 < 0 || n2 != n1) return gwr_rewrite_no_match(c, "the perms are unknown or of different ranks");
    for (int j = 0; j < n1; j++) ident &= (q[j] = p1[p2[j]]) == j;
    if (!can_replace(c, m->layers[1], x)) return 0; /* the new Transpose would have x's dtype */
    if (ident) return replace_by(c, m->layers[1], m, x);
    gwr_network *net = gwr_rewrite_ctx_network(c);
    gwr_tensor *y = gwr_transpose(net, x, n1, q);
    if (!y) return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "composing the perms: %s", gwr_network_errmsg(net));
    return replace_by(c, m->layers[1], m, y);
}

static const gwr_match_pattern tt_p = {"compose_transposes", GWR_M_NODES(tt_nodes), compose, NULL};

static int compose_transposes(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_match m;
    int r = gwr_match_layer(&tt_p, l, &m);
    if (r < 0) return gwr_rewrite_fail(c, (gwr_status)-r, "%s", gwr_last_errmsg());
    return r ? compose(c, &m) : refused(c, &m);
}

static const char *const transpose_ops[] = {"Transpose", NULL};

const gwr_pattern_rewriter gwr_pattern_compose_transposes = {
    .name = "compose_transposes",
    .root_ops = transpose_ops,
    .match_and_rewrite = compose_transposes,
};

/* ---- the pass table's rows (pass_table.h) ---- */
#include "passes/pass_table.h"

GWR_PASS(eliminate_identity, CLEANUP, .pattern = &gwr_pattern_eliminate_identity, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_EXACT,
         .summary = "remove Identity and inference-mode Dropout (mask unread): readers read the input");

GWR_PASS(eliminate_noop_reshape, CLEANUP, .pattern = &gwr_pattern_eliminate_noop_reshape, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_EXACT,
         .summary = "remove Cast to its own dtype, Reshape/Expand to the same known shape, identity Transpose, full "
                    "Slice, zero Pad, Tile by ones, one-part Concat/Split");

GWR_PASS(compose_transposes, CLEANUP, .pattern = &gwr_pattern_compose_transposes, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_EXACT,
         .summary = "merge Transpose(Transpose(x)) into one Transpose, or none when the perms cancel");

/* in fold: its 0s and 1s are often what a fold computed */
GWR_PASS(eliminate_noop_arith, FOLD, .pattern = &gwr_pattern_eliminate_noop_arith, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_EXACT,
         .summary = "remove x+0, x-0, x*1, x/1 (exact splat constant, x's dtype and shape kept)");
