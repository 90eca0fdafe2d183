/* cmd_quantize.c - `gwr quantize MODEL -o OUT`: int8 / 4-bit quantization
 * (gwr/quantize.h) of an ONNX model, calibrated on a directory of samples
 * (gwr_calib_load) or on seeded random inputs. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(FILE *out) {
    fprintf(out,
            "usage: gwr quantize MODEL -o OUT [--mode dynamic|static|weight-only] [--target onnx|ort|gwr]\n"
            "                    [--format qdq|qoperator] [--calibration DIR | --samples N]\n"
            "                    [--shape INPUT=D0,D1,... | SYMBOL=N ...] [--seed N]\n"
            "                    [--method minmax|percentile|entropy|mse] [--percentile P]\n"
            "                    [--activations uint8|int8] [--per-tensor] [--bits 4|8] [--block-size N]\n"
            "                    [--algo rtn|gptq] [--smoothquant ALPHA] [--exclude OP,...|NODE,...]\n"
            "                    [--report [FILE]] [--json] [--threads N]\n"
            "\n"
            "Quantizes the ONNX model MODEL and writes OUT (a temporary file renamed at the end:\n"
            "a failure leaves no file). docs/quantize.md describes the formats written.\n"
            "\n"
            "  --mode M         dynamic (default: int8 weights per channel, activations quantized\n"
            "                   at run time), static (activations too, ranges from calibration),\n"
            "                   weight-only (MatMul weights in 4 or 8 bits, blockwise)\n"
            "  --target T       ort (default: may use onnxruntime's contrib ops, MatMulNBits),\n"
            "                   gwr (gwr's executor) or onnx (standard ONNX only)\n"
            "  --format F       qdq (QuantizeLinear/DequantizeLinear around float ops) or\n"
            "                   qoperator (MatMulInteger, ConvInteger, QLinear*); default:\n"
            "                   qoperator for dynamic, qdq for static\n"
            "  --calibration DIR  samples of the inputs: .npz files (numpy.savez, one sample\n"
            "                   each) or ONNX test-data directories (input_N.pb TensorProto\n"
            "                   files, one directory a sample), read in file-name order\n"
            "  --samples N      without --calibration: N seeded random samples (default 8)\n"
            "  --shape INPUT=D0,... | SYM=N  the shapes of the random samples (as gwr run's)\n"
            "  --seed N         the random samples' seed (default 0)\n"
            "  --method M       static: activation ranges by minmax (default), percentile,\n"
            "                   entropy or mse\n"
            "  --percentile P   the percentile method's P, in (50, 100] (default 99.999)\n"
            "  --activations A  static: uint8 asymmetric (default) or int8 symmetric\n"
            "  --per-tensor     one weight scale per tensor (default: per output channel)\n"
            "  --bits B         weight-only: 4 (default) or 8; dynamic and static are 8-bit\n"
            "  --block-size N   weight-only: a power of two >= 16 (default 32)\n"
            "  --algo A         weight-only: rtn (round to nearest, default) or gptq (error\n"
            "                   compensation calibrated on the samples)\n"
            "  --smoothquant ALPHA  migrate activation outliers into the weights first,\n"
            "                   ALPHA in (0, 1]\n"
            "  --exclude LIST   op types and layer names left in float (comma-separated)\n"
            "  --report [FILE]  each quantized layer's output error against float32, measured\n"
            "                   on the samples, worst first, to FILE (written atomically; a name\n"
            "                   not starting with '-' nor ending in .onnx) or to stdout\n"
            "  --json           the report as JSON (on stdout: the JSON only, no summary line)\n"
            "  --threads N      intra-op threads of the calibration and report runs (default 1)\n"
            "\n"
            "Prints a summary line: layers quantized, kept, weight bytes before -> after.\n"
            "Exit status: 0 success, 1 the model cannot be read or written or quantizing\n"
            "failed, 2 bad usage or bad input (an option's value, a calibration sample of\n"
            "the wrong name, dtype or shape, an empty calibration directory, a model\n"
            "already quantized).\n");
}

/* v's index in the NULL-terminated names, or -1. */
static int choice(const char *v, const char *const *names) {
    for (int i = 0; v && names[i]; i++)
        if (!strcmp(v, names[i])) return i;
    return -1;
}

/* All of v as a finite number, into *out; -1 if not. */
static int parse_num(const char *v, double *out) {
    char *end;
    if (!v || !*v) return -1;
    errno = 0;
    *out = strtod(v, &end);
    return *end || errno || *out != *out ? -1 : 0;
}

typedef struct qargs {
    const char *in, *out, *calib_dir, *report_file;
    int samples, report, json, format_set, seed_set;
    int64_t seed;
    cli_shapes shapes; /* --shape: the random samples' shapes */
    gwr_quantize_options o;
} qargs;

#define USAGE(...) cli_usage("quantize", __VA_ARGS__)

/* One option at argv[*i] (its value consumed): CLI_OK or CLI_USAGE (printed). */
static int option(qargs *q, int argc, char **argv, int *i) {
    static const char *const modes[] = {"dynamic", "static", "weight-only", NULL};
    static const char *const targets[] = {"onnx", "ort", "gwr", NULL};
    static const unsigned target_bits[] = {GWR_TARGET_ONNX, GWR_TARGET_ORT, GWR_TARGET_GWR};
    static const char *const formats[] = {"qdq", "qoperator", NULL};
    static const char *const methods[] = {"minmax", "percentile", "entropy", "mse", NULL};
    static const char *const acts[] = {"uint8", "int8", NULL};
    static const char *const algos[] = {"rtn", "gptq", NULL};
    const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    gwr_quantize_options *o = &q->o;
    int k;
    int64_t n = 0;
    double x = 0;
    const char *why = "missing";
    if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
        if (!v) return USAGE("%s needs a file name", a);
        q->out = v;
    } else if (!strcmp(a, "--mode")) {
        if ((k = choice(v, modes)) < 0) return USAGE("--mode needs dynamic, static or weight-only, not '%s'", v ? v : "");
        o->mode = (gwr_quant_mode)(GWR_QUANT_DYNAMIC + k);
    } else if (!strcmp(a, "--target")) {
        if ((k = choice(v, targets)) < 0) return USAGE("--target needs onnx, ort or gwr, not '%s'", v ? v : "");
        o->target = target_bits[k];
    } else if (!strcmp(a, "--format")) {
        if ((k = choice(v, formats)) < 0) return USAGE("--format needs qdq or qoperator, not '%s'", v ? v : "");
        o->format = k ? GWR_QFORMAT_QOPERATOR : GWR_QFORMAT_QDQ, q->format_set = 1;
    } else if (!strcmp(a, "--calibration")) {
        if (!v || !*v) return USAGE("--calibration needs a directory");
        q->calib_dir = v;
    } else if (!strcmp(a, "--samples")) {
        if (!v || cli_parse_int(v, &n, &why) || n < 1 || n > 1000000)
            return USAGE("--samples '%s': %s; a count from 1 to 1000000", v ? v : "", v && !why ? "out of range" : why);
        q->samples = (int)n;
    } else if (!strcmp(a, "--method")) {
        if ((k = choice(v, methods)) < 0)
            return USAGE("--method needs minmax, percentile, entropy or mse, not '%s'", v ? v : "");
        o->method = (gwr_calib_method)k;
    } else if (!strcmp(a, "--percentile")) {
        if (parse_num(v, &x) || !(x > 50 && x <= 100))
            return USAGE("--percentile '%s': a number in (50, 100]", v ? v : "");
        o->percentile = x;
    } else if (!strcmp(a, "--activations")) {
        if ((k = choice(v, acts)) < 0) return USAGE("--activations needs uint8 or int8, not '%s'", v ? v : "");
        o->act_int8 = k;
    } else if (!strcmp(a, "--bits")) {
        if (!v || (strcmp(v, "4") && strcmp(v, "8"))) return USAGE("--bits needs 4 or 8, not '%s'", v ? v : "");
        o->bits = v[0] - '0';
    } else if (!strcmp(a, "--block-size")) {
        if (!v || cli_parse_int(v, &n, &why) || n < 16 || n > (1 << 20) || (n & (n - 1)))
            return USAGE("--block-size '%s': a power of two from 16 to 1048576", v ? v : "");
        o->block_size = (int)n;
    } else if (!strcmp(a, "--algo")) {
        if ((k = choice(v, algos)) < 0) return USAGE("--algo needs rtn or gptq, not '%s'", v ? v : "");
        o->wo_method = k ? GWR_WO_GPTQ : GWR_WO_RTN;
    } else if (!strcmp(a, "--smoothquant")) {
        if (parse_num(v, &x) || !(x > 0 && x <= 1)) return USAGE("--smoothquant '%s': ALPHA in (0, 1]", v ? v : "");
        o->smoothquant_alpha = x;
    } else if (!strcmp(a, "--exclude")) {
        if (!v || !*v) return USAGE("--exclude needs a comma-separated list of ops or layer names");
        o->exclude = v;
    } else if (!strcmp(a, "--shape")) {
        if (!v) return USAGE("--shape needs INPUT=D0,D1,... or SYMBOL=N");
        int rc = cli_shapes_add(&q->shapes, "quantize", v);
        if (rc) return rc;
    } else if (!strcmp(a, "--seed")) {
        if (!v || cli_parse_int(v, &q->seed, &why)) return USAGE("--seed '%s': %s", v ? v : "", why);
        q->seed_set = 1;
    } else if (!strcmp(a, "--threads")) {
        if (!v || cli_parse_int(v, &n, &why) || n < 1 || n > GWR_SESSION_MAX_THREADS)
            return USAGE("--threads '%s': a count from 1 to %d", v ? v : "", GWR_SESSION_MAX_THREADS);
        o->threads = (int)n;
    } else if (!strcmp(a, "--report") || !strncmp(a, "--report=", 9)) {
        q->report = 1;
        if (a[8] == '=') {
            if (!a[9]) return USAGE("--report= needs a file name");
            q->report_file = a + 9;
        } else if (v && v[0] != '-' && !(strlen(v) > 5 && !strcmp(v + strlen(v) - 5, ".onnx"))) {
            q->report_file = v, ++*i;
        }
        return CLI_OK;
    } else if (!strcmp(a, "--per-tensor")) {
        o->per_tensor = 1;
        return CLI_OK;
    } else if (!strcmp(a, "--json")) {
        q->json = 1;
        return CLI_OK;
    } else {
        return USAGE("unknown option '%s'", a);
    }
    ++*i; /* the option's value */
    return CLI_OK;
}

/* The report into a temporary file beside `file`: its name (malloc'd) or
 * NULL after one line. */
static char *report_temp(const gwr_quant_report *r, const char *file, int json) {
    char *tmp = cli_temp_name(file);
    FILE *f = tmp ? fopen(tmp, "w") : NULL;
    if (!f) {
        char m[300];
        snprintf(m, sizeof m, "cannot write the report: %s", tmp ? strerror(errno) : "out of memory");
        cli_error(file, m);
        free(tmp);
        return NULL;
    }
    gwr_status st = gwr_quant_report_write(r, f, json);
    if (fclose(f) || st) {
        cli_error(file, st ? gwr_last_errmsg() : "cannot write the report");
        remove(tmp);
        free(tmp);
        return NULL;
    }
    return tmp;
}

static void summary(const gwr_quant_report *r, const char *out, const qargs *q) {
    static const char *const modes[] = {"", "dynamic int8", "static int8", "weight-only"};
    int kept = 0, n = gwr_quant_report_count(r);
    for (int i = 0; i < n; i++) kept += !strncmp(gwr_quant_report_entry(r, i)->what, "kept", 4);
    int64_t before = gwr_quant_report_weight_bytes(r, 0), after = gwr_quant_report_weight_bytes(r, 1);
    printf("wrote %s: %s, %d layer%s quantized, %d kept float, weights %lld -> %lld bytes", out,
           modes[q->o.mode], n - kept, n - kept == 1 ? "" : "s", kept, (long long)before, (long long)after);
    if (before > 0) printf(" (%.3fx)", (double)after / (double)before);
    printf("\n");
}

static int parse_and_run(qargs *q, int argc, char **argv);

static int run(int argc, char **argv) {
    qargs q = {0};
    int rc = parse_and_run(&q, argc, argv);
    cli_shapes_free(&q.shapes);
    return rc;
}

static int parse_and_run(qargs *q, int argc, char **argv) {
    q->o.mode = GWR_QUANT_DYNAMIC;
    q->o.threads = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int rc;
        if (a[0] == '-' && a[1]) {
            if ((rc = option(q, argc, argv, &i))) return rc;
        } else if (!q->in) {
            q->in = a;
        } else {
            return USAGE("unexpected argument '%s': one MODEL only", a);
        }
    }
    if (!q->in || !q->out) return USAGE("missing %s", !q->in ? "MODEL" : "-o OUT");
    if (q->calib_dir && (q->samples || q->shapes.nargs || q->seed_set))
        return USAGE("--samples, --shape and --seed make random samples: not with --calibration");
    if (q->json && !q->report) return USAGE("--json is the form of --report: give --report too");
    if (!q->format_set) q->o.format = q->o.mode == GWR_QUANT_DYNAMIC ? GWR_QFORMAT_QOPERATOR : GWR_QFORMAT_QDQ;
    q->o.report = q->report;

    /* External data is copied: OUT may overwrite the file it lives in. */
    gwr_onnx_load_options lo = {.copy_external_data = 1, .infer_shapes = 1};
    gwr_network *net = cli_load(q->in, &lo);
    if (!net) return CLI_FAIL;
    gwr_calib *calib = NULL;
    int rc = CLI_FAIL;
    if (q->calib_dir) {
        if (!(calib = gwr_calib_load(q->calib_dir, net))) {
            /* The message names the file in DIR ("DIR/s1.npz: ..."), or DIR. */
            const char *m = gwr_last_errmsg(), *colon = strstr(m, ": ");
            size_t nd = strlen(q->calib_dir);
            char what[512];
            if (!strncmp(m, q->calib_dir, nd) && colon && (size_t)(colon - m) < sizeof what)
                snprintf(what, sizeof what, "%.*s", (int)(colon - m), m);
            else
                snprintf(what, sizeof what, "%s", q->calib_dir);
            cli_error(what, m);
            rc = gwr_last_status() == GWR_ERR_NOMEM ? CLI_FAIL : CLI_USAGE;
            goto done;
        }
    } else if ((q->shapes.nargs && (rc = cli_shapes_resolve(&q->shapes, "quantize", net, NULL)))) {
        goto done;
    } else if ((q->samples || q->shapes.nargs || q->seed_set) &&
               !(calib = gwr_calib_random(net, q->samples ? q->samples : 8,
                                          &(gwr_input_options){.seed = (uint64_t)q->seed, .nshapes = q->shapes.ninputs,
                                                               .shapes = q->shapes.inputs, .nbind = q->shapes.nbind,
                                                               .bind = q->shapes.bind}))) {
        char m[600];
        snprintf(m, sizeof m, "random calibration inputs: %s", gwr_last_errmsg());
        cli_error(q->in, m);
        rc = CLI_USAGE;
        goto done;
    }
    q->o.calib = calib;
    gwr_quant_report *rep = NULL;
    gwr_status s = gwr_quantize(net, &q->o, &rep);
    if (s) {
        /* The refusals (an option, a calibration set that does not fit, a
         * model already quantized) are bad input; the rest failures. */
        const char *m = gwr_network_errmsg(net);
        if (!strncmp(m, "gwr_quantize: ", 14)) m += 14;
        cli_error(q->in, m);
        rc = s == GWR_ERR_INVALID_ARG || s == GWR_ERR_UNSUPPORTED ? CLI_USAGE : CLI_FAIL;
    } else {
        char *tmp = q->report_file ? report_temp(rep, q->report_file, q->json) : NULL;
        if (q->report_file && !tmp) {
            /* printed; nothing written */
        } else if (gwr_onnx_save(net, q->out, NULL)) {
            cli_error(q->out, gwr_network_errmsg(net));
        } else if (tmp && rename(tmp, q->report_file)) {
            char m[300];
            snprintf(m, sizeof m, "cannot write the report: %s", strerror(errno));
            cli_error(q->report_file, m);
            remove(q->out);
        } else {
            rc = CLI_OK;
            if (q->report && !q->report_file) gwr_quant_report_write(rep, stdout, q->json);
            if (!(q->json && q->report && !q->report_file)) summary(rep, q->out, q);
        }
        if (tmp && rc) remove(tmp);
        free(tmp);
    }
    gwr_quant_report_free(rep);
done:
    gwr_calib_free(calib);
    cli_free_at_exit(net);
    return rc;
}

const cli_command cli_quantize = {"quantize", "int8 / 4-bit quantization (dynamic, static, weight-only)", run, help};
