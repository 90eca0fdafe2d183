/* matcher.c - the declarative matcher of gwr/match.h: a table of nodes,
 * root last, matched from the root towards the producers.
 *
 * A match binds table nodes to layers and capture slots to tensors. One
 * attempt is deterministic: from the root, each node's input references
 * are taken in order and a NODE reference binds the producer of the input
 * (depth first). Commutative nodes (two input references and an op with
 * GWR_OPF_COMMUTATIVE) are the only choice points: the attempts enumerate
 * every combination of swapped and unswapped operands (at most 2^k for k
 * such nodes, 2-4 in real patterns), so a capture bound on one side is
 * never a wrong guess that blocks the other order. A structural match then
 * passes the single-reader rule and the nodes' predicates.
 *
 * Built on the public API only; nothing here allocates. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gwr/match.h"
#include "util/util.h"

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

static gwr_status check_ref(const gwr_match_pattern *p, int i, int k, int nr) {
    const gwr_mref *r = &p->nodes[i].in[k];
    const char *nm = p->name ? p->name : "?";
    switch (r->kind) {
    case GWR_MREF_NODE:
        if (r->idx < 0 || r->idx >= i)
            return gwr_set_last_error(GWR_ERR_INVALID_ARG,
                                      "match pattern '%s': node %d input %d refers to node %d (only earlier nodes, "
                                      "0..%d, may be referred to; the root is the last node)",
                                      nm, i, k, r->idx, i - 1);
        if (r->out < 0) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "match pattern '%s': node %d input %d: output %d", nm, i, k, r->out);
        return GWR_OK;
    case GWR_MREF_CAP:
    case GWR_MREF_CONST:
    case GWR_MREF_SPLAT:
        if (r->idx < -1 || r->idx >= GWR_MATCH_MAX_CAPTURES)
            return gwr_set_last_error(GWR_ERR_INVALID_ARG, "match pattern '%s': node %d input %d: capture slot %d out of range (-1..%d)",
                                      nm, i, k, r->idx, GWR_MATCH_MAX_CAPTURES - 1);
        return GWR_OK;
    case GWR_MREF_ABSENT: return GWR_OK;
    case GWR_MREF_REST:
        if (k != nr - 1) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "match pattern '%s': node %d: REST must be the last input", nm, i);
        return GWR_OK;
    default:
        return gwr_set_last_error(GWR_ERR_INVALID_ARG, "match pattern '%s': node %d input %d: unknown kind %d", nm, i, k, (int)r->kind);
    }
}

static gwr_status check_attrs(const gwr_match_pattern *p, int i) {
    const gwr_match_node *n = &p->nodes[i];
    for (int a = 0; a < nattrs(n); a++) {
        const gwr_mattr *c = &n->attrs[a];
        if (!c->name || !*c->name || c->kind > GWR_MATTR_ABSENT || (c->kind == GWR_MATTR_STRING && !c->s) ||
            (c->kind == GWR_MATTR_INTS && (c->n < 0 || (c->n && !c->ints))))
            return gwr_set_last_error(GWR_ERR_INVALID_ARG, "match pattern '%s': node %d: malformed attribute constraint %d",
                                      p->name ? p->name : "?", i, a);
    }
    return GWR_OK;
}

gwr_status gwr_match_check(const gwr_match_pattern *p) {
    if (!p) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_match_check: NULL pattern");
    const char *nm = p->name ? p->name : "?";
    if (!p->nodes || p->nnodes < 1 || p->nnodes > GWR_MATCH_MAX_NODES)
        return gwr_set_last_error(GWR_ERR_INVALID_ARG, "match pattern '%s': needs 1..%d nodes, has %d%s", nm,
                                  GWR_MATCH_MAX_NODES, p->nnodes, p->nodes ? "" : " (NULL table)");
    int reached[GWR_MATCH_MAX_NODES] = {0};
    reached[p->nnodes - 1] = 1;
    for (int i = p->nnodes - 1; i >= 0; i--) {
        const gwr_match_node *n = &p->nodes[i];
        if (n->op_id < GWR_OP_CUSTOM || n->op_id >= GWR_OP_COUNT || (n->op && !*n->op))
            return gwr_set_last_error(GWR_ERR_INVALID_ARG, "match pattern '%s': node %d: bad op", nm, i);
        int nr = nrefs(n);
        for (int k = 0; k < nr; k++) {
            gwr_status s = check_ref(p, i, k, nr);
            if (s) return s;
            if (n->in[k].kind == GWR_MREF_NODE && reached[i]) reached[n->in[k].idx] = 1;
        }
        gwr_status s = check_attrs(p, i);
        if (s) return s;
        if (!reached[i])
            return gwr_set_last_error(GWR_ERR_INVALID_ARG, "match pattern '%s': node %d is not reachable from the root (node %d)",
                                      nm, i, p->nnodes - 1);
    }
    return GWR_OK;
}

/* ---- one attempt -------------------------------------------------------------- */

typedef struct attempt {
    const gwr_match_pattern *p;
    gwr_match *m;
    unsigned swapped;  /* bit i: node i's two operands are taken in the other order */
    int progress;      /* nodes and inputs matched so far: how far the attempt got */
} attempt;

static int fail(attempt *a, const char *why, int node, int input, const gwr_tensor *t) {
    gwr_match *m = a->m;
    m->why = why, m->why_node = node, m->why_input = input, m->why_tensor = t;
    return 0;
}

static int op_is(const gwr_match_node *n, const gwr_layer *l) {
    if (n->op_id != GWR_OP_CUSTOM) return gwr_layer_op_id(l) == n->op_id;
    if (!n->op) return 1;
    const char *sep = strstr(n->op, "::"), *dom = gwr_layer_domain(l);
    if (!sep) return !*dom && !strcmp(gwr_layer_op(l), n->op);
    size_t dl = (size_t)(sep - n->op);
    return strlen(dom) == dl && !strncmp(dom, n->op, dl) && !strcmp(gwr_layer_op(l), sep + 2);
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

static int match_input(attempt *a, int i, int pos, const gwr_mref *r, gwr_tensor *t) {
    if (!t) {
        if (r->kind == GWR_MREF_ABSENT || r->optional) return 1;
        return fail(a, "the input is absent", i, pos, NULL);
    }
    switch (r->kind) {
    case GWR_MREF_ABSENT: return fail(a, "the input must be absent", i, pos, t);
    case GWR_MREF_NODE: {
        gwr_layer *pl = gwr_tensor_parent(t);
        if (!pl || gwr_tensor_parent_output_index(t) != r->out)
            return fail(a, pl ? "produced by another output of its layer" : "a graph input, not a layer's output", i, pos, t);
        return bind_node(a, r->idx, pl);
    }
    case GWR_MREF_SPLAT:
        if (!is_const(t)) return fail(a, "not a constant", i, pos, t);
        if (!gwr_match_const_is_splat(t, r->value, 1e-6 * fmax(1.0, fabs(r->value))))
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
    for (int k = 0; k < nattrs(n); k++)
        if (!attr_ok(l, &n->attrs[k])) return fail(a, "an attribute does not fit", i, -1, NULL);
    m->layers[i] = l;
    a->progress++;
    int nr = nrefs(n), rest = nr && n->in[nr - 1].kind == GWR_MREF_REST, nfixed = nr - rest;
    int nin = gwr_layer_num_inputs(l);
    if (!rest)
        for (int pos = nfixed; pos < nin; pos++)
            if (gwr_layer_input(l, pos)) return fail(a, "more inputs than the pattern lists", i, pos, gwr_layer_input(l, pos));
    int swap = (a->swapped >> i) & 1u;
    for (int pos = 0; pos < nfixed; pos++) {
        const gwr_mref *r = &n->in[swap && pos < 2 ? 1 - pos : pos];
        if (!match_input(a, i, pos, r, pos < nin ? gwr_layer_input(l, pos) : NULL)) return 0;
        a->progress++;
    }
    return 1;
}

/* The single-reader rule: what a non-root matched layer produces is read
 * only inside the match and is no network output. */
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

static int run_attempt(attempt *a, gwr_layer *root) {
    gwr_match *m = a->m;
    memset(m->layers, 0, sizeof m->layers);
    memset(m->captures, 0, sizeof m->captures);
    a->progress = 0;
    if (!bind_node(a, a->p->nnodes - 1, root)) return 0;
    a->progress += GWR_MATCH_MAX_NODES * (GWR_MATCH_MAX_INPUTS + 1);  /* past any structural failure */
    if (!single_readers(a)) return 0;
    a->progress++;
    for (int i = 0; i < a->p->nnodes; i++)
        if (m->layers[i] && a->p->nodes[i].pred && !a->p->nodes[i].pred(m, i, a->p->user))
            return fail(a, "the node's predicate refused", i, -1, NULL);
    return 1;
}

/* Is node i a choice point: two operands and a commutative op? */
static int commutative(const gwr_match_node *n) {
    if (nrefs(n) != 2 || n->in[1].kind == GWR_MREF_REST) return 0;
    gwr_op_id id = n->op_id;
    if (id == GWR_OP_CUSTOM && n->op && !strstr(n->op, "::")) id = gwr_op_lookup("", n->op);
    const gwr_op_info *info = gwr_op_info_get(id);
    return info && (info->flags & GWR_OPF_COMMUTATIVE);
}

int gwr_match_layer(const gwr_match_pattern *p, gwr_layer *l, gwr_match *m) {
    if (!m || !l) return -(int)gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_match_layer: NULL %s", m ? "layer" : "match");
    memset(m, 0, sizeof *m);
    m->why_node = m->why_input = -1;
    gwr_status s = gwr_match_check(p);
    if (s) return -(int)s;
    m->pattern = p;
    m->nlayers = p->nnodes;
    int comm[GWR_MATCH_MAX_NODES], k = 0;
    for (int i = 0; i < p->nnodes; i++)
        if (commutative(&p->nodes[i])) comm[k++] = i;
    /* Keep the reason of the attempt that got furthest. */
    gwr_match best = *m;
    int best_progress = -1;
    for (unsigned combo = 0; combo < (1u << k); combo++) {
        attempt a = {p, m, 0, 0};
        for (int b = 0; b < k; b++)
            if (combo >> b & 1u) a.swapped |= 1u << comm[b];
        if (run_attempt(&a, l)) return 1;
        if (a.progress > best_progress) best = *m, best_progress = a.progress;
    }
    *m = best;
    memset(m->layers, 0, sizeof m->layers);
    memset(m->captures, 0, sizeof m->captures);
    return 0;
}

int gwr_match_why(const gwr_match *m, char *buf, size_t size) {
    if (!m || !m->why) return snprintf(buf, size, "%s", m ? "matched" : "(no match)");
    const gwr_match_node *n = m->pattern && m->why_node >= 0 ? &m->pattern->nodes[m->why_node] : NULL;
    const char *op = n ? (n->op ? n->op : n->op_id ? gwr_op_info_get(n->op_id)->name : "any op") : "?";
    char in[32] = "";
    if (m->why_input >= 0) snprintf(in, sizeof in, " input %d", m->why_input);
    return snprintf(buf, size, "node %d (%s)%s%s%s%s: %s", m->why_node, op, in, m->why_tensor ? " '" : "",
                    m->why_tensor ? gwr_tensor_name(m->why_tensor) : "", m->why_tensor ? "'" : "", m->why);
}

/* ---- driving ------------------------------------------------------------------ */

static int match_and_rewrite(gwr_rewrite_ctx *c, gwr_layer *l) {
    const gwr_match_pattern *p = gwr_rewrite_ctx_user(c);
    gwr_match m;
    int r = gwr_match_layer(p, l, &m);
    if (r < 0) return gwr_rewrite_fail(c, (gwr_status)-r, "%s", gwr_last_errmsg());
    if (!r) {
        const gwr_match_node *n = m.why_node >= 0 ? &p->nodes[m.why_node] : NULL;
        const char *op = n && n->op ? n->op : n && n->op_id ? gwr_op_info_get(n->op_id)->name : "any op";
        const char *tn = m.why_tensor ? gwr_tensor_name(m.why_tensor) : NULL;
        if (m.why_input >= 0)
            return gwr_rewrite_no_match(c, "node %d (%s) input %d%s%s%s: %s", m.why_node, op, m.why_input, tn ? " '" : "",
                                        tn ? tn : "", tn ? "'" : "", m.why);
        return gwr_rewrite_no_match(c, "node %d (%s)%s%s%s: %s", m.why_node, op, tn ? " '" : "", tn ? tn : "", tn ? "'" : "",
                                    m.why);
    }
    return p->rewrite(c, &m);
}

gwr_status gwr_match_rewriter(const gwr_match_pattern *p, gwr_pattern_rewriter *out) {
    if (!out) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_match_rewriter: NULL out");
    gwr_status s = gwr_match_check(p);
    if (s) return s;
    if (!p->rewrite) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "match pattern '%s': no rewrite callback", p->name ? p->name : "?");
    const gwr_match_node *root = &p->nodes[p->nnodes - 1];
    gwr_op_id id = root->op_id;
    if (id == GWR_OP_CUSTOM && root->op) {
        const char *sep = strstr(root->op, "::");
        char dom[128];
        size_t dl = sep ? (size_t)(sep - root->op) : 0;
        if (dl >= sizeof dom) dl = sizeof dom - 1;
        memcpy(dom, root->op, dl);
        dom[dl] = 0;
        id = gwr_op_lookup(dom, sep ? sep + 2 : root->op);
    }
    const gwr_op_info *info = gwr_op_info_get(id);
    memset(out, 0, sizeof *out);
    out->name = p->name ? p->name : "match";
    out->root_classes = info ? GWR_ROOT_CLASS(info->layer_type)
                        : root->op ? GWR_ROOT_CLASS(GWR_LAYER_PLUGIN) : GWR_ROOT_ANY;
    out->match_and_rewrite = match_and_rewrite;
    out->user = (void *)p;
    return GWR_OK;
}

gwr_status gwr_match_add(gwr_rewrite_manager *m, const char *label, const gwr_match_pattern *p, int benefit) {
    if (!m) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_match_add: NULL manager");
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
    /* Rooted on the exact op; an any-op root keeps every class. */
    if (ops[0]) rw.root_classes = 0, rw.root_ops = ops;
    s = gwr_rewrite_manager_add(m, label, &rw, benefit);
    if (s) return gwr_set_last_error(s, "%s", gwr_rewrite_manager_errmsg(m));
    return GWR_OK;
}
