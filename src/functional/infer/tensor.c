/* tensor.c - shape rules of the ops that move, view or select elements
 * without arithmetic on them: Reshape, Flatten, Transpose, Concat, Split,
 * Slice, Squeeze, Unsqueeze, DepthToSpace, SpaceToDepth, Expand, Tile, Pad,
 * Compress, NonZero, OneHot, Trilu and ReverseSequence. Shape-valued
 * inputs (Reshape's shape, Slice's starts ...) are read as ivals, so a
 * shape computed from another tensor's Shape still gives known dims. As in
 * exec/kernels/tensor.c, less the generators (basic.c here). */

#include <string.h>

#include "functional/infer/infer_internal.h"

/* Product of the known dims of s[from, to), with its symbols appended to
 * syms (counted in *nsyms); *exact becomes 0 when a dim is unknown or the
 * product overflows. */
static int64_t factorize(const shp *s, int from, int to, gwr_dim *syms, int *nsyms, int *exact) {
    int64_t p = 1;
    for (int i = from; i < to; i++) {
        gwr_dim d = s->d[i];
        if (GWR_DIM_IS_KNOWN(d)) {
            if (d != 0 && p > INT64_MAX / d)
                *exact = 0;
            else
                p *= d;
        } else if (GWR_DIM_IS_SYM(d)) {
            syms[(*nsyms)++] = d;
        } else {
            *exact = 0;
        }
    }
    return p;
}

static gwr_status infer_reshape(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "data"), *st = gwr_fi_need(c, 1, "shape");
    shp xs, out;
    ival sv;
    int64_t allowzero, pin, pout;
    int infer_at = -1, has_zero = 0, nsi = 0, nso = 0, exi = 1, exo = 1;
    gwr_dim si[GWR_MAX_RANK], so[GWR_MAX_RANK];
    sbuf p, q;
    if (!x || !st || !gwr_fi_want_dtype(c, st, GWR_INT64, "shape")) return c->st;
    allowzero = gwr_fi_aint(c, "allowzero", 0);
    if (c->st) return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_iv_in(c, 1, &sv);
    if (sv.rank == 0) return gwr_fi_fail(c, GWR_ERR_SHAPE, "shape must be 1-D, got %s", gwr_fi_tstr(st, &p));
    if (gwr_fi_too_long(c, 1, "shape")) return c->st;
    if (sv.n < 0) return gwr_fi_put(c, 0, dt_of(x), NULL);
    out.rank = sv.n;
    for (int i = 0; i < sv.n; i++) {
        int64_t v = sv.v[i];
        out.d[i] = GWR_DIM_UNKNOWN;
        if (sv.k[i] == IV_SYM) {
            out.d[i] = v;
        } else if (sv.k[i] != IV_VAL) {
            continue;
        } else if (v == -1) {
            if (infer_at >= 0) return gwr_fi_fail(c, GWR_ERR_SHAPE, "shape has more than one -1");
            infer_at = i;
        } else if (v == 0 && !allowzero) {
            if (xs.rank >= 0 && i >= xs.rank)
                return gwr_fi_fail(c, GWR_ERR_SHAPE, "shape[%d] = 0 copies a dim that %s lacks", i, gwr_fi_tstr(x, &p));
            if (xs.rank >= 0) out.d[i] = xs.d[i];
        } else if (v < 0) {
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "shape[%d] = %lld is invalid", i, (long long)v);
        } else {
            out.d[i] = v;
            has_zero |= v == 0;
        }
    }
    if (allowzero && has_zero && infer_at >= 0)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "shape has both 0 and -1 with allowzero");
    if (xs.rank < 0) return gwr_fi_put(c, 0, dt_of(x), &out);

    /* Compare element counts: known factors multiply, symbols cancel. */
    pin = factorize(&xs, 0, xs.rank, si, &nsi, &exi);
    {
        shp rest = out;
        if (infer_at >= 0) rest.d[infer_at] = 1;
        pout = factorize(&rest, 0, rest.rank, so, &nso, &exo);
    }
    for (int j = 0; j < nso; j++)
        for (int i = 0; i < nsi; i++)
            if (si[i] == so[j]) {
                si[i] = si[--nsi];
                so[j--] = so[--nso];
                break;
            }
    if (!exi || !exo) return gwr_fi_put(c, 0, dt_of(x), &out);
    if (infer_at >= 0) {
        if (nsi == 0 && nso == 0 && pout != 0) {
            if (pin % pout != 0)
                return gwr_fi_fail(c, GWR_ERR_SHAPE, "cannot reshape %s to %s", gwr_fi_tstr(x, &p),
                                   gwr_fi_shp_str(c, &out, &q));
            out.d[infer_at] = pin / pout;
        } else if (nsi == 1 && nso == 0 && pin == pout && pin != 0) {
            out.d[infer_at] = si[0];
        }
    } else if (nsi == 0 && nso == 0 && pin != pout) {
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "cannot reshape %s to %s: %lld vs %lld elements", gwr_fi_tstr(x, &p),
                           gwr_fi_shp_str(c, &out, &q), (long long)pin, (long long)pout);
    }
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

static gwr_status infer_flatten(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input");
    shp xs, out;
    int64_t axis;
    if (!x) return c->st;
    axis = gwr_fi_aint(c, "axis", 1);
    if (c->st) return c->st;
    gwr_fi_shp_get(x, &xs);
    out.rank = 2;
    if (xs.rank < 0) {
        gwr_fi_shp_unknown_dims(&out, 2);
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    if (axis < -xs.rank || axis > xs.rank) /* [-r, r]; negative counts from r */
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "axis %lld is out of range for rank %d", (long long)axis, xs.rank);
    if (axis < 0) axis += xs.rank;
    out.d[0] = out.d[1] = 1;
    for (int i = 0; i < xs.rank; i++) out.d[i < axis ? 0 : 1] = gwr_fi_dmul(out.d[i < axis ? 0 : 1], xs.d[i]);
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

static gwr_status infer_transpose(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "data");
    const int64_t *perm;
    int64_t n;
    unsigned char seen[GWR_MAX_RANK] = {0};
    shp xs, out;
    sbuf p;
    if (!x) return c->st;
    gwr_fi_shp_get(x, &xs);
    if (!gwr_fi_aints(c, "perm", &perm, &n)) {
        if (c->st || xs.rank < 0) return c->st ? c->st : gwr_fi_put(c, 0, dt_of(x), NULL);
        out.rank = xs.rank;
        for (int i = 0; i < xs.rank; i++) out.d[i] = xs.d[xs.rank - 1 - i];
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    if (n > GWR_MAX_RANK || (xs.rank >= 0 && n != xs.rank))
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "perm has %lld values for %s", (long long)n, gwr_fi_tstr(x, &p));
    out.rank = (int)n;
    for (int i = 0; i < n; i++) {
        if (perm[i] < 0 || perm[i] >= n || seen[perm[i]])
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "perm is not a permutation of 0..%lld", (long long)n - 1);
        seen[perm[i]] = 1;
        out.d[i] = xs.rank >= 0 ? xs.d[perm[i]] : GWR_DIM_UNKNOWN;
    }
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

static gwr_status infer_concat(ictx *c) {
    shp out, s;
    int64_t axis;
    int any_unknown_rank = 0;
    const gwr_tensor *typed = NULL;
    sbuf p, q;
    if (c->nin < 1) return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "needs at least one input");
    if (!gwr_layer_has_attr(c->l, "axis")) return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "missing attribute axis");
    axis = gwr_fi_aint(c, "axis", 0);
    if (c->st) return c->st;
    out.rank = -1;
    for (int i = 0; i < c->nin; i++) {
        gwr_tensor *t = gwr_fi_need(c, i, "input");
        if (!t) return c->st;
        if (typed && !gwr_fi_same_dtype(c, typed, t)) return c->st;
        if (!typed && dt_of(t) != GWR_UNDEFINED) typed = t;
        gwr_fi_shp_get(t, &s);
        if (s.rank < 0) {
            any_unknown_rank = 1;
            continue;
        }
        if (s.rank == 0) return gwr_fi_fail(c, GWR_ERR_SHAPE, "cannot concatenate a scalar %s", gwr_fi_tstr(t, &p));
        if (out.rank < 0) {
            if (!gwr_fi_norm_axis(c, axis, s.rank, 0, &axis)) return c->st;
            out = s;
            continue;
        }
        if (s.rank != out.rank)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "ranks differ: %s vs %s", gwr_fi_shp_str(c, &out, &p),
                               gwr_fi_tstr(t, &q));
        for (int j = 0; j < s.rank; j++) {
            if (j == axis)
                out.d[j] = gwr_fi_dadd(out.d[j], s.d[j]);
            else if (!gwr_fi_dmerge(out.d[j], s.d[j], &out.d[j]))
                return gwr_fi_fail(c, GWR_ERR_SHAPE, "dim %d differs: %s vs %s", j, gwr_fi_shp_str(c, &out, &p),
                                   gwr_fi_tstr(t, &q));
        }
    }
    if (out.rank >= 0 && any_unknown_rank) out.d[axis] = GWR_DIM_UNKNOWN;
    return gwr_fi_put(c, 0, dt_of(typed), &out);
}

static gwr_status infer_split(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input");
    shp xs, o;
    ival sv;
    int64_t axis, num_outputs, sum = 0;
    int have, exact;
    sbuf p;
    if (!x) return c->st;
    if (c->nout < 1) return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "needs at least one output");
    axis = gwr_fi_aint(c, "axis", 0);
    num_outputs = gwr_fi_aint(c, "num_outputs", 0);
    have = gwr_fi_iv_param(c, 1, "split", &sv);
    if (c->st) return c->st;
    if (gwr_layer_has_attr(c->l, "num_outputs") && num_outputs != c->nout)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "num_outputs is %lld but the layer has %d outputs", (long long)num_outputs,
                           c->nout);
    gwr_fi_shp_get(x, &xs);
    if (xs.rank < 0) return gwr_fi_put_all_unknown(c, dt_of(x));
    if (!gwr_fi_norm_axis(c, axis, xs.rank, 0, &axis)) return c->st;
    if (have && sv.n >= 0 && sv.n != c->nout)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "split has %d sizes for %d outputs", sv.n, c->nout);
    exact = have && gwr_fi_iv_exact(&sv);
    for (int i = 0; exact && i < sv.n; i++) {
        if (sv.v[i] < 0) return gwr_fi_fail(c, GWR_ERR_SHAPE, "split[%d] = %lld is negative", i, (long long)sv.v[i]);
        sum = sum > INT64_MAX - sv.v[i] ? INT64_MAX : sum + sv.v[i];
    }
    if (exact && GWR_DIM_IS_KNOWN(xs.d[axis]) && sum != xs.d[axis])
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "split sizes add up to %lld, but axis %lld of %s is %lld", (long long)sum,
                           (long long)axis, gwr_fi_tstr(x, &p), (long long)xs.d[axis]);
    if (!have && GWR_DIM_IS_KNOWN(xs.d[axis]) && !num_outputs && xs.d[axis] % c->nout != 0)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "axis %lld of %s does not split into %d equal parts", (long long)axis,
                           gwr_fi_tstr(x, &p), c->nout);
    for (int i = 0; i < c->nout; i++) {
        gwr_dim d = xs.d[axis];
        o = xs;
        if (have) {
            o.d[axis] = sv.n > i && sv.k[i] == IV_VAL ? sv.v[i] : GWR_DIM_UNKNOWN;
        } else if (c->nout == 1) {
            o.d[axis] = d;
        } else if (!GWR_DIM_IS_KNOWN(d)) {
            o.d[axis] = GWR_DIM_UNKNOWN;
        } else {
            /* Equal parts; with num_outputs (opset 18) the last may be smaller. */
            int64_t chunk = d / c->nout + (d % c->nout != 0);
            int64_t rem = d - chunk * (c->nout - 1);
            if (i == c->nout - 1 && rem < 0)
                return gwr_fi_fail(c, GWR_ERR_SHAPE, "axis %lld of %s is too short for %d outputs", (long long)axis,
                                   gwr_fi_tstr(x, &p), c->nout);
            o.d[axis] = i == c->nout - 1 ? rem : chunk;
        }
        if (gwr_fi_put(c, i, dt_of(x), &o) != GWR_OK) return c->st;
    }
    return GWR_OK;
}

/* Extent of a sliced axis whose extent d is not known: only a full-range
 * slice keeps it. */
static gwr_dim slice_unknown(gwr_dim d, int64_t start, int64_t end, int64_t step) {
    const int64_t big = INT64_C(1) << 62;
    if (step == 1 && (start == 0 || start <= -big) && end >= big) return d;
    if (step == -1 && (start == -1 || start >= big) && end <= -big) return d;
    if (step > 0 && start >= 0 && end >= 0 && end <= start) return 0;
    return GWR_DIM_UNKNOWN;
}

static gwr_status infer_slice(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "data");
    ival st, en, ax, sp;
    shp xs, out;
    int64_t axes[IV_MAX], first;
    int n, have_axes, have_steps, attr_form = c->nin == 1;
    sbuf p;
    if (!x) return c->st;
    if (attr_form) { /* opset 1: starts, ends, axes are attributes */
        if (!gwr_fi_iv_param(c, 1, "starts", &st) || !gwr_fi_iv_param(c, 2, "ends", &en))
            return c->st ? c->st : gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "missing starts or ends");
    } else {
        if (!gwr_fi_need(c, 1, "starts") || !gwr_fi_need(c, 2, "ends") ||
            !gwr_fi_want_index_dtype(c, inp(c, 1), "starts") || !gwr_fi_want_index_dtype(c, inp(c, 2), "ends"))
            return c->st;
        gwr_fi_iv_in(c, 1, &st);
        gwr_fi_iv_in(c, 2, &en);
    }
    have_axes = gwr_fi_iv_param(c, 3, attr_form ? "axes" : NULL, &ax);
    have_steps = gwr_fi_iv_param(c, 4, NULL, &sp);
    if (c->st) return c->st;
    gwr_fi_shp_get(x, &xs);
    if (xs.rank < 0) return gwr_fi_put(c, 0, dt_of(x), NULL);
    n = st.n;
    if ((n >= 0 && en.n >= 0 && en.n != n) || (have_axes && n >= 0 && ax.n >= 0 && ax.n != n) ||
        (have_steps && n >= 0 && sp.n >= 0 && sp.n != n))
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "starts, ends, axes and steps differ in length");
    if (n < 0 || en.n != n || (have_axes && !gwr_fi_iv_exact(&ax)) || (have_steps && sp.n != n)) {
        gwr_fi_shp_unknown_dims(&out, xs.rank); /* which axes change is unknown */
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    if (have_axes) {
        if (!gwr_fi_norm_axes(c, &ax, xs.rank, axes)) return c->st;
    } else {
        if (n > xs.rank) return gwr_fi_fail(c, GWR_ERR_SHAPE, "%d starts for %s", n, gwr_fi_tstr(x, &p));
        for (int i = 0; i < n; i++) axes[i] = i;
    }
    out = xs;
    for (int i = 0; i < n; i++) {
        int a = (int)axes[i];
        int64_t step = 1;
        if (have_steps && sp.k[i] != IV_VAL) {
            out.d[a] = GWR_DIM_UNKNOWN;
            continue;
        }
        if (have_steps) step = sp.v[i];
        if (step == 0) return gwr_fi_fail(c, GWR_ERR_SHAPE, "steps[%d] is 0", i);
        if (st.k[i] != IV_VAL || en.k[i] != IV_VAL)
            out.d[a] = GWR_DIM_UNKNOWN;
        else if (GWR_DIM_IS_KNOWN(xs.d[a]))
            out.d[a] = gwr_fi_slice_len(xs.d[a], st.v[i], en.v[i], step, &first);
        else
            out.d[a] = slice_unknown(xs.d[a], st.v[i], en.v[i], step);
    }
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

static gwr_status infer_squeeze(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "data");
    shp xs, out;
    ival av;
    int64_t axes[IV_MAX];
    unsigned char drop[GWR_MAX_RANK] = {0};
    int have;
    sbuf p;
    if (!x) return c->st;
    have = gwr_fi_iv_param(c, 1, "axes", &av);
    if (c->st) return c->st;
    gwr_fi_shp_get(x, &xs);
    if (xs.rank < 0) return gwr_fi_put(c, 0, dt_of(x), NULL);
    if (!have) { /* every dim of extent 1, which must be known */
        out.rank = 0;
        for (int i = 0; i < xs.rank; i++) {
            if (!GWR_DIM_IS_KNOWN(xs.d[i])) return gwr_fi_put(c, 0, dt_of(x), NULL);
            if (xs.d[i] != 1) out.d[out.rank++] = xs.d[i];
        }
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    if (!gwr_fi_iv_exact(&av)) {
        if (av.n < 0 || av.n > xs.rank) return gwr_fi_put(c, 0, dt_of(x), NULL);
        gwr_fi_shp_unknown_dims(&out, xs.rank - av.n);
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    if (!gwr_fi_norm_axes(c, &av, xs.rank, axes)) return c->st;
    for (int i = 0; i < av.n; i++) {
        gwr_dim d = xs.d[axes[i]];
        if (GWR_DIM_IS_KNOWN(d) && d != 1)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "cannot squeeze axis %lld of %s: its extent is %lld",
                               (long long)axes[i], gwr_fi_tstr(x, &p), (long long)d);
        drop[axes[i]] = 1;
    }
    out.rank = 0;
    for (int i = 0; i < xs.rank; i++)
        if (!drop[i]) out.d[out.rank++] = xs.d[i];
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

static gwr_status infer_unsqueeze(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "data");
    shp xs, out;
    ival av;
    int64_t axes[IV_MAX];
    unsigned char ins[GWR_MAX_RANK] = {0};
    int have, r;
    if (!x) return c->st;
    have = gwr_fi_iv_param(c, 1, "axes", &av);
    if (c->st) return c->st;
    if (!have) return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "missing axes");
    gwr_fi_shp_get(x, &xs);
    if (gwr_fi_too_long(c, 1, "axes")) return c->st;
    if (xs.rank < 0 || av.n < 0) return gwr_fi_put(c, 0, dt_of(x), NULL);
    r = xs.rank + av.n;
    if (r > GWR_MAX_RANK) return gwr_fi_fail(c, GWR_ERR_SHAPE, "output rank %d exceeds %d", r, GWR_MAX_RANK);
    if (!gwr_fi_iv_exact(&av)) {
        gwr_fi_shp_unknown_dims(&out, r);
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    if (!gwr_fi_norm_axes(c, &av, r, axes)) return c->st;
    for (int i = 0; i < av.n; i++) ins[axes[i]] = 1;
    out.rank = r;
    for (int i = 0, j = 0; i < r; i++) out.d[i] = ins[i] ? 1 : xs.d[j++];
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

static gwr_status infer_depth_space(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input");
    shp xs, out;
    int64_t b;
    int to_space = c->id == GWR_OP_DepthToSpace;
    sbuf p;
    if (!x) return c->st;
    if (!gwr_layer_has_attr(c->l, "blocksize"))
        return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "missing attribute blocksize");
    b = gwr_fi_aint(c, "blocksize", 1);
    if (c->st) return c->st;
    if (b < 1 || b > (INT64_C(1) << 31))
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "blocksize %lld is invalid", (long long)b);
    gwr_fi_shp_get(x, &xs);
    if (!gwr_fi_want_rank(c, x, &xs, 4, 4, "input")) return c->st;
    if (xs.rank < 0) {
        gwr_fi_shp_unknown_dims(&out, 4);
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    out = xs;
    if (to_space) {
        if (GWR_DIM_IS_KNOWN(xs.d[1]) && xs.d[1] % (b * b) != 0)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "channels of %s do not divide by blocksize^2 = %lld",
                               gwr_fi_tstr(x, &p), (long long)(b * b));
        out.d[1] = GWR_DIM_IS_KNOWN(xs.d[1]) ? xs.d[1] / (b * b) : b == 1 ? xs.d[1] : GWR_DIM_UNKNOWN;
        out.d[2] = gwr_fi_dmul(xs.d[2], b);
        out.d[3] = gwr_fi_dmul(xs.d[3], b);
    } else {
        for (int i = 2; i < 4; i++) {
            if (GWR_DIM_IS_KNOWN(xs.d[i]) && xs.d[i] % b != 0)
                return gwr_fi_fail(c, GWR_ERR_SHAPE, "spatial dims of %s do not divide by blocksize %lld",
                                   gwr_fi_tstr(x, &p), (long long)b);
            out.d[i] = GWR_DIM_IS_KNOWN(xs.d[i]) ? xs.d[i] / b : b == 1 ? xs.d[i] : GWR_DIM_UNKNOWN;
        }
        out.d[1] = gwr_fi_dmul(xs.d[1], b * b);
    }
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

static gwr_status infer_expand(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input"), *st = gwr_fi_need(c, 1, "shape");
    shp xs, target, out;
    ival sv;
    sbuf p, q;
    if (!x || !st || !gwr_fi_want_dtype(c, st, GWR_INT64, "shape")) return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_iv_in(c, 1, &sv);
    if (sv.rank == 0) return gwr_fi_fail(c, GWR_ERR_SHAPE, "shape must be 1-D, got %s", gwr_fi_tstr(st, &p));
    if (gwr_fi_too_long(c, 1, "shape")) return c->st;
    if (sv.n < 0 || xs.rank < 0) return gwr_fi_put(c, 0, dt_of(x), NULL);
    target.rank = sv.n;
    for (int i = 0; i < sv.n; i++) {
        if (sv.k[i] == IV_VAL && sv.v[i] < 0)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "shape[%d] = %lld is negative", i, (long long)sv.v[i]);
        target.d[i] = sv.k[i] == IV_UNK ? GWR_DIM_UNKNOWN : sv.v[i];
    }
    if (!gwr_fi_bcast(&xs, &target, &out))
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "cannot expand %s to %s", gwr_fi_tstr(x, &p),
                           gwr_fi_shp_str(c, &target, &q));
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

static gwr_status infer_tile(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input"), *rt = gwr_fi_need(c, 1, "repeats");
    shp xs, out;
    ival rv;
    sbuf p;
    if (!x || !rt || !gwr_fi_want_dtype(c, rt, GWR_INT64, "repeats")) return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_iv_in(c, 1, &rv);
    if (xs.rank < 0) return gwr_fi_put(c, 0, dt_of(x), NULL);
    if (rv.rank == 0 || (rv.n >= 0 && rv.n != xs.rank))
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "repeats must have %d values for %s", xs.rank, gwr_fi_tstr(x, &p));
    out = xs;
    for (int i = 0; i < xs.rank; i++) {
        if (rv.n < 0 || rv.k[i] != IV_VAL) {
            out.d[i] = xs.d[i] == 0 ? 0 : GWR_DIM_UNKNOWN;
            continue;
        }
        if (rv.v[i] < 0) return gwr_fi_fail(c, GWR_ERR_SHAPE, "repeats[%d] = %lld is negative", i, (long long)rv.v[i]);
        out.d[i] = gwr_fi_dmul(xs.d[i], rv.v[i]);
    }
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

static gwr_status infer_pad(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "data");
    shp xs, out;
    ival pv, av;
    int64_t axes[IV_MAX];
    int n, have_axes;
    sbuf p;
    if (!x) return c->st;
    if (!gwr_fi_iv_param(c, 1, "pads", &pv)) return c->st ? c->st : gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "missing pads");
    if (inp(c, 1) && !gwr_fi_want_dtype(c, inp(c, 1), GWR_INT64, "pads")) return c->st;
    if (inp(c, 2) && !gwr_fi_same_dtype(c, x, inp(c, 2))) return c->st;
    have_axes = gwr_fi_iv_param(c, 3, NULL, &av);
    gwr_fi_shp_get(x, &xs);
    if (xs.rank < 0) return gwr_fi_put(c, 0, dt_of(x), NULL);
    if (have_axes && !gwr_fi_iv_exact(&av)) {
        gwr_fi_shp_unknown_dims(&out, xs.rank);
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    if (have_axes) {
        if (!gwr_fi_norm_axes(c, &av, xs.rank, axes)) return c->st;
        n = av.n;
    } else {
        n = xs.rank;
        for (int i = 0; i < n; i++) axes[i] = i;
    }
    if (pv.n >= 0 && pv.n != 2 * n)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "pads has %d values, expected %d for %s", pv.n, 2 * n, gwr_fi_tstr(x, &p));
    out = xs;
    for (int i = 0; i < n; i++) {
        int a = (int)axes[i];
        gwr_dim d = xs.d[a];
        if (pv.n < 0 || pv.k[i] != IV_VAL || pv.k[n + i] != IV_VAL) {
            out.d[a] = GWR_DIM_UNKNOWN;
            continue;
        }
        if (!GWR_DIM_IS_KNOWN(d)) {
            out.d[a] = pv.v[i] == 0 && pv.v[n + i] == 0 ? d : GWR_DIM_UNKNOWN;
            continue;
        }
        if (pv.v[i] < -(INT64_MAX / 4) || pv.v[i] > INT64_MAX / 4 || pv.v[n + i] < -(INT64_MAX / 4) ||
            pv.v[n + i] > INT64_MAX / 4 || d > INT64_MAX / 4) {
            out.d[a] = GWR_DIM_UNKNOWN;
            continue;
        }
        out.d[a] = d + pv.v[i] + pv.v[n + i];
        if (out.d[a] < 0)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "pads make axis %d of %s negative", a, gwr_fi_tstr(x, &p));
    }
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

static gwr_status infer_compress(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input"), *cond = gwr_fi_need(c, 1, "condition");
    shp xs, out;
    int64_t axis;
    if (!x || !cond || !gwr_fi_want_dtype(c, cond, GWR_BOOL, "condition")) return c->st;
    gwr_fi_shp_get(x, &xs);
    if (!gwr_layer_has_attr(c->l, "axis")) {
        gwr_fi_shp_unknown_dims(&out, 1);
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    axis = gwr_fi_aint(c, "axis", 0);
    if (c->st || xs.rank < 0) return c->st ? c->st : gwr_fi_put(c, 0, dt_of(x), NULL);
    if (!gwr_fi_norm_axis(c, axis, xs.rank, 0, &axis)) return c->st;
    out = xs;
    out.d[axis] = GWR_DIM_UNKNOWN;
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

static gwr_status infer_non_zero(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X");
    shp out = {2, {GWR_DIM_UNKNOWN, GWR_DIM_UNKNOWN}};
    if (!x) return c->st;
    if (gwr_tensor_rank(x) >= 0) out.d[0] = gwr_tensor_rank(x);
    return gwr_fi_put(c, 0, GWR_INT64, &out);
}

static gwr_status infer_one_hot(ictx *c) {
    gwr_tensor *idx = gwr_fi_need(c, 0, "indices"), *depth = gwr_fi_need(c, 1, "depth");
    gwr_tensor *vals = gwr_fi_need(c, 2, "values");
    shp is, out;
    int64_t axis;
    double dv;
    if (!idx || !depth || !vals) return c->st;
    axis = gwr_fi_aint(c, "axis", -1);
    if (c->st) return c->st;
    gwr_fi_shp_get(idx, &is);
    if (is.rank < 0) return gwr_fi_put(c, 0, dt_of(vals), NULL);
    if (is.rank + 1 > GWR_MAX_RANK) return gwr_fi_fail(c, GWR_ERR_SHAPE, "output rank exceeds %d", GWR_MAX_RANK);
    if (!gwr_fi_norm_axis(c, axis, is.rank, 1, &axis)) return c->st;
    out.rank = is.rank + 1;
    for (int i = 0, j = 0; i < out.rank; i++) out.d[i] = i == axis ? GWR_DIM_UNKNOWN : is.d[j++];
    if (gwr_fi_const_f64s(depth, &dv, 1) == 1) {
        if (!(dv >= 1) || dv > 9.0e18) return gwr_fi_fail(c, GWR_ERR_SHAPE, "depth %g is invalid", dv);
        out.d[axis] = (gwr_dim)dv;
    }
    return gwr_fi_put(c, 0, dt_of(vals), &out);
}

const gwr_fi_entry gwr_fi_rules_tensor[] = {
    {GWR_OP_Reshape, infer_reshape},
    {GWR_OP_Flatten, infer_flatten},
    {GWR_OP_Transpose, infer_transpose},
    {GWR_OP_Concat, infer_concat},
    {GWR_OP_Split, infer_split},
    {GWR_OP_Slice, infer_slice},
    {GWR_OP_Squeeze, infer_squeeze},
    {GWR_OP_Unsqueeze, infer_unsqueeze},
    {GWR_OP_DepthToSpace, infer_depth_space},
    {GWR_OP_SpaceToDepth, infer_depth_space},
    {GWR_OP_Expand, infer_expand},
    {GWR_OP_Tile, infer_tile},
    {GWR_OP_Pad, infer_pad},
    {GWR_OP_Compress, infer_compress},
    {GWR_OP_NonZero, infer_non_zero},
    {GWR_OP_OneHot, infer_one_hot},
    {GWR_OP_Trilu, gwr_fi_rule_same},
    {GWR_OP_ReverseSequence, gwr_fi_rule_same},
    {GWR_OP_CUSTOM, NULL},
};
