/* rewrite_api.h - what src/rewrite offers the rooms built on it (passes)
 * beside the public API of include/gwr/rewrite.h. The only header of
 * src/rewrite that a file outside src/rewrite may include;
 * rewrite_internal.h is private to src/rewrite. Not part of the public
 * API. */
#ifndef GWR_REWRITE_API_H
#define GWR_REWRITE_API_H

#include "gwr/rewrite.h"
#include "util/util.h"

/* Leaves a message on a rewrite manager (gwr_rewrite_manager_errmsg) and
 * returns s: for the passes room's calls that take a manager. */
gwr_status rw_manager_error(gwr_rewrite_manager *m, gwr_status s, const char *fmt, ...) GWR_PRINTF(3, 4);

/* Hands obj to m: free_fn(obj) runs when m is freed (a rule set whose
 * rewriters m holds). Nonzero (nothing kept) when out of memory. */
int rw_manager_own(gwr_rewrite_manager *m, void *obj, void (*free_fn)(void *));

/* Does anyone read the reason of a no-match (a trace, --explain)? When
 * not, a pattern may skip formatting it. */
int rw_ctx_wants_reason(const gwr_rewrite_ctx *c);

/* Puts m's pattern `label` in phase `phase` (0 to 7; every pattern starts
 * in 0). A run with patterns in several phases offers each layer the
 * patterns of one phase at a time: the lowest phase's to a fixpoint, then
 * the next's, and the sequence again while a later phase's changes touched
 * layers (driver.c); gwr_optimize's phases. GWR_ERR_NOT_FOUND,
 * GWR_ERR_INVALID_ARG, GWR_ERR_STATE while running. */
gwr_status rw_manager_set_phase(gwr_rewrite_manager *m, const char *label, int phase);

/* Seconds on the monotonic clock (the managers' time_patterns; the
 * optimizer's rounds). */
double rw_now(void);

#endif
