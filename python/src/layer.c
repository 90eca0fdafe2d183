/* layer.c - gwr.Layer: a layer of a network, its inputs, outputs and attributes. */
#include <stdio.h>
#include <string.h>

#include "objects.h"

/* ---- Layer ---------------------------------------------------------------------------- */

static void Layer_dealloc(pg_layer_obj *self) {
    if (self->l) pg_map_del(&self->owner->objs, self->l);
    PyMem_Free(self->name);
    Py_XDECREF(self->owner);
    PyObject_Free(self);
}

/* Keeps the layer's name for messages after it dies. */
#define LAYER_OR_NULL(self)                       \
    gwr_layer *l = pg_layer_get((PyObject *)(self)); \
    if (!l) return NULL

static PyObject *Layer_repr(pg_layer_obj *self) {
    if (!self->l) return PyUnicode_FromFormat("<gwr.Layer (dead: %s)>", pg_why_dead(self->dead));
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
static PyObject *Layer_get_provenance(pg_layer_obj *self, void *c) {
    (void)c;
    LAYER_OR_NULL(self);
    const char *p = gwr_layer_provenance(l);
    if (!p) Py_RETURN_NONE;
    return PyUnicode_FromString(p);
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
    return pg_layer_attrs(l);
}

PyObject *pg_layer_attrs(gwr_layer *l) {
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
    {"provenance", (getter)Layer_get_provenance, NULL,
     "The rule that made the layer and the layers it replaced, as the JSON text of\n"
     "gwr_layer_provenance (docs/design.md, \"Provenance\"); None for a layer no recorded\n"
     "rewrite made (record with optimize(..., provenance=True) or rewrite(..., provenance=True)).",
     NULL},
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

