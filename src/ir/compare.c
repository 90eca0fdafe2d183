/* compare.c - structural equality of two networks (gwr_network_equal), the
 * oracle of the round-trip tests.
 *
 * What counts, in the order it is checked (the first difference wins):
 *   - the network name and its properties (all, in order, byte for byte);
 *   - opset imports, as a set of (domain, version): export may add domains
 *     and files may list them in any order, neither of which means anything;
 *   - graph inputs in order: name, value type, properties, default value;
 *   - graph outputs in order: names (their types are those of the tensors,
 *     compared with the layers that produce them, or with the inputs);
 *   - layers pairwise in network order: name, op, domain, removed flag,
 *     input slots (tensor names; an absent input equals only an absent
 *     one), outputs (name, value type, properties), layer properties (the
 *     doc string among them), attributes as a set by name with values
 *     compared exactly: numbers by their bits (so NaN equals the same NaN
 *     and 0 differs from -0), strings as bytes, weights by dtype, dims, size,
 *     name (NULL and "" alike) and bytes, subgraphs recursively.
 * Symbolic dims are compared by name, since each network interns its own.
 * Every step is linear in the size of the networks: no search, no sort. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ir/ir_internal.h"

/* Where a difference is reported: `why` gets the path prefix (the layers and
 * attributes leading into a subgraph) and then the message. */
typedef struct cmp {
    char *why;
    size_t size;
    char path[1024];
    size_t plen;
    int quiet; /* only the verdict: no message, no labels formatted */
} cmp;

/* Formats a label for a message, unless only the verdict is wanted (most
 * layers are equal: formatting a label for each would dominate). */
#define LABEL(c, buf, ...) ((c)->quiet ? (void)((buf)[0] = 0) : (void)snprintf((buf), sizeof(buf), __VA_ARGS__))

static int differ(cmp *c, const char *fmt, ...) GWR_PRINTF(2, 3);
static int differ(cmp *c, const char *fmt, ...) {
    if (c->quiet || !c->why || !c->size) return 0;
    int n = snprintf(c->why, c->size, "%.*s", (int)c->plen, c->path);
    size_t off = n < 0 ? 0 : (size_t)n < c->size ? (size_t)n : c->size - 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why + off, c->size - off, fmt, ap);
    va_end(ap);
    return 0;
}

/* Appends to the path prefix; returns the old length for path_pop. */
static size_t path_push(cmp *c, const char *fmt, ...) GWR_PRINTF(2, 3);
static size_t path_push(cmp *c, const char *fmt, ...) {
    size_t old = c->plen;
    if (!c->quiet && c->plen < sizeof c->path - 1) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(c->path + c->plen, sizeof c->path - c->plen, fmt, ap);
        va_end(ap);
        if (n > 0) c->plen += (size_t)n;
        if (c->plen > sizeof c->path - 1) c->plen = sizeof c->path - 1;
    }
    return old;
}

static void path_pop(cmp *c, size_t old) { c->plen = old; }

/* A short, printable rendering of bytes for messages: "abc\x00..." */
static const char *show(const char *s, size_t len, char *buf, size_t size) {
    size_t o = 0;
    buf[o++] = '"';
    for (size_t i = 0; i < len && o + 8 < size; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 32 && ch < 127 && ch != '"' && ch != '\\') buf[o++] = (char)ch;
        else o += (size_t)snprintf(buf + o, size - o, "\\x%02x", ch);
        if (i + 1 < len && o + 8 >= size) {
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
    }
    buf[o++] = '"';
    buf[o] = 0;
    return buf;
}

static int bytes_eq(const void *a, size_t la, const void *b, size_t lb) {
    return la == lb && (!la || !memcmp(a, b, la));
}

static const char *nz(const char *s) { return s ? s : ""; }

/* ---- properties and opsets ---- */

static const char *net_key(const void *o, int i) { return gwr_network_prop_key(o, i); }
static const void *net_get(const void *o, const char *k, size_t *len) { return gwr_network_prop(o, k, len); }
static const char *layer_key(const void *o, int i) { return gwr_layer_prop_key(o, i); }
static const void *layer_get(const void *o, const char *k, size_t *len) { return gwr_layer_prop(o, k, len); }
static const char *tensor_key(const void *o, int i) { return gwr_tensor_prop_key(o, i); }
static const void *tensor_get(const void *o, const char *k, size_t *len) { return gwr_tensor_prop(o, k, len); }

/* Properties of a and b (of the same kind), in order. `what` names the
 * owner in the message ("network", "layer 3 ('x')", ...). */
static int props_eq(cmp *c, const char *what, const void *a, int na, const void *b, int nb,
                    const char *(*key)(const void *, int),
                    const void *(*get)(const void *, const char *, size_t *)) {
    char s1[96], s2[96];
    int n = na < nb ? na : nb;
    for (int i = 0; i < n; i++) {
        const char *ka = key(a, i), *kb = key(b, i);
        if (strcmp(ka, kb))
            return differ(c, "%s: property %d is '%s' vs '%s'", what, i, ka, kb);
        size_t la, lb;
        const char *va = get(a, ka, &la), *vb = get(b, kb, &lb);
        if (!bytes_eq(va, la, vb, lb))
            return differ(c, "%s: property '%s' differs: %s vs %s", what, ka, show(va, la, s1, sizeof s1),
                          show(vb, lb, s2, sizeof s2));
    }
    if (na != nb)
        return differ(c, "%s: %d vs %d properties (first extra: '%s')", what, na, nb,
                      na > nb ? key(a, n) : key(b, n));
    return 1;
}

static int opsets_eq(cmp *c, const gwr_network *a, const gwr_network *b) {
    int na = gwr_network_num_opsets(a), nb = gwr_network_num_opsets(b);
    /* Domains are unique within a network, so equal counts and every
     * domain of a found in b with the same version make equal sets. */
    for (int i = 0; i < na; i++) {
        const char *d = gwr_network_opset_domain(a, i);
        int64_t va = gwr_network_opset(a, d), vb = gwr_network_opset(b, d);
        if (vb < 0) return differ(c, "opset import '%s' (version %" PRId64 ") is missing in the second network", d, va);
        if (va != vb) return differ(c, "opset import '%s': version %" PRId64 " vs %" PRId64, d, va, vb);
    }
    if (na != nb) {
        for (int i = 0; i < nb; i++) {
            const char *d = gwr_network_opset_domain(b, i);
            if (gwr_network_opset(a, d) < 0)
                return differ(c, "opset import '%s' (version %" PRId64 ") is missing in the first network", d,
                              gwr_network_opset(b, d));
        }
    }
    return 1;
}

/* ---- types ---- */

static int dim_eq(const gwr_network *na, gwr_dim a, const gwr_network *nb, gwr_dim b) {
    if (GWR_DIM_IS_SYM(a) || GWR_DIM_IS_SYM(b)) {
        const char *sa = gwr_network_dim_name(na, a), *sb = gwr_network_dim_name(nb, b);
        return sa && sb && !strcmp(sa, sb);
    }
    if (GWR_DIM_IS_KNOWN(a) || GWR_DIM_IS_KNOWN(b)) return a == b;
    return 1; /* both unknown */
}

static int type_eq(const gwr_network *na, const gwr_type *a, const gwr_network *nb, const gwr_type *b) {
    for (int depth = 0; a && b; depth++, a = a->elem, b = b->elem) {
        if (a->kind != b->kind) return 0;
        /* dtype means the element type, or a map's key type; nothing for
         * sequences and optionals. */
        if (a->kind != GWR_VALUE_SEQUENCE && a->kind != GWR_VALUE_OPTIONAL && a->dtype != b->dtype) return 0;
        if (a->kind == GWR_VALUE_TENSOR || a->kind == GWR_VALUE_SPARSE_TENSOR) {
            if (a->rank != b->rank) return 0;
            for (int i = 0; i < a->rank; i++)
                if (!dim_eq(na, a->dims[i], nb, b->dims[i])) return 0;
            return 1;
        }
        if (depth > 64) return 0;
    }
    return !a && !b;
}

/* Name, value type and properties of two tensors. */
static int tensor_eq(cmp *c, const char *what, const gwr_tensor *a, const gwr_tensor *b) {
    if (strcmp(a->name, b->name)) return differ(c, "%s: name '%s' vs '%s'", what, a->name, b->name);
    gwr_type ta, tb;
    gwr_tensor_value_type(a, &ta);
    gwr_tensor_value_type(b, &tb);
    if (!type_eq(gwr_ir_tnet(a), &ta, gwr_ir_tnet(b), &tb)) {
        char s1[160], s2[160];
        gwr_tensor_type_str(a, s1, sizeof s1);
        gwr_tensor_type_str(b, s2, sizeof s2);
        return differ(c, "%s ('%s'): type %s vs %s", what, a->name, s1, s2);
    }
    char w[300];
    LABEL(c, w, "%s ('%s')", what, a->name);
    return props_eq(c, w, a, gwr_tensor_num_props(a), b, gwr_tensor_num_props(b), tensor_key, tensor_get);
}

/* ---- weights ---- */

static void dims_str(const int64_t *d, int rank, char *buf, size_t size) {
    size_t o = 0;
    o += (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < rank && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%" PRId64, i ? "," : "", d[i]);
    if (o < size) snprintf(buf + o, size - o, "]");
}

/* Weights a and b; on a difference, writes "<what> differs: ..." */
static int weights_eq(cmp *c, const char *what, const gwr_weights *a, const gwr_weights *b) {
    if (a->dtype != b->dtype)
        return differ(c, "%s differs: dtype %s vs %s", what, gwr_dtype_name(a->dtype), gwr_dtype_name(b->dtype));
    if (a->rank != b->rank || (a->rank && memcmp(a->dims, b->dims, (size_t)a->rank * sizeof *a->dims))) {
        char s1[128], s2[128];
        dims_str(a->dims, a->rank, s1, sizeof s1);
        dims_str(b->dims, b->rank, s2, sizeof s2);
        return differ(c, "%s differs: dims %s vs %s", what, s1, s2);
    }
    if (strcmp(nz(a->name), nz(b->name)))
        return differ(c, "%s differs: name '%s' vs '%s'", what, nz(a->name), nz(b->name));
    if (a->nbytes != b->nbytes) return differ(c, "%s differs: %zu vs %zu bytes", what, a->nbytes, b->nbytes);
    if (a->dtype == GWR_STRING) {
        const gwr_bytes *sa = a->data, *sb = b->data;
        size_t n = a->nbytes / sizeof(gwr_bytes);
        for (size_t i = 0; i < n; i++)
            if (!bytes_eq(sa[i].data, sa[i].len, sb[i].data, sb[i].len)) {
                char s1[96], s2[96];
                return differ(c, "%s differs: string %zu is %s vs %s", what, i,
                              show(sa[i].data, sa[i].len, s1, sizeof s1), show(sb[i].data, sb[i].len, s2, sizeof s2));
            }
        return 1;
    }
    if (a->nbytes && a->data != b->data && memcmp(a->data, b->data, a->nbytes)) {
        const unsigned char *pa = a->data, *pb = b->data;
        size_t i = 0;
        while (pa[i] == pb[i]) i++;
        return differ(c, "%s differs: byte %zu of %zu is 0x%02x vs 0x%02x", what, i, a->nbytes, pa[i], pb[i]);
    }
    return 1;
}

/* ---- attributes ---- */

static int net_eq(cmp *c, gwr_network *a, gwr_network *b, int top);

/* Renders list entries for a message: whole lists when short, else the
 * first differing entry. */
#define LIST_SHORT 8

static void ints_str(const int64_t *v, int64_t n, char *buf, size_t size) {
    size_t o = (size_t)snprintf(buf, size, "[");
    for (int64_t i = 0; i < n && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%" PRId64, i ? "," : "", v[i]);
    if (o < size) snprintf(buf + o, size - o, "]");
}

static void floats_str(const float *v, int64_t n, char *buf, size_t size) {
    size_t o = (size_t)snprintf(buf, size, "[");
    for (int64_t i = 0; i < n && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%.9g", i ? "," : "", (double)v[i]);
    if (o < size) snprintf(buf + o, size - o, "]");
}

static int attr_eq(cmp *c, const char *lw, const gwr_attr *a, const gwr_attr *b) {
    char w[400], s1[256], s2[256];
    LABEL(c, w, "%s: attribute '%s'", lw, a->name);
    if (a->type != b->type)
        return differ(c, "%s differs: type %s vs %s", w, gwr_attr_type_name(a->type), gwr_attr_type_name(b->type));
    switch (a->type) {
    case GWR_ATTR_INT:
        if (a->v.i != b->v.i) return differ(c, "%s differs: %" PRId64 " vs %" PRId64, w, a->v.i, b->v.i);
        return 1;
    case GWR_ATTR_FLOAT:
        if (memcmp(&a->v.f, &b->v.f, sizeof a->v.f))
            return differ(c, "%s differs: %.9g vs %.9g", w, (double)a->v.f, (double)b->v.f);
        return 1;
    case GWR_ATTR_STRING:
        if (!bytes_eq(a->v.s, (size_t)a->n, b->v.s, (size_t)b->n))
            return differ(c, "%s differs: %s vs %s", w, show(a->v.s, (size_t)a->n, s1, sizeof s1),
                          show(b->v.s, (size_t)b->n, s2, sizeof s2));
        return 1;
    case GWR_ATTR_INTS:
    case GWR_ATTR_FLOATS: {
        size_t esz = a->type == GWR_ATTR_INTS ? sizeof(int64_t) : sizeof(float);
        const void *va = a->type == GWR_ATTR_INTS ? (const void *)a->v.ints : (const void *)a->v.floats;
        const void *vb = b->type == GWR_ATTR_INTS ? (const void *)b->v.ints : (const void *)b->v.floats;
        if (a->n == b->n && (!a->n || !memcmp(va, vb, (size_t)a->n * esz))) return 1;
        if (a->n <= LIST_SHORT && b->n <= LIST_SHORT) {
            if (a->type == GWR_ATTR_INTS) ints_str(a->v.ints, a->n, s1, sizeof s1), ints_str(b->v.ints, b->n, s2, sizeof s2);
            else floats_str(a->v.floats, a->n, s1, sizeof s1), floats_str(b->v.floats, b->n, s2, sizeof s2);
            return differ(c, "%s differs: %s vs %s", w, s1, s2);
        }
        if (a->n != b->n) return differ(c, "%s differs: %" PRId64 " vs %" PRId64 " entries", w, a->n, b->n);
        int64_t i = 0;
        while (!memcmp((const char *)va + (size_t)i * esz, (const char *)vb + (size_t)i * esz, esz)) i++;
        if (a->type == GWR_ATTR_INTS)
            return differ(c, "%s differs at entry %" PRId64 ": %" PRId64 " vs %" PRId64, w, i, a->v.ints[i], b->v.ints[i]);
        return differ(c, "%s differs at entry %" PRId64 ": %.9g vs %.9g", w, i, (double)a->v.floats[i],
                      (double)b->v.floats[i]);
    }
    case GWR_ATTR_STRINGS:
        if (a->n != b->n) return differ(c, "%s differs: %" PRId64 " vs %" PRId64 " strings", w, a->n, b->n);
        for (int64_t i = 0; i < a->n; i++)
            if (!bytes_eq(a->v.strings[i].data, a->v.strings[i].len, b->v.strings[i].data, b->v.strings[i].len))
                return differ(c, "%s differs at entry %" PRId64 ": %s vs %s", w, i,
                              show(a->v.strings[i].data, a->v.strings[i].len, s1, sizeof s1),
                              show(b->v.strings[i].data, b->v.strings[i].len, s2, sizeof s2));
        return 1;
    case GWR_ATTR_TENSOR:
    case GWR_ATTR_TENSORS:
        if (a->n != b->n) return differ(c, "%s differs: %" PRId64 " vs %" PRId64 " tensors", w, a->n, b->n);
        for (int64_t i = 0; i < a->n; i++) {
            if (a->type == GWR_ATTR_TENSORS) LABEL(c, w, "%s: attribute '%s' tensor %" PRId64, lw, a->name, i);
            if (!weights_eq(c, w, &a->v.tensors[i], &b->v.tensors[i])) return 0;
        }
        return 1;
    case GWR_ATTR_GRAPH:
    case GWR_ATTR_GRAPHS:
        if (a->n != b->n) return differ(c, "%s differs: %" PRId64 " vs %" PRId64 " graphs", w, a->n, b->n);
        for (int64_t i = 0; i < a->n; i++) {
            size_t old = a->type == GWR_ATTR_GRAPH ? path_push(c, "%s: ", w)
                                                    : path_push(c, "%s graph %" PRId64 ": ", w, i);
            int ok = net_eq(c, a->v.graphs[i], b->v.graphs[i], 0);
            path_pop(c, old);
            if (!ok) return 0;
        }
        return 1;
    default:
        return 1;
    }
}

/* ---- layers ---- */

static int layer_eq(cmp *c, int64_t idx, const gwr_layer *a, const gwr_layer *b) {
    char w[300], ow[340];
    LABEL(c, w, "layer %" PRId64 " ('%s')", idx, a->name);
    if (strcmp(a->name, b->name)) return differ(c, "layer %" PRId64 ": name '%s' vs '%s'", idx, a->name, b->name);
    if (strcmp(a->info->name, b->info->name) || strcmp(a->info->domain, b->info->domain))
        return differ(c, "%s: op '%s%s%s' vs '%s%s%s'", w, a->info->domain, *a->info->domain ? "." : "",
                      a->info->name, b->info->domain, *b->info->domain ? "." : "", b->info->name);
    int ra = (a->flags & LF_REMOVED) != 0, rb = (b->flags & LF_REMOVED) != 0;
    if (ra != rb) return differ(c, "%s: removed %s vs %s", w, ra ? "yes" : "no", rb ? "yes" : "no");
    if (a->ninputs != b->ninputs) return differ(c, "%s: %d vs %d inputs", w, a->ninputs, b->ninputs);
    if (a->noutputs != b->noutputs) return differ(c, "%s: %d vs %d outputs", w, a->noutputs, b->noutputs);
    for (int i = 0; i < a->ninputs; i++) {
        const gwr_tensor *ta = a->inputs[i], *tb = b->inputs[i];
        if (!ta != !tb)
            return differ(c, "%s: input %d is %s%s%s vs %s%s%s", w, i, ta ? "'" : "", ta ? ta->name : "absent",
                          ta ? "'" : "", tb ? "'" : "", tb ? tb->name : "absent", tb ? "'" : "");
        if (ta && strcmp(ta->name, tb->name)) return differ(c, "%s: input %d is '%s' vs '%s'", w, i, ta->name, tb->name);
    }
    for (int o = 0; o < a->noutputs; o++) {
        LABEL(c, ow, "%s: output %d", w, o);
        if (!tensor_eq(c, ow, &gwr_ir_outputs(a)[o], &gwr_ir_outputs(b)[o])) return 0;
    }
    if (!props_eq(c, w, a, gwr_layer_num_props(a), b, gwr_layer_num_props(b), layer_key, layer_get)) return 0;
    /* Attributes as a set by name; names are unique within a layer. */
    for (int i = 0; i < a->nattrs; i++) {
        int j = gwr_layer_find_attr(b, a->attrs[i].name);
        if (j < 0) return differ(c, "%s: attribute '%s' is missing in the second network", w, a->attrs[i].name);
        if (!attr_eq(c, w, &a->attrs[i], &b->attrs[j])) return 0;
    }
    if (a->nattrs != b->nattrs)
        for (int j = 0; j < b->nattrs; j++)
            if (gwr_layer_find_attr(a, b->attrs[j].name) < 0)
                return differ(c, "%s: attribute '%s' is missing in the first network", w, b->attrs[j].name);
    return 1;
}

/* layer_eq without a message first; with one only for the layer that
 * differs. */
static int layer_check(cmp *c, int64_t idx, const gwr_layer *a, const gwr_layer *b) {
    if (c->quiet) return layer_eq(c, idx, a, b);
    c->quiet = 1;
    int ok = layer_eq(c, idx, a, b);
    c->quiet = 0;
    return ok || layer_eq(c, idx, a, b);
}

/* ---- networks ---- */

/* top: also the opset imports, which the root network keeps for all. */
static int net_eq(cmp *c, gwr_network *a, gwr_network *b, int top) {
    if (strcmp(a->name, b->name)) return differ(c, "network name '%s' vs '%s'", a->name, b->name);
    if (!props_eq(c, "network", a, gwr_network_num_props(a), b, gwr_network_num_props(b), net_key, net_get))
        return 0;
    if (top && !opsets_eq(c, a->root, b->root)) return 0;
    char w[300];
    if (a->ninputs != b->ninputs)
        return differ(c, "%" PRId64 " vs %" PRId64 " graph inputs", a->ninputs, b->ninputs);
    for (int64_t i = 0; i < a->ninputs; i++) {
        const gwr_tensor *ta = a->inputs[i], *tb = b->inputs[i];
        LABEL(c, w, "graph input %" PRId64, i);
        if (!tensor_eq(c, w, ta, tb)) return 0;
        const gwr_weights *da = gwr_tensor_default(ta), *db = gwr_tensor_default(tb);
        if (!da != !db)
            return differ(c, "graph input %" PRId64 " ('%s'): default value %s vs %s", i, ta->name,
                          da ? "present" : "absent", db ? "present" : "absent");
        LABEL(c, w, "graph input %" PRId64 " ('%s'): default value", i, ta->name);
        if (da && !weights_eq(c, w, da, db)) return 0;
    }
    if (a->noutputs != b->noutputs)
        return differ(c, "%" PRId64 " vs %" PRId64 " graph outputs", a->noutputs, b->noutputs);
    for (int64_t i = 0; i < a->noutputs; i++)
        if (strcmp(a->outputs[i]->name, b->outputs[i]->name))
            return differ(c, "graph output %" PRId64 ": '%s' vs '%s'", i, a->outputs[i]->name, b->outputs[i]->name);
    if (a->nlayers != b->nlayers) {
        int64_t n = a->nlayers < b->nlayers ? a->nlayers : b->nlayers;
        return differ(c, "%" PRId64 " vs %" PRId64 " layers (first extra: '%s')", a->nlayers, b->nlayers,
                      (a->nlayers > n ? a->layers[n] : b->layers[n])->name);
    }
    /* Layers that read nothing (constants, generators) carry no meaning in
     * their position: ONNX keeps initializers apart from nodes, so a round
     * trip may move them. They are matched by name; every other layer
     * pairwise, in network order. */
    int64_t j = 0;
    for (int64_t i = 0; i < a->nlayers; i++) {
        const gwr_layer *la = a->layers[i];
        if (!la->ninputs) {
            const gwr_layer *lb = gwr_network_find_layer(b, la->name);
            if (!lb) return differ(c, "layer %" PRId64 " ('%s') is missing in the second network", i, la->name);
            if (lb->ninputs) return differ(c, "layer '%s' reads %d inputs in the second network", la->name, lb->ninputs);
            if (!layer_check(c, i, la, lb)) return 0;
            continue;
        }
        while (j < b->nlayers && !b->layers[j]->ninputs) j++;
        if (j == b->nlayers) return differ(c, "layer %" PRId64 " ('%s') has no counterpart in the second network", i, la->name);
        if (!layer_check(c, i, la, b->layers[j++])) return 0;
    }
    /* Output types: an output produced by a layer was compared with it; an
     * output that is a graph input, with the inputs. */
    return 1;
}

int gwr_network_equal(gwr_network *a, gwr_network *b, char *why, size_t size) {
    cmp c = {.why = why, .size = size};
    if (why && size) why[0] = 0;
    if (!a || !b) {
        if (a == b) return 1;
        return differ(&c, "%s network is NULL", a ? "the second" : "the first");
    }
    if (a == b) return 1;
    return net_eq(&c, a, b, 1);
}

/* ---- for the diff room (ir_api.h) ---- */

int gwr_ir_attr_equal(const gwr_attr *a, const gwr_attr *b) {
    cmp c = {.quiet = 1};
    return attr_eq(&c, "", a, b);
}

int gwr_ir_type_equal(const gwr_tensor *a, const gwr_tensor *b) {
    gwr_type ta, tb;
    gwr_tensor_value_type(a, &ta);
    gwr_tensor_value_type(b, &tb);
    return type_eq(gwr_ir_tnet(a), &ta, gwr_ir_tnet(b), &tb);
}
