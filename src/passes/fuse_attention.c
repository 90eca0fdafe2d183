/* fuse_attention.c - fuse_attention: scaled-dot-product attention as the
 * exporters write it becomes one com.microsoft MultiHeadAttention
 * (onnxruntime's CPU contrib op; gwr's kernel in src/exec/kernels/attention.c).
 *
 *   qh  = Transpose(Reshape(q, [B, S, N, D]), [0, 2, 1, 3])        q, k, v: (B, S|T, hidden)
 *   kT  = Transpose(Reshape(k, ...), [0, 2, 3, 1])                  or Transpose([0,1,3,2]) of the qh form
 *   vh  = Transpose(Reshape(v, ...), [0, 2, 1, 3])
 *   s   = MatMul(qh [* c], kT [* c]) [* c | / c]                    scale: scalar constants, Mul or Div,
 *                                                                   on q, on k and/or on the scores
 *   s   = s + M   |  Where(C, s, fill)  |  Where(C, fill, s)        optional mask, after the scale
 *   y   = Reshape(Transpose(MatMul(Softmax(s, -1), vh), [0, 2, 1, 3]), [B, S, hidden])
 *
 * becomes MultiHeadAttention(q, k, v, bias, , attention_bias; num_heads N,
 * scale = the product of the constants). The scores may also be
 * com.microsoft FusedMatMul(qh, kT, alpha) or FusedMatMul(qh, kh, transB=1,
 * alpha), what fuse_matmul_scale makes of MatMul + Transpose + scale when
 * it runs first (the driver visits producers first, so it may).
 *
 * The mask is carried exactly as attention_bias (B or 1, N or 1, S, T),
 * which onnxruntime adds to the scaled scores before its softmax, as the
 * model did: an additive mask keeps its values, -inf and large negatives
 * included (onnxruntime's own -10000 fill applies to key_padding_mask,
 * which is never emitted). A constant mask of lower rank, or with a dim of
 * 1 where the scores have S or T, is written out as a rank-4 constant; a
 * computed one must already be rank 4 or gets an Unsqueeze. A Where mask
 * needs a constant condition and a scalar fill of -inf or <= -1e30: then
 * s + fill rounds to fill for every score below 1e22 in magnitude, so the
 * additive form equals the Where, fully masked rows included (all fill:
 * uniform weights for a finite fill, NaN for -inf, as before). A finite
 * fill such as -10000 stays, since s + fill differs from fill.
 *
 * Biases: q, k or v = Add(MatMul(x, W), b) with a constant b of hidden
 * elements read only by the head Reshape gives the MatMul to the
 * attention and b to its bias input (zeros for a missing one). q, k, v as
 * the three outputs of one Split of [Add(]MatMul(x, W)[, b)] with a
 * constant W (merge_qkv_matmuls' form, and gen-gpt's) become one
 * com.microsoft Attention(x, W, b or zeros, , , attention_bias): the
 * projection, the Split and the heads in one layer (its kernel multiplies
 * first); with a non-constant W, a new Split of the MatMul and b whole.
 *
 * Checks: every intermediate has one reader and is not a network output;
 * the head Reshapes' shapes are [0|-1|B, 0|-1|S, N, D] with N*D the
 * source's known last dim, the same N for q, k and v and the same D for q
 * and k; the merge Reshape gives [B, S, N*Dv]; the Softmax is over the last
 * axis (axis -1 or 3; absent only from opset 13, where it means -1);
 * q, k, v, mask share one dtype among float, float16, bfloat16; the scale
 * is finite and not 0 (0 means the default to onnxruntime). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gwr/match.h"
#include "gwr/passes.h"
#include "passes/pass_util.h"
#include "util/util.h"

#define MAX_DEAD 32

typedef struct att {
    gwr_network *net;
    gwr_layer *dead[MAX_DEAD]; /* matched layers, removed after the replacement */
    int ndead;
    gwr_tensor *src[3];         /* q, k, v (B, S|T, hidden) */
    gwr_tensor *bias[3];        /* their constant biases, or NULL */
    gwr_tensor *qkv_bias;       /* the Split form's whole bias */
    gwr_layer *split;           /* the Split form's Split, or NULL */
    gwr_tensor *split_src;      /* the MatMul output the new Split reads */
    gwr_layer *proj;            /* the Split form's MatMul(x, W), W constant: Attention(x, W, ..) */
    int64_t nh, d[3], hidden[3];
    double scale;
    gwr_tensor *scores;         /* the MatMul (or FusedMatMul) output */
    gwr_tensor *mask;           /* additive mask, or the Where's condition */
    int where;                  /* 1: Where(C, s, fill), 2: Where(C, fill, s) */
    double fill;
    gwr_dtype dt;
} att;

static int is_op(const gwr_layer *l, const char *op) {
    return l && !gwr_layer_is_removed(l) && !*gwr_layer_domain(l) && !strcmp(gwr_layer_op(l), op);
}

static int is_fused_matmul(const gwr_layer *l) {
    return l && !gwr_layer_is_removed(l) && !strcmp(gwr_layer_domain(l), "com.microsoft") &&
           !strcmp(gwr_layer_op(l), "FusedMatMul");
}

/* t's producer when it is `op` (NULL: any) and t is its only output, read
 * by one live layer and not a network output; it joins the dead. */
static gwr_layer *inner(att *a, gwr_tensor *t, const char *op) {
    gwr_layer *p = t ? gwr_tensor_parent(t) : NULL;
    if (!p || gwr_layer_is_removed(p) || (op && !is_op(p, op)) || gwr_layer_num_outputs(p) != 1) return NULL;
    if (gwr_tensor_num_live_users(t) != 1 || gwr_tensor_output_index(t) >= 0 || a->ndead >= MAX_DEAD) return NULL;
    a->dead[a->ndead++] = p;
    return p;
}

/* Transpose l has exactly perm (4 entries). */
static int perm_is(const gwr_layer *l, int64_t p0, int64_t p1, int64_t p2, int64_t p3) {
    const int64_t *p;
    int64_t n = 0;
    if (gwr_layer_get_ints(l, "perm", &p, &n) || n != 4) return 0;
    return p[0] == p0 && p[1] == p1 && p[2] == p2 && p[3] == p3;
}

/* When t is made by a Mul or Div (only reader) of a scalar constant, folds
 * the factor into a->scale and returns the other operand; else t. */
static gwr_tensor *strip_scale(att *a, gwr_tensor *t, int *bad) {
    gwr_layer *p = gwr_tensor_parent(t);
    int mul = is_op(p, "Mul"), div = is_op(p, "Div");
    if (!mul && !div) return t;
    double c;
    gwr_tensor *x = gwr_layer_input(p, 0), *y = gwr_layer_input(p, 1);
    if (mul && gwr_match_const_scalar(x, &c) && !gwr_match_const_scalar(y, &c)) {
        gwr_tensor *tmp = x;
        x = y, y = tmp;
    }
    if (!gwr_match_const_scalar(y, &c) || !isfinite(c) || c == 0 || gwr_tensor_rank(y) > gwr_tensor_rank(x) ||
        gwr_tensor_dtype(y) != a->dt || !inner(a, t, NULL)) {
        *bad = 1; /* a Mul/Div by something else: not a scale we can move */
        return t;
    }
    a->scale *= div ? 1.0 / c : c;
    return x;
}

/* Reshape l's constant shape, read as 4 or 3 ints into v; the count. */
static int shape_of(const gwr_layer *l, int64_t *v, int cap) {
    gwr_tensor *s = gwr_layer_num_inputs(l) == 2 ? gwr_layer_input(l, 1) : NULL;
    int64_t az = 0;
    gwr_layer_attr_int(l, "allowzero", 0, &az);
    if (!s || az || gwr_tensor_dtype(s) != GWR_INT64) return -1;
    return gwr_match_const_ints(s, v, cap);
}

/* A leading dim of a Reshape shape: 0 (copy), -1 (the rest: `rest_ok`), or
 * the known extent of x's dim i. */
static int lead_ok(int64_t v, const gwr_tensor *x, int i, int rest_ok) {
    if (v == 0) return 1;
    if (v == -1) return rest_ok;
    return v > 0 && gwr_tensor_dim(x, i) == v;
}

/* The head split of source i: Transpose(Reshape(src, [., ., N, D]), perm) read
 * from t; fills src, nh, d, hidden. */
static int head_split(att *a, gwr_tensor *t, int i, int kt) {
    gwr_layer *tr = inner(a, t, "Transpose");
    if (!tr || !(kt ? perm_is(tr, 0, 2, 3, 1) : perm_is(tr, 0, 2, 1, 3))) return 0;
    /* q's and k's scale may also sit inside the head split (an exporter's
     * order, or a Transpose pushed through it); v's is no softmax scale */
    int bad = 0;
    gwr_tensor *r = gwr_layer_input(tr, 0);
    if (i < 2) r = strip_scale(a, r, &bad);
    gwr_layer *rs = bad ? NULL : inner(a, r, "Reshape");
    if (!rs) return 0;
    gwr_tensor *x = gwr_layer_input(rs, 0);
    if (i < 2) x = strip_scale(a, x, &bad);
    int64_t s[4];
    if (bad) return 0;
    if (shape_of(rs, s, 4) != 4 || s[2] <= 0 || s[3] <= 0 || gwr_tensor_rank(x) != 3) return 0;
    gwr_dim h = gwr_tensor_dim(x, 2);
    if (!GWR_DIM_IS_KNOWN(h) || h != s[2] * s[3]) return 0;
    if (!lead_ok(s[0], x, 0, s[1] != -1) || !lead_ok(s[1], x, 1, s[0] != -1)) return 0;
    if (a->nh && a->nh != s[2]) return 0;
    a->nh = s[2], a->d[i] = s[3], a->hidden[i] = h, a->src[i] = x;
    return 1;
}

/* The K side of the scores: Transpose(., [0,2,3,1]) of the head Reshape,
 * or Transpose(., [0,1,3,2]) of the [0,2,1,3] form (a scale may sit on
 * either side of it); with transposed (FusedMatMul transB), the
 * [0,2,1,3] form itself. */
static int key_side(att *a, gwr_tensor *t, int transposed, int *bad) {
    t = strip_scale(a, t, bad);
    if (*bad) return 0;
    if (transposed) return head_split(a, t, 1, 0);
    gwr_layer *p = gwr_tensor_parent(t);
    if (is_op(p, "Transpose") && perm_is(p, 0, 1, 3, 2)) {
        if (!inner(a, t, "Transpose")) return 0;
        gwr_tensor *kh = strip_scale(a, gwr_layer_input(p, 0), bad);
        return !*bad && head_split(a, kh, 1, 0);
    }
    return head_split(a, t, 1, 1);
}

/* The scores MatMul (or FusedMatMul) from s, with its q and k sides. */
static int scores_side(att *a, gwr_tensor *s) {
    int bad = 0;
    s = strip_scale(a, s, &bad);
    gwr_layer *mm = gwr_tensor_parent(s);
    if (bad || !mm || (!is_op(mm, "MatMul") && !is_fused_matmul(mm)) || !inner(a, s, NULL)) return 0;
    int transposed = 0;
    if (is_fused_matmul(mm)) {
        int64_t ta = 0, tb = 0, tba = 0, tbb = 0;
        float alpha = 1;
        gwr_layer_attr_int(mm, "transA", 0, &ta), gwr_layer_attr_int(mm, "transB", 0, &tb);
        gwr_layer_attr_int(mm, "transBatchA", 0, &tba), gwr_layer_attr_int(mm, "transBatchB", 0, &tbb);
        gwr_layer_attr_float(mm, "alpha", 1.0f, &alpha);
        if (ta || tba || tbb || (tb != 0 && tb != 1) || gwr_layer_num_inputs(mm) != 2 || !isfinite(alpha) || alpha == 0)
            return 0;
        a->scale *= alpha;
        transposed = (int)tb;
    }
    a->scores = s;
    gwr_tensor *q = strip_scale(a, gwr_layer_input(mm, 0), &bad);
    return !bad && head_split(a, q, 0, 0) && key_side(a, gwr_layer_input(mm, 1), transposed, &bad);
}

/* Does t come from the scores (a MatMul/FusedMatMul, maybe scaled)? */
static int from_scores(gwr_tensor *t) {
    gwr_layer *p = gwr_tensor_parent(t);
    if (is_op(p, "Mul") || is_op(p, "Div")) {
        gwr_layer *a = gwr_tensor_parent(gwr_layer_input(p, 0)), *b = gwr_tensor_parent(gwr_layer_input(p, 1));
        return is_op(a, "MatMul") || is_fused_matmul(a) || is_op(b, "MatMul") || is_fused_matmul(b);
    }
    return is_op(p, "MatMul") || is_fused_matmul(p);
}

/* The optional mask before the Softmax's input t; returns the scores side. */
static gwr_tensor *mask_side(att *a, gwr_tensor *t) {
    gwr_layer *p = gwr_tensor_parent(t);
    if (is_op(p, "Add")) {
        gwr_tensor *x = gwr_layer_input(p, 0), *y = gwr_layer_input(p, 1);
        if (from_scores(x) == from_scores(y) || !inner(a, t, "Add")) return NULL;
        a->mask = from_scores(x) ? y : x;
        return from_scores(x) ? x : y;
    }
    if (is_op(p, "Where")) {
        gwr_tensor *c = gwr_layer_input(p, 0), *x = gwr_layer_input(p, 1), *y = gwr_layer_input(p, 2);
        if (from_scores(x) == from_scores(y) || !inner(a, t, "Where")) return NULL;
        a->where = from_scores(x) ? 1 : 2;
        if (!gwr_match_const_scalar(a->where == 1 ? y : x, &a->fill) || !(a->fill <= -1e30)) return NULL;
        if (gwr_tensor_dtype(a->where == 1 ? y : x) != a->dt || gwr_tensor_dtype(c) != GWR_BOOL) return NULL;
        gwr_match_const cc;
        if (!gwr_match_const_get(c, &cc)) return NULL;
        a->mask = c;
        return a->where == 1 ? x : y;
    }
    return t;
}

/* The Softmax is over the last axis of its rank-4 input. */
static int softmax_last(gwr_network *net, const gwr_layer *sm) {
    int64_t axis = 0;
    if (gwr_layer_find_attr(sm, "axis") < 0) {
        int64_t opset = gwr_network_opset(net, "");
        return opset < 0 || opset >= 13;
    }
    return !gwr_layer_attr_int(sm, "axis", 0, &axis) && (axis == -1 || axis == 3);
}

/* Matches the whole chain from the root Reshape; NULL or why not. */
static const char *match(att *a, gwr_layer *root) {
    int64_t s3[3];
    gwr_tensor *y = gwr_layer_output(root, 0);
    if (gwr_layer_num_outputs(root) != 1 || shape_of(root, s3, 3) != 3 || gwr_tensor_rank(y) != 3)
        return "not a Reshape to rank 3 by a constant shape";
    gwr_layer *tr = inner(a, gwr_layer_input(root, 0), "Transpose");
    if (!tr || !perm_is(tr, 0, 2, 1, 3)) return "not read from a Transpose [0, 2, 1, 3]";
    gwr_layer *pv = inner(a, gwr_layer_input(tr, 0), "MatMul");
    if (!pv) return "the Transpose does not read a MatMul read only by it";
    gwr_layer *sm = inner(a, gwr_layer_input(pv, 0), "Softmax");
    if (!sm) return "the MatMul does not read a Softmax read only by it";
    if (!softmax_last(a->net, sm)) return "the Softmax is not over the last axis";
    a->dt = gwr_tensor_dtype(gwr_layer_input(sm, 0));
    if (a->dt != GWR_FLOAT32 && a->dt != GWR_FLOAT16 && a->dt != GWR_BFLOAT16) return "not float, float16 or bfloat16";
    gwr_tensor *s = mask_side(a, gwr_layer_input(sm, 0));
    if (!s) return "a mask that is not an Add, or a Where with a constant condition and a fill <= -1e30";
    if (!scores_side(a, s)) return "no q k^T scores of head-split q and k (scaled by constants)";
    if (!head_split(a, gwr_layer_input(pv, 1), 2, 0)) return "the values are not head-split";
    if (a->d[0] != a->d[1]) return "q and k have different head sizes";
    for (int i = 0; i < 3; i++)
        if (gwr_tensor_dtype(a->src[i]) != a->dt) return "q, k, v of different dtypes";
    gwr_tensor *v = a->src[2], *q = a->src[0];
    if (s3[2] != a->nh * a->d[2] && !(s3[2] == -1 && s3[0] != -1 && s3[1] != -1)) return "the merge Reshape's hidden size";
    if (!lead_ok(s3[0], q, 0, s3[1] != -1 && s3[2] != -1) || !lead_ok(s3[1], q, 1, s3[0] != -1 && s3[2] != -1))
        return "the merge Reshape does not keep batch and sequence";
    if (gwr_tensor_dim(y, 2) != a->nh * a->d[2]) return "the result is not (B, S, N * Dv)";
    gwr_tensor *k = a->src[1];
    if (gwr_tensor_dim(k, 0) != gwr_tensor_dim(q, 0) || gwr_tensor_dim(v, 0) != gwr_tensor_dim(q, 0) ||
        gwr_tensor_dim(k, 1) != gwr_tensor_dim(v, 1))
        return "q, k, v are not (B, S, .), (B, T, .), (B, T, .)";
    if (!isfinite(a->scale) || a->scale == 0) return "the scale is 0 or not finite";
    return NULL;
}

/* A constant bias b of `n` elements (leading dims 1) in x's dtype. */
static int bias_const(const gwr_tensor *b, int64_t n, gwr_dtype dt) {
    gwr_match_const c;
    if (!gwr_match_const_get(b, &c) || c.dtype != dt || c.numel != n || c.rank < 1 || c.rank > 3) return 0;
    return c.dims[c.rank - 1] == n;
}

/* The MatMul under an Add(MatMul, b) that t is, its b into *b; NULL when
 * not (or when t has other readers). */
static gwr_tensor *strip_bias(att *a, gwr_tensor *t, int64_t n, gwr_tensor **b) {
    gwr_layer *p = gwr_tensor_parent(t);
    if (!is_op(p, "Add") || gwr_tensor_num_live_users(t) != 1 || gwr_tensor_output_index(t) >= 0) return NULL;
    for (int side = 0; side < 2; side++) {
        gwr_tensor *m = gwr_layer_input(p, side), *c = gwr_layer_input(p, 1 - side);
        if (is_op(gwr_tensor_parent(m), "MatMul") && bias_const(c, n, a->dt) && gwr_tensor_rank(m) == 3 &&
            a->ndead < MAX_DEAD) {
            a->dead[a->ndead++] = p;
            *b = c;
            return m;
        }
    }
    return NULL;
}

/* The Split form: q, k, v are outputs 0, 1, 2 of one Split over the last
 * axis of Add(MatMul, b), read only by the head Reshapes. */
static void split_form(att *a) {
    gwr_layer *sp = gwr_tensor_parent(a->src[0]);
    if (!is_op(sp, "Split") || gwr_layer_num_outputs(sp) != 3) return;
    for (int i = 0; i < 3; i++)
        if (gwr_tensor_parent(a->src[i]) != sp || gwr_tensor_parent_output_index(a->src[i]) != i ||
            gwr_tensor_num_live_users(a->src[i]) != 1 || gwr_tensor_output_index(a->src[i]) >= 0)
            return;
    int64_t axis = 0;
    gwr_layer_attr_int(sp, "axis", 0, &axis);
    if (axis != -1 && axis != 2) return;
    gwr_tensor *b = NULL, *in = gwr_layer_input(sp, 0);
    int keep = a->ndead;
    int64_t w = 2 * a->hidden[0] + a->hidden[2];
    gwr_tensor *m = strip_bias(a, in, w, &b);
    if (!m) m = in;
    gwr_layer *mm = gwr_tensor_parent(m);
    gwr_tensor *x = is_op(mm, "MatMul") ? gwr_layer_input(mm, 0) : NULL;
    gwr_match_const wc;
    int proj = x && gwr_tensor_num_live_users(m) == 1 && gwr_tensor_output_index(m) < 0 && gwr_tensor_rank(x) == 3 &&
               gwr_tensor_dtype(x) == a->dt && gwr_match_const_get(gwr_layer_input(mm, 1), &wc) && wc.rank == 2 &&
               wc.dtype == a->dt && wc.dims[1] == w;
    if ((!b && !proj) || a->ndead + 2 > MAX_DEAD) { /* nothing to gain: the Split's outputs are q, k, v */
        a->ndead = keep;
        return;
    }
    a->dead[a->ndead++] = sp;
    if (proj) a->dead[a->ndead++] = mm, a->proj = mm;
    a->split = sp, a->split_src = m, a->qkv_bias = b;
}

/* The separate form: each of q, k, v = Add(MatMul, b) gives its MatMul. */
static void separate_biases(att *a) {
    for (int i = 0; i < 3; i++) {
        gwr_tensor *m = strip_bias(a, a->src[i], a->hidden[i], &a->bias[i]);
        if (m) a->src[i] = m;
    }
}

/* q, k, v's biases as one constant (zeros for a missing one), or NULL
 * with *err when none or out of memory. */
static gwr_tensor *packed_bias(att *a, int *err) {
    if (a->qkv_bias) return a->qkv_bias;
    if (!a->bias[0] && !a->bias[1] && !a->bias[2]) return NULL;
    int64_t n = 2 * a->hidden[0] + a->hidden[2], off = 0;
    double *v = gwr_calloc((size_t)n, sizeof *v);
    for (int i = 0; v && i < 3; off += a->hidden[i], i++)
        if (a->bias[i] && gwr_match_const_f64(a->bias[i], v + off, a->hidden[i], NULL, NULL, NULL)) *err = 1;
    gwr_tensor *t = v && !*err ? gwr_ps_const_new(a->net, a->dt, 1, &n, v, 0) : NULL;
    gwr_free(v);
    if (!t) *err = 1;
    return t;
}

/* mask dim i of rank r, right-aligned into 4 dims (1 before it). */
static int64_t mdim(const gwr_match_const *c, int i) { return i < 4 - c->rank ? 1 : c->dims[i - (4 - c->rank)]; }

/* Can the constant mask c be written as (B|1, N|1, S, T) for scores of
 * dims sd? Fills out (the rank-4 dims). */
static int mask_shape_ok(const att *a, const gwr_match_const *c, const gwr_dim *sd, int64_t *out) {
    if (c->rank > 4) return 0;
    for (int i = 0; i < 4; i++) {
        int64_t m = mdim(c, i);
        if (m != 1 && m != sd[i]) return 0; /* the Add would broadcast the scores to a bigger shape */
        out[i] = m;
    }
    if (out[1] != 1 && out[1] != a->nh) return 0;
    for (int i = 2; i < 4; i++) {
        if (!GWR_DIM_IS_KNOWN(sd[i]) && out[i] == 1) return 0;
        out[i] = sd[i];
    }
    return 1;
}

/* The attention_bias: the mask (or Where condition) as an exact additive
 * (B|1, N|1, S, T) tensor. NULL with *err 0 when it cannot be (then
 * nothing was made); *err 1 on a failure to build. */
static gwr_tensor *attention_bias(att *a, int *err, const char **why) {
    if (!a->mask) return NULL;
    const gwr_dim *sd = gwr_tensor_dims(a->scores);
    if (gwr_tensor_rank(a->scores) != 4) return *why = "the scores' shape is not known", NULL;
    gwr_match_const c;
    if (!gwr_match_const_get(a->mask, &c)) {
        /* computed: (.., S, T) exactly, of the scores' dtype */
        int r = gwr_tensor_rank(a->mask);
        if (a->where || r < 2 || r > 4 || gwr_tensor_dtype(a->mask) != a->dt) return *why = "a computed mask of rank < 2", NULL;
        const gwr_dim *md = gwr_tensor_dims(a->mask);
        for (int i = 0; i < r; i++) {
            gwr_dim m = md[i], s = sd[4 - r + i];
            if (i >= r - 2 ? m != s : (m != 1 && m != s)) return *why = "a computed mask that is not (.., S, T)", NULL;
        }
        if (r == 4 && md[1] != 1 && md[1] != a->nh) return *why = "a computed mask of another head count", NULL;
        if (r == 4) return a->mask;
        static const int64_t ax[2] = {0, 1};
        gwr_tensor *u = gwr_unsqueeze(a->net, a->mask, 4 - r, ax);
        if (!u) *err = 1;
        return u;
    }
    int64_t od[4];
    if (!mask_shape_ok(a, &c, sd, od)) return *why = "the mask does not fit (B|1, N|1, S, T)", NULL;
    if (!a->where && c.dtype != a->dt) return *why = "the mask is not of the scores' dtype", NULL;
    int same = !a->where && c.rank == 4 && od[2] == c.dims[2] && od[3] == c.dims[3];
    if (same) return a->mask;
    /* Every block of a decoder reads the same mask: the first fusion writes
     * its attention_bias under a name made from the mask's, the others
     * find it there (1,000 copies of a 64 KiB mask otherwise). */
    char name[320];
    snprintf(name, sizeof name, "%s/attention_bias_%lldx%lldx%lldx%lld%s%.17g", gwr_tensor_name(a->mask), (long long)od[0],
             (long long)od[1], (long long)od[2], (long long)od[3], a->where == 1 ? "_keep_" : a->where ? "_hide_" : "",
             a->where ? a->fill : 0.0);
    gwr_tensor *old = gwr_network_find_tensor(a->net, name);
    gwr_match_const oc;
    if (old && gwr_match_const_get(old, &oc) && oc.dtype == a->dt && oc.rank == 4 && !memcmp(oc.dims, od, sizeof od))
        return old;
    int64_t n = od[0] * od[1] * od[2] * od[3], cap = c.numel;
    double *v = gwr_malloc((size_t)(n + cap) * sizeof *v), *src = v ? v + n : NULL;
    if (!v || gwr_match_const_f64(a->mask, src, cap, NULL, NULL, NULL)) {
        gwr_free(v);
        *err = 1;
        return NULL;
    }
    int64_t md[4];
    for (int i = 0; i < 4; i++) md[i] = mdim(&c, i);
    for (int64_t e = 0; e < n; e++) {
        int64_t idx[4], r = e, si = 0;
        for (int i = 3; i >= 0; i--) idx[i] = r % od[i], r /= od[i];
        for (int i = 0; i < 4; i++) si = si * md[i] + (md[i] == 1 ? 0 : idx[i]);
        double x = src[si];
        v[e] = !a->where ? x : ((x != 0) == (a->where == 1) ? 0.0 : a->fill);
    }
    gwr_tensor *t = gwr_ps_const_new(a->net, a->dt, 4, od, v, 0);
    gwr_free(v);
    if (!t || (!old && gwr_tensor_set_name(t, name))) *err = 1;
    return t;
}

/* Why the mask cannot become an attention_bias, or NULL (checked before
 * anything is built, as attention_bias checks it again). */
static const char *mask_refusal(const att *a) {
    if (!a->mask) return NULL;
    if (gwr_tensor_rank(a->scores) != 4) return "the scores' rank is not known";
    const gwr_dim *sd = gwr_tensor_dims(a->scores);
    gwr_match_const mc;
    int64_t od[4];
    if (gwr_match_const_get(a->mask, &mc)) {
        if (!mask_shape_ok(a, &mc, sd, od)) return "the mask does not fit (B|1, N|1, S, T)";
        return !a->where && mc.dtype != a->dt ? "the mask is not of the scores' dtype" : NULL;
    }
    int r = gwr_tensor_rank(a->mask);
    const gwr_dim *md = gwr_tensor_dims(a->mask);
    int ok = r >= 2 && r <= 4 && gwr_tensor_dtype(a->mask) == a->dt;
    for (int i = 0; ok && i < r; i++) ok = i >= r - 2 ? md[i] == sd[4 - r + i] : (md[i] == 1 || md[i] == sd[4 - r + i]);
    if (ok && r == 4) ok = md[1] == 1 || md[1] == a->nh;
    return ok ? NULL : "a computed mask that is not (.., S, T) of the scores' dtype";
}

/* The Split form with its projection: com.microsoft Attention(x, W, bias,
 * , , attention_bias), one layer for MatMul, Split and the heads. The bias
 * is always given (zeros when the model has none): onnxruntime's CPU
 * kernel has long required it. */
static gwr_tensor *build_attention(att *a, gwr_tensor *bias, gwr_tensor *ab) {
    int64_t w = 2 * a->hidden[0] + a->hidden[2];
    if (!bias && !(bias = gwr_ps_const_new(a->net, a->dt, 1, &w, NULL, 0.0))) return NULL;
    gwr_args *at = gwr_args_new();
    int64_t sizes[3] = {a->hidden[0], a->hidden[1], a->hidden[2]};
    gwr_tensor *in[6] = {gwr_layer_input(a->proj, 0), gwr_layer_input(a->proj, 1), bias, NULL, NULL, ab}, *y = NULL;
    if (!at || gwr_args_set_int(at, "num_heads", a->nh) || gwr_args_set_float(at, "scale", (float)a->scale) ||
        (a->hidden[2] != a->hidden[0] && gwr_args_set_ints(at, "qkv_hidden_sizes", 3, sizes))) {
        gwr_args_free(at);
        return NULL;
    }
    gwr_layer *l = gwr_op_call(a->net, "com.microsoft", "Attention", ab ? 6 : 3, in, at, 1, &y);
    gwr_args_free(at);
    return l ? y : NULL;
}

/* Builds the replacement: the new Split (Split form), the bias, the
 * attention_bias and the MultiHeadAttention; its output or NULL. */
static gwr_tensor *build(att *a) {
    int err = 0;
    const char *why = NULL;
    gwr_tensor *ab = attention_bias(a, &err, &why), *srcs[3] = {a->src[0], a->src[1], a->src[2]};
    if (err || (!ab && a->mask)) return NULL;
    gwr_tensor *bias = packed_bias(a, &err);
    if (err) return NULL;
    if (a->proj) return build_attention(a, bias, ab);
    if (a->split) {
        gwr_tensor *in[2] = {a->split_src, gwr_layer_num_inputs(a->split) > 1 ? gwr_layer_input(a->split, 1) : NULL};
        gwr_layer *sp = gwr_match_clone_layer(a->split, in[1] ? 2 : 1, in);
        if (!sp) return NULL;
        for (int i = 0; i < 3; i++) srcs[i] = gwr_layer_output(sp, i);
    }
    gwr_args *at = gwr_args_new();
    gwr_tensor *in[6] = {srcs[0], srcs[1], srcs[2], bias, NULL, ab}, *y = NULL;
    if (!at || gwr_args_set_int(at, "num_heads", a->nh) || gwr_args_set_float(at, "scale", (float)a->scale)) {
        gwr_args_free(at);
        return NULL;
    }
    gwr_layer *l = gwr_op_call(a->net, "com.microsoft", "MultiHeadAttention", ab ? 6 : bias ? 4 : 3, in, at, 1, &y);
    gwr_args_free(at);
    return l ? y : NULL;
}

static int fuse(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    if (*gwr_layer_domain(l)) return gwr_rewrite_no_match(c, "not an ONNX Reshape");
    att a = {.net = net, .scale = 1.0};
    const char *why = match(&a, l);
    if (why) return gwr_rewrite_no_match(c, "%s", why);
    if ((why = mask_refusal(&a))) return gwr_rewrite_no_match(c, "%s", why);
    split_form(&a);
    if (!a.split) separate_biases(&a);
    gwr_tensor *y = build(&a);
    if (!y) return gwr_rewrite_fail(c, GWR_ERR_NOMEM, "fuse_attention: %s", gwr_network_errmsg(net));
    gwr_status s = gwr_match_replace_layer(l, 1, &y);
    for (int i = 0; !s && i < a.ndead; i++) s = gwr_layer_mark_as_removed(a.dead[i]);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}

static const char *const roots[] = {"Reshape", NULL};

const gwr_pattern_rewriter gwr_pattern_fuse_attention = {
    .name = "fuse_attention",
    .root_ops = roots,
    .match_and_rewrite = fuse,
};

/* ---- the pass table's row (pass_table.h) ---- */
#include "passes/pass_table.h"

GWR_PASS(fuse_attention, LOWER, .pattern = &gwr_pattern_fuse_attention, .level = GWR_LEVEL_EXTENDED,
         .targets = GWR_TARGET_ORT | GWR_TARGET_GWR, .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-4,
         .summary = "turn the exporters' scaled-dot-product attention (head Reshape/Transpose, scale, additive or "
                    "Where mask, Softmax) into com.microsoft MultiHeadAttention, or Attention with its q/k/v MatMul, "
                    "the mask kept exactly");
