/* patterns.c - gwr._gwr's pattern side: PatternRewriter and PatternAnalyzer
 * (C base types that Python subclasses override), RewritePatternManager and
 * AnalysisPatternManager (owning a gwr manager each), BuiltinPattern and the
 * gwr.passes helpers, and optimize().
 *
 * A Python pattern reaches the C manager as a gwr_pattern_rewriter (or
 * _analyzer) whose callbacks are the trampolines below and whose user
 * pointer is the pattern object; the manager's `patterns` dict holds the
 * strong reference. A Python exception raised inside a callback is kept on
 * the running call's pg_run and the callback fails, which stops the C
 * manager; rewrite()/analyze() then re-raise that very exception object. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* open_memstream */
#endif
#include "pygwr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <structmember.h>

/* ---- the running call ------------------------------------------------------ */

/* One rewrite()/analyze() call in progress. Calls nest (a pattern may run
 * another manager on another network), so they form a stack. */
typedef struct pg_run {
    struct pg_run *prev;
    PyObject *exc; /* the first Python exception raised in a callback, with its traceback */
} pg_run;

/* Per thread: another Python thread may run its own manager while one of
 * ours is inside a Python callback (the GIL switches between them). */
static _Thread_local pg_run *g_run;

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
static void run_keep_error(void) {
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    if (tb && v) PyException_SetTraceback(v, tb);
    if (g_run && !g_run->exc && v) {
        g_run->exc = v;
        v = NULL;
        Py_XDECREF(t);
        Py_XDECREF(tb);
        return;
    }
    PyErr_Restore(t, v, tb);
    PyErr_WriteUnraisable(NULL);
}

static int run_failed(void) { return g_run && g_run->exc; }

/* Re-raises the kept exception as is (same object and traceback). */
static PyObject *run_reraise(pg_run *r) {
    PyObject *v = r->exc;
    r->exc = NULL;
    PyObject *t = (PyObject *)Py_TYPE(v);
    Py_INCREF(t);
    PyErr_Restore(t, v, PyException_GetTraceback(v));
    return NULL;
}

static PyObject *s_match, *s_rewrite, *s_match_and_rewrite, *s_analyze, *s_write;
static PyObject *s_layer_added, *s_layer_removed, *s_tensor_replaced, *s_pattern_applied, *s_match_failed;

/* ---- PatternRewriter / PatternAnalyzer ------------------------------------ */

typedef struct {
    PyObject_HEAD
    PyObject *dict;        /* instance __dict__: subclasses keep their state here */
    PyObject *name;        /* str, NULL until __init__ ran */
    PyObject *root_layer;  /* as given (None: every layer) */
    PyObject *args;        /* the running manager call's args, else None */
    uint64_t root_classes;
    char **root_ops;       /* NULL-terminated copies, or NULL */
    int separate;
} pg_pattern;

static PyTypeObject pg_PatternRewriter_Type, pg_PatternAnalyzer_Type, pg_BuiltinPattern_Type;

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

static PyObject *base_match(PyObject *o, PyObject *layer) {
    (void)layer;
    PyErr_Format(PyExc_NotImplementedError,
                 "%s.match(layer) is not defined: a PatternRewriter with separate_match_rewrite=True "
                 "defines match(layer) -> bool and rewrite(layer)",
                 Py_TYPE(o)->tp_name);
    return NULL;
}
static PyObject *base_rewrite(PyObject *o, PyObject *layer) {
    (void)layer;
    PyErr_Format(PyExc_NotImplementedError,
                 "%s.rewrite(layer) is not defined: a PatternRewriter with separate_match_rewrite=True "
                 "defines match(layer) -> bool and rewrite(layer)",
                 Py_TYPE(o)->tp_name);
    return NULL;
}
static PyObject *base_match_and_rewrite(PyObject *o, PyObject *layer) {
    (void)layer;
    PyErr_Format(PyExc_NotImplementedError,
                 "%s.match_and_rewrite(layer) is not defined: a PatternRewriter with "
                 "separate_match_rewrite=False defines match_and_rewrite(layer) -> bool",
                 Py_TYPE(o)->tp_name);
    return NULL;
}
static PyObject *base_analyzer_match(PyObject *o, PyObject *layer) {
    (void)o;
    (void)layer;
    Py_RETURN_TRUE;
}
static PyObject *base_analyze(PyObject *o, PyObject *layers) {
    (void)layers;
    PyErr_Format(PyExc_NotImplementedError, "%s.analyze(subgraph) is not defined: a PatternAnalyzer defines it",
                 Py_TYPE(o)->tp_name);
    return NULL;
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

static PyTypeObject pg_PatternRewriter_Type = {
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

static PyTypeObject pg_PatternAnalyzer_Type = {
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
        run_keep_error();
        return tramp_fail(c, PyUnicode_AsUTF8(meth));
    }
    return t;
}

/* Common entry: stop when an exception is already kept (a listener's) or a
 * signal is pending (KeyboardInterrupt is honoured between two layers). */
static int tramp_enter(gwr_rewrite_ctx *c) {
    if (run_failed()) return gwr_rewrite_fail(c, GWR_ERR_STATE, "stopped by a Python exception in a listener");
    if (PyErr_CheckSignals() < 0) {
        run_keep_error();
        return gwr_rewrite_fail(c, GWR_ERR_STATE, "interrupted");
    }
    return 0;
}

static int tramp_layer_call(gwr_rewrite_ctx *c, gwr_layer *l, PyObject *meth) {
    int e = tramp_enter(c);
    if (e < 0) return e;
    PyObject *layer = pg_layer_wrap(l);
    if (!layer) {
        run_keep_error();
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
        run_keep_error();
        return (gwr_status)-tramp_fail(c, "wrapping the layer");
    }
    int t = tramp_call(c, s_rewrite, layer, 0);
    Py_DECREF(layer);
    return t < 0 ? (gwr_status)-t : GWR_OK;
}
static gwr_status tramp_analyze(gwr_rewrite_ctx *c, gwr_layer *const *layers, int n) {
    int e = tramp_enter(c);
    if (e < 0) return (gwr_status)-e;
    PyObject *list = PyList_New(n);
    if (!list) {
        run_keep_error();
        return (gwr_status)-tramp_fail(c, "analyze");
    }
    for (int i = 0; i < n; i++) {
        PyObject *w = pg_layer_wrap(layers[i]);
        if (!w) {
            Py_DECREF(list);
            run_keep_error();
            return (gwr_status)-tramp_fail(c, "wrapping the layers");
        }
        PyList_SET_ITEM(list, i, w);
    }
    int t = tramp_call(c, s_analyze, list, 0);
    Py_DECREF(list);
    return t < 0 ? (gwr_status)-t : GWR_OK;
}

/* The C struct for a Python pattern; strings point into p (the manager
 * copies them). -1 with an exception when p was never initialized. */
static int pattern_struct(pg_pattern *p, gwr_pattern_rewriter *rw, gwr_pattern_analyzer *an) {
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

/* ---- BuiltinPattern ---------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    const gwr_pass_info *info;
} pg_builtin;

static const gwr_pass_info *find_pass_info(const char *label) {
    for (int i = 0; i < gwr_passes_count(); i++) {
        const gwr_pass_info *pi = gwr_passes_info(i);
        if (pi && !strcmp(pi->label, label)) return pi;
    }
    return NULL;
}

static PyObject *raise_no_pass(const char *label) {
    return pg_raisef(GWR_ERR_NOT_FOUND, "no built-in pass '%s' (gwr.passes.labels() lists them)", label);
}

static PyObject *builtin_get(PyObject *o, void *c) {
    const gwr_pass_info *pi = ((pg_builtin *)o)->info;
    switch ((int)(intptr_t)c) {
    case 0: return PyUnicode_FromString(pi->pattern->name ? pi->pattern->name : pi->label);
    case 1: return PyUnicode_FromString(pi->label);
    case 2: return PyLong_FromLong(pi->benefit);
    default: return PyUnicode_FromString(pi->summary ? pi->summary : "");
    }
}

static PyObject *builtin_repr(PyObject *o) {
    return PyUnicode_FromFormat("<gwr.BuiltinPattern '%s' benefit %d>", ((pg_builtin *)o)->info->label,
                                ((pg_builtin *)o)->info->benefit);
}

static PyGetSetDef builtin_getset[] = {
    {"name", builtin_get, NULL, "The C pattern's name.", (void *)0},
    {"label", builtin_get, NULL, "The pass's label in gwr.passes.", (void *)1},
    {"benefit", builtin_get, NULL, "The pass's default benefit.", (void *)2},
    {"summary", builtin_get, NULL, "One line on what the pass does.", (void *)3},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject pg_BuiltinPattern_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gwr.BuiltinPattern",
    .tp_basicsize = sizeof(pg_builtin),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A built-in C rewrite pattern of the pass table (gwr.passes.get(label)). Add it to a\n"
              "RewritePatternManager like a Python pattern: manager.add(label, gwr.passes.get('fuse_gelu'), 10).",
    .tp_repr = builtin_repr,
    .tp_getset = builtin_getset,
};

static PyObject *builtin_new(const gwr_pass_info *pi) {
    pg_builtin *b = PyObject_New(pg_builtin, &pg_BuiltinPattern_Type);
    if (b) b->info = pi;
    return (PyObject *)b;
}

/* ---- managers ---------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    gwr_rewrite_manager *rm;   /* RewritePatternManager */
    gwr_analysis_manager *am;  /* AnalysisPatternManager */
    PyObject *patterns;        /* dict label -> the object added (holds the C side's user pointers) */
    PyObject *listeners;       /* list of listener objects (the C listeners' ctx) */
    PyObject *trace_out;       /* file-like, or None for sys.stdout; NULL: no trace */
    int trace_fmt, trace_failures;
    int running;
} pg_manager;

static PyTypeObject pg_RewritePatternManager_Type, pg_AnalysisPatternManager_Type;

static int manager_traverse(PyObject *o, visitproc visit, void *arg) {
    pg_manager *m = (pg_manager *)o;
    Py_VISIT(m->patterns);
    Py_VISIT(m->listeners);
    Py_VISIT(m->trace_out);
    return 0;
}

/* Frees the C manager first: it holds borrowed pointers to the patterns and
 * listeners being released. A cleared manager refuses every later call. */
static int manager_clear(PyObject *o) {
    pg_manager *m = (pg_manager *)o;
    if (m->rm) gwr_rewrite_manager_free(m->rm);
    if (m->am) gwr_analysis_manager_free(m->am);
    m->rm = NULL;
    m->am = NULL;
    Py_CLEAR(m->patterns);
    Py_CLEAR(m->listeners);
    Py_CLEAR(m->trace_out);
    return 0;
}

static void manager_dealloc(PyObject *o) {
    PyObject_GC_UnTrack(o);
    manager_clear(o);
    Py_TYPE(o)->tp_free(o);
}

static PyObject *manager_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
    if (PyTuple_GET_SIZE(args) || (kw && PyDict_GET_SIZE(kw))) {
        PyErr_Format(PyExc_TypeError, "%s() takes no arguments", tp->tp_name);
        return NULL;
    }
    pg_manager *m = (pg_manager *)tp->tp_alloc(tp, 0);
    if (!m) return NULL;
    if (!(m->patterns = PyDict_New()) || !(m->listeners = PyList_New(0))) goto fail;
    if (tp == &pg_RewritePatternManager_Type) m->rm = gwr_rewrite_manager_new();
    else m->am = gwr_analysis_manager_new();
    if (!m->rm && !m->am) {
        pg_raise(GWR_ERR_NOMEM, gwr_last_errmsg());
        goto fail;
    }
    return (PyObject *)m;
fail:
    Py_DECREF(m);
    return NULL;
}

static const char *manager_errmsg(pg_manager *m) {
    return m->rm ? gwr_rewrite_manager_errmsg(m->rm) : gwr_analysis_manager_errmsg(m->am);
}

/* Refuses calls on a cleared manager and, when `what` is given, calls made
 * while it runs (from one of its own patterns). */
static int manager_check(pg_manager *m, const char *what) {
    if (!m->rm && !m->am) {
        pg_raise(GWR_ERR_STATE, "the manager was cleared by the garbage collector");
        return -1;
    }
    if (what && m->running) {
        pg_raisef(GWR_ERR_STATE,
                  "%s.%s: the manager is running (called from inside one of its own patterns, or from another "
                  "thread)",
                  Py_TYPE(m)->tp_name, what);
        return -1;
    }
    return 0;
}

static PyObject *manager_add(PyObject *o, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"label", "pattern", "benefit", NULL};
    pg_manager *m = (pg_manager *)o;
    const char *label;
    PyObject *label_obj, *pat;
    int benefit = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "UO|i:add", kwlist, &label_obj, &pat, &benefit)) return NULL;
    if (manager_check(m, "add") < 0) return NULL;
    if (!(label = PyUnicode_AsUTF8(label_obj))) return NULL;
    if (!*label) {
        PyErr_SetString(PyExc_ValueError, "add: the label must not be empty");
        return NULL;
    }
    gwr_status s;
    if (m->rm) {
        gwr_pattern_rewriter rw;
        if (Py_IS_TYPE(pat, &pg_BuiltinPattern_Type)) {
            rw = *((pg_builtin *)pat)->info->pattern;
        } else if (PyObject_TypeCheck(pat, &pg_PatternRewriter_Type)) {
            if (pattern_struct((pg_pattern *)pat, &rw, NULL) < 0) return NULL;
        } else {
            PyErr_Format(PyExc_TypeError,
                         "RewritePatternManager.add: pattern must be a gwr.PatternRewriter (subclass) instance or "
                         "a gwr.passes.get() BuiltinPattern, not %.100s",
                         Py_TYPE(pat)->tp_name);
            return NULL;
        }
        s = gwr_rewrite_manager_add(m->rm, label, &rw, benefit);
    } else {
        gwr_pattern_analyzer an;
        if (!PyObject_TypeCheck(pat, &pg_PatternAnalyzer_Type)) {
            PyErr_Format(PyExc_TypeError,
                         "AnalysisPatternManager.add: pattern must be a gwr.PatternAnalyzer (subclass) instance, "
                         "not %.100s",
                         Py_TYPE(pat)->tp_name);
            return NULL;
        }
        if (pattern_struct((pg_pattern *)pat, NULL, &an) < 0) return NULL;
        s = gwr_analysis_manager_add(m->am, label, &an, benefit);
    }
    if (s) return pg_raise(s, manager_errmsg(m));
    if (PyDict_SetItem(m->patterns, label_obj, pat) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *manager_add_builtin(PyObject *o, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"label", "benefit", NULL};
    pg_manager *m = (pg_manager *)o;
    PyObject *label_obj, *bobj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "U|O:add_builtin", kwlist, &label_obj, &bobj)) return NULL;
    if (manager_check(m, "add_builtin") < 0) return NULL;
    const char *label = PyUnicode_AsUTF8(label_obj);
    if (!label) return NULL;
    const gwr_pass_info *pi = find_pass_info(label);
    if (!pi) return raise_no_pass(label);
    int benefit = pi->benefit;
    if (bobj != Py_None) {
        long v = PyLong_AsLong(bobj);
        if (v == -1 && PyErr_Occurred()) return NULL;
        if (v < INT32_MIN || v > INT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "add_builtin: benefit out of range");
            return NULL;
        }
        benefit = (int)v;
    }
    gwr_status s = gwr_rewrite_manager_add(m->rm, label, pi->pattern, benefit);
    if (s) return pg_raise(s, manager_errmsg(m));
    PyObject *b = builtin_new(pi);
    if (!b) return NULL;
    int r = PyDict_SetItem(m->patterns, label_obj, b);
    Py_DECREF(b);
    if (r < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *manager_get(PyObject *o, PyObject *label) {
    pg_manager *m = (pg_manager *)o;
    if (!PyUnicode_Check(label)) {
        PyErr_Format(PyExc_TypeError, "get: label must be a str, not %.100s", Py_TYPE(label)->tp_name);
        return NULL;
    }
    if (!m->patterns) Py_RETURN_NONE;
    PyObject *p = PyDict_GetItemWithError(m->patterns, label);
    if (!p) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    Py_INCREF(p);
    return p;
}

static int manager_count(pg_manager *m) {
    return m->rm ? gwr_rewrite_manager_count(m->rm) : m->am ? gwr_analysis_manager_count(m->am) : 0;
}
static const char *manager_label(pg_manager *m, int i) {
    return m->rm ? gwr_rewrite_manager_label(m->rm, i) : gwr_analysis_manager_label(m->am, i);
}

static PyObject *manager_labels(PyObject *o, void *c) {
    (void)c;
    pg_manager *m = (pg_manager *)o;
    int n = manager_count(m);
    PyObject *l = PyList_New(n);
    if (!l) return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *s = PyUnicode_FromString(manager_label(m, i));
        if (!s) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, s);
    }
    return l;
}

static PyObject *manager_benefits(PyObject *o, void *c) {
    (void)c;
    pg_manager *m = (pg_manager *)o;
    int n = manager_count(m);
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *v = PyLong_FromLong(gwr_rewrite_manager_benefit(m->rm, i));
        int r = v ? PyDict_SetItemString(d, manager_label(m, i), v) : -1;
        Py_XDECREF(v);
        if (r < 0) {
            Py_DECREF(d);
            return NULL;
        }
    }
    return d;
}

static PyObject *manager_len_getter(pg_manager *m) { return PyLong_FromLong(manager_count(m)); }

static Py_ssize_t manager_len(PyObject *o) { return manager_count((pg_manager *)o); }

static int dict_set_steal(PyObject *d, const char *k, PyObject *v) {
    if (!v) return -1;
    int r = PyDict_SetItemString(d, k, v);
    Py_DECREF(v);
    return r;
}

static PyObject *manager_stats(PyObject *o, PyObject *unused) {
    (void)unused;
    pg_manager *m = (pg_manager *)o;
    if (manager_check(m, NULL) < 0) return NULL;
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    int n = manager_count(m);
    for (int i = 0; i < n; i++) {
        gwr_pattern_stats st;
        gwr_status s = m->rm ? gwr_rewrite_manager_stats(m->rm, i, &st) : gwr_analysis_manager_stats(m->am, i, &st);
        if (s) {
            Py_DECREF(d);
            return pg_raise(s, manager_errmsg(m));
        }
        PyObject *e = PyDict_New();
        if (!e || dict_set_steal(e, "attempts", PyLong_FromLongLong(st.attempts)) < 0 ||
            dict_set_steal(e, "matches", PyLong_FromLongLong(st.matches)) < 0 ||
            dict_set_steal(e, "rewrites", PyLong_FromLongLong(st.rewrites)) < 0 ||
            dict_set_steal(e, "seconds", PyFloat_FromDouble(st.seconds)) < 0 ||
            dict_set_steal(d, manager_label(m, i), e) < 0) {
            Py_DECREF(d);
            return NULL;
        }
    }
    return d;
}

static PyObject *summary_dict(pg_manager *m) {
    gwr_rewrite_summary su;
    gwr_status s = gwr_rewrite_manager_summary(m->rm, &su);
    if (s) return pg_raise(s, manager_errmsg(m));
    PyObject *d = PyDict_New();
    if (!d || dict_set_steal(d, "visited", PyLong_FromLongLong(su.visited)) < 0 ||
        dict_set_steal(d, "rewrites", PyLong_FromLongLong(su.rewrites)) < 0 ||
        dict_set_steal(d, "layers_before", PyLong_FromLongLong(su.layers_before)) < 0 ||
        dict_set_steal(d, "layers_after", PyLong_FromLongLong(su.layers_after)) < 0 ||
        dict_set_steal(d, "pruned", PyLong_FromLongLong(su.pruned)) < 0 ||
        dict_set_steal(d, "converged", PyBool_FromLong(su.converged)) < 0 ||
        dict_set_steal(d, "seconds", PyFloat_FromDouble(su.seconds)) < 0) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

static PyObject *manager_summary(PyObject *o, PyObject *unused) {
    (void)unused;
    pg_manager *m = (pg_manager *)o;
    if (manager_check(m, NULL) < 0) return NULL;
    return summary_dict(m);
}

/* Writes text to file (None: sys.stdout) through its write method. */
static int write_text(PyObject *file, const char *buf, size_t len) {
    if (!len) return 0;
    PyObject *f = file;
    if (!f || f == Py_None) {
        f = PySys_GetObject("stdout"); /* borrowed */
        if (!f || f == Py_None) return 0; /* no stdout (pythonw): nothing to write to */
    }
    PyObject *s = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)len, "replace");
    if (!s) return -1;
    PyObject *r = PyObject_CallMethodObjArgs(f, s_write, s, NULL);
    Py_DECREF(s);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

static PyObject *manager_print_stats(PyObject *o, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"file", NULL};
    pg_manager *m = (pg_manager *)o;
    PyObject *file = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:print_stats", kwlist, &file)) return NULL;
    if (manager_check(m, NULL) < 0) return NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return PyErr_NoMemory();
    gwr_rewrite_manager_print_stats(m->rm, f);
    fclose(f);
    int r = write_text(file, buf, len);
    free(buf);
    if (r < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *manager_trace(PyObject *o, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"out", "format", "failures", NULL};
    pg_manager *m = (pg_manager *)o;
    PyObject *out = Py_None;
    const char *fmt = "text";
    int failures = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|Osp:trace", kwlist, &out, &fmt, &failures)) return NULL;
    if (manager_check(m, "trace") < 0) return NULL;
    int f;
    if (!strcmp(fmt, "text")) f = GWR_TRACE_TEXT;
    else if (!strcmp(fmt, "json")) f = GWR_TRACE_JSON;
    else {
        PyErr_Format(PyExc_ValueError, "trace: format must be 'text' or 'json', not '%s'", fmt);
        return NULL;
    }
    if (out != Py_None && !PyObject_HasAttrString(out, "write")) {
        PyErr_Format(PyExc_TypeError, "trace: out must have a write() method (a file-like), not %.100s",
                     Py_TYPE(out)->tp_name);
        return NULL;
    }
    Py_INCREF(out);
    Py_XSETREF(m->trace_out, out);
    m->trace_fmt = f;
    m->trace_failures = failures;
    Py_RETURN_NONE;
}

static PyObject *manager_stop_trace(PyObject *o, PyObject *unused) {
    (void)unused;
    Py_CLEAR(((pg_manager *)o)->trace_out);
    Py_RETURN_NONE;
}

/* ---- listeners ---- */

static void listen_call(void *ctx, PyObject *meth, PyObject *a, PyObject *b, PyObject *c) {
    if (!a || (b == NULL && c != NULL)) goto err; /* a conversion failed */
    if (run_failed()) goto done; /* already stopping: no more events */
    {
        PyObject *r = c ? PyObject_CallMethodObjArgs((PyObject *)ctx, meth, a, b, c, NULL)
                      : b ? PyObject_CallMethodObjArgs((PyObject *)ctx, meth, a, b, NULL)
                          : PyObject_CallMethodObjArgs((PyObject *)ctx, meth, a, NULL);
        if (!r) goto err;
        Py_DECREF(r);
    }
    goto done;
err:
    if (PyErr_Occurred()) run_keep_error();
done:
    Py_XDECREF(a);
    Py_XDECREF(b);
    Py_XDECREF(c);
}

static void on_layer_added(void *ctx, const char *label, gwr_layer *l) {
    PyObject *s = PyUnicode_FromString(label);
    listen_call(ctx, s_layer_added, s, s ? pg_layer_wrap(l) : NULL, NULL);
}
static void on_layer_removed(void *ctx, const char *label, gwr_layer *l) {
    PyObject *s = PyUnicode_FromString(label);
    listen_call(ctx, s_layer_removed, s, s ? pg_layer_wrap(l) : NULL, NULL);
}
static void on_tensor_replaced(void *ctx, const char *label, gwr_tensor *a, gwr_tensor *b) {
    PyObject *s = PyUnicode_FromString(label);
    PyObject *ta = s ? pg_tensor_wrap(a) : NULL;
    PyObject *tb = ta ? pg_tensor_wrap(b) : NULL;
    if (ta && !tb) {
        Py_CLEAR(ta);
    }
    listen_call(ctx, s_tensor_replaced, s, ta, tb);
}
static void on_match_failed(void *ctx, const char *label, gwr_layer *root, const char *reason) {
    PyObject *s = PyUnicode_FromString(label);
    PyObject *l = s ? pg_layer_wrap(root) : NULL;
    PyObject *r = l ? PyUnicode_DecodeUTF8(reason, (Py_ssize_t)strlen(reason), "replace") : NULL;
    if (l && !r) Py_CLEAR(l);
    listen_call(ctx, s_match_failed, s, l, r);
}

static PyObject *layer_list(gwr_layer *const *ls, int64_t n) {
    PyObject *l = PyList_New((Py_ssize_t)n);
    if (!l) return NULL;
    for (int64_t i = 0; i < n; i++) {
        PyObject *w = pg_layer_wrap(ls[i]);
        if (!w) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)i, w);
    }
    return l;
}

static void on_pattern_applied(void *ctx, const gwr_rewrite_event *e) {
    PyObject *d = PyDict_New();
    if (!d || dict_set_steal(d, "seq", PyLong_FromLongLong(e->seq)) < 0 ||
        dict_set_steal(d, "label", PyUnicode_FromString(e->label)) < 0 ||
        dict_set_steal(d, "pattern", PyUnicode_FromString(e->pattern)) < 0 ||
        dict_set_steal(d, "root", pg_layer_wrap(e->root)) < 0 ||
        dict_set_steal(d, "added", layer_list(e->added, e->nadded)) < 0 ||
        dict_set_steal(d, "removed", layer_list(e->removed, e->nremoved)) < 0 ||
        dict_set_steal(d, "replaced", PyLong_FromLongLong(e->nreplaced)) < 0 ||
        dict_set_steal(d, "modified", PyLong_FromLongLong(e->nmodified)) < 0) {
        Py_CLEAR(d);
    }
    listen_call(ctx, s_pattern_applied, d, NULL, NULL);
}

static PyObject *manager_add_listener(PyObject *o, PyObject *obj) {
    pg_manager *m = (pg_manager *)o;
    if (manager_check(m, "add_listener") < 0) return NULL;
    gwr_rewrite_listener ls;
    memset(&ls, 0, sizeof ls);
    /* Only the methods obj has become callbacks (match_failed reasons are
     * formatted only when someone listens). */
    int any = 0;
#define HAS(name, field, fn)                                   \
    do {                                                       \
        int h = PyObject_HasAttrString(obj, name);             \
        if (h) {                                               \
            ls.field = fn;                                     \
            any = 1;                                           \
        }                                                      \
    } while (0)
    HAS("layer_added", layer_added, on_layer_added);
    HAS("layer_removed", layer_removed, on_layer_removed);
    HAS("tensor_replaced", tensor_replaced, on_tensor_replaced);
    HAS("pattern_applied", pattern_applied, on_pattern_applied);
    HAS("match_failed", match_failed, on_match_failed);
#undef HAS
    if (!any) {
        PyErr_Format(PyExc_TypeError,
                     "add_listener: %.100s has none of layer_added, layer_removed, tensor_replaced, "
                     "pattern_applied, match_failed",
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    ls.ctx = obj;
    if (PyList_Append(m->listeners, obj) < 0) return NULL;
    if (gwr_rewrite_manager_add_listener(m->rm, &ls) < 0) {
        /* keep the list in step: drop the object just appended */
        PySequence_DelItem(m->listeners, PyList_GET_SIZE(m->listeners) - 1);
        return pg_raise(GWR_ERR_INVALID_ARG, manager_errmsg(m));
    }
    Py_RETURN_NONE;
}

/* ---- running ---- */

/* Sets `args` on every Python pattern of m, returning the previous values
 * (a list in dict order) to restore, or NULL on error. */
static PyObject *patterns_set_args(pg_manager *m, PyObject *args) {
    PyObject *saved = PyList_New(0);
    if (!saved) return NULL;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(m->patterns, &pos, &k, &v)) {
        PyObject *prev = Py_None;
        if (PyObject_TypeCheck(v, &pg_PatternRewriter_Type) || PyObject_TypeCheck(v, &pg_PatternAnalyzer_Type)) {
            pg_pattern *p = (pg_pattern *)v;
            prev = p->args;
            if (!prev) { /* cleared by the collector: nothing owned to move */
                prev = Py_None;
                Py_INCREF(prev);
            }
            Py_INCREF(args);
            p->args = args; /* the reference to prev moves into `saved` below */
        } else {
            Py_INCREF(prev);
        }
        int r = PyList_Append(saved, prev);
        Py_DECREF(prev);
        if (r < 0) {
            Py_DECREF(saved);
            return NULL;
        }
    }
    return saved;
}

static void patterns_restore_args(pg_manager *m, PyObject *saved) {
    Py_ssize_t pos = 0, i = 0;
    PyObject *k, *v;
    while (PyDict_Next(m->patterns, &pos, &k, &v) && i < PyList_GET_SIZE(saved)) {
        PyObject *prev = PyList_GET_ITEM(saved, i++);
        if (PyObject_TypeCheck(v, &pg_PatternRewriter_Type) || PyObject_TypeCheck(v, &pg_PatternAnalyzer_Type)) {
            Py_INCREF(prev);
            Py_XSETREF(((pg_pattern *)v)->args, prev);
        }
    }
}

static int parse_options(PyObject *kw, gwr_rewrite_options *o) {
    memset(o, 0, sizeof *o);
    if (!kw) return 0;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(kw, &pos, &k, &v)) {
        const char *n = PyUnicode_AsUTF8(k);
        if (!n) return -1;
        if (!strcmp(n, "max_rewrites") || !strcmp(n, "shuffle_seed")) {
            if (!PyLong_Check(v) || PyBool_Check(v)) {
                PyErr_Format(PyExc_TypeError, "rewrite: %s must be an int", n);
                return -1;
            }
            if (n[0] == 'm') {
                long long x = PyLong_AsLongLong(v);
                if (x == -1 && PyErr_Occurred()) return -1;
                o->max_rewrites = x;
            } else {
                unsigned long long x = PyLong_AsUnsignedLongLong(v);
                if (x == (unsigned long long)-1 && PyErr_Occurred()) return -1;
                o->shuffle_seed = x;
            }
            continue;
        }
        int *flag = !strcmp(n, "single_pass")     ? &o->single_pass
                    : !strcmp(n, "keep_dead")     ? &o->keep_dead
                    : !strcmp(n, "debug")         ? &o->debug
                    : !strcmp(n, "time_patterns") ? &o->time_patterns
                    : !strcmp(n, "full_rescan")   ? &o->full_rescan
                                                  : NULL;
        if (!flag) {
            PyErr_Format(PyExc_TypeError,
                         "rewrite: unknown option '%s' (single_pass, max_rewrites, keep_dead, debug, shuffle_seed, "
                         "time_patterns, full_rescan)",
                         n);
            return -1;
        }
        int t = PyObject_IsTrue(v);
        if (t < 0) return -1;
        *flag = t;
    }
    return 0;
}

/* The manager's interrupt hook (every 1024 layers): Ctrl-C stops a run
 * of built-in patterns too, and so does an exception a listener kept. */
static int run_interrupt(void *ctx) {
    (void)ctx;
    if (run_failed()) return 1;
    if (PyErr_CheckSignals() < 0) {
        run_keep_error();
        return 1;
    }
    return 0;
}

/* The shared body of rewrite() and analyze(). */
static PyObject *manager_run(pg_manager *m, PyObject *netobj, PyObject *args, PyObject *kw, const char *what) {
    if (manager_check(m, what) < 0) return NULL;
    gwr_rewrite_options opt;
    if (parse_options(kw, &opt) < 0) return NULL;
    opt.interrupt = run_interrupt;
    gwr_network *net = pg_network_get(netobj);
    if (!net) return NULL;
    /* Built-in patterns read the C args; a dict with values C cannot hold
     * (any Python object is fine for Python patterns) gives them none. */
    gwr_args *cargs = NULL;
    if (args != Py_None) {
        cargs = pg_args_from_dict(args);
        if (!cargs) PyErr_Clear();
    }
    PyObject *saved = patterns_set_args(m, args);
    if (!saved) {
        gwr_args_free(cargs);
        return NULL;
    }
    if (pg_push_network(netobj) < 0) {
        patterns_restore_args(m, saved);
        Py_DECREF(saved);
        gwr_args_free(cargs);
        return NULL;
    }
    pg_network_busy(netobj, +1);
    Py_INCREF(m);
    Py_INCREF(netobj);

    char *tbuf = NULL;
    size_t tlen = 0;
    FILE *tf = NULL;
    int tid = -1;
    gwr_status s = GWR_OK;
    PyObject *trace_out = NULL;
    if (m->rm) {
        s = gwr_rewrite_manager_set_options(m->rm, &opt);
        if (!s && m->trace_out) {
            if (!(tf = open_memstream(&tbuf, &tlen))) s = GWR_ERR_NOMEM;
            else if ((tid = gwr_rewrite_manager_trace(m->rm, tf, (gwr_trace_format)m->trace_fmt,
                                                      m->trace_failures)) < 0)
                s = GWR_ERR_NOMEM;
            trace_out = m->trace_out;
            Py_INCREF(trace_out);
        }
    }
    pg_run run = {g_run, NULL};
    if (!s) {
        g_run = &run;
        m->running = 1;
        s = m->rm ? gwr_rewrite_manager_rewrite(m->rm, net, cargs) : gwr_analysis_manager_analyze(m->am, net, cargs);
        m->running = 0;
        g_run = run.prev;
    }
    int werr = 0;
    if (tid >= 0) gwr_rewrite_manager_remove_listener(m->rm, tid);
    if (tf) {
        fclose(tf);
        werr = write_text(trace_out, tbuf, tlen);
        free(tbuf);
    }
    Py_XDECREF(trace_out);
    pg_network_busy(netobj, -1);
    pg_pop_network();
    patterns_restore_args(m, saved);
    Py_DECREF(saved);
    gwr_args_free(cargs);

    PyObject *result = NULL;
    if (run.exc) {
        if (werr) PyErr_Clear();
        run_reraise(&run);
    } else if (werr) {
        /* the trace's file failed: its exception is set */
    } else if (s) {
        pg_raise(s, manager_errmsg(m));
    } else if (m->rm) {
        result = summary_dict(m);
    } else {
        result = Py_None;
        Py_INCREF(result);
    }
    Py_DECREF(netobj);
    Py_DECREF(m);
    return result;
}

static PyObject *rm_rewrite(PyObject *o, PyObject *args, PyObject *kw) {
    PyObject *net = NULL, *a = Py_None;
    if (!PyArg_ParseTuple(args, "|OO:rewrite", &net, &a)) return NULL;
    /* `net` and `args` may also come by keyword; the rest of kw are options. */
    PyObject *opts = NULL;
    if (kw) {
        if (!(opts = PyDict_Copy(kw))) return NULL;
        PyObject *kn = PyDict_GetItemString(opts, "net");
        if (kn) {
            if (net) {
                Py_DECREF(opts);
                PyErr_SetString(PyExc_TypeError, "rewrite: net given twice");
                return NULL;
            }
            net = kn; /* kept alive by kw */
            PyDict_DelItemString(opts, "net");
        }
        PyObject *ka = PyDict_GetItemString(opts, "args");
        if (ka) {
            if (PyTuple_GET_SIZE(args) > 1) {
                Py_DECREF(opts);
                PyErr_SetString(PyExc_TypeError, "rewrite: args given twice");
                return NULL;
            }
            a = ka;
            Py_INCREF(a);
            PyDict_DelItemString(opts, "args");
        } else {
            Py_INCREF(a);
        }
    } else {
        Py_INCREF(a);
    }
    if (!net) {
        Py_DECREF(a);
        Py_XDECREF(opts);
        PyErr_SetString(PyExc_TypeError, "rewrite() missing the network (rewrite(net, args=None, **options))");
        return NULL;
    }
    PyObject *r = manager_run((pg_manager *)o, net, a, opts, "rewrite");
    Py_DECREF(a);
    Py_XDECREF(opts);
    return r;
}

static PyObject *am_analyze(PyObject *o, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"net", "args", NULL};
    PyObject *net, *a = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:analyze", kwlist, &net, &a)) return NULL;
    return manager_run((pg_manager *)o, net, a, NULL, "analyze");
}

static PyObject *manager_repr(PyObject *o) {
    return PyUnicode_FromFormat("<%s: %d patterns>", Py_TYPE(o)->tp_name, manager_count((pg_manager *)o));
}

static PyObject *manager_count_get(PyObject *o, void *c) {
    (void)c;
    return manager_len_getter((pg_manager *)o);
}

static PyGetSetDef rm_getset[] = {
    {"labels", manager_labels, NULL, "The labels in the order the patterns are tried (benefit, then insertion).",
     NULL},
    {"benefits", manager_benefits, NULL, "A dict label -> benefit, in try order.", NULL},
    {"count", manager_count_get, NULL, "The number of patterns.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyGetSetDef am_getset[] = {
    {"labels", manager_labels, NULL, "The labels in the order the analyzers are tried.", NULL},
    {"count", manager_count_get, NULL, "The number of analyzers.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef rm_methods[] = {
    {"add", (PyCFunction)(void (*)(void))manager_add, METH_VARARGS | METH_KEYWORDS,
     "add(label, pattern, benefit=0)\n\nAdds a PatternRewriter (subclass) instance or a BuiltinPattern under "
     "label. Higher benefit is tried first, equal benefits in the order added. A taken label raises "
     "DuplicateError. The manager keeps a reference to the pattern."},
    {"add_builtin", (PyCFunction)(void (*)(void))manager_add_builtin, METH_VARARGS | METH_KEYWORDS,
     "add_builtin(label, benefit=None)\n\nAdds the built-in pass `label` (gwr.passes.labels()) under its own "
     "label, with its default benefit unless one is given. Unknown labels raise NotFoundError."},
    {"get", manager_get, METH_O,
     "get(label) -> pattern or None\n\nThe object added under label (a pattern or BuiltinPattern), or None when "
     "no pattern has that label."},
    {"rewrite", (PyCFunction)(void (*)(void))rm_rewrite, METH_VARARGS | METH_KEYWORDS,
     "rewrite(net, args=None, **options) -> dict\n\nApplies the patterns to net until none matches. Every "
     "Python pattern sees args as self.args during the run; built-in patterns get args converted to C (when a "
     "value cannot be converted they get none). Options: single_pass, max_rewrites, keep_dead, debug, "
     "shuffle_seed, time_patterns, full_rescan. Returns the summary (visited, rewrites, layers_before, "
     "layers_after, pruned, converged, seconds). A Python exception raised by a pattern or listener stops the "
     "run and is re-raised as is; the network still verifies (it holds the rewrites done before). Fails with "
     "NotConvergedError past max_rewrites, StateError when called from inside its own run."},
    {"stats", manager_stats, METH_NOARGS,
     "stats() -> dict\n\n{label: {'attempts', 'matches', 'rewrites', 'seconds'}} of the last run "
     "(seconds with time_patterns=True)."},
    {"summary", manager_summary, METH_NOARGS, "summary() -> dict\n\nThe totals of the last run, as rewrite() returns."},
    {"print_stats", (PyCFunction)(void (*)(void))manager_print_stats, METH_VARARGS | METH_KEYWORDS,
     "print_stats(file=None)\n\nWrites the statistics table of the last run to file (default sys.stdout)."},
    {"trace", (PyCFunction)(void (*)(void))manager_trace, METH_VARARGS | METH_KEYWORDS,
     "trace(out=None, format='text', failures=False)\n\nTraces every later rewrite(): one line per rewrite "
     "('text', or 'json' lines), and with failures=True the failed matches with their reasons, written to out "
     "(a file-like; None = sys.stdout) when each rewrite() returns. A later call replaces the trace."},
    {"stop_trace", manager_stop_trace, METH_NOARGS, "stop_trace()\n\nStops the trace set by trace()."},
    {"add_listener", manager_add_listener, METH_O,
     "add_listener(obj)\n\nCalls obj's methods, those it has of: layer_added(label, layer), "
     "layer_removed(label, layer), tensor_replaced(label, old, new), pattern_applied(event) (a dict: seq, label, "
     "pattern, root, added, removed, replaced, modified), match_failed(label, layer, reason). Layers given to "
     "a callback are alive during it; the removed ones are pruned when the run ends (keep their names, not the "
     "Layer objects). An exception raised in a listener cannot undo the change it reports: it stops the run at "
     "the next pattern call and is re-raised by rewrite()."},
    {NULL, NULL, 0, NULL}};

static PyMethodDef am_methods[] = {
    {"add", (PyCFunction)(void (*)(void))manager_add, METH_VARARGS | METH_KEYWORDS,
     "add(label, analyzer, benefit=0)\n\nAdds a PatternAnalyzer (subclass) instance under label (DuplicateError "
     "for a taken label)."},
    {"get", manager_get, METH_O, "get(label) -> analyzer or None\n\nThe analyzer added under label, or None."},
    {"analyze", (PyCFunction)(void (*)(void))am_analyze, METH_VARARGS | METH_KEYWORDS,
     "analyze(net, args=None)\n\nOffers every live layer, in network order, to the analyzers rooted on it and "
     "calls analyze(subgraph) on each match. self.args is args during the run. A Python exception stops the run "
     "and is re-raised as is; an analyzer that changes the network fails with StateError."},
    {"stats", manager_stats, METH_NOARGS,
     "stats() -> dict\n\n{label: {'attempts', 'matches', 'rewrites', 'seconds'}} of the last run."},
    {NULL, NULL, 0, NULL}};

static PySequenceMethods manager_as_seq = {.sq_length = manager_len};

static PyTypeObject pg_RewritePatternManager_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gwr.RewritePatternManager",
    .tp_basicsize = sizeof(pg_manager),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "RewritePatternManager()\n\nHolds rewrite patterns by label and benefit and applies them to a "
              "network (rewrite()).\nPatterns: PatternRewriter subclass instances, or built-in passes "
              "(add_builtin, gwr.passes.get).",
    .tp_new = manager_new,
    .tp_dealloc = manager_dealloc,
    .tp_traverse = manager_traverse,
    .tp_clear = manager_clear,
    .tp_repr = manager_repr,
    .tp_methods = rm_methods,
    .tp_getset = rm_getset,
    .tp_as_sequence = &manager_as_seq,
};

static PyTypeObject pg_AnalysisPatternManager_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gwr.AnalysisPatternManager",
    .tp_basicsize = sizeof(pg_manager),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "AnalysisPatternManager()\n\nHolds analysis patterns (PatternAnalyzer subclass instances) by label "
              "and benefit and runs them over a network (analyze()).",
    .tp_new = manager_new,
    .tp_dealloc = manager_dealloc,
    .tp_traverse = manager_traverse,
    .tp_clear = manager_clear,
    .tp_repr = manager_repr,
    .tp_methods = am_methods,
    .tp_getset = am_getset,
    .tp_as_sequence = &manager_as_seq,
};

/* ---- gwr.passes helpers and optimize ----------------------------------------- */

static PyObject *passes_labels(PyObject *mod, PyObject *unused) {
    (void)mod;
    (void)unused;
    int n = gwr_passes_count();
    PyObject *l = PyList_New(n);
    if (!l) return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *s = PyUnicode_FromString(gwr_passes_label(i));
        if (!s) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, s);
    }
    return l;
}

static const struct {
    unsigned bit;
    const char *name;
} target_names[] = {{GWR_TARGET_ONNX, "onnx"}, {GWR_TARGET_ORT, "ort"}, {GWR_TARGET_GWR, "gwr"}};

static PyObject *passes_info(PyObject *mod, PyObject *label) {
    (void)mod;
    const char *s = PyUnicode_Check(label) ? PyUnicode_AsUTF8(label) : NULL;
    if (!s) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "label must be a str");
        return NULL;
    }
    const gwr_pass_info *pi = find_pass_info(s);
    if (!pi) return raise_no_pass(s);
    static const char *numerics[] = {"exact", "approx", "changes"};
    PyObject *targets = PyList_New(0);
    if (!targets) return NULL;
    for (size_t i = 0; i < sizeof target_names / sizeof *target_names; i++) {
        if (!(pi->targets & target_names[i].bit)) continue;
        PyObject *t = PyUnicode_FromString(target_names[i].name);
        int r = t ? PyList_Append(targets, t) : -1;
        Py_XDECREF(t);
        if (r < 0) {
            Py_DECREF(targets);
            return NULL;
        }
    }
    PyObject *d = PyDict_New();
    if (!d || dict_set_steal(d, "label", PyUnicode_FromString(pi->label)) < 0 ||
        dict_set_steal(d, "summary", PyUnicode_FromString(pi->summary ? pi->summary : "")) < 0 ||
        dict_set_steal(d, "benefit", PyLong_FromLong(pi->benefit)) < 0 ||
        dict_set_steal(d, "level", PyUnicode_FromString(gwr_pass_level_name(pi->level))) < 0 ||
        dict_set_steal(d, "targets", targets) < 0 ||
        dict_set_steal(d, "numerics",
                       PyUnicode_FromString((unsigned)pi->numerics < 3 ? numerics[pi->numerics] : "?")) < 0 ||
        dict_set_steal(d, "tolerance", PyFloat_FromDouble(pi->tolerance)) < 0) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

static PyObject *passes_get(PyObject *mod, PyObject *label) {
    (void)mod;
    const char *s = PyUnicode_Check(label) ? PyUnicode_AsUTF8(label) : NULL;
    if (!s) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "label must be a str");
        return NULL;
    }
    const gwr_pass_info *pi = find_pass_info(s);
    if (!pi) return raise_no_pass(s);
    return builtin_new(pi);
}

/* "a,b" from a str or a list/tuple of str; *out is NULL for None. The
 * caller frees *out with PyMem_Free. */
static int label_list(PyObject *o, const char *what, char **out) {
    *out = NULL;
    if (o == Py_None) return 0;
    PyObject *s;
    if (PyUnicode_Check(o)) {
        Py_INCREF(o);
        s = o;
    } else if (PyList_Check(o) || PyTuple_Check(o)) {
        PyObject *comma = PyUnicode_FromString(",");
        if (!comma) return -1;
        s = PyUnicode_Join(comma, o); /* TypeError for non-str items */
        Py_DECREF(comma);
        if (!s) return -1;
    } else {
        PyErr_Format(PyExc_TypeError, "optimize: %s must be a str or a list of str, not %.100s", what,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    Py_ssize_t n;
    const char *c = PyUnicode_AsUTF8AndSize(s, &n);
    if (c && (*out = PyMem_Malloc((size_t)n + 1))) memcpy(*out, c, (size_t)n + 1);
    else if (c) PyErr_NoMemory();
    Py_DECREF(s);
    return *out ? 0 : -1;
}

static PyObject *report_dict(const gwr_optimize_report *r) {
    int n = gwr_optimize_report_count(r);
    PyObject *passes = PyList_New(0);
    if (!passes) return NULL;
    for (int i = 0; i < n; i++) {
        const gwr_optimize_pass *p = gwr_optimize_report_pass(r, i);
        PyObject *e = PyDict_New();
        PyObject *skipped = p->skipped ? PyUnicode_FromString(p->skipped) : (Py_INCREF(Py_None), Py_None);
        PyObject *note = p->note ? PyUnicode_FromString(p->note) : (Py_INCREF(Py_None), Py_None);
        if (!e || dict_set_steal(e, "label", PyUnicode_FromString(p->label)) < 0 ||
            dict_set_steal(e, "skipped", skipped) < 0 ||
            dict_set_steal(e, "attempts", PyLong_FromLongLong(p->attempts)) < 0 ||
            dict_set_steal(e, "matches", PyLong_FromLongLong(p->matches)) < 0 ||
            dict_set_steal(e, "rewrites", PyLong_FromLongLong(p->rewrites)) < 0 ||
            dict_set_steal(e, "note", note) < 0 || PyList_Append(passes, e) < 0) {
            Py_XDECREF(e);
            Py_DECREF(passes);
            return NULL;
        }
        Py_DECREF(e);
    }
    int64_t before, after, nets;
    gwr_optimize_report_layers(r, &before, &after, &nets);
    PyObject *d = PyDict_New();
    if (!d || dict_set_steal(d, "passes", passes) < 0 ||
        dict_set_steal(d, "layers_before", PyLong_FromLongLong(before)) < 0 ||
        dict_set_steal(d, "layers_after", PyLong_FromLongLong(after)) < 0 ||
        dict_set_steal(d, "networks", PyLong_FromLongLong(nets)) < 0) {
        if (!d) Py_DECREF(passes);
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

/* Ctrl-C during optimize(): the signal's exception stays set and the
 * passes stop (GWR_ERR_STATE), leaving a network that verifies. */
static int optimize_interrupt(void *ctx) {
    if (PyErr_CheckSignals() < 0) {
        *(int *)ctx = 1;
        return 1;
    }
    return 0;
}

static PyObject *py_optimize(PyObject *mod, PyObject *args, PyObject *kw) {
    (void)mod;
    static char *kwlist[] = {"net", "level", "target", "only", "disable", "opset", "bind", "debug", NULL};
    PyObject *netobj, *only = Py_None, *disable = Py_None, *bind = Py_None;
    const char *level = "extended", *target = "onnx";
    long long opset = 0;
    int debug = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|ssOOLOp:optimize", kwlist, &netobj, &level, &target, &only,
                                     &disable, &opset, &bind, &debug))
        return NULL;
    gwr_optimize_options o;
    memset(&o, 0, sizeof o);
    int lv = -1;
    for (int l = GWR_LEVEL_BASIC; l <= GWR_LEVEL_ALL; l++)
        if (!strcmp(level, gwr_pass_level_name((gwr_pass_level)l))) lv = l;
    if (lv < 0) {
        PyErr_Format(PyExc_ValueError, "optimize: level must be '%s', '%s' or '%s', not '%s'",
                     gwr_pass_level_name(GWR_LEVEL_BASIC), gwr_pass_level_name(GWR_LEVEL_EXTENDED),
                     gwr_pass_level_name(GWR_LEVEL_ALL), level);
        return NULL;
    }
    o.level = (gwr_pass_level)lv;
    for (size_t i = 0; i < sizeof target_names / sizeof *target_names; i++)
        if (!strcmp(target, target_names[i].name)) o.target = target_names[i].bit;
    if (!o.target) {
        PyErr_Format(PyExc_ValueError, "optimize: target must be 'onnx', 'ort' or 'gwr', not '%s'", target);
        return NULL;
    }
    if (opset < 0) {
        PyErr_SetString(PyExc_ValueError, "optimize: opset must be >= 0 (0 keeps the model's)");
        return NULL;
    }
    o.opset = opset;
    o.debug = debug;
    gwr_network *net = pg_network_get(netobj);
    if (!net) return NULL;
    char *only_s = NULL, *disable_s = NULL;
    gwr_dim_binding *b = NULL;
    PyObject *result = NULL;
    if (label_list(only, "only", &only_s) < 0 || label_list(disable, "disable", &disable_s) < 0) goto done;
    o.only = only_s;
    o.disable = disable_s;
    if (bind != Py_None) {
        if (!PyDict_Check(bind)) {
            PyErr_Format(PyExc_TypeError, "optimize: bind must be a dict {symbol: int}, not %.100s",
                         Py_TYPE(bind)->tp_name);
            goto done;
        }
        Py_ssize_t n = PyDict_GET_SIZE(bind), pos = 0, i = 0;
        if (!(b = PyMem_Calloc((size_t)n + 1, sizeof *b))) {
            PyErr_NoMemory();
            goto done;
        }
        PyObject *k, *v;
        while (PyDict_Next(bind, &pos, &k, &v)) {
            /* names point into the dict's keys, alive for the call */
            if (!PyUnicode_Check(k) || !PyLong_Check(v) || PyBool_Check(v)) {
                PyErr_SetString(PyExc_TypeError, "optimize: bind must map symbol names (str) to ints");
                goto done;
            }
            if (!(b[i].name = PyUnicode_AsUTF8(k))) goto done;
            long long x = PyLong_AsLongLong(v);
            if (x == -1 && PyErr_Occurred()) goto done;
            if (x < 0) {
                PyErr_Format(PyExc_ValueError, "optimize: bind['%s'] must be >= 0", b[i].name);
                goto done;
            }
            b[i++].value = x;
        }
        o.nbind = (int)n;
        o.bind = b;
    }
    gwr_optimize_report *rep = NULL;
    int interrupted = 0;
    o.interrupt = optimize_interrupt;
    o.interrupt_ctx = &interrupted;
    Py_INCREF(bind); /* keeps the key strings alive across the call */
    gwr_status s = gwr_optimize(net, &o, &rep);
    Py_DECREF(bind);
    if (interrupted) {
        /* KeyboardInterrupt (or the signal handler's exception) is set */
    } else if (s) {
        pg_raise_net(s, net);
    } else {
        result = rep ? report_dict(rep) : PyDict_New();
    }
    gwr_optimize_report_free(rep);
done:
    PyMem_Free(only_s);
    PyMem_Free(disable_s);
    PyMem_Free(b);
    return result;
}

static PyMethodDef pattern_functions[] = {
    {"_passes_labels", passes_labels, METH_NOARGS, "_passes_labels() -> list of the built-in pass labels."},
    {"_passes_info", passes_info, METH_O, "_passes_info(label) -> dict (see gwr.passes.info)."},
    {"_passes_get", passes_get, METH_O, "_passes_get(label) -> BuiltinPattern (see gwr.passes.get)."},
    {"optimize", (PyCFunction)(void (*)(void))py_optimize, METH_VARARGS | METH_KEYWORDS,
     "optimize(net, level='extended', target='onnx', only=None, disable=None, opset=0, bind=None, debug=False)"
     " -> dict\n\nRuns the built-in passes of level ('basic', 'extended', 'all') and below that may serve target "
     "('onnx', 'ort', 'gwr') to a fixpoint over net and its subgraphs. only / disable: pass labels (a "
     "comma-separated str or a list). opset: raise the default opset first (0 keeps it). bind: {symbol: int} "
     "binds symbolic dims first. debug: verify after every rewrite. Returns {'passes': [{label, skipped, "
     "attempts, matches, rewrites, note}], 'layers_before', 'layers_after', 'networks'}."},
    {NULL, NULL, 0, NULL}};

int pg_init_patterns(PyObject *m) {
    struct {
        PyObject **slot;
        const char *s;
    } names[] = {{&s_match, "match"},
                 {&s_rewrite, "rewrite"},
                 {&s_match_and_rewrite, "match_and_rewrite"},
                 {&s_analyze, "analyze"},
                 {&s_write, "write"},
                 {&s_layer_added, "layer_added"},
                 {&s_layer_removed, "layer_removed"},
                 {&s_tensor_replaced, "tensor_replaced"},
                 {&s_pattern_applied, "pattern_applied"},
                 {&s_match_failed, "match_failed"}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!*names[i].slot && !(*names[i].slot = PyUnicode_InternFromString(names[i].s))) return -1;
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
    return PyModule_AddFunctions(m, pattern_functions);
}
