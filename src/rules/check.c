/* check.c - `gwr rules check` and the load-time type check (check.h).
 *
 * Every rule is applied alone, in a manager of its own, to a copy of its
 * instance (single pass: the layers present at the start are each offered
 * once, so a rule that loops still gives one answer here; lint.c reports
 * the loop). The executor then runs the instance and the copy on the same
 * seeded random inputs, planned as written (no optimizer in between). */
#include "rules/check.h"

#include <math.h>
#include <string.h>

#include "gwr/exec.h"
#include "rules/check_internal.h"
#include "util/util.h"

#define DEFAULT_TOL 1e-5

double gwr_rules_item_tol(const gwr_rules_item *it) { return it->tol > 0 ? it->tol : DEFAULT_TOL; }

const char *gwr_rules_item_file(const gwr_rules_item *it) { return it->file ? it->file : "<string>"; }

/* the seeds of instance j of rule i (instances and inputs apart) */
uint64_t gwr_rules_instance_seed(uint64_t seed, int rule, int j) {
    uint64_t s = seed ^ ((uint64_t)(rule + 1) * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)(j + 1) * 0xbf58476d1ce4e5b9ULL);
    return gwr_rules_rand(&s);
}

static uint64_t inputs_seed(uint64_t inst_seed) { return (inst_seed ^ 0x94d049bb133111ebULL) % 1000000007ULL; }

/* ---- applying rules ---- */

static void on_applied(void *ctx, const gwr_rewrite_event *e) {
    gwr_rules_apply_log *log = ctx;
    log->rewrites++;
    if (log->root_name && !strcmp(gwr_layer_name(e->root), log->root_name)) {
        log->at_root++;
        if (!log->root_label[0]) snprintf(log->root_label, sizeof log->root_label, "%s", e->label);
    }
}

static void on_failed(void *ctx, const char *label, gwr_layer *root, const char *reason) {
    gwr_rules_apply_log *log = ctx;
    (void)label;
    if (log->root_name && !strcmp(gwr_layer_name(root), log->root_name) && reason && *reason)
        snprintf(log->reason, sizeof log->reason, "%s", reason);
}

gwr_status gwr_rules_apply(const gwr_rules_item *const *its, int n, gwr_network *net, int single_pass,
                           int64_t max_rewrites, gwr_rules_apply_log *log) {
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    if (!m) return gwr_last_status();
    gwr_status s = GWR_OK;
    log->rewrites = log->at_root = 0;
    log->reason[0] = log->root_label[0] = log->msg[0] = 0;
    for (int k = 0; k < n && !s; k++) {
        char label[160];
        snprintf(label, sizeof label, "%s#%d", its[k]->name ? its[k]->name : "rule", k);
        if ((s = gwr_rewrite_manager_add(m, label, &its[k]->rewriter, its[k]->benefit)))
            snprintf(log->msg, sizeof log->msg, "%s", gwr_rewrite_manager_errmsg(m));
    }
    gwr_rewrite_options o = {.single_pass = single_pass, .max_rewrites = max_rewrites};
    gwr_rewrite_listener ls = {.pattern_applied = on_applied, .match_failed = on_failed, .ctx = log};
    if (!s && (s = gwr_rewrite_manager_set_options(m, &o))) snprintf(log->msg, sizeof log->msg, "%s", gwr_rewrite_manager_errmsg(m));
    if (!s && gwr_rewrite_manager_add_listener(m, &ls) < 0) s = GWR_ERR_NOMEM;
    if (!s && (s = gwr_rewrite_manager_rewrite(m, net, n ? its[0]->args : NULL)))
        snprintf(log->msg, sizeof log->msg, "%s", gwr_rewrite_manager_errmsg(m));
    gwr_rewrite_manager_free(m);
    return s;
}

/* ---- an instance the rule fires on ---- */

/* Draws an instance of it's table from seed (io: the options but the
 * dtype) and applies the rule alone to a copy of it. Captures of no fixed
 * dtype are float32 first; when the rule refuses that instance for its
 * dtype (a replacement of integers, say), int64, float16, float64 and
 * int32 in turn. GWR_OK with *in, *copy (rewritten, or not when the rule
 * did not fire: log says why) and *applied (the manager's status);
 * GWR_ERR_NOT_FOUND when no instance could be drawn (gwr_last_errmsg);
 * GWR_ERR_NOMEM. */
static gwr_status fire_dtypes(const gwr_rules_item *it, uint64_t seed, gwr_rules_instance_options io, gwr_rules_instance *in,
                              gwr_network **copy, gwr_rules_apply_log *log, gwr_status *applied) {
    static const gwr_dtype dtypes[] = {GWR_UNDEFINED, GWR_INT64, GWR_FLOAT16, GWR_FLOAT64, GWR_INT32};
    const int nd = (int)(sizeof dtypes / sizeof dtypes[0]);
    for (int d = 0; d < nd; d++) {
        io.dtype = dtypes[d];
        if (gwr_rules_instance_new(it->pattern, seed, &io, in)) {
            if (gwr_last_status() == GWR_ERR_NOMEM) return GWR_ERR_NOMEM;
            if (!d) return GWR_ERR_NOT_FOUND;
            continue; /* the table's ops take no such dtype */
        }
        if (!(*copy = gwr_network_clone(in->net))) {
            gwr_rules_instance_free(in);
            return GWR_ERR_NOMEM;
        }
        const gwr_rules_item *one = it;
        *log = (gwr_rules_apply_log){.root_name = gwr_layer_name(in->root)};
        *applied = gwr_rules_apply(&one, 1, *copy, 1, 0, log);
        if (*applied == GWR_ERR_NOMEM) {
            gwr_network_free(*copy);
            gwr_rules_instance_free(in);
            return GWR_ERR_NOMEM;
        }
        int retry = !*applied && !log->rewrites && strstr(log->reason, "dtype") && d + 1 < nd;
        if (!retry) return GWR_OK;
        /* keep the float32 instance's reason if no other dtype fires */
        gwr_rules_apply_log first = *log;
        gwr_network *c0 = *copy;
        gwr_rules_instance i0 = *in;
        gwr_status a0 = *applied;
        int fired = 0;
        for (int e = d + 1; e < nd && !fired; e++) {
            io.dtype = dtypes[e];
            gwr_rules_instance in2;
            if (gwr_rules_instance_new(it->pattern, seed, &io, &in2)) {
                if (gwr_last_status() == GWR_ERR_NOMEM) break;
                continue;
            }
            gwr_network *c2 = gwr_network_clone(in2.net);
            if (!c2) {
                gwr_rules_instance_free(&in2);
                break;
            }
            gwr_rules_apply_log l2 = {.root_name = gwr_layer_name(in2.root)};
            gwr_status a2 = gwr_rules_apply(&one, 1, c2, 1, 0, &l2);
            if (!a2 && l2.rewrites) {
                gwr_network_free(c0);
                gwr_rules_instance_free(&i0);
                *in = in2, *copy = c2, *log = l2, *applied = a2;
                fired = 1;
            } else {
                gwr_network_free(c2);
                gwr_rules_instance_free(&in2);
            }
        }
        if (!fired) *in = i0, *copy = c0, *log = first, *applied = a0;
        return GWR_OK;
    }
    return GWR_ERR_NOT_FOUND;
}

/* The opsets an instance is tried at after the item's own: the newest,
 * then the ones where ops change form (HardSwish 14, Clip's bounds and
 * Dropout's inputs 11 and 12, Dropout's is_test 7): what a header's opset
 * and a where clause on opset() ask for. */
static const int64_t other_opsets[] = {21, 13, 11, 10, 6};

gwr_status gwr_rules_fire(const gwr_rules_item *it, uint64_t seed, gwr_rules_instance_options io, gwr_rules_instance *in,
                          gwr_network **copy, gwr_rules_apply_log *log, gwr_status *applied) {
    const int nalt = 1 + (int)(sizeof other_opsets / sizeof other_opsets[0]);
    gwr_rules_instance best;
    gwr_network *bcopy = NULL;
    gwr_rules_apply_log blog;
    gwr_status bapplied = GWR_OK;
    int have = 0;
    char first_err[640] = "";
    for (int a = 0; a < 2 * nalt; a++) {
        io.opset = a / 2 ? other_opsets[a / 2 - 1] : it->opset;
        io.tail = a % 2; /* an Identity after the root: for rules refusing to rename a network output */
        if (a / 2 && io.opset == it->opset) continue;
        gwr_status f = fire_dtypes(it, seed, io, in, copy, log, applied);
        if (f == GWR_ERR_NOMEM) {
            if (have) gwr_network_free(bcopy), gwr_rules_instance_free(&best);
            return f;
        }
        if (f) {
            if (!first_err[0]) snprintf(first_err, sizeof first_err, "%s", gwr_last_errmsg());
            continue;
        }
        if (!*applied && log->rewrites) { /* it fires */
            if (have) gwr_network_free(bcopy), gwr_rules_instance_free(&best);
            return GWR_OK;
        }
        if (!have) best = *in, bcopy = *copy, blog = *log, bapplied = *applied, have = 1;
        else gwr_network_free(*copy), gwr_rules_instance_free(in);
    }
    if (!have) return gwr_set_last_error(GWR_ERR_NOT_FOUND, "%s", first_err);
    *in = best, *copy = bcopy, *log = blog, *applied = bapplied;
    return GWR_OK;
}

/* ---- check ---- */

static void print_instance(FILE *out, const gwr_rules_instance *in, uint64_t seed) {
    fprintf(out, "  instance (seed %llu, strategy %s):\n", (unsigned long long)seed,
            gwr_rules_instance_strategy_name(in->strategy));
    gwr_rules_instance_print(in->net, out, "    ");
}

/* One instance: 1 passed, 0 failed (printed), -1 internal error. */
static int check_one(const gwr_rules_item *it, int i, int j, const gwr_rules_check_opts *o, FILE *out,
                     gwr_rules_check_result *r) {
    uint64_t seed = gwr_rules_instance_seed(o->seed, i, j);
    gwr_rules_instance_options io = {.opset = it->opset, .hints = it->hints, .attrs = it->attrs, .nattrs = it->nattrs, .perturb = j & 1};
    gwr_rules_instance in;
    const char *file = gwr_rules_item_file(it);
    gwr_network *copy = NULL;
    gwr_rules_apply_log log;
    gwr_status s = GWR_OK, f = gwr_rules_fire(it, seed, io, &in, &copy, &log, &s);
    if (f == GWR_ERR_NOMEM) return -1;
    if (f) {
        fprintf(out, "%s:%d: rule %s: FAIL: no instance of its pattern: %s\n", file, it->line, it->name, gwr_last_errmsg());
        return 0;
    }
    int ok = 0;
    if (s) {
        fprintf(out, "%s:%d: rule %s: FAIL: the rewrite failed on instance %d: %s\n", file, it->line, it->name, j, log.msg);
        print_instance(out, &in, seed);
    } else if (!log.rewrites) {
        fprintf(out, "%s:%d: rule %s: FAIL: did not fire on instance %d%s%s\n", file, it->line, it->name, j,
                log.reason[0] ? ": " : "", log.reason);
        print_instance(out, &in, seed);
    } else {
        gwr_compare_options co = {.atol = gwr_rules_item_tol(it), .rtol = gwr_rules_item_tol(it)};
        co.inputs.seed = inputs_seed(seed);
        gwr_compare_report rep;
        s = gwr_exec_compare(in.net, copy, &co, &rep);
        if (s || rep.error_in) {
            fprintf(out, "%s:%d: rule %s: FAIL: instance %d %s: %s\n", file, it->line, it->name, j,
                    rep.error_in == 2 || (!rep.error_in && s) ? "after the rewrite does not run" : "does not run",
                    gwr_last_errmsg());
            print_instance(out, &in, seed);
        } else {
            r->checked++;
            if (rep.max_abs > r->max_abs || isnan(rep.max_abs)) r->max_abs = rep.max_abs;
            if (rep.max_rel > r->max_rel || isnan(rep.max_rel)) r->max_rel = rep.max_rel;
            if (rep.pass) ok = 1;
            else {
                const gwr_compare_output *w = rep.worst >= 0 ? &rep.outputs[rep.worst] : NULL;
                if (w && !w->same_type) {
                    char ta[128] = "?", tb[128] = "?";
                    gwr_value_type_str(w->a, ta, sizeof ta);
                    gwr_value_type_str(w->b, tb, sizeof tb);
                    fprintf(out, "%s:%d: rule %s: FAIL: instance %d: output '%s' is %s before the rewrite, %s after\n", file,
                            it->line, it->name, j, w->name, ta, tb);
                } else
                    fprintf(out,
                            "%s:%d: rule %s: FAIL: instance %d: output '%s' differs by %.3g (relative %.3g)%s beyond tol %g"
                            " in %lld of %lld elements\n",
                            file, it->line, it->name, j, w ? w->name : "?", w ? w->max_abs : rep.max_abs,
                            w ? w->max_rel : rep.max_rel,
                            isinf(w ? w->max_abs : rep.max_abs) ? " (a NaN or an infinity against a number)" : "",
                            gwr_rules_item_tol(it), (long long)(w ? w->nbad : 0), (long long)(w ? w->numel : 0));
                print_instance(out, &in, seed);
                fprintf(out, "  inputs: seeded random, seed %llu (floats uniform in [-1, 1))\n",
                        (unsigned long long)co.inputs.seed);
                fprintf(out, "  after the rewrite:\n");
                gwr_rules_instance_print(copy, out, "    ");
            }
        }
        gwr_compare_report_free(&rep);
    }
    gwr_network_free(copy);
    gwr_rules_instance_free(&in);
    return ok;
}

int gwr_rules_check_items(const gwr_rules_item *items, int n, const gwr_rules_check_opts *o, FILE *out,
                          gwr_rules_check_result *res) {
    gwr_rules_check_opts def = {0};
    if (!o) o = &def;
    int ninst = o->instances > 0 ? o->instances : 5, failed = 0;
    for (int i = 0; i < n; i++) {
        const gwr_rules_item *it = &items[i];
        gwr_rules_check_result r = {0, 1, 0, 0};
        for (int j = 0; j < ninst; j++) {
            int k = check_one(it, i, j, o, out, &r);
            if (k < 0) return -1;
            if (!k) {
                r.pass = 0;
                break;
            }
        }
        if (r.pass)
            fprintf(out, "%s:%d: rule %s: ok: %d instances, worst difference %.3g (relative %.3g), tol %g\n",
                    gwr_rules_item_file(it), it->line, it->name, r.checked, r.max_abs, r.max_rel, gwr_rules_item_tol(it));
        failed += !r.pass;
        if (res) res[i] = r;
    }
    return failed;
}

/* ---- the load-time type check ---- */

static int same_type(const gwr_tensor *a, const gwr_tensor *b) {
    if (gwr_tensor_dtype(a) != gwr_tensor_dtype(b)) return 0;
    int r = gwr_tensor_rank(a);
    if (r < 0 || gwr_tensor_rank(b) < 0) return 1;
    if (r != gwr_tensor_rank(b)) return 0;
    for (int i = 0; i < r; i++) {
        gwr_dim x = gwr_tensor_dim(a, i), y = gwr_tensor_dim(b, i);
        if (x >= 0 && y >= 0 && x != y) return 0;
    }
    return 1;
}

gwr_status gwr_rules_check_types(const gwr_rules_item *it, uint64_t seed, char *why, size_t size) {
    if (size) why[0] = 0;
    gwr_rules_instance_options io = {.opset = it->opset, .hints = it->hints, .attrs = it->attrs, .nattrs = it->nattrs, .max_tries = 30};
    gwr_rules_instance in;
    gwr_network *copy = NULL;
    gwr_rules_apply_log log;
    gwr_status s = GWR_OK, f = gwr_rules_fire(it, seed, io, &in, &copy, &log, &s), res = GWR_OK;
    if (f) return f;
    if (s == GWR_ERR_TYPE || s == GWR_ERR_SHAPE) {
        snprintf(why, size, "the replacement cannot stand for the pattern's root: %s", log.msg);
        res = s;
    } else if (s == GWR_ERR_NOMEM) {
        res = s;
    } else if (s || !log.at_root) {
        /* the table matched the root (the instance is made so): a refusal
         * now is the rewrite's own, its replacement not fitting */
        if (!s && log.reason[0]) {
            char tr[128] = "?";
            gwr_tensor_type_str(gwr_layer_output(in.root, 0), tr, sizeof tr);
            snprintf(why, size, "the replacement does not fit the pattern's root (%s on an instance): %s", tr, log.reason);
            res = strstr(log.reason, "dtype") ? GWR_ERR_TYPE : strstr(log.reason, "rank differs") ? GWR_ERR_SHAPE
                                                                                                    : GWR_ERR_UNSUPPORTED;
        } else
            res = GWR_ERR_NOT_FOUND;
    } else {
        for (int o = 0; o < gwr_network_num_outputs(in.net) && !res; o++) {
            gwr_tensor *a = gwr_network_output(in.net, o), *b = gwr_network_find_tensor(copy, gwr_tensor_name(a));
            if (!b) continue;
            if (!same_type(a, b)) {
                char ta[128], tb[128];
                gwr_tensor_type_str(a, ta, sizeof ta);
                gwr_tensor_type_str(b, tb, sizeof tb);
                res = gwr_tensor_dtype(a) != gwr_tensor_dtype(b)   ? GWR_ERR_TYPE
                      : gwr_tensor_rank(a) != gwr_tensor_rank(b) ? GWR_ERR_SHAPE
                                                                 : GWR_ERR_UNSUPPORTED;
                snprintf(why, size, "the replacement gives %s where the pattern's root gives %s", tb, ta);
            }
        }
    }
    gwr_network_free(copy);
    gwr_rules_instance_free(&in);
    return res;
}
