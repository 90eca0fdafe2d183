/* passes.c - gwr._gwr's built-in passes: BuiltinPattern (a C rewrite
 * pattern of the pass table, added to a RewritePatternManager like a Python
 * pattern), the helpers behind gwr.passes (_passes_labels, _passes_info,
 * _passes_get) and optimize(), which runs the pass table over a network.
 *
 * pg_init_patterns (patterns.c) adds BuiltinPattern with the other pattern
 * types and calls pg_init_passes for the functions; the managers
 * (managers.c) use the pass lookup below. What the three files share is in
 * patterns_internal.h. */
#include "patterns_internal.h"

#include <string.h>

/* ---- BuiltinPattern ---------------------------------------------------------- */

/* The object, pg_builtin, is in patterns_internal.h: a manager adds its
 * pattern. */

const gwr_pass_info *pg_find_pass_info(const char *label) {
    for (int i = 0; i < gwr_passes_count(); i++) {
        const gwr_pass_info *pi = gwr_passes_info(i);
        if (pi && !strcmp(pi->label, label)) return pi;
    }
    return NULL;
}

/* The benefit a manager gives the pass (from its table position). */
int pg_pass_benefit(const gwr_pass_info *pi) {
    int benefit = 0;
    gwr_passes_find(pi->label, &benefit);
    return benefit;
}

PyObject *pg_raise_no_pass(const char *label) {
    return pg_raisef(GWR_ERR_NOT_FOUND, "no built-in pass '%s' (gwr.passes.labels() lists them)", label);
}

static PyObject *builtin_get(PyObject *o, void *c) {
    const gwr_pass_info *pi = ((pg_builtin *)o)->info;
    switch ((int)(intptr_t)c) {
    case 0: return PyUnicode_FromString(pi->pattern->name ? pi->pattern->name : pi->label);
    case 1: return PyUnicode_FromString(pi->label);
    case 2: return PyLong_FromLong(pg_pass_benefit(pi));
    default: return PyUnicode_FromString(pi->summary ? pi->summary : "");
    }
}

static PyObject *builtin_repr(PyObject *o) {
    return PyUnicode_FromFormat("<gwr.BuiltinPattern '%s' benefit %d>", ((pg_builtin *)o)->info->label,
                                pg_pass_benefit(((pg_builtin *)o)->info));
}

static PyGetSetDef builtin_getset[] = {
    {"name", builtin_get, NULL, "The C pattern's name.", (void *)0},
    {"label", builtin_get, NULL, "The pass's label in gwr.passes.", (void *)1},
    {"benefit", builtin_get, NULL, "The pass's default benefit.", (void *)2},
    {"summary", builtin_get, NULL, "One line on what the pass does.", (void *)3},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject pg_BuiltinPattern_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gwr.BuiltinPattern",
    .tp_basicsize = sizeof(pg_builtin),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A built-in C rewrite pattern of the pass table (gwr.passes.get(label)). Add it to a\n"
              "RewritePatternManager like a Python pattern: manager.add(label, gwr.passes.get('fuse_gelu'), 10).",
    .tp_repr = builtin_repr,
    .tp_getset = builtin_getset,
};

PyObject *pg_builtin_new(const gwr_pass_info *pi) {
    pg_builtin *b = PyObject_New(pg_builtin, &pg_BuiltinPattern_Type);
    if (b) b->info = pi;
    return (PyObject *)b;
}

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

/* The pass of a label (a str); NULL with TypeError or NotFoundError. */
static const gwr_pass_info *pass_of(PyObject *label) {
    const char *s = PyUnicode_Check(label) ? PyUnicode_AsUTF8(label) : NULL;
    if (!s) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "label must be a str");
        return NULL;
    }
    const gwr_pass_info *pi = pg_find_pass_info(s);
    if (!pi) pg_raise_no_pass(s);
    return pi;
}

static PyObject *passes_info(PyObject *mod, PyObject *label) {
    (void)mod;
    const gwr_pass_info *pi = pass_of(label);
    if (!pi) return NULL;
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
    if (!d || pg_dict_set_steal(d, "label", PyUnicode_FromString(pi->label)) < 0 ||
        pg_dict_set_steal(d, "summary", PyUnicode_FromString(pi->summary ? pi->summary : "")) < 0 ||
        pg_dict_set_steal(d, "benefit", PyLong_FromLong(pg_pass_benefit(pi))) < 0 ||
        pg_dict_set_steal(d, "phase", PyUnicode_FromString(gwr_pass_phase_name(pi->phase))) < 0 ||
        pg_dict_set_steal(d, "level", PyUnicode_FromString(gwr_pass_level_name(pi->level))) < 0 ||
        pg_dict_set_steal(d, "targets", targets) < 0 ||
        pg_dict_set_steal(d, "numerics",
                       PyUnicode_FromString((unsigned)pi->numerics < 3 ? numerics[pi->numerics] : "?")) < 0 ||
        pg_dict_set_steal(d, "tolerance", PyFloat_FromDouble(pi->tolerance)) < 0) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

static PyObject *passes_get(PyObject *mod, PyObject *label) {
    (void)mod;
    const gwr_pass_info *pi = pass_of(label);
    if (!pi) return NULL;
    return pg_builtin_new(pi);
}

int pg_str_list(PyObject *o, const char *fn, const char *what, char **out) {
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
        PyErr_Format(PyExc_TypeError, "%s: %s must be a str or a list of str, not %.100s", fn, what,
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

/* The report's rounds: [{round, seconds, layers_before, layers_after,
 * rewrites, passes: [{label, attempts, matches, rewrites, layers_added,
 * layers_removed, seconds}]}] (the passes that ran). */
static PyObject *rounds_list(const gwr_optimize_report *r) {
    PyObject *rounds = PyList_New(0);
    for (int k = 0; rounds && k < gwr_optimize_report_rounds(r); k++) {
        const gwr_optimize_round *rd = gwr_optimize_report_round(r, k);
        PyObject *ps = PyList_New(0), *d = PyDict_New();
        int bad = !ps || !d;
        for (int i = 0; !bad && i < gwr_optimize_report_count(r); i++) {
            const gwr_optimize_pass *p = gwr_optimize_report_pass(r, i);
            const gwr_optimize_pass_round *pr = gwr_optimize_report_round_pass(r, k, i);
            if (p->skipped) continue;
            PyObject *e = PyDict_New();
            bad = !e || pg_dict_set_steal(e, "label", PyUnicode_FromString(p->label)) < 0 ||
                  pg_dict_set_steal(e, "attempts", PyLong_FromLongLong(pr->attempts)) < 0 ||
                  pg_dict_set_steal(e, "matches", PyLong_FromLongLong(pr->matches)) < 0 ||
                  pg_dict_set_steal(e, "rewrites", PyLong_FromLongLong(pr->rewrites)) < 0 ||
                  pg_dict_set_steal(e, "layers_added", PyLong_FromLongLong(pr->layers_added)) < 0 ||
                  pg_dict_set_steal(e, "layers_removed", PyLong_FromLongLong(pr->layers_removed)) < 0 ||
                  pg_dict_set_steal(e, "seconds", PyFloat_FromDouble(pr->seconds)) < 0 || PyList_Append(ps, e) < 0;
            Py_XDECREF(e);
        }
        if (!bad)
            bad = pg_dict_set_steal(d, "round", PyLong_FromLong(k)) < 0 ||
                  pg_dict_set_steal(d, "seconds", PyFloat_FromDouble(rd->seconds)) < 0 ||
                  pg_dict_set_steal(d, "layers_before", PyLong_FromLongLong(rd->layers_before)) < 0 ||
                  pg_dict_set_steal(d, "layers_after", PyLong_FromLongLong(rd->layers_after)) < 0 ||
                  pg_dict_set_steal(d, "rewrites", PyLong_FromLongLong(rd->rewrites)) < 0 ||
                  PyDict_SetItemString(d, "passes", ps) < 0 || PyList_Append(rounds, d) < 0;
        Py_XDECREF(ps);
        Py_XDECREF(d);
        if (bad) Py_CLEAR(rounds);
    }
    return rounds;
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
        if (!e || pg_dict_set_steal(e, "label", PyUnicode_FromString(p->label)) < 0 ||
            pg_dict_set_steal(e, "skipped", skipped) < 0 ||
            pg_dict_set_steal(e, "attempts", PyLong_FromLongLong(p->attempts)) < 0 ||
            pg_dict_set_steal(e, "matches", PyLong_FromLongLong(p->matches)) < 0 ||
            pg_dict_set_steal(e, "rewrites", PyLong_FromLongLong(p->rewrites)) < 0 ||
            pg_dict_set_steal(e, "note", note) < 0 || PyList_Append(passes, e) < 0) {
            Py_XDECREF(e);
            Py_DECREF(passes);
            return NULL;
        }
        Py_DECREF(e);
    }
    int64_t before, after, nets;
    gwr_optimize_report_layers(r, &before, &after, &nets);
    PyObject *d = PyDict_New();
    if (!d || pg_dict_set_steal(d, "passes", passes) < 0 ||
        pg_dict_set_steal(d, "layers_before", PyLong_FromLongLong(before)) < 0 ||
        pg_dict_set_steal(d, "layers_after", PyLong_FromLongLong(after)) < 0 ||
        pg_dict_set_steal(d, "networks", PyLong_FromLongLong(nets)) < 0 ||
        pg_dict_set_steal(d, "rewrites", PyLong_FromLongLong(gwr_optimize_report_rewrites(r))) < 0 ||
        pg_dict_set_steal(d, "stopped", PyBool_FromLong(gwr_optimize_report_stopped(r))) < 0 ||
        pg_dict_set_steal(d, "rounds", rounds_list(r)) < 0) {
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
    static char *kwlist[] = {"net", "level", "target", "only", "disable", "opset", "bind", "debug", "input_defaults",
                             "rules", "stop_after", "profile", "provenance", NULL};
    PyObject *netobj, *only = Py_None, *disable = Py_None, *bind = Py_None, *rules = Py_None, *stop = Py_None;
    const char *level = "extended", *target = "onnx", *defaults = "auto";
    long long opset = 0;
    int debug = 0, profile = 0, provenance = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|ssOOLOpsOOpp:optimize", kwlist, &netobj, &level, &target, &only,
                                     &disable, &opset, &bind, &debug, &defaults, &rules, &stop, &profile,
                                     &provenance))
        return NULL;
    gwr_optimize_options o;
    memset(&o, 0, sizeof o);
    o.profile = profile;
    o.provenance = provenance; /* each new layer's Layer.provenance */
    /* stop_after=None: no stop; K >= 0: the first K rewrites (0: none) */
    if (stop != Py_None) {
        long long k = PyLong_Check(stop) && !PyBool_Check(stop) ? PyLong_AsLongLong(stop) : -2;
        if (k == -1 && PyErr_Occurred()) return NULL;
        if (k < 0) {
            PyErr_SetString(PyExc_ValueError, "optimize: stop_after must be None or an int >= 0");
            return NULL;
        }
        o.stop_after = k ? k : GWR_STOP_BEFORE_FIRST;
    }
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
    if (!strcmp(defaults, "keep")) o.input_defaults = GWR_INPUT_DEFAULTS_KEEP;
    else if (!strcmp(defaults, "fold")) o.input_defaults = GWR_INPUT_DEFAULTS_FOLD;
    else if (strcmp(defaults, "auto")) {
        PyErr_Format(PyExc_ValueError, "optimize: input_defaults must be 'auto', 'keep' or 'fold', not '%s'", defaults);
        return NULL;
    }
    gwr_network *net = pg_network_get(netobj);
    if (!net) return NULL;
    char *only_s = NULL, *disable_s = NULL;
    gwr_dim_binding *b = NULL;
    PyObject *result = NULL;
    if (pg_str_list(only, "optimize", "only", &only_s) < 0 || pg_str_list(disable, "optimize", "disable", &disable_s) < 0)
        goto done;
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
    /* rules=: the rules run with the passes, in one manager (by benefit),
     * over the same bodies; the report lists them after the passes. */
    if (rules != Py_None) {
        if (!PyObject_TypeCheck(rules, &pg_RuleSet_Type)) {
            PyErr_Format(PyExc_TypeError,
                         "optimize: rules must be a gwr.rules.RuleSet (gwr.rules.RuleSet([rs1, rs2]) joins "
                         "several), not %.100s",
                         Py_TYPE(rules)->tp_name);
            goto done;
        }
        if (!(o.rules = pg_ruleset_get(rules))) goto done;
    }
    Py_INCREF(bind); /* keeps the key strings alive across the call */
    Py_INCREF(rules); /* and the rules */
    gwr_status s = gwr_optimize(net, &o, &rep);
    Py_DECREF(rules);
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
     "optimize(net, level='extended', target='onnx', only=None, disable=None, opset=0, bind=None, debug=False, "
     "input_defaults='auto', rules=None, stop_after=None, profile=False, provenance=False)"
     " -> dict\n\nRuns the built-in passes of level ('basic', 'extended', 'all') and below that may serve target "
     "('onnx', 'ort', 'gwr') to a fixpoint over net and its subgraphs. only / disable: pass labels (a "
     "comma-separated str or a list). opset: raise the default opset first (0 keeps it). bind: {symbol: int} "
     "binds symbolic dims first. debug: verify after every rewrite. Returns {'passes': [{label, skipped, "
     "attempts, matches, rewrites, note}], 'layers_before', 'layers_after', 'networks', 'rewrites', 'stopped', "
     "'rounds'}. stop_after=K: only the first K rewrites of the run. profile: time each pass (the rounds' "
     "seconds). provenance: each new layer's Layer.provenance. rules: a "
     "gwr.rules.RuleSet run with the passes (one manager, by benefit, the same subgraphs); its rules are "
     "listed after the passes in 'passes'."},
    {NULL, NULL, 0, NULL}};

int pg_init_passes(PyObject *m) { return PyModule_AddFunctions(m, pattern_functions); }
