/* tensor.c - gwr.Tensor: a value between layers, its users and parent, and the
 * operators that build layers from it. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "objects.h"

/* ---- Tensor ------------------------------------------------------------------------- */

static void Tensor_dealloc(pg_tensor_obj *self) {
    if (self->t) pg_map_del(&self->owner->objs, self->t);
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
    return PyObject_CallMethod(netobj, "add_input", "sOO", name, dt, shape);
}

static PyObject *Tensor_repr(pg_tensor_obj *self) {
    if (!self->t) return PyUnicode_FromFormat("<gwr.Tensor (dead: %s)>", pg_why_dead(self->dead));
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
    return pg_tensor_shape(t);
}

PyObject *pg_tensor_shape(gwr_tensor *t) {
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

/* A Python number as a rank-0 constant of dtype (the other operand's). */
static gwr_tensor *scalar_constant(gwr_network *net, gwr_dtype dtype, PyObject *v) {
    int is_int = PyLong_Check(v) || PyBool_Check(v);
    double d = PyFloat_AsDouble(v);
    if (d == -1.0 && PyErr_Occurred()) return NULL;
    gwr_tensor *c = NULL;
    if (dtype == GWR_FLOAT32 || dtype == GWR_FLOAT64 || dtype == GWR_FLOAT16 || dtype == GWR_BFLOAT16) {
        /* The executor's conversion (float16 and bfloat16 rounded to nearest
         * even), through a rank-0 value. */
        gwr_value *x = gwr_value_new(dtype, 0, NULL);
        if (!x) return (gwr_tensor *)pg_raise(GWR_ERR_NOMEM, gwr_last_errmsg());
        gwr_value_set_f64(x, 0, d);
        c = gwr_constant(net, dtype, 0, NULL, gwr_value_cdata(x));
        gwr_value_release(x);
    } else {
        /* Integers exactly (an int64 past 2^53 would not survive a double),
         * wrapping as C's conversions do. */
        long long i;
        if (is_int) {
            i = PyLong_AsLongLong(v);
            if (i == -1 && PyErr_Occurred()) return NULL;
        } else if (d != floor(d) || !isfinite(d)) {
            if (gwr_dtype_is_int(dtype) || dtype == GWR_BOOL)
                pg_raisef(GWR_ERR_TYPE, "the scalar %g is not an integer; the other operand is %s", d,
                          gwr_dtype_name(dtype));
            else
                pg_raisef(GWR_ERR_TYPE, "a Python number cannot be combined with a %s tensor", gwr_dtype_name(dtype));
            return NULL;
        } else {
            i = (long long)d;
        }
        union {
            int64_t i64;
            int32_t i32;
            int16_t i16;
            int8_t i8;
            uint8_t u8;
            uint16_t u16;
            uint32_t u32;
            uint64_t u64;
        } u;
        switch (dtype) {
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
        c = gwr_constant(net, dtype, 0, NULL, &u);
    }
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

