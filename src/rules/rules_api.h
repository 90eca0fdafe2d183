/* rules_api.h - what src/rules offers the rooms built on it (passes)
 * beside the public API of include/gwr/rules.h. The only header of
 * src/rules that a file outside src/rules may include. Not public. */
#ifndef GWR_RULES_API_H
#define GWR_RULES_API_H

#include "gwr/rules.h"

/* A new constant tensor of dtype dt in net holding v[0..numel) (or fill
 * everywhere when v is NULL), each value rounded to dt as the executor
 * stores it. NULL on error (gwr_last_errmsg). */
gwr_tensor *gwr_rl_const_new(gwr_network *net, gwr_dtype dt, int rank, const int64_t *dims, const double *v, double fill);

/* The phase of rule i's header: "cleanup", "fold", "fuse", "lower", or NULL
 * when it names none (for the pass table's phases). */
const char *gwr_rl_phase(const gwr_rules *r, int i);

/* gwr_rules_parse for the rule files built into gwr (src/passes/rules),
 * without the load-time instance check: loading them is part of every
 * optimize, where that check cost more than the rules' matching over a
 * 45k-layer network, and the same files are checked (and more thoroughly)
 * by the test suite (rules/check/<file>: `gwr rules check`). */
gwr_status gwr_rl_parse_builtin(const char *text, const char *filename, gwr_rules **out);

/* Runs every rule of r rooted on l's op, higher benefit first (file order
 * among equals), until one rewrites: a match_and_rewrite for a pass made
 * of a whole rule file (src/passes/rules_pass.c). */
int gwr_rl_run_all(const gwr_rules *r, gwr_rewrite_ctx *c, gwr_layer *l);

#endif
