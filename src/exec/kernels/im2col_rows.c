/* im2col_rows.c - the strided gather of im2col's column rows, float32:
 * dst[i] = src[s * i]; and MaxPool's row update, m[i] = max(m[i],
 * src[s * i]), which reads its rows the same way.
 *
 * A strided convolution's columns (the first layer of most CNNs, 3x3 or
 * 7x7 stride 2, and the 1x1 stride-2 downsampling layers) are built one
 * element at a time by a scalar loop: that loop took more time than the
 * GEMM after it on MobileNetV3's first layer. Stride 2 keeps the even
 * lanes of two vector loads instead: eight outputs per step on the AVX2
 * path (runtime check, cnn_isa.h), four on the portable one (SSE2 /
 * NEON vector extensions). The copy is exact, so both paths give the
 * same bits. */
#include <stdint.h>
#include <string.h>

#include "exec/kernels/cnn_isa.h"
#include "exec/kernels/kernel_util.h"
#include "exec/kernels/vec4.h"
#include "exec/kernels/vec8.h"

/* Stride 2, W lanes a step (W = 8: v8f, 4: v4f): the last step reads
 * src[2 i + 2 W - 1], so steps run while that is within the n-th input
 * (2 n - 1 elements), the rest one at a time. The body takes no vector
 * argument, so the AVX2 function inlines it (clang refuses a call that
 * passes a 32-byte vector from an AVX2 function to one built without). */
#define GATHER2(name, attr, T, LD, W, EVENS)                                 \
    V8_INLINE void name##_body(const float *src, int64_t n, float *dst) {    \
        int64_t i = 0;                                                       \
        for (; i + W < n; i += W) {                                          \
            T e = EVENS(LD(src + 2 * i), LD(src + 2 * i + W));               \
            memcpy(dst + i, &e, sizeof e);                                   \
        }                                                                    \
        for (; i < n; i++) dst[i] = src[2 * i];                              \
    }                                                                        \
    attr static void name(const float *src, int64_t n, float *dst) { name##_body(src, n, dst); }

#if defined(__clang__)
#define EVENS4(a, b) __builtin_shufflevector(a, b, 0, 2, 4, 6)
#else
#define EVENS4(a, b) __builtin_shuffle(a, b, (v4i){0, 2, 4, 6})
#endif

GATHER2(gather2_portable, , v4f, ld4, 4, EVENS4)
#ifdef GWR_VEC8_X86
GATHER2(gather2_avx2, GWR_AVX2_FN, v8f, ld8, 8, evens8)
#endif

void gwr_ku_gather_f32(const float *src, int64_t s, int64_t n, float *dst) {
    if (s == 1) {
        memcpy(dst, src, (size_t)n * sizeof *dst);
    } else if (s == 2) {
#ifdef GWR_VEC8_X86
        if (gwr_ku_cnn_avx2()) {
            gather2_avx2(src, n, dst);
            return;
        }
#endif
        gather2_portable(src, n, dst);
    } else {
        for (int64_t i = 0; i < n; i++) dst[i] = src[i * s];
    }
}

/* m[i] = x > m[i] ? x : m[i] for x = src[s * i] (pool.c's compare: a NaN
 * input never replaces m), W lanes a step as in GATHER2 (stride 1: while
 * the W inputs are there). TI: the lanes' compare mask type. */
#define MAXROW(name, attr, T, TI, LD, W, EVENS)                                                \
    V8_INLINE void name##_body(float *m, const float *src, int64_t s, int64_t n) {             \
        int64_t i = 0;                                                                         \
        for (; s == 1 ? i + W <= n : i + W < n; i += W) {                                      \
            T x = s == 1 ? LD(src + i) : EVENS(LD(src + 2 * i), LD(src + 2 * i + W)), a = LD(m + i); \
            TI gt = x > a;                                                                     \
            T r = (T)((gt & (TI)x) | (~gt & (TI)a));                                           \
            memcpy(m + i, &r, sizeof r);                                                       \
        }                                                                                      \
        for (; i < n; i++) {                                                                   \
            float x = src[s * i];                                                              \
            m[i] = x > m[i] ? x : m[i];                                                        \
        }                                                                                      \
    }                                                                                          \
    attr static void name(float *m, const float *src, int64_t s, int64_t n) { name##_body(m, src, s, n); }

MAXROW(maxrow_portable, , v4f, v4i, ld4, 4, EVENS4)
#ifdef GWR_VEC8_X86
MAXROW(maxrow_avx2, GWR_AVX2_FN, v8f, v8i, ld8, 8, evens8)
#endif

void gwr_ku_max_row_f32(float *m, const float *src, int64_t s, int64_t n) {
    if (s != 1 && s != 2) {
        for (int64_t i = 0; i < n; i++) {
            float x = src[s * i];
            m[i] = x > m[i] ? x : m[i];
        }
        return;
    }
#ifdef GWR_VEC8_X86
    if (gwr_ku_cnn_avx2()) {
        maxrow_avx2(m, src, s, n);
        return;
    }
#endif
    maxrow_portable(m, src, s, n);
}
