/* vec8.h - eight-float vectors (GCC/Clang vector extensions, 32 bytes)
 * for the CNN kernels that have an AVX2 path (conv_depthwise.c,
 * conv_winograd.c, im2col_rows.c): one register inside a function built
 * with target("avx2"), two SSE2 / NEON ones elsewhere. Everything here is
 * always inlined, so no 32-byte vector crosses a call (the -Wpsabi
 * warning about such calls, silenced here, cannot apply). Private to
 * src/exec/kernels. */
#ifndef GWR_EXEC_VEC8_H
#define GWR_EXEC_VEC8_H

#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) /* clang too: it takes GCC's diagnostic pragmas and has -Wpsabi */
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

/* The AVX2 variants are built where GCC/Clang target x86-64 (picked at
 * run time, gwr_ku_cnn_avx2). */
#if defined(__x86_64__) && defined(__GNUC__)
#define GWR_VEC8_X86 1
#define GWR_AVX2_FN __attribute__((target("avx2,fma")))
#endif

typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

#define V8_INLINE static inline __attribute__((always_inline))

V8_INLINE v8f ld8(const float *p) {
    v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}
V8_INLINE void st8(float *p, v8f v) { memcpy(p, &v, sizeof v); }
V8_INLINE v8f splat8(float c) { return (v8f){c, c, c, c, c, c, c, c}; }

/* Lanes of the concatenation a:b (a's lanes 0-7, b's 8-15). */
#if defined(__clang__)
#define V8_SHUF(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define V8_SHUF(a, b, ...) __builtin_shuffle(a, b, (v8i){__VA_ARGS__})
#endif
/* As two shuffles that each map to one AVX2 instruction (vshufps within
 * 128-bit halves, then vpermpd across them): a one-step shuffle became
 * two vpermps and a blend. */
V8_INLINE v8f evens8(v8f a, v8f b) {
    v8f t = V8_SHUF(a, b, 0, 2, 8, 10, 4, 6, 12, 14);
    return V8_SHUF(t, t, 0, 1, 4, 5, 2, 3, 6, 7);
}
V8_INLINE v8f odds8(v8f a, v8f b) {
    v8f t = V8_SHUF(a, b, 1, 3, 9, 11, 5, 7, 13, 15);
    return V8_SHUF(t, t, 0, 1, 4, 5, 2, 3, 6, 7);
}
/* a0 b0 a1 b1 .. a3 b3 and a4 b4 .. a7 b7 */
V8_INLINE v8f zip_lo8(v8f a, v8f b) { return V8_SHUF(a, b, 0, 8, 1, 9, 2, 10, 3, 11); }
V8_INLINE v8f zip_hi8(v8f a, v8f b) { return V8_SHUF(a, b, 4, 12, 5, 13, 6, 14, 7, 15); }

#endif
