/* slices.c - Slice passes (level basic, every target, exact: elements are
 * only moved).
 *
 *   compose_slices          Slice(Slice(x, ...), ...) on different axes ->
 *                           one Slice of x with both sets of axes (YOLOX's
 *                           Focus: x[..., ::2, ::2] as two Slices)
 *   merge_slices_into_split Slices of x along one axis, step 1, that cut
 *                           the whole axis into consecutive parts -> one
 *                           Split (YOLOv8's head: x[:, :2], x[:, 2:4])
 *
 * Both read the Slice form with inputs (opset 10 on) whose starts, ends,
 * axes and steps are constants. Composing is exact because slicing along
 * different axes commutes and the outer Slice clamps against an extent the
 * inner one did not change. A Split is exact when its parts are exactly
 * the Slices' ranges after the spec's clamping, so the axis extent must be
 * known.
 *
 * Not a rule file: the Slices read one tensor in any number (readers of x, not a fixed tree), and
 * their starts/ends are clamped per the spec before comparing.
 */
#include <stdint.h>
#include <string.h>

#include "gwr/match.h"
#include "gwr/passes.h"

#define MAXR GWR_MAX_RANK

enum { X, NCAP };

/* A Slice's constant parameters, axes normalized (>= 0, distinct). */
typedef struct slice_params {
    int n;
    int64_t st[MAXR], en[MAXR], ax[MAXR], sp[MAXR];
} slice_params;


/* 0 and *p filled when l is a live default-domain Slice with inputs whose
 * parameters are constants and whose axes are valid for its input's rank;
 * -1 otherwise. */
static int params_of(const gwr_layer *l, slice_params *p) {
    int nin = l ? gwr_layer_num_inputs(l) : 0;
    int64_t opset = l ? gwr_match_opset(l) : -1; /* -1: none imported */
    if (!l || gwr_layer_is_removed(l) || gwr_layer_op_id(l) != GWR_OP_Slice || *gwr_layer_domain(l) || nin < 3 ||
        (opset >= 0 && opset < 10))
        return -1;
    int r = gwr_tensor_rank(gwr_layer_input(l, 0));
    int n = gwr_match_const_ints(gwr_layer_input(l, 1), p->st, MAXR);
    if (n <= 0 || gwr_match_const_ints(gwr_layer_input(l, 2), p->en, MAXR) != n) return -1;
    gwr_tensor *a = nin > 3 ? gwr_layer_input(l, 3) : NULL, *s = nin > 4 ? gwr_layer_input(l, 4) : NULL;
    if (a && gwr_match_const_ints(a, p->ax, MAXR) != n) return -1;
    if (s && gwr_match_const_ints(s, p->sp, MAXR) != n) return -1;
    for (int i = 0; i < n; i++) {
        if (!a) p->ax[i] = i;
        if (!s) p->sp[i] = 1;
        if (p->ax[i] < 0) p->ax[i] += r; /* r < 0: stays negative, refused below */
        if (p->ax[i] < 0 || (r >= 0 && p->ax[i] >= r) || p->ax[i] >= MAXR || !p->sp[i]) return -1;
        for (int j = 0; j < i; j++)
            if (p->ax[j] == p->ax[i]) return -1;
    }
    p->n = n;
    return 0;
}

/* A new Slice of x with parameters p (int64 constants), or NULL. */
static gwr_tensor *new_slice(gwr_network *net, gwr_layer *like, gwr_tensor *x, const slice_params *p) {
    gwr_tensor *in[5] = {x, gwr_constant_i64s(net, p->n, p->st), gwr_constant_i64s(net, p->n, p->en),
                         gwr_constant_i64s(net, p->n, p->ax), gwr_constant_i64s(net, p->n, p->sp)};
    for (int i = 1; i < 5; i++)
        if (!in[i]) return NULL;
    gwr_layer *l = gwr_match_clone_layer(like, 5, in);
    return l ? gwr_layer_output(l, 0) : NULL;
}

/* ---- compose_slices ---------------------------------------------------------- */

static int outer_of_slice(const gwr_match *m, int node, void *user) {
    (void)node, (void)user;
    slice_params a, b;
    gwr_layer *inner = gwr_tensor_parent(m->captures[X]);
    return params_of(m->layers[0], &a) == 0 && params_of(inner, &b) == 0 &&
           gwr_tensor_output_index(m->captures[X]) < 0;
}

static int compose(gwr_rewrite_ctx *c, const gwr_match *m) {
    gwr_layer *outer = m->layers[0], *inner = gwr_tensor_parent(m->captures[X]);
    slice_params a, b;
    if (params_of(outer, &a) || params_of(inner, &b)) return gwr_rewrite_no_match(c, "not constant Slices");
    if (a.n + b.n > MAXR) return gwr_rewrite_no_match(c, "too many axes");
    for (int i = 0; i < a.n; i++)
        for (int j = 0; j < b.n; j++)
            if (a.ax[i] == b.ax[j])
                return gwr_rewrite_no_match(c, "both Slices cut axis %lld", (long long)a.ax[i]);
    /* the inner's axes first, as the layers ran */
    memcpy(b.st + b.n, a.st, (size_t)a.n * sizeof *a.st);
    memcpy(b.en + b.n, a.en, (size_t)a.n * sizeof *a.en);
    memcpy(b.ax + b.n, a.ax, (size_t)a.n * sizeof *a.ax);
    memcpy(b.sp + b.n, a.sp, (size_t)a.n * sizeof *a.sp);
    b.n += a.n;
    gwr_network *net = gwr_rewrite_ctx_network(c);
    gwr_tensor *y = new_slice(net, outer, gwr_layer_input(inner, 0), &b);
    if (!y) return gwr_rewrite_fail(c, GWR_ERR_NOMEM, "composing Slices: %s", gwr_last_errmsg());
    gwr_status s = gwr_match_replace(m, 1, &y);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}

static const gwr_match_node slice_nodes[] = {
    {.op = "Slice",
     .in = {GWR_M_CAP(X), GWR_M_CONST(-1), GWR_M_CONST(-1), GWR_M_OPT_CONST(-1), GWR_M_OPT_CONST(-1)},
     .pred = outer_of_slice, .min_opset = 10}, /* Slice's inputs from opset 10 */
};
static const gwr_match_pattern compose_p = {"compose_slices", GWR_M_NODES(slice_nodes), compose, NULL};

static const char *const slice_ops[] = {"Slice", NULL};

const gwr_pattern_rewriter gwr_pattern_compose_slices = GWR_MATCH_PASS("compose_slices", slice_ops, &compose_p);

/* ---- merge_slices_into_split ------------------------------------------------- */

/* The range [*b, *e) that Slice l (one axis `axis`, step 1) takes of an
 * axis of extent d, clamped as the spec does; 0, or -1 when l is not such a
 * Slice of x. */
static int range_of(const gwr_layer *l, const gwr_tensor *x, int64_t axis, int64_t d, int64_t *b, int64_t *e) {
    slice_params p;
    if (gwr_layer_input(l, 0) != x || params_of(l, &p) || p.n != 1 || p.ax[0] != axis || p.sp[0] != 1) return -1;
    int64_t s = p.st[0], t = p.en[0];
    if (s < 0) s = s < -d ? 0 : s + d; /* s + d cannot overflow: -d <= s < 0 */
    if (t < 0) t = t < -d ? 0 : t + d;
    *b = s > d ? d : s;
    *e = t > d ? d : t;
    return 0;
}

/* The Slice readers of x in network `net` (x's users include layers of
 * bodies reading it) that take [from, ...) of the axis; the first. */
static gwr_layer *part_from(const gwr_network *net, const gwr_tensor *x, int64_t axis, int64_t d, int64_t from,
                            int64_t *end) {
    for (int64_t i = 0; i < gwr_tensor_num_users(x); i++) {
        int slot;
        gwr_layer *u = gwr_tensor_user(x, i, &slot);
        int64_t b, e;
        if (u && slot == 0 && gwr_layer_network(u) == net && gwr_tensor_output_index(gwr_layer_output(u, 0)) < 0 &&
            !range_of(u, x, axis, d, &b, &e) && b == from && e > b) {
            *end = e;
            return u;
        }
    }
    return NULL;
}

static int first_part(const gwr_match *m, int node, void *user) {
    (void)user;
    slice_params p;
    gwr_layer *l = m->layers[node];
    return params_of(l, &p) == 0 && p.n == 1 && p.sp[0] == 1;
}

static int to_split(gwr_rewrite_ctx *c, const gwr_match *m) {
    gwr_layer *root = m->layers[0];
    gwr_tensor *x = m->captures[X];
    slice_params p;
    if (params_of(root, &p)) return gwr_rewrite_no_match(c, "not a constant Slice");
    int64_t axis = p.ax[0], d = gwr_tensor_dim(x, (int)axis), b, e;
    if (!GWR_DIM_IS_KNOWN(d) || d <= 0) return gwr_rewrite_no_match(c, "the extent of axis %lld is not known", (long long)axis);
    if (range_of(root, x, axis, d, &b, &e) || b != 0 || e <= 0 || e >= d)
        return gwr_rewrite_no_match(c, "not the first part of a cut of axis %lld", (long long)axis);
    gwr_layer *parts[MAXR * 4];
    int64_t sizes[MAXR * 4];
    int n = 0;
    for (int64_t at = 0, end; at < d; at = end) {
        gwr_layer *u = at ? part_from(gwr_layer_network(root), x, axis, d, at, &end) : (end = e, root);
        if (!u) return gwr_rewrite_no_match(c, "no Slice of '%s' takes [%lld, ...) of axis %lld", gwr_tensor_name(x),
                                            (long long)at, (long long)axis);
        if (n == MAXR * 4) return gwr_rewrite_no_match(c, "more than %d parts", MAXR * 4);
        parts[n] = u, sizes[n++] = end - at;
    }
    gwr_network *net = gwr_rewrite_ctx_network(c);
    int64_t opset = gwr_match_opset(root);
    int as_input = opset < 0 || opset >= 13; /* split: an input from opset 13 on */
    gwr_tensor *in[2] = {x, as_input ? gwr_constant_i64s(net, n, sizes) : NULL};
    gwr_layer *l = !as_input || in[1] ? gwr_network_add_layer(net, "Split", "", NULL, as_input ? 2 : 1, in, n, NULL)
                                      : NULL;
    gwr_status s = l ? gwr_layer_set_int(l, "axis", axis) : GWR_ERR_NOMEM;
    if (!s && !as_input) s = gwr_layer_set_ints(l, "split", sizes, n);
    if (!s) s = gwr_layer_infer(l);
    for (int i = 0; !s && i < n; i++) {
        gwr_tensor *y = gwr_layer_output(l, i);
        s = gwr_match_replace_layer(parts[i], 1, &y);
    }
    if (s && l) gwr_layer_mark_as_removed(l);
    return s ? gwr_rewrite_fail(c, s, "building a Split: %s", *gwr_network_errmsg(net) ? gwr_network_errmsg(net)
                                                                                         : gwr_last_errmsg())
             : 1;
}

static const gwr_match_node part_nodes[] = {
    {.op = "Slice",
     .in = {GWR_M_CAP(X), GWR_M_CONST(-1), GWR_M_CONST(-1), GWR_M_OPT_CONST(-1), GWR_M_OPT_CONST(-1)},
     .pred = first_part, .min_opset = 10},
};
static const gwr_match_pattern split_p = {"merge_slices_into_split", GWR_M_NODES(part_nodes), to_split, NULL};

const gwr_pattern_rewriter gwr_pattern_merge_slices_into_split =
    GWR_MATCH_PASS("merge_slices_into_split", slice_ops, &split_p);

/* ---- the pass table's rows (pass_table.h) ---- */
#include "passes/pass_table.h"

GWR_PASS(compose_slices, CLEANUP, .pattern = &gwr_pattern_compose_slices, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_EXACT,
         .summary = "merge Slice(Slice(x)) on different axes into one Slice of x");

GWR_PASS(merge_slices_into_split, CLEANUP, .pattern = &gwr_pattern_merge_slices_into_split, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_EXACT,
         .summary = "replace Slices that cut one axis of x into consecutive parts by one Split");
