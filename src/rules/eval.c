/* eval.c - values of the rules' expressions on a match: where clauses,
 * attribute expressions, the constant arithmetic of replacements (all in
 * double, rounded to the dtype when a constant is made), and the checks a
 * table cannot express (constraints, tolerances, attribute captures). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gwr/exec.h"
#include "rules/rules_internal.h"

const rl_bind *rl_find_bind(const gwr_rl_table *t, const char *name) {
    for (int i = 0; i < t->nbinds; i++)
        if (!strcmp(t->binds[i].name, name)) return &t->binds[i];
    return NULL;
}

static int why(rl_env *env, const char *fmt, ...) GWR_PRINTF(2, 3);
static int why(rl_env *env, const char *fmt, ...) {
    if (env->why && env->why_size && !env->why[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(env->why, env->why_size, fmt, ap);
        va_end(ap);
    }
    return 0;
}

static int arr(rl_env *env, rl_val *v, int rank, const int64_t *dims, int is_float, gwr_dtype dt) {
    memset(v, 0, sizeof *v);
    v->kind = RL_V_ARR, v->rank = rank, v->is_float = is_float, v->dtype = dt;
    int64_t n = 1;
    for (int i = 0; i < rank; i++) v->dims[i] = dims[i], n *= dims[i];
    v->n = n;
    v->d = rl_alloc(&env->tmp, (size_t)(n ? n : 1) * sizeof *v->d);
    return v->d ? 1 : -1;
}

static int scalar(rl_env *env, rl_val *v, double x, int is_float) {
    int r = arr(env, v, 0, NULL, is_float, GWR_UNDEFINED);
    if (r > 0) v->d[0] = x;
    return r;
}

static int list_of(rl_env *env, rl_val *v, const int64_t *x, int n) {
    int64_t d = n;
    int r = arr(env, v, 1, &d, 0, GWR_UNDEFINED);
    for (int i = 0; r > 0 && i < n; i++) v->d[i] = (double)x[i];
    return r;
}

int rl_truth(const rl_val *v) {
    if (v->kind != RL_V_ARR || v->n < 1) return 0;
    for (int64_t i = 0; i < v->n; i++)
        if (v->d[i] == 0 || isnan(v->d[i])) return 0;
    return 1;
}

int rl_val_numeric(rl_env *env, rl_val *v) {
    if (v->kind == RL_V_ARR) return 1;
    if (v->kind != RL_V_TENSOR) return why(env, "a string or dtype where a number is needed");
    gwr_match_const c;
    if (!gwr_match_const_get(v->t, &c)) return why(env, "'%s' is not a numeric constant", gwr_tensor_name(v->t));
    if (c.rank > RL_MAX_RANK) return why(env, "'%s' has rank above %d", gwr_tensor_name(v->t), RL_MAX_RANK);
    gwr_tensor *t = v->t;
    int r = arr(env, v, c.rank, c.dims, gwr_match_dtype_real_float(c.dtype), c.dtype);
    if (r <= 0) return r;
    for (int64_t i = 0; i < v->n; i++) v->d[i] = gwr_match_const_at(&c, i);
    (void)t;
    return 1;
}

/* An attribute of a layer as a value; 0 when absent. */
static int attr_value(rl_env *env, const gwr_layer *l, const char *name, rl_val *v) {
    int idx = gwr_layer_find_attr(l, name);
    if (idx < 0) return 0;
    switch (gwr_layer_attr_type(l, idx)) {
    case GWR_ATTR_INT: {
        int64_t i;
        gwr_layer_get_int(l, name, &i);
        return scalar(env, v, (double)i, 0);
    }
    case GWR_ATTR_FLOAT: {
        float f;
        gwr_layer_get_float(l, name, &f);
        return scalar(env, v, (double)f, 1);
    }
    case GWR_ATTR_INTS: {
        const int64_t *is;
        int64_t n;
        gwr_layer_get_ints(l, name, &is, &n);
        int64_t d = n;
        int r = arr(env, v, 1, &d, 0, GWR_UNDEFINED);
        for (int64_t i = 0; r > 0 && i < n; i++) v->d[i] = (double)is[i];
        return r;
    }
    case GWR_ATTR_FLOATS: {
        const float *fs;
        int64_t n;
        gwr_layer_get_floats(l, name, &fs, &n);
        int64_t d = n;
        int r = arr(env, v, 1, &d, 1, GWR_UNDEFINED);
        for (int64_t i = 0; r > 0 && i < n; i++) v->d[i] = (double)fs[i];
        return r;
    }
    case GWR_ATTR_STRING: {
        memset(v, 0, sizeof *v);
        v->kind = RL_V_STR;
        gwr_layer_get_string(l, name, &v->s, &v->slen);
        return 1;
    }
    default: return why(env, "attribute '%s' of '%s' is not a number, list or string", name, gwr_layer_name(l));
    }
}

static int bind_value(rl_env *env, const rl_bind *b, rl_val *v) {
    const gwr_match *m = env->m;
    switch (b->kind) {
    case RL_B_TENSOR:
        memset(v, 0, sizeof *v);
        v->kind = RL_V_TENSOR, v->t = m->captures[b->slot];
        if (!v->t) return why(env, "'%s' is absent", b->name);
        return 1;
    case RL_B_ATTR: {
        int r = attr_value(env, m->layers[b->node], b->attr, v);
        if (r) return r;
        if (b->def) return rl_eval(env, b->def, v);
        return why(env, "attribute '%s' is absent", b->attr);
    }
    case RL_B_DIM: {
        const gwr_tensor *t = m->captures[b->slot];
        gwr_dim d = t ? gwr_tensor_dim(t, b->pos) : GWR_DIM_UNKNOWN;
        if (!t || gwr_tensor_rank(t) <= b->pos || !GWR_DIM_IS_KNOWN(d)) return why(env, "dim '%s' is not known", b->name);
        return scalar(env, v, (double)d, 0);
    }
    default: return why(env, "'%s' is not a value", b->name);
    }
}

static int broadcast(rl_env *env, const rl_val *a, const rl_val *b, rl_val *out, int is_float) {
    int rank = a->rank > b->rank ? a->rank : b->rank;
    int64_t dims[RL_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1) return why(env, "shapes that do not broadcast");
        dims[i] = da == 1 ? db : da;
    }
    gwr_dtype dt = a->dtype != GWR_UNDEFINED ? a->dtype : b->dtype;
    return arr(env, out, rank, dims, is_float, dt);
}

/* Index of output element i in operand x (broadcast). */
static int64_t bidx(const rl_val *x, const rl_val *out, int64_t i) {
    int64_t k = 0, stride = 1;
    for (int d = out->rank - 1; d >= 0; d--) {
        int64_t c = i % out->dims[d];
        i /= out->dims[d];
        int xd = d - (out->rank - x->rank);
        if (xd >= 0) {
            if (x->dims[xd] != 1) k += c * stride;
            stride *= x->dims[xd];
        }
    }
    return k;
}

static int same_val(const rl_val *a, const rl_val *b) {
    if (a->kind != b->kind) return 0;
    if (a->kind == RL_V_STR) return a->slen == b->slen && !memcmp(a->s, b->s, a->slen);
    if (a->kind == RL_V_DTYPE) return a->dtype == b->dtype;
    if (a->kind == RL_V_TENSOR) return a->t == b->t;
    if (a->n != b->n) return 0;
    for (int64_t i = 0; i < a->n; i++)
        if (a->d[i] != b->d[i]) return 0;
    return 1;
}

static int eval_bin(rl_env *env, const rl_expr *x, rl_val *out) {
    rl_val a, b;
    int r;
    if (x->op == RL_AND || x->op == RL_OR) {
        if ((r = rl_eval(env, x->a[0], &a)) <= 0) return r;
        int ta = rl_truth(&a);
        if (x->op == RL_AND ? !ta : ta) return scalar(env, out, ta, 0);
        if ((r = rl_eval(env, x->a[1], &b)) <= 0) return r;
        return scalar(env, out, rl_truth(&b), 0);
    }
    if ((r = rl_eval(env, x->a[0], &a)) <= 0 || (r = rl_eval(env, x->a[1], &b)) <= 0) return r;
    if ((x->op == RL_EQ || x->op == RL_NE) && (a.kind != RL_V_ARR || b.kind != RL_V_ARR || a.rank == 1 || b.rank == 1)) {
        if (a.kind == RL_V_TENSOR && b.kind != RL_V_TENSOR && (r = rl_val_numeric(env, &a)) <= 0) return r;
        if (b.kind == RL_V_TENSOR && a.kind != RL_V_TENSOR && (r = rl_val_numeric(env, &b)) <= 0) return r;
        int eq = same_val(&a, &b);
        return scalar(env, out, x->op == RL_EQ ? eq : !eq, 0);
    }
    if ((r = rl_val_numeric(env, &a)) <= 0 || (r = rl_val_numeric(env, &b)) <= 0) return r;
    int cmp = x->op >= RL_EQ && x->op <= RL_GE;
    int is_float = !cmp && (a.is_float || b.is_float);
    if ((r = broadcast(env, &a, &b, out, is_float)) <= 0) return r;
    if (cmp) out->dtype = GWR_UNDEFINED;
    int exact = x->op == RL_DIV && !is_float;
    for (int64_t i = 0; i < out->n; i++) {
        double p = a.d[bidx(&a, out, i)], q = b.d[bidx(&b, out, i)], v = 0;
        switch (x->op) {
        case RL_EQ: v = p == q; break;
        case RL_NE: v = p != q; break;
        case RL_LT: v = p < q; break;
        case RL_LE: v = p <= q; break;
        case RL_GT: v = p > q; break;
        case RL_GE: v = p >= q; break;
        case RL_ADD: v = p + q; break;
        case RL_SUB: v = p - q; break;
        case RL_MUL: v = p * q; break;
        default:
            v = p / q;
            if (exact && v != floor(v)) exact = 0;
        }
        out->d[i] = v;
    }
    if (x->op == RL_DIV && !is_float && !exact) out->is_float = 1;
    return 1;
}

static int int_list(rl_env *env, const rl_val *v, int64_t *out, int cap, const char *what) {
    if (v->kind != RL_V_ARR || v->rank > 1 || v->n > cap) return why(env, "%s is not a list of integers", what);
    for (int64_t i = 0; i < v->n; i++) {
        if (v->d[i] != floor(v->d[i])) return why(env, "%s is not a list of integers", what);
        out[i] = (int64_t)v->d[i];
    }
    return 1;
}

static int is_perm(const int64_t *p, int64_t n) {
    int seen[RL_MAX_RANK * 4] = {0};
    if (n > RL_MAX_RANK * 4) return 0;
    for (int64_t i = 0; i < n; i++) {
        if (p[i] < 0 || p[i] >= n || seen[p[i]]) return 0;
        seen[p[i]] = 1;
    }
    return 1;
}

static int eval_args(rl_env *env, const rl_expr *x, rl_val *v, int n) {
    if (x->na != n) return why(env, "%s() takes %d argument%s", x->s, n, n == 1 ? "" : "s");
    for (int i = 0; i < n; i++) {
        int r = rl_eval(env, x->a[i], &v[i]);
        if (r <= 0) return r;
    }
    return 1;
}

static int tensor_arg(rl_env *env, const rl_expr *x, const rl_val *v) {
    if (v->kind != RL_V_TENSOR) return why(env, "%s() takes a tensor", x->s);
    return 1;
}

/* A tensor argument of the graph queries: a bound tensor, or a node
 * name (n@Op) standing for its first output. */
static int graph_tensor(rl_env *env, const rl_expr *a, const gwr_tensor **t) {
    if (a->kind == RL_NAME) {
        const rl_bind *bd = rl_find_bind(env->t, a->s);
        if (bd && bd->kind == RL_B_NODE) {
            *t = gwr_layer_output(env->m->layers[bd->node], 0);
            return 1;
        }
    }
    rl_val v;
    int r = rl_eval(env, a, &v);
    if (r <= 0) return r;
    if (v.kind != RL_V_TENSOR) return why(env, "a tensor or a node name, not a value");
    *t = v.t;
    return 1;
}

/* Does every dim of c, right-aligned against x, equal 1 or x's known
 * extent (c no longer than x): c op x keeps x's shape. */
static int broadcasts_to(const gwr_tensor *c, const gwr_tensor *x) {
    int rc = gwr_tensor_rank(c), rx = gwr_tensor_rank(x);
    if (rc < 0 || rx < 0 || rc > rx) return 0;
    for (int d = 0; d < rc; d++) {
        gwr_dim a = gwr_tensor_dim(c, d), b = gwr_tensor_dim(x, rx - rc + d);
        if (a != 1 && !(GWR_DIM_IS_KNOWN(a) && a == b)) return 0;
    }
    return 1;
}

/* The graph queries: opset(), same_type(a, b), broadcasts_to(c, x),
 * dim(x, i), range(n), reverse(list); 2 when f is none of them. */
static int eval_graph(rl_env *env, const rl_expr *x, rl_val *out) {
    const char *f = x->s;
    const gwr_tensor *a, *b;
    int r;
    if (!strcmp(f, "opset")) {
        if (x->na) return why(env, "opset() takes no argument");
        return scalar(env, out, (double)gwr_match_opset(env->m->layers[env->m->nlayers - 1]), 0);
    }
    if (!strcmp(f, "same_type") || !strcmp(f, "broadcasts_to")) {
        if (x->na != 2) return why(env, "%s() takes 2 arguments", f);
        if ((r = graph_tensor(env, x->a[0], &a)) <= 0 || (r = graph_tensor(env, x->a[1], &b)) <= 0) return r;
        return scalar(env, out, f[0] == 's' ? gwr_match_same_type(a, b) : broadcasts_to(a, b), 0);
    }
    if (!strcmp(f, "dim")) { /* dim(x, i): the known extent of x's dim i (negative from the back) */
        rl_val v;
        if (x->na != 2) return why(env, "dim() takes 2 arguments");
        if ((r = graph_tensor(env, x->a[0], &a)) <= 0) return r;
        if ((r = rl_eval(env, x->a[1], &v)) <= 0 || (r = rl_val_numeric(env, &v)) <= 0) return r;
        int rank = gwr_tensor_rank(a), i = v.n == 1 ? (int)v.d[0] : rank;
        if (i < 0) i += rank;
        gwr_dim d = rank >= 0 && i >= 0 && i < rank ? gwr_tensor_dim(a, i) : GWR_DIM_UNKNOWN;
        if (!GWR_DIM_IS_KNOWN(d)) return why(env, "dim %g of '%s' is not known", v.n == 1 ? v.d[0] : 0.0, gwr_tensor_name(a));
        return scalar(env, out, (double)d, 0);
    }
    if (!strcmp(f, "reverse")) {
        rl_val v;
        if ((r = eval_args(env, x, &v, 1)) <= 0 || (r = rl_val_numeric(env, &v)) <= 0) return r;
        if (v.rank != 1) return why(env, "reverse() takes a list");
        *out = v;
        if ((r = arr(env, out, 1, v.dims, v.is_float, v.dtype)) <= 0) return r;
        for (int64_t i = 0; i < v.n; i++) out->d[i] = v.d[v.n - 1 - i];
        return 1;
    }
    if (!strcmp(f, "range")) {
        rl_val v;
        if ((r = eval_args(env, x, &v, 1)) <= 0 || (r = rl_val_numeric(env, &v)) <= 0) return r;
        int64_t n = v.n == 1 ? (int64_t)v.d[0] : -1, is[RL_MAX_RANK * 4];
        if (n < 0 || n > RL_MAX_RANK * 4) return why(env, "range() takes a count up to %d", RL_MAX_RANK * 4);
        for (int64_t i = 0; i < n; i++) is[i] = i;
        return list_of(env, out, is, (int)n);
    }
    return 2;
}

/* rank, shape, dtype, is_const, numel, value, len, compose, inverse, and
 * the elementwise math; 2 when f is none of them. */
static int eval_query(rl_env *env, const rl_expr *x, rl_val *out) {
    const char *f = x->s;
    rl_val v[3];
    int r;
    int64_t p[RL_MAX_RANK * 4], q[RL_MAX_RANK * 4];
    if (!strcmp(f, "rank") || !strcmp(f, "shape") || !strcmp(f, "dtype") || !strcmp(f, "is_const") || !strcmp(f, "numel")) {
        if ((r = eval_args(env, x, v, 1)) <= 0) return r;
        if (!strcmp(f, "numel") && v[0].kind == RL_V_ARR) return scalar(env, out, (double)v[0].n, 0);
        if ((r = tensor_arg(env, x, &v[0])) <= 0) return r;
        const gwr_tensor *t = v[0].t;
        if (!strcmp(f, "dtype")) {
            memset(out, 0, sizeof *out);
            out->kind = RL_V_DTYPE, out->dtype = gwr_tensor_dtype(t);
            return out->dtype != GWR_UNDEFINED ? 1 : why(env, "the dtype of '%s' is not known", gwr_tensor_name(t));
        }
        if (!strcmp(f, "is_const")) {
            const gwr_layer *l = gwr_tensor_parent(t);
            return scalar(env, out, l && gwr_layer_type(l) == GWR_LAYER_CONSTANT && !gwr_layer_is_removed(l), 0);
        }
        int rank = gwr_tensor_rank(t);
        if (rank < 0) return why(env, "the rank of '%s' is not known", gwr_tensor_name(t));
        if (!strcmp(f, "rank")) return scalar(env, out, rank, 0);
        int64_t dims[GWR_MAX_RANK], n = 1;
        for (int i = 0; i < rank; i++) {
            dims[i] = gwr_tensor_dim(t, i);
            if (!GWR_DIM_IS_KNOWN(dims[i])) return why(env, "the shape of '%s' is not known", gwr_tensor_name(t));
            n *= dims[i];
        }
        return !strcmp(f, "shape") ? list_of(env, out, dims, rank) : scalar(env, out, (double)n, 0);
    }
    if (!strcmp(f, "value")) {
        if ((r = eval_args(env, x, v, 1)) <= 0 || (r = rl_val_numeric(env, &v[0])) <= 0) return r;
        *out = v[0];
        return 1;
    }
    if (!strcmp(f, "len")) {
        if ((r = eval_args(env, x, v, 1)) <= 0) return r;
        if (v[0].kind == RL_V_STR) return scalar(env, out, (double)v[0].slen, 0);
        if ((r = rl_val_numeric(env, &v[0])) <= 0) return r;
        return scalar(env, out, (double)(v[0].rank ? v[0].dims[0] : 1), 0);
    }
    if (!strcmp(f, "compose") || !strcmp(f, "inverse")) {
        int two = f[0] == 'c';
        if ((r = eval_args(env, x, v, two ? 2 : 1)) <= 0) return r;
        if ((r = int_list(env, &v[0], p, RL_MAX_RANK * 4, "a permutation")) <= 0) return r;
        int64_t n = v[0].n;
        if (!is_perm(p, n)) return why(env, "%s(): not a permutation", f);
        if (two) {
            if ((r = int_list(env, &v[1], q, RL_MAX_RANK * 4, "a permutation")) <= 0) return r;
            if (v[1].n != n || !is_perm(q, n)) return why(env, "compose(): permutations of different lengths");
        }
        int64_t o[RL_MAX_RANK * 4];
        for (int64_t i = 0; i < n; i++) {
            if (two) o[i] = p[q[i]];
            else o[p[i]] = i;
        }
        return list_of(env, out, o, (int)n);
    }
    if (!strcmp(f, "sqrt") || !strcmp(f, "abs") || !strcmp(f, "exp") || !strcmp(f, "log") || !strcmp(f, "reciprocal")) {
        if ((r = eval_args(env, x, v, 1)) <= 0 || (r = rl_val_numeric(env, &v[0])) <= 0) return r;
        if ((r = arr(env, out, v[0].rank, v[0].dims, 1, v[0].dtype)) <= 0) return r;
        for (int64_t i = 0; i < out->n; i++) {
            double a = v[0].d[i];
            out->d[i] = f[0] == 's' ? sqrt(a) : f[0] == 'a' ? fabs(a) : f[0] == 'e' ? exp(a) : f[0] == 'l' ? log(a) : 1.0 / a;
        }
        return 1;
    }
    return 2;
}

static int eval_call(rl_env *env, const rl_expr *x, rl_val *out) {
    const char *f = x->s;
    rl_val v[3];
    int r = eval_query(env, x, out);
    int64_t p[RL_MAX_RANK * 4];
    if (r == 2) r = eval_graph(env, x, out);
    if (r != 2) return r;
    if (!strcmp(f, "min") || !strcmp(f, "max")) {
        if ((r = eval_args(env, x, v, 2)) <= 0 || (r = rl_val_numeric(env, &v[0])) <= 0 || (r = rl_val_numeric(env, &v[1])) <= 0)
            return r;
        if ((r = broadcast(env, &v[0], &v[1], out, v[0].is_float || v[1].is_float)) <= 0) return r;
        for (int64_t i = 0; i < out->n; i++) {
            double a = v[0].d[bidx(&v[0], out, i)], b = v[1].d[bidx(&v[1], out, i)];
            out->d[i] = f[1] == 'i' ? fmin(a, b) : fmax(a, b);
        }
        return 1;
    }
    if (!strcmp(f, "reshape")) {
        if ((r = eval_args(env, x, v, 2)) <= 0 || (r = rl_val_numeric(env, &v[0])) <= 0) return r;
        if ((r = int_list(env, &v[1], p, RL_MAX_RANK, "reshape()'s shape")) <= 0) return r;
        int64_t known = 1, neg = -1;
        for (int64_t i = 0; i < v[1].n; i++) {
            if (p[i] == -1 && neg < 0) neg = i;
            else if (p[i] < 0) return why(env, "reshape(): a bad dim");
            else known *= p[i];
        }
        if (neg >= 0) {
            if (!known || v[0].n % known) return why(env, "reshape(): %lld elements do not fit", (long long)v[0].n);
            p[neg] = v[0].n / known;
        } else if (known != v[0].n) {
            return why(env, "reshape(): %lld elements do not fit", (long long)v[0].n);
        }
        *out = v[0];
        out->rank = (int)v[1].n;
        for (int i = 0; i < out->rank; i++) out->dims[i] = p[i];
        return 1;
    }
    if (!strcmp(f, "transpose")) {
        if ((r = eval_args(env, x, v, 2)) <= 0 || (r = rl_val_numeric(env, &v[0])) <= 0) return r;
        if ((r = int_list(env, &v[1], p, RL_MAX_RANK, "transpose()'s perm")) <= 0) return r;
        if (v[1].n != v[0].rank || !is_perm(p, v[1].n)) return why(env, "transpose(): not a permutation of the rank");
        int64_t dims[RL_MAX_RANK], istr[RL_MAX_RANK];
        for (int i = 0; i < v[0].rank; i++) dims[i] = v[0].dims[p[i]];
        int64_t s = 1;
        for (int i = v[0].rank - 1; i >= 0; i--) istr[i] = s, s *= v[0].dims[i];
        if ((r = arr(env, out, v[0].rank, dims, v[0].is_float, v[0].dtype)) <= 0) return r;
        for (int64_t i = 0; i < out->n; i++) {
            int64_t rem = i, src = 0;
            for (int d = out->rank - 1; d >= 0; d--) {
                src += (rem % dims[d]) * istr[p[d]];
                rem /= dims[d];
            }
            out->d[i] = v[0].d[src];
        }
        return 1;
    }
    if (!strcmp(f, "concat")) {
        if (x->na != 2 || x->a[0]->kind != RL_LIST || !x->a[0]->na) return why(env, "concat() takes [a, b, ...] and an axis");
        const rl_expr *l = x->a[0];
        rl_val *parts = rl_alloc(&env->tmp, (size_t)l->na * sizeof *parts);
        if (!parts) return -1;
        if ((r = rl_eval(env, x->a[1], &v[0])) <= 0) return r;
        if (v[0].kind != RL_V_ARR || v[0].n != 1) return why(env, "concat(): the axis is an integer");
        for (int i = 0; i < l->na; i++)
            if ((r = rl_eval(env, l->a[i], &parts[i])) <= 0 || (r = rl_val_numeric(env, &parts[i])) <= 0) return r;
        int rank = parts[0].rank;
        int64_t axis = (int64_t)v[0].d[0];
        if (axis < 0) axis += rank;
        if (axis < 0 || axis >= rank) return why(env, "concat(): axis out of range");
        int64_t dims[RL_MAX_RANK];
        memcpy(dims, parts[0].dims, sizeof dims);
        dims[axis] = 0;
        int isf = 0;
        for (int i = 0; i < l->na; i++) {
            if (parts[i].rank != rank) return why(env, "concat(): ranks differ");
            for (int d = 0; d < rank; d++)
                if (d != axis && parts[i].dims[d] != parts[0].dims[d]) return why(env, "concat(): dims differ");
            dims[axis] += parts[i].dims[axis];
            isf |= parts[i].is_float;
        }
        if ((r = arr(env, out, rank, dims, isf, parts[0].dtype)) <= 0) return r;
        int64_t outer = 1, inner = 1;
        for (int d = 0; d < axis; d++) outer *= dims[d];
        for (int d = (int)axis + 1; d < rank; d++) inner *= dims[d];
        int64_t k = 0;
        for (int64_t o = 0; o < outer; o++)
            for (int i = 0; i < l->na; i++) {
                int64_t chunk = parts[i].dims[axis] * inner;
                memcpy(out->d + k, parts[i].d + o * chunk, (size_t)chunk * sizeof *out->d);
                k += chunk;
            }
        return 1;
    }
    if (!strcmp(f, "cast")) {
        if ((r = eval_args(env, x, v, 2)) <= 0 || (r = rl_val_numeric(env, &v[0])) <= 0) return r;
        if (v[1].kind != RL_V_DTYPE) return why(env, "cast(): the second argument is a dtype (f16, f32, i64, ...)");
        /* The values as the dtype holds them (rounded, or converted as the
         * executor converts), through a value of that dtype. */
        gwr_value *val = gwr_value_new(v[1].dtype, 1, &v[0].n);
        if (!val) return why(env, "cast(): cannot hold %s", gwr_dtype_name(v[1].dtype));
        if ((r = arr(env, out, v[0].rank, v[0].dims, gwr_match_dtype_real_float(v[1].dtype), v[1].dtype)) > 0)
            for (int64_t i = 0; i < v[0].n; i++) {
                gwr_value_set_f64(val, i, v[0].d[i]);
                out->d[i] = gwr_value_get_f64(val, i);
            }
        gwr_value_release(val);
        return r;
    }
    return why(env, "unknown function '%s'", f);
}

int rl_eval(rl_env *env, const rl_expr *x, rl_val *out) {
    int r;
    rl_val a, b;
    switch (x->kind) {
    case RL_NUM: return scalar(env, out, x->num, x->is_float);
    case RL_STR:
        memset(out, 0, sizeof *out);
        out->kind = RL_V_STR, out->s = x->s, out->slen = strlen(x->s);
        return 1;
    case RL_NAME: {
        const rl_bind *bd = rl_find_bind(env->t, x->s);
        if (bd) return bind_value(env, bd, out);
        uint32_t bits = 0;
        if (rl_dtype_name_bits(x->s, &bits) && !(bits & (bits - 1))) {
            memset(out, 0, sizeof *out);
            out->kind = RL_V_DTYPE;
            for (int d = 0; d < 32; d++)
                if (bits >> d & 1u) out->dtype = (gwr_dtype)d;
            return 1;
        }
        return why(env, "unbound name '%s'", x->s);
    }
    case RL_LIST: {
        int64_t n = x->na;
        int isf = 0;
        double *tmp = rl_alloc(&env->tmp, (size_t)(n ? n : 1) * sizeof *tmp);
        if (!tmp) return -1;
        for (int i = 0; i < x->na; i++) {
            if ((r = rl_eval(env, x->a[i], &a)) <= 0 || (r = rl_val_numeric(env, &a)) <= 0) return r;
            if (a.n != 1) return why(env, "a list holds numbers");
            tmp[i] = a.d[0], isf |= a.is_float;
        }
        if ((r = arr(env, out, 1, &n, isf, GWR_UNDEFINED)) <= 0) return r;
        memcpy(out->d, tmp, (size_t)n * sizeof *tmp);
        return 1;
    }
    case RL_CALL: return eval_call(env, x, out);
    case RL_BIN: return eval_bin(env, x, out);
    case RL_NOT:
        if ((r = rl_eval(env, x->a[0], &a)) <= 0) return r;
        return scalar(env, out, !rl_truth(&a), 0);
    case RL_NEG:
        if ((r = rl_eval(env, x->a[0], &a)) <= 0 || (r = rl_val_numeric(env, &a)) <= 0) return r;
        *out = a;
        if ((r = arr(env, out, a.rank, a.dims, a.is_float, a.dtype)) <= 0) return r;
        for (int64_t i = 0; i < a.n; i++) out->d[i] = -a.d[i];
        return 1;
    case RL_INDEX: {
        if ((r = rl_eval(env, x->a[0], &a)) <= 0 || (r = rl_val_numeric(env, &a)) <= 0) return r;
        if ((r = rl_eval(env, x->a[1], &b)) <= 0 || (r = rl_val_numeric(env, &b)) <= 0) return r;
        if (a.rank != 1 || b.n != 1) return why(env, "indexing takes a list and one integer");
        int64_t i = (int64_t)b.d[0];
        if (i < 0) i += a.n;
        if (i < 0 || i >= a.n) return why(env, "index %lld out of range", (long long)b.d[0]);
        return scalar(env, out, a.d[i], a.is_float);
    }
    case RL_FIELD: {
        const rl_bind *bd = rl_find_bind(env->t, x->a[0]->s);
        if (!bd || bd->kind != RL_B_NODE) return why(env, "'%s' is not a node", x->a[0]->s);
        r = attr_value(env, env->m->layers[bd->node], x->s, out);
        return r ? r : why(env, "attribute '%s' of '%s' is absent", x->s, x->a[0]->s);
    }
    default: return why(env, "not a value");
    }
}

/* ---- the checks of a match ------------------------------------------------------------------ */

/* What the table's references cannot say of a constrained name: the fixed
 * dims of `shape [..]` (constness, `~`, dtypes and ranks are the matcher's
 * own checks, v2; bound dims are compared with the other bindings). */
static int check_cons(rl_env *env, int slot, const rl_expr *x) {
    const gwr_tensor *t = env->m->captures[slot];
    if (!t || x->nshape < 0) return 1; /* an absent optional input */
    int rank = gwr_tensor_rank(t);
    if (rank != x->nshape) return why(env, "'%s' has rank %d, not %d", x->s, rank, x->nshape);
    for (int d = 0; d < rank; d++)
        if (x->shape[d]->kind == RL_NUM && gwr_tensor_dim(t, d) != (gwr_dim)x->shape[d]->num)
            return why(env, "'%s' dim %d is not %g", x->s, d, x->shape[d]->num);
    return 1;
}

int rl_check_match(rl_env *env) {
    const gwr_rl_table *t = env->t;
    int r;
    for (int i = 0; i < t->ncons; i++)
        if ((r = check_cons(env, t->cons[i].slot, t->cons[i].x)) <= 0) return r;
    /* Attribute captures present; a name bound twice holds one value. */
    for (int i = 0; i < t->nbinds; i++) {
        const rl_bind *b = &t->binds[i];
        if (b->kind != RL_B_ATTR && b->kind != RL_B_DIM) continue;
        rl_val v, w;
        if ((r = bind_value(env, b, &v)) <= 0) return r;
        for (int j = 0; j < i; j++)
            if (!strcmp(t->binds[j].name, b->name)) {
                if ((r = bind_value(env, &t->binds[j], &w)) <= 0) return r;
                if (!same_val(&v, &w)) return why(env, "'%s' holds two different values", b->name);
                break;
            }
    }
    for (int w = 0; w < t->rule->nwhere; w++) {
        rl_val v;
        if ((r = rl_eval(env, t->rule->where[w], &v)) <= 0) return r;
        if (!rl_truth(&v)) return why(env, "where clause %d (line %d) does not hold", w + 1, t->rule->where[w]->line);
    }
    return 1;
}
