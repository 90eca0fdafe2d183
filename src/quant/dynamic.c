/* dynamic.c - dynamic int8 quantization (not written yet). */
#include "quant/quant_internal.h"

gwr_status gwr_q_dynamic(gwr_network *net, const gwr_quantize_options *o, gwr_quant_report *rep) {
    (void)o, (void)rep;
    return gwr_ir_error(net, GWR_ERR_UNSUPPORTED, "dynamic quantization is not implemented yet");
}
