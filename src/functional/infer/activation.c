/* activation.c - shape rules of the activation functions (Relu and its
 * relatives, the smooth ones, Shrink, Gelu, PRelu): each keeps its input's
 * dtype and shape; PRelu checks that its slope broadcasts to X and Gelu its
 * approximation. Clip is in elementwise.c and Dropout in basic.c. As in
 * exec/kernels/activation.c. */

#include <string.h>

#include "functional/infer/infer_internal.h"

static gwr_status infer_prelu(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X"), *slope = gwr_fi_need(c, 1, "slope");
    shp xs, ss;
    sbuf a, b;
    if (!x || !slope || !gwr_fi_same_dtype(c, x, slope)) return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_shp_get(slope, &ss);
    if (!gwr_fi_ubcast_ok(&xs, &ss))
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "slope %s does not broadcast to X %s", gwr_fi_tstr(slope, &a),
                           gwr_fi_tstr(x, &b));
    return gwr_fi_put(c, 0, dt_of(x), &xs);
}

static gwr_status infer_gelu(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input");
    const char *a;
    if (!x) return c->st;
    a = gwr_fi_astr(c, "approximate", "none");
    if (c->st) return c->st;
    if (strcmp(a, "none") != 0 && strcmp(a, "tanh") != 0)
        return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "approximate must be \"none\" or \"tanh\", got \"%s\"", a);
    return gwr_fi_same_as_input(c, GWR_UNDEFINED);
}

/* SwiGLU (opset 28): A and B of one dtype and one shape, no broadcasting. */
static gwr_status infer_swiglu(ictx *c) {
    gwr_tensor *a = gwr_fi_need(c, 0, "A"), *b = gwr_fi_need(c, 1, "B");
    shp as, bs;
    sbuf x, y;
    if (!a || !b || !gwr_fi_same_dtype(c, a, b)) return c->st;
    gwr_fi_shp_get(a, &as);
    gwr_fi_shp_get(b, &bs);
    if (as.rank >= 0 && bs.rank >= 0) {
        int ok = as.rank == bs.rank;
        for (int i = 0; ok && i < as.rank; i++) ok = gwr_fi_dmerge(as.d[i], bs.d[i], &as.d[i]);
        if (!ok)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "A %s and B %s must have one shape (no broadcasting)", gwr_fi_tstr(a, &x),
                               gwr_fi_tstr(b, &y));
    } else if (as.rank < 0) {
        as = bs;
    }
    return gwr_fi_put(c, 0, dt_of(a), &as);
}

const gwr_fi_entry gwr_fi_rules_activation[] = {
    {GWR_OP_Relu, gwr_fi_rule_same},
    {GWR_OP_LeakyRelu, gwr_fi_rule_same},
    {GWR_OP_Sigmoid, gwr_fi_rule_same},
    {GWR_OP_HardSigmoid, gwr_fi_rule_same},
    {GWR_OP_Tanh, gwr_fi_rule_same},
    {GWR_OP_Elu, gwr_fi_rule_same},
    {GWR_OP_Selu, gwr_fi_rule_same},
    {GWR_OP_Celu, gwr_fi_rule_same},
    {GWR_OP_ThresholdedRelu, gwr_fi_rule_same},
    {GWR_OP_Softplus, gwr_fi_rule_same},
    {GWR_OP_Softsign, gwr_fi_rule_same},
    {GWR_OP_HardSwish, gwr_fi_rule_same},
    {GWR_OP_Shrink, gwr_fi_rule_same},
    {GWR_OP_PRelu, infer_prelu},
    {GWR_OP_Gelu, infer_gelu},
    {GWR_OP_Swish, gwr_fi_rule_same},
    {GWR_OP_SwiGLU, infer_swiglu},
    {GWR_OP_CUSTOM, NULL},
};
