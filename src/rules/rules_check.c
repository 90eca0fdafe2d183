/* rules_check.c - gwr_rules_check and gwr_rules_lint (include/gwr/rules.h):
 * a parsed rule set's items (hook.c), each running its whole rule
 * (gwr_rules_rewriter: the header's gate, every table), through check.c
 * and lint.c. */
#include <stdlib.h>

#include "rules/hook.h"

/* The items of every rule of r, each with its whole rule's rewriter, and
 * the options check.c and lint.c take; -1 (gwr_last_errmsg) on an error. */
static int rules_items(const char *fn, const gwr_rules *r, const gwr_rules_check_options *o, const FILE *out,
                       rl_item_set *s, gwr_rules_check_opts *co) {
    if (!r || !out) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "%s: NULL %s", fn, r ? "out" : "rules");
        return -1;
    }
    *co = (gwr_rules_check_opts){.instances = o ? o->instances : 0, .seed = o ? o->seed : 0};
    gwr_status st = rl_items_make(r, 0, r->nrules, s);
    for (int k = 0; !st && k < s->n; k++)
        if ((st = gwr_rules_rewriter(r, s->rule_of[k], &s->items[k].rewriter))) rl_items_free(s);
    return st ? -1 : 0;
}

int gwr_rules_check(const gwr_rules *r, const gwr_rules_check_options *o, FILE *out) {
    rl_item_set s;
    gwr_rules_check_opts co;
    if (rules_items("gwr_rules_check", r, o, out, &s, &co)) return -1;
    gwr_rules_check_result *res = calloc((size_t)s.n + 1, sizeof *res);
    int failed = -1;
    if (res && gwr_rules_check_items(s.items, s.n, &co, out, res) >= 0) {
        failed = 0;
        for (int i = 0, k = 0; i < r->nrules; i++) {
            int bad = 0;
            for (; k < s.n && s.rule_of[k] == i; k++) bad |= !res[k].pass;
            failed += bad;
        }
    } else if (!res)
        gwr_set_last_error(GWR_ERR_NOMEM, "rules check: out of memory");
    free(res);
    rl_items_free(&s);
    return failed;
}

int gwr_rules_lint(const gwr_rules *r, const gwr_rules_check_options *o, FILE *out) {
    rl_item_set s;
    gwr_rules_check_opts co;
    if (rules_items("gwr_rules_lint", r, o, out, &s, &co)) return -1;
    int n = gwr_rules_lint_items(s.items, s.n, &co, out);
    rl_items_free(&s);
    return n;
}
