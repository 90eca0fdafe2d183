/* cmd_optimize.c - `gwr optimize MODEL -o OUT`: the optimizer
 * (gwr/optimize.h) on an ONNX model. */
#include <string.h>

#include "cli.h"

static void help(FILE *out) {
    fprintf(out,
            "usage: gwr optimize MODEL -o OUT [--level basic|extended|all] [--target onnx|ort|gwr]\n"
            "                    [--only PASS,...] [--disable PASS,...] [--report] [--debug]\n"
            "       gwr optimize --list\n"
            "\n"
            "Loads the ONNX model MODEL, runs the optimizer's passes that the level and the\n"
            "target select to a fixpoint over the graph and every If/Loop/Scan body, and\n"
            "writes OUT (a temporary file renamed at the end: a failure leaves no partial file).\n"
            "\n"
            "  --level L        basic (eliminations, folding), extended (default; fusions too)\n"
            "                   or all, as onnxruntime's levels\n"
            "  --target T       onnx (default: standard ONNX any runtime loads), ort (may use\n"
            "                   onnxruntime's contrib ops) or gwr (gwr's own executor)\n"
            "  --only P,...     exactly these passes, whatever their level\n"
            "  --disable P,...  not these passes\n"
            "  --report         per pass: attempts, matches, rewrites, or why it was skipped\n"
            "  --debug          verify the network after every rewrite\n"
            "  --list           the passes, with level, targets and numerics\n"
            "\n"
            "Exit status: 0 success, 1 the model cannot be read or written or a pass failed,\n"
            "2 bad usage (an unknown pass, level or target).\n");
}

static int parse_level(const char *v, gwr_pass_level *out) {
    static const char *const names[] = {"basic", "extended", "all"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(v, names[i])) return *out = (gwr_pass_level)(GWR_LEVEL_BASIC + i), 0;
    return -1;
}

static int parse_target(const char *v, unsigned *out) {
    if (!strcmp(v, "onnx")) *out = GWR_TARGET_ONNX;
    else if (!strcmp(v, "ort")) *out = GWR_TARGET_ORT;
    else if (!strcmp(v, "gwr")) *out = GWR_TARGET_GWR;
    else return -1;
    return 0;
}

static int run(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    gwr_optimize_options o = {0};
    int report = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--list")) {
            gwr_passes_print(stdout, 0);
            return CLI_OK;
        } else if (!strcmp(a, "--level")) {
            if (!v || parse_level(v, &o.level)) return cli_usage("optimize", "--level needs basic, extended or all");
            i++;
        } else if (!strcmp(a, "--target")) {
            if (!v || parse_target(v, &o.target)) return cli_usage("optimize", "--target needs onnx, ort or gwr");
            i++;
        } else if (!strcmp(a, "--only") || !strcmp(a, "--disable")) {
            if (!v || !*v) return cli_usage("optimize", "%s needs a comma-separated list of passes", a);
            if (a[2] == 'o') o.only = v;
            else o.disable = v;
            i++;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!v) return cli_usage("optimize", "%s needs a file name", a);
            out = argv[++i];
        } else if (!strcmp(a, "--report")) {
            report = 1;
        } else if (!strcmp(a, "--debug")) {
            o.debug = 1;
        } else if (a[0] == '-' && a[1]) {
            return cli_usage("optimize", "unknown option '%s'", a);
        } else if (!in) {
            in = a;
        } else {
            return cli_usage("optimize", "unexpected argument '%s': one MODEL only", a);
        }
    }
    if (!in) return cli_usage("optimize", "missing MODEL");
    if (!out) return cli_usage("optimize", "missing -o OUT");
    /* External data is copied: OUT may overwrite the file it lives in.
     * Shapes are inferred: passes check them. */
    gwr_onnx_load_options lo = {.copy_external_data = 1, .infer_shapes = 1};
    gwr_network *net = cli_load(in, &lo);
    if (!net) return CLI_FAIL;
    gwr_optimize_report *r = NULL;
    gwr_status s = gwr_optimize(net, &o, &r);
    int rc = CLI_FAIL;
    if (s == GWR_ERR_NOT_FOUND || (s == GWR_ERR_INVALID_ARG && !r)) {
        rc = cli_usage("optimize", "%s", gwr_network_errmsg(net));
    } else if (s) {
        if (report) gwr_optimize_report_print(r, stdout);
        cli_error(in, gwr_network_errmsg(net));
    } else if (gwr_onnx_save(net, out, NULL)) {
        cli_error(out, gwr_network_errmsg(net));
    } else {
        if (report) gwr_optimize_report_print(r, stdout);
        int64_t before, after;
        gwr_optimize_report_layers(r, &before, &after, NULL);
        printf("wrote %s: %lld -> %lld layers\n", out, (long long)before, (long long)after);
        rc = CLI_OK;
    }
    gwr_optimize_report_free(r);
    cli_free_at_exit(net);
    return rc;
}

const cli_command cli_optimize = {"optimize", "optimize an ONNX model with the built-in passes", run, help};
