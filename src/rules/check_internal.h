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

double gwr_rules_item_tol(const gwr_rules_item *it);
const char *gwr_rules_item_file(const gwr_rules_item *it);
uint64_t gwr_rules_instance_seed(uint64_t seed, int rule, int j);

#endif
