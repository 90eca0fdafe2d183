/* ir_internal.h - the IR's data structures, shared by the files of src/ir
 * and, read-only, by the rooms built on it. Not part of the public API. */
#ifndef GWR_IR_INTERNAL_H
#define GWR_IR_INTERNAL_H

#include "gwr/ir.h"
#include "util/util.h"

/* One use of a tensor: input `slot` of `layer`. */
typedef struct gwr_use {
    gwr_layer *layer;
    int32_t slot;
} gwr_use;

/* A shape interned in its root network: many tensors share one. */
typedef struct gwr_ishape {
    int32_t rank;
    gwr_dim dims[];
} gwr_ishape;

/* TF_GEN_NAME: the tensor's name was made from its generated layer's and
 * is found through net->gen, not tensor_names (see gwr_network.gen). */
enum { TF_INPUT = 1, TF_OWN_NAME = 2, TF_GEN_NAME = 8 };

/* Owned by its producer layer's block (layer outputs) or by the network
 * (graph inputs). `name` is first: the name maps read it as the key. */
struct gwr_tensor {
    const char *name;
    gwr_layer *producer;          /* NULL for a graph input (a gwr_input_tensor) */
    const gwr_ishape *shape;      /* NULL: unknown rank */
    union {
        gwr_use one;              /* when cap <= 1 */
        gwr_use *many;
    } uses;
    int32_t nuses, cap;
    int32_t out_index;            /* among producer outputs, or among net inputs */
    int32_t output_index;         /* among net outputs, or -1 */
    uint8_t dtype, kind, flags;
    uint32_t memo_ref;            /* the functional room's: which FLayerInfos name this
                                     tensor (an entry of its network's memo; 0: none) */
};

/* A new layer's rank is this far above its highest input's, so that a
 * chain a rewrite later inserts between two layers usually fits between
 * their ranks (see gwr_ir_lower_region in order.c) instead of raising every rank
 * downstream. */
#define GWR_RANK_STEP 8

/* LF_GEN_NAME: the layer's name came fresh from the counter and is found
 * through net->gen, not layer_names (see gwr_network.gen). */
enum { LF_REMOVED = 1, LF_DROPPED = 2, LF_OWN_NAME = 4, LF_OWN_INPUTS = 8, LF_GEN_NAME = 32 };

typedef struct gwr_attr {
    const char *name;             /* interned in the root network */
    gwr_attr_type type;
    int64_t n;                    /* element count (lists), byte length (string) */
    union {
        int64_t i;
        float f;
        char *s;
        int64_t *ints;
        float *floats;
        gwr_bytes *strings;       /* n entries, each malloc'd */
        gwr_weights *tensors;     /* n entries (1 for TENSOR) */
        gwr_network **graphs;     /* n entries (1 for GRAPH) */
    } v;
} gwr_attr;

/* A graph input: the tensor knows its network through this wrapper (a
 * layer's outputs know it through their producer), which keeps the common
 * tensor small. */
typedef struct gwr_input_tensor {
    gwr_tensor t;
    gwr_network *net;
} gwr_input_tensor;

/* One malloc block: the layer, then its output tensors, then its input
 * slots, then its name. */
struct gwr_layer {
    const char *name;
    gwr_network *net;
    const gwr_op_info *info;      /* the op table's entry, or an interned one for custom ops */
    gwr_tensor **inputs;
    gwr_attr *attrs;
    int32_t index;                /* position in net->layers (networks hold < 2^31 layers) */
    int32_t rank;                 /* pseudo-topological: producers rank lower */
    int32_t ninputs, incap, noutputs;
    int32_t nattrs;
    uint32_t mark;                /* traversal epoch */
    uint16_t op_id;
    uint8_t type, flags;
    void *flayer;                 /* the functional room's FLayerInfo recorded on the layer, or NULL */
};

static inline gwr_tensor *gwr_ir_outputs(const gwr_layer *l) { return (gwr_tensor *)(l + 1); }

/* The network a tensor belongs to. */
static inline gwr_network *gwr_ir_tnet(const gwr_tensor *t) {
    return t->producer ? t->producer->net : ((const gwr_input_tensor *)(const void *)t)->net;
}

/* A hash set of objects keyed by their name (first field): linear probing
 * with 32 bits of each name's hash kept in the slot, so a probe touches an
 * object only when the hashes match and growing never re-reads names. The
 * hash and the pointer share one 12-byte slot (the pointer unaligned, read
 * with memcpy): a lookup in a big network's map costs one cache miss, not
 * one in a hash array and another in a pointer array. */
typedef struct gwr_name_slot {
    uint32_t hash;                /* 0: empty (hashes are made nonzero) */
    unsigned char obj[sizeof(void *)];
} gwr_name_slot;
typedef struct gwr_namemap {
    gwr_name_slot *slots;
    int64_t cap, count;
} gwr_namemap;

typedef enum { GWR_EXT_FLAYER_MEMO = 0, GWR_EXT_COUNT } gwr_ext_slot;

/* Named byte strings, in insertion order (props.c). */
typedef struct gwr_prop {
    char *key;
    char *val;                    /* len bytes + NUL */
    size_t len;
} gwr_prop;
typedef struct gwr_props {
    gwr_prop *v;
    int64_t n, cap;
} gwr_props;

typedef struct gwr_opset {
    const char *domain;           /* interned */
    int64_t version;
} gwr_opset;

typedef struct gwr_listener_entry {
    gwr_listener ls;
    int id;
} gwr_listener_entry;

struct gwr_network {
    char *name;
    gwr_network *parent, *root;
    gwr_layer *owner;
    gwr_layer **layers;
    int64_t nlayers, layers_cap, nremoved;
    gwr_tensor **inputs;
    int64_t ninputs, inputs_cap;
    gwr_tensor **outputs;
    int64_t noutputs, outputs_cap;
    gwr_namemap layer_names, tensor_names;
    gwr_listener_entry *listeners;
    int64_t nlisteners, listeners_cap;
    int next_listener_id;
    uint32_t epoch;
    uint64_t name_counter;
    /* Every name put in this network's maps other than a generated
     * "<base>_<n>" (or "<base>_<n>:<i>") whose last '_' is followed by
     * digits has that number below name_floor: a name generated with a
     * counter value >= name_floor cannot be taken, and add_layer skips
     * looking it up (see gwr_ir_next_name in names.c). */
    uint64_t name_floor;
    /* Generated names, kept out of the maps: a layer added with a fresh
     * counter name "<op>_<n>" (n < GWR_GEN_MAX) is gen[n], marked
     * LF_GEN_NAME, and its outputs named after it ("<op>_<n>",
     * "<op>_<n>:<i>") are marked TF_GEN_NAME; none of them is in
     * layer_names or tensor_names. A lookup that misses the maps parses n
     * (and i) back from the name. A layer built by a rewrite then costs no
     * name-map slot, and no cache miss to insert or delete one, which is
     * most of what naming costs in a network of a million layers. gen[n]
     * is cleared when neither the layer nor an output keeps the mark.
     * ngen_*: how many layers and tensors are marked (verify counts them
     * with the maps). */
    gwr_layer **gen;
    int64_t gen_cap, ngen_layers, ngen_tensors;
    gwr_layer *last_added;
    gwr_props props;              /* the network's own */
    gwr_ptrmap objprops;          /* layer or tensor -> gwr_props (rare: kept aside) */
    gwr_ptrmap vtypes;            /* tensor -> gwr_type, for non-tensor kinds */
    gwr_ptrmap defaults;          /* graph input -> gwr_weights */
    void *ext[GWR_EXT_COUNT];
    void (*ext_free[GWR_EXT_COUNT])(void *);
    int tearing_down;
    /* Set while a rewrite manager drives this network: prune, toposort
     * and free would move or drop layers its worklist holds. */
    int driven;
    /* Graph-valued attributes held by this network's layers: while 0,
     * walks skip looking for subgraphs in every layer's attributes. */
    int64_t ngraph_attrs;
    /* Uses of this network's tensors by layers of other networks (its
     * subgraphs, attached or not): while 0, and ngraph_attrs is 0, a
     * tensor's use list names all its readers and they are all layers of
     * this network (prune counts on it). */
    int64_t nforeign_uses;
    /* root only */
    gwr_arena arena;              /* interned strings and shapes */
    gwr_strmap strings;           /* interned strings */
    gwr_strmap custom_ops;        /* "domain\x1fop" -> gwr_op_info of ops the table lacks */
    void **shapes;                /* interned shape set */
    const gwr_ishape *last_shape; /* the last one interned or found */
    int64_t shapes_cap, nshapes;
    const char **syms;
    int64_t nsyms, syms_cap;
    gwr_strmap sym_index;         /* name -> index + 1 */
    gwr_opset *opsets;
    int64_t nopsets, opsets_cap;
    char errmsg[GWR_ERRMSG_MAX];
};

/* Records a failure on net (and returns s). */
gwr_status gwr_ir_error(gwr_network *net, gwr_status s, const char *fmt, ...) GWR_PRINTF(3, 4);
/* Interns a string in net's root; NULL on allocation failure. */
const char *gwr_ir_intern(gwr_network *net, const char *s);
/* Interns a shape; NULL when rank < 0 or on allocation failure. */
const gwr_ishape *gwr_ir_intern_shape(gwr_network *net, int rank, const gwr_dim *dims);
/* Per-network state of the rooms above ir (the FLayerInfo memo). */
void *gwr_ir_ext_get(const gwr_network *net, gwr_ext_slot slot);
void gwr_ir_ext_set(gwr_network *net, gwr_ext_slot slot, void *p, void (*free_fn)(void *));
/* Is `anc` the network `net` or one of its ancestors? */
int gwr_ir_in_scope(const gwr_network *anc, const gwr_network *net);
/* Deep copy / release of weights (buffer retained / released). */
gwr_status gwr_ir_weights_copy(gwr_weights *dst, const gwr_weights *src);
void gwr_ir_weights_clear(gwr_weights *w);
/* Frees a layer's attributes (network.c). */
void gwr_ir_attrs_free(gwr_layer *l);
/* The network's errmsg buffer to write into. */
#define GWR_IR_ERRBUF(net) ((net)->errmsg)

#endif
