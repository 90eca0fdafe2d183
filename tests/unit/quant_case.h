/* quant_case.h - what the tests of the quant room's modes share
 * (test_quant_dynamic.c, test_quant_weight_only.c,
 * test_quant_smoothquant.c): seeded data, float32 constants, running a
 * network on one input, finding layers. Expected values are computed in
 * the tests themselves, by hand or by the formulas of the ONNX spec. */
#ifndef GWR_TEST_QUANT_CASE_H
#define GWR_TEST_QUANT_CASE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gwr/gwr.h"
#include "gwr/quantize.h"
#include "net_count.h"

/* Seeded uniform [0, 1) and standard normal numbers. */
static inline double qc_unif(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) / 9007199254740992.0;
}
static inline double qc_normal(uint64_t *s) {
    double u = qc_unif(s), v = qc_unif(s);
    return sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}

static inline gwr_tensor *qc_const(gwr_network *net, int rank, const int64_t *dims, const float *v) {
    return gwr_constant(net, GWR_FLOAT32, rank, dims, v);
}

/* A float32 value of the given shape holding v (copied). */
static inline gwr_value *qc_value(int rank, const int64_t *dims, const float *v) {
    gwr_value *x = gwr_value_new(GWR_FLOAT32, rank, dims);
    if (x) memcpy(gwr_value_data(x), v, (size_t)gwr_value_numel(x) * sizeof(float));
    return x;
}

/* Output `out` (0-based) of net on input "x" = x, as a new float array of
 * *n elements (NULL on failure, with the message printed). */
static inline float *qc_run(gwr_network *net, gwr_value *x, int out, int64_t *n) {
    gwr_session *s = gwr_session_new_raw(net, NULL);
    int no = gwr_network_num_outputs(net);
    gwr_value *ov[8] = {0};
    const char *nm = "x";
    float *r = NULL;
    if (!s) fprintf(stderr, "planning: %s\n", gwr_last_errmsg());
    else if (no > 8 || gwr_session_run(s, 1, &nm, &x, no, NULL, ov)) fprintf(stderr, "run: %s\n", gwr_session_errmsg(s));
    else if ((r = malloc((size_t)gwr_value_numel(ov[out]) * sizeof *r))) {
        *n = gwr_value_numel(ov[out]);
        memcpy(r, gwr_value_cdata(ov[out]), (size_t)*n * sizeof *r);
    }
    for (int i = 0; i < no && i < 8; i++) gwr_value_release(ov[i]);
    gwr_session_free(s);
    return r;
}

/* The first live layer of op in net, or NULL. */
static inline gwr_layer *qc_find_op(gwr_network *net, const char *op) {
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (!gwr_layer_is_removed(l) && !strcmp(gwr_layer_op(l), op)) return l;
    }
    return NULL;
}

/* The constant data of t (NULL when it is not a constant). */
static inline const void *qc_const_data(const gwr_tensor *t, gwr_dtype *dt, int *rank, const int64_t **dims) {
    gwr_layer *p = t ? gwr_tensor_parent(t) : NULL;
    const gwr_weights *w = NULL;
    if (!p || strcmp(gwr_layer_op(p), "Constant") || gwr_layer_get_tensor(p, "value", &w)) return NULL;
    if (dt) *dt = w->dtype;
    if (rank) *rank = w->rank;
    if (dims) *dims = w->dims;
    return w->data;
}

/* Relative RMS error of a against the reference b. */
static inline double qc_rel(const float *a, const float *b, int64_t n) {
    double dd = 0, bb = 0;
    for (int64_t i = 0; i < n; i++) dd += (a[i] - b[i]) * (double)(a[i] - b[i]), bb += (double)b[i] * b[i];
    return sqrt(dd / (bb > 0 ? bb : 1));
}

#endif
