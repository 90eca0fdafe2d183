/* bench_gemv.c - GB/s of the one-row products of a decode step (M = 1 to
 * 4 rows of A against a constant B [K, N]): OpenBLAS's sgemv over B in
 * place, as gwr_ku_sgemm calls it (one call per row), against gwr's
 * products over B packed at planning (gwr_sgemm_pb), on one thread and on
 * a pool of two:
 *
 *   bench_gemv [REPS] [THREADS]
 *
 * and gwr_sgemv_pb (the same packed panels read by the kernel of few rows).
 * GB/s counts B's bytes once per product (what a product of few rows
 * must read). "hot": the same B every call (it stays in L2/L3); "cold":
 * calls rotate over copies of B that fill 256 MB, so that every call
 * reads B from memory, as a decode step does once the model's weights
 * outgrow the last-level cache. Best of REPS (default 30). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/blas.h"
#include "exec/exec_internal.h"
#include "exec/kernels/kernel_util.h"
#include "exec/kernels/sgemm.h"

typedef struct shape {
    const char *name;
    int M, N, K;
} shape;

static const shape SHAPES[] = {
    {"llama qkv", 1, 768, 512},   {"llama o", 1, 512, 512},     {"llama gate|up", 1, 2816, 512}, {"llama gate", 1, 1408, 512},
    {"llama down", 1, 512, 1408}, {"llama lm_head", 1, 8192, 512}, {"dram 4096", 1, 4096, 4096}, {"m2 gate|up", 2, 2816, 512},
    {"m4 gate|up", 4, 2816, 512}, {"m4 down", 4, 512, 1408},
};

#define COLD_BYTES ((size_t)256 << 20)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float *randm(size_t n) {
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; p && i < n; i++) p[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    return p;
}

/* which: 0 sgemv per row over B in place, 1 packed. ncopy copies of B / of its pack. */
static double best_s(const shape *s, int which, int reps, gwr_tpool *tp, const float *A, float **B, gwr_sgemm_pack **pk, int ncopy,
                     float *C) {
    double best = 1e30;
    int c = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        if (which == 0)
            gwr_ku_sgemm(0, 0, s->M, s->N, s->K, 1.0f, A, s->K, B[c], s->N, 0.0f, C, s->N);
        else if (which == 1)
            gwr_sgemm_pb(tp, 0, s->M, A, s->K, pk[c], 1.0f, 0.0f, C, s->N);
        else
            gwr_sgemv_pb(tp, s->M, A, s->K, pk[c], 1.0f, 0.0f, C, s->N);
        double t = now() - t0;
        if (t < best) best = t;
        c = (c + 1) % ncopy;
    }
    return best;
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 30, threads = argc > 2 ? atoi(argv[2]) : 2;
    const char *why;
    if (gwr_blas_load(&why)) {
        fprintf(stderr, "bench_gemv: %s\n", why);
        return 1;
    }
    gwr_blas_threads(1);
    gwr_tpool *tp = threads > 1 ? gwr_tpool_new(threads) : NULL;
    printf("GB/s of B read (best of %d): OpenBLAS sgemv per row over B in place; gwr_sgemm_pb (1 thread);\n"
           "gwr_sgemv_pb on 1 and on %d threads\n", reps, threads);
    printf("%-14s %2s %5s %5s | %-27s | %-27s\n", "", "", "", "", "B in cache (hot)", "B from memory (cold)");
    printf("%-14s %2s %5s %5s | %6s %6s %6s %6s | %6s %6s %6s %6s\n", "shape", "M", "N", "K", "sgemv", "sgemm", "gemv", "gemvT",
           "sgemv", "sgemm", "gemv", "gemvT");
    for (size_t i = 0; i < sizeof SHAPES / sizeof *SHAPES; i++) {
        const shape *s = &SHAPES[i];
        size_t nb = (size_t)s->K * s->N;
        int ncopy = (int)(COLD_BYTES / (nb * sizeof(float))) + 1;
        float *A = randm((size_t)s->M * s->K), *C = randm((size_t)s->M * s->N);
        float **B = calloc((size_t)ncopy, sizeof *B);
        gwr_sgemm_pack **pk = calloc((size_t)ncopy, sizeof *pk);
        for (int c = 0; c < ncopy; c++) {
            B[c] = randm(nb);
            pk[c] = gwr_sgemm_pack_b(0, s->K, s->N, B[c], s->N);
        }
        double gb = (double)nb * sizeof(float) * 1e-9, t[8];
        for (int cold = 0; cold < 2; cold++) {
            int n = cold ? ncopy : 1, r = cold ? (reps > ncopy ? reps : ncopy) : reps;
            t[cold * 4 + 0] = best_s(s, 0, r, NULL, A, B, pk, n, C);
            t[cold * 4 + 1] = best_s(s, 1, r, NULL, A, B, pk, n, C);
            t[cold * 4 + 2] = best_s(s, 2, r, NULL, A, B, pk, n, C);
            t[cold * 4 + 3] = best_s(s, 2, r, tp, A, B, pk, n, C);
        }
        printf("%-14s %2d %5d %5d |", s->name, s->M, s->N, s->K);
        for (int c = 0; c < 8; c++) printf(" %6.1f%s", gb / t[c], c == 3 ? " |" : "");
        printf("\n");
        for (int c = 0; c < ncopy; c++) free(B[c]), gwr_sgemm_pack_free(pk[c]);
        free(B), free(pk), free(A), free(C);
    }
    gwr_tpool_free(tp);
    return 0;
}
