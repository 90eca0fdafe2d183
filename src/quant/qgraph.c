/* qgraph.c - the linear layers the weight-quantizing modes rewrite, and
 * the small builders they share (qgraph.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gwr/functional.h"
#include "passes/passes_api.h"
#include "quant/qgraph.h"

static int f32_const(const gwr_tensor *t, gwr_match_const *k) {
    return t && gwr_match_const_get(t, k) && k->dtype == GWR_FLOAT32 && k->numel > 0;
}

/* x is float32, or untyped (a file without value_info): MatMul, Gemm and
 * Conv take A of B's type, so with a float32 weight it is float32. */
static int is_f32(const gwr_tensor *t) {
    return t && (gwr_tensor_dtype(t) == GWR_FLOAT32 || gwr_tensor_dtype(t) == GWR_UNDEFINED);
}

int gwr_q_linear_of(gwr_layer *l, gwr_q_linear *q) {
    memset(q, 0, sizeof *q);
    if (gwr_layer_is_removed(l) || *gwr_layer_domain(l) || gwr_layer_num_inputs(l) < 2) return 0;
    const char *op = gwr_layer_op(l);
    q->l = l, q->x = gwr_layer_input(l, 0), q->w = gwr_layer_input(l, 1), q->alpha = q->beta = 1;
    if (!is_f32(q->x) || !f32_const(q->w, &q->wk)) return 0;
    if (!strcmp(op, "MatMul")) {
        if (q->wk.rank != 2) return 0;
        q->kind = GWR_QL_MATMUL, q->K = q->wk.dims[0], q->N = q->wk.dims[1];
        return 1;
    }
    if (!strcmp(op, "Gemm")) {
        int64_t ta = 0, tb = 0;
        if (q->wk.rank != 2 || gwr_layer_attr_int(l, "transA", 0, &ta) || gwr_layer_attr_int(l, "transB", 0, &tb) ||
            gwr_layer_attr_float(l, "alpha", 1, &q->alpha) || gwr_layer_attr_float(l, "beta", 1, &q->beta))
            return 0;
        q->kind = GWR_QL_GEMM, q->trans_a = ta != 0, q->trans_b = tb != 0;
        q->K = q->wk.dims[tb ? 1 : 0], q->N = q->wk.dims[tb ? 0 : 1];
        q->c = gwr_layer_num_inputs(l) > 2 ? gwr_layer_input(l, 2) : NULL;
        return 1;
    }
    if (!strcmp(op, "Conv")) {
        if (q->wk.rank < 3 || q->wk.dims[0] < 1) return 0;
        q->kind = GWR_QL_CONV, q->N = q->wk.dims[0], q->K = q->wk.numel / q->N;
        q->c = gwr_layer_num_inputs(l) > 2 ? gwr_layer_input(l, 2) : NULL;
        return 1;
    }
    return 0;
}

gwr_status gwr_q_type_x(const gwr_q_linear *q) {
    if (gwr_tensor_dtype(q->x) != GWR_UNDEFINED) return GWR_OK;
    return gwr_tensor_set_type(q->x, GWR_FLOAT32, gwr_tensor_rank(q->x), gwr_tensor_dims(q->x));
}

float *gwr_q_weight_kn(const gwr_q_linear *q) {
    float *w = gwr_malloc((size_t)(q->K * q->N) * sizeof *w);
    if (!w) return NULL;
    const float *s = q->wk.data;
    if (q->kind == GWR_QL_GEMM && q->trans_b) {
        for (int64_t n = 0; n < q->N; n++)
            for (int64_t k = 0; k < q->K; k++) w[k * q->N + n] = s[n * q->K + k];
    } else {
        memcpy(w, s, (size_t)(q->K * q->N) * sizeof *w);
    }
    return w;
}

gwr_tensor *gwr_q_const(gwr_network *net, const char *base, const char *suffix, gwr_dtype dt, int rank,
                        const int64_t *dims, const void *data) {
    gwr_tensor *t = gwr_constant(net, dt, rank, dims, data);
    if (!t) return NULL;
    char name[256];
    snprintf(name, sizeof name, "%s%s", base, suffix);
    if (!gwr_network_find_tensor(net, name)) gwr_tensor_set_name(t, name); /* else the generated name stays */
    return t;
}

gwr_status gwr_q_take_place(gwr_layer *old, gwr_tensor *new_out, gwr_layer *main) {
    gwr_network *net = gwr_layer_network(old);
    gwr_tensor *ot = gwr_layer_output(old, 0);
    int was_output = gwr_tensor_output_index(ot) >= 0;
    char tname[256], aside[300];
    snprintf(tname, sizeof tname, "%s", gwr_tensor_name(ot));
    gwr_status s = gwr_tensor_replace_all_uses_with(ot, new_out);
    if (!s) s = gwr_layer_mark_as_removed(old);
    if (s) return s;
    /* The quantized chain's output and its main layer keep the float
     * layer's names (a network output swapped names already), so that a
     * report or a comparison finds them; the old ones go aside, dropped by
     * gwr_q_finish. A name that is taken after all stays generated. */
    if (!was_output) {
        snprintf(aside, sizeof aside, "%s.float32", tname);
        if (!gwr_network_find_tensor(net, aside) && !gwr_tensor_set_name(ot, aside)) gwr_tensor_set_name(new_out, tname);
    }
    if (main) gwr_q_rename_as(old, main);
    return GWR_OK;
}

void gwr_q_rename_as(gwr_layer *old, gwr_layer *nl) {
    gwr_network *net = gwr_layer_network(old);
    char lname[256], aside[300];
    snprintf(lname, sizeof lname, "%s", gwr_layer_name(old));
    snprintf(aside, sizeof aside, "%s.float32", lname);
    if (!gwr_network_find_layer(net, aside) && !gwr_layer_set_name(old, aside)) gwr_layer_set_name(nl, lname);
}

gwr_status gwr_q_fail(gwr_network *net, gwr_status s, const char *fmt, ...) {
    char prev[512], ctx[512];
    snprintf(prev, sizeof prev, "%s", gwr_network_errmsg(net)); /* the message is rewritten in place */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx, sizeof ctx, fmt, ap);
    va_end(ap);
    if (!s) s = gwr_last_status() ? gwr_last_status() : GWR_ERR_STATE;
    return gwr_ir_error(net, s, "%s: %s", ctx, *prev ? prev : gwr_last_errmsg());
}

gwr_status gwr_q_need_opset(gwr_network *net, int64_t v, const char *what) {
    int64_t have = gwr_network_opset(net, "");
    if (have >= v) return GWR_OK;
    if (have < 1) return gwr_network_set_opset(net, "", v);
    gwr_status st = gwr_opt_raise_opset(net, v);
    return st ? gwr_q_fail(net, st, "%s needs opset %lld (the model's is %lld)", what, (long long)v, (long long)have)
              : GWR_OK;
}

gwr_status gwr_q_finish(gwr_network *net) {
    gwr_status s = gwr_network_prune(net, NULL);
    return s ? s : gwr_network_toposort(net);
}

/* Symmetric int8 quantization of nch channels of cnt weights each, channel
 * c's element e at w[c * cs + e * es] (q at the same place): scale
 * max|w| / qmax (1 for an all-zero channel), q = w / scale rounded to
 * nearest, ties to even, within [-qmax, qmax] (gwr_q_weight_qmax). */
void gwr_q_sym8(const float *w, int64_t nch, int64_t cnt, int64_t cs, int64_t es, int qmax, int8_t *q,
                float *scale) {
    for (int64_t c = 0; c < nch; c++) {
        float amax = 0;
        for (int64_t e = 0; e < cnt; e++) amax = fmaxf(amax, fabsf(w[c * cs + e * es]));
        float s = amax > 0 ? amax / (float)qmax : 1.0f;
        for (int64_t e = 0; e < cnt; e++) {
            float v = nearbyintf(w[c * cs + e * es] / s);
            q[c * cs + e * es] = (int8_t)(v > qmax ? qmax : v < -qmax ? -qmax : v);
        }
        scale[c] = s;
    }
}
