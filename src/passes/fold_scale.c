/* fold_scale.c - constant arithmetic after (or before) a linear layer with
 * constant weights, folded into those weights:
 *
 *   fold_scale_into_conv   y = Conv(x, W, B) op k, op one of Mul, Div (y
 *                          the numerator), Add, Sub (either side), k per
 *                          output channel or scalar; also ConvTranspose.
 *   fold_scale_into_gemm   the same after Gemm (k per output column);
 *                          after MatMul(x, W) with a constant 2-D W, Mul
 *                          and Div only (an Add after MatMul is
 *                          fuse_matmul_add's).
 *   fold_scalar_around_matmul
 *                          a one-element Mul/Div on the activation input
 *                          of a MatMul or Gemm whose other operand is
 *                          constant, or on its output: x*s @ W = x @ (s*W).
 *
 * With W'/B' the new weights and bias, per output channel o:
 *   Mul  W' = W * k[o]   B' = B * k[o]      Add  W' = W    B' = B + k[o]
 *   Div  W' = W / k[o]   B' = B / k[o]      Sub  W' = W    B' = B - k[o]
 *                                           k - y: W' = -W, B' = k[o] - B
 * computed in double and rounded once to the weights' dtype (as
 * fold_batchnorm). A constant that would change the output's shape (more
 * dims than the output, or a dim other than 1 off the channel axis) is
 * refused: NumPy broadcasting aligns from the right, so for a Conv output
 * [N, C, H, W] the per-channel forms are [C, 1, 1] and [1, C, 1, 1], while
 * a [C] alone runs along W and is refused (unless C is 1). Weights are never
 * changed in place: new constants are built, so a weight shared with
 * another layer stays as it was there.
 *
 * Not a rule file: the constant is mapped to output channels through each producer's weight layout
 * (Conv, ConvTranspose with groups, Gemm with transB, MatMul), a walk the language has no words
 * for.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "gwr/match.h"
#include "gwr/passes.h"
#include "passes/pass_util.h"
#include "rewrite/rewrite_api.h"
#include "util/util.h"

enum { X, W, B, K, NCAP };
enum { K_CONV = GWR_PS_W_CONV, K_CONVT = GWR_PS_W_CONVT, K_GEMM = GWR_PS_W_GEMM, K_MATMUL = GWR_PS_W_MATMUL, NKIND };
typedef enum { A_MUL, A_DIV, A_ADD, A_SUB, A_RSUB, NARITH } arith;

/* ---- the tables: the producer is any op (checked by name after), the root
 * is the arithmetic. ---------------------------------------------------------- */

#define PRODUCER {.op = NULL, .in = {GWR_M_CAP(X), GWR_M_CONST(W), GWR_M_OPT_CONST(B)}}
static const gwr_match_node mul_nodes[] = {PRODUCER, GWR_M_OP("Mul", GWR_M_NODE(0), GWR_M_CONST(K))};
static const gwr_match_node div_nodes[] = {PRODUCER, GWR_M_OP("Div", GWR_M_NODE(0), GWR_M_CONST(K))};
static const gwr_match_node add_nodes[] = {PRODUCER, GWR_M_OP("Add", GWR_M_NODE(0), GWR_M_CONST(K))};
static const gwr_match_node sub_nodes[] = {PRODUCER, GWR_M_OP("Sub", GWR_M_NODE(0), GWR_M_CONST(K))};
static const gwr_match_node rsub_nodes[] = {PRODUCER, GWR_M_OP("Sub", GWR_M_CONST(K), GWR_M_NODE(0))};

static const gwr_match_pattern after_tables[NARITH] = {
    {"fold_scale.mul", GWR_M_NODES(mul_nodes), NULL, NULL},
    {"fold_scale.div", GWR_M_NODES(div_nodes), NULL, NULL},
    {"fold_scale.add", GWR_M_NODES(add_nodes), NULL, NULL},
    {"fold_scale.sub", GWR_M_NODES(sub_nodes), NULL, NULL},
    {"fold_scale.rsub", GWR_M_NODES(rsub_nodes), NULL, NULL},
};

static int kind_of(const gwr_layer *l) {
    static const char *const ops[NKIND] = {"Conv", "ConvTranspose", "Gemm", "MatMul"};
    if (*gwr_layer_domain(l)) return -1;
    for (int k = 0; k < NKIND; k++)
        if (!strcmp(gwr_layer_op(l), ops[k])) return k;
    return -1;
}

/* ---- the arithmetic ---------------------------------------------------------- */

/* What a fold needs, and the scratch it owns. */
typedef struct fold {
    int kind;
    arith op;
    gwr_match_const w;
    gwr_ps_layout lo;        /* its output channels, group, transB, Gemm's beta */
    double *k, *bv, *wv;     /* k and the new bias: nch each; the new weights: w.numel */
    int has_bias;            /* the result reads a bias */
} fold;

/* The largest finite value of a real float dtype. */
static double dtype_max(gwr_dtype t) {
    switch (t) {
    case GWR_FLOAT16: return 65504.0;
    case GWR_BFLOAT16: return 3.3895313892515355e38;
    case GWR_FLOAT32: return FLT_MAX;
    default: return DBL_MAX;
    }
}

/* Output channel of weight element i. */
static int64_t channel_of(const fold *f, int64_t i) {
    return gwr_ps_weight_channel(f->kind, f->w.dims, f->w.numel, f->lo.group, f->lo.trans_b, i);
}

/* The producer's rules: kind, nch, group, trans_b, beta, and the rank of
 * its output (the most dims the constant may have; 0 unknown). NULL when
 * it fits, else why not. */
static const char *check_producer(fold *f, const gwr_match *m, int *out_rank) {
    gwr_layer *p = m->layers[0];
    if (!gwr_match_const_get(m->captures[W], &f->w) || !gwr_match_dtype_real_float(f->w.dtype))
        return "the weights are not real floats";
    if (f->w.numel <= 0) return "empty weights";
    if (m->captures[B] && gwr_tensor_dtype(m->captures[B]) != f->w.dtype) return "bias and weights differ in dtype";
    const char *why = gwr_ps_weight_layout(f->kind, p, &f->w, m->captures[B], &f->lo);
    if (why) return why;
    switch (f->kind) {
    case K_CONV:
    case K_CONVT: *out_rank = f->w.rank; return NULL;
    case K_GEMM: *out_rank = 2; return NULL;
    default:
        if (f->op != A_MUL && f->op != A_DIV) return "an Add or Sub after MatMul (fuse_matmul_add's)";
        *out_rank = gwr_tensor_rank(gwr_layer_output(p, 0));
        if (*out_rank < 1) *out_rank = 1; /* unknown: at least [N] */
        return NULL;
    }
}

/* k per channel into f->k; NULL when it fits, else why not. */
static const char *read_k(fold *f, const gwr_match *m, int out_rank, int scalar_only) {
    const gwr_tensor *kt = m->captures[K];
    int64_t ch = 0, n = 0;
    if (gwr_tensor_dtype(kt) != f->w.dtype) return "the constant and the weights differ in dtype";
    int axis = f->kind == K_MATMUL || f->kind == K_GEMM ? out_rank - 1 : 1;
    if (!gwr_match_const_per_channel(kt, out_rank, axis, &ch) || (ch != 1 && ch != f->lo.nch))
        return "the constant is not per output channel (its broadcast would change the output)";
    if (scalar_only && ch != 1) return "the constant is not a scalar";
    if (gwr_match_const_f64(kt, f->k, f->lo.nch, &n, NULL, NULL) || n != ch) return "the constant is not readable";
    for (int64_t o = 1; ch == 1 && o < f->lo.nch; o++) f->k[o] = f->k[0];
    for (int64_t o = 0; o < f->lo.nch; o++) {
        if (!isfinite(f->k[o])) return "the constant is not finite";
        if (f->op == A_DIV && f->k[o] == 0) return "a Div by zero";
    }
    return NULL;
}

/* The old bias per channel (0 when none; Gemm's beta * C) into f->bv. */
static const char *read_bias(fold *f, const gwr_match *m) {
    gwr_tensor *bt = m->captures[B];
    for (int64_t o = 0; o < f->lo.nch; o++) f->bv[o] = 0;
    if (!bt) return NULL;
    gwr_match_const bc;
    if (!gwr_match_const_get(bt, &bc)) return "the bias is not readable";
    int64_t ch = bc.numel;
    if (f->kind == K_GEMM) gwr_match_const_per_channel(bt, 2, 1, &ch);
    if (ch != 1 && ch != f->lo.nch) return "the bias is not per channel";
    double scale = f->kind == K_GEMM ? (double)f->lo.beta : 1.0;
    for (int64_t o = 0; o < f->lo.nch; o++) f->bv[o] = scale * gwr_match_const_at(&bc, ch == 1 ? 0 : o);
    return NULL;
}

static double apply(arith op, double v, double k) {
    switch (op) {
    case A_MUL: return v * k;
    case A_DIV: return v / k;
    case A_ADD: return v + k;
    case A_SUB: return v - k;
    default: return k - v;
    }
}

/* The new weights (when they change) and bias; NULL when done, else why
 * not (a value the dtype cannot hold). */
static const char *compute(fold *f, const gwr_match *m) {
    double mx = dtype_max(f->w.dtype);
    f->has_bias = m->captures[B] || (f->op != A_MUL && f->op != A_DIV);
    for (int64_t o = 0; f->has_bias && o < f->lo.nch; o++) {
        f->bv[o] = apply(f->op, f->bv[o], f->k[o]);
        if (!(fabs(f->bv[o]) <= mx)) return "the new bias overflows its dtype";
    }
    for (int64_t i = 0; f->op != A_ADD && f->op != A_SUB && i < f->w.numel; i++) {
        double v = gwr_match_const_at(&f->w, i);
        f->wv[i] = f->op == A_RSUB ? -v : apply(f->op, v, f->k[channel_of(f, i)]);
        if (!(fabs(f->wv[i]) <= mx) && isfinite(v)) return "the new weights overflow their dtype";
    }
    return NULL;
}

/* The replacement's output, or NULL (message in gwr_last_errmsg or on the
 * network). */
static gwr_tensor *build(gwr_network *net, fold *f, const gwr_match *m) {
    gwr_tensor *wt = m->captures[W];
    if (f->op != A_ADD && f->op != A_SUB) wt = gwr_ps_const_new(net, f->w.dtype, f->w.rank, f->w.dims, f->wv, 0);
    gwr_tensor *bt = wt && f->has_bias ? gwr_ps_const_new(net, f->w.dtype, 1, &f->lo.nch, f->bv, 0) : NULL;
    if (!wt || (f->has_bias && !bt)) return NULL;
    gwr_tensor *in[3] = {m->captures[X], wt, bt};
    gwr_layer *l = gwr_match_clone_layer(m->layers[0], bt ? 3 : 2, in);
    if (l && f->kind == K_GEMM && bt && gwr_layer_set_float(l, "beta", 1.0f)) return NULL;
    return l ? gwr_layer_output(l, 0) : NULL;
}

static int fold_after(gwr_rewrite_ctx *c, const gwr_match *m, fold *f, int scalar_only) {
    int out_rank = 0;
    const char *why = check_producer(f, m, &out_rank);
    if (why) return gwr_rewrite_no_match(c, "%s", why);
    f->k = gwr_malloc((size_t)(2 * f->lo.nch) * sizeof(double));
    f->wv = gwr_malloc((size_t)f->w.numel * sizeof(double));
    int rc;
    if (!f->k || !f->wv) {
        rc = gwr_rewrite_fail(c, GWR_ERR_NOMEM, "out of memory");
    } else {
        f->bv = f->k + f->lo.nch;
        if ((why = read_k(f, m, out_rank, scalar_only)) || (why = read_bias(f, m)) || (why = compute(f, m))) {
            rc = gwr_rewrite_no_match(c, "%s", why);
        } else {
            gwr_network *net = gwr_rewrite_ctx_network(c);
            gwr_tensor *y = build(net, f, m);
            gwr_status s = y ? gwr_match_replace(m, 1, &y) : GWR_ERR_SHAPE;
            rc = s ? gwr_rewrite_fail(c, s, "%s", y ? gwr_last_errmsg() : gwr_network_errmsg(net)) : 1;
        }
    }
    gwr_free(f->k);
    gwr_free(f->wv);
    return rc;
}

/* Is Add l, of the constant k, the x + 3 of the exporters' HardSigmoid,
 * Clip(x + 3, 0, 6) / 6? Folding the 3 into the Conv's bias would save one
 * layer and cost fuse_hard_swish the two it saves (Clip and Div into one
 * HardSigmoid), so an Add of 3 whose only reader is a Clip stays. */
static int before_hard_sigmoid(gwr_layer *l, const gwr_tensor *k) {
    gwr_tensor *y = gwr_layer_output(l, 0);
    if (!gwr_match_const_is_splat(k, 3.0, 1e-6) || gwr_tensor_num_live_users(y) != 1) return 0;
    for (int64_t i = 0; i < gwr_tensor_num_users(y); i++) {
        gwr_layer *u = gwr_tensor_user(y, i, NULL);
        if (u && !gwr_layer_is_removed(u)) return gwr_match_is_op(u, "Clip");
    }
    return 0;
}

/* Tries the root l against the tables of its op, for the producer kinds
 * in `kinds` (a bit per kind). */
static int fold_scale_root(gwr_rewrite_ctx *c, gwr_layer *l, unsigned kinds) {
    const char *op = gwr_layer_op(l);
    arith first = !strcmp(op, "Mul") ? A_MUL : !strcmp(op, "Div") ? A_DIV : !strcmp(op, "Add") ? A_ADD : A_SUB;
    arith last = first == A_SUB ? A_RSUB : first;
    char why[256] = "no table matched";
    for (arith a = first; a <= last; a++) {
        gwr_match m;
        int rc = gwr_match_layer(&after_tables[a], l, &m);
        if (rc < 0) return gwr_rewrite_fail(c, (gwr_status)-rc, "%s", gwr_last_errmsg());
        if (!rc) {
            if (rw_ctx_wants_reason(c)) gwr_match_why(&m, why, sizeof why);
            continue;
        }
        int kind = kind_of(m.layers[0]);
        if (kind < 0 || !(kinds & (1u << kind))) {
            if (rw_ctx_wants_reason(c))
                snprintf(why, sizeof why, "not read from a %s", kinds & (1u << K_CONV) ? "Conv or ConvTranspose"
                                                                                      : "Gemm or MatMul");
            continue;
        }
        if (a == A_ADD && before_hard_sigmoid(l, m.captures[K]))
            return gwr_rewrite_no_match(c, "x + 3 read by a Clip: left for fuse_hard_swish (HardSigmoid)");
        fold f = {.kind = kind, .op = a};
        return fold_after(c, &m, &f, 0);
    }
    return gwr_rewrite_no_match(c, "%s", why);
}

static int fold_scale_into_conv(gwr_rewrite_ctx *c, gwr_layer *l) {
    return fold_scale_root(c, l, 1u << K_CONV | 1u << K_CONVT);
}

static int fold_scale_into_gemm(gwr_rewrite_ctx *c, gwr_layer *l) {
    return fold_scale_root(c, l, 1u << K_GEMM | 1u << K_MATMUL);
}

static const char *const arith_ops[] = {"Mul", "Div", "Add", "Sub", NULL};

const gwr_pattern_rewriter gwr_pattern_fold_scale_into_conv = {
    .name = "fold_scale_into_conv",
    .root_ops = arith_ops,
    .match_and_rewrite = fold_scale_into_conv,
};

const gwr_pattern_rewriter gwr_pattern_fold_scale_into_gemm = {
    .name = "fold_scale_into_gemm",
    .root_ops = arith_ops,
    .match_and_rewrite = fold_scale_into_gemm,
};

/* ---- fold_scalar_around_matmul --------------------------------------------------- */

/* Before: Mul/Div(x, s) read by MatMul or Gemm at input `pos`, the other
 * of its first two inputs a constant. After: a MatMul or Gemm (either
 * operand constant, Gemm's C constant if present) read by Mul/Div(., s). */
#define SCALE_BY(op) GWR_M_OP(op, GWR_M_CAP(X), GWR_M_CONST(K))
static const gwr_match_node mm_mul0[] = {SCALE_BY("Mul"), GWR_M_OP("MatMul", GWR_M_NODE(0), GWR_M_CONST(W))};
static const gwr_match_node mm_mul1[] = {SCALE_BY("Mul"), GWR_M_OP("MatMul", GWR_M_CONST(W), GWR_M_NODE(0))};
static const gwr_match_node mm_div0[] = {SCALE_BY("Div"), GWR_M_OP("MatMul", GWR_M_NODE(0), GWR_M_CONST(W))};
static const gwr_match_node mm_div1[] = {SCALE_BY("Div"), GWR_M_OP("MatMul", GWR_M_CONST(W), GWR_M_NODE(0))};
static const gwr_match_node gm_mul0[] = {SCALE_BY("Mul"), GWR_M_OP("Gemm", GWR_M_NODE(0), GWR_M_CONST(W), GWR_M_REST)};
static const gwr_match_node gm_mul1[] = {SCALE_BY("Mul"), GWR_M_OP("Gemm", GWR_M_CONST(W), GWR_M_NODE(0), GWR_M_REST)};
static const gwr_match_node gm_div0[] = {SCALE_BY("Div"), GWR_M_OP("Gemm", GWR_M_NODE(0), GWR_M_CONST(W), GWR_M_REST)};
static const gwr_match_node gm_div1[] = {SCALE_BY("Div"), GWR_M_OP("Gemm", GWR_M_CONST(W), GWR_M_NODE(0), GWR_M_REST)};
#define OUT_PRODUCER0 {.op = NULL, .in = {GWR_M_CAP(X), GWR_M_CONST(W), GWR_M_OPT_CONST(B)}}
#define OUT_PRODUCER1 {.op = NULL, .in = {GWR_M_CONST(W), GWR_M_CAP(X), GWR_M_OPT_CONST(B)}}
static const gwr_match_node out_mul0[] = {OUT_PRODUCER0, GWR_M_OP("Mul", GWR_M_NODE(0), GWR_M_CONST(K))};
static const gwr_match_node out_mul1[] = {OUT_PRODUCER1, GWR_M_OP("Mul", GWR_M_NODE(0), GWR_M_CONST(K))};
static const gwr_match_node out_div0[] = {OUT_PRODUCER0, GWR_M_OP("Div", GWR_M_NODE(0), GWR_M_CONST(K))};
static const gwr_match_node out_div1[] = {OUT_PRODUCER1, GWR_M_OP("Div", GWR_M_NODE(0), GWR_M_CONST(K))};

/* A table, where its constant operand sits (pos: the input of the linear
 * layer), whether the scale is on the output, and the arithmetic. */
typedef struct around {
    gwr_match_pattern p;
    int pos, on_output;
    arith op;
} around;

static const around around_tables[] = {
    {{"fold_scalar.matmul_mul0", GWR_M_NODES(mm_mul0), NULL, NULL}, 1, 0, A_MUL},
    {{"fold_scalar.matmul_mul1", GWR_M_NODES(mm_mul1), NULL, NULL}, 0, 0, A_MUL},
    {{"fold_scalar.matmul_div0", GWR_M_NODES(mm_div0), NULL, NULL}, 1, 0, A_DIV},
    {{"fold_scalar.matmul_div1", GWR_M_NODES(mm_div1), NULL, NULL}, 0, 0, A_DIV},
    {{"fold_scalar.gemm_mul0", GWR_M_NODES(gm_mul0), NULL, NULL}, 1, 0, A_MUL},
    {{"fold_scalar.gemm_mul1", GWR_M_NODES(gm_mul1), NULL, NULL}, 0, 0, A_MUL},
    {{"fold_scalar.gemm_div0", GWR_M_NODES(gm_div0), NULL, NULL}, 1, 0, A_DIV},
    {{"fold_scalar.gemm_div1", GWR_M_NODES(gm_div1), NULL, NULL}, 0, 0, A_DIV},
    {{"fold_scalar.out_mul0", GWR_M_NODES(out_mul0), NULL, NULL}, 1, 1, A_MUL},
    {{"fold_scalar.out_mul1", GWR_M_NODES(out_mul1), NULL, NULL}, 0, 1, A_MUL},
    {{"fold_scalar.out_div0", GWR_M_NODES(out_div0), NULL, NULL}, 1, 1, A_DIV},
    {{"fold_scalar.out_div1", GWR_M_NODES(out_div1), NULL, NULL}, 0, 1, A_DIV},
};
#define NAROUND ((int)(sizeof around_tables / sizeof around_tables[0]))

/* A constant to be: apply(op, pre * t, s) over t's elements, rounded once
 * to t's dtype when built. */
typedef struct scaled {
    gwr_match_const c;
    double *v;
} scaled;

/* Computes sc from t; NULL when done, else why not (t not a readable
 * real-float constant, out of memory, a value overflowing the dtype). */
static const char oom[] = "out of memory";
static const char *scale_values(scaled *sc, const gwr_tensor *t, arith op, double pre, double s) {
    if (!gwr_match_const_get(t, &sc->c) || !gwr_match_dtype_real_float(sc->c.dtype) || sc->c.numel <= 0)
        return "the weights are not real floats";
    double mx = dtype_max(sc->c.dtype);
    if (!(sc->v = gwr_malloc((size_t)sc->c.numel * sizeof *sc->v))) return oom;
    for (int64_t i = 0; i < sc->c.numel; i++) {
        double x = gwr_match_const_at(&sc->c, i);
        sc->v[i] = apply(op, pre * x, s);
        if (!(fabs(sc->v[i]) <= mx) && isfinite(x)) return "the new weights overflow their dtype";
    }
    return NULL;
}

static gwr_tensor *scaled_build(gwr_network *net, const scaled *sc) {
    return gwr_ps_const_new(net, sc->c.dtype, sc->c.rank, sc->c.dims, sc->v, 0);
}

/* The scalar's checks: one element of the weights' dtype, finite, not a
 * Div by 0, and no more dims than `other` (the tensor it is broadcast
 * with; of unknown rank, a rank-0 scalar only). */
static const char *check_scalar(const gwr_match *m, const around *a, const gwr_tensor *other, double *s) {
    const gwr_tensor *kt = m->captures[K];
    if (!gwr_match_const_scalar(kt, s)) return "the constant has more than one element";
    if (gwr_tensor_dtype(kt) != gwr_tensor_dtype(m->captures[W])) return "the scalar and the weights differ in dtype";
    if (!isfinite(*s)) return "the scalar is not finite";
    if (a->op == A_DIV && *s == 0) return "a Div by zero";
    int r = gwr_tensor_rank(other), kr = gwr_tensor_rank(kt);
    if (r < 0 ? kr != 0 : kr > r) return "the scalar has more dims than the tensor it scales";
    return NULL;
}

/* The new MatMul or Gemm, once the values are computed. */
static gwr_tensor *around_build(gwr_network *net, const gwr_match *m, const around *a, const scaled *w,
                                const scaled *cc) {
    gwr_layer *lin = m->layers[a->on_output ? 0 : 1];
    int nin = gwr_layer_num_inputs(lin);
    gwr_tensor *in[3] = {NULL, NULL, NULL};
    for (int i = 0; i < nin && i < 3; i++) in[i] = gwr_layer_input(lin, i);
    in[1 - a->pos] = m->captures[X];
    if (!(in[a->pos] = scaled_build(net, w))) return NULL;
    if (cc->v && !(in[2] = scaled_build(net, cc))) return NULL;
    gwr_layer *l = gwr_match_clone_layer(lin, nin, in);
    if (l && cc->v && gwr_layer_set_float(l, "beta", 1.0f)) return NULL;
    return l ? gwr_layer_output(l, 0) : NULL;
}

static int fold_around(gwr_rewrite_ctx *c, const gwr_match *m, const around *a) {
    gwr_layer *lin = m->layers[a->on_output ? 0 : 1];
    int linear_gemm = gwr_match_is_op(lin, "Gemm");
    if (!linear_gemm && !gwr_match_is_op(lin, "MatMul"))
        return gwr_rewrite_no_match(c, "not around a MatMul or Gemm");
    if (!linear_gemm && m->captures[B]) return gwr_rewrite_no_match(c, "a MatMul with three inputs");
    /* x * 0.5 after x * (1 + Erf(..)) is GELU's tail, x * Clip(..) / 6
     * HardSwish's: folding the constant into the next MatMul would cost
     * fuse_gelu or fuse_hard_swish their match. */
    gwr_layer *xp = a->on_output ? NULL : gwr_tensor_parent(m->captures[X]);
    if (gwr_match_is_op(xp, "Mul") || gwr_match_is_op(xp, "Div"))
        return gwr_rewrite_no_match(c, "the scaled tensor is a Mul or Div (an activation's tail, GELU's 0.5)");
    double s = 0;
    gwr_tensor *other = a->on_output ? gwr_layer_output(lin, 0) : m->captures[X];
    const char *why = check_scalar(m, a, other, &s);
    if (why) return gwr_rewrite_no_match(c, "%s", why);
    float beta = 1.0f;
    gwr_layer_attr_float(lin, "beta", 1.0f, &beta);
    scaled w = {.v = NULL}, cc = {.v = NULL};
    why = scale_values(&w, m->captures[W], a->op, 1.0, s);
    /* On the output, Gemm's beta * C scales too (and beta becomes 1). */
    if (!why && a->on_output && m->captures[B]) why = scale_values(&cc, m->captures[B], a->op, beta, s);
    int rc;
    if (why) {
        rc = why == oom ? gwr_rewrite_fail(c, GWR_ERR_NOMEM, "%s", why) : gwr_rewrite_no_match(c, "%s", why);
    } else {
        gwr_network *net = gwr_rewrite_ctx_network(c);
        gwr_tensor *y = around_build(net, m, a, &w, &cc);
        gwr_status st = y ? gwr_match_replace(m, 1, &y) : GWR_ERR_SHAPE;
        rc = st ? gwr_rewrite_fail(c, st, "%s", y ? gwr_last_errmsg() : gwr_network_errmsg(net)) : 1;
    }
    gwr_free(w.v);
    gwr_free(cc.v);
    return rc;
}

static int fold_scalar_around_matmul(gwr_rewrite_ctx *c, gwr_layer *l) {
    char why[256] = "no table matched";
    const char *op = gwr_layer_op(l);
    for (int i = 0; i < NAROUND; i++) {
        const around *a = &around_tables[i];
        if (strcmp(op, a->p.nodes[a->p.nnodes - 1].op)) continue;
        gwr_match m;
        int rc = gwr_match_layer(&a->p, l, &m);
        if (rc < 0) return gwr_rewrite_fail(c, (gwr_status)-rc, "%s", gwr_last_errmsg());
        if (rc) return fold_around(c, &m, a);
        if (rw_ctx_wants_reason(c)) gwr_match_why(&m, why, sizeof why);
    }
    return gwr_rewrite_no_match(c, "%s", why);
}

static const char *const around_ops[] = {"MatMul", "Gemm", "Mul", "Div", NULL};

const gwr_pattern_rewriter gwr_pattern_fold_scalar_around_matmul = {
    .name = "fold_scalar_around_matmul",
    .root_ops = around_ops,
    .match_and_rewrite = fold_scalar_around_matmul,
};

/* ---- the pass table's rows (pass_table.h) ---- */
#include "passes/pass_table.h"

GWR_PASS(fold_scale_into_conv, FOLD, .pattern = &gwr_pattern_fold_scale_into_conv, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-4,
         .summary = "fold a per-channel or scalar constant Mul/Div/Add/Sub after a Conv or ConvTranspose into its "
                    "weights and bias");

GWR_PASS(fold_scale_into_gemm, FOLD, .pattern = &gwr_pattern_fold_scale_into_gemm, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-4,
         .summary = "fold a per-column or scalar constant Mul/Div/Add/Sub after a Gemm (Mul/Div after a MatMul) into "
                    "its weights");

GWR_PASS(fold_scalar_around_matmul, FOLD, .pattern = &gwr_pattern_fold_scalar_around_matmul, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-4,
         .summary = "fold a scalar Mul/Div on the input or output of a MatMul or Gemm into its constant operand");
