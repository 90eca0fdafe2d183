/* sgemm_kern.c - sgemm_kern.h's micro-kernel for each instruction set.
 *
 * Tiles (rows x columns, the accumulators they hold):
 *   AVX-512    8 x 48  (24 of 32 zmm: the channel counts of CNNs and
 *                      transformers are multiples of 8, and 48 columns
 *                      load 3 vectors per 8 broadcasts)
 *   AVX2+FMA   6 x 16  (12 of 16 ymm)
 *   portable   4 x 8   (8 four-float vectors: SSE2 / NEON)
 * The x86 ones are compiled for their instruction set by a function
 * attribute and only ever called where the CPU has it (sgemm.c checks
 * __builtin_cpu_supports). */
#include "exec/kernels/sgemm.h"
#include "exec/kernels/vec4.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define KSFX avx512
#define KTARGET __attribute__((target("avx512f")))
#define KV __m512
#define KVL 16
#define KLOAD(p) _mm512_loadu_ps(p)
#define KSTORE(p, v) _mm512_storeu_ps(p, v)
#define KSPLAT(x) _mm512_set1_ps(x)
#define KZERO() _mm512_setzero_ps()
#define KMUL(a, b) _mm512_mul_ps(a, b)
#define KADD(a, b) _mm512_add_ps(a, b)
#define KFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define KMR 8
#define KNV 3
#define GEMV_ACC 24
#include "exec/kernels/sgemm_kern.h"

#define KSFX avx2
#define KTARGET __attribute__((target("avx2,fma")))
#define KV __m256
#define KVL 8
#define KLOAD(p) _mm256_loadu_ps(p)
#define KSTORE(p, v) _mm256_storeu_ps(p, v)
#define KSPLAT(x) _mm256_set1_ps(x)
#define KZERO() _mm256_setzero_ps()
#define KMUL(a, b) _mm256_mul_ps(a, b)
#define KADD(a, b) _mm256_add_ps(a, b)
#define KFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define KMR 6
#define KNV 2
#define GEMV_ACC 12
#include "exec/kernels/sgemm_kern.h"
#else
/* Never selected off x86 (sgemm.c): defined so that the table links. */
void gwr_sgemm_kern_avx512(int mr, int kc, const float *a, ptrdiff_t lda, const float *b, ptrdiff_t ldb, float *c, ptrdiff_t ldc, int nr,
                           float alpha, float beta) {
    gwr_sgemm_kern_vec(mr, kc, a, lda, b, ldb, c, ldc, nr, alpha, beta);
}
void gwr_sgemm_kern_avx2(int mr, int kc, const float *a, ptrdiff_t lda, const float *b, ptrdiff_t ldb, float *c, ptrdiff_t ldc, int nr,
                         float alpha, float beta) {
    gwr_sgemm_kern_vec(mr, kc, a, lda, b, ldb, c, ldc, nr, alpha, beta);
}
float gwr_sgemm_dot_avx512(const float *a, const float *b, int n) { return gwr_sgemm_dot_vec(a, b, n); }
void gwr_sgemv_kern_avx512(int m, int np, int K, const float *a, ptrdiff_t lda, const float *b, ptrdiff_t pstride, float *c,
                           ptrdiff_t ldc, const int *ncols, float alpha, float beta) {
    gwr_sgemv_kern_vec(m, np, K, a, lda, b, pstride, c, ldc, ncols, alpha, beta);
}
void gwr_sgemv_kern_avx2(int m, int np, int K, const float *a, ptrdiff_t lda, const float *b, ptrdiff_t pstride, float *c,
                         ptrdiff_t ldc, const int *ncols, float alpha, float beta) {
    gwr_sgemv_kern_vec(m, np, K, a, lda, b, pstride, c, ldc, ncols, alpha, beta);
}
float gwr_sgemm_dot_avx2(const float *a, const float *b, int n) { return gwr_sgemm_dot_vec(a, b, n); }
#endif

static inline v4f splat4(float x) { return (v4f){x, x, x, x}; }

#define KSFX vec
#define KTARGET
#define KV v4f
#define KVL 4
#define KLOAD(p) ld4(p)
#define KSTORE(p, v) st4(p, v)
#define KSPLAT(x) splat4(x)
#define KZERO() splat4(0.0f)
#define KMUL(a, b) ((a) * (b))
#define KADD(a, b) ((a) + (b))
#define KFMA(a, b, c) ((a) * (b) + (c))
#define KMR 4
#define KNV 2
#define GEMV_ACC 12
#include "exec/kernels/sgemm_kern.h"
