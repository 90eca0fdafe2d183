/* test_rules_dag.c - DAG patterns: a node named n@Op(...) read again as an
 * input (`n`, or `n[k]` for output k) is the same layer, whether the use
 * comes before or after the binding; the single-reader rule still holds;
 * the load-time refusals (a node read inside its own op, a node of
 * another alternative, constraints on a node name, n[k] of a tensor). The
 * expected outputs are the networks' own values before the rewrite. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "rules_util.h"

static const float XS[12] = {-2.5f, -1, -0.25f, 0, 0.5f, 1, 1.75f, 3, -4, 2, 0.125f, -0.5f};

static gwr_network *new_net(gwr_tensor **x) {
    gwr_network *net = gwr_network_new("t");
    gwr_network_set_opset(net, "", 17);
    gwr_dim d[1] = {12};
    *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, d);
    return net;
}

/* The rewrite count of text on net; the outputs before and after equal. */
static int64_t apply_same(gwr_network *net, const char *text) {
    float before[64], after[64];
    int64_t dims[1] = {12};
    int64_t n = rt_run(net, 1, dims, XS, before, 64);
    int64_t k = rt_apply(net, text);
    CHECK_EQ_INT(rt_run(net, 1, dims, XS, after, 64), n);
    for (int64_t i = 0; i < n && i < 64; i++)
        if (!CHECK(fabs(before[i] - after[i]) <= 1e-6 * fmax(1.0, fabs(before[i])))) break;
    return k;
}

/* relu(x)^2 as Mul of one Relu read twice; the use written after the
 * binding and before it. Two Relu layers of the same x are not one node;
 * a third reader of the Relu outside the match keeps it. */
TEST(node_read_twice) {
    const char *rules[2] = {"rule sq:\n  Mul(n@Relu(x), n) => Pow(Relu(x), 2.0)\n",
                            "rule sq:\n  Mul(n, n@Relu(x)) => Pow(Relu(x), 2.0)\n"};
    for (int w = 0; w < 2; w++)
        for (int k = 0; k < 3; k++) { /* one Relu; two Relus; one Relu with another reader */
            gwr_tensor *x;
            gwr_network *net = new_net(&x);
            gwr_tensor *r = gwr_relu(net, x);
            gwr_tensor *y = gwr_mul(net, r, k == 1 ? gwr_relu(net, x) : r);
            gwr_network_mark_output(net, k == 2 ? gwr_add(net, y, gwr_sigmoid(net, r)) : y);
            CHECK_EQ_INT(apply_same(net, rules[w]), k == 0 ? 1 : 0);
            CHECK_EQ_INT(rt_count(net, "Pow"), k == 0 ? 1 : 0);
            CHECK_EQ_INT(rt_count(net, "Mul"), k == 0 ? 0 : 1);
            gwr_network_free(net);
        }
}

/* LayerNorm's centred input: d = x - mean(x) read by Pow and by Div. The
 * commutative Add of eps matches both orders; a network where Div reads
 * its own x - mean(x) (another layer) does not match. */
TEST(centred_input_shared) {
    const char *r = "rule ln:\n"
                    "  Div(d, Sqrt(Add(ReduceMean<axes=[-1]>(Pow(d@Sub(x, ReduceMean<axes=[-1]>(x)), 2.0)), e: const)))\n"
                    "    => Div(Sub(x, ReduceMean<axes=[-1]>(x)),\n"
                    "           Sqrt(Add(ReduceMean<axes=[-1]>(Mul(Sub(x, ReduceMean<axes=[-1]>(x)), Sub(x, ReduceMean<axes=[-1]>(x)))), e)))\n";
    for (int k = 0; k < 3; k++) { /* eps on the right; eps on the left; Div reads another Sub */
        gwr_tensor *x;
        gwr_network *net = new_net(&x);
        int64_t ax[1] = {-1};
        gwr_tensor *mu = gwr_reduce_mean(net, x, 1, ax, 1);
        gwr_tensor *d = gwr_sub(net, x, mu);
        gwr_tensor *v = gwr_reduce_mean(net, gwr_pow(net, d, gwr_constant_f32(net, 2.0f)), 1, ax, 1);
        gwr_tensor *eps = gwr_constant_f32(net, 1e-5f);
        gwr_tensor *s = gwr_sqrt(net, k == 1 ? gwr_add(net, eps, v) : gwr_add(net, v, eps));
        gwr_tensor *num = k == 2 ? gwr_sub(net, x, gwr_reduce_mean(net, x, 1, ax, 1)) : d;
        gwr_network_mark_output(net, gwr_div(net, num, s));
        CHECK_EQ_INT(apply_same(net, r), k < 2 ? 1 : 0);
        CHECK_EQ_INT(rt_count(net, "Pow"), k < 2 ? 0 : 1);
        gwr_network_free(net);
    }
}

/* The whole LayerNorm chain with gamma and beta, the variance of Pow(d, 2)
 * or Mul(d, d): d is bound inside either alternative (one table each)
 * and read first by the Div; eps and gamma on either side of their
 * commutative Add and Mul. x is [3, 4], normalized over the last axis. */
TEST(layer_norm_alternatives_and_swaps) {
    const char *r = "rule ln:\n"
                    "  Add(Mul(Div(d, Sqrt(Add(ReduceMean<axes=[-1]>((Pow(d@Sub(x, ReduceMean<axes=[-1]>(x)), 2.0)\n"
                    "                                                 | Mul(d@Sub(x, ReduceMean<axes=[-1]>(x)), d))),\n"
                    "                          e: const))), g: const), b: const)\n"
                    "    => LayerNormalization<axis=-1, epsilon=value(e)>(x, g, b)\n"
                    "  where numel(e) == 1\n";
    static const float G[4] = {0.5f, 2, -1, 1.5f}, B[4] = {0.25f, -0.5f, 0, 1};
    for (int k = 0; k < 4; k++) { /* Pow; Mul(d, d); eps and gamma on the left; Mul of two Sub layers */
        gwr_network *net = gwr_network_new("t");
        gwr_network_set_opset(net, "", 17);
        gwr_dim xd[2] = {3, 4};
        gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, xd);
        int64_t ax[1] = {-1}, four = 4;
        gwr_tensor *d = gwr_sub(net, x, gwr_reduce_mean(net, x, 1, ax, 1));
        gwr_tensor *sq = k == 0 ? gwr_pow(net, d, gwr_constant_f32(net, 2.0f))
                                : gwr_mul(net, d, k == 3 ? gwr_sub(net, x, gwr_reduce_mean(net, x, 1, ax, 1)) : d);
        gwr_tensor *v = gwr_reduce_mean(net, sq, 1, ax, 1), *eps = gwr_constant_f32(net, 1e-5f);
        gwr_tensor *n = gwr_div(net, d, gwr_sqrt(net, k == 2 ? gwr_add(net, eps, v) : gwr_add(net, v, eps)));
        gwr_tensor *g = gwr_constant(net, GWR_FLOAT32, 1, &four, G), *b = gwr_constant(net, GWR_FLOAT32, 1, &four, B);
        gwr_network_mark_output(net, gwr_add(net, k == 2 ? gwr_mul(net, g, n) : gwr_mul(net, n, g), b));
        float before[12], after[12];
        int64_t dims[2] = {3, 4};
        CHECK_EQ_INT(rt_run(net, 2, dims, XS, before, 12), 12);
        CHECK_EQ_INT(rt_apply(net, r), k < 3 ? 1 : 0);
        CHECK_EQ_INT(rt_run(net, 2, dims, XS, after, 12), 12);
        for (int i = 0; i < 12; i++)
            if (!CHECK(fabs(before[i] - after[i]) <= 1e-4)) break;
        CHECK_EQ_INT(rt_count(net, "LayerNormalization"), k < 3 ? 1 : 0);
        CHECK_EQ_INT(rt_count(net, NULL), k < 3 ? 3 : 14); /* LayerNormalization, gamma, beta */
        gwr_network_free(net);
    }
}

/* s[1] is output 1 of the Split named s: the two halves added (either
 * order: Add commutes) fire; the first half added to itself does not. */
TEST(node_output_k) {
    const char *r = "rule halves:\n  Add(s@Split<axis=0>(x)[0], s[1])\n"
                    "    => ReduceSum<keepdims=0>(Reshape(x, cast([2, 6], i64)), cast([0], i64))\n";
    for (int k = 0; k < 3; k++) {
        gwr_tensor *x, *o[2];
        gwr_network *net = new_net(&x);
        CHECK(gwr_split(net, x, 0, 2, NULL, o) != NULL);
        gwr_network_mark_output(net, k == 0 ? gwr_add(net, o[0], o[1]) : k == 1 ? gwr_add(net, o[1], o[0]) : gwr_add(net, o[0], o[0]));
        CHECK_EQ_INT(apply_same(net, r), k < 2 ? 1 : 0);
        CHECK_EQ_INT(rt_count(net, "Split"), k < 2 ? 0 : 1);
        gwr_network_free(net);
    }
}

/* Parses text as "t.rules" and checks the whole message. */
static void refused(const char *text, const char *want) {
    gwr_rules *r = (gwr_rules *)1;
    CHECK_EQ_INT(gwr_rules_parse(text, "t.rules", &r), GWR_ERR_PARSE);
    CHECK(r == NULL);
    CHECK_STR(gwr_last_errmsg(), want);
}

TEST(refusals) {
    refused("rule a:\n  Mul(n@Relu(n), x) => x",
            "t.rules:2:14: 'n' is read inside its own op (n@Relu): the pattern has a cycle\n"
            "  Mul(n@Relu(n), x) => x\n"
            "             ^");
    refused("rule a:\n  Add(p@Relu(q), q@Relu(p)) => p",
            "t.rules:2:25: 'p' is read inside its own op (p@Relu): the pattern has a cycle\n"
            "  Add(p@Relu(q), q@Relu(p)) => p\n"
            "                        ^");
    refused("rule a:\n  Mul(n@Relu(x), n@Relu(x)) => x",
            "t.rules:2:20: 'n' is bound twice\n"
            "  Mul(n@Relu(x), n@Relu(x)) => x\n"
            "                   ^");
    refused("rule a:\n  Mul((n@Relu(x) | Tanh(x)), n) => x",
            "t.rules:2:30: 'n' names a node of another alternative\n"
            "  Mul((n@Relu(x) | Tanh(x)), n) => x\n"
            "                             ^");
    refused("rule a:\n  Mul(n@Relu(x), n: f32) => x",
            "t.rules:2:18: a node name (n@Op) takes no constraints, '?' or '...'\n"
            "  Mul(n@Relu(x), n: f32) => x\n"
            "                 ^");
    refused("rule a:\n  Add(Split(x)[0], x[1]) => x",
            "t.rules:2:20: 'x' is not a node name (n@Op in the pattern)\n"
            "  Add(Split(x)[0], x[1]) => x\n"
            "                   ^");
    refused("rule a:\n  Mul(n@Relu(x), n) => Pow(n, 2.0)",
            "t.rules:2:28: 'n' names a matched node, not a tensor the replacement can read (write its op again)\n"
            "  Mul(n@Relu(x), n) => Pow(n, 2.0)\n"
            "                           ^");
}

int main(void) {
    RUN(node_read_twice);
    RUN(centred_input_shared);
    RUN(layer_norm_alternatives_and_swaps);
    RUN(node_output_k);
    RUN(refusals);
    return check_report();
}
