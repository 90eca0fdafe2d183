/* vec4.h - four-float vectors (GCC/Clang vector extensions, 16 bytes: SSE2
 * on every x86-64, NEON on AArch64, so no CPU check) and unaligned loads
 * and stores, for the convolution kernels that vectorize by hand
 * (conv_depthwise.c, conv_winograd.c). Private to src/exec/kernels. */
#ifndef GWR_EXEC_VEC4_H
#define GWR_EXEC_VEC4_H

#include <stdint.h>
#include <string.h>

typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));

static inline v4f ld4(const float *p) {
    v4f v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void st4(float *p, v4f v) { memcpy(p, &v, sizeof v); }

#endif
