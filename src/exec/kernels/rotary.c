/* rotary.c - the rotary position embedding kernels: ONNX RotaryEmbedding (opset 23; every opset,
 * as fuse_rotary emits it into older models for target gwr) and com.microsoft RotaryEmbedding
 * (what lower_rotary makes for target ort below opset 23: input, position_ids, cos_cache,
 * sin_cache; scale 1, no packed batching), one computation in double.
 *
 * X (B, heads, S, D) or (B, S, heads * D) with num_heads; the first R = rotary_embedding_dim
 * (0: D) values of each head turn by the angle whose cos and sin are row p of the caches,
 * p = position_ids[b, s] (caches (max_pos, R/2)), or position_ids[0] + s for com.microsoft's
 * one-element offset form, or the caches (B, S, R/2) themselves (ONNX's form without
 * position_ids). Pair i is (x[i], x[i + R/2]), or (x[2i], x[2i + 1]) when interleaved; the rest
 * of the head is copied. Float32 computes in float (as onnxruntime does), the other types in
 * double. */
#include <math.h>
#include <string.h>

#include "exec/kernels/kernel_util.h"

/* The kernel over inputs x, cos, sin, position_ids at indices ix, ic, is, ip (ip -1: none). */
static gwr_status rotary(gwr_kctx *k, int ix, int ic, int is, int ip) {
    const gwr_value *x = gwr_ku_need_float(k, ix, "input"), *cs = x ? gwr_ku_need_float(k, ic, "cos_cache") : NULL;
    const gwr_value *sn = cs ? gwr_ku_need_float(k, is, "sin_cache") : NULL, *pos = ip >= 0 ? gwr_ku_opt(k, ip) : NULL;
    if (!sn) return GWR_ERR_INVALID_ARG;
    int64_t nh = gwr_k_int(k, "num_heads", 0), R = gwr_k_int(k, "rotary_embedding_dim", 0);
    int il = gwr_k_int(k, "interleaved", 0) != 0;
    int64_t B, S, H, D;
    if (x->rank == 4) {
        B = x->dims[0], H = x->dims[1], S = x->dims[2], D = x->dims[3];
    } else if (x->rank == 3) {
        if (nh <= 0 || x->dims[2] % nh)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "a 3-D input needs num_heads dividing its hidden size %lld",
                              (long long)x->dims[2]);
        B = x->dims[0], S = x->dims[1], H = nh, D = x->dims[2] / nh;
    } else {
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input must be 3-D or 4-D, not %d-D", x->rank);
    }
    if (R == 0) R = D;
    if (R < 0 || R > D || R % 2) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "rotary_embedding_dim %lld does not fit head size %lld",
                                                   (long long)R, (long long)D);
    int64_t half = R / 2, rows = pos ? 0 : B * S;
    int offset = pos && pos->numel == 1 && ip == 1; /* com.microsoft's (1) form: position_ids[0] + s */
    if (pos) {
        if (!gwr_ku_is_int(pos->dtype) || (!offset && pos->numel != B * S))
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "position_ids must be integers of shape (batch, sequence)");
        rows = cs->rank == 2 ? cs->dims[0] : 0;
    }
    if (cs->rank < 2 || cs->dims[cs->rank - 1] != half || cs->numel != rows * half || sn->numel != cs->numel)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "cos_cache and sin_cache must be (%s, %lld)",
                          pos ? "max_position, rotary_embedding_dim / 2" : "batch, sequence", (long long)half);
    gwr_value *y = gwr_k_out(k, 0, x->dtype, x->rank, x->dims);
    if (!y) return GWR_ERR_NOMEM;
    /* float32 throughout: in float, a pair at a time (each pair is read
     * before it is written: y may be x). The double row of the general
     * path went through a per-element getter: 1 ms of llama-gqa's 60 ms
     * prefill of 128 tokens, against some 0.1 ms here. */
    int f32 = x->dtype == GWR_FLOAT32 && cs->dtype == GWR_FLOAT32 && sn->dtype == GWR_FLOAT32;
    double *row = f32 ? NULL : gwr_ku_scratch(k, D + 1, sizeof *row);
    if (!f32 && !row) return GWR_ERR_NOMEM;
    gwr_status st = GWR_OK;
    for (int64_t b = 0; !st && b < B; b++)
        for (int64_t s = 0; !st && s < S; s++) {
            int64_t p = b * S + s;
            if (pos && ((p = offset ? gwr_v_get_i64(pos, 0) + s : gwr_v_get_i64(pos, p)) < 0 || p >= rows)) {
                st = gwr_k_fail(k, GWR_ERR_INVALID_ARG, "position id %lld is outside the caches' %lld rows", (long long)p,
                                (long long)rows);
                break;
            }
            for (int64_t h = 0; f32 && h < H; h++) {
                int64_t off = x->rank == 4 ? ((b * H + h) * S + s) * D : ((b * S + s) * H + h) * D;
                const float *xr = (const float *)x->data + off, *cr = (const float *)cs->data + p * half;
                const float *sr = (const float *)sn->data + p * half;
                float *yr = (float *)y->data + off;
                if (il) {
                    for (int64_t i = 0; i < half; i++) {
                        float x1 = xr[2 * i], x2 = xr[2 * i + 1];
                        yr[2 * i] = cr[i] * x1 - sr[i] * x2;
                        yr[2 * i + 1] = sr[i] * x1 + cr[i] * x2;
                    }
                } else {
                    for (int64_t i = 0; i < half; i++) {
                        float x1 = xr[i], x2 = xr[i + half];
                        yr[i] = cr[i] * x1 - sr[i] * x2;
                        yr[i + half] = sr[i] * x1 + cr[i] * x2;
                    }
                }
                if (yr != xr && R < D) memcpy(yr + R, xr + R, (size_t)(D - R) * sizeof *yr);
            }
            for (int64_t h = 0; !f32 && h < H; h++) {
                int64_t off = x->rank == 4 ? ((b * H + h) * S + s) * D : ((b * S + s) * H + h) * D;
                gwr_ku_load_f64(x, off, D, row);
                for (int64_t i = 0; i < half; i++) {
                    int64_t i1 = il ? 2 * i : i, i2 = il ? 2 * i + 1 : i + half;
                    double c = gwr_v_get_f64(cs, p * half + i), si = gwr_v_get_f64(sn, p * half + i);
                    double x1 = row[i1], x2 = row[i2];
                    row[i1] = c * x1 - si * x2;
                    row[i2] = si * x1 + c * x2;
                }
                gwr_ku_store_f64(y, off, D, row);
            }
        }
    gwr_free(row);
    return st;
}

static gwr_status k_rotary_embedding(gwr_kctx *k) { return rotary(k, 0, 1, 2, 3); }

static gwr_status k_ms_rotary_embedding(gwr_kctx *k) {
    if (gwr_k_float(k, "scale", 1.0f) != 1.0f || gwr_k_int(k, "is_packed_batching", 0))
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "com.microsoft RotaryEmbedding: scale other than 1 and packed batching are not supported");
    if (k->nin < 4 || !k->in[1]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "com.microsoft RotaryEmbedding needs position_ids");
    return rotary(k, 0, 2, 3, 1);
}

const gwr_kernel_entry gwr_kernels_rotary[] = {
    /* at every opset: fuse_rotary emits it into older models for target gwr */
    GWR_KERNEL(RotaryEmbedding, k_rotary_embedding, .first_opset = 1),
    GWR_KERNEL_CUSTOM("com.microsoft", "RotaryEmbedding", k_ms_rotary_embedding),
    {.fn = NULL},
};
