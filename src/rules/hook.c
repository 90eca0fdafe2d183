/* hook.c - a parsed rule's tables seen as the items of check.h (one per
 * compiled table: each alternative gets its own instances), its
 * constraints as the instances' slot hints and captured attributes, its
 * target as the manager's args; and the load-time instance check
 * (rl_check_instance). Each item's rewriter is its table's own (matching
 * and building the replacement, without the header's gate); rules_check.c
 * swaps in the whole rule's for check and lint. */
#include <stdlib.h>
#include <string.h>

#include "gwr/passes.h"
#include "rules/check.h"
#include "rules/hook.h"

/* The value of a constant expression (numbers and arithmetic): 1, else 0. */
static int const_num(const rl_expr *x, double *v, int *is_int) {
    double a, b;
    int ia, ib;
    switch (x->kind) {
    case RL_NUM: *v = x->num, *is_int = !x->is_float; return 1;
    case RL_NEG: return const_num(x->a[0], v, is_int) ? (*v = -*v, 1) : 0;
    case RL_BIN:
        if (x->op < RL_ADD || !const_num(x->a[0], &a, &ia) || !const_num(x->a[1], &b, &ib)) return 0;
        *is_int = ia && ib && x->op != RL_DIV;
        *v = x->op == RL_ADD ? a + b : x->op == RL_SUB ? a - b : x->op == RL_MUL ? a * b : a / b;
        return 1;
    default: return 0;
    }
}

static int is_name(const rl_expr *x, const char *name) { return x->kind == RL_NAME && !strcmp(x->s, name); }

/* What the where clause w asks of captured attribute `name`, from its
 * conjuncts `name == LIT` (or `LIT == name`) and `abs(name - EXPR) <= T`:
 * d->kind set, or left 0. */
static void where_wants(const rl_expr *w, const char *name, gwr_rules_attr_draw *d) {
    if (!w || w->kind != RL_BIN) return;
    if (w->op == RL_AND) {
        where_wants(w->a[0], name, d);
        where_wants(w->a[1], name, d);
        return;
    }
    const rl_expr *other = NULL;
    if (w->op == RL_EQ) other = is_name(w->a[0], name) ? w->a[1] : is_name(w->a[1], name) ? w->a[0] : NULL;
    else if ((w->op == RL_LE || w->op == RL_LT) && w->a[0]->kind == RL_CALL && !strcmp(w->a[0]->s, "abs") &&
             w->a[0]->na == 1 && w->a[0]->a[0]->kind == RL_BIN && w->a[0]->a[0]->op == RL_SUB &&
             is_name(w->a[0]->a[0]->a[0], name))
        other = w->a[0]->a[0]->a[1];
    if (!other) return;
    if (other->kind == RL_STR) d->kind = 2, d->str = other->s;
    else if (const_num(other, &d->num, &d->is_int)) d->kind = 1;
}

/* A captured attribute's value for instances: what the rule's where
 * clauses ask for, else its default literal, else drawn. */
static gwr_rules_attr_draw attr_draw(const gwr_rl_table *t, const rl_bind *b) {
    gwr_rules_attr_draw d = {.node = b->node, .name = b->attr};
    const gwr_rl_rule *r = t->rule;
    for (int k = 0; r && k < r->nwhere && !d.kind; k++) where_wants(r->where[k], b->name, &d);
    if (!d.kind && b->def) {
        if (b->def->kind == RL_STR) d.kind = 2, d.str = b->def->s;
        else if (const_num(b->def, &d.num, &d.is_int)) d.kind = 1;
    }
    return d;
}

static void table_hints(const gwr_rl_table *t, gwr_rules_slot_hint *h, gwr_rules_attr_draw *ad, int *nad) {
    memset(h, 0, GWR_MATCH_MAX_CAPTURES * sizeof *h);
    *nad = 0;
    for (int b = 0; b < t->nbinds; b++)
        if (t->binds[b].kind == RL_B_ATTR) ad[(*nad)++] = attr_draw(t, &t->binds[b]);
    for (int b = 0; b < t->nbinds; b++)
        if (t->binds[b].kind == RL_B_TENSOR && t->binds[b].slot >= 0 && t->binds[b].slot < GWR_MATCH_MAX_CAPTURES)
            h[t->binds[b].slot].name = t->binds[b].name;
    for (int k = 0; k < t->ncons; k++) {
        int slot = t->cons[k].slot;
        const rl_expr *x = t->cons[k].x;
        if (slot < 0 || slot >= GWR_MATCH_MAX_CAPTURES) continue;
        gwr_rules_slot_hint *s = &h[slot];
        if (x->has_tilde) s->has_value = 1, s->value = x->tilde_v, s->tol = x->tilde_tol;
        if (x->dtypes) s->dtype = gwr_rules_pick_dtype(x->dtypes);
        if (x->rank_lo >= 0) s->ranked = 1, s->rank_min = x->rank_lo, s->rank_max = x->rank_hi;
        if (x->nshape > 0 && x->nshape <= GWR_MAX_RANK) {
            s->nshape = x->nshape;
            for (int d = 0; d < x->nshape; d++)
                s->dims[d] = x->shape[d]->kind == RL_NUM ? (int64_t)x->shape[d]->num : -1;
        }
    }
}

void rl_items_free(rl_item_set *s) {
    if (s->args)
        for (int i = 0; i < s->last - s->first; i++) gwr_args_free(s->args[i]);
    free(s->args);
    free(s->items);
    free(s->hints);
    free(s->attrs);
    free(s->rule_of);
    memset(s, 0, sizeof *s);
}

gwr_status rl_items_make(const gwr_rules *set, int first, int last, rl_item_set *s) {
    memset(s, 0, sizeof *s);
    s->first = first, s->last = last;
    int n = 0;
    for (int i = first; i < last; i++) n += set->rules[i].ntables;
    s->items = calloc((size_t)n + 1, sizeof *s->items);
    s->hints = calloc(((size_t)n + 1) * GWR_MATCH_MAX_CAPTURES, sizeof *s->hints);
    s->rule_of = calloc((size_t)n + 1, sizeof *s->rule_of);
    s->attrs = calloc(((size_t)n + 1) * RL_MAX_BINDS, sizeof *s->attrs);
    s->args = calloc((size_t)(last - first) + 1, sizeof *s->args);
    if (!s->items || !s->hints || !s->rule_of || !s->args || !s->attrs) goto oom;
    for (int i = first; i < last; i++) {
        const gwr_rl_rule *r = &set->rules[i];
        /* a rule for some targets runs for the first of them (no target: onnx) */
        if (r->targets && !(r->targets & GWR_TARGET_ONNX)) {
            int64_t tg = r->targets & GWR_TARGET_ORT ? GWR_TARGET_ORT : GWR_TARGET_GWR;
            if (!(s->args[i - first] = gwr_args_new()) || gwr_args_set_int(s->args[i - first], "target", tg)) goto oom;
        }
        for (int k = 0; k < r->ntables; k++) {
            gwr_rules_item *it = &s->items[s->n];
            gwr_rules_slot_hint *h = &s->hints[(size_t)s->n * GWR_MATCH_MAX_CAPTURES];
            gwr_rules_attr_draw *ad = &s->attrs[(size_t)s->n * RL_MAX_BINDS];
            int nad;
            table_hints(&r->tables[k], h, ad, &nad);
            gwr_pattern_rewriter rw;
            gwr_status st = gwr_match_rewriter(&r->tables[k].pat, &rw);
            if (st) {
                rl_items_free(s);
                return st;
            }
            *it = (gwr_rules_item){.name = r->name, .file = set->filename, .line = r->line, .benefit = r->benefit,
                                   .phase = (int)r->phase, .tol = r->tol, .pattern = &r->tables[k].pat,
                                   .rewriter = rw, .hints = h, .attrs = ad, .nattrs = nad, .args = s->args[i - first],
                                   .targets = r->targets, .group = i + 1};
            s->rule_of[s->n++] = i;
        }
    }
    return GWR_OK;
oom:
    rl_items_free(s);
    return gwr_set_last_error(GWR_ERR_NOMEM, "rules: out of memory");
}

/* At load: every alternative of the rule, on up to three instances. The
 * rule is refused when its replacement fits none of them and one showed
 * another dtype or rank than the root's: what no shape can mend. Other
 * misfits (other dims, an expression with no value on those constants)
 * depend on the instance; the rule then loads, is undone at run time
 * where it does not fit, and `gwr rules check` reports it. */
gwr_status rl_check_instance(const gwr_rules *set, int rule, rl_error *e) {
    rl_item_set s;
    const gwr_rl_rule *r = &set->rules[rule];
    if (rl_items_make(set, rule, rule + 1, &s)) return rl_fail(e, r->line, r->col, "%s", gwr_last_errmsg());
    gwr_status st = GWR_OK;
    for (int k = 0; k < s.n && !st; k++) {
        char why[512], first[512] = "";
        int fits = 0, refused = 0;
        for (uint64_t seed = 1; seed <= 3 && !fits && !st; seed++) {
            gwr_status v = gwr_rules_check_types(&s.items[k], seed, why, sizeof why);
            if (v == GWR_OK) fits = 1;
            else if (v == GWR_ERR_NOMEM) st = rl_fail(e, r->line, r->col, "out of memory");
            else if ((v == GWR_ERR_TYPE || v == GWR_ERR_SHAPE) && !refused++) snprintf(first, sizeof first, "%s", why);
        }
        if (!st && refused && !fits) {
            const rl_expr *at = r->repl ? r->repl : NULL;
            st = rl_fail(e, at ? at->line : r->line, at ? at->col : r->col, "%s", first);
        }
    }
    rl_items_free(&s);
    return st;
}
