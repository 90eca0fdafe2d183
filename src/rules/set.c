/* set.c - a rule set made from .rules text: parsed (parse.c), compiled
 * (compile.c), its tables given their callbacks and each rule its
 * instance check; and freed. Apart from rules.c (the public API) so that
 * the FunctionProto-text front end (function_rules.c), which rules.c calls
 * for text in that form, builds its sets the same way without a circle. */
#include <string.h>

#include "rules/rules_internal.h"

/* The root node's predicate: what a table cannot say (eval.c). */
static int root_pred(const gwr_match *m, int node, void *user) {
    (void)node;
    gwr_rl_table *t = user;
    char *why = *rl_quiet() ? NULL : rl_why_buf();
    rl_env env = {.t = t, .m = m, .tmp = {.chunk = RL_EVAL_CHUNK}, .why = why, .why_size = why ? RL_WHY_SIZE : 0};
    if (why) why[0] = 0;
    int ok = rl_check_match(&env);
    rl_arena_free(&env.tmp);
    return ok > 0;
}

/* The op id of "Op" or "domain::Op" (GWR_OP_CUSTOM when not in the table). */
static gwr_op_id id_of(const char *q) {
    const char *sep = strstr(q, "::");
    char dom[128];
    if (!sep) return gwr_op_lookup("", q);
    size_t dl = (size_t)(sep - q);
    if (dl >= sizeof dom) return GWR_OP_CUSTOM;
    memcpy(dom, q, dl), dom[dl] = 0;
    return gwr_op_lookup(dom, sep + 2);
}

/* Node i's op ids into the prefilter (none: any op). */
static void pre_node(gwr_rl_table *t, int i) {
    const gwr_match_node *n = &t->nodes[i];
    int k = 0;
    if (n->ops) {
        for (; n->ops[k]; k++)
            if (k == RL_PRE_OPS || (t->pre_ops[i][k] = id_of(n->ops[k])) == GWR_OP_CUSTOM) return;
    } else if (n->op) {
        if ((t->pre_ops[i][0] = id_of(n->op)) == GWR_OP_CUSTOM) return;
        k = 1;
    }
    t->pre_nops[i] = k;
}

/* The newest default-domain op of a replacement (its since_version). */
static void repl_since(gwr_rl_rule *r, const rl_expr *x) {
    if (x->kind != RL_OP) return;
    if (!strstr(x->ops[0], "::")) {
        const gwr_op_info *info = gwr_op_info_get(gwr_op_lookup("", x->ops[0]));
        if (info && info->since_version > r->repl_since) r->repl_since = info->since_version, r->repl_since_op = x->ops[0];
    }
    for (int i = 0; i < x->na; i++) repl_since(r, x->a[i]);
}

/* Compiled tables get their callbacks and prefilters, each rule its
 * dispatch, then (unless instance_check is 0) the instance check. */
static gwr_status finish(gwr_rules *set, rl_error *e, int instance_check) {
    for (int i = 0; i < set->nrules; i++) {
        gwr_rl_rule *r = &set->rules[i];
        for (int k = 0; k < r->ntables; k++) {
            gwr_rl_table *t = &r->tables[k];
            t->nodes[t->pat.nnodes - 1].pred = root_pred;
            t->pat.rewrite = rl_rewrite;
            for (int j = 0; j < t->pat.nnodes; j++) pre_node(t, j);
        }
        for (int j = 0; r->root_ops[j] && r->nroot_ids >= 0; j++)
            if ((r->root_ids[r->nroot_ids++] = id_of(r->root_ops[j])) == GWR_OP_CUSTOM) r->nroot_ids = -1;
        if (!r->root_ops[0]) r->nroot_ids = -1;
        repl_since(r, r->repl);
    }
    set->order = rl_alloc(&set->arena, (size_t)(set->nrules + 1) * sizeof *set->order);
    if (!set->order) return rl_fail(e, 1, 1, "out of memory");
    for (int i = 0; i < set->nrules; i++) { /* insertion sort: stable, higher benefit first */
        int k = i;
        while (k > 0 && set->rules[set->order[k - 1]].benefit < set->rules[i].benefit) set->order[k] = set->order[k - 1], k--;
        set->order[k] = i;
    }
    for (int i = 0; i < set->nrules && instance_check; i++) {
        gwr_status s = rl_check_instance(set, i, e);
        if (s) return s;
    }
    return GWR_OK;
}

static gwr_status parse_set(const char *text, const char *filename, rl_after_parse after, void *user, int instance_check,
                            gwr_rules **out) {
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
    if (after) s = after(set, s, &e, user);
    if (!s) s = rl_compile(set, &e);
    if (!s) s = finish(set, &e, instance_check);
    if (s) {
        if (e.line) rl_error_finish(&e, set->text, fcopy);
        else gwr_set_last_error(s, "%s: %s", fn, gwr_last_errmsg());
        gwr_rules_free(set);
        return GWR_ERR_PARSE;
    }
    *out = set;
    return GWR_OK;
}

gwr_status rl_parse_set(const char *text, const char *filename, rl_after_parse after, void *user,
                        gwr_rules **out) {
    return parse_set(text, filename, after, user, 1, out);
}

gwr_status gwr_rl_parse_builtin(const char *text, const char *filename, gwr_rules **out) {
    return parse_set(text, filename, NULL, NULL, 0, out);
}

void gwr_rules_free(gwr_rules *r) {
    if (!r) return;
    rl_arena_free(&r->arena);
    gwr_free(r);
}
