/* auto_mixed.c - gwr precision --auto TOL: few layers kept in float32
 * (the fewest the search finds) that hold every output within TOL of the
 * float32 network (max |a - b| <= TOL * max(1, max |a|), on every
 * calibration sample).
 *
 * Everything runs on gwr's executor, whose half tensors are rounded at
 * each layer's output (computed in float32 inside): that is what the
 * tolerance sees. It runs a switched float32 simulation of the conversion
 * (sw_build), planned once; a candidate set is a choice of switches.
 *  1. The float32 outputs, per sample (every switch off: the reference).
 *  2. Everything converted: within TOL, done.
 *  3. Every candidate kept: beyond TOL is an error (the half interface).
 *  4. Each layer's own contribution: the worst output error with that
 *     layer alone converted, on the sample where everything converted
 *     failed (one run each).
 *  5. The k layers of the largest contributions are kept, k the smallest
 *     that holds TOL (bisection: log2(candidates) evaluations).
 *  6. Release what is not needed: all of the kept at once, else each
 *     half, down to single layers (least contribution first); what
 *     remains is each needed (its release breaks TOL).
 * The hardest sample runs first and a failing candidate stops there.
 * GWR_PRECISION_TRACE=1 prints the candidates, runs and times. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec_api.h"
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
    struct sw_net *sw;  /* the switched simulation */
    gwr_value *on, *off; /* the switches' values */
    double worst;
    int no_stop; /* eval measures the worst error of every output, not stopping at the first failure */
    int64_t runs;
    int hard; /* the sample that failed last */
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

/* The rounding of x to the target type and back. */
static float round_half(float x, gwr_dtype to) {
    return to == GWR_FLOAT16 ? gwr_f16_to_f32(gwr_f32_to_f16(x)) : gwr_bf16_to_f32(gwr_f32_to_bf16(x));
}

/* Output idx of sample against the reference, in units of tol. */
static gwr_status cmp_out(amp *a, int sample, int idx, gwr_value *v) {
    double e = val_err(a->ref[(int64_t)sample * a->nout + idx], v) / a->o->auto_tol;
    if (!(e <= a->worst)) a->worst = e;
    /* a failing candidate stops at its first failing sample */
    return e <= 1 || a->no_stop ? GWR_OK : GWR_ERR_NOT_CONVERGED;
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

/* The switched simulation: net in float32 where each candidate layer L
 * has a switch, a graph input "__gwr_amp_<index>" (bool scalar): on, L
 * computes as converted: it reads its float32 data inputs rounded to half
 * and its float32 outputs are rounded to half (Cast pairs; Where on the
 * switch); off, it computes in float32 as written. gwr's executor
 * computes half layers in float32 and rounds their outputs, so with the
 * switches of mask this gives the converted network's values, on float32
 * kernels, and one session serves every candidate: a candidate costs its
 * runs, no conversion nor planning. The network inputs (unless
 * --keep-io) are rounded in the samples (a->hcalib); outputs in cmp_out. */
typedef struct sw_net {
    gwr_network *c;
    gwr_session *sess;
    char **name;        /* [layer]: its switch input, or NULL */
    int64_t *out_layer; /* [output]: the layer writing it, or -1 */
} sw_net;

/* round(t): a Cast pair, or a rounded copy of a constant; memoized. */
typedef struct rmemo {
    gwr_tensor **from, **to;
    int64_t n, cap;
} rmemo;

static int memo_put(rmemo *m, gwr_tensor *t, gwr_tensor *r) {
    int64_t cap = m->cap;
    if (gwr_grow((void **)&m->from, sizeof *m->from, &cap, m->n + 1) ||
        gwr_grow((void **)&m->to, sizeof *m->to, &m->cap, m->n + 1))
        return -1;
    m->from[m->n] = t, m->to[m->n++] = r;
    return 0;
}

static gwr_tensor *rounded(gwr_network *c, gwr_dtype to, gwr_tensor *t, rmemo *m) {
    for (int64_t q = 0; q < m->n; q++)
        if (m->from[q] == t) return m->to[q];
    gwr_layer *p = gwr_tensor_parent(t);
    const gwr_weights *w = NULL;
    gwr_tensor *r = NULL;
    if (p && gwr_layer_op_id(p) == GWR_OP_Constant && !gwr_layer_get_tensor(p, "value", &w) && w->dtype == GWR_FLOAT32) {
        gwr_buffer *b = gwr_buffer_new_copy(w->data, w->nbytes);
        if (!b) return NULL;
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
    return r && !memo_put(m, t, r) ? r : NULL;
}

static gwr_tensor *where(gwr_network *c, gwr_tensor *sw, gwr_tensor *on, gwr_tensor *off) {
    gwr_layer *l = gwr_network_add_layer(c, "Where", "", NULL, 3, (gwr_tensor *[]){sw, on, off}, 1, NULL);
    if (!l) return NULL;
    gwr_tensor *o = gwr_layer_output(l, 0);
    return gwr_tensor_set_type(o, GWR_FLOAT32, gwr_tensor_rank(off), gwr_tensor_dims(off)) ? NULL : o;
}

typedef struct use {
    gwr_layer *l;
    int slot;
} use;

static void sw_free(sw_net *w, int64_t n) {
    for (int64_t i = 0; w->name && i < n; i++) gwr_free(w->name[i]);
    gwr_free(w->name);
    gwr_free(w->out_layer);
    gwr_session_free(w->sess);
    gwr_network_free(w->c);
    memset(w, 0, sizeof *w);
}

static gwr_status sw_build(amp *a, sw_net *w) {
    gwr_dtype to = a->o->to;
    gwr_status s = GWR_OK;
    rmemo m = {0};
    gwr_layer **order = NULL;
    use *uses = NULL;
    int64_t nuses = 0, capuses = 0;
    memset(w, 0, sizeof *w);
    w->c = gwr_network_clone(a->net);
    w->name = gwr_calloc((size_t)a->n + 1, sizeof *w->name);
    w->out_layer = gwr_calloc((size_t)a->nout + 1, sizeof *w->out_layer);
    if (!w->c || !w->name || !w->out_layer) {
        s = gwr_ir_error(a->net, GWR_ERR_NOMEM, "precision --auto: out of memory");
        goto done;
    }
    gwr_network *c = w->c;
    for (int k = 0; k < a->nout; k++) {
        gwr_layer *p = gwr_tensor_parent(gwr_network_output(c, k));
        w->out_layer[k] = p ? gwr_layer_index(p) : -1;
    }
    /* in topological order, so that a reader's rounding of a candidate's
     * output reuses that output's rounding (round(Where(sw, round(t), t))
     * is round(t)) */
    order = gwr_malloc(((size_t)a->n + 1) * sizeof *order);
    if (!order || gwr_network_topo_order(c, order)) {
        s = gwr_ir_error(a->net, GWR_ERR_STATE, "precision --auto: ordering: %s", gwr_network_errmsg(c));
        goto done;
    }
    for (int64_t oi = 0; !s && oi < a->n; oi++) {
        gwr_layer *l = order[oi];
        int64_t i = gwr_layer_index(l);
        char rb[160];
        if (gwr_layer_is_removed(l) || gwr_layer_op_id(l) == GWR_OP_Constant || !gwr_q_prec_touches_float(l) ||
            gwr_q_prec_kept_reason(l, a->o, rb, sizeof rb))
            continue;
        char nm[48];
        snprintf(nm, sizeof nm, "__gwr_amp_%lld", (long long)i);
        gwr_tensor *sw = gwr_network_add_input(c, nm, GWR_BOOL, 0, NULL);
        if (!sw || !(w->name[i] = gwr_strdup(nm))) {
            s = gwr_ir_error(a->net, GWR_ERR_NOMEM, "precision --auto: %s", gwr_network_errmsg(c));
            break;
        }
        gwr_op_id op = gwr_layer_op_id(l);
        /* its data inputs, rounded when on */
        for (int k = 0; !s && k < gwr_layer_num_inputs(l); k++) {
            gwr_tensor *t = gwr_layer_input(l, k);
            if (!t || gwr_tensor_dtype(t) != GWR_FLOAT32 || !gwr_q_prec_half_slot(op, k)) continue;
            gwr_tensor *r = rounded(c, to, t, &m), *x = r ? where(c, sw, r, t) : NULL;
            if (!x || gwr_layer_set_input(l, k, x)) s = gwr_ir_error(a->net, GWR_ERR_STATE, "precision --auto: %s", gwr_network_errmsg(c));
        }
        /* its outputs, rounded when on, for every reader */
        for (int k = 0; !s && k < gwr_layer_num_outputs(l); k++) {
            gwr_tensor *t = gwr_layer_output(l, k);
            if (gwr_tensor_dtype(t) != GWR_FLOAT32 || !gwr_q_prec_half_output(op, k)) continue;
            nuses = 0;
            for (int64_t u = 0; u < gwr_tensor_num_users(t); u++) {
                int slot;
                gwr_layer *ul = gwr_tensor_user(t, u, &slot);
                if (!ul || gwr_layer_is_removed(ul)) continue;
                if (gwr_grow((void **)&uses, sizeof *uses, &capuses, nuses + 1)) {
                    s = gwr_ir_error(a->net, GWR_ERR_NOMEM, "precision --auto: out of memory");
                    break;
                }
                uses[nuses++] = (use){ul, slot};
            }
            if (s || !nuses) continue;
            gwr_tensor *h = cast(c, t, to, NULL), *r = h ? cast(c, h, GWR_FLOAT32, NULL) : NULL;
            gwr_tensor *x = r ? where(c, sw, r, t) : NULL;
            if (!x || memo_put(&m, x, r)) s = gwr_ir_error(a->net, GWR_ERR_STATE, "precision --auto: %s", gwr_network_errmsg(c));
            for (int64_t u = 0; !s && u < nuses; u++)
                if (gwr_layer_set_input(uses[u].l, uses[u].slot, x))
                    s = gwr_ir_error(a->net, GWR_ERR_STATE, "precision --auto: %s", gwr_network_errmsg(c));
        }
    }
    if (!s && gwr_network_toposort(c)) s = gwr_ir_error(a->net, GWR_ERR_STATE, "precision --auto: %s", gwr_network_errmsg(c));
    if (!s) {
        gwr_session_options so = {.threads = a->o->threads > 0 ? a->o->threads : 1};
        if (!(w->sess = gwr_session_new_raw(c, &so)))
            s = gwr_ir_error(a->net, GWR_ERR_STATE, "precision --auto: planning: %s", gwr_last_errmsg());
    }
done:
    gwr_free(order);
    gwr_free(m.from);
    gwr_free(m.to);
    gwr_free(uses);
    if (s) sw_free(w, a->n);
    return s;
}

/* Runs the conversion with mask (the switched simulation) on every
 * sample: *worst the worst output error in units of tol (<= 1: within; a
 * failing candidate stops at its first failing sample, so *worst is then
 * a lower bound). */
/* Runs sample smp on the switched simulation: the layers of mask (or all,
 * when all_off) in float32, the other candidates converted; out[k] new
 * references. */
static gwr_status sw_run(amp *a, const struct gwr_calib_sample *smp, const uint8_t *mask, int all_off, gwr_value **out) {
    sw_net *w = a->sw;
    int nsw = 0;
    for (int64_t i = 0; i < a->n; i++) nsw += w->name[i] != NULL;
    const char **names = gwr_calloc((size_t)(smp->n + nsw) + 1, sizeof *names);
    gwr_value **vals = gwr_calloc((size_t)(smp->n + nsw) + 1, sizeof *vals);
    gwr_status s = names && vals ? GWR_OK : gwr_ir_error(a->net, GWR_ERR_NOMEM, "precision --auto: out of memory");
    int n = 0;
    for (; !s && n < smp->n; n++) names[n] = smp->names[n], vals[n] = smp->values[n];
    for (int64_t l = 0; !s && l < a->n; l++)
        if (w->name[l]) names[n] = w->name[l], vals[n++] = all_off || (mask && mask[l]) ? a->off : a->on;
    if (!s && gwr_session_run(w->sess, n, names, vals, a->nout, NULL, out))
        s = gwr_ir_error(a->net, GWR_ERR_STATE, "precision --auto: %s", gwr_session_errmsg(w->sess));
    gwr_free(names);
    gwr_free(vals);
    return s;
}

/* Runs the conversion with mask (the switched simulation) on every
 * sample: *worst the worst output error in units of tol (<= 1: within; a
 * failing candidate stops at its first failing sample, so *worst is then
 * a lower bound). */
static gwr_status eval(amp *a, const uint8_t *mask, double *worst) {
    sw_net *w = a->sw;
    gwr_value **out = gwr_calloc((size_t)a->nout + 1, sizeof *out);
    gwr_status s = out ? GWR_OK : gwr_ir_error(a->net, GWR_ERR_NOMEM, "precision --auto: out of memory");
    a->worst = 0;
    /* the sample that failed last first: a failing candidate mostly fails there */
    for (int j = 0; !s && j < a->hcalib->n; j++) {
        int i = (a->hard + j) % a->hcalib->n;
        if ((s = sw_run(a, &a->hcalib->s[i], mask, 0, out))) break;
        gwr_status f = GWR_OK;
        for (int k = 0; k < a->nout; k++) {
            /* the output as the conversion writes it: half (rounded) unless
             * --keep-io; under --keep-io, Cast to float of a half output of
             * a converted layer (rounded too) */
            int64_t p = w->out_layer[k];
            int half = !a->o->keep_io || (p >= 0 && w->name[p] && !(mask && mask[p]));
            if (half && gwr_value_dtype(out[k]) == GWR_FLOAT32) {
                float *d = gwr_value_data(out[k]);
                for (int64_t e = 0; e < gwr_value_numel(out[k]); e++) d[e] = round_half(d[e], a->o->to);
            }
            if (!f) f = cmp_out(a, i, k, out[k]);
            gwr_value_release(out[k]);
            out[k] = NULL;
        }
        if (f) {
            a->hard = i;
            break;
        }
    }
    a->runs++;
    *worst = a->worst;
    gwr_free(out);
    return s;
}

/* The float32 outputs (every switch off: the network as written), the
 * reference, per sample of the float32 inputs. */
static gwr_status reference(amp *a) {
    gwr_status s = GWR_OK;
    for (int i = 0; !s && i < a->calib->n; i++) s = sw_run(a, &a->calib->s[i], NULL, 1, a->ref + (int64_t)i * a->nout);
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

typedef struct cand {
    int64_t layer;
    double score;
} cand;

static int by_score(const void *p, const void *q) {
    const cand *a = p, *b = q;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return a->layer < b->layer ? -1 : a->layer > b->layer;
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

/* Scores every candidate by its own contribution: the worst output error
 * (in units of tol) of the network with that layer alone converted, on
 * the hardest sample (errors add up roughly: the largest contributions are
 * the ones to keep). mask: scratch, all kept on entry and on return. */
static gwr_status contribution(amp *a, cand *cs, int64_t nc, uint8_t *mask) {
    const gwr_calib *all = a->hcalib;
    /* the sample on which everything converted failed */
    gwr_calib one = {.n = 1, .cap = 1, .s = &all->s[a->hard]};
    gwr_status s = GWR_OK;
    a->hcalib = &one;
    int hard = a->hard;
    a->hard = 0;
    a->no_stop = 1;
    for (int64_t j = 0; !s && j < nc; j++) {
        mask[cs[j].layer] = 0;
        s = eval(a, mask, &cs[j].score);
        mask[cs[j].layer] = 1;
    }
    a->no_stop = 0;
    a->hard = hard;
    a->hcalib = (gwr_calib *)all; /* a's own set, held const here */
    return s;
}

gwr_status gwr_q_prec_auto(gwr_network *net, const gwr_precision_options *o, uint8_t *mask, char **mask_why) {
    amp a = {.net = net, .o = o, .n = gwr_network_num_layers(net), .nout = gwr_network_num_outputs(net)};
    gwr_calib *owned = NULL;
    cand *cs = NULL;
    gwr_status s = GWR_OK;
    if (!(a.calib = gwr_q_calib_or_random(net, o->calib, 8, &owned))) return GWR_ERR_INVALID_ARG;
    a.ref = gwr_calloc((size_t)a.calib->n * (size_t)a.nout + 1, sizeof *a.ref);
    cs = gwr_calloc((size_t)a.n + 1, sizeof *cs);
    if (!a.ref || !cs) s = gwr_ir_error(net, GWR_ERR_NOMEM, "precision --auto: out of memory");
    int64_t t0 = gwr_clock_ns();
    if (!s) s = half_calib(&a);
    sw_net sw = {0};
    a.sw = &sw;
    if (!s) s = sw_build(&a, &sw);
    a.on = gwr_value_new(GWR_BOOL, 0, NULL), a.off = gwr_value_new(GWR_BOOL, 0, NULL);
    if (!s && (!a.on || !a.off)) s = gwr_ir_error(net, GWR_ERR_NOMEM, "precision --auto: out of memory");
    if (!s) *(uint8_t *)gwr_value_data(a.on) = 1, *(uint8_t *)gwr_value_data(a.off) = 0;
    if (!s) s = reference(&a);
    int64_t t1 = gwr_clock_ns();
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
        if (!s) s = contribution(&a, cs, nc, mask);
        for (int64_t j = 0; j < nc; j++) mask[cs[j].layer] = 0;
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
        fprintf(stderr, "precision --auto: %lld candidates, %lld runs; simulation and reference %.1f ms, search %.1f ms\n", (long long)nc,
                (long long)a.runs, (t1 - t0) / 1e6, (gwr_clock_ns() - t1) / 1e6);
    for (int64_t i = 0; a.ref && i < (int64_t)a.calib->n * a.nout; i++) gwr_value_release(a.ref[i]);
    gwr_free(a.ref);
    gwr_free(cs);
    sw_free(&sw, a.n);
    gwr_value_release(a.on);
    gwr_value_release(a.off);
    gwr_calib_free(a.hcalib);
    gwr_calib_free(owned);
    return s;
}
