/* training.c - shape rules of ai.onnx.preview.training's optimizers:
 * Adagrad, Adam and Momentum. After R and T come n tensors to optimize and
 * their gradients and states (X1..Xn, G1..Gn, ...); the outputs are the new
 * X1..Xn and the new states, output o * n + i shaped like X_i. As in
 * exec/kernels/training.c. */

#include "functional/infer/infer_internal.h"

static gwr_status infer_optimizer(ictx *c) {
    int groups = c->id == GWR_OP_TRAIN_Adam ? 4 : 3;
    if (!gwr_fi_need(c, 0, "R") || !gwr_fi_need(c, 1, "T")) return c->st;
    if (c->nin < 2 + groups || (c->nin - 2) % groups)
        return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "%d inputs after R and T are not %d groups of the same count", c->nin - 2,
                           groups);
    int n = (c->nin - 2) / groups;
    if (c->nout > n * (groups - 1))
        return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "%d outputs for %d optimized tensors (at most %d)", c->nout, n,
                           n * (groups - 1));
    for (int o = 0; o < c->nout; o++) {
        gwr_tensor *x = gwr_fi_need(c, 2 + o % n, "X");
        shp xs;
        if (!x) return c->st;
        gwr_fi_shp_get(x, &xs);
        if (gwr_fi_put(c, o, dt_of(x), &xs) != GWR_OK) return c->st;
    }
    return GWR_OK;
}

const gwr_fi_entry gwr_fi_rules_training[] = {
    {GWR_OP_TRAIN_Adagrad, infer_optimizer},
    {GWR_OP_TRAIN_Adam, infer_optimizer},
    {GWR_OP_TRAIN_Momentum, infer_optimizer},
    {GWR_OP_CUSTOM, NULL},
};
