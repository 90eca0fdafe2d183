/* fold_positions.c - the decoders' position-id and mask-construction subgraphs made smaller where
 * the dims stay symbolic (with the dims bound, fold_shape_dims and fold_constants fold them whole).
 *
 *   fold_where_nonneg   Where(Equal(k, c), a, k), k 1-D (a Concat of pieces, or one piece), c and a
 *                       constants -> k with each piece either kept, where it is provably
 *                       non-negative (dims: Shape, Size, and Gather, Slice, Concat, Unsqueeze,
 *                       Squeeze, Reshape, Cast to int64, Add, Mul, Max, Min of them, constants
 *                       >= 0) and c < 0 over it, or a constant with the Where computed on it: the
 *                       exporters' guard of an Expand's target shape against -1 (torch's
 *                       expand(B, -1, 1)), which leaves the Expand's result of unknown dims; without
 *                       it the Expand's result has the shape's symbols, which the passes after it
 *                       can prove things with.
 *   fold_range_length   Shape(Range(a, a + n, 1)) -> Unsqueeze(n, [0]), Gather(that Shape, 0) -> n, with n a
 *                       scalar provably >= 0 (a dim): the exporters' length of the cache positions
 *                       past .. past + S is S; Gather(Unsqueeze(n, [0]), 0) -> n for any scalar n.
 *   fold_rotary_freqs   Transpose(MatMul(Expand(c, s) or c, p), [0, 2, 1]) -> Mul(Transpose(p, [0, 2, 1]), c')
 *                       with c a constant (1, H, 1) or (H, 1) (Hugging Face's inv_freq), p (B, 1, S)
 *                       (the positions), the Expand only repeating c over p's batch: the outer
 *                       product of a MatMul with K = 1 as a broadcast Mul by c' = c as (1, 1, H),
 *                       which is the same single rounding (exact). The rotary embedding's
 *                       frequencies, F (B, S, H), that fuse_rotary's caches are computed from.
 *
 * Not a rule file: non-negativity is a walk over the shape computation, and the Expand's target
 * is checked against p's batch dim. */
#include <string.h>

#include "gwr/match.h"
#include "gwr/passes.h"
#include "passes/pass_util.h"
#include "util/util.h"

/* ---- fold_where_nonneg ------------------------------------------------------------ */

/* Is every element of integer tensor t provably >= 0? (a walk up at most depth layers) */
static int nonneg(const gwr_tensor *t, int depth) {
    gwr_layer *l = t ? gwr_tensor_parent(t) : NULL;
    if (!l || depth > 12 || gwr_layer_is_removed(l)) return 0;
    gwr_match_const k;
    if (gwr_match_const_get(t, &k)) {
        if (k.numel > 64) return 0;
        double v[64];
        if (gwr_match_const_f64(t, v, 64, NULL, NULL, NULL)) return 0;
        for (int64_t i = 0; i < k.numel; i++)
            if (!(v[i] >= 0)) return 0;
        return 1;
    }
    if (*gwr_layer_domain(l)) return 0;
    const char *op = gwr_layer_op(l);
    if (!strcmp(op, "Shape") || !strcmp(op, "Size")) return 1;
    if (!strcmp(op, "Gather") || !strcmp(op, "Slice") || !strcmp(op, "Unsqueeze") || !strcmp(op, "Squeeze") ||
        !strcmp(op, "Reshape") || !strcmp(op, "Identity"))
        return nonneg(gwr_layer_input(l, 0), depth + 1);
    if (!strcmp(op, "Cast")) {
        int64_t to = 0;
        return !gwr_layer_attr_int(l, "to", 0, &to) && to == GWR_INT64 && nonneg(gwr_layer_input(l, 0), depth + 1);
    }
    if (!strcmp(op, "Concat") || !strcmp(op, "Add") || !strcmp(op, "Mul") || !strcmp(op, "Max") || !strcmp(op, "Min")) {
        for (int i = 0; i < gwr_layer_num_inputs(l); i++)
            if (!nonneg(gwr_layer_input(l, i), depth + 1)) return 0;
        return gwr_layer_num_inputs(l) > 0;
    }
    return 0;
}

/* The values of constant t broadcast to n elements (t has 1 or n); 0 when not. */
static int const_n(const gwr_tensor *t, int64_t n, double *v) {
    gwr_match_const k;
    int64_t m = 0;
    if (!gwr_match_const_get(t, &k) || (k.numel != 1 && k.numel != n) || k.numel > 64 || gwr_match_const_f64(t, v, 64, &m, NULL, NULL))
        return 0;
    for (int64_t i = m; i < n; i++) v[i] = v[0];
    return 1;
}

/* Where(Equal(k, c), a, k) with k 1-D of n <= 64 elements: its value as k's
 * own pieces: every piece of k (k itself, or the inputs of a Concat making it)
 * is either provably non-negative where c < 0 (Equal false: the piece stays)
 * or a constant (the Where computed on it). The result, or NULL. */
static gwr_tensor *where_pieces(gwr_network *net, gwr_tensor *k, const gwr_tensor *ct, const gwr_tensor *at, int *err) {
    int64_t n = gwr_tensor_rank(k) == 1 ? gwr_tensor_dim(k, 0) : -1;
    double cv[64], av[64];
    if (n < 1 || n > 64 || !const_n(ct, n, cv) || !const_n(at, n, av)) return NULL;
    gwr_layer *cat = gwr_tensor_parent(k);
    int64_t axis = 0;
    int np = 1, changed = 0;
    if (gwr_match_is_op(cat, "Concat") && !gwr_layer_attr_int(cat, "axis", 0, &axis) && (axis == 0 || axis == -1))
        np = gwr_layer_num_inputs(cat);
    else
        cat = NULL;
    if (np > 16) return NULL;
    gwr_tensor *parts[16];
    int64_t off = 0;
    for (int i = 0; i < np; i++) {
        gwr_tensor *pt = cat ? gwr_layer_input(cat, i) : k;
        int64_t len = gwr_tensor_rank(pt) == 1 ? gwr_tensor_dim(pt, 0) : -1;
        if (len < 0 || off + len > n) return NULL;
        double kv[64];
        int neg = 1;
        for (int64_t j = 0; j < len; j++) neg = neg && cv[off + j] < 0;
        if (neg && nonneg(pt, 0)) {
            parts[i] = pt;
        } else if (len && const_n(pt, len, kv)) {
            int diff = 0;
            for (int64_t j = 0; j < len; j++)
                if (kv[j] == cv[off + j]) kv[j] = av[off + j], diff = 1;
            parts[i] = diff ? gwr_ps_const_new(net, gwr_tensor_dtype(k), 1, &len, kv, 0) : pt;
            if (!parts[i]) return *err = 1, NULL;
            changed |= diff;
        } else {
            return NULL;
        }
        off += len;
    }
    if (off != n) return NULL;
    if (!cat) return parts[0]; /* k itself, or the constant computed */
    if (!changed) return k;
    gwr_tensor *y = gwr_concat(net, np, parts, 0);
    if (!y) *err = 1;
    return y;
}

static int fold_where_nonneg(gwr_rewrite_ctx *c, gwr_layer *l) {
    if (*gwr_layer_domain(l) || gwr_layer_num_inputs(l) != 3) return gwr_rewrite_no_match(c, "not an ONNX Where");
    gwr_layer *eq = gwr_tensor_parent(gwr_layer_input(l, 0));
    gwr_tensor *k = gwr_layer_input(l, 2), *y = gwr_layer_output(l, 0);
    if (!gwr_match_is_op(eq, "Equal")) return gwr_rewrite_no_match(c, "the condition is not an Equal");
    gwr_tensor *e0 = gwr_layer_input(eq, 0), *e1 = gwr_layer_input(eq, 1);
    if (e0 != k && e1 != k) return gwr_rewrite_no_match(c, "not Where(Equal(k, c), a, k)");
    gwr_dtype dt = gwr_tensor_dtype(k);
    int r = gwr_tensor_rank(k);
    if ((dt != GWR_INT64 && dt != GWR_INT32) || gwr_tensor_dtype(y) != dt || r != 1 || gwr_tensor_rank(y) != 1 ||
        gwr_tensor_dim(y, 0) != gwr_tensor_dim(k, 0))
        return gwr_rewrite_no_match(c, "k is not a 1-D integer tensor of the result's shape");
    int err = 0;
    gwr_tensor *v = where_pieces(gwr_rewrite_ctx_network(c), k, e0 == k ? e1 : e0, gwr_layer_input(l, 1), &err);
    if (err) return gwr_rewrite_fail(c, GWR_ERR_NOMEM, "fold_where_nonneg: %s", gwr_network_errmsg(gwr_rewrite_ctx_network(c)));
    if (!v) return gwr_rewrite_no_match(c, "a piece of k is neither a constant nor provably >= 0 where c < 0");
    gwr_status st = gwr_match_replace_layer(l, 1, &v);
    return st ? gwr_rewrite_fail(c, st, "%s", gwr_last_errmsg()) : 1;
}

static const char *const where_roots[] = {"Where", NULL};

static const gwr_pattern_rewriter gwr_pattern_fold_where_nonneg = {
    .name = "fold_where_nonneg",
    .root_ops = where_roots,
    .match_and_rewrite = fold_where_nonneg,
};

/* ---- fold_range_length ------------------------------------------------------------ */

/* The range's length n when Shape layer l is Shape(Range(a, a + n, 1)) of
 * integers with n a scalar provably >= 0; else NULL and why in *why. */
static gwr_tensor *range_length(gwr_layer *l, const char **why) {
    if (!gwr_match_is_op(l, "Shape") || gwr_layer_num_inputs(l) != 1 || gwr_layer_find_attr(l, "start") >= 0 ||
        gwr_layer_find_attr(l, "end") >= 0)
        return *why = "not a whole ONNX Shape", NULL;
    gwr_layer *rg = gwr_tensor_parent(gwr_layer_input(l, 0));
    if (!gwr_match_is_op(rg, "Range") || gwr_layer_num_inputs(rg) != 3) return *why = "not the Shape of a Range", NULL;
    gwr_tensor *a = gwr_layer_input(rg, 0), *lim = gwr_layer_input(rg, 1), *n = NULL;
    double delta;
    gwr_dtype dt = gwr_tensor_dtype(a);
    if ((dt != GWR_INT64 && dt != GWR_INT32) || !gwr_match_const_scalar(gwr_layer_input(rg, 2), &delta) || delta != 1)
        return *why = "not an integer Range of step 1", NULL;
    gwr_layer *add = gwr_tensor_parent(lim);
    for (int i = 0; gwr_match_is_op(add, "Add") && !n && i < 2; i++)
        if (gwr_layer_input(add, i) == a) n = gwr_layer_input(add, 1 - i);
    if (!n || gwr_tensor_rank(n) != 0 || gwr_tensor_dtype(n) != dt || !nonneg(n, 0))
        return *why = "the limit is not start + n with n a scalar provably >= 0", NULL;
    return n;
}

/* Is u an Unsqueeze at axes [0] only? */
static int unsqueeze_axes0(const gwr_layer *u) {
    int64_t ax[2];
    const int64_t *pa;
    int64_t n = 0;
    if (gwr_layer_num_inputs(u) > 1) return gwr_match_const_ints(gwr_layer_input(u, 1), ax, 2) == 1 && (ax[0] == 0 || ax[0] == -1);
    return !gwr_layer_attr_ints(u, "axes", &pa, &n) && n == 1 && (pa[0] == 0 || pa[0] == -1);
}

/* Shape(Range(a, a + n, 1)) -> Unsqueeze(n, [0]) (a Cast to int64 for int32), and Gather(that Shape,
 * 0 or -1) -> n, or Gather(Unsqueeze(n, [0]), 0 or -1) -> n for any scalar n: the length of the
 * positions past .. past + S is S (the exporters' Shape of the cache positions). */
static int fold_range_length(gwr_rewrite_ctx *c, gwr_layer *l) {
    const char *why = NULL;
    gwr_network *net = gwr_rewrite_ctx_network(c);
    gwr_tensor *n, *y = NULL;
    if (gwr_match_is_op(l, "Gather")) {
        int64_t ax = 0, idx[2];
        if (gwr_layer_attr_int(l, "axis", 0, &ax) || ax != 0 || gwr_match_const_ints(gwr_layer_input(l, 1), idx, 2) != 1 ||
            gwr_tensor_rank(gwr_layer_input(l, 1)) != 0 || (idx[0] != 0 && idx[0] != -1))
            return gwr_rewrite_no_match(c, "not Gather(.., scalar 0, axis 0)");
        gwr_layer *u = gwr_tensor_parent(gwr_layer_input(l, 0));
        if (gwr_match_is_op(u, "Unsqueeze") && gwr_tensor_rank(gwr_layer_input(u, 0)) == 0 && unsqueeze_axes0(u)) {
            y = gwr_layer_input(u, 0); /* [n][0] is n */
        } else {
            if (!(n = range_length(u, &why))) return gwr_rewrite_no_match(c, "%s (nor an Unsqueeze of a scalar)", why);
            y = gwr_tensor_dtype(n) == GWR_INT64 ? n : gwr_cast(net, n, GWR_INT64);
        }
        if (y && gwr_tensor_dtype(y) != gwr_tensor_dtype(gwr_layer_output(l, 0))) return gwr_rewrite_no_match(c, "another dtype");
    } else {
        if (!(n = range_length(l, &why))) return gwr_rewrite_no_match(c, "%s", why);
        static const int64_t zero = 0;
        y = gwr_unsqueeze(net, n, 1, &zero);
        if (y && gwr_tensor_dtype(n) != GWR_INT64) y = gwr_cast(net, y, GWR_INT64);
    }
    if (!y) return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "fold_range_length: %s", gwr_network_errmsg(net));
    gwr_status st = gwr_match_replace_layer(l, 1, &y);
    return st ? gwr_rewrite_fail(c, st, "%s", gwr_last_errmsg()) : 1;
}

static const char *const shape_roots[] = {"Shape", "Gather", NULL};

static const gwr_pattern_rewriter gwr_pattern_fold_range_length = {
    .name = "fold_range_length",
    .root_ops = shape_roots,
    .match_and_rewrite = fold_range_length,
};

/* ---- fold_rotary_freqs --------------------------------------------------------------- */

static int perm021(const gwr_layer *t) {
    int64_t p[GWR_MAX_RANK];
    return gwr_ps_transpose_perm(t, 3, p) == 3 && p[0] == 0 && p[1] == 2 && p[2] == 1;
}

static int fold_rotary_freqs(gwr_rewrite_ctx *c, gwr_layer *tr) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    if (*gwr_layer_domain(tr) || !perm021(tr)) return gwr_rewrite_no_match(c, "not a Transpose([0, 2, 1])");
    gwr_tensor *mo = gwr_layer_input(tr, 0), *y = gwr_layer_output(tr, 0);
    gwr_layer *mm = gwr_tensor_parent(mo);
    if (!gwr_match_is_op(mm, "MatMul") || gwr_ps_sole_reader(mo) != tr) return gwr_rewrite_no_match(c, "not of a MatMul read only here");
    gwr_tensor *a = gwr_layer_input(mm, 0), *p = gwr_layer_input(mm, 1), *cst = a;
    gwr_layer *ex = gwr_tensor_parent(a);
    if (gwr_match_is_op(ex, "Expand")) cst = gwr_layer_input(ex, 0);
    gwr_match_const k;
    if (!gwr_match_const_get(cst, &k) || k.rank < 2 || k.rank > 3 || k.dims[k.rank - 1] != 1 || (k.rank == 3 && k.dims[0] != 1))
        return gwr_rewrite_no_match(c, "the first operand is not a constant (1, H, 1) or (H, 1) [expanded]");
    int64_t h = k.dims[k.rank - 2];
    gwr_dtype dt = gwr_tensor_dtype(p);
    if (gwr_tensor_rank(p) != 3 || gwr_tensor_dim(p, 1) != 1 || k.dtype != dt || !gwr_match_dtype_real_float(dt))
        return gwr_rewrite_no_match(c, "the positions are not (B, 1, S) of the constant's dtype");
    /* the Expand repeats the constant over p's batch only: its result (B | 1, H, 1) */
    if (cst != a) {
        gwr_dim b = gwr_tensor_dim(a, 0), pb = gwr_tensor_dim(p, 0);
        if (gwr_tensor_rank(a) != 3 || gwr_tensor_dim(a, 1) != h || gwr_tensor_dim(a, 2) != 1 ||
            !(b == 1 || (b == pb && b != GWR_DIM_UNKNOWN)))
            return gwr_rewrite_no_match(c, "the Expand's result is not (1 or p's batch, H, 1)");
    }
    if (gwr_tensor_rank(y) != 3 || gwr_tensor_dtype(y) != dt) return gwr_rewrite_no_match(c, "the result is not (B, S, H)");
    double *v = gwr_calloc((size_t)h, sizeof *v);
    int64_t d3[3] = {1, 1, h};
    static const int64_t p021[3] = {0, 2, 1};
    gwr_tensor *c3 = v && !gwr_match_const_f64(cst, v, h, NULL, NULL, NULL) ? gwr_ps_const_new(net, dt, 3, d3, v, 0) : NULL;
    gwr_free(v);
    gwr_tensor *pt = c3 ? gwr_transpose(net, p, 3, p021) : NULL, *out = pt ? gwr_mul(net, pt, c3) : NULL;
    if (!out) return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "fold_rotary_freqs: %s", gwr_network_errmsg(net));
    gwr_status st = gwr_match_replace_layer(tr, 1, &out);
    if (!st) st = gwr_layer_mark_as_removed(mm);
    if (!st && cst != a && gwr_ps_sole_reader(a) == mm) st = gwr_layer_mark_as_removed(ex);
    return st ? gwr_rewrite_fail(c, st, "%s", gwr_last_errmsg()) : 1;
}

static const char *const tr_roots[] = {"Transpose", NULL};

static const gwr_pattern_rewriter gwr_pattern_fold_rotary_freqs = {
    .name = "fold_rotary_freqs",
    .root_ops = tr_roots,
    .match_and_rewrite = fold_rotary_freqs,
};

/* ---- the pass table's rows (pass_table.h) ---- */
#include "passes/pass_table.h"

GWR_PASS(fold_where_nonneg, FOLD, .pattern = &gwr_pattern_fold_where_nonneg, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_EXACT,
         .summary = "turn Where(Equal(k, c), a, k), c and a constants, into k's pieces: those provably non-negative "
                    "(dims) where c < 0 kept, constant ones computed (the exporters' -1 guard of an Expand's shape)");

GWR_PASS(fold_range_length, FOLD, .pattern = &gwr_pattern_fold_range_length, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_EXACT,
         .summary = "turn Shape(Range(a, a + n, 1)), n an integer scalar provably >= 0 (a dim), into [n], and its "
                    "Gather(.., 0) (or of any Unsqueeze(scalar, [0])) into n");

GWR_PASS(fold_rotary_freqs, FOLD, .pattern = &gwr_pattern_fold_rotary_freqs, .level = GWR_LEVEL_EXTENDED,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_EXACT,
         .summary = "turn the rotary frequencies Transpose(MatMul(Expand(inv_freq (1, H, 1)), positions (B, 1, S))) "
                    "into positions (B, S, 1) * inv_freq (1, 1, H)");
