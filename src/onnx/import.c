/* import.c - gwr_onnx_load: an ONNX ModelProto becomes a gwr_network, as
 * docs/onnx.md lays out.
 *
 * The file is memory-mapped (or, for gwr_onnx_load_memory, read where it
 * lies), checked on the wire (import_wire.c), and unpacked by protobuf-c in
 * two parts: the model without the main graph's initializers, then each
 * initializer on its own. Weight bytes are copied out of the file once (by
 * protobuf-c, or for large raw_data by the importer, in chunks) and handed
 * to the IR without a second copy, while the file's pages are given back
 * behind the copy: peak memory stays near one model size. Names are resolved
 * innermost graph first; a node may read a name produced later in its graph
 * (or in an enclosing one): that input is wired once the graph is done, and
 * a cycle is reported then. */
#define _DEFAULT_SOURCE /* madvise */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gwr/functional.h"
#include "onnx/onnx_common.h"
#include "onnx/onnx_import.h"

/* ---- errors ---- */

/* A failing IR call: the context, then the network's message. */
static gwr_status ir_fail(gwr_oi_ctx *c, gwr_status s, const gwr_network *net, const char *fmt, ...) GWR_PRINTF(4, 5);
static gwr_status ir_fail(gwr_oi_ctx *c, gwr_status s, const gwr_network *net, const char *fmt, ...) {
    char pre[GWR_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    return gwr_oi_fail(c, s ? s : GWR_ERR_INVALID_GRAPH, "%s%s: %s", s == GWR_ERR_CYCLE ? "cycle: " : "", pre,
                       gwr_network_errmsg(net));
}

#define IR(call, net, ...)                                     \
    do {                                                       \
        gwr_status s_ = (call);                                \
        if (s_) return ir_fail(c, s_, (net), __VA_ARGS__);     \
    } while (0)

/* Appends at most max bytes of s at *p (bounded by end). Message parts are
 * built for every node and initializer, so without snprintf. */
static void cat(char **p, const char *end, const char *s, size_t max) {
    size_t n = strlen(s);
    if (n > max) n = max;
    if (n > (size_t)(end - *p)) n = (size_t)(end - *p);
    memcpy(*p, s, n);
    *p += n;
}

/* "<kind> '<name>'" in buf (size >= 2), the name cut at 200 bytes. */
static const char *quoted(char *buf, size_t size, const char *kind, const char *name) {
    char *p = buf, *end = buf + size - 1;
    cat(&p, end, kind, size);
    cat(&p, end, " '", 2);
    cat(&p, end, name, 200);
    cat(&p, end, "'", 1);
    *p = 0;
    return buf;
}

/* "node 'Conv_3' (Conv)", or "node #12 (Conv)" for an unnamed one. */
static const char *node_desc(const Onnx__NodeProto *n, size_t idx, char *buf, size_t size) {
    const char *op = n->op_type ? n->op_type : "";
    if (!(n->name && *n->name)) {
        snprintf(buf, size, "node #%zu (%.80s)", idx, op);
        return buf;
    }
    char *p = buf, *end = buf + size - 1;
    cat(&p, end, "node '", 6);
    cat(&p, end, n->name, 160);
    cat(&p, end, "' (", 3);
    cat(&p, end, op, 80);
    cat(&p, end, ")", 1);
    *p = 0;
    return buf;
}

/* ---- protobuf-c glue ---- */

/* Plain malloc/free, so that bytes taken out of a message are gwr_free()d. */
/* The model without its initializers (the skeleton: nodes, attributes,
 * value infos, subgraphs) lives in an arena for the length of the load:
 * tens of thousands of small messages and strings, each a malloc and a
 * free through protobuf-c's allocator, become bump allocations dropped at
 * once. Its bytes are copied, never stolen (steal_raw is 0 for them). */
static void *arena_alloc(void *ud, size_t n) { return gwr_arena_alloc(ud, n); }
static void arena_free(void *ud, void *p) {
    (void)ud;
    (void)p;
}

/* Serializes a message into a malloc'd buffer. */
static uint8_t *pb_pack(gwr_oi_ctx *c, const ProtobufCMessage *m, size_t *len) {
    *len = protobuf_c_message_get_packed_size(m);
    uint8_t *b = gwr_malloc(*len ? *len : 1);
    if (!b) {
        gwr_oi_fail(c, GWR_ERR_NOMEM, "out of memory");
        return NULL;
    }
    protobuf_c_message_pack(m, b);
    return b;
}

/* ---- properties ---- */

static gwr_status net_prop(gwr_oi_ctx *c, gwr_network *net, const char *key, const void *v, size_t len) {
    IR(gwr_network_set_prop(net, key, v ? v : "", v ? len : 0), net, "network property '%s'", key);
    return GWR_OK;
}
static gwr_status net_prop_str(gwr_oi_ctx *c, gwr_network *net, const char *key, const char *v) {
    return net_prop(c, net, key, v, v ? strlen(v) : 0);
}
static gwr_status layer_prop(gwr_oi_ctx *c, gwr_layer *l, const char *key, const char *v) {
    IR(gwr_layer_set_prop(l, key, v ? v : "", v ? strlen(v) : 0), gwr_layer_network(l), "layer '%s' property '%s'",
       gwr_layer_name(l), key);
    return GWR_OK;
}
/* Property "<prefix><name>" (attribute names have no length limit). */
static gwr_status layer_prop2(gwr_oi_ctx *c, gwr_layer *l, const char *prefix, const char *name, const char *v) {
    size_t pl = strlen(prefix), nl = strlen(name);
    char *key = gwr_malloc(pl + nl + 1);
    if (!key) return gwr_oi_fail(c, GWR_ERR_NOMEM, "out of memory");
    memcpy(key, prefix, pl);
    memcpy(key + pl, name, nl + 1);
    gwr_status s = layer_prop(c, l, key, v);
    gwr_free(key);
    return s;
}
static gwr_status tensor_prop(gwr_oi_ctx *c, gwr_tensor *t, const char *key, const char *v) {
    IR(gwr_tensor_set_prop(t, key, v ? v : "", v ? strlen(v) : 0), gwr_tensor_network(t),
       "tensor '%s' property '%s'", gwr_tensor_name(t), key);
    return GWR_OK;
}

/* ---- types ---- */

typedef struct oi_type {
    gwr_type t;
    gwr_dim dims[GWR_MAX_RANK];
    struct oi_type *sub;
} oi_type;

static void type_free(oi_type *o) {
    while (o) {
        oi_type *e = o->sub;
        gwr_free(o);
        o = e;
    }
}

static gwr_status elem_dtype(gwr_oi_ctx *c, int has, int32_t v, gwr_dtype *out, const char *what) {
    if (!has || v == 0) {
        *out = GWR_UNDEFINED;
        return GWR_OK;
    }
    if (v < 0 || !gwr_dtype_is_valid((gwr_dtype)v))
        return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: unknown elem_type %d", what, (int)v);
    *out = (gwr_dtype)v;
    return GWR_OK;
}

static gwr_status shape_conv(gwr_oi_ctx *c, gwr_network *net, const Onnx__TensorShapeProto *sh, oi_type *o,
                             const char *what) {
    if (!sh) {
        o->t.rank = -1;
        return GWR_OK;
    }
    if (sh->n_dim > GWR_MAX_RANK)
        return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: rank %zu exceeds %d", what, sh->n_dim, GWR_MAX_RANK);
    for (size_t i = 0; i < sh->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = sh->dim[i];
        gwr_dim v = GWR_DIM_UNKNOWN;
        if (d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            /* A negative dim_value is an unknown dim (some exporters write -1). */
            if (d->dim_value >= 0) v = d->dim_value;
        } else if (d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param &&
                   *d->dim_param && strcmp(d->dim_param, "?")) {
            /* "?" is Paddle2ONNX's (and others') spelling of an unknown dim,
             * not a name: two of them need not be equal. */
            v = gwr_network_dim_sym(net, d->dim_param);
            if (v == GWR_DIM_UNKNOWN) return ir_fail(c, GWR_ERR_NOMEM, net, "%s: dim '%s'", what, d->dim_param);
        }
        o->dims[i] = v;
    }
    o->t.rank = (int)sh->n_dim;
    o->t.dims = o->dims;
    return GWR_OK;
}

/* TypeProto -> a gwr_type tree (freed with type_free). */
static gwr_status type_conv(gwr_oi_ctx *c, gwr_network *net, const Onnx__TypeProto *tp, oi_type **out,
                            const char *what, int depth) {
    *out = NULL;
    if (depth > 32) return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: type nested deeper than 32", what);
    oi_type *o = gwr_calloc(1, sizeof *o);
    if (!o) return gwr_oi_fail(c, GWR_ERR_NOMEM, "out of memory");
    *out = o;
    o->t.kind = GWR_VALUE_TENSOR;
    o->t.rank = -1;
    const Onnx__TypeProto *elem = NULL;
    switch (tp->value_case) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
        if (elem_dtype(c, tp->tensor_type->has_elem_type, tp->tensor_type->elem_type, &o->t.dtype, what))
            return c->st;
        return shape_conv(c, net, tp->tensor_type->shape, o, what);
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
        o->t.kind = GWR_VALUE_SPARSE_TENSOR;
        if (elem_dtype(c, tp->sparse_tensor_type->has_elem_type, tp->sparse_tensor_type->elem_type, &o->t.dtype,
                       what))
            return c->st;
        return shape_conv(c, net, tp->sparse_tensor_type->shape, o, what);
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
        o->t.kind = GWR_VALUE_SEQUENCE;
        elem = tp->sequence_type->elem_type;
        break;
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
        o->t.kind = GWR_VALUE_OPTIONAL;
        elem = tp->optional_type->elem_type;
        break;
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
        o->t.kind = GWR_VALUE_MAP;
        if (elem_dtype(c, tp->map_type->has_key_type, tp->map_type->key_type, &o->t.dtype, what)) return c->st;
        elem = tp->map_type->value_type;
        break;
    default:
        return GWR_OK; /* no type given: unknown */
    }
    if (!elem)
        return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: %s type without an element type", what,
                           gwr_value_kind_name(o->t.kind));
    if (type_conv(c, net, elem, &o->sub, what, depth + 1)) return c->st;
    o->t.elem = &o->sub->t;
    return GWR_OK;
}

/* Sets t's type (when set_type) and the denotation props from tp. */
static gwr_status apply_type(gwr_oi_ctx *c, gwr_tensor *t, const Onnx__TypeProto *tp, int set_type,
                             const char *what) {
    gwr_network *net = gwr_tensor_network(t);
    oi_type *o = NULL;
    if (type_conv(c, net, tp, &o, what, 0)) {
        type_free(o);
        return c->st;
    }
    gwr_status s = set_type ? gwr_tensor_set_value_type(t, &o->t) : GWR_OK;
    type_free(o);
    if (s) return ir_fail(c, s, net, "%s", what);
    if (tp->denotation && *tp->denotation && tensor_prop(c, t, "onnx.denotation", tp->denotation)) return c->st;
    const Onnx__TensorShapeProto *sh = NULL;
    if (tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) sh = tp->tensor_type->shape;
    if (tp->value_case == ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE) sh = tp->sparse_tensor_type->shape;
    for (size_t i = 0; sh && i < sh->n_dim; i++) {
        if (!sh->dim[i] || !sh->dim[i]->denotation || !*sh->dim[i]->denotation) continue;
        char key[48];
        snprintf(key, sizeof key, "onnx.dim_denotation.%zu", i);
        if (tensor_prop(c, t, key, sh->dim[i]->denotation)) return c->st;
    }
    return GWR_OK;
}

/* A ValueInfoProto on tensor t: type (when set_type), doc, denotations. */
static gwr_status apply_value_info(gwr_oi_ctx *c, gwr_tensor *t, const Onnx__ValueInfoProto *vi, int set_type,
                                   const char *what) {
    if (vi->type && apply_type(c, t, vi->type, set_type, what)) return c->st;
    if (vi->doc_string && *vi->doc_string && tensor_prop(c, t, "onnx.doc", vi->doc_string)) return c->st;
    return GWR_OK;
}

/* Types of constants come from their data; the file's value_info and
 * outputs do not override them (nor a graph input's own type). */
static int typed_by_data(const gwr_tensor *t) {
    gwr_layer *p = gwr_tensor_parent(t);
    return gwr_tensor_is_input(t) || (p && gwr_layer_type(p) == GWR_LAYER_CONSTANT);
}

/* ---- names ---- */

/* A name "<base>_<k>" that no layer of the scope has and no node of the
 * graph asks for. */
static const char *gen_layer_name(gwr_oi_scope *sc, const char *base, char *buf, size_t size) {
    do snprintf(buf, size, "%.200s_%llu", base, (unsigned long long)sc->counter++);
    while (gwr_strmap_get(&sc->node_names, buf) || gwr_network_find_layer(sc->net, buf));
    return buf;
}

/* Is name taken by anything in scope (a tensor, or a node output to come)? */
static int name_in_scope(gwr_oi_ctx *c, const char *name) {
    for (int k = c->depth; k >= 0; k--)
        if (gwr_network_find_tensor(c->scopes[k].net, name) || gwr_strmap_get(&c->scopes[k].outs, name)) return 1;
    return 0;
}

/* Finds the tensor `name` reads, innermost graph first. *later gets the
 * scope index when the name is produced later (the tensor is then NULL).
 * -1 when nothing defines it. */
static int resolve(gwr_oi_ctx *c, const char *name, gwr_tensor **t, int *later) {
    *t = NULL, *later = -1;
    for (int k = c->depth; k >= 0; k--) {
        gwr_tensor *x = gwr_network_find_tensor(c->scopes[k].net, name);
        /* A generated name for an absent output is nothing a file can read. */
        if (x && !gwr_tensor_prop(x, "onnx.absent", NULL)) {
            *t = x;
            return 0;
        }
        if (gwr_strmap_get(&c->scopes[k].outs, name)) {
            *later = k;
            return 0;
        }
    }
    return -1;
}

static gwr_status defer(gwr_oi_ctx *c, int k, gwr_layer *l, int slot, const char *name, const Onnx__NodeProto *n,
                        size_t idx) {
    gwr_oi_scope *sc = &c->scopes[k];
    if (gwr_grow((void **)&sc->def, sizeof *sc->def, &sc->defcap, sc->ndef + 1))
        return gwr_oi_fail(c, GWR_ERR_NOMEM, "out of memory");
    sc->def[sc->ndef++] = (gwr_oi_deferred){l, slot, name, n, idx};
    c->deferred = 1;
    return GWR_OK;
}

/* ---- initializers ---- */

/* The CONSTANT layer of an initializer: named after it unless a node of
 * the graph has that name. */
static gwr_layer *add_const_layer(gwr_oi_ctx *c, gwr_oi_scope *sc, const char *name) {
    char buf[256];
    const char *lname = name;
    if (gwr_strmap_get(&sc->node_names, name) || gwr_network_find_layer(sc->net, name))
        lname = gen_layer_name(sc, name, buf, sizeof buf);
    gwr_layer *l = gwr_network_add_layer(sc->net, "Constant", "", lname, 0, NULL, 1, &name);
    if (!l) ir_fail(c, GWR_ERR_INVALID_GRAPH, sc->net, "initializer '%s'", name);
    return l;
}

/* Checks that an initializer's name is free; *input gets the graph input
 * it gives a default to (NULL when none). */
static gwr_status init_name_check(gwr_oi_ctx *c, gwr_oi_scope *sc, const char *name, const char *what,
                                  gwr_tensor **input) {
    *input = NULL;
    intptr_t prod = (intptr_t)gwr_strmap_get(&sc->outs, name);
    if (prod) {
        char nd[300];
        return gwr_oi_fail(c, GWR_ERR_DUPLICATE, "%s is also written by %s", what,
                           node_desc(sc->g->node[prod - 1], (size_t)prod - 1, nd, sizeof nd));
    }
    gwr_tensor *t = gwr_network_find_tensor(sc->net, name);
    if (t && (!gwr_tensor_is_input(t) || gwr_tensor_default(t)))
        return gwr_oi_fail(c, GWR_ERR_DUPLICATE, "%s is defined twice", what);
    *input = t;
    return GWR_OK;
}

/* The initializer `name` (checked free): the default of graph input
 * `input`, or a CONSTANT layer. Releases w's buffer. */
static gwr_status put_initializer(gwr_oi_ctx *c, gwr_oi_scope *sc, const char *name, gwr_tensor *input, gwr_weights w,
                                  const char *what) {
    w.name = NULL; /* the tensor carries the initializer's name */
    gwr_status s = GWR_OK;
    if (input) {
        if ((s = gwr_tensor_set_default(input, &w))) ir_fail(c, s, sc->net, "%s", what);
    } else {
        gwr_layer *l = add_const_layer(c, sc, name);
        if (!l) s = c->st;
        else if ((s = gwr_layer_set_tensor(l, "value", &w)) ||
                 (s = gwr_tensor_set_type(gwr_layer_output(l, 0), w.dtype, w.rank, w.dims)))
            ir_fail(c, s, sc->net, "%s", what);
    }
    gwr_buffer_release(w.buffer);
    return s ? c->st : GWR_OK;
}

static gwr_status add_initializer(gwr_oi_ctx *c, gwr_oi_scope *sc, Onnx__TensorProto *tp, size_t idx) {
    char what[256];
    const char *name = tp->name;
    if (!name || !*name) return gwr_oi_fail(c, GWR_ERR_PARSE, "initializer #%zu has no name", idx);
    quoted(what, sizeof what, "initializer", name);
    gwr_tensor *input;
    gwr_weights w;
    if (init_name_check(c, sc, name, what, &input) || gwr_oi_tensor(c, tp, what, &w)) return c->st;
    return put_initializer(c, sc, name, input, w, what);
}

/* An initializer in the plain form (gwr_oi_wire_plain_tensor): the same
 * checks and result as add_initializer without unpacking it. */
static gwr_status add_plain_initializer(gwr_oi_ctx *c, gwr_oi_scope *sc, const gwr_oi_plain_tensor *pt, size_t idx) {
    char what[256], small[192];
    if (!pt->name_len) return gwr_oi_fail(c, GWR_ERR_PARSE, "initializer #%zu has no name", idx);
    char *name = pt->name_len < sizeof small ? small : gwr_malloc(pt->name_len + 1);
    if (!name) return gwr_oi_fail(c, GWR_ERR_NOMEM, "out of memory");
    memcpy(name, pt->name, pt->name_len);
    name[pt->name_len] = 0;
    quoted(what, sizeof what, "initializer", name);
    gwr_tensor *input;
    gwr_weights w;
    gwr_status s = init_name_check(c, sc, name, what, &input) || gwr_oi_plain_weights(c, pt, what, &w)
                       ? c->st
                       : put_initializer(c, sc, name, input, w, what);
    if (name != small) gwr_free(name);
    return s;
}

static gwr_status check_sparse_dims(gwr_oi_ctx *c, const Onnx__SparseTensorProto *sp, const char *what) {
    if (sp->n_dims > GWR_MAX_RANK) return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: rank %zu exceeds %d", what, sp->n_dims, GWR_MAX_RANK);
    for (size_t i = 0; i < sp->n_dims; i++)
        if (sp->dims[i] < 0) return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: dim %zu is negative", what, i);
    if (gwr_shape_numel((int)sp->n_dims, sp->dims) < 0)
        return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: its dims overflow the element count", what);
    return GWR_OK;
}

/* Checks the values and indices of a sparse tensor by converting them
 * (after it was serialized: the conversion takes raw_data out). */
static gwr_status check_sparse_data(gwr_oi_ctx *c, Onnx__SparseTensorProto *sp, const char *what) {
    Onnx__TensorProto *parts[2] = {sp->values, sp->indices};
    for (int i = 0; i < 2; i++) {
        if (!parts[i]) continue;
        char pw[320];
        snprintf(pw, sizeof pw, "%s %s", what, i ? "indices" : "values");
        gwr_weights w;
        if (gwr_oi_tensor(c, parts[i], pw, &w)) return c->st;
        gwr_buffer_release(w.buffer);
    }
    return GWR_OK;
}

static gwr_status add_sparse_initializer(gwr_oi_ctx *c, gwr_oi_scope *sc, Onnx__SparseTensorProto *sp, size_t idx) {
    char what[256];
    const char *name = sp->values ? sp->values->name : NULL;
    if (!name || !*name) return gwr_oi_fail(c, GWR_ERR_PARSE, "sparse initializer #%zu has no values name", idx);
    snprintf(what, sizeof what, "sparse initializer '%.200s'", name);
    gwr_tensor *input;
    if (init_name_check(c, sc, name, what, &input)) return c->st;
    if (input) return gwr_oi_fail(c, GWR_ERR_DUPLICATE, "%s is also a graph input", what);
    gwr_dtype dt = GWR_UNDEFINED;
    if (elem_dtype(c, sp->values->has_data_type, sp->values->data_type, &dt, what) || check_sparse_dims(c, sp, what))
        return c->st;
    size_t len;
    uint8_t *bytes = pb_pack(c, &sp->base, &len);
    if (!bytes) return c->st;
    gwr_status s = check_sparse_data(c, sp, what);
    gwr_layer *l = s ? NULL : add_const_layer(c, sc, name);
    if (!l) s = c->st;
    else if ((s = gwr_layer_set_bytes(l, "sparse_value", bytes, len)) ||
             (s = gwr_tensor_set_type(gwr_layer_output(l, 0), dt, (int)sp->n_dims, sp->dims)))
        ir_fail(c, s, sc->net, "%s", what);
    else if (layer_prop(c, l, "onnx.sparse", ""))
        s = c->st;
    gwr_free(bytes);
    return s ? c->st : GWR_OK;
}

/* ---- attributes ---- */

static gwr_status import_graph(gwr_oi_ctx *c, Onnx__GraphProto *g, gwr_network *net, const gwr_oi_span *spans,
                               size_t nspans);

/* A list of byte strings as a STRINGS attribute. The IR's setter takes
 * NUL-terminated strings, so an entry holding a NUL cannot be stored yet. */
static gwr_status set_byte_list(gwr_oi_ctx *c, gwr_layer *l, const char *name, const ProtobufCBinaryData *v,
                                size_t n, const char *what) {
    gwr_bytes *arr = gwr_calloc(n ? n : 1, sizeof *arr);
    if (!arr) return gwr_oi_fail(c, GWR_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) arr[i].len = v[i].len, arr[i].data = (const char *)v[i].data;
    gwr_status s = gwr_layer_set_bytes_list(l, name, arr, (int64_t)n);
    gwr_free(arr);
    if (s) ir_fail(c, s, gwr_layer_network(l), "%s", what);
    return s ? c->st : GWR_OK;
}

/* Serialized messages (SPARSE_TENSORS, TYPE_PROTOS) as a STRINGS attribute. */
static gwr_status set_message_list(gwr_oi_ctx *c, gwr_layer *l, const char *name, ProtobufCMessage *const *m, size_t n,
                                   const char *what) {
    ProtobufCBinaryData *v = gwr_calloc(n ? n : 1, sizeof *v);
    gwr_status s = v ? GWR_OK : gwr_oi_fail(c, GWR_ERR_NOMEM, "out of memory");
    for (size_t i = 0; !s && i < n; i++)
        if (!(v[i].data = pb_pack(c, m[i], &v[i].len))) s = c->st;
    if (!s) s = set_byte_list(c, l, name, v, n, what);
    for (size_t i = 0; v && i < n; i++) gwr_free(v[i].data);
    gwr_free(v);
    return s;
}

static gwr_status attr_graphs(gwr_oi_ctx *c, gwr_layer *l, const char *name, Onnx__GraphProto **gs, size_t n, int one,
                              const char *what) {
    gwr_network *net = gwr_layer_network(l);
    gwr_network **subs = gwr_calloc(n ? n : 1, sizeof *subs);
    if (!subs) return gwr_oi_fail(c, GWR_ERR_NOMEM, "out of memory");
    gwr_status s = GWR_OK;
    size_t k = 0;
    for (; k < n; k++) {
        if (!gs[k]) {
            s = gwr_oi_fail(c, GWR_ERR_PARSE, "%s: missing graph", what);
            break;
        }
        if (!(subs[k] = gwr_network_new_subgraph(net, gs[k]->name ? gs[k]->name : ""))) {
            s = gwr_oi_fail(c, GWR_ERR_NOMEM, "out of memory");
            break;
        }
        if ((s = import_graph(c, gs[k], subs[k], NULL, 0))) {
            /* Context of the innermost three graphs; deeper chains are elided. */
            if (c->wraps < 3) gwr_oi_wrap(c, "%s (graph '%.100s')", what, gs[k]->name ? gs[k]->name : "");
            else if (c->wraps == 3) gwr_oi_wrap(c, "...");
            c->wraps++;
            k++;
            break;
        }
    }
    if (!s) {
        s = one ? gwr_layer_set_graph(l, name, subs[0]) : gwr_layer_set_graphs(l, name, subs, (int64_t)n);
        if (s) ir_fail(c, s, net, "%s", what);
        else k = 0; /* owned by the layer now */
    }
    for (size_t i = 0; i < k; i++) {
        if (subs[i]) gwr_network_free(subs[i]);
    }
    gwr_free(subs);
    return s ? c->st : GWR_OK;
}

static gwr_status attr_tensors(gwr_oi_ctx *c, gwr_layer *l, const char *name, Onnx__TensorProto **ts, size_t n, int one,
                               const char *what) {
    gwr_weights *w = gwr_calloc(n ? n : 1, sizeof *w);
    if (!w) return gwr_oi_fail(c, GWR_ERR_NOMEM, "out of memory");
    gwr_status s = GWR_OK;
    size_t k = 0;
    for (; k < n && !s; k++) {
        char tw[GWR_ERRMSG_MAX + 32];
        snprintf(tw, sizeof tw, one ? "%s" : "%s tensor %zu", what, k);
        if (!ts[k]) s = gwr_oi_fail(c, GWR_ERR_PARSE, "%s: missing tensor", tw);
        else s = gwr_oi_tensor(c, ts[k], tw, &w[k]);
    }
    if (!s) {
        s = one ? gwr_layer_set_tensor(l, name, &w[0]) : gwr_layer_set_tensors(l, name, w, (int64_t)n);
        if (s) ir_fail(c, s, gwr_layer_network(l), "%s", what);
    }
    for (size_t i = 0; i < n; i++) gwr_buffer_release(w[i].buffer);
    gwr_free(w);
    return s ? c->st : GWR_OK;
}

static gwr_status attr_message(gwr_oi_ctx *c, gwr_layer *l, const char *name, const ProtobufCMessage *m,
                               const char *what) {
    if (!m) return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: no value", what);
    size_t len;
    uint8_t *b = pb_pack(c, m, &len);
    if (!b) return c->st;
    gwr_status s = gwr_layer_set_bytes(l, name, b, len);
    gwr_free(b);
    if (s) return ir_fail(c, s, gwr_layer_network(l), "%s", what);
    return GWR_OK;
}

static gwr_status import_attr(gwr_oi_ctx *c, gwr_layer *l, Onnx__AttributeProto *a, const char *nd) {
    char what[GWR_ERRMSG_MAX];
    const char *name = a->name;
    gwr_network *net = gwr_layer_network(l);
    if (!name || !*name) return gwr_oi_fail(c, GWR_ERR_PARSE, "%s has an attribute without a name", nd);
    snprintf(what, sizeof what, "%s attribute '%.120s'", nd, name);
    if (gwr_layer_has_attr(l, name)) return gwr_oi_fail(c, GWR_ERR_DUPLICATE, "%s is given twice", what);
    if (!a->has_type || a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED)
        return gwr_oi_fail(c, GWR_ERR_PARSE, "%s has no type", what);
    gwr_status s = GWR_OK;
    const char *special = NULL;
    switch (a->type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: s = gwr_layer_set_float(l, name, a->f); break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: s = gwr_layer_set_int(l, name, a->i); break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
        s = gwr_layer_set_bytes(l, name, a->s.len ? (const void *)a->s.data : "", a->s.len);
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
        s = gwr_layer_set_floats(l, name, a->n_floats ? a->floats : (const float *)"", (int64_t)a->n_floats);
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        s = gwr_layer_set_ints(l, name, a->n_ints ? a->ints : (const int64_t *)(const void *)"", (int64_t)a->n_ints);
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
        if (set_byte_list(c, l, name, a->strings, a->n_strings, what)) return c->st;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
        if (!a->t) return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: no tensor", what);
        if (attr_tensors(c, l, name, &a->t, 1, 1, what)) return c->st;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS:
        if (attr_tensors(c, l, name, a->tensors, a->n_tensors, 0, what)) return c->st;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
        if (!a->g) return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: no graph", what);
        if (attr_graphs(c, l, name, &a->g, 1, 1, what)) return c->st;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS:
        if (attr_graphs(c, l, name, a->graphs, a->n_graphs, 0, what)) return c->st;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR:
        if (attr_message(c, l, name, (const ProtobufCMessage *)a->sparse_tensor, what)) return c->st;
        special = "sparse_tensor";
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO:
        if (attr_message(c, l, name, (const ProtobufCMessage *)a->tp, what)) return c->st;
        special = "type_proto";
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS:
        if (set_message_list(c, l, name, (ProtobufCMessage *const *)a->sparse_tensors, a->n_sparse_tensors, what))
            return c->st;
        special = "sparse_tensors";
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS:
        if (set_message_list(c, l, name, (ProtobufCMessage *const *)a->type_protos, a->n_type_protos, what))
            return c->st;
        special = "type_protos";
        break;
    default: return gwr_oi_fail(c, GWR_ERR_PARSE, "%s has unknown type %d", what, (int)a->type);
    }
    if (s) return ir_fail(c, s, net, "%s", what);
    if (special && layer_prop2(c, l, "onnx.attr_type.", name, special)) return c->st;
    if (a->doc_string && *a->doc_string && layer_prop2(c, l, "onnx.attr_doc.", name, a->doc_string)) return c->st;
    if (a->ref_attr_name && *a->ref_attr_name && layer_prop2(c, l, "onnx.attr_ref.", name, a->ref_attr_name))
        return c->st;
    return GWR_OK;
}

/* The type of a Constant node's output, from its value attribute. */
static gwr_status constant_type(gwr_oi_ctx *c, gwr_layer *l, const Onnx__NodeProto *n, const char *nd) {
    if (gwr_layer_num_outputs(l) < 1) return GWR_OK;
    gwr_tensor *out = gwr_layer_output(l, 0);
    gwr_dtype dt = GWR_UNDEFINED;
    int rank = -1;
    const int64_t *dims = NULL;
    int64_t len1;
    const gwr_weights *w;
    static const struct {
        const char *name;
        gwr_attr_type type;
    } value_attrs[] = {{"value", GWR_ATTR_TENSOR},         {"value_float", GWR_ATTR_FLOAT},
                       {"value_int", GWR_ATTR_INT},        {"value_string", GWR_ATTR_STRING},
                       {"value_floats", GWR_ATTR_FLOATS},  {"value_ints", GWR_ATTR_INTS},
                       {"value_strings", GWR_ATTR_STRINGS}, {"sparse_value", GWR_ATTR_STRING}};
    /* A value attribute of another type than its name says would give the
     * output a type its value does not have. */
    int nvalues = 0;
    for (size_t k = 0; k < sizeof value_attrs / sizeof *value_attrs; k++) {
        int i = gwr_layer_find_attr(l, value_attrs[k].name);
        nvalues += i >= 0;
        if (i >= 0 && gwr_layer_attr_type(l, i) != value_attrs[k].type)
            return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: attribute '%s' is %s, must be %s", nd, value_attrs[k].name,
                               gwr_attr_type_name(gwr_layer_attr_type(l, i)), gwr_attr_type_name(value_attrs[k].type));
    }
    if (nvalues != 1)
        return gwr_oi_fail(c, GWR_ERR_INVALID_GRAPH, "invalid graph: Constant layer '%s' has %d value attributes (needs exactly one)",
                           gwr_layer_name(l), nvalues);
    for (size_t i = 0; i < n->n_attribute; i++) {
        const Onnx__AttributeProto *a = n->attribute[i];
        const char *an = a->name;
        if (!strcmp(an, "value") && !gwr_layer_get_tensor(l, an, &w)) {
            dt = w->dtype, rank = w->rank, dims = w->dims;
        } else if (!strcmp(an, "value_float")) {
            dt = GWR_FLOAT32, rank = 0;
        } else if (!strcmp(an, "value_int")) {
            dt = GWR_INT64, rank = 0;
        } else if (!strcmp(an, "value_string")) {
            dt = GWR_STRING, rank = 0;
        } else if (!strcmp(an, "value_floats") || !strcmp(an, "value_ints") || !strcmp(an, "value_strings")) {
            dt = an[6] == 'f' ? GWR_FLOAT32 : an[6] == 'i' ? GWR_INT64 : GWR_STRING;
            len1 = an[6] == 'f' ? (int64_t)a->n_floats : an[6] == 'i' ? (int64_t)a->n_ints : (int64_t)a->n_strings;
            rank = 1, dims = &len1;
        } else if (!strcmp(an, "sparse_value") && a->sparse_tensor && a->sparse_tensor->values &&
                   !check_sparse_dims(c, a->sparse_tensor, nd)) {
            if (elem_dtype(c, a->sparse_tensor->values->has_data_type, a->sparse_tensor->values->data_type, &dt, nd))
                return c->st;
            rank = (int)a->sparse_tensor->n_dims, dims = a->sparse_tensor->dims;
        } else {
            continue;
        }
        break;
    }
    if (c->st) return c->st;
    if (dt == GWR_UNDEFINED) return GWR_OK;
    IR(gwr_tensor_set_type(out, dt, rank, dims), gwr_layer_network(l), "%s", nd);
    return GWR_OK;
}

/* ---- nodes ---- */

/* NodeProto.metadata_props (field 9), which Debian's onnx.proto predates:
 * protobuf-c keeps each entry as an unknown field, its data the length
 * prefix then a StringStringEntryProto (key = 1, value = 2). Key
 * "gwr.provenance" becomes that layer property, any other K "onnx.meta.K"
 * (the exporter writes both back). */
static gwr_status node_metadata(gwr_oi_ctx *c, gwr_layer *l, const Onnx__NodeProto *n, const char *nd) {
    for (unsigned i = 0; i < n->base.n_unknown_fields; i++) {
        const ProtobufCMessageUnknownField *f = &n->base.unknown_fields[i];
        if (f->tag != 9 || f->wire_type != PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED) continue;
        const uint8_t *p = f->data, *end = f->data + f->len;
        uint64_t body = 0;
        int shift = 0;
        while (p < end && shift < 35 && (*p & 0x80)) body |= (uint64_t)(*p++ & 0x7f) << shift, shift += 7;
        if (p < end) body |= (uint64_t)(*p++ & 0x7f) << shift;
        if (body != (uint64_t)(end - p))
            return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: malformed metadata_props entry", nd);
        const uint8_t *kv[3] = {NULL, NULL, NULL};
        size_t kl[3] = {0, 0, 0};
        while (p < end) {
            uint32_t num;
            unsigned wt;
            const uint8_t *pl;
            size_t len;
            if (gwr_oi_wire_field(c, &p, end, "StringStringEntryProto", &num, &wt, &pl, &len)) return c->st;
            if ((num == 1 || num == 2) && wt == 2) kv[num] = pl, kl[num] = len;
        }
        if (!kv[1] || !kl[1] || memchr(kv[1], 0, kl[1]))
            return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: metadata_props entry with an empty or bad key", nd);
        char *key = gwr_malloc(kl[1] + sizeof "onnx.meta.");
        if (!key) return gwr_oi_fail(c, GWR_ERR_NOMEM, "out of memory");
        int own = kl[1] == strlen(GWR_PROVENANCE_PROP) && !memcmp(kv[1], GWR_PROVENANCE_PROP, kl[1]);
        size_t off = own ? 0 : strlen("onnx.meta.");
        memcpy(key, "onnx.meta.", off);
        memcpy(key + off, kv[1], kl[1]);
        key[off + kl[1]] = 0;
        gwr_status s = gwr_layer_set_prop(l, key, kv[2] ? (const char *)kv[2] : "", kl[2]);
        if (s) ir_fail(c, s, gwr_layer_network(l), "%s metadata_props '%.100s'", nd, key);
        gwr_free(key);
        if (s) return c->st;
    }
    return GWR_OK;
}

static gwr_status import_node(gwr_oi_ctx *c, gwr_oi_scope *sc, Onnx__NodeProto *n, size_t idx) {
    char nd[300], lbuf[256];
    node_desc(n, idx, nd, sizeof nd);
    const char *op = n->op_type;
    if (!op || !*op) return gwr_oi_fail(c, GWR_ERR_PARSE, "node #%zu has no op_type", idx);
    const char *domain = n->domain ? n->domain : "";
    int ai_onnx = !strcmp(domain, "ai.onnx");
    if (ai_onnx) domain = "";
    if (n->n_input > (1u << 24) || n->n_output > (1u << 24))
        return gwr_oi_fail(c, GWR_ERR_UNSUPPORTED, "%s has too many inputs or outputs", nd);
    int nin = (int)n->n_input, nout = (int)n->n_output;
    gwr_tensor **ins = gwr_calloc((size_t)nin + 1, sizeof *ins);
    int *later = gwr_calloc((size_t)nin + 1, sizeof *later);
    const char **onames = gwr_calloc((size_t)nout + 1, sizeof *onames);
    char **gen = gwr_calloc((size_t)nout + 1, sizeof *gen);
    gwr_status s = ins && later && onames && gen ? GWR_OK : gwr_oi_fail(c, GWR_ERR_NOMEM, "out of memory");
    for (int j = 0; !s && j < nin; j++) {
        const char *in = n->input[j];
        later[j] = -1;
        if (!*in) continue; /* absent optional input */
        if (resolve(c, in, &ins[j], &later[j]))
            s = gwr_oi_fail(c, GWR_ERR_NOT_FOUND, "%s reads '%.200s', which no node, initializer or input defines", nd,
                            in);
    }
    for (int j = 0; !s && j < nout; j++) {
        if (*n->output[j]) {
            onames[j] = n->output[j];
            continue;
        }
        /* An absent optional output: a name nothing in scope has. */
        char b[300];
        const char *base = n->name && *n->name ? n->name : op;
        snprintf(b, sizeof b, "%.200s:%d", base, j);
        for (int k = 0; name_in_scope(c, b); k++) snprintf(b, sizeof b, "%.200s:%d_%d", base, j, k);
        if (!(gen[j] = gwr_strdup(b))) s = gwr_oi_fail(c, GWR_ERR_NOMEM, "out of memory");
        onames[j] = gen[j];
    }
    gwr_layer *l = NULL;
    const char *lname = n->name;
    int unnamed = !lname || !*lname, renamed = 0;
    if (unnamed) lname = gen_layer_name(sc, op, lbuf, sizeof lbuf);
    else if (gwr_network_find_layer(sc->net, lname)) lname = gen_layer_name(sc, lname, lbuf, sizeof lbuf), renamed = 1;
    if (!s && !(l = gwr_network_add_layer(sc->net, op, domain, lname, nin, ins, nout, onames)))
        s = ir_fail(c, GWR_ERR_INVALID_GRAPH, sc->net, "%s", nd);
    for (int j = 0; !s && j < nin; j++)
        if (later[j] >= 0) s = defer(c, later[j], l, j, n->input[j], n, idx);
    for (int j = 0; !s && j < nout; j++)
        if (gen[j]) s = tensor_prop(c, gwr_layer_output(l, j), "onnx.absent", "");
    for (int j = 0; gen && j < nout; j++) gwr_free(gen[j]);
    gwr_free(ins), gwr_free(later), gwr_free(onames), gwr_free(gen);
    if (s) return c->st;
    if (unnamed && layer_prop(c, l, "onnx.unnamed", "")) return c->st;
    if (renamed && layer_prop(c, l, "onnx.name", n->name)) return c->st;
    if (ai_onnx && layer_prop(c, l, "onnx.domain", "ai.onnx")) return c->st;
    if (n->doc_string && *n->doc_string) IR(gwr_layer_set_doc(l, n->doc_string), sc->net, "%s", nd);
    if (n->base.n_unknown_fields && node_metadata(c, l, n, nd)) return c->st;
    for (size_t i = 0; i < n->n_attribute; i++)
        if (import_attr(c, l, n->attribute[i], nd)) return c->st;
    if (!strcmp(op, "Constant") && !*domain &&
        (layer_prop(c, l, "onnx.constant_node", "") || constant_type(c, l, n, nd)))
        return c->st;
    return GWR_OK;
}

/* Node outputs and names, before any node is made: which names the graph
 * defines (so that a node may read one produced later) and which node
 * names it asks for. */
static gwr_status prepass(gwr_oi_ctx *c, gwr_oi_scope *sc, const Onnx__GraphProto *g) {
    char nd[300], od[300];
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        if (n->name && *n->name && gwr_strmap_put(&sc->node_names, n->name, (void *)1))
            return gwr_oi_fail(c, GWR_ERR_NOMEM, "out of memory");
        for (size_t j = 0; j < n->n_output; j++) {
            const char *o = n->output[j];
            if (!*o) continue;
            intptr_t prev = (intptr_t)gwr_strmap_get(&sc->outs, o);
            if (prev) {
                node_desc(n, i, nd, sizeof nd);
                if ((size_t)prev - 1 == i)
                    return gwr_oi_fail(c, GWR_ERR_DUPLICATE, "%s writes '%.200s' twice", nd, o);
                return gwr_oi_fail(c, GWR_ERR_DUPLICATE, "%s writes '%.200s', which %s also writes", nd, o,
                                   node_desc(g->node[prev - 1], (size_t)prev - 1, od, sizeof od));
            }
            if (gwr_network_find_tensor(sc->net, o))
                return gwr_oi_fail(c, GWR_ERR_DUPLICATE, "%s writes '%.200s', which is a graph input",
                                   node_desc(n, i, nd, sizeof nd), o);
            if (gwr_strmap_put(&sc->outs, o, (void *)(intptr_t)(i + 1)))
                return gwr_oi_fail(c, GWR_ERR_NOMEM, "out of memory");
        }
    }
    return GWR_OK;
}

/* Wires the inputs that read names produced after their reader. */
static gwr_status resolve_deferred(gwr_oi_ctx *c, gwr_oi_scope *sc) {
    for (int64_t i = 0; i < sc->ndef; i++) {
        gwr_oi_deferred *d = &sc->def[i];
        gwr_tensor *t = gwr_network_find_tensor(sc->net, d->name);
        gwr_network *ln = gwr_layer_network(d->layer);
        if (!t) return gwr_oi_fail(c, GWR_ERR_INVALID_GRAPH, "internal: '%s' was not produced", d->name);
        gwr_status s = gwr_layer_set_input(d->layer, d->slot, t);
        if (s) {
            char nd[300];
            node_desc(d->node, d->idx, nd, sizeof nd);
            if (ln != sc->net)
                snprintf(nd + strlen(nd), sizeof nd - strlen(nd), " in graph '%.60s'", gwr_network_name(ln));
            return ir_fail(c, s, ln, "%s reads '%.200s'", nd, d->name);
        }
    }
    return GWR_OK;
}

/* Large raw_data is copied by the importer rather than protobuf-c: in
 * chunks, giving each chunk's file pages back at once (so a model of one
 * huge tensor never holds the file and its copy whole), into memory mapped
 * for huge pages where it is big. */
#define BIG_RAW_MIN ((size_t)64 << 10)
#define COPY_CHUNK ((size_t)16 << 20)

static Onnx__TensorProto *unpack_initializer(gwr_oi_ctx *c, gwr_oi_span span, size_t idx) {
    gwr_oi_span raw;
    uint8_t *rest;
    size_t rest_len;
    if (gwr_oi_wire_tensor_split(c, span, BIG_RAW_MIN, &raw, &rest, &rest_len)) return NULL;
    Onnx__TensorProto *t = rest ? onnx__tensor_proto__unpack(&c->alloc, rest_len, rest)
                                : onnx__tensor_proto__unpack(&c->alloc, span.len, c->data + span.off);
    gwr_free(rest);
    if (!t) {
        gwr_oi_fail(c, GWR_ERR_PARSE, "initializer #%zu: protobuf-c cannot unpack it", idx);
        return NULL;
    }
    if (!raw.len) return t;
    void *buf = gwr_alloc_fails() ? MAP_FAILED : mmap(NULL, raw.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        onnx__tensor_proto__free_unpacked(t, &c->alloc);
        gwr_oi_fail(c, GWR_ERR_NOMEM, "initializer #%zu: out of memory (%zu bytes)", idx, raw.len);
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    (void)madvise(buf, raw.len, MADV_HUGEPAGE);
#endif
    for (size_t done = 0; done < raw.len;) {
        size_t n = raw.len - done < COPY_CHUNK ? raw.len - done : COPY_CHUNK;
        memcpy((char *)buf + done, c->data + raw.off + done, n);
        done += n;
        gwr_oi_drop_consumed(c, raw.off + done);
    }
    t->has_raw_data = 1;
    t->raw_data.data = buf;
    t->raw_data.len = raw.len;
    c->big_raw = buf;
    c->big_raw_len = raw.len;
    return t;
}

static void free_initializer(gwr_oi_ctx *c, Onnx__TensorProto *t) {
    if (c->big_raw && t->raw_data.data == c->big_raw) {
        /* Not taken by the weights (an error): not protobuf-c's to free. */
        munmap(c->big_raw, c->big_raw_len);
        t->raw_data.data = NULL, t->raw_data.len = 0;
    }
    c->big_raw = NULL;
    onnx__tensor_proto__free_unpacked(t, &c->alloc);
}

/* A subgraph output naming a tensor of an enclosing graph: the IR marks
 * only a network's own tensors as outputs, so an Identity layer reads the
 * outer tensor and its output is the subgraph's. Layer and output are
 * named "<name>:passthrough" (made unique), which survives a save and a
 * load unchanged; subgraph outputs bind by position, so nothing else
 * changes. */
static gwr_tensor *passthrough(gwr_oi_ctx *c, gwr_oi_scope *sc, gwr_tensor *outer, const char *what) {
    char b[300];
    const char *base = gwr_tensor_name(outer);
    snprintf(b, sizeof b, "%.200s:passthrough", base);
    for (int k = 0; name_in_scope(c, b) || gwr_strmap_get(&sc->node_names, b) || gwr_network_find_layer(sc->net, b); k++)
        snprintf(b, sizeof b, "%.200s:passthrough_%d", base, k);
    const char *on = b;
    gwr_layer *l = gwr_network_add_layer(sc->net, "Identity", "", b, 1, &outer, 1, &on);
    if (!l) {
        ir_fail(c, GWR_ERR_INVALID_GRAPH, sc->net, "%s", what);
        return NULL;
    }
    return gwr_layer_output(l, 0);
}

static gwr_status graph_body(gwr_oi_ctx *c, gwr_oi_scope *sc, Onnx__GraphProto *g, const gwr_oi_span *spans,
                             size_t nspans) {
    gwr_network *net = sc->net;
    char what[300];
    IR(gwr_network_set_name(net, g->name ? g->name : ""), net, "graph name");
    if (g->doc_string && *g->doc_string && net_prop_str(c, net, "onnx.graph_doc_string", g->doc_string)) return c->st;
    for (size_t i = 0; i < g->n_input; i++) {
        const Onnx__ValueInfoProto *vi = g->input[i];
        if (!vi->name || !*vi->name) return gwr_oi_fail(c, GWR_ERR_PARSE, "graph input #%zu has no name", i);
        snprintf(what, sizeof what, "graph input '%.200s'", vi->name);
        if (gwr_network_find_tensor(net, vi->name)) return gwr_oi_fail(c, GWR_ERR_DUPLICATE, "%s is listed twice", what);
        gwr_tensor *t = gwr_network_add_input(net, vi->name, GWR_UNDEFINED, -1, NULL);
        if (!t) return ir_fail(c, GWR_ERR_INVALID_GRAPH, net, "%s", what);
        if (apply_value_info(c, t, vi, 1, what)) return c->st;
    }
    if (prepass(c, sc, g)) return c->st;
    if (spans) {
        for (size_t i = 0; i < nspans; i++) {
            gwr_oi_plain_tensor pt;
            int plain = gwr_oi_wire_plain_tensor(c, spans[i], &pt);
            if (plain < 0) return c->st;
            if (plain) {
                if (add_plain_initializer(c, sc, &pt, i)) return c->st;
            } else {
                Onnx__TensorProto *t = unpack_initializer(c, spans[i], i);
                if (!t) return c->st;
                c->steal_raw = 1;
                gwr_status s = add_initializer(c, sc, t, i);
                c->steal_raw = 0;
                free_initializer(c, t);
                if (s) return s;
            }
            gwr_oi_drop_consumed(c, spans[i].off + spans[i].len);
        }
    }
    for (size_t i = 0; i < g->n_initializer; i++)
        if (add_initializer(c, sc, g->initializer[i], i)) return c->st;
    for (size_t i = 0; i < g->n_sparse_initializer; i++)
        if (add_sparse_initializer(c, sc, g->sparse_initializer[i], i)) return c->st;
    for (size_t i = 0; i < g->n_node; i++)
        if (import_node(c, sc, g->node[i], i)) return c->st;
    if (resolve_deferred(c, sc)) return c->st;
    for (size_t i = 0; i < g->n_output; i++) {
        const Onnx__ValueInfoProto *vi = g->output[i];
        if (!vi->name || !*vi->name) return gwr_oi_fail(c, GWR_ERR_PARSE, "graph output #%zu has no name", i);
        snprintf(what, sizeof what, "graph output '%.200s'", vi->name);
        gwr_tensor *t = gwr_network_find_tensor(net, vi->name);
        if (t && gwr_tensor_prop(t, "onnx.absent", NULL)) t = NULL;
        if (!t) {
            gwr_tensor *outer = NULL;
            int later = -1;
            if (gwr_network_parent(net) && !resolve(c, vi->name, &outer, &later) && outer) {
                if (!(t = passthrough(c, sc, outer, what))) return c->st;
            } else {
                return gwr_oi_fail(c, GWR_ERR_NOT_FOUND, "%s is not produced by any node, initializer or input%s", what,
                                   later >= 0 ? " of this graph" : "");
            }
        }
        IR(gwr_network_mark_output(net, t), net, "%s", what);
        if (apply_value_info(c, t, vi, !typed_by_data(t), what)) return c->st;
    }
    for (size_t i = 0; i < g->n_value_info; i++) {
        const Onnx__ValueInfoProto *vi = g->value_info[i];
        /* An entry for a name this graph does not have says nothing about
         * the graph; it is dropped. */
        gwr_tensor *t = vi->name ? gwr_network_find_tensor(net, vi->name) : NULL;
        if (!t || gwr_tensor_prop(t, "onnx.absent", NULL)) continue;
        snprintf(what, sizeof what, "value_info '%.200s'", vi->name);
        if (apply_value_info(c, t, vi, !typed_by_data(t), what)) return c->st;
        if (tensor_prop(c, t, "onnx.value_info", "")) return c->st;
    }
    for (size_t i = 0; i < g->n_quantization_annotation; i++) {
        char key[64];
        size_t len;
        uint8_t *b = pb_pack(c, &g->quantization_annotation[i]->base, &len);
        if (!b) return c->st;
        snprintf(key, sizeof key, "onnx.quantization_annotation.%zu", i);
        gwr_status s = net_prop(c, net, key, b, len);
        gwr_free(b);
        if (s) return s;
    }
    return GWR_OK;
}

static gwr_status import_graph(gwr_oi_ctx *c, Onnx__GraphProto *g, gwr_network *net, const gwr_oi_span *spans,
                               size_t nspans) {
    int top = gwr_network_parent(net) == NULL;
    if (!top && c->depth + 1 > GWR_OI_MAX_GRAPH_DEPTH)
        return gwr_oi_fail(c, GWR_ERR_UNSUPPORTED, "subgraphs nested deeper than %d", GWR_OI_MAX_GRAPH_DEPTH);
    int d = top ? 0 : c->depth + 1;
    gwr_oi_scope *sc = &c->scopes[d];
    memset(sc, 0, sizeof *sc);
    sc->net = net;
    sc->g = g;
    int saved = c->depth;
    c->depth = d;
    gwr_status s = graph_body(c, sc, g, spans, nspans);
    if (!s && top && !g->n_node && !g->n_output) s = gwr_oi_fail(c, GWR_ERR_INVALID_GRAPH, "empty graph (no nodes and no outputs)");
    gwr_strmap_free(&sc->outs);
    gwr_strmap_free(&sc->node_names);
    gwr_free(sc->def);
    memset(sc, 0, sizeof *sc);
    c->depth = saved;
    return s;
}

/* ---- the model ---- */

static gwr_status model_props(gwr_oi_ctx *c, gwr_network *net, const Onnx__ModelProto *m) {
    char num[32], key[64];
    if (m->has_ir_version) {
        snprintf(num, sizeof num, "%lld", (long long)m->ir_version);
        if (net_prop_str(c, net, "onnx.ir_version", num)) return c->st;
    }
    if (m->has_model_version) {
        snprintf(num, sizeof num, "%lld", (long long)m->model_version);
        if (net_prop_str(c, net, "onnx.model_version", num)) return c->st;
    }
    if ((m->producer_name && net_prop_str(c, net, "onnx.producer_name", m->producer_name)) ||
        (m->producer_version && net_prop_str(c, net, "onnx.producer_version", m->producer_version)) ||
        (m->domain && net_prop_str(c, net, "onnx.domain", m->domain)) ||
        (m->doc_string && net_prop_str(c, net, "onnx.doc_string", m->doc_string)))
        return c->st;
    for (size_t i = 0; i < m->n_metadata_props; i++) {
        const Onnx__StringStringEntryProto *e = m->metadata_props[i];
        size_t kl = e->key ? strlen(e->key) : 0;
        char *k = gwr_malloc(kl + 16);
        if (!k) return gwr_oi_fail(c, GWR_ERR_NOMEM, "out of memory");
        memcpy(k, "onnx.meta.", 10);
        memcpy(k + 10, e->key ? e->key : "", kl + 1);
        gwr_status s = net_prop_str(c, net, k, e->value);
        gwr_free(k);
        if (s) return s;
    }
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        int64_t v = o->has_version ? o->version : 0;
        if (v < 0)
            return gwr_oi_fail(c, GWR_ERR_PARSE, "opset_import of domain '%s' has a negative version", o->domain ? o->domain : "");
        IR(gwr_network_set_opset(net, o->domain ? o->domain : "", v), net, "opset_import");
    }
    for (size_t i = 0; i < m->n_functions; i++) {
        size_t len;
        uint8_t *b = pb_pack(c, &m->functions[i]->base, &len);
        if (!b) return c->st;
        snprintf(key, sizeof key, "onnx.function.%zu", i);
        gwr_status s = net_prop(c, net, key, b, len);
        gwr_free(b);
        if (s) return s;
    }
    for (size_t i = 0; i < m->n_training_info; i++) {
        size_t len;
        uint8_t *b = pb_pack(c, &m->training_info[i]->base, &len);
        if (!b) return c->st;
        snprintf(key, sizeof key, "onnx.training_info.%zu", i);
        gwr_status s = net_prop(c, net, key, b, len);
        gwr_free(b);
        if (s) return s;
    }
    return GWR_OK;
}

/* opt->infer_shapes: types for what the file left untyped, in topological
 * order (subgraphs before their owner). A failure restores the layer's
 * outputs as they were; types the file gave are never replaced. */
static void infer_net(gwr_network *net, int in_order) {
    int64_t n = gwr_network_num_layers(net);
    gwr_layer **order = gwr_malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!order) return;
    if (in_order || gwr_network_topo_order(net, order))
        for (int64_t i = 0; i < n; i++) order[i] = gwr_network_layer(net, i);
    for (int64_t i = 0; i < n; i++) {
        gwr_layer *l = order[i];
        for (int a = 0; a < gwr_layer_num_attrs(l); a++) {
            gwr_attr_type at = gwr_layer_attr_type(l, a);
            gwr_network *g1, *const *gs;
            int64_t ng = 0;
            if (at == GWR_ATTR_GRAPH && !gwr_layer_get_graph(l, gwr_layer_attr_name(l, a), &g1)) infer_net(g1, in_order);
            if (at == GWR_ATTR_GRAPHS && !gwr_layer_get_graphs(l, gwr_layer_attr_name(l, a), &gs, &ng))
                for (int64_t k = 0; k < ng; k++) infer_net(gs[k], in_order);
        }
        int nout = gwr_layer_num_outputs(l), untyped = 0, other_kind = 0;
        for (int o = 0; o < nout; o++) {
            gwr_tensor *t = gwr_layer_output(l, o);
            other_kind |= gwr_tensor_kind(t) != GWR_VALUE_TENSOR;
            untyped |= gwr_tensor_dtype(t) == GWR_UNDEFINED && gwr_tensor_rank(t) < 0;
        }
        if (!untyped || other_kind) continue;
        struct saved { gwr_dtype dt; int rank; const gwr_dim *dims; } *sv = gwr_malloc((size_t)nout * sizeof *sv);
        if (!sv) break;
        for (int o = 0; o < nout; o++) {
            gwr_tensor *t = gwr_layer_output(l, o);
            /* Interned shapes live as long as the network: the pointer stays good. */
            sv[o] = (struct saved){gwr_tensor_dtype(t), gwr_tensor_rank(t), gwr_tensor_dims(t)};
        }
        int failed = gwr_layer_infer(l) != GWR_OK;
        for (int o = 0; o < nout; o++) {
            gwr_tensor *t = gwr_layer_output(l, o);
            int was_typed = sv[o].dt != GWR_UNDEFINED || sv[o].rank >= 0;
            if (failed || was_typed) (void)gwr_tensor_set_type(t, sv[o].dt, sv[o].rank, sv[o].dims);
        }
        gwr_free(sv);
    }
    gwr_free(order);
}

static gwr_network *load(gwr_oi_ctx *c) {
    uint8_t *skel = NULL;
    size_t skel_len = 0, nspans = 0;
    gwr_oi_span *spans = NULL;
    Onnx__ModelProto *m = NULL;
    gwr_network *net = NULL;
    gwr_arena skel_arena;
    gwr_arena_init(&skel_arena);
    ProtobufCAllocator skel_alloc = {arena_alloc, arena_free, &skel_arena};
    c->alloc = gwr_onnx_pb_allocator;
    if (!c->size) {
        gwr_oi_fail(c, GWR_ERR_PARSE, "empty file");
        goto out;
    }
    if (c->size > INT32_MAX) {
        gwr_oi_fail(c, GWR_ERR_UNSUPPORTED, "%zu bytes exceed protobuf's 2 GiB limit (a model this big keeps its weights in external data)",
                    c->size);
        goto out;
    }
    if (gwr_oi_wire_check(c) || gwr_oi_wire_split(c, &skel, &skel_len, &spans, &nspans)) goto out;
    m = onnx__model_proto__unpack(&skel_alloc, skel ? skel_len : c->size, skel ? skel : c->data);
    gwr_free(skel);
    if (!m) {
        gwr_oi_fail(c, GWR_ERR_PARSE, "not a valid ONNX model (protobuf-c cannot unpack it)");
        goto out;
    }
    if (!m->graph) {
        gwr_oi_fail(c, GWR_ERR_PARSE, "not an ONNX model: no graph");
        goto out;
    }
    if (!(net = gwr_network_new(m->graph->name))) {
        gwr_oi_fail(c, GWR_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (model_props(c, net, m) || import_graph(c, m->graph, net, spans, nspans)) goto out;
    gwr_arena_free(&skel_arena); /* m with it */
    m = NULL;
    /* No gwr_network_verify here: the network was built through the IR's
     * API, which keeps its invariants and refuses a cycle where a deferred
     * input would close one (resolve_deferred reports it). */
    /* When no node read a name produced after it, the file's order, which
     * the network kept, is topological. */
    if (c->opt.infer_shapes) infer_net(net, !c->deferred);
out:
    gwr_arena_free(&skel_arena);
    gwr_free(spans);
    gwr_oi_ext_close(c);
    if (c->st && net) {
        gwr_network_free(net);
        net = NULL;
    }
    return net;
}

/* Sets gwr_last_errmsg to "PATH: problem" on one line. */
static void report(const char *path, gwr_status s, const char *msg) {
    char buf[2 * GWR_ERRMSG_MAX + 4];
    snprintf(buf, sizeof buf, "%s: %s", path, msg);
    buf[GWR_ERRMSG_MAX - 1] = 0;
    for (char *p = buf; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = ' ';
    gwr_set_last_error(s, "%s", buf);
}

static gwr_oi_ctx *ctx_new(const char *path, const gwr_onnx_load_options *opt) {
    gwr_oi_ctx *c = gwr_calloc(1, sizeof *c);
    if (!c) {
        gwr_set_last_error(GWR_ERR_NOMEM, "%s: out of memory", path);
        return NULL;
    }
    c->path = path;
    if (opt) c->opt = *opt;
    return c;
}

static gwr_network *finish(gwr_oi_ctx *c, gwr_network *net) {
    if (!net) report(c->path, c->st ? c->st : GWR_ERR_PARSE, c->err);
    gwr_free(c);
    return net;
}

gwr_network *gwr_onnx_load(const char *path, const gwr_onnx_load_options *opt) {
    if (!path) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_onnx_load: NULL path");
        return NULL;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        char msg[300];
        snprintf(msg, sizeof msg, "cannot open: %s", strerror(errno));
        if (fd >= 0) close(fd);
        report(path, GWR_ERR_IO, msg);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        report(path, GWR_ERR_IO, S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
        return NULL;
    }
    gwr_oi_ctx *c = ctx_new(path, opt);
    if (!c) {
        close(fd);
        return NULL;
    }
    /* External data lives next to the model. */
    const char *slash = strrchr(path, '/');
    char *dir = slash ? gwr_memdup(path, slash == path ? 1 : (size_t)(slash - path)) : gwr_strdup(".");
    void *map = NULL;
    size_t size = (size_t)st.st_size;
    if (!dir) {
        gwr_oi_fail(c, GWR_ERR_NOMEM, "out of memory");
    } else if (size) {
        map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            map = NULL;
            gwr_oi_fail(c, GWR_ERR_IO, "cannot map: %s", strerror(errno));
        }
    }
    close(fd);
    gwr_network *net = NULL;
    if (!c->st) {
        c->base_dir = dir;
        c->data = map ? map : (const uint8_t *)"";
        c->size = size;
        c->drop_pages = map != NULL;
        net = load(c);
    }
    if (map) munmap(map, size);
    gwr_free(dir);
    return finish(c, net);
}

gwr_network *gwr_onnx_load_memory(const void *data, size_t size, const char *base_dir, const char *name,
                                  const gwr_onnx_load_options *opt) {
    if (!name) name = "<memory>";
    if (!data && size) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "%s: NULL data", name);
        return NULL;
    }
    gwr_oi_ctx *c = ctx_new(name, opt);
    if (!c) return NULL;
    c->base_dir = base_dir;
    c->data = data ? data : (const uint8_t *)"";
    c->size = size;
    return finish(c, load(c));
}
