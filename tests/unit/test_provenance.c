/* test_provenance.c - provenance of rewritten layers (docs/design.md,
 * "Provenance"): the rewrite driver records on every layer a rewrite adds
 * the pattern's label and the layers it replaced (removed, or left dead),
 * nests the chain of replaced layers that had one, caps a tree at 256
 * names; the ONNX exporter writes it to node metadata_props only when
 * asked and the importer reads it back. The expected JSON is written out
 * here from the networks' construction, not from the code under test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "gwr/gwr.h"

static const gwr_dim D4[1] = {4};

static gwr_tensor *in4(gwr_network *net, const char *name) {
    return gwr_network_add_input(net, name, GWR_FLOAT32, 1, D4);
}

static gwr_tensor *layer(gwr_network *net, const char *op, const char *name, int n, gwr_tensor *const *ins) {
    gwr_layer *l = gwr_network_add_layer(net, op, "", name, n, ins, 1, NULL);
    CHECK(l != NULL);
    return l ? gwr_layer_output(l, 0) : NULL;
}

static gwr_layer *producer_of_output(gwr_network *net, int i) { return gwr_tensor_parent(gwr_network_output(net, i)); }

/* ---- patterns ---- */

/* Replaces a layer by one of op `user` on the same inputs, removing it. */
static int swap_op(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    gwr_tensor *ins[2] = {gwr_layer_input(l, 0), gwr_layer_num_inputs(l) > 1 ? gwr_layer_input(l, 1) : NULL};
    gwr_tensor *out = NULL;
    if (!gwr_op_call(net, "", gwr_rewrite_ctx_user(c), gwr_layer_num_inputs(l), ins, NULL, 1, &out)) return -1;
    if (gwr_tensor_replace_all_uses_with(gwr_layer_output(l, 0), out)) return -1;
    gwr_layer_mark_as_removed(l);
    return 1;
}

/* Add(Neg(a), b) -> Sub(b, a); removes the Add only: the Neg, when
 * nothing else reads it, is left dead for the final prune. */
static int neg_add(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_layer *neg = gwr_tensor_parent(gwr_layer_input(l, 0));
    if (!neg || strcmp(gwr_layer_op(neg), "Neg")) return 0;
    gwr_tensor *ins[2] = {gwr_layer_input(l, 1), gwr_layer_input(neg, 0)}, *out = NULL;
    if (!gwr_op_call(gwr_rewrite_ctx_network(c), "", "Sub", 2, ins, NULL, 1, &out)) return -1;
    if (gwr_tensor_replace_all_uses_with(gwr_layer_output(l, 0), out)) return -1;
    gwr_layer_mark_as_removed(l);
    return 1;
}

/* Sum(Neg(x0), .., Neg(xn)) -> Neg(Sum(x0, .., xn)); removes the Sum, leaves
 * the Negs dead. */
static int hoist_neg(gwr_rewrite_ctx *c, gwr_layer *l) {
    int n = gwr_layer_num_inputs(l);
    gwr_tensor **xs = calloc((size_t)n, sizeof *xs), *sum = NULL, *neg = NULL;
    for (int i = 0; i < n; i++) {
        gwr_layer *p = gwr_tensor_parent(gwr_layer_input(l, i));
        if (!p || strcmp(gwr_layer_op(p), "Neg")) {
            free(xs);
            return 0;
        }
        xs[i] = gwr_layer_input(p, 0);
    }
    gwr_network *net = gwr_rewrite_ctx_network(c);
    int ok = gwr_op_call(net, "", "Sum", n, xs, NULL, 1, &sum) && gwr_op_call(net, "", "Neg", 1, &sum, NULL, 1, &neg);
    free(xs);
    if (!ok || gwr_tensor_replace_all_uses_with(gwr_layer_output(l, 0), neg)) return -1;
    gwr_layer_mark_as_removed(l);
    return 1;
}

static const char *const ADD[] = {"Add", NULL}, *const SUB[] = {"Sub", NULL}, *const SUM[] = {"Sum", NULL},
                        *const NEG[] = {"Neg", NULL};

static gwr_rewrite_manager *manager(int provenance) {
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    gwr_rewrite_options o = {.provenance = provenance};
    CHECK_OK(gwr_rewrite_manager_set_options(m, &o));
    return m;
}

static void add(gwr_rewrite_manager *m, const char *label, const char *const *root_ops,
                int (*fn)(gwr_rewrite_ctx *, gwr_layer *), const char *user) {
    gwr_pattern_rewriter p = {.name = label, .root_ops = root_ops, .match_and_rewrite = fn, .user = (void *)user};
    CHECK_OK(gwr_rewrite_manager_add(m, label, &p, 1));
}

/* ---- tests ---- */

/* Two steps: the second layer's provenance nests the first's. */
TEST(chain_nests) {
    gwr_network *net = gwr_network_new("chain");
    gwr_tensor *x = in4(net, "x"), *y = in4(net, "y");
    gwr_tensor *ins[2] = {x, y};
    CHECK_OK(gwr_network_mark_output(net, layer(net, "Add", "a", 2, ins)));
    gwr_rewrite_manager *m = manager(1);
    add(m, "add_to_sub", ADD, swap_op, "Sub");
    add(m, "sub_to_mul", SUB, swap_op, "Mul");
    CHECK_OK(gwr_rewrite_manager_rewrite(m, net, NULL));
    gwr_layer *mul = producer_of_output(net, 0);
    CHECK_STR(gwr_layer_op(mul), "Mul");
    /* The Sub in between was pruned; its name is in the chain only. */
    const char *j = gwr_layer_provenance(mul);
    CHECK(j != NULL);
    char sub[64] = "", want[256];
    const char *p = j ? strstr(j, "\"name\":\"") : NULL;
    if (p) sscanf(p + 8, "%63[^\"]", sub);
    snprintf(want, sizeof want, "{\"rule\":\"sub_to_mul\",\"from\":[{\"name\":\"%s\",\"rule\":\"add_to_sub\",\"from\":[\"a\"]}]}",
             sub);
    CHECK_STR(j, want);
    CHECK(strcmp(sub, "a") != 0 && gwr_network_find_layer(net, sub) == NULL);
    /* The text tree explain prints. */
    char *text = gwr_provenance_text(gwr_layer_name(mul), j);
    snprintf(want, sizeof want, "%s: made by sub_to_mul from\n  %s: made by add_to_sub from\n    a (original)\n",
             gwr_layer_name(mul), sub);
    CHECK_STR(text, want);
    free(text);
    CHECK(gwr_provenance_text("x", "{\"rule\":\"r\"") == NULL);
    CHECK(gwr_provenance_text("x", "[1]") == NULL);
    gwr_rewrite_manager_free(m);
    gwr_network_free(net);
}

/* Layers left dead count as replaced; a layer something else still reads
 * does not; nothing is recorded when the option is off. */
TEST(dead_layers_are_replaced) {
    for (int on = 0; on < 2; on++) {
        gwr_network *net = gwr_network_new("dead");
        gwr_tensor *x = in4(net, "x"), *y = in4(net, "y");
        gwr_tensor *n1 = layer(net, "Neg", "n1", 1, &x), *n2 = layer(net, "Neg", "n2", 1, &y);
        gwr_tensor *i1[2] = {n1, y}, *i2[2] = {n2, x};
        CHECK_OK(gwr_network_mark_output(net, layer(net, "Add", "a1", 2, i1)));
        CHECK_OK(gwr_network_mark_output(net, layer(net, "Add", "a2", 2, i2)));
        CHECK_OK(gwr_network_mark_output(net, n2)); /* n2 stays live */
        gwr_rewrite_manager *m = manager(on);
        add(m, "neg_add", ADD, neg_add, NULL);
        CHECK_OK(gwr_rewrite_manager_rewrite(m, net, NULL));
        gwr_layer *s1 = producer_of_output(net, 0), *s2 = producer_of_output(net, 1);
        CHECK_STR(gwr_layer_op(s1), "Sub");
        CHECK_STR(gwr_layer_op(s2), "Sub");
        if (on) {
            CHECK_STR(gwr_layer_provenance(s1), "{\"rule\":\"neg_add\",\"from\":[\"n1\",\"a1\"]}");
            CHECK_STR(gwr_layer_provenance(s2), "{\"rule\":\"neg_add\",\"from\":[\"a2\"]}");
        } else {
            CHECK(gwr_layer_provenance(s1) == NULL && gwr_layer_provenance(s2) == NULL);
        }
        CHECK(gwr_layer_provenance(gwr_network_find_layer(net, "n2")) == NULL);
        gwr_rewrite_manager_free(m);
        gwr_network_free(net);
    }
}

#define WIDE 300
#define CAP 256

/* 301 replaced layers: 256 listed, "more":45; a later rewrite nests that
 * tree as it is. Then the ONNX round trip, with and without the option. */
TEST(cap_and_onnx_round_trip) {
    gwr_network *net = gwr_network_new("wide");
    gwr_tensor *negs[WIDE];
    for (int i = 0; i < WIDE; i++) {
        char xn[16], nn[16];
        snprintf(xn, sizeof xn, "x%d", i);
        snprintf(nn, sizeof nn, "neg_%d", i);
        gwr_tensor *x = in4(net, xn);
        negs[i] = layer(net, "Neg", nn, 1, &x);
    }
    CHECK_OK(gwr_network_mark_output(net, layer(net, "Sum", "sum", WIDE, negs)));
    gwr_rewrite_manager *m = manager(1);
    add(m, "hoist_neg", SUM, hoist_neg, NULL);
    CHECK_OK(gwr_rewrite_manager_rewrite(m, net, NULL));
    gwr_layer *neg = producer_of_output(net, 0);
    CHECK_STR(gwr_layer_op(neg), "Neg");
    size_t cap = 64 + 16 * WIDE;
    char *want = malloc(cap), *nested = malloc(cap + 128);
    size_t k = (size_t)snprintf(want, cap, "{\"rule\":\"hoist_neg\",\"from\":[");
    for (int i = 0; i < CAP; i++) k += (size_t)snprintf(want + k, cap - k, "%s\"neg_%d\"", i ? "," : "", i);
    snprintf(want + k, cap - k, "],\"more\":%d}", WIDE + 1 - CAP); /* 44 Negs and the Sum */
    CHECK_STR(gwr_layer_provenance(neg), want);
    /* The Sum the rewrite added has the same. */
    CHECK_STR(gwr_layer_provenance(gwr_tensor_parent(gwr_layer_input(neg, 0))), want);

    gwr_rewrite_manager *m2 = manager(1);
    add(m2, "neg_to_abs", NEG, swap_op, "Abs");
    char oldname[64];
    snprintf(oldname, sizeof oldname, "%s", gwr_layer_name(neg));
    CHECK_OK(gwr_rewrite_manager_rewrite(m2, net, NULL));
    gwr_layer *abs = producer_of_output(net, 0);
    CHECK_STR(gwr_layer_op(abs), "Abs");
    snprintf(nested, cap + 128, "{\"rule\":\"neg_to_abs\",\"from\":[{\"name\":\"%s\",%s]}", oldname, want + 1);
    CHECK_STR(gwr_layer_provenance(abs), nested);

    /* ONNX: node metadata_props, only when asked. */
    char path[] = "/tmp/gwr_test_provXXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
    gwr_onnx_save_options so = {.provenance = 1};
    CHECK_OK(gwr_onnx_save(net, path, &so));
    gwr_network *back = gwr_onnx_load(path, NULL);
    CHECK(back != NULL);
    if (back) {
        CHECK_STR(gwr_layer_provenance(gwr_network_find_layer(back, gwr_layer_name(abs))), nested);
        gwr_network_free(back);
    }
    CHECK_OK(gwr_onnx_save(net, path, NULL));
    back = gwr_onnx_load(path, NULL);
    CHECK(back != NULL);
    if (back) {
        CHECK(gwr_layer_provenance(gwr_network_find_layer(back, gwr_layer_name(abs))) == NULL);
        gwr_network_free(back);
    }
    unlink(path);
    free(want);
    free(nested);
    gwr_rewrite_manager_free(m);
    gwr_rewrite_manager_free(m2);
    gwr_network_free(net);
}

int main(void) {
    RUN(chain_nests);
    RUN(dead_layers_are_replaced);
    RUN(cap_and_onnx_round_trip);
    return check_report();
}
