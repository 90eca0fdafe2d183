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
#include "rules/function_text.h"
#include "rules/rules_internal.h"

/* ---- parsing (the set is built by rl_parse_set, set.c) ---------------------------------------- */

gwr_status gwr_rules_parse(const char *text, const char *filename, gwr_rules **out) {
    if (text && gwr_ft_looks_like_functions(text)) return gwr_rules_parse_functions(text, filename, out);
    return rl_parse_set(text, filename, NULL, NULL, out);
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

const char *gwr_rl_phase(const gwr_rules *r, int i) {
    static const char *const names[] = {NULL, "cleanup", "fold", "fuse", "lower"};
    const gwr_rl_rule *x = rule_at(r, i);
    return x ? names[x->phase] : NULL;
}

/* ---- running ------------------------------------------------------------------------------ */

/* Can layer l be table node i, as far as op ids and producers' op ids
 * down to `depth` more levels tell? Every input reference to a node (a
 * non-optional one) needs some input of l made by a layer that can be it
 * (any input: commutative ops may swap), every constant reference some
 * input made by a constant. Cheap, and never refuses a match. */
static int pre_ok(const gwr_rl_table *t, int i, const gwr_layer *l, int depth) {
    gwr_op_id id = gwr_layer_op_id(l);
    int ok = !t->pre_nops[i];
    for (int k = 0; k < t->pre_nops[i] && !ok; k++) ok = t->pre_ops[i][k] == id;
    if (!ok) return 0;
    if (!depth) return 1;
    const gwr_match_node *n = &t->nodes[i];
    int nin = gwr_layer_num_inputs(l);
    for (int r = 0; r < GWR_MATCH_MAX_INPUTS && n->in[r].kind != GWR_MREF_END && n->in[r].kind != GWR_MREF_REST; r++) {
        const gwr_mref *ref = &n->in[r];
        int isnode = ref->kind == GWR_MREF_NODE, iscon = ref->kind == GWR_MREF_CONST || ref->kind == GWR_MREF_SPLAT;
        if (ref->optional || (!isnode && !iscon)) continue;
        int found = 0;
        for (int j = 0; j < nin && !found; j++) {
            const gwr_tensor *x = gwr_layer_input(l, j);
            const gwr_layer *p = x ? gwr_tensor_parent(x) : NULL;
            if (!p) continue;
            found = isnode ? pre_ok(t, ref->idx, p, depth - 1) : gwr_layer_type(p) == GWR_LAYER_CONSTANT;
        }
        if (!found) return 0;
    }
    return 1;
}

#define RL_PRE_DEPTH 3

static int run_rule(gwr_rl_rule *r, gwr_rewrite_ctx *c, gwr_layer *l) {
    int pass = 0;
    for (int i = 0; i < r->ntables && !pass; i++) pass = pre_ok(&r->tables[i], r->tables[i].pat.nnodes - 1, l, RL_PRE_DEPTH);
    if (!pass) return gwr_rewrite_no_match(c, "rule '%s': the ops around the root are not the pattern's", r->name);
    if (r->targets) {
        int64_t t = gwr_match_target(c);
        if (!((unsigned)t & r->targets)) return gwr_rewrite_no_match(c, "rule '%s' does not serve this target", r->name);
    }
    /* A rule for target gwr alone writes any op at any opset (gwr's executor runs every op it has). */
    int since = r->targets == GWR_TARGET_GWR ? 0 : r->repl_since;
    int64_t opset = r->opset || since > 1 ? gwr_match_opset(l) : -1;
    if (opset > 0) {
        if (r->opset && opset < r->opset) return gwr_rewrite_no_match(c, "rule '%s' needs opset %d, the model has %lld", r->name, r->opset, (long long)opset);
        if (since > opset) return gwr_rewrite_no_match(c, "%s is not in opset %lld", r->repl_since_op, (long long)opset);
    }
    int explain = rw_ctx_wants_reason(c);
    char first[300] = "";
    for (int i = 0; i < r->ntables; i++) {
        gwr_match m;
        char *why = rl_why_buf();
        why[0] = 0;
        *rl_quiet() = !explain;
        int k = gwr_match_layer(&r->tables[i].pat, l, &m);
        *rl_quiet() = 0;
        if (k < 0) return gwr_rewrite_fail(c, (gwr_status)-k, "%s", gwr_last_errmsg());
        if (k) return rl_rewrite(c, &m);
        if (!i && explain) {
            if (why[0]) snprintf(first, sizeof first, "%s", why);
            else gwr_match_why(&m, first, sizeof first);
        }
    }
    return gwr_rewrite_no_match(c, "%s", first);
}

static int match_and_rewrite(gwr_rewrite_ctx *c, gwr_layer *l) { return run_rule(gwr_rewrite_ctx_user(c), c, l); }

int gwr_rl_run_all(const gwr_rules *set, gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_op_id id = gwr_layer_op_id(l);
    for (int k = 0; set && k < set->nrules; k++) {
        gwr_rl_rule *r = &set->rules[set->order[k]];
        int rooted = r->nroot_ids < 0;
        for (int j = 0; j < r->nroot_ids && !rooted; j++) rooted = r->root_ids[j] == id;
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
