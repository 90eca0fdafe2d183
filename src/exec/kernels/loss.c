/* loss.c - NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
 *
 * Scores are [N, C, d1, ..., dk], targets [N, d1, ..., dk] (int32/int64),
 * the optional weight [C]. The loss of one element is
 * -logp[n, t, d] * weight[t], and 0 where t == ignore_index. reduction
 * "none" keeps the [N, d1, ..., dk] losses, "sum" adds them, "mean"
 * divides the sum by the summed weights of the elements not ignored (their
 * count without weights). SoftmaxCrossEntropyLoss first takes LogSoftmax
 * over C, and can return it. Computed in double for every float dtype. */
#include <math.h>
#include <string.h>

#include "exec/kernels/kernel_util.h"

/* The losses of logp (N, C, D flattened: N*C*D values, C at stride D) into
 * `out` (N*D values, or a scalar), per the reduction. */
static gwr_status nll(gwr_kctx *k, const gwr_value *logp, const gwr_value *target, const gwr_value *weight,
                      int out_index) {
    const char *red = gwr_k_string(k, "reduction", "mean");
    int mode = !strcmp(red, "none") ? 0 : !strcmp(red, "sum") ? 1 : !strcmp(red, "mean") ? 2 : -1;
    if (mode < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "reduction '%s' is not none, sum or mean", red);
    int has_ignore = gwr_layer_has_attr(k->layer, "ignore_index");
    int64_t ignore = gwr_k_int(k, "ignore_index", 0);
    if (logp->rank < 2) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "scores must have rank >= 2 (N, C, ...), not %d", logp->rank);
    if (target->dtype != GWR_INT32 && target->dtype != GWR_INT64)
        return gwr_k_fail(k, GWR_ERR_TYPE, "target must be int32 or int64, not %s", gwr_dtype_name(target->dtype));
    int64_t N = logp->dims[0], C = logp->dims[1], D = 1;
    if (target->rank != logp->rank - 1 || target->dims[0] != N)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "target must have shape (N, d1, ..., dk) matching the scores");
    for (int i = 2; i < logp->rank; i++) {
        if (target->dims[i - 1] != logp->dims[i])
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "target dim %d is %lld, the scores' dim %d is %lld", i - 1,
                              (long long)target->dims[i - 1], i, (long long)logp->dims[i]);
        D *= logp->dims[i];
    }
    if (weight && (weight->rank != 1 || weight->dims[0] != C || weight->dtype != logp->dtype))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "weight must be a 1-D tensor of C = %lld values of the scores' dtype",
                          (long long)C);
    gwr_value *out = mode ? gwr_k_out(k, out_index, logp->dtype, 0, NULL)
                          : gwr_k_out(k, out_index, logp->dtype, target->rank, target->dims);
    if (!out) return GWR_ERR_NOMEM;
    double sum = 0, wsum = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t d = 0; d < D; d++) {
            int64_t j = n * D + d, t = gwr_v_get_i64(target, j);
            double loss = 0;
            if (!(has_ignore && t == ignore)) {
                if (t < 0 || t >= C)
                    return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "target %lld is outside [0, %lld)", (long long)t, (long long)C);
                double w = weight ? gwr_v_get_f64(weight, t) : 1.0;
                loss = -gwr_v_get_f64(logp, (n * C + t) * D + d) * w;
                wsum += w;
            }
            if (!mode) gwr_v_set_f64(out, j, loss);
            sum += loss;
        }
    if (mode) gwr_v_set_f64(out, 0, mode == 1 ? sum : sum / wsum);
    return GWR_OK;
}

static gwr_status k_nll(gwr_kctx *k) {
    if (k->nin < 2 || !k->in[0] || !k->in[1]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "needs input and target");
    if (!gwr_ku_is_float(k->in[0]->dtype))
        return gwr_k_fail(k, GWR_ERR_TYPE, "input must be a float tensor, not %s", gwr_dtype_name(k->in[0]->dtype));
    return nll(k, k->in[0], k->in[1], k->nin > 2 ? k->in[2] : NULL, 0);
}

static gwr_status k_sce(gwr_kctx *k) {
    if (k->nin < 2 || !k->in[0] || !k->in[1]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "needs scores and labels");
    const gwr_value *x = k->in[0];
    if (!gwr_ku_is_float(x->dtype))
        return gwr_k_fail(k, GWR_ERR_TYPE, "scores must be a float tensor, not %s", gwr_dtype_name(x->dtype));
    if (x->rank < 2) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "scores must have rank >= 2 (N, C, ...), not %d", x->rank);
    /* log_softmax over axis 1, into a value of the scores' shape. */
    gwr_value *lp = k->nout > 1 && gwr_k_out_used(k, 1) ? gwr_k_out(k, 1, x->dtype, x->rank, x->dims)
                                                         : gwr_value_new(x->dtype, x->rank, x->dims);
    if (!lp) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    int owned = !(k->nout > 1 && k->out[1] == lp);
    int64_t N = x->dims[0], C = x->dims[1], NC = N * C, D = NC > 0 ? x->numel / NC : 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t d = 0; d < D; d++) {
            double m = -INFINITY, s = 0;
            for (int64_t c = 0; c < C; c++) {
                double v = gwr_v_get_f64(x, (n * C + c) * D + d);
                if (v > m) m = v;
            }
            for (int64_t c = 0; c < C; c++) s += exp(gwr_v_get_f64(x, (n * C + c) * D + d) - m);
            double lse = m + log(s);
            for (int64_t c = 0; c < C; c++) gwr_v_set_f64(lp, (n * C + c) * D + d, gwr_v_get_f64(x, (n * C + c) * D + d) - lse);
        }
    gwr_status st = nll(k, lp, k->in[1], k->nin > 2 ? k->in[2] : NULL, 0);
    if (owned) gwr_value_release(lp);
    return st;
}

const gwr_kernel_entry gwr_kernels_loss[] = {
    GWR_KERNEL(NegativeLogLikelihoodLoss, k_nll),
    GWR_KERNEL(SoftmaxCrossEntropyLoss, k_sce),
    {.fn = NULL},
};
