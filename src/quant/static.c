/* static.c - static int8 quantization (gwr_quantize --mode static).
 *
 * 1. Layers: Conv, MatMul and Gemm whose weight is a float32 constant
 *    (Conv W rank >= 3, MatMul B 2-D, Gemm B 2-D with alpha = beta = 1 and
 *    no transA), whose data input and output are float32 and which the
 *    exclusion list does not name, are quantized; their data input and
 *    output become quantized activations. Reshape, Transpose, MaxPool,
 *    Concat, Flatten, Squeeze, Unsqueeze, Slice and Gather carry the
 *    quantization through: when their data input is a quantized activation
 *    their output is one too, in the same scale group as the input (Concat:
 *    all its inputs and its output share one scale). Nothing else is
 *    touched (Softmax, LayerNormalization, Add, ... stay float).
 * 2. Ranges: gwr_q_collect runs the network over the calibration samples,
 *    one observer (observers.c) per activation; a scale group's range is
 *    the union of its members'; uint8 asymmetric, or int8 symmetric with
 *    o->act_int8.
 * 3. Rewrite, QDQ (default): QuantizeLinear -> DequantizeLinear after each
 *    activation (read by all its readers; the dequantized tensor takes the
 *    original name, the float one is renamed "<name>_float", so that the
 *    layers' outputs keep their names); weights int8 symmetric per output
 *    channel (scale max|w| / 127, or / 64 for target ort: gwr_q_weight_qmax;
 *    zero point 0) through DequantizeLinear
 *    with axis (per tensor with o->per_tensor, or below opset 13 where
 *    DequantizeLinear has no axis); Conv/Gemm bias int32 with scale
 *    x_scale * w_scale[c] through DequantizeLinear.
 *    QOperator: QLinearConv / QLinearMatMul (same weights and bias), the
 *    carry-through ops on the quantized tensors, QuantizeLinear where a
 *    quantized region is entered and DequantizeLinear where a float layer
 *    or the network's output reads it. Gemm has no QLinear form in ONNX:
 *    QLinearMatMul (B transposed when transB), and C added in float after
 *    a DequantizeLinear. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gwr/match.h"
#include "passes/passes_api.h"
#include "quant/qgraph.h"
#include "quant/quant_internal.h"

enum { K_CONV, K_MATMUL, K_GEMM };

typedef struct act {
    gwr_tensor *t;
    int parent;          /* union-find: scale groups */
    gwr_q_observer *ob;
    double lo, hi;
    float scale;
    int zp;
    gwr_tensor *tq;      /* QOperator: the quantized value */
    gwr_layer *inside;   /* QOperator: the quantized layer producing tq (NULL: an entry Q) */
} act;

typedef struct qlayer {
    gwr_layer *l;
    int kind;
    int x, y;            /* act indices of the data input and the output */
    gwr_layer *relu;     /* the Relu that is the output's sole reader: its output is the quantized one */
} qlayer;

typedef struct st {
    gwr_network *net;
    const gwr_quantize_options *o;
    gwr_quant_report *rep;
    int per_channel, qop, int8;
    act *a;
    int n, cap;
    qlayer *q;
    int nq;
    gwr_layer **carry;   /* carry-through layers taken, in order */
    int ncarry;
} st;

static int find_act(const st *s, const gwr_tensor *t) {
    for (int i = 0; i < s->n; i++)
        if (s->a[i].t == t) return i;
    return -1;
}

static int root(st *s, int i) {
    while (s->a[i].parent != i) i = s->a[i].parent = s->a[s->a[i].parent].parent;
    return i;
}

static void unite(st *s, int i, int j) {
    i = root(s, i), j = root(s, j);
    if (i != j) s->a[j].parent = i;
}

/* t's act index, added when new; -1 when out of memory. */
static int add_act(st *s, gwr_tensor *t) {
    int i = find_act(s, t);
    if (i >= 0) return i;
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 32;
        act *a = gwr_realloc(s->a, (size_t)cap * sizeof *a);
        if (!a) return -1;
        s->a = a, s->cap = cap;
    }
    memset(&s->a[s->n], 0, sizeof *s->a);
    s->a[s->n].t = t, s->a[s->n].parent = s->n;
    return s->n++;
}

/* float32, or not known before the run (the collector checks) */
static int f32ish(const gwr_tensor *t) {
    gwr_dtype d = gwr_tensor_dtype(t);
    return d == GWR_FLOAT32 || d == GWR_UNDEFINED;
}

/* Gemm l's C (NULL: none). */
static gwr_tensor *gemm_c(const gwr_layer *l) {
    if (strcmp(gwr_layer_op(l), "Gemm") || gwr_layer_num_inputs(l) < 3) return NULL;
    return gwr_layer_input(l, 2);
}

static int is_f32_const(const gwr_tensor *t, gwr_match_const *k) {
    return t && gwr_match_const_get(t, k) && k->dtype == GWR_FLOAT32;
}

/* Why layer l (kind) stays float, or NULL when it is quantized. */
static const char *why_float(const st *s, gwr_layer *l, int kind) {
    int nin = gwr_layer_num_inputs(l);
    gwr_tensor *x = nin > 0 ? gwr_layer_input(l, 0) : NULL, *w = nin > 1 ? gwr_layer_input(l, 1) : NULL;
    gwr_match_const k;
    if (!x || !f32ish(x) || !f32ish(gwr_layer_output(l, 0))) return "kept float32: not a float32 layer";
    if (!is_f32_const(w, &k)) return "kept float32: the weight is not a constant";
    if (kind == K_CONV && k.rank < 3) return "kept float32: weight rank below 3";
    if (kind != K_CONV && k.rank != 2) return "kept float32: the weight is not 2-D";
    if (kind == K_GEMM) {
        gwr_match_const c;
        if (s->qop && gwr_layer_num_inputs(l) > 2 && gwr_layer_input(l, 2) && !is_f32_const(gwr_layer_input(l, 2), &c))
            return "kept float32: Gemm's C is not a constant";
        int64_t ta = 0;
        float alpha = 1, beta = 1;
        gwr_layer_attr_int(l, "transA", 0, &ta);
        gwr_layer_attr_float(l, "alpha", 1, &alpha);
        gwr_layer_attr_float(l, "beta", 1, &beta);
        if (ta || alpha != 1 || beta != 1) return "kept float32: Gemm with transA, alpha or beta";
    }
    return NULL;
}

static int is_carry(const char *op) {
    static const char *const ops[] = {"Reshape", "Transpose", "MaxPool", "Concat",  "Flatten",
                                      "Squeeze", "Unsqueeze", "Slice",   "Gather", NULL};
    for (const char *const *p = ops; *p; p++)
        if (!strcmp(op, *p)) return 1;
    return 0;
}

/* A carry-through layer l whose data input is quantized: its acts joined.
 * 1 taken, 0 not, -1 out of memory. */
static int take_carry(st *s, gwr_layer *l) {
    const char *op = gwr_layer_op(l);
    if (strcmp(gwr_layer_domain(l), "") || !is_carry(op) || gwr_layer_num_outputs(l) < 1) return 0;
    gwr_tensor *y = gwr_layer_output(l, 0);
    if (!f32ish(y)) return 0;
    if (!strcmp(op, "MaxPool") && gwr_layer_num_outputs(l) > 1 && gwr_layer_output(l, 1) &&
        gwr_tensor_num_live_users(gwr_layer_output(l, 1)) > 0)
        return 0; /* Indices read: no uint8 form in QOperator, and nothing gained */
    int concat = !strcmp(op, "Concat"), nin = concat ? gwr_layer_num_inputs(l) : 1, any = 0;
    for (int i = 0; i < nin; i++) {
        gwr_tensor *x = gwr_layer_input(l, i);
        if (!x || !f32ish(x)) return 0;
        any |= find_act(s, x) >= 0;
    }
    if (!any) return 0;
    int iy = add_act(s, y);
    if (iy < 0) return -1;
    for (int i = 0; i < nin; i++) {
        int ix = add_act(s, gwr_layer_input(l, i));
        if (ix < 0) return -1;
        unite(s, iy, ix);
    }
    gwr_layer **c = gwr_realloc(s->carry, (size_t)(s->ncarry + 1) * sizeof *c);
    if (!c) return -1;
    s->carry = c, s->carry[s->ncarry++] = l;
    return 1;
}

/* ---- calibration ---- */

static gwr_status observe(void *ctx, int sample, int idx, gwr_value *v) {
    st *s = ctx;
    (void)sample;
    if (!v || gwr_value_dtype(v) != GWR_FLOAT32)
        return gwr_ir_error(s->net, GWR_ERR_TYPE, "static quantization: '%s' is not float32 at run time",
                            gwr_tensor_name(s->a[idx].t));
    gwr_q_observer_add(s->a[idx].ob, gwr_value_cdata(v), gwr_value_numel(v));
    return GWR_OK;
}

static gwr_status calibrate(st *s) {
    const char **names = gwr_calloc((size_t)s->n + 1, sizeof *names);
    if (!names) return gwr_ir_error(s->net, GWR_ERR_NOMEM, "static quantization: out of memory");
    gwr_status rc = GWR_OK;
    for (int i = 0; !rc && i < s->n; i++) {
        names[i] = gwr_tensor_name(s->a[i].t);
        if (!(s->a[i].ob = gwr_q_observer_new(s->o->method, s->o->percentile, s->int8)))
            rc = gwr_ir_error(s->net, GWR_ERR_NOMEM, "static quantization: out of memory");
    }
    if (!rc) rc = gwr_q_collect(s->net, s->o->calib, s->n, names, observe, s, s->o->threads);
    gwr_free(names);
    if (rc) return rc;
    for (int i = 0; i < s->n; i++) gwr_q_observer_range(s->a[i].ob, &s->a[i].lo, &s->a[i].hi);
    for (int i = 0; i < s->n; i++) { /* the group's range: the union */
        act *r = &s->a[root(s, i)];
        r->lo = fmin(r->lo, s->a[i].lo), r->hi = fmax(r->hi, s->a[i].hi);
    }
    for (int i = 0; i < s->n; i++) {
        act *r = &s->a[root(s, i)];
        gwr_q_act_params(r->lo, r->hi, s->int8, &s->a[i].scale, &s->a[i].zp);
    }
    return GWR_OK;
}

/* ---- building ---- */

/* base, or base_N: a tensor / layer name not yet taken, in buf. */
static const char *fresh(gwr_network *net, const char *base, const char *suffix, char *buf, size_t size) {
    snprintf(buf, size, "%.400s%.40s", base, suffix);
    for (int k = 1; gwr_network_find_tensor(net, buf) || gwr_network_find_layer(net, buf); k++)
        snprintf(buf, size, "%.400s%.40s_%d", base, suffix, k);
    return buf;
}

static gwr_status built_error(st *s, const char *what) {
    const char *m = gwr_network_errmsg(s->net);
    return gwr_ir_error(s->net, GWR_ERR_STATE, "static quantization: %s: %s", what, m && *m ? m : gwr_last_errmsg());
}

/* A layer op(in) with one output named `name` (NULL: any), axis set when
 * >= 0; its output, or NULL. */
static gwr_tensor *call1(st *s, const char *op, int nin, gwr_tensor *const *in, int64_t axis, const char *lname,
                         const char *tname) {
    gwr_args *args = NULL;
    if (axis >= 0 && (!(args = gwr_args_new()) || gwr_args_set_int(args, "axis", axis))) {
        gwr_args_free(args);
        return NULL;
    }
    gwr_tensor *out = NULL;
    gwr_layer *l = gwr_op_call(s->net, "", op, nin, in, args, 1, &out);
    gwr_args_free(args);
    if (!l) return NULL;
    char buf[512];
    if (lname && gwr_layer_set_name(l, fresh(s->net, lname, "", buf, sizeof buf))) return NULL;
    if (tname && gwr_tensor_set_name(out, fresh(s->net, tname, "", buf, sizeof buf))) return NULL;
    return out;
}

static gwr_tensor *act_scale(st *s, int i) { return gwr_constant(s->net, GWR_FLOAT32, 0, NULL, &s->a[i].scale); }

static gwr_tensor *act_zp(st *s, int i) {
    if (s->int8) {
        int8_t z = (int8_t)s->a[i].zp;
        return gwr_constant(s->net, GWR_INT8, 0, NULL, &z);
    }
    uint8_t z = (uint8_t)s->a[i].zp;
    return gwr_constant(s->net, GWR_UINT8, 0, NULL, &z);
}

/* QuantizeLinear(t) of act i: its quantized tensor, or NULL. */
static gwr_tensor *quantize_act(st *s, int i) {
    const char *name = gwr_tensor_name(s->a[i].t);
    char ln[512], tn[512];
    snprintf(ln, sizeof ln, "%.400s_QuantizeLinear", name);
    snprintf(tn, sizeof tn, "%.400s_quantized", name);
    gwr_tensor *in[3] = {s->a[i].t, act_scale(s, i), act_zp(s, i)};
    if (!in[1] || !in[2]) return NULL;
    return call1(s, "QuantizeLinear", 3, in, -1, ln, tn);
}

/* to, the float32 value replacing from (the same shape), takes from's
 * shape where it is known: inference may know less (a network output keeps
 * its declared shape). */
static void keep_type(const gwr_tensor *from, gwr_tensor *to) {
    int r = gwr_tensor_rank(from);
    if (r >= 0 && (gwr_tensor_rank(to) < 0 || gwr_tensor_rank(to) == r))
        gwr_tensor_set_type(to, GWR_FLOAT32, r, gwr_tensor_dims(from));
}

/* DequantizeLinear(tq) of act i; its float tensor replaces t for every
 * reader but `except` and takes t's name (t renamed "<name>_float"). */
static gwr_status dequantize_act(st *s, int i, gwr_tensor *tq, const gwr_layer *except) {
    gwr_tensor *t = s->a[i].t;
    char name[512], ln[512], tn[512], buf[512];
    snprintf(name, sizeof name, "%.400s", gwr_tensor_name(t));
    snprintf(ln, sizeof ln, "%.400s_DequantizeLinear", name);
    snprintf(tn, sizeof tn, "%.400s_dequantized", name); /* a graph input's keeps it */
    gwr_tensor *in[3] = {tq, act_scale(s, i), act_zp(s, i)};
    gwr_tensor *td = in[1] && in[2] ? call1(s, "DequantizeLinear", 3, in, -1, ln, tn) : NULL;
    if (!td) return built_error(s, "DequantizeLinear");
    keep_type(t, td);
    gwr_status rc = except ? gwr_tensor_replace_all_uses_except(t, td, except) : gwr_tensor_replace_all_uses_with(t, td);
    if (rc) return built_error(s, "replacing a tensor");
    if (gwr_tensor_is_input(t)) return GWR_OK; /* the interface keeps its name */
    int swapped = !strcmp(gwr_tensor_name(td), name); /* an output: the names swapped already */
    if (gwr_tensor_set_name(t, fresh(s->net, name, "_float", buf, sizeof buf)) || (!swapped && gwr_tensor_set_name(td, name)))
        return built_error(s, "renaming");
    return GWR_OK;
}

/* The quantized weight of q: int8 data (caller frees), scales[nch] and the
 * channel axis; nch 1 per tensor. */
typedef struct qweight {
    int8_t *data;
    float *scale;
    int64_t nch, axis, numel;
    int rank;
    int64_t dims[GWR_MAX_RANK];
} qweight;

static int quantize_weight(st *s, const qlayer *q, qweight *w) {
    gwr_match_const k;
    gwr_match_const_get(gwr_layer_input(q->l, 1), &k);
    int64_t tb = 0;
    if (q->kind == K_GEMM) gwr_layer_attr_int(q->l, "transB", 0, &tb);
    w->axis = q->kind == K_CONV || tb ? 0 : 1;
    w->rank = k.rank, w->numel = k.numel;
    memcpy(w->dims, k.dims, (size_t)k.rank * sizeof *k.dims);
    w->nch = s->per_channel ? k.dims[w->axis] : 1;
    w->data = gwr_malloc((size_t)k.numel + 1);
    w->scale = gwr_malloc((size_t)w->nch * sizeof *w->scale);
    if (!w->data || !w->scale) return -1;
    int64_t inner = 1; /* elements per step of the axis, for axis 0 */
    for (int d = 1; d < k.rank; d++) inner *= k.dims[d];
    int qmax = gwr_q_weight_qmax(s->o); /* 64 for onnxruntime: see quant_internal.h */
    if (w->nch == 1) gwr_q_sym8(k.data, 1, k.numel, 0, 1, qmax, w->data, w->scale);
    else if (w->axis == 0) gwr_q_sym8(k.data, w->nch, inner, inner, 1, qmax, w->data, w->scale);
    else gwr_q_sym8(k.data, w->nch, k.dims[0], 1, w->nch, qmax, w->data, w->scale); /* [K, N], axis 1 */
    return 0;
}

/* The bias of q (Conv input 2, Gemm C) when a float32 1-D constant over
 * the output channels; else NULL. */
static gwr_tensor *bias_of(const qlayer *q, int64_t nout) {
    if (q->kind == K_MATMUL || gwr_layer_num_inputs(q->l) < 3) return NULL;
    gwr_tensor *b = gwr_layer_input(q->l, 2);
    gwr_match_const k;
    if (!is_f32_const(b, &k) || k.rank != 1 || k.dims[0] != nout) return NULL;
    return b;
}

/* int32 bias with scale x_scale * w_scale[c] (scales out: nch floats). */
static gwr_tensor *quantize_bias(st *s, gwr_tensor *b, float xs, const qweight *w, float *bs, int32_t *bq) {
    gwr_match_const k;
    gwr_match_const_get(b, &k);
    const float *f = k.data;
    for (int64_t c = 0; c < w->nch; c++) bs[c] = xs * w->scale[c];
    for (int64_t i = 0; i < k.numel; i++) {
        float sc = bs[w->nch == 1 ? 0 : i];
        double v = sc > 0 ? nearbyint((double)f[i] / (double)sc) : 0;
        bq[i] = (int32_t)(v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v);
    }
    return gwr_constant(s->net, GWR_INT32, 1, k.dims, bq);
}

/* The weight's scale and zero point constants (scalar per tensor). */
static gwr_status weight_consts(st *s, const qweight *w, gwr_tensor **sc, gwr_tensor **zp) {
    int8_t *z = gwr_calloc((size_t)w->nch, 1);
    if (!z) return GWR_ERR_NOMEM;
    int r = w->nch == 1 ? 0 : 1;
    *sc = gwr_constant(s->net, GWR_FLOAT32, r, &w->nch, w->scale);
    *zp = gwr_constant(s->net, GWR_INT8, r, &w->nch, z);
    gwr_free(z);
    return *sc && *zp ? GWR_OK : GWR_ERR_NOMEM;
}

/* from's attributes (the plain kinds) as op-call arguments; NULL when out
 * of memory. */
static gwr_args *attrs_of(const gwr_layer *from) {
    gwr_args *args = gwr_args_new();
    for (int a = 0; args && a < gwr_layer_num_attrs(from); a++) {
        const char *n = gwr_layer_attr_name(from, a);
        int64_t i, cnt;
        float f;
        const char *str;
        size_t len;
        const int64_t *is;
        const float *fs;
        gwr_status rc = GWR_OK;
        switch (gwr_layer_attr_type(from, a)) {
        case GWR_ATTR_INT: if (!gwr_layer_get_int(from, n, &i)) rc = gwr_args_set_int(args, n, i); break;
        case GWR_ATTR_FLOAT: if (!gwr_layer_get_float(from, n, &f)) rc = gwr_args_set_float(args, n, f); break;
        case GWR_ATTR_STRING:
            if (!gwr_layer_get_string(from, n, &str, &len)) rc = gwr_args_set_string(args, n, str);
            break;
        case GWR_ATTR_INTS:
            if (!gwr_layer_get_ints(from, n, &is, &cnt)) rc = gwr_args_set_ints(args, n, (int)cnt, is);
            break;
        case GWR_ATTR_FLOATS:
            if (!gwr_layer_get_floats(from, n, &fs, &cnt)) {
                double *d = gwr_malloc((size_t)cnt * sizeof *d + 1);
                for (int64_t k = 0; d && k < cnt; k++) d[k] = fs[k];
                rc = d ? gwr_args_set_floats(args, n, (int)cnt, d) : GWR_ERR_NOMEM;
                gwr_free(d);
            }
            break;
        default: break;
        }
        if (rc) gwr_args_free(args), args = NULL;
    }
    return args;
}

/* QOperator Gemm(x, B, C): QLinearMatMul(x, B as [K, N]) -> [DequantizeLinear
 * -> Add(C) in float]. Without C the QLinearMatMul's output is the Gemm's,
 * quantized as the layer's output; with C its range is the output's less
 * C's extremes (y - C lies within [min y - max C, max y - min C]), and the
 * float sum replaces the Gemm's output (a quantized reader quantizes it
 * again: a region's exit and entry). */
static gwr_status rewrite_gemm_qop(st *s, qlayer *q, const qweight *w, gwr_tensor *wsc, gwr_tensor *wzp) {
    int64_t tb = 0, kn[2] = {w->dims[0], w->dims[1]};
    gwr_layer_attr_int(q->l, "transB", 0, &tb);
    int8_t *t = gwr_malloc((size_t)w->numel + 1);
    if (!t) return gwr_ir_error(s->net, GWR_ERR_NOMEM, "static quantization: out of memory");
    if (tb) { /* [N, K] -> [K, N] */
        kn[0] = w->dims[1], kn[1] = w->dims[0];
        for (int64_t n = 0; n < w->dims[0]; n++)
            for (int64_t k = 0; k < w->dims[1]; k++) t[k * w->dims[0] + n] = w->data[n * w->dims[1] + k];
    } else {
        memcpy(t, w->data, (size_t)w->numel);
    }
    gwr_tensor *wq = gwr_constant(s->net, GWR_INT8, 2, kn, t);
    gwr_free(t);
    gwr_tensor *xq = s->a[q->x].tq, *c = gemm_c(q->l), *y = s->a[q->y].t;
    if (!xq && !(xq = s->a[q->x].tq = quantize_act(s, q->x))) return built_error(s, "QuantizeLinear");
    float ys = s->a[q->y].scale;
    int yzp = s->a[q->y].zp;
    if (c) {
        gwr_match_const k;
        gwr_match_const_get(c, &k);
        double cmin = 0, cmax = 0;
        for (int64_t i = 0; i < k.numel; i++) {
            double v = gwr_match_const_at(&k, i);
            cmin = i ? fmin(cmin, v) : v, cmax = i ? fmax(cmax, v) : v;
        }
        const act *r = &s->a[root(s, q->y)];
        gwr_q_act_params(r->lo - cmax, r->hi - cmin, s->int8, &ys, &yzp);
    }
    gwr_tensor *ysc = gwr_constant(s->net, GWR_FLOAT32, 0, NULL, &ys), *yz = NULL;
    int8_t z8 = (int8_t)yzp;
    uint8_t zu = (uint8_t)yzp;
    yz = s->int8 ? gwr_constant(s->net, GWR_INT8, 0, NULL, &z8) : gwr_constant(s->net, GWR_UINT8, 0, NULL, &zu);
    gwr_tensor *in[8] = {xq, act_scale(s, q->x), act_zp(s, q->x), wq, wsc, wzp, ysc, yz}, *yq = NULL;
    for (int i = 0; i < 8; i++)
        if (!in[i]) return built_error(s, "QLinearMatMul");
    gwr_layer *nl = gwr_op_call(s->net, "", "QLinearMatMul", 8, in, NULL, 1, &yq);
    char keep[512], buf[512], tn[512];
    snprintf(keep, sizeof keep, "%.400s", gwr_layer_name(q->l));
    snprintf(tn, sizeof tn, "%.400s%s", gwr_tensor_name(y), c ? "_matmul_quantized" : "_quantized");
    if (!nl || gwr_layer_set_name(q->l, fresh(s->net, keep, "_float", buf, sizeof buf)) || gwr_layer_set_name(nl, keep) ||
        gwr_tensor_set_name(yq, fresh(s->net, tn, "", buf, sizeof buf)))
        return built_error(s, "QLinearMatMul");
    if (!c) {
        s->a[q->y].tq = yq, s->a[q->y].inside = nl;
        return GWR_OK;
    }
    gwr_tensor *dq[3] = {yq, ysc, yz}, *ym = call1(s, "DequantizeLinear", 3, dq, -1, NULL, NULL), *yf = NULL;
    gwr_tensor *add[2] = {ym, c};
    if (!ym || !(yf = call1(s, "Add", 2, add, -1, NULL, NULL))) return built_error(s, "Gemm's C");
    /* the sum takes the Gemm output's place and name */
    char name[512];
    snprintf(name, sizeof name, "%.400s", gwr_tensor_name(y));
    keep_type(y, yf);
    if (gwr_tensor_replace_all_uses_with(y, yf)) return built_error(s, "replacing a tensor");
    int swapped = !strcmp(gwr_tensor_name(yf), name);
    if (gwr_tensor_set_name(y, fresh(s->net, name, "_float", buf, sizeof buf)) || (!swapped && gwr_tensor_set_name(yf, name)))
        return built_error(s, "renaming");
    s->a[q->y].t = yf; /* a quantized reader quantizes the sum */
    return GWR_OK;
}

static gwr_status rewrite_layer(st *s, qlayer *q, int64_t *after) {
    qweight w = {0};
    gwr_status rc = GWR_OK;
    float *bs = NULL;
    int32_t *bq = NULL;
    gwr_tensor *bias = NULL, *wsc = NULL, *wzp = NULL, *wq = NULL, *bqt = NULL, *bsc = NULL;
    if (quantize_weight(s, q, &w)) {
        rc = gwr_ir_error(s->net, GWR_ERR_NOMEM, "static quantization: out of memory");
        goto done;
    }
    int64_t nout = w.dims[w.axis];
    bias = s->qop && q->kind == K_GEMM ? NULL : bias_of(q, nout); /* QOperator Gemm: C added in float */
    if (bias) {
        bs = gwr_malloc((size_t)w.nch * sizeof *bs);
        bq = gwr_malloc((size_t)nout * sizeof *bq);
        if (!bs || !bq) {
            rc = gwr_ir_error(s->net, GWR_ERR_NOMEM, "static quantization: out of memory");
            goto done;
        }
        if (!(bqt = quantize_bias(s, bias, s->a[q->x].scale, &w, bs, bq)) ||
            !(bsc = gwr_constant(s->net, GWR_FLOAT32, w.nch == 1 ? 0 : 1, &w.nch, bs))) {
            rc = built_error(s, "bias");
            goto done;
        }
    }
    if (weight_consts(s, &w, &wsc, &wzp) || !(wq = gwr_constant(s->net, GWR_INT8, w.rank, w.dims, w.data))) {
        rc = built_error(s, "weights");
        goto done;
    }
    *after += w.numel + (int64_t)w.nch * 5 + (bias ? nout * 4 + w.nch * 4 : 0);
    if (s->qop && q->kind == K_GEMM) {
        gwr_match_const c;
        if (gemm_c(q->l) && gwr_match_const_get(gemm_c(q->l), &c)) *after += c.numel * 4;
        rc = rewrite_gemm_qop(s, q, &w, wsc, wzp);
        goto done;
    }
    const char *lname = gwr_layer_name(q->l);
    char ln[512];
    if (!s->qop) {
        snprintf(ln, sizeof ln, "%.400s_weight_DequantizeLinear", lname);
        gwr_tensor *in[3] = {wq, wsc, wzp};
        gwr_tensor *wd = call1(s, "DequantizeLinear", 3, in, w.nch > 1 ? w.axis : -1, ln, NULL);
        if (!wd || gwr_layer_set_input(q->l, 1, wd)) {
            rc = built_error(s, "weight DequantizeLinear");
            goto done;
        }
        if (bias) {
            snprintf(ln, sizeof ln, "%.400s_bias_DequantizeLinear", lname);
            gwr_tensor *bin[2] = {bqt, bsc};
            gwr_tensor *bd = call1(s, "DequantizeLinear", 2, bin, w.nch > 1 ? 0 : -1, ln, NULL);
            if (!bd || gwr_layer_set_input(q->l, 2, bd)) rc = built_error(s, "bias DequantizeLinear");
        }
        goto done;
    }
    /* QOperator: QLinearConv(x, xs, xzp, w, ws, wzp, ys, yzp, B) / QLinearMatMul(a, as, azp, b, bs, bzp, ys, yzp) */
    gwr_tensor *xq = s->a[q->x].tq;
    if (!xq && !(xq = s->a[q->x].tq = quantize_act(s, q->x))) {
        rc = built_error(s, "QuantizeLinear");
        goto done;
    }
    gwr_tensor *in[9] = {xq, act_scale(s, q->x), act_zp(s, q->x), wq, wsc, wzp, act_scale(s, q->y), act_zp(s, q->y), bqt};
    const char *op = q->kind == K_CONV ? "QLinearConv" : "QLinearMatMul";
    gwr_tensor *yq = NULL;
    gwr_args *args = q->kind == K_CONV ? attrs_of(q->l) : NULL;
    gwr_layer *nl = q->kind == K_CONV && !args ? NULL : gwr_op_call(s->net, "", op, bqt ? 9 : 8, in, args, 1, &yq);
    gwr_args_free(args);
    char buf[512], tn[512];
    snprintf(tn, sizeof tn, "%.400s_quantized", gwr_tensor_name(s->a[q->y].t));
    if (!nl) {
        rc = built_error(s, op);
        goto done;
    }
    /* the new layer takes the float layer's name (that one renamed) */
    char keep[512];
    snprintf(keep, sizeof keep, "%s", lname);
    if (gwr_layer_set_name(q->l, fresh(s->net, keep, "_float", buf, sizeof buf)) ||
        gwr_layer_set_name(nl, keep) || gwr_tensor_set_name(yq, fresh(s->net, tn, "", buf, sizeof buf))) {
        rc = built_error(s, op);
        goto done;
    }
    s->a[q->y].tq = yq, s->a[q->y].inside = nl;
done:
    gwr_free(w.data), gwr_free(w.scale), gwr_free(bs), gwr_free(bq);
    return rc;
}

/* QOperator: carry-through layer l rebuilt on the quantized inputs. */
static gwr_status rewrite_carry_qop(st *s, gwr_layer *l) {
    int nin = gwr_layer_num_inputs(l), concat = !strcmp(gwr_layer_op(l), "Concat");
    gwr_tensor **in = gwr_calloc((size_t)nin + 1, sizeof *in);
    if (!in) return gwr_ir_error(s->net, GWR_ERR_NOMEM, "static quantization: out of memory");
    gwr_status rc = GWR_OK;
    for (int i = 0; !rc && i < nin; i++) {
        in[i] = gwr_layer_input(l, i);
        if (i > 0 && !concat) continue;
        int ai = find_act(s, in[i]);
        if (!s->a[ai].tq && !(s->a[ai].tq = quantize_act(s, ai))) rc = built_error(s, "QuantizeLinear");
        in[i] = s->a[ai].tq;
    }
    int iy = find_act(s, gwr_layer_output(l, 0));
    gwr_tensor *yq = NULL;
    gwr_args *args = rc ? NULL : attrs_of(l);
    gwr_layer *nl = args ? gwr_op_call(s->net, "", gwr_layer_op(l), nin, in, args, 1, &yq) : NULL;
    gwr_args_free(args);
    gwr_free(in);
    if (rc) return rc;
    char buf[512], tn[512];
    snprintf(tn, sizeof tn, "%.400s_quantized", gwr_tensor_name(s->a[iy].t));
    if (!nl) return built_error(s, gwr_layer_op(l));
    if (gwr_tensor_set_name(yq, fresh(s->net, tn, "", buf, sizeof buf)))
        return built_error(s, gwr_layer_op(l));
    s->a[iy].tq = yq, s->a[iy].inside = nl;
    return GWR_OK;
}

/* The Relu reading l's output alone (not a network output), whose output
 * is then the one quantized: Q/DQ after the Relu, as runtimes fuse
 * Conv + Relu; in QOperator (uint8, zero point 0 since the range starts
 * at 0) the quantized layer's saturation at 0 is the Relu, which goes. */
static gwr_layer *fused_relu(const st *s, gwr_layer *l) {
    gwr_tensor *y = gwr_layer_output(l, 0);
    if (gwr_tensor_num_live_users(y) != 1 || gwr_tensor_output_index(y) >= 0 || (s->qop && s->int8)) return NULL;
    if (s->qop && gemm_c(l)) return NULL; /* QLinearMatMul + a float Add of C: the Relu stays */
    for (int64_t i = 0; i < gwr_tensor_num_users(y); i++) {
        gwr_layer *r = gwr_tensor_user(y, i, NULL);
        if (!r || gwr_layer_is_removed(r)) continue;
        if (strcmp(gwr_layer_op(r), "Relu") || strcmp(gwr_layer_domain(r), "") || gwr_q_listed(s->o->exclude, r))
            return NULL;
        return f32ish(gwr_layer_output(r, 0)) ? r : NULL;
    }
    return NULL;
}

static int kind_of(const gwr_layer *l) {
    if (strcmp(gwr_layer_domain(l), "")) return -1;
    const char *op = gwr_layer_op(l);
    return !strcmp(op, "Conv") ? K_CONV : !strcmp(op, "MatMul") ? K_MATMUL : !strcmp(op, "Gemm") ? K_GEMM : -1;
}

static int64_t weight_bytes(const gwr_layer *l) {
    int64_t b = 0;
    gwr_match_const k;
    for (int i = 1; i < gwr_layer_num_inputs(l) && i < 3; i++)
        if (gwr_layer_input(l, i) && gwr_match_const_get(gwr_layer_input(l, i), &k))
            b += k.numel * (int64_t)gwr_dtype_size(k.dtype);
    return b;
}

gwr_status gwr_q_static(gwr_network *net, const gwr_quantize_options *o, gwr_quant_report *rep) {
    st s = {.net = net, .o = o, .rep = rep, .int8 = o->act_int8, .qop = o->format == GWR_QFORMAT_QOPERATOR};
    /* QuantizeLinear needs opset 10, a per-channel DequantizeLinear (axis)
     * 13: when a layer is to be quantized, the opset is raised to 13 where
     * every op of the network converts (gwr_opt_raise_opset); else per
     * tensor, and below 10 refused */
    int64_t opset = gwr_network_opset(net, "");
    int any = 0, raised = 0;
    for (int64_t i = 0; !any && i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        int kind = kind_of(l);
        any = !gwr_layer_is_removed(l) && kind >= 0 && !gwr_q_listed(o->exclude, l) && !why_float(&s, l, kind);
    }
    if (any && opset >= 0 && opset < 13 && (!o->per_tensor || opset < 10)) raised = !gwr_opt_raise_opset(net, 13);
    if (any && opset >= 0 && opset < 10 && !raised) {
        char why[400];
        snprintf(why, sizeof why, "%s", gwr_network_errmsg(net));
        return gwr_ir_error(net, GWR_ERR_UNSUPPORTED,
                            "static quantization needs opset 10 or later (QuantizeLinear), not %lld, and raising it "
                            "failed: %s", (long long)opset, why);
    }
    s.per_channel = !o->per_tensor && (opset < 0 || opset >= 13 || raised);
    int64_t nl = gwr_network_num_layers(net);
    gwr_layer **order = gwr_malloc(((size_t)nl + 1) * sizeof *order);
    s.q = gwr_malloc(((size_t)nl + 1) * sizeof *s.q);
    gwr_status rc = GWR_OK;
    if (!order || !s.q) rc = gwr_ir_error(net, GWR_ERR_NOMEM, "static quantization: out of memory");
    if (!rc && gwr_network_topo_order(net, order)) rc = built_error(&s, "ordering");
    int64_t before = 0, after = 0;
    char what[160];
    snprintf(what, sizeof what, "int8 %s weights, %s activations (%s)", s.per_channel ? "per-channel" : "per-tensor",
             s.int8 ? "int8" : "uint8", s.qop ? "QOperator" : "QDQ");
    /* 1. the layers */
    for (int64_t i = 0; !rc && i < nl; i++) {
        gwr_layer *l = order[i];
        if (gwr_layer_is_removed(l)) continue;
        int kind = kind_of(l);
        if (kind < 0) {
            if (!gwr_q_listed(o->exclude, l) && take_carry(&s, l) < 0)
                rc = gwr_ir_error(net, GWR_ERR_NOMEM, "static quantization: out of memory");
            continue;
        }
        int64_t wb = weight_bytes(l);
        before += wb;
        const char *why = gwr_q_listed(o->exclude, l) ? "kept float32: --exclude" : why_float(&s, l, kind);
        if (why) {
            after += wb;
            if (rep && gwr_q_report_add(rep, gwr_layer_name(l), gwr_layer_op(l), why, -1, -1))
                rc = gwr_ir_error(net, GWR_ERR_NOMEM, "static quantization: out of memory");
            continue;
        }
        qlayer *q = &s.q[s.nq++];
        q->l = l, q->kind = kind, q->relu = fused_relu(&s, l);
        gwr_tensor *y = q->relu ? gwr_layer_output(q->relu, 0) : gwr_layer_output(l, 0);
        if ((q->x = add_act(&s, gwr_layer_input(l, 0))) < 0 || (q->y = add_act(&s, y)) < 0)
            rc = gwr_ir_error(net, GWR_ERR_NOMEM, "static quantization: out of memory");
        else if (rep && gwr_q_report_add(rep, gwr_layer_name(l), gwr_layer_op(l), what, -1, -1))
            rc = gwr_ir_error(net, GWR_ERR_NOMEM, "static quantization: out of memory");
    }
    /* 2. the ranges */
    if (!rc && s.nq) rc = calibrate(&s);
    /* 3. the rewrite, in the layers' order (QOperator needs producers first) */
    int ic = 0;
    for (int64_t i = 0; !rc && s.nq && i < nl; i++) {
        gwr_layer *l = order[i];
        int qi = -1;
        for (int k = 0; k < s.nq && qi < 0; k++)
            if (s.q[k].l == l) qi = k;
        if (qi >= 0) {
            rc = rewrite_layer(&s, &s.q[qi], &after);
        } else if (ic < s.ncarry && s.carry[ic] == l) {
            ic++;
            if (s.qop) rc = rewrite_carry_qop(&s, l);
        }
    }
    if (!rc && s.nq && !s.qop) {
        for (int i = 0; !rc && i < s.n; i++) {
            gwr_tensor *tq = quantize_act(&s, i);
            rc = tq ? dequantize_act(&s, i, tq, gwr_tensor_parent(tq)) : built_error(&s, "QuantizeLinear");
        }
    } else if (!rc && s.nq) {
        /* the float layers replaced go; where a float layer or the output
         * reads a value made inside a region, it is dequantized */
        for (int k = 0; k < s.nq; k++) {
            gwr_layer_mark_as_removed(s.q[k].l);
            if (s.q[k].relu) gwr_layer_mark_as_removed(s.q[k].relu);
        }
        for (int k = 0; k < s.ncarry; k++) gwr_layer_mark_as_removed(s.carry[k]);
        for (int i = 0; !rc && i < s.n; i++) {
            act *a = &s.a[i];
            if (!a->inside || (gwr_tensor_num_live_users(a->t) == 0 && gwr_tensor_output_index(a->t) < 0)) continue;
            rc = dequantize_act(&s, i, a->tq, NULL);
        }
    }
    if (!rc && s.nq && gwr_network_prune(net, NULL)) rc = built_error(&s, "pruning");
    if (rep) rep->bytes_before += before, rep->bytes_after += after;
    for (int i = 0; i < s.n; i++) gwr_q_observer_free(s.a[i].ob);
    gwr_free(s.a), gwr_free(s.q), gwr_free(s.carry), gwr_free(order);
    return rc;
}
