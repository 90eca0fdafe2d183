/* net_count.h - counting layers in the tests of the rewrite room. */
#ifndef GWR_TEST_NET_COUNT_H
#define GWR_TEST_NET_COUNT_H

#include <string.h>

#include "gwr/gwr.h"

/* Live (not removed) layers of op `op` in net. */
static inline int64_t count_op(gwr_network *net, const char *op) {
    int64_t n = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (!gwr_layer_is_removed(l) && !strcmp(gwr_layer_op(l), op)) n++;
    }
    return n;
}

#endif
