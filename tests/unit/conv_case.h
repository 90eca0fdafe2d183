/* conv_case.h - what the convolution-algorithm tests (test_conv_algos.c,
 * test_conv_winograd.c) share: running one layer on named inputs, the
 * FusedConv activation attributes, the activations from their ONNX
 * definitions, and values from doubles. Static inline functions: include
 * it after check.h. */
#ifndef GWR_TEST_CONV_CASE_H
#define GWR_TEST_CONV_CASE_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gwr/gwr.h"

/* Marks output 0 of l as net's output and runs net once, as written, on
 * one thread, with the nv named inputs; output in *y. On failure the
 * message goes to msg. net stays the caller's. */
static inline gwr_status conv_case_run(gwr_network *net, gwr_layer *l, int nv, const char *const *names,
                                       gwr_value *const *vals, gwr_value **y, char *msg, size_t size) {
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    gwr_session_options opt = {.threads = 1};
    gwr_session *s = gwr_session_new_raw(net, &opt);
    gwr_status rc;
    *y = NULL;
    if (!s) {
        rc = GWR_ERR_STATE;
        snprintf(msg, size, "%s", gwr_last_errmsg());
    } else {
        rc = gwr_session_run(s, nv, names, vals, 1, NULL, y);
        snprintf(msg, size, "%s", rc ? gwr_session_errmsg(s) : "");
    }
    gwr_session_free(s);
    return rc;
}

/* FusedConv's activation and its activation_params (LeakyRelu's alpha;
 * Clip's min, max; HardSigmoid's alpha, beta). */
static inline void conv_case_set_activation(gwr_layer *l, const char *act, const float ap[2]) {
    gwr_layer_set_string(l, "activation", act);
    int np = !strcmp(act, "LeakyRelu") ? 1 : !strcmp(act, "Clip") || !strcmp(act, "HardSigmoid") ? 2 : 0;
    if (np) gwr_layer_set_floats(l, "activation_params", ap, np);
}

/* A value in [-1, 1) from the linear congruential generator state *rng
 * (each test file seeds its own). */
static inline double conv_case_urand(unsigned *rng) {
    *rng = *rng * 1103515245u + 12345u;
    return (double)((*rng >> 8) & 0xffff) / 32768.0 - 1.0;
}

/* The activation from its ONNX definition (NULL: none); NaN stays NaN. */
static inline double conv_case_act(const char *act, const float ap[2], double v) {
    if (!act) return v;
    if (!strcmp(act, "Relu")) return isnan(v) ? v : v < 0 ? 0 : v;
    if (!strcmp(act, "Tanh")) return tanh(v);
    if (!strcmp(act, "Sigmoid")) return 1 / (1 + exp(-v));
    if (!strcmp(act, "LeakyRelu")) return v < 0 ? ap[0] * v : v;
    if (!strcmp(act, "Clip")) return isnan(v) ? v : v < ap[0] ? ap[0] : v > ap[1] ? ap[1] : v;
    if (!strcmp(act, "HardSigmoid")) return fmax(0, fmin(1, ap[0] * v + ap[1]));
    return NAN;
}

/* A value of dtype dt and shape dims holding vals, each rounded to dt. */
static inline gwr_value *conv_case_value(gwr_dtype dt, int rank, const int64_t *dims, const double *vals) {
    gwr_value *v = gwr_value_new(dt, rank, dims);
    for (int64_t i = 0; v && i < gwr_value_numel(v); i++) gwr_value_set_f64(v, i, vals[i]);
    return v;
}

#endif
