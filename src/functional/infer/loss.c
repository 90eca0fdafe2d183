/* loss.c - the shape rule of NegativeLogLikelihoodLoss and
 * SoftmaxCrossEntropyLoss: the loss, reduced to a scalar unless
 * reduction is "none", and SoftmaxCrossEntropyLoss's log_prob. As in
 * exec/kernels/loss.c. */

#include <string.h>

#include "functional/infer/infer_internal.h"

/* NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss. */
static gwr_status infer_loss(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input"), *tg = gwr_fi_need(c, 1, "target");
    const char *red;
    shp xs, ts;
    if (!x || !tg || !gwr_fi_want_index_dtype(c, tg, "target")) return c->st;
    red = gwr_fi_astr(c, "reduction", "mean");
    if (c->st) return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_shp_get(tg, &ts);
    if (strcmp(red, "sum") != 0 && strcmp(red, "mean") != 0 && strcmp(red, "none") != 0)
        return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "unknown reduction \"%s\"", red);
    if (strcmp(red, "none") != 0) ts.rank = 0; /* reduced to a scalar */
    if (gwr_fi_put(c, 0, dt_of(x), &ts) != GWR_OK) return c->st;
    return gwr_fi_put(c, 1, dt_of(x), &xs); /* SoftmaxCrossEntropyLoss's log_prob */
}

const gwr_fi_entry gwr_fi_rules_loss[] = {
    {GWR_OP_NegativeLogLikelihoodLoss, infer_loss},
    {GWR_OP_SoftmaxCrossEntropyLoss, infer_loss},
    {GWR_OP_CUSTOM, NULL},
};
