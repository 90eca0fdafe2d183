/* bench_sgemm.c - GFLOP/s of gwr's own sgemm (sgemm.c) against OpenBLAS
 * (gwr_ku_sgemm as it calls it) on the GEMM shapes of the executor
 * benchmark's models, one thread:
 *
 *   bench_sgemm [REPS]
 *
 * Columns: OpenBLAS; ours per call (A and B in place, B^T packed); ours
 * with B packed beforehand (MatMul shapes, whose weights are B; a Conv's
 * are A, read in place: "-"). Best of REPS (default 20). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "exec/blas.h"
#include "exec/kernels/kernel_util.h"
#include "exec/kernels/sgemm.h"

typedef struct shape {
    const char *model;
    int M, N, K;
    int tb;     /* B transposed (the LSTM's W and R) */
    int wside;  /* 'A': A is the weights (Conv); 'B': B is (MatMul) */
} shape;

static const shape SHAPES[] = {
    {"gpt12 qkv", 128, 768, 256, 0, 'B'},    {"gpt12 fc1", 128, 1024, 256, 0, 'B'},  {"gpt12 fc2", 128, 256, 1024, 0, 'B'},
    {"gpt12 proj", 128, 256, 256, 0, 'B'},   {"dec128 qkv", 128, 1536, 512, 0, 'B'}, {"dec128 fc1", 128, 2048, 512, 0, 'B'},
    {"dec128 fc2", 128, 512, 2048, 0, 'B'},  {"dec1 qkv", 1, 1536, 512, 0, 'B'},     {"dec1 fc1", 1, 2048, 512, 0, 'B'},
    {"dec1 fc2", 1, 512, 2048, 0, 'B'},      {"lstm R step", 1, 1024, 256, 1, 'B'},  {"lstm W", 128, 1024, 128, 1, 'B'},
    {"res 3x3 c64", 64, 3136, 576, 0, 'A'},  {"res 3x3 c128", 128, 784, 1152, 0, 'A'}, {"res 3x3 c256", 256, 196, 2304, 0, 'A'},
    {"res 3x3 c512", 512, 49, 4608, 0, 'A'}, {"res stem", 64, 12544, 147, 0, 'A'},  {"res fc", 1, 1000, 512, 1, 'B'},
    {"mbv3 1x1 16", 16, 12544, 16, 0, 'A'},  {"mbv3 1x1 64>24", 24, 3136, 64, 0, 'A'}, {"mbv3 1x1 24>72", 72, 3136, 24, 0, 'A'},
    {"mbv3 1x1 40>120", 120, 784, 40, 0, 'A'}, {"mbv3 1x1 96>576", 576, 49, 96, 0, 'A'}, {"mbv3 1x1 576>96", 96, 49, 576, 0, 'A'},
    {"mbv3 1x1 48>144", 144, 196, 48, 0, 'A'},
    {"rn wino 64x96x64", 64, 96, 64, 0, 'A'}, {"rn wino 128x64x128", 128, 64, 128, 0, 'A'},
    {"rn wino 64x16x64", 64, 16, 64, 0, 'A'}, {"rn wino 128x4x128", 128, 4, 128, 0, 'A'}, {"rn wino 256x49x256", 256, 49, 256, 0, 'A'},
    {"rn stem blk", 64, 560, 147, 0, 'A'},
    {"llama qkv", 128, 768, 512, 0, 'B'},   {"llama gate+up", 128, 2816, 512, 0, 'B'}, {"llama o", 128, 512, 512, 0, 'B'},
    {"llama down", 128, 512, 1408, 0, 'B'}, {"llama lm_head", 128, 8192, 512, 0, 'B'},
    {"attn qk^T d64", 128, 128, 64, 1, 'B'}, {"attn pv d64", 128, 64, 128, 0, 'B'}, {"attn qk^T d32", 128, 128, 32, 1, 'B'},
    {"attn pv d32", 128, 32, 128, 0, 'B'}, {"wino 64", 64, 196, 64, 0, 'A'}, {"wino 128", 128, 100, 128, 0, 'A'},
    {"mbv3 se 144>576", 576, 1, 144, 0, 'A'}, {"mbv3 se 576>144", 144, 1, 576, 0, 'A'}, {"mbv3 se 72>288", 288, 1, 72, 0, 'A'},
    {"n4 576x4x144", 576, 4, 144, 0, 'A'}, {"n8 576x8x144", 576, 8, 144, 0, 'A'}, {"n16 576x16x144", 576, 16, 144, 0, 'A'},
    {"mbv3 72x907x16", 72, 907, 16, 0, 'A'}, {"mbv3 stem", 16, 3584, 27, 0, 'A'}, {"mbv3 40>240", 240, 196, 40, 0, 'A'},
    {"magika conv 5x1", 512, 256, 1280, 0, 'A'}, {"oww 3x1 c48", 48, 256, 144, 0, 'A'}, {"oww 3x1 c96", 96, 48, 288, 0, 'A'},
    {"dram m1", 1, 4096, 4096, 0, 'B'}, {"dram m4", 4, 4096, 4096, 0, 'B'}, {"dram m16", 16, 4096, 4096, 0, 'B'},
};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float *randm(size_t n) {
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++) p[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    return p;
}

/* which: 0 OpenBLAS, 1 ours per call, 2 ours with B packed. */
static double best_us(const shape *s, int which, int reps, const float *A, const float *B, float *C, const gwr_sgemm_pack *pk) {
    int lda = s->K, ldb = s->tb ? s->K : s->N;
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        if (which == 0) gwr_ku_sgemm(0, s->tb, s->M, s->N, s->K, 1.0f, A, lda, B, ldb, 0.0f, C, s->N);
        else if (which == 1) gwr_sgemm(NULL, 0, s->tb, s->M, s->N, s->K, 1.0f, A, lda, B, ldb, 0.0f, C, s->N);
        else gwr_sgemm_pb(NULL, 0, s->M, A, lda, pk, 1.0f, 0.0f, C, s->N);
        double t = now() - t0;
        if (t < best) best = t;
    }
    return best * 1e6;
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 20;
    setenv("GWR_SGEMM", "off", 1); /* gwr_ku_sgemm: OpenBLAS alone (it would pick ours for some shapes) */
    const char *why;
    if (gwr_blas_load(&why)) {
        fprintf(stderr, "bench_sgemm: %s\n", why);
        return 1;
    }
    gwr_blas_threads(1);
    printf("%-18s %5s %6s %5s | %9s %9s %9s | GFLOP/s blas / ours / packed\n", "shape", "M", "N", "K", "blas us", "ours us", "packed us");
    for (size_t i = 0; i < sizeof SHAPES / sizeof *SHAPES; i++) {
        const shape *s = &SHAPES[i];
        float *A = randm((size_t)s->M * s->K), *B = randm((size_t)s->K * s->N), *C = randm((size_t)s->M * s->N);
        gwr_sgemm_pack *pk = s->wside == 'B' ? gwr_sgemm_pack_b(s->tb, s->K, s->N, B, s->tb ? s->K : s->N) : NULL;
        double t[3] = {0, 0, 0};
        for (int w = 0; w < (pk ? 3 : 2); w++) t[w] = best_us(s, w, reps, A, B, C, pk);
        double fl = 2.0 * s->M * s->N * s->K * 1e-3;
        if (pk)
            printf("%-18s %5d %6d %5d | %9.1f %9.1f %9.1f | %6.1f %6.1f %6.1f\n", s->model, s->M, s->N, s->K, t[0], t[1], t[2], fl / t[0],
                   fl / t[1], fl / t[2]);
        else
            printf("%-18s %5d %6d %5d | %9.1f %9.1f %9s | %6.1f %6.1f %6s\n", s->model, s->M, s->N, s->K, t[0], t[1], "-", fl / t[0],
                   fl / t[1], "-");
        gwr_sgemm_pack_free(pk);
        free(A), free(B), free(C);
    }
    return 0;
}
