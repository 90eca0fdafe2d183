/* quantize.c - gwr_quantize: the options checked, the network refused
 * when it is quantized already, then SmoothQuant (when asked), the mode,
 * and the per-layer error report (when asked) against an unchanged copy. */
#include <string.h>

#include "quant/quant_internal.h"

/* The options' first fault, or NULL. */
static const char *bad_option(const gwr_quantize_options *o, char *buf, size_t size) {
    if (o->mode < GWR_QUANT_DYNAMIC || o->mode > GWR_QUANT_WEIGHT_ONLY) return "mode must be dynamic, static or weight-only";
    if (o->target && o->target != GWR_TARGET_ONNX && o->target != GWR_TARGET_ORT && o->target != GWR_TARGET_GWR)
        return "target must be onnx, ort or gwr";
    if (o->format != GWR_QFORMAT_QDQ && o->format != GWR_QFORMAT_QOPERATOR) return "format must be qdq or qoperator";
    if (o->method < GWR_CALIB_MINMAX || o->method > GWR_CALIB_MSE) return "calibration method must be minmax, percentile, entropy or mse";
    if (o->percentile && !(o->percentile > 50 && o->percentile <= 100)) return "percentile must be in (50, 100]";
    if (o->mode == GWR_QUANT_WEIGHT_ONLY) {
        if (o->bits && o->bits != 4 && o->bits != 8)
            return snprintf(buf, size, "bits must be 4 or 8, not %d", o->bits), buf;
        int b = o->block_size;
        if (b && (b < 16 || (b & (b - 1))))
            return snprintf(buf, size, "block size must be a power of two of at least 16, not %d", b), buf;
        if (o->wo_method != GWR_WO_RTN && o->wo_method != GWR_WO_GPTQ) return "weight-only method must be rtn or gptq";
    } else if (o->bits && o->bits != 8) {
        return snprintf(buf, size, "bits %d: only weight-only quantization takes 4 bits; dynamic and static are 8-bit",
                        o->bits),
               buf;
    }
    if (o->smoothquant_alpha < 0 || o->smoothquant_alpha > 1) return "SmoothQuant alpha must be in (0, 1]";
    if (o->threads < 0 || o->threads > GWR_SESSION_MAX_THREADS) return "threads out of range";
    return NULL;
}

gwr_status gwr_quantize(gwr_network *net, const gwr_quantize_options *opt, gwr_quant_report **rep) {
    if (rep) *rep = NULL;
    if (!net || !opt) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_quantize: NULL network or options");
    char buf[160];
    const char *bad = bad_option(opt, buf, sizeof buf);
    if (bad) return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_quantize: %s", bad);
    if (gwr_q_is_quantized(net))
        return gwr_ir_error(net, GWR_ERR_UNSUPPORTED, "gwr_quantize: the model is already quantized");
    char why[320];
    if (opt->calib && !gwr_calib_fits(opt->calib, net, why, sizeof why))
        return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_quantize: calibration: %s", why);
    gwr_quantize_options o = *opt;
    if (!o.target) o.target = GWR_TARGET_ORT;
    if (!o.bits) o.bits = o.mode == GWR_QUANT_WEIGHT_ONLY ? 4 : 8;
    if (!o.block_size) o.block_size = 32;
    if (!o.percentile) o.percentile = 99.999;
    gwr_calib *owned = NULL;
    int needs_calib = o.mode == GWR_QUANT_STATIC || o.smoothquant_alpha > 0 || o.report ||
                      (o.mode == GWR_QUANT_WEIGHT_ONLY && o.wo_method == GWR_WO_GPTQ);
    if (needs_calib && !(o.calib = gwr_q_calib_or_random(net, opt->calib, 8, &owned))) return GWR_ERR_INVALID_ARG;

    /* The refusals above leave net unchanged; the modes then change it in
     * place (an error there, out of memory say, may leave it part done). */
    gwr_quant_report *r = gwr_q_report_new();
    gwr_network *fp32 = NULL;
    gwr_status rc = r ? GWR_OK : gwr_ir_error(net, GWR_ERR_NOMEM, "gwr_quantize: out of memory");
    /* First the optimizer's basic passes for plain ONNX (what onnxruntime's
     * quant_pre_process does with its own optimizer): BatchNormalization
     * folded into the Conv or Gemm before it, constants folded, Identity
     * and no-op layers gone, weights listed as graph inputs made constants.
     * Quantizing a Conv whose output a per-channel BatchNormalization then
     * rescales would give every channel the whole tensor's step, and a
     * BatchNormalization between Q/DQ pairs is float work runtimes cannot
     * fuse. The report's float32 copy is taken after it, so that layers
     * match by name. */
    if (!rc) {
        gwr_optimize_options oo = {.level = GWR_LEVEL_BASIC, .target = GWR_TARGET_ONNX};
        if (gwr_optimize(net, &oo, NULL)) rc = gwr_ir_error(net, GWR_ERR_STATE, "gwr_quantize: %s", gwr_network_errmsg(net));
    }
    if (!rc && o.report && !(fp32 = gwr_network_clone(net)))
        rc = gwr_ir_error(net, GWR_ERR_NOMEM, "gwr_quantize: out of memory");
    if (!rc && o.smoothquant_alpha > 0) rc = gwr_q_smoothquant(net, &o, r);
    if (!rc) {
        switch (o.mode) {
        case GWR_QUANT_DYNAMIC: rc = gwr_q_dynamic(net, &o, r); break;
        case GWR_QUANT_STATIC: rc = gwr_q_static(net, &o, r); break;
        case GWR_QUANT_WEIGHT_ONLY: rc = gwr_q_weight_only(net, &o, r); break;
        }
    }
    if (!rc && o.report) rc = gwr_q_layer_errors(fp32, net, &o, r);
    gwr_network_free(fp32);
    gwr_calib_free(owned);
    if (rc || !rep) gwr_quant_report_free(r);
    else *rep = r;
    return rc;
}
