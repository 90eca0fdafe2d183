/* check_internal.h - what check.c and lint.c share. */
#ifndef GWR_RULES_CHECK_INTERNAL_H
#define GWR_RULES_CHECK_INTERNAL_H

#include "rules/check.h"

/* What a run of some rules did to a network. */
typedef struct gwr_rules_apply_log {
    const char *root_name;  /* the layer watched (may be NULL) */
    int64_t rewrites;       /* in all */
    int at_root;            /* rewrites rooted at root_name */
    char root_label[160];   /* the label ("name#k") of the first of them */
    char reason[256];       /* the last match failure's reason at root_name */
    char msg[512];          /* the manager's message on failure */
} gwr_rules_apply_log;

/* Runs its[0..n) in one manager (each with its benefit; the args of its[0])
 * on net: single
 * pass or to a fixpoint, max_rewrites as gwr_rewrite_options (0: the
 * default). The manager's status; log filled. */
gwr_status gwr_rules_apply(const gwr_rules_item *const *its, int n, gwr_network *net, int single_pass,
                           int64_t max_rewrites, gwr_rules_apply_log *log);

/* Draws an instance of it's table from seed that the rule fires on (io:
 * the options but the dtype, opset and tail) and applies the rule alone
 * to a copy of it. Tried at the item's opset, then at others (what a
 * header's opset or a where clause on opset() needs), each with and
 * without an Identity after the root, each with captures of no fixed
 * dtype float32, then int64, float16, float64, int32 when the rule
 * refuses the instance for its dtype. GWR_OK with *in, *copy (rewritten,
 * or, when no draw fires, the first drawn, not rewritten: log says why)
 * and *applied (the manager's status); GWR_ERR_NOT_FOUND when no instance
 * could be drawn (gwr_last_errmsg); GWR_ERR_NOMEM. */
gwr_status gwr_rules_fire(const gwr_rules_item *it, uint64_t seed, gwr_rules_instance_options io, gwr_rules_instance *in,
                          gwr_network **copy, gwr_rules_apply_log *log, gwr_status *applied);

double gwr_rules_item_tol(const gwr_rules_item *it);
const char *gwr_rules_item_file(const gwr_rules_item *it);
uint64_t gwr_rules_instance_seed(uint64_t seed, int rule, int j);

#endif
