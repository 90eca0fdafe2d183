/* cmd_diff.c - `gwr diff A B`: what changed between two ONNX models
 * (gwr/diff.h), as text or JSON; the exit status of diff(1). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(FILE *out) {
    fprintf(out,
            "usage: gwr diff A B [--json] [--rtol R] [--atol A]\n"
            "\n"
            "Compares the ONNX models A (old) and B (new): layers matched by provenance (the\n"
            "gwr.provenance record `gwr optimize --provenance` writes), then by name and op,\n"
            "then by structure (same op and attributes reading matched producers). Prints the\n"
            "counts of layers same, changed, removed and added, the interface's changes\n"
            "(inputs and outputs added, removed, retyped, moved), then one line per added,\n"
            "removed and changed layer, then the weights (Constant layers and initializers)\n"
            "added, removed or changed beyond the tolerance. Both models' untyped outputs are\n"
            "typed by shape inference first.\n"
            "\n"
            "  --json     one JSON object instead (docs/cli.md describes its fields)\n"
            "  --rtol R   weights differ where |a - b| > atol + rtol * |b| (default 0)\n"
            "  --atol A   (default 0: any difference counts)\n"
            "\n"
            "Exit status (as diff(1)): 0 identical, 1 they differ, 2 bad usage or a model\n"
            "that cannot be read (one line naming the file and the problem).\n");
}

static int parse_tol(const char *name, const char *v, double *out) {
    char *end;
    if (!v) return cli_usage("diff", "%s needs a number", name);
    double x = strtod(v, &end);
    if (!*v || *end || !isfinite(x) || x < 0)
        return cli_usage("diff", "%s '%s': a finite number >= 0", name, v);
    *out = x;
    return CLI_OK;
}

static int run(int argc, char **argv) {
    const char *path[2] = {NULL, NULL};
    gwr_diff_options o = {0, 0};
    int json = 0, opts = 1, np = 0, rc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (opts && !strcmp(a, "--json")) {
            json = 1;
        } else if (opts && (!strcmp(a, "--rtol") || !strcmp(a, "--atol"))) {
            if ((rc = parse_tol(a, v, a[2] == 'r' ? &o.rtol : &o.atol))) return rc;
            i++;
        } else if (opts && !strcmp(a, "--")) {
            opts = 0;
        } else if (opts && a[0] == '-' && a[1]) {
            return cli_usage("diff", "unknown option '%s'", a);
        } else if (np < 2) {
            path[np++] = a;
        } else {
            return cli_usage("diff", "unexpected argument '%s': two models only", a);
        }
    }
    if (np < 2) return cli_usage("diff", "missing %s", np ? "the second model B" : "the models A and B");
    gwr_onnx_load_options lo = {.infer_shapes = 1};
    gwr_network *net[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++)
        if (!(net[k] = cli_load(path[k], &lo))) {
            cli_free_at_exit(net[0]);
            return CLI_USAGE;
        }
    gwr_diff *d = gwr_diff_networks(net[0], net[1], &o);
    if (!d) {
        char what[1024];
        snprintf(what, sizeof what, "%s vs %s", path[0], path[1]);
        cli_error(what, gwr_last_errmsg());
        rc = CLI_USAGE;
    } else if (gwr_diff_write(d, stdout, json)) {
        cli_error("stdout", gwr_last_errmsg());
        rc = CLI_USAGE;
    } else {
        rc = gwr_diff_identical(d) ? CLI_OK : CLI_FAIL;
    }
    gwr_diff_free(d);
    cli_free_at_exit(net[0]);
    cli_free_at_exit(net[1]);
    return rc;
}

const cli_command cli_diff = {"diff", "compare two ONNX models: layers, interface and weights", run, help};
