/* cmd_bisect.c - `gwr bisect MODEL ...`: which rewrite of a run changed
 * the outputs. The run (gwr_optimize with the options given, or only the
 * --pattern labels) is made once with a listener that logs its N rewrites;
 * when its outputs differ from the model's on the executor (as `gwr
 * verify` compares them), or the result no longer runs there or has
 * another interface, the first K after which they differ is found by
 * binary search over the log: each replay is a fresh copy of the model
 * optimized with stop_after K (gwr_optimize_options), run and compared.
 * Good K stay good and bad K bad as the rewrites pile up (the search
 * assumes it), so at most ceil(log2 N) replays, and one more for the model
 * before the first rewrite when that is the culprit. Each replay's log must
 * be the full run's first K entries: a run that is not deterministic is
 * reported, not bisected. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(FILE *out) {
    fprintf(out,
            "usage: gwr bisect MODEL [--level L] [--target T] [--only P,...] [--disable P,...]\n"
            "                  [--opset N] [--input-defaults auto|keep|fold]\n"
            "                  [--rules FILE] [--debug] | --pattern LABEL... [--rules FILE]\n"
            "                  [--rtol R] [--atol A] [--input NAME=FILE.pb ...] [--random SEED]\n"
            "                  [--shape INPUT=D0,D1,... | SYM=N] [-o DIR]\n"
            "\n"
            "Runs the rewrites that `gwr optimize` would make with these options (or, with\n"
            "--pattern, only the patterns named, as `gwr optimize --only LABEL,...` runs them:\n"
            "phase by phase, over the graph and every If/Loop/Scan body), logging each one,\n"
            "then runs the model and the result on gwr's executor (as written, no session\n"
            "optimization) on the same inputs and compares the outputs as gwr verify does.\n"
            "When they differ beyond tolerance (or the result no longer runs, or its inputs\n"
            "or outputs changed) it replays the run from a fresh copy of the\n"
            "model, stopped after K rewrites, binary-searching K over the log, and names the\n"
            "first rewrite after which the outputs differ: its number, pattern, root layer and\n"
            "the layers it added and removed. At most ceil(log2 N) + 2 replays for N rewrites\n"
            "(the count is printed).\n"
            "\n"
            "  --pattern LABEL  a built-in pattern (gwr rewrite --list); repeatable\n"
            "  --rules FILE     also run the rules of FILE (docs/rules.md)\n"
            "  --level, --target, --only, --disable, --opset, --input-defaults, --debug\n"
            "                   as gwr optimize\n"
            "  --rtol R, --atol A  tolerance: |a - b| <= atol + rtol * |b| (defaults 1e-4, 1e-5)\n"
            "  --input NAME=FILE.pb  an input's value (TensorProto); other inputs are random\n"
            "  --random SEED    seed of the random inputs (default 0)\n"
            "  --shape SYM=N | INPUT=D0,D1,...  as gwr optimize: bound before the rewrites,\n"
            "                   and the inputs made of that shape\n"
            "  -o DIR           where to write before.onnx and after.onnx, the model just\n"
            "                   before and just after the culprit (default gwr-bisect)\n"
            "\n"
            "Exit status: 0 the outputs match after every rewrite (nothing to bisect; nothing\n"
            "written), 1 a culprit was found (printed; DIR/before.onnx and DIR/after.onnx\n"
            "written), 2 bad usage or bad input: a model, rules or input file that cannot be\n"
            "read, a run or an executor run that fails, outputs that differ with no rewrite\n"
            "made, a run that does not replay the same (one line naming the file and the\n"
            "problem; nothing written).\n");
}

/* ---- the log of a run ---- */

typedef struct step {
    char *label, *root, *op;
    char *added, *removed; /* names joined by ", " */
    int64_t nadded, nremoved;
} step;

typedef struct steplog {
    step *v;
    int64_t n, cap;
    int nomem;
} steplog;

static void steplog_free(steplog *g) {
    for (int64_t i = 0; i < g->n; i++)
        free(g->v[i].label), free(g->v[i].root), free(g->v[i].op), free(g->v[i].added), free(g->v[i].removed);
    free(g->v);
    memset(g, 0, sizeof *g);
}

/* The layers' names joined by ", " (the first 32; then "... N more"). */
static char *join_names(gwr_layer *const *v, int64_t n) {
    size_t size = 1;
    int64_t shown = n < 32 ? n : 32;
    for (int64_t i = 0; i < shown; i++) size += strlen(gwr_layer_name(v[i])) + 2;
    size += 32;
    char *s = malloc(size);
    if (!s) return NULL;
    size_t off = 0;
    s[0] = 0;
    for (int64_t i = 0; i < shown; i++)
        off += (size_t)snprintf(s + off, size - off, "%s%s", i ? ", " : "", gwr_layer_name(v[i]));
    if (shown < n) snprintf(s + off, size - off, ", ... %lld more", (long long)(n - shown));
    return s;
}

static void on_applied(void *ctx, const gwr_rewrite_event *e) {
    steplog *g = ctx;
    if (g->nomem) return;
    if (g->n == g->cap) {
        int64_t cap = g->cap ? 2 * g->cap : 64;
        step *v = realloc(g->v, (size_t)cap * sizeof *v);
        if (!v) {
            g->nomem = 1;
            return;
        }
        g->v = v, g->cap = cap;
    }
    step *s = &g->v[g->n++];
    *s = (step){gwr_strdup(e->label), gwr_strdup(gwr_layer_name(e->root)), gwr_strdup(gwr_layer_op(e->root)),
                join_names(e->added, e->nadded), join_names(e->removed, e->nremoved), e->nadded, e->nremoved};
    if (!s->label || !s->root || !s->op || !s->added || !s->removed) g->nomem = 1;
}

/* ---- one bisection ---- */

typedef struct bisect {
    const char *model;
    gwr_network *orig;          /* the model as loaded, --shape applied */
    gwr_optimize_options opt;
    cli_inputs in;
    double rtol, atol;
    steplog full;               /* the whole run's log */
    int replays;
} bisect;

/* A fresh copy of the model with the first k rewrites of the run (k < 0:
 * all of them), its log in *log. NULL after one line. */
static gwr_network *replay(bisect *b, int64_t k, steplog *log) {
    gwr_network *net = gwr_network_clone(b->orig);
    if (!net) {
        cli_error(b->model, gwr_last_errmsg());
        return NULL;
    }
    gwr_rewrite_listener ls = {.pattern_applied = on_applied, .ctx = log};
    gwr_optimize_options o = b->opt;
    o.listener = &ls;
    o.stop_after = k < 0 ? 0 : k ? k : GWR_STOP_BEFORE_FIRST;
    gwr_optimize_report *r = NULL;
    gwr_status s = gwr_optimize(net, &o, &r);
    gwr_optimize_report_free(r);
    if (s || log->nomem) {
        cli_error(b->model, s ? gwr_network_errmsg(net) : "out of memory");
        cli_free_at_exit(net);
        return NULL;
    }
    return net;
}

/* The replay of k rewrites made the full run's first k (label and root):
 * else one line, -1. */
static int same_prefix(const bisect *b, const steplog *g, int64_t k) {
    for (int64_t i = 0; i < k; i++) {
        const step *x = i < g->n ? &g->v[i] : NULL, *y = &b->full.v[i];
        if (x && !strcmp(x->label, y->label) && !strcmp(x->root, y->root)) continue;
        char msg[700];
        snprintf(msg, sizeof msg,
                 "the run does not replay the same: rewrite #%lld was %s at '%s' in the whole run, %s%s%s%s in the "
                 "replay of %lld",
                 (long long)(i + 1), y->label, y->root, x ? x->label : "none", x ? " at '" : "", x ? x->root : "",
                 x ? "'" : "", (long long)k);
        cli_error(b->model, msg);
        return -1;
    }
    if (g->n != k) {
        char msg[300];
        snprintf(msg, sizeof msg, "the replay of %lld rewrites made %lld", (long long)k, (long long)g->n);
        cli_error(b->model, msg);
        return -1;
    }
    return 0;
}

/* What a comparison found: 1 an output differs (or the rewritten model
 * no longer runs, or its interface changed: `fails` says why), 0 none, -1
 * the model itself cannot run (one line). worst/max_abs describe it. */
typedef struct verdict {
    int differs;
    char worst[256];
    char fails[512];
    double max_abs;
    int64_t nbad, numel;
} verdict;

static int compare(bisect *b, gwr_network *net, verdict *v) {
    gwr_compare_options co = {.atol = b->atol, .rtol = b->rtol,
                              .inputs = {.ngiven = b->in.in.n, .given_names = b->in.in.names,
                                         .given_values = b->in.in.values}};
    gwr_compare_report rep = {0};
    memset(v, 0, sizeof *v);
    gwr_status st = gwr_exec_compare(b->orig, net, &co, &rep);
    if (st && (rep.error_in == 2 || (rep.error_in == 0 && st == GWR_ERR_TYPE))) {
        /* the rewrites broke it: as bad as a wrong output */
        snprintf(v->fails, sizeof v->fails, "%s: %s", rep.error_in == 2 ? "it fails to run" : "its interface changed",
                 gwr_last_errmsg());
        gwr_compare_report_free(&rep);
        return v->differs = 1;
    }
    if (st) {
        char msg[700];
        snprintf(msg, sizeof msg, "%s: %s the rewrites: %s", b->model, rep.error_in == 1 ? "running the model before"
                                                                                     : "running the model after",
                 gwr_last_errmsg());
        cli_error(b->model, msg);
        gwr_compare_report_free(&rep);
        return -1;
    }
    v->differs = !rep.pass;
    v->max_abs = rep.max_abs;
    if (rep.worst >= 0) {
        const gwr_compare_output *w = &rep.outputs[rep.worst];
        snprintf(v->worst, sizeof v->worst, "%s", w->name);
        v->nbad = w->same_type ? w->nbad : w->numel;
        v->numel = w->numel;
        if (!w->same_type) snprintf(v->worst, sizeof v->worst, "%s (its type)", w->name);
    }
    gwr_compare_report_free(&rep);
    return v->differs;
}

static int ceil_log2(int64_t n) {
    int c = 0;
    while (c < 62 && (INT64_C(1) << c) < n) c++;
    return c;
}

static void print_verdict(const char *what, const verdict *v) {
    if (v->fails[0])
        printf("%s: %s\n", what, v->fails);
    else if (v->differs)
        printf("%s: outputs differ (worst '%s': %lld of %lld elements beyond tolerance, max abs %g)\n", what,
               v->worst, (long long)v->nbad, (long long)v->numel, v->max_abs);
    else
        printf("%s: outputs match (max abs %g)\n", what, v->max_abs);
}

/* Saves net as DIR/name: 0, or -1 after one line. */
static int save_in(const char *dir, const char *name, gwr_network *net) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (!gwr_onnx_save(net, path, NULL)) return 0;
    cli_error(path, gwr_network_errmsg(net));
    return -1;
}

/* The search over the log of b->full (N > 0 rewrites, the last state bad).
 * A CLI_* code. */
static int search(bisect *b, gwr_network *bad_net, const verdict *bad_v, const char *dir) {
    int64_t n = b->full.n, lo = 0, hi = n;
    gwr_network *lo_net = NULL, *hi_net = bad_net;
    verdict hi_v = *bad_v, lo_v = {0};
    int rc = CLI_USAGE;
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        steplog g = {0};
        gwr_network *net = replay(b, mid, &g);
        b->replays++;
        verdict v;
        int d = net && !same_prefix(b, &g, mid) ? compare(b, net, &v) : -1;
        steplog_free(&g);
        if (d < 0) {
            cli_free_at_exit(net);
            goto done;
        }
        char what[64];
        snprintf(what, sizeof what, "replay %d, %lld rewrite%s", b->replays, (long long)mid, mid == 1 ? "" : "s");
        print_verdict(what, &v);
        if (d) {
            cli_free_at_exit(hi_net);
            hi_net = net, hi = mid, hi_v = v;
        } else {
            cli_free_at_exit(lo_net);
            lo_net = net, lo = mid, lo_v = v;
        }
    }
    if (!lo_net) { /* the first rewrite: the model as the rewrites first see it */
        steplog g = {0};
        lo_net = replay(b, 0, &g);
        b->replays++;
        int d = lo_net && !same_prefix(b, &g, 0) ? compare(b, lo_net, &lo_v) : -1;
        steplog_free(&g);
        if (d < 0) goto done;
        if (d) {
            cli_error(b->model, "the outputs differ before the first rewrite (--shape)");
            goto done;
        }
    }
    const step *c = &b->full.v[hi - 1];
    printf("first rewrite after which the outputs differ: #%lld of %lld, %s at '%s' (%s)\n", (long long)hi,
           (long long)n, c->label, c->root, c->op);
    printf("  added %lld: %s\n  removed %lld: %s\n", (long long)c->nadded, c->added, (long long)c->nremoved,
           c->removed);
    printf("  before it (%lld rewrite%s): outputs match (max abs %g)\n", (long long)lo, lo == 1 ? "" : "s",
           lo_v.max_abs);
    if (hi_v.fails[0])
        printf("  after it: %s\n", hi_v.fails);
    else
        printf("  after it: '%s' differs, %lld of %lld elements beyond tolerance (max abs %g)\n", hi_v.worst,
               (long long)hi_v.nbad, (long long)hi_v.numel, hi_v.max_abs);
    printf("replays: %d (at most ceil(log2 %lld) + 2 = %d)\n", b->replays, (long long)n, ceil_log2(n) + 2);
    if (cli_mkdir_p(dir)) {
        char msg[300];
        snprintf(msg, sizeof msg, "cannot make the directory: %s", strerror(errno));
        cli_error(dir, msg);
        goto done;
    }
    if (save_in(dir, "before.onnx", lo_net) || save_in(dir, "after.onnx", hi_net)) goto done;
    printf("wrote %s/before.onnx (%lld rewrite%s) and %s/after.onnx (%lld)\n", dir, (long long)lo, lo == 1 ? "" : "s", dir,
           (long long)hi);
    rc = CLI_FAIL;
done:
    cli_free_at_exit(lo_net);
    cli_free_at_exit(hi_net);
    return rc;
}

/* --pattern labels, comma-joined into *list (malloc'd). */
static int add_label(char **list, const char *label) {
    size_t old = *list ? strlen(*list) : 0;
    char *s = realloc(*list, old + strlen(label) + 2);
    if (!s) return -1;
    snprintf(s + old, strlen(label) + 2, "%s%s", old ? "," : "", label);
    *list = s;
    return 0;
}

static int run(int argc, char **argv) {
    const char *in = NULL, *dir = "gwr-bisect", *rules_path = NULL;
    char *patterns = NULL;
    int with_opt = 0;
    bisect b = {.rtol = 1e-4, .atol = 1e-5};
    cli_input_spec spec = {0};
    gwr_rules *rules = NULL;
    gwr_network *net = NULL, *full = NULL;
    int rc = CLI_OK;
    for (int i = 1; i < argc && rc == CLI_OK; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (cli_input_option("bisect", argc, argv, &i, &spec, &rc)) continue;
        if (!strcmp(a, "--level")) {
            if (!v || cli_parse_level(v, &b.opt.level)) rc = cli_usage("bisect", "--level needs basic, extended or all");
            with_opt = 1, i++;
        } else if (!strcmp(a, "--target")) {
            if (!v || cli_parse_target(v, &b.opt.target)) rc = cli_usage("bisect", "--target needs onnx, ort or gwr");
            i++;
        } else if (!strcmp(a, "--opset")) {
            int64_t n = 0;
            const char *why = "missing";
            if (!v || cli_parse_opset(v, &n, &why))
                rc = cli_usage("bisect", "--opset '%s': %s; a positive integer", v ? v : "", why);
            b.opt.opset = n, with_opt = 1, i++;
        } else if (!strcmp(a, "--input-defaults")) {
            if (!v || cli_parse_input_defaults(v, &b.opt.input_defaults))
                rc = cli_usage("bisect", "--input-defaults needs auto, keep or fold");
            with_opt = 1, i++;
        } else if (!strcmp(a, "--only") || !strcmp(a, "--disable")) {
            if (!v || !*v) rc = cli_usage("bisect", "%s needs a comma-separated list of passes", a);
            else if (a[2] == 'o') b.opt.only = v;
            else b.opt.disable = v;
            with_opt = 1, i++;
        } else if (!strcmp(a, "--pattern") || !strcmp(a, "-p")) {
            if (!v) rc = cli_usage("bisect", "--pattern needs a label (see 'gwr rewrite --list')");
            else if (add_label(&patterns, v)) rc = cli_usage("bisect", "out of memory");
            i++;
        } else if (!strcmp(a, "--rules")) {
            if (!v) rc = cli_usage("bisect", "--rules needs a rules file");
            else if (rules_path) rc = cli_usage("bisect", "--rules given twice (one file; it may hold many rules)");
            rules_path = v, i++;
        } else if (!strcmp(a, "--debug")) {
            b.opt.debug = 1;
        } else if (!strcmp(a, "--rtol") || !strcmp(a, "--atol")) {
            char *end = NULL;
            double x = v ? strtod(v, &end) : -1;
            if (!v || *end || !(x >= 0)) rc = cli_usage("bisect", "%s needs a number >= 0, not '%s'", a, v ? v : "");
            else if (a[2] == 'r') b.rtol = x;
            else b.atol = x;
            i++;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!v) rc = cli_usage("bisect", "%s needs a directory", a);
            dir = v, i++;
        } else if (a[0] == '-' && a[1]) {
            rc = cli_usage("bisect", "unknown option or missing value: '%s'", a);
        } else if (!in) {
            in = a;
        } else {
            rc = cli_usage("bisect", "unexpected argument '%s': one MODEL only", a);
        }
    }
    if (rc) goto done;
    rc = CLI_USAGE;
    if (!in) {
        cli_usage("bisect", "missing MODEL");
        goto done;
    }
    if (patterns && with_opt) {
        cli_usage("bisect", "--pattern runs exactly the patterns named: not with --level, --only or --disable");
        goto done;
    }
    if (patterns) b.opt.only = patterns;
    if (rules_path) {
        if (cli_load_rules(rules_path, &rules)) goto done;
        b.opt.rules = rules;
    }
    b.model = in;
    gwr_onnx_load_options lo = {.copy_external_data = 1, .infer_shapes = 1};
    if (!(net = cli_load(in, &lo))) goto done;
    if ((rc = cli_make_inputs("bisect", net, &spec, &b.in)) || (rc = cli_shapes_apply(&spec.shapes, "bisect", in, net))) {
        rc = CLI_USAGE;
        goto done;
    }
    rc = CLI_USAGE;
    b.orig = net;
    b.opt.nbind = spec.shapes.nbind, b.opt.bind = spec.shapes.bind;
    if (!(full = replay(&b, -1, &b.full))) goto done;
    verdict v;
    int d = compare(&b, full, &v);
    if (d < 0) goto done;
    printf("bisect %s: the run makes %lld rewrite%s\n", in, (long long)b.full.n, b.full.n == 1 ? "" : "s");
    print_verdict("after all of them", &v);
    if (!d) {
        printf("nothing to bisect: no rewrite changed the outputs beyond tolerance (atol %g, rtol %g)\n", b.atol,
               b.rtol);
        rc = CLI_OK;
    } else if (!b.full.n) {
        cli_error(in, "the outputs differ with no rewrite made (--shape?): nothing to bisect");
    } else {
        rc = search(&b, full, &v, dir);
        full = NULL; /* the search frees it */
    }
done:
    cli_free_at_exit(full);
    cli_free_at_exit(net);
    cli_inputs_free(&b.in);
    steplog_free(&b.full);
    gwr_rules_free(rules);
    free(spec.files);
    cli_shapes_free(&spec.shapes);
    free(patterns);
    return rc;
}

const cli_command cli_bisect = {"bisect", "find the first rewrite of a run that changed the outputs", run, help};
