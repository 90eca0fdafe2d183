/* nbits.c - onnxruntime's com.microsoft MatMulNBits (version 1): a float
 * A [..., K] times a weight matrix stored as blockwise-quantized integers
 * of 4 or 8 bits, dequantized inside the kernel:
 *
 *   MatMulNBits(A, B, scales, zero_points?, g_idx?, bias?), attributes K, N,
 *   bits (default 4), block_size (a power of 2, >= 16), accuracy_level
 *   (ignored: A is never quantized here)
 *   W[k][n] = (q[n][k] - zp[n][k / block_size]) * scales[n][k / block_size]
 *   Y = A W + bias
 *
 * B is uint8 [N, k_blocks, blob] (k_blocks = ceil(K / block_size), blob =
 * block_size * bits / 8): column n's K values block by block, for 4 bits
 * two to a byte, the first in the low nibble; a last partial block is
 * padded. scales: N * k_blocks values of A's float type. zero_points:
 * uint8 packed the same way, [N, ceil(k_blocks * bits / 8)] (a row's last
 * byte padded), or A's float type [N, k_blocks]; absent: 2^(bits - 1).
 * g_idx (deprecated) is taken only when it is the trivial k / block_size.
 * bias [N]. Y [..., N] of A's dtype; float16 / bfloat16 A, scales and bias
 * are computed in float32 and Y rounded once.
 *
 * Two paths, each split over the session's threads by columns of Y, so
 * that every element is computed by the same instructions whatever the
 * thread count (the same bits on 1 and N threads):
 *   - few rows (decode-style GEMV, M <= NB_GEMV_ROWS): each column's
 *     blocks are unpacked in registers and multiplied into up to NB_ROWS
 *     rows of A at once with FMA, per block sum_k a_k (q_k - zp) scaled
 *     once (AVX2 where the CPU has it, gwr_ku_cnn_avx2, which
 *     gwr_ku_cnn_force_portable turns off; portable C otherwise);
 *   - more rows: panels of NB_PANEL columns dequantized to float32, W^T
 *     [NB_PANEL, K] with contiguous rows (vectorized like the GEMV), times
 *     A^T packed once per run by sgemm.c: Y^T [NB_PANEL, M], copied into
 *     Y's columns (each panel on one thread: its bits do not depend on the
 *     split; AVX2 and portable dequantization give the same W).
 * A float zero point zf enters as sum_k a_k q_k - zf sum_k a_k in the GEMV
 * path and as (q - zf) * scale in the panels. */
#include "exec/kernels/cnn_isa.h"
#include "exec/kernels/kernel_util.h"
#include "exec/kernels/sgemm.h"
#include "exec/kernels/vec8.h"

#ifdef GWR_VEC8_X86
#include <immintrin.h>
#endif

enum { NB_GEMV_ROWS = 8, NB_ROWS = 4, NB_PANEL = 96 };

typedef struct nb_job {
    const float *a;    /* [M, K] */
    const float *ap;   /* [M, kp]: A's rows zero-padded to whole blocks (== a when K is) */
    const float *asum; /* [M, kb]: sums of A over each block (float zero points only) */
    const uint8_t *b;  /* [N, kb, blob] */
    const float *sc;   /* [N, kb] */
    const uint8_t *zq; /* [N, kb]: integer zero points (0 with float ones) */
    const float *zf;   /* [N, kb]: float zero points; NULL: integer ones */
    const float *bias; /* [N] or NULL */
    float *y;          /* [M, N] */
    float *wbuf;       /* panels, per thread: W^T [NB_PANEL, kp] and Y^T [NB_PANEL, M] */
    const gwr_sgemm_pack *at; /* panels: A^T [K, M] packed */
    int64_t M, K, N, kp;
    int kb, bs, bits, blob, avx2;
} nb_job;

/* ---- GEMV: one column against one row of A --------------------------------- */

/* sum over blocks of sc * sum_k a_k (q_k - z) for column n (no bias, no float zp). */
static float col_c(const nb_job *j, const float *a, int64_t n) {
    const uint8_t *bc = j->b + n * j->kb * j->blob, *zq = j->zq + n * j->kb;
    const float *sc = j->sc + n * j->kb;
    float acc = 0.0f;
    for (int b = 0; b < j->kb; b++) {
        const uint8_t *q = bc + (size_t)b * j->blob;
        const float *x = a + (size_t)b * j->bs;
        int z = zq[b];
        float l[8] = {0};
        if (j->bits == 4) {
            for (int k = 0; k < j->bs; k += 8)
                for (int i = 0; i < 8; i++) {
                    int e = k + i;
                    l[i] += x[e] * (float)(((q[e >> 1] >> ((e & 1) * 4)) & 15) - z);
                }
        } else {
            for (int k = 0; k < j->bs; k += 8)
                for (int i = 0; i < 8; i++) l[i] += x[k + i] * (float)(q[k + i] - z);
        }
        acc += sc[b] * (((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7])));
    }
    return acc;
}

#ifdef GWR_VEC8_X86
/* The loops over rows fully unrolled, so that each row's sums live in registers. */
#define NB_UNROLL _Pragma("GCC unroll 4")
/* col_c for R rows of A at once (kp apart; R <= NB_ROWS a compile-time
 * constant in each instance), each block unpacked once for all of them,
 * into out[R]. */
GWR_AVX2_FN static inline __attribute__((always_inline)) void cols_avx2(const nb_job *j, const float *a, int R, int64_t n, float *out) {
    const uint8_t *bc = j->b + n * j->kb * j->blob, *zq = j->zq + n * j->kb;
    const float *sc = j->sc + n * j->kb;
    __m256 acc[NB_ROWS], s0[NB_ROWS], s1[NB_ROWS];
    NB_UNROLL for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();
    const __m128i m4 = _mm_set1_epi8(15);
    for (int b = 0; b < j->kb; b++) {
        const uint8_t *q = bc + (size_t)b * j->blob;
        const float *x = a + (size_t)b * j->bs;
        NB_UNROLL for (int r = 0; r < R; r++) s0[r] = s1[r] = _mm256_setzero_ps();
/* one row: two chains of sums (s0, s1) hide the FMA latency; more rows
 * are chains enough, and one sum each (S1 is s0) leaves the registers to
 * the accumulators */
#define S1 (R > 1 ? s0 : s1)
#define NB_FMA(f, off, s)                                                                                \
    NB_UNROLL for (int r = 0; r < R; r++) s[r] = _mm256_fmadd_ps(f, _mm256_loadu_ps(x + (size_t)r * j->kp + k + (off)), s[r]);
        if (j->bits == 4) {
            const __m128i zv = _mm_set1_epi8((char)zq[b]);
            int k = 0;
            for (; k + 32 <= j->bs; k += 32) { /* 16 bytes: 32 values */
                __m128i v = _mm_loadu_si128((const __m128i *)(q + k / 2));
                __m128i lo = _mm_and_si128(v, m4), hi = _mm_and_si128(_mm_srli_epi16(v, 4), m4);
                __m128i e0 = _mm_sub_epi8(_mm_unpacklo_epi8(lo, hi), zv), e1 = _mm_sub_epi8(_mm_unpackhi_epi8(lo, hi), zv);
                __m256 f0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(e0));
                __m256 f1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(e0, e0)));
                __m256 f2 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(e1));
                __m256 f3 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(e1, e1)));
                NB_FMA(f0, 0, s0) NB_FMA(f1, 8, S1) NB_FMA(f2, 16, s0) NB_FMA(f3, 24, S1)
            }
            for (; k < j->bs; k += 16) { /* block_size 16: 8 bytes */
                __m128i v = _mm_loadl_epi64((const __m128i *)(q + k / 2));
                __m128i lo = _mm_and_si128(v, m4), hi = _mm_and_si128(_mm_srli_epi16(v, 4), m4);
                __m128i e0 = _mm_sub_epi8(_mm_unpacklo_epi8(lo, hi), zv);
                __m256 f0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(e0));
                __m256 f1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(e0, e0)));
                NB_FMA(f0, 0, s0) NB_FMA(f1, 8, S1)
            }
        } else {
            const __m256i zv = _mm256_set1_epi32(zq[b]);
            for (int k = 0; k < j->bs; k += 16) {
                __m128i v = _mm_loadu_si128((const __m128i *)(q + k));
                __m256 f0 = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_cvtepu8_epi32(v), zv));
                __m256 f1 = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_unpackhi_epi64(v, v)), zv));
                NB_FMA(f0, 0, s0) NB_FMA(f1, 8, S1)
            }
        }
#undef NB_FMA
#undef S1
        __m256 scale = _mm256_set1_ps(sc[b]);
        NB_UNROLL for (int r = 0; r < R; r++) acc[r] = _mm256_fmadd_ps(R > 1 ? s0[r] : _mm256_add_ps(s0[r], s1[r]), scale, acc[r]);
    }
    NB_UNROLL for (int r = 0; r < R; r++) {
        __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc[r]), _mm256_extractf128_ps(acc[r], 1));
        h = _mm_add_ps(h, _mm_movehl_ps(h, h));
        h = _mm_add_ss(h, _mm_movehdup_ps(h));
        out[r] = _mm_cvtss_f32(h);
    }
}

#undef NB_UNROLL

GWR_AVX2_FN static void cols_avx2_any(const nb_job *j, const float *a, int R, int64_t n, float *out) {
    switch (R) { /* each instance with its R known: the accumulators stay in registers */
    case 1: cols_avx2(j, a, 1, n, out); break;
    case 2: cols_avx2(j, a, 2, n, out); break;
    case 3: cols_avx2(j, a, 3, n, out); break;
    default: cols_avx2(j, a, 4, n, out); break;
    }
}
#endif

/* Columns [n0, n1) of every row. */
static void gemv_cols(void *ctx, int64_t n0, int64_t n1) {
    const nb_job *j = ctx;
    float v[NB_ROWS];
    for (int64_t n = n0; n < n1; n++)
        for (int64_t m0 = 0; m0 < j->M; m0 += NB_ROWS) {
            int R = j->M - m0 < NB_ROWS ? (int)(j->M - m0) : NB_ROWS;
            const float *a = j->ap + m0 * j->kp;
#ifdef GWR_VEC8_X86
            if (j->avx2) cols_avx2_any(j, a, R, n, v);
            else
#endif
                for (int r = 0; r < R; r++) v[r] = col_c(j, a + r * j->kp, n);
            for (int r = 0; r < R; r++) {
                int64_t m = m0 + r;
                if (j->zf) { /* sum a (q - zf) s = s (sum a q - zf sum a), per block */
                    float c = 0.0f;
                    for (int b = 0; b < j->kb; b++) c += j->sc[n * j->kb + b] * (j->zf[n * j->kb + b] * j->asum[m * j->kb + b]);
                    v[r] -= c;
                }
                j->y[m * j->N + n] = j->bias ? v[r] + j->bias[n] : v[r];
            }
        }
}

/* ---- panels: dequantized to float32, then sgemm ------------------------------ */

/* Column n's block b dequantized into w[0, bs): ((float)(q - zi) - zf) *
 * scale, zi the integer zero point (0 with float ones), zf the float one
 * (0 with integer ones): the same bits on both paths (no FMA). */
static void deq_block_c(const nb_job *j, int64_t i, float *w) {
    const uint8_t *q = j->b + i * j->blob;
    int zi = j->zq[i];
    float s = j->sc[i], zf = j->zf ? j->zf[i] : 0.0f;
    if (j->bits == 4)
        for (int e = 0; e < j->bs; e++) w[e] = ((float)(((q[e >> 1] >> ((e & 1) * 4)) & 15) - zi) - zf) * s;
    else
        for (int e = 0; e < j->bs; e++) w[e] = ((float)(q[e] - zi) - zf) * s;
}

#ifdef GWR_VEC8_X86
GWR_AVX2_FN static void deq_block_avx2(const nb_job *j, int64_t i, float *w) {
    const uint8_t *q = j->b + i * j->blob;
    const __m256 s = _mm256_set1_ps(j->sc[i]), zf = _mm256_set1_ps(j->zf ? j->zf[i] : 0.0f);
#define NB_ST(off, e32) _mm256_storeu_ps(w + k + (off), _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(e32), zf), s));
    if (j->bits == 4) {
        const __m128i m4 = _mm_set1_epi8(15), zv = _mm_set1_epi8((char)j->zq[i]);
        for (int k = 0; k < j->bs; k += 16) {
            __m128i v = _mm_loadl_epi64((const __m128i *)(q + k / 2));
            __m128i lo = _mm_and_si128(v, m4), hi = _mm_and_si128(_mm_srli_epi16(v, 4), m4);
            __m128i e0 = _mm_sub_epi8(_mm_unpacklo_epi8(lo, hi), zv);
            NB_ST(0, _mm256_cvtepi8_epi32(e0)) NB_ST(8, _mm256_cvtepi8_epi32(_mm_unpackhi_epi64(e0, e0)))
        }
    } else {
        const __m256i zv = _mm256_set1_epi32(j->zq[i]);
        for (int k = 0; k < j->bs; k += 8) {
            NB_ST(0, _mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(q + k))), zv))
        }
    }
#undef NB_ST
}
#endif

/* Panels [p0, p1) of NB_PANEL columns: W^T [nc, kp] dequantized (rows kp
 * apart, whole blocks), times the packed A^T [K, M]: Y^T [nc, M], stored
 * into Y's columns. */
static void panel(void *ctx, int64_t p0, int64_t p1) {
    const nb_job *j = ctx;
    float *w = j->wbuf + (size_t)gwr_par_thread() * ((size_t)j->kp * NB_PANEL + (size_t)j->M * NB_PANEL), *yt = w + (size_t)j->kp * NB_PANEL;
    for (int64_t p = p0; p < p1; p++) {
        int64_t n0 = p * NB_PANEL, nc = j->N - n0 < NB_PANEL ? j->N - n0 : NB_PANEL;
        for (int64_t c = 0; c < nc; c++)
            for (int b = 0; b < j->kb; b++) {
                int64_t i = (n0 + c) * j->kb + b;
                float *o = w + c * j->kp + (int64_t)b * j->bs;
#ifdef GWR_VEC8_X86
                if (j->avx2) deq_block_avx2(j, i, o);
                else
#endif
                    deq_block_c(j, i, o);
            }
        gwr_sgemm_pb(NULL, 0, (int)nc, w, (int)j->kp, j->at, 1.0f, 0.0f, yt, (int)j->M);
        for (int64_t m = 0; m < j->M; m++) {
            float *y = j->y + m * j->N + n0;
            for (int64_t c = 0; c < nc; c++) y[c] = j->bias ? yt[c * j->M + m] + j->bias[n0 + c] : yt[c * j->M + m];
        }
    }
}

/* ---- the kernel ------------------------------------------------------------ */

/* A float input of n elements as float32: in place, or widened into *own. */
static const float *as_f32(gwr_kctx *k, const gwr_value *v, const char *name, int64_t n, float **own) {
    *own = NULL;
    if (!gwr_ku_is_float(v->dtype) || v->dtype == GWR_FLOAT64)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s is %s, expected float32, float16 or bfloat16", name, gwr_dtype_name(v->dtype)), NULL;
    if (v->numel != n)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s has %lld elements, expected %lld", name, (long long)v->numel, (long long)n), NULL;
    if (v->dtype == GWR_FLOAT32) return v->data;
    if (!(*own = gwr_ku_widen(v))) gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    return *own;
}

static gwr_status k_matmul_nbits(gwr_kctx *k) {
    const gwr_value *a = gwr_ku_need_named(k, 0, "A"), *bq = gwr_ku_need_named(k, 1, "B"), *scv = gwr_ku_need_named(k, 2, "scales");
    const gwr_value *zpv = gwr_ku_opt(k, 3), *gidx = gwr_ku_opt(k, 4), *biasv = gwr_ku_opt(k, 5);
    if (!a || !bq || !scv) return GWR_ERR_INVALID_ARG;
    int64_t K = gwr_k_int(k, "K", -1), N = gwr_k_int(k, "N", -1), bits = gwr_k_int(k, "bits", 4), bs = gwr_k_int(k, "block_size", -1);
    if (K < 1 || N < 1 || !gwr_ku_fits_int(K) || !gwr_ku_fits_int(N))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attributes K and N must be set, positive and below 2^31 (K %lld, N %lld)", (long long)K,
                          (long long)N);
    if (bits != 4 && bits != 8) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "bits %lld: only 4 and 8 are supported", (long long)bits);
    if (bs < 16 || bs > (1 << 20) || (bs & (bs - 1)))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "block_size %lld must be a power of 2, at least 16", (long long)bs);
    if (a->rank < 1 || a->dims[a->rank - 1] != K)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "A's last dimension must be K = %lld", (long long)K);
    if (a->dtype != GWR_FLOAT32 && !gwr_ku_is_half(a->dtype))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "A is %s, expected float32, float16 or bfloat16", gwr_dtype_name(a->dtype));
    int64_t kb = (K + bs - 1) / bs, blob = bs * bits / 8, kp = kb * bs, M = a->numel / K;
    if (bq->dtype != GWR_UINT8) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "B is %s, expected uint8", gwr_dtype_name(bq->dtype));
    if (!((bq->rank == 3 && bq->dims[0] == N && bq->dims[1] == kb && bq->dims[2] == blob) ||
          (bq->rank == 2 && bq->dims[0] == N && bq->dims[1] == kb * blob)))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "B must be [N, k_blocks, blob_size] = [%lld, %lld, %lld] (K %lld, bits %lld, block_size %lld)",
                          (long long)N, (long long)kb, (long long)blob, (long long)K, (long long)bits, (long long)bs);
    if (gwr_ku_mul_max(M, kp, INT_MAX) < 0 || gwr_ku_mul_max(N, kp, INT64_MAX / 8) < 0)
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "matrix dims too large");
    if (gidx) {
        int ok = gidx->dtype == GWR_INT32 && gidx->numel == K;
        for (int64_t i = 0; ok && i < K; i++) ok = ((const int32_t *)gidx->data)[i] == i / bs;
        if (!ok) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "g_idx is supported only as the trivial int32 [K] of k / block_size");
    }
    if (zpv && zpv->dtype == GWR_UINT8 && zpv->numel != N * ((kb * bits + 7) / 8))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "uint8 zero_points must be packed [N, ceil(k_blocks * bits / 8)] = [%lld, %lld]",
                          (long long)N, (long long)((kb * bits + 7) / 8));

    int64_t odims[GWR_MAX_RANK];
    memcpy(odims, a->dims, (size_t)a->rank * sizeof *odims);
    odims[a->rank - 1] = N;
    float *own_a = NULL, *own_s = NULL, *own_b = NULL, *own_z = NULL, *apad = NULL, *asum = NULL, *ybuf = NULL, *wbuf = NULL;
    gwr_sgemm_pack *at = NULL;
    uint8_t *zq = NULL;
    gwr_status st = GWR_ERR_INVALID_ARG;
    nb_job j = {.M = M, .K = K, .N = N, .kp = kp, .kb = (int)kb, .bs = (int)bs, .bits = (int)bits, .blob = (int)blob, .b = bq->data};
    if (!(j.a = as_f32(k, a, "A", a->numel, &own_a)) || !(j.sc = as_f32(k, scv, "scales", N * kb, &own_s)) ||
        (biasv && !(j.bias = as_f32(k, biasv, "bias", N, &own_b))) ||
        (zpv && zpv->dtype != GWR_UINT8 && !(j.zf = as_f32(k, zpv, "zero_points", N * kb, &own_z))))
        goto done;
    st = GWR_ERR_NOMEM;
    gwr_value *y = gwr_k_out(k, 0, a->dtype, a->rank, odims);
    if (!y) goto done;
    if (!M) {
        st = GWR_OK;
        goto done;
    }
    /* integer zero points, one per block */
    if (!(zq = gwr_ku_scratch(k, N * kb, 1))) goto done;
    if (!zpv) memset(zq, 1 << (bits - 1), (size_t)(N * kb));
    else if (j.zf) memset(zq, 0, (size_t)(N * kb));
    else {
        const uint8_t *z = zpv->data;
        int64_t row = (kb * bits + 7) / 8;
        for (int64_t n = 0; n < N; n++)
            for (int64_t b = 0; b < kb; b++)
                zq[n * kb + b] = bits == 8 ? z[n * row + b] : (uint8_t)((z[n * row + b / 2] >> ((b & 1) * 4)) & 15);
    }
    j.zq = zq;
    j.y = y->dtype == GWR_FLOAT32 ? y->data : (ybuf = gwr_ku_scratch(k, M * N, sizeof *ybuf));
    if (!j.y) goto done;
    int gemv = M <= NB_GEMV_ROWS || !gwr_sgemm_enabled();
    if (gemv) {
        j.ap = j.a;
        if (kp != K) { /* rows padded with zeros: the padded q contribute 0 * (q - z) */
            if (!(apad = gwr_ku_scratch(k, M * kp, sizeof *apad))) goto done;
            for (int64_t m = 0; m < M; m++) {
                memcpy(apad + m * kp, j.a + m * K, (size_t)K * sizeof *apad);
                memset(apad + m * kp + K, 0, (size_t)(kp - K) * sizeof *apad);
            }
            j.ap = apad;
        }
        if (j.zf) {
            if (!(asum = gwr_ku_scratch(k, M * kb, sizeof *asum))) goto done;
            for (int64_t m = 0; m < M; m++)
                for (int64_t b = 0; b < kb; b++) {
                    float s = 0.0f;
                    for (int64_t e = b * bs; e < (b + 1) * bs && e < K; e++) s += j.a[m * K + e];
                    asum[m * kb + b] = s;
                }
            j.asum = asum;
        }
        j.avx2 = gwr_ku_cnn_avx2();
        gwr_k_parallel(k, N, gwr_par_grain(M * kp), gemv_cols, &j);
    } else {
        int nt = gwr_tpool_size(k->tpool);
        if (!(wbuf = gwr_ku_scratch(k, (int64_t)nt * (kp + M) * NB_PANEL, sizeof *wbuf))) goto done;
        if (!(at = gwr_sgemm_pack_b(1, (int)K, (int)M, j.a, (int)K))) {
            gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
            goto done;
        }
        j.wbuf = wbuf, j.at = at, j.avx2 = gwr_ku_cnn_avx2();
        gwr_k_parallel(k, (N + NB_PANEL - 1) / NB_PANEL, 1, panel, &j);
    }
    if (ybuf) gwr_ku_narrow(ybuf, y);
    st = GWR_OK;
done:
    gwr_free(own_a), gwr_free(own_s), gwr_free(own_b), gwr_free(own_z), gwr_free(apad), gwr_free(asum), gwr_free(ybuf), gwr_free(wbuf);
    gwr_free(zq);
    gwr_sgemm_pack_free(at);
    return st;
}

const gwr_kernel_entry gwr_kernels_nbits[] = {
    GWR_KERNEL(MS_MatMulNBits, k_matmul_nbits),
    {.fn = NULL},
};
