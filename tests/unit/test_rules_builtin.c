/* test_rules_builtin.c - the built-in rule files (the .rules files of src/passes/rules,
 * embedded at build time, parsed at run time) as passes: rules_cleanup's
 * rules each fire through the pass table and gwr_optimize, and the outputs
 * stay bit for bit; what they must not touch stays. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "passes/rules_pass.h"
#include "rules/rules_api.h"
#include "rules_util.h"

static gwr_tensor *op1(gwr_network *net, const char *name, gwr_tensor *x) {
    gwr_layer *l = gwr_network_add_layer(net, name, "", NULL, 1, &x, 1, NULL);
    if (!l || gwr_layer_infer(l)) return NULL;
    return gwr_layer_output(l, 0);
}

static const float XS[8] = {-2.5f, -1.5f, -0.0f, 0.0f, 0.5f, 1.5f, 2.5f, -7.25f};

/* y = outer(inner(x)) over x [8] through the manager with rules_cleanup (or
 * gwr_optimize when opt): returns the live layer count after; before/after
 * outputs bit-identical. */
static int fold(const char *outer, const char *inner, int opt) {
    gwr_network *net = gwr_network_new("t");
    gwr_network_set_opset(net, "", 17);
    gwr_dim d[1] = {8};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, d);
    gwr_network_mark_output(net, op1(net, outer, op1(net, inner, x)));
    int64_t dims[1] = {8};
    float before[8], after[8];
    CHECK_EQ_INT(rt_run(net, 1, dims, XS, before, 8), 8);
    if (opt) {
        gwr_optimize_options o = {.only = "rules_cleanup"};
        CHECK_OK(gwr_optimize(net, &o, NULL));
    } else {
        gwr_rewrite_manager *m = gwr_rewrite_manager_new();
        CHECK_OK(gwr_passes_add(m, "rules_cleanup"));
        CHECK_OK(gwr_rewrite_manager_rewrite(m, net, NULL));
        gwr_rewrite_manager_free(m);
    }
    CHECK_EQ_INT(rt_run(net, 1, dims, XS, after, 8), 8);
    CHECK(!memcmp(before, after, sizeof before));
    int n = rt_count(net, NULL);
    gwr_network_free(net);
    return n;
}

TEST(cleanup_fires) {
    /* y becomes x, a graph input: the IR keeps the output a layer's (an Identity). */
    CHECK_EQ_INT(fold("Neg", "Neg", 0), 1);
    CHECK_EQ_INT(fold("Abs", "Abs", 0), 1);
    CHECK_EQ_INT(fold("Abs", "Neg", 1), 1);
    CHECK_EQ_INT(fold("Floor", "Floor", 1), 1);
    CHECK_EQ_INT(fold("Ceil", "Ceil", 0), 1);
    CHECK_EQ_INT(fold("Round", "Round", 0), 1);
}

TEST(cleanup_leaves) {
    CHECK_EQ_INT(fold("Neg", "Abs", 0), 2);
    CHECK_EQ_INT(fold("Floor", "Ceil", 0), 2);
    CHECK_EQ_INT(fold("Abs", "Relu", 1), 2);
}

/* The pass is offered the root ops of every rule of its file (its list is
 * written in rules_pass.c: a rule added to the file with a new root must
 * add it there). */
TEST(cleanup_in_the_table) {
    int benefit = 0;
    const gwr_pattern_rewriter *p = gwr_passes_find("rules_cleanup", &benefit);
    if (!CHECK(p != NULL && p->root_ops)) return;
    (void)benefit; /* derived from the table position now: the phase is what is declared */
    for (int i = 0; i < gwr_passes_count(); i++)
        if (!strcmp(gwr_passes_label(i), "rules_cleanup")) CHECK_EQ_INT(gwr_passes_info(i)->phase, GWR_PHASE_CLEANUP);
    const gwr_rules *r = gwr_ps_rules_file_get("cleanup.rules");
    if (!CHECK(r != NULL)) return;
    CHECK(gwr_rules_count(r) >= 6);
    CHECK_STR(gwr_rl_phase(r, 0), "cleanup");
    for (int i = 0; i < gwr_rules_count(r); i++) {
        gwr_pattern_rewriter rw;
        CHECK_OK(gwr_rules_rewriter(r, i, &rw));
        for (int k = 0; rw.root_ops[k]; k++) {
            int found = 0;
            for (int j = 0; p->root_ops[j]; j++) found |= !strcmp(p->root_ops[j], rw.root_ops[k]);
            if (!CHECK(found)) fprintf(stderr, "  rule %s roots on %s, not in the pass's roots\n", gwr_rules_name(r, i), rw.root_ops[k]);
        }
    }
}

int main(void) {
    RUN(cleanup_fires);
    RUN(cleanup_leaves);
    RUN(cleanup_in_the_table);
    return check_report();
}
