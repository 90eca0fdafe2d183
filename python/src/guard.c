/* guard.c - net_guard and the current network: what builders without a Tensor
 * argument, gwr.Tensor(...) and FLayerInfoMemo use. */
#include <stdio.h>
#include <string.h>

#include "objects.h"

/* ---- the current network and net_guard ------------------------------------------- */

/* One stack per thread: a guard in one thread is not the current network
 * of another. Freed whenever it empties, so a thread leaves nothing. */
static _Thread_local PyObject **net_stack;
static _Thread_local Py_ssize_t net_depth, net_cap;

static void net_stack_trim(void) {
    if (net_depth == 0 && net_stack) {
        PyMem_Free(net_stack);
        net_stack = NULL;
        net_cap = 0;
    }
}

int pg_push_network(PyObject *net) {
    if (pg_network_check(net) < 0) return -1;
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
    if (net_depth > 0) {
        PyObject *o = net_stack[--net_depth];
        net_stack_trim();
        Py_DECREF(o);
    }
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
    if (pg_network_check(net) < 0) return NULL;
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
                net_stack_trim();
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

PyTypeObject pg_Guard_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gwr.net_guard",
    .tp_basicsize = sizeof(pg_guard),
    .tp_dealloc = (destructor)Guard_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "net_guard(network)\n\n"
              "`with gwr.net_guard(net):` makes net the current network: the one gwr.Tensor(...),\n"
              "builders without Tensor arguments (constants) and FLayerInfoMemo.instance().get(name)\n"
              "use. Nestable. A running pattern manager makes its network current too. Each\n"
              "thread has its own current network.",
    .tp_methods = Guard_methods,
    .tp_new = Guard_new,
};

static PyObject *py_current_network(PyObject *self, PyObject *noargs) {
    (void)self;
    (void)noargs;
    PyObject *n = pg_current_network();
    return Py_NewRef(n ? n : Py_None);
}

static PyMethodDef guard_functions[] = {
    {"current_network", py_current_network, METH_NOARGS,
     "current_network() -> Network or None\n\nThe network of the innermost net_guard (or of the running manager)."},
    {NULL, NULL, 0, NULL},
};

int pg_init_guard(PyObject *m) { return PyModule_AddFunctions(m, guard_functions); }
