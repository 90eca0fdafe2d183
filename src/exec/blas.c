/* blas.c - opening OpenBLAS at first need (see blas.h). */
#include "exec/blas.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

gwr_blas_fns gwr_blas;

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static char blas_why[512];
static atomic_int blas_ok;
static int blas_initial; /* the process's count when gwr opened OpenBLAS */
static _Thread_local int blas_cap; /* gwr_blas_cap: the most this thread's run sets; 0: none */

/* dlsym's object pointer into a function pointer, the way POSIX allows. */
#define BIND(h, field, sym)                                                 \
    do {                                                                    \
        void *p_ = dlsym(h, sym);                                           \
        if (!p_) {                                                          \
            snprintf(blas_why, sizeof blas_why, "OpenBLAS has no %s", sym); \
            return;                                                         \
        }                                                                   \
        memcpy(&gwr_blas.field, &p_, sizeof p_);                            \
    } while (0)

static void blas_open(void) {
    /* The runtime name first (package libopenblas0); then the library the
     * build found (GWR_BLAS_PATH, set by CMake). */
    static const char *const names[] = {"libopenblas.so.0",
#ifdef GWR_BLAS_PATH
                                        GWR_BLAS_PATH,
#endif
                                        NULL};
    /* GWR_OPENBLAS names another build (a serial one, say) instead. */
    const char *only = getenv("GWR_OPENBLAS");
    const char *const one[] = {only, NULL};
    const char *const *list = only && *only ? one : names;
    /* OpenBLAS's pthread build starts its workers when it loads, and a
     * worker that ran a job spins on sched_yield for 2^28 cycles (its
     * THREAD_TIMEOUT) before it sleeps. Sessions split their work over
     * gwr's own workers and keep OpenBLAS at one thread inside runs, so
     * those spinning workers only take cores from gwr's: the LSTM bench at
     * two threads ran in 2.1 ms or 1.25 ms depending on whether one was
     * still spinning. Unless the environment says otherwise, OpenBLAS is
     * asked for its shortest timeout (read when it loads; an OpenBLAS the
     * process had loaded already keeps its own). */
    if (!getenv("OPENBLAS_THREAD_TIMEOUT")) setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0);
    void *h = NULL;
    const char *err = "not found";
    for (int i = 0; list[i] && !h; i++)
        if (!(h = dlopen(list[i], RTLD_NOW | RTLD_LOCAL))) err = dlerror();
    if (!h) {
        snprintf(blas_why, sizeof blas_why, "cannot load OpenBLAS (%s): %s", list[0], err ? err : "not found");
        return;
    }
    BIND(h, sgemm, "cblas_sgemm");
    BIND(h, dgemm, "cblas_dgemm");
    BIND(h, sgemv, "cblas_sgemv");
    BIND(h, set_num_threads, "openblas_set_num_threads");
    BIND(h, get_num_threads, "openblas_get_num_threads");
    blas_initial = gwr_blas.get_num_threads();
    blas_ok = 1; /* the handle stays open for the life of the process */
}

int gwr_blas_load(const char **why) {
    pthread_once(&blas_once, blas_open);
    if (blas_ok) return 0;
    if (why) *why = blas_why;
    return -1;
}

void gwr_blas_threads(int n) {
    if (blas_cap > 0 && n > blas_cap) n = blas_cap;
    if (n < 1) n = 1;
    if (gwr_blas.get_num_threads() != n) gwr_blas.set_num_threads(n);
}

int gwr_blas_cap(int cap) {
    int prev = blas_cap;
    blas_cap = cap > 0 ? cap : 0;
    return prev;
}

int gwr_blas_run_begin(int n) {
    if (!blas_ok) return 0; /* nothing to set: no kernel has needed OpenBLAS yet */
    int prev = gwr_blas.get_num_threads();
    gwr_blas_threads(n);
    return prev;
}

void gwr_blas_run_end(int prev) {
    /* A subgraph planned during the run may have opened OpenBLAS: its
     * kernels changed the count from the one it had at opening. */
    if (!prev && blas_ok) prev = blas_initial;
    if (prev > 0) gwr_blas_threads(prev);
}

int gwr_blas_loop_begin(void) {
    if (!atomic_load_explicit(&blas_ok, memory_order_acquire)) return 0;
    int prev = gwr_blas.get_num_threads();
    if (prev <= 1) return 0;
    gwr_blas.set_num_threads(1);
    return prev;
}

void gwr_blas_loop_end(int prev) {
    if (prev > 1) gwr_blas.set_num_threads(prev);
}
