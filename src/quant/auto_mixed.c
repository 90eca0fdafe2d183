/* auto_mixed.c - gwr precision --auto TOL: the fewest layers kept in
 * float32 that hold every output within TOL of the float32 network
 * (max |a - b| <= TOL * max(1, max |a|), on every calibration sample).
 *
 * Everything runs on gwr's executor, whose half tensors are rounded at
 * each layer's output (computed in float32 inside): that is what the
 * tolerance sees.
 *  1. The float32 outputs are computed once per sample (the reference).
 *  2. Everything converted: within TOL, done.
 *  3. Sensitivity, from two runs per sample: the float32 network and the
 *     all-half one, every float tensor collected. A layer's score is how
 *     much its output's error exceeds its inputs' (the error it adds).
 *  4. The k layers of the highest scores are kept, k the smallest that
 *     holds TOL (bisection: log2(candidates) runs).
 *  5. Each kept layer, least score first, is released when the outputs
 *     stay within TOL without it: what remains is each needed.
 * A run is one session over all samples; sessions are planned raw (as
 * written), so each candidate costs a clone, a conversion and a plan. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec_internal.h"
#include "quant/precision_internal.h"

typedef struct amp {
    gwr_network *net;
    const gwr_precision_options *o;
    const gwr_calib *calib; /* float32 inputs */
    gwr_calib *hcalib;      /* the same in the converted network's input types */
    int64_t n;              /* layers of net */
    int nout;
    gwr_value **ref;        /* [sample * nout + k] */
    /* a run's worst output error, in units of tol */
    double worst;
    int64_t runs;
} amp;

/* max |a - b| / max(1, max |a|) of two values of the same shape
 * (a the float32 reference); infinity when they do not match. */
static double val_err(gwr_value *a, gwr_value *b) {
    int64_t n = gwr_value_numel(a);
    if (!b || gwr_value_numel(b) != n) return INFINITY;
    gwr_dtype da = gwr_value_dtype(a), db = gwr_value_dtype(b);
    double d = 0, m = 0;
    if (da == GWR_FLOAT32 && db == GWR_FLOAT32) {
        const float *x = gwr_value_cdata(a), *y = gwr_value_cdata(b);
        for (int64_t i = 0; i < n; i++) {
            double e = fabs((double)x[i] - y[i]);
            if (!(e <= d)) d = e;
            if (fabs(x[i]) > m) m = fabs(x[i]);
        }
    } else {
        for (int64_t i = 0; i < n; i++) {
            double x = gwr_value_get_f64(a, i), y = gwr_value_get_f64(b, i), e = fabs(x - y);
            if (x == y) e = 0; /* infinities that agree */
            if (!(e <= d)) d = e;
            if (fabs(x) > m) m = fabs(x);
        }
    }
    return d / (m > 1 ? m : 1);
}

static gwr_status keep_ref(void *ctx, int sample, int idx, gwr_value *v) {
    amp *a = ctx;
    a->ref[(int64_t)sample * a->nout + idx] = gwr_value_retain(v);
    return GWR_OK;
}

/* The rounding of x to the target type and back. */
static float round_half(float x, gwr_dtype to) {
    return to == GWR_FLOAT16 ? gwr_f16_to_f32(gwr_f32_to_f16(x)) : gwr_bf16_to_f32(gwr_f32_to_bf16(x));
}

/* The output the tolerance judges: float32 outputs become half unless
 * --keep-io, so the candidate's are rounded as the conversion would. */
static gwr_status cmp_out(void *ctx, int sample, int idx, gwr_value *v) {
    amp *a = ctx;
    if (!a->o->keep_io && gwr_value_dtype(v) == GWR_FLOAT32) {
        float *p = gwr_value_data(v);
        for (int64_t i = 0; i < gwr_value_numel(v); i++) p[i] = round_half(p[i], a->o->to);
    }
    double e = val_err(a->ref[(int64_t)sample * a->nout + idx], v) / a->o->auto_tol;
    if (!(e <= a->worst)) a->worst = e;
    /* a failing candidate stops at its first failing sample */
    return e <= 1 ? GWR_OK : GWR_ERR_NOT_CONVERGED;
}

/* A Cast of t to dtype `to` (a new layer of net). */
static gwr_tensor *cast(gwr_network *net, gwr_tensor *t, gwr_dtype to, gwr_layer **layer) {
    gwr_layer *l = gwr_network_add_layer(net, "Cast", "", NULL, 1, &t, 1, NULL);
    if (!l || gwr_layer_set_int(l, "to", to)) return NULL;
    gwr_tensor *o = gwr_layer_output(l, 0);
    if (gwr_tensor_set_type(o, to, gwr_tensor_rank(t), gwr_tensor_dims(t))) return NULL;
    if (layer) *layer = l;
    return o;
}

typedef struct rd_read {
    gwr_layer *l;
    int slot;
    gwr_tensor *t;
} rd_read;

/* The network as the conversion with mask computes it, in float32: each
 * converted layer's float32 outputs rounded to half (a Cast pair), the
 * float32 values converted layers read from float32 producers rounded
 * (constants by a rounded copy). gwr's executor computes half layers in
 * float32 and rounds their outputs, so this gives the converted
 * network's values, on float32 kernels. The inputs (unless --keep-io)
 * are rounded in the samples (a->hcalib). NULL: message on a->net. */
static gwr_network *simulated(amp *a, const uint8_t *mask) {
    gwr_network *c = gwr_network_clone(a->net);
    if (!c) {
        gwr_ir_error(a->net, GWR_ERR_NOMEM, "precision --auto: cloning: %s", gwr_last_errmsg());
        return NULL;
    }
    gwr_dtype to = a->o->to;
    uint8_t *conv = gwr_calloc((size_t)a->n + 1, 1);
    gwr_tensor **outs = NULL;
    rd_read *reads = NULL;
    int64_t nouts = 0, capouts = 0, nreads = 0, capreads = 0;
    int bad = !conv;
    for (int64_t i = 0; !bad && i < a->n; i++) {
        gwr_layer *l = gwr_network_layer(c, i);
        char rb[160];
        conv[i] = !gwr_layer_is_removed(l) && !(mask && mask[i]) && !gwr_q_prec_kept_reason(l, a->o, rb, sizeof rb);
    }
    for (int64_t i = 0; !bad && i < a->n; i++) {
        gwr_layer *l = gwr_network_layer(c, i);
        if (!conv[i]) continue;
        gwr_op_id op = gwr_layer_op_id(l);
        if (op != GWR_OP_Constant)
            for (int k = 0; k < gwr_layer_num_outputs(l) && !bad; k++) {
                gwr_tensor *t = gwr_layer_output(l, k);
                if (gwr_tensor_dtype(t) != GWR_FLOAT32 || !gwr_q_prec_half_output(op, k)) continue;
                bad = gwr_grow((void **)&outs, sizeof *outs, &capouts, nouts + 1);
                if (!bad) outs[nouts++] = t;
            }
        for (int k = 0; k < gwr_layer_num_inputs(l) && !bad; k++) {
            gwr_tensor *t = gwr_layer_input(l, k);
            if (!t || gwr_tensor_dtype(t) != GWR_FLOAT32 || !gwr_q_prec_half_slot(op, k)) continue;
            gwr_layer *p = gwr_tensor_parent(t);
            int rounded = p ? (gwr_layer_index(p) < a->n && conv[gwr_layer_index(p)] &&
                               gwr_layer_op_id(p) != GWR_OP_Constant &&
                               gwr_q_prec_half_output(gwr_layer_op_id(p), gwr_tensor_parent_output_index(t)))
                            : (gwr_tensor_network(t) == c && !a->o->keep_io && !gwr_tensor_default(t));
            if (rounded) continue;
            bad = gwr_grow((void **)&reads, sizeof *reads, &capreads, nreads + 1);
            if (!bad) reads[nreads++] = (rd_read){l, k, t};
        }
    }
    for (int64_t j = 0; !bad && j < nouts; j++) {
        gwr_layer *c1 = NULL;
        gwr_tensor *h = cast(c, outs[j], to, &c1), *r = h ? cast(c, h, GWR_FLOAT32, NULL) : NULL;
        bad = !r || gwr_tensor_replace_all_uses_except(outs[j], r, c1);
    }
    /* one rounded form per tensor read */
    gwr_tensor **memo_from = gwr_calloc((size_t)nreads + 1, sizeof *memo_from);
    gwr_tensor **memo_to = gwr_calloc((size_t)nreads + 1, sizeof *memo_to);
    int64_t nmemo = 0;
    bad |= !memo_from || !memo_to;
    for (int64_t j = 0; !bad && j < nreads; j++) {
        gwr_tensor *t = reads[j].t, *r = NULL;
        for (int64_t q = 0; !r && q < nmemo; q++)
            if (memo_from[q] == t) r = memo_to[q];
        if (!r) {
            gwr_layer *p = gwr_tensor_parent(t);
            const gwr_weights *w = NULL;
            if (p && gwr_layer_op_id(p) == GWR_OP_Constant && !gwr_layer_get_tensor(p, "value", &w) &&
                w->dtype == GWR_FLOAT32) {
                gwr_buffer *b = gwr_buffer_new_copy(w->data, w->nbytes);
                if (!b) {
                    bad = 1;
                    break;
                }
                float *f = (float *)gwr_buffer_data(b);
                for (size_t e = 0; e < w->nbytes / 4; e++) f[e] = round_half(f[e], to);
                gwr_weights rw = *w;
                rw.data = f, rw.buffer = b, rw.name = NULL;
                r = gwr_network_add_constant(c, NULL, &rw);
                gwr_buffer_release(b);
            } else {
                gwr_tensor *h = cast(c, t, to, NULL);
                r = h ? cast(c, h, GWR_FLOAT32, NULL) : NULL;
            }
            if (!r) {
                bad = 1;
                break;
            }
            memo_from[nmemo] = t, memo_to[nmemo++] = r;
        }
        bad = gwr_layer_set_input(reads[j].l, reads[j].slot, r) != GWR_OK;
    }
    if (!bad) bad = gwr_network_toposort(c) != GWR_OK;
    if (bad) gwr_ir_error(a->net, GWR_ERR_STATE, "precision --auto: simulating the conversion: %s", gwr_network_errmsg(c));
    gwr_free(memo_from);
    gwr_free(memo_to);
    gwr_free(conv);
    gwr_free(outs);
    gwr_free(reads);
    if (bad) gwr_network_free(c), c = NULL;
    return c;
}

/* Runs the conversion with mask (simulated) on every sample: *worst the
 * worst output error in units of tol (<= 1: within; a failing candidate
 * stops at its first failing sample, so *worst is then a lower bound). */
static gwr_status eval(amp *a, const uint8_t *mask, double *worst) {
    gwr_network *c = simulated(a, mask);
    if (!c) return GWR_ERR_STATE;
    const char **names = gwr_calloc((size_t)a->nout + 1, sizeof *names);
    gwr_status s = names ? GWR_OK : gwr_ir_error(a->net, GWR_ERR_NOMEM, "precision --auto: out of memory");
    for (int k = 0; names && k < a->nout; k++) names[k] = gwr_tensor_name(gwr_network_output(c, k));
    a->worst = 0;
    if (!s) {
        s = gwr_q_collect(c, a->hcalib, a->nout, names, cmp_out, a, a->o->threads);
        if (s == GWR_ERR_NOT_CONVERGED) s = GWR_OK;
        else if (s) s = gwr_ir_error(a->net, GWR_ERR_STATE, "precision --auto: running: %s", gwr_network_errmsg(c));
    }
    a->runs++;
    *worst = a->worst;
    gwr_free(names);
    gwr_network_free(c);
    return s;
}

/* The calibration samples with the inputs rounded to half as the
 * converted network takes them (unless --keep-io). */
static gwr_status half_calib(amp *a) {
    gwr_status s = GWR_OK;
    if (!(a->hcalib = gwr_calib_new())) return gwr_ir_error(a->net, GWR_ERR_NOMEM, "precision --auto: out of memory");
    for (int i = 0; !s && i < a->calib->n; i++) {
        const struct gwr_calib_sample *smp = &a->calib->s[i];
        gwr_value **v = gwr_calloc((size_t)smp->n + 1, sizeof *v);
        if (!v) {
            s = gwr_ir_error(a->net, GWR_ERR_NOMEM, "precision --auto: out of memory");
            break;
        }
        for (int k = 0; k < smp->n && !s; k++) {
            gwr_value *x = smp->values[k];
            if (gwr_value_dtype(x) != GWR_FLOAT32 || a->o->keep_io) {
                v[k] = gwr_value_retain(x);
                continue;
            }
            if (!(v[k] = gwr_value_new(GWR_FLOAT32, gwr_value_rank(x), gwr_value_dims(x)))) {
                s = gwr_ir_error(a->net, GWR_ERR_NOMEM, "precision --auto: out of memory");
                break;
            }
            const float *src = gwr_value_cdata(x);
            float *dst = gwr_value_data(v[k]);
            for (int64_t e = 0; e < gwr_value_numel(x); e++) dst[e] = round_half(src[e], a->o->to);
        }
        if (!s && gwr_calib_add(a->hcalib, smp->n, (const char *const *)smp->names, v))
            s = gwr_ir_error(a->net, GWR_ERR_NOMEM, "precision --auto: %s", gwr_last_errmsg());
        for (int k = 0; k < smp->n; k++) gwr_value_release(v[k]);
        gwr_free(v);
    }
    return s;
}

/* ---- sensitivity ---- */

typedef struct sens {
    int n;
    const char **names;
    gwr_value **val; /* the float32 run's values of one sample */
    double *err;     /* worst over samples */
} sens;

static gwr_status sens_keep(void *ctx, int sample, int idx, gwr_value *v) {
    (void)sample;
    sens *x = ctx;
    x->val[idx] = gwr_value_retain(v);
    return GWR_OK;
}

static gwr_status sens_cmp(void *ctx, int sample, int idx, gwr_value *v) {
    (void)sample;
    sens *x = ctx;
    double e = val_err(x->val[idx], v);
    if (!(e <= x->err[idx])) x->err[idx] = e;
    return GWR_OK;
}

typedef struct cand {
    int64_t layer;
    double score;
} cand;

static int by_score(const void *p, const void *q) {
    const cand *a = p, *b = q;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return a->layer < b->layer ? -1 : a->layer > b->layer;
}

/* The index of name among x's, or -1. */
static int sens_find(const sens *x, const char *name) {
    for (int i = 0; i < x->n; i++)
        if (!strcmp(x->names[i], name)) return i;
    return -1;
}

/* Scores every candidate: the error its output adds to its inputs'. */
static gwr_status score(amp *a, cand *cs, int64_t nc) {
    gwr_network *c = simulated(a, NULL);
    if (!c) return GWR_ERR_STATE;
    sens x = {0};
    gwr_status s = GWR_OK;
    x.names = gwr_calloc((size_t)a->n * 4 + 1, sizeof *x.names);
    if (!x.names) s = gwr_ir_error(a->net, GWR_ERR_NOMEM, "precision --auto: out of memory");
    /* every float32 output of a live non-Constant layer that the converted
     * network still has */
    for (int64_t i = 0; !s && i < a->n; i++) {
        gwr_layer *l = gwr_network_layer(a->net, i);
        if (gwr_layer_is_removed(l) || gwr_layer_op_id(l) == GWR_OP_Constant) continue;
        for (int k = 0; k < gwr_layer_num_outputs(l) && x.n < a->n * 4; k++) {
            gwr_tensor *t = gwr_layer_output(l, k);
            if (gwr_tensor_dtype(t) == GWR_FLOAT32 && gwr_network_find_tensor(c, gwr_tensor_name(t)) &&
                gwr_tensor_output_index(t) < 0)
                x.names[x.n++] = gwr_tensor_name(t);
        }
    }
    x.val = gwr_calloc((size_t)x.n + 1, sizeof *x.val);
    x.err = gwr_calloc((size_t)x.n + 1, sizeof *x.err);
    if (!s && (!x.val || !x.err)) s = gwr_ir_error(a->net, GWR_ERR_NOMEM, "precision --auto: out of memory");
    for (int i = 0; !s && i < a->calib->n; i++) {
        gwr_calib one = {.n = 1, .cap = 1, .s = &a->calib->s[i]};
        gwr_calib hone = {.n = 1, .cap = 1, .s = &a->hcalib->s[i]};
        s = gwr_q_collect(a->net, &one, x.n, x.names, sens_keep, &x, a->o->threads);
        if (!s && gwr_q_collect(c, &hone, x.n, x.names, sens_cmp, &x, a->o->threads))
            s = gwr_ir_error(a->net, GWR_ERR_STATE, "precision --auto: %s", gwr_network_errmsg(c));
        for (int k = 0; k < x.n; k++) gwr_value_release(x.val[k]), x.val[k] = NULL;
    }
    a->runs += 2 * a->calib->n;
    for (int64_t j = 0; !s && j < nc; j++) {
        gwr_layer *l = gwr_network_layer(a->net, cs[j].layer);
        double out = 0, in = 0;
        for (int k = 0; k < gwr_layer_num_outputs(l); k++) {
            gwr_tensor *t = gwr_layer_output(l, k);
            int q = sens_find(&x, gwr_tensor_name(t));
            if (q >= 0 && x.err[q] > out) out = x.err[q];
            if (gwr_tensor_output_index(t) >= 0) out = INFINITY; /* scored last below */
        }
        for (int k = 0; k < gwr_layer_num_inputs(l); k++) {
            gwr_tensor *t = gwr_layer_input(l, k);
            int q = t ? sens_find(&x, gwr_tensor_name(t)) : -1;
            if (q >= 0 && x.err[q] > in) in = x.err[q];
        }
        /* a layer writing a network output: its output error is what the
         * tolerance judges; scored by its inputs' error alone */
        cs[j].score = isinf(out) ? 0 : out - in;
    }
    gwr_free(x.names);
    gwr_free(x.val);
    gwr_free(x.err);
    gwr_network_free(c);
    return s;
}

/* Releases from float32 what of cs[lo, hi) (kept in mask) the outputs
 * do not need: all at once when they hold, else each half (the layers of
 * the least score first), down to single layers, which stay with why. */
static gwr_status release(amp *a, const cand *cs, int64_t lo, int64_t hi, uint8_t *mask, char **mask_why) {
    if (hi <= lo) return GWR_OK;
    for (int64_t j = lo; j < hi; j++) mask[cs[j].layer] = 0;
    double w = 0;
    gwr_status s = eval(a, mask, &w);
    if (s || w <= 1) return s;
    for (int64_t j = lo; j < hi; j++) mask[cs[j].layer] = 1;
    if (hi - lo == 1) {
        char buf[200];
        snprintf(buf, sizeof buf, "auto (in %s an output is %.3g x the tolerance off; its error added %.3g)",
                 a->o->to == GWR_FLOAT16 ? "float16" : "bfloat16", w, cs[lo].score);
        if (!(mask_why[cs[lo].layer] = gwr_strdup(buf)))
            return gwr_ir_error(a->net, GWR_ERR_NOMEM, "precision --auto: out of memory");
        return GWR_OK;
    }
    int64_t mid = lo + (hi - lo) / 2;
    /* the higher half (least scores: cs is sorted by score, worst first) */
    if ((s = release(a, cs, mid, hi, mask, mask_why))) return s;
    return release(a, cs, lo, mid, mask, mask_why);
}

gwr_status gwr_q_prec_auto(gwr_network *net, const gwr_precision_options *o, uint8_t *mask, char **mask_why) {
    amp a = {.net = net, .o = o, .n = gwr_network_num_layers(net), .nout = gwr_network_num_outputs(net)};
    gwr_calib *owned = NULL;
    cand *cs = NULL;
    gwr_status s = GWR_OK;
    if (!(a.calib = gwr_q_calib_or_random(net, o->calib, 8, &owned))) return GWR_ERR_INVALID_ARG;
    a.ref = gwr_calloc((size_t)a.calib->n * (size_t)a.nout + 1, sizeof *a.ref);
    const char **names = gwr_calloc((size_t)a.nout + 1, sizeof *names);
    cs = gwr_calloc((size_t)a.n + 1, sizeof *cs);
    if (!a.ref || !names || !cs) s = gwr_ir_error(net, GWR_ERR_NOMEM, "precision --auto: out of memory");
    for (int k = 0; !s && k < a.nout; k++) names[k] = gwr_tensor_name(gwr_network_output(net, k));
    if (!s) s = gwr_q_collect(net, a.calib, a.nout, names, keep_ref, &a, o->threads);
    if (!s) s = half_calib(&a);
    int64_t nc = 0;
    char rb[160];
    for (int64_t i = 0; !s && i < a.n; i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (!gwr_layer_is_removed(l) && gwr_layer_op_id(l) != GWR_OP_Constant && gwr_q_prec_touches_float(l) &&
            !gwr_q_prec_kept_reason(l, o, rb, sizeof rb))
            cs[nc++].layer = i;
    }
    double w = 0;
    if (!s) s = eval(&a, mask, &w);
    if (!s && w > 1 && nc) {
        /* does keeping every candidate hold? (inputs rounded to half may not) */
        for (int64_t j = 0; j < nc; j++) mask[cs[j].layer] = 1;
        double wall = 0;
        if (!(s = eval(&a, mask, &wall)) && wall > 1)
            s = gwr_ir_error(net, GWR_ERR_NOT_CONVERGED,
                             "precision --auto: even with every layer in float32 an output is %.3g x the tolerance off "
                             "(the inputs and outputs in half: try --keep-io or a larger tolerance)",
                             wall);
        for (int64_t j = 0; j < nc; j++) mask[cs[j].layer] = 0;
        if (!s) s = score(&a, cs, nc);
        if (!s) qsort(cs, (size_t)nc, sizeof *cs, by_score);
        /* the smallest k of the best-scored that holds */
        int64_t lo = 0, hi = nc;
        while (!s && hi - lo > 1) {
            int64_t mid = lo + (hi - lo) / 2;
            memset(mask, 0, (size_t)a.n);
            for (int64_t j = 0; j < mid; j++) mask[cs[j].layer] = 1;
            double wm = 0;
            if (!(s = eval(&a, mask, &wm))) {
                if (wm <= 1) hi = mid;
                else lo = mid;
            }
        }
        memset(mask, 0, (size_t)a.n);
        for (int64_t j = 0; j < hi; j++) mask[cs[j].layer] = 1;
        /* release what is not needed, least score first */
        if (!s) s = release(&a, cs, 0, hi, mask, mask_why);
    }
    if (getenv("GWR_PRECISION_TRACE"))
        fprintf(stderr, "precision --auto: %lld candidates, %lld runs\n", (long long)nc, (long long)a.runs);
    for (int64_t i = 0; a.ref && i < (int64_t)a.calib->n * a.nout; i++) gwr_value_release(a.ref[i]);
    gwr_free(a.ref);
    gwr_free(names);
    gwr_free(cs);
    gwr_calib_free(a.hcalib);
    gwr_calib_free(owned);
    return s;
}
