/* eliminate.c - eliminate_noop_reshape (level basic, every target, exact):
 * layers whose output provably equals their input are removed and their
 * readers read that input. (eliminate_identity, eliminate_noop_arith and
 * compose_transposes are rule files: src/passes/rules/identity.rules,
 * noop_arith.rules, transposes.rules.) It stays hand-written: each op's
 * proof (Reshape's 0 and -1 entries, Slice's clamped ends, Pad's modes)
 * reads constant inputs per op, more than a where clause says.
 *
 *   eliminate_noop_reshape  Cast to its own dtype, Reshape/Expand to the same shape, an identity
 *                           Transpose, a Slice of everything, a Pad by zeros, a Tile by ones,
 *                           a one-input Concat, a one-output Split
 *
 * Every proof uses only what is known: constants read exactly (no
 * tolerance), shapes from known dims, and a dim that is not known makes a
 * pass refuse unless the proof holds for any extent (a broadcast by 1).
 *
 * The interface: replacing a network output by another tensor keeps the
 * output's name (gwr_tensor_replace_all_uses_with swaps the names, or puts
 * an Identity in between when the new tensor is a graph input, another
 * output or a tensor of an enclosing network). Every rewrite removes a
 * layer that is not an Identity, so the pass converges. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "gwr/match.h"
#include "gwr/passes.h"
#include "passes/pass_util.h"
#include "util/util.h"

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

/* Readers of l's first output read x instead; l removed. */
static int replace_by(gwr_rewrite_ctx *c, gwr_layer *l, gwr_tensor *x) {
    gwr_tensor *outs[2] = {x, NULL};
    if (!can_replace(c, l, x)) return 0;
    int n = gwr_layer_num_outputs(l);
    gwr_status s = gwr_match_replace_layer(l, n, outs);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}

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
    return x ? replace_by(c, l, x) : gwr_rewrite_no_match(c, "%s", why);
}

static const char *const reshape_ops[] = {"Cast", "CastLike", "Reshape", "Expand", "Transpose",
                                          "Slice", "Pad", "Tile", "Concat", "Split", NULL};

const gwr_pattern_rewriter gwr_pattern_eliminate_noop_reshape = {
    .name = "eliminate_noop_reshape",
    .root_ops = reshape_ops,
    .match_and_rewrite = eliminate_noop_reshape,
};



/* ---- the pass table's rows (pass_table.h) ---- */
#include "passes/pass_table.h"
#include "passes/rules_pass.h"

GWR_PASS(eliminate_identity, CLEANUP, .pattern = &gwr_ps_pattern_eliminate_identity, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_EXACT,
         .summary = "remove Identity and inference-mode Dropout (mask unread): readers read the input");

GWR_PASS(eliminate_noop_reshape, CLEANUP, .pattern = &gwr_pattern_eliminate_noop_reshape, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_EXACT,
         .summary = "remove Cast to its own dtype, Reshape/Expand to the same known shape, identity Transpose, full "
                    "Slice, zero Pad, Tile by ones, one-part Concat/Split");

GWR_PASS(compose_transposes, CLEANUP, .pattern = &gwr_ps_pattern_compose_transposes, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_EXACT,
         .summary = "merge Transpose(Transpose(x)) into one Transpose, or none when the perms cancel");

/* in fold: its 0s and 1s are often what a fold computed */
GWR_PASS(eliminate_noop_arith, FOLD, .pattern = &gwr_ps_pattern_eliminate_noop_arith, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_EXACT,
         .summary = "remove x+0, x-0, x*1, x/1 (exact splat constant, x's dtype and shape kept)");
