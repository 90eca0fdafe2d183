/* test_optimize.c - gwr_optimize: which passes the level, target and
 * --only/--disable lists select, the report, bad options, and a fold that
 * keeps the outputs bit for bit (checked against the executor on the
 * network before). */
#include <math.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "net_count.h"

/* y = x * sqrt((a + b) * (a + b)): two Adds, a Mul and a Sqrt of constants */
static gwr_network *foldable(void) {
    static const float a[4] = {1.5f, -2.0f, 0.25f, 8.0f}, b[4] = {0.5f, 4.0f, -0.25f, -1.0f};
    int64_t d = 4;
    gwr_dim dd = 4;
    gwr_network *net = gwr_network_new("fold");
    gwr_tensor *x = net ? gwr_network_add_input(net, "x", GWR_FLOAT32, 1, &dd) : NULL;
    gwr_tensor *ka = x ? gwr_constant(net, GWR_FLOAT32, 1, &d, a) : NULL;
    gwr_tensor *kb = ka ? gwr_constant(net, GWR_FLOAT32, 1, &d, b) : NULL;
    gwr_tensor *s = kb ? gwr_add(net, ka, kb) : NULL;
    gwr_tensor *y = s ? gwr_mul(net, x, gwr_sqrt(net, gwr_mul(net, s, gwr_add(net, ka, kb)))) : NULL;
    if (!y || gwr_network_mark_output(net, y)) {
        gwr_network_free(net);
        return NULL;
    }
    return net;
}

static const gwr_optimize_pass *entry(const gwr_optimize_report *r, const char *label) {
    for (int i = 0; i < gwr_optimize_report_count(r); i++)
        if (!strcmp(gwr_optimize_report_pass(r, i)->label, label)) return gwr_optimize_report_pass(r, i);
    return NULL;
}

/* The output of net on x = {1, -1, 2, -2}. */
static int run_net(gwr_network *net, float out[4]) {
    static const char *const names[] = {"x"};
    int64_t d = 4;
    gwr_value *x = gwr_value_new(GWR_FLOAT32, 1, &d), *y = NULL;
    gwr_session *s = gwr_session_new_raw(net, NULL);
    int ok = x && s;
    for (int i = 0; ok && i < 4; i++) gwr_value_set_f64(x, i, (i % 2 ? -1.0 : 1.0) * (1 + i / 2));
    ok = ok && !gwr_session_run(s, 1, names, &x, 1, NULL, &y) && gwr_value_numel(y) == 4;
    for (int i = 0; ok && i < 4; i++) out[i] = (float)gwr_value_get_f64(y, i);
    gwr_value_release(x);
    gwr_value_release(y);
    gwr_session_free(s);
    return ok;
}

TEST(test_default_level_folds_and_reports) {
    gwr_network *net = foldable();
    if (!CHECK(net)) return;
    float before[4], after[4];
    CHECK(run_net(net, before));
    gwr_optimize_report *r = NULL;
    CHECK_OK(gwr_optimize(net, NULL, &r));
    CHECK_OK(gwr_network_verify(net));
    CHECK_EQ_INT(count_op(net, "Add") + count_op(net, "Sqrt"), 0);
    CHECK_EQ_INT(count_op(net, "Mul"), 1);
    if (CHECK(run_net(net, after))) CHECK(!memcmp(before, after, sizeof before)); /* fold_constants is exact */
    const gwr_optimize_pass *f = entry(r, "fold_constants"), *t = entry(r, "replace_add_with_sub");
    if (CHECK(f && t)) {
        CHECK(f->skipped == NULL);
        CHECK(f->rewrites >= 3);
        CHECK_STR(t->skipped, "not an optimization (a tutorial pattern)");
    }
    int64_t b, a, n;
    gwr_optimize_report_layers(r, &b, &a, &n);
    CHECK(b > a);
    CHECK_EQ_INT(a, gwr_network_num_live_layers(net));
    CHECK_EQ_INT(n, 1);
    gwr_optimize_report_free(r);
    /* idempotent: a second run changes nothing */
    CHECK_OK(gwr_optimize(net, NULL, &r));
    if (CHECK((f = entry(r, "fold_constants")) != NULL)) CHECK_EQ_INT(f->rewrites, 0);
    gwr_optimize_report_layers(r, &b, &a, NULL);
    CHECK_EQ_INT(b, a);
    gwr_optimize_report_free(r);
    gwr_network_free(net);
}

TEST(test_selection) {
    gwr_network *net = foldable();
    if (!CHECK(net)) return;
    gwr_optimize_report *r = NULL;
    /* disabled: nothing runs, nothing changes */
    int64_t n0 = gwr_network_num_live_layers(net);
    /* (the two Add(ka, kb) are common subexpressions) */
    gwr_optimize_options skip = {.disable = "fold_constants,eliminate_common_subexpressions"};
    CHECK_OK(gwr_optimize(net, &skip, &r));
    CHECK_EQ_INT(gwr_network_num_live_layers(net), n0);
    CHECK_STR(entry(r, "fold_constants")->skipped, "disabled");
    gwr_optimize_report_free(r);
    /* --only a tutorial pattern runs it, whatever its level */
    CHECK_OK(gwr_optimize(net, &(gwr_optimize_options){.only = "replace_add_with_sub"}, &r));
    CHECK_EQ_INT(count_op(net, "Add"), 0);
    CHECK_EQ_INT(count_op(net, "Sub"), 2);
    CHECK(entry(r, "fold_constants")->skipped != NULL);
    CHECK_EQ_INT(entry(r, "replace_add_with_sub")->rewrites, 2);
    gwr_optimize_report_free(r);
    /* every target serves fold_constants; level basic includes it */
    CHECK_OK(gwr_optimize(net, &(gwr_optimize_options){.level = GWR_LEVEL_BASIC, .target = GWR_TARGET_ORT}, &r));
    CHECK(entry(r, "fold_constants")->skipped == NULL);
    CHECK_EQ_INT(count_op(net, "Sub"), 0);
    gwr_optimize_report_free(r);
    gwr_network_free(net);
}

TEST(test_bad_options) {
    gwr_network *net = foldable();
    if (!CHECK(net)) return;
    gwr_optimize_report *r = (gwr_optimize_report *)1;
    int64_t n0 = gwr_network_num_live_layers(net);
    CHECK_EQ_INT(gwr_optimize(net, &(gwr_optimize_options){.only = "fold_constants,nope"}, &r), GWR_ERR_NOT_FOUND);
    CHECK(r == NULL);
    CHECK_CONTAINS(gwr_network_errmsg(net), "'nope'");
    CHECK_EQ_INT(gwr_optimize(net, &(gwr_optimize_options){.disable = ",,"}, NULL), GWR_ERR_NOT_FOUND);
    CHECK_EQ_INT(gwr_optimize(net, &(gwr_optimize_options){.level = (gwr_pass_level)9}, NULL), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(gwr_network_errmsg(net), "level 9");
    CHECK_EQ_INT(gwr_optimize(net, &(gwr_optimize_options){.target = GWR_TARGET_ANY}, NULL), GWR_ERR_INVALID_ARG);
    /* a pass that cannot serve the target */
    CHECK_EQ_INT(gwr_optimize(net, &(gwr_optimize_options){.only = "fuse_attention_with_bias", .target = GWR_TARGET_ONNX},
                              NULL),
                 GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(gwr_network_errmsg(net), "does not serve target onnx");
    CHECK_EQ_INT(gwr_network_num_live_layers(net), n0); /* refused options change nothing */
    CHECK_EQ_INT(gwr_optimize(NULL, NULL, NULL), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(gwr_last_errmsg(), "NULL network");
    gwr_optimize_report_free(NULL);
    CHECK_EQ_INT(gwr_optimize_report_count(NULL), 0);
    CHECK(gwr_optimize_report_pass(NULL, 0) == NULL);
    gwr_network_free(net);
}

TEST(test_pass_table) {
    /* every entry is complete and its label finds its pattern */
    CHECK(gwr_passes_count() >= 4);
    for (int i = 0; i < gwr_passes_count(); i++) {
        const gwr_pass_info *p = gwr_passes_info(i);
        if (!CHECK(p && p->label && p->pattern && p->summary)) continue;
        CHECK(gwr_passes_find(p->label, NULL) == p->pattern);
        CHECK(p->targets != 0 && (p->targets & ~(unsigned)GWR_TARGET_ANY) == 0);
        CHECK((unsigned)p->level <= GWR_LEVEL_ALL);
        CHECK(p->numerics != GWR_NUMERICS_APPROX || p->tolerance > 0);
    }
    CHECK(gwr_passes_info(-1) == NULL && gwr_passes_info(gwr_passes_count()) == NULL);
    CHECK_STR(gwr_pass_level_name(GWR_LEVEL_EXTENDED), "extended");
}

/* The interface guard and symbols: y = Identity(Relu(x)), x [n, 3]. An
 * output dim the file names with a symbol no input has (exporters name
 * every dim they did not work out) may become the number the graph
 * computes; a symbol of the inputs may not. */
static gwr_network *guarded(const char *ysym) {
    gwr_network *net = gwr_network_new("guard");
    gwr_dim n = gwr_network_dim_sym(net, "n");
    gwr_dim xd[2] = {n, 3}, yd[2] = {n, gwr_network_dim_sym(net, ysym)};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, xd);
    gwr_tensor *h = gwr_relu(net, x);
    const char *yn = "y";
    gwr_layer *id = gwr_network_add_layer(net, "Identity", "", "id", 1, &h, 1, &yn);
    gwr_tensor *y = gwr_layer_output(id, 0);
    gwr_network_mark_output(net, y);
    gwr_tensor_set_type(y, GWR_FLOAT32, 2, yd);
    return net;
}

TEST(test_guard_symbols) {
    gwr_network *net = guarded("Identity_y_dim_1");
    CHECK_OK(gwr_optimize(net, NULL, NULL));
    gwr_tensor *y = gwr_network_output(net, 0);
    CHECK_EQ_INT(gwr_tensor_dim(y, 1), 3);
    CHECK_STR(gwr_network_dim_name(net, gwr_tensor_dim(y, 0)), "n");
    gwr_network_free(net);
    net = guarded("n");
    CHECK_EQ_INT(gwr_optimize(net, NULL, NULL), GWR_ERR_INVALID_GRAPH);
    CHECK_CONTAINS(gwr_network_errmsg(net), "was float32[n,n] before the passes and is float32[n,3]");
    gwr_network_free(net);
}

int main(void) {
    RUN(test_default_level_folds_and_reports);
    RUN(test_selection);
    RUN(test_bad_options);
    RUN(test_pass_table);
    RUN(test_guard_symbols);
    return check_report();
}
