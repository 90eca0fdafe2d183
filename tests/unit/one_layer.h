/* one_layer.h - a harness for the kernel tests of the exec room: a network
 * of one layer whose inputs are given values, run once in a raw session,
 * with its message kept for the checks; and small value helpers. Include
 * it in one translation unit per test executable (the state is static). */
#ifndef GWR_TEST_ONE_LAYER_H
#define GWR_TEST_ONE_LAYER_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gwr/gwr.h"

/* ---- a one-layer harness ----------------------------------------------------- */

#define MAXIO 12
static gwr_network *t_net;
static char t_err[1024];

/* A network "t" with one layer `op` of `domain` reading inputs x0..
 * (NULL: absent) and marking its nout outputs. */
static inline gwr_layer *layer_of(const char *domain, const char *op, int nin, gwr_value *const *in, int nout) {
    t_net = gwr_network_new("t");
    gwr_tensor *ts[MAXIO];
    for (int i = 0; i < nin; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "x%d", i);
        ts[i] = in[i] ? gwr_network_add_input(t_net, nm, gwr_value_dtype(in[i]), -1, NULL) : NULL;
    }
    gwr_layer *l = gwr_network_add_layer(t_net, op, domain, "L", nin, ts, nout, NULL);
    for (int o = 0; l && o < nout; o++) gwr_network_mark_output(t_net, gwr_layer_output(l, o));
    return l;
}

/* The same in the default domain. */
static inline gwr_layer *layer(const char *op, int nin, gwr_value *const *in, int nout) { return layer_of("", op, nin, in, nout); }

/* Runs the network of layer() under opset (0: none imported) and frees
 * it; outputs are new references. The message goes to t_err. */
static inline gwr_status run(int64_t opset, int nin, gwr_value *const *in, int nout, gwr_value **out) {
    if (opset > 0) gwr_network_set_opset(t_net, "", opset);
    const char *names[MAXIO];
    gwr_value *vals[MAXIO];
    int n = 0;
    static char nm[MAXIO][8];
    for (int i = 0; i < nin; i++)
        if (in[i]) {
            snprintf(nm[i], sizeof nm[i], "x%d", i);
            names[n] = nm[i], vals[n++] = in[i];
        }
    for (int o = 0; o < nout; o++) out[o] = NULL;
    gwr_status rc;
    gwr_session *s = gwr_session_new_raw(t_net, NULL);
    if (!s) {
        snprintf(t_err, sizeof t_err, "%s", gwr_last_errmsg());
        rc = GWR_ERR_INVALID_ARG;
    } else {
        rc = gwr_session_run(s, n, names, vals, nout, NULL, out);
        snprintf(t_err, sizeof t_err, "%s", rc ? gwr_session_errmsg(s) : "");
        gwr_session_free(s);
    }
    gwr_network_free(t_net);
    t_net = NULL;
    return rc;
}

static inline gwr_value *vf(int rank, const int64_t *dims, const float *d) {
    gwr_value *v = gwr_value_new(GWR_FLOAT32, rank, dims);
    if (v && d) memcpy(gwr_value_data(v), d, gwr_value_nbytes(v));
    return v;
}

static inline gwr_value *vi(int rank, const int64_t *dims, const int64_t *d) {
    gwr_value *v = gwr_value_new(GWR_INT64, rank, dims);
    if (v && d) memcpy(gwr_value_data(v), d, gwr_value_nbytes(v));
    return v;
}

static inline void rel(int n, gwr_value **v) {
    for (int i = 0; i < n; i++) gwr_value_release(v[i]), v[i] = NULL;
}

static inline double at(const gwr_value *v, int64_t i) { return gwr_value_get_f64(v, i); }

static inline int near(double a, double b) { return fabs(a - b) <= 1e-5 + 1e-5 * fabs(b); }

static inline int dims_are(const gwr_value *v, int rank, const int64_t *d) {
    if (!v || gwr_value_rank(v) != rank) return 0;
    for (int i = 0; i < rank; i++)
        if (gwr_value_dims(v)[i] != d[i]) return 0;
    return 1;
}

#endif
