/* igemm_ref.h - the reference the integer GEMM tests (test_exec_igemm.c,
 * test_exec_igemm8.c) hold igemm.c to: (a - za) (b - zb) summed in int64,
 * then wrapped to int32 (the spec's int32 accumulation). a [., K] and b
 * [K, N] row-major bytes, int8 where sa / sb, else uint8. */
#ifndef GWR_TEST_IGEMM_REF_H
#define GWR_TEST_IGEMM_REF_H

#include <stddef.h>
#include <stdint.h>

static int32_t ref(const uint8_t *a, int sa, const uint8_t *b, int sb, int N, int K, int i, int j, int za, int zb) {
    int64_t s = 0;
    for (int q = 0; q < K; q++) {
        int64_t x = sa ? (int8_t)a[(size_t)i * K + q] : a[(size_t)i * K + q];
        int64_t w = sb ? (int8_t)b[(size_t)q * N + j] : b[(size_t)q * N + j];
        s += (x - za) * (w - zb);
    }
    return (int32_t)(uint32_t)(uint64_t)s;
}

#endif
