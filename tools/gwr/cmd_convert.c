/* cmd_convert.c - `gwr convert IN OUT`: load an ONNX model and save it
 * again, optionally moving large tensors to an external data file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(FILE *out) {
    fprintf(out,
            "usage: gwr convert IN OUT [--external-data] [--external-threshold BYTES]\n"
            "\n"
            "Loads the ONNX model IN and writes it to OUT, the way gwr saves models: nodes in a\n"
            "stable topological order, raw_data for tensors, opset imports completed. OUT is\n"
            "written to a temporary file and renamed, so a failure leaves no partial file.\n"
            "\n"
            "  --external-data            write tensors of at least 1024 bytes to the side file\n"
            "                             OUT.data (ONNX external data) instead of into OUT\n"
            "  --external-threshold BYTES the size from which a tensor goes to the side file\n"
            "                             (implies --external-data; 0 moves every non-empty one)\n"
            "\n"
            "Models over 2 GB always use external data (protobuf's limit).\n"
            "Exit status: 0 success, 1 the model cannot be read or written, 2 bad usage.\n");
}

/* Parses a byte count: decimal digits only, fits size_t. */
static int parse_size(const char *s, size_t *out) {
    if (!*s) return -1;
    size_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        unsigned d = (unsigned)(*s - '0');
        if (v > (SIZE_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static int run(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    gwr_onnx_save_options so = {0};
    int opts = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (opts && !strcmp(a, "--external-data")) {
            so.external_data = 1;
        } else if (opts && (!strcmp(a, "--external-threshold") || !strncmp(a, "--external-threshold=", 21))) {
            const char *v = a[20] == '=' ? a + 21 : (i + 1 < argc ? argv[++i] : NULL);
            size_t n;
            if (!v) return cli_usage("convert", "--external-threshold needs a number of bytes");
            if (parse_size(v, &n))
                return cli_usage("convert", "--external-threshold: '%s' is not a number of bytes", v);
            so.external_data = 1;
            /* The library reads 0 as "the default" (1024): 1 is what 0 means here. */
            so.external_threshold = n ? n : 1;
        } else if (opts && !strcmp(a, "--")) {
            opts = 0;
        } else if (opts && a[0] == '-' && a[1]) {
            return cli_usage("convert", "unknown option '%s'", a);
        } else if (!in) {
            in = a;
        } else if (!out) {
            out = a;
        } else {
            return cli_usage("convert", "unexpected argument '%s': IN and OUT only", a);
        }
    }
    if (!in || !out) return cli_usage("convert", "missing %s", in ? "OUT" : "IN and OUT");

    /* Copy external data into memory: OUT may overwrite the very file the
     * input's tensors would otherwise be mapped from. */
    gwr_onnx_load_options lo = {.copy_external_data = 1};
    gwr_network *net = cli_load(in, &lo);
    if (!net) return CLI_FAIL;
    int rc = CLI_OK;
    if (gwr_onnx_save(net, out, &so) != GWR_OK) {
        cli_error(out, gwr_network_errmsg(net));
        rc = CLI_FAIL;
    } else {
        printf("wrote %s (%lld layers)\n", out, (long long)gwr_network_num_live_layers(net));
    }
    cli_free_at_exit(net);
    return rc;
}

const cli_command cli_convert = {"convert", "load an ONNX model and save it (optionally with external data)", run,
                                 help};
