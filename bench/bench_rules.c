/* bench_rules.c - the two rules of issue 23 loaded from text against the
 * built-in passes that do the same (fuse_gelu, compose_transposes): time
 * per visited layer of a rewrite manager over a chain of BLOCKS blocks
 * (default 20000) of erf-GELU then Transpose(Transpose(.)) then Relu.
 *
 *   bench_rules [BLOCKS] [REPEAT]
 *
 * Two networks: "fire" (every block rewrites) and "miss" (0.6 for the 0.5
 * of the GELU and one Transpose: nothing matches, the matching cost
 * alone). Best of REPEAT (default 3) runs each; the manager arg target is
 * gwr. fuse_gelu also knows the tanh form and more operand orders (its
 * tables), so the passes do more work per attempt than the one-table rule. */
#include <stdio.h>
#include <stdlib.h>

#include "gwr/gwr.h"

static const char *const RULES =
    "rule gelu_erf benefit 20:\n"
    "  Mul(Mul(x, 0.5), Add(Erf(Div(x, c ~ 1.4142135 tol 1e-4)), 1.0))  =>  Gelu(x)\n"
    "rule fold_transposes:\n"
    "  Transpose<perm=p2>(Transpose<perm=p1>(x))  =>  Transpose<perm=compose(p1, p2)>(x)\n";

static gwr_network *build(int blocks, int miss) {
    gwr_network *net = gwr_network_new("bench_rules");
    gwr_network_set_opset(net, "", 20);
    gwr_dim d[2] = {4, 8};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, d);
    int64_t p[2] = {1, 0};
    for (int i = 0; i < blocks; i++) {
        gwr_tensor *dv = gwr_div(net, x, gwr_constant_f32(net, 1.4142135f));
        gwr_tensor *h = gwr_mul(net, x, gwr_constant_f32(net, miss ? 0.6f : 0.5f));
        gwr_tensor *y = gwr_mul(net, h, gwr_add(net, gwr_erf(net, dv), gwr_constant_f32(net, 1)));
        y = miss ? gwr_transpose(net, y, 2, p) : gwr_transpose(net, gwr_transpose(net, y, 2, p), 2, p);
        x = gwr_relu(net, y);
    }
    gwr_network_mark_output(net, x);
    return net;
}

/* One run: seconds per visited layer (ns), rewrites in *nrw. */
static double run(int rules, int blocks, int miss, long long *nrw, long long *visited) {
    gwr_network *net = build(blocks, miss);
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    gwr_args *a = gwr_args_new();
    gwr_args_set_int(a, "target", GWR_TARGET_GWR);
    if (rules ? gwr_rules_load(m, RULES) : gwr_passes_add(m, "fuse_gelu") || gwr_passes_add(m, "compose_transposes")) {
        fprintf(stderr, "bench_rules: %s\n", gwr_rewrite_manager_errmsg(m));
        exit(1);
    }
    if (gwr_rewrite_manager_rewrite(m, net, a)) {
        fprintf(stderr, "bench_rules: %s\n", gwr_rewrite_manager_errmsg(m));
        exit(1);
    }
    gwr_rewrite_summary s;
    gwr_rewrite_manager_summary(m, &s);
    *nrw = s.rewrites, *visited = s.visited;
    gwr_args_free(a);
    gwr_rewrite_manager_free(m);
    gwr_network_free(net);
    return s.seconds * 1e9 / (double)(s.visited ? s.visited : 1);
}

int main(int argc, char **argv) {
    int blocks = argc > 1 ? atoi(argv[1]) : 20000, repeat = argc > 2 ? atoi(argv[2]) : 3;
    if (blocks < 1 || repeat < 1) return fprintf(stderr, "usage: bench_rules [BLOCKS] [REPEAT]\n"), 2;
    for (int miss = 0; miss < 2; miss++)
        for (int rules = 0; rules < 2; rules++) {
            double best = 1e300;
            long long nrw = 0, visited = 0;
            for (int k = 0; k < repeat; k++) {
                double t = run(rules, blocks, miss, &nrw, &visited);
                if (t < best) best = t;
            }
            printf("%-4s %-6s visited %8lld rewrites %6lld  %7.0f ns per visited layer\n", miss ? "miss" : "fire",
                   rules ? "rules" : "passes", visited, nrw, best);
        }
    return 0;
}
