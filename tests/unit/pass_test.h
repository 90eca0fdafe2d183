/* pass_test.h - what the tests of the optimizer's passes share: seeded
 * random numbers and constants, running one pass alone through
 * gwr_optimize --only with debug checks, and comparing the outputs before
 * (a gwr_network_clone) and after on seeded inputs of a chosen range
 * (gwr_exec_compare's own inputs are in [-1, 1), too narrow to reach a
 * Clip's bounds or GELU's tails) within the tolerance of the pass's row.
 * Static functions: include it once per test, after check.h. */
#ifndef GWR_TEST_PASS_TEST_H
#define GWR_TEST_PASS_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "net_count.h"

static uint32_t rng_state = 1;
static inline double urand(double lo, double hi) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return lo + (hi - lo) * ((rng_state >> 8) / 16777216.0);
}

/* A float32 constant of random values in [lo, hi). */
static inline gwr_tensor *rconst(gwr_network *net, int rank, const int64_t *dims, double lo, double hi) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = (float)urand(lo, hi);
    gwr_tensor *t = gwr_constant(net, GWR_FLOAT32, rank, dims, v);
    free(v);
    return t;
}

static inline gwr_tensor *input(gwr_network *net, const char *name, int rank, const int64_t *dims) {
    gwr_dim d[8];
    for (int i = 0; i < rank; i++) d[i] = dims[i];
    return gwr_network_add_input(net, name, GWR_FLOAT32, rank, d);
}

/* Runs pass `label` alone (gwr_optimize --only, debug on) for target;
 * returns its rewrites, or -1 when the run failed. */
static inline int64_t run_pass(gwr_network *net, const char *label, unsigned target) {
    gwr_optimize_report *r = NULL;
    gwr_optimize_options o = {.only = label, .target = target, .debug = 1};
    gwr_status s = gwr_optimize(net, &o, &r);
    int64_t n = -1;
    for (int i = 0; !s && i < gwr_optimize_report_count(r); i++)
        if (!strcmp(gwr_optimize_report_pass(r, i)->label, label)) n = gwr_optimize_report_pass(r, i)->rewrites;
    if (s) fprintf(stderr, "gwr_optimize: %s\n", gwr_network_errmsg(net));
    gwr_optimize_report_free(r);
    if (!s && gwr_network_verify(net)) return -1;
    return n;
}

/* Runs net on the inputs; the outputs into out (nout of them). */
static inline int run_net(gwr_network *net, int nin, const char *const *names, gwr_value *const *in, gwr_value **out) {
    gwr_session *s = gwr_session_new_raw(net, NULL);
    int nout = gwr_network_num_outputs(net);
    gwr_status st = s && nout <= 8 ? gwr_session_run(s, nin, names, in, nout, NULL, out) : GWR_ERR_INVALID_ARG;
    if (st) fprintf(stderr, "run: %s\n", s ? gwr_session_errmsg(s) : gwr_last_errmsg());
    gwr_session_free(s);
    return st ? -1 : nout;
}

/* The number of output bytes whose bits differ between a and b (NaN and
 * the sign of zero included); -1 when a run fails. */
static inline int64_t bits_differ(gwr_network *a, gwr_network *b, int nin, const char *const *names, gwr_value *const *in) {
    gwr_value *oa[8] = {0}, *ob[8] = {0};
    int na = run_net(a, nin, names, in, oa), nb = run_net(b, nin, names, in, ob);
    int64_t n = na < 0 || na != nb ? -1 : 0;
    for (int o = 0; n >= 0 && o < na; o++) {
        size_t sz = gwr_value_nbytes(oa[o]);
        const unsigned char *pa = gwr_value_cdata(oa[o]), *pb = gwr_value_cdata(ob[o]);
        if (sz != gwr_value_nbytes(ob[o])) n = -1;
        for (size_t k = 0; n >= 0 && k < sz; k++) n += pa[k] != pb[k];
    }
    for (int o = 0; o < 8; o++) gwr_value_release(oa[o]), gwr_value_release(ob[o]);
    return n;
}

/* The largest |a - b| over every output of two networks on the same seeded
 * random inputs in [-range, range), with `special` (NaN, +-0, +-inf, may
 * be 0) written over the first elements; -1 when a run fails. nbits (may
 * be NULL) gets bits_differ's count. */
static inline double max_diff(gwr_network *a, gwr_network *b, unsigned seed, double range, int special, int64_t *nbits) {
    static const double specials[] = {NAN, 0.0, -0.0, INFINITY, -INFINITY, 1e-40, -1e-40};
    int nin = gwr_network_num_inputs(a);
    if (nin > 8) return -1;
    const char *names[8];
    gwr_value *in[8] = {0};
    rng_state = seed;
    for (int i = 0; i < nin; i++) {
        gwr_tensor *t = gwr_network_input(a, i);
        int64_t dims[8];
        for (int k = 0; k < gwr_tensor_rank(t); k++) dims[k] = gwr_tensor_dim(t, k);
        names[i] = gwr_tensor_name(t);
        in[i] = gwr_value_new(gwr_tensor_dtype(t), gwr_tensor_rank(t), dims);
        for (int64_t k = 0; k < gwr_value_numel(in[i]); k++) gwr_value_set_f64(in[i], k, urand(-range, range));
        for (int64_t k = 0; special && k < 7 && k < gwr_value_numel(in[i]); k++) gwr_value_set_f64(in[i], k, specials[k]);
    }
    gwr_compare_options co = GWR_COMPARE_DEFAULTS;
    gwr_compare_report rep;
    co.inputs.ngiven = nin, co.inputs.given_names = names, co.inputs.given_values = in;
    double worst = -1;
    if (gwr_exec_compare(a, b, &co, &rep)) fprintf(stderr, "compare: %s\n", gwr_last_errmsg());
    else worst = rep.max_abs;
    gwr_compare_report_free(&rep);
    if (nbits && worst >= 0) *nbits = bits_differ(a, b, nin, names, in);
    for (int i = 0; i < nin; i++) gwr_value_release(in[i]);
    return worst;
}

static inline double pass_tolerance(const char *label) {
    for (int i = 0; i < gwr_passes_count(); i++)
        if (!strcmp(gwr_passes_info(i)->label, label)) return gwr_passes_info(i)->tolerance;
    return 0;
}

/* Runs `label` on net for target and checks the rewrites; when some are
 * expected, checks the outputs against a clone taken before within the
 * pass's tolerance. Frees net. Returns the worst difference seen. */
static inline double expect(gwr_network *net, const char *label, unsigned target, int64_t rewrites, double range) {
    double worst = 0;
    if (!CHECK(net != NULL)) return -1;
    gwr_network *before = gwr_network_clone(net);
    if (!CHECK(before != NULL)) return -1;
    CHECK_EQ_INT(run_pass(net, label, target), rewrites);
    for (unsigned seed = 1; seed <= 3; seed++) {
        double d = max_diff(before, net, seed * 7919u, range, 0, NULL);
        if (!CHECK(d >= 0 && d <= pass_tolerance(label))) fprintf(stderr, "  %s: difference %g\n", label, d);
        if (d > worst) worst = d;
    }
    gwr_network_free(before);
    gwr_network_free(net);
    return worst;
}

#endif
