/* matcher.c - the declarative matcher of gwr/match.h: a table of nodes,
 * root last, matched from the root towards the producers.
 *
 * A match binds table nodes to layers and capture slots to tensors. One
 * attempt is deterministic: from the root, each node's input references
 * are taken in order and a NODE reference binds the producer of the input
 * (depth first). The choice points are the commutative nodes (two operand
 * references and an op with GWR_OPF_COMMUTATIVE: either order) and the
 * EITHER references (one of several earlier nodes). The attempts count
 * through the combinations as a mixed-radix number, so a capture bound on
 * one side is never a wrong guess that blocks the other; an attempt that
 * failed before consulting a choice skips every combination differing only
 * there. A structural match then passes the single-reader rule, the
 * nodes' predicates, the dims equalities and the root's `where`; the
 * failure reason of the attempt that got furthest is kept.
 *
 * Built on the public API only; nothing here allocates. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gwr/match.h"
#include "util/util.h"

#define MAX_CHOICES 12 /* 2^12 = GWR_MATCH_MAX_COMBOS: more digits than that cannot fit */

/* ---- the table's shape ------------------------------------------------------ */

static int nrefs(const gwr_match_node *n) {
    int k = 0;
    while (k < GWR_MATCH_MAX_INPUTS && n->in[k].kind != GWR_MREF_END) k++;
    return k;
}

static int nattrs(const gwr_match_node *n) {
    int k = 0;
    while (k < GWR_MATCH_MAX_ATTRS && n->attrs[k].kind != GWR_MATTR_NONE) k++;
    return k;
}

/* op "Op" (default domain) or "domain::Op" names l's op. */
static int op_named(const gwr_layer *l, const char *op) {
    const char *sep = strstr(op, "::"), *dom = gwr_layer_domain(l);
    if (!sep) return !*dom && !strcmp(gwr_layer_op(l), op);
    size_t dl = (size_t)(sep - op);
    return strlen(dom) == dl && !strncmp(dom, op, dl) && !strcmp(gwr_layer_op(l), sep + 2);
}

static gwr_op_id lookup_named_slow(const char *op) {
    const char *sep = strstr(op, "::");
    if (!sep) return gwr_op_lookup("", op);
    char dom[128];
    size_t dl = (size_t)(sep - op);
    if (dl >= sizeof dom) return GWR_OP_CUSTOM;
    memcpy(dom, op, dl);
    dom[dl] = 0;
    return gwr_op_lookup(dom, sep + 2);
}

/* lookup_named through a small per-thread cache keyed by the string's
 * address and checked against a copy of its text (so a string freed and
 * another put at its address is looked up again): every attempt checks
 * its table (make_plan asks each node's op whether it commutes), and the
 * op table's hash lookup was a third of that. */
#define NAMED_CACHE 64
#define NAMED_MAX 40
static gwr_op_id lookup_named(const char *op) {
    static _Thread_local struct {
        const char *p;
        char text[NAMED_MAX];
        gwr_op_id id;
    } cache[NAMED_CACHE];
    size_t h = ((size_t)(uintptr_t)op >> 3) % NAMED_CACHE;
    if (cache[h].p == op && !strcmp(cache[h].text, op)) return cache[h].id;
    gwr_op_id id = lookup_named_slow(op);
    size_t n = strlen(op);
    if (n < NAMED_MAX) {
        memcpy(cache[h].text, op, n + 1);
        cache[h].p = op, cache[h].id = id;
    }
    return id;
}

static int id_commutative(gwr_op_id id) {
    const gwr_op_info *info = gwr_op_info_get(id);
    return info && (info->flags & GWR_OPF_COMMUTATIVE);
}

/* The node's op for messages: "Mul", "Relu" then "|..." (op_more) for an
 * ops list, or "any op". */
static const char *node_op(const gwr_match_node *n) {
    if (!n) return "?";
    if (n->ops && n->ops[0]) return n->ops[0];
    if (n->op) return n->op;
    const gwr_op_info *info = gwr_op_info_get(n->op_id);
    return info ? info->name : "any op";
}

static const char *op_more(const gwr_match_node *n) { return n && n->ops && n->ops[0] && n->ops[1] ? "|..." : ""; }

/* Is node n a choice point: two operand references, one of its ops commutative? */
static int may_swap(const gwr_match_node *n) {
    if (nrefs(n) != 2 || n->in[1].kind == GWR_MREF_REST) return 0;
    if (n->op_id != GWR_OP_CUSTOM) return id_commutative(n->op_id);
    if (n->op) return id_commutative(lookup_named(n->op));
    for (int k = 0; n->ops && n->ops[k]; k++)
        if (id_commutative(lookup_named(n->ops[k]))) return 1;
    return 0;
}

/* The choice points of a table, as digits of a mixed-radix number. */
typedef struct plan {
    int n;                 /* digits */
    int radix[MAX_CHOICES];
    signed char swap_digit[GWR_MATCH_MAX_NODES];                         /* -1: no choice */
    signed char alt_digit[GWR_MATCH_MAX_NODES][GWR_MATCH_MAX_INPUTS];    /* -1: no choice */
    long combos;
    int attr_slots;        /* the table captures attributes */
} plan;

/* 0, or -1 when the table has more than GWR_MATCH_MAX_COMBOS combinations. */
static int make_plan(const gwr_match_pattern *p, plan *pl) {
    memset(pl, -1, sizeof *pl);
    pl->n = 0, pl->combos = 1, pl->attr_slots = 0;
    for (int i = 0; i < p->nnodes; i++) {
        const gwr_match_node *n = &p->nodes[i];
        int nr = nrefs(n);
        for (int k = 0; k < GWR_MATCH_MAX_ATTRS && n->attrs[k].kind != GWR_MATTR_NONE; k++)
            pl->attr_slots |= n->attrs[k].kind == GWR_MATTR_CAPTURE;
        for (int k = -1; k < nr; k++) {
            int radix = k < 0 ? (may_swap(n) ? 2 : 1) : n->in[k].kind == GWR_MREF_EITHER ? n->in[k].nalt : 1;
            if (radix < 2) continue;
            if (pl->n == MAX_CHOICES || pl->combos * radix > GWR_MATCH_MAX_COMBOS) return -1;
            pl->combos *= radix;
            pl->radix[pl->n] = radix;
            if (k < 0) pl->swap_digit[i] = (signed char)pl->n++;
            else pl->alt_digit[i][k] = (signed char)pl->n++;
        }
    }
    return 0;
}

#define BAD(...) gwr_set_last_error(GWR_ERR_INVALID_ARG, __VA_ARGS__)

static gwr_status check_ref(const gwr_match_pattern *p, int i, int k, int nr) {
    const gwr_mref *r = &p->nodes[i].in[k];
    const char *nm = p->name ? p->name : "?";
    if (r->rank_set && (r->rank_lo < 0 || r->rank_hi < r->rank_lo || r->rank_hi > GWR_MAX_RANK))
        return BAD("match pattern '%s': node %d input %d: rank range %d..%d (0 <= lo <= hi <= %d)", nm, i, k, r->rank_lo,
                   r->rank_hi, GWR_MAX_RANK);
    if (r->dtypes >> GWR_DTYPE_COUNT)
        return BAD("match pattern '%s': node %d input %d: dtype mask names no dtype (bits past %d)", nm, i, k, GWR_DTYPE_COUNT - 1);
    switch (r->kind) {
    case GWR_MREF_NODE:
        if (r->idx < 0 || r->idx >= i)
            return BAD("match pattern '%s': node %d input %d refers to node %d (only earlier nodes, "
                       "0..%d, may be referred to; the root is the last node)",
                       nm, i, k, r->idx, i - 1);
        if (r->out < 0) return BAD("match pattern '%s': node %d input %d: output %d", nm, i, k, r->out);
        return GWR_OK;
    case GWR_MREF_EITHER:
        if (r->nalt < 2 || r->nalt > GWR_MATCH_MAX_ALTS)
            return BAD("match pattern '%s': node %d input %d: EITHER needs 2..%d alternatives, has %d", nm, i, k,
                       GWR_MATCH_MAX_ALTS, r->nalt);
        for (int a = 0; a < r->nalt; a++) {
            if (r->alt[a] < 0 || r->alt[a] >= i)
                return BAD("match pattern '%s': node %d input %d: alternative %d is node %d (only earlier nodes, 0..%d)", nm,
                           i, k, a, r->alt[a], i - 1);
            for (int b = 0; b < a; b++)
                if (r->alt[b] == r->alt[a])
                    return BAD("match pattern '%s': node %d input %d: node %d is an alternative twice", nm, i, k, r->alt[a]);
        }
        if (r->out < 0) return BAD("match pattern '%s': node %d input %d: output %d", nm, i, k, r->out);
        return GWR_OK;
    case GWR_MREF_SPLAT:
        if (!(r->tol >= 0)) return BAD("match pattern '%s': node %d input %d: SPLAT tolerance %g (must be >= 0)", nm, i, k, r->tol);
        /* fall through */
    case GWR_MREF_CAP:
    case GWR_MREF_CONST:
        if (r->idx < -1 || r->idx >= GWR_MATCH_MAX_CAPTURES)
            return BAD("match pattern '%s': node %d input %d: capture slot %d out of range (-1..%d)", nm, i, k, r->idx,
                       GWR_MATCH_MAX_CAPTURES - 1);
        return GWR_OK;
    case GWR_MREF_ABSENT: return GWR_OK;
    case GWR_MREF_REST:
        if (k != nr - 1) return BAD("match pattern '%s': node %d: REST must be the last input", nm, i);
        if (r->min < 0) return BAD("match pattern '%s': node %d: REST minimum %d (must be >= 0)", nm, i, r->min);
        return GWR_OK;
    default:
        return BAD("match pattern '%s': node %d input %d: unknown kind %d", nm, i, k, (int)r->kind);
    }
}

static gwr_status check_attrs(const gwr_match_pattern *p, int i) {
    const gwr_match_node *n = &p->nodes[i];
    const char *nm = p->name ? p->name : "?";
    for (int a = 0; a < nattrs(n); a++) {
        const gwr_mattr *c = &n->attrs[a];
        if (!c->name || !*c->name || c->kind > GWR_MATTR_CAPTURE || (c->kind == GWR_MATTR_STRING && !c->s) ||
            (c->kind == GWR_MATTR_INTS && (c->n < 0 || (c->n && !c->ints))))
            return BAD("match pattern '%s': node %d: malformed attribute constraint %d", nm, i, a);
        if (c->kind != GWR_MATTR_CAPTURE) continue;
        if (c->slot < 0 || c->slot >= GWR_MATCH_MAX_ATTR_SLOTS)
            return BAD("match pattern '%s': node %d: attribute '%s' captured into slot %d (0..%d)", nm, i, c->name, c->slot,
                       GWR_MATCH_MAX_ATTR_SLOTS - 1);
        if (c->absent_ok &&
            !((c->def == GWR_MATTR_INT || c->def == GWR_MATTR_FLOAT) || (c->def == GWR_MATTR_STRING && c->s) ||
              (c->def == GWR_MATTR_INTS && c->n >= 0 && (!c->n || c->ints))))
            return BAD("match pattern '%s': node %d: attribute '%s': the default must be an INT, FLOAT, STRING or INTS value", nm,
                       i, c->name);
    }
    return GWR_OK;
}

static gwr_status check_node(const gwr_match_pattern *p, int i) {
    const gwr_match_node *n = &p->nodes[i];
    const char *nm = p->name ? p->name : "?";
    if (n->op_id < GWR_OP_CUSTOM || n->op_id >= GWR_OP_COUNT || (n->op && !*n->op)) return BAD("match pattern '%s': node %d: bad op", nm, i);
    if (n->ops) {
        if (n->op || n->op_id != GWR_OP_CUSTOM) return BAD("match pattern '%s': node %d: set op (or op_id) or ops, not both", nm, i);
        if (!n->ops[0]) return BAD("match pattern '%s': node %d: an empty ops list", nm, i);
        for (int k = 0; n->ops[k]; k++)
            if (!*n->ops[k]) return BAD("match pattern '%s': node %d: ops entry %d is empty", nm, i, k);
    }
    for (int d = 0; d < GWR_MATCH_MAX_DIMS_EQ; d++) {
        const gwr_mdims *q = &n->dims_eq[d];
        if (!q->on) continue;
        if (q->a < 0 || q->a >= GWR_MATCH_MAX_CAPTURES || q->b < 0 || q->b >= GWR_MATCH_MAX_CAPTURES)
            return BAD("match pattern '%s': node %d: dims equality %d names capture slots %d and %d (0..%d)", nm, i, d, q->a, q->b,
                       GWR_MATCH_MAX_CAPTURES - 1);
        if (q->da < -GWR_MAX_RANK || q->da >= GWR_MAX_RANK || q->db < -GWR_MAX_RANK || q->db >= GWR_MAX_RANK)
            return BAD("match pattern '%s': node %d: dims equality %d: dims %d and %d out of range", nm, i, d, q->da, q->db);
    }
    int root = i == p->nnodes - 1;
    if (!root && (n->where || n->targets || n->min_opset || n->opset_targets))
        return BAD("match pattern '%s': node %d: where, targets, min_opset and opset_targets belong on the root (node %d)", nm, i,
                   p->nnodes - 1);
    if (n->targets < 0 || n->min_opset < 0 || n->opset_targets < 0)
        return BAD("match pattern '%s': node %d: negative targets, min_opset or opset_targets", nm, i);
    return check_attrs(p, i);
}

/* gwr_match_check, filling *pl with the table's choice points. */
static gwr_status check_table(const gwr_match_pattern *p, plan *pl) {
    if (!p) return BAD("gwr_match_check: NULL pattern");
    const char *nm = p->name ? p->name : "?";
    if (!p->nodes || p->nnodes < 1 || p->nnodes > GWR_MATCH_MAX_NODES)
        return BAD("match pattern '%s': needs 1..%d nodes, has %d%s", nm, GWR_MATCH_MAX_NODES, p->nnodes, p->nodes ? "" : " (NULL table)");
    int reached[GWR_MATCH_MAX_NODES] = {0};
    reached[p->nnodes - 1] = 1;
    for (int i = p->nnodes - 1; i >= 0; i--) {
        const gwr_match_node *n = &p->nodes[i];
        gwr_status s = check_node(p, i);
        if (s) return s;
        int nr = nrefs(n);
        for (int k = 0; k < nr; k++) {
            if ((s = check_ref(p, i, k, nr))) return s;
            const gwr_mref *r = &n->in[k];
            if (r->kind == GWR_MREF_NODE && reached[i]) reached[r->idx] = 1;
            for (int a = 0; r->kind == GWR_MREF_EITHER && reached[i] && a < r->nalt; a++) reached[r->alt[a]] = 1;
        }
        if (!reached[i]) return BAD("match pattern '%s': node %d is not reachable from the root (node %d)", nm, i, p->nnodes - 1);
    }
    if (make_plan(p, pl)) return BAD("match pattern '%s': more than %d choice combinations (commutative swaps times alternatives)", nm, GWR_MATCH_MAX_COMBOS);
    return GWR_OK;
}

/* check_table through a small per-thread cache of the tables checked last:
 * a table at the same address whose nodes hold the same bytes as a cached
 * copy gets that copy's plan without being checked again (a table edited
 * in place, or another one built where a freed one was, differs in its
 * bytes and is checked anew; only an op name's text rewritten in place
 * behind unchanged pointers keeps its cached commutativity). Checking the
 * table was a third of a failed gwr_match_layer, which is what most of an
 * optimizer's attempts are. */
#define CHECKED_CACHE 16
#define CHECKED_MAX_NODES 6
static gwr_status check_table_cached(const gwr_match_pattern *p, plan *pl) {
    static _Thread_local struct {
        const gwr_match_pattern *p;
        const gwr_match_node *nodes;
        int nnodes;
        gwr_match_node copy[CHECKED_MAX_NODES];
        plan pl;
    } cache[CHECKED_CACHE];
    if (!p || !p->nodes || p->nnodes < 1 || p->nnodes > CHECKED_MAX_NODES) return check_table(p, pl);
    size_t h = (size_t)(((uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15u) >> 59) % CHECKED_CACHE, nb = (size_t)p->nnodes * sizeof *p->nodes;
    if (cache[h].p == p && cache[h].nodes == p->nodes && cache[h].nnodes == p->nnodes && !memcmp(cache[h].copy, p->nodes, nb)) {
        *pl = cache[h].pl;
        return GWR_OK;
    }
    gwr_status s = check_table(p, pl);
    if (!s) {
        cache[h].p = p, cache[h].nodes = p->nodes, cache[h].nnodes = p->nnodes, cache[h].pl = *pl;
        memcpy(cache[h].copy, p->nodes, nb);
    }
    return s;
}

gwr_status gwr_match_check(const gwr_match_pattern *p) {
    plan pl;
    return check_table(p, &pl);
}

/* ---- one attempt -------------------------------------------------------------- */

typedef struct attempt {
    const gwr_match_pattern *p;
    gwr_match *m;
    const plan *pl;
    const int *digit;  /* this attempt's value of each choice */
    unsigned consulted; /* bit d: choice d was read */
    int progress;      /* nodes and inputs matched so far: how far the attempt got */
} attempt;

static int fail(attempt *a, const char *why, int node, int input, const gwr_tensor *t) {
    gwr_match *m = a->m;
    m->why = why, m->why_node = node, m->why_input = input, m->why_tensor = t;
    return 0;
}

static int choice(attempt *a, int d) {
    if (d < 0) return 0;
    a->consulted |= 1u << d;
    return a->digit[d];
}

static int op_is(const gwr_match_node *n, const gwr_layer *l) {
    if (n->op_id != GWR_OP_CUSTOM) return gwr_layer_op_id(l) == n->op_id;
    if (n->ops) {
        for (int k = 0; n->ops[k]; k++)
            if (op_named(l, n->ops[k])) return 1;
        return 0;
    }
    return !n->op || op_named(l, n->op);
}

static int attr_ok(const gwr_layer *l, const gwr_mattr *c) {
    int idx = gwr_layer_find_attr(l, c->name);
    if (idx < 0) return c->kind == GWR_MATTR_ABSENT || c->absent_ok;
    gwr_attr_type t = gwr_layer_attr_type(l, idx);
    switch (c->kind) {
    case GWR_MATTR_INT: {
        int64_t v;
        return t == GWR_ATTR_INT && !gwr_layer_get_int(l, c->name, &v) && v == c->i;
    }
    case GWR_MATTR_FLOAT: {
        float v;
        return t == GWR_ATTR_FLOAT && !gwr_layer_get_float(l, c->name, &v) && fabs((double)v - c->f) <= c->tol;
    }
    case GWR_MATTR_STRING: {
        const char *v;
        size_t len;
        return t == GWR_ATTR_STRING && !gwr_layer_get_string(l, c->name, &v, &len) && len == strlen(c->s) &&
               !memcmp(v, c->s, len);
    }
    case GWR_MATTR_INTS: {
        const int64_t *v;
        int64_t n;
        return t == GWR_ATTR_INTS && !gwr_layer_get_ints(l, c->name, &v, &n) && n == c->n &&
               (!n || !memcmp(v, c->ints, (size_t)n * sizeof *v));
    }
    default: return 0;  /* ABSENT, and it is there */
    }
}

/* The value of attribute constraint c (a CAPTURE) on l into *v: 1, or 0
 * when it is absent without a default. */
static int read_attr(const gwr_layer *l, const gwr_mattr *c, gwr_match_attr *v) {
    memset(v, 0, sizeof *v);
    int idx = gwr_layer_find_attr(l, c->name);
    if (idx < 0) {
        if (!c->absent_ok) return 0;
        v->is_default = 1;
        switch (c->def) {
        case GWR_MATTR_INT: v->type = GWR_ATTR_INT, v->i = c->i; break;
        case GWR_MATTR_FLOAT: v->type = GWR_ATTR_FLOAT, v->f = c->f; break;
        case GWR_MATTR_STRING: v->type = GWR_ATTR_STRING, v->s = c->s, v->len = strlen(c->s); break;
        default: v->type = GWR_ATTR_INTS, v->ints = c->ints, v->n = c->n; break;
        }
        return 1;
    }
    v->type = gwr_layer_attr_type(l, idx);
    float f;
    switch (v->type) {
    case GWR_ATTR_INT: gwr_layer_get_int(l, c->name, &v->i); break;
    case GWR_ATTR_FLOAT: if (!gwr_layer_get_float(l, c->name, &f)) v->f = f; break;
    case GWR_ATTR_STRING: gwr_layer_get_string(l, c->name, &v->s, &v->len); break;
    case GWR_ATTR_INTS: gwr_layer_get_ints(l, c->name, &v->ints, &v->n); break;
    case GWR_ATTR_FLOATS: gwr_layer_get_floats(l, c->name, &v->floats, &v->n); break;
    default: break;
    }
    return 1;
}

static int attr_same(const gwr_match_attr *x, const gwr_match_attr *y) {
    if (x->type != y->type) return 0;
    switch (x->type) {
    case GWR_ATTR_INT: return x->i == y->i;
    case GWR_ATTR_FLOAT: return x->f == y->f;
    case GWR_ATTR_STRING: return x->len == y->len && (!x->len || !memcmp(x->s, y->s, x->len));
    case GWR_ATTR_INTS: return x->n == y->n && (!x->n || !memcmp(x->ints, y->ints, (size_t)x->n * sizeof *x->ints));
    case GWR_ATTR_FLOATS: return x->n == y->n && (!x->n || !memcmp(x->floats, y->floats, (size_t)x->n * sizeof *x->floats));
    default: return 0; /* values not read: never known equal */
    }
}

static int capture_attr(attempt *a, int i, const gwr_layer *l, const gwr_mattr *c) {
    gwr_match_attr v;
    if (!read_attr(l, c, &v)) return fail(a, "a captured attribute is absent", i, -1, NULL);
    gwr_match_attr *slot = &a->m->attrs[c->slot];
    if (slot->type != GWR_ATTR_UNDEFINED && !attr_same(slot, &v))
        return fail(a, "an attribute capture used twice holds two different values", i, -1, NULL);
    *slot = v;
    return 1;
}

static int bind_capture(attempt *a, int node, int pos, int slot, gwr_tensor *t) {
    if (slot < 0) return 1;
    gwr_tensor **c = &a->m->captures[slot];
    if (*c && *c != t) return fail(a, "a capture used twice holds two different tensors", node, pos, t);
    *c = t;
    return 1;
}

static int is_const(const gwr_tensor *t) {
    const gwr_layer *p = gwr_tensor_parent(t);
    return p && gwr_layer_type(p) == GWR_LAYER_CONSTANT && !gwr_layer_is_removed(p);
}

static int bind_node(attempt *a, int i, gwr_layer *l);

static int match_input(attempt *a, int i, int pos, int ri, gwr_tensor *t) {
    const gwr_mref *r = &a->p->nodes[i].in[ri];
    if (!t) {
        if (r->kind == GWR_MREF_ABSENT || r->optional) return 1;
        return fail(a, "the input is absent", i, pos, NULL);
    }
    if (r->kind == GWR_MREF_ABSENT) return fail(a, "the input must be absent", i, pos, t);
    if (r->dtypes && !(gwr_tensor_dtype(t) != GWR_UNDEFINED && (r->dtypes >> gwr_tensor_dtype(t) & 1u)))
        return fail(a, "a dtype the pattern does not allow (or unknown)", i, pos, t);
    if (r->rank_set) {
        int rk = gwr_tensor_rank(t);
        if (rk < r->rank_lo || rk > r->rank_hi) return fail(a, "a rank outside the pattern's range (or unknown)", i, pos, t);
    }
    switch (r->kind) {
    case GWR_MREF_NODE:
    case GWR_MREF_EITHER: {
        int node = r->kind == GWR_MREF_NODE ? r->idx : r->alt[choice(a, a->pl->alt_digit[i][ri])];
        gwr_layer *pl = gwr_tensor_parent(t);
        if (!pl || gwr_tensor_parent_output_index(t) != r->out)
            return fail(a, pl ? "produced by another output of its layer" : "a graph input, not a layer's output", i, pos, t);
        return bind_node(a, node, pl);
    }
    case GWR_MREF_SPLAT:
        if (!is_const(t)) return fail(a, "not a constant", i, pos, t);
        if (!gwr_match_const_is_splat(t, r->value, r->tol_set ? r->tol : 1e-6 * fmax(1.0, fabs(r->value))))
            return fail(a, "a constant of another value", i, pos, t);
        return bind_capture(a, i, pos, r->idx, t);
    case GWR_MREF_CONST:
        if (!is_const(t)) return fail(a, "not a constant", i, pos, t);
        return bind_capture(a, i, pos, r->idx, t);
    default: return bind_capture(a, i, pos, r->idx, t);  /* CAP */
    }
}

static int bind_node(attempt *a, int i, gwr_layer *l) {
    gwr_match *m = a->m;
    const gwr_match_node *n = &a->p->nodes[i];
    if (m->layers[i]) return m->layers[i] == l ? 1 : fail(a, "the node is reached through two different layers", i, -1, NULL);
    for (int j = 0; j < a->p->nnodes; j++)
        if (m->layers[j] == l) return fail(a, "one layer would match two nodes", i, -1, NULL);
    if (gwr_layer_is_removed(l)) return fail(a, "the layer is removed", i, -1, NULL);
    if (!op_is(n, l)) return fail(a, "another op", i, -1, NULL);
    int swap = choice(a, a->pl->swap_digit[i]);
    if (swap && !id_commutative(gwr_layer_op_id(l))) return fail(a, "operands swapped, but this op is not commutative", i, -1, NULL);
    for (int k = 0; k < nattrs(n); k++) {
        const gwr_mattr *c = &n->attrs[k];
        if (c->kind == GWR_MATTR_CAPTURE) {
            if (!capture_attr(a, i, l, c)) return 0;
        } else if (!attr_ok(l, c)) {
            return fail(a, "an attribute does not fit", i, -1, NULL);
        }
    }
    m->layers[i] = l;
    a->progress++;
    int nr = nrefs(n), rest = nr && n->in[nr - 1].kind == GWR_MREF_REST, nfixed = nr - rest;
    int nin = gwr_layer_num_inputs(l);
    if (!rest) {
        for (int pos = nfixed; pos < nin; pos++)
            if (gwr_layer_input(l, pos)) return fail(a, "more inputs than the pattern lists", i, pos, gwr_layer_input(l, pos));
    } else {
        m->nrest[i] = nin > nfixed ? nin - nfixed : 0;
        if (m->nrest[i] < n->in[nr - 1].min) return fail(a, "fewer further inputs than the pattern's minimum", i, -1, NULL);
    }
    for (int pos = 0; pos < nfixed; pos++) {
        if (!match_input(a, i, pos, swap && pos < 2 ? 1 - pos : pos, pos < nin ? gwr_layer_input(l, pos) : NULL)) return 0;
        a->progress++;
    }
    return 1;
}

/* The single-reader rule: what a non-root matched layer produces (every
 * output) is read only inside the match and is no network output. */
static int single_readers(attempt *a) {
    gwr_match *m = a->m;
    int root = a->p->nnodes - 1;
    for (int i = 0; i < root; i++) {
        gwr_layer *l = m->layers[i];
        if (!l) continue;
        for (int o = 0; o < gwr_layer_num_outputs(l); o++) {
            gwr_tensor *t = gwr_layer_output(l, o);
            if (gwr_tensor_output_index(t) >= 0) return fail(a, "an intermediate tensor is a network output", i, -1, t);
            for (int64_t u = 0; u < gwr_tensor_num_users(t); u++) {
                gwr_layer *r = gwr_tensor_user(t, u, NULL);
                if (gwr_layer_is_removed(r)) continue;
                int inside = 0;
                for (int j = 0; j <= root && !inside; j++) inside = m->layers[j] == r;
                if (!inside) return fail(a, "an intermediate tensor has a reader outside the match", i, -1, t);
            }
        }
    }
    return 1;
}

static int dims_equal(const gwr_match *m, const gwr_mdims *q) {
    const gwr_tensor *x = m->captures[q->a], *y = m->captures[q->b];
    if (!x || !y) return 0;
    gwr_dim dx = gwr_tensor_dim(x, q->da), dy = gwr_tensor_dim(y, q->db);
    return dx == dy && dx != GWR_DIM_UNKNOWN;
}

static int run_attempt(attempt *a, gwr_layer *root) {
    gwr_match *m = a->m;
    const gwr_match_pattern *p = a->p;
    memset(m->layers, 0, (size_t)p->nnodes * sizeof *m->layers);
    memset(m->captures, 0, sizeof m->captures);
    if (a->pl->attr_slots) memset(m->attrs, 0, sizeof m->attrs);
    memset(m->nrest, 0, (size_t)p->nnodes * sizeof *m->nrest);
    a->progress = 0;
    if (!bind_node(a, p->nnodes - 1, root)) return 0;
    a->progress += GWR_MATCH_MAX_NODES * (GWR_MATCH_MAX_INPUTS + 1);  /* past any structural failure */
    if (!single_readers(a)) return 0;
    a->progress++;
    for (int i = 0; i < p->nnodes; i++)
        if (m->layers[i] && p->nodes[i].pred && !p->nodes[i].pred(m, i, p->user))
            return fail(a, "the node's predicate refused", i, -1, NULL);
    a->progress++;
    for (int i = 0; i < p->nnodes; i++)
        for (int d = 0; m->layers[i] && d < GWR_MATCH_MAX_DIMS_EQ; d++)
            if (p->nodes[i].dims_eq[d].on && !dims_equal(m, &p->nodes[i].dims_eq[d]))
                return fail(a, "a dims equality between captures does not hold (or a dim is unknown)", i, -1, NULL);
    a->progress++;
    const gwr_match_node *rn = &p->nodes[p->nnodes - 1];
    if (rn->where && !rn->where(m, p->user)) return fail(a, "the pattern's where predicate refused", p->nnodes - 1, -1, NULL);
    return 1;
}

int gwr_match_layer(const gwr_match_pattern *p, gwr_layer *l, gwr_match *m) {
    if (!m || !l) return -(int)gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_match_layer: NULL %s", m ? "layer" : "match");
    memset(m, 0, sizeof *m);
    m->why_node = m->why_input = -1;
    plan pl;
    gwr_status s = check_table_cached(p, &pl);
    if (s) return -(int)s;
    m->pattern = p;
    m->nlayers = p->nnodes;
    int digit[MAX_CHOICES] = {0};
    /* Keep the reason of the attempt that got furthest. */
    const char *why = NULL;
    int why_node = -1, why_input = -1, best_progress = -1;
    const gwr_tensor *why_tensor = NULL;
    for (;;) {
        attempt a = {p, m, &pl, digit, 0, 0};
        if (run_attempt(&a, l)) return 1;
        if (a.progress > best_progress)
            best_progress = a.progress, why = m->why, why_node = m->why_node, why_input = m->why_input, why_tensor = m->why_tensor;
        /* The next combination that changes a choice this attempt read:
         * the ones differing only below its lowest such digit fail alike. */
        int d = 0;
        while (d < pl.n && !(a.consulted >> d & 1u)) d++;
        for (int j = 0; j < d; j++) digit[j] = 0;
        while (d < pl.n && ++digit[d] == pl.radix[d]) digit[d++] = 0;
        if (d >= pl.n) break;
    }
    m->why = why, m->why_node = why_node, m->why_input = why_input, m->why_tensor = why_tensor;
    /* What the attempts wrote (run_attempt's clears); the rest is still 0. */
    memset(m->layers, 0, (size_t)p->nnodes * sizeof *m->layers);
    memset(m->captures, 0, sizeof m->captures);
    if (pl.attr_slots) memset(m->attrs, 0, sizeof m->attrs);
    memset(m->nrest, 0, (size_t)p->nnodes * sizeof *m->nrest);
    return 0;
}

int gwr_match_why(const gwr_match *m, char *buf, size_t size) {
    if (!m || !m->why) return snprintf(buf, size, "%s", m ? "matched" : "(no match)");
    const gwr_match_node *n = m->pattern && m->why_node >= 0 ? &m->pattern->nodes[m->why_node] : NULL;
    char in[32] = "";
    if (m->why_input >= 0) snprintf(in, sizeof in, " input %d", m->why_input);
    return snprintf(buf, size, "node %d (%s%s)%s%s%s%s: %s", m->why_node, node_op(n), op_more(n), in, m->why_tensor ? " '" : "",
                    m->why_tensor ? gwr_tensor_name(m->why_tensor) : "", m->why_tensor ? "'" : "", m->why);
}

/* ---- driving ------------------------------------------------------------------ */

int64_t gwr_match_target(gwr_rewrite_ctx *c) {
    const gwr_args *a = c ? gwr_rewrite_ctx_args(c) : NULL;
    int64_t t = 1; /* GWR_TARGET_ONNX */
    if (!a || gwr_args_get_int(a, "target", &t)) t = 1;
    return t;
}

int64_t gwr_match_opset(const gwr_layer *l) {
    int64_t v = l ? gwr_network_opset(gwr_layer_network(l), "") : -1; /* the outermost network's */
    return v < 0 ? -1 : v;
}

/* The root's gate for l: 0 passes, 1 the target is not one of the
 * pattern's, 2 the opset is too old (*target, *opset say which). */
static int gate(const gwr_match_pattern *p, gwr_rewrite_ctx *c, const gwr_layer *l, int64_t *target, int64_t *opset) {
    const gwr_match_node *r = p && p->nodes && p->nnodes > 0 ? &p->nodes[p->nnodes - 1] : NULL;
    if (!r || (!r->targets && !r->min_opset)) return 0;
    *target = gwr_match_target(c);
    if (r->targets && !(*target & r->targets)) return 1;
    if (r->min_opset && (!r->opset_targets || (*target & r->opset_targets))) {
        *opset = gwr_match_opset(l);
        if (*opset >= 0 && *opset < r->min_opset) return 2;
    }
    return 0;
}

#define GATE_TARGET "target %lld is not one of the pattern's targets (mask %lld)"
#define GATE_OPSET "needs default-domain opset %lld (the network imports %lld) for target %lld"

int gwr_match_gate(const gwr_match_pattern *p, gwr_rewrite_ctx *c, const gwr_layer *l, char *why, size_t size) {
    int64_t target = 0, opset = 0;
    int g = gate(p, c, l, &target, &opset);
    const gwr_match_node *r = g ? &p->nodes[p->nnodes - 1] : NULL;
    if (g == 1) snprintf(why, size, GATE_TARGET, (long long)target, (long long)r->targets);
    if (g == 2) snprintf(why, size, GATE_OPSET, (long long)r->min_opset, (long long)opset, (long long)target);
    return !g;
}

/* The reason goes to gwr_rewrite_no_match as arguments: it formats only
 * when someone asks (a trace, --explain, a listener). */
int gwr_match_drive(gwr_rewrite_ctx *c, gwr_layer *l) {
    const gwr_match_pattern *p = gwr_rewrite_ctx_user(c);
    int64_t target = 0, opset = 0;
    int g = gate(p, c, l, &target, &opset);
    const gwr_match_node *root = p && p->nodes && p->nnodes > 0 ? &p->nodes[p->nnodes - 1] : NULL;
    if (g == 1) return gwr_rewrite_no_match(c, GATE_TARGET, (long long)target, (long long)root->targets);
    if (g == 2) return gwr_rewrite_no_match(c, GATE_OPSET, (long long)root->min_opset, (long long)opset, (long long)target);
    gwr_match m;
    int r = gwr_match_layer(p, l, &m);
    if (r < 0) return gwr_rewrite_fail(c, (gwr_status)-r, "%s", gwr_last_errmsg());
    if (!r) {
        const gwr_match_node *n = m.why_node >= 0 ? &p->nodes[m.why_node] : NULL;
        const char *tn = m.why_tensor ? gwr_tensor_name(m.why_tensor) : NULL;
        if (m.why_input >= 0)
            return gwr_rewrite_no_match(c, "node %d (%s%s) input %d%s%s%s: %s", m.why_node, node_op(n), op_more(n), m.why_input,
                                        tn ? " '" : "", tn ? tn : "", tn ? "'" : "", m.why);
        return gwr_rewrite_no_match(c, "node %d (%s%s)%s%s%s: %s", m.why_node, node_op(n), op_more(n), tn ? " '" : "", tn ? tn : "",
                                    tn ? "'" : "", m.why);
    }
    if (!p->rewrite) return gwr_rewrite_fail(c, GWR_ERR_INVALID_ARG, "match pattern '%s': no rewrite callback", p->name ? p->name : "?");
    return p->rewrite(c, &m);
}

int gwr_match_finish(gwr_rewrite_ctx *c, const gwr_match *m, gwr_tensor *y) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    if (!y) return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "%s", gwr_network_errmsg(net));
    gwr_layer *root = m && m->nlayers > 0 ? m->layers[m->nlayers - 1] : NULL;
    if (!root || gwr_layer_num_outputs(root) != 1)
        return gwr_rewrite_fail(c, GWR_ERR_INVALID_ARG, "gwr_match_finish: not a successful match of a one-output root");
    gwr_tensor *o = gwr_layer_output(root, 0);
    gwr_dtype a = gwr_tensor_dtype(o), b = gwr_tensor_dtype(y);
    int ra = gwr_tensor_rank(o), rb = gwr_tensor_rank(y), same = (a == b || a == GWR_UNDEFINED) && (ra < 0 || ra == rb);
    for (int d = 0; same && ra > 0 && d < ra; d++) {
        gwr_dim x = gwr_tensor_dim(o, d);
        same = x == GWR_DIM_UNKNOWN || x == gwr_tensor_dim(y, d);
    }
    if (!same) {
        gwr_layer *yl = gwr_tensor_parent(y);
        if (yl && !gwr_tensor_num_live_users(y) && gwr_tensor_output_index(y) < 0) gwr_layer_mark_as_removed(yl);
        return gwr_rewrite_no_match(c, "the replacement '%s' does not have the type of '%s'", gwr_tensor_name(y), gwr_tensor_name(o));
    }
    gwr_status s = gwr_match_replace(m, 1, &y);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}

/* The layer classes of the root's ops (PLUGIN for ops the table lacks). */
static uint64_t root_classes(const gwr_match_node *root) {
    if (root->op_id != GWR_OP_CUSTOM) return GWR_ROOT_CLASS(gwr_op_info_get(root->op_id)->layer_type);
    if (!root->op && !root->ops) return GWR_ROOT_ANY;
    uint64_t cl = 0;
    for (int k = 0; root->ops ? root->ops[k] != NULL : k < 1; k++) {
        const gwr_op_info *info = gwr_op_info_get(lookup_named(root->ops ? root->ops[k] : root->op));
        cl |= info ? GWR_ROOT_CLASS(info->layer_type) : GWR_ROOT_CLASS(GWR_LAYER_PLUGIN);
    }
    return cl;
}

gwr_status gwr_match_rewriter(const gwr_match_pattern *p, gwr_pattern_rewriter *out) {
    if (!out) return BAD("gwr_match_rewriter: NULL out");
    gwr_status s = gwr_match_check(p);
    if (s) return s;
    if (!p->rewrite) return BAD("match pattern '%s': no rewrite callback", p->name ? p->name : "?");
    memset(out, 0, sizeof *out);
    out->name = p->name ? p->name : "match";
    out->root_classes = root_classes(&p->nodes[p->nnodes - 1]);
    out->match_and_rewrite = gwr_match_drive;
    out->user = (void *)p;
    return GWR_OK;
}

gwr_status gwr_match_add(gwr_rewrite_manager *m, const char *label, const gwr_match_pattern *p, int benefit) {
    if (!m) return BAD("gwr_match_add: NULL manager");
    gwr_pattern_rewriter rw;
    gwr_status s = gwr_match_rewriter(p, &rw);
    if (s) return s;
    const gwr_match_node *root = &p->nodes[p->nnodes - 1];
    const char *ops[2] = {root->op_id != GWR_OP_CUSTOM ? gwr_op_info_get(root->op_id)->name : root->op, NULL};
    char qual[256];
    if (root->op_id != GWR_OP_CUSTOM && *gwr_op_info_get(root->op_id)->domain) {
        snprintf(qual, sizeof qual, "%s::%s", gwr_op_info_get(root->op_id)->domain, gwr_op_info_get(root->op_id)->name);
        ops[0] = qual;
    }
    /* Rooted on the exact op(s); an any-op root keeps every class. */
    if (root->ops) rw.root_classes = 0, rw.root_ops = root->ops;
    else if (ops[0]) rw.root_classes = 0, rw.root_ops = ops;
    s = gwr_rewrite_manager_add(m, label, &rw, benefit);
    if (s) return gwr_set_last_error(s, "%s", gwr_rewrite_manager_errmsg(m));
    return GWR_OK;
}

/* ---- helpers patterns share ----------------------------------------------------- */

int gwr_match_is_op(const gwr_layer *l, const char *op) {
    return l && op && !gwr_layer_is_removed(l) && op_named(l, op);
}

gwr_layer *gwr_match_sole_reader(const gwr_tensor *t) {
    if (!t || gwr_tensor_output_index(t) >= 0) return NULL;
    gwr_layer *r = NULL;
    for (int64_t i = 0; i < gwr_tensor_num_users(t); i++) {
        gwr_layer *u = gwr_tensor_user(t, i, NULL);
        if (gwr_layer_is_removed(u)) continue;
        if (r) return NULL;
        r = u;
    }
    return r;
}

int gwr_match_same_type(const gwr_tensor *x, const gwr_tensor *y) {
    gwr_dtype t = gwr_tensor_dtype(x);
    int r = gwr_tensor_rank(x);
    if (!gwr_match_dtype_real_float(t) || t != gwr_tensor_dtype(y) || r < 0 || r != gwr_tensor_rank(y)) return 0;
    return !r || !memcmp(gwr_tensor_dims(x), gwr_tensor_dims(y), (size_t)r * sizeof(gwr_dim));
}
