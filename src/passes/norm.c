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
 * The core is matched by one table (root: the Div or the Mul; Pow(d, 2)
 * or Mul(d, d), Sqrt or Reciprocal(Sqrt) as alternatives, the driver's
 * gate for the opset); d is read by two matched layers (Pow or Mul, and
 * the root), which the matcher's single-reader rule allows. The optional Mul and Add are then taken
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
 * chain (an fp16 model normalizing in float) are not looked through.
 * Not a rule file: a rule's root is its last op and the driver visits
 * producers first, so a core-only rule would fire at the Div before the
 * optional gamma Mul and beta Add (taken forwards here) are seen. */
#include <math.h>
#include <string.h>

#include "gwr/exec.h"
#include "gwr/match.h"
#include "gwr/passes.h"
#include "passes/pass_util.h"
#include "util/util.h"

enum { X, AX1, AX2, P2, EPS, NCAP };

/* LayerNormalization exists at this default-domain opset for target onnx
 * (the driver's gate); targets ort and gwr fuse at any opset. */
#define LAYER_NORM_OPSET 17
#define KEEPDIMS GWR_MA_INT_OR_ABSENT("keepdims", 1)
enum { MEAN, SUB, POW, SQUARE, VAR, ADD_EPS, SQRT, RECIP, ROOT };

static const char *const roots[] = {"Div", "Mul", NULL};

/* The root is Div(d, Sqrt(..)) or Mul(d, Reciprocal(Sqrt(..))), not a mix. */
static int div_or_mul_recip(const gwr_match *m, void *user) {
    (void)user;
    return gwr_match_is_op(m->layers[ROOT], "Div") == !m->layers[RECIP];
}

static int fuse(gwr_rewrite_ctx *c, const gwr_match *m);

static const gwr_match_node nodes[] = {
    [MEAN] = {.op = "ReduceMean", .in = {GWR_M_CAP(X), GWR_M_OPT_CONST(AX1)}, .attrs = {KEEPDIMS}},
    [SUB] = GWR_M_OP("Sub", GWR_M_CAP(X), GWR_M_NODE(MEAN)),
    [POW] = GWR_M_OP("Pow", GWR_M_NODE(SUB), GWR_M_SPLAT(P2, 2.0)),
    [SQUARE] = GWR_M_OP("Mul", GWR_M_NODE(SUB), GWR_M_NODE(SUB)),
    [VAR] = {.op = "ReduceMean", .in = {GWR_M_EITHER(POW, SQUARE), GWR_M_OPT_CONST(AX2)}, .attrs = {KEEPDIMS}},
    [ADD_EPS] = GWR_M_OP("Add", GWR_M_NODE(VAR), GWR_M_CONST(EPS)),
    [SQRT] = GWR_M_OP("Sqrt", GWR_M_NODE(ADD_EPS)),
    [RECIP] = GWR_M_OP("Reciprocal", GWR_M_NODE(SQRT)),
    [ROOT] = {.ops = roots, .in = {GWR_M_NODE(SUB), GWR_M_EITHER(SQRT, RECIP)}, .where = div_or_mul_recip,
              .min_opset = LAYER_NORM_OPSET, .opset_targets = GWR_TARGET_ONNX},
};
static const gwr_match_pattern pattern = {"fuse_layer_norm", GWR_M_NODES(nodes), fuse, NULL};

/* The tensor a 1-D constant of x's dtype and c elements is, read by the
 * only reader of t, a default-domain `op` of two inputs t and it; NULL
 * when not. *reader gets the layer. */
static gwr_tensor *param_after(gwr_tensor *t, const char *op, gwr_dtype dt, int64_t c, gwr_layer **reader) {
    gwr_layer *u = gwr_match_sole_reader(t);
    if (!gwr_match_is_op(u, op) || gwr_layer_num_inputs(u) != 2 || gwr_layer_num_outputs(u) != 1) return NULL;
    gwr_tensor *a = gwr_layer_input(u, 0), *b = gwr_layer_input(u, 1), *p = a == t ? b : a;
    if ((a == t) == (b == t)) return NULL;
    gwr_match_const k;
    if (!gwr_match_const_get(p, &k) || k.dtype != dt || k.rank != 1 || k.dims[0] != c) return NULL;
    *reader = u;
    return p;
}

/* The match's own checks; NULL when it fits, else why not. */
static const char *check(const gwr_match *m, gwr_layer *root, float *eps) {
    gwr_tensor *x = m->captures[X];
    int r = gwr_tensor_rank(x);
    if (!gwr_match_same_type(x, gwr_layer_output(root, 0)) || r < 1 || !GWR_DIM_IS_KNOWN(gwr_tensor_dim(x, -1)))
        return "x is not a float tensor of the result's type with a known last dim";
    if (!gwr_ps_reduces_last_axis(m->layers[MEAN], m->captures[AX1], r) || !gwr_ps_reduces_last_axis(m->layers[VAR], m->captures[AX2], r))
        return "a ReduceMean does not reduce exactly the last axis";
    double e;
    if (!gwr_match_const_scalar(m->captures[EPS], &e) || !isfinite(e) || e < 0)
        return "epsilon is not one finite non-negative constant";
    *eps = (float)e;
    return NULL;
}

static int fuse(gwr_rewrite_ctx *c, const gwr_match *m) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    gwr_layer *l = m->layers[ROOT];
    float eps = 0;
    const char *why = check(m, l, &eps);
    if (why) return gwr_rewrite_no_match(c, "%s", why);
    gwr_tensor *x = m->captures[X], *tail = gwr_layer_output(l, 0);
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
    for (int i = 0; !s && i < m->nlayers - 1; i++)
        if (m->layers[i]) s = gwr_layer_mark_as_removed(m->layers[i]);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}

const gwr_pattern_rewriter gwr_pattern_fuse_layer_norm = GWR_MATCH_PASS("fuse_layer_norm", roots, &pattern);

/* ---- the pass table's row (pass_table.h) ---- */
#include "passes/pass_table.h"

GWR_PASS(fuse_layer_norm, FUSE, .pattern = &gwr_pattern_fuse_layer_norm, .level = GWR_LEVEL_EXTENDED,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-5,
         .summary = "turn the exporters' ReduceMean/Sub/Pow/Sqrt/Div chain (and constant gamma, beta) into "
                    "LayerNormalization (opset >= 17)");
