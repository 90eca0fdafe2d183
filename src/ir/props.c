/* props.c - properties (named byte strings) on networks, layers and
 * tensors; opset imports; default values of graph inputs. Layers and
 * tensors keep theirs in a map on the network, since few have any. */
#include <stdlib.h>
#include <string.h>

#include "ir/ir_internal.h"

static void props_clear(gwr_props *p) {
    for (int64_t i = 0; i < p->n; i++) gwr_free(p->v[i].key), gwr_free(p->v[i].val);
    gwr_free(p->v);
    memset(p, 0, sizeof *p);
}

static int64_t props_find(const gwr_props *p, const char *key) {
    for (int64_t i = 0; p && i < p->n; i++)
        if (!strcmp(p->v[i].key, key)) return i;
    return -1;
}

static gwr_status props_set(gwr_network *net, gwr_props *p, const char *key, const void *val, size_t len) {
    char *v = gwr_memdup(val, len);
    if (!v) return gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
    int64_t i = props_find(p, key);
    if (i >= 0) {
        gwr_free(p->v[i].val);
        p->v[i].val = v, p->v[i].len = len;
        return GWR_OK;
    }
    char *k = gwr_strdup(key);
    if (!k || gwr_grow((void **)&p->v, sizeof *p->v, &p->cap, p->n + 1)) {
        gwr_free(k), gwr_free(v);
        return gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
    }
    p->v[p->n++] = (gwr_prop){k, v, len};
    return GWR_OK;
}

static const void *props_get(const gwr_props *p, const char *key, size_t *len) {
    int64_t i = key ? props_find(p, key) : -1;
    if (i < 0) return NULL;
    if (len) *len = p->v[i].len;
    return p->v[i].val;
}

static gwr_status props_remove(gwr_network *net, gwr_props *p, const char *key) {
    int64_t i = props_find(p, key);
    if (i < 0) return gwr_ir_error(net, GWR_ERR_NOT_FOUND, "no property '%s'", key);
    gwr_free(p->v[i].key), gwr_free(p->v[i].val);
    memmove(&p->v[i], &p->v[i + 1], (size_t)(p->n - i - 1) * sizeof *p->v);
    p->n--;
    return GWR_OK;
}

/* The props of a layer or tensor in map m; created when `create`. */
static gwr_props *obj_props(gwr_ptrmap *m, const void *obj, int create) {
    return create ? gwr_ptrmap_get_or_new(m, obj, sizeof(gwr_props)) : gwr_ptrmap_get(m, obj);
}

static void map_drop(gwr_ptrmap *m, const void *obj) {
    gwr_props *p = gwr_ptrmap_get(m, obj);
    if (p) {
        props_clear(p);
        gwr_free(p);
        gwr_ptrmap_del(m, obj);
    }
}

void gwr_ir_layer_props_drop(gwr_network *net, gwr_layer *l) {
    if (l->flags & LF_PROPS) map_drop(&net->layerprops, l);
}

void gwr_ir_props_drop(gwr_network *net, const void *obj) {
    map_drop(&net->objprops, obj);
    gwr_weights *w = gwr_ptrmap_get(&net->defaults, obj);
    if (w) {
        gwr_ir_weights_clear(w);
        gwr_free(w);
        gwr_ptrmap_del(&net->defaults, obj);
    }
}

void gwr_ir_props_destroy(gwr_network *net) {
    props_clear(&net->props);
    gwr_ptrmap *maps[2] = {&net->objprops, &net->layerprops};
    for (int k = 0; k < 2; k++) {
        for (int64_t i = 0; i < maps[k]->cap; i++)
            if (maps[k]->keys[i]) {
                props_clear(maps[k]->vals[i]);
                gwr_free(maps[k]->vals[i]);
            }
        gwr_ptrmap_free(maps[k]);
    }
    for (int64_t i = 0; i < net->defaults.cap; i++)
        if (net->defaults.keys[i]) {
            gwr_ir_weights_clear(net->defaults.vals[i]);
            gwr_free(net->defaults.vals[i]);
        }
    gwr_ptrmap_free(&net->defaults);
    gwr_free(net->opsets);
}

static gwr_status key_ok(const void *obj, const char *key, const void *val, size_t len, const char *fn) {
    if (!obj || !key || !*key || (!val && len)) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "%s: bad argument", fn);
    return GWR_OK;
}

#define EMPTY_IF_NULL(v) ((v) ? (v) : "")

gwr_status gwr_network_set_prop(gwr_network *net, const char *key, const void *val, size_t len) {
    gwr_status s = key_ok(net, key, val, len, "gwr_network_set_prop");
    return s ? s : props_set(net, &net->props, key, EMPTY_IF_NULL(val), len);
}
const void *gwr_network_prop(const gwr_network *net, const char *key, size_t *len) {
    return net ? props_get(&net->props, key, len) : NULL;
}
gwr_status gwr_network_remove_prop(gwr_network *net, const char *key) {
    gwr_status s = key_ok(net, key, "", 0, "gwr_network_remove_prop");
    return s ? s : props_remove(net, &net->props, key);
}
int gwr_network_num_props(const gwr_network *net) { return net ? (int)net->props.n : -1; }
const char *gwr_network_prop_key(const gwr_network *net, int i) {
    return net && i >= 0 && i < net->props.n ? net->props.v[i].key : NULL;
}

/* Layers and tensors: the same through the network's maps. */
#define OBJ_PROPS(T, obj_t, NET, MAP, MAY_HAVE, MARK)                                                    \
    gwr_status gwr_##T##_set_prop(obj_t *o, const char *key, const void *val, size_t len) {         \
        gwr_status s = key_ok(o, key, val, len, "gwr_" #T "_set_prop");                            \
        if (s) return s;                                                                           \
        gwr_props *p = obj_props(MAP(o), o, 1);                                                    \
        if (p) MARK(o);                                                                            \
        return p ? props_set(NET(o), p, key, EMPTY_IF_NULL(val), len)                               \
                 : gwr_ir_error(NET(o), GWR_ERR_NOMEM, "out of memory");                           \
    }                                                                                              \
    const void *gwr_##T##_prop(const obj_t *o, const char *key, size_t *len) {                     \
        return o && MAY_HAVE(o) ? props_get(obj_props(MAP(o), o, 0), key, len) : NULL;             \
    }                                                                                              \
    gwr_status gwr_##T##_remove_prop(obj_t *o, const char *key) {                                  \
        gwr_status s = key_ok(o, key, "", 0, "gwr_" #T "_remove_prop");                            \
        return s ? s : props_remove(NET(o), obj_props(MAP(o), o, 0), key);                         \
    }                                                                                              \
    int gwr_##T##_num_props(const obj_t *o) {                                                      \
        gwr_props *p = o && MAY_HAVE(o) ? obj_props(MAP(o), o, 0) : NULL;                          \
        return o ? (p ? (int)p->n : 0) : -1;                                                       \
    }                                                                                              \
    const char *gwr_##T##_prop_key(const obj_t *o, int i) {                                        \
        gwr_props *p = o && MAY_HAVE(o) ? obj_props(MAP(o), o, 0) : NULL;                          \
        return p && i >= 0 && i < p->n ? p->v[i].key : NULL;                                       \
    }
#define LAYER_NET(l) ((l)->net)
#define TENSOR_NET(t) gwr_ir_tnet(t)
#define LAYER_MAY_HAVE(l) ((l)->flags & LF_PROPS)
#define LAYER_MARK(l) ((l)->flags |= LF_PROPS)
#define TENSOR_MAY_HAVE(t) 1
#define TENSOR_MARK(t) (void)(t)
#define LAYER_MAP(l) (&(l)->net->layerprops)
#define TENSOR_MAP(t) (&gwr_ir_tnet(t)->objprops)
OBJ_PROPS(layer, gwr_layer, LAYER_NET, LAYER_MAP, LAYER_MAY_HAVE, LAYER_MARK)
OBJ_PROPS(tensor, gwr_tensor, TENSOR_NET, TENSOR_MAP, TENSOR_MAY_HAVE, TENSOR_MARK)

/* ---- default values of graph inputs ---- */

static gwr_status gwr_tensor_set_default_impl(gwr_tensor *t, const gwr_weights *w) {
    if (!t) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_tensor_set_default: NULL tensor");
    gwr_network *net = gwr_ir_tnet(t);
    if (!(t->flags & TF_INPUT))
        return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "tensor '%s' is not a graph input", t->name);
    gwr_weights *old = gwr_ptrmap_get(&net->defaults, t);
    if (!w) {
        if (old) {
            gwr_ir_weights_clear(old);
            gwr_free(old);
            gwr_ptrmap_del(&net->defaults, t);
        }
        return GWR_OK;
    }
    gwr_status s = gwr_ir_weights_check(net, w);
    if (s) return s;
    gwr_weights *c = gwr_calloc(1, sizeof *c);
    if (!c || gwr_ir_weights_copy(c, w) || gwr_ptrmap_put(&net->defaults, t, c)) {
        if (c) gwr_ir_weights_clear(c);
        gwr_free(c);
        return gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
    }
    if (old) {
        gwr_ir_weights_clear(old);
        gwr_free(old);
    }
    return GWR_OK;
}

gwr_status gwr_tensor_set_default(gwr_tensor *t, const gwr_weights *w) {
    gwr_status s = gwr_tensor_set_default_impl(t, w);
    if (s == GWR_OK) GWR_IR_NOTIFY(gwr_ir_tnet(t), tensor_modified, t);
    return s;
}

const gwr_weights *gwr_tensor_default(const gwr_tensor *t) {
    return t ? gwr_ptrmap_get(&gwr_ir_tnet(t)->defaults, t) : NULL;
}

/* ---- opsets ---- */

gwr_status gwr_network_set_opset(gwr_network *net, const char *domain, int64_t version) {
    if (!net || !domain || version < 0)
        return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_set_opset: bad argument");
    gwr_network *r = net->root;
    if (!strcmp(domain, "ai.onnx")) domain = "";
    for (int64_t i = 0; i < r->nopsets; i++)
        if (!strcmp(r->opsets[i].domain, domain)) {
            r->opsets[i].version = version;
            return GWR_OK;
        }
    const char *d = gwr_ir_intern(net, domain);
    if (!d || gwr_grow((void **)&r->opsets, sizeof *r->opsets, &r->opsets_cap, r->nopsets + 1))
        return gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
    r->opsets[r->nopsets++] = (gwr_opset){d, version};
    return GWR_OK;
}

int64_t gwr_network_opset(const gwr_network *net, const char *domain) {
    if (!net || !domain) return -1;
    if (!strcmp(domain, "ai.onnx")) domain = "";
    const gwr_network *r = net->root;
    for (int64_t i = 0; i < r->nopsets; i++)
        if (!strcmp(r->opsets[i].domain, domain)) return r->opsets[i].version;
    return -1;
}

int gwr_network_num_opsets(const gwr_network *net) { return net ? (int)net->root->nopsets : -1; }

const char *gwr_network_opset_domain(const gwr_network *net, int i) {
    return net && i >= 0 && i < net->root->nopsets ? net->root->opsets[i].domain : NULL;
}
