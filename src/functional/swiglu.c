/* swiglu.c - the shape rule of gwr::SwiGLU (functional_api.h): X (..., 2F)
 * of a float dtype gives Y (..., F) of the same dtype. Registered as a
 * built-in plugin kind (plugin.c). */
#include "functional/functional_api.h"
#include "functional/functional_internal.h"
#include "ir/ir_api.h"

gwr_status gwr_fn_swiglu_infer(gwr_layer *l, void *user) {
    (void)user;
    gwr_network *net = gwr_layer_network(l);
    const char *nm = gwr_layer_name(l);
    gwr_tensor *x = gwr_layer_num_inputs(l) == 1 ? gwr_layer_input(l, 0) : NULL;
    if (!x) return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "SwiGLU '%s': takes one input X", nm);
    gwr_dtype dt = gwr_tensor_dtype(x);
    if (dt != GWR_FLOAT32 && dt != GWR_FLOAT16 && dt != GWR_BFLOAT16 && dt != GWR_FLOAT64)
        return gwr_ir_error(net, GWR_ERR_TYPE, "SwiGLU '%s': X must be a float tensor", nm);
    int r = gwr_tensor_rank(x);
    if (r == 0) return gwr_ir_error(net, GWR_ERR_SHAPE, "SwiGLU '%s': X must have a last axis", nm);
    if (r < 0) return gwr_tensor_set_type(gwr_layer_output(l, 0), dt, -1, NULL);
    gwr_dim d[GWR_MAX_RANK];
    for (int a = 0; a < r; a++) d[a] = gwr_tensor_dim(x, a);
    if (GWR_DIM_IS_KNOWN(d[r - 1])) {
        if (d[r - 1] % 2) return gwr_ir_error(net, GWR_ERR_SHAPE, "SwiGLU '%s': X's last axis (%lld) is odd", nm, (long long)d[r - 1]);
        d[r - 1] /= 2;
    } else {
        d[r - 1] = GWR_DIM_UNKNOWN;
    }
    return gwr_tensor_set_type(gwr_layer_output(l, 0), dt, r, d);
}
