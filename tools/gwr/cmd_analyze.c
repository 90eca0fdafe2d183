/* cmd_analyze.c - `gwr analyze MODEL [--json] [--shape NAME=N ...] [--top
 * N]`: the built-in analyses of gwr/analyze.h over an ONNX model: op
 * histogram, parameters, FLOPs and bytes moved, the costliest layers,
 * peak activation memory, and the dims it had to assume. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(FILE *out) {
    fprintf(out,
            "usage: gwr analyze MODEL [--json] [--shape INPUT=D0,D1,... | SYMBOL=N ...] [--top N]\n"
            "\n"
            "Analyzes an ONNX model (shapes the file leaves out are inferred first): the op\n"
            "histogram, the parameters (weights tensors, elements, bytes of distinct data), the\n"
            "FLOPs and bytes moved in total and for the costliest layers, and the peak memory of\n"
            "the activations when the layers run in network order (weights apart). Symbolic\n"
            "dimensions count as 1 unless bound with --shape; the report lists the ones it\n"
            "assumed and the layers whose cost rests on such an assumption.\n"
            "\n"
            "  --json           print one JSON object instead of text\n"
            "  --shape SYM=N    bind the symbolic dimension SYM to N (an integer >= 0);\n"
            "                   may be repeated; 'seq' also splits the tokens of a\n"
            "                   GPTAttention plugin in remove_padding mode into sequences\n"
            "  --shape INPUT=D0,D1,...  the whole shape of input INPUT (its symbolic dims\n"
            "                   bound, its unknown dims set); the name decides which form\n"
            "  --top N          list the N costliest layers by FLOPs (default 10; 'all')\n"
            "\n"
            "FLOPs follow the conventions of docs/api.md: a multiply-add is 2 FLOPs.\n"
            "\n"
            "Exit status: 0 success, 1 the model cannot be read or analyzed, 2 bad usage.\n");
}

/* Does net have a gwr::GPTAttention layer (whose analysis reads "seq")? */
static int has_gpt_attention(gwr_network *net) {
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (!gwr_layer_is_removed(l) && !strcmp(gwr_layer_domain(l), "gwr") && !strcmp(gwr_layer_op(l), "GPTAttention"))
            return 1;
    }
    return 0;
}

/* The --shape arguments resolved against net into dims (symbol -> N). */
static int shapes_to_dims(cli_shapes *sh, const char *path, gwr_network *net, gwr_args *dims) {
    int rc = cli_shapes_resolve(sh, "analyze", net, has_gpt_attention(net) ? "seq" : NULL);
    if (!rc) rc = cli_shapes_apply(sh, "analyze", path, net);
    for (int i = 0; !rc && i < sh->nbind; i++)
        if (gwr_args_set_int(dims, sh->bind[i].name, sh->bind[i].value)) {
            cli_error("analyze", gwr_args_errmsg(dims));
            rc = CLI_FAIL;
        }
    return rc;
}

static int parse_top(const char *arg, int64_t *top) {
    if (!strcmp(arg, "all")) {
        *top = -1;
        return CLI_OK;
    }
    char *end;
    errno = 0;
    long long v = strtoll(arg, &end, 10);
    if (!*arg || *end || errno || v < 0 || arg[0] == '-' || arg[0] == '+' || arg[0] == ' ')
        return cli_usage("analyze", "--top '%s': expected an integer >= 0 or 'all'", arg);
    *top = (int64_t)v;
    return CLI_OK;
}

static int run(int argc, char **argv) {
    const char *path = NULL;
    int json = 0, opts = 1, rc = CLI_OK;
    int64_t top = 10;
    cli_shapes shapes = {0};
    gwr_args *dims = gwr_args_new();
    if (!dims) {
        cli_error("analyze", "out of memory");
        return CLI_FAIL;
    }
    for (int i = 1; i < argc && rc == CLI_OK; i++) {
        const char *a = argv[i];
        if (opts && !strcmp(a, "--json")) {
            json = 1;
        } else if (opts && (!strcmp(a, "--shape") || !strcmp(a, "--top"))) {
            if (i + 1 >= argc) rc = cli_usage("analyze", "%s needs a value", a);
            else if (a[2] == 's') rc = cli_shapes_add(&shapes, "analyze", argv[++i]);
            else rc = parse_top(argv[++i], &top);
        } else if (opts && !strncmp(a, "--shape=", 8)) {
            rc = cli_shapes_add(&shapes, "analyze", a + 8);
        } else if (opts && !strncmp(a, "--top=", 6)) {
            rc = parse_top(a + 6, &top);
        } else if (opts && !strcmp(a, "--")) {
            opts = 0;
        } else if (opts && a[0] == '-' && a[1]) {
            rc = cli_usage("analyze", "unknown option '%s'", a);
        } else if (!path) {
            path = a;
        } else {
            rc = cli_usage("analyze", "unexpected argument '%s': one MODEL only", a);
        }
    }
    if (rc == CLI_OK && !path) rc = cli_usage("analyze", "missing MODEL");
    gwr_onnx_load_options lo = {.infer_shapes = 1};
    gwr_network *net = rc == CLI_OK ? cli_load(path, &lo) : NULL;
    if (rc == CLI_OK && !net) rc = CLI_FAIL;
    if (rc == CLI_OK) rc = shapes_to_dims(&shapes, path, net, dims);
    if (rc != CLI_OK) {
        cli_shapes_free(&shapes);
        gwr_network_free(net);
        gwr_args_free(dims);
        return rc;
    }
    gwr_analysis *an = gwr_analyze_network(net, dims);
    if (!an) {
        cli_error(path, gwr_network_errmsg(net));
        rc = CLI_FAIL;
    } else {
        if (!json) {
            fputs("model:          ", stdout);
            /* The path as given, on one line. */
            for (const char *p = path; *p; p++) fputc(*p == '\n' || *p == '\r' ? ' ' : *p, stdout);
            fputc('\n', stdout);
        }
        if (gwr_analysis_write(an, stdout, json, top) || fflush(stdout) || ferror(stdout)) {
            cli_error("analyze", "cannot write to standard output");
            rc = CLI_FAIL;
        }
    }
    gwr_analysis_free(an);
    gwr_network_free(net);
    gwr_args_free(dims);
    cli_shapes_free(&shapes);
    return rc;
}

const cli_command cli_analyze = {"analyze", "op histogram, parameters, FLOPs, bytes moved and peak memory of a model",
                                 run, help};
