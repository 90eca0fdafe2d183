/* dynamic.c - dynamic int8 quantization (gwr_quantize, GWR_QUANT_DYNAMIC):
 * the weights of every MatMul with a constant 2-D B, Gemm with a constant B
 * and Conv with a constant W become int8, symmetric (zero point 0, scale
 * max|w| / 127) per output channel (o->per_tensor: one scale), and the
 * layer's activation is quantized when the network runs, to uint8 by
 * DynamicQuantizeLinear (one per tensor, shared by all its quantized
 * readers). Two forms, as onnxruntime's quantize_dynamic writes them:
 *
 *   qoperator  DynamicQuantizeLinear(x) -> MatMulInteger / ConvInteger(x_q, W_q, x_zp)
 *              -> Cast(float) -> Mul(x_scale * w_scale) [-> Add bias]
 *              (Gemm: MatMulInteger on B as [K, N], alpha folded into
 *              w_scale, beta * C added after; Conv: the scale and bias
 *              shaped [C_out, 1, ...] over the channel axis); for targets
 *              ort and gwr the passes fuse_matmul_integer_to_float and
 *              fuse_dynamic_quantize_matmul then make MatMulIntegerToFloat
 *              and DynamicQuantizeMatMul of the MatMuls;
 *   qdq        DynamicQuantizeLinear(x) -> DequantizeLinear(x_q, x_scale, x_zp)
 *              and DequantizeLinear(W_q, w_scale, w_zp 0, axis = the output
 *              channel's) feeding the float layer, unchanged otherwise.
 *
 * Layers named or whose op is named in o->exclude stay float32 (reported). */
#include <math.h>
#include <string.h>

#include "gwr/functional.h"
#include "quant/qgraph.h"

/* One DynamicQuantizeLinear per quantized activation. */
typedef struct dql {
    gwr_tensor *x, *q, *s, *z, *deq; /* deq: its DequantizeLinear (qdq) */
} dql;

typedef struct dyn {
    gwr_network *net;
    const gwr_quantize_options *o;
    dql *d;
    int64_t nd, cap;
} dyn;

static gwr_status oom(gwr_network *net) {
    return gwr_ir_error(net, GWR_ERR_NOMEM, "dynamic quantization: out of memory");
}

/* The message of a builder that failed, on net. */
static gwr_status built(gwr_network *net, const gwr_layer *l) {
    return gwr_q_fail(net, GWR_OK, "dynamic quantization of '%s'", gwr_layer_name(l));
}

/* x's DynamicQuantizeLinear (and, for qdq, its DequantizeLinear), made on first use. */
static dql *dql_of(dyn *c, gwr_tensor *x) {
    for (int64_t i = 0; i < c->nd; i++)
        if (c->d[i].x == x) return &c->d[i];
    if (gwr_grow((void **)&c->d, sizeof *c->d, &c->cap, c->nd + 1)) return NULL;
    dql *d = &c->d[c->nd];
    memset(d, 0, sizeof *d);
    gwr_tensor *outs[3];
    if (!gwr_op_call(c->net, "", "DynamicQuantizeLinear", 1, &x, NULL, 3, outs)) return NULL;
    d->x = x, d->q = outs[0], d->s = outs[1], d->z = outs[2];
    if (c->o->format == GWR_QFORMAT_QDQ && !gwr_op_call(c->net, "", "DequantizeLinear", 3, outs, NULL, 1, &d->deq))
        return NULL;
    c->nd++;
    return d;
}

/* qoperator: the MatMul / Gemm q as MatMulInteger -> Cast -> Mul [-> Add]. */
static gwr_status matmul_integer(dyn *c, const gwr_q_linear *q, dql *d, int64_t *bytes) {
    gwr_network *net = c->net;
    int pt = c->o->per_tensor;
    int64_t K = q->K, N = q->N, nsc = pt ? 1 : N;
    float *w = gwr_q_weight_kn(q), *sc = gwr_malloc((size_t)N * sizeof *sc);
    int8_t *wq = gwr_malloc((size_t)(K * N));
    gwr_status st = GWR_OK;
    if (!w || !sc || !wq) st = oom(net);
    if (!st) {
        if (pt) gwr_q_sym8(w, 1, K * N, 0, 1, gwr_q_weight_qmax(c->o), wq, sc);
        else gwr_q_sym8(w, N, K, 1, N, gwr_q_weight_qmax(c->o), wq, sc);
        for (int64_t i = 0; i < nsc; i++) sc[i] *= q->alpha;
        const char *wn = gwr_tensor_name(q->w);
        int64_t dims[2] = {K, N};
        gwr_tensor *tq = gwr_q_const(net, wn, "_quantized", GWR_INT8, 2, dims, wq);
        gwr_tensor *ts = tq ? gwr_q_const(net, wn, "_scale", GWR_FLOAT32, pt ? 0 : 1, &N, sc) : NULL;
        gwr_tensor *in[3] = {d->q, tq, d->z}, *acc = NULL, *y = NULL;
        gwr_layer *mm = ts ? gwr_op_call(net, "", "MatMulInteger", 3, in, NULL, 1, &acc) : NULL;
        gwr_tensor *f = mm ? gwr_cast(net, acc, GWR_FLOAT32) : NULL;
        gwr_tensor *s2 = f ? gwr_mul(net, d->s, ts) : NULL;
        y = s2 ? gwr_mul(net, f, s2) : NULL;
        if (y && q->c) { /* Gemm: + beta * C (a constant C folded, [N] when it has N elements) */
            gwr_match_const ck;
            gwr_tensor *bias = q->c;
            if (gwr_match_const_get(q->c, &ck) && ck.dtype == GWR_FLOAT32) {
                float *b = gwr_malloc((size_t)ck.numel * sizeof *b);
                if (!b) {
                    gwr_free(w), gwr_free(sc), gwr_free(wq);
                    return oom(net);
                }
                for (int64_t i = 0; i < ck.numel; i++) b[i] = q->beta * ((const float *)ck.data)[i];
                int flat = ck.numel == N;
                bias = gwr_q_const(net, gwr_tensor_name(q->c), "_bias", GWR_FLOAT32, flat ? 1 : ck.rank,
                                   flat ? &N : ck.dims, b);
                gwr_free(b);
            } else if (q->beta != 1) {
                gwr_tensor *beta = gwr_constant_f32(net, q->beta);
                bias = beta ? gwr_mul(net, q->c, beta) : NULL;
            }
            y = bias ? gwr_add(net, y, bias) : NULL;
        }
        st = y ? gwr_q_take_place(q->l, y, mm) : built(net, q->l);
        if (!st) *bytes = K * N + 4 * nsc;
    }
    gwr_free(w), gwr_free(sc), gwr_free(wq);
    return st;
}

/* qoperator: the Conv q as ConvInteger -> Cast -> Mul [-> Add bias]. */
static gwr_status conv_integer(dyn *c, const gwr_q_linear *q, dql *d, int64_t *bytes) {
    gwr_network *net = c->net;
    int pt = c->o->per_tensor, r = q->wk.rank;
    int64_t K = q->K, N = q->N, nsc = pt ? 1 : N;
    float *sc = gwr_malloc((size_t)N * sizeof *sc);
    int8_t *wq = gwr_malloc((size_t)(K * N));
    if (!sc || !wq) {
        gwr_free(sc), gwr_free(wq);
        return oom(net);
    }
    if (pt) gwr_q_sym8(q->wk.data, 1, K * N, 0, 1, gwr_q_weight_qmax(c->o), wq, sc);
    else gwr_q_sym8(q->wk.data, N, K, K, 1, gwr_q_weight_qmax(c->o), wq, sc);
    /* per channel: the scale (and the bias) over the output's axis 1, [N, 1, ...] */
    int64_t cdims[GWR_MAX_RANK];
    cdims[0] = N;
    for (int i = 1; i < r - 1; i++) cdims[i] = 1;
    const char *wn = gwr_tensor_name(q->w);
    gwr_tensor *tq = gwr_q_const(net, wn, "_quantized", GWR_INT8, r, q->wk.dims, wq);
    gwr_tensor *ts = tq ? gwr_q_const(net, wn, "_scale", GWR_FLOAT32, pt ? 0 : r - 1, cdims, sc) : NULL;
    gwr_free(sc), gwr_free(wq);
    gwr_tensor *in[3] = {d->q, tq, d->z}, *y = NULL;
    gwr_layer *ci = ts ? gwr_network_add_layer(net, "ConvInteger", "", NULL, 3, in, 1, NULL) : NULL;
    if (ci && (gwr_match_copy_attrs(ci, q->l) || gwr_layer_infer(ci))) ci = NULL;
    gwr_tensor *f = ci ? gwr_cast(net, gwr_layer_output(ci, 0), GWR_FLOAT32) : NULL;
    gwr_tensor *s2 = f ? gwr_mul(net, d->s, ts) : NULL;
    y = s2 ? gwr_mul(net, f, s2) : NULL;
    if (y && q->c) {
        gwr_match_const bk;
        gwr_tensor *b = NULL;
        if (gwr_match_const_get(q->c, &bk) && bk.dtype == GWR_FLOAT32 && bk.numel == N)
            b = gwr_q_const(net, gwr_tensor_name(q->c), "_reshaped", GWR_FLOAT32, r - 1, cdims, bk.data);
        else
            b = gwr_reshape(net, q->c, r - 1, cdims);
        y = b ? gwr_add(net, y, b) : NULL;
    }
    gwr_status st = y ? gwr_q_take_place(q->l, y, ci) : built(net, q->l);
    if (!st) *bytes = K * N + 4 * nsc;
    return st;
}

/* qdq: DequantizeLinear(x_q) and DequantizeLinear(W_q) into the float layer. */
static gwr_status qdq(dyn *c, const gwr_q_linear *q, dql *d, int64_t *bytes) {
    gwr_network *net = c->net;
    int pt = c->o->per_tensor;
    int64_t N = q->N, n = q->wk.numel, nsc = pt ? 1 : N;
    /* the output channel's axis of the weight as stored */
    int axis = q->kind == GWR_QL_CONV ? 0 : q->kind == GWR_QL_GEMM && q->trans_b ? 0 : 1;
    int64_t D0 = q->wk.dims[0], inner = n / D0;
    float *sc = gwr_malloc((size_t)N * sizeof *sc);
    int8_t *wq = gwr_malloc((size_t)n), *zp = gwr_calloc((size_t)N, 1);
    if (!sc || !wq || !zp) {
        gwr_free(sc), gwr_free(wq), gwr_free(zp);
        return oom(net);
    }
    if (pt) gwr_q_sym8(q->wk.data, 1, n, 0, 1, gwr_q_weight_qmax(c->o), wq, sc);
    else if (axis == 0) gwr_q_sym8(q->wk.data, N, inner, inner, 1, gwr_q_weight_qmax(c->o), wq, sc);
    else gwr_q_sym8(q->wk.data, N, D0, 1, N, gwr_q_weight_qmax(c->o), wq, sc);
    const char *wn = gwr_tensor_name(q->w);
    gwr_tensor *tq = gwr_q_const(net, wn, "_quantized", GWR_INT8, q->wk.rank, q->wk.dims, wq);
    gwr_tensor *ts = tq ? gwr_q_const(net, wn, "_scale", GWR_FLOAT32, pt ? 0 : 1, &N, sc) : NULL;
    gwr_tensor *tz = ts ? gwr_q_const(net, wn, "_zero_point", GWR_INT8, pt ? 0 : 1, &N, zp) : NULL;
    gwr_free(sc), gwr_free(wq), gwr_free(zp);
    gwr_args *a = gwr_args_new();
    gwr_tensor *in[3] = {tq, ts, tz}, *wd = NULL;
    gwr_status st = GWR_OK;
    if (!a || (!pt && gwr_args_set_int(a, "axis", axis))) st = oom(net);
    else if (!tz || !gwr_op_call(net, "", "DequantizeLinear", 3, in, a, 1, &wd)) st = built(net, q->l);
    gwr_args_free(a);
    if (!st) st = gwr_layer_set_input(q->l, 0, d->deq);
    if (!st) st = gwr_layer_set_input(q->l, 1, wd);
    if (!st) *bytes = n + 5 * nsc;
    return st;
}

/* Why q stays float32, or NULL. */
static const char *kept_why(const gwr_quantize_options *o, const gwr_q_linear *q) {
    if (gwr_q_listed(o->exclude, q->l)) return "kept float32: --exclude";
    if (o->format == GWR_QFORMAT_QOPERATOR && q->kind == GWR_QL_GEMM && q->trans_a) return "kept float32: Gemm with transA";
    return NULL;
}

gwr_status gwr_q_dynamic(gwr_network *net, const gwr_quantize_options *o, gwr_quant_report *rep) {
    dyn c = {.net = net, .o = o};
    int qop = o->format == GWR_QFORMAT_QOPERATOR;
    const char *what = o->per_tensor ? "int8 per-tensor weights, dynamic activations"
                                     : "int8 per-channel weights, dynamic activations";
    int64_t before = 0, after = 0, done = 0, todo = 0, n0 = gwr_network_num_layers(net);
    gwr_status st = GWR_OK;
    gwr_q_linear q;
    for (int64_t i = 0; i < n0; i++)
        todo += gwr_q_linear_of(gwr_network_layer(net, i), &q) && !kept_why(o, &q);
    /* DynamicQuantizeLinear is opset 11's; DequantizeLinear's axis 13's */
    if (todo)
        st = gwr_q_need_opset(net, qop || o->per_tensor ? 11 : 13,
                              qop || o->per_tensor ? "dynamic quantization (DynamicQuantizeLinear)"
                                                   : "dynamic quantization per channel in QDQ form (DequantizeLinear's axis)");
    for (int64_t i = 0; !st && i < n0; i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (!gwr_q_linear_of(l, &q)) continue;
        int64_t wb = gwr_q_weight_bytes(&q), qb = wb;
        const char *kept = kept_why(o, &q);
        char name[256], op[64];
        snprintf(name, sizeof name, "%s", gwr_layer_name(l));
        snprintf(op, sizeof op, "%s", gwr_layer_op(l));
        if (!kept) {
            dql *d = gwr_q_type_x(&q) ? NULL : dql_of(&c, q.x);
            if (!d) st = gwr_q_fail(net, GWR_OK, "dynamic quantization of '%s': DynamicQuantizeLinear", name);
            else if (!qop) st = qdq(&c, &q, d, &qb);
            else if (q.kind == GWR_QL_CONV) st = conv_integer(&c, &q, d, &qb);
            else st = matmul_integer(&c, &q, d, &qb);
            done += !st;
        }
        before += wb, after += qb;
        if (!st && rep && gwr_q_report_add(rep, name, op, kept ? kept : what, -1, -1)) st = oom(net);
    }
    gwr_free(c.d);
    if (rep) rep->bytes_before += before, rep->bytes_after += after;
    if (st || !done) return st;
    if ((st = gwr_q_finish(net))) return st;
    if (qop && (o->target & (GWR_TARGET_ORT | GWR_TARGET_GWR))) {
        gwr_optimize_options oo = {.target = o->target,
                                   .only = "fuse_matmul_integer_to_float,fuse_dynamic_quantize_matmul"};
        st = gwr_optimize(net, &oo, NULL);
    }
    return st;
}
