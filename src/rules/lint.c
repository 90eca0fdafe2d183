/* lint.c - `gwr rules lint` (check.h): loops, rules that undo each other,
 * shadowed rules; found on each rule's random instances, before the rules
 * run on any model.
 *
 * For every rule i and instance j: inst[i][j] (the instance) and
 * made[i][j] (the rule applied once to a copy of it: what it makes). Then
 *  - loop: rule i run to a fixpoint on made[i][j] does not stop within
 *    LOOP_LIMIT rewrites;
 *  - undo: rule k fires on made[i][j] and rule i fires on made[k][j'];
 *  - shadow: rule k, tried before i, fires at the root of every inst[i][j]. */
#include <stdlib.h>
#include <string.h>

#include "gwr/passes.h"
#include "rules/check_internal.h"
#include "util/util.h"

#define LOOP_LIMIT 16
#define LINT_INSTANCES 3

typedef struct lint_rule {
    gwr_rules_instance inst[LINT_INSTANCES];
    gwr_network *made[LINT_INSTANCES]; /* NULL: no instance, or the rule did not fire */
    uint64_t seed[LINT_INSTANCES];
    int ninst;
} lint_rule;

/* May rw be offered layer l (its root ops or classes)? What a manager
 * checks before offering: lint skips the copies where nothing could fire. */
static int may_root(const gwr_pattern_rewriter *rw, const gwr_layer *l) {
    if (gwr_layer_is_removed(l) || gwr_layer_type(l) == GWR_LAYER_CONSTANT) return 0;
    if (!rw->root_ops && !rw->root_classes) return 1;
    if (rw->root_classes & GWR_ROOT_CLASS(gwr_layer_type(l))) return 1;
    const char *dom = gwr_layer_domain(l), *op = gwr_layer_op(l);
    size_t dl = strlen(dom);
    for (const char *const *r = rw->root_ops; r && *r; r++) {
        const char *sep = strstr(*r, "::");
        if (!sep ? !*dom && !strcmp(*r, op) : (size_t)(sep - *r) == dl && !strncmp(*r, dom, dl) && !strcmp(sep + 2, op))
            return 1;
    }
    return 0;
}

static int may_fire(const gwr_rules_item *it, gwr_network *net, const char *root) {
    if (root) return may_root(&it->rewriter, gwr_network_find_layer(net, root));
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++)
        if (may_root(&it->rewriter, gwr_network_layer(net, i))) return 1;
    return 0;
}

/* Does the rule fire on (a copy of) net (at layer root when given)? -1 on
 * an internal error. */
static int fires_on(const gwr_rules_item *it, gwr_network *net, const char *root, int *at_root) {
    if (at_root) *at_root = 0;
    if (!may_fire(it, net, root)) return 0;
    gwr_network *c = gwr_network_clone(net);
    if (!c) return -1;
    gwr_rules_apply_log log = {.root_name = root};
    gwr_status s = gwr_rules_apply(&it, 1, c, 1, 0, &log);
    gwr_network_free(c);
    if (s == GWR_ERR_NOMEM) return -1;
    if (at_root) *at_root = log.at_root > 0;
    return !s && log.rewrites > 0;
}

/* Rule r is tried before rule s in one manager: higher benefit, or the
 * same and added first. */
static int tried_before(const gwr_rules_item *items, int r, int s) {
    return items[r].benefit > items[s].benefit || (items[r].benefit == items[s].benefit && r < s);
}

/* The first target rules a and b both serve (a GWR_TARGET_* bit), 0 for
 * none: such rules never run in one manager, so never meet. */
static unsigned common_target(const gwr_rules_item *a, const gwr_rules_item *b) {
    unsigned c = (a->targets ? a->targets : GWR_TARGET_ANY) & (b->targets ? b->targets : GWR_TARGET_ANY);
    return c & -c;
}

static void free_rules(lint_rule *lr, int n) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < lr[i].ninst; j++) {
            gwr_network_free(lr[i].made[j]);
            gwr_rules_instance_free(&lr[i].inst[j]);
        }
    free(lr);
}

int gwr_rules_lint_items(const gwr_rules_item *items, int n, const gwr_rules_check_opts *o, FILE *out) {
    gwr_rules_check_opts def = {0};
    if (!o) o = &def;
    int ninst = o->instances > 0 && o->instances < LINT_INSTANCES ? o->instances : LINT_INSTANCES;
    lint_rule *lr = n ? calloc((size_t)n, sizeof *lr) : NULL;
    if (n && !lr) {
        gwr_set_last_error(GWR_ERR_NOMEM, "rules lint: out of memory");
        return -1;
    }
    int findings = 0;
    /* the manager args of each target, for pairs (targets[t]: bit t) */
    gwr_args *targs[3] = {NULL, NULL, NULL};
    for (int t = 0; t < 3; t++)
        if (!(targs[t] = gwr_args_new()) || gwr_args_set_int(targs[t], "target", 1 << t)) goto oom;
    /* instances, and what each rule makes of its own */
    for (int i = 0; i < n; i++) {
        const gwr_rules_item *it = &items[i];
        for (int j = 0; j < ninst; j++) {
            uint64_t seed = gwr_rules_instance_seed(o->seed, i, j);
            gwr_rules_instance_options io = {.opset = it->opset, .hints = it->hints, .attrs = it->attrs, .nattrs = it->nattrs};
            gwr_network *m = NULL;
            gwr_rules_apply_log log;
            gwr_status applied = GWR_OK, f = gwr_rules_fire(it, seed, io, &lr[i].inst[lr[i].ninst], &m, &log, &applied);
            if (f == GWR_ERR_NOMEM) goto oom;
            if (f) {
                if (j == 0)
                    fprintf(out, "%s:%d: note: rule %s: no instance of its pattern, not linted: %s\n",
                            gwr_rules_item_file(it), it->line, it->name, gwr_last_errmsg());
                break;
            }
            int k = lr[i].ninst++;
            lr[i].seed[k] = seed;
            if (applied || !log.rewrites) {
                gwr_network_free(m);
                continue;
            }
            lr[i].made[k] = m;
        }
    }
    /* loops */
    for (int i = 0; i < n; i++) {
        const gwr_rules_item *it = &items[i];
        int noted = 0;
        for (int j = 0; j < lr[i].ninst; j++) {
            if (!lr[i].made[j]) continue;
            gwr_network *c = gwr_network_clone(lr[i].made[j]);
            if (!c) goto oom;
            gwr_rules_apply_log log = {0};
            gwr_status s = gwr_rules_apply(&it, 1, c, 0, LOOP_LIMIT, &log);
            gwr_network_free(c);
            if (s == GWR_ERR_NOT_CONVERGED) {
                fprintf(out,
                        "%s:%d: rule %s loops: it fires on its own output again and again (%d rewrites without stopping, "
                        "instance seed %llu)\n",
                        gwr_rules_item_file(it), it->line, it->name, LOOP_LIMIT, (unsigned long long)lr[i].seed[j]);
                findings++;
                break;
            }
            if (!s && log.rewrites && !noted) {
                fprintf(out, "%s:%d: note: rule %s fires on its own output (stops after %lld more rewrites)\n",
                        gwr_rules_item_file(it), it->line, it->name, (long long)log.rewrites);
                noted = 1;
            }
        }
    }
    /* pairs: undo and shadow */
    for (int i = 0; i < n; i++)
        for (int k = 0; k < n; k++) {
            if (k == i || items[k].phase != items[i].phase || (items[i].group && items[k].group == items[i].group))
                continue;
            unsigned tg = common_target(&items[i], &items[k]);
            if (!tg) continue;
            /* both under the target they share */
            gwr_rules_item ia = items[i], ib = items[k];
            ia.args = ib.args = targs[tg == GWR_TARGET_ONNX ? 0 : tg == GWR_TARGET_ORT ? 1 : 2];
            const gwr_rules_item *a = &ia, *b = &ib;
            if (i < k) {
                int ab = 0, ba = 0;
                for (int j = 0; j < lr[i].ninst && !ab; j++)
                    if (lr[i].made[j] && (ab = fires_on(b, lr[i].made[j], NULL, NULL)) < 0) goto oom;
                for (int j = 0; ab && j < lr[k].ninst && !ba; j++)
                    if (lr[k].made[j] && (ba = fires_on(a, lr[k].made[j], NULL, NULL)) < 0) goto oom;
                if (ab && ba) {
                    fprintf(out, "%s:%d: rules %s and %s (%s:%d) undo each other: each fires on what the other makes\n",
                            gwr_rules_item_file(a), a->line, a->name, b->name, gwr_rules_item_file(b), b->line);
                    findings++;
                }
            }
            /* does b, tried first, take every instance of a at its root? */
            if (!tried_before(items, k, i) || !lr[i].ninst) continue;
            int taken = 0;
            for (int j = 0; j < lr[i].ninst; j++) {
                int at_root = 0, f = fires_on(b, lr[i].inst[j].net, gwr_layer_name(lr[i].inst[j].root), &at_root);
                if (f < 0) goto oom;
                taken += f && at_root;
            }
            if (taken == lr[i].ninst) {
                fprintf(out,
                        "%s:%d: rule %s is shadowed by rule %s (%s:%d, benefit %d, tried first): it fires at the root of "
                        "all %d instances of %s, which never fires there\n",
                        gwr_rules_item_file(a), a->line, a->name, b->name, gwr_rules_item_file(b), b->line, b->benefit,
                        lr[i].ninst, a->name);
                findings++;
            } else if (taken)
                fprintf(out, "%s:%d: note: rule %s takes %d of %d instances of rule %s (%s:%d) at their root first\n",
                        gwr_rules_item_file(b), b->line, b->name, taken, lr[i].ninst, a->name, gwr_rules_item_file(a),
                        a->line);
        }
    free_rules(lr, n);
    for (int t = 0; t < 3; t++) gwr_args_free(targs[t]);
    return findings;
oom:
    free_rules(lr, n);
    for (int t = 0; t < 3; t++) gwr_args_free(targs[t]);
    gwr_set_last_error(GWR_ERR_NOMEM, "rules lint: out of memory");
    return -1;
}
