/* kernel_util.c - the helpers kernel families share (kernel_util.h). */
#include <stdlib.h>
#include <string.h>

#include "exec/blas.h"
#include "exec/kernels/kernel_util.h"
#include "exec/kernels/sgemm.h"

int64_t gwr_ku_elem_size(gwr_kctx *k, gwr_dtype dt) {
    if (dt == GWR_STRING) return 0;
    int bits = gwr_dtype_bits(dt);
    if (bits < 8 || bits % 8)
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "dtype %s is not supported by this op", gwr_dtype_name(dt)), -1;
    return bits / 8;
}

/* ---- conversion by rows -------------------------------------------------- */

/* float32 <-> float16 with the F16C instructions where the CPU has them
 * (the same rounding as gwr_f32_to_f16: to nearest even, overflow to
 * infinity, subnormals kept, NaN quiet with its top payload bits): 0 when
 * it has not, and the portable loop runs. Casts to and from float16 are
 * half of what a float16 network (or gwr precision --auto's simulation of
 * one) spends; the kernels that widen float16 rows (a half MatMul's A,
 * SwiGLU's rows, gwr_ku_widen) convert through the same loops. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
__attribute__((target("avx,f16c"))) static void f32_f16_f16c(const float *s, uint16_t *d, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) d[i] = gwr_f32_to_f16(s[i]);
}
__attribute__((target("avx,f16c"))) static void f16_f32_f16c(const uint16_t *s, float *d, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i))));
    for (; i < n; i++) d[i] = gwr_f16_to_f32(s[i]);
}
static int have_f16c(void) {
    /* CPUID leaf 1: ECX bit 29 F16C, bit 28 AVX, bit 27 OSXSAVE (the OS
     * saves the AVX registers); __builtin_cpu_supports lacks "f16c" in clang */
    static int have = -1;
    if (have < 0) {
        unsigned eax, ebx, ecx = 0, edx;
        have = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) && (ecx & (1u << 28)) &&
               (ecx & (1u << 27)) && __builtin_cpu_supports("avx");
    }
    return have;
}
static int cast_f32_f16_fast(const void *s, void *d, int64_t n) {
    if (!have_f16c()) return 0;
    f32_f16_f16c(s, d, n);
    return 1;
}
static int cast_f16_f32_fast(const void *s, void *d, int64_t n) {
    if (!have_f16c()) return 0;
    f16_f32_f16c(s, d, n);
    return 1;
}
#else
static int cast_f32_f16_fast(const void *s, void *d, int64_t n) { return (void)s, (void)d, (void)n, 0; }
static int cast_f16_f32_fast(const void *s, void *d, int64_t n) { return (void)s, (void)d, (void)n, 0; }
#endif

void gwr_ku_half_to_f32(gwr_dtype t, const uint16_t *h, int64_t stride, float *f, int64_t n) {
    if (t == GWR_FLOAT16 && stride == 1 && cast_f16_f32_fast(h, f, n)) return;
    if (t == GWR_FLOAT16)
        for (int64_t i = 0; i < n; i++) f[i] = gwr_f16_to_f32(h[i * stride]);
    else
        for (int64_t i = 0; i < n; i++) f[i] = gwr_bf16_to_f32(h[i * stride]);
}

void gwr_ku_f32_to_half(gwr_dtype t, const float *f, uint16_t *h, int64_t n) {
    if (t == GWR_FLOAT16 && cast_f32_f16_fast(f, h, n)) return;
    if (t == GWR_FLOAT16)
        for (int64_t i = 0; i < n; i++) h[i] = gwr_f32_to_f16(f[i]);
    else
        for (int64_t i = 0; i < n; i++) h[i] = gwr_f32_to_bf16(f[i]);
}

float *gwr_ku_widen(const gwr_value *v) {
    int64_t n = v->numel;
    float *f = gwr_malloc((size_t)(n ? n : 1) * sizeof *f);
    if (!f) return NULL;
    switch (v->dtype) {
    case GWR_FLOAT16:
    case GWR_BFLOAT16: gwr_ku_half_to_f32(v->dtype, v->data, 1, f, n); break;
    case GWR_INT8:
        for (int64_t i = 0; i < n; i++) f[i] = ((const int8_t *)v->data)[i];
        break;
    case GWR_UINT8:
        for (int64_t i = 0; i < n; i++) f[i] = ((const uint8_t *)v->data)[i];
        break;
    default:
        if (n) memcpy(f, v->data, (size_t)n * sizeof *f);
        break;
    }
    return f;
}

int gwr_ku_qrange(gwr_dtype t, double *lo, double *hi) {
    switch (t) {
    case GWR_UINT8: *lo = 0, *hi = 255; return 1;
    case GWR_INT8: *lo = -128, *hi = 127; return 1;
    case GWR_UINT16: *lo = 0, *hi = 65535; return 1;
    case GWR_INT16: *lo = -32768, *hi = 32767; return 1;
    case GWR_INT32: *lo = -2147483648.0, *hi = 2147483647.0; return 1;
    default: return 0;
    }
}

double gwr_ku_round(gwr_dtype t, double x) {
    if (t == GWR_FLOAT32) return (float)x;
    if (!gwr_ku_is_half(t)) return x;
    float f = (float)x;
    uint16_t h;
    gwr_ku_f32_to_half(t, &f, &h, 1);
    gwr_ku_half_to_f32(t, &h, 1, &f, 1);
    return f;
}

void gwr_ku_narrow(const float *f, gwr_value *v) {
    int64_t n = v->numel;
    switch (v->dtype) {
    case GWR_FLOAT16:
    case GWR_BFLOAT16: gwr_ku_f32_to_half(v->dtype, f, v->data, n); break;
    case GWR_INT8:
        for (int64_t i = 0; i < n; i++) {
            float x = f[i];
            ((int8_t *)v->data)[i] = (int8_t)(x != x ? 0 : x < -128 ? -128 : x > 127 ? 127 : x);
        }
        break;
    case GWR_UINT8:
        for (int64_t i = 0; i < n; i++) {
            float x = f[i];
            ((uint8_t *)v->data)[i] = (uint8_t)(x != x ? 0 : x < 0 ? 0 : x > 255 ? 255 : x);
        }
        break;
    default:
        if (n) memcpy(v->data, f, (size_t)n * sizeof *f);
        break;
    }
}

void gwr_ku_load_f64(const gwr_value *v, int64_t off, int64_t n, double *dst) {
    const void *p = v->data;
    switch (v->dtype) {
    case GWR_FLOAT32: {
        const float *s = (const float *)p + off;
        for (int64_t j = 0; j < n; j++) dst[j] = s[j];
        break;
    }
    case GWR_FLOAT64: memcpy(dst, (const double *)p + off, (size_t)n * sizeof *dst); break;
    case GWR_INT32: {
        const int32_t *s = (const int32_t *)p + off;
        for (int64_t j = 0; j < n; j++) dst[j] = s[j];
        break;
    }
    case GWR_INT64: {
        const int64_t *s = (const int64_t *)p + off;
        for (int64_t j = 0; j < n; j++) dst[j] = (double)s[j];
        break;
    }
    default:
        for (int64_t j = 0; j < n; j++) dst[j] = gwr_v_get_f64(v, off + j);
    }
}

void gwr_ku_store_f64(gwr_value *v, int64_t off, int64_t n, const double *src) {
    switch (v->dtype) {
    case GWR_FLOAT32: {
        float *d = (float *)v->data + off;
        for (int64_t j = 0; j < n; j++) d[j] = (float)src[j];
        break;
    }
    case GWR_FLOAT64: memcpy((double *)v->data + off, src, (size_t)n * sizeof *src); break;
    default:
        for (int64_t j = 0; j < n; j++) gwr_v_set_f64(v, off + j, src[j]);
    }
}

/* ---- inputs and attributes ----------------------------------------------- */

const gwr_value *gwr_ku_need(gwr_kctx *k, int i) {
    const gwr_value *v = i < k->nin ? k->in[i] : NULL;
    if (!v) gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %d is missing", i);
    return v;
}

const gwr_value *gwr_ku_need_named(gwr_kctx *k, int i, const char *name) {
    const gwr_value *v = i < k->nin ? k->in[i] : NULL;
    if (!v) gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %d (%s) is missing", i, name);
    return v;
}

const gwr_value *gwr_ku_need_float(gwr_kctx *k, int i, const char *name) {
    const gwr_value *v = gwr_ku_need_named(k, i, name);
    if (v && !gwr_ku_is_float(v->dtype)) {
        gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %d (%s) is %s, not a floating-point tensor", i, name,
                   gwr_dtype_name(v->dtype));
        return NULL;
    }
    return v;
}

gwr_status gwr_ku_axes_mask(gwr_kctx *k, const int64_t *axes, int64_t n, int rank, uint8_t *mask, int *out) {
    for (int64_t i = 0; i < n; i++) {
        int a = gwr_axis(axes[i], rank);
        if (a < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)axes[i], rank);
        if (mask[a]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld is repeated", (long long)axes[i]);
        mask[a] = 1;
        if (out) out[i] = a;
    }
    return GWR_OK;
}

int gwr_ku_attr_list(gwr_kctx *k, const char *name, int64_t want, int64_t lo, int64_t hi, const int64_t **v) {
    int64_t n = gwr_k_ints(k, name, v);
    if (n < 0) return 0;
    if (n != want) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s has %lld values, expected %lld", name, (long long)n, (long long)want), -1;
    for (int64_t i = 0; i < n; i++)
        if ((*v)[i] < lo || (*v)[i] > hi)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s[%lld] = %lld is out of range", name, (long long)i, (long long)(*v)[i]), -1;
    return 1;
}

int gwr_ku_auto_pad(gwr_kctx *k) {
    const char *a = gwr_k_string(k, "auto_pad", "NOTSET");
    if (!strcmp(a, "NOTSET") || !*a) return GWR_KU_PAD_NOTSET;
    if (!strcmp(a, "SAME_UPPER")) return GWR_KU_PAD_SAME_UPPER;
    if (!strcmp(a, "SAME_LOWER")) return GWR_KU_PAD_SAME_LOWER;
    if (!strcmp(a, "VALID")) return GWR_KU_PAD_VALID;
    gwr_k_fail(k, GWR_ERR_INVALID_ARG, "auto_pad '%s' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", a);
    return -1;
}

/* ---- windows ------------------------------------------------------------- */

void gwr_ku_window_init(gwr_ku_window *g, int nsp) {
    g->nsp = nsp;
    for (int i = 0; i < GWR_KU_MAXSP; i++) g->in[i] = g->out[i] = g->k[i] = g->s[i] = g->d[i] = 1, g->pb[i] = g->pe[i] = 0;
}

gwr_status gwr_ku_window_attrs(gwr_kctx *k, gwr_ku_window *g, int64_t max) {
    int nsp = g->nsp, off = GWR_KU_MAXSP - nsp, r;
    const int64_t *st, *dl, *pd;
    if ((r = gwr_ku_attr_list(k, "strides", nsp, 1, max, &st)) < 0) return GWR_ERR_INVALID_ARG;
    for (int i = 0; r && i < nsp; i++) g->s[off + i] = st[i];
    if ((r = gwr_ku_attr_list(k, "dilations", nsp, 1, max, &dl)) < 0) return GWR_ERR_INVALID_ARG;
    for (int i = 0; r && i < nsp; i++) g->d[off + i] = dl[i];
    if ((r = gwr_ku_attr_list(k, "pads", 2 * nsp, 0, max, &pd)) < 0) return GWR_ERR_INVALID_ARG;
    for (int i = 0; r && i < nsp; i++) g->pb[off + i] = pd[i], g->pe[off + i] = pd[nsp + i];
    return GWR_OK;
}

gwr_status gwr_ku_window_out(gwr_kctx *k, gwr_ku_window *g, int autopad, int ceil_mode) {
    int off = GWR_KU_MAXSP - g->nsp;
    for (int i = off; i < GWR_KU_MAXSP; i++) {
        int64_t ek = (g->k[i] - 1) * g->d[i] + 1, in = g->in[i];
        if (autopad == GWR_KU_PAD_SAME_UPPER || autopad == GWR_KU_PAD_SAME_LOWER) {
            g->out[i] = gwr_ku_ceildiv(in, g->s[i]);
            int64_t total = (g->out[i] - 1) * g->s[i] + ek - in;
            if (total < 0) total = 0;
            g->pb[i] = autopad == GWR_KU_PAD_SAME_UPPER ? total / 2 : total - total / 2;
            g->pe[i] = total - g->pb[i];
            continue;
        }
        if (autopad == GWR_KU_PAD_VALID) g->pb[i] = g->pe[i] = 0;
        int64_t span = in + g->pb[i] + g->pe[i] - ek;
        if (span < 0)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "kernel extent %lld is larger than the padded input %lld (spatial dim %d)",
                              (long long)ek, (long long)(in + g->pb[i] + g->pe[i]), i - off);
        if (ceil_mode) {
            g->out[i] = gwr_ku_ceildiv(span, g->s[i]) + 1;
            /* a last window starting in the end padding is dropped */
            if ((g->out[i] - 1) * g->s[i] >= in + g->pb[i]) g->out[i]--;
        } else {
            g->out[i] = span / g->s[i] + 1;
        }
    }
    return GWR_OK;
}

/* ---- copies and scratch -------------------------------------------------- */

gwr_status gwr_ku_copy_strings(gwr_kctx *k, gwr_value *o, int64_t oi, const gwr_value *v, int64_t vi, int64_t n) {
    const gwr_bytes *b = (const gwr_bytes *)v->data + vi;
    for (int64_t j = 0; j < n; j++)
        if (gwr_value_set_string(o, oi + j, b[j].data, b[j].len)) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    return GWR_OK;
}

void *gwr_ku_scratch(gwr_kctx *k, int64_t n, size_t sz) {
    if (n < 0 || (uint64_t)n > SIZE_MAX / sz / 2) {
        gwr_k_fail(k, GWR_ERR_NOMEM, "scratch of %lld elements is too large", (long long)n);
        return NULL;
    }
    void *p = gwr_malloc(n ? (size_t)n * sz : 1);
    if (!p) gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    return p;
}

/* ---- sorting ------------------------------------------------------------- */

void gwr_ku_merge_sort(int64_t *a, int64_t *tmp, int64_t n, gwr_ku_cmp_fn cmp, const void *ctx) {
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) tmp[o++] = cmp(ctx, a[j], a[i]) < 0 ? a[j++] : a[i++];
            while (i < mid) tmp[o++] = a[i++];
            while (j < hi) tmp[o++] = a[j++];
        }
        memcpy(a, tmp, (size_t)n * sizeof *a);
    }
}

int gwr_ku_cmp_bytes(const gwr_bytes *a, const gwr_bytes *b) {
    size_t n = a->len < b->len ? a->len : b->len;
    int c = n ? memcmp(a->data, b->data, n) : 0;
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* ---- GEMM ---------------------------------------------------------------- */

/* Few rows of A (the decode step's one token): OpenBLAS 0.3.21's sgemm
 * packs all of B for them and runs up to 8x slower than sgemv over B in
 * place (measured at K 768, N 3072: 968 us against 120 us for one row,
 * 1020 against 4 x 120 for four); two rows and B under a megabyte are even. */
static int sgemm_by_rows(int ta, int M, int N, int K) { return !ta && (M == 1 || (M <= 4 && (int64_t)K * N >= (1 << 18))); }

/* Products sgemm.c runs faster than OpenBLAS with both sides in place
 * (bench_sgemm: the attention's input projection 128x768x256, 457 against
 * 486 us; a head's probabilities by V 128x64x128, 19.3 against 21.6),
 * with OpenBLAS at one thread: on the run's pool (gwr_tpool_current),
 * where OpenBLAS's own threads would win otherwise. */
static int own_sgemm(int ta, int tb, int M, int N, int K) {
    return !ta && !tb && M >= 16 && N >= 64 && K >= 64 && gwr_sgemm_enabled() && gwr_blas.get_num_threads() == 1;
}

void gwr_ku_sgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                  float beta, float *C, int ldc) {
    if (!M || !N) return;
    if (!K) {
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] = beta == 0 ? 0 : beta * C[(size_t)i * ldc + j];
        return;
    }
    if (sgemm_by_rows(ta, M, N, K)) {
        /* Not split over the run's pool: in column ranges OpenBLAS's
         * sgemv gave some elements other bits (1000 x 1024, transB or not:
         * the first few of a range), and results must not depend on the
         * thread count. */
        for (int i = 0; i < M; i++) {
            float *c = C + (size_t)i * ldc;
            if (beta == 0) memset(c, 0, (size_t)N * sizeof *c); /* uninitialized bytes may hold NaNs */
            /* row i of C = alpha a_i op(B) + beta c: with B [K, N] that is B^T a_i */
            gwr_blas.sgemv(CblasRowMajor, tb ? CblasNoTrans : CblasTrans, tb ? N : K, tb ? K : N, alpha, B, ldb,
                           A + (size_t)i * lda, 1, beta, c, 1);
        }
        return;
    }
    if (own_sgemm(ta, tb, M, N, K) && !gwr_sgemm(gwr_tpool_current(), 0, 0, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))
        return;
    gwr_blas.sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda,
                   B, ldb, beta, C, ldc);
}

void gwr_ku_dgemm(int ta, int tb, int M, int N, int K, double alpha, const double *A, int lda, const double *B, int ldb,
                  double beta, double *C, int ldc) {
    if (!M || !N) return;
    if (!K) {
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] = beta == 0 ? 0 : beta * C[(size_t)i * ldc + j];
        return;
    }
    gwr_blas.dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda,
                   B, ldb, beta, C, ldc);
}
