/* ir_api.h - what src/ir offers the rooms built on it (functional,
 * rewrite, onnx, passes) beside the public API of include/gwr/: the IR's
 * data structures, and the gwr_ir_* calls through which those rooms
 * change what the IR holds for them. The only header of src/ir that a file
 * outside src/ir may include; ir_internal.h is private to src/ir.
 *
 * The structs are READ-ONLY above ir. Reading their fields is allowed, in
 * hot loops too (the rewrite driver reads layers and use lists directly);
 * every change goes through the public API or a gwr_ir_* call below, so
 * that the IR alone keeps its invariants (name maps, use lists, ranks,
 * counts). Fields kept for another room (a layer's FLayerInfo, a tensor's
 * memo entry) have setters here, static inline where a million-layer pass
 * calls them. Not part of the public API. */
#ifndef GWR_IR_API_H
#define GWR_IR_API_H

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
/* TF_SWEPT: prune has taken the dropped readers off this tensor's use list
 * (set and cleared within one prune). */
enum { TF_INPUT = 1, TF_OWN_NAME = 2, TF_GEN_NAME = 8, TF_SWEPT = 16 };

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

/* LF_GEN_NAME: the layer's name came fresh from the counter and is found
 * through net->gen, not layer_names (see gwr_network.gen). */
/* LF_PROPS: the layer has had properties (its entry in net->objprops may
 * exist); without it, no lookup. A million-layer rewrite that records
 * provenance on the new layers would otherwise look every layer up. */
enum { LF_REMOVED = 1, LF_DROPPED = 2, LF_OWN_NAME = 4, LF_OWN_INPUTS = 8, LF_GEN_NAME = 32, LF_PROPS = 64 };

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

/* Named byte strings, in insertion order (src/ir/props.c). */
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
    /* The generated names' counter and floor: only the outermost network's
     * are used, for its whole tree (every If/Loop/Scan body in it), so
     * that generated names are unique across the model (gwr_ir_name_root). */
    uint64_t name_counter;
    /* Every name put in this network's maps (or a body's) other than a generated
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
    gwr_ptrmap objprops;          /* tensor -> gwr_props (rare: kept aside) */
    gwr_ptrmap layerprops;        /* layer -> gwr_props (every layer a rewrite made has
                                     provenance: apart, so that tensors' lookups stay cheap) */
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
    /* The uses the last replace_all_uses moved: during the tensor_replaced
     * event they are the last entries of the new tensor's use list, so a
     * listener can visit them alone. */
    int32_t last_moved;
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

/* ---- errors ---- */

/* Records a failure on net (the thread's last error for a NULL net) and
 * returns s. */
gwr_status gwr_ir_error(gwr_network *net, gwr_status s, const char *fmt, ...) GWR_PRINTF(3, 4);
/* Empties net's message: a callback that then fails without one is
 * reported with the network's message, which must be its own. */
static inline void gwr_ir_clear_error(gwr_network *net) { net->errmsg[0] = 0; }

/* ---- what the IR keeps for the rooms above ---- */

/* Per-network state of a room above (the FLayerInfo memo), freed with the
 * network by free_fn. */
void *gwr_ir_ext_get(const gwr_network *net, gwr_ext_slot slot);
void gwr_ir_ext_set(gwr_network *net, gwr_ext_slot slot, void *p, void (*free_fn)(void *));
/* The FLayerInfo recorded on l (functional room's; the IR only keeps it). */
static inline void gwr_ir_layer_set_flayer(gwr_layer *l, void *flayer) { l->flayer = flayer; }
/* Which entry of its network's FLayerInfo memo names t (0: none). */
static inline void gwr_ir_tensor_set_memo_ref(gwr_tensor *t, uint32_t ref) { t->memo_ref = ref; }
/* Marks net as driven by a rewrite or analysis manager (on = 1) or not
 * (0): while it is, prune, toposort and free refuse (GWR_ERR_STATE), since
 * they would move or drop layers the manager's worklist holds. */
void gwr_ir_network_set_driven(gwr_network *net, int on);

/* ---- layers and tensors ---- */

/* Undoes gwr_network_add_layer of a layer nothing reads yet (a builder
 * that failed after adding it). */
void gwr_ir_discard_new_layer(gwr_layer *l);
/* Every check gwr_tensor_replace_all_uses_with / _except makes, without
 * changing anything (old != nw, both non-NULL); *nmoving (may be NULL)
 * gets the number of uses that would move. Message on old's network. */
gwr_status gwr_ir_replace_check(gwr_tensor *old, gwr_tensor *nw, const gwr_layer *except, int64_t *nmoving);

/* Is b held by one reference only, and was it wrapped with this release
 * callback and context? The executor asks before it writes a layer's
 * output over a dying input's bytes: bytes of its own pool that no other
 * value (a view, a caller) still reads. */
int gwr_ir_buffer_is_sole(const gwr_buffer *b, void (*release)(void *ctx, const void *data, size_t size),
                          const void *ctx);

/* ---- comparison (compare.c), for the diff room ---- */
/* Are two attributes' values equal as gwr_network_equal compares them
 * (exactly; subgraphs recursively)? Their names are not compared. */
int gwr_ir_attr_equal(const gwr_attr *a, const gwr_attr *b);
/* Do two tensors (of any networks) have the same value type, symbolic
 * dims compared by name? */
int gwr_ir_type_equal(const gwr_tensor *a, const gwr_tensor *b);

/* provenance.c: the provenance JSON of a layer a rewrite labelled `rule`
 * made from layers from[0..n) (their own provenance nested), capped (see
 * include/gwr/ir.h). malloc'd; NULL when out of memory. */
char *gwr_ir_provenance_json(const char *rule, gwr_layer *const *from, int64_t n);
/* Reads provenance JSON (len bytes; contract in docs/design.md,
 * "Provenance"): *rule gets the top object's rule (malloc'd) and
 * name(ctx, s) is called for every layer name the tree holds (the string
 * items of every "from" and the "name" of every nested object), depth
 * first in text order. 0; -1 when the text is not provenance JSON (nested
 * past the depth cap included); -2 when memory ran out or name returned
 * nonzero (which stops the walk). *rule is NULL after a failure. */
int gwr_ir_provenance_read(const char *json, size_t len, char **rule, int (*name)(void *ctx, const char *s),
                           void *ctx);

#endif
