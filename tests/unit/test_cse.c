/* test_cse.c - eliminate_common_subexpressions (src/passes/cse.c): the
 * twins it must merge (same op, inputs and attributes; commutative
 * operands swapped; shared Conv weights; equal constants and then their
 * readers; whole chains; a twin whose output is a network output) and
 * those it must leave (any attribute differing, a float by its last bit,
 * Sub's operands swapped, other inputs, random ops, Dropout, constants
 * differing in a byte, a dtype or a shape, If layers, two network outputs).
 * Every case goes through pass_case.h (debug rewrite, fired count, verify,
 * outputs bit for bit on seeded inputs: atol 0, rtol 0); the structural
 * cases also check which layer stayed, who reads it, and the interface. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "pass_case.h"

#define CSE "eliminate_common_subexpressions"

static const gwr_dim d23[2] = {2, 3}, d33[2] = {3, 3};

static gwr_tensor *input(gwr_network *net, const char *name, int rank, const gwr_dim *dims) {
    return gwr_network_add_input(net, name, GWR_FLOAT32, rank, dims);
}

static gwr_network *finish(gwr_network *net, gwr_tensor *y) {
    if (!y || gwr_network_mark_output(net, y)) {
        gwr_network_free(net);
        return NULL;
    }
    return net;
}

/* Names t's producer (so that the checks can find it) and returns t. */
static gwr_tensor *named(gwr_tensor *t, const char *name) {
    if (t) gwr_layer_set_name(gwr_tensor_parent(t), name);
    return t;
}

/* A one-output layer of op with the given inputs. */
static gwr_tensor *op(gwr_network *net, const char *name, int n, gwr_tensor *const *in) {
    gwr_layer *l = gwr_network_add_layer(net, name, "", NULL, n, in, 1, NULL);
    return l ? gwr_layer_output(l, 0) : NULL;
}

static gwr_tensor *op1(gwr_network *net, const char *name, gwr_tensor *x) { return op(net, name, 1, &x); }

static gwr_tensor *infer(gwr_tensor *t) {
    return t && !gwr_layer_infer(gwr_tensor_parent(t)) ? t : NULL;
}

static int64_t count_op(gwr_network *net, const char *name) {
    int64_t n = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        n += !gwr_layer_is_removed(l) && !strcmp(gwr_layer_op(l), name);
    }
    return n;
}

/* Runs the pass alone through gwr_optimize (debug); its rewrites or -1. */
static int64_t run_cse(gwr_network *net) {
    gwr_optimize_report *r = NULL;
    gwr_optimize_options o = {.only = CSE, .debug = 1};
    gwr_status s = gwr_optimize(net, &o, &r);
    int64_t n = -1;
    for (int i = 0; !s && i < gwr_optimize_report_count(r); i++)
        if (!strcmp(gwr_optimize_report_pass(r, i)->label, CSE)) n = gwr_optimize_report_pass(r, i)->rewrites;
    if (s) fprintf(stderr, "gwr_optimize: %s\n", gwr_network_errmsg(net));
    gwr_optimize_report_free(r);
    if (!s && gwr_network_verify(net)) return -1;
    return n;
}

/* ---- firing builders -------------------------------------------------------- */

/* y = Relu(x) + Relu(x) */
static gwr_network *relu_twins(void) {
    gwr_network *net = gwr_network_new("relu");
    gwr_tensor *x = input(net, "x", 2, d23);
    gwr_tensor *a = named(gwr_relu(net, x), "r1"), *b = named(gwr_relu(net, x), "r2");
    return finish(net, gwr_add(net, a, b));
}

/* y = (a + b) * (b + a) */
static gwr_network *add_swapped(void) {
    gwr_network *net = gwr_network_new("add");
    gwr_tensor *a = input(net, "a", 2, d23), *b = input(net, "b", 2, d23);
    return finish(net, gwr_mul(net, gwr_add(net, a, b), gwr_add(net, b, a)));
}

/* y = Transpose(x, [1,0]) - Transpose(x, [1,0]) */
static gwr_network *transpose_twins(void) {
    static const int64_t p[2] = {1, 0};
    gwr_network *net = gwr_network_new("tr");
    gwr_tensor *x = input(net, "x", 2, d23);
    return finish(net, gwr_sub(net, gwr_transpose(net, x, 2, p), gwr_transpose(net, x, 2, p)));
}

/* y = Conv(x, w) + Conv(x, w), one weight constant */
static gwr_network *conv_twins(void) {
    static const gwr_dim xd[4] = {1, 2, 4, 4};
    static const int64_t wd[4] = {3, 2, 3, 3};
    float w[54];
    for (int i = 0; i < 54; i++) w[i] = (float)((i * 7) % 11 - 5) * 0.25f;
    gwr_network *net = gwr_network_new("conv");
    gwr_tensor *x = input(net, "x", 4, xd), *k = gwr_constant(net, GWR_FLOAT32, 4, wd, w);
    return finish(net, gwr_add(net, gwr_conv(net, x, k, NULL, NULL), gwr_conv(net, x, k, NULL, NULL)));
}

/* y = x * k1 - x * k2, k1 and k2 equal constants: two merges */
static gwr_network *const_twins(void) {
    static const float v[3] = {1.5f, -2, 0.25f};
    static const int64_t kd = 3;
    gwr_network *net = gwr_network_new("consts");
    gwr_tensor *x = input(net, "x", 2, d23);
    gwr_tensor *k1 = named(gwr_constant(net, GWR_FLOAT32, 1, &kd, v), "k1");
    gwr_tensor *k2 = named(gwr_constant(net, GWR_FLOAT32, 1, &kd, v), "k2");
    gwr_tensor *m1 = named(gwr_mul(net, x, k1), "m1"), *m2 = named(gwr_mul(net, x, k2), "m2");
    return finish(net, gwr_sub(net, m1, m2));
}

/* Concat(a, b, c1) and Concat(a2, b, c2), a == a2 and c1 == c2 constants,
 * b read by more than 64 layers (so not searched through), a and a2 merging
 * through Mul(x, a) and Mul(x, a2) only after c1 and c2 were offered: the
 * Concat whose input moved finds c2's twin next to itself. Four merges (a,
 * the Mul, c, the Concat); Silero VAD's bodies have this form. */
static gwr_network *late_const_twins(void) {
    static const float va[3] = {1, 2, 3}, vc[3] = {-1, 0.5f, 4};
    static const int64_t k13d[2] = {1, 3};
    gwr_network *net = gwr_network_new("late");
    gwr_tensor *x = input(net, "x", 2, d23), *b = input(net, "b", 2, d23);
    gwr_tensor *c1 = gwr_constant(net, GWR_FLOAT32, 2, k13d, vc), *c2 = gwr_constant(net, GWR_FLOAT32, 2, k13d, vc);
    gwr_tensor *a = gwr_constant(net, GWR_FLOAT32, 2, k13d, va), *a2 = gwr_constant(net, GWR_FLOAT32, 2, k13d, va);
    gwr_tensor *sum = NULL;
    for (int i = 0; i < 70; i++) { /* 70 other readers of b, all different */
        gwr_tensor *t = gwr_add(net, b, gwr_constant_f32(net, (float)i));
        sum = sum ? gwr_add(net, sum, t) : t;
    }
    gwr_tensor *p1[3] = {a, b, c1}, *p2[3] = {a2, b, c2};
    gwr_tensor *cat1 = gwr_concat(net, 3, p1, 0), *cat2 = gwr_concat(net, 3, p2, 0);
    gwr_tensor *m = gwr_sub(net, gwr_mul(net, x, a), gwr_mul(net, x, a2));
    if (!sum || !m || gwr_network_mark_output(net, sum) || gwr_network_mark_output(net, m)) {
        gwr_network_free(net);
        return NULL;
    }
    return finish(net, gwr_sub(net, cat1, cat2));
}

/* y = Neg(Exp(Relu(x))) + Neg(Exp(Relu(x))): three merges */
static gwr_network *chain_twins(void) {
    gwr_network *net = gwr_network_new("chain");
    gwr_tensor *x = input(net, "x", 2, d23);
    gwr_tensor *a = gwr_neg(net, gwr_exp(net, gwr_relu(net, x))), *b = gwr_neg(net, gwr_exp(net, gwr_relu(net, x)));
    return finish(net, gwr_add(net, a, b));
}

/* outputs y1 = Exp(Relu(x)), r = Relu(x) (the later twin is an output) */
static gwr_network *output_twin(void) {
    gwr_network *net = gwr_network_new("out");
    gwr_tensor *x = input(net, "x", 2, d23);
    gwr_tensor *e = gwr_exp(net, named(gwr_relu(net, x), "r1"));
    gwr_tensor *r = named(gwr_relu(net, x), "r2");
    gwr_tensor_set_name(e, "y1");
    gwr_tensor_set_name(r, "r");
    if (gwr_network_mark_output(net, e)) return gwr_network_free(net), NULL;
    return finish(net, r);
}

/* ---- idle builders ---------------------------------------------------------- */

/* y = Transpose(x, [1,0]) + Transpose(x, [0,1]) */
static gwr_network *perm_differs(void) {
    static const int64_t p[2] = {1, 0}, q[2] = {0, 1};
    gwr_network *net = gwr_network_new("perm");
    gwr_tensor *x = input(net, "x", 2, d33);
    return finish(net, gwr_add(net, gwr_transpose(net, x, 2, p), gwr_transpose(net, x, 2, q)));
}

/* y = Softmax(x, 0) + Softmax(x, 1) */
static gwr_network *axis_differs(void) {
    gwr_network *net = gwr_network_new("axis");
    gwr_tensor *x = input(net, "x", 2, d33);
    return finish(net, gwr_add(net, gwr_softmax(net, x, 0), gwr_softmax(net, x, 1)));
}

static gwr_network *leaky_pair(float a, float b) {
    gwr_network *net = gwr_network_new("leaky");
    gwr_tensor *x = input(net, "x", 2, d23);
    return finish(net, gwr_add(net, gwr_leaky_relu(net, x, a), gwr_leaky_relu(net, x, b)));
}
static gwr_network *alpha_differs(void) { return leaky_pair(0.1f, 0.2f); }
static gwr_network *alpha_last_bit(void) { return leaky_pair(0.1f, nextafterf(0.1f, 1.0f)); }
static gwr_network *alpha_same(void) { return leaky_pair(0.1f, 0.1f); }

/* y = (a - b) * (b - a) */
static gwr_network *sub_swapped(void) {
    gwr_network *net = gwr_network_new("sub");
    gwr_tensor *a = input(net, "a", 2, d23), *b = input(net, "b", 2, d23);
    return finish(net, gwr_mul(net, gwr_sub(net, a, b), gwr_sub(net, b, a)));
}

/* y = Relu(a) + Relu(b) */
static gwr_network *inputs_differ(void) {
    gwr_network *net = gwr_network_new("inputs");
    gwr_tensor *a = input(net, "a", 2, d23), *b = input(net, "b", 2, d23);
    return finish(net, gwr_add(net, gwr_relu(net, a), gwr_relu(net, b)));
}

/* y = Dropout(x) + Dropout(x) (no training_mode: inference) */
static gwr_network *dropouts(void) {
    gwr_network *net = gwr_network_new("dropout");
    gwr_tensor *x = input(net, "x", 2, d23);
    return finish(net, gwr_add(net, infer(op1(net, "Dropout", x)), infer(op1(net, "Dropout", x))));
}

/* y = Pow(x, k1) + Pow(x, k2): constants of (dtype, dims) and bytes given */
static gwr_network *pow_pair(gwr_dtype t1, int r1, const int64_t *d1, const void *v1, gwr_dtype t2, int r2,
                             const int64_t *d2, const void *v2) {
    gwr_network *net = gwr_network_new("pow");
    gwr_tensor *x = input(net, "x", 2, d23);
    gwr_tensor *k1 = gwr_constant(net, t1, r1, d1, v1), *k2 = gwr_constant(net, t2, r2, d2, v2);
    return finish(net, gwr_add(net, gwr_pow(net, x, k1), gwr_pow(net, x, k2)));
}
static const int64_t k3[1] = {3}, k13[2] = {1, 3};
static const float kv[3] = {1, 2, 1};
/* the same bytes (zeros) as float32 and int32 */
static gwr_network *const_dtype_differs(void) {
    static const float fz[3] = {0, 0, 0};
    static const int32_t iz[3] = {0, 0, 0};
    return pow_pair(GWR_FLOAT32, 1, k3, fz, GWR_INT32, 1, k3, iz);
}
static gwr_network *const_shape_differs(void) { return pow_pair(GWR_FLOAT32, 1, k3, kv, GWR_FLOAT32, 2, k13, kv); }
static gwr_network *const_byte_differs(void) {
    float v2[3];
    memcpy(v2, kv, sizeof v2);
    ((unsigned char *)v2)[8] ^= 1; /* the lowest byte of entry 2 (little-endian) */
    return pow_pair(GWR_FLOAT32, 1, k3, kv, GWR_FLOAT32, 1, k3, v2);
}
static gwr_network *const_same(void) { return pow_pair(GWR_FLOAT32, 1, k3, kv, GWR_FLOAT32, 1, k3, kv); }

/* If(cond) {Relu(x)} else {Neg(x)}, named name */
static gwr_tensor *if_layer(gwr_network *net, gwr_tensor *cond, gwr_tensor *x) {
    gwr_layer *iff = gwr_network_add_layer(net, "If", "", NULL, 1, &cond, 1, NULL);
    gwr_network *th = gwr_network_new_subgraph(net, "then"), *el = gwr_network_new_subgraph(net, "else");
    gwr_network_mark_output(th, gwr_relu(th, x));
    gwr_network_mark_output(el, gwr_neg(el, x));
    if (!iff || gwr_layer_set_graph(iff, "then_branch", th) || gwr_layer_set_graph(iff, "else_branch", el)) {
        gwr_network_free(th);
        gwr_network_free(el);
        return NULL;
    }
    gwr_tensor_set_type(gwr_layer_output(iff, 0), GWR_FLOAT32, 2, d23);
    return gwr_layer_output(iff, 0);
}

/* y = If(c){Relu(x)}{Neg(x)} + the same If */
static gwr_network *if_twins(void) {
    gwr_network *net = gwr_network_new("if");
    gwr_tensor *x = input(net, "x", 2, d23), *c = gwr_network_add_input(net, "c", GWR_BOOL, 0, NULL);
    return finish(net, gwr_add(net, if_layer(net, c, x), if_layer(net, c, x)));
}

/* outputs r1 = Relu(x), r2 = Relu(x): merging would lose a name */
static gwr_network *two_outputs(void) {
    gwr_network *net = gwr_network_new("outs");
    gwr_tensor *x = input(net, "x", 2, d23);
    if (gwr_network_mark_output(net, gwr_relu(net, x))) return gwr_network_free(net), NULL;
    return finish(net, gwr_relu(net, x));
}

/* y = RandomNormalLike(x; seed 1) + the same */
static gwr_network *random_twins(void) {
    gwr_network *net = gwr_network_new("rand");
    gwr_tensor *x = input(net, "x", 2, d23);
    gwr_tensor *a = op1(net, "RandomNormalLike", x), *b = op1(net, "RandomNormalLike", x);
    gwr_layer_set_float(gwr_tensor_parent(a), "seed", 1);
    gwr_layer_set_float(gwr_tensor_parent(b), "seed", 1);
    return finish(net, gwr_add(net, infer(a), infer(b)));
}

/* y = RandomNormal(shape [2,3]; seed 1) + the same (no inputs) */
static gwr_network *random_input_less(void) {
    static const int64_t shape[2] = {2, 3};
    gwr_network *net = gwr_network_new("rand0");
    gwr_tensor *t[2];
    for (int i = 0; i < 2; i++) {
        t[i] = op(net, "RandomNormal", 0, NULL);
        gwr_layer_set_ints(gwr_tensor_parent(t[i]), "shape", shape, 2);
        gwr_layer_set_float(gwr_tensor_parent(t[i]), "seed", 1);
        t[i] = infer(t[i]);
    }
    return finish(net, gwr_add(net, t[0], t[1]));
}

/* ---- tests ------------------------------------------------------------------ */

TEST(fires_bit_for_bit) {
    pass_case_check(relu_twins, CSE, 1, 0);
    pass_case_check(add_swapped, CSE, 1, 0);
    pass_case_check(transpose_twins, CSE, 1, 0);
    pass_case_check(conv_twins, CSE, 1, 0);
    pass_case_check(const_twins, CSE, 2, 0);
    pass_case_check(chain_twins, CSE, 3, 0);
    pass_case_check(late_const_twins, CSE, 4, 0);
    pass_case_check(output_twin, CSE, 1, 0);
    pass_case_check(alpha_same, CSE, 1, 0);
    pass_case_check(const_same, CSE, 2, 0);
}

TEST(idle_bit_for_bit) {
    pass_case_check(perm_differs, CSE, 0, 0);
    pass_case_check(axis_differs, CSE, 0, 0);
    pass_case_check(alpha_differs, CSE, 0, 0);
    pass_case_check(alpha_last_bit, CSE, 0, 0);
    pass_case_check(sub_swapped, CSE, 0, 0);
    pass_case_check(inputs_differ, CSE, 0, 0);
    pass_case_check(dropouts, CSE, 0, 0);
    pass_case_check(const_dtype_differs, CSE, 0, 0);
    pass_case_check(const_shape_differs, CSE, 0, 0);
    pass_case_check(const_byte_differs, CSE, 0, 0);
    pass_case_check(if_twins, CSE, 0, 0);
    pass_case_check(two_outputs, CSE, 0, 0);
}

/* Random ops are left alone (the executor may not run them: counted only). */
TEST(random_ops_stay) {
    gwr_network *nets[2] = {random_twins(), random_input_less()};
    for (int i = 0; i < 2; i++) {
        if (!CHECK(nets[i])) continue;
        int64_t before = gwr_network_num_live_layers(nets[i]);
        CHECK_EQ_INT(run_cse(nets[i]), 0);
        CHECK_EQ_INT(gwr_network_num_live_layers(nets[i]), before);
        gwr_network_free(nets[i]);
    }
}

/* The earlier Relu stays and the Add reads it twice. */
TEST(keeps_the_earlier) {
    gwr_network *net = relu_twins();
    if (!CHECK(net)) return;
    CHECK_EQ_INT(run_cse(net), 1);
    gwr_layer *r1 = gwr_network_find_layer(net, "r1");
    CHECK(r1 && !gwr_layer_is_removed(r1));
    CHECK(!gwr_network_find_layer(net, "r2"));
    CHECK_EQ_INT(count_op(net, "Relu"), 1);
    if (r1) CHECK_EQ_INT(gwr_tensor_num_live_users(gwr_layer_output(r1, 0)), 2);
    CHECK_EQ_INT(run_cse(net), 0); /* idempotent */
    gwr_network_free(net);
}

/* The constants merge, then their Muls. */
TEST(constants_then_readers) {
    gwr_network *net = const_twins();
    if (!CHECK(net)) return;
    CHECK_EQ_INT(run_cse(net), 2);
    CHECK(gwr_network_find_layer(net, "k1") && !gwr_network_find_layer(net, "k2"));
    CHECK(gwr_network_find_layer(net, "m1") && !gwr_network_find_layer(net, "m2"));
    CHECK_EQ_INT(count_op(net, "Constant"), 1);
    CHECK_EQ_INT(count_op(net, "Mul"), 1);
    gwr_network_free(net);
}

TEST(chain_collapses) {
    gwr_network *net = chain_twins();
    if (!CHECK(net)) return;
    CHECK_EQ_INT(run_cse(net), 3);
    CHECK_EQ_INT(count_op(net, "Relu"), 1);
    CHECK_EQ_INT(count_op(net, "Exp"), 1);
    CHECK_EQ_INT(count_op(net, "Neg"), 1);
    gwr_network_free(net);
}

/* The later twin's output "r" is a network output: the kept Relu's output
 * takes the name; the interface (names, order) is unchanged. */
TEST(output_names_survive) {
    gwr_network *net = output_twin();
    if (!CHECK(net)) return;
    CHECK_EQ_INT(run_cse(net), 1);
    CHECK_OK(gwr_network_verify(net));
    CHECK_EQ_INT(gwr_network_num_outputs(net), 2);
    CHECK_STR(gwr_tensor_name(gwr_network_output(net, 0)), "y1");
    CHECK_STR(gwr_tensor_name(gwr_network_output(net, 1)), "r");
    CHECK_EQ_INT(count_op(net, "Relu"), 1);
    CHECK_EQ_INT(count_op(net, "Identity"), 0);
    gwr_layer *r1 = gwr_network_find_layer(net, "r1");
    if (CHECK(r1)) CHECK(gwr_layer_output(r1, 0) == gwr_network_output(net, 1));
    gwr_network_free(net);
    /* both twins outputs: refused, nothing inserted */
    net = two_outputs();
    if (!CHECK(net)) return;
    CHECK_EQ_INT(run_cse(net), 0);
    CHECK_EQ_INT(count_op(net, "Relu"), 2);
    gwr_network_free(net);
}

int main(void) {
    RUN(fires_bit_for_bit);
    RUN(idle_bit_for_bit);
    RUN(random_ops_stay);
    RUN(keeps_the_earlier);
    RUN(constants_then_readers);
    RUN(chain_collapses);
    RUN(output_names_survive);
    return check_report();
}
