/* pool.c - the executor's memory pool: freed blocks kept by power-of-two
 * size class and reused by later allocations of the class, so the bytes
 * of a dead tensor go to the next tensor of its size. Buffers handed out
 * keep the pool alive (refs); gwr_exec_pool_close gives the owner's
 * reference back. Not thread-safe: a session runs one frame at a time.
 *
 * What a class keeps is bounded by what the runs ask of it: at the start
 * of a run (gwr_exec_pool_begin_run) a class keeps, out and free
 * together, no more blocks than were out of it at once during the last
 * POOL_KEEP_RUNS runs; the rest go back to the allocator. A workload of
 * fixed shapes reuses every block run after run; one whose tensors grow
 * (a decoder's cache, a step longer each run) moves up the classes, and
 * the classes it left are freed instead of stranded. Blocks of
 * POOL_MAP_MIN bytes and more are pages of their own (mmap), so that a
 * freed one leaves the process at once: from the C library's heap, freed
 * blocks stay resident wherever a live one sits above them (glibc also
 * moves its mmap threshold up to the largest block freed). Sanitizer
 * builds take every block from malloc, which they check. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "exec/exec_internal.h"
#include "ir/ir_api.h"

#define POOL_CLASSES 48
#define POOL_MIN_LOG2 6
#define POOL_KEEP_RUNS 32 /* the runs whose needs a class's free blocks cover: a decoder's prefill blocks outlive a burst of decode steps */
#define POOL_MAP_MIN_LOG2 14

#if defined(__SANITIZE_ADDRESS__)
#define POOL_MAP 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define POOL_MAP 0
#endif
#endif
#ifndef POOL_MAP
#define POOL_MAP 1
#endif

struct gwr_exec_pool {
    atomic_long refs;
    int closed;
    void *free_list[POOL_CLASSES];
    int64_t nfree[POOL_CLASSES];            /* blocks on free_list */
    int64_t nout[POOL_CLASSES];             /* blocks handed out and not back */
    int64_t hi[POOL_KEEP_RUNS][POOL_CLASSES]; /* most out at once: this run, the ones before */
    int64_t live, peak, total; /* bytes handed out: now, at most, this run */
    int64_t held;              /* bytes on the free lists */
};

static int size_class(size_t n) {
    int c = POOL_MIN_LOG2;
    while (c < POOL_CLASSES - 1 && ((size_t)1 << c) < n) c++;
    return c;
}

/* A block of class c (2^c bytes, 64-byte aligned), or NULL. */
static void *block_new(int c) {
    if (gwr_alloc_fails()) return NULL;
    if (POOL_MAP && c >= POOL_MAP_MIN_LOG2) {
        void *b = mmap(NULL, (size_t)1 << c, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return b == MAP_FAILED ? NULL : b;
    }
    return aligned_alloc(64, (size_t)1 << c);
}

static void block_free(void *b, int c) {
    if (POOL_MAP && c >= POOL_MAP_MIN_LOG2) munmap(b, (size_t)1 << c);
    else gwr_free(b);
}

static void pool_unref(gwr_exec_pool *p) {
    if (atomic_fetch_sub(&p->refs, 1) != 1) return;
    for (int c = 0; c < POOL_CLASSES; c++)
        while (p->free_list[c]) {
            void *b = p->free_list[c];
            p->free_list[c] = *(void **)b;
            block_free(b, c);
        }
    gwr_free(p);
}

static void pool_release(void *ctx, const void *data, size_t size) {
    gwr_exec_pool *p = ctx;
    void *b = (void *)(uintptr_t)data;
    int c = size_class(size);
    p->live -= (int64_t)size;
    p->nout[c]--;
    if (p->closed) {
        block_free(b, c);
    } else {
        *(void **)b = p->free_list[c];
        p->free_list[c] = b;
        p->nfree[c]++;
        p->held += (int64_t)1 << c;
    }
    pool_unref(p);
}

gwr_exec_pool *gwr_exec_pool_new(void) {
    gwr_exec_pool *p = gwr_calloc(1, sizeof *p);
    if (p) atomic_init(&p->refs, 1);
    return p;
}

void gwr_exec_pool_close(gwr_exec_pool *p) {
    if (!p) return;
    p->closed = 1;
    pool_unref(p);
}

gwr_buffer *gwr_exec_pool_alloc(gwr_exec_pool *p, size_t n) {
    int c = size_class(n);
    if ((size_t)1 << c < n) return NULL; /* beyond the largest class */
    void *b = p->free_list[c];
    if (b) p->free_list[c] = *(void **)b, p->nfree[c]--, p->held -= (int64_t)1 << c;
    else if (!(b = block_new(c))) return NULL;
    gwr_buffer *buf = gwr_buffer_wrap(b, n, pool_release, p);
    if (!buf) {
        block_free(b, c);
        return NULL;
    }
    atomic_fetch_add(&p->refs, 1);
    if (++p->nout[c] > p->hi[0][c]) p->hi[0][c] = p->nout[c];
    p->live += (int64_t)n;
    p->total += (int64_t)n;
    if (p->live > p->peak) p->peak = p->live;
    return buf;
}

void gwr_exec_pool_begin_run(gwr_exec_pool *p) {
    for (int c = 0; c < POOL_CLASSES; c++) {
        int64_t keep = 0;
        for (int r = 0; r < POOL_KEEP_RUNS; r++)
            if (p->hi[r][c] > keep) keep = p->hi[r][c];
        while (p->nfree[c] > 0 && p->nout[c] + p->nfree[c] > keep) {
            void *b = p->free_list[c];
            p->free_list[c] = *(void **)b;
            p->nfree[c]--, p->held -= (int64_t)1 << c;
            block_free(b, c);
        }
        for (int r = POOL_KEEP_RUNS - 1; r > 0; r--) p->hi[r][c] = p->hi[r - 1][c];
        p->hi[0][c] = p->nout[c];
    }
    p->total = 0;
    p->peak = p->live;
}

void gwr_exec_pool_stats(const gwr_exec_pool *p, int64_t *peak, int64_t *total) {
    *peak = p->peak, *total = p->total;
}

int64_t gwr_exec_pool_held(const gwr_exec_pool *p) { return p->held; }

int gwr_exec_pool_owns_sole(const gwr_exec_pool *p, const gwr_buffer *b) {
    return gwr_ir_buffer_is_sole(b, pool_release, p);
}
