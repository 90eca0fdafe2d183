/* cmd_rewrite.c - `gwr rewrite MODEL --pattern LABEL... -o OUT`: applies
 * built-in rewrite patterns to an ONNX model and saves the result. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "view.h"

static void help(FILE *out) {
    fprintf(out,
            "usage: gwr rewrite MODEL (--pattern LABEL... | --rules FILE) -o OUT\n"
            "                   [--arg NAME=INT...] [--trace | --trace-json] [--stats]\n"
            "                   [--explain] [--max-rewrites N] [--single-pass] [--keep-dead] [--debug] [--seed N]\n"
            "                   [--view VIEW.html] [--provenance]\n"
            "       gwr rewrite --list [--markdown]\n"
            "\n"
            "Loads the ONNX model MODEL, applies the built-in patterns named by --pattern\n"
            "(in the pass table's order) and the rules of --rules (higher benefit first)\n"
            "until none matches, over the graph and then every If/Loop/Scan body, prunes\n"
            "dead layers and writes OUT\n"
            "(a temporary file renamed at the end: a failure leaves no partial file).\n"
            "\n"
            "  --pattern LABEL   a built-in pattern (--list shows them with phase, level,\n"
            "                    targets and numerics; --markdown as docs/api.md's table); repeatable\n"
            "  --rules FILE      the rules of a .rules file (docs/rules.md), each under its\n"
            "                    name and benefit; a file the language refuses: exit 1,\n"
            "                    with FILE:LINE:COL and the reason\n"
            "  --arg NAME=INT    an integer argument the patterns read (batch_size=2 ...)\n"
            "  --trace           print one line per rewrite: pattern, root layer, layers\n"
            "                    added (+) and removed (-); --trace-json prints JSON lines\n"
            "  --explain         with the trace, also print why each pattern did not match\n"
            "  --stats           print attempts, matches, rewrites and time per pattern\n"
            "  --max-rewrites N  stop with an error after N rewrites (default: 8 per layer + 64)\n"
            "  --single-pass     visit each layer once, in order; no fixpoint\n"
            "  --keep-dead       do not prune dead layers\n"
            "  --debug           verify the network after every rewrite and check that\n"
            "                    patterns report their changes truthfully\n"
            "  --seed N          visit layers in a random order drawn from seed N\n"
            "  --view FILE       also write the page of 'gwr view' for the run: the model\n"
            "                    before and after, and the trace of its rewrites\n"
            "  --provenance      save each new layer's lineage (rule and replaced layers)\n"
            "                    in OUT's node metadata_props ('gwr explain' reads it)\n"
            "\n"
            "Exit status: 0 success, 1 the model cannot be read or written or a pattern failed\n"
            "or did not converge, 2 bad usage.\n");
}

static int list(int markdown) {
    gwr_passes_print(stdout, markdown);
    return CLI_OK;
}

static int parse_i64(const char *s, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno) return -1;
    *out = v;
    return 0;
}

/* Runs m on every If/Loop/Scan body of g's live layers, depth first, as
 * gwr_optimize walks them; adds their rewrites to *n. */
static gwr_status rewrite_bodies(gwr_rewrite_manager *m, gwr_network *g, const gwr_args *args, int stats,
                                 int64_t *n, int depth) {
    if (depth > 64) return GWR_ERR_UNSUPPORTED;
    for (int64_t i = 0; i < gwr_network_num_layers(g); i++) {
        gwr_layer *l = gwr_network_layer(g, i);
        if (gwr_layer_is_removed(l)) continue;
        for (int a = 0; a < gwr_layer_num_attrs(l); a++) {
            gwr_network *const *gs = NULL;
            gwr_network *one = NULL;
            int64_t k = 0;
            if (gwr_layer_attr_type(l, a) == GWR_ATTR_GRAPH && !gwr_layer_get_graph(l, gwr_layer_attr_name(l, a), &one))
                gs = &one, k = 1;
            else if (gwr_layer_attr_type(l, a) == GWR_ATTR_GRAPHS)
                gwr_layer_get_graphs(l, gwr_layer_attr_name(l, a), &gs, &k);
            for (int64_t j = 0; j < k; j++) {
                gwr_status s = gwr_rewrite_manager_rewrite(m, gs[j], args);
                gwr_rewrite_summary sum;
                gwr_rewrite_manager_summary(m, &sum);
                *n += sum.rewrites;
                if (stats && sum.rewrites) {
                    printf("body '%s' of '%s':\n", gwr_network_name(gs[j]), gwr_layer_name(l));
                    gwr_rewrite_manager_print_stats(m, stdout);
                }
                if (s || (s = rewrite_bodies(m, gs[j], args, stats, n, depth + 1))) return s;
            }
        }
    }
    return GWR_OK;
}

static int run(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    int trace = -1, stats = 0, nopts = 0, explain = 0;
    gwr_rules *rules = NULL;
    gwr_rewrite_options ro = {.provenance = 1}; /* recorded always, saved with --provenance */
    gwr_onnx_save_options so = {0}; /* --provenance */
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    gwr_args *args = gwr_args_new();
    gwr_network *net = NULL;
    gwr_network *before = NULL; /* --view: the model as loaded */
    const char *view = NULL;
    view_trace *vtrace = NULL;
    int rc = CLI_USAGE;
    if (!m || !args) {
        cli_error("rewrite", "out of memory");
        rc = CLI_FAIL;
        goto done;
    }
#define USAGE(...)                                  \
    do {                                            \
        rc = cli_usage("rewrite", __VA_ARGS__);     \
        goto done;                                  \
    } while (0)
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--list")) {
            int md = v && !strcmp(v, "--markdown");
            if (v && !md) USAGE("--list takes only --markdown");
            rc = list(md);
            goto done;
        } else if (!strcmp(a, "--pattern") || !strcmp(a, "-p")) {
            if (!v) USAGE("--pattern needs a label (see 'gwr rewrite --list')");
            i++;
            if (gwr_rewrite_manager_get(m, v)) USAGE("pattern '%s' given twice", v);
            if (gwr_passes_add(m, v)) USAGE("%s", gwr_rewrite_manager_errmsg(m));
            nopts++;
        } else if (!strcmp(a, "--rules")) {
            if (!v) USAGE("--rules needs a rules file");
            if (rules) USAGE("--rules given twice (one file; it may hold many rules)");
            i++;
            if (cli_load_rules(v, &rules)) {
                rc = CLI_FAIL;
                goto done;
            }
            if (gwr_rules_add_to(rules, m)) USAGE("%s", gwr_rewrite_manager_errmsg(m));
            nopts++;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!v) USAGE("%s needs a file name", a);
            out = argv[++i];
        } else if (!strcmp(a, "--arg")) {
            const char *eq = v ? strchr(v, '=') : NULL;
            int64_t n;
            if (!eq || eq == v || parse_i64(eq + 1, &n)) USAGE("--arg needs NAME=INTEGER, not '%s'", v ? v : "");
            char name[128];
            size_t len = (size_t)(eq - v);
            if (len >= sizeof name) USAGE("--arg: name too long");
            memcpy(name, v, len);
            name[len] = 0;
            gwr_args_set_int(args, name, n);
            i++;
        } else if (!strcmp(a, "--trace")) {
            trace = GWR_TRACE_TEXT;
        } else if (!strcmp(a, "--trace-json")) {
            trace = GWR_TRACE_JSON;
        } else if (!strcmp(a, "--explain")) {
            explain = 1;
        } else if (!strcmp(a, "--stats")) {
            stats = 1;
        } else if (!strcmp(a, "--max-rewrites") || !strcmp(a, "--seed")) {
            int64_t n;
            if (!v || parse_i64(v, &n) || n < (a[2] == 'm' ? 1 : 0))
                USAGE("%s needs a %s integer", a, a[2] == 'm' ? "positive" : "non-negative");
            if (a[2] == 'm') ro.max_rewrites = n;
            else ro.shuffle_seed = (uint64_t)n + 1;
            i++;
        } else if (!strcmp(a, "--view")) {
            if (!v) USAGE("--view needs a file name");
            view = argv[++i];
        } else if (!strcmp(a, "--single-pass")) {
            ro.single_pass = 1;
        } else if (!strcmp(a, "--keep-dead")) {
            ro.keep_dead = 1;
        } else if (!strcmp(a, "--debug")) {
            ro.debug = 1;
        } else if (!strcmp(a, "--provenance")) {
            so.provenance = 1;
        } else if (a[0] == '-' && a[1]) {
            USAGE("unknown option '%s'", a);
        } else if (!in) {
            in = a;
        } else {
            USAGE("unexpected argument '%s': one MODEL only", a);
        }
    }
    if (!in) USAGE("missing MODEL");
    if (!nopts) USAGE("no --pattern or --rules given (see 'gwr rewrite --list')");
    if (!out) USAGE("missing -o OUT");
    if (view && view_available()) {
        rc = CLI_FAIL;
        goto done;
    }
    ro.time_patterns = stats;
    gwr_rewrite_manager_set_options(m, &ro);
    if (explain && trace < 0) trace = GWR_TRACE_TEXT;
    if (trace >= 0 && gwr_rewrite_manager_trace(m, stdout, (gwr_trace_format)trace, explain) < 0) {
        cli_error("rewrite", "out of memory");
        rc = CLI_FAIL;
        goto done;
    }
    rc = CLI_FAIL;
    /* External data is copied: OUT may overwrite the file it lives in.
     * Shapes are inferred: patterns check them. */
    gwr_onnx_load_options lo = {.copy_external_data = 1, .infer_shapes = 1};
    if (!(net = cli_load(in, &lo))) goto done;
    /* Plugins read from a file carry no recorded call: rebuild it. */
    if (gwr_passes_recover_flayers(net, NULL)) {
        cli_error(in, gwr_network_errmsg(net));
        goto done;
    }
    if (view) {
        gwr_rewrite_listener ls;
        if (!(vtrace = view_trace_new()) || (ls = view_trace_listener(vtrace), gwr_rewrite_manager_add_listener(m, &ls) < 0) ||
            !(before = gwr_network_clone(net))) {
            cli_error(in, "out of memory");
            goto done;
        }
    }
    gwr_status s = gwr_rewrite_manager_rewrite(m, net, args);
    if (stats) gwr_rewrite_manager_print_stats(m, stdout);
    gwr_rewrite_summary sum;
    gwr_rewrite_manager_summary(m, &sum);
    int64_t nrewrites = sum.rewrites;
    if (!s) s = rewrite_bodies(m, net, args, stats, &nrewrites, 0);
    if (s) {
        char msg[700];
        snprintf(msg, sizeof msg, "%s: %s", in, gwr_rewrite_manager_errmsg(m));
        cli_error(in, msg);
        goto done;
    }
    if (gwr_onnx_save(net, out, &so)) {
        cli_error(out, gwr_network_errmsg(net));
        goto done;
    }
    printf("wrote %s: %lld rewrites, %lld -> %lld layers\n", out, (long long)nrewrites, (long long)sum.layers_before,
           (long long)gwr_network_num_live_layers(net));
    rc = CLI_OK;
    if (view) {
        view_page pg = {.models = {before, net}, .files = {in, out}, .nmodels = 2, .trace = vtrace};
        if (!(rc = view_write(view, &pg))) printf("wrote %s\n", view);
    }
done:
    cli_free_at_exit(net);
    cli_free_at_exit(before);
    view_trace_free(vtrace);
    gwr_args_free(args);
    gwr_rewrite_manager_free(m);
    gwr_rules_free(rules); /* after the manager: its rewriters point into the rules */
    return rc;
#undef USAGE
}

const cli_command cli_rewrite = {"rewrite", "apply built-in rewrite patterns to an ONNX model", run, help};
