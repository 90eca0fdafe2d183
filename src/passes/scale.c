/* scale.c - fold_batchnorm: an inference BatchNormalization whose scale,
 * B, mean and var are constants, reading the only output of a layer with
 * constant weights, becomes part of that layer's weights and bias:
 *
 *   s = gamma / sqrt(var + eps)            (per output channel, in double)
 *   W'[.., o, ..] = W[.., o, ..] * s[o]
 *   B'[o] = (B[o] - mean[o]) * s[o] + beta[o]
 *
 * rounded once to the weights' dtype. The producers:
 *   Conv            W [C_out, C_in/group, k...]: channel o = dim 0.
 *   ConvTranspose   W [C_in, C_out/group, k...]: input channel ci is in
 *                   group g = ci / (C_in/group), and W[ci, j, ...] feeds
 *                   output channel g * (C_out/group) + j.
 *   Gemm            B [K, N] (transB 0) or [N, K] (transB 1): channel = the
 *                   output column n; C' = s * (beta * C - mean) + bn_beta
 *                   with the new Gemm's beta 1 (C must be constant along M).
 *   MatMul          A of known rank 2 (so that BN's channel axis 1 is the
 *                   MatMul's last axis) and a constant 2-D W [K, N]: becomes
 *                   a Gemm(A, W', C').
 * The weights are never changed in place: new constants are built, so a
 * weight shared with another layer stays as it was for that layer (the
 * pass fires; the old constant dies when nothing else reads it).
 *
 * Not a rule file: the producer is any of four layer kinds with different weight layouts (shared
 * weights copied), and MatMul becomes Gemm on the way; the fold is computed through the executor's
 * dtype conversions.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gwr/exec.h"
#include "gwr/match.h"
#include "gwr/passes.h"
#include "passes/pass_util.h"
#include "util/util.h"

enum { X, W, B, GAMMA, BETA, MEAN, VAR, NCAP };
enum { K_CONV = GWR_PS_W_CONV, K_CONVT = GWR_PS_W_CONVT, K_GEMM = GWR_PS_W_GEMM, K_MATMUL = GWR_PS_W_MATMUL, NKIND };

/* The BatchNormalization root, in inference form (training_mode 0; the
 * pre-opset-9 spatial attribute 1). */
#define BN_ROOT                                                                                                     \
    {.op = "BatchNormalization",                                                                                    \
     .in = {GWR_M_NODE(0), GWR_M_CONST(GAMMA), GWR_M_CONST(BETA), GWR_M_CONST(MEAN), GWR_M_CONST(VAR)},            \
     .attrs = {GWR_MA_INT_OR_ABSENT("training_mode", 0), GWR_MA_INT_OR_ABSENT("spatial", 1)}}

static int fold_batchnorm(gwr_rewrite_ctx *c, const gwr_match *m);

/* in K_* order: the kind is the producer's op */
static const char *const producer_ops[] = {"Conv", "ConvTranspose", "Gemm", "MatMul", NULL};
static const gwr_match_node bn_nodes[] = {
    {.ops = producer_ops, .in = {GWR_M_CAP(X), GWR_M_CONST(W), GWR_M_OPT_CONST(B)}}, /* a MatMul has no B */
    BN_ROOT,
};
static const gwr_match_pattern bn_p = {"fold_batchnorm", GWR_M_NODES(bn_nodes), fold_batchnorm, NULL};

/* What the rewrite needs, and the scratch it owns. */
typedef struct fold {
    int kind;
    gwr_match_const w;      /* the weights */
    gwr_ps_layout lo;       /* their output channels, group, transB, Gemm's beta */
    double *s, *shift;      /* nch each: y = x * s + shift */
    double *wv, *bv;        /* the new weights (w.numel) and bias (nch) */
} fold;

/* Output channel of weight element i. */
static int64_t channel_of(const fold *f, int64_t i) {
    return gwr_ps_weight_channel(f->kind, f->w.dims, f->w.numel, f->lo.group, f->lo.trans_b, i);
}

/* Reads n channel values (1 broadcasts) of constant t into out. 0 when t
 * is not such a constant. */
static int read_channels(const gwr_tensor *t, int64_t nch, double *out) {
    int64_t n = 0;
    if (gwr_match_const_f64(t, out, nch, &n, NULL, NULL) || (n != nch && n != 1)) return 0;
    for (int64_t i = 1; n == 1 && i < nch; i++) out[i] = out[0];
    return 1;
}

/* Checks the producer's shape rules and sets f->lo. NULL when it fits,
 * else why not. */
static const char *check_producer(fold *f, const gwr_match *m) {
    if (!gwr_match_const_get(m->captures[W], &f->w) || !gwr_match_dtype_real_float(f->w.dtype)) return "the weights are not floats";
    if (f->w.numel <= 0) return "empty weights";
    if (m->captures[B] && gwr_tensor_dtype(m->captures[B]) != f->w.dtype) return "bias and weights differ in dtype";
    const char *why = gwr_ps_weight_layout(f->kind, m->layers[0], &f->w, m->captures[B], &f->lo);
    /* BN's channel axis is 1; it is MatMul's last axis only at rank 2. */
    if (!why && f->kind == K_MATMUL && gwr_tensor_rank(m->captures[X]) != 2)
        return "MatMul's input is not known to be of rank 2";
    return why;
}

/* s, shift, the new weights and bias. NULL when done, else why not. */
static const char *compute(fold *f, const gwr_match *m) {
    int64_t C = f->lo.nch;
    double *gamma = f->s, *beta = f->shift, *mean = f->bv, *var = f->wv;
    if (!read_channels(m->captures[GAMMA], C, gamma) || !read_channels(m->captures[BETA], C, beta) ||
        !read_channels(m->captures[MEAN], C, mean) || !read_channels(m->captures[VAR], C, var))
        return "scale, B, mean and var are not per-channel constants of the producer's channels";
    float eps = 1e-5f;
    gwr_layer_get_float(m->layers[1], "epsilon", &eps);
    for (int64_t o = 0; o < C; o++) {
        double den = var[o] + (double)eps;
        if (!(den > 0) || !isfinite(den)) return "var + epsilon is not positive";
        f->s[o] = gamma[o] / sqrt(den);
        f->shift[o] = beta[o] - mean[o] * f->s[o];
    }
    /* The old bias, then the new one: B'[o] = B[o] * s[o] + shift[o]. */
    gwr_tensor *bt = m->captures[B];
    for (int64_t o = 0; o < C; o++) f->bv[o] = 0;
    if (bt && f->kind == K_GEMM) {
        int64_t ch = 1;
        gwr_match_const_per_channel(bt, 2, 1, &ch);
        gwr_match_const bc;
        if (!gwr_match_const_get(bt, &bc)) return "C is not readable";
        for (int64_t o = 0; o < C; o++) f->bv[o] = (double)f->lo.beta * gwr_match_const_at(&bc, ch == 1 ? 0 : o);
    } else if (bt && !read_channels(bt, C, f->bv)) {
        return "the bias is not per-channel";
    }
    for (int64_t o = 0; o < C; o++) f->bv[o] = f->bv[o] * f->s[o] + f->shift[o];
    return NULL;
}

/* The replacement's output, or NULL (message in gwr_last_errmsg or on the
 * network). */
static gwr_tensor *build(gwr_network *net, fold *f, const gwr_match *m) {
    for (int64_t i = 0; i < f->w.numel; i++) f->wv[i] = gwr_match_const_at(&f->w, i) * f->s[channel_of(f, i)];
    gwr_tensor *wt = gwr_ps_const_new(net, f->w.dtype, f->w.rank, f->w.dims, f->wv, 0);
    gwr_tensor *bt = wt ? gwr_ps_const_new(net, f->w.dtype, 1, &f->lo.nch, f->bv, 0) : NULL;
    if (!bt) return NULL;
    if (f->kind == K_MATMUL) return gwr_gemm(net, m->captures[X], wt, bt, 1.0f, 1.0f, 0, 0);
    gwr_tensor *in[3] = {m->captures[X], wt, bt};
    gwr_layer *l = gwr_match_clone_layer(m->layers[0], 3, in);
    if (l && f->kind == K_GEMM && gwr_layer_set_float(l, "beta", 1.0f)) return NULL;
    return l ? gwr_layer_output(l, 0) : NULL;
}

static int fold_one(gwr_rewrite_ctx *c, const gwr_match *m, int kind) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    gwr_layer *bn = m->layers[1];
    int nout = gwr_layer_num_outputs(bn);
    if (nout > 3) return gwr_rewrite_no_match(c, "BatchNormalization with %d outputs", nout);
    for (int o = 1; o < nout; o++) {
        gwr_tensor *t = gwr_layer_output(bn, o);
        if (t && (gwr_tensor_num_live_users(t) || gwr_tensor_output_index(t) >= 0))
            return gwr_rewrite_no_match(c, "output %d ('%s') is read (training statistics)", o, gwr_tensor_name(t));
    }
    fold f = {.kind = kind};
    const char *why = check_producer(&f, m);
    if (why) return gwr_rewrite_no_match(c, "%s", why);
    f.s = gwr_malloc((size_t)(3 * f.lo.nch) * sizeof(double));
    f.wv = gwr_malloc((size_t)(f.w.numel > f.lo.nch ? f.w.numel : f.lo.nch) * sizeof(double));
    int rc;
    if (!f.s || !f.wv) {
        rc = gwr_rewrite_fail(c, GWR_ERR_NOMEM, "out of memory");
    } else {
        f.shift = f.s + f.lo.nch, f.bv = f.s + 2 * f.lo.nch;
        if ((why = compute(&f, m))) {
            rc = gwr_rewrite_no_match(c, "%s", why);
        } else {
            gwr_tensor *outs[3] = {build(net, &f, m), NULL, NULL};
            gwr_status s = outs[0] ? gwr_match_replace(m, nout, outs) : GWR_ERR_SHAPE;
            rc = s ? gwr_rewrite_fail(c, s, "%s", outs[0] ? gwr_last_errmsg() : gwr_network_errmsg(net)) : 1;
        }
    }
    gwr_free(f.s);
    gwr_free(f.wv);
    return rc;
}

static int fold_batchnorm(gwr_rewrite_ctx *c, const gwr_match *m) {
    int kind = 0;
    while (kind < NKIND - 1 && !gwr_match_is_op(m->layers[0], producer_ops[kind])) kind++;
    return fold_one(c, m, kind);
}

static const char *const bn_ops[] = {"BatchNormalization", NULL};

const gwr_pattern_rewriter gwr_pattern_fold_batchnorm = GWR_MATCH_PASS("fold_batchnorm", bn_ops, &bn_p);

/* ---- the pass table's row (pass_table.h) ---- */
#include "passes/pass_table.h"

GWR_PASS(fold_batchnorm, FOLD, .pattern = &gwr_pattern_fold_batchnorm, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-4,
         .summary = "fold an inference BatchNormalization into the constant weights of the Conv, ConvTranspose, Gemm "
                    "or MatMul before it");
