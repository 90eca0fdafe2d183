/* gwr/ir.h - the network IR: a graph of layers and tensors, in the manner of
 * TensorRT's INetworkDefinition.
 *
 * Ownership: a gwr_network owns every layer, tensor, attribute and nested
 * network reachable from it; handles stay valid until gwr_network_prune
 * drops their layer, or the network is freed. Strings returned by getters
 * live as long as their object. Nothing here is thread-safe for concurrent
 * mutation of one network; distinct networks are independent. */
#ifndef GWR_IR_H
#define GWR_IR_H

#include <stdio.h>

#include "gwr/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gwr_network gwr_network;
typedef struct gwr_layer gwr_layer;
typedef struct gwr_tensor gwr_tensor;

/* ---- the op table ------------------------------------------------------ */

/* TensorRT-style layer classes. */
typedef enum gwr_layer_type {
#define GWR_LAYER_CLASS(id) GWR_LAYER_##id,
#include "gwr/layer_classes.def"
#undef GWR_LAYER_CLASS
    GWR_LAYER_TYPE_COUNT
} gwr_layer_type;

/* For the ELEMENTWISE class: TensorRT's ElementWiseOperation, and a few it
 * lacks; GWR_EW_NONE for every other class. */
typedef enum gwr_ew_op {
#define GWR_EW_OP(id) GWR_EW_##id,
#include "gwr/ew_ops.def"
#undef GWR_EW_OP
    GWR_EW_OP_COUNT
} gwr_ew_op;

/* Every op the table knows, as GWR_OP_<domain-tag>_<Name>; GWR_OP_CUSTOM is
 * any other op (another domain, or a name the table lacks): such layers are
 * of class PLUGIN and are never rejected. */
typedef enum gwr_op_id {
    GWR_OP_CUSTOM = 0,
#define GWR_OP(id, name, domain, cls, ew, min_in, max_in, min_out, max_out, flags, since) GWR_OP_##id,
#include "gwr/ops.def"
#undef GWR_OP
    GWR_OP_COUNT
} gwr_op_id;

/* Op flags (the `flags` column of ops.def). */
#define GWR_OPF_COMMUTATIVE 1u   /* binary op whose two inputs may be swapped */
#define GWR_OPF_VARIADIC 2u      /* max_in is unbounded (ops.def writes -1) */
#define GWR_OPF_RANDOM 4u        /* output depends on a random generator */
#define GWR_OPF_SUBGRAPH 8u      /* has graph-valued attributes (If, Loop, Scan) */

typedef struct gwr_op_info {
    gwr_op_id id;
    const char *name;      /* ONNX op_type, e.g. "Add" */
    const char *domain;    /* "" for the default domain, "ai.onnx.ml", "gwr" */
    gwr_layer_type layer_type;
    gwr_ew_op ew_op;
    int min_inputs, max_inputs;   /* max -1: variadic */
    int min_outputs, max_outputs; /* max -1: variadic */
    unsigned flags;
    int since_version;     /* opset in which the op first appeared */
} gwr_op_info;

GWR_API const char *gwr_layer_type_name(gwr_layer_type t); /* "ELEMENTWISE" */
GWR_API const char *gwr_ew_op_name(gwr_ew_op op);          /* "SUM" */
/* The entry for an id; NULL for GWR_OP_CUSTOM or out of range. */
GWR_API const gwr_op_info *gwr_op_info_get(gwr_op_id id);
/* Looks an op up by domain ("" or "ai.onnx" for the default) and name;
 * GWR_OP_CUSTOM when the table does not know it. O(1). */
GWR_API gwr_op_id gwr_op_lookup(const char *domain, const char *name);

/* ---- networks ---------------------------------------------------------- */

/* A new empty network named `name` (may be NULL). NULL on allocation
 * failure, with gwr_last_errmsg() set. Free with gwr_network_free. */
GWR_API gwr_network *gwr_network_new(const char *name);
/* A new empty network nested in `parent`: the body of an If/Loop/Scan. Its
 * layers may read tensors of `parent` and its ancestors. Owned by the
 * caller until attached to a layer with gwr_layer_set_graph, then by that
 * layer. NULL when parent is NULL. */
GWR_API gwr_network *gwr_network_new_subgraph(gwr_network *parent, const char *name);
/* Frees a network and everything it owns. A subgraph still attached to a
 * layer is not freed (the layer owns it): that call is refused and leaves
 * a message on the subgraph. NULL is ignored. */
GWR_API void gwr_network_free(gwr_network *net);

/* The message of the last failing call on this network (or any of its
 * layers and tensors); "" when none. Never NULL. */
GWR_API const char *gwr_network_errmsg(const gwr_network *net);
/* Leaves a failure message on net, as gwr's own calls do, and returns s
 * (the status gwr_last_status() then gives). For code that reports
 * through the network rather than returning a message: a plugin's infer
 * function (gwr_plugin_infer_fn), a registered functional. A NULL net
 * writes gwr_last_errmsg() instead. */
GWR_API gwr_status gwr_network_error(gwr_network *net, gwr_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
GWR_API const char *gwr_network_name(const gwr_network *net);
GWR_API gwr_status gwr_network_set_name(gwr_network *net, const char *name);
/* The enclosing network of a subgraph, or NULL. */
GWR_API gwr_network *gwr_network_parent(const gwr_network *net);
/* The layer whose attribute holds this subgraph, or NULL. */
GWR_API gwr_layer *gwr_network_owner(const gwr_network *net);

/* Graph inputs. dims may be NULL when rank is -1 (unknown rank). */
GWR_API gwr_tensor *gwr_network_add_input(gwr_network *net, const char *name, gwr_dtype dtype,
                                          int rank, const gwr_dim *dims);
GWR_API int gwr_network_num_inputs(const gwr_network *net);
GWR_API gwr_tensor *gwr_network_input(const gwr_network *net, int i);
/* Removes graph input t, which nothing may read any more (no users, not
 * even layers marked removed: replace its uses first) and which is no
 * network output (GWR_ERR_STATE); its default value and properties go with
 * it and t is freed. The later inputs move up one place. */
GWR_API gwr_status gwr_network_remove_input(gwr_network *net, gwr_tensor *t);

/* Graph outputs, in order. A tensor may be marked once. */
GWR_API gwr_status gwr_network_mark_output(gwr_network *net, gwr_tensor *t);
GWR_API gwr_status gwr_network_unmark_output(gwr_network *net, gwr_tensor *t);
GWR_API int gwr_network_num_outputs(const gwr_network *net);
GWR_API gwr_tensor *gwr_network_output(const gwr_network *net, int i);

/* Layers in network order (creation order until gwr_network_toposort
 * reorders them). Removed layers stay listed, flagged, until prune. */
GWR_API int64_t gwr_network_num_layers(const gwr_network *net);
GWR_API gwr_layer *gwr_network_layer(const gwr_network *net, int64_t i);
/* Layers not marked as removed. O(1). */
GWR_API int64_t gwr_network_num_live_layers(const gwr_network *net);

/* O(1) lookup by name in this network only; NULL when absent. */
GWR_API gwr_layer *gwr_network_find_layer(const gwr_network *net, const char *name);
GWR_API gwr_tensor *gwr_network_find_tensor(const gwr_network *net, const char *name);
/* Like find_tensor, then through the enclosing networks (a subgraph's view
 * of the names in scope). */
GWR_API gwr_tensor *gwr_network_lookup_tensor(const gwr_network *net, const char *name);

/* Interns a symbolic dimension ("batch") and returns its gwr_dim (<=
 * GWR_DIM_SYM_BASE). A subgraph shares its root network's symbols.
 * GWR_DIM_UNKNOWN on bad input (message on net). */
GWR_API gwr_dim gwr_network_dim_sym(gwr_network *net, const char *name);
/* Name of a symbolic dim, NULL when d is not a symbol of this network. */
GWR_API const char *gwr_network_dim_name(const gwr_network *net, gwr_dim d);

/* A new layer of op `op` in `domain` ("" = ONNX default), reading `inputs`
 * (an entry may be NULL: an absent optional input) and producing `noutputs`
 * tensors of undefined type. name NULL: a unique name is made from the op.
 * output_names NULL (or an entry NULL): made from the layer name. Inputs
 * must belong to this network or an enclosing one. NULL on error, with the
 * message on net. */
GWR_API gwr_layer *gwr_network_add_layer(gwr_network *net, const char *op, const char *domain,
                                         const char *name, int ninputs, gwr_tensor *const *inputs,
                                         int noutputs, const char *const *output_names);
/* A CONSTANT layer (op Constant, attribute "value") holding w; the buffer
 * is shared (retained), dims and name copied. Returns its output. */
GWR_API gwr_tensor *gwr_network_add_constant(gwr_network *net, const char *name,
                                             const gwr_weights *w);

/* Drops every removed layer and every layer that no network output (of
 * this network, or of a subgraph reading it) depends on, then compacts
 * network order. Inputs stay. *nremoved (may be NULL) gets the count. A
 * removed layer whose outputs still feed a live layer or an output is an
 * error (GWR_ERR_STATE) and nothing is dropped. Handles of dropped layers
 * and their tensors become invalid. */
GWR_API gwr_status gwr_network_prune(gwr_network *net, int64_t *nremoved);
/* Checks every invariant: use lists match inputs, no cycle, unique names,
 * every input tensor produced or a graph input in scope, output marks,
 * types of constants, nested graphs. GWR_ERR_INVALID_GRAPH (or
 * GWR_ERR_CYCLE) with a message saying exactly what is wrong. */
GWR_API gwr_status gwr_network_verify(gwr_network *net);
/* Reorders the layers topologically, keeping network order wherever it
 * already is one (stable). Iterative: any depth. GWR_ERR_CYCLE naming a
 * layer on the cycle, order unchanged. Removed layers keep their place
 * relative to their inputs. */
GWR_API gwr_status gwr_network_toposort(gwr_network *net);
/* Graphviz DOT: layers as nodes (op and name; domain for plugins), tensors
 * as edges labelled with dtype and shape, inputs and outputs as
 * ellipses, constants drawn small; removed layers left out. */
GWR_API gwr_status gwr_network_write_dot(gwr_network *net, FILE *out);

/* Like gwr_network_toposort, without reordering: writes a stable
 * topological order of all num_layers layers to `order` (caller's array). */
GWR_API gwr_status gwr_network_topo_order(gwr_network *net, gwr_layer **order);

/* Opset imports, kept by the root network (subgraphs share them), in the
 * order first set: domain "" is the default ONNX domain. */
GWR_API gwr_status gwr_network_set_opset(gwr_network *net, const char *domain, int64_t version);
/* The version imported for domain, or -1. */
GWR_API int64_t gwr_network_opset(const gwr_network *net, const char *domain);
GWR_API int gwr_network_num_opsets(const gwr_network *net);
GWR_API const char *gwr_network_opset_domain(const gwr_network *net, int i);

/* Properties: named byte strings on a network, layer or tensor, kept in
 * the order first set. gwr's own algorithms ignore them; the edges use them
 * to carry what a format has and the IR does not model (ONNX's producer,
 * metadata_props, value_info doc strings, ...), so that a model survives a
 * round trip. Values are copied; a value may hold NULs and is followed by
 * a NUL byte not counted in *len. A getter returns NULL when absent. */
GWR_API gwr_status gwr_network_set_prop(gwr_network *net, const char *key, const void *val, size_t len);
GWR_API const void *gwr_network_prop(const gwr_network *net, const char *key, size_t *len);
GWR_API gwr_status gwr_network_remove_prop(gwr_network *net, const char *key);
GWR_API int gwr_network_num_props(const gwr_network *net);
GWR_API const char *gwr_network_prop_key(const gwr_network *net, int i);
GWR_API gwr_status gwr_layer_set_prop(gwr_layer *l, const char *key, const void *val, size_t len);
GWR_API const void *gwr_layer_prop(const gwr_layer *l, const char *key, size_t *len);
GWR_API gwr_status gwr_layer_remove_prop(gwr_layer *l, const char *key);
GWR_API int gwr_layer_num_props(const gwr_layer *l);
GWR_API const char *gwr_layer_prop_key(const gwr_layer *l, int i);
GWR_API gwr_status gwr_tensor_set_prop(gwr_tensor *t, const char *key, const void *val, size_t len);
GWR_API const void *gwr_tensor_prop(const gwr_tensor *t, const char *key, size_t *len);
GWR_API gwr_status gwr_tensor_remove_prop(gwr_tensor *t, const char *key);
GWR_API int gwr_tensor_num_props(const gwr_tensor *t);
GWR_API const char *gwr_tensor_prop_key(const gwr_tensor *t, int i);

/* Provenance (docs/design.md, "Provenance"): the rewrite driver gives every
 * layer a rewrite adds the property GWR_PROVENANCE_PROP, UTF-8 JSON
 *   {"rule":"fuse_gelu","from":["Div_3",{"name":"Mul_9","rule":"r","from":["a"]}]}
 * rule: the label of the pattern that made it; from: the layers the rewrite
 * replaced (removed, or left dead), a string for a layer of the original
 * network, an object (its own chain under its name) for a layer an earlier
 * rewrite made. At most 256 strings per tree: the object that stops listing
 * counts the rest in "more":N. ONNX keeps it in NodeProto.metadata_props
 * when saved with gwr_onnx_save_options.provenance. */
#define GWR_PROVENANCE_PROP "gwr.provenance"
/* l's provenance JSON (NUL-terminated), or NULL: an original layer. */
GWR_API const char *gwr_layer_provenance(const gwr_layer *l);
/* The chain of a provenance JSON as an indented text tree, one line per
 * layer ("NAME: made by RULE from", then its sources two spaces deeper,
 * "NAME (original)" for original layers), name the layer it belongs to.
 * malloc'd (the caller frees it with free()); NULL when json is not
 * provenance JSON (gwr_last_errmsg says so). */
GWR_API char *gwr_provenance_text(const char *name, const char *json);

/* Structural equality of two networks: interface (names, types, defaults,
 * order), layers in network order (names, ops, domains, input and output
 * tensor names and types, attributes with weights compared byte for byte
 * and subgraphs recursively, doc strings and properties), network
 * properties and opsets. Returns 1 when equal; 0 with the first difference
 * written to why (size bytes; may be NULL), e.g. "layer 12 ('conv1'):
 * attribute 'pads' differs: [0,0,1,1] vs [0,0,0,0]". */
GWR_API int gwr_network_equal(gwr_network *a, gwr_network *b, char *why, size_t size);

/* A deep copy of a root network, owned by the caller (gwr_network_free),
 * independent of src: changing or freeing either leaves the other as it
 * was. It copies the name, properties (of the network, its layers and
 * tensors), opset imports and dimension symbols (same gwr_dim values),
 * graph inputs (names, value types, default values), layers in network
 * order (names, ops, domains, input and output tensors with their value
 * types, doc strings, removed marks), attributes of every type in their
 * order (weights share their gwr_buffer, retained; GRAPH and GRAPHS
 * subgraphs are copied recursively, their reads of enclosing tensors
 * pointing at the copy's tensors), network outputs in order, and the
 * counter of generated names, so that gwr_network_equal(src, copy) holds
 * and the copy names new layers as src would. Not copied: listeners, and
 * the FLayerInfos recorded on layers (the functional room's memo keeps
 * them for its own network; gwr_flayer_get on the copy finds none). src
 * is only read. NULL with gwr_last_errmsg() set when src is NULL or a
 * subgraph, or on allocation failure (nothing leaks). O(size of src). */
GWR_API gwr_network *gwr_network_clone(const gwr_network *src);
/* Copies the layers of subgraph `body` (a body with no inputs, as an If
 * branch) into its enclosing network, with fresh generated names, in
 * topological order: their reads of body tensors read the copies, their
 * reads of enclosing tensors stay, nested subgraphs are copied along
 * (gwr_network_clone's steps) and removed marks kept. outs (one entry per
 * body output) gets the copy of each body output (an enclosing tensor
 * when the body outputs one). body is only read; the caller rewires the
 * owner's readers and removes it. GWR_ERR_INVALID_ARG when body is not a
 * subgraph or has inputs; on failure the copies made are marked removed.
 * O(size of body). */
GWR_API gwr_status gwr_network_inline_subgraph(gwr_network *body, gwr_tensor **outs);

/* Listeners: called after each change. Used by the FLayerInfo memo and by
 * the rewrite driver's trace and statistics. Returns an id >= 0 for
 * gwr_network_remove_listener, or -1 on error. The struct is copied. */
typedef struct gwr_listener {
    void (*layer_added)(void *ctx, gwr_layer *l);
    void (*layer_removed)(void *ctx, gwr_layer *l);   /* marked removed */
    void (*layer_dropped)(void *ctx, gwr_layer *l);   /* about to be freed by prune */
    void (*tensor_replaced)(void *ctx, gwr_tensor *old_t, gwr_tensor *new_t);
    void (*input_changed)(void *ctx, gwr_layer *l, int slot, gwr_tensor *old_t);
    void *ctx;
    /* An attribute of l was set or removed. */
    void (*layer_modified)(void *ctx, gwr_layer *l);
    /* t's type, name or default value changed, or it was marked or
     * unmarked as a network output. */
    void (*tensor_modified)(void *ctx, gwr_tensor *t);
    /* Graph input t is about to be freed (gwr_network_remove_input). */
    void (*input_removed)(void *ctx, gwr_tensor *t);
} gwr_listener;
GWR_API int gwr_network_add_listener(gwr_network *net, const gwr_listener *ls);
GWR_API gwr_status gwr_network_remove_listener(gwr_network *net, int id);

/* ---- layers ------------------------------------------------------------ */

GWR_API gwr_network *gwr_layer_network(const gwr_layer *l);
GWR_API const char *gwr_layer_name(const gwr_layer *l);
/* Renames; GWR_ERR_DUPLICATE when the name is taken in this network. */
GWR_API gwr_status gwr_layer_set_name(gwr_layer *l, const char *name);
GWR_API gwr_layer_type gwr_layer_type_of(const gwr_layer *l);
/* The spelling of gwr's first plan (docs/design.md); the same as gwr_layer_type_of. */
#define gwr_layer_type(l) gwr_layer_type_of(l)
GWR_API const char *gwr_layer_op(const gwr_layer *l);      /* "Add" */
GWR_API const char *gwr_layer_domain(const gwr_layer *l);  /* "" for ONNX default */
GWR_API gwr_op_id gwr_layer_op_id(const gwr_layer *l);
GWR_API gwr_ew_op gwr_layer_ew_op(const gwr_layer *l);
/* Position in network order. */
GWR_API int64_t gwr_layer_index(const gwr_layer *l);

GWR_API int gwr_layer_num_inputs(const gwr_layer *l);
/* Input i, or NULL (absent optional input, or i out of range: then the
 * network's message says so). */
GWR_API gwr_tensor *gwr_layer_input(const gwr_layer *l, int i);
/* Rewires input i (t may be NULL to make it absent). Refuses a tensor out
 * of scope or a change that would create a cycle. O(users of the old
 * tensor) plus, only when ranks must be repaired, the region between. */
GWR_API gwr_status gwr_layer_set_input(gwr_layer *l, int i, gwr_tensor *t);
/* Appends an input (variadic ops such as Concat). */
GWR_API gwr_status gwr_layer_append_input(gwr_layer *l, gwr_tensor *t);
GWR_API int gwr_layer_num_outputs(const gwr_layer *l);
GWR_API gwr_tensor *gwr_layer_output(const gwr_layer *l, int i);

/* Flags the layer as removed: rewrites skip it and prune drops it. Its
 * edges stay until then. Idempotent. */
GWR_API gwr_status gwr_layer_mark_as_removed(gwr_layer *l);
GWR_API int gwr_layer_is_removed(const gwr_layer *l);

GWR_API const char *gwr_layer_doc(const gwr_layer *l);  /* "" when none */
GWR_API gwr_status gwr_layer_set_doc(gwr_layer *l, const char *doc);

/* ---- attributes -------------------------------------------------------- */

typedef enum gwr_attr_type {
    GWR_ATTR_UNDEFINED = 0,
    GWR_ATTR_FLOAT,
    GWR_ATTR_INT,
    GWR_ATTR_STRING,
    GWR_ATTR_TENSOR,
    GWR_ATTR_GRAPH,
    GWR_ATTR_FLOATS,
    GWR_ATTR_INTS,
    GWR_ATTR_STRINGS,
    GWR_ATTR_TENSORS,
    GWR_ATTR_GRAPHS
} gwr_attr_type;

GWR_API const char *gwr_attr_type_name(gwr_attr_type t);

GWR_API int gwr_layer_num_attrs(const gwr_layer *l);
GWR_API const char *gwr_layer_attr_name(const gwr_layer *l, int i);
GWR_API gwr_attr_type gwr_layer_attr_type(const gwr_layer *l, int i);
/* Index of the named attribute, or -1. */
GWR_API int gwr_layer_find_attr(const gwr_layer *l, const char *name);
GWR_API int gwr_layer_has_attr(const gwr_layer *l, const char *name);
/* GWR_ERR_NOT_FOUND when absent (nothing removed). */
GWR_API gwr_status gwr_layer_remove_attr(gwr_layer *l, const char *name);

/* Getters: GWR_ERR_NOT_FOUND when absent, GWR_ERR_TYPE when of another
 * type; *out is untouched then. Returned arrays live as long as the
 * attribute. */
GWR_API gwr_status gwr_layer_get_int(const gwr_layer *l, const char *name, int64_t *out);
GWR_API gwr_status gwr_layer_get_float(const gwr_layer *l, const char *name, float *out);
/* NUL-terminated; *len (may be NULL) gets the byte length (strings are
 * bytes in ONNX and may hold NULs). */
GWR_API gwr_status gwr_layer_get_string(const gwr_layer *l, const char *name, const char **out,
                                        size_t *len);
GWR_API gwr_status gwr_layer_get_ints(const gwr_layer *l, const char *name, const int64_t **out,
                                      int64_t *n);
GWR_API gwr_status gwr_layer_get_floats(const gwr_layer *l, const char *name, const float **out,
                                        int64_t *n);
GWR_API gwr_status gwr_layer_get_strings(const gwr_layer *l, const char *name,
                                         const gwr_bytes **out, int64_t *n);
GWR_API gwr_status gwr_layer_get_tensor(const gwr_layer *l, const char *name,
                                        const gwr_weights **out);
GWR_API gwr_status gwr_layer_get_tensors(const gwr_layer *l, const char *name,
                                         const gwr_weights **out, int64_t *n);
GWR_API gwr_status gwr_layer_get_graph(const gwr_layer *l, const char *name, gwr_network **out);
GWR_API gwr_status gwr_layer_get_graphs(const gwr_layer *l, const char *name,
                                        gwr_network *const **out, int64_t *n);

/* Getters with a default, for readers to whom an absent attribute means
 * its default (shape rules, kernels, passes): *out gets the value, or
 * `def` when the layer has no attribute of that name (GWR_OK both ways,
 * and nothing is written on the network then). GWR_ERR_TYPE, *out = def
 * and a message on the network when the attribute has another type. The
 * list forms give *n = -1 and *out = NULL when absent. */
GWR_API gwr_status gwr_layer_attr_int(const gwr_layer *l, const char *name, int64_t def, int64_t *out);
GWR_API gwr_status gwr_layer_attr_float(const gwr_layer *l, const char *name, float def, float *out);
GWR_API gwr_status gwr_layer_attr_string(const gwr_layer *l, const char *name, const char *def,
                                         const char **out);
GWR_API gwr_status gwr_layer_attr_ints(const gwr_layer *l, const char *name, const int64_t **out,
                                       int64_t *n);
GWR_API gwr_status gwr_layer_attr_floats(const gwr_layer *l, const char *name, const float **out,
                                         int64_t *n);

/* Setters replace an attribute of the same name whatever its type. Values
 * are copied; weights share their buffer (retained). */
GWR_API gwr_status gwr_layer_set_int(gwr_layer *l, const char *name, int64_t v);
GWR_API gwr_status gwr_layer_set_float(gwr_layer *l, const char *name, float v);
GWR_API gwr_status gwr_layer_set_string(gwr_layer *l, const char *name, const char *v);
GWR_API gwr_status gwr_layer_set_bytes(gwr_layer *l, const char *name, const void *v, size_t len);
GWR_API gwr_status gwr_layer_set_ints(gwr_layer *l, const char *name, const int64_t *v, int64_t n);
GWR_API gwr_status gwr_layer_set_floats(gwr_layer *l, const char *name, const float *v, int64_t n);
GWR_API gwr_status gwr_layer_set_strings(gwr_layer *l, const char *name, const char *const *v,
                                         int64_t n);
/* A STRINGS attribute from byte strings that may hold NULs. */
GWR_API gwr_status gwr_layer_set_bytes_list(gwr_layer *l, const char *name, const gwr_bytes *v, int64_t n);
GWR_API gwr_status gwr_layer_set_tensor(gwr_layer *l, const char *name, const gwr_weights *w);
GWR_API gwr_status gwr_layer_set_tensors(gwr_layer *l, const char *name, const gwr_weights *w,
                                         int64_t n);
/* Takes ownership of g, which must be a subgraph (gwr_network_new_subgraph)
 * of this layer's network that is not attached elsewhere. On error the
 * caller keeps g. */
GWR_API gwr_status gwr_layer_set_graph(gwr_layer *l, const char *name, gwr_network *g);
GWR_API gwr_status gwr_layer_set_graphs(gwr_layer *l, const char *name, gwr_network *const *g,
                                        int64_t n);

/* ---- tensors ----------------------------------------------------------- */

GWR_API gwr_network *gwr_tensor_network(const gwr_tensor *t);
GWR_API const char *gwr_tensor_name(const gwr_tensor *t);
GWR_API gwr_status gwr_tensor_set_name(gwr_tensor *t, const char *name);
GWR_API gwr_value_kind gwr_tensor_kind(const gwr_tensor *t);
GWR_API gwr_dtype gwr_tensor_dtype(const gwr_tensor *t);
/* -1 when the rank is unknown. */
GWR_API int gwr_tensor_rank(const gwr_tensor *t);
/* Dim i (negative i counts from the back); GWR_DIM_UNKNOWN out of range. */
GWR_API gwr_dim gwr_tensor_dim(const gwr_tensor *t, int i);
/* The whole dims array (rank entries), or NULL for unknown rank. */
GWR_API const gwr_dim *gwr_tensor_dims(const gwr_tensor *t);
/* Sets a plain tensor type. dims may be NULL when rank is -1. Symbols must
 * belong to this network's root. */
GWR_API gwr_status gwr_tensor_set_type(gwr_tensor *t, gwr_dtype dtype, int rank,
                                       const gwr_dim *dims);
/* Full value type (sequence, map, optional, sparse) into *out; pointers in
 * it live until the next set_type on t. */
GWR_API gwr_status gwr_tensor_value_type(const gwr_tensor *t, gwr_type *out);
GWR_API gwr_status gwr_tensor_set_value_type(gwr_tensor *t, const gwr_type *type);
/* Writes "float32[batch,128,?]" style text; returns the length it needed
 * (like snprintf). */
GWR_API int gwr_tensor_type_str(const gwr_tensor *t, char *buf, size_t size);

/* A graph input's default value (ONNX: an initializer named like a graph
 * input). w NULL removes it. The buffer is shared (retained). */
GWR_API gwr_status gwr_tensor_set_default(gwr_tensor *t, const gwr_weights *w);
/* The default value, or NULL. */
GWR_API const gwr_weights *gwr_tensor_default(const gwr_tensor *t);

/* The layer producing t (O(1)); NULL for a graph input. */
GWR_API gwr_layer *gwr_tensor_parent(const gwr_tensor *t);
/* Which output of its parent t is; -1 for a graph input. */
GWR_API int gwr_tensor_parent_output_index(const gwr_tensor *t);
GWR_API int gwr_tensor_is_input(const gwr_tensor *t);
/* Position among the network outputs, or -1. */
GWR_API int gwr_tensor_output_index(const gwr_tensor *t);
/* Uses: each is (layer, input slot). A layer reading t twice is listed
 * twice. Layers of nested networks reading t are listed too. Layers marked
 * removed may stay listed until prune; a list of 16 or more uses that must
 * grow drops them first (their input slot then reads nothing: NULL), so a
 * list stays within about twice its live readers and walking it costs
 * O(live readers) amortized. Adding a reader to t may so shift the
 * indices of t's list (the order stays): a walk over t's users that adds
 * readers to t collects them first. */
GWR_API int64_t gwr_tensor_num_users(const gwr_tensor *t);
GWR_API gwr_layer *gwr_tensor_user(const gwr_tensor *t, int64_t i, int *slot);
/* Uses by layers not marked as removed: what a rewrite pattern should
 * count ("is this intermediate used only here?"). O(users). */
GWR_API int64_t gwr_tensor_num_live_users(const gwr_tensor *t);

/* Makes every user of old_t read new_t instead, in O(users). When old_t is
 * a network output, new_t takes its place and its name (the two swap
 * names), so the interface is unchanged; if new_t cannot be renamed (it is
 * a graph input or already an output) an Identity layer named after old_t
 * is inserted. Refuses (GWR_ERR_TYPE) a change of dtype where both are
 * known, (GWR_ERR_CYCLE) a change that would create a cycle, and a tensor
 * out of scope; nothing changes then. */
GWR_API gwr_status gwr_tensor_replace_all_uses_with(gwr_tensor *old_t, gwr_tensor *new_t);
/* The same, leaving the uses by `except` alone (for inserting a layer
 * after old_t, e.g. new_t = relu(old_t)). */
GWR_API gwr_status gwr_tensor_replace_all_uses_except(gwr_tensor *old_t, gwr_tensor *new_t,
                                                      const gwr_layer *except);

#ifdef __cplusplus
}
#endif
#endif
