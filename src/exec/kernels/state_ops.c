/* state_ops.c - the state-carrying ops of opsets 24-27: TensorScatter
 * (24, a KV cache update) and CausalConvWithState (27, a causal depthwise
 * 1-D convolution that carries its last k - 1 inputs).
 *
 * TensorScatter: present_cache is past_cache with, for every index of the
 * dims before `axis` (whose first is the batch b), update's sequence rows
 * s = 0..L-1 written at row write_indices[b] + s (0 without
 * write_indices; modulo max_sequence_length in mode "circular"). A row
 * past the cache in mode "linear" is refused with a message.
 *
 * CausalConvWithState: input (B, C, L), weight (C, 1, k), bias (C)?,
 * past_state (B, C, k - 1)? (zeros when absent). With p = past_state ++
 * input along the last axis, output[b, c, t] = bias[c] + sum_j weight[c,
 * 0, j] p[b, c, t + j] and present_state = the last k - 1 columns of p.
 * activation "silu" (or its alias "swish") applies x sigmoid(x) to the
 * convolution rounded to the output type, as onnx's reference does. Sums
 * in double. */
#include <math.h>
#include <string.h>

#include "exec/exec_internal.h"
#include "exec/kernels/kernel_util.h"

/* ---- TensorScatter ------------------------------------------------------- */

static gwr_status k_tensor_scatter(gwr_kctx *k) {
    const gwr_value *past = gwr_ku_need_named(k, 0, "past_cache"), *up = past ? gwr_ku_need_named(k, 1, "update") : NULL;
    const gwr_value *wi = gwr_ku_opt(k, 2);
    if (!up) return GWR_ERR_INVALID_ARG;
    const char *mode = gwr_k_string(k, "mode", "linear");
    int circ = !strcmp(mode, "circular");
    if (!circ && strcmp(mode, "linear"))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "mode must be \"linear\" or \"circular\", not \"%s\"", mode);
    char tp[128], tu[128];
    gwr_value_type_str(past, tp, sizeof tp), gwr_value_type_str(up, tu, sizeof tu);
    int r = past->rank;
    int64_t axis = gwr_k_int(k, "axis", -2);
    if (r < 2 || axis < -r || axis >= r || (axis < 0 ? axis + r : axis) == 0)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld must name a dim after the batch of past_cache %s", (long long)axis, tp);
    if (axis < 0) axis += r;
    int ok = up->dtype == past->dtype && up->rank == r;
    for (int i = 0; ok && i < r; i++) ok = i == axis ? up->dims[i] <= past->dims[i] : up->dims[i] == past->dims[i];
    if (!ok)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "update %s must be past_cache %s's dtype and shape, no longer along axis %lld", tu, tp,
                          (long long)axis);
    int64_t B = past->dims[0], M = past->dims[axis], L = up->dims[axis], inner = 1, outer = 1;
    for (int i = (int)axis + 1; i < r; i++) inner *= past->dims[i];
    for (int i = 0; i < axis; i++) outer *= past->dims[i];
    if (wi && (wi->dtype != GWR_INT64 || wi->rank != 1 || wi->dims[0] != B)) {
        gwr_value_type_str(wi, tu, sizeof tu);
        return gwr_k_fail(k, GWR_ERR_SHAPE, "write_indices must be int64 of shape (%lld), got %s", (long long)B, tu);
    }
    for (int64_t b = 0; wi && b < B; b++) {
        int64_t w = ((const int64_t *)wi->data)[b];
        if (w < 0 || (!circ && w > M - L) || (circ && w >= M))
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "write index %lld of batch %lld does not fit %lld rows of %lld in mode %s",
                              (long long)w, (long long)b, (long long)L, (long long)M, mode);
    }
    int64_t es = gwr_ku_elem_size(k, past->dtype);
    if (es < 0) return GWR_ERR_UNSUPPORTED;
    gwr_value *o = gwr_k_out_over(k, 0, 0, past->dtype, r, past->dims);
    if (!o) return GWR_ERR_NOMEM;
    gwr_status st = o->data == past->data ? GWR_OK : gwr_ku_copy_run(k, o, 0, past, 0, past->numel, es);
    int64_t per_b = outer / (B ? B : 1); /* prefix indices of one batch entry */
    for (int64_t p = 0; !st && p < outer; p++) {
        int64_t w = wi ? ((const int64_t *)wi->data)[p / per_b] : 0;
        for (int64_t s = 0; !st && s < L; s++) {
            int64_t row = circ ? (w + s) % M : w + s;
            st = gwr_ku_copy_run(k, o, (p * M + row) * inner, up, (p * L + s) * inner, inner, es);
        }
    }
    return st;
}

/* ---- CausalConvWithState ------------------------------------------------- */

static gwr_status k_causal_conv_with_state(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_float(k, 0, "input"), *w = x ? gwr_ku_need_float(k, 1, "weight") : NULL;
    if (!w) return GWR_ERR_INVALID_ARG;
    const gwr_value *bias = gwr_ku_opt(k, 2), *past = gwr_ku_opt(k, 3);
    const char *act = gwr_k_string(k, "activation", "none");
    int silu = !strcmp(act, "silu") || !strcmp(act, "swish");
    if (!silu && strcmp(act, "none"))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "activation must be \"none\", \"silu\" or \"swish\", not \"%s\"", act);
    char tx[128], tw[128];
    gwr_value_type_str(x, tx, sizeof tx), gwr_value_type_str(w, tw, sizeof tw);
    if (x->rank != 3) return gwr_k_fail(k, GWR_ERR_SHAPE, "input must be (batch, channels, length), got %s", tx);
    int64_t B = x->dims[0], C = x->dims[1], L = x->dims[2];
    if (w->dtype != x->dtype || w->rank != 3 || w->dims[0] != C || w->dims[1] != 1 || w->dims[2] < 1)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "weight must be (%lld, 1, k) of the input's dtype, got %s", (long long)C, tw);
    int64_t K = w->dims[2], P = K - 1;
    if (bias && (bias->dtype != x->dtype || bias->rank != 1 || bias->dims[0] != C)) {
        gwr_value_type_str(bias, tw, sizeof tw);
        return gwr_k_fail(k, GWR_ERR_SHAPE, "bias must be (%lld) of the input's dtype, got %s", (long long)C, tw);
    }
    if (past && (past->dtype != x->dtype || past->rank != 3 || past->dims[0] != B || past->dims[1] != C || past->dims[2] != P)) {
        gwr_value_type_str(past, tw, sizeof tw);
        return gwr_k_fail(k, GWR_ERR_SHAPE, "past_state must be (%lld, %lld, %lld) of the input's dtype, got %s", (long long)B,
                          (long long)C, (long long)P, tw);
    }
    int64_t sd[3] = {B, C, P};
    gwr_value *y = gwr_k_out(k, 0, x->dtype, 3, x->dims), *ps = NULL;
    if (!y) return GWR_ERR_NOMEM;
    if (k->nout > 1 && gwr_k_out_used(k, 1) && !(ps = gwr_k_out(k, 1, x->dtype, 3, sd))) return GWR_ERR_NOMEM;
    double *buf = gwr_ku_scratch(k, P + L + K + L + 1, sizeof *buf);
    if (!buf) return GWR_ERR_NOMEM;
    double *pad = buf, *wr = pad + P + L, *row = wr + K;
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < C; c++) {
            if (past) gwr_ku_load_f64(past, (b * C + c) * P, P, pad);
            else memset(pad, 0, (size_t)P * sizeof *pad);
            gwr_ku_load_f64(x, (b * C + c) * L, L, pad + P);
            gwr_ku_load_f64(w, c * K, K, wr);
            double b0 = bias ? gwr_v_get_f64(bias, c) : 0;
            for (int64_t t = 0; t < L; t++) {
                double s = 0;
                for (int64_t j = 0; j < K; j++) s += wr[j] * pad[t + j];
                row[t] = s + b0;
            }
            int64_t off = (b * C + c) * L;
            gwr_ku_store_f64(y, off, L, row);
            if (silu) { /* on the convolution in the output type */
                gwr_ku_load_f64(y, off, L, row);
                for (int64_t t = 0; t < L; t++) row[t] = row[t] / (1.0 + exp(-row[t]));
                gwr_ku_store_f64(y, off, L, row);
            }
            if (ps) gwr_ku_store_f64(ps, (b * C + c) * P, P, pad + L);
        }
    gwr_free(buf);
    return GWR_OK;
}

const gwr_kernel_entry gwr_kernels_state_ops[] = {
    GWR_KERNEL(TensorScatter, k_tensor_scatter),
    GWR_KERNEL(CausalConvWithState, k_causal_conv_with_state),
    {.fn = NULL},
};
