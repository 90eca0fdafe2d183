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
