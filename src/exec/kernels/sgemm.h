/* sgemm.h - gwr's own float32 GEMM, with a constant operand packed once.
 *
 * OpenBLAS 0.3.21 exports no packing API, so it repacks a layer's
 * constant weights on every call (sgemm_itcopy / sgemm_oncopy: 11% of
 * gpt_dec_s128's and of resnet18's time) and its fixed costs dominate the
 * small GEMMs of MobileNet's 1x1 convolutions. Here the weights are packed
 * at planning (gemm_prep.c, rnn_prep.c) and the products run a
 * register-blocked micro-kernel (sgemm_kern.h) chosen once by the CPU:
 * AVX-512, AVX2+FMA, or portable vectors. A Conv's weights are the
 * broadcast side, which the kernel reads in place as fast as packed
 * (bench_sgemm: within 1% on every Conv shape of the bench models), so
 * they are not packed (nor copied: no memory).
 *
 * Every product is C (M x N, rows ldc apart) = alpha A' B' + beta C with
 * A' [M, K] and B' [K, N]; beta 0 reads nothing of C. A' is read in place
 * (rows lda apart) or, A^T, from tiles of MR rows packed k-major per call;
 * B' from panels of NR columns packed k-major or in place (rows ldb
 * apart). The products split over panels of C's columns with
 * gwr_tpool_parallel. A call that cannot get its scratch returns -1 with
 * C untouched (callers fall back to OpenBLAS). Private to src/exec. */
#ifndef GWR_EXEC_SGEMM_H
#define GWR_EXEC_SGEMM_H

#include <stddef.h>

#include "exec/exec_internal.h"

/* The micro-kernel: C[mr x nr] = alpha sum_k a(i, k) b[k * ldb + j] + beta C,
 * a(i, k) = a[k * MR + i] (a packed tile, lda 0) or a[i * lda + k] (A in
 * place); see sgemm_kern.h. */
typedef void (*gwr_sgemm_kern_fn)(int mr, int kc, const float *a, ptrdiff_t lda, const float *b, ptrdiff_t ldb, float *c, ptrdiff_t ldc,
                                  int nr, float alpha, float beta);
void gwr_sgemm_kern_avx512(int mr, int kc, const float *a, ptrdiff_t lda, const float *b, ptrdiff_t ldb, float *c, ptrdiff_t ldc, int nr,
                           float alpha, float beta);
void gwr_sgemm_kern_avx2(int mr, int kc, const float *a, ptrdiff_t lda, const float *b, ptrdiff_t ldb, float *c, ptrdiff_t ldc, int nr,
                         float alpha, float beta);
void gwr_sgemm_kern_vec(int mr, int kc, const float *a, ptrdiff_t lda, const float *b, ptrdiff_t ldb, float *c, ptrdiff_t ldc, int nr,
                        float alpha, float beta);

/* The products of few rows (sgemm_kern.h): C [m x np panels] = alpha A
 * B + beta C for m (1 to 4) rows of A in place (lda apart) and np (1 to
 * 4) packed panels of B [K x NR], pstride floats apart, the last ncols[p]
 * columns of C each (up to NR; the panels are zero-padded). */
typedef void (*gwr_sgemv_kern_fn)(int m, int np, int K, const float *a, ptrdiff_t lda, const float *b, ptrdiff_t pstride, float *c,
                                  ptrdiff_t ldc, const int *ncols, float alpha, float beta);
void gwr_sgemv_kern_avx512(int m, int np, int K, const float *a, ptrdiff_t lda, const float *b, ptrdiff_t pstride, float *c,
                           ptrdiff_t ldc, const int *ncols, float alpha, float beta);
void gwr_sgemv_kern_avx2(int m, int np, int K, const float *a, ptrdiff_t lda, const float *b, ptrdiff_t pstride, float *c,
                         ptrdiff_t ldc, const int *ncols, float alpha, float beta);
void gwr_sgemv_kern_vec(int m, int np, int K, const float *a, ptrdiff_t lda, const float *b, ptrdiff_t pstride, float *c,
                        ptrdiff_t ldc, const int *ncols, float alpha, float beta);

/* sum_k a[k] b[k] over n floats (sgemm_kern.h). */
typedef float (*gwr_sgemm_dot_fn)(const float *a, const float *b, int n);
float gwr_sgemm_dot_avx512(const float *a, const float *b, int n);
float gwr_sgemm_dot_avx2(const float *a, const float *b, int n);
float gwr_sgemm_dot_vec(const float *a, const float *b, int n);

/* The instruction sets, best first. */
typedef enum { GWR_SGEMM_AVX512, GWR_SGEMM_AVX2, GWR_SGEMM_VEC, GWR_SGEMM_NISA } gwr_sgemm_isa;

/* The set new packs and unpacked calls use: the best the CPU has, unless
 * forced (tests: each variant in turn; GWR_SGEMM_NISA restores the CPU's
 * choice). Returns 0, or -1 when the CPU lacks the one asked for. */
int gwr_sgemm_force_isa(gwr_sgemm_isa isa);
gwr_sgemm_isa gwr_sgemm_current_isa(void);

/* Whether the kernels use this sgemm (layers pack their weights for it at
 * planning): yes unless the environment sets GWR_SGEMM=off (to measure
 * OpenBLAS alone); read once. */
int gwr_sgemm_enabled(void);

/* Whether k's layer runs its products here: enabled, and k's pool runs as
 * many workers as the layer may use. Until the pool runs them (threads.c
 * is serial for now), OpenBLAS's own threads serve --threads N better,
 * and the products stay there. */
int gwr_sgemm_for(const gwr_kctx *k);

/* A constant B packed for one instruction set. */
typedef struct gwr_sgemm_pack {
    gwr_sgemm_isa isa;
    int N, K;      /* op(B) is K x N */
    float *p;      /* panels of NR columns, K x NR each */
} gwr_sgemm_pack;

/* op(B) [K, N] (B^T when tb, B [N, K] then) packed; NULL when out of
 * memory or K, N < 1. Free with gwr_sgemm_pack_free. */
gwr_sgemm_pack *gwr_sgemm_pack_b(int tb, int K, int N, const float *B, int ldb);
void gwr_sgemm_pack_free(gwr_sgemm_pack *pk);

/* C = alpha op(A) PB + beta C, PB a packed B (M rows of A). */
int gwr_sgemm_pb(gwr_tpool *tp, int ta, int M, const float *A, int lda, const gwr_sgemm_pack *pb, float alpha, float beta, float *C,
                 int ldc);
/* The rows up to which gwr_sgemv_pb computes a product. */
enum { GWR_SGEMV_MAX_ROWS = 4 };
/* C = alpha A PB + beta C for M <= GWR_SGEMV_MAX_ROWS rows of A in place
 * (a decode step's token): PB's panels stream once from memory, up to
 * four at a time, groups of four panels split over tp's threads. Every column of C is
 * computed the same way whatever the split: the same bits for any
 * thread count. Allocates nothing: 0, or -1 for M outside 1..4. */
int gwr_sgemv_pb(gwr_tpool *tp, int M, const float *A, int lda, const gwr_sgemm_pack *pb, float alpha, float beta, float *C, int ldc);
/* The fewest columns gwr_sgemm is worth calling for with B in place:
 * under it, one vector's width, the kernel computes mostly padding and
 * OpenBLAS is faster (bench_sgemm, squeeze-excite's 576 x 1 x 144: 3.4
 * against 24 us; N 8: 13.5 against 24.6; N 16: 30 against 24). */
int gwr_sgemm_min_n(void);
/* C = alpha op(A) op(B) + beta C, A^T and B^T packed per call, A and B
 * read in place (then it allocates nothing and cannot fail). */
int gwr_sgemm(gwr_tpool *tp, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
              float beta, float *C, int ldc);

#endif
