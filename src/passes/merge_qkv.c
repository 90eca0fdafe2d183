/* merge_qkv.c - merge_qkv_matmuls: the q, k and v projections of one
 * input become one MatMul and a Split.
 *
 *   y_i = MatMul(x, W_i) [+ b_i]   i = 1..n, n >= 3     W_i (K, N_i) constant, b_i (N_i) constant
 *   ->  Y = MatMul(x, [W_1 .. W_n]) [+ [b_1 .. b_n]];  y_1 .. y_n = Split(Y, [N_1 .. N_n], axis -1)
 *
 * The group is every live default-domain MatMul reading x as its first
 * input with a constant 2-D weight of x's float dtype and the same K, in
 * the order of x's readers (deterministic: the order they were added).
 * Three or more: q, k and v. Two would give as many nodes as before
 * without the biases (a gated MLP's gate and up projections), so they stay.
 * A weight read by anything else (tied weights) keeps the whole group as
 * it is: merging would copy it and grow the model. A bias is taken when
 * the MatMul's only reader is an Add of a constant of N_i elements (rank
 * <= 2, leading dims 1) and the MatMul's result is not a network output;
 * when some of the group have one and others not, the others get zeros
 * (x + 0 is x). The concatenated constants are exact copies (each value
 * read as a double and rounded once back to its own dtype). The Split's
 * outputs take the places of the Adds' (or MatMuls') results, so readers
 * and network outputs see the same values. lower_attention takes the merged
 * form as it takes separate projections.
 *
 * Not a rule file: three or more MatMuls reading one input (a variable number of siblings, not a
 * tree under one root) become one MatMul and a Split.
 */
#include <string.h>

#include "gwr/match.h"
#include "gwr/passes.h"
#include "passes/pass_util.h"
#include "util/util.h"

#define MAX_GROUP 16

typedef struct member {
    gwr_layer *mm, *add;
    gwr_tensor *w, *b;
    int64_t n;
} member;

static int is_op(const gwr_layer *l, const char *op) {
    return l && !gwr_layer_is_removed(l) && !*gwr_layer_domain(l) && !strcmp(gwr_layer_op(l), op);
}

/* MatMul l reading x first by a constant (K, N) weight of dt that no other
 * layer reads: N, else 0. */
static int64_t weight_cols(gwr_layer *l, gwr_tensor *x, gwr_dtype dt, int64_t k) {
    if (!is_op(l, "MatMul") || gwr_layer_num_inputs(l) != 2 || gwr_layer_input(l, 0) != x) return 0;
    gwr_tensor *w = gwr_layer_input(l, 1);
    gwr_match_const c;
    if (!gwr_match_const_get(w, &c) || c.rank != 2 || c.dtype != dt || c.dims[0] != k || c.dims[1] < 1) return 0;
    if (gwr_tensor_num_live_users(w) != 1 || gwr_tensor_output_index(w) >= 0) return 0;
    return c.dims[1];
}

/* The constant bias Add reading m's only result, or NULL. */
static gwr_layer *bias_add(member *m, gwr_dtype dt) {
    gwr_tensor *y = gwr_layer_output(m->mm, 0);
    if (gwr_tensor_num_live_users(y) != 1 || gwr_tensor_output_index(y) >= 0) return NULL;
    gwr_layer *u = NULL;
    for (int64_t i = 0; i < gwr_tensor_num_users(y) && !u; i++)
        if (!gwr_layer_is_removed(gwr_tensor_user(y, i, NULL))) u = gwr_tensor_user(y, i, NULL);
    if (!is_op(u, "Add") || gwr_layer_num_inputs(u) != 2) return NULL;
    gwr_tensor *b = gwr_layer_input(u, 0) == y ? gwr_layer_input(u, 1) : gwr_layer_input(u, 0);
    if (b == y) return NULL;
    gwr_match_const c;
    if (!gwr_match_const_get(b, &c) || c.dtype != dt || c.numel != m->n || c.rank < 1 || c.rank > 2) return NULL;
    if (c.dims[c.rank - 1] != m->n) return NULL;
    m->b = b;
    return u;
}

/* The group of x's MatMuls; its size (0 when a member's weight is shared). */
static int group(gwr_tensor *x, gwr_dtype dt, int64_t k, member *g) {
    int n = 0;
    for (int64_t i = 0; i < gwr_tensor_num_users(x); i++) {
        int slot = 0;
        gwr_layer *u = gwr_tensor_user(x, i, &slot);
        if (slot != 0 || !is_op(u, "MatMul") || gwr_layer_input(u, 1) == x) continue;
        int64_t cols = weight_cols(u, x, dt, k);
        gwr_match_const c;
        if (!cols && gwr_match_const_get(gwr_layer_input(u, 1), &c) && c.rank == 2 && c.dtype == dt && c.dims[0] == k)
            return 0; /* a member with a weight read elsewhere */
        if (!cols) continue;
        if (n == MAX_GROUP) return 0;
        g[n++] = (member){.mm = u, .w = gwr_layer_input(u, 1), .n = cols};
    }
    return n;
}

/* Values of the constants side by side along their last axis: rows x
 * cols[i] each (rows 1 for biases), NULL entries as zeros. */
static double *side_by_side(const member *g, int n, int bias, int64_t rows, int64_t total) {
    double *v = gwr_calloc((size_t)(rows * total), sizeof *v), *tmp = NULL;
    int64_t off = 0;
    for (int i = 0; v && i < n; off += g[i].n, i++) {
        gwr_tensor *t = bias ? g[i].b : g[i].w;
        if (!t) continue;
        if (!(tmp = gwr_malloc((size_t)(rows * g[i].n) * sizeof *tmp)) ||
            gwr_match_const_f64(t, tmp, rows * g[i].n, NULL, NULL, NULL)) {
            gwr_free(tmp), gwr_free(v);
            return NULL;
        }
        for (int64_t r = 0; r < rows; r++) memcpy(v + r * total + off, tmp + r * g[i].n, (size_t)g[i].n * sizeof *v);
        gwr_free(tmp);
    }
    return v;
}

static int merge(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    if (*gwr_layer_domain(l) || gwr_layer_num_inputs(l) != 2) return gwr_rewrite_no_match(c, "not an ONNX MatMul");
    gwr_tensor *x = gwr_layer_input(l, 0);
    gwr_dtype dt = gwr_tensor_dtype(x);
    gwr_match_const w;
    if (!gwr_match_dtype_real_float(dt) || gwr_tensor_rank(x) < 2) return gwr_rewrite_no_match(c, "x is not a float tensor of rank >= 2");
    if (!gwr_match_const_get(gwr_layer_input(l, 1), &w) || w.rank != 2) return gwr_rewrite_no_match(c, "no constant 2-D weight");
    member g[MAX_GROUP];
    int n = group(x, dt, w.dims[0], g);
    if (n < 3) return gwr_rewrite_no_match(c, "fewer than three MatMuls of x by unshared constant weights (%d)", n);
    int64_t total = 0, nb = 0;
    for (int i = 0; i < n; i++) {
        total += g[i].n;
        if ((g[i].add = bias_add(&g[i], dt))) nb++;
    }
    int64_t wd[2] = {w.dims[0], total};
    double *wv = side_by_side(g, n, 0, w.dims[0], total), *bv = nb ? side_by_side(g, n, 1, 1, total) : NULL;
    gwr_tensor *W = wv && (!nb || bv) ? gwr_ps_const_new(net, dt, 2, wd, wv, 0) : NULL;
    gwr_tensor *B = W && nb ? gwr_ps_const_new(net, dt, 1, &total, bv, 0) : NULL;
    gwr_free(wv), gwr_free(bv);
    gwr_tensor *y = W && (!nb || B) ? gwr_matmul(net, x, W) : NULL;
    if (y && nb) y = gwr_add(net, y, B);
    int64_t sizes[MAX_GROUP];
    gwr_tensor *outs[MAX_GROUP];
    for (int i = 0; i < n; i++) sizes[i] = g[i].n;
    if (!y || !gwr_split(net, y, -1, n, sizes, outs))
        return gwr_rewrite_fail(c, GWR_ERR_NOMEM, "merge_qkv_matmuls: %s", gwr_network_errmsg(net));
    gwr_status s = GWR_OK;
    for (int i = 0; !s && i < n; i++) {
        s = gwr_match_replace_layer(g[i].add ? g[i].add : g[i].mm, 1, &outs[i]);
        if (!s && g[i].add) s = gwr_layer_mark_as_removed(g[i].mm);
    }
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}

static const char *const roots[] = {"MatMul", NULL};

const gwr_pattern_rewriter gwr_pattern_merge_qkv_matmuls = {
    .name = "merge_qkv_matmuls",
    .root_ops = roots,
    .match_and_rewrite = merge,
};

/* ---- the pass table's row (pass_table.h) ---- */
#include "passes/pass_table.h"

GWR_PASS(merge_qkv_matmuls, FUSE, .pattern = &gwr_pattern_merge_qkv_matmuls, .level = GWR_LEVEL_EXTENDED,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-5,
         .summary = "turn three or more MatMuls (+ constant bias) of one input by constant weights into one MatMul (+ "
                    "Add) and a Split");
