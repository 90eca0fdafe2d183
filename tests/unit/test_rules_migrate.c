/* test_rules_migrate.c - what the optimizer's passes written as rule files
 * (the .rules files of src/passes/rules) need from the language: the graph queries of
 * a where clause (opset(), same_type(a, n), broadcasts_to(c, x),
 * dim(x, i), range(n), reverse(list)), an attribute default computed from
 * the match (a Transpose without perm), a rule for target gwr alone
 * writing an op its opset lacks, and an Identity carrying a network
 * output's name refused; and that every rule-file pass of the table is
 * offered the roots of its file's rules. Expected values: the ONNX
 * definitions (Transpose's default reverses the axes; Gelu is opset 20). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "passes/rules_pass.h"
#include "rules_util.h"

/* A network importing opset (none when 0) with float32 input x; a dim
 * GWR_DIM_UNKNOWN in dims becomes the symbol "B". */
static gwr_network *net_of(gwr_tensor **x, int opset, int rank, const gwr_dim *dims) {
    gwr_network *net = gwr_network_new("t");
    gwr_dim d[4];
    if (opset) gwr_network_set_opset(net, "", opset);
    for (int i = 0; i < rank && i < 4; i++) d[i] = dims[i] == GWR_DIM_UNKNOWN ? gwr_network_dim_sym(net, "B") : dims[i];
    *x = gwr_network_add_input(net, "x", GWR_FLOAT32, rank, d);
    return net;
}

static gwr_tensor *identity(gwr_network *net, gwr_tensor *x) {
    gwr_layer *l = gwr_network_add_layer(net, "Identity", "", NULL, 1, &x, 1, NULL);
    return l && !gwr_layer_infer(l) ? gwr_layer_output(l, 0) : NULL;
}

/* opset(): the model's default-domain opset, -1 when none is imported. */
TEST(where_opset) {
    const char *r = "rule neg2 :\n  Neg(Neg(x)) => x\n  where opset() >= 13 or opset() < 0\n";
    static const int opsets[3] = {12, 13, 0};
    for (int k = 0; k < 3; k++) {
        gwr_tensor *x;
        gwr_dim d[1] = {4};
        gwr_network *net = net_of(&x, opsets[k], 1, d);
        gwr_network_mark_output(net, gwr_relu(net, gwr_neg(net, gwr_neg(net, x))));
        CHECK_EQ_INT(rt_apply(net, r), k ? 1 : 0);
        CHECK_EQ_INT(rt_count(net, "Neg"), k ? 0 : 2);
        gwr_network_free(net);
    }
}

/* same_type(x, r): x has the result's float dtype and exact shape; a
 * splat that broadcasts x to a larger shape refuses. dim(x, -1) reads a
 * known last dim under a symbolic batch dim. */
TEST(where_same_type_and_dim) {
    const char *r = "rule silu_like:\n  r@Mul(x, Sigmoid(x)) => com.microsoft::QuickGelu<alpha=1.0>(x)\n"
                    "  where same_type(x, r) and dim(x, -1) == 4\n";
    for (int k = 0; k < 3; k++) { /* x [B, 4]; x [B, 3]; x [B, 4] times a [2, 1, 1] splat of ones first */
        gwr_tensor *x;
        gwr_dim d[2] = {GWR_DIM_UNKNOWN, k == 1 ? 3 : 4};
        gwr_network *net = net_of(&x, 17, 2, d);
        gwr_tensor *s = gwr_sigmoid(net, x), *y;
        if (k == 2) {
            static const float ones[2] = {1, 1};
            static const int64_t od[3] = {2, 1, 1};
            s = gwr_mul(net, s, gwr_constant(net, GWR_FLOAT32, 3, od, ones));
        }
        y = gwr_mul(net, x, s);
        gwr_network_mark_output(net, y);
        CHECK_EQ_INT(rt_apply(net, r), k ? 0 : 1);
        gwr_network_free(net);
    }
}

/* broadcasts_to(c, x): c's dims, right-aligned, each 1 or x's extent. */
TEST(where_broadcasts_to) {
    const char *r = "rule add_zero:\n  Add(x, k ~ 0 tol 0) => x\n  where broadcasts_to(k, x)\n";
    static const int64_t kd[3][2] = {{1, 3}, {2, 3}, {3, 3}};
    for (int k = 0; k < 3; k++) { /* x [2, 3] + zeros [1, 3], [2, 3] (fire), [3, 3] (not x's shape) */
        gwr_tensor *x;
        gwr_dim d[2] = {2, 3};
        gwr_network *net = net_of(&x, 17, 2, d);
        float z[9] = {0};
        gwr_network_mark_output(net, gwr_relu(net, gwr_add(net, x, gwr_constant(net, GWR_FLOAT32, 2, kd[k], z))));
        CHECK_EQ_INT(rt_apply(net, r), k < 2 ? 1 : 0);
        gwr_network_free(net);
    }
}

/* range, reverse, and an attribute default computed from the match:
 * Transpose without perm reverses its input's axes. T(T(x)) with both
 * perms absent is x; T(T(x; [1, 2, 0]); absent) is T(x; [0, 2, 1]) by
 * out[i] = p1[p2[i]] with p2 = [2, 1, 0]. */
TEST(computed_attribute_default) {
    const char *r = "rule tt:\n  Transpose<perm=p2 default reverse(range(rank(x)))>(Transpose<perm=p1 default "
                    "reverse(range(rank(x)))>(x))\n    => Transpose<perm=compose(p1, p2)>(x)\n"
                    "rule tt_cancel benefit 20:\n  Transpose<perm=p2 default reverse(range(rank(x)))>(Transpose<perm=p1 default "
                    "reverse(range(rank(x)))>(x)) => x\n  where compose(p1, p2) == range(len(p1))\n";
    static const int64_t p120[3] = {1, 2, 0}, p021[3] = {0, 2, 1};
    for (int k = 0; k < 2; k++) {
        gwr_tensor *x;
        gwr_dim d[3] = {2, 3, 4};
        gwr_network *net = net_of(&x, 17, 3, d);
        gwr_tensor *y = gwr_transpose(net, gwr_transpose(net, x, k ? 3 : 0, k ? p120 : NULL), 0, NULL);
        gwr_network_mark_output(net, gwr_relu(net, y));
        CHECK_EQ_INT(rt_apply(net, r), 1);
        CHECK_EQ_INT(rt_count(net, "Transpose"), k);
        for (int64_t i = 0; k && i < gwr_network_num_layers(net); i++) {
            gwr_layer *l = gwr_network_layer(net, i);
            const int64_t *p;
            int64_t n;
            if (!gwr_layer_is_removed(l) && !strcmp(gwr_layer_op(l), "Transpose") && CHECK_OK(gwr_layer_get_ints(l, "perm", &p, &n)))
                CHECK(n == 3 && !memcmp(p, p021, sizeof p021));
        }
        gwr_network_free(net);
    }
}

/* Gelu is opset 20: at opset 13 a rule for target gwr alone still writes
 * it (gwr runs it at every opset); the same rule for onnx and gwr refuses. */
TEST(target_gwr_any_opset) {
    const char *gwr_only = "rule g target gwr:\n  Mul(x, Erf(x)) => Gelu(x)\n";
    const char *both = "rule g target onnx, gwr:\n  Mul(x, Erf(x)) => Gelu(x)\n";
    for (int k = 0; k < 2; k++) {
        gwr_tensor *x;
        gwr_dim d[1] = {4};
        gwr_network *net = net_of(&x, 13, 1, d);
        gwr_network_mark_output(net, gwr_relu(net, gwr_mul(net, x, gwr_erf(net, x))));
        gwr_rewrite_manager *m = gwr_rewrite_manager_new();
        gwr_args *a = gwr_args_new();
        gwr_args_set_int(a, "target", GWR_TARGET_GWR);
        CHECK_OK(gwr_rules_load(m, k ? both : gwr_only));
        CHECK_OK(gwr_rewrite_manager_rewrite(m, net, a));
        CHECK_EQ_INT(rt_count(net, "Gelu"), k ? 0 : 1);
        gwr_args_free(a);
        gwr_rewrite_manager_free(m);
        gwr_network_free(net);
    }
}

/* y = Identity(x), x a graph input and y a network output: the Identity
 * carries y's name and stays (removing it would make a new one); an
 * Identity between two layers goes. */
TEST(identity_carrier_stays) {
    const char *r = "rule id:\n  Identity(x) => x\n";
    for (int k = 0; k < 2; k++) {
        gwr_tensor *x;
        gwr_dim d[1] = {4};
        gwr_network *net = net_of(&x, 17, 1, d);
        gwr_tensor *in = k ? gwr_relu(net, x) : x;
        gwr_network_mark_output(net, k ? gwr_relu(net, identity(net, in)) : identity(net, in));
        CHECK_EQ_INT(rt_apply(net, r), k);
        CHECK_EQ_INT(rt_count(net, "Identity"), !k);
        gwr_network_free(net);
    }
}

/* Every rule-file pass of the table: its file parses, and the pass is
 * offered the root ops of each of its rules; every embedded file is one
 * pass's. */
TEST(rule_file_passes_cover_their_roots) {
    int used[64] = {0}, npasses = 0;
    for (int i = 0; i < gwr_passes_count(); i++) {
        const gwr_pass_info *info = gwr_passes_info(i);
        const gwr_pattern_rewriter *p = info->pattern;
        if (p->match_and_rewrite != gwr_ps_rules_file_run) continue;
        npasses++;
        const char *file = p->user;
        const gwr_rules *r = gwr_ps_rules_file_get(file);
        if (!CHECK(r != NULL)) {
            fprintf(stderr, "  %s: %s\n", file, gwr_last_errmsg());
            continue;
        }
        for (int f = 0; f < gwr_ps_rules_nfiles && f < 64; f++) used[f] += !strcmp(gwr_ps_rules_files[f].name, file);
        for (int j = 0; j < gwr_rules_count(r); j++) {
            gwr_pattern_rewriter rw;
            CHECK_OK(gwr_rules_rewriter(r, j, &rw));
            for (int k = 0; rw.root_ops[k]; k++) {
                int found = 0;
                for (int q = 0; p->root_ops[q]; q++) found |= !strcmp(p->root_ops[q], rw.root_ops[k]);
                if (!CHECK(found)) fprintf(stderr, "  %s: rule %s roots on %s\n", info->label, gwr_rules_name(r, j), rw.root_ops[k]);
            }
        }
    }
    CHECK(npasses >= 9);
    for (int f = 0; f < gwr_ps_rules_nfiles && f < 64; f++)
        if (!CHECK_EQ_INT(used[f], 1)) fprintf(stderr, "  %s\n", gwr_ps_rules_files[f].name);
}

/* `tol 0` is exact: eliminate_noop_arith's x + 0 must not take an epsilon
 * (RMSNorm's Add(mean, 1e-6) once vanished: the engine's tolerance 0 meant
 * its default, 1e-6). Only a constant equal to 0 goes. */
TEST(tol_zero_is_exact) {
    const char *r = "rule add_zero:\n  Add(x, k ~ 0 tol 0) => x\n";
    static const float ks[3] = {1e-6f, 1e-30f, 0.0f};
    for (int k = 0; k < 3; k++) {
        gwr_tensor *x;
        gwr_dim d[1] = {4};
        gwr_network *net = net_of(&x, 17, 1, d);
        gwr_network_mark_output(net, gwr_relu(net, gwr_add(net, x, gwr_constant_f32(net, ks[k]))));
        CHECK_EQ_INT(rt_apply(net, r), k == 2 ? 1 : 0);
        CHECK_EQ_INT(rt_count(net, "Add"), k == 2 ? 0 : 1);
        gwr_network_free(net);
    }
}

int main(void) {
    RUN(where_opset);
    RUN(where_same_type_and_dim);
    RUN(where_broadcasts_to);
    RUN(computed_attribute_default);
    RUN(target_gwr_any_opset);
    RUN(identity_carrier_stays);
    RUN(rule_file_passes_cover_their_roots);
    RUN(tol_zero_is_exact);
    return check_report();
}
