/* transpose_push.c - push_transpose_through_elementwise (level basic, as
 * onnxruntime's transpose optimizer; every target; exact):
 *
 *   Transpose(E_k(...E_1(Transpose(x, p1))...), p2)
 *     -> E_k(...E_1(Transpose(x, p1[p2]))...), or E_k(...E_1(x)...) when p1[p2] is the identity
 *
 * where each E_i computes element by element: a unary op of the list
 * below, Clip with one-element bounds, or a binary one whose other operand
 * is a constant of no more dims than the data: one element stays as it is,
 * more are left-padded to the data's rank and transposed by p2 into a new
 * constant (the values copied through double, so only real floats and
 * ints within 2^53). Elementwise ops commute with a Transpose, so moving
 * the outer one up until it meets the inner one computes the same values
 * in the same order: exact.
 *
 * Only when it removes Transposes: every intermediate of the chain is read
 * only by the next layer and is not a network output, so the chain's k + 2
 * layers become k (or k + 1). A lone Transpose with no partner is left
 * where it is: moving it would not shrink the graph.
 *
 * Not a rule file: the Transpose is pushed through a chain of any length until it meets another
 * one, permuting each constant on the way.
 */
#include <stdint.h>
#include <string.h>

#include "gwr/match.h"
#include "gwr/passes.h"
#include "passes/pass_util.h"
#include "util/util.h"

#define MAX_CHAIN 8

static const char *const unary_ops[] = {
    "Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Elu", "Selu", "Celu", "ThresholdedRelu",
    "Softplus", "Softsign", "Gelu", "Erf", "Exp", "Log", "Abs", "Neg", "Sqrt", "Reciprocal", "Floor", "Ceil",
    "Round", "Sign", "Sin", "Cos", "Tan", "Not", "Cast", "Mish", "IsNaN", "Identity", NULL};
static const char *const binary_ops[] = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", NULL};

static int in_list(const char *const *list, const char *op) {
    for (; *list; list++)
        if (!strcmp(*list, op)) return 1;
    return 0;
}

/* Is t read only by `reader` and not a network output? */
static int only_read_by(const gwr_tensor *t, const gwr_layer *reader) {
    if (gwr_tensor_output_index(t) >= 0) return 0;
    for (int64_t i = 0; i < gwr_tensor_num_users(t); i++) {
        gwr_layer *u = gwr_tensor_user(t, i, NULL);
        if (!gwr_layer_is_removed(u) && u != reader) return 0;
    }
    return 1;
}

/* A constant of one element and at most `rank` dims. */
static int scalar_const(const gwr_tensor *t, int rank) {
    gwr_match_const k;
    return t && gwr_match_const_get(t, &k) && k.numel == 1 && k.rank <= rank;
}

/* A constant that can be permuted exactly: at most `rank` dims, at most
 * MAX_PERMUTED elements, and values that survive a trip through double
 * (real floats; ints within 2^53). */
#define MAX_PERMUTED ((int64_t)1 << 20)
static int permutable_const(const gwr_tensor *t, int rank) {
    gwr_match_const k;
    if (!t || !gwr_match_const_get(t, &k) || k.rank > rank || k.numel > MAX_PERMUTED) return 0;
    if (gwr_match_dtype_real_float(k.dtype)) return 1;
    if (!gwr_dtype_is_int(k.dtype) && k.dtype != GWR_BOOL) return 0;
    for (int64_t i = 0; i < k.numel; i++) {
        double v = gwr_match_const_at(&k, i);
        if (v > 0x1p53 || v < -0x1p53) return 0;
    }
    return 1;
}

/* The data input slot of elementwise layer l over a tensor of rank r: 0
 * for a unary op or Clip with scalar bounds; the non-constant operand of a
 * binary op with a scalar constant; -1 when l is not such a layer. */
static int data_slot(const gwr_layer *l, int r) {
    const char *op = gwr_layer_op(l);
    int n = gwr_layer_num_inputs(l);
    if (*gwr_layer_domain(l) || gwr_layer_num_outputs(l) != 1 || n < 1) return -1;
    if (in_list(unary_ops, op)) return n == 1 ? 0 : -1;
    if (!strcmp(op, "Clip")) {
        for (int i = 1; i < n; i++)
            if (gwr_layer_input(l, i) && !scalar_const(gwr_layer_input(l, i), r)) return -1;
        return 0;
    }
    if (!in_list(binary_ops, op) || n != 2) return -1;
    if (permutable_const(gwr_layer_input(l, 1), r)) return 0;
    if (permutable_const(gwr_layer_input(l, 0), r)) return 1;
    return -1;
}

/* The chain under Transpose l: chain[0..k) from the top down (chain[k-1]
 * reads the inner Transpose, returned). NULL when there is none. */
static gwr_layer *find_chain(gwr_layer *l, gwr_layer **chain, int *slots, int *k, int r) {
    gwr_layer *reader = l;
    gwr_tensor *t = gwr_layer_input(l, 0);
    for (*k = 0; t; ) {
        gwr_layer *p = gwr_tensor_parent(t);
        if (!p || gwr_layer_is_removed(p) || gwr_layer_network(p) != gwr_layer_network(l) || !only_read_by(t, reader))
            return NULL;
        if (gwr_layer_op_id(p) == GWR_OP_Transpose && !*gwr_layer_domain(p)) return *k ? p : NULL;
        int s = *k < MAX_CHAIN ? data_slot(p, r) : -1;
        if (s < 0) return NULL;
        chain[*k] = p, slots[(*k)++] = s;
        reader = p, t = gwr_layer_input(p, s);
    }
    return NULL;
}

/* Constant k as the chain's new layout sees it: left-padded with 1s to
 * rank r, then transposed by p (the outer Transpose's perm). A one-element
 * constant stays as it is. NULL on failure (message on net). */
static gwr_tensor *permuted(gwr_network *net, gwr_tensor *k, int r, const int64_t *p) {
    gwr_match_const m;
    if (!gwr_match_const_get(k, &m)) return NULL;
    if (m.numel == 1) return k;
    int64_t d[GWR_MAX_RANK], od[GWR_MAX_RANK], st[GWR_MAX_RANK], n = m.numel;
    for (int i = 0; i < r; i++) d[i] = i < r - m.rank ? 1 : m.dims[i - (r - m.rank)];
    for (int i = r - 1, s = 1; i >= 0; i--) st[i] = s, s *= (int)d[i];
    for (int j = 0; j < r; j++) od[j] = d[p[j]];
    double *v = gwr_malloc((size_t)n * sizeof *v);
    if (!v) return NULL;
    for (int64_t o = 0; o < n; o++) { /* o's index in od, read at the matching index of d */
        int64_t rest = o, src = 0;
        for (int j = r - 1; j >= 0; j--) {
            int64_t ij = rest % od[j];
            rest /= od[j];
            src += ij * st[p[j]];
        }
        v[o] = gwr_match_const_at(&m, src);
    }
    gwr_tensor *t = gwr_ps_const_new(net, m.dtype, r, od, v, 0);
    gwr_free(v);
    return t;
}

static int push_transpose(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_layer *chain[MAX_CHAIN];
    int slots[MAX_CHAIN], k = 0;
    int r = gwr_tensor_rank(gwr_layer_input(l, 0));
    if (r < 0 || gwr_layer_num_inputs(l) != 1) return gwr_rewrite_no_match(c, "the rank is unknown");
    gwr_layer *t1 = find_chain(l, chain, slots, &k, r);
    if (!t1) return gwr_rewrite_no_match(c, "no lone elementwise chain down to another Transpose");
    gwr_tensor *x = gwr_layer_input(t1, 0);
    int64_t p1[GWR_MAX_RANK], p2[GWR_MAX_RANK], q[GWR_MAX_RANK];
    int n1 = gwr_ps_transpose_perm(t1, gwr_tensor_rank(x), p1), n2 = gwr_ps_transpose_perm(l, r, p2), ident = 1;
    if (n1 < 0 || n2 != n1) return gwr_rewrite_no_match(c, "the perms are unknown or of different ranks");
    for (int j = 0; j < n1; j++) ident &= (q[j] = p1[p2[j]]) == j;
    gwr_network *net = gwr_rewrite_ctx_network(c);
    gwr_tensor *y = ident ? x : gwr_transpose(net, x, n1, q);
    if (!y) return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "composing the perms: %s", gwr_network_errmsg(net));
    /* rebuild the chain bottom up on y */
    for (int i = k - 1; i >= 0; i--) {
        gwr_tensor *in[GWR_MATCH_MAX_INPUTS];
        int nin = gwr_layer_num_inputs(chain[i]);
        if (nin > GWR_MATCH_MAX_INPUTS) return gwr_rewrite_fail(c, GWR_ERR_UNSUPPORTED, "too many inputs");
        for (int j = 0; j < nin; j++) in[j] = j == slots[i] ? y : gwr_layer_input(chain[i], j);
        if (nin == 2 && strcmp(gwr_layer_op(chain[i]), "Clip") &&
            !(in[1 - slots[i]] = permuted(net, in[1 - slots[i]], r, p2)))
            return gwr_rewrite_fail(c, GWR_ERR_NOMEM, "permuting a constant: %s", gwr_last_errmsg());
        gwr_layer *e = gwr_match_clone_layer(chain[i], nin, in);
        if (!e) return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "%s", gwr_last_errmsg());
        y = gwr_layer_output(e, 0);
    }
    gwr_status s = gwr_match_replace_layer(l, 1, &y);
    for (int i = 0; !s && i < k; i++) s = gwr_layer_mark_as_removed(chain[i]);
    if (!s) s = gwr_layer_mark_as_removed(t1);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}

static const char *const transpose_ops[] = {"Transpose", NULL};

const gwr_pattern_rewriter gwr_pattern_push_transpose_through_elementwise = {
    .name = "push_transpose_through_elementwise",
    .root_ops = transpose_ops,
    .match_and_rewrite = push_transpose,
};

/* ---- the pass table's row (pass_table.h) ---- */
#include "passes/pass_table.h"

GWR_PASS(push_transpose_through_elementwise, CLEANUP, .pattern = &gwr_pattern_push_transpose_through_elementwise, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_EXACT,
         .summary = "move a Transpose up through lone elementwise layers (unary, or with a constant, permuted) to "
                    "meet another Transpose: one or none left");
