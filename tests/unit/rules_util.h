/* rules_util.h - what the tests of the rules room share: run a network on
 * the executor, apply a rule set, count live layers of an op. */
#ifndef GWR_TEST_RULES_UTIL_H
#define GWR_TEST_RULES_UTIL_H

#include <stdio.h>
#include <string.h>

#include "gwr/gwr.h"

/* Runs net (as written) with float32 input `x` of the given shape and
 * values; copies output 0 into out (cap floats). Returns its numel, or -1
 * (message on stderr). */
static inline int64_t rt_run(gwr_network *net, int rank, const int64_t *dims, const float *x, float *out, int64_t cap) {
    gwr_value *in = gwr_value_new(GWR_FLOAT32, rank, dims);
    if (!in) return -1;
    memcpy(gwr_value_data(in), x, (size_t)gwr_value_numel(in) * sizeof *x);
    gwr_session *s = gwr_session_new_raw(net, NULL);
    gwr_value *o = NULL;
    const char *names[1] = {"x"};
    int64_t n = -1;
    if (!s) fprintf(stderr, "session: %s\n", gwr_last_errmsg());
    else if (gwr_session_run(s, 1, names, &in, 1, NULL, &o)) fprintf(stderr, "run: %s\n", gwr_session_errmsg(s));
    else {
        n = gwr_value_numel(o);
        for (int64_t i = 0; i < n && i < cap; i++) out[i] = (float)gwr_value_get_f64(o, i);
        gwr_value_release(o);
    }
    gwr_session_free(s);
    gwr_value_release(in);
    return n;
}

/* Applies the rules text to net: the rewrite count, or -1 (message on stderr). */
static inline int64_t rt_apply(gwr_network *net, const char *text) {
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    int64_t n = -1;
    if (gwr_rules_load(m, text)) {
        fprintf(stderr, "load: %s\n", gwr_rewrite_manager_errmsg(m));
    } else if (gwr_rewrite_manager_rewrite(m, net, NULL)) {
        fprintf(stderr, "rewrite: %s\n", gwr_rewrite_manager_errmsg(m));
    } else {
        gwr_rewrite_summary sum;
        gwr_rewrite_manager_summary(m, &sum);
        n = sum.rewrites;
    }
    gwr_rewrite_manager_free(m);
    return n;
}

/* Live layers of op in net (all ops when op is NULL). */
static inline int rt_count(const gwr_network *net, const char *op) {
    int n = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (!gwr_layer_is_removed(l) && (!op || !strcmp(gwr_layer_op(l), op))) n++;
    }
    return n;
}

#endif
