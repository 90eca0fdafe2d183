/* graph.c - rewiring (set_input, append_input, replace_all_uses_with),
 * prune and verify, on the use lists, cycle checks and ranks of order.c. */
#include <stdlib.h>
#include <string.h>

#include "ir/ir_internal.h"

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
    if (C && t->producer->rank >= C->rank) gwr_ir_lower_region(t->producer, C->rank);
    gwr_ir_raise_rank(C, t->producer->rank + 1);
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
        if (gwr_ir_uses_reserve(t, (int64_t)t->nuses + 1)) return gwr_ir_error(l->net, GWR_ERR_NOMEM, "out of memory");
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
        if (gwr_ir_uses_reserve(t, (int64_t)t->nuses + 1)) return gwr_ir_error(l->net, GWR_ERR_NOMEM, "out of memory");
    }
    if (l->ninputs == l->incap) {
        int32_t ncap = l->incap ? l->incap * 2 : 2;
        gwr_tensor **in = gwr_malloc((size_t)ncap * sizeof *in);
        if (!in) return gwr_ir_error(l->net, GWR_ERR_NOMEM, "out of memory");
        if (l->ninputs) memcpy(in, l->inputs, (size_t)l->ninputs * sizeof *in);
        if (l->flags & LF_OWN_INPUTS) gwr_free(l->inputs);
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
    gwr_use *u = gwr_ir_uses_of(old);
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
    gwr_use *u = gwr_ir_uses_of(old);
    int is_out = old->output_index >= 0;
    /* The interface keeps old's name: nw takes it, unless nw's own name is
     * part of the interface too (a graph input or another output) or nw
     * lives outside this network; then an Identity carries it. */
    int identity = is_out && ((nw->flags & TF_INPUT) || nw->output_index >= 0 || gwr_ir_tnet(nw) != net);
    /* Room for the moved uses and the Identity's read, so nothing below
     * fails (and no more: a single reader needs no array). */
    if (gwr_ir_uses_reserve(nw, (int64_t)nw->nuses + moving + identity))
        return gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
    gwr_tensor *carrier = nw;
    if (identity) {
        gwr_layer *id = gwr_network_add_layer(net, "Identity", "", NULL, 1, &nw, 1, NULL);
        if (!id) return GWR_ERR_NOMEM;
        carrier = gwr_ir_outputs(id);
        gwr_type ty;
        gwr_tensor_value_type(nw, &ty);
        gwr_tensor_set_value_type(carrier, &ty);
        u = gwr_ir_uses_of(old); /* unchanged, but re-read after the call */
    }
    if (is_out && (gwr_ir_tensor_own_name(old) || gwr_ir_tensor_own_name(carrier)))
        return GWR_ERR_NOMEM;
    /* Move the uses. */
    gwr_use *nu = gwr_ir_uses_of(nw);
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
            gwr_ir_count_foreign(old, x.layer, -1);
            gwr_ir_count_foreign(nw, x.layer, 1);
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
        if (nw->producer->rank >= lowest) gwr_ir_lower_region(nw->producer, lowest);
        for (int32_t i = nw->nuses - (total - keep); i < nw->nuses; i++)
            gwr_ir_raise_rank(gwr_ir_consumer_in(nu[i].layer, gwr_ir_tnet(nw)), nw->producer->rank + 1);
    }
    if (is_out) {
        int32_t k = old->output_index;
        net->outputs[k] = carrier;
        carrier->output_index = k;
        old->output_index = -1;
        gwr_ir_tensor_swap_names(old, carrier);
    }
    net->last_moved = total - keep;
    GWR_IR_NOTIFY(net, tensor_replaced, old, nw);
    return GWR_OK;
}

gwr_status gwr_tensor_replace_all_uses_with(gwr_tensor *old_t, gwr_tensor *new_t) {
    return replace_uses(old_t, new_t, NULL);
}

gwr_status gwr_tensor_replace_all_uses_except(gwr_tensor *old_t, gwr_tensor *new_t, const gwr_layer *except) {
    return replace_uses(old_t, new_t, except);
}

/* ---- prune ---- */

static void drop_layer_edges(gwr_layer *l) {
    gwr_network *net = l->net;
    gwr_ir_attrs_free(l); /* subgraphs detach their reads of outer tensors */
    /* Its own reads left the use lists in sweep_dropped_uses. */
    /* Output 0 usually shares the layer's name (and so its hash). */
    uint32_t h = l->flags & LF_GEN_NAME ? 0 : gwr_ir_name_hash(l->name);
    for (int o = 0; o < l->noutputs; o++) {
        gwr_tensor *t = &gwr_ir_outputs(l)[o];
        gwr_ir_unname_tensor(net, t, t->name == l->name ? h : 0);
    }
    gwr_ir_unname_layer(net, l, h);
    gwr_ir_layer_props_drop(net, l);
    for (int o = 0; o < l->noutputs; o++) gwr_ir_props_drop(net, &gwr_ir_outputs(l)[o]);
    if (net->last_added == l) net->last_added = NULL;
}

/* Takes every dropped reader off the use lists of the dropped layers'
 * inputs, one pass per tensor: a search per edge cost O(n^2) for a tensor
 * that n dropped layers read (a chain that a rewrite collapsed onto one
 * tensor keeps its removed readers listed until prune). */
static void sweep_dropped_uses(gwr_layer *const *drop, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        for (int s = 0; s < drop[i]->ninputs; s++) {
            gwr_tensor *t = drop[i]->inputs[s];
            if (!t || (t->flags & TF_SWEPT)) continue;
            t->flags |= TF_SWEPT;
            gwr_use *u = gwr_ir_uses_of(t);
            int32_t k = 0;
            for (int32_t j = 0; j < t->nuses; j++) {
                if (u[j].layer->flags & LF_DROPPED)
                    gwr_ir_count_foreign(t, u[j].layer, -1);
                else
                    u[k++] = u[j];
            }
            t->nuses = k;
        }
    for (int64_t i = 0; i < n; i++)
        for (int s = 0; s < drop[i]->ninputs; s++)
            if (drop[i]->inputs[s]) drop[i]->inputs[s]->flags &= (uint8_t)~TF_SWEPT;
}

/* Marks with `live` every layer of net that a network output depends on
 * (a search from the outputs). On a removed layer that is still needed,
 * stops and leaves a message. */
static gwr_status mark_live(gwr_network *net, uint32_t live) {
    gwr_ir_lstack st = {0}, preds = {0};
    gwr_status s = GWR_OK;
    for (int64_t i = 0; i < net->noutputs && !s; i++) {
        gwr_layer *p = net->outputs[i]->producer;
        if (p && p->mark != live) {
            p->mark = live;
            if (gwr_ir_lpush(&st, p)) s = GWR_ERR_NOMEM;
        }
    }
    while (st.n && !s) {
        gwr_layer *x = st.v[--st.n];
        if (x->flags & LF_REMOVED) {
            /* Find who still needs it, for the message. */
            const char *by = "a network output";
            for (int o = 0; o < x->noutputs; o++) {
                gwr_tensor *t = &gwr_ir_outputs(x)[o];
                gwr_use *u = gwr_ir_uses_of(t);
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
        if (gwr_ir_preds_of(x, &preds)) {
            s = GWR_ERR_NOMEM;
            break;
        }
        for (int64_t k = 0; k < preds.n; k++)
            if (preds.v[k]->mark != live) {
                preds.v[k]->mark = live;
                if (gwr_ir_lpush(&st, preds.v[k])) {
                    s = GWR_ERR_NOMEM;
                    break;
                }
            }
    }
    gwr_free(st.v), gwr_free(preds.v);
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
static gwr_status mark_dead(gwr_network *net, uint32_t dead, gwr_ir_lstack *q) {
    int64_t n = net->nlayers;
    /* Readers not known to be dead; -1: makes a network output. */
    int64_t *left = gwr_malloc((size_t)(n ? n : 1) * sizeof *left);
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
            if (gwr_ir_lpush(q, l)) s = gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
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
            if (gwr_ir_lpush(q, p)) {
                s = gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
                break;
            }
        }
    }
    gwr_free(left);
    for (int64_t i = 0; removed < net->nremoved && !s && i < n; i++) {
        gwr_layer *x = net->layers[i];
        if (!(x->flags & LF_REMOVED) || x->mark == dead) continue;
        /* Needed: name a live reader, for the message. */
        const char *by = "a network output";
        for (int o = 0; o < x->noutputs; o++) {
            gwr_tensor *t = &gwr_ir_outputs(x)[o];
            gwr_use *u = gwr_ir_uses_of(t);
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
    gwr_ir_lstack drop = {0};
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
            if (gwr_ir_lpush(&drop, l)) s = gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
        }
    }
    if (s) {
        for (int64_t i = 0; i < drop.n; i++) drop.v[i]->flags &= (uint8_t)~LF_DROPPED;
        gwr_free(drop.v);
        return s;
    }
    for (int64_t i = 0; i < drop.n; i++) GWR_IR_NOTIFY(net, layer_dropped, drop.v[i]);
    sweep_dropped_uses(drop.v, drop.n);
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
    gwr_free(drop.v);
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
    gwr_status ts = gwr_ir_topo_order(net, &order, &cyc);
    if (ts == GWR_ERR_CYCLE) return gwr_ir_error(net, ts, "network '%s' has a cycle through layer '%s'", nn, cyc->name);
    if (ts) return gwr_ir_error(net, ts, "out of memory");
    gwr_free(order);
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
            gwr_use *u = gwr_ir_uses_of(t);
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
