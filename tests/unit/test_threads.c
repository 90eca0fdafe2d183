/* test_threads.c - the kernels' parallel loops (src/exec/threads.c): every
 * index of [0, n) is visited exactly once over ranges of at least grain,
 * the caller works too, small loops stay on the caller, nested loops run
 * serially, a pool that cannot start threads runs serially, idle workers
 * sleep (no CPU between loops), and two pools run side by side. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "exec/exec_internal.h"

enum { MAXN = 100000, MAXR = 4096 };

/* What one loop saw: per-index visits, its ranges, the threads. */
typedef struct seen {
    atomic_int visits[MAXN];
    atomic_int nranges;
    int64_t rb[MAXR], re[MAXR];
    pthread_t who[MAXR];
    int64_t grain;
    int sleep_us; /* per range, to give workers time to join */
    gwr_tpool *nest; /* call a loop on this pool from inside the body */
    atomic_int nest_bad;
} seen;

static void sleep_us(int us) {
    struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static void inner(void *ctx, int64_t b, int64_t e) {
    int64_t *got = ctx;
    got[0]++, got[1] = b, got[2] = e;
}

static void body(void *ctx, int64_t b, int64_t e) {
    seen *s = ctx;
    int r = atomic_fetch_add(&s->nranges, 1);
    if (r < MAXR) s->rb[r] = b, s->re[r] = e, s->who[r] = pthread_self();
    for (int64_t i = b; i < e; i++) atomic_fetch_add(&s->visits[i], 1);
    if (s->nest) {
        /* Inner loops run serially, on this thread, whole. */
        int64_t got[3] = {0, -1, -1};
        gwr_tpool_parallel(s->nest, 1000, 1, inner, got);
        if (got[0] != 1 || got[1] != 0 || got[2] != 1000) atomic_fetch_add(&s->nest_bad, 1);
    }
    if (s->sleep_us) sleep_us(s->sleep_us);
}

static seen *seen_new(int64_t grain) {
    seen *s = calloc(1, sizeof *s);
    s->grain = grain;
    return s;
}

/* Runs one loop and checks it covered [0, n) once with ranges >= grain
 * (but the last); how many ranges ran on the caller. */
static int check_loop(gwr_tpool *p, seen *s, int64_t n) {
    memset(s->visits, 0, sizeof s->visits);
    atomic_store(&s->nranges, 0);
    gwr_tpool_parallel(p, n, s->grain, body, s);
    int bad = 0, mine = 0;
    for (int64_t i = 0; i < n; i++) bad += atomic_load(&s->visits[i]) != 1;
    CHECK_EQ_INT(bad, 0);
    int nr = atomic_load(&s->nranges);
    int64_t g = s->grain < 1 ? 1 : s->grain;
    for (int r = 0; r < nr && r < MAXR; r++) {
        if (!CHECK(s->re[r] > s->rb[r] && (s->re[r] - s->rb[r] >= g || s->re[r] == n))) break;
        mine += pthread_equal(s->who[r], pthread_self()) != 0;
    }
    if (n <= 0) CHECK_EQ_INT(nr, 0);
    return mine;
}

TEST(sizes_and_serial_pools) {
    CHECK(gwr_tpool_new(1) == NULL);
    CHECK(gwr_tpool_new(0) == NULL);
    CHECK_EQ_INT(gwr_tpool_size(NULL), 1);
    gwr_tpool *p = gwr_tpool_new(3);
    if (!CHECK(p)) return;
    CHECK_EQ_INT(gwr_tpool_size(p), 3);
    gwr_tpool_free(p); /* never ran a loop */
    gwr_tpool_free(NULL);
    seen *s = seen_new(1);
    CHECK_EQ_INT(check_loop(NULL, s, 777), 1); /* NULL pool: one range, the caller's */
    free(s);
}

TEST(every_index_once) {
    gwr_tpool *p = gwr_tpool_new(3);
    if (!CHECK(p)) return;
    seen *s = seen_new(1);
    static const int64_t ns[] = {0, 1, 2, 3, 7, 11, 12, 13, 97, 1000, 4099, MAXN};
    static const int64_t grains[] = {0, 1, 3, 16, 64, 1000, 5000};
    for (size_t g = 0; g < sizeof grains / sizeof *grains; g++)
        for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
            s->grain = grains[g];
            check_loop(p, s, ns[i]);
        }
    /* Under grain: one range, on the caller. */
    s->grain = 64;
    CHECK_EQ_INT(check_loop(p, s, 64), 1);
    CHECK_EQ_INT(atomic_load(&s->nranges), 1);
    /* n not a multiple of the chunk: 3 threads x 4 chunks of 9 over 101. */
    s->grain = 1;
    check_loop(p, s, 101);
    CHECK_EQ_INT(atomic_load(&s->nranges), 12);
    gwr_tpool_free(p);
    free(s);
}

static void add_range(void *ctx, int64_t b, int64_t e) { atomic_fetch_add((atomic_llong *)ctx, (e - b) * (b + e - 1) / 2); }

TEST(thousands_of_tiny_loops) {
    gwr_tpool *p = gwr_tpool_new(2);
    if (!CHECK(p)) return;
    long long bad = 0;
    for (int it = 0; it < 20000; it++) {
        int64_t n = 1 + it % 200;
        atomic_llong sum = 0;
        gwr_tpool_parallel(p, n, 1, add_range, &sum);
        bad += atomic_load(&sum) != n * (n - 1) / 2;
    }
    CHECK_EQ_INT(bad, 0);
    gwr_tpool_free(p);
}

TEST(caller_and_workers_share_a_loop) {
    gwr_tpool *p = gwr_tpool_new(2);
    if (!CHECK(p)) return;
    seen *s = seen_new(1);
    s->sleep_us = 2000; /* 8 chunks of 2 ms: the worker has time to wake */
    int mine = 0, theirs = 0;
    for (int tries = 0; tries < 5 && (!mine || !theirs); tries++) {
        int m = check_loop(p, s, 800);
        mine += m, theirs += atomic_load(&s->nranges) - m;
    }
    CHECK(mine > 0);
    CHECK(theirs > 0);
    gwr_tpool_free(p);
    free(s);
}

TEST(nested_loops_run_serially) {
    gwr_tpool *p = gwr_tpool_new(2);
    if (!CHECK(p)) return;
    seen *s = seen_new(1);
    s->nest = p;
    s->sleep_us = 200;
    check_loop(p, s, 64);
    CHECK_EQ_INT(atomic_load(&s->nest_bad), 0);
    /* A loop after the nested one parallelizes again on the caller. */
    s->nest = NULL;
    check_loop(p, s, 64);
    gwr_tpool_free(p);
    free(s);
}

static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

TEST(idle_workers_sleep) {
    gwr_tpool *p = gwr_tpool_new(3);
    if (!CHECK(p)) return;
    atomic_llong sum = 0;
    gwr_tpool_parallel(p, 100, 1, add_range, &sum);
    sleep_us(5000); /* past the spin */
    double t0 = cpu_ms();
    sleep_us(200000);
    double idle = cpu_ms() - t0;
    printf("CPU of two idle workers over 200 ms: %.3f ms\n", idle);
    CHECK(idle < 20.0); /* spinning workers would use about 400 */
    sum = 0;
    gwr_tpool_parallel(p, 100, 1, add_range, &sum); /* they wake again */
    CHECK_EQ_INT(atomic_load(&sum), 4950);
    /* Asleep, they are not woken for a loop of under four grains: it runs
     * whole on the caller. (Retried: a worker slowed by other processes
     * may not be asleep yet.) */
    seen *s = seen_new(10);
    int whole = 0;
    for (int tries = 0; tries < 40 && !whole; tries++) { /* up to 2 s on a loaded machine */
        sleep_us(50000);
        check_loop(p, s, 39);
        whole = atomic_load(&s->nranges) == 1;
    }
    CHECK(whole);
    sleep_us(20000);
    check_loop(p, s, 1000); /* four grains or more: split, workers woken */
    CHECK(atomic_load(&s->nranges) > 1);
    free(s);
    gwr_tpool_free(p); /* freed with its workers asleep */
}

TEST(no_threads_runs_serially) {
    /* The first allocation fails: no pool. Then the pool's own memory
     * passes and its first (of two) thread creation fails: a pool of 1+1. */
    gwr_alloc_hook_arm(1, 0);
    CHECK(gwr_tpool_new(3) == NULL);
    gwr_alloc_hook_arm(0, 0);
    for (int64_t k = 3; k <= 4; k++) {
        gwr_alloc_hook_arm(k, 1); /* every thread from the k-2-th on fails */
        gwr_tpool *p = gwr_tpool_new(3);
        gwr_alloc_hook_arm(0, 0);
        if (!CHECK(p)) continue;
        CHECK_EQ_INT(gwr_tpool_size(p), (int)k - 2);
        seen *s = seen_new(1);
        int mine = check_loop(p, s, 1000);
        if (k == 3) CHECK_EQ_INT(mine, atomic_load(&s->nranges)); /* all on the caller */
        gwr_tpool_free(p);
        free(s);
    }
}

static void *pool_user(void *arg) {
    (void)arg;
    gwr_tpool *p = gwr_tpool_new(2);
    long long bad = !p;
    for (int it = 0; it < 5000 && p; it++) {
        int64_t n = 100 + it % 300;
        atomic_llong sum = 0;
        gwr_tpool_parallel(p, n, 7, add_range, &sum);
        bad += atomic_load(&sum) != n * (n - 1) / 2;
    }
    gwr_tpool_free(p);
    return (void *)(intptr_t)bad;
}

TEST(two_pools_in_parallel) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++) CHECK_EQ_INT(pthread_create(&t[i], NULL, pool_user, NULL), 0);
    for (int i = 0; i < 2; i++) {
        void *bad = NULL;
        pthread_join(t[i], &bad);
        CHECK_EQ_INT((intptr_t)bad, 0);
    }
}

int main(void) {
    RUN(sizes_and_serial_pools);
    RUN(every_index_once);
    RUN(thousands_of_tiny_loops);
    RUN(caller_and_workers_share_a_loop);
    RUN(nested_loops_run_serially);
    RUN(idle_workers_sleep);
    RUN(no_threads_runs_serially);
    RUN(two_pools_in_parallel);
    return check_report();
}
