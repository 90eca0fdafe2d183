/* pass_util.h - what the optimizer's passes (src/passes) share beyond the
 * public match helpers: building constants from computed values, which
 * needs the executor's dtype conversions. Private to src/passes. */
#ifndef GWR_PASS_UTIL_H
#define GWR_PASS_UTIL_H

#include "gwr/gwr.h"

/* A new CONSTANT layer of dtype dt and shape dims holding the numel(dims)
 * doubles of v, each rounded once to dt (as gwr_value_set_f64 rounds), or,
 * with v NULL, `fill` everywhere. Its output, or NULL: out of memory
 * (gwr_last_errmsg) or refused by the network (message on net). */
gwr_tensor *gwr_ps_const_new(gwr_network *net, gwr_dtype dt, int rank, const int64_t *dims, const double *v,
                             double fill);

/* The optimizer's target (gwr_optimize's manager arg "target",
 * GWR_TARGET_*); GWR_TARGET_ONNX without one (a plain manager run). */
int64_t gwr_ps_target(gwr_rewrite_ctx *c);

#endif
