/* patterns_internal.h - what the files of gwr._gwr's pattern side
 * share, and no other file: patterns.c (the running call, PatternRewriter,
 * PatternAnalyzer, the trampolines, pg_init_patterns), managers.c
 * (RewritePatternManager, AnalysisPatternManager), passes.c
 * (BuiltinPattern, the gwr.passes helpers, optimize()) and rules.c
 * (RuleSet, CompiledRule: rules compiled by gwr/rules.h).
 *
 * pygwr.h stays the contract between the parts of the extension; this
 * header is private to the pattern side, whose one entry point is still
 * pg_init_patterns (module.c calls it). Same conventions as pygwr.h: new
 * references, NULL (or -1) with a Python exception set, the GIL held. */
#ifndef PATTERNS_INTERNAL_H
#define PATTERNS_INTERNAL_H

#include "pygwr.h"

/* ---- the running call (patterns.c) ----------------------------------------- */

/* One rewrite()/analyze() call in progress. Calls nest (a pattern may run
 * another manager on another network), so they form a stack. */
typedef struct pg_run {
    struct pg_run *prev;
    PyObject *exc; /* the first Python exception raised in a callback, with its traceback */
} pg_run;

/* The innermost call running in this thread (NULL: none). A manager's run
 * pushes its pg_run here and pops it when the C manager returns. */
extern _Thread_local pg_run *pg_current_run;

/* Moves the pending Python exception onto the running call (the first one
 * wins; a later one is reported as unraisable). */
void pg_run_keep_error(void);
/* 1 when the running call has kept an exception: it is stopping. */
int pg_run_failed(void);
/* Re-raises the exception kept on r as is (same object and traceback);
 * returns NULL. */
PyObject *pg_run_reraise(pg_run *r);

/* ---- PatternRewriter / PatternAnalyzer (patterns.c) ------------------------ */

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

extern PyTypeObject pg_PatternRewriter_Type, pg_PatternAnalyzer_Type;

/* The C struct for a Python pattern (rw for a rewriter, else an); its
 * callbacks are the trampolines and its user pointer is p. -1 with an
 * exception when p was never initialized. */
int pg_pattern_struct(pg_pattern *p, gwr_pattern_rewriter *rw, gwr_pattern_analyzer *an);

/* ---- BuiltinPattern (passes.c) --------------------------------------------- */

typedef struct {
    PyObject_HEAD
    const gwr_pass_info *info;
} pg_builtin;

extern PyTypeObject pg_BuiltinPattern_Type;

/* The built-in pass labelled label, or NULL (no exception set). */
const gwr_pass_info *pg_find_pass_info(const char *label);
/* The benefit a manager gives the pass: from its table position. */
int pg_pass_benefit(const gwr_pass_info *pi);
/* Raises NotFoundError for an unknown pass label; returns NULL. */
PyObject *pg_raise_no_pass(const char *label);
/* A new BuiltinPattern for pi. */
PyObject *pg_builtin_new(const gwr_pass_info *pi);

/* ---- RuleSet / CompiledRule (rules.c) -------------------------------------- */

typedef struct {
    PyObject_HEAD
    gwr_rules *r; /* NULL until compiled; never changes afterwards */
} pg_ruleset;

typedef struct {
    PyObject_HEAD
    PyObject *set; /* the compiled RuleSet */
    int index;
} pg_compiled_rule;

extern PyTypeObject pg_RuleSet_Type, pg_CompiledRule_Type;

/* The compiled rules of a RuleSet, or NULL with StateError when it was
 * never compiled. */
const gwr_rules *pg_ruleset_get(PyObject *o);
/* The C pattern of one CompiledRule; -1 with an exception. */
int pg_compiled_rule_struct(PyObject *o, gwr_pattern_rewriter *rw);

/* ---- managers (managers.c) ------------------------------------------------- */

extern PyTypeObject pg_RewritePatternManager_Type, pg_AnalysisPatternManager_Type;

/* d[k] = v, stealing v; -1 when v is NULL (its exception set) or the set
 * fails. */
int pg_dict_set_steal(PyObject *d, const char *k, PyObject *v);
/* "a,b" from a str or a list/tuple of str (passes.c); *out is NULL for
 * None. fn and what name the function and the argument in a TypeError.
 * The caller frees *out with PyMem_Free. */
int pg_str_list(PyObject *o, const char *fn, const char *what, char **out);

/* ---- initialization (called by pg_init_patterns) --------------------------- */

/* Interns the method names the managers call (listeners, trace files). */
int pg_init_managers(void);
/* Adds the gwr.passes helpers (_passes_labels, _passes_info, _passes_get)
 * and optimize() to the module. */
int pg_init_passes(PyObject *m);

#endif
