/* bench_onnx.c - generators and timers for the ONNX benchmarks (issue 3).
 *
 *   bench_onnx gen-gpt BLOCKS HIDDEN FILE [--static]
 *                                              a GPT-style decoder in plain ONNX ops; with
 *                                              --static the input and output dims are fixed
 *                                              (batch 1, seq 128) instead of symbolic
 *   bench_onnx gen-big MIB FILE [--external]   a decoder holding about MIB MiB of weights
 *   bench_onnx load FILE [REPEAT]              time gwr_onnx_load (best of REPEAT), peak RSS
 *   bench_onnx convert IN OUT [REPEAT]         time load + save (the work of `gwr convert`)
 *   bench_onnx save IN OUT [REPEAT]            time gwr_onnx_save alone
 *
 * Times are CLOCK_MONOTONIC; peak memory is getrusage(RUSAGE_SELF).ru_maxrss,
 * so run one measurement per process (bench/run_onnx_bench.sh does). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "gwr/gwr.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static long peak_rss_kib(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

static double file_mib(const char *path) {
    struct stat st;
    return stat(path, &st) ? 0.0 : (double)st.st_size / (1024.0 * 1024.0);
}

static int die(const char *what, const char *msg) {
    fprintf(stderr, "bench_onnx: %s: %s\n", what, msg);
    return 1;
}

static int gen(const char *path, int blocks, int hidden, int external, int fixed) {
    gwr_network *net = gwr_network_new("gpt");
    gwr_gpt_config cfg = {.blocks = blocks, .hidden = hidden, .heads = hidden >= 64 ? hidden / 64 : 1,
                          .use_plugin = 0, .seed = 1};
    gwr_tensor *y = gwr_build_gpt(net, &cfg);
    if (!y) return die("gwr_build_gpt", gwr_network_errmsg(net));
    if (fixed) {
        /* Only the graph's input and output: the file keeps no inner shapes. */
        gwr_dim dims[3] = {1, 128, hidden};
        gwr_tensor *x = gwr_network_find_tensor(net, "x");
        if (!x || gwr_tensor_set_type(x, GWR_FLOAT32, 3, dims) || gwr_tensor_set_type(y, GWR_FLOAT32, 3, dims))
            return die("--static", gwr_network_errmsg(net));
    }
    gwr_network_set_prop(net, "onnx.producer_name", "gwr bench", 9);
    gwr_onnx_save_options opt = {.external_data = external};
    if (gwr_onnx_save(net, path, &opt)) return die(path, gwr_network_errmsg(net));
    printf("%s: %d blocks, hidden %d, %lld layers, %.1f MiB%s%s\n", path, blocks, hidden,
           (long long)gwr_network_num_layers(net), file_mib(path), external ? " (+ external data)" : "",
           fixed ? ", input and output [1, 128, hidden]" : ", input and output [batch, seq, hidden]");
    gwr_network_free(net);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 5 && !strcmp(argv[1], "gen-gpt")) return gen(argv[4], atoi(argv[2]), atoi(argv[3]), 0, argc > 5 && !strcmp(argv[5], "--static"));
    if (argc >= 4 && !strcmp(argv[1], "gen-big")) {
        /* Weights per block: 12 * hidden^2 floats; hidden 1024 gives 48 MiB. */
        int mib = atoi(argv[2]), blocks = (mib + 47) / 48;
        return gen(argv[3], blocks, 1024, argc > 4 && !strcmp(argv[4], "--external"), 0);
    }
    if (argc >= 3 && !strcmp(argv[1], "load")) {
        int rep = argc > 3 ? atoi(argv[3]) : 1;
        double best = 1e30;
        int64_t layers = 0;
        for (int r = 0; r < (rep > 0 ? rep : 1); r++) {
            double t0 = now_s();
            gwr_network *net = gwr_onnx_load(argv[2], NULL);
            double dt = now_s() - t0;
            if (!net) return die("load", gwr_last_errmsg());
            layers = gwr_network_num_layers(net);
            gwr_network_free(net);
            if (dt < best) best = dt;
        }
        double mib = file_mib(argv[2]);
        printf("load %s: %.4f s, %.2f GB/s of model file, %lld layers, peak RSS %.1f MiB (file %.1f MiB)\n", argv[2],
               best, mib * 1048576.0 / best / 1e9, (long long)layers, (double)peak_rss_kib() / 1024.0, mib);
        return 0;
    }
    if (argc >= 4 && (!strcmp(argv[1], "convert") || !strcmp(argv[1], "save"))) {
        int rep = argc > 4 ? atoi(argv[4]) : 1, save_only = !strcmp(argv[1], "save");
        double best = 1e30;
        gwr_network *kept = save_only ? gwr_onnx_load(argv[2], NULL) : NULL;
        if (save_only && !kept) return die("load", gwr_last_errmsg());
        for (int r = 0; r < (rep > 0 ? rep : 1); r++) {
            double t0 = now_s();
            gwr_network *net = kept ? kept : gwr_onnx_load(argv[2], NULL);
            if (!net) return die("load", gwr_last_errmsg());
            if (gwr_onnx_save(net, argv[3], NULL)) return die("save", gwr_network_errmsg(net));
            double dt = now_s() - t0;
            if (!kept) gwr_network_free(net);
            if (dt < best) best = dt;
        }
        gwr_network_free(kept);
        double mib = file_mib(argv[3]);
        printf("%s %s: %.4f s, %.2f GB/s of model file, peak RSS %.1f MiB (file %.1f MiB)\n", argv[1], argv[2], best,
               mib * 1048576.0 / best / 1e9, (double)peak_rss_kib() / 1024.0, mib);
        return 0;
    }
    fprintf(stderr, "usage: see the comment at the top of bench/bench_onnx.c\n");
    return 2;
}
