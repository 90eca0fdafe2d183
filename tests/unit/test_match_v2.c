/* test_match_v2.c - matcher v2 of gwr/match.h: op alternatives and EITHER
 * sub-patterns, SPLAT tolerances, attribute captures, constraints on
 * captures (dtype, rank, dims equalities, where), REST minimums, every
 * output of a multi-output node under the single-reader rule, the rule
 * driver's gate and gwr_match_finish through a manager, the shared helpers,
 * and gwr_match_check refusing malformed v2 tables. Each feature fires
 * where it should and not where it must not. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"

static gwr_network *net_with(gwr_tensor **x, gwr_dtype dt, int rank, const gwr_dim *dims) {
    gwr_network *net = gwr_network_new("v2");
    *x = gwr_network_add_input(net, "x", dt, rank, dims);
    return net;
}

static int match_root(const gwr_match_pattern *p, gwr_tensor *y, gwr_match *m) {
    return gwr_match_layer(p, gwr_tensor_parent(y), m);
}

static void check_why(const gwr_match *m, const char *needle) {
    char buf[256];
    gwr_match_why(m, buf, sizeof buf);
    CHECK_CONTAINS(buf, needle);
}

static const gwr_dim d23[2] = {2, 3};

/* ---- alternatives ------------------------------------------------------------ */

enum { X, Y, C, W, NCAP };

static const char *const act_ops[] = {"Relu", "Sigmoid", NULL};
static const gwr_match_node act_mul[] = {
    {.ops = act_ops, .in = {GWR_M_CAP(X)}},
    GWR_M_OP("Mul", GWR_M_NODE(0), GWR_M_CAP(X)),
};
static const gwr_match_pattern act_mul_p = {"act_mul", GWR_M_NODES(act_mul), NULL, NULL};
static const gwr_match_node act_sub[] = {
    {.ops = act_ops, .in = {GWR_M_CAP(X)}},
    GWR_M_OP("Sub", GWR_M_NODE(0), GWR_M_CAP(X)),
};
static const gwr_match_pattern act_sub_p = {"act_sub", GWR_M_NODES(act_sub), NULL, NULL};

TEST(op_alternatives) {
    CHECK_OK(gwr_match_check(&act_mul_p));
    gwr_tensor *x;
    gwr_network *net = net_with(&x, GWR_FLOAT32, 2, d23);
    gwr_tensor *r = gwr_mul(net, gwr_relu(net, x), x), *s = gwr_mul(net, x, gwr_sigmoid(net, x)), *t = gwr_mul(net, gwr_tanh(net, x), x);
    gwr_match m;
    CHECK_EQ_INT(match_root(&act_mul_p, r, &m), 1);
    CHECK_STR(gwr_layer_op(m.layers[0]), "Relu");
    CHECK_EQ_INT(match_root(&act_mul_p, s, &m), 1); /* and the other operand order */
    CHECK_STR(gwr_layer_op(m.layers[0]), "Sigmoid");
    CHECK(m.captures[X] == x);
    CHECK_EQ_INT(match_root(&act_mul_p, t, &m), 0);
    CHECK_EQ_INT(match_root(&act_sub_p, gwr_sub(net, gwr_tanh(net, x), x), &m), 0);
    check_why(&m, "node 0 (Relu|...)");
    check_why(&m, "another op");
    gwr_network_free(net);
}

/* Sqrt of Pow(x, 2) or of Mul(x, x): either sub-pattern. */
static const gwr_match_node sq_nodes[] = {
    GWR_M_OP("Pow", GWR_M_CAP(X), GWR_M_SPLAT(C, 2.0)),
    GWR_M_OP("Mul", GWR_M_CAP(X), GWR_M_CAP(X)),
    GWR_M_OP("Sqrt", GWR_M_EITHER(0, 1)),
};
static const gwr_match_pattern sq_p = {"sqrt_square", GWR_M_NODES(sq_nodes), NULL, NULL};

/* Div(d, s) or Mul(d, Reciprocal(s)): one root with two ops, a where
 * pairing the op with the alternative. */
static const char *const div_mul[] = {"Div", "Mul", NULL};
static int div_pairs(const gwr_match *m, void *user) {
    (void)user;
    return !strcmp(gwr_layer_op(m->layers[2]), "Div") == (m->layers[1] == NULL);
}
static const gwr_match_node dm_nodes[] = {
    GWR_M_OP("Sqrt", GWR_M_CAP(Y)),
    GWR_M_OP("Reciprocal", GWR_M_NODE(0)),
    {.ops = div_mul, .in = {GWR_M_CAP(X), GWR_M_EITHER(0, 1)}, .where = div_pairs},
};
static const gwr_match_pattern dm_p = {"div_or_mul_recip", GWR_M_NODES(dm_nodes), NULL, NULL};

TEST(either_sub_patterns) {
    CHECK_OK(gwr_match_check(&sq_p));
    gwr_tensor *x;
    gwr_network *net = net_with(&x, GWR_FLOAT32, 2, d23);
    gwr_tensor *z = gwr_network_add_input(net, "z", GWR_FLOAT32, 2, d23);
    gwr_tensor *a = gwr_sqrt(net, gwr_pow(net, x, gwr_constant_f32(net, 2)));
    gwr_tensor *b = gwr_sqrt(net, gwr_mul(net, x, x));
    gwr_tensor *c = gwr_sqrt(net, gwr_mul(net, x, z));
    gwr_tensor *d = gwr_sqrt(net, gwr_pow(net, x, gwr_constant_f32(net, 3)));
    gwr_match m;
    CHECK_EQ_INT(match_root(&sq_p, a, &m), 1);
    CHECK(m.layers[0] && !m.layers[1] && m.captures[X] == x);
    CHECK_EQ_INT(match_root(&sq_p, b, &m), 1);
    CHECK(!m.layers[0] && m.layers[1] && m.captures[X] == x);
    CHECK_EQ_INT(match_root(&sq_p, c, &m), 0); /* x * z: two tensors for x */
    check_why(&m, "two different tensors");
    CHECK_EQ_INT(match_root(&sq_p, d, &m), 0); /* Pow(x, 3) */
    check_why(&m, "another value");
    /* The root's two ops and the where. */
    CHECK_OK(gwr_match_check(&dm_p));
    gwr_tensor *y1 = gwr_div(net, x, gwr_sqrt(net, z)), *y2 = gwr_mul(net, gwr_reciprocal(net, gwr_sqrt(net, z)), x);
    gwr_tensor *bad1 = gwr_div(net, x, gwr_reciprocal(net, gwr_sqrt(net, z))), *bad2 = gwr_mul(net, x, gwr_sqrt(net, z));
    CHECK_EQ_INT(match_root(&dm_p, y1, &m), 1);
    CHECK(m.layers[0] && !m.layers[1]);
    CHECK_EQ_INT(match_root(&dm_p, y2, &m), 1);
    CHECK(m.layers[0] && m.layers[1] && m.captures[Y] == z);
    CHECK_EQ_INT(match_root(&dm_p, bad1, &m), 0);
    check_why(&m, "where predicate refused");
    CHECK_EQ_INT(match_root(&dm_p, bad2, &m), 0);
    check_why(&m, "where predicate refused");
    /* Div is not commutative: Div(Sqrt(z), x) must not match as Div(x, Sqrt(z)). */
    gwr_tensor *rev = gwr_div(net, gwr_sqrt(net, z), x);
    CHECK_EQ_INT(match_root(&dm_p, rev, &m), 0);
    gwr_network_free(net);
}

/* ---- constants ---------------------------------------------------------------- */

TEST(splat_tolerance_and_broadcast) {
    static const gwr_match_node strict[] = {GWR_M_OP("Mul", GWR_M_CAP(X), GWR_M_SPLAT(C, 1.4142135))};
    static const gwr_match_node loose[] = {GWR_M_OP("Mul", GWR_M_CAP(X), GWR_M_SPLAT_TOL(C, 1.4142135, 1e-4))};
    static const gwr_match_pattern ps = {"strict", GWR_M_NODES(strict), NULL, NULL}, pl = {"loose", GWR_M_NODES(loose), NULL, NULL};
    gwr_tensor *x;
    gwr_network *net = net_with(&x, GWR_FLOAT32, 2, d23);
    int64_t cd[2] = {2, 3};
    float near[6] = {1.41421f, 1.41421f, 1.41421f, 1.41421f, 1.41421f, 1.41421f}; /* 3.5e-6 off */
    float mixed[6] = {1.41421f, 1.41421f, 1.41421f, 1.41421f, 1.41421f, 1.5f};
    gwr_tensor *yn = gwr_mul(net, x, gwr_constant(net, GWR_FLOAT32, 2, cd, near));
    gwr_tensor *ym = gwr_mul(net, gwr_constant(net, GWR_FLOAT32, 2, cd, mixed), x);
    gwr_tensor *ye = gwr_mul(net, x, gwr_constant_f32(net, 1.4142135f)); /* rank 0, broadcast */
    gwr_match m;
    CHECK_EQ_INT(match_root(&ps, yn, &m), 0); /* default 1e-6 * 1.41 */
    check_why(&m, "another value");
    CHECK_EQ_INT(match_root(&pl, yn, &m), 1); /* a [2,3] constant, every element near */
    CHECK_EQ_INT(match_root(&pl, ym, &m), 0); /* one element 1.5 */
    CHECK_EQ_INT(match_root(&ps, ye, &m), 1);
    CHECK_EQ_INT(match_root(&pl, ye, &m), 1);
    gwr_network_free(net);
}

/* A tolerance given as 0 is exact (an epsilon 1e-6 is not 0); SPLAT alone keeps its 1e-6 default. */
TEST(splat_tolerance_zero_is_exact) {
    static const gwr_match_node exact[] = {GWR_M_OP("Add", GWR_M_CAP(X), GWR_M_SPLAT_TOL(C, 0.0, 0.0))};
    static const gwr_match_node dflt[] = {GWR_M_OP("Add", GWR_M_CAP(X), GWR_M_SPLAT(C, 0.0))};
    static const gwr_match_pattern pe = {"exact", GWR_M_NODES(exact), NULL, NULL}, pd = {"dflt", GWR_M_NODES(dflt), NULL, NULL};
    gwr_tensor *x;
    gwr_network *net = net_with(&x, GWR_FLOAT32, 2, d23);
    gwr_tensor *eps = gwr_add(net, x, gwr_constant_f32(net, 1e-6f)), *zero = gwr_add(net, x, gwr_constant_f32(net, 0.0f));
    gwr_match m;
    CHECK_EQ_INT(match_root(&pe, eps, &m), 0);
    CHECK_EQ_INT(match_root(&pe, zero, &m), 1);
    CHECK_EQ_INT(match_root(&pd, eps, &m), 1);
    gwr_network_free(net);
}

/* ---- attribute captures ------------------------------------------------------ */

enum { P1, P2, AXIS };
static const gwr_match_node tt_nodes[] = {
    {.op = "Transpose", .in = {GWR_M_CAP(X)}, .attrs = {GWR_MA_CAPTURE("perm", P1)}},
    {.op = "Transpose", .in = {GWR_M_NODE(0)}, .attrs = {GWR_MA_CAPTURE("perm", P2)}},
};
static const gwr_match_pattern tt_p = {"tt", GWR_M_NODES(tt_nodes), NULL, NULL};
static const gwr_match_node same_nodes[] = {
    {.op = "Transpose", .in = {GWR_M_CAP(X)}, .attrs = {GWR_MA_CAPTURE("perm", P1)}},
    {.op = "Transpose", .in = {GWR_M_NODE(0)}, .attrs = {GWR_MA_CAPTURE("perm", P1)}},
};
static const gwr_match_pattern same_p = {"tt_same", GWR_M_NODES(same_nodes), NULL, NULL};
static const gwr_match_node sm_nodes[] = {
    {.op = "Softmax", .in = {GWR_M_CAP(X)}, .attrs = {GWR_MA_CAPTURE_INT_OR("axis", AXIS, -1)}},
};
static const gwr_match_pattern sm_p = {"sm", GWR_M_NODES(sm_nodes), NULL, NULL};

static gwr_tensor *softmax(gwr_network *net, gwr_tensor *x, int64_t axis) {
    gwr_layer *l = gwr_network_add_layer(net, "Softmax", "", NULL, 1, &x, 1, NULL);
    if (axis != 99) gwr_layer_set_int(l, "axis", axis);
    gwr_layer_infer(l);
    return gwr_layer_output(l, 0);
}

TEST(attribute_captures) {
    gwr_dim d3[3] = {2, 3, 4};
    gwr_tensor *x;
    gwr_network *net = net_with(&x, GWR_FLOAT32, 3, d3);
    int64_t pa[3] = {1, 0, 2}, pb[3] = {0, 2, 1};
    gwr_tensor *ab = gwr_transpose(net, gwr_transpose(net, x, 3, pa), 3, pb);
    gwr_tensor *aa = gwr_transpose(net, gwr_transpose(net, x, 3, pa), 3, pa);
    gwr_tensor *rev = gwr_transpose(net, gwr_transpose(net, x, 3, pa), 3, NULL); /* perm absent */
    gwr_match m;
    CHECK_OK(gwr_match_check(&tt_p));
    CHECK_EQ_INT(match_root(&tt_p, ab, &m), 1);
    CHECK(m.attrs[P1].type == GWR_ATTR_INTS && m.attrs[P1].n == 3 && !m.attrs[P1].is_default);
    CHECK(m.attrs[P1].ints[0] == 1 && m.attrs[P1].ints[1] == 0 && m.attrs[P1].ints[2] == 2);
    CHECK(m.attrs[P2].ints[0] == 0 && m.attrs[P2].ints[1] == 2 && m.attrs[P2].ints[2] == 1);
    CHECK_EQ_INT(m.attrs[AXIS].type, GWR_ATTR_UNDEFINED);
    if (gwr_layer_find_attr(gwr_tensor_parent(rev), "perm") < 0) {
        CHECK_EQ_INT(match_root(&tt_p, rev, &m), 0); /* absent, no default */
        check_why(&m, "captured attribute is absent");
    }
    /* One slot twice: the values must be equal. */
    CHECK_EQ_INT(match_root(&same_p, aa, &m), 1);
    CHECK_EQ_INT(match_root(&same_p, ab, &m), 0);
    check_why(&m, "two different values");
    /* A default for an absent attribute. */
    CHECK_EQ_INT(match_root(&sm_p, softmax(net, x, 99), &m), 1);
    CHECK(m.attrs[AXIS].type == GWR_ATTR_INT && m.attrs[AXIS].i == -1 && m.attrs[AXIS].is_default);
    CHECK_EQ_INT(match_root(&sm_p, softmax(net, x, 1), &m), 1);
    CHECK(m.attrs[AXIS].i == 1 && !m.attrs[AXIS].is_default);
    gwr_network_free(net);
}

/* ---- constraints on captures ------------------------------------------------- */

static int where_flag = 1;
static int where_user(const gwr_match *m, void *user) {
    (void)m;
    return *(int *)user;
}

static const gwr_match_node typed_nodes[] = {
    {.op = "Add", .in = {GWR_M_CAP_IF(X, .dtypes = GWR_M_REAL_FLOATS, GWR_M_RANKS(2, 3)), GWR_M_CAP(Y)},
     .dims_eq = {GWR_M_DIMS_EQ(X, -1, Y, 0)}, .where = where_user},
};
static const gwr_match_pattern typed_p = {"typed", GWR_M_NODES(typed_nodes), NULL, &where_flag};
static const gwr_match_node wconst_nodes[] = {
    GWR_M_OP("MatMul", GWR_M_CAP(X), GWR_M_CONST_IF(W, GWR_M_RANKS(2, 2), .dtypes = GWR_M_DT(GWR_FLOAT32))),
};
static const gwr_match_pattern wconst_p = {"wconst", GWR_M_NODES(wconst_nodes), NULL, NULL};

TEST(capture_constraints) {
    gwr_match m;
    gwr_tensor *x;
    gwr_network *net = net_with(&x, GWR_FLOAT32, 2, d23);
    gwr_dim d3[1] = {3}, d1[1] = {1}, d4[4] = {1, 1, 2, 3};
    gwr_tensor *b3 = gwr_network_add_input(net, "b3", GWR_FLOAT32, 1, d3), *b1 = gwr_network_add_input(net, "b1", GWR_FLOAT32, 1, d1);
    gwr_tensor *x4 = gwr_network_add_input(net, "x4", GWR_FLOAT32, 4, d4), *xi = gwr_network_add_input(net, "xi", GWR_INT32, 2, d23);
    gwr_tensor *bi = gwr_network_add_input(net, "bi", GWR_INT32, 1, d3), *xu = gwr_network_add_input(net, "xu", GWR_FLOAT32, -1, NULL);
    CHECK_OK(gwr_match_check(&typed_p));
    CHECK_EQ_INT(match_root(&typed_p, gwr_add(net, x, b3), &m), 1);
    CHECK_EQ_INT(match_root(&typed_p, gwr_add(net, b3, x), &m), 1); /* Y first: x still found by the swap */
    CHECK(m.captures[X] == x && m.captures[Y] == b3);
    CHECK_EQ_INT(match_root(&typed_p, gwr_add(net, x, b1), &m), 0); /* 3 != 1 */
    check_why(&m, "dims equality");
    CHECK_EQ_INT(match_root(&typed_p, gwr_add(net, xi, bi), &m), 0);
    check_why(&m, "dtype");
    CHECK_EQ_INT(match_root(&typed_p, gwr_add(net, x4, b3), &m), 0);
    check_why(&m, "rank outside");
    CHECK_EQ_INT(match_root(&typed_p, gwr_add(net, xu, b3), &m), 0); /* unknown rank never passes */
    where_flag = 0;
    CHECK_EQ_INT(match_root(&typed_p, gwr_add(net, x, b3), &m), 0);
    check_why(&m, "where predicate refused");
    where_flag = 1;
    /* A constant-only capture with a rank and a dtype. */
    int64_t wd[2] = {3, 4}, wd1[1] = {3};
    float wv[12] = {0};
    CHECK_EQ_INT(match_root(&wconst_p, gwr_matmul(net, x, gwr_constant(net, GWR_FLOAT32, 2, wd, wv)), &m), 1);
    CHECK_EQ_INT(match_root(&wconst_p, gwr_matmul(net, x, gwr_constant(net, GWR_FLOAT32, 1, wd1, wv)), &m), 0);
    check_why(&m, "rank outside");
    gwr_tensor *wi = gwr_network_add_input(net, "w", GWR_FLOAT32, 2, (gwr_dim[2]){3, 4});
    CHECK_EQ_INT(match_root(&wconst_p, gwr_matmul(net, x, wi), &m), 0);
    check_why(&m, "not a constant");
    gwr_network_free(net);
}

/* ---- variadic and multi-output ---------------------------------------------- */

TEST(rest_minimum) {
    static const gwr_match_node cat[] = {{.op = "Concat", .in = {GWR_M_CAP(X), GWR_M_REST_MIN(2)}}};
    static const gwr_match_pattern pc = {"cat", GWR_M_NODES(cat), NULL, NULL};
    gwr_tensor *x;
    gwr_network *net = net_with(&x, GWR_FLOAT32, 2, d23);
    gwr_match m;
    gwr_tensor *three[3] = {x, x, x}, *two[2] = {x, x};
    CHECK_EQ_INT(match_root(&pc, gwr_concat(net, 3, three, 0), &m), 1);
    CHECK_EQ_INT(m.nrest[0], 2);
    CHECK_EQ_INT(match_root(&pc, gwr_concat(net, 2, two, 0), &m), 0);
    check_why(&m, "minimum");
    gwr_network_free(net);
}

static const gwr_match_node split_nodes[] = {
    GWR_M_OP("Split", GWR_M_CAP(X), GWR_M_REST),
    GWR_M_OP("Sub", GWR_M_NODE_OUT(0, 0), GWR_M_NODE_OUT(0, 1)),
};
static const gwr_match_pattern split_p = {"split_sub", GWR_M_NODES(split_nodes), NULL, NULL};

static gwr_tensor *split_sub(gwr_network *net, gwr_tensor *x, gwr_layer **sp) {
    gwr_tensor *o[2];
    *sp = gwr_split(net, x, 1, 2, NULL, o);
    return gwr_sub(net, gwr_layer_output(*sp, 0), gwr_layer_output(*sp, 1));
}

TEST(multi_output_single_reader) {
    gwr_dim d24[2] = {2, 4};
    gwr_tensor *x;
    gwr_network *net = net_with(&x, GWR_FLOAT32, 2, d24);
    gwr_layer *sp;
    gwr_match m;
    gwr_tensor *y = split_sub(net, x, &sp);
    CHECK_EQ_INT(match_root(&split_p, y, &m), 1);
    CHECK(m.layers[0] == sp);
    /* Output 1 read outside the match. */
    gwr_tensor *y2 = split_sub(net, x, &sp);
    gwr_network_mark_output(net, gwr_relu(net, gwr_layer_output(sp, 1)));
    CHECK_EQ_INT(match_root(&split_p, y2, &m), 0);
    check_why(&m, "reader outside the match");
    /* Output 0 a network output. */
    gwr_tensor *y3 = split_sub(net, x, &sp);
    gwr_network_mark_output(net, gwr_layer_output(sp, 0));
    CHECK_EQ_INT(match_root(&split_p, y3, &m), 0);
    check_why(&m, "network output");
    /* The operands the other way round: Sub is not commutative. */
    gwr_tensor *o[2];
    sp = gwr_split(net, x, 1, 2, NULL, o);
    CHECK_EQ_INT(match_root(&split_p, gwr_sub(net, gwr_layer_output(sp, 1), gwr_layer_output(sp, 0)), &m), 0);
    check_why(&m, "another output");
    gwr_network_free(net);
}

/* ---- the rule driver ---------------------------------------------------------- */

static int to_sigmoid(gwr_rewrite_ctx *c, const gwr_match *m) {
    return gwr_match_finish(c, m, gwr_sigmoid(gwr_rewrite_ctx_network(c), m->captures[X]));
}
static int to_wrong_type(gwr_rewrite_ctx *c, const gwr_match *m) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    return gwr_match_finish(c, m, gwr_reduce_mean(net, m->captures[X], 1, (int64_t[]){0}, 0));
}
/* 1 / (1 + Exp(-x)) for targets ort and gwr, opset >= 17 for ort only. */
static const gwr_match_node sig_nodes[] = {
    GWR_M_OP("Neg", GWR_M_CAP(X)),
    GWR_M_OP("Exp", GWR_M_NODE(0)),
    GWR_M_OP("Add", GWR_M_NODE(1), GWR_M_SPLAT(C, 1.0)),
    {.op = "Div", .in = {GWR_M_SPLAT(Y, 1.0), GWR_M_NODE(2)}, .targets = 2 | 4, .min_opset = 17, .opset_targets = 2},
};
static const gwr_match_pattern sig_p = {"sigmoid", GWR_M_NODES(sig_nodes), to_sigmoid, NULL};
static const gwr_match_pattern sig_bad_p = {"sigmoid_bad", GWR_M_NODES(sig_nodes), to_wrong_type, NULL};
static const char *const div_root[] = {"Div", NULL};
static const gwr_pattern_rewriter sig_pass = GWR_MATCH_PASS("sigmoid", div_root, &sig_p);

static gwr_network *sig_model(int64_t opset) {
    gwr_tensor *x;
    gwr_network *net = net_with(&x, GWR_FLOAT32, 2, d23);
    if (opset) gwr_network_set_opset(net, "", opset);
    gwr_tensor *y = gwr_div(net, gwr_constant_f32(net, 1), gwr_add(net, gwr_exp(net, gwr_neg(net, x)), gwr_constant_f32(net, 1)));
    gwr_network_mark_output(net, y);
    return net;
}

static int count_live(gwr_network *net, const char *op) {
    int n = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        n += !gwr_layer_is_removed(l) && !strcmp(gwr_layer_op(l), op);
    }
    return n;
}

static void on_failed(void *ctx, const char *label, gwr_layer *root, const char *reason) {
    (void)label, (void)root;
    snprintf((char *)ctx, 256, "%s", reason);
}

/* Runs pattern p (static pass when p is NULL) over a model of `opset`
 * with arg target (0: none); the Sigmoids left, reason the last failure. */
static int drive(const gwr_match_pattern *p, int64_t opset, int64_t target, char *reason) {
    gwr_network *net = sig_model(opset);
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    if (p) CHECK_OK(gwr_match_add(m, "sig", p, 10));
    else CHECK_OK(gwr_rewrite_manager_add(m, "sig", &sig_pass, 10));
    reason[0] = 0;
    gwr_rewrite_manager_add_listener(m, &(gwr_rewrite_listener){.match_failed = on_failed, .ctx = reason});
    gwr_args *a = gwr_args_new();
    if (target) gwr_args_set_int(a, "target", target);
    CHECK_OK(gwr_rewrite_manager_rewrite(m, net, a));
    CHECK_OK(gwr_network_verify(net));
    int n = count_live(net, "Sigmoid");
    if (n) CHECK_EQ_INT(count_live(net, "Exp") + count_live(net, "Div"), 0);
    gwr_args_free(a);
    gwr_rewrite_manager_free(m);
    gwr_network_free(net);
    return n;
}

TEST(driver_gate_and_finish) {
    char reason[256];
    CHECK_EQ_INT(drive(&sig_p, 0, 0, reason), 0); /* target onnx (the default): not in the mask */
    CHECK_CONTAINS(reason, "target 1 is not one of the pattern's targets");
    CHECK_EQ_INT(drive(&sig_p, 0, 4, reason), 1);  /* gwr, no opset import */
    CHECK_EQ_INT(drive(&sig_p, 13, 4, reason), 1); /* gwr: the opset minimum is for ort only */
    CHECK_EQ_INT(drive(&sig_p, 13, 2, reason), 0);
    CHECK_CONTAINS(reason, "needs default-domain opset 17 (the network imports 13)");
    CHECK_EQ_INT(drive(&sig_p, 17, 2, reason), 1);
    CHECK_EQ_INT(drive(NULL, 17, 2, reason), 1); /* the static GWR_MATCH_PASS form */
    CHECK_EQ_INT(drive(NULL, 13, 2, reason), 0);
    /* A replacement of another shape is refused, and nothing changes. */
    CHECK_EQ_INT(drive(&sig_bad_p, 0, 4, reason), 0);
    CHECK_CONTAINS(reason, "does not have the type of");
}

/* ---- the shared helpers ------------------------------------------------------ */

TEST(shared_helpers) {
    gwr_tensor *x;
    gwr_network *net = net_with(&x, GWR_FLOAT32, 2, d23);
    gwr_tensor *r = gwr_relu(net, x), *s = gwr_sigmoid(net, r);
    CHECK(gwr_match_is_op(gwr_tensor_parent(r), "Relu"));
    CHECK(!gwr_match_is_op(gwr_tensor_parent(r), "com.microsoft::Relu") && !gwr_match_is_op(NULL, "Relu"));
    CHECK(gwr_match_sole_reader(r) == gwr_tensor_parent(s));
    CHECK(!gwr_match_sole_reader(x) || gwr_match_sole_reader(x) == gwr_tensor_parent(r));
    gwr_tensor *t = gwr_tanh(net, r);
    CHECK(!gwr_match_sole_reader(r)); /* two readers */
    gwr_network_mark_output(net, s);
    CHECK(!gwr_match_sole_reader(s)); /* a network output */
    CHECK(gwr_match_same_type(x, t));
    gwr_tensor *xi = gwr_network_add_input(net, "xi", GWR_INT32, 2, d23);
    gwr_tensor *x3 = gwr_network_add_input(net, "x3", GWR_FLOAT32, 2, (gwr_dim[2]){2, 4});
    CHECK(!gwr_match_same_type(xi, xi) && !gwr_match_same_type(x, x3) && !gwr_match_same_type(x, xi));
    gwr_layer_mark_as_removed(gwr_tensor_parent(t));
    CHECK(!gwr_match_is_op(gwr_tensor_parent(t), "Tanh")); /* removed */
    CHECK_EQ_INT(gwr_match_opset(gwr_tensor_parent(r)), -1);
    gwr_network_set_opset(net, "", 18);
    CHECK_EQ_INT(gwr_match_opset(gwr_tensor_parent(r)), 18);
    CHECK_EQ_INT(gwr_match_target(NULL), 1);
    gwr_network_free(net);
}

/* ---- malformed v2 tables ----------------------------------------------------- */

static void refused(const gwr_match_node *nodes, int n, const char *needle) {
    gwr_match_pattern p = {"bad", nodes, n, NULL, NULL};
    CHECK_EQ_INT(gwr_match_check(&p), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(gwr_last_errmsg(), "match pattern 'bad'");
    CHECK_CONTAINS(gwr_last_errmsg(), needle);
}

TEST(malformed_v2_tables) {
    static const char *const empty[] = {NULL}, *const blank[] = {"Relu", "", NULL};
    const gwr_match_node both[] = {{.op = "Relu", .ops = act_ops, .in = {GWR_M_CAP(X)}}};
    refused(both, 1, "op (or op_id) or ops, not both");
    const gwr_match_node e1[] = {{.ops = empty, .in = {GWR_M_CAP(X)}}};
    refused(e1, 1, "empty ops list");
    const gwr_match_node e2[] = {{.ops = blank, .in = {GWR_M_CAP(X)}}};
    refused(e2, 1, "ops entry 1 is empty");
    const gwr_match_node one_alt[] = {GWR_M_OP("Relu", GWR_M_CAP(X)), GWR_M_OP("Sqrt", GWR_M_EITHER(0))};
    refused(one_alt, 2, "EITHER needs 2..4 alternatives, has 1");
    const gwr_match_node later[] = {GWR_M_OP("Relu", GWR_M_CAP(X)), GWR_M_OP("Sqrt", GWR_M_EITHER(0, 1))};
    refused(later, 2, "alternative 1 is node 1 (only earlier nodes, 0..0)");
    const gwr_match_node dup[] = {GWR_M_OP("Relu", GWR_M_CAP(X)), GWR_M_OP("Sqrt", GWR_M_EITHER(0, 0))};
    refused(dup, 2, "node 0 is an alternative twice");
    const gwr_match_node tol[] = {GWR_M_OP("Mul", GWR_M_CAP(X), GWR_M_SPLAT_TOL(C, 1, -1))};
    refused(tol, 1, "SPLAT tolerance -1");
    const gwr_match_node rk[] = {GWR_M_OP("Relu", GWR_M_CAP_IF(X, GWR_M_RANKS(3, 2)))};
    refused(rk, 1, "rank range 3..2");
    const gwr_match_node dt[] = {GWR_M_OP("Relu", GWR_M_CAP_IF(X, .dtypes = UINT64_C(1) << 40))};
    refused(dt, 1, "dtype mask names no dtype");
    const gwr_match_node rest[] = {{.op = "Concat", .in = {GWR_M_CAP(X), GWR_M_REST_MIN(-1)}}};
    refused(rest, 1, "REST minimum -1");
    const gwr_match_node aslot[] = {{.op = "Softmax", .in = {GWR_M_CAP(X)}, .attrs = {GWR_MA_CAPTURE("axis", 8)}}};
    refused(aslot, 1, "captured into slot 8");
    const gwr_match_node adef[] = {
        {.op = "Softmax", .in = {GWR_M_CAP(X)}, .attrs = {{.name = "axis", .kind = GWR_MATTR_CAPTURE, .absent_ok = 1, .def = GWR_MATTR_ABSENT}}}};
    refused(adef, 1, "the default must be");
    const gwr_match_node deq[] = {{.op = "Add", .in = {GWR_M_CAP(X), GWR_M_CAP(Y)}, .dims_eq = {GWR_M_DIMS_EQ(X, 0, 16, 0)}}};
    refused(deq, 1, "names capture slots 0 and 16");
    const gwr_match_node wh[] = {{.op = "Relu", .in = {GWR_M_CAP(X)}, .where = where_user}, GWR_M_OP("Sqrt", GWR_M_NODE(0))};
    refused(wh, 2, "belong on the root (node 1)");
    const gwr_match_node gate[] = {{.op = "Relu", .in = {GWR_M_CAP(X)}, .min_opset = 17}, GWR_M_OP("Sqrt", GWR_M_NODE(0))};
    refused(gate, 2, "belong on the root");
    /* 13 commutative nodes: 2^13 combinations. */
    gwr_match_node many[13];
    memset(many, 0, sizeof many);
    for (int i = 0; i < 13; i++) {
        many[i].op = "Add";
        many[i].in[0] = (gwr_mref)GWR_M_CAP(X);
        if (i) many[i].in[0] = (gwr_mref)GWR_M_NODE(i - 1);
        many[i].in[1] = (gwr_mref)GWR_M_CAP(Y);
    }
    refused(many, 13, "more than 4096 choice combinations");
    gwr_match_pattern ok12 = {"ok12", many, 12, NULL, NULL}; /* 4096 */
    CHECK_OK(gwr_match_check(&ok12));
}

/* gwr_match_layer keeps the plans of tables it checked (matcher.c,
 * check_table_cached): the same table edited in place between two calls
 * is seen as edited - a root op that became commutative is tried in both
 * operand orders, a reference made malformed fails the call. */
TEST(table_edited_between_calls) {
    gwr_tensor *x;
    gwr_network *net = net_with(&x, GWR_FLOAT32, 2, d23);
    gwr_tensor *sub = gwr_sub(net, x, gwr_relu(net, x)), *add = gwr_add(net, x, gwr_relu(net, x));
    gwr_match_node t[] = {GWR_M_OP("Relu", GWR_M_CAP(X)), GWR_M_OP("Sub", GWR_M_NODE(0), GWR_M_CAP(X))};
    gwr_match_pattern p = {"edited", GWR_M_NODES(t), NULL, NULL};
    gwr_match m;
    CHECK_EQ_INT(match_root(&p, sub, &m), 0); /* Sub(x, Relu(x)): not Sub(Relu(x), x) */
    t[1].op = "Add";
    CHECK_EQ_INT(match_root(&p, add, &m), 1); /* Add commutes: the swapped order */
    CHECK(m.captures[X] == x);
    t[1].in[0] = (gwr_mref)GWR_M_NODE(1);
    CHECK(match_root(&p, add, &m) < 0);
    CHECK_CONTAINS(gwr_last_errmsg(), "refers to node 1");
    t[1].in[0] = (gwr_mref)GWR_M_NODE(0);
    CHECK_EQ_INT(match_root(&p, add, &m), 1);
    gwr_network_free(net);
}

int main(void) {
    RUN(op_alternatives);
    RUN(either_sub_patterns);
    RUN(splat_tolerance_and_broadcast);
    RUN(splat_tolerance_zero_is_exact);
    RUN(attribute_captures);
    RUN(capture_constraints);
    RUN(rest_minimum);
    RUN(multi_output_single_reader);
    RUN(driver_gate_and_finish);
    RUN(shared_helpers);
    RUN(malformed_v2_tables);
    RUN(table_edited_between_calls);
    return check_report();
}
