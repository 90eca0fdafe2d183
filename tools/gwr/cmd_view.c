/* cmd_view.c - `gwr view MODEL [OTHER] [--trace TRACE.jsonl] [--profile
 * PROFILE.json] -o view.html`: one self-contained HTML page of a model, or
 * of two (before and after a rewrite) with the trace and a profile. */
#include <stdlib.h>
#include <string.h>

#include "view.h"

static void help(FILE *out) {
    fprintf(out,
            "usage: gwr view MODEL [OTHER] [--trace TRACE.jsonl] [--profile PROFILE.json] -o VIEW.html\n"
            "\n"
            "Writes one self-contained HTML page (styles, scripts and data inlined; nothing\n"
            "loaded from the network) that draws MODEL: layers with op, name and output\n"
            "shape, pan, zoom and search, a click shows attributes, shapes, parameters and\n"
            "FLOPs; repeated blocks and If/Loop/Scan bodies collapsed and expandable.\n"
            "With OTHER the two models side by side, layers matched by name and coloured\n"
            "removed, added or changed. The file is written under a temporary name and\n"
            "renamed at the end: a failure leaves no partial file.\n"
            "\n"
            "  --trace FILE    the JSON lines of 'gwr rewrite --trace-json' (the rewrites\n"
            "                  listed; a click shows what each removed and added)\n"
            "  --profile FILE  a Chrome trace of 'gwr run --profile' (per-layer time as\n"
            "                  colour) or of 'gwr optimize --profile' (per-pass counts)\n"
            "  -o FILE         the page to write\n"
            "\n"
            "Exit status: 0 success, 1 the page cannot be written (or gwr was built without\n"
            "the layout library), 2 bad usage or a bad input file (a model that cannot be\n"
            "read, a trace line that is not JSON, a trace naming no layer of the models,\n"
            "a profile that is not a Chrome trace).\n");
}

static int run(int argc, char **argv) {
    const char *files[2] = {NULL, NULL}, *out = NULL, *trace_path = NULL, *prof_path = NULL;
    int nfiles = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-o") || !strcmp(a, "--output") || !strcmp(a, "--trace") || !strcmp(a, "--profile")) {
            if (!v) return cli_usage("view", "%s needs a file name", a);
            const char **slot = a[1] == 'o' || a[2] == 'o' ? &out : a[2] == 't' ? &trace_path : &prof_path;
            if (*slot) return cli_usage("view", "%s given twice", a);
            *slot = v, i++;
        } else if (a[0] == '-' && a[1]) {
            return cli_usage("view", "unknown option '%s'", a);
        } else if (nfiles < 2) {
            files[nfiles++] = a;
        } else {
            return cli_usage("view", "unexpected argument '%s': MODEL and at most one OTHER", a);
        }
    }
    if (!nfiles) return cli_usage("view", "missing MODEL");
    if (!out) return cli_usage("view", "missing -o VIEW.html");
    if (view_available()) return CLI_FAIL;
    view_page pg = {.nmodels = nfiles};
    view_trace *trace = NULL;
    char *profile = NULL;
    int rc = CLI_OK;
    if (trace_path) {
        if (!(trace = view_trace_new())) {
            cli_error("view", "out of memory");
            return CLI_FAIL;
        }
        rc = view_trace_read(trace, trace_path);
    }
    if (!rc && prof_path) profile = view_profile_read(prof_path, &rc);
    gwr_onnx_load_options lo = {.infer_shapes = 1};
    for (int k = 0; k < nfiles && !rc; k++) {
        pg.files[k] = files[k];
        if (!(pg.models[k] = cli_load(files[k], &lo))) rc = CLI_USAGE;
    }
    if (!rc && trace) rc = view_trace_check(trace, pg.models, nfiles, trace_path);
    if (!rc) {
        pg.trace = trace, pg.profile = profile;
        rc = view_write(out, &pg);
    }
    if (!rc) {
        printf("wrote %s: %lld layers", out, (long long)gwr_network_num_live_layers(pg.models[0]));
        if (nfiles == 2) printf(" and %lld layers", (long long)gwr_network_num_live_layers(pg.models[1]));
        if (trace_path) printf(", the trace of %s", trace_path);
        if (prof_path) printf(", the profile %s", prof_path);
        printf("\n");
    }
    for (int k = 0; k < nfiles; k++) cli_free_at_exit(pg.models[k]);
    view_trace_free(trace);
    free(profile);
    return rc;
}

const cli_command cli_view = {"view", "write a self-contained HTML page of a model (or two, with a trace)", run, help};
