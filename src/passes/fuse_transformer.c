/* fuse_transformer.c - transformer fusions into onnxruntime's com.microsoft
 * contrib ops (targets ort and gwr: plain ONNX runtimes lack them), and
 * Transpose into Gemm's flags (every target).
 *
 *   fuse_skip_layer_norm      LayerNormalization(a + b [+ bias])      -> SkipLayerNormalization
 *   fuse_bias_gelu            Gelu(x + bias)                          -> BiasGelu / FastGelu(x, bias)
 *   fuse_matmul_scale         s * MatMul(Transpose(a), Transpose(b))  -> FusedMatMul(a, b; alpha, transA, transB)
 *   fuse_transpose_into_gemm  Gemm(Transpose(A), Transpose(B))        -> Gemm(A, B) with transA / transB flipped
 *   fuse_rms_norm             x / Sqrt(ReduceMean(x^2) + eps) * gamma -> SimplifiedLayerNormalization (default domain)
 *                             (or x * Reciprocal(Sqrt(..)), x * (1 / Sqrt(..)), x * Pow(.., -0.5); fp16 between Casts)
 *   fuse_skip_rms_norm        SimplifiedLayerNormalization(a + b)     -> SkipSimplifiedLayerNormalization
 *   fuse_silu                 x * Sigmoid(x)                          -> QuickGelu(x; alpha 1)
 *
 * Every intermediate a fusion swallows must have no reader outside it and
 * must not be a network output, with one exception that is the point of
 * fuse_skip_layer_norm: the residual sum may have other readers (a pre-LN
 * decoder reads it again as the next block's residual) or be an output;
 * they then read SkipLayerNormalization's output 3, input_skip_bias_sum.
 * onnxruntime fuses only a sum with one reader. The shapes emitted are the
 * ones onnxruntime's CPU kernels accept: SkipLayerNormalization's input of
 * rank 2 or 3 with a skip of its shape (or [1, S, H] / [S, H] against
 * [B, S, H]) and 1-D gamma, beta, bias over the last axis; BiasGelu's bias
 * 1-D over the last axis; FusedMatMul in float32 for target ort.
 *
 * Not a rule file (fuse_matmul_scale, fuse_skip_layer_norm, fuse_rms_norm,
 * fuse_transpose_into_gemm): they fold any number of Transposes and scales around one layer, or
 * give a fused layer several outputs that other readers keep reading.
 */
#include <math.h>
#include <string.h>

#include "gwr/match.h"
#include "gwr/passes.h"
#include "passes/pass_util.h"
#include "util/util.h"

#define MS "com.microsoft"

/* ---- shared ------------------------------------------------------------------ */

/* t's producer when it is a live default-domain `op` with one output. */
static gwr_layer *producer(const gwr_tensor *t, const char *op) {
    gwr_layer *p = t ? gwr_tensor_parent(t) : NULL;
    return gwr_match_is_op(p, op) && gwr_layer_num_outputs(p) == 1 ? p : NULL;
}

/* The same known shape (every dim equal, symbols included). */
static int same_shape(const gwr_tensor *a, const gwr_tensor *b) {
    int r = gwr_tensor_rank(a);
    if (r < 0 || r != gwr_tensor_rank(b)) return 0;
    return !r || !memcmp(gwr_tensor_dims(a), gwr_tensor_dims(b), (size_t)r * sizeof(gwr_dim));
}

/* A 1-D constant of dtype dt and n elements (n known). */
static int vec_const(const gwr_tensor *t, gwr_dtype dt, gwr_dim n) {
    gwr_match_const k;
    return t && GWR_DIM_IS_KNOWN(n) && gwr_match_const_get(t, &k) && k.dtype == dt && k.rank == 1 && k.dims[0] == n;
}

/* A com.microsoft layer of op with args (may be NULL); its layer or NULL. */
static gwr_layer *ms_call(gwr_network *net, const char *op, int nin, gwr_tensor *const *in, const gwr_args *a,
                          int nout, gwr_tensor **outs) {
    return gwr_op_call(net, MS, op, nin, in, a, nout, outs);
}

static int built_fail(gwr_rewrite_ctx *c, gwr_network *net) {
    const char *m = gwr_network_errmsg(net);
    return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "%s", m && *m ? m : gwr_last_errmsg());
}


/* ---- fuse_skip_layer_norm ------------------------------------------------------ */

typedef struct skip_ln {
    gwr_tensor *a, *b, *bias, *sum;
    gwr_layer *adds[2];
} skip_ln;

/* b broadcasts to a as onnxruntime's skip does: a of rank 2 or 3, b of a's
 * shape or a's trailing dims after leading 1s. */
static int skip_fits(const gwr_tensor *a, const gwr_tensor *b) {
    int ra = gwr_tensor_rank(a), rb = gwr_tensor_rank(b);
    if (ra < 2 || ra > 3 || rb < 2 || rb > 3 || rb > ra) return 0;
    if (gwr_tensor_dtype(a) != gwr_tensor_dtype(b)) return 0;
    for (int i = 0; i < rb; i++) {
        gwr_dim da = gwr_tensor_dim(a, ra - 1 - i), db = gwr_tensor_dim(b, rb - 1 - i);
        if (db != da && !(db == 1 && i >= 2)) return 0;
    }
    return 1;
}

/* s = Add(u, v) feeding the LayerNormalization: finds a, b and an
 * optional bias (a 1-D constant of H elements) among the forms
 * Add(Add(a, b), bias), Add(Add(a, bias), b) (with_bias) and Add(a, b). */
static void find_sum(gwr_layer *add, gwr_dim h, int with_bias, skip_ln *s) {
    gwr_dtype dt = gwr_tensor_dtype(gwr_layer_output(add, 0));
    gwr_tensor *u = gwr_layer_input(add, 0), *v = gwr_layer_input(add, 1);
    memset(s, 0, sizeof *s);
    s->sum = gwr_layer_output(add, 0);
    s->adds[0] = add;
    s->a = u, s->b = v;
    for (int k = 0; with_bias && k < 2; k++) { /* the bias outermost, then innermost, on either side */
        gwr_tensor *p = k ? v : u, *q = k ? u : v;
        gwr_layer *in = producer(p, "Add");
        if (vec_const(q, dt, h) && in && gwr_match_sole_reader(p) == add && gwr_layer_num_inputs(in) == 2) {
            s->a = gwr_layer_input(in, 0), s->b = gwr_layer_input(in, 1), s->bias = q, s->adds[1] = in;
            return;
        }
    }
    for (int k = 0; with_bias && k < 2; k++) {
        gwr_tensor *p = k ? v : u, *q = k ? u : v;
        gwr_layer *in = producer(p, "Add");
        if (!in || gwr_match_sole_reader(p) != add || gwr_layer_num_inputs(in) != 2) continue;
        gwr_tensor *x = gwr_layer_input(in, 0), *bi = gwr_layer_input(in, 1);
        if (vec_const(x, dt, h)) x = bi, bi = gwr_layer_input(in, 0);
        if (vec_const(bi, dt, h) && !vec_const(x, dt, h)) {
            s->a = x, s->b = q, s->bias = bi, s->adds[1] = in;
            return;
        }
    }
}

/* NULL when LayerNormalization (or SimplifiedLayerNormalization) l can be
 * fused (gamma, beta set), else why not. */
static const char *ln_fits(gwr_layer *l, gwr_tensor **gamma, gwr_tensor **beta, float *eps) {
    gwr_tensor *x = gwr_layer_input(l, 0), *y = gwr_layer_output(l, 0);
    int64_t axis = -1;
    int r = gwr_tensor_rank(x);
    if (gwr_layer_attr_int(l, "axis", -1, &axis) || !(axis == -1 || axis == r - 1)) return "not over the last axis";
    if (gwr_layer_attr_float(l, "epsilon", 1e-5f, eps)) return "a bad epsilon";
    for (int i = 1; i < gwr_layer_num_outputs(l); i++)
        if (gwr_tensor_num_live_users(gwr_layer_output(l, i)) || gwr_tensor_output_index(gwr_layer_output(l, i)) >= 0)
            return "its Mean or InvStdDev is read";
    gwr_dtype dt = gwr_tensor_dtype(x);
    if (dt != GWR_FLOAT32 && dt != GWR_FLOAT16) return "not float32 or float16";
    if (!gwr_match_same_type(x, y) || r < 2 || r > 3) return "X is not of rank 2 or 3 with the result's type";
    gwr_dim h = gwr_tensor_dim(x, -1);
    *gamma = gwr_layer_input(l, 1);
    *beta = gwr_layer_num_inputs(l) > 2 ? gwr_layer_input(l, 2) : NULL;
    if (!vec_const(*gamma, dt, h)) return "Scale is not a 1-D constant over the last axis";
    if (*beta && !vec_const(*beta, dt, h)) return "B is not a 1-D constant over the last axis";
    return NULL;
}

static int fuse_skip_ln(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    if (!gwr_ps_target_contrib(c)) return gwr_rewrite_no_match(c, "SkipLayerNormalization is for targets ort and gwr");
    if (*gwr_layer_domain(l)) return gwr_rewrite_no_match(c, "not a default-domain normalization");
    /* onnxruntime's RMSNorm: SkipSimplifiedLayerNormalization, no bias (its
     * kernels have not always added it) */
    int simple = !strcmp(gwr_layer_op(l), "SimplifiedLayerNormalization");
    gwr_tensor *gamma, *beta, *x = gwr_layer_input(l, 0);
    float eps;
    const char *why = ln_fits(l, &gamma, &beta, &eps);
    if (why) return gwr_rewrite_no_match(c, "%s %s", gwr_layer_op(l), why);
    gwr_layer *add = producer(x, "Add");
    skip_ln s;
    if (!add || gwr_layer_num_inputs(add) != 2) return gwr_rewrite_no_match(c, "X is not an Add's");
    find_sum(add, gwr_tensor_dim(x, -1), !simple, &s);
    if (!skip_fits(s.a, s.b)) {
        gwr_tensor *t = s.a;
        s.a = s.b, s.b = t;
    }
    if (!skip_fits(s.a, s.b) || !same_shape(s.a, x))
        return gwr_rewrite_no_match(c, "the summands are not [B,S,H] / [S,H] of X's shape");
    int shared = gwr_match_sole_reader(s.sum) != l;
    gwr_args *a = gwr_args_new();
    gwr_tensor *in[5] = {s.a, s.b, gamma, beta, s.bias}, *outs[4] = {0};
    int nin = simple ? 3 : s.bias ? 5 : beta ? 4 : 3;
    gwr_layer *f = NULL;
    if (a && !gwr_args_set_float(a, "epsilon", eps))
        f = ms_call(net, simple ? "SkipSimplifiedLayerNormalization" : "SkipLayerNormalization", nin, in, a,
                    shared ? 4 : 1, outs);
    gwr_args_free(a);
    if (!f) return built_fail(c, net);
    gwr_tensor *repl[3] = {outs[0], NULL, NULL}; /* the other outputs are unread (ln_fits) */
    gwr_status st = gwr_match_replace_layer(l, gwr_layer_num_outputs(l), repl);
    if (!st && shared) st = gwr_tensor_replace_all_uses_with(s.sum, outs[3]);
    for (int i = 0; !st && i < 2; i++)
        if (s.adds[i]) st = gwr_layer_mark_as_removed(s.adds[i]);
    return st ? gwr_rewrite_fail(c, st, "%s", gwr_last_errmsg()) : 1;
}

static const char *const ln_roots[] = {"LayerNormalization", NULL}, *const sln_roots[] = {"SimplifiedLayerNormalization", NULL};

const gwr_pattern_rewriter gwr_pattern_fuse_skip_layer_norm = {
    .name = "fuse_skip_layer_norm",
    .root_ops = ln_roots,
    .match_and_rewrite = fuse_skip_ln,
};

/* The RMSNorm form, its own row: a different level (the pass table's rows below). */
static const gwr_pattern_rewriter gwr_pattern_fuse_skip_rms_norm = {
    .name = "fuse_skip_rms_norm",
    .root_ops = sln_roots,
    .match_and_rewrite = fuse_skip_ln,
};

/* ---- fuse_matmul_scale ------------------------------------------------------------- */

/* t = Transpose(x) swapping only the last two axes, read only by `reader`:
 * x, else NULL. */
static gwr_tensor *swap_last2(const gwr_tensor *t, const gwr_layer *reader) {
    gwr_layer *p = producer(t, "Transpose");
    if (!p || gwr_match_sole_reader(t) != reader) return NULL;
    gwr_tensor *x = gwr_layer_input(p, 0);
    const int64_t *perm;
    int64_t n;
    int r = gwr_tensor_rank(x);
    if (r < 2 || gwr_layer_attr_ints(p, "perm", &perm, &n) || n != r) return NULL;
    for (int i = 0; i < r; i++)
        if (perm[i] != (i < r - 2 ? i : i == r - 2 ? r - 1 : r - 2)) return NULL;
    return x;
}

/* l = Mul(x, s), Mul(s, x) or Div(x, s) with s a constant splat whose
 * broadcast keeps x's shape and dtype: x, and *f the factor (s or 1/s). */
static gwr_tensor *scaled(gwr_layer *l, double *f) {
    int div = !strcmp(gwr_layer_op(l), "Div");
    if (*gwr_layer_domain(l) || gwr_layer_num_inputs(l) != 2 || gwr_layer_num_outputs(l) != 1) return NULL;
    if (!div && strcmp(gwr_layer_op(l), "Mul")) return NULL;
    for (int k = 0; k < (div ? 1 : 2); k++) {
        gwr_tensor *x = gwr_layer_input(l, k), *s = gwr_layer_input(l, 1 - k);
        gwr_match_const kc;
        if (!gwr_match_const_get(s, &kc) || kc.numel < 1) continue;
        double v = gwr_match_const_at(&kc, 0);
        if (!isfinite(v) || v == 0 || !gwr_match_const_is_splat(s, v, 0) || !gwr_match_same_type(x, gwr_layer_output(l, 0))) continue;
        *f = div ? 1.0 / v : v;
        return x;
    }
    return NULL;
}

typedef struct mm_fold {
    gwr_tensor *in[2];
    gwr_layer *dead[5]; /* what the FusedMatMul swallows */
    int ndead, trans[2], n;
    double alpha;
    gwr_layer *root;   /* whose output the FusedMatMul replaces */
    /* Constant scales fold into alpha: not in the half types, where the
     * layers round the scaled operand and the product each to 8 (bfloat16)
     * or 11 (float16) bits and alpha rounds once (a difference of one step
     * of the type, 0.4% or 0.05%, far beyond the pass's tolerance);
     * transposes still fold there (exact). */
    int scales;
} mm_fold;

static int is_const(const gwr_tensor *t) {
    gwr_match_const k;
    return gwr_match_const_get(t, &k);
}

/* Folds what feeds operand i of matmul l into f. A Transpose or scale of
 * a constant is left to fold_constants (a plain weight is better than a
 * flag). */
static void fold_operand(mm_fold *f, gwr_layer *l, int i) {
    gwr_tensor *t = gwr_layer_input(l, i), *x;
    double s;
    gwr_layer *p = t ? gwr_tensor_parent(t) : NULL, *reader = l;
    if (f->scales && p && !gwr_layer_is_removed(p) && gwr_match_sole_reader(t) == l && (x = scaled(p, &s)) && !is_const(x)) {
        f->alpha *= s, f->dead[f->ndead++] = p, f->n++;
        t = x, reader = p;
    }
    /* a Transpose read only by the scale or the matmul */
    if ((x = swap_last2(t, reader)) && !is_const(x)) {
        f->trans[i] ^= 1, f->dead[f->ndead++] = gwr_tensor_parent(t), f->n++;
        t = x;
    }
    f->in[i] = t;
}

static int fuse_matmul_scale(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    unsigned target = (unsigned)gwr_match_target(c);
    if (!gwr_ps_target_contrib(c)) return gwr_rewrite_no_match(c, "FusedMatMul is for targets ort and gwr");
    int fused = !strcmp(gwr_layer_domain(l), MS);
    if (!fused && *gwr_layer_domain(l)) return gwr_rewrite_no_match(c, "not a MatMul");
    gwr_tensor *y = gwr_layer_output(l, 0);
    gwr_dtype dt = gwr_tensor_dtype(y);
    if (target == GWR_TARGET_ORT ? dt != GWR_FLOAT32 : !gwr_match_dtype_real_float(dt))
        return gwr_rewrite_no_match(c, "not float32 (onnxruntime's FusedMatMul)");
    mm_fold f = {.alpha = 1.0, .root = l, .scales = dt != GWR_BFLOAT16 && dt != GWR_FLOAT16};
    float a0 = 1.0f;
    int64_t ta = 0, tb = 0, tba = 0, tbb = 0;
    if (fused && (gwr_layer_attr_float(l, "alpha", 1.0f, &a0) || gwr_layer_attr_int(l, "transA", 0, &ta) ||
                  gwr_layer_attr_int(l, "transB", 0, &tb) || gwr_layer_attr_int(l, "transBatchA", 0, &tba) ||
                  gwr_layer_attr_int(l, "transBatchB", 0, &tbb) || tba || tbb))
        return gwr_rewrite_no_match(c, "a FusedMatMul with transBatch flags or bad attributes");
    f.alpha = a0, f.trans[0] = ta != 0, f.trans[1] = tb != 0;
    for (int i = 0; i < 2; i++) fold_operand(&f, l, i);
    gwr_layer *after = gwr_match_sole_reader(y);
    double s;
    if (f.scales && after && scaled(after, &s) == y) f.alpha *= s, f.dead[f.ndead++] = l, f.root = after, f.n++;
    if (!f.n) return gwr_rewrite_no_match(c, "no Transpose of the last two axes or constant scale around it");
    gwr_args *a = gwr_args_new();
    gwr_tensor *out = NULL;
    gwr_layer *m = a && !gwr_args_set_float(a, "alpha", f.alpha) && !gwr_args_set_int(a, "transA", f.trans[0]) &&
                           !gwr_args_set_int(a, "transB", f.trans[1])
                       ? ms_call(net, "FusedMatMul", 2, f.in, a, 1, &out)
                       : NULL;
    gwr_args_free(a);
    if (!m) return built_fail(c, net);
    gwr_status st = gwr_match_replace_layer(f.root, 1, &out);
    for (int i = 0; !st && i < f.ndead; i++)
        if (f.dead[i] != f.root) st = gwr_layer_mark_as_removed(f.dead[i]);
    if (!st && f.root != l) st = gwr_layer_mark_as_removed(l);
    return st ? gwr_rewrite_fail(c, st, "%s", gwr_last_errmsg()) : 1;
}

static const char *const mm_roots[] = {"MatMul", MS "::FusedMatMul", NULL};

const gwr_pattern_rewriter gwr_pattern_fuse_matmul_scale = {
    .name = "fuse_matmul_scale",
    .root_ops = mm_roots,
    .match_and_rewrite = fuse_matmul_scale,
};

/* ---- fuse_transpose_into_gemm --------------------------------------------------------- */

static int fuse_gemm_transpose(gwr_rewrite_ctx *c, gwr_layer *l) {
    static const char *const flag[2] = {"transA", "transB"};
    if (*gwr_layer_domain(l) || gwr_layer_num_inputs(l) < 2) return gwr_rewrite_no_match(c, "not an ONNX Gemm");
    gwr_tensor *x[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) x[i] = swap_last2(gwr_layer_input(l, i), l);
    if (!x[0] && !x[1]) return gwr_rewrite_no_match(c, "no Transpose([1, 0]) on A or B read only by the Gemm");
    int64_t t[2];
    if (gwr_layer_attr_int(l, flag[0], 0, &t[0]) || gwr_layer_attr_int(l, flag[1], 0, &t[1]))
        return gwr_rewrite_no_match(c, "a bad transA or transB");
    gwr_status st = GWR_OK;
    for (int i = 0; !st && i < 2; i++) {
        if (!x[i]) continue;
        gwr_layer *tr = gwr_tensor_parent(gwr_layer_input(l, i));
        st = gwr_layer_set_int(l, flag[i], !t[i]);
        if (!st) st = gwr_layer_set_input(l, i, x[i]);
        if (!st) st = gwr_layer_mark_as_removed(tr);
    }
    return st ? gwr_rewrite_fail(c, st, "%s", gwr_network_errmsg(gwr_rewrite_ctx_network(c))) : 1;
}

static const char *const gemm_roots[] = {"Gemm", NULL};

const gwr_pattern_rewriter gwr_pattern_fuse_transpose_into_gemm = {
    .name = "fuse_transpose_into_gemm",
    .root_ops = gemm_roots,
    .match_and_rewrite = fuse_gemm_transpose,
};

/* ---- fuse_rms_norm ---------------------------------------------------------------------
 *
 * The exporters' RMSNorm over the last axis,
 *
 *   x / Sqrt(ReduceMean(Pow(x, 2), axes=[-1]) + eps)          (or x * Reciprocal(Sqrt(...)),
 *                                                              x * (1 / Sqrt(...)), x * Pow(..., -0.5);
 *                                                              x * x for Pow)
 *   [* gamma]                                                  (a 1-D constant over the last axis)
 *
 * becomes onnxruntime's SimplifiedLayerNormalization(x, gamma or ones;
 * axis -1, epsilon eps), which it registers in the default domain (targets
 * ort and gwr). The half-precision exports normalize in float32 between
 * two Casts (Hugging Face's LlamaRMSNorm: weight * x.float().norm().to(half)):
 *
 *   x = Cast(x16, float)  ->  chain  ->  Cast(half)  ->  * gamma16
 *
 * becomes SimplifiedLayerNormalization(x16, gamma16) in the half type when
 * the first Cast is read only by the chain (the kernels of both normalize
 * in float: the product with gamma rounds once to half instead of twice),
 * else SimplifiedLayerNormalization(x, float(gamma16)) + Cast(half) (the
 * exporter's float32 residual stream: fuse_skip_rms_norm then takes the
 * residual Add). */

enum { RX, RP2, RAX, REPS, RONE, RHALF, RNCAP };

enum { R_POW, R_SQUARE, R_MEAN, R_ADD, R_SQRT, R_RECIP, R_ONE_OVER, R_RSQRT, R_ROOT };

/* The root is Div(x, Sqrt(..)) or Mul(x, Reciprocal(Sqrt(..)), 1 / Sqrt(..) or Pow(.., -0.5)), not a mix. */
static int rms_root_pairs(const gwr_match *m, void *user) {
    (void)user;
    return gwr_match_is_op(m->layers[R_ROOT], "Div") ==
           !(m->layers[R_RECIP] || m->layers[R_ONE_OVER] || m->layers[R_RSQRT]);
}

static int fuse_rms_norm(gwr_rewrite_ctx *c, const gwr_match *m);

static const char *const rms_roots[] = {"Div", "Mul", NULL};
static const gwr_match_node rms_nodes[] = {
    [R_POW] = GWR_M_OP("Pow", GWR_M_CAP(RX), GWR_M_SPLAT(RP2, 2.0)),
    [R_SQUARE] = GWR_M_OP("Mul", GWR_M_CAP(RX), GWR_M_CAP(RX)),
    [R_MEAN] = {.op = "ReduceMean", .in = {GWR_M_EITHER(R_POW, R_SQUARE), GWR_M_OPT_CONST(RAX)},
                .attrs = {GWR_MA_INT_OR_ABSENT("keepdims", 1)}},
    [R_ADD] = GWR_M_OP("Add", GWR_M_NODE(R_MEAN), GWR_M_CONST(REPS)),
    [R_SQRT] = GWR_M_OP("Sqrt", GWR_M_NODE(R_ADD)),
    [R_RECIP] = GWR_M_OP("Reciprocal", GWR_M_NODE(R_SQRT)),
    /* x * (1 / Sqrt(...)): PyTorch's torch.rsqrt as T5 and Llama exports write it */
    [R_ONE_OVER] = GWR_M_OP("Div", GWR_M_SPLAT(RONE, 1.0), GWR_M_NODE(R_SQRT)),
    /* x * Pow(..., -0.5): rsqrt written as a power (onnxscript, hand-written exports) */
    [R_RSQRT] = GWR_M_OP("Pow", GWR_M_NODE(R_ADD), GWR_M_SPLAT(RHALF, -0.5)),
    [R_ROOT] = {.ops = rms_roots, .in = {GWR_M_CAP(RX), GWR_M_EITHER(R_SQRT, R_RECIP, R_ONE_OVER, R_RSQRT)},
                .where = rms_root_pairs, .targets = GWR_TARGET_ORT | GWR_TARGET_GWR},
};
static const gwr_match_pattern rms_table = {"fuse_rms_norm", GWR_M_NODES(rms_nodes), fuse_rms_norm, NULL};

/* Is every live reader of t one of the match's layers? */
static int read_only_in(const gwr_tensor *t, const gwr_match *m) {
    if (gwr_tensor_output_index(t) >= 0) return 0;
    for (int64_t i = 0; i < gwr_tensor_num_users(t); i++) {
        gwr_layer *u = gwr_tensor_user(t, i, NULL);
        if (!u || gwr_layer_is_removed(u)) continue;
        int in = 0;
        for (int j = 0; j < m->nlayers && !in; j++) in = m->layers[j] == u;
        if (!in) return 0;
    }
    return 1;
}

/* The half-precision tail: tail's sole reader is Cast(to float16 or
 * bfloat16) whose sole reader is Mul(that, gamma) with gamma a 1-D constant
 * of the half type and h elements. The Cast in *cast, the Mul in *mul,
 * gamma returned; NULL when not. */
static gwr_tensor *half_tail(gwr_tensor *tail, int64_t h, gwr_layer **cast, gwr_layer **mul) {
    gwr_layer *cl = gwr_match_sole_reader(tail);
    int64_t to = 0;
    if (!gwr_match_is_op(cl, "Cast") || gwr_layer_attr_int(cl, "to", 0, &to) || (to != GWR_FLOAT16 && to != GWR_BFLOAT16))
        return NULL;
    gwr_tensor *ct = gwr_layer_output(cl, 0);
    gwr_layer *ml = gwr_match_sole_reader(ct);
    if (!gwr_match_is_op(ml, "Mul") || gwr_layer_num_inputs(ml) != 2) return NULL;
    gwr_tensor *a = gwr_layer_input(ml, 0), *b = gwr_layer_input(ml, 1), *g = a == ct ? b : a;
    if ((a == ct) == (b == ct) || !vec_const(g, (gwr_dtype)to, h) || gwr_tensor_dtype(gwr_layer_output(ml, 0)) != (gwr_dtype)to)
        return NULL;
    *cast = cl, *mul = ml;
    return g;
}

/* A float32 copy of the 1-D constant g (h elements); NULL on failure. */
static gwr_tensor *widened(gwr_network *net, const gwr_tensor *g, int64_t h) {
    double *v = gwr_calloc((size_t)h, sizeof *v);
    gwr_tensor *t = v && !gwr_match_const_f64(g, v, h, NULL, NULL, NULL) ? gwr_ps_const_new(net, GWR_FLOAT32, 1, &h, v, 0) : NULL;
    gwr_free(v);
    return t;
}

static int fuse_rms_norm(gwr_rewrite_ctx *c, const gwr_match *m) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    gwr_layer *l = m->layers[R_ROOT];
    gwr_tensor *x = m->captures[RX], *tail = gwr_layer_output(l, 0);
    gwr_dtype dt = gwr_tensor_dtype(x);
    int r = gwr_tensor_rank(x);
    double eps;
    if (!gwr_match_same_type(x, tail) || r < 1 || !GWR_DIM_IS_KNOWN(gwr_tensor_dim(x, -1)))
        return gwr_rewrite_no_match(c, "x is not a float tensor of the result's type with a known last dim");
    if (!gwr_ps_reduces_last_axis(m->layers[R_MEAN], m->captures[RAX], r)) return gwr_rewrite_no_match(c, "not a mean over the last axis");
    if (!gwr_match_const_scalar(m->captures[REPS], &eps) || !isfinite(eps) || eps < 0)
        return gwr_rewrite_no_match(c, "epsilon is not one finite non-negative constant");
    int64_t h = gwr_tensor_dim(x, -1);
    gwr_layer *mul = gwr_match_sole_reader(tail), *last = l, *cast_out = NULL, *cast_in = NULL;
    gwr_tensor *gamma = NULL, *xin = x;
    gwr_dtype ydt = dt;
    if (gwr_match_is_op(mul, "Mul") && gwr_layer_num_inputs(mul) == 2) {
        gwr_tensor *a = gwr_layer_input(mul, 0), *b = gwr_layer_input(mul, 1), *g = a == tail ? b : a;
        if ((a == tail) != (b == tail) && vec_const(g, dt, h)) gamma = g, last = mul;
    }
    if (!gamma && dt == GWR_FLOAT32 && (gamma = half_tail(tail, h, &cast_out, &mul))) {
        ydt = gwr_tensor_dtype(gamma), last = mul;
        gwr_layer *ci = producer(x, "Cast");
        gwr_tensor *x16 = ci ? gwr_layer_input(ci, 0) : NULL;
        if (x16 && gwr_tensor_dtype(x16) == ydt && same_shape(x16, x) && read_only_in(x, m)) xin = x16, cast_in = ci;
        else if (!(gamma = widened(net, gamma, h))) return built_fail(c, net);
    }
    if (!gamma && !(gamma = gwr_ps_const_new(net, dt, 1, &h, NULL, 1.0))) return built_fail(c, net);
    gwr_args *a = gwr_args_new();
    gwr_tensor *in[2] = {xin, gamma}, *out = NULL;
    gwr_layer *f = NULL;
    if (a && !gwr_args_set_int(a, "axis", -1) && !gwr_args_set_float(a, "epsilon", eps))
        f = gwr_op_call(net, "", "SimplifiedLayerNormalization", 2, in, a, 1, &out);
    gwr_args_free(a);
    if (!f) return built_fail(c, net);
    if (cast_out && !cast_in && !(out = gwr_cast(net, out, ydt))) return built_fail(c, net);
    /* The result is the value the chain's end computed: it keeps that
     * tensor's type, whose symbols may be the model's interface names where
     * x's are an exporter's (onnxruntime's quantization tool writes
     * unk__N dims inside T5, and the graph output is [batch_size, ...]). */
    const gwr_tensor *old = gwr_layer_output(last, 0);
    int known = gwr_tensor_rank(old) == r && gwr_tensor_dtype(old) == ydt;
    for (int i = 0; known && i < r; i++) known = gwr_tensor_dim(old, i) != GWR_DIM_UNKNOWN; /* a value or a symbol */
    gwr_status st = known ? gwr_tensor_set_type(out, ydt, r, gwr_tensor_dims(old)) : GWR_OK;
    if (!st) st = gwr_match_replace_layer(last, 1, &out);
    if (!st && last != l) st = gwr_layer_mark_as_removed(l);
    if (!st && cast_out) st = gwr_layer_mark_as_removed(cast_out);
    if (!st && cast_in) st = gwr_layer_mark_as_removed(cast_in);
    for (int i = 0; !st && i < m->nlayers - 1; i++)
        if (m->layers[i]) st = gwr_layer_mark_as_removed(m->layers[i]);
    return st ? gwr_rewrite_fail(c, st, "%s", gwr_last_errmsg()) : 1;
}

const gwr_pattern_rewriter gwr_pattern_fuse_rms_norm = GWR_MATCH_PASS("fuse_rms_norm", rms_roots, &rms_table);

/* ---- the pass table's rows (pass_table.h) ---- */
#include "passes/pass_table.h"
#include "passes/rules_pass.h"

GWR_PASS(fuse_transpose_into_gemm, FOLD, .pattern = &gwr_pattern_fuse_transpose_into_gemm, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_EXACT,
         .summary = "drop a Transpose([1, 0]) read only by a Gemm's A or B and flip transA / transB");

GWR_PASS(fuse_rms_norm, LOWER, .pattern = &gwr_pattern_fuse_rms_norm, .level = GWR_LEVEL_EXTENDED,
         .targets = GWR_TARGET_ORT | GWR_TARGET_GWR, .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-5,
         .summary = "turn the RMSNorm chain x / Sqrt(ReduceMean(x^2) + eps) [* gamma] into onnxruntime's "
                    "SimplifiedLayerNormalization");

/* level all, but extended for target gwr: onnxruntime's SkipLayerNormalization kernel is slower than Add +
 * LayerNormalization (docs/benchmarks.md), gwr's faster (docs/design-notes.md) */
GWR_PASS(fuse_skip_layer_norm, LOWER, .pattern = &gwr_pattern_fuse_skip_layer_norm, .level = GWR_LEVEL_ALL,
         .level_gwr = GWR_LEVEL_EXTENDED, .targets = GWR_TARGET_ORT | GWR_TARGET_GWR,
         .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-4,
         .summary = "turn LayerNormalization(a + b [+ bias]) into SkipLayerNormalization, also when the sum has "
                    "other readers (they read its input_skip_bias_sum output)");

/* extended for both targets: the decoders' residual RMSNorm (every norm but the first of a Llama-style
 * export), which onnxruntime's transformers optimizer fuses too (docs/optimize.md has the timings) */
GWR_PASS(fuse_skip_rms_norm, LOWER, .pattern = &gwr_pattern_fuse_skip_rms_norm, .level = GWR_LEVEL_EXTENDED,
         .targets = GWR_TARGET_ORT | GWR_TARGET_GWR, .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-4,
         .summary = "turn SimplifiedLayerNormalization(a + b) into SkipSimplifiedLayerNormalization, also when the "
                    "sum has other readers (the next block's residual: they read its output 3)");

GWR_PASS(fuse_silu, LOWER, .pattern = &gwr_ps_pattern_fuse_silu, .level = GWR_LEVEL_EXTENDED,
         .targets = GWR_TARGET_ORT | GWR_TARGET_GWR, .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-5,
         .summary = "turn x * Sigmoid(x) into QuickGelu(x; alpha 1)");

GWR_PASS(fuse_bias_gelu, LOWER, .pattern = &gwr_ps_pattern_fuse_bias_gelu, .level = GWR_LEVEL_EXTENDED,
         .targets = GWR_TARGET_ORT | GWR_TARGET_GWR, .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-5,
         .summary = "turn Gelu(x + bias), bias a constant over the last axis, into BiasGelu (FastGelu for tanh)");

/* in fuse (GELU's Mul comes before the MatMul, so fuse_gelu takes it first): not in fold, where
 * it took GELU's trailing * 0.5 into the next MatMul before fuse_gelu saw it (opset 13, target
 * ort); not in lower, where the fusions were offered the attention's scale Mul first */
GWR_PASS(fuse_matmul_scale, FUSE, .pattern = &gwr_pattern_fuse_matmul_scale, .level = GWR_LEVEL_EXTENDED,
         .targets = GWR_TARGET_ORT | GWR_TARGET_GWR, .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-5,
         .summary = "fold Transposes of the last two axes and constant scalar Mul/Div around a MatMul into "
                    "FusedMatMul (transA, transB, alpha)");
