/* bench_rewrite.c - cost of the pattern engine (issue 4).
 *
 *   bench_rewrite scale [--repeat N] [--hidden H] [--seeds A,B,...] [--provenance] [BLOCKS...]
 *       (--provenance: the rewrites record provenance, as the gwr tool's do)
 *       For each block count (default 10 100 1000 5000 20000 and the count
 *       that gives ~1,000,000 layers), builds a GPT-style decoder with
 *       gwr_build_gpt (GPTAttention plugin, shared weights, hidden H = 64,
 *       4 heads; building is not timed) and runs a rewrite manager holding
 *       the three seed patterns plus one no-op pattern per layer class
 *       (GWR_LAYER_TYPE_COUNT of them, each rooted on its class, reading the
 *       layer's op id and returning "no match"). Each run builds a fresh
 *       network twice: once to time the rewrite loop alone (keep_dead = 1)
 *       and then gwr_network_prune on its own, once to time the whole call
 *       (the default options: loop + final prune); the first run of each
 *       size checks the result (rewrite count, no Add left, verify). Prints
 *       best and median of N runs (default 3; 21 for sizes whose run takes
 *       < 5 ms; fewer when one run takes more than half of --max-seconds,
 *       default 60, and sizes predicted to take longer than that are
 *       estimated, not run) per size, ns per visited layer, and the checks:
 *       (the runs go in rounds: one run of each size in order, then the
 *       rest spread over N-1 more passes over the sizes, so that a machine
 *       whose speed drifts gives every size runs in each phase);
 *       max/min of ns per visited layer across sizes <= 2x, and the whole
 *       call on the ~1M-layer network <= 1 s. --seeds keeps only the named
 *       seed patterns (comma-separated), to see what each one costs.
 *   bench_rewrite rescan [--max-seconds S] [--repeat N] [--seeds A,B,...] [BLOCKS...]
 *       The same network and patterns, worklist driver vs full_rescan (the
 *       reference's restart-from-the-first-layer after every rewrite) at
 *       10, 20, 40, ... blocks, doubling until a full_rescan run takes more
 *       than S seconds (default 20). Prints both times and the factor.
 *   bench_rewrite onnx IN OUT [REPEAT] [LABEL]
 *       The work of `gwr rewrite IN --pattern LABEL -o OUT` in the library
 *       (LABEL default replace_add_with_sub), as tools/gwr/cmd_rewrite.c
 *       does it: gwr_onnx_load (external data copied, shapes inferred) and
 *       gwr_passes_recover_flayers, the rewrite, gwr_onnx_save; best of
 *       REPEAT (default 3), each phase and the sum.
 *
 * Times are CLOCK_MONOTONIC wall clock around the calls. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <string.h>
#include <time.h>

#include "gwr/gwr.h"

enum { MAX_SIZES = 64, MAX_REPEAT = 101, SMALL_REPEAT = 21 };

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, const char *msg) {
    fprintf(stderr, "bench_rewrite: %s: %s\n", what, msg && *msg ? msg : "(no message)");
    exit(1);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double best_of(const double *v, int n) {
    double b = v[0];
    for (int i = 1; i < n; i++)
        if (v[i] < b) b = v[i];
    return b;
}

static double median_of(const double *v, int n) {
    double s[MAX_REPEAT];
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

/* ---- the network and the manager ---- */

static int g_hidden = 64, g_heads = 4;

static gwr_network *build(int blocks) {
    gwr_network *net = gwr_network_new("gpt");
    if (!net) die("gwr_network_new", gwr_last_errmsg());
    gwr_gpt_config cfg = {.blocks = blocks, .hidden = g_hidden, .heads = g_heads, .use_plugin = 1,
                          .share_weights = 1, .seed = 1};
    if (!gwr_build_gpt(net, &cfg)) die("gwr_build_gpt", gwr_network_errmsg(net));
    return net;
}

/* A no-op pattern of one layer class: a realistic cheap first check (the
 * layer's op id against the one op it would want) that never holds. */
typedef struct noop_user {
    gwr_op_id want;
    int64_t seen;
} noop_user;

static int noop_match_and_rewrite(gwr_rewrite_ctx *c, gwr_layer *l) {
    noop_user *u = gwr_rewrite_ctx_user(c);
    u->seen++;
    if (gwr_layer_op_id(l) != u->want) return gwr_rewrite_no_match(c, "not the op it wants");
    return 0;
}

static noop_user g_noop[GWR_LAYER_TYPE_COUNT];

/* The seed patterns in the manager (--seeds picks a subset, for diagnosis). */
static const char *const g_seeds[3] = {"fuse_attention_with_bias", "gpt_attention_remove_padding",
                                       "replace_add_with_sub"};
static int g_use_seed[3] = {1, 1, 1};

static void parse_seeds(const char *list) {
    for (int i = 0; i < 3; i++) g_use_seed[i] = 0;
    if (!strcmp(list, "none")) return;
    while (*list) {
        size_t n = strcspn(list, ",");
        int found = 0;
        for (int i = 0; i < 3; i++)
            if (strlen(g_seeds[i]) == n && !strncmp(g_seeds[i], list, n)) g_use_seed[i] = found = 1;
        if (!found && n) {
            fprintf(stderr, "bench_rewrite: unknown seed pattern '%.*s'\n", (int)n, list);
            exit(2);
        }
        list += n + (list[n] == ',');
    }
}

/* Rewrites per block: 1 fuse_attention_with_bias, 1 remove_padding, and
 * every Add to a Sub (6 per block, 5 when the qkv bias Add was fused). */
static int64_t rewrites_per_block(void) {
    return g_use_seed[0] + g_use_seed[1] + (g_use_seed[2] ? 6 - g_use_seed[0] : 0);
}

static gwr_rewrite_manager *make_manager(const gwr_rewrite_options *o) {
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    if (!m) die("gwr_rewrite_manager_new", gwr_last_errmsg());
    for (int i = 0; i < 3; i++)
        if (g_use_seed[i] && gwr_passes_add(m, g_seeds[i])) die(g_seeds[i], gwr_rewrite_manager_errmsg(m));
    for (int c = 0; c < GWR_LAYER_TYPE_COUNT; c++) {
        char label[64];
        snprintf(label, sizeof label, "noop_%s", gwr_layer_type_name((gwr_layer_type)c));
        g_noop[c].want = GWR_OP_COUNT; /* no layer has it */
        gwr_pattern_rewriter p = {.name = label,
                                  .root_classes = GWR_ROOT_CLASS(c),
                                  .match_and_rewrite = noop_match_and_rewrite,
                                  .user = &g_noop[c]};
        if (gwr_rewrite_manager_add(m, label, &p, 0)) die(label, gwr_rewrite_manager_errmsg(m));
    }
    if (gwr_rewrite_manager_set_options(m, o)) die("set_options", gwr_rewrite_manager_errmsg(m));
    return m;
}

static gwr_args *make_args(void) {
    gwr_args *a = gwr_args_new();
    if (!a || gwr_args_set_int(a, "batch_size", 4) || gwr_args_set_int(a, "in_len", 128) ||
        gwr_args_set_int(a, "hidden_size", 3 * g_hidden))
        die("gwr_args", gwr_last_errmsg());
    return a;
}

static void print_manager(void) {
    printf("manager:");
    for (int i = 0; i < 3; i++)
        if (g_use_seed[i])
            printf(" %s%s,", g_seeds[i], i == 1 ? " (args batch_size 4, in_len 128, hidden_size 3*hidden)" : "");
    printf(" %d x noop_<CLASS> (benefit 0); %lld rewrites per block expected and checked\n", GWR_LAYER_TYPE_COUNT,
           (long long)rewrites_per_block());
}

/* Layers of one block and of the rest, from 1- and 2-block networks. */
static void layers_per_block(int64_t *per_block, int64_t *base) {
    gwr_network *a = build(1), *b = build(2);
    *per_block = gwr_network_num_layers(b) - gwr_network_num_layers(a);
    *base = gwr_network_num_layers(a) - *per_block;
    gwr_network_free(a);
    gwr_network_free(b);
}

static int64_t count_adds(const gwr_network *net) {
    int64_t n = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (!gwr_layer_is_removed(l) && gwr_layer_ew_op(l) == GWR_EW_SUM) n++;
    }
    return n;
}

/* One rewrite of a fresh network. keep_dead: time the loop, then the prune
 * on its own. Checks the result (not timed). */
typedef struct run_result {
    int64_t layers, visited, rewrites, pruned, after;
    double call_s, summary_s, prune_s;
} run_result;

static run_result run_once(int blocks, const gwr_rewrite_options *o, const gwr_args *args, int check) {
    gwr_network *net = build(blocks);
    gwr_rewrite_manager *m = make_manager(o);
    run_result r = {.layers = gwr_network_num_layers(net)};
    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    double t0 = now_s();
    gwr_status s = gwr_rewrite_manager_rewrite(m, net, args);
    r.call_s = now_s() - t0;
    getrusage(RUSAGE_SELF, &ru1);
    if (getenv("GWR_BENCH_EACH")) fprintf(stderr, "  faults %ld\n", ru1.ru_minflt - ru0.ru_minflt);
    if (s) die("gwr_rewrite_manager_rewrite", gwr_rewrite_manager_errmsg(m));
    gwr_rewrite_summary sum;
    gwr_rewrite_manager_summary(m, &sum);
    r.visited = sum.visited;
    r.rewrites = sum.rewrites;
    r.summary_s = sum.seconds;
    r.pruned = sum.pruned;
    if (o->keep_dead) {
        t0 = now_s();
        if (gwr_network_prune(net, &r.pruned)) die("gwr_network_prune", gwr_network_errmsg(net));
        r.prune_s = now_s() - t0;
    }
    r.after = gwr_network_num_live_layers(net);
    if (check) {
        if (r.rewrites != rewrites_per_block() * blocks) {
            fprintf(stderr, "bench_rewrite: %d blocks: %lld rewrites, expected %lld\n", blocks,
                    (long long)r.rewrites, (long long)(rewrites_per_block() * blocks));
            exit(1);
        }
        if (g_use_seed[2] && count_adds(net)) die("check", "Adds left after the rewrite");
        if (gwr_network_verify(net)) die("gwr_network_verify", gwr_network_errmsg(net));
    }
    gwr_rewrite_manager_free(m);
    gwr_network_free(net);
    return r;
}

static int parse_sizes(int argc, char **argv, int *i, int *sizes) {
    int n = 0;
    for (; *i < argc && n < MAX_SIZES; (*i)++) {
        char *end;
        long v = strtol(argv[*i], &end, 10);
        if (*end || v <= 0 || v > 10000000) {
            fprintf(stderr, "bench_rewrite: bad block count '%s'\n", argv[*i]);
            exit(2);
        }
        sizes[n++] = (int)v;
    }
    return n;
}

/* ---- scale ---- */

static int cmd_scale(int argc, char **argv) {
    int repeat = 3, sizes[MAX_SIZES], nsizes = 0, provenance = 0;
    double max_s = 60.0;
    int i = 2;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--provenance")) provenance = 1;
        else if (!strcmp(argv[i], "--max-seconds") && i + 1 < argc) max_s = atof(argv[++i]);
        else if (!strcmp(argv[i], "--hidden") && i + 1 < argc) g_hidden = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seeds") && i + 1 < argc) parse_seeds(argv[++i]);
        else {
            fprintf(stderr, "bench_rewrite scale: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    if (repeat < 1 || repeat > MAX_REPEAT || g_hidden < g_heads || g_hidden % g_heads) {
        fprintf(stderr, "bench_rewrite scale: bad --repeat or --hidden\n");
        return 2;
    }
    nsizes = parse_sizes(argc, argv, &i, sizes);
    int64_t per_block, base;
    layers_per_block(&per_block, &base);
    int64_t million_blocks = (1000000 - base + per_block - 1) / per_block;
    if (!nsizes) {
        const int def[] = {10, 100, 1000, 5000, 20000};
        for (int k = 0; k < 5; k++) sizes[nsizes++] = def[k];
        sizes[nsizes++] = (int)million_blocks;
    }
    gwr_args *args = make_args();
    printf("## Worklist driver, seed patterns + %d no-op patterns (one per layer class)\n\n", GWR_LAYER_TYPE_COUNT);
    printf("network: gwr_build_gpt, use_plugin=1, share_weights=1, hidden %d, %d heads: %lld layers per block "
           "+ %lld; %lld blocks give ~1,000,000 layers\n",
           g_hidden, g_heads, (long long)per_block, (long long)base, (long long)million_blocks);
    print_manager();
    printf("each size: %d runs (%d when a run takes < 5 ms; one when it takes > --max-seconds/2), each on a freshly "
           "built network (building not timed), in %d rounds over the sizes; times best (median); ns/visited from "
           "the best\n\n",
           repeat, SMALL_REPEAT > repeat ? SMALL_REPEAT : repeat, repeat);
    printf("| blocks | layers | visited | rewrites | pruned | runs | loop ms (keep_dead) | prune ms | whole call ms "
           "| loop ns/visited | call ns/visited |\n");
    printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    fflush(stdout);
    double loop_ns[MAX_SIZES] = {0}, call_ns[MAX_SIZES] = {0}, call_best[MAX_SIZES] = {0};
    int64_t layers[MAX_SIZES] = {0};
    int done = 0, requested = nsizes;
    double est[MAX_SIZES] = {0};
    int64_t est_layers[MAX_SIZES] = {0};
    /* Round 0 runs each size once, in order, and decides which sizes are
     * run at all (a size predicted to take longer than max_s is estimated)
     * and how many runs each takes. The other rounds go through the sizes
     * again, one share of each size's runs per round: a machine whose speed
     * drifts over minutes then gives every size runs in every phase, which
     * a ratio across sizes needs. */
    static double loop[MAX_SIZES][MAX_REPEAT], prune[MAX_SIZES][MAX_REPEAT], call[MAX_SIZES][MAX_REPEAT];
    int reps[MAX_SIZES] = {0}, want[MAX_SIZES] = {0};
    run_result res[MAX_SIZES] = {{0}};
    gwr_rewrite_options keep = {.keep_dead = 1, .provenance = provenance}, dflt = {.provenance = provenance};
#define ONE_RUN(k, check)                                                                                          \
    do {                                                                                                           \
        run_result a_ = run_once(sizes[k], &keep, args, check);                                                    \
        run_result b_ = run_once(sizes[k], &dflt, args, check);                                                    \
        loop[k][reps[k]] = a_.call_s;                                                                              \
        prune[k][reps[k]] = a_.prune_s;                                                                            \
        call[k][reps[k]] = b_.call_s;                                                                              \
        if (getenv("GWR_BENCH_EACH"))                                                                              \
            fprintf(stderr, "%d blocks, run %d: loop %.3f prune %.3f call %.3f s\n", sizes[k], reps[k], a_.call_s, \
                    a_.prune_s, b_.call_s);                                                                        \
        reps[k]++;                                                                                                 \
        res[k] = b_;                                                                                               \
        layers[k] = b_.layers;                                                                                     \
    } while (0)
    for (int k = 0; k < nsizes; k++) {
        ONE_RUN(k, 1);
        done = k + 1;
        want[k] = repeat;
        /* Runs of a few ms are at the mercy of the scheduler: take more. */
        if (call[k][0] < 0.005 && want[k] < SMALL_REPEAT) want[k] = SMALL_REPEAT;
        if (loop[k][0] + call[k][0] > max_s / 2) want[k] = 1; /* too slow to repeat */
        call_best[k] = call[k][0];
        /* Predict the next size from the growth seen so far (at least
         * linear); skip the rest when one run would pass max_s. */
        if (k + 1 < nsizes) {
            double p = 1.0;
            if (k > 0 && call_best[k] > 0.05 && call_best[k - 1] > 0)
                p = log(call_best[k] / call_best[k - 1]) / log((double)layers[k] / (double)layers[k - 1]);
            if (p < 1.0) p = 1.0;
            double ratio = (double)sizes[k + 1] / (double)sizes[k];
            double next = call_best[k] * pow(ratio, p);
            if (next > max_s) {
                printf("| %d... | (skipped: the whole call grows as layers^%.2f here, so %d blocks would take ~%.0f s "
                       "per run; limit --max-seconds %.0f) | | | | | | | | | |\n",
                       sizes[k + 1], p, sizes[k + 1], next, max_s);
                for (int q = k + 1; q < nsizes; q++) {
                    est[q] = call_best[k] * pow((double)sizes[q] / (double)sizes[k], p);
                    est_layers[q] = per_block * sizes[q] + base;
                    printf("  estimate: %d blocks (%lld layers) -> ~%.0f s per whole call\n", sizes[q],
                           (long long)est_layers[q], est[q]);
                }
                break;
            }
        }
    }
    for (int round = 1; round < repeat; round++)
        for (int k = 0; k < done; k++) {
            int upto = (int)((int64_t)want[k] * (round + 1) / repeat);
            while (reps[k] < upto) ONE_RUN(k, 0);
        }
#undef ONE_RUN
    for (int k = 0; k < done; k++) {
        const run_result *r = &res[k];
        int n = reps[k];
        if (n < repeat) printf("(%d blocks: one run took %.1f s; %d repeat(s) only)\n", sizes[k], call[k][0], n);
        loop_ns[k] = best_of(loop[k], n) / (double)r->visited * 1e9;
        call_ns[k] = best_of(call[k], n) / (double)r->visited * 1e9;
        call_best[k] = best_of(call[k], n);
        printf("| %d | %lld | %lld | %lld | %lld | %d | %.3f (%.3f) | %.3f (%.3f) | %.3f (%.3f) | %.1f | %.1f |\n",
               sizes[k], (long long)r->layers, (long long)r->visited, (long long)r->rewrites, (long long)r->pruned, n,
               1e3 * best_of(loop[k], n), 1e3 * median_of(loop[k], n), 1e3 * best_of(prune[k], n),
               1e3 * median_of(prune[k], n), 1e3 * best_of(call[k], n), 1e3 * median_of(call[k], n), loop_ns[k],
               call_ns[k]);
    }
    fflush(stdout);
    nsizes = done;
    double lo = loop_ns[0], hi = loop_ns[0], clo = call_ns[0], chi = call_ns[0];
    for (int k = 1; k < nsizes; k++) {
        if (loop_ns[k] < lo) lo = loop_ns[k];
        if (loop_ns[k] > hi) hi = loop_ns[k];
        if (call_ns[k] < clo) clo = call_ns[k];
        if (call_ns[k] > chi) chi = call_ns[k];
    }
    int all = done == requested;
    printf("\nloop ns per visited layer, max/min across sizes: %.2fx -> %s (target <= 2x)\n", hi / lo,
           hi / lo <= 2.0 && all ? "PASS" : "FAIL");
    printf("whole call (loop + prune) ns per visited layer, max/min across sizes: %.2fx -> %s (target <= 2x)\n",
           chi / clo, chi / clo <= 2.0 && all ? "PASS" : "FAIL");
    int big = -1;
    for (int k = 0; k < nsizes; k++)
        if (layers[k] >= 990000 && (big < 0 || layers[k] > layers[big])) big = k;
    if (big >= 0)
        printf("whole call on %lld layers (%d blocks), best of %d: %.3f s -> %s (target <= 1 s)\n",
               (long long)layers[big], sizes[big], repeat, call_best[big], call_best[big] <= 1.0 ? "PASS" : "FAIL");
    else {
        int q = -1;
        for (int k = done; k < requested; k++)
            if (est_layers[k] >= 990000) q = k;
        if (q >= 0)
            printf("whole call on %lld layers (%d blocks): not run, estimated ~%.0f s -> FAIL (target <= 1 s)\n",
                   (long long)est_layers[q], sizes[q], est[q]);
        else
            printf("(no size of ~1,000,000 layers in this run: the 1 s check is skipped)\n");
    }
    if (done < requested) printf("sizes not run (too slow) count as FAIL for the flatness check too\n");
    gwr_args_free(args);
    return 0;
}

/* ---- rescan ---- */

static int cmd_rescan(int argc, char **argv) {
    double max_s = 20.0;
    int repeat = 3, sizes[MAX_SIZES], nsizes = 0, i = 2;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--max-seconds") && i + 1 < argc) max_s = atof(argv[++i]);
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seeds") && i + 1 < argc) parse_seeds(argv[++i]);
        else {
            fprintf(stderr, "bench_rewrite rescan: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    if (repeat < 1 || repeat > MAX_REPEAT) return 2;
    nsizes = parse_sizes(argc, argv, &i, sizes);
    int grow = !nsizes;
    double tw_prev = 0, worst_p = 0;
    int64_t layers_prev = 1;
    if (grow) sizes[nsizes++] = 10;
    gwr_args *args = make_args();
    printf("## Worklist driver vs full_rescan (the reference's restart after every rewrite)\n\n");
    print_manager();
    printf("same network as above; whole call (prune included), best of the runs (%d; %d when a run takes < 5 ms)%s\n\n",
           repeat, SMALL_REPEAT > repeat ? SMALL_REPEAT : repeat,
           grow ? "; doubling the blocks until a full_rescan run exceeds the limit" : "");
    printf("| blocks | layers | rewrites | runs | worklist: visited | worklist ms | full_rescan: visited "
           "| full_rescan ms | factor (time) | factor (visits) |\n");
    printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    fflush(stdout);
    for (int k = 0; k < nsizes; k++) {
        double wl[MAX_REPEAT], rs[MAX_REPEAT];
        run_result a = {0}, b = {0};
        int want = repeat, reps = 0;
        for (int rep = 0; rep < want; rep++, reps++) {
            gwr_rewrite_options w = {0}, f = {.full_rescan = 1};
            a = run_once(sizes[k], &w, args, rep == 0);
            b = run_once(sizes[k], &f, args, rep == 0);
            wl[rep] = a.call_s;
            rs[rep] = b.call_s;
            if (rep == 0 && b.call_s < 0.005 && want < SMALL_REPEAT) want = SMALL_REPEAT;
        }
        double tw = best_of(wl, reps), tr = best_of(rs, reps);
        if (k > 0 && tw_prev > 0.01) {
            double p = log(tw / tw_prev) / log((double)a.layers / (double)layers_prev);
            if (p > 1.5 && p > worst_p) worst_p = p;
        }
        tw_prev = tw;
        layers_prev = a.layers;
        printf("| %d | %lld | %lld | %d | %lld | %.3f | %lld | %.1f | %.1fx | %.0fx |\n", sizes[k], (long long)a.layers,
               (long long)a.rewrites, reps, (long long)a.visited, 1e3 * tw, (long long)b.visited, 1e3 * tr, tr / tw,
               (double)b.visited / (double)a.visited);
        fflush(stdout);
        if (grow && tr <= max_s && nsizes < MAX_SIZES) {
            /* Quadratic: the next size takes ~4x as long; stop before the
             * limit would be passed by far. */
            if (tr * 4.0 <= max_s * 1.5) sizes[nsizes++] = sizes[k] * 2;
        }
    }
    printf("\nfull_rescan restarts from the first layer after each rewrite: visits ~ rewrites x position, i.e.\n"
           "quadratic in the network size here (a fixed number of rewrites per block), so the factor grows linearly with the blocks.\n"
           "It reproduces the reference's restart loop, not its lookups: gwr's parent/user queries stay O(1),\n"
           "where the reference rebuilds its producer/consumer maps on each lookup, so this factor understates\n"
           "the reference's real cost.\n");
    if (worst_p > 0)
        printf("Note: the worklist run itself grew as layers^%.2f here (not linearly), so the time factor\n"
               "saturates instead of growing with the blocks; the visit factor is the driver's own gain.\n",
               worst_p);
    gwr_args_free(args);
    return 0;
}

/* ---- onnx: load + rewrite + save ---- */

static int cmd_onnx(int argc, char **argv) {
    const char *in = argv[2], *out = argv[3];
    int repeat = argc > 4 ? atoi(argv[4]) : 3;
    const char *label = argc > 5 ? argv[5] : "replace_add_with_sub";
    if (repeat < 1 || repeat > MAX_REPEAT) return 2;
    double tl[MAX_REPEAT], tr[MAX_REPEAT], ts[MAX_REPEAT], tt[MAX_REPEAT], tfree[MAX_REPEAT];
    gwr_rewrite_summary sum = {0};
    for (int rep = 0; rep < repeat; rep++) {
        double t0 = now_s();
        /* What `gwr rewrite` does (tools/gwr/cmd_rewrite.c): external data
         * copied, shapes inferred, FLayerInfo recovered for plugins. */
        gwr_onnx_load_options lo = {.copy_external_data = 1, .infer_shapes = 1};
        gwr_network *net = gwr_onnx_load(in, &lo);
        if (!net) die("gwr_onnx_load", gwr_last_errmsg());
        if (gwr_passes_recover_flayers(net, NULL)) die("gwr_passes_recover_flayers", gwr_network_errmsg(net));
        double t1 = now_s();
        gwr_rewrite_manager *m = gwr_rewrite_manager_new();
        if (!m || gwr_passes_add(m, label)) die(label, m ? gwr_rewrite_manager_errmsg(m) : gwr_last_errmsg());
        if (gwr_rewrite_manager_rewrite(m, net, NULL)) die("rewrite", gwr_rewrite_manager_errmsg(m));
        double t2 = now_s();
        if (gwr_onnx_save(net, out, NULL)) die("gwr_onnx_save", gwr_network_errmsg(net));
        double t3 = now_s();
        gwr_rewrite_manager_summary(m, &sum);
        gwr_rewrite_manager_free(m);
        double t4 = now_s();
        gwr_network_free(net);
        tfree[rep] = now_s() - t4;
        tl[rep] = t1 - t0;
        tr[rep] = t2 - t1;
        ts[rep] = t3 - t2;
        tt[rep] = t3 - t0;
    }
    double tf = best_of(tfree, repeat);
    printf("library load+rewrite+save %s (%s): %.4f s, best of %d (load %.4f, rewrite %.4f, save %.4f: each its "
           "own best; then gwr_network_free %.4f, not counted); %lld layers, %lld visited, %lld rewrites\n",
           in, label, best_of(tt, repeat), repeat, best_of(tl, repeat), best_of(tr, repeat), best_of(ts, repeat), tf,
           (long long)sum.layers_before, (long long)sum.visited, (long long)sum.rewrites);
    return 0;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: bench_rewrite scale [--repeat N] [--hidden H] [--seeds A,B] [--provenance] [BLOCKS...]\n"
            "       bench_rewrite rescan [--max-seconds S] [--repeat N] [--seeds A,B] [BLOCKS...]\n"
            "       bench_rewrite onnx IN OUT [REPEAT] [LABEL]\n"
            "scale:  worklist driver on GPT networks (default 10 100 1000 5000 20000 blocks and ~1M layers),\n"
            "        seed patterns + one no-op pattern per layer class; ns per visited layer, 1M-layer total\n"
            "rescan: worklist vs full_rescan (the reference's loop), doubling from 10 blocks (limit S s, default 20)\n"
            "onnx:   load + rewrite (LABEL, default replace_add_with_sub) + save, best of REPEAT (default 3)\n"
            "See the comment at the top of bench/bench_rewrite.c.\n");
}

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "scale")) return cmd_scale(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "rescan")) return cmd_rescan(argc, argv);
    if (argc >= 4 && !strcmp(argv[1], "onnx")) return cmd_onnx(argc, argv);
    usage(argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) ? stdout : stderr);
    return 2;
}
