/* network.c - gwr.Network, and the lifetime rules of pygwr.h: one Python
 * object per handle, found through a per-network table, and marked dead
 * when prune drops its layer or the network is closed. Layer, Tensor,
 * net_guard and argument lists are in layer.c, tensor.c, guard.c and
 * args.c. */
#include <stdio.h>
#include <string.h>

#include "objects.h"

/* ---- a pointer table ------------------------------------------------------------ */
static size_t map_hash(const void *p, size_t mask) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    return (size_t)x & mask;
}

PyObject *pg_map_get(const pg_map *m, const void *k) {
    if (!m->cap) return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = map_hash(k, mask);; i = (i + 1) & mask) {
        if (m->v[i].key == k) return m->v[i].val;
        if (!m->v[i].key) return NULL;
    }
}

int pg_map_put(pg_map *m, const void *k, PyObject *val) {
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

void pg_map_del(pg_map *m, const void *k) {
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

void pg_map_free(pg_map *m) {
    PyMem_Free(m->v);
    m->v = NULL;
    m->cap = m->n = 0;
}

/* ---- objects ------------------------------------------------------------------------ */

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
    PyObject *o = pg_map_get(&n->objs, l);
    if (o) {
        pg_map_del(&n->objs, l);
        kill_layer_obj((pg_layer_obj *)o, PG_PRUNED);
    }
    for (int i = 0, k = gwr_layer_num_outputs(l); i < k; i++) {
        gwr_tensor *t = gwr_layer_output(l, i);
        PyObject *to = t ? pg_map_get(&n->objs, t) : NULL;
        if (to) {
            pg_map_del(&n->objs, t);
            kill_tensor_obj((pg_tensor_obj *)to, PG_PRUNED);
        }
    }
}

/* A graph input is about to be freed: its object loses its handle. */
static void ls_input_removed(void *ctx, gwr_tensor *t) {
    pg_network *n = ctx;
    n->generation++;
    PyObject *to = pg_map_get(&n->objs, t);
    if (to) {
        pg_map_del(&n->objs, t);
        kill_tensor_obj((pg_tensor_obj *)to, PG_PRUNED);
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
    ls.input_removed = ls_input_removed;
    ls.ctx = self;
    self->listener = gwr_network_add_listener(net, &ls);
    if (self->listener < 0 || pg_map_put(&networks, net, (PyObject *)self) < 0) {
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
    PyObject *o = net ? pg_map_get(&networks, net) : NULL;
    if (!o) {
        if (net && gwr_network_parent(net))
            pg_raise(GWR_ERR_UNSUPPORTED, "the layers of a subgraph (If/Loop/Scan body) are not walkable from Python");
        else
            PyErr_SetString(pg_LifetimeError, "this network has no Python object (it was closed, or gwr made it for itself)");
        return NULL;
    }
    return (pg_network *)o;
}

int pg_network_check(PyObject *o) {
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
    return pg_network_check(o) < 0 ? NULL : ((pg_network *)o)->net;
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
    pg_map_free(&self->objs);
    pg_map_del(&networks, self->net);
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
    pg_map_free(&self->objs);
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
    if (pg_network_check(self) < 0) return NULL;
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
int pg_dims_from_py(gwr_network *net, PyObject *shape, int *rank, gwr_dim *dims) {
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
    if (pg_dims_from_py(net, shape, &rank, dims) < 0) return NULL;
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
    if (pg_network_check((PyObject *)self) < 0) return -1;
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
    PyObject *o = pg_map_get(&n->objs, l);
    if (o) return Py_NewRef(o);
    pg_layer_obj *lo = PyObject_New(pg_layer_obj, &pg_Layer_Type);
    if (!lo) return NULL;
    lo->owner = (pg_network *)Py_NewRef(n);
    lo->l = l;
    lo->dead = PG_ALIVE;
    lo->name = NULL;
    if (pg_map_put(&n->objs, l, (PyObject *)lo) < 0) {
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
    PyObject *o = pg_map_get(&n->objs, t);
    if (o) return Py_NewRef(o);
    pg_tensor_obj *to = PyObject_New(pg_tensor_obj, &pg_Tensor_Type);
    if (!to) return NULL;
    to->owner = (pg_network *)Py_NewRef(n);
    to->t = t;
    to->dead = PG_ALIVE;
    to->name = NULL;
    if (pg_map_put(&n->objs, t, (PyObject *)to) < 0) {
        to->t = NULL;
        Py_DECREF(to);
        return NULL;
    }
    return (PyObject *)to;
}

/* One list builder for both handle kinds. */
static PyObject *handle_list(void *const *h, Py_ssize_t n, PyObject *(*wrap)(void *)) {
    PyObject *l = PyList_New(n);
    for (Py_ssize_t i = 0; l && i < n; i++) {
        PyObject *o = wrap(h[i]);
        if (!o) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, i, o);
    }
    return l;
}
static PyObject *wrap_tensor(void *t) { return pg_tensor_wrap(t); }
static PyObject *wrap_layer(void *l) { return pg_layer_wrap(l); }

PyObject *pg_tensor_list(gwr_tensor *const *ts, Py_ssize_t n) { return handle_list((void *const *)ts, n, wrap_tensor); }
PyObject *pg_layer_list(gwr_layer *const *ls, Py_ssize_t n) { return handle_list((void *const *)ls, n, wrap_layer); }

int pg_is_layer(PyObject *o) { return PyObject_TypeCheck(o, &pg_Layer_Type); }
int pg_is_tensor(PyObject *o) { return PyObject_TypeCheck(o, &pg_Tensor_Type); }

const char *pg_why_dead(int dead) {
    return dead == PG_CLOSED ? "its network was closed" : "its layer was pruned from the network";
}

gwr_layer *pg_layer_get(PyObject *o) {
    if (!pg_is_layer(o)) {
        PyErr_Format(PyExc_TypeError, "expected a gwr.Layer, got %.100s", Py_TYPE(o)->tp_name);
        return NULL;
    }
    pg_layer_obj *lo = (pg_layer_obj *)o;
    if (!lo->l) {
        PyErr_Format(pg_LifetimeError, "layer '%s' is gone: %s", lo->name ? lo->name : "?", pg_why_dead(lo->dead));
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
        PyErr_Format(pg_LifetimeError, "tensor '%s' is gone: %s", to->name ? to->name : "?", pg_why_dead(to->dead));
        return NULL;
    }
    return to->t;
}

PyObject *pg_layer_network_obj(PyObject *layer) { return (PyObject *)((pg_layer_obj *)layer)->owner; }
PyObject *pg_tensor_network_obj(PyObject *tensor) { return (PyObject *)((pg_tensor_obj *)tensor)->owner; }

/* ---- registration ---------------------------------------------------------------------- */

int pg_init_core(PyObject *m) {
    PyTypeObject *types[] = {&pg_Network_Type, &pg_Layer_Type, &pg_Tensor_Type, &pg_Guard_Type};
    const char *names[] = {"Network", "Layer", "Tensor", "net_guard"};
    for (int i = 0; i < 4; i++) {
        if (PyType_Ready(types[i]) < 0 || PyModule_AddObjectRef(m, names[i], (PyObject *)types[i]) < 0) return -1;
    }
    return pg_init_guard(m);
}
