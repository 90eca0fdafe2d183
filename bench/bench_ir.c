/* bench_ir.c - cost of the IR itself.
 *
 * (a) Builds a network of 1,000,000 element-wise Add layers, each reading the
 *     previous layer's output and one graph input, every output typed
 *     float32[batch,1024] ("batch" a symbolic dim), through the public API
 *     (gwr_network_add_layer + gwr_tensor_set_type, auto-generated names).
 *     Reports the wall time (CLOCK_MONOTONIC) and the IR's memory per layer,
 *     measured as the growth of the process heap (glibc mallinfo2():
 *     uordblks + hblkhd) from before the network is created to after it is
 *     built. Targets: <= 1 s and <= 256 bytes per layer.
 * (b) Per-call cost of gwr_tensor_parent, gwr_tensor_user,
 *     gwr_network_find_tensor and gwr_tensor_replace_all_uses_with on the
 *     same kind of network at 10^3 .. 10^6 layers. Each call cycles over a
 *     fixed working set of 1,024 tensors, taken two ways: spread evenly over
 *     the whole chain (random-access cost: includes the cache and TLB misses
 *     a bigger network brings) and 1,024 consecutive layers from the middle
 *     (the algorithmic cost). replace_all_uses_with moves the 3 users of a
 *     side tensor to another of the same type and back. Best of 3 runs;
 *     target: max/min across sizes within 2x.
 *
 * Usage: bench_ir [max_layers]   (default 1000000) */
#include <inttypes.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gwr/gwr.h"
#include "ir/ir_internal.h" /* only for sizeof, in the memory breakdown */

enum { NPROBE = 1024, NSIZES = 4 };

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t heap_bytes(void) {
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static void die(const char *what, gwr_network *net) {
    fprintf(stderr, "bench_ir: %s failed: %s\n", what, net ? gwr_network_errmsg(net) : gwr_last_errmsg());
    exit(1);
}

typedef struct probes {
    gwr_tensor *t[NPROBE]; /* chain outputs with exactly one user */
    char *name[NPROBE];
} probes;

typedef struct chain {
    gwr_network *net;
    gwr_tensor *x, *b;
    probes spread, window;
    gwr_tensor *side_a, *side_b; /* same type; side_a has 3 users */
} chain;

/* x -> Add(x, b) -> Add(., b) -> ... n layers. */
static void build_chain(chain *c, int64_t n) {
    memset(c, 0, sizeof *c);
    c->net = gwr_network_new("bench");
    if (!c->net) die("gwr_network_new", NULL);
    gwr_dim dims[2] = {gwr_network_dim_sym(c->net, "batch"), 1024};
    c->x = gwr_network_add_input(c->net, "x", GWR_FLOAT32, 2, dims);
    c->b = gwr_network_add_input(c->net, "b", GWR_FLOAT32, 2, dims);
    if (!c->x || !c->b) die("gwr_network_add_input", c->net);
    gwr_tensor *prev = c->x;
    for (int64_t i = 0; i < n; i++) {
        gwr_tensor *ins[2] = {prev, c->b};
        gwr_layer *l = gwr_network_add_layer(c->net, "Add", "", NULL, 2, ins, 1, NULL);
        if (!l) die("gwr_network_add_layer", c->net);
        prev = gwr_layer_output(l, 0);
        if (gwr_tensor_set_type(prev, GWR_FLOAT32, 2, dims) != GWR_OK) die("gwr_tensor_set_type", c->net);
    }
}

/* Probes, and two side tensors off the middle of the chain for
 * replace_all_uses_with: A = Relu(mid), B = Sigmoid(mid), and 3 layers
 * Add(A, b). */
static void set_probe(chain *c, probes *p, int i, int64_t layer) {
    p->t[i] = gwr_layer_output(gwr_network_layer(c->net, layer), 0);
    p->name[i] = strdup(gwr_tensor_name(p->t[i]));
}

static void add_probes(chain *c, int64_t n) {
    int64_t m = n - 1; /* layers 0 .. n-2 have exactly one user */
    int64_t w0 = m > NPROBE ? (m - NPROBE) / 2 : 0;
    for (int i = 0; i < NPROBE; i++) {
        set_probe(c, &c->spread, i, m >= NPROBE ? (int64_t)i * (m / NPROBE) : i % m);
        set_probe(c, &c->window, i, m >= NPROBE ? w0 + i : i % m);
    }
    gwr_dim dims[2] = {gwr_network_dim_sym(c->net, "batch"), 1024};
    gwr_tensor *mid = gwr_layer_output(gwr_network_layer(c->net, n / 2), 0);
    gwr_layer *la = gwr_network_add_layer(c->net, "Relu", "", "side_a", 1, &mid, 1, NULL);
    gwr_layer *lb = gwr_network_add_layer(c->net, "Sigmoid", "", "side_b", 1, &mid, 1, NULL);
    if (!la || !lb) die("gwr_network_add_layer", c->net);
    c->side_a = gwr_layer_output(la, 0);
    c->side_b = gwr_layer_output(lb, 0);
    gwr_tensor_set_type(c->side_a, GWR_FLOAT32, 2, dims);
    gwr_tensor_set_type(c->side_b, GWR_FLOAT32, 2, dims);
    for (int i = 0; i < 3; i++) {
        gwr_tensor *ins[2] = {c->side_a, c->b};
        if (!gwr_network_add_layer(c->net, "Add", "", NULL, 2, ins, 1, NULL)) die("gwr_network_add_layer", c->net);
    }
}

static void free_chain(chain *c) {
    for (int i = 0; i < NPROBE; i++) {
        free(c->spread.name[i]);
        free(c->window.name[i]);
    }
    gwr_network_free(c->net);
}

static volatile uintptr_t sink;

/* ns per call, best of 3 */
static double time_parent(const probes *p, int64_t calls) {
    double best = 1e30;
    for (int r = 0; r < 3; r++) {
        uintptr_t acc = 0;
        double t0 = now_s();
        for (int64_t i = 0; i < calls; i++) acc ^= (uintptr_t)gwr_tensor_parent(p->t[i & (NPROBE - 1)]);
        double dt = (now_s() - t0) * 1e9 / (double)calls;
        sink ^= acc;
        if (dt < best) best = dt;
    }
    return best;
}

static double time_user(const probes *p, int64_t calls) {
    double best = 1e30;
    for (int r = 0; r < 3; r++) {
        uintptr_t acc = 0;
        int slot = 0;
        double t0 = now_s();
        for (int64_t i = 0; i < calls; i++) {
            acc ^= (uintptr_t)gwr_tensor_user(p->t[i & (NPROBE - 1)], 0, &slot);
            acc += (uintptr_t)slot;
        }
        double dt = (now_s() - t0) * 1e9 / (double)calls;
        sink ^= acc;
        if (dt < best) best = dt;
    }
    return best;
}

static double time_find(const chain *c, const probes *p, int64_t calls) {
    double best = 1e30;
    for (int r = 0; r < 3; r++) {
        uintptr_t acc = 0;
        double t0 = now_s();
        for (int64_t i = 0; i < calls; i++)
            acc ^= (uintptr_t)gwr_network_find_tensor(c->net, p->name[i & (NPROBE - 1)]);
        double dt = (now_s() - t0) * 1e9 / (double)calls;
        sink ^= acc;
        if (dt < best) best = dt;
    }
    return best;
}

static double time_rauw(chain *c, int64_t pairs) {
    double best = 1e30;
    for (int r = 0; r < 3; r++) {
        double t0 = now_s();
        for (int64_t i = 0; i < pairs; i++) {
            if (gwr_tensor_replace_all_uses_with(c->side_a, c->side_b) != GWR_OK ||
                gwr_tensor_replace_all_uses_with(c->side_b, c->side_a) != GWR_OK)
                die("gwr_tensor_replace_all_uses_with", c->net);
        }
        double dt = (now_s() - t0) * 1e9 / (double)(2 * pairs);
        if (dt < best) best = dt;
    }
    if (gwr_tensor_num_users(c->side_a) != 3) die("replace_all_uses_with (user count)", c->net);
    return best;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    int64_t max_layers = argc > 1 ? strtoll(argv[1], NULL, 10) : 1000000;
    if (max_layers < 1000) max_layers = 1000;
    printf("gwr %s bench_ir: %" PRId64 " layers max; compiled by %s%s\n", gwr_version(), max_layers,
#if defined(__clang__)
           "clang " __clang_version__,
#elif defined(__GNUC__)
           "gcc " __VERSION__,
#else
           "an unknown compiler",
#endif
#ifdef NDEBUG
           ", NDEBUG"
#else
           ", assertions on"
#endif
    );

    /* (a) build time and memory */
    enum { RUNS = 3 };
    double times[RUNS];
    double bytes_per_layer[RUNS];
    int64_t n = max_layers;
    for (int r = 0; r < RUNS; r++) {
        size_t h0 = heap_bytes();
        double t0 = now_s();
        chain c;
        build_chain(&c, n);
        double t1 = now_s();
        size_t h1 = heap_bytes();
        times[r] = t1 - t0;
        bytes_per_layer[r] = ((double)h1 - (double)h0) / (double)n;
        if (gwr_network_num_layers(c.net) != n) die("layer count", c.net);
        gwr_network_free(c.net);
    }
    double sorted[RUNS];
    memcpy(sorted, times, sizeof sorted);
    qsort(sorted, RUNS, sizeof sorted[0], cmp_double);
    printf("\n## (a) building %" PRId64 " Add layers (float32[batch,1024] outputs)\n\n", n);
    printf("| run | wall time (s) | ns/layer | heap growth (bytes/layer) |\n|---|---|---|---|\n");
    for (int r = 0; r < RUNS; r++)
        printf("| %d | %.3f | %.0f | %.1f |\n", r + 1, times[r], times[r] * 1e9 / (double)n, bytes_per_layer[r]);
    printf("\nmedian %.3f s (target <= 1 s: %s); %.1f bytes/layer (target <= 256: %s)\n", sorted[RUNS / 2],
           sorted[RUNS / 2] <= 1.0 ? "met" : "MISSED", bytes_per_layer[0],
           bytes_per_layer[0] <= 256.0 ? "met" : "MISSED");
    printf("(for reference: sizeof(gwr_layer) %zu, sizeof(gwr_tensor) %zu, sizeof(gwr_use) %zu; each layer is\n"
           " one malloc block of layer + output tensor + 2 input pointers + name, plus a slot in the layer\n"
           " array, in the generated-name index (names generated, so in neither name map), and in\n"
           " the use list of the shared input)\n",
           sizeof(gwr_layer), sizeof(gwr_tensor), sizeof(gwr_use));

    /* (b) per-call costs by network size */
    int64_t sizes[NSIZES] = {1000, 10000, 100000, 1000000};
    enum { NROWS = 7 };
    double res[NSIZES][NROWS];
    int nsizes = 0;
    for (int s = 0; s < NSIZES && sizes[s] <= max_layers; s++, nsizes++) {
        chain c;
        build_chain(&c, sizes[s]);
        add_probes(&c, sizes[s]);
        res[s][0] = time_parent(&c.spread, 20000000);
        res[s][1] = time_parent(&c.window, 20000000);
        res[s][2] = time_user(&c.spread, 20000000);
        res[s][3] = time_user(&c.window, 20000000);
        res[s][4] = time_find(&c, &c.spread, 5000000);
        res[s][5] = time_find(&c, &c.window, 5000000);
        res[s][6] = time_rauw(&c, 500000);
        if (gwr_network_verify(c.net) != GWR_OK) die("gwr_network_verify", c.net);
        free_chain(&c);
    }
    static const char *names[NROWS] = {
        "gwr_tensor_parent (spread)",       "gwr_tensor_parent (window)",
        "gwr_tensor_user (spread)",         "gwr_tensor_user (window)",
        "gwr_network_find_tensor (spread)", "gwr_network_find_tensor (window)",
        "gwr_tensor_replace_all_uses_with (3 users)"};
    printf("\n## (b) ns per call by network size (best of 3)\n\n| call |");
    for (int s = 0; s < nsizes; s++) printf(" %" PRId64 " layers |", sizes[s]);
    printf(" max/min |\n|---|");
    for (int s = 0; s <= nsizes; s++) printf("---|");
    printf("\n");
    int flat = 1;
    for (int k = 0; k < NROWS; k++) {
        double lo = 1e30, hi = 0;
        printf("| %s |", names[k]);
        for (int s = 0; s < nsizes; s++) {
            printf(" %.1f |", res[s][k]);
            if (res[s][k] < lo) lo = res[s][k];
            if (res[s][k] > hi) hi = res[s][k];
        }
        double ratio = lo > 0 ? hi / lo : 0;
        if (ratio > 2.0) flat = 0;
        printf(" %.2f |\n", ratio);
    }
    printf("\nflat within 2x (every row): %s\n", flat ? "yes" : "NO");
    printf("(parent/user: 20M calls cycling over 1,024 chain tensors, spread evenly over the network or\n"
           " 1,024 consecutive ones; find_tensor: 5M lookups of their names; replace_all_uses_with: 1M calls\n"
           " moving 3 users between two side tensors and back)\n");
    return 0;
}
