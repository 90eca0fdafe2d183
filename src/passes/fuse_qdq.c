/* fuse_qdq.c - onnxruntime-style QDQ groups (what quantize_static writes in
 * the QDQ format) into gwr's integer kernels at planning (target gwr):
 *
 *   DQ(x_q) & DQ(W_q const) -> MatMul / Gemm -> QuantizeLinear(ys, yzp)
 *       -> QLinearMatMul(x_q, xs, xzp, W_q, ws, wzp, ys, yzp)      (no bias)
 *   DQ(x_q) & DQ(W_q const) -> Conv [+ DQ(b_q int32)] -> QuantizeLinear
 *       -> QLinearConv(x_q, xs, xzp, W_q, ws, wzp, ys, yzp [, b_q])
 *   DQ(x_q) & DQ(W_q const) -> MatMul / Gemm [+ bias] (no Q after, or a bias
 *       the QLinear form cannot take)
 *       -> com.microsoft MatMulIntegerToFloat(x_q, W_q, xs, ws, xzp, wzp [, bias])
 *          (the QuantizeLinear after it, if any, stays)
 *
 * What it takes: x_q uint8 / int8 with a float32 scalar scale and a scalar
 * zero point (or none); W_q a constant int8 / uint8 weight with a float32
 * constant scale and zero point, per tensor or per output channel (the
 * DequantizeLinear's axis the output channel: Conv W's axis 0, MatMul B's
 * axis 1, Gemm B's 1, or 0 with transB, whose W_q is then transposed into
 * a new constant), no block_size; MatMul over A of rank >= 2 and a 2-D W;
 * Gemm with alpha 1, transA 0 and a 1-D C of N (beta 1); y's
 * QuantizeLinear per tensor. A Conv bias joins QLinearConv only as the
 * int32 DQ(b_q, bs, 0) whose bs is xs * ws (float32, element by element,
 * what the quantizers write): the spec's QLinearConv adds b_q to the int32
 * sum. The DequantizeLinear layers stay where something else reads them.
 *
 * Numerics (not the same bits; the pass's tolerance says 1): the QLinear
 * ops round once, from the exact int32 sum times xs * ws / ys, where the
 * unfused chain sums the dequantized float32 products and rounds them, then
 * QuantizeLinear divides by ys and rounds again: the quantized outputs may
 * differ by one step (one ys after the next DequantizeLinear).
 * MatMulIntegerToFloat gives (float)sum * (xs * ws) [+ bias], the unfused
 * float32 MatMul the same value to float32 rounding of its K products and
 * sums (relative 1e-6 * K at worst, far less in practice).
 *
 * Two rows: fuse_qdq (MatMul, Gemm; level extended, so sessions run it)
 * and fuse_qdq_conv (Conv; level all: gwr's QLinearConv, an int16 im2col
 * packed per call, measured 2x slower than the float Conv the unfused chain
 * runs, so sessions leave QDQ convolutions alone).
 *
 * fold_constants leaves the DequantizeLinear of a constant alone where a
 * planned row will take it (gwr_ps_qdq_takes, pass_util.h), so that the
 * weights reach the fusion still quantized.
 *
 * Not a rule file: Gemm's transposed weight is a new constant, and the
 * per-channel scales of the bias are compared element by element.
 */
#include <stdlib.h>
#include <string.h>

#include "gwr/match.h"
#include "gwr/passes.h"
#include "passes/pass_util.h"

#define MS "com.microsoft"

typedef struct qdq_plan {
    gwr_layer *root, *q;     /* the Conv / MatMul / Gemm; its QuantizeLinear for the QLinear forms (else NULL) */
    gwr_layer *dqx, *dqw, *dqb; /* the DequantizeLinear of x, of W, of Conv's int32 bias (or NULL) */
    gwr_tensor *bias;        /* MatMulIntegerToFloat's float bias (Gemm's C), or NULL */
    int conv, trans_b;
    int64_t nch;             /* output channels */
} qdq_plan;

static int one_elem(const gwr_tensor *t) {
    int r = gwr_tensor_rank(t);
    return r == 0 || (r == 1 && gwr_tensor_dim(t, 0) == 1);
}

static int is_q8(gwr_dtype d) { return d == GWR_INT8 || d == GWR_UINT8; }

/* DequantizeLinear l's input i (NULL when absent). */
static gwr_tensor *in_of(const gwr_layer *l, int i) { return gwr_layer_num_inputs(l) > i ? gwr_layer_input(l, i) : NULL; }

/* A per-tensor (de)quantization layer's parameters: a float32 scale of one
 * element and a zero point of one element of dtype zdt (or none). */
static const char *per_tensor(const gwr_layer *l, gwr_dtype zdt) {
    gwr_tensor *s = in_of(l, 1), *z = in_of(l, 2);
    int64_t bs = 0;
    if (!s || gwr_tensor_dtype(s) != GWR_FLOAT32 || !one_elem(s)) return "its scale is not a float32 scalar";
    if (z && (gwr_tensor_dtype(z) != zdt || !one_elem(z))) return "its zero point is not a scalar of the quantized dtype";
    if (gwr_layer_attr_int(l, "block_size", 0, &bs) || bs) return "blocked";
    return NULL;
}

/* The weight's DequantizeLinear: constant int8 / uint8 W_q of rank >= 2,
 * float32 constant scale and zero point of one element or nch along the
 * output channel axis `ch` of W_q. */
static const char *weight_dq(const gwr_layer *l, int ch, int64_t *nch) {
    gwr_match_const w, s, z;
    gwr_tensor *zt = in_of(l, 2);
    if (!gwr_match_const_get(in_of(l, 0), &w) || !is_q8(w.dtype) || w.rank < 2) return "W is not a constant int8 / uint8 of rank >= 2";
    *nch = w.dims[ch];
    if (!in_of(l, 1) || !gwr_match_const_get(in_of(l, 1), &s) || s.dtype != GWR_FLOAT32) return "W's scale is not a float32 constant";
    if (zt && (!gwr_match_const_get(zt, &z) || z.dtype != w.dtype)) return "W's zero point is not a constant of W's dtype";
    int64_t bs = 0, axis = 1;
    if (gwr_layer_attr_int(l, "block_size", 0, &bs) || bs) return "W is quantized in blocks";
    if (s.numel == 1 && s.rank <= 1 && (!zt || (z.numel == 1 && z.rank <= 1))) return NULL;
    if (gwr_layer_attr_int(l, "axis", 1, &axis)) return "bad axis";
    if (axis < 0) axis += w.rank;
    if (axis != ch) return "W is quantized per channel along another axis than the output channels";
    if (s.rank != 1 || s.numel != *nch || (zt && (z.rank != 1 || z.numel != *nch))) return "W's scale or zero point is not per output channel";
    return NULL;
}

/* Conv's bias b = DQ(b_q int32 const, bs, zeros or none) with bs[c] == xs * ws[c]
 * in float32 for every channel (xs a constant): 1, else 0. */
static int int32_bias(const gwr_layer *dqb, const gwr_layer *dqx, const gwr_layer *dqw, int64_t nch) {
    gwr_match_const b, bs, xs, ws, z;
    if (!dqb || !gwr_match_is_op(dqb, "DequantizeLinear") || !gwr_match_const_get(in_of(dqb, 0), &b) || b.dtype != GWR_INT32 ||
        b.rank != 1 || b.numel != nch)
        return 0;
    if (!in_of(dqb, 1) || !gwr_match_const_get(in_of(dqb, 1), &bs) || bs.dtype != GWR_FLOAT32) return 0;
    if (in_of(dqb, 2)) {
        if (!gwr_match_const_get(in_of(dqb, 2), &z) || z.dtype != GWR_INT32) return 0;
        for (int64_t i = 0; i < z.numel; i++)
            if (gwr_match_const_at(&z, i) != 0) return 0;
    }
    if (!gwr_match_const_get(in_of(dqx, 1), &xs) || !gwr_match_const_get(in_of(dqw, 1), &ws)) return 0;
    if (!(bs.numel == 1 || bs.numel == nch)) return 0;
    float x = ((const float *)xs.data)[0];
    for (int64_t c = 0; c < nch; c++) {
        float w = ((const float *)ws.data)[ws.numel == 1 ? 0 : c], want = x * w;
        if (((const float *)bs.data)[bs.numel == 1 ? 0 : c] != want) return 0;
    }
    return 1;
}

/* Is this Conv / MatMul / Gemm the root of a group the pass fuses? NULL and
 * *p filled when so, else why not. */
static const char *plan_of(gwr_layer *l, qdq_plan *p, int which) {
    memset(p, 0, sizeof *p);
    p->root = l;
    p->conv = gwr_match_is_op(l, "Conv");
    if (p->conv && !(which & GWR_PS_QDQ_CONV)) return "Conv is fuse_qdq_conv's";
    if (!p->conv && !(which & GWR_PS_QDQ_MATMUL)) return "MatMul and Gemm are fuse_qdq's";
    int gemm = gwr_match_is_op(l, "Gemm");
    if (!p->conv && !gemm && !gwr_match_is_op(l, "MatMul")) return "not Conv, MatMul or Gemm";
    gwr_tensor *x = in_of(l, 0), *w = in_of(l, 1);
    p->dqx = x ? gwr_tensor_parent(x) : NULL, p->dqw = w ? gwr_tensor_parent(w) : NULL;
    if (!gwr_match_is_op(p->dqx, "DequantizeLinear") || !gwr_match_is_op(p->dqw, "DequantizeLinear"))
        return "the input and the weight are not both DequantizeLinear outputs";
    gwr_tensor *xq = in_of(p->dqx, 0);
    if (!xq || !is_q8(gwr_tensor_dtype(xq))) return "x is not int8 / uint8";
    const char *why = per_tensor(p->dqx, gwr_tensor_dtype(xq));
    if (why) return why;
    int ch = 0;
    if (gemm) {
        int64_t ta = 0, tb = 0;
        float alpha = 1, beta = 1;
        gwr_layer_attr_int(l, "transA", 0, &ta), gwr_layer_attr_int(l, "transB", 0, &tb);
        gwr_layer_attr_float(l, "alpha", 1, &alpha), gwr_layer_attr_float(l, "beta", 1, &beta);
        if (ta || alpha != 1 || beta != 1) return "Gemm with transA, alpha or beta";
        p->trans_b = (int)tb, ch = tb ? 0 : 1;
    } else if (!p->conv) {
        ch = 1;
        if (gwr_tensor_rank(xq) < 2) return "MatMul over A of rank < 2";
    }
    if ((why = weight_dq(p->dqw, ch, &p->nch))) return why;
    gwr_match_const wk;
    gwr_match_const_get(in_of(p->dqw, 0), &wk);
    if (!p->conv && wk.rank != 2) return "W is not 2-D";
    gwr_tensor *b = in_of(l, 2);
    if (b && !p->conv) {
        int r = gwr_tensor_rank(b);
        if (gwr_tensor_dtype(b) != GWR_FLOAT32 || r != 1 || gwr_tensor_dim(b, 0) != p->nch) return "Gemm's C is not 1-D over the columns";
        p->bias = b;
    }
    gwr_layer *q = gwr_match_sole_reader(gwr_layer_output(l, 0));
    if (gwr_match_is_op(q, "QuantizeLinear") && in_of(q, 2) && is_q8(gwr_tensor_dtype(in_of(q, 2))) &&
        !per_tensor(q, gwr_tensor_dtype(in_of(q, 2)))) {
        if (p->conv && b) {
            gwr_layer *dqb = gwr_tensor_parent(b);
            if (int32_bias(dqb, p->dqx, p->dqw, p->nch)) p->q = q, p->dqb = dqb;
        } else if (!p->bias) p->q = q;
    }
    if (p->conv && !p->q) return "a Conv without a QuantizeLinear after it, or with a bias other than DQ(int32, xs * ws)";
    return NULL;
}

/* A constant's tensor as the ops want it: t itself, or for a transposed
 * Gemm B [N, K] a new constant [K, N]. */
static gwr_tensor *weight_for(gwr_network *net, gwr_tensor *t, int trans) {
    if (!trans) return t;
    gwr_match_const k;
    if (!gwr_match_const_get(t, &k)) return NULL;
    int64_t N = k.dims[0], K = k.dims[1], dims[2] = {K, N};
    uint8_t *d = malloc((size_t)(K * N > 0 ? K * N : 1));
    if (!d) return NULL;
    for (int64_t n = 0; n < N; n++)
        for (int64_t q = 0; q < K; q++) d[q * N + n] = ((const uint8_t *)k.data)[n * K + q];
    gwr_tensor *out = gwr_constant(net, k.dtype, 2, dims, d);
    free(d);
    return out;
}

/* A scalar zero point of dtype dt: z, or a new constant 0. */
static gwr_tensor *zp_or_zero(gwr_network *net, gwr_tensor *z, gwr_dtype dt) {
    static const uint8_t zero = 0;
    return z ? z : gwr_constant(net, dt, 0, NULL, &zero);
}

static void drop_if_dead(gwr_layer *l) {
    if (l && !gwr_layer_is_removed(l) && gwr_tensor_num_live_users(gwr_layer_output(l, 0)) == 0 &&
        gwr_tensor_output_index(gwr_layer_output(l, 0)) < 0)
        gwr_layer_mark_as_removed(l);
}

static int fuse_qdq_as(gwr_rewrite_ctx *c, gwr_layer *l, int which) {
    if (!(gwr_ps_target(c) & GWR_TARGET_GWR)) return gwr_rewrite_no_match(c, "QDQ fusion is for target gwr");
    qdq_plan p;
    const char *why = plan_of(l, &p, which);
    if (why) return gwr_rewrite_no_match(c, "%s", why);
    gwr_network *net = gwr_rewrite_ctx_network(c);
    gwr_tensor *xq = in_of(p.dqx, 0), *xs = in_of(p.dqx, 1), *wq = weight_for(net, in_of(p.dqw, 0), p.trans_b);
    gwr_tensor *ws = in_of(p.dqw, 1), *wz = in_of(p.dqw, 2), *out = NULL;
    gwr_layer *nl = NULL, *replaced = p.q ? p.q : l;
    if (!wq) return gwr_rewrite_fail(c, GWR_ERR_NOMEM, "out of memory transposing W");
    if (p.q) {
        gwr_dtype xd = gwr_tensor_dtype(xq), wd = gwr_tensor_dtype(wq);
        gwr_tensor *in[9] = {xq, xs, zp_or_zero(net, in_of(p.dqx, 2), xd), wq, ws, zp_or_zero(net, wz, wd), in_of(p.q, 1), in_of(p.q, 2),
                             p.dqb ? in_of(p.dqb, 0) : NULL};
        if (!in[2] || !in[5]) return gwr_rewrite_fail(c, GWR_ERR_NOMEM, "%s", gwr_network_errmsg(net));
        nl = gwr_op_call(net, "", p.conv ? "QLinearConv" : "QLinearMatMul", p.dqb ? 9 : 8, in, NULL, 1, &out);
        if (nl && p.conv && gwr_match_copy_attrs(nl, l)) return gwr_rewrite_fail(c, GWR_ERR_STATE, "%s", gwr_last_errmsg());
        if (nl && p.conv && gwr_layer_infer(nl)) nl = NULL;
    } else {
        gwr_tensor *in[7] = {xq, wq, xs, ws, in_of(p.dqx, 2), wz, p.bias};
        int n = 7;
        while (n > 4 && !in[n - 1]) n--;
        if (n > 4 && !in[4]) in[4] = zp_or_zero(net, NULL, gwr_tensor_dtype(xq)); /* an absent one between present ones */
        if (n > 5 && !in[5]) in[5] = zp_or_zero(net, NULL, gwr_tensor_dtype(wq));
        nl = gwr_op_call(net, MS, "MatMulIntegerToFloat", n, in, NULL, 1, &out);
    }
    if (!nl) {
        const char *m = gwr_network_errmsg(net);
        return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "%s", m && *m ? m : gwr_last_errmsg());
    }
    gwr_status st = gwr_match_replace_layer(replaced, 1, &out);
    if (!st && p.q) st = gwr_layer_mark_as_removed(l);
    if (st) return gwr_rewrite_fail(c, st, "%s", gwr_last_errmsg());
    drop_if_dead(p.dqx), drop_if_dead(p.dqw), drop_if_dead(p.dqb);
    return 1;
}

static int fuse_qdq(gwr_rewrite_ctx *c, gwr_layer *l) { return fuse_qdq_as(c, l, GWR_PS_QDQ_MATMUL); }
static int fuse_qdq_conv(gwr_rewrite_ctx *c, gwr_layer *l) { return fuse_qdq_as(c, l, GWR_PS_QDQ_CONV); }

int gwr_ps_qdq_takes(gwr_layer *dq, int which) {
    if (!gwr_match_is_op(dq, "DequantizeLinear")) return 0;
    gwr_tensor *t = gwr_layer_output(dq, 0);
    int n = 0;
    for (int64_t i = 0; i < gwr_tensor_num_users(t); i++) {
        gwr_layer *r = gwr_tensor_user(t, i, NULL);
        if (!r || gwr_layer_is_removed(r)) continue;
        qdq_plan p;
        if (plan_of(r, &p, which) || !(p.dqw == dq || p.dqb == dq)) return 0;
        n++;
    }
    return n > 0 && gwr_tensor_output_index(t) < 0;
}

static const char *const qdq_roots[] = {"MatMul", "Gemm", NULL};
const gwr_pattern_rewriter gwr_pattern_fuse_qdq = {
    .name = "fuse_qdq",
    .root_ops = qdq_roots,
    .match_and_rewrite = fuse_qdq,
};
static const char *const qdq_conv_roots[] = {"Conv", NULL};
const gwr_pattern_rewriter gwr_pattern_fuse_qdq_conv = {
    .name = "fuse_qdq_conv",
    .root_ops = qdq_conv_roots,
    .match_and_rewrite = fuse_qdq_conv,
};

/* ---- the pass table's rows (pass_table.h) ---- */
#include "passes/pass_table.h"

GWR_PASS(fuse_qdq, LOWER, .pattern = &gwr_pattern_fuse_qdq, .level = GWR_LEVEL_EXTENDED, .targets = GWR_TARGET_GWR,
         .numerics = GWR_NUMERICS_APPROX, .tolerance = 1,
         .summary = "turn DequantizeLinear(x_q) & DequantizeLinear(W_q) -> MatMul/Gemm [-> QuantizeLinear] into "
                    "QLinearMatMul or MatMulIntegerToFloat (one step of y's quantization apart, or float32 rounding)");

/* level all: gwr's QLinearConv (int16 im2col packed per call) is slower than
 * its float Conv, so sessions (level extended) leave QDQ convolutions as they are */
GWR_PASS(fuse_qdq_conv, LOWER, .pattern = &gwr_pattern_fuse_qdq_conv, .level = GWR_LEVEL_ALL, .targets = GWR_TARGET_GWR,
         .numerics = GWR_NUMERICS_APPROX, .tolerance = 1,
         .summary = "turn DequantizeLinear(x_q) & DequantizeLinear(W_q) -> Conv [+ int32 DQ bias] -> QuantizeLinear into "
                    "QLinearConv (one step of y's quantization apart)");
