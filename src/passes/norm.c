/* norm.c - fuse_layer_norm: the exporters' LayerNormalization over the last
 * axis becomes the one layer.
 *
 *   mean = ReduceMean(x, axes=[-1])          (keepdims 1; axes an attribute, or a constant input from opset 18)
 *   d    = Sub(x, mean)                      (the same x)
 *   var  = ReduceMean(Pow(d, 2), axes=[-1])  (or Mul(d, d))
 *   y    = Div(d, Sqrt(Add(var, eps)))       (or Mul(d, Reciprocal(Sqrt(Add(var, eps)))))
 *   [y   = Mul(y, gamma)] [y = Add(y, beta)] (constant 1-D gamma, beta over the last axis)
 *
 * becomes LayerNormalization(x, gamma or ones, beta; axis=-1, epsilon=eps).
 * The core is matched by the tables (root: the Div or the Mul); d is read
 * by two matched layers (Pow or Mul, and the root), which the matcher's
 * single-reader rule allows. The optional Mul and Add are then taken
 * forwards: each must be the only reader of the tensor before it (which
 * must not be a network output) and read a 1-D constant of x's dtype and
 * x's last dim. An axis is the last one when it is -1 or rank - 1 (rank
 * known); x must be a float tensor whose last dim is known and the core's
 * result must have x's type. LayerNormalization is in the ONNX standard
 * from opset 17: for target onnx a network importing an older default
 * opset keeps its chain. Targets ort and gwr fuse at any opset: onnxruntime
 * registers its own LayerNormalization in the ONNX domain from opset 1 (a
 * contrib kernel; it fuses opset-13 models so), and gwr's kernel runs it at
 * every opset. Such a file is refused by onnx.checker (the op is not in the
 * standard's opset 13) but loads in onnxruntime and gwr. Casts around the
 * chain (an fp16 model normalizing in float) are not looked through. */
#include <math.h>
#include <string.h>

#include "gwr/exec.h"
#include "gwr/match.h"
#include "gwr/passes.h"
#include "passes/pass_util.h"
#include "util/util.h"

enum { X, AX1, AX2, P2, EPS, NCAP };

#define KEEPDIMS GWR_MA_INT_OR_ABSENT("keepdims", 1)
#define MEAN {.op = "ReduceMean", .in = {GWR_M_CAP(X), GWR_M_OPT_CONST(AX1)}, .attrs = {KEEPDIMS}}
#define SUB GWR_M_OP("Sub", GWR_M_CAP(X), GWR_M_NODE(0))
#define POW GWR_M_OP("Pow", GWR_M_NODE(1), GWR_M_SPLAT(P2, 2.0))
#define SQUARE GWR_M_OP("Mul", GWR_M_NODE(1), GWR_M_NODE(1))
#define VAR {.op = "ReduceMean", .in = {GWR_M_NODE(2), GWR_M_OPT_CONST(AX2)}, .attrs = {KEEPDIMS}}
#define ADD_EPS GWR_M_OP("Add", GWR_M_NODE(3), GWR_M_CONST(EPS))
#define SQRT GWR_M_OP("Sqrt", GWR_M_NODE(4))
#define DIV GWR_M_OP("Div", GWR_M_NODE(1), GWR_M_NODE(5))
#define RECIP GWR_M_OP("Reciprocal", GWR_M_NODE(5))
#define MUL_RECIP GWR_M_OP("Mul", GWR_M_NODE(1), GWR_M_NODE(6))

static const gwr_match_node pow_div[] = {MEAN, SUB, POW, VAR, ADD_EPS, SQRT, DIV};
static const gwr_match_node square_div[] = {MEAN, SUB, SQUARE, VAR, ADD_EPS, SQRT, DIV};
static const gwr_match_node pow_recip[] = {MEAN, SUB, POW, VAR, ADD_EPS, SQRT, RECIP, MUL_RECIP};
static const gwr_match_node square_recip[] = {MEAN, SUB, SQUARE, VAR, ADD_EPS, SQRT, RECIP, MUL_RECIP};

static const gwr_match_pattern tables[] = {
    {"layer_norm.pow_div", GWR_M_NODES(pow_div), NULL, NULL},
    {"layer_norm.square_div", GWR_M_NODES(square_div), NULL, NULL},
    {"layer_norm.pow_reciprocal", GWR_M_NODES(pow_recip), NULL, NULL},
    {"layer_norm.square_reciprocal", GWR_M_NODES(square_recip), NULL, NULL},
};
#define NTABLES ((int)(sizeof tables / sizeof tables[0]))

/* x a float tensor of known rank >= 1 and known last dim, y of x's type. */
static int same_type(const gwr_tensor *x, const gwr_tensor *y) {
    gwr_dtype t = gwr_tensor_dtype(x);
    int r = gwr_tensor_rank(x);
    if (!gwr_match_dtype_real_float(t) || t != gwr_tensor_dtype(y) || r < 1 || r != gwr_tensor_rank(y)) return 0;
    if (!GWR_DIM_IS_KNOWN(gwr_tensor_dim(x, -1))) return 0;
    return !memcmp(gwr_tensor_dims(x), gwr_tensor_dims(y), (size_t)r * sizeof(gwr_dim));
}

/* ReduceMean l reduces exactly the last axis of a rank-r input: its axes
 * attribute, or else its constant axes input, is [-1] or [r - 1]. */
static int last_axis_only(const gwr_layer *l, const gwr_tensor *axes_in, int r) {
    const int64_t *ax;
    int64_t n = 0;
    double v;
    int has_attr = gwr_layer_find_attr(l, "axes") >= 0;
    if (has_attr == (axes_in != NULL)) return 0; /* none (all axes), or both */
    if (has_attr) {
        if (gwr_layer_get_ints(l, "axes", &ax, &n) || n != 1) return 0;
        return ax[0] == -1 || ax[0] == r - 1;
    }
    gwr_dtype t = gwr_tensor_dtype(axes_in);
    if ((t != GWR_INT64 && t != GWR_INT32) || !gwr_match_const_scalar(axes_in, &v)) return 0;
    return v == -1 || v == r - 1;
}

/* The tensor a 1-D constant of x's dtype and c elements is, read by the
 * only reader of t, a default-domain `op` of two inputs t and it; NULL
 * when not. *reader gets the layer. */
static gwr_tensor *param_after(gwr_tensor *t, const char *op, gwr_dtype dt, int64_t c, gwr_layer **reader) {
    if (gwr_tensor_output_index(t) >= 0 || gwr_tensor_num_live_users(t) != 1) return NULL;
    gwr_layer *u = NULL;
    for (int64_t i = 0; i < gwr_tensor_num_users(t) && !u; i++)
        if (!gwr_layer_is_removed(gwr_tensor_user(t, i, NULL))) u = gwr_tensor_user(t, i, NULL);
    if (!u || strcmp(gwr_layer_op(u), op) || *gwr_layer_domain(u) || gwr_layer_num_inputs(u) != 2) return NULL;
    if (gwr_layer_num_outputs(u) != 1) return NULL;
    gwr_tensor *a = gwr_layer_input(u, 0), *b = gwr_layer_input(u, 1), *p = a == t ? b : a;
    if ((a == t) == (b == t)) return NULL;
    gwr_match_const k;
    if (!gwr_match_const_get(p, &k) || k.dtype != dt || k.rank != 1 || k.dims[0] != c) return NULL;
    *reader = u;
    return p;
}

/* LayerNormalization exists at this default-domain opset (-1: none). */
static int has_layer_norm(int64_t opset) { return opset < 0 || opset >= 17; }

/* The match's own checks; NULL when it fits, else why not. */
static const char *check(const gwr_match *m, gwr_layer *root, float *eps) {
    gwr_tensor *x = m->captures[X];
    if (!same_type(x, gwr_layer_output(root, 0)))
        return "x is not a float tensor of the result's type with a known last dim";
    int r = gwr_tensor_rank(x);
    if (!last_axis_only(m->layers[0], m->captures[AX1], r) || !last_axis_only(m->layers[3], m->captures[AX2], r))
        return "a ReduceMean does not reduce exactly the last axis";
    double e;
    if (!gwr_match_const_scalar(m->captures[EPS], &e) || !isfinite(e) || e < 0)
        return "epsilon is not one finite non-negative constant";
    *eps = (float)e;
    return NULL;
}

static int fuse(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    if (*gwr_layer_domain(l) || gwr_layer_num_outputs(l) != 1) return gwr_rewrite_no_match(c, "not an ONNX Div or Mul");
    int64_t opset = gwr_network_opset(net, "");
    if (gwr_ps_target(c) == GWR_TARGET_ONNX && !has_layer_norm(opset))
        return gwr_rewrite_no_match(c, "LayerNormalization needs opset 17 for target onnx (the network imports %lld)",
                                    (long long)opset);
    gwr_match m;
    int rc = 0;
    for (int k = 0; k < NTABLES && !rc; k++)
        if ((rc = gwr_match_layer(&tables[k], l, &m)) < 0)
            return gwr_rewrite_fail(c, (gwr_status)-rc, "%s", gwr_last_errmsg());
    if (!rc) {
        char why[256];
        gwr_match_why(&m, why, sizeof why);
        return gwr_rewrite_no_match(c, "no LayerNormalization chain (%s)", why);
    }
    float eps = 0;
    const char *why = check(&m, l, &eps);
    if (why) return gwr_rewrite_no_match(c, "%s", why);
    gwr_tensor *x = m.captures[X], *tail = gwr_layer_output(l, 0);
    gwr_dtype dt = gwr_tensor_dtype(x);
    int64_t ch = gwr_tensor_dim(x, -1);
    gwr_layer *mul = NULL, *add = NULL;
    gwr_tensor *gamma = param_after(tail, "Mul", dt, ch, &mul);
    if (gamma) tail = gwr_layer_output(mul, 0);
    gwr_tensor *beta = param_after(tail, "Add", dt, ch, &add);
    if (beta) tail = gwr_layer_output(add, 0);
    if (!gamma && !(gamma = gwr_ps_const_new(net, dt, 1, &ch, NULL, 1.0))) return gwr_rewrite_fail(c, GWR_ERR_NOMEM, "%s", gwr_network_errmsg(net));
    gwr_tensor *y = gwr_layer_norm(net, x, gamma, beta, -1, eps);
    if (!y) return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "%s", gwr_network_errmsg(net));
    gwr_status s = gwr_match_replace_layer(gwr_tensor_parent(tail), 1, &y);
    if (!s && add && mul) s = gwr_layer_mark_as_removed(mul);
    if (!s && (add || mul)) s = gwr_layer_mark_as_removed(l);
    for (int i = 0; !s && i < m.nlayers - 1; i++)
        if (m.layers[i]) s = gwr_layer_mark_as_removed(m.layers[i]);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}

static const char *const roots[] = {"Div", "Mul", NULL};

const gwr_pattern_rewriter gwr_pattern_fuse_layer_norm = {
    .name = "fuse_layer_norm",
    .root_ops = roots,
    .match_and_rewrite = fuse,
};

/* ---- the pass table's row (pass_table.h) ---- */
#include "passes/pass_table.h"

GWR_PASS(fuse_layer_norm, FUSE, .pattern = &gwr_pattern_fuse_layer_norm, .level = GWR_LEVEL_EXTENDED,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-5,
         .summary = "turn the exporters' ReduceMean/Sub/Pow/Sqrt/Div chain (and constant gamma, beta) into "
                    "LayerNormalization (opset >= 17)");
