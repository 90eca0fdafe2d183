/* threads.c - the kernels' parallel loops (gwr_tpool_parallel).
 *
 * For now every loop runs on the calling thread: kernels are written
 * against this interface (their work split into ranges that write
 * disjoint bytes) so that a pool of workers can take the ranges without
 * changing them. */
#include "exec/exec_internal.h"

void gwr_tpool_parallel(gwr_tpool *p, int64_t n, int64_t grain, gwr_par_fn fn, void *ctx) {
    (void)p;
    (void)grain;
    if (n > 0) fn(ctx, 0, n);
}

int gwr_tpool_size(const gwr_tpool *p) {
    (void)p;
    return 1;
}

void gwr_k_parallel(const gwr_kctx *k, int64_t n, int64_t grain, gwr_par_fn fn, void *ctx) {
    gwr_tpool_parallel(k->tpool, n, grain, fn, ctx);
}
