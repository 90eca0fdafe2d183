/* order.c - use lists, cycle checks, ranks and topological order: what
 * every change of an edge relies on.
 *
 * Ranks: every layer carries a rank with rank(producer) < rank(consumer)
 * for each edge inside one network (a pseudo-topological order). A new
 * edge P -> C is then safe without any search when rank(P) < rank(C), the
 * common case for rewrites that build the replacement from the old layer's
 * inputs. Otherwise a backward search from P, bounded to ranks >= rank(C),
 * decides. Then the ranks of that region are first lowered (new layers sit
 * GWR_RANK_STEP above their inputs, so a freshly built chain usually fits
 * below C), and only if that is not enough are ranks raised forward from
 * C. Without the lowering, a rewrite that makes a path one layer longer
 * would raise every layer downstream: quadratic over a pass. */
#include <stdlib.h>
#include <string.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir_internal.h"

/* ---- use lists ---- */

/* Lists shorter than this keep their removed readers until prune. */
#define COMPACT_MIN 16

/* Takes the readers marked removed off t's use list, in order, and
 * detaches them from t (their slot reads nothing, as after prune), so
 * the list again names only live readers and what a removed layer reads
 * is on the lists. Without it a tensor that a run keeps giving new readers
 * while removing the old (a chain collapsing onto one tensor) listed every
 * reader it ever had, and every pass that looked through its readers
 * walked them all: quadratic in the chain. Returns how many went. */
static int32_t uses_compact(gwr_tensor *t) {
    gwr_use *u = gwr_ir_uses_of(t);
    int32_t k = 0;
    for (int32_t j = 0; j < t->nuses; j++) {
        gwr_layer *l = u[j].layer;
        if (!(l->flags & LF_REMOVED)) {
            u[k++] = u[j];
            continue;
        }
        if (l->inputs[u[j].slot] == t) l->inputs[u[j].slot] = NULL;
        gwr_ir_count_foreign(t, l, -1);
    }
    int32_t gone = t->nuses - k;
    t->nuses = k;
    return gone;
}

int gwr_ir_uses_reserve(gwr_tensor *t, int64_t need) {
    if (need <= (t->cap <= 1 ? 1 : t->cap)) return 0;
    /* Full: the removed readers go first when there are enough of them to
     * leave half the room free; otherwise the list grows as well, so a
     * compaction (O(list)) comes at most once per cap/2 uses added. */
    if (t->nuses >= COMPACT_MIN) {
        need -= uses_compact(t);
        if (need <= t->cap / 2) return 0;
        if (need <= t->cap) need = (int64_t)t->cap + 1;
    }
    if (need > INT32_MAX) return -1;
    int64_t ncap = t->cap <= 1 ? 4 : t->cap;
    while (ncap < need) ncap *= 2;
    if (ncap > INT32_MAX) ncap = INT32_MAX;
    gwr_use *p;
    if (t->cap <= 1) {
        p = gwr_malloc((size_t)ncap * sizeof *p);
        if (!p) return -1;
        if (t->nuses) p[0] = t->uses.one;
    } else {
        p = gwr_realloc(t->uses.many, (size_t)ncap * sizeof *p);
        if (!p) return -1;
    }
    t->uses.many = p;
    t->cap = (int32_t)ncap;
    return 0;
}

int gwr_ir_use_add(gwr_tensor *t, gwr_layer *l, int slot) {
    if (gwr_ir_uses_reserve(t, (int64_t)t->nuses + 1)) return -1;
    gwr_use *u = gwr_ir_uses_of(t);
    u[t->nuses].layer = l;
    u[t->nuses].slot = slot;
    t->nuses++;
    gwr_ir_count_foreign(t, l, 1);
    return 0;
}

void gwr_ir_use_del(gwr_tensor *t, gwr_layer *l, int slot) {
    gwr_use *u = gwr_ir_uses_of(t);
    for (int32_t i = t->nuses - 1; i >= 0; i--)
        if (u[i].layer == l && u[i].slot == slot) {
            u[i] = u[t->nuses - 1];
            t->nuses--;
            gwr_ir_count_foreign(t, l, -1);
            return;
        }
}

int64_t gwr_tensor_num_users(const gwr_tensor *t) { return t ? t->nuses : -1; }

gwr_layer *gwr_tensor_user(const gwr_tensor *t, int64_t i, int *slot) {
    if (!t) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_tensor_user: NULL tensor");
        return NULL;
    }
    if (i < 0 || i >= t->nuses) {
        gwr_ir_error(gwr_ir_tnet(t), GWR_ERR_INVALID_ARG, "tensor '%s' has no user %lld (it has %d)", t->name,
                     (long long)i, t->nuses);
        return NULL;
    }
    const gwr_use *u = t->cap <= 1 ? &t->uses.one : t->uses.many;
    if (slot) *slot = u[i].slot;
    return u[i].layer;
}

int64_t gwr_tensor_num_live_users(const gwr_tensor *t) {
    if (!t) return 0;
    const gwr_use *u = t->cap <= 1 ? &t->uses.one : t->uses.many;
    int64_t n = 0;
    for (int32_t i = 0; i < t->nuses; i++) n += !(u[i].layer->flags & LF_REMOVED);
    return n;
}

gwr_layer *gwr_tensor_parent(const gwr_tensor *t) { return t ? t->producer : NULL; }
int gwr_tensor_parent_output_index(const gwr_tensor *t) { return t && t->producer ? t->out_index : -1; }
int gwr_tensor_is_input(const gwr_tensor *t) { return t ? (t->flags & TF_INPUT) != 0 : 0; }
int gwr_tensor_output_index(const gwr_tensor *t) { return t ? t->output_index : -1; }

/* ---- structure helpers ---- */

static int has_graphs(const gwr_layer *l) {
    if (!l->net->ngraph_attrs) return 0;
    for (int i = 0; i < l->nattrs; i++)
        if (l->attrs[i].type == GWR_ATTR_GRAPH || l->attrs[i].type == GWR_ATTR_GRAPHS) return 1;
    return 0;
}

/* Producers in `net` of tensors read anywhere inside subgraph g. */
static int collect_captures(const gwr_network *g, const gwr_network *net, gwr_ir_lstack *out) {
    for (int64_t i = 0; i < g->nlayers; i++) {
        gwr_layer *x = g->layers[i];
        for (int s = 0; s < x->ninputs; s++) {
            gwr_tensor *t = x->inputs[s];
            if (t && gwr_ir_tnet(t) == net && t->producer && gwr_ir_lpush(out, t->producer)) return -1;
        }
        for (int a = 0; a < x->nattrs; a++) {
            gwr_attr *at = &x->attrs[a];
            if (at->type != GWR_ATTR_GRAPH && at->type != GWR_ATTR_GRAPHS) continue;
            for (int64_t k = 0; k < at->n; k++)
                if (collect_captures(at->v.graphs[k], net, out)) return -1;
        }
    }
    return 0;
}

/* Appends the producers (in x's network) that x depends on. */
int gwr_ir_preds_of(gwr_layer *x, gwr_ir_lstack *out) {
    for (int s = 0; s < x->ninputs; s++) {
        gwr_tensor *t = x->inputs[s];
        if (t && t->producer && gwr_ir_tnet(t) == x->net && gwr_ir_lpush(out, t->producer)) return -1;
    }
    if (has_graphs(x))
        for (int a = 0; a < x->nattrs; a++) {
            gwr_attr *at = &x->attrs[a];
            if (at->type != GWR_ATTR_GRAPH && at->type != GWR_ATTR_GRAPHS) continue;
            for (int64_t k = 0; k < at->n; k++)
                if (collect_captures(at->v.graphs[k], x->net, out)) return -1;
        }
    return 0;
}

int gwr_ir_would_cycle(gwr_layer *P, gwr_layer *C) {
    if (!P || !C) return 0;
    if (P == C) return 1;
    if (P->rank < C->rank) return 0;
    gwr_network *net = P->net;
    uint32_t mark = ++net->epoch;
    gwr_ir_lstack st = {0}, preds = {0};
    int found = 0;
    if (gwr_ir_lpush(&st, P)) found = 1; /* out of memory: refuse, to be safe */
    P->mark = mark;
    while (!found && st.n) {
        gwr_layer *x = st.v[--st.n];
        preds.n = 0;
        if (gwr_ir_preds_of(x, &preds)) {
            found = 1;
            break;
        }
        for (int64_t i = 0; i < preds.n; i++) {
            gwr_layer *p = preds.v[i];
            if (p == C) {
                found = 1;
                break;
            }
            if (p->mark == mark || p->rank < C->rank) continue;
            p->mark = mark;
            if (gwr_ir_lpush(&st, p)) {
                found = 1;
                break;
            }
        }
    }
    gwr_free(st.v), gwr_free(preds.v);
    return found;
}

static int by_rank(const void *a, const void *b) {
    int32_t x = (*(gwr_layer *const *)a)->rank, y = (*(gwr_layer *const *)b)->rank;
    return (x > y) - (x < y);
}

/* Before an edge P -> C with rank(P) >= rank(C) raises C and everything
 * downstream: new layers sit GWR_RANK_STEP above their inputs, so a chain
 * a rewrite has just built may fit below C once it is ranked tightly. This
 * re-ranks the layers upstream of P whose rank is >= bound (the region the
 * cycle check searched), in rank order, each one above its highest
 * predecessor. Ranks only go down, so every edge stays valid. */
void gwr_ir_lower_region(gwr_layer *P, int32_t bound) {
    if (!P || P->rank < bound) return;
    uint32_t mark = ++P->net->epoch;
    gwr_ir_lstack region = {0}, st = {0}, preds = {0};
    if (gwr_ir_lpush(&st, P)) goto out;
    P->mark = mark;
    while (st.n) {
        gwr_layer *x = st.v[--st.n];
        preds.n = 0;
        if (gwr_ir_lpush(&region, x) || gwr_ir_preds_of(x, &preds)) goto out;
        for (int64_t i = 0; i < preds.n; i++) {
            gwr_layer *p = preds.v[i];
            if (p->mark == mark || p->rank < bound) continue;
            p->mark = mark;
            if (gwr_ir_lpush(&st, p)) goto out;
        }
    }
    qsort(region.v, (size_t)region.n, sizeof *region.v, by_rank);
    for (int64_t i = 0; i < region.n; i++) {
        gwr_layer *x = region.v[i];
        preds.n = 0;
        if (gwr_ir_preds_of(x, &preds)) goto out;
        int32_t r = 0;
        for (int64_t k = 0; k < preds.n; k++)
            if (preds.v[k]->rank >= r) r = preds.v[k]->rank + 1;
        if (r < x->rank) x->rank = r;
    }
out:
    gwr_free(region.v), gwr_free(st.v), gwr_free(preds.v);
}

/* Raises C's rank to at least `min` and repairs ranks downstream. Ranks
 * stay below the longest path ever built into a layer; should a long
 * history of rewrites push one to the int32 limit, all ranks of the
 * network are recomputed from its edges instead. */
void gwr_ir_raise_rank(gwr_layer *C, int64_t min) {
    if (!C || C->rank >= min) return;
    if (min >= INT32_MAX - 1) {
        gwr_ir_retighten_ranks(C->net);
        return;
    }
    C->rank = (int32_t)min;
    gwr_ir_lstack st = {0};
    if (gwr_ir_lpush(&st, C)) return;
    while (st.n) {
        gwr_layer *x = st.v[--st.n];
        for (int o = 0; o < x->noutputs; o++) {
            gwr_tensor *t = &gwr_ir_outputs(x)[o];
            gwr_use *u = gwr_ir_uses_of(t);
            for (int32_t i = 0; i < t->nuses; i++) {
                gwr_layer *y = gwr_ir_consumer_in(u[i].layer, x->net);
                if (y && y->rank <= x->rank) {
                    if (x->rank >= INT32_MAX - 1) {
                        gwr_free(st.v);
                        gwr_ir_retighten_ranks(x->net);
                        return;
                    }
                    y->rank = x->rank + 1;
                    if (gwr_ir_lpush(&st, y)) goto out;
                }
            }
        }
    }
out:
    gwr_free(st.v);
}

void gwr_ir_capture_edge(gwr_tensor *t, gwr_layer *l) {
    if (!t->producer) return;
    gwr_layer *C = gwr_ir_consumer_in(l, gwr_ir_tnet(t));
    if (C) gwr_ir_raise_rank(C, t->producer->rank + 1);
}

gwr_status gwr_ir_attach_check(gwr_layer *l, gwr_network *g) {
    gwr_ir_lstack caps = {0};
    if (collect_captures(g, l->net, &caps)) {
        gwr_free(caps.v);
        return gwr_ir_error(l->net, GWR_ERR_NOMEM, "out of memory");
    }
    for (int64_t i = 0; i < caps.n; i++)
        if (gwr_ir_would_cycle(caps.v[i], l)) {
            gwr_status s = gwr_ir_error(l->net, GWR_ERR_CYCLE,
                                        "subgraph '%s' reads the output of '%s', which depends on layer '%s'",
                                        g->name, caps.v[i]->name, l->name);
            gwr_free(caps.v);
            return s;
        }
    gwr_free(caps.v);
    return GWR_OK;
}

void gwr_ir_attach_edges(gwr_layer *l, gwr_network *g) {
    gwr_ir_lstack caps = {0};
    if (!collect_captures(g, l->net, &caps))
        for (int64_t i = 0; i < caps.n; i++) gwr_ir_raise_rank(l, caps.v[i]->rank + 1);
    gwr_free(caps.v);
}

/* ---- topological order ---- */

/* Computes a stable topological order of net's layers into *order. On a
 * cycle returns a layer on it (and no order). */
gwr_status gwr_ir_topo_order(gwr_network *net, gwr_layer ***order, gwr_layer **on_cycle) {
    *order = NULL;
    *on_cycle = NULL;
    gwr_layer **out = gwr_malloc((size_t)(net->nlayers ? net->nlayers : 1) * sizeof *out);
    typedef struct {
        gwr_layer *l;
        int64_t next, npreds, base;
    } frame;
    frame *st = NULL;
    int64_t nst = 0, stcap = 0, nout = 0;
    gwr_ir_lstack preds = {0}; /* the preds of every frame on the stack, concatenated */
    if (!out) return GWR_ERR_NOMEM;
    uint32_t visiting = net->epoch + 1, done = net->epoch + 2;
    net->epoch += 2;
    gwr_status s = GWR_OK;
    for (int64_t i = 0; i < net->nlayers && !s; i++) {
        gwr_layer *root = net->layers[i];
        if (root->mark == done) continue;
        root->mark = visiting;
        if (gwr_grow((void **)&st, sizeof *st, &stcap, nst + 1)) { s = GWR_ERR_NOMEM; break; }
        int64_t base = preds.n;
        if (gwr_ir_preds_of(root, &preds)) { s = GWR_ERR_NOMEM; break; }
        st[nst++] = (frame){root, 0, preds.n - base, base};
        while (nst && !s) {
            frame *f = &st[nst - 1];
            if (f->next < f->npreds) {
                gwr_layer *p = preds.v[f->base + f->next++];
                if (p->mark == done) continue;
                if (p->mark == visiting) {
                    *on_cycle = p;
                    s = GWR_ERR_CYCLE;
                    break;
                }
                p->mark = visiting;
                if (gwr_grow((void **)&st, sizeof *st, &stcap, nst + 1)) { s = GWR_ERR_NOMEM; break; }
                int64_t b = preds.n;
                if (gwr_ir_preds_of(p, &preds)) { s = GWR_ERR_NOMEM; break; }
                st[nst++] = (frame){p, 0, preds.n - b, b};
            } else {
                f->l->mark = done;
                out[nout++] = f->l;
                preds.n = f->base;
                nst--;
            }
        }
    }
    gwr_free(st), gwr_free(preds.v);
    if (s) {
        gwr_free(out);
        return s;
    }
    *order = out;
    return GWR_OK;
}

gwr_status gwr_network_topo_order(gwr_network *net, gwr_layer **out) {
    if (!net || (!out && net->nlayers)) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_topo_order: NULL argument");
    gwr_layer **order, *cyc;
    gwr_status s = gwr_ir_topo_order(net, &order, &cyc);
    if (s == GWR_ERR_CYCLE) return gwr_ir_error(net, s, "the network has a cycle through layer '%s'", cyc->name);
    if (s) return gwr_ir_error(net, s, "out of memory");
    if (net->nlayers) memcpy(out, order, (size_t)net->nlayers * sizeof *order);
    gwr_free(order);
    return GWR_OK;
}

/* Sets every rank to GWR_RANK_STEP times the layer's longest-path depth,
 * in network order (which must be topological). */
static void set_tight_ranks(gwr_network *net, gwr_layer **order) {
    gwr_ir_lstack preds = {0};
    /* Spaced ranks while they fit in int32 (networks hold < 2^31 layers). */
    int32_t step = net->nlayers < INT32_MAX / (2 * GWR_RANK_STEP) ? GWR_RANK_STEP : 1;
    for (int64_t i = 0; i < net->nlayers; i++) {
        gwr_layer *l = order[i];
        l->rank = 0;
        preds.n = 0;
        if (gwr_ir_preds_of(l, &preds)) continue; /* out of memory: this rank stays low; see below */
        for (int64_t k = 0; k < preds.n; k++)
            if (preds.v[k]->rank + step > l->rank) l->rank = preds.v[k]->rank + step;
    }
    gwr_free(preds.v);
}

gwr_status gwr_network_toposort(gwr_network *net) {
    if (!net) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_toposort: NULL network");
    if (net->driven)
        return gwr_ir_error(net, GWR_ERR_STATE, "gwr_network_toposort: network '%s' is being rewritten", net->name);
    gwr_layer **order, *cyc;
    gwr_status s = gwr_ir_topo_order(net, &order, &cyc);
    if (s == GWR_ERR_CYCLE)
        return gwr_ir_error(net, s, "the network has a cycle through layer '%s'", cyc->name);
    if (s) return gwr_ir_error(net, s, "out of memory");
    memcpy(net->layers, order, (size_t)net->nlayers * sizeof *order);
    gwr_free(order);
    for (int64_t i = 0; i < net->nlayers; i++) net->layers[i]->index = (int32_t)i;
    set_tight_ranks(net, net->layers);
    return GWR_OK;
}

void gwr_ir_retighten_ranks(gwr_network *net) {
    gwr_layer **order, *cyc;
    if (gwr_ir_topo_order(net, &order, &cyc) == GWR_OK) {
        set_tight_ranks(net, order);
        gwr_free(order);
    }
}
