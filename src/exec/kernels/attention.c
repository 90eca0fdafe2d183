/* attention.c - kernels of the attention ops: com.microsoft
 * MultiHeadAttention, as onnxruntime's CPU contrib kernel computes it
 * (schema: onnxruntime docs/ContribOperators.md).
 *
 *   q = query + bias[0:H], k = key + bias[H:2H], v = value + bias[2H:2H+Hv]
 *   per batch b and head h (head_size D = H / num_heads, Dv = Hv / num_heads):
 *     scores = scale * q_bh k_bh^T + attention_bias[b or 0, h or 0]   (S x T)
 *     out_bh = softmax(scores, last axis) v_bh                          (S x Dv)
 *   output (B, S, Hv): the heads side by side.
 * scale defaults to 1/sqrt(D). The softmax is exp(x - max) / sum, in
 * float32 with fast_exp_small where the row's maximum is finite: a row whose
 * scores are all -inf gives NaN, as ONNX Softmax does on the unfused graph
 * (and onnxruntime's kernel). The two
 * products of each head are one sgemm each, reading q, k and v in place
 * through their row strides; float32 inputs are read in place (q, k and v
 * copied only to add a bias), float16 and bfloat16 widened to float32, and
 * Attention's weights widened once at planning (gemm_prep.c). A head's
 * scores are one [S, T] block (cache-sized for the models here) whose rows
 * each take the bias add and the softmax in one visit.
 * Supported: the 3-D query, key and value form with optional bias and
 * attention_bias, which is what fuse_attention emits. The packed forms,
 * key_padding_mask, the past and cache inputs, unidirectional and the
 * present/qk outputs are refused with a message. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The softmax rows vectorize (GCC's -O2 cost model vectorizes almost none). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "no-trapping-math")
#endif

/* after the pragma: its inline functions take its options */
#include "exec/kernels/fast_math.h"
#include "exec/blas.h"
#include "exec/kernels/kernel_util.h"

typedef struct mha_dims {
    int64_t B, S, T, H, Hv, nh, D, Dv;
    int64_t ab0, ab1; /* attention_bias's batch and head extents (0: absent) */
} mha_dims;

static const char *const mha_inputs[] = {"query", "key", "value", "bias", "key_padding_mask", "attention_bias",
                                         "past_key", "past_value", "past_sequence_length", "cache_indirection"};

/* attention_bias (may be NULL) against d, and the sizes BLAS takes. */
static gwr_status mha_check_bias(gwr_kctx *k, const gwr_value *ab, mha_dims *d) {
    char t1[96];
    d->ab0 = d->ab1 = 0;
    if (ab) {
        gwr_value_type_str(ab, t1, sizeof t1);
        if (ab->rank != 4 || (ab->dims[0] != 1 && ab->dims[0] != d->B) || (ab->dims[1] != 1 && ab->dims[1] != d->nh) ||
            ab->dims[2] != d->S || ab->dims[3] != d->T)
            return gwr_k_fail(k, GWR_ERR_SHAPE, "attention_bias must be (%lld or 1, %lld or 1, %lld, %lld), got %s",
                              (long long)d->B, (long long)d->nh, (long long)d->S, (long long)d->T, t1);
        d->ab0 = ab->dims[0], d->ab1 = ab->dims[1];
    }
    int64_t big = INT64_C(1) << 31;
    if (!gwr_ku_fits_int(d->S) || !gwr_ku_fits_int(d->T) || !gwr_ku_fits_int(3 * d->H + d->Hv) ||
        gwr_ku_mul_max(d->S, d->T, big) < 0)
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "sizes too large");
    return GWR_OK;
}

/* The supported form, checked; dims into *d. */
static gwr_status mha_check(gwr_kctx *k, mha_dims *d) {
    for (int i = 0; i < k->nin; i++)
        if (k->in[i] && (i == 4 || i >= 6))
            return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "input %d (%s) is not supported", i, mha_inputs[i]);
    for (int i = 1; i < k->nout; i++)
        if (gwr_k_out_used(k, i)) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "output %d (present/qk) is not supported", i);
    if (gwr_k_int(k, "unidirectional", 0)) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "unidirectional is not supported");
    const gwr_value *q = gwr_ku_opt(k, 0), *key = gwr_ku_opt(k, 1), *v = gwr_ku_opt(k, 2);
    const gwr_value *bias = gwr_ku_opt(k, 3), *ab = gwr_ku_opt(k, 5);
    if (!q || !key || !v) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "needs query, key and value (packed forms are not supported)");
    char t1[96], t2[96], t3[96];
    gwr_value_type_str(q, t1, sizeof t1), gwr_value_type_str(key, t2, sizeof t2), gwr_value_type_str(v, t3, sizeof t3);
    if (q->dtype != GWR_FLOAT32 && !gwr_ku_is_half(q->dtype))
        return gwr_k_fail(k, GWR_ERR_TYPE, "query must be float, float16 or bfloat16, got %s", t1);
    if (key->dtype != q->dtype || v->dtype != q->dtype || (bias && bias->dtype != q->dtype) || (ab && ab->dtype != q->dtype))
        return gwr_k_fail(k, GWR_ERR_TYPE, "every float input must have query's dtype %s", gwr_dtype_name(q->dtype));
    if (q->rank != 3 || key->rank != 3 || v->rank != 3 || key->dims[0] != q->dims[0] || v->dims[0] != q->dims[0] ||
        v->dims[1] != key->dims[1] || key->dims[2] != q->dims[2])
        return gwr_k_fail(k, GWR_ERR_SHAPE, "query %s, key %s, value %s must be (B, S, H), (B, T, H), (B, T, Hv)", t1, t2, t3);
    d->nh = gwr_k_int(k, "num_heads", 0);
    d->B = q->dims[0], d->S = q->dims[1], d->T = key->dims[1], d->H = q->dims[2], d->Hv = v->dims[2];
    if (d->nh <= 0 || d->H % d->nh || d->Hv % d->nh)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "num_heads %lld must be positive and divide %lld and %lld", (long long)d->nh,
                          (long long)d->H, (long long)d->Hv);
    d->D = d->H / d->nh, d->Dv = d->Hv / d->nh;
    if (bias && (bias->rank != 1 || bias->dims[0] != 2 * d->H + d->Hv)) {
        gwr_value_type_str(bias, t1, sizeof t1);
        return gwr_k_fail(k, GWR_ERR_SHAPE, "bias must be [%lld], got %s", (long long)(2 * d->H + d->Hv), t1);
    }
    return mha_check_bias(k, ab, d);
}

/* Input i as float32: its own data when it is float32 (*own 0), else a
 * widened copy (*own 1); NULL after gwr_k_fail. */
static float *f32_of(gwr_kctx *k, const gwr_value *v, int *own) {
    *own = v->dtype != GWR_FLOAT32;
    if (!*own) return v->data;
    float *f = gwr_ku_widen(v);
    if (!f) gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    return f;
}

/* A float32 copy of input i plus its slice of the bias (columns off..off+w
 * of each row); NULL after gwr_k_fail. */
static float *mha_load(gwr_kctx *k, int i, const float *bias, int64_t off, int64_t w) {
    const gwr_value *x = k->in[i];
    float *f = gwr_ku_widen(x);
    if (!f) {
        gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
        return NULL;
    }
    if (bias)
        for (int64_t r = 0; r < x->numel / (w ? w : 1); r++)
            for (int64_t j = 0; j < w; j++) f[r * w + j] += bias[off + j];
    return f;
}

/* One row: a finite maximum takes the vectorized float32 way; NaN or an
 * infinite maximum (a row that sees no key: all -inf) the plain formula in
 * double, NaN as in ONNX Softmax. */
GWR_VEC_CLONES static void mha_row(float *restrict row, int64_t T) {
    float mx = -INFINITY, lane[8];
    int nan = 0, bad[8] = {0};
    int64_t j0 = 0;
    for (int q = 0; q < 8; q++) lane[q] = -INFINITY;
    for (; j0 + 8 <= T; j0 += 8) /* eight lanes: the loop vectorizes */
        for (int q = 0; q < 8; q++) {
            lane[q] = row[j0 + q] > lane[q] ? row[j0 + q] : lane[q];
            bad[q] |= row[j0 + q] != row[j0 + q];
        }
    for (int64_t j = j0; j < T; j++) mx = row[j] > mx ? row[j] : mx, nan |= row[j] != row[j];
    for (int q = 0; q < 8; q++) mx = lane[q] > mx ? lane[q] : mx, nan |= bad[q];
    if (nan || !isfinite(mx)) {
        double m = nan ? NAN : mx, sum = 0;
        for (int64_t j = 0; j < T; j++) sum += exp((double)row[j] - m);
        for (int64_t j = 0; j < T; j++) row[j] = (float)(exp((double)row[j] - m) / sum);
        return;
    }
    float sum = 0, acc[8] = {0};
    for (int64_t j = 0; j < T; j++) row[j] = fast_exp_small(row[j] - mx); /* <= 0: no overflow to handle */
    for (j0 = 0; j0 + 8 <= T; j0 += 8)
        for (int q = 0; q < 8; q++) acc[q] += row[j0 + q];
    for (int64_t j = j0; j < T; j++) sum += row[j];
    for (int q = 0; q < 8; q++) sum += acc[q];
    float inv = 1.0f / sum;
    for (int64_t j = 0; j < T; j++) row[j] *= inv;
}

/* Adds the attention bias row block and turns each of the S rows of p (T
 * wide) into its softmax: one row at a time, so that the bias add, the
 * maximum, exp, the sum and the scaling all find the row in cache (mha_row
 * compiled per CPU: the clones of a caller do not inline it). */
static void mha_softmax(float *p, int64_t S, int64_t T, const float *ab) {
    for (int64_t i = 0; i < S; i++) {
        float *restrict row = p + i * T;
        if (ab)
            for (int64_t j = 0; j < T; j++) row[j] += ab[i * T + j];
        mha_row(row, T);
    }
}

/* float32 rows of q, k or v: batch b's first row is row b*S (or b*T),
 * rows ld apart, head h at column h*D. */
typedef struct mha_rows {
    const float *p;
    int ld;
} mha_rows;

/* The heads' loop: one index a (batch, head) pair; p holds S*T scratch
 * per thread. */
typedef struct mha_loop {
    const mha_dims *d;
    float scale;
    mha_rows q, k, v;
    const float *ab;
    float *p, *out;
} mha_loop;

/* Pairs [i0, i1): softmax(scale q k^T + ab) v into out (rows Hv apart). */
static void mha_range(void *ctx, int64_t i0, int64_t i1) {
    const mha_loop *l = ctx;
    const mha_dims *d = l->d;
    int S = (int)d->S, T = (int)d->T, D = (int)d->D, Dv = (int)d->Dv, Hv = (int)d->Hv;
    float *p = l->p + (int64_t)gwr_par_thread() * d->S * d->T;
    for (int64_t i = i0; i < i1; i++) {
        int64_t b = i / d->nh, h = i % d->nh;
        gwr_ku_sgemm(0, 1, S, T, D, l->scale, l->q.p + b * d->S * l->q.ld + h * D, l->q.ld,
                     l->k.p + b * d->T * l->k.ld + h * D, l->k.ld, 0.0f, p, T);
        const float *abh = l->ab ? l->ab + ((d->ab0 > 1 ? b : 0) * d->ab1 + (d->ab1 > 1 ? h : 0)) * d->S * d->T : NULL;
        mha_softmax(p, d->S, d->T, abh);
        gwr_ku_sgemm(0, 0, S, Dv, T, 1.0f, p, T, l->v.p + b * d->T * l->v.ld + h * Dv, l->v.ld, 0.0f,
                     l->out + b * d->S * Hv + h * Dv, Hv);
    }
}

/* The loop's grain: a pair is two products and a softmax. */
static int64_t mha_grain(const mha_dims *d) { return gwr_par_grain(d->S * d->T * (d->D + d->Dv + 4) / 4); }

/* Threads the heads run on: p needs S*T floats for each. */
static int mha_threads(gwr_kctx *k, const mha_dims *d) {
    return gwr_tpool_splits(k->tpool, d->B * d->nh, mha_grain(d)) ? gwr_tpool_size(k->tpool) : 1;
}

/* Every batch and head. Heads on several threads each call OpenBLAS
 * with one thread (gwr_blas_loop_begin, in the pool: the heads' products
 * are small, and two OpenBLAS teams on two cores would fight). */
static void mha_heads(gwr_kctx *k, const mha_dims *d, float scale, mha_rows q, mha_rows kr, mha_rows v,
                      const float *ab, float *p, float *out) {
    mha_loop l = {d, scale, q, kr, v, ab, p, out};
    gwr_blas_threads(k->threads);
    gwr_k_parallel(k, d->B * d->nh, mha_grain(d), mha_range, &l);
}

static gwr_status k_multi_head_attention(gwr_kctx *k) {
    mha_dims d = {0};
    gwr_status st = mha_check(k, &d);
    if (st) return st;
    float scale = gwr_k_float(k, "scale", 0.0f);
    if (scale == 0.0f) scale = (float)(1.0 / sqrt((double)d.D));
    int64_t od[3] = {d.B, d.S, d.Hv};
    gwr_value *y = gwr_k_out(k, 0, k->in[0]->dtype, 3, od);
    if (!y) return GWR_ERR_NOMEM;
    const gwr_value *bv = gwr_ku_opt(k, 3), *abv = gwr_ku_opt(k, 5);
    float *bias = bv ? gwr_ku_widen(bv) : NULL, *ab = NULL;
    float *q = NULL, *kk = NULL, *v = NULL, *p = NULL, *o = NULL;
    int oab = 0, own = bias || k->in[0]->dtype != GWR_FLOAT32; /* q, k, v copies (else read in place) */
    if ((bv && !bias) || (abv && !(ab = f32_of(k, abv, &oab)))) st = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    if (!st && own &&
        (!(q = mha_load(k, 0, bias, 0, d.H)) || !(kk = mha_load(k, 1, bias, d.H, d.H)) ||
         !(v = mha_load(k, 2, bias, 2 * d.H, d.Hv))))
        st = GWR_ERR_NOMEM;
    if (!st && !own) q = k->in[0]->data, kk = k->in[1]->data, v = k->in[2]->data;
    if (!st && !(p = gwr_ku_scratch(k, mha_threads(k, &d) * d.S * d.T, sizeof *p))) st = GWR_ERR_NOMEM;
    if (!st && y->dtype != GWR_FLOAT32 && !(o = gwr_ku_scratch(k, y->numel, sizeof *o))) st = GWR_ERR_NOMEM;
    if (!st) {
        mha_heads(k, &d, scale, (mha_rows){q, (int)d.H}, (mha_rows){kk, (int)d.H}, (mha_rows){v, (int)d.Hv}, ab, p,
                  o ? o : (float *)y->data);
        if (o) gwr_ku_narrow(o, y);
    }
    if (own) gwr_free(q), gwr_free(kk), gwr_free(v);
    if (oab) gwr_free(ab);
    gwr_free(bias), gwr_free(p), gwr_free(o);
    return st;
}

/* ---- com.microsoft Attention: the projection, then the heads ---- */

static const char *const att_inputs[] = {"input", "weights", "bias", "mask_index", "past", "attention_bias",
                                         "past_sequence_length"};

/* The supported form of Attention, checked; dims into *d. */
static gwr_status att_check(gwr_kctx *k, mha_dims *d) {
    for (int i = 3; i < k->nin; i++)
        if (k->in[i] && i != 5) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "input %d (%s) is not supported", i, att_inputs[i]);
    if (k->nout > 1 && gwr_k_out_used(k, 1)) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "output 1 (present) is not supported");
    if (gwr_k_int(k, "unidirectional", 0) || gwr_k_int(k, "do_rotary", 0) || gwr_k_int(k, "past_present_share_buffer", 0))
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "unidirectional, do_rotary and past_present_share_buffer are not supported");
    const gwr_value *x = gwr_ku_opt(k, 0), *w = gwr_ku_opt(k, 1), *bias = gwr_ku_opt(k, 2), *ab = gwr_ku_opt(k, 5);
    if (!x || !w) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "needs input and weights");
    char t1[96], t2[96];
    gwr_value_type_str(x, t1, sizeof t1), gwr_value_type_str(w, t2, sizeof t2);
    if (x->dtype != GWR_FLOAT32 && !gwr_ku_is_half(x->dtype))
        return gwr_k_fail(k, GWR_ERR_TYPE, "input must be float, float16 or bfloat16, got %s", t1);
    if (w->dtype != x->dtype || (bias && bias->dtype != x->dtype) || (ab && ab->dtype != x->dtype))
        return gwr_k_fail(k, GWR_ERR_TYPE, "every float input must have the input's dtype %s", gwr_dtype_name(x->dtype));
    if (x->rank != 3 || w->rank != 2 || w->dims[0] != x->dims[2])
        return gwr_k_fail(k, GWR_ERR_SHAPE, "input %s and weights %s must be (B, S, In) and (In, W)", t1, t2);
    const int64_t *hs;
    int64_t W = w->dims[1], nhs = gwr_k_ints(k, "qkv_hidden_sizes", &hs);
    d->B = x->dims[0], d->S = d->T = x->dims[1], d->nh = gwr_k_int(k, "num_heads", 0);
    d->H = d->Hv = W / 3;
    if (nhs > 0) {
        if (nhs != 3 || hs[0] != hs[1] || hs[0] < 0 || hs[2] < 0)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "qkv_hidden_sizes must be three sizes, q's and k's equal");
        d->H = hs[0], d->Hv = hs[2];
    }
    if (2 * d->H + d->Hv != W || d->nh <= 0 || d->H % d->nh || d->Hv % d->nh)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "weights %s do not hold q, k, v of num_heads %lld heads", t2, (long long)d->nh);
    d->D = d->H / d->nh, d->Dv = d->Hv / d->nh;
    if (bias && (bias->rank != 1 || bias->dims[0] != W)) {
        gwr_value_type_str(bias, t1, sizeof t1);
        return gwr_k_fail(k, GWR_ERR_SHAPE, "bias must be [%lld], got %s", (long long)W, t1);
    }
    if (!gwr_ku_fits_int(x->dims[2]) || !gwr_ku_fits_int(d->B * d->S)) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "sizes too large");
    return mha_check_bias(k, ab, d);
}

static gwr_status k_attention(gwr_kctx *k) {
    mha_dims d = {0};
    gwr_status st = att_check(k, &d);
    if (st) return st;
    float scale = gwr_k_float(k, "scale", 0.0f);
    if (scale == 0.0f) scale = (float)(1.0 / sqrt((double)d.D));
    int64_t od[3] = {d.B, d.S, d.Hv}, W = 2 * d.H + d.Hv, In = k->in[0]->dims[2], rows = d.B * d.S;
    gwr_value *y = gwr_k_out(k, 0, k->in[0]->dtype, 3, od);
    if (!y) return GWR_ERR_NOMEM;
    const gwr_value *bv = gwr_ku_opt(k, 2), *abv = gwr_ku_opt(k, 5);
    const gwr_mm_prep *pw = gwr_ku_mm_prep(k, k->in[1]); /* weights widened at planning */
    /* float32 operands are read in place; the others widened (own*) */
    int ox = 0, ow = 0, ob = 0, oab = 0;
    float *x = f32_of(k, k->in[0], &ox), *w = pw ? pw->b : x ? f32_of(k, k->in[1], &ow) : NULL;
    float *bias = bv && w ? f32_of(k, bv, &ob) : NULL, *ab = abv && w && (bias || !bv) ? f32_of(k, abv, &oab) : NULL;
    float *qkv = NULL, *p = NULL, *o = NULL;
    if (!x || !w || (bv && !bias) || (abv && !ab)) st = GWR_ERR_NOMEM;
    if (!st && !(qkv = gwr_ku_scratch(k, rows * W, sizeof *qkv))) st = GWR_ERR_NOMEM;
    if (!st && !(p = gwr_ku_scratch(k, mha_threads(k, &d) * d.S * d.T, sizeof *p))) st = GWR_ERR_NOMEM;
    if (!st && y->dtype != GWR_FLOAT32 && !(o = gwr_ku_scratch(k, y->numel, sizeof *o))) st = GWR_ERR_NOMEM;
    if (!st) {
        gwr_blas_threads(k->threads);
        if (bias) /* the product accumulates onto the bias rows: no second sweep */
            for (int64_t r = 0; r < rows; r++) memcpy(qkv + r * W, bias, (size_t)W * sizeof *qkv);
        gwr_ku_sgemm(0, 0, (int)rows, (int)W, (int)In, 1.0f, x, (int)In, w, (int)W, bias ? 1.0f : 0.0f, qkv, (int)W);
        mha_heads(k, &d, scale, (mha_rows){qkv, (int)W}, (mha_rows){qkv + d.H, (int)W}, (mha_rows){qkv + 2 * d.H, (int)W}, ab,
                  p, o ? o : (float *)y->data);
        if (o) gwr_ku_narrow(o, y);
    }
    if (ox) gwr_free(x);
    if (ow) gwr_free(w);
    if (ob) gwr_free(bias);
    if (oab) gwr_free(ab);
    gwr_free(qkv), gwr_free(p), gwr_free(o);
    return st;
}

/* ---- Attention (ONNX opset 23 and 24): the reference -------------------------- */

/* attention_cache.c registers the Attention kernel: its float32 path runs the
 * decoder forms, and it calls this (gwr_ku_attention_ref) for the rest. */

/* Q (B, qh, S, Dh), K (B, kvh, L, Dh), V (B, kvh, L, Dv), or the 3-D (B, S,
 * qh * Dh) forms with q_num_heads and kv_num_heads; past_key and past_value
 * (B, kvh, P, D*) go before K and V (T = P + L keys, written to present_key
 * and present_value). Query head h reads key head h / (qh / kvh) (GQA). Per
 * query row: s_j = scale * q.k_j (scale 1/sqrt(Dh) by default); softcap c >
 * 0 makes it c * tanh(s_j / c); the bias (attn_mask, bool: false is -inf,
 * float: added, right-aligned broadcast to (B, qh, S, T), keys past its
 * last dim -inf; is_causal: -inf where j > i + offset, offset P, or
 * nonpad_kv_seqlen[b] - S without a past; nonpad_kv_seqlen: -inf where j >=
 * nonpad_kv_seqlen[b]; opset 25's left_window_size and right_window_size
 * when >= 0: -inf where j < i + offset - left or j > i + offset + right)
 * is added, softmax, times V. A row whose bias is -inf
 * everywhere gives zeros. qk_matmul_output: the scaled product (mode 0),
 * after the softcap (1), after the bias (2) or the probabilities (3). Naive
 * loops in double (softmax_precision is at least met); bfloat16 rounds its
 * intermediates as onnx's reference does (Y matches its test data). */
typedef struct onnx_att {
    int64_t B, qh, kvh, S, L, P, T, Dh, Dv;
    int r3; /* 3-D Q, K, V */
} onnx_att;

/* Element (b, h, s, d) of a (B, H, N, D) tensor, or of its 3-D (B, N, H * D) form. */
static int64_t att_at(int r3, int64_t H, int64_t N, int64_t D, int64_t b, int64_t h, int64_t s, int64_t d) {
    return r3 ? ((b * N + s) * H + h) * D + d : ((b * H + h) * N + s) * D + d;
}

static gwr_status onnx_att_dims(gwr_kctx *k, const gwr_value *const *in, onnx_att *a) {
    const gwr_value *q = in[0], *kk = in[1], *v = in[2], *pk = in[4], *pv = in[5];
    int64_t qnh = gwr_k_int(k, "q_num_heads", 0), knh = gwr_k_int(k, "kv_num_heads", 0);
    if (q->rank != kk->rank || q->rank != v->rank || (q->rank != 3 && q->rank != 4))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "Q, K and V must all be 3-D or all 4-D");
    a->r3 = q->rank == 3;
    a->B = q->dims[0];
    if (a->r3) {
        if (qnh <= 0 || knh <= 0 || q->dims[2] % qnh || kk->dims[2] % knh || v->dims[2] % knh)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "3-D Q, K and V need q_num_heads and kv_num_heads dividing their hidden sizes");
        a->qh = qnh, a->kvh = knh, a->S = q->dims[1], a->L = kk->dims[1];
        a->Dh = q->dims[2] / qnh, a->Dv = v->dims[2] / knh;
        if (kk->dims[2] / knh != a->Dh) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "Q and K head sizes differ");
    } else {
        a->qh = q->dims[1], a->kvh = kk->dims[1], a->S = q->dims[2], a->L = kk->dims[2];
        a->Dh = q->dims[3], a->Dv = v->dims[3];
        if (kk->dims[3] != a->Dh || v->dims[1] != a->kvh)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "Q, K and V head counts or sizes do not fit");
    }
    if (kk->dims[0] != a->B || v->dims[0] != a->B || v->dims[a->r3 ? 1 : 2] != a->L)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "K and V must share the batch and the sequence length");
    if (a->kvh <= 0 || a->qh % a->kvh)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "q heads (%lld) must be a multiple of kv heads (%lld)", (long long)a->qh,
                          (long long)a->kvh);
    a->P = 0;
    if (!pk != !pv) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "past_key and past_value go together");
    if (pk) {
        if (pk->rank != 4 || pv->rank != 4 || pk->dims[0] != a->B || pk->dims[1] != a->kvh || pk->dims[3] != a->Dh ||
            pv->dims[0] != a->B || pv->dims[1] != a->kvh || pv->dims[2] != pk->dims[2] || pv->dims[3] != a->Dv)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "past_key and past_value must be (batch, kv_heads, past, head_size)");
        a->P = pk->dims[2];
    }
    a->T = a->P + a->L;
    return GWR_OK;
}

/* The (B, kvh, T, D) present tensor of past (or none) and cur into dst. */
static void att_present(const onnx_att *a, const gwr_value *past, const gwr_value *cur, int64_t D, double *dst) {
    for (int64_t b = 0; b < a->B; b++)
        for (int64_t h = 0; h < a->kvh; h++)
            for (int64_t t = 0; t < a->T; t++) {
                double *o = dst + ((b * a->kvh + h) * a->T + t) * D;
                if (t < a->P) gwr_ku_load_f64(past, ((b * a->kvh + h) * a->P + t) * D, D, o);
                else gwr_ku_load_f64(cur, att_at(a->r3, a->kvh, a->L, D, b, h, t - a->P, 0), D, o);
            }
}

/* x rounded to the half type t (bfloat16, float16); other types: x. */
static double att_rnd(gwr_dtype t, double x) { return gwr_ku_is_half(t) ? gwr_ku_round(t, x) : x; }

gwr_status gwr_ku_attention_ref(gwr_kctx *k) {
    const gwr_value *in[7] = {0};
    for (int i = 0; i < 7; i++) in[i] = gwr_ku_opt(k, i);
    static const char *const names[] = {"Q", "K", "V"};
    for (int i = 0; i < 3; i++)
        if (!gwr_ku_need_float(k, i, names[i])) return GWR_ERR_INVALID_ARG;
    onnx_att a;
    gwr_status st = onnx_att_dims(k, in, &a);
    if (st) return st;
    const gwr_value *m = in[3], *nonpad = in[6];
    int64_t mdim[4] = {1, 1, 1, 1}, mst[4] = {0, 0, 0, 0}, Lm = 0;
    if (m) {
        if (m->rank < 1 || m->rank > 4 || (m->dtype != GWR_BOOL && m->dtype != in[0]->dtype))
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attn_mask must be bool or Q's dtype, of rank 1 to 4");
        int64_t want[4] = {a.B, a.qh, a.S, a.T}, sd = 1;
        for (int i = 3; i >= 0; i--) {
            int j = i - (4 - m->rank);
            mdim[i] = j >= 0 ? m->dims[j] : 1;
            if (i < 3 && mdim[i] != 1 && mdim[i] != want[i])
                return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attn_mask does not broadcast to (batch, heads, q_seq, total_seq)");
            mst[i] = mdim[i] == 1 && i < 3 ? 0 : sd;
            sd *= mdim[i];
        }
        Lm = mdim[3];
        if (Lm > a.T) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attn_mask's last dim %lld exceeds total_seq %lld", (long long)Lm,
                                        (long long)a.T);
    }
    if (nonpad && (a.P || !gwr_ku_is_int(nonpad->dtype) || nonpad->numel != a.B))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "nonpad_kv_seqlen must be (batch,) integers, without past_key");
    int causal = gwr_k_int(k, "is_causal", 0) != 0;
    int64_t lw = gwr_k_int(k, "left_window_size", -1), rw = gwr_k_int(k, "right_window_size", -1);
    int64_t mode = gwr_k_int(k, "qk_matmul_output_mode", 0);
    double softcap = gwr_k_float(k, "softcap", 0.0f);
    double scale = gwr_k_float(k, "scale", NAN);
    if (isnan(scale)) scale = 1.0 / sqrt((double)a.Dh);
    if (mode < 0 || mode > 3) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "qk_matmul_output_mode %lld is not 0 to 3", (long long)mode);
    gwr_dtype dt = in[0]->dtype;
    int64_t yd[4] = {a.B, a.qh, a.S, a.Dv}, y3[3] = {a.B, a.S, a.qh * a.Dv};
    int64_t kd[4] = {a.B, a.kvh, a.T, a.Dh}, vd[4] = {a.B, a.kvh, a.T, a.Dv}, qd[4] = {a.B, a.qh, a.S, a.T};
    gwr_value *y = gwr_k_out(k, 0, dt, a.r3 ? 3 : 4, a.r3 ? y3 : yd), *pko = NULL, *pvo = NULL, *qko = NULL;
    if (!y) return GWR_ERR_NOMEM;
    if (k->nout > 1 && gwr_k_out_used(k, 1) && !(pko = gwr_k_out(k, 1, dt, 4, kd))) return GWR_ERR_NOMEM;
    if (k->nout > 2 && gwr_k_out_used(k, 2) && !(pvo = gwr_k_out(k, 2, dt, 4, vd))) return GWR_ERR_NOMEM;
    if (k->nout > 3 && gwr_k_out_used(k, 3) && !(qko = gwr_k_out(k, 3, dt, 4, qd))) return GWR_ERR_NOMEM;
    int64_t nk = a.B * a.kvh * a.T;
    double *buf = gwr_ku_scratch(k, nk * (a.Dh + a.Dv) + a.Dh + a.Dv + 2 * a.T + 1, sizeof *buf);
    if (!buf) return GWR_ERR_NOMEM;
    double *K = buf, *V = K + nk * a.Dh, *qr = V + nk * a.Dv, *acc = qr + a.Dh, *raw = acc + a.Dv, *p = raw + a.T;
    att_present(&a, in[4], in[1], a.Dh, K);
    att_present(&a, in[5], in[2], a.Dv, V);
    if (pko) gwr_ku_store_f64(pko, 0, nk * a.Dh, K);
    if (pvo) gwr_ku_store_f64(pvo, 0, nk * a.Dv, V);
    int64_t grp = a.qh / a.kvh;
    /* bfloat16: as onnx's reference (numpy with ml_dtypes), Q and K times sqrt(scale) rounded
     * to bfloat16, and the scores, the biased scores, each softmax step and each partial sum
     * (float16 passes in double: numpy sums it in float32) */
    int half = dt == GWR_BFLOAT16;
    double rs = att_rnd(dt, sqrt(scale));
#define R(x) (half ? att_rnd(dt, (x)) : (x))
    for (int64_t b = 0; b < a.B; b++) {
        int64_t off = a.P, valid = a.T;
        if (nonpad) {
            valid = gwr_v_get_i64(nonpad, b);
            off = valid - a.S;
        }
        for (int64_t h = 0; h < a.qh; h++) {
            const double *Kh = K + (b * a.kvh + h / grp) * a.T * a.Dh, *Vh = V + (b * a.kvh + h / grp) * a.T * a.Dv;
            for (int64_t i = 0; i < a.S; i++) {
                gwr_ku_load_f64(in[0], att_at(a.r3, a.qh, a.S, a.Dh, b, h, i, 0), a.Dh, qr);
                for (int64_t d = 0; half && d < a.Dh; d++) qr[d] = R(qr[d] * rs);
                double mx = -INFINITY, sum = 0;
                int any = 0;
                for (int64_t j = 0; j < a.T; j++) {
                    double sc = 0, bj = 0;
                    if (half) {
                        for (int64_t d = 0; d < a.Dh; d++) sc += qr[d] * R(Kh[j * a.Dh + d] * rs);
                        raw[j] = sc = R(sc);
                    } else {
                        for (int64_t d = 0; d < a.Dh; d++) sc += qr[d] * Kh[j * a.Dh + d];
                        raw[j] = sc *= scale;
                    }
                    if (softcap > 0) sc = softcap * tanh(sc / softcap);
                    if (m) {
                        if (j >= Lm) bj = -INFINITY;
                        else {
                            int64_t mi = b * mst[0] + h * mst[1] + i * mst[2] + j * mst[3];
                            bj = m->dtype == GWR_BOOL ? (((const uint8_t *)m->data)[mi] ? 0 : -INFINITY) : gwr_v_get_f64(m, mi);
                        }
                    }
                    int64_t dif = i + off - j; /* how far key j is before the query's position */
                    if ((causal && dif < 0) || j >= valid || (lw >= 0 && dif > lw) || (rw >= 0 && -dif > rw)) bj = -INFINITY;
                    any |= bj != -INFINITY;
                    p[j] = R(sc + bj);
                    if (qko && mode == 1) raw[j] = sc;
                    if (qko && mode == 2) raw[j] = p[j];
                    if (p[j] > mx) mx = p[j];
                }
                for (int64_t j = 0; j < a.T; j++) sum = R(sum + (p[j] = any && mx != -INFINITY ? R(exp(R(p[j] - mx))) : 0));
                for (int64_t j = 0; j < a.T; j++) p[j] = sum > 0 ? R(p[j] / sum) : 0;
                memset(acc, 0, (size_t)a.Dv * sizeof *acc);
                for (int64_t j = 0; j < a.T; j++)
                    for (int64_t d = 0; d < a.Dv; d++) acc[d] += p[j] * Vh[j * a.Dv + d];
                gwr_ku_store_f64(y, att_at(a.r3, a.qh, a.S, a.Dv, b, h, i, 0), a.Dv, acc);
                if (qko) gwr_ku_store_f64(qko, ((b * a.qh + h) * a.S + i) * a.T, a.T, mode == 3 ? p : raw);
            }
        }
    }
#undef R
    gwr_free(buf);
    return GWR_OK;
}

const gwr_kernel_entry gwr_kernels_attention[] = {
    GWR_KERNEL(MS_MultiHeadAttention, k_multi_head_attention, .flags = GWR_KF_BLAS),
    GWR_KERNEL(MS_Attention, k_attention, .flags = GWR_KF_BLAS, .prepare = gwr_ku_mm_prepare,
               .prep_free = gwr_ku_mm_prep_free),
    {.fn = NULL},
};
