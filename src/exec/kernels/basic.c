/* basic.c - Constant and Identity: the values a network holds rather than
 * computes. The model for the other families: read attributes with the
 * gwr_k_* helpers, check what the spec requires, set every output. */
#include <string.h>

#include "exec/exec_internal.h"

/* ONNX Constant (and the CONSTANT layers of initializers): exactly one of
 * value, value_float(s), value_int(s), value_string(s). */
static gwr_status k_constant(gwr_kctx *k) {
    const gwr_weights *w;
    if (!gwr_layer_get_tensor(k->layer, "value", &w)) {
        gwr_value *v = gwr_value_from_weights(w);
        if (!v) return gwr_k_fail(k, GWR_ERR_NOMEM, "%s", gwr_last_errmsg());
        gwr_k_set_out(k, 0, v);
        gwr_value_release(v);
        return GWR_OK;
    }
    float f;
    int64_t i, n, len;
    const float *fs;
    const int64_t *is;
    const char *s;
    size_t slen;
    const gwr_bytes *ss;
    gwr_value *v;
    if (!gwr_layer_get_float(k->layer, "value_float", &f)) {
        if (!(v = gwr_k_out(k, 0, GWR_FLOAT32, 0, NULL))) return GWR_ERR_NOMEM;
        *(float *)v->data = f;
    } else if (!gwr_layer_get_int(k->layer, "value_int", &i)) {
        if (!(v = gwr_k_out(k, 0, GWR_INT64, 0, NULL))) return GWR_ERR_NOMEM;
        *(int64_t *)v->data = i;
    } else if (!gwr_layer_get_floats(k->layer, "value_floats", &fs, &n)) {
        if (!(v = gwr_k_out(k, 0, GWR_FLOAT32, 1, &n))) return GWR_ERR_NOMEM;
        if (n) memcpy(v->data, fs, (size_t)n * sizeof *fs);
    } else if (!gwr_layer_get_ints(k->layer, "value_ints", &is, &n)) {
        if (!(v = gwr_k_out(k, 0, GWR_INT64, 1, &n))) return GWR_ERR_NOMEM;
        if (n) memcpy(v->data, is, (size_t)n * sizeof *is);
    } else if (!gwr_layer_get_string(k->layer, "value_string", &s, &slen)) {
        if (!(v = gwr_k_out(k, 0, GWR_STRING, 0, NULL))) return GWR_ERR_NOMEM;
        if (gwr_value_set_string(v, 0, s, slen)) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    } else if (!gwr_layer_get_strings(k->layer, "value_strings", &ss, &len)) {
        if (!(v = gwr_k_out(k, 0, GWR_STRING, 1, &len))) return GWR_ERR_NOMEM;
        for (int64_t j = 0; j < len; j++)
            if (gwr_value_set_string(v, j, ss[j].data, ss[j].len)) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    } else {
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "no value the executor can read (sparse_value is not supported)");
    }
    return GWR_OK;
}

static gwr_status k_identity(gwr_kctx *k) {
    if (!k->in[0]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input 0 is missing");
    gwr_k_set_out(k, 0, k->in[0]);
    return GWR_OK;
}

const gwr_kernel_entry gwr_kernels_basic[] = {
    GWR_KERNEL(Constant, k_constant),
    GWR_KERNEL(Identity, k_identity, .flags = GWR_KF_ALIAS | GWR_KF_VALUES | GWR_KF_CACHE),
    {.fn = NULL},
};
