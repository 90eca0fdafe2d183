/* optimize.c - gwr_optimize: the passes of the table (registry.c) that the
 * level, the target and the --only/--disable lists select, in one rewrite
 * manager, each in its phase: the manager's run over a network offers the
 * layers the cleanup passes to a fixpoint, then fold's, fuse's, lower's,
 * kernel's, and the sequence again while a phase's changes touched layers
 * an earlier phase has not seen (rw_manager_set_phase); within a phase, in
 * table order (the benefit from the position). That run covers the network,
 * then every If/Loop/Scan body in it, body by body; again while the
 * rewrites make types known that were not (run_to_fixpoint). */
#include <stdlib.h>
#include <string.h>

#include "gwr/optimize.h"
#include "ir/ir_api.h"
#include "optimize_internal.h"
#include "passes/pass_util.h"
#include "rewrite/rewrite_api.h"

struct gwr_optimize_report {
    int n;
    gwr_optimize_pass *passes; /* one per entry of the pass table, in its order */
    int64_t before, after, networks;
    char shape_note[320]; /* fold_shape_dims's note */
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

/* Adds each stat of the last run to the report's entry of its label. */
static void add_stats(gwr_optimize_report *r, const gwr_rewrite_manager *m) {
    for (int k = 0; k < gwr_rewrite_manager_count(m); k++) {
        gwr_pattern_stats ps;
        if (gwr_rewrite_manager_stats(m, k, &ps)) continue;
        for (int i = 0; i < r->n; i++)
            if (!strcmp(r->passes[i].label, gwr_rewrite_manager_label(m, k))) {
                r->passes[i].attempts += ps.attempts;
                r->passes[i].matches += ps.matches;
                r->passes[i].rewrites += ps.rewrites;
            }
    }
}

/* Runs m on g, then on every body of g's live layers. */
static gwr_status run_on(gwr_rewrite_manager *m, gwr_network *root, gwr_network *g, const gwr_args *args,
                         gwr_optimize_report *r, int depth) {
    if (depth > 64) return gwr_ir_error(root, GWR_ERR_UNSUPPORTED, "gwr_optimize: bodies nested over 64 deep");
    r->networks++;
    gwr_status s = gwr_rewrite_manager_rewrite(m, g, args);
    add_stats(r, m);
    if (s) return gwr_ir_error(root, s, "%s", gwr_rewrite_manager_errmsg(m));
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
            for (int64_t k = 0; k < n; k++)
                if ((s = run_on(m, root, gs[k], args, r, depth + 1))) return s;
        }
    }
    return GWR_OK;
}

static int64_t total_rewrites(const gwr_optimize_report *r) {
    int64_t n = 0;
    for (int i = 0; i < r->n; i++) n += r->passes[i].rewrites;
    return n;
}

/* The manager's run over net and its bodies, again while a round's rewrites
 * made types known that inference could not see before (a Pad whose pads
 * were computed, folded into a constant: the dims below it), so that the
 * passes that need known dims (fold_shape_dims, compose_reshapes) fire in
 * this run rather than in a second optimize of the output. Bounded: each
 * round must rewrite something and refine some type. */
#define MAX_ROUNDS 8
static gwr_status run_to_fixpoint(gwr_rewrite_manager *m, gwr_network *net, const gwr_args *args,
                                  gwr_optimize_report *r) {
    int64_t networks = 0;
    for (int round = 0; round < MAX_ROUNDS; round++) {
        int64_t before = total_rewrites(r);
        gwr_status s = run_on(m, net, net, args, r, 0);
        if (!round) networks = r->networks;
        r->networks = networks; /* the networks, not the visits */
        if (s) return s;
        if (round && total_rewrites(r) == before) break;
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
    gwr_rewrite_options ro = {.debug = o->debug, .interrupt = o->interrupt, .interrupt_ctx = o->interrupt_ctx,
                              .provenance = o->provenance};
    return gwr_rewrite_manager_set_options(m, &ro);
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
