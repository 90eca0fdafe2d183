/* analysis.c - gwr.analyze(): the built-in analyses of gwr/analyze.h (op
 * histogram, parameters, FLOPs and bytes per layer, tensor lifetimes and
 * peak activation memory) as one Python dict.
 *
 * The C report refers to layers and tensors of its network; everything is
 * copied into Python objects (Layer and Tensor objects for the handles)
 * before the report is freed, so the dict stays valid whatever happens to
 * the network afterwards (its Layer objects die with their layers, as any). */
#include "pygwr.h"

/* Sets d[k] = v and drops v's reference; -1 when v is NULL or on error. */
static int put(PyObject *d, const char *k, PyObject *v) {
    if (!v) return -1;
    int r = PyDict_SetItemString(d, k, v);
    Py_DECREF(v);
    return r;
}

static PyObject *ops_dict(const gwr_analysis *a) {
    PyObject *d = PyDict_New();
    for (int64_t i = 0; d && i < gwr_analysis_num_ops(a); i++) {
        const gwr_op_count *c = gwr_analysis_op(a, i);
        PyObject *k = *c->domain ? PyUnicode_FromFormat("%s::%s", c->domain, c->op) : PyUnicode_FromString(c->op);
        PyObject *v = PyLong_FromLongLong(c->count);
        if (!k || !v || PyDict_SetItem(d, k, v) < 0) Py_CLEAR(d);
        Py_XDECREF(k);
        Py_XDECREF(v);
    }
    return d;
}

static PyObject *layers_list(const gwr_analysis *a) {
    int64_t n = gwr_analysis_num_layers(a);
    PyObject *l = PyList_New((Py_ssize_t)n);
    for (int64_t i = 0; l && i < n; i++) {
        const gwr_layer_cost *c = gwr_analysis_layer_cost(a, i);
        PyObject *e = PyDict_New();
        if (!e || put(e, "layer", pg_layer_wrap(c->layer)) < 0 || put(e, "flops", PyLong_FromLongLong(c->flops)) < 0 ||
            put(e, "bytes_read", PyLong_FromLongLong(c->bytes_read)) < 0 ||
            put(e, "bytes_written", PyLong_FromLongLong(c->bytes_written)) < 0 ||
            put(e, "known", PyBool_FromLong(c->known)) < 0) {
            Py_XDECREF(e);
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)i, e);
    }
    return l;
}

static PyObject *lifetimes_list(const gwr_analysis *a) {
    int64_t n = gwr_analysis_num_lifetimes(a);
    PyObject *l = PyList_New((Py_ssize_t)n);
    for (int64_t i = 0; l && i < n; i++) {
        const gwr_tensor_lifetime *t = gwr_analysis_lifetime(a, i);
        PyObject *e = PyDict_New();
        if (!e || put(e, "tensor", pg_tensor_wrap(t->tensor)) < 0 || put(e, "first", PyLong_FromLongLong(t->first)) < 0 ||
            put(e, "last", PyLong_FromLongLong(t->last)) < 0 || put(e, "bytes", PyLong_FromLongLong(t->bytes)) < 0) {
            Py_XDECREF(e);
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)i, e);
    }
    return l;
}

static PyObject *names_list(const gwr_analysis *a, int64_t n, const char *(*get)(const gwr_analysis *, int64_t)) {
    PyObject *l = PyList_New((Py_ssize_t)n);
    for (int64_t i = 0; l && i < n; i++) {
        PyObject *s = PyUnicode_FromString(get(a, i));
        if (!s) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)i, s);
    }
    return l;
}

static PyObject *report_dict(const gwr_analysis *a) {
    gwr_param_stats ps;
    gwr_cost_totals ct;
    gwr_memory_stats ms;
    gwr_status s;
    if ((s = gwr_analysis_params(a, &ps)) || (s = gwr_analysis_totals(a, &ct)) || (s = gwr_analysis_memory(a, &ms)))
        return pg_raise(s, gwr_analysis_errmsg(a));
    PyObject *d = PyDict_New(), *p = PyDict_New(), *t = PyDict_New(), *m = PyDict_New();
    int bad = !d || !p || !t || !m;
    bad = bad || put(p, "tensors", PyLong_FromLongLong(ps.tensors)) < 0 ||
          put(p, "elements", PyLong_FromLongLong(ps.elements)) < 0 || put(p, "bytes", PyLong_FromLongLong(ps.bytes)) < 0 ||
          put(p, "shared_tensors", PyLong_FromLongLong(ps.shared_tensors)) < 0 ||
          put(p, "shared_bytes", PyLong_FromLongLong(ps.shared_bytes)) < 0;
    bad = bad || put(t, "layers", PyLong_FromLongLong(ct.layers)) < 0 ||
          put(t, "known_layers", PyLong_FromLongLong(ct.known_layers)) < 0 ||
          put(t, "flops", PyLong_FromLongLong(ct.flops)) < 0 ||
          put(t, "bytes_read", PyLong_FromLongLong(ct.bytes_read)) < 0 ||
          put(t, "bytes_written", PyLong_FromLongLong(ct.bytes_written)) < 0 ||
          put(t, "body_layers", PyLong_FromLongLong(ct.body_layers)) < 0 ||
          put(t, "body_flops", PyLong_FromLongLong(ct.body_flops)) < 0 ||
          put(t, "loops_counted_once", PyLong_FromLongLong(ct.loops_counted_once)) < 0;
    bad = bad || put(m, "peak_bytes", PyLong_FromLongLong(ms.peak_bytes)) < 0 ||
          put(m, "peak_index", PyLong_FromLongLong(ms.peak_index)) < 0 ||
          put(m, "peak_layer", pg_layer_wrap(ms.peak_layer)) < 0 ||
          put(m, "network_order", PyBool_FromLong(ms.network_order)) < 0 ||
          put(m, "weight_bytes", PyLong_FromLongLong(ms.weight_bytes)) < 0;
    bad = bad || PyDict_SetItemString(d, "params", p) < 0 || PyDict_SetItemString(d, "totals", t) < 0 ||
          PyDict_SetItemString(d, "memory", m) < 0 || put(d, "ops", ops_dict(a)) < 0 ||
          put(d, "layers", layers_list(a)) < 0 || put(d, "lifetimes", lifetimes_list(a)) < 0 ||
          put(d, "assumed", names_list(a, gwr_analysis_num_assumed(a), gwr_analysis_assumed)) < 0 ||
          put(d, "unknown_tensors", PyLong_FromLongLong(gwr_analysis_unknown_tensors(a))) < 0 ||
          put(d, "unused", names_list(a, gwr_analysis_num_unused(a), gwr_analysis_unused)) < 0;
    Py_XDECREF(p);
    Py_XDECREF(t);
    Py_XDECREF(m);
    if (bad) Py_CLEAR(d);
    return d;
}

static PyObject *py_analyze(PyObject *mod, PyObject *args, PyObject *kw) {
    (void)mod;
    static char *kwlist[] = {"net", "dims", NULL};
    PyObject *netobj, *dims = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:analyze", kwlist, &netobj, &dims)) return NULL;
    gwr_network *net = pg_network_get(netobj);
    if (!net) return NULL;
    if (dims != Py_None && !PyDict_Check(dims))
        return PyErr_Format(PyExc_TypeError, "analyze: dims must be a dict {symbol: int}, not %.100s",
                            Py_TYPE(dims)->tp_name);
    gwr_args *d = NULL;
    if (dims != Py_None && !(d = pg_args_from_dict(dims))) return NULL;
    gwr_analysis *a = gwr_analyze_network(net, d);
    gwr_args_free(d);
    if (!a) {
        gwr_status s = gwr_last_status();
        return pg_raise_net(s != GWR_OK ? s : GWR_ERR_INVALID_ARG, net);
    }
    PyObject *r = report_dict(a);
    gwr_analysis_free(a);
    return r;
}

static PyMethodDef analysis_functions[] = {
    {"analyze", (PyCFunction)(void (*)(void))py_analyze, METH_VARARGS | METH_KEYWORDS,
     "analyze(net, dims=None) -> dict\n\n"
     "The built-in analyses of the network's live layers (what `gwr analyze` prints): 'ops' (op -> count,\n"
     "'domain::op' outside ONNX's domain), 'params' (tensors, elements, bytes, shared_tensors,\n"
     "shared_bytes), 'totals' (layers, known_layers, flops, bytes_read, bytes_written, and body_layers,\n"
     "body_flops, loops_counted_once for If/Loop/Scan bodies, whose FLOPs are in flops), 'layers' (per live\n"
     "layer in network order: layer, flops, bytes_read, bytes_written, known), 'memory' (peak_bytes,\n"
     "peak_index, peak_layer, network_order, weight_bytes), 'lifetimes' (tensor, first, last, bytes),\n"
     "'assumed' (symbolic dims counted as 1), 'unknown_tensors', 'unused' (dims no tensor read).\n"
     "dims binds symbolic dims, {'batch': 1, 'seq': 128}. docs/api.md gives the FLOP conventions\n"
     "(a multiply-add is 2). The network is not changed."},
    {NULL, NULL, 0, NULL},
};

int pg_init_analysis(PyObject *m) { return PyModule_AddFunctions(m, analysis_functions); }
