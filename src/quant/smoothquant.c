/* smoothquant.c - SmoothQuant (Xiao et al.), before the mode: activation
 * outliers migrated into the weights. For a layer P whose output X is read
 * only by MatMuls with a constant float32 2-D weight W [K, N], P being
 *
 *   LayerNormalization over the last axis (scale gamma [K], bias beta
 *   [K] or absent, constants), SimplifiedLayerNormalization (gamma [K]),
 *   or a Mul of X by a constant varying along the last axis only (K
 *   elements),
 *
 * each input channel j gets s_j = max|X_j|^alpha / max|W_j|^(1 - alpha),
 * max|X_j| over o->calib (gwr_q_collect), max|W_j| over row j of every
 * reader's W; gamma, beta (or the Mul's constant) are divided by s and each
 * W's row j multiplied by s_j: the float network computes the same (up to
 * rounding), while X's channels, now flatter, quantize with less error. A
 * channel whose maximum is 0 either way keeps s = 1. P's other outputs must
 * be unread and X must not be a network output. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gwr/functional.h"
#include "quant/qgraph.h"

static gwr_status oom(gwr_network *net) { return gwr_ir_error(net, GWR_ERR_NOMEM, "SmoothQuant: out of memory"); }

typedef struct smooth {
    gwr_layer *p;
    gwr_tensor *x;      /* P's output */
    int kconst;         /* P's input holding gamma (or the Mul's constant) */
    int64_t K;
    float *xmax;        /* max |X_j| over the samples */
} smooth;

/* 1 when t is a float32 constant of K > 1 elements along its last axis
 * only (dims [..., 1, K]). */
static int per_last_axis(const gwr_tensor *t, int64_t *K) {
    gwr_match_const k;
    if (!t || !gwr_match_const_get(t, &k) || k.dtype != GWR_FLOAT32 || k.rank < 1) return 0;
    *K = k.dims[k.rank - 1];
    return *K > 1 && k.numel == *K;
}

/* The input of P that SmoothQuant divides (gamma, the Mul's constant) and
 * its K channels, when P is one it takes; else -1. Works on untyped
 * outputs (a file without value_info): K comes from the constant. */
static int scaled_input(gwr_layer *p, int64_t *K) {
    const char *op = gwr_layer_op(p);
    gwr_tensor *x = gwr_layer_output(p, 0);
    int r = gwr_tensor_rank(x);
    gwr_dtype dt = gwr_tensor_dtype(x);
    if (*gwr_layer_domain(p) || (dt != GWR_FLOAT32 && dt != GWR_UNDEFINED)) return -1;
    for (int i = 1; i < gwr_layer_num_outputs(p); i++)
        if (gwr_tensor_num_live_users(gwr_layer_output(p, i)) || gwr_tensor_output_index(gwr_layer_output(p, i)) >= 0)
            return -1;
    if (!strcmp(op, "LayerNormalization") || !strcmp(op, "SimplifiedLayerNormalization")) {
        int64_t axis = -1, kb = 0;
        /* over the last axis alone: gamma and beta [K] */
        if (gwr_layer_attr_int(p, "axis", -1, &axis) || !(axis == -1 || (r >= 1 && axis == r - 1))) return -1;
        if (gwr_layer_num_inputs(p) < 2 || !per_last_axis(gwr_layer_input(p, 1), K)) return -1;
        gwr_tensor *beta = gwr_layer_num_inputs(p) > 2 ? gwr_layer_input(p, 2) : NULL;
        return !beta || (per_last_axis(beta, &kb) && kb == *K) ? 1 : -1;
    }
    if (!strcmp(op, "Mul") && gwr_layer_num_inputs(p) == 2)
        for (int i = 0; i < 2; i++) /* the constant, and an activation that is not one */
            if (per_last_axis(gwr_layer_input(p, i), K) && !gwr_match_const_get(gwr_layer_input(p, 1 - i), &(gwr_match_const){0}))
                return i;
    return -1;
}

/* 1 when every reader of x is a MatMul reading it as A with a constant
 * float32 2-D B [K, N]. */
static int readers_fit(gwr_tensor *x, int64_t K) {
    int64_t n = gwr_tensor_num_users(x), live = 0;
    if (gwr_tensor_output_index(x) >= 0) return 0;
    for (int64_t i = 0; i < n; i++) {
        int slot;
        gwr_layer *u = gwr_tensor_user(x, i, &slot);
        if (!u || gwr_layer_is_removed(u)) continue;
        gwr_q_linear q;
        if (slot != 0 || !gwr_q_linear_of(u, &q) || q.kind != GWR_QL_MATMUL || q.K != K) return 0;
        live++;
    }
    return live > 0;
}

static gwr_status record_max(void *ctx, int sample, int idx, gwr_value *v) {
    smooth *s = &((smooth *)ctx)[idx];
    (void)sample;
    if (gwr_value_dtype(v) != GWR_FLOAT32 || gwr_value_rank(v) < 1 || gwr_value_dims(v)[gwr_value_rank(v) - 1] != s->K)
        return gwr_ir_error(gwr_layer_network(s->p), GWR_ERR_SHAPE, "SmoothQuant: '%s' is not float32 [..., %lld]",
                            gwr_tensor_name(s->x), (long long)s->K);
    const float *x = gwr_value_cdata(v);
    int64_t rows = gwr_value_numel(v) / s->K;
    for (int64_t r = 0; r < rows; r++, x += s->K)
        for (int64_t j = 0; j < s->K; j++) s->xmax[j] = fmaxf(s->xmax[j], fabsf(x[j]));
    return GWR_OK;
}

/* Folds s into P's constant(s) and its readers' weights. */
static gwr_status fold(gwr_network *net, const smooth *sm, const float *s) {
    gwr_layer *p = sm->p;
    int64_t K = sm->K;
    gwr_status st = GWR_OK;
    float *buf = NULL;
    /* gamma and beta (inputs 1, 2 of a normalization), or the Mul's constant */
    int last = strcmp(gwr_layer_op(p), "Mul") ? 2 : sm->kconst;
    for (int i = sm->kconst; !st && i <= last && i < gwr_layer_num_inputs(p); i++) {
        gwr_tensor *t = gwr_layer_input(p, i);
        gwr_match_const k;
        if (!t || !gwr_match_const_get(t, &k)) continue;
        float *v = gwr_malloc((size_t)K * sizeof *v);
        if (!v) return oom(net);
        for (int64_t j = 0; j < K; j++) v[j] = ((const float *)k.data)[j] / s[j];
        gwr_tensor *nt = gwr_q_const(net, gwr_tensor_name(t), "_smoothed", GWR_FLOAT32, k.rank, k.dims, v);
        gwr_free(v);
        st = nt ? gwr_layer_set_input(p, i, nt) : GWR_ERR_NOMEM;
    }
    for (int64_t u = 0; !st && u < gwr_tensor_num_users(sm->x); u++) {
        int slot;
        gwr_layer *m = gwr_tensor_user(sm->x, u, &slot);
        gwr_q_linear q;
        if (!m || gwr_layer_is_removed(m) || !gwr_q_linear_of(m, &q)) continue;
        if (!(buf = gwr_malloc((size_t)(q.K * q.N) * sizeof *buf))) return oom(net);
        const float *w = q.wk.data;
        for (int64_t j = 0; j < q.K; j++)
            for (int64_t n = 0; n < q.N; n++) buf[j * q.N + n] = w[j * q.N + n] * s[j];
        gwr_tensor *nw = gwr_q_const(net, gwr_tensor_name(q.w), "_smoothed", GWR_FLOAT32, 2, q.wk.dims, buf);
        gwr_free(buf);
        st = nw ? gwr_layer_set_input(m, 1, nw) : GWR_ERR_NOMEM;
    }
    return st;
}

gwr_status gwr_q_smoothquant(gwr_network *net, const gwr_quantize_options *o, gwr_quant_report *rep) {
    double alpha = o->smoothquant_alpha;
    int64_t n0 = gwr_network_num_layers(net), ns = 0;
    smooth *sm = gwr_calloc((size_t)n0 + 1, sizeof *sm);
    const char **names = gwr_calloc((size_t)n0 + 1, sizeof *names);
    gwr_status st = sm && names ? GWR_OK : oom(net);
    for (int64_t i = 0; !st && i < n0; i++) {
        gwr_layer *p = gwr_network_layer(net, i);
        int64_t K = 0;
        int kc;
        if (gwr_layer_is_removed(p) || (kc = scaled_input(p, &K)) < 0 || !readers_fit(gwr_layer_output(p, 0), K)) continue;
        smooth *e = &sm[ns];
        e->p = p, e->x = gwr_layer_output(p, 0), e->kconst = kc, e->K = K;
        if (!(e->xmax = gwr_calloc((size_t)K, sizeof *e->xmax))) st = oom(net);
        names[ns++] = gwr_tensor_name(e->x);
    }
    if (!st && ns) st = gwr_q_collect(net, o->calib, (int)ns, names, record_max, sm, o->threads);
    float *s = NULL;
    for (int64_t i = 0; !st && i < ns; i++) {
        smooth *e = &sm[i];
        if (!(s = gwr_malloc((size_t)e->K * sizeof *s))) {
            st = oom(net);
            break;
        }
        /* max |W_j| over every reader's row j */
        for (int64_t j = 0; j < e->K; j++) s[j] = 0;
        int nread = 0;
        for (int64_t u = 0; u < gwr_tensor_num_users(e->x); u++) {
            int slot;
            gwr_layer *m = gwr_tensor_user(e->x, u, &slot);
            gwr_q_linear q;
            if (!m || gwr_layer_is_removed(m) || !gwr_q_linear_of(m, &q)) continue;
            nread++;
            const float *w = q.wk.data;
            for (int64_t j = 0; j < q.K; j++)
                for (int64_t n = 0; n < q.N; n++) s[j] = fmaxf(s[j], fabsf(w[j * q.N + n]));
        }
        for (int64_t j = 0; j < e->K; j++) {
            double a = e->xmax[j], w = s[j], v = a > 0 && w > 0 ? pow(a, alpha) / pow(w, 1 - alpha) : 1;
            s[j] = isfinite(v) && v > 0 ? (float)fmin(fmax(v, 1e-5), 1e5) : 1.0f;
        }
        st = fold(net, e, s);
        gwr_free(s), s = NULL;
        char what[160];
        snprintf(what, sizeof what, "SmoothQuant alpha %g: channel scales folded into %d MatMul%s", alpha, nread,
                 nread == 1 ? "" : "s");
        if (!st && rep && gwr_q_report_add(rep, gwr_layer_name(e->p), gwr_layer_op(e->p), what, -1, -1)) st = oom(net);
    }
    for (int64_t i = 0; i < ns; i++) gwr_free(sm[i].xmax);
    gwr_free(sm), gwr_free(names);
    if (!st && ns) st = gwr_q_finish(net);
    return st;
}
