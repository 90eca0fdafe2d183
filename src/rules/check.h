/* check.h - `gwr rules check` and `gwr rules lint` over a list of rules,
 * each seen as a match table (what its instances are drawn from) and a
 * pattern rewriter (what it does), so that the same checks run on a
 * parsed .rules file and on hand-written C patterns.
 *
 * check: for each rule, N random instances of its table
 * (instance.h); each is copied, the rule alone applied to the copy (it
 * must fire), and both networks run on the executor on the same seeded
 * random inputs (gwr_exec_compare); the worst absolute and relative
 * differences are reported and a difference beyond the rule's tolerance
 * (|a - b| <= tol + tol * |b|) fails the rule, printing the instance and
 * the inputs' seed.
 *
 * lint, before anything runs on a model:
 *  - loop: the rule fires again on what it produced from its instance and
 *    does not stop within 16 rewrites (firing on its own output and then
 *    stopping is a note, not a finding);
 *  - undo: in one phase, B fires on what A made of A's instance and A
 *    fires on what B made of B's instance;
 *  - shadow: a rule R tried before S (higher benefit, or equal and
 *    earlier; same phase) fires at the root of every instance of S, so S
 *    never fires there.
 * Rules of no common target never meet (`target ort` and `target gwr`);
 * a pair is tried under the first target both serve (the manager arg
 * "target"), each instance at its own opset. */
#ifndef GWR_RULES_CHECK_H
#define GWR_RULES_CHECK_H

#include <stdio.h>

#include "rules/instance.h"

typedef struct gwr_rules_item {
    const char *name;
    const char *file;  /* for messages; NULL: "<string>" */
    int line;
    int benefit;
    int phase;         /* rules of different phases never meet */
    double tol;        /* <= 0: 1e-5 */
    const gwr_match_pattern *pattern;   /* instances are drawn from it */
    gwr_pattern_rewriter rewriter;      /* the rule alone */
    const gwr_rules_slot_hint *hints;   /* GWR_MATCH_MAX_CAPTURES entries, or NULL */
    const gwr_rules_attr_draw *attrs;   /* attributes the rule captures (nattrs) */
    int nattrs;
    int64_t opset;                      /* the instances' default-domain opset; 0: none imported */
    const gwr_args *args;               /* the manager's args when the rule runs ("target"), or NULL */
    unsigned targets;                   /* the GWR_TARGET_* the rule serves (lint pairs rules of a common one); 0: any */
    int group;                          /* items of one nonzero group are one rule (its alternatives): never paired by lint */
} gwr_rules_item;

typedef struct gwr_rules_check_opts {
    int instances;     /* per rule; 0: 5 */
    uint64_t seed;     /* instances and inputs are drawn from it */
} gwr_rules_check_opts;

/* Per-rule results of a check. */
typedef struct gwr_rules_check_result {
    int checked;        /* instances run */
    int pass;           /* every instance fired and was within tolerance */
    double max_abs, max_rel;
} gwr_rules_check_result;

/* Checks items[0..n) and prints one line per rule (and the failing
 * instance) on out. res (may be NULL; n entries) gets each rule's result.
 * Returns the number of failing rules, or -1 on an internal error (out of
 * memory; the message in gwr_last_errmsg()). */
int gwr_rules_check_items(const gwr_rules_item *items, int n, const gwr_rules_check_opts *o, FILE *out,
                          gwr_rules_check_result *res);

/* Lints items[0..n): prints one line per finding ("file:line: ..."), and
 * notes, on out. Returns the number of findings (notes not counted), or
 * -1 on an internal error. */
int gwr_rules_lint_items(const gwr_rules_item *items, int n, const gwr_rules_check_opts *o, FILE *out);

/* The load-time check of one rule: on an instance of its table (drawn
 * from seed), does the rule's replacement give the root's outputs their
 * dtype and shape? GWR_OK when it does; GWR_ERR_NOT_FOUND when there is
 * nothing to say (no instance could be drawn, or the rule refused without
 * a reason); otherwise the reason in why ("the replacement gives
 * float32[6] where the pattern's root gives float32[2,3]", or the
 * rewrite's own refusal of its replacement) and GWR_ERR_TYPE (another
 * dtype), GWR_ERR_SHAPE (another rank) or GWR_ERR_UNSUPPORTED (other dims,
 * or another refusal: what may hold on this instance's shapes and values
 * only). */
gwr_status gwr_rules_check_types(const gwr_rules_item *item, uint64_t seed, char *why, size_t size);

#endif
