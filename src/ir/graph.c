/* graph.c - use lists, rewiring (set_input, replace_all_uses_with), cycle
 * checks, ranks, topological order, prune and verify.
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

#include "ir/ir_graph.h"

/* ---- use lists ---- */

static gwr_use *uses_of(gwr_tensor *t) { return t->cap <= 1 ? &t->uses.one : t->uses.many; }

static int uses_reserve(gwr_tensor *t, int64_t need) {
    if (need <= (t->cap <= 1 ? 1 : t->cap)) return 0;
    if (need > INT32_MAX) return -1;
    int64_t ncap = t->cap <= 1 ? 4 : t->cap;
    while (ncap < need) ncap *= 2;
    if (ncap > INT32_MAX) ncap = INT32_MAX;
    gwr_use *p;
    if (t->cap <= 1) {
        p = malloc((size_t)ncap * sizeof *p);
        if (!p) return -1;
        if (t->nuses) p[0] = t->uses.one;
    } else {
        p = realloc(t->uses.many, (size_t)ncap * sizeof *p);
        if (!p) return -1;
    }
    t->uses.many = p;
    t->cap = (int32_t)ncap;
    return 0;
}

/* Keeps the count of uses of t's network's tensors by other networks'
 * layers (d: +1 or -1 for a use of t by l). */
static void count_foreign(gwr_tensor *t, const gwr_layer *l, int d) {
    gwr_network *tn = gwr_ir_tnet(t);
    if (l->net != tn) tn->nforeign_uses += d;
}

int gwr_ir_use_add(gwr_tensor *t, gwr_layer *l, int slot) {
    if (uses_reserve(t, (int64_t)t->nuses + 1)) return -1;
    gwr_use *u = uses_of(t);
    u[t->nuses].layer = l;
    u[t->nuses].slot = slot;
    t->nuses++;
    count_foreign(t, l, 1);
    return 0;
}

void gwr_ir_use_del(gwr_tensor *t, gwr_layer *l, int slot) {
    gwr_use *u = uses_of(t);
    for (int32_t i = t->nuses - 1; i >= 0; i--)
        if (u[i].layer == l && u[i].slot == slot) {
            u[i] = u[t->nuses - 1];
            t->nuses--;
            count_foreign(t, l, -1);
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

gwr_layer *gwr_ir_consumer_in(gwr_layer *u, const gwr_network *net) {
    while (u && u->net != net) u = u->net->owner;
    return u;
}

/* A growable stack of layers. */
typedef struct {
    gwr_layer **v;
    int64_t n, cap;
} lstack;

static int lpush(lstack *s, gwr_layer *l) {
    if (gwr_grow((void **)&s->v, sizeof *s->v, &s->cap, s->n + 1)) return -1;
    s->v[s->n++] = l;
    return 0;
}

static int has_graphs(const gwr_layer *l) {
    if (!l->net->ngraph_attrs) return 0;
    for (int i = 0; i < l->nattrs; i++)
        if (l->attrs[i].type == GWR_ATTR_GRAPH || l->attrs[i].type == GWR_ATTR_GRAPHS) return 1;
    return 0;
}

/* Producers in `net` of tensors read anywhere inside subgraph g. */
static int collect_captures(const gwr_network *g, const gwr_network *net, lstack *out) {
    for (int64_t i = 0; i < g->nlayers; i++) {
        gwr_layer *x = g->layers[i];
        for (int s = 0; s < x->ninputs; s++) {
            gwr_tensor *t = x->inputs[s];
            if (t && gwr_ir_tnet(t) == net && t->producer && lpush(out, t->producer)) return -1;
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
static int preds_of(gwr_layer *x, lstack *out) {
    for (int s = 0; s < x->ninputs; s++) {
        gwr_tensor *t = x->inputs[s];
        if (t && t->producer && gwr_ir_tnet(t) == x->net && lpush(out, t->producer)) return -1;
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
    lstack st = {0}, preds = {0};
    int found = 0;
    if (lpush(&st, P)) found = 1; /* out of memory: refuse, to be safe */
    P->mark = mark;
    while (!found && st.n) {
        gwr_layer *x = st.v[--st.n];
        preds.n = 0;
        if (preds_of(x, &preds)) {
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
            if (lpush(&st, p)) {
                found = 1;
                break;
            }
        }
    }
    free(st.v), free(preds.v);
    return found;
}

static void retighten_ranks(gwr_network *net);
static void set_tight_ranks(gwr_network *net, gwr_layer **order);

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
static void lower_region(gwr_layer *P, int32_t bound) {
    if (!P || P->rank < bound) return;
    uint32_t mark = ++P->net->epoch;
    lstack region = {0}, st = {0}, preds = {0};
    if (lpush(&st, P)) goto out;
    P->mark = mark;
    while (st.n) {
        gwr_layer *x = st.v[--st.n];
        preds.n = 0;
        if (lpush(&region, x) || preds_of(x, &preds)) goto out;
        for (int64_t i = 0; i < preds.n; i++) {
            gwr_layer *p = preds.v[i];
            if (p->mark == mark || p->rank < bound) continue;
            p->mark = mark;
            if (lpush(&st, p)) goto out;
        }
    }
    qsort(region.v, (size_t)region.n, sizeof *region.v, by_rank);
    for (int64_t i = 0; i < region.n; i++) {
        gwr_layer *x = region.v[i];
        preds.n = 0;
        if (preds_of(x, &preds)) goto out;
        int32_t r = 0;
        for (int64_t k = 0; k < preds.n; k++)
            if (preds.v[k]->rank >= r) r = preds.v[k]->rank + 1;
        if (r < x->rank) x->rank = r;
    }
out:
    free(region.v), free(st.v), free(preds.v);
}

/* Raises C's rank to at least `min` and repairs ranks downstream. Ranks
 * stay below the longest path ever built into a layer; should a long
 * history of rewrites push one to the int32 limit, all ranks of the
 * network are recomputed from its edges instead. */
static void raise_rank(gwr_layer *C, int64_t min) {
    if (!C || C->rank >= min) return;
    if (min >= INT32_MAX - 1) {
        retighten_ranks(C->net);
        return;
    }
    C->rank = (int32_t)min;
    lstack st = {0};
    if (lpush(&st, C)) return;
    while (st.n) {
        gwr_layer *x = st.v[--st.n];
        for (int o = 0; o < x->noutputs; o++) {
            gwr_tensor *t = &gwr_ir_outputs(x)[o];
            gwr_use *u = uses_of(t);
            for (int32_t i = 0; i < t->nuses; i++) {
                gwr_layer *y = gwr_ir_consumer_in(u[i].layer, x->net);
                if (y && y->rank <= x->rank) {
                    if (x->rank >= INT32_MAX - 1) {
                        free(st.v);
                        retighten_ranks(x->net);
                        return;
                    }
                    y->rank = x->rank + 1;
                    if (lpush(&st, y)) goto out;
                }
            }
        }
    }
out:
    free(st.v);
}

void gwr_ir_capture_edge(gwr_tensor *t, gwr_layer *l) {
    if (!t->producer) return;
    gwr_layer *C = gwr_ir_consumer_in(l, gwr_ir_tnet(t));
    if (C) raise_rank(C, t->producer->rank + 1);
}

gwr_status gwr_ir_attach_check(gwr_layer *l, gwr_network *g) {
    lstack caps = {0};
    if (collect_captures(g, l->net, &caps)) {
        free(caps.v);
        return gwr_ir_error(l->net, GWR_ERR_NOMEM, "out of memory");
    }
    for (int64_t i = 0; i < caps.n; i++)
        if (gwr_ir_would_cycle(caps.v[i], l)) {
            gwr_status s = gwr_ir_error(l->net, GWR_ERR_CYCLE,
                                        "subgraph '%s' reads the output of '%s', which depends on layer '%s'",
                                        g->name, caps.v[i]->name, l->name);
            free(caps.v);
            return s;
        }
    free(caps.v);
    return GWR_OK;
}

void gwr_ir_attach_edges(gwr_layer *l, gwr_network *g) {
    lstack caps = {0};
    if (!collect_captures(g, l->net, &caps))
        for (int64_t i = 0; i < caps.n; i++) raise_rank(l, caps.v[i]->rank + 1);
    free(caps.v);
}

void gwr_ir_discard_new_layer(gwr_layer *l) {
    gwr_network *net = l->net;
    GWR_IR_NOTIFY(net, layer_dropped, l);
    for (int s = 0; s < l->ninputs; s++)
        if (l->inputs[s]) gwr_ir_use_del(l->inputs[s], l, s);
    gwr_ir_unname_layer(net, l, 0);
    for (int o = 0; o < l->noutputs; o++) gwr_ir_unname_tensor(net, &gwr_ir_outputs(l)[o], 0);
    if (net->layers[net->nlayers - 1] == l) net->nlayers--;
    if (net->last_added == l) net->last_added = NULL;
    gwr_ir_props_drop(net, l);
    for (int o = 0; o < l->noutputs; o++) gwr_ir_props_drop(net, &gwr_ir_outputs(l)[o]);
    gwr_ir_layer_free(l);
}

/* ---- rewiring ---- */

static gwr_status check_new_input(gwr_layer *l, gwr_tensor *t) {
    if (!gwr_ir_in_scope(gwr_ir_tnet(t), l->net))
        return gwr_ir_error(l->net, GWR_ERR_INVALID_ARG,
                            "tensor '%s' is not in scope of layer '%s' (another network)", t->name, l->name);
    if (t->producer && (t->producer->flags & LF_DROPPED))
        return gwr_ir_error(l->net, GWR_ERR_INVALID_ARG, "tensor '%s' was pruned", t->name);
    gwr_layer *C = t->producer ? gwr_ir_consumer_in(l, gwr_ir_tnet(t)) : NULL;
    if (C && gwr_ir_would_cycle(t->producer, C))
        return gwr_ir_error(l->net, GWR_ERR_CYCLE,
                            "reading '%s' in layer '%s' would create a cycle through '%s'", t->name,
                            l->name, C->name);
    return GWR_OK;
}

static void wired(gwr_layer *l, gwr_tensor *t) {
    if (!t || !t->producer) return;
    gwr_layer *C = gwr_ir_consumer_in(l, gwr_ir_tnet(t));
    if (C && t->producer->rank >= C->rank) lower_region(t->producer, C->rank);
    raise_rank(C, t->producer->rank + 1);
}

gwr_status gwr_layer_set_input(gwr_layer *l, int i, gwr_tensor *t) {
    if (!l) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_layer_set_input: NULL layer");
    if (i < 0 || i >= l->ninputs)
        return gwr_ir_error(l->net, GWR_ERR_INVALID_ARG, "layer '%s' has no input %d (it has %d)", l->name, i,
                            l->ninputs);
    gwr_tensor *old = l->inputs[i];
    if (old == t) return GWR_OK;
    if (t) {
        gwr_status s = check_new_input(l, t);
        if (s) return s;
        if (uses_reserve(t, (int64_t)t->nuses + 1)) return gwr_ir_error(l->net, GWR_ERR_NOMEM, "out of memory");
    }
    if (old) gwr_ir_use_del(old, l, i);
    l->inputs[i] = t;
    if (t) gwr_ir_use_add(t, l, i); /* reserved above: cannot fail */
    wired(l, t);
    GWR_IR_NOTIFY(l->net, input_changed, l, i, old);
    return GWR_OK;
}

gwr_status gwr_layer_append_input(gwr_layer *l, gwr_tensor *t) {
    if (!l) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_layer_append_input: NULL layer");
    if (t) {
        gwr_status s = check_new_input(l, t);
        if (s) return s;
        if (uses_reserve(t, (int64_t)t->nuses + 1)) return gwr_ir_error(l->net, GWR_ERR_NOMEM, "out of memory");
    }
    if (l->ninputs == l->incap) {
        int32_t ncap = l->incap ? l->incap * 2 : 2;
        gwr_tensor **in = malloc((size_t)ncap * sizeof *in);
        if (!in) return gwr_ir_error(l->net, GWR_ERR_NOMEM, "out of memory");
        if (l->ninputs) memcpy(in, l->inputs, (size_t)l->ninputs * sizeof *in);
        if (l->flags & LF_OWN_INPUTS) free(l->inputs);
        l->inputs = in;
        l->incap = ncap;
        l->flags |= LF_OWN_INPUTS;
    }
    int slot = l->ninputs++;
    l->inputs[slot] = t;
    if (t) gwr_ir_use_add(t, l, slot);
    wired(l, t);
    GWR_IR_NOTIFY(l->net, input_changed, l, slot, (gwr_tensor *)NULL);
    return GWR_OK;
}

gwr_status gwr_ir_replace_check(gwr_tensor *old, gwr_tensor *nw, const gwr_layer *except, int64_t *nmoving) {
    gwr_network *net = gwr_ir_tnet(old);
    if (old->producer && (old->producer->flags & LF_DROPPED))
        return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "tensor '%s' was pruned", old->name);
    if (nw->producer && (nw->producer->flags & LF_DROPPED))
        return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "tensor '%s' was pruned", nw->name);
    if (old->kind != nw->kind ||
        (old->dtype != GWR_UNDEFINED && nw->dtype != GWR_UNDEFINED && old->dtype != nw->dtype)) {
        char a[128], b[128];
        gwr_tensor_type_str(old, a, sizeof a);
        gwr_tensor_type_str(nw, b, sizeof b);
        return gwr_ir_error(net, GWR_ERR_TYPE, "cannot replace '%s' (%s) with '%s' (%s): types differ", old->name,
                            a, nw->name, b);
    }
    if (!gwr_ir_in_scope(gwr_ir_tnet(nw), net))
        return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "tensor '%s' is not in scope of network '%s'", nw->name,
                            net->name);
    gwr_use *u = uses_of(old);
    int64_t moving = 0;
    for (int32_t i = 0; i < old->nuses; i++) {
        if (u[i].layer == except) continue;
        moving++;
        if (!gwr_ir_in_scope(gwr_ir_tnet(nw), u[i].layer->net))
            return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "tensor '%s' is not in scope of user '%s'", nw->name,
                                u[i].layer->name);
        gwr_layer *C = nw->producer ? gwr_ir_consumer_in(u[i].layer, gwr_ir_tnet(nw)) : NULL;
        if (C && gwr_ir_would_cycle(nw->producer, C))
            return gwr_ir_error(net, GWR_ERR_CYCLE,
                                "replacing '%s' with '%s' would create a cycle: '%s' depends on user '%s'",
                                old->name, nw->name, nw->name, C->name);
    }
    int is_out = old->output_index >= 0;
    if (is_out && (old->flags & TF_INPUT))
        return gwr_ir_error(net, GWR_ERR_STATE,
                            "'%s' is both a graph input and a graph output: its output name cannot move to '%s'",
                            old->name, nw->name);
    if (nmoving) *nmoving = moving;
    return GWR_OK;
}

static gwr_status replace_uses(gwr_tensor *old, gwr_tensor *nw, const gwr_layer *except) {
    if (!old || !nw) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_tensor_replace_all_uses_with: NULL tensor");
    if (old == nw) return GWR_OK;
    int64_t moving;
    gwr_status st = gwr_ir_replace_check(old, nw, except, &moving);
    if (st) return st;
    gwr_network *net = gwr_ir_tnet(old);
    gwr_use *u = uses_of(old);
    int is_out = old->output_index >= 0;
    /* The interface keeps old's name: nw takes it, unless nw's own name is
     * part of the interface too (a graph input or another output) or nw
     * lives outside this network; then an Identity carries it. */
    int identity = is_out && ((nw->flags & TF_INPUT) || nw->output_index >= 0 || gwr_ir_tnet(nw) != net);
    /* Room for the moved uses and the Identity's read, so nothing below
     * fails (and no more: a single reader needs no array). */
    if (uses_reserve(nw, (int64_t)nw->nuses + moving + identity))
        return gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
    gwr_tensor *carrier = nw;
    if (identity) {
        gwr_layer *id = gwr_network_add_layer(net, "Identity", "", NULL, 1, &nw, 1, NULL);
        if (!id) return GWR_ERR_NOMEM;
        carrier = gwr_ir_outputs(id);
        gwr_type ty;
        gwr_tensor_value_type(nw, &ty);
        gwr_tensor_set_value_type(carrier, &ty);
        u = uses_of(old); /* unchanged, but re-read after the call */
    }
    if (is_out && (gwr_ir_tensor_own_name(old) || gwr_ir_tensor_own_name(carrier)))
        return GWR_ERR_NOMEM;
    /* Move the uses. */
    gwr_use *nu = uses_of(nw);
    int32_t keep = 0;
    for (int32_t i = 0; i < old->nuses; i++) {
        gwr_use x = u[i];
        if (x.layer == except) {
            u[keep++] = x;
            continue;
        }
        x.layer->inputs[x.slot] = nw;
        nu[nw->nuses++] = x;
        if (gwr_ir_tnet(nw) != net) {
            count_foreign(old, x.layer, -1);
            count_foreign(nw, x.layer, 1);
        }
    }
    int32_t total = old->nuses;
    old->nuses = keep;
    if (nw->producer) {
        int32_t lowest = INT32_MAX;
        for (int32_t i = nw->nuses - (total - keep); i < nw->nuses; i++) {
            gwr_layer *C = gwr_ir_consumer_in(nu[i].layer, gwr_ir_tnet(nw));
            if (C && C->rank < lowest) lowest = C->rank;
        }
        if (nw->producer->rank >= lowest) lower_region(nw->producer, lowest);
        for (int32_t i = nw->nuses - (total - keep); i < nw->nuses; i++)
            raise_rank(gwr_ir_consumer_in(nu[i].layer, gwr_ir_tnet(nw)), nw->producer->rank + 1);
    }
    if (is_out) {
        int32_t k = old->output_index;
        net->outputs[k] = carrier;
        carrier->output_index = k;
        old->output_index = -1;
        gwr_ir_tensor_swap_names(old, carrier);
    }
    GWR_IR_NOTIFY(net, tensor_replaced, old, nw);
    return GWR_OK;
}

gwr_status gwr_tensor_replace_all_uses_with(gwr_tensor *old_t, gwr_tensor *new_t) {
    return replace_uses(old_t, new_t, NULL);
}

gwr_status gwr_tensor_replace_all_uses_except(gwr_tensor *old_t, gwr_tensor *new_t, const gwr_layer *except) {
    return replace_uses(old_t, new_t, except);
}

/* ---- topological order ---- */

/* Computes a stable topological order of net's layers into *order. On a
 * cycle returns a layer on it (and no order). */
static gwr_status topo_order(gwr_network *net, gwr_layer ***order, gwr_layer **on_cycle) {
    *order = NULL;
    *on_cycle = NULL;
    gwr_layer **out = malloc((size_t)(net->nlayers ? net->nlayers : 1) * sizeof *out);
    typedef struct {
        gwr_layer *l;
        int64_t next, npreds, base;
    } frame;
    frame *st = NULL;
    int64_t nst = 0, stcap = 0, nout = 0;
    lstack preds = {0}; /* the preds of every frame on the stack, concatenated */
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
        if (preds_of(root, &preds)) { s = GWR_ERR_NOMEM; break; }
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
                if (preds_of(p, &preds)) { s = GWR_ERR_NOMEM; break; }
                st[nst++] = (frame){p, 0, preds.n - b, b};
            } else {
                f->l->mark = done;
                out[nout++] = f->l;
                preds.n = f->base;
                nst--;
            }
        }
    }
    free(st), free(preds.v);
    if (s) {
        free(out);
        return s;
    }
    *order = out;
    return GWR_OK;
}

gwr_status gwr_network_topo_order(gwr_network *net, gwr_layer **out) {
    if (!net || (!out && net->nlayers)) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_topo_order: NULL argument");
    gwr_layer **order, *cyc;
    gwr_status s = topo_order(net, &order, &cyc);
    if (s == GWR_ERR_CYCLE) return gwr_ir_error(net, s, "the network has a cycle through layer '%s'", cyc->name);
    if (s) return gwr_ir_error(net, s, "out of memory");
    if (net->nlayers) memcpy(out, order, (size_t)net->nlayers * sizeof *order);
    free(order);
    return GWR_OK;
}

gwr_status gwr_network_toposort(gwr_network *net) {
    if (!net) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_toposort: NULL network");
    if (net->driven)
        return gwr_ir_error(net, GWR_ERR_STATE, "gwr_network_toposort: network '%s' is being rewritten", net->name);
    gwr_layer **order, *cyc;
    gwr_status s = topo_order(net, &order, &cyc);
    if (s == GWR_ERR_CYCLE)
        return gwr_ir_error(net, s, "the network has a cycle through layer '%s'", cyc->name);
    if (s) return gwr_ir_error(net, s, "out of memory");
    memcpy(net->layers, order, (size_t)net->nlayers * sizeof *order);
    free(order);
    for (int64_t i = 0; i < net->nlayers; i++) net->layers[i]->index = (int32_t)i;
    set_tight_ranks(net, net->layers);
    return GWR_OK;
}

/* Sets every rank to GWR_RANK_STEP times the layer's longest-path depth,
 * in network order (which must be topological). */
static void set_tight_ranks(gwr_network *net, gwr_layer **order) {
    lstack preds = {0};
    /* Spaced ranks while they fit in int32 (networks hold < 2^31 layers). */
    int32_t step = net->nlayers < INT32_MAX / (2 * GWR_RANK_STEP) ? GWR_RANK_STEP : 1;
    for (int64_t i = 0; i < net->nlayers; i++) {
        gwr_layer *l = order[i];
        l->rank = 0;
        preds.n = 0;
        if (preds_of(l, &preds)) continue; /* out of memory: this rank stays low; see below */
        for (int64_t k = 0; k < preds.n; k++)
            if (preds.v[k]->rank + step > l->rank) l->rank = preds.v[k]->rank + step;
    }
    free(preds.v);
}

void gwr_ir_retighten_ranks(gwr_network *net) { retighten_ranks(net); }

static void retighten_ranks(gwr_network *net) {
    gwr_layer **order, *cyc;
    if (topo_order(net, &order, &cyc) == GWR_OK) {
        set_tight_ranks(net, order);
        free(order);
    }
}

/* ---- prune ---- */

static void drop_layer_edges(gwr_layer *l) {
    gwr_network *net = l->net;
    gwr_ir_attrs_free(l); /* subgraphs detach their reads of outer tensors */
    for (int s = 0; s < l->ninputs; s++)
        if (l->inputs[s]) gwr_ir_use_del(l->inputs[s], l, s);
    /* Output 0 usually shares the layer's name (and so its hash). */
    uint32_t h = l->flags & LF_GEN_NAME ? 0 : gwr_ir_name_hash(l->name);
    for (int o = 0; o < l->noutputs; o++) {
        gwr_tensor *t = &gwr_ir_outputs(l)[o];
        gwr_ir_unname_tensor(net, t, t->name == l->name ? h : 0);
    }
    gwr_ir_unname_layer(net, l, h);
    gwr_ir_props_drop(net, l);
    for (int o = 0; o < l->noutputs; o++) gwr_ir_props_drop(net, &gwr_ir_outputs(l)[o]);
    if (net->last_added == l) net->last_added = NULL;
}

/* Marks with `live` every layer of net that a network output depends on
 * (a search from the outputs). On a removed layer that is still needed,
 * stops and leaves a message. */
static gwr_status mark_live(gwr_network *net, uint32_t live) {
    lstack st = {0}, preds = {0};
    gwr_status s = GWR_OK;
    for (int64_t i = 0; i < net->noutputs && !s; i++) {
        gwr_layer *p = net->outputs[i]->producer;
        if (p && p->mark != live) {
            p->mark = live;
            if (lpush(&st, p)) s = GWR_ERR_NOMEM;
        }
    }
    while (st.n && !s) {
        gwr_layer *x = st.v[--st.n];
        if (x->flags & LF_REMOVED) {
            /* Find who still needs it, for the message. */
            const char *by = "a network output";
            for (int o = 0; o < x->noutputs; o++) {
                gwr_tensor *t = &gwr_ir_outputs(x)[o];
                gwr_use *u = uses_of(t);
                for (int32_t k = 0; k < t->nuses; k++) {
                    gwr_layer *c = gwr_ir_consumer_in(u[k].layer, net);
                    if (c && c->mark == live && !(c->flags & LF_REMOVED)) by = c->name;
                }
            }
            s = gwr_ir_error(net, GWR_ERR_STATE,
                             "layer '%s' is marked removed but '%s' still reads its output; replace its uses first",
                             x->name, by);
            break;
        }
        preds.n = 0;
        if (preds_of(x, &preds)) {
            s = GWR_ERR_NOMEM;
            break;
        }
        for (int64_t k = 0; k < preds.n; k++)
            if (preds.v[k]->mark != live) {
                preds.v[k]->mark = live;
                if (lpush(&st, preds.v[k])) {
                    s = GWR_ERR_NOMEM;
                    break;
                }
            }
    }
    free(st.v), free(preds.v);
    return s == GWR_ERR_NOMEM ? gwr_ir_error(net, s, "out of memory") : s;
}

/* How many places ahead of the layer being worked on the loops below
 * start loading what they will read: in a network far bigger than the
 * cache nearly every layer, tensor and name-map slot they touch is a miss,
 * and the reads of one layer depend on each other (layer -> input slots ->
 * input tensor -> its producer), so each link of such a chain is requested
 * one stage ahead of the next. */
#define PRUNE_AHEAD 16
/* For the loops that do little per layer, so that the loads still have
 * the time a miss takes. */
#define PRUNE_AHEAD_SCAN 64

/* Marks with `dead`, and lists in *dead, every layer of net that no network
 * output depends on, from use counts: a layer is dead when it makes no
 * network output and every reader of its outputs is dead. Only for a
 * network whose tensors are read by its own layers alone, without
 * subgraphs: then a tensor's use list names every reader, and a layer
 * depends on its inputs' producers only. Unlike mark_live, which follows
 * every edge of the live part (most of a network, with a cache miss per
 * edge in a big one), this reads each layer once in network order, where
 * the next ones are known and are loaded ahead, and follows edges from
 * dead layers only. On a removed layer that is still needed, leaves a
 * message. */
static gwr_status mark_dead(gwr_network *net, uint32_t dead, lstack *q) {
    int64_t n = net->nlayers;
    /* Readers not known to be dead; -1: makes a network output. */
    int64_t *left = malloc((size_t)(n ? n : 1) * sizeof *left);
    if (!left) return gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
    gwr_status s = GWR_OK;
    for (int64_t i = 0; i < n && !s; i++) {
        if (i + PRUNE_AHEAD_SCAN < n) { /* the layer and its first output: no read needed to find them */
            __builtin_prefetch(net->layers[i + PRUNE_AHEAD_SCAN]);
            __builtin_prefetch(&gwr_ir_outputs(net->layers[i + PRUNE_AHEAD_SCAN])->nuses);
        }
        gwr_layer *l = net->layers[i];
        int64_t readers = 0;
        for (int o = 0; o < l->noutputs && readers >= 0; o++) {
            gwr_tensor *t = &gwr_ir_outputs(l)[o];
            readers = t->output_index >= 0 ? -1 : readers + t->nuses;
        }
        left[i] = readers;
        if (!readers) {
            l->mark = dead;
            if (lpush(q, l)) s = gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
        }
    }
    /* The dead readers' inputs lose a reader, in list order: the layer, its
     * input slots, the tensors, their producers, the producers' counts. */
    int64_t removed = 0; /* removed layers found dead */
    for (int64_t h = 0; h < q->n && !s; h++) {
        gwr_layer *const *v = q->v;
        if (h + 4 * PRUNE_AHEAD < q->n) __builtin_prefetch(v[h + 4 * PRUNE_AHEAD]);
        if (h + 3 * PRUNE_AHEAD < q->n && v[h + 3 * PRUNE_AHEAD]->ninputs)
            __builtin_prefetch(v[h + 3 * PRUNE_AHEAD]->inputs);
        for (int k = 0; h + 2 * PRUNE_AHEAD < q->n && k < v[h + 2 * PRUNE_AHEAD]->ninputs; k++)
            if (v[h + 2 * PRUNE_AHEAD]->inputs[k]) __builtin_prefetch(&v[h + 2 * PRUNE_AHEAD]->inputs[k]->producer);
        for (int k = 0; h + PRUNE_AHEAD < q->n && k < v[h + PRUNE_AHEAD]->ninputs; k++) {
            gwr_tensor *t = v[h + PRUNE_AHEAD]->inputs[k];
            if (t && t->producer) __builtin_prefetch(&t->producer->index);
        }
        for (int k = 0; h + PRUNE_AHEAD / 2 < q->n && k < v[h + PRUNE_AHEAD / 2]->ninputs; k++) {
            gwr_tensor *t = v[h + PRUNE_AHEAD / 2]->inputs[k];
            if (t && t->producer && t->producer->net == net) __builtin_prefetch(&left[t->producer->index], 1);
        }
        gwr_layer *x = v[h];
        removed += (x->flags & LF_REMOVED) != 0;
        for (int k = 0; k < x->ninputs; k++) {
            gwr_tensor *t = x->inputs[k];
            gwr_layer *p = t ? t->producer : NULL;
            if (!p || p->net != net || --left[p->index]) continue;
            p->mark = dead;
            if (lpush(q, p)) {
                s = gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
                break;
            }
        }
    }
    free(left);
    for (int64_t i = 0; removed < net->nremoved && !s && i < n; i++) {
        gwr_layer *x = net->layers[i];
        if (!(x->flags & LF_REMOVED) || x->mark == dead) continue;
        /* Needed: name a live reader, for the message. */
        const char *by = "a network output";
        for (int o = 0; o < x->noutputs; o++) {
            gwr_tensor *t = &gwr_ir_outputs(x)[o];
            gwr_use *u = uses_of(t);
            for (int32_t k = 0; k < t->nuses; k++)
                if (u[k].layer->mark != dead && !(u[k].layer->flags & LF_REMOVED)) by = u[k].layer->name;
        }
        s = gwr_ir_error(net, GWR_ERR_STATE,
                         "layer '%s' is marked removed but '%s' still reads its output; replace its uses first",
                         x->name, by);
    }
    return s;
}

/* Starts loading what drop_layer_edges reads for the layers of v ahead of
 * i, in stages: the layer; its name (to hash) and input slots; the input
 * tensors' use lists; the name-map slots. */
static void prefetch_drop(gwr_layer *const *v, int64_t i, int64_t n) {
    if (i + 4 * PRUNE_AHEAD < n) __builtin_prefetch(v[i + 4 * PRUNE_AHEAD]);
    if (i + 3 * PRUNE_AHEAD < n) {
        const gwr_layer *l = v[i + 3 * PRUNE_AHEAD];
        __builtin_prefetch(l->name);
        if (l->ninputs) __builtin_prefetch(l->inputs);
    }
    if (i + 2 * PRUNE_AHEAD < n) {
        const gwr_layer *l = v[i + 2 * PRUNE_AHEAD];
        for (int s = 0; s < l->ninputs; s++)
            if (l->inputs[s]) __builtin_prefetch(&l->inputs[s]->uses);
    }
    if (i + PRUNE_AHEAD < n && !(v[i + PRUNE_AHEAD]->flags & LF_GEN_NAME)) {
        const gwr_layer *l = v[i + PRUNE_AHEAD];
        uint32_t h = gwr_ir_name_hash(l->name);
        gwr_ir_namemap_prefetch(&l->net->layer_names, h);
        gwr_ir_namemap_prefetch(&l->net->tensor_names, h); /* output 0 is usually named after the layer */
    }
}

static gwr_status prune_net(gwr_network *net, int64_t *count) {
    uint32_t mark = ++net->epoch;
    lstack drop = {0};
    gwr_status s;
    if (!net->nforeign_uses && !net->ngraph_attrs) {
        /* Counting: marks and lists the dead layers. */
        s = mark_dead(net, mark, &drop);
        for (int64_t i = 0; !s && i < drop.n; i++) drop.v[i]->flags |= LF_DROPPED;
    } else {
        /* Searching: marks the live layers; the others are dead. */
        s = mark_live(net, mark);
        for (int64_t i = 0; !s && i < net->nlayers; i++) {
            gwr_layer *l = net->layers[i];
            if (l->mark == mark) continue;
            l->flags |= LF_DROPPED;
            if (lpush(&drop, l)) s = gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
        }
    }
    if (s) {
        for (int64_t i = 0; i < drop.n; i++) drop.v[i]->flags &= (uint8_t)~LF_DROPPED;
        free(drop.v);
        return s;
    }
    for (int64_t i = 0; i < drop.n; i++) GWR_IR_NOTIFY(net, layer_dropped, drop.v[i]);
    /* Every edge first (subgraphs may read outputs of other dropped
     * layers), then the layers; their slots are cleared by index. */
    for (int64_t i = 0; i < drop.n; i++) {
        prefetch_drop(drop.v, i, drop.n);
        drop_layer_edges(drop.v[i]);
    }
    for (int64_t i = 0; i < drop.n; i++) {
        if (i + PRUNE_AHEAD_SCAN < drop.n) __builtin_prefetch(gwr_ir_outputs(drop.v[i + PRUNE_AHEAD_SCAN]));
        gwr_layer *l = drop.v[i];
        net->layers[l->index] = NULL;
        l->nattrs = 0; /* freed above */
        gwr_ir_layer_free(l);
    }
    if (drop.n) {
        int64_t n = 0;
        for (int64_t i = 0; i < net->nlayers; i++) {
            if (i + PRUNE_AHEAD_SCAN < net->nlayers && net->layers[i + PRUNE_AHEAD_SCAN])
                __builtin_prefetch(&net->layers[i + PRUNE_AHEAD_SCAN]->index, 1);
            gwr_layer *l = net->layers[i];
            if (!l) continue;
            l->index = (int32_t)n;
            net->layers[n++] = l;
        }
        net->nlayers = n;
    }
    *count += drop.n;
    free(drop.v);
    net->nremoved = 0;
    /* Subgraphs of the surviving layers. */
    for (int64_t i = 0; net->ngraph_attrs && i < net->nlayers; i++) {
        gwr_layer *l = net->layers[i];
        for (int a = 0; a < l->nattrs; a++) {
            gwr_attr *at = &l->attrs[a];
            if (at->type != GWR_ATTR_GRAPH && at->type != GWR_ATTR_GRAPHS) continue;
            for (int64_t k = 0; k < at->n; k++)
                if ((s = prune_net(at->v.graphs[k], count))) return s;
        }
    }
    return GWR_OK;
}

gwr_status gwr_network_prune(gwr_network *net, int64_t *nremoved) {
    if (!net) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_prune: NULL network");
    if (net->driven)
        return gwr_ir_error(net, GWR_ERR_STATE,
                            "gwr_network_prune: network '%s' is being rewritten (the manager prunes at the end)",
                            net->name);
    int64_t count = 0;
    gwr_status s = prune_net(net, &count);
    if (nremoved) *nremoved = count;
    return s;
}

/* ---- verify ---- */

static const char *const constant_value_attrs[] = {"value", "value_float", "value_floats", "value_int",
                                                   "value_ints", "value_string", "value_strings", "sparse_value"};

static gwr_status verify_net(gwr_network *net, const gwr_network *top, gwr_ptrmap *slots) {
    const char *nn = net->name;
#define BAD(...) return gwr_ir_error(net, GWR_ERR_INVALID_GRAPH, __VA_ARGS__)
    int64_t nremoved = 0, ntensors = net->ninputs, ngraphs = 0;
    for (int64_t i = 0; i < net->ninputs; i++) {
        gwr_tensor *t = net->inputs[i];
        if (gwr_ir_tnet(t) != net || !(t->flags & TF_INPUT) || t->out_index != i)
            BAD("network '%s': input %lld ('%s') is inconsistent", nn, (long long)i, t->name);
        if (gwr_ir_find_tensor(net, t->name) != t)
            BAD("network '%s': tensor name '%s' is not unique", nn, t->name);
    }
    for (int64_t i = 0; i < net->nlayers; i++) {
        gwr_layer *l = net->layers[i];
        if (l->net != net || l->index != i || (l->flags & LF_DROPPED))
            BAD("network '%s': layer %lld ('%s') is inconsistent with network order", nn, (long long)i, l->name);
        if (gwr_ir_find_layer(net, l->name) != l)
            BAD("network '%s': layer name '%s' is not unique", nn, l->name);
        if (l->flags & LF_REMOVED) nremoved++;
        ntensors += l->noutputs;
        for (int s = 0; s < l->ninputs; s++) {
            gwr_tensor *t = l->inputs[s];
            if (!t) continue;
            if (!gwr_ir_in_scope(gwr_ir_tnet(t), net))
                BAD("layer '%s' input %d reads '%s', which is not in scope", l->name, s, t->name);
            if (t->producer) {
                if ((t->producer->flags & LF_DROPPED) || &gwr_ir_outputs(t->producer)[t->out_index] != t)
                    BAD("layer '%s' input %d reads '%s', whose producer is gone", l->name, s, t->name);
                if (gwr_ir_tnet(t) == net && t->producer->rank >= l->rank)
                    BAD("internal: rank of '%s' (%lld) is not below its consumer '%s' (%lld)", t->producer->name,
                        (long long)t->producer->rank, l->name, (long long)l->rank);
            } else if (!(t->flags & TF_INPUT) || t->out_index >= gwr_ir_tnet(t)->ninputs ||
                       gwr_ir_tnet(t)->inputs[t->out_index] != t) {
                BAD("layer '%s' input %d reads '%s', which has no producer and is not a graph input", l->name, s,
                    t->name);
            }
            /* Count this slot; every use must point at a counted slot once.
             * Tensors outside the verified tree are checked with it. */
            if (gwr_ir_in_scope(top, gwr_ir_tnet(t)) && gwr_ptrmap_put(slots, &l->inputs[s], t))
                return gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
        }
        for (int o = 0; o < l->noutputs; o++) {
            gwr_tensor *t = &gwr_ir_outputs(l)[o];
            if (t->producer != l || t->out_index != o || gwr_ir_tnet(t) != net)
                BAD("layer '%s' output %d ('%s') is inconsistent", l->name, o, t->name);
            if (gwr_ir_find_tensor(net, t->name) != t)
                BAD("network '%s': tensor name '%s' is not unique", nn, t->name);
        }
        if (l->type == GWR_LAYER_CONSTANT && !strcmp(l->info->domain, "")) {
            int n = 0;
            for (size_t k = 0; k < sizeof constant_value_attrs / sizeof *constant_value_attrs; k++)
                n += gwr_layer_has_attr(l, constant_value_attrs[k]);
            if (n != 1) BAD("Constant layer '%s' has %d value attributes (needs exactly one)", l->name, n);
        }
        for (int a = 0; a < l->nattrs; a++) {
            gwr_attr *at = &l->attrs[a];
            if (at->type != GWR_ATTR_GRAPH && at->type != GWR_ATTR_GRAPHS) continue;
            ngraphs++;
            for (int64_t k = 0; k < at->n; k++) {
                gwr_network *g = at->v.graphs[k];
                if (g->parent != net || g->owner != l)
                    BAD("layer '%s' attribute '%s': subgraph '%s' is not owned by it", l->name, at->name, g->name);
                gwr_status s = verify_net(g, top, slots);
                if (s) {
                    char sub[GWR_ERRMSG_MAX];
                    memcpy(sub, g->errmsg, sizeof sub);
                    return gwr_ir_error(net, s, "in subgraph '%s' of layer '%s': %s", g->name, l->name, sub);
                }
            }
        }
    }
    if (nremoved != net->nremoved)
        BAD("internal: %lld layers are marked removed but the count says %lld", (long long)nremoved,
            (long long)net->nremoved);
    if (ngraphs != net->ngraph_attrs)
        BAD("internal: %lld graph attributes but the count says %lld", (long long)ngraphs,
            (long long)net->ngraph_attrs);
    if (net->layer_names.count + net->ngen_layers != net->nlayers)
        BAD("internal: %lld + %lld layer names for %lld layers", (long long)net->layer_names.count,
            (long long)net->ngen_layers, (long long)net->nlayers);
    if (net->tensor_names.count + net->ngen_tensors != ntensors)
        BAD("internal: %lld + %lld tensor names for %lld tensors", (long long)net->tensor_names.count,
            (long long)net->ngen_tensors, (long long)ntensors);
    gwr_layer **order, *cyc;
    gwr_status ts = topo_order(net, &order, &cyc);
    if (ts == GWR_ERR_CYCLE) return gwr_ir_error(net, ts, "network '%s' has a cycle through layer '%s'", nn, cyc->name);
    if (ts) return gwr_ir_error(net, ts, "out of memory");
    free(order);
    for (int64_t i = 0; i < net->noutputs; i++) {
        gwr_tensor *t = net->outputs[i];
        if (gwr_ir_tnet(t) != net || t->output_index != i)
            BAD("network '%s': output %lld ('%s') is inconsistent", nn, (long long)i, t->name);
    }
    return GWR_OK;
#undef BAD
}

/* Every use of every tensor must name a slot that reads it, once; and the
 * number of uses must equal the number of slots reading the tensor. */
static gwr_status verify_uses(gwr_network *net, const gwr_network *top, gwr_ptrmap *slots, int64_t *nuses) {
    int64_t foreign = 0;
    for (int64_t i = 0; i < net->ninputs + net->nlayers; i++) {
        gwr_tensor *ts;
        int nt;
        if (i < net->ninputs) ts = net->inputs[i], nt = 1;
        else ts = gwr_ir_outputs(net->layers[i - net->ninputs]), nt = net->layers[i - net->ninputs]->noutputs;
        for (int k = 0; k < nt; k++) {
            gwr_tensor *t = &ts[k];
            gwr_use *u = uses_of(t);
            for (int32_t j = 0; j < t->nuses; j++) {
                gwr_layer *l = u[j].layer;
                foreign += l->net != net;
                if (!gwr_ir_consumer_in(l, top)) continue; /* a subgraph not attached (yet) */
                if (u[j].slot < 0 || u[j].slot >= l->ninputs || l->inputs[u[j].slot] != t ||
                    gwr_ptrmap_get(slots, &l->inputs[u[j].slot]) != t)
                    return gwr_ir_error(net, GWR_ERR_INVALID_GRAPH,
                                        "use list of '%s' names input %d of '%s', which does not read it", t->name,
                                        u[j].slot, l->name);
                gwr_ptrmap_del(slots, &l->inputs[u[j].slot]);
                (*nuses)++;
            }
        }
    }
    if (foreign != net->nforeign_uses)
        return gwr_ir_error(net, GWR_ERR_INVALID_GRAPH, "internal: %lld uses by other networks' layers but the count says %lld",
                            (long long)foreign, (long long)net->nforeign_uses);
    for (int64_t i = 0; i < net->nlayers; i++) {
        gwr_layer *l = net->layers[i];
        for (int a = 0; a < l->nattrs; a++) {
            gwr_attr *at = &l->attrs[a];
            if (at->type != GWR_ATTR_GRAPH && at->type != GWR_ATTR_GRAPHS) continue;
            for (int64_t k = 0; k < at->n; k++) {
                gwr_status s = verify_uses(at->v.graphs[k], top, slots, nuses);
                if (s) {
                    char sub[GWR_ERRMSG_MAX];
                    memcpy(sub, at->v.graphs[k]->errmsg, sizeof sub);
                    return gwr_ir_error(net, s, "in subgraph '%s': %s", at->v.graphs[k]->name, sub);
                }
            }
        }
    }
    return GWR_OK;
}

gwr_status gwr_network_verify(gwr_network *net) {
    if (!net) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_verify: NULL network");
    gwr_ptrmap slots = {0};
    gwr_status s = verify_net(net, net, &slots);
    int64_t nuses = 0;
    if (!s) s = verify_uses(net, net, &slots, &nuses);
    if (!s && slots.count) {
        /* A slot reads a tensor whose use list does not name it. */
        for (int64_t i = 0; i < slots.cap; i++)
            if (slots.keys[i]) {
                gwr_tensor *t = slots.vals[i];
                s = gwr_ir_error(net, GWR_ERR_INVALID_GRAPH, "tensor '%s' is read by a layer missing from its use list",
                                 t->name);
                break;
            }
    }
    gwr_ptrmap_free(&slots);
    return s;
}
