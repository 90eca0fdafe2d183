/* static_driver - gwr_quantize --mode static through the C API, for
 * tests/cli/quantize_static_ort.py (the CLI is written apart).
 *   static_driver MODEL OUT [--format qdq|qoperator] [--method minmax|percentile|entropy|mse]
 *                 [--percentile P] [--act-int8] [--per-tensor] [--exclude LIST]
 *                 [--report FILE] [SAMPLE.pb ...]
 * Each SAMPLE.pb is one calibration sample of the model's first input (a
 * TensorProto); none: gwr_quantize's random samples. Prints the weight
 * bytes before and after; exit 1 with gwr's message on any error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gwr/gwr.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: static_driver MODEL OUT [options] [SAMPLE.pb ...]\n");
        return 2;
    }
    gwr_network *net = gwr_onnx_load(argv[1], NULL);
    if (!net) {
        printf("%s\n", gwr_last_errmsg());
        return 1;
    }
    gwr_quantize_options o = {.mode = GWR_QUANT_STATIC};
    const char *report = NULL;
    gwr_calib *c = NULL;
    int rc = 1;
    for (int i = 3; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "--format")) o.format = strcmp(v, "qoperator") ? GWR_QFORMAT_QDQ : GWR_QFORMAT_QOPERATOR, i++;
        else if (!strcmp(a, "--method"))
            o.method = !strcmp(v, "percentile") ? GWR_CALIB_PERCENTILE
                       : !strcmp(v, "entropy")  ? GWR_CALIB_ENTROPY
                       : !strcmp(v, "mse")      ? GWR_CALIB_MSE
                                                : GWR_CALIB_MINMAX,
            i++;
        else if (!strcmp(a, "--percentile")) o.percentile = atof(v), i++;
        else if (!strcmp(a, "--act-int8")) o.act_int8 = 1;
        else if (!strcmp(a, "--per-tensor")) o.per_tensor = 1;
        else if (!strcmp(a, "--exclude")) o.exclude = v, i++;
        else if (!strcmp(a, "--report")) report = v, o.report = 1, i++;
        else {
            gwr_weights w;
            int64_t dims[GWR_MAX_RANK];
            if ((!c && !(c = gwr_calib_new())) || gwr_onnx_read_tensor(a, &w, dims, NULL)) {
                printf("%s: %s\n", a, gwr_last_errmsg());
                goto out;
            }
            gwr_value *val = gwr_value_from_weights(&w);
            gwr_buffer_release(w.buffer);
            const char *name = gwr_tensor_name(gwr_network_input(net, 0));
            gwr_status st = val ? gwr_calib_add(c, 1, &name, &val) : GWR_ERR_NOMEM;
            gwr_value_release(val);
            if (st) {
                printf("%s: %s\n", a, gwr_last_errmsg());
                goto out;
            }
        }
    }
    o.calib = c;
    gwr_quant_report *rep = NULL;
    if (gwr_quantize(net, &o, &rep) || gwr_network_verify(net) || gwr_onnx_save(net, argv[2], NULL)) {
        printf("%s\n", gwr_network_errmsg(net));
        goto out;
    }
    printf("weight bytes %lld -> %lld\n", (long long)gwr_quant_report_weight_bytes(rep, 0),
           (long long)gwr_quant_report_weight_bytes(rep, 1));
    if (report) {
        FILE *f = fopen(report, "w");
        if (f) gwr_quant_report_write(rep, f, 1), fclose(f);
    }
    gwr_quant_report_free(rep);
    rc = 0;
out:
    gwr_calib_free(c);
    gwr_network_free(net);
    return rc;
}
