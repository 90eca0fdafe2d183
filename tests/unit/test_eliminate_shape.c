/* test_eliminate_shape.c - the shape passes of src/passes/eliminate_shape.c
 * (compose_reshapes, fold_shape_dims), push_transpose_through_elementwise
 * (transpose_push.c), and --shape and --opset through gwr_optimize: cases
 * where each must fire and cases where it must not (a middle layer with a
 * second reader or that is a network output, a 0 entry copying a dim that
 * is not known, a shape that is not constant, Squeeze/Unsqueeze axes that
 * do not cancel, two dynamic dims, a -1 beside a 0, an int constant a copy
 * through double would round), both Squeeze/Unsqueeze opset forms, run
 * through pass_case.h: debug rewrite, firing count, verify, and the outputs
 * compared bit for bit with a clone taken before (symbolic dims bound to 2
 * and 3), plus what is left after each rewrite. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "gwr/match.h"
#include "net_count.h"
#include "pass_case.h"

/* ---- builders ------------------------------------------------------------------- */

static gwr_network *new_net(int64_t opset) {
    gwr_network *net = gwr_network_new("shape");
    if (net && opset && gwr_network_set_opset(net, "", opset)) {
        gwr_network_free(net);
        return NULL;
    }
    return net;
}

/* x: float32 of rank r; entries < 0 of d are symbols: -1 "batch", -2 "seq". */
static gwr_tensor *xin(gwr_network *net, const char *name, int r, const int64_t *d) {
    gwr_dim dims[GWR_MAX_RANK];
    for (int i = 0; i < r; i++) dims[i] = d[i] >= 0 ? d[i] : gwr_network_dim_sym(net, d[i] == -1 ? "batch" : "seq");
    return gwr_network_add_input(net, name, GWR_FLOAT32, r, dims);
}

static gwr_tensor *call(gwr_network *net, const char *op, int nin, gwr_tensor *const *in, const gwr_args *a) {
    gwr_tensor *out = NULL;
    return net && gwr_op_call(net, "", op, nin, in, a, 1, &out) ? out : NULL;
}

static gwr_tensor *reshape(gwr_network *net, gwr_tensor *x, int n, const int64_t *v) {
    gwr_tensor *in[2] = {x, gwr_constant_i64s(net, n, v)};
    return call(net, "Reshape", 2, in, NULL);
}

/* Squeeze or Unsqueeze by axes: an attribute before opset 13, an input from. */
static gwr_tensor *sq(gwr_network *net, const char *op, gwr_tensor *x, int n, const int64_t *axes, int attr) {
    gwr_tensor *in[2] = {x, NULL}, *y = NULL;
    if (attr) { /* the op table's arities are opset 13's: build the layer by hand */
        gwr_layer *l = gwr_network_add_layer(net, op, "", NULL, 1, in, 1, NULL);
        if (l && !gwr_layer_set_ints(l, "axes", axes, n) && !gwr_layer_infer(l)) y = gwr_layer_output(l, 0);
        return y;
    }
    in[1] = gwr_constant_i64s(net, n, axes);
    return call(net, op, 2, in, NULL);
}

static gwr_tensor *flatten(gwr_network *net, gwr_tensor *x, int64_t axis) {
    gwr_args *a = gwr_args_new();
    gwr_tensor *y = a && !gwr_args_set_int(a, "axis", axis) ? call(net, "Flatten", 1, &x, a) : NULL;
    gwr_args_free(a);
    return y;
}

static gwr_network *finish(gwr_network *net, gwr_tensor *y) {
    if (!net || !y || gwr_network_mark_output(net, gwr_relu(net, y))) {
        gwr_network_free(net);
        return NULL;
    }
    return net;
}

/* Gather(Shape(x), idx) as a 1-D int64 tensor (idx 1-D). */
static gwr_tensor *dims_of(gwr_network *net, gwr_tensor *x, int n, const int64_t *idx) {
    gwr_tensor *s = call(net, "Shape", 1, &x, NULL);
    gwr_tensor *in[2] = {s, gwr_constant_i64s(net, n, idx)};
    return call(net, "Gather", 2, in, NULL);
}

/* ---- compose_reshapes ----------------------------------------------------------- */

static const int64_t d234[3] = {2, 3, 4}, b34[3] = {-1, 3, 4}, bs[2] = {-1, -2};

/* Reshape(Reshape(x [2,3,4], [6,4]), [0,2,2]) -> Reshape(x, [6,2,2]) */
static gwr_network *rr_static(void) {
    gwr_network *net = new_net(13);
    static const int64_t s1[2] = {6, 4}, s2[3] = {0, 2, 2};
    gwr_tensor *x = xin(net, "x", 3, d234);
    return finish(net, reshape(net, reshape(net, x, 2, s1), 3, s2));
}

/* x [batch,3,4]: Reshape [0,12] then [0,3,4]: the 0s copy batch all the way */
static gwr_network *rr_copied_zero(void) {
    gwr_network *net = new_net(13);
    static const int64_t s1[2] = {0, 12}, s2[3] = {0, 3, 4};
    gwr_tensor *x = xin(net, "x", 3, b34);
    return finish(net, reshape(net, reshape(net, x, 2, s1), 3, s2));
}

/* x [batch,3,4]: Reshape [-1,12] then [0,3,4]: the 0 copies a dim not known */
static gwr_network *rr_unknown_zero(void) {
    gwr_network *net = new_net(13);
    static const int64_t s1[2] = {-1, 12}, s2[3] = {0, 3, 4};
    gwr_tensor *x = xin(net, "x", 3, b34);
    return finish(net, reshape(net, reshape(net, x, 2, s1), 3, s2));
}

/* the middle also read elsewhere (how = 1) or a network output (how = 2) */
static gwr_network *rr_middle_used(int how) {
    gwr_network *net = new_net(13);
    static const int64_t s1[2] = {6, 4}, s2[1] = {-1};
    gwr_tensor *x = xin(net, "x", 3, d234), *m = reshape(net, x, 2, s1);
    gwr_tensor *y = reshape(net, m, 1, s2);
    if (how == 1 && m && gwr_network_mark_output(net, gwr_sigmoid(net, m))) return NULL;
    if (how == 2 && m && gwr_network_mark_output(net, m)) return NULL;
    return finish(net, y);
}
static gwr_network *rr_second_reader(void) { return rr_middle_used(1); }
static gwr_network *rr_middle_output(void) { return rr_middle_used(2); }

/* Reshape(Reshape(x, [6,4]), Shape(z)): the target is not a constant */
static gwr_network *rr_shape_input(void) {
    gwr_network *net = new_net(13);
    static const int64_t s1[2] = {6, 4};
    gwr_tensor *x = xin(net, "x", 3, d234);
    gwr_tensor *z = xin(net, "z", 3, b34); /* batch is bound to 2: Shape(z) is [2, 3, 4] */
    gwr_tensor *in[2] = {reshape(net, x, 2, s1), call(net, "Shape", 1, &z, NULL)};
    return finish(net, call(net, "Reshape", 2, in, NULL));
}

/* Unsqueeze(x [batch,seq], 1) then Squeeze(1): they cancel */
static gwr_network *cancel_at(int64_t opset) {
    gwr_network *net = new_net(opset);
    static const int64_t one[1] = {1};
    gwr_tensor *x = xin(net, "x", 2, bs);
    gwr_tensor *u = sq(net, "Unsqueeze", x, 1, one, opset < 13);
    return finish(net, sq(net, "Squeeze", u, 1, one, opset < 13));
}
static gwr_network *cancel11(void) { return cancel_at(11); }
static gwr_network *cancel13(void) { return cancel_at(13); }

/* x [batch,1,seq]: Unsqueeze(0) then Squeeze(2): not the same axes, two
 * dims not known: no Reshape either */
static gwr_network *no_cancel(void) {
    gwr_network *net = new_net(13);
    static const int64_t xd[3] = {-1, 1, -2}, zero[1] = {0}, two[1] = {2};
    gwr_tensor *x = xin(net, "x", 3, xd);
    return finish(net, sq(net, "Squeeze", sq(net, "Unsqueeze", x, 1, zero, 0), 1, two, 0));
}

/* Unsqueeze(Unsqueeze(x [batch,seq], 0), -1) -> Unsqueeze(x, [3, 0]) */
static gwr_network *unsq_unsq_at(int64_t opset) {
    gwr_network *net = new_net(opset);
    static const int64_t zero[1] = {0}, last[1] = {-1};
    gwr_tensor *x = xin(net, "x", 2, bs);
    return finish(net, sq(net, "Unsqueeze", sq(net, "Unsqueeze", x, 1, zero, opset < 13), 1, last, opset < 13));
}
static gwr_network *unsq_unsq11(void) { return unsq_unsq_at(11); }
static gwr_network *unsq_unsq13(void) { return unsq_unsq_at(13); }

/* Squeeze(Squeeze(x [batch,1,seq,1], 1), -1) -> Squeeze(x, [1, 3]) */
static gwr_network *sq_sq(void) {
    gwr_network *net = new_net(13);
    static const int64_t xd[4] = {-1, 1, -2, 1}, one[1] = {1}, last[1] = {-1};
    gwr_tensor *x = xin(net, "x", 4, xd);
    return finish(net, sq(net, "Squeeze", sq(net, "Squeeze", x, 1, one, 0), 1, last, 0));
}

/* Reshape(Unsqueeze(x [2,3,4], 0), [4, -1]) -> Reshape(x, [4, -1]) */
static gwr_network *reshape_of_unsq(void) {
    gwr_network *net = new_net(13);
    static const int64_t zero[1] = {0}, s[2] = {4, -1};
    gwr_tensor *x = xin(net, "x", 3, d234);
    return finish(net, reshape(net, sq(net, "Unsqueeze", x, 1, zero, 0), 2, s));
}

/* Flatten(x [batch,3,4], 1) -> Reshape(x, [0, 12]); then the Reshape after
 * it merges: two rewrites */
static gwr_network *flatten_reshape(void) {
    gwr_network *net = new_net(13);
    static const int64_t s[3] = {0, 2, 6};
    gwr_tensor *x = xin(net, "x", 3, b34);
    return finish(net, reshape(net, flatten(net, x, 1), 3, s));
}

/* Flatten(x [batch,seq,4], 2): [-1, 4] */
static gwr_network *flatten_axis2(void) {
    gwr_network *net = new_net(13);
    static const int64_t xd[3] = {-1, -2, 4};
    return finish(net, flatten(net, xin(net, "x", 3, xd), 2));
}

/* Flatten(x [batch,seq,seq], 2): neither side known */
static gwr_network *flatten_unknown(void) {
    gwr_network *net = new_net(13);
    static const int64_t xd[3] = {-1, -2, -2};
    return finish(net, flatten(net, xin(net, "x", 3, xd), 2));
}

/* ---- fold_shape_dims ------------------------------------------------------------ */

/* Reshape(x [batch,3,4,5], Concat(Gather(Shape(x), [0]), [3, 20])) -> [-1, 3, 20] */
static gwr_network *shape_one_dynamic(void) {
    gwr_network *net = new_net(13);
    static const int64_t xd[4] = {-1, 3, 4, 5}, i0[1] = {0}, rest[2] = {3, 20};
    gwr_tensor *x = xin(net, "x", 4, xd);
    gwr_tensor *parts[2] = {dims_of(net, x, 1, i0), gwr_constant_i64s(net, 2, rest)};
    gwr_tensor *in[2] = {x, gwr_concat(net, 2, parts, 0)};
    return finish(net, call(net, "Reshape", 2, in, NULL));
}

/* x [batch,seq,4,5]: Reshape(x, Concat(Slice(Shape(s), 0, 2), [20])): two
 * dims not known. With s = x they are x's own dims 0 and 1, copied: [0, 0,
 * 20]; with s = y [seq,batch,20] they are not x's dims at those places. */
static gwr_network *shape_two_dynamic_of(int other) {
    gwr_network *net = new_net(13);
    static const int64_t xd[4] = {-1, -2, 4, 5}, yd[3] = {-2, -1, 20}, st[1] = {0}, en[1] = {2}, rest[1] = {20};
    gwr_tensor *x = xin(net, "x", 4, xd), *src = other ? xin(net, "y", 3, yd) : x;
    gwr_tensor *sl = gwr_slice(net, call(net, "Shape", 1, &src, NULL), 1, st, en, NULL, NULL);
    gwr_tensor *parts[2] = {sl, gwr_constant_i64s(net, 1, rest)};
    gwr_tensor *in[2] = {x, gwr_concat(net, 2, parts, 0)};
    return finish(net, call(net, "Reshape", 2, in, NULL));
}

/* x [batch,3,4]: Reshape(x, Concat(Gather(Shape(s), [0]), [0, 4])): with s
 * = y [other,4] the 0 beside the dynamic entry is not positive; with s = x
 * the entry is x's own dim 0, copied: [0, 0, 4] */
static gwr_network *shape_beside_zero_of(int other) {
    gwr_network *net = new_net(13);
    static const int64_t i0[1] = {0}, rest[2] = {0, 4};
    gwr_dim yd[2] = {gwr_network_dim_sym(net, "other"), 4};
    gwr_tensor *x = xin(net, "x", 3, b34), *src = other ? gwr_network_add_input(net, "y", GWR_FLOAT32, 2, yd) : x;
    gwr_tensor *parts[2] = {dims_of(net, src, 1, i0), gwr_constant_i64s(net, 2, rest)};
    gwr_tensor *in[2] = {x, gwr_concat(net, 2, parts, 0)};
    return finish(net, call(net, "Reshape", 2, in, NULL));
}

static gwr_network *shape_two_dynamic(void) { return shape_two_dynamic_of(1); }
static gwr_network *shape_two_own_dims(void) { return shape_two_dynamic_of(0); }
static gwr_network *shape_dynamic_beside_zero(void) { return shape_beside_zero_of(1); }
static gwr_network *shape_own_dim_beside_zero(void) { return shape_beside_zero_of(0); }

/* Expand(k [1], Gather(Shape(x [batch,3,4]), [2, 1])): the dims 4 and 3 are
 * known, so the Gather folds into a constant (idle: index 0, batch) */
static gwr_network *gather_dims(const int64_t *idx) {
    gwr_network *net = new_net(13);
    static const float k[1] = {0.5f};
    int64_t one = 1;
    gwr_tensor *x = xin(net, "x", 3, b34);
    gwr_tensor *in[2] = {gwr_constant(net, GWR_FLOAT32, 1, &one, k), dims_of(net, x, 2, idx)};
    return finish(net, call(net, "Expand", 2, in, NULL));
}
static const int64_t known_idx[2] = {2, 1}, batch_idx[2] = {0, 1};
static gwr_network *gather_known(void) { return gather_dims(known_idx); }
static gwr_network *gather_batch(void) { return gather_dims(batch_idx); }

/* Expand(k [1], Slice(Shape(x [4,3,2]), st, en, [0], sp)): the bounds at the
 * ends of int64 (PyTorch's x.shape[1:] ends at INT64_MAX), which a copy
 * through double or an unchecked i += step would get wrong. Expected
 * (the ONNX spec's clamping, by hand): [3,2], [4,3,2], [2,3,4], [2], [3]. */
typedef struct slice_bounds { int64_t st, en, sp; } slice_bounds;
static const slice_bounds bounds[] = {
    {1, INT64_MAX, 1}, {INT64_MIN, INT64_MAX, 1}, {INT64_MAX, INT64_MIN, -1}, {-1, INT64_MIN, INT64_MIN},
    {1, INT64_MAX, INT64_MAX},
};
static const int64_t bounds_len[] = {2, 3, 3, 1, 1};
static gwr_network *slice_dims(const slice_bounds *b) {
    gwr_network *net = new_net(13);
    static const float k[1] = {0.5f};
    static const int64_t d432[3] = {4, 3, 2}, ax[1] = {0};
    int64_t one = 1;
    gwr_tensor *x = xin(net, "x", 3, d432);
    gwr_tensor *sl = gwr_slice(net, call(net, "Shape", 1, &x, NULL), 1, &b->st, &b->en, ax, &b->sp);
    gwr_tensor *in[2] = {gwr_constant(net, GWR_FLOAT32, 1, &one, k), sl};
    return finish(net, call(net, "Expand", 2, in, NULL));
}
static gwr_network *slice_tail(void) { return slice_dims(&bounds[0]); }
static gwr_network *slice_all(void) { return slice_dims(&bounds[1]); }
static gwr_network *slice_reversed(void) { return slice_dims(&bounds[2]); }
static gwr_network *slice_step_min(void) { return slice_dims(&bounds[3]); }
static gwr_network *slice_step_max(void) { return slice_dims(&bounds[4]); }

/* ---- push_transpose_through_elementwise ---------------------------------------- */

static gwr_tensor *tr(gwr_network *net, gwr_tensor *x, int n, const int64_t *perm) { return gwr_transpose(net, x, n, perm); }

/* how: 0 Relu(x+0.5) between two swaps (cancel); 1 perms [1,0,2] then
 * [0,2,1] (one left) through 2*x, Clip(0, 1), Cast to double; 2 a [2]
 * constant (per channel: permuted); 3 two data operands; 4 the inner
 * Transpose also read elsewhere; 5 no inner Transpose; 6 a Softmax between */
static gwr_network *push_case(int how) {
    static const int64_t swap[2] = {1, 0}, p1[3] = {1, 0, 2}, p2[3] = {0, 2, 1}, d23[2] = {2, 3};
    static const float per[2] = {1, 2};
    gwr_network *net = new_net(13);
    int64_t two = 2;
    if (how == 1) {
        gwr_tensor *t = tr(net, xin(net, "x", 3, d234), 3, p1);
        gwr_tensor *m = gwr_mul(net, gwr_constant_f32(net, 2), t);
        gwr_tensor *c = gwr_clip(net, m, gwr_constant_f32(net, 0), gwr_constant_f32(net, 1));
        gwr_args *a = gwr_args_new();
        gwr_tensor *d = a && !gwr_args_set_int(a, "to", GWR_FLOAT64) ? call(net, "Cast", 1, &c, a) : NULL;
        gwr_args_free(a);
        return finish(net, tr(net, d, 3, p2));
    }
    gwr_tensor *x = xin(net, "x", 2, d23), *t = how == 5 ? x : tr(net, x, 2, swap), *e;
    if (how == 2) e = gwr_add(net, t, gwr_constant(net, GWR_FLOAT32, 1, &two, per));
    else if (how == 3) e = gwr_add(net, t, t);
    else if (how == 6) e = gwr_softmax(net, t, -1);
    else e = gwr_relu(net, gwr_add(net, t, gwr_constant_f32(net, 0.5f)));
    if (how == 4 && t && gwr_network_mark_output(net, gwr_sigmoid(net, t))) return NULL;
    return finish(net, tr(net, e, 2, swap));
}
/* x [2,3,4]: Transpose [2,0,1] -> [4,2,3], times c [2,1] (broadcast
 * along the last two dims), Transpose [1,2,0]: the perms cancel and c
 * becomes [2,1,1] (padded to [1,2,1], permuted by [1,2,0]); with huge
 * (int64 values past 2^53, which a copy through double would round), idle */
static gwr_network *push_permuted(int huge) {
    static const int64_t p1[3] = {2, 0, 1}, p2[3] = {1, 2, 0}, cd[2] = {2, 1};
    static const float c[2] = {1.5f, -2};
    static const int64_t big[2] = {((int64_t)1 << 60) + 1, 3};
    gwr_network *net = new_net(13);
    gwr_tensor *x = xin(net, "x", 3, d234), *t = tr(net, x, 3, p1), *m;
    if (huge) {
        gwr_args *a = gwr_args_new();
        gwr_tensor *i = a && !gwr_args_set_int(a, "to", GWR_INT64) ? call(net, "Cast", 1, &t, a) : NULL;
        gwr_args_free(a);
        m = gwr_add(net, i, gwr_constant(net, GWR_INT64, 2, cd, big));
    } else {
        m = gwr_mul(net, t, gwr_constant(net, GWR_FLOAT32, 2, cd, c));
    }
    gwr_tensor *y = tr(net, m, 3, p2);
    if (!net || !y || gwr_network_mark_output(net, y)) {
        gwr_network_free(net);
        return NULL;
    }
    return net;
}
static gwr_network *push_permuted_const(void) { return push_permuted(0); }
static gwr_network *push_huge_int(void) { return push_permuted(1); }
static gwr_network *push_cancel(void) { return push_case(0); }
static gwr_network *push_compose(void) { return push_case(1); }
static gwr_network *push_per_channel(void) { return push_case(2); }
static gwr_network *push_two_operands(void) { return push_case(3); }
static gwr_network *push_second_reader(void) { return push_case(4); }
static gwr_network *push_lone(void) { return push_case(5); }
static gwr_network *push_softmax(void) { return push_case(6); }

/* ---- the cases -------------------------------------------------------------------- */

typedef struct shape_case {
    const char *name;
    pass_case_build_fn build;
    const char *label;
    int64_t fired;
    const char *op;    /* an op whose count after is checked (NULL: none) */
    int64_t count;
} shape_case;

static const shape_case cases[] = {
    {"reshape of reshape", rr_static, "compose_reshapes", 1, "Reshape", 1},
    {"0 entries copied twice", rr_copied_zero, "compose_reshapes", 1, "Reshape", 1},
    {"0 entry of a dim not known", rr_unknown_zero, "compose_reshapes", 0, "Reshape", 2},
    {"middle with a second reader", rr_second_reader, "compose_reshapes", 0, "Reshape", 2},
    {"middle is an output", rr_middle_output, "compose_reshapes", 0, "Reshape", 2},
    {"shape not constant", rr_shape_input, "compose_reshapes", 0, "Reshape", 2},
    {"cancel, opset 11", cancel11, "compose_reshapes", 1, "Unsqueeze", 0},
    {"cancel, opset 13", cancel13, "compose_reshapes", 1, "Squeeze", 0},
    {"other axes, dims unknown", no_cancel, "compose_reshapes", 0, "Squeeze", 1},
    {"unsqueeze twice, opset 11", unsq_unsq11, "compose_reshapes", 1, "Unsqueeze", 1},
    {"unsqueeze twice, opset 13", unsq_unsq13, "compose_reshapes", 1, "Unsqueeze", 1},
    {"squeeze twice", sq_sq, "compose_reshapes", 1, "Squeeze", 1},
    {"reshape of unsqueeze", reshape_of_unsq, "compose_reshapes", 1, "Unsqueeze", 0},
    {"flatten then reshape", flatten_reshape, "compose_reshapes", 2, "Reshape", 1},
    {"flatten axis 2", flatten_axis2, "compose_reshapes", 1, "Flatten", 0},
    {"flatten, nothing known", flatten_unknown, "compose_reshapes", 0, "Flatten", 1},
    {"one dynamic dim", shape_one_dynamic, "fold_shape_dims", 1, "Shape", 0},
    {"two dynamic dims", shape_two_dynamic, "fold_shape_dims", 0, "Shape", 1},
    {"dynamic beside a 0", shape_dynamic_beside_zero, "fold_shape_dims", 0, "Shape", 1},
    {"two own dynamic dims", shape_two_own_dims, "fold_shape_dims", 1, "Shape", 0},
    {"own dynamic dim beside a 0", shape_own_dim_beside_zero, "fold_shape_dims", 1, "Shape", 0},
    {"gather of known dims", gather_known, "fold_shape_dims", 1, "Shape", 0},
    {"gather of batch", gather_batch, "fold_shape_dims", 0, "Gather", 1},
    {"slice 1..INT64_MAX", slice_tail, "fold_shape_dims", 1, "Shape", 0},
    {"slice INT64_MIN..INT64_MAX", slice_all, "fold_shape_dims", 1, "Shape", 0},
    {"slice INT64_MAX..INT64_MIN step -1", slice_reversed, "fold_shape_dims", 1, "Shape", 0},
    {"slice step INT64_MIN", slice_step_min, "fold_shape_dims", 1, "Shape", 0},
    {"slice step INT64_MAX", slice_step_max, "fold_shape_dims", 1, "Shape", 0},
    {"transposes cancel", push_cancel, "push_transpose_through_elementwise", 1, "Transpose", 0},
    {"transposes compose", push_compose, "push_transpose_through_elementwise", 1, "Transpose", 1},
    {"per-channel constant", push_per_channel, "push_transpose_through_elementwise", 1, "Transpose", 0},
    {"constant padded and permuted", push_permuted_const, "push_transpose_through_elementwise", 1, "Transpose", 0},
    {"int constant past 2^53", push_huge_int, "push_transpose_through_elementwise", 0, "Transpose", 2},
    {"two data operands", push_two_operands, "push_transpose_through_elementwise", 0, "Transpose", 2},
    {"inner Transpose read elsewhere", push_second_reader, "push_transpose_through_elementwise", 0, "Transpose", 2},
    {"no inner Transpose", push_lone, "push_transpose_through_elementwise", 0, "Transpose", 1},
    {"a Softmax between", push_softmax, "push_transpose_through_elementwise", 0, "Transpose", 2},
};

/* pass_case_run frees its network: build again, rewrite alone, count. */
static int64_t count_after(const shape_case *sc) {
    gwr_network *net = sc->build();
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    int64_t n = -1;
    if (net && m && !gwr_passes_add(m, sc->label) && !gwr_rewrite_manager_rewrite(m, net, NULL))
        n = count_op(net, sc->op);
    gwr_rewrite_manager_free(m);
    gwr_network_free(net);
    return n;
}

TEST(shape_cases) {
    static const gwr_dim_binding bind[] = {{"batch", 2}, {"seq", 3}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const shape_case *sc = &cases[i];
        pass_case c = {.build = sc->build, .label = sc->label, .expect = sc->fired, .nbind = 2, .bind = bind, .seed = 3};
        pass_case_result r = pass_case_run(&c);
        if (!CHECK(r.ok)) fprintf(stderr, "  case '%s' (%s): %s\n", sc->name, sc->label, r.why);
        int64_t n = count_after(sc);
        if (sc->op && !CHECK_EQ_INT(n, sc->count)) fprintf(stderr, "  case '%s': %s x%lld left\n", sc->name, sc->op, (long long)n);
    }
}

/* The folded Slice bounds are the spec's dims (not only what the executor
 * computes on them): the constant the Expand reads after the rewrite. */
TEST(slice_bounds_exact) {
    static const int64_t want[5][3] = {{3, 2}, {4, 3, 2}, {2, 3, 4}, {2}, {3}};
    for (int i = 0; i < 5; i++) {
        gwr_network *net = slice_dims(&bounds[i]);
        gwr_rewrite_manager *m = gwr_rewrite_manager_new();
        CHECK(net && m && !gwr_passes_add(m, "fold_shape_dims") && !gwr_rewrite_manager_rewrite(m, net, NULL));
        gwr_layer *relu = net ? gwr_tensor_parent(gwr_network_output(net, 0)) : NULL;
        gwr_layer *ex = relu ? gwr_tensor_parent(gwr_layer_input(relu, 0)) : NULL;
        int64_t got[GWR_MAX_RANK];
        int n = ex ? gwr_match_const_ints(gwr_layer_input(ex, 1), got, GWR_MAX_RANK) : -1;
        if (CHECK_EQ_INT(n, bounds_len[i]))
            for (int d = 0; d < n; d++) CHECK_EQ_INT(got[d], want[i][d]);
        gwr_rewrite_manager_free(m);
        gwr_network_free(net);
    }
}

/* Dims whose products pass int64 (2^32 x 2^32): compose_reshapes and
 * fold_shape_dims refuse instead of computing an overflowed target (UBSan
 * in the sanitizer build), and leave the network valid. */
TEST(huge_dims) {
    static const int64_t big[3] = {(int64_t)1 << 32, (int64_t)1 << 32, 4}, m1[1] = {-1}, i01[2] = {0, 1};
    /* Reshape(Flatten(x, 2), [-1]): the Flatten's lead would be 2^64 */
    gwr_network *net = new_net(13);
    gwr_tensor *x = xin(net, "x", 3, big);
    gwr_tensor *f = net && x ? flatten(net, x, 2) : NULL;
    gwr_network *n1 = f ? finish(net, reshape(net, f, 1, m1)) : NULL;
    if (!n1) gwr_network_free(net);
    /* Reshape(x, Concat(Gather(Shape(x), [0, 1]), [-1])) */
    gwr_network *n2 = new_net(13);
    gwr_tensor *x2 = xin(n2, "x", 3, big);
    gwr_tensor *parts[2] = {dims_of(n2, x2, 2, i01), gwr_constant_i64s(n2, 1, m1)};
    gwr_tensor *in[2] = {x2, gwr_concat(n2, 2, parts, 0)};
    n2 = finish(n2, call(n2, "Reshape", 2, in, NULL));
    gwr_network *nets[2] = {n1, n2};
    for (int i = 0; i < 2; i++) {
        gwr_rewrite_manager *m = gwr_rewrite_manager_new();
        CHECK(nets[i] && m && !gwr_passes_add(m, "compose_reshapes") && !gwr_passes_add(m, "fold_shape_dims"));
        CHECK(nets[i] && m && !gwr_rewrite_manager_rewrite(m, nets[i], NULL));
        CHECK(nets[i] && !gwr_network_verify(nets[i]));
        gwr_rewrite_manager_free(m);
        gwr_network_free(nets[i]);
    }
}

/* The report names the Reshape left with a computed shape, and binding the
 * dims (gwr_optimize_options.bind) lets it fold. */
TEST(report_and_bind) {
    gwr_network *net = shape_two_dynamic();
    gwr_optimize_options o = {.level = GWR_LEVEL_BASIC};
    gwr_optimize_report *r = NULL;
    CHECK(net && !gwr_optimize(net, &o, &r));
    const char *note = NULL;
    for (int i = 0; i < gwr_optimize_report_count(r); i++)
        if (!strcmp(gwr_optimize_report_pass(r, i)->label, "fold_shape_dims")) note = gwr_optimize_report_pass(r, i)->note;
    if (!CHECK(note && strstr(note, "Reshape"))) fprintf(stderr, "  note: %s\n", note ? note : "(none)");
    gwr_optimize_report_free(r);
    gwr_network_free(net);

    static const gwr_dim_binding seq[] = {{"seq", 3}};
    net = shape_two_dynamic();
    o.nbind = 1, o.bind = seq;
    CHECK(net && !gwr_optimize(net, &o, NULL));
    CHECK_EQ_INT(count_op(net, "Shape"), 0);
    CHECK(gwr_tensor_dim(gwr_network_input(net, 0), 1) == 3);
    gwr_network_free(net);

    /* a negative value is refused */
    static const gwr_dim_binding bad[] = {{"seq", -4}};
    net = shape_two_dynamic();
    o.bind = bad;
    CHECK(net && gwr_optimize(net, &o, NULL) == GWR_ERR_INVALID_ARG);
    gwr_network_free(net);
}

/* A dim named as a sum ("past + seq", optimum's attention_mask dim) takes
 * the sum of the bound terms (integers allowed); a term left unbound keeps
 * the symbol. */
static gwr_network *sum_dim(const char *name) {
    gwr_network *net = new_net(13);
    gwr_dim d[2] = {2, gwr_network_dim_sym(net, name)};
    gwr_tensor *x = gwr_network_add_input(net, "mask", GWR_FLOAT32, 2, d);
    return finish(net, call(net, "Shape", 1, &x, NULL));
}

TEST(bind_sum_dims) {
    static const gwr_dim_binding both[] = {{"past", 3}, {"seq", 2}}, one[] = {{"past", 3}};
    static const struct { const char *name; const gwr_dim_binding *b; int nb; int64_t want; } sums[] = {
        {"past + seq", both, 2, 5}, {"past+seq", both, 2, 5}, {"past + 2", one, 1, 5},
        {"past + seq", one, 1, -1}, {"past + other", both, 2, -1}, {"past", one, 1, 3}, {"past + ", both, 2, -1}};
    for (size_t i = 0; i < sizeof sums / sizeof *sums; i++) {
        gwr_network *net = sum_dim(sums[i].name);
        gwr_optimize_options o = {.level = GWR_LEVEL_BASIC, .bind = sums[i].b, .nbind = sums[i].nb};
        CHECK(net && !gwr_optimize(net, &o, NULL));
        gwr_dim d = gwr_tensor_dim(gwr_network_input(net, 0), 1);
        int ok = CHECK(sums[i].want < 0 ? !GWR_DIM_IS_KNOWN(d) : d == sums[i].want);
        ok &= CHECK_EQ_INT(count_op(net, "Shape"), sums[i].want < 0);
        if (!ok)
            fprintf(stderr, "  '%s': dim %lld\n", sums[i].name, (long long)d);
        gwr_network_free(net);
    }
}

/* --opset through the API: Unsqueeze's axes attribute becomes an input at
 * 13 (and the opset is 13); a Softmax (changed at 13) refuses, naming it,
 * and changes nothing; lowering is refused. */
static gwr_network *opset11(int softmax) {
    gwr_network *net = new_net(11);
    static const int64_t zero[1] = {0};
    gwr_tensor *x = xin(net, "x", 2, bs), *y = sq(net, "Unsqueeze", x, 1, zero, 1);
    if (softmax && y) {
        gwr_layer *l = gwr_network_add_layer(net, "Softmax", "", "sm", 1, &y, 1, NULL);
        y = l && !gwr_layer_infer(l) ? gwr_layer_output(l, 0) : NULL;
    }
    return finish(net, y);
}

TEST(opset_raise) {
    gwr_network *net = opset11(0);
    gwr_optimize_options o = {.level = GWR_LEVEL_BASIC, .opset = 13};
    CHECK(net && !gwr_optimize(net, &o, NULL));
    CHECK_EQ_INT(gwr_network_opset(net, ""), 13);
    for (int64_t i = 0; net && i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (strcmp(gwr_layer_op(l), "Unsqueeze")) continue;
        CHECK_EQ_INT(gwr_layer_num_inputs(l), 2);
        CHECK(!gwr_layer_has_attr(l, "axes"));
    }
    gwr_network_free(net);

    net = opset11(1);
    gwr_network *before = net ? gwr_network_clone(net) : NULL;
    CHECK(net && gwr_optimize(net, &o, NULL) == GWR_ERR_UNSUPPORTED);
    CHECK(net && strstr(gwr_network_errmsg(net), "Softmax") && strstr(gwr_network_errmsg(net), "'sm'"));
    char why[200];
    CHECK(before && gwr_network_equal(before, net, why, sizeof why));
    CHECK_EQ_INT(gwr_network_opset(net, ""), 11);
    o.opset = 9;
    CHECK(net && gwr_optimize(net, &o, NULL) == GWR_ERR_INVALID_ARG);
    CHECK(before && gwr_network_equal(before, net, why, sizeof why));
    gwr_network_free(before);
    gwr_network_free(net);
}

int main(void) {
    RUN(shape_cases);
    RUN(slice_bounds_exact);
    RUN(huge_dims);
    RUN(report_and_bind);
    RUN(bind_sum_dims);
    RUN(opset_raise);
    return check_report();
}
