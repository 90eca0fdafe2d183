/* export.c - a gwr_network as a protobuf-c ModelProto tree, the inverse of
 * the importer (docs/onnx.md is the mapping). The tree points into the
 * network: names, attribute arrays and weight bytes are not copied; only the
 * message structs and pointer arrays are new, all in one arena. What rode
 * along in properties goes back to its field; messages kept serialized in
 * properties (functions, sparse tensors, type protos, ...) are unpacked and
 * hung into the tree. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir_api.h"
#include "onnx/onnx_common.h"
#include "onnx/onnx_export.h"

gwr_status gwr_ox_fail(gwr_ox_ctx *c, gwr_status s, const char *fmt, ...) {
    if (c->st) return c->st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    c->st = s;
    return s;
}

/* ---- allocation ---- */

static void *ox_alloc(gwr_ox_ctx *c, size_t n) {
    void *p = gwr_arena_alloc(&c->arena, n);
    if (!p) gwr_ox_fail(c, GWR_ERR_NOMEM, "out of memory");
    return p;
}

/* n elements of `elem` bytes, zeroed; NULL (not an error) when n is 0. */
static void *ox_array(gwr_ox_ctx *c, size_t n, size_t elem) {
    if (!n) return NULL;
    if (n > SIZE_MAX / elem) {
        gwr_ox_fail(c, GWR_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return ox_alloc(c, n * elem);
}

/* A new message of type T in the arena, set to its INIT value. */
#define OX_NEW(c, var, T, INIT)                                                                                     \
    do {                                                                                                            \
        (var) = ox_alloc((c), sizeof(T));                                                                           \
        if (var) {                                                                                                  \
            T init_ = INIT;                                                                                         \
            *(var) = init_;                                                                                         \
        }                                                                                                           \
    } while (0)

/* protobuf-c's structs take char *; the strings are the network's and are
 * only read. */
static char *S(const char *s) { return (char *)s; }
static char *S_or_null(const char *s) { return s && *s ? (char *)s : NULL; }

static int keep_unpacked(gwr_ox_ctx *c, ProtobufCMessage *m) {
    if (gwr_grow((void **)&c->unpacked, sizeof *c->unpacked, &c->unpacked_cap, c->nunpacked + 1)) {
        protobuf_c_message_free_unpacked(m, &gwr_onnx_pb_allocator);
        gwr_ox_fail(c, GWR_ERR_NOMEM, "out of memory");
        return -1;
    }
    c->unpacked[c->nunpacked++] = m;
    return 0;
}

/* Unpacks a message kept serialized in a property or attribute; the
 * context frees it. NULL with the failure recorded. */
static void *ox_unpack(gwr_ox_ctx *c, const ProtobufCMessageDescriptor *d, const void *data, size_t len,
                       const char *what) {
    ProtobufCMessage *m = protobuf_c_message_unpack(d, &gwr_onnx_pb_allocator, len, (const uint8_t *)data);
    if (!m) {
        gwr_ox_fail(c, GWR_ERR_PARSE, "%s: the serialized %s does not parse", what, d->short_name);
        return NULL;
    }
    return keep_unpacked(c, m) ? NULL : m;
}

static int ox_patch(gwr_ox_ctx *c, char **field, const char *value) {
    if (*field && !strcmp(*field, value)) return 0;
    if (gwr_grow((void **)&c->patches, sizeof *c->patches, &c->patches_cap, c->npatches + 1)) {
        gwr_ox_fail(c, GWR_ERR_NOMEM, "out of memory");
        return -1;
    }
    c->patches[c->npatches++] = (gwr_ox_patch){field, *field};
    *field = S(value);
    return 0;
}

void gwr_ox_free(gwr_ox_ctx *c) {
    for (int64_t i = c->npatches - 1; i >= 0; i--) *c->patches[i].field = c->patches[i].orig;
    for (int64_t i = 0; i < c->nunpacked; i++) protobuf_c_message_free_unpacked(c->unpacked[i], &gwr_onnx_pb_allocator);
    gwr_free(c->unpacked);
    gwr_free(c->patches);
    gwr_free(c->tensors);
    gwr_free(c->domains);
    gwr_arena_free(&c->arena);
    c->unpacked = NULL, c->patches = NULL, c->tensors = NULL, c->domains = NULL;
    c->nunpacked = c->npatches = c->ntensors = c->ndomains = 0;
    c->unpacked_cap = c->patches_cap = c->tensors_cap = c->domains_cap = 0;
}

/* ---- properties ---- */

/* Do any layer or tensor of net carry properties? (Most networks built in
 * code have none: every per-object lookup is skipped.) */
static int net_has_objprops(const gwr_network *net) { return net->objprops.count + net->layerprops.count > 0; }

/* The value of "<prefix><name>" on layer l, or NULL. */
static const char *layer_prop2(const gwr_layer *l, const char *prefix, const char *name, size_t *len) {
    char buf[256];
    size_t pl = strlen(prefix), nl = strlen(name);
    char *key = pl + nl < sizeof buf ? buf : gwr_malloc(pl + nl + 1);
    if (!key) return NULL;
    memcpy(key, prefix, pl);
    memcpy(key + pl, name, nl + 1);
    const char *v = gwr_layer_prop(l, key, len);
    if (key != buf) gwr_free(key);
    return v;
}

static int parse_i64(const char *s, int64_t *out) {
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

/* Props "<prefix><anything>" of net, in order: their count, and their
 * entries into `keys`/`vals` when not NULL. */
static int64_t props_with_prefix(const gwr_network *net, const char *prefix, const char **keys, const char **vals,
                                 size_t *lens) {
    size_t pl = strlen(prefix);
    int64_t n = 0;
    for (int i = 0; i < net->props.n; i++) {
        const gwr_prop *p = &net->props.v[i];
        if (strncmp(p->key, prefix, pl)) continue;
        if (keys) keys[n] = p->key + pl;
        if (vals) vals[n] = p->val;
        if (lens) lens[n] = p->len;
        n++;
    }
    return n;
}

/* Messages kept serialized in props "<prefix><i>", unpacked, in order. */
static void **unpack_props(gwr_ox_ctx *c, const gwr_network *net, const char *prefix,
                           const ProtobufCMessageDescriptor *d, size_t *n) {
    int64_t k = props_with_prefix(net, prefix, NULL, NULL, NULL);
    *n = 0;
    if (!k) return NULL;
    const char **keys = ox_array(c, (size_t)k, sizeof *keys), **vals = ox_array(c, (size_t)k, sizeof *vals);
    size_t *lens = ox_array(c, (size_t)k, sizeof *lens);
    void **out = ox_array(c, (size_t)k, sizeof *out);
    if (!keys || !vals || !lens || !out) return NULL;
    props_with_prefix(net, prefix, keys, vals, lens);
    for (int64_t i = 0; i < k; i++) {
        char what[200];
        snprintf(what, sizeof what, "property '%s%.80s'", prefix, keys[i]);
        if (!(out[i] = ox_unpack(c, d, vals[i], lens[i], what))) return NULL;
    }
    *n = (size_t)k;
    return out;
}

/* ---- tensors and types ---- */

/* Notes element type dt as written: the IR version that introduced it
 * (float8 9, 4-bit integers 10, float4e2m1 11, float8e8m0 12, 2-bit 13)
 * is the least the model may declare. */
static void ox_dtype_seen(gwr_ox_ctx *c, gwr_dtype dt) {
    int64_t v = dt >= GWR_FLOAT8E4M3FN && dt <= GWR_FLOAT8E5M2FNUZ ? 9
              : dt == GWR_UINT4 || dt == GWR_INT4                 ? 10
              : dt == GWR_FLOAT4E2M1                               ? 11
              : dt == GWR_FLOAT8E8M0                               ? 12
              : dt == GWR_UINT2 || dt == GWR_INT2                  ? 13
                                                                   : 0;
    if (v > c->dtype_ir) c->dtype_ir = v;
}

/* A TensorProto of w named `name` (NULL or "": none): raw_data points at
 * w's bytes, string_data at its strings. */
static Onnx__TensorProto *ox_tensor(gwr_ox_ctx *c, const gwr_weights *w, const char *name) {
    Onnx__TensorProto *tp;
    OX_NEW(c, tp, Onnx__TensorProto, ONNX__TENSOR_PROTO__INIT);
    if (!tp) return NULL;
    tp->n_dims = (size_t)w->rank;
    tp->dims = (int64_t *)w->dims;
    tp->has_data_type = 1;
    tp->data_type = (int32_t)w->dtype;
    ox_dtype_seen(c, w->dtype);
    tp->name = S_or_null(name);
    if (w->dtype == GWR_STRING) {
        size_t n = w->nbytes / sizeof(gwr_bytes);
        const gwr_bytes *b = w->data;
        ProtobufCBinaryData *sd = ox_array(c, n, sizeof *sd);
        if (n && !sd) return NULL;
        for (size_t i = 0; i < n; i++) sd[i].len = b[i].len, sd[i].data = (uint8_t *)b[i].data;
        tp->n_string_data = n;
        tp->string_data = sd;
    } else if (w->nbytes) {
        tp->has_raw_data = 1;
        tp->raw_data.len = w->nbytes;
        tp->raw_data.data = (uint8_t *)w->data;
        if (gwr_grow((void **)&c->tensors, sizeof *c->tensors, &c->tensors_cap, c->ntensors + 1)) {
            gwr_ox_fail(c, GWR_ERR_NOMEM, "out of memory");
            return NULL;
        }
        c->tensors[c->ntensors++] = (gwr_ox_tensor){tp, w->data, w->nbytes};
    }
    return tp;
}

static Onnx__TensorShapeProto *ox_shape(gwr_ox_ctx *c, const gwr_network *net, int rank, const gwr_dim *dims,
                                        const gwr_tensor *t) {
    Onnx__TensorShapeProto *sh;
    OX_NEW(c, sh, Onnx__TensorShapeProto, ONNX__TENSOR_SHAPE_PROTO__INIT);
    Onnx__TensorShapeProto__Dimension **pd = ox_array(c, (size_t)rank, sizeof *pd);
    Onnx__TensorShapeProto__Dimension *dv = ox_array(c, (size_t)rank, sizeof *dv);
    if (!sh || (rank && (!pd || !dv))) return NULL;
    int props = t && gwr_tensor_num_props(t) > 0;
    for (int i = 0; i < rank; i++) {
        Onnx__TensorShapeProto__Dimension init = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT, *d = &dv[i];
        *d = init;
        const char *sym = GWR_DIM_IS_SYM(dims[i]) ? gwr_network_dim_name(net, dims[i]) : NULL;
        if (GWR_DIM_IS_KNOWN(dims[i])) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = dims[i];
        } else if (sym) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = S(sym);
        } /* else unknown: neither field */
        if (props) {
            char key[48];
            snprintf(key, sizeof key, "onnx.dim_denotation.%d", i);
            d->denotation = S(gwr_tensor_prop(t, key, NULL));
        }
        pd[i] = d;
    }
    sh->n_dim = (size_t)rank;
    sh->dim = pd;
    return sh;
}

/* The TypeProto of ty; t (may be NULL) supplies the denotations of the top
 * level. */
static Onnx__TypeProto *ox_type(gwr_ox_ctx *c, const gwr_network *net, const gwr_type *ty, const gwr_tensor *t,
                                int depth) {
    if (depth > 64) {
        gwr_ox_fail(c, GWR_ERR_UNSUPPORTED, "a value type nested deeper than 64");
        return NULL;
    }
    Onnx__TypeProto *tp;
    OX_NEW(c, tp, Onnx__TypeProto, ONNX__TYPE_PROTO__INIT);
    if (!tp) return NULL;
    if (t && gwr_tensor_num_props(t) > 0) tp->denotation = S(gwr_tensor_prop(t, "onnx.denotation", NULL));
    switch (ty->kind) {
    case GWR_VALUE_TENSOR:
    case GWR_VALUE_SPARSE_TENSOR: {
        /* Both messages have the same layout of fields. */
        Onnx__TensorShapeProto *sh = NULL;
        if (ty->rank >= 0 && !(sh = ox_shape(c, net, ty->rank, ty->dims, t))) return NULL;
        if (ty->kind == GWR_VALUE_TENSOR) {
            Onnx__TypeProto__Tensor *tt;
            OX_NEW(c, tt, Onnx__TypeProto__Tensor, ONNX__TYPE_PROTO__TENSOR__INIT);
            if (!tt) return NULL;
            tt->has_elem_type = ty->dtype != GWR_UNDEFINED;
            tt->elem_type = (int32_t)ty->dtype;
            ox_dtype_seen(c, ty->dtype);
            tt->shape = sh;
            tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
            tp->tensor_type = tt;
        } else {
            Onnx__TypeProto__SparseTensor *st;
            OX_NEW(c, st, Onnx__TypeProto__SparseTensor, ONNX__TYPE_PROTO__SPARSE_TENSOR__INIT);
            if (!st) return NULL;
            st->has_elem_type = ty->dtype != GWR_UNDEFINED;
            st->elem_type = (int32_t)ty->dtype;
            ox_dtype_seen(c, ty->dtype);
            st->shape = sh;
            tp->value_case = ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE;
            tp->sparse_tensor_type = st;
        }
        return tp;
    }
    case GWR_VALUE_SEQUENCE:
    case GWR_VALUE_OPTIONAL:
    case GWR_VALUE_MAP: {
        Onnx__TypeProto *elem = ty->elem ? ox_type(c, net, ty->elem, NULL, depth + 1) : NULL;
        if (ty->elem && !elem) return NULL;
        if (ty->kind == GWR_VALUE_SEQUENCE) {
            Onnx__TypeProto__Sequence *s;
            OX_NEW(c, s, Onnx__TypeProto__Sequence, ONNX__TYPE_PROTO__SEQUENCE__INIT);
            if (!s) return NULL;
            s->elem_type = elem;
            tp->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
            tp->sequence_type = s;
        } else if (ty->kind == GWR_VALUE_OPTIONAL) {
            Onnx__TypeProto__Optional *o;
            OX_NEW(c, o, Onnx__TypeProto__Optional, ONNX__TYPE_PROTO__OPTIONAL__INIT);
            if (!o) return NULL;
            o->elem_type = elem;
            tp->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
            tp->optional_type = o;
        } else {
            Onnx__TypeProto__Map *m;
            OX_NEW(c, m, Onnx__TypeProto__Map, ONNX__TYPE_PROTO__MAP__INIT);
            if (!m) return NULL;
            m->has_key_type = 1;
            m->key_type = (int32_t)ty->dtype;
            m->value_type = elem;
            tp->value_case = ONNX__TYPE_PROTO__VALUE_MAP_TYPE;
            tp->map_type = m;
        }
        return tp;
    }
    }
    gwr_ox_fail(c, GWR_ERR_UNSUPPORTED, "value kind %d", (int)ty->kind);
    return NULL;
}

/* Is every element type in ty known? A TypeProto with a tensor type but no
 * elem_type reads as elem_type 0, which onnxruntime refuses ("Invalid
 * tensor data type 0"): such a type is not written at all, as a file that
 * left it empty did. */
static int type_known(const gwr_type *ty, int depth) {
    if (depth > 64) return 0;
    switch (ty->kind) {
    case GWR_VALUE_TENSOR:
    case GWR_VALUE_SPARSE_TENSOR: return ty->dtype != GWR_UNDEFINED;
    case GWR_VALUE_MAP:
        if (ty->dtype == GWR_UNDEFINED) return 0;
        /* fall through */
    case GWR_VALUE_SEQUENCE:
    case GWR_VALUE_OPTIONAL: return ty->elem && type_known(ty->elem, depth + 1);
    }
    return 0;
}

/* A ValueInfoProto for t: name, type (none when an element type in it is
 * not known), doc string. */
static Onnx__ValueInfoProto *ox_value_info(gwr_ox_ctx *c, const gwr_tensor *t) {
    Onnx__ValueInfoProto *vi;
    OX_NEW(c, vi, Onnx__ValueInfoProto, ONNX__VALUE_INFO_PROTO__INIT);
    if (!vi) return NULL;
    vi->name = S(t->name);
    gwr_type ty;
    gwr_tensor_value_type(t, &ty);
    int props = gwr_tensor_num_props(t) > 0;
    const char *denotation = props ? gwr_tensor_prop(t, "onnx.denotation", NULL) : NULL;
    if (type_known(&ty, 0)) {
        if (!(vi->type = ox_type(c, gwr_ir_tnet(t), &ty, t, 0))) return NULL;
    } else if (denotation) {
        /* No type to write, only its denotation. */
        OX_NEW(c, vi->type, Onnx__TypeProto, ONNX__TYPE_PROTO__INIT);
        if (!vi->type) return NULL;
        vi->type->denotation = S(denotation);
    }
    if (props) vi->doc_string = S(gwr_tensor_prop(t, "onnx.doc", NULL));
    return vi;
}

/* ---- nodes and attributes ---- */

static Onnx__GraphProto *ox_graph(gwr_ox_ctx *c, gwr_network *net, int depth);

/* What onnx.attr_type says an attribute's bytes are. */
typedef enum { KEPT_UNKNOWN, KEPT_SPARSE, KEPT_TYPE } kept_kind;

static kept_kind parse_kept(const char *kind, int *plural) {
    *plural = !strcmp(kind, "sparse_tensors") || !strcmp(kind, "type_protos");
    if (!strcmp(kind, "sparse_tensor") || !strcmp(kind, "sparse_tensors")) return KEPT_SPARSE;
    if (!strcmp(kind, "type_proto") || !strcmp(kind, "type_protos")) return KEPT_TYPE;
    return KEPT_UNKNOWN;
}

/* Unpacks the serialized message(s) of STRING (plural: STRINGS) attribute
 * a into at. */
static gwr_status attr_kept(gwr_ox_ctx *c, const gwr_layer *l, const gwr_attr *a, kept_kind k, int plural,
                            Onnx__AttributeProto *at) {
    char what[300];
    snprintf(what, sizeof what, "layer '%.100s' attribute '%.100s'", l->name, a->name);
    const ProtobufCMessageDescriptor *d =
        k == KEPT_SPARSE ? &onnx__sparse_tensor_proto__descriptor : &onnx__type_proto__descriptor;
    if (!plural) {
        void *m = ox_unpack(c, d, a->v.s, (size_t)a->n, what);
        if (!m) return c->st;
        if (k == KEPT_SPARSE) {
            at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR;
            at->sparse_tensor = m;
        } else {
            at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO;
            at->tp = m;
        }
        return GWR_OK;
    }
    void **ms = ox_array(c, (size_t)a->n, sizeof *ms);
    if (a->n && !ms) return c->st;
    for (int64_t i = 0; i < a->n; i++)
        if (!(ms[i] = ox_unpack(c, d, a->v.strings[i].data, a->v.strings[i].len, what))) return c->st;
    if (k == KEPT_SPARSE) {
        at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS;
        at->n_sparse_tensors = (size_t)a->n;
        at->sparse_tensors = (Onnx__SparseTensorProto **)ms;
    } else {
        at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS;
        at->n_type_protos = (size_t)a->n;
        at->type_protos = (Onnx__TypeProto **)ms;
    }
    return GWR_OK;
}

static Onnx__AttributeProto *ox_attr(gwr_ox_ctx *c, const gwr_layer *l, const gwr_attr *a, int props, int depth) {
    Onnx__AttributeProto *at;
    OX_NEW(c, at, Onnx__AttributeProto, ONNX__ATTRIBUTE_PROTO__INIT);
    if (!at) return NULL;
    at->name = S(a->name);
    at->has_type = 1;
    if (props) {
        at->doc_string = S(layer_prop2(l, "onnx.attr_doc.", a->name, NULL));
        at->ref_attr_name = S(layer_prop2(l, "onnx.attr_ref.", a->name, NULL));
        const char *kind = layer_prop2(l, "onnx.attr_type.", a->name, NULL);
        int plural = 0;
        kept_kind k = kind ? parse_kept(kind, &plural) : KEPT_UNKNOWN;
        if (kind && k == KEPT_UNKNOWN) {
            gwr_ox_fail(c, GWR_ERR_INVALID_ARG, "layer '%.100s' attribute '%.100s': unknown onnx.attr_type '%.40s'",
                        l->name, a->name, kind);
            return NULL;
        }
        /* The bytes live in a STRING (STRINGS) attribute; one that a
         * rewrite gave another type made the property stale. */
        if (kind && a->type == (plural ? GWR_ATTR_STRINGS : GWR_ATTR_STRING))
            return attr_kept(c, l, a, k, plural, at) ? NULL : at;
    }
    switch (a->type) {
    case GWR_ATTR_FLOAT:
        at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        at->has_f = 1;
        at->f = a->v.f;
        break;
    case GWR_ATTR_INT:
        at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        at->has_i = 1;
        at->i = a->v.i;
        break;
    case GWR_ATTR_STRING:
        at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
        at->has_s = 1;
        at->s.len = (size_t)a->n;
        at->s.data = (uint8_t *)a->v.s;
        break;
    case GWR_ATTR_FLOATS:
        at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
        at->n_floats = (size_t)a->n;
        at->floats = a->v.floats;
        break;
    case GWR_ATTR_INTS:
        at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        at->n_ints = (size_t)a->n;
        at->ints = a->v.ints;
        break;
    case GWR_ATTR_STRINGS: {
        ProtobufCBinaryData *sv = ox_array(c, (size_t)a->n, sizeof *sv);
        if (a->n && !sv) return NULL;
        for (int64_t i = 0; i < a->n; i++)
            sv[i].len = a->v.strings[i].len, sv[i].data = (uint8_t *)a->v.strings[i].data;
        at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
        at->n_strings = (size_t)a->n;
        at->strings = sv;
        break;
    }
    case GWR_ATTR_TENSOR:
        at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
        if (!(at->t = ox_tensor(c, &a->v.tensors[0], a->v.tensors[0].name))) return NULL;
        break;
    case GWR_ATTR_TENSORS: {
        Onnx__TensorProto **tv = ox_array(c, (size_t)a->n, sizeof *tv);
        if (a->n && !tv) return NULL;
        for (int64_t i = 0; i < a->n; i++)
            if (!(tv[i] = ox_tensor(c, &a->v.tensors[i], a->v.tensors[i].name))) return NULL;
        at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS;
        at->n_tensors = (size_t)a->n;
        at->tensors = tv;
        break;
    }
    case GWR_ATTR_GRAPH:
        at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
        if (!(at->g = ox_graph(c, a->v.graphs[0], depth + 1))) return NULL;
        break;
    case GWR_ATTR_GRAPHS: {
        Onnx__GraphProto **gv = ox_array(c, (size_t)a->n, sizeof *gv);
        if (a->n && !gv) return NULL;
        for (int64_t i = 0; i < a->n; i++)
            if (!(gv[i] = ox_graph(c, a->v.graphs[i], depth + 1))) return NULL;
        at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS;
        at->n_graphs = (size_t)a->n;
        at->graphs = gv;
        break;
    }
    default:
        gwr_ox_fail(c, GWR_ERR_UNSUPPORTED, "layer '%.100s' attribute '%.100s' has no type", l->name, a->name);
        return NULL;
    }
    return at;
}

/* Notes that a written layer uses domain d with an op since version v. */
static int note_domain(gwr_ox_ctx *c, const char *d, int64_t since) {
    for (int64_t i = c->ndomains - 1; i >= 0; i--)
        if (c->domains[i].domain == d || !strcmp(c->domains[i].domain, d)) {
            if (since > c->domains[i].since) c->domains[i].since = since;
            return 0;
        }
    if (gwr_grow((void **)&c->domains, sizeof *c->domains, &c->domains_cap, c->ndomains + 1)) {
        gwr_ox_fail(c, GWR_ERR_NOMEM, "out of memory");
        return -1;
    }
    c->domains[c->ndomains++] = (gwr_ox_domain){d, since};
    return 0;
}

/* The name a tensor is written under as a node output: "" for an absent
 * optional output (prop onnx.absent) that nothing reads. */
static const char *output_name(const gwr_tensor *t, int props) {
    if (props && !t->nuses && t->output_index < 0 && gwr_tensor_prop(t, "onnx.absent", NULL)) return "";
    return t->name;
}

static gwr_status removed_input(gwr_ox_ctx *c, const gwr_layer *l, const gwr_tensor *t) {
    return gwr_ox_fail(c, GWR_ERR_STATE,
                       "layer '%.100s' reads '%.100s', the output of removed layer '%.100s': prune first "
                       "(gwr_network_prune)",
                       l->name, t->name, t->producer->name);
}

/* How many of ONNX's value attributes a Constant layer has. */
static int constant_values(const gwr_layer *l) {
    static const char *const names[] = {"value",      "value_float", "value_floats",  "value_int",
                                        "value_ints", "value_string", "value_strings", "sparse_value"};
    int n = 0;
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) n += gwr_layer_find_attr(l, names[k]) >= 0;
    return n;
}

/* ---- node metadata_props ---- */

/* NodeProto.metadata_props (field 9), which Debian's onnx.proto predates:
 * written as protobuf-c unknown fields, each a StringStringEntryProto
 * (key = 1, value = 2). The layer's properties "onnx.meta.<key>" (what
 * the importer read from the file), and its provenance when asked. */
enum { NODE_METADATA_PROPS = 9 };

static size_t put_varint_at(uint8_t *p, uint64_t v) {
    size_t n = 0;
    while (v >= 0x80) p[n++] = (uint8_t)(v | 0x80), v >>= 7;
    p[n++] = (uint8_t)v;
    return n;
}

/* One entry as protobuf-c keeps an unknown length-delimited field: its
 * data is the length prefix, then the message. */
static int meta_entry(gwr_ox_ctx *c, ProtobufCMessageUnknownField *f, const char *key, size_t klen, const char *val,
                      size_t vlen) {
    uint8_t hk[12], hv[12], hm[12];
    size_t nk = 1 + put_varint_at(hk + 1, klen), nv = 1 + put_varint_at(hv + 1, vlen);
    hk[0] = 1 << 3 | 2, hv[0] = 2 << 3 | 2;
    size_t body = nk + klen + nv + vlen, nm = put_varint_at(hm, body);
    uint8_t *d = ox_alloc(c, nm + body);
    if (!d) return -1;
    uint8_t *q = d;
    memcpy(q, hm, nm), q += nm;
    memcpy(q, hk, nk), q += nk;
    memcpy(q, key, klen), q += klen;
    memcpy(q, hv, nv), q += nv;
    memcpy(q, val, vlen);
    f->tag = NODE_METADATA_PROPS;
    f->wire_type = PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED;
    f->len = nm + body;
    f->data = d;
    return 0;
}

static int node_metadata(gwr_ox_ctx *c, const gwr_layer *l, Onnx__NodeProto *n) {
    static const char meta[] = "onnx.meta.";
    const size_t ml = sizeof meta - 1;
    int np = gwr_layer_num_props(l), k = 0;
    for (int i = 0; i < np; i++) {
        const char *key = gwr_layer_prop_key(l, i);
        k += !strncmp(key, meta, ml) || (c->provenance && !strcmp(key, GWR_PROVENANCE_PROP));
    }
    if (!k) return 0;
    ProtobufCMessageUnknownField *f = ox_array(c, (size_t)k, sizeof *f);
    if (!f) return -1;
    k = 0;
    for (int i = 0; i < np; i++) {
        const char *key = gwr_layer_prop_key(l, i), *name;
        if (!strncmp(key, meta, ml)) name = key + ml;
        else if (c->provenance && !strcmp(key, GWR_PROVENANCE_PROP)) name = key;
        else continue;
        size_t vlen;
        const char *v = gwr_layer_prop(l, key, &vlen);
        if (meta_entry(c, &f[k++], name, strlen(name), v, vlen)) return -1;
    }
    n->base.n_unknown_fields = (unsigned)k;
    n->base.unknown_fields = f;
    return 0;
}

static Onnx__NodeProto *ox_node(gwr_ox_ctx *c, gwr_layer *l, int props, int depth) {
    Onnx__NodeProto *n;
    OX_NEW(c, n, Onnx__NodeProto, ONNX__NODE_PROTO__INIT);
    char **in = ox_array(c, (size_t)l->ninputs, sizeof *in), **out = ox_array(c, (size_t)l->noutputs, sizeof *out);
    if (!n || (l->ninputs && !in) || (l->noutputs && !out)) return NULL;
    for (int i = 0; i < l->ninputs; i++) {
        const gwr_tensor *t = l->inputs[i];
        if (t && t->producer && (t->producer->flags & LF_REMOVED)) {
            removed_input(c, l, t);
            return NULL;
        }
        in[i] = S(t ? t->name : "");
    }
    for (int o = 0; o < l->noutputs; o++) out[o] = S(output_name(&gwr_ir_outputs(l)[o], props));
    n->n_input = (size_t)l->ninputs, n->input = in;
    n->n_output = (size_t)l->noutputs, n->output = out;
    n->op_type = S(l->info->name);
    n->name = S(l->name);
    n->domain = S_or_null(l->info->domain);
    int lprops = props && gwr_layer_num_props(l) > 0;
    if (lprops) {
        const char *v;
        if (gwr_layer_prop(l, "onnx.unnamed", NULL)) n->name = NULL;
        else if ((v = gwr_layer_prop(l, "onnx.name", NULL))) n->name = S(v);
        if ((v = gwr_layer_prop(l, "onnx.domain", NULL))) n->domain = S(v);
        n->doc_string = S_or_null(gwr_layer_prop(l, "doc", NULL));
        if (node_metadata(c, l, n)) return NULL;
    }
    if (note_domain(c, l->info->domain, l->op_id != GWR_OP_CUSTOM ? l->info->since_version : 1)) return NULL;
    if (l->op_id == GWR_OP_Constant && constant_values(l) != 1) {
        gwr_ox_fail(c, GWR_ERR_INVALID_GRAPH, "Constant layer '%.100s' has %d value attributes (needs exactly one)",
                    l->name, constant_values(l));
        return NULL;
    }
    if (l->nattrs) {
        Onnx__AttributeProto **av = ox_array(c, (size_t)l->nattrs, sizeof *av);
        if (!av) return NULL;
        for (int i = 0; i < l->nattrs; i++)
            if (!(av[i] = ox_attr(c, l, &l->attrs[i], lprops, depth))) return NULL;
        n->n_attribute = (size_t)l->nattrs;
        n->attribute = av;
    }
    return n;
}

/* ---- graphs ---- */

/* Is l written as a graph initializer? 1: dense, 2: sparse, 0: a node.
 * Weights are initializers (what exporters write and runtimes expect),
 * unless the layer was read from a Constant node. */
static int initializer_kind(const gwr_layer *l) {
    if (l->op_id != GWR_OP_Constant || l->noutputs != 1 || gwr_layer_prop(l, "onnx.constant_node", NULL)) return 0;
    if (gwr_layer_prop(l, "onnx.sparse", NULL)) {
        int i = gwr_layer_find_attr(l, "sparse_value");
        return l->nattrs == 1 && i >= 0 && l->attrs[i].type == GWR_ATTR_STRING ? 2 : 0;
    }
    int i = gwr_layer_find_attr(l, "value");
    return l->nattrs == 1 && i >= 0 && l->attrs[i].type == GWR_ATTR_TENSOR ? 1 : 0;
}

static Onnx__GraphProto *ox_graph(gwr_ox_ctx *c, gwr_network *net, int depth) {
    if (depth > 256) {
        gwr_ox_fail(c, GWR_ERR_UNSUPPORTED, "subgraphs nested deeper than 256");
        return NULL;
    }
    Onnx__GraphProto *g;
    OX_NEW(c, g, Onnx__GraphProto, ONNX__GRAPH_PROTO__INIT);
    if (!g) return NULL;
    g->name = S(net->name);
    g->doc_string = S(gwr_network_prop(net, "onnx.graph_doc_string", NULL));
    int props = net_has_objprops(net);
    int64_t nl = net->nlayers, ni = net->ninputs;

    /* Inputs, and the initializers that give some of them a default. */
    Onnx__ValueInfoProto **inputs = ox_array(c, (size_t)ni, sizeof *inputs);
    int64_t ndefaults = 0;
    if (ni && !inputs) return NULL;
    for (int64_t i = 0; i < ni; i++) {
        if (!(inputs[i] = ox_value_info(c, net->inputs[i]))) return NULL;
        if (gwr_tensor_default(net->inputs[i])) ndefaults++;
    }
    g->n_input = (size_t)ni, g->input = inputs;

    /* Initializer layers (network order), then nodes (topological order). */
    int64_t ninit = 0, nsparse = 0;
    unsigned char *kinds = ox_array(c, (size_t)nl, 1);
    if (nl && !kinds) return NULL;
    for (int64_t i = 0; i < nl; i++) {
        gwr_layer *l = net->layers[i];
        kinds[i] = (l->flags & LF_REMOVED) ? 0 : (unsigned char)initializer_kind(l);
        ninit += kinds[i] == 1, nsparse += kinds[i] == 2;
    }
    Onnx__TensorProto **inits = ox_array(c, (size_t)(ndefaults + ninit), sizeof *inits);
    Onnx__SparseTensorProto **sparse = ox_array(c, (size_t)nsparse, sizeof *sparse);
    if ((ndefaults + ninit && !inits) || (nsparse && !sparse)) return NULL;
    int64_t k = 0, ks = 0;
    for (int64_t i = 0; i < ni; i++) {
        const gwr_weights *w = gwr_tensor_default(net->inputs[i]);
        if (w && !(inits[k++] = ox_tensor(c, w, net->inputs[i]->name))) return NULL;
    }
    for (int64_t i = 0; i < nl; i++) {
        gwr_layer *l = net->layers[i];
        if (!kinds[i]) continue;
        const char *tname = gwr_ir_outputs(l)[0].name; /* kinds: exactly one output */
        if (kinds[i] == 1) {
            if (!(inits[k++] = ox_tensor(c, &l->attrs[0].v.tensors[0], tname))) return NULL;
        } else if (kinds[i] == 2) {
            char what[200];
            snprintf(what, sizeof what, "sparse initializer '%.100s'", tname);
            Onnx__SparseTensorProto *sp =
                ox_unpack(c, &onnx__sparse_tensor_proto__descriptor, l->attrs[0].v.s, (size_t)l->attrs[0].n, what);
            if (!sp) return NULL;
            if (!sp->values) {
                gwr_ox_fail(c, GWR_ERR_INVALID_ARG, "%s has no values tensor", what);
                return NULL;
            }
            /* The tensor's current name is the initializer's name. */
            if (ox_patch(c, &sp->values->name, tname)) return NULL;
            sparse[ks++] = sp;
        }
    }
    g->n_initializer = (size_t)k, g->initializer = inits;
    g->n_sparse_initializer = (size_t)ks, g->sparse_initializer = sparse;

    gwr_layer **order = ox_array(c, (size_t)nl, sizeof *order);
    Onnx__NodeProto **nodes = ox_array(c, (size_t)nl, sizeof *nodes);
    if (nl && (!order || !nodes)) return NULL;
    if (nl && gwr_network_topo_order(net, order)) {
        gwr_ox_fail(c, GWR_ERR_CYCLE, "%s", net->errmsg);
        return NULL;
    }
    int64_t nn = 0, nvi = 0;
    for (int64_t i = 0; i < nl; i++) {
        gwr_layer *l = order[i];
        if ((l->flags & LF_REMOVED) || kinds[l->index]) continue;
        if (!(nodes[nn++] = ox_node(c, l, props, depth))) return NULL;
    }
    g->n_node = (size_t)nn, g->node = nodes;

    /* Outputs. */
    int64_t no = net->noutputs;
    Onnx__ValueInfoProto **outputs = ox_array(c, (size_t)no, sizeof *outputs);
    if (no && !outputs) return NULL;
    for (int64_t i = 0; i < no; i++) {
        const gwr_tensor *t = net->outputs[i];
        if (t->producer && (t->producer->flags & LF_REMOVED)) {
            gwr_ox_fail(c, GWR_ERR_STATE,
                        "graph output '%.100s' is produced by removed layer '%.100s': prune first (gwr_network_prune)",
                        t->name, t->producer->name);
            return NULL;
        }
        if (!(outputs[i] = ox_value_info(c, t))) return NULL;
    }
    g->n_output = (size_t)no, g->output = outputs;

    /* value_info: exactly the tensors with prop onnx.value_info, inputs
     * first, then the written layers' outputs in the order written
     * (initializers, then nodes), so that saving what was loaded gives the
     * same bytes. */
    if (props) {
        for (int pass = 0; pass < 2; pass++) {
            Onnx__ValueInfoProto **vis = NULL;
            if (pass == 1) {
                if (!nvi) break;
                if (!(vis = ox_array(c, (size_t)nvi, sizeof *vis))) return NULL;
                nvi = 0;
            }
            for (int64_t i = 0; i < ni + 2 * nl; i++) {
                gwr_tensor *ts;
                int nt;
                if (i < ni) {
                    ts = net->inputs[i], nt = 1;
                } else {
                    int first = i < ni + nl;
                    gwr_layer *l = first ? net->layers[i - ni] : order[i - ni - nl];
                    if ((l->flags & LF_REMOVED) || !kinds[l->index] != !first) continue;
                    ts = gwr_ir_outputs(l), nt = l->noutputs;
                }
                for (int o = 0; o < nt; o++) {
                    if (!gwr_tensor_prop(&ts[o], "onnx.value_info", NULL)) continue;
                    if (pass == 1 && !(vis[nvi] = ox_value_info(c, &ts[o]))) return NULL;
                    nvi++;
                }
            }
            if (pass == 1) g->n_value_info = (size_t)nvi, g->value_info = vis;
        }
    }

    size_t nq;
    void **q = unpack_props(c, net, "onnx.quantization_annotation.", &onnx__tensor_annotation__descriptor, &nq);
    if (c->st) return NULL;
    g->n_quantization_annotation = nq, g->quantization_annotation = (Onnx__TensorAnnotation **)q;
    return g;
}

/* ---- the model ---- */

static int64_t default_opset(const char *domain) {
    if (!*domain) return 17;
    if (!strcmp(domain, "ai.onnx.ml")) return 3;
    return 1;
}

static Onnx__OperatorSetIdProto *ox_opset(gwr_ox_ctx *c, const char *domain, int64_t version) {
    Onnx__OperatorSetIdProto *o;
    OX_NEW(c, o, Onnx__OperatorSetIdProto, ONNX__OPERATOR_SET_ID_PROTO__INIT);
    if (!o) return NULL;
    o->domain = S(domain);
    o->has_version = 1;
    o->version = version;
    return o;
}

/* The network's opset imports, then one for every domain a written layer
 * uses that is missing: at least default_opset, and at least the newest
 * since_version among the ops used (a model importing opset 17 cannot hold
 * an op of opset 20). A model must import something (ONNX requires it from
 * IR version 3 on): the default domain when nothing else. */
static int ox_opsets(gwr_ox_ctx *c, const gwr_network *net, Onnx__ModelProto *m) {
    int64_t n = net->nopsets;
    Onnx__OperatorSetIdProto **v = ox_array(c, (size_t)(n + c->ndomains + 1), sizeof *v);
    if (!v) return -1;
    for (int64_t i = 0; i < n; i++)
        if (!(v[i] = ox_opset(c, net->opsets[i].domain, net->opsets[i].version))) return -1;
    for (int64_t j = 0; j < c->ndomains; j++) {
        const char *d = c->domains[j].domain;
        if (gwr_network_opset(net, d) >= 0) continue;
        int64_t ver = default_opset(d);
        if (c->domains[j].since > ver) ver = c->domains[j].since;
        if (!(v[n++] = ox_opset(c, d, ver))) return -1;
    }
    if (!n && !(v[n++] = ox_opset(c, "", default_opset("")))) return -1;
    m->n_opset_import = (size_t)n;
    m->opset_import = v;
    return 0;
}

static int prop_i64(gwr_ox_ctx *c, const gwr_network *net, const char *key, protobuf_c_boolean *has, int64_t *out) {
    const char *v = gwr_network_prop(net, key, NULL);
    if (!v) return 0;
    if (parse_i64(v, out)) {
        gwr_ox_fail(c, GWR_ERR_INVALID_ARG, "property '%s' is not a decimal integer: '%.40s'", key, v);
        return -1;
    }
    *has = 1;
    return 0;
}

gwr_status gwr_ox_build(gwr_ox_ctx *c, gwr_network *net, Onnx__ModelProto **out) {
    *out = NULL;
    if (net->parent)
        return gwr_ox_fail(c, GWR_ERR_INVALID_ARG, "network '%.100s' is a subgraph; save its root network",
                           net->name);
    /* No gwr_network_verify: the IR's API keeps the network's invariants.
     * What a valid file needs beyond them (no cycle, nothing read from a
     * removed layer, one value per Constant) is checked where it is
     * written. */
    Onnx__ModelProto *m;
    OX_NEW(c, m, Onnx__ModelProto, ONNX__MODEL_PROTO__INIT);
    if (!m) return c->st;
    m->has_ir_version = 1;
    m->ir_version = 8;
    if (prop_i64(c, net, "onnx.ir_version", &m->has_ir_version, &m->ir_version) ||
        prop_i64(c, net, "onnx.model_version", &m->has_model_version, &m->model_version))
        return c->st;
    m->producer_name = S(gwr_network_prop(net, "onnx.producer_name", NULL));
    m->producer_version = S(gwr_network_prop(net, "onnx.producer_version", NULL));
    m->domain = S(gwr_network_prop(net, "onnx.domain", NULL));
    m->doc_string = S(gwr_network_prop(net, "onnx.doc_string", NULL));

    int64_t nmeta = props_with_prefix(net, "onnx.meta.", NULL, NULL, NULL);
    if (nmeta) {
        const char **keys = ox_array(c, (size_t)nmeta, sizeof *keys), **vals = ox_array(c, (size_t)nmeta, sizeof *vals);
        Onnx__StringStringEntryProto **e = ox_array(c, (size_t)nmeta, sizeof *e);
        if (!keys || !vals || !e) return c->st;
        props_with_prefix(net, "onnx.meta.", keys, vals, NULL);
        for (int64_t i = 0; i < nmeta; i++) {
            OX_NEW(c, e[i], Onnx__StringStringEntryProto, ONNX__STRING_STRING_ENTRY_PROTO__INIT);
            if (!e[i]) return c->st;
            e[i]->key = S(keys[i]);
            e[i]->value = S(vals[i]);
        }
        m->n_metadata_props = (size_t)nmeta;
        m->metadata_props = e;
    }
    size_t n;
    void **v = unpack_props(c, net, "onnx.function.", &onnx__function_proto__descriptor, &n);
    if (c->st) return c->st;
    m->n_functions = n, m->functions = (Onnx__FunctionProto **)v;
    v = unpack_props(c, net, "onnx.training_info.", &onnx__training_info_proto__descriptor, &n);
    if (c->st) return c->st;
    m->n_training_info = n, m->training_info = (Onnx__TrainingInfoProto **)v;

    if (!(m->graph = ox_graph(c, net, 0)) || ox_opsets(c, net, m)) return c->st ? c->st : GWR_ERR_NOMEM;
    /* a model built with gwr (IR 8 by default) that holds a newer element type */
    if (m->ir_version < c->dtype_ir) m->ir_version = c->dtype_ir;
    *out = m;
    return GWR_OK;
}
