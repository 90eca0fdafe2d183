/* pass_case.h - the harness of the rewrite-pattern tests (onnxscript's
 * rewriter tests: every rule has a case where it fires, cases where it
 * must not, and a numeric check of the result).
 *
 *   static gwr_network *build_foldable(void) { ... }
 *   pass_case_check(build_foldable, "fold_constants", 2, 1e-6);
 *   pass_case_check_pattern(build_plain, &my_pattern, 0, 0);
 *
 * One case: build the network once, clone it (gwr_network_clone) as the
 * reference, run a rewrite manager holding only the pattern on the built
 * network (its FLayerInfos, which a clone lacks, stay on it) with debug on
 * (the network verified after every rewrite, and a pattern that claims a
 * change it did not make, or the reverse, fails the run), check how many
 * times the pattern fired (gwr_rewrite_manager_stats), verify, and run both
 * networks on the same seeded inputs (gwr_exec_compare) within atol (and
 * rtol). A case expected to fire 0 times must also leave the network as
 * it was (gwr_network_equal against the original, before dead layers are
 * pruned). Symbolic dims are bound to 2 unless the case binds them.
 *
 * pass_case_run does the work and only reports (no CHECK), so that a test
 * can also show that the harness catches a wrong pattern; pass_case_check
 * and pass_case_check_pattern CHECK every step and print what failed.
 * Static inline functions: include it after check.h. */
#ifndef GWR_TEST_PASS_CASE_H
#define GWR_TEST_PASS_CASE_H

#include <stdio.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"

typedef gwr_network *(*pass_case_build_fn)(void);

/* A case: the pattern by built-in label, or a pattern of the test's own
 * (then label names it in the manager; NULL: "pass_case"). */
typedef struct pass_case {
    pass_case_build_fn build;
    const char *label;
    const gwr_pattern_rewriter *pattern;
    int benefit;
    const gwr_args *args;          /* the manager's args, or NULL */
    int64_t expect;                /* rewrites expected of the pattern; -1: any */
    double atol, rtol;
    int nbind;                     /* symbolic dims of the inputs, by name */
    const gwr_dim_binding *bind;
    uint64_t seed;                 /* of the random inputs */
} pass_case;

/* What happened. ok: every step passed. */
typedef struct pass_case_result {
    int built, rewrote, verified, unchanged, compared, numeric_pass, ok;
    int64_t fired;                 /* the pattern's rewrites (stats), -1 when the run failed */
    int64_t layers_before, layers_after; /* live layers */
    char why[512];                 /* the first failure, "" when ok */
    char worst[128];               /* the comparison's worst output, "" when none differs */
    double max_abs;
} pass_case_result;

/* The pattern's index in m (manager order), or -1. */
static inline int pass_case_index_(const gwr_rewrite_manager *m, const char *label) {
    for (int i = 0; i < gwr_rewrite_manager_count(m); i++)
        if (!strcmp(gwr_rewrite_manager_label(m, i), label)) return i;
    return -1;
}

/* Runs the pattern on net; fills r->rewrote and r->fired. */
static inline void pass_case_rewrite_(const pass_case *c, gwr_network *net, pass_case_result *r) {
    const char *label = c->label ? c->label : "pass_case";
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    gwr_status st = m ? GWR_OK : GWR_ERR_NOMEM;
    if (!st) st = c->pattern ? gwr_rewrite_manager_add(m, label, c->pattern, c->benefit) : gwr_passes_add(m, label);
    gwr_rewrite_options o = {.debug = 1, .keep_dead = 1};
    if (!st) st = gwr_rewrite_manager_set_options(m, &o);
    if (!st) st = gwr_rewrite_manager_rewrite(m, net, c->args);
    gwr_pattern_stats ps;
    int i = m ? pass_case_index_(m, label) : -1;
    if (!st && i >= 0 && !gwr_rewrite_manager_stats(m, i, &ps)) {
        r->rewrote = 1;
        r->fired = ps.rewrites;
    } else {
        snprintf(r->why, sizeof r->why, "rewrite with '%s': %s", label,
                 m ? gwr_rewrite_manager_errmsg(m) : gwr_last_errmsg());
    }
    gwr_rewrite_manager_free(m);
}

/* Compares the outputs of orig and net; fills r->compared and the rest. */
static inline void pass_case_compare_(const pass_case *c, gwr_network *orig, gwr_network *net, pass_case_result *r) {
    gwr_compare_options o = {.atol = c->atol, .rtol = c->rtol};
    o.inputs.seed = c->seed;
    o.inputs.nbind = c->nbind, o.inputs.bind = c->bind;
    o.inputs.default_dim = 2;
    gwr_compare_report rep;
    if (gwr_exec_compare(orig, net, &o, &rep)) {
        snprintf(r->why, sizeof r->why, "compare: %s", gwr_last_errmsg());
        gwr_compare_report_free(&rep);
        return;
    }
    r->compared = 1;
    r->numeric_pass = rep.pass;
    r->max_abs = rep.max_abs;
    snprintf(r->worst, sizeof r->worst, "%s", rep.worst_name ? rep.worst_name : "");
    if (!rep.pass) {
        const gwr_compare_output *w = &rep.outputs[rep.worst];
        snprintf(r->why, sizeof r->why, "output '%s' differs: %s, max abs %.3g, max rel %.3g, %lld of %lld beyond atol %g",
                 w->name, w->same_type ? "same type" : "another type", w->max_abs, w->max_rel, (long long)w->nbad,
                 (long long)w->numel, c->atol);
    }
    gwr_compare_report_free(&rep);
}

static inline pass_case_result pass_case_run(const pass_case *c) {
    pass_case_result r;
    memset(&r, 0, sizeof r);
    r.fired = -1;
    /* The built network is rewritten, so that the FLayerInfos its builders
     * recorded (which a clone does not copy) are there for the pattern; a
     * clone taken first is the reference. */
    gwr_network *net = c->build ? c->build() : NULL;
    gwr_network *orig = net && gwr_network_verify(net) == GWR_OK ? gwr_network_clone(net) : NULL;
    if (!orig) {
        snprintf(r.why, sizeof r.why, "build: %s", net ? gwr_network_errmsg(net) : gwr_last_errmsg());
        if (net && !*gwr_network_errmsg(net)) snprintf(r.why, sizeof r.why, "clone: %s", gwr_last_errmsg());
        gwr_network_free(net);
        return r;
    }
    r.built = 1;
    r.layers_before = gwr_network_num_live_layers(net);
    pass_case_rewrite_(c, net, &r);
    if (r.rewrote) {
        char why[400];
        r.unchanged = gwr_network_equal(orig, net, why, sizeof why);
        if (r.fired == 0 && !r.unchanged) snprintf(r.why, sizeof r.why, "fired 0 times but changed the network: %s", why);
        gwr_status st = gwr_network_prune(net, NULL);
        if (!st) st = gwr_network_verify(net);
        r.verified = st == GWR_OK;
        if (!r.verified && !r.why[0]) snprintf(r.why, sizeof r.why, "verify: %s", gwr_network_errmsg(net));
        r.layers_after = gwr_network_num_live_layers(net);
        if (!r.why[0] && c->expect >= 0 && r.fired != c->expect)
            snprintf(r.why, sizeof r.why, "fired %lld times, expected %lld", (long long)r.fired, (long long)c->expect);
    }
    if (r.verified) {
        char keep[sizeof r.why];
        memcpy(keep, r.why, sizeof keep);
        pass_case_compare_(c, orig, net, &r);
        if (keep[0]) memcpy(r.why, keep, sizeof keep); /* the first failure */
    }
    r.ok = r.rewrote && r.verified && r.compared && r.numeric_pass && (r.fired != 0 || r.unchanged) &&
           (c->expect < 0 || r.fired == c->expect);
    gwr_network_free(net);
    gwr_network_free(orig);
    return r;
}

/* Runs c and CHECKs every step; 1 when all passed. */
static inline int pass_case_check_case(const pass_case *c) {
    pass_case_result r = pass_case_run(c);
    const char *label = c->label ? c->label : "pass_case";
    if (!r.ok) fprintf(stderr, "  pass case '%s': %s\n", label, r.why);
    CHECK(r.built);
    CHECK(r.rewrote);
    if (c->expect >= 0) CHECK_EQ_INT(r.fired, c->expect);
    if (r.fired == 0) CHECK(r.unchanged);
    CHECK(r.verified);
    CHECK(r.compared && r.numeric_pass);
    return r.ok;
}

/* A built-in pattern (include/gwr/passes.h) by label. */
static inline int pass_case_check(pass_case_build_fn build, const char *label, int64_t expect, double atol) {
    pass_case c = {.build = build, .label = label, .expect = expect, .atol = atol};
    return pass_case_check_case(&c);
}

/* A pattern of the test's own. */
static inline int pass_case_check_pattern(pass_case_build_fn build, const gwr_pattern_rewriter *p, int64_t expect,
                                   double atol) {
    pass_case c = {.build = build, .pattern = p, .expect = expect, .atol = atol};
    return pass_case_check_case(&c);
}

#endif
