/* test_random_rewrites.c - property test of the IR's edit operations.
 *
 * For each seed: a random DAG network (1 to 5,000 layers of ops with 1-3
 * inputs and 1-2 outputs reading random earlier tensors, a few graph
 * outputs), then STEPS random edits among replace_all_uses_with,
 * replace_all_uses_except (inserting a layer after a tensor), set_input,
 * mark_as_removed, prune and toposort. The expected result of every edit is
 * computed independently (cycle by a reachability search of our own, dtype
 * clash, prune count by a liveness search of our own); a refused edit must
 * change nothing (layer order, every input slot, every use count and the
 * outputs are snapshotted). After every step:
 *   - gwr_network_verify passes;
 *   - an independent recount of uses (over all layers and slots) equals
 *     gwr_tensor_num_users for every tensor, and every use (u, s) listed by
 *     gwr_tensor_user satisfies gwr_layer_input(u, s) == t;
 *   - the list of output names is the one the network started with;
 *   - num_live_layers and layer indices agree with network order;
 *   - after toposort every layer's inputs come from earlier layers, and an
 *     order that was already topological is unchanged.
 * Each seed ends by removing a layer that is still used and expecting prune
 * to refuse with GWR_ERR_STATE, dropping nothing.
 *
 * GWR_PROP_SEED=<n> (decimal or 0x hex) runs that seed alone; the network
 * size and every step follow from the seed. GWR_PROP_TRACE=1 prints every
 * step with its arguments and expectation. Prints each seed and its step
 * counts; the last line is check.h's "N passed, M failed" (one check per
 * seed). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gwr/gwr.h"
#include "unit/check.h"
#include "property/prop_rng.h"

enum { STEPS = 200, MAX_LAYERS = 5000 };

/* seed % 4 == 0: 5,000 layers; seed % 4 == 1: at most 64 (corner cases);
 * otherwise 1 to 1,500, drawn from the seed. Three big seeds keep the whole
 * run under ~20 s with AddressSanitizer (verify after every step is most
 * of the time). */
static const uint64_t SEEDS[] = {
    0x1, 0x2, 0x3, 0x4, 0x5, 0x6, 0x7, 0x8, 0x9, 0xa,
    0xb, 0xe, 0x10, 0xdeadbeef, 0xc0ffee,
    0x2545f4914f6cdd1d, 0x9e3779b97f4a7c15, 0x31337, 0xabcdef, 0xfeedface,
};

/* ---- the ops the generator uses ------------------------------------------- */

static const struct {
    const char *op;
    int nin, nout;
    int optional_from; /* inputs from this slot on may be absent */
} OPS[] = {
    {"Relu", 1, 1, 1},  {"Sigmoid", 1, 1, 1}, {"Neg", 1, 1, 1},   {"Add", 2, 1, 2},
    {"Mul", 2, 1, 2},   {"Sub", 2, 1, 2},     {"Where", 3, 1, 3}, {"Clip", 3, 1, 1},
    {"Split", 1, 2, 1}, {"TopK", 2, 2, 2},    {"Concat", 3, 1, 3},
};
#define NOPS ((int)(sizeof OPS / sizeof OPS[0]))

/* ---- failure reporting ------------------------------------------------------- */

typedef struct ctx {
    uint64_t seed;
    int step;
    const char *action;
    int failed;
    gwr_network *net;
    gwr_dim batch;
    /* expected output names */
    char **out_names;
    int nout_names;
    /* listener counts */
    int64_t dropped_events;
} ctx;

static int trace_on; /* GWR_PROP_TRACE=1: print every step */

static void trace(const ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void trace(const ctx *c, const char *fmt, ...) {
    if (!trace_on) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "  [%d] %s: ", c->step, c->action);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void fail(ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(ctx *c, const char *fmt, ...) {
    if (c->failed) return; /* report the first failure of a seed only */
    c->failed = 1;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL seed=0x%" PRIx64 " step=%d action=%s: ", c->seed, c->step, c->action);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " [errmsg: %s]\n", gwr_network_errmsg(c->net));
    fprintf(stderr, "  reproduce: GWR_PROP_SEED=0x%" PRIx64 " ./test_random_rewrites\n", c->seed);
    va_end(ap);
}

/* ---- a view of the network: layers, tensors, lookups by pointer --------------- */

/* Pointer -> index, open addressing (the test's own, independent of the
 * library's maps). */
typedef struct pindex {
    const void **keys;
    int64_t *vals;
    int64_t cap; /* power of two */
} pindex;

static uint64_t mix_ptr(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

static void *xrealloc(void *p, size_t n);

static void pindex_build(pindex *m, void *const *ptrs, int64_t n) {
    int64_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    if (cap > m->cap) {
        m->keys = xrealloc(m->keys, sizeof *m->keys * (size_t)cap);
        m->vals = xrealloc(m->vals, sizeof *m->vals * (size_t)cap);
        m->cap = cap;
    }
    memset(m->keys, 0, sizeof *m->keys * (size_t)m->cap);
    for (int64_t i = 0; i < n; i++) {
        uint64_t h = mix_ptr(ptrs[i]) & (uint64_t)(m->cap - 1);
        while (m->keys[h]) h = (h + 1) & (uint64_t)(m->cap - 1);
        m->keys[h] = ptrs[i];
        m->vals[h] = i;
    }
}

static int64_t pindex_get(const pindex *m, const void *p) {
    if (!p || !m->cap) return -1;
    uint64_t h = mix_ptr(p) & (uint64_t)(m->cap - 1);
    while (m->keys[h]) {
        if (m->keys[h] == p) return m->vals[h];
        h = (h + 1) & (uint64_t)(m->cap - 1);
    }
    return -1;
}

static void pindex_free(pindex *m) {
    free(m->keys);
    free(m->vals);
}

typedef struct view {
    gwr_layer **layers; /* network order */
    int64_t nl, lcap;
    gwr_tensor **tens;  /* inputs, then every layer's outputs */
    int64_t nt, tcap;
    pindex li, ti;         /* layer / tensor -> position in layers / tens */
    int64_t *tcount;       /* recounted uses, by tensor position */
    unsigned char *mark;   /* scratch, by layer position */
    int64_t *stack;
} view;

static void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return q;
}

static void view_build(view *v, gwr_network *net) {
    int64_t nl = gwr_network_num_layers(net);
    if (nl < 0) nl = 0;
    if (nl > v->lcap) {
        v->lcap = nl * 2 + 16;
        v->layers = xrealloc(v->layers, sizeof *v->layers * (size_t)v->lcap);
        v->mark = xrealloc(v->mark, (size_t)v->lcap);
        v->stack = xrealloc(v->stack, sizeof *v->stack * (size_t)v->lcap);
    }
    v->nl = nl;
    int64_t nt = gwr_network_num_inputs(net);
    for (int64_t i = 0; i < nl; i++) {
        v->layers[i] = gwr_network_layer(net, i);
        nt += gwr_layer_num_outputs(v->layers[i]);
    }
    if (nt > v->tcap) {
        v->tcap = nt * 2 + 16;
        v->tens = xrealloc(v->tens, sizeof *v->tens * (size_t)v->tcap);
        v->tcount = xrealloc(v->tcount, sizeof *v->tcount * (size_t)v->tcap);
    }
    v->nt = 0;
    for (int i = 0; i < gwr_network_num_inputs(net); i++) v->tens[v->nt++] = gwr_network_input(net, i);
    for (int64_t i = 0; i < nl; i++)
        for (int k = 0; k < gwr_layer_num_outputs(v->layers[i]); k++)
            v->tens[v->nt++] = gwr_layer_output(v->layers[i], k);
    pindex_build(&v->li, (void *const *)v->layers, nl);
    pindex_build(&v->ti, (void *const *)v->tens, v->nt);
}

static void view_free(view *v) {
    free(v->layers);
    free(v->tens);
    pindex_free(&v->li);
    pindex_free(&v->ti);
    free(v->tcount);
    free(v->mark);
    free(v->stack);
}

/* Marks (in v->mark, by sorted layer index) `from` and every layer it
 * depends on. */
static void mark_ancestors(view *v, const gwr_layer *from) {
    memset(v->mark, 0, (size_t)v->nl);
    int64_t i = pindex_get(&v->li, from);
    if (i < 0) return;
    int64_t sp = 0;
    v->mark[i] = 1;
    v->stack[sp++] = i;
    while (sp) {
        const gwr_layer *l = v->layers[v->stack[--sp]];
        for (int k = 0; k < gwr_layer_num_inputs(l); k++) {
            gwr_tensor *t = gwr_layer_input(l, k);
            gwr_layer *p = t ? gwr_tensor_parent(t) : NULL;
            if (!p) continue;
            int64_t j = pindex_get(&v->li, p);
            if (j >= 0 && !v->mark[j]) {
                v->mark[j] = 1;
                v->stack[sp++] = j;
            }
        }
    }
}

static int is_marked(const view *v, const gwr_layer *l) {
    int64_t i = pindex_get(&v->li, l);
    return i >= 0 && v->mark[i];
}

/* Recounted users of t (over all layers and slots). */
static int64_t recount(const view *v, const gwr_tensor *t) {
    int64_t n = 0;
    for (int64_t i = 0; i < v->nl; i++)
        for (int k = 0; k < gwr_layer_num_inputs(v->layers[i]); k++) n += gwr_layer_input(v->layers[i], k) == t;
    return n;
}

/* ---- the invariants checked after every step ---------------------------------- */

static int is_topological(const view *v) {
    for (int64_t i = 0; i < v->nl; i++)
        for (int k = 0; k < gwr_layer_num_inputs(v->layers[i]); k++) {
            gwr_tensor *t = gwr_layer_input(v->layers[i], k);
            gwr_layer *p = t ? gwr_tensor_parent(t) : NULL;
            if (p && gwr_layer_index(p) >= i) return 0;
        }
    return 1;
}

static void check_invariants(ctx *c, view *v) {
    gwr_network *net = c->net;
    gwr_status st = gwr_network_verify(net);
    if (st != GWR_OK) {
        fail(c, "verify: %s", gwr_status_name(st));
        return;
    }
    view_build(v, net);
    /* every name finds its object (verify checks uniqueness itself); every
     * step on small networks, every 10th on big ones, to keep the time */
    int names = v->nl < 1000 || c->step % 10 == 0 || c->step > STEPS;
    /* network order and live count */
    int64_t live = 0;
    for (int64_t i = 0; i < v->nl; i++) {
        if (gwr_layer_index(v->layers[i]) != i) {
            fail(c, "layer %s at %" PRId64 " has index %" PRId64, gwr_layer_name(v->layers[i]), i,
                 gwr_layer_index(v->layers[i]));
            return;
        }
        if (gwr_layer_network(v->layers[i]) != net) {
            fail(c, "layer %s reports another network", gwr_layer_name(v->layers[i]));
            return;
        }
        live += !gwr_layer_is_removed(v->layers[i]);
    }
    if (gwr_network_num_live_layers(net) != live) {
        fail(c, "num_live_layers %" PRId64 ", counted %" PRId64, gwr_network_num_live_layers(net), live);
        return;
    }
    /* independent recount of uses */
    memset(v->tcount, 0, sizeof *v->tcount * (size_t)v->nt);
    for (int64_t i = 0; i < v->nl; i++) {
        gwr_layer *l = v->layers[i];
        for (int k = 0; k < gwr_layer_num_inputs(l); k++) {
            gwr_tensor *t = gwr_layer_input(l, k);
            if (!t) continue;
            int64_t j = pindex_get(&v->ti, t);
            if (j < 0) {
                fail(c, "layer %s input %d is not a tensor of the network", gwr_layer_name(l), k);
                return;
            }
            v->tcount[j]++;
        }
    }
    for (int64_t j = 0; j < v->nt; j++) {
        const gwr_tensor *t = v->tens[j];
        int64_t nu = gwr_tensor_num_users(t);
        if (nu != v->tcount[j]) {
            fail(c, "tensor %s: num_users %" PRId64 ", recount %" PRId64, gwr_tensor_name(t), nu, v->tcount[j]);
            return;
        }
        for (int64_t i = 0; i < nu; i++) {
            int slot = -1;
            gwr_layer *u = gwr_tensor_user(t, i, &slot);
            if (!u || pindex_get(&v->li, u) < 0) {
                fail(c, "tensor %s user %" PRId64 " is not a layer of the network", gwr_tensor_name(t), i);
                return;
            }
            if (gwr_layer_input(u, slot) != t) {
                fail(c, "tensor %s user %" PRId64 " (%s slot %d) reads another tensor", gwr_tensor_name(t), i,
                     gwr_layer_name(u), slot);
                return;
            }
        }
        gwr_layer *p = gwr_tensor_parent(t);
        if (p && gwr_layer_output(p, gwr_tensor_parent_output_index(t)) != t) {
            fail(c, "tensor %s: parent/output index disagree", gwr_tensor_name(t));
            return;
        }
        if (names && gwr_network_find_tensor(net, gwr_tensor_name(t)) != t) {
            fail(c, "find_tensor(\"%s\") does not find it", gwr_tensor_name(t));
            return;
        }
    }
    for (int64_t i = 0; names && i < v->nl; i++)
        if (gwr_network_find_layer(net, gwr_layer_name(v->layers[i])) != v->layers[i]) {
            fail(c, "find_layer(\"%s\") does not find it", gwr_layer_name(v->layers[i]));
            return;
        }
    /* the interface */
    if (gwr_network_num_outputs(net) != c->nout_names) {
        fail(c, "%d outputs, expected %d", gwr_network_num_outputs(net), c->nout_names);
        return;
    }
    for (int i = 0; i < c->nout_names; i++) {
        gwr_tensor *o = gwr_network_output(net, i);
        const char *n = gwr_tensor_name(o);
        if (!n || strcmp(n, c->out_names[i]) != 0) {
            fail(c, "output %d is named \"%s\", expected \"%s\"", i, n ? n : "(null)", c->out_names[i]);
            return;
        }
        if (gwr_tensor_output_index(o) != i) {
            fail(c, "output %d has output_index %d", i, gwr_tensor_output_index(o));
            return;
        }
    }
}

/* ---- snapshots, to prove a refused edit changed nothing ---------------------- */

typedef struct snap {
    int64_t nl, nt, nin;
    gwr_layer **layers;
    gwr_tensor **ins;
    gwr_tensor **tens;
    int64_t *users;
    gwr_tensor **outs;
    int nouts;
} snap;

static void snap_take(snap *s, gwr_network *net) {
    memset(s, 0, sizeof *s);
    s->nl = gwr_network_num_layers(net);
    s->layers = xrealloc(NULL, sizeof *s->layers * (size_t)(s->nl + 1));
    int64_t nin = 0, nt = gwr_network_num_inputs(net);
    for (int64_t i = 0; i < s->nl; i++) {
        s->layers[i] = gwr_network_layer(net, i);
        nin += gwr_layer_num_inputs(s->layers[i]) + 1;
        nt += gwr_layer_num_outputs(s->layers[i]);
    }
    s->ins = xrealloc(NULL, sizeof *s->ins * (size_t)(nin + 1));
    s->tens = xrealloc(NULL, sizeof *s->tens * (size_t)(nt + 1));
    s->users = xrealloc(NULL, sizeof *s->users * (size_t)(nt + 1));
    for (int64_t i = 0; i < s->nl; i++) {
        gwr_layer *l = s->layers[i];
        s->ins[s->nin++] = (gwr_tensor *)(intptr_t)gwr_layer_num_inputs(l);
        for (int k = 0; k < gwr_layer_num_inputs(l); k++) s->ins[s->nin++] = gwr_layer_input(l, k);
    }
    for (int i = 0; i < gwr_network_num_inputs(net); i++) s->tens[s->nt++] = gwr_network_input(net, i);
    for (int64_t i = 0; i < s->nl; i++)
        for (int k = 0; k < gwr_layer_num_outputs(s->layers[i]); k++)
            s->tens[s->nt++] = gwr_layer_output(s->layers[i], k);
    for (int64_t j = 0; j < s->nt; j++) s->users[j] = gwr_tensor_num_users(s->tens[j]);
    s->nouts = gwr_network_num_outputs(net);
    s->outs = xrealloc(NULL, sizeof *s->outs * (size_t)(s->nouts + 1));
    for (int i = 0; i < s->nouts; i++) s->outs[i] = gwr_network_output(net, i);
}

static void snap_free(snap *s) {
    free(s->layers);
    free(s->ins);
    free(s->tens);
    free(s->users);
    free(s->outs);
}

/* Returns NULL when unchanged, else what changed. */
static const char *snap_diff(const snap *s, gwr_network *net) {
    snap now;
    const char *why = NULL;
    snap_take(&now, net);
    if (now.nl != s->nl) why = "the number of layers changed";
    else if (memcmp(now.layers, s->layers, sizeof *s->layers * (size_t)s->nl)) why = "network order changed";
    else if (now.nin != s->nin || memcmp(now.ins, s->ins, sizeof *s->ins * (size_t)s->nin))
        why = "a layer input changed";
    else if (now.nt != s->nt || memcmp(now.tens, s->tens, sizeof *s->tens * (size_t)s->nt))
        why = "the tensors changed";
    else if (memcmp(now.users, s->users, sizeof *s->users * (size_t)s->nt)) why = "a use count changed";
    else if (now.nouts != s->nouts || memcmp(now.outs, s->outs, sizeof *s->outs * (size_t)s->nouts))
        why = "the outputs changed";
    snap_free(&now);
    return why;
}

/* ---- generation ------------------------------------------------------------------ */

static void type_randomly(ctx *c, uint64_t *rs, gwr_tensor *t) {
    int64_t r = rng_below(rs, 100);
    gwr_dim dims[2] = {c->batch, 16};
    if (r < 80) gwr_tensor_set_type(t, GWR_FLOAT32, 2, dims);
    else if (r < 92) gwr_tensor_set_type(t, GWR_INT64, 2, dims);
    /* else: left undefined */
}

/* An input for a new layer: a tensor nobody reads yet (so that most layers
 * end up feeding an output), a recent one (deep graphs) or any one. */
static gwr_tensor *pick_tensor(uint64_t *rs, gwr_tensor **pool, int64_t n, gwr_tensor **frontier,
                               int64_t *nfront) {
    int64_t r = rng_below(rs, 10);
    if (r < 4 && *nfront > 0) {
        int64_t i = rng_below(rs, *nfront);
        gwr_tensor *t = frontier[i];
        frontier[i] = frontier[--*nfront];
        return t;
    }
    if (r < 7) {
        int64_t w = n < 24 ? n : 24;
        return pool[n - 1 - rng_below(rs, w)];
    }
    return pool[rng_below(rs, n)];
}

static void on_dropped(void *p, gwr_layer *l) {
    (void)l;
    ((ctx *)p)->dropped_events++;
}

static int build_network(ctx *c, uint64_t *rs, int64_t nlayers) {
    gwr_network *net = gwr_network_new("prop");
    if (!net) return 0;
    c->net = net;
    c->batch = gwr_network_dim_sym(net, "batch");
    gwr_dim dims[2] = {c->batch, 16};
    int64_t cap = 8 + 2 * nlayers, n = 0, nfront = 0;
    gwr_tensor **pool = xrealloc(NULL, sizeof *pool * (size_t)cap);
    gwr_tensor **frontier = xrealloc(NULL, sizeof *frontier * (size_t)cap);
    char nm[32];
    int nin = 1 + (int)rng_below(rs, 3);
    for (int i = 0; i < nin; i++) {
        snprintf(nm, sizeof nm, "in%d", i);
        pool[n++] = gwr_network_add_input(net, nm, GWR_FLOAT32, 2, dims);
    }
    pool[n++] = gwr_network_add_input(net, "in_i64", GWR_INT64, 2, dims);
    for (int64_t i = 0; i < nlayers; i++) {
        int op = (int)rng_below(rs, NOPS);
        gwr_tensor *ins[3] = {NULL, NULL, NULL};
        for (int k = 0; k < OPS[op].nin; k++)
            if (k < OPS[op].optional_from || rng_below(rs, 4) != 0)
                ins[k] = pick_tensor(rs, pool, n, frontier, &nfront);
        gwr_layer *l = gwr_network_add_layer(net, OPS[op].op, "", NULL, OPS[op].nin, ins, OPS[op].nout, NULL);
        if (!l) {
            fail(c, "add_layer(%s) failed", OPS[op].op);
            free(pool);
            free(frontier);
            return 0;
        }
        for (int k = 0; k < OPS[op].nout; k++) {
            gwr_tensor *t = gwr_layer_output(l, k);
            type_randomly(c, rs, t);
            pool[n++] = t;
            frontier[nfront++] = t;
        }
    }
    /* outputs: the last tensor, then up to 63 unread layer outputs (most
     * of the rest is dead and goes at the first prune) */
    int ok = 1;
    if (n > nin + 1) ok = gwr_network_mark_output(net, pool[n - 1]) == GWR_OK;
    for (int64_t i = 0; ok && i < nfront && gwr_network_num_outputs(net) < 64; i++) {
        gwr_tensor *t = frontier[i];
        if (gwr_tensor_is_input(t) || gwr_tensor_num_users(t) != 0 || gwr_tensor_output_index(t) >= 0) continue;
        if (rng_below(rs, 8) == 0) continue;
        ok = gwr_network_mark_output(net, t) == GWR_OK;
    }
    free(pool);
    free(frontier);
    if (!ok) {
        fail(c, "mark_output failed");
        return 0;
    }
    c->nout_names = gwr_network_num_outputs(net);
    c->out_names = xrealloc(NULL, sizeof *c->out_names * (size_t)(c->nout_names + 1));
    for (int i = 0; i < c->nout_names; i++) c->out_names[i] = strdup(gwr_tensor_name(gwr_network_output(net, i)));
    gwr_listener ls;
    memset(&ls, 0, sizeof ls);
    ls.layer_dropped = on_dropped;
    ls.ctx = c;
    if (gwr_network_add_listener(net, &ls) < 0) {
        fail(c, "add_listener failed");
        return 0;
    }
    return 1;
}

/* ---- the steps ---------------------------------------------------------------------- */

typedef struct stats {
    int rauw_ok, rauw_cycle, rauw_type, insert, set_ok, set_cycle, removed, prunes, toposorts, noop;
    int64_t pruned;
} stats;

/* A tensor of the network that a live layer may read: a graph input or an
 * output of a layer not marked as removed. NULL when there is none. */
static gwr_tensor *pick_live_tensor(uint64_t *rs, const view *v) {
    for (int tries = 0; tries < 64; tries++) {
        gwr_tensor *t = v->tens[rng_below(rs, v->nt)];
        gwr_layer *p = gwr_tensor_parent(t);
        if (!p || !gwr_layer_is_removed(p)) return t;
    }
    return NULL;
}

static gwr_layer *pick_live_layer(uint64_t *rs, const view *v) {
    for (int tries = 0; tries < 64 && v->nl > 0; tries++) {
        gwr_layer *l = v->layers[rng_below(rs, v->nl)];
        if (!gwr_layer_is_removed(l)) return l;
    }
    return NULL;
}

static void step_rauw(ctx *c, uint64_t *rs, view *v, stats *stt) {
    gwr_tensor *old_t = pick_live_tensor(rs, v), *new_t = pick_live_tensor(rs, v);
    if (!old_t || !new_t || old_t == new_t) {
        stt->noop++;
        return;
    }
    /* expectations, computed independently */
    int cycle = 0;
    gwr_layer *np = gwr_tensor_parent(new_t);
    if (np) {
        mark_ancestors(v, np);
        for (int64_t i = 0; i < v->nl && !cycle; i++)
            for (int k = 0; k < gwr_layer_num_inputs(v->layers[i]); k++)
                if (gwr_layer_input(v->layers[i], k) == old_t && is_marked(v, v->layers[i])) cycle = 1;
    }
    gwr_dtype da = gwr_tensor_dtype(old_t), db = gwr_tensor_dtype(new_t);
    int type_clash = da != GWR_UNDEFINED && db != GWR_UNDEFINED && da != db;
    int64_t old_users = recount(v, old_t), new_users = recount(v, new_t);
    int64_t nl_before = v->nl;
    snap s;
    snap_take(&s, c->net);
    trace(c, "(%s, %s) expect cycle=%d type_clash=%d, old is output %d, new is input %d output %d",
          gwr_tensor_name(old_t), gwr_tensor_name(new_t), cycle, type_clash, gwr_tensor_output_index(old_t),
          gwr_tensor_is_input(new_t), gwr_tensor_output_index(new_t));
    gwr_status st = gwr_tensor_replace_all_uses_with(old_t, new_t);
    if (cycle || type_clash) {
        int expected = (cycle && st == GWR_ERR_CYCLE) || (type_clash && st == GWR_ERR_TYPE);
        if (!expected) {
            fail(c, "replace_all_uses_with(%s, %s) returned %s; expected %s", gwr_tensor_name(old_t),
                 gwr_tensor_name(new_t), gwr_status_name(st),
                 cycle && type_clash ? "GWR_ERR_CYCLE or GWR_ERR_TYPE" : cycle ? "GWR_ERR_CYCLE" : "GWR_ERR_TYPE");
        } else {
            const char *why = snap_diff(&s, c->net);
            if (why) fail(c, "refused replace_all_uses_with changed the network: %s", why);
            if (st == GWR_ERR_CYCLE) stt->rauw_cycle++;
            else stt->rauw_type++;
        }
        snap_free(&s);
        return;
    }
    snap_free(&s);
    if (st != GWR_OK) {
        fail(c, "replace_all_uses_with(%s, %s) returned %s; expected GWR_OK", gwr_tensor_name(old_t),
             gwr_tensor_name(new_t), gwr_status_name(st));
        return;
    }
    stt->rauw_ok++;
    int64_t added = gwr_network_num_layers(c->net) - nl_before; /* an Identity, at most */
    if (added < 0 || added > 1) {
        fail(c, "replace_all_uses_with added %" PRId64 " layers", added);
        return;
    }
    if (gwr_tensor_num_users(old_t) != 0) {
        fail(c, "old tensor %s still has %" PRId64 " users", gwr_tensor_name(old_t), gwr_tensor_num_users(old_t));
        return;
    }
    if (gwr_tensor_num_users(new_t) != new_users + old_users + added) {
        fail(c, "new tensor has %" PRId64 " users, expected %" PRId64, gwr_tensor_num_users(new_t),
             new_users + old_users + added);
        return;
    }
}

/* Inserts Relu(old) and moves every other use of old to it. Always legal. */
static void step_insert(ctx *c, uint64_t *rs, view *v, stats *stt) {
    gwr_tensor *old_t = pick_live_tensor(rs, v);
    if (!old_t) {
        stt->noop++;
        return;
    }
    gwr_tensor *ins[1] = {old_t};
    gwr_layer *r = gwr_network_add_layer(c->net, "Relu", "", NULL, 1, ins, 1, NULL);
    if (!r) {
        fail(c, "add_layer(Relu) failed");
        return;
    }
    gwr_tensor *rt = gwr_layer_output(r, 0);
    if (gwr_tensor_dtype(old_t) != GWR_UNDEFINED)
        gwr_tensor_set_type(rt, gwr_tensor_dtype(old_t), gwr_tensor_rank(old_t), gwr_tensor_dims(old_t));
    int was_output = gwr_tensor_output_index(old_t) >= 0;
    trace(c, "Relu %s after %s (output %d)", gwr_layer_name(r), gwr_tensor_name(old_t), was_output);
    gwr_status st = gwr_tensor_replace_all_uses_except(old_t, rt, r);
    if (st != GWR_OK) {
        fail(c, "replace_all_uses_except(%s, relu) returned %s", gwr_tensor_name(old_t), gwr_status_name(st));
        return;
    }
    stt->insert++;
    int slot = -1;
    if (gwr_tensor_num_users(old_t) != 1 || gwr_tensor_user(old_t, 0, &slot) != r || slot != 0) {
        fail(c, "after insertion %s has %" PRId64 " users, expected only the new Relu", gwr_tensor_name(old_t),
             gwr_tensor_num_users(old_t));
        return;
    }
    if (was_output && gwr_tensor_output_index(rt) < 0) fail(c, "the output mark did not move to the new Relu");
}

static void step_set_input(ctx *c, uint64_t *rs, view *v, stats *stt) {
    gwr_layer *l = pick_live_layer(rs, v);
    if (!l || gwr_layer_num_inputs(l) == 0) {
        stt->noop++;
        return;
    }
    int slot = (int)rng_below(rs, gwr_layer_num_inputs(l));
    gwr_tensor *t = rng_below(rs, 10) == 0 ? NULL : pick_live_tensor(rs, v);
    gwr_tensor *prev = gwr_layer_input(l, slot);
    int cycle = 0;
    if (t && gwr_tensor_parent(t)) {
        mark_ancestors(v, gwr_tensor_parent(t));
        cycle = is_marked(v, l);
    }
    int64_t tu = t ? recount(v, t) : 0, pu = prev ? recount(v, prev) : 0;
    snap s;
    snap_take(&s, c->net);
    trace(c, "(%s, %d, %s) expect cycle=%d", gwr_layer_name(l), slot, t ? gwr_tensor_name(t) : "NULL", cycle);
    gwr_status st = gwr_layer_set_input(l, slot, t);
    if (cycle) {
        if (st != GWR_ERR_CYCLE)
            fail(c, "set_input(%s, %d, %s) returned %s; expected GWR_ERR_CYCLE", gwr_layer_name(l), slot,
                 gwr_tensor_name(t), gwr_status_name(st));
        else {
            const char *why = snap_diff(&s, c->net);
            if (why) fail(c, "refused set_input changed the network: %s", why);
            stt->set_cycle++;
        }
        snap_free(&s);
        return;
    }
    snap_free(&s);
    if (st != GWR_OK) {
        fail(c, "set_input(%s, %d, %s) returned %s; expected GWR_OK", gwr_layer_name(l), slot,
             t ? gwr_tensor_name(t) : "NULL", gwr_status_name(st));
        return;
    }
    stt->set_ok++;
    if (gwr_layer_input(l, slot) != t) fail(c, "set_input did not set the input");
    else if (t && t != prev && gwr_tensor_num_users(t) != tu + 1) fail(c, "new input's use count is off");
    else if (prev && t != prev && gwr_tensor_num_users(prev) != pu - 1) fail(c, "old input's use count is off");
}

/* Every user of every output of l is a removed layer, and none is a
 * network output. */
static int unused(const view *v, const gwr_layer *l) {
    (void)v;
    for (int k = 0; k < gwr_layer_num_outputs(l); k++) {
        gwr_tensor *t = gwr_layer_output(l, k);
        if (gwr_tensor_output_index(t) >= 0) return 0;
        for (int64_t i = 0; i < gwr_tensor_num_users(t); i++) {
            int slot = -1;
            if (!gwr_layer_is_removed(gwr_tensor_user(t, i, &slot))) return 0;
        }
    }
    return 1;
}

static void step_remove(ctx *c, uint64_t *rs, view *v, stats *stt) {
    int64_t start = rng_below(rs, v->nl ? v->nl : 1);
    for (int64_t k = 0; k < v->nl; k++) {
        gwr_layer *l = v->layers[(start + k) % v->nl];
        if (gwr_layer_is_removed(l) || !unused(v, l)) continue;
        int64_t live = gwr_network_num_live_layers(c->net);
        trace(c, "%s", gwr_layer_name(l));
        gwr_status st = gwr_layer_mark_as_removed(l);
        if (st != GWR_OK) fail(c, "mark_as_removed(%s) returned %s", gwr_layer_name(l), gwr_status_name(st));
        else if (!gwr_layer_is_removed(l)) fail(c, "is_removed is 0 after mark_as_removed");
        else if (gwr_network_num_live_layers(c->net) != live - 1) fail(c, "num_live_layers did not drop by one");
        stt->removed++;
        return;
    }
    stt->noop++;
}

static void step_prune(ctx *c, view *v, stats *stt) {
    /* needed: everything an output depends on */
    memset(v->mark, 0, (size_t)v->nl);
    int64_t sp = 0;
    for (int i = 0; i < gwr_network_num_outputs(c->net); i++) {
        gwr_layer *p = gwr_tensor_parent(gwr_network_output(c->net, i));
        int64_t j = p ? pindex_get(&v->li, p) : -1;
        if (j >= 0 && !v->mark[j]) {
            v->mark[j] = 1;
            v->stack[sp++] = j;
        }
    }
    while (sp) {
        const gwr_layer *l = v->layers[v->stack[--sp]];
        for (int k = 0; k < gwr_layer_num_inputs(l); k++) {
            gwr_tensor *t = gwr_layer_input(l, k);
            gwr_layer *p = t ? gwr_tensor_parent(t) : NULL;
            int64_t j = p ? pindex_get(&v->li, p) : -1;
            if (j >= 0 && !v->mark[j]) {
                v->mark[j] = 1;
                v->stack[sp++] = j;
            }
        }
    }
    int64_t needed = 0;
    for (int64_t j = 0; j < v->nl; j++) {
        needed += v->mark[j];
        if (v->mark[j] && gwr_layer_is_removed(v->layers[j])) {
            fail(c, "test bug: removed layer %s is needed", gwr_layer_name(v->layers[j]));
            return;
        }
    }
    int ninputs = gwr_network_num_inputs(c->net);
    int64_t n = -1, ev0 = c->dropped_events;
    trace(c, "expect %" PRId64 " of %" PRId64 " layers dropped", v->nl - needed, v->nl);
    gwr_status st = gwr_network_prune(c->net, &n);
    if (st != GWR_OK) {
        fail(c, "prune returned %s", gwr_status_name(st));
        return;
    }
    stt->prunes++;
    stt->pruned += n;
    if (n != v->nl - needed) fail(c, "prune dropped %" PRId64 " layers, expected %" PRId64, n, v->nl - needed);
    else if (gwr_network_num_layers(c->net) != needed)
        fail(c, "%" PRId64 " layers after prune, expected %" PRId64, gwr_network_num_layers(c->net), needed);
    else if (gwr_network_num_inputs(c->net) != ninputs) fail(c, "prune dropped graph inputs");
    else if (c->dropped_events - ev0 != n)
        fail(c, "layer_dropped fired %" PRId64 " times for %" PRId64 " layers", c->dropped_events - ev0, n);
    else
        for (int64_t i = 0; i < gwr_network_num_layers(c->net); i++)
            if (gwr_layer_is_removed(gwr_network_layer(c->net, i))) {
                fail(c, "a removed layer survived prune");
                break;
            }
}

static void step_toposort(ctx *c, view *v, stats *stt) {
    int was_topo = is_topological(v);
    int64_t nl = v->nl;
    gwr_layer **before = xrealloc(NULL, sizeof *before * (size_t)(nl + 1));
    memcpy(before, v->layers, sizeof *before * (size_t)nl);
    trace(c, "%" PRId64 " layers, topological before: %d", nl, was_topo);
    gwr_status st = gwr_network_toposort(c->net);
    stt->toposorts++;
    if (st != GWR_OK) fail(c, "toposort returned %s", gwr_status_name(st));
    else if (gwr_network_num_layers(c->net) != nl) fail(c, "toposort changed the number of layers");
    else {
        view_build(v, c->net);
        if (!is_topological(v)) fail(c, "toposort left a layer before one of its producers");
        else if (was_topo && memcmp(before, v->layers, sizeof *before * (size_t)nl) != 0)
            fail(c, "toposort reordered an order that was already topological");
        else
            for (int64_t i = 0; i < nl; i++) /* the same set of layers */
                if (pindex_get(&v->li, before[i]) < 0) {
                    fail(c, "toposort lost a layer");
                    break;
                }
    }
    free(before);
}

/* Removes the layer producing the first network output; prune must refuse
 * and drop nothing. */
static void final_refusal(ctx *c, view *v) {
    (void)v;
    gwr_layer *l = gwr_tensor_parent(gwr_network_output(c->net, 0));
    if (l) {
        if (gwr_layer_mark_as_removed(l) != GWR_OK) {
            fail(c, "mark_as_removed failed");
            return;
        }
        int64_t nl = gwr_network_num_layers(c->net), n = -1;
        gwr_status st = gwr_network_prune(c->net, &n);
        if (st != GWR_ERR_STATE)
            fail(c, "prune with used removed layer %s returned %s; expected GWR_ERR_STATE", gwr_layer_name(l),
                 gwr_status_name(st));
        else if (gwr_network_num_layers(c->net) != nl)
            fail(c, "refused prune dropped %" PRId64 " layers", nl - gwr_network_num_layers(c->net));
        return;
    }
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int run_seed(uint64_t seed) {
    ctx c;
    memset(&c, 0, sizeof c);
    c.seed = seed;
    c.action = "build";
    uint64_t rs = seed;
    int64_t nlayers = seed % 4 == 0 ? MAX_LAYERS : seed % 4 == 1 ? 1 + rng_below(&rs, 64) : 1 + rng_below(&rs, 1500);
    double t0 = now_s();
    view v;
    memset(&v, 0, sizeof v);
    stats stt;
    memset(&stt, 0, sizeof stt);
    if (build_network(&c, &rs, nlayers)) {
        check_invariants(&c, &v);
        for (c.step = 1; c.step <= STEPS && !c.failed; c.step++) {
            view_build(&v, c.net);
            int64_t r = rng_below(&rs, 100);
            if (r < 30) {
                c.action = "replace_all_uses_with";
                step_rauw(&c, &rs, &v, &stt);
            } else if (r < 40) {
                c.action = "replace_all_uses_except";
                step_insert(&c, &rs, &v, &stt);
            } else if (r < 65) {
                c.action = "set_input";
                step_set_input(&c, &rs, &v, &stt);
            } else if (r < 80) {
                c.action = "mark_as_removed";
                step_remove(&c, &rs, &v, &stt);
            } else if (r < 90) {
                c.action = "prune";
                step_prune(&c, &v, &stt);
            } else {
                c.action = "toposort";
                step_toposort(&c, &v, &stt);
            }
            if (!c.failed) check_invariants(&c, &v);
        }
        c.step = STEPS + 1;
        if (!c.failed) {
            c.action = "final prune refusal";
            final_refusal(&c, &v);
            if (!c.failed) check_invariants(&c, &v);
        }
    }
    printf("seed 0x%016" PRIx64 ": %4" PRId64 " layers -> %4" PRId64 ", %d steps: rauw %d ok/%d cycle/%d type, "
           "insert %d, set_input %d ok/%d cycle, removed %d, prune %d (%" PRId64 " dropped), toposort %d, "
           "no-op %d; %.2f s %s\n",
           seed, nlayers, gwr_network_num_layers(c.net), c.step - 1, stt.rauw_ok, stt.rauw_cycle, stt.rauw_type,
           stt.insert, stt.set_ok, stt.set_cycle, stt.removed, stt.prunes, stt.pruned, stt.toposorts, stt.noop,
           now_s() - t0, c.failed ? "FAILED" : "ok");
    fflush(stdout);
    for (int i = 0; i < c.nout_names; i++) free(c.out_names[i]);
    free(c.out_names);
    view_free(&v);
    gwr_network_free(c.net);
    return !c.failed;
}

int main(void) {
    const char *tr = getenv("GWR_PROP_TRACE");
    trace_on = tr && *tr && strcmp(tr, "0") != 0;
    const char *env = getenv("GWR_PROP_SEED");
    if (env && *env) {
        char *end = NULL;
        uint64_t seed = strtoull(env, &end, 0);
        if (!end || *end) {
            fprintf(stderr, "GWR_PROP_SEED=%s is not a number\n", env);
            return 2;
        }
        check_test_ = "GWR_PROP_SEED";
        CHECK(run_seed(seed));
        return check_report();
    }
    check_test_ = "seeds";
    for (size_t i = 0; i < sizeof SEEDS / sizeof SEEDS[0]; i++) CHECK(run_seed(SEEDS[i]));
    return check_report();
}
