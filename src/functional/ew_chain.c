/* ew_chain.c - the shape rule of gwr::ElementwiseChain (functional_api.h):
 * output 0 is input 0's type, after checking the program and that every
 * side operand is float32 of a shape the kernel broadcasts. Registered as
 * a built-in plugin kind (plugin.c). */
#include <string.h>

#include "functional/functional_api.h"
#include "functional/functional_internal.h"
#include "ir/ir_api.h"

static gwr_status check_params(gwr_layer *l, int64_t nops) {
    static const char *const names[] = {"alphas", "betas"};
    for (int i = 0; i < 2; i++) {
        const float *v;
        int64_t n = -1;
        if (!gwr_layer_has_attr(l, names[i])) continue;
        if (gwr_layer_attr_floats(l, names[i], &v, &n) || n != nops)
            return gwr_ir_error(gwr_layer_network(l), GWR_ERR_INVALID_ARG,
                                "ElementwiseChain '%s': %s must be FLOATS, one per link (%lld links)", gwr_layer_name(l),
                                names[i], (long long)nops);
    }
    return GWR_OK;
}

/* Side operand t against output dims o (rank r): GWR_OK, or why not. */
static gwr_status check_side(gwr_layer *l, int slot, int r, const int64_t *o, int known) {
    gwr_tensor *t = gwr_layer_input(l, slot);
    gwr_network *net = gwr_layer_network(l);
    const char *nm = gwr_layer_name(l);
    if (!t) return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "ElementwiseChain '%s': input %d is missing", nm, slot);
    if (gwr_tensor_dtype(t) != GWR_FLOAT32)
        return gwr_ir_error(net, GWR_ERR_TYPE, "ElementwiseChain '%s': input %d must be float32", nm, slot);
    int sr = gwr_tensor_rank(t);
    int64_t s[GWR_MAX_RANK], period, inner;
    if (sr < 0 || !known) return GWR_OK; /* checked by the kernel */
    for (int a = 0; a < sr; a++) {
        s[a] = gwr_tensor_dim(t, a);
        if (!GWR_DIM_IS_KNOWN(s[a])) return GWR_OK;
    }
    if (!gwr_ewc_side_map(r, o, sr, s, &period, &inner)) {
        char ty[128];
        gwr_tensor_type_str(t, ty, sizeof ty);
        return gwr_ir_error(net, GWR_ERR_SHAPE,
                            "ElementwiseChain '%s': input %d %s is not a scalar, the output's shape or one run of its axes",
                            nm, slot, ty);
    }
    return GWR_OK;
}

gwr_status gwr_fn_ew_chain_infer(gwr_layer *l, void *user) {
    (void)user;
    gwr_network *net = gwr_layer_network(l);
    const char *nm = gwr_layer_name(l);
    const int64_t *ops;
    int64_t nops = -1;
    if (gwr_layer_attr_ints(l, "ops", &ops, &nops) || nops < 1 || nops > GWR_EWC_MAX_LINKS)
        return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "ElementwiseChain '%s': ops must be INTS of 1 to %d link codes", nm,
                            GWR_EWC_MAX_LINKS);
    int nbin = 0;
    for (int64_t i = 0; i < nops; i++) {
        int a = gwr_ewc_arity(ops[i]);
        if (!a)
            return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "ElementwiseChain '%s': link %lld has unknown op code %lld", nm,
                                (long long)i, (long long)ops[i]);
        nbin += a == 2;
    }
    if (gwr_layer_num_inputs(l) != 1 + nbin)
        return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "ElementwiseChain '%s': %d binary links need %d inputs, it has %d", nm,
                            nbin, 1 + nbin, gwr_layer_num_inputs(l));
    gwr_status s = check_params(l, nops);
    if (s) return s;
    gwr_tensor *x = gwr_layer_input(l, 0);
    if (!x || gwr_tensor_dtype(x) != GWR_FLOAT32)
        return gwr_ir_error(net, GWR_ERR_TYPE, "ElementwiseChain '%s': input 0 must be a float32 tensor", nm);
    int r = gwr_tensor_rank(x), known = r >= 0;
    int64_t o[GWR_MAX_RANK];
    gwr_dim od[GWR_MAX_RANK];
    for (int a = 0; a < r; a++) {
        od[a] = gwr_tensor_dim(x, a);
        o[a] = od[a];
        known = known && GWR_DIM_IS_KNOWN(od[a]);
    }
    for (int i = 1; i <= nbin && !s; i++) s = check_side(l, i, r, o, known);
    if (s) return s;
    return gwr_tensor_set_type(gwr_layer_output(l, 0), GWR_FLOAT32, r, r >= 0 ? od : NULL);
}
