/* cnn_isa.h - which instruction set the hand-vectorized CNN kernels
 * (conv_depthwise.c, im2col_rows.c) run: AVX2+FMA where the CPU has it
 * (checked at run time), the portable path (GCC/Clang vector extensions,
 * SSE2 / NEON) elsewhere; and the helpers of theirs that conv.c calls.
 * Private to src/exec. */
#ifndef GWR_EXEC_CNN_ISA_H
#define GWR_EXEC_CNN_ISA_H

#include <stdint.h>

/* Does this build have the AVX2 kernels, and does the CPU run them (and
 * were they not turned off)? */
int gwr_ku_cnn_avx2(void);
/* on != 0: every CNN kernel takes its portable path from now on, on any
 * CPU (the unit tests check that path on the machines that would
 * otherwise skip it); 0: back to the CPU check. Not thread-safe: call it
 * while no session runs. */
void gwr_ku_cnn_force_portable(int on);

/* dst[i] = src[s * i] for i in [0, n), float32 (im2col_rows.c): im2col's
 * strided column rows, stride 2 vectorized. */
void gwr_ku_gather_f32(const float *src, int64_t s, int64_t n, float *dst);
/* m[i] = x > m[i] ? x : m[i] for x = src[s * i], i in [0, n): MaxPool's
 * row of outputs updated by one tap (pool.c), strides 1 and 2 vectorized. */
void gwr_ku_max_row_f32(float *m, const float *src, int64_t s, int64_t n);

#endif
