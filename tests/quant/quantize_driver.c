/* quantize_driver - gwr_quantize from the command line, for
 * tests/cli/quantize_ort.py (the C API alone: `gwr quantize` is the CLI's
 * own file and test). Not an installed tool.
 *
 *   quantize_driver MODEL OUT [--mode dynamic|weight-only|static]
 *       [--target onnx|ort|gwr] [--format qdq|qoperator] [--bits N]
 *       [--block-size N] [--algo rtn|gptq] [--smoothquant ALPHA]
 *       [--per-tensor] [--exclude LIST]
 *
 * Saves the quantized model to OUT and prints the report, its first line
 * "weights BEFORE AFTER" (bytes). Exit 1 with gwr's message on failure, 2
 * on bad usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gwr/gwr.h"

static int usage(const char *why) {
    fprintf(stderr, "quantize_driver: %s\n", why);
    return 2;
}

int main(int argc, char **argv) {
    if (argc < 3) return usage("usage: quantize_driver MODEL OUT [options]");
    gwr_quantize_options o = {.mode = GWR_QUANT_DYNAMIC};
    int format_set = 0;
    for (int i = 3; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--per-tensor")) {
            o.per_tensor = 1;
            continue;
        }
        if (!v) return usage(a);
        i++;
        if (!strcmp(a, "--mode"))
            o.mode = !strcmp(v, "dynamic") ? GWR_QUANT_DYNAMIC : !strcmp(v, "static") ? GWR_QUANT_STATIC : GWR_QUANT_WEIGHT_ONLY;
        else if (!strcmp(a, "--target"))
            o.target = !strcmp(v, "onnx") ? GWR_TARGET_ONNX : !strcmp(v, "gwr") ? GWR_TARGET_GWR : GWR_TARGET_ORT;
        else if (!strcmp(a, "--format"))
            o.format = !strcmp(v, "qdq") ? GWR_QFORMAT_QDQ : GWR_QFORMAT_QOPERATOR, format_set = 1;
        else if (!strcmp(a, "--bits")) o.bits = atoi(v);
        else if (!strcmp(a, "--block-size")) o.block_size = atoi(v);
        else if (!strcmp(a, "--algo")) o.wo_method = !strcmp(v, "gptq") ? GWR_WO_GPTQ : GWR_WO_RTN;
        else if (!strcmp(a, "--smoothquant")) o.smoothquant_alpha = atof(v);
        else if (!strcmp(a, "--exclude")) o.exclude = v;
        else return usage(a);
    }
    if (!format_set) o.format = o.mode == GWR_QUANT_DYNAMIC ? GWR_QFORMAT_QOPERATOR : GWR_QFORMAT_QDQ;
    gwr_network *net = gwr_onnx_load(argv[1], NULL);
    if (!net) {
        printf("%s\n", gwr_last_errmsg());
        return 1;
    }
    gwr_quant_report *rep = NULL;
    int rc = 0;
    if (gwr_quantize(net, &o, &rep) || gwr_network_verify(net) || gwr_onnx_save(net, argv[2], NULL)) {
        printf("%s\n", gwr_network_errmsg(net));
        rc = 1;
    } else {
        printf("weights %lld %lld\n", (long long)gwr_quant_report_weight_bytes(rep, 0),
               (long long)gwr_quant_report_weight_bytes(rep, 1));
        gwr_quant_report_write(rep, stdout, 0);
    }
    gwr_quant_report_free(rep);
    gwr_network_free(net);
    return rc;
}
