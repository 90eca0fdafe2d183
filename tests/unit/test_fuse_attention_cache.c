/* test_attention_cache.c - fuse_attention's KV-cache form and its
 * GroupQueryAttention lowering on hand-built decoder blocks (the form of
 * the Hugging Face exports: present = Concat(past, new, -2), repeat_kv's
 * Unsqueeze/Expand/Reshape, the shared bool mask M cut per block by
 * Slice(M, 0, T) and added as Where(M, 0, -inf), SDPA's IsNaN guard): where
 * it must fire (the outputs, Y and both presents, before and after on
 * gwr's executor within the pass's tolerance, target gwr at opset 23; one
 * GroupQueryAttention for target ort at the exporters' opset 17) and where
 * it must not. onnxruntime judges the real exports' fixtures in
 * tests/llm/attention_cache_ort.py. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "pass_test.h"

#define B 2
#define S 3
#define P 4
#define T (P + S)
#define HID 32
#define HD 8

enum {
    C_GQA = 1 << 0,      /* 4 query heads on 2 kv heads through repeat_kv (else 4 on 4, none) */
    C_NAN = 1 << 1,      /* SDPA's Where(IsNaN(p), 0, p) after the Softmax */
    C_ADDITIVE = 1 << 2, /* an additive float mask input (B, 1, S, T), no Where */
    C_NOSLICE = 1 << 3,  /* the mask not cut by a Slice */
    C_MQA = 1 << 4,      /* 1 kv head broadcast by the MatMuls (no repeat_kv) */
    C_MSROT = 1 << 5,    /* q and the new k through com.microsoft RotaryEmbedding (no shape rule: untyped) */
    /* must not fire */
    C_AXIS = 1 << 8,     /* the past Concat over the heads axis (P = S there) */
    C_KREAD = 1 << 9,    /* the repeated K also read by a network output */
    C_TILE = 1 << 10,    /* repeat by Unsqueeze(., [1]): head h reads kv head h % kvh */
    C_MASK_WIDE = 1 << 11, /* the mask (2, 1, S, T) against batch 1: the Add broadcasts the scores */
    C_MASK_RANK5 = 1 << 12, /* the mask (1, b, 1, S, T): the Add makes the scores rank 5 */
};

static gwr_tensor *heads(gwr_network *net, gwr_tensor *x, int64_t nh) {
    int64_t wd[2] = {HID, nh * HD}, shape[4] = {0, 0, nh, HD};
    static const int64_t p0213[4] = {0, 2, 1, 3};
    return gwr_transpose(net, gwr_reshape(net, gwr_matmul(net, x, rconst(net, 2, wd, -0.5, 0.5)), 4, shape), 4, p0213);
}

/* HF's repeat_kv of present (b, kvh, t, HD) to nh heads (C_TILE: the other order) */
static gwr_tensor *repeat(gwr_network *net, gwr_tensor *present, int64_t b, int64_t kvh, int64_t nh, int64_t t, unsigned f) {
    int64_t ax = f & C_TILE ? 1 : 2, e[5] = {b, kvh, nh / kvh, t, HD}, r[4] = {b, nh, t, HD};
    if (f & C_TILE) e[1] = nh / kvh, e[2] = kvh;
    return gwr_reshape(net, gwr_expand(net, gwr_unsqueeze(net, present, 1, &ax), 5, e), 4, r);
}

/* One block: y (b, S, HID) plus present key and value as outputs. */
static gwr_network *cache_model(unsigned f, int64_t opset) {
    rng_state = 4242 + f;
    int64_t b = f & C_MASK_WIDE ? 1 : B, nh = 4, kvh = f & C_GQA ? 2 : f & C_MQA ? 1 : 4, p = f & C_AXIS ? S : P, t = p + S;
    if (f & C_AXIS) kvh = 2;
    gwr_network *net = gwr_network_new("cache");
    gwr_network_set_opset(net, "", opset);
    gwr_dim xd[3] = {b, S, HID}, pd[4] = {b, kvh, p, HD}, ad[2] = {b, t}, md[5] = {f & C_MASK_WIDE ? 2 : b, 1, S, t};
    if (f & C_MASK_RANK5) md[0] = 1, md[1] = b, md[2] = 1, md[3] = S, md[4] = t;
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 3, xd);
    gwr_tensor *pk = gwr_network_add_input(net, "past_key", GWR_FLOAT32, 4, pd);
    gwr_tensor *pv = gwr_network_add_input(net, "past_value", GWR_FLOAT32, 4, pd);
    gwr_tensor *am = f & C_ADDITIVE ? gwr_network_add_input(net, "mask", GWR_FLOAT32, f & C_MASK_RANK5 ? 5 : 4, md)
                                    : gwr_network_add_input(net, "attention_mask", GWR_INT64, 2, ad);
    gwr_tensor *q = heads(net, x, nh), *kn = heads(net, x, kvh), *vn = heads(net, x, kvh);

    gwr_tensor *k = gwr_concat(net, 2, (gwr_tensor *[]){pk, kn}, f & C_AXIS ? 1 : -2);
    gwr_tensor *v = gwr_concat(net, 2, (gwr_tensor *[]){pv, vn}, f & C_AXIS ? 1 : -2);
    gwr_network_mark_output(net, k), gwr_network_mark_output(net, v);
    if (f & C_AXIS) kvh *= 2, t = S;
    gwr_tensor *kr = kvh != nh && kvh != 1 ? repeat(net, k, b, kvh, nh, t, f) : k;
    gwr_tensor *vr = kvh != nh && kvh != 1 ? repeat(net, v, b, kvh, nh, t, f) : v;
    if (f & C_KREAD) gwr_network_mark_output(net, gwr_relu(net, kr));
    static const int64_t p0132[4] = {0, 1, 3, 2}, p0213[4] = {0, 2, 1, 3};
    gwr_tensor *s = gwr_mul(net, gwr_matmul(net, q, gwr_transpose(net, kr, 4, p0132)), gwr_constant_f32(net, (float)(1 / sqrt(HD))));
    gwr_tensor *m = am;
    if (!(f & C_ADDITIVE)) {
        static const int64_t a12[2] = {1, 2};
        m = gwr_unsqueeze(net, gwr_cast(net, am, GWR_BOOL), 2, a12); /* M (b, 1, 1, T), shared */
    }
    if (!(f & C_NOSLICE)) {
        int64_t st = 0, en = t, ax = f & C_MASK_RANK5 ? 4 : 3;
        m = gwr_slice(net, m, 1, &st, &en, &ax, NULL);
    }
    if (!(f & C_ADDITIVE)) m = gwr_where(net, m, gwr_constant_f32(net, 0.0f), gwr_constant_f32(net, -INFINITY));
    gwr_tensor *pr = gwr_softmax(net, gwr_add(net, s, m), -1);
    if (f & C_NAN) {
        gwr_tensor *nan = NULL;
        gwr_op_call(net, "", "IsNaN", 1, &pr, NULL, 1, &nan);
        pr = gwr_where(net, nan, gwr_constant_f32(net, 0.0f), pr);
    }
    int64_t merged[3] = {0, 0, nh * HD};
    gwr_tensor *o = gwr_matmul(net, pr, vr), *y = f & C_MASK_RANK5 ? o : gwr_reshape(net, gwr_transpose(net, o, 4, p0213), 3, merged);
    if (y && f & C_MSROT) {
        /* fuse_rotary's form for target ort below opset 23 (cache rows by position ids), put in as
         * that pass does: the readers of q and k, typed, read the untyped rotation */
        int64_t pd2[2] = {b, S}, cd[2] = {b * S, HD / 2};
        gwr_tensor *pos = gwr_network_add_input(net, "position_ids", GWR_INT64, 2, pd2);
        gwr_tensor *cs = rconst(net, 2, cd, -1, 1), *sn = rconst(net, 2, cd, -1, 1), *r;
        for (int i = 0; i < 2; i++) {
            gwr_tensor *hx = i ? kn : q;
            gwr_layer *l = gwr_op_call(net, "com.microsoft", "RotaryEmbedding", 4, (gwr_tensor *[]){hx, pos, cs, sn}, NULL, 1, &r);
            if (!l || gwr_tensor_replace_all_uses_except(hx, r, l)) y = NULL;
        }
    }
    if (!y || gwr_network_mark_output(net, y)) {
        fprintf(stderr, "build %#x: %s\n", f, gwr_network_errmsg(net));
        gwr_network_free(net);
        return NULL;
    }
    return net;
}

/* Live layers of domain dom and op, and how many ONNX Attentions have a past */
static int64_t count_in(gwr_network *net, const char *dom, const char *op, int min_inputs) {
    int64_t n = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        n += !gwr_layer_is_removed(l) && !strcmp(gwr_layer_domain(l), dom) && !strcmp(gwr_layer_op(l), op) &&
             gwr_layer_num_inputs(l) >= min_inputs;
    }
    return n;
}

static int64_t run_both(gwr_network *net, unsigned target) {
    gwr_optimize_report *r = NULL;
    gwr_optimize_options o = {.only = "fuse_attention,lower_attention", .target = target, .debug = 1};
    gwr_status s = gwr_optimize(net, &o, &r);
    int64_t n = -1;
    for (int i = 0; !s && i < gwr_optimize_report_count(r); i++)
        if (!strcmp(gwr_optimize_report_pass(r, i)->label, "fuse_attention")) n = gwr_optimize_report_pass(r, i)->rewrites;
    if (s) fprintf(stderr, "gwr_optimize: %s\n", gwr_network_errmsg(net));
    gwr_optimize_report_free(r);
    return !s && gwr_network_verify(net) ? -1 : n;
}

/* Form f fuses into one Attention with a cache (target gwr, opset 23; the
 * outputs held) and one GroupQueryAttention (target ort, opset 17) when
 * `fires`, else into neither. */
static void cache_case(unsigned f, int fires) {
    gwr_network *net = cache_model(f, 23), *after = cache_model(f, 23), *ort = cache_model(f, 17);
    if (!CHECK(net && after && ort)) goto out;
    if (!CHECK_EQ_INT(run_both(after, GWR_TARGET_GWR), fires)) fprintf(stderr, "  form %#x (gwr)\n", f);
    gwr_network_prune(after, NULL);
    CHECK_EQ_INT(count_in(after, "", "Attention", 5), fires);
    if (fires) {
        CHECK_EQ_INT(count_op(after, "Softmax"), 0);
        for (unsigned seed = 1; seed <= 3; seed++) {
            double d = max_diff(net, after, seed * 7919u, 2.0, 0, NULL);
            if (!CHECK(d >= 0 && d <= pass_tolerance("fuse_attention"))) fprintf(stderr, "  form %#x: difference %g\n", f, d);
        }
    }
    int64_t n = run_both(ort, GWR_TARGET_ORT);
    gwr_network_prune(ort, NULL);
    int64_t gqa = count_in(ort, "com.microsoft", "GroupQueryAttention", 7);
    /* an additive mask input is no attention_mask: GroupQueryAttention cannot be had, nor (below 23) the fusion */
    int want = fires && !(f & C_ADDITIVE);
    if (!CHECK_EQ_INT(n, want) || !CHECK_EQ_INT(gqa, want)) fprintf(stderr, "  form %#x (ort)\n", f);
    if (want) CHECK_EQ_INT(count_in(ort, "", "Attention", 1) + count_op(ort, "Softmax") + count_op(ort, "Transpose"), 0);
out:
    gwr_network_free(net), gwr_network_free(after), gwr_network_free(ort);
}

TEST(cache_attention_fires) {
    cache_case(C_GQA | C_NAN, 1);
    cache_case(C_GQA, 1);
    cache_case(0, 1);
    cache_case(C_NAN, 1);
    cache_case(C_MQA | C_NAN, 1);
    cache_case(C_GQA | C_NAN | C_NOSLICE, 1);
    cache_case(C_GQA | C_ADDITIVE, 1);
    cache_case(C_ADDITIVE | C_NOSLICE, 1);
}

TEST(cache_attention_must_not_fire) {
    cache_case(C_GQA | C_NAN | C_AXIS, 0);
    cache_case(C_GQA | C_NAN | C_KREAD, 0);
    cache_case(C_GQA | C_NAN | C_TILE, 0);
    cache_case(C_GQA | C_ADDITIVE | C_MASK_WIDE, 0);
    cache_case(C_GQA | C_ADDITIVE | C_MASK_RANK5, 0);
}

/* q and the new k from onnxruntime's RotaryEmbedding (left untyped by gwr: no shape rule): the
 * fusion types them as their inputs and fires for target ort; the rotary moves onto the
 * (B, S, N*D) side of GroupQueryAttention's query and key with num_heads. */
TEST(cache_attention_contrib_rotary) {
    gwr_network *net = cache_model(C_GQA | C_NAN | C_MSROT, 17);
    if (!CHECK(net)) return;
    CHECK_EQ_INT(run_both(net, GWR_TARGET_ORT), 1);
    gwr_network_prune(net, NULL);
    CHECK_EQ_INT(count_in(net, "com.microsoft", "GroupQueryAttention", 7), 1);
    int moved = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        int64_t nh = 0;
        if (gwr_layer_is_removed(l) || strcmp(gwr_layer_op(l), "RotaryEmbedding")) continue;
        gwr_layer_attr_int(l, "num_heads", 0, &nh);
        moved += gwr_tensor_rank(gwr_layer_input(l, 0)) == 3 && (nh == 4 || nh == 2);
    }
    CHECK_EQ_INT(moved, 2);
    CHECK_EQ_INT(count_op(net, "Transpose"), 0);
    gwr_network_free(net);
}

int main(void) {
    RUN(cache_attention_fires);
    RUN(cache_attention_must_not_fire);
    RUN(cache_attention_contrib_rotary);
    return check_report();
}
