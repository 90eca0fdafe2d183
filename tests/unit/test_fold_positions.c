/* test_fold_positions.c - fold_where_nonneg and fold_rotary_freqs (src/passes/fold_positions.c):
 * where they fire (the outputs of the unfused graph on gwr's executor, exactly) and where they
 * must not. tests/llm/norm_rope_ort.py runs the decoder fixtures through them on onnxruntime. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "pass_test.h"

static gwr_tensor *i64s(gwr_network *net, int64_t n, const int64_t *v) { return gwr_constant_i64s(net, n, v); }

static gwr_tensor *op1(gwr_network *net, const char *op, int nin, gwr_tensor *const *in) {
    gwr_tensor *y = NULL;
    return gwr_op_call(net, "", op, nin, in, NULL, 1, &y) ? y : NULL;
}

/* Expand(c [1, 4, 1], Where(Equal(k, cmp), ones, k)), k = Concat(Unsqueeze(Shape(x)[0]), [-1], [1]) as
 * torch's expand(B, -1, 1) exports; x [batch, 3] (batch 2 where the numbers are compared).
 * forms: 0 fires; 1: cmp [3, -1, -1] (a dim could equal 3): must not; 2: k from an int64 input:
 * must not; 3: k = Shape(y) whole, y [batch, 4, 1] (fires); 4: Where(.., a, other): must not */
static int where_form, where_sym;
static gwr_network *where_net(void) {
    static const int64_t m1[1] = {-1}, one[1] = {1}, z[1] = {0}, ones3[3] = {1, 1, 1}, neg3[3] = {-1, -1, -1},
                         bad3[3] = {3, -1, -1};
    gwr_network *net = gwr_network_new("where");
    gwr_dim b = where_sym ? gwr_network_dim_sym(net, "batch") : 2, xd[2] = {b, 3}, yd[3] = {b, 4, 1}, kd[1] = {3};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, xd), *k;
    if (where_form == 2) {
        k = gwr_network_add_input(net, "k", GWR_INT64, 1, kd);
    } else if (where_form == 3) {
        gwr_tensor *y = gwr_network_add_input(net, "y", GWR_FLOAT32, 3, yd);
        k = gwr_shape_of(net, y);
    } else {
        gwr_tensor *gi[2] = {gwr_shape_of(net, x), i64s(net, 1, z)};
        gwr_tensor *parts[3] = {op1(net, "Gather", 2, gi), i64s(net, 1, m1), i64s(net, 1, one)};
        k = gwr_concat(net, 3, parts, 0);
    }
    gwr_tensor *eqin[2] = {k, i64s(net, 3, where_form == 1 ? bad3 : neg3)};
    gwr_tensor *eq = op1(net, "Equal", 2, eqin);
    gwr_tensor *other = where_form == 4 ? gwr_add(net, k, i64s(net, 3, ones3)) : k;
    gwr_tensor *win[3] = {eq, i64s(net, 3, ones3), other};
    gwr_tensor *s = op1(net, "Where", 3, win);
    int64_t cd[3] = {1, 4, 1};
    static const float cv[4] = {0.5f, 0.25f, 0.125f, 1.0f};
    gwr_tensor *ein[2] = {gwr_constant(net, GWR_FLOAT32, 3, cd, cv), s};
    gwr_tensor *e = where_form == 2 ? NULL : op1(net, "Expand", 2, ein);
    gwr_network_mark_output(net, where_form == 2 ? s : e); /* form 2: k's values are the random input's */
    return net;
}

TEST(where_nonneg_cases) {
    static const struct { int form, fires; } cases[] = {{0, 1}, {1, 0}, {2, 0}, {3, 1}, {4, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        where_form = cases[i].form, where_sym = 0;
        expect(where_net(), "fold_where_nonneg", GWR_TARGET_ONNX, cases[i].fires, 1);
        where_sym = 1; /* the batch symbolic: the structure */
        gwr_network *net = where_net();
        CHECK_EQ_INT(run_pass(net, "fold_where_nonneg", GWR_TARGET_ONNX), cases[i].fires);
        CHECK_OK(gwr_network_prune(net, NULL));
        if (!CHECK_EQ_INT(count_op(net, "Where"), !cases[i].fires)) fprintf(stderr, "  form %d\n", cases[i].form);
        /* the Expand's result now has x's batch symbol */
        if (cases[i].form == 0) {
            gwr_optimize_options o = {.level = GWR_LEVEL_BASIC};
            CHECK_OK(gwr_optimize(net, &o, NULL));
            gwr_tensor *y = gwr_network_output(net, 0);
            CHECK(gwr_tensor_rank(y) == 3 && gwr_tensor_dim(y, 0) == gwr_tensor_dim(gwr_network_input(net, 0), 0) &&
                  gwr_tensor_dim(y, 1) == 4 && gwr_tensor_dim(y, 2) == 1);
        }
        gwr_network_free(net);
    }
}

/* Transpose(MatMul([Expand(]c [1, 4, 1][, [B, 1, 1])], p [B, 1, 5]), [0, 2, 1]), B = 2.
 * forms: 0 no Expand; 1 Expand to [2, 1, 1] (fires); 2 c [4, 1] (fires); 3 Expand to [3, 4, 1] with p
 * of batch 1 (a bigger batch: must not); 4 perm [1, 0, 2] (must not); 5 c [1, 4, 2], p [2, 2, 5] (K 2:
 * must not) */
static int freq_form;
static gwr_network *freqs(void) {
    static const float cv[8] = {1.0f, 0.5f, 0.25f, 0.125f, 2, 3, 4, 5};
    gwr_network *net = gwr_network_new("freqs");
    gwr_dim pd[3] = {freq_form == 3 ? 1 : 2, freq_form == 5 ? 2 : 1, 5};
    gwr_tensor *p = gwr_network_add_input(net, "p", GWR_FLOAT32, 3, pd);
    int64_t c3[3] = {1, 4, freq_form == 5 ? 2 : 1}, c2[2] = {4, 1};
    gwr_tensor *c = freq_form == 2 ? gwr_constant(net, GWR_FLOAT32, 2, c2, cv) : gwr_constant(net, GWR_FLOAT32, 3, c3, cv);
    if (freq_form == 1 || freq_form == 3) {
        static const int64_t s1[3] = {2, 1, 1}, s3[3] = {3, 4, 1};
        gwr_tensor *ein[2] = {c, i64s(net, 3, freq_form == 1 ? s1 : s3)};
        c = op1(net, "Expand", 2, ein);
    }
    static const int64_t p021[3] = {0, 2, 1}, p102[3] = {1, 0, 2};
    gwr_tensor *y = gwr_transpose(net, gwr_matmul(net, c, p), 3, freq_form == 4 ? p102 : p021);
    gwr_network_mark_output(net, gwr_cos(net, y));
    return net;
}

TEST(rotary_freqs_cases) {
    static const struct { int form, fires; } cases[] = {{0, 1}, {1, 1}, {2, 1}, {3, 0}, {4, 0}, {5, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        freq_form = cases[i].form;
        expect(freqs(), "fold_rotary_freqs", GWR_TARGET_ONNX, cases[i].fires, 8);
        gwr_network *net = freqs(), *before = gwr_network_clone(net);
        CHECK_EQ_INT(run_pass(net, "fold_rotary_freqs", GWR_TARGET_ONNX), cases[i].fires);
        CHECK_OK(gwr_network_prune(net, NULL));
        if (!CHECK_EQ_INT(count_op(net, "MatMul"), !cases[i].fires)) fprintf(stderr, "  form %d\n", cases[i].form);
        if (cases[i].fires) { /* the same single rounding: bit for bit */
            int64_t nbits = -1;
            CHECK(max_diff(before, net, 5, 8, 0, &nbits) == 0 && nbits == 0);
        }
        gwr_network_free(before);
        gwr_network_free(net);
    }
}

/* Shape(Range(p, p + s, 1)) with p = Shape(x)[0], s = Shape(y)[1] (dims) -> [s]; its Gather(.., 0) -> s.
 * forms: 0 fires (the Shape, then the Gather of what replaced it: 2); 1 step 2 (must not); 2 s an int64
 * input (maybe negative: must not); 3 limit p + s read from another p (must not) */
static int range_form;
static gwr_network *range_len(void) {
    static const int64_t z = 0, one = 1;
    gwr_network *net = gwr_network_new("range_len");
    gwr_dim xd[2] = {3, 2}, yd[2] = {2, 4}; /* known (inputs to compare on), but no pass here folds a Shape */
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, xd), *yy = gwr_network_add_input(net, "y", GWR_FLOAT32, 2, yd);
    gwr_tensor *g0[2] = {gwr_shape_of(net, x), gwr_constant(net, GWR_INT64, 0, NULL, &z)};
    gwr_tensor *g1[2] = {gwr_shape_of(net, yy), gwr_constant(net, GWR_INT64, 0, NULL, &one)};
    gwr_tensor *p = op1(net, "Gather", 2, g0), *sd = range_form == 2 ? gwr_network_add_input(net, "s", GWR_INT64, 0, NULL)
                                                                      : op1(net, "Gather", 2, g1);
    gwr_tensor *start = range_form == 3 ? gwr_add(net, p, gwr_constant(net, GWR_INT64, 0, NULL, &z)) : p;
    int64_t step = range_form == 1 ? 2 : 1;
    gwr_tensor *rin[3] = {start, gwr_add(net, p, sd), gwr_constant(net, GWR_INT64, 0, NULL, &step)};
    gwr_tensor *gi[2] = {gwr_shape_of(net, op1(net, "Range", 3, rin)), gwr_constant(net, GWR_INT64, 0, NULL, &z)};
    gwr_network_mark_output(net, op1(net, "Gather", 2, gi));
    return net;
}

TEST(range_length_cases) {
    for (range_form = 0; range_form <= 3; range_form++) {
        int fires = range_form == 0 ? 2 : 0;
        if (range_form != 2) expect(range_len(), "fold_range_length", GWR_TARGET_ONNX, fires, 1); /* 2: s random */
        gwr_network *net = range_len();
        CHECK_EQ_INT(run_pass(net, "fold_range_length", GWR_TARGET_ONNX), fires);
        CHECK_OK(gwr_network_prune(net, NULL));
        if (!CHECK_EQ_INT(count_op(net, "Range"), !fires)) fprintf(stderr, "  form %d\n", range_form);
        gwr_network_free(net);
    }
}

int main(void) {
    RUN(where_nonneg_cases);
    RUN(rotary_freqs_cases);
    RUN(range_length_cases);
    return check_report();
}
