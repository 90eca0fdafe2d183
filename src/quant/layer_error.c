/* layer_error.c - the per-layer error report (not written yet). */
#include "quant/quant_internal.h"

gwr_status gwr_q_layer_errors(gwr_network *fp32, gwr_network *quant, const gwr_quantize_options *o,
                              gwr_quant_report *rep) {
    (void)fp32, (void)o, (void)rep;
    return gwr_ir_error(quant, GWR_ERR_UNSUPPORTED, "the error report is not implemented yet");
}
