/* managers.c - gwr._gwr's RewritePatternManager and AnalysisPatternManager:
 * each owns a gwr manager (gwr_rewrite_manager / gwr_analysis_manager) and
 * a dict of the patterns added to it; their listeners, trace and
 * statistics; and the run (rewrite()/analyze()), which pushes the running
 * call (pg_run, patterns.c) and re-raises the Python exception a pattern
 * or a listener raised.
 *
 * The pattern types and the trampolines are in patterns.c (a Python
 * pattern is added here as the C struct pg_pattern_struct builds),
 * BuiltinPattern in passes.c; what the three files share is in
 * patterns_internal.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* open_memstream */
#endif
#include "patterns_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The methods called on listeners and trace files, interned by
 * pg_init_managers. */
static PyObject *s_write;
static PyObject *s_layer_added, *s_layer_removed, *s_tensor_replaced, *s_pattern_applied, *s_match_failed;

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
        } else if (Py_IS_TYPE(pat, &pg_CompiledRule_Type)) {
            if (pg_compiled_rule_struct(pat, &rw) < 0) return NULL;
        } else if (PyObject_TypeCheck(pat, &pg_RuleSet_Type)) {
            PyErr_SetString(PyExc_TypeError,
                            "RewritePatternManager.add: a RuleSet holds several rules: add_rules(ruleset) adds each "
                            "under its own name and benefit, add(label, ruleset['name'], benefit) one of them");
            return NULL;
        } else if (PyObject_TypeCheck(pat, &pg_PatternRewriter_Type)) {
            if (pg_pattern_struct((pg_pattern *)pat, &rw, NULL) < 0) return NULL;
        } else {
            PyErr_Format(PyExc_TypeError,
                         "RewritePatternManager.add: pattern must be a gwr.PatternRewriter (subclass) instance, "
                         "a gwr.passes.get() BuiltinPattern or one rule of a gwr.rules.RuleSet, not %.100s",
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
        if (pg_pattern_struct((pg_pattern *)pat, NULL, &an) < 0) return NULL;
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
    const gwr_pass_info *pi = pg_find_pass_info(label);
    if (!pi) return pg_raise_no_pass(label);
    int benefit = pg_pass_benefit(pi);
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
    PyObject *b = pg_builtin_new(pi);
    if (!b) return NULL;
    int r = PyDict_SetItem(m->patterns, label_obj, b);
    Py_DECREF(b);
    if (r < 0) return NULL;
    Py_RETURN_NONE;
}

/* Every rule of a RuleSet under its own name and benefit
 * (gwr_rules_add_to). The set is kept under each of those names (get(name)
 * returns it): the C side points into it. */
static PyObject *manager_add_rules(PyObject *o, PyObject *rs) {
    pg_manager *m = (pg_manager *)o;
    if (manager_check(m, "add_rules") < 0) return NULL;
    if (!PyObject_TypeCheck(rs, &pg_RuleSet_Type)) {
        PyErr_Format(PyExc_TypeError, "add_rules: expected a gwr.rules.RuleSet, not %.100s", Py_TYPE(rs)->tp_name);
        return NULL;
    }
    const gwr_rules *r = pg_ruleset_get(rs);
    if (!r) return NULL;
    int n = gwr_rules_count(r);
    /* All or nothing: a taken label refuses the set before anything is added. */
    for (int i = 0; i < n; i++)
        if (gwr_rewrite_manager_get(m->rm, gwr_rules_name(r, i)))
            return pg_raisef(GWR_ERR_DUPLICATE, "add_rules: the manager already has a pattern labelled '%s'",
                             gwr_rules_name(r, i));
    gwr_status s = gwr_rules_add_to(r, m->rm);
    /* Whatever was added (all of it, unless the C side ran out of memory)
     * points into the set. */
    for (int i = 0; i < n; i++) {
        const char *name = gwr_rules_name(r, i);
        if (gwr_rewrite_manager_get(m->rm, name) && PyDict_SetItemString(m->patterns, name, rs) < 0) return NULL;
    }
    if (s) return pg_raise(s, manager_errmsg(m));
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

int pg_dict_set_steal(PyObject *d, const char *k, PyObject *v) {
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
        if (!e || pg_dict_set_steal(e, "attempts", PyLong_FromLongLong(st.attempts)) < 0 ||
            pg_dict_set_steal(e, "matches", PyLong_FromLongLong(st.matches)) < 0 ||
            pg_dict_set_steal(e, "rewrites", PyLong_FromLongLong(st.rewrites)) < 0 ||
            pg_dict_set_steal(e, "seconds", PyFloat_FromDouble(st.seconds)) < 0 ||
            pg_dict_set_steal(d, manager_label(m, i), e) < 0) {
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
    if (!d || pg_dict_set_steal(d, "visited", PyLong_FromLongLong(su.visited)) < 0 ||
        pg_dict_set_steal(d, "rewrites", PyLong_FromLongLong(su.rewrites)) < 0 ||
        pg_dict_set_steal(d, "layers_before", PyLong_FromLongLong(su.layers_before)) < 0 ||
        pg_dict_set_steal(d, "layers_after", PyLong_FromLongLong(su.layers_after)) < 0 ||
        pg_dict_set_steal(d, "pruned", PyLong_FromLongLong(su.pruned)) < 0 ||
        pg_dict_set_steal(d, "converged", PyBool_FromLong(su.converged)) < 0 ||
        pg_dict_set_steal(d, "stopped", PyBool_FromLong(su.stopped)) < 0 ||
        pg_dict_set_steal(d, "seconds", PyFloat_FromDouble(su.seconds)) < 0) {
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
    if (pg_run_failed()) goto done; /* already stopping: no more events */
    {
        PyObject *r = c ? PyObject_CallMethodObjArgs((PyObject *)ctx, meth, a, b, c, NULL)
                      : b ? PyObject_CallMethodObjArgs((PyObject *)ctx, meth, a, b, NULL)
                          : PyObject_CallMethodObjArgs((PyObject *)ctx, meth, a, NULL);
        if (!r) goto err;
        Py_DECREF(r);
    }
    goto done;
err:
    if (PyErr_Occurred()) pg_run_keep_error();
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


static void on_pattern_applied(void *ctx, const gwr_rewrite_event *e) {
    PyObject *d = PyDict_New();
    if (!d || pg_dict_set_steal(d, "seq", PyLong_FromLongLong(e->seq)) < 0 ||
        pg_dict_set_steal(d, "label", PyUnicode_FromString(e->label)) < 0 ||
        pg_dict_set_steal(d, "pattern", PyUnicode_FromString(e->pattern)) < 0 ||
        pg_dict_set_steal(d, "root", pg_layer_wrap(e->root)) < 0 ||
        pg_dict_set_steal(d, "added", pg_layer_list(e->added, (Py_ssize_t)e->nadded)) < 0 ||
        pg_dict_set_steal(d, "removed", pg_layer_list(e->removed, (Py_ssize_t)e->nremoved)) < 0 ||
        pg_dict_set_steal(d, "replaced", PyLong_FromLongLong(e->nreplaced)) < 0 ||
        pg_dict_set_steal(d, "modified", PyLong_FromLongLong(e->nmodified)) < 0) {
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
        if (!strcmp(n, "stop_after")) { /* the first K rewrites only (0: none); None: no stop */
            long long x = v == Py_None ? 0 : PyLong_Check(v) && !PyBool_Check(v) ? PyLong_AsLongLong(v) : -2;
            if (x == -1 && PyErr_Occurred()) return -1;
            if (x < 0) {
                PyErr_SetString(PyExc_ValueError, "rewrite: stop_after must be None or an int >= 0");
                return -1;
            }
            o->stop_after = v == Py_None ? 0 : x ? x : GWR_STOP_BEFORE_FIRST;
            continue;
        }
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
                    : !strcmp(n, "provenance")    ? &o->provenance
                                                  : NULL;
        if (!flag) {
            PyErr_Format(PyExc_TypeError,
                         "rewrite: unknown option '%s' (single_pass, max_rewrites, keep_dead, debug, shuffle_seed, "
                         "time_patterns, full_rescan, stop_after, provenance)",
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
    if (pg_run_failed()) return 1;
    if (PyErr_CheckSignals() < 0) {
        pg_run_keep_error();
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
    pg_run run = {pg_current_run, NULL};
    if (!s) {
        pg_current_run = &run;
        m->running = 1;
        s = m->rm ? gwr_rewrite_manager_rewrite(m->rm, net, cargs) : gwr_analysis_manager_analyze(m->am, net, cargs);
        m->running = 0;
        pg_current_run = run.prev;
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
        pg_run_reraise(&run);
    } else if (werr) {
        /* the trace's file failed: its exception is set */
    } else if (PyErr_Occurred()) {
        /* set outside any pattern callback: a Python functional that a C
         * pattern ran through gwr_call failed; it is what stopped the run */
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
    {"add_rules", manager_add_rules, METH_O,
     "add_rules(ruleset)\n\nAdds every rule of a gwr.rules.RuleSet under its own name, with its benefit; the\n"
     "rules match in C. A name already taken refuses the whole set (gwr.DuplicateError)."},
    {"get", manager_get, METH_O,
     "get(label) -> pattern or None\n\nThe object added under label (a pattern or BuiltinPattern), or None when "
     "no pattern has that label."},
    {"rewrite", (PyCFunction)(void (*)(void))rm_rewrite, METH_VARARGS | METH_KEYWORDS,
     "rewrite(net, args=None, **options) -> dict\n\nApplies the patterns to net until none matches. Every "
     "Python pattern sees args as self.args during the run; built-in patterns get args converted to C (when a "
     "value cannot be converted they get none). Options: single_pass, max_rewrites, keep_dead, debug, "
     "shuffle_seed, time_patterns, full_rescan, stop_after (the first K rewrites only), provenance (each new "
     "layer's Layer.provenance). Returns the summary "
     "(visited, rewrites, layers_before, layers_after, pruned, converged, stopped, seconds). A Python exception raised by a pattern or listener stops the "
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

PyTypeObject pg_RewritePatternManager_Type = {
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

PyTypeObject pg_AnalysisPatternManager_Type = {
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

/* ---- init ------------------------------------------------------------------ */

int pg_init_managers(void) {
    struct {
        PyObject **slot;
        const char *s;
    } names[] = {{&s_write, "write"},
                 {&s_layer_added, "layer_added"},
                 {&s_layer_removed, "layer_removed"},
                 {&s_tensor_replaced, "tensor_replaced"},
                 {&s_pattern_applied, "pattern_applied"},
                 {&s_match_failed, "match_failed"}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!*names[i].slot && !(*names[i].slot = PyUnicode_InternFromString(names[i].s))) return -1;
    return 0;
}
