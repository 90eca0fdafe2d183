/* test_rules_instance.c - random instances of match tables (src/rules/instance.c),
 * on hand-written tables like those of src/passes: every instance verifies,
 * its root matches, its shapes fit the ops, the same seed draws the same
 * network, and an instance runs on the executor (HardSwish's instance
 * against the ONNX formula x * clip(x + 3, 0, 6) / 6). */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "gwr/gwr.h"
#include "rules/instance.h"

/* the HardSwish table of src/passes/activation.c, copied */
enum { X, K3, LO, HI, K6, W, B, S1, S2, NCAP };
static const gwr_match_node hs_div[] = {
    GWR_M_OP("Add", GWR_M_CAP(X), GWR_M_SPLAT(K3, 3.0)),
    GWR_M_OP("Clip", GWR_M_NODE(0), GWR_M_SPLAT(LO, 0.0), GWR_M_SPLAT(HI, 6.0)),
    GWR_M_OP("Mul", GWR_M_CAP(X), GWR_M_NODE(1)),
    GWR_M_OP("Div", GWR_M_NODE(2), GWR_M_SPLAT(K6, 6.0)),
};
static const gwr_match_pattern hswish = {"hard_swish.div", GWR_M_NODES(hs_div), NULL, NULL};

static const gwr_match_node matmul_add[] = {
    GWR_M_OP("MatMul", GWR_M_CAP(X), GWR_M_CONST(W)),
    GWR_M_OP("Add", GWR_M_NODE(0), GWR_M_CONST(B)),
};
static const gwr_match_pattern gemm = {"matmul_add", GWR_M_NODES(matmul_add), NULL, NULL};

static const gwr_match_node conv_bn[] = {
    {.op = "Conv", .in = {GWR_M_CAP(X), GWR_M_CONST(W), GWR_M_OPT_CONST(B)}},
    GWR_M_OP("BatchNormalization", GWR_M_NODE(0), GWR_M_CONST(K3), GWR_M_CONST(LO), GWR_M_CONST(HI), GWR_M_CONST(K6)),
};
static const gwr_match_pattern convbn = {"conv_bn", GWR_M_NODES(conv_bn), NULL, NULL};

static const int64_t perm021[] = {0, 2, 1};
static const gwr_match_node transposes[] = {
    {.op = "Transpose", .in = {GWR_M_CAP(X)}, .attrs = {GWR_MA_INTS("perm", perm021)}},
    {.op = "Transpose", .in = {GWR_M_NODE(0)}, .attrs = {GWR_MA_INTS("perm", perm021)}},
};
static const gwr_match_pattern transp = {"transposes", GWR_M_NODES(transposes), NULL, NULL};

static const gwr_match_node reshapes[] = {
    GWR_M_OP("Reshape", GWR_M_CAP(X), GWR_M_CONST(S1)),
    GWR_M_OP("Reshape", GWR_M_NODE(0), GWR_M_CONST(S2)),
};
static const gwr_match_pattern reshape2 = {"reshapes", GWR_M_NODES(reshapes), NULL, NULL};

static const gwr_match_node split_relu[] = {
    GWR_M_OP("Split", GWR_M_CAP(X)),
    GWR_M_OP("Relu", GWR_M_NODE_OUT(0, 1)),
};
static const gwr_match_pattern splitrelu = {"split_relu", GWR_M_NODES(split_relu), NULL, NULL};

static const gwr_match_node add_xx[] = {GWR_M_OP("Add", GWR_M_CAP(X), GWR_M_CAP(X))};
static const gwr_match_pattern addxx = {"add_xx", GWR_M_NODES(add_xx), NULL, NULL};

static int never(const gwr_match *m, int node, void *user) {
    (void)m, (void)node, (void)user;
    return 0;
}
static const gwr_match_node refused[] = {{.op = "Relu", .in = {GWR_M_CAP(X)}, .pred = never}};
static const gwr_match_pattern never_p = {"never", GWR_M_NODES(refused), NULL, NULL};

static int64_t dim(const gwr_tensor *t, int i) { return gwr_tensor_dim(t, i); }

static gwr_tensor *cap(const gwr_rules_instance *in, int slot) { return in->match.captures[slot]; }

TEST(hard_swish_instances_match_and_compute_hard_swish) {
    for (uint64_t seed = 1; seed <= 12; seed++) {
        gwr_rules_instance in;
        if (!CHECK_EQ_INT(gwr_rules_instance_new(&hswish, seed, NULL, &in), GWR_OK)) {
            fprintf(stderr, "  %s\n", gwr_last_errmsg());
            return;
        }
        CHECK_EQ_INT(gwr_network_verify(in.net), GWR_OK);
        CHECK_STR(gwr_layer_op(in.root), "Div");
        CHECK_EQ_INT(gwr_network_num_inputs(in.net), 1);
        CHECK_EQ_INT(gwr_network_num_outputs(in.net), 1);
        CHECK(gwr_tensor_is_input(cap(&in, X)));
        /* run it: the ONNX formula of HardSwish on the same input */
        gwr_session *s = gwr_session_new_raw(in.net, NULL);
        if (!CHECK(s != NULL)) return;
        gwr_tensor *x = gwr_network_input(in.net, 0);
        int64_t dims[GWR_MAX_RANK];
        for (int i = 0; i < gwr_tensor_rank(x); i++) dims[i] = dim(x, i);
        uint64_t st = seed * 77 + 1;
        gwr_value *xv = gwr_value_random(GWR_FLOAT32, gwr_tensor_rank(x), dims, &st), *yv = NULL;
        const float *xd = gwr_value_data(xv);
        for (int64_t i = 0; i < gwr_value_numel(xv); i++) ((float *)gwr_value_data(xv))[i] = xd[i] * 5.0f;
        const char *nm = gwr_tensor_name(x);
        if (CHECK_EQ_INT(gwr_session_run(s, 1, &nm, &xv, 1, NULL, &yv), GWR_OK)) {
            CHECK_EQ_INT(gwr_value_numel(yv), gwr_value_numel(xv));
            double worst = 0;
            for (int64_t i = 0; i < gwr_value_numel(xv); i++) {
                double v = xd[i], want = v * fmin(fmax(v + 3.0, 0.0), 6.0) / 6.0;
                worst = fmax(worst, fabs(want - ((const float *)gwr_value_cdata(yv))[i]));
            }
            CHECK(worst < 1e-5);
        }
        gwr_value_release(xv);
        gwr_value_release(yv);
        gwr_session_free(s);
        gwr_rules_instance_free(&in);
    }
}

TEST(matmul_right_side_takes_the_left_last_dim) {
    int strategies = 0;
    for (uint64_t seed = 0; seed < 10; seed++) {
        gwr_rules_instance in;
        if (!CHECK_EQ_INT(gwr_rules_instance_new(&gemm, seed, NULL, &in), GWR_OK)) return;
        gwr_tensor *x = cap(&in, X), *w = cap(&in, W), *b = cap(&in, B);
        CHECK(gwr_tensor_is_input(x));
        CHECK(!gwr_tensor_is_input(w) && !gwr_tensor_is_input(b));
        CHECK_EQ_INT(gwr_tensor_rank(w), 2);
        CHECK_EQ_INT(dim(w, 0), dim(x, -1));
        CHECK_EQ_INT(gwr_network_verify(in.net), GWR_OK);
        strategies |= 1 << in.strategy;
        gwr_rules_instance_free(&in);
    }
    CHECK(strategies != 0);
}

TEST(conv_batchnorm_parameters_per_channel) {
    for (uint64_t seed = 0; seed < 8; seed++) {
        gwr_rules_instance in;
        if (!CHECK_EQ_INT(gwr_rules_instance_new(&convbn, seed, NULL, &in), GWR_OK)) {
            fprintf(stderr, "  %s\n", gwr_last_errmsg());
            return;
        }
        gwr_tensor *x = cap(&in, X), *w = cap(&in, W), *var = cap(&in, K6);
        CHECK_EQ_INT(gwr_tensor_rank(x), 4);
        CHECK_EQ_INT(gwr_tensor_rank(w), 4);
        CHECK_EQ_INT(dim(w, 1), dim(x, 1));
        CHECK_EQ_INT(gwr_tensor_rank(var), 1);
        CHECK_EQ_INT(dim(var, 0), dim(w, 0));
        /* the variance is positive */
        double v[64];
        int64_t n = 0;
        if (CHECK_EQ_INT(gwr_match_const_f64(var, v, 64, &n, NULL, NULL), GWR_OK))
            for (int64_t i = 0; i < n; i++) CHECK(v[i] > 0);
        gwr_rules_instance_free(&in);
    }
}

TEST(attributes_and_int_inputs) {
    gwr_rules_instance in;
    if (CHECK_EQ_INT(gwr_rules_instance_new(&transp, 3, NULL, &in), GWR_OK)) {
        CHECK_EQ_INT(gwr_tensor_rank(cap(&in, X)), 3);
        const int64_t *p;
        int64_t n;
        CHECK_EQ_INT(gwr_layer_get_ints(in.root, "perm", &p, &n), GWR_OK);
        CHECK_EQ_INT(n, 3);
        gwr_rules_instance_free(&in);
    } else fprintf(stderr, "  %s\n", gwr_last_errmsg());
    for (uint64_t seed = 0; seed < 6; seed++) {
        if (!CHECK_EQ_INT(gwr_rules_instance_new(&reshape2, seed, NULL, &in), GWR_OK)) {
            fprintf(stderr, "  %s\n", gwr_last_errmsg());
            return;
        }
        CHECK_EQ_INT(gwr_tensor_dtype(cap(&in, S1)), GWR_INT64);
        CHECK(gwr_tensor_rank(gwr_layer_output(in.root, 0)) >= 1);
        gwr_rules_instance_free(&in);
    }
}

TEST(multi_output_node) {
    gwr_rules_instance in;
    if (!CHECK_EQ_INT(gwr_rules_instance_new(&splitrelu, 5, NULL, &in), GWR_OK)) {
        fprintf(stderr, "  %s\n", gwr_last_errmsg());
        return;
    }
    gwr_layer *split = in.match.layers[0];
    CHECK(gwr_layer_num_outputs(split) >= 2);
    CHECK(gwr_layer_input(in.root, 0) == gwr_layer_output(split, 1));
    gwr_rules_instance_free(&in);
}

TEST(capture_twice_in_one_node) {
    gwr_rules_instance in;
    if (!CHECK_EQ_INT(gwr_rules_instance_new(&addxx, 1, NULL, &in), GWR_OK)) return;
    CHECK(gwr_layer_input(in.root, 0) == gwr_layer_input(in.root, 1));
    CHECK_EQ_INT(gwr_network_num_inputs(in.net), 1);
    gwr_rules_instance_free(&in);
}

TEST(hints_fix_dtype_rank_and_shape) {
    static gwr_rules_slot_hint h[GWR_MATCH_MAX_CAPTURES];
    h[X] = (gwr_rules_slot_hint){.name = "a", .dtype = GWR_FLOAT16, .ranked = 1, .rank_min = 3, .rank_max = 3};
    h[B] = (gwr_rules_slot_hint){.name = "bias", .nshape = 1, .dims = {-1}};
    gwr_rules_instance_options o = {.hints = h};
    for (uint64_t seed = 0; seed < 6; seed++) {
        gwr_rules_instance in;
        if (!CHECK_EQ_INT(gwr_rules_instance_new(&gemm, seed, &o, &in), GWR_OK)) {
            fprintf(stderr, "  %s\n", gwr_last_errmsg());
            return;
        }
        CHECK_STR(gwr_tensor_name(cap(&in, X)), "a");
        CHECK_EQ_INT(gwr_tensor_dtype(cap(&in, X)), GWR_FLOAT16);
        CHECK_EQ_INT(gwr_tensor_dtype(cap(&in, W)), GWR_FLOAT16);
        CHECK_EQ_INT(gwr_tensor_rank(cap(&in, X)), 3);
        CHECK_EQ_INT(gwr_tensor_rank(cap(&in, B)), 1);
        CHECK_EQ_INT(dim(cap(&in, B), 0), dim(cap(&in, W), 1));
        gwr_rules_instance_free(&in);
    }
}

TEST(captured_attributes_are_drawn) {
    /* Transpose<perm=p2>(Transpose<perm=p1>(x)): both perms drawn, each a permutation of x's rank */
    static const gwr_match_node tt[] = {GWR_M_OP("Transpose", GWR_M_CAP(X)), GWR_M_OP("Transpose", GWR_M_NODE(0))};
    static const gwr_match_pattern ttp = {"tt", GWR_M_NODES(tt), NULL, NULL};
    static const gwr_rules_attr_draw perms[] = {{.node = 0, .name = "perm"}, {.node = 1, .name = "perm"}};
    gwr_rules_instance_options o = {.attrs = perms, .nattrs = 2};
    for (uint64_t seed = 0; seed < 6; seed++) {
        gwr_rules_instance in;
        if (!CHECK_EQ_INT(gwr_rules_instance_new(&ttp, seed, &o, &in), GWR_OK)) return;
        int r = gwr_tensor_rank(cap(&in, X));
        for (int k = 0; k < 2; k++) {
            const int64_t *p;
            int64_t n;
            if (!CHECK_EQ_INT(gwr_layer_get_ints(in.match.layers[k], "perm", &p, &n), GWR_OK)) continue;
            CHECK_EQ_INT(n, r);
            int seen = 0;
            for (int j = 0; j < n; j++) seen |= p[j] >= 0 && p[j] < r ? 1 << p[j] : 0;
            CHECK_EQ_INT(seen, (1 << r) - 1);
        }
        gwr_rules_instance_free(&in);
    }
}

TEST(variadic_rest_gets_operands) {
    static const gwr_match_node cat[] = {{.op = "Concat", .in = {GWR_M_REST}, .attrs = {GWR_MA_INT("axis", 0)}}};
    static const gwr_match_pattern catp = {"concat", GWR_M_NODES(cat), NULL, NULL};
    static const gwr_match_node sum[] = {GWR_M_OP("Sum", GWR_M_CAP(X), GWR_M_REST)};
    static const gwr_match_pattern sump = {"sum", GWR_M_NODES(sum), NULL, NULL};
    for (uint64_t seed = 0; seed < 4; seed++) {
        gwr_rules_instance in;
        if (CHECK_EQ_INT(gwr_rules_instance_new(&catp, seed, NULL, &in), GWR_OK)) {
            CHECK(gwr_layer_num_inputs(in.root) >= 1);
            gwr_rules_instance_free(&in);
        }
        if (CHECK_EQ_INT(gwr_rules_instance_new(&sump, seed, NULL, &in), GWR_OK)) {
            CHECK(gwr_layer_num_inputs(in.root) >= 2);
            gwr_rules_instance_free(&in);
        }
    }
}

TEST(matcher_v2_tables) {
    /* op alternatives, an EITHER sub-pattern, a tolerance SPLAT, constraints on a capture,
     * a minimum of rest operands, a captured attribute */
    static const char *const relu_or_sigmoid[] = {"Relu", "Sigmoid", NULL};
    static const gwr_match_node v2[] = {
        GWR_M_OP("Pow", GWR_M_CAP_IF(X, .dtypes = GWR_M_DT(GWR_FLOAT64) | GWR_M_DT(GWR_INT32), GWR_M_RANKS(3, 3)),
                 GWR_M_SPLAT(K3, 2.0)),                                              /* 0 */
        GWR_M_OP("Mul", GWR_M_CAP(X), GWR_M_CAP(X)),                                /* 1 */
        {.ops = relu_or_sigmoid, .in = {GWR_M_EITHER(0, 1)}}, /* 2 */
        {.op = "Softmax", .in = {GWR_M_NODE(2)}, .attrs = {GWR_MA_CAPTURE("axis", 0)}},   /* 3 */
        GWR_M_OP("Mul", GWR_M_NODE(3), GWR_M_SPLAT_TOL(K6, 1.4142135, 1e-4)),      /* 4 */
        {.op = "Concat", .in = {GWR_M_NODE(4), GWR_M_REST_MIN(2)}, .attrs = {GWR_MA_INT("axis", 0)}}, /* 5 */
    };
    static const gwr_match_pattern v2p = {"v2", GWR_M_NODES(v2), NULL, NULL};
    gwr_rules_instance_options o = {.perturb = 1};
    int ops = 0, alts = 0;
    for (uint64_t seed = 0; seed < 16; seed++) {
        gwr_rules_instance in;
        if (!CHECK_EQ_INT(gwr_rules_instance_new(&v2p, seed, &o, &in), GWR_OK)) {
            fprintf(stderr, "  %s\n", gwr_last_errmsg());
            return;
        }
        if (in.match.layers[0]) { /* the constraints of node 0's reference (not there when node 1 was taken) */
            CHECK_EQ_INT(gwr_tensor_dtype(cap(&in, X)), GWR_FLOAT64);
            CHECK_EQ_INT(gwr_tensor_rank(cap(&in, X)), 3);
        }
        CHECK(gwr_match_const_is_splat(cap(&in, K6), 1.4142135, 1e-4));
        CHECK(gwr_layer_num_inputs(in.root) >= 3);
        CHECK(gwr_layer_has_attr(in.match.layers[3], "axis"));
        CHECK((in.match.layers[0] != NULL) != (in.match.layers[1] != NULL));
        ops |= 1 << !strcmp(gwr_layer_op(in.match.layers[2]), "Relu");
        alts |= 1 << (in.match.layers[0] != NULL);
        gwr_rules_instance_free(&in);
    }
    CHECK_EQ_INT(ops, 3);  /* both alternatives of the op drawn */
    CHECK_EQ_INT(alts, 3); /* both sub-patterns drawn */
}

TEST(logical_and_bitwise_ops_get_their_dtypes) {
    static const gwr_match_node nn[] = {GWR_M_OP("Not", GWR_M_CAP(X)), GWR_M_OP("And", GWR_M_NODE(0), GWR_M_CONST(W))};
    static const gwr_match_pattern nnp = {"not_and", GWR_M_NODES(nn), NULL, NULL};
    static const gwr_match_node bw[] = {GWR_M_OP("BitwiseAnd", GWR_M_CAP(X), GWR_M_CONST(W))};
    static const gwr_match_pattern bwp = {"bitwise", GWR_M_NODES(bw), NULL, NULL};
    gwr_rules_instance in;
    if (CHECK_EQ_INT(gwr_rules_instance_new(&nnp, 1, NULL, &in), GWR_OK)) {
        CHECK_EQ_INT(gwr_tensor_dtype(cap(&in, X)), GWR_BOOL);
        CHECK_EQ_INT(gwr_tensor_dtype(cap(&in, W)), GWR_BOOL);
        gwr_rules_instance_free(&in);
    }
    if (CHECK_EQ_INT(gwr_rules_instance_new(&bwp, 1, NULL, &in), GWR_OK)) {
        CHECK_EQ_INT(gwr_tensor_dtype(cap(&in, X)), GWR_INT32);
        CHECK_EQ_INT(gwr_tensor_dtype(cap(&in, W)), GWR_INT32);
        gwr_rules_instance_free(&in);
    }
}

TEST(axes_inputs_are_1d_int64) {
    static const gwr_match_node us[] = {GWR_M_OP("Unsqueeze", GWR_M_CAP(X), GWR_M_CONST(S1)),
                                        GWR_M_OP("Squeeze", GWR_M_NODE(0), GWR_M_CONST(S1))};
    static const gwr_match_pattern usp = {"unsqueeze_squeeze", GWR_M_NODES(us), NULL, NULL};
    for (uint64_t seed = 0; seed < 5; seed++) {
        gwr_rules_instance in;
        if (!CHECK_EQ_INT(gwr_rules_instance_new(&usp, seed, NULL, &in), GWR_OK)) return;
        CHECK_EQ_INT(gwr_tensor_dtype(cap(&in, S1)), GWR_INT64);
        CHECK_EQ_INT(gwr_tensor_rank(cap(&in, S1)), 1);
        gwr_session *s = gwr_session_new_raw(in.net, NULL);
        CHECK(s != NULL);
        gwr_session_free(s);
        gwr_rules_instance_free(&in);
    }
}

static int is_one(const gwr_match *m, int node, void *user) {
    (void)node, (void)user;
    double v;
    return gwr_match_const_scalar(m->captures[W], &v) && v == 1.0;
}

TEST(special_constant_values) {
    /* Mul(x, c) where c is the scalar 1: random constants never are; a round of special values is */
    static const gwr_match_node mo[] = {{.op = "Mul", .in = {GWR_M_CAP(X), GWR_M_CONST(W)}, .pred = is_one}};
    static const gwr_match_pattern mop = {"times_one", GWR_M_NODES(mo), NULL, NULL};
    gwr_rules_instance in;
    if (CHECK_EQ_INT(gwr_rules_instance_new(&mop, 1, NULL, &in), GWR_OK)) {
        CHECK_EQ_INT(gwr_tensor_rank(cap(&in, W)), 0);
        gwr_rules_instance_free(&in);
    } else
        fprintf(stderr, "  %s\n", gwr_last_errmsg());
}

TEST(same_seed_same_network) {
    gwr_rules_instance a, b, c;
    if (!CHECK_EQ_INT(gwr_rules_instance_new(&convbn, 42, NULL, &a), GWR_OK)) return;
    if (!CHECK_EQ_INT(gwr_rules_instance_new(&convbn, 42, NULL, &b), GWR_OK)) return;
    if (!CHECK_EQ_INT(gwr_rules_instance_new(&convbn, 43, NULL, &c), GWR_OK)) return;
    char why[256];
    CHECK(gwr_network_equal(a.net, b.net, why, sizeof why));
    CHECK(!gwr_network_equal(a.net, c.net, why, sizeof why));
    gwr_rules_instance_free(&a);
    gwr_rules_instance_free(&b);
    gwr_rules_instance_free(&c);
}

TEST(whole_literals_stay_exact) {
    /* Pow(x, 2.0): the exponent is not perturbed (2.0000005 would be NaN for x < 0) */
    static const gwr_match_node pw[] = {GWR_M_OP("Pow", GWR_M_CAP(X), GWR_M_SPLAT(K3, 2.0))};
    static const gwr_match_pattern pwp = {"pow2", GWR_M_NODES(pw), NULL, NULL};
    gwr_rules_instance_options o = {.perturb = 1};
    for (uint64_t seed = 0; seed < 6; seed++) {
        gwr_rules_instance in;
        if (!CHECK_EQ_INT(gwr_rules_instance_new(&pwp, seed, &o, &in), GWR_OK)) return;
        CHECK(gwr_match_const_is_splat(cap(&in, K3), 2.0, 0.0));
        gwr_rules_instance_free(&in);
    }
}

TEST(splat_perturbed_within_tolerance) {
    /* 0.5 within the literals' 1e-6; 1.4142135 within its declared 1e-4 */
    static const gwr_match_node hm[] = {GWR_M_OP("Mul", GWR_M_CAP(X), GWR_M_SPLAT(K3, 0.5)),
                                        GWR_M_OP("Div", GWR_M_NODE(0), GWR_M_SPLAT_TOL(K6, 1.4142135, 1e-4))};
    static const gwr_match_pattern hmp = {"half", GWR_M_NODES(hm), NULL, NULL};
    gwr_rules_instance_options o = {.perturb = 1};
    int moved = 0;
    for (uint64_t seed = 0; seed < 6; seed++) {
        gwr_rules_instance in;
        if (!CHECK_EQ_INT(gwr_rules_instance_new(&hmp, seed, &o, &in), GWR_OK)) return;
        CHECK(gwr_match_const_is_splat(cap(&in, K3), 0.5, 1e-6));
        CHECK(gwr_match_const_is_splat(cap(&in, K6), 1.4142135, 1e-4));
        moved += !gwr_match_const_is_splat(cap(&in, K3), 0.5, 0.0);
        moved += !gwr_match_const_is_splat(cap(&in, K6), 1.4142135, 1e-7);
        gwr_rules_instance_free(&in);
    }
    CHECK(moved > 0);
}

TEST(no_instance_says_why) {
    gwr_rules_instance in;
    gwr_rules_instance_options o = {.max_tries = 7};
    CHECK_EQ_INT(gwr_rules_instance_new(&never_p, 1, &o, &in), GWR_ERR_NOT_FOUND);
    CHECK_CONTAINS(gwr_last_errmsg(), "no instance in 7 draws");
    CHECK_CONTAINS(gwr_last_errmsg(), "predicate");
    CHECK(in.net == NULL);
    static const gwr_match_node bad[] = {GWR_M_OP("Relu", GWR_M_NODE(0))};
    static const gwr_match_pattern badp = {"bad", GWR_M_NODES(bad), NULL, NULL};
    CHECK_EQ_INT(gwr_rules_instance_new(&badp, 1, NULL, &in), GWR_ERR_INVALID_ARG);
}

TEST(print_lists_layers_with_types) {
    gwr_rules_instance in;
    if (!CHECK_EQ_INT(gwr_rules_instance_new(&gemm, 9, NULL, &in), GWR_OK)) return;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    gwr_rules_instance_print(in.net, f, "  ");
    fclose(f);
    CHECK_CONTAINS(buf, "  input x0: float32[");
    CHECK_CONTAINS(buf, " = MatMul(x0: float32[");
    CHECK_CONTAINS(buf, " = Add(");
    free(buf);
    gwr_rules_instance_free(&in);
}

int main(void) {
    RUN(hard_swish_instances_match_and_compute_hard_swish);
    RUN(matmul_right_side_takes_the_left_last_dim);
    RUN(conv_batchnorm_parameters_per_channel);
    RUN(attributes_and_int_inputs);
    RUN(multi_output_node);
    RUN(capture_twice_in_one_node);
    RUN(hints_fix_dtype_rank_and_shape);
    RUN(captured_attributes_are_drawn);
    RUN(variadic_rest_gets_operands);
    RUN(matcher_v2_tables);
    RUN(logical_and_bitwise_ops_get_their_dtypes);
    RUN(axes_inputs_are_1d_int64);
    RUN(special_constant_values);
    RUN(same_seed_same_network);
    RUN(whole_literals_stay_exact);
    RUN(splat_perturbed_within_tolerance);
    RUN(no_instance_says_why);
    RUN(print_lists_layers_with_types);
    return check_report();
}
