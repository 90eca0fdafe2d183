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
            "usage: gwr analyze MODEL [--json] [--shape NAME=N ...] [--top N]\n"
            "\n"
            "Analyzes an ONNX model (shapes the file leaves out are inferred first): the op\n"
            "histogram, the parameters (weights tensors, elements, bytes of distinct data), the\n"
            "FLOPs and bytes moved in total and for the costliest layers, and the peak memory of\n"
            "the activations when the layers run in network order (weights apart). Symbolic\n"
            "dimensions count as 1 unless bound with --shape; the report lists the ones it\n"
            "assumed and the layers whose cost rests on such an assumption.\n"
            "\n"
            "  --json           print one JSON object instead of text\n"
            "  --shape NAME=N   bind the symbolic dimension NAME to N (an integer >= 0);\n"
            "                   may be repeated; 'seq' also splits the tokens of a\n"
            "                   GPTAttention plugin in remove_padding mode into sequences\n"
            "  --top N          list the N costliest layers by FLOPs (default 10; 'all')\n"
            "\n"
            "FLOPs follow the conventions of docs/api.md: a multiply-add is 2 FLOPs.\n"
            "\n"
            "Exit status: 0 success, 1 the model cannot be read or analyzed, 2 bad usage.\n");
}

/* "NAME=N" into dims; a usage error names the argument. */
static int add_shape(gwr_args *dims, const char *arg) {
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg)
        return cli_usage("analyze", "--shape '%s': expected NAME=N, e.g. --shape batch=4", arg);
    const char *num = eq + 1;
    int64_t v;
    const char *why;
    if (cli_parse_int(num, &v, &why)) return cli_usage("analyze", "--shape '%s': N is %s; an integer >= 0", arg, why);
    size_t len = (size_t)(eq - arg);
    char *name = malloc(len + 1);
    if (!name) {
        cli_error("analyze", "out of memory");
        return CLI_FAIL;
    }
    memcpy(name, arg, len);
    name[len] = 0;
    int dup = gwr_args_find(dims, name) >= 0;
    gwr_status s = dup ? GWR_OK : gwr_args_set_int(dims, name, (int64_t)v);
    free(name);
    if (dup) return cli_usage("analyze", "--shape '%s': the dimension is bound twice", arg);
    if (s) {
        cli_error("analyze", gwr_args_errmsg(dims));
        return CLI_FAIL;
    }
    return CLI_OK;
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
            else if (a[2] == 's') rc = add_shape(dims, argv[++i]);
            else rc = parse_top(argv[++i], &top);
        } else if (opts && !strncmp(a, "--shape=", 8)) {
            rc = add_shape(dims, a + 8);
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
    if (rc != CLI_OK) {
        gwr_args_free(dims);
        return rc;
    }
    gwr_onnx_load_options lo = {.infer_shapes = 1};
    gwr_network *net = cli_load(path, &lo);
    if (!net) {
        gwr_args_free(dims);
        return CLI_FAIL;
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
    return rc;
}

const cli_command cli_analyze = {"analyze", "op histogram, parameters, FLOPs, bytes moved and peak memory of a model",
                                 run, help};
