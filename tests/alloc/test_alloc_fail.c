/* test_alloc_fail.c - out-of-memory paths, tested as SQLite tests them.
 *
 * Each scenario runs once per allocation: with util's hook armed to fail
 * the n-th allocation (n = 1, 2, ...), until a run makes fewer than n
 * allocations and so completes. A run that met a failure must return an
 * error status with a message (or succeed, when the failed allocation was
 * one the code can do without, and then give the right result), leave the
 * network passing gwr_network_verify where the call promises it, and leave
 * no partial output file; LeakSanitizer (the sanitizer build of make test)
 * checks that nothing leaks. Each scenario runs twice: failing only the
 * n-th allocation (the code goes on with later ones succeeding), and
 * failing every allocation from the n-th on.
 *
 * The scenarios: loading an ONNX model with subgraphs and external data;
 * building a decoder with the functional API, its attention plugins
 * recording FLayerInfos; a rewrite run of the three seed patterns; saving;
 * planning and running a session, on the model with control flow and on a
 * decoder of plain ONNX ops. Printed: per scenario, the runs, the
 * allocations of a complete run, and the distinct call sites that were
 * made to fail. */
#define _GNU_SOURCE /* dladdr */
#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "gwr/gwr.h"
#include "net_count.h"
#include "util/util.h"

#ifndef GWR_SOURCE_DIR
#error "GWR_SOURCE_DIR must be defined (tests/CMakeLists.txt)"
#endif

static char g_dir[256];   /* the generated model's directory */
static char g_model[320]; /* its model.onnx */

/* ---- the distinct call sites made to fail ------------------------------------ */

static const void **g_sites;
static size_t g_nsites, g_sites_cap;

static void note_site(const void *site) {
    for (size_t i = 0; i < g_nsites; i++)
        if (g_sites[i] == site) return;
    if (g_nsites == g_sites_cap) {
        size_t cap = g_sites_cap ? 2 * g_sites_cap : 256;
        const void **n = realloc(g_sites, cap * sizeof *n);
        if (!n) return;
        g_sites = n, g_sites_cap = cap;
    }
    g_sites[g_nsites++] = site;
}

/* "file+offset" of a code address, for addr2line. */
static const char *where(const void *site, char *buf, size_t size) {
    Dl_info info;
    if (site && dladdr(site, &info) && info.dli_fname)
        snprintf(buf, size, "%s+0x%zx", info.dli_fname, (size_t)((const char *)site - (const char *)info.dli_fbase));
    else
        snprintf(buf, size, "%p", site);
    return buf;
}

/* ---- the loop ---------------------------------------------------------------- */

/* One scenario: `run` does the work under the armed hook and returns its
 * status, leaving in *msg the message the failing call left (on the
 * object it was made on, or gwr_last_errmsg); `check` (may be NULL) judges
 * what a run left, given whether it failed; `cleanup` frees everything. */
typedef struct scenario {
    const char *name;
    gwr_status (*setup)(void *ctx);
    gwr_status (*run)(void *ctx, const char **msg);
    void (*check)(void *ctx, int failed);
    void (*cleanup)(void *ctx);
} scenario;

static void run_scenario(const scenario *sc, void *ctx, int sticky) {
    size_t sites_before = g_nsites;
    int64_t runs = 0, errors = 0, benign = 0;
    for (int64_t n = 1;; n++) {
        if (sc->setup && !CHECK_OK(sc->setup(ctx))) return;
        const char *msg = "";
        gwr_alloc_hook_arm(n, sticky);
        gwr_status s = sc->run(ctx, &msg);
        int64_t failed = gwr_alloc_hook_failures();
        const void *site = gwr_alloc_hook_last_site();
        gwr_alloc_hook_arm(0, 0);
        runs++;
        if (failed) note_site(site);
        if (failed && s != GWR_OK) {
            errors++;
            char at[512];
            if (!CHECK(msg && *msg))
                fprintf(stderr, "  %s: allocation %lld (at %s) failed without a message\n", sc->name, (long long)n,
                        where(site, at, sizeof at));
        } else if (failed) {
            benign++;
        } else if (!CHECK_OK(s)) {
            fprintf(stderr, "  %s: the run without failures failed: %s\n", sc->name, msg);
        }
        if (sc->check) {
            int64_t before = check_nfailed_;
            sc->check(ctx, s != GWR_OK);
            char at[512];
            if (check_nfailed_ > before && failed)
                fprintf(stderr, "  %s: after allocation %lld (at %s) failed\n", sc->name, (long long)n, where(site, at, sizeof at));
        }
        sc->cleanup(ctx);
        if (!failed) {
            printf("%-8s %-6s %6lld runs (%lld errors, %lld recovered), %6lld allocations, %4zu new sites\n",
                   sc->name, sticky ? "sticky" : "once", (long long)runs, (long long)errors, (long long)benign,
                   (long long)(n - 1), g_nsites - sites_before);
            return;
        }
        if (n > 2000000) {
            CHECK(!"the scenario never completes");
            return;
        }
    }
}

static void check_verifies(gwr_network *net, const char *what) {
    if (!net) return;
    if (!CHECK_OK(gwr_network_verify(net))) fprintf(stderr, "  %s: %s\n", what, gwr_network_errmsg(net));
}

/* ---- load ---------------------------------------------------------------------- */

typedef struct load_ctx {
    gwr_network *net;
} load_ctx;

static gwr_status load_run(void *ctx, const char **msg) {
    load_ctx *c = ctx;
    c->net = gwr_onnx_load(g_model, NULL);
    *msg = gwr_last_errmsg();
    return c->net ? GWR_OK : GWR_ERR_NOMEM;
}

static void load_check(void *ctx, int failed) {
    load_ctx *c = ctx;
    if (failed) {
        CHECK(c->net == NULL);
        return;
    }
    if (!CHECK(c->net)) return;
    check_verifies(c->net, "load");
    CHECK_EQ_INT(gwr_network_num_layers(c->net), 6);
    gwr_tensor *w = gwr_network_find_tensor(c->net, "W");
    const gwr_weights *wv = NULL;
    if (CHECK(w) && CHECK_OK(gwr_layer_get_tensor(gwr_tensor_parent(w), "value", &wv)))
        CHECK(((const float *)gwr_buffer_data(wv->buffer))[15] == 15.0f / 16.0f);
}

static void load_cleanup(void *ctx) {
    load_ctx *c = ctx;
    gwr_network_free(c->net);
    c->net = NULL;
}

/* ---- build (functional API, FLayerInfo) -------------------------------------- */

typedef struct build_ctx {
    gwr_network *net;
    gwr_tensor *y;
} build_ctx;

static const gwr_gpt_config g_gpt = {.blocks = 2, .hidden = 8, .heads = 2, .ffn = 16, .use_plugin = 1, .seed = 7};

static gwr_status build_run(void *ctx, const char **msg) {
    build_ctx *c = ctx;
    c->net = gwr_network_new("alloc");
    if (!c->net) {
        *msg = gwr_last_errmsg();
        return GWR_ERR_NOMEM;
    }
    c->y = gwr_build_gpt(c->net, &g_gpt);
    *msg = gwr_network_errmsg(c->net);
    return c->y ? GWR_OK : GWR_ERR_NOMEM;
}

static int64_t count_flayers(gwr_network *net) {
    int64_t n = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++)
        n += gwr_flayer_get(net, gwr_network_layer(net, i)) != NULL;
    return n;
}

static void build_check(void *ctx, int failed) {
    build_ctx *c = ctx;
    check_verifies(c->net, "build");
    if (!failed && CHECK(c->net)) CHECK_EQ_INT(count_flayers(c->net), g_gpt.blocks);
}

static void build_cleanup(void *ctx) {
    build_ctx *c = ctx;
    gwr_network_free(c->net);
    c->net = NULL;
}

/* ---- rewrite (the seed patterns) ------------------------------------------------ */

typedef struct rewrite_ctx {
    gwr_network *net;
    gwr_rewrite_manager *m;
    gwr_args *args;
    int64_t adds_before;
} rewrite_ctx;

static gwr_status rewrite_setup(void *ctx) {
    rewrite_ctx *c = ctx;
    static const char *const seeds[] = {"replace_add_with_sub", "gpt_attention_remove_padding",
                                        "fuse_attention_with_bias"};
    c->net = gwr_network_new("alloc");
    c->m = gwr_rewrite_manager_new();
    c->args = gwr_args_new();
    if (!c->net || !c->m || !c->args || !gwr_build_gpt(c->net, &g_gpt)) return GWR_ERR_NOMEM;
    for (int i = 0; i < 3; i++)
        if (gwr_passes_add(c->m, seeds[i])) return GWR_ERR_STATE;
    gwr_args_set_int(c->args, "batch_size", 2);
    gwr_args_set_int(c->args, "in_len", 4);
    gwr_args_set_int(c->args, "hidden_size", 3 * g_gpt.hidden);
    c->adds_before = count_op(c->net, "Add");
    return GWR_OK;
}

static gwr_status rewrite_run(void *ctx, const char **msg) {
    rewrite_ctx *c = ctx;
    gwr_status s = gwr_rewrite_manager_rewrite(c->m, c->net, c->args);
    *msg = gwr_rewrite_manager_errmsg(c->m);
    return s;
}

static void rewrite_check(void *ctx, int failed) {
    rewrite_ctx *c = ctx;
    check_verifies(c->net, "rewrite");
    if (!failed) {
        CHECK(c->adds_before > 0);
        CHECK_EQ_INT(count_op(c->net, "Add"), 0);
    }
}

static void rewrite_cleanup(void *ctx) {
    rewrite_ctx *c = ctx;
    gwr_rewrite_manager_free(c->m);
    gwr_args_free(c->args);
    gwr_network_free(c->net);
    memset(c, 0, sizeof *c);
}

/* ---- save --------------------------------------------------------------------- */

typedef struct save_ctx {
    gwr_network *net;
    char dir[300], path[340];
} save_ctx;

static gwr_status save_setup(void *ctx) {
    save_ctx *c = ctx;
    c->net = gwr_onnx_load(g_model, NULL);
    return c->net ? GWR_OK : GWR_ERR_NOMEM;
}

static gwr_status save_run(void *ctx, const char **msg) {
    save_ctx *c = ctx;
    /* external data too: two files to write and rename */
    gwr_onnx_save_options o = {.external_data = 1, .external_threshold = 16};
    gwr_status s = gwr_onnx_save(c->net, c->path, &o);
    *msg = gwr_network_errmsg(c->net);
    return s;
}

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static void save_check(void *ctx, int failed) {
    save_ctx *c = ctx;
    check_verifies(c->net, "save");
    struct stat st;
    if (failed) {
        /* nothing left behind: no model, no data file, no temporary */
        if (!CHECK_EQ_INT(count_entries(c->dir), 0)) fprintf(stderr, "  save left files in %s\n", c->dir);
        return;
    }
    if (!CHECK(stat(c->path, &st) == 0)) return;
    gwr_network *back = gwr_onnx_load(c->path, NULL);
    if (CHECK(back)) CHECK_EQ_INT(gwr_network_num_layers(back), 6);
    gwr_network_free(back);
}

static void save_cleanup(void *ctx) {
    save_ctx *c = ctx;
    gwr_network_free(c->net);
    c->net = NULL;
    DIR *d = opendir(c->dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        char p[600];
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", c->dir, e->d_name);
        unlink(p);
    }
    closedir(d);
}

/* ---- session: plan and run ---------------------------------------------------- */

typedef struct session_ctx {
    gwr_network *net;
    gwr_session *s;
    gwr_value *in[3], *out;
} session_ctx;

static gwr_status session_setup(void *ctx) {
    session_ctx *c = ctx;
    c->net = gwr_onnx_load(g_model, NULL);
    int64_t d[2] = {2, 4};
    c->in[0] = gwr_value_new(GWR_FLOAT32, 2, d);
    c->in[1] = gwr_value_new(GWR_BOOL, 0, NULL);
    c->in[2] = gwr_value_new(GWR_INT64, 0, NULL);
    if (!c->net || !c->in[0] || !c->in[1] || !c->in[2]) return GWR_ERR_NOMEM;
    for (int i = 0; i < 8; i++) gwr_value_set_f64(c->in[0], i, i - 4.0);
    gwr_value_set_f64(c->in[1], 0, 1.0); /* the Loop branch */
    gwr_value_set_f64(c->in[2], 0, 3.0); /* three iterations */
    return GWR_OK;
}

static gwr_status session_run(void *ctx, const char **msg) {
    session_ctx *c = ctx;
    static const char *const names[] = {"x", "cond", "n"};
    c->s = gwr_session_new(c->net, NULL);
    if (!c->s) {
        *msg = gwr_last_errmsg();
        return GWR_ERR_NOMEM;
    }
    gwr_status s = gwr_session_run(c->s, 3, names, c->in, 1, NULL, &c->out);
    *msg = gwr_session_errmsg(c->s);
    return s;
}

static void session_check(void *ctx, int failed) {
    session_ctx *c = ctx;
    check_verifies(c->net, "session");
    if (failed || !CHECK(c->out)) return;
    /* y = relu(x W + B) + 3 B, computed here independently */
    for (int r = 0; r < 2; r++)
        for (int j = 0; j < 4; j++) {
            double b = -1.0 + 2.0 * j / 3.0, acc = b;
            for (int k = 0; k < 4; k++) acc += (r * 4 + k - 4.0) * ((k * 4 + j) / 16.0);
            double want = (acc > 0 ? acc : 0) + 3 * b;
            double got = gwr_value_get_f64(c->out, r * 4 + j);
            if (!CHECK(got > want - 1e-5 && got < want + 1e-5)) fprintf(stderr, "  y[%d,%d] = %g, want %g\n", r, j, got, want);
        }
}

static void session_cleanup(void *ctx) {
    session_ctx *c = ctx;
    gwr_value_release(c->out);
    gwr_session_free(c->s);
    for (int i = 0; i < 3; i++) gwr_value_release(c->in[i]);
    gwr_network_free(c->net);
    memset(c, 0, sizeof *c);
}

/* ---- session: a decoder in plain ONNX ops ------------------------------------ */

/* The kernels of a decoder (MatMul, Softmax, LayerNormalization, Gelu,
 * Split, Transpose, ...): a run made with every allocation failing in turn
 * must still give, when it completes, what the same session gave with
 * none failing. */
typedef struct gpt_ctx {
    gwr_network *net;
    gwr_session *s;
    gwr_value *x, *out;
    double want[32];
    int want_optimized; /* the reference session ran an optimized copy */
} gpt_ctx;

static const gwr_gpt_config g_gpt_onnx = {.blocks = 1, .hidden = 8, .heads = 2, .ffn = 16, .use_plugin = 0, .seed = 3};

static gwr_status gpt_setup(void *ctx) {
    gpt_ctx *c = ctx;
    static const char *const names[] = {"x"};
    int64_t d[3] = {1, 4, 8};
    c->net = gwr_network_new("gpt");
    c->x = gwr_value_new(GWR_FLOAT32, 3, d);
    if (!c->net || !c->x || !gwr_build_gpt(c->net, &g_gpt_onnx)) return GWR_ERR_NOMEM;
    for (int i = 0; i < 32; i++) gwr_value_set_f64(c->x, i, (i % 7) / 7.0 - 0.5);
    gwr_session *s = gwr_session_new(c->net, NULL);
    gwr_value *y = NULL;
    gwr_status st = s ? gwr_session_run(s, 1, names, &c->x, 1, NULL, &y) : GWR_ERR_NOMEM;
    c->want_optimized = gwr_session_optimized(s);
    if (!st && gwr_value_numel(y) == 32)
        for (int i = 0; i < 32; i++) c->want[i] = gwr_value_get_f64(y, i);
    else if (!st)
        st = GWR_ERR_SHAPE;
    gwr_value_release(y);
    gwr_session_free(s);
    return st;
}

/* The decoder's session on three threads with every kernel loop split
 * (GWR_TPOOL_GRAIN_ONE, set in main): the pool's memory and its threads
 * fail too (the loops then run on the caller), and the per-thread scratch
 * of the split loops. */
static gwr_session_options g_gpt_opt = {.threads = 1};

static gwr_status gpt_run(void *ctx, const char **msg) {
    gpt_ctx *c = ctx;
    static const char *const names[] = {"x"};
    c->s = gwr_session_new(c->net, &g_gpt_opt);
    if (!c->s) {
        *msg = gwr_last_errmsg();
        return GWR_ERR_NOMEM;
    }
    gwr_status s = gwr_session_run(c->s, 1, names, &c->x, 1, NULL, &c->out);
    *msg = gwr_session_errmsg(c->s);
    return s;
}

static void gpt_check(void *ctx, int failed) {
    gpt_ctx *c = ctx;
    check_verifies(c->net, "session-gpt");
    if (failed || !CHECK(c->out) || !CHECK_EQ_INT(gwr_value_numel(c->out), 32)) return;
    /* A failure inside the optimizer leaves a session of the network as
     * written: its unfused kernels agree within the passes' tolerance. */
    double tol = gwr_session_optimized(c->s) == c->want_optimized ? 0 : 1e-4;
    int same = 1;
    for (int i = 0; i < 32; i++) same &= fabs(gwr_value_get_f64(c->out, i) - c->want[i]) <= tol * (1 + fabs(c->want[i]));
    CHECK(same);
}

static gwr_status gpt_run_threads(void *ctx, const char **msg) {
    g_gpt_opt.threads = 3;
    gwr_status st = gpt_run(ctx, msg);
    g_gpt_opt.threads = 1;
    return st;
}

static void gpt_cleanup(void *ctx) {
    gpt_ctx *c = ctx;
    gwr_value_release(c->out);
    gwr_value_release(c->x);
    gwr_session_free(c->s);
    gwr_network_free(c->net);
    memset(c, 0, sizeof *c);
}

/* ---- FLayerInfo: re-create a plugin from its recorded call --------------------- */

/* What a pattern does by hand: redirect an input of the recorded call,
 * clone the arguments, call the functional again, move the outputs' uses
 * to the new layer and drop the old one. */
typedef struct flayer_ctx {
    gwr_network *net;
    gwr_layer *old;
    gwr_tensor *q2;
    gwr_args *args;
    int64_t memo_before;
} flayer_ctx;

static gwr_status flayer_setup(void *ctx) {
    flayer_ctx *c = ctx;
    c->net = gwr_network_new("flayer");
    if (!c->net || !gwr_build_gpt(c->net, &g_gpt)) return GWR_ERR_NOMEM;
    for (int64_t i = 0; i < gwr_network_num_layers(c->net) && !c->old; i++)
        if (gwr_flayer_get(c->net, gwr_network_layer(c->net, i))) c->old = gwr_network_layer(c->net, i);
    c->memo_before = gwr_flayer_memo_size(c->net);
    return c->old ? GWR_OK : GWR_ERR_STATE;
}

static gwr_status flayer_run(void *ctx, const char **msg) {
    flayer_ctx *c = ctx;
    gwr_flayer *f = gwr_flayer_get(c->net, c->old);
    gwr_tensor *qkv = gwr_flayer_get_input(f, "qkv"), *outs[2] = {NULL, NULL};
    gwr_status s = GWR_ERR_NOMEM;
    *msg = gwr_network_errmsg(c->net);
    if (!gwr_op_call(c->net, "", "Identity", 1, &qkv, NULL, 1, &c->q2)) return GWR_ERR_NOMEM;
    if ((s = gwr_flayer_replace_input_with(f, qkv, c->q2))) return s;
    if (!(c->args = gwr_flayer_clone_inputs(f))) {
        *msg = gwr_last_errmsg(); /* a constructor's message */
        return GWR_ERR_NOMEM;
    }
    if ((s = gwr_call(c->net, GWR_GPT_ATTENTION, c->args, outs, 2, NULL))) return s;
    if ((s = gwr_flayer_replace_outputs_uses_with(f, 2, outs))) return s;
    if ((s = gwr_layer_mark_as_removed(c->old))) return s;
    return gwr_network_prune(c->net, NULL);
}

static void flayer_check(void *ctx, int failed) {
    flayer_ctx *c = ctx;
    check_verifies(c->net, "flayer");
    if (failed) return;
    CHECK_EQ_INT(gwr_flayer_memo_size(c->net), c->memo_before);
    /* the new layer's call names the Identity's output */
    int found = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(c->net); i++) {
        gwr_flayer *f = gwr_flayer_get(c->net, gwr_network_layer(c->net, i));
        found += f && gwr_flayer_get_input(f, "qkv") == c->q2;
    }
    CHECK_EQ_INT(found, 1);
}

static void flayer_cleanup(void *ctx) {
    flayer_ctx *c = ctx;
    gwr_args_free(c->args);
    gwr_network_free(c->net);
    memset(c, 0, sizeof *c);
}

/* ---- fold_constants: a pass that runs kernels ------------------------------------ */

typedef struct fold_ctx {
    gwr_network *net;
    gwr_rewrite_manager *m;
} fold_ctx;

static const float g_fa[4] = {1.5f, -2.0f, 0.25f, 8.0f}, g_fb[4] = {0.5f, 4.0f, -0.25f, -1.0f};

static gwr_status fold_setup(void *ctx) {
    fold_ctx *c = ctx;
    int64_t d = 4;
    c->net = gwr_network_new("fold");
    c->m = gwr_rewrite_manager_new();
    if (!c->net || !c->m) return GWR_ERR_NOMEM;
    gwr_dim dd = 4;
    gwr_tensor *x = gwr_network_add_input(c->net, "x", GWR_FLOAT32, 1, &dd);
    gwr_tensor *a = gwr_constant(c->net, GWR_FLOAT32, 1, &d, g_fa), *b = gwr_constant(c->net, GWR_FLOAT32, 1, &d, g_fb);
    gwr_tensor *y = gwr_mul(c->net, x, gwr_sqrt(c->net, gwr_mul(c->net, gwr_add(c->net, a, b), gwr_add(c->net, a, b))));
    if (!y || gwr_network_mark_output(c->net, y)) return GWR_ERR_NOMEM;
    return gwr_passes_add(c->m, "fold_constants");
}

static gwr_status fold_run(void *ctx, const char **msg) {
    fold_ctx *c = ctx;
    gwr_status s = gwr_rewrite_manager_rewrite(c->m, c->net, NULL);
    *msg = gwr_rewrite_manager_errmsg(c->m);
    return s;
}

static void fold_check(void *ctx, int failed) {
    fold_ctx *c = ctx;
    check_verifies(c->net, "fold");
    if (failed) return;
    /* y = x * |a + b|: one Mul left, reading the folded constant */
    CHECK_EQ_INT(count_op(c->net, "Add") + count_op(c->net, "Sqrt"), 0);
    gwr_layer *mul = gwr_tensor_parent(gwr_network_output(c->net, 0));
    const gwr_weights *w = NULL;
    gwr_layer *k = mul ? gwr_tensor_parent(gwr_layer_input(mul, 1)) : NULL;
    if (!CHECK(k) || !CHECK_OK(gwr_layer_get_tensor(k, "value", &w))) return;
    const float *v = gwr_buffer_data(w->buffer);
    for (int i = 0; i < 4; i++) CHECK(v[i] == fabsf(g_fa[i] + g_fb[i]));
}

static void fold_cleanup(void *ctx) {
    fold_ctx *c = ctx;
    gwr_rewrite_manager_free(c->m);
    gwr_network_free(c->net);
    memset(c, 0, sizeof *c);
}

/* gwr_optimize: the same network through the optimizer (its plan, the
 * report, the bodies' walk). */
static gwr_status optimize_run(void *ctx, const char **msg) {
    fold_ctx *c = ctx;
    gwr_optimize_report *r = NULL;
    gwr_status s = gwr_optimize(c->net, NULL, &r);
    gwr_optimize_report_free(r);
    *msg = gwr_network_errmsg(c->net);
    return s;
}

/* ---- attention fusion ------------------------------------------------------------ */

/* fuse_attention, lower_attention and merge_qkv_matmuls through gwr_optimize on the plain-ONNX
 * decoder (its Split form, a computed mask: an Unsqueeze and one
 * Attention), and the same decoder computes the same after. */
static gwr_status attention_run(void *ctx, const char **msg) {
    gpt_ctx *c = ctx;
    gwr_optimize_options o = {.only = "merge_qkv_matmuls,fuse_attention,lower_attention", .target = GWR_TARGET_ORT};
    gwr_status s = gwr_optimize(c->net, &o, NULL);
    *msg = gwr_network_errmsg(c->net);
    return s;
}

static void attention_check(void *ctx, int failed) {
    gpt_ctx *c = ctx;
    static const char *const names[] = {"x"};
    check_verifies(c->net, "attention");
    if (failed) return;
    CHECK_EQ_INT(count_op(c->net, "Attention"), 1);
    gwr_session *s = gwr_session_new(c->net, NULL);
    gwr_value *y = NULL;
    if (CHECK(s) && CHECK_OK(gwr_session_run(s, 1, names, &c->x, 1, NULL, &y)) && CHECK(gwr_value_numel(y) == 32))
        for (int i = 0; i < 32; i++) CHECK(fabs(gwr_value_get_f64(y, i) - c->want[i]) <= 1e-4);
    gwr_value_release(y);
    gwr_session_free(s);
}

/* ---- analysis ------------------------------------------------------------------- */

typedef struct analyze_ctx {
    gwr_network *net;
    gwr_analysis *a;
} analyze_ctx;

static gwr_status analyze_setup(void *ctx) {
    analyze_ctx *c = ctx;
    c->net = gwr_onnx_load(g_model, NULL);
    return c->net ? GWR_OK : GWR_ERR_NOMEM;
}

static gwr_status analyze_run(void *ctx, const char **msg) {
    analyze_ctx *c = ctx;
    c->a = gwr_analyze_network(c->net, NULL);
    *msg = gwr_network_errmsg(c->net);
    return c->a ? GWR_OK : GWR_ERR_NOMEM;
}

static void analyze_check(void *ctx, int failed) {
    analyze_ctx *c = ctx;
    check_verifies(c->net, "analyze");
    gwr_param_stats ps;
    if (!failed && CHECK(c->a) && CHECK_OK(gwr_analysis_params(c->a, &ps))) CHECK_EQ_INT(ps.elements, 20);
}

static void analyze_cleanup(void *ctx) {
    analyze_ctx *c = ctx;
    gwr_analysis_free(c->a);
    gwr_network_free(c->net);
    memset(c, 0, sizeof *c);
}

/* ---- the hook itself ------------------------------------------------------------ */

TEST(test_hook) {
    gwr_alloc_hook_arm(2, 0);
    void *a = gwr_malloc(8), *b = gwr_malloc(8), *c = gwr_malloc(8);
    CHECK(a && !b && c);
    CHECK_EQ_INT(gwr_alloc_hook_failures(), 1);
    gwr_free(a), gwr_free(c);
    gwr_alloc_hook_arm(2, 1);
    a = gwr_calloc(1, 8), b = gwr_calloc(1, 8), c = gwr_realloc(NULL, 8);
    CHECK(a && !b && !c);
    CHECK_EQ_INT(gwr_alloc_hook_failures(), 2);
    gwr_alloc_hook_arm(0, 0);
    b = gwr_malloc(8);
    CHECK(b != NULL);
    CHECK_EQ_INT(gwr_alloc_hook_failures(), 0);
    gwr_free(a), gwr_free(b);
}

TEST(test_scenarios) {
    load_ctx lc = {0};
    build_ctx bc = {0};
    rewrite_ctx rc = {0};
    save_ctx sc = {0};
    session_ctx xc = {0};
    gpt_ctx gc = {0};
    flayer_ctx fc = {0};
    fold_ctx oc = {0};
    analyze_ctx ac = {0};
    fold_ctx pc = {0};
    gpt_ctx tc = {0}, gtc = {0};
    snprintf(sc.dir, sizeof sc.dir, "%s/out", g_dir);
    snprintf(sc.path, sizeof sc.path, "%s/saved.onnx", sc.dir);
    if (!CHECK(mkdir(sc.dir, 0755) == 0)) return;
    const scenario all[] = {
        {"load", NULL, load_run, load_check, load_cleanup},
        {"build", NULL, build_run, build_check, build_cleanup},
        {"rewrite", rewrite_setup, rewrite_run, rewrite_check, rewrite_cleanup},
        {"save", save_setup, save_run, save_check, save_cleanup},
        {"session", session_setup, session_run, session_check, session_cleanup},
        {"run-gpt", gpt_setup, gpt_run, gpt_check, gpt_cleanup},
        {"flayer", flayer_setup, flayer_run, flayer_check, flayer_cleanup},
        {"fold", fold_setup, fold_run, fold_check, fold_cleanup},
        {"optimize", fold_setup, optimize_run, fold_check, fold_cleanup},
        {"analyze", analyze_setup, analyze_run, analyze_check, analyze_cleanup},
        {"attention", gpt_setup, attention_run, attention_check, gpt_cleanup},
        {"run-gpt-threads", gpt_setup, gpt_run_threads, gpt_check, gpt_cleanup},
    };
    void *ctxs[] = {&lc, &bc, &rc, &sc, &xc, &gc, &fc, &oc, &pc, &ac, &tc, &gtc};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        for (int sticky = 0; sticky < 2; sticky++) run_scenario(&all[i], ctxs[i], sticky);
    rmdir(sc.dir);
    printf("distinct allocation call sites made to fail: %zu\n", g_nsites);
}

int main(void) {
    char cmd[600];
    setenv("GWR_TPOOL_GRAIN_ONE", "1", 1); /* run-gpt-threads: every loop split */
    snprintf(g_dir, sizeof g_dir, "/tmp/gwr-alloc-XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(g_model, sizeof g_model, "%s/model.onnx", g_dir);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/tests/alloc/make_alloc_model.py' '%s'", GWR_SOURCE_DIR, g_dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "make_alloc_model.py failed: python3-onnx is required\n");
        return 1;
    }
    RUN(test_hook);
    RUN(test_scenarios);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    free(g_sites);
    return check_report();
}
