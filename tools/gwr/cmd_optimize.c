/* cmd_optimize.c - `gwr optimize MODEL -o OUT`: the optimizer
 * (gwr/optimize.h) on an ONNX model. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "view.h"

static void help(FILE *out) {
    fprintf(out,
            "usage: gwr optimize MODEL -o OUT [--level basic|extended|all] [--target onnx|ort|gwr]\n"
            "                    [--only PASS,...] [--disable PASS,...] [--report] [--debug]\n"
            "                    [--shape INPUT=D0,D1,... | SYMBOL=N ...] [--opset N] [--verify [--seed N]]\n"
            "                    [--input-defaults auto|keep|fold] [--rules FILE] [--profile FILE.json]\n"
            "                    [--view VIEW.html] [--provenance]\n"
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
            "  --verify         run the model before and after on the executor with the same\n"
            "                   seeded random inputs; name the worst output; exit 1 and write\n"
            "                   nothing when an output differs (|a-b| > 1e-5 + 1e-4|b|)\n"
            "  --shape SYM=N    bind symbolic dim SYM to N before optimizing, so that shape\n"
            "                   computations on it fold (OUT then takes inputs of that extent\n"
            "                   only); --verify's inputs use it too (other symbols: 1)\n"
            "  --shape INPUT=D0,D1,...  the whole shape of input INPUT: its symbolic dims\n"
            "                   bound, its unknown dims set, before optimizing. The name\n"
            "                   decides: an input's or a symbolic dim's (as in run, verify,\n"
            "                   analyze); --verify needs every unknown unnamed input dim given\n"
            "  --opset N        raise the default-domain opset to N first (never lowers), so\n"
            "                   that passes needing newer ops can fire; refused (exit 2) when\n"
            "                   an op of the model changed between the two versions in a way\n"
            "                   not converted. Without it the model's opset is kept\n"
            "  --input-defaults auto|keep|fold  initializers the model also lists as graph\n"
            "                   inputs (overridable from IR version 4 on): fold makes them\n"
            "                   constants (and drops the inputs), keep leaves them inputs;\n"
            "                   auto (default): fold for target onnx, keep for ort and gwr\n"
            "  --rules FILE     also run the rules of FILE (docs/rules.md) with the passes,\n"
            "                   over the graph and every body; --report lists them after\n"
            "                   the passes. A file the language refuses: exit 1, with\n"
            "                   FILE:LINE:COL and the reason\n"
            "  --profile F.json write the passes' profile as a Chrome trace (as gwr run\n"
            "                   --profile): per round an event, per pass and round one with\n"
            "                   its time, rewrites, matches, attempts, layers removed and\n"
            "                   added, and a counter of the live layers after each round\n"
            "  --seed N         the inputs' seed (default 0)\n"
            "  --view FILE      also write the page of 'gwr view' for the run: the model\n"
            "                   before and after, the trace of its rewrites (and with\n"
            "                   --profile, the passes' profile)\n"
            "  --provenance     save each new layer's lineage (rule and replaced layers)\n"
            "                   in OUT's node metadata_props ('gwr explain' reads it)\n"
            "  --list           the passes, with level, targets and numerics\n"
            "\n"
            "Exit status: 0 success, 1 the model cannot be read or written or a pass failed,\n"
            "2 bad usage (an unknown pass, level or target, an --opset that cannot be had).\n");
}

int cli_parse_level(const char *v, gwr_pass_level *out) {
    static const char *const names[] = {"basic", "extended", "all"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(v, names[i])) return *out = (gwr_pass_level)(GWR_LEVEL_BASIC + i), 0;
    return -1;
}

int cli_parse_target(const char *v, unsigned *out) {
    if (!strcmp(v, "onnx")) *out = GWR_TARGET_ONNX;
    else if (!strcmp(v, "ort")) *out = GWR_TARGET_ORT;
    else if (!strcmp(v, "gwr")) *out = GWR_TARGET_GWR;
    else return -1;
    return 0;
}

int cli_parse_input_defaults(const char *v, gwr_input_defaults *out) {
    static const char *const modes[] = {"auto", "keep", "fold"};
    for (int k = 0; k < 3; k++)
        if (!strcmp(v, modes[k])) return *out = (gwr_input_defaults)k, 0;
    return -1;
}

int cli_parse_opset(const char *v, int64_t *out, const char **why) {
    *why = "below 1";
    return cli_parse_int(v, out, why) || *out < 1 ? -1 : 0;
}

/* --verify: the copy taken before against the optimized network. 0 when
 * every output agrees, 1 when one differs or a run fails (printed). */
static int verify(gwr_network *before, gwr_network *after, const char *in, const gwr_dim_binding *bind, int nbind,
                  uint64_t seed) {
    gwr_compare_options co = GWR_COMPARE_DEFAULTS;
    gwr_compare_report rep;
    co.inputs.seed = seed;
    co.inputs.nbind = nbind;
    co.inputs.bind = bind;
    gwr_status s = gwr_exec_compare(before, after, &co, &rep);
    int rc = 1;
    if (s) {
        char msg[700];
        snprintf(msg, sizeof msg, "%s: --verify: %s", in, gwr_last_errmsg());
        cli_error(in, msg);
    } else {
        printf("verify: %d output%s, max abs %g, max rel %g: %s", rep.noutputs, rep.noutputs == 1 ? "" : "s",
               rep.max_abs, rep.max_rel, rep.pass ? "same" : "DIFFER");
        if (rep.worst_name) printf(" (worst '%s')", rep.worst_name);
        printf("\n");
        if (!rep.pass) {
            char msg[1400];
            const gwr_compare_output *w = rep.worst >= 0 ? &rep.outputs[rep.worst] : NULL;
            if (w && !w->same_type) {
                /* Not a numeric difference: the shapes (or dtypes) differ. */
                char ta[256], tb[256];
                gwr_value_type_str(w->a, ta, sizeof ta);
                gwr_value_type_str(w->b, tb, sizeof tb);
                snprintf(msg, sizeof msg, "%s: --verify: output '%s' is %s after optimizing, %s before", in, w->name,
                         tb, ta);
            } else {
                snprintf(msg, sizeof msg, "%s: --verify: output '%s' differs after optimizing (max abs %g)", in,
                         rep.worst_name ? rep.worst_name : "?", rep.max_abs);
            }
            cli_error(in, msg);
        }
        rc = !rep.pass;
    }
    gwr_compare_report_free(&rep);
    return rc;
}

/* --profile: the report's rounds as a Chrome trace, written atomically.
 * 0, or 1 after one line naming the file. */
static int write_profile(const gwr_optimize_report *r, const char *file) {
    char *tmp = cli_temp_name(file);
    FILE *f = tmp ? fopen(tmp, "w") : NULL;
    gwr_status st = f ? gwr_optimize_report_write_trace(r, f) : GWR_ERR_IO;
    if (!f || fclose(f) || st || rename(tmp, file)) {
        char m[300];
        snprintf(m, sizeof m, "cannot write the profile: %s", tmp ? strerror(errno) : "out of memory");
        cli_error(file, m);
        if (tmp) remove(tmp);
        free(tmp);
        return 1;
    }
    free(tmp);
    printf("wrote the profile to %s (%d round%s)\n", file, gwr_optimize_report_rounds(r),
           gwr_optimize_report_rounds(r) == 1 ? "" : "s");
    return 0;
}

static int run(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    gwr_optimize_options o = {.provenance = 1}; /* recorded always, saved with --provenance */
    int report = 0, check = 0;
    gwr_onnx_save_options so = {0}; /* --provenance */
    const char *rules_path = NULL, *profile = NULL;
    const char *view = NULL;
    gwr_rules *rules = NULL;
    cli_shapes shapes = {0};
    uint64_t seed = 0;
    int rc = CLI_OK;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--list")) {
            gwr_passes_print(stdout, 0);
            return cli_shapes_free(&shapes), CLI_OK;
        } else if (!strcmp(a, "--level")) {
            if (!v || cli_parse_level(v, &o.level)) return cli_shapes_free(&shapes), cli_usage("optimize", "--level needs basic, extended or all");
            i++;
        } else if (!strcmp(a, "--target")) {
            if (!v || cli_parse_target(v, &o.target)) return cli_shapes_free(&shapes), cli_usage("optimize", "--target needs onnx, ort or gwr");
            i++;
        } else if (!strcmp(a, "--only") || !strcmp(a, "--disable")) {
            if (!v || !*v) return cli_shapes_free(&shapes), cli_usage("optimize", "%s needs a comma-separated list of passes", a);
            if (a[2] == 'o') o.only = v;
            else o.disable = v;
            i++;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!v) return cli_shapes_free(&shapes), cli_usage("optimize", "%s needs a file name", a);
            out = argv[++i];
        } else if (!strcmp(a, "--report")) {
            report = 1;
        } else if (!strcmp(a, "--debug")) {
            o.debug = 1;
        } else if (!strcmp(a, "--verify")) {
            check = 1;
        } else if (!strcmp(a, "--provenance")) {
            so.provenance = 1;
        } else if (!strcmp(a, "--shape")) {
            if (!v) return cli_shapes_free(&shapes), cli_usage("optimize", "--shape needs INPUT=D0,D1,... or SYMBOL=N");
            if ((rc = cli_shapes_add(&shapes, "optimize", v))) return cli_shapes_free(&shapes), rc;
            i++;
        } else if (!strcmp(a, "--opset")) {
            int64_t n = 0;
            const char *why = "missing";
            if (!v || cli_parse_opset(v, &n, &why))
                return cli_shapes_free(&shapes), cli_usage("optimize", "--opset '%s': %s; a positive integer", v ? v : "", why);
            o.opset = n, i++;
        } else if (!strcmp(a, "--input-defaults")) {
            if (!v || cli_parse_input_defaults(v, &o.input_defaults))
                return cli_shapes_free(&shapes), cli_usage("optimize", "--input-defaults needs auto, keep or fold");
            i++;
        } else if (!strcmp(a, "--rules")) {
            if (!v) return cli_shapes_free(&shapes), cli_usage("optimize", "--rules needs a rules file");
            if (rules_path) return cli_shapes_free(&shapes), cli_usage("optimize", "--rules given twice (one file; it may hold many rules)");
            rules_path = v, i++;
        } else if (!strcmp(a, "--view")) {
            if (!v) return cli_shapes_free(&shapes), cli_usage("optimize", "--view needs a file name");
            view = v, i++;
        } else if (!strcmp(a, "--profile")) {
            if (!v) return cli_shapes_free(&shapes), cli_usage("optimize", "--profile needs a file name (FILE.json)");
            profile = v, o.profile = 1, i++;
        } else if (!strcmp(a, "--seed")) {
            int64_t n = 0;
            const char *why = "missing";
            if (!v || cli_parse_int(v, &n, &why))
                return cli_shapes_free(&shapes), cli_usage("optimize", "--seed '%s': %s; a non-negative integer", v ? v : "", why);
            seed = (uint64_t)n, i++;
        } else if (a[0] == '-' && a[1]) {
            return cli_shapes_free(&shapes), cli_usage("optimize", "unknown option '%s'", a);
        } else if (!in) {
            in = a;
        } else {
            return cli_shapes_free(&shapes), cli_usage("optimize", "unexpected argument '%s': one MODEL only", a);
        }
    }
    if (!in || !out) {
        cli_shapes_free(&shapes);
        return cli_usage("optimize", "missing %s", !in ? "MODEL" : "-o OUT");
    }
    if (view && view_available()) return cli_shapes_free(&shapes), CLI_FAIL;
    if (rules_path && cli_load_rules(rules_path, &rules)) return cli_shapes_free(&shapes), CLI_FAIL;
    o.rules = rules;
    /* External data is copied: OUT may overwrite the file it lives in.
     * Shapes are inferred: passes check them. */
    gwr_onnx_load_options lo = {.copy_external_data = 1, .infer_shapes = 1};
    gwr_network *net = cli_load(in, &lo);
    if (!net) return cli_shapes_free(&shapes), gwr_rules_free(rules), CLI_FAIL;
    /* --shape by the model: whole input shapes written into the inputs,
     * symbolic dims bound by the optimizer (gwr_optimize_options.bind). */
    if ((rc = cli_shapes_resolve(&shapes, "optimize", net, NULL)) || (rc = cli_shapes_apply(&shapes, "optimize", in, net)) ||
        (check && (rc = cli_shapes_need_known(&shapes, "optimize", net, NULL, 0)))) {
        cli_shapes_free(&shapes);
        gwr_rules_free(rules);
        cli_free_at_exit(net);
        return rc;
    }
    gwr_network *before = NULL;
    view_trace *vtrace = view ? view_trace_new() : NULL;
    gwr_rewrite_listener vls;
    if (vtrace) vls = view_trace_listener(vtrace), o.listener = &vls;
    if ((view && !vtrace) || ((check || view) && !(before = gwr_network_clone(net)))) {
        view_trace_free(vtrace);
        cli_error(in, gwr_last_errmsg());
        cli_shapes_free(&shapes);
        gwr_rules_free(rules);
        cli_free_at_exit(net);
        return CLI_FAIL;
    }
    gwr_optimize_report *r = NULL;
    o.nbind = shapes.nbind, o.bind = shapes.bind;
    gwr_status s = gwr_optimize(net, &o, &r);
    rc = CLI_FAIL;
    if (s == GWR_ERR_NOT_FOUND || ((s == GWR_ERR_INVALID_ARG || s == GWR_ERR_UNSUPPORTED) && !r)) {
        rc = cli_usage("optimize", "%s", gwr_network_errmsg(net));
    } else if (s) {
        if (report) gwr_optimize_report_print(r, stdout);
        cli_error(in, gwr_network_errmsg(net));
    } else {
        if (report) gwr_optimize_report_print(r, stdout);
        int64_t nb, na;
        gwr_optimize_report_layers(r, &nb, &na, NULL);
        if (profile && write_profile(r, profile)) {
            /* printed */
        } else if (check && verify(before, net, in, shapes.bind, shapes.nbind, seed)) {
            /* an output differs: no file is written */
        } else if (gwr_onnx_save(net, out, &so)) {
            cli_error(out, gwr_network_errmsg(net));
        } else {
            printf("wrote %s: %lld -> %lld layers\n", out, (long long)nb, (long long)na);
            rc = CLI_OK;
            if (view) {
                /* With --profile the page shows the passes too (as gwr view --profile). */
                char *prof = profile ? view_profile_read(profile, &rc) : NULL;
                view_page pg = {.models = {before, net}, .files = {in, out}, .nmodels = 2, .trace = vtrace,
                                .profile = prof};
                if ((!profile || prof) && !(rc = view_write(view, &pg))) printf("wrote %s\n", view);
                free(prof);
            }
        }
    }
    gwr_optimize_report_free(r);
    view_trace_free(vtrace);
    gwr_rules_free(rules);
    cli_shapes_free(&shapes);
    cli_free_at_exit(before);
    cli_free_at_exit(net);
    return rc;
}

const cli_command cli_optimize = {"optimize", "optimize an ONNX model with the built-in passes", run, help};
