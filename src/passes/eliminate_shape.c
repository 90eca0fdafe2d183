/* eliminate_shape.c - the optimizer's shape passes (level basic, every
 * target, exact): chains of layers that only change a tensor's shape become
 * one Reshape (or nothing), and shape arithmetic on dims that are known
 * becomes constants.
 *
 *   compose_reshapes   Reshape/Squeeze/Unsqueeze/Flatten of Reshape/Squeeze/
 *                      Unsqueeze/Flatten -> one Reshape (static target), one
 *                      Squeeze or Unsqueeze (axes merged), or x (they cancel);
 *                      a lone Flatten -> Reshape, so that it merges too
 *   fold_shape_dims    Gather/Slice of Shape(x) at known dims -> a constant;
 *                      Reshape(x, Concat(...)) whose entries are known but
 *                      for one -> Reshape(x, constant with -1 there)
 *
 * Why the -1 is exact: a Reshape that succeeds has as many elements as x,
 * so with every other entry known and positive the one left is
 * numel(x) / (their product), which is what -1 computes. A dim that is not
 * known and not bound (gwr optimize --shape) leaves the chain as it is;
 * fold_shape_dims says why in the report.
 *
 * Every layer of a chain but the last must have no other reader and not be
 * a network output, or composing would keep it alive and gain nothing.
 *
 * Not a rule file: a chain of any length is composed, and each op's shape is proven from its
 * constant inputs (Reshape's 0 and -1, Shape -> Gather/Slice/Concat of known dims).
 */
#include <stdint.h>
#include <string.h>

#include "gwr/match.h"
#include "gwr/passes.h"

#define MAXR GWR_MAX_RANK



/* Is t read only by `reader` (once or more) and not a network output? */
static int only_read_by(const gwr_tensor *t, const gwr_layer *reader) {
    if (gwr_tensor_output_index(t) >= 0 || gwr_tensor_num_live_users(t) < 1) return 0;
    for (int64_t i = 0; i < gwr_tensor_num_users(t); i++) {
        gwr_layer *u = gwr_tensor_user(t, i, NULL);
        if (!gwr_layer_is_removed(u) && u != reader) return 0;
    }
    return 1;
}

static int is_shape_op(gwr_op_id id) {
    return id == GWR_OP_Reshape || id == GWR_OP_Squeeze || id == GWR_OP_Unsqueeze || id == GWR_OP_Flatten;
}

/* Replaces l's only output by y and removes l (and `dead`, when given, the
 * layer whose only reader l was). */
static int replace(gwr_rewrite_ctx *c, gwr_layer *l, gwr_layer *dead, gwr_tensor *y) {
    gwr_dtype a = gwr_tensor_dtype(gwr_layer_output(l, 0)), b = gwr_tensor_dtype(y);
    if (a != GWR_UNDEFINED && b != GWR_UNDEFINED && a != b) return gwr_rewrite_no_match(c, "the dtypes differ");
    gwr_status s = gwr_match_replace_layer(l, 1, &y);
    if (!s && dead && !gwr_layer_is_removed(dead)) s = gwr_layer_mark_as_removed(dead);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}

/* A new layer `op` on x with the int64 constant v (n entries) as its
 * second input, or, with axes_as_attr, as its "axes" attribute (the
 * Squeeze/Unsqueeze of opsets before 13); the int attribute `int_attr`
 * (may be NULL) set to av. */
static gwr_tensor *shape_layer(gwr_rewrite_ctx *c, const char *op, gwr_tensor *x, int n, const int64_t *v,
                               const char *int_attr, int64_t av, int axes_as_attr) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    gwr_tensor *in[2] = {x, NULL}, *y = NULL;
    gwr_layer *l = NULL;
    if (axes_as_attr || (in[1] = gwr_constant_i64s(net, n, v)))
        l = gwr_network_add_layer(net, op, "", NULL, axes_as_attr ? 1 : 2, in, 1, NULL);
    gwr_status s = l ? GWR_OK : GWR_ERR_NOMEM;
    if (!s && axes_as_attr) s = gwr_layer_set_ints(l, "axes", v, n);
    if (!s && int_attr) s = gwr_layer_set_int(l, int_attr, av);
    if (!s) s = gwr_layer_infer(l);
    if (!s) y = gwr_layer_output(l, 0);
    else if (l) gwr_layer_mark_as_removed(l);
    if (!y) gwr_rewrite_fail(c, s ? s : GWR_ERR_NOMEM, "building a %s: %s", op, gwr_network_errmsg(net));
    return y;
}

/* ---- compose_reshapes ------------------------------------------------------- */

/* The axes of Squeeze/Unsqueeze l (attribute before opset 13, input
 * after), normalized against rank r and sorted; the count, or -1 (absent
 * or not constant, out of range, repeated). */
static int axes_of(const gwr_layer *l, int r, int64_t *ax) {
    const int64_t *p;
    int64_t n;
    int k;
    if (!gwr_layer_get_ints(l, "axes", &p, &n)) {
        if (n > MAXR) return -1;
        for (k = 0; k < n; k++) ax[k] = p[k];
    } else if (gwr_layer_num_inputs(l) < 2 || (k = gwr_match_const_ints(gwr_layer_input(l, 1), ax, MAXR)) < 0) {
        return -1;
    }
    if (r < 0 || !k) return -1;
    for (int i = 0; i < k; i++) {
        if (ax[i] < 0) ax[i] += r;
        if (ax[i] < 0 || ax[i] >= r) return -1;
        for (int j = i; j > 0 && ax[j - 1] >= ax[j]; j--) {
            if (ax[j - 1] == ax[j]) return -1;
            int64_t t = ax[j];
            ax[j] = ax[j - 1], ax[j - 1] = t;
        }
    }
    return k;
}

/* The axes of a Squeeze/Unsqueeze node as its rank sees them: Unsqueeze's
 * against its output rank, Squeeze's against its input rank. */
static int node_axes(const gwr_layer *l, int64_t *ax) {
    int unsq = gwr_layer_op_id(l) == GWR_OP_Unsqueeze;
    return axes_of(l, gwr_tensor_rank(unsq ? gwr_layer_output(l, 0) : gwr_layer_input(l, 0)), ax);
}

static int has(const int64_t *ax, int n, int64_t v) {
    for (int i = 0; i < n; i++)
        if (ax[i] == v) return 1;
    return 0;
}

/* The positions (of a rank-R list) of the slots that are not in `taken`
 * (sorted, nt of them), indexed by sel: out[i] = the sel[i]-th free slot. */
static void free_slots(int R, const int64_t *taken, int nt, const int64_t *sel, int ns, int64_t *out) {
    for (int i = 0; i < ns; i++) {
        int64_t seen = -1;
        for (int p = 0; p < R; p++)
            if (!has(taken, nt, p) && ++seen == sel[i]) {
                out[i] = p;
                break;
            }
    }
}

/* Squeeze/Unsqueeze of Squeeze/Unsqueeze with axes known: x itself when
 * they cancel, one layer with the axes merged when both add (or both
 * remove) dims; 0 when neither applies (the caller tries a Reshape). */
static int squeeze_pair(gwr_rewrite_ctx *c, gwr_layer *l, gwr_layer *in) {
    gwr_op_id a = gwr_layer_op_id(in), b = gwr_layer_op_id(l);
    int64_t a1[MAXR], a2[MAXR], m[2 * MAXR];
    int n1 = node_axes(in, a1), n2 = node_axes(l, a2);
    gwr_tensor *x = gwr_layer_input(in, 0);
    if ((a != GWR_OP_Squeeze && a != GWR_OP_Unsqueeze) || (b != GWR_OP_Squeeze && b != GWR_OP_Unsqueeze) || n1 < 0 ||
        n2 < 0)
        return 0;
    if (a != b) { /* the same axes of the same rank list cancel */
        if (n1 != n2 || memcmp(a1, a2, (size_t)n1 * sizeof *a1)) return 0;
        return replace(c, l, in, x);
    }
    int n = n1 + n2;
    if (b == GWR_OP_Unsqueeze) { /* the outer's axes, then the inner's among the slots left */
        int R = gwr_tensor_rank(gwr_layer_output(l, 0));
        memcpy(m, a2, (size_t)n2 * sizeof *m);
        free_slots(R, a2, n2, a1, n1, m + n2);
    } else { /* the inner's axes, then the outer's among x's dims left */
        memcpy(m, a1, (size_t)n1 * sizeof *m);
        free_slots(gwr_tensor_rank(x), a1, n1, a2, n2, m + n1);
    }
    if (n > MAXR) return 0;
    gwr_tensor *y = shape_layer(c, b == GWR_OP_Unsqueeze ? "Unsqueeze" : "Squeeze", x, n, m, NULL, 0,
                                gwr_match_opset(l) > 0 && gwr_match_opset(l) < 13);
    return y ? replace(c, l, in, y) : -1;
}

/* Does Reshape l copy dim i of its input into dim i of its output (a 0
 * in its constant shape, allowzero unset)? Then a 0 of a Reshape after it
 * still copies the same dim. */
static int copies_dim(const gwr_layer *l, int i) {
    int64_t v[MAXR], az = 0;
    if (!l || gwr_layer_op_id(l) != GWR_OP_Reshape || gwr_layer_num_inputs(l) < 2) return 0;
    int n = gwr_match_const_ints(gwr_layer_input(l, 1), v, MAXR);
    gwr_layer_attr_int(l, "allowzero", 0, &az);
    return !az && i < n && v[i] == 0;
}

/* The Reshape target equal to l's output for any input of as many
 * elements: n entries into v and whether it needs allowzero, or -1. A
 * Reshape keeps its constant shape with each 0 (allowzero unset) copied
 * from its input's known dim (not 0: that would copy again) or left where
 * the Reshape before copied that dim too; another op needs its output's
 * dims known and not 0, but for one that becomes -1 when every other is
 * positive. */
static int target_of(const gwr_layer *l, int64_t *v, int *allowzero) {
    gwr_tensor *in = gwr_layer_input(l, 0), *out = gwr_layer_output(l, 0);
    *allowzero = 0;
    if (gwr_layer_op_id(l) == GWR_OP_Reshape) {
        int64_t az = 0;
        int n = gwr_layer_num_inputs(l) > 1 ? gwr_match_const_ints(gwr_layer_input(l, 1), v, MAXR) : -1;
        gwr_layer_attr_int(l, "allowzero", 0, &az);
        for (int i = 0; i < n; i++) {
            if (v[i] || az) continue;
            gwr_dim d = gwr_tensor_dim(in, i);
            if (i < gwr_tensor_rank(in) && GWR_DIM_IS_KNOWN(d) && d > 0) v[i] = d; /* a 0 would copy again */
            else if (!copies_dim(gwr_tensor_parent(in), i)) return -1;
        }
        for (int i = 0; i < n; i++) *allowzero |= az && !v[i];
        return n;
    }
    int r = gwr_tensor_rank(out), unknown = -1;
    int64_t prod = 1;
    for (int i = 0; i < r; i++) {
        gwr_dim d = gwr_tensor_dim(out, i);
        if (d == 0) return -1; /* a 0 in a Reshape target copies a dim */
        if (GWR_DIM_IS_KNOWN(d)) {
            v[i] = d;
            if (__builtin_mul_overflow(prod, d, &prod)) return -1; /* no such tensor: refuse */
        } else {
            if (unknown >= 0) return -1;
            unknown = i, v[i] = -1;
        }
    }
    return unknown >= 0 && prod <= 0 ? -1 : r;
}

/* Flatten(x, axis) as Reshape(x, [lead, trail]): each a known product, or
 * 0 (copy dim 0, for axis 1), or -1 beside a positive known one. */
static int flatten_target(const gwr_layer *l, int64_t *v) {
    gwr_tensor *x = gwr_layer_input(l, 0);
    int r = gwr_tensor_rank(x), known[2] = {1, 1};
    int64_t axis = 1, p[2] = {1, 1};
    gwr_layer_attr_int(l, "axis", 1, &axis);
    if (r < 0 || axis < -r || axis > r) return -1;
    if (axis < 0) axis += r;
    for (int i = 0; i < r; i++) {
        gwr_dim d = gwr_tensor_dim(x, i);
        int s = i >= axis;
        if (GWR_DIM_IS_KNOWN(d)) {
            if (__builtin_mul_overflow(p[s], d, &p[s])) return -1; /* past int64: refuse */
        }
        else known[s] = 0;
    }
    if ((known[0] && !p[0] && axis != 1) || (known[1] && !p[1])) return -1; /* a 0 would copy a dim of x */
    if (known[0] && known[1]) v[0] = p[0], v[1] = p[1];
    else if (known[0] && p[0] > 0) v[0] = p[0], v[1] = -1;
    else if (axis == 1 && known[1]) v[0] = 0, v[1] = p[1];
    else if (known[1] && p[1] > 0) v[0] = -1, v[1] = p[1];
    else return -1;
    return 2;
}

/* A lone Flatten as the Reshape it is. */
static int flatten_to_reshape(gwr_rewrite_ctx *c, gwr_layer *l) {
    int64_t v[2];
    if (gwr_layer_op_id(l) != GWR_OP_Flatten) return gwr_rewrite_no_match(c, "the input is not a lone reshape");
    if (flatten_target(l, v) < 0) return gwr_rewrite_no_match(c, "the Flatten's dims are not known enough");
    gwr_tensor *y = shape_layer(c, "Reshape", gwr_layer_input(l, 0), 2, v, NULL, 0, 0);
    return y ? replace(c, l, NULL, y) : -1;
}

static int compose_reshapes(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_tensor *mid = gwr_layer_num_inputs(l) ? gwr_layer_input(l, 0) : NULL;
    gwr_layer *in = mid ? gwr_tensor_parent(mid) : NULL;
    int64_t v[MAXR];
    int n, az = 0;
    if (!mid || gwr_layer_num_outputs(l) != 1) return gwr_rewrite_no_match(c, "malformed");
    if (gwr_match_opset(l) > 0 && gwr_match_opset(l) < 5) return gwr_rewrite_no_match(c, "opset < 5: Reshape takes an attribute");
    if (!in || gwr_layer_is_removed(in) || !is_shape_op(gwr_layer_op_id(in)) ||
        gwr_layer_network(in) != gwr_layer_network(l) || !only_read_by(mid, l))
        return flatten_to_reshape(c, l);
    int r = squeeze_pair(c, l, in);
    if (r) return r;
    if ((n = target_of(l, v, &az)) < 0) {
        if (gwr_layer_op_id(l) == GWR_OP_Flatten) return flatten_to_reshape(c, l);
        return gwr_rewrite_no_match(c, "the target shape is not known");
    }
    gwr_tensor *y = shape_layer(c, "Reshape", gwr_layer_input(in, 0), n, v, az ? "allowzero" : NULL, 1, 0);
    return y ? replace(c, l, in, y) : -1;
}

static const char *const reshape_ops[] = {"Reshape", "Squeeze", "Unsqueeze", "Flatten", NULL};

const gwr_pattern_rewriter gwr_pattern_compose_reshapes = {
    .name = "compose_reshapes",
    .root_ops = reshape_ops,
    .match_and_rewrite = compose_reshapes,
};

/* ---- fold_shape_dims -------------------------------------------------------- */

/* What a small int tensor holds as far as it is known: its entries (in
 * order, whatever its rank) with a flag each. */
typedef struct shape_vals {
    int n;
    int64_t v[MAXR * 2];
    unsigned char known[MAXR * 2];
    int dynamic; /* the values depend on a Shape (not all constants) */
    /* an entry not known: the tensor and dim it is (Shape's input), or NULL */
    const gwr_tensor *src[MAXR * 2];
    int dim[MAXR * 2];
} shape_vals;

#define VCAP (MAXR * 2)

static int vals_of(const gwr_tensor *t, shape_vals *s, int depth);

/* Shape(x, start, end): x's dims, known or not. */
static int vals_shape(const gwr_layer *l, shape_vals *s) {
    const gwr_tensor *x = gwr_layer_input(l, 0);
    int64_t r = gwr_tensor_rank(x), start = 0, end;
    if (r < 0) return -1;
    end = r;
    if (!gwr_layer_get_int(l, "start", &start) && start < 0) start += r;
    if (!gwr_layer_get_int(l, "end", &end) && end < 0) end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < start ? start : end > r ? r : end;
    s->n = (int)(end - start), s->dynamic = 1;
    for (int64_t i = start; i < end; i++) {
        gwr_dim d = gwr_tensor_dim(x, (int)i);
        s->known[i - start] = GWR_DIM_IS_KNOWN(d) != 0;
        s->v[i - start] = GWR_DIM_IS_KNOWN(d) ? d : 0;
        s->src[i - start] = x, s->dim[i - start] = (int)i;
    }
    return 0;
}

/* Gather(data, constant indices) along axis 0 of a 1-D data. */
static int vals_gather(const gwr_layer *l, shape_vals *s, int depth) {
    shape_vals d;
    int64_t idx[VCAP], axis = 0;
    int n = gwr_layer_num_inputs(l) == 2 ? gwr_match_const_ints(gwr_layer_input(l, 1), idx, VCAP) : -1;
    gwr_layer_attr_int(l, "axis", 0, &axis);
    if (n < 0 || (axis != 0 && axis != -1) || gwr_tensor_rank(gwr_layer_input(l, 0)) != 1 ||
        vals_of(gwr_layer_input(l, 0), &d, depth + 1))
        return -1;
    s->n = n, s->dynamic = d.dynamic;
    for (int i = 0; i < n; i++) {
        int64_t k = idx[i] < 0 ? idx[i] + d.n : idx[i];
        if (k < 0 || k >= d.n) return -1;
        s->v[i] = d.v[k], s->known[i] = d.known[k], s->src[i] = d.src[k], s->dim[i] = d.dim[k];
    }
    return 0;
}

/* Slice of a 1-D tensor (opset 10's inputs), the spec's clamping. */
static int vals_slice(const gwr_layer *l, shape_vals *s, int depth) {
    shape_vals d;
    int64_t st, en, ax = 0, sp = 1, k[1];
    int nin = gwr_layer_num_inputs(l);
    if (nin < 3 || gwr_match_const_ints(gwr_layer_input(l, 1), k, 1) != 1) return -1;
    st = k[0];
    if (gwr_match_const_ints(gwr_layer_input(l, 2), k, 1) != 1) return -1;
    en = k[0];
    if (nin > 3 && gwr_layer_input(l, 3) && (gwr_match_const_ints(gwr_layer_input(l, 3), k, 1) != 1 || ((ax = k[0]) && ax != -1)))
        return -1;
    if (nin > 4 && gwr_layer_input(l, 4) && (gwr_match_const_ints(gwr_layer_input(l, 4), k, 1) != 1 || !(sp = k[0])))
        return -1;
    if (gwr_tensor_rank(gwr_layer_input(l, 0)) != 1 || vals_of(gwr_layer_input(l, 0), &d, depth + 1)) return -1;
    int64_t n = d.n;
    if (st < 0) st += n;
    if (en < 0) en += n;
    if (sp > 0) {
        st = st < 0 ? 0 : st > n ? n : st;
        en = en < 0 ? 0 : en > n ? n : en;
    } else {
        st = st < 0 ? -1 : st > n - 1 ? n - 1 : st;
        en = en < -1 ? -1 : en > n - 1 ? n - 1 : en;
    }
    s->n = 0, s->dynamic = d.dynamic;
    for (int64_t i = st; sp > 0 ? i < en : i > en; i += sp) {
        s->v[s->n] = d.v[i], s->known[s->n] = d.known[i], s->src[s->n] = d.src[i], s->dim[s->n] = d.dim[i];
        s->n++;
        if (sp > 0 ? sp >= en - i : sp <= en - i) break; /* the next i is past en (i + sp may not fit) */
    }
    return 0;
}

static int vals_concat(const gwr_layer *l, shape_vals *s, int depth) {
    int64_t axis = 0;
    gwr_layer_attr_int(l, "axis", 0, &axis);
    if ((axis != 0 && axis != -1) || gwr_tensor_rank(gwr_layer_output(l, 0)) != 1) return -1;
    s->n = 0, s->dynamic = 0;
    for (int i = 0; i < gwr_layer_num_inputs(l); i++) {
        shape_vals p;
        if (vals_of(gwr_layer_input(l, i), &p, depth + 1) || s->n + p.n > VCAP) return -1;
        memcpy(s->v + s->n, p.v, (size_t)p.n * sizeof *p.v);
        memcpy(s->known + s->n, p.known, (size_t)p.n);
        memcpy(s->src + s->n, p.src, (size_t)p.n * sizeof *p.src);
        memcpy(s->dim + s->n, p.dim, (size_t)p.n * sizeof *p.dim);
        s->n += p.n, s->dynamic |= p.dynamic;
    }
    return 0;
}

/* 0 and *s filled when t's values can be traced through constants, Shape,
 * Gather, Slice, Concat and the layers that keep values in order
 * (Squeeze, Unsqueeze, Reshape, Identity, a Cast between int64 and int32
 * of values that fit); -1 otherwise. */
static int vals_of(const gwr_tensor *t, shape_vals *s, int depth) {
    int n;
    gwr_dtype dt = gwr_tensor_dtype(t);
    if (depth > 16 || (dt != GWR_INT64 && dt != GWR_INT32)) return -1;
    if ((n = gwr_match_const_ints(t, s->v, VCAP)) >= 0) {
        s->n = n, s->dynamic = 0;
        memset(s->known, 1, (size_t)n);
        memset(s->src, 0, sizeof s->src);
        return 0;
    }
    gwr_layer *l = gwr_tensor_parent(t);
    if (!l || gwr_layer_is_removed(l) || *gwr_layer_domain(l) || gwr_layer_num_inputs(l) < 1 || !gwr_layer_input(l, 0))
        return -1;
    switch (gwr_layer_op_id(l)) {
    case GWR_OP_Shape: return vals_shape(l, s);
    case GWR_OP_Gather: return vals_gather(l, s, depth);
    case GWR_OP_Slice: return vals_slice(l, s, depth);
    case GWR_OP_Concat: return vals_concat(l, s, depth);
    case GWR_OP_Cast:
        if (dt == GWR_INT32 && vals_of(gwr_layer_input(l, 0), s, depth + 1) == 0) {
            for (int i = 0; i < s->n; i++)
                if (s->known[i] && (s->v[i] > INT32_MAX || s->v[i] < INT32_MIN)) return -1;
            return 0;
        }
        /* fall through */
    case GWR_OP_Squeeze:
    case GWR_OP_Unsqueeze:
    case GWR_OP_Reshape:
    case GWR_OP_Identity: return vals_of(gwr_layer_input(l, 0), s, depth + 1);
    default: return -1;
    }
}

/* The first entry not known, for the report. */
static int first_unknown(const shape_vals *s) {
    for (int i = 0; i < s->n; i++)
        if (!s->known[i]) return i;
    return -1;
}

/* Gather, Slice or Concat of shape values all known: a constant. */
static int fold_known(gwr_rewrite_ctx *c, gwr_layer *l) {
    shape_vals s;
    gwr_tensor *out = gwr_layer_output(l, 0);
    int r = gwr_tensor_rank(out);
    if (gwr_layer_num_outputs(l) != 1 || r < 0 || r > 1 || vals_of(out, &s, 0) || !s.dynamic)
        return gwr_rewrite_no_match(c, "not shape values of a Shape");
    int u = first_unknown(&s);
    if (u >= 0)
        return gwr_rewrite_no_match(c, "dynamic shape: entry %d of '%s' is a dim that is not known (bind it with --shape)",
                                    u, gwr_tensor_name(out));
    int64_t n = s.n;
    int32_t v32[VCAP];
    gwr_dtype dt = gwr_tensor_dtype(out) == GWR_INT32 ? GWR_INT32 : GWR_INT64;
    for (int i = 0; i < s.n; i++) v32[i] = (int32_t)s.v[i]; /* vals_of checked that they fit */
    gwr_tensor *k = gwr_constant(gwr_rewrite_ctx_network(c), dt, r, &n, dt == GWR_INT32 ? (void *)v32 : (void *)s.v);
    if (!k) return gwr_rewrite_fail(c, GWR_ERR_NOMEM, "%s", gwr_network_errmsg(gwr_rewrite_ctx_network(c)));
    return replace(c, l, NULL, k);
}

/* The tensor and dim that dim i of t is the same value as, through layers
 * that carry a dim over unchanged: a Reshape's 0 entry (copy), a Transpose,
 * the rows of a Gemm (transA 0) or MatMul (rank >= 2; its batch dims only
 * when B is 1-D or 2-D, which broadcasts nothing), an elementwise op of
 * one input (activations, unary math, Cast, Identity). At most 32 steps. */
static const gwr_tensor *dim_root(const gwr_tensor *t, int *i) {
    for (int step = 0; step < 32; step++) {
        gwr_layer *l = gwr_tensor_parent(t);
        int r = gwr_tensor_rank(t);
        if (!l || gwr_layer_is_removed(l) || *gwr_layer_domain(l) || gwr_tensor_parent_output_index(t) != 0 ||
            *i < 0 || *i >= r || !gwr_layer_input(l, 0))
            return t;
        gwr_tensor *in = gwr_layer_input(l, 0);
        int64_t v[MAXR], a = 0;
        const int64_t *perm;
        int64_t np;
        switch (gwr_layer_op_id(l)) {
        case GWR_OP_Reshape:
            gwr_layer_attr_int(l, "allowzero", 0, &a);
            if (a || gwr_layer_num_inputs(l) < 2 || gwr_match_const_ints(gwr_layer_input(l, 1), v, MAXR) != r || v[*i])
                return t;
            break;
        case GWR_OP_Transpose:
            if (gwr_layer_attr_ints(l, "perm", &perm, &np) || np != r) return t;
            *i = (int)perm[*i];
            break;
        case GWR_OP_Gemm:
            gwr_layer_attr_int(l, "transA", 0, &a);
            if (a || *i != 0) return t;
            break;
        case GWR_OP_MatMul: /* M, and the batch dims when B has none to broadcast */
            if (r < 2 || gwr_tensor_rank(in) != r || *i >= r - 1 || gwr_layer_num_inputs(l) != 2 ||
                (*i < r - 2 && (gwr_tensor_rank(gwr_layer_input(l, 1)) < 0 || gwr_tensor_rank(gwr_layer_input(l, 1)) > 2)))
                return t;
            break;
        default:
            if (gwr_layer_num_inputs(l) != 1 || gwr_tensor_rank(in) != r)
                return t;
            switch (gwr_layer_type_of(l)) {
            case GWR_LAYER_ACTIVATION:
            case GWR_LAYER_UNARY:
            case GWR_LAYER_CAST:
            case GWR_LAYER_IDENTITY: break;
            default: return t;
            }
        }
        t = in;
    }
    return t;
}

/* Is the dim an unknown entry of s names dim i of x itself: the same
 * symbol (a dim_param names one value throughout a model, as --shape binds
 * it), or the same dim through the layers dim_root follows? */
static int same_dim(const shape_vals *s, int k, const gwr_tensor *x, int i) {
    if (!s->src[k]) return 0;
    gwr_dim d = gwr_tensor_dim(s->src[k], s->dim[k]);
    if (GWR_DIM_IS_SYM(d) && gwr_tensor_dim(x, i) == d) return 1;
    int a = s->dim[k], b = i;
    const gwr_tensor *ra = dim_root(s->src[k], &a), *rb = dim_root(x, &b);
    return ra == rb && a == b;
}

/* Reshape(x, shape values known but for at most one): the constant shape,
 * -1 for the one not known (every other known and positive). An entry that
 * is x's own dim at the same place (x.shape[i] at i, also through the
 * layers dim_root follows, or the same symbol) becomes 0, which copies it
 * (allowzero unset). */
static int fold_reshape_shape(gwr_rewrite_ctx *c, gwr_layer *l) {
    shape_vals s;
    gwr_tensor *shape = gwr_layer_num_inputs(l) == 2 ? gwr_layer_input(l, 1) : NULL;
    if (!shape || gwr_match_const_get(shape, &(gwr_match_const){0}) || vals_of(shape, &s, 0) || !s.dynamic)
        return gwr_rewrite_no_match(c, "the shape is a constant or not shape values of a Shape");
    int64_t az = 0;
    gwr_layer_attr_int(l, "allowzero", 0, &az);
    int copies = 0;
    for (int i = 0; i < s.n && !az; i++)
        if (!s.known[i] && same_dim(&s, i, gwr_layer_input(l, 0), i)) s.known[i] = 1, s.v[i] = 0, copies = 1;
    int u = first_unknown(&s), more = 0, positive = 1;
    for (int i = 0; i < s.n; i++) {
        if (i != u) positive &= s.v[i] > 0 || (copies && s.v[i] == 0);
        more += !s.known[i];
    }
    if (more > 1)
        return gwr_rewrite_no_match(c, "dynamic shape: %d entries of the shape of '%s' are dims that are not known "
                                    "(bind them with --shape)", more, gwr_layer_name(l));
    if (u >= 0 && !positive)
        return gwr_rewrite_no_match(c, "dynamic shape: entry %d of the shape of '%s' is not known and another is not "
                                    "positive", u, gwr_layer_name(l));
    gwr_tensor *out = gwr_layer_output(l, 0);
    if (gwr_tensor_output_index(out) >= 0 && gwr_tensor_rank(out) >= 0 && gwr_tensor_rank(out) != s.n)
        return gwr_rewrite_no_match(c, "output '%s' is declared of rank %d, the shape has %d entries", gwr_tensor_name(out),
                                    gwr_tensor_rank(out), s.n);
    if (u >= 0) s.v[u] = -1;
    gwr_tensor *y = shape_layer(c, "Reshape", gwr_layer_input(l, 0), s.n, s.v, az ? "allowzero" : NULL, az, 0);
    return y ? replace(c, l, NULL, y) : -1;
}

static int fold_shape_dims(gwr_rewrite_ctx *c, gwr_layer *l) {
    if (*gwr_layer_domain(l)) return gwr_rewrite_no_match(c, "not the default domain");
    return gwr_layer_op_id(l) == GWR_OP_Reshape ? fold_reshape_shape(c, l) : fold_known(c, l);
}

static const char *const shape_dim_ops[] = {"Gather", "Slice", "Concat", "Reshape", NULL};

const gwr_pattern_rewriter gwr_pattern_fold_shape_dims = {
    .name = "fold_shape_dims",
    .root_ops = shape_dim_ops,
    .match_and_rewrite = fold_shape_dims,
};

/* ---- the pass table's rows (pass_table.h) ---- */
#include "passes/pass_table.h"

GWR_PASS(compose_reshapes, CLEANUP, .pattern = &gwr_pattern_compose_reshapes, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_EXACT,
         .summary = "merge Reshape/Squeeze/Unsqueeze/Flatten chains into one Reshape, one Squeeze/Unsqueeze or none; "
                    "Flatten to Reshape");

GWR_PASS(fold_shape_dims, FOLD, .pattern = &gwr_pattern_fold_shape_dims, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_EXACT,
         .summary = "fold Shape -> Gather/Slice/Concat of known dims into constants; a Reshape target with one "
                    "dynamic dim gets -1");
