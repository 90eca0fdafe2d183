/* threads.c - the kernels' parallel loops (gwr_tpool_parallel) on a
 * session's workers.
 *
 * A pool is threads-1 persistent workers plus the calling thread. A loop
 * is published as one job: fn, ctx, the range split into chunks, and one
 * 64-bit word `claim` holding the job's generation (high 32 bits) and the
 * chunks not yet taken (low 32 bits). Every thread, the caller included,
 * takes chunks by compare-and-swap on that word until none is left, so
 * uneven chunks balance and a worker that wakes late simply finds nothing
 * to do: the caller never waits for a worker to start, only for the
 * chunks taken to finish (`done`). Counting down (rather than up to
 * nchunks) is what makes a late worker safe: it can take a chunk only
 * while the word still shows its generation with chunks left, and in that
 * state the caller cannot have moved on to write the next job's fields.
 *
 * Between loops the workers spin for a short while (GWR_TPOOL_SPIN_US,
 * default below), since a run calls hundreds of loops separated by a
 * GEMM or a serial kernel, then sleep on a condition variable: an idle
 * session burns no CPU. Loops do not nest: a loop body (or a worker) that
 * calls gwr_tpool_parallel runs that inner loop serially (thread-local
 * flag), and so does a pool that failed to start its threads.
 *
 * GWR_TPOOL_SPIN_US sets the spin; GWR_TPOOL_GRAIN_ONE=1 makes every
 * loop of two or more indices split whatever its grain (for the tests).
 *
 * A pool serves one caller at a time: a session is used by one thread at
 * a time (gwr/exec.h), and each session has its own pool. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "exec/blas.h"
#include "exec/exec_internal.h"

/* How long an idle worker spins before it sleeps: long enough to bridge
 * the gap between two loops of a run (a small serial kernel), short
 * enough to give a core back to OpenBLAS's workers during a GEMM. */
enum { TPOOL_SPIN_US_DEFAULT = 50 };
/* Chunks per thread a loop is cut into (at least grain each), so that a
 * thread slowed by another process does not hold the loop up. */
enum { TPOOL_CHUNKS_PER_THREAD = 4 };
/* A loop of fewer grains than this runs on the caller while the workers
 * sleep: waking one costs the caller a futex call (2-7 us measured) and
 * the worker starts tens of microseconds later, more than a small loop
 * gains (mbv3's squeeze-excite products between two convolutions). */
enum { TPOOL_WAKE_GRAINS = 4 };
/* Busy-wait rounds (pause) before a waiting thread yields its core. */
enum { TPOOL_PAUSE_SPINS = 256 };

struct gwr_tpool {
    int size;          /* threads running loops, the caller included */
    int nworkers;      /* started */
    pthread_t *th;
    int64_t spin_ns;
    int grain_one;     /* GWR_TPOOL_GRAIN_ONE: every loop split, for the tests */
    /* The job, written by the caller before it publishes `claim`. */
    gwr_par_fn fn;
    void *ctx;
    int64_t n, chunk;
    uint32_t nchunks;
    _Atomic uint64_t claim; /* generation << 32 | chunks not yet taken */
    atomic_uint done;       /* chunks finished in this generation */
    atomic_int sleepers;    /* workers waiting on `wake` */
    atomic_int stop;
    atomic_int next_index;  /* the workers' gwr_par_thread, from 1 */
    pthread_mutex_t mu;
    pthread_cond_t wake;
};

static _Thread_local int tp_inside; /* running a loop's chunk, or a worker */
static _Thread_local int tp_index;  /* gwr_par_thread: 0 on callers */
static _Thread_local gwr_tpool *tp_current; /* gwr_tpool_current: the run's pool */

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint32_t gen_of(uint64_t w) { return (uint32_t)(w >> 32); }
static uint32_t left_of(uint64_t w) { return (uint32_t)w; }

/* Takes and runs chunks of generation gen until none is left; how many. */
static uint32_t run_chunks(gwr_tpool *p, uint32_t gen) {
    uint32_t did = 0;
    uint64_t w = atomic_load_explicit(&p->claim, memory_order_acquire);
    while (gen_of(w) == gen && left_of(w) > 0) {
        if (!atomic_compare_exchange_weak_explicit(&p->claim, &w, w - 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue;
        /* The job's fields are stable now: chunk left_of(w) of this
         * generation is ours and unfinished, so the caller is still in it. */
        int64_t c = (int64_t)(p->nchunks - left_of(w));
        int64_t b = c * p->chunk, e = b + p->chunk < p->n ? b + p->chunk : p->n;
        p->fn(p->ctx, b, e);
        did++;
        w = atomic_load_explicit(&p->claim, memory_order_acquire);
    }
    return did;
}

/* Waits for a generation other than seen (spinning, then asleep); 0 when
 * the pool stops. */
static int wait_job(gwr_tpool *p, uint32_t seen, uint32_t *gen) {
    int64_t until = now_ns() + p->spin_ns;
    for (unsigned i = 1;; i++) {
        if (atomic_load_explicit(&p->stop, memory_order_acquire)) return 0;
        uint64_t w = atomic_load_explicit(&p->claim, memory_order_acquire);
        if (gen_of(w) != seen) {
            *gen = gen_of(w);
            return 1;
        }
        /* A few microseconds of pause, then sched_yield: a worker that
         * spins while the caller (or OpenBLAS's team, in a GEMM) waits
         * for its core on an oversubscribed machine gives the core back. */
        if (i < TPOOL_PAUSE_SPINS) cpu_relax();
        else sched_yield();
        if (i % 16 == 0 && now_ns() > until) break;
    }
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->sleepers, 1); /* seq_cst: pairs with publish's store and load */
    while (!atomic_load(&p->stop) && gen_of(atomic_load(&p->claim)) == seen) pthread_cond_wait(&p->wake, &p->mu);
    atomic_fetch_sub(&p->sleepers, 1);
    pthread_mutex_unlock(&p->mu);
    *gen = gen_of(atomic_load_explicit(&p->claim, memory_order_acquire));
    return !atomic_load(&p->stop);
}

static void *worker_main(void *arg) {
    gwr_tpool *p = arg;
    tp_inside = 1; /* a chunk on a worker never starts a loop of its own */
    tp_index = 1 + atomic_fetch_add(&p->next_index, 1);
    uint32_t gen = 0;
    while (wait_job(p, gen, &gen)) {
        uint32_t did = run_chunks(p, gen);
        if (did) atomic_fetch_add_explicit(&p->done, did, memory_order_release);
    }
    return NULL;
}

static int64_t spin_ns_setting(void) {
    const char *s = getenv("GWR_TPOOL_SPIN_US");
    char *end = NULL;
    long v = s && *s ? strtol(s, &end, 10) : -1;
    if (v < 0 || v > 1000000 || (end && *end)) v = TPOOL_SPIN_US_DEFAULT;
    return (int64_t)v * 1000;
}

gwr_tpool *gwr_tpool_new(int threads) {
    if (threads <= 1) return NULL;
    gwr_tpool *p = gwr_calloc(1, sizeof *p);
    if (!p) return NULL;
    if (!(p->th = gwr_calloc((size_t)threads - 1, sizeof *p->th))) {
        gwr_free(p);
        return NULL;
    }
    p->spin_ns = spin_ns_setting();
    /* The tests set it to run the kernels' parallel ranges on the small
     * tensors of ONNX's node tests (their results must not change). */
    const char *g1 = getenv("GWR_TPOOL_GRAIN_ONE");
    p->grain_one = g1 && *g1 == '1';
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    for (int i = 0; i < threads - 1; i++) {
        /* A thread's stack is memory too: the allocation-failure test
         * makes its creation fail through the same hook. */
        if (gwr_alloc_fails() || pthread_create(&p->th[i], NULL, worker_main, p)) break;
        p->nworkers++;
    }
    p->size = 1 + p->nworkers; /* fewer threads than asked: the loops still run */
    return p;
}

void gwr_tpool_free(gwr_tpool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nworkers; i++) pthread_join(p->th[i], NULL);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    gwr_free(p->th);
    gwr_free(p);
}

/* Makes the job visible and wakes sleeping workers. */
static uint32_t publish(gwr_tpool *p, uint32_t nchunks) {
    uint32_t gen = gen_of(atomic_load_explicit(&p->claim, memory_order_relaxed)) + 1;
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    atomic_store(&p->claim, (uint64_t)gen << 32 | nchunks); /* seq_cst: see wait_job */
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }
    return gen;
}

/* How many chunks of *chunk indices a loop is cut into (1: serial). */
static int64_t split(const gwr_tpool *p, int64_t n, int64_t grain, int64_t *chunk) {
    if (grain < 1 || (p && p->grain_one)) grain = 1;
    *chunk = n;
    if (!p || p->size <= 1 || tp_inside || n <= grain) return 1;
    int64_t want = (int64_t)p->size * TPOOL_CHUNKS_PER_THREAD;
    *chunk = (n + want - 1) / want;
    if (*chunk < grain) *chunk = grain;
    int64_t nchunks = (n + *chunk - 1) / *chunk;
    return nchunks > UINT32_MAX / 2 ? 1 : nchunks; /* more than the claim word holds */
}

int gwr_tpool_splits(const gwr_tpool *p, int64_t n, int64_t grain) {
    int64_t chunk;
    return n > 0 && split(p, n, grain, &chunk) > 1;
}

int gwr_par_thread(void) { return tp_index; }

void gwr_tpool_parallel(gwr_tpool *p, int64_t n, int64_t grain, gwr_par_fn fn, void *ctx) {
    if (n <= 0) return;
    int64_t chunk, nchunks = split(p, n, grain, &chunk);
    if (nchunks > 1 && !p->grain_one && n < TPOOL_WAKE_GRAINS * (grain < 1 ? 1 : grain) &&
        atomic_load_explicit(&p->sleepers, memory_order_relaxed) > 0)
        nchunks = 1; /* not worth a wake-up */
    if (nchunks <= 1) {
        int was = tp_inside;
        tp_inside = 1;
        fn(ctx, 0, n);
        tp_inside = was;
        return;
    }
    int blas_prev = gwr_blas_loop_begin(); /* a body's GEMMs: one thread each (blas.h) */
    p->fn = fn, p->ctx = ctx, p->n = n, p->chunk = chunk, p->nchunks = (uint32_t)nchunks;
    uint32_t gen = publish(p, (uint32_t)nchunks);
    tp_inside = 1;
    uint32_t did = run_chunks(p, gen);
    tp_inside = 0;
    /* The chunks workers took finish on their side; a worker slowed by
     * another process may take a while, so yield once spinning is long. */
    uint32_t want = (uint32_t)nchunks - did;
    for (unsigned i = 1; atomic_load_explicit(&p->done, memory_order_acquire) != want; i++) {
        if (i < TPOOL_PAUSE_SPINS) cpu_relax();
        else sched_yield();
    }
    gwr_blas_loop_end(blas_prev);
}

int gwr_tpool_size(const gwr_tpool *p) { return p ? p->size : 1; }

void gwr_k_parallel(const gwr_kctx *k, int64_t n, int64_t grain, gwr_par_fn fn, void *ctx) {
    gwr_tpool_parallel(k->tpool, n, grain, fn, ctx);
}

gwr_tpool *gwr_tpool_run_set(gwr_tpool *p) {
    gwr_tpool *prev = tp_current;
    tp_current = p;
    return prev;
}

gwr_tpool *gwr_tpool_current(void) { return tp_current; }
