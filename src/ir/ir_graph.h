/* ir_graph.h - functions the files of src/ir call across each other. */
#ifndef GWR_IR_GRAPH_H
#define GWR_IR_GRAPH_H

#include "ir/ir_internal.h"

/* Calls listener callback `cb` of net with the given arguments. */
#define GWR_IR_NOTIFY(net, cb, ...)                                         \
    do {                                                                    \
        for (int64_t li_ = 0; li_ < (net)->nlisteners; li_++)               \
            if ((net)->listeners[li_].ls.cb)                                \
                (net)->listeners[li_].ls.cb((net)->listeners[li_].ls.ctx, __VA_ARGS__); \
    } while (0)

/* network.c */
uint32_t gwr_ir_name_hash(const char *name);
void *gwr_ir_namemap_get(const gwr_namemap *m, const char *name);
void *gwr_ir_namemap_get_h(const gwr_namemap *m, const char *name, uint32_t h);
int gwr_ir_namemap_put(gwr_namemap *m, void *obj);
int gwr_ir_namemap_put_h(gwr_namemap *m, void *obj, uint32_t h);
void gwr_ir_namemap_del(gwr_namemap *m, void *obj);
/* Starts loading the slot where a lookup of hash h begins. */
void gwr_ir_namemap_prefetch(const gwr_namemap *m, uint32_t h);
/* h: gwr_ir_name_hash of obj's name, when the caller has it. */
void gwr_ir_namemap_del_h(gwr_namemap *m, void *obj, uint32_t h);
/* Name lookups in a network: its maps, then its generated names. */
gwr_layer *gwr_ir_find_layer(const gwr_network *net, const char *name);
gwr_tensor *gwr_ir_find_tensor(const gwr_network *net, const char *name);
/* Takes a layer's or tensor's name out of where lookups find it (before
 * the name changes or the object goes). h: the name's hash, or 0. */
void gwr_ir_unname_layer(gwr_network *net, gwr_layer *l, uint32_t h);
void gwr_ir_unname_tensor(gwr_network *net, gwr_tensor *t, uint32_t h);
gwr_status gwr_ir_tensor_rename(gwr_tensor *t, const char *name);
gwr_status gwr_ir_tensor_own_name(gwr_tensor *t);
void gwr_ir_tensor_swap_names(gwr_tensor *a, gwr_tensor *b);
void gwr_ir_layer_free(gwr_layer *l);
void gwr_ir_network_destroy(gwr_network *net);
void gwr_ir_type_free(gwr_type *ty);

/* graph.c */
/* Use lists: 0 / -1 on allocation failure. */
int gwr_ir_use_add(gwr_tensor *t, gwr_layer *l, int slot);
void gwr_ir_use_del(gwr_tensor *t, gwr_layer *l, int slot);
/* The layer of `net` that (through nested subgraphs) contains layer u, or
 * NULL when u's network is not (yet) attached below net. */
gwr_layer *gwr_ir_consumer_in(gwr_layer *u, const gwr_network *net);
/* Would an edge from P to C (same network) close a cycle? */
int gwr_ir_would_cycle(gwr_layer *P, gwr_layer *C);
/* l (in a subgraph) reads t of an enclosing network: record the implied
 * edge from t's producer to l's enclosing layer (ranks). */
void gwr_ir_capture_edge(gwr_tensor *t, gwr_layer *l);
/* Every check gwr_tensor_replace_all_uses_with / _except makes, without
 * changing anything (old != nw, both non-NULL); *nmoving (may be NULL)
 * gets the number of uses that would move. Message on old's network. */
gwr_status gwr_ir_replace_check(gwr_tensor *old, gwr_tensor *nw, const gwr_layer *except, int64_t *nmoving);
/* Attaching subgraph g to layer l: refuses (GWR_ERR_CYCLE) when a tensor g
 * reads from l's network depends on l; otherwise records the edges. */
gwr_status gwr_ir_attach_check(gwr_layer *l, gwr_network *g);
void gwr_ir_attach_edges(gwr_layer *l, gwr_network *g);
/* Recomputes every rank of net from its edges (see raise_rank). */
void gwr_ir_retighten_ranks(gwr_network *net);
/* Undoes gwr_network_add_layer of a layer nothing reads yet. */
void gwr_ir_discard_new_layer(gwr_layer *l);

/* props.c: drops the properties (and default value) kept for a layer or
 * tensor; frees everything a network keeps aside at destruction. */
void gwr_ir_props_drop(gwr_network *net, const void *obj);
void gwr_ir_props_destroy(gwr_network *net);

/* attrs.c */
gwr_status gwr_ir_weights_check(gwr_network *net, const gwr_weights *w);

#endif
