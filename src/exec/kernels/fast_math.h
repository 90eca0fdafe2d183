/* fast_math.h - float32 math that vectorizes, for the row loops of
 * elementwise.c (Tanh, Erf) and activation.c (Sigmoid, Gelu).
 *
 * Branch-free (selects only) so that the row loops vectorize; within a few
 * ulps of the C library's. static inline: each row inlines them. Include
 * it after a file's `#pragma GCC optimize`, so that the functions carry
 * the same options as the loops that inline them (GCC does not inline
 * across different optimize attributes). */
#ifndef GWR_EXEC_FAST_MATH_H
#define GWR_EXEC_FAST_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* GWR_VEC_CLONES before a row loop's function: GCC (and clang 14 on)
 * compile it for AVX-512 and AVX2+FMA besides the baseline and pick one at
 * load time by the CPU (an ifunc), so the loop runs 16 or 8 lanes wide
 * where the CPU has them and 4 (SSE2) anywhere. x86-64 ELF only. */
#if defined(__x86_64__) && defined(__ELF__) && !defined(GWR_NO_CLONES) && \
    ((defined(__clang__) && __clang_major__ >= 14) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 8))
#define GWR_VEC_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define GWR_VEC_CLONES
#endif

static inline float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* e^x: x = n ln2 + r, |r| <= ln2/2 (ln2 split so that n ln2 is exact),
 * e^r by its Taylor series to r^7 (relative error < 3e-9), 2^n applied as
 * two factors so that overflow gives inf and the smallest results go
 * subnormal. */
static inline float fast_expf(float x) {
    float xc = x != x ? 0.0f : x > 89.0f ? 89.0f : x < -110.0f ? -110.0f : x;
    float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    float r = (xc - n * 0.693359375f) - n * -2.12194440054690583e-4f;
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720 +
                                                                                                  r * (1.0f / 5040)))))));
    int32_t ni = (int32_t)n, n1 = ni / 2, n2 = ni - n1;
    float y = p * bits_f32((uint32_t)(n1 + 127) << 23) * bits_f32((uint32_t)(n2 + 127) << 23);
    return x != x ? x : y;
}

/* e^x for x <= 88 (erfc_tail's exponents, <= 0): 0 below -87 (e^-87 <
 * 2^-125, too small for its callers' results to be normal), else e^r by
 * its Taylor series to r^6 (relative error < 1.3e-7) times 2^n in one
 * factor, n in [-126, 0] here: fast_expf's range checks and two-factor
 * scaling, a third of its vector instructions, left out. NaN stays NaN
 * (no NaN reaches the float-to-int conversion). */
static inline float fast_exp_small(float x) {
    float xc = x >= -87.0f ? x : -87.0f;
    float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    float r = (xc - n * 0.693359375f) - n * -2.12194440054690583e-4f;
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720))))));
    float y = p * bits_f32((uint32_t)((int32_t)n + 127) << 23);
    return x < -87.0f ? 0.0f : x != x ? x : y;
}

/* tanh: its Taylor series to x^13 below 0.35 (error < 1e-8), above it
 * 1 - 2 / (e^2|x| + 1), exact to a few ulps and 1 from e^2|x| = inf on. No
 * clamp before fast_expf: GCC threads a clamp into branches that stop the
 * loop vectorizing. */
static inline float fast_tanhf(float x) {
    float a = fabsf(x), z = a * a;
    float s = a * (1.0f + z * (-1.0f / 3 + z * (2.0f / 15 + z * (-17.0f / 315 + z * (62.0f / 2835 +
                                                                                  z * (-1382.0f / 155925 + z * (21844.0f / 6081075)))))));
    float b = 1.0f - 2.0f / (fast_expf(2.0f * a) + 1.0f);
    float t = a < 0.35f ? s : b;
    return x < 0 ? -t : t;
}

/* erf(x) for |x| < 0.84375: its Maclaurin series to x^19 (error < 1e-9) */
static inline float erf_series(float x) {
    float z = x * x;
    return x * (1.128379167f +
                z * (-3.761263890e-1f +
                     z * (1.128379167e-1f +
                          z * (-2.686617065e-2f +
                               z * (5.223977625e-3f +
                                    z * (-8.548327023e-4f +
                                         z * (1.205533298e-4f +
                                              z * (-1.492565036e-5f + z * (1.646211437e-6f + z * -1.636584469e-7f)))))))));
}

/* erfc(a) for a >= 0.84375: the Chebyshev fit of Numerical Recipes' erfcc
 * (relative error < 1.2e-7), keeping erfc's relative precision in the tail
 * down to 2^-125 (0 below: a > 9.3). */
static inline float erfc_tail(float a) {
    float t = 1.0f / (1.0f + 0.5f * a);
    float q = -1.26551223f +
              t * (1.00002368f +
                   t * (0.37409196f +
                        t * (0.09678418f +
                             t * (-0.18628806f +
                                  t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f + t * (-0.82215223f + t * 0.17087277f))))))));
    return t * fast_exp_small(q - a * a);
}

static inline float fast_erff(float x) {
    float a = fabsf(x);
    float r = a < 0.84375f ? erf_series(a) : 1.0f - erfc_tail(a);
    return x < 0 ? -r : r;
}

/* t clamped to [0, 1] as two compares the compiler vectorizes: fminf and
 * fmaxf stay libm calls unless math is finite-only (HardSigmoid and
 * HardSwish spent most of their time in them). NaN stays NaN, as in the
 * ONNX reference's max(0, min(1, t)); fmaxf(0, fminf(1, NaN)) gave 1. */
static inline float fast_clamp01f(float t) { return t < 0.0f ? 0.0f : t > 1.0f ? 1.0f : t; }
static inline double fast_clamp01(double t) { return t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t; }
/* Gelu(x) = x/2 erfc(-x/sqrt2), from erfc where x < 0 so that the tail
 * keeps its relative precision (activation.c's Gelu, contrib.c's GELUs).
 * erfc_tail alone, near 0 too: Gelu never needs erf by itself (1 + erf
 * >= 1 for x >= 0, erfc relative-precise for x < 0), and the vector loop no
 * longer evaluates erf's series beside it in every lane (against
 * 0.5 x erfc(-x/sqrt2) in double over [-12, 12]: relative error <= 1.8e-5
 * in the far tail as before, <= 5.7e-7 within |x| < 1.3, 6.0e-7 with the
 * series). */
static inline float fast_gelu(float x) {
    float z = x * 0.707106781186547524f, e = erfc_tail(fabsf(z)); /* erfc(|z|) */
    return z >= 0 ? 0.5f * x * (2.0f - e) : 0.5f * x * e;
}

#endif
