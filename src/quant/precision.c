/* precision.c - gwr_precision: float16 / bfloat16 conversion (not written yet). */
#include "quant/quant_internal.h"

gwr_status gwr_precision(gwr_network *net, const gwr_precision_options *opt, gwr_quant_report **rep) {
    (void)opt;
    if (rep) *rep = NULL;
    if (!net) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_precision: NULL network");
    return gwr_ir_error(net, GWR_ERR_UNSUPPORTED, "gwr_precision is not implemented yet");
}
