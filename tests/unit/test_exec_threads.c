/* test_exec_threads.c - OpenBLAS's thread count is one per process, and a
 * session must not leave its own behind (src/exec/blas.c, session.c): a
 * session run with threads 2 gives the caller's count back, so a later
 * session with threads 1 in the same process (or the application's own
 * OpenBLAS calls) does not run two-thread GEMMs. The count is read through
 * the executor's own binding (openblas_get_num_threads). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "exec/blas.h"
#include "gwr/gwr.h"

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

TEST(threads_do_not_leak_between_sessions) {
    const char *why = NULL;
    if (!CHECK(gwr_blas_load(&why) == 0)) return;
    /* A serial OpenBLAS (GWR_OPENBLAS=...-serial) has one thread whatever
     * is asked: nothing can leak. */
    gwr_blas.set_num_threads(2);
    if (gwr_blas.get_num_threads() != 2) {
        printf("skipped: this OpenBLAS runs one thread only\n");
        return;
    }
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

int main(void) {
    RUN(threads_do_not_leak_between_sessions);
    return check_report();
}
