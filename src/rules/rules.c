/* rules.c - the public API of gwr/rules.h: parse, compile, and run each
 * rule as a pattern rewriter. A rule's rewriter does the gate of its
 * header (the manager arg "target", the model's default-domain opset, the
 * replacement's ops existing at that opset), then tries its tables in
 * order (one per combination of alternatives); the first match is
 * rewritten. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gwr/passes.h"
#include "rewrite/rewrite_api.h"
#include "rules/rules_internal.h"

/* The root node's predicate: what a table cannot say (eval.c). */
static int root_pred(const gwr_match *m, int node, void *user) {
    (void)node;
    gwr_rl_table *t = user;
    rl_env env = {.t = t, .m = m, .why = t->rule->why, .why_size = sizeof t->rule->why};
    t->rule->why[0] = 0;
    int ok = rl_check_match(&env);
    rl_arena_free(&env.tmp);
    return ok > 0;
}

/* Compiled tables get their callbacks, then each rule the instance check. */
static gwr_status finish(gwr_rules *set, rl_error *e) {
    for (int i = 0; i < set->nrules; i++)
        for (int k = 0; k < set->rules[i].ntables; k++) {
            gwr_rl_table *t = &set->rules[i].tables[k];
            t->nodes[t->pat.nnodes - 1].pred = root_pred;
            t->pat.rewrite = rl_rewrite;
        }
    set->order = rl_alloc(&set->arena, (size_t)(set->nrules + 1) * sizeof *set->order);
    if (!set->order) return rl_fail(e, 1, 1, "out of memory");
    for (int i = 0; i < set->nrules; i++) { /* insertion sort: stable, higher benefit first */
        int k = i;
        while (k > 0 && set->rules[set->order[k - 1]].benefit < set->rules[i].benefit) set->order[k] = set->order[k - 1], k--;
        set->order[k] = i;
    }
    for (int i = 0; i < set->nrules; i++) {
        gwr_status s = rl_check_instance(set, i, e);
        if (s) return s;
    }
    return GWR_OK;
}

/* ---- parsing ------------------------------------------------------------------------------ */

gwr_status gwr_rules_parse(const char *text, const char *filename, gwr_rules **out) {
    if (out) *out = NULL;
    if (!text || !out) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_rules_parse: NULL %s", text ? "out" : "text");
    gwr_rules *set = gwr_calloc(1, sizeof *set);
    if (!set) return gwr_set_last_error(GWR_ERR_NOMEM, "gwr_rules_parse: out of memory");
    size_t n = strlen(text);
    char *copy = rl_strndup(&set->arena, text, n);
    const char *fn = filename ? filename : "<string>";
    char *fcopy = rl_strndup(&set->arena, fn, strlen(fn));
    if (!copy || !fcopy) {
        gwr_rules_free(set);
        return gwr_set_last_error(GWR_ERR_NOMEM, "gwr_rules_parse: out of memory");
    }
    set->text = copy, set->filename = fcopy;
    rl_error e = {0};
    gwr_status s = rl_parse(set, &e);
    if (!s) s = rl_compile(set, &e);
    if (!s) s = finish(set, &e);
    if (s) {
        if (e.line) rl_error_finish(&e, copy, fcopy);
        else gwr_set_last_error(s, "%s: %s", fn, gwr_last_errmsg());
        gwr_rules_free(set);
        return GWR_ERR_PARSE;
    }
    *out = set;
    return GWR_OK;
}

gwr_status gwr_rules_parse_file(const char *path, gwr_rules **out) {
    if (out) *out = NULL;
    if (!path || !out) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_rules_parse_file: NULL %s", path ? "out" : "path");
    FILE *f = fopen(path, "rb");
    if (!f) return gwr_set_last_error(GWR_ERR_IO, "%s: cannot open the rules file", path);
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (cap - len < 4096) {
            char *nb = gwr_realloc(buf, cap * 2 + 8192);
            if (!nb) {
                gwr_free(buf);
                fclose(f);
                return gwr_set_last_error(GWR_ERR_NOMEM, "%s: out of memory", path);
            }
            buf = nb, cap = cap * 2 + 8192;
        }
        size_t k = fread(buf + len, 1, cap - len - 1, f);
        len += k;
        if (!k) break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        gwr_free(buf);
        return gwr_set_last_error(GWR_ERR_IO, "%s: cannot read the rules file", path);
    }
    buf[len] = 0;
    if (strlen(buf) != len) {
        gwr_free(buf);
        return gwr_set_last_error(GWR_ERR_PARSE, "%s: a rules file is text (it holds a NUL byte)", path);
    }
    gwr_status s = gwr_rules_parse(buf, path, out);
    gwr_free(buf);
    return s;
}

void gwr_rules_free(gwr_rules *r) {
    if (!r) return;
    rl_arena_free(&r->arena);
    gwr_free(r);
}

int gwr_rules_count(const gwr_rules *r) { return r ? r->nrules : 0; }

static const gwr_rl_rule *rule_at(const gwr_rules *r, int i) { return r && i >= 0 && i < r->nrules ? &r->rules[i] : NULL; }

const char *gwr_rules_name(const gwr_rules *r, int i) {
    const gwr_rl_rule *x = rule_at(r, i);
    return x ? x->name : NULL;
}

int gwr_rules_benefit(const gwr_rules *r, int i) {
    const gwr_rl_rule *x = rule_at(r, i);
    return x ? x->benefit : 0;
}

double gwr_rules_tolerance(const gwr_rules *r, int i) {
    const gwr_rl_rule *x = rule_at(r, i);
    return x ? x->tol : 0;
}

/* ---- running ------------------------------------------------------------------------------ */

/* The first replacement op the model's opset lacks, or NULL. */
static const char *missing_op(const rl_expr *x, int64_t opset) {
    if (x->kind != RL_OP) return NULL;
    const char *q = x->ops[0];
    if (!strstr(q, "::")) {
        const gwr_op_info *info = gwr_op_info_get(gwr_op_lookup("", q));
        if (info && info->since_version > opset) return q;
    }
    for (int i = 0; i < x->na; i++) {
        const char *m = missing_op(x->a[i], opset);
        if (m) return m;
    }
    return NULL;
}

static int run_rule(gwr_rl_rule *r, gwr_rewrite_ctx *c, gwr_layer *l) {
    if (r->targets) {
        int64_t t = gwr_match_target(c);
        if (!((unsigned)t & r->targets)) return gwr_rewrite_no_match(c, "rule '%s' does not serve this target", r->name);
    }
    int64_t opset = gwr_match_opset(l);
    if (opset > 0) {
        if (r->opset && opset < r->opset) return gwr_rewrite_no_match(c, "rule '%s' needs opset %d, the model has %lld", r->name, r->opset, (long long)opset);
        /* A rule for target gwr alone writes any op at any opset (gwr's executor runs every op it has). */
        const char *op = r->targets == GWR_TARGET_GWR ? NULL : missing_op(r->repl, opset);
        if (op) return gwr_rewrite_no_match(c, "%s is not in opset %lld", op, (long long)opset);
    }
    char first[300] = "";
    for (int i = 0; i < r->ntables; i++) {
        gwr_match m;
        r->why[0] = 0;
        int k = gwr_match_layer(&r->tables[i].pat, l, &m);
        if (k < 0) return gwr_rewrite_fail(c, (gwr_status)-k, "%s", gwr_last_errmsg());
        if (k) return rl_rewrite(c, &m);
        if (!i) {
            if (r->why[0]) snprintf(first, sizeof first, "%s", r->why);
            else gwr_match_why(&m, first, sizeof first);
        }
    }
    return gwr_rewrite_no_match(c, "%s", first);
}

static int match_and_rewrite(gwr_rewrite_ctx *c, gwr_layer *l) { return run_rule(gwr_rewrite_ctx_user(c), c, l); }

int gwr_rl_run_all(const gwr_rules *set, gwr_rewrite_ctx *c, gwr_layer *l) {
    for (int k = 0; set && k < set->nrules; k++) {
        gwr_rl_rule *r = &set->rules[set->order[k]];
        int rooted = 0;
        for (int j = 0; r->root_ops[j] && !rooted; j++) rooted = gwr_match_is_op(l, r->root_ops[j]);
        if (!rooted) continue;
        int res = run_rule(r, c, l);
        if (res) return res;
    }
    return 0;
}

gwr_status gwr_rules_rewriter(const gwr_rules *set, int i, gwr_pattern_rewriter *out) {
    const gwr_rl_rule *r = rule_at(set, i);
    if (!r || !out) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_rules_rewriter: %s", out ? "no such rule" : "NULL out");
    memset(out, 0, sizeof *out);
    out->name = r->name;
    out->root_ops = r->root_ops;
    out->match_and_rewrite = match_and_rewrite;
    out->user = (void *)r;
    return GWR_OK;
}

gwr_status gwr_rules_add_to(const gwr_rules *set, gwr_rewrite_manager *m) {
    if (!set || !m) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_rules_add_to: NULL %s", set ? "manager" : "rules");
    for (int i = 0; i < set->nrules; i++)
        if (gwr_rewrite_manager_get(m, set->rules[i].name))
            return gwr_set_last_error(rw_manager_error(m, GWR_ERR_DUPLICATE, "rule '%s': the label is taken", set->rules[i].name),
                                      "rule '%s': the label is taken", set->rules[i].name);
    for (int i = 0; i < set->nrules; i++) {
        gwr_pattern_rewriter p;
        gwr_rules_rewriter(set, i, &p);
        gwr_status s = gwr_rewrite_manager_add(m, set->rules[i].name, &p, set->rules[i].benefit);
        if (s) return gwr_set_last_error(s, "%s", gwr_rewrite_manager_errmsg(m));
    }
    return GWR_OK;
}

static void free_rules(void *p) { gwr_rules_free(p); }

gwr_status gwr_rules_load(gwr_rewrite_manager *m, const char *path_or_text) {
    if (!m || !path_or_text) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_rules_load: NULL %s", m ? "text" : "manager");
    gwr_rules *r;
    int text = strchr(path_or_text, '\n') || strstr(path_or_text, "=>");
    gwr_status s = text ? gwr_rules_parse(path_or_text, NULL, &r) : gwr_rules_parse_file(path_or_text, &r);
    if (s) return rw_manager_error(m, s, "%s", gwr_last_errmsg());
    /* Owned first: a rule added before a failure still points into r. */
    if (rw_manager_own(m, r, free_rules)) {
        gwr_rules_free(r);
        return gwr_set_last_error(rw_manager_error(m, GWR_ERR_NOMEM, "gwr_rules_load: out of memory"), "gwr_rules_load: out of memory");
    }
    if ((s = gwr_rules_add_to(r, m))) return s;
    return GWR_OK;
}
