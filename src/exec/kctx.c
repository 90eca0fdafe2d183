/* kctx.c - the kernels' side of a kernel context: outputs from the
 * caller's pool, passed-through and aliased outputs, the failure message,
 * attributes with defaults, int inputs, and subgraphs, which go back to
 * whoever set the context up (the session) through k->run_graph. Nothing
 * here knows the planner, so the kernels depend on this file and the
 * session on them, never the other way round. */
#include <stdarg.h>
#include <stdio.h>

#include "exec/exec_internal.h"

gwr_status gwr_k_fail(gwr_kctx *k, gwr_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->msg->text, sizeof k->msg->text, fmt, ap);
    va_end(ap);
    k->msg->status = st;
    return st;
}

/* A value from the pool; `i` names output i in messages (-1: none). */
static gwr_value *pool_value(gwr_kctx *k, int i, gwr_dtype dtype, int rank, const int64_t *dims) {
    char what[32] = "a value";
    if (i >= 0) snprintf(what, sizeof what, "output %d", i);
    gwr_value *v;
    if (dtype == GWR_STRING) {
        v = gwr_value_over(NULL, NULL, dtype, rank, dims);
    } else {
        int64_t n = gwr_shape_numel(rank, dims);
        int bits = gwr_dtype_bits(dtype);
        if (n < 0 || !bits || (uint64_t)n > ((uint64_t)1 << 56) / (uint64_t)bits) {
            gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s: bad shape or dtype", what);
            return NULL;
        }
        gwr_buffer *b = gwr_exec_pool_alloc(k->pool, (size_t)(((uint64_t)n * (uint64_t)bits + 7) / 8));
        v = b ? gwr_value_over(b, (void *)(uintptr_t)gwr_buffer_data(b), dtype, rank, dims) : NULL;
        gwr_buffer_release(b);
    }
    if (!v) gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory for %s", what);
    return v;
}

gwr_value *gwr_k_value(gwr_kctx *k, gwr_dtype dtype, int rank, const int64_t *dims) {
    return pool_value(k, -1, dtype, rank, dims);
}

gwr_value *gwr_k_cache_value(gwr_kctx *k, gwr_dtype dtype, const int64_t dims[4], int64_t cap) {
    int64_t room[4] = {dims[0], dims[1], cap, dims[3]}, n = gwr_shape_numel(4, room);
    int bits = gwr_dtype_bits(dtype);
    if (dtype == GWR_STRING || n < 0 || cap < dims[2] || !bits || bits % 8 || (uint64_t)n > ((uint64_t)1 << 56) / (uint64_t)bits) {
        gwr_k_fail(k, GWR_ERR_INVALID_ARG, "a cache value: bad shape or dtype");
        return NULL;
    }
    gwr_buffer *b = gwr_exec_pool_alloc(k->pool, (size_t)n * (size_t)(bits / 8));
    gwr_value *v = b ? gwr_value_cache_over(b, (void *)(uintptr_t)gwr_buffer_data(b), dtype, dims, cap) : NULL;
    gwr_buffer_release(b);
    if (!v) gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory for a cache value");
    return v;
}

gwr_value *gwr_k_out(gwr_kctx *k, int i, gwr_dtype dtype, int rank, const int64_t *dims) {
    if (i < 0 || i >= k->nout) {
        gwr_k_fail(k, GWR_ERR_INVALID_ARG, "internal: output %d of %d", i, k->nout);
        return NULL;
    }
    gwr_value *v = pool_value(k, i, dtype, rank, dims);
    if (!v) return NULL;
    gwr_value_release(k->out[i]);
    k->out[i] = v;
    return v;
}

gwr_value *gwr_k_out_over(gwr_kctx *k, int i, int j, gwr_dtype dtype, int rank, const int64_t *dims) {
    const gwr_value *x = j >= 0 && j < k->nin && j < 32 && (k->in_last >> j & 1) ? k->in[j] : NULL;
    int bits = gwr_dtype_bits(dtype);
    int64_t n = gwr_shape_numel(rank, dims);
    /* the frame's reference alone: not a network input the caller holds,
     * nor a value a Loop carries; the bytes of no view (Reshape's) */
    if (!x || dtype == GWR_STRING || x->dtype == GWR_STRING || !bits || n < 0 || i < 0 || i >= k->nout ||
        atomic_load(&x->refs) != 1 || !gwr_exec_pool_owns_sole(k->pool, x->buf) ||
        (uint64_t)n > ((uint64_t)1 << 56) / (uint64_t)bits || ((uint64_t)n * (uint64_t)bits + 7) / 8 != x->nbytes)
        return gwr_k_out(k, i, dtype, rank, dims);
    gwr_value *v = gwr_value_over(x->buf, x->data, dtype, rank, dims);
    if (!v) {
        gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory for output %d", i);
        return NULL;
    }
    gwr_value_release(k->out[i]);
    k->out[i] = v;
    return v;
}

void gwr_k_set_out(gwr_kctx *k, int i, gwr_value *v) {
    gwr_value_retain(v);
    gwr_value_release(k->out[i]);
    k->out[i] = v;
}

gwr_status gwr_k_alias(gwr_kctx *k, int i, gwr_value *v, int rank, const int64_t *dims) {
    if (gwr_shape_numel(rank, dims) != v->numel)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "cannot view %lld elements as %lld", (long long)v->numel,
                          (long long)gwr_shape_numel(rank, dims));
    gwr_value *o;
    if (v->dtype == GWR_STRING) {
        o = gwr_value_over(NULL, NULL, v->dtype, rank, dims);
        const gwr_bytes *b = v->data;
        for (int64_t j = 0; o && j < o->numel; j++)
            if (gwr_value_set_string(o, j, b[j].data, b[j].len)) gwr_value_release(o), o = NULL;
    } else {
        o = gwr_value_over(v->buf, v->data, v->dtype, rank, dims);
    }
    if (!o) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    gwr_value_release(k->out[i]);
    k->out[i] = o;
    return GWR_OK;
}

int gwr_k_out_used(const gwr_kctx *k, int i) {
    if (!k->out_used) return 1; /* gwr_exec_layer: every output is wanted */
    return i >= 0 && i < k->nout && k->out_used[i];
}

/* The attribute readers: absent or of another type, the default (the IR's
 * getters write no message for an absent attribute). */

int64_t gwr_k_int(const gwr_kctx *k, const char *name, int64_t def) {
    int64_t v;
    gwr_layer_attr_int(k->layer, name, def, &v);
    return v;
}

float gwr_k_float(const gwr_kctx *k, const char *name, float def) {
    float v;
    gwr_layer_attr_float(k->layer, name, def, &v);
    return v;
}

const char *gwr_k_string(const gwr_kctx *k, const char *name, const char *def) {
    const char *v;
    gwr_layer_attr_string(k->layer, name, def, &v);
    return v;
}

int64_t gwr_k_ints(const gwr_kctx *k, const char *name, const int64_t **v) {
    int64_t n;
    gwr_layer_attr_ints(k->layer, name, v, &n);
    return n;
}

int64_t gwr_k_floats(const gwr_kctx *k, const char *name, const float **v) {
    int64_t n;
    gwr_layer_attr_floats(k->layer, name, v, &n);
    return n;
}

int64_t gwr_k_in_ints(gwr_kctx *k, int i, int64_t *out, int64_t max) {
    const gwr_value *v = i < k->nin ? k->in[i] : NULL;
    if (!v) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %d is missing", i), -1;
    if ((v->dtype != GWR_INT64 && v->dtype != GWR_INT32) || v->rank > 1)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %d must be a 1-D int32 or int64 tensor", i), -1;
    if (v->numel > max) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %d has more than %lld values", i, (long long)max), -1;
    for (int64_t j = 0; j < v->numel; j++) out[j] = gwr_v_get_i64(v, j);
    return v->numel;
}

gwr_status gwr_k_run_graph(gwr_kctx *k, gwr_network *g, int nin, gwr_value *const *in, int nout, gwr_value **out) {
    if (!k->run_graph) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "subgraphs run only in a session");
    return k->run_graph(k, g, nin, in, nout, out);
}
