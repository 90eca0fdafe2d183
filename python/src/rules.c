/* rules.c - gwr._gwr's rule sets: RuleSet, a gwr_rules (gwr/rules.h) parsed,
 * checked and compiled once by the C library, and CompiledRule, one rule
 * of a set (ruleset[i] or ruleset["name"]).
 *
 * gwr.rules.RuleSet (python/gwr/rules.py) subclasses RuleSet: it traces
 * Python pattern functions into .rules text and hands the whole text to
 * _compile; gwr.rules.load hands a file to _compile_file. The rules then
 * match in C: a manager runs them as it runs any C pattern
 * (RewritePatternManager.add_rules, managers.c) and no Python runs per
 * layer. A set is compiled once and never changes afterwards, so the
 * rewriters handed to managers stay valid while the set lives; every
 * manager holding them keeps a reference to it. */
#include "patterns_internal.h"

#include <stdio.h>
#include <string.h>

static int ruleset_ready(pg_ruleset *rs) {
    if (rs->r) return 0;
    pg_raise(GWR_ERR_STATE, "the RuleSet was not compiled (gwr.rules.RuleSet([...]) or gwr.rules.load)");
    return -1;
}

const gwr_rules *pg_ruleset_get(PyObject *o) {
    pg_ruleset *rs = (pg_ruleset *)o;
    return ruleset_ready(rs) < 0 ? NULL : rs->r;
}

static void ruleset_dealloc(PyObject *o) {
    pg_ruleset *rs = (pg_ruleset *)o;
    gwr_rules_free(rs->r);
    rs->r = NULL;
    Py_TYPE(o)->tp_free(o);
}

static PyObject *ruleset_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
    (void)args; /* the subclass's __init__ takes them */
    (void)kw;
    return tp->tp_alloc(tp, 0);
}

/* Installs r; refuses a second compile (rewriters handed out point into
 * the first). */
static PyObject *ruleset_install(pg_ruleset *rs, gwr_status s, gwr_rules *r) {
    if (s) return pg_raise(s, gwr_last_errmsg());
    rs->r = r;
    Py_RETURN_NONE;
}

static int ruleset_fresh(pg_ruleset *rs) {
    if (!rs->r) return 0;
    pg_raise(GWR_ERR_STATE, "the RuleSet is already compiled: make a new one");
    return -1;
}

static PyObject *ruleset_compile(PyObject *o, PyObject *args) {
    pg_ruleset *rs = (pg_ruleset *)o;
    const char *text, *filename = NULL;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "s#|z:_compile", &text, &len, &filename)) return NULL;
    if (ruleset_fresh(rs) < 0) return NULL;
    if ((size_t)len != strlen(text)) {
        PyErr_SetString(PyExc_ValueError, "_compile: the text holds a NUL character");
        return NULL;
    }
    gwr_rules *r = NULL;
    gwr_status s = gwr_rules_parse(text, filename, &r);
    return ruleset_install(rs, s, r);
}

static PyObject *ruleset_compile_file(PyObject *o, PyObject *arg) {
    pg_ruleset *rs = (pg_ruleset *)o;
    PyObject *b = NULL;
    if (!PyUnicode_FSConverter(arg, &b)) return NULL;
    if (ruleset_fresh(rs) < 0) {
        Py_DECREF(b);
        return NULL;
    }
    gwr_rules *r = NULL;
    gwr_status s = gwr_rules_parse_file(PyBytes_AS_STRING(b), &r);
    Py_DECREF(b);
    return ruleset_install(rs, s, r);
}

static Py_ssize_t ruleset_len(PyObject *o) {
    pg_ruleset *rs = (pg_ruleset *)o;
    return rs->r ? gwr_rules_count(rs->r) : 0;
}

static PyObject *ruleset_names(PyObject *o, void *c) {
    (void)c;
    pg_ruleset *rs = (pg_ruleset *)o;
    int n = rs->r ? gwr_rules_count(rs->r) : 0;
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) {
        PyObject *s = PyUnicode_FromString(gwr_rules_name(rs->r, i));
        if (!s) Py_CLEAR(l);
        else PyList_SET_ITEM(l, i, s);
    }
    return l;
}

static PyObject *compiled_rule_new(PyObject *set, int i);

/* ruleset[i] (negative counts from the end) or ruleset["name"]. */
static PyObject *ruleset_getitem(PyObject *o, PyObject *key) {
    pg_ruleset *rs = (pg_ruleset *)o;
    if (ruleset_ready(rs) < 0) return NULL;
    int n = gwr_rules_count(rs->r);
    if (PyUnicode_Check(key)) {
        const char *k = PyUnicode_AsUTF8(key);
        if (!k) return NULL;
        for (int i = 0; i < n; i++)
            if (!strcmp(gwr_rules_name(rs->r, i), k)) return compiled_rule_new(o, i);
        PyErr_Format(PyExc_KeyError, "no rule named %R in the set", key);
        return NULL;
    }
    Py_ssize_t i = PyNumber_AsSsize_t(key, PyExc_IndexError);
    if (i == -1 && PyErr_Occurred()) return NULL;
    if (i < 0) i += n;
    if (i < 0 || i >= n) {
        PyErr_SetString(PyExc_IndexError, "rule index out of range");
        return NULL;
    }
    return compiled_rule_new(o, (int)i);
}

static PyMethodDef ruleset_methods[] = {
    {"_compile", ruleset_compile, METH_VARARGS,
     "_compile(text, filename=None)\n\nParses, checks and compiles .rules text (once)."},
    {"_compile_file", ruleset_compile_file, METH_O, "_compile_file(path)\n\nThe same for a file."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef ruleset_getset[] = {
    {"names", ruleset_names, NULL, "The rules' names, in the order of the text.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PySequenceMethods ruleset_as_seq = {.sq_length = ruleset_len};
static PyMappingMethods ruleset_as_map = {.mp_length = ruleset_len, .mp_subscript = ruleset_getitem};

PyTypeObject pg_RuleSet_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gwr.RuleSet",
    .tp_basicsize = sizeof(pg_ruleset),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Rules compiled by gwr's C parser (gwr/rules.h). Make one with gwr.rules.RuleSet or\n"
              "gwr.rules.load; len(), .names, [i] or ['name'] for one rule.",
    .tp_new = ruleset_new,
    .tp_dealloc = ruleset_dealloc,
    .tp_methods = ruleset_methods,
    .tp_getset = ruleset_getset,
    .tp_as_sequence = &ruleset_as_seq,
    .tp_as_mapping = &ruleset_as_map,
};

/* ---- CompiledRule -------------------------------------------------------------- */

static void compiled_rule_dealloc(PyObject *o) {
    Py_XDECREF(((pg_compiled_rule *)o)->set);
    Py_TYPE(o)->tp_free(o);
}

static PyObject *compiled_rule_new(PyObject *set, int i) {
    pg_compiled_rule *c = PyObject_New(pg_compiled_rule, &pg_CompiledRule_Type);
    if (!c) return NULL;
    Py_INCREF(set);
    c->set = set;
    c->index = i;
    return (PyObject *)c;
}

static PyObject *compiled_rule_get(PyObject *o, void *which) {
    pg_compiled_rule *c = (pg_compiled_rule *)o;
    const gwr_rules *r = ((pg_ruleset *)c->set)->r;
    switch ((int)(intptr_t)which) {
    case 0: return PyUnicode_FromString(gwr_rules_name(r, c->index));
    case 1: return PyLong_FromLong(gwr_rules_benefit(r, c->index));
    case 2: return PyFloat_FromDouble(gwr_rules_tolerance(r, c->index));
    case 3: return PyLong_FromLong(c->index);
    default: Py_INCREF(c->set); return c->set;
    }
}

static PyObject *compiled_rule_repr(PyObject *o) {
    pg_compiled_rule *c = (pg_compiled_rule *)o;
    const gwr_rules *r = ((pg_ruleset *)c->set)->r;
    return PyUnicode_FromFormat("<gwr.CompiledRule '%s' benefit %d>", gwr_rules_name(r, c->index),
                                gwr_rules_benefit(r, c->index));
}

static PyGetSetDef compiled_rule_getset[] = {
    {"name", compiled_rule_get, NULL, "The rule's name.", (void *)0},
    {"benefit", compiled_rule_get, NULL, "The rule's benefit (its header's, else the default).", (void *)1},
    {"tolerance", compiled_rule_get, NULL, "The rule's declared tolerance (header `tol`).", (void *)2},
    {"index", compiled_rule_get, NULL, "Its position in the set.", (void *)3},
    {"ruleset", compiled_rule_get, NULL, "The RuleSet it belongs to.", (void *)4},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject pg_CompiledRule_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gwr.CompiledRule",
    .tp_basicsize = sizeof(pg_compiled_rule),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One rule of a RuleSet (ruleset[i] or ruleset['name']): add it to a RewritePatternManager\n"
              "like a pattern, under a label and benefit of your choice: manager.add('gemm', rs['matmul_add'], 10).",
    .tp_dealloc = compiled_rule_dealloc,
    .tp_repr = compiled_rule_repr,
    .tp_getset = compiled_rule_getset,
};

int pg_compiled_rule_struct(PyObject *o, gwr_pattern_rewriter *rw) {
    pg_compiled_rule *c = (pg_compiled_rule *)o;
    gwr_status s = gwr_rules_rewriter(((pg_ruleset *)c->set)->r, c->index, rw);
    if (s) {
        pg_raise(s, gwr_last_errmsg());
        return -1;
    }
    return 0;
}

/* ---- optimize(rules=...) ---------------------------------------------------------- */

struct pg_rules_run {
    gwr_rewrite_manager *m;
    gwr_args *args;
    PyObject *sets; /* list of the RuleSets (kept alive while m lives) */
    int64_t *counts; /* attempts, matches, rewrites per rule of m, summed over the runs */
    char msg[512];   /* the message of a failed run */
};

void pg_rules_run_free(pg_rules_run *r) {
    if (!r) return;
    gwr_rewrite_manager_free(r->m);
    gwr_args_free(r->args);
    Py_XDECREF(r->sets);
    PyMem_Free(r->counts);
    PyMem_Free(r);
}

pg_rules_run *pg_rules_run_new(PyObject *rules, unsigned target, int debug, int (*interrupt)(void *), void *ctx) {
    pg_rules_run *r = PyMem_Calloc(1, sizeof *r);
    if (!r) return (pg_rules_run *)PyErr_NoMemory();
    int one = PyObject_TypeCheck(rules, &pg_RuleSet_Type);
    r->sets = one ? PyList_New(0) : PySequence_List(rules);
    if (one && r->sets && PyList_Append(r->sets, rules) < 0) Py_CLEAR(r->sets);
    if (!r->sets) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "optimize: rules must be a gwr.rules.RuleSet or a list of them, not %.100s",
                         Py_TYPE(rules)->tp_name);
        }
        goto fail;
    }
    if (!(r->m = gwr_rewrite_manager_new()) || !(r->args = gwr_args_new())) {
        pg_raise(GWR_ERR_NOMEM, gwr_last_errmsg());
        goto fail;
    }
    gwr_status s = gwr_args_set_int(r->args, "target", (int64_t)target);
    gwr_rewrite_options ro = {.debug = debug, .interrupt = interrupt, .interrupt_ctx = ctx};
    if (!s) s = gwr_rewrite_manager_set_options(r->m, &ro);
    if (s) {
        pg_raise(s, gwr_rewrite_manager_errmsg(r->m));
        goto fail;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(r->sets); i++) {
        PyObject *o = PyList_GET_ITEM(r->sets, i);
        if (!PyObject_TypeCheck(o, &pg_RuleSet_Type)) {
            PyErr_Format(PyExc_TypeError, "optimize: rules[%zd] is a %.100s, not a gwr.rules.RuleSet", i,
                         Py_TYPE(o)->tp_name);
            goto fail;
        }
        const gwr_rules *rs = pg_ruleset_get(o);
        if (!rs) goto fail;
        if ((s = gwr_rules_add_to(rs, r->m))) {
            pg_raise(s, gwr_rewrite_manager_errmsg(r->m));
            goto fail;
        }
    }
    int n = gwr_rewrite_manager_count(r->m);
    if (!(r->counts = PyMem_Calloc((size_t)n * 3 + 1, sizeof *r->counts))) {
        PyErr_NoMemory();
        goto fail;
    }
    return r;
fail:
    pg_rules_run_free(r);
    return NULL;
}

/* Runs the manager on g, then on the bodies of g's live layers (as the
 * optimizer runs its passes), summing each rule's counters. */
static gwr_status rules_run_on(pg_rules_run *r, gwr_network *g, int depth) {
    if (depth > 64) {
        snprintf(r->msg, sizeof r->msg, "optimize: bodies nested over 64 deep");
        return GWR_ERR_UNSUPPORTED;
    }
    gwr_status s = gwr_rewrite_manager_rewrite(r->m, g, r->args);
    for (int k = 0; k < gwr_rewrite_manager_count(r->m); k++) {
        gwr_pattern_stats ps;
        if (gwr_rewrite_manager_stats(r->m, k, &ps)) continue;
        r->counts[3 * k] += ps.attempts;
        r->counts[3 * k + 1] += ps.matches;
        r->counts[3 * k + 2] += ps.rewrites;
    }
    if (s) {
        snprintf(r->msg, sizeof r->msg, "%s", gwr_rewrite_manager_errmsg(r->m));
        return s;
    }
    for (int64_t i = 0; i < gwr_network_num_layers(g); i++) {
        gwr_layer *l = gwr_network_layer(g, i);
        if (gwr_layer_is_removed(l)) continue;
        for (int a = 0; a < gwr_layer_num_attrs(l); a++) {
            gwr_attr_type t = gwr_layer_attr_type(l, a);
            gwr_network *const *gs = NULL;
            gwr_network *one = NULL;
            int64_t n = 0;
            if (t == GWR_ATTR_GRAPH && !gwr_layer_get_graph(l, gwr_layer_attr_name(l, a), &one)) gs = &one, n = 1;
            else if (t == GWR_ATTR_GRAPHS) gwr_layer_get_graphs(l, gwr_layer_attr_name(l, a), &gs, &n);
            for (int64_t k = 0; k < n; k++)
                if ((s = rules_run_on(r, gs[k], depth + 1))) return s;
        }
    }
    return GWR_OK;
}

PyObject *pg_rules_run_on(pg_rules_run *r, gwr_network *net) {
    gwr_status s = rules_run_on(r, net, 0);
    if (s && PyErr_Occurred()) return NULL; /* interrupted: the signal's exception */
    if (s) return pg_raise(s, r->msg);
    Py_RETURN_NONE;
}

PyObject *pg_rules_run_report(const pg_rules_run *r) {
    int n = gwr_rewrite_manager_count(r->m);
    PyObject *l = PyList_New(0);
    for (int k = 0; l && k < n; k++) {
        PyObject *e = PyDict_New();
        if (!e || pg_dict_set_steal(e, "label", PyUnicode_FromString(gwr_rewrite_manager_label(r->m, k))) < 0 ||
            pg_dict_set_steal(e, "attempts", PyLong_FromLongLong(r->counts[3 * k])) < 0 ||
            pg_dict_set_steal(e, "matches", PyLong_FromLongLong(r->counts[3 * k + 1])) < 0 ||
            pg_dict_set_steal(e, "rewrites", PyLong_FromLongLong(r->counts[3 * k + 2])) < 0 ||
            PyList_Append(l, e) < 0)
            Py_CLEAR(l);
        Py_XDECREF(e);
    }
    return l;
}

int pg_init_rules(PyObject *m) {
    if (PyType_Ready(&pg_RuleSet_Type) < 0 || PyType_Ready(&pg_CompiledRule_Type) < 0) return -1;
    Py_INCREF(&pg_RuleSet_Type);
    if (PyModule_AddObject(m, "RuleSet", (PyObject *)&pg_RuleSet_Type) < 0) {
        Py_DECREF(&pg_RuleSet_Type);
        return -1;
    }
    Py_INCREF(&pg_CompiledRule_Type);
    if (PyModule_AddObject(m, "CompiledRule", (PyObject *)&pg_CompiledRule_Type) < 0) {
        Py_DECREF(&pg_CompiledRule_Type);
        return -1;
    }
    return 0;
}
