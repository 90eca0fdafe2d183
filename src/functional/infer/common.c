/* common.c - the helpers every family of shape rules uses (declared, with
 * their contracts, in infer_internal.h): error reporting on the inference
 * context; attribute readers; shapes and dim arithmetic (broadcasting,
 * merging, axis normalization); the checks many rules make; small integer
 * values known at build time ("ivals": constants, and shapes propagated
 * through Shape/Gather/Concat/... the way ONNX data propagation does it);
 * the spatial parameters of convolutions and pools; and the two generic
 * rules. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "functional/infer/infer_internal.h"

/* ======================================================================
 * Context and errors
 * ====================================================================== */

gwr_status gwr_fi_fail(ictx *c, gwr_status s, const char *fmt, ...) {
    char msg[GWR_ERRMSG_MAX];
    va_list ap;
    if (c->st != GWR_OK) return c->st;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->st = s;
    gwr_ir_error(c->net, s, "%s '%s': %s", gwr_layer_op(c->l), gwr_layer_name(c->l), msg);
    return s;
}

/* ======================================================================
 * Attributes (absent -> default; present with another type -> error)
 * ====================================================================== */

/* Thin wrappers over the IR's getters with a default, which already leave
 * the default on a type mismatch: the rules' own message replaces the IR's. */

int64_t gwr_fi_aint(ictx *c, const char *name, int64_t def) {
    int64_t v;
    if (gwr_layer_attr_int(c->l, name, def, &v) != GWR_OK)
        gwr_fi_fail(c, GWR_ERR_TYPE, "attribute '%s' must be an int", name);
    return v;
}

float gwr_fi_afloat(ictx *c, const char *name, float def) {
    float v;
    if (gwr_layer_attr_float(c->l, name, def, &v) != GWR_OK)
        gwr_fi_fail(c, GWR_ERR_TYPE, "attribute '%s' must be a float", name);
    return v;
}

const char *gwr_fi_astr(ictx *c, const char *name, const char *def) {
    const char *v;
    if (gwr_layer_attr_string(c->l, name, def, &v) != GWR_OK)
        gwr_fi_fail(c, GWR_ERR_TYPE, "attribute '%s' must be a string", name);
    return v;
}

int gwr_fi_aints(ictx *c, const char *name, const int64_t **v, int64_t *n) {
    if (gwr_layer_attr_ints(c->l, name, v, n) != GWR_OK) {
        gwr_fi_fail(c, GWR_ERR_TYPE, "attribute '%s' must be a list of ints", name);
        return 0;
    }
    return *n >= 0;
}

/* ======================================================================
 * Shapes and dims
 * ====================================================================== */

void gwr_fi_shp_get(const gwr_tensor *t, shp *s) {
    const gwr_dim *d;
    int r;
    s->rank = -1;
    if (!t || gwr_tensor_kind(t) != GWR_VALUE_TENSOR) return;
    r = gwr_tensor_rank(t);
    d = gwr_tensor_dims(t);
    if (r < 0 || r > GWR_MAX_RANK || (r > 0 && !d)) return;
    s->rank = r;
    if (r > 0) memcpy(s->d, d, (size_t)r * sizeof *d);
}

void gwr_fi_shp_unknown_dims(shp *s, int rank) {
    s->rank = rank;
    for (int i = 0; i < rank && i < GWR_MAX_RANK; i++) s->d[i] = GWR_DIM_UNKNOWN;
}

int gwr_fi_shp_all_known(const shp *s) {
    if (s->rank < 0) return 0;
    for (int i = 0; i < s->rank; i++)
        if (!GWR_DIM_IS_KNOWN(s->d[i])) return 0;
    return 1;
}

gwr_status gwr_fi_put(ictx *c, int i, gwr_dtype dt, const shp *s) {
    gwr_tensor *o;
    int rank = s ? s->rank : -1;
    if (c->st != GWR_OK) return c->st;
    if (i < 0 || i >= c->nout || !(o = gwr_layer_output(c->l, i))) return GWR_OK;
    if (rank > GWR_MAX_RANK) return gwr_fi_fail(c, GWR_ERR_SHAPE, "output rank %d exceeds %d", rank, GWR_MAX_RANK);
    c->st = gwr_tensor_set_type(o, dt, rank, rank >= 0 ? s->d : NULL);
    return c->st;
}

gwr_status gwr_fi_put_all_unknown(ictx *c, gwr_dtype dt) {
    for (int i = 0; i < c->nout; i++) {
        gwr_status s = gwr_fi_put(c, i, dt, NULL);
        if (s != GWR_OK) return s;
    }
    return GWR_OK;
}

gwr_status gwr_fi_same_as_input(ictx *c, gwr_dtype dt) {
    shp s;
    gwr_tensor *x = gwr_fi_need(c, 0, "input");
    if (!x) return c->st;
    gwr_fi_shp_get(x, &s);
    return gwr_fi_put(c, 0, dt != GWR_UNDEFINED ? dt : dt_of(x), &s);
}

/* ---- the generic rules ---- */

gwr_status gwr_fi_rule_generic(ictx *c) {
    gwr_dtype dt = GWR_UNDEFINED;
    for (int i = 0; i < c->nin && dt == GWR_UNDEFINED; i++) dt = dt_of(inp(c, i));
    return gwr_fi_put_all_unknown(c, dt);
}

gwr_status gwr_fi_rule_same(ictx *c) { return gwr_fi_same_as_input(c, GWR_UNDEFINED); }

/* ---- text for messages ---- */

const char *gwr_fi_tstr(const gwr_tensor *t, sbuf *b) {
    if (!t)
        snprintf(b->s, sizeof b->s, "(absent)");
    else
        gwr_tensor_type_str(t, b->s, sizeof b->s);
    return b->s;
}

const char *gwr_fi_shp_str(const ictx *c, const shp *s, sbuf *b) {
    size_t n = 0;
    if (s->rank < 0) {
        snprintf(b->s, sizeof b->s, "[unknown rank]");
        return b->s;
    }
    b->s[n++] = '[';
    for (int i = 0; i < s->rank && n < sizeof b->s - 24; i++) {
        const char *sym = GWR_DIM_IS_SYM(s->d[i]) ? gwr_network_dim_name(c->net, s->d[i]) : NULL;
        int w;
        if (sym)
            w = snprintf(b->s + n, sizeof b->s - n, "%s%.40s", i ? "," : "", sym);
        else if (GWR_DIM_IS_KNOWN(s->d[i]))
            w = snprintf(b->s + n, sizeof b->s - n, "%s%lld", i ? "," : "", (long long)s->d[i]);
        else
            w = snprintf(b->s + n, sizeof b->s - n, "%s?", i ? "," : "");
        if (w > 0) n += (size_t)w;
    }
    if (n > sizeof b->s - 2) n = sizeof b->s - 2;
    b->s[n++] = ']';
    b->s[n] = '\0';
    return b->s;
}

/* ---- dim arithmetic ---- */

gwr_dim gwr_fi_dmul(gwr_dim a, gwr_dim b) {
    if (a == 0 || b == 0) return 0;
    if (a == 1) return b;
    if (b == 1) return a;
    if (a > 0 && b > 0) return a > INT64_MAX / b ? GWR_DIM_UNKNOWN : a * b;
    return GWR_DIM_UNKNOWN;
}

gwr_dim gwr_fi_dadd(gwr_dim a, gwr_dim b) {
    if (a == 0) return b;
    if (b == 0) return a;
    if (a > 0 && b > 0) return a > INT64_MAX - b ? GWR_DIM_UNKNOWN : a + b;
    return GWR_DIM_UNKNOWN;
}

/* One dim of a NumPy broadcast; 0 when the two definitely cannot
 * broadcast. Rules: a known 1 yields the other; equal dims stay; a known
 * extent other than 1 wins over a symbol or an unknown (the other must be
 * 1 or equal to it at run time); different symbols, or a symbol against an
 * unknown, give unknown. */
static int bdim(gwr_dim a, gwr_dim b, gwr_dim *out) {
    if (a == b) {
        *out = a;
    } else if (a == 1) {
        *out = b;
    } else if (b == 1) {
        *out = a;
    } else if (GWR_DIM_IS_KNOWN(a) && GWR_DIM_IS_KNOWN(b)) {
        return 0;
    } else if (GWR_DIM_IS_KNOWN(a)) {
        *out = a;
    } else if (GWR_DIM_IS_KNOWN(b)) {
        *out = b;
    } else {
        *out = GWR_DIM_UNKNOWN;
    }
    return 1;
}

int gwr_fi_bcast(const shp *a, const shp *b, shp *out) {
    shp r;
    if (a->rank < 0 || b->rank < 0) {
        out->rank = -1;
        return 1;
    }
    r.rank = a->rank > b->rank ? a->rank : b->rank;
    for (int i = 0; i < r.rank; i++) {
        int ia = i - (r.rank - a->rank), ib = i - (r.rank - b->rank);
        gwr_dim da = ia >= 0 ? a->d[ia] : 1, db = ib >= 0 ? b->d[ib] : 1;
        if (!bdim(da, db, &r.d[i])) return 0;
    }
    *out = r;
    return 1;
}

int gwr_fi_ubcast_ok(const shp *target, const shp *src) {
    if (target->rank < 0 || src->rank < 0) return 1;
    if (src->rank > target->rank) return 0;
    for (int i = 0; i < src->rank; i++) {
        gwr_dim s = src->d[src->rank - 1 - i], t = target->d[target->rank - 1 - i];
        if (GWR_DIM_IS_KNOWN(s) && s != 1 && GWR_DIM_IS_KNOWN(t) && s != t) return 0;
    }
    return 1;
}

int gwr_fi_dmerge(gwr_dim a, gwr_dim b, gwr_dim *out) {
    if (GWR_DIM_IS_KNOWN(a) && GWR_DIM_IS_KNOWN(b) && a != b) return 0;
    *out = GWR_DIM_IS_KNOWN(a) ? a : GWR_DIM_IS_KNOWN(b) ? b : GWR_DIM_IS_SYM(a) ? a : b;
    return 1;
}

int gwr_fi_norm_axis(ictx *c, int64_t axis, int rank, int extra, int64_t *out) {
    int64_t r = rank + (extra ? 1 : 0);
    if (axis < -r || axis >= r) {
        gwr_fi_fail(c, GWR_ERR_SHAPE, "axis %lld is out of range for rank %d", (long long)axis, rank);
        return 0;
    }
    *out = axis < 0 ? axis + r : axis;
    return 1;
}

/* ======================================================================
 * Checks shared by many rules
 * ====================================================================== */

gwr_tensor *gwr_fi_need(ictx *c, int i, const char *what) {
    gwr_tensor *t = inp(c, i);
    if (!t) gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "required input %d (%s) is absent", i, what);
    return t;
}

int gwr_fi_same_dtype(ictx *c, const gwr_tensor *a, const gwr_tensor *b) {
    gwr_dtype da = dt_of(a), db = dt_of(b);
    sbuf x, y;
    if (!a || !b || da == GWR_UNDEFINED || db == GWR_UNDEFINED || da == db) return 1;
    gwr_fi_fail(c, GWR_ERR_TYPE, "input dtypes differ: %s vs %s", gwr_fi_tstr(a, &x), gwr_fi_tstr(b, &y));
    return 0;
}

int gwr_fi_want_dtype(ictx *c, const gwr_tensor *t, gwr_dtype want, const char *what) {
    gwr_dtype d = dt_of(t);
    sbuf x;
    if (!t || d == GWR_UNDEFINED || d == want) return 1;
    gwr_fi_fail(c, GWR_ERR_TYPE, "%s must be %s, got %s", what, gwr_dtype_name(want), gwr_fi_tstr(t, &x));
    return 0;
}

int gwr_fi_want_index_dtype(ictx *c, const gwr_tensor *t, const char *what) {
    gwr_dtype d = dt_of(t);
    sbuf x;
    if (!t || d == GWR_UNDEFINED || d == GWR_INT64 || d == GWR_INT32) return 1;
    gwr_fi_fail(c, GWR_ERR_TYPE, "%s must be int32 or int64, got %s", what, gwr_fi_tstr(t, &x));
    return 0;
}

int gwr_fi_want_rank(ictx *c, const gwr_tensor *t, const shp *s, int lo, int hi, const char *what) {
    sbuf x;
    if (s->rank < 0 || (s->rank >= lo && s->rank <= hi)) return 1;
    if (lo == hi)
        gwr_fi_fail(c, GWR_ERR_SHAPE, "%s must have rank %d, got %s", what, lo, gwr_fi_tstr(t, &x));
    else if (hi >= GWR_MAX_RANK)
        gwr_fi_fail(c, GWR_ERR_SHAPE, "%s must have rank >= %d, got %s", what, lo, gwr_fi_tstr(t, &x));
    else
        gwr_fi_fail(c, GWR_ERR_SHAPE, "%s must have rank %d..%d, got %s", what, lo, hi, gwr_fi_tstr(t, &x));
    return 0;
}

int gwr_fi_want_vec(ictx *c, const gwr_tensor *t, gwr_dim n, const char *what) {
    shp s;
    sbuf x;
    gwr_dim m;
    if (!t) return 1;
    gwr_fi_shp_get(t, &s);
    if (!gwr_fi_want_rank(c, t, &s, 1, 1, what)) return 0;
    if (s.rank == 1 && !gwr_fi_dmerge(s.d[0], n, &m)) {
        gwr_fi_fail(c, GWR_ERR_SHAPE, "%s has %s, expected %lld elements", what, gwr_fi_tstr(t, &x), (long long)n);
        return 0;
    }
    return 1;
}

/* ======================================================================
 * Small integer values known at build time
 * ====================================================================== */

void gwr_fi_iv_unknown(ival *o, int rank, int n) {
    o->rank = rank;
    o->n = (n >= 0 && n <= IV_MAX) ? n : -1;
    if (o->n > 0) memset(o->k, IV_UNK, (size_t)o->n);
}

int gwr_fi_iv_exact(const ival *v) {
    if (v->n < 0) return 0;
    for (int i = 0; i < v->n; i++)
        if (v->k[i] != IV_VAL) return 0;
    return 1;
}

void gwr_fi_iv_from_ints(ival *o, const int64_t *v, int64_t n) {
    gwr_fi_iv_unknown(o, 1, n > IV_MAX ? -1 : (int)n);
    for (int i = 0; i < o->n; i++) {
        o->v[i] = v[i];
        o->k[i] = IV_VAL;
    }
}

/* Reads element i of integer weights; 0 when the dtype is not an integer
 * type that fits int64. */
static int w_int_at(const gwr_weights *w, int64_t i, int64_t *out) {
    size_t sz = gwr_dtype_size(w->dtype);
    const unsigned char *p = (const unsigned char *)w->data + (size_t)i * sz;
    switch (w->dtype) {
    case GWR_INT64: {
        int64_t x;
        memcpy(&x, p, 8);
        *out = x;
        return 1;
    }
    case GWR_INT32: {
        int32_t x;
        memcpy(&x, p, 4);
        *out = x;
        return 1;
    }
    case GWR_INT16: {
        int16_t x;
        memcpy(&x, p, 2);
        *out = x;
        return 1;
    }
    case GWR_INT8: {
        int8_t x;
        memcpy(&x, p, 1);
        *out = x;
        return 1;
    }
    case GWR_UINT8: {
        uint8_t x;
        memcpy(&x, p, 1);
        *out = x;
        return 1;
    }
    case GWR_UINT16: {
        uint16_t x;
        memcpy(&x, p, 2);
        *out = x;
        return 1;
    }
    case GWR_UINT32: {
        uint32_t x;
        memcpy(&x, p, 4);
        *out = x;
        return 1;
    }
    case GWR_UINT64: {
        uint64_t x;
        memcpy(&x, p, 8);
        if (x > (uint64_t)INT64_MAX) return 0;
        *out = (int64_t)x;
        return 1;
    }
    default:
        return 0;
    }
}

/* Number of elements of weights, checked against their byte size; -1 when
 * the weights are malformed. */
static int64_t w_count(const gwr_weights *w) {
    int64_t n;
    size_t sz = gwr_dtype_size(w->dtype);
    if (w->rank < 0 || w->rank > GWR_MAX_RANK || (w->rank > 0 && !w->dims)) return -1;
    n = gwr_shape_numel(w->rank, w->dims);
    if (n < 0 || sz == 0 || gwr_dtype_bits(w->dtype) < 8) return -1;
    if (n > 0 && (!w->data || (uint64_t)n > w->nbytes / sz)) return -1;
    return n;
}

/* The value of a CONSTANT layer: a "value" tensor, value_int or
 * value_ints. */
static void iv_constant(const gwr_layer *p, ival *o) {
    const gwr_weights *w;
    const int64_t *v;
    int64_t n, x;
    if (gwr_layer_get_tensor(p, "value", &w) == GWR_OK && w && w->rank <= 1) {
        n = w_count(w);
        if (n < 0 || n > IV_MAX) return;
        gwr_fi_iv_unknown(o, w->rank, (int)n);
        for (int i = 0; i < o->n; i++) {
            if (!w_int_at(w, i, &o->v[i])) {
                gwr_fi_iv_unknown(o, w->rank, (int)n);
                return;
            }
            o->k[i] = IV_VAL;
        }
    } else if (gwr_layer_get_int(p, "value_int", &x) == GWR_OK) {
        gwr_fi_iv_unknown(o, 0, 1);
        o->v[0] = x;
        o->k[0] = IV_VAL;
    } else if (gwr_layer_get_ints(p, "value_ints", &v, &n) == GWR_OK) {
        gwr_fi_iv_from_ints(o, v, n);
    }
}

void gwr_fi_shape_range(const gwr_layer *p, int rank, int64_t *start, int64_t *end) {
    int64_t s = 0, e = rank;
    if (gwr_layer_get_int(p, "start", &s) != GWR_OK) s = 0;
    if (gwr_layer_get_int(p, "end", &e) != GWR_OK) e = rank;
    if (s < 0) s += rank;
    if (e < 0) e += rank;
    s = s < 0 ? 0 : s > rank ? rank : s;
    e = e < 0 ? 0 : e > rank ? rank : e;
    *start = s;
    *end = e < s ? s : e;
}

int64_t gwr_fi_slice_len(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t *first) {
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    if (step > 0) {
        start = start < 0 ? 0 : start > dim ? dim : start;
        end = end < 0 ? 0 : end > dim ? dim : end;
        *first = start;
        return end > start ? (end - start - 1) / step + 1 : 0;
    } else {
        int64_t ns = step == INT64_MIN ? INT64_MAX : -step;
        start = start < 0 ? 0 : start > dim - 1 ? dim - 1 : start;
        end = end < -1 ? -1 : end > dim - 1 ? dim - 1 : end;
        *first = start;
        return start > end ? (start - end - 1) / ns + 1 : 0;
    }
}

/* The four Slice parameters of a layer as ivals (input or attribute form). */
static int iv_slice(const gwr_layer *p, const ival *data, ival *o, int depth) {
    ival st, en, ax, sp;
    int64_t first, len;
    int nin = gwr_layer_num_inputs(p);
    if (data->rank != 1 || data->n < 0 || nin < 3) return 0;
    gwr_fi_iv_eval(gwr_layer_input(p, 1), &st, depth + 1);
    gwr_fi_iv_eval(gwr_layer_input(p, 2), &en, depth + 1);
    if (!gwr_fi_iv_exact(&st) || !gwr_fi_iv_exact(&en) || st.n != 1 || en.n != 1) return 0;
    if (nin > 3 && gwr_layer_input(p, 3)) {
        gwr_fi_iv_eval(gwr_layer_input(p, 3), &ax, depth + 1);
        if (!gwr_fi_iv_exact(&ax) || ax.n != 1 || (ax.v[0] != 0 && ax.v[0] != -1)) return 0;
    }
    sp.v[0] = 1;
    if (nin > 4 && gwr_layer_input(p, 4)) {
        gwr_fi_iv_eval(gwr_layer_input(p, 4), &sp, depth + 1);
        if (!gwr_fi_iv_exact(&sp) || sp.n != 1 || sp.v[0] == 0) return 0;
    }
    len = gwr_fi_slice_len(data->n, st.v[0], en.v[0], sp.v[0], &first);
    gwr_fi_iv_unknown(o, 1, (int)len);
    for (int64_t i = 0; i < len; i++) {
        o->v[i] = data->v[first + i * sp.v[0]];
        o->k[i] = data->k[first + i * sp.v[0]];
    }
    return 1;
}

/* Element-wise integer arithmetic on ivals (scalar broadcasts). */
static int iv_arith(gwr_op_id id, const ival *a, const ival *b, ival *o) {
    int n;
    if (a->n < 0 || b->n < 0 || a->rank < 0 || b->rank < 0) return 0;
    if (a->n != b->n && a->n != 1 && b->n != 1) return 0;
    n = a->n > b->n ? a->n : b->n;
    if (a->n == 0 || b->n == 0) n = 0;
    gwr_fi_iv_unknown(o, a->rank > b->rank ? a->rank : b->rank, n);
    for (int i = 0; i < n; i++) {
        int ia = a->n == 1 ? 0 : i, ib = b->n == 1 ? 0 : i;
        int64_t x = a->v[ia], y = b->v[ib], r = 0;
        int ka = a->k[ia], kb = b->k[ib], ok = 0;
        if (ka == IV_VAL && kb == IV_VAL) {
            switch (id) {
            case GWR_OP_Add:
                ok = !__builtin_add_overflow(x, y, &r);
                break;
            case GWR_OP_Sub:
                ok = !__builtin_sub_overflow(x, y, &r);
                break;
            case GWR_OP_Mul:
                ok = !__builtin_mul_overflow(x, y, &r);
                break;
            case GWR_OP_Div:
                ok = y != 0 && !(x == INT64_MIN && y == -1);
                r = ok ? x / y : 0;
                break;
            default:
                break;
            }
            if (ok) {
                o->v[i] = r;
                o->k[i] = IV_VAL;
            }
        } else if (ka == IV_SYM && kb == IV_VAL &&
                   (((id == GWR_OP_Add || id == GWR_OP_Sub) && y == 0) ||
                    ((id == GWR_OP_Mul || id == GWR_OP_Div) && y == 1))) {
            o->v[i] = x;
            o->k[i] = IV_SYM;
        } else if (kb == IV_SYM && ka == IV_VAL && ((id == GWR_OP_Add && x == 0) || (id == GWR_OP_Mul && x == 1))) {
            o->v[i] = y;
            o->k[i] = IV_SYM;
        }
    }
    return 1;
}

/* What the producer of t says about its value. */
static int iv_from_producer(const gwr_layer *p, int out_index, ival *o, int depth) {
    ival a, b;
    gwr_tensor *x = gwr_layer_num_inputs(p) > 0 ? gwr_layer_input(p, 0) : NULL;
    int64_t s, e, axis, to;
    gwr_fi_iv_unknown(o, -1, -1);
    if (out_index != 0) return 0;
    if (gwr_layer_type_of(p) == GWR_LAYER_CONSTANT) {
        iv_constant(p, o);
        return o->rank >= 0;
    }
    switch (gwr_layer_op_id(p)) {
    case GWR_OP_Shape: {
        shp xs;
        gwr_fi_shp_get(x, &xs);
        if (xs.rank < 0) return 0;
        gwr_fi_shape_range(p, xs.rank, &s, &e);
        gwr_fi_iv_unknown(o, 1, (int)(e - s));
        for (int64_t i = s; i < e; i++) {
            o->v[i - s] = xs.d[i];
            o->k[i - s] = GWR_DIM_IS_KNOWN(xs.d[i]) ? IV_VAL : GWR_DIM_IS_SYM(xs.d[i]) ? IV_SYM : IV_UNK;
        }
        return 1;
    }
    case GWR_OP_Size: {
        shp xs;
        gwr_fi_shp_get(x, &xs);
        if (!gwr_fi_shp_all_known(&xs) || (s = gwr_shape_numel(xs.rank, xs.d)) < 0) return 0;
        gwr_fi_iv_unknown(o, 0, 1);
        o->v[0] = s;
        o->k[0] = IV_VAL;
        return 1;
    }
    case GWR_OP_Identity:
        gwr_fi_iv_eval(x, o, depth + 1);
        return o->rank >= 0;
    case GWR_OP_Cast:
        if (gwr_layer_get_int(p, "to", &to) != GWR_OK || (to != GWR_INT64 && to != GWR_INT32)) return 0;
        gwr_fi_iv_eval(x, o, depth + 1);
        return o->rank >= 0;
    case GWR_OP_Squeeze:
        gwr_fi_iv_eval(x, o, depth + 1);
        if (o->rank == 1 && o->n == 1) {
            o->rank = 0;
            return 1;
        }
        return o->rank == 0;
    case GWR_OP_Unsqueeze:
        gwr_fi_iv_eval(x, o, depth + 1);
        if (o->rank == 0) {
            o->rank = 1;
            return 1;
        }
        return 0;
    case GWR_OP_Concat: {
        int nin = gwr_layer_num_inputs(p), n = 0;
        if (gwr_layer_get_int(p, "axis", &axis) != GWR_OK || (axis != 0 && axis != -1)) return 0;
        gwr_fi_iv_unknown(o, 1, 0);
        for (int i = 0; i < nin; i++) {
            gwr_fi_iv_eval(gwr_layer_input(p, i), &a, depth + 1);
            if (a.rank != 1 || a.n < 0 || n + a.n > IV_MAX) return 0;
            memcpy(o->v + n, a.v, (size_t)a.n * sizeof a.v[0]);
            memcpy(o->k + n, a.k, (size_t)a.n);
            n += a.n;
        }
        o->n = n;
        return 1;
    }
    case GWR_OP_Gather: {
        if (gwr_layer_get_int(p, "axis", &axis) != GWR_OK) axis = 0;
        gwr_fi_iv_eval(x, &a, depth + 1);
        gwr_fi_iv_eval(gwr_layer_num_inputs(p) > 1 ? gwr_layer_input(p, 1) : NULL, &b, depth + 1);
        if (a.rank != 1 || a.n < 0 || (axis != 0 && axis != -1) || !gwr_fi_iv_exact(&b) || b.rank < 0) return 0;
        gwr_fi_iv_unknown(o, b.rank, b.n);
        for (int i = 0; i < b.n; i++) {
            int64_t j = b.v[i] < 0 ? b.v[i] + a.n : b.v[i];
            if (j < 0 || j >= a.n) return 0;
            o->v[i] = a.v[j];
            o->k[i] = a.k[j];
        }
        return 1;
    }
    case GWR_OP_Slice:
        gwr_fi_iv_eval(x, &a, depth + 1);
        return iv_slice(p, &a, o, depth);
    case GWR_OP_Add:
    case GWR_OP_Sub:
    case GWR_OP_Mul:
    case GWR_OP_Div:
        gwr_fi_iv_eval(x, &a, depth + 1);
        gwr_fi_iv_eval(gwr_layer_num_inputs(p) > 1 ? gwr_layer_input(p, 1) : NULL, &b, depth + 1);
        return iv_arith(gwr_layer_op_id(p), &a, &b, o);
    default:
        return 0;
    }
}

void gwr_fi_iv_eval(const gwr_tensor *t, ival *o, int depth) {
    gwr_layer *p;
    ival pv;
    int r;
    gwr_fi_iv_unknown(o, -1, -1);
    if (!t || gwr_tensor_kind(t) != GWR_VALUE_TENSOR) return;
    r = gwr_tensor_rank(t);
    if (r == 0)
        gwr_fi_iv_unknown(o, 0, 1);
    else if (r == 1)
        gwr_fi_iv_unknown(
            o, 1,
            GWR_DIM_IS_KNOWN(gwr_tensor_dim(t, 0)) && gwr_tensor_dim(t, 0) <= IV_MAX ? (int)gwr_tensor_dim(t, 0) : -1);
    p = gwr_tensor_parent(t);
    if (!p || depth > IV_DEPTH) return;
    if (!iv_from_producer(p, gwr_tensor_parent_output_index(t), &pv, depth)) return;
    /* Trust the producer only where it agrees with the declared type. */
    if ((o->rank >= 0 && pv.rank != o->rank) || (o->n >= 0 && pv.n != o->n) || pv.n < 0) return;
    *o = pv;
}

void gwr_fi_iv_in(const ictx *c, int i, ival *o) { gwr_fi_iv_eval(inp(c, i), o, 0); }

int gwr_fi_too_long(ictx *c, int i, const char *what) {
    gwr_tensor *t = inp(c, i);
    gwr_dim n = t && gwr_tensor_rank(t) == 1 ? gwr_tensor_dim(t, 0) : GWR_DIM_UNKNOWN;
    if (n <= GWR_MAX_RANK) return 0;
    gwr_fi_fail(c, GWR_ERR_SHAPE, "%s has %lld values, more than the rank limit %d", what, (long long)n, GWR_MAX_RANK);
    return 1;
}

int gwr_fi_iv_param(ictx *c, int i, const char *attr, ival *o) {
    const int64_t *v;
    int64_t n;
    if (inp(c, i)) {
        gwr_fi_iv_in(c, i, o);
        return 1;
    }
    if (attr && gwr_fi_aints(c, attr, &v, &n)) {
        gwr_fi_iv_from_ints(o, v, n);
        return 1;
    }
    gwr_fi_iv_unknown(o, -1, -1);
    return 0;
}

int gwr_fi_const_f64s(const gwr_tensor *t, double *out, int max) {
    gwr_layer *p = t ? gwr_tensor_parent(t) : NULL;
    const gwr_weights *w;
    const float *fv;
    int64_t n, iv;
    float f;
    if (!p || gwr_layer_type_of(p) != GWR_LAYER_CONSTANT) return -1;
    if (gwr_layer_get_tensor(p, "value", &w) == GWR_OK && w) {
        n = w_count(w);
        if (n < 0 || n > max) return -1;
        for (int64_t i = 0; i < n; i++) {
            const unsigned char *q = (const unsigned char *)w->data + (size_t)i * gwr_dtype_size(w->dtype);
            if (w->dtype == GWR_FLOAT32) {
                memcpy(&f, q, 4);
                out[i] = f;
            } else if (w->dtype == GWR_FLOAT64) {
                memcpy(&out[i], q, 8);
            } else if (w_int_at(w, i, &iv)) {
                out[i] = (double)iv;
            } else {
                return -1;
            }
        }
        return (int)n;
    }
    if (gwr_layer_get_float(p, "value_float", &f) == GWR_OK && max >= 1) {
        out[0] = f;
        return 1;
    }
    if (gwr_layer_get_floats(p, "value_floats", &fv, &n) == GWR_OK && n <= max) {
        for (int64_t i = 0; i < n; i++) out[i] = fv[i];
        return (int)n;
    }
    if (gwr_layer_get_int(p, "value_int", &iv) == GWR_OK && max >= 1) {
        out[0] = (double)iv;
        return 1;
    }
    return -1;
}

int gwr_fi_norm_axes(ictx *c, const ival *v, int rank, int64_t *axes) {
    for (int i = 0; i < v->n; i++) {
        if (!gwr_fi_norm_axis(c, v->v[i], rank, 0, &axes[i])) return 0;
        for (int j = 0; j < i; j++)
            if (axes[j] == axes[i]) {
                gwr_fi_fail(c, GWR_ERR_SHAPE, "axis %lld is repeated", (long long)v->v[i]);
                return 0;
            }
    }
    return 1;
}

/* ======================================================================
 * Convolution and pooling parameters
 * ====================================================================== */

static int read_auto_pad(ictx *c, int *mode) {
    const char *s = gwr_fi_astr(c, "auto_pad", "NOTSET");
    if (c->st) return 0;
    if (!strcmp(s, "NOTSET") || !*s)
        *mode = PAD_NOTSET;
    else if (!strcmp(s, "SAME_UPPER"))
        *mode = PAD_SAME_UPPER;
    else if (!strcmp(s, "SAME_LOWER"))
        *mode = PAD_SAME_LOWER;
    else if (!strcmp(s, "VALID"))
        *mode = PAD_VALID;
    else {
        gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "unknown auto_pad \"%s\"", s);
        return 0;
    }
    return 1;
}

int gwr_fi_read_ints_n(ictx *c, const char *name, int want, int64_t lo, int64_t def, int64_t *out) {
    const int64_t *v;
    int64_t n;
    if (!gwr_fi_aints(c, name, &v, &n)) {
        for (int i = 0; i < want; i++) out[i] = def;
        return c->st == GWR_OK;
    }
    if (n != want) {
        gwr_fi_fail(c, GWR_ERR_SHAPE, "%s has %lld values, expected %d", name, (long long)n, want);
        return 0;
    }
    for (int i = 0; i < want; i++) {
        if (v[i] < lo) {
            gwr_fi_fail(c, GWR_ERR_SHAPE, "%s[%d] = %lld is invalid", name, i, (long long)v[i]);
            return 0;
        }
        out[i] = v[i];
    }
    return 1;
}

int gwr_fi_read_spatial(ictx *c, spatial *sp) {
    if (!gwr_fi_read_ints_n(c, "strides", sp->n, 1, 1, sp->s) ||
        !gwr_fi_read_ints_n(c, "dilations", sp->n, 1, 1, sp->d) ||
        !gwr_fi_read_ints_n(c, "pads", 2 * sp->n, 0, 0, sp->pads) ||
        !gwr_fi_read_ints_n(c, "output_padding", sp->n, 0, 0, sp->op) || !read_auto_pad(c, &sp->mode))
        return 0;
    sp->ceil_mode = gwr_fi_aint(c, "ceil_mode", 0) != 0;
    if (sp->mode != PAD_NOTSET) memset(sp->pads, 0, sizeof sp->pads);
    return c->st == GWR_OK;
}

gwr_dim gwr_fi_conv_out(ictx *c, const spatial *sp, int i, gwr_dim in, int is_pool) {
    int64_t s = sp->s[i], pb = sp->pads[i], pe = sp->pads[sp->n + i];
    int64_t ek, num, o;
    if (sp->k[i] < 1 || sp->d[i] > (INT64_MAX / 2) / sp->k[i]) {
        gwr_fi_fail(c, GWR_ERR_SHAPE, "kernel extent %lld is invalid", (long long)sp->k[i]);
        return GWR_DIM_UNKNOWN;
    }
    ek = (sp->k[i] - 1) * sp->d[i] + 1;
    if (!GWR_DIM_IS_KNOWN(in)) {
        int same_keep = (sp->mode == PAD_SAME_UPPER || sp->mode == PAD_SAME_LOWER) && s == 1;
        int plain_keep = (sp->mode == PAD_NOTSET || sp->mode == PAD_VALID) && ek == 1 && s == 1 && pb == 0 && pe == 0;
        return same_keep || plain_keep ? in : GWR_DIM_UNKNOWN;
    }
    if (sp->mode == PAD_SAME_UPPER || sp->mode == PAD_SAME_LOWER) return in / s + (in % s != 0);
    if (pb > INT64_MAX / 4 || pe > INT64_MAX / 4 || in > INT64_MAX / 4) return GWR_DIM_UNKNOWN;
    num = in + pb + pe - ek;
    if (num < 0) {
        gwr_fi_fail(c, GWR_ERR_SHAPE,
                    "spatial dim %d: input extent %lld (padded %lld) is smaller than the kernel extent %lld", i,
                    (long long)in, (long long)(in + pb + pe), (long long)ek);
        return GWR_DIM_UNKNOWN;
    }
    if (is_pool && sp->ceil_mode) {
        o = num / s + (num % s != 0) + 1;
        /* The last window must start inside the input or its begin pad. */
        if (sp->mode == PAD_NOTSET && (o - 1) * s >= in + pb) o--;
    } else {
        o = num / s + 1;
    }
    return o;
}
