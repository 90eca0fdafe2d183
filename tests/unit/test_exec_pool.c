/* test_exec_pool.c - the executor's memory pool (src/exec/pool.c): blocks
 * are reused run after run when the shapes stay, and what the free lists
 * keep is bounded by what the last runs needed: a class a run no longer
 * uses, or more blocks of a class than a run needs at once, go back to
 * the allocator instead of staying with the session (a decoder's tensors
 * grow a step each run and move up the size classes). */
#include <stdlib.h>

#include "check.h"
#include "exec/exec_internal.h"

enum { MANY = 64, LATER = 40 }; /* LATER runs: more than the pool looks back on (pool.c: 32) */

/* One run: n buffers of size bytes out at once, then all back. */
static void run_once(gwr_exec_pool *p, int n, size_t size, const void **seen) {
    gwr_buffer *b[MANY];
    gwr_exec_pool_begin_run(p);
    for (int i = 0; i < n; i++) {
        b[i] = gwr_exec_pool_alloc(p, size);
        CHECK(b[i] != NULL);
        if (seen && b[i]) seen[i] = gwr_buffer_data(b[i]);
    }
    for (int i = 0; i < n; i++) gwr_buffer_release(b[i]);
}

TEST(fixed_shapes_reuse_their_blocks) {
    gwr_exec_pool *p = gwr_exec_pool_new();
    const void *first[4], *again[4];
    run_once(p, 4, 3000, first);
    for (int r = 0; r < 10; r++) run_once(p, 4, 3000, again);
    /* every block of the last run is one of the first run's */
    for (int i = 0; i < 4; i++) {
        int found = 0;
        for (int j = 0; j < 4; j++) found |= again[i] == first[j];
        CHECK(found);
    }
    CHECK_EQ_INT(gwr_exec_pool_held(p), 4 * 4096);
    gwr_exec_pool_close(p);
}

TEST(a_class_no_longer_used_is_freed) {
    gwr_exec_pool *p = gwr_exec_pool_new();
    run_once(p, 1, 1 << 20, NULL);
    CHECK_EQ_INT(gwr_exec_pool_held(p), 1 << 20);
    for (int r = 0; r < LATER; r++) run_once(p, 1, 1000, NULL);
    gwr_exec_pool_begin_run(p);
    CHECK_EQ_INT(gwr_exec_pool_held(p), 1024); /* the 1 MiB block is gone */
    gwr_exec_pool_close(p);
}

TEST(blocks_beyond_a_runs_need_are_freed) {
    gwr_exec_pool *p = gwr_exec_pool_new();
    run_once(p, MANY, 4096, NULL);
    CHECK_EQ_INT(gwr_exec_pool_held(p), MANY * 4096);
    for (int r = 0; r < LATER; r++) run_once(p, 2, 4096, NULL);
    gwr_exec_pool_begin_run(p);
    CHECK_EQ_INT(gwr_exec_pool_held(p), 2 * 4096);
    gwr_exec_pool_close(p);
}

/* A decoder's cache: each run one tensor a step longer than the last,
 * kept by the caller across the run (past in, present out). What the pool
 * keeps stays within a few of the largest blocks, not the sum of every
 * class the runs went through. */
TEST(growing_tensors_do_not_strand_memory) {
    gwr_exec_pool *p = gwr_exec_pool_new();
    gwr_buffer *past = NULL;
    size_t step = 8192;
    int64_t worst = 0;
    for (int r = 1; r <= 400; r++) {
        gwr_exec_pool_begin_run(p);
        int64_t held = gwr_exec_pool_held(p);
        if (held > worst) worst = held;
        gwr_buffer *tmp = gwr_exec_pool_alloc(p, step * (size_t)r * 4); /* a temporary 4x the cache */
        gwr_buffer *present = gwr_exec_pool_alloc(p, step * (size_t)r);
        CHECK(tmp && present);
        gwr_buffer_release(tmp);
        if (past) gwr_buffer_release(past);
        past = present;
    }
    /* the largest temporary, 400 * 8192 * 4 = 13 MB, is of class 2^24, the
     * caches of class 2^22 at most (two: past and present): at a change of
     * class, the blocks of the class before are still kept (used in the
     * last few runs): 2^24 + 2^23 + 2^22 + 2 * 2^21 = 2^25. Kept before:
     * every class the two went through, 2^15 to 2^24 and 2^13 to 2^22. */
    CHECK(worst <= (int64_t)1 << 25);
    gwr_buffer_release(past);
    gwr_exec_pool_close(p);
}

TEST(buffers_outlive_a_closed_pool) {
    gwr_exec_pool *p = gwr_exec_pool_new();
    gwr_buffer *big = gwr_exec_pool_alloc(p, 1 << 18), *small = gwr_exec_pool_alloc(p, 100);
    CHECK(big && small);
    gwr_exec_pool_close(p);
    gwr_buffer_release(big);
    gwr_buffer_release(small);
}

int main(void) {
    RUN(fixed_shapes_reuse_their_blocks);
    RUN(a_class_no_longer_used_is_freed);
    RUN(blocks_beyond_a_runs_need_are_freed);
    RUN(growing_tensors_do_not_strand_memory);
    RUN(buffers_outlive_a_closed_pool);
    return check_report();
}
