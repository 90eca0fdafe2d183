/* elementwise.c - shape rules of the element-wise ops: the broadcasting
 * arithmetic, logic and comparison ops (Add ... BitShift, the variadic Max
 * Min Sum Mean), the unary math functions and predicates (Abs ... Erf, Not,
 * IsNaN, IsInf), Where and Clip. As in exec/kernels/elementwise.c. */

#include "functional/infer/infer_internal.h"

static int is_compare(gwr_op_id id) {
    return id == GWR_OP_Equal || id == GWR_OP_Greater || id == GWR_OP_GreaterOrEqual || id == GWR_OP_Less ||
           id == GWR_OP_LessOrEqual;
}

static int is_logic(gwr_op_id id) { return id == GWR_OP_And || id == GWR_OP_Or || id == GWR_OP_Xor; }

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
    if (c->nin < 1) return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "needs at least one input");
    for (int i = 0; i < c->nin; i++) {
        gwr_tensor *t = gwr_fi_need(c, i, "operand");
        if (!t) return c->st;
        if (is_logic(c->id) && !gwr_fi_want_dtype(c, t, GWR_BOOL, "operand")) return c->st;
        /* unsigned integers; signed ones too since opset 28 */
        if (c->id == GWR_OP_BitShift && dt_of(t) != GWR_UNDEFINED && !gwr_dtype_is_int(dt_of(t))) {
            sbuf x;
            return gwr_fi_fail(c, GWR_ERR_TYPE, "operands must be integers, got %s", gwr_fi_tstr(t, &x));
        }
        /* Pow's exponent may have another dtype than its base. */
        if (c->id == GWR_OP_Pow && i > 0) continue;
        if (typed && !gwr_fi_same_dtype(c, typed, t)) return c->st;
        if (!typed && dt_of(t) != GWR_UNDEFINED) {
            typed = t;
            dt = dt_of(t);
        }
    }
    if (!bcast_inputs(c, 0, c->nin, &out)) return c->st;
    if (c->id == GWR_OP_Pow) dt = dt_of(inp(c, 0));
    if (is_compare(c->id) || is_logic(c->id)) dt = GWR_BOOL;
    return gwr_fi_put(c, 0, dt, &out);
}

static gwr_status infer_not(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input");
    if (!x || !gwr_fi_want_dtype(c, x, GWR_BOOL, "input")) return c->st;
    return gwr_fi_same_as_input(c, GWR_BOOL);
}

/* IsNaN, IsInf: a bool per element. */
static gwr_status infer_is_nan_inf(ictx *c) { return gwr_fi_same_as_input(c, GWR_BOOL); }

static gwr_status infer_clip(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input");
    if (!x) return c->st;
    for (int i = 1; i < 3; i++) {
        gwr_tensor *b = inp(c, i);
        shp s;
        sbuf t;
        if (!b) continue;
        if (!gwr_fi_same_dtype(c, x, b)) return c->st;
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
    if (!cond || !x || !y) return c->st;
    if (!gwr_fi_want_dtype(c, cond, GWR_BOOL, "condition") || !gwr_fi_same_dtype(c, x, y)) return c->st;
    if (!bcast_inputs(c, 0, 3, &out)) return c->st;
    return gwr_fi_put(c, 0, dt_of(x) != GWR_UNDEFINED ? dt_of(x) : dt_of(y), &out);
}

const gwr_fi_entry gwr_fi_rules_elementwise[] = {
    {GWR_OP_Add, infer_elementwise},
    {GWR_OP_Sub, infer_elementwise},
    {GWR_OP_Mul, infer_elementwise},
    {GWR_OP_Div, infer_elementwise},
    {GWR_OP_Pow, infer_elementwise},
    {GWR_OP_Mod, infer_elementwise},
    {GWR_OP_Max, infer_elementwise},
    {GWR_OP_Min, infer_elementwise},
    {GWR_OP_Sum, infer_elementwise},
    {GWR_OP_Mean, infer_elementwise},
    {GWR_OP_And, infer_elementwise},
    {GWR_OP_Or, infer_elementwise},
    {GWR_OP_Xor, infer_elementwise},
    {GWR_OP_Equal, infer_elementwise},
    {GWR_OP_Greater, infer_elementwise},
    {GWR_OP_GreaterOrEqual, infer_elementwise},
    {GWR_OP_Less, infer_elementwise},
    {GWR_OP_LessOrEqual, infer_elementwise},
    {GWR_OP_BitShift, infer_elementwise},
    {GWR_OP_Abs, gwr_fi_rule_same},
    {GWR_OP_Neg, gwr_fi_rule_same},
    {GWR_OP_Exp, gwr_fi_rule_same},
    {GWR_OP_Log, gwr_fi_rule_same},
    {GWR_OP_Sqrt, gwr_fi_rule_same},
    {GWR_OP_Reciprocal, gwr_fi_rule_same},
    {GWR_OP_Floor, gwr_fi_rule_same},
    {GWR_OP_Ceil, gwr_fi_rule_same},
    {GWR_OP_Round, gwr_fi_rule_same},
    {GWR_OP_Sign, gwr_fi_rule_same},
    {GWR_OP_Sin, gwr_fi_rule_same},
    {GWR_OP_Cos, gwr_fi_rule_same},
    {GWR_OP_Tan, gwr_fi_rule_same},
    {GWR_OP_Asin, gwr_fi_rule_same},
    {GWR_OP_Acos, gwr_fi_rule_same},
    {GWR_OP_Atan, gwr_fi_rule_same},
    {GWR_OP_Sinh, gwr_fi_rule_same},
    {GWR_OP_Cosh, gwr_fi_rule_same},
    {GWR_OP_Asinh, gwr_fi_rule_same},
    {GWR_OP_Acosh, gwr_fi_rule_same},
    {GWR_OP_Atanh, gwr_fi_rule_same},
    {GWR_OP_Erf, gwr_fi_rule_same},
    {GWR_OP_Not, infer_not},
    {GWR_OP_IsNaN, infer_is_nan_inf},
    {GWR_OP_IsInf, infer_is_nan_inf},
    {GWR_OP_Where, infer_where},
    {GWR_OP_Clip, infer_clip},
    {GWR_OP_CUSTOM, NULL},
};
