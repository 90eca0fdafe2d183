/* quant.c - shape rules of linear quantization: QuantizeLinear,
 * DequantizeLinear and DynamicQuantizeLinear (whose scale and zero point
 * are scalars). Their kernels are in exec/kernels/quant.c. */

#include "functional/infer/infer_internal.h"

static gwr_status infer_quantize(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "x"), *scale = gwr_fi_need(c, 1, "scale"), *zp = inp(c, 2);
    gwr_dtype dt;
    if (!x || !scale) return c->st;
    if (c->id == GWR_OP_QuantizeLinear) {
        /* opset 21's output_dtype (0: unset) names it without a zero point */
        int64_t od = gwr_fi_aint(c, "output_dtype", 0);
        dt = zp && dt_of(zp) != GWR_UNDEFINED ? dt_of(zp) : od > 0 && od <= 64 ? (gwr_dtype)od : GWR_UINT8;
    } else {
        if (zp && !gwr_fi_same_dtype(c, x, zp)) return c->st;
        dt = gwr_dtype_is_float(dt_of(scale)) ? dt_of(scale) : GWR_FLOAT32;
    }
    return gwr_fi_same_as_input(c, dt);
}

static gwr_status infer_dynamic_quantize(ictx *c) {
    shp sc = {0, {0}};
    if (gwr_fi_same_as_input(c, GWR_UINT8) != GWR_OK || gwr_fi_put(c, 1, GWR_FLOAT32, &sc) != GWR_OK) return c->st;
    return gwr_fi_put(c, 2, GWR_UINT8, &sc);
}

const gwr_fi_entry gwr_fi_rules_quant[] = {
    {GWR_OP_QuantizeLinear, infer_quantize},
    {GWR_OP_DequantizeLinear, infer_quantize},
    {GWR_OP_DynamicQuantizeLinear, infer_dynamic_quantize},
    {GWR_OP_CUSTOM, NULL},
};
