/* session_opt.c - gwr_session_new: a session that compiles.
 *
 * The executor (src/exec) sits below the optimizer in the room order, so
 * it cannot call gwr_optimize; it plans networks as written
 * (gwr_session_new_raw). The session users ask for is made here instead:
 * the network is cloned, the clone optimized for gwr's own executor
 * (target gwr: its fused layers FusedConv, FusedGemm, FusedMatMul,
 * BiasGelu, Attention, ...), and the clone planned and handed to the
 * session, which frees it. Any failure on that way falls back to planning
 * the caller's network as written, with the reason kept on the session:
 * an optimization never keeps a network from running. */
#include <stdio.h>

#include "exec/exec_api.h"
#include "gwr/optimize.h"
#include "util/util.h"

/* Passes of target gwr and level extended left out of sessions because
 * gwr's executor ran the model slower with them (docs/api.md, "Sessions",
 * has the measurements). */
static const char *const session_disabled = NULL;

/* An optimized copy of net, or NULL with the reason in why. */
static gwr_network *optimized_copy(gwr_network *net, const gwr_session_options *opt, gwr_session_optimize mode, char *why,
                                   size_t size) {
    gwr_network *copy = gwr_network_clone(net);
    if (!copy) {
        snprintf(why, size, "cloning the network: %s", gwr_last_errmsg());
        return NULL;
    }
    gwr_optimize_options oo = {
        .level = mode == GWR_SESSION_BASIC ? GWR_LEVEL_BASIC : GWR_LEVEL_EXTENDED,
        .target = GWR_TARGET_GWR,
        .disable = session_disabled,
        .nbind = opt ? opt->nbind : 0,
        .bind = opt ? opt->bind : NULL,
    };
    if (gwr_optimize(copy, &oo, NULL)) {
        snprintf(why, size, "optimizing: %s", gwr_network_errmsg(copy));
        gwr_network_free(copy);
        return NULL;
    }
    return copy;
}

gwr_session *gwr_session_new(gwr_network *net, const gwr_session_options *opt) {
    gwr_session_optimize mode = opt ? opt->optimize : GWR_SESSION_OPTIMIZE;
    if (mode != GWR_SESSION_OPTIMIZE && mode != GWR_SESSION_RAW && mode != GWR_SESSION_BASIC) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_session_new: unknown optimize mode %d", (int)mode);
        return NULL;
    }
    char why[GWR_ERRMSG_MAX] = "off";
    if (net && mode != GWR_SESSION_RAW) {
        gwr_network *copy = optimized_copy(net, opt, mode, why, sizeof why);
        gwr_session *s = copy ? gwr_session_new_raw(copy, opt) : NULL;
        if (s) {
            gwr_session_set_origin(s, copy, NULL);
            return s;
        }
        if (copy) snprintf(why, sizeof why, "planning the optimized network: %s", gwr_last_errmsg());
        gwr_network_free(copy);
    }
    gwr_session *s = gwr_session_new_raw(net, opt);
    if (s) gwr_session_set_origin(s, NULL, why);
    return s;
}
