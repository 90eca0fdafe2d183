/* optimize_guard.c - the interface guard of gwr_optimize: what the
 * network's outputs are (dtype, rank, dims) before the passes, checked
 * again after them. A pass must never change an output's type: a model
 * whose output became float16, or [N, 4] instead of [2, 4], is a wrong
 * model even when every rewrite verified. What inference had not worked out
 * before (an unknown dtype, rank or dim) may become known, and what a
 * rewritten producer infers less precisely is given back (the written
 * model keeps its declared interface); but a known or symbolic value must
 * never turn into another. */
#include <stdio.h>
#include <string.h>

#include "ir/ir_api.h"
#include "optimize_internal.h"
#include "util/util.h"

struct gwr_opt_guard {
    int n;
    gwr_dtype *dtype;
    int *rank;     /* -1: unknown */
    gwr_dim **dims; /* NULL where the rank is unknown */
};

void gwr_opt_guard_free(gwr_opt_guard *g) {
    if (!g) return;
    for (int i = 0; i < g->n; i++) gwr_free(g->dims ? g->dims[i] : NULL);
    gwr_free(g->dims);
    gwr_free(g->rank);
    gwr_free(g->dtype);
    gwr_free(g);
}

gwr_opt_guard *gwr_opt_guard_take(const gwr_network *net) {
    gwr_opt_guard *g = gwr_calloc(1, sizeof *g);
    if (!g) return NULL;
    g->n = gwr_network_num_outputs(net);
    size_t n = (size_t)g->n + 1;
    g->dtype = gwr_calloc(n, sizeof *g->dtype);
    g->rank = gwr_calloc(n, sizeof *g->rank);
    g->dims = gwr_calloc(n, sizeof *g->dims);
    if (!g->dtype || !g->rank || !g->dims) {
        gwr_opt_guard_free(g);
        return NULL;
    }
    for (int i = 0; i < g->n; i++) {
        const gwr_tensor *t = gwr_network_output(net, i);
        g->dtype[i] = gwr_tensor_dtype(t);
        g->rank[i] = gwr_tensor_rank(t);
        if (g->rank[i] <= 0) continue;
        if (!(g->dims[i] = gwr_calloc((size_t)g->rank[i], sizeof **g->dims))) {
            gwr_opt_guard_free(g);
            return NULL;
        }
        memcpy(g->dims[i], gwr_tensor_dims(t), (size_t)g->rank[i] * sizeof **g->dims);
    }
    return g;
}

/* Is symbol d a dim of one of net's inputs? */
static int input_symbol(const gwr_network *net, gwr_dim d) {
    for (int i = 0; i < gwr_network_num_inputs(net); i++) {
        const gwr_tensor *t = gwr_network_input(net, i);
        for (int k = 0; k < gwr_tensor_rank(t); k++)
            if (gwr_tensor_dim(t, k) == d) return 1;
    }
    return 0;
}

/* Was a dim, known or symbolic, turned into another? Not into an unknown
 * one (a rewritten producer may infer less than the file declared), and
 * not a symbol no input has into a number: exporters name every output
 * dim they did not work out ("Concat461_dim_1"), and a graph that always
 * computes 384 there only says what that name stood for (MiniLM-L3's
 * pooled embedding). A symbol of the inputs ("batch") stays what it is. */
static int dim_changed(const gwr_network *net, gwr_dim was, gwr_dim now) {
    if (GWR_DIM_IS_SYM(was) && GWR_DIM_IS_KNOWN(now) && !input_symbol(net, was)) return 0;
    return (GWR_DIM_IS_KNOWN(was) || GWR_DIM_IS_SYM(was)) && now != was && now != GWR_DIM_UNKNOWN;
}

/* Output i's type before the passes, as gwr_tensor_type_str writes one. */
static void type_str(const gwr_opt_guard *g, int i, const gwr_network *net, char *buf, size_t size) {
    size_t off = (size_t)snprintf(buf, size, "%s", gwr_dtype_name(g->dtype[i]));
    if (g->rank[i] < 0) {
        if (off < size) snprintf(buf + off, size - off, "[...]");
        return;
    }
    for (int d = 0; d < g->rank[i] && off < size; d++) {
        gwr_dim x = g->dims[i][d];
        const char *sep = d ? "," : "[";
        if (GWR_DIM_IS_KNOWN(x)) off += (size_t)snprintf(buf + off, size - off, "%s%lld", sep, (long long)x);
        else if (GWR_DIM_IS_SYM(x)) off += (size_t)snprintf(buf + off, size - off, "%s%s", sep, gwr_network_dim_name(net, x));
        else off += (size_t)snprintf(buf + off, size - off, "%s?", sep);
    }
    if (off < size) snprintf(buf + off, size - off, "%s]", g->rank[i] ? "" : "[");
}

/* Gives output t back what it declared before where a rewritten producer
 * inferred less (an unknown dtype, rank or dim), so that the written model
 * keeps its interface. */
static gwr_status restore(const gwr_opt_guard *g, int i, gwr_tensor *t) {
    gwr_type vt;
    if (gwr_tensor_value_type(t, &vt) || vt.kind != GWR_VALUE_TENSOR) return GWR_OK; /* plain tensors only */
    int rank = gwr_tensor_rank(t), lost = 0;
    gwr_dtype dt = gwr_tensor_dtype(t);
    if (dt == GWR_UNDEFINED && g->dtype[i] != GWR_UNDEFINED) dt = g->dtype[i], lost = 1;
    if (rank < 0 && g->rank[i] >= 0) rank = g->rank[i], lost = 1;
    gwr_dim dims[GWR_MAX_RANK];
    if (rank > GWR_MAX_RANK) return GWR_OK;
    for (int d = 0; d < rank; d++) {
        gwr_dim now = gwr_tensor_rank(t) == rank ? gwr_tensor_dim(t, d) : GWR_DIM_UNKNOWN;
        dims[d] = now;
        if (now == GWR_DIM_UNKNOWN && g->rank[i] == rank && g->dims[i][d] != GWR_DIM_UNKNOWN) dims[d] = g->dims[i][d], lost = 1;
    }
    return lost ? gwr_tensor_set_type(t, dt, rank, dims) : GWR_OK;
}

gwr_status gwr_opt_guard_check(const gwr_opt_guard *g, gwr_network *net) {
    if (gwr_network_num_outputs(net) != g->n)
        return gwr_ir_error(net, GWR_ERR_INVALID_GRAPH,
                            "gwr_optimize: the passes changed the number of outputs from %d to %d", g->n,
                            gwr_network_num_outputs(net));
    for (int i = 0; i < g->n; i++) {
        gwr_tensor *t = gwr_network_output(net, i);
        int rank = gwr_tensor_rank(t), bad = 0;
        if (g->dtype[i] != GWR_UNDEFINED && gwr_tensor_dtype(t) != GWR_UNDEFINED && gwr_tensor_dtype(t) != g->dtype[i])
            bad = 1;
        else if (g->rank[i] >= 0 && rank >= 0 && rank != g->rank[i]) bad = 1;
        for (int d = 0; !bad && g->rank[i] > 0 && d < rank; d++) bad = dim_changed(net, g->dims[i][d], gwr_tensor_dim(t, d));
        if (!bad) {
            gwr_status s = restore(g, i, t);
            if (s) return s;
            continue;
        }
        char was[160], now[160];
        type_str(g, i, net, was, sizeof was);
        gwr_tensor_type_str(t, now, sizeof now);
        return gwr_ir_error(net, GWR_ERR_INVALID_GRAPH,
                            "gwr_optimize: output '%s' was %s before the passes and is %s after them: refused (a "
                            "declared output type that disagrees with what the graph computes, or a wrong pass)",
                            gwr_tensor_name(t), was, now);
    }
    return GWR_OK;
}
