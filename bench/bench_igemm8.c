/* bench_igemm8.c - igemm.c's exact 8-bit products, one thread, on the
 * GEMM shapes of the int8 encoders (t5-encoder-int8, MiniLM): the int16
 * path (vpmaddwd) against the u8 x s8 path on a prepared B (AVX2
 * vpmaddubsw with B' clamped to [-64, 64] plus the outlier lists; VNNI where
 * the CPU has it), both with A packed per call as the kernels do, float
 * output (MatMulIntegerToFloat's form):
 *
 *   bench_igemm8 [REPS] [OUTLIER_PER_MILLE]
 *
 * B is int8 drawn like a symmetric quantizer's weights: about normal with
 * sigma 23, and OUTLIER_PER_MILLE (default 5, about the encoders' share of
 * |B| > 64) in [100, 127] or [-127, -100].
 * Best of REPS (default 30), microseconds and GMAC/s. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "exec/kernels/igemm.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const int SHAPES[][3] = {{64, 384, 512}, {64, 512, 384}, {64, 1024, 512}, {64, 512, 1024}, {128, 384, 384}, {128, 1536, 384}, {128, 384, 1536}};

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 30, pm = argc > 2 ? atoi(argv[2]) : 5;
    unsigned r = 1;
    printf("%-16s %12s %12s %8s %8s\n", "M x N x K", "int16 us", "u8s8 us", "speedup", "GMAC/s");
    for (size_t s = 0; s < sizeof SHAPES / sizeof *SHAPES; s++) {
        int M = SHAPES[s][0], N = SHAPES[s][1], K = SHAPES[s][2];
        uint8_t *a = malloc((size_t)M * K), *a8 = malloc(gwr_ku_igemm8_a_size(M, K));
        int8_t *b = malloc((size_t)K * N);
        int16_t *ap = malloc(gwr_ku_igemm_a_size(M, K) * 2), *bp = malloc(gwr_ku_igemm_b_size(K, N) * 2);
        int32_t *zeff = malloc((size_t)M * 4);
        float *y = malloc((size_t)M * N * 4), sc = 1e-3f;
        for (int i = 0; i < M * K; i++) a[i] = (uint8_t)((r = r * 1103515245u + 12345u) >> 16);
        for (int i = 0; i < K * N; i++) { /* about normal, sigma 23 (a sum of 4 uniforms), and the outliers */
            int v = 0;
            for (int u = 0; u < 4; u++) r = r * 1103515245u + 12345u, v += (int)((r >> 16) % 41) - 20;
            r = r * 1103515245u + 12345u;
            if ((int)((r >> 8) % 1000) < pm) v = v < 0 ? -127 + (int)((r >> 20) % 28) : 100 + (int)((r >> 20) % 28);
            b[i] = (int8_t)v;
        }
        gwr_ku_igemm_pack_b(b, 1, K, N, NULL, 0, bp);
        gwr_ku_ig8b *p = gwr_ku_ig8b_make(b, 1, K, N, NULL, 0, -1);
        double t16 = 1e9, t8 = 1e9;
        for (int k = 0; k < reps; k++) {
            double t0 = now();
            gwr_ku_igemm_pack_a(a, 0, M, K, NULL, 0, ap);
            gwr_ku_igemm_f32(M, N, K, ap, bp, &sc, 1, NULL, y, N);
            double t1 = now();
            if (p) gwr_ku_igemm8_pack_a(a, 0, M, K, NULL, 0, a8, zeff), gwr_ku_igemm8_f32(M, a8, zeff, p, &sc, 1, NULL, y, N);
            double t2 = now();
            t16 = t1 - t0 < t16 ? t1 - t0 : t16, t8 = t2 - t1 < t8 ? t2 - t1 : t8;
        }
        char nm[32];
        snprintf(nm, sizeof nm, "%dx%dx%d", M, N, K);
        if (p) printf("%-16s %12.1f %12.1f %8.2f %8.1f\n", nm, t16 * 1e6, t8 * 1e6, t16 / t8, (double)M * N * K / t8 * 1e-9);
        else printf("%-16s %12.1f %12s (too many outliers: int16 path)\n", nm, t16 * 1e6, "-");
        gwr_ku_ig8b_free(p);
        free(a), free(a8), free(b), free(ap), free(bp), free(zeff), free(y);
    }
    return 0;
}
