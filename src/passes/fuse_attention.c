/* fuse_attention.c - attention in two stages (onnxscript's sdpa, then mha),
 * each rooted at what it rewrites, so neither depends on visiting order.
 *
 * fuse_attention, at MatMul(Softmax(mask(s), last axis), v) with
 *   s = MatMul(q [* c], kT [* c]) [* c | / c]  or com.microsoft FusedMatMul(q, kT | k, alpha),
 *   mask: s + M, Where(C, s, fill), Where(C, fill, s) or none; q, v (B, N, S|T, D|Dv), kT (B, N, D, T)
 * makes ONNX Attention(q, k, v, attn_mask; scale) (opset 23, 4-D), k being
 * kT's Transpose with its last two axes swapped back. attn_mask is the mask,
 * exactly, as (B|1, N|1, S, T): a constant written out (one copy per mask,
 * found by name), a computed (.., S, T) one unsqueezed; a Where needs a
 * constant C and a fill <= -1e30 (s + fill rounds to fill; -10000 stays).
 * Below opset 23 it fires only for targets ort and gwr and only on what
 * lower_attention takes; so too when a constant mask lowers a whole row
 * (-inf: NaN unfused, zeros in ONNX Attention; float32's lowest: zeros in
 * onnxruntime's; -1e9: other weights in gwr's double kernel).
 *
 * lower_attention (targets ort and gwr), at that Attention, with
 *   q, k, v = Transpose(Reshape(x [* c], [0|-1|B, 0|-1|S, N, D]) [* c], [0, 2, 1, 3])  (no c on v)
 *   out     = Reshape(Transpose(Attention(q, k, v, M), [0, 2, 1, 3]), [B, S, N * Dv])
 * makes com.microsoft MultiHeadAttention(xq, xk, xv, bias, , M; num_heads, scale);
 * x = Add(MatMul, b), b constant, gives the MatMul and b (zeros for a missing
 * one); outputs 0-2 of one Split of [Add(]MatMul(x, W)[, b)] (merge_qkv's
 * form) give com.microsoft Attention(x, W, b, , , M) for a constant W, else
 * a new Split of the MatMul and b whole. Both: intermediates have one
 * reader and are no network output; one dtype among float, float16 and
 * bfloat16; the scale is finite and > 0.
 *
 * Not a rule file: the mask is rebuilt (broadcast to rank 4, Where turned additive) and the heads'
 * Reshape/Transposes are checked against each other's dims, arithmetic on shapes the language does
 * not have.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gwr/match.h"
#include "gwr/passes.h"
#include "passes/pass_util.h"
#include "util/util.h"

#define MAX_DEAD 32
#define OP(l, id) ((l) && gwr_layer_op_id(l) == GWR_OP_##id)

typedef struct att {
    gwr_network *net;
    gwr_layer *dead[MAX_DEAD], *split, *proj, *root;
    int ndead, where;
    double scale, fill;
    gwr_dtype dt;
    gwr_tensor *scores, *mask, *src[3], *bias[3], *qkv_bias, *split_src;
    int64_t nh, d[3], hidden[3];
} att;

static const int64_t P0213[4] = {0, 2, 1, 3}, P0231[4] = {0, 2, 3, 1};
enum { X, K, SHAPE, S, M, C, F, V, Z, NCAP };

static int kill(att *a, gwr_layer *l) { return a->ndead < MAX_DEAD ? (a->dead[a->ndead++] = l, 1) : 0; }
static int same(gwr_dim x, gwr_dim y) { return x == y && x != GWR_DIM_UNKNOWN; }

/* x * c, x / c: the scales peel() strips */
static const gwr_match_node sc_mul[] = {GWR_M_OP("Mul", GWR_M_CAP(X), GWR_M_CONST(K))};
static const gwr_match_node sc_div[] = {GWR_M_OP("Div", GWR_M_CAP(X), GWR_M_CONST(K))};
static const gwr_match_pattern scales[] = {{"attention.mul", GWR_M_NODES(sc_mul), NULL, NULL},
                                           {"attention.div", GWR_M_NODES(sc_div), NULL, NULL}};

/* c, a finite non-zero scalar constant of a->dt, folds into a->scale. */
static int take_scale(att *a, const gwr_tensor *c, int div, const gwr_tensor *x) {
    double v;
    if (!gwr_match_const_scalar(c, &v) || !isfinite(v) || v == 0 || gwr_tensor_dtype(c) != a->dt ||
        gwr_tensor_rank(c) > gwr_tensor_rank(x))
        return 0;
    return a->scale *= div ? 1.0 / v : v, 1;
}

/* t without the scalar Mul/Div layers (read only by their readers) that made it. */
static gwr_tensor *peel(att *a, gwr_tensor *t) {
    gwr_match m;
    for (gwr_layer *p; (p = gwr_tensor_parent(t)) && gwr_ps_sole_reader(t); t = m.captures[X]) {
        int k = 0;
        while (k < 2 && gwr_match_layer(&scales[k], p, &m) <= 0) k++;
        if (k == 2 || !take_scale(a, m.captures[K], k, m.captures[X]) || !kill(a, p)) break;
    }
    return t;
}

/* ---- fuse_attention ---------------------------------------------------------- */

static int scores_side(const gwr_match *m, int node, void *user);
#define SM(n) {.op = "Softmax", .in = {GWR_M_NODE(n)}}
#define PV(n) GWR_M_OP("MatMul", GWR_M_NODE(n), GWR_M_CAP(V))
static const gwr_match_node c_add[] = {{.op = "Add", .in = {GWR_M_CAP(S), GWR_M_CAP(M)}, .pred = scores_side}, SM(0), PV(1)};
static const gwr_match_node c_keep[] = {{.op = "Where", .in = {GWR_M_CAP(C), GWR_M_CAP(S), GWR_M_CONST(F)}}, SM(0), PV(1)};
static const gwr_match_node c_hide[] = {{.op = "Where", .in = {GWR_M_CAP(C), GWR_M_CONST(F), GWR_M_CAP(S)}}, SM(0), PV(1)};
static const gwr_match_node c_none[] = {{.op = "Softmax", .in = {GWR_M_CAP(S)}}, PV(0)};
/* torch's SDPA export: Where(IsNaN(p), 0, p) zeroes the rows a mask hides whole */
static const gwr_match_node c_add_nan[] = {{.op = "Add", .in = {GWR_M_CAP(S), GWR_M_CAP(M)}, .pred = scores_side}, SM(0),
                                           GWR_M_OP("IsNaN", GWR_M_NODE(1)),
                                           GWR_M_OP("Where", GWR_M_NODE(2), GWR_M_SPLAT(Z, 0.0), GWR_M_NODE(1)), PV(3)};
static const gwr_match_pattern cores[] = {{"attention.add", GWR_M_NODES(c_add), NULL, NULL},
                                          {"attention.where", GWR_M_NODES(c_keep), NULL, NULL},
                                          {"attention.where_hide", GWR_M_NODES(c_hide), NULL, NULL},
                                          {"attention.plain", GWR_M_NODES(c_none), NULL, NULL},
                                          {"attention.add_nan", GWR_M_NODES(c_add_nan), NULL, NULL}};

/* Is t the scores: a MatMul or FusedMatMul, maybe scaled once? */
static int mm_out(gwr_tensor *t) { return OP(gwr_tensor_parent(t), MatMul) || OP(gwr_tensor_parent(t), MS_FusedMatMul); }
static int from_scores(gwr_tensor *t) {
    gwr_layer *p = gwr_tensor_parent(t);
    if (OP(p, Cast)) t = gwr_layer_input(p, 0), p = gwr_tensor_parent(t); /* fp16 exports' upcast scores */
    return mm_out(t) || ((OP(p, Mul) || OP(p, Div)) && (mm_out(gwr_layer_input(p, 0)) || mm_out(gwr_layer_input(p, 1))));
}
static int scores_side(const gwr_match *m, int node, void *user) {
    (void)node, (void)user;
    return from_scores(m->captures[S]) && !from_scores(m->captures[M]);
}

/* The Softmax is over the last axis of its rank-4 input. */
static int softmax_last(gwr_network *net, const gwr_layer *sm) {
    int64_t axis = 0;
    if (gwr_layer_find_attr(sm, "axis") < 0) return gwr_network_opset(net, "") < 0 || gwr_network_opset(net, "") >= 13;
    return !gwr_layer_attr_int(sm, "axis", 0, &axis) && (axis == -1 || axis == 3);
}

/* mask dim i of rank r, right-aligned into 4 dims (1 before it). */
static int64_t mdim(const gwr_match_const *c, int i) { return i < 4 - c->rank ? 1 : c->dims[i - (4 - c->rank)]; }

/* The mask (or the Where's condition) as an exact additive (B|1, N|1, S, T)
 * tensor; NULL with *why when it cannot be (nothing made), or with *err
 * on a failure to build. */
static gwr_tensor *attention_bias(att *a, int *err, const char **why) {
    const gwr_dim *sd = gwr_tensor_dims(a->scores);
    gwr_match_const c;
    int64_t od[4], n = 1;
    if (!gwr_match_const_get(a->mask, &c)) { /* computed: (.., S, T) exactly, of the scores' dtype */
        int r = gwr_tensor_rank(a->mask);
        const gwr_dim *md = gwr_tensor_dims(a->mask);
        if (a->where || r < 2 || r > 4 || gwr_tensor_dtype(a->mask) != a->dt) return *why = "a computed mask of rank < 2", NULL;
        for (int i = 0; i < r; i++)
            if (i >= r - 2 ? !same(md[i], sd[4 - r + i]) : (md[i] != 1 && md[i] != sd[4 - r + i]))
                return *why = "a computed mask that is not (.., S, T)", NULL;
        static const int64_t ax[2] = {0, 1};
        gwr_tensor *u = r == 4 ? a->mask : gwr_unsqueeze(a->net, a->mask, 4 - r, ax);
        return *err = !u, u;
    }
    for (int i = 0; i < 4; i++) {
        od[i] = i < 2 ? mdim(&c, i) : sd[i];
        if (c.rank > 4 || (mdim(&c, i) != 1 && mdim(&c, i) != sd[i]) || od[i] < 0) /* the Add would grow the scores */
            return *why = "the mask does not fit (B|1, N|1, S, T)", NULL;
        n *= od[i];
    }
    if (!a->where && c.dtype != a->dt) return *why = "the mask is not of the scores' dtype", NULL;
    if (!a->where && c.rank == 4 && od[2] == c.dims[2] && od[3] == c.dims[3]) return a->mask;
    /* Every block of a decoder reads the same mask: the first fusion writes
     * it under a name made from the mask's, the others find it there. */
    char name[320];
    snprintf(name, sizeof name, "%s/attention_bias_%lldx%lldx%lldx%lld%s%.17g", gwr_tensor_name(a->mask), (long long)od[0],
             (long long)od[1], (long long)od[2], (long long)od[3], a->where == 1 ? "_keep_" : a->where ? "_hide_" : "",
             a->where ? a->fill : 0.0);
    gwr_tensor *old = gwr_network_find_tensor(a->net, name);
    gwr_match_const oc;
    if (old && gwr_match_const_get(old, &oc) && oc.dtype == a->dt && oc.rank == 4 && !memcmp(oc.dims, od, sizeof od))
        return old;
    double *v = gwr_malloc((size_t)(n + c.numel) * sizeof *v), *src = v ? v + n : NULL;
    if (!v || gwr_match_const_f64(a->mask, src, c.numel, NULL, NULL, NULL)) return gwr_free(v), *err = 1, NULL;
    for (int64_t e = 0; e < n; e++) {
        int64_t idx[4], r = e, si = 0;
        for (int i = 3; i >= 0; i--) idx[i] = r % od[i], r /= od[i];
        for (int i = 0; i < 4; i++) si = si * mdim(&c, i) + (mdim(&c, i) == 1 ? 0 : idx[i]);
        v[e] = !a->where ? src[si] : ((src[si] != 0) == (a->where == 1) ? 0.0 : a->fill);
    }
    gwr_tensor *t = gwr_ps_const_new(a->net, a->dt, 4, od, v, 0);
    gwr_free(v);
    if (!t || (!old && gwr_tensor_set_name(t, name))) *err = 1;
    return t;
}

/* Does the constant mask lower a whole query row (every entry < 0)? */
static int row_hidden(const att *a) {
    gwr_match_const c;
    if (!a->mask || !gwr_match_const_get(a->mask, &c)) return 0;
    int64_t w = c.rank ? c.dims[c.rank - 1] : 1;
    for (int64_t r = 0; w > 0 && r < c.numel; r += w) {
        int all = 1;
        for (int64_t j = 0; all && j < w; j++) {
            double x = gwr_match_const_at(&c, r + j);
            all = a->where ? (x != 0) != (a->where == 1) : x < 0;
        }
        if (all) return 1;
    }
    return 0;
}

/* ---- the head split and merge (lower_attention's; fuse_attention asks it first below opset 23) ---- */

#define RS(from) {.op = "Reshape", .in = {from, GWR_M_CONST(SHAPE)}, .attrs = {GWR_MA_INT_OR_ABSENT("allowzero", 0)}}
#define TR(from) {.op = "Transpose", .in = {from}}
static const gwr_match_node h_plain[] = {RS(GWR_M_CAP(X)), TR(GWR_M_NODE(0))};
static const gwr_match_node h_mul[] = {RS(GWR_M_CAP(X)), GWR_M_OP("Mul", GWR_M_NODE(0), GWR_M_CONST(K)), TR(GWR_M_NODE(1))};
static const gwr_match_node h_div[] = {RS(GWR_M_CAP(X)), GWR_M_OP("Div", GWR_M_NODE(0), GWR_M_CONST(K)), TR(GWR_M_NODE(1))};
static const gwr_match_node h_merge[] = {TR(GWR_M_CAP(X)), RS(GWR_M_NODE(0))};
static const gwr_match_pattern splits[] = {{"attention.heads", GWR_M_NODES(h_plain), NULL, NULL},
                                           {"attention.heads_mul", GWR_M_NODES(h_mul), NULL, NULL},
                                           {"attention.heads_div", GWR_M_NODES(h_div), NULL, NULL}};
static const gwr_match_pattern merge = {"attention.merge", GWR_M_NODES(h_merge), NULL, NULL};

/* A leading dim of a Reshape shape: 0 (copy), -1 (the rest: rest_ok) or x's dim i. */
static int lead_ok(int64_t v, const gwr_tensor *x, int i, int rest_ok) {
    return v == 0 || (v == -1 && rest_ok) || (v > 0 && gwr_tensor_dim(x, i) == v);
}

/* m's Reshape shape (a constant int64 one) into v: its length. */
static int shape_of(const gwr_match *m, int64_t *v, int cap) {
    return gwr_tensor_dtype(m->captures[SHAPE]) == GWR_INT64 ? gwr_match_const_ints(m->captures[SHAPE], v, cap) : -1;
}

/* Source i (q, k, v) of t = Transpose(Reshape(x, [., ., N, D]), perm), a
 * scale in between (q and k only); fills src, nh, d, hidden. */
static int heads(att *a, gwr_tensor *t, int i, const int64_t *perm) {
    gwr_layer *tr = t && gwr_ps_sole_reader(t) ? gwr_tensor_parent(t) : NULL;
    gwr_match m;
    int k = 0, rc = 0;
    int64_t p[GWR_MAX_RANK], s[4];
    while (tr && !rc && k < (i < 2 ? 3 : 1)) rc = gwr_match_layer(&splits[k++], tr, &m);
    if (rc <= 0 || gwr_ps_transpose_perm(tr, 4, p) != 4 || memcmp(p, perm, sizeof P0213)) return 0;
    if (k > 1 && !take_scale(a, m.captures[K], k == 3, gwr_layer_output(m.layers[0], 0))) return 0;
    for (int j = 0; j < m.nlayers; j++)
        if (!kill(a, m.layers[j])) return 0;
    gwr_tensor *x = i < 2 ? peel(a, m.captures[X]) : m.captures[X];
    gwr_dim h = gwr_tensor_dim(x, 2);
    if (shape_of(&m, s, 4) != 4 || s[2] <= 0 || s[3] <= 0 || gwr_tensor_rank(x) != 3 || h != s[2] * s[3]) return 0;
    if (!lead_ok(s[0], x, 0, s[1] != -1) || !lead_ok(s[1], x, 1, s[0] != -1) || (a->nh && a->nh != s[2])) return 0;
    a->nh = s[2], a->d[i] = s[3], a->hidden[i] = h, a->src[i] = x;
    return gwr_tensor_dtype(x) == a->dt;
}

/* The head splits of q, k (its Transpose's perm kperm) and v, and the
 * merge of the attention's output y; NULL or why not. */
static const char *lower_match(att *a, gwr_tensor *const *qkv, const int64_t *kperm, gwr_tensor *y) {
    for (int i = 0; i < 3; i++)
        if (!heads(a, qkv[i], i, i == 1 ? kperm : P0213)) return "q, k or v is not Transpose(Reshape(x, [B, S, N, D]), [0, 2, 1, 3])";
    gwr_layer *tr = gwr_ps_sole_reader(y), *cst = NULL, *rs;
    if (OP(tr, Cast)) cst = tr, tr = gwr_ps_sole_reader(gwr_layer_output(cst, 0)); /* the float16 exports' Cast to float */
    rs = tr ? gwr_ps_sole_reader(gwr_layer_output(tr, 0)) : NULL;
    gwr_match m;
    int64_t p[GWR_MAX_RANK], s3[3];
    if (!rs || gwr_match_layer(&merge, rs, &m) <= 0 || m.captures[X] != y || gwr_ps_transpose_perm(tr, 4, p) != 4 ||
        memcmp(p, P0213, sizeof P0213) || shape_of(&m, s3, 3) != 3 || gwr_tensor_rank(gwr_layer_output(rs, 0)) != 3)
        return "the output is not Reshape(Transpose(., [0, 2, 1, 3]), [B, S, N * Dv])";
    gwr_tensor *q = a->src[0], *k = a->src[1], *v = a->src[2];
    if (s3[2] != a->nh * a->d[2] && !(s3[2] == -1 && s3[0] != -1 && s3[1] != -1)) return "the merge Reshape's hidden size";
    if (!lead_ok(s3[0], q, 0, s3[1] != -1 && s3[2] != -1) || !lead_ok(s3[1], q, 1, s3[0] != -1 && s3[2] != -1))
        return "the merge Reshape does not keep batch and sequence";
    if (gwr_tensor_dim(gwr_layer_output(rs, 0), 2) != a->nh * a->d[2]) return "the result is not (B, S, N * Dv)";
    if (gwr_tensor_dim(k, 0) != gwr_tensor_dim(q, 0) || gwr_tensor_dim(v, 0) != gwr_tensor_dim(q, 0) ||
        gwr_tensor_dim(k, 1) != gwr_tensor_dim(v, 1) || a->d[0] != a->d[1])
        return "q, k, v are not (B, S, N D), (B, T, N D), (B, T, N Dv)";
    a->root = rs;
    return kill(a, tr) ? NULL : "too many layers";
}

/* ---- the KV-cache form (fuse_attention) ---------------------------------------- */

/* K and V of a decoder with a cache: present = Concat(past, new, axis -2),
 * read through HF's repeat_kv for grouped-query attention. */
typedef struct kvc {
    gwr_layer *cat[2];
    gwr_tensor *past[2], *cur[2];
    int64_t qh, kvh;
} kvc;

static int known_ne(gwr_dim x, gwr_dim y) { return GWR_DIM_IS_KNOWN(x) && GWR_DIM_IS_KNOWN(y) && x != y; }

#define WALK 512
/* Do the producers of t reach one of the n layers ls? Yes too when the
 * walk passes WALK layers (no proof). */
static int reaches(const gwr_tensor *t, gwr_layer *const *ls, int n) {
    gwr_layer *seen[WALK], *stack[WALK], *p = gwr_tensor_parent(t);
    int ns = 0, nst = 0;
    if (p) stack[nst++] = p;
    while (nst) {
        gwr_layer *l = stack[--nst];
        int dup = 0;
        for (int i = 0; i < n; i++)
            if (l == ls[i]) return 1;
        for (int i = 0; i < ns && !dup; i++) dup = seen[i] == l;
        if (dup) continue;
        if (ns == WALK) return 1;
        seen[ns++] = l;
        for (int i = 0; i < gwr_layer_num_inputs(l); i++) {
            gwr_tensor *x = gwr_layer_input(l, i);
            if (!x || !gwr_tensor_parent(x)) continue;
            if (nst == WALK) return 1;
            stack[nst++] = gwr_tensor_parent(x);
        }
    }
    return 0;
}

/* The one integer rank-2 graph input (attention_mask) whose values the
 * producers of t read (not through Shape: input_ids's shape is read), or
 * NULL (none, several, or the walk too long). */
static gwr_tensor *mask_input(const gwr_tensor *t) {
    gwr_layer *seen[WALK], *stack[WALK], *p = gwr_tensor_parent(t);
    gwr_tensor *found = NULL;
    int ns = 0, nst = 0;
    if (p) stack[nst++] = p;
    while (nst) {
        gwr_layer *l = stack[--nst];
        int dup = 0;
        for (int i = 0; i < ns && !dup; i++) dup = seen[i] == l;
        if (dup) continue;
        if (ns == WALK) return NULL;
        seen[ns++] = l;
        for (int i = 0; !OP(l, Shape) && i < gwr_layer_num_inputs(l); i++) { /* a Shape reads no value */
            gwr_tensor *x = gwr_layer_input(l, i);
            gwr_dtype dt = x ? gwr_tensor_dtype(x) : GWR_FLOAT32;
            if (x && gwr_tensor_is_input(x) && gwr_tensor_rank(x) == 2 && (dt == GWR_INT64 || dt == GWR_INT32)) {
                if (found && found != x) return NULL;
                found = x;
            }
            if (!x || !gwr_tensor_parent(x)) continue;
            if (nst == WALK) return NULL;
            stack[nst++] = gwr_tensor_parent(x);
        }
    }
    return found;
}

/* Is Unsqueeze u's axes [2] (of the rank-5 result)? */
static int unsq_axis2(const gwr_layer *u) {
    int64_t v[2];
    const int64_t *av = NULL;
    int64_t n = 0;
    if (gwr_layer_num_inputs(u) == 2) n = gwr_match_const_ints(gwr_layer_input(u, 1), v, 2), av = v;
    else if (gwr_layer_attr_ints(u, "axes", &av, &n)) n = 0;
    return n == 1 && (av[0] == 2 || av[0] == -3);
}

/* Is t read by one live layer besides Shape layers (the exporters read
 * repeat_kv's result's shape to cut the mask) and no network output? */
static int one_reader_but_shapes(const gwr_tensor *t) {
    int n = 0;
    for (int64_t i = 0; i < gwr_tensor_num_users(t); i++) {
        gwr_layer *u = gwr_tensor_user(t, i, NULL);
        if (u && !gwr_layer_is_removed(u) && !OP(u, Shape)) n++;
    }
    return n == 1 && gwr_tensor_output_index(t) < 0;
}

/* t (B, qh, T, D) = HF's repeat_kv of x (B, kvh, T, D): Reshape(Expand(
 * Unsqueeze(x, [2]), [B, kvh, qh / kvh, T, D]), [B, qh, T, D]); x. t
 * itself when it has qh heads already, or 1 (the MatMuls broadcast it: one
 * kv head for all); NULL else. The Expand's and
 * Reshape's shapes are computed (from Shape(x)); the ranks and head counts
 * are checked: head h reads kv head h / (qh / kvh), as Attention's grouping
 * does. The three layers are left to the final prune: the mask's cut reads
 * Shape(t) until cache_mask drops it. */
static gwr_tensor *unrepeat(gwr_tensor *t, int64_t qh, int64_t *kvh) {
    gwr_layer *rs = gwr_tensor_parent(t), *ex = NULL, *un = NULL;
    gwr_tensor *e = OP(rs, Reshape) && one_reader_but_shapes(t) ? gwr_layer_input(rs, 0) : NULL, *u = NULL, *x;
    if (e && OP(ex = gwr_tensor_parent(e), Expand) && one_reader_but_shapes(e)) u = gwr_layer_input(ex, 0);
    if (u && OP(un = gwr_tensor_parent(u), Unsqueeze) && one_reader_but_shapes(u) && unsq_axis2(un)) {
        x = gwr_layer_input(un, 0);
        *kvh = gwr_tensor_dim(x, 1);
        gwr_dim sd = gwr_tensor_dim(gwr_layer_input(ex, 1), 0);
        if (gwr_tensor_rank(x) != 4 || gwr_tensor_rank(t) != 4 || *kvh <= 0 || qh % *kvh || known_ne(sd, 5) ||
            known_ne(gwr_tensor_dim(t, 1), qh) || known_ne(gwr_tensor_dim(t, 3), gwr_tensor_dim(x, 3)))
            return NULL;
        return x;
    }
    *kvh = gwr_tensor_dim(t, 1); /* no repeat: qh heads, or 1 the scores' MatMul broadcasts */
    return *kvh == qh || *kvh == 1 ? t : NULL;
}

/* x = Concat(past, new) over axis 2 of rank 4 (-2): side i of *kc. */
static int cache_side(att *a, gwr_tensor *x, int i, kvc *kc) {
    gwr_layer *cat = gwr_tensor_parent(x);
    int64_t axis = 0;
    if (!OP(cat, Concat) || gwr_layer_num_inputs(cat) != 2 || gwr_layer_attr_int(cat, "axis", 0, &axis) ||
        (axis != -2 && axis != 2))
        return 0;
    gwr_tensor *p = gwr_layer_input(cat, 0), *n = gwr_layer_input(cat, 1);
    if (gwr_tensor_rank(p) != 4 || gwr_tensor_rank(n) != 4 || gwr_tensor_dtype(p) != a->dt || gwr_tensor_dtype(n) != a->dt ||
        gwr_tensor_dim(p, 1) != kc->kvh || gwr_tensor_dim(n, 1) != kc->kvh || known_ne(gwr_tensor_dim(p, 3), gwr_tensor_dim(n, 3)))
        return 0;
    kc->cat[i] = cat, kc->past[i] = p, kc->cur[i] = n;
    return 1;
}

/* k (B, N, T, D) and v (B, N, T, Dv) as the cache form; the repeat layers
 * killed. 0 (nothing killed) when not. */
static int cache_form(att *a, gwr_tensor *q, gwr_tensor *k, gwr_tensor *v, kvc *kc) {
    int nd = a->ndead;
    int64_t kvh[2] = {0, 0};
    kc->qh = gwr_tensor_dim(q, 1);
    gwr_tensor *xk = kc->qh > 0 ? unrepeat(k, kc->qh, &kvh[0]) : NULL, *xv = xk ? unrepeat(v, kc->qh, &kvh[1]) : NULL;
    kc->kvh = kvh[0];
    if (!xv || kvh[0] != kvh[1] || !cache_side(a, xk, 0, kc) || !cache_side(a, xv, 1, kc) || kc->cat[0] == kc->cat[1] ||
        known_ne(gwr_tensor_dim(q, 3), gwr_tensor_dim(kc->cur[0], 3)))
        return a->ndead = nd, 0;
    return 1;
}

/* The cache form's attn_mask: the model's mask M, shared by the blocks.
 * The exporters add Where(M, 0, fill) (fill <= -1e30: M itself, bool, true
 * keeps) or an additive M, each cut by Slice(M, 0, T) on the last axis to
 * the key length: the cut is dropped, its end being computed from the
 * present (which the Attention now makes); the exporters build M with the
 * P + L columns Attention needs (onnxruntime and gwr refuse another width).
 * NULL with *why when not (nothing killed). */
static gwr_tensor *cache_mask(att *a, const kvc *kc, const gwr_tensor *q, const char **why) {
    gwr_tensor *t = a->mask;
    gwr_layer *w = gwr_tensor_parent(t), *sl;
    int nd = a->ndead;
    double z, fill;
    if (OP(w, Where) && gwr_ps_sole_reader(t) && gwr_tensor_dtype(gwr_layer_input(w, 0)) == GWR_BOOL &&
        gwr_match_const_scalar(gwr_layer_input(w, 1), &z) && z == 0 && gwr_match_const_scalar(gwr_layer_input(w, 2), &fill) &&
        fill <= -1e30 && kill(a, w))
        t = gwr_layer_input(w, 0);
    else if (gwr_tensor_dtype(t) != a->dt)
        return *why = "the mask is neither Where(M, 0, -inf) of a bool M nor of the scores' dtype", NULL;
    int64_t st[2], ax[2], sp[2];
    int r = gwr_tensor_rank(t);
    sl = gwr_tensor_parent(t);
    if (OP(sl, Slice) && gwr_ps_sole_reader(t) && gwr_layer_num_inputs(sl) >= 4 &&
        gwr_match_const_ints(gwr_layer_input(sl, 1), st, 2) == 1 && st[0] == 0 &&
        gwr_match_const_ints(gwr_layer_input(sl, 3), ax, 2) == 1 && (ax[0] == -1 || ax[0] == r - 1) &&
        (gwr_layer_num_inputs(sl) < 5 || !gwr_layer_input(sl, 4) || (gwr_match_const_ints(gwr_layer_input(sl, 4), sp, 2) == 1 && sp[0] == 1)) &&
        kill(a, sl))
        t = gwr_layer_input(sl, 0);
    const gwr_dim *md = gwr_tensor_dims(t), *qd = gwr_tensor_dims(q);
    if (r != 4 || !md || gwr_tensor_rank(t) != 4) return a->ndead = nd, *why = "the mask is not of rank 4", NULL;
    if ((md[0] != 1 && known_ne(md[0], qd[0])) || (md[1] != 1 && known_ne(md[1], kc->qh)) || (md[2] != 1 && known_ne(md[2], qd[2])))
        return a->ndead = nd, *why = "the mask does not broadcast to (B, qh, S, P + L)", NULL;
    if (reaches(t, kc->cat, 2)) return a->ndead = nd, *why = "the mask depends on the present K/V", NULL;
    return t;
}

/* onnxruntime's RotaryEmbedding (com.microsoft: fuse_rotary's form for target ort below opset 23)
 * has no shape rule here: its output, of x's type as the op keeps the shape, is left unknown,
 * and so is what reads it. Gives t (such an output) x's type and re-infers the layers below
 * whose first output is still unknown, a few levels deep (the present's Concat, repeat_kv). */
static void type_rotary(gwr_tensor *t, int depth) {
    gwr_layer *r = gwr_tensor_parent(t);
    if (!depth) {
        gwr_tensor *x = gwr_match_is_op(r, "com.microsoft::RotaryEmbedding") ? gwr_layer_input(r, 0) : NULL;
        if (gwr_tensor_rank(t) >= 0 || !x || gwr_tensor_rank(x) < 0 ||
            gwr_tensor_set_type(t, gwr_tensor_dtype(x), gwr_tensor_rank(x), gwr_tensor_dims(x)))
            return;
    }
    for (int64_t i = 0; depth < 6 && i < gwr_tensor_num_users(t); i++) {
        gwr_layer *u = gwr_tensor_user(t, i, NULL);
        if (!u || gwr_layer_is_removed(u) || gwr_tensor_rank(gwr_layer_output(u, 0)) >= 0 || gwr_layer_infer(u)) continue;
        for (int o = 0; o < gwr_layer_num_outputs(u); o++) type_rotary(gwr_layer_output(u, o), depth + 1);
    }
}

/* type_rotary for q and for the new k under k = [repeat_kv(]Concat(past, new)[)]. */
static void type_rotaries(gwr_tensor *q, gwr_tensor *k) {
    type_rotary(q, 0);
    for (int i = 0; i < 3 && (OP(gwr_tensor_parent(k), Reshape) || OP(gwr_tensor_parent(k), Expand) || OP(gwr_tensor_parent(k), Unsqueeze)); i++)
        k = gwr_layer_input(gwr_tensor_parent(k), 0);
    if (OP(gwr_tensor_parent(k), Concat) && gwr_layer_num_inputs(gwr_tensor_parent(k)) == 2)
        type_rotary(gwr_layer_input(gwr_tensor_parent(k), 1), 0);
}

static int fuse_cached(gwr_rewrite_ctx *c, const gwr_match *m, att *a, gwr_tensor *q, kvc *kc, int ort_only, int half);

/* ---- fuse_attention ---------------------------------------------------------- */

static const gwr_match_node s_mm[] = {GWR_M_OP("MatMul", GWR_M_CAP(X), GWR_M_CAP(K))};
static const gwr_match_node s_fmm[] = {{.op = "com.microsoft::FusedMatMul",
                                        .in = {GWR_M_CAP(X), GWR_M_CAP(K)},
                                        .attrs = {GWR_MA_INT_OR_ABSENT("transA", 0), GWR_MA_INT_OR_ABSENT("transBatchA", 0),
                                                  GWR_MA_INT_OR_ABSENT("transBatchB", 0)}}};
static const gwr_match_pattern qk[] = {{"attention.scores", GWR_M_NODES(s_mm), NULL, NULL},
                                       {"attention.fused_scores", GWR_M_NODES(s_fmm), NULL, NULL}};

static int fuse(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    int64_t opset = gwr_network_opset(net, ""), tb = 0, p[GWR_MAX_RANK] = {0, 1, 3, 2};
    int old = opset >= 0 && opset < 23, lower = !!(gwr_ps_target(c) & (GWR_TARGET_ORT | GWR_TARGET_GWR)), k = 0, rc = 0;
    if (old && !lower) return gwr_rewrite_no_match(c, "ONNX Attention needs opset 23 (target onnx)");
    gwr_match m, sm;
    while (!rc && k < 5)
        if ((rc = gwr_match_layer(&cores[k++], l, &m)) < 0) return gwr_rewrite_fail(c, (gwr_status)-rc, "%s", gwr_last_errmsg());
    if (!rc) return gwr_rewrite_no_match(c, "not MatMul(Softmax(scores [+ mask]), v)");
    gwr_layer *soft = m.layers[k == 5 ? 1 : m.nlayers - 2];
    att a = {.net = net, .scale = 1, .where = k == 2 ? 1 : k == 3 ? 2 : 0, .mask = m.captures[k == 1 || k == 5 ? M : C],
             .dt = gwr_tensor_dtype(gwr_layer_input(soft, 0))};
    if (!softmax_last(net, soft)) return gwr_rewrite_no_match(c, "the Softmax is not over the last axis");
    if (a.dt != GWR_FLOAT32 && a.dt != GWR_FLOAT16 && a.dt != GWR_BFLOAT16) return gwr_rewrite_no_match(c, "not float, float16 or bfloat16");
    gwr_match_const cc;
    if (a.where && (!gwr_match_const_scalar(m.captures[F], &a.fill) || !(a.fill <= -1e30) || gwr_tensor_dtype(a.mask) != GWR_BOOL ||
                    gwr_tensor_dtype(m.captures[F]) != a.dt || !gwr_match_const_get(a.mask, &cc)))
        return gwr_rewrite_no_match(c, "a Where mask needs a constant condition and a fill <= -1e30");
    /* float16 exports: Softmax in float over Cast(q k^T) and Cast(v), both float16 (the cache form only) */
    gwr_tensor *s0 = m.captures[S], *v0 = m.captures[V];
    gwr_layer *up = gwr_tensor_parent(s0), *vup = gwr_tensor_parent(v0);
    int half = OP(up, Cast) && a.dt == GWR_FLOAT32 && gwr_ps_sole_reader(s0) && gwr_tensor_dtype(gwr_layer_input(up, 0)) == GWR_FLOAT16 &&
               OP(vup, Cast) && gwr_ps_sole_reader(v0) && gwr_tensor_dtype(gwr_layer_input(vup, 0)) == GWR_FLOAT16 && kill(&a, up) &&
               kill(&a, vup);
    if (half) s0 = gwr_layer_input(up, 0), v0 = gwr_layer_input(vup, 0), a.dt = GWR_FLOAT16;
    gwr_tensor *s = a.scores = peel(&a, s0);
    gwr_layer *mm = gwr_ps_sole_reader(s) ? gwr_tensor_parent(s) : NULL;
    float alpha = 1;
    rc = mm && gwr_match_layer(&qk[0], mm, &sm) > 0 ? 1 : mm && gwr_match_layer(&qk[1], mm, &sm) > 0 ? 2 : 0;
    if (rc == 2) gwr_layer_attr_int(mm, "transB", 0, &tb), gwr_layer_attr_float(mm, "alpha", 1.0f, &alpha);
    if (!rc || (tb != 0 && tb != 1) || !isfinite(alpha) || alpha == 0 || !kill(&a, mm))
        return gwr_rewrite_no_match(c, "no q k^T scores (scaled by constants)");
    a.scale *= alpha;
    /* k: kT's Transpose with its last two axes swapped back (none left when they cancel) */
    gwr_tensor *q = peel(&a, sm.captures[X]), *kt = peel(&a, sm.captures[K]), *v = v0, *kk = kt, *kb = tb ? kt : NULL;
    gwr_layer *kl = gwr_tensor_parent(kt);
    const int64_t *kperm = P0213;
    int newk = !tb;
    if (!tb && OP(kl, Transpose) && gwr_ps_sole_reader(kt) && gwr_ps_transpose_perm(kl, 4, p) == 4 && kill(&a, kl)) {
        int64_t t = p[2];
        p[2] = p[3], p[3] = t, kk = gwr_layer_input(kl, 0);
        if (p[0] == 0 && p[1] == 1 && p[2] == 2) kk = kb = peel(&a, kk), newk = 0;
        else if (!memcmp(p, P0213, sizeof P0213)) kb = kt, kperm = P0231;
    } else if (!tb) {
        p[0] = 0, p[1] = 1, p[2] = 3, p[3] = 2;
    }
    kvc kc = {0};
    if (!newk && kk == kb) type_rotaries(q, kk);
    if (!newk && kk == kb && gwr_tensor_rank(q) == 4 && gwr_tensor_rank(kk) == 4 && gwr_tensor_rank(v) == 4 &&
        gwr_tensor_dtype(q) == a.dt && cache_form(&a, q, kk, v, &kc))
        return fuse_cached(c, &m, &a, q, &kc, old && !(gwr_ps_target(c) & GWR_TARGET_GWR), half);
    if (half) return gwr_rewrite_no_match(c, "float16 scores upcast to float: only the KV-cache form is taken");
    const gwr_dim *qd = gwr_tensor_dims(q), *kd = gwr_tensor_dims(kt), *vd = gwr_tensor_dims(v);
    if (gwr_tensor_rank(q) != 4 || gwr_tensor_rank(kt) != 4 || gwr_tensor_rank(v) != 4 || gwr_tensor_rank(s) != 4)
        return gwr_rewrite_no_match(c, "q, k, v or the scores not of rank 4");
    if (qd[0] != kd[0] || qd[0] != vd[0] || !same(qd[1], kd[1]) || !same(qd[1], vd[1]) || !same(qd[3], kd[tb ? 3 : 2]) ||
        kd[tb ? 2 : 3] != vd[2] || gwr_tensor_dtype(q) != a.dt || gwr_tensor_dtype(kt) != a.dt || gwr_tensor_dtype(v) != a.dt)
        return gwr_rewrite_no_match(c, "q, k, v are not (B, N, S, D), (B, N, D, T), (B, N, T, Dv) of one dtype");
    att b = {.net = net, .scale = a.scale, .dt = a.dt};
    gwr_tensor *qkv[3] = {q, kb, v};
    const char *why = (old || row_hidden(&a)) ? !lower ? "the mask hides a whole row (target onnx)"
                                                        : lower_match(&b, qkv, kperm, gwr_layer_output(l, 0)) : NULL;
    if (why || !(a.scale > 0) || !(b.scale > 0) || !isfinite(b.scale))
        return gwr_rewrite_no_match(c, "%s (below opset 23 or with such a mask, only what lower_attention takes)", why ? why : "the scale is not > 0");
    int err = 0;
    gwr_tensor *ab = a.mask ? attention_bias(&a, &err, &why) : NULL, *in[4] = {q, kk, v, ab}, *y = NULL;
    if (!err && a.mask && !ab) return gwr_rewrite_no_match(c, "%s", why);
    gwr_args *at = err ? NULL : gwr_args_new();
    if (at && !gwr_args_set_float(at, "scale", (float)a.scale) && (!newk || (in[1] = gwr_transpose(net, kk, 4, p))))
        gwr_op_call(net, "", "Attention", ab ? 4 : 3, in, at, 1, &y);
    gwr_args_free(at);
    if (!y) return gwr_rewrite_fail(c, GWR_ERR_NOMEM, "fuse_attention: %s", gwr_network_errmsg(net));
    gwr_status st = gwr_match_replace(&m, 1, &y);
    for (int i = 0; !st && i < a.ndead; i++) st = gwr_layer_mark_as_removed(a.dead[i]);
    return st ? gwr_rewrite_fail(c, st, "%s", gwr_last_errmsg()) : 1;
}

/* The cache form: Attention(q, k_new, v_new, M, past_key, past_value) ->
 * Y, present_key, present_value (the Concats' tensors: network outputs keep
 * their names); q_num_heads, kv_num_heads; scale when not 1/sqrt(D). Below
 * opset 23 for target ort only where lower_attention makes it
 * GroupQueryAttention (ort_only). half: the model upcast float16 scores and
 * v to float for the Softmax; the Attention is float16 (its kernels
 * accumulate and take the softmax in float) and Y is cast to float. */
static int fuse_cached(gwr_rewrite_ctx *c, const gwr_match *m, att *a, gwr_tensor *q, kvc *kc, int ort_only, int half) {
    const char *why = NULL;
    gwr_tensor *am = a->mask ? cache_mask(a, kc, q, &why) : NULL;
    if (a->mask && !am) return gwr_rewrite_no_match(c, "%s", why);
    if (!(a->scale > 0) || !isfinite(a->scale)) return gwr_rewrite_no_match(c, "the scale is not finite and > 0");
    gwr_dim hd = gwr_tensor_dim(q, 3);
    if (ort_only && (!am || !mask_input(am) || (a->dt != GWR_FLOAT32 && a->dt != GWR_FLOAT16) || hd <= 0 ||
                     gwr_tensor_dim(kc->cur[0], 3) != hd || gwr_tensor_dim(kc->cur[1], 3) != hd || gwr_tensor_dim(kc->cur[1], 1) != kc->kvh))
        return gwr_rewrite_no_match(c, "below opset 23, target ort: GroupQueryAttention needs the model's mask "
                                       "(from an integer attention_mask input), float or float16, and one known head size");
    gwr_tensor *in[6] = {q, kc->cur[0], kc->cur[1], am, kc->past[0], kc->past[1]}, *out[3] = {NULL, NULL, NULL};
    gwr_dim d = gwr_tensor_dim(q, 3);
    gwr_args *at = gwr_args_new();
    if (at && !gwr_args_set_int(at, "q_num_heads", kc->qh) && !gwr_args_set_int(at, "kv_num_heads", kc->kvh) &&
        (d > 0 && (float)a->scale == (float)(1.0 / sqrt((double)d)) ? 1 : !gwr_args_set_float(at, "scale", (float)a->scale)))
        gwr_op_call(a->net, "", "Attention", 6, in, at, 3, out);
    gwr_args_free(at);
    gwr_tensor *y = half && out[2] ? gwr_cast(a->net, out[0], GWR_FLOAT32) : out[0];
    if (!out[2] || !y) return gwr_rewrite_fail(c, GWR_ERR_NOMEM, "fuse_attention: %s", gwr_network_errmsg(a->net));
    gwr_status st = gwr_match_replace_layer(kc->cat[0], 1, &out[1]);
    if (!st) st = gwr_match_replace_layer(kc->cat[1], 1, &out[2]);
    if (!st) st = gwr_match_replace(m, 1, &y);
    for (int i = 0; !st && i < a->ndead; i++) st = gwr_layer_mark_as_removed(a->dead[i]);
    return st ? gwr_rewrite_fail(c, st, "%s", gwr_last_errmsg()) : 1;
}

static const char *const fuse_roots[] = {"MatMul", NULL};

const gwr_pattern_rewriter gwr_pattern_fuse_attention = {
    .name = "fuse_attention",
    .root_ops = fuse_roots,
    .match_and_rewrite = fuse,
};

/* ---- lower_attention ------------------------------------------------------- */

/* The MatMul under t = Add(MatMul, b), b a constant of n elements (leading
 * dims 1) in a->dt, t read by one layer; b into *b. NULL when not. */
static gwr_tensor *strip_bias(att *a, gwr_tensor *t, int64_t n, gwr_tensor **b) {
    gwr_layer *p = gwr_tensor_parent(t);
    gwr_match_const c;
    for (int side = 0; OP(p, Add) && gwr_ps_sole_reader(t) && side < 2; side++) {
        gwr_tensor *x = gwr_layer_input(p, side), *y = gwr_layer_input(p, 1 - side);
        if (OP(gwr_tensor_parent(x), MatMul) && gwr_match_const_get(y, &c) && c.dtype == a->dt && c.numel == n &&
            c.rank >= 1 && c.rank <= 3 && c.dims[c.rank - 1] == n && gwr_tensor_rank(x) == 3 && kill(a, p))
            return *b = y, x;
    }
    return NULL;
}

/* The Split form: q, k, v are outputs 0, 1, 2 of one Split over the last
 * axis of [Add(]MatMul[, b)], read only by the head Reshapes; else each
 * of q, k, v = Add(MatMul, b) gives its MatMul. */
static void biases(att *a) {
    gwr_layer *sp = gwr_tensor_parent(a->src[0]);
    int64_t axis = 0, w = 2 * a->hidden[0] + a->hidden[2];
    int ok = OP(sp, Split) && gwr_layer_num_outputs(sp) == 3 && !gwr_layer_attr_int(sp, "axis", 0, &axis) && (axis == -1 || axis == 2);
    for (int i = 0; ok && i < 3; i++)
        ok = gwr_tensor_parent(a->src[i]) == sp && gwr_tensor_parent_output_index(a->src[i]) == i && gwr_ps_sole_reader(a->src[i]);
    gwr_tensor *b = NULL, *in = ok ? gwr_layer_input(sp, 0) : NULL, *m = in ? strip_bias(a, in, w, &b) : NULL;
    gwr_layer *mm = (m = m ? m : in) ? gwr_tensor_parent(m) : NULL;
    gwr_tensor *x = OP(mm, MatMul) ? gwr_layer_input(mm, 0) : NULL;
    gwr_match_const wc;
    int proj = x && gwr_ps_sole_reader(m) && gwr_tensor_rank(x) == 3 && gwr_tensor_dtype(x) == a->dt &&
               gwr_match_const_get(gwr_layer_input(mm, 1), &wc) && wc.rank == 2 && wc.dtype == a->dt && wc.dims[1] == w;
    if (ok && (b || proj) && kill(a, sp) && (!proj || kill(a, mm)))
        a->split = sp, a->split_src = m, a->qkv_bias = b, a->proj = proj ? mm : NULL;
    for (int i = 0; !ok && i < 3; i++) {
        gwr_tensor *mi = strip_bias(a, a->src[i], a->hidden[i], &a->bias[i]);
        if (mi) a->src[i] = mi;
    }
}

/* q, k, v's biases as one constant (zeros for a missing one); NULL for
 * none, or with *err on a failure. */
static gwr_tensor *packed_bias(att *a, int *err) {
    if (a->qkv_bias || (!a->bias[0] && !a->bias[1] && !a->bias[2])) return a->qkv_bias;
    int64_t n = 2 * a->hidden[0] + a->hidden[2], off = 0;
    double *v = gwr_calloc((size_t)n, sizeof *v);
    for (int i = 0; v && i < 3; off += a->hidden[i], i++)
        if (a->bias[i] && gwr_match_const_f64(a->bias[i], v + off, a->hidden[i], NULL, NULL, NULL)) *err = 1;
    gwr_tensor *t = v && !*err ? gwr_ps_const_new(a->net, a->dt, 1, &n, v, 0) : NULL;
    gwr_free(v);
    return *err = !t, t;
}

/* com.microsoft Attention(x, W, bias, , , ab) for the Split form with its
 * projection (a bias always: onnxruntime's CPU kernel requires it), else
 * MultiHeadAttention(q, k, v, bias, , ab); its output or NULL. */
static gwr_tensor *build(att *a, gwr_tensor *ab) {
    int err = 0;
    int64_t w = 2 * a->hidden[0] + a->hidden[2], sizes[3] = {a->hidden[0], a->hidden[1], a->hidden[2]};
    gwr_tensor *bias = packed_bias(a, &err), *y = NULL;
    if (!err && !bias && a->proj) bias = gwr_ps_const_new(a->net, a->dt, 1, &w, NULL, 0.0);
    gwr_layer *sp = a->split && !a->proj ? gwr_match_clone_layer(a->split, gwr_layer_num_inputs(a->split),
                                                                  (gwr_tensor *[2]){a->split_src, gwr_layer_input(a->split, 1)}) : NULL;
    gwr_tensor *in[6] = {sp ? gwr_layer_output(sp, 0) : a->src[0], sp ? gwr_layer_output(sp, 1) : a->src[1],
                         sp ? gwr_layer_output(sp, 2) : a->src[2], bias, NULL, ab};
    if (a->proj) in[0] = gwr_layer_input(a->proj, 0), in[1] = gwr_layer_input(a->proj, 1), in[2] = bias, in[3] = NULL;
    gwr_args *at = err || (a->proj && !bias) || (a->split && !a->proj && !sp) ? NULL : gwr_args_new();
    if (at && !gwr_args_set_int(at, "num_heads", a->nh) && !gwr_args_set_float(at, "scale", (float)a->scale) &&
        (!a->proj || a->hidden[2] == a->hidden[0] || !gwr_args_set_ints(at, "qkv_hidden_sizes", 3, sizes)))
        gwr_op_call(a->net, "com.microsoft", a->proj ? "Attention" : "MultiHeadAttention",
                    ab ? 6 : a->proj ? 3 : bias ? 4 : 3, in, at, 1, &y);
    gwr_args_free(at);
    return y;
}

static const gwr_match_node l_att[] = {{.op = "Attention",
                                        .in = {GWR_M_CAP(X), GWR_M_CAP(K), GWR_M_CAP(V), GWR_M_OPT_CAP(M)},
                                        .attrs = {GWR_MA_INT_OR_ABSENT("is_causal", 0), GWR_MA_FLOAT_OR_ABSENT("softcap", 0, 0),
                                                  GWR_MA_INT_OR_ABSENT("qk_matmul_output_mode", 0), GWR_MA_ABSENT("q_num_heads")}}};
static const gwr_match_pattern l_pat = {"attention.lower", GWR_M_NODES(l_att), NULL, NULL};

/* ---- lower_attention: the cache form to com.microsoft GroupQueryAttention (target ort) ---- */

/* Is l a rotary embedding over the whole of its input 0 that can move to
 * the (B, S, N * D) side: ONNX RotaryEmbedding (x, cos, sin: no
 * position_ids) or com.microsoft's (x, position_ids, cos, sin), no
 * num_heads yet? 1 ONNX, 2 com.microsoft. */
static int rotary_kind(const gwr_layer *l) {
    int64_t nh = 0;
    int k = OP(l, RotaryEmbedding) && gwr_layer_num_inputs(l) == 3 ? 1 : gwr_match_is_op(l, "com.microsoft::RotaryEmbedding") &&
                                                                            gwr_layer_num_inputs(l) == 4 ? 2 : 0;
    return k && !gwr_layer_attr_int(l, "num_heads", 0, &nh) && nh == 0 ? k : 0;
}

/* t (B, N, S, D) as (B, S, N * D): x of t = Transpose(Reshape(x, [B|0|-1, S|0|-1, N|-1, D]), [0, 2, 1, 3]);
 * a rotary embedding of that (rotary_kind) moved onto x with num_heads (both
 * runtimes take the 3-D form: opset 23's and onnxruntime's contrib op);
 * else Reshape(Transpose(t, [0, 2, 1, 3]), [0, 0, N * D]). NULL on a
 * failure to build. Shape layers may read the head split and the rotary
 * (dead ones the exporters' rotate-half left): the layers are left to the
 * final prune, which drops them unless such a Shape is live. */
static gwr_tensor *bsh(att *a, gwr_tensor *t, int64_t nh, int64_t d) {
    gwr_layer *rot = gwr_tensor_parent(t), *tr;
    int rk = one_reader_but_shapes(t) ? rotary_kind(rot) : 0;
    gwr_tensor *h = rk ? gwr_layer_input(rot, 0) : t;
    int64_t p[GWR_MAX_RANK], s[4];
    gwr_match m;
    tr = one_reader_but_shapes(h) ? gwr_tensor_parent(h) : NULL;
    gwr_tensor *x = NULL;
    if (tr && gwr_match_layer(&splits[0], tr, &m) > 0 && gwr_ps_transpose_perm(tr, 4, p) == 4 && !memcmp(p, P0213, sizeof P0213) &&
        shape_of(&m, s, 4) == 4 && s[3] == d && gwr_tensor_rank(m.captures[X]) == 3 &&
        !known_ne(gwr_tensor_dim(m.captures[X], 2), nh * d) && (s[2] == nh || (s[2] == -1 && s[0] != -1 && s[1] != -1)) &&
        lead_ok(s[0], m.captures[X], 0, s[1] != -1 && s[2] != -1) && lead_ok(s[1], m.captures[X], 1, s[0] != -1 && s[2] != -1))
        x = m.captures[X];
    if (!x) {
        static const int64_t back[3] = {0, 0, -1};
        x = gwr_reshape(a->net, gwr_transpose(a->net, h, 4, P0213), 3, back);
        if (!x) return NULL;
    }
    if (!rk) return x;
    gwr_args *at = gwr_args_new();
    gwr_tensor *in[4] = {x, gwr_layer_input(rot, 1), gwr_layer_input(rot, 2), rk == 2 ? gwr_layer_input(rot, 3) : NULL}, *y = NULL;
    static const char *const ints[3] = {"interleaved", "rotary_embedding_dim", "is_packed_batching"};
    int64_t v;
    float f;
    int ok = at && !gwr_args_set_int(at, "num_heads", nh);
    for (int i = 0; ok && i < 3; i++)
        if (gwr_layer_find_attr(rot, ints[i]) >= 0) ok = !gwr_layer_attr_int(rot, ints[i], 0, &v) && !gwr_args_set_int(at, ints[i], v);
    if (ok && gwr_layer_find_attr(rot, "scale") >= 0) ok = !gwr_layer_attr_float(rot, "scale", 1, &f) && !gwr_args_set_float(at, "scale", f);
    if (ok) gwr_op_call(a->net, rk == 2 ? "com.microsoft" : "", "RotaryEmbedding", rk == 2 ? 4 : 3, in, at, 1, &y);
    gwr_args_free(at);
    if (y && rk == 2) gwr_tensor_set_type(y, gwr_tensor_dtype(x), 3, gwr_tensor_dims(x)); /* no shape rule here */
    return y;
}

/* seqlens_k = ReduceSum(mask, 1) - 1 and total_sequence_length = Shape(mask)[1],
 * int32, of attention_mask `am`: made once, found by name by the others. */
static gwr_tensor *gqa_lens(gwr_network *net, gwr_tensor *am, int total) {
    char name[300];
    snprintf(name, sizeof name, "%s/gqa_%s", gwr_tensor_name(am), total ? "total_sequence_length" : "seqlens_k");
    gwr_tensor *t = gwr_network_find_tensor(net, name), *r;
    if (t) return t;
    static const int64_t ax1 = 1;
    gwr_tensor *a64 = gwr_tensor_dtype(am) == GWR_INT64 ? am : gwr_cast(net, am, GWR_INT64);
    if (total) r = a64 ? gwr_gather(net, gwr_shape_of(net, a64), gwr_constant_i64(net, 1), 0) : NULL;
    else r = a64 ? gwr_sub(net, gwr_reduce_sum(net, a64, 1, &ax1, 0), gwr_constant_i64s(net, 1, (const int64_t[]){1})) : NULL;
    t = r ? gwr_cast(net, r, GWR_INT32) : NULL;
    return t && !gwr_tensor_set_name(t, name) ? t : NULL;
}

/* Attention(q, k, v, M, past_key, past_value) -> GroupQueryAttention(q, k, v
 * as (B, S, N D), past_key, past_value, seqlens_k, total_sequence_length;
 * num_heads, kv_num_heads, scale). GroupQueryAttention masks causally and
 * by the lengths of attention_mask (the integer input M is built from):
 * the exporters' mask as long as the padding is on the right, onnxruntime's
 * own optimizer's assumption (docs/optimize.md). */
static const char *gqa_match(att *a, gwr_layer *l, gwr_tensor **am, int64_t *nh, int64_t *kvh) {
    gwr_tensor *q = gwr_layer_input(l, 0), *k = gwr_layer_input(l, 1), *v = gwr_layer_input(l, 2), *m = gwr_layer_input(l, 3);
    int64_t flag;
    for (int i = 0; i < 3; i++) {
        const char *an = i == 0 ? "is_causal" : i == 1 ? "qk_matmul_output_mode" : "softcap";
        if (gwr_layer_find_attr(l, an) >= 0 && (i == 2 || gwr_layer_attr_int(l, an, 0, &flag) || flag)) return "is_causal, softcap or qk output";
    }
    if (gwr_layer_num_outputs(l) > 3 || gwr_layer_num_inputs(l) != 6) return "not the cache form";
    if (a->dt != GWR_FLOAT32 && a->dt != GWR_FLOAT16) return "not float or float16";
    *nh = gwr_tensor_dim(q, 1), *kvh = gwr_tensor_dim(k, 1);
    gwr_dim d = gwr_tensor_dim(q, 3);
    if (gwr_tensor_rank(q) != 4 || gwr_tensor_rank(k) != 4 || gwr_tensor_rank(v) != 4 || *nh <= 0 || *kvh <= 0 || *nh % *kvh ||
        d <= 0 || gwr_tensor_dim(k, 3) != d || gwr_tensor_dim(v, 3) != d || gwr_tensor_dim(v, 1) != *kvh)
        return "q, k, v are not (B, N, S, D), (B, kvN, S, D) with known heads and D";
    if (!m || !(*am = mask_input(m))) return "no mask made from an integer attention_mask input";
    return NULL;
}

/* Is t = Unsqueeze(Gather(Shape(z), i), [0]) with z's dim i x's (known or the same symbol)? */
static int dim_of(const gwr_tensor *t, int i, const gwr_tensor *x) {
    gwr_layer *u = gwr_tensor_parent(t), *g = OP(u, Unsqueeze) ? gwr_tensor_parent(gwr_layer_input(u, 0)) : NULL, *sh;
    int64_t v[2], ax = 0;
    if (!OP(g, Gather) || gwr_layer_attr_int(g, "axis", 0, &ax) || ax || gwr_match_const_ints(gwr_layer_input(g, 1), v, 2) != 1 ||
        v[0] != i || !OP(sh = gwr_tensor_parent(gwr_layer_input(g, 0)), Shape) || gwr_layer_num_attrs(sh))
        return 0;
    return same(gwr_tensor_dim(gwr_layer_input(sh, 0), i), gwr_tensor_dim(x, i));
}

/* The exporters' computed merge shape Concat(B, S, [hid]) of x (B, S, hid): B and S read from
 * a tensor of x's leading dims (dim_of). */
static int shape_bs(const gwr_tensor *shape, const gwr_tensor *x, int64_t hid) {
    gwr_layer *cat = gwr_tensor_parent(shape);
    int64_t v[2], ax = 0;
    return OP(cat, Concat) && gwr_layer_num_inputs(cat) == 3 && !gwr_layer_attr_int(cat, "axis", 0, &ax) && ax == 0 &&
           dim_of(gwr_layer_input(cat, 0), 0, x) && dim_of(gwr_layer_input(cat, 1), 1, x) &&
           gwr_match_const_ints(gwr_layer_input(cat, 2), v, 2) == 1 && (v[0] == hid || v[0] == -1);
}

static int lower_cached(gwr_rewrite_ctx *c, gwr_layer *l) {
    if (!(gwr_ps_target(c) & GWR_TARGET_ORT)) return gwr_rewrite_no_match(c, "the cache form stays ONNX Attention (target gwr)");
    gwr_tensor *y = gwr_layer_output(l, 0), *am = NULL;
    att a = {.net = gwr_rewrite_ctx_network(c), .dt = gwr_tensor_dtype(y)};
    int64_t nh = 0, kvh = 0;
    const char *why = gqa_match(&a, l, &am, &nh, &kvh);
    if (why) return gwr_rewrite_no_match(c, "%s", why);
    gwr_dim d = gwr_tensor_dim(gwr_layer_input(l, 0), 3);
    float sc = (float)(1.0 / sqrt((double)d)), dflt = sc;
    gwr_layer_attr_float(l, "scale", sc, &sc);
    gwr_tensor *in[7] = {NULL}, *out[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++)
        if (!(in[i] = bsh(&a, gwr_layer_input(l, i), i ? kvh : nh, d))) goto fail;
    /* the output's merge Reshape(Transpose(y, [0, 2, 1, 3]), [B, S, N D]) when there: a constant
     * shape [0|B|-1, 0|S|-1, N D|-1], or a computed one whose result has query's dims (symbols) */
    gwr_layer *tr = gwr_ps_sole_reader(y), *cst = NULL, *rs;
    if (OP(tr, Cast)) cst = tr, tr = gwr_ps_sole_reader(gwr_layer_output(cst, 0)); /* the float16 exports' Cast to float */
    rs = tr ? gwr_ps_sole_reader(gwr_layer_output(tr, 0)) : NULL;
    gwr_tensor *ro = rs ? gwr_layer_output(rs, 0) : NULL;
    int64_t p[GWR_MAX_RANK], s3[3];
    int sn = OP(rs, Reshape) ? gwr_match_const_ints(gwr_layer_input(rs, 1), s3, 3) : 0, nd0 = a.ndead;
    gwr_tensor *bs = in[0]; /* q, k or v: the one whose (B, S) shape inference knows best */
    for (int i = 1; i < 3; i++)
        if (gwr_tensor_dim(bs, 0) == GWR_DIM_UNKNOWN || gwr_tensor_dim(bs, 1) == GWR_DIM_UNKNOWN) bs = in[i];
    if (!OP(rs, Reshape) || gwr_ps_transpose_perm(tr, 4, p) != 4 || memcmp(p, P0213, sizeof P0213) ||
        gwr_tensor_rank(ro) != 3 || known_ne(gwr_tensor_dim(ro, 2), nh * d) ||
        !(sn == 3 ? (s3[2] == nh * d || s3[2] == -1) && lead_ok(s3[0], in[0], 0, s3[1] != -1 && s3[2] != -1) &&
                        lead_ok(s3[1], in[0], 1, s3[0] != -1 && s3[2] != -1)
                  : (same(gwr_tensor_dim(ro, 0), gwr_tensor_dim(bs, 0)) && same(gwr_tensor_dim(ro, 1), gwr_tensor_dim(bs, 1)) &&
                     gwr_tensor_dim(ro, 2) == nh * d) || shape_bs(gwr_layer_input(rs, 1), bs, nh * d)) ||
        !kill(&a, tr) || (cst && !kill(&a, cst)))
        rs = NULL, a.ndead = nd0;
    in[3] = gwr_layer_input(l, 4), in[4] = gwr_layer_input(l, 5);
    if (!(in[5] = gqa_lens(a.net, am, 0)) || !(in[6] = gqa_lens(a.net, am, 1))) goto fail;
    gwr_args *at = gwr_args_new();
    if (at && !gwr_args_set_int(at, "num_heads", nh) && !gwr_args_set_int(at, "kv_num_heads", kvh) &&
        (sc == dflt || !gwr_args_set_float(at, "scale", sc)))
        gwr_op_call(a.net, "com.microsoft", "GroupQueryAttention", 7, in, at, 3, out);
    gwr_args_free(at);
    if (!out[2]) goto fail;
    /* an op without a shape rule here: the types it has in onnxruntime */
    gwr_dim od[3] = {gwr_tensor_dim(in[0], 0), gwr_tensor_dim(in[0], 1), nh * d};
    gwr_status st = gwr_tensor_set_type(out[0], a.dt, 3, od);
    for (int i = 1; !st && i < 3; i++)
        if (i < gwr_layer_num_outputs(l)) st = gwr_tensor_set_type(out[i], a.dt, 4, gwr_tensor_dims(gwr_layer_output(l, i)));
    gwr_tensor *yb = rs ? (cst ? gwr_cast(a.net, out[0], gwr_tensor_dtype(gwr_layer_output(cst, 0))) : out[0]) : gwr_transpose(a.net, gwr_reshape(a.net, out[0], 4, (const int64_t[]){0, 0, nh, d}), 4, P0213);
    if (!st && !yb) st = GWR_ERR_NOMEM;
    for (int i = 1; !st && i < gwr_layer_num_outputs(l); i++) st = gwr_tensor_replace_all_uses_with(gwr_layer_output(l, i), out[i]);
    if (!st) st = rs ? gwr_match_replace_layer(rs, 1, &yb) : gwr_tensor_replace_all_uses_with(y, yb);
    if (!st) st = gwr_layer_mark_as_removed(l);
    for (int i = 0; !st && i < a.ndead; i++) st = gwr_layer_mark_as_removed(a.dead[i]);
    return st ? gwr_rewrite_fail(c, st, "%s", gwr_last_errmsg()) : 1;
fail:
    return gwr_rewrite_fail(c, GWR_ERR_NOMEM, "lower_attention: %s", gwr_network_errmsg(a.net));
}

static int lower(gwr_rewrite_ctx *c, gwr_layer *l) {
    if (gwr_layer_num_inputs(l) >= 5 && gwr_layer_input(l, 4)) return lower_cached(c, l);
    gwr_match m;
    int rc = gwr_match_layer(&l_pat, l, &m);
    if (rc <= 0 || gwr_layer_num_outputs(l) != 1)
        return rc < 0 ? gwr_rewrite_fail(c, (gwr_status)-rc, "%s", gwr_last_errmsg()) : gwr_rewrite_no_match(c, "not a plain 4-D Attention");
    gwr_tensor *y = gwr_layer_output(l, 0), *qkv[3] = {m.captures[X], m.captures[K], m.captures[V]}, *ab = m.captures[M];
    att a = {.net = gwr_rewrite_ctx_network(c), .scale = 1, .dt = gwr_tensor_dtype(y)};
    const char *why = lower_match(&a, qkv, P0213, y);
    if (why) return gwr_rewrite_no_match(c, "%s", why);
    float sc = (float)(1.0 / sqrt((double)a.d[0]));
    gwr_layer_attr_float(l, "scale", sc, &sc);
    if (!isfinite(a.scale *= sc) || a.scale <= 0) return gwr_rewrite_no_match(c, "the scale is not finite and > 0");
    const gwr_dim *md = ab ? gwr_tensor_dims(ab) : NULL, *qd = gwr_tensor_dims(qkv[0]);
    if (ab && (gwr_tensor_rank(ab) != 4 || gwr_tensor_dtype(ab) != a.dt || (md[0] != 1 && md[0] != qd[0]) ||
               (md[1] != 1 && md[1] != a.nh) || !same(md[2], qd[2]) || !same(md[3], gwr_tensor_dim(qkv[1], 2))))
        return gwr_rewrite_no_match(c, "the mask is not (B|1, N|1, S, T) of q's dtype");
    biases(&a);
    gwr_tensor *out = build(&a, ab);
    if (!out) return gwr_rewrite_fail(c, GWR_ERR_NOMEM, "lower_attention: %s", gwr_network_errmsg(a.net));
    gwr_status s = gwr_match_replace_layer(a.root, 1, &out);
    if (!s) s = gwr_layer_mark_as_removed(l);
    for (int i = 0; !s && i < a.ndead; i++) s = gwr_layer_mark_as_removed(a.dead[i]);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}

static const char *const lower_roots[] = {"Attention", NULL};

const gwr_pattern_rewriter gwr_pattern_lower_attention = {
    .name = "lower_attention",
    .root_ops = lower_roots,
    .match_and_rewrite = lower,
};

/* ---- the pass table's row (pass_table.h) ---- */
#include "passes/pass_table.h"

/* Both in lower, as the one-stage fusion was: merge_qkv_matmuls (fuse) runs
 * before them, and lower_attention takes its merged Split form. */
GWR_PASS(fuse_attention, LOWER, .pattern = &gwr_pattern_fuse_attention, .level = GWR_LEVEL_EXTENDED,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-4,
         .summary = "turn the exporters' scaled-dot-product attention (scale, additive or Where mask, Softmax) into "
                    "ONNX Attention (opset >= 23; below it only where lower_attention takes it, targets ort and gwr), "
                    "the mask kept exactly; with a KV cache (Concat(past, new), repeat_kv) Attention with past_key/"
                    "past_value, q_num_heads/kv_num_heads and the model's shared mask");

GWR_PASS(lower_attention, LOWER, .pattern = &gwr_pattern_lower_attention, .level = GWR_LEVEL_EXTENDED,
         .targets = GWR_TARGET_ORT | GWR_TARGET_GWR, .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-4,
         .summary = "turn fuse_attention's Attention and the head Reshape/Transposes around it (and q/k/v MatMul + "
                    "bias) into com.microsoft MultiHeadAttention or Attention, the mask kept exactly; the KV-cache "
                    "form into GroupQueryAttention (target ort; causal, attention_mask's lengths)");
