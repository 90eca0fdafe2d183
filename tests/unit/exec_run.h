/* exec_run.h - running a one-layer network in the tests of the exec room. */
#ifndef GWR_TEST_EXEC_RUN_H
#define GWR_TEST_EXEC_RUN_H

#include <stdio.h>

#include "gwr/gwr.h"

/* Marks output 0 of l as the network's output, runs net once with no
 * inputs, frees net and returns that output (the caller's), or NULL with
 * the session's message in msg. */
static inline gwr_value *run_layer_output0(gwr_network *net, gwr_layer *l, char *msg, size_t size) {
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    gwr_session *s = gwr_session_new_raw(net, NULL);
    gwr_value *v = NULL;
    msg[0] = 0;
    if (!s) snprintf(msg, size, "%s", gwr_last_errmsg());
    else if (gwr_session_run(s, 0, NULL, NULL, 1, NULL, &v)) snprintf(msg, size, "%s", gwr_session_errmsg(s));
    gwr_session_free(s);
    gwr_network_free(net);
    return v;
}

#endif
