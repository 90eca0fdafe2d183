/* test_stop_after.c - a run stopped after K rewrites (the replays of `gwr
 * bisect`): gwr_rewrite_options.stop_after in one manager run, and
 * gwr_optimize_options.stop_after counted over the phases and the If
 * bodies. For every K from 0 to N the stopped run makes exactly the first
 * K rewrites of the whole run (the same patterns at the same layers), ends
 * with GWR_OK and a network that verifies and exports, and the network
 * holds what K rewrites leave: each rewrite of these networks takes away
 * one unit (an Add, a Neg pair or an Identity) counted by construction. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "net_count.h"

static const int64_t D4[1] = {4};

/* ---- the log: "label@root" per rewrite ---- */

#define MAXLOG 64
typedef struct log_t {
    char e[MAXLOG][96];
    int n;
    int bad_seq; /* an event whose seq was not its place in the run */
} log_t;

static void on_applied(void *ctx, const gwr_rewrite_event *e) {
    log_t *g = ctx;
    if (g->n == MAXLOG) return;
    if (e->seq != g->n + 1) g->bad_seq = 1;
    snprintf(g->e[g->n++], sizeof g->e[0], "%s@%s", e->label, gwr_layer_name(e->root));
}

static int same_prefix(const log_t *a, const log_t *full, int k) {
    if (a->n != k) return 0;
    for (int i = 0; i < k; i++)
        if (strcmp(a->e[i], full->e[i])) return 0;
    return 1;
}

static int exports(gwr_network *net) {
    void *data = NULL;
    size_t size = 0;
    gwr_status s = gwr_onnx_save_memory(net, &data, &size);
    free(data);
    return s == GWR_OK && size > 0;
}

/* ---- one manager ---- */

/* Relu(Neg(Neg(Add(Neg(Neg(Add(x, y))), y)))): two Adds, two Neg pairs,
 * so N = 4. */
static gwr_network *chain(void) {
    gwr_network *net = gwr_network_new("chain");
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, D4);
    gwr_tensor *y = gwr_network_add_input(net, "y", GWR_FLOAT32, 1, D4);
    gwr_tensor *a = gwr_neg(net, gwr_neg(net, gwr_add(net, x, y)));
    gwr_tensor *b = gwr_relu(net, gwr_neg(net, gwr_neg(net, gwr_add(net, a, y))));
    if (!b || gwr_network_mark_output(net, b)) {
        gwr_network_free(net);
        return NULL;
    }
    return net;
}

/* The built-in patterns replace_add_with_sub (Add -> Sub, the tutorial's)
 * and rules_cleanup (Neg(Neg(x)) -> x among others), and the log. */
static gwr_rewrite_manager *chain_manager(log_t *g) {
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    gwr_rewrite_listener ls = {.pattern_applied = on_applied, .ctx = g};
    if (!m || gwr_passes_add(m, "replace_add_with_sub") || gwr_passes_add(m, "rules_cleanup") ||
        gwr_rewrite_manager_add_listener(m, &ls) < 0) {
        gwr_rewrite_manager_free(m);
        return NULL;
    }
    return m;
}

TEST(manager_stops_after_k) {
    log_t full = {0};
    gwr_network *net = chain();
    gwr_rewrite_manager *m = chain_manager(&full);
    if (!CHECK(net && m)) return;
    CHECK_OK(gwr_rewrite_manager_rewrite(m, net, NULL));
    gwr_rewrite_summary s;
    gwr_rewrite_manager_summary(m, &s);
    CHECK_EQ_INT(full.n, 4);
    CHECK(s.converged && !s.stopped);
    gwr_rewrite_manager_free(m);
    gwr_network_free(net);
    for (int k = 0; k <= full.n; k++) {
        log_t g = {0};
        net = chain();
        m = chain_manager(&g);
        if (!CHECK(net && m)) return;
        gwr_rewrite_options o = {.stop_after = k ? k : GWR_STOP_BEFORE_FIRST};
        CHECK_OK(gwr_rewrite_manager_set_options(m, &o));
        CHECK_OK(gwr_rewrite_manager_rewrite(m, net, NULL));
        gwr_rewrite_manager_summary(m, &s);
        CHECK(same_prefix(&g, &full, k));
        CHECK_EQ_INT(s.rewrites, k);
        CHECK(s.stopped && !s.converged);
        CHECK_OK(gwr_network_verify(net));
        CHECK(exports(net));
        /* 2 Adds and 2 Neg pairs, one unit less per rewrite (pruned) */
        CHECK_EQ_INT(count_op(net, "Add") + count_op(net, "Neg") / 2, 4 - k);
        CHECK_EQ_INT(gwr_network_num_layers(net), gwr_network_num_live_layers(net)); /* pruned */
        gwr_rewrite_manager_free(m);
        gwr_network_free(net);
    }
    /* a stop past the end is no stop: the run converges */
    log_t g = {0};
    net = chain();
    m = chain_manager(&g);
    if (!CHECK(net && m)) return;
    CHECK_OK(gwr_rewrite_manager_set_options(m, &(gwr_rewrite_options){.stop_after = 5}));
    CHECK_OK(gwr_rewrite_manager_rewrite(m, net, NULL));
    gwr_rewrite_manager_summary(m, &s);
    CHECK(s.converged && !s.stopped);
    CHECK_EQ_INT(g.n, 4);
    gwr_rewrite_manager_free(m);
    gwr_network_free(net);
}

/* ---- gwr_optimize: phases and bodies ---- */

static gwr_tensor *identity(gwr_network *net, gwr_tensor *x) {
    gwr_tensor *out = NULL;
    return x && gwr_op_call(net, "", "Identity", 1, &x, NULL, 1, &out) ? out : NULL;
}

/* Relu(Identity(Neg(Neg(x)))) in net (a body or the root). */
static gwr_tensor *cleanup_chain(gwr_network *net, gwr_tensor *x) {
    return gwr_relu(net, identity(net, gwr_neg(net, gwr_neg(net, x))));
}

/* Root: Relu(Identity(Neg(Neg(x)))) + 0 -> Relu, and If(c) with then
 * Relu(Identity(Neg(Neg(x)))) and else Relu(Identity(x)): cleanup-phase
 * rewrites (rules_cleanup, eliminate_identity), a fold-phase one
 * (eliminate_noop_arith) and three in the bodies. */
static gwr_network *with_bodies(void) {
    static const float zero[1] = {0};
    gwr_network *net = gwr_network_new("bodies");
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, D4);
    gwr_tensor *c = gwr_network_add_input(net, "c", GWR_BOOL, 0, NULL);
    gwr_tensor *z = gwr_constant(net, GWR_FLOAT32, 1, (const int64_t[]){1}, zero);
    gwr_tensor *a = gwr_relu(net, gwr_add(net, cleanup_chain(net, x), z));
    gwr_layer *iff = gwr_network_add_layer(net, "If", "", NULL, 1, &c, 1, NULL);
    gwr_network *th = gwr_network_new_subgraph(net, "then"), *el = gwr_network_new_subgraph(net, "else");
    if (!a || !iff || !th || !el) return gwr_network_free(net), NULL;
    gwr_tensor *t = cleanup_chain(th, x);
    gwr_tensor *e = gwr_relu(el, identity(el, x));
    if (!t || !e || gwr_network_mark_output(th, t) || gwr_network_mark_output(el, e) ||
        gwr_layer_set_graph(iff, "then_branch", th) || gwr_layer_set_graph(iff, "else_branch", el) ||
        gwr_network_mark_output(net, a) || gwr_network_mark_output(net, gwr_layer_output(iff, 0))) {
        gwr_network_free(net);
        return NULL;
    }
    return net;
}

/* Identity, Add and Neg pairs left in net and its If's bodies. */
static int64_t units(gwr_network *net) {
    int64_t n = count_op(net, "Identity") + count_op(net, "Add") + count_op(net, "Neg") / 2;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        gwr_network *b = NULL;
        if (gwr_layer_is_removed(l) || strcmp(gwr_layer_op(l), "If")) continue;
        if (!gwr_layer_get_graph(l, "then_branch", &b)) n += units(b);
        if (!gwr_layer_get_graph(l, "else_branch", &b)) n += units(b);
    }
    return n;
}

static gwr_status optimize(gwr_network *net, int64_t stop, log_t *g, gwr_optimize_report **r) {
    gwr_rewrite_listener ls = {.pattern_applied = on_applied, .ctx = g};
    gwr_optimize_options o = {.only = "eliminate_identity,rules_cleanup,eliminate_noop_arith",
                              .listener = &ls,
                              .stop_after = stop};
    return gwr_optimize(net, &o, r);
}

TEST(optimize_stops_after_k) {
    log_t full = {0}, again = {0};
    gwr_network *net = with_bodies();
    gwr_optimize_report *r = NULL;
    if (!CHECK(net)) return;
    CHECK_EQ_INT(units(net), 6);
    CHECK_OK(optimize(net, 0, &full, &r));
    CHECK_EQ_INT(full.n, 6); /* three in the root, three in the bodies */
    CHECK(!full.bad_seq);     /* numbered over the whole run */
    CHECK_EQ_INT(units(net), 0);
    CHECK_EQ_INT(gwr_optimize_report_rewrites(r), 6);
    CHECK(!gwr_optimize_report_stopped(r));
    gwr_optimize_report_free(r);
    gwr_network_free(net);
    /* deterministic: the same model, the same rewrites in the same order */
    net = with_bodies();
    if (!CHECK(net)) return;
    CHECK_OK(optimize(net, 0, &again, NULL));
    CHECK(same_prefix(&again, &full, full.n));
    gwr_network_free(net);
    for (int k = 0; k <= full.n; k++) {
        log_t g = {0};
        net = with_bodies();
        if (!CHECK(net)) return;
        CHECK_OK(optimize(net, k ? k : GWR_STOP_BEFORE_FIRST, &g, &r));
        CHECK(same_prefix(&g, &full, k));
        CHECK(!g.bad_seq);
        CHECK(gwr_optimize_report_stopped(r));
        CHECK_EQ_INT(gwr_optimize_report_rewrites(r), k);
        CHECK_EQ_INT(units(net), 6 - k);
        CHECK_OK(gwr_network_verify(net));
        CHECK(exports(net));
        gwr_optimize_report_free(r);
        gwr_network_free(net);
    }
}

int main(void) {
    RUN(manager_stops_after_k);
    RUN(optimize_stops_after_k);
    return check_report();
}
