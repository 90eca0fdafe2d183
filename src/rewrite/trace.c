/* trace.c - the trace listener (text or JSON lines) and the statistics
 * table of a rewrite manager. */
#include <stdlib.h>
#include <string.h>

#include "rewrite/rewrite_internal.h"

int rw_manager_keep(gwr_rewrite_manager *m, void *state);

typedef struct trace {
    FILE *out;
    gwr_trace_format fmt;
} trace;

static void json_str(FILE *f, const char *s) { gwr_json_str(f, s, strlen(s)); }

static void json_layers(FILE *f, const char *key, gwr_layer *const *v, int64_t n) {
    fprintf(f, ",\"%s\":[", key);
    for (int64_t i = 0; i < n; i++) {
        if (i) fputc(',', f);
        json_str(f, gwr_layer_name(v[i]));
    }
    fputc(']', f);
}

static void trace_applied(void *ctx, const gwr_rewrite_event *e) {
    trace *t = ctx;
    FILE *f = t->out;
    if (t->fmt == GWR_TRACE_JSON) {
        fprintf(f, "{\"event\":\"rewrite\",\"seq\":%lld,\"label\":", (long long)e->seq);
        json_str(f, e->label);
        fputs(",\"root\":", f);
        json_str(f, gwr_layer_name(e->root));
        fputs(",\"op\":", f);
        json_str(f, gwr_layer_op(e->root));
        json_layers(f, "added", e->added, e->nadded);
        json_layers(f, "removed", e->removed, e->nremoved);
        fprintf(f, ",\"replaced\":%lld,\"modified\":%lld}\n", (long long)e->nreplaced, (long long)e->nmodified);
        return;
    }
    fprintf(f, "#%lld %s at '%s' (%s):", (long long)e->seq, e->label, gwr_layer_name(e->root),
            gwr_layer_op(e->root));
    for (int64_t i = 0; i < e->nadded; i++) fprintf(f, " +%s", gwr_layer_name(e->added[i]));
    for (int64_t i = 0; i < e->nremoved; i++) fprintf(f, " -%s", gwr_layer_name(e->removed[i]));
    if (e->nmodified) fprintf(f, " ~%lld edit%s", (long long)e->nmodified, e->nmodified == 1 ? "" : "s");
    fputc('\n', f);
}

static void trace_failed(void *ctx, const char *label, gwr_layer *root, const char *reason) {
    trace *t = ctx;
    FILE *f = t->out;
    if (t->fmt == GWR_TRACE_JSON) {
        fputs("{\"event\":\"no_match\",\"label\":", f);
        json_str(f, label);
        fputs(",\"root\":", f);
        json_str(f, gwr_layer_name(root));
        fputs(",\"reason\":", f);
        json_str(f, reason);
        fputs("}\n", f);
        return;
    }
    fprintf(f, "   %s does not match '%s'%s%s\n", label, gwr_layer_name(root), *reason ? ": " : "", reason);
}

int gwr_rewrite_manager_trace(gwr_rewrite_manager *m, FILE *out, gwr_trace_format fmt, int failures) {
    if (!m || !out || (fmt != GWR_TRACE_TEXT && fmt != GWR_TRACE_JSON)) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_rewrite_manager_trace: bad argument");
        return -1;
    }
    trace *t = gwr_malloc(sizeof *t);
    if (!t) return -1;
    t->out = out;
    t->fmt = fmt;
    gwr_rewrite_listener ls = {.pattern_applied = trace_applied, .match_failed = failures ? trace_failed : NULL, .ctx = t};
    if (rw_manager_keep(m, t)) {
        gwr_free(t);
        return -1;
    }
    return gwr_rewrite_manager_add_listener(m, &ls);
}

void gwr_rewrite_manager_print_stats(const gwr_rewrite_manager *m, FILE *out) {
    if (!m || !out) return;
    gwr_rewrite_summary s;
    gwr_rewrite_manager_summary(m, &s);
    int w = 7;
    for (int i = 0; i < gwr_rewrite_manager_count(m); i++) {
        int n = (int)strlen(gwr_rewrite_manager_label(m, i));
        if (n > w) w = n;
    }
    fprintf(out, "%-*s %7s %10s %9s %9s %10s\n", w, "pattern", "benefit", "attempts", "matches", "rewrites", "time ms");
    for (int i = 0; i < gwr_rewrite_manager_count(m); i++) {
        gwr_pattern_stats p;
        gwr_rewrite_manager_stats(m, i, &p);
        fprintf(out, "%-*s %7d %10lld %9lld %9lld %10.3f\n", w, gwr_rewrite_manager_label(m, i),
                gwr_rewrite_manager_benefit(m, i), (long long)p.attempts, (long long)p.matches, (long long)p.rewrites,
                p.seconds * 1e3);
    }
    fprintf(out, "%lld layers visited, %lld rewrites, %lld -> %lld live layers (%lld pruned), %s, %.3f ms\n",
            (long long)s.visited, (long long)s.rewrites, (long long)s.layers_before, (long long)s.layers_after,
            (long long)s.pruned, s.converged ? "converged" : "stopped", s.seconds * 1e3);
}
