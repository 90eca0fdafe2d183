/* session.c - gwr.Session (the reference executor from Python), numpy
 * conversion of values, and gwr.onnx's load/save.
 *
 * This file owns numpy's C API table (pygwr_np.h): pg_init_session calls
 * import_array. */
#include "pygwr.h"
#include "pygwr_np.h"

#include <stdlib.h>
#include <string.h>

/* ---- dtypes ------------------------------------------------------------------ */

/* The numpy type number of a gwr dtype that numpy holds as is; -1 if none. */
static int np_type_of(gwr_dtype t) {
    switch (t) {
    case GWR_FLOAT32: return NPY_FLOAT32;
    case GWR_FLOAT64: return NPY_FLOAT64;
    case GWR_FLOAT16: return NPY_FLOAT16;
    case GWR_UINT8: return NPY_UINT8;
    case GWR_INT8: return NPY_INT8;
    case GWR_UINT16: return NPY_UINT16;
    case GWR_INT16: return NPY_INT16;
    case GWR_INT32: return NPY_INT32;
    case GWR_INT64: return NPY_INT64;
    case GWR_UINT32: return NPY_UINT32;
    case GWR_UINT64: return NPY_UINT64;
    case GWR_BOOL: return NPY_BOOL;
    case GWR_COMPLEX64: return NPY_COMPLEX64;
    case GWR_COMPLEX128: return NPY_COMPLEX128;
    default: return -1;
    }
}

/* Types numpy has no dtype for, carried as float64 numbers both ways:
 * bfloat16, the float8 / float4 types and the 4 and 2-bit integers. */
static int via_float(gwr_dtype t) {
    return t == GWR_BFLOAT16 || t == GWR_FLOAT8E4M3FN || t == GWR_FLOAT8E4M3FNUZ || t == GWR_FLOAT8E5M2 ||
           t == GWR_FLOAT8E5M2FNUZ || t == GWR_UINT4 || t == GWR_INT4 || t == GWR_FLOAT4E2M1 || t == GWR_FLOAT8E8M0 ||
           t == GWR_UINT2 || t == GWR_INT2;
}

/* ---- numpy -> gwr_value ------------------------------------------------------ */

/* The last reference of a wrapped array can go from any thread (a value
 * released by an executor thread): take the GIL. */
static void release_array(void *ctx, const void *data, size_t size) {
    (void)data, (void)size;
    PyGILState_STATE g = PyGILState_Ensure();
    Py_DECREF((PyObject *)ctx);
    PyGILState_Release(g);
}

static int dims_of(PyArrayObject *a, int64_t *dims) {
    int rank = PyArray_NDIM(a);
    if (rank > GWR_MAX_RANK) {
        PyErr_Format(PyExc_ValueError, "rank %d is more than gwr's %d", rank, GWR_MAX_RANK);
        return -1;
    }
    for (int i = 0; i < rank; i++) dims[i] = (int64_t)PyArray_DIM(a, i);
    return rank;
}

/* A value over arr's bytes (C-contiguous, aligned, native, of dtype dt);
 * the value keeps arr alive. */
static gwr_value *value_over_array(PyArrayObject *arr, gwr_dtype dt) {
    int64_t dims[GWR_MAX_RANK];
    int rank = dims_of(arr, dims);
    if (rank < 0) return NULL;
    size_t nbytes = (size_t)PyArray_NBYTES(arr);
    Py_INCREF(arr);
    gwr_buffer *b = gwr_buffer_wrap(PyArray_DATA(arr), nbytes, release_array, arr);
    if (!b) {
        Py_DECREF(arr);
        pg_raise(GWR_ERR_NOMEM, gwr_last_errmsg());
        return NULL;
    }
    gwr_weights w = {.dtype = dt, .rank = rank, .dims = dims, .data = PyArray_DATA(arr), .nbytes = nbytes, .buffer = b};
    gwr_value *v = gwr_value_from_weights(&w);
    gwr_buffer_release(b); /* v holds its own reference */
    if (!v) pg_raise(GWR_ERR_NOMEM, gwr_last_errmsg());
    return v;
}

static gwr_value *strings_value(PyObject *obj, const char *name) {
    PyArrayObject *a = (PyArrayObject *)PyArray_FROM_OTF(obj, NPY_OBJECT, NPY_ARRAY_CARRAY_RO);
    if (!a) return NULL;
    int64_t dims[GWR_MAX_RANK];
    int rank = dims_of(a, dims);
    gwr_value *v = rank < 0 ? NULL : gwr_value_new(GWR_STRING, rank, dims);
    if (rank >= 0 && !v) pg_raise(GWR_ERR_NOMEM, gwr_last_errmsg());
    PyObject **items = (PyObject **)PyArray_DATA(a);
    for (npy_intp i = 0; v && i < PyArray_SIZE(a); i++) {
        const char *p;
        Py_ssize_t len;
        if (PyUnicode_Check(items[i])) {
            p = PyUnicode_AsUTF8AndSize(items[i], &len);
        } else if (PyBytes_Check(items[i])) {
            p = PyBytes_AS_STRING(items[i]), len = PyBytes_GET_SIZE(items[i]);
        } else {
            PyErr_Format(PyExc_TypeError, "Session.run: input '%s' is a string tensor; element %zd is a %.100s", name,
                         (Py_ssize_t)i, Py_TYPE(items[i])->tp_name);
            p = NULL;
        }
        gwr_status s = p ? gwr_value_set_string(v, i, p, (size_t)len) : GWR_ERR_INVALID_ARG;
        if (s) {
            if (!PyErr_Occurred()) pg_raise(s, gwr_last_errmsg());
            gwr_value_release(v);
            v = NULL;
        }
    }
    Py_DECREF(a);
    return v;
}

/* bfloat16 / float8 inputs: numbers rounded by gwr_value_set_f64. */
static gwr_value *float_coded_value(PyObject *obj, const char *name, gwr_dtype want) {
    PyArrayObject *a = (PyArrayObject *)PyArray_FROM_O(obj);
    if (!a) return NULL;
    if (!PyArray_ISNUMBER(a) && !PyArray_ISBOOL(a)) {
        PyErr_Format(pg_error_class(GWR_ERR_TYPE), "Session.run: input '%s' is %s; got a numpy %c array", name,
                     gwr_dtype_name(want), PyArray_DESCR(a)->kind);
        Py_DECREF(a);
        return NULL;
    }
    PyArrayObject *f = (PyArrayObject *)PyArray_FROM_OTF((PyObject *)a, NPY_FLOAT64, NPY_ARRAY_CARRAY_RO | NPY_ARRAY_FORCECAST);
    Py_DECREF(a);
    if (!f) return NULL;
    int64_t dims[GWR_MAX_RANK];
    int rank = dims_of(f, dims);
    gwr_value *v = rank < 0 ? NULL : gwr_value_new(want, rank, dims);
    if (rank >= 0 && !v) pg_raise(GWR_ERR_NOMEM, gwr_last_errmsg());
    const double *d = PyArray_DATA(f);
    for (npy_intp i = 0; v && i < PyArray_SIZE(f); i++) gwr_value_set_f64(v, i, d[i]);
    Py_DECREF(f);
    return v;
}

/* The value of feed `name` for an input of dtype want: the array's own
 * bytes when they fit as they are, else a converted copy. An ndarray must
 * cast safely (float64 into a float32 input is refused); Python lists and
 * scalars may cast within their kind (a list of floats for float32). */
static gwr_value *value_from_py(PyObject *obj, const char *name, gwr_dtype want) {
    if (want == GWR_STRING) return strings_value(obj, name);
    if (via_float(want)) return float_coded_value(obj, name, want);
    int tn = np_type_of(want);
    if (tn < 0) {
        pg_raisef(GWR_ERR_UNSUPPORTED, "Session.run: input '%s' has dtype %s, which numpy cannot give", name,
                  gwr_dtype_name(want));
        return NULL;
    }
    PyArrayObject *a;
    int is_array = PyArray_Check(obj);
    if (is_array) {
        a = (PyArrayObject *)obj;
        Py_INCREF(a);
    } else if (!(a = (PyArrayObject *)PyArray_FROM_O(obj))) {
        return NULL;
    }
    PyArray_Descr *to = PyArray_DescrFromType(tn);
    gwr_value *v = NULL;
    if (!to) goto done;
    if (PyArray_EquivTypes(PyArray_DESCR(a), to) && PyArray_ISCARRAY_RO(a)) {
        v = value_over_array(a, want); /* zero-copy */
        goto done;
    }
    int ok = is_array ? PyArray_CanCastTypeTo(PyArray_DESCR(a), to, NPY_SAFE_CASTING)
                      : PyArray_CanCastArrayTo(a, to, NPY_SAME_KIND_CASTING);
    if (!ok) {
        PyObject *got = PyObject_Str((PyObject *)PyArray_DESCR(a));
        if (got)
            PyErr_Format(pg_error_class(GWR_ERR_TYPE), "Session.run: input '%s' is %s; %s data cannot be cast to it safely",
                         name, gwr_dtype_name(want), PyUnicode_AsUTF8(got));
        Py_XDECREF(got);
        goto done;
    }
    Py_INCREF(to); /* PyArray_FromArray steals it */
    PyArrayObject *c = (PyArrayObject *)PyArray_FromArray(a, to, NPY_ARRAY_CARRAY_RO | NPY_ARRAY_FORCECAST);
    if (c) {
        v = value_over_array(c, want);
        Py_DECREF(c);
    }
done:
    Py_XDECREF(to);
    Py_DECREF(a);
    return v;
}

/* ---- gwr_value -> numpy ------------------------------------------------------ */

static void capsule_release(PyObject *cap) {
    gwr_value_release(PyCapsule_GetPointer(cap, "gwr.value"));
}

/* A numpy array of v (its reference is taken over). Numeric values are
 * read-only views of the executor's bytes, kept alive by a capsule base:
 * those bytes may be the network's constants (an output that is a
 * Reshape of a constant) or another output's, so writing is refused. */
static PyObject *array_from_value(gwr_value *v, const char *name) {
    if (gwr_value_get_kind(v) != GWR_VALUE_TENSOR) {
        /* a sequence: a list of arrays; an optional: None or its element */
        int64_t n = gwr_value_length(v);
        PyObject *r;
        if (gwr_value_get_kind(v) == GWR_VALUE_OPTIONAL) {
            if (n) {
                r = array_from_value(gwr_value_retain(gwr_value_element(v, 0)), name);
            } else {
                Py_INCREF(Py_None);
                r = Py_None;
            }
        } else {
            r = PyList_New((Py_ssize_t)n);
            for (int64_t i = 0; r && i < n; i++) {
                PyObject *a = array_from_value(gwr_value_retain(gwr_value_element(v, i)), name);
                if (!a) Py_CLEAR(r);
                else PyList_SET_ITEM(r, (Py_ssize_t)i, a);
            }
        }
        gwr_value_release(v);
        return r;
    }
    gwr_dtype dt = gwr_value_dtype(v);
    int rank = gwr_value_rank(v);
    npy_intp dims[GWR_MAX_RANK];
    for (int i = 0; i < rank; i++) dims[i] = (npy_intp)gwr_value_dims(v)[i];
    int tn = np_type_of(dt);
    PyObject *arr = NULL;
    if (tn >= 0) {
        PyArray_Descr *d = PyArray_DescrFromType(tn);
        void *data = gwr_value_numel(v) ? gwr_value_data(v) : NULL;
        /* NULL data (no element) makes numpy allocate its own (empty) block */
        arr = d ? PyArray_NewFromDescr(&PyArray_Type, d, rank, dims, NULL, data, data ? NPY_ARRAY_C_CONTIGUOUS : 0, NULL)
                : NULL;
        if (!arr || !data) {
            gwr_value_release(v);
            return arr;
        }
        PyObject *cap = PyCapsule_New(v, "gwr.value", capsule_release);
        if (!cap) {
            gwr_value_release(v);
            Py_DECREF(arr);
            return NULL;
        }
        if (PyArray_SetBaseObject((PyArrayObject *)arr, cap) < 0) { /* steals cap, even on failure */
            Py_DECREF(arr);
            return NULL;
        }
        return arr;
    }
    if (via_float(dt)) {
        /* no numpy dtype: float32 numbers (exact for bfloat16 and float8) */
        arr = PyArray_SimpleNew(rank, dims, NPY_FLOAT32);
        if (arr) {
            float *o = PyArray_DATA((PyArrayObject *)arr);
            for (int64_t i = 0; i < gwr_value_numel(v); i++) o[i] = (float)gwr_value_get_f64(v, i);
        }
    } else if (dt == GWR_STRING) {
        /* an object array of str (bytes where they are not UTF-8) */
        arr = PyArray_SimpleNew(rank, dims, NPY_OBJECT);
        const gwr_bytes *b = gwr_value_cdata(v);
        PyObject **o = arr ? PyArray_DATA((PyArrayObject *)arr) : NULL;
        for (int64_t i = 0; arr && i < gwr_value_numel(v); i++) {
            PyObject *s = PyUnicode_DecodeUTF8(b[i].data ? b[i].data : "", (Py_ssize_t)b[i].len, "strict");
            if (!s) {
                PyErr_Clear();
                s = PyBytes_FromStringAndSize(b[i].data ? b[i].data : "", (Py_ssize_t)b[i].len);
            }
            if (!s) {
                Py_CLEAR(arr);
                break;
            }
            Py_XSETREF(o[i], s);
        }
    } else {
        pg_raisef(GWR_ERR_UNSUPPORTED, "Session.run: output '%s' has dtype %s, which numpy cannot hold", name,
                  gwr_dtype_name(dt));
    }
    gwr_value_release(v);
    return arr;
}

/* ---- Session ------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    PyObject *net;       /* the Network object (strong) */
    gwr_session *s;
    int on_user_net;     /* planned the caller's network as written (raw, or optimization fell back) */
    uint64_t generation; /* of the network when planned */
    int running;         /* a run is under way (with the GIL released) */
    PyObject *input_names, *output_names; /* tuples of str */
    gwr_dtype *in_dtypes;
} Session;

static void session_dealloc(Session *self) {
    gwr_session_free(self->s);
    PyMem_Free(self->in_dtypes);
    Py_XDECREF(self->input_names);
    Py_XDECREF(self->output_names);
    Py_XDECREF(self->net);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *tensor_names(gwr_network *net, int outputs) {
    int n = outputs ? gwr_network_num_outputs(net) : gwr_network_num_inputs(net);
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++) {
        gwr_tensor *x = outputs ? gwr_network_output(net, i) : gwr_network_input(net, i);
        PyObject *s = PyUnicode_FromString(gwr_tensor_name(x));
        if (!s) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, s);
    }
    return t;
}

/* Session(bind={"batch": 2, ...}) as gwr_dim_binding entries: *out gets
 * a PyMem array of n entries whose names point into the dict's keys (alive
 * while the dict is); -1 with an exception set on a bad dict. */
static int bindings_of(PyObject *bind, gwr_dim_binding **out, int *n) {
    *out = NULL, *n = 0;
    if (bind == Py_None) return 0;
    if (!PyDict_Check(bind)) {
        PyErr_Format(PyExc_TypeError, "Session: bind must be a dict {symbol: int}, not %.100s", Py_TYPE(bind)->tp_name);
        return -1;
    }
    Py_ssize_t len = PyDict_Size(bind), pos = 0;
    gwr_dim_binding *b = PyMem_Calloc(len ? (size_t)len : 1, sizeof *b);
    if (!b) return PyErr_NoMemory(), -1;
    PyObject *key, *val;
    int i = 0;
    while (PyDict_Next(bind, &pos, &key, &val)) {
        const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
        long long v = PyLong_Check(val) && !PyBool_Check(val) ? PyLong_AsLongLong(val) : -1;
        if (!name || !PyLong_Check(val) || PyBool_Check(val) || (v == -1 && PyErr_Occurred()) || v < 0) {
            if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_OverflowError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_ValueError, "Session: bind maps a symbol (str) to an extent (int from 0 to 2^63-1), "
                             "not %R: %R", key, val);
            }
            PyMem_Free(b);
            return -1;
        }
        b[i].name = name, b[i].value = (int64_t)v;
        i++;
    }
    *out = b, *n = i;
    return 0;
}

/* Whether some input of net has the symbolic dim `name` (a bound symbol no
 * input has is a typo, not a no-op). */
static int input_has_symbol(gwr_network *net, const char *name) {
    for (int i = 0; i < gwr_network_num_inputs(net); i++) {
        gwr_tensor *t = gwr_network_input(net, i);
        for (int d = 0; d < gwr_tensor_rank(t); d++) {
            const char *sym = gwr_network_dim_name(net, gwr_tensor_dim(t, d));
            if (sym && !strcmp(sym, name)) return 1;
        }
    }
    return 0;
}

static int session_init(Session *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"network", "threads", "optimize", "profile", "bind", NULL};
    PyObject *netobj, *bind = Py_None;
    int threads = 1, profile = 0;
    const char *mode = "default";
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|ispO:Session", kw, &netobj, &threads, &mode, &profile, &bind))
        return -1;
    if (self->s) {
        PyErr_SetString(PyExc_RuntimeError, "Session.__init__: already initialized");
        return -1;
    }
    gwr_session_options opt = {.threads = threads};
    if (!strcmp(mode, "default") || !strcmp(mode, "optimize"))
        opt.optimize = GWR_SESSION_OPTIMIZE;
    else if (!strcmp(mode, "basic"))
        opt.optimize = GWR_SESSION_BASIC;
    else if (!strcmp(mode, "raw"))
        opt.optimize = GWR_SESSION_RAW;
    else {
        PyErr_Format(PyExc_ValueError, "Session: optimize must be \"default\", \"basic\" or \"raw\", not \"%s\"", mode);
        return -1;
    }
    if (threads < 0) {
        PyErr_SetString(PyExc_ValueError, "Session: threads must be >= 0");
        return -1;
    }
    gwr_network *net = pg_network_get(netobj);
    if (!net) return -1;
    gwr_dim_binding *bindings;
    if (bindings_of(bind, &bindings, &opt.nbind)) return -1;
    for (int i = 0; i < opt.nbind; i++)
        if (!input_has_symbol(net, bindings[i].name)) {
            PyErr_Format(PyExc_ValueError, "Session: bind names '%s', a symbol no input of the network has", bindings[i].name);
            PyMem_Free(bindings);
            return -1;
        }
    opt.bind = bindings;
    int64_t asked = gwr_clock_ns();
    gwr_session *s = gwr_session_new(net, &opt);
    PyMem_Free(bindings);
    if (!s) {
        gwr_status st = gwr_last_status(); /* an op without a kernel, no memory, ... */
        pg_raise(st != GWR_OK ? st : GWR_ERR_INVALID_ARG, gwr_last_errmsg());
        return -1;
    }
    gwr_status pst = profile ? gwr_session_profile(s, 1) : GWR_OK;
    if (!pst && profile) pst = gwr_session_profile_optimize(s, asked);
    if (pst) {
        pg_raise(pst, gwr_session_errmsg(s));
        gwr_session_free(s);
        return -1;
    }
    gwr_network *pn = gwr_session_network(s);
    int nin = gwr_network_num_inputs(pn);
    self->in_dtypes = PyMem_Calloc(nin ? (size_t)nin : 1, sizeof *self->in_dtypes);
    self->input_names = tensor_names(pn, 0);
    self->output_names = tensor_names(pn, 1);
    if (!self->in_dtypes || !self->input_names || !self->output_names) {
        gwr_session_free(s);
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < nin; i++) self->in_dtypes[i] = gwr_tensor_dtype(gwr_network_input(pn, i));
    self->s = s;
    self->on_user_net = pn == net;
    self->generation = pg_network_generation(netobj);
    Py_INCREF(netobj);
    self->net = netobj;
    return 0;
}

static gwr_session *session_get(Session *self) {
    if (!self->s) {
        pg_raise(GWR_ERR_STATE, "Session: not initialized");
        return NULL;
    }
    return self->s;
}

static PyObject *session_run(Session *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"feeds", "outputs", NULL};
    PyObject *feeds, *outputs = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:run", kw, &feeds, &outputs)) return NULL;
    gwr_session *s = session_get(self);
    if (!s) return NULL;
    if (!PyDict_Check(feeds)) return PyErr_Format(PyExc_TypeError, "Session.run: feeds must be a dict name -> array");
    if (self->running) return pg_raise(GWR_ERR_STATE, "Session.run: the session is running in another thread");
    /* The planned network must still be there and, when it is the user's
     * own, unchanged: the plan points into it. */
    if (!pg_network_get(self->net)) return NULL;
    if (self->on_user_net && pg_network_generation(self->net) != self->generation)
        return pg_raise(GWR_ERR_STATE, "Session.run: the network changed since the session planned it; make a new Session");

    Py_ssize_t nin = PyDict_Size(feeds);
    PyObject *onames = outputs == Py_None ? Py_NewRef(self->output_names) : PySequence_Tuple(outputs);
    if (!onames) return NULL;
    Py_ssize_t nout = PyTuple_GET_SIZE(onames);
    const char **in_names = PyMem_Calloc((size_t)nin + 1, sizeof *in_names);
    gwr_value **in_values = PyMem_Calloc((size_t)nin + 1, sizeof *in_values);
    const char **out_names = PyMem_Calloc((size_t)nout + 1, sizeof *out_names);
    gwr_value **out_values = PyMem_Calloc((size_t)nout + 1, sizeof *out_values);
    PyObject *keys = PyDict_Keys(feeds); /* holds the names while the GIL is released */
    PyObject *result = NULL;
    Py_ssize_t got = 0;
    if (!in_names || !in_values || !out_names || !out_values || !keys) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < nout; i++) {
        PyObject *o = PyTuple_GET_ITEM(onames, i);
        if (!PyUnicode_Check(o)) {
            PyErr_Format(PyExc_TypeError, "Session.run: output names must be str, not %.100s", Py_TYPE(o)->tp_name);
            goto done;
        }
        if (!(out_names[i] = PyUnicode_AsUTF8(o))) goto done;
    }
    for (Py_ssize_t i = 0; i < nin; i++) {
        PyObject *k = PyList_GET_ITEM(keys, i);
        if (!PyUnicode_Check(k)) {
            PyErr_Format(PyExc_TypeError, "Session.run: input names must be str, not %.100s", Py_TYPE(k)->tp_name);
            goto done;
        }
        const char *name = PyUnicode_AsUTF8(k);
        if (!name) goto done;
        Py_ssize_t j = 0, n = PyTuple_GET_SIZE(self->input_names);
        while (j < n && strcmp(PyUnicode_AsUTF8(PyTuple_GET_ITEM(self->input_names, j)), name)) j++;
        if (j == n) {
            pg_raisef(GWR_ERR_INVALID_ARG, "Session.run: the network has no input '%s'", name);
            goto done;
        }
        in_names[i] = name;
        PyObject *val = PyDict_GetItemWithError(feeds, k); /* borrowed; the dict may have changed meanwhile */
        if (!val) {
            if (!PyErr_Occurred()) PyErr_Format(PyExc_KeyError, "Session.run: feed '%s' vanished", name);
            goto done;
        }
        Py_INCREF(val);
        in_values[i] = value_from_py(val, name, self->in_dtypes[j]);
        Py_DECREF(val);
        if (!in_values[i]) goto done;
    }
    self->running = 1;
    gwr_status st;
    const char *const *on = outputs == Py_None ? NULL : out_names;
    if (self->on_user_net) {
        /* The plan reads the caller's network, which another Python thread
         * could change or close while it runs: keep the GIL. */
        st = gwr_session_run(s, (int)nin, in_names, in_values, (int)nout, on, out_values);
    } else {
        /* A private copy: other threads may go on meanwhile. */
        Py_BEGIN_ALLOW_THREADS
        st = gwr_session_run(s, (int)nin, in_names, in_values, (int)nout, on, out_values);
        Py_END_ALLOW_THREADS
    }
    self->running = 0;
    if (st) {
        pg_raise(st, gwr_session_errmsg(s));
        goto done;
    }
    got = nout;
    if (!(result = PyDict_New())) goto done;
    for (Py_ssize_t i = 0; i < nout; i++) {
        PyObject *a = array_from_value(out_values[i], out_names[i]);
        out_values[i] = NULL; /* taken over, on failure too */
        if (!a || PyDict_SetItem(result, PyTuple_GET_ITEM(onames, i), a) < 0) {
            Py_XDECREF(a);
            Py_CLEAR(result);
            goto done;
        }
        Py_DECREF(a);
    }
done:
    for (Py_ssize_t i = 0; in_values && i < nin; i++) gwr_value_release(in_values[i]);
    for (Py_ssize_t i = 0; out_values && i < got; i++) gwr_value_release(out_values[i]);
    PyMem_Free(in_names);
    PyMem_Free(in_values);
    PyMem_Free(out_names);
    PyMem_Free(out_values);
    Py_XDECREF(keys);
    Py_DECREF(onames);
    return result;
}

static PyObject *session_optimized(Session *self, void *c) {
    (void)c;
    gwr_session *s = session_get(self);
    return s ? PyBool_FromLong(gwr_session_optimized(s)) : NULL;
}

static PyObject *session_optimize_msg(Session *self, void *c) {
    (void)c;
    gwr_session *s = session_get(self);
    return s ? PyUnicode_FromString(gwr_session_optimize_msg(s)) : NULL;
}

static PyObject *session_peak(Session *self, void *c) {
    (void)c;
    gwr_session *s = session_get(self);
    return s ? PyLong_FromLongLong(gwr_session_peak_bytes(s)) : NULL;
}

/* One profile event as a dict. */
static PyObject *event_dict(const gwr_profile_event *e) {
    return Py_BuildValue("{s:s,s:s,s:s,s:L,s:L,s:i,s:z}", "name", e->name, "cat", e->cat, "op", e->op, "start_ns",
                         (long long)e->start_ns, "dur_ns", (long long)e->dur_ns, "depth", e->depth, "shapes", e->shapes);
}

static PyObject *session_profile(Session *self, PyObject *noargs) {
    (void)noargs;
    gwr_session *s = session_get(self);
    if (!s) return NULL;
    int64_t n = gwr_session_profile_count(s);
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (int64_t i = 0; list && i < n; i++) {
        PyObject *d = event_dict(gwr_session_profile_event(s, i));
        if (!d) Py_CLEAR(list);
        else PyList_SET_ITEM(list, (Py_ssize_t)i, d);
    }
    return list;
}

static PyObject *session_write_profile(Session *self, PyObject *arg) {
    gwr_session *s = session_get(self);
    PyObject *path = NULL;
    if (!s || !PyUnicode_FSConverter(arg, &path)) return NULL;
    FILE *f = fopen(PyBytes_AS_STRING(path), "w");
    if (!f) {
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, arg);
        Py_DECREF(path);
        return NULL;
    }
    gwr_status st = gwr_session_profile_write(s, f);
    if (fclose(f) && !st) st = GWR_ERR_IO;
    Py_DECREF(path);
    if (st) return pg_raise(st, gwr_last_errmsg());
    Py_RETURN_NONE;
}

static PyObject *session_names(Session *self, void *c) {
    if (!session_get(self)) return NULL;
    return PySequence_List(c ? self->output_names : self->input_names);
}

static PyObject *session_network(Session *self, void *c) {
    (void)c;
    if (!session_get(self)) return NULL;
    return Py_NewRef(self->net);
}

static PyObject *session_repr(Session *self) {
    if (!self->s) return PyUnicode_FromString("<gwr.Session (uninitialized)>");
    return PyUnicode_FromFormat("<gwr.Session %s: %zd inputs, %zd outputs>",
                                gwr_session_optimized(self->s) ? "optimized" : "as written",
                                PyTuple_GET_SIZE(self->input_names), PyTuple_GET_SIZE(self->output_names));
}

static PyGetSetDef session_getset[] = {
    {"optimized", (getter)session_optimized, NULL, "True when the session runs an optimized private copy.", NULL},
    {"optimize_msg", (getter)session_optimize_msg, NULL,
     "Why the network runs as written (\"off\", the optimizer's message); \"\" when optimized.", NULL},
    {"input_names", (getter)session_names, NULL, "The network's input names, in order.", NULL},
    {"output_names", (getter)session_names, NULL, "The network's output names, in order.", (void *)1},
    {"peak_bytes", (getter)session_peak, NULL, "The most bytes of intermediate values alive at once in the last run.",
     NULL},
    {"network", (getter)session_network, NULL, "The Network the session was made from.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef session_methods[] = {
    {"profile", (PyCFunction)session_profile, METH_NOARGS,
     "profile() -> list of dict\n\n"
     "The events of a Session(..., profile=True), in the order they ended: the phases ('optimize' for an\n"
     "optimized session, 'plan'; cat 'phase'), then one 'run' (cat 'run') per run and one event per layer\n"
     "executed (cat 'layer'; a layer of a Loop body once per iteration). Keys: name, cat, op (layers),\n"
     "start_ns and dur_ns (CLOCK_MONOTONIC nanoseconds), depth (0 in the network, 1 + the bodies around a\n"
     "layer), shapes ('float32[2,3] -> float32[2,3]' for layers, else None). [] when not profiling."},
    {"write_profile", (PyCFunction)session_write_profile, METH_O,
     "write_profile(path)\n\nWrites profile() as a Chrome trace (chrome://tracing, Perfetto): {\"traceEvents\": [...]},\n"
     "the file `gwr run --profile` writes."},
    {"run", (PyCFunction)(void (*)(void))session_run, METH_VARARGS | METH_KEYWORDS,
     "run(feeds, outputs=None) -> dict\n\n"
     "Runs the network. feeds maps input names to array-likes: a C-contiguous numpy array of the\n"
     "input's dtype is used in place (zero-copy); anything else is converted (an ndarray must cast\n"
     "safely, a list within its kind), else DtypeError. outputs: names to return (None: all), and\n"
     "the result dict's order. Each output is a READ-ONLY numpy array over the executor's memory\n"
     "(its bytes may be shared with the network's constants or another output; .copy() to write),\n"
     "kept alive by its base after the session is gone. bfloat16, float8, float4 and 4/2-bit outputs\n"
     "come as float32 copies, strings as object arrays. An optimized session runs its private copy with the GIL\n"
     "released; one planned on the network as written keeps the GIL (the network must not change\n"
     "under it). One thread at a time may use a session (StateError otherwise)."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject Session_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gwr.Session",
    .tp_basicsize = sizeof(Session),
    .tp_dealloc = (destructor)session_dealloc,
    .tp_repr = (reprfunc)session_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Session(network, threads=1, optimize=\"default\", profile=False, bind=None)\n\n"
              "Runs a network on gwr's reference CPU executor. optimize: \"default\" (the executor's passes\n"
              "on a private copy), \"basic\" (eliminations and folding, on a copy) or \"raw\" (the network as\n"
              "written). A session that planned the network as written (raw, or when optimizing failed:\n"
              "see optimize_msg) refuses to run after the network changed (StateError); any session\n"
              "refuses once the network is closed (LifetimeError). threads: at most 256. profile=True records the\n"
              "time of every layer of every run (profile(), write_profile()). bind={\"batch\": 2} binds symbolic\n"
              "dims in the optimized copy (the fusions that need known dims fire); the session then takes inputs\n"
              "of those extents only.",
    .tp_methods = session_methods,
    .tp_getset = session_getset,
    .tp_init = (initproc)session_init,
    .tp_new = PyType_GenericNew,
};

/* ---- onnx ------------------------------------------------------------------------ */

/* The loader returns NULL; gwr_last_status() is the status of its
 * one-line message (GWR_ERR_IO for a file it cannot read, GWR_ERR_PARSE
 * for one that is not a model). */
static PyObject *raise_load_error(void) {
    gwr_status s = gwr_last_status();
    return pg_raise(s != GWR_OK ? s : GWR_ERR_PARSE, gwr_last_errmsg());
}

static PyObject *onnx_load(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    static char *kw[] = {"path", "infer_shapes", NULL};
    PyObject *path = NULL;
    int infer = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|p:load", kw, PyUnicode_FSConverter, &path, &infer)) return NULL;
    gwr_onnx_load_options opt = {.infer_shapes = infer};
    gwr_network *net;
    Py_BEGIN_ALLOW_THREADS
    net = gwr_onnx_load(PyBytes_AS_STRING(path), &opt);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    return net ? pg_network_adopt(net) : raise_load_error();
}

static PyObject *onnx_load_bytes(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    static char *kw[] = {"data", "name", "infer_shapes", NULL};
    Py_buffer b;
    const char *name = "<bytes>";
    int infer = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*|sp:load_bytes", kw, &b, &name, &infer)) return NULL;
    gwr_onnx_load_options opt = {.infer_shapes = infer};
    gwr_network *net = gwr_onnx_load_memory(b.buf, (size_t)b.len, NULL, name, &opt);
    PyBuffer_Release(&b);
    return net ? pg_network_adopt(net) : raise_load_error();
}

static PyObject *onnx_save(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    static char *kw[] = {"network", "path", "external_data", "provenance", NULL};
    PyObject *netobj, *path = NULL;
    int ext = 0, prov = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO&|pp:save", kw, &netobj, PyUnicode_FSConverter, &path, &ext,
                                     &prov))
        return NULL;
    gwr_network *net = pg_network_get(netobj);
    if (!net) {
        Py_DECREF(path);
        return NULL;
    }
    gwr_onnx_save_options opt = {.external_data = ext, .provenance = prov};
    gwr_status s = gwr_onnx_save(net, PyBytes_AS_STRING(path), &opt);
    Py_DECREF(path);
    if (s) return pg_raise_net(s, net);
    Py_RETURN_NONE;
}

static PyObject *onnx_save_bytes(PyObject *self, PyObject *netobj) {
    (void)self;
    gwr_network *net = pg_network_get(netobj);
    if (!net) return NULL;
    void *data = NULL;
    size_t size = 0;
    gwr_status s = gwr_onnx_save_memory(net, &data, &size);
    if (s) return pg_raise_net(s, net);
    PyObject *r = PyBytes_FromStringAndSize(data, (Py_ssize_t)size);
    free(data);
    return r;
}

static PyMethodDef session_functions[] = {
    {"_onnx_load", (PyCFunction)(void (*)(void))onnx_load, METH_VARARGS | METH_KEYWORDS,
     "_onnx_load(path, infer_shapes=False) -> Network (gwr.onnx.load)."},
    {"_onnx_load_bytes", (PyCFunction)(void (*)(void))onnx_load_bytes, METH_VARARGS | METH_KEYWORDS,
     "_onnx_load_bytes(data, name='<bytes>', infer_shapes=False) -> Network (gwr.onnx.load_bytes)."},
    {"_onnx_save", (PyCFunction)(void (*)(void))onnx_save, METH_VARARGS | METH_KEYWORDS,
     "_onnx_save(network, path, external_data=False) (gwr.onnx.save)."},
    {"_onnx_save_bytes", onnx_save_bytes, METH_O, "_onnx_save_bytes(network) -> bytes (gwr.onnx.save_bytes)."},
    {NULL, NULL, 0, NULL}};

gwr_session *pg_session_acquire(PyObject *o, const char *fn, int *on_user_net) {
    if (!PyObject_TypeCheck(o, &Session_Type)) return NULL;
    Session *self = (Session *)o;
    gwr_session *s = session_get(self);
    if (!s) return NULL;
    if (self->running) return pg_raisef(GWR_ERR_STATE, "%s: the session is running in another thread", fn), NULL;
    if (!pg_network_get(self->net)) return NULL;
    if (self->on_user_net && pg_network_generation(self->net) != self->generation)
        return pg_raisef(GWR_ERR_STATE, "%s: the network changed since the session planned it; make a new Session", fn),
               NULL;
    self->running = 1;
    *on_user_net = self->on_user_net;
    return s;
}

void pg_session_release(PyObject *o) { ((Session *)o)->running = 0; }

int pg_init_session(PyObject *m) {
    if (_import_array() < 0) return -1;
    if (PyType_Ready(&Session_Type) < 0) return -1;
    if (PyModule_AddObjectRef(m, "Session", (PyObject *)&Session_Type) < 0) return -1;
    return PyModule_AddFunctions(m, session_functions);
}
