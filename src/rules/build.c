/* build.c - the replacement of a rule: new layers by op name with their
 * attributes (computed, or copied from a matched node with <...n>),
 * constant arguments computed from the match in double and rounded to
 * their dtype, and `=> x` eliminations. A replacement that cannot be built
 * on this match (a shape that does not fit, a dtype that differs) is
 * undone and reported as no match. */
#include <math.h>
#include <string.h>

#include "gwr/exec.h"
#include "rules/rules_internal.h"

gwr_tensor *gwr_rl_const_new(gwr_network *net, gwr_dtype dt, int rank, const int64_t *dims, const double *v, double fill) {
    gwr_value *val = gwr_value_new(dt, rank, dims);
    if (!val) return NULL;
    for (int64_t i = 0; i < gwr_value_numel(val); i++) gwr_value_set_f64(val, i, v ? v[i] : fill);
    gwr_weights w;
    gwr_tensor *t = NULL;
    if (!gwr_value_to_weights(val, &w)) {
        t = gwr_network_add_constant(net, NULL, &w);
        gwr_buffer_release(w.buffer);
    }
    gwr_value_release(val);
    return t;
}

#define MAX_CREATED 64

typedef struct bctx {
    rl_env env;
    int dry;           /* evaluate every expression, change nothing */
    gwr_network *net;
    gwr_layer *created[MAX_CREATED];
    int ncreated;
} bctx;

static int fail(bctx *b, const char *msg, const char *arg) {
    if (!b->env.why[0]) snprintf(b->env.why, b->env.why_size, "%s%s%s", msg, arg ? ": " : "", arg ? arg : "");
    return 0;
}

static int keep(bctx *b, gwr_layer *l) {
    if (b->ncreated == MAX_CREATED) {
        gwr_layer_mark_as_removed(l);
        return fail(b, "the replacement makes too many layers", NULL);
    }
    b->created[b->ncreated++] = l;
    return 1;
}

static int is_const_arg(const bctx *b, const rl_expr *x) {
    if (x->kind == RL_OP || x->kind == RL_NONE) return 0;
    if (x->kind != RL_NAME) return 1;
    const rl_bind *bd = rl_find_bind(b->env.t, x->s);
    return !bd || (bd->kind != RL_B_TENSOR && bd->kind != RL_B_REST);
}

static int set_attr(bctx *b, gwr_layer *l, const char *name, const rl_val *v) {
    gwr_status s;
    if (b->dry) {
        int ok = v->kind == RL_V_STR || v->kind == RL_V_DTYPE || (v->kind == RL_V_ARR && v->rank <= 1);
        return ok ? 1 : fail(b, "an attribute value is a number, a list, a string or a dtype", name);
    }
    if (v->kind == RL_V_STR) {
        s = gwr_layer_set_bytes(l, name, v->s, v->slen);
    } else if (v->kind == RL_V_DTYPE) {
        s = gwr_layer_set_int(l, name, (int64_t)v->dtype);
    } else if (v->kind == RL_V_ARR && v->rank == 0) {
        s = v->is_float ? gwr_layer_set_float(l, name, (float)v->d[0]) : gwr_layer_set_int(l, name, (int64_t)v->d[0]);
    } else if (v->kind == RL_V_ARR && v->rank == 1 && !v->is_float) {
        int64_t *is = rl_alloc(&b->env.tmp, (size_t)(v->n + 1) * sizeof *is);
        if (!is) return -1;
        for (int64_t i = 0; i < v->n; i++) is[i] = (int64_t)v->d[i];
        s = gwr_layer_set_ints(l, name, is, v->n);
    } else if (v->kind == RL_V_ARR && v->rank == 1) {
        float *fs = rl_alloc(&b->env.tmp, (size_t)(v->n + 1) * sizeof *fs);
        if (!fs) return -1;
        for (int64_t i = 0; i < v->n; i++) fs[i] = (float)v->d[i];
        s = gwr_layer_set_floats(l, name, fs, v->n);
    } else {
        return fail(b, "an attribute value is a number, a list, a string or a dtype", name);
    }
    return s ? fail(b, "cannot set attribute", name) : 1;
}

static int build(bctx *b, const rl_expr *x, int nout, gwr_tensor **outs);

/* The constant argument x, of dtype dt unless it carries one. */
static int build_const(bctx *b, const rl_expr *x, gwr_dtype dt, gwr_tensor **out) {
    rl_val v;
    int r = rl_eval(&b->env, x, &v);
    if (r > 0) r = rl_val_numeric(&b->env, &v);
    if (r <= 0 || b->dry) return r;
    if (v.dtype != GWR_UNDEFINED) dt = v.dtype;
    gwr_tensor *t = gwr_rl_const_new(b->net, dt, v.rank, v.dims, v.d, 0);
    if (!t) return fail(b, "cannot make a constant", gwr_last_errmsg());
    if (!keep(b, gwr_tensor_parent(t))) return 0;
    *out = t;
    return 1;
}

static int build(bctx *b, const rl_expr *x, int nout, gwr_tensor **outs) {
    const gwr_match *m = b->env.m;
    const gwr_rl_table *t = b->env.t;
    int r;
    if (x->kind == RL_NAME) { /* => x */
        const rl_bind *bd = rl_find_bind(t, x->s);
        outs[0] = m->captures[bd->slot];
        if (!outs[0]) return fail(b, "the replacement is absent", x->s);
        /* An Identity that carries a network output's name for x would come back as a new Identity: it stays. */
        gwr_layer *root = m->layers[m->nlayers - 1];
        const gwr_tensor *o = gwr_layer_output(root, 0);
        if (gwr_layer_op_id(root) == GWR_OP_Identity && gwr_tensor_output_index(o) >= 0 &&
            (gwr_tensor_is_input(outs[0]) || gwr_tensor_output_index(outs[0]) >= 0 || gwr_tensor_network(outs[0]) != gwr_layer_network(root)))
            return fail(b, "the Identity carries a network output's name", gwr_tensor_name(o));
        return 1;
    }
    /* Inputs: tensors and ops first, then the constants, which take the
     * dtype of the first tensor input. */
    int cap = x->na + 16;
    gwr_tensor **ins = rl_alloc(&b->env.tmp, (size_t)cap * sizeof *ins);
    int *argpos = rl_alloc(&b->env.tmp, (size_t)cap * sizeof *argpos);
    if (!ins || !argpos) return -1;
    int n = 0;
    for (int k = 0; k < x->na; k++) {
        const rl_expr *a = x->a[k];
        argpos[k] = n;
        if (a->kind == RL_NAME && !is_const_arg(b, a)) {
            const rl_bind *bd = rl_find_bind(t, a->s);
            if (bd->kind == RL_B_REST) {
                gwr_layer *l = m->layers[bd->node];
                for (int i = bd->pos; i < gwr_layer_num_inputs(l); i++) {
                    if (n == cap) return fail(b, "too many inputs", a->s);
                    ins[n++] = gwr_layer_input(l, i);
                }
                continue;
            }
            ins[n++] = m->captures[bd->slot];
        } else if (a->kind == RL_NONE) {
            ins[n++] = NULL;
        } else if (a->kind == RL_OP) {
            gwr_tensor *o[1];
            if ((r = build(b, a, 0, o)) <= 0) return r;
            ins[n++] = o[0];
        } else {
            ins[n++] = NULL; /* a constant, made below */
        }
    }
    if (b->dry) { /* the constants and attribute values only */
        for (int k = 0; k < x->na; k++)
            if (is_const_arg(b, x->a[k]) && (r = build_const(b, x->a[k], GWR_UNDEFINED, NULL)) <= 0) return r;
        for (int i = 0; i < x->nattrs; i++) {
            rl_val v;
            if ((r = rl_eval(&b->env, x->attrs[i].val, &v)) <= 0) return r;
            if (v.kind == RL_V_TENSOR && (r = rl_val_numeric(&b->env, &v)) <= 0) return r;
            if ((r = set_attr(b, NULL, x->attrs[i].name, &v)) <= 0) return r;
        }
        outs[0] = NULL;
        return 1;
    }
    gwr_dtype dt = GWR_UNDEFINED;
    for (int i = 0; i < n && dt == GWR_UNDEFINED; i++)
        if (ins[i]) dt = gwr_tensor_dtype(ins[i]);
    if (dt == GWR_UNDEFINED) dt = gwr_tensor_dtype(gwr_layer_output(m->layers[m->nlayers - 1], 0));
    if (dt == GWR_UNDEFINED) dt = GWR_FLOAT32;
    for (int k = 0; k < x->na; k++)
        if (is_const_arg(b, x->a[k]) && (r = build_const(b, x->a[k], dt, &ins[argpos[k]])) <= 0) return r;
    /* The layer. */
    const char *q = x->ops[0], *sep = strstr(q, "::");
    char dom[128] = "";
    if (sep) {
        size_t dl = (size_t)(sep - q) < sizeof dom - 1 ? (size_t)(sep - q) : sizeof dom - 1;
        memcpy(dom, q, dl), dom[dl] = 0;
    }
    const gwr_op_info *info = gwr_op_info_get(gwr_op_lookup(dom, sep ? sep + 2 : q));
    int want = nout;
    int lo = info && info->min_outputs > 1 ? info->min_outputs : 1;
    if (nout < lo) nout = lo;
    if (nout <= x->out) nout = x->out + 1;
    if (info && info->max_outputs >= 0 && nout > info->max_outputs) nout = info->max_outputs > 0 ? info->max_outputs : 1;
    gwr_layer *l = gwr_network_add_layer(b->net, sep ? sep + 2 : q, dom, NULL, n, ins, nout, NULL);
    if (!l) return fail(b, "cannot add the layer", gwr_network_errmsg(b->net));
    if (!keep(b, l)) return 0;
    if (x->copy) {
        const rl_bind *bd = rl_find_bind(t, x->copy);
        if (gwr_match_copy_attrs(l, m->layers[bd->node])) return fail(b, "cannot copy the attributes", gwr_last_errmsg());
    }
    for (int i = 0; i < x->nattrs; i++) {
        rl_val v;
        if ((r = rl_eval(&b->env, x->attrs[i].val, &v)) <= 0) return r;
        if (v.kind == RL_V_TENSOR && (r = rl_val_numeric(&b->env, &v)) <= 0) return r;
        if ((r = set_attr(b, l, x->attrs[i].name, &v)) <= 0) return r;
    }
    if (gwr_layer_infer(l)) return fail(b, "the replacement does not fit", gwr_network_errmsg(b->net));
    outs[0] = gwr_layer_output(l, x->out);
    for (int i = 1; i < want && i < nout && !x->out; i++) outs[i] = gwr_layer_output(l, i);
    return 1;
}

/* Same dtype, and the same dims where both are known. An elimination
 * (`=> x`) of a network output compares the dtype only: the output's
 * declared shape is the interface, which gwr optimize's guard compares
 * before and after the passes (and names when a model's declaration
 * contradicts its graph), as the hand-written eliminations left it. */
static int fits(bctx *b, const gwr_tensor *old, const gwr_tensor *nu, int elimination) {
    gwr_dtype a = gwr_tensor_dtype(old), c = gwr_tensor_dtype(nu);
    if (a != GWR_UNDEFINED && c != GWR_UNDEFINED && a != c) return fail(b, "the replacement's dtype differs", gwr_dtype_name(c));
    int ra = gwr_tensor_rank(old), rc = gwr_tensor_rank(nu);
    if (elimination && gwr_tensor_output_index(old) >= 0) return 1;
    if (ra >= 0 && rc >= 0) {
        if (ra != rc) return fail(b, "the replacement's rank differs", NULL);
        for (int i = 0; i < ra; i++) {
            gwr_dim da = gwr_tensor_dim(old, i), dc = gwr_tensor_dim(nu, i);
            if (GWR_DIM_IS_KNOWN(da) && GWR_DIM_IS_KNOWN(dc) && da != dc) return fail(b, "the replacement's shape differs", NULL);
        }
    }
    return 1;
}

char *rl_why_buf(void) {
    static _Thread_local char why[RL_WHY_SIZE];
    return why;
}

int *rl_quiet(void) {
    static _Thread_local int quiet;
    return &quiet;
}

int rl_rewrite(gwr_rewrite_ctx *c, const gwr_match *m) {
    const gwr_rl_table *t = m->pattern->user;
    gwr_rl_rule *rule = t->rule;
    gwr_layer *root = m->layers[m->nlayers - 1];
    char *why = rl_why_buf();
    bctx b = {.env = {.t = t, .m = m, .tmp = {.chunk = RL_EVAL_CHUNK}, .why = why, .why_size = RL_WHY_SIZE}, .net = gwr_layer_network(root)};
    why[0] = 0;
    int nout = gwr_layer_num_outputs(root);
    gwr_tensor *outs[GWR_MATCH_MAX_NODES * 4] = {0};
    if (nout > (int)(sizeof outs / sizeof outs[0])) return gwr_rewrite_no_match(c, "too many outputs");
    /* First every expression, so that a value-less one refuses before the
     * network changes; then the layers. */
    b.dry = 1;
    int r = build(&b, rule->repl, nout, outs);
    b.dry = 0;
    if (r > 0) r = build(&b, rule->repl, nout, outs);
    for (int i = 0; r > 0 && i < nout; i++) {
        gwr_tensor *o = gwr_layer_output(root, i);
        if (!outs[i] && (gwr_tensor_num_live_users(o) || gwr_tensor_output_index(o) >= 0)) r = fail(&b, "an output of the root has no replacement", NULL);
        else if (outs[i]) r = fits(&b, o, outs[i], rule->repl->kind == RL_NAME);
    }
    gwr_status s = GWR_OK;
    if (r > 0 && (s = gwr_match_replace(m, nout, outs))) r = fail(&b, "cannot replace", gwr_last_errmsg());
    rl_arena_free(&b.env.tmp);
    if (r > 0) return 1;
    for (int i = b.ncreated - 1; i >= 0; i--) gwr_layer_mark_as_removed(b.created[i]);
    if (r < 0) return gwr_rewrite_fail(c, GWR_ERR_NOMEM, "rule '%s': out of memory", rule->name);
    return gwr_rewrite_no_match(c, "%s", why[0] ? why : "the replacement cannot be built");
}
