/* attrs.c - typed layer attributes and graph-valued attributes
 * (subgraphs owned by their layer). Freeing them is network.c's. */
#include <stdlib.h>
#include <string.h>

#include "ir/ir_internal.h"

const char *gwr_attr_type_name(gwr_attr_type t) {
    static const char *const names[] = {"undefined", "float", "int", "string", "tensor", "graph",
                                        "floats", "ints", "strings", "tensors", "graphs"};
    return (unsigned)t <= GWR_ATTR_GRAPHS ? names[t] : "unknown";
}

/* ---- attribute storage ---- */

int gwr_layer_num_attrs(const gwr_layer *l) { return l ? l->nattrs : -1; }

int gwr_layer_find_attr(const gwr_layer *l, const char *name) {
    if (!l || !name) return -1;
    for (int i = 0; i < l->nattrs; i++)
        if (!strcmp(l->attrs[i].name, name)) return i;
    return -1;
}

int gwr_layer_has_attr(const gwr_layer *l, const char *name) { return gwr_layer_find_attr(l, name) >= 0; }

const char *gwr_layer_attr_name(const gwr_layer *l, int i) {
    return l && i >= 0 && i < l->nattrs ? l->attrs[i].name : NULL;
}

gwr_attr_type gwr_layer_attr_type(const gwr_layer *l, int i) {
    return l && i >= 0 && i < l->nattrs ? l->attrs[i].type : GWR_ATTR_UNDEFINED;
}

gwr_status gwr_layer_remove_attr(gwr_layer *l, const char *name) {
    if (!l || !name) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_layer_remove_attr: NULL argument");
    int i = gwr_layer_find_attr(l, name);
    if (i < 0) return gwr_ir_error(l->net, GWR_ERR_NOT_FOUND, "layer '%s' has no attribute '%s'", l->name, name);
    gwr_ir_attr_clear(l->net, &l->attrs[i]);
    memmove(&l->attrs[i], &l->attrs[i + 1], (size_t)(l->nattrs - i - 1) * sizeof *l->attrs);
    l->nattrs--;
    GWR_IR_NOTIFY(l->net, layer_modified, l);
    return GWR_OK;
}

/* Looks up an attribute for reading. */
static gwr_status attr_get(const gwr_layer *l, const char *name, gwr_attr_type type, const gwr_attr **out,
                           const void *dst) {
    if (!l || !name) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "attribute getter: NULL argument");
    if (!dst) return gwr_ir_error(l->net, GWR_ERR_INVALID_ARG, "attribute getter: NULL output for '%s'", name);
    int i = gwr_layer_find_attr(l, name);
    if (i < 0) return gwr_ir_error(l->net, GWR_ERR_NOT_FOUND, "layer '%s' has no attribute '%s'", l->name, name);
    if (l->attrs[i].type != type)
        return gwr_ir_error(l->net, GWR_ERR_TYPE, "attribute '%s' of layer '%s' is %s, not %s", name, l->name,
                            gwr_attr_type_name(l->attrs[i].type), gwr_attr_type_name(type));
    *out = &l->attrs[i];
    return GWR_OK;
}

/* Installs a fully built value `a` under name (replacing any old one);
 * on failure the caller's value is cleared. */
static gwr_status attr_put(gwr_layer *l, const char *name, gwr_attr *a) {
    int i = gwr_layer_find_attr(l, name);
    if (i < 0) {
        const char *iname = gwr_ir_intern(l->net, name);
        gwr_attr *na = iname ? gwr_realloc(l->attrs, (size_t)(l->nattrs + 1) * sizeof *na) : NULL;
        if (!na) {
            /* Graphs stay with the caller on failure. */
            if (a->type == GWR_ATTR_GRAPH || a->type == GWR_ATTR_GRAPHS) gwr_free(a->v.graphs);
            else gwr_ir_attr_clear(l->net, a);
            return gwr_ir_error(l->net, GWR_ERR_NOMEM, "out of memory");
        }
        l->attrs = na;
        i = l->nattrs++;
        a->name = iname;
    } else {
        a->name = l->attrs[i].name;
        gwr_ir_attr_clear(l->net, &l->attrs[i]);
    }
    l->attrs[i] = *a;
    if (a->type == GWR_ATTR_GRAPH || a->type == GWR_ATTR_GRAPHS) l->net->ngraph_attrs++;
    GWR_IR_NOTIFY(l->net, layer_modified, l);
    return GWR_OK;
}

static gwr_status setter_check(gwr_layer *l, const char *name, const void *v, int64_t n) {
    if (!l || !name) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "attribute setter: NULL argument");
    if (!*name) return gwr_ir_error(l->net, GWR_ERR_INVALID_ARG, "empty attribute name");
    if (n < 0 || (n > 0 && !v))
        return gwr_ir_error(l->net, GWR_ERR_INVALID_ARG, "attribute '%s': bad value (n=%lld)", name, (long long)n);
    return GWR_OK;
}

#define NOMEM(l) gwr_ir_error((l)->net, GWR_ERR_NOMEM, "out of memory")

/* An element count for calloc: at least 1, never above PTRDIFF_MAX. */
static size_t alloc_count(int64_t n) { return n > 0 ? (size_t)n : 1; }

gwr_status gwr_layer_get_int(const gwr_layer *l, const char *name, int64_t *out) {
    const gwr_attr *a = NULL;
    gwr_status s = attr_get(l, name, GWR_ATTR_INT, &a, out);
    if (!s && out) *out = a->v.i;
    return s;
}

gwr_status gwr_layer_get_float(const gwr_layer *l, const char *name, float *out) {
    const gwr_attr *a = NULL;
    gwr_status s = attr_get(l, name, GWR_ATTR_FLOAT, &a, out);
    if (!s && out) *out = a->v.f;
    return s;
}

gwr_status gwr_layer_get_string(const gwr_layer *l, const char *name, const char **out, size_t *len) {
    const gwr_attr *a = NULL;
    gwr_status s = attr_get(l, name, GWR_ATTR_STRING, &a, out);
    if (!s) {
        if (out) *out = a->v.s;
        if (len) *len = (size_t)a->n;
    }
    return s;
}

#define LIST_GETTER(fn, TYPE, ctype, field)                                                  \
    gwr_status fn(const gwr_layer *l, const char *name, ctype out, int64_t *n) {             \
        const gwr_attr *a = NULL;                                                                   \
        gwr_status s = attr_get(l, name, TYPE, &a, out);                                          \
        if (!s) {                                                                            \
            if (out) *out = a->v.field;                                                      \
            if (n) *n = a->n;                                                                \
        }                                                                                    \
        return s;                                                                            \
    }
LIST_GETTER(gwr_layer_get_ints, GWR_ATTR_INTS, const int64_t **, ints)
LIST_GETTER(gwr_layer_get_floats, GWR_ATTR_FLOATS, const float **, floats)
LIST_GETTER(gwr_layer_get_strings, GWR_ATTR_STRINGS, const gwr_bytes **, strings)
LIST_GETTER(gwr_layer_get_tensors, GWR_ATTR_TENSORS, const gwr_weights **, tensors)
LIST_GETTER(gwr_layer_get_graphs, GWR_ATTR_GRAPHS, gwr_network *const **, graphs)

/* The getters with a default: absent is not an error and costs no
 * message; another type is. */
static const gwr_attr *attr_or_default(const gwr_layer *l, const char *name, gwr_attr_type type,
                                       gwr_status *st) {
    *st = GWR_OK;
    if (!l || !name) {
        *st = gwr_set_last_error(GWR_ERR_INVALID_ARG, "attribute getter: NULL argument");
        return NULL;
    }
    int i = gwr_layer_find_attr(l, name);
    if (i < 0) return NULL;
    if (l->attrs[i].type != type) {
        *st = gwr_ir_error(l->net, GWR_ERR_TYPE, "attribute '%s' of layer '%s' is %s, not %s", name, l->name,
                           gwr_attr_type_name(l->attrs[i].type), gwr_attr_type_name(type));
        return NULL;
    }
    return &l->attrs[i];
}

gwr_status gwr_layer_attr_int(const gwr_layer *l, const char *name, int64_t def, int64_t *out) {
    gwr_status st;
    const gwr_attr *a = attr_or_default(l, name, GWR_ATTR_INT, &st);
    *out = a ? a->v.i : def;
    return st;
}

gwr_status gwr_layer_attr_float(const gwr_layer *l, const char *name, float def, float *out) {
    gwr_status st;
    const gwr_attr *a = attr_or_default(l, name, GWR_ATTR_FLOAT, &st);
    *out = a ? a->v.f : def;
    return st;
}

gwr_status gwr_layer_attr_string(const gwr_layer *l, const char *name, const char *def, const char **out) {
    gwr_status st;
    const gwr_attr *a = attr_or_default(l, name, GWR_ATTR_STRING, &st);
    *out = a ? a->v.s : def;
    return st;
}

gwr_status gwr_layer_attr_ints(const gwr_layer *l, const char *name, const int64_t **out, int64_t *n) {
    gwr_status st;
    const gwr_attr *a = attr_or_default(l, name, GWR_ATTR_INTS, &st);
    *out = a ? a->v.ints : NULL;
    *n = a ? a->n : -1;
    return st;
}

gwr_status gwr_layer_attr_floats(const gwr_layer *l, const char *name, const float **out, int64_t *n) {
    gwr_status st;
    const gwr_attr *a = attr_or_default(l, name, GWR_ATTR_FLOATS, &st);
    *out = a ? a->v.floats : NULL;
    *n = a ? a->n : -1;
    return st;
}

gwr_status gwr_layer_get_tensor(const gwr_layer *l, const char *name, const gwr_weights **out) {
    const gwr_attr *a = NULL;
    gwr_status s = attr_get(l, name, GWR_ATTR_TENSOR, &a, out);
    if (!s && out) *out = &a->v.tensors[0];
    return s;
}

gwr_status gwr_layer_get_graph(const gwr_layer *l, const char *name, gwr_network **out) {
    const gwr_attr *a = NULL;
    gwr_status s = attr_get(l, name, GWR_ATTR_GRAPH, &a, out);
    if (!s && out) *out = a->v.graphs[0];
    return s;
}

gwr_status gwr_layer_set_int(gwr_layer *l, const char *name, int64_t v) {
    gwr_status s = setter_check(l, name, &v, 0);
    if (s) return s;
    gwr_attr a = {.type = GWR_ATTR_INT, .v.i = v};
    return attr_put(l, name, &a);
}

gwr_status gwr_layer_set_float(gwr_layer *l, const char *name, float v) {
    gwr_status s = setter_check(l, name, &v, 0);
    if (s) return s;
    gwr_attr a = {.type = GWR_ATTR_FLOAT, .v.f = v};
    return attr_put(l, name, &a);
}

gwr_status gwr_layer_set_bytes(gwr_layer *l, const char *name, const void *v, size_t len) {
    gwr_status s = setter_check(l, name, v, (int64_t)len);
    if (s) return s;
    gwr_attr a = {.type = GWR_ATTR_STRING, .n = (int64_t)len, .v.s = gwr_memdup(v, len)};
    if (!a.v.s) return NOMEM(l);
    return attr_put(l, name, &a);
}

gwr_status gwr_layer_set_string(gwr_layer *l, const char *name, const char *v) {
    if (!v) return setter_check(l, name, NULL, 1);
    return gwr_layer_set_bytes(l, name, v, strlen(v));
}

gwr_status gwr_layer_set_ints(gwr_layer *l, const char *name, const int64_t *v, int64_t n) {
    gwr_status s = setter_check(l, name, v, n);
    if (s) return s;
    gwr_attr a = {.type = GWR_ATTR_INTS, .n = n, .v.ints = (int64_t *)gwr_memdup(v, (size_t)n * sizeof *v)};
    if (!a.v.ints) return NOMEM(l);
    return attr_put(l, name, &a);
}

gwr_status gwr_layer_set_floats(gwr_layer *l, const char *name, const float *v, int64_t n) {
    gwr_status s = setter_check(l, name, v, n);
    if (s) return s;
    gwr_attr a = {.type = GWR_ATTR_FLOATS, .n = n, .v.floats = (float *)gwr_memdup(v, (size_t)n * sizeof *v)};
    if (!a.v.floats) return NOMEM(l);
    return attr_put(l, name, &a);
}

gwr_status gwr_layer_set_bytes_list(gwr_layer *l, const char *name, const gwr_bytes *v, int64_t n) {
    gwr_status s = setter_check(l, name, v, n);
    if (s) return s;
    for (int64_t i = 0; i < n; i++)
        if (!v[i].data && v[i].len)
            return gwr_ir_error(l->net, GWR_ERR_INVALID_ARG, "attribute '%s': NULL string %lld", name, (long long)i);
    gwr_attr a = {.type = GWR_ATTR_STRINGS, .n = n, .v.strings = gwr_calloc(alloc_count(n), sizeof(gwr_bytes))};
    if (!a.v.strings) return NOMEM(l);
    for (int64_t i = 0; i < n; i++) {
        a.v.strings[i].len = v[i].len;
        if (!(a.v.strings[i].data = gwr_memdup(v[i].data ? v[i].data : "", v[i].len))) {
            a.n = i;
            gwr_ir_attr_clear(l->net, &a);
            return NOMEM(l);
        }
    }
    return attr_put(l, name, &a);
}

gwr_status gwr_layer_set_strings(gwr_layer *l, const char *name, const char *const *v, int64_t n) {
    gwr_status s = setter_check(l, name, v, n);
    if (s) return s;
    gwr_bytes *b = gwr_calloc(alloc_count(n), sizeof *b);
    if (!b) return NOMEM(l);
    for (int64_t i = 0; i < n; i++) {
        if (!v[i]) {
            gwr_free(b);
            return gwr_ir_error(l->net, GWR_ERR_INVALID_ARG, "attribute '%s': NULL string %lld", name, (long long)i);
        }
        b[i].len = strlen(v[i]), b[i].data = v[i];
    }
    s = gwr_layer_set_bytes_list(l, name, b, n);
    gwr_free(b);
    return s;
}

static gwr_status set_weights(gwr_layer *l, const char *name, const gwr_weights *w, int64_t n, gwr_attr_type type) {
    gwr_status s = setter_check(l, name, w, n);
    if (s) return s;
    for (int64_t i = 0; i < n; i++)
        if ((s = gwr_ir_weights_check(l->net, &w[i]))) return s;
    gwr_attr a = {.type = type, .n = 0, .v.tensors = gwr_calloc(alloc_count(n), sizeof(gwr_weights))};
    if (!a.v.tensors) return NOMEM(l);
    for (; a.n < n; a.n++)
        if (gwr_ir_weights_copy(&a.v.tensors[a.n], &w[a.n])) {
            gwr_ir_attr_clear(l->net, &a);
            return NOMEM(l);
        }
    return attr_put(l, name, &a);
}

gwr_status gwr_layer_set_tensor(gwr_layer *l, const char *name, const gwr_weights *w) {
    return set_weights(l, name, w, 1, GWR_ATTR_TENSOR);
}

gwr_status gwr_layer_set_tensors(gwr_layer *l, const char *name, const gwr_weights *w, int64_t n) {
    return set_weights(l, name, w, n, GWR_ATTR_TENSORS);
}

static gwr_status set_graphs(gwr_layer *l, const char *name, gwr_network *const *g, int64_t n, gwr_attr_type type) {
    gwr_status s = setter_check(l, name, g, n);
    if (s) return s;
    for (int64_t i = 0; i < n; i++) {
        if (!g[i]) return gwr_ir_error(l->net, GWR_ERR_INVALID_ARG, "attribute '%s': NULL graph", name);
        if (g[i]->parent != l->net)
            return gwr_ir_error(l->net, GWR_ERR_INVALID_ARG,
                                "attribute '%s': graph '%s' is not a subgraph of network '%s'", name, g[i]->name,
                                l->net->name);
        if (g[i]->owner)
            return gwr_ir_error(l->net, GWR_ERR_STATE, "attribute '%s': graph '%s' is already owned by '%s'", name,
                                g[i]->name, g[i]->owner->name);
        for (int64_t j = 0; j < i; j++)
            if (g[j] == g[i]) return gwr_ir_error(l->net, GWR_ERR_INVALID_ARG, "attribute '%s': graph given twice", name);
        /* Replacing an attribute that holds this very graph is refused
         * above (it has an owner), so clearing the old value is safe. */
        if ((s = gwr_ir_attach_check(l, g[i]))) return s;
    }
    gwr_attr a = {.type = type, .n = n, .v.graphs = gwr_malloc((size_t)(n ? n : 1) * sizeof(gwr_network *))};
    if (!a.v.graphs) return NOMEM(l);
    if (n) memcpy(a.v.graphs, g, (size_t)n * sizeof *g);
    s = attr_put(l, name, &a);
    if (s) return s;
    for (int64_t i = 0; i < n; i++) {
        g[i]->owner = l;
        gwr_ir_attach_edges(l, g[i]);
    }
    return GWR_OK;
}

gwr_status gwr_layer_set_graph(gwr_layer *l, const char *name, gwr_network *g) {
    return set_graphs(l, name, &g, 1, GWR_ATTR_GRAPH);
}

gwr_status gwr_layer_set_graphs(gwr_layer *l, const char *name, gwr_network *const *g, int64_t n) {
    return set_graphs(l, name, g, n, GWR_ATTR_GRAPHS);
}
