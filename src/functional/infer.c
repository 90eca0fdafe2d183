/* infer.c - dtype and shape inference for the ops of the table, following
 * ONNX semantics (the opset 13-17 forms, plus the older attribute forms
 * where they are cheap to read).
 *
 * The helpers the rules share (context, attributes, shapes, ivals, spatial
 * parameters) are in infer/common.c; here, one function per family of ops,
 * dispatched by a switch on the op id in gwr_fn_infer_op. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "functional/infer/infer_internal.h"

/* ======================================================================
 * Element-wise, unary, activations, select
 * ====================================================================== */

static int is_compare(gwr_op_id id) {
    return id == GWR_OP_Equal || id == GWR_OP_Greater || id == GWR_OP_GreaterOrEqual ||
           id == GWR_OP_Less || id == GWR_OP_LessOrEqual;
}

static int is_logic(gwr_op_id id) {
    return id == GWR_OP_And || id == GWR_OP_Or || id == GWR_OP_Xor;
}

/* Broadcasts inputs [first, first+n) into *acc; 0 and an error on a
 * mismatch. */
static int bcast_inputs(ictx *c, int first, int n, shp *acc) {
    shp s;
    sbuf x, y;
    for (int i = first; i < first + n; i++) {
        gwr_tensor *t = inp(c, i);
        if (i == first) {
            gwr_fi_shp_get(t, acc);
            continue;
        }
        gwr_fi_shp_get(t, &s);
        if (!gwr_fi_bcast(acc, &s, acc)) {
            if (i == first + 1)
                gwr_fi_fail(c, GWR_ERR_SHAPE, "cannot broadcast %s with %s", gwr_fi_tstr(inp(c, first), &x),
                            gwr_fi_tstr(t, &y));
            else
                gwr_fi_fail(c, GWR_ERR_SHAPE, "cannot broadcast %s with %s", gwr_fi_shp_str(c, acc, &x),
                            gwr_fi_tstr(t, &y));
            return 0;
        }
    }
    return 1;
}

static gwr_status infer_elementwise(ictx *c) {
    shp out;
    gwr_dtype dt = GWR_UNDEFINED;
    const gwr_tensor *typed = NULL; /* the first input of known dtype */
    if (c->nin < 1)
        return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "needs at least one input");
    for (int i = 0; i < c->nin; i++) {
        gwr_tensor *t = gwr_fi_need(c, i, "operand");
        if (!t)
            return c->st;
        if (is_logic(c->id) && !gwr_fi_want_dtype(c, t, GWR_BOOL, "operand"))
            return c->st;
        if (c->id == GWR_OP_BitShift && dt_of(t) != GWR_UNDEFINED &&
            !(gwr_dtype_is_int(dt_of(t)) && dt_of(t) != GWR_INT8 && dt_of(t) != GWR_INT16 &&
              dt_of(t) != GWR_INT32 && dt_of(t) != GWR_INT64)) {
            sbuf x;
            return gwr_fi_fail(c, GWR_ERR_TYPE, "operands must be unsigned integers, got %s",
                               gwr_fi_tstr(t, &x));
        }
        /* Pow's exponent may have another dtype than its base. */
        if (c->id == GWR_OP_Pow && i > 0)
            continue;
        if (typed && !gwr_fi_same_dtype(c, typed, t))
            return c->st;
        if (!typed && dt_of(t) != GWR_UNDEFINED) {
            typed = t;
            dt = dt_of(t);
        }
    }
    if (!bcast_inputs(c, 0, c->nin, &out))
        return c->st;
    if (c->id == GWR_OP_Pow)
        dt = dt_of(inp(c, 0));
    if (is_compare(c->id) || is_logic(c->id))
        dt = GWR_BOOL;
    return gwr_fi_put(c, 0, dt, &out);
}

static gwr_status infer_unary(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input");
    if (!x)
        return c->st;
    switch (c->id) {
    case GWR_OP_Not:
        if (!gwr_fi_want_dtype(c, x, GWR_BOOL, "input"))
            return c->st;
        return gwr_fi_same_as_input(c, GWR_BOOL);
    case GWR_OP_IsNaN:
    case GWR_OP_IsInf:
        return gwr_fi_same_as_input(c, GWR_BOOL);
    case GWR_OP_Gelu: {
        const char *a = gwr_fi_astr(c, "approximate", "none");
        if (c->st)
            return c->st;
        if (strcmp(a, "none") != 0 && strcmp(a, "tanh") != 0)
            return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "approximate must be \"none\" or \"tanh\", got \"%s\"", a);
        return gwr_fi_same_as_input(c, GWR_UNDEFINED);
    }
    default:
        return gwr_fi_same_as_input(c, GWR_UNDEFINED);
    }
}

static gwr_status infer_prelu(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X"), *slope = gwr_fi_need(c, 1, "slope");
    shp xs, ss;
    sbuf a, b;
    if (!x || !slope || !gwr_fi_same_dtype(c, x, slope))
        return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_shp_get(slope, &ss);
    if (!gwr_fi_ubcast_ok(&xs, &ss))
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "slope %s does not broadcast to X %s", gwr_fi_tstr(slope, &a),
                           gwr_fi_tstr(x, &b));
    return gwr_fi_put(c, 0, dt_of(x), &xs);
}

static gwr_status infer_clip(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input");
    if (!x)
        return c->st;
    for (int i = 1; i < 3; i++) {
        gwr_tensor *b = inp(c, i);
        shp s;
        sbuf t;
        if (!b)
            continue;
        if (!gwr_fi_same_dtype(c, x, b))
            return c->st;
        gwr_fi_shp_get(b, &s);
        if (s.rank >= 0 && gwr_fi_shp_all_known(&s) && gwr_shape_numel(s.rank, s.d) != 1)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "%s must be a scalar, got %s", i == 1 ? "min" : "max",
                               gwr_fi_tstr(b, &t));
    }
    return gwr_fi_same_as_input(c, GWR_UNDEFINED);
}

static gwr_status infer_where(ictx *c) {
    gwr_tensor *cond = gwr_fi_need(c, 0, "condition"), *x = gwr_fi_need(c, 1, "X"), *y = gwr_fi_need(c, 2, "Y");
    shp out;
    if (!cond || !x || !y)
        return c->st;
    if (!gwr_fi_want_dtype(c, cond, GWR_BOOL, "condition") || !gwr_fi_same_dtype(c, x, y))
        return c->st;
    if (!bcast_inputs(c, 0, 3, &out))
        return c->st;
    return gwr_fi_put(c, 0, dt_of(x) != GWR_UNDEFINED ? dt_of(x) : dt_of(y), &out);
}

/* ======================================================================
 * Matrix products
 * ====================================================================== */

/* NumPy matmul of shapes a and b (1-D operands promoted and dropped). */
static int matmul_shape(ictx *c, const gwr_tensor *ta, const gwr_tensor *tb, shp *out) {
    shp a, b, ba, bb, batch;
    gwr_dim k;
    sbuf x, y;
    gwr_fi_shp_get(ta, &a);
    gwr_fi_shp_get(tb, &b);
    if (a.rank == 0 || b.rank == 0) {
        gwr_fi_fail(c, GWR_ERR_SHAPE, "operands must have rank >= 1, got %s and %s", gwr_fi_tstr(ta, &x),
                    gwr_fi_tstr(tb, &y));
        return 0;
    }
    if (a.rank < 0 || b.rank < 0) {
        out->rank = -1;
        return 1;
    }
    if (!gwr_fi_dmerge(a.d[a.rank - 1], b.d[b.rank == 1 ? 0 : b.rank - 2], &k)) {
        gwr_fi_fail(c, GWR_ERR_SHAPE, "inner dimensions differ: %s x %s", gwr_fi_tstr(ta, &x), gwr_fi_tstr(tb, &y));
        return 0;
    }
    ba.rank = a.rank > 2 ? a.rank - 2 : 0;
    bb.rank = b.rank > 2 ? b.rank - 2 : 0;
    memcpy(ba.d, a.d, (size_t)ba.rank * sizeof a.d[0]);
    memcpy(bb.d, b.d, (size_t)bb.rank * sizeof b.d[0]);
    if (!gwr_fi_bcast(&ba, &bb, &batch)) {
        gwr_fi_fail(c, GWR_ERR_SHAPE, "cannot broadcast the batch dims of %s and %s", gwr_fi_tstr(ta, &x),
                    gwr_fi_tstr(tb, &y));
        return 0;
    }
    *out = batch;
    if (a.rank >= 2)
        out->d[out->rank++] = a.d[a.rank - 2];
    if (b.rank >= 2)
        out->d[out->rank++] = b.d[b.rank - 1];
    return 1;
}

static gwr_status infer_matmul(ictx *c) {
    int ia = 0, ib = 1;
    gwr_dtype dt;
    gwr_tensor *a, *b;
    shp out;
    if (c->id == GWR_OP_QLinearMatMul)
        ib = 3;
    a = gwr_fi_need(c, ia, "A");
    b = gwr_fi_need(c, ib, "B");
    if (!a || !b)
        return c->st;
    if (c->id == GWR_OP_MatMul && !gwr_fi_same_dtype(c, a, b))
        return c->st;
    if (!matmul_shape(c, a, b, &out))
        return c->st;
    dt = c->id == GWR_OP_MatMulInteger   ? GWR_INT32
       : c->id == GWR_OP_QLinearMatMul ? dt_of(inp(c, 7))
                                       : dt_of(a);
    return gwr_fi_put(c, 0, dt, &out);
}

static gwr_status infer_gemm(ictx *c) {
    gwr_tensor *a = gwr_fi_need(c, 0, "A"), *b = gwr_fi_need(c, 1, "B"), *cc = inp(c, 2);
    shp sa, sb, sc, out;
    gwr_dim k;
    sbuf x, y;
    int64_t ta, tb;
    if (!a || !b)
        return c->st;
    ta = gwr_fi_aint(c, "transA", 0);
    tb = gwr_fi_aint(c, "transB", 0);
    if (c->st || !gwr_fi_same_dtype(c, a, b) || !gwr_fi_same_dtype(c, a, cc))
        return c->st;
    gwr_fi_shp_get(a, &sa);
    gwr_fi_shp_get(b, &sb);
    if (!gwr_fi_want_rank(c, a, &sa, 2, 2, "A") || !gwr_fi_want_rank(c, b, &sb, 2, 2, "B"))
        return c->st;
    out.rank = 2;
    out.d[0] = sa.rank == 2 ? sa.d[ta ? 1 : 0] : GWR_DIM_UNKNOWN;
    out.d[1] = sb.rank == 2 ? sb.d[tb ? 0 : 1] : GWR_DIM_UNKNOWN;
    if (sa.rank == 2 && sb.rank == 2 && !gwr_fi_dmerge(sa.d[ta ? 0 : 1], sb.d[tb ? 1 : 0], &k))
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "inner dimensions differ: %s x %s (transA=%lld, transB=%lld)",
                           gwr_fi_tstr(a, &x), gwr_fi_tstr(b, &y), (long long)ta, (long long)tb);
    if (cc) {
        gwr_fi_shp_get(cc, &sc);
        if (!gwr_fi_ubcast_ok(&out, &sc))
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "C %s does not broadcast to %s", gwr_fi_tstr(cc, &x),
                               gwr_fi_shp_str(c, &out, &y));
    }
    return gwr_fi_put(c, 0, dt_of(a), &out);
}

static gwr_status infer_det(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X");
    shp s;
    gwr_dim m;
    sbuf b;
    if (!x)
        return c->st;
    gwr_fi_shp_get(x, &s);
    if (!gwr_fi_want_rank(c, x, &s, 2, GWR_MAX_RANK, "X"))
        return c->st;
    if (s.rank >= 2) {
        if (!gwr_fi_dmerge(s.d[s.rank - 1], s.d[s.rank - 2], &m))
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "needs square matrices, got %s", gwr_fi_tstr(x, &b));
        s.rank -= 2;
    }
    return gwr_fi_put(c, 0, dt_of(x), &s);
}

/* ======================================================================
 * Convolution and pooling
 * ====================================================================== */

/* Conv, ConvInteger, QLinearConv: x, w, bias at the given inputs. */
static gwr_status infer_conv(ictx *c, int xi, int wi, int bi, gwr_dtype dt) {
    gwr_tensor *x = gwr_fi_need(c, xi, "X"), *w = gwr_fi_need(c, wi, "W"), *b = bi >= 0 ? inp(c, bi) : NULL;
    shp xs, ws, out;
    spatial sp;
    int64_t group;
    sbuf p, q;
    if (!x || !w)
        return c->st;
    if (c->id == GWR_OP_Conv && (!gwr_fi_same_dtype(c, x, w) || !gwr_fi_same_dtype(c, x, b)))
        return c->st;
    if (dt == GWR_UNDEFINED)
        dt = dt_of(x);
    gwr_fi_shp_get(x, &xs);
    gwr_fi_shp_get(w, &ws);
    if (!gwr_fi_want_rank(c, x, &xs, 3, GWR_MAX_RANK, "X") || !gwr_fi_want_rank(c, w, &ws, 3, GWR_MAX_RANK, "W"))
        return c->st;
    if (xs.rank >= 0 && ws.rank >= 0 && xs.rank != ws.rank)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "X %s and W %s differ in rank", gwr_fi_tstr(x, &p), gwr_fi_tstr(w, &q));
    if (xs.rank < 0 && ws.rank < 0)
        return gwr_fi_put(c, 0, dt, NULL);
    sp.n = (xs.rank >= 0 ? xs.rank : ws.rank) - 2;
    group = gwr_fi_aint(c, "group", 1);
    if (c->st)
        return c->st;
    if (group < 1)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "group %lld is invalid", (long long)group);
    if (!gwr_fi_read_ints_n(c, "kernel_shape", sp.n, 1, GWR_DIM_UNKNOWN, sp.k) || !gwr_fi_read_spatial(c, &sp))
        return c->st;
    if (ws.rank >= 0) {
        for (int i = 0; i < sp.n; i++) {
            gwr_dim m;
            if (sp.k[i] == GWR_DIM_UNKNOWN)
                sp.k[i] = ws.d[2 + i];
            else if (!gwr_fi_dmerge(sp.k[i], ws.d[2 + i], &m))
                return gwr_fi_fail(c, GWR_ERR_SHAPE, "kernel_shape disagrees with W %s", gwr_fi_tstr(w, &p));
        }
        if (xs.rank >= 0 && GWR_DIM_IS_KNOWN(xs.d[1]) && GWR_DIM_IS_KNOWN(ws.d[1]) &&
            xs.d[1] != gwr_fi_dmul(ws.d[1], group))
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "X %s has %lld channels, W %s expects %lld x group %lld",
                               gwr_fi_tstr(x, &p), (long long)xs.d[1], gwr_fi_tstr(w, &q), (long long)ws.d[1],
                               (long long)group);
        if (GWR_DIM_IS_KNOWN(ws.d[0]) && ws.d[0] % group != 0)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "W %s: %lld output channels do not split into %lld groups",
                               gwr_fi_tstr(w, &p), (long long)ws.d[0], (long long)group);
        if (!gwr_fi_want_vec(c, b, ws.d[0], "B"))
            return c->st;
    }
    out.rank = sp.n + 2;
    out.d[0] = xs.rank >= 0 ? xs.d[0] : GWR_DIM_UNKNOWN;
    out.d[1] = ws.rank >= 0 ? ws.d[0] : GWR_DIM_UNKNOWN;
    for (int i = 0; i < sp.n; i++) {
        gwr_dim in = xs.rank >= 0 ? xs.d[2 + i] : GWR_DIM_UNKNOWN;
        out.d[2 + i] = GWR_DIM_IS_KNOWN(sp.k[i]) ? gwr_fi_conv_out(c, &sp, i, in, 0) : GWR_DIM_UNKNOWN;
        if (c->st)
            return c->st;
    }
    return gwr_fi_put(c, 0, dt, &out);
}

static gwr_status infer_conv_transpose(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X"), *w = gwr_fi_need(c, 1, "W"), *b = inp(c, 2);
    shp xs, ws, out;
    spatial sp;
    int64_t group, n;
    const int64_t *os;
    sbuf p, q;
    if (!x || !w || !gwr_fi_same_dtype(c, x, w) || !gwr_fi_same_dtype(c, x, b))
        return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_shp_get(w, &ws);
    if (!gwr_fi_want_rank(c, x, &xs, 3, GWR_MAX_RANK, "X") || !gwr_fi_want_rank(c, w, &ws, 3, GWR_MAX_RANK, "W"))
        return c->st;
    if (xs.rank >= 0 && ws.rank >= 0 && xs.rank != ws.rank)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "X %s and W %s differ in rank", gwr_fi_tstr(x, &p), gwr_fi_tstr(w, &q));
    if (xs.rank < 0 && ws.rank < 0)
        return gwr_fi_put(c, 0, dt_of(x), NULL);
    sp.n = (xs.rank >= 0 ? xs.rank : ws.rank) - 2;
    group = gwr_fi_aint(c, "group", 1);
    if (c->st)
        return c->st;
    if (group < 1)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "group %lld is invalid", (long long)group);
    if (!gwr_fi_read_ints_n(c, "kernel_shape", sp.n, 1, GWR_DIM_UNKNOWN, sp.k) || !gwr_fi_read_spatial(c, &sp))
        return c->st;
    out.rank = sp.n + 2;
    out.d[0] = xs.rank >= 0 ? xs.d[0] : GWR_DIM_UNKNOWN;
    out.d[1] = GWR_DIM_UNKNOWN;
    if (ws.rank >= 0) {
        gwr_dim m;
        for (int i = 0; i < sp.n; i++)
            if (sp.k[i] == GWR_DIM_UNKNOWN)
                sp.k[i] = ws.d[2 + i];
        if (xs.rank >= 0 && !gwr_fi_dmerge(xs.d[1], ws.d[0], &m))
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "X %s has %lld channels, W %s expects %lld", gwr_fi_tstr(x, &p),
                               (long long)xs.d[1], gwr_fi_tstr(w, &q), (long long)ws.d[0]);
        out.d[1] = gwr_fi_dmul(ws.d[1], group);
        if (!gwr_fi_want_vec(c, b, out.d[1], "B"))
            return c->st;
    }
    if (gwr_fi_aints(c, "output_shape", &os, &n)) {
        if (n != sp.n && n != sp.n + 2)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "output_shape has %lld values, expected %d",
                               (long long)n, sp.n);
        for (int i = 0; i < sp.n; i++) {
            if (os[n - sp.n + i] < 0)
                return gwr_fi_fail(c, GWR_ERR_SHAPE, "output_shape[%d] is negative", i);
            out.d[2 + i] = os[n - sp.n + i];
        }
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    if (c->st)
        return c->st;
    for (int i = 0; i < sp.n; i++) {
        gwr_dim in = xs.rank >= 0 ? xs.d[2 + i] : GWR_DIM_UNKNOWN;
        int64_t k = sp.k[i], s = sp.s[i], ek, o;
        if (!GWR_DIM_IS_KNOWN(k)) {
            out.d[2 + i] = GWR_DIM_UNKNOWN;
            continue;
        }
        if (k < 1 || sp.d[i] > (INT64_MAX / 4) / k || s > (INT64_MAX / 4))
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "kernel extent %lld is invalid", (long long)k);
        ek = (k - 1) * sp.d[i] + 1;
        if (!GWR_DIM_IS_KNOWN(in)) {
            int keep = s == 1 && (sp.mode == PAD_SAME_UPPER || sp.mode == PAD_SAME_LOWER ||
                                  (ek == 1 && sp.op[i] == 0 && sp.pads[i] == 0 &&
                                   sp.pads[sp.n + i] == 0));
            out.d[2 + i] = keep ? in : GWR_DIM_UNKNOWN;
            continue;
        }
        if (in > (INT64_MAX / 4) / s) {
            out.d[2 + i] = GWR_DIM_UNKNOWN;
            continue;
        }
        if (sp.mode == PAD_SAME_UPPER || sp.mode == PAD_SAME_LOWER)
            o = in * s;
        else
            o = s * (in - 1) + sp.op[i] + ek - sp.pads[i] - sp.pads[sp.n + i];
        if (o < 0)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "spatial dim %d: output extent %lld is negative", i,
                               (long long)o);
        out.d[2 + i] = o;
    }
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

static gwr_status infer_pool(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X");
    const int64_t *k;
    int64_t nk;
    shp xs, out;
    spatial sp;
    sbuf p;
    if (!x)
        return c->st;
    gwr_fi_shp_get(x, &xs);
    if (!gwr_fi_aints(c, "kernel_shape", &k, &nk))
        return c->st ? c->st : gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "missing attribute kernel_shape");
    if (nk < 1 || nk > GWR_MAX_RANK - 2)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "kernel_shape has %lld values", (long long)nk);
    if (xs.rank >= 0 && xs.rank != nk + 2)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "X %s does not fit a %lld-D kernel_shape", gwr_fi_tstr(x, &p),
                           (long long)nk);
    sp.n = (int)nk;
    for (int i = 0; i < sp.n; i++) {
        if (k[i] < 1)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "kernel_shape[%d] = %lld is invalid", i, (long long)k[i]);
        sp.k[i] = k[i];
    }
    if (!gwr_fi_read_spatial(c, &sp))
        return c->st;
    out.rank = sp.n + 2;
    out.d[0] = xs.rank >= 0 ? xs.d[0] : GWR_DIM_UNKNOWN;
    out.d[1] = xs.rank >= 0 ? xs.d[1] : GWR_DIM_UNKNOWN;
    for (int i = 0; i < sp.n; i++) {
        out.d[2 + i] = gwr_fi_conv_out(c, &sp, i, xs.rank >= 0 ? xs.d[2 + i] : GWR_DIM_UNKNOWN, 1);
        if (c->st)
            return c->st;
    }
    if (gwr_fi_put(c, 0, dt_of(x), &out) != GWR_OK)
        return c->st;
    return gwr_fi_put(c, 1, GWR_INT64, &out); /* MaxPool's Indices, when asked for */
}

static gwr_status infer_global_pool(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X");
    shp s;
    if (!x)
        return c->st;
    gwr_fi_shp_get(x, &s);
    if (!gwr_fi_want_rank(c, x, &s, 2, GWR_MAX_RANK, "X"))
        return c->st;
    for (int i = 2; i < s.rank; i++)
        s.d[i] = 1;
    return gwr_fi_put(c, 0, dt_of(x), &s);
}

static gwr_status infer_max_unpool(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X");
    const int64_t *k;
    int64_t nk;
    shp xs, out;
    spatial sp;
    ival os;
    if (!x)
        return c->st;
    gwr_fi_shp_get(x, &xs);
    if (inp(c, 2)) {
        gwr_fi_iv_in(c, 2, &os);
        if (os.n < 0)
            return gwr_fi_put(c, 0, dt_of(x), NULL);
        gwr_fi_shp_unknown_dims(&out, os.n);
        for (int i = 0; i < os.n && i < GWR_MAX_RANK; i++)
            if (os.k[i] == IV_VAL && os.v[i] >= 0)
                out.d[i] = os.v[i];
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    if (!gwr_fi_aints(c, "kernel_shape", &k, &nk) || xs.rank < 0 || xs.rank != nk + 2) {
        if (c->st)
            return c->st;
        gwr_fi_shp_unknown_dims(&out, xs.rank);
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    sp.n = (int)nk;
    for (int i = 0; i < sp.n; i++)
        sp.k[i] = k[i];
    if (!gwr_fi_read_spatial(c, &sp))
        return c->st;
    out = xs;
    for (int i = 0; i < sp.n; i++) {
        gwr_dim in = xs.d[2 + i];
        out.d[2 + i] = GWR_DIM_UNKNOWN;
        if (GWR_DIM_IS_KNOWN(in) && in < INT64_MAX / 4 / sp.s[i] && k[i] < INT64_MAX / 4) {
            int64_t o = (in - 1) * sp.s[i] + k[i] - sp.pads[i] - sp.pads[sp.n + i];
            out.d[2 + i] = o >= 0 ? o : GWR_DIM_UNKNOWN;
        }
    }
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

/* ======================================================================
 * Normalization, softmax, reductions
 * ====================================================================== */

/* The channel count of X (N, C, ...): dim 1, or 1 for a 1-D X. */
static gwr_dim channels(const shp *xs) {
    if (xs->rank < 0)
        return GWR_DIM_UNKNOWN;
    return xs->rank >= 2 ? xs->d[1] : 1;
}

static gwr_status infer_batch_norm(ictx *c) {
    static const char *const names[] = {"X", "scale", "B", "input_mean", "input_var"};
    gwr_tensor *t[5];
    shp xs, cs;
    gwr_dim ch;
    for (int i = 0; i < 5; i++)
        if (!(t[i] = gwr_fi_need(c, i, names[i])))
            return c->st;
    if (!gwr_fi_same_dtype(c, t[1], t[2]) || !gwr_fi_same_dtype(c, t[3], t[4]))
        return c->st;
    gwr_fi_shp_get(t[0], &xs);
    ch = channels(&xs);
    for (int i = 1; i < 5; i++)
        if (!gwr_fi_want_vec(c, t[i], ch, names[i]))
            return c->st;
    cs.rank = 1;
    cs.d[0] = ch;
    if (gwr_fi_put(c, 0, dt_of(t[0]), &xs) != GWR_OK || gwr_fi_put(c, 1, dt_of(t[3]), &cs) != GWR_OK)
        return c->st;
    return gwr_fi_put(c, 2, dt_of(t[3]), &cs);
}

static gwr_status infer_instance_norm(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input"), *sc = gwr_fi_need(c, 1, "scale"), *b = gwr_fi_need(c, 2, "B");
    shp xs;
    if (!x || !sc || !b || !gwr_fi_same_dtype(c, x, sc) || !gwr_fi_same_dtype(c, x, b))
        return c->st;
    gwr_fi_shp_get(x, &xs);
    if (!gwr_fi_want_rank(c, x, &xs, 2, GWR_MAX_RANK, "input") || !gwr_fi_want_vec(c, sc, channels(&xs), "scale") ||
        !gwr_fi_want_vec(c, b, channels(&xs), "B"))
        return c->st;
    return gwr_fi_put(c, 0, dt_of(x), &xs);
}

static gwr_status infer_layer_norm(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X"), *sc = gwr_fi_need(c, 1, "Scale"), *b = inp(c, 2);
    shp xs, ms, ss, tail;
    int64_t axis, stash;
    sbuf p, q;
    if (!x || !sc || !gwr_fi_same_dtype(c, x, sc) || !gwr_fi_same_dtype(c, x, b))
        return c->st;
    axis = gwr_fi_aint(c, "axis", -1);
    stash = gwr_fi_aint(c, "stash_type", GWR_FLOAT32);
    gwr_fi_afloat(c, "epsilon", 1e-5f);
    if (c->st)
        return c->st;
    gwr_fi_shp_get(x, &xs);
    if (!gwr_dtype_is_valid((gwr_dtype)stash) || stash == GWR_UNDEFINED)
        return gwr_fi_fail(c, GWR_ERR_TYPE, "stash_type %lld is not a dtype", (long long)stash);
    if (xs.rank < 0) {
        if (gwr_fi_put(c, 0, dt_of(x), NULL) || gwr_fi_put(c, 1, (gwr_dtype)stash, NULL))
            return c->st;
        return gwr_fi_put(c, 2, (gwr_dtype)stash, NULL);
    }
    if (!gwr_fi_norm_axis(c, axis, xs.rank, 0, &axis))
        return c->st;
    tail.rank = xs.rank - (int)axis;
    memcpy(tail.d, xs.d + axis, (size_t)tail.rank * sizeof xs.d[0]);
    for (int i = 1; i < 3; i++) {
        gwr_tensor *t = inp(c, i);
        if (!t)
            continue;
        gwr_fi_shp_get(t, &ss);
        if (!gwr_fi_ubcast_ok(&tail, &ss))
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "%s %s does not broadcast to the normalized dims of %s",
                               i == 1 ? "Scale" : "B", gwr_fi_tstr(t, &p), gwr_fi_tstr(x, &q));
    }
    ms = xs;
    for (int i = (int)axis; i < ms.rank; i++)
        ms.d[i] = 1;
    if (gwr_fi_put(c, 0, dt_of(x), &xs) || gwr_fi_put(c, 1, (gwr_dtype)stash, &ms))
        return c->st;
    return gwr_fi_put(c, 2, (gwr_dtype)stash, &ms);
}

/* Softmax family, and ops that keep their input's shape and check an
 * axis: CumSum. */
static gwr_status infer_softmax(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input");
    shp xs;
    int64_t axis;
    if (!x)
        return c->st;
    axis = gwr_fi_aint(c, "axis", -1);
    if (c->st)
        return c->st;
    gwr_fi_shp_get(x, &xs);
    if (xs.rank >= 0 && !(xs.rank == 0 && (axis == 0 || axis == -1)) &&
        !gwr_fi_norm_axis(c, axis, xs.rank, 0, &axis))
        return c->st;
    return gwr_fi_put(c, 0, dt_of(x), &xs);
}

/* Reduces the flagged axes of xs. */
static void reduce_dims(const shp *xs, const unsigned char *red, int keep, shp *out) {
    out->rank = 0;
    for (int i = 0; i < xs->rank; i++) {
        if (!red[i])
            out->d[out->rank++] = xs->d[i];
        else if (keep)
            out->d[out->rank++] = 1;
    }
}

static gwr_status infer_reduce(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "data");
    shp xs, out;
    ival av;
    int64_t keep, noop, axes[IV_MAX];
    unsigned char red[GWR_MAX_RANK];
    int have;
    if (!x)
        return c->st;
    keep = gwr_fi_aint(c, "keepdims", 1);
    noop = gwr_fi_aint(c, "noop_with_empty_axes", 0);
    have = gwr_fi_iv_param(c, 1, "axes", &av);
    if (c->st)
        return c->st;
    gwr_fi_shp_get(x, &xs);
    if (have && av.rank > 1)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "axes must be 1-D");
    if (have && !gwr_fi_iv_exact(&av)) {
        /* Which axes go is unknown: with keepdims every dim is kept or 1. */
        if (!keep || xs.rank < 0)
            return gwr_fi_put(c, 0, dt_of(x), NULL);
        out = xs;
        for (int i = 0; i < out.rank; i++)
            if (out.d[i] != 1)
                out.d[i] = GWR_DIM_UNKNOWN;
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    if (!have || av.n == 0) {
        if (noop)
            return gwr_fi_put(c, 0, dt_of(x), &xs);
        if (xs.rank < 0 && keep)
            return gwr_fi_put(c, 0, dt_of(x), NULL);
        if (xs.rank < 0) { /* everything reduced away: a scalar */
            out.rank = 0;
            return gwr_fi_put(c, 0, dt_of(x), &out);
        }
        memset(red, 1, sizeof red);
    } else {
        if (xs.rank < 0)
            return gwr_fi_put(c, 0, dt_of(x), NULL);
        if (!gwr_fi_norm_axes(c, &av, xs.rank, axes))
            return c->st;
        memset(red, 0, sizeof red);
        for (int i = 0; i < av.n; i++)
            red[axes[i]] = 1;
    }
    reduce_dims(&xs, red, keep != 0, &out);
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

static gwr_status infer_argmax(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "data");
    shp xs, out;
    int64_t axis, keep;
    unsigned char red[GWR_MAX_RANK] = {0};
    if (!x)
        return c->st;
    axis = gwr_fi_aint(c, "axis", 0);
    keep = gwr_fi_aint(c, "keepdims", 1);
    if (c->st)
        return c->st;
    gwr_fi_shp_get(x, &xs);
    if (xs.rank < 0)
        return gwr_fi_put(c, 0, GWR_INT64, NULL);
    if (!gwr_fi_norm_axis(c, axis, xs.rank, 0, &axis))
        return c->st;
    red[axis] = 1;
    reduce_dims(&xs, red, keep != 0, &out);
    return gwr_fi_put(c, 0, GWR_INT64, &out);
}

/* NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss. */
static gwr_status infer_loss(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input"), *tg = gwr_fi_need(c, 1, "target");
    const char *red;
    shp xs, ts;
    if (!x || !tg || !gwr_fi_want_index_dtype(c, tg, "target"))
        return c->st;
    red = gwr_fi_astr(c, "reduction", "mean");
    if (c->st)
        return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_shp_get(tg, &ts);
    if (strcmp(red, "sum") != 0 && strcmp(red, "mean") != 0 && strcmp(red, "none") != 0)
        return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "unknown reduction \"%s\"", red);
    if (strcmp(red, "none") != 0)
        ts.rank = 0; /* reduced to a scalar */
    if (gwr_fi_put(c, 0, dt_of(x), &ts) != GWR_OK)
        return c->st;
    return gwr_fi_put(c, 1, dt_of(x), &xs); /* SoftmaxCrossEntropyLoss's log_prob */
}

/* ======================================================================
 * Shape manipulation
 * ====================================================================== */

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
    if (!x || !st || !gwr_fi_want_dtype(c, st, GWR_INT64, "shape"))
        return c->st;
    allowzero = gwr_fi_aint(c, "allowzero", 0);
    if (c->st)
        return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_iv_in(c, 1, &sv);
    if (sv.rank == 0)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "shape must be 1-D, got %s", gwr_fi_tstr(st, &p));
    if (gwr_fi_too_long(c, 1, "shape"))
        return c->st;
    if (sv.n < 0)
        return gwr_fi_put(c, 0, dt_of(x), NULL);
    out.rank = sv.n;
    for (int i = 0; i < sv.n; i++) {
        int64_t v = sv.v[i];
        out.d[i] = GWR_DIM_UNKNOWN;
        if (sv.k[i] == IV_SYM) {
            out.d[i] = v;
        } else if (sv.k[i] != IV_VAL) {
            continue;
        } else if (v == -1) {
            if (infer_at >= 0)
                return gwr_fi_fail(c, GWR_ERR_SHAPE, "shape has more than one -1");
            infer_at = i;
        } else if (v == 0 && !allowzero) {
            if (xs.rank >= 0 && i >= xs.rank)
                return gwr_fi_fail(c, GWR_ERR_SHAPE, "shape[%d] = 0 copies a dim that %s lacks", i,
                                   gwr_fi_tstr(x, &p));
            if (xs.rank >= 0)
                out.d[i] = xs.d[i];
        } else if (v < 0) {
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "shape[%d] = %lld is invalid", i, (long long)v);
        } else {
            out.d[i] = v;
            has_zero |= v == 0;
        }
    }
    if (allowzero && has_zero && infer_at >= 0)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "shape has both 0 and -1 with allowzero");
    if (xs.rank < 0)
        return gwr_fi_put(c, 0, dt_of(x), &out);

    /* Compare element counts: known factors multiply, symbols cancel. */
    pin = factorize(&xs, 0, xs.rank, si, &nsi, &exi);
    {
        shp rest = out;
        if (infer_at >= 0)
            rest.d[infer_at] = 1;
        pout = factorize(&rest, 0, rest.rank, so, &nso, &exo);
    }
    for (int j = 0; j < nso; j++)
        for (int i = 0; i < nsi; i++)
            if (si[i] == so[j]) {
                si[i] = si[--nsi];
                so[j--] = so[--nso];
                break;
            }
    if (!exi || !exo)
        return gwr_fi_put(c, 0, dt_of(x), &out);
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
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "cannot reshape %s to %s: %lld vs %lld elements",
                           gwr_fi_tstr(x, &p), gwr_fi_shp_str(c, &out, &q), (long long)pin, (long long)pout);
    }
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

static gwr_status infer_flatten(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input");
    shp xs, out;
    int64_t axis;
    if (!x)
        return c->st;
    axis = gwr_fi_aint(c, "axis", 1);
    if (c->st)
        return c->st;
    gwr_fi_shp_get(x, &xs);
    out.rank = 2;
    if (xs.rank < 0) {
        gwr_fi_shp_unknown_dims(&out, 2);
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    if (axis < -xs.rank || axis > xs.rank) /* [-r, r]; negative counts from r */
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "axis %lld is out of range for rank %d", (long long)axis,
                           xs.rank);
    if (axis < 0)
        axis += xs.rank;
    out.d[0] = out.d[1] = 1;
    for (int i = 0; i < xs.rank; i++)
        out.d[i < axis ? 0 : 1] = gwr_fi_dmul(out.d[i < axis ? 0 : 1], xs.d[i]);
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

static gwr_status infer_transpose(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "data");
    const int64_t *perm;
    int64_t n;
    unsigned char seen[GWR_MAX_RANK] = {0};
    shp xs, out;
    sbuf p;
    if (!x)
        return c->st;
    gwr_fi_shp_get(x, &xs);
    if (!gwr_fi_aints(c, "perm", &perm, &n)) {
        if (c->st || xs.rank < 0)
            return c->st ? c->st : gwr_fi_put(c, 0, dt_of(x), NULL);
        out.rank = xs.rank;
        for (int i = 0; i < xs.rank; i++)
            out.d[i] = xs.d[xs.rank - 1 - i];
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
    if (c->nin < 1)
        return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "needs at least one input");
    if (!gwr_layer_has_attr(c->l, "axis"))
        return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "missing attribute axis");
    axis = gwr_fi_aint(c, "axis", 0);
    if (c->st)
        return c->st;
    out.rank = -1;
    for (int i = 0; i < c->nin; i++) {
        gwr_tensor *t = gwr_fi_need(c, i, "input");
        if (!t)
            return c->st;
        if (typed && !gwr_fi_same_dtype(c, typed, t))
            return c->st;
        if (!typed && dt_of(t) != GWR_UNDEFINED)
            typed = t;
        gwr_fi_shp_get(t, &s);
        if (s.rank < 0) {
            any_unknown_rank = 1;
            continue;
        }
        if (s.rank == 0)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "cannot concatenate a scalar %s", gwr_fi_tstr(t, &p));
        if (out.rank < 0) {
            if (!gwr_fi_norm_axis(c, axis, s.rank, 0, &axis))
                return c->st;
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
    if (out.rank >= 0 && any_unknown_rank)
        out.d[axis] = GWR_DIM_UNKNOWN;
    return gwr_fi_put(c, 0, dt_of(typed), &out);
}

static gwr_status infer_split(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input");
    shp xs, o;
    ival sv;
    int64_t axis, num_outputs, sum = 0;
    int have, exact;
    sbuf p;
    if (!x)
        return c->st;
    if (c->nout < 1)
        return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "needs at least one output");
    axis = gwr_fi_aint(c, "axis", 0);
    num_outputs = gwr_fi_aint(c, "num_outputs", 0);
    have = gwr_fi_iv_param(c, 1, "split", &sv);
    if (c->st)
        return c->st;
    if (gwr_layer_has_attr(c->l, "num_outputs") && num_outputs != c->nout)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "num_outputs is %lld but the layer has %d outputs",
                           (long long)num_outputs, c->nout);
    gwr_fi_shp_get(x, &xs);
    if (xs.rank < 0)
        return gwr_fi_put_all_unknown(c, dt_of(x));
    if (!gwr_fi_norm_axis(c, axis, xs.rank, 0, &axis))
        return c->st;
    if (have && sv.n >= 0 && sv.n != c->nout)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "split has %d sizes for %d outputs", sv.n, c->nout);
    exact = have && gwr_fi_iv_exact(&sv);
    for (int i = 0; exact && i < sv.n; i++) {
        if (sv.v[i] < 0)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "split[%d] = %lld is negative", i, (long long)sv.v[i]);
        sum = sum > INT64_MAX - sv.v[i] ? INT64_MAX : sum + sv.v[i];
    }
    if (exact && GWR_DIM_IS_KNOWN(xs.d[axis]) && sum != xs.d[axis])
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "split sizes add up to %lld, but axis %lld of %s is %lld",
                           (long long)sum, (long long)axis, gwr_fi_tstr(x, &p), (long long)xs.d[axis]);
    if (!have && GWR_DIM_IS_KNOWN(xs.d[axis]) && !num_outputs && xs.d[axis] % c->nout != 0)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "axis %lld of %s does not split into %d equal parts",
                           (long long)axis, gwr_fi_tstr(x, &p), c->nout);
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
                return gwr_fi_fail(c, GWR_ERR_SHAPE, "axis %lld of %s is too short for %d outputs",
                                   (long long)axis, gwr_fi_tstr(x, &p), c->nout);
            o.d[axis] = i == c->nout - 1 ? rem : chunk;
        }
        if (gwr_fi_put(c, i, dt_of(x), &o) != GWR_OK)
            return c->st;
    }
    return GWR_OK;
}

/* Extent of a sliced axis whose extent d is not known: only a full-range
 * slice keeps it. */
static gwr_dim slice_unknown(gwr_dim d, int64_t start, int64_t end, int64_t step) {
    const int64_t big = INT64_C(1) << 62;
    if (step == 1 && (start == 0 || start <= -big) && end >= big)
        return d;
    if (step == -1 && (start == -1 || start >= big) && end <= -big)
        return d;
    if (step > 0 && start >= 0 && end >= 0 && end <= start)
        return 0;
    return GWR_DIM_UNKNOWN;
}

static gwr_status infer_slice(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "data");
    ival st, en, ax, sp;
    shp xs, out;
    int64_t axes[IV_MAX], first;
    int n, have_axes, have_steps, attr_form = c->nin == 1;
    sbuf p;
    if (!x)
        return c->st;
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
    if (c->st)
        return c->st;
    gwr_fi_shp_get(x, &xs);
    if (xs.rank < 0)
        return gwr_fi_put(c, 0, dt_of(x), NULL);
    n = st.n;
    if ((n >= 0 && en.n >= 0 && en.n != n) || (have_axes && n >= 0 && ax.n >= 0 && ax.n != n) ||
        (have_steps && n >= 0 && sp.n >= 0 && sp.n != n))
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "starts, ends, axes and steps differ in length");
    if (n < 0 || en.n != n || (have_axes && !gwr_fi_iv_exact(&ax)) || (have_steps && sp.n != n)) {
        gwr_fi_shp_unknown_dims(&out, xs.rank); /* which axes change is unknown */
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    if (have_axes) {
        if (!gwr_fi_norm_axes(c, &ax, xs.rank, axes))
            return c->st;
    } else {
        if (n > xs.rank)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "%d starts for %s", n, gwr_fi_tstr(x, &p));
        for (int i = 0; i < n; i++)
            axes[i] = i;
    }
    out = xs;
    for (int i = 0; i < n; i++) {
        int a = (int)axes[i];
        int64_t step = 1;
        if (have_steps && sp.k[i] != IV_VAL) {
            out.d[a] = GWR_DIM_UNKNOWN;
            continue;
        }
        if (have_steps)
            step = sp.v[i];
        if (step == 0)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "steps[%d] is 0", i);
        if (st.k[i] != IV_VAL || en.k[i] != IV_VAL)
            out.d[a] = GWR_DIM_UNKNOWN;
        else if (GWR_DIM_IS_KNOWN(xs.d[a]))
            out.d[a] = gwr_fi_slice_len(xs.d[a], st.v[i], en.v[i], step, &first);
        else
            out.d[a] = slice_unknown(xs.d[a], st.v[i], en.v[i], step);
    }
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

static gwr_status infer_gather(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "data"), *idx = gwr_fi_need(c, 1, "indices");
    shp xs, is, out;
    int64_t axis;
    sbuf p;
    if (!x || !idx || !gwr_fi_want_index_dtype(c, idx, "indices"))
        return c->st;
    axis = gwr_fi_aint(c, "axis", 0);
    if (c->st)
        return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_shp_get(idx, &is);
    if (xs.rank == 0)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "data must have rank >= 1, got %s", gwr_fi_tstr(x, &p));
    if (xs.rank >= 0 && !gwr_fi_norm_axis(c, axis, xs.rank, 0, &axis))
        return c->st;
    if (xs.rank < 0 || is.rank < 0)
        return gwr_fi_put(c, 0, dt_of(x), NULL);
    if (xs.rank - 1 + is.rank > GWR_MAX_RANK)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "output rank exceeds %d", GWR_MAX_RANK);
    out.rank = 0;
    for (int i = 0; i < axis; i++)
        out.d[out.rank++] = xs.d[i];
    for (int i = 0; i < is.rank; i++)
        out.d[out.rank++] = is.d[i];
    for (int i = (int)axis + 1; i < xs.rank; i++)
        out.d[out.rank++] = xs.d[i];
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

static gwr_status infer_gather_elements(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "data"), *idx = gwr_fi_need(c, 1, "indices");
    shp xs, is;
    int64_t axis;
    sbuf p, q;
    if (!x || !idx || !gwr_fi_want_index_dtype(c, idx, "indices"))
        return c->st;
    axis = gwr_fi_aint(c, "axis", 0);
    if (c->st)
        return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_shp_get(idx, &is);
    if (xs.rank >= 0 && is.rank >= 0 && xs.rank != is.rank)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "data %s and indices %s differ in rank", gwr_fi_tstr(x, &p),
                           gwr_fi_tstr(idx, &q));
    if (xs.rank >= 0 && !gwr_fi_norm_axis(c, axis, xs.rank, 0, &axis))
        return c->st;
    return gwr_fi_put(c, 0, dt_of(x), &is);
}

static gwr_status infer_gather_nd(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "data"), *idx = gwr_fi_need(c, 1, "indices");
    shp xs, is, out;
    int64_t b, last;
    sbuf p, q;
    if (!x || !idx || !gwr_fi_want_dtype(c, idx, GWR_INT64, "indices"))
        return c->st;
    b = gwr_fi_aint(c, "batch_dims", 0);
    if (c->st)
        return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_shp_get(idx, &is);
    if (xs.rank < 0 || is.rank < 0 || is.rank < 1 || !GWR_DIM_IS_KNOWN(is.d[is.rank - 1]))
        return gwr_fi_put(c, 0, dt_of(x), NULL);
    last = is.d[is.rank - 1];
    if (b < 0 || b >= is.rank || b >= xs.rank || last > xs.rank - b)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "indices %s do not fit data %s with batch_dims %lld",
                           gwr_fi_tstr(idx, &q), gwr_fi_tstr(x, &p), (long long)b);
    out.rank = 0;
    for (int i = 0; i < is.rank - 1; i++)
        out.d[out.rank++] = is.d[i];
    for (int i = (int)(b + last); i < xs.rank; i++)
        out.d[out.rank++] = xs.d[i];
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

static gwr_status infer_compress(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input"), *cond = gwr_fi_need(c, 1, "condition");
    shp xs, out;
    int64_t axis;
    if (!x || !cond || !gwr_fi_want_dtype(c, cond, GWR_BOOL, "condition"))
        return c->st;
    gwr_fi_shp_get(x, &xs);
    if (!gwr_layer_has_attr(c->l, "axis")) {
        gwr_fi_shp_unknown_dims(&out, 1);
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    axis = gwr_fi_aint(c, "axis", 0);
    if (c->st || xs.rank < 0)
        return c->st ? c->st : gwr_fi_put(c, 0, dt_of(x), NULL);
    if (!gwr_fi_norm_axis(c, axis, xs.rank, 0, &axis))
        return c->st;
    out = xs;
    out.d[axis] = GWR_DIM_UNKNOWN;
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

/* Scatter, ScatterElements, ScatterND: the data's type. */
static gwr_status infer_scatter(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "data"), *idx = gwr_fi_need(c, 1, "indices"), *upd = gwr_fi_need(c, 2, "updates");
    if (!x || !idx || !upd || !gwr_fi_same_dtype(c, x, upd) || !gwr_fi_want_index_dtype(c, idx, "indices"))
        return c->st;
    return gwr_fi_same_as_input(c, GWR_UNDEFINED);
}

static gwr_status infer_squeeze(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "data");
    shp xs, out;
    ival av;
    int64_t axes[IV_MAX];
    unsigned char drop[GWR_MAX_RANK] = {0};
    int have;
    sbuf p;
    if (!x)
        return c->st;
    have = gwr_fi_iv_param(c, 1, "axes", &av);
    if (c->st)
        return c->st;
    gwr_fi_shp_get(x, &xs);
    if (xs.rank < 0)
        return gwr_fi_put(c, 0, dt_of(x), NULL);
    if (!have) { /* every dim of extent 1, which must be known */
        out.rank = 0;
        for (int i = 0; i < xs.rank; i++) {
            if (!GWR_DIM_IS_KNOWN(xs.d[i]))
                return gwr_fi_put(c, 0, dt_of(x), NULL);
            if (xs.d[i] != 1)
                out.d[out.rank++] = xs.d[i];
        }
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    if (!gwr_fi_iv_exact(&av)) {
        if (av.n < 0 || av.n > xs.rank)
            return gwr_fi_put(c, 0, dt_of(x), NULL);
        gwr_fi_shp_unknown_dims(&out, xs.rank - av.n);
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    if (!gwr_fi_norm_axes(c, &av, xs.rank, axes))
        return c->st;
    for (int i = 0; i < av.n; i++) {
        gwr_dim d = xs.d[axes[i]];
        if (GWR_DIM_IS_KNOWN(d) && d != 1)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "cannot squeeze axis %lld of %s: its extent is %lld",
                               (long long)axes[i], gwr_fi_tstr(x, &p), (long long)d);
        drop[axes[i]] = 1;
    }
    out.rank = 0;
    for (int i = 0; i < xs.rank; i++)
        if (!drop[i])
            out.d[out.rank++] = xs.d[i];
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

static gwr_status infer_unsqueeze(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "data");
    shp xs, out;
    ival av;
    int64_t axes[IV_MAX];
    unsigned char ins[GWR_MAX_RANK] = {0};
    int have, r;
    if (!x)
        return c->st;
    have = gwr_fi_iv_param(c, 1, "axes", &av);
    if (c->st)
        return c->st;
    if (!have)
        return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "missing axes");
    gwr_fi_shp_get(x, &xs);
    if (gwr_fi_too_long(c, 1, "axes"))
        return c->st;
    if (xs.rank < 0 || av.n < 0)
        return gwr_fi_put(c, 0, dt_of(x), NULL);
    r = xs.rank + av.n;
    if (r > GWR_MAX_RANK)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "output rank %d exceeds %d", r, GWR_MAX_RANK);
    if (!gwr_fi_iv_exact(&av)) {
        gwr_fi_shp_unknown_dims(&out, r);
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    if (!gwr_fi_norm_axes(c, &av, r, axes))
        return c->st;
    for (int i = 0; i < av.n; i++)
        ins[axes[i]] = 1;
    out.rank = r;
    for (int i = 0, j = 0; i < r; i++)
        out.d[i] = ins[i] ? 1 : xs.d[j++];
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

static gwr_status infer_depth_space(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input");
    shp xs, out;
    int64_t b;
    int to_space = c->id == GWR_OP_DepthToSpace;
    sbuf p;
    if (!x)
        return c->st;
    if (!gwr_layer_has_attr(c->l, "blocksize"))
        return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "missing attribute blocksize");
    b = gwr_fi_aint(c, "blocksize", 1);
    if (c->st)
        return c->st;
    if (b < 1 || b > (INT64_C(1) << 31))
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "blocksize %lld is invalid", (long long)b);
    gwr_fi_shp_get(x, &xs);
    if (!gwr_fi_want_rank(c, x, &xs, 4, 4, "input"))
        return c->st;
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
    if (!x || !st || !gwr_fi_want_dtype(c, st, GWR_INT64, "shape"))
        return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_iv_in(c, 1, &sv);
    if (sv.rank == 0)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "shape must be 1-D, got %s", gwr_fi_tstr(st, &p));
    if (gwr_fi_too_long(c, 1, "shape"))
        return c->st;
    if (sv.n < 0 || xs.rank < 0)
        return gwr_fi_put(c, 0, dt_of(x), NULL);
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
    if (!x || !rt || !gwr_fi_want_dtype(c, rt, GWR_INT64, "repeats"))
        return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_iv_in(c, 1, &rv);
    if (xs.rank < 0)
        return gwr_fi_put(c, 0, dt_of(x), NULL);
    if (rv.rank == 0 || (rv.n >= 0 && rv.n != xs.rank))
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "repeats must have %d values for %s", xs.rank, gwr_fi_tstr(x, &p));
    out = xs;
    for (int i = 0; i < xs.rank; i++) {
        if (rv.n < 0 || rv.k[i] != IV_VAL) {
            out.d[i] = xs.d[i] == 0 ? 0 : GWR_DIM_UNKNOWN;
            continue;
        }
        if (rv.v[i] < 0)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "repeats[%d] = %lld is negative", i, (long long)rv.v[i]);
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
    if (!x)
        return c->st;
    if (!gwr_fi_iv_param(c, 1, "pads", &pv))
        return c->st ? c->st : gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "missing pads");
    if (inp(c, 1) && !gwr_fi_want_dtype(c, inp(c, 1), GWR_INT64, "pads"))
        return c->st;
    if (inp(c, 2) && !gwr_fi_same_dtype(c, x, inp(c, 2)))
        return c->st;
    have_axes = gwr_fi_iv_param(c, 3, NULL, &av);
    gwr_fi_shp_get(x, &xs);
    if (xs.rank < 0)
        return gwr_fi_put(c, 0, dt_of(x), NULL);
    if (have_axes && !gwr_fi_iv_exact(&av)) {
        gwr_fi_shp_unknown_dims(&out, xs.rank);
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    if (have_axes) {
        if (!gwr_fi_norm_axes(c, &av, xs.rank, axes))
            return c->st;
        n = av.n;
    } else {
        n = xs.rank;
        for (int i = 0; i < n; i++)
            axes[i] = i;
    }
    if (pv.n >= 0 && pv.n != 2 * n)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "pads has %d values, expected %d for %s", pv.n, 2 * n,
                           gwr_fi_tstr(x, &p));
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

/* ======================================================================
 * Types, shapes, constants, generators
 * ====================================================================== */

static int valid_dtype(int64_t d) {
    return d > GWR_UNDEFINED && d < GWR_DTYPE_COUNT && gwr_dtype_is_valid((gwr_dtype)d);
}

static gwr_status infer_cast(ictx *c) {
    int64_t to;
    if (!gwr_fi_need(c, 0, "input"))
        return c->st;
    if (!gwr_layer_has_attr(c->l, "to"))
        return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "missing attribute to");
    to = gwr_fi_aint(c, "to", 0);
    if (c->st)
        return c->st;
    if (!valid_dtype(to))
        return gwr_fi_fail(c, GWR_ERR_TYPE, "to = %lld is not a dtype", (long long)to);
    return gwr_fi_same_as_input(c, (gwr_dtype)to);
}

static gwr_status infer_cast_like(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input"), *like = gwr_fi_need(c, 1, "target_type");
    if (!x || !like)
        return c->st;
    return gwr_fi_same_as_input(c, dt_of(like));
}

static gwr_status infer_shape(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "data");
    shp xs, out;
    int64_t s, e;
    if (!x)
        return c->st;
    gwr_fi_aint(c, "start", 0);
    gwr_fi_aint(c, "end", 0);
    if (c->st)
        return c->st;
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
    if (!gwr_fi_need(c, 0, "data"))
        return c->st;
    return gwr_fi_put(c, 0, GWR_INT64, &out);
}

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
            if (w->dims[i] < 0)
                return gwr_fi_fail(c, GWR_ERR_SHAPE, "value has a negative dim");
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
    if (c->st)
        return c->st;
    if (gwr_layer_has_attr(c->l, "value_strings")) {
        if (gwr_layer_get_strings(c->l, "value_strings", &sv, &n) != GWR_OK)
            return gwr_fi_fail(c, GWR_ERR_TYPE, "attribute value_strings must be a list of strings");
        out.d[0] = n;
        return gwr_fi_put(c, 0, GWR_STRING, &out);
    }
    if (gwr_layer_has_attr(c->l, "sparse_value"))
        return gwr_fi_put(c, 0, GWR_UNDEFINED, NULL);
    return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "has no value attribute");
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
    if (!st || !gwr_fi_want_dtype(c, st, GWR_INT64, "input") || gwr_fi_too_long(c, 0, "input"))
        return c->st;
    if (gwr_layer_has_attr(c->l, "value")) {
        if (gwr_layer_get_tensor(c->l, "value", &w) != GWR_OK || !w)
            return gwr_fi_fail(c, GWR_ERR_TYPE, "attribute value must be a tensor");
        dt = w->dtype;
    }
    gwr_fi_iv_in(c, 0, &sv);
    if (sv.n < 0)
        return gwr_fi_put(c, 0, dt, NULL);
    if (!shape_from_iv(c, &sv, &out))
        return c->st;
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
        if (!(t[i] = gwr_fi_need(c, i, names[i])) || (i > 0 && !gwr_fi_same_dtype(c, t[0], t[i])))
            return c->st;
        gwr_fi_shp_get(t[i], &s);
        if (s.rank > 0 && !(s.rank == 1 && s.d[0] == 1))
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "%s must be a scalar, got %s", names[i], gwr_fi_tstr(t[i], &p));
        gwr_fi_iv_in(c, i, &v[i]);
        nconst += gwr_fi_const_f64s(t[i], &f[i], 1) == 1;
    }
    if (gwr_fi_iv_exact(&v[0]) && gwr_fi_iv_exact(&v[1]) && gwr_fi_iv_exact(&v[2]) && v[0].n == 1 && v[1].n == 1 &&
        v[2].n == 1) {
        int64_t st = v[0].v[0], lim = v[1].v[0], d = v[2].v[0], diff;
        if (d == 0)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "delta is 0");
        if (!__builtin_sub_overflow(lim, st, &diff)) {
            if (d > 0)
                out.d[0] = diff > 0 ? (diff - 1) / d + 1 : 0;
            else
                out.d[0] = diff < 0 ? (diff + 1) / d + 1 : 0;
        }
    } else if (v[0].n == 1 && v[1].n == 1 && v[2].n == 1 && v[0].k[0] == IV_VAL &&
               v[0].v[0] == 0 && v[2].k[0] == IV_VAL && v[2].v[0] == 1 && v[1].k[0] == IV_SYM) {
        out.d[0] = v[1].v[0]; /* Range(0, n, 1) of a symbolic n */
    } else if (nconst == 3) {
        double len;
        if (f[2] == 0)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "delta is 0");
        len = ceil((f[1] - f[0]) / f[2]);
        if (isfinite(len))
            out.d[0] = len <= 0 ? 0 : len < 9.0e18 ? (gwr_dim)len : GWR_DIM_UNKNOWN;
    }
    return gwr_fi_put(c, 0, dt_of(t[0]), &out);
}

static gwr_status infer_eye_like(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input");
    shp xs;
    int64_t dt;
    if (!x)
        return c->st;
    dt = gwr_fi_aint(c, "dtype", dt_of(x));
    if (c->st)
        return c->st;
    gwr_fi_shp_get(x, &xs);
    if (!gwr_fi_want_rank(c, x, &xs, 2, 2, "input"))
        return c->st;
    if (xs.rank < 0)
        gwr_fi_shp_unknown_dims(&xs, 2);
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
        if (n > GWR_MAX_RANK)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "shape has %lld values", (long long)n);
        out.rank = (int)n;
        for (int i = 0; i < n; i++) {
            if (v[i] < 0)
                return gwr_fi_fail(c, GWR_ERR_SHAPE, "shape[%d] is negative", i);
            out.d[i] = v[i];
        }
        break;
    case GWR_OP_Multinomial:
        dt = gwr_fi_aint(c, "dtype", GWR_INT32);
        if (!gwr_fi_need(c, 0, "input"))
            return c->st;
        gwr_fi_shp_get(x, &out);
        if (!gwr_fi_want_rank(c, x, &out, 2, 2, "input"))
            return c->st;
        if (out.rank < 0)
            gwr_fi_shp_unknown_dims(&out, 2);
        out.d[1] = gwr_fi_aint(c, "sample_size", 1);
        if (out.d[1] < 0)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "sample_size is negative");
        break;
    default: /* the *Like ops and Bernoulli */
        if (!gwr_fi_need(c, 0, "input"))
            return c->st;
        dt = gwr_fi_aint(c, "dtype", dt_of(x));
        gwr_fi_shp_get(x, &out);
        break;
    }
    if (c->st)
        return c->st;
    if (!valid_dtype(dt))
        return gwr_fi_fail(c, GWR_ERR_TYPE, "dtype %lld is invalid", (long long)dt);
    return gwr_fi_put(c, 0, (gwr_dtype)dt, &out);
}

/* Identity, Dropout (output, optional bool mask). */
static gwr_status infer_identity(ictx *c) {
    shp s;
    gwr_tensor *x = gwr_fi_need(c, 0, "input");
    if (!x)
        return c->st;
    gwr_fi_shp_get(x, &s);
    if (gwr_fi_put(c, 0, dt_of(x), &s) != GWR_OK)
        return c->st;
    return gwr_fi_put(c, 1, GWR_BOOL, &s);
}

static gwr_status infer_resize(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X");
    int scales_at = (c->id == GWR_OP_Upsample || c->nin == 2) ? 1 : 2;
    gwr_tensor *sizes = c->id == GWR_OP_Resize ? inp(c, 3) : NULL;
    shp xs, out;
    double sc[GWR_MAX_RANK];
    int ns;
    sbuf p;
    if (!x)
        return c->st;
    gwr_fi_shp_get(x, &xs);
    if (xs.rank < 0)
        return gwr_fi_put(c, 0, dt_of(x), NULL);
    gwr_fi_shp_unknown_dims(&out, xs.rank);
    if (gwr_layer_has_attr(c->l, "axes")) /* opset 18: a subset of axes */
        return gwr_fi_put(c, 0, dt_of(x), &out);
    if (sizes) {
        ival sv;
        gwr_fi_iv_in(c, 3, &sv);
        if (sv.n >= 0 && sv.n != xs.rank)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "sizes has %d values for %s", sv.n, gwr_fi_tstr(x, &p));
        for (int i = 0; i < sv.n; i++)
            if (sv.k[i] != IV_UNK)
                out.d[i] = sv.v[i];
        return gwr_fi_put(c, 0, dt_of(x), &out);
    }
    ns = gwr_fi_const_f64s(inp(c, scales_at), sc, GWR_MAX_RANK);
    if (ns > 0 && ns != xs.rank)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "scales has %d values for %s", ns, gwr_fi_tstr(x, &p));
    for (int i = 0; i < ns; i++) {
        double o = floor((double)xs.d[i] * sc[i]);
        if (sc[i] <= 0 || !isfinite(sc[i]))
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "scales[%d] = %g is invalid", i, sc[i]);
        if (sc[i] == 1.0)
            out.d[i] = xs.d[i];
        else if (GWR_DIM_IS_KNOWN(xs.d[i]) && o < 9.0e18)
            out.d[i] = (gwr_dim)o;
    }
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

static gwr_status infer_topk(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X"), *k = gwr_fi_need(c, 1, "K");
    shp xs;
    ival kv;
    int64_t axis;
    sbuf p;
    if (!x || !k || !gwr_fi_want_dtype(c, k, GWR_INT64, "K"))
        return c->st;
    axis = gwr_fi_aint(c, "axis", -1);
    if (c->st)
        return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_iv_in(c, 1, &kv);
    if (xs.rank >= 0) {
        if (!gwr_fi_norm_axis(c, axis, xs.rank, 0, &axis))
            return c->st;
        xs.d[axis] = GWR_DIM_UNKNOWN;
        if (kv.n == 1 && kv.k[0] == IV_VAL) {
            gwr_dim d = gwr_tensor_dim(x, (int)axis);
            if (kv.v[0] < 0 || (GWR_DIM_IS_KNOWN(d) && kv.v[0] > d))
                return gwr_fi_fail(c, GWR_ERR_SHAPE, "K = %lld does not fit axis %lld of %s",
                                   (long long)kv.v[0], (long long)axis, gwr_fi_tstr(x, &p));
            xs.d[axis] = kv.v[0];
        } else if (kv.n == 1 && kv.k[0] == IV_SYM) {
            xs.d[axis] = kv.v[0];
        }
    }
    if (gwr_fi_put(c, 0, dt_of(x), &xs) != GWR_OK)
        return c->st;
    return gwr_fi_put(c, 1, GWR_INT64, &xs);
}

static gwr_status infer_one_hot(ictx *c) {
    gwr_tensor *idx = gwr_fi_need(c, 0, "indices"), *depth = gwr_fi_need(c, 1, "depth");
    gwr_tensor *vals = gwr_fi_need(c, 2, "values");
    shp is, out;
    int64_t axis;
    double dv;
    if (!idx || !depth || !vals)
        return c->st;
    axis = gwr_fi_aint(c, "axis", -1);
    if (c->st)
        return c->st;
    gwr_fi_shp_get(idx, &is);
    if (is.rank < 0)
        return gwr_fi_put(c, 0, dt_of(vals), NULL);
    if (is.rank + 1 > GWR_MAX_RANK)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "output rank exceeds %d", GWR_MAX_RANK);
    if (!gwr_fi_norm_axis(c, axis, is.rank, 1, &axis))
        return c->st;
    out.rank = is.rank + 1;
    for (int i = 0, j = 0; i < out.rank; i++)
        out.d[i] = i == axis ? GWR_DIM_UNKNOWN : is.d[j++];
    if (gwr_fi_const_f64s(depth, &dv, 1) == 1) {
        if (!(dv >= 1) || dv > 9.0e18)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "depth %g is invalid", dv);
        out.d[axis] = (gwr_dim)dv;
    }
    return gwr_fi_put(c, 0, dt_of(vals), &out);
}

static gwr_status infer_non_zero(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X");
    shp out = {2, {GWR_DIM_UNKNOWN, GWR_DIM_UNKNOWN}};
    if (!x)
        return c->st;
    if (gwr_tensor_rank(x) >= 0)
        out.d[0] = gwr_tensor_rank(x);
    return gwr_fi_put(c, 0, GWR_INT64, &out);
}

static gwr_status infer_cumsum(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "x"), *ax = gwr_fi_need(c, 1, "axis");
    ival av;
    int64_t axis;
    if (!x || !ax || !gwr_fi_want_index_dtype(c, ax, "axis"))
        return c->st;
    gwr_fi_iv_in(c, 1, &av);
    if (av.n == 1 && av.k[0] == IV_VAL && gwr_tensor_rank(x) >= 0 &&
        !gwr_fi_norm_axis(c, av.v[0], gwr_tensor_rank(x), 0, &axis))
        return c->st;
    return gwr_fi_same_as_input(c, GWR_UNDEFINED);
}

/* Einsum: dims by letter, without ellipses (those give an unknown rank). */
static gwr_status infer_einsum(ictx *c) {
    const char *eq = gwr_fi_astr(c, "equation", NULL), *q;
    gwr_dim dim[128];
    int count[128] = {0}, term = 0, pos = 0;
    shp s, out;
    gwr_dtype dt = dt_of(inp(c, 0));
    sbuf p;
    if (c->st)
        return c->st;
    if (!eq)
        return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "missing attribute equation");
    for (int i = 0; i < c->nin; i++) {
        if (!gwr_fi_need(c, i, "operand") || !gwr_fi_same_dtype(c, inp(c, 0), inp(c, i)))
            return c->st;
    }
    if (strchr(eq, '.'))
        return gwr_fi_put(c, 0, dt, NULL);
    for (int i = 0; i < 128; i++)
        dim[i] = GWR_DIM_UNKNOWN;
    gwr_fi_shp_get(inp(c, 0), &s);
    for (q = eq; *q && !(q[0] == '-' && q[1] == '>'); q++) {
        unsigned char ch = (unsigned char)*q;
        if (ch == ' ')
            continue;
        if (ch == ',') {
            if (s.rank >= 0 && pos != s.rank)
                return gwr_fi_fail(c, GWR_ERR_SHAPE, "term %d names %d axes but operand %d is %s", term,
                                   pos, term, gwr_fi_tstr(inp(c, term), &p));
            if (++term >= c->nin)
                return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "equation \"%s\" has more terms than inputs", eq);
            gwr_fi_shp_get(inp(c, term), &s);
            pos = 0;
            continue;
        }
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')))
            return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "invalid equation \"%s\"", eq);
        if (s.rank >= 0 && pos < s.rank) {
            gwr_dim d = s.d[pos];
            /* A letter's extents must agree, except that 1 broadcasts. */
            if (count[ch] && d != 1 && dim[ch] != 1 && !gwr_fi_dmerge(dim[ch], d, &dim[ch]))
                return gwr_fi_fail(c, GWR_ERR_SHAPE, "axis '%c' has extents %lld and %lld", ch,
                                   (long long)dim[ch], (long long)d);
            if (!count[ch] || dim[ch] == 1)
                dim[ch] = d;
        }
        count[ch]++;
        pos++;
    }
    if (term != c->nin - 1)
        return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "equation \"%s\" has %d terms for %d inputs", eq,
                           term + 1, c->nin);
    if (s.rank >= 0 && pos != s.rank)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "term %d names %d axes but operand %d is %s", term, pos,
                           term, gwr_fi_tstr(inp(c, term), &p));
    out.rank = 0;
    if (*q) { /* explicit output */
        for (q += 2; *q; q++) {
            unsigned char ch = (unsigned char)*q;
            if (ch == ' ')
                continue;
            if (ch >= 128 || !count[ch] || out.rank >= GWR_MAX_RANK)
                return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "invalid output in equation \"%s\"", eq);
            out.d[out.rank++] = dim[ch];
        }
    } else { /* implicit: the letters seen once, in alphabetical order */
        for (int ch = 'A'; ch <= 'z'; ch++)
            if (count[ch] == 1 && out.rank < GWR_MAX_RANK)
                out.d[out.rank++] = dim[ch];
    }
    return gwr_fi_put(c, 0, dt, &out);
}

/* ======================================================================
 * Quantization, recurrent and other single-purpose layers
 * ====================================================================== */

static gwr_status infer_quantize(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "x"), *scale = gwr_fi_need(c, 1, "scale"), *zp = inp(c, 2);
    gwr_dtype dt;
    if (!x || !scale)
        return c->st;
    if (c->id == GWR_OP_QuantizeLinear) {
        dt = zp && dt_of(zp) != GWR_UNDEFINED ? dt_of(zp) : GWR_UINT8;
    } else {
        if (zp && !gwr_fi_same_dtype(c, x, zp))
            return c->st;
        dt = gwr_dtype_is_float(dt_of(scale)) ? dt_of(scale) : GWR_FLOAT32;
    }
    return gwr_fi_same_as_input(c, dt);
}

static gwr_status infer_dynamic_quantize(ictx *c) {
    shp sc = {0, {0}};
    if (gwr_fi_same_as_input(c, GWR_UINT8) != GWR_OK || gwr_fi_put(c, 1, GWR_FLOAT32, &sc) != GWR_OK)
        return c->st;
    return gwr_fi_put(c, 2, GWR_UINT8, &sc);
}

/* LSTM, GRU, RNN: Y, Y_h (and Y_c for LSTM). */
static gwr_status infer_rnn(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X"), *w = gwr_fi_need(c, 1, "W"), *r = gwr_fi_need(c, 2, "R");
    const char *dir;
    int64_t hidden, layout, nd;
    shp xs, rs, y, yh;
    gwr_dim seq, batch;
    if (!x || !w || !r || !gwr_fi_same_dtype(c, x, w) || !gwr_fi_same_dtype(c, x, r))
        return c->st;
    dir = gwr_fi_astr(c, "direction", "forward");
    layout = gwr_fi_aint(c, "layout", 0);
    hidden = gwr_fi_aint(c, "hidden_size", GWR_DIM_UNKNOWN);
    if (c->st)
        return c->st;
    if (!strcmp(dir, "forward") || !strcmp(dir, "reverse"))
        nd = 1;
    else if (!strcmp(dir, "bidirectional"))
        nd = 2;
    else
        return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "unknown direction \"%s\"", dir);
    gwr_fi_shp_get(x, &xs);
    gwr_fi_shp_get(r, &rs);
    if (!gwr_fi_want_rank(c, x, &xs, 3, 3, "X") || !gwr_fi_want_rank(c, r, &rs, 3, 3, "R"))
        return c->st;
    if (hidden == GWR_DIM_UNKNOWN && rs.rank == 3)
        hidden = rs.d[2];
    if (hidden < 0 && hidden != GWR_DIM_UNKNOWN && !GWR_DIM_IS_SYM(hidden))
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "hidden_size %lld is invalid", (long long)hidden);
    seq = xs.rank == 3 ? xs.d[layout ? 1 : 0] : GWR_DIM_UNKNOWN;
    batch = xs.rank == 3 ? xs.d[layout ? 0 : 1] : GWR_DIM_UNKNOWN;
    y.rank = 4;
    yh.rank = 3;
    if (layout) {
        y.d[0] = batch, y.d[1] = seq, y.d[2] = nd, y.d[3] = hidden;
        yh.d[0] = batch, yh.d[1] = nd, yh.d[2] = hidden;
    } else {
        y.d[0] = seq, y.d[1] = nd, y.d[2] = batch, y.d[3] = hidden;
        yh.d[0] = nd, yh.d[1] = batch, yh.d[2] = hidden;
    }
    if (gwr_fi_put(c, 0, dt_of(x), &y) || gwr_fi_put(c, 1, dt_of(x), &yh))
        return c->st;
    return gwr_fi_put(c, 2, dt_of(x), &yh);
}

static gwr_status infer_grid_sample(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X"), *g = gwr_fi_need(c, 1, "grid");
    shp xs, gs, out;
    if (!x || !g)
        return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_shp_get(g, &gs);
    if (gs.rank < 3 || (xs.rank >= 0 && xs.rank != gs.rank))
        return gs.rank < 0 ? gwr_fi_put(c, 0, dt_of(x), NULL)
                           : gwr_fi_fail(c, GWR_ERR_SHAPE, "grid and X differ in rank");
    out.rank = gs.rank;
    out.d[0] = gs.d[0];
    out.d[1] = xs.rank >= 0 ? xs.d[1] : GWR_DIM_UNKNOWN;
    for (int i = 2; i < gs.rank; i++)
        out.d[i] = gs.d[i - 1];
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

/* RoiAlign, MaxRoiPool: (num_rois, C, pooled h, pooled w). */
static gwr_status infer_roi(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X"), *rois = gwr_fi_need(c, 1, "rois");
    shp xs, rs, out = {4, {GWR_DIM_UNKNOWN, GWR_DIM_UNKNOWN, 1, 1}};
    const int64_t *ps;
    int64_t n;
    if (!x || !rois)
        return c->st;
    gwr_fi_shp_get(x, &xs);
    gwr_fi_shp_get(rois, &rs);
    if (rs.rank == 2)
        out.d[0] = rs.d[0];
    if (xs.rank == 4)
        out.d[1] = xs.d[1];
    if (c->id == GWR_OP_RoiAlign) {
        out.d[2] = gwr_fi_aint(c, "output_height", 1);
        out.d[3] = gwr_fi_aint(c, "output_width", 1);
    } else if (gwr_fi_aints(c, "pooled_shape", &ps, &n) && n == 2) {
        out.d[2] = ps[0];
        out.d[3] = ps[1];
    } else if (!c->st) {
        return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "missing attribute pooled_shape with 2 values");
    }
    if (c->st)
        return c->st;
    if (out.d[2] < 0 || out.d[3] < 0)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "pooled extents are negative");
    return gwr_fi_put(c, 0, dt_of(x), &out);
}

static gwr_status infer_nms(ictx *c) {
    shp out = {2, {GWR_DIM_UNKNOWN, 3}};
    if (!gwr_fi_need(c, 0, "boxes") || !gwr_fi_need(c, 1, "scores"))
        return c->st;
    return gwr_fi_put(c, 0, GWR_INT64, &out);
}

static gwr_status infer_unique(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X");
    shp xs, out, idx = {1, {GWR_DIM_UNKNOWN}};
    int64_t axis;
    if (!x)
        return c->st;
    gwr_fi_shp_get(x, &xs);
    if (gwr_layer_has_attr(c->l, "axis") && xs.rank >= 0) {
        axis = gwr_fi_aint(c, "axis", 0);
        if (c->st || !gwr_fi_norm_axis(c, axis, xs.rank, 0, &axis))
            return c->st;
        out = xs;
        out.d[axis] = GWR_DIM_UNKNOWN;
    } else {
        out = idx;
    }
    if (gwr_fi_put(c, 0, dt_of(x), &out))
        return c->st;
    for (int i = 1; i < 4; i++)
        if (gwr_fi_put(c, i, GWR_INT64, &idx))
            return c->st;
    return GWR_OK;
}

/* Any op without a rule: the first input's dtype, unknown shapes. */
static gwr_status infer_default(ictx *c) {
    gwr_dtype dt = GWR_UNDEFINED;
    for (int i = 0; i < c->nin && dt == GWR_UNDEFINED; i++)
        dt = dt_of(inp(c, i));
    return gwr_fi_put_all_unknown(c, dt);
}

/* ======================================================================
 * Dispatch
 * ====================================================================== */

static gwr_status dispatch(ictx *c) {
    switch (c->id) {
    case GWR_OP_Add: case GWR_OP_Sub: case GWR_OP_Mul: case GWR_OP_Div: case GWR_OP_Pow:
    case GWR_OP_Mod: case GWR_OP_Max: case GWR_OP_Min: case GWR_OP_Sum: case GWR_OP_Mean:
    case GWR_OP_And: case GWR_OP_Or: case GWR_OP_Xor: case GWR_OP_Equal: case GWR_OP_Greater:
    case GWR_OP_GreaterOrEqual: case GWR_OP_Less: case GWR_OP_LessOrEqual: case GWR_OP_BitShift:
        return infer_elementwise(c);
    case GWR_OP_PRelu: return infer_prelu(c);
    case GWR_OP_Clip: return infer_clip(c);
    case GWR_OP_Where: return infer_where(c);
    case GWR_OP_MatMul: case GWR_OP_MatMulInteger: case GWR_OP_QLinearMatMul:
        return infer_matmul(c);
    case GWR_OP_Gemm: return infer_gemm(c);
    case GWR_OP_Det: return infer_det(c);
    case GWR_OP_Conv: return infer_conv(c, 0, 1, 2, GWR_UNDEFINED);
    case GWR_OP_ConvInteger: return infer_conv(c, 0, 1, -1, GWR_INT32);
    case GWR_OP_QLinearConv: return infer_conv(c, 0, 3, 8, dt_of(inp(c, 7)));
    case GWR_OP_ConvTranspose: return infer_conv_transpose(c);
    case GWR_OP_AveragePool: case GWR_OP_MaxPool: case GWR_OP_LpPool:
        return infer_pool(c);
    case GWR_OP_GlobalAveragePool: case GWR_OP_GlobalMaxPool: case GWR_OP_GlobalLpPool:
        return infer_global_pool(c);
    case GWR_OP_MaxUnpool: return infer_max_unpool(c);
    case GWR_OP_BatchNormalization: return infer_batch_norm(c);
    case GWR_OP_InstanceNormalization: return infer_instance_norm(c);
    case GWR_OP_LayerNormalization: return infer_layer_norm(c);
    case GWR_OP_LpNormalization: case GWR_OP_MeanVarianceNormalization: case GWR_OP_LRN:
    case GWR_OP_Trilu: case GWR_OP_ReverseSequence:
        return gwr_fi_same_as_input(c, GWR_UNDEFINED);
    case GWR_OP_Softmax: case GWR_OP_LogSoftmax: case GWR_OP_Hardmax:
        return infer_softmax(c);
    case GWR_OP_ReduceSum: case GWR_OP_ReduceMean: case GWR_OP_ReduceMax: case GWR_OP_ReduceMin:
    case GWR_OP_ReduceProd: case GWR_OP_ReduceL1: case GWR_OP_ReduceL2: case GWR_OP_ReduceLogSum:
    case GWR_OP_ReduceLogSumExp: case GWR_OP_ReduceSumSquare:
        return infer_reduce(c);
    case GWR_OP_ArgMax: case GWR_OP_ArgMin: return infer_argmax(c);
    case GWR_OP_NegativeLogLikelihoodLoss: case GWR_OP_SoftmaxCrossEntropyLoss:
        return infer_loss(c);
    case GWR_OP_Reshape: return infer_reshape(c);
    case GWR_OP_Flatten: return infer_flatten(c);
    case GWR_OP_Transpose: return infer_transpose(c);
    case GWR_OP_Concat: return infer_concat(c);
    case GWR_OP_Split: return infer_split(c);
    case GWR_OP_Slice: return infer_slice(c);
    case GWR_OP_Gather: return infer_gather(c);
    case GWR_OP_GatherElements: return infer_gather_elements(c);
    case GWR_OP_GatherND: return infer_gather_nd(c);
    case GWR_OP_Compress: return infer_compress(c);
    case GWR_OP_Unique: return infer_unique(c);
    case GWR_OP_Scatter: case GWR_OP_ScatterElements: case GWR_OP_ScatterND:
        return infer_scatter(c);
    case GWR_OP_Squeeze: return infer_squeeze(c);
    case GWR_OP_Unsqueeze: return infer_unsqueeze(c);
    case GWR_OP_DepthToSpace: case GWR_OP_SpaceToDepth: return infer_depth_space(c);
    case GWR_OP_Expand: return infer_expand(c);
    case GWR_OP_Tile: return infer_tile(c);
    case GWR_OP_Pad: return infer_pad(c);
    case GWR_OP_Cast: return infer_cast(c);
    case GWR_OP_CastLike: return infer_cast_like(c);
    case GWR_OP_Shape: return infer_shape(c);
    case GWR_OP_Size: return infer_size(c);
    case GWR_OP_Constant: return infer_constant(c);
    case GWR_OP_ConstantOfShape: return infer_constant_of_shape(c);
    case GWR_OP_Range: return infer_range(c);
    case GWR_OP_EyeLike: return infer_eye_like(c);
    case GWR_OP_RandomNormal: case GWR_OP_RandomUniform: case GWR_OP_RandomNormalLike:
    case GWR_OP_RandomUniformLike: case GWR_OP_Multinomial: case GWR_OP_Bernoulli:
        return infer_random(c);
    case GWR_OP_Identity: case GWR_OP_Dropout: return infer_identity(c);
    case GWR_OP_Resize: case GWR_OP_Upsample: return infer_resize(c);
    case GWR_OP_TopK: return infer_topk(c);
    case GWR_OP_OneHot: return infer_one_hot(c);
    case GWR_OP_NonZero: return infer_non_zero(c);
    case GWR_OP_CumSum: return infer_cumsum(c);
    case GWR_OP_Einsum: return infer_einsum(c);
    case GWR_OP_QuantizeLinear: case GWR_OP_DequantizeLinear: return infer_quantize(c);
    case GWR_OP_DynamicQuantizeLinear: return infer_dynamic_quantize(c);
    case GWR_OP_LSTM: case GWR_OP_GRU: case GWR_OP_RNN: return infer_rnn(c);
    case GWR_OP_GridSample: return infer_grid_sample(c);
    case GWR_OP_RoiAlign: case GWR_OP_MaxRoiPool: return infer_roi(c);
    case GWR_OP_NonMaxSuppression: return infer_nms(c);
    default:
        break;
    }
    switch (gwr_layer_type_of(c->l)) {
    case GWR_LAYER_UNARY:
        if (c->id == GWR_OP_StringNormalizer)
            break;
        return infer_unary(c);
    case GWR_LAYER_ACTIVATION:
        return infer_unary(c);
    case GWR_LAYER_SEQUENCE:
    case GWR_LAYER_CONDITION:
    case GWR_LAYER_LOOP:
        /* Their outputs are sequences, optionals or the values of
         * subgraphs: the importer sets those types; a plain tensor type
         * guessed from the first input would be wrong. */
        return GWR_OK;
    default:
        break;
    }
    return infer_default(c);
}

gwr_status gwr_fn_infer_op(gwr_layer *l) {
    ictx c;
    if (!l)
        return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_fn_infer_op: layer is NULL");
    c.l = l;
    c.net = gwr_layer_network(l);
    c.id = gwr_layer_op_id(l);
    c.nin = gwr_layer_num_inputs(l);
    c.nout = gwr_layer_num_outputs(l);
    c.st = GWR_OK;
    return dispatch(&c);
}
