/* collect.c - running a network on a calibration set and handing the
 * values of chosen tensors to a callback, one sample at a time (so that
 * calibration never holds more than one sample's activations), plus the
 * small helpers every mode shares. */
#include <math.h>
#include <string.h>

#include "quant/quant_internal.h"

gwr_status gwr_q_collect(gwr_network *net, const gwr_calib *c, int n, const char *const *names, gwr_q_collect_fn fn,
                         void *ctx, int threads) {
    if (!c || !c->n) return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "calibration: no samples");
    gwr_network *copy = gwr_network_clone(net);
    if (!copy) return gwr_ir_error(net, GWR_ERR_NOMEM, "calibration: cloning the network: %s", gwr_last_errmsg());
    gwr_status rc = GWR_OK;
    for (int k = 0; !rc && k < n; k++) {
        gwr_tensor *t = gwr_network_find_tensor(copy, names[k]);
        if (!t) {
            rc = gwr_ir_error(net, GWR_ERR_NOT_FOUND, "calibration: no tensor '%s'", names[k]);
            break;
        }
        int marked = 0;
        for (int j = 0; !marked && j < gwr_network_num_outputs(copy); j++) marked = gwr_network_output(copy, j) == t;
        if (!marked && gwr_network_mark_output(copy, t))
            rc = gwr_ir_error(net, GWR_ERR_STATE, "calibration: %s", gwr_network_errmsg(copy));
    }
    gwr_session *s = NULL;
    if (!rc) {
        gwr_session_options so = {.threads = threads > 0 ? threads : 1};
        if (!(s = gwr_session_new_raw(copy, &so)))
            rc = gwr_ir_error(net, GWR_ERR_STATE, "calibration: planning: %s", gwr_last_errmsg());
    }
    gwr_value **out = gwr_calloc((size_t)n + 1, sizeof *out);
    if (!rc && !out) rc = gwr_ir_error(net, GWR_ERR_NOMEM, "calibration: out of memory");
    for (int i = 0; !rc && i < c->n; i++) {
        const struct gwr_calib_sample *smp = &c->s[i];
        if (gwr_session_run(s, smp->n, (const char *const *)smp->names, smp->values, n, names, out)) {
            rc = gwr_ir_error(net, GWR_ERR_STATE, "calibration sample %d: %s", i, gwr_session_errmsg(s));
            break;
        }
        for (int k = 0; k < n; k++) {
            if (!rc) rc = fn(ctx, i, k, out[k]);
            gwr_value_release(out[k]);
            out[k] = NULL;
        }
    }
    gwr_free(out);
    gwr_session_free(s);
    gwr_network_free(copy);
    return rc;
}

gwr_status gwr_q_run_sample(gwr_network *net, const gwr_calib *c, int i, int threads, gwr_value **out) {
    if (!c || i < 0 || i >= c->n) return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "calibration: no sample %d", i);
    gwr_session_options so = {.threads = threads > 0 ? threads : 1};
    gwr_session *s = gwr_session_new_raw(net, &so);
    if (!s) return gwr_ir_error(net, GWR_ERR_STATE, "planning: %s", gwr_last_errmsg());
    const struct gwr_calib_sample *smp = &c->s[i];
    int no = gwr_network_num_outputs(net);
    gwr_status rc = gwr_session_run(s, smp->n, (const char *const *)smp->names, smp->values, no, NULL, out);
    if (rc) rc = gwr_ir_error(net, rc, "sample %d: %s", i, gwr_session_errmsg(s));
    gwr_session_free(s);
    return rc;
}

void gwr_q_error(const float *a, const float *b, int64_t n, double *rel, double *cosine) {
    double dd = 0, bb = 0, aa = 0, ab = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = a[i], y = b[i], d = x - y;
        dd += d * d, bb += y * y, aa += x * x, ab += x * y;
    }
    if (rel) *rel = bb > 0 ? sqrt(dd / bb) : sqrt(dd);
    if (cosine) *cosine = aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : (aa == bb ? 1.0 : 0.0);
}

int gwr_q_listed(const char *list, const gwr_layer *l) {
    if (!list || !*list) return 0;
    const char *op = gwr_layer_op(l), *name = gwr_layer_name(l);
    size_t lo = strlen(op), ln = name ? strlen(name) : 0;
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if ((len == lo && !strncmp(p, op, len)) || (name && len == ln && !strncmp(p, name, len))) return 1;
        p += len + (e != NULL);
    }
    return 0;
}

static const char *const quantized_ops[] = {
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "MatMulInteger", "ConvInteger",
    "QLinearConv", "QLinearMatMul", "MatMulNBits", "MatMulIntegerToFloat", "DynamicQuantizeMatMul",
    "QLinearAdd", "QLinearMul", "QGemm", "QAttention", "DynamicQuantizeLSTM", "GatherBlockQuantized", NULL};

int gwr_q_any_layer(const gwr_network *net, int (*pred)(const gwr_layer *)) {
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (gwr_layer_is_removed(l)) continue;
        if (pred(l)) return 1;
        for (int a = 0; a < gwr_layer_num_attrs(l); a++) {
            const char *an = gwr_layer_attr_name(l, a);
            gwr_attr_type at = gwr_layer_attr_type(l, a);
            gwr_network *g = NULL;
            gwr_network *const *gs = NULL;
            int64_t ng = 0;
            if (at == GWR_ATTR_GRAPH && !gwr_layer_get_graph(l, an, &g) && g && gwr_q_any_layer(g, pred)) return 1;
            if (at == GWR_ATTR_GRAPHS && !gwr_layer_get_graphs(l, an, &gs, &ng))
                for (int64_t k = 0; k < ng; k++)
                    if (gs[k] && gwr_q_any_layer(gs[k], pred)) return 1;
        }
    }
    return 0;
}

static int quantized_op(const gwr_layer *l) {
    for (const char *const *q = quantized_ops; *q; q++)
        if (!strcmp(gwr_layer_op(l), *q)) return 1;
    return 0;
}

int gwr_q_is_quantized(const gwr_network *net) { return gwr_q_any_layer(net, quantized_op); }
