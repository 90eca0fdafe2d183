/* igemm.h - exact 8-bit integer matrix products (igemm.c) for
 * MatMulInteger and QLinearMatMul: Y = (A - a_zp) (B - b_zp) as int32,
 * the sums wrapping modulo 2^32 as the spec's int32 accumulation does.
 * Private to src/exec/kernels. */
#ifndef GWR_EXEC_IGEMM_H
#define GWR_EXEC_IGEMM_H

#include <stddef.h>
#include <stdint.h>

#include "exec/exec_internal.h"

/* int16 elements of A packed by gwr_ku_igemm_pack_a (rows padded to 6, K
 * to an even count) and of B packed by gwr_ku_igemm_pack_b (columns
 * padded to 16, K to an even count). */
size_t gwr_ku_igemm_a_size(int M, int K);
size_t gwr_ku_igemm_b_size(int K, int N);

/* A [M, K] row-major of uint8 (sgn 0) or int8 (sgn 1) minus its zero
 * point: zp NULL (0), one value (nzp 1) or one per row (nzp M). */
void gwr_ku_igemm_pack_a(const void *a, int sgn, int M, int K, const int32_t *zp, int nzp, int16_t *out);
/* B [K, N] row-major minus its zero point: NULL, one value (nzp 1) or one
 * per column (nzp N). sgn GWR_KU_IGEMM_I16: B's elements are int16 already
 * in [-255, 255] (ConvInteger's im2col columns of x minus its zero point). */
#define GWR_KU_IGEMM_I16 2
void gwr_ku_igemm_pack_b(const void *b, int sgn, int K, int N, const int32_t *zp, int nzp, int16_t *out);

/* Y[M, N] (row stride ldy) = packed A times packed B, every sum an exact
 * int32 wrapping modulo 2^32. AVX2 where gwr_ku_cnn_avx2() says so (its
 * force-portable switch covers this path too). -1 when out of memory. */
int gwr_ku_igemm(int M, int N, int K, const int16_t *ap, const int16_t *bp, int32_t *y, int ldy);

/* The same product, each sum then converted to float and multiplied by
 * scale[0] (nscale 1) or scale[j] (nscale N), then bias[j] added (bias may
 * be NULL): (float)acc * scale, rounded, + bias, rounded, the bits of
 * MatMulInteger -> Cast -> Mul -> Add. -1 when out of memory. */
int gwr_ku_igemm_f32(int M, int N, int K, const int16_t *ap, const int16_t *bp, const float *scale, int nscale,
                     const float *bias, float *y, int ldy);
/* A [M, K] float32 quantized as DynamicQuantizeLinear does with scale and
 * zero point zp (gwr_ku_dql_one), minus zp, packed as gwr_ku_igemm_pack_a
 * packs: DynamicQuantizeLinear fused with the packing. */
void gwr_ku_igemm_pack_a_dql(const float *x, int M, int K, float scale, int zp, int16_t *out);

/* B [K, N] minus its zero point, constant, prepared for the u8 x s8
 * kernels (igemm.c): a dense int8 part in panels, the rest as a list per
 * column, and column sums for A's zero point. kind: 0 portable, 2 AVX-512
 * VNNI vpdpbusd (dense values within [-127, 127]), 1 AVX2 vpmaddubsw (also
 * |d0| + |d1| <= 128 for each pair of K of a column, the bound under which
 * its int16 pair sums cannot saturate); -1 picks the best the CPU runs.
 * NULL when out of memory or when more than 1/1024 of B' has to go to the
 * lists (the int16 path is then the faster). A packing runs on any CPU: a
 * kernel the CPU lacks falls back to the portable one. */
typedef struct gwr_ku_ig8b {
    int K, N, kind;
    int8_t *bp;
    int32_t *colsum, *optr, *orow, *oval; /* column j's outliers: orow/oval[optr[j] .. optr[j + 1]) */
    int32_t *ocol, nocol;                 /* the columns that have some, ascending */
    int32_t *pcol;                        /* panel p's (16 columns) among them: ocol[pcol[p] .. pcol[p + 1]) */
} gwr_ku_ig8b;
gwr_ku_ig8b *gwr_ku_ig8b_make(const void *b, int sgn, int K, int N, const int32_t *zp, int nzp, int kind);
void gwr_ku_ig8b_free(gwr_ku_ig8b *p);
/* uint8 bytes of A [M, K] packed for those kernels (rows padded to 4, K
 * to a multiple of 4): uint8 as is, int8 plus 128; zeff[i] (M values) the
 * zero point to subtract then (zp + 128 for int8). */
size_t gwr_ku_igemm8_a_size(int M, int K);
void gwr_ku_igemm8_pack_a(const void *a, int sgn, int M, int K, const int32_t *zp, int nzp, uint8_t *out, int32_t *zeff);
/* DynamicQuantizeLinear of x fused with that packing (zeff[i] = zp). */
void gwr_ku_igemm8_pack_a_dql(const float *x, int M, int K, float scale, int zp, uint8_t *out, int32_t *zeff);
/* gwr_ku_igemm's and gwr_ku_igemm_f32's products, the same bits, on a
 * prepared B. -1 when out of memory. */
int gwr_ku_igemm8(int M, const uint8_t *ap, const int32_t *zeff, const gwr_ku_ig8b *b, int32_t *y, int ldy);
int gwr_ku_igemm8_f32(int M, const uint8_t *ap, const int32_t *zeff, const gwr_ku_ig8b *b, const float *scale, int nscale,
                      const float *bias, float *y, int ldy);

/* MatMulInteger-like kernels' state from a constant 2-D B (input ib) and a
 * constant or absent zero point (input izp): B minus its zero point packed
 * for gwr_ku_igemm once (linalg.c). */
typedef struct gwr_ku_qmm_prep {
    int64_t K, N;
    int16_t *bp;
    gwr_ku_ig8b *b8; /* the u8 x s8 form where it pays (then bp is NULL) */
} gwr_ku_qmm_prep;
gwr_status gwr_ku_qmm_prepare_at(gwr_kctx *k, int ib, int izp, void **state);
void gwr_ku_qmm_prep_free(void *state);

#endif
