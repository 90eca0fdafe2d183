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

/* ---- u8 x s8 with a prepared B (igemm.h, gwr_ku_ig8b) ----------------------
 *
 * Y = (A - za) B' with B' = B - zb constant, computed as A_u B' - zeff[i]
 * colsum(B')[j], A_u the bytes of A as uint8 (int8 A plus 128, zeff = za +
 * 128): every step modulo 2^32, so the bits are those of the int16 path.
 * B' is split into a dense int8 part (packed) and the rest (few entries, a
 * list per column) added after the dense product: dense values within
 * [-127, 127], and for AVX2 each pair of K of a column within |d0| + |d1|
 * <= 128 (dense_pair).
 * Dense layout: panels of 16 columns; per group g of 4 K, 64 bytes: column
 * j's 4 bytes (K = 4g .. 4g+3) at 4 j (j < 8) and 32 + 4 (j - 8), so one
 * 32-byte load gives a register of 8 columns x 4 K. A: rows padded to 4,
 * K to a multiple of 4, uint8.
 *   portable: int32 sums in C.
 *   AVX2: vpmaddubsw multiplies u8 x s8 and adds pairs in int16,
 *     saturating, which |a d0 + a' d1| <= 255 * 128 = 32640 never
 *     reaches; vpmaddwd with ones widens the pairs to int32, exactly.
 *   AVX-512 VNNI: vpdpbusd adds the four u8 x s8 products of each lane
 *     into int32 exactly (no saturation; it is not vpdpbusds). */
#define MR8 4
#define KCG 128 /* groups of 4 K per block: a B panel block is 8 KiB */
#define KIND_PORTABLE 0
#define KIND_AVX2 1
#define KIND_VNNI 2

size_t gwr_ku_igemm8_a_size(int M, int K) { return (size_t)rup(M > 0 ? M : 1, MR8) * (size_t)rup(K > 0 ? K : 1, 4); }

static int vnni_cpu(void) {
#if defined(GWR_VEC8_X86) && (defined(__GNUC__) || defined(__clang__))
    return gwr_ku_cnn_avx2() && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512bw");
#else
    return 0;
#endif
}

/* The kernel this CPU runs on B packed for kind: its own, else portable
 * (every packing computes right there). */
static int kind_runs(int kind) {
    if (kind == KIND_VNNI) return vnni_cpu() ? KIND_VNNI : KIND_PORTABLE;
    if (kind == KIND_AVX2) return gwr_ku_cnn_avx2() ? KIND_AVX2 : KIND_PORTABLE;
    return KIND_PORTABLE;
}

void gwr_ku_ig8b_free(gwr_ku_ig8b *p) {
    if (p) gwr_free(p->bp), gwr_free(p->colsum), gwr_free(p->optr), gwr_free(p->orow), gwr_free(p->oval), gwr_free(p->ocol), gwr_free(p->pcol), gwr_free(p);
}

/* B'[q][j] (B minus its zero point) of the int8 / uint8 B [K, N]; 0 past K. */
static inline int32_t bprime(const void *b, int sgn, int K, int N, const int32_t *zp, int nzp, int q, int j) {
    if (q >= K) return 0;
    size_t at = (size_t)q * (size_t)N + (size_t)j;
    return (sgn ? ((const int8_t *)b)[at] : ((const uint8_t *)b)[at]) - (zp ? zp[nzp == 1 ? 0 : j] : 0);
}

/* The dense values (d0, d1) of the pair (v0, v1) of K of one column: each
 * within [-127, 127], and for vpmaddubsw (kind AVX2) |d0| + |d1| <= 128,
 * since 255 (|d0| + |d1|) <= 32640 is what its int16 pair sum may reach
 * without saturating; the smaller of the two is kept whole where it can. */
static inline void dense_pair(int kind, int32_t v0, int32_t v1, int32_t *d0, int32_t *d1) {
    *d0 = v0 < -127 ? -127 : v0 > 127 ? 127 : v0;
    *d1 = v1 < -127 ? -127 : v1 > 127 ? 127 : v1;
    int32_t m0 = *d0 < 0 ? -*d0 : *d0, m1 = *d1 < 0 ? -*d1 : *d1;
    if (kind != KIND_AVX2 || m0 + m1 <= 128) return;
    int32_t *big = m0 >= m1 ? d0 : d1, *small = m0 >= m1 ? d1 : d0;
    *small = *small < -64 ? -64 : *small > 64 ? 64 : *small;
    int32_t budget = 128 - (*small < 0 ? -*small : *small);
    *big = *big < -budget ? -budget : *big > budget ? budget : *big;
}

gwr_ku_ig8b *gwr_ku_ig8b_make(const void *b, int sgn, int K, int N, const int32_t *zp, int nzp, int kind) {
    if (kind < 0) kind = vnni_cpu() ? KIND_VNNI : gwr_ku_cnn_avx2() ? KIND_AVX2 : KIND_PORTABLE;
    if (K <= 0 || N <= 0) return NULL;
    int kp = rup(K, 4), np = rup(N, NR);
    gwr_ku_ig8b *p = gwr_calloc(1, sizeof *p);
    if (!p) return NULL;
    p->K = K, p->N = N, p->kind = kind;
    p->optr = gwr_calloc((size_t)N + 1, sizeof *p->optr);
    if (!p->optr) return gwr_ku_ig8b_free(p), NULL;
    /* pass 1, row pairs over contiguous columns: the outliers per column
     * (counted in optr[j + 1]); too many and the int16 path is the faster */
    size_t nout = 0;
    for (int q = 0; q < K; q += 2)
        for (int j = 0; j < N; j++) {
            int32_t v0 = bprime(b, sgn, K, N, zp, nzp, q, j), v1 = bprime(b, sgn, K, N, zp, nzp, q + 1, j), d0, d1;
            dense_pair(kind, v0, v1, &d0, &d1);
            int n = (d0 != v0) + (d1 != v1);
            p->optr[j + 1] += n, nout += (size_t)n;
        }
    if (nout > (size_t)K * (size_t)N / 1024) return gwr_ku_ig8b_free(p), NULL;
    p->bp = gwr_calloc((size_t)kp * (size_t)np, 1);
    p->colsum = gwr_calloc((size_t)N, sizeof *p->colsum);
    p->orow = gwr_malloc((nout ? nout : 1) * sizeof *p->orow);
    p->oval = gwr_malloc((nout ? nout : 1) * sizeof *p->oval);
    p->ocol = gwr_malloc((size_t)N * sizeof *p->ocol);
    p->pcol = gwr_malloc(((size_t)np / NR + 1) * sizeof *p->pcol);
    int32_t *fill = gwr_malloc((size_t)N * sizeof *fill);
    if (!p->bp || !p->colsum || !p->orow || !p->oval || !p->ocol || !p->pcol || !fill) return gwr_free(fill), gwr_ku_ig8b_free(p), NULL;
    for (int j = 0; j < N; j++) {
        if (j % NR == 0) p->pcol[j / NR] = p->nocol;
        if (p->optr[j + 1]) p->ocol[p->nocol++] = j;
        p->optr[j + 1] += p->optr[j], fill[j] = p->optr[j];
    }
    p->pcol[np / NR] = p->nocol;
    /* pass 2: the dense part packed, the outliers listed (rows ascending), the column sums */
    uint32_t *cs = (uint32_t *)p->colsum;
    for (int q = 0; q < K; q += 2)
        for (int j = 0; j < N; j++) {
            int32_t v[2] = {bprime(b, sgn, K, N, zp, nzp, q, j), bprime(b, sgn, K, N, zp, nzp, q + 1, j)}, d[2];
            dense_pair(kind, v[0], v[1], &d[0], &d[1]);
            int8_t *pan = p->bp + (size_t)(j / NR) * kp * NR;
            int jj = j % NR, off = jj < 8 ? 4 * jj : 32 + 4 * (jj - 8);
            for (int h = 0; h < 2 && q + h < K; h++) {
                cs[j] += (uint32_t)v[h];
                pan[(size_t)((q + h) / 4) * 64 + off + (q + h) % 4] = (int8_t)d[h];
                if (d[h] != v[h]) p->orow[fill[j]] = q + h, p->oval[fill[j]++] = v[h] - d[h];
            }
        }
    gwr_free(fill);
    return p;
}

void gwr_ku_igemm8_pack_a(const void *a, int sgn, int M, int K, const int32_t *zp, int nzp, uint8_t *out, int32_t *zeff) {
    int kp = rup(K > 0 ? K : 1, 4), mp = rup(M > 0 ? M : 1, MR8);
    memset(out, 0, (size_t)mp * (size_t)kp);
    for (int i = 0; i < M; i++) {
        uint8_t *o = out + (size_t)i * kp;
        const uint8_t *r = (const uint8_t *)a + (size_t)i * (size_t)K;
        if (sgn)
            for (int q = 0; q < K; q++) o[q] = (uint8_t)(r[q] ^ 0x80u); /* int8 + 128 */
        else
            memcpy(o, r, (size_t)K);
        zeff[i] = (zp ? zp[nzp == 1 ? 0 : i] : 0) + (sgn ? 128 : 0);
    }
}

void gwr_ku_igemm8_pack_a_dql(const float *x, int M, int K, float scale, int zp, uint8_t *out, int32_t *zeff) {
    int kp = rup(K > 0 ? K : 1, 4), mp = rup(M > 0 ? M : 1, MR8);
    memset(out, 0, (size_t)mp * (size_t)kp);
    for (int i = 0; i < M; i++) {
        const float *xr = x + (size_t)i * (size_t)K;
        uint8_t *o = out + (size_t)i * kp;
        gwr_ku_dql_row(xr, K, scale, zp, o);
        zeff[i] = zp;
    }
}

/* c[MR8][16] (+)= a[MR8 rows, 4 ng] b[ng groups of the panel]; lda in bytes. */
static void kern8_c(int ng, const uint8_t *a, int lda, const int8_t *b, uint32_t *c, int acc) {
    uint32_t s[MR8][NR];
    memset(s, 0, sizeof s);
    for (int g = 0; g < ng; g++) {
        const int8_t *bg = b + (size_t)g * 64;
        for (int r = 0; r < MR8; r++) {
            const uint8_t *ar = a + (size_t)r * lda + 4 * g;
            for (int j = 0; j < NR; j++) {
                const int8_t *bj = bg + (j < 8 ? 4 * j : 32 + 4 * (j - 8));
                s[r][j] += (uint32_t)(ar[0] * bj[0] + ar[1] * bj[1] + ar[2] * bj[2] + ar[3] * bj[3]);
            }
        }
    }
    for (int r = 0; r < MR8; r++)
        for (int j = 0; j < NR; j++) c[r * NR + j] = acc ? c[r * NR + j] + s[r][j] : s[r][j];
}

#ifdef GWR_VEC8_X86
GWR_AVX2_FN static inline void store8_tile(uint32_t *c, int acc, __m256i *r) {
    for (int i = 0; i < 2 * MR8; i++) {
        __m256i *p = (__m256i *)(c + i * 8);
        _mm256_storeu_si256(p, acc ? _mm256_add_epi32(_mm256_loadu_si256(p), r[i]) : r[i]);
    }
}

/* The u8 x s8 micro-kernel, c[MR8][16] (+)= a b, stamped for each
 * instruction set with DOT(acc, x, b): acc plus the four u8 x s8 products
 * of each int32 lane of x and b. */
#define IG8_ROW(r, DOT)                                                                                     \
    memcpy(&w, a + (size_t)(r) * lda + 4 * g, 4), x = _mm256_set1_epi32(w);                                 \
    c##r##0 = DOT(c##r##0, x, b0), c##r##1 = DOT(c##r##1, x, b1);
#define IG8_KERNEL(name, ATTR, DOT)                                                                         \
    ATTR static void name(int ng, const uint8_t *a, int lda, const int8_t *b, uint32_t *c, int acc) {       \
        __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00; \
        for (int g = 0; g < ng; g++) {                                                                      \
            __m256i b0 = _mm256_loadu_si256((const __m256i *)(b + (size_t)g * 64));                          \
            __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + (size_t)g * 64 + 32));                     \
            int32_t w;                                                                                      \
            __m256i x;                                                                                      \
            IG8_ROW(0, DOT) IG8_ROW(1, DOT) IG8_ROW(2, DOT) IG8_ROW(3, DOT)                                 \
        }                                                                                                   \
        __m256i r[2 * MR8] = {c00, c01, c10, c11, c20, c21, c30, c31};                                      \
        store8_tile(c, acc, r);                                                                             \
    }
/* AVX2: vpmaddubsw's int16 pair sums (which the packing keeps from
 * saturating) widened and added by vpmaddwd with ones. */
#define DOT_AVX2(acc, x, b) _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(x, b), _mm256_set1_epi16(1)))
IG8_KERNEL(kern8_avx2, GWR_AVX2_FN, DOT_AVX2)
/* AVX-512 VNNI on 256-bit registers (AVX512VL): vpdpbusd, exact; compiled
 * for it and run only where __builtin_cpu_supports says the CPU has it. */
#define DOT_VNNI(acc, x, b) _mm256_dpbusd_epi32(acc, x, b)
IG8_KERNEL(kern8_vnni, __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl,avx512vnni"))), DOT_VNNI)
#undef DOT_AVX2
#undef DOT_VNNI
#undef IG8_KERNEL
#undef IG8_ROW
#endif

typedef void (*kern8_fn)(int, const uint8_t *, int, const int8_t *, uint32_t *, int);

static kern8_fn kern8_for(const gwr_ku_ig8b *b) {
#ifdef GWR_VEC8_X86
    int run = kind_runs(b->kind);
    if (run == KIND_AVX2) return kern8_avx2;
    if (run == KIND_VNNI) return kern8_vnni;
#else
    (void)b;
#endif
    return kern8_c;
}

/* Row i's outlier sum for column j (the entries of B' the dense part left out). */
static uint32_t outliers(const gwr_ku_ig8b *b, const uint8_t *ar, int j) {
    uint32_t s = 0;
    for (int32_t o = b->optr[j]; o < b->optr[j + 1]; o++) s += (uint32_t)(ar[b->orow[o]] * b->oval[o]);
    return s;
}

#ifdef GWR_VEC8_X86
/* 16 columns of a row: (float)(int32)(t - z cs) * scale (scale[0] when one). */
GWR_AVX2_FN static void row16_f32_avx2(const uint32_t *t, const uint32_t *cs, uint32_t z, const float *scale, int one, float *y) {
    __m256i zz = _mm256_set1_epi32((int32_t)z);
    for (int h = 0; h < 2; h++) {
        __m256i v = _mm256_sub_epi32(_mm256_loadu_si256((const __m256i *)(t + 8 * h)),
                                     _mm256_mullo_epi32(zz, _mm256_loadu_si256((const __m256i *)(cs + 8 * h))));
        __m256 s = one ? _mm256_set1_ps(scale[0]) : _mm256_loadu_ps(scale + 8 * h);
        _mm256_storeu_ps(y + 8 * h, _mm256_mul_ps(_mm256_cvtepi32_ps(v), s));
    }
}
#endif

/* Where a product goes: int32 sums into yi, or float sums times scale into yf. */
typedef struct out8 {
    int M, ldy, nscale, avx2;
    const uint8_t *ap;
    const int32_t *zeff;
    const gwr_ku_ig8b *b;
    int32_t *yi;
    float *yf;
    const float *scale;
} out8;

/* Tile (i0, p) of the dense product (MR8 rows x NR columns; its values are
 * changed) written out: the outliers of the panel's columns added, minus
 * zeff[i] colsum[j], as int32 or converted and scaled. */
static void tile_out(const out8 *o, int i0, int p, uint32_t *t) {
    const gwr_ku_ig8b *b = o->b;
    int kp = rup(b->K, 4), N = b->N, j0 = p * NR, nj = N - j0 < NR ? N - j0 : NR;
    const uint32_t *cs = (const uint32_t *)b->colsum + j0;
    const float *sc = o->nscale == 1 ? o->scale : o->scale ? o->scale + j0 : NULL;
    for (int r = 0; r < MR8 && i0 + r < o->M; r++) {
        int i = i0 + r;
        uint32_t *tr = t + r * NR, z = (uint32_t)o->zeff[i];
        const uint8_t *ar = o->ap + (size_t)i * kp;
        for (int32_t oc = b->pcol[p]; oc < b->pcol[p + 1]; oc++) tr[b->ocol[oc] - j0] += outliers(b, ar, b->ocol[oc]);
        if (o->yi) {
            int32_t *y = o->yi + (size_t)i * o->ldy + j0;
            for (int j = 0; j < nj; j++) y[j] = (int32_t)(tr[j] - z * cs[j]);
            continue;
        }
        float *y = o->yf + (size_t)i * o->ldy + j0;
#ifdef GWR_VEC8_X86
        if (nj == NR && o->avx2) {
            row16_f32_avx2(tr, cs, z, sc, o->nscale == 1, y);
            continue;
        }
#endif
        for (int j = 0; j < nj; j++) y[j] = (float)(int32_t)(tr[j] - z * cs[j]) * sc[o->nscale == 1 ? 0 : j];
    }
}

/* The product written out through tile_out. K within one block (the
 * encoders' K <= 512): each tile written out as the kernel leaves it, no
 * buffer of the whole product; else in tiles of a buffer across the K
 * blocks (tile (i, p) at (i / MR8 * np / NR + p) * MR8 * NR). -1 when out of
 * memory. */
static int igemm8_run(const out8 *o) {
    const gwr_ku_ig8b *b = o->b;
    int kp = rup(b->K, 4), ng = kp / 4, mp = rup(o->M, MR8), np = rup(b->N, NR);
    kern8_fn kern = kern8_for(b);
    if (ng <= KCG) {
        uint32_t t[MR8 * NR];
        for (int p = 0; p < np / NR; p++)
            for (int i = 0; i < mp; i += MR8) {
                kern(ng, o->ap + (size_t)i * kp, kp, b->bp + (size_t)p * kp * NR, t, 0);
                tile_out(o, i, p, t);
            }
        return 0;
    }
    uint32_t *c = gwr_malloc((size_t)mp * (size_t)np * sizeof *c);
    if (!c) return -1;
    for (int g0 = 0; g0 < ng; g0 += KCG) {
        int n = ng - g0 < KCG ? ng - g0 : KCG;
        for (int p = 0; p < np / NR; p++) {
            const int8_t *bpan = b->bp + (size_t)p * kp * NR + (size_t)g0 * 64;
            for (int i = 0; i < mp; i += MR8)
                kern(n, o->ap + (size_t)i * kp + 4 * (size_t)g0, kp, bpan, c + ((size_t)(i / MR8) * (np / NR) + p) * MR8 * NR, g0 > 0);
        }
    }
    for (int i = 0; i < mp; i += MR8)
        for (int p = 0; p < np / NR; p++) tile_out(o, i, p, c + ((size_t)(i / MR8) * (np / NR) + p) * MR8 * NR);
    gwr_free(c);
    return 0;
}

int gwr_ku_igemm8(int M, const uint8_t *ap, const int32_t *zeff, const gwr_ku_ig8b *b, int32_t *y, int ldy) {
    if (M <= 0) return 0;
    out8 o = {.M = M, .ldy = ldy, .ap = ap, .zeff = zeff, .b = b, .yi = y};
    return igemm8_run(&o);
}

int gwr_ku_igemm8_f32(int M, const uint8_t *ap, const int32_t *zeff, const gwr_ku_ig8b *b, const float *scale, int nscale,
                      const float *bias, float *y, int ldy) {
    if (M <= 0) return 0;
    out8 o = {.M = M, .ldy = ldy, .nscale = nscale, .avx2 = gwr_ku_cnn_avx2(), .ap = ap, .zeff = zeff, .b = b, .yf = y, .scale = scale};
    if (igemm8_run(&o)) return -1;
    /* a pass of its own: the sum rounds the product first, as Mul then Add do */
    if (bias)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < b->N; j++) y[(size_t)i * ldy + j] += bias[j];
    return 0;
}
