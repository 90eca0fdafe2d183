/* layer_error.c - the per-layer error report (gwr_quantize --report).
 *
 * For each layer the mode quantized (a report entry whose `what` does not
 * say "kept"), its first output in the float32 network and the tensor of
 * the same name in the quantized one (the quantizers keep the names of the
 * layers' outputs on the dequantized values) are compared on each
 * calibration sample: relative RMS error and cosine similarity
 * (gwr_q_error), averaged over the samples. The entry gets the figures;
 * gwr_quant_report_write sorts worst first. Sample by sample: memory is one
 * sample's values of the measured layers. Inside a QOperator region, where
 * the float output is gone, its quantized value is dequantized for the
 * measure (in a copy; a fused Relu's output stands for the layer's). */
#include <stdio.h>
#include <string.h>

#include "quant/quant_internal.h"

typedef struct lctx {
    gwr_value **ref;  /* the float32 network's values of the sample */
    double *rel, *cos;
    int *count;
} lctx;

static gwr_status keep_ref(void *ctx, int sample, int idx, gwr_value *v) {
    lctx *c = ctx;
    (void)sample;
    c->ref[idx] = gwr_value_retain(v);
    return GWR_OK;
}

static gwr_status compare(void *ctx, int sample, int idx, gwr_value *v) {
    lctx *c = ctx;
    (void)sample;
    gwr_value *r = c->ref[idx];
    if (!r || gwr_value_dtype(r) != GWR_FLOAT32 || gwr_value_dtype(v) != GWR_FLOAT32 ||
        gwr_value_numel(r) != gwr_value_numel(v))
        return GWR_OK; /* not comparable: left unmeasured */
    double rel, cos;
    gwr_q_error(gwr_value_cdata(v), gwr_value_cdata(r), gwr_value_numel(v), &rel, &cos);
    c->rel[idx] += rel, c->cos[idx] += cos, c->count[idx]++;
    return GWR_OK;
}

/* Inside a QOperator region the float output of layer l (of fp32) is
 * gone: its quantized value "<name>_quantized" (the output's, or that of
 * the Relu fused into l) made by a QLinearConv / QLinearMatMul is
 * dequantized with that layer's y_scale and y_zero_point into a tensor of
 * the float name, in a copy of quant (*q, made once, *own to free). The
 * name to read, or NULL (unmeasured; *rc set on out of memory). */
static const char *readable(gwr_layer *l, gwr_network *quant, gwr_network **q, gwr_network **own,
                            gwr_status *rc) {
    gwr_tensor *y = gwr_layer_output(l, 0);
    char qn[512];
    for (int pass = 0; pass < 2; pass++) {
        if (pass) { /* the Relu fused into l: its output */
            if (gwr_tensor_num_live_users(y) != 1) return NULL;
            gwr_layer *r = NULL;
            for (int64_t u = 0; !r && u < gwr_tensor_num_users(y); u++) {
                r = gwr_tensor_user(y, u, NULL);
                if (r && gwr_layer_is_removed(r)) r = NULL;
            }
            if (!r || strcmp(gwr_layer_op(r), "Relu")) return NULL;
            y = gwr_layer_output(r, 0);
        }
        snprintf(qn, sizeof qn, "%.480s_quantized", gwr_tensor_name(y));
        gwr_tensor *t = gwr_network_find_tensor(quant, qn);
        gwr_layer *p = t ? gwr_tensor_parent(t) : NULL;
        if (!p || (strcmp(gwr_layer_op(p), "QLinearConv") && strcmp(gwr_layer_op(p), "QLinearMatMul"))) continue;
        if (!*own && !(*q = *own = gwr_network_clone(quant))) {
            *q = quant;
            *rc = gwr_ir_error(quant, GWR_ERR_NOMEM, "error report: out of memory");
            return NULL;
        }
        if (gwr_network_find_tensor(*q, gwr_tensor_name(y))) return gwr_tensor_name(y); /* made already */
        gwr_layer *pc = gwr_tensor_parent(gwr_network_find_tensor(*q, qn));
        gwr_tensor *in[3] = {gwr_layer_output(pc, 0), gwr_layer_input(pc, 6), gwr_layer_input(pc, 7)}, *out = NULL;
        if (!gwr_op_call(*q, "", "DequantizeLinear", 3, in, NULL, 1, &out) || gwr_tensor_set_name(out, gwr_tensor_name(y)))
            return NULL;
        return gwr_tensor_name(y);
    }
    return NULL;
}

gwr_status gwr_q_layer_errors(gwr_network *fp32, gwr_network *quant, const gwr_quantize_options *o,
                              gwr_quant_report *rep) {
    if (!rep || !rep->n) return GWR_OK;
    int n = 0, cap = rep->n;
    const char **names = gwr_calloc((size_t)cap + 1, sizeof *names);
    int *entry = gwr_calloc((size_t)cap + 1, sizeof *entry), *count = gwr_calloc((size_t)cap + 1, sizeof *count);
    double *rel = gwr_calloc((size_t)cap + 1, sizeof *rel), *cos = gwr_calloc((size_t)cap + 1, sizeof *cos);
    gwr_value **ref = gwr_calloc((size_t)cap + 1, sizeof *ref);
    gwr_status rc = GWR_OK;
    if (!names || !entry || !count || !rel || !cos || !ref)
        rc = gwr_ir_error(quant, GWR_ERR_NOMEM, "error report: out of memory");
    gwr_network *q = quant, *own = NULL; /* q: quant, or a copy with values dequantized to be read */
    for (int i = 0; !rc && i < rep->n; i++) {
        const gwr_quant_entry *e = &rep->e[i];
        if (strstr(e->what, "kept") == e->what) continue;
        gwr_layer *l = gwr_network_find_layer(fp32, e->layer);
        if (!l || gwr_layer_num_outputs(l) < 1 || !gwr_layer_output(l, 0)) continue;
        const char *tn = gwr_tensor_name(gwr_layer_output(l, 0));
        gwr_tensor *tq = gwr_network_find_tensor(q, tn);
        if (!tq && !(tn = readable(l, quant, &q, &own, &rc))) continue;
        tq = gwr_network_find_tensor(q, tn);
        if (!tq || (gwr_tensor_dtype(tq) != GWR_FLOAT32 && gwr_tensor_dtype(tq) != GWR_UNDEFINED)) continue;
        names[n] = tn, entry[n] = i, n++;
    }
    lctx c = {ref, rel, cos, count};
    const gwr_calib *all = o->calib;
    for (int s = 0; !rc && n && all && s < all->n; s++) {
        /* one sample at a time: both networks' values of it, then dropped */
        gwr_calib one = {.n = 1, .cap = 1, .s = &all->s[s]};
        rc = gwr_q_collect(fp32, &one, n, names, keep_ref, &c, o->threads);
        if (rc) rc = gwr_ir_error(quant, rc, "error report (float32 network): %s", gwr_network_errmsg(fp32));
        if (!rc && (rc = gwr_q_collect(q, &one, n, names, compare, &c, o->threads)) && q != quant)
            rc = gwr_ir_error(quant, rc, "error report: %s", gwr_network_errmsg(q));
        for (int k = 0; k < n; k++) gwr_value_release(ref[k]), ref[k] = NULL;
    }
    for (int k = 0; !rc && k < n; k++) {
        if (!count[k]) continue;
        gwr_quant_entry *e = &rep->e[entry[k]];
        e->rel_error = rel[k] / count[k], e->cosine = cos[k] / count[k];
        rep->measured = 1;
    }
    gwr_network_free(own);
    gwr_free(names), gwr_free(entry), gwr_free(count), gwr_free(rel), gwr_free(cos), gwr_free(ref);
    return rc;
}
