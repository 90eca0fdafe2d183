/* quant.c - gwr.quantize and gwr.precision (gwr/quantize.h): a network
 * quantized or converted to half precision in place, calibrated on a
 * directory of samples (gwr_calib_load) or on samples given as dicts of
 * numpy arrays; the report comes back as a dict. */
#include "patterns_internal.h" /* pg_dict_set_steal, pg_str_list */

#define NO_IMPORT_ARRAY
#include "pygwr_np.h"

#include <string.h>

/* ---- calibration ---------------------------------------------------------------- */

/* A numpy array (or what numpy makes one of) as a new value of its own
 * dtype, copied: the C checks refuse another dtype than the input's, with
 * its message. Python lists and scalars (no dtype of their own) take the
 * dtype of the input `t` when it has one. */
static gwr_value *value_of(PyObject *obj, gwr_tensor *t, const char *fn, const char *name) {
    PyArray_Descr *want = NULL;
    if (!PyArray_Check(obj) && t && gwr_tensor_dtype(t) != GWR_UNDEFINED) {
        PyObject *dn = PyUnicode_FromString(gwr_dtype_name(gwr_tensor_dtype(t)));
        if (!dn) return NULL;
        if (!PyArray_DescrConverter2(dn, &want)) want = NULL; /* a dtype numpy lacks: numpy decides */
        Py_DECREF(dn);
        PyErr_Clear();
    }
    PyArrayObject *a = (PyArrayObject *)PyArray_FromAny(obj, want, 0, 0,
                                                        NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_NOTSWAPPED |
                                                            (want ? NPY_ARRAY_FORCECAST : 0),
                                                        NULL); /* steals want */
    if (!a) return NULL;
    gwr_value *v = NULL;
    gwr_dtype dt;
    if (PyArray_NDIM(a) > GWR_MAX_RANK) {
        PyErr_Format(PyExc_ValueError, "%s: calibration input '%s' has rank %d, more than gwr's %d", fn, name,
                     PyArray_NDIM(a), GWR_MAX_RANK);
    } else if (PyArray_ISOBJECT(a) || PyArray_ISSTRING(a) || pg_dtype_from_py((PyObject *)PyArray_DESCR(a), &dt) < 0) {
        PyErr_Clear();
        PyObject *s = PyObject_Str((PyObject *)PyArray_DESCR(a));
        pg_raisef(GWR_ERR_TYPE, "%s: calibration input '%s' has numpy dtype %s, which gwr cannot take", fn, name,
                  s ? PyUnicode_AsUTF8(s) : "?");
        Py_XDECREF(s);
    } else {
        int64_t dims[GWR_MAX_RANK];
        for (int i = 0; i < PyArray_NDIM(a); i++) dims[i] = (int64_t)PyArray_DIM(a, i);
        if (!(v = gwr_value_new(dt, PyArray_NDIM(a), dims))) pg_raise(gwr_last_status(), gwr_last_errmsg());
        else if (PyArray_NBYTES(a)) memcpy(gwr_value_data(v), PyArray_DATA(a), (size_t)PyArray_NBYTES(a));
    }
    Py_DECREF(a);
    return v;
}

/* One sample: a dict name -> array, added to c. -1 with an exception. */
static int add_sample(gwr_calib *c, gwr_network *net, PyObject *d, Py_ssize_t idx, const char *fn) {
    if (!PyDict_Check(d)) {
        PyErr_Format(PyExc_TypeError, "%s: calibration sample %zd must be a dict name -> array, not %.100s", fn, idx,
                     Py_TYPE(d)->tp_name);
        return -1;
    }
    Py_ssize_t n = PyDict_Size(d), pos = 0, k = 0;
    const char **names = PyMem_Calloc((size_t)n + 1, sizeof *names);
    gwr_value **vals = PyMem_Calloc((size_t)n + 1, sizeof *vals);
    PyObject *key, *val, *keep = PyDict_Copy(d); /* the names live as long as this */
    int rc = -1;
    if (!names || !vals || !keep) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    while (PyDict_Next(keep, &pos, &key, &val)) {
        if (!PyUnicode_Check(key)) {
            PyErr_Format(PyExc_TypeError, "%s: calibration sample %zd: input names must be str, not %.100s", fn, idx,
                         Py_TYPE(key)->tp_name);
            goto done;
        }
        if (!(names[k] = PyUnicode_AsUTF8(key))) goto done;
        gwr_tensor *t = NULL;
        for (int j = 0; !t && j < gwr_network_num_inputs(net); j++)
            if (!strcmp(gwr_tensor_name(gwr_network_input(net, j)), names[k])) t = gwr_network_input(net, j);
        if (!(vals[k] = value_of(val, t, fn, names[k]))) goto done;
        k++;
    }
    gwr_status s = gwr_calib_add(c, (int)k, names, vals);
    if (s) pg_raise(s, gwr_last_errmsg());
    else rc = 0;
done:
    for (Py_ssize_t i = 0; vals && i < k; i++) gwr_value_release(vals[i]);
    PyMem_Free(names);
    PyMem_Free(vals);
    Py_XDECREF(keep);
    return rc;
}

/* ---- gwr.Calib ---------------------------------------------------------------------- */

typedef struct pg_calib {
    PyObject_HEAD
    gwr_calib *c;
} pg_calib;

static PyTypeObject Calib_Type;

/* calibration=: None (NULL, no error), a gwr.Calib (its set, borrowed:
 * *owned 0), a directory (str or os.PathLike) or a list/tuple of dicts.
 * *failed 1 with an exception on error. */
static gwr_calib *calib_of(PyObject *o, gwr_network *net, const char *fn, int *failed, int *owned) {
    *failed = 0, *owned = 1;
    if (o == Py_None) return NULL;
    if (PyObject_TypeCheck(o, &Calib_Type)) {
        *owned = 0;
        return ((pg_calib *)o)->c;
    }
    *failed = 1;
    if (PyUnicode_Check(o) || PyObject_HasAttrString(o, "__fspath__")) {
        PyObject *path = NULL;
        if (!PyUnicode_FSConverter(o, &path)) return NULL;
        gwr_calib *c = gwr_calib_load(PyBytes_AS_STRING(path), net);
        Py_DECREF(path);
        if (!c) pg_raise(gwr_last_status(), gwr_last_errmsg());
        else *failed = 0;
        return c;
    }
    if (!PyList_Check(o) && !PyTuple_Check(o)) {
        PyErr_Format(PyExc_TypeError,
                     "%s: calibration must be a gwr.Calib, a directory (str or path) or a list of dicts name -> "
                     "array, not %.100s",
                     fn, Py_TYPE(o)->tp_name);
        return NULL;
    }
    gwr_calib *c = gwr_calib_new();
    if (!c) return pg_raise(GWR_ERR_NOMEM, gwr_last_errmsg()), NULL;
    PyObject *seq = PySequence_Fast(o, "calibration");
    for (Py_ssize_t i = 0; seq && i < PySequence_Fast_GET_SIZE(seq); i++)
        if (add_sample(c, net, PySequence_Fast_GET_ITEM(seq, i), i, fn) < 0) {
            Py_DECREF(seq);
            gwr_calib_free(c);
            return NULL;
        }
    if (!seq) {
        gwr_calib_free(c);
        return NULL;
    }
    Py_DECREF(seq);
    *failed = 0;
    return c;
}

static void calib_dealloc(PyObject *o) {
    gwr_calib_free(((pg_calib *)o)->c);
    Py_TYPE(o)->tp_free(o);
}

static PyObject *calib_wrap(gwr_calib *c) {
    pg_calib *o = c ? PyObject_New(pg_calib, &Calib_Type) : NULL;
    if (!o) {
        gwr_calib_free(c);
        return NULL;
    }
    o->c = c;
    return (PyObject *)o;
}

static PyObject *calib_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    (void)type;
    static char *kwlist[] = {"net", "samples", NULL};
    PyObject *netobj, *samples;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO:Calib", kwlist, &netobj, &samples)) return NULL;
    gwr_network *net = pg_network_get(netobj);
    if (!net) return NULL;
    if (samples == Py_None || PyObject_TypeCheck(samples, &Calib_Type))
        return PyErr_Format(PyExc_TypeError, "Calib: samples must be a directory or a list of dicts name -> array");
    int failed, owned;
    gwr_calib *c = calib_of(samples, net, "Calib", &failed, &owned);
    if (failed) return NULL;
    char why[400];
    if (!gwr_calib_fits(c, net, why, sizeof why)) {
        gwr_calib_free(c);
        return pg_raisef(GWR_ERR_INVALID_ARG, "Calib: %s", why);
    }
    return calib_wrap(c);
}

static PyObject *calib_random(PyObject *cls, PyObject *args, PyObject *kw) {
    (void)cls;
    static char *kwlist[] = {"net", "count", "seed", NULL};
    PyObject *netobj;
    int count = 8;
    unsigned long long seed = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|iK:random", kwlist, &netobj, &count, &seed)) return NULL;
    gwr_network *net = pg_network_get(netobj);
    if (!net) return NULL;
    gwr_input_options io;
    memset(&io, 0, sizeof io);
    io.seed = seed;
    gwr_calib *c = gwr_calib_random(net, count, &io);
    if (!c) return pg_raise(gwr_last_status(), gwr_last_errmsg());
    return calib_wrap(c);
}

static Py_ssize_t calib_len(PyObject *o) { return gwr_calib_count(((pg_calib *)o)->c); }

static PyObject *calib_names(PyObject *o, PyObject *arg) {
    Py_ssize_t i = PyNumber_AsSsize_t(arg, PyExc_IndexError);
    if (i == -1 && PyErr_Occurred()) return NULL;
    const gwr_calib *c = ((pg_calib *)o)->c;
    if (i < 0) i += gwr_calib_count(c);
    if (i < 0 || i >= gwr_calib_count(c)) return PyErr_Format(PyExc_IndexError, "Calib.names: no sample %zd", i);
    const char *const *names;
    int n = gwr_calib_sample(c, (int)i, &names, NULL);
    PyObject *l = PyList_New(n);
    for (int k = 0; l && k < n; k++) {
        PyObject *s = PyUnicode_FromString(names[k]);
        if (!s) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, k, s);
    }
    return l;
}

static PyObject *calib_repr(PyObject *o) {
    int n = gwr_calib_count(((pg_calib *)o)->c);
    return PyUnicode_FromFormat("<gwr.Calib: %d sample%s>", n, n == 1 ? "" : "s");
}

static PyMethodDef calib_methods[] = {
    {"random", (PyCFunction)(void (*)(void))calib_random, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "Calib.random(net, count=8, seed=0) -> Calib\n\ncount samples of seeded random inputs of net (as gwr run "
     "makes them: symbolic dims 1)."},
    {"names", calib_names, METH_O, "names(i) -> list of str: the input names of sample i."},
    {NULL, NULL, 0, NULL}};

static PySequenceMethods calib_as_seq = {.sq_length = calib_len};

static PyTypeObject Calib_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gwr.Calib",
    .tp_basicsize = sizeof(pg_calib),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Calib(net, samples): calibration samples of net's inputs for gwr.quantize and gwr.precision,\n"
              "checked against net as they are read: samples is a directory (.npz files or ONNX test-data\n"
              "directories, gwr_calib_load) or a list of dicts input name -> numpy array (each copied).\n"
              "Calib.random(net, count, seed) makes seeded random ones. len() counts the samples.",
    .tp_new = calib_new,
    .tp_dealloc = calib_dealloc,
    .tp_repr = calib_repr,
    .tp_methods = calib_methods,
    .tp_as_sequence = &calib_as_seq,
};

/* ---- the report ------------------------------------------------------------------ */

static PyObject *error_or_none(double v) { return v < 0 ? Py_NewRef(Py_None) : PyFloat_FromDouble(v); }

/* {'layers': [{layer, op, what, rel_error, cosine}], 'weight_bytes_before',
 * 'weight_bytes_after'}; rel_error and cosine None where not measured. */
static PyObject *report_dict(const gwr_quant_report *r) {
    PyObject *layers = PyList_New(0);
    if (!layers) return NULL;
    for (int i = 0; i < gwr_quant_report_count(r); i++) {
        const gwr_quant_entry *e = gwr_quant_report_entry(r, i);
        PyObject *d = PyDict_New();
        if (!d || pg_dict_set_steal(d, "layer", PyUnicode_FromString(e->layer)) < 0 ||
            pg_dict_set_steal(d, "op", PyUnicode_FromString(e->op)) < 0 ||
            pg_dict_set_steal(d, "what", PyUnicode_FromString(e->what)) < 0 ||
            pg_dict_set_steal(d, "rel_error", error_or_none(e->rel_error)) < 0 ||
            pg_dict_set_steal(d, "cosine", error_or_none(e->cosine)) < 0 || PyList_Append(layers, d) < 0) {
            Py_XDECREF(d);
            Py_DECREF(layers);
            return NULL;
        }
        Py_DECREF(d);
    }
    PyObject *d = PyDict_New();
    if (!d || pg_dict_set_steal(d, "layers", layers) < 0 ||
        pg_dict_set_steal(d, "weight_bytes_before", PyLong_FromLongLong(gwr_quant_report_weight_bytes(r, 0))) < 0 ||
        pg_dict_set_steal(d, "weight_bytes_after", PyLong_FromLongLong(gwr_quant_report_weight_bytes(r, 1))) < 0) {
        if (!d) Py_DECREF(layers);
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

/* ---- gwr.quantize, gwr.precision ------------------------------------------------------ */

/* s's index among the NULL-terminated names; -1 with InvalidArgumentError
 * naming fn, the argument and the choices. */
static int choice(const char *s, const char *const *names, const char *fn, const char *what) {
    char all[160] = "";
    for (int i = 0; names[i]; i++) {
        if (!strcmp(s, names[i])) return i;
        size_t n = strlen(all);
        snprintf(all + n, sizeof all - n, "%s'%s'", i ? (names[i + 1] ? ", " : " or ") : "", names[i]);
    }
    pg_raisef(GWR_ERR_INVALID_ARG, "%s: %s must be %s, not '%s'", fn, what, all, s);
    return -1;
}

/* An optional int argument: None is 0 (the default); else >= 1. */
static int opt_int(PyObject *o, const char *fn, const char *what, int *out) {
    *out = 0;
    if (o == Py_None) return 0;
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < 1 || v > 1 << 30) return pg_raisef(GWR_ERR_INVALID_ARG, "%s: %s must be a positive int, not %ld", fn, what, v), -1;
    *out = (int)v;
    return 0;
}

static int opt_float(PyObject *o, const char *fn, const char *what, double *out) {
    *out = 0;
    if (o == Py_None) return 0;
    double v = PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred()) return -1;
    if (!(v > 0)) return pg_raisef(GWR_ERR_INVALID_ARG, "%s: %s must be a positive number, not %g", fn, what, v), -1;
    *out = v;
    return 0;
}

int pg_check_threads(int threads, const char *fn) {
    if (threads >= 1 && threads <= GWR_SESSION_MAX_THREADS) return 0;
    pg_raisef(GWR_ERR_INVALID_ARG, "%s: threads must be from 1 to %d, not %d", fn, GWR_SESSION_MAX_THREADS, threads);
    return -1;
}

/* What gwr_quantize / gwr_precision returned, as the report dict or the
 * exception of s with net's message; rep freed. */
static PyObject *finish(gwr_status s, gwr_network *net, gwr_quant_report *rep) {
    PyObject *res = s ? pg_raise_net(s, net) : rep ? report_dict(rep) : PyDict_New();
    gwr_quant_report_free(rep);
    return res;
}

static PyObject *py_quantize(PyObject *mod, PyObject *args, PyObject *kw) {
    (void)mod;
    static char *kwlist[] = {"net", "mode", "target", "format", "calibration", "method", "percentile", "activations",
                             "per_tensor", "bits", "block_size", "algo", "smoothquant", "exclude", "report", "threads",
                             NULL};
    static const char *const modes[] = {"dynamic", "static", "weight-only", NULL};
    static const char *const targets[] = {"onnx", "ort", "gwr", NULL};
    static const unsigned target_bits[] = {GWR_TARGET_ONNX, GWR_TARGET_ORT, GWR_TARGET_GWR};
    static const char *const formats[] = {"qdq", "qoperator", NULL};
    static const char *const methods[] = {"minmax", "percentile", "entropy", "mse", NULL};
    static const char *const acts[] = {"uint8", "int8", NULL};
    static const char *const algos[] = {"rtn", "gptq", NULL};
    const char *fn = "quantize";
    PyObject *netobj, *calibration = Py_None, *percentile = Py_None, *bits = Py_None, *block = Py_None,
                      *smooth = Py_None, *exclude = Py_None;
    const char *mode = "dynamic", *target = "ort", *format = NULL, *method = "minmax", *acts_s = "uint8",
               *algo = "rtn";
    int per_tensor = 0, report = 0, threads = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|sszOsOspOOsOOpi:quantize", kwlist, &netobj, &mode, &target, &format,
                                     &calibration, &method, &percentile, &acts_s, &per_tensor, &bits, &block, &algo,
                                     &smooth, &exclude, &report, &threads))
        return NULL;
    gwr_quantize_options o;
    memset(&o, 0, sizeof o);
    int k;
    if ((k = choice(mode, modes, fn, "mode")) < 0) return NULL;
    o.mode = (gwr_quant_mode)(GWR_QUANT_DYNAMIC + k);
    if ((k = choice(target, targets, fn, "target")) < 0) return NULL;
    o.target = target_bits[k];
    if (format) {
        if ((k = choice(format, formats, fn, "format")) < 0) return NULL;
        o.format = k ? GWR_QFORMAT_QOPERATOR : GWR_QFORMAT_QDQ;
    } else {
        o.format = o.mode == GWR_QUANT_DYNAMIC ? GWR_QFORMAT_QOPERATOR : GWR_QFORMAT_QDQ;
    }
    if ((k = choice(method, methods, fn, "method")) < 0) return NULL;
    o.method = (gwr_calib_method)k;
    if ((k = choice(acts_s, acts, fn, "activations")) < 0) return NULL;
    o.act_int8 = k;
    if ((k = choice(algo, algos, fn, "algo")) < 0) return NULL;
    o.wo_method = k ? GWR_WO_GPTQ : GWR_WO_RTN;
    /* bits, block_size, percentile and smoothquant go to the C checks as given */
    if (opt_int(bits, fn, "bits", &o.bits) < 0 || opt_int(block, fn, "block_size", &o.block_size) < 0 ||
        opt_float(percentile, fn, "percentile", &o.percentile) < 0 ||
        opt_float(smooth, fn, "smoothquant", &o.smoothquant_alpha) < 0 || pg_check_threads(threads, fn) < 0)
        return NULL;
    o.per_tensor = per_tensor, o.report = report, o.threads = threads;
    gwr_network *net = pg_network_get(netobj);
    if (!net) return NULL;
    char *excl = NULL;
    if (pg_str_list(exclude, fn, "exclude", &excl) < 0) return NULL;
    o.exclude = excl;
    int failed, owned;
    gwr_calib *c = calib_of(calibration, net, fn, &failed, &owned);
    PyObject *res = NULL;
    gwr_quant_report *rep = NULL;
    o.calib = c;
    if (!failed) {
        gwr_status st = gwr_quantize(net, &o, &rep); /* before finish reads rep (argument order is unspecified) */
        res = finish(st, net, rep);
    }
    if (owned) gwr_calib_free(c);
    PyMem_Free(excl);
    return res;
}

static PyObject *py_precision(PyObject *mod, PyObject *args, PyObject *kw) {
    (void)mod;
    static char *kwlist[] = {"net", "to", "keep", "keep_nodes", "keep_io", "auto", "calibration", "threads", NULL};
    static const char *const tos[] = {"fp16", "bf16", NULL};
    const char *fn = "precision";
    PyObject *netobj, *keep = Py_None, *keep_nodes = Py_None, *autotol = Py_None, *calibration = Py_None;
    const char *to = "fp16";
    int keep_io = 0, threads = 1, k;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|sOOpOOi:precision", kwlist, &netobj, &to, &keep, &keep_nodes,
                                     &keep_io, &autotol, &calibration, &threads))
        return NULL;
    gwr_precision_options o;
    memset(&o, 0, sizeof o);
    if (!strcmp(to, "float16")) to = "fp16";
    if (!strcmp(to, "bfloat16")) to = "bf16";
    if ((k = choice(to, tos, fn, "to")) < 0) return NULL;
    o.to = k ? GWR_BFLOAT16 : GWR_FLOAT16;
    o.keep_io = keep_io;
    if (opt_float(autotol, fn, "auto", &o.auto_tol) < 0 || pg_check_threads(threads, fn) < 0) return NULL;
    o.threads = threads;
    gwr_network *net = pg_network_get(netobj);
    if (!net) return NULL;
    char *ko = NULL, *kn = NULL;
    PyObject *res = NULL;
    if (pg_str_list(keep, fn, "keep", &ko) < 0 || pg_str_list(keep_nodes, fn, "keep_nodes", &kn) < 0) goto done;
    o.keep_ops = ko, o.keep_nodes = kn;
    int failed, owned;
    gwr_calib *c = calib_of(calibration, net, fn, &failed, &owned);
    gwr_quant_report *rep = NULL;
    o.calib = c;
    if (!failed) {
        gwr_status st = gwr_precision(net, &o, &rep); /* before finish reads rep */
        res = finish(st, net, rep);
    }
    if (owned) gwr_calib_free(c);
done:
    PyMem_Free(ko);
    PyMem_Free(kn);
    return res;
}

static PyMethodDef quant_functions[] = {
    {"quantize", (PyCFunction)(void (*)(void))py_quantize, METH_VARARGS | METH_KEYWORDS,
     "quantize(net, mode='dynamic', target='ort', format=None, calibration=None, method='minmax', "
     "percentile=None, activations='uint8', per_tensor=False, bits=None, block_size=None, algo='rtn', "
     "smoothquant=None, exclude=None, report=False, threads=1) -> dict\n\n"
     "Quantizes net in place, as `gwr quantize` does (docs/quantize.md). mode: 'dynamic', 'static' or "
     "'weight-only'; target: 'ort', 'gwr' or 'onnx'; format: 'qdq' or 'qoperator' (None: qoperator for "
     "dynamic, qdq otherwise); calibration: a gwr.Calib, a directory of .npz files or ONNX test-data "
     "directories, or a list of dicts input name -> numpy array (None: seeded random samples where needed); method: "
     "'minmax', 'percentile', 'entropy' or 'mse'; activations: 'uint8' or 'int8'; bits: 4 or 8; "
     "block_size: a power of two >= 16; algo: 'rtn' or 'gptq'; smoothquant: alpha in (0, 1]; exclude: op "
     "types and layer names left in float (a comma-separated str or a list); report: measure each "
     "quantized layer's output error. Returns {'layers': [{layer, op, what, rel_error, cosine}], "
     "'weight_bytes_before', 'weight_bytes_after'} (errors None where not measured). A refusal (a bad "
     "option, calibration samples that do not fit, a network already quantized) raises "
     "InvalidArgumentError or UnsupportedError with the C message and leaves net unchanged."},
    {"precision", (PyCFunction)(void (*)(void))py_precision, METH_VARARGS | METH_KEYWORDS,
     "precision(net, to='fp16', keep=None, keep_nodes=None, keep_io=False, auto=None, calibration=None, "
     "threads=1) -> dict\n\n"
     "Converts net in place to float16 ('fp16') or bfloat16 ('bf16'), as `gwr precision` does: keep: op "
     "types kept in float32 besides the built-in table, keep_nodes: layer names (each a comma-separated "
     "str or a list); keep_io: the inputs and outputs stay float32; auto: a tolerance for automatic mixed "
     "precision, measured on calibration (as in quantize). Returns the report dict of quantize. Errors "
     "raise the gwr exception of the C status with its message."},
    {NULL, NULL, 0, NULL}};

int pg_init_quant(PyObject *m) {
    if (PyType_Ready(&Calib_Type) < 0 || PyModule_AddObjectRef(m, "Calib", (PyObject *)&Calib_Type) < 0) return -1;
    return PyModule_AddFunctions(m, quant_functions);
}
