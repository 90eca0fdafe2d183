/* test_exec_threads.c - OpenBLAS's thread count is one per process, and a
 * session must not leave its own behind (src/exec/blas.c, session.c): a
 * session run with threads 2 gives the caller's count back, so a later
 * session with threads 1 in the same process (or the application's own
 * OpenBLAS calls) does not run two-thread GEMMs. The count is read through
 * the executor's own binding (openblas_get_num_threads). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "exec/blas.h"
#include "exec/exec_internal.h"
#include "gwr/gwr.h"
#include "util/util.h"

/* One MatMul [n, n] x [n, n] run on a fresh session with `threads`; its
 * status. */
static gwr_status run_matmul(int threads) {
    enum { n = 64 };
    const int64_t dims[2] = {n, n};
    gwr_network *net = gwr_network_new("t");
    gwr_tensor *ts[2] = {gwr_network_add_input(net, "a", GWR_FLOAT32, 2, dims),
                         gwr_network_add_input(net, "b", GWR_FLOAT32, 2, dims)};
    gwr_layer *l = gwr_network_add_layer(net, "MatMul", "", "mm", 2, ts, 1, NULL);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    gwr_value *in[2] = {gwr_value_new(GWR_FLOAT32, 2, dims), gwr_value_new(GWR_FLOAT32, 2, dims)}, *out = NULL;
    for (int k = 0; k < 2; k++) {
        float *d = gwr_value_data(in[k]);
        for (int i = 0; i < n * n; i++) d[i] = (float)((i * 7 + k) % 11) - 5.0f;
    }
    gwr_session_options opt = {.threads = threads};
    gwr_session *s = gwr_session_new(net, &opt);
    const char *names[2] = {"a", "b"};
    gwr_status rc = s ? gwr_session_run(s, 2, names, in, 1, NULL, &out) : GWR_ERR_STATE;
    gwr_value_release(out);
    gwr_value_release(in[0]);
    gwr_value_release(in[1]);
    gwr_session_free(s);
    gwr_network_free(net);
    return rc;
}

/* OpenBLAS loaded and set to two threads: 1, or 0 (the test is skipped,
 * or failed when OpenBLAS cannot load). A serial OpenBLAS
 * (GWR_OPENBLAS=...-serial) has one thread whatever is asked: nothing
 * these tests check can happen with it. */
static int blas_at_two(void) {
    const char *why = NULL;
    if (!CHECK(gwr_blas_load(&why) == 0)) return 0;
    gwr_blas.set_num_threads(2);
    if (gwr_blas.get_num_threads() != 2) {
        printf("skipped: this OpenBLAS runs one thread only\n");
        return 0;
    }
    return 1;
}

TEST(threads_do_not_leak_between_sessions) {
    if (!blas_at_two()) return;
    gwr_blas.set_num_threads(1); /* the application's own count */
    CHECK_EQ_INT(run_matmul(2), GWR_OK);
    CHECK_EQ_INT(gwr_blas.get_num_threads(), 1); /* was 2 before the fix */
    CHECK_EQ_INT(run_matmul(1), GWR_OK);
    CHECK_EQ_INT(gwr_blas.get_num_threads(), 1);
    /* The other way round: an application at 2 keeps its 2 after a
     * one-thread session. */
    gwr_blas.set_num_threads(2);
    CHECK_EQ_INT(run_matmul(1), GWR_OK);
    CHECK_EQ_INT(gwr_blas.get_num_threads(), 2);
    gwr_blas.set_num_threads(1);
}

/* A run with gwr's pool keeps OpenBLAS at one thread (blas.h,
 * gwr_blas_cap): the kernels' gwr_blas_threads(threads) is capped on this
 * thread only while the cap is set, and the session gives the cap back. */
TEST(pool_runs_cap_blas_at_one) {
    if (!blas_at_two()) return;
    CHECK_EQ_INT(gwr_blas_cap(1), 0);
    gwr_blas_threads(2);
    CHECK_EQ_INT(gwr_blas.get_num_threads(), 1); /* capped */
    CHECK_EQ_INT(gwr_blas_cap(0), 1);
    gwr_blas_threads(2);
    CHECK_EQ_INT(gwr_blas.get_num_threads(), 2); /* the cap is gone */
    /* A session with a pool leaves neither the cap nor its count behind. */
    CHECK_EQ_INT(run_matmul(2), GWR_OK);
    CHECK_EQ_INT(gwr_blas.get_num_threads(), 2);
    CHECK_EQ_INT(gwr_blas_cap(0), 0);
    gwr_blas.set_num_threads(1);
}

/* A loop split over gwr's threads runs OpenBLAS at one thread (a body's
 * GEMMs one per thread) and gives the count back after; a loop on the
 * caller alone leaves it. */
static void note_blas(void *ctx, int64_t b, int64_t e) {
    atomic_int *most = ctx;
    (void)b, (void)e;
    int n = gwr_blas.get_num_threads();
    if (n > atomic_load(most)) atomic_store(most, n);
}

TEST(split_loops_run_blas_on_one_thread) {
    if (!blas_at_two()) return;
    gwr_tpool *p = gwr_tpool_new(2);
    if (!CHECK(p)) return;
    atomic_int most = 0;
    gwr_tpool_parallel(p, 64, 1, note_blas, &most); /* split */
    CHECK_EQ_INT(atomic_load(&most), 1);
    CHECK_EQ_INT(gwr_blas.get_num_threads(), 2);
    atomic_store(&most, 0);
    gwr_tpool_parallel(p, 64, 64, note_blas, &most); /* on the caller */
    CHECK_EQ_INT(atomic_load(&most), 2);
    CHECK_EQ_INT(gwr_blas.get_num_threads(), 2);
    gwr_tpool_free(p);
    gwr_blas.set_num_threads(1);
}

/* ---- the kernels' loops on threads (threads.c) ----------------------------
 * Each case is one layer on graph inputs, run on threads 1, 2 and 3, with
 * the loops' real grains and with every loop split (GWR_TPOOL_GRAIN_ONE):
 * every kernel here cuts its work into rows or element blocks that it
 * computes exactly as the serial loop does, so the results are
 * bit-identical (the serial kernels are checked against ONNX's own test
 * data by conformance/exec; conformance/exec_threads runs those tests on
 * split loops too). */

enum { MAXIN = 5, MAXOUT = 4 };

typedef struct op_case {
    const char *op, *domain;
    int nin, nout;
    int ranks[MAXIN];
    int64_t dims[MAXIN][4];
    gwr_dtype dtype; /* of every input; 0: float32 */
    int64_t num_heads; /* MultiHeadAttention's; 0: no attribute */
    int64_t axis;      /* the reductions' one axis (attribute axes); 0: none */
} op_case;

static void fill(gwr_value *v, int salt) {
    int64_t n = gwr_value_numel(v);
    uint32_t x = 2463534242u + (uint32_t)salt * 7919u;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        double r = (double)(x % 40001) / 10000.0 - 2.0; /* [-2, 2] */
        if (gwr_value_dtype(v) == GWR_FLOAT32) ((float *)gwr_value_data(v))[i] = (float)r;
        else ((int32_t *)gwr_value_data(v))[i] = (int32_t)(r * 3);
    }
}

/* Runs c on `threads` into out[] (new references); its status. */
static gwr_status run_case(const op_case *c, int threads, gwr_value **out) {
    gwr_dtype dt = c->dtype ? c->dtype : GWR_FLOAT32;
    gwr_network *net = gwr_network_new("t");
    gwr_tensor *ts[MAXIN];
    gwr_value *in[MAXIN];
    const char *names[MAXIN] = {"i0", "i1", "i2", "i3", "i4"};
    for (int i = 0; i < c->nin; i++) {
        ts[i] = gwr_network_add_input(net, names[i], dt, c->ranks[i], c->dims[i]);
        in[i] = gwr_value_new(dt, c->ranks[i], c->dims[i]);
        fill(in[i], i);
    }
    gwr_layer *l = gwr_network_add_layer(net, c->op, c->domain, "l", c->nin, ts, c->nout, NULL);
    if (c->num_heads) gwr_layer_set_int(l, "num_heads", c->num_heads);
    if (c->axis) gwr_layer_set_ints(l, "axes", &c->axis, 1);
    for (int o = 0; o < c->nout; o++)
        if (o == 0 || o == 3) gwr_network_mark_output(net, gwr_layer_output(l, o));
    gwr_session_options opt = {.threads = threads};
    gwr_session *s = gwr_session_new_raw(net, &opt);
    gwr_status rc = s ? gwr_session_run(s, c->nin, names, in, gwr_network_num_outputs(net), NULL, out) : GWR_ERR_STATE;
    if (rc) printf("%s: %s\n", c->op, s ? gwr_session_errmsg(s) : gwr_last_errmsg());
    for (int i = 0; i < c->nin; i++) gwr_value_release(in[i]);
    gwr_session_free(s);
    gwr_network_free(net);
    return rc;
}

static const op_case cases[] = {
    {"Add", "", 2, 1, {4, 3}, {{3, 5, 7, 33}, {5, 1, 33}}, 0, 0, 0},     /* broadcast rows */
    {"Add", "", 2, 1, {2, 1}, {{1, 70001}, {1}}, 0, 0, 0},              /* one row cut in pieces */
    {"Mul", "", 2, 1, {2, 2}, {{3, 20000}, {3, 20000}}, 0, 0, 0},
    {"Less", "", 2, 1, {2, 1}, {{40, 999}, {999}}, 0, 0, 0},            /* bool output */
    {"Exp", "", 1, 1, {2}, {{1000, 33}}, 0, 0, 0},
    {"Erf", "", 1, 1, {2}, {{100, 333}}, GWR_INT32, 0, 0},              /* integers through double */
    {"Sigmoid", "", 1, 1, {2}, {{1000, 33}}, 0, 0, 0},
    {"Softmax", "", 1, 1, {2}, {{64, 300}}, 0, 0, 0},
    {"LayerNormalization", "", 3, 1, {2, 1, 1}, {{64, 257}, {257}, {257}}, 0, 0, 0},
    {"BiasGelu", "com.microsoft", 2, 1, {2, 1}, {{64, 300}, {300}}, 0, 0, 0},
    {"FastGelu", "com.microsoft", 2, 1, {2, 1}, {{64, 300}, {300}}, 0, 0, 0},
    {"SkipLayerNormalization", "com.microsoft", 4, 1, {3, 3, 1, 1}, {{4, 16, 257}, {4, 16, 257}, {257}, {257}}, 0, 0, 0},
    {"SkipLayerNormalization", "com.microsoft", 5, 4, {3, 2, 1, 1, 1}, {{4, 16, 257}, {16, 257}, {257}, {257}, {257}}, 0, 0, 0},
    {"MultiHeadAttention", "com.microsoft", 3, 1, {3, 3, 3}, {{2, 16, 64}, {2, 24, 64}, {2, 24, 64}}, 0, 4, 0},
    {"ReduceMean", "", 1, 1, {2}, {{64, 300}}, 0, 0, -1},
    {"ReduceMax", "", 1, 1, {3}, {{16, 30, 70}}, 0, 0, 1},           /* kept, reduced, kept */
    {"ReduceLogSumExp", "", 1, 1, {3}, {{8, 40, 50}}, 0, 0, 2},      /* two passes */
    {"ReduceSum", "", 1, 1, {2}, {{64, 300}}, GWR_INT32, 0, 1},      /* integers */
    {"ReduceSum", "", 1, 1, {2}, {{300, 64}}, 0, 0, -2},             /* first group reduced: serial */
    /* Winograd (3x3, C and M >= 32): tile blocks split, each thread its own
     * scratch; 2 blocks and 5 (the last ones partial), odd output sizes. */
    /* products of few rows (OpenBLAS's sgemv): split over the pool, some
     * elements had other bits */
    {"MatMul", "", 2, 1, {2, 2}, {{1, 1024}, {1024, 1000}}, 0, 0, 0},
    {"MatMul", "", 2, 1, {2, 2}, {{4, 1024}, {1024, 1000}}, 0, 0, 0},
    {"Conv", "", 3, 1, {4, 4, 1}, {{2, 32, 35, 35}, {32, 32, 3, 3}, {32}}, 0, 0, 0},
    {"Conv", "", 2, 1, {4, 4}, {{1, 32, 60, 61}, {40, 32, 3, 3}}, 0, 0, 0},
    /* im2col (5x5): its column blocks split, each thread its own buffer. */
    {"Conv", "", 3, 1, {4, 4, 1}, {{2, 8, 40, 40}, {16, 8, 5, 5}, {16}}, 0, 0, 0},
    {"Conv", "", 2, 1, {4, 4}, {{1, 3, 67, 45}, {24, 3, 7, 7}}, 0, 0, 0},
};

static int same_bits(gwr_value *a, gwr_value *b) {
    return gwr_value_nbytes(a) == gwr_value_nbytes(b) &&
           !memcmp(gwr_value_data(a), gwr_value_data(b), gwr_value_nbytes(a));
}

static void kernels_on(int grain_one) {
    if (grain_one) setenv("GWR_TPOOL_GRAIN_ONE", "1", 1);
    else unsetenv("GWR_TPOOL_GRAIN_ONE");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const op_case *c = &cases[i];
        gwr_value *ref[MAXOUT] = {0};
        int nout = c->nout > 3 ? 2 : 1;
        if (!CHECK_OK(run_case(c, 1, ref))) continue;
        for (int t = 2; t <= 3; t++) {
            gwr_value *got[MAXOUT] = {0};
            if (CHECK_OK(run_case(c, t, got)))
                for (int o = 0; o < nout; o++)
                    if (!CHECK(same_bits(ref[o], got[o]))) printf("  %s output %d on %d threads\n", c->op, o, t);
            for (int o = 0; o < nout; o++) gwr_value_release(got[o]);
        }
        for (int o = 0; o < nout; o++) gwr_value_release(ref[o]);
    }
    unsetenv("GWR_TPOOL_GRAIN_ONE");
}

TEST(kernels_identical_on_threads) { kernels_on(0); }
TEST(kernels_identical_on_split_loops) { kernels_on(1); }

/* OPENBLAS_THREAD_TIMEOUT as the process started, before OpenBLAS loads */
static const char *timeout_at_start;
static int timeout_was_set;

/* OpenBLAS's idle workers spin for its THREAD_TIMEOUT and take cores from
 * gwr's pool: opening it asks for the shortest (4) unless the environment
 * had set one, which it leaves alone. */
TEST(openblas_timeout_shortest_unless_set) {
    const char *why = NULL;
    if (!CHECK(gwr_blas_load(&why) == 0)) return;
    const char *now = getenv("OPENBLAS_THREAD_TIMEOUT");
    if (!CHECK(now != NULL)) return;
    CHECK(strcmp(now, timeout_was_set ? timeout_at_start : "4") == 0);
}

int main(void) {
    const char *t = getenv("OPENBLAS_THREAD_TIMEOUT");
    static char saved[64];
    if (t) snprintf(saved, sizeof saved, "%s", t), timeout_at_start = saved, timeout_was_set = 1;
    RUN(openblas_timeout_shortest_unless_set);
    RUN(threads_do_not_leak_between_sessions);
    RUN(split_loops_run_blas_on_one_thread);
    RUN(pool_runs_cap_blas_at_one);
    RUN(kernels_identical_on_threads);
    RUN(kernels_identical_on_split_loops);
    return check_report();
}
