/* basic.c - shape rules of the ops that hold, retype, measure or make
 * values rather than compute on elements: Constant, Identity, Dropout,
 * Cast, CastLike, Shape, Size, and the generators ConstantOfShape, Range,
 * EyeLike and the random ops. (exec/kernels/basic.c holds Constant and
 * Identity; the kernels of the others are spread over elementwise.c,
 * activation.c and tensor.c there.) */

#include <math.h>

#include "functional/infer/infer_internal.h"

static gwr_status infer_constant(ictx *c) {
    const gwr_weights *w;
    const gwr_bytes *sv;
    int64_t n;
    shp out = {0, {0}};
    const float *fv;
    const int64_t *iv;
    if (gwr_layer_has_attr(c->l, "value")) {
        if (gwr_layer_get_tensor(c->l, "value", &w) != GWR_OK || !w)
            return gwr_fi_fail(c, GWR_ERR_TYPE, "attribute value must be a tensor");
        if (w->rank < 0 || w->rank > GWR_MAX_RANK || (w->rank > 0 && !w->dims))
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "value has an invalid shape");
        out.rank = w->rank;
        for (int i = 0; i < w->rank; i++) {
            if (w->dims[i] < 0) return gwr_fi_fail(c, GWR_ERR_SHAPE, "value has a negative dim");
            out.d[i] = w->dims[i];
        }
        return gwr_fi_put(c, 0, w->dtype, &out);
    }
    if (gwr_layer_has_attr(c->l, "value_float")) {
        gwr_fi_afloat(c, "value_float", 0);
        return c->st ? c->st : gwr_fi_put(c, 0, GWR_FLOAT32, &out);
    }
    if (gwr_layer_has_attr(c->l, "value_int")) {
        gwr_fi_aint(c, "value_int", 0);
        return c->st ? c->st : gwr_fi_put(c, 0, GWR_INT64, &out);
    }
    if (gwr_layer_has_attr(c->l, "value_string")) {
        gwr_fi_astr(c, "value_string", "");
        return c->st ? c->st : gwr_fi_put(c, 0, GWR_STRING, &out);
    }
    out.rank = 1;
    if (gwr_layer_has_attr(c->l, "value_floats")) {
        if (gwr_layer_get_floats(c->l, "value_floats", &fv, &n) != GWR_OK)
            return gwr_fi_fail(c, GWR_ERR_TYPE, "attribute value_floats must be a list of floats");
        out.d[0] = n;
        return gwr_fi_put(c, 0, GWR_FLOAT32, &out);
    }
    if (gwr_fi_aints(c, "value_ints", &iv, &n)) {
        out.d[0] = n;
        return gwr_fi_put(c, 0, GWR_INT64, &out);
    }
    if (c->st) return c->st;
    if (gwr_layer_has_attr(c->l, "value_strings")) {
        if (gwr_layer_get_strings(c->l, "value_strings", &sv, &n) != GWR_OK)
            return gwr_fi_fail(c, GWR_ERR_TYPE, "attribute value_strings must be a list of strings");
        out.d[0] = n;
        return gwr_fi_put(c, 0, GWR_STRING, &out);
    }
    if (gwr_layer_has_attr(c->l, "sparse_value")) return gwr_fi_put(c, 0, GWR_UNDEFINED, NULL);
    return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "has no value attribute");
}

/* Identity, Dropout (output, optional bool mask). */
static gwr_status infer_identity(ictx *c) {
    shp s;
    gwr_tensor *x = gwr_fi_need(c, 0, "input");
    if (!x) return c->st;
    gwr_fi_shp_get(x, &s);
    if (gwr_fi_put(c, 0, dt_of(x), &s) != GWR_OK) return c->st;
    return gwr_fi_put(c, 1, GWR_BOOL, &s);
}

static int valid_dtype(int64_t d) {
    return d > GWR_UNDEFINED && d < GWR_DTYPE_COUNT && gwr_dtype_is_valid((gwr_dtype)d);
}

static gwr_status infer_cast(ictx *c) {
    int64_t to;
    if (!gwr_fi_need(c, 0, "input")) return c->st;
    if (!gwr_layer_has_attr(c->l, "to")) return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "missing attribute to");
    to = gwr_fi_aint(c, "to", 0);
    if (c->st) return c->st;
    if (!valid_dtype(to)) return gwr_fi_fail(c, GWR_ERR_TYPE, "to = %lld is not a dtype", (long long)to);
    return gwr_fi_same_as_input(c, (gwr_dtype)to);
}

static gwr_status infer_cast_like(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input"), *like = gwr_fi_need(c, 1, "target_type");
    if (!x || !like) return c->st;
    return gwr_fi_same_as_input(c, dt_of(like));
}

static gwr_status infer_shape(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "data");
    shp xs, out;
    int64_t s, e;
    if (!x) return c->st;
    gwr_fi_aint(c, "start", 0);
    gwr_fi_aint(c, "end", 0);
    if (c->st) return c->st;
    gwr_fi_shp_get(x, &xs);
    out.rank = 1;
    out.d[0] = GWR_DIM_UNKNOWN;
    if (xs.rank >= 0) {
        gwr_fi_shape_range(c->l, xs.rank, &s, &e);
        out.d[0] = e - s;
    }
    return gwr_fi_put(c, 0, GWR_INT64, &out);
}

static gwr_status infer_size(ictx *c) {
    shp out = {0, {0}};
    if (!gwr_fi_need(c, 0, "data")) return c->st;
    return gwr_fi_put(c, 0, GWR_INT64, &out);
}

/* A shape given as a 1-D int64 value (ConstantOfShape): rank from its
 * length, dims where known. */
static int shape_from_iv(ictx *c, const ival *sv, shp *out) {
    if (sv->rank == 0) {
        gwr_fi_fail(c, GWR_ERR_SHAPE, "the shape input must be 1-D");
        return 0;
    }
    out->rank = sv->n;
    for (int i = 0; i < sv->n; i++) {
        if (sv->k[i] == IV_VAL && sv->v[i] < 0) {
            gwr_fi_fail(c, GWR_ERR_SHAPE, "shape[%d] = %lld is negative", i, (long long)sv->v[i]);
            return 0;
        }
        out->d[i] = sv->k[i] == IV_UNK ? GWR_DIM_UNKNOWN : sv->v[i];
    }
    return 1;
}

static gwr_status infer_constant_of_shape(ictx *c) {
    gwr_tensor *st = gwr_fi_need(c, 0, "input");
    const gwr_weights *w;
    gwr_dtype dt = GWR_FLOAT32;
    ival sv;
    shp out;
    if (!st || !gwr_fi_want_dtype(c, st, GWR_INT64, "input") || gwr_fi_too_long(c, 0, "input")) return c->st;
    if (gwr_layer_has_attr(c->l, "value")) {
        if (gwr_layer_get_tensor(c->l, "value", &w) != GWR_OK || !w)
            return gwr_fi_fail(c, GWR_ERR_TYPE, "attribute value must be a tensor");
        dt = w->dtype;
    }
    gwr_fi_iv_in(c, 0, &sv);
    if (sv.n < 0) return gwr_fi_put(c, 0, dt, NULL);
    if (!shape_from_iv(c, &sv, &out)) return c->st;
    return gwr_fi_put(c, 0, dt, &out);
}

static gwr_status infer_range(ictx *c) {
    gwr_tensor *t[3];
    static const char *const names[] = {"start", "limit", "delta"};
    ival v[3];
    double f[3];
    shp out = {1, {GWR_DIM_UNKNOWN}};
    int nconst = 0;
    for (int i = 0; i < 3; i++) {
        shp s;
        sbuf p;
        if (!(t[i] = gwr_fi_need(c, i, names[i])) || (i > 0 && !gwr_fi_same_dtype(c, t[0], t[i]))) return c->st;
        gwr_fi_shp_get(t[i], &s);
        if (s.rank > 0 && !(s.rank == 1 && s.d[0] == 1))
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "%s must be a scalar, got %s", names[i], gwr_fi_tstr(t[i], &p));
        gwr_fi_iv_in(c, i, &v[i]);
        nconst += gwr_fi_const_f64s(t[i], &f[i], 1) == 1;
    }
    if (gwr_fi_iv_exact(&v[0]) && gwr_fi_iv_exact(&v[1]) && gwr_fi_iv_exact(&v[2]) && v[0].n == 1 && v[1].n == 1 &&
        v[2].n == 1) {
        int64_t st = v[0].v[0], lim = v[1].v[0], d = v[2].v[0], diff;
        if (d == 0) return gwr_fi_fail(c, GWR_ERR_SHAPE, "delta is 0");
        if (!__builtin_sub_overflow(lim, st, &diff)) {
            if (d > 0)
                out.d[0] = diff > 0 ? (diff - 1) / d + 1 : 0;
            else
                out.d[0] = diff < 0 ? (diff + 1) / d + 1 : 0;
        }
    } else if (v[0].n == 1 && v[1].n == 1 && v[2].n == 1 && v[0].k[0] == IV_VAL && v[0].v[0] == 0 &&
               v[2].k[0] == IV_VAL && v[2].v[0] == 1 && v[1].k[0] == IV_SYM) {
        out.d[0] = v[1].v[0]; /* Range(0, n, 1) of a symbolic n */
    } else if (nconst == 3) {
        double len;
        if (f[2] == 0) return gwr_fi_fail(c, GWR_ERR_SHAPE, "delta is 0");
        len = ceil((f[1] - f[0]) / f[2]);
        if (isfinite(len)) out.d[0] = len <= 0 ? 0 : len < 9.0e18 ? (gwr_dim)len : GWR_DIM_UNKNOWN;
    }
    return gwr_fi_put(c, 0, dt_of(t[0]), &out);
}

static gwr_status infer_eye_like(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input");
    shp xs;
    int64_t dt;
    if (!x) return c->st;
    dt = gwr_fi_aint(c, "dtype", dt_of(x));
    if (c->st) return c->st;
    gwr_fi_shp_get(x, &xs);
    if (!gwr_fi_want_rank(c, x, &xs, 2, 2, "input")) return c->st;
    if (xs.rank < 0) gwr_fi_shp_unknown_dims(&xs, 2);
    return gwr_fi_put(c, 0, (gwr_dtype)dt, &xs);
}

static gwr_status infer_random(ictx *c) {
    const int64_t *v;
    int64_t n, dt;
    shp out;
    gwr_tensor *x = inp(c, 0);
    switch (c->id) {
    case GWR_OP_RandomNormal:
    case GWR_OP_RandomUniform:
        dt = gwr_fi_aint(c, "dtype", GWR_FLOAT32);
        if (!gwr_fi_aints(c, "shape", &v, &n))
            return c->st ? c->st : gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "missing attribute shape");
        if (n > GWR_MAX_RANK) return gwr_fi_fail(c, GWR_ERR_SHAPE, "shape has %lld values", (long long)n);
        out.rank = (int)n;
        for (int i = 0; i < n; i++) {
            if (v[i] < 0) return gwr_fi_fail(c, GWR_ERR_SHAPE, "shape[%d] is negative", i);
            out.d[i] = v[i];
        }
        break;
    case GWR_OP_Multinomial:
        dt = gwr_fi_aint(c, "dtype", GWR_INT32);
        if (!gwr_fi_need(c, 0, "input")) return c->st;
        gwr_fi_shp_get(x, &out);
        if (!gwr_fi_want_rank(c, x, &out, 2, 2, "input")) return c->st;
        if (out.rank < 0) gwr_fi_shp_unknown_dims(&out, 2);
        out.d[1] = gwr_fi_aint(c, "sample_size", 1);
        if (out.d[1] < 0) return gwr_fi_fail(c, GWR_ERR_SHAPE, "sample_size is negative");
        break;
    default: /* the *Like ops and Bernoulli */
        if (!gwr_fi_need(c, 0, "input")) return c->st;
        dt = gwr_fi_aint(c, "dtype", dt_of(x));
        gwr_fi_shp_get(x, &out);
        break;
    }
    if (c->st) return c->st;
    if (!valid_dtype(dt)) return gwr_fi_fail(c, GWR_ERR_TYPE, "dtype %lld is invalid", (long long)dt);
    return gwr_fi_put(c, 0, (gwr_dtype)dt, &out);
}

const gwr_fi_entry gwr_fi_rules_basic[] = {
    {GWR_OP_Constant, infer_constant},
    {GWR_OP_Identity, infer_identity},
    {GWR_OP_Dropout, infer_identity},
    {GWR_OP_Cast, infer_cast},
    {GWR_OP_CastLike, infer_cast_like},
    {GWR_OP_Shape, infer_shape},
    {GWR_OP_Size, infer_size},
    {GWR_OP_ConstantOfShape, infer_constant_of_shape},
    {GWR_OP_Range, infer_range},
    {GWR_OP_EyeLike, infer_eye_like},
    {GWR_OP_RandomNormal, infer_random},
    {GWR_OP_RandomUniform, infer_random},
    {GWR_OP_RandomNormalLike, infer_random},
    {GWR_OP_RandomUniformLike, infer_random},
    {GWR_OP_Multinomial, infer_random},
    {GWR_OP_Bernoulli, infer_random},
    {GWR_OP_CUSTOM, NULL},
};
