/* test_activation.c - the activation fusions of the pass table (fuse_gelu,
 * fuse_clip_chains) through gwr_optimize --only: each form where it must
 * fire (every operand order and placement the pass claims), where it must
 * not (a second reader, an intermediate that is a network output, a
 * constant off beyond tolerance, two different tensors for x, an opset too
 * old for the target), and the outputs before (a gwr_network_clone) and
 * after on seeded random inputs wide enough to matter, within the pass's
 * row tolerance. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "pass_test.h"

/* ---- builders ------------------------------------------------------------------ */

static gwr_tensor *bin(gwr_network *net, const char *op, gwr_tensor *a, gwr_tensor *b, int swap) {
    gwr_tensor *in[2] = {swap ? b : a, swap ? a : b}, *out = NULL;
    return gwr_op_call(net, "", op, 2, in, NULL, 1, &out) ? out : NULL;
}
static gwr_tensor *un(gwr_network *net, const char *op, gwr_tensor *a) {
    gwr_tensor *out = NULL;
    return gwr_op_call(net, "", op, 1, &a, NULL, 1, &out) ? out : NULL;
}
static gwr_tensor *k32(gwr_network *net, double v) { return gwr_constant_f32(net, (float)v); }

/* ---- fuse_gelu ------------------------------------------------------------------ */

enum { G_LAST, G_FIRST, G_MID };
enum { G_SECOND_READER = 1, G_NET_OUTPUT = 2, G_OTHER_X = 4 };

typedef struct gelu_spec {
    int tanh, mul_sqrt, cube, half, swap; /* the form: erf/tanh, Mul by 1/sqrt2, x*x*x (2: x*(x*(c*x))), where the 0.5 goes */
    double kh, ksq, kc, kt;               /* the constants; 0: the exact value */
    int64_t opset;                        /* 0: none imported */
    unsigned flags;
} gelu_spec;

/* A GELU written out over x [2, 8] as the spec says. */
static gwr_network *gelu_net(const gelu_spec *s) {
    gwr_network *net = gwr_network_new("gelu");
    if (!net || (s->opset && gwr_network_set_opset(net, "", s->opset))) {
        gwr_network_free(net);
        return NULL;
    }
    gwr_dim d[2] = {2, 8};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, d), *x2 = x;
    if (s->flags & G_OTHER_X) x2 = gwr_network_add_input(net, "y", GWR_FLOAT32, 2, d);
    int w = s->swap;
    double kh = s->kh ? s->kh : 0.5;
    gwr_tensor *one = NULL, *inner = NULL;
    if (!s->tanh) {
        inner = s->mul_sqrt ? bin(net, "Mul", x, k32(net, s->ksq ? s->ksq : 0.70710678), w)
                            : bin(net, "Div", x, k32(net, s->ksq ? s->ksq : 1.4142135), 0);
        one = bin(net, "Add", un(net, "Erf", inner), k32(net, 1), w);
    } else {
        gwr_tensor *kc = k32(net, s->kc ? s->kc : 0.044715);
        if (s->cube == 2) { /* jax2tf's x * (x * (c x)) */
            inner = bin(net, "Add", x, bin(net, "Mul", x, bin(net, "Mul", x, bin(net, "Mul", kc, x, w), w), !w), w);
        } else {
            gwr_tensor *cube = s->cube ? bin(net, "Mul", bin(net, "Mul", x, x, 0), x, w) : bin(net, "Pow", x, k32(net, 3), 0);
            inner = bin(net, "Add", x, bin(net, "Mul", cube, kc, w), w);
        }
        gwr_tensor *u = bin(net, "Mul", inner, k32(net, s->kt ? s->kt : 0.7978845608), w);
        one = bin(net, "Add", un(net, "Tanh", u), k32(net, 1), w);
    }
    gwr_tensor *y;
    if (s->half == G_LAST) y = bin(net, "Mul", bin(net, "Mul", x2, one, w), k32(net, kh), w);
    else if (s->half == G_FIRST) y = bin(net, "Mul", bin(net, "Mul", x2, k32(net, kh), w), one, w);
    else y = bin(net, "Mul", x2, bin(net, "Mul", one, k32(net, kh), w), w);
    if (!y || gwr_network_mark_output(net, y)) y = NULL;
    if (y && (s->flags & G_SECOND_READER)) y = gwr_network_mark_output(net, un(net, "Relu", inner)) ? NULL : y;
    if (y && (s->flags & G_NET_OUTPUT)) y = gwr_network_mark_output(net, one) ? NULL : y;
    if (!y) {
        gwr_network_free(net);
        return NULL;
    }
    return net;
}

TEST(gelu_fires_on_every_form) {
    double worst = 0;
    int n = 0;
    for (int tanh = 0; tanh <= 1; tanh++)
        for (int variant = 0; variant <= 1 + tanh; variant++)
            for (int half = G_LAST; half <= G_MID; half++)
                for (int swap = 0; swap <= 1; swap++)
                    for (int64_t opset = 0; opset <= 20; opset += 20) {
                        gelu_spec s = {.tanh = tanh, .mul_sqrt = variant, .cube = variant, .half = half, .swap = swap,
                                       .opset = opset};
                        gwr_network *net = gelu_net(&s);
                        gwr_network *keep = gwr_network_clone(net);
                        worst = fmax(worst, expect(net, "fuse_gelu", GWR_TARGET_ONNX, 1, 6));
                        CHECK_EQ_INT(run_pass(keep, "fuse_gelu", GWR_TARGET_ONNX), 1);
                        CHECK_EQ_INT(count_op(keep, "Gelu"), 1);
                        CHECK_EQ_INT(count_op(keep, "Mul") + count_op(keep, "Erf") + count_op(keep, "Tanh"), 0);
                        for (int64_t i = 0; i < gwr_network_num_layers(keep); i++) {
                            gwr_layer *l = gwr_network_layer(keep, i);
                            const char *ap = NULL;
                            if (gwr_layer_is_removed(l) || strcmp(gwr_layer_op(l), "Gelu")) continue;
                            int has = !gwr_layer_get_string(l, "approximate", &ap, NULL);
                            CHECK(tanh ? has && !strcmp(ap, "tanh") : !has || !strcmp(ap, "none"));
                        }
                        /* a second run finds nothing */
                        CHECK_EQ_INT(run_pass(keep, "fuse_gelu", GWR_TARGET_ONNX), 0);
                        gwr_network_free(keep);
                        n++;
                    }
    fprintf(stderr, "fuse_gelu: %d forms, worst difference on [-6, 6] %g\n", n, worst);
}

/* the constants at the edge of the 1e-4 relative tolerance still fire, and stay within the row's tolerance */
TEST(gelu_constants_at_the_edge) {
    double worst = 0, e = 1 + 0.9e-4;
    const gelu_spec specs[] = {
        {.ksq = 1.4142135 * e}, {.mul_sqrt = 1, .ksq = 0.70710678 / e}, {.tanh = 1, .kc = 0.044715 * e},
        {.tanh = 1, .kt = 0.7978845608 * e}, {.tanh = 1, .kt = 0.7978845608 / e, .kc = 0.044715 / e},
        {.tanh = 1, .kt = 0.79788456}, {.mul_sqrt = 1, .ksq = 0.7071}, /* rounded by an exporter */
        {.tanh = 1, .cube = 2, .kc = 0.044715 * e, .kt = 0.7978845608 / e},
    };
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++)
        worst = fmax(worst, expect(gelu_net(&specs[i]), "fuse_gelu", GWR_TARGET_ONNX, 1, 6));
    fprintf(stderr, "fuse_gelu: constants 0.9e-4 off, worst difference on [-6, 6] %g\n", worst);
}

TEST(gelu_idle) {
    const gelu_spec specs[] = {
        {.kh = 0.6},                                 /* 0.5 vs 0.6 */
        {.tanh = 1, .kc = 0.05},                     /* 0.044715 vs 0.05 */
        {.tanh = 1, .kt = 0.8},                      /* sqrt(2/pi) vs 0.8 */
        {.ksq = 1.4142135 * (1 + 2e-4)},             /* just beyond 1e-4 */
        {.mul_sqrt = 1, .ksq = 1.4142135},           /* a Mul by sqrt2 */
        {.flags = G_SECOND_READER},                  /* x / sqrt2 read by a Relu too */
        {.tanh = 1, .cube = 1, .flags = G_SECOND_READER},
        {.tanh = 1, .cube = 2, .kc = 0.05},          /* jax2tf's form: 0.044715 vs 0.05 */
        {.tanh = 1, .cube = 2, .kt = 0.8},
        {.tanh = 1, .cube = 2, .flags = G_SECOND_READER},
        {.tanh = 1, .cube = 2, .half = G_MID, .flags = G_OTHER_X},
        {.flags = G_NET_OUTPUT},                     /* 1 + erf(...) is a network output */
        {.tanh = 1, .half = G_FIRST, .flags = G_NET_OUTPUT},
        {.flags = G_OTHER_X},                        /* 0.5 y (1 + erf(x / sqrt2)) */
        {.tanh = 1, .half = G_MID, .flags = G_OTHER_X},
    };
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
        gwr_network *net = gelu_net(&specs[i]);
        if (!CHECK(net != NULL)) continue;
        if (!CHECK_EQ_INT(run_pass(net, "fuse_gelu", GWR_TARGET_GWR), 0)) fprintf(stderr, "  idle case %zu fired\n", i);
        CHECK_EQ_INT(count_op(net, "Gelu"), 0);
        gwr_network_free(net);
    }
}

/* Gelu is opset 20: at opset 17, target gwr fires (and gwr's executor runs
 * it: the comparison in expect), onnx does not, ort gets onnxruntime's
 * com.microsoft Gelu / FastGelu; at 20 all fire. */
TEST(gelu_target) {
    for (int tanh = 0; tanh <= 1; tanh++) {
        gelu_spec s = {.tanh = tanh, .opset = 17};
        expect(gelu_net(&s), "fuse_gelu", GWR_TARGET_GWR, 1, 6);
        expect(gelu_net(&s), "fuse_gelu", GWR_TARGET_ONNX, 0, 6);
        gwr_network *net = gelu_net(&s);
        if (CHECK(net != NULL)) {
            CHECK_EQ_INT(run_pass(net, "fuse_gelu", GWR_TARGET_ORT), 1);
            CHECK_EQ_INT(count_op(net, tanh ? "FastGelu" : "Gelu"), 1);
            gwr_network_free(net);
        }
        expect(gelu_net(&s), "fuse_gelu", GWR_TARGET_ORT, 1, 6);
        s.opset = 20;
        expect(gelu_net(&s), "fuse_gelu", GWR_TARGET_ORT, 1, 6);
        expect(gelu_net(&s), "fuse_gelu", GWR_TARGET_GWR, 1, 6);
    }
}

/* ---- fuse_clip_chains ----------------------------------------------------------- */

enum { F_RELU_RELU, F_CLIP_RELU, F_CLIP_CLIP, F_MAX_ZERO, F_MIN_MAX };
enum { C_SECOND_READER = 1, C_NET_OUTPUT = 2, C_RANK1 = 4 };

typedef struct clip_spec {
    int form;
    double a, b, c, d;  /* the bounds in order of appearance (inner first) */
    unsigned absent;    /* bit i: bound i absent */
    int swap;           /* Max/Min: the constant first */
    unsigned flags;
} clip_spec;

static gwr_tensor *kb(gwr_network *net, const clip_spec *s, int i, double v) {
    if (s->absent & (1u << i)) return NULL;
    float f = (float)v;
    int64_t one = 1;
    return gwr_constant(net, GWR_FLOAT32, s->flags & C_RANK1 ? 1 : 0, &one, &f);
}

static gwr_tensor *clip3(gwr_network *net, gwr_tensor *x, gwr_tensor *lo, gwr_tensor *hi) {
    gwr_tensor *in[3] = {x, lo, hi}, *out = NULL;
    int n = hi ? 3 : lo ? 2 : 1;
    return gwr_op_call(net, "", "Clip", n, in, NULL, 1, &out) ? out : NULL;
}

static gwr_network *clip_net(const clip_spec *s) {
    gwr_network *net = gwr_network_new("clip");
    if (!net || gwr_network_set_opset(net, "", 13)) {
        gwr_network_free(net);
        return NULL;
    }
    gwr_dim d[2] = {4, 16};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, d), *inner = NULL, *y = NULL;
    switch (s->form) {
    case F_RELU_RELU: y = un(net, "Relu", inner = un(net, "Relu", x)); break;
    case F_CLIP_RELU: y = clip3(net, inner = un(net, "Relu", x), kb(net, s, 0, s->a), kb(net, s, 1, s->b)); break;
    case F_CLIP_CLIP:
        inner = clip3(net, x, kb(net, s, 0, s->a), kb(net, s, 1, s->b));
        y = clip3(net, inner, kb(net, s, 2, s->c), kb(net, s, 3, s->d));
        break;
    case F_MAX_ZERO: y = bin(net, "Max", x, kb(net, s, 0, s->a), s->swap); break;
    default:
        inner = bin(net, "Max", x, kb(net, s, 0, s->a), s->swap);
        y = bin(net, "Min", inner, kb(net, s, 1, s->b), s->swap);
    }
    if (!y || gwr_network_mark_output(net, y)) y = NULL;
    if (y && (s->flags & C_SECOND_READER)) y = gwr_network_mark_output(net, un(net, "Neg", inner)) ? NULL : y;
    if (y && (s->flags & C_NET_OUTPUT)) y = gwr_network_mark_output(net, inner) ? NULL : y;
    if (!y) {
        gwr_network_free(net);
        return NULL;
    }
    return net;
}

/* Runs fuse_clip_chains for target gwr; expects `rewrites` and, after,
 * `ops` live layers of op `op`; the outputs must be bit-identical to the
 * clone's on inputs in [-8, 8) holding NaN, +-0, +-inf and denormals. */
static void clip_case(const clip_spec *s, int64_t rewrites, const char *op, int64_t ops) {
    gwr_network *net = clip_net(s);
    if (!CHECK(net != NULL)) return;
    gwr_network *before = gwr_network_clone(net);
    if (!CHECK(before != NULL)) return;
    int64_t n = run_pass(net, "fuse_clip_chains", GWR_TARGET_GWR);
    if (!CHECK_EQ_INT(n, rewrites)) fprintf(stderr, "  form %d (%g %g %g %g) fired %lld\n", s->form, s->a, s->b, s->c, s->d, (long long)n);
    if (op && !CHECK_EQ_INT(count_op(net, op), ops)) fprintf(stderr, "  form %d (%g %g): %s\n", s->form, s->a, s->b, op);
    for (unsigned seed = 1; seed <= 3; seed++) {
        int64_t bits = -1;
        double dd = max_diff(before, net, seed * 104729u, 8, 1, &bits);
        if (!CHECK(dd == 0 && bits == 0)) fprintf(stderr, "  form %d: difference %g, %lld bytes differ\n", s->form, dd, (long long)bits);
    }
    gwr_network_free(before);
    gwr_network_free(net);
}

TEST(clip_chains_fire) {
    const unsigned A0 = 1, A1 = 2, A2 = 4, A3 = 8;
    clip_case(&(clip_spec){.form = F_RELU_RELU}, 1, "Relu", 1);
    clip_case(&(clip_spec){.form = F_CLIP_RELU, .a = 0, .b = 6}, 1, "Relu", 0);
    clip_case(&(clip_spec){.form = F_CLIP_RELU, .a = 0.5, .absent = A1}, 1, "Clip", 1);
    clip_case(&(clip_spec){.form = F_CLIP_CLIP, .a = 0, .b = 6, .c = 1, .d = 4}, 1, "Clip", 1);
    clip_case(&(clip_spec){.form = F_CLIP_CLIP, .a = -1, .b = 3, .c = 0, .d = 6}, 1, "Clip", 1);
    clip_case(&(clip_spec){.form = F_CLIP_CLIP, .a = 1, .b = 2, .c = 2, .d = 3}, 1, "Clip", 1); /* touching */
    clip_case(&(clip_spec){.form = F_CLIP_CLIP, .b = 6, .c = 0, .absent = A0 | A3}, 1, "Clip", 1);
    clip_case(&(clip_spec){.form = F_CLIP_CLIP, .a = 0, .b = 6, .absent = A2 | A3}, 1, "Clip", 1);
    clip_case(&(clip_spec){.form = F_CLIP_CLIP, .absent = A0 | A1 | A2 | A3}, 1, "Clip", 1);
    clip_case(&(clip_spec){.form = F_MAX_ZERO, .a = 0}, 1, "Relu", 1);
    clip_case(&(clip_spec){.form = F_MIN_MAX, .a = -1, .b = 2}, 1, "Clip", 1);
    /* Max(x, 0) becomes a Relu first, then Min(Relu(x), 6) a Clip */
    clip_case(&(clip_spec){.form = F_MIN_MAX, .a = 0, .b = 6, .flags = C_RANK1}, 2, "Clip", 1);
    clip_case(&(clip_spec){.form = F_MIN_MAX, .a = 0.5, .b = 6, .flags = C_RANK1}, 1, "Clip", 1);
    clip_case(&(clip_spec){.form = F_MIN_MAX, .a = 3, .b = 1}, 1, "Clip", 1); /* lo > hi: hi everywhere, both ways */
    clip_case(&(clip_spec){.form = F_MIN_MAX, .a = -0.0, .b = 0}, 1, "Clip", 1);
}

TEST(clip_chains_idle) {
    const clip_spec idle[] = {
        {.form = F_RELU_RELU, .flags = C_SECOND_READER},
        {.form = F_RELU_RELU, .flags = C_NET_OUTPUT},
        {.form = F_CLIP_RELU, .a = -0.0, .b = 6},           /* Relu(-1) is +0, Clip(-1, -0.0) is -0.0 */
        {.form = F_CLIP_RELU, .a = -1, .b = 6},
        {.form = F_CLIP_RELU, .a = 0, .b = 6, .flags = C_SECOND_READER},
        {.form = F_CLIP_CLIP, .a = 0, .b = 1, .c = 2, .d = 3}, /* disjoint: 2 where one Clip gives 1 */
        {.form = F_CLIP_CLIP, .a = 3, .b = 1, .c = 0, .d = 6}, /* an inner pair out of order */
        {.form = F_CLIP_CLIP, .a = -0.0, .b = 6, .c = 0, .d = 4},
        {.form = F_CLIP_CLIP, .a = NAN, .b = 6, .c = 0, .d = 4},
        {.form = F_CLIP_CLIP, .a = 0, .b = 6, .c = 1, .d = 4, .flags = C_NET_OUTPUT},
        {.form = F_MAX_ZERO, .a = 0, .swap = 1},            /* Max(0, -0.0) is +0.0 */
        {.form = F_MAX_ZERO, .a = -0.0},
        {.form = F_MAX_ZERO, .a = 0.001},
        {.form = F_MIN_MAX, .a = -1, .b = 2, .swap = 1},
        {.form = F_MIN_MAX, .a = NAN, .b = 2},
        {.form = F_MIN_MAX, .a = -1, .b = 2, .flags = C_SECOND_READER},
        {.form = F_MIN_MAX, .a = 0, .b = 2, .swap = 1},     /* Min(2, Max(0, x)): neither order */
    };
    for (size_t i = 0; i < sizeof idle / sizeof *idle; i++) clip_case(&idle[i], 0, NULL, 0);
}

/* Clip with bounds as inputs needs opset 11: at opset 10 (attributes) only
 * the Relu forms fire. */
TEST(clip_chains_opset) {
    gwr_dim d = 8;
    gwr_network *net = gwr_network_new("old");
    CHECK(net && !gwr_network_set_opset(net, "", 10));
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, &d);
    gwr_tensor *c = un(net, "Clip", un(net, "Relu", x));
    CHECK(c && !gwr_layer_set_float(gwr_tensor_parent(c), "min", 0) && !gwr_layer_set_float(gwr_tensor_parent(c), "max", 6));
    CHECK(!gwr_network_mark_output(net, c));
    CHECK(!gwr_network_mark_output(net, un(net, "Relu", bin(net, "Max", x, k32(net, 0), 0))));
    CHECK_EQ_INT(run_pass(net, "fuse_clip_chains", GWR_TARGET_ONNX), 2); /* Max(x, 0) -> Relu, then Relu(Relu) */
    CHECK_EQ_INT(count_op(net, "Max"), 0);
    CHECK_EQ_INT(count_op(net, "Relu"), 2);
    CHECK_EQ_INT(count_op(net, "Clip"), 1);
    gwr_network_free(net);
}

int main(void) {
    RUN(gelu_fires_on_every_form);
    RUN(gelu_constants_at_the_edge);
    RUN(gelu_idle);
    RUN(gelu_target);
    RUN(clip_chains_fire);
    RUN(clip_chains_idle);
    RUN(clip_chains_opset);
    return check_report();
}
