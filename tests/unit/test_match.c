/* test_match.c - the declarative matcher and the pattern helpers of
 * gwr/match.h: HardSwish tables that fire (both operand orders) and do not
 * fire (second readers, network outputs, non-constants, wrong constants and
 * attributes, two tensors for one capture), optional and remaining inputs,
 * malformed tables, a full rewrite through a manager checked with the
 * executor, and the constant, clone and replace helpers. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"

enum { X, K3, LO, HI, K6, NCAP };

static const gwr_match_node hswish_nodes[] = {
    GWR_M_OP("Add", GWR_M_CAP(X), GWR_M_SPLAT(K3, 3.0)),
    {.op = "Clip", .in = {GWR_M_NODE(0), GWR_M_SPLAT(LO, 0.0), GWR_M_SPLAT(HI, 6.0)}},
    {.op = "Mul", .in = {GWR_M_CAP(X), GWR_M_NODE(1)}},
    {.op = "Div", .in = {GWR_M_NODE(2), GWR_M_SPLAT(K6, 6.0)}},
};

static int to_hswish(gwr_rewrite_ctx *c, const gwr_match *m) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    gwr_tensor *y = gwr_hard_swish(net, m->captures[X]);
    if (!y) return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "%s", gwr_network_errmsg(net));
    gwr_status s = gwr_match_replace(m, 1, &y);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}

static const gwr_match_pattern hswish = {"fuse_hard_swish", GWR_M_NODES(hswish_nodes), to_hswish, NULL};

/* The chain Div(Mul(x, Clip(Add(x, k3), 0, 6)), 6) over input x [2,3];
 * swap puts every commutative op's operands the other way round. */
typedef struct chain {
    gwr_network *net;
    gwr_tensor *x, *add, *clip, *mul, *y;
} chain;

static chain build_chain(int swap, float k3) {
    chain c = {0};
    c.net = gwr_network_new("hswish");
    gwr_dim dims[2] = {2, 3};
    c.x = gwr_network_add_input(c.net, "x", GWR_FLOAT32, 2, dims);
    gwr_tensor *t3 = gwr_constant_f32(c.net, k3), *t0 = gwr_constant_f32(c.net, 0), *t6 = gwr_constant_f32(c.net, 6);
    c.add = swap ? gwr_add(c.net, t3, c.x) : gwr_add(c.net, c.x, t3);
    c.clip = gwr_clip(c.net, c.add, t0, t6);
    c.mul = swap ? gwr_mul(c.net, c.clip, c.x) : gwr_mul(c.net, c.x, c.clip);
    c.y = gwr_div(c.net, c.mul, gwr_constant_f32(c.net, 6));
    gwr_network_mark_output(c.net, c.y);
    return c;
}

static int match_root(const gwr_match_pattern *p, gwr_tensor *y, gwr_match *m) {
    return gwr_match_layer(p, gwr_tensor_parent(y), m);
}

static void check_why(const gwr_match *m, const char *needle) {
    char buf[256];
    gwr_match_why(m, buf, sizeof buf);
    CHECK_CONTAINS(buf, needle);
}

TEST(hswish_fires_both_orders) {
    CHECK_OK(gwr_match_check(&hswish));
    for (int swap = 0; swap < 2; swap++) {
        chain c = build_chain(swap, 3);
        gwr_match m;
        CHECK_EQ_INT(match_root(&hswish, c.y, &m), 1);
        CHECK(m.captures[X] == c.x);
        CHECK(m.layers[0] == gwr_tensor_parent(c.add));
        CHECK(m.layers[1] == gwr_tensor_parent(c.clip));
        CHECK(m.layers[3] == gwr_tensor_parent(c.y));
        CHECK(gwr_match_const_is_splat(m.captures[HI], 6, 0));
        /* A layer that is not the root's op does not match. */
        CHECK_EQ_INT(gwr_match_layer(&hswish, gwr_tensor_parent(c.mul), &m), 0);
        check_why(&m, "another op");
        gwr_network_free(c.net);
    }
}

TEST(hswish_refuses) {
    gwr_match m;
    /* A second reader of an intermediate. */
    chain c = build_chain(0, 3);
    gwr_network_mark_output(c.net, gwr_relu(c.net, c.clip));
    CHECK_EQ_INT(match_root(&hswish, c.y, &m), 0);
    check_why(&m, "reader outside the match");
    gwr_network_free(c.net);
    /* An intermediate that is a network output. */
    c = build_chain(1, 3);
    gwr_network_mark_output(c.net, c.mul);
    CHECK_EQ_INT(match_root(&hswish, c.y, &m), 0);
    check_why(&m, "network output");
    gwr_network_free(c.net);
    /* A wrong constant. */
    c = build_chain(0, 4);
    CHECK_EQ_INT(match_root(&hswish, c.y, &m), 0);
    check_why(&m, "another value");
    gwr_network_free(c.net);
    /* A non-constant where a constant is required: Add(x, z). */
    gwr_network *net = gwr_network_new("n");
    gwr_dim d[1] = {4};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, d), *z = gwr_network_add_input(net, "z", GWR_FLOAT32, 1, d);
    gwr_tensor *y = gwr_div(net, gwr_mul(net, x, gwr_clip(net, gwr_add(net, x, z), gwr_constant_f32(net, 0), gwr_constant_f32(net, 6))),
                            gwr_constant_f32(net, 6));
    gwr_network_mark_output(net, y);
    CHECK_EQ_INT(match_root(&hswish, y, &m), 0);
    check_why(&m, "not a constant");
    /* Two different tensors for one capture: z * Clip(x + 3, 0, 6) / 6. */
    gwr_tensor *y2 = gwr_div(net, gwr_mul(net, z, gwr_clip(net, gwr_add(net, x, gwr_constant_f32(net, 3)), gwr_constant_f32(net, 0),
                                                         gwr_constant_f32(net, 6))),
                             gwr_constant_f32(net, 6));
    gwr_network_mark_output(net, y2);
    CHECK_EQ_INT(match_root(&hswish, y2, &m), 0);
    check_why(&m, "two different tensors");
    gwr_network_free(net);
}

/* A predicate instead of SPLAT: the constant must be 3 within 1e-3. */
static int is_three(const gwr_match *m, int node, void *user) {
    (void)node, (void)user;
    return gwr_match_const_is_splat(m->captures[1], 3.0, 1e-3);
}

TEST(predicates_and_attributes) {
    static const gwr_match_node add3[] = {{.op = "Add", .in = {GWR_M_CAP(0), GWR_M_CONST(1)}, .pred = is_three}};
    static const gwr_match_pattern p = {"add3", GWR_M_NODES(add3), NULL, NULL};
    gwr_network *net = gwr_network_new("n");
    gwr_dim d[1] = {4};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, d);
    gwr_tensor *a = gwr_add(net, gwr_constant_f32(net, 3.0004f), x), *b = gwr_add(net, x, gwr_constant_f32(net, 2.5f));
    gwr_match m;
    CHECK_EQ_INT(gwr_match_layer(&p, gwr_tensor_parent(a), &m), 1);
    CHECK_EQ_INT(gwr_match_layer(&p, gwr_tensor_parent(b), &m), 0);
    check_why(&m, "predicate refused");
    /* Attribute constraints: axis == -1, absent counting as the default. */
    static const gwr_match_node sm_d[] = {{.op = "Softmax", .in = {GWR_M_CAP(0)}, .attrs = {GWR_MA_INT_OR_ABSENT("axis", -1)}}};
    static const gwr_match_node sm[] = {{.op_id = GWR_OP_Softmax, .in = {GWR_M_CAP(0)}, .attrs = {GWR_MA_INT("axis", -1)}}};
    static const gwr_match_pattern pd = {"sm_d", GWR_M_NODES(sm_d), NULL, NULL}, ps = {"sm", GWR_M_NODES(sm), NULL, NULL};
    gwr_tensor *s1 = gwr_softmax(net, x, 0), *s2 = gwr_softmax(net, x, -1), *s3 = NULL;
    gwr_op_call(net, "", "Softmax", 1, &x, NULL, 1, &s3);
    CHECK_EQ_INT(gwr_match_layer(&pd, gwr_tensor_parent(s1), &m), 0);
    check_why(&m, "attribute");
    CHECK_EQ_INT(gwr_match_layer(&pd, gwr_tensor_parent(s2), &m), 1);
    CHECK_EQ_INT(gwr_match_layer(&pd, gwr_tensor_parent(s3), &m), 1);
    CHECK_EQ_INT(gwr_match_layer(&ps, gwr_tensor_parent(s2), &m), 1);
    CHECK_EQ_INT(gwr_match_layer(&ps, gwr_tensor_parent(s3), &m), 0);
    /* Float, string and ints constraints. */
    gwr_tensor *lr = gwr_leaky_relu(net, x, 0.1f);
    static const gwr_match_node lrn[] = {{.op = "LeakyRelu", .in = {GWR_M_ANY}, .attrs = {GWR_MA_FLOAT("alpha", 0.1, 1e-6)}}};
    static const gwr_match_node lrw[] = {{.op = "LeakyRelu", .in = {GWR_M_ANY}, .attrs = {GWR_MA_FLOAT("alpha", 0.2, 1e-6)}}};
    static const gwr_match_pattern plr = {"lr", GWR_M_NODES(lrn), NULL, NULL}, plw = {"lw", GWR_M_NODES(lrw), NULL, NULL};
    CHECK_EQ_INT(gwr_match_layer(&plr, gwr_tensor_parent(lr), &m), 1);
    CHECK_EQ_INT(gwr_match_layer(&plw, gwr_tensor_parent(lr), &m), 0);
    gwr_layer *tl = gwr_tensor_parent(gwr_relu(net, x));
    static const int64_t perm[] = {1, 0};
    gwr_layer_set_string(tl, "mode", "fast");
    gwr_layer_set_ints(tl, "perm", perm, 2);
    static const gwr_match_node rs[] = {{.op = "Relu", .in = {GWR_M_ANY}, .attrs = {GWR_MA_STR("mode", "fast"), GWR_MA_INTS("perm", perm), GWR_MA_ABSENT("x")}}};
    static const gwr_match_node rw[] = {{.op = "Relu", .in = {GWR_M_ANY}, .attrs = {GWR_MA_STR("mode", "slow")}}};
    static const gwr_match_node ra[] = {{.op = "Relu", .in = {GWR_M_ANY}, .attrs = {GWR_MA_ABSENT("perm")}}};
    static const gwr_match_pattern prs = {"rs", GWR_M_NODES(rs), NULL, NULL}, prw = {"rw", GWR_M_NODES(rw), NULL, NULL},
                                   pra = {"ra", GWR_M_NODES(ra), NULL, NULL};
    CHECK_EQ_INT(gwr_match_layer(&prs, tl, &m), 1);
    CHECK_EQ_INT(gwr_match_layer(&prw, tl, &m), 0);
    CHECK_EQ_INT(gwr_match_layer(&pra, tl, &m), 0);
    gwr_network_free(net);
}

TEST(optional_and_rest_inputs) {
    static const gwr_match_node clipn[] = {{.op = "Clip", .in = {GWR_M_CAP(0), GWR_M_OPT_CONST(1), GWR_M_OPT_CONST(2)}}};
    static const gwr_match_pattern p = {"clip", GWR_M_NODES(clipn), NULL, NULL};
    static const gwr_match_node cat[] = {{.op = "Concat", .in = {GWR_M_CAP(0), GWR_M_REST}}};
    static const gwr_match_pattern pc = {"cat", GWR_M_NODES(cat), NULL, NULL};
    static const gwr_match_node one[] = {{.op = "Clip", .in = {GWR_M_CAP(0), GWR_M_ABSENT, GWR_M_CONST(2)}}};
    static const gwr_match_pattern po = {"one", GWR_M_NODES(one), NULL, NULL};
    gwr_network *net = gwr_network_new("n");
    gwr_dim d[1] = {4};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, d);
    gwr_tensor *lo = gwr_constant_f32(net, 0), *hi = gwr_constant_f32(net, 1);
    gwr_tensor *c1 = gwr_clip(net, x, NULL, NULL), *c3 = gwr_clip(net, x, lo, hi), *c2 = gwr_clip(net, x, NULL, hi);
    gwr_tensor *cx = gwr_clip(net, x, gwr_network_add_input(net, "lo", GWR_FLOAT32, 0, NULL), NULL);
    gwr_match m;
    CHECK_EQ_INT(gwr_match_layer(&p, gwr_tensor_parent(c1), &m), 1);
    CHECK(m.captures[0] == x && !m.captures[1] && !m.captures[2]);
    CHECK_EQ_INT(gwr_match_layer(&p, gwr_tensor_parent(c3), &m), 1);
    CHECK(m.captures[1] == lo && m.captures[2] == hi);
    CHECK_EQ_INT(gwr_match_layer(&p, gwr_tensor_parent(cx), &m), 0);
    check_why(&m, "not a constant");
    CHECK_EQ_INT(gwr_match_layer(&po, gwr_tensor_parent(c2), &m), 1);
    CHECK_EQ_INT(gwr_match_layer(&po, gwr_tensor_parent(c3), &m), 0);
    check_why(&m, "must be absent");
    CHECK_EQ_INT(gwr_match_layer(&po, gwr_tensor_parent(c1), &m), 0);
    check_why(&m, "absent");
    gwr_tensor *parts[3] = {x, c1, c3}, *cat_out = NULL;
    gwr_args *ax = gwr_args_new();
    gwr_args_set_int(ax, "axis", 0);
    gwr_op_call(net, "", "Concat", 3, parts, ax, 1, &cat_out);
    gwr_args_free(ax);
    CHECK_EQ_INT(gwr_match_layer(&pc, gwr_tensor_parent(cat_out), &m), 1);
    CHECK(m.captures[0] == x);
    /* Without REST, a fourth input is too many. */
    static const gwr_match_node cat2[] = {{.op = "Concat", .in = {GWR_M_CAP(0), GWR_M_ANY}}};
    static const gwr_match_pattern pc2 = {"cat2", GWR_M_NODES(cat2), NULL, NULL};
    CHECK_EQ_INT(gwr_match_layer(&pc2, gwr_tensor_parent(cat_out), &m), 0);
    check_why(&m, "more inputs");
    gwr_network_free(net);
}

TEST(malformed_tables) {
    gwr_network *net = gwr_network_new("n");
    gwr_dim d[1] = {4};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, d);
    gwr_layer *r = gwr_tensor_parent(gwr_relu(net, x));
    gwr_match m;
    static const gwr_match_node later[] = {{.op = "Relu", .in = {GWR_M_NODE(1)}}, {.op = "Relu", .in = {GWR_M_NODE(0)}}};
    static const gwr_match_pattern pl = {"later", GWR_M_NODES(later), NULL, NULL};
    CHECK_EQ_INT(gwr_match_layer(&pl, r, &m), -GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(gwr_last_errmsg(), "refers to node 1");
    static const gwr_match_node cap[] = {{.op = "Relu", .in = {GWR_M_CAP(GWR_MATCH_MAX_CAPTURES)}}};
    static const gwr_match_pattern pcap = {"cap", GWR_M_NODES(cap), NULL, NULL};
    CHECK_EQ_INT(gwr_match_check(&pcap), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(gwr_last_errmsg(), "capture slot 16 out of range");
    static const gwr_match_node unr[] = {{.op = "Relu", .in = {GWR_M_ANY}}, {.op = "Relu", .in = {GWR_M_ANY}}};
    static const gwr_match_pattern pu = {"unr", GWR_M_NODES(unr), NULL, NULL};
    CHECK_EQ_INT(gwr_match_check(&pu), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(gwr_last_errmsg(), "not reachable");
    static const gwr_match_node rest[] = {{.op = "Concat", .in = {GWR_M_REST, GWR_M_ANY}}};
    static const gwr_match_pattern pr = {"rest", GWR_M_NODES(rest), NULL, NULL};
    CHECK_EQ_INT(gwr_match_check(&pr), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_match_check(NULL), GWR_ERR_INVALID_ARG);
    static const gwr_match_pattern empty = {"empty", NULL, 0, NULL, NULL};
    CHECK_EQ_INT(gwr_match_check(&empty), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_match_layer(&hswish, NULL, &m), -GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_match_layer(&hswish, r, NULL), -GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_match_layer(NULL, r, &m), -GWR_ERR_INVALID_ARG);
    gwr_pattern_rewriter rw;
    CHECK_EQ_INT(gwr_match_rewriter(&pu, &rw), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_match_rewriter(&pl, &rw), GWR_ERR_INVALID_ARG);  /* and no rewrite callback */
    CHECK_EQ_INT(gwr_match_rewriter(&hswish, NULL), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_match_add(NULL, "x", &hswish, 1), GWR_ERR_INVALID_ARG);
    CHECK_OK(gwr_match_rewriter(&hswish, &rw));
    CHECK(rw.root_classes == GWR_ROOT_CLASS(GWR_LAYER_ELEMENTWISE) && rw.match_and_rewrite && rw.user == &hswish);
    gwr_network_free(net);
}

/* ---- a full rewrite through a manager ----------------------------------------- */

/* The chain between two other layers, so that the replacement has readers:
 * out = Relu(hswish(x - 1)) + 1, with k3 3 everywhere. */
static gwr_network *hswish_model(unsigned seed, gwr_value **input) {
    chain c = {0};
    gwr_network *net = gwr_network_new("model");
    gwr_dim dims[2] = {4, 8};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, dims);
    gwr_tensor *x1 = gwr_sub(net, x, gwr_constant_f32(net, 1));
    c.add = gwr_add(net, gwr_constant_f32(net, 3), x1);
    c.clip = gwr_clip(net, c.add, gwr_constant_f32(net, 0), gwr_constant_f32(net, 6));
    c.mul = gwr_mul(net, c.clip, x1);
    c.y = gwr_div(net, c.mul, gwr_constant_f32(net, 6));
    gwr_tensor *out = gwr_add(net, gwr_relu(net, c.y), gwr_constant_f32(net, 1));
    gwr_network_mark_output(net, out);
    gwr_network_mark_output(net, c.y);  /* the root's own output may be a network output */
    int64_t vd[2] = {4, 8};
    *input = gwr_value_new(GWR_FLOAT32, 2, vd);
    srand(seed);
    for (int64_t i = 0; i < 32; i++) gwr_value_set_f64(*input, i, (rand() / (double)RAND_MAX) * 12.0 - 6.0);
    return net;
}

static int count_live(gwr_network *net, const char *op) {
    int n = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (!gwr_layer_is_removed(l) && !strcmp(gwr_layer_op(l), op)) n++;
    }
    return n;
}

static int run_net(gwr_network *net, gwr_value *in, gwr_value **outs) {
    gwr_session *s = gwr_session_new_raw(net, NULL);
    if (!s) return 0;
    const char *names[1] = {"x"};
    gwr_status st = gwr_session_run(s, 1, names, &in, 2, NULL, outs);
    gwr_session_free(s);
    return st == GWR_OK;
}

static void on_failed(void *ctx, const char *label, gwr_layer *root, const char *reason) {
    (void)label, (void)root;
    snprintf((char *)ctx, 256, "%s", reason);
}

TEST(rewrite_through_manager) {
    gwr_value *in_a, *in_b;
    gwr_network *a = hswish_model(7, &in_a), *b = hswish_model(7, &in_b);
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    CHECK_OK(gwr_match_add(m, "fuse_hard_swish", &hswish, 10));
    CHECK_OK(gwr_rewrite_manager_set_options(m, &(gwr_rewrite_options){.debug = 1}));
    CHECK_OK(gwr_rewrite_manager_rewrite(m, a, NULL));
    gwr_rewrite_summary sum;
    CHECK_OK(gwr_rewrite_manager_summary(m, &sum));
    CHECK_EQ_INT(sum.rewrites, 1);
    CHECK_EQ_INT(count_live(a, "HardSwish"), 1);
    CHECK_EQ_INT(count_live(a, "Div") + count_live(a, "Mul") + count_live(a, "Clip"), 0);
    CHECK_OK(gwr_network_verify(a));
    CHECK_STR(gwr_tensor_name(gwr_network_output(a, 1)), gwr_tensor_name(gwr_network_output(b, 1)));
    gwr_value *oa[2] = {0}, *ob[2] = {0};
    if (CHECK(run_net(a, in_a, oa)) && CHECK(run_net(b, in_b, ob))) {
        double worst = 0;
        for (int k = 0; k < 2; k++)
            for (int64_t i = 0; i < 32; i++) worst = fmax(worst, fabs(gwr_value_get_f64(oa[k], i) - gwr_value_get_f64(ob[k], i)));
        CHECK(worst <= 1e-6);
    }
    for (int k = 0; k < 2; k++) gwr_value_release(oa[k]), gwr_value_release(ob[k]);
    /* A second run finds nothing more. */
    CHECK_OK(gwr_rewrite_manager_rewrite(m, a, NULL));
    CHECK_OK(gwr_rewrite_manager_summary(m, &sum));
    CHECK_EQ_INT(sum.rewrites, 0);
    /* A refusing chain: the Clip read twice is left alone. */
    gwr_value *in_c;
    gwr_network *c = hswish_model(7, &in_c);
    gwr_layer *clip = NULL;
    for (int64_t i = 0; i < gwr_network_num_layers(c); i++)
        if (!strcmp(gwr_layer_op(gwr_network_layer(c, i)), "Clip")) clip = gwr_network_layer(c, i);
    gwr_network_mark_output(c, gwr_layer_output(clip, 0));
    char reason[256] = "";
    int lid = gwr_rewrite_manager_add_listener(m, &(gwr_rewrite_listener){.match_failed = on_failed, .ctx = reason});
    CHECK(lid >= 0);
    CHECK_OK(gwr_rewrite_manager_rewrite(m, c, NULL));
    CHECK_CONTAINS(reason, "node 1 (Clip)");
    CHECK_CONTAINS(reason, "is a network output");
    CHECK_OK(gwr_rewrite_manager_summary(m, &sum));
    CHECK_EQ_INT(sum.rewrites, 0);
    CHECK_EQ_INT(count_live(c, "HardSwish"), 0);
    gwr_rewrite_manager_free(m);
    gwr_value_release(in_a), gwr_value_release(in_b), gwr_value_release(in_c);
    gwr_network_free(a), gwr_network_free(b), gwr_network_free(c);
}

/* ---- helpers --------------------------------------------------------------------- */

TEST(constants_widened) {
    /* the dtypes arithmetic patterns may rewrite: real floats only */
    CHECK(gwr_match_dtype_real_float(GWR_FLOAT32) && gwr_match_dtype_real_float(GWR_FLOAT16));
    CHECK(gwr_match_dtype_real_float(GWR_BFLOAT16) && gwr_match_dtype_real_float(GWR_FLOAT64));
    CHECK(!gwr_match_dtype_real_float(GWR_COMPLEX64) && !gwr_match_dtype_real_float(GWR_FLOAT8E4M3FN));
    CHECK(!gwr_match_dtype_real_float(GWR_INT64) && !gwr_match_dtype_real_float(GWR_BOOL));
    gwr_network *net = gwr_network_new("n");
    int64_t d3[1] = {3}, d4[1] = {4}, d2[1] = {2};
    float f32[3] = {1.5f, -2.0f, 0.25f};
    uint16_t f16[4] = {0x3C00, 0xC000, 0x3555, 0x0001};  /* 1, -2, 0.333..., smallest subnormal */
    int64_t i64[2] = {-3, INT64_C(1) << 40};
    uint8_t b8[3] = {1, 0, 1};
    uint16_t bf[2] = {0x3F80, 0xC0A0};  /* bfloat16 1, -5 */
    gwr_tensor *tf = gwr_constant(net, GWR_FLOAT32, 1, d3, f32), *th = gwr_constant(net, GWR_FLOAT16, 1, d4, f16);
    gwr_tensor *ti = gwr_constant(net, GWR_INT64, 1, d2, i64), *tb = gwr_constant(net, GWR_BOOL, 1, d3, b8);
    gwr_tensor *tbf = gwr_constant(net, GWR_BFLOAT16, 1, d2, bf);
    double v[8];
    int64_t n, dims[GWR_MAX_RANK];
    int rank;
    CHECK_OK(gwr_match_const_f64(tf, v, 8, &n, &rank, dims));
    CHECK(n == 3 && rank == 1 && dims[0] == 3 && v[0] == 1.5 && v[1] == -2.0 && v[2] == 0.25);
    CHECK_OK(gwr_match_const_f64(th, v, 8, &n, NULL, NULL));
    CHECK(n == 4 && v[0] == 1.0 && v[1] == -2.0 && fabs(v[2] - 1.0 / 3) < 1e-3 && v[3] == ldexp(1, -24));
    CHECK_OK(gwr_match_const_f64(ti, v, 8, &n, NULL, NULL));
    CHECK(n == 2 && v[0] == -3 && v[1] == ldexp(1, 40));
    CHECK_OK(gwr_match_const_f64(tb, v, 8, &n, NULL, NULL));
    CHECK(n == 3 && v[0] == 1 && v[1] == 0 && v[2] == 1);
    CHECK_OK(gwr_match_const_f64(tbf, v, 8, &n, NULL, NULL));
    CHECK(v[0] == 1 && v[1] == -5);
    CHECK_EQ_INT(gwr_match_const_f64(th, v, 2, &n, NULL, NULL), GWR_ERR_SHAPE);
    CHECK_EQ_INT(n, 4);
    gwr_dim xd[1] = {3};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, xd);
    CHECK_EQ_INT(gwr_match_const_f64(x, v, 8, &n, NULL, NULL), GWR_ERR_TYPE);
    CHECK_CONTAINS(gwr_last_errmsg(), "'x'");
    CHECK_EQ_INT(gwr_match_const_f64(NULL, v, 8, &n, NULL, NULL), GWR_ERR_INVALID_ARG);
    /* Splat and scalar tests with a tolerance. */
    float near3[3] = {3.0f, 3.0000002f, 2.9999998f}, far3[2] = {3.0f, 3.1f};
    gwr_tensor *s3 = gwr_constant(net, GWR_FLOAT32, 1, d3, near3), *f3 = gwr_constant(net, GWR_FLOAT32, 1, d2, far3);
    CHECK(gwr_match_const_is_splat(s3, 3.0, 1e-6));
    CHECK(!gwr_match_const_is_splat(s3, 3.0, 0));
    CHECK(!gwr_match_const_is_splat(f3, 3.0, 1e-6));
    CHECK(gwr_match_const_is_splat(f3, 3.05, 0.06));
    CHECK(!gwr_match_const_is_splat(x, 3.0, 1));
    double sv = 0;
    CHECK(gwr_match_const_scalar(gwr_constant_f32(net, 6), &sv) && sv == 6);
    CHECK(!gwr_match_const_scalar(s3, &sv));
    /* Per channel: [1,4,1,1] and [4,1,1] against rank 4, axis 1. */
    float ch[4] = {1, 2, 3, 4};
    int64_t pc4[4] = {1, 4, 1, 1}, pc3[3] = {4, 1, 1};
    int64_t chans = 0;
    CHECK(gwr_match_const_per_channel(gwr_constant(net, GWR_FLOAT32, 4, pc4, ch), 4, 1, &chans) && chans == 4);
    CHECK(gwr_match_const_per_channel(gwr_constant(net, GWR_FLOAT32, 3, pc3, ch), 4, 1, &chans) && chans == 4);
    CHECK(!gwr_match_const_per_channel(gwr_constant(net, GWR_FLOAT32, 1, d4, ch), 4, 1, &chans));
    CHECK(gwr_match_const_per_channel(gwr_constant(net, GWR_FLOAT32, 1, d4, ch), 4, -1, &chans) && chans == 4);
    CHECK(gwr_match_const_per_channel(gwr_constant_f32(net, 2), 4, 1, &chans) && chans == 1);
    gwr_network_free(net);
}

/* Integer constants read exactly: the ends of int64 (no double has
 * INT64_MAX), every int width, a uint64 above INT64_MAX refused, floats
 * and ranks above 1 refused, cap respected. */
TEST(constants_exact_ints) {
    gwr_network *net = gwr_network_new("n");
    int64_t d3[1] = {3}, d2[1] = {2}, d22[2] = {2, 2}, v[4];
    int64_t ends[3] = {INT64_MAX, INT64_MIN, INT64_MAX - 1};
    uint64_t u[2] = {UINT64_C(1) << 63, 7}, ufit[2] = {(uint64_t)INT64_MAX, 0};
    uint32_t u32[2] = {UINT32_MAX, 0};
    int8_t i8[2] = {-128, 127};
    float f[2] = {1, 2};
    CHECK_EQ_INT(gwr_match_const_ints(gwr_constant(net, GWR_INT64, 1, d3, ends), v, 4), 3);
    CHECK(v[0] == INT64_MAX && v[1] == INT64_MIN && v[2] == INT64_MAX - 1);
    CHECK_EQ_INT(gwr_match_const_ints(gwr_constant(net, GWR_UINT64, 1, d2, u), v, 4), -1);
    CHECK_EQ_INT(gwr_match_const_ints(gwr_constant(net, GWR_UINT64, 1, d2, ufit), v, 4), 2);
    CHECK(v[0] == INT64_MAX && v[1] == 0);
    CHECK_EQ_INT(gwr_match_const_ints(gwr_constant(net, GWR_UINT32, 1, d2, u32), v, 4), 2);
    CHECK(v[0] == (int64_t)UINT32_MAX && v[1] == 0);
    CHECK_EQ_INT(gwr_match_const_ints(gwr_constant(net, GWR_INT8, 1, d2, i8), v, 4), 2);
    CHECK(v[0] == -128 && v[1] == 127);
    CHECK_EQ_INT(gwr_match_const_ints(gwr_constant(net, GWR_FLOAT32, 1, d2, f), v, 4), -1);
    int64_t four[4] = {1, 2, 3, 4};
    CHECK_EQ_INT(gwr_match_const_ints(gwr_constant(net, GWR_INT64, 2, d22, four), v, 4), -1);
    CHECK_EQ_INT(gwr_match_const_ints(gwr_constant(net, GWR_INT64, 1, d3, ends), v, 2), -1);
    CHECK_EQ_INT(gwr_match_const_ints(NULL, v, 4), -1);
    gwr_match_const c;
    int64_t one;
    CHECK(gwr_match_const_get(gwr_constant(net, GWR_INT64, 1, d3, ends), &c));
    CHECK(gwr_match_const_int_at(&c, 1, &one) && one == INT64_MIN);
    CHECK(!gwr_match_const_int_at(&c, 3, &one) && !gwr_match_const_int_at(&c, -1, &one));
    CHECK(gwr_match_const_get(gwr_constant(net, GWR_FLOAT32, 1, d2, f), &c) && !gwr_match_const_int_at(&c, 0, &one));
    gwr_network_free(net);
}

TEST(clone_keeps_attributes) {
    gwr_network *net = gwr_network_new("n");
    gwr_dim d[1] = {3};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, d), *z = gwr_network_add_input(net, "z", GWR_FLOAT32, 1, d);
    gwr_layer *l = gwr_tensor_parent(gwr_leaky_relu(net, x, 0.25f));
    static const int64_t is[3] = {1, 2, 3};
    static const float fs[2] = {0.5f, 1.5f};
    const char *ss[2] = {"a", "bc"};
    float wd[2] = {7, 8};
    int64_t wdims[1] = {2};
    gwr_buffer *buf = gwr_buffer_new_copy(wd, sizeof wd);
    gwr_weights w = {.dtype = GWR_FLOAT32, .rank = 1, .dims = wdims, .data = gwr_buffer_data(buf), .nbytes = sizeof wd, .buffer = buf};
    CHECK_OK(gwr_layer_set_int(l, "i", 42));
    CHECK_OK(gwr_layer_set_bytes(l, "s", "x\0y", 3));
    CHECK_OK(gwr_layer_set_ints(l, "is", is, 3));
    CHECK_OK(gwr_layer_set_floats(l, "fs", fs, 2));
    CHECK_OK(gwr_layer_set_strings(l, "ss", ss, 2));
    CHECK_OK(gwr_layer_set_tensor(l, "t", &w));
    CHECK_OK(gwr_layer_set_tensors(l, "ts", &w, 1));
    gwr_buffer_release(buf);
    gwr_layer *c = gwr_match_clone_layer(l, 1, &z);
    if (!CHECK(c)) return;
    CHECK(c != l && gwr_layer_input(c, 0) == z && !strcmp(gwr_layer_op(c), "LeakyRelu"));
    CHECK_EQ_INT(gwr_layer_num_attrs(c), gwr_layer_num_attrs(l));
    CHECK_EQ_INT(gwr_tensor_dtype(gwr_layer_output(c, 0)), GWR_FLOAT32);
    CHECK_EQ_INT(gwr_tensor_dim(gwr_layer_output(c, 0), 0), 3);
    float f;
    int64_t i, n;
    const char *s;
    size_t len;
    const int64_t *gi;
    const float *gf;
    const gwr_bytes *gb;
    const gwr_weights *gw;
    CHECK(!gwr_layer_get_float(c, "alpha", &f) && f == 0.25f);
    CHECK(!gwr_layer_get_int(c, "i", &i) && i == 42);
    CHECK(!gwr_layer_get_string(c, "s", &s, &len) && len == 3 && !memcmp(s, "x\0y", 3));
    CHECK(!gwr_layer_get_ints(c, "is", &gi, &n) && n == 3 && gi[2] == 3);
    CHECK(!gwr_layer_get_floats(c, "fs", &gf, &n) && n == 2 && gf[1] == 1.5f);
    CHECK(!gwr_layer_get_strings(c, "ss", &gb, &n) && n == 2 && gb[1].len == 2 && !memcmp(gb[1].data, "bc", 2));
    CHECK(!gwr_layer_get_tensor(c, "t", &gw) && gw->nbytes == sizeof wd && ((const float *)gw->data)[1] == 8);
    CHECK(!gwr_layer_get_tensors(c, "ts", &gw, &n) && n == 1 && gw[0].dims[0] == 2);
    /* Graphs are deep-copied: an If with two one-layer branches. */
    gwr_dim one[1] = {1};
    gwr_tensor *cond = gwr_network_add_input(net, "cond", GWR_BOOL, 1, one);
    gwr_layer *iff = gwr_network_add_layer(net, "If", "", NULL, 1, &cond, 1, NULL);
    const char *br[2] = {"then_branch", "else_branch"};
    for (int k = 0; k < 2; k++) {
        gwr_network *g = gwr_network_new_subgraph(net, br[k]);
        gwr_tensor *o = gwr_add(g, x, gwr_constant_f32(g, (float)k));
        gwr_network_mark_output(g, o);
        CHECK_OK(gwr_layer_set_graph(iff, br[k], g));
    }
    gwr_tensor_set_type(gwr_layer_output(iff, 0), GWR_FLOAT32, 1, d);
    gwr_layer *ic = gwr_match_clone_layer(iff, 1, &cond);
    if (CHECK(ic)) {
        gwr_network *g0, *g1;
        CHECK_OK(gwr_layer_get_graph(iff, "then_branch", &g0));
        CHECK_OK(gwr_layer_get_graph(ic, "then_branch", &g1));
        CHECK(g0 != g1 && gwr_network_num_layers(g1) == gwr_network_num_layers(g0));
        CHECK_EQ_INT(gwr_network_num_outputs(g1), 1);
        CHECK(gwr_layer_input(gwr_tensor_parent(gwr_network_output(g1, 0)), 0) == x);
    }
    gwr_network_mark_output(net, gwr_layer_output(c, 0));
    if (ic) gwr_network_mark_output(net, gwr_layer_output(ic, 0));
    gwr_network_mark_output(net, gwr_layer_output(iff, 0));
    CHECK_OK(gwr_network_verify(net));
    /* Bad input. */
    CHECK(!gwr_match_clone_layer(NULL, 0, NULL));
    CHECK(!gwr_match_clone_layer(l, 2, NULL));
    CHECK_EQ_INT(gwr_match_copy_attrs(l, l), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_match_copy_attrs(NULL, l), GWR_ERR_INVALID_ARG);
    gwr_network_free(net);
}

TEST(replace_and_remove) {
    gwr_network *net = gwr_network_new("n");
    gwr_dim d[1] = {3};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, d);
    gwr_tensor *r = gwr_relu(net, x), *after = gwr_neg(net, r);
    gwr_network_mark_output(net, after);
    gwr_network_mark_output(net, r);
    gwr_layer *rl = gwr_tensor_parent(r);
    const char *rname = gwr_tensor_name(r);
    char saved[64];
    snprintf(saved, sizeof saved, "%s", rname);
    /* Errors change nothing. */
    int64_t i2[1] = {3};
    gwr_tensor *wrong = gwr_constant_i64s(net, 1, i2), *ok = gwr_sigmoid(net, x);
    CHECK_EQ_INT(gwr_match_replace_layer(rl, 1, &wrong), GWR_ERR_TYPE);
    CHECK_CONTAINS(gwr_last_errmsg(), "int64");
    CHECK_EQ_INT(gwr_match_replace_layer(rl, 2, &ok), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_match_replace_layer(rl, 1, &r), GWR_ERR_INVALID_ARG);
    gwr_tensor *none = NULL;
    CHECK_EQ_INT(gwr_match_replace_layer(rl, 1, &none), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_match_replace_layer(NULL, 1, &ok), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_match_replace_layer(rl, 1, NULL), GWR_ERR_INVALID_ARG);
    CHECK(!gwr_layer_is_removed(rl) && gwr_layer_input(gwr_tensor_parent(after), 0) == r);
    CHECK_EQ_INT(gwr_tensor_output_index(r), 1);
    /* A cycle: the replacement reads the layer's output. */
    gwr_tensor *cyc = gwr_exp(net, r);
    CHECK(gwr_match_replace_layer(rl, 1, &cyc) != GWR_OK);
    CHECK(!gwr_layer_is_removed(rl) && gwr_layer_input(gwr_tensor_parent(after), 0) == r);
    gwr_layer_mark_as_removed(gwr_tensor_parent(cyc));
    /* Success: readers and the output mark move, the name stays. */
    CHECK_OK(gwr_match_replace_layer(rl, 1, &ok));
    CHECK(gwr_layer_is_removed(rl) && gwr_layer_input(gwr_tensor_parent(after), 0) == ok);
    CHECK_STR(gwr_tensor_name(gwr_network_output(net, 1)), saved);
    CHECK_OK(gwr_network_prune(net, NULL));
    CHECK_OK(gwr_network_verify(net));
    gwr_match m = {0};
    CHECK_EQ_INT(gwr_match_replace(&m, 1, &ok), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_match_replace(NULL, 1, &ok), GWR_ERR_INVALID_ARG);
    gwr_network_free(net);
}

int main(void) {
    RUN(hswish_fires_both_orders);
    RUN(hswish_refuses);
    RUN(predicates_and_attributes);
    RUN(optional_and_rest_inputs);
    RUN(malformed_tables);
    RUN(rewrite_through_manager);
    RUN(constants_widened);
    RUN(constants_exact_ints);
    RUN(clone_keeps_attributes);
    RUN(replace_and_remove);
    return check_report();
}
