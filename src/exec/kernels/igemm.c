/* igemm.c - exact 8-bit integer matrix products (igemm.h).
 *
 * Both operands, their zero points subtracted, fit int16 ([-255, 255]), so
 * two products of a pair of K fit int32 with room to spare (2 * 255^2):
 * AVX2's vpmaddwd multiplies 16 int16 pairs and adds each pair into one
 * int32 lane, exactly; the lanes then accumulate with vpaddd, which wraps
 * modulo 2^32 as the spec's int32 sum does (the portable path adds in
 * uint32 for the same bits). The result does not depend on the order of
 * the additions, so K is cut into blocks whose partial sums are added.
 *
 * Layouts: A [Mp, Kp] int16, Mp = M rounded up to 6, Kp = K rounded up to
 * 2, padding zero. B in panels of 16 columns: panel p holds, for each pair
 * q of K, the 16 columns' (B[2q][j], B[2q+1][j]) interleaved (32 int16),
 * so one load gives vpmaddwd its 8 columns of one register. The
 * micro-kernel computes 6 rows x 16 columns (12 accumulators). */
#include "exec/kernels/igemm.h"

#include <string.h>

#include "exec/kernels/cnn_isa.h"
#include "exec/kernels/kernel_util.h"
#include "exec/kernels/vec8.h"

#ifdef GWR_VEC8_X86
#include <immintrin.h>
#endif

#define MR 6
#define NR 16
#define KCP 128 /* pairs of K per block: a B panel block is 8 KiB */

static int rup(int x, int m) { return (x + m - 1) / m * m; }

size_t gwr_ku_igemm_a_size(int M, int K) { return (size_t)rup(M > 0 ? M : 1, MR) * (size_t)rup(K > 0 ? K : 1, 2); }
size_t gwr_ku_igemm_b_size(int K, int N) { return (size_t)rup(K > 0 ? K : 1, 2) * (size_t)rup(N > 0 ? N : 1, NR); }

void gwr_ku_igemm_pack_a(const void *a, int sgn, int M, int K, const int32_t *zp, int nzp, int16_t *out) {
    int kp = rup(K > 0 ? K : 1, 2), mp = rup(M > 0 ? M : 1, MR);
    memset(out, 0, (size_t)mp * (size_t)kp * sizeof *out);
    for (int i = 0; i < M; i++) {
        int z = !zp ? 0 : zp[nzp == 1 ? 0 : i];
        int16_t *o = out + (size_t)i * kp;
        size_t base = (size_t)i * (size_t)K;
        if (sgn)
            for (int q = 0; q < K; q++) o[q] = (int16_t)(((const int8_t *)a)[base + q] - z);
        else
            for (int q = 0; q < K; q++) o[q] = (int16_t)(((const uint8_t *)a)[base + q] - z);
    }
}

void gwr_ku_igemm_pack_b(const void *b, int sgn, int K, int N, const int32_t *zp, int nzp, int16_t *out) {
    int kp = rup(K > 0 ? K : 1, 2), np = rup(N > 0 ? N : 1, NR);
    memset(out, 0, (size_t)kp * (size_t)np * sizeof *out);
    for (int j0 = 0; j0 < N; j0 += NR) {
        int nj = N - j0 < NR ? N - j0 : NR;
        int32_t z[NR];
        for (int j = 0; j < nj; j++) z[j] = !zp ? 0 : zp[nzp == 1 ? 0 : j0 + j];
        int16_t *pan = out + (size_t)(j0 / NR) * kp * NR; /* pair q: pan[q * 2 NR + 2 j + half] */
        for (int q = 0; q < K; q++) {
            int16_t *o = pan + (size_t)(q / 2) * (2 * NR) + (q % 2);
            size_t row = (size_t)q * (size_t)N + (size_t)j0;
            if (sgn == GWR_KU_IGEMM_I16)
                for (int j = 0; j < nj; j++) o[2 * j] = (int16_t)(((const int16_t *)b)[row + j] - z[j]);
            else if (sgn)
                for (int j = 0; j < nj; j++) o[2 * j] = (int16_t)(((const int8_t *)b)[row + j] - z[j]);
            else
                for (int j = 0; j < nj; j++) o[2 * j] = (int16_t)(((const uint8_t *)b)[row + j] - z[j]);
        }
    }
}

/* c[MR][16] (+)= a[MR rows, 2 * npair] b[npair pairs of the panel]; lda in int16. */
static void kern_c(int npair, const int16_t *a, int lda, const int16_t *b, uint32_t *c, int acc) {
    uint32_t s[MR][NR];
    memset(s, 0, sizeof s);
    for (int q = 0; q < npair; q++) {
        const int16_t *bq = b + (size_t)q * 2 * NR;
        for (int r = 0; r < MR; r++) {
            int32_t a0 = a[(size_t)r * lda + 2 * q], a1 = a[(size_t)r * lda + 2 * q + 1];
            for (int j = 0; j < NR; j++) s[r][j] += (uint32_t)(a0 * bq[2 * j] + a1 * bq[2 * j + 1]);
        }
    }
    for (int r = 0; r < MR; r++)
        for (int j = 0; j < NR; j++) c[r * NR + j] = acc ? c[r * NR + j] + s[r][j] : s[r][j];
}

#ifdef GWR_VEC8_X86
#define IG_ROW(r)                                                                                       \
    memcpy(&w, a + (size_t)(r) * lda + 2 * q, 4), x = _mm256_set1_epi32(w);                              \
    c##r##0 = _mm256_add_epi32(c##r##0, _mm256_madd_epi16(x, b0)), c##r##1 = _mm256_add_epi32(c##r##1, _mm256_madd_epi16(x, b1));
GWR_AVX2_FN static void kern_avx2(int npair, const int16_t *a, int lda, const int16_t *b, uint32_t *c, int acc) {
    __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00, c40 = c00,
            c41 = c00, c50 = c00, c51 = c00;
    for (int q = 0; q < npair; q++) {
        __m256i b0 = _mm256_loadu_si256((const __m256i *)(b + (size_t)q * 2 * NR));
        __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + (size_t)q * 2 * NR + 16));
        int32_t w;
        __m256i x;
        IG_ROW(0) IG_ROW(1) IG_ROW(2) IG_ROW(3) IG_ROW(4) IG_ROW(5)
    }
    __m256i r[2 * MR] = {c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51};
    for (int i = 0; i < 2 * MR; i++) {
        __m256i *p = (__m256i *)(c + i * 8);
        _mm256_storeu_si256(p, acc ? _mm256_add_epi32(_mm256_loadu_si256(p), r[i]) : r[i]);
    }
}
#undef IG_ROW
#endif

/* The product in tiles of MR x NR (tile (i, p) at (i / MR * np / NR + p) *
 * MR * NR), malloc'd; NULL when out of memory. */
static uint32_t *igemm_tiles(int M, int N, int K, const int16_t *ap, const int16_t *bp) {
    int kp = rup(K > 0 ? K : 1, 2), npair = kp / 2, mp = rup(M, MR), np = rup(N, NR);
    uint32_t *c = gwr_malloc((size_t)mp * (size_t)np * sizeof *c);
    if (!c) return NULL;
    void (*kern)(int, const int16_t *, int, const int16_t *, uint32_t *, int) = kern_c;
#ifdef GWR_VEC8_X86
    if (gwr_ku_cnn_avx2()) kern = kern_avx2;
#endif
    /* c holds tiles of MR x NR contiguous: tile (i, p) at (i / MR * np / NR + p) * MR * NR */
    for (int q0 = 0; q0 < npair; q0 += KCP) {
        int nq = npair - q0 < KCP ? npair - q0 : KCP;
        for (int p = 0; p < np / NR; p++) {
            const int16_t *bpan = bp + (size_t)p * kp * NR + (size_t)q0 * 2 * NR;
            for (int i = 0; i < mp; i += MR)
                kern(nq, ap + (size_t)i * kp + 2 * (size_t)q0, kp, bpan, c + ((size_t)(i / MR) * (np / NR) + p) * MR * NR, q0 > 0);
        }
    }
    return c;
}

int gwr_ku_igemm(int M, int N, int K, const int16_t *ap, const int16_t *bp, int32_t *y, int ldy) {
    if (M <= 0 || N <= 0) return 0;
    int np = rup(N, NR);
    uint32_t *c = igemm_tiles(M, N, K, ap, bp);
    if (!c) return -1;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++)
            y[(size_t)i * ldy + j] = (int32_t)c[((size_t)(i / MR) * (np / NR) + j / NR) * MR * NR + (i % MR) * NR + j % NR];
    gwr_free(c);
    return 0;
}

int gwr_ku_igemm_f32(int M, int N, int K, const int16_t *ap, const int16_t *bp, const float *scale, int nscale,
                     const float *bias, float *y, int ldy) {
    if (M <= 0 || N <= 0) return 0;
    int np = rup(N, NR);
    uint32_t *c = igemm_tiles(M, N, K, ap, bp);
    if (!c) return -1;
    for (int i = 0; i < M; i++) {
        float *yr = y + (size_t)i * ldy;
        for (int p = 0; p < np / NR; p++) {
            const uint32_t *t = c + ((size_t)(i / MR) * (np / NR) + p) * MR * NR + (i % MR) * NR;
            int nj = N - p * NR < NR ? N - p * NR : NR;
            if (nscale == 1)
                for (int j = 0; j < nj; j++) yr[p * NR + j] = (float)(int32_t)t[j] * scale[0];
            else
                for (int j = 0; j < nj; j++) yr[p * NR + j] = (float)(int32_t)t[j] * scale[p * NR + j];
        }
        /* a loop of its own: the sum rounds the product first, as Mul then Add do (no FMA contraction) */
        if (bias)
            for (int j = 0; j < N; j++) yr[j] += bias[j];
    }
    gwr_free(c);
    return 0;
}

void gwr_ku_igemm_pack_a_dql(const float *x, int M, int K, float scale, int zp, int16_t *out) {
    int kp = rup(K > 0 ? K : 1, 2), mp = rup(M > 0 ? M : 1, MR);
    memset(out, 0, (size_t)mp * (size_t)kp * sizeof *out);
    for (int i = 0; i < M; i++) {
        const float *xr = x + (size_t)i * (size_t)K;
        int16_t *o = out + (size_t)i * kp;
        for (int q = 0; q < K; q++) o[q] = (int16_t)(gwr_ku_dql_one(xr[q], scale, zp) - zp);
    }
}
