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

const gwr_kernel_entry gwr_kernels_attention[] = {
    GWR_KERNEL(MS_MultiHeadAttention, k_multi_head_attention, .flags = GWR_KF_BLAS),
    GWR_KERNEL(MS_Attention, k_attention, .flags = GWR_KF_BLAS, .prepare = gwr_ku_mm_prepare,
               .prep_free = gwr_ku_mm_prep_free),
    {.fn = NULL},
};
