/* act_rows.c - y = act(y + b + z) in place over a row (b, one value, and
 * z may be NULL): the
 * activations of FusedConv and FusedGemm, and the epilogue of every
 * convolution (conv.c), with the expressions of the Add, Relu, LeakyRelu,
 * Sigmoid, HardSigmoid, HardSwish, Tanh and Clip kernels (activation.c,
 * elementwise.c) and com.microsoft's QuickGelu (contrib.c), so that a fused layer gives the unfused layers' bits on
 * this executor. Their own file so that conv.c and fused_cnn.c share them
 * without using each other in a circle. */
#include <math.h>
#include <stdint.h>

/* fp-contract=off: the build contracts the exec room's a * b + c into FMAs
 * (CMakeLists.txt), but these rows must give the bits of the unfused
 * activation kernels, whose baseline code has no FMA (below). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "no-trapping-math", "fp-contract=off")
#endif

/* after the pragma: their inline functions take its options */
#include "exec/kernels/fast_math.h"
#include "exec/kernels/kernel_util.h"

/* The float rows are cloned for AVX-512 and AVX2 (GWR_VEC_CLONES: the
 * epilogue of every convolution runs them, 4 lanes wide without; static
 * behind a plain function, as clang resolves clones in their own unit). The
 * clones have FMA: clang would contract a * b + c into one rounding
 * there (gcc does not in ISO C mode), and the rows must keep the bits of
 * the activation kernels, which are not cloned. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif


/* The expressions of activation.c's and elementwise.c's rows (QuickGelu's
 * float row adds contrib.c's zero bias: -0 becomes +0 as there). HardSwish
 * takes its constants 1/6 and 1/2 in T itself, as its kernel does (a
 * float 1/6 widened would not give float64 the kernel's bits). */
#define ACT_ROW(attr, fname, T, RELU, TANH, SIG, HSIG, HSWISH, QGELU)                                               \
    attr static void fname##_rows(const gwr_ku_act *a, T *restrict y, const T *b, const T *restrict z, int64_t n) { \
        const T A = (T)a->p[0], B = (T)a->p[1];                                                                     \
        if (b && !z && (a->kind == GWR_KU_ACT_HSWISH || a->kind == GWR_KU_ACT_RELU)) { /* one pass, not two */      \
            const T bv = *b;                                                                                        \
            if (a->kind == GWR_KU_ACT_HSWISH)                                                                       \
                for (int64_t i = 0; i < n; i++) y[i] = y[i] + bv, y[i] = HSWISH;                                    \
            else                                                                                                    \
                for (int64_t i = 0; i < n; i++) y[i] = y[i] + bv, y[i] = RELU;                                      \
            return;                                                                                                 \
        }                                                                                                           \
        if (b) {                                                                                                    \
            const T bv = *b;                                                                                        \
            for (int64_t i = 0; i < n; i++) y[i] = y[i] + bv;                                                       \
        }                                                                                                           \
        if (z)                                                                                                      \
            for (int64_t i = 0; i < n; i++) y[i] = y[i] + z[i];                                                     \
        switch (a->kind) {                                                                                          \
        case GWR_KU_ACT_RELU:                                                                                       \
            for (int64_t i = 0; i < n; i++) y[i] = RELU;                                                            \
            break;                                                                                                  \
        case GWR_KU_ACT_TANH:                                                                                       \
            for (int64_t i = 0; i < n; i++) y[i] = TANH;                                                            \
            break;                                                                                                  \
        case GWR_KU_ACT_SIGMOID:                                                                                    \
            for (int64_t i = 0; i < n; i++) y[i] = SIG;                                                             \
            break;                                                                                                  \
        case GWR_KU_ACT_LEAKY:                                                                                      \
            for (int64_t i = 0; i < n; i++) y[i] = y[i] < 0 ? A * y[i] : y[i];                                      \
            break;                                                                                                  \
        case GWR_KU_ACT_CLIP:                                                                                       \
            for (int64_t i = 0; i < n; i++) {                                                                       \
                T v = y[i] < A ? A : y[i];                                                                          \
                y[i] = v > B ? B : v;                                                                               \
            }                                                                                                       \
            break;                                                                                                  \
        case GWR_KU_ACT_HSIG:                                                                                       \
            for (int64_t i = 0; i < n; i++) y[i] = HSIG;                                                            \
            break;                                                                                                  \
        case GWR_KU_ACT_HSWISH:                                                                                     \
            for (int64_t i = 0; i < n; i++) y[i] = HSWISH;                                                          \
            break;                                                                                                  \
        case GWR_KU_ACT_QGELU:                                                                                      \
            for (int64_t i = 0; i < n; i++) y[i] = QGELU;                                                           \
            break;                                                                                                  \
        default: break;                                                                                             \
        }                                                                                                           \
    }                                                                                                               \
    void fname(const gwr_ku_act *a, T *y, const T *b, const T *z, int64_t n) { fname##_rows(a, y, b, z, n); }
ACT_ROW(GWR_VEC_CLONES, gwr_ku_act_f32, float, y[i] < 0 ? 0.0f : y[i], fast_tanhf(y[i]), 1.0f / (1.0f + fast_expf(-y[i])),
        fast_clamp01f(A * y[i] + B), y[i] * fast_clamp01f((float)(1.0 / 6.0) * y[i] + 0.5f),
        (y[i] + 0.0f) / (1.0f + fast_expf(-A * (y[i] + 0.0f))))
ACT_ROW(, gwr_ku_act_f64, double, y[i] < 0 ? 0.0 : y[i], tanh(y[i]), 1.0 / (1.0 + exp(-y[i])),
        fast_clamp01(A * y[i] + B), y[i] * fast_clamp01((1.0 / 6.0) * y[i] + 0.5),
        y[i] / (1.0 + exp(-A * y[i])))
