/* test_rules_check.c - rules check and lint (src/rules/check.c, lint.c) on
 * rules written as C match tables with rewrite callbacks: a right rule
 * passes, a wrong one fails with its instance, and lint finds a loop, a
 * pair that undoes itself and a shadowed rule, and nothing in a clean set. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "rules/check.h"

enum { X, Y, K, NCAP };

static char *run_to_string(int (*fn)(const gwr_rules_item *, int, const gwr_rules_check_opts *, FILE *),
                           const gwr_rules_item *items, int n, const gwr_rules_check_opts *o, int *rc) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    *rc = fn(items, n, o, f);
    fclose(f);
    return buf;
}

static int check_fn(const gwr_rules_item *items, int n, const gwr_rules_check_opts *o, FILE *f) {
    return gwr_rules_check_items(items, n, o, f, NULL);
}

/* x * 2 => x + x (right), x * 3 => x + x (wrong) */
static int to_add_xx(gwr_rewrite_ctx *c, const gwr_match *m) {
    gwr_tensor *x = m->captures[X], *y = gwr_add(gwr_rewrite_ctx_network(c), x, x);
    if (!y) return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "add");
    gwr_status s = gwr_match_replace(m, 1, &y);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}
static const gwr_match_node mul2_n[] = {GWR_M_OP("Mul", GWR_M_CAP(X), GWR_M_SPLAT(K, 2.0))};
static const gwr_match_node mul3_n[] = {GWR_M_OP("Mul", GWR_M_CAP(X), GWR_M_SPLAT(K, 3.0))};
static const gwr_match_pattern mul2 = {"mul2", GWR_M_NODES(mul2_n), to_add_xx, NULL};
static const gwr_match_pattern mul3 = {"mul3", GWR_M_NODES(mul3_n), to_add_xx, NULL};

/* x + x => x * 2 (undoes mul2) */
static int to_mul2(gwr_rewrite_ctx *c, const gwr_match *m) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    gwr_tensor *two = gwr_constant_f32(net, 2.0f), *y = two ? gwr_mul(net, m->captures[X], two) : NULL;
    if (!y) return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "mul");
    gwr_status s = gwr_match_replace(m, 1, &y);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}
static const gwr_match_node addxx_n[] = {GWR_M_OP("Add", GWR_M_CAP(X), GWR_M_CAP(X))};
static const gwr_match_pattern addxx = {"add_xx", GWR_M_NODES(addxx_n), to_mul2, NULL};

/* a + b => b + a (a loop) */
static int to_swapped(gwr_rewrite_ctx *c, const gwr_match *m) {
    gwr_tensor *y = gwr_add(gwr_rewrite_ctx_network(c), m->captures[Y], m->captures[X]);
    if (!y) return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "add");
    gwr_status s = gwr_match_replace(m, 1, &y);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}
static const gwr_match_node swap_n[] = {GWR_M_OP("Add", GWR_M_CAP(X), GWR_M_CAP(Y))};
static const gwr_match_pattern swap = {"swap_add", GWR_M_NODES(swap_n), to_swapped, NULL};

/* Neg(Neg(x)) => x, and the same pattern => Identity(x) (shadowed when tried second) */
static int to_x(gwr_rewrite_ctx *c, const gwr_match *m) {
    gwr_tensor *x = m->captures[X];
    gwr_status s = gwr_match_replace(m, 1, &x);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}
static int to_identity(gwr_rewrite_ctx *c, const gwr_match *m) {
    gwr_tensor *x = m->captures[X], *y = NULL;
    if (!gwr_op_call(gwr_rewrite_ctx_network(c), "", "Identity", 1, &x, NULL, 1, &y))
        return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "identity");
    gwr_status s = gwr_match_replace(m, 1, &y);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}
static const gwr_match_node negneg_n[] = {GWR_M_OP("Neg", GWR_M_CAP(X)), GWR_M_OP("Neg", GWR_M_NODE(0))};
static const gwr_match_pattern negneg = {"neg_neg", GWR_M_NODES(negneg_n), to_x, NULL};
static const gwr_match_pattern negneg_id = {"neg_neg_identity", GWR_M_NODES(negneg_n), to_identity, NULL};

/* Relu(x) => Relu(x) reshaped to [-1]: the wrong shape for the root */
static int to_flat(gwr_rewrite_ctx *c, const gwr_match *m) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    int64_t minus1 = -1;
    gwr_tensor *x = m->captures[X], *r = NULL, *in[2] = {x, gwr_constant_i64s(net, 1, &minus1)};
    gwr_tensor *y = gwr_relu(net, x);
    in[0] = y;
    if (!y || !in[1] || !gwr_op_call(net, "", "Reshape", 2, in, NULL, 1, &r)) return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "reshape");
    gwr_status s = gwr_match_replace(m, 1, &r);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}
static const gwr_match_node relu_n[] = {GWR_M_OP("Relu", GWR_M_CAP(X))};
static const gwr_match_pattern relu_flat = {"relu_flat", GWR_M_NODES(relu_n), to_flat, NULL};

static int refuse_all(gwr_rewrite_ctx *c, gwr_layer *l) {
    (void)l;
    return gwr_rewrite_no_match(c, "the replacement's rank differs");
}
static int never(const gwr_match *m, int node, void *user) {
    (void)m, (void)node, (void)user;
    return 0;
}
static const gwr_match_node never_n[] = {{.op = "Relu", .in = {GWR_M_CAP(X)}, .pred = never}};
static const gwr_match_pattern never_p = {"never", GWR_M_NODES(never_n), to_x, NULL};

static gwr_rules_item item(const gwr_match_pattern *p, int line, int benefit, double tol) {
    gwr_rules_item it = {.name = p->name, .file = "t.rules", .line = line, .benefit = benefit, .tol = tol, .pattern = p};
    gwr_match_rewriter(p, &it.rewriter);
    return it;
}

TEST(right_rule_passes_wrong_rule_fails_with_its_instance) {
    gwr_rules_item items[] = {item(&mul2, 3, 0, 0), item(&mul3, 5, 0, 0)};
    gwr_rules_check_result res[2];
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    gwr_rules_check_opts o = {.instances = 5, .seed = 7};
    int failed = gwr_rules_check_items(items, 2, &o, f, res);
    fclose(f);
    CHECK_EQ_INT(failed, 1);
    CHECK(res[0].pass);
    CHECK_EQ_INT(res[0].checked, 5);
    CHECK(res[0].max_abs <= 1e-6);
    CHECK(!res[1].pass);
    CHECK(res[1].max_abs > 0.05);  /* |3x - 2x| = |x|, x uniform in [-1, 1) */
    CHECK_CONTAINS(buf, "t.rules:3: rule mul2: ok: 5 instances");
    CHECK_CONTAINS(buf, "t.rules:5: rule mul3: FAIL: instance 0: output '");
    CHECK_CONTAINS(buf, "beyond tol 1e-05");
    CHECK_CONTAINS(buf, "  instance (seed ");
    CHECK_CONTAINS(buf, " = Mul(x0: float32[");
    CHECK_CONTAINS(buf, "  inputs: seeded random, seed ");
    CHECK_CONTAINS(buf, " = Add(x0: float32[");
    free(buf);
}

TEST(loose_tolerance_lets_it_pass) {
    /* |3x - 2x| <= 1 + 1 * |2x| always */
    gwr_rules_item items[] = {item(&mul3, 5, 0, 1.0)};
    int rc;
    char *buf = run_to_string(check_fn, items, 1, NULL, &rc);
    CHECK_EQ_INT(rc, 0);
    CHECK_CONTAINS(buf, "rule mul3: ok");
    free(buf);
}

TEST(a_rule_that_does_not_fire_fails) {
    /* the table matches Mul by 2, the rewrite refuses nothing, but a rewriter of another table runs */
    gwr_rules_item it = item(&mul2, 9, 0, 0);
    gwr_match_rewriter(&negneg, &it.rewriter);
    int rc;
    char *buf = run_to_string(check_fn, &it, 1, NULL, &rc);
    CHECK_EQ_INT(rc, 1);
    CHECK_CONTAINS(buf, "t.rules:9: rule mul2: FAIL: did not fire on instance 0");
    free(buf);
}

TEST(same_seed_same_report) {
    gwr_rules_item items[] = {item(&mul3, 5, 0, 0)};
    gwr_rules_check_opts o = {.seed = 11};
    int rc1, rc2;
    char *a = run_to_string(check_fn, items, 1, &o, &rc1), *b = run_to_string(check_fn, items, 1, &o, &rc2);
    CHECK_STR(a, b);
    free(a);
    free(b);
}

TEST(lint_finds_a_loop) {
    gwr_rules_item items[] = {item(&swap, 2, 0, 0)};
    int rc;
    char *buf = run_to_string(gwr_rules_lint_items, items, 1, NULL, &rc);
    CHECK_EQ_INT(rc, 1);
    CHECK_CONTAINS(buf, "t.rules:2: rule swap_add loops");
    free(buf);
}

TEST(lint_finds_an_undo_pair) {
    gwr_rules_item items[] = {item(&mul2, 1, 0, 0), item(&addxx, 4, 0, 0)};
    int rc;
    char *buf = run_to_string(gwr_rules_lint_items, items, 2, NULL, &rc);
    CHECK_EQ_INT(rc, 1);
    CHECK_CONTAINS(buf, "t.rules:1: rules mul2 and add_xx (t.rules:4) undo each other");
    /* in different phases they never meet */
    items[1].phase = 1;
    free(buf);
    buf = run_to_string(gwr_rules_lint_items, items, 2, NULL, &rc);
    CHECK_EQ_INT(rc, 0);
    free(buf);
}

TEST(lint_finds_a_shadowed_rule) {
    gwr_rules_item items[] = {item(&negneg, 1, 5, 0), item(&negneg_id, 2, 1, 0)};
    int rc;
    char *buf = run_to_string(gwr_rules_lint_items, items, 2, NULL, &rc);
    CHECK_EQ_INT(rc, 1);
    CHECK_CONTAINS(buf, "t.rules:2: rule neg_neg_identity is shadowed by rule neg_neg (t.rules:1, benefit 5");
    free(buf);
    /* the other way round (the Identity one first): neg_neg is the shadowed one */
    items[1].benefit = 5;
    items[0].benefit = 1;
    buf = run_to_string(gwr_rules_lint_items, items, 2, NULL, &rc);
    CHECK_EQ_INT(rc, 1);
    CHECK_CONTAINS(buf, "t.rules:1: rule neg_neg is shadowed by rule neg_neg_identity (t.rules:2");
    free(buf);
}

TEST(lint_clean_set) {
    gwr_rules_item items[] = {item(&mul2, 1, 0, 0), item(&negneg, 2, 0, 0)};
    int rc;
    char *buf = run_to_string(gwr_rules_lint_items, items, 2, NULL, &rc);
    CHECK_EQ_INT(rc, 0);
    CHECK(!buf || !strstr(buf, "shadowed"));
    free(buf);
}

TEST(type_check_refuses_a_replacement_of_another_shape) {
    char why[512];
    gwr_rules_item ok = item(&mul2, 1, 0, 0), bad = item(&relu_flat, 2, 0, 0);
    CHECK_EQ_INT(gwr_rules_check_types(&ok, 1, why, sizeof why), GWR_OK);
    CHECK_STR(why, "");
    gwr_status s = gwr_rules_check_types(&bad, 1, why, sizeof why);
    CHECK_EQ_INT(s, GWR_ERR_SHAPE); /* Reshape to [-1]: another rank */
    CHECK_CONTAINS(why, "the replacement gives float32[");
    /* a rewrite that refuses its own replacement after the table matched */
    gwr_rules_item refuse = item(&mul2, 3, 0, 0);
    refuse.rewriter.match_and_rewrite = refuse_all;
    s = gwr_rules_check_types(&refuse, 1, why, sizeof why);
    CHECK_EQ_INT(s, GWR_ERR_SHAPE);
    CHECK_CONTAINS(why, "the replacement does not fit the pattern's root (float32[");
    CHECK_CONTAINS(why, "on an instance): the replacement's rank differs");
    /* no instance: nothing to say */
    gwr_rules_item none = item(&never_p, 4, 0, 0);
    CHECK_EQ_INT(gwr_rules_check_types(&none, 1, why, sizeof why), GWR_ERR_NOT_FOUND);
}

/* ---- the hand-written passes of src/passes, checked on copies of their tables ---- */

enum { HX, HK3, HLO, HHI, HK6 };
static const gwr_match_node hs_div[] = {
    GWR_M_OP("Add", GWR_M_CAP(HX), GWR_M_SPLAT(HK3, 3.0)),
    GWR_M_OP("Clip", GWR_M_NODE(0), GWR_M_SPLAT(HLO, 0.0), GWR_M_SPLAT(HHI, 6.0)),
    GWR_M_OP("Mul", GWR_M_CAP(HX), GWR_M_NODE(1)),
    GWR_M_OP("Div", GWR_M_NODE(2), GWR_M_SPLAT(HK6, 6.0)),
};
static const gwr_match_node hs_mul[] = {
    GWR_M_OP("Add", GWR_M_CAP(HX), GWR_M_SPLAT(HK3, 3.0)),
    GWR_M_OP("Clip", GWR_M_NODE(0), GWR_M_SPLAT(HLO, 0.0), GWR_M_SPLAT(HHI, 6.0)),
    GWR_M_OP("Mul", GWR_M_CAP(HX), GWR_M_NODE(1)),
    GWR_M_OP("Mul", GWR_M_NODE(2), GWR_M_CONST(HK6)),
};
static const gwr_match_node matmul_add[] = {
    GWR_M_OP("MatMul", GWR_M_CAP(0), GWR_M_CONST(1)),
    GWR_M_OP("Add", GWR_M_NODE(0), GWR_M_CONST(2)),
};
#define BN_ROOT {.op = "BatchNormalization", .in = {GWR_M_NODE(0), GWR_M_CONST(3), GWR_M_CONST(4), GWR_M_CONST(5), GWR_M_CONST(6)}}
static const gwr_match_node conv_bn[] = {GWR_M_OP("Conv", GWR_M_CAP(0), GWR_M_CONST(1), GWR_M_OPT_CONST(2)), BN_ROOT};
static const gwr_match_node gemm_bn[] = {GWR_M_OP("Gemm", GWR_M_CAP(0), GWR_M_CONST(1), GWR_M_OPT_CONST(2)), BN_ROOT};
static const gwr_match_node matmul_bn[] = {GWR_M_OP("MatMul", GWR_M_CAP(0), GWR_M_CONST(1)), BN_ROOT};
static const gwr_match_node silu[] = {GWR_M_OP("Sigmoid", GWR_M_CAP(0)), GWR_M_OP("Mul", GWR_M_CAP(0), GWR_M_NODE(0))};
static const gwr_match_node mul_one[] = {GWR_M_OP("Mul", GWR_M_CAP(0), GWR_M_CONST(1))};
static const gwr_match_node tt[] = {GWR_M_OP("Transpose", GWR_M_CAP(0)), GWR_M_OP("Transpose", GWR_M_NODE(0))};
static const gwr_match_node gelu_div_last[] = {
    GWR_M_OP("Div", GWR_M_CAP(0), GWR_M_CONST(1)), GWR_M_OP("Erf", GWR_M_NODE(0)),
    GWR_M_OP("Add", GWR_M_NODE(1), GWR_M_SPLAT(2, 1.0)), GWR_M_OP("Mul", GWR_M_CAP(0), GWR_M_NODE(2)),
    GWR_M_OP("Mul", GWR_M_NODE(3), GWR_M_SPLAT(3, 0.5)),
};

TEST(hand_written_passes_pass_check_on_their_tables) {
    static const gwr_match_pattern tables[] = {
        {"fuse_hard_swish.div", GWR_M_NODES(hs_div), NULL, NULL},
        {"fuse_hard_swish.mul", GWR_M_NODES(hs_mul), NULL, NULL},
        {"fuse_matmul_add", GWR_M_NODES(matmul_add), NULL, NULL},
        {"fold_batchnorm.conv", GWR_M_NODES(conv_bn), NULL, NULL},
        {"fold_batchnorm.gemm", GWR_M_NODES(gemm_bn), NULL, NULL},
        {"fold_batchnorm.matmul", GWR_M_NODES(matmul_bn), NULL, NULL},
        {"fuse_silu", GWR_M_NODES(silu), NULL, NULL},
        {"eliminate_noop_arith.mul_one", GWR_M_NODES(mul_one), NULL, NULL},
        {"compose_transposes", GWR_M_NODES(tt), NULL, NULL},
        {"fuse_gelu.erf_div_last", GWR_M_NODES(gelu_div_last), NULL, NULL},
    };
    static gwr_rules_slot_hint sixth[GWR_MATCH_MAX_CAPTURES], one[GWR_MATCH_MAX_CAPTURES], sqrt2[GWR_MATCH_MAX_CAPTURES];
    sixth[HK6] = (gwr_rules_slot_hint){.has_value = 1, .value = 1.0 / 6.0, .tol = 1e-7};
    one[1] = (gwr_rules_slot_hint){.has_value = 1, .value = 1.0};
    sqrt2[1] = (gwr_rules_slot_hint){.has_value = 1, .value = 1.41421356237, .tol = 1e-5};
    /* what the C callbacks check beyond their tables: MatMul's input of rank 2, target ort for QuickGelu */
    static gwr_rules_slot_hint rank2[GWR_MATCH_MAX_CAPTURES];
    rank2[0] = (gwr_rules_slot_hint){.ranked = 1, .rank_min = 2, .rank_max = 2};
    gwr_args *ort = gwr_args_new();
    gwr_args_set_int(ort, "target", GWR_TARGET_ORT);
    /* by label: eight of these passes are rule files now (src/passes/rules) */
    static const char *const labels[] = {
        "fuse_hard_swish", "fuse_hard_swish", "fuse_matmul_add", "fold_batchnorm", "fold_batchnorm",
        "fold_batchnorm", "fuse_silu", "eliminate_noop_arith", "compose_transposes", "fuse_gelu",
    };
    const gwr_pattern_rewriter *passes[sizeof labels / sizeof labels[0]];
    for (size_t i = 0; i < sizeof labels / sizeof labels[0]; i++) {
        passes[i] = NULL;
        for (int k = 0; k < gwr_passes_count(); k++)
            if (!strcmp(gwr_passes_label(k), labels[i])) passes[i] = gwr_passes_info(k)->pattern;
        if (!CHECK(passes[i] != NULL)) return;
    }
    const gwr_rules_slot_hint *hints[] = {NULL, sixth, rank2, NULL, NULL, rank2, NULL, one, NULL, sqrt2};
    enum { N = sizeof tables / sizeof tables[0] };
    gwr_rules_item items[N];
    for (int i = 0; i < N; i++)
        items[i] = (gwr_rules_item){.name = tables[i].name, .file = "passes", .line = i + 1, .tol = 1e-4,
                                    .pattern = &tables[i], .rewriter = *passes[i], .hints = hints[i],
                                    .args = !strcmp(labels[i], "fuse_silu") ? ort : NULL};
    gwr_rules_check_result res[N];
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    gwr_rules_check_opts o = {.instances = 6, .seed = 3};
    int failed = gwr_rules_check_items(items, N, &o, f, res);
    fclose(f);
    if (!CHECK_EQ_INT(failed, 0)) fprintf(stderr, "%s", buf);
    for (int i = 0; i < N; i++) CHECK_EQ_INT(res[i].checked, 6);
    free(buf);
    gwr_args_free(ort);
}

/* ---- the public API on parsed rules ---- */

static char *api_run(int lint, const char *text, int *rc) {
    gwr_rules *r = NULL;
    if (gwr_rules_parse(text, "api.rules", &r)) {
        fprintf(stderr, "%s\n", gwr_last_errmsg());
        *rc = -100;
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    gwr_rules_check_options o = {.instances = 3, .seed = 1};
    *rc = lint ? gwr_rules_lint(r, &o, f) : gwr_rules_check(r, &o, f);
    fclose(f);
    gwr_rules_free(r);
    return buf;
}

TEST(api_check_and_lint_parsed_rules) {
    int rc;
    char *buf = api_run(0, "rule mul2:\n  Mul(x, 2.0) => Add(x, x)\nrule mul3:\n  Mul(x, 3.0) => Add(x, x)\n", &rc);
    CHECK_EQ_INT(rc, 1);
    CHECK_CONTAINS(buf, "api.rules:1: rule mul2: ok: 3 instances");
    CHECK_CONTAINS(buf, "api.rules:3: rule mul3: FAIL: instance 0");
    free(buf);
    /* alternatives: each is checked, one rule counted once */
    buf = api_run(0, "rule nn:\n  (Neg(Neg(x)) | Relu(Relu(x))) => x\n", &rc);
    CHECK_EQ_INT(rc, 1); /* Relu(Relu(x)) is not x */
    CHECK_CONTAINS(buf, "rule nn: ok");  /* the Neg alternative */
    CHECK_CONTAINS(buf, "rule nn: FAIL");
    free(buf);
    buf = api_run(1, "rule swap:\n  Add(a, b) => Add(b, a)\nrule nn benefit 20:\n  Neg(Neg(x)) => x\n"
                     "rule nn_id:\n  Neg(Neg(x)) => Identity(x)\n", &rc);
    CHECK_EQ_INT(rc, 2);
    CHECK_CONTAINS(buf, "api.rules:1: rule swap loops");
    CHECK_CONTAINS(buf, "api.rules:5: rule nn_id is shadowed by rule nn (api.rules:3");
    free(buf);
    buf = api_run(1, "rule a:\n  Mul(x, 2.0) => Add(x, x)\nrule b:\n  Add(x, x) => Mul(x, 2.0)\n", &rc);
    CHECK_EQ_INT(rc, 1);
    CHECK_CONTAINS(buf, "api.rules:1: rules a and b (api.rules:3) undo each other");
    free(buf);
    /* in different phases they never meet */
    buf = api_run(1, "rule a phase fold:\n  Mul(x, 2.0) => Add(x, x)\nrule b phase fuse:\n  Add(x, x) => Mul(x, 2.0)\n", &rc);
    CHECK_EQ_INT(rc, 0);
    free(buf);
    /* a replacement of integers only: loads, and checks on int64 instances */
    buf = api_run(0, "rule int_only:\n  Add(a, b) => Cast<to=7>(Add(a, b))\n", &rc);
    CHECK_EQ_INT(rc, 0);
    CHECK_CONTAINS(buf, "rule int_only: ok: 3 instances");
    free(buf);
    /* a where clause on a constant's value: the special values' round instances it */
    buf = api_run(0, "rule times_one:\n  Mul(x, c: const) => x\n  where numel(c) == 1 and value(c) == 1\n", &rc);
    CHECK_EQ_INT(rc, 0);
    free(buf);
    CHECK_EQ_INT(gwr_rules_check(NULL, NULL, stdout), -1);
    CHECK_EQ_INT(gwr_rules_lint(NULL, NULL, stdout), -1);
    CHECK_CONTAINS(gwr_last_errmsg(), "NULL rules");
}

/* Rules of disjoint targets never run in one manager: neither shadows
 * nor undoes the other; rules sharing a target still do. */
TEST(lint_disjoint_targets_do_not_meet) {
    int rc;
    char *buf = api_run(1, "rule nn_ort benefit 20 target ort:\n  Neg(Neg(x)) => x\n"
                           "rule nn_gwr target gwr:\n  Neg(Neg(x)) => Identity(x)\n", &rc);
    CHECK_EQ_INT(rc, 0);
    CHECK(!strstr(buf, "shadowed"));
    free(buf);
    buf = api_run(1, "rule a target onnx:\n  Mul(x, 2.0) => Add(x, x)\nrule b target gwr:\n  Add(x, x) => Mul(x, 2.0)\n", &rc);
    CHECK_EQ_INT(rc, 0);
    free(buf);
    /* ort, gwr against gwr: they meet under gwr */
    buf = api_run(1, "rule nn benefit 20 target ort, gwr:\n  Neg(Neg(x)) => x\n"
                     "rule nn_gwr target gwr:\n  Neg(Neg(x)) => Identity(x)\n", &rc);
    CHECK_EQ_INT(rc, 1);
    CHECK_CONTAINS(buf, "api.rules:3: rule nn_gwr is shadowed by rule nn (api.rules:1");
    free(buf);
}

/* The instance generator gives a rule what it states: a captured string
 * attribute a string (its where clause's value, or its ONNX default),
 * a captured float the value its where clause asks for, the opset a
 * where clause on opset() needs, Dropout's ratio and training_mode
 * scalars, and a root whose output may keep its name (an Identity after
 * it). Each rule is right, so check passes it. */
TEST(generator_gives_what_the_rule_states) {
    static const char *const rules[] = {
        /* string attribute: drawn as a string (its default "none") */
        "rule gelu_same:\n  Gelu<approximate=a>(x) => Gelu<approximate=\"none\">(x)\n",
        /* ... the where clause's string */
        "rule gelu_tanh:\n  Gelu<approximate=a>(x) => Gelu<approximate=\"tanh\">(x)\n  where a == \"tanh\"\n",
        /* ... and its default literal */
        "rule gelu_default target gwr:\n  Gelu<approximate=a default \"none\">(Add(x, b: const rank 1)) => com.microsoft::BiasGelu(x, b)\n"
        "  where a == \"none\" and shape(b)[0] == dim(x, -1)\n",
        /* floats the where clause pins */
        "rule hs:\n  Mul(x, HardSigmoid<alpha=a, beta=b default 0.5>(x)) => HardSwish(x)\n"
        "  where abs(a - 1.0 / 6.0) <= 1e-7 and abs(b - 0.5) <= 1e-6\n",
        /* the opset a where clause needs (an old model) */
        "rule old_negneg:\n  Neg(Neg(x)) => x\n  where opset() >= 0 and opset() < 7\n",
        /* Clip's bounds as attributes (before opset 11), an int attribute literal */
        "rule clip_attrs:\n  Clip<min=0.0, max=6.0>(x) => Min(Max(x, 0.0), 6.0)\n"
        "  where opset() >= 0 and opset() < 11\n",
        "rule dropout_is_test:\n  Dropout<is_test=1>(x, none, none) => x\n  where opset() >= 0 and opset() < 7\n",
        /* Dropout's ratio and training_mode */
        "rule dropout_ratio:\n  Dropout(x, _, none) => x\n  where opset() < 0 or opset() >= 12\n",
        "rule dropout_not_training:\n  Dropout(x, ratio?, t ~ 0 tol 0) => x\n  where opset() < 0 or opset() >= 12\n",
        /* an elimination of an Identity making the network output */
        "rule drop_identity:\n  Identity(x) => x\n",
    };
    for (size_t k = 0; k < sizeof rules / sizeof rules[0]; k++) {
        int rc;
        char *buf = api_run(0, rules[k], &rc);
        if (!CHECK_EQ_INT(rc, 0)) fprintf(stderr, "%s%s\n", rules[k], buf ? buf : "");
        CHECK_CONTAINS(buf, ": ok: 3 instances");
        free(buf);
        buf = api_run(1, rules[k], &rc); /* the Gelu => Gelu ones loop: only the instances matter here */
        CHECK(rc >= 0 && !strstr(buf, "no instance"));
        free(buf);
    }
}

int main(void) {
    RUN(api_check_and_lint_parsed_rules);
    RUN(hand_written_passes_pass_check_on_their_tables);
    RUN(right_rule_passes_wrong_rule_fails_with_its_instance);
    RUN(loose_tolerance_lets_it_pass);
    RUN(a_rule_that_does_not_fire_fails);
    RUN(same_seed_same_report);
    RUN(lint_finds_a_loop);
    RUN(lint_finds_an_undo_pair);
    RUN(lint_finds_a_shadowed_rule);
    RUN(lint_clean_set);
    RUN(lint_disjoint_targets_do_not_meet);
    RUN(generator_gives_what_the_rule_states);
    RUN(type_check_refuses_a_replacement_of_another_shape);
    return check_report();
}
