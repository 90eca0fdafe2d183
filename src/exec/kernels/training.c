/* training.c - the optimizers of ai.onnx.preview.training: Adagrad, Adam
 * and Momentum (standard and Nesterov), one update step each, as the
 * operator specification's pseudo code gives it.
 *
 * Inputs are R (scalar learning rate), T (scalar int64 update count) and
 * then n tensors to optimize followed by their gradients and state
 * tensors, group by group (X1..Xn, G1..Gn, V1..Vn, ...); outputs are the
 * new X1..Xn and then each new state group. Every tensor of one index has
 * X's shape and dtype (float or double). Computed in double. */
#include <math.h>
#include <string.h>

#include "exec/kernels/kernel_util.h"

enum { OPT_ADAGRAD, OPT_ADAM, OPT_MOMENTUM };

typedef struct {
    int kind, nesterov;
    double r, norm, decay, eps, alpha, beta, post;
    int64_t t;
} opt_params;

/* A scalar input (rank 0 or one element) as a double; -1 after gwr_k_fail. */
static int scalar_in(gwr_kctx *k, int i, const char *name, int want_int, double *d, int64_t *n) {
    const gwr_value *v = gwr_ku_need_named(k, i, name);
    if (!v) return -1;
    if (want_int ? !gwr_ku_is_int(v->dtype) : !gwr_ku_is_float(v->dtype))
        return gwr_k_fail(k, GWR_ERR_TYPE, "%s must be %s, not %s", name, want_int ? "int64" : "float", gwr_dtype_name(v->dtype)), -1;
    if (v->numel != 1) return gwr_k_fail(k, GWR_ERR_SHAPE, "%s must be a scalar, not %lld values", name, (long long)v->numel), -1;
    if (want_int) *n = gwr_v_get_i64(v, 0);
    else *d = gwr_v_get_f64(v, 0);
    return 0;
}

/* A required float attribute; -1 after gwr_k_fail when absent. */
static int need_float_attr(gwr_kctx *k, const char *name, double *v) {
    if (!gwr_layer_has_attr(k->layer, name)) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attribute %s is missing", name), -1;
    *v = gwr_k_float(k, name, 0.0f);
    return 0;
}

/* One element: x, g and the state s[0..) in, the new x and state out. */
static double step(const opt_params *p, double x, double g, double *s) {
    double gr = p->norm * x + g;
    switch (p->kind) {
    case OPT_ADAGRAD: {
        double r = p->r / (1 + (double)p->t * p->decay);
        s[0] += gr * gr;
        return x - r * gr / (sqrt(s[0]) + p->eps);
    }
    case OPT_ADAM: {
        s[0] = p->alpha * s[0] + (1 - p->alpha) * gr;
        s[1] = p->beta * s[1] + (1 - p->beta) * gr * gr;
        double ra = p->t > 0 ? p->r * sqrt(1 - pow(p->beta, (double)p->t)) / (1 - pow(p->alpha, (double)p->t)) : p->r;
        return (1 - p->post) * (x - ra * s[0] / (sqrt(s[1]) + p->eps));
    }
    default: {
        double b = p->t > 0 ? p->beta : 1;
        s[0] = p->alpha * s[0] + b * gr;
        return p->nesterov ? x - p->r * (gr + p->alpha * s[0]) : x - p->r * s[0];
    }
    }
}

static gwr_status optimize(gwr_kctx *k, int kind) {
    opt_params p = {.kind = kind};
    int nstate = kind == OPT_ADAM ? 2 : 1, groups = 2 + nstate;
    if (scalar_in(k, 0, "R", 0, &p.r, NULL) || scalar_in(k, 1, "T", 1, NULL, &p.t)) return GWR_ERR_INVALID_ARG;
    if (k->nin < 2 + groups || (k->nin - 2) % groups)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%d inputs after R and T are not %d groups of the same count", k->nin - 2, groups);
    int n = (k->nin - 2) / groups;
    if (k->nout > n * (1 + nstate))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%d outputs for %d optimized tensors (at most %d)", k->nout, n, n * (1 + nstate));
    if (kind == OPT_ADAGRAD) {
        p.norm = gwr_k_float(k, "norm_coefficient", 0.0f), p.decay = gwr_k_float(k, "decay_factor", 0.0f);
        p.eps = gwr_k_float(k, "epsilon", 1e-6f);
    } else if (kind == OPT_ADAM) {
        p.norm = gwr_k_float(k, "norm_coefficient", 0.0f), p.post = gwr_k_float(k, "norm_coefficient_post", 0.0f);
        p.alpha = gwr_k_float(k, "alpha", 0.9f), p.beta = gwr_k_float(k, "beta", 0.999f), p.eps = gwr_k_float(k, "epsilon", 1e-6f);
    } else {
        if (need_float_attr(k, "alpha", &p.alpha) || need_float_attr(k, "beta", &p.beta) ||
            need_float_attr(k, "norm_coefficient", &p.norm))
            return GWR_ERR_INVALID_ARG;
        if (!gwr_layer_has_attr(k->layer, "mode")) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attribute mode is missing");
        const char *mode = gwr_k_string(k, "mode", "standard");
        p.nesterov = !strcmp(mode, "nesterov");
        if (!p.nesterov && strcmp(mode, "standard"))
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "mode '%s' is not standard or nesterov", mode);
    }
    for (int i = 0; i < n; i++) {
        const gwr_value *x = gwr_ku_need_named(k, 2 + i, "X");
        if (!x) return GWR_ERR_INVALID_ARG;
        if (!gwr_ku_is_float(x->dtype))
            return gwr_k_fail(k, GWR_ERR_TYPE, "X%d must be float, not %s", i + 1, gwr_dtype_name(x->dtype));
        for (int gi = 1; gi < groups; gi++) {
            const gwr_value *v = gwr_ku_need(k, 2 + gi * n + i);
            if (!v) return GWR_ERR_INVALID_ARG;
            if (v->dtype != x->dtype || v->rank != x->rank || memcmp(v->dims, x->dims, (size_t)x->rank * sizeof *x->dims))
                return gwr_k_fail(k, GWR_ERR_SHAPE, "input %d must have the dtype and shape of X%d (input %d)", 2 + gi * n + i, i + 1,
                                  2 + i);
        }
        gwr_value *out[3] = {NULL, NULL, NULL};
        for (int o = 0; o <= nstate; o++)
            if (o * n + i < k->nout && !(out[o] = gwr_k_out(k, o * n + i, x->dtype, x->rank, x->dims)))
                return GWR_ERR_NOMEM;
        for (int64_t j = 0; j < x->numel; j++) {
            double s[2];
            for (int o = 0; o < nstate; o++) s[o] = gwr_v_get_f64(k->in[2 + (2 + o) * n + i], j);
            double xn = step(&p, gwr_v_get_f64(x, j), gwr_v_get_f64(k->in[2 + n + i], j), s);
            if (out[0]) gwr_v_set_f64(out[0], j, xn);
            for (int o = 0; o < nstate; o++)
                if (out[1 + o]) gwr_v_set_f64(out[1 + o], j, s[o]);
        }
    }
    return GWR_OK;
}

static gwr_status k_adagrad(gwr_kctx *k) { return optimize(k, OPT_ADAGRAD); }
static gwr_status k_adam(gwr_kctx *k) { return optimize(k, OPT_ADAM); }
static gwr_status k_momentum(gwr_kctx *k) { return optimize(k, OPT_MOMENTUM); }

const gwr_kernel_entry gwr_kernels_training[] = {
    GWR_KERNEL(TRAIN_Adagrad, k_adagrad),
    GWR_KERNEL(TRAIN_Adam, k_adam),
    GWR_KERNEL(TRAIN_Momentum, k_momentum),
    {.fn = NULL},
};
