/* clone.c - gwr_network_clone: a deep copy made with the IR's own calls
 * (add_input, add_layer, the attribute setters, set_graph, ...), so that
 * the copy keeps every invariant those calls keep and nothing here knows
 * the layout of a name map or a use list. On top of src/ir: nothing else
 * here uses it.
 *
 * A network is copied in steps, each over all its layers, because network
 * order need not be topological (set_input may have made a layer read a
 * later one) and a subgraph may read any tensor of an enclosing network:
 *   1. inputs (type, properties, default value);
 *   2. layers in network order, reading the copies of the inputs that
 *      already exist, with their outputs' types and properties;
 *   3. the inputs left out in 2 (a read of a later layer);
 *   4. attributes, in their order; a subgraph is copied by these same
 *      steps, then attached;
 *   5. network outputs, then removed marks (a marked output may be
 *      produced by a layer marked removed after it was marked);
 *   6. the name counter, so that the copy generates the names the original
 *      would.
 * A tensor of the source is found in the copy by position: the same input,
 * or the same output of the layer at the same index of the network that
 * corresponds to its own (a chain of scopes, innermost first). */
#include <stdlib.h>
#include <string.h>

#include "ir/ir_internal.h"

/* A source network and its copy; `up` is the enclosing pair. */
typedef struct clone_scope {
    const gwr_network *src;
    gwr_network *dst;
    const struct clone_scope *up;
    /* Inlining (gwr_network_inline_subgraph): the copy of src's layer k is
     * lmap[k], a layer of dst; tensors outside src's scope chain are
     * their own copies. NULL for a clone. */
    gwr_layer **lmap;
} clone_scope;

typedef struct clone_ctx {
    gwr_status st;
    char msg[GWR_ERRMSG_MAX];
    gwr_tensor **in;              /* scratch: a layer's inputs */
    const char **names;           /* scratch: its output names */
    int64_t incap, namescap;
} clone_ctx;

/* Records the first failure: its status, and the message the failing call
 * left on net (the thread's when it left none there). Returns 0. */
static int fail(clone_ctx *c, const gwr_network *net, gwr_status s) {
    if (c->st) return 0;
    c->st = s ? s : GWR_ERR_STATE;
    const char *m = net && net->errmsg[0] ? net->errmsg : gwr_last_errmsg();
    snprintf(c->msg, sizeof c->msg, "%s", m && *m ? m : "failed");
    return 0;
}

static int fail_msg(clone_ctx *c, gwr_status s, const char *msg, const char *name) {
    if (c->st) return 0;
    c->st = s;
    snprintf(c->msg, sizeof c->msg, "%s '%s'", msg, name);
    return 0;
}

/* The copy of t, or NULL when t's network is not in scope or its copy is
 * not made yet. */
static gwr_tensor *map_tensor(const clone_scope *sc, const gwr_tensor *t) {
    const gwr_network *tn = gwr_ir_tnet(t);
    for (; sc && sc->src != tn; sc = sc->up)
        if (!sc->up && sc->lmap) return (gwr_tensor *)t; /* outside the inlined body: itself */
    if (!sc) return NULL;
    if (!t->producer) return !sc->lmap && t->out_index < sc->dst->ninputs ? sc->dst->inputs[t->out_index] : NULL;
    int64_t k = t->producer->index;
    if (sc->lmap) return k < sc->src->nlayers && sc->lmap[k] ? &gwr_ir_outputs(sc->lmap[k])[t->out_index] : NULL;
    return k < sc->dst->nlayers ? &gwr_ir_outputs(sc->dst->layers[k])[t->out_index] : NULL;
}

/* ---- properties and types ---- */

static int copy_net_props(clone_ctx *c, const gwr_network *s, gwr_network *d) {
    for (int64_t i = 0; i < s->props.n; i++) {
        const gwr_prop *p = &s->props.v[i];
        gwr_status st = gwr_network_set_prop(d, p->key, p->val, p->len);
        if (st) return fail(c, d, st);
    }
    return 1;
}

static int copy_layer_props(clone_ctx *c, const gwr_layer *s, gwr_layer *d) {
    int n = gwr_layer_num_props(s);
    for (int i = 0; i < n; i++) {
        const char *k = gwr_layer_prop_key(s, i);
        size_t len = 0;
        const void *v = gwr_layer_prop(s, k, &len);
        gwr_status st = gwr_layer_set_prop(d, k, v, len);
        if (st) return fail(c, d->net, st);
    }
    return 1;
}

/* Value type and properties of tensor s onto its copy d. */
static int copy_tensor(clone_ctx *c, const gwr_tensor *s, gwr_tensor *d) {
    gwr_network *dn = gwr_ir_tnet(d);
    if (s->kind != GWR_VALUE_TENSOR || s->dtype != GWR_UNDEFINED || s->shape) {
        gwr_type ty;
        gwr_tensor_value_type(s, &ty);
        gwr_status st = gwr_tensor_set_value_type(d, &ty);
        if (st) return fail(c, dn, st);
    }
    int n = gwr_tensor_num_props(s);
    for (int i = 0; i < n; i++) {
        const char *k = gwr_tensor_prop_key(s, i);
        size_t len = 0;
        const void *v = gwr_tensor_prop(s, k, &len);
        gwr_status st = gwr_tensor_set_prop(d, k, v, len);
        if (st) return fail(c, dn, st);
    }
    return 1;
}

/* ---- steps 1 to 3: inputs and layers ---- */

static int copy_inputs(clone_ctx *c, const gwr_network *s, gwr_network *d) {
    for (int64_t i = 0; i < s->ninputs; i++) {
        const gwr_tensor *st = s->inputs[i];
        gwr_tensor *dt = gwr_network_add_input(d, st->name, GWR_UNDEFINED, -1, NULL);
        if (!dt) return fail(c, d, GWR_ERR_NOMEM);
        if (!copy_tensor(c, st, dt)) return 0;
        const gwr_weights *w = gwr_tensor_default(st);
        gwr_status r = w ? gwr_tensor_set_default(dt, w) : GWR_OK;
        if (r) return fail(c, d, r);
    }
    return 1;
}

/* The copy of s in sc->dst: named as s, or (fresh) with generated names. */
static gwr_layer *add_layer_copy(clone_ctx *c, const clone_scope *sc, const gwr_layer *s, int fresh) {
    gwr_network *d = sc->dst;
    if (gwr_grow((void **)&c->in, sizeof *c->in, &c->incap, s->ninputs ? s->ninputs : 1) ||
        gwr_grow((void **)&c->names, sizeof *c->names, &c->namescap, s->noutputs ? s->noutputs : 1))
        return fail_msg(c, GWR_ERR_NOMEM, "out of memory copying layer", s->name), NULL;
    for (int i = 0; i < s->ninputs; i++) c->in[i] = s->inputs[i] ? map_tensor(sc, s->inputs[i]) : NULL;
    for (int o = 0; o < s->noutputs; o++) c->names[o] = fresh ? NULL : gwr_ir_outputs(s)[o].name;
    gwr_layer *l = gwr_network_add_layer(d, s->info->name, s->info->domain, fresh ? NULL : s->name, s->ninputs, c->in,
                                         s->noutputs, c->names);
    if (!l) return fail(c, d, GWR_ERR_NOMEM), NULL;
    for (int o = 0; o < s->noutputs; o++)
        if (!copy_tensor(c, &gwr_ir_outputs(s)[o], &gwr_ir_outputs(l)[o])) return NULL;
    return copy_layer_props(c, s, l) ? l : NULL;
}

/* Step 3: the reads of tensors whose copies did not exist in step 2. */
static int wire_late_inputs(clone_ctx *c, const clone_scope *sc) {
    for (int64_t k = 0; k < sc->src->nlayers; k++) {
        const gwr_layer *s = sc->src->layers[k];
        gwr_layer *l = sc->dst->layers[k];
        for (int i = 0; i < s->ninputs; i++) {
            if (!s->inputs[i] || l->inputs[i]) continue;
            gwr_tensor *t = map_tensor(sc, s->inputs[i]);
            if (!t) return fail_msg(c, GWR_ERR_INVALID_GRAPH, "a layer reads a tensor out of scope:", s->inputs[i]->name);
            gwr_status st = gwr_layer_set_input(l, i, t);
            if (st) return fail(c, sc->dst, st);
        }
    }
    return 1;
}

/* ---- step 4: attributes ---- */

static gwr_network *clone_body(clone_ctx *c, const clone_scope *up, gwr_network *dparent, const gwr_network *s);

static int copy_graphs(clone_ctx *c, const clone_scope *sc, const gwr_attr *a, gwr_layer *l) {
    gwr_network **g = gwr_calloc((size_t)(a->n ? a->n : 1), sizeof *g);
    if (!g) return fail_msg(c, GWR_ERR_NOMEM, "out of memory copying the subgraphs of", l->name);
    int64_t n = 0;
    while (n < a->n && (g[n] = clone_body(c, sc, l->net, a->v.graphs[n]))) n++;
    gwr_status st = GWR_OK;
    if (n == a->n) {
        st = a->type == GWR_ATTR_GRAPH ? gwr_layer_set_graph(l, a->name, g[0]) : gwr_layer_set_graphs(l, a->name, g, n);
        if (st) fail(c, l->net, st);
    }
    if (n < a->n || st)
        while (n > 0) gwr_network_free(g[--n]); /* not attached: still ours */
    gwr_free(g);
    return !c->st;
}

static int copy_attr(clone_ctx *c, const clone_scope *sc, const gwr_attr *a, gwr_layer *l) {
    gwr_status st;
    switch (a->type) {
    case GWR_ATTR_INT: st = gwr_layer_set_int(l, a->name, a->v.i); break;
    case GWR_ATTR_FLOAT: st = gwr_layer_set_float(l, a->name, a->v.f); break;
    case GWR_ATTR_STRING: st = gwr_layer_set_bytes(l, a->name, a->v.s, (size_t)a->n); break;
    case GWR_ATTR_INTS: st = gwr_layer_set_ints(l, a->name, a->v.ints, a->n); break;
    case GWR_ATTR_FLOATS: st = gwr_layer_set_floats(l, a->name, a->v.floats, a->n); break;
    case GWR_ATTR_STRINGS: st = gwr_layer_set_bytes_list(l, a->name, a->v.strings, a->n); break;
    case GWR_ATTR_TENSOR: st = gwr_layer_set_tensor(l, a->name, &a->v.tensors[0]); break;
    case GWR_ATTR_TENSORS: st = gwr_layer_set_tensors(l, a->name, a->v.tensors, a->n); break;
    case GWR_ATTR_GRAPH:
    case GWR_ATTR_GRAPHS: return copy_graphs(c, sc, a, l);
    default: return fail_msg(c, GWR_ERR_INVALID_GRAPH, "an attribute of unknown type:", a->name);
    }
    return st ? fail(c, l->net, st) : 1;
}

/* ---- a network: steps 1 to 6 ---- */

static int copy_network(clone_ctx *c, const clone_scope *sc) {
    const gwr_network *s = sc->src;
    gwr_network *d = sc->dst;
    if (!copy_net_props(c, s, d) || !copy_inputs(c, s, d)) return 0;
    for (int64_t k = 0; k < s->nlayers; k++)
        if (!add_layer_copy(c, sc, s->layers[k], 0)) return 0;
    if (!wire_late_inputs(c, sc)) return 0;
    for (int64_t k = 0; k < s->nlayers; k++)
        for (int i = 0; i < s->layers[k]->nattrs; i++)
            if (!copy_attr(c, sc, &s->layers[k]->attrs[i], d->layers[k])) return 0;
    for (int64_t i = 0; i < s->noutputs; i++) {
        gwr_tensor *t = map_tensor(sc, s->outputs[i]);
        if (!t) return fail_msg(c, GWR_ERR_INVALID_GRAPH, "an output out of scope:", s->outputs[i]->name);
        gwr_status st = gwr_network_mark_output(d, t);
        if (st) return fail(c, d, st);
    }
    for (int64_t k = 0; k < s->nlayers; k++)
        if (s->layers[k]->flags & LF_REMOVED) gwr_layer_mark_as_removed(d->layers[k]);
    /* The tree's counter and floor (the outermost networks'): the copy goes
     * on naming past what the source had made. */
    gwr_network *dr = gwr_ir_name_root(d), *sr = gwr_ir_name_root((gwr_network *)s);
    if (dr->name_counter < sr->name_counter) dr->name_counter = sr->name_counter;
    if (dr->name_floor < sr->name_floor) dr->name_floor = sr->name_floor;
    return 1;
}

/* The copy of subgraph s, a subgraph of dparent not yet attached; NULL on
 * failure (recorded in c). */
static gwr_network *clone_body(clone_ctx *c, const clone_scope *up, gwr_network *dparent, const gwr_network *s) {
    gwr_network *d = gwr_network_new_subgraph(dparent, s->name);
    if (!d) {
        fail(c, NULL, GWR_ERR_NOMEM);
        return NULL;
    }
    clone_scope sc = {s, d, up, NULL};
    if (copy_network(c, &sc)) return d;
    gwr_network_free(d);
    return NULL;
}

/* The root's opsets and dimension symbols, the latter in the same order so
 * that every gwr_dim means the same symbol in both. */
static int copy_root_tables(clone_ctx *c, const gwr_network *s, gwr_network *d) {
    for (int64_t i = 0; i < s->nopsets; i++) {
        gwr_status st = gwr_network_set_opset(d, s->opsets[i].domain, s->opsets[i].version);
        if (st) return fail(c, d, st);
    }
    for (int64_t i = 0; i < s->nsyms; i++)
        if (gwr_network_dim_sym(d, s->syms[i]) != GWR_DIM_SYM_BASE - i) {
            if (d->errmsg[0]) return fail(c, d, GWR_ERR_NOMEM);
            return fail_msg(c, GWR_ERR_STATE, "symbol interned out of order:", s->syms[i]);
        }
    return 1;
}

gwr_network *gwr_network_clone(const gwr_network *src) {
    if (!src) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_clone: NULL network");
        return NULL;
    }
    if (src->parent) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_clone: '%s' is a subgraph; clone its root network",
                           src->name);
        return NULL;
    }
    gwr_network *d = gwr_network_new(src->name);
    if (!d) {
        gwr_set_last_error(GWR_ERR_NOMEM, "gwr_network_clone: out of memory");
        return NULL;
    }
    clone_ctx c = {0};
    clone_scope sc = {src, d, NULL, NULL};
    int ok = copy_root_tables(&c, src, d) && copy_network(&c, &sc);
    gwr_free(c.in), gwr_free(c.names);
    if (ok) return d;
    gwr_network_free(d);
    gwr_set_last_error(c.st, "gwr_network_clone: %s", c.msg);
    return NULL;
}

/* ---- inlining a body into its enclosing network ---- */

/* Layers in topological order (a reader after what it reads), each copied
 * with generated names, then their attributes (nested bodies by the steps
 * above, their reads of the inlined body's tensors pointing at the copies),
 * removed marks. On failure the copies made are marked removed. */
gwr_status gwr_network_inline_subgraph(gwr_network *body, gwr_tensor **outs) {
    if (!body || !outs || !body->parent)
        return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_inline_subgraph: %s",
                                  !body || !outs ? "NULL argument" : "not a subgraph");
    if (body->ninputs)
        return gwr_ir_error(body, GWR_ERR_INVALID_ARG, "gwr_network_inline_subgraph: '%s' has inputs", body->name);
    gwr_network *d = body->parent;
    int64_t n = body->nlayers;
    gwr_layer **order = gwr_calloc((size_t)(n ? n : 1), sizeof *order);
    gwr_layer **lmap = gwr_calloc((size_t)(n ? n : 1), sizeof *lmap);
    clone_ctx c = {0};
    clone_scope sc = {body, d, NULL, lmap};
    if (!order || !lmap) fail_msg(&c, GWR_ERR_NOMEM, "out of memory inlining", body->name);
    else {
        gwr_status st = gwr_network_topo_order(body, order);
        if (st) fail(&c, body, st);
    }
    for (int64_t k = 0; k < n && !c.st; k++) lmap[order[k]->index] = add_layer_copy(&c, &sc, order[k], 1);
    for (int64_t k = 0; k < n && !c.st; k++)
        for (int i = 0; i < body->layers[k]->nattrs && !c.st; i++)
            copy_attr(&c, &sc, &body->layers[k]->attrs[i], lmap[k]);
    for (int64_t i = 0; i < body->noutputs && !c.st; i++)
        if (!(outs[i] = map_tensor(&sc, body->outputs[i])))
            fail_msg(&c, GWR_ERR_INVALID_GRAPH, "an output out of scope:", body->outputs[i]->name);
    for (int64_t k = 0; k < n && lmap; k++)
        if (lmap[k] && (c.st || (body->layers[k]->flags & LF_REMOVED))) gwr_layer_mark_as_removed(lmap[k]);
    gwr_free(order), gwr_free(lmap), gwr_free(c.in), gwr_free(c.names);
    if (!c.st) return GWR_OK;
    return gwr_ir_error(d, c.st, "gwr_network_inline_subgraph: %s", c.msg);
}
