/* blas.h - OpenBLAS, loaded when the first session needs a GEMM.
 *
 * Linking libopenblas into libgwr made every process that loads gwr start
 * OpenBLAS's worker threads (its pthread build creates them in a library
 * constructor), and they spin for a while: `gwr rewrite` and `gwr convert`,
 * which never multiply a matrix, paid system time and cross-CPU TLB
 * shootdowns for them. The executor now opens the library on first need
 * and calls it through these pointers; cblas.h still gives the types. */
#ifndef GWR_EXEC_BLAS_H
#define GWR_EXEC_BLAS_H

#include <cblas.h>
#include <stddef.h>
#undef I /* complex.h's, which some cblas.h include: kernels use I as a name */

typedef struct gwr_blas_fns {
    __typeof__(&cblas_sgemm) sgemm;
    __typeof__(&cblas_dgemm) dgemm;
    __typeof__(&cblas_sgemv) sgemv; /* the products of one row (gwr_ku_sgemm) */
    __typeof__(&openblas_set_num_threads) set_num_threads;
    __typeof__(&openblas_get_num_threads) get_num_threads;
} gwr_blas_fns;

/* Filled by gwr_blas_load; callers use it only after a successful load. */
extern gwr_blas_fns gwr_blas;

/* Opens OpenBLAS once per process (thread-safe). 0 when ready; -1 with
 * *why set to a message that stays valid. */
int gwr_blas_load(const char **why);

/* The BLAS thread count, changed only when it differs. */
void gwr_blas_threads(int n);

/* OpenBLAS's thread count is one per process: a session sets its own for
 * the length of a run and gives the caller's back at the end, so that a
 * session with --threads 2 leaves no two-thread GEMMs behind it (for a
 * later session, or for the application's own OpenBLAS calls).
 * gwr_blas_run_begin sets n when OpenBLAS is open and returns the count
 * to restore (0: not open yet); gwr_blas_run_end(that) restores it. */
int gwr_blas_run_begin(int n);
void gwr_blas_run_end(int prev);

/* A run with gwr's own workers keeps OpenBLAS at one thread (session.c):
 * the pool splits the work (sgemm.c's panels, the convolutions' blocks),
 * and an OpenBLAS worker woken by one small product (a final FC's sgemv,
 * squeeze-excite) would spin on sched_yield for its THREAD_TIMEOUT and
 * take the second core from gwr's worker (ResNet-18 at two threads: ~40%
 * of the samples in OpenBLAS's spinning thread, 1.03x over one thread).
 * gwr_blas_cap(cap) makes gwr_blas_threads on this thread set at most
 * cap (0: no cap) and returns the cap before, to give back at the end of
 * the run; thread-local, so sessions run by other threads keep theirs. */
int gwr_blas_cap(int cap);

/* gwr's own workers (threads.c) and OpenBLAS's: a run with threads N has
 * N-1 of each. They take turns rather than fight: a GEMM runs on
 * OpenBLAS's team while gwr's workers spin briefly and then sleep (their
 * spin yields the core, so OpenBLAS's thread gets it), and gwr's loops
 * run while OpenBLAS's idle worker spins on sched_yield (its own timeout,
 * about 0.1 s of CPU after a run: OPENBLAS_THREAD_TIMEOUT, left to the
 * user), which gives the core to gwr's worker. A loop whose body calls
 * OpenBLAS (attention's heads) runs it at one thread while the loop runs
 * on several: two teams of N on N cores would only queue. */

/* Around a loop that runs on several of gwr's threads (threads.c): OpenBLAS
 * at one thread, so that a loop body that multiplies (attention's heads, a
 * convolution's groups) runs one GEMM per thread rather than a team each.
 * gwr_blas_loop_begin returns the count to give back (0: nothing changed:
 * OpenBLAS not open, or at one already). */
int gwr_blas_loop_begin(void);
void gwr_blas_loop_end(int prev);

#endif
