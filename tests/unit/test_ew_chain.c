/* test_ew_chain.c - the fuse_elementwise_chain pass (src/passes/ew_chain.c)
 * and the gwr::ElementwiseChain op it makes (shape rule
 * src/functional/ew_chain.c, kernel src/exec/kernels/ew_chain.c).
 *
 * The reference is the unfused network run layer by layer by the ONNX
 * ops' own kernels (a raw session): the fused network must give the same
 * float32 bits (the op's contract: each link rounds as its layer does;
 * a NaN may differ in payload, see same_bits), on
 * seeded inputs that include NaN, +-inf, -0.0 and denormals, over shapes
 * below and above the kernel's 2048-element block, with scalar, same-shape,
 * per-channel, trailing and non-constant side operands on either side.
 * Also: where the pass must not fire, the ONNX round trip of the op, and
 * bad programs refused with a status. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"

/* side operand kinds */
enum { S_NONE, S_SCALAR, S_SAME, S_CHAN, S_TRAIL, S_INPUT };

typedef struct link {
    const char *op;
    int side, swap;
    double a, b; /* LeakyRelu alpha, HardSigmoid alpha/beta, Clip bounds (with has_ab) */
    int has_ab;
} link;

typedef struct shape {
    int rank;
    int64_t d[4];
} shape;

static const shape SHAPES[] = {{4, {2, 3, 5, 7}}, {4, {1, 4, 33, 65}}, {2, {3, 2049}}, {1, {1}}};

static uint32_t rng_state;
static uint32_t rnd(void) { return rng_state = rng_state * 1664525u + 1013904223u; }

/* Seeded values with the special ones mixed in. */
static float sample(void) {
    uint32_t r = rnd() >> 8;
    switch (r % 23) {
    case 0: return NAN;
    case 1: return INFINITY;
    case 2: return -INFINITY;
    case 3: return -0.0f;
    case 4: return 1e-40f * (r & 1 ? 1 : -1); /* denormal */
    case 5: return 0.0f;
    default: return ((float)(r % 20001) - 10000.0f) / 1000.0f;
    }
}

static void fill(float *p, int64_t n) {
    for (int64_t i = 0; i < n; i++) p[i] = sample();
}

static int64_t numel(int rank, const int64_t *d) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= d[i];
    return n;
}

static gwr_tensor *side_of(gwr_network *net, int kind, const shape *sh) {
    int64_t d[4];
    int r = sh->rank;
    switch (kind) {
    case S_SCALAR: r = 0; break;
    case S_SAME: memcpy(d, sh->d, sizeof d); break;
    case S_CHAN: /* [C, 1, 1] on rank 4, [C, 1] on rank 2, [1] on rank 1 */
        r = sh->rank > 1 ? sh->rank - 1 : 1;
        for (int i = 0; i < r; i++) d[i] = i == 0 && sh->rank > 1 ? sh->d[1] : 1;
        break;
    default: r = 1, d[0] = sh->d[sh->rank - 1]; break; /* S_TRAIL */
    }
    if (kind == S_INPUT) return gwr_network_input(net, 1);
    int64_t n = numel(r, d);
    float *v = malloc((size_t)n * sizeof *v);
    fill(v, n);
    gwr_tensor *t = gwr_constant(net, GWR_FLOAT32, r, d, v);
    free(v);
    return t;
}

static gwr_tensor *apply(gwr_network *net, const link *k, gwr_tensor *x, const shape *sh) {
    gwr_args *a = gwr_args_new();
    gwr_tensor *in[3] = {x, NULL, NULL}, *y = NULL;
    int nin = 1;
    if (!strcmp(k->op, "Clip") && k->has_ab) {
        in[1] = gwr_constant_f32(net, (float)k->a), in[2] = gwr_constant_f32(net, (float)k->b), nin = 3;
    } else if (k->has_ab) {
        gwr_args_set_float(a, "alpha", k->a);
        if (!strcmp(k->op, "HardSigmoid")) gwr_args_set_float(a, "beta", k->b);
    }
    if (k->side) {
        gwr_tensor *s = side_of(net, k->side, sh);
        in[k->swap ? 0 : 1] = s, in[k->swap ? 1 : 0] = x, nin = 2;
    }
    gwr_layer *l = gwr_op_call(net, "", k->op, nin, in, a, 1, &y);
    gwr_args_free(a);
    return l ? y : NULL;
}

/* An op before the chain (NULL: none): with one, the chain's input is an
 * intermediate value it reads last, so the kernel runs in place. */
static const char *pre_op;

/* x (and "s", the output's shape, for S_INPUT) -> the links -> output. */
static gwr_network *build(const link *ks, int n, const shape *sh, unsigned seed) {
    gwr_network *net = gwr_network_new("chain");
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, sh->rank, sh->d);
    gwr_network_add_input(net, "s", GWR_FLOAT32, sh->rank, sh->d);
    if (pre_op) gwr_op_call(net, "", pre_op, 1, &x, NULL, 1, &x);
    rng_state = seed;
    for (int i = 0; i < n && x; i++) x = apply(net, &ks[i], x, sh);
    if (!x || gwr_network_mark_output(net, x)) {
        gwr_network_free(net);
        return NULL;
    }
    return net;
}

static int count_op(gwr_network *net, const char *op) {
    int c = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (!gwr_layer_is_removed(l) && !strcmp(gwr_layer_op(l), op)) c++;
    }
    return c;
}

/* Runs net on seeded x and s; the output (the caller's) or NULL. */
static gwr_value *run(gwr_network *net, const shape *sh, unsigned seed) {
    gwr_value *in[2];
    const char *names[2] = {"x", "s"};
    rng_state = seed * 7919u + 1;
    for (int i = 0; i < 2; i++) {
        in[i] = gwr_value_new(GWR_FLOAT32, sh->rank, sh->d);
        fill(gwr_value_data(in[i]), numel(sh->rank, sh->d));
    }
    gwr_session *s = gwr_session_new_raw(net, NULL);
    gwr_value *out = NULL;
    if (!s || gwr_session_run(s, 2, names, in, 1, NULL, &out)) {
        fprintf(stderr, "run: %s\n", s ? gwr_session_errmsg(s) : gwr_last_errmsg());
        out = NULL;
    }
    gwr_session_free(s);
    gwr_value_release(in[0]), gwr_value_release(in[1]);
    return out;
}

static gwr_status optimize(gwr_network *net, unsigned target, const char *only) {
    gwr_optimize_options o = {.level = GWR_LEVEL_EXTENDED, .target = target, .only = only};
    return gwr_optimize(net, &o, NULL);
}

/* The same bits, -0.0 and infinities included; any NaN equals any NaN:
 * which of two NaN operands' payload (and sign) an x86 add or multiply
 * passes on is its first operand's, and a compiler may swap the operands
 * of a commutative op (IEEE 754 leaves the payload open too). */
static int same_bits(gwr_value *a, gwr_value *b) {
    if (!a || !b || gwr_value_numel(a) != gwr_value_numel(b)) return 0;
    const float *p = gwr_value_data(a), *q = gwr_value_data(b);
    for (int64_t i = 0; i < gwr_value_numel(a); i++)
        if (memcmp(&p[i], &q[i], sizeof *p) && !(isnan(p[i]) && isnan(q[i]))) return 0;
    return 1;
}

/* Builds the chain on every shape, fuses it (only the chain pass, or the
 * whole extended level with `all`), expects `chains` ElementwiseChain
 * layers and the unfused network's bits. */
static void check_chain(const link *ks, int n, int chains, int all) {
    for (size_t s = 0; s < sizeof SHAPES / sizeof *SHAPES; s++) {
        const shape *sh = &SHAPES[s];
        unsigned seed = (unsigned)(n * 131 + s);
        gwr_network *ref = build(ks, n, sh, seed), *fused = build(ks, n, sh, seed);
        CHECK(ref && fused);
        if (!ref || !fused) {
            gwr_network_free(ref), gwr_network_free(fused);
            continue;
        }
        CHECK_OK(optimize(fused, GWR_TARGET_GWR, all ? NULL : "fuse_elementwise_chain"));
        CHECK_EQ_INT(count_op(fused, "ElementwiseChain"), chains);
        gwr_value *a = run(ref, sh, seed), *b = run(fused, sh, seed);
        CHECK(a && b);
        if (!same_bits(a, b)) {
            fprintf(stderr, "  chain of %d links (first %s) on shape %zu differs\n", n, ks[0].op, s);
            CHECK(!"bit-identical to the unfused chain");
        }
        gwr_value_release(a), gwr_value_release(b);
        gwr_network_free(ref), gwr_network_free(fused);
    }
}

#define CHAIN(chains, ...)                                                      \
    do {                                                                        \
        static const link ks_[] = {__VA_ARGS__};                                \
        check_chain(ks_, (int)(sizeof ks_ / sizeof *ks_), chains, 0);            \
    } while (0)

TEST(fuses_unary_links) {
    CHAIN(1, {.op = "Relu"}, {.op = "Sigmoid"});
    CHAIN(1, {.op = "LeakyRelu", .a = 0.1, .has_ab = 1}, {.op = "Tanh"}, {.op = "Neg"});
    CHAIN(1, {.op = "Abs"}, {.op = "Sqrt"}, {.op = "Log"}, {.op = "Exp"});
    CHAIN(1, {.op = "Reciprocal"}, {.op = "Erf"}, {.op = "HardSigmoid", .a = 0.25, .b = 0.4, .has_ab = 1}, {.op = "Clip", .a = -0.3, .b = 0.7, .has_ab = 1},
          {.op = "LeakyRelu"});
    CHAIN(1, {.op = "Clip"}, {.op = "HardSigmoid"}, {.op = "Relu"}); /* default bounds and attributes */
    CHAIN(1, {.op = "Softplus"}, {.op = "Tanh"}, {.op = "Mul", .side = S_INPUT});    /* Mish's links */
}

TEST(fuses_binary_links_of_every_broadcast) {
    CHAIN(1, {.op = "Sub", .side = S_SCALAR}, {.op = "Div", .side = S_CHAN}); /* normalize */
    CHAIN(1, {.op = "Mul", .side = S_CHAN}, {.op = "Add", .side = S_CHAN}, {.op = "Relu"}); /* unfolded BatchNormalization */
    CHAIN(1, {.op = "Add", .side = S_SAME}, {.op = "Clip", .a = 0, .b = 6, .has_ab = 1}, {.op = "Mul", .side = S_TRAIL}, {.op = "Tanh"}, {.op = "Neg"}, {.op = "Abs"},
          {.op = "Max", .side = S_SCALAR}, {.op = "Min", .side = S_INPUT});
    CHAIN(1, {.op = "Div", .side = S_SCALAR, .swap = 1}, {.op = "Sub", .side = S_SAME, .swap = 1}, {.op = "Max", .side = S_TRAIL, .swap = 1}, {.op = "Min", .side = S_CHAN, .swap = 1}, {.op = "Add", .side = S_INPUT, .swap = 1},
          {.op = "Mul", .side = S_SCALAR, .swap = 1});
    CHAIN(1, {.op = "Sub", .side = S_INPUT}, {.op = "Mul", .side = S_SAME}, {.op = "Add", .side = S_SCALAR}); /* a mask */
}

/* The same chains over a Softmax's output, which the chain may overwrite:
 * every link then runs in place, the first one too. */
TEST(fuses_in_place) {
    pre_op = "Softmax";
    fuses_unary_links();
    fuses_binary_links_of_every_broadcast();
    pre_op = NULL;
}

/* Swish with beta: x * Sigmoid(x * beta), x the chain's input and the
 * last link's side operand. */
TEST(fuses_swish_with_beta) {
    const shape *sh = &SHAPES[1];
    for (int v = 0; v < 2; v++) {
        gwr_network *net[2];
        for (int i = 0; i < 2; i++) {
            gwr_network *g = net[i] = gwr_network_new("swish");
            gwr_tensor *x = gwr_network_add_input(g, "x", GWR_FLOAT32, sh->rank, sh->d), *t, *u, *y;
            gwr_network_add_input(g, "s", GWR_FLOAT32, sh->rank, sh->d);
            gwr_tensor *in[2] = {x, gwr_constant_f32(g, 1.702f)};
            gwr_op_call(g, "", "Mul", 2, in, NULL, 1, &t);
            gwr_op_call(g, "", "Sigmoid", 1, &t, NULL, 1, &u);
            gwr_tensor *in2[2] = {v ? u : x, v ? x : u};
            gwr_op_call(g, "", "Mul", 2, in2, NULL, 1, &y);
            gwr_network_mark_output(g, y);
        }
        CHECK_OK(optimize(net[1], GWR_TARGET_GWR, NULL));
        CHECK_EQ_INT(count_op(net[1], "ElementwiseChain"), 1);
        CHECK_EQ_INT(count_op(net[1], "Mul"), 0);
        gwr_value *a = run(net[0], sh, 5), *b = run(net[1], sh, 5);
        CHECK(same_bits(a, b));
        gwr_value_release(a), gwr_value_release(b);
        gwr_network_free(net[0]), gwr_network_free(net[1]);
    }
}

/* Clip before opset 11: its bounds are attributes. */
TEST(fuses_clip_with_attribute_bounds) {
    const shape *sh = &SHAPES[0];
    gwr_network *net[2];
    for (int i = 0; i < 2; i++) {
        gwr_network *g = net[i] = gwr_network_new("clip6");
        gwr_network_set_opset(g, "", 10);
        gwr_tensor *x = gwr_network_add_input(g, "x", GWR_FLOAT32, sh->rank, sh->d), *t, *y;
        gwr_network_add_input(g, "s", GWR_FLOAT32, sh->rank, sh->d);
        gwr_args *a = gwr_args_new();
        gwr_args_set_float(a, "min", -0.5);
        gwr_args_set_float(a, "max", 2.5);
        gwr_op_call(g, "", "Clip", 1, &x, a, 1, &t);
        gwr_args_free(a);
        gwr_op_call(g, "", "Tanh", 1, &t, NULL, 1, &y);
        gwr_network_mark_output(g, y);
    }
    CHECK_OK(optimize(net[1], GWR_TARGET_GWR, "fuse_elementwise_chain"));
    CHECK_EQ_INT(count_op(net[1], "ElementwiseChain"), 1);
    gwr_value *a = run(net[0], sh, 9), *b = run(net[1], sh, 9);
    CHECK(same_bits(a, b));
    const float *v = b ? gwr_value_data(b) : NULL;
    int in_range = v != NULL;
    for (int64_t i = 0; v && i < gwr_value_numel(b); i++)
        in_range = in_range && !(v[i] < tanhf(-0.5f) - 1e-6f || v[i] > tanhf(2.5f) + 1e-6f);
    CHECK(in_range); /* the bounds were read, not the defaults */
    gwr_value_release(a), gwr_value_release(b);
    gwr_network_free(net[0]), gwr_network_free(net[1]);
}

/* The analyzer counts a chain as its links: one FLOP per element each. */
TEST(cost_is_the_links) {
    static const link ks[] = {{.op = "Sub", .side = S_SCALAR}, {.op = "Div", .side = S_CHAN}, {.op = "Relu"}};
    const shape *sh = &SHAPES[0];
    gwr_network *ref = build(ks, 3, sh, 1), *fused = build(ks, 3, sh, 1);
    CHECK_OK(optimize(fused, GWR_TARGET_GWR, "fuse_elementwise_chain"));
    CHECK_EQ_INT(count_op(fused, "ElementwiseChain"), 1);
    gwr_analysis *a = gwr_analyze_network(ref, NULL), *b = gwr_analyze_network(fused, NULL);
    gwr_cost_totals ta, tb;
    CHECK(a && b);
    if (a && b && !gwr_analysis_totals(a, &ta) && !gwr_analysis_totals(b, &tb)) {
        CHECK_EQ_INT(tb.flops, 3 * 210);
        CHECK_EQ_INT(tb.flops, ta.flops);
        CHECK_EQ_INT(tb.known_layers, tb.layers);
    }
    gwr_analysis_free(a), gwr_analysis_free(b);
    gwr_network_free(ref), gwr_network_free(fused);
}

/* ---- where it must not fire ---- */

static gwr_network *relu_sigmoid(gwr_dtype dt, gwr_tensor **mid, gwr_tensor **y) {
    gwr_network *g = gwr_network_new("no");
    int64_t d[2] = {4, 9};
    gwr_tensor *x = gwr_network_add_input(g, "x", dt, 2, d);
    gwr_op_call(g, "", "Relu", 1, &x, NULL, 1, mid);
    gwr_op_call(g, "", "Sigmoid", 1, mid, NULL, 1, y);
    gwr_network_mark_output(g, *y);
    return g;
}

static int chains_after(gwr_network *g, unsigned target, const char *only) {
    CHECK_OK(optimize(g, target, only));
    int n = count_op(g, "ElementwiseChain");
    gwr_network_free(g);
    return n;
}

TEST(does_not_fire_where_it_must_not) {
    gwr_tensor *m, *y, *z;
    /* the plain case fires (so the cases below fail for their reason) */
    CHECK_EQ_INT(chains_after(relu_sigmoid(GWR_FLOAT32, &m, &y), GWR_TARGET_GWR, NULL), 1);
    /* an intermediate that is a network output */
    gwr_network *g = relu_sigmoid(GWR_FLOAT32, &m, &y);
    gwr_network_mark_output(g, m);
    CHECK_EQ_INT(chains_after(g, GWR_TARGET_GWR, NULL), 0);
    /* an intermediate with a second reader */
    g = relu_sigmoid(GWR_FLOAT32, &m, &y);
    gwr_op_call(g, "", "Tanh", 1, &m, NULL, 1, &z);
    gwr_network_mark_output(g, z);
    CHECK_EQ_INT(chains_after(g, GWR_TARGET_GWR, NULL), 0);
    /* not float32 */
    CHECK_EQ_INT(chains_after(relu_sigmoid(GWR_FLOAT64, &m, &y), GWR_TARGET_GWR, NULL), 0);
    /* other targets: gwr's own op */
    CHECK_EQ_INT(chains_after(relu_sigmoid(GWR_FLOAT32, &m, &y), GWR_TARGET_ORT, NULL), 0);
    CHECK_EQ_INT(chains_after(relu_sigmoid(GWR_FLOAT32, &m, &y), GWR_TARGET_ONNX, NULL), 0);
    /* a chain feeding Softmax (attention's scores) */
    g = relu_sigmoid(GWR_FLOAT32, &m, &y);
    gwr_op_call(g, "", "Softmax", 1, &y, NULL, 1, &z);
    gwr_network_mark_output(g, z);
    CHECK_EQ_INT(chains_after(g, GWR_TARGET_GWR, NULL), 0);
    /* a side operand that broadcasts over two runs of axes: [2,1,5,1] on [2,3,5,7] */
    g = gwr_network_new("bc");
    int64_t d[4] = {2, 3, 5, 7}, sd[4] = {2, 1, 5, 1};
    float sv[10] = {0};
    gwr_tensor *x = gwr_network_add_input(g, "x", GWR_FLOAT32, 4, d);
    gwr_op_call(g, "", "Relu", 1, &x, NULL, 1, &m);
    gwr_tensor *in[2] = {m, gwr_constant(g, GWR_FLOAT32, 4, sd, sv)};
    gwr_op_call(g, "", "Add", 2, in, NULL, 1, &y);
    gwr_network_mark_output(g, y);
    CHECK_EQ_INT(chains_after(g, GWR_TARGET_GWR, NULL), 0);
    /* the chain broadcast into its operand: [7] + [2,3,5,7] (the output is not the chain's shape) */
    g = gwr_network_new("bc2");
    int64_t d1[1] = {7};
    x = gwr_network_add_input(g, "x", GWR_FLOAT32, 1, d1);
    gwr_tensor *big = gwr_network_add_input(g, "b", GWR_FLOAT32, 4, d);
    gwr_op_call(g, "", "Relu", 1, &x, NULL, 1, &m);
    gwr_tensor *in2[2] = {m, big};
    gwr_op_call(g, "", "Add", 2, in2, NULL, 1, &y);
    gwr_network_mark_output(g, y);
    CHECK_EQ_INT(chains_after(g, GWR_TARGET_GWR, NULL), 0);
    /* x * Sigmoid(x): fuse_silu's QuickGelu wins */
    g = gwr_network_new("silu");
    x = gwr_network_add_input(g, "x", GWR_FLOAT32, 4, d);
    gwr_op_call(g, "", "Sigmoid", 1, &x, NULL, 1, &m);
    gwr_tensor *in3[2] = {x, m};
    gwr_op_call(g, "", "Mul", 2, in3, NULL, 1, &y);
    gwr_network_mark_output(g, y);
    CHECK_OK(optimize(g, GWR_TARGET_GWR, NULL));
    CHECK_EQ_INT(count_op(g, "QuickGelu"), 1);
    CHECK_EQ_INT(count_op(g, "ElementwiseChain"), 0);
    gwr_network_free(g);
}

/* ---- the op by itself ---- */

static gwr_layer *hand_made(gwr_network *g, int nin, const int64_t *ops, int nops, const double *alphas, int nal) {
    int64_t d[2] = {3, 5};
    gwr_tensor *in[3];
    for (int i = 0; i < nin; i++) in[i] = i ? gwr_constant_f32(g, 2.0f) : gwr_network_add_input(g, "x", GWR_FLOAT32, 2, d);
    gwr_args *a = gwr_args_new();
    gwr_args_set_ints(a, "ops", nops, ops);
    if (alphas) gwr_args_set_floats(a, "alphas", nal, alphas);
    gwr_layer *l = gwr_plugin_create(g, "gwr", "ElementwiseChain", NULL, nin, in, a);
    gwr_args_free(a);
    return l;
}

/* A hand-made layer's message, "" when it was made. */
static void refused(int nin, const int64_t *ops, int nops, const double *alphas, int nal, const char *want) {
    gwr_network *g = gwr_network_new("bad");
    gwr_layer *l = hand_made(g, nin, ops, nops, alphas, nal);
    if (want) {
        CHECK(!l);
        CHECK_CONTAINS(gwr_network_errmsg(g), want);
    } else {
        CHECK(l != NULL);
    }
    gwr_network_free(g);
}

TEST(bad_programs_are_refused) {
    static const int64_t unknown[] = {1, 99}, two_bin[] = {20, 22}, ok[] = {22, 1};
    static const double al[] = {0.5};
    refused(1, unknown, 2, NULL, 0, "unknown op code 99");
    refused(2, two_bin, 2, NULL, 0, "need 3 inputs"); /* two binary links, one side operand */
    refused(3, ok, 2, NULL, 0, "need 2 inputs");
    refused(1, ok, 0, NULL, 0, "ops must be INTS");
    refused(2, ok, 2, al, 1, "one per link");
    refused(2, ok, 2, NULL, 0, NULL);
}

/* x * 2 -> Relu saved to ONNX and loaded back: the op, its fields and its
 * numbers survive. */
TEST(onnx_round_trip) {
    static const int64_t ops[] = {22, 1}; /* Mul, Relu */
    gwr_network *g = gwr_network_new("rt");
    gwr_layer *l = hand_made(g, 2, ops, 2, NULL, 0);
    CHECK(l != NULL);
    if (!l) {
        gwr_network_free(g);
        return;
    }
    gwr_network_mark_output(g, gwr_layer_output(l, 0));
    void *data = NULL;
    size_t size = 0;
    CHECK_OK(gwr_onnx_save_memory(g, &data, &size));
    gwr_network *back = data ? gwr_onnx_load_memory(data, size, NULL, "rt", NULL) : NULL;
    free(data);
    CHECK(back != NULL);
    if (back) {
        CHECK_EQ_INT(count_op(back, "ElementwiseChain"), 1);
        shape sh = {2, {3, 5}};
        gwr_network_add_input(back, "s", GWR_FLOAT32, 2, sh.d); /* run() feeds it */
        gwr_value *v = run(back, &sh, 3);
        rng_state = 3 * 7919u + 1;
        float x[15];
        fill(x, 15);
        int good = v != NULL;
        for (int i = 0; v && i < 15; i++) {
            float want = x[i] * 2.0f;
            want = want < 0 ? 0.0f : want;
            good = good && !memcmp(&want, (const float *)gwr_value_data(v) + i, 4);
        }
        CHECK(good);
        gwr_value_release(v);
        gwr_network_free(back);
    }
    gwr_network_free(g);
}

int main(void) {
    RUN(fuses_unary_links);
    RUN(fuses_binary_links_of_every_broadcast);
    RUN(fuses_in_place);
    RUN(fuses_swish_with_beta);
    RUN(fuses_clip_with_attribute_bounds);
    RUN(cost_is_the_links);
    RUN(does_not_fire_where_it_must_not);
    RUN(bad_programs_are_refused);
    RUN(onnx_round_trip);
    return check_report();
}
