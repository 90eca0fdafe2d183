/* fused_cnn.c - shape rules of onnxruntime's CNN fusions (com.microsoft):
 * FusedConv (Conv, an optional residual Z of the output's exact shape,
 * an activation) and FusedGemm (Gemm, an activation). The Conv and Gemm
 * parts are conv.c's and linalg.c's rules; here the activation and Z.
 *
 * The activations are those onnxruntime's CPU kernels accept:
 *   FusedConv  "activation" Relu, Tanh, Sigmoid (no parameter), LeakyRelu
 *              (1), Clip, HardSigmoid (2) in "activation_params" (floats,
 *              exactly that many); absent: none.
 *   FusedGemm  "activation" Relu, Tanh, Sigmoid, LeakyRelu, HardSigmoid,
 *              parameters in "activation_alpha" / "activation_beta"
 *              (onnxruntime's functors; it has no Clip for FusedGemm).
 * and gwr's extension, which onnxruntime would refuse:
 *   FusedConv  "activation" HardSwish (no parameter), QuickGelu (1:
 *              alpha; x * sigmoid(alpha x), the SiLU at 1), made by
 *              `gwr optimize --target gwr` for gwr's executor only. */
#include <string.h>

#include "functional/infer/infer_internal.h"

typedef struct act_row {
    const char *name;
    int nparams;  /* FusedConv's activation_params count */
    int for_gemm; /* FusedGemm accepts it */
} act_row;

static const act_row acts[] = {
    {"Relu", 0, 1}, {"Tanh", 0, 1}, {"Sigmoid", 0, 1}, {"LeakyRelu", 1, 1}, {"Clip", 2, 0}, {"HardSigmoid", 2, 1},
    {"HardSwish", 0, 0}, {"QuickGelu", 1, 0}, /* gwr's extensions */
};

/* The activation attribute, checked: 1 when fine, 0 with an error. */
static int check_activation(ictx *c, int gemm) {
    const char *a = gwr_fi_astr(c, "activation", NULL);
    if (c->st) return 0;
    if (!a) {
        if (!gemm) return 1;
        gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "attribute 'activation' is required");
        return 0;
    }
    const act_row *r = NULL;
    for (size_t i = 0; i < sizeof acts / sizeof *acts && !r; i++)
        if (!strcmp(acts[i].name, a) && (!gemm || acts[i].for_gemm)) r = &acts[i];
    if (!r) {
        gwr_fi_fail(c, GWR_ERR_UNSUPPORTED, "activation '%.64s' is not one of %s", a,
                    gemm ? "Relu, Tanh, Sigmoid, LeakyRelu, HardSigmoid"
                         : "Relu, Tanh, Sigmoid, LeakyRelu, Clip, HardSigmoid, HardSwish, QuickGelu");
        return 0;
    }
    if (gemm || !r->nparams) return 1;
    const float *v = NULL;
    int64_t n = -1;
    if (gwr_layer_get_floats(c->l, "activation_params", &v, &n) != GWR_OK || n != r->nparams) {
        gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "activation %s needs %d activation_params (floats), %s %lld", a,
                    r->nparams, n < 0 ? "found" : "given", (long long)(n < 0 ? 0 : n));
        return 0;
    }
    if (!strcmp(a, "Clip") && !(v[0] <= v[1])) {
        gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "Clip bounds [%g, %g] are out of order", (double)v[0], (double)v[1]);
        return 0;
    }
    return 1;
}

static gwr_status infer_fused_conv(ictx *c) {
    if (!check_activation(c, 0) || gwr_fi_rule_conv(c)) return c->st;
    gwr_tensor *z = inp(c, 3), *y = gwr_layer_output(c->l, 0);
    if (!z) return GWR_OK;
    if (!gwr_fi_same_dtype(c, inp(c, 0), z)) return c->st;
    /* Z is added as is: exactly the output's shape, no broadcasting */
    shp zs, ys;
    sbuf p, q;
    gwr_fi_shp_get(z, &zs);
    gwr_fi_shp_get(y, &ys);
    if (zs.rank < 0 || ys.rank < 0) return GWR_OK;
    int ok = zs.rank == ys.rank;
    for (int i = 0; ok && i < ys.rank; i++) ok = gwr_fi_dmerge(zs.d[i], ys.d[i], &ys.d[i]);
    if (!ok)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "Z %s is not of the output's shape %s", gwr_fi_tstr(z, &p),
                           gwr_fi_tstr(y, &q));
    /* Z may know dims the convolution's arithmetic does not */
    return gwr_fi_put(c, 0, dt_of(y), &ys);
}

static gwr_status infer_fused_gemm(ictx *c) {
    if (!check_activation(c, 1)) return c->st;
    return gwr_fi_rule_gemm(c);
}

const gwr_fi_entry gwr_fi_rules_fused_cnn[] = {
    {GWR_OP_MS_FusedConv, infer_fused_conv},
    {GWR_OP_MS_FusedGemm, infer_fused_gemm},
    {GWR_OP_CUSTOM, NULL},
};
