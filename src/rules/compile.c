/* compile.c - the load-time checks of a parsed rule set and its
 * compilation into the tables of gwr/match.h.
 *
 * A pattern with alternatives (Relu|Tanh(x), (P1 | P2)) becomes one table
 * per combination of choices (the first table that matches wins); each
 * table binds the rule's names: tensors to capture slots, attribute
 * captures and `n@` names to table nodes, shape dims to captures; an `n@`
 * name read again as an input (`n`, `n[k]`) is a NODE reference to that
 * table node, compiled before its first reader (a DAG pattern). What a
 * table cannot express (tolerances, attribute captures, constraints, where
 * clauses) runs as the root node's predicate (eval.c). Refusals: unknown
 * op, wrong arity, an unbound name in the replacement or a where clause,
 * a duplicate rule name, a replacement whose dtype cannot match. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gwr/passes.h"
#include "rules/rules_internal.h"

#define MAX_TABLES 64
#define MAX_ALTS 24

typedef struct cctx {
    gwr_rules *set;
    gwr_rl_rule *r;
    gwr_rl_table *t;
    int choice[MAX_ALTS];
    int visited[MAX_ALTS];
    int nslots;
    rl_error *e;
    const rl_expr *root;                          /* this table's pattern root (picked) */
    const rl_expr *busy[GWR_MATCH_MAX_NODES + 1]; /* ops being compiled (their inputs first) */
    int nbusy;
} cctx;

#define TRY(x)               \
    do {                     \
        gwr_status s_ = (x); \
        if (s_) return s_;   \
    } while (0)

/* ---- ops ------------------------------------------------------------------------ */

/* The op table entry of "Op" / "dom::Op"; NULL when unknown. */
static const gwr_op_info *op_info(const char *q) {
    const char *sep = strstr(q, "::");
    if (!sep) return gwr_op_info_get(gwr_op_lookup("", q));
    char dom[128];
    size_t n = (size_t)(sep - q);
    if (n >= sizeof dom) return NULL;
    memcpy(dom, q, n), dom[n] = 0;
    return gwr_op_info_get(gwr_op_lookup(dom, sep + 2));
}

static gwr_status check_op(cctx *c, const rl_expr *x, const char *name, int nin, int rest) {
    const gwr_op_info *info = op_info(name);
    if (!info) return rl_fail(c->e, x->line, x->col, "unknown op '%s'", name);
    int lo = info->min_inputs, hi = info->max_inputs;
    int bad = rest ? hi >= 0 && nin - 1 > hi : nin < lo || (hi >= 0 && nin > hi);
    if (!bad) return GWR_OK;
    if (hi < 0) return rl_fail(c->e, x->line, x->col, "%s takes at least %d input%s, not %d", name, lo, lo == 1 ? "" : "s", nin);
    if (lo == hi) return rl_fail(c->e, x->line, x->col, "%s takes %d input%s, not %d", name, lo, lo == 1 ? "" : "s", nin);
    return rl_fail(c->e, x->line, x->col, "%s takes %d to %d inputs, not %d", name, lo, hi, nin);
}

/* ---- choice points -------------------------------------------------------------- */

static gwr_status number_alts(cctx *c, rl_expr *x, int *n, int *radix) {
    if (!x) return GWR_OK;
    if (x->kind == RL_ALT) {
        if (*n == MAX_ALTS) return rl_fail(c->e, x->line, x->col, "too many alternatives in one pattern");
        radix[*n] = x->na;
        x->alt = (*n)++;
    }
    for (int i = 0; i < x->na; i++) TRY(number_alts(c, x->a[i], n, radix));
    return GWR_OK;
}

static const rl_expr *pick(cctx *c, const rl_expr *x) {
    while (x->kind == RL_ALT) {
        c->visited[x->alt] = 1;
        x = x->a[c->choice[x->alt]];
    }
    return x;
}

/* ---- bindings ---------------------------------------------------------------------- */

static rl_bind *add_bind(cctx *c, const rl_expr *at, const char *name, rl_bind_kind k) {
    if (c->t->nbinds == RL_MAX_BINDS) {
        rl_fail(c->e, at->line, at->col, "too many names in one pattern (at most %d)", RL_MAX_BINDS);
        return NULL;
    }
    rl_bind *b = &c->t->binds[c->t->nbinds++];
    memset(b, 0, sizeof *b);
    b->name = name, b->kind = k, b->slot = b->node = b->pos = -1;
    return b;
}

static gwr_status tensor_slot(cctx *c, const rl_expr *x, int *slot) {
    const rl_bind *b = rl_find_bind(c->t, x->s);
    if (b) {
        if (b->kind != RL_B_TENSOR)
            return rl_fail(c->e, x->line, x->col, "'%s' is already bound to something other than a tensor", x->s);
        *slot = b->slot;
        return GWR_OK;
    }
    if (c->nslots == GWR_MATCH_MAX_CAPTURES)
        return rl_fail(c->e, x->line, x->col, "too many tensor names in one pattern (at most %d)", GWR_MATCH_MAX_CAPTURES);
    rl_bind *nb = add_bind(c, x, x->s, RL_B_TENSOR);
    if (!nb) return GWR_ERR_PARSE;
    nb->slot = *slot = c->nslots++;
    return GWR_OK;
}

static int constrained(const rl_expr *x) {
    return x->has_tilde || x->is_const || x->dtypes || x->rank_lo >= 0 || x->nshape >= 0;
}

/* ---- the pattern ----------------------------------------------------------------------- */

static gwr_status comp_node(cctx *c, const rl_expr *x, int *idx);
static gwr_status comp_node_body(cctx *c, const rl_expr *x, int *idx);

/* The op named `name` (name@Op) in x: in this table's choices (pick), or
 * with all set in any alternative; NULL when none. */
static const rl_expr *find_def(cctx *c, const rl_expr *x, const char *name, int all) {
    if (!x) return NULL;
    if (x->kind == RL_ALT && !all) return find_def(c, pick(c, x), name, all);
    if (x->kind == RL_OP && x->node && !strcmp(x->node, name)) return x;
    if (x->kind != RL_OP && x->kind != RL_ALT) return NULL;
    for (int i = 0; i < x->na; i++) {
        const rl_expr *d = find_def(c, x->a[i], name, all);
        if (d) return d;
    }
    return NULL;
}

/* A pattern input naming a node (`n` or `n[k]` with n@Op(...) elsewhere
 * in the pattern): a reference to that node's table index, the node
 * compiled first when the use comes before it (a DAG: the same layer read
 * twice). 0: not a node name. */
static int node_use(cctx *c, const rl_expr *use, int out, gwr_mref *r, gwr_status *s) {
    const rl_bind *b = rl_find_bind(c->t, use->s);
    const rl_expr *def = NULL;
    *s = GWR_OK;
    if (b && b->kind != RL_B_NODE) return 0;
    if (!b && !(def = find_def(c, c->root, use->s, 0))) {
        if (find_def(c, c->root, use->s, 1))
            *s = rl_fail(c->e, use->line, use->col, "'%s' names a node of another alternative", use->s);
        return *s != GWR_OK;
    }
    if (use->optional || use->rest || constrained(use)) {
        *s = rl_fail(c->e, use->line, use->col, "a node name (%s@Op) takes no constraints, '?' or '...'", use->s);
        return 1;
    }
    int idx = b ? b->node : -1;
    if (!b) {
        for (int i = 0; i < c->nbusy; i++)
            if (c->busy[i] == def) {
                *s = rl_fail(c->e, use->line, use->col, "'%s' is read inside its own op (%s@%s): the pattern has a cycle", use->s, use->s, def->ops[0]);
                return 1;
            }
        if ((*s = comp_node(c, def, &idx))) return 1;
    }
    memset(r, 0, sizeof *r);
    r->kind = GWR_MREF_NODE, r->idx = idx, r->out = out;
    return 1;
}

static gwr_status comp_input(cctx *c, const rl_expr *x, int pos, int *rest_at, gwr_mref *r) {
    x = pick(c, x);
    memset(r, 0, sizeof *r);
    switch (x->kind) {
    case RL_OP: {
        int idx;
        TRY(comp_node(c, x, &idx));
        r->kind = GWR_MREF_NODE, r->idx = idx, r->out = x->out;
        return GWR_OK;
    }
    case RL_ANY: r->kind = GWR_MREF_CAP, r->idx = -1, r->optional = x->optional; return GWR_OK;
    case RL_NONE: r->kind = GWR_MREF_ABSENT; return GWR_OK;
    case RL_NUM: r->kind = GWR_MREF_SPLAT, r->idx = -1, r->value = x->num; return GWR_OK;
    case RL_INDEX: { /* n[k]: output k of the node named n */
        const rl_expr *n = x->a[0], *k = x->a[1];
        gwr_status s = GWR_OK;
        if (n->kind != RL_NAME || k->kind != RL_NUM || k->is_float || k->num < 0)
            return rl_fail(c->e, x->line, x->col, "a pattern input 'n[k]' names a node (n@Op) and an output number");
        if (node_use(c, n, (int)k->num, r, &s)) return s;
        return rl_fail(c->e, n->line, n->col, "'%s' is not a node name (n@Op in the pattern)", n->s);
    }
    case RL_NAME: {
        gwr_status s = GWR_OK;
        if (node_use(c, x, 0, r, &s)) return s;
        if (x->rest) {
            if (constrained(x)) return rl_fail(c->e, x->line, x->col, "a variadic name takes no constraints");
            if (rl_find_bind(c->t, x->s)) return rl_fail(c->e, x->line, x->col, "'%s' is bound twice", x->s);
            rl_bind *b = add_bind(c, x, x->s, RL_B_REST);
            if (!b) return GWR_ERR_PARSE;
            b->pos = pos, *rest_at = (int)(b - c->t->binds);
            r->kind = GWR_MREF_REST;
            return GWR_OK;
        }
        int slot = -1;
        TRY(tensor_slot(c, x, &slot));
        r->kind = x->is_const ? GWR_MREF_CONST : GWR_MREF_CAP, r->idx = slot, r->optional = x->optional;
        /* The engine checks what it can (v2): tolerance, dtypes, rank. */
        /* The declared tolerance, `tol 0` meaning exactly that value. */
        if (x->has_tilde) r->kind = GWR_MREF_SPLAT, r->value = x->tilde_v, r->tol = x->tilde_tol, r->tol_set = 1;
        r->dtypes = x->dtypes;
        if (x->rank_lo >= 0) r->rank_set = 1, r->rank_lo = x->rank_lo, r->rank_hi = x->rank_hi;
        if (constrained(x)) {
            gwr_rl_table *t = c->t;
            if (t->ncons == RL_MAX_BINDS) return rl_fail(c->e, x->line, x->col, "too many constraints in one pattern");
            t->cons[t->ncons].slot = slot, t->cons[t->ncons++].x = x;
            for (int d = 0; d < x->nshape; d++) {
                const rl_expr *dx = x->shape[d];
                if (dx->kind != RL_NAME) continue;
                const rl_bind *ob = rl_find_bind(t, dx->s);
                if (ob && ob->kind != RL_B_DIM) return rl_fail(c->e, dx->line, dx->col, "'%s' is already bound to something other than a dim", dx->s);
                rl_bind *b = add_bind(c, dx, dx->s, RL_B_DIM);
                if (!b) return GWR_ERR_PARSE;
                b->slot = slot, b->pos = d;
            }
        }
        return GWR_OK;
    }
    default:
        return rl_fail(c->e, x->line, x->col, "a pattern input is an op, a name, '_', 'none' or a number");
    }
}

static gwr_status comp_attr(cctx *c, const rl_expr *op, const rl_attr *at, gwr_match_node *n, int *na, int node) {
    if (at->absent || (at->val && (at->val->kind == RL_NUM || at->val->kind == RL_STR || at->val->kind == RL_LIST))) {
        if (*na == GWR_MATCH_MAX_ATTRS)
            return rl_fail(c->e, at->line, at->col, "too many attribute values on one op (at most %d)", GWR_MATCH_MAX_ATTRS);
        if (at->def) return rl_fail(c->e, at->def->line, at->def->col, "'default' follows a name, not a value");
        gwr_mattr *m = &n->attrs[(*na)++];
        m->name = at->name;
        const rl_expr *v = at->val;
        if (at->absent) m->kind = GWR_MATTR_ABSENT;
        else if (v->kind == RL_STR) m->kind = GWR_MATTR_STRING, m->s = v->s;
        else if (v->kind == RL_NUM && !v->is_float && fabs(v->num) < 9e15) m->kind = GWR_MATTR_INT, m->i = (int64_t)v->num;
        else if (v->kind == RL_NUM) m->kind = GWR_MATTR_FLOAT, m->f = v->num, m->tol = 1e-6 * fmax(1.0, fabs(v->num));
        else {
            int64_t *ints = rl_alloc(&c->set->arena, (size_t)(v->na + 1) * sizeof *ints);
            if (!ints) return rl_fail(c->e, v->line, v->col, "out of memory");
            for (int i = 0; i < v->na; i++) {
                if (v->a[i]->kind != RL_NUM || v->a[i]->is_float)
                    return rl_fail(c->e, v->a[i]->line, v->a[i]->col, "a list attribute value holds integers");
                ints[i] = (int64_t)v->a[i]->num;
            }
            m->kind = GWR_MATTR_INTS, m->ints = ints, m->n = v->na;
        }
        return GWR_OK;
    }
    if (at->val->kind != RL_NAME || at->val->optional || at->val->rest || constrained(at->val))
        return rl_fail(c->e, at->val->line, at->val->col, "a pattern attribute is a value, a name to capture or '!'");
    const rl_bind *ob = rl_find_bind(c->t, at->val->s);
    if (ob && ob->kind != RL_B_ATTR)
        return rl_fail(c->e, at->val->line, at->val->col, "'%s' is already bound to something other than an attribute", at->val->s);
    rl_bind *b = add_bind(c, at->val, at->val->s, RL_B_ATTR);
    if (!b) return GWR_ERR_PARSE;
    b->node = node, b->attr = at->name, b->def = at->def;
    (void)op;
    return GWR_OK;
}

static gwr_status comp_node(cctx *c, const rl_expr *x, int *idx) {
    gwr_rl_table *t = c->t;
    for (int i = 0; i < t->pat.nnodes; i++)
        if (t->node_expr[i] == x) { /* compiled already: a named node its use came before */
            *idx = i;
            return GWR_OK;
        }
    if (c->nbusy > GWR_MATCH_MAX_NODES) return rl_fail(c->e, x->line, x->col, "a pattern has at most %d ops", GWR_MATCH_MAX_NODES);
    c->busy[c->nbusy++] = x;
    gwr_status s = comp_node_body(c, x, idx);
    c->nbusy--;
    return s;
}

static gwr_status comp_node_body(cctx *c, const rl_expr *x, int *idx) {
    gwr_rl_table *t = c->t;
    const char *name = x->ops[0];
    int rest = x->na && pick(c, x->a[x->na - 1])->kind == RL_NAME && pick(c, x->a[x->na - 1])->rest;
    for (int k = 0; k < x->nops; k++) TRY(check_op(c, x, x->ops[k], x->na, rest));
    if (x->copy) return rl_fail(c->e, x->line, x->col, "'<...%s>' belongs in the replacement", x->copy);
    if (x->na > GWR_MATCH_MAX_INPUTS)
        return rl_fail(c->e, x->line, x->col, "too many inputs in a pattern op (at most %d)", GWR_MATCH_MAX_INPUTS);
    gwr_mref in[GWR_MATCH_MAX_INPUTS];
    int rest_at = -1;
    for (int k = 0; k < x->na; k++) {
        if (k < x->na - 1 && pick(c, x->a[k])->kind == RL_NAME && pick(c, x->a[k])->rest)
            return rl_fail(c->e, x->a[k]->line, x->a[k]->col, "a variadic name comes last");
        TRY(comp_input(c, x->a[k], k, &rest_at, &in[k]));
    }
    if (t->pat.nnodes == GWR_MATCH_MAX_NODES)
        return rl_fail(c->e, x->line, x->col, "a pattern has at most %d ops", GWR_MATCH_MAX_NODES);
    int i = t->pat.nnodes++;
    gwr_match_node *n = &t->nodes[i];
    memset(n, 0, sizeof *n);
    n->op_id = GWR_OP_CUSTOM;
    if (x->nops > 1) { /* Relu|Sigmoid(x): the engine's op alternatives (v2) */
        const char **ops = rl_alloc(&c->set->arena, (size_t)(x->nops + 1) * sizeof *ops);
        if (!ops) return rl_fail(c->e, x->line, x->col, "out of memory");
        memcpy(ops, x->ops, (size_t)x->nops * sizeof *ops);
        n->ops = ops;
    } else { /* the op id too: the matcher's faster test */
        n->op = name;
        const gwr_op_info *info = op_info(name);
        if (info) n->op_id = info->id;
    }
    memcpy(n->in, in, (size_t)x->na * sizeof *in);
    t->node_expr[i] = x;
    if (rest_at >= 0) t->binds[rest_at].node = i;
    int na = 0;
    for (int a = 0; a < x->nattrs; a++) TRY(comp_attr(c, x, &x->attrs[a], n, &na, i));
    if (x->node) {
        if (rl_find_bind(t, x->node)) return rl_fail(c->e, x->line, x->col, "'%s' is bound twice", x->node);
        rl_bind *b = add_bind(c, x, x->node, RL_B_NODE);
        if (!b) return GWR_ERR_PARSE;
        b->node = i;
    }
    *idx = i;
    return GWR_OK;
}

/* ---- names, dtypes -------------------------------------------------------------------------- */

static int is_dtype_word(const char *s) {
    uint32_t bits = 0;
    return rl_dtype_name_bits(s, &bits) && !(bits & (bits - 1));
}

/* Every name in x is bound in t (what: "replacement", "where clause"). */
static gwr_status check_names(cctx *c, const rl_expr *x, const char *what) {
    if (!x) return GWR_OK;
    if (x->kind == RL_NAME) {
        const rl_bind *b = rl_find_bind(c->t, x->s);
        if (!b && !is_dtype_word(x->s)) return rl_fail(c->e, x->line, x->col, "unbound name '%s' in the %s", x->s, what);
        return GWR_OK;
    }
    if (x->kind == RL_FIELD) {
        const rl_expr *base = x->a[0];
        const rl_bind *b = base->kind == RL_NAME ? rl_find_bind(c->t, base->s) : NULL;
        if (base->kind != RL_NAME) return rl_fail(c->e, x->line, x->col, "'.attr' follows a node name (n@Op in the pattern)");
        if (!b) return rl_fail(c->e, base->line, base->col, "unbound name '%s' in the %s", base->s, what);
        if (b->kind != RL_B_NODE) return rl_fail(c->e, base->line, base->col, "'%s' is not a node name (n@Op in the pattern)", base->s);
        return GWR_OK;
    }
    if (x->kind == RL_OP) {
        if (x->copy) {
            const rl_bind *b = rl_find_bind(c->t, x->copy);
            if (!b || b->kind != RL_B_NODE)
                return rl_fail(c->e, x->line, x->col, "'<...%s>' needs a node named '%s' in the pattern (%s@Op)", x->copy, x->copy, x->copy);
        }
        for (int i = 0; i < x->nattrs; i++) {
            TRY(check_names(c, x->attrs[i].val, what));
        }
    }
    for (int i = 0; i < x->na; i++) TRY(check_names(c, x->a[i], what));
    return GWR_OK;
}

/* No replacement op reads a node name as a tensor: the matched layers go
 * with the rewrite (n.attr, <...n> and the graph queries read it). */
static gwr_status check_repl_nodes(cctx *c, const rl_expr *x) {
    if (x->kind != RL_OP) return GWR_OK;
    for (int i = 0; i < x->na; i++) {
        const rl_expr *a = x->a[i];
        const rl_expr *n = a->kind == RL_INDEX ? a->a[0] : a;
        const rl_bind *b = n->kind == RL_NAME ? rl_find_bind(c->t, n->s) : NULL;
        if (b && b->kind == RL_B_NODE)
            return rl_fail(c->e, n->line, n->col, "'%s' names a matched node, not a tensor the replacement can read (write its op again)", n->s);
        TRY(check_repl_nodes(c, a));
    }
    return GWR_OK;
}

static gwr_status check_repl_ops(cctx *c, const rl_expr *x) {
    if (x->kind == RL_OP) {
        if (x->nops > 1) return rl_fail(c->e, x->line, x->col, "a replacement op is one op, not alternatives");
        if (x->node) return rl_fail(c->e, x->line, x->col, "node names (n@Op) belong in the pattern");
        for (int i = 0; i < x->nattrs; i++)
            if (x->attrs[i].absent || x->attrs[i].def)
                return rl_fail(c->e, x->attrs[i].line, x->attrs[i].col, "a replacement attribute is an expression");
        TRY(check_op(c, x, x->ops[0], x->na, 0));
    } else if (x->kind == RL_ALT) {
        return rl_fail(c->e, x->line, x->col, "alternatives belong in the pattern");
    } else if (x->kind == RL_NAME && (x->optional || x->rest)) {
        return rl_fail(c->e, x->line, x->col, "'%s%s' belongs in the pattern", x->s, x->rest ? "..." : "?");
    }
    for (int i = 0; i < x->na; i++) TRY(check_repl_ops(c, x->a[i]));
    return GWR_OK;
}

typedef struct sty {
    int kind;          /* 0 unknown, 1 fixed dtype d, 2 the dtype of a name (mask: its allowed dtypes, 0 any) */
    gwr_dtype d;
    uint32_t mask;
} sty;

static const char *const bool_ops[] = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And",
                                       "Or", "Xor", "IsNaN", "IsInf", NULL};
static const char *const i64_ops[] = {"Shape", "Size", "NonZero", "ArgMax", "ArgMin", NULL};

static int in_names(const char *const *v, const char *s) {
    for (; *v; v++)
        if (!strcmp(*v, s)) return 1;
    return 0;
}

static sty static_type(cctx *c, const rl_expr *x, int pattern) {
    sty u = {0};
    if (pattern) x = pick(c, x);
    if (x->kind == RL_NAME) {
        const rl_bind *b = rl_find_bind(c->t, x->s);
        if (pattern && b && b->kind == RL_B_NODE) return static_type(c, c->t->node_expr[b->node], pattern);
        if (!b || b->kind != RL_B_TENSOR) return u;
        uint32_t mask = 0;
        for (int i = 0; i < c->t->ncons; i++)
            if (c->t->cons[i].slot == b->slot && c->t->cons[i].x->dtypes) mask = mask ? mask & c->t->cons[i].x->dtypes : c->t->cons[i].x->dtypes;
        if (mask && !(mask & (mask - 1))) {
            for (int d = 0; d < 32; d++)
                if (mask >> d & 1u) u.kind = 1, u.d = (gwr_dtype)d;
            return u;
        }
        u.kind = 2, u.mask = mask;
        return u;
    }
    if (x->kind != RL_OP) return u;
    if (x->nops > 1) return u;
    const char *name = x->ops[0];
    const gwr_op_info *info = op_info(name);
    if (!info || *info->domain) return u;
    if (in_names(bool_ops, name)) return (sty){1, GWR_BOOL, 0};
    if (in_names(i64_ops, name)) return (sty){1, GWR_INT64, 0};
    if (!strcmp(name, "Cast")) {
        for (int i = 0; i < x->nattrs; i++)
            if (!strcmp(x->attrs[i].name, "to") && x->attrs[i].val && x->attrs[i].val->kind == RL_NUM)
                return (sty){1, (gwr_dtype)(int)x->attrs[i].val->num, 0};
        return u;
    }
    if (!strcmp(name, "CastLike") || !strcmp(name, "Where")) return x->na > 1 ? static_type(c, x->a[1], pattern) : u;
    if (strstr(name, "Integer") || strstr(name, "Quantize")) return u;
    switch (info->layer_type) {
    case GWR_LAYER_ELEMENTWISE: case GWR_LAYER_UNARY: case GWR_LAYER_ACTIVATION: case GWR_LAYER_MATRIX_MULTIPLY:
    case GWR_LAYER_CONVOLUTION: case GWR_LAYER_DECONVOLUTION: case GWR_LAYER_POOLING: case GWR_LAYER_NORMALIZATION:
    case GWR_LAYER_SOFTMAX: case GWR_LAYER_SHUFFLE: case GWR_LAYER_CONCATENATION: case GWR_LAYER_SPLIT:
    case GWR_LAYER_SLICE: case GWR_LAYER_GATHER: case GWR_LAYER_PADDING: case GWR_LAYER_IDENTITY: case GWR_LAYER_REDUCE:
        return x->na ? static_type(c, x->a[0], pattern) : u;
    default: return u;
    }
}

static gwr_status check_dtype(cctx *c, const rl_expr *pat, const rl_expr *repl) {
    sty p = static_type(c, pat, 1), r = static_type(c, repl, 0);
    int bad = 0;
    if (p.kind == 1 && r.kind == 1) bad = p.d != r.d;
    else if (p.kind == 1 && r.kind == 2) bad = r.mask && !(r.mask >> p.d & 1u);
    else if (p.kind == 2 && r.kind == 1) bad = p.mask && !(p.mask >> r.d & 1u);
    else if (p.kind == 2 && r.kind == 2) bad = p.mask && r.mask && !(p.mask & r.mask);
    if (!bad) return GWR_OK;
    char pd[64], rd[64];
    snprintf(pd, sizeof pd, "%s", p.kind == 1 ? gwr_dtype_name(p.d) : "a constrained dtype");
    snprintf(rd, sizeof rd, "%s", r.kind == 1 ? gwr_dtype_name(r.d) : "a constrained dtype");
    return rl_fail(c->e, repl->line, repl->col, "the replacement's dtype (%s) cannot match the pattern's (%s)", rd, pd);
}

/* ---- one table, one rule, the set ------------------------------------------------------------ */

static gwr_status comp_table(cctx *c) {
    gwr_rl_rule *r = c->r;
    gwr_rl_table *t = c->t;
    memset(t, 0, sizeof *t);
    c->nslots = 0;
    t->rule = r;
    const rl_expr *root = pick(c, r->pattern);
    c->root = root, c->nbusy = 0;
    if (root->kind != RL_OP)
        return rl_fail(c->e, root->line, root->col, "a pattern's root is an op");
    int idx;
    TRY(comp_node(c, root, &idx));
    t->pat.name = r->name;
    t->pat.nodes = t->nodes;
    t->pat.user = t;
    if (gwr_match_check(&t->pat)) return rl_fail(c->e, root->line, root->col, "%s", gwr_last_errmsg());
    /* The replacement and the where clauses see only bound names. */
    TRY(check_names(c, r->repl, "replacement"));
    TRY(check_repl_nodes(c, r->repl));
    for (int w = 0; w < r->nwhere; w++) TRY(check_names(c, r->where[w], "where clause"));
    if (r->repl->kind == RL_NAME) {
        const rl_bind *b = rl_find_bind(t, r->repl->s);
        if (b->kind != RL_B_TENSOR)
            return rl_fail(c->e, r->repl->line, r->repl->col, "'%s' is not a tensor of the pattern", r->repl->s);
    } else if (r->repl->kind != RL_OP) {
        return rl_fail(c->e, r->repl->line, r->repl->col, "a replacement is an op or a name of the pattern");
    }
    return check_dtype(c, root, r->repl);
}

static gwr_status comp_tables(cctx *cp, gwr_rl_table *tables, int nalts, const int *radix);

static gwr_status comp_rule(gwr_rules *set, gwr_rl_rule *r, rl_error *e) {
    cctx c = {.set = set, .r = r, .e = e};
    int radix[MAX_ALTS], nalts = 0;
    TRY(number_alts(&c, r->pattern, &nalts, radix));
    TRY(check_repl_ops(&c, r->repl));
    /* Not zeroed: comp_table clears each table it fills (MAX_TABLES of them
     * zeroed here cost more than the rest of loading the built-in rules). */
    gwr_rl_table *tables = gwr_malloc(MAX_TABLES * sizeof *tables);
    if (!tables) return rl_fail(e, r->line, r->col, "out of memory");
    gwr_status s = comp_tables(&c, tables, nalts, radix);
    gwr_free(tables);
    return s;
}

static gwr_status comp_tables(cctx *cp, gwr_rl_table *tables, int nalts, const int *radix) {
    cctx c = *cp;
    gwr_rl_rule *r = c.r;
    gwr_rules *set = c.set;
    rl_error *e = c.e;
    int n = 0;
    for (;;) {
        memset(c.visited, 0, sizeof c.visited);
        if (n == MAX_TABLES) return rl_fail(e, r->line, r->col, "rule '%s' expands to more than %d alternatives", r->name, MAX_TABLES);
        c.t = &tables[n];
        TRY(comp_table(&c));
        /* A combination choosing inside an unvisited branch repeats a table. */
        int dup = 0;
        for (int k = 0; k < nalts; k++)
            if (!c.visited[k] && c.choice[k]) dup = 1;
        if (!dup) n++;
        int k = 0;
        for (; k < nalts; k++) {
            if (++c.choice[k] < radix[k]) break;
            c.choice[k] = 0;
        }
        if (k == nalts) break;
    }
    r->tables = rl_alloc(&set->arena, (size_t)n * sizeof *r->tables);
    if (!r->tables) return rl_fail(e, r->line, r->col, "out of memory");
    memcpy(r->tables, tables, (size_t)n * sizeof *tables);
    r->ntables = n;
    int nroots = 0;
    for (int i = 0; i < n; i++) {
        gwr_rl_table *t = &r->tables[i];
        t->pat.nodes = t->nodes, t->pat.user = t;
        const gwr_match_node *rn = &t->nodes[t->pat.nnodes - 1];
        for (int k = 0; rn->ops ? rn->ops[k] != NULL : k < 1; k++) {
            const char *op = rn->ops ? rn->ops[k] : rn->op;
            int seen = 0;
            for (int j = 0; j < nroots; j++) seen |= !strcmp(r->root_ops[j], op);
            if (!seen && nroots < GWR_MATCH_MAX_NODES) r->root_ops[nroots++] = op;
        }
    }
    r->root_ops[nroots] = NULL;
    return GWR_OK;
}

gwr_status rl_compile(gwr_rules *set, rl_error *e) {
    for (int i = 0; i < set->nrules; i++) {
        gwr_rl_rule *r = &set->rules[i];
        for (int j = 0; j < i; j++)
            if (!strcmp(set->rules[j].name, r->name))
                return rl_fail(e, r->name_line, r->name_col, "duplicate rule name '%s' (first at line %d)", r->name, set->rules[j].line);
        TRY(comp_rule(set, r, e));
    }
    return GWR_OK;
}
