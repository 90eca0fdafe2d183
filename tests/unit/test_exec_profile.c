/* test_exec_profile.c - gwr_session_profile (issue 22): one "layer" event
 * per layer executed, one "run" per run, the "plan" phase, phases the
 * caller adds, nothing recorded while off; the Chrome trace written; and
 * sessions refuse more threads than GWR_SESSION_MAX_THREADS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"

/* y = Relu(Neg(x)) on x [2, 3]. */
static gwr_network *two_layers(void) {
    const int64_t dims[2] = {2, 3};
    gwr_network *net = gwr_network_new("p");
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, dims);
    gwr_layer *a = gwr_network_add_layer(net, "Neg", "", "neg", 1, &x, 1, NULL);
    gwr_tensor *h = gwr_layer_output(a, 0);
    gwr_layer *b = gwr_network_add_layer(net, "Relu", "", "relu", 1, &h, 1, NULL);
    gwr_network_mark_output(net, gwr_layer_output(b, 0));
    return net;
}

static gwr_status run_once(gwr_session *s) {
    const int64_t dims[2] = {2, 3};
    gwr_value *x = gwr_value_new(GWR_FLOAT32, 2, dims), *y = NULL;
    const char *name = "x";
    gwr_status st = gwr_session_run(s, 1, &name, &x, 1, NULL, &y);
    gwr_value_release(x);
    gwr_value_release(y);
    return st;
}

static int64_t count(const gwr_session *s, const char *cat, const char *name) {
    int64_t n = 0;
    for (int64_t i = 0; i < gwr_session_profile_count(s); i++) {
        const gwr_profile_event *e = gwr_session_profile_event(s, i);
        n += !strcmp(e->cat, cat) && (!name || !strcmp(e->name, name));
    }
    return n;
}

TEST(profile_records_layers_runs_and_phases) {
    gwr_network *net = two_layers();
    gwr_session *s = gwr_session_new_raw(net, NULL);
    if (!CHECK(s != NULL)) return;
    CHECK_OK(run_once(s));
    CHECK_EQ_INT(gwr_session_profile_count(s), 0); /* off: nothing */
    int64_t t0 = gwr_clock_ns();
    CHECK_OK(gwr_session_profile(s, 1));
    CHECK_EQ_INT(count(s, "phase", "plan"), 1);
    CHECK_OK(gwr_session_profile_phase(s, "load", 5, 1000)); /* the earliest: ts 0 */
    CHECK(gwr_session_profile_phase(s, "bad", t0, -1) != GWR_OK);
    for (int r = 0; r < 3; r++) CHECK_OK(run_once(s));
    CHECK_EQ_INT(count(s, "run", "run"), 3);
    CHECK_EQ_INT(count(s, "layer", "neg"), 3);
    CHECK_EQ_INT(count(s, "layer", "relu"), 3);
    CHECK_EQ_INT(count(s, "layer", NULL), 6);
    for (int64_t i = 0; i < gwr_session_profile_count(s); i++) {
        const gwr_profile_event *e = gwr_session_profile_event(s, i);
        CHECK(e->dur_ns >= 0);
        if (!strcmp(e->cat, "layer")) {
            CHECK_EQ_INT(e->depth, 0);
            CHECK_STR(e->op, !strcmp(e->name, "neg") ? "Neg" : "Relu");
            CHECK_STR(e->shapes, "float32[2,3] -> float32[2,3]");
            CHECK(e->start_ns >= t0);
        }
    }
    CHECK(gwr_session_profile_event(s, gwr_session_profile_count(s)) == NULL);
    /* off: the events stay, no more come */
    CHECK_OK(gwr_session_profile(s, 0));
    CHECK_OK(run_once(s));
    CHECK_EQ_INT(count(s, "run", NULL), 3);
    /* the trace */
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (CHECK(f != NULL)) {
        CHECK_OK(gwr_session_profile_write(s, f));
        fclose(f);
        CHECK(!strncmp(buf, "{\"traceEvents\":[", 16));
        CHECK_CONTAINS(buf, "{\"name\":\"neg\",\"cat\":\"layer\",\"ph\":\"X\",\"ts\":");
        CHECK_CONTAINS(buf, "\"args\":{\"op\":\"Neg\",\"shapes\":\"float32[2,3] -> float32[2,3]\",\"depth\":0}}");
        CHECK_CONTAINS(buf, "{\"name\":\"load\",\"cat\":\"phase\",\"ph\":\"X\",\"ts\":0.000,\"dur\":1.000,\"pid\":1,\"tid\":0");
    }
    free(buf);
    /* on again: cleared, the plan phase back */
    CHECK_OK(gwr_session_profile(s, 1));
    CHECK_EQ_INT(gwr_session_profile_count(s), 1);
    CHECK(gwr_session_profile(NULL, 1) != GWR_OK);
    /* planned as written: no optimize phase */
    CHECK_OK(gwr_session_profile_optimize(s, t0));
    CHECK_EQ_INT(count(s, "phase", "optimize"), 0);
    gwr_session_free(s);
    /* optimized: the phase runs from the call to the start of planning */
    int64_t asked = gwr_clock_ns();
    s = gwr_session_new(net, NULL);
    if (CHECK(s != NULL) && CHECK(gwr_session_optimized(s))) {
        CHECK_OK(gwr_session_profile(s, 1));
        CHECK_OK(gwr_session_profile_optimize(s, asked));
        const gwr_profile_event *plan = gwr_session_profile_event(s, 0), *opt = gwr_session_profile_event(s, 1);
        if (CHECK(opt != NULL)) {
            CHECK_STR(opt->name, "optimize");
            CHECK(opt->start_ns == asked && opt->start_ns + opt->dur_ns == plan->start_ns);
        }
    }
    gwr_session_free(s);
    gwr_network_free(net);
}

TEST(threads_past_the_limit_refused) {
    gwr_network *net = two_layers();
    gwr_session_options o = {.threads = GWR_SESSION_MAX_THREADS + 1};
    gwr_session *s = gwr_session_new_raw(net, &o);
    CHECK(s == NULL);
    CHECK_CONTAINS(gwr_last_errmsg(), "at most 256");
    CHECK(gwr_session_new(net, &o) == NULL);
    o.threads = 2;
    s = gwr_session_new_raw(net, &o);
    if (CHECK(s != NULL)) CHECK_OK(run_once(s));
    gwr_session_free(s);
    gwr_network_free(net);
}

int main(void) {
    RUN(profile_records_layers_runs_and_phases);
    RUN(threads_past_the_limit_refused);
    return check_report();
}
