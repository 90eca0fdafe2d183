/* pass_util.c - see pass_util.h. */
#include "passes/pass_util.h"

#include "gwr/passes.h"

gwr_tensor *gwr_ps_const_new(gwr_network *net, gwr_dtype dt, int rank, const int64_t *dims, const double *v,
                             double fill) {
    gwr_value *val = gwr_value_new(dt, rank, dims);
    if (!val) return NULL;
    for (int64_t i = 0; i < gwr_value_numel(val); i++) gwr_value_set_f64(val, i, v ? v[i] : fill);
    gwr_weights w;
    gwr_tensor *t = NULL;
    if (!gwr_value_to_weights(val, &w)) {
        t = gwr_network_add_constant(net, NULL, &w);
        gwr_buffer_release(w.buffer);
    }
    gwr_value_release(val);
    return t;
}

int64_t gwr_ps_target(gwr_rewrite_ctx *c) {
    const gwr_args *a = gwr_rewrite_ctx_args(c);
    int64_t t = GWR_TARGET_ONNX;
    if (!a || gwr_args_get_int(a, "target", &t)) t = GWR_TARGET_ONNX;
    return t;
}
