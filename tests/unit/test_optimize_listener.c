/* test_optimize_listener.c - gwr_optimize_options.listener (used by `gwr
 * optimize --view`): told of every rewrite of the run, with the pass's
 * label and the layers removed, as many as the report counts. */
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"

typedef struct seen {
    int n;
    int bad_label;
    char removed[8][32];
    int nremoved;
} seen;

static void applied(void *ctx, const gwr_rewrite_event *e) {
    seen *s = ctx;
    s->n++;
    if (strcmp(e->label, "eliminate_identity")) s->bad_label++;
    for (int64_t i = 0; i < e->nremoved && s->nremoved < 8; i++)
        snprintf(s->removed[s->nremoved++], sizeof s->removed[0], "%s", gwr_layer_name(e->removed[i]));
}

static int has(const seen *s, const char *name) {
    for (int i = 0; i < s->nremoved; i++)
        if (!strcmp(s->removed[i], name)) return 1;
    return 0;
}

TEST(listener_sees_every_rewrite) {
    gwr_network *net = gwr_network_new("chain");
    gwr_dim d[1] = {4};
    gwr_tensor *t = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, d);
    static const char *const names[3] = {"id0", "id1", "relu"};
    static const char *const ops[3] = {"Identity", "Identity", "Relu"};
    for (int i = 0; i < 3; i++) {
        gwr_layer *l = gwr_network_add_layer(net, ops[i], "", names[i], 1, &t, 1, NULL);
        CHECK(l != NULL);
        t = gwr_layer_output(l, 0);
        gwr_tensor_set_type(t, GWR_FLOAT32, 1, d);
    }
    CHECK_OK(gwr_network_mark_output(net, t));
    seen s = {0};
    gwr_rewrite_listener ls = {.pattern_applied = applied, .ctx = &s};
    gwr_optimize_options o = {.only = "eliminate_identity", .listener = &ls};
    gwr_optimize_report *r = NULL;
    CHECK_OK(gwr_optimize(net, &o, &r));
    int64_t rewrites = 0;
    for (int i = 0; i < gwr_optimize_report_count(r); i++)
        if (!strcmp(gwr_optimize_report_pass(r, i)->label, "eliminate_identity"))
            rewrites = gwr_optimize_report_pass(r, i)->rewrites;
    CHECK_EQ_INT(rewrites, 2);
    CHECK_EQ_INT(s.n, 2);
    CHECK_EQ_INT(s.bad_label, 0);
    CHECK(has(&s, "id0") && has(&s, "id1"));
    CHECK_EQ_INT(gwr_network_num_live_layers(net), 1);
    gwr_optimize_report_free(r);
    gwr_network_free(net);
}

int main(void) {
    RUN(listener_sees_every_rewrite);
    return check_report();
}
