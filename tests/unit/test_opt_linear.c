/* test_opt_linear.c - the optimizer stays linear in the number of layers
 * (issue 22), checked by counting work, never by timing: the same model at
 * N and 2N layers, run through the rewrite manager, must cost ~2x in the
 * counts that were quadratic before:
 *  - N identical Relu(x): eliminate_common_subexpressions merged one twin
 *    per rewrite and the survivor rescanned the removed ones each time;
 *    now one rewrite takes them all (rewrites: 1, offers ~linear);
 *  - a Transpose/Relu chain that push_transpose_through_elementwise,
 *    compose_transposes and fuse_clip_chains collapse: a tensor that kept
 *    getting new readers kept every reader it ever had on its use list
 *    (~1.5 N entries, walked by every pass that looked at its readers);
 *    now a list holds its live readers plus a bounded number of removed
 *    ones;
 *  - two equal scalar constants each read by a chain of N Muls, the chains
 *    starting at Mul(x, c1) and Mul(x, c2): the constants still merge (CSE
 *    searches a constant with many readers from its readers' side now),
 *    then the two chains but for their last Muls (both network outputs
 *    stay apart, as cse.c says). Expected counts are those of the model's
 *    structure, not of the code's output. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "net_count.h"

static const gwr_dim d23[2] = {2, 3};

/* y = Relu(x) + Relu(x) + ... (n Relus, n - 1 Adds) */
static gwr_network *relu_siblings(int n) {
    gwr_network *net = gwr_network_new("siblings");
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, d23), *h = gwr_relu(net, x);
    for (int i = 1; i < n; i++) h = gwr_add(net, h, gwr_relu(net, x));
    if (!h || gwr_network_mark_output(net, h)) return gwr_network_free(net), NULL;
    return net;
}

/* y = Relu(Transpose(...Relu(Transpose(x)))) (n of each, perm [1, 0]) */
static gwr_network *transpose_relu_chain(int n) {
    static const int64_t perm[2] = {1, 0};
    gwr_network *net = gwr_network_new("chain");
    gwr_tensor *h = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, d23);
    for (int i = 0; i < n; i++) h = gwr_relu(net, gwr_transpose(net, h, 2, perm));
    if (!h || gwr_network_mark_output(net, h)) return gwr_network_free(net), NULL;
    return net;
}

/* y1 = x * c1 * c1 ... (n Muls), y2 = x * c2 * c2 ... (n Muls), c1 == c2 */
static gwr_network *two_shared_constants(int n) {
    gwr_network *net = gwr_network_new("shared");
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, d23);
    for (int k = 0; k < 2; k++) {
        gwr_tensor *c = gwr_constant_f32(net, 1.5f), *h = x;
        for (int i = 0; i < n; i++) h = gwr_mul(net, h, c);
        if (!h || gwr_network_mark_output(net, h)) return gwr_network_free(net), NULL;
    }
    return net;
}

/* The longest use list (removed readers included) of net's tensors seen
 * after any rewrite. */
typedef struct watch {
    gwr_network *net;
    int64_t max_users;
} watch;

static void on_applied(void *ctx, const gwr_rewrite_event *e) {
    (void)e;
    watch *w = ctx;
    for (int64_t i = 0; i < gwr_network_num_layers(w->net); i++) {
        gwr_layer *l = gwr_network_layer(w->net, i);
        for (int o = 0; o < gwr_layer_num_outputs(l); o++) {
            int64_t n = gwr_tensor_num_users(gwr_layer_output(l, o));
            if (n > w->max_users) w->max_users = n;
        }
    }
}

/* Runs patterns p[0..np) on net; the first's statistics. w: watched
 * during the run. */
static gwr_pattern_stats run_n(gwr_network *net, const gwr_pattern_rewriter *const *p, int np, watch *w) {
    gwr_pattern_stats st = {0};
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    if (!CHECK(m)) return st;
    for (int i = 0; i < np; i++) CHECK_OK(gwr_rewrite_manager_add(m, p[i]->name, p[i], 1));
    if (w) {
        gwr_rewrite_listener ls = {.pattern_applied = on_applied, .ctx = w};
        CHECK(gwr_rewrite_manager_add_listener(m, &ls) >= 0);
    }
    CHECK_OK(gwr_rewrite_manager_rewrite(m, net, NULL));
    CHECK_OK(gwr_rewrite_manager_stats(m, 0, &st));
    gwr_rewrite_manager_free(m);
    CHECK_OK(gwr_network_verify(net));
    return st;
}

static gwr_pattern_stats run1(gwr_network *net, const gwr_pattern_rewriter *p) { return run_n(net, &p, 1, NULL); }

TEST(siblings_merge_in_one_rewrite) {
    int64_t attempts[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        int n = 500 << k;
        gwr_network *net = relu_siblings(n);
        if (!CHECK(net)) return;
        gwr_pattern_stats st = run1(net, &gwr_pattern_eliminate_common_subexpressions);
        CHECK_EQ_INT(st.rewrites, 1);
        CHECK_EQ_INT(count_op(net, "Relu"), 1);
        CHECK_EQ_INT(count_op(net, "Add"), n - 1);
        attempts[k] = st.attempts;
        gwr_network_free(net);
    }
    /* offers grow with the layers, not their square */
    CHECK(attempts[1] <= 2 * attempts[0] + 16);
}

TEST(collapsing_chain_keeps_use_lists_short) {
    const gwr_pattern_rewriter *const p[3] = {&gwr_pattern_push_transpose_through_elementwise,
                                              gwr_passes_find("compose_transposes", NULL), &gwr_pattern_fuse_clip_chains};
    int64_t most[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        int n = 250 << k;
        gwr_network *net = transpose_relu_chain(n);
        if (!CHECK(net)) return;
        watch w = {net, 0};
        gwr_pattern_stats st = run_n(net, p, 3, &w);
        CHECK(st.rewrites > 0);
        CHECK_EQ_INT(count_op(net, "Relu"), 1);
        CHECK_EQ_INT(count_op(net, "Transpose"), 0);
        most[k] = w.max_users;
        gwr_network_free(net);
    }
    /* each tensor has at most one live reader here: its list stays bounded
     * (before, ~1.5 n: 374 and 748) */
    CHECK(most[0] <= 64);
    CHECK(most[1] <= most[0]);
}

TEST(shared_constants_still_merge) {
    int n = 200; /* more readers than cse.c's NEIGHBOUR_MAX */
    gwr_network *net = two_shared_constants(n);
    if (!CHECK(net)) return;
    gwr_pattern_stats st = run1(net, &gwr_pattern_eliminate_common_subexpressions);
    CHECK_EQ_INT(count_op(net, "Constant"), 1);
    /* the two last Muls both make a network output: they stay apart */
    CHECK_EQ_INT(count_op(net, "Mul"), n + 1);
    CHECK_EQ_INT(st.rewrites, n);
    gwr_network_free(net);
}

int main(void) {
    RUN(siblings_merge_in_one_rewrite);
    RUN(collapsing_chain_keeps_use_lists_short);
    RUN(shared_constants_still_merge);
    return check_report();
}
