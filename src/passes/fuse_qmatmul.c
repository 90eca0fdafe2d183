/* fuse_qmatmul.c - the dynamically quantized MatMul of onnxruntime's
 * quantizer (quantize_dynamic) into onnxruntime's com.microsoft contrib ops
 * (targets ort and gwr; gwr's executor runs both, exec/kernels/qmatmul.c):
 *
 *   fuse_matmul_integer_to_float
 *     Cast(MatMulInteger(A, B, azp, bzp), to=float) * (a_scale * b_scale)
 *                                  -> MatMulIntegerToFloat(A, B, a_scale, b_scale, azp, bzp)
 *     MatMulIntegerToFloat(..) + bias      -> MatMulIntegerToFloat(.., bias)
 *     DynamicQuantizeMatMul(..) + bias     -> DynamicQuantizeMatMul(.., bias)
 *   fuse_dynamic_quantize_matmul
 *     MatMulIntegerToFloat(DynamicQuantizeLinear(x), B, ..) with the three
 *     outputs read only there          -> DynamicQuantizeMatMul(x, B, b_scale, bzp [, bias])
 *
 * What the fused ops take (and onnxruntime's CPU kernels accept): B a
 * constant 2-D int8 / uint8 [K, N]; A uint8, or int8 with an int8 B;
 * a_scale a float32 scalar, a_zero_point a scalar of A's dtype or absent
 * (a per-row a_zero_point, which MatMulInteger allows, is refused);
 * b_scale a float32 constant scalar or 1-D [N], b_zero_point a constant
 * scalar or 1-D [N] of B's dtype or absent; bias a float32 constant 1-D
 * [N]. The Mul of the two scales may have them in either order (the float
 * product is the same); a scale of any other shape (one that broadcasts
 * the product up, or per row) is refused. Every intermediate has no other
 * reader (the matcher's single-reader rule): a DynamicQuantizeLinear shared
 * by Q, K and V stays, and its MatMuls become MatMulIntegerToFloat.
 * Exact: the kernels give the unfused layers' bits.
 *
 * Not a rule file: the scale is a product of two scales found in either operand order of a Mul
 * tree, and the zero points' absence or scalar-ness decides the form.
 */
#include <string.h>

#include "gwr/match.h"
#include "gwr/passes.h"
#include "passes/pass_util.h"

#define MS "com.microsoft"


/* t holds exactly one element (rank 0 or 1, known). */
static int scalar_like(const gwr_tensor *t) {
    int r = gwr_tensor_rank(t);
    return r == 0 || (r == 1 && gwr_tensor_dim(t, 0) == 1);
}

/* A constant of dtype dt, scalar-like or 1-D [n]. */
static int scalar_or_cols(const gwr_tensor *t, gwr_dtype dt, int64_t n) {
    gwr_match_const k;
    if (!gwr_match_const_get(t, &k) || k.dtype != dt) return 0;
    return (k.rank <= 1 && k.numel == 1) || (k.rank == 1 && k.dims[0] == n);
}

static int built_fail(gwr_rewrite_ctx *c, gwr_network *net) {
    const char *m = gwr_network_errmsg(net);
    return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "%s", m && *m ? m : gwr_last_errmsg());
}

/* A com.microsoft layer of `op` reading in (NULL: absent) with one output
 * replacing m's root. */
static int emit(gwr_rewrite_ctx *c, const gwr_match *m, const char *op, int nin, gwr_tensor *const *in) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    while (nin > 0 && !in[nin - 1]) nin--;
    gwr_tensor *out = NULL;
    if (!gwr_op_call(net, MS, op, nin, in, NULL, 1, &out)) return built_fail(c, net);
    gwr_status st = gwr_match_replace(m, 1, &out);
    return st ? gwr_rewrite_fail(c, st, "%s", gwr_last_errmsg()) : 1;
}

/* ---- fuse_matmul_integer_to_float ------------------------------------------- */

enum { QA, QB, QAZ, QBZ, QAS, QBS, QX, QBIAS, QNCAP };

static const gwr_match_node mmitf_nodes[] = {
    GWR_M_OP("MatMulInteger", GWR_M_CAP(QA), GWR_M_CONST(QB), GWR_M_OPT_CAP(QAZ), GWR_M_OPT_CONST(QBZ)),
    {.op = "Cast", .in = {GWR_M_NODE(0)}, .attrs = {GWR_MA_INT("to", GWR_FLOAT32)}},
    GWR_M_OP("Mul", GWR_M_CAP(QAS), GWR_M_CAP(QBS)),
    GWR_M_OP("Mul", GWR_M_NODE(1), GWR_M_NODE(2)),
};
static const gwr_match_pattern mmitf_table = {"matmul_integer_to_float", GWR_M_NODES(mmitf_nodes), NULL, NULL};

/* Fused(.., bias?) + bias: inputs 0..5 of MatMulIntegerToFloat (or 0..3 of
 * DynamicQuantizeMatMul) whatever they are; the Add's other operand. */
static const char *const fused_products[] = {MS "::MatMulIntegerToFloat", MS "::DynamicQuantizeMatMul", NULL};
static const gwr_match_node bias_nodes[] = {
    {.ops = fused_products, .in = {GWR_M_ANY, GWR_M_ANY, GWR_M_ANY, GWR_M_REST}},
    GWR_M_OP("Add", GWR_M_NODE(0), GWR_M_CONST(QBIAS)),
};
static const gwr_match_pattern bias_table = {"fused_product.bias", GWR_M_NODES(bias_nodes), NULL, NULL};

/* B's column count when B is a constant 2-D int8 / uint8 that A's dtype
 * pairs with (uint8 A with either, int8 A with int8 B); else -1. */
static int64_t weight_cols(const gwr_tensor *a, const gwr_tensor *b) {
    gwr_match_const k;
    if (!gwr_match_const_get(b, &k) || k.rank != 2 || (k.dtype != GWR_INT8 && k.dtype != GWR_UINT8)) return -1;
    gwr_dtype at = gwr_tensor_dtype(a);
    if (!(at == GWR_UINT8 || (at == GWR_INT8 && k.dtype == GWR_INT8))) return -1;
    return k.dims[1];
}

/* The bias of Add l = y + bias (either order), y the product of B with n
 * columns: a float32 1-D constant [n]; else NULL. */
static gwr_tensor *bias_of(gwr_layer *l, const gwr_tensor *y, int64_t n) {
    if (gwr_layer_num_inputs(l) != 2) return NULL;
    gwr_tensor *b = gwr_layer_input(l, 0) == y ? gwr_layer_input(l, 1) : gwr_layer_input(l, 0);
    gwr_match_const k;
    if (b == y || n < 0 || !gwr_match_const_get(b, &k) || k.dtype != GWR_FLOAT32 || k.rank != 1 || k.dims[0] != n) return NULL;
    return b;
}

static int fuse_bias(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_match m;
    int rc = gwr_match_layer(&bias_table, l, &m);
    if (rc < 0) return gwr_rewrite_fail(c, (gwr_status)-rc, "%s", gwr_last_errmsg());
    if (!rc) return gwr_rewrite_no_match(c, "not MatMulIntegerToFloat or DynamicQuantizeMatMul + a constant");
    gwr_layer *mm = m.layers[0];
    int dyn = gwr_match_is_op(mm, MS "::DynamicQuantizeMatMul"), nbase = dyn ? 4 : 6;
    int nin = gwr_layer_num_inputs(mm);
    if (!dyn && (nin < 4 || !gwr_layer_input(mm, 3))) return gwr_rewrite_no_match(c, "a MatMulIntegerToFloat without b_scale");
    if (nin > nbase && gwr_layer_input(mm, nbase)) return gwr_rewrite_no_match(c, "the product has a bias already");
    gwr_match_const bk;
    int64_t n = gwr_match_const_get(gwr_layer_input(mm, 1), &bk) && bk.rank == 2 ? bk.dims[1] : -1;
    gwr_tensor *bias = bias_of(l, gwr_layer_output(mm, 0), n);
    if (!bias) return gwr_rewrite_no_match(c, "the bias is not a float32 1-D constant over the product's last axis");
    gwr_tensor *in[7] = {NULL};
    for (int i = 0; i < nbase && i < nin; i++) in[i] = gwr_layer_input(mm, i);
    in[nbase] = bias;
    return emit(c, &m, dyn ? "DynamicQuantizeMatMul" : "MatMulIntegerToFloat", nbase + 1, in);
}

static int fuse_mmitf(gwr_rewrite_ctx *c, gwr_layer *l) {
    if (!gwr_ps_target_contrib(c)) return gwr_rewrite_no_match(c, "MatMulIntegerToFloat is for targets ort and gwr");
    if (!strcmp(gwr_layer_op(l), "Add")) return fuse_bias(c, l);
    gwr_match m;
    int rc = gwr_match_layer(&mmitf_table, l, &m);
    if (rc < 0) return gwr_rewrite_fail(c, (gwr_status)-rc, "%s", gwr_last_errmsg());
    if (!rc) return gwr_rewrite_no_match(c, "not Cast(MatMulInteger(..)) * (a_scale * b_scale)");
    gwr_tensor **cp = m.captures, *a = cp[QA], *b = cp[QB];
    int64_t n = weight_cols(a, b);
    if (n < 0) return gwr_rewrite_no_match(c, "B is not a constant 2-D int8 / uint8 that A's dtype pairs with");
    if (cp[QAZ] && (!scalar_like(cp[QAZ]) || gwr_tensor_dtype(cp[QAZ]) != gwr_tensor_dtype(a)))
        return gwr_rewrite_no_match(c, "a_zero_point is not a scalar of A's dtype (per row)");
    if (cp[QBZ] && !scalar_or_cols(cp[QBZ], gwr_tensor_dtype(b), n))
        return gwr_rewrite_no_match(c, "b_zero_point is not a scalar or 1-D over B's columns");
    gwr_tensor *as = cp[QAS], *bs = cp[QBS];
    if (!scalar_like(as) && scalar_like(bs)) as = cp[QBS], bs = cp[QAS]; /* the product commutes */
    else if (scalar_like(as) && scalar_like(bs) && gwr_match_const_get(as, &(gwr_match_const){0}) &&
             !gwr_match_const_get(bs, &(gwr_match_const){0}))
        as = cp[QBS], bs = cp[QAS]; /* the constant one is B's (onnxruntime requires its b_scale constant) */
    if (gwr_tensor_dtype(as) != GWR_FLOAT32 || !scalar_like(as))
        return gwr_rewrite_no_match(c, "a_scale is not a float32 scalar");
    if (!scalar_or_cols(bs, GWR_FLOAT32, n)) return gwr_rewrite_no_match(c, "b_scale is not a float32 constant scalar or 1-D over B's columns");
    /* the scales (one element, or [n] over the last axis) cannot broadcast the product up: no shape to check */
    gwr_tensor *y = gwr_layer_output(l, 0);
    gwr_tensor *in[7] = {a, b, as, bs, cp[QAZ], cp[QBZ], NULL};
    gwr_layer *add = gwr_match_sole_reader(y);
    if (!gwr_match_is_op(add, "Add") || !(in[6] = bias_of(add, y, n)))
        return emit(c, &m, "MatMulIntegerToFloat", 6, in);
    /* the bias Add after it joins now: a rewrite of the Add's own turn may have come first */
    gwr_network *net = gwr_rewrite_ctx_network(c);
    gwr_tensor *out = NULL;
    if (!gwr_op_call(net, MS, "MatMulIntegerToFloat", 7, in, NULL, 1, &out)) return built_fail(c, net);
    gwr_status st = gwr_match_replace_layer(add, 1, &out);
    for (int i = 0; !st && i < m.nlayers; i++) st = gwr_layer_mark_as_removed(m.layers[i]);
    return st ? gwr_rewrite_fail(c, st, "%s", gwr_last_errmsg()) : 1;
}

static const char *const mmitf_roots[] = {"Mul", "Add", NULL};

const gwr_pattern_rewriter gwr_pattern_fuse_matmul_integer_to_float = {
    .name = "fuse_matmul_integer_to_float",
    .root_ops = mmitf_roots,
    .match_and_rewrite = fuse_mmitf,
};

/* ---- fuse_dynamic_quantize_matmul ----------------------------------------------- */

static int fuse_dqmm(gwr_rewrite_ctx *c, const gwr_match *m);

static const char *const dqmm_roots[] = {MS "::MatMulIntegerToFloat", NULL};
static const gwr_match_node dqmm_nodes[] = {
    GWR_M_OP("DynamicQuantizeLinear", GWR_M_CAP(QX)),
    {.op = MS "::MatMulIntegerToFloat",
     .in = {GWR_M_NODE_OUT(0, 0), GWR_M_CAP(QB), GWR_M_NODE_OUT(0, 1), GWR_M_CAP(QBS), GWR_M_NODE_OUT(0, 2), GWR_M_OPT_CAP(QBZ),
            GWR_M_OPT_CAP(QBIAS)},
     .targets = GWR_TARGET_ORT | GWR_TARGET_GWR}, /* DynamicQuantizeMatMul: contrib */
};
static const gwr_match_pattern dqmm_table = {"fuse_dynamic_quantize_matmul", GWR_M_NODES(dqmm_nodes), fuse_dqmm, NULL};

static int fuse_dqmm(gwr_rewrite_ctx *c, const gwr_match *m) {
    gwr_tensor *const *cp = m->captures;
    if (gwr_tensor_dtype(cp[QX]) != GWR_FLOAT32) return gwr_rewrite_no_match(c, "x is not float32");
    if (!gwr_match_const_get(cp[QB], &(gwr_match_const){0}) || !gwr_match_const_get(cp[QBS], &(gwr_match_const){0}))
        return gwr_rewrite_no_match(c, "B or b_scale is not a constant");
    gwr_tensor *in[5] = {cp[QX], cp[QB], cp[QBS], cp[QBZ], cp[QBIAS]};
    return emit(c, m, "DynamicQuantizeMatMul", 5, in);
}

const gwr_pattern_rewriter gwr_pattern_fuse_dynamic_quantize_matmul =
    GWR_MATCH_PASS("fuse_dynamic_quantize_matmul", dqmm_roots, &dqmm_table);

/* ---- the pass table's rows (pass_table.h) ---- */
#include "passes/pass_table.h"

GWR_PASS(fuse_matmul_integer_to_float, LOWER, .pattern = &gwr_pattern_fuse_matmul_integer_to_float, .level = GWR_LEVEL_EXTENDED,
         .targets = GWR_TARGET_ORT | GWR_TARGET_GWR, .numerics = GWR_NUMERICS_EXACT,
         .summary = "turn Cast(MatMulInteger(A, B)) * (a_scale * b_scale) [+ bias] into MatMulIntegerToFloat (B "
                    "constant, scalar a_scale and a_zero_point)");

GWR_PASS(fuse_dynamic_quantize_matmul, LOWER, .pattern = &gwr_pattern_fuse_dynamic_quantize_matmul, .level = GWR_LEVEL_EXTENDED,
         .targets = GWR_TARGET_ORT | GWR_TARGET_GWR, .numerics = GWR_NUMERICS_EXACT,
         .summary = "turn MatMulIntegerToFloat(DynamicQuantizeLinear(x), ..) into DynamicQuantizeMatMul(x, ..) when "
                    "the DynamicQuantizeLinear has no other reader");
