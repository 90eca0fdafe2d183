/* optimize.c - gwr_optimize: the passes of the table (registry.c) that the
 * level, the target and the --only/--disable lists select, in one rewrite
 * manager, each in its phase: the manager's run over a network offers the
 * layers the cleanup passes to a fixpoint, then fold's, fuse's, lower's,
 * kernel's, and the sequence again while a phase's changes touched layers
 * an earlier phase has not seen (rw_manager_set_phase); within a phase, in
 * table order (the benefit from the position). That run covers the network,
 * then every If/Loop/Scan body in it, body by body; again while the
 * rewrites make types known that were not (run_to_fixpoint).
 *
 * The report keeps, per round, each pass's counters (the manager's stats,
 * summed over the networks) and the layers its rewrites added and removed
 * (a listener's pattern_applied events), for the profile (`gwr optimize
 * --profile`). The same listener counts the rewrites of the whole run, so
 * that stop_after stops the manager at the K-th of them wherever it falls
 * (gwr_rewrite_options.stop_after with what is left) and the rounds and
 * bodies after it are not run: a replay of the first K rewrites. */
#include <stdlib.h>
#include <string.h>

#include "gwr/optimize.h"
#include "ir/ir_api.h"
#include "optimize_internal.h"
#include "passes/pass_util.h"
#include "rewrite/rewrite_api.h"

#define MAX_ROUNDS 8

struct gwr_optimize_report {
    int n;
    gwr_optimize_pass *passes; /* one per entry of the pass table, in its order */
    int64_t before, after, networks;
    char shape_note[320]; /* fold_shape_dims's note */
    /* The rounds, and n counters per round (round k's at k * n). */
    gwr_optimize_round rounds[MAX_ROUNDS];
    gwr_optimize_pass_round *per_round;
    int nrounds;
    double t0;
    /* The whole run's rewrites; stop at `stop` (-1: never). */
    int64_t rewrites, stop;
    int stopped;
    gwr_rewrite_options ro;    /* the manager's options (stop_after set per run) */
    gwr_rewrite_listener user; /* the caller's listener (pattern_applied forwarded renumbered) */
    const char *last_label;    /* a cache of pass_index */
    int last_index;
};

/* Is `label` one of the comma-separated tokens of list? */
static int in_list(const char *list, const char *label) {
    size_t n = strlen(label);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, label, n)) return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

static int known_label(const char *tok, size_t len) {
    for (int i = 0; i < gwr_passes_count(); i++) {
        const char *l = gwr_passes_label(i);
        if (strlen(l) == len && !strncmp(l, tok, len)) return 1;
    }
    return 0;
}

/* Every token of list names a pass of the table. */
static gwr_status check_list(gwr_network *net, const char *list, const char *what) {
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (!known_label(p, len))
            return gwr_ir_error(net, GWR_ERR_NOT_FOUND, "gwr_optimize: %s names no pass '%.*s' (gwr rewrite --list)",
                                what, (int)len, p);
        p = e ? e + 1 : NULL;
    }
    return GWR_OK;
}

static const char *target_name(unsigned t) {
    return t == GWR_TARGET_ONNX ? "onnx" : t == GWR_TARGET_ORT ? "ort" : "gwr";
}

/* Why pass p does not run under these options, or NULL when it does.
 * GWR_ERR_INVALID_ARG in *st for an --only pass that cannot serve the
 * target. */
static const char *skip_reason(gwr_network *net, const gwr_pass_info *p, gwr_pass_level level, unsigned target,
                               const gwr_optimize_options *o, gwr_status *st) {
    if (o->only) {
        if (!in_list(o->only, p->label)) return "not in the --only list";
        if (!(p->targets & target))
            *st = gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_optimize: pass '%s' does not serve target %s", p->label,
                               target_name(target));
    } else if (p->level == GWR_LEVEL_NONE) {
        return "not an optimization (a tutorial pattern)";
    } else if (gwr_pass_level_for(p, target) > level) {
        return gwr_pass_level_for(p, target) == GWR_LEVEL_ALL ? "level all" : "level extended";
    } else if (!(p->targets & target)) {
        return target == GWR_TARGET_ONNX ? "not for target onnx" : target == GWR_TARGET_ORT ? "not for target ort"
                                                                                            : "not for target gwr";
    }
    if (o->disable && in_list(o->disable, p->label)) return "disabled";
    if (p->pattern == &gwr_pattern_fold_input_defaults) {
        if (o->input_defaults == GWR_INPUT_DEFAULTS_KEEP) return "input_defaults keep";
        if (o->input_defaults == GWR_INPUT_DEFAULTS_AUTO && target != GWR_TARGET_ONNX && !o->only)
            return target == GWR_TARGET_ORT ? "target ort keeps initializers listed as inputs overridable "
                                              "(onnxruntime's rule; input_defaults fold)"
                                            : "target gwr keeps initializers listed as inputs overridable "
                                              "(input_defaults fold)";
    }
    return NULL;
}

/* The report's entry of a manager label, or -1. */
static int pass_index(gwr_optimize_report *r, const char *label) {
    if (label == r->last_label) return r->last_index;
    for (int i = 0; i < r->n; i++)
        if (r->passes[i].label && !strcmp(r->passes[i].label, label)) {
            r->last_label = label;
            return r->last_index = i;
        }
    return -1;
}

/* The current round's counters of entry i. */
static gwr_optimize_pass_round *round_pass(gwr_optimize_report *r, int i) {
    return &r->per_round[(size_t)(r->nrounds - 1) * (size_t)r->n + (size_t)i];
}

/* Adds each stat of the last run to the report's entry of its label and
 * to the current round's. */
static void add_stats(gwr_optimize_report *r, const gwr_rewrite_manager *m) {
    for (int k = 0; k < gwr_rewrite_manager_count(m); k++) {
        gwr_pattern_stats ps;
        if (gwr_rewrite_manager_stats(m, k, &ps)) continue;
        int i = pass_index(r, gwr_rewrite_manager_label(m, k));
        if (i < 0) continue;
        r->passes[i].attempts += ps.attempts;
        r->passes[i].matches += ps.matches;
        r->passes[i].rewrites += ps.rewrites;
        gwr_optimize_pass_round *pr = round_pass(r, i);
        pr->attempts += ps.attempts;
        pr->matches += ps.matches;
        pr->rewrites += ps.rewrites;
        pr->seconds += ps.seconds;
    }
}

/* The manager's listener: counts the run's rewrites and each pass's layers
 * added and removed; hands the caller's listener the event numbered over
 * the whole run. */
static void on_applied(void *ctx, const gwr_rewrite_event *e) {
    gwr_optimize_report *r = ctx;
    r->rewrites++;
    int i = pass_index(r, e->label);
    if (i >= 0) {
        gwr_optimize_pass_round *pr = round_pass(r, i);
        pr->layers_added += e->nadded;
        pr->layers_removed += e->nremoved;
    }
    r->rounds[r->nrounds - 1].rewrites++;
    if (r->user.pattern_applied) {
        gwr_rewrite_event g = *e;
        g.seq = r->rewrites;
        r->user.pattern_applied(r->user.ctx, &g);
    }
}

/* Runs m on g, then on every body of g's live layers. */
static gwr_status run_on(gwr_rewrite_manager *m, gwr_network *root, gwr_network *g, const gwr_args *args,
                         gwr_optimize_report *r, int depth) {
    if (depth > 64) return gwr_ir_error(root, GWR_ERR_UNSUPPORTED, "gwr_optimize: bodies nested over 64 deep");
    r->networks++;
    if (r->stop >= 0) { /* what is left of stop_after */
        if (r->rewrites >= r->stop) return r->stopped = 1, GWR_OK;
        r->ro.stop_after = r->stop - r->rewrites;
        gwr_rewrite_manager_set_options(m, &r->ro);
    }
    gwr_status s = gwr_rewrite_manager_rewrite(m, g, args);
    add_stats(r, m);
    if (s) return gwr_ir_error(root, s, "%s", gwr_rewrite_manager_errmsg(m));
    gwr_rewrite_summary sum;
    if (!gwr_rewrite_manager_summary(m, &sum) && sum.stopped) return r->stopped = 1, GWR_OK;
    for (int64_t i = 0; i < gwr_network_num_layers(g); i++) {
        gwr_layer *l = gwr_network_layer(g, i);
        if (gwr_layer_is_removed(l)) continue;
        for (int a = 0; a < gwr_layer_num_attrs(l); a++) {
            gwr_attr_type t = gwr_layer_attr_type(l, a);
            gwr_network *const *gs = NULL;
            gwr_network *one = NULL;
            int64_t n = 0;
            if (t == GWR_ATTR_GRAPH && !gwr_layer_get_graph(l, gwr_layer_attr_name(l, a), &one)) gs = &one, n = 1;
            else if (t == GWR_ATTR_GRAPHS) gwr_layer_get_graphs(l, gwr_layer_attr_name(l, a), &gs, &n);
            for (int64_t k = 0; k < n && !r->stopped; k++)
                if ((s = run_on(m, root, gs[k], args, r, depth + 1))) return s;
            if (r->stopped) return GWR_OK;
        }
    }
    return GWR_OK;
}

/* The manager's run over net and its bodies, again while a round's rewrites
 * made types known that inference could not see before (a Pad whose pads
 * were computed, folded into a constant: the dims below it), so that the
 * passes that need known dims (fold_shape_dims, compose_reshapes) fire in
 * this run rather than in a second optimize of the output. Bounded: each
 * round must rewrite something and refine some type. */
static gwr_status run_to_fixpoint(gwr_rewrite_manager *m, gwr_network *net, const gwr_args *args,
                                  gwr_optimize_report *r) {
    int64_t networks = 0;
    r->t0 = rw_now();
    for (int round = 0; round < MAX_ROUNDS; round++) {
        gwr_optimize_round *rd = &r->rounds[r->nrounds++];
        rd->start = rw_now() - r->t0;
        rd->layers_before = gwr_network_num_live_layers(net);
        gwr_status s = run_on(m, net, net, args, r, 0);
        rd->seconds = rw_now() - r->t0 - rd->start;
        rd->layers_after = gwr_network_num_live_layers(net);
        if (!round) networks = r->networks;
        r->networks = networks; /* the networks, not the visits */
        if (s || r->stopped) return s;
        if (round && !rd->rewrites) break;
        int64_t refined = gwr_opt_refine_types(net);
        if (refined < 0) return gwr_ir_error(net, GWR_ERR_NOMEM, "gwr_optimize: out of memory");
        if (!refined) break;
    }
    return GWR_OK;
}

static gwr_status check_options(gwr_network *net, const gwr_optimize_options *o) {
    if ((unsigned)o->level > GWR_LEVEL_ALL)
        return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_optimize: level %d is not basic, extended or all", (int)o->level);
    if (o->target != 0 && o->target != GWR_TARGET_ONNX && o->target != GWR_TARGET_ORT && o->target != GWR_TARGET_GWR)
        return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_optimize: the target must be one of onnx, ort, gwr");
    if (o->nbind < 0 || (o->nbind && !o->bind))
        return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_optimize: bad dim bindings");
    for (int k = 0; k < o->nbind; k++)
        if (!o->bind[k].name || !*o->bind[k].name || o->bind[k].value < 0)
            return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_optimize: binding %d: a symbol name and a value >= 0", k);
    if ((unsigned)o->input_defaults > GWR_INPUT_DEFAULTS_FOLD)
        return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_optimize: input_defaults %d is not auto, keep or fold",
                            (int)o->input_defaults);
    gwr_status s = check_list(net, o->only, "the --only list");
    return s ? s : check_list(net, o->disable, "the --disable list");
}

/* A report with an entry per pass, and the manager with the passes that
 * run. */
static gwr_status plan(gwr_network *net, const gwr_optimize_options *o, gwr_optimize_report *r,
                       gwr_rewrite_manager *m) {
    gwr_pass_level level = o->level ? o->level : GWR_LEVEL_EXTENDED;
    unsigned target = o->target ? o->target : GWR_TARGET_ONNX;
    int npasses = gwr_passes_count();
    for (int i = 0; i < npasses; i++) {
        const gwr_pass_info *p = gwr_passes_info(i);
        gwr_status s = GWR_OK;
        r->passes[i].label = p->label;
        r->passes[i].skipped = skip_reason(net, p, level, target, o, &s);
        if (s) return s;
        if (!r->passes[i].skipped && ((s = gwr_rewrite_manager_add(m, p->label, p->pattern, gwr_passes_benefit(i))) ||
                                      (s = rw_manager_set_phase(m, p->label, (int)p->phase))))
            return gwr_ir_error(net, s, "gwr_optimize: %s", gwr_rewrite_manager_errmsg(m));
    }
    /* Rules run with the passes; their report entries follow. */
    for (int i = npasses; i < r->n; i++) r->passes[i].label = gwr_rules_name(o->rules, i - npasses);
    gwr_status rs = o->rules ? gwr_rules_add_to(o->rules, m) : GWR_OK;
    if (rs) return gwr_ir_error(net, rs, "gwr_optimize: %s", gwr_last_errmsg());
    gwr_rewrite_listener mine = {.pattern_applied = on_applied, .ctx = r};
    if (gwr_rewrite_manager_add_listener(m, &mine) < 0)
        return gwr_ir_error(net, GWR_ERR_NOMEM, "gwr_optimize: %s", gwr_rewrite_manager_errmsg(m));
    if (o->listener) { /* its other callbacks straight from the manager */
        r->user = *o->listener;
        gwr_rewrite_listener theirs = *o->listener;
        theirs.pattern_applied = NULL;
        if (gwr_rewrite_manager_add_listener(m, &theirs) < 0)
            return gwr_ir_error(net, GWR_ERR_NOMEM, "gwr_optimize: %s", gwr_rewrite_manager_errmsg(m));
    }
    r->stop = o->stop_after > 0 ? o->stop_after : o->stop_after < 0 ? 0 : -1;
    r->ro = (gwr_rewrite_options){.debug = o->debug, .interrupt = o->interrupt, .interrupt_ctx = o->interrupt_ctx,
                                  .time_patterns = o->profile, .provenance = o->provenance};
    return gwr_rewrite_manager_set_options(m, &r->ro);
}

/* fold_shape_dims's entry, when it ran: the Reshapes it had to leave. */
static void note_shapes(gwr_optimize_report *r, gwr_network *net) {
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->passes[i].label, "fold_shape_dims") && !r->passes[i].skipped) {
            gwr_opt_dynamic_note(net, r->shape_note, sizeof r->shape_note);
            if (r->shape_note[0]) r->passes[i].note = r->shape_note;
        }
}

/* When fold_input_defaults ran, the defaulted inputs nothing reads go
 * too; counted as its rewrites. */
static gwr_status drop_unread_defaults(gwr_network *net, gwr_optimize_report *r) {
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->passes[i].label, "fold_input_defaults") && !r->passes[i].skipped) {
            int64_t n = gwr_opt_drop_unread_defaults(net);
            if (n < 0) return gwr_ir_error(net, GWR_ERR_STATE, "gwr_optimize: %s", gwr_network_errmsg(net));
            r->passes[i].rewrites += n;
        }
    return GWR_OK;
}

/* Manager arg "fuse_qdq": which of fuse_qdq / fuse_qdq_conv are planned
 * (GWR_PS_QDQ_* bits), so that fold_constants leaves them the quantized
 * weights they take (fold.c). */
static gwr_status mark_qdq(gwr_args *args, const gwr_optimize_report *r) {
    int64_t which = 0;
    for (int i = 0; i < r->n; i++)
        if (r->passes[i].label && !r->passes[i].skipped)
            which |= !strcmp(r->passes[i].label, "fuse_qdq")        ? GWR_PS_QDQ_MATMUL
                     : !strcmp(r->passes[i].label, "fuse_qdq_conv") ? GWR_PS_QDQ_CONV
                                                                    : 0;
    return which ? gwr_args_set_int(args, "fuse_qdq", which) : GWR_OK;
}

gwr_status gwr_optimize(gwr_network *net, const gwr_optimize_options *opt, gwr_optimize_report **report) {
    static const gwr_optimize_options defaults;
    const gwr_optimize_options *o = opt ? opt : &defaults;
    if (report) *report = NULL;
    if (!net) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_optimize: NULL network");
    gwr_status s = check_options(net, o);
    if (s) return s;
    gwr_optimize_report *r = gwr_calloc(1, sizeof *r);
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    /* The passes read the target from the manager's args. */
    gwr_args *args = gwr_args_new();
    if (r) r->n = gwr_passes_count() + gwr_rules_count(o->rules);
    if (!r || !m || !args || !(r->passes = gwr_calloc((size_t)r->n + 1, sizeof *r->passes)) ||
        !(r->per_round = gwr_calloc((size_t)MAX_ROUNDS * (size_t)r->n + 1, sizeof *r->per_round)) ||
        gwr_args_set_int(args, "target", o->target ? (int64_t)o->target : GWR_TARGET_ONNX)) {
        s = gwr_ir_error(net, GWR_ERR_NOMEM, "gwr_optimize: out of memory");
    } else if (!(s = plan(net, o, r, m)) && !(s = o->opset ? gwr_opt_raise_opset(net, o->opset) : GWR_OK) &&
               !(s = gwr_opt_bind_dims(net, o->bind, o->nbind))) {
        gwr_opt_guard *guard = gwr_opt_guard_take(net);
        r->before = gwr_network_num_live_layers(net);
        if (!guard || mark_qdq(args, r)) s = gwr_ir_error(net, GWR_ERR_NOMEM, "gwr_optimize: out of memory");
        else if (!(s = run_to_fixpoint(m, net, args, r)) && !(s = drop_unread_defaults(net, r)))
            s = gwr_opt_guard_check(guard, net);
        r->after = gwr_network_num_live_layers(net);
        note_shapes(r, net);
        gwr_opt_guard_free(guard);
    }
    gwr_args_free(args);
    gwr_rewrite_manager_free(m);
    if (r && r->passes && (!s || r->networks) && report) *report = r;
    else gwr_optimize_report_free(r);
    return s;
}

void gwr_optimize_report_free(gwr_optimize_report *r) {
    if (!r) return;
    gwr_free(r->passes);
    gwr_free(r->per_round);
    gwr_free(r);
}

int gwr_optimize_report_count(const gwr_optimize_report *r) { return r ? r->n : 0; }

const gwr_optimize_pass *gwr_optimize_report_pass(const gwr_optimize_report *r, int i) {
    return r && i >= 0 && i < r->n ? &r->passes[i] : NULL;
}

void gwr_optimize_report_layers(const gwr_optimize_report *r, int64_t *before, int64_t *after, int64_t *networks) {
    if (before) *before = r ? r->before : 0;
    if (after) *after = r ? r->after : 0;
    if (networks) *networks = r ? r->networks : 0;
}

void gwr_optimize_report_print(const gwr_optimize_report *r, FILE *out) {
    if (!r || !out) return;
    fprintf(out, "%-30s %9s %9s %9s  %s\n", "pass", "attempts", "matches", "rewrites", "");
    for (int i = 0; i < r->n; i++) {
        const gwr_optimize_pass *p = &r->passes[i];
        if (p->skipped)
            fprintf(out, "%-30s %9s %9s %9s  skipped: %s\n", p->label, "-", "-", "-", p->skipped);
        else
            fprintf(out, "%-30s %9lld %9lld %9lld%s%s\n", p->label, (long long)p->attempts, (long long)p->matches,
                    (long long)p->rewrites, p->note ? "  skipped: " : "", p->note ? p->note : "");
    }
    fprintf(out, "layers %lld -> %lld (%lld network%s)\n", (long long)r->before, (long long)r->after,
            (long long)r->networks, r->networks == 1 ? "" : "s");
}

int64_t gwr_optimize_report_rewrites(const gwr_optimize_report *r) { return r ? r->rewrites : 0; }

int gwr_optimize_report_stopped(const gwr_optimize_report *r) { return r ? r->stopped : 0; }

int gwr_optimize_report_rounds(const gwr_optimize_report *r) { return r ? r->nrounds : 0; }

const gwr_optimize_round *gwr_optimize_report_round(const gwr_optimize_report *r, int round) {
    return r && round >= 0 && round < r->nrounds ? &r->rounds[round] : NULL;
}

const gwr_optimize_pass_round *gwr_optimize_report_round_pass(const gwr_optimize_report *r, int round, int i) {
    if (!r || round < 0 || round >= r->nrounds || i < 0 || i >= r->n) return NULL;
    return &r->per_round[(size_t)round * (size_t)r->n + (size_t)i];
}

static void counter(FILE *out, double t, int64_t layers) {
    fprintf(out, ",\n{\"name\":\"layers\",\"cat\":\"layers\",\"ph\":\"C\",\"ts\":%.3f,\"pid\":1,\"tid\":0,"
                 "\"args\":{\"layers\":%lld}}",
            t * 1e6, (long long)layers);
}

gwr_status gwr_optimize_report_write_trace(const gwr_optimize_report *r, FILE *out) {
    if (!r || !out) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_optimize_report_write_trace: NULL argument");
    fputs("{\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"gwr optimize\"}}",
          out);
    counter(out, 0, r->nrounds ? r->rounds[0].layers_before : r->before);
    for (int k = 0; k < r->nrounds; k++) {
        const gwr_optimize_round *rd = &r->rounds[k];
        fprintf(out,
                ",\n{\"name\":\"round %d\",\"cat\":\"round\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":1,\"tid\":0,"
                "\"args\":{\"round\":%d,\"rewrites\":%lld,\"layers_before\":%lld,\"layers_after\":%lld}}",
                k, rd->start * 1e6, rd->seconds * 1e6, k, (long long)rd->rewrites, (long long)rd->layers_before,
                (long long)rd->layers_after);
        double t = rd->start;
        for (int i = 0; i < r->n; i++) {
            if (r->passes[i].skipped) continue;
            const gwr_optimize_pass_round *p = &r->per_round[(size_t)k * (size_t)r->n + (size_t)i];
            fputs(",\n{\"name\":", out);
            gwr_json_str(out, r->passes[i].label, strlen(r->passes[i].label));
            fprintf(out,
                    ",\"cat\":\"pass\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":1,\"tid\":1,\"args\":{\"round\":%d,"
                    "\"rewrites\":%lld,\"matches\":%lld,\"attempts\":%lld,\"layers_removed\":%lld,\"layers_added\":%lld}}",
                    t * 1e6, p->seconds * 1e6, k, (long long)p->rewrites, (long long)p->matches, (long long)p->attempts,
                    (long long)p->layers_removed, (long long)p->layers_added);
            t += p->seconds;
        }
        counter(out, rd->start + rd->seconds, rd->layers_after);
    }
    fputs("\n],\"displayTimeUnit\":\"ms\"}\n", out);
    return ferror(out) ? gwr_set_last_error(GWR_ERR_IO, "gwr_optimize_report_write_trace: cannot write") : GWR_OK;
}
