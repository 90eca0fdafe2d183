/* patterns.c - gwr._gwr's pattern side, its core: the running call (pg_run),
 * PatternRewriter and PatternAnalyzer (C base types that Python subclasses
 * override), the trampolines that call them from the C managers, the C
 * struct built for a Python pattern, and pg_init_patterns, the pattern
 * side's one entry point (module.c calls it).
 *
 * The managers (managers.c) and BuiltinPattern with the gwr.passes helpers
 * and optimize() (passes.c) are the rest of the pattern side; what the
 * three files share is in patterns_internal.h.
 *
 * A Python pattern reaches the C manager as a gwr_pattern_rewriter (or
 * _analyzer) whose callbacks are the trampolines below and whose user
 * pointer is the pattern object; the manager's `patterns` dict holds the
 * strong reference. A Python exception raised inside a callback is kept on
 * the running call's pg_run and the callback fails, which stops the C
 * manager; rewrite()/analyze() then re-raise that very exception object. */
#include "patterns_internal.h"

#include <stdlib.h>
#include <string.h>

#include <structmember.h>

/* ---- the running call ------------------------------------------------------ */

/* One rewrite()/analyze() call in progress is a pg_run (patterns_internal.h).
 * Calls nest (a pattern may run another manager on another network), so
 * they form a stack; pg_current_run is its top, pushed and popped by the
 * managers' run (managers.c). */

/* Per thread: another Python thread may run its own manager while one of
 * ours is inside a Python callback (the GIL switches between them). */
_Thread_local pg_run *pg_current_run;

/* The callbacks running in this thread, innermost first: no_match and
 * add_to_match find the ctx of their pattern here (a pattern object may
 * be in several managers, running in several threads). */
typedef struct pg_cur {
    struct pg_cur *prev;
    PyObject *pattern;
    gwr_rewrite_ctx *ctx;
} pg_cur;

static _Thread_local pg_cur *g_cur;

static gwr_rewrite_ctx *current_ctx(PyObject *pattern) {
    for (pg_cur *c = g_cur; c; c = c->prev)
        if (c->pattern == pattern) return c->ctx;
    return NULL;
}

/* Moves the pending Python exception onto the running call. The first one
 * wins: it is what stopped the run; a later one (a listener's, say) is
 * reported as unraisable rather than silently lost. */
void pg_run_keep_error(void) {
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    if (tb && v) PyException_SetTraceback(v, tb);
    if (pg_current_run && !pg_current_run->exc && v) {
        pg_current_run->exc = v;
        v = NULL;
        Py_XDECREF(t);
        Py_XDECREF(tb);
        return;
    }
    PyErr_Restore(t, v, tb);
    PyErr_WriteUnraisable(NULL);
}

int pg_run_failed(void) { return pg_current_run && pg_current_run->exc; }

/* Re-raises the kept exception as is (same object and traceback). */
PyObject *pg_run_reraise(pg_run *r) {
    PyObject *v = r->exc;
    r->exc = NULL;
    PyObject *t = (PyObject *)Py_TYPE(v);
    Py_INCREF(t);
    PyErr_Restore(t, v, PyException_GetTraceback(v));
    return NULL;
}

/* The methods the trampolines call, interned by pg_init_patterns. */
static PyObject *s_match, *s_rewrite, *s_match_and_rewrite, *s_analyze;

/* ---- PatternRewriter / PatternAnalyzer ------------------------------------ */

/* The object, pg_pattern, is in patterns_internal.h: the managers set its
 * args around a run. */

static void free_ops(char **ops) {
    if (!ops) return;
    for (char **o = ops; *o; o++) free(*o);
    free(ops);
}

/* Parses root_layer into a class mask and a NULL-terminated op list.
 * Accepts None, one LayerType / op name, or a set, frozenset, list or tuple
 * of them. -1 with TypeError/ValueError. */
static int parse_root_layer(PyObject *o, uint64_t *classes, char ***ops) {
    *classes = 0;
    *ops = NULL;
    if (o == Py_None) return 0;
    PyObject *seq;
    if (PyUnicode_Check(o) || (PyLong_Check(o) && !PyBool_Check(o))) {
        seq = PyTuple_Pack(1, o);
    } else if (PyAnySet_Check(o) || PyList_Check(o) || PyTuple_Check(o)) {
        seq = PySequence_Tuple(o);
    } else {
        PyErr_Format(PyExc_TypeError,
                     "root_layer must be None, a LayerType, an op name, or a set/list/tuple of them, not %.100s",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    if (!seq) return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(seq), nops = 0;
    char **out = calloc((size_t)n + 1, sizeof *out);
    if (!out) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    uint64_t mask = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PyTuple_GET_ITEM(seq, i);
        if (PyUnicode_Check(it)) { /* an op name: "Add", "gwr::GPTAttention" */
            const char *s = PyUnicode_AsUTF8(it);
            if (!s) goto fail;
            if (!*s) {
                PyErr_SetString(PyExc_ValueError, "root_layer: an op name must not be empty");
                goto fail;
            }
            if (!(out[nops] = strdup(s))) {
                PyErr_NoMemory();
                goto fail;
            }
            nops++;
        } else if (PyLong_Check(it) && !PyBool_Check(it)) {
            gwr_layer_type t;
            if (pg_layer_type_from_py(it, &t) < 0) goto fail;
            if ((unsigned)t >= 64) {
                PyErr_Format(PyExc_ValueError, "root_layer: layer type %d out of range", (int)t);
                goto fail;
            }
            mask |= GWR_ROOT_CLASS(t);
        } else {
            PyErr_Format(PyExc_TypeError, "root_layer items must be gwr.LayerType or op name strings, not %.100s",
                         Py_TYPE(it)->tp_name);
            goto fail;
        }
    }
    Py_DECREF(seq);
    *classes = mask;
    if (nops) *ops = out;
    else free(out);
    return 0;
fail:
    Py_DECREF(seq);
    free_ops(out);
    return -1;
}

static int pattern_setup(pg_pattern *self, PyObject *name, PyObject *root_layer, int separate) {
    if (!PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError, "name must be a str, not %.100s", Py_TYPE(name)->tp_name);
        return -1;
    }
    if (PyUnicode_GET_LENGTH(name) == 0) {
        PyErr_SetString(PyExc_ValueError, "name must not be empty");
        return -1;
    }
    uint64_t classes;
    char **ops;
    if (parse_root_layer(root_layer, &classes, &ops) < 0) return -1;
    free_ops(self->root_ops);
    self->root_ops = ops;
    self->root_classes = classes;
    self->separate = separate;
    Py_INCREF(name);
    Py_XSETREF(self->name, name);
    Py_INCREF(root_layer);
    Py_XSETREF(self->root_layer, root_layer);
    if (!self->args) {
        Py_INCREF(Py_None);
        self->args = Py_None;
    }
    return 0;
}

/* 1 when the class of o defines `method` itself, not PatternRewriter's. */
static int overrides(PyObject *o, const char *method) {
    PyObject *mine = PyObject_GetAttrString((PyObject *)Py_TYPE(o), method);
    PyObject *base = mine ? PyObject_GetAttrString((PyObject *)&pg_PatternRewriter_Type, method) : NULL;
    int r = mine && base ? mine != base : -1;
    Py_XDECREF(mine);
    Py_XDECREF(base);
    return r;
}

static int rewriter_init(PyObject *o, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"name", "root_layer", "separate_match_rewrite", NULL};
    PyObject *name, *root = Py_None, *sep = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OO:PatternRewriter", kwlist, &name, &root, &sep)) return -1;
    int separate;
    if (sep == Py_None) {
        /* Not given: a class that defines match_and_rewrite and no match is
         * a combined pattern (the seed's GPTAttention pass passes nothing,
         * TensorRT-LLM's default being False); any other, separate. */
        int mr = overrides(o, "match_and_rewrite"), m = mr < 0 ? -1 : overrides(o, "match");
        if (mr < 0 || m < 0) return -1;
        separate = !(mr && !m);
    } else {
        separate = PyObject_IsTrue(sep);
        if (separate < 0) return -1;
    }
    return pattern_setup((pg_pattern *)o, name, root, separate);
}

static int analyzer_init(PyObject *o, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"name", "root_layer", NULL};
    PyObject *name, *root;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO:PatternAnalyzer", kwlist, &name, &root)) return -1;
    if (root == Py_None) {
        PyErr_SetString(PyExc_ValueError, "PatternAnalyzer needs a root_layer (layer types and/or op names)");
        return -1;
    }
    return pattern_setup((pg_pattern *)o, name, root, 1);
}

static int pattern_traverse(PyObject *o, visitproc visit, void *arg) {
    pg_pattern *p = (pg_pattern *)o;
    Py_VISIT(p->dict); /* a heap subtype's type is visited by subtype_traverse */
    Py_VISIT(p->name);
    Py_VISIT(p->root_layer);
    Py_VISIT(p->args);
    return 0;
}

static int pattern_clear(PyObject *o) {
    pg_pattern *p = (pg_pattern *)o;
    Py_CLEAR(p->dict);
    Py_CLEAR(p->name);
    Py_CLEAR(p->root_layer);
    Py_CLEAR(p->args);
    return 0;
}

/* For Python subclasses subtype_dealloc calls this and then drops the
 * reference to the heap type itself. */
static void pattern_dealloc(PyObject *o) {
    PyObject_GC_UnTrack(o);
    pattern_clear(o);
    free_ops(((pg_pattern *)o)->root_ops);
    Py_TYPE(o)->tp_free(o);
}

static PyObject *pattern_repr(PyObject *o) {
    pg_pattern *p = (pg_pattern *)o;
    if (!p->name) return PyUnicode_FromFormat("<%s (not initialized)>", Py_TYPE(o)->tp_name);
    return PyUnicode_FromFormat("<%s %R>", Py_TYPE(o)->tp_name, p->name);
}

/* The base classes' methods: NotImplementedError naming the subclass, the
 * method and what a subclass of that kind defines. */
static const char SEPARATE[] = "a PatternRewriter with separate_match_rewrite=True defines match(layer) -> bool "
                               "and rewrite(layer)";
static PyObject *not_defined(PyObject *o, const char *method, const char *what) {
    return PyErr_Format(PyExc_NotImplementedError, "%s.%s is not defined: %s", Py_TYPE(o)->tp_name, method, what);
}
static PyObject *base_match(PyObject *o, PyObject *layer) {
    (void)layer;
    return not_defined(o, "match(layer)", SEPARATE);
}
static PyObject *base_rewrite(PyObject *o, PyObject *layer) {
    (void)layer;
    return not_defined(o, "rewrite(layer)", SEPARATE);
}
static PyObject *base_match_and_rewrite(PyObject *o, PyObject *layer) {
    (void)layer;
    return not_defined(o, "match_and_rewrite(layer)",
                       "a PatternRewriter with separate_match_rewrite=False defines match_and_rewrite(layer) -> bool");
}
static PyObject *base_analyzer_match(PyObject *o, PyObject *layer) {
    (void)o;
    (void)layer;
    Py_RETURN_TRUE;
}
static PyObject *base_analyze(PyObject *o, PyObject *layers) {
    (void)layers;
    return not_defined(o, "analyze(subgraph)", "a PatternAnalyzer defines it");
}

static PyObject *pattern_no_match(PyObject *o, PyObject *reason) {
    PyObject *s = PyObject_Str(reason);
    if (!s) return NULL;
    const char *c = PyUnicode_AsUTF8(s);
    if (!c) {
        Py_DECREF(s);
        return NULL;
    }
    /* Outside a running callback there is nothing to record it on. */
    gwr_rewrite_ctx *ctx = current_ctx(o);
    if (ctx) gwr_rewrite_no_match(ctx, "%s", c);
    Py_DECREF(s);
    Py_RETURN_FALSE;
}

static PyObject *analyzer_add_to_match(PyObject *o, PyObject *layer) {
    gwr_layer *l = pg_layer_get(layer);
    if (!l) return NULL;
    gwr_rewrite_ctx *ctx = current_ctx(o);
    if (!ctx) return pg_raise(GWR_ERR_STATE, "add_to_match() is only valid inside match() of a running analysis");
    gwr_status s = gwr_rewrite_ctx_add_match(ctx, l);
    if (s) return pg_raise(s, "add_to_match failed");
    Py_RETURN_NONE;
}

static PyObject *pattern_get_args(PyObject *o, void *c) {
    (void)c;
    pg_pattern *p = (pg_pattern *)o;
    PyObject *a = p->args ? p->args : Py_None;
    Py_INCREF(a);
    return a;
}
static int pattern_set_args(PyObject *o, PyObject *v, void *c) {
    (void)c;
    if (!v) v = Py_None;
    Py_INCREF(v);
    Py_XSETREF(((pg_pattern *)o)->args, v);
    return 0;
}
static PyObject *pattern_get_name(PyObject *o, void *c) {
    (void)c;
    PyObject *n = ((pg_pattern *)o)->name ? ((pg_pattern *)o)->name : Py_None;
    Py_INCREF(n);
    return n;
}
static PyObject *pattern_get_root(PyObject *o, void *c) {
    (void)c;
    PyObject *n = ((pg_pattern *)o)->root_layer ? ((pg_pattern *)o)->root_layer : Py_None;
    Py_INCREF(n);
    return n;
}
static PyObject *pattern_get_separate(PyObject *o, void *c) {
    (void)c;
    return PyBool_FromLong(((pg_pattern *)o)->separate);
}

static PyGetSetDef pattern_getset[] = {
    {"name", pattern_get_name, NULL, "The pattern's name (used in traces and error messages).", NULL},
    {"root_layer", pattern_get_root, NULL,
     "The root_layer given to __init__: layer types and/or op names the pattern is offered; None = every layer.",
     NULL},
    {"separate_match_rewrite", pattern_get_separate, NULL,
     "True: the manager calls match() then rewrite(); False: match_and_rewrite().", NULL},
    {"args", pattern_get_args, pattern_set_args,
     "The args given to the running manager call (rewrite(net, args)/analyze(net, args)); None otherwise.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef rewriter_methods[] = {
    {"match", base_match, METH_O,
     "match(layer) -> bool\n\nOverride: True when the pattern applies at layer. Must not change the network."},
    {"rewrite", base_rewrite, METH_O,
     "rewrite(layer)\n\nOverride: rewrites the matched subgraph rooted at layer (build new layers, redirect the "
     "old outputs' uses, mark the old layers removed)."},
    {"match_and_rewrite", base_match_and_rewrite, METH_O,
     "match_and_rewrite(layer) -> bool\n\nOverride (separate_match_rewrite=False): rewrites when the pattern "
     "applies and returns True, else returns False without changing the network."},
    {"no_match", pattern_no_match, METH_O,
     "no_match(reason) -> False\n\nRecords why the match failed (seen by traces with failures=True and by "
     "listeners' match_failed) and returns False, so match can end with `return self.no_match('...')`."},
    {NULL, NULL, 0, NULL}};

static PyMethodDef analyzer_methods[] = {
    {"match", base_analyzer_match, METH_O,
     "match(layer) -> bool\n\nOverride: True when the analyzer applies at layer (default: every offered layer). "
     "May call add_to_match(other) to add layers to the matched subgraph."},
    {"analyze", base_analyze, METH_O,
     "analyze(subgraph)\n\nOverride: receives the matched layers as a list, the root first. Must not change the "
     "network."},
    {"add_to_match", analyzer_add_to_match, METH_O,
     "add_to_match(layer)\n\nInside match(): adds layer to the current match; analyze() receives it after the root."},
    {"no_match", pattern_no_match, METH_O,
     "no_match(reason) -> False\n\nRecords why the match failed and returns False."},
    {NULL, NULL, 0, NULL}};

PyTypeObject pg_PatternRewriter_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gwr.PatternRewriter",
    .tp_basicsize = sizeof(pg_pattern),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "PatternRewriter(name, root_layer=None, separate_match_rewrite=None)\n\n"
              "Base class of rewrite patterns written in Python. Subclass it and define match(layer) -> bool and\n"
              "rewrite(layer), or, with separate_match_rewrite=False, match_and_rewrite(layer) -> bool. Left\n"
              "out (None), the flag follows the class: False when it defines match_and_rewrite and no match\n"
              "(the seed's GPTAttention pass passes nothing), else True. The\n"
              "pattern is offered the live layers whose type or op is in root_layer (a set/list of\n"
              "gwr.LayerType and/or op names such as 'Add' or 'gwr::GPTAttention'; None = every layer).\n"
              "Add it to a RewritePatternManager to run it. self.args holds the manager call's args.",
    .tp_new = PyType_GenericNew,
    .tp_init = rewriter_init,
    .tp_dealloc = pattern_dealloc,
    .tp_traverse = pattern_traverse,
    .tp_clear = pattern_clear,
    .tp_repr = pattern_repr,
    .tp_methods = rewriter_methods,
    .tp_getset = pattern_getset,
    .tp_dictoffset = offsetof(pg_pattern, dict),
};

PyTypeObject pg_PatternAnalyzer_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gwr.PatternAnalyzer",
    .tp_basicsize = sizeof(pg_pattern),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "PatternAnalyzer(name, root_layer)\n\n"
              "Base class of analysis patterns written in Python: offered the live layers whose type or op is\n"
              "in root_layer (required), match(layer) -> bool (default True) may add layers with\n"
              "add_to_match(layer), then analyze(subgraph) receives the matched layers, the root first.\n"
              "Analyzers must not change the network. Run them with an AnalysisPatternManager.",
    .tp_new = PyType_GenericNew,
    .tp_init = analyzer_init,
    .tp_dealloc = pattern_dealloc,
    .tp_traverse = pattern_traverse,
    .tp_clear = pattern_clear,
    .tp_repr = pattern_repr,
    .tp_methods = analyzer_methods,
    .tp_getset = pattern_getset,
    .tp_dictoffset = offsetof(pg_pattern, dict),
};

/* ---- trampolines ------------------------------------------------------------ */

/* Fails the running C callback after a Python exception was kept. */
static int tramp_fail(gwr_rewrite_ctx *c, const char *what) {
    return gwr_rewrite_fail(c, GWR_ERR_STATE, "a Python exception in %s stopped the run", what);
}

/* Calls the pattern's method `meth` with arg (a Layer, or a list for
 * analyze) and returns its truth (0/1), or < 0 after keeping the error. */
static int tramp_call(gwr_rewrite_ctx *c, PyObject *meth, PyObject *arg, int want_bool) {
    pg_pattern *p = (pg_pattern *)gwr_rewrite_ctx_user(c);
    Py_INCREF(p);
    pg_cur cur = {g_cur, (PyObject *)p, c};
    g_cur = &cur;
    PyObject *r = PyObject_CallMethodOneArg((PyObject *)p, meth, arg);
    g_cur = cur.prev;
    int t = 0;
    if (!r) t = -1;
    else if (want_bool) t = PyObject_IsTrue(r);
    Py_XDECREF(r);
    Py_DECREF(p);
    if (t < 0) {
        pg_run_keep_error();
        return tramp_fail(c, PyUnicode_AsUTF8(meth));
    }
    return t;
}

/* Common entry: stop when an exception is already kept (a listener's) or a
 * signal is pending (KeyboardInterrupt is honoured between two layers). */
static int tramp_enter(gwr_rewrite_ctx *c) {
    if (pg_run_failed()) return gwr_rewrite_fail(c, GWR_ERR_STATE, "stopped by a Python exception in a listener");
    if (PyErr_CheckSignals() < 0) {
        pg_run_keep_error();
        return gwr_rewrite_fail(c, GWR_ERR_STATE, "interrupted");
    }
    return 0;
}

static int tramp_layer_call(gwr_rewrite_ctx *c, gwr_layer *l, PyObject *meth) {
    int e = tramp_enter(c);
    if (e < 0) return e;
    PyObject *layer = pg_layer_wrap(l);
    if (!layer) {
        pg_run_keep_error();
        return tramp_fail(c, "wrapping the layer");
    }
    int t = tramp_call(c, meth, layer, 1);
    Py_DECREF(layer);
    return t;
}

static int tramp_match(gwr_rewrite_ctx *c, gwr_layer *l) { return tramp_layer_call(c, l, s_match); }
static int tramp_match_and_rewrite(gwr_rewrite_ctx *c, gwr_layer *l) {
    return tramp_layer_call(c, l, s_match_and_rewrite);
}
static gwr_status tramp_rewrite(gwr_rewrite_ctx *c, gwr_layer *l) {
    int e = tramp_enter(c);
    if (e < 0) return (gwr_status)-e;
    PyObject *layer = pg_layer_wrap(l);
    if (!layer) {
        pg_run_keep_error();
        return (gwr_status)-tramp_fail(c, "wrapping the layer");
    }
    int t = tramp_call(c, s_rewrite, layer, 0);
    Py_DECREF(layer);
    return t < 0 ? (gwr_status)-t : GWR_OK;
}
static gwr_status tramp_analyze(gwr_rewrite_ctx *c, gwr_layer *const *layers, int n) {
    int e = tramp_enter(c);
    if (e < 0) return (gwr_status)-e;
    PyObject *list = pg_layer_list(layers, n);
    if (!list) {
        pg_run_keep_error();
        return (gwr_status)-tramp_fail(c, "wrapping the layers");
    }
    int t = tramp_call(c, s_analyze, list, 0);
    Py_DECREF(list);
    return t < 0 ? (gwr_status)-t : GWR_OK;
}

/* The C struct for a Python pattern; strings point into p (the manager
 * copies them). -1 with an exception when p was never initialized. */
int pg_pattern_struct(pg_pattern *p, gwr_pattern_rewriter *rw, gwr_pattern_analyzer *an) {
    if (!p->name) {
        PyErr_Format(PyExc_TypeError, "%s was not initialized: its __init__ must call super().__init__(name, ...)",
                     Py_TYPE(p)->tp_name);
        return -1;
    }
    const char *name = PyUnicode_AsUTF8(p->name);
    if (!name) return -1;
    if (rw) {
        memset(rw, 0, sizeof *rw);
        rw->name = name;
        rw->root_classes = p->root_classes;
        rw->root_ops = (const char *const *)p->root_ops;
        rw->separate_match_rewrite = p->separate;
        if (p->separate) {
            rw->match = tramp_match;
            rw->rewrite = tramp_rewrite;
        } else {
            rw->match_and_rewrite = tramp_match_and_rewrite;
        }
        rw->user = p;
    } else {
        memset(an, 0, sizeof *an);
        an->name = name;
        an->root_classes = p->root_classes;
        an->root_ops = (const char *const *)p->root_ops;
        an->match = tramp_match;
        an->analyze = tramp_analyze;
        an->user = p;
    }
    return 0;
}

/* ---- init ------------------------------------------------------------------ */

/* The pattern side's one entry point: interns the trampolines' method names
 * and the managers' (pg_init_managers), adds the five types, then the
 * gwr.passes helpers and optimize() (pg_init_passes). */
int pg_init_patterns(PyObject *m) {
    struct {
        PyObject **slot;
        const char *s;
    } names[] = {{&s_match, "match"},
                 {&s_rewrite, "rewrite"},
                 {&s_match_and_rewrite, "match_and_rewrite"},
                 {&s_analyze, "analyze"}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!*names[i].slot && !(*names[i].slot = PyUnicode_InternFromString(names[i].s))) return -1;
    if (pg_init_managers() < 0) return -1;
    /* All the pattern side's types, in the module's order. */
    struct {
        PyTypeObject *tp;
        const char *name;
    } types[] = {{&pg_PatternRewriter_Type, "PatternRewriter"},
                 {&pg_PatternAnalyzer_Type, "PatternAnalyzer"},
                 {&pg_BuiltinPattern_Type, "BuiltinPattern"},
                 {&pg_RewritePatternManager_Type, "RewritePatternManager"},
                 {&pg_AnalysisPatternManager_Type, "AnalysisPatternManager"}};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
        if (PyType_Ready(types[i].tp) < 0) return -1;
        Py_INCREF(types[i].tp);
        if (PyModule_AddObject(m, types[i].name, (PyObject *)types[i].tp) < 0) {
            Py_DECREF(types[i].tp);
            return -1;
        }
    }
    return pg_init_passes(m);
}
