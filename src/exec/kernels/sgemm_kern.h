/* sgemm_kern.h - the register-blocked micro-kernel of sgemm.c, stamped
 * once per instruction set by sgemm_kern.c. Before including it, define:
 *   KSFX      the suffix of the functions it defines (avx512, ...)
 *   KTARGET   the function attribute that enables the instruction set
 *   KV        the vector type, KVL its floats
 *   KLOAD(p), KSTORE(p, v), KSPLAT(x), KZERO(), KMUL(a, b), KADD(a, b),
 *   KFMA(a, b, c) = a * b + c
 *   KMR       rows of a tile (the broadcast side), KNV vectors across it;
 *   GEMV_ACC  the accumulators the products of few rows may hold.
 * It defines gwr_sgemm_kern_<KSFX> (see gwr_sgemm_kern_fn in sgemm.h) and
 * undefines all of the above, ready for the next instruction set.
 *
 * C[mr x nr] (rows ldc apart) = alpha * sum_k a[k][i] b[k][j] + beta C, beta 0
 * reading nothing of C. a is a packed tile, KMR floats per k (lda 0; rows
 * past mr ignored), or A's rows in place, lda apart; b is KNV vectors per
 * k, ldb apart (those nr covers where nr < KNR), readable in full even
 * where nr is less. The accumulators are KMR x KNV vectors held in
 * registers; tiles of one or two rows split k over extra accumulators, so
 * that the FMAs' latency does not serialize them (the M = 1 product of a
 * decode step or an LSTM step). */

#define KCAT_(a, b) a##b
#define KCAT(a, b) KCAT_(a, b)
#define KNR (KVL * KNV)
#define KMAXS 4
/* Loops over registers are unrolled whole: their bounds are constants. */
#define KUNROLL _Pragma("GCC unroll 16")

static inline KTARGET __attribute__((always_inline)) void KCAT(tile_, KSFX)(const int mr, const int ks, const int nv, const int inplace,
                                                                          int kc, const float *a, ptrdiff_t lda, const float *b,
                                                                          ptrdiff_t ldb, float *c, ptrdiff_t ldc, int nr, float alpha,
                                                                          float beta) {
    /* alpha and beta wait in memory (volatile: stored now, loaded after
     * the loop): held in registers across it, GCC 12 spilled an
     * accumulator of the 6 x 16 AVX2 tile instead (12 accumulators, 2 B
     * vectors, a broadcast and the two would be 17 of 16 ymm), a store and
     * a reload on every k that made the loop latency-bound (2-3x slower
     * than OpenBLAS on an AMD EPYC). */
    volatile float ab_mem[2];
    ab_mem[0] = alpha, ab_mem[1] = beta;
    KV acc[KMAXS][KMR][KNV];
    KUNROLL for (int s = 0; s < ks; s++)
        KUNROLL for (int i = 0; i < mr; i++)
            KUNROLL for (int v = 0; v < nv; v++) acc[s][i][v] = KZERO();
    int k = 0;
    for (; k + ks <= kc; k += ks)
        KUNROLL for (int s = 0; s < ks; s++) {
            const float *bk = b + (ptrdiff_t)(k + s) * ldb, *ak = inplace ? a + k + s : a + (ptrdiff_t)(k + s) * KMR;
            KV bv[KNV];
            KUNROLL for (int v = 0; v < nv; v++) bv[v] = KLOAD(bk + v * KVL);
            KUNROLL for (int i = 0; i < mr; i++) {
                KV av = KSPLAT(inplace ? ak[i * lda] : ak[i]);
                KUNROLL for (int v = 0; v < nv; v++) acc[s][i][v] = KFMA(av, bv[v], acc[s][i][v]);
            }
        }
    for (; k < kc; k++) {
        const float *bk = b + (ptrdiff_t)k * ldb, *ak = inplace ? a + k : a + (ptrdiff_t)k * KMR;
        KV bv[KNV];
        KUNROLL for (int v = 0; v < nv; v++) bv[v] = KLOAD(bk + v * KVL);
        KUNROLL for (int i = 0; i < mr; i++) {
            KV av = KSPLAT(inplace ? ak[i * lda] : ak[i]);
            KUNROLL for (int v = 0; v < nv; v++) acc[0][i][v] = KFMA(av, bv[v], acc[0][i][v]);
        }
    }
    KUNROLL for (int s = 1; s < ks; s++)
        KUNROLL for (int i = 0; i < mr; i++)
            KUNROLL for (int v = 0; v < nv; v++) acc[0][i][v] = KADD(acc[0][i][v], acc[s][i][v]);
    alpha = ab_mem[0], beta = ab_mem[1];
    KV va = KSPLAT(alpha), vb = KSPLAT(beta);
    if (nr == nv * KVL) {
        for (int i = 0; i < mr; i++)
            for (int v = 0; v < nv; v++) {
                float *cp = c + i * ldc + v * KVL;
                KV r = alpha == 1.0f ? acc[0][i][v] : KMUL(va, acc[0][i][v]); /* 1: the usual, exact either way */
                if (beta != 0) r = KFMA(vb, KLOAD(cp), r);
                KSTORE(cp, r);
            }
        return;
    }
    float t[KNR];
    for (int i = 0; i < mr; i++) {
        for (int v = 0; v < nv; v++) KSTORE(t + v * KVL, KMUL(va, acc[0][i][v]));
        float *cp = c + i * ldc;
        if (beta == 0)
            for (int j = 0; j < nr; j++) cp[j] = t[j];
        else
            for (int j = 0; j < nr; j++) cp[j] = t[j] + beta * cp[j];
    }
}

/* One instance per row count, vector count and side of A, so that every
 * loop above has constant bounds and the accumulators stay in registers. */
KTARGET void KCAT(gwr_sgemm_kern_, KSFX)(int mr, int kc, const float *a, ptrdiff_t lda, const float *b, ptrdiff_t ldb, float *c,
                                         ptrdiff_t ldc, int nr, float alpha, float beta) {
    int nv = (nr + KVL - 1) / KVL; /* a narrow last panel: only the vectors it covers */
#define KCALL(m, s, v, in) KCAT(tile_, KSFX)(m, s, v, in, kc, a, lda, b, ldb, c, ldc, nr, alpha, beta)
#if KNV == 3
#define KWIDTH(m, s, in)                    \
    if (nv == 1) KCALL(m, s, 1, in);        \
    else if (nv == 2) KCALL(m, s, 2, in);   \
    else KCALL(m, s, 3, in);
#else
#define KWIDTH(m, s, in)                    \
    if (nv == 1) KCALL(m, s, 1, in);        \
    else KCALL(m, s, 2, in);
#endif
#define KCASE(m, s)                         \
    case m:                                 \
        if (lda) {                          \
            KWIDTH(m, s, 1)                 \
        } else {                            \
            KWIDTH(m, s, 0)                 \
        }                                   \
        break;
    switch (mr) {
        KCASE(1, 4)
        KCASE(2, 2)
#if KMR >= 3
        KCASE(3, 1)
        KCASE(4, 1)
#endif
#if KMR >= 5
        KCASE(5, 1)
        KCASE(6, 1)
#endif
#if KMR >= 7
        KCASE(7, 1)
        KCASE(8, 1)
#endif
#if KMR >= 9
        KCASE(9, 1)
        KCASE(10, 1)
        KCASE(11, 1)
        KCASE(12, 1)
#endif
    default: break;
    }
#undef KCASE
#undef KWIDTH
#undef KCALL
}

/* The products of few rows over packed panels (gwr_sgemv_pb, sgemm.c):
 * C[m x np panels] = alpha A B + beta C, A's m rows in place (lda apart),
 * np (1 to 4) panels of B side by side (pstride floats apart, each K x
 * KNR, zero-padded: read whole), the last ncols[p] wide. The panels are
 * read once, from memory, as concurrent streams: one core reads memory
 * fastest with several streams in flight (a 512 x 8192 weight on an AMD
 * EPYC, one thread: 10.5 GB/s for one panel at a time, 14.5 for two, 20
 * for four, 21 for eight, where OpenBLAS's sgemv reads 4 to 8 rows of B at
 * once at 18-22; software prefetches ahead of each stream only slowed four
 * streams down, to 17), so as many panels go together as the registers
 * hold sums for (GEMV_ACC accumulators: m KNV per panel). Each column's
 * sum runs over k in order in one accumulator, the same instructions
 * whatever panels it goes with: a split over threads changes no bits. */
static inline KTARGET __attribute__((always_inline)) void KCAT(gemv_tile_, KSFX)(const int m, const int np, int K, const float *a,
                                                                               ptrdiff_t lda, const float *b, ptrdiff_t pstride,
                                                                               float *c, ptrdiff_t ldc, const int *ncols,
                                                                               float alpha, float beta) {
    KV acc[4][4][KNV];
    KUNROLL for (int i = 0; i < m; i++)
        KUNROLL for (int p = 0; p < np; p++)
            KUNROLL for (int v = 0; v < KNV; v++) acc[i][p][v] = KZERO();
    for (int k = 0; k < K; k++) {
        KV av[4];
        KUNROLL for (int i = 0; i < m; i++) av[i] = KSPLAT(a[i * lda + k]);
        KUNROLL for (int p = 0; p < np; p++) {
            const float *bk = b + p * pstride + (ptrdiff_t)k * KNR;
            KUNROLL for (int v = 0; v < KNV; v++) {
                KV bv = KLOAD(bk + v * KVL);
                KUNROLL for (int i = 0; i < m; i++) acc[i][p][v] = KFMA(av[i], bv, acc[i][p][v]);
            }
        }
    }
    KV va = KSPLAT(alpha), vb = KSPLAT(beta);
    for (int p = 0; p < np; p++)
        for (int i = 0; i < m; i++) {
            float t[KNR], *cp = c + i * ldc + p * KNR;
            for (int v = 0; v < KNV; v++) {
                KV r = alpha == 1.0f ? acc[i][p][v] : KMUL(va, acc[i][p][v]);
                if (ncols[p] == KNR && beta != 0) r = KFMA(vb, KLOAD(cp + v * KVL), r);
                if (ncols[p] == KNR) KSTORE(cp + v * KVL, r);
                else KSTORE(t + v * KVL, r);
            }
            if (ncols[p] < KNR)
                for (int j = 0; j < ncols[p]; j++) cp[j] = beta == 0 ? t[j] : t[j] + beta * cp[j];
        }
}

/* See gwr_sgemv_kern_fn (sgemm.h). */
KTARGET void KCAT(gwr_sgemv_kern_, KSFX)(int m, int np, int K, const float *a, ptrdiff_t lda, const float *b, ptrdiff_t pstride,
                                         float *c, ptrdiff_t ldc, const int *ncols, float alpha, float beta) {
    /* panels at once for m rows: what GEMV_ACC accumulators hold, 1 to 4 */
    int most = GEMV_ACC / (m * KNV);
    most = most < 1 ? 1 : most > 4 ? 4 : most;
    for (int p0 = 0; p0 < np; p0 += most) {
        int n = np - p0 < most ? np - p0 : most;
        const float *bp = b + p0 * pstride;
        float *cp = c + p0 * KNR;
        const int *nc = ncols + p0;
#define GCALL(mm, pp) KCAT(gemv_tile_, KSFX)(mm, pp, K, a, lda, bp, pstride, cp, ldc, nc, alpha, beta)
#define GCASE(mm)                                  \
    case mm:                                       \
        if (n == 4) GCALL(mm, 4);                  \
        else if (n == 3) GCALL(mm, 3);             \
        else if (n == 2) GCALL(mm, 2);             \
        else GCALL(mm, 1);                         \
        break;
        switch (m) {
            GCASE(1)
            GCASE(2)
            GCASE(3)
            GCASE(4)
        default: break;
        }
#undef GCASE
#undef GCALL
    }
}
#undef GEMV_ACC

/* sum_k a[k] b[k] over n floats, in four vectors of partial sums: the
 * dot products of a narrow last panel (sgemm.c). */
KTARGET float KCAT(gwr_sgemm_dot_, KSFX)(const float *a, const float *b, int n) {
    KV s0 = KZERO(), s1 = KZERO(), s2 = KZERO(), s3 = KZERO();
    int k = 0;
    for (; k + 4 * KVL <= n; k += 4 * KVL) {
        s0 = KFMA(KLOAD(a + k), KLOAD(b + k), s0);
        s1 = KFMA(KLOAD(a + k + KVL), KLOAD(b + k + KVL), s1);
        s2 = KFMA(KLOAD(a + k + 2 * KVL), KLOAD(b + k + 2 * KVL), s2);
        s3 = KFMA(KLOAD(a + k + 3 * KVL), KLOAD(b + k + 3 * KVL), s3);
    }
    for (; k + KVL <= n; k += KVL) s0 = KFMA(KLOAD(a + k), KLOAD(b + k), s0);
    float t[KVL], r = 0;
    KSTORE(t, KADD(KADD(s0, s1), KADD(s2, s3)));
    for (int i = 0; i < KVL; i++) r += t[i];
    for (; k < n; k++) r += a[k] * b[k];
    return r;
}

#undef KNR
#undef KMAXS
#undef KUNROLL
#undef KCAT
#undef KCAT_
#undef KSFX
#undef KTARGET
#undef KV
#undef KVL
#undef KLOAD
#undef KSTORE
#undef KSPLAT
#undef KZERO
#undef KMUL
#undef KADD
#undef KFMA
#undef KMR
#undef KNV
