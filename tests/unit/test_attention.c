/* test_attention.c - com.microsoft MultiHeadAttention (shape rule, kernel,
 * ONNX round trip) and the passes fuse_attention and merge_qkv_matmuls
 * through gwr_optimize --only: each exporter form where they must fire,
 * the forms where they must not, and the outputs before (a clone, the
 * unfused graph run by the executor's MatMul/Softmax kernels: an
 * independent computation of the same formula) and after on seeded random
 * inputs within the pass's tolerance. onnxruntime runs the fused models in
 * tests/cli/test_attention_ort.sh. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "pass_test.h"

#define B 2
#define S 5
#define HID 16
#define NH 2
#define HD 8

enum {
    A_SPLIT = 1 << 0,        /* one MatMul [HID, 3 HID] + Add + Split (gen-gpt's form) */
    A_NOBIAS = 1 << 1,       /* projections without bias */
    A_K_TWO = 1 << 2,        /* K by Transpose [0,2,1,3] then [0,1,3,2] */
    A_SC_DIV = 1 << 3,       /* scores / sqrt(D) instead of * 1/sqrt(D) */
    A_SC_Q = 1 << 4,         /* q * 1/sqrt(D) before the product */
    A_SC_QK = 1 << 5,        /* q and k each * D^-1/4 */
    A_SC_NONE = 1 << 6,      /* no scale at all */
    A_MASK_ADD = 1 << 7,     /* + causal constant [S, S] (-inf above the diagonal) */
    A_MASK_ADD4 = 1 << 8,    /* + causal constant [1, 1, S, S] of -1e9 */
    A_MASK_WHERE = 1 << 9,   /* Where(causal bool, s, fill) */
    A_MASK_INPUT = 1 << 10,  /* + a graph input [S, S] (a computed mask) */
    A_FILL_FINITE = 1 << 11, /* the Where's fill is -10000 (idle) */
    A_FILL_MIN = 1 << 12,    /* the Where's fill is float32's lowest */
    A_FULL_ROW = 1 << 13,    /* the mask hides every key of query row 0 */
    A_SECOND = 1 << 14,      /* the probabilities are also read by a Relu output (idle) */
    A_AXIS = 1 << 15,        /* Softmax over axis 2 (idle) */
    A_SC_INPUT = 1 << 16,    /* the scale is a graph input (idle) */
    A_HEADS = 1 << 17,       /* v as 1 head of 16, broadcast over q's 2 heads (idle) */
    A_Q_PERM = 1 << 18,      /* q transposed by [2,0,1,3] (B = N: a valid graph; idle) */
    A_SCORES_OUT = 1 << 19,  /* the scores are a network output (idle) */
    A_MASK_KEYS = 1 << 20,   /* + constant [1, S] (per key, broadcast over queries) */
    A_MASK_BIG = 1 << 21,    /* + constant [2, 1, S, S] against batch 1 ... grows (idle) */
    A_TWICE = 1 << 22,       /* two blocks, one after the other, reading one mask constant */
    A_WHERE_HIDE = 1 << 23,  /* Where(hidden, fill, s): the condition marks what is hidden */
    A_SC_INSIDE = 1 << 24,   /* q * c before its Reshape, k * c between its Reshape and Transpose */
    A_SC_V = 1 << 25,        /* v * 2 before its Reshape: not a softmax scale (kept) */
    A_SCORES_TWICE = 1 << 26, /* the scores are also read by a Relu output (idle) */
    A_SCQ_INPUT = 1 << 27,   /* q * a graph input between its Transpose and the product */
};

static gwr_tensor *proj(gwr_network *net, gwr_tensor *x, int64_t cols, unsigned f) {
    int64_t wd[2] = {HID, cols};
    gwr_tensor *y = gwr_matmul(net, x, rconst(net, 2, wd, -0.5, 0.5));
    return f & A_NOBIAS ? y : gwr_add(net, y, rconst(net, 1, &cols, -0.5, 0.5));
}

static gwr_tensor *heads(gwr_network *net, gwr_tensor *t, int64_t nh, int64_t hd, const int64_t *perm) {
    int64_t shape[4] = {0, 0, nh, hd};
    return gwr_transpose(net, gwr_reshape(net, t, 4, shape), 4, perm);
}

/* heads() with a scalar Mul by c before the Reshape (where 0) or between
 * the Reshape and the Transpose (where 1) */
static gwr_tensor *heads_scaled(gwr_network *net, gwr_tensor *t, const int64_t *perm, double c, int where) {
    int64_t shape[4] = {0, 0, NH, HD};
    gwr_tensor *k = gwr_constant_f32(net, (float)c);
    if (!where) return gwr_transpose(net, gwr_reshape(net, gwr_mul(net, t, k), 4, shape), 4, perm);
    return gwr_transpose(net, gwr_mul(net, k, gwr_reshape(net, t, 4, shape)), 4, perm);
}

/* The causal mask: 1 (keep) on and below the diagonal; row 0 all 0 with
 * A_FULL_ROW. */
static int keep(unsigned f, int i, int j) { return j <= i && !(f & A_FULL_ROW && i == 0); }

static gwr_tensor *mask_const(gwr_network *net, unsigned f) {
    float m[2 * S * S];
    if (f & A_MASK_KEYS) {
        int64_t d[2] = {1, S};
        for (int j = 0; j < S; j++) m[j] = j == 3 ? -INFINITY : 0.0f;
        return gwr_constant(net, GWR_FLOAT32, 2, d, m);
    }
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < S; i++)
            for (int j = 0; j < S; j++) m[(r * S + i) * S + j] = keep(f, i, j) ? 0.0f : f & A_MASK_ADD4 ? -1e9f : -INFINITY;
    int64_t d2[2] = {S, S}, d4[4] = {f & A_MASK_BIG ? 2 : 1, 1, S, S};
    return f & (A_MASK_ADD4 | A_MASK_BIG) ? gwr_constant(net, GWR_FLOAT32, 4, d4, m) : gwr_constant(net, GWR_FLOAT32, 2, d2, m);
}

static gwr_tensor *where_mask(gwr_network *net, gwr_tensor *s, unsigned f) {
    uint8_t c[S * S];
    int64_t d[4] = {1, 1, S, S};
    for (int i = 0; i < S; i++)
        for (int j = 0; j < S; j++) c[i * S + j] = (uint8_t)(keep(f, i, j) != !!(f & A_WHERE_HIDE));
    float fill = f & A_FILL_FINITE ? -10000.0f : f & A_FILL_MIN ? -3.4028234663852886e38f : -INFINITY;
    gwr_tensor *cond = gwr_constant(net, GWR_BOOL, 4, d, c), *fl = gwr_constant_f32(net, fill);
    return f & A_WHERE_HIDE ? gwr_where(net, cond, fl, s) : gwr_where(net, cond, s, fl);
}

/* x [B, S, HID] through one attention block of the form f (two with
 * A_TWICE); batch `b`. */
static gwr_network *attn_model_b(unsigned f, int64_t b) {
    rng_state = 777 + f;
    gwr_network *net = gwr_network_new("attention");
    gwr_network_set_opset(net, "", 17);
    int64_t xd[3] = {b, S, HID}, md[2] = {S, S}, one = 1;
    gwr_tensor *x = input(net, "x", 3, xd), *q, *k, *v, *y = NULL, *mc = NULL;
    for (int blk = 0; blk < (f & A_TWICE ? 2 : 1); blk++, x = y) {
        if (f & A_SPLIT) {
            gwr_tensor *parts[3];
            gwr_split(net, proj(net, x, 3 * HID, f), -1, 3, NULL, parts);
            q = parts[0], k = parts[1], v = parts[2];
        } else {
            q = proj(net, x, HID, f), k = proj(net, x, HID, f), v = proj(net, x, HID, f);
        }
        static const int64_t p0213[4] = {0, 2, 1, 3}, p0231[4] = {0, 2, 3, 1}, p0132[4] = {0, 1, 3, 2}, p2013[4] = {2, 0, 1, 3};
        double c = 1.0 / sqrt((double)HD);
        gwr_tensor *qh, *kt, *vh;
        if (f & A_SC_INSIDE) {
            qh = heads_scaled(net, q, p0213, sqrt(c), 0);
            kt = heads_scaled(net, k, p0231, sqrt(c), 1);
        } else {
            qh = heads(net, q, NH, HD, f & A_Q_PERM ? p2013 : p0213);
            kt = f & A_K_TWO ? gwr_transpose(net, heads(net, k, NH, HD, p0213), 4, p0132) : heads(net, k, NH, HD, p0231);
        }
        vh = f & A_SC_V ? heads_scaled(net, v, p0213, 2.0, 0) : f & A_HEADS ? heads(net, v, 1, HID, p0213) : heads(net, v, NH, HD, p0213);
        if (f & A_SC_Q) qh = gwr_mul(net, qh, gwr_constant_f32(net, (float)c));
        if (f & A_SCQ_INPUT) qh = gwr_mul(net, qh, input(net, "qscale", 1, &one));
        if (f & A_SC_QK) {
            qh = gwr_mul(net, gwr_constant_f32(net, (float)sqrt(c)), qh);
            kt = gwr_mul(net, kt, gwr_constant_f32(net, (float)sqrt(c)));
        }
        gwr_tensor *s = gwr_matmul(net, qh, kt);
        if (f & A_SCORES_OUT) gwr_network_mark_output(net, s);
        if (f & A_SCORES_TWICE) gwr_network_mark_output(net, gwr_relu(net, s));
        if (f & A_SC_INPUT) s = gwr_mul(net, s, input(net, "scale", 1, &one));
        else if (f & A_SC_DIV) s = gwr_div(net, s, gwr_constant_f32(net, (float)sqrt((double)HD)));
        else if (!(f & (A_SC_Q | A_SC_QK | A_SC_NONE | A_SC_INSIDE))) s = gwr_mul(net, s, gwr_constant_f32(net, (float)c));
        if (f & (A_MASK_ADD | A_MASK_ADD4 | A_MASK_KEYS | A_MASK_BIG)) s = gwr_add(net, s, mc ? mc : (mc = mask_const(net, f)));
        if (f & A_MASK_INPUT) s = gwr_add(net, input(net, "mask", 2, md), s);
        if (f & A_MASK_WHERE) s = where_mask(net, s, f);
        gwr_tensor *p = gwr_softmax(net, s, f & A_AXIS ? 2 : -1);
        if (f & A_SECOND) gwr_network_mark_output(net, gwr_relu(net, p));
        int64_t merged[3] = {0, 0, f & A_HEADS ? -1 : HID};
        y = gwr_reshape(net, gwr_transpose(net, gwr_matmul(net, p, vh), 4, p0213), 3, merged);
    }
    if (!y || gwr_network_mark_output(net, y)) {
        fprintf(stderr, "build %#x: %s\n", f, gwr_network_errmsg(net));
        gwr_network_free(net);
        return NULL;
    }
    return net;
}
static gwr_network *attn_model(unsigned f) { return attn_model_b(f, B); }

/* The two stages, fuse_attention then lower_attention, alone for target;
 * the rewrites of `label` (lower_attention by default), -1 on failure. */
static int64_t run_stages_of(gwr_network *net, unsigned target, const char *label) {
    gwr_optimize_report *r = NULL;
    gwr_optimize_options o = {.only = "fuse_attention,lower_attention", .target = target, .debug = 1};
    gwr_status s = gwr_optimize(net, &o, &r);
    int64_t n = -1;
    for (int i = 0; !s && i < gwr_optimize_report_count(r); i++)
        if (!strcmp(gwr_optimize_report_pass(r, i)->label, label)) n = gwr_optimize_report_pass(r, i)->rewrites;
    if (s) fprintf(stderr, "gwr_optimize: %s\n", gwr_network_errmsg(net));
    gwr_optimize_report_free(r);
    return !s && gwr_network_verify(net) ? -1 : n;
}
static int64_t run_stages(gwr_network *net, unsigned target) { return run_stages_of(net, target, "lower_attention"); }

/* Live layers of op `op` of domain dom. */
static int64_t count_dom(gwr_network *net, const char *dom, const char *op) {
    int64_t n = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        n += !gwr_layer_is_removed(l) && !strcmp(gwr_layer_domain(l), dom) && !strcmp(gwr_layer_op(l), op);
    }
    return n;
}
static int64_t count_mha(gwr_network *net) { return count_op(net, "MultiHeadAttention"); }
/* MultiHeadAttention or (the Split form of one projection) com.microsoft Attention */
static int64_t count_fused(gwr_network *net) { return count_mha(net) + count_dom(net, "com.microsoft", "Attention"); }

/* Runs fuse_attention on the model of form f and checks it fired `n` times,
 * the outputs within tolerance, and what is left. */
static void fuse_case(unsigned f, int n, int64_t left) {
    gwr_network *net = attn_model(f), *copy = net ? gwr_network_clone(net) : NULL;
    if (!CHECK(copy)) return;
    CHECK_EQ_INT(run_stages(copy, GWR_TARGET_ORT), n);
    if (n) {
        gwr_network_prune(copy, NULL);
        if (!CHECK_EQ_INT(count_fused(copy), 1)) fprintf(stderr, "  form %#x\n", f);
        if (left >= 0 && !CHECK_EQ_INT(gwr_network_num_live_layers(copy), left)) fprintf(stderr, "  form %#x\n", f);
    }
    gwr_network_free(copy);
    gwr_network *after = attn_model(f);
    if (!CHECK(after)) {
        gwr_network_free(net);
        return;
    }
    CHECK_EQ_INT(run_stages(after, GWR_TARGET_ORT), n);
    for (unsigned seed = 1; seed <= 3; seed++) {
        double d = max_diff(net, after, seed * 7919u, 2.0, 0, NULL);
        if (!CHECK(d >= 0 && d <= pass_tolerance("fuse_attention")) || d > 1e-5) fprintf(stderr, "  form %#x: difference %g\n", f, d);
    }
    gwr_network_free(net), gwr_network_free(after);
}

TEST(fuse_attention_fires) {
    /* separate projections: 3 MatMul + weights + MHA + its bias; nothing else */
    static const unsigned scales[] = {0, A_SC_DIV, A_SC_Q, A_SC_QK, A_SC_NONE};
    for (size_t i = 0; i < sizeof scales / sizeof *scales; i++) {
        fuse_case(scales[i], 1, -1);
        fuse_case(scales[i] | A_K_TWO, 1, -1);
        fuse_case(scales[i] | A_MASK_ADD, 1, -1);
    }
    fuse_case(A_NOBIAS, 1, 3 + 3 + 1);          /* 3 MatMuls, 3 weights, the MHA */
    fuse_case(0, 1, 3 + 3 + 1 + 1);            /* and its bias */
    fuse_case(A_SPLIT, 1, 3);                  /* Attention, its weights and bias */
    fuse_case(A_SPLIT | A_NOBIAS, 1, 3);       /* and a zero bias */
    fuse_case(A_SPLIT | A_MASK_ADD | A_SC_DIV, 1, -1);
    fuse_case(A_MASK_ADD4, 1, -1);
    fuse_case(A_MASK_KEYS, 1, -1);
    fuse_case(A_MASK_WHERE, 1, -1);
    fuse_case(A_MASK_WHERE | A_FILL_MIN, 1, -1);
    fuse_case(A_MASK_WHERE | A_WHERE_HIDE, 1, -1);
    fuse_case(A_MASK_WHERE | A_WHERE_HIDE | A_FILL_MIN | A_FULL_ROW, 1, -1);
    fuse_case(A_SC_INSIDE | A_MASK_ADD, 1, -1);
    fuse_case(A_SC_V, 1, -1);                  /* v's Mul stays, the scores' scale is the default */
    fuse_case(A_MASK_INPUT, 1, -1);            /* a computed mask: + an Unsqueeze */
    fuse_case(A_MASK_INPUT | A_K_TWO | A_SC_Q, 1, -1);
}

/* A query that can see no key: the unfused Softmax of an all -inf row is
 * NaN, of an all-lowest row uniform; the fused graph must give the same
 * (the comparison matches NaN with NaN). */
TEST(fuse_attention_fully_masked_rows) {
    fuse_case(A_MASK_ADD | A_FULL_ROW, 1, -1);
    fuse_case(A_MASK_WHERE | A_FULL_ROW, 1, -1);
    fuse_case(A_MASK_WHERE | A_FILL_MIN | A_FULL_ROW, 1, -1);
    fuse_case(A_MASK_ADD4 | A_FULL_ROW, 1, -1);
    /* and the outputs really are NaN / finite there */
    gwr_network *net = attn_model(A_MASK_ADD | A_FULL_ROW);
    if (!CHECK(net)) return;
    CHECK_EQ_INT(run_stages(net, GWR_TARGET_ORT), 1);
    int64_t xd[3] = {B, S, HID};
    gwr_value *x = gwr_value_new(GWR_FLOAT32, 3, xd), *out[8] = {0};
    for (int64_t i = 0; i < gwr_value_numel(x); i++) gwr_value_set_f64(x, i, sin((double)i));
    const char *names[1] = {"x"};
    if (CHECK(run_net(net, 1, names, &x, out) == 1)) {
        CHECK(isnan(gwr_value_get_f64(out[0], 0)));               /* batch 0, query 0 */
        CHECK(!isnan(gwr_value_get_f64(out[0], HID)));            /* query 1 sees key 0 */
    }
    gwr_value_release(x), gwr_value_release(out[0]);
    gwr_network_free(net);
}

/* Two blocks reading one [S, S] mask constant share one rank-4
 * attention_bias (a decoder would otherwise hold a copy per block). */
TEST(fuse_attention_shares_the_mask) {
    gwr_network *net = attn_model(A_MASK_ADD | A_TWICE), *before = net ? gwr_network_clone(net) : NULL;
    if (!CHECK(before)) return;
    CHECK_EQ_INT(run_stages(net, GWR_TARGET_ORT), 2);
    gwr_tensor *ab[2] = {NULL, NULL};
    int n = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (!gwr_layer_is_removed(l) && !strcmp(gwr_layer_op(l), "MultiHeadAttention") && n < 2)
            ab[n++] = gwr_layer_input(l, 5);
    }
    CHECK(n == 2 && ab[0] && ab[0] == ab[1] && gwr_tensor_rank(ab[0]) == 4);
    double d = max_diff(before, net, 9, 2.0, 0, NULL);
    CHECK(d >= 0 && d <= pass_tolerance("fuse_attention"));
    gwr_network_free(before);
    gwr_network_free(net);
}

TEST(fuse_attention_idle) {
    static const unsigned idle[] = {A_SECOND, A_AXIS, A_SC_INPUT, A_HEADS, A_Q_PERM, A_SCORES_OUT, A_SCORES_TWICE, A_SCQ_INPUT,
                                    A_MASK_WHERE | A_FILL_FINITE, A_MASK_BIG};
    for (size_t i = 0; i < sizeof idle / sizeof *idle; i++) {
        gwr_network *net = attn_model_b(idle[i], idle[i] & A_MASK_BIG ? 1 : B);
        if (!CHECK(net)) continue;
        if (!CHECK_EQ_INT(run_stages(net, GWR_TARGET_ORT), 0)) fprintf(stderr, "  form %#x\n", idle[i]);
        gwr_network_free(net);
    }
    /* not for target onnx: the pass is skipped there */
    gwr_network *net = attn_model(0);
    gwr_optimize_options o = {.target = GWR_TARGET_ONNX, .level = GWR_LEVEL_ALL};
    CHECK(net && !gwr_optimize(net, &o, NULL) && count_mha(net) == 0);
    gwr_network_free(net);
}

/* The scores as com.microsoft FusedMatMul (what fuse_matmul_scale makes):
 * q [B,N,S,D] x k [B,N,S,D] with transB, alpha the scale; structure only
 * (the executor here has no FusedMatMul kernel). */
TEST(fuse_attention_takes_fused_matmul) {
    for (int tb = 0; tb < 2; tb++) {
        rng_state = 99;
        gwr_network *net = gwr_network_new("fmm");
        gwr_network_set_opset(net, "", 17);
        int64_t xd[3] = {B, S, HID};
        static const int64_t p0213[4] = {0, 2, 1, 3}, p0231[4] = {0, 2, 3, 1};
        gwr_tensor *x = input(net, "x", 3, xd);
        gwr_tensor *qh = heads(net, proj(net, x, HID, 0), NH, HD, p0213);
        gwr_tensor *kh = heads(net, proj(net, x, HID, 0), NH, HD, tb ? p0213 : p0231);
        gwr_tensor *vh = heads(net, proj(net, x, HID, 0), NH, HD, p0213);
        gwr_args *a = gwr_args_new();
        gwr_args_set_int(a, "transB", tb);
        gwr_args_set_float(a, "alpha", 0.25);
        gwr_tensor *in[2] = {qh, kh}, *s = NULL;
        gwr_op_call(net, "com.microsoft", "FusedMatMul", 2, in, a, 1, &s);
        gwr_args_free(a);
        int64_t merged[3] = {0, 0, HID};
        gwr_tensor *p = gwr_softmax(net, s, -1);
        gwr_tensor *y = gwr_reshape(net, gwr_transpose(net, gwr_matmul(net, p, vh), 4, p0213), 3, merged);
        if (!CHECK(y && !gwr_network_mark_output(net, y))) {
            gwr_network_free(net);
            continue;
        }
        CHECK_EQ_INT(run_stages(net, GWR_TARGET_ORT), 1);
        float scale = 0;
        for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
            gwr_layer *l = gwr_network_layer(net, i);
            if (!gwr_layer_is_removed(l) && !strcmp(gwr_layer_op(l), "MultiHeadAttention"))
                gwr_layer_attr_float(l, "scale", 0, &scale);
        }
        CHECK(scale == 0.25f);
        gwr_network_free(net);
    }
}

/* ---- the two stages apart: fuse_attention's ONNX Attention (opset 23) ---- */

/* attn_model(f) at opset 23, where ONNX Attention exists (batch 1 for
 * A_MASK_BIG, whose mask then grows the scores). */
static gwr_network *attn_model23(unsigned f) {
    gwr_network *net = attn_model_b(f, f & A_MASK_BIG ? 1 : B);
    if (net) gwr_network_set_opset(net, "", 23);
    return net;
}

/* fuse_attention alone (target onnx) must fire `n` times at opset 23 and
 * leave n ONNX Attention layers and no contrib op, computing what the
 * unfused graph computes (the executor's Attention kernel against its
 * MatMul/Softmax kernels). */
static void stage1_case(unsigned f, int n) {
    gwr_network *before = attn_model23(f), *net = attn_model23(f);
    if (!CHECK(before && net)) {
        gwr_network_free(before), gwr_network_free(net);
        return;
    }
    if (!CHECK_EQ_INT(run_pass(net, "fuse_attention", GWR_TARGET_ONNX), n)) fprintf(stderr, "  form %#x\n", f);
    CHECK_EQ_INT(count_dom(net, "", "Attention"), n);
    CHECK_EQ_INT(count_mha(net) + count_dom(net, "com.microsoft", "Attention"), 0);
    double d = max_diff(before, net, 5, 2.0, 0, NULL);
    if (!CHECK(d >= 0 && d <= pass_tolerance("fuse_attention"))) fprintf(stderr, "  form %#x: difference %g\n", f, d);
    gwr_network_free(before), gwr_network_free(net);
}

TEST(fuse_attention_stage1_alone) {
    static const unsigned forms[] = {0, A_SC_DIV, A_SC_Q | A_K_TWO, A_SC_QK, A_SC_NONE, A_SC_INSIDE | A_MASK_ADD,
                                     A_MASK_ADD, A_MASK_ADD4, A_MASK_KEYS, A_MASK_WHERE | A_FILL_MIN,
                                     A_MASK_WHERE | A_WHERE_HIDE, A_MASK_INPUT, A_SC_V, A_TWICE | A_MASK_ADD,
                                     /* not a head split: still one Attention at opset 23 (nothing to lower) */
                                     A_Q_PERM, A_SCQ_INPUT};
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) stage1_case(forms[i], forms[i] & A_TWICE ? 2 : 1);
    /* must not fire: a second reader of the scores or the probabilities, the
     * scores a network output, a computed scale on them, a mask that would
     * grow the scores, a Where fill that is not <= -1e30, v's heads not q's,
     * a Softmax over another axis, and (target onnx) a constant mask hiding
     * a whole row (-inf, float32's lowest, -1e9 in all of a row): NaN or
     * uniform weights unfused, zeros or the double kernel's weights in ONNX
     * Attention */
    static const unsigned idle[] = {A_SCORES_TWICE, A_SECOND, A_SCORES_OUT, A_SC_INPUT, A_MASK_BIG,
                                    A_MASK_WHERE | A_FILL_FINITE, A_HEADS, A_AXIS, A_MASK_ADD | A_FULL_ROW,
                                    A_MASK_WHERE | A_FULL_ROW, A_MASK_WHERE | A_FILL_MIN | A_FULL_ROW,
                                    A_MASK_ADD4 | A_FULL_ROW};
    for (size_t i = 0; i < sizeof idle / sizeof *idle; i++) stage1_case(idle[i], 0);
    /* below opset 23, target onnx: no Attention to write */
    gwr_network *net = attn_model(0);
    CHECK(net && run_pass(net, "fuse_attention", GWR_TARGET_ONNX) == 0 && count_dom(net, "", "Attention") == 0);
    gwr_network_free(net);
}

/* lower_attention per target on fuse_attention's output: ort and gwr get
 * MultiHeadAttention (or Attention for the Split form) with the outputs
 * kept; target onnx keeps the ONNX Attention (the pass does not serve it). */
TEST(lower_attention_per_target) {
    static const unsigned forms[] = {0, A_MASK_ADD | A_SC_DIV, A_MASK_WHERE | A_WHERE_HIDE, A_SC_INSIDE, A_MASK_INPUT,
                                     A_SPLIT, A_MASK_ADD | A_FULL_ROW};
    static const unsigned targets[] = {GWR_TARGET_ORT, GWR_TARGET_GWR};
    for (size_t t = 0; t < 2; t++)
        for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
            gwr_network *before = attn_model23(forms[i]), *net = attn_model23(forms[i]);
            if (!CHECK(before && net)) continue;
            CHECK_EQ_INT(run_pass(net, "fuse_attention", targets[t]), 1);
            CHECK_EQ_INT(count_dom(net, "", "Attention"), 1);
            if (!CHECK_EQ_INT(run_pass(net, "lower_attention", targets[t]), 1)) fprintf(stderr, "  form %#x\n", forms[i]);
            CHECK_EQ_INT(count_dom(net, "", "Attention"), 0);
            CHECK_EQ_INT(count_fused(net), 1);
            double d = max_diff(before, net, 7, 2.0, 0, NULL);
            if (!CHECK(d >= 0 && d <= pass_tolerance("lower_attention"))) fprintf(stderr, "  form %#x: %g\n", forms[i], d);
            gwr_network_free(before), gwr_network_free(net);
        }
    /* an Attention that is no head split stays (valid at opset 23) */
    gwr_network *net = attn_model23(A_Q_PERM);
    CHECK(net && run_stages_of(net, GWR_TARGET_ORT, "fuse_attention") == 1 && count_dom(net, "", "Attention") == 1);
    gwr_network_free(net);
    /* below opset 23 a fusion the lowering would refuse never starts */
    net = attn_model(A_SCQ_INPUT);
    CHECK(net && run_stages_of(net, GWR_TARGET_ORT, "fuse_attention") == 0 && count_dom(net, "", "Attention") == 0);
    gwr_network_free(net);
    /* target onnx: lower_attention is not for it; the whole optimizer keeps the ONNX Attention */
    net = attn_model23(A_MASK_ADD);
    gwr_optimize_options o = {.target = GWR_TARGET_ONNX, .level = GWR_LEVEL_ALL};
    CHECK(net && !gwr_optimize(net, &o, NULL) && count_dom(net, "", "Attention") == 1 && count_fused(net) == 0);
    gwr_network_free(net);
}

/* ---- the op: shape rule, kernel refusals, ONNX round trip ------------------ */

static gwr_layer *mha(gwr_network *net, int n, gwr_tensor *const *in, int64_t heads_, gwr_tensor **y) {
    gwr_args *a = gwr_args_new();
    if (heads_) gwr_args_set_int(a, "num_heads", heads_);
    gwr_layer *l = gwr_op_call(net, "com.microsoft", "MultiHeadAttention", n, in, a, 1, y);
    gwr_args_free(a);
    return l;
}

TEST(mha_shape_rule) {
    gwr_network *net = gwr_network_new("mha");
    int64_t qd[3] = {B, S, HID}, vd[3] = {B, 7, 24}, bd = 2 * HID + 24, ad[4] = {1, NH, S, 7};
    gwr_tensor *q = input(net, "q", 3, qd), *k = input(net, "k", 3, (int64_t[]){B, 7, HID}), *v = input(net, "v", 3, vd);
    gwr_tensor *bias = input(net, "bias", 1, &bd), *ab = input(net, "ab", 4, ad), *y = NULL;
    gwr_tensor *in[6] = {q, k, v, bias, NULL, ab};
    CHECK(mha(net, 6, in, NH, &y) != NULL);
    CHECK(y && gwr_tensor_rank(y) == 3 && gwr_tensor_dim(y, 0) == B && gwr_tensor_dim(y, 1) == S && gwr_tensor_dim(y, 2) == 24);
    /* bad input: a one-line error each */
    int64_t d2[2] = {S, HID}, bad_b = 7, d3[3] = {S, S, S};
    gwr_tensor *q2 = input(net, "q2", 2, d2), *b7 = input(net, "b7", 1, &bad_b), *ab3 = input(net, "ab3", 3, d3);
    gwr_tensor *qi = gwr_network_add_input(net, "qi", GWR_INT32, 3, (gwr_dim[]){B, S, HID});
    gwr_tensor *bad[][6] = {
        {q2, k, v, NULL, NULL, NULL}, /* rank 2 query */
        {q, k, v, b7, NULL, NULL},    /* bias of 7 */
        {q, k, v, NULL, NULL, ab3},   /* rank-3 attention_bias */
        {qi, k, v, NULL, NULL, NULL}, /* int query */
        {q, NULL, NULL, NULL, NULL, NULL}, /* no key or value */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        if (!CHECK(mha(net, 6, bad[i], NH, NULL) == NULL)) fprintf(stderr, "  bad case %zu accepted\n", i);
        else CHECK(strstr(gwr_network_errmsg(net), "MultiHeadAttention") != NULL);
    }
    CHECK(mha(net, 3, in, 0, NULL) == NULL);  /* num_heads missing */
    CHECK(mha(net, 3, in, 3, NULL) == NULL);  /* 16 is not a multiple of 3 */
    gwr_network_free(net);
}

static gwr_layer *ms_attention(gwr_network *net, gwr_tensor *x, gwr_tensor *w, const int64_t *sizes, gwr_tensor **y) {
    gwr_args *a = gwr_args_new();
    gwr_args_set_int(a, "num_heads", NH);
    if (sizes) gwr_args_set_ints(a, "qkv_hidden_sizes", 3, sizes);
    gwr_tensor *in[2] = {x, w};
    gwr_layer *l = gwr_op_call(net, "com.microsoft", "Attention", 2, in, a, 1, y);
    gwr_args_free(a);
    return l;
}

TEST(attention_shape_rule) {
    gwr_network *net = gwr_network_new("att");
    int64_t xd[3] = {B, S, HID}, wd[2] = {HID, 3 * HID}, w40[2] = {HID, 40}, w47[2] = {HID, 47}, x2[2] = {S, HID};
    gwr_tensor *x = input(net, "x", 3, xd), *w = input(net, "w", 2, wd), *y = NULL;
    CHECK(ms_attention(net, x, w, NULL, &y) && gwr_tensor_dim(y, 0) == B && gwr_tensor_dim(y, 1) == S &&
          gwr_tensor_dim(y, 2) == HID);
    static const int64_t sizes[3] = {HID, HID, 8};
    CHECK(ms_attention(net, x, input(net, "w40", 2, w40), sizes, &y) && gwr_tensor_dim(y, 2) == 8);
    CHECK(ms_attention(net, x, input(net, "w47", 2, w47), NULL, NULL) == NULL); /* 47 is not 3 x 2 heads */
    CHECK(ms_attention(net, input(net, "x2", 2, x2), w, NULL, NULL) == NULL);  /* rank-2 input */
    CHECK(ms_attention(net, x, input(net, "w40b", 2, w40), NULL, NULL) == NULL); /* 40 without sizes */
    CHECK(strstr(gwr_network_errmsg(net), "Attention") != NULL);
    gwr_network_free(net);
}

TEST(mha_kernel_refuses_unsupported_inputs) {
    gwr_network *net = gwr_network_new("mha");
    int64_t qd[3] = {1, 3, 4}, md[2] = {1, 3};
    gwr_tensor *q = input(net, "q", 3, qd);
    gwr_tensor *kpm = gwr_network_add_input(net, "kpm", GWR_INT32, 2, (gwr_dim[]){1, 3}), *y = NULL;
    gwr_tensor *in[5] = {q, q, q, NULL, kpm};
    CHECK(mha(net, 5, in, 2, &y) != NULL);
    gwr_network_mark_output(net, y);
    gwr_session *s = gwr_session_new_raw(net, NULL);
    gwr_value *qv = gwr_value_new(GWR_FLOAT32, 3, qd), *kv = gwr_value_new(GWR_INT32, 2, md), *out = NULL;
    const char *names[2] = {"q", "kpm"};
    gwr_value *ins[2] = {qv, kv};
    CHECK(s && gwr_session_run(s, 2, names, ins, 1, NULL, &out) != GWR_OK);
    if (s) CHECK(strstr(gwr_session_errmsg(s), "key_padding_mask") != NULL);
    gwr_session_free(s);
    gwr_value_release(qv), gwr_value_release(kv), gwr_value_release(out);
    gwr_network_free(net);
}

/* Saved and loaded back: the op, its domain and attributes, and the same
 * outputs. */
TEST(mha_onnx_round_trip) {
    gwr_network *net = attn_model(A_MASK_ADD | A_SC_DIV);
    if (!CHECK(net) || !CHECK_EQ_INT(run_stages(net, GWR_TARGET_ORT), 1)) {
        gwr_network_free(net);
        return;
    }
    const char *path = "test_attention_roundtrip.onnx";
    CHECK(gwr_onnx_save(net, path, NULL) == GWR_OK);
    gwr_network *back = gwr_onnx_load(path, NULL);
    if (CHECK(back)) {
        CHECK_EQ_INT(count_mha(back), 1);
        CHECK(gwr_network_opset(back, "com.microsoft") >= 1);
        for (int64_t i = 0; i < gwr_network_num_layers(back); i++) {
            gwr_layer *l = gwr_network_layer(back, i);
            if (strcmp(gwr_layer_op(l), "MultiHeadAttention")) continue;
            int64_t h = 0;
            float sc = 0;
            CHECK(!strcmp(gwr_layer_domain(l), "com.microsoft"));
            CHECK(!gwr_layer_attr_int(l, "num_heads", 0, &h) && h == NH);
            CHECK(!gwr_layer_attr_float(l, "scale", 0, &sc) && fabsf(sc - 1.0f / sqrtf(HD)) < 1e-7f);
        }
        CHECK(max_diff(net, back, 5, 1.0, 0, NULL) == 0);
    }
    remove(path);
    gwr_network_free(back);
    gwr_network_free(net);
}

/* ---- merge_qkv_matmuls --------------------------------------------------------- */

enum { Q_N2 = 1, Q_N4 = 2, Q_NOBIAS = 4, Q_MIXED = 8, Q_SHARED = 16, Q_NONCONST = 32, Q_OUTPUT = 64 };

static gwr_network *qkv_model(unsigned f) {
    rng_state = 31 + f;
    gwr_network *net = gwr_network_new("qkv");
    int64_t xd[3] = {B, S, HID}, wd[2] = {HID, 6}, bd = 6;
    gwr_tensor *x = input(net, "x", 3, xd), *y = NULL, *w0 = NULL;
    int n = f & Q_N2 ? 2 : f & Q_N4 ? 4 : 3;
    for (int i = 0; i < n; i++) {
        gwr_tensor *w = f & Q_NONCONST && i == 1 ? input(net, "w", 2, wd) : rconst(net, 2, wd, -0.5, 0.5);
        if (!w0) w0 = w;
        gwr_tensor *p = gwr_matmul(net, x, w);
        if (!(f & Q_NOBIAS) && !(f & Q_MIXED && i == 1)) p = gwr_add(net, rconst(net, 1, &bd, -1, 1), p);
        if (f & Q_OUTPUT && i == 0) gwr_network_mark_output(net, p);
        y = y ? gwr_add(net, y, gwr_relu(net, p)) : p;
    }
    if (f & Q_SHARED) y = gwr_add(net, y, gwr_matmul(net, gwr_relu(net, x), w0)); /* w0 read by a fourth MatMul of another input */
    gwr_network_mark_output(net, y);
    return net;
}

TEST(merge_qkv_fires) {
    static const unsigned forms[] = {0, Q_N4, Q_NOBIAS, Q_MIXED, Q_OUTPUT};
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        gwr_network *net = qkv_model(forms[i]), *copy = gwr_network_clone(net);
        CHECK_EQ_INT(run_pass(copy, "merge_qkv_matmuls", GWR_TARGET_ONNX), 1);
        gwr_network_prune(copy, NULL);
        CHECK_EQ_INT(count_op(copy, "MatMul"), 1);
        CHECK_EQ_INT(count_op(copy, "Split"), 1);
        CHECK_EQ_INT(count_op(copy, "Add"), (forms[i] & Q_NOBIAS ? 0 : 1) + (forms[i] & Q_N4 ? 3 : 2));
        gwr_network_free(copy);
        expect(net, "merge_qkv_matmuls", GWR_TARGET_ONNX, 1, 2.0);
    }
    /* idempotent: a second run finds one MatMul of x */
    gwr_network *net = qkv_model(0);
    CHECK_EQ_INT(run_pass(net, "merge_qkv_matmuls", GWR_TARGET_ONNX), 1);
    CHECK_EQ_INT(run_pass(net, "merge_qkv_matmuls", GWR_TARGET_ONNX), 0);
    gwr_network_free(net);
}

TEST(merge_qkv_idle) {
    static const unsigned forms[] = {Q_N2, Q_SHARED, Q_NONCONST};
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        gwr_network *net = qkv_model(forms[i]);
        if (!CHECK_EQ_INT(run_pass(net, "merge_qkv_matmuls", GWR_TARGET_ONNX), 0)) fprintf(stderr, "  form %#x\n", forms[i]);
        gwr_network_free(net);
    }
}

/* Both passes together, either order: the three projections merge, and
 * the merged form becomes one com.microsoft Attention. */
TEST(merge_then_attention) {
    static const unsigned forms[] = {0, A_NOBIAS, A_MASK_ADD | A_SC_Q};
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        gwr_network *net = attn_model(forms[i]), *before = gwr_network_clone(net);
        gwr_optimize_options o = {.only = "merge_qkv_matmuls,fuse_attention,lower_attention", .target = GWR_TARGET_ORT, .debug = 1};
        CHECK(!gwr_optimize(net, &o, NULL));
        gwr_network_prune(net, NULL);
        CHECK_EQ_INT(count_dom(net, "com.microsoft", "Attention"), 1);
        CHECK_EQ_INT(count_op(net, "MatMul") + count_op(net, "Split") + count_op(net, "Add") + count_mha(net), 0);
        double d = max_diff(before, net, 3, 2.0, 0, NULL);
        CHECK(d >= 0 && d <= pass_tolerance("fuse_attention"));
        gwr_network_free(before);
        gwr_network_free(net);
    }
}

int main(void) {
    RUN(fuse_attention_fires);
    RUN(fuse_attention_fully_masked_rows);
    RUN(fuse_attention_shares_the_mask);
    RUN(fuse_attention_idle);
    RUN(fuse_attention_takes_fused_matmul);
    RUN(fuse_attention_stage1_alone);
    RUN(lower_attention_per_target);
    RUN(mha_shape_rule);
    RUN(attention_shape_rule);
    RUN(mha_kernel_refuses_unsupported_inputs);
    RUN(mha_onnx_round_trip);
    RUN(merge_qkv_fires);
    RUN(merge_qkv_idle);
    RUN(merge_then_attention);
    return check_report();
}
