/* plugins.c - kernels of gwr's own plugin ops (domain "gwr").
 *
 * gwr::GPTAttention (src/functional/plugin.c, include/gwr/functional.h):
 * fused multi-head causal self-attention over a packed qkv, as TensorRT-LLM's
 * GPT attention plugin computes it.
 *   inputs  qkv (batch, seq, 3*hidden): per token q | k | v, each split
 *           into num_heads heads of head_size (hidden = num_heads*head_size);
 *           qkv_bias (3*hidden), optional, added to every token's qkv;
 *           attention_mask, optional (see below).
 *   fields  num_heads, head_size, remove_padding (0/1).
 *   outputs context (batch, seq, hidden) = softmax(q k^T / sqrt(head_size)
 *           + causal mask) v per sequence and head, heads concatenated;
 *           present (batch, 2, num_heads, seq, head_size): the biased keys
 *           (index 0) and values (index 1).
 * Sequences: without remove_padding every batch row is one sequence of seq
 * tokens. With remove_padding qkv is (1, tokens, 3*hidden), the sequences
 * packed one after another (what gpt_attention_remove_padding makes of a
 * (batch, seq) qkv); where they start is told by attention_mask:
 *   - absent: all tokens form one sequence;
 *   - (batch, seq), batch*seq == tokens: batch sequences of seq tokens;
 *   - (batch) int32/int64 lengths summing to tokens (TensorRT-LLM's
 *     context lengths).
 * A (batch, seq) mask also masks keys: a key whose mask entry is 0 is not
 * attended to (HuggingFace's attention_mask), in both modes, so a network
 * gives the same context before and after the remove-padding rewrite. A
 * query that can see no key gets a zero context. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/kernels/kernel_util.h"

#define ATT_MAX_ELEMS (INT64_C(1) << 34)

typedef struct att_seq {
    int64_t start, len; /* token rows of qkv */
} att_seq;

static gwr_status k_gpt_attention(gwr_kctx *k) {
    if (k->nin < 1 || k->nin > 3) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "takes qkv, qkv_bias and attention_mask (%d inputs)", k->nin);
    if (k->nout < 1 || k->nout > 2) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "gives context and present (%d outputs)", k->nout);
    const gwr_value *qkv = k->in[0], *bias = k->nin > 1 ? k->in[1] : NULL, *mask = k->nin > 2 ? k->in[2] : NULL;
    int64_t nh = gwr_k_int(k, "num_heads", -1), hs = gwr_k_int(k, "head_size", -1), rp = gwr_k_int(k, "remove_padding", 0);
    if (nh <= 0 || hs <= 0 || nh > (1 << 20) || hs > (1 << 20))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "num_heads and head_size must be positive (%lld, %lld)", (long long)nh, (long long)hs);
    if (rp != 0 && rp != 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "remove_padding must be 0 or 1, not %lld", (long long)rp);
    int64_t H = nh * hs, W = 3 * H;
    char ty[96];
    if (!qkv) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "qkv is missing");
    gwr_value_type_str(qkv, ty, sizeof ty);
    if (!gwr_ku_is_float(qkv->dtype) || qkv->rank != 3 || qkv->dims[2] != W)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "qkv must be float [batch, seq, %lld], got %s", (long long)W, ty);
    if (rp && qkv->dims[0] != 1)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "with remove_padding qkv must be [1, tokens, %lld], got %s", (long long)W, ty);
    if (bias && (bias->dtype != qkv->dtype || bias->rank != 1 || bias->dims[0] != W)) {
        gwr_value_type_str(bias, ty, sizeof ty);
        return gwr_k_fail(k, GWR_ERR_SHAPE, "qkv_bias must be [%lld] of qkv's dtype, got %s", (long long)W, ty);
    }
    int64_t B = qkv->dims[0], S = qkv->dims[1], rows = B * S;
    if (rows > ATT_MAX_ELEMS / W) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "qkv too large");
    /* The sequences and the valid keys. */
    int64_t nseq = 0;
    att_seq *seq = NULL;
    uint8_t *valid = gwr_malloc((size_t)(rows ? rows : 1));
    if (!valid) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    memset(valid, 1, (size_t)(rows ? rows : 1));
    gwr_status st = GWR_OK;
    if (mask) gwr_value_type_str(mask, ty, sizeof ty);
    if (mask && (mask->dtype == GWR_STRING || !gwr_dtype_bits(mask->dtype))) {
        st = gwr_k_fail(k, GWR_ERR_TYPE, "attention_mask must be numeric or bool, got %s", ty);
    } else if (mask && mask->rank == 2) {
        int ok = rp ? mask->dims[0] * mask->dims[1] == S : mask->dims[0] == B && mask->dims[1] == S;
        if (!ok)
            st = gwr_k_fail(k, GWR_ERR_SHAPE, "attention_mask %s does not fit qkv [%lld, %lld, %lld]%s", ty, (long long)B,
                            (long long)S, (long long)W, rp ? " (batch*seq must be the token count)" : "");
        for (int64_t i = 0; !st && i < rows; i++) valid[i] = gwr_v_get_f64(mask, i) != 0;
        nseq = rp ? mask->dims[0] : B;
        int64_t L = rp ? mask->dims[1] : S;
        if (!st && !(seq = gwr_malloc((size_t)(nseq ? nseq : 1) * sizeof *seq))) st = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
        for (int64_t i = 0; !st && i < nseq; i++) seq[i] = (att_seq){i * L, L};
    } else if (mask && mask->rank == 1 && rp) {
        if (mask->dtype != GWR_INT32 && mask->dtype != GWR_INT64)
            st = gwr_k_fail(k, GWR_ERR_TYPE, "attention_mask as sequence lengths must be int32 or int64, got %s", ty);
        nseq = mask->dims[0];
        if (!st && !(seq = gwr_malloc((size_t)(nseq ? nseq : 1) * sizeof *seq))) st = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
        int64_t at = 0;
        for (int64_t i = 0; !st && i < nseq; i++) {
            int64_t L = gwr_v_get_i64(mask, i);
            if (L < 0 || L > S - at)
                st = gwr_k_fail(k, GWR_ERR_SHAPE, "sequence lengths %s exceed the %lld tokens of qkv", ty, (long long)S);
            else seq[i] = (att_seq){at, L}, at += L;
        }
        if (!st && at != S)
            st = gwr_k_fail(k, GWR_ERR_SHAPE, "sequence lengths sum to %lld, qkv has %lld tokens", (long long)at, (long long)S);
    } else if (mask) {
        st = gwr_k_fail(k, GWR_ERR_SHAPE, "attention_mask must be [batch, seq]%s, got %s", rp ? " or [batch] lengths" : "", ty);
    } else {
        nseq = B;
        if (!(seq = gwr_malloc((size_t)(nseq ? nseq : 1) * sizeof *seq))) st = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
        for (int64_t i = 0; !st && i < nseq; i++) seq[i] = (att_seq){i * S, S};
    }
    int64_t cd[3] = {B, S, H}, pd[5] = {B, 2, nh, S, hs};
    gwr_value *ctx = NULL, *present = NULL;
    if (!st && !(ctx = gwr_k_out(k, 0, qkv->dtype, 3, cd))) st = GWR_ERR_NOMEM;
    if (!st && k->nout > 1 && gwr_k_out_used(k, 1) && !(present = gwr_k_out(k, 1, qkv->dtype, 5, pd))) st = GWR_ERR_NOMEM;
    double *x = NULL, *p = NULL, *acc = NULL;
    if (!st) {
        x = gwr_malloc((size_t)(rows > 0 ? rows * W : 1) * sizeof *x);
        p = gwr_malloc((size_t)(S ? S : 1) * sizeof *p);
        acc = gwr_malloc((size_t)hs * sizeof *acc);
        if (!x || !p || !acc) st = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    }
    if (!st) {
        for (int64_t r = 0; r < rows; r++)
            for (int64_t j = 0; j < W; j++) x[r * W + j] = gwr_ku_get(qkv, r * W + j) + (bias ? gwr_ku_get(bias, j) : 0.0);
        double scale = 1.0 / sqrt((double)hs);
        for (int64_t s = 0; s < nseq; s++) {
            int64_t base = seq[s].start, L = seq[s].len;
            for (int64_t h = 0; h < nh; h++) {
                for (int64_t i = 0; i < L; i++) {
                    const double *q = x + (base + i) * W + h * hs;
                    double mx = -INFINITY;
                    for (int64_t j = 0; j <= i; j++) {
                        if (!valid[base + j]) continue;
                        const double *kk = x + (base + j) * W + H + h * hs;
                        double d = 0;
                        for (int64_t e = 0; e < hs; e++) d += q[e] * kk[e];
                        p[j] = d * scale;
                        if (p[j] > mx) mx = p[j];
                    }
                    double sum = 0;
                    memset(acc, 0, (size_t)hs * sizeof *acc);
                    if (mx > -INFINITY) {
                        for (int64_t j = 0; j <= i; j++) {
                            if (!valid[base + j]) continue;
                            double w = exp(p[j] - mx);
                            const double *v = x + (base + j) * W + 2 * H + h * hs;
                            sum += w;
                            for (int64_t e = 0; e < hs; e++) acc[e] += w * v[e];
                        }
                    }
                    int64_t o = (base + i) * H + h * hs;
                    for (int64_t e = 0; e < hs; e++) gwr_ku_set(ctx, o + e, sum > 0 ? acc[e] / sum : 0.0);
                }
            }
        }
        if (present)
            for (int64_t r = 0; r < rows; r++) {
                int64_t b = r / S, t = r % S;
                for (int64_t kv = 0; kv < 2; kv++)
                    for (int64_t h = 0; h < nh; h++)
                        for (int64_t e = 0; e < hs; e++)
                            gwr_ku_set(present, (((b * 2 + kv) * nh + h) * S + t) * hs + e, x[r * W + (1 + kv) * H + h * hs + e]);
            }
    }
    gwr_free(x), gwr_free(p), gwr_free(acc), gwr_free(seq), gwr_free(valid);
    return st;
}

const gwr_kernel_entry gwr_kernels_plugins[] = {
    GWR_KERNEL_CUSTOM("gwr", "GPTAttention", k_gpt_attention),
    {.fn = NULL},
};
