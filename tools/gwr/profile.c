/* profile.c - `gwr run --profile FILE.json`: the session's profile
 * (gwr_session_profile) written as a Chrome trace, and the top of it on
 * stdout: time by op type and by layer, with its share of the runs and the
 * number of calls. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct agg {
    const char *key, *op;
    int64_t ns, calls, layers;
} agg;

typedef struct aggs {
    agg *v;
    int64_t n, cap;
    gwr_strmap index; /* key -> entry + 1 */
} aggs;

static int agg_add(aggs *a, const char *key, const char *op, int64_t ns, int *new_key) {
    int64_t k = (int64_t)(intptr_t)gwr_strmap_get(&a->index, key) - 1;
    *new_key = k < 0;
    if (k < 0) {
        if (gwr_grow((void **)&a->v, sizeof *a->v, &a->cap, a->n + 1)) return -1;
        k = a->n++;
        a->v[k] = (agg){key, op, 0, 0, 0};
        /* a->v moved: keys are the events' strings, which stay */
        if (gwr_strmap_put(&a->index, key, (void *)(intptr_t)(k + 1))) return -1;
    }
    a->v[k].ns += ns, a->v[k].calls++;
    return 0;
}

static int cmp_agg(const void *x, const void *y) {
    const agg *a = x, *b = y;
    if (a->ns != b->ns) return a->ns > b->ns ? -1 : 1;
    return strcmp(a->key, b->key);
}

static void aggs_free(aggs *a) {
    free(a->v);
    gwr_strmap_free(&a->index);
}

/* Prints the top of the profile: by op type, then the `top` costliest
 * layers. 0, or -1 when out of memory. */
static int print_table(gwr_session *s, int top, FILE *out) {
    aggs ops = {0}, layers = {0};
    int64_t run_ns = 0, layer_ns = 0, runs = 0;
    int rc = 0;
    for (int64_t i = 0; i < gwr_session_profile_count(s) && !rc; i++) {
        const gwr_profile_event *e = gwr_session_profile_event(s, i);
        if (!strcmp(e->cat, "run")) run_ns += e->dur_ns, runs++;
        if (strcmp(e->cat, "layer")) continue;
        /* nested layers are in their If/Loop's time already */
        if (e->depth == 0) layer_ns += e->dur_ns;
        int new_layer, new_op;
        if (agg_add(&layers, e->name, e->op, e->dur_ns, &new_layer) || agg_add(&ops, e->op, e->op, e->dur_ns, &new_op))
            rc = -1;
        else if (new_layer)
            ops.v[(int64_t)(intptr_t)gwr_strmap_get(&ops.index, e->op) - 1].layers++;
    }
    if (!rc) {
        if (ops.n) qsort(ops.v, (size_t)ops.n, sizeof *ops.v, cmp_agg);
        if (layers.n) qsort(layers.v, (size_t)layers.n, sizeof *layers.v, cmp_agg);
        /* Shares of the layers' time: the runs' own time also holds the
         * profiler's bookkeeping between layers. */
        double whole = layer_ns > 0 ? (double)layer_ns : 1;
        fprintf(out, "profile: %lld run%s, %.3f ms in the network's layers (%.3f ms in the runs, profiling included)\n",
                (long long)runs, runs == 1 ? "" : "s", (double)layer_ns / 1e6, (double)run_ns / 1e6);
        fprintf(out, "  %-24s %12s %7s %8s %7s\n", "op", "total ms", "%", "calls", "layers");
        for (int64_t i = 0; i < ops.n && i < top; i++)
            fprintf(out, "  %-24s %12.3f %7.1f %8lld %7lld\n", ops.v[i].key, (double)ops.v[i].ns / 1e6,
                    100.0 * (double)ops.v[i].ns / whole, (long long)ops.v[i].calls, (long long)ops.v[i].layers);
        fprintf(out, "  %-32s %-16s %12s %7s %8s\n", "layer", "op", "total ms", "%", "calls");
        for (int64_t i = 0; i < layers.n && i < top; i++)
            fprintf(out, "  %-32s %-16s %12.3f %7.1f %8lld\n", layers.v[i].key, layers.v[i].op,
                    (double)layers.v[i].ns / 1e6, 100.0 * (double)layers.v[i].ns / whole, (long long)layers.v[i].calls);
    }
    aggs_free(&ops);
    aggs_free(&layers);
    return rc;
}

int cli_profile_start(gwr_session *s, const char *model, int64_t load_start, int64_t load_end, int64_t new_start) {
    if (gwr_session_profile(s, 1) || gwr_session_profile_phase(s, "load", load_start, load_end - load_start)) {
        cli_error(model, gwr_session_errmsg(s));
        return CLI_FAIL;
    }
    if (gwr_session_profile_optimize(s, new_start)) {
        cli_error(model, gwr_session_errmsg(s));
        return CLI_FAIL;
    }
    return CLI_OK;
}

int cli_profile_finish(gwr_session *s, const char *file, int top) {
    char *tmp = cli_temp_name(file);
    FILE *f = tmp ? fopen(tmp, "w") : NULL;
    if (!f) {
        char m[300];
        snprintf(m, sizeof m, "cannot write the profile: %s", tmp ? strerror(errno) : "out of memory");
        cli_error(file, m);
        free(tmp);
        return CLI_FAIL;
    }
    gwr_status st = gwr_session_profile_write(s, f);
    if (fclose(f) || st || rename(tmp, file)) {
        char m[300];
        snprintf(m, sizeof m, "cannot write the profile: %s", strerror(errno));
        cli_error(file, m);
        remove(tmp);
        free(tmp);
        return CLI_FAIL;
    }
    free(tmp);
    if (print_table(s, top, stdout)) {
        cli_error(file, "out of memory");
        return CLI_FAIL;
    }
    printf("wrote the profile to %s (%lld events)\n", file, (long long)gwr_session_profile_count(s));
    return CLI_OK;
}
