/* module.c - gwr._gwr: the module, its exceptions and its enums.
 *
 * The parts of the module (network.c, patterns.c, functional.c, session.c)
 * each add their types through pg_init_<part>. The exceptions and enums are
 * made here, once, and kept in statics: the module is single-phase and
 * process-wide, like the C library's registries. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "pygwr.h"

/* ---- exceptions ------------------------------------------------------------ */

PyObject *pg_Error;
PyObject *pg_LifetimeError;
/* Indexed by gwr_status; [GWR_OK] is gwr.Error itself. */
#define PG_NSTATUS (GWR_ERR_STATE + 1)
static PyObject *status_class[PG_NSTATUS];

static const struct {
    gwr_status status;
    const char *name;
    PyObject **base; /* a Python builtin it also derives from, or NULL */
    const char *doc;
} error_table[] = {
    {GWR_ERR_INVALID_ARG, "InvalidArgumentError", &PyExc_ValueError,
     "A NULL handle, a bad index or a malformed argument (GWR_ERR_INVALID_ARG)."},
    {GWR_ERR_NOT_FOUND, "NotFoundError", &PyExc_LookupError,
     "No such name, attribute or entry (GWR_ERR_NOT_FOUND)."},
    {GWR_ERR_TYPE, "DtypeError", &PyExc_TypeError,
     "A wrong element type or attribute type (GWR_ERR_TYPE)."},
    {GWR_ERR_SHAPE, "ShapeError", &PyExc_ValueError, "Shapes that do not fit the op (GWR_ERR_SHAPE)."},
    {GWR_ERR_DUPLICATE, "DuplicateError", &PyExc_ValueError,
     "A name or label that is already taken (GWR_ERR_DUPLICATE)."},
    {GWR_ERR_CYCLE, "CycleError", NULL, "The change would create, or the graph has, a cycle (GWR_ERR_CYCLE)."},
    {GWR_ERR_INVALID_GRAPH, "InvalidGraphError", NULL,
     "Network.verify() found a broken invariant (GWR_ERR_INVALID_GRAPH)."},
    {GWR_ERR_NOMEM, "OutOfMemoryError", &PyExc_MemoryError, "An allocation failed (GWR_ERR_NOMEM)."},
    {GWR_ERR_IO, "FileError", &PyExc_OSError, "A file or stream error (GWR_ERR_IO)."},
    {GWR_ERR_PARSE, "ParseError", &PyExc_ValueError, "Malformed input data (GWR_ERR_PARSE)."},
    {GWR_ERR_UNSUPPORTED, "UnsupportedError", &PyExc_NotImplementedError,
     "A valid request that gwr does not implement (GWR_ERR_UNSUPPORTED)."},
    {GWR_ERR_NOT_CONVERGED, "NotConvergedError", &PyExc_RuntimeError,
     "A rewrite limit was hit: the patterns did not reach a fixpoint (GWR_ERR_NOT_CONVERGED)."},
    {GWR_ERR_STATE, "StateError", &PyExc_RuntimeError,
     "The call is not allowed in the object's current state (GWR_ERR_STATE)."},
};

PyObject *pg_error_class(gwr_status s) {
    if ((int)s > 0 && (int)s < PG_NSTATUS && status_class[s]) return status_class[s];
    return pg_Error;
}

/* Raises cls(msg) with .status and .message set. */
static PyObject *raise_with(PyObject *cls, const char *status, const char *msg) {
    PyObject *text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace");
    if (!text) return NULL;
    PyObject *exc = PyObject_CallOneArg(cls, text);
    if (exc) {
        PyObject *st = PyUnicode_FromString(status);
        if (!st || PyObject_SetAttrString(exc, "status", st) < 0 ||
            PyObject_SetAttrString(exc, "message", text) < 0) {
            Py_XDECREF(st);
            Py_DECREF(exc);
            Py_DECREF(text);
            return NULL;
        }
        Py_DECREF(st);
        PyErr_SetObject(cls, exc);
        Py_DECREF(exc);
    }
    Py_DECREF(text);
    return NULL;
}

PyObject *pg_raise(gwr_status s, const char *msg) {
    if (!msg || !*msg) msg = gwr_status_name(s);
    return raise_with(pg_error_class(s), gwr_status_name(s), msg);
}

PyObject *pg_raisef(gwr_status s, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return pg_raise(s, buf);
}

PyObject *pg_raise_net(gwr_status s, gwr_network *net) {
    const char *msg = net ? gwr_network_errmsg(net) : "";
    if (!msg || !*msg) msg = gwr_last_errmsg();
    return pg_raise(s, msg);
}

int pg_init_errors(PyObject *m) {
    pg_Error = PyErr_NewExceptionWithDoc(
        "gwr.Error",
        "Base class of every error gwr raises. .status is the C library's status name\n"
        "(\"GWR_ERR_SHAPE\"), .message its one-line message (also str(e)).",
        NULL, NULL);
    if (!pg_Error || PyModule_AddObjectRef(m, "Error", pg_Error) < 0) return -1;
    if (PyObject_SetAttrString(pg_Error, "status", Py_None) < 0 ||
        PyObject_SetAttrString(pg_Error, "message", Py_None) < 0)
        return -1;
    status_class[GWR_OK] = pg_Error;
    for (size_t i = 0; i < sizeof error_table / sizeof error_table[0]; i++) {
        char qual[96];
        snprintf(qual, sizeof qual, "gwr.%s", error_table[i].name);
        PyObject *bases = error_table[i].base ? PyTuple_Pack(2, pg_Error, *error_table[i].base)
                                              : PyTuple_Pack(1, pg_Error);
        if (!bases) return -1;
        PyObject *cls = PyErr_NewExceptionWithDoc(qual, error_table[i].doc, bases, NULL);
        Py_DECREF(bases);
        if (!cls || PyModule_AddObjectRef(m, error_table[i].name, cls) < 0) return -1;
        /* The class carries its status too, so `raise gwr.ShapeError(...)`
         * from Python code (a plugin's infer) says which failure it is. */
        PyObject *st = PyUnicode_FromString(gwr_status_name(error_table[i].status));
        if (!st || PyObject_SetAttrString(cls, "status", st) < 0) {
            Py_XDECREF(st);
            return -1;
        }
        Py_DECREF(st);
        status_class[error_table[i].status] = cls;
    }
    PyObject *bases = PyTuple_Pack(2, pg_Error, PyExc_ReferenceError);
    if (!bases) return -1;
    pg_LifetimeError = PyErr_NewExceptionWithDoc(
        "gwr.LifetimeError",
        "A Layer or Tensor used after its network was closed or its layer pruned,\n"
        "or a Network used after close().",
        bases, NULL);
    Py_DECREF(bases);
    if (!pg_LifetimeError || PyModule_AddObjectRef(m, "LifetimeError", pg_LifetimeError) < 0) return -1;
    return 0;
}

/* ---- enums ----------------------------------------------------------------- */

/* The members of each enum, indexed by value (tuples kept for the
 * process's life). */
static PyObject *dtype_members, *layer_type_members, *ew_op_members;
static PyObject *numpy_mod;

/* Makes enum.IntEnum(name, [(member, value), ...]) in module gwr and a
 * tuple of its members by value 0..n-1. */
static PyObject *make_enum(PyObject *m, const char *name, const char *doc, int n,
                           const char *(*member)(int), PyObject **members) {
    PyObject *enum_mod = PyImport_ImportModule("enum");
    if (!enum_mod) return NULL;
    PyObject *pairs = PyList_New(0);
    PyObject *cls = NULL;
    if (!pairs) goto out;
    for (int i = 0; i < n; i++) {
        const char *mn = member(i);
        if (!mn) continue;
        PyObject *p = Py_BuildValue("(si)", mn, i);
        if (!p || PyList_Append(pairs, p) < 0) {
            Py_XDECREF(p);
            goto out;
        }
        Py_DECREF(p);
    }
    cls = PyObject_CallMethod(enum_mod, "IntEnum", "sO", name, pairs);
    if (!cls) goto out;
    {
        PyObject *mod = PyUnicode_FromString("gwr");
        PyObject *d = PyUnicode_FromString(doc);
        if (!mod || !d || PyObject_SetAttrString(cls, "__module__", mod) < 0 ||
            PyObject_SetAttrString(cls, "__doc__", d) < 0) {
            Py_XDECREF(mod);
            Py_XDECREF(d);
            Py_CLEAR(cls);
            goto out;
        }
        Py_DECREF(mod);
        Py_DECREF(d);
    }
    *members = PyTuple_New(n);
    if (!*members) {
        Py_CLEAR(cls);
        goto out;
    }
    for (int i = 0; i < n; i++) {
        PyObject *v = NULL;
        if (member(i)) v = PyObject_CallFunction(cls, "i", i);
        if (!v && PyErr_Occurred()) {
            Py_CLEAR(cls);
            goto out;
        }
        if (!v) v = Py_NewRef(Py_None);
        PyTuple_SET_ITEM(*members, i, v);
    }
    if (PyModule_AddObjectRef(m, name, cls) < 0) Py_CLEAR(cls);
out:
    Py_XDECREF(pairs);
    Py_DECREF(enum_mod);
    return cls;
}

/* Member names: DataType uses the upper-case NumPy-style name (FLOAT32),
 * with UNDEFINED for 0. */
static char dtype_names[GWR_DTYPE_COUNT][24];
static const char *dtype_member(int i) {
    if (!gwr_dtype_is_valid((gwr_dtype)i) && i != GWR_UNDEFINED) return NULL;
    const char *n = gwr_dtype_name((gwr_dtype)i);
    size_t k = 0;
    for (; n[k] && k + 1 < sizeof dtype_names[i]; k++)
        dtype_names[i][k] = (char)((n[k] >= 'a' && n[k] <= 'z') ? n[k] - 32 : n[k]);
    dtype_names[i][k] = 0;
    return dtype_names[i];
}
static const char *layer_type_member(int i) { return gwr_layer_type_name((gwr_layer_type)i); }
static const char *ew_member(int i) { return gwr_ew_op_name((gwr_ew_op)i); }

PyObject *pg_dtype_to_py(gwr_dtype t) {
    if ((int)t < 0 || (int)t >= GWR_DTYPE_COUNT) t = GWR_UNDEFINED;
    return Py_NewRef(PyTuple_GET_ITEM(dtype_members, t));
}

PyObject *pg_layer_type_to_py(gwr_layer_type t) {
    if ((int)t < 0 || (int)t >= GWR_LAYER_TYPE_COUNT) return PyLong_FromLong((long)t);
    return Py_NewRef(PyTuple_GET_ITEM(layer_type_members, t));
}

PyObject *pg_ew_op_to_py(gwr_ew_op op) {
    if (op == GWR_EW_NONE || (int)op < 0 || (int)op >= GWR_EW_OP_COUNT) Py_RETURN_NONE;
    return Py_NewRef(PyTuple_GET_ITEM(ew_op_members, op));
}

int pg_dtype_from_py(PyObject *o, gwr_dtype *out) {
    if (PyLong_Check(o)) { /* DataType members are ints */
        long v = PyLong_AsLong(o);
        if (v == -1 && PyErr_Occurred()) return -1;
        if (v < 0 || v >= GWR_DTYPE_COUNT || !gwr_dtype_is_valid((gwr_dtype)v)) {
            PyErr_Format(PyExc_ValueError, "%ld is not a gwr dtype (ONNX TensorProto.DataType)", v);
            return -1;
        }
        *out = (gwr_dtype)v;
        return 0;
    }
    PyObject *name = NULL;
    if (PyUnicode_Check(o)) {
        name = Py_NewRef(o);
    } else {
        /* numpy.dtype(o).name: np.float32, np.dtype("f4"), an array's dtype. */
        if (!numpy_mod && !(numpy_mod = PyImport_ImportModule("numpy"))) return -1;
        PyObject *dt = PyObject_CallMethod(numpy_mod, "dtype", "(O)", o);
        if (!dt) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "expected a dtype (gwr.DataType, str or numpy dtype), got %R", o);
            return -1;
        }
        name = PyObject_GetAttrString(dt, "name");
        Py_DECREF(dt);
        if (!name) return -1;
    }
    const char *s = PyUnicode_AsUTF8(name);
    if (!s) {
        Py_DECREF(name);
        return -1;
    }
    gwr_dtype t = gwr_dtype_from_name(s);
    if (t == GWR_UNDEFINED && strcmp(s, "undefined") != 0) {
        PyErr_Format(PyExc_ValueError, "unknown dtype '%s'", s);
        Py_DECREF(name);
        return -1;
    }
    Py_DECREF(name);
    *out = t;
    return 0;
}

int pg_layer_type_from_py(PyObject *o, gwr_layer_type *out) {
    if (PyLong_Check(o)) {
        long v = PyLong_AsLong(o);
        if (v == -1 && PyErr_Occurred()) return -1;
        if (v < 0 || v >= GWR_LAYER_TYPE_COUNT) {
            PyErr_Format(PyExc_ValueError, "%ld is not a gwr.LayerType", v);
            return -1;
        }
        *out = (gwr_layer_type)v;
        return 0;
    }
    if (PyUnicode_Check(o)) {
        const char *s = PyUnicode_AsUTF8(o);
        if (!s) return -1;
        for (int i = 0; i < GWR_LAYER_TYPE_COUNT; i++)
            if (strcmp(s, gwr_layer_type_name((gwr_layer_type)i)) == 0) {
                *out = (gwr_layer_type)i;
                return 0;
            }
        PyErr_Format(PyExc_ValueError, "'%s' is not a gwr.LayerType name", s);
        return -1;
    }
    PyErr_Format(PyExc_TypeError, "expected a gwr.LayerType, got %R", o);
    return -1;
}

static int init_enums(PyObject *m) {
    if (!make_enum(m, "DataType",
                   "Element types, numbered as ONNX's TensorProto.DataType (FLOAT32 = 1, FLOAT16 = 10, ...).",
                   GWR_DTYPE_COUNT, dtype_member, &dtype_members))
        return -1;
    if (!make_enum(m, "LayerType",
                   "TensorRT-style layer classes (ELEMENTWISE, ACTIVATION, MATRIX_MULTIPLY, PLUGIN, ...):\n"
                   "Layer.type, and the root_layer sets of patterns.",
                   GWR_LAYER_TYPE_COUNT, layer_type_member, &layer_type_members))
        return -1;
    if (!make_enum(m, "ElementWiseOperation",
                   "TensorRT's ElementWiseOperation (SUM, SUB, PROD, ...): Layer.ew_op of ELEMENTWISE layers.",
                   GWR_EW_OP_COUNT, ew_member, &ew_op_members))
        return -1;
    return 0;
}

/* ---- the module -------------------------------------------------------------- */

static PyObject *py_version(PyObject *self, PyObject *noargs) {
    (void)self;
    (void)noargs;
    return PyUnicode_FromString(gwr_version());
}

static PyMethodDef module_methods[] = {
    {"version", py_version, METH_NOARGS, "version() -> str: the version of the C library linked in."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "gwr._gwr",
    "The C extension of gwr: networks, layers, tensors, patterns and sessions.\n"
    "Import `gwr`, not this module.",
    -1, module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__gwr(void); /* the one symbol the module exports */
PyMODINIT_FUNC PyInit__gwr(void) {
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    /* Each part adds its types and functions (pygwr.h lists them). */
    if (pg_init_errors(m) < 0 || init_enums(m) < 0 || pg_init_core(m) < 0 || pg_init_patterns(m) < 0 ||
        pg_init_functional(m) < 0 || pg_init_session(m) < 0 || pg_init_analysis(m) < 0 ||
        pg_init_rules(m) < 0 || pg_init_quant(m) < 0 || pg_init_generate(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddStringConstant(m, "__version__", GWR_VERSION_STRING) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
