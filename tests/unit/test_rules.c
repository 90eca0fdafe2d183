/* test_rules.c - the two rules of SPEC.md / issue 23, loaded exactly as
 * written, fire on networks built here and keep the outputs (GELU against
 * the erf formula computed here, the transposes against a hand-composed
 * perm), and do not fire with a wrong constant, a second reader of an
 * intermediate or an intermediate that is a network output. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "rules_util.h"

static const char *const SPEC_RULES =
    "# GELU, erf form\n"
    "rule gelu_erf benefit 20:\n"
    "  Mul(Mul(x, 0.5), Add(Erf(Div(x, c ~ 1.4142135 tol 1e-4)), 1.0))  =>  Gelu(x)\n"
    "rule fold_transposes:\n"
    "  Transpose<perm=p2>(Transpose<perm=p1>(x))  =>  Transpose<perm=compose(p1, p2)>(x)\n";

/* The erf GELU over x [2,5]; how: 0 plain, 1 operands swapped, 2 a wrong
 * 0.5 (0.6), 3 a wrong sqrt(2) (1.5), 4 the Erf read twice, 5 the Erf a
 * network output too. */
static gwr_network *gelu_net(int how, float c) {
    gwr_network *net = gwr_network_new("gelu");
    gwr_network_set_opset(net, "", 20);
    gwr_dim dims[2] = {2, 5};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, dims);
    gwr_tensor *half = gwr_constant_f32(net, how == 2 ? 0.6f : 0.5f);
    gwr_tensor *d = gwr_div(net, x, gwr_constant_f32(net, how == 3 ? 1.5f : c));
    gwr_tensor *e = gwr_erf(net, d);
    gwr_tensor *a = how == 1 ? gwr_add(net, gwr_constant_f32(net, 1), e) : gwr_add(net, e, gwr_constant_f32(net, 1));
    gwr_tensor *h = how == 1 ? gwr_mul(net, half, x) : gwr_mul(net, x, half);
    gwr_tensor *y = how == 1 ? gwr_mul(net, a, h) : gwr_mul(net, h, a);
    gwr_network_mark_output(net, y);
    if (how == 4) gwr_network_mark_output(net, gwr_relu(net, e));
    if (how == 5) gwr_network_mark_output(net, e);
    return net;
}

static const float XS[10] = {-3.0f, -1.5f, -0.7f, -0.1f, 0.0f, 0.2f, 0.5f, 1.0f, 2.25f, 4.0f};

TEST(gelu_fires_and_agrees) {
    for (int how = 0; how < 2; how++) {
        gwr_network *net = gelu_net(how, 1.4142135f);
        int64_t dims[2] = {2, 5};
        float before[10], after[10];
        CHECK_EQ_INT(rt_run(net, 2, dims, XS, before, 10), 10);
        CHECK_EQ_INT(rt_apply(net, SPEC_RULES), 1);
        CHECK_EQ_INT(rt_count(net, "Gelu"), 1);
        CHECK_EQ_INT(rt_count(net, NULL), 1); /* Gelu alone: the rest pruned */
        CHECK_EQ_INT(rt_run(net, 2, dims, XS, after, 10), 10);
        for (int i = 0; i < 10; i++) {
            double ref = 0.5 * XS[i] * (1.0 + erf(XS[i] / sqrt(2.0)));
            CHECK(fabs(before[i] - ref) < 1e-5);
            CHECK(fabs(after[i] - ref) < 1e-5);
        }
        gwr_network_free(net);
    }
}

TEST(gelu_tolerance) {
    /* c within 1e-4 of 1.4142135 matches; 1.5 does not. */
    gwr_network *net = gelu_net(0, 1.41425f);
    CHECK_EQ_INT(rt_apply(net, SPEC_RULES), 1);
    gwr_network_free(net);
    net = gelu_net(0, 1.4145f);
    CHECK_EQ_INT(rt_apply(net, SPEC_RULES), 0);
    gwr_network_free(net);
}

TEST(gelu_does_not_fire) {
    for (int how = 2; how <= 5; how++) {
        gwr_network *net = gelu_net(how, 1.4142135f);
        int n = rt_count(net, NULL);
        CHECK_EQ_INT(rt_apply(net, SPEC_RULES), 0);
        CHECK_EQ_INT(rt_count(net, "Gelu"), 0);
        CHECK_EQ_INT(rt_count(net, NULL), n);
        gwr_network_free(net);
    }
}

/* Transpose(Transpose(x, p1), p2) over x [2,3,4]; how: 0 plain, 1 the
 * inner one read twice, 2 the inner one a network output, 3 no perm on
 * the outer (absent: no match). */
static gwr_network *transposes_net(int how, const int64_t *p1, const int64_t *p2) {
    gwr_network *net = gwr_network_new("tt");
    gwr_dim dims[3] = {2, 3, 4};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 3, dims);
    gwr_tensor *t1 = gwr_transpose(net, x, 3, p1);
    gwr_tensor *t2 = how == 3 ? gwr_transpose(net, t1, 0, NULL) : gwr_transpose(net, t1, 3, p2);
    gwr_network_mark_output(net, t2);
    if (how == 1) gwr_network_mark_output(net, gwr_relu(net, t1));
    if (how == 2) gwr_network_mark_output(net, t1);
    return net;
}

TEST(transposes_fire_and_agree) {
    static const int64_t p1[3] = {1, 2, 0}, p2[3] = {1, 0, 2};
    /* By hand: out[i] = p1[p2[i]] = {p1[1], p1[0], p1[2]} = {2, 1, 0}. */
    static const int64_t want[3] = {2, 1, 0};
    gwr_network *net = transposes_net(0, p1, p2);
    int64_t dims[3] = {2, 3, 4};
    float x[24], before[24], after[24];
    for (int i = 0; i < 24; i++) x[i] = (float)(i * 7 % 11) - 5.0f;
    CHECK_EQ_INT(rt_run(net, 3, dims, x, before, 24), 24);
    CHECK_EQ_INT(rt_apply(net, SPEC_RULES), 1);
    CHECK_EQ_INT(rt_count(net, "Transpose"), 1);
    CHECK_EQ_INT(rt_count(net, NULL), 1);
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        const int64_t *perm;
        int64_t n;
        if (gwr_layer_is_removed(l) || gwr_layer_get_ints(l, "perm", &perm, &n)) continue;
        CHECK_EQ_INT(n, 3);
        for (int k = 0; k < 3 && k < n; k++) CHECK_EQ_INT(perm[k], want[k]);
    }
    CHECK_EQ_INT(rt_run(net, 3, dims, x, after, 24), 24);
    for (int i = 0; i < 24; i++) CHECK(before[i] == after[i]);
    /* And by hand: y[a][b][c] = x[c][b][a] for the composed perm {2,1,0}. */
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 2; c++) CHECK(after[(a * 3 + b) * 2 + c] == x[(c * 3 + b) * 4 + a]);
    gwr_network_free(net);
}

TEST(transposes_do_not_fire) {
    static const int64_t p1[3] = {1, 2, 0}, p2[3] = {1, 0, 2};
    for (int how = 1; how <= 3; how++) {
        gwr_network *net = transposes_net(how, p1, p2);
        int n = rt_count(net, NULL);
        CHECK_EQ_INT(rt_apply(net, SPEC_RULES), 0);
        CHECK_EQ_INT(rt_count(net, NULL), n);
        gwr_network_free(net);
    }
}

TEST(api_basics) {
    gwr_rules *r = NULL;
    CHECK_OK(gwr_rules_parse(SPEC_RULES, NULL, &r));
    if (!CHECK(r != NULL)) return;
    CHECK_EQ_INT(gwr_rules_count(r), 2);
    CHECK_STR(gwr_rules_name(r, 0), "gelu_erf");
    CHECK_STR(gwr_rules_name(r, 1), "fold_transposes");
    CHECK_EQ_INT(gwr_rules_benefit(r, 0), 20);
    CHECK_EQ_INT(gwr_rules_benefit(r, 1), 10);
    CHECK(gwr_rules_tolerance(r, 0) > 0);
    CHECK(gwr_rules_name(r, 2) == NULL);
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    CHECK_OK(gwr_rules_add_to(r, m));
    CHECK_EQ_INT(gwr_rewrite_manager_count(m), 2);
    CHECK_STR(gwr_rewrite_manager_label(m, 0), "gelu_erf"); /* higher benefit first */
    CHECK_EQ_INT(gwr_rules_add_to(r, m), GWR_ERR_DUPLICATE);
    gwr_pattern_rewriter p;
    CHECK_OK(gwr_rules_rewriter(r, 1, &p));
    CHECK_STR(p.name, "fold_transposes");
    CHECK(gwr_rules_rewriter(r, 5, &p) != GWR_OK);
    gwr_rewrite_manager_free(m);
    gwr_rules_free(r);
    gwr_rules_free(NULL);
}

int main(void) {
    RUN(gelu_fires_and_agrees);
    RUN(gelu_tolerance);
    RUN(gelu_does_not_fire);
    RUN(transposes_fire_and_agree);
    RUN(transposes_do_not_fire);
    RUN(api_basics);
    return check_report();
}
