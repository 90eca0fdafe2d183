/* smoothquant.c - SmoothQuant (not written yet). */
#include "quant/quant_internal.h"

gwr_status gwr_q_smoothquant(gwr_network *net, const gwr_quantize_options *o, gwr_quant_report *rep) {
    (void)o, (void)rep;
    return gwr_ir_error(net, GWR_ERR_UNSUPPORTED, "SmoothQuant is not implemented yet");
}
