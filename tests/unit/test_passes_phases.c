/* test_passes_phases.c - the pass table's phases: the rows come in phase
 * order with benefits from their position and the per-target level column;
 * a manager with patterns in phases runs each phase to a fixpoint in order
 * and goes back to an earlier phase for what a later one changed
 * (rw_manager_set_phase, src/rewrite/driver.c); gwr_optimize lets a fold
 * finish before the fusions read its result. */
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "net_count.h"
#include "rewrite/rewrite_api.h"

TEST(table_in_phase_order) {
    int n = gwr_passes_count();
    CHECK(n > 30);
    for (int i = 0; i < n; i++) {
        const gwr_pass_info *p = gwr_passes_info(i);
        if (!CHECK(p)) return;
        CHECK((unsigned)p->phase < GWR_PHASE_COUNT);
        if (i) CHECK(p->phase >= gwr_passes_info(i - 1)->phase); /* phase by phase */
        if (i) CHECK(gwr_passes_benefit(i) < gwr_passes_benefit(i - 1)); /* from the position */
        CHECK_EQ_INT(p->benefit, 0);
        int b = -1;
        CHECK(gwr_passes_find(p->label, &b) == p->pattern);
        CHECK_EQ_INT(b, gwr_passes_benefit(i));
        for (int j = 0; j < i; j++) CHECK(strcmp(p->label, gwr_passes_info(j)->label) != 0);
    }
    CHECK_STR(gwr_pass_phase_name(GWR_PHASE_CLEANUP), "cleanup");
    CHECK_STR(gwr_pass_phase_name(GWR_PHASE_KERNEL), "kernel");
    CHECK_STR(gwr_pass_phase_name(GWR_PHASE_COUNT), "unknown");
    CHECK_EQ_INT(gwr_passes_benefit(-1), 0);
    CHECK_EQ_INT(gwr_passes_benefit(n), 0);
}

static const gwr_pass_info *row(const char *label) {
    for (int i = 0; i < gwr_passes_count(); i++)
        if (!strcmp(gwr_passes_label(i), label)) return gwr_passes_info(i);
    return NULL;
}

TEST(phases_of_known_passes) {
    /* the orders that matter, as phases: folds before the fusions, the
     * standard LayerNormalization before onnxruntime's RMSNorm (which
     * would take the tail of its chain), the element-wise chains last */
    const gwr_pass_info *cse = row("eliminate_common_subexpressions"), *fold = row("fold_constants"),
                        *ln = row("fuse_layer_norm"), *rms = row("fuse_rms_norm"), *silu = row("fuse_silu"),
                        *ewc = row("fuse_elementwise_chain"), *sln = row("fuse_skip_layer_norm");
    if (!CHECK(cse && fold && ln && rms && silu && ewc && sln)) return;
    CHECK_EQ_INT(cse->phase, GWR_PHASE_CLEANUP);
    CHECK_EQ_INT(fold->phase, GWR_PHASE_FOLD);
    CHECK_EQ_INT(ln->phase, GWR_PHASE_FUSE);
    CHECK_EQ_INT(rms->phase, GWR_PHASE_LOWER);
    CHECK_EQ_INT(silu->phase, GWR_PHASE_LOWER);
    CHECK_EQ_INT(ewc->phase, GWR_PHASE_KERNEL);
    /* the per-target level column */
    CHECK_EQ_INT(sln->level, GWR_LEVEL_ALL);
    CHECK_EQ_INT(sln->level_gwr, GWR_LEVEL_EXTENDED);
    CHECK_EQ_INT(gwr_pass_level_for(sln, GWR_TARGET_ORT), GWR_LEVEL_ALL);
    CHECK_EQ_INT(gwr_pass_level_for(sln, GWR_TARGET_GWR), GWR_LEVEL_EXTENDED);
    CHECK_EQ_INT(gwr_pass_level_for(ln, GWR_TARGET_GWR), ln->level);
    /* --list shows the phase column */
    char buf[1 << 16];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    if (!CHECK(f)) return;
    gwr_passes_print(f, 1);
    fclose(f);
    CHECK(strstr(buf, "| label | phase | level | targets | numerics | what it does |") != NULL);
    CHECK(strstr(buf, "| `fuse_elementwise_chain` | kernel | extended | gwr | exact |") != NULL);
    CHECK(strstr(buf, "| `fuse_skip_layer_norm` | lower | all/gwr:extended |") != NULL);
}

/* ---- the driver's phases, on small patterns ---- */

static const char *const NEG[] = {"Neg", NULL};
static const char *const ABS[] = {"Abs", NULL};

/* Neg(Neg(x)) -> x, rooted on the outer Neg. */
static int double_neg(gwr_rewrite_ctx *c, gwr_layer *l) {
    (void)c;
    gwr_layer *in = gwr_tensor_parent(gwr_layer_input(l, 0));
    if (!in || strcmp(gwr_layer_op(in), "Neg") || gwr_tensor_num_users(gwr_layer_output(in, 0)) != 1) return 0;
    if (gwr_tensor_replace_all_uses_with(gwr_layer_output(l, 0), gwr_layer_input(in, 0))) return -1;
    gwr_layer_mark_as_removed(l);
    gwr_layer_mark_as_removed(in);
    return 1;
}

/* Neg(x) -> Abs(x) (user NULL), Abs(x) -> Neg(Neg(x)) (user TWO) or
 * Abs(x) -> Neg(x) (user ONE): changes the numbers; the tests count
 * layers. */
static int one, two;
#define ONE ((void *)&one)
#define TWO ((void *)&two)
static int swap(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    gwr_tensor *x = gwr_layer_input(l, 0);
    void *u = gwr_rewrite_ctx_user(c);
    gwr_tensor *out = u == TWO ? gwr_neg(net, gwr_neg(net, x)) : u == ONE ? gwr_neg(net, x) : gwr_abs(net, x);
    if (!out || gwr_tensor_replace_all_uses_with(gwr_layer_output(l, 0), out)) return -1;
    gwr_layer_mark_as_removed(l);
    return 1;
}

/* x -> op ... op -> Relu -> y */
static gwr_network *chain(const char *op, int n) {
    gwr_network *net = gwr_network_new("chain");
    gwr_dim d = 4;
    gwr_tensor *t = net ? gwr_network_add_input(net, "x", GWR_FLOAT32, 1, &d) : NULL;
    for (int i = 0; t && i < n; i++) t = !strcmp(op, "Neg") ? gwr_neg(net, t) : gwr_abs(net, t);
    t = t ? gwr_relu(net, t) : NULL;
    if (!t || gwr_network_mark_output(net, t)) {
        gwr_network_free(net);
        return NULL;
    }
    return net;
}

/* Neg(Neg(x)): the benefit alone lets neg_to_abs (higher) take the first
 * Neg; with double_neg in an earlier phase the pair goes first. */
TEST(earlier_phase_first) {
    for (int phased = 0; phased < 2; phased++) {
        gwr_network *net = chain("Neg", 2);
        gwr_rewrite_manager *m = gwr_rewrite_manager_new();
        if (!CHECK(net && m)) return;
        gwr_pattern_rewriter dn = {.name = "double_neg", .root_ops = NEG, .match_and_rewrite = double_neg};
        gwr_pattern_rewriter na = {.name = "neg_to_abs", .root_ops = NEG, .match_and_rewrite = swap};
        CHECK_OK(gwr_rewrite_manager_add(m, "double_neg", &dn, 1));
        CHECK_OK(gwr_rewrite_manager_add(m, "neg_to_abs", &na, 10));
        if (phased) CHECK_OK(rw_manager_set_phase(m, "neg_to_abs", 1));
        CHECK_OK(gwr_rewrite_manager_rewrite(m, net, NULL));
        CHECK_EQ_INT(count_op(net, "Neg"), 0);
        CHECK_EQ_INT(count_op(net, "Abs"), phased ? 0 : 2);
        CHECK_OK(gwr_network_verify(net));
        gwr_rewrite_manager_free(m);
        gwr_network_free(net);
    }
}

/* Abs(x) -> Neg(Neg(x)) in phase 3: the new layers go back to phase 0,
 * whose double_neg removes them, after phase 3 ran to its fixpoint. */
TEST(later_phase_changes_go_back) {
    gwr_network *net = chain("Abs", 3);
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    if (!CHECK(net && m)) return;
    gwr_pattern_rewriter dn = {.name = "double_neg", .root_ops = NEG, .match_and_rewrite = double_neg};
    gwr_pattern_rewriter an = {.name = "abs_to_negs", .root_ops = ABS, .match_and_rewrite = swap, .user = TWO};
    CHECK_OK(gwr_rewrite_manager_add(m, "double_neg", &dn, 100));
    CHECK_OK(gwr_rewrite_manager_add(m, "abs_to_negs", &an, 1));
    CHECK_OK(rw_manager_set_phase(m, "abs_to_negs", 3));
    CHECK_OK(gwr_rewrite_manager_rewrite(m, net, NULL));
    CHECK_EQ_INT(count_op(net, "Abs") + count_op(net, "Neg"), 0);
    CHECK_EQ_INT(gwr_network_num_live_layers(net), 1); /* the Relu */
    gwr_pattern_stats st;
    CHECK_OK(gwr_rewrite_manager_stats(m, 0, &st)); /* double_neg: the higher benefit */
    CHECK_EQ_INT(st.rewrites, 3);
    CHECK_OK(gwr_rewrite_manager_stats(m, 1, &st));
    CHECK_EQ_INT(st.rewrites, 3);
    gwr_rewrite_summary s;
    gwr_rewrite_manager_summary(m, &s);
    /* phase 0 offers the 3 Abs nothing (no pattern of its own roots
     * there); phase 3 visits each Abs, and phase 0 then the new Negs */
    CHECK(s.visited <= 3 + 3 * 2 + 3);
    CHECK_OK(gwr_network_verify(net));
    CHECK_EQ_INT(rw_manager_set_phase(m, "nope", 1), GWR_ERR_NOT_FOUND);
    CHECK_EQ_INT(rw_manager_set_phase(m, "double_neg", 8), GWR_ERR_INVALID_ARG);
    gwr_rewrite_manager_free(m);
    gwr_network_free(net);
}

/* Two phases that undo each other stop at the rewrite limit, naming both. */
TEST(phases_ping_pong_bounded) {
    gwr_network *net = chain("Neg", 1);
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    if (!CHECK(net && m)) return;
    gwr_pattern_rewriter na = {.name = "neg_to_abs", .root_ops = NEG, .match_and_rewrite = swap};
    gwr_pattern_rewriter an = {.name = "abs_to_neg", .root_ops = ABS, .match_and_rewrite = swap, .user = ONE};
    CHECK_OK(gwr_rewrite_manager_add(m, "neg_to_abs", &na, 1));
    CHECK_OK(gwr_rewrite_manager_add(m, "abs_to_neg", &an, 1));
    CHECK_OK(rw_manager_set_phase(m, "abs_to_neg", 2));
    CHECK_EQ_INT(gwr_rewrite_manager_rewrite(m, net, NULL), GWR_ERR_NOT_CONVERGED);
    CHECK_CONTAINS(gwr_rewrite_manager_errmsg(m), "'neg_to_abs'");
    CHECK_CONTAINS(gwr_rewrite_manager_errmsg(m), "'abs_to_neg'");
    CHECK_OK(gwr_network_verify(net));
    gwr_rewrite_manager_free(m);
    gwr_network_free(net);
}

int main(void) {
    RUN(table_in_phase_order);
    RUN(phases_of_known_passes);
    RUN(earlier_phase_first);
    RUN(later_phase_changes_go_back);
    RUN(phases_ping_pong_bounded);
    return check_report();
}
