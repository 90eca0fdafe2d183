/* bench_rules_c.c - the C side of bench/python_rules.py: a .rules file
 * loaded through the C API (gwr_rules_load) and run by a rewrite manager.
 *
 *   bench_rules_c MODEL.onnx RULES.rules [REPEAT]
 *
 * Each of REPEAT runs (default 5) loads MODEL with shape inference (not
 * timed), loads the rules into a fresh manager (timed: "load_s") and runs
 * gwr_rewrite_manager_rewrite with the default options, timed around the
 * call with CLOCK_MONOTONIC ("rewrite_s") and CLOCK_THREAD_CPUTIME_ID
 * ("rewrite_cpu_s": what the run cost this thread, whatever else the
 * machine runs). Prints one JSON line with the best load time, every
 * run's rewrite times, the visited layers, the rewrites and each rule's
 * counters of the last run, which python_rules.py compares with the same
 * rules loaded from Python. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gwr/gwr.h"

enum { MAX_REPEAT = 101 };

static double clock_s(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }
static double cpu_s(void) { return clock_s(CLOCK_THREAD_CPUTIME_ID); }

static void print_list(const char *name, const double *v, int n) {
    printf("\"%s\": [", name);
    for (int i = 0; i < n; i++) printf("%s%.9f", i ? ", " : "", v[i]);
    printf("], ");
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: bench_rules_c MODEL.onnx RULES.rules [REPEAT]\n");
        return 2;
    }
    int repeat = argc > 3 ? atoi(argv[3]) : 5;
    if (repeat < 1) repeat = 1;
    if (repeat > MAX_REPEAT) repeat = MAX_REPEAT;
    double best_load = 0, rw[MAX_REPEAT], cpu[MAX_REPEAT];
    gwr_rewrite_summary su = {0};
    for (int k = 0; k < repeat; k++) {
        gwr_onnx_load_options lo = {.infer_shapes = 1};
        gwr_network *net = gwr_onnx_load(argv[1], &lo);
        if (!net) {
            fprintf(stderr, "bench_rules_c: %s\n", gwr_last_errmsg());
            return 1;
        }
        gwr_rewrite_manager *m = gwr_rewrite_manager_new();
        double t0 = now_s();
        gwr_status s = m ? gwr_rules_load(m, argv[2]) : GWR_ERR_NOMEM;
        double t1 = now_s();
        if (s) {
            fprintf(stderr, "bench_rules_c: %s\n", gwr_last_errmsg());
            gwr_rewrite_manager_free(m);
            gwr_network_free(net);
            return 1;
        }
        double c1 = cpu_s();
        s = gwr_rewrite_manager_rewrite(m, net, NULL);
        double c2 = cpu_s(), t2 = now_s();
        if (s) {
            fprintf(stderr, "bench_rules_c: rewrite: %s\n", gwr_rewrite_manager_errmsg(m));
            gwr_rewrite_manager_free(m);
            gwr_network_free(net);
            return 1;
        }
        if (!k || t1 - t0 < best_load) best_load = t1 - t0;
        rw[k] = t2 - t1;
        cpu[k] = c2 - c1;
        gwr_rewrite_manager_summary(m, &su);
        if (k == repeat - 1) {
            printf("{\"load_s\": %.9f, ", best_load);
            print_list("rewrite_s", rw, repeat);
            print_list("rewrite_cpu_s", cpu, repeat);
            printf("\"visited\": %lld, \"rewrites\": %lld, \"layers_before\": %lld, \"layers_after\": %lld, "
                   "\"rules\": {",
                   (long long)su.visited, (long long)su.rewrites, (long long)su.layers_before,
                   (long long)su.layers_after);
            for (int i = 0; i < gwr_rewrite_manager_count(m); i++) {
                gwr_pattern_stats st;
                gwr_rewrite_manager_stats(m, i, &st);
                printf("%s\"%s\": [%lld, %lld, %lld]", i ? ", " : "", gwr_rewrite_manager_label(m, i),
                       (long long)st.attempts, (long long)st.matches, (long long)st.rewrites);
            }
            printf("}}\n");
        }
        gwr_rewrite_manager_free(m);
        gwr_network_free(net);
    }
    return 0;
}
