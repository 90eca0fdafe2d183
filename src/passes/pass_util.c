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

int gwr_ps_transpose_perm(const gwr_layer *l, int r, int64_t *p) {
    const int64_t *v;
    int64_t n;
    if (gwr_layer_get_ints(l, "perm", &v, &n)) {
        if (r < 0) return -1;
        for (int i = 0; i < r; i++) p[i] = r - 1 - i;
        return r;
    }
    if (n > GWR_MAX_RANK || (r >= 0 && n != r)) return -1;
    for (int64_t i = 0; i < n; i++) {
        if (v[i] < 0 || v[i] >= n) return -1;
        p[i] = v[i];
    }
    return (int)n;
}

int64_t gwr_ps_weight_channel(int kind, const int64_t *d, int64_t n, int64_t group, int trans_b, int64_t i) {
    switch (kind) {
    case GWR_PS_W_CONV: return i / (n / d[0]);
    case GWR_PS_W_CONVT: {
        int64_t inner = n / (d[0] * d[1]), j = (i / inner) % d[1], ci = i / (d[1] * inner);
        return ci / (d[0] / group) * d[1] + j;
    }
    case GWR_PS_W_GEMM: return trans_b ? i / d[1] : i % d[1];
    default: return i % d[1];
    }
}
