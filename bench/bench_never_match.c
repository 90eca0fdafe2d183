/* bench_never_match.c - what a pattern that never matches costs per layer
 * in C: the reference point of bench/py_pattern_cost.py (issue 15).
 *
 *   bench_never_match [LAYERS] [REPEAT]
 *
 * Builds a chain of LAYERS (default 100000) Neg layers (not timed) and times
 * gwr_rewrite_manager_rewrite with one pattern rooted on every layer whose
 * match returns 0, and with an empty manager (the driver's own walk), best
 * of REPEAT (default 5) runs each, with CLOCK_MONOTONIC around the call.
 * Prints one line per manager: name, seconds, layers visited, ns per layer,
 * ns per layer over the empty manager: the same columns as the Python
 * script, which runs this program in the same run. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gwr/gwr.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Reads the layer's op, as a real match would, and declines. */
static int never(gwr_rewrite_ctx *c, gwr_layer *l) {
    (void)c;
    return gwr_layer_op_id(l) == GWR_OP_COUNT;
}

static gwr_status no_rewrite(gwr_rewrite_ctx *c, gwr_layer *l) {
    (void)c, (void)l;
    return GWR_ERR_STATE;
}

static int run(const char *name, gwr_network *net, gwr_rewrite_manager *m, int repeat, double base) {
    double best = -1;
    gwr_rewrite_summary s = {0};
    for (int r = 0; r < repeat; r++) {
        double t0 = now_s();
        gwr_status st = gwr_rewrite_manager_rewrite(m, net, NULL);
        double dt = now_s() - t0;
        if (st) {
            fprintf(stderr, "bench_never_match: %s\n", gwr_rewrite_manager_errmsg(m));
            return -1;
        }
        gwr_rewrite_manager_summary(m, &s);
        if (s.rewrites) {
            fprintf(stderr, "bench_never_match: the pattern matched\n");
            return -1;
        }
        if (best < 0 || dt < best) best = dt;
    }
    double per = best / (double)(s.visited ? s.visited : 1) * 1e9;
    printf("%-8s %10.4f %9lld %9.1f %11.1f\n", name, best, (long long)s.visited, per, base < 0 ? 0.0 : per - base);
    return (int)(per * 1000);
}

int main(int argc, char **argv) {
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 100000;
    int repeat = argc > 2 ? atoi(argv[2]) : 5;
    if (n < 1 || repeat < 1) {
        fprintf(stderr, "usage: bench_never_match [LAYERS >= 1] [REPEAT >= 1]\n");
        return 2;
    }
    gwr_network *net = gwr_network_new("chain");
    int64_t dims[1] = {4};
    gwr_tensor *y = net ? gwr_network_add_input(net, "x", GWR_FLOAT32, 1, dims) : NULL;
    for (long i = 0; y && i < n; i++) y = gwr_neg(net, y);
    gwr_rewrite_manager *empty = gwr_rewrite_manager_new(), *c = gwr_rewrite_manager_new();
    gwr_pattern_rewriter p = {.name = "never_c", .root_classes = 0, .separate_match_rewrite = 1,
                              .match = never, .rewrite = no_rewrite};
    if (!y || gwr_network_mark_output(net, y) || !empty || !c || gwr_rewrite_manager_add(c, "never", &p, 0)) {
        fprintf(stderr, "bench_never_match: cannot build the network or the managers\n");
        return 1;
    }
    printf("%ld Neg layers, best of %d runs (C)\n", n, repeat);
    printf("%-8s %10s %9s %9s %11s\n", "manager", "seconds", "visited", "ns/layer", "over empty");
    int base = run("empty", net, empty, repeat, -1);
    int rc = base < 0 || run("c_never", net, c, repeat, base / 1000.0) < 0;
    gwr_rewrite_manager_free(empty);
    gwr_rewrite_manager_free(c);
    gwr_network_free(net);
    return rc;
}
