/* driver.c - the rewrite manager and its driver.
 *
 * The driver keeps a worklist (a stack of layers, with a flag per layer
 * index saying whether it is on it). It starts with every live layer, so
 * that popping visits them in network order; each layer is offered to the
 * patterns that root on it, best first, until one changes the network.
 * A listener on the network sees every change a pattern makes and pushes
 * what it touched: layers created, users of replaced tensors, layers whose
 * inputs or attributes changed, producers whose outputs lost a reader, and
 * the root itself when it survives. So the run reaches a fixpoint while
 * visiting only what changed, and a rewrite limit turns a pattern set that
 * never settles into GWR_ERR_NOT_CONVERGED.
 *
 * Layer indices do not change during a run (no prune or toposort until the
 * end), so the flag array is indexed by gwr_layer_index.
 *
 * Phases (rw_manager_set_phase; gwr_optimize's): a worklist per phase in
 * use, each starting with every live layer. The run empties the first
 * phase's, offering each layer only that phase's patterns, then the
 * next's, and so on; what a change touches goes on every phase's
 * worklist, so after the last phase the sequence starts again while any
 * worklist holds a layer: the later phases' changes, offered to the
 * earlier phases. Each round makes a rewrite, so the rewrite limit bounds
 * the rounds too. The first visit of every layer needs no stack: a cursor
 * walks the layers present at the start, in network order, after what
 * changes pushed; a phase that starts again takes what the others pushed
 * in network order too (its stack rebuilt from the flags). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "rewrite/rewrite_internal.h"

typedef struct rw_listener_entry {
    gwr_rewrite_listener ls;
    int id;
} rw_listener_entry;

struct gwr_rewrite_manager {
    rw_table table;
    gwr_rewrite_options opts;
    rw_listener_entry *listeners;
    int64_t nlisteners, listeners_cap;
    int next_listener_id;
    gwr_rewrite_summary summary;
    int running;
    void **kept;                  /* trace states (trace.c), freed with the manager */
    int64_t nkept, kept_cap;
    struct { void *obj; void (*free_fn)(void *); } *owned; /* rw_manager_own */
    int64_t nowned, owned_cap;
    char errmsg[GWR_ERRMSG_MAX];
};

#define LAST_N 16

/* One phase's worklist: a stack of what changes pushed, then the layers
 * [cursor, n0) of the network (those present at the start) not yet
 * visited in this phase. */
typedef struct rw_worklist {
    gwr_layer **v;
    int64_t n, cap;
    int64_t cursor;
    int phase;                    /* the patterns' phase it offers */
} rw_worklist;

typedef struct rw_run {
    gwr_rewrite_manager *m;
    gwr_network *net;
    gwr_rewrite_ctx ctx;
    rw_worklist wl[RW_MAX_PHASES]; /* one per phase in use, in phase order */
    int nwl;
    int phase;                    /* the patterns offered: those of this phase; -1 all */
    int64_t n0;                   /* layers at the start */
    uint8_t *on;                  /* on[i] bit k: layer of index i is on wl[k]'s stack */
    int64_t on_cap;
    int revisit;                  /* push what changes touch (not in single pass) */
    int nomem;
    uint64_t rng;
    /* The change being made now. */
    gwr_layer **added, **removed;
    int64_t nadded, added_cap, nremoved, removed_cap;
    int64_t nreplaced, nmodified, nevents;
    int64_t change_base;          /* net->nlayers when the change began */
    int64_t rewrites, limit;
    int64_t stop;                 /* options.stop_after: stop at this many rewrites; -1 never */
    int stopped;
    int last[LAST_N];             /* indices of the patterns that fired last */
    /* Provenance (record_provenance): the producers of the tensors the
     * change replaced, and what it replaced; stamp[i] == the rewrite's
     * number: layer i is among them. */
    int provenance;
    gwr_layer **seeds, **from;
    int64_t nseeds, seeds_cap, nfrom, from_cap;
    uint32_t *stamp;
    int64_t stamp_cap;
} rw_run;

/* ---- the worklist ---- */

static int on_reserve(rw_run *r, int64_t idx) {
    if (idx < r->on_cap) return 0;
    int64_t old = r->on_cap;
    if (gwr_grow((void **)&r->on, 1, &r->on_cap, idx + 1)) return -1;
    memset(r->on + old, 0, (size_t)(r->on_cap - old));
    return 0;
}

/* Is l on worklist k: on its stack, or ahead of its cursor? */
static int pending(const rw_run *r, int k, const gwr_layer *l) {
    return (r->on[l->index] >> k & 1) || (l->index >= r->wl[k].cursor && l->index < r->n0);
}

static void push(rw_run *r, gwr_layer *l) {
    if (!l || l->net != r->net || (l->flags & LF_REMOVED)) return;
    if (on_reserve(r, l->index)) {
        r->nomem = 1;
        return;
    }
    unsigned phases = r->nwl > 1 ? rw_candidate_phases(&r->m->table, l) : ~0u;
    for (int k = 0; k < r->nwl; k++) {
        rw_worklist *w = &r->wl[k];
        if (!(phases >> w->phase & 1) || pending(r, k, l)) continue;
        if (gwr_grow((void **)&w->v, sizeof *w->v, &w->cap, w->n + 1)) {
            r->nomem = 1;
            return;
        }
        r->on[l->index] |= (uint8_t)(1u << k);
        w->v[w->n++] = l;
    }
}

static uint64_t rng_next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* How far ahead the driver loads the layers it will visit. */
#define VISIT_AHEAD 16

static void prefetch_layer(const gwr_layer *l) {
    __builtin_prefetch(l);
    __builtin_prefetch(&l->flags); /* the header can span two lines */
}

/* The next layer of worklist k, or NULL when it is empty. */
static gwr_layer *pop(rw_run *r, int k) {
    rw_worklist *w = &r->wl[k];
    if (w->n) {
        if (r->rng) {
            int64_t i = (int64_t)(rng_next(&r->rng) % (uint64_t)w->n);
            gwr_layer *t = w->v[i];
            w->v[i] = w->v[w->n - 1];
            w->v[w->n - 1] = t;
        }
        gwr_layer *l = w->v[--w->n];
        r->on[l->index] &= (uint8_t)~(1u << k);
        return l;
    }
    gwr_layer *const *v = r->net->layers;
    /* Phases: only the layers with a pattern of this phase. */
    int filter = r->nwl > 1;
    while (w->cursor < r->n0) {
        /* The layers ahead are visited next, in order: start loading one
         * some visits ahead (a big network misses the cache on each). */
        if (w->cursor + VISIT_AHEAD < r->n0) prefetch_layer(v[w->cursor + VISIT_AHEAD]);
        gwr_layer *l = v[w->cursor++];
        if (l->flags & LF_REMOVED) continue;
        if (!filter || rw_candidate_phases(&r->m->table, l) >> w->phase & 1) return l;
    }
    return NULL;
}

/* ---- what the network tells us ---- */

static int record(gwr_layer ***v, int64_t *n, int64_t *cap, gwr_layer *l) {
    if (gwr_grow((void **)v, sizeof **v, cap, *n + 1)) return -1;
    (*v)[(*n)++] = l;
    return 0;
}

#define EACH_LISTENER(r, cb, ...)                                                   \
    do {                                                                            \
        for (int64_t i_ = 0; i_ < (r)->m->nlisteners; i_++)                         \
            if ((r)->m->listeners[i_].ls.cb)                                        \
                (r)->m->listeners[i_].ls.cb((r)->m->listeners[i_].ls.ctx, __VA_ARGS__); \
    } while (0)

static const char *cur_label(const rw_run *r) { return r->ctx.cur ? r->ctx.cur->label : NULL; }

static void on_added(void *ctx, gwr_layer *l) {
    rw_run *r = ctx;
    r->nevents++;
    if (l->net != r->net) return;
    if (record(&r->added, &r->nadded, &r->added_cap, l)) r->nomem = 1;
    if (r->revisit) push(r, l);
    EACH_LISTENER(r, layer_added, cur_label(r), l);
}

static void on_removed(void *ctx, gwr_layer *l) {
    rw_run *r = ctx;
    r->nevents++;
    if (l->net != r->net) return;
    if (record(&r->removed, &r->nremoved, &r->removed_cap, l)) r->nomem = 1;
    /* Its producers lost a reader: "used only once" may now hold. */
    if (r->revisit)
        for (int i = 0; i < l->ninputs; i++)
            if (l->inputs[i]) push(r, l->inputs[i]->producer);
    EACH_LISTENER(r, layer_removed, cur_label(r), l);
}

/* A layer created in this change was taken out again (a builder failed):
 * forget it. It was pushed last, so it is near the top. */
static void on_dropped(void *ctx, gwr_layer *l) {
    rw_run *r = ctx;
    if (l->net != r->net) return;
    for (int k = 0; l->index < r->on_cap && k < r->nwl; k++) {
        rw_worklist *w = &r->wl[k];
        if (!(r->on[l->index] >> k & 1)) continue;
        for (int64_t i = w->n - 1; i >= 0; i--)
            if (w->v[i] == l) {
                memmove(&w->v[i], &w->v[i + 1], (size_t)(w->n - i - 1) * sizeof *w->v);
                w->n--;
                break;
            }
        r->on[l->index] &= (uint8_t)~(1u << k);
    }
    for (int64_t i = r->nadded - 1; i >= 0; i--)
        if (r->added[i] == l) {
            memmove(&r->added[i], &r->added[i + 1], (size_t)(r->nadded - i - 1) * sizeof *r->added);
            r->nadded--;
            break;
        }
}

static void on_replaced(void *ctx, gwr_tensor *old_t, gwr_tensor *new_t) {
    rw_run *r = ctx;
    r->nevents++;
    r->nreplaced++;
    if (r->provenance && old_t->producer && record(&r->seeds, &r->nseeds, &r->seeds_cap, old_t->producer))
        r->nomem = 1;
    if (r->revisit) {
        /* The readers that moved to new_t, the last entries of its use
         * list: their input changed. new_t's other readers did not; walking
         * them all (removed ones stay listed until prune) made a chain that
         * collapses onto one tensor quadratic. */
        const gwr_use *u = new_t->cap <= 1 ? &new_t->uses.one : new_t->uses.many;
        int32_t moved = r->net->last_moved;
        for (int32_t i = moved < new_t->nuses ? new_t->nuses - moved : 0; i < new_t->nuses; i++) push(r, u[i].layer);
        push(r, new_t->producer);
        push(r, old_t->producer);
    }
    EACH_LISTENER(r, tensor_replaced, cur_label(r), old_t, new_t);
}

/* Was l created by the change being made (its own set-up is no edit)?
 * New layers are appended and nothing is compacted during a run, so they
 * are exactly those at or past the index where the change began. */
static int added_now(const rw_run *r, const gwr_layer *l) { return l->index >= r->change_base; }

static void on_input_changed(void *ctx, gwr_layer *l, int slot, gwr_tensor *old_t) {
    rw_run *r = ctx;
    r->nevents++;
    if (!added_now(r, l)) r->nmodified++;
    if (r->revisit) {
        push(r, l);
        if (old_t) push(r, old_t->producer);
        if (l->inputs[slot]) push(r, l->inputs[slot]->producer);
    }
}

static void on_modified(void *ctx, gwr_layer *l) {
    rw_run *r = ctx;
    r->nevents++;
    if (!added_now(r, l)) r->nmodified++;
    if (r->revisit) push(r, l);
}

static void on_tensor_modified(void *ctx, gwr_tensor *t) {
    rw_run *r = ctx;
    r->nevents++;
    if (!t->producer || !added_now(r, t->producer)) r->nmodified++;
    if (r->revisit) {
        push(r, t->producer);
        const gwr_use *u = t->cap <= 1 ? &t->uses.one : t->uses.many;
        for (int32_t i = 0; i < t->nuses; i++) push(r, u[i].layer);
    }
}

/* ---- the manager ---- */

gwr_rewrite_manager *gwr_rewrite_manager_new(void) {
    gwr_rewrite_manager *m = gwr_calloc(1, sizeof *m);
    if (!m) gwr_set_last_error(GWR_ERR_NOMEM, "out of memory");
    return m;
}

void gwr_rewrite_manager_free(gwr_rewrite_manager *m) {
    if (!m) return;
    if (m->running) { /* from one of its own callbacks: refused */
        gwr_fmt_error(m->errmsg, GWR_ERR_STATE, "gwr_rewrite_manager_free: the manager is running");
        return;
    }
    rw_table_free(&m->table);
    gwr_free(m->listeners);
    for (int64_t i = 0; i < m->nkept; i++) gwr_free(m->kept[i]);
    gwr_free(m->kept);
    for (int64_t i = m->nowned - 1; i >= 0; i--) m->owned[i].free_fn(m->owned[i].obj);
    gwr_free(m->owned);
    gwr_free(m);
}

const char *gwr_rewrite_manager_errmsg(const gwr_rewrite_manager *m) { return m ? m->errmsg : ""; }

#define NULL_CHECK(m, what)                                                        \
    if (!(m)) return gwr_set_last_error(GWR_ERR_INVALID_ARG, what ": NULL manager"); \
    if ((m)->running) return gwr_fmt_error((m)->errmsg, GWR_ERR_STATE, what ": the manager is running")

gwr_status gwr_rewrite_manager_add(gwr_rewrite_manager *m, const char *label, const gwr_pattern_rewriter *p,
                                   int benefit) {
    NULL_CHECK(m, "gwr_rewrite_manager_add");
    if (!p) return gwr_fmt_error(m->errmsg, GWR_ERR_INVALID_ARG, "gwr_rewrite_manager_add: NULL pattern");
    const char *who = label ? label : "?";
    if (p->separate_match_rewrite ? !p->match || !p->rewrite : !p->match_and_rewrite)
        return gwr_fmt_error(m->errmsg, GWR_ERR_INVALID_ARG,
                             "pattern '%s': %s", who,
                             p->separate_match_rewrite ? "separate_match_rewrite needs match and rewrite"
                                                       : "needs match_and_rewrite (or separate_match_rewrite with "
                                                         "match and rewrite)");
    rw_pattern *r;
    gwr_status s = rw_table_add(&m->table, m->errmsg, "gwr_rewrite_manager_add", label, p->name, p->root_classes,
                                p->root_ops, benefit, &r);
    if (s) return s;
    r->rw = *p;
    r->rw.name = r->name;
    r->rw.root_ops = rw_pattern_ops(r);
    return GWR_OK;
}

const gwr_pattern_rewriter *gwr_rewrite_manager_get(const gwr_rewrite_manager *m, const char *label) {
    rw_pattern *p = m ? rw_table_find(&m->table, label) : NULL;
    return p ? &p->rw : NULL;
}

int gwr_rewrite_manager_count(const gwr_rewrite_manager *m) { return m ? (int)m->table.n : 0; }

const char *gwr_rewrite_manager_label(const gwr_rewrite_manager *m, int i) {
    rw_pattern *p = rw_table_at(m ? &m->table : NULL, i);
    return p ? p->label : NULL;
}

gwr_status rw_manager_set_phase(gwr_rewrite_manager *m, const char *label, int phase) {
    NULL_CHECK(m, "rw_manager_set_phase");
    rw_pattern *p = rw_table_find(&m->table, label);
    if (!p) return gwr_fmt_error(m->errmsg, GWR_ERR_NOT_FOUND, "no pattern '%s'", label ? label : "(null)");
    if (phase < 0 || phase >= RW_MAX_PHASES)
        return gwr_fmt_error(m->errmsg, GWR_ERR_INVALID_ARG, "pattern '%s': phase %d is not 0 to %d", p->label, phase,
                             RW_MAX_PHASES - 1);
    p->phase = phase;
    return GWR_OK;
}

int gwr_rewrite_manager_benefit(const gwr_rewrite_manager *m, int i) {
    rw_pattern *p = rw_table_at(m ? &m->table : NULL, i);
    return p ? p->benefit : 0;
}

gwr_status gwr_rewrite_manager_set_options(gwr_rewrite_manager *m, const gwr_rewrite_options *o) {
    NULL_CHECK(m, "gwr_rewrite_manager_set_options");
    if (!o) memset(&m->opts, 0, sizeof m->opts);
    else m->opts = *o;
    return GWR_OK;
}

int gwr_rewrite_manager_add_listener(gwr_rewrite_manager *m, const gwr_rewrite_listener *ls) {
    if (!m || !ls || m->running) {
        if (m) gwr_fmt_error(m->errmsg, GWR_ERR_INVALID_ARG, "gwr_rewrite_manager_add_listener: NULL listener or running");
        return -1;
    }
    if (gwr_grow((void **)&m->listeners, sizeof *m->listeners, &m->listeners_cap, m->nlisteners + 1)) {
        gwr_fmt_error(m->errmsg, GWR_ERR_NOMEM, "out of memory");
        return -1;
    }
    m->listeners[m->nlisteners].ls = *ls;
    m->listeners[m->nlisteners].id = m->next_listener_id;
    m->nlisteners++;
    return m->next_listener_id++;
}

gwr_status gwr_rewrite_manager_remove_listener(gwr_rewrite_manager *m, int id) {
    NULL_CHECK(m, "gwr_rewrite_manager_remove_listener");
    for (int64_t i = 0; i < m->nlisteners; i++)
        if (m->listeners[i].id == id) {
            memmove(&m->listeners[i], &m->listeners[i + 1], (size_t)(m->nlisteners - i - 1) * sizeof *m->listeners);
            m->nlisteners--;
            return GWR_OK;
        }
    return gwr_fmt_error(m->errmsg, GWR_ERR_NOT_FOUND, "no listener with id %d", id);
}

gwr_status gwr_rewrite_manager_stats(const gwr_rewrite_manager *m, int i, gwr_pattern_stats *out) {
    rw_pattern *p = rw_table_at(m ? &m->table : NULL, i);
    if (!p || !out) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_rewrite_manager_stats: bad argument");
    *out = p->stats;
    return GWR_OK;
}

gwr_status gwr_rewrite_manager_summary(const gwr_rewrite_manager *m, gwr_rewrite_summary *out) {
    if (!m || !out) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_rewrite_manager_summary: NULL argument");
    *out = m->summary;
    return GWR_OK;
}

gwr_status rw_manager_error(gwr_rewrite_manager *m, gwr_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    gwr_vfmt_error(m->errmsg, s, fmt, ap);
    va_end(ap);
    return s;
}

/* Internal to trace.c: the manager frees `state` (malloc'd) with itself. */
int rw_manager_keep(gwr_rewrite_manager *m, void *state);
int rw_manager_keep(gwr_rewrite_manager *m, void *state) {
    if (gwr_grow((void **)&m->kept, sizeof *m->kept, &m->kept_cap, m->nkept + 1)) return -1;
    m->kept[m->nkept++] = state;
    return 0;
}

int rw_manager_own(gwr_rewrite_manager *m, void *obj, void (*free_fn)(void *)) {
    if (!m || !free_fn || gwr_grow((void **)&m->owned, sizeof *m->owned, &m->owned_cap, m->nowned + 1)) return -1;
    m->owned[m->nowned].obj = obj, m->owned[m->nowned++].free_fn = free_fn;
    return 0;
}

/* ---- one run ---- */

/* "'a' (12 of the last 16 rewrites), 'b' (4)" */
static void name_last(rw_run *r, char *buf, size_t size) {
    int n = r->rewrites < LAST_N ? (int)r->rewrites : LAST_N;
    int counts[LAST_N] = {0}, idx[LAST_N], k = 0;
    for (int i = 0; i < n; i++) {
        int j = 0;
        while (j < k && idx[j] != r->last[i]) j++;
        if (j == k) idx[k++] = r->last[i];
        counts[j]++;
    }
    size_t off = 0;
    buf[0] = 0;
    for (int j = 0; j < k && off < size; j++) {
        int best = j;
        for (int q = j + 1; q < k; q++)
            if (counts[q] > counts[best]) best = q;
        int tc = counts[j], ti = idx[j];
        counts[j] = counts[best], idx[j] = idx[best];
        counts[best] = tc, idx[best] = ti;
        int w = snprintf(buf + off, size - off, "%s'%s' (%d of the last %d)", j ? ", " : "",
                         r->m->table.v[idx[j]]->label, counts[j], n);
        if (w < 0) break;
        off += (size_t)w;
    }
}

static void begin_change(rw_run *r) {
    r->change_base = r->net->nlayers;
    r->nadded = r->nremoved = r->nseeds = 0;
    r->nreplaced = r->nmodified = 0;
}

/* ---- provenance ---- */

/* Is l one of what the change replaced (stamped with its number)? */
static int replaced(const rw_run *r, const gwr_layer *l) {
    return l->index < r->stamp_cap && r->stamp[l->index] == (uint32_t)r->rewrites;
}

/* Did the change leave l dead: in the network from before the change, not
 * removed, no output a network output, every reader removed or replaced? */
static int left_dead(const rw_run *r, const gwr_layer *l) {
    if (l->net != r->net || (l->flags & LF_REMOVED) || added_now(r, l) || replaced(r, l)) return 0;
    for (int o = 0; o < l->noutputs; o++) {
        const gwr_tensor *t = &gwr_ir_outputs(l)[o];
        if (t->output_index >= 0) return 0;
        const gwr_use *u = t->cap <= 1 ? &t->uses.one : t->uses.many;
        for (int32_t i = 0; i < t->nuses; i++)
            if (!(u[i].layer->flags & LF_REMOVED) && (u[i].layer->net != r->net || !replaced(r, u[i].layer))) return 0;
    }
    return 1;
}

/* Marks l replaced and lists it, except weights: a Constant no rewrite
 * made is data, not a layer anyone looks for in the lineage. */
static int take(rw_run *r, gwr_layer *l) {
    r->stamp[l->index] = (uint32_t)r->rewrites;
    if (l->op_id == GWR_OP_Constant && !gwr_layer_provenance(l)) return 0;
    return record(&r->from, &r->nfrom, &r->from_cap, l);
}

static int by_index(const void *a, const void *b) {
    int32_t x = (*(gwr_layer *const *)a)->index, y = (*(gwr_layer *const *)b)->index;
    return (x > y) - (x < y);
}

/* What the change replaced: the layers it removed (those from before it),
 * then, walking up from the root, the producers of what it replaced and
 * the producers of removed layers' inputs, every layer it left dead (and
 * theirs in turn). A layer is looked at again when one of its readers is
 * found dead, so the order of the walk does not matter. Layers dead before
 * the change are not reached: a live reader of theirs would be needed. */
static int collect_replaced(rw_run *r, gwr_layer *root) {
    gwr_network *net = r->net;
    r->nfrom = 0;
    if (net->nlayers > r->stamp_cap) {
        int64_t old = r->stamp_cap;
        if (gwr_grow((void **)&r->stamp, sizeof *r->stamp, &r->stamp_cap, net->nlayers)) return -1;
        memset(r->stamp + old, 0, (size_t)(r->stamp_cap - old) * sizeof *r->stamp);
    }
    for (int64_t i = 0; i < r->nremoved; i++) {
        gwr_layer *l = r->removed[i];
        if (!added_now(r, l) && !replaced(r, l) && take(r, l)) return -1;
    }
    if (record(&r->seeds, &r->nseeds, &r->seeds_cap, root)) return -1;
    for (int64_t i = 0; i < r->nremoved; i++)
        for (int k = 0; k < r->removed[i]->ninputs; k++) {
            gwr_tensor *t = r->removed[i]->inputs[k];
            if (t && t->producer && record(&r->seeds, &r->nseeds, &r->seeds_cap, t->producer)) return -1;
        }
    while (r->nseeds) {
        gwr_layer *l = r->seeds[--r->nseeds];
        if (!left_dead(r, l)) continue;
        if (take(r, l)) return -1;
        for (int k = 0; k < l->ninputs; k++)
            if (l->inputs[k] && l->inputs[k]->producer &&
                record(&r->seeds, &r->nseeds, &r->seeds_cap, l->inputs[k]->producer))
                return -1;
    }
    if (r->nfrom > 1) qsort(r->from, (size_t)r->nfrom, sizeof *r->from, by_index);
    return 0;
}

/* Gives every layer the change added its provenance (see gwr/ir.h). */
static int record_provenance(rw_run *r, const char *label, gwr_layer *root) {
    int live = 0;
    for (int64_t i = 0; i < r->nadded; i++) live |= !(r->added[i]->flags & LF_REMOVED);
    if (!live) return 0;
    if (collect_replaced(r, root)) return -1;
    char *json = gwr_ir_provenance_json(label, r->from, r->nfrom);
    if (!json) return -1;
    size_t len = strlen(json);
    int bad = 0;
    for (int64_t i = 0; i < r->nadded && !bad; i++)
        if (!(r->added[i]->flags & LF_REMOVED))
            bad = gwr_layer_set_prop(r->added[i], GWR_PROVENANCE_PROP, json, len) != GWR_OK;
    gwr_free(json);
    return bad ? -1 : 0;
}

/* Offers layer l to its patterns until one changes the network.
 * Returns 1 changed, 0 not, or a failure status as -status. */
static int offer(rw_run *r, gwr_layer *l, rw_pattern *const *cands) {
    gwr_rewrite_manager *m = r->m;
    const gwr_rewrite_options *o = &m->opts;
    gwr_rewrite_ctx *c = &r->ctx;
    for (; *cands; cands++) {
        rw_pattern *p = *cands;
        if (r->phase >= 0 && p->phase != r->phase) {
            if (p->phase > r->phase) break; /* the lists go phase by phase */
            continue;
        }
        rw_ctx_begin(c, p, l);
        p->stats.attempts++;
        double t0 = o->time_patterns ? rw_now() : 0;
        begin_change(r);
        int64_t ev0 = r->nevents;
        int ret;
        gwr_status returned = GWR_OK;
        const char *bad = NULL;
        if (p->rw.separate_match_rewrite) {
            ret = p->rw.match(c, l);
            if (ret > 0) {
                if (o->debug && r->nevents != ev0) bad = "changed the network in match";
                p->stats.matches++;
                gwr_status s = bad ? GWR_OK : p->rw.rewrite(c, l);
                ret = s ? -1 : 1;
                returned = s;
                if (!s && !bad && o->debug && r->nevents == ev0) bad = "claimed a change (rewrite returned GWR_OK) and made none";
            } else if (ret == 0 && o->debug && r->nevents != ev0) {
                bad = "changed the network in match";
            }
        } else {
            ret = p->rw.match_and_rewrite(c, l);
            if (ret > 0) p->stats.matches++;
            if (o->debug && ret > 0 && r->nevents == ev0) bad = "claimed a change (match_and_rewrite returned 1) and made none";
            if (o->debug && ret == 0 && r->nevents != ev0) bad = "returned 0 (no match) but changed the network";
        }
        if (o->time_patterns) p->stats.seconds += rw_now() - t0;
        if (r->nomem) return -(int)gwr_fmt_error(m->errmsg, GWR_ERR_NOMEM, "out of memory");
        if (bad)
            return -(int)gwr_fmt_error(m->errmsg, GWR_ERR_STATE, "pattern '%s' %s, at layer '%s' (%s)", p->label, bad,
                                       l->name, l->info->name);
        if (ret < 0) {
            gwr_status s;
            const char *msg = rw_ctx_failure(c, returned, &s);
            return -(int)gwr_fmt_error(m->errmsg, s, "pattern '%s' failed at layer '%s' (%s): %s", p->label, l->name,
                                       l->info->name, msg);
        }
        if (ret == 0) {
            if (c->want_reason) EACH_LISTENER(r, match_failed, p->label, l, c->reason);
            continue;
        }
        /* A change. */
        p->stats.rewrites++;
        r->last[r->rewrites % LAST_N] = p->index;
        r->rewrites++;
        if (r->provenance && record_provenance(r, p->label, l))
            return -(int)gwr_fmt_error(m->errmsg, GWR_ERR_NOMEM, "out of memory");
        if (m->nlisteners) {
            gwr_rewrite_event e = {r->rewrites, p->label, p->name, l, r->added, r->nadded, r->removed, r->nremoved,
                                   r->nreplaced, r->nmodified};
            EACH_LISTENER(r, pattern_applied, &e);
        }
        if (o->debug && gwr_network_verify(r->net))
            return -(int)gwr_fmt_error(m->errmsg, GWR_ERR_INVALID_GRAPH,
                                       "the network is invalid after pattern '%s' at layer '%s': %s", p->label,
                                       l->name, gwr_network_errmsg(r->net));
        if (r->revisit) push(r, l);
        if (r->nomem) return -(int)gwr_fmt_error(m->errmsg, GWR_ERR_NOMEM, "out of memory");
        if (r->rewrites == r->stop) {
            r->stopped = 1;
            return 1;
        }
        if (r->limit >= 0 && r->rewrites > r->limit) {
            char names[300];
            name_last(r, names, sizeof names);
            return -(int)gwr_fmt_error(m->errmsg, GWR_ERR_NOT_CONVERGED,
                                       "no fixpoint after %lld rewrites (limit %lld); still firing: %s",
                                       (long long)r->rewrites, (long long)r->limit, names);
        }
        return 1;
    }
    return 0;
}

static int visit(rw_run *r, gwr_layer *l) {
    rw_pattern *const *cands = r->phase >= 0 ? rw_phase_candidates(&r->m->table, l, r->phase)
                                             : rw_candidates(&r->m->table, l);
    if (!cands) return -(int)gwr_fmt_error(r->m->errmsg, GWR_ERR_NOMEM, "out of memory");
    if (!*cands) return 0;
    return offer(r, l, cands);
}

/* Every 1024 visits, the options' interrupt hook. */
static int interrupted(rw_run *r) {
    const gwr_rewrite_options *o = &r->m->opts;
    if (!o->interrupt || (r->m->summary.visited & 1023) || !o->interrupt(o->interrupt_ctx)) return 0;
    return -(int)gwr_fmt_error(r->m->errmsg, GWR_ERR_STATE, "interrupted after %lld layers visited and %lld rewrites",
                               (long long)r->m->summary.visited, (long long)r->rewrites);
}

/* Worklist k's stack in network order, rebuilt from the flags (a flag per
 * layer index says what is on it): the later layers first, so that pops
 * give the earliest first. No comparisons, no layer read. */
static void stack_in_network_order(rw_run *r, int k) {
    rw_worklist *w = &r->wl[k];
    int64_t n = 0, top = r->net->nlayers < r->on_cap ? r->net->nlayers : r->on_cap;
    for (int64_t i = top - 1; i >= 0 && n < w->n; i--)
        if (r->on[i] >> k & 1) w->v[n++] = r->net->layers[i];
}

/* A worklist per phase that has patterns, in phase order. */
static void plan_phases(rw_run *r) {
    const rw_table *t = &r->m->table;
    int used[RW_MAX_PHASES] = {0};
    for (int64_t i = 0; i < t->n; i++) used[t->v[i]->phase] = 1;
    for (int ph = 0; ph < RW_MAX_PHASES; ph++)
        if (used[ph]) r->wl[r->nwl++].phase = ph;
    if (!r->nwl) r->nwl = 1; /* no pattern: the layers are visited all the same */
}

static int run_worklist(rw_run *r) {
    gwr_network *net = r->net;
    r->n0 = net->nlayers;
    plan_phases(r);
    if (on_reserve(r, r->n0)) return -(int)gwr_fmt_error(r->m->errmsg, GWR_ERR_NOMEM, "out of memory");
    if (r->rng) { /* a random order needs every layer on the stacks */
        for (int k = 0; k < r->nwl; k++) {
            rw_worklist *w = &r->wl[k];
            if (gwr_grow((void **)&w->v, sizeof *w->v, &w->cap, r->n0 + 1))
                return -(int)gwr_fmt_error(r->m->errmsg, GWR_ERR_NOMEM, "out of memory");
            for (int64_t i = r->n0 - 1; i >= 0; i--) {
                gwr_layer *l = net->layers[i];
                if (l->flags & LF_REMOVED) continue;
                r->on[l->index] |= (uint8_t)(1u << k);
                w->v[w->n++] = l;
            }
            w->cursor = r->n0;
        }
    }
    /* Phase by phase, each to its fixpoint; again from the first while a
     * worklist holds something. */
    for (int k = 0, idle = 0; idle < r->nwl; k = (k + 1) % r->nwl) {
        r->phase = r->wl[k].phase;
        /* What other phases' changes touched, in network order (the
         * first visit's order): producers before their readers. */
        if (!r->rng && r->wl[k].n > 1) stack_in_network_order(r, k);
        int64_t before = r->rewrites;
        gwr_layer *l;
        while ((l = pop(r, k))) {
            if (l->flags & LF_REMOVED) continue;
            r->m->summary.visited++;
            int ret = interrupted(r);
            if (!ret) ret = visit(r, l);
            if (ret < 0) return ret;
            if (r->stopped) return 0;
        }
        idle = r->rewrites == before ? idle + 1 : 0;
    }
    return 0;
}

/* The reference's behaviour: after every change, scan again from the
 * first layer. Quadratic; kept to measure what the worklist saves. */
static int run_rescan(rw_run *r) {
    int64_t i = 0;
    while (i < r->net->nlayers) {
        gwr_layer *l = r->net->layers[i++];
        if (l->flags & LF_REMOVED) continue;
        r->m->summary.visited++;
        int ret = interrupted(r);
        if (!ret) ret = visit(r, l);
        if (ret < 0) return ret;
        if (r->stopped) return 0;
        if (ret > 0) i = 0;
    }
    return 0;
}

gwr_status gwr_rewrite_manager_rewrite(gwr_rewrite_manager *m, gwr_network *net, const gwr_args *args) {
    NULL_CHECK(m, "gwr_rewrite_manager_rewrite");
    if (!net) return gwr_fmt_error(m->errmsg, GWR_ERR_INVALID_ARG, "gwr_rewrite_manager_rewrite: NULL network");
    double t0 = rw_now();
    m->errmsg[0] = 0;
    memset(&m->summary, 0, sizeof m->summary);
    rw_table_reset_stats(&m->table);
    gwr_status s = rw_table_freeze(&m->table, m->errmsg);
    if (s) return s;
    const gwr_rewrite_options *o = &m->opts;
    rw_run r = {.m = m, .net = net, .revisit = !o->single_pass && !o->full_rescan, .phase = -1,
                .provenance = o->provenance};
    r.rng = o->shuffle_seed ? o->shuffle_seed * 0x9E3779B97F4A7C15ULL | 1 : 0;
    r.ctx.net = net;
    r.ctx.args = args;
    for (int64_t i = 0; i < m->nlisteners; i++)
        if (m->listeners[i].ls.match_failed) r.ctx.want_reason = 1;
    int64_t live = gwr_network_num_live_layers(net);
    m->summary.layers_before = live;
    r.limit = o->max_rewrites ? o->max_rewrites : 8 * net->nlayers + 64;
    r.stop = o->stop_after > 0 ? o->stop_after : o->stop_after < 0 ? 0 : -1;
    r.stopped = r.stop == 0;
    gwr_listener ls = {.layer_added = on_added,
                       .layer_removed = on_removed,
                       .layer_dropped = on_dropped,
                       .tensor_replaced = on_replaced,
                       .input_changed = on_input_changed,
                       .layer_modified = on_modified,
                       .tensor_modified = on_tensor_modified,
                       .ctx = &r};
    int id = gwr_network_add_listener(net, &ls);
    if (id < 0) {
        rw_table_thaw(&m->table);
        return gwr_fmt_error(m->errmsg, GWR_ERR_NOMEM, "cannot listen to the network: %s", gwr_network_errmsg(net));
    }
    if (net->driven) {
        gwr_network_remove_listener(net, id);
        rw_table_thaw(&m->table);
        return gwr_fmt_error(m->errmsg, GWR_ERR_STATE, "network '%s' is already being rewritten", net->name);
    }
    m->running = 1;
    gwr_ir_network_set_driven(net, 1);
    int ret = r.stopped ? 0 : o->full_rescan ? run_rescan(&r) : run_worklist(&r);
    gwr_ir_network_set_driven(net, 0);
    m->running = 0;
    gwr_network_remove_listener(net, id);
    rw_table_thaw(&m->table);
    for (int k = 0; k < r.nwl; k++) gwr_free(r.wl[k].v);
    gwr_free(r.on);
    gwr_free(r.added);
    gwr_free(r.removed);
    gwr_free(r.seeds), gwr_free(r.from), gwr_free(r.stamp);
    gwr_free(r.ctx.match);
    m->summary.rewrites = r.rewrites;
    s = ret < 0 ? (gwr_status)-ret : GWR_OK;
    if (!s && !o->keep_dead) {
        int64_t pruned = 0;
        s = gwr_network_prune(net, &pruned);
        if (s) gwr_fmt_error(m->errmsg, s, "after the rewrites: %s", gwr_network_errmsg(net));
        m->summary.pruned = pruned;
    }
    m->summary.stopped = r.stopped && s == GWR_OK;
    m->summary.converged = s == GWR_OK && !r.stopped;
    m->summary.layers_after = gwr_network_num_live_layers(net);
    m->summary.seconds = rw_now() - t0;
    return s;
}
