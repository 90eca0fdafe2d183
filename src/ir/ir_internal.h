/* ir_internal.h - private to src/ir: what its files share beyond
 * ir_api.h (which rooms above ir see). Tests and benchmarks may include it
 * to look inside. */
#ifndef GWR_IR_INTERNAL_H
#define GWR_IR_INTERNAL_H

#include "ir/ir_api.h"

/* A new layer's rank is this far above its highest input's, so that a
 * chain a rewrite later inserts between two layers usually fits between
 * their ranks (see gwr_ir_lower_region in order.c) instead of raising
 * every rank downstream. */
#define GWR_RANK_STEP 8

/* Calls listener callback `cb` of net with the given arguments. */
#define GWR_IR_NOTIFY(net, cb, ...)                                         \
    do {                                                                    \
        for (int64_t li_ = 0; li_ < (net)->nlisteners; li_++)               \
            if ((net)->listeners[li_].ls.cb)                                \
                (net)->listeners[li_].ls.cb((net)->listeners[li_].ls.ctx, __VA_ARGS__); \
    } while (0)

/* The files of src/ir use each other in one direction only; each may
 * call the ones listed before it here (and core.c, optable.c):
 * intern.c, names.c, weights.c, types.c, props.c, provenance.c, order.c, network.c,
 * attrs.c, layer.c, graph.c; compare.c, clone.c and dot.c on top. Below, what
 * each one offers the others (beyond ir_api.h). */

/* intern.c */
/* Interns a string in net's root; NULL on allocation failure. */
const char *gwr_ir_intern(gwr_network *net, const char *s);
/* Interns a shape; NULL when rank < 0 or on allocation failure. */
const gwr_ishape *gwr_ir_intern_shape(gwr_network *net, int rank, const gwr_dim *dims);
/* Is `anc` the network `net` or one of its ancestors? */
int gwr_ir_in_scope(const gwr_network *anc, const gwr_network *net);

/* names.c */
uint32_t gwr_ir_name_hash(const char *name);
void *gwr_ir_namemap_get(const gwr_namemap *m, const char *name);
void *gwr_ir_namemap_get_h(const gwr_namemap *m, const char *name, uint32_t h);
int gwr_ir_namemap_put(gwr_namemap *m, void *obj);
/* Makes room for `extra` more names, so that as many puts cannot fail:
 * 0, or -1 on allocation failure (the map unchanged). */
int gwr_ir_namemap_reserve(gwr_namemap *m, int64_t extra);
int gwr_ir_namemap_put_h(gwr_namemap *m, void *obj, uint32_t h);
void gwr_ir_namemap_del(gwr_namemap *m, void *obj);
/* Starts loading the slot where a lookup of hash h begins. */
void gwr_ir_namemap_prefetch(const gwr_namemap *m, uint32_t h);
/* h: gwr_ir_name_hash of obj's name, when the caller has it. */
void gwr_ir_namemap_del_h(gwr_namemap *m, void *obj, uint32_t h);
/* Puts obj (named name, hash h) in map m of net, keeping the tree's
 * name_floor (the outermost network's) above the number its name ends
 * with; -1 on allocation failure. */
int gwr_ir_name_put(gwr_network *net, gwr_namemap *m, void *obj, uint32_t h);
/* Name lookups in a network: its maps, then its generated names. */
gwr_layer *gwr_ir_find_layer(const gwr_network *net, const char *name);
gwr_tensor *gwr_ir_find_tensor(const gwr_network *net, const char *name);
gwr_layer *gwr_ir_find_layer_h(const gwr_network *net, const char *name, uint32_t h);
gwr_tensor *gwr_ir_find_tensor_h(const gwr_network *net, const char *name, uint32_t h);
/* Generated names "<op>_<n>" with n below this live in net->gen. */
#define GWR_GEN_MAX (INT64_C(1) << 31)
/* "<base>_<n>" with the next value of the counter of net's whole tree
 * (the outermost network's), into buf (160 bytes); *hash gets its hash,
 * *fresh (may be NULL) whether it is known to be free in every network of
 * the tree without looking, *num (may be NULL) n. */
const char *gwr_ir_next_name(gwr_network *net, const char *base, char *buf, uint32_t *hash, int *fresh,
                             uint64_t *num);
/* The outermost network of net's tree, which names for all of it. */
gwr_network *gwr_ir_name_root(gwr_network *net);
/* gwr_ir_next_name until the name is free among net's tensors. */
const char *gwr_ir_unique_tensor_name(gwr_network *net, const char *base, char *buf, uint32_t *hash);
/* 0 (message on net) for an empty name; `what` names the object. */
int gwr_ir_name_ok(gwr_network *net, const char *name, const char *what);
/* Takes a layer's or tensor's name out of where lookups find it (before
 * the name changes or the object goes). h: the name's hash, or 0. */
void gwr_ir_unname_layer(gwr_network *net, gwr_layer *l, uint32_t h);
void gwr_ir_unname_tensor(gwr_network *net, gwr_tensor *t, uint32_t h);
gwr_status gwr_ir_tensor_rename(gwr_tensor *t, const char *name);
gwr_status gwr_ir_tensor_own_name(gwr_tensor *t);
void gwr_ir_tensor_swap_names(gwr_tensor *a, gwr_tensor *b);

/* weights.c */
gwr_status gwr_ir_weights_check(gwr_network *net, const gwr_weights *w);
/* Deep copy / release of weights (buffer retained / released). */
gwr_status gwr_ir_weights_copy(gwr_weights *dst, const gwr_weights *src);
void gwr_ir_weights_clear(gwr_weights *w);

/* types.c */
void gwr_ir_type_free(gwr_type *ty);
/* Drops the value type kept for a tensor of a non-tensor kind. */
void gwr_ir_tensor_drop_vtype(gwr_tensor *t);

/* props.c: drops the properties (and default value) kept for a layer or
 * tensor; frees everything a network keeps aside at destruction. */
void gwr_ir_props_drop(gwr_network *net, const void *obj); /* a tensor's (and its default) */
void gwr_ir_layer_props_drop(gwr_network *net, gwr_layer *l);
void gwr_ir_props_destroy(gwr_network *net);

/* order.c */
static inline gwr_use *gwr_ir_uses_of(gwr_tensor *t) { return t->cap <= 1 ? &t->uses.one : t->uses.many; }
/* Room for `need` uses of t: 0, or -1 on allocation failure. */
int gwr_ir_uses_reserve(gwr_tensor *t, int64_t need);
/* Keeps the count of uses of t's network's tensors by other networks'
 * layers (d: +1 or -1 for a use of t by l). */
static inline void gwr_ir_count_foreign(gwr_tensor *t, const gwr_layer *l, int d) {
    gwr_network *tn = gwr_ir_tnet(t);
    if (l->net != tn) tn->nforeign_uses += d;
}
/* Use lists: 0 / -1 on allocation failure. */
int gwr_ir_use_add(gwr_tensor *t, gwr_layer *l, int slot);
void gwr_ir_use_del(gwr_tensor *t, gwr_layer *l, int slot);
/* The layer of `net` that (through nested subgraphs) contains layer u, or
 * NULL when u's network is not (yet) attached below net. */
static inline gwr_layer *gwr_ir_consumer_in(gwr_layer *u, const gwr_network *net) {
    while (u && u->net != net) u = u->net->owner;
    return u;
}
/* A growable stack of layers. */
typedef struct gwr_ir_lstack {
    gwr_layer **v;
    int64_t n, cap;
} gwr_ir_lstack;
static inline int gwr_ir_lpush(gwr_ir_lstack *s, gwr_layer *l) {
    if (gwr_grow((void **)&s->v, sizeof *s->v, &s->cap, s->n + 1)) return -1;
    s->v[s->n++] = l;
    return 0;
}
/* Appends the producers (in x's network) that x depends on; -1 on
 * allocation failure. */
int gwr_ir_preds_of(gwr_layer *x, gwr_ir_lstack *out);
/* Would an edge from P to C (same network) close a cycle? */
int gwr_ir_would_cycle(gwr_layer *P, gwr_layer *C);
/* Re-ranks the layers upstream of P ranked >= bound tightly (before an
 * edge P -> C with bound = rank(C)); ranks only go down. */
void gwr_ir_lower_region(gwr_layer *P, int32_t bound);
/* Raises C's rank (C may be NULL) to at least min and repairs ranks
 * downstream. */
void gwr_ir_raise_rank(gwr_layer *C, int64_t min);
/* l (in a subgraph) reads t of an enclosing network: record the implied
 * edge from t's producer to l's enclosing layer (ranks). */
void gwr_ir_capture_edge(gwr_tensor *t, gwr_layer *l);
/* Attaching subgraph g to layer l: refuses (GWR_ERR_CYCLE) when a tensor g
 * reads from l's network depends on l; otherwise records the edges. */
gwr_status gwr_ir_attach_check(gwr_layer *l, gwr_network *g);
void gwr_ir_attach_edges(gwr_layer *l, gwr_network *g);
/* A stable topological order of net's layers (malloc'd, into *order); on
 * a cycle GWR_ERR_CYCLE and a layer on it. No message. */
gwr_status gwr_ir_topo_order(gwr_network *net, gwr_layer ***order, gwr_layer **on_cycle);
/* Recomputes every rank of net from its edges (see gwr_ir_raise_rank). */
void gwr_ir_retighten_ranks(gwr_network *net);

/* network.c */
/* Frees an attribute's value (a subgraph with it). */
void gwr_ir_attr_clear(gwr_network *net, gwr_attr *a);
/* Frees a layer's attributes. */
void gwr_ir_attrs_free(gwr_layer *l);
void gwr_ir_layer_free(gwr_layer *l);
void gwr_ir_network_destroy(gwr_network *net);

#endif
