/* network.c - gwr.Network, gwr.Layer, gwr.Tensor, net_guard, and the
 * lifetime rules of pygwr.h: one Python object per handle, found through a
 * per-network table, and marked dead when prune drops its layer or the
 * network is closed. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pygwr.h"

/* ---- a pointer table ------------------------------------------------------------ */

/* Open addressing with linear probing; deletion shifts back, so there are
 * no tombstones. Values are borrowed: an object removes itself when it
 * dies. */
typedef struct pg_slot {
    const void *key;
    PyObject *val;
} pg_slot;
typedef struct pg_map {
    pg_slot *v;
    size_t cap, n; /* cap a power of two, or 0 */
} pg_map;

static size_t map_hash(const void *p, size_t mask) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    return (size_t)x & mask;
}

static PyObject *map_get(const pg_map *m, const void *k) {
    if (!m->cap) return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = map_hash(k, mask);; i = (i + 1) & mask) {
        if (m->v[i].key == k) return m->v[i].val;
        if (!m->v[i].key) return NULL;
    }
}

static int map_put(pg_map *m, const void *k, PyObject *val) {
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        pg_slot *v = PyMem_Calloc(cap, sizeof *v);
        if (!v) {
            PyErr_NoMemory();
            return -1;
        }
        for (size_t j = 0; j < m->cap; j++) {
            if (!m->v[j].key) continue;
            size_t i = map_hash(m->v[j].key, cap - 1);
            while (v[i].key) i = (i + 1) & (cap - 1);
            v[i] = m->v[j];
        }
        PyMem_Free(m->v);
        m->v = v;
        m->cap = cap;
    }
    size_t mask = m->cap - 1, i = map_hash(k, mask);
    while (m->v[i].key && m->v[i].key != k) i = (i + 1) & mask;
    if (!m->v[i].key) m->n++;
    m->v[i].key = k;
    m->v[i].val = val;
    return 0;
}

static void map_del(pg_map *m, const void *k) {
    if (!m->cap) return;
    size_t mask = m->cap - 1, i = map_hash(k, mask);
    while (m->v[i].key != k) {
        if (!m->v[i].key) return;
        i = (i + 1) & mask;
    }
    m->n--;
    /* Shift back the entries of the run that follows whose home is at or
     * before the hole. */
    for (size_t j = (i + 1) & mask; m->v[j].key; j = (j + 1) & mask) {
        size_t h = map_hash(m->v[j].key, mask);
        if (((j - h) & mask) >= ((j - i) & mask)) {
            m->v[i] = m->v[j];
            i = j;
        }
    }
    m->v[i].key = NULL;
    m->v[i].val = NULL;
}

static void map_free(pg_map *m) {
    PyMem_Free(m->v);
    m->v = NULL;
    m->cap = m->n = 0;
}

/* ---- objects ------------------------------------------------------------------------ */

struct pg_network {
    PyObject_HEAD
    gwr_network *net; /* NULL once closed */
    int listener;     /* id, or -1 */
    int busy;         /* managers and sessions running on it */
    uint64_t generation;
    pg_map objs;      /* gwr_layer* / gwr_tensor* -> its Layer / Tensor object */
    PyObject *weakrefs;
};

/* Why a Layer or Tensor object no longer has a handle. */
enum { PG_ALIVE = 0, PG_CLOSED, PG_PRUNED };

typedef struct pg_layer_obj {
    PyObject_HEAD
    pg_network *owner; /* strong */
    gwr_layer *l;      /* NULL when dead */
    int dead;
    char *name;        /* kept for messages once dead */
} pg_layer_obj;

typedef struct pg_tensor_obj {
    PyObject_HEAD
    pg_network *owner;
    gwr_tensor *t;
    int dead;
    char *name;
} pg_tensor_obj;

/* gwr_network* -> its Network object (borrowed). */
static pg_map networks;

static char *dup_name(const char *s) {
    size_t n = strlen(s ? s : "") + 1;
    char *d = PyMem_Malloc(n);
    if (d) memcpy(d, s ? s : "", n);
    return d;
}

/* The handle is still valid here (prune and close call these first). */
static void kill_layer_obj(pg_layer_obj *o, int why) {
    if (!o->name) o->name = dup_name(gwr_layer_name(o->l));
    o->l = NULL;
    o->dead = why;
}
static void kill_tensor_obj(pg_tensor_obj *o, int why) {
    if (!o->name) o->name = dup_name(gwr_tensor_name(o->t));
    o->t = NULL;
    o->dead = why;
}

/* ---- the listener ------------------------------------------------------------------ */

static void on_change(void *ctx) { ((pg_network *)ctx)->generation++; }
static void ls_layer(void *ctx, gwr_layer *l) {
    (void)l;
    on_change(ctx);
}
static void ls_tensor(void *ctx, gwr_tensor *t) {
    (void)t;
    on_change(ctx);
}
static void ls_replaced(void *ctx, gwr_tensor *a, gwr_tensor *b) {
    (void)a;
    (void)b;
    on_change(ctx);
}
static void ls_input(void *ctx, gwr_layer *l, int slot, gwr_tensor *old_t) {
    (void)l;
    (void)slot;
    (void)old_t;
    on_change(ctx);
}
/* The layer is about to be freed: its object and its outputs' objects lose
 * their handles. */
static void ls_dropped(void *ctx, gwr_layer *l) {
    pg_network *n = ctx;
    n->generation++;
    PyObject *o = map_get(&n->objs, l);
    if (o) {
        map_del(&n->objs, l);
        kill_layer_obj((pg_layer_obj *)o, PG_PRUNED);
    }
    for (int i = 0, k = gwr_layer_num_outputs(l); i < k; i++) {
        gwr_tensor *t = gwr_layer_output(l, i);
        PyObject *to = t ? map_get(&n->objs, t) : NULL;
        if (to) {
            map_del(&n->objs, t);
            kill_tensor_obj((pg_tensor_obj *)to, PG_PRUNED);
        }
    }
}

/* ---- Network --------------------------------------------------------------------- */

static PyObject *network_new_object(PyTypeObject *type, gwr_network *net) {
    pg_network *self = (pg_network *)type->tp_alloc(type, 0);
    if (!self) {
        gwr_network_free(net);
        return NULL;
    }
    self->net = net;
    self->listener = -1;
    gwr_listener ls = {0};
    ls.layer_added = ls_layer;
    ls.layer_removed = ls_layer;
    ls.layer_dropped = ls_dropped;
    ls.tensor_replaced = ls_replaced;
    ls.input_changed = ls_input;
    ls.layer_modified = ls_layer;
    ls.tensor_modified = ls_tensor;
    ls.ctx = self;
    self->listener = gwr_network_add_listener(net, &ls);
    if (self->listener < 0 || map_put(&networks, net, (PyObject *)self) < 0) {
        if (!PyErr_Occurred()) pg_raise_net(GWR_ERR_NOMEM, net);
        Py_DECREF(self); /* dealloc frees net */
        return NULL;
    }
    return (PyObject *)self;
}

PyObject *pg_network_adopt(gwr_network *net) {
    if (!net) return pg_raise(GWR_ERR_INVALID_ARG, gwr_last_errmsg());
    return network_new_object(&pg_Network_Type, net);
}

pg_network *pg_network_find(gwr_network *net) {
    PyObject *o = net ? map_get(&networks, net) : NULL;
    if (!o) {
        if (net && gwr_network_parent(net))
            pg_raise(GWR_ERR_UNSUPPORTED, "the layers of a subgraph (If/Loop/Scan body) are not walkable from Python");
        else
            PyErr_SetString(pg_LifetimeError, "this network has no Python object (it was closed, or gwr made it for itself)");
        return NULL;
    }
    return (pg_network *)o;
}

static int network_check(PyObject *o) {
    if (!PyObject_TypeCheck(o, &pg_Network_Type)) {
        PyErr_Format(PyExc_TypeError, "expected a gwr.Network, got %.100s", Py_TYPE(o)->tp_name);
        return -1;
    }
    if (!((pg_network *)o)->net) {
        PyErr_SetString(pg_LifetimeError, "the network was closed");
        return -1;
    }
    return 0;
}

gwr_network *pg_network_get(PyObject *o) {
    return network_check(o) < 0 ? NULL : ((pg_network *)o)->net;
}

uint64_t pg_network_generation(PyObject *o) {
    return PyObject_TypeCheck(o, &pg_Network_Type) ? ((pg_network *)o)->generation : 0;
}

void pg_network_busy(PyObject *o, int delta) {
    if (PyObject_TypeCheck(o, &pg_Network_Type)) ((pg_network *)o)->busy += delta;
}

/* Frees the C network; every object from it dies first. */
static void network_close_now(pg_network *self) {
    if (!self->net) return;
    for (size_t i = 0; i < self->objs.cap; i++) {
        PyObject *o = self->objs.v[i].val;
        if (!o) continue;
        if (Py_IS_TYPE(o, &pg_Layer_Type))
            kill_layer_obj((pg_layer_obj *)o, PG_CLOSED);
        else
            kill_tensor_obj((pg_tensor_obj *)o, PG_CLOSED);
    }
    map_free(&self->objs);
    map_del(&networks, self->net);
    if (self->listener >= 0) gwr_network_remove_listener(self->net, self->listener);
    gwr_network_free(self->net);
    self->net = NULL;
}

static PyObject *Network_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"name", NULL};
    const char *name = "network";
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|s:Network", kwlist, &name)) return NULL;
    gwr_network *net = gwr_network_new(name);
    if (!net) return pg_raise(GWR_ERR_NOMEM, gwr_last_errmsg());
    return network_new_object(type, net);
}

static void Network_dealloc(pg_network *self) {
    if (self->weakrefs) PyObject_ClearWeakRefs((PyObject *)self);
    network_close_now(self);
    map_free(&self->objs);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Network_close(pg_network *self, PyObject *noargs) {
    (void)noargs;
    if (self->busy) return pg_raise(GWR_ERR_STATE, "Network.close(): a manager is running on this network");
    network_close_now(self);
    Py_RETURN_NONE;
}

static PyObject *Network_enter(PyObject *self, PyObject *noargs) {
    (void)noargs;
    if (network_check(self) < 0) return NULL;
    return Py_NewRef(self);
}

static PyObject *Network_exit(pg_network *self, PyObject *args) {
    (void)args;
    if (self->busy) return pg_raise(GWR_ERR_STATE, "Network.close(): a manager is running on this network");
    network_close_now(self);
    Py_RETURN_FALSE;
}

#define NET_OR_NULL(self)                              \
    gwr_network *net = pg_network_get((PyObject *)(self)); \
    if (!net) return NULL

/* A shape tuple/list as dims: int >= 0, None or -1 (unknown), str
 * (symbolic). */
static int dims_from_py(gwr_network *net, PyObject *shape, int *rank, gwr_dim *dims) {
    if (shape == Py_None) {
        *rank = -1;
        return 0;
    }
    PyObject *seq = PySequence_Fast(shape, "shape must be a sequence of ints, None and str, or None");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > GWR_MAX_RANK) {
        Py_DECREF(seq);
        return pg_raisef(GWR_ERR_INVALID_ARG, "shape has %zd dims; gwr takes at most %d", n, GWR_MAX_RANK), -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PySequence_Fast_GET_ITEM(seq, i);
        if (d == Py_None) {
            dims[i] = GWR_DIM_UNKNOWN;
        } else if (PyUnicode_Check(d)) {
            const char *s = PyUnicode_AsUTF8(d);
            if (!s) goto fail;
            dims[i] = gwr_network_dim_sym(net, s);
            if (dims[i] == GWR_DIM_UNKNOWN) {
                pg_raise_net(GWR_ERR_INVALID_ARG, net);
                goto fail;
            }
        } else {
            long long v = PyLong_AsLongLong(d);
            if (v == -1 && PyErr_Occurred()) {
                PyErr_Format(PyExc_TypeError, "shape[%zd]: expected an int, None or a str, got %R", i, d);
                goto fail;
            }
            if (v < -1) {
                pg_raisef(GWR_ERR_INVALID_ARG, "shape[%zd] is %lld: a dim is >= 0, or -1/None for unknown", i, v);
                goto fail;
            }
            dims[i] = (gwr_dim)v;
        }
    }
    *rank = (int)n;
    Py_DECREF(seq);
    return 0;
fail:
    Py_DECREF(seq);
    return -1;
}

static PyObject *Network_add_input(pg_network *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"name", "dtype", "shape", NULL};
    const char *name;
    PyObject *dt, *shape = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sO|O:add_input", kwlist, &name, &dt, &shape)) return NULL;
    NET_OR_NULL(self);
    gwr_dtype dtype;
    if (pg_dtype_from_py(dt, &dtype) < 0) return NULL;
    gwr_dim dims[GWR_MAX_RANK];
    int rank;
    if (dims_from_py(net, shape, &rank, dims) < 0) return NULL;
    gwr_tensor *t = gwr_network_add_input(net, name, dtype, rank, rank >= 0 ? dims : NULL);
    if (!t) return pg_raise_net(GWR_ERR_INVALID_ARG, net);
    return pg_tensor_wrap(t);
}

static PyObject *Network_mark_output(pg_network *self, PyObject *arg) {
    NET_OR_NULL(self);
    gwr_tensor *t = pg_tensor_get(arg);
    if (!t) return NULL;
    if (gwr_tensor_network(t) != net) return pg_raise(GWR_ERR_INVALID_ARG, "mark_output: the tensor belongs to another network");
    gwr_status s = gwr_network_mark_output(net, t);
    if (s) return pg_raise_net(s, net);
    Py_RETURN_NONE;
}

static PyObject *Network_unmark_output(pg_network *self, PyObject *arg) {
    NET_OR_NULL(self);
    gwr_tensor *t = pg_tensor_get(arg);
    if (!t) return NULL;
    gwr_status s = gwr_network_unmark_output(net, t);
    if (s) return pg_raise_net(s, net);
    Py_RETURN_NONE;
}

static PyObject *tensor_list(gwr_network *net, int n, gwr_tensor *(*get)(const gwr_network *, int)) {
    PyObject *l = PyList_New(n);
    if (!l) return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *t = pg_tensor_wrap(get(net, i));
        if (!t) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, t);
    }
    return l;
}

static PyObject *Network_get_inputs(pg_network *self, void *c) {
    (void)c;
    NET_OR_NULL(self);
    return tensor_list(net, gwr_network_num_inputs(net), gwr_network_input);
}

static PyObject *Network_get_outputs(pg_network *self, void *c) {
    (void)c;
    NET_OR_NULL(self);
    return tensor_list(net, gwr_network_num_outputs(net), gwr_network_output);
}

static PyObject *Network_get_layers(pg_network *self, void *c) {
    (void)c;
    NET_OR_NULL(self);
    int64_t n = gwr_network_num_layers(net);
    PyObject *l = PyList_New((Py_ssize_t)n);
    if (!l) return NULL;
    for (int64_t i = 0; i < n; i++) {
        PyObject *o = pg_layer_wrap(gwr_network_layer(net, i));
        if (!o) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)i, o);
    }
    return l;
}

static PyObject *Network_get_num_layers(pg_network *self, void *c) {
    (void)c;
    NET_OR_NULL(self);
    return PyLong_FromLongLong(gwr_network_num_layers(net));
}

static PyObject *Network_get_num_live_layers(pg_network *self, void *c) {
    (void)c;
    NET_OR_NULL(self);
    return PyLong_FromLongLong(gwr_network_num_live_layers(net));
}

static PyObject *Network_get_name(pg_network *self, void *c) {
    (void)c;
    NET_OR_NULL(self);
    return PyUnicode_FromString(gwr_network_name(net));
}

static int Network_set_name(pg_network *self, PyObject *v, void *c) {
    (void)c;
    gwr_network *net = pg_network_get((PyObject *)self);
    if (!net) return -1;
    const char *s = v ? PyUnicode_AsUTF8(v) : NULL;
    if (!s) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "name must be a str");
        return -1;
    }
    gwr_status st = gwr_network_set_name(net, s);
    if (st) return pg_raise_net(st, net), -1;
    return 0;
}

static PyObject *Network_get_closed(pg_network *self, void *c) {
    (void)c;
    return PyBool_FromLong(self->net == NULL);
}

static PyObject *Network_get_layer(pg_network *self, PyObject *arg) {
    NET_OR_NULL(self);
    const char *s = PyUnicode_AsUTF8(arg);
    if (!s) return NULL;
    return pg_layer_wrap(gwr_network_find_layer(net, s));
}

static PyObject *Network_get_tensor(pg_network *self, PyObject *arg) {
    NET_OR_NULL(self);
    const char *s = PyUnicode_AsUTF8(arg);
    if (!s) return NULL;
    return pg_tensor_wrap(gwr_network_find_tensor(net, s));
}

static PyObject *Network_prune(pg_network *self, PyObject *noargs) {
    (void)noargs;
    NET_OR_NULL(self);
    int64_t n = 0;
    gwr_status s = gwr_network_prune(net, &n);
    if (s) return pg_raise_net(s, net);
    return PyLong_FromLongLong(n);
}

static PyObject *Network_verify(pg_network *self, PyObject *noargs) {
    (void)noargs;
    NET_OR_NULL(self);
    gwr_status s = gwr_network_verify(net);
    if (s) return pg_raise_net(s, net);
    Py_RETURN_NONE;
}

static PyObject *Network_toposort(pg_network *self, PyObject *noargs) {
    (void)noargs;
    NET_OR_NULL(self);
    gwr_status s = gwr_network_toposort(net);
    if (s) return pg_raise_net(s, net);
    Py_RETURN_NONE;
}

static PyObject *Network_clone(pg_network *self, PyObject *noargs) {
    (void)noargs;
    NET_OR_NULL(self);
    gwr_network *c = gwr_network_clone(net);
    if (!c) return pg_raise(GWR_ERR_NOMEM, gwr_last_errmsg());
    return network_new_object(Py_TYPE(self), c);
}

static PyObject *Network_diff(pg_network *self, PyObject *other) {
    NET_OR_NULL(self);
    gwr_network *o = pg_network_get(other);
    if (!o) return NULL;
    char why[1024] = "";
    if (gwr_network_equal(net, o, why, sizeof why)) return PyUnicode_FromString("");
    return PyUnicode_FromString(why[0] ? why : "the networks differ");
}

static PyObject *Network_equal(pg_network *self, PyObject *other) {
    NET_OR_NULL(self);
    gwr_network *o = pg_network_get(other);
    if (!o) return NULL;
    return PyBool_FromLong(gwr_network_equal(net, o, NULL, 0));
}

static PyObject *Network_to_dot(pg_network *self, PyObject *noargs) {
    (void)noargs;
    NET_OR_NULL(self);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return PyErr_NoMemory();
    gwr_status s = gwr_network_write_dot(net, f);
    fclose(f);
    PyObject *r = s ? pg_raise_net(s, net) : PyUnicode_DecodeUTF8(buf, (Py_ssize_t)len, "replace");
    free(buf);
    return r;
}

static PyObject *Network_get_opsets(pg_network *self, void *c) {
    (void)c;
    NET_OR_NULL(self);
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    for (int i = 0, n = gwr_network_num_opsets(net); i < n; i++) {
        const char *dom = gwr_network_opset_domain(net, i);
        PyObject *v = PyLong_FromLongLong(gwr_network_opset(net, dom));
        if (!v || PyDict_SetItemString(d, dom, v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(v);
    }
    return d;
}

static PyObject *Network_set_opset(pg_network *self, PyObject *args) {
    const char *dom;
    long long v;
    if (!PyArg_ParseTuple(args, "sL:set_opset", &dom, &v)) return NULL;
    NET_OR_NULL(self);
    gwr_status s = gwr_network_set_opset(net, dom, v);
    if (s) return pg_raise_net(s, net);
    Py_RETURN_NONE;
}

static PyObject *Network_repr(pg_network *self) {
    if (!self->net) return PyUnicode_FromString("<gwr.Network (closed)>");
    return PyUnicode_FromFormat("<gwr.Network '%s': %lld layers, %d inputs, %d outputs>", gwr_network_name(self->net),
                                (long long)gwr_network_num_live_layers(self->net), gwr_network_num_inputs(self->net),
                                gwr_network_num_outputs(self->net));
}

static Py_ssize_t Network_len(pg_network *self) {
    if (network_check((PyObject *)self) < 0) return -1;
    return (Py_ssize_t)gwr_network_num_live_layers(self->net);
}

static PySequenceMethods Network_as_sequence = {.sq_length = (lenfunc)Network_len};

static PyMethodDef Network_methods[] = {
    {"close", (PyCFunction)Network_close, METH_NOARGS,
     "close()\n\nFrees the network now. Every Layer and Tensor from it becomes dead (using it raises\n"
     "gwr.LifetimeError). Refused (StateError) while a manager runs on it. Closing twice is a no-op."},
    {"__enter__", Network_enter, METH_NOARGS, "`with gwr.Network() as net:` closes the network on exit."},
    {"__exit__", (PyCFunction)Network_exit, METH_VARARGS, "Closes the network."},
    {"add_input", (PyCFunction)(void (*)(void))Network_add_input, METH_VARARGS | METH_KEYWORDS,
     "add_input(name, dtype, shape=None) -> Tensor\n\nA new graph input. shape: a sequence of ints (>= 0), None or -1\n"
     "(unknown) and str (a symbolic dim such as \"batch\"); None for an unknown rank."},
    {"mark_output", (PyCFunction)Network_mark_output, METH_O, "mark_output(tensor)\n\nMakes tensor a network output."},
    {"unmark_output", (PyCFunction)Network_unmark_output, METH_O,
     "unmark_output(tensor)\n\nThe tensor is no longer a network output."},
    {"get_layer", (PyCFunction)Network_get_layer, METH_O, "get_layer(name) -> Layer or None. O(1)."},
    {"get_tensor", (PyCFunction)Network_get_tensor, METH_O, "get_tensor(name) -> Tensor or None. O(1)."},
    {"prune", (PyCFunction)Network_prune, METH_NOARGS,
     "prune() -> int\n\nDrops removed layers and layers no output depends on; returns how many. Their\n"
     "Layer and Tensor objects become dead."},
    {"verify", (PyCFunction)Network_verify, METH_NOARGS,
     "verify()\n\nChecks every invariant of the graph; raises InvalidGraphError (or CycleError) naming the\n"
     "first broken one."},
    {"toposort", (PyCFunction)Network_toposort, METH_NOARGS, "toposort()\n\nPuts the layers in topological order."},
    {"clone", (PyCFunction)Network_clone, METH_NOARGS,
     "clone() -> Network\n\nAn independent deep copy (weights shared, copy-on-nothing: they are immutable)."},
    {"equal", (PyCFunction)Network_equal, METH_O, "equal(other) -> bool\n\nStructural equality (see diff)."},
    {"diff", (PyCFunction)Network_diff, METH_O,
     "diff(other) -> str\n\nThe first structural difference, \"\" when the networks are equal."},
    {"to_dot", (PyCFunction)Network_to_dot, METH_NOARGS, "to_dot() -> str\n\nThe network in Graphviz's DOT language."},
    {"set_opset", (PyCFunction)Network_set_opset, METH_VARARGS,
     "set_opset(domain, version)\n\nSets the opset imported for a domain (\"\" is ONNX's)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Network_getset[] = {
    {"name", (getter)Network_get_name, (setter)Network_set_name, "The network's name.", NULL},
    {"inputs", (getter)Network_get_inputs, NULL, "The graph inputs, a list of Tensor.", NULL},
    {"outputs", (getter)Network_get_outputs, NULL, "The network outputs, in order, a list of Tensor.", NULL},
    {"layers", (getter)Network_get_layers, NULL,
     "Every layer in network order, removed ones included until prune().", NULL},
    {"num_layers", (getter)Network_get_num_layers, NULL, "Layers in network order, removed ones included.", NULL},
    {"num_live_layers", (getter)Network_get_num_live_layers, NULL, "Layers not marked as removed (also len(net)).",
     NULL},
    {"closed", (getter)Network_get_closed, NULL, "True once close() freed the network.", NULL},
    {"opsets", (getter)Network_get_opsets, NULL, "Imported opsets, a dict domain -> version.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject pg_Network_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gwr.Network",
    .tp_basicsize = sizeof(pg_network),
    .tp_dealloc = (destructor)Network_dealloc,
    .tp_repr = (reprfunc)Network_repr,
    .tp_as_sequence = &Network_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Network(name='network')\n\n"
              "A graph of layers and tensors (TensorRT's INetworkDefinition). It owns every layer,\n"
              "tensor and weight in it. Free it with close() or `with gwr.Network() as net:`; it is\n"
              "also freed when nothing from it is reachable any more.",
    .tp_weaklistoffset = offsetof(pg_network, weakrefs),
    .tp_methods = Network_methods,
    .tp_getset = Network_getset,
    .tp_new = Network_new,
};

/* ---- wrapping handles ------------------------------------------------------------- */

PyObject *pg_layer_wrap(gwr_layer *l) {
    if (!l) Py_RETURN_NONE;
    pg_network *n = pg_network_find(gwr_layer_network(l));
    if (!n) return NULL;
    PyObject *o = map_get(&n->objs, l);
    if (o) return Py_NewRef(o);
    pg_layer_obj *lo = PyObject_New(pg_layer_obj, &pg_Layer_Type);
    if (!lo) return NULL;
    lo->owner = (pg_network *)Py_NewRef(n);
    lo->l = l;
    lo->dead = PG_ALIVE;
    lo->name = NULL;
    if (map_put(&n->objs, l, (PyObject *)lo) < 0) {
        lo->l = NULL;
        Py_DECREF(lo);
        return NULL;
    }
    return (PyObject *)lo;
}

PyObject *pg_tensor_wrap(gwr_tensor *t) {
    if (!t) Py_RETURN_NONE;
    pg_network *n = pg_network_find(gwr_tensor_network(t));
    if (!n) return NULL;
    PyObject *o = map_get(&n->objs, t);
    if (o) return Py_NewRef(o);
    pg_tensor_obj *to = PyObject_New(pg_tensor_obj, &pg_Tensor_Type);
    if (!to) return NULL;
    to->owner = (pg_network *)Py_NewRef(n);
    to->t = t;
    to->dead = PG_ALIVE;
    to->name = NULL;
    if (map_put(&n->objs, t, (PyObject *)to) < 0) {
        to->t = NULL;
        Py_DECREF(to);
        return NULL;
    }
    return (PyObject *)to;
}

int pg_is_layer(PyObject *o) { return PyObject_TypeCheck(o, &pg_Layer_Type); }
int pg_is_tensor(PyObject *o) { return PyObject_TypeCheck(o, &pg_Tensor_Type); }

static const char *why_dead(int dead) {
    return dead == PG_CLOSED ? "its network was closed" : "its layer was pruned from the network";
}

gwr_layer *pg_layer_get(PyObject *o) {
    if (!pg_is_layer(o)) {
        PyErr_Format(PyExc_TypeError, "expected a gwr.Layer, got %.100s", Py_TYPE(o)->tp_name);
        return NULL;
    }
    pg_layer_obj *lo = (pg_layer_obj *)o;
    if (!lo->l) {
        PyErr_Format(pg_LifetimeError, "layer '%s' is gone: %s", lo->name ? lo->name : "?", why_dead(lo->dead));
        return NULL;
    }
    return lo->l;
}

gwr_tensor *pg_tensor_get(PyObject *o) {
    if (!pg_is_tensor(o)) {
        PyErr_Format(PyExc_TypeError, "expected a gwr.Tensor, got %.100s", Py_TYPE(o)->tp_name);
        return NULL;
    }
    pg_tensor_obj *to = (pg_tensor_obj *)o;
    if (!to->t) {
        PyErr_Format(pg_LifetimeError, "tensor '%s' is gone: %s", to->name ? to->name : "?", why_dead(to->dead));
        return NULL;
    }
    return to->t;
}

PyObject *pg_layer_network_obj(PyObject *layer) { return (PyObject *)((pg_layer_obj *)layer)->owner; }
PyObject *pg_tensor_network_obj(PyObject *tensor) { return (PyObject *)((pg_tensor_obj *)tensor)->owner; }

/* ---- Layer ---------------------------------------------------------------------------- */

static void Layer_dealloc(pg_layer_obj *self) {
    if (self->l) map_del(&self->owner->objs, self->l);
    PyMem_Free(self->name);
    Py_XDECREF(self->owner);
    PyObject_Free(self);
}

/* Keeps the layer's name for messages after it dies. */
#define LAYER_OR_NULL(self)                       \
    gwr_layer *l = pg_layer_get((PyObject *)(self)); \
    if (!l) return NULL

static PyObject *Layer_repr(pg_layer_obj *self) {
    if (!self->l) return PyUnicode_FromFormat("<gwr.Layer (dead: %s)>", why_dead(self->dead));
    gwr_layer *l = self->l;
    const char *dom = gwr_layer_domain(l);
    return PyUnicode_FromFormat("<gwr.Layer '%s' %s%s%s (%s)%s>", gwr_layer_name(l), dom, *dom ? "::" : "",
                                gwr_layer_op(l), gwr_layer_type_name(gwr_layer_type_of(l)),
                                gwr_layer_is_removed(l) ? " removed" : "");
}

static PyObject *Layer_get_name(pg_layer_obj *self, void *c) {
    (void)c;
    LAYER_OR_NULL(self);
    return PyUnicode_FromString(gwr_layer_name(l));
}

static int Layer_set_name(pg_layer_obj *self, PyObject *v, void *c) {
    (void)c;
    gwr_layer *l = pg_layer_get((PyObject *)self);
    if (!l) return -1;
    const char *s = v ? PyUnicode_AsUTF8(v) : NULL;
    if (!s) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "name must be a str");
        return -1;
    }
    gwr_status st = gwr_layer_set_name(l, s);
    if (st) return pg_raise_net(st, gwr_layer_network(l)), -1;
    return 0;
}

static PyObject *Layer_get_type(pg_layer_obj *self, void *c) {
    (void)c;
    LAYER_OR_NULL(self);
    return pg_layer_type_to_py(gwr_layer_type_of(l));
}
static PyObject *Layer_get_op(pg_layer_obj *self, void *c) {
    (void)c;
    LAYER_OR_NULL(self);
    return PyUnicode_FromString(gwr_layer_op(l));
}
static PyObject *Layer_get_domain(pg_layer_obj *self, void *c) {
    (void)c;
    LAYER_OR_NULL(self);
    return PyUnicode_FromString(gwr_layer_domain(l));
}
static PyObject *Layer_get_ew_op(pg_layer_obj *self, void *c) {
    (void)c;
    LAYER_OR_NULL(self);
    return pg_ew_op_to_py(gwr_layer_ew_op(l));
}
static PyObject *Layer_get_network(pg_layer_obj *self, void *c) {
    (void)c;
    LAYER_OR_NULL(self);
    (void)l;
    return Py_NewRef(self->owner);
}
static PyObject *Layer_get_num_inputs(pg_layer_obj *self, void *c) {
    (void)c;
    LAYER_OR_NULL(self);
    return PyLong_FromLong(gwr_layer_num_inputs(l));
}
static PyObject *Layer_get_num_outputs(pg_layer_obj *self, void *c) {
    (void)c;
    LAYER_OR_NULL(self);
    return PyLong_FromLong(gwr_layer_num_outputs(l));
}
static PyObject *Layer_get_is_removed(pg_layer_obj *self, void *c) {
    (void)c;
    if (!self->l && self->dead == PG_PRUNED) Py_RETURN_TRUE; /* pruned: removed for good */
    LAYER_OR_NULL(self);
    return PyBool_FromLong(gwr_layer_is_removed(l));
}
static PyObject *Layer_get_is_alive(pg_layer_obj *self, void *c) {
    (void)c;
    return PyBool_FromLong(self->l != NULL);
}
static PyObject *Layer_get_doc(pg_layer_obj *self, void *c) {
    (void)c;
    LAYER_OR_NULL(self);
    return PyUnicode_FromString(gwr_layer_doc(l));
}

/* get_inputs(*idx) / get_outputs(*idx): all when no index is given. */
static PyObject *io_list(PyObject *self, PyObject *args, int outputs) {
    LAYER_OR_NULL(self);
    int n = outputs ? gwr_layer_num_outputs(l) : gwr_layer_num_inputs(l);
    Py_ssize_t k = PyTuple_GET_SIZE(args);
    PyObject *r = PyList_New(k ? k : n);
    if (!r) return NULL;
    for (Py_ssize_t i = 0; i < (k ? k : n); i++) {
        long idx = (long)i;
        if (k) {
            idx = PyLong_AsLong(PyTuple_GET_ITEM(args, i));
            if (idx == -1 && PyErr_Occurred()) goto fail;
            if (idx < 0) idx += n;
            if (idx < 0 || idx >= n) {
                PyErr_Format(PyExc_IndexError, "layer '%s' has %d %s; index %ld is out of range", gwr_layer_name(l), n,
                             outputs ? "outputs" : "inputs", PyLong_AsLong(PyTuple_GET_ITEM(args, i)));
                goto fail;
            }
        }
        PyObject *t = pg_tensor_wrap(outputs ? gwr_layer_output(l, (int)idx) : gwr_layer_input(l, (int)idx));
        if (!t) goto fail;
        PyList_SET_ITEM(r, i, t);
    }
    return r;
fail:
    Py_DECREF(r);
    return NULL;
}

static PyObject *Layer_get_inputs(PyObject *self, PyObject *args) { return io_list(self, args, 0); }
static PyObject *Layer_get_outputs(PyObject *self, PyObject *args) { return io_list(self, args, 1); }

static PyObject *Layer_set_input(pg_layer_obj *self, PyObject *args) {
    int i;
    PyObject *to;
    if (!PyArg_ParseTuple(args, "iO:set_input", &i, &to)) return NULL;
    LAYER_OR_NULL(self);
    gwr_tensor *t = NULL;
    if (to != Py_None && !(t = pg_tensor_get(to))) return NULL;
    gwr_status s = gwr_layer_set_input(l, i, t);
    if (s) return pg_raise_net(s, gwr_layer_network(l));
    Py_RETURN_NONE;
}

static PyObject *Layer_mark_as_removed(pg_layer_obj *self, PyObject *noargs) {
    (void)noargs;
    LAYER_OR_NULL(self);
    gwr_status s = gwr_layer_mark_as_removed(l);
    if (s) return pg_raise_net(s, gwr_layer_network(l));
    Py_RETURN_NONE;
}

static PyObject *Layer_as_layer(PyObject *self, PyObject *noargs) {
    (void)noargs;
    if (!pg_layer_get(self)) return NULL;
    return Py_NewRef(self);
}

/* Attribute values. Tensor-valued ones become numpy arrays (copies). */
static PyObject *weights_to_numpy(const gwr_weights *w) {
    if (w->dtype == GWR_STRING) {
        const gwr_bytes *b = w->data;
        int64_t n = gwr_shape_numel(w->rank, w->dims);
        PyObject *l = PyList_New((Py_ssize_t)n);
        if (!l) return NULL;
        for (int64_t i = 0; i < n; i++) {
            PyObject *s = PyBytes_FromStringAndSize(b[i].data, (Py_ssize_t)b[i].len);
            if (!s) {
                Py_DECREF(l);
                return NULL;
            }
            PyList_SET_ITEM(l, (Py_ssize_t)i, s);
        }
        return l;
    }
    PyObject *np = PyImport_ImportModule("numpy");
    if (!np) return NULL;
    PyObject *bytes = PyBytes_FromStringAndSize(w->data, (Py_ssize_t)w->nbytes);
    PyObject *dims = PyTuple_New(w->rank);
    PyObject *flat = NULL, *arr = NULL;
    if (!bytes || !dims) goto out;
    for (int i = 0; i < w->rank; i++) {
        PyObject *d = PyLong_FromLongLong(w->dims[i]);
        if (!d) goto out;
        PyTuple_SET_ITEM(dims, i, d);
    }
    {
        const char *nm = gwr_dtype_name(w->dtype);
        if (w->dtype == GWR_BFLOAT16 || gwr_dtype_bits(w->dtype) < 8 || w->dtype >= GWR_FLOAT8E4M3FN)
            nm = gwr_dtype_bits(w->dtype) == 16 ? "uint16" : "uint8"; /* numpy lacks them: raw bits */
        flat = PyObject_CallMethod(np, "frombuffer", "Os", bytes, nm);
    }
    if (!flat) goto out;
    if (gwr_dtype_bits(w->dtype) >= 8)
        arr = PyObject_CallMethod(flat, "reshape", "(O)", dims);
    else
        arr = Py_NewRef(flat); /* 4-bit types: the packed bytes */
out:
    Py_XDECREF(flat);
    Py_XDECREF(dims);
    Py_XDECREF(bytes);
    Py_DECREF(np);
    return arr;
}

static PyObject *attr_value(gwr_layer *l, int i) {
    const char *name = gwr_layer_attr_name(l, i);
    gwr_status s = GWR_OK;
    switch (gwr_layer_attr_type(l, i)) {
    case GWR_ATTR_INT: {
        int64_t v;
        if (!(s = gwr_layer_get_int(l, name, &v))) return PyLong_FromLongLong(v);
        break;
    }
    case GWR_ATTR_FLOAT: {
        float v;
        if (!(s = gwr_layer_get_float(l, name, &v))) return PyFloat_FromDouble(v);
        break;
    }
    case GWR_ATTR_STRING: {
        const char *v;
        size_t n;
        if (!(s = gwr_layer_get_string(l, name, &v, &n))) {
            PyObject *r = PyUnicode_DecodeUTF8(v, (Py_ssize_t)n, "strict");
            if (!r) {
                PyErr_Clear();
                r = PyBytes_FromStringAndSize(v, (Py_ssize_t)n);
            }
            return r;
        }
        break;
    }
    case GWR_ATTR_INTS: {
        const int64_t *v;
        int64_t n;
        if ((s = gwr_layer_get_ints(l, name, &v, &n))) break;
        PyObject *r = PyList_New((Py_ssize_t)n);
        for (int64_t k = 0; r && k < n; k++) {
            PyObject *x = PyLong_FromLongLong(v[k]);
            if (!x) return Py_DECREF(r), NULL;
            PyList_SET_ITEM(r, (Py_ssize_t)k, x);
        }
        return r;
    }
    case GWR_ATTR_FLOATS: {
        const float *v;
        int64_t n;
        if ((s = gwr_layer_get_floats(l, name, &v, &n))) break;
        PyObject *r = PyList_New((Py_ssize_t)n);
        for (int64_t k = 0; r && k < n; k++) {
            PyObject *x = PyFloat_FromDouble(v[k]);
            if (!x) return Py_DECREF(r), NULL;
            PyList_SET_ITEM(r, (Py_ssize_t)k, x);
        }
        return r;
    }
    case GWR_ATTR_STRINGS: {
        const gwr_bytes *v;
        int64_t n;
        if ((s = gwr_layer_get_strings(l, name, &v, &n))) break;
        PyObject *r = PyList_New((Py_ssize_t)n);
        for (int64_t k = 0; r && k < n; k++) {
            PyObject *x = PyUnicode_DecodeUTF8(v[k].data, (Py_ssize_t)v[k].len, "strict");
            if (!x) {
                PyErr_Clear();
                x = PyBytes_FromStringAndSize(v[k].data, (Py_ssize_t)v[k].len);
            }
            if (!x) return Py_DECREF(r), NULL;
            PyList_SET_ITEM(r, (Py_ssize_t)k, x);
        }
        return r;
    }
    case GWR_ATTR_TENSOR: {
        const gwr_weights *w;
        if (!(s = gwr_layer_get_tensor(l, name, &w))) return weights_to_numpy(w);
        break;
    }
    case GWR_ATTR_TENSORS: {
        const gwr_weights *w;
        int64_t n;
        if ((s = gwr_layer_get_tensors(l, name, &w, &n))) break;
        PyObject *r = PyList_New((Py_ssize_t)n);
        for (int64_t k = 0; r && k < n; k++) {
            PyObject *x = weights_to_numpy(&w[k]);
            if (!x) return Py_DECREF(r), NULL;
            PyList_SET_ITEM(r, (Py_ssize_t)k, x);
        }
        return r;
    }
    case GWR_ATTR_GRAPH: {
        gwr_network *g;
        if ((s = gwr_layer_get_graph(l, name, &g))) break;
        return Py_BuildValue("{s:s,s:L}", "subgraph", gwr_network_name(g), "num_layers",
                             (long long)gwr_network_num_layers(g));
    }
    case GWR_ATTR_GRAPHS: {
        gwr_network *const *g;
        int64_t n;
        if ((s = gwr_layer_get_graphs(l, name, &g, &n))) break;
        PyObject *r = PyList_New((Py_ssize_t)n);
        for (int64_t k = 0; r && k < n; k++) {
            PyObject *x = Py_BuildValue("{s:s,s:L}", "subgraph", gwr_network_name(g[k]), "num_layers",
                                        (long long)gwr_network_num_layers(g[k]));
            if (!x) return Py_DECREF(r), NULL;
            PyList_SET_ITEM(r, (Py_ssize_t)k, x);
        }
        return r;
    }
    default:
        return pg_raisef(GWR_ERR_UNSUPPORTED, "attribute '%s' of layer '%s' has an undefined type", name,
                         gwr_layer_name(l));
    }
    return pg_raise_net(s, gwr_layer_network(l));
}

static PyObject *Layer_get_attrs(pg_layer_obj *self, void *c) {
    (void)c;
    LAYER_OR_NULL(self);
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    for (int i = 0, n = gwr_layer_num_attrs(l); i < n; i++) {
        PyObject *v = attr_value(l, i);
        if (!v || PyDict_SetItemString(d, gwr_layer_attr_name(l, i), v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(v);
    }
    return d;
}

static PyObject *Layer_get_attr(pg_layer_obj *self, PyObject *args) {
    const char *name;
    PyObject *def = NULL;
    if (!PyArg_ParseTuple(args, "s|O:get_attr", &name, &def)) return NULL;
    LAYER_OR_NULL(self);
    int i = gwr_layer_find_attr(l, name);
    if (i < 0) {
        if (def) return Py_NewRef(def);
        return pg_raisef(GWR_ERR_NOT_FOUND, "layer '%s' (%s) has no attribute '%s'", gwr_layer_name(l), gwr_layer_op(l),
                         name);
    }
    return attr_value(l, i);
}

/* A numpy array (anything with the buffer protocol and a dtype) as a
 * tensor attribute. */
static gwr_status set_tensor_attr(gwr_layer *l, const char *name, PyObject *v) {
    PyObject *np = PyImport_ImportModule("numpy");
    if (!np) return GWR_ERR_INVALID_ARG;
    PyObject *arr = PyObject_CallMethod(np, "ascontiguousarray", "(O)", v);
    Py_DECREF(np);
    if (!arr) return GWR_ERR_INVALID_ARG;
    gwr_status st = GWR_ERR_INVALID_ARG;
    PyObject *dt = PyObject_GetAttrString(arr, "dtype");
    gwr_dtype dtype;
    Py_buffer view;
    if (!dt || pg_dtype_from_py(dt, &dtype) < 0) goto out;
    if (PyObject_GetBuffer(arr, &view, PyBUF_C_CONTIGUOUS | PyBUF_ND) < 0) goto out;
    if (view.ndim > GWR_MAX_RANK) {
        pg_raise(GWR_ERR_INVALID_ARG, "array has too many dims");
        PyBuffer_Release(&view);
        goto out;
    }
    {
        int64_t dims[GWR_MAX_RANK];
        for (int i = 0; i < view.ndim; i++) dims[i] = view.shape[i];
        gwr_buffer *b = gwr_buffer_new_copy(view.buf, (size_t)view.len);
        if (!b) {
            pg_raise(GWR_ERR_NOMEM, gwr_last_errmsg());
            PyBuffer_Release(&view);
            goto out;
        }
        gwr_weights w = {dtype, view.ndim, dims, gwr_buffer_data(b), (size_t)view.len, b, NULL};
        st = gwr_layer_set_tensor(l, name, &w);
        gwr_buffer_release(b);
        if (st) pg_raise_net(st, gwr_layer_network(l));
    }
    PyBuffer_Release(&view);
out:
    Py_XDECREF(dt);
    Py_DECREF(arr);
    return st;
}

static PyObject *Layer_set_attr(pg_layer_obj *self, PyObject *args) {
    const char *name;
    PyObject *v;
    if (!PyArg_ParseTuple(args, "sO:set_attr", &name, &v)) return NULL;
    LAYER_OR_NULL(self);
    gwr_status s;
    if (PyBool_Check(v) || PyLong_Check(v)) {
        long long x = PyLong_AsLongLong(v);
        if (x == -1 && PyErr_Occurred()) return NULL;
        s = gwr_layer_set_int(l, name, x);
    } else if (PyFloat_Check(v)) {
        s = gwr_layer_set_float(l, name, (float)PyFloat_AS_DOUBLE(v));
    } else if (PyUnicode_Check(v)) {
        const char *x = PyUnicode_AsUTF8(v);
        if (!x) return NULL;
        s = gwr_layer_set_string(l, name, x);
    } else if (PyBytes_Check(v)) {
        s = gwr_layer_set_bytes(l, name, PyBytes_AS_STRING(v), (size_t)PyBytes_GET_SIZE(v));
    } else if (PyList_Check(v) || PyTuple_Check(v)) {
        PyObject *seq = PySequence_Fast(v, "");
        if (!seq) return NULL;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        int ints = 1, strs = n > 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *x = PySequence_Fast_GET_ITEM(seq, i);
            if (!PyLong_Check(x)) ints = 0;
            if (!PyUnicode_Check(x)) strs = 0;
            if (!PyLong_Check(x) && !PyFloat_Check(x) && !PyUnicode_Check(x)) {
                Py_DECREF(seq);
                PyErr_Format(PyExc_TypeError, "set_attr('%s'): list items must be int, float or str, got %R", name, x);
                return NULL;
            }
        }
        void *buf = PyMem_Malloc((size_t)(n ? n : 1) * (strs ? sizeof(char *) : sizeof(int64_t)));
        if (!buf) {
            Py_DECREF(seq);
            return PyErr_NoMemory();
        }
        s = GWR_OK;
        for (Py_ssize_t i = 0; i < n && !PyErr_Occurred(); i++) {
            PyObject *x = PySequence_Fast_GET_ITEM(seq, i);
            if (strs)
                ((const char **)buf)[i] = PyUnicode_AsUTF8(x);
            else if (ints)
                ((int64_t *)buf)[i] = PyLong_AsLongLong(x);
            else if (PyUnicode_Check(x))
                PyErr_Format(PyExc_TypeError, "set_attr('%s'): a list mixes str and numbers", name);
            else
                ((float *)buf)[i] = (float)PyFloat_AsDouble(x);
        }
        if (!PyErr_Occurred())
            s = strs ? gwr_layer_set_strings(l, name, (const char *const *)buf, n)
                : ints ? gwr_layer_set_ints(l, name, buf, n)
                       : gwr_layer_set_floats(l, name, buf, n);
        PyMem_Free(buf);
        Py_DECREF(seq);
        if (PyErr_Occurred()) return NULL;
    } else if (PyObject_CheckBuffer(v)) {
        if (set_tensor_attr(l, name, v)) return NULL;
        Py_RETURN_NONE;
    } else {
        PyErr_Format(PyExc_TypeError,
                     "set_attr('%s'): expected int, float, str, bytes, a list of them, or a numpy array; got %.100s",
                     name, Py_TYPE(v)->tp_name);
        return NULL;
    }
    if (s) return pg_raise_net(s, gwr_layer_network(l));
    Py_RETURN_NONE;
}

static PyObject *Layer_remove_attr(pg_layer_obj *self, PyObject *arg) {
    LAYER_OR_NULL(self);
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name) return NULL;
    gwr_status s = gwr_layer_remove_attr(l, name);
    if (s) return pg_raise_net(s, gwr_layer_network(l));
    Py_RETURN_NONE;
}

/* The seed's `layer.as_layer().plugin.plugin_namespace / plugin_type`:
 * for PLUGIN-class layers a namespace object with the domain, the op and
 * the fields (attributes); None for other layers. */
static PyObject *Layer_get_plugin(pg_layer_obj *self, void *c) {
    LAYER_OR_NULL(self);
    if (gwr_layer_type_of(l) != GWR_LAYER_PLUGIN) Py_RETURN_NONE;
    PyObject *types = PyImport_ImportModule("types");
    if (!types) return NULL;
    PyObject *fields = Layer_get_attrs(self, c);
    PyObject *r = NULL;
    if (fields) {
        PyObject *kw = Py_BuildValue("{s:s,s:s,s:O}", "plugin_namespace", gwr_layer_domain(l), "plugin_type",
                                     gwr_layer_op(l), "fields", fields);
        PyObject *ns = kw ? PyObject_GetAttrString(types, "SimpleNamespace") : NULL;
        PyObject *noargs = ns ? PyTuple_New(0) : NULL;
        if (noargs) r = PyObject_Call(ns, noargs, kw);
        Py_XDECREF(noargs);
        Py_XDECREF(ns);
        Py_XDECREF(kw);
        Py_DECREF(fields);
    }
    Py_DECREF(types);
    return r;
}

static PyMethodDef Layer_methods[] = {
    {"get_inputs", Layer_get_inputs, METH_VARARGS,
     "get_inputs(*idx) -> list of Tensor\n\nThe inputs at the given indices (negative ones count from the end), or\n"
     "all inputs; None for an absent optional input. `a, b = layer.get_inputs(0, 1)`."},
    {"get_outputs", Layer_get_outputs, METH_VARARGS,
     "get_outputs(*idx) -> list of Tensor\n\nThe outputs at the given indices, or all. `o = layer.get_outputs(0)[0]`."},
    {"set_input", (PyCFunction)Layer_set_input, METH_VARARGS,
     "set_input(i, tensor)\n\nMakes input slot i read tensor (None: absent). Refuses a cycle (CycleError)."},
    {"mark_as_removed", (PyCFunction)Layer_mark_as_removed, METH_NOARGS,
     "mark_as_removed()\n\nMarks the layer removed: managers skip it, prune() drops it. Redirect its\n"
     "outputs' users first (Tensor.replace_all_uses_with)."},
    {"as_layer", Layer_as_layer, METH_NOARGS, "as_layer() -> Layer\n\nThe layer itself (the seed text's spelling)."},
    {"get_attr", (PyCFunction)Layer_get_attr, METH_VARARGS,
     "get_attr(name[, default])\n\nOne attribute's value (see attrs); NotFoundError, or default, when absent."},
    {"set_attr", (PyCFunction)Layer_set_attr, METH_VARARGS,
     "set_attr(name, value)\n\nSets an attribute: int/bool -> INT, float -> FLOAT, str -> STRING, bytes,\n"
     "a list of ints/floats/strs -> INTS/FLOATS/STRINGS, a numpy array -> TENSOR (copied)."},
    {"remove_attr", (PyCFunction)Layer_remove_attr, METH_O, "remove_attr(name)\n\nNotFoundError when absent."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Layer_getset[] = {
    {"name", (getter)Layer_get_name, (setter)Layer_set_name, "The layer's name (unique in its network).", NULL},
    {"type", (getter)Layer_get_type, NULL, "The TensorRT-style class, a gwr.LayerType.", NULL},
    {"op", (getter)Layer_get_op, NULL, "The exact op: ONNX's op_type (\"Add\"), or a plugin's type.", NULL},
    {"domain", (getter)Layer_get_domain, NULL,
     "The op's domain: \"\" for ONNX's, \"gwr\" for gwr's plugins (a plugin's namespace).", NULL},
    {"ew_op", (getter)Layer_get_ew_op, NULL,
     "For ELEMENTWISE layers, the gwr.ElementWiseOperation (SUM for Add, ...); else None.", NULL},
    {"network", (getter)Layer_get_network, NULL, "The Network the layer belongs to.", NULL},
    {"num_inputs", (getter)Layer_get_num_inputs, NULL, "Input slots, absent optional ones included.", NULL},
    {"num_outputs", (getter)Layer_get_num_outputs, NULL, "Outputs.", NULL},
    {"attrs", (getter)Layer_get_attrs, NULL,
     "The attributes, a new dict name -> value: int, float, str (bytes when not UTF-8), lists of\n"
     "them, numpy arrays for tensor attributes, {'subgraph': name, 'num_layers': n} for graphs.",
     NULL},
    {"is_removed", (getter)Layer_get_is_removed, NULL, "True once marked as removed (or pruned).", NULL},
    {"is_alive", (getter)Layer_get_is_alive, NULL,
     "False once the layer was pruned or its network closed; never raises.", NULL},
    {"doc", (getter)Layer_get_doc, NULL, "The layer's doc string (\"\" when none).", NULL},
    {"plugin", (getter)Layer_get_plugin, NULL,
     "For PLUGIN-class layers, an object with plugin_namespace (the domain, \"gwr\" for gwr's),\n"
     "plugin_type (the op, \"GPTAttention\") and fields (the attributes); None for other layers.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject pg_Layer_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gwr.Layer",
    .tp_basicsize = sizeof(pg_layer_obj),
    .tp_dealloc = (destructor)Layer_dealloc,
    .tp_repr = (reprfunc)Layer_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A layer of a network (TensorRT's ILayer): an op with input and output tensors and\n"
              "attributes. Layers are made by builders (gwr.functional, Tensor operators) and by\n"
              "loading, never directly. There is one Layer object per layer; it dies (LifetimeError)\n"
              "when prune() drops the layer or the network is closed.",
    .tp_methods = Layer_methods,
    .tp_getset = Layer_getset,
};

/* ---- Tensor ------------------------------------------------------------------------- */

static void Tensor_dealloc(pg_tensor_obj *self) {
    if (self->t) map_del(&self->owner->objs, self->t);
    PyMem_Free(self->name);
    Py_XDECREF(self->owner);
    PyObject_Free(self);
}

#define TENSOR_OR_NULL(self)                         \
    gwr_tensor *t = pg_tensor_get((PyObject *)(self)); \
    if (!t) return NULL

/* gwr.Tensor(name, dtype, shape, network=None): a new graph input. */
static PyObject *Tensor_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    (void)type;
    static char *kwlist[] = {"name", "dtype", "shape", "network", NULL};
    const char *name;
    PyObject *dt, *shape = Py_None, *netobj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sO|OO:Tensor", kwlist, &name, &dt, &shape, &netobj)) return NULL;
    if (netobj == Py_None) netobj = pg_current_network();
    if (!netobj)
        return pg_raise(GWR_ERR_STATE, "Tensor(...) makes a network input: give network= or use "
                                       "`with gwr.net_guard(net):`");
    PyObject *a = Py_BuildValue("(sOO)", name, dt, shape);
    if (!a) return NULL;
    PyObject *r = Network_add_input((pg_network *)netobj, a, NULL);
    Py_DECREF(a);
    return r;
}

static PyObject *Tensor_repr(pg_tensor_obj *self) {
    if (!self->t) return PyUnicode_FromFormat("<gwr.Tensor (dead: %s)>", why_dead(self->dead));
    char ty[512];
    gwr_tensor_type_str(self->t, ty, sizeof ty);
    return PyUnicode_FromFormat("<gwr.Tensor '%s' %s>", gwr_tensor_name(self->t), ty);
}

static PyObject *Tensor_get_name(pg_tensor_obj *self, void *c) {
    (void)c;
    TENSOR_OR_NULL(self);
    return PyUnicode_FromString(gwr_tensor_name(t));
}

static int Tensor_set_name(pg_tensor_obj *self, PyObject *v, void *c) {
    (void)c;
    gwr_tensor *t = pg_tensor_get((PyObject *)self);
    if (!t) return -1;
    const char *s = v ? PyUnicode_AsUTF8(v) : NULL;
    if (!s) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "name must be a str");
        return -1;
    }
    gwr_status st = gwr_tensor_set_name(t, s);
    if (st) return pg_raise_net(st, gwr_tensor_network(t)), -1;
    return 0;
}

static PyObject *Tensor_get_dtype(pg_tensor_obj *self, void *c) {
    (void)c;
    TENSOR_OR_NULL(self);
    return pg_dtype_to_py(gwr_tensor_dtype(t));
}

static PyObject *Tensor_get_shape(pg_tensor_obj *self, void *c) {
    (void)c;
    TENSOR_OR_NULL(self);
    int r = gwr_tensor_rank(t);
    if (r < 0) Py_RETURN_NONE;
    PyObject *tu = PyTuple_New(r);
    if (!tu) return NULL;
    gwr_network *net = gwr_tensor_network(t);
    for (int i = 0; i < r; i++) {
        gwr_dim d = gwr_tensor_dim(t, i);
        PyObject *x;
        if (GWR_DIM_IS_KNOWN(d)) {
            x = PyLong_FromLongLong(d);
        } else if (GWR_DIM_IS_SYM(d) && gwr_network_dim_name(net, d)) {
            x = PyUnicode_FromString(gwr_network_dim_name(net, d));
        } else {
            x = Py_NewRef(Py_None);
        }
        if (!x) {
            Py_DECREF(tu);
            return NULL;
        }
        PyTuple_SET_ITEM(tu, i, x);
    }
    return tu;
}

static PyObject *Tensor_get_rank(pg_tensor_obj *self, void *c) {
    (void)c;
    TENSOR_OR_NULL(self);
    int r = gwr_tensor_rank(t);
    if (r < 0) Py_RETURN_NONE;
    return PyLong_FromLong(r);
}

static PyObject *Tensor_get_network(pg_tensor_obj *self, void *c) {
    (void)c;
    TENSOR_OR_NULL(self);
    (void)t;
    return Py_NewRef(self->owner);
}

static PyObject *Tensor_get_is_input(pg_tensor_obj *self, void *c) {
    (void)c;
    TENSOR_OR_NULL(self);
    return PyBool_FromLong(gwr_tensor_is_input(t));
}

static PyObject *Tensor_get_is_output(pg_tensor_obj *self, void *c) {
    (void)c;
    TENSOR_OR_NULL(self);
    return PyBool_FromLong(gwr_tensor_output_index(t) >= 0);
}

static PyObject *Tensor_get_is_alive(pg_tensor_obj *self, void *c) {
    (void)c;
    return PyBool_FromLong(self->t != NULL);
}

static PyObject *Tensor_get_parent(pg_tensor_obj *self, PyObject *noargs) {
    (void)noargs;
    TENSOR_OR_NULL(self);
    return pg_layer_wrap(gwr_tensor_parent(t));
}

static PyObject *Tensor_get_users(pg_tensor_obj *self, PyObject *noargs) {
    (void)noargs;
    TENSOR_OR_NULL(self);
    int64_t n = gwr_tensor_num_users(t);
    PyObject *r = PyList_New(0);
    if (!r) return NULL;
    gwr_network *net = gwr_tensor_network(t);
    for (int64_t i = 0; i < n; i++) {
        gwr_layer *u = gwr_tensor_user(t, i, NULL);
        /* Live users of this network (a subgraph's reader is not walkable). */
        if (!u || gwr_layer_is_removed(u) || gwr_layer_network(u) != net) continue;
        int seen = 0; /* a layer reading t twice is one user */
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(r) && !seen; k++)
            seen = ((pg_layer_obj *)PyList_GET_ITEM(r, k))->l == u;
        if (seen) continue;
        PyObject *lo = pg_layer_wrap(u);
        if (!lo || PyList_Append(r, lo) < 0) {
            Py_XDECREF(lo);
            Py_DECREF(r);
            return NULL;
        }
        Py_DECREF(lo);
    }
    return r;
}

static PyObject *Tensor_replace_all_uses_with(pg_tensor_obj *self, PyObject *arg) {
    TENSOR_OR_NULL(self);
    gwr_tensor *n = pg_tensor_get(arg);
    if (!n) return NULL;
    gwr_status s = gwr_tensor_replace_all_uses_with(t, n);
    if (s) return pg_raise_net(s, gwr_tensor_network(t));
    Py_RETURN_NONE;
}

static PyObject *Tensor_replace_all_uses_except(pg_tensor_obj *self, PyObject *args) {
    PyObject *no, *lo;
    if (!PyArg_ParseTuple(args, "OO:replace_all_uses_except", &no, &lo)) return NULL;
    TENSOR_OR_NULL(self);
    gwr_tensor *n = pg_tensor_get(no);
    if (!n) return NULL;
    gwr_layer *ex = pg_layer_get(lo);
    if (!ex) return NULL;
    gwr_status s = gwr_tensor_replace_all_uses_except(t, n, ex);
    if (s) return pg_raise_net(s, gwr_tensor_network(t));
    Py_RETURN_NONE;
}

/* IEEE half and bfloat16 from a float, rounded to nearest even. */
static uint16_t f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, e = (x >> 23) & 0xffu, m = x & 0x7fffffu;
    if (e == 0xff) return (uint16_t)(sign | 0x7c00u | (m ? 0x200u : 0));
    int ex = (int)e - 127 + 15;
    if (ex >= 31) return (uint16_t)(sign | 0x7c00u);
    if (ex <= 0) {
        if (ex < -10) return (uint16_t)sign;
        m |= 0x800000u;
        unsigned shift = (unsigned)(14 - ex);
        uint32_t h = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)ex << 10) | (m >> 13), rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
    return (uint16_t)(sign | h);
}
static uint16_t f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* A Python number as a rank-0 constant of dtype (the other operand's). */
static gwr_tensor *scalar_constant(gwr_network *net, gwr_dtype dtype, PyObject *v) {
    union {
        float f;
        double d;
        int64_t i64;
        int32_t i32;
        int16_t i16;
        int8_t i8;
        uint8_t u8;
        uint16_t u16;
        uint32_t u32;
        uint64_t u64;
    } u;
    int is_int = PyLong_Check(v) || PyBool_Check(v);
    double d = PyFloat_AsDouble(v);
    if (d == -1.0 && PyErr_Occurred()) return NULL;
    long long i = 0;
    if (is_int) {
        i = PyLong_AsLongLong(v);
        if (i == -1 && PyErr_Occurred()) return NULL;
    } else if (gwr_dtype_is_int(dtype) || dtype == GWR_BOOL) {
        if (d != floor(d) || !isfinite(d)) {
            pg_raisef(GWR_ERR_TYPE, "the scalar %g is not an integer; the other operand is %s", d, gwr_dtype_name(dtype));
            return NULL;
        }
        i = (long long)d;
    }
    switch (dtype) {
    case GWR_FLOAT32: u.f = (float)d; break;
    case GWR_FLOAT64: u.d = d; break;
    case GWR_FLOAT16: u.u16 = f32_to_f16((float)d); break;
    case GWR_BFLOAT16: u.u16 = f32_to_bf16((float)d); break;
    case GWR_INT64: u.i64 = i; break;
    case GWR_INT32: u.i32 = (int32_t)i; break;
    case GWR_INT16: u.i16 = (int16_t)i; break;
    case GWR_INT8: u.i8 = (int8_t)i; break;
    case GWR_UINT8: u.u8 = (uint8_t)i; break;
    case GWR_UINT16: u.u16 = (uint16_t)i; break;
    case GWR_UINT32: u.u32 = (uint32_t)i; break;
    case GWR_UINT64: u.u64 = (uint64_t)i; break;
    default:
        pg_raisef(GWR_ERR_TYPE, "a Python number cannot be combined with a %s tensor", gwr_dtype_name(dtype));
        return NULL;
    }
    gwr_tensor *c = gwr_constant(net, dtype, 0, NULL, &u);
    if (!c) pg_raise_net(GWR_ERR_INVALID_ARG, net);
    return c;
}

static int is_number(PyObject *o) {
    return !pg_is_tensor(o) && (PyLong_Check(o) || PyFloat_Check(o) || PyIndex_Check(o) ||
                                (Py_TYPE(o)->tp_as_number && Py_TYPE(o)->tp_as_number->nb_float));
}

typedef gwr_tensor *(*binary_fn)(gwr_network *, gwr_tensor *, gwr_tensor *);

/* a OP b with a Tensor on at least one side; a number on the other side
 * becomes a constant of the tensor's dtype. */
static PyObject *tensor_binary(PyObject *a, PyObject *b, binary_fn fn, const char *sym) {
    gwr_tensor *ta = NULL, *tb = NULL;
    if (pg_is_tensor(a) && !(ta = pg_tensor_get(a))) return NULL;
    if (pg_is_tensor(b) && !(tb = pg_tensor_get(b))) return NULL;
    if ((!ta && !is_number(a)) || (!tb && !is_number(b))) Py_RETURN_NOTIMPLEMENTED;
    gwr_network *net = gwr_tensor_network(ta ? ta : tb);
    if (ta && tb && gwr_tensor_network(tb) != net)
        return pg_raisef(GWR_ERR_INVALID_ARG, "'%s' %s '%s': the tensors belong to different networks",
                         gwr_tensor_name(ta), sym, gwr_tensor_name(tb));
    if (!ta && !(ta = scalar_constant(net, gwr_tensor_dtype(tb), a))) return NULL;
    if (!tb && !(tb = scalar_constant(net, gwr_tensor_dtype(ta), b))) return NULL;
    gwr_tensor *r = fn(net, ta, tb);
    if (!r) return pg_raise_net(GWR_ERR_SHAPE, net);
    return pg_tensor_wrap(r);
}

static PyObject *Tensor_add(PyObject *a, PyObject *b) { return tensor_binary(a, b, gwr_add, "+"); }
static PyObject *Tensor_sub(PyObject *a, PyObject *b) { return tensor_binary(a, b, gwr_sub, "-"); }
static PyObject *Tensor_mul(PyObject *a, PyObject *b) { return tensor_binary(a, b, gwr_mul, "*"); }
static PyObject *Tensor_div(PyObject *a, PyObject *b) { return tensor_binary(a, b, gwr_div, "/"); }
static PyObject *Tensor_matmul(PyObject *a, PyObject *b) {
    if (!pg_is_tensor(a) || !pg_is_tensor(b)) Py_RETURN_NOTIMPLEMENTED;
    return tensor_binary(a, b, gwr_matmul, "@");
}
static PyObject *Tensor_pow(PyObject *a, PyObject *b, PyObject *mod) {
    if (mod != Py_None) Py_RETURN_NOTIMPLEMENTED;
    return tensor_binary(a, b, gwr_pow, "**");
}

static PyObject *tensor_unary(PyObject *a, gwr_tensor *(*fn)(gwr_network *, gwr_tensor *)) {
    gwr_tensor *t = pg_tensor_get(a);
    if (!t) return NULL;
    gwr_network *net = gwr_tensor_network(t);
    gwr_tensor *r = fn(net, t);
    if (!r) return pg_raise_net(GWR_ERR_TYPE, net);
    return pg_tensor_wrap(r);
}
static PyObject *Tensor_neg(PyObject *a) { return tensor_unary(a, gwr_neg); }
static PyObject *Tensor_abs(PyObject *a) { return tensor_unary(a, gwr_abs); }

/* A Tensor's truth value is ambiguous (as numpy's arrays): refuse it, so
 * that `if t:` in a pattern is not silently true. */
static int Tensor_bool(PyObject *a) {
    (void)a;
    PyErr_SetString(PyExc_TypeError, "the truth value of a gwr.Tensor is undefined; compare with `is None`");
    return -1;
}

static PyNumberMethods Tensor_as_number = {
    .nb_add = Tensor_add,
    .nb_subtract = Tensor_sub,
    .nb_multiply = Tensor_mul,
    .nb_true_divide = Tensor_div,
    .nb_power = Tensor_pow,
    .nb_negative = Tensor_neg,
    .nb_absolute = Tensor_abs,
    .nb_matrix_multiply = Tensor_matmul,
    .nb_bool = Tensor_bool,
};

static PyMethodDef Tensor_methods[] = {
    {"get_parent", (PyCFunction)Tensor_get_parent, METH_NOARGS,
     "get_parent() -> Layer or None\n\nThe layer that produces this tensor; None for a graph input. O(1)."},
    {"get_users", (PyCFunction)Tensor_get_users, METH_NOARGS,
     "get_users() -> list of Layer\n\nThe live layers that read this tensor, each once. O(users)."},
    {"replace_all_uses_with", (PyCFunction)Tensor_replace_all_uses_with, METH_O,
     "replace_all_uses_with(other)\n\nEvery user of this tensor reads other instead. A network output mark\n"
     "moves to other, which takes this tensor's name, so the interface is unchanged. Refuses a\n"
     "change of a known dtype (DtypeError) and a cycle (CycleError); nothing changes then."},
    {"replace_all_uses_except", (PyCFunction)Tensor_replace_all_uses_except, METH_VARARGS,
     "replace_all_uses_except(other, layer)\n\nAs replace_all_uses_with, leaving layer's uses alone (to insert a\n"
     "layer after this tensor: `y = relu(x); x.replace_all_uses_except(y, y.get_parent())`)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Tensor_getset[] = {
    {"name", (getter)Tensor_get_name, (setter)Tensor_set_name, "The tensor's name (unique in its network).", NULL},
    {"dtype", (getter)Tensor_get_dtype, NULL, "The element type, a gwr.DataType (UNDEFINED when unknown).", NULL},
    {"shape", (getter)Tensor_get_shape, NULL,
     "A tuple: an int per known dim, a str per symbolic dim (\"batch\"), None per unknown dim;\n"
     "None when the rank is unknown.",
     NULL},
    {"rank", (getter)Tensor_get_rank, NULL, "The number of dims, None when unknown.", NULL},
    {"network", (getter)Tensor_get_network, NULL, "The Network the tensor belongs to.", NULL},
    {"is_input", (getter)Tensor_get_is_input, NULL, "True for a graph input.", NULL},
    {"is_output", (getter)Tensor_get_is_output, NULL, "True for a network output.", NULL},
    {"is_alive", (getter)Tensor_get_is_alive, NULL,
     "False once the tensor's layer was pruned or its network closed; never raises.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject pg_Tensor_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gwr.Tensor",
    .tp_basicsize = sizeof(pg_tensor_obj),
    .tp_dealloc = (destructor)Tensor_dealloc,
    .tp_repr = (reprfunc)Tensor_repr,
    .tp_as_number = &Tensor_as_number,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Tensor(name, dtype, shape=None, network=None)\n\n"
              "A value flowing between layers. Called directly, it makes a new graph input of\n"
              "`network`, or of the current network (`with gwr.net_guard(net):`), as the seed's\n"
              "`Tensor(name='qkv', dtype=..., shape=(...))` does. Tensors from builders are the\n"
              "outputs of their layers. Operators + - * / ** @, unary - and abs() add layers; a\n"
              "Python number operand becomes a constant of the tensor's dtype. == is identity.",
    .tp_methods = Tensor_methods,
    .tp_getset = Tensor_getset,
    .tp_new = Tensor_new,
};

/* ---- the current network and net_guard ------------------------------------------- */

static PyObject **net_stack;
static Py_ssize_t net_depth, net_cap;

int pg_push_network(PyObject *net) {
    if (network_check(net) < 0) return -1;
    if (net_depth == net_cap) {
        Py_ssize_t cap = net_cap ? net_cap * 2 : 8;
        PyObject **v = PyMem_Realloc(net_stack, (size_t)cap * sizeof *v);
        if (!v) {
            PyErr_NoMemory();
            return -1;
        }
        net_stack = v;
        net_cap = cap;
    }
    net_stack[net_depth++] = Py_NewRef(net);
    return 0;
}

void pg_pop_network(void) {
    if (net_depth > 0) Py_DECREF(net_stack[--net_depth]);
}

PyObject *pg_current_network(void) {
    for (Py_ssize_t i = net_depth - 1; i >= 0; i--)
        if (((pg_network *)net_stack[i])->net) return net_stack[i];
    return NULL;
}

static PyObject *first_tensor_network(PyObject *o, int depth) {
    if (pg_is_tensor(o)) {
        pg_tensor_obj *t = (pg_tensor_obj *)o;
        return t->t ? (PyObject *)t->owner : NULL;
    }
    if (depth > 0 && (PyList_Check(o) || PyTuple_Check(o))) {
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); i++) {
            PyObject *n = first_tensor_network(PySequence_Fast_GET_ITEM(o, i), depth - 1);
            if (n) return n;
        }
    }
    return NULL;
}

PyObject *pg_network_for(PyObject *args, PyObject *kwargs) {
    PyObject *n = NULL;
    if (args && (PyTuple_Check(args) || PyList_Check(args))) n = first_tensor_network(args, 2);
    if (!n && kwargs && PyDict_Check(kwargs)) {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (!n && PyDict_Next(kwargs, &pos, &k, &v)) n = first_tensor_network(v, 1);
    }
    if (!n) n = pg_current_network();
    if (!n) pg_raise(GWR_ERR_STATE, "no network: pass a Tensor or use `with gwr.net_guard(net):`");
    return n;
}

typedef struct {
    PyObject_HEAD
    PyObject *net;
    int entered;
} pg_guard;

static PyObject *Guard_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *net;
    static char *kwlist[] = {"network", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O:net_guard", kwlist, &net)) return NULL;
    if (network_check(net) < 0) return NULL;
    pg_guard *g = (pg_guard *)type->tp_alloc(type, 0);
    if (!g) return NULL;
    g->net = Py_NewRef(net);
    return (PyObject *)g;
}

static void Guard_dealloc(pg_guard *g) {
    Py_XDECREF(g->net);
    Py_TYPE(g)->tp_free((PyObject *)g);
}

static PyObject *Guard_enter(pg_guard *g, PyObject *noargs) {
    (void)noargs;
    if (g->entered) return pg_raise(GWR_ERR_STATE, "net_guard: this guard is already entered");
    if (pg_push_network(g->net) < 0) return NULL;
    g->entered = 1;
    return Py_NewRef(g->net);
}

static PyObject *Guard_exit(pg_guard *g, PyObject *args) {
    (void)args;
    if (g->entered) {
        /* Pop this guard's entry even if an inner one was left unbalanced. */
        for (Py_ssize_t i = net_depth - 1; i >= 0; i--)
            if (net_stack[i] == g->net) {
                PyObject *o = net_stack[i];
                memmove(net_stack + i, net_stack + i + 1, (size_t)(net_depth - i - 1) * sizeof *net_stack);
                net_depth--;
                Py_DECREF(o);
                break;
            }
        g->entered = 0;
    }
    Py_RETURN_FALSE;
}

static PyMethodDef Guard_methods[] = {
    {"__enter__", (PyCFunction)Guard_enter, METH_NOARGS, "Makes the network current; returns it."},
    {"__exit__", (PyCFunction)Guard_exit, METH_VARARGS, "Restores the previous current network."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject pg_Guard_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gwr.net_guard",
    .tp_basicsize = sizeof(pg_guard),
    .tp_dealloc = (destructor)Guard_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "net_guard(network)\n\n"
              "`with gwr.net_guard(net):` makes net the current network: the one gwr.Tensor(...),\n"
              "builders without Tensor arguments (constants) and FLayerInfoMemo.instance().get(name)\n"
              "use. Nestable. A running pattern manager makes its network current too. The\n"
              "current network is process-wide (not per thread), like the seed's.",
    .tp_methods = Guard_methods,
    .tp_new = Guard_new,
};

static PyObject *py_current_network(PyObject *self, PyObject *noargs) {
    (void)self;
    (void)noargs;
    PyObject *n = pg_current_network();
    return Py_NewRef(n ? n : Py_None);
}

/* ---- argument lists ------------------------------------------------------------------ */

static int set_arg(gwr_args *a, const char *k, PyObject *v) {
    gwr_status s;
    if (v == Py_None) {
        s = gwr_args_set_none(a, k);
    } else if (pg_is_tensor(v)) {
        gwr_tensor *t = pg_tensor_get(v);
        if (!t) return -1;
        s = gwr_args_set_tensor(a, k, t);
    } else if (PyBool_Check(v) || PyLong_Check(v) || (PyIndex_Check(v) && !PyFloat_Check(v))) {
        PyObject *i = PyNumber_Index(v);
        if (!i) return -1;
        long long x = PyLong_AsLongLong(i);
        Py_DECREF(i);
        if (x == -1 && PyErr_Occurred()) return -1;
        s = gwr_args_set_int(a, k, x);
    } else if (PyFloat_Check(v) || (Py_TYPE(v)->tp_as_number && Py_TYPE(v)->tp_as_number->nb_float &&
                                    !PyUnicode_Check(v) && !PyList_Check(v) && !PyTuple_Check(v) &&
                                    !PyObject_CheckBuffer(v))) {
        double x = PyFloat_AsDouble(v);
        if (x == -1.0 && PyErr_Occurred()) return -1;
        s = gwr_args_set_float(a, k, x);
    } else if (PyUnicode_Check(v)) {
        const char *x = PyUnicode_AsUTF8(v);
        if (!x) return -1;
        s = gwr_args_set_string(a, k, x);
    } else if (PyList_Check(v) || PyTuple_Check(v)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
        int tensors = n > 0, ints = 1;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *x = PySequence_Fast_GET_ITEM(v, i);
            if (!pg_is_tensor(x)) tensors = 0;
            if (!(PyLong_Check(x) || (PyIndex_Check(x) && !PyFloat_Check(x)))) ints = 0;
            if (!pg_is_tensor(x) && !PyLong_Check(x) && !PyFloat_Check(x) && !PyIndex_Check(x)) {
                PyErr_Format(PyExc_TypeError, "argument '%s': a list must hold Tensors, ints or floats, not %.100s", k,
                             Py_TYPE(x)->tp_name);
                return -1;
            }
        }
        void *buf = PyMem_Malloc((size_t)(n ? n : 1) * 8);
        if (!buf) return PyErr_NoMemory(), -1;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *x = PySequence_Fast_GET_ITEM(v, i);
            if (tensors) {
                if (!(((gwr_tensor **)buf)[i] = pg_tensor_get(x))) break;
            } else if (!pg_is_tensor(x) && ints) {
                ((int64_t *)buf)[i] = PyLong_AsLongLong(x);
            } else if (!pg_is_tensor(x)) {
                ((double *)buf)[i] = PyFloat_AsDouble(x);
            } else {
                PyErr_Format(PyExc_TypeError, "argument '%s': a list mixes Tensors and numbers", k);
            }
            if (PyErr_Occurred()) break;
        }
        if (PyErr_Occurred()) {
            PyMem_Free(buf);
            return -1;
        }
        s = tensors ? gwr_args_set_tensors(a, k, (int)n, buf)
            : ints  ? gwr_args_set_ints(a, k, (int)n, buf)
                    : gwr_args_set_floats(a, k, (int)n, buf);
        PyMem_Free(buf);
    } else {
        PyErr_Format(PyExc_TypeError,
                     "argument '%s': %.100s cannot be passed to gwr (Tensor, None, int, float, str, or a list of "
                     "Tensors, ints or floats)",
                     k, Py_TYPE(v)->tp_name);
        return -1;
    }
    if (s) return pg_raise(s, gwr_args_errmsg(a)), -1;
    return 0;
}

gwr_args *pg_args_from_dict(PyObject *dict) {
    gwr_args *a = gwr_args_new();
    if (!a) return (gwr_args *)pg_raise(GWR_ERR_NOMEM, gwr_last_errmsg());
    if (!dict || dict == Py_None) return a;
    if (!PyDict_Check(dict)) {
        gwr_args_free(a);
        PyErr_Format(PyExc_TypeError, "expected a dict of arguments, got %.100s", Py_TYPE(dict)->tp_name);
        return NULL;
    }
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(dict, &pos, &k, &v)) {
        const char *ks = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : NULL;
        if (!ks) {
            if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "argument names must be str, got %R", k);
            gwr_args_free(a);
            return NULL;
        }
        if (set_arg(a, ks, v) < 0) {
            gwr_args_free(a);
            return NULL;
        }
    }
    return a;
}

PyObject *pg_args_to_dict(const gwr_args *a) {
    PyObject *d = PyDict_New();
    if (!d || !a) return d;
    for (int i = 0, n = gwr_args_count(a); i < n; i++) {
        const char *k = gwr_args_name(a, i);
        PyObject *v = NULL;
        switch (gwr_args_type(a, i)) {
        case GWR_ARG_NONE: v = Py_NewRef(Py_None); break;
        case GWR_ARG_TENSOR: {
            gwr_tensor *t = NULL;
            if (!gwr_args_get_tensor(a, k, &t)) v = pg_tensor_wrap(t);
            break;
        }
        case GWR_ARG_TENSORS: {
            gwr_tensor *const *t;
            int m;
            if (gwr_args_get_tensors(a, k, &t, &m)) break;
            v = PyList_New(m);
            for (int j = 0; v && j < m; j++) {
                PyObject *x = pg_tensor_wrap(t[j]);
                if (!x) {
                    Py_CLEAR(v);
                    break;
                }
                PyList_SET_ITEM(v, j, x);
            }
            break;
        }
        case GWR_ARG_INT: {
            int64_t x;
            if (!gwr_args_get_int(a, k, &x)) v = PyLong_FromLongLong(x);
            break;
        }
        case GWR_ARG_FLOAT: {
            double x;
            if (!gwr_args_get_float(a, k, &x)) v = PyFloat_FromDouble(x);
            break;
        }
        case GWR_ARG_STRING: {
            const char *x;
            if (!gwr_args_get_string(a, k, &x)) v = PyUnicode_FromString(x);
            break;
        }
        case GWR_ARG_INTS: {
            const int64_t *x;
            int m;
            if (gwr_args_get_ints(a, k, &x, &m)) break;
            v = PyList_New(m);
            for (int j = 0; v && j < m; j++) {
                PyObject *y = PyLong_FromLongLong(x[j]);
                if (!y) {
                    Py_CLEAR(v);
                    break;
                }
                PyList_SET_ITEM(v, j, y);
            }
            break;
        }
        case GWR_ARG_FLOATS: {
            const double *x;
            int m;
            if (gwr_args_get_floats(a, k, &x, &m)) break;
            v = PyList_New(m);
            for (int j = 0; v && j < m; j++) {
                PyObject *y = PyFloat_FromDouble(x[j]);
                if (!y) {
                    Py_CLEAR(v);
                    break;
                }
                PyList_SET_ITEM(v, j, y);
            }
            break;
        }
        }
        if (!v) {
            if (!PyErr_Occurred()) pg_raise(GWR_ERR_STATE, gwr_args_errmsg(a));
            Py_DECREF(d);
            return NULL;
        }
        if (PyDict_SetItemString(d, k, v) < 0) {
            Py_DECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(v);
    }
    return d;
}

/* ---- registration ---------------------------------------------------------------------- */

static PyMethodDef core_functions[] = {
    {"current_network", py_current_network, METH_NOARGS,
     "current_network() -> Network or None\n\nThe network of the innermost net_guard (or of the running manager)."},
    {NULL, NULL, 0, NULL},
};

int pg_init_core(PyObject *m) {
    PyTypeObject *types[] = {&pg_Network_Type, &pg_Layer_Type, &pg_Tensor_Type, &pg_Guard_Type};
    const char *names[] = {"Network", "Layer", "Tensor", "net_guard"};
    for (int i = 0; i < 4; i++) {
        if (PyType_Ready(types[i]) < 0 || PyModule_AddObjectRef(m, names[i], (PyObject *)types[i]) < 0) return -1;
    }
    return PyModule_AddFunctions(m, core_functions);
}
