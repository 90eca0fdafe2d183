/* cse.c - eliminate_common_subexpressions (level basic, every target,
 * exact): two live layers of one network that compute the same thing
 * become one. The earlier (lower network index) stays; the later's readers
 * read the earlier's outputs and the later is removed.
 *
 * Two layers compute the same thing when they have the same op (an op of
 * the table: same name and domain), read the same tensors in the same
 * slots (either order for a commutative binary op), have the same number
 * of outputs and equal attributes: the same names and types, ints and
 * strings equal, floats bit for bit (memcmp: NaN payloads and the sign of
 * zero count), tensors of the same dtype, dims and bytes (their
 * TensorProto names ignored). Refused: ops outside the table and plugins
 * (unknown semantics), random ops (class RANDOM or GWR_OPF_RANDOM), Dropout
 * (random in training mode; eliminate_identity removes the inference
 * ones), and layers with graph attributes (If, Loop, Scan: subgraphs are
 * not compared). Nothing is assumed from the values' types: a twin whose
 * declared output dtype or kind differs is refused.
 *
 * Finding a twin without a per-run table: a layer with an input can only
 * have a twin among the readers of that input, so the readers of its input
 * with the fewest readers are compared (O(readers) per offered layer). A
 * layer without inputs (a Constant: duplicate initializers) is compared
 * with the input-less layers found near its readers: for each reader U and
 * each other input t of U, t's producer, and the producers of the inputs
 * of every layer of U's op that also reads t. That is the case that lets
 * readers merge (Mul(x, c1) and Mul(x, c2) with c1 == c2: the constants
 * merge, then the Muls); equal constants with no such shared neighbour
 * (Relu(c1), Relu(c2)) stay apart, which fold_constants covers. A t read
 * by more than NEIGHBOUR_MAX layers (a mask every block of a decoder
 * reads) is not searched through: for each of the blocks' own constants
 * the search visited every block, quadratic in the blocks (0.9 s of 2.1 s
 * on a 2,273-block decoder whose 2,273 MultiHeadAttentions share one
 * attention_bias). A constant read by more than NEIGHBOUR_MAX layers is
 * searched from the other end: each reader offered looks next to itself
 * for a twin of such an input (the same neighbours, so the same pairs
 * merge; each offer costs O(its inputs), not O(the constant's readers));
 * every reader offered looks so for all its constant inputs, which finds
 * the twins that became neighbours after they were offered.
 *
 * When an offered layer finds a twin among the readers of t, every later
 * twin of the survivor after it in t's use list goes in the same rewrite
 * (one rewrite may remove several layers): N identical siblings then cost
 * one scan of the list, not N.
 *
 * The interface: when the later layer's output is a network output, the
 * kept tensor takes its name (gwr_tensor_replace_all_uses_with swaps the
 * names); when both outputs are network outputs the pair is refused, as
 * merging them would need an Identity to carry the second name. Each
 * rewrite removes one layer and adds none, so the pass converges.
 *
 * Not a rule file: it compares every pair of layers reading one tensor (by hash of op, inputs and
 * attributes), not a fixed pattern.
 */
#include <stdint.h>
#include <string.h>

#include "gwr/match.h"
#include "gwr/passes.h"
#include "util/util.h"

#define NEIGHBOUR_MAX 64

/* Outputs a merge handles at once (a Split into more parts is refused). */
#define MAX_OUTS 64

/* Can l be merged with a twin at all? NULL, or why not. */
static const char *unmergeable(const gwr_layer *l) {
    const gwr_op_info *info = gwr_op_info_get(gwr_layer_op_id(l));
    if (!info || gwr_layer_type(l) == GWR_LAYER_PLUGIN) return "an op outside the table (unknown semantics)";
    if ((info->flags & GWR_OPF_RANDOM) || gwr_layer_type(l) == GWR_LAYER_RANDOM) return "a random op";
    if (info->flags & GWR_OPF_SUBGRAPH) return "a layer with subgraphs";
    if (gwr_layer_op_id(l) == GWR_OP_Dropout) return "Dropout (random in training mode)";
    int n = gwr_layer_num_outputs(l);
    if (n < 1 || n > MAX_OUTS) return "no outputs, or too many";
    for (int i = 0; i < gwr_layer_num_attrs(l); i++) {
        gwr_attr_type t = gwr_layer_attr_type(l, i);
        if (t == GWR_ATTR_GRAPH || t == GWR_ATTR_GRAPHS || t == GWR_ATTR_UNDEFINED) return "a graph attribute";
    }
    return NULL;
}

static int bytes_same(const char *a, size_t na, const char *b, size_t nb) {
    return na == nb && (!na || !memcmp(a, b, na));
}

/* dtype, dims and bytes (string by string for STRING data). */
static int weights_same(const gwr_weights *a, const gwr_weights *b) {
    if (a->dtype != b->dtype || a->rank != b->rank || a->nbytes != b->nbytes) return 0;
    if (a->rank && memcmp(a->dims, b->dims, (size_t)a->rank * sizeof *a->dims)) return 0;
    if (a->dtype == GWR_STRING) {
        const gwr_bytes *sa = a->data, *sb = b->data;
        for (size_t i = 0; i < a->nbytes / sizeof(gwr_bytes); i++)
            if (!bytes_same(sa[i].data, sa[i].len, sb[i].data, sb[i].len)) return 0;
        return 1;
    }
    return !a->nbytes || a->data == b->data || !memcmp(a->data, b->data, a->nbytes);
}

/* Lists of n entries of esz bytes, compared bit for bit. */
static int list_same(const void *a, int64_t na, const void *b, int64_t nb, size_t esz) {
    return na == nb && (!na || !memcmp(a, b, (size_t)na * esz));
}

/* Attribute i of a equals b's attribute of the same name. */
static int attr_same(const gwr_layer *a, int i, const gwr_layer *b) {
    const char *name = gwr_layer_attr_name(a, i);
    int j = gwr_layer_find_attr(b, name);
    gwr_attr_type t = gwr_layer_attr_type(a, i);
    if (j < 0 || gwr_layer_attr_type(b, j) != t) return 0;
    switch (t) {
    case GWR_ATTR_INT: {
        int64_t x = 0, y = 1;
        return !gwr_layer_get_int(a, name, &x) && !gwr_layer_get_int(b, name, &y) && x == y;
    }
    case GWR_ATTR_FLOAT: {
        float x = 0, y = 1;
        return !gwr_layer_get_float(a, name, &x) && !gwr_layer_get_float(b, name, &y) && !memcmp(&x, &y, sizeof x);
    }
    case GWR_ATTR_STRING: {
        const char *x, *y;
        size_t nx, ny;
        return !gwr_layer_get_string(a, name, &x, &nx) && !gwr_layer_get_string(b, name, &y, &ny) &&
               bytes_same(x, nx, y, ny);
    }
    case GWR_ATTR_INTS: {
        const int64_t *x, *y;
        int64_t nx, ny;
        return !gwr_layer_get_ints(a, name, &x, &nx) && !gwr_layer_get_ints(b, name, &y, &ny) &&
               list_same(x, nx, y, ny, sizeof *x);
    }
    case GWR_ATTR_FLOATS: {
        const float *x, *y;
        int64_t nx, ny;
        return !gwr_layer_get_floats(a, name, &x, &nx) && !gwr_layer_get_floats(b, name, &y, &ny) &&
               list_same(x, nx, y, ny, sizeof *x);
    }
    case GWR_ATTR_STRINGS: {
        const gwr_bytes *x, *y;
        int64_t nx, ny;
        if (gwr_layer_get_strings(a, name, &x, &nx) || gwr_layer_get_strings(b, name, &y, &ny) || nx != ny) return 0;
        for (int64_t k = 0; k < nx; k++)
            if (!bytes_same(x[k].data, x[k].len, y[k].data, y[k].len)) return 0;
        return 1;
    }
    case GWR_ATTR_TENSOR: {
        const gwr_weights *x, *y;
        return !gwr_layer_get_tensor(a, name, &x) && !gwr_layer_get_tensor(b, name, &y) && weights_same(x, y);
    }
    case GWR_ATTR_TENSORS: {
        const gwr_weights *x, *y;
        int64_t nx, ny;
        if (gwr_layer_get_tensors(a, name, &x, &nx) || gwr_layer_get_tensors(b, name, &y, &ny) || nx != ny) return 0;
        for (int64_t k = 0; k < nx; k++)
            if (!weights_same(&x[k], &y[k])) return 0;
        return 1;
    }
    default: return 0; /* graphs are not compared */
    }
}

/* Same tensors in the same slots, or swapped for a commutative binary op. */
static int inputs_same(const gwr_layer *a, const gwr_layer *b) {
    int n = gwr_layer_num_inputs(a), same = 1;
    if (n != gwr_layer_num_inputs(b)) return 0;
    for (int i = 0; same && i < n; i++) same = gwr_layer_input(a, i) == gwr_layer_input(b, i);
    if (same) return 1;
    const gwr_op_info *info = gwr_op_info_get(gwr_layer_op_id(a));
    return n == 2 && (info->flags & GWR_OPF_COMMUTATIVE) && gwr_layer_input(a, 0) == gwr_layer_input(b, 1) &&
           gwr_layer_input(a, 1) == gwr_layer_input(b, 0);
}

/* Does b compute what a (a mergeable layer) computes? */
static int twins(const gwr_layer *a, const gwr_layer *b) {
    if (!b || b == a || gwr_layer_is_removed(b) || gwr_layer_op_id(b) != gwr_layer_op_id(a)) return 0;
    if (gwr_layer_network(b) != gwr_layer_network(a) || gwr_layer_num_outputs(b) != gwr_layer_num_outputs(a)) return 0;
    int n = gwr_layer_num_attrs(a);
    if (n != gwr_layer_num_attrs(b) || !inputs_same(a, b)) return 0;
    for (int i = 0; i < n; i++)
        if (!attr_same(a, i, b)) return 0;
    return 1;
}

/* Can the later of a and b go, its readers reading the earlier's
 * outputs? NULL, or why not. */
static const char *pair_refusal(const gwr_layer *a, const gwr_layer *b) {
    const gwr_layer *keep = gwr_layer_index(a) < gwr_layer_index(b) ? a : b, *drop = keep == a ? b : a;
    for (int i = 0; i < gwr_layer_num_outputs(drop); i++) {
        gwr_tensor *o = gwr_layer_output(drop, i), *k = gwr_layer_output(keep, i);
        gwr_dtype x = gwr_tensor_dtype(o), y = gwr_tensor_dtype(k);
        if (gwr_tensor_output_index(o) >= 0 && gwr_tensor_output_index(k) >= 0) return "both are network outputs";
        if ((x != GWR_UNDEFINED && y != GWR_UNDEFINED && x != y) || gwr_tensor_kind(o) != gwr_tensor_kind(k))
            return "their outputs are declared with other types";
    }
    return NULL;
}

/* The later of a and b is removed (pair_refusal said yes). */
static int merge(gwr_rewrite_ctx *c, gwr_layer *a, gwr_layer *b) {
    gwr_layer *keep = gwr_layer_index(a) < gwr_layer_index(b) ? a : b, *drop = keep == a ? b : a;
    gwr_tensor *outs[MAX_OUTS];
    int n = gwr_layer_num_outputs(drop);
    for (int i = 0; i < n; i++) outs[i] = gwr_layer_output(keep, i);
    gwr_status s = gwr_match_replace_layer(drop, n, outs);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}

/* Is b a twin of l that can be merged with it? On a twin refused, the
 * reason in *why. */
static int can_merge(const gwr_layer *l, const gwr_layer *b, const char **why) {
    if (!twins(l, b)) return 0;
    const char *r = pair_refusal(l, b);
    if (r) *why = r;
    return !r;
}

/* Does t (in l's network) come from an input-less twin of l? */
static gwr_layer *input_less_twin(const gwr_layer *l, const gwr_tensor *t, const char **why) {
    gwr_layer *p = t ? gwr_tensor_parent(t) : NULL;
    return p && gwr_layer_num_inputs(p) == 0 && can_merge(l, p, why) ? p : NULL;
}

/* An input-less twin of l (reading nothing) next to u, a reader of l's
 * output o: the producer of another input t of u, or of an input of a layer
 * of u's op that also reads t (see the head of the file), or NULL. */
static gwr_layer *twin_next_to(const gwr_layer *l, const gwr_tensor *o, const gwr_layer *u, const char **why) {
    gwr_layer *p;
    if (gwr_layer_is_removed(u) || gwr_layer_network(u) != gwr_layer_network(l)) return NULL;
    for (int j = 0; j < gwr_layer_num_inputs(u); j++) {
        gwr_tensor *t = gwr_layer_input(u, j);
        if (!t || t == o) continue;
        if ((p = input_less_twin(l, t, why))) return p;
        if (gwr_tensor_num_users(t) > NEIGHBOUR_MAX) continue;
        for (int64_t k = 0; k < gwr_tensor_num_users(t); k++) {
            gwr_layer *v = gwr_tensor_user(t, k, NULL);
            if (v == u || gwr_layer_is_removed(v) || gwr_layer_op_id(v) != gwr_layer_op_id(u)) continue;
            for (int s = 0; s < gwr_layer_num_inputs(v); s++)
                if ((p = input_less_twin(l, gwr_layer_input(v, s), why))) return p;
        }
    }
    return NULL;
}

/* An input-less twin of l near the readers of its first output, or NULL.
 * An output read by more than NEIGHBOUR_MAX layers is searched from the
 * readers' side instead (reader_side_twin), once per reader offered: a
 * constant that every layer of a chain reads is offered again each time a
 * reader goes, and a search through all its readers each time was
 * quadratic in the chain (10^5 Unsqueeze/Squeeze sharing one axes
 * constant did not finish in minutes). */
static gwr_layer *find_input_less_twin(const gwr_layer *l, const char **why) {
    const gwr_tensor *o = gwr_layer_output(l, 0);
    if (gwr_tensor_num_users(o) > NEIGHBOUR_MAX) return NULL;
    for (int64_t i = 0; i < gwr_tensor_num_users(o); i++) {
        gwr_layer *p = twin_next_to(l, o, gwr_tensor_user(o, i, NULL), why);
        if (p) return p;
    }
    return NULL;
}

/* u's side of find_input_less_twin: for an input of u made by a mergeable
 * input-less layer c, c's twin next to u; merged. 1 merged, 0 none, < 0
 * failed. A constant read by more than NEIGHBOUR_MAX layers is found only
 * so; any other is found here too when u is offered again because its
 * inputs moved: Concat(a, b, c1) and Concat(a', b, c2) with a, a' equal
 * constants and c1 == c2 become Concat(a, b, c1) and Concat(a, b, c2) when
 * a and a' merge, and c1 and c2 were offered before that, with no shared
 * neighbour yet (a second optimize of Silero VAD merged 8 such). */
static int reader_side_twin(gwr_rewrite_ctx *c, gwr_layer *u) {
    for (int i = 0; i < gwr_layer_num_inputs(u); i++) {
        gwr_tensor *o = gwr_layer_input(u, i);
        gwr_layer *k = o ? gwr_tensor_parent(o) : NULL, *p;
        const char *why = NULL;
        if (!k || gwr_layer_num_inputs(k) || unmergeable(k) || gwr_layer_output(k, 0) != o)
            continue;
        if ((p = twin_next_to(k, o, u, &why))) return merge(c, k, p);
    }
    return 0;
}

/* After l and u merged (the survivor keep), the other later twins of keep
 * among the readers of t from position i on go too, in the same rewrite:
 * N identical siblings merged one per rewrite made the survivor scan the
 * removed ones again each time (10^5 identical Relu(x): 42 s). 1, or < 0
 * on a failure. */
static int merge_rest(gwr_rewrite_ctx *c, gwr_layer *l, gwr_layer *u, const gwr_tensor *t, int64_t i) {
    gwr_layer *keep = gwr_layer_index(l) < gwr_layer_index(u) ? l : u;
    int r = merge(c, l, u);
    for (const char *why; r == 1 && i < gwr_tensor_num_users(t); i++) {
        gwr_layer *v = gwr_tensor_user(t, i, NULL);
        if (gwr_layer_index(v) > gwr_layer_index(keep) && can_merge(keep, v, &why)) r = merge(c, keep, v);
    }
    return r;
}

static int eliminate_common_subexpressions(gwr_rewrite_ctx *c, gwr_layer *l) {
    const char *why = unmergeable(l);
    if (why) return gwr_rewrite_no_match(c, "%s", why);
    why = "no twin";
    /* A twin reads every input of l: look among the readers of the input
     * with the fewest. */
    gwr_tensor *t = NULL;
    for (int i = 0; i < gwr_layer_num_inputs(l); i++) {
        gwr_tensor *x = gwr_layer_input(l, i);
        if (x && (!t || gwr_tensor_num_users(x) < gwr_tensor_num_users(t))) t = x;
    }
    if (!t) {
        gwr_layer *p = gwr_layer_num_inputs(l) == 0 ? find_input_less_twin(l, &why) : NULL;
        return p ? merge(c, l, p) : gwr_rewrite_no_match(c, "%s near the readers", why);
    }
    for (int64_t i = 0; i < gwr_tensor_num_users(t); i++) {
        gwr_layer *u = gwr_tensor_user(t, i, NULL);
        if (can_merge(l, u, &why)) return merge_rest(c, l, u, t, i + 1);
    }
    int r = reader_side_twin(c, l);
    if (r) return r;
    return gwr_rewrite_no_match(c, "%s among the readers of '%s'", why, gwr_tensor_name(t));
}

const gwr_pattern_rewriter gwr_pattern_eliminate_common_subexpressions = {
    .name = "eliminate_common_subexpressions",
    .match_and_rewrite = eliminate_common_subexpressions,
};

/* ---- the pass table's row (pass_table.h) ---- */
#include "passes/pass_table.h"

GWR_PASS(eliminate_common_subexpressions, CLEANUP, .pattern = &gwr_pattern_eliminate_common_subexpressions, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_EXACT,
         .summary = "merge layers computing the same thing (same op, inputs, attributes bit for bit) and equal "
                    "constants; not random ops, subgraphs or plugins");
