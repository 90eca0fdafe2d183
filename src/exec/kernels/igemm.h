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

/* MatMulInteger-like kernels' state from a constant 2-D B (input ib) and a
 * constant or absent zero point (input izp): B minus its zero point packed
 * for gwr_ku_igemm once (linalg.c). */
typedef struct gwr_ku_qmm_prep {
    int64_t K, N;
    int16_t *bp;
} gwr_ku_qmm_prep;
gwr_status gwr_ku_qmm_prepare_at(gwr_kctx *k, int ib, int izp, void **state);
void gwr_ku_qmm_prep_free(void *state);

#endif
