/* cmd_precision.c - `gwr precision MODEL -o OUT --to fp16|bf16`: float16
 * or bfloat16 conversion, with automatic mixed precision (gwr/quantize.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(FILE *out) {
    fprintf(out,
            "usage: gwr precision MODEL -o OUT --to fp16|bf16 [--keep OP,...] [--keep-node NAME,...]\n"
            "                     [--keep-io] [--auto TOL] [--calibration DIR] [--samples N]\n"
            "                     [--shape INPUT=D0,D1,... | SYMBOL=N ...] [--seed N] [--threads N]\n"
            "                     [--report [FILE]] [--json]\n"
            "\n"
            "Converts the float32 model MODEL to float16 or bfloat16 weights and computation and\n"
            "writes OUT (a temporary file renamed at the end: a failure leaves no file). Casts go\n"
            "only where values cross between converted and float32 layers; ops unsafe in half\n"
            "(Range, CumSum, ReduceProd, ReduceSumSquare, ReduceL2, ReduceLogSumExp, NMS,\n"
            "RoiAlign, spectral ops, ops of other domains, If/Loop/Scan) stay float32.\n"
            "\n"
            "  --to T             fp16 (float16) or bf16 (bfloat16)\n"
            "  --keep OP,...      these ops stay float32 too\n"
            "  --keep-node N,...  these layers (by name) stay float32\n"
            "  --keep-io          the inputs and outputs stay float32 (Casts at entry and exit)\n"
            "  --auto TOL         keep in float32 the fewest layers that hold every output within\n"
            "                     TOL (max|a-b| <= TOL * max(1, max|a|)) of the float32 model,\n"
            "                     both run on gwr's executor on the calibration samples\n"
            "  --calibration DIR  --auto's samples (TensorProto directories or .npz files)\n"
            "  --samples N        seeded random samples when no DIR (default 8)\n"
            "  --shape INPUT=D0,... | SYM=N  the shapes of the random samples (as gwr run's);\n"
            "                     unknown and unbound dims are 1\n"
            "  --seed N           the random samples' seed (default 0)\n"
            "  --threads N        threads of --auto's sessions (default 1)\n"
            "  --report [FILE]    each layer: converted, or kept and why (stdout, or FILE when\n"
            "                     the next argument does not start with '-' or end in .onnx)\n"
            "  --json             the report as JSON (on stdout: the summary line goes to stderr)\n"
            "\n"
            "Prints one line: layers converted, kept, MatMul/Gemm/Conv weight bytes before -> after.\n"
            "Exit status: 0 success, 1 failure, 2 bad usage or bad input (a bad --to or TOL,\n"
            "a model already in float16 or bfloat16, calibration that does not fit).\n");
}

static int ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

static int run(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *to = NULL, *calib_dir = NULL, *report_file = NULL;
    gwr_precision_options o = {0};
    int report = 0, json = 0;
    int64_t samples = 8, threads = 1, seed = 0;
    cli_shapes shapes = {0};
    int rc = CLI_FAIL;
    double tol = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char *why = NULL;
#define NEED_VALUE()                                                                    \
    do {                                                                                \
        if (!v) return cli_shapes_free(&shapes), cli_usage("precision", "%s needs a value", a); \
        i++;                                                                            \
    } while (0)
        if (!strcmp(a, "-o")) { NEED_VALUE(); out = v; }
        else if (!strcmp(a, "--to")) { NEED_VALUE(); to = v; }
        else if (!strcmp(a, "--keep")) { NEED_VALUE(); o.keep_ops = v; }
        else if (!strcmp(a, "--keep-node")) { NEED_VALUE(); o.keep_nodes = v; }
        else if (!strcmp(a, "--keep-io")) o.keep_io = 1;
        else if (!strcmp(a, "--calibration")) { NEED_VALUE(); calib_dir = v; }
        else if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "--auto")) {
            NEED_VALUE();
            char *end = NULL;
            errno = 0;
            tol = strtod(v, &end);
            if (!*v || *end || errno || !isfinite(tol) || !(tol > 0))
                return cli_shapes_free(&shapes), cli_usage("precision", "--auto '%s': the tolerance must be a number > 0", v);
        } else if (!strcmp(a, "--samples")) {
            NEED_VALUE();
            if (cli_parse_int(v, &samples, &why) || samples < 1 || samples > 100000)
                return cli_shapes_free(&shapes), cli_usage("precision", "--samples '%s': %s", v, why ? why : "must be in 1..100000");
        } else if (!strcmp(a, "--seed")) {
            NEED_VALUE();
            if (cli_parse_int(v, &seed, &why)) return cli_shapes_free(&shapes), cli_usage("precision", "--seed '%s': %s", v, why);
        } else if (!strcmp(a, "--shape")) {
            NEED_VALUE();
            if ((rc = cli_shapes_add(&shapes, "precision", v))) return cli_shapes_free(&shapes), rc;
            rc = CLI_FAIL;
        } else if (!strcmp(a, "--threads")) {
            NEED_VALUE();
            if (cli_parse_int(v, &threads, &why) || threads < 1 || threads > GWR_SESSION_MAX_THREADS)
                return cli_shapes_free(&shapes), cli_usage("precision", "--threads '%s': %s", v, why ? why : "out of range");
        } else if (!strcmp(a, "--report")) {
            report = 1;
            if (v && v[0] != '-' && !ends_with(v, ".onnx")) report_file = v, i++;
        } else if (!strncmp(a, "--report=", 9)) {
            report = 1, report_file = a + 9;
        } else if (a[0] == '-' && a[1]) {
            return cli_shapes_free(&shapes), cli_usage("precision", "unknown option '%s'", a);
        } else if (!in) {
            in = a;
        } else {
            return cli_shapes_free(&shapes), cli_usage("precision", "unexpected argument '%s': one MODEL only", a);
        }
#undef NEED_VALUE
    }
    if (!in || !out) return cli_shapes_free(&shapes), cli_usage("precision", "missing %s", !in ? "MODEL" : "-o OUT");
    if (!to) return cli_shapes_free(&shapes), cli_usage("precision", "missing --to fp16|bf16");
    if (!strcmp(to, "fp16") || !strcmp(to, "float16")) o.to = GWR_FLOAT16;
    else if (!strcmp(to, "bf16") || !strcmp(to, "bfloat16")) o.to = GWR_BFLOAT16;
    else return cli_shapes_free(&shapes), cli_usage("precision", "--to '%s': expected fp16 or bf16", to);
    if (calib_dir && tol <= 0) return cli_shapes_free(&shapes), cli_usage("precision", "--calibration is for --auto");

    gwr_onnx_load_options lo = {.copy_external_data = 1, .infer_shapes = 1};
    gwr_network *net = cli_load(in, &lo);
    if (!net) return cli_shapes_free(&shapes), CLI_FAIL;
    gwr_calib *calib = NULL;
    if (shapes.nargs && (rc = cli_shapes_resolve(&shapes, "precision", net, NULL))) {
        cli_shapes_free(&shapes);
        cli_free_at_exit(net);
        return rc;
    }
    rc = CLI_FAIL;
    if (tol > 0) {
        gwr_input_options io = {.seed = (uint64_t)seed, .nshapes = shapes.ninputs, .shapes = shapes.inputs,
                                .nbind = shapes.nbind, .bind = shapes.bind};
        calib = calib_dir ? gwr_calib_load(calib_dir, net) : gwr_calib_random(net, (int)samples, &io);
        if (!calib) {
            cli_error(calib_dir ? calib_dir : in, gwr_last_errmsg());
            cli_shapes_free(&shapes);
            cli_free_at_exit(net);
            return CLI_USAGE;
        }
    }
    o.auto_tol = tol, o.calib = calib, o.threads = (int)threads;
    gwr_quant_report *r = NULL;
    gwr_status s = gwr_precision(net, &o, &r);
    if (s == GWR_ERR_INVALID_ARG || s == GWR_ERR_UNSUPPORTED) {
        cli_error(in, gwr_network_errmsg(net));
        rc = CLI_USAGE;
    } else if (s) {
        cli_error(in, gwr_network_errmsg(net));
    } else {
        int conv = 0, kept = 0;
        for (int i = 0; i < gwr_quant_report_count(r); i++) {
            const gwr_quant_entry *e = gwr_quant_report_entry(r, i);
            if (!strncmp(e->what, "kept", 4)) kept++;
            else conv++;
        }
        FILE *rf = NULL;
        char *tmp = NULL;
        if (report && report_file) {
            tmp = cli_temp_name(report_file);
            if (!tmp || !(rf = fopen(tmp, "w"))) cli_error(report_file, tmp ? strerror(errno) : "out of memory");
        }
        if (report && report_file && !rf) {
            /* reported above */
        } else if (gwr_onnx_save(net, out, NULL)) {
            cli_error(out, gwr_network_errmsg(net));
        } else {
            rc = CLI_OK;
            if (report) {
                gwr_quant_report_write(r, rf ? rf : stdout, json);
                if (json) fputc('\n', rf ? rf : stdout);
                if (rf && (fclose(rf) || rename(tmp, report_file))) {
                    cli_error(report_file, strerror(errno));
                    rc = CLI_FAIL;
                }
                rf = NULL;
            }
            /* the summary on stderr when stdout carries the JSON report */
            fprintf(report && json && !report_file ? stderr : stdout,
                    "wrote %s: %d layers %s, %d kept float32, weight bytes %lld -> %lld\n", out, conv,
                   o.to == GWR_FLOAT16 ? "float16" : "bfloat16", kept, (long long)gwr_quant_report_weight_bytes(r, 0),
                   (long long)gwr_quant_report_weight_bytes(r, 1));
        }
        if (rf) fclose(rf), remove(tmp);
        free(tmp);
    }
    gwr_quant_report_free(r);
    gwr_calib_free(calib);
    cli_shapes_free(&shapes);
    cli_free_at_exit(net);
    return rc;
}

const cli_command cli_precision = {"precision", "float16 / bfloat16 conversion, automatic mixed precision", run, help};
