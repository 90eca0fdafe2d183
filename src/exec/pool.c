/* pool.c - the executor's memory pool: freed blocks kept by power-of-two
 * size class and reused by later allocations of the class, so the bytes
 * of a dead tensor go to the next tensor of its size. Buffers handed out
 * keep the pool alive (refs); gwr_exec_pool_close gives the owner's
 * reference back. Not thread-safe: a session runs one frame at a time. */
#include <stdatomic.h>
#include <stdlib.h>

#include "exec/exec_internal.h"
#include "ir/ir_api.h"

#define POOL_CLASSES 48
#define POOL_MIN_LOG2 6

struct gwr_exec_pool {
    atomic_long refs;
    int closed;
    void *free_list[POOL_CLASSES];
    int64_t live, peak, total; /* bytes handed out: now, at most, this run */
};

static int size_class(size_t n) {
    int c = POOL_MIN_LOG2;
    while (c < POOL_CLASSES - 1 && ((size_t)1 << c) < n) c++;
    return c;
}

static void pool_unref(gwr_exec_pool *p) {
    if (atomic_fetch_sub(&p->refs, 1) != 1) return;
    for (int c = 0; c < POOL_CLASSES; c++)
        while (p->free_list[c]) {
            void *b = p->free_list[c];
            p->free_list[c] = *(void **)b;
            gwr_free(b);
        }
    gwr_free(p);
}

static void pool_release(void *ctx, const void *data, size_t size) {
    gwr_exec_pool *p = ctx;
    void *b = (void *)(uintptr_t)data;
    p->live -= (int64_t)size;
    if (p->closed) {
        gwr_free(b);
    } else {
        int c = size_class(size);
        *(void **)b = p->free_list[c];
        p->free_list[c] = b;
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
    if (b) p->free_list[c] = *(void **)b;
    else if (gwr_alloc_fails() || !(b = aligned_alloc(64, (size_t)1 << c))) return NULL;
    gwr_buffer *buf = gwr_buffer_wrap(b, n, pool_release, p);
    if (!buf) {
        gwr_free(b);
        return NULL;
    }
    atomic_fetch_add(&p->refs, 1);
    p->live += (int64_t)n;
    p->total += (int64_t)n;
    if (p->live > p->peak) p->peak = p->live;
    return buf;
}

void gwr_exec_pool_begin_run(gwr_exec_pool *p) {
    p->total = 0;
    p->peak = p->live;
}

void gwr_exec_pool_stats(const gwr_exec_pool *p, int64_t *peak, int64_t *total) {
    *peak = p->peak, *total = p->total;
}

int gwr_exec_pool_owns_sole(const gwr_exec_pool *p, const gwr_buffer *b) {
    return gwr_ir_buffer_is_sole(b, pool_release, p);
}
