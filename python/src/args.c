/* args.c - dicts of Python values as gwr_args, and back. */
#include <stdio.h>
#include <string.h>

#include "objects.h"

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
            if (!gwr_args_get_tensors(a, k, &t, &m)) v = pg_tensor_list(t, m);
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

