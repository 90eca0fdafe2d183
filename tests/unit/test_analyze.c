/* test_analyze.c - the built-in analyses (gwr/analyze.h) and the analysis
 * manager they run in. Every expected number is computed by hand in the
 * comment next to it, from the conventions of docs/api.md ("Analysis"). */
#include <stdlib.h>
#include <string.h>

#include "gwr/gwr.h"
#include "unit/check.h"

static gwr_tensor *input(gwr_network *net, const char *name, int rank, const gwr_dim *dims) {
    return gwr_network_add_input(net, name, GWR_FLOAT32, rank, dims);
}

/* The cost of the layer producing t. */
static const gwr_layer_cost *cost_of(const gwr_analysis *a, const gwr_tensor *t) {
    gwr_layer *l = gwr_tensor_parent(t);
    for (int64_t i = 0; i < gwr_analysis_num_layers(a); i++)
        if (gwr_analysis_layer_cost(a, i)->layer == l) return gwr_analysis_layer_cost(a, i);
    return NULL;
}

/* ---- FLOPs and bytes ----------------------------------------------------- */

TEST(matmul_cost) {
    gwr_network *net = gwr_network_new("mm");
    gwr_dim da[2] = {2, 3}, db[2] = {3, 4};
    gwr_tensor *a = input(net, "a", 2, da), *b = input(net, "b", 2, db);
    gwr_tensor *y = gwr_matmul(net, a, b); /* [2,4] */
    /* Broadcast batch: [5,1,2,3] x [4,3,6] -> [5,4,2,6]. */
    gwr_dim dc[4] = {5, 1, 2, 3}, dd[3] = {4, 3, 6};
    gwr_tensor *y2 = gwr_matmul(net, input(net, "c", 4, dc), input(net, "d", 3, dd));
    /* A 1-D left operand: [3] x [3,4] -> [4]. */
    gwr_dim de[1] = {3};
    gwr_tensor *y3 = gwr_matmul(net, input(net, "e", 1, de), b);
    gwr_network_mark_output(net, y);
    gwr_network_mark_output(net, y2);
    gwr_network_mark_output(net, y3);
    gwr_analysis *an = gwr_analyze_network(net, NULL);
    if (!CHECK(an)) {
        fprintf(stderr, "%s\n", gwr_network_errmsg(net));
        gwr_network_free(net);
        return;
    }
    const gwr_layer_cost *c = cost_of(an, y);
    if (CHECK(c)) {
        CHECK_EQ_INT(c->flops, 48);         /* 2*M*N*K = 2*2*4*3 */
        CHECK_EQ_INT(c->bytes_read, 72);    /* (6 + 12) floats */
        CHECK_EQ_INT(c->bytes_written, 32); /* 8 floats */
        CHECK_EQ_INT(c->known, 1);
    }
    c = cost_of(an, y2);
    if (CHECK(c)) CHECK_EQ_INT(c->flops, 1440); /* batch 5*4=20: 2*20*2*6*3 */
    c = cost_of(an, y3);
    if (CHECK(c)) CHECK_EQ_INT(c->flops, 24); /* M=1: 2*1*4*3 */
    gwr_cost_totals t;
    CHECK_OK(gwr_analysis_totals(an, &t));
    CHECK_EQ_INT(t.layers, 3);
    CHECK_EQ_INT(t.known_layers, 3);
    CHECK_EQ_INT(t.flops, 48 + 1440 + 24);
    /* y2: reads 30 + 72 floats, writes 240; y3: reads 3 + 12, writes 4. */
    CHECK_EQ_INT(t.bytes_read, 72 + 4 * (30 + 72) + 4 * (3 + 12));
    CHECK_EQ_INT(t.bytes_written, 32 + 4 * 240 + 4 * 4);
    gwr_analysis_free(an);
    gwr_network_free(net);
}

TEST(gemm_cost) {
    gwr_network *net = gwr_network_new("gemm");
    gwr_dim da[2] = {4, 8}, db[2] = {16, 8}, dc[1] = {16};
    gwr_tensor *y = gwr_gemm(net, input(net, "a", 2, da), input(net, "b", 2, db), input(net, "c", 1, dc), 1.0f,
                             1.0f, 0, 1);
    gwr_dim da2[2] = {8, 4}, db2[2] = {8, 16};
    gwr_tensor *y0 = gwr_gemm(net, input(net, "a2", 2, da2), input(net, "b2", 2, db2), NULL, 1.0f, 1.0f, 1, 0);
    gwr_network_mark_output(net, y);
    gwr_network_mark_output(net, y0);
    gwr_analysis *an = gwr_analyze_network(net, NULL);
    if (!CHECK(an)) {
        gwr_network_free(net);
        return;
    }
    const gwr_layer_cost *c = cost_of(an, y);
    /* transB: B [16,8] is [N,K]: M=4, K=8, N=16: 2*4*16*8 = 1024, + C: 4*16 = 64. */
    if (CHECK(c)) CHECK_EQ_INT(c->flops, 1088);
    c = cost_of(an, y0);
    /* transA: A [8,4] is [K,M]: M=4, K=8, N=16: 2*4*16*8, no C. */
    if (CHECK(c)) CHECK_EQ_INT(c->flops, 1024);
    gwr_analysis_free(an);
    gwr_network_free(net);
}

TEST(conv_cost) {
    gwr_network *net = gwr_network_new("conv");
    /* x [1,3,8,8], w [4,3,3,3], b [4], pads 1: y [1,4,8,8] = 256 elements. */
    gwr_dim dx[4] = {1, 3, 8, 8}, dw[4] = {4, 3, 3, 3}, dbias[1] = {4};
    int64_t pads[4] = {1, 1, 1, 1};
    gwr_conv_params p = {.nspatial = 2, .pads = pads};
    gwr_tensor *y = gwr_conv(net, input(net, "x", 4, dx), input(net, "w", 4, dw), input(net, "b", 1, dbias), &p);
    /* Grouped: x [1,4,6,6], w [8,2,3,3], group 2: y [1,8,4,4] = 128 elements. */
    gwr_dim gx[4] = {1, 4, 6, 6}, gw[4] = {8, 2, 3, 3};
    gwr_conv_params pg = {.nspatial = 2, .group = 2};
    gwr_tensor *yg = gwr_conv(net, input(net, "gx", 4, gx), input(net, "gw", 4, gw), NULL, &pg);
    /* ConvTranspose: x [1,2,3,3], w [2,3,2,2] (Cin 2, Cout 3, kernel 2x2): y [1,3,4,4]. */
    gwr_dim tx[4] = {1, 2, 3, 3}, tw[4] = {2, 3, 2, 2};
    gwr_tensor *yt = gwr_conv_transpose(net, input(net, "tx", 4, tx), input(net, "tw", 4, tw), NULL, NULL);
    if (!CHECK(y && yg && yt)) {
        fprintf(stderr, "%s\n", gwr_network_errmsg(net));
        gwr_network_free(net);
        return;
    }
    CHECK_EQ_INT(gwr_tensor_dim(y, 3), 8);
    CHECK_EQ_INT(gwr_tensor_dim(yg, 3), 4);
    CHECK_EQ_INT(gwr_tensor_dim(yt, 3), 4);
    gwr_network_mark_output(net, y);
    gwr_network_mark_output(net, yg);
    gwr_network_mark_output(net, yt);
    gwr_analysis *an = gwr_analyze_network(net, NULL);
    if (!CHECK(an)) {
        gwr_network_free(net);
        return;
    }
    const gwr_layer_cost *c = cost_of(an, y);
    /* 2 * N*Cout*H*W * Cin/group * kh*kw = 2*256*27 = 13824, + bias 256. */
    if (CHECK(c)) {
        CHECK_EQ_INT(c->flops, 14080);
        CHECK_EQ_INT(c->bytes_read, 4 * (192 + 108 + 4));
        CHECK_EQ_INT(c->bytes_written, 4 * 256);
    }
    c = cost_of(an, yg);
    if (CHECK(c)) CHECK_EQ_INT(c->flops, 4608); /* 2*128*(2*3*3) */
    c = cost_of(an, yt);
    if (CHECK(c)) CHECK_EQ_INT(c->flops, 432); /* 2 * numel(x)=18 * (3*2*2) */
    gwr_analysis_free(an);
    gwr_network_free(net);
}

/* DeformConv (issue 22): x [1,4,8,8], w [6,2,3,3] group 2, offset
 * [1,18,6,6], bias [6], mask [1,9,6,6]: y [1,6,6,6] = 216 elements. */
TEST(deform_conv_cost) {
    gwr_network *net = gwr_network_new("deform");
    gwr_dim dx[4] = {1, 4, 8, 8}, dw[4] = {6, 2, 3, 3}, doff[4] = {1, 18, 6, 6}, db[1] = {6}, dm[4] = {1, 9, 6, 6};
    gwr_tensor *in[5] = {input(net, "x", 4, dx), input(net, "w", 4, dw), input(net, "off", 4, doff), input(net, "b", 1, db),
                         input(net, "m", 4, dm)},
               *y = NULL, *y3 = NULL;
    gwr_args *a = gwr_args_new();
    gwr_args_set_int(a, "group", 2);
    CHECK(gwr_op_call(net, "", "DeformConv", 5, in, a, 1, &y));
    CHECK(gwr_op_call(net, "", "DeformConv", 3, in, a, 1, &y3));
    gwr_args_free(a);
    if (!CHECK(y && y3)) {
        fprintf(stderr, "%s\n", gwr_network_errmsg(net));
        gwr_network_free(net);
        return;
    }
    gwr_network_mark_output(net, y);
    gwr_network_mark_output(net, y3);
    gwr_analysis *an = gwr_analyze_network(net, NULL);
    if (!CHECK(an)) {
        gwr_network_free(net);
        return;
    }
    /* the conv: 2 * 216 * (2*3*3) = 7776, + bias 216; the samples: 36
     * positions * (4 channels * 9 taps) = 1296, 9 flops each with the mask
     * (11664), 8 without (10368) */
    const gwr_layer_cost *c = cost_of(an, y);
    if (CHECK(c)) CHECK_EQ_INT(c->flops, 7776 + 216 + 11664);
    c = cost_of(an, y3);
    if (CHECK(c)) CHECK_EQ_INT(c->flops, 7776 + 10368);
    gwr_analysis_free(an);
    gwr_network_free(net);
}

TEST(elementwise_norm_softmax_reduce_pool) {
    gwr_network *net = gwr_network_new("misc");
    gwr_dim d23[2] = {2, 3}, d3[1] = {3}, d25[2] = {2, 5}, d24[2] = {2, 4}, d4[1] = {4}, d34[2] = {3, 4};
    gwr_tensor *sum = gwr_add(net, input(net, "a", 2, d23), input(net, "b", 1, d3)); /* [2,3] */
    gwr_tensor *act = gwr_relu(net, sum);
    gwr_tensor *sm = gwr_softmax(net, input(net, "s", 2, d25), -1);
    gwr_tensor *ln = gwr_layer_norm(net, input(net, "l", 2, d24), input(net, "g", 1, d4), NULL, -1, 1e-5f);
    gwr_tensor *rs = gwr_reduce_sum(net, input(net, "r", 2, d34), 0, NULL, 0);
    gwr_dim dp[4] = {1, 2, 4, 4};
    int64_t k[2] = {2, 2}, st[2] = {2, 2};
    gwr_conv_params pp = {.nspatial = 2, .kernel = k, .strides = st};
    gwr_tensor *mp = gwr_max_pool(net, input(net, "p", 4, dp), &pp);                /* [1,2,2,2] */
    gwr_tensor *gp = gwr_global_avg_pool(net, input(net, "q", 4, dp));             /* [1,2,1,1] */
    gwr_tensor *xs[3] = {sum, act, sum};
    gwr_layer *suml = gwr_op_call(net, "", "Sum", 3, xs, NULL, 1, NULL);          /* [2,3], 3 inputs */
    if (!CHECK(act && sm && ln && rs && mp && gp && suml)) {
        fprintf(stderr, "%s\n", gwr_network_errmsg(net));
        gwr_network_free(net);
        return;
    }
    gwr_tensor *outs[] = {act, sm, ln, rs, mp, gp, gwr_layer_output(suml, 0)};
    for (size_t i = 0; i < sizeof outs / sizeof *outs; i++) gwr_network_mark_output(net, outs[i]);
    gwr_analysis *an = gwr_analyze_network(net, NULL);
    if (!CHECK(an)) {
        gwr_network_free(net);
        return;
    }
    const gwr_layer_cost *c;
    if (CHECK(c = cost_of(an, sum))) CHECK_EQ_INT(c->flops, 6); /* one per output element */
    if (CHECK(c = cost_of(an, act))) CHECK_EQ_INT(c->flops, 6);
    if (CHECK(c = cost_of(an, sm))) CHECK_EQ_INT(c->flops, 50); /* 5 * 10 */
    if (CHECK(c = cost_of(an, ln))) CHECK_EQ_INT(c->flops, 40); /* 5 * 8 */
    if (CHECK(c = cost_of(an, rs))) CHECK_EQ_INT(c->flops, 12); /* input elements */
    if (CHECK(c = cost_of(an, mp))) CHECK_EQ_INT(c->flops, 32); /* 8 outputs * 2*2 kernel */
    if (CHECK(c = cost_of(an, gp))) CHECK_EQ_INT(c->flops, 32); /* input elements */
    if (CHECK(c = cost_of(an, gwr_layer_output(suml, 0)))) {
        CHECK_EQ_INT(c->flops, 12);        /* 3 inputs: 2 per output element */
        CHECK_EQ_INT(c->bytes_read, 48);   /* sum and act once each: 2 * 6 floats */
        CHECK_EQ_INT(c->bytes_written, 24);
    }
    gwr_analysis_free(an);
    gwr_network_free(net);
}

static gwr_tensor *attention(gwr_network *net, gwr_tensor *qkv, gwr_tensor *bias, int rp) {
    gwr_args *args = gwr_args_new();
    gwr_args_set_tensor(args, "qkv", qkv);
    gwr_args_set_tensor(args, "qkv_bias", bias);
    gwr_args_set_int(args, "num_heads", 4);
    gwr_args_set_int(args, "head_size", 16);
    gwr_args_set_int(args, "remove_padding", rp);
    gwr_tensor *outs[2] = {NULL, NULL};
    int n = 0;
    gwr_status s = gwr_call(net, GWR_GPT_ATTENTION, args, outs, 2, &n);
    gwr_args_free(args);
    return s ? NULL : outs[0];
}

TEST(attention_cost) {
    gwr_network *net = gwr_network_new("attn");
    gwr_dim dq[3] = {2, 16, 192}, dp[3] = {1, 32, 192};
    gwr_tensor *ctx = attention(net, input(net, "qkv", 3, dq), NULL, 0);
    float bias[192] = {0};
    int64_t nb = 192;
    gwr_tensor *ctxb = attention(net, input(net, "qkv2", 3, dq), gwr_constant(net, GWR_FLOAT32, 1, &nb, bias), 0);
    gwr_tensor *ctxp = attention(net, input(net, "packed", 3, dp), NULL, 1);
    if (!CHECK(ctx && ctxb && ctxp)) {
        fprintf(stderr, "%s\n", gwr_network_errmsg(net));
        gwr_network_free(net);
        return;
    }
    gwr_network_mark_output(net, ctx);
    gwr_network_mark_output(net, ctxb);
    gwr_network_mark_output(net, ctxp);
    gwr_analysis *an = gwr_analyze_network(net, NULL);
    if (!CHECK(an)) {
        gwr_network_free(net);
        return;
    }
    /* b=2, h=4, s=16, d=16: scores b*h*s*s = 2048; QK^T + PV = 4*2048*16 =
     * 131072; softmax 5*2048 = 10240. */
    const gwr_layer_cost *c;
    if (CHECK(c = cost_of(an, ctx))) {
        CHECK_EQ_INT(c->flops, 141312);
        CHECK_EQ_INT(c->known, 1);
    }
    /* + the bias: b*s*3*h*d = 2*16*192 = 6144. */
    if (CHECK(c = cost_of(an, ctxb))) CHECK_EQ_INT(c->flops, 147456);
    /* remove_padding, no "seq": the 32 tokens as one sequence: scores
     * 4*32*32 = 4096: 4*4096*16 + 5*4096 = 282624, not known. */
    if (CHECK(c = cost_of(an, ctxp))) {
        CHECK_EQ_INT(c->flops, 282624);
        CHECK_EQ_INT(c->known, 0);
    }
    gwr_analysis_free(an);
    /* seq = 16 splits the 32 tokens into 2 sequences: as ctx. */
    gwr_args *dims = gwr_args_new();
    gwr_args_set_int(dims, "seq", 16);
    an = gwr_analyze_network(net, dims);
    if (CHECK(an) && CHECK(c = cost_of(an, ctxp))) {
        CHECK_EQ_INT(c->flops, 141312);
        CHECK_EQ_INT(c->known, 1);
        CHECK_EQ_INT(gwr_analysis_num_unused(an), 0); /* the plugin read it */
    }
    gwr_analysis_free(an);
    /* seq = 5 does not divide 32: one sequence again. */
    gwr_args_set_int(dims, "seq", 5);
    an = gwr_analyze_network(net, dims);
    if (CHECK(an) && CHECK(c = cost_of(an, ctxp))) CHECK_EQ_INT(c->flops, 282624);
    gwr_analysis_free(an);
    gwr_args_free(dims);
    gwr_network_free(net);
}

/* ONNX Attention (opset 23), 3-D: Q (2, 16, 4 heads * 16), K (2, 8, 2 heads
 * * 16), V (2, 8, 2 heads * 24) after a past of 4: t = 12 keys, scores
 * 2*4*16*12 = 1536; QK^T + PV = 2*1536*(16 + 24) = 122880; softmax 5*1536 =
 * 7680. 4-D Q (1, 2, 3, 8), K and V (1, 2, 5, 8), no past: scores 30, 2*30*16
 * + 5*30 = 1110. Shapes from the shape rule. */
TEST(onnx_attention_cost) {
    gwr_network *net = gwr_network_new("attn23");
    gwr_dim dq[3] = {2, 16, 64}, dk[3] = {2, 8, 32}, dv[3] = {2, 8, 48}, dpk[4] = {2, 2, 4, 16}, dpv[4] = {2, 2, 4, 24};
    gwr_dim q4[4] = {1, 2, 3, 8}, k4[4] = {1, 2, 5, 8};
    gwr_tensor *in[6] = {input(net, "q", 3, dq), input(net, "k", 3, dk), input(net, "v", 3, dv), NULL,
                         input(net, "pk", 4, dpk), input(net, "pv", 4, dpv)};
    gwr_tensor *in4[3] = {input(net, "q4", 4, q4), input(net, "k4", 4, k4), input(net, "v4", 4, k4)};
    gwr_layer *l = gwr_network_add_layer(net, "Attention", "", "A3", 6, in, 1, NULL);
    gwr_layer *l4 = gwr_network_add_layer(net, "Attention", "", "A4", 3, in4, 1, NULL);
    if (!CHECK(l && l4)) {
        gwr_network_free(net);
        return;
    }
    gwr_layer_set_int(l, "q_num_heads", 4);
    gwr_layer_set_int(l, "kv_num_heads", 2);
    /* the shape rule: Y (2, 16, 4 * 24) and (1, 2, 3, 8) */
    CHECK_EQ_INT(gwr_layer_infer(l), GWR_OK);
    CHECK_EQ_INT(gwr_layer_infer(l4), GWR_OK);
    CHECK(gwr_tensor_rank(gwr_layer_output(l, 0)) == 3 && gwr_tensor_dims(gwr_layer_output(l, 0))[2] == 96);
    CHECK(gwr_tensor_rank(gwr_layer_output(l4, 0)) == 4 && gwr_tensor_dims(gwr_layer_output(l4, 0))[3] == 8);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    gwr_network_mark_output(net, gwr_layer_output(l4, 0));
    gwr_analysis *an = gwr_analyze_network(net, NULL);
    const gwr_layer_cost *c;
    if (CHECK(an) && CHECK(c = cost_of(an, gwr_layer_output(l, 0)))) {
        CHECK_EQ_INT(c->flops, 130560);
        CHECK_EQ_INT(c->known, 1);
    }
    if (an && CHECK(c = cost_of(an, gwr_layer_output(l4, 0)))) CHECK_EQ_INT(c->flops, 1110);
    gwr_analysis_free(an);
    gwr_network_free(net);
}

/* The opset 24-28 ops (helper opsa), FLOPs counted by hand from
 * docs/api.md's rules, shapes from their shape rules:
 * LinearAttention gated_delta, query (2, 5, 4 heads * 3), key (2, 5, 2 * 3),
 * value (2, 5, 2 * 2), decay and beta: dk*dv = 6, per token 2 kv heads *
 * (2 + 1 + 2) * 6 + 4 query heads * 2 * 6 = 108, 10 tokens: 1080; output
 * (2, 5, 8), present_state (2, 2, 3, 2).
 * CausalConvWithState silu with a bias, x (2, 3, 5), weight (3, 1, 4): 2 *
 * 30 * 4 + 30 + 4 * 30 = 390; present_state (2, 3, 3).
 * FlexAttention Q (1, 4, 3, 5), K (1, 2, 6, 5), V (1, 2, 6, 7): 72 scores, 2
 * * 72 * 12 + 5 * 72 = 2088; Y (1, 4, 3, 7).
 * Swish (3, 5): 15; SwiGLU (2, 7): 14; TensorScatter: 0. */
TEST(state_ops_cost) {
    gwr_network *net = gwr_network_new("opsa");
    gwr_dim dq[3] = {2, 5, 12}, dk[3] = {2, 5, 6}, dv[3] = {2, 5, 4}, dg[3] = {2, 5, 2};
    gwr_dim dx[3] = {2, 3, 5}, dw[3] = {3, 1, 4}, db[1] = {3};
    gwr_dim fq[4] = {1, 4, 3, 5}, fk[4] = {1, 2, 6, 5}, fv[4] = {1, 2, 6, 7};
    gwr_dim ds[2] = {3, 5}, dsg[2] = {2, 7}, dc[4] = {2, 2, 6, 4}, du[4] = {2, 2, 1, 4};
    gwr_tensor *la_in[6] = {input(net, "q", 3, dq), input(net, "k", 3, dk), input(net, "v", 3, dv), NULL,
                            input(net, "g", 3, dg), input(net, "beta", 3, dg)};
    gwr_tensor *cc_in[3] = {input(net, "x", 3, dx), input(net, "w", 3, dw), input(net, "b", 1, db)};
    gwr_tensor *fa_in[3] = {input(net, "fq", 4, fq), input(net, "fk", 4, fk), input(net, "fv", 4, fv)};
    gwr_tensor *sw_in[1] = {input(net, "s", 2, ds)}, *sg_in[2] = {input(net, "ga", 2, dsg), input(net, "gb", 2, dsg)};
    gwr_tensor *ts_in[2] = {input(net, "cache", 4, dc), input(net, "upd", 4, du)};
    gwr_layer *la = gwr_network_add_layer(net, "LinearAttention", "", "LA", 6, la_in, 2, NULL);
    gwr_layer *cc = gwr_network_add_layer(net, "CausalConvWithState", "", "CC", 3, cc_in, 2, NULL);
    gwr_layer *fa = gwr_network_add_layer(net, "FlexAttention", "ai.onnx.preview", "FA", 3, fa_in, 1, NULL);
    gwr_layer *sw = gwr_network_add_layer(net, "Swish", "", "SW", 1, sw_in, 1, NULL);
    gwr_layer *sg = gwr_network_add_layer(net, "SwiGLU", "", "SG", 2, sg_in, 1, NULL);
    gwr_layer *ts = gwr_network_add_layer(net, "TensorScatter", "", "TS", 2, ts_in, 1, NULL);
    if (!CHECK(la && cc && fa && sw && sg && ts)) {
        gwr_network_free(net);
        return;
    }
    gwr_layer_set_int(la, "q_num_heads", 4);
    gwr_layer_set_int(la, "kv_num_heads", 2);
    gwr_layer_set_string(cc, "activation", "silu");
    gwr_layer *all[6] = {la, cc, fa, sw, sg, ts};
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(gwr_layer_infer(all[i]), GWR_OK);
    const gwr_dim *d = gwr_tensor_dims(gwr_layer_output(la, 0));
    CHECK(gwr_tensor_rank(gwr_layer_output(la, 0)) == 3 && d[0] == 2 && d[1] == 5 && d[2] == 8);
    d = gwr_tensor_dims(gwr_layer_output(la, 1));
    CHECK(gwr_tensor_rank(gwr_layer_output(la, 1)) == 4 && d[0] == 2 && d[1] == 2 && d[2] == 3 && d[3] == 2);
    d = gwr_tensor_dims(gwr_layer_output(cc, 1));
    CHECK(gwr_tensor_rank(gwr_layer_output(cc, 1)) == 3 && d[0] == 2 && d[1] == 3 && d[2] == 3);
    d = gwr_tensor_dims(gwr_layer_output(fa, 0));
    CHECK(gwr_tensor_rank(gwr_layer_output(fa, 0)) == 4 && d[1] == 4 && d[2] == 3 && d[3] == 7);
    d = gwr_tensor_dims(gwr_layer_output(ts, 0));
    CHECK(gwr_tensor_rank(gwr_layer_output(ts, 0)) == 4 && d[2] == 6);
    for (int i = 0; i < 6; i++) gwr_network_mark_output(net, gwr_layer_output(all[i], 0));
    gwr_network_mark_output(net, gwr_layer_output(la, 1));
    gwr_network_mark_output(net, gwr_layer_output(cc, 1));
    gwr_analysis *an = gwr_analyze_network(net, NULL);
    static const int64_t want[6] = {1080, 390, 2088, 15, 14, 0};
    const gwr_layer_cost *c;
    for (int i = 0; an && i < 6; i++)
        if (CHECK(c = cost_of(an, gwr_layer_output(all[i], 0)))) {
            CHECK_EQ_INT(c->flops, want[i]);
            CHECK_EQ_INT(c->known, 1);
        }
    CHECK(an != NULL);
    gwr_analysis_free(an);
    gwr_network_free(net);
}

/* A known contradiction is a shape-rule error, not a guess: SwiGLU's A and B
 * of two shapes, LinearAttention's heads that do not divide, a
 * CausalConvWithState weight of other channels, a TensorScatter update
 * longer than the cache. */
TEST(state_ops_shape_errors) {
    gwr_network *net = gwr_network_new("opsa_bad");
    gwr_dim a[2] = {2, 7}, b[2] = {1, 7}, q[3] = {1, 2, 12}, x[3] = {1, 3, 5}, w[3] = {4, 1, 2}, c[3] = {1, 6, 4},
            u[3] = {1, 7, 4};
    gwr_tensor *sg_in[2] = {input(net, "a", 2, a), input(net, "b", 2, b)};
    gwr_tensor *la_in[3] = {input(net, "q", 3, q), input(net, "k", 3, q), input(net, "v", 3, q)};
    gwr_tensor *cc_in[2] = {input(net, "x", 3, x), input(net, "w", 3, w)};
    gwr_tensor *ts_in[2] = {input(net, "c", 3, c), input(net, "u", 3, u)};
    gwr_layer *sg = gwr_network_add_layer(net, "SwiGLU", "", "SG", 2, sg_in, 1, NULL);
    gwr_layer *la = gwr_network_add_layer(net, "LinearAttention", "", "LA", 3, la_in, 2, NULL);
    gwr_layer *cc = gwr_network_add_layer(net, "CausalConvWithState", "", "CC", 2, cc_in, 2, NULL);
    gwr_layer *ts = gwr_network_add_layer(net, "TensorScatter", "", "TS", 2, ts_in, 1, NULL);
    if (!CHECK(sg && la && cc && ts)) {
        gwr_network_free(net);
        return;
    }
    gwr_layer_set_int(la, "q_num_heads", 3);
    gwr_layer_set_int(la, "kv_num_heads", 2);
    CHECK_EQ_INT(gwr_layer_infer(sg), GWR_ERR_SHAPE);
    CHECK_EQ_INT(gwr_layer_infer(la), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_layer_infer(cc), GWR_ERR_SHAPE);
    CHECK_EQ_INT(gwr_layer_infer(ts), GWR_ERR_SHAPE);
    gwr_network_free(net);
}

/* ---- histogram and parameters --------------------------------------------- */

TEST(op_histogram) {
    gwr_network *net = gwr_network_new("hist");
    gwr_dim d[1] = {4};
    gwr_tensor *a = input(net, "a", 1, d), *b = input(net, "b", 1, d);
    gwr_tensor *s = gwr_add(net, a, b);
    gwr_tensor *r = gwr_relu(net, s);
    gwr_tensor *m = gwr_mul(net, r, gwr_constant_f32(net, 2.0f));
    gwr_tensor *s2 = gwr_add(net, m, a);
    gwr_tensor *custom = NULL;
    gwr_op_call(net, "com.x", "Foo", 1, &s2, NULL, 1, &custom);
    gwr_tensor *dead = gwr_relu(net, a);
    gwr_layer_mark_as_removed(gwr_tensor_parent(dead)); /* removed layers are not counted */
    gwr_network_mark_output(net, custom);
    gwr_analysis *an = gwr_analyze_network(net, NULL);
    if (!CHECK(an)) {
        gwr_network_free(net);
        return;
    }
    /* Add 2; then count 1 in byte order of "domain::op": "Constant" <
     * "Mul" < "Relu" < "com.x::Foo" (upper case sorts first). */
    if (CHECK_EQ_INT(gwr_analysis_num_ops(an), 5)) {
        const char *want[5] = {"Add", "Constant", "Mul", "Relu", "Foo"};
        int64_t counts[5] = {2, 1, 1, 1, 1};
        for (int i = 0; i < 5; i++) {
            const gwr_op_count *e = gwr_analysis_op(an, i);
            CHECK_STR(e->op, want[i]);
            CHECK_EQ_INT(e->count, counts[i]);
        }
        CHECK_STR(gwr_analysis_op(an, 4)->domain, "com.x");
        CHECK_STR(gwr_analysis_op(an, 0)->domain, "");
    }
    CHECK(gwr_analysis_op(an, 5) == NULL);
    CHECK(gwr_analysis_op(an, -1) == NULL);
    CHECK_EQ_INT(gwr_analysis_num_layers(an), 6); /* live layers */
    gwr_analysis_free(an);
    gwr_network_free(net);
}

static void release_nothing(void *ctx, const void *data, size_t size) { (void)ctx, (void)data, (void)size; }

TEST(parameters_shared_buffer) {
    gwr_network *net = gwr_network_new("params");
    static float data[16];
    gwr_buffer *buf = gwr_buffer_wrap(data, sizeof data, release_nothing, NULL);
    int64_t d16[1] = {16}, d8[1] = {8}, d23[2] = {2, 3}, d4[1] = {4};
    gwr_weights w = {GWR_FLOAT32, 1, d16, data, 64, buf, NULL};
    gwr_tensor *c1 = gwr_network_add_constant(net, "c1", &w);
    gwr_tensor *c2 = gwr_network_add_constant(net, "c2", &w);        /* the same 64 bytes */
    gwr_weights half = {GWR_FLOAT32, 1, d8, data + 8, 32, buf, NULL}; /* a view into them */
    gwr_tensor *c3 = gwr_network_add_constant(net, "c3", &half);
    gwr_buffer_release(buf);
    float six[6] = {1, 2, 3, 4, 5, 6};
    gwr_tensor *c4 = gwr_constant(net, GWR_FLOAT32, 2, d23, six);     /* 24 bytes of its own */
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_INT64, 1, d4);
    int64_t dflt[4] = {1, 2, 3, 4};
    gwr_buffer *db = gwr_buffer_new_copy(dflt, sizeof dflt);
    gwr_weights dw = {GWR_INT64, 1, d4, gwr_buffer_data(db), 32, db, NULL}; /* a default: 32 bytes */
    CHECK_OK(gwr_tensor_set_default(x, &dw));
    gwr_buffer_release(db);
    CHECK(c1 && c2 && c3 && c4);
    gwr_network_mark_output(net, gwr_add(net, c1, c2));
    gwr_network_mark_output(net, gwr_add(net, c3, c3));
    gwr_network_mark_output(net, gwr_relu(net, c4));
    gwr_network_mark_output(net, gwr_neg(net, x));
    gwr_analysis *an = gwr_analyze_network(net, NULL);
    if (!CHECK(an)) {
        fprintf(stderr, "%s\n", gwr_network_errmsg(net));
        gwr_network_free(net);
        return;
    }
    gwr_param_stats p;
    CHECK_OK(gwr_analysis_params(an, &p));
    CHECK_EQ_INT(p.tensors, 5);                   /* c1..c4 and x's default */
    CHECK_EQ_INT(p.elements, 16 + 16 + 8 + 6 + 4); /* every tensor counted */
    CHECK_EQ_INT(p.bytes, 64 + 24 + 32);          /* the buffer once, c4, the default */
    CHECK_EQ_INT(p.shared_tensors, 2);            /* c2 and c3 */
    CHECK_EQ_INT(p.shared_bytes, 64 + 32);
    /* Weights are not activations. */
    gwr_memory_stats m;
    CHECK_OK(gwr_analysis_memory(an, &m));
    CHECK_EQ_INT(m.weight_bytes, 120);
    /* Activations: the four outputs, live to the end (position 7, after
     * the four constants): 64 + 32 + 24 + 32; x has a default: a weight. */
    CHECK_EQ_INT(gwr_analysis_num_lifetimes(an), 4);
    CHECK_EQ_INT(m.peak_bytes, 152);
    CHECK_EQ_INT(m.peak_index, 7);
    /* The add reading c3 twice reads its 32 bytes once. */
    const gwr_layer_cost *c = cost_of(an, gwr_network_output(net, 1));
    if (CHECK(c)) CHECK_EQ_INT(c->bytes_read, 32);
    /* A constant layer costs nothing by itself. */
    c = cost_of(an, c1);
    if (CHECK(c)) CHECK(c->flops == 0 && c->bytes_read == 0 && c->bytes_written == 0 && c->known);
    gwr_analysis_free(an);
    gwr_network_free(net);
}

TEST(parameters_in_subgraphs) {
    gwr_network *net = gwr_network_new("if");
    gwr_tensor *cond = gwr_network_add_input(net, "cond", GWR_BOOL, 0, NULL);
    gwr_layer *ifl = gwr_network_add_layer(net, "If", "", "if1", 1, &cond, 1, NULL);
    if (!CHECK(ifl)) {
        gwr_network_free(net);
        return;
    }
    const char *branch[2] = {"then_branch", "else_branch"};
    for (int i = 0; i < 2; i++) {
        gwr_network *g = gwr_network_new_subgraph(net, branch[i]);
        int64_t d3 = 3;
        float v[3] = {1, 2, 3};
        gwr_tensor *c = gwr_constant(g, GWR_FLOAT32, 1, &d3, v); /* 12 bytes each */
        gwr_network_mark_output(g, gwr_relu(g, c));
        CHECK_OK(gwr_layer_set_graph(ifl, branch[i], g));
    }
    gwr_network_mark_output(net, gwr_layer_output(ifl, 0));
    gwr_analysis *an = gwr_analyze_network(net, NULL);
    if (!CHECK(an)) {
        fprintf(stderr, "%s\n", gwr_network_errmsg(net));
        gwr_network_free(net);
        return;
    }
    gwr_param_stats p;
    CHECK_OK(gwr_analysis_params(an, &p));
    CHECK_EQ_INT(p.tensors, 2);
    CHECK_EQ_INT(p.elements, 6);
    CHECK_EQ_INT(p.bytes, 24);
    /* The histogram and the costs are of the network itself. */
    CHECK_EQ_INT(gwr_analysis_num_ops(an), 1);
    CHECK_STR(gwr_analysis_op(an, 0)->op, "If");
    CHECK_EQ_INT(gwr_analysis_num_layers(an), 1);
    gwr_analysis_free(an);
    gwr_network_free(net);
}

/* ---- lifetimes and peak memory ------------------------------------------- */

TEST(peak_memory_chain) {
    gwr_network *net = gwr_network_new("chain");
    gwr_dim d2[1] = {2};
    gwr_tensor *x = input(net, "x", 1, d2);             /* 8 bytes */
    gwr_tensor *xs[2] = {x, x};
    gwr_tensor *cat = gwr_concat(net, 2, xs, 0);        /* 16 */
    gwr_tensor *r = gwr_relu(net, cat);                 /* 16 */
    gwr_tensor *s = gwr_reduce_sum(net, r, 0, NULL, 1); /* [1]: 4 */
    gwr_network_mark_output(net, s);
    /* pos 0 concat: x + cat = 24; pos 1 relu: cat + r = 32; pos 2 reduce:
     * r + s = 20. */
    int64_t peak = -1, at = -9;
    CHECK_OK(gwr_peak_memory(net, NULL, 0, NULL, &peak, &at));
    CHECK_EQ_INT(peak, 32);
    CHECK_EQ_INT(at, 1);
    gwr_analysis *an = gwr_analyze_network(net, NULL);
    if (!CHECK(an)) {
        gwr_network_free(net);
        return;
    }
    gwr_memory_stats m;
    CHECK_OK(gwr_analysis_memory(an, &m));
    CHECK_EQ_INT(m.peak_bytes, 32);
    CHECK_EQ_INT(m.peak_index, 1);
    CHECK(m.peak_layer == gwr_tensor_parent(r));
    CHECK_EQ_INT(m.network_order, 1);
    /* Lifetimes: x [0,0], cat [0,1], r [1,2], s [2,2] (an output: to the end). */
    CHECK_EQ_INT(gwr_analysis_num_lifetimes(an), 4);
    int64_t want[4][3] = {{0, 0, 8}, {0, 1, 16}, {1, 2, 16}, {2, 2, 4}};
    gwr_tensor *ts[4] = {x, cat, r, s};
    for (int i = 0; i < 4; i++) {
        const gwr_tensor_lifetime *lt = gwr_analysis_lifetime(an, i);
        if (!CHECK(lt)) continue;
        CHECK(lt->tensor == ts[i]);
        CHECK_EQ_INT(lt->first, want[i][0]);
        CHECK_EQ_INT(lt->last, want[i][1]);
        CHECK_EQ_INT(lt->bytes, want[i][2]);
    }
    CHECK(gwr_analysis_lifetime(an, 4) == NULL);
    gwr_analysis_free(an);
    gwr_network_free(net);
}

TEST(peak_memory_diamond_orders) {
    gwr_network *net = gwr_network_new("diamond");
    gwr_dim dx[2] = {1, 4};
    int64_t w1[2] = {4, 25}, w2[2] = {25, 1};
    gwr_tensor *ca1 = gwr_constant(net, GWR_FLOAT32, 2, w1, NULL);
    gwr_tensor *ca2 = gwr_constant(net, GWR_FLOAT32, 2, w2, NULL);
    gwr_tensor *cb1 = gwr_constant(net, GWR_FLOAT32, 2, w1, NULL);
    gwr_tensor *cb2 = gwr_constant(net, GWR_FLOAT32, 2, w2, NULL);
    gwr_tensor *x = input(net, "x", 2, dx);    /* 16 bytes */
    gwr_tensor *a1 = gwr_matmul(net, x, ca1);  /* [1,25]: 100 */
    gwr_tensor *a2 = gwr_matmul(net, a1, ca2); /* [1,1]: 4 */
    gwr_tensor *b1 = gwr_matmul(net, x, cb1);  /* 100 */
    gwr_tensor *b2 = gwr_matmul(net, b1, cb2); /* 4 */
    gwr_tensor *y = gwr_add(net, a2, b2);      /* 4 */
    gwr_network_mark_output(net, y);
    gwr_layer *C[4] = {gwr_tensor_parent(ca1), gwr_tensor_parent(ca2), gwr_tensor_parent(cb1), gwr_tensor_parent(cb2)};
    gwr_layer *A1 = gwr_tensor_parent(a1), *A2 = gwr_tensor_parent(a2), *B1 = gwr_tensor_parent(b1),
              *B2 = gwr_tensor_parent(b2), *Y = gwr_tensor_parent(y);
    /* Order 1 (network order): constants, A1, A2, B1, B2, Add.
     * x [0,6], a1 [4,5], a2 [5,8], b1 [6,7], b2 [7,8], y [8,8]:
     * pos 4: 16+100 = 116; 5: 16+100+4 = 120; 6: 16+4+100 = 120;
     * 7: 4+100+4 = 108; 8: 12. Peak 120 at 5. */
    gwr_layer *o1[9] = {C[0], C[1], C[2], C[3], A1, A2, B1, B2, Y};
    int64_t peak = 0, at = 0;
    CHECK_OK(gwr_peak_memory(net, o1, 9, NULL, &peak, &at));
    CHECK_EQ_INT(peak, 120);
    CHECK_EQ_INT(at, 5);
    CHECK_OK(gwr_peak_memory(net, NULL, 0, NULL, &peak, &at));
    CHECK_EQ_INT(peak, 120);
    /* Order 2: both big tensors at once. x [0,5], a1 [4,6], b1 [5,7]:
     * pos 5: 16+100+100 = 216. */
    gwr_layer *o2[9] = {C[0], C[1], C[2], C[3], A1, B1, A2, B2, Y};
    CHECK_OK(gwr_peak_memory(net, o2, 9, NULL, &peak, &at));
    CHECK_EQ_INT(peak, 216);
    CHECK_EQ_INT(at, 5);
    /* Not topological: A2 reads a1 before A1 runs. */
    gwr_layer *bad[9] = {C[0], C[1], C[2], C[3], A2, A1, B1, B2, Y};
    peak = 77;
    CHECK_EQ_INT(gwr_peak_memory(net, bad, 9, NULL, &peak, &at), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(gwr_network_errmsg(net), "not topological");
    CHECK_CONTAINS(gwr_network_errmsg(net), gwr_layer_name(A2));
    CHECK_CONTAINS(gwr_network_errmsg(net), gwr_layer_name(A1));
    CHECK_EQ_INT(peak, 77); /* untouched on error */
    /* A constant after its reader is just as wrong. */
    gwr_layer *bad2[9] = {C[1], C[2], C[3], A1, C[0], A2, B1, B2, Y};
    CHECK_EQ_INT(gwr_peak_memory(net, bad2, 9, NULL, &peak, &at), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(gwr_network_errmsg(net), gwr_layer_name(C[0]));
    /* Not every live layer once. */
    CHECK_EQ_INT(gwr_peak_memory(net, o1, 8, NULL, &peak, &at), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(gwr_network_errmsg(net), "8 layers");
    gwr_layer *dup[9] = {C[0], C[1], C[2], C[3], A1, A1, B1, B2, Y};
    CHECK_EQ_INT(gwr_peak_memory(net, dup, 9, NULL, &peak, &at), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(gwr_network_errmsg(net), "twice");
    gwr_layer *hole[9] = {C[0], C[1], C[2], C[3], A1, NULL, B1, B2, Y};
    CHECK_EQ_INT(gwr_peak_memory(net, hole, 9, NULL, &peak, &at), GWR_ERR_INVALID_ARG);
    gwr_network *other = gwr_network_new("other");
    gwr_tensor *ox = gwr_relu(other, input(other, "x", 2, dx));
    gwr_layer *foreign[9] = {C[0], C[1], C[2], C[3], A1, gwr_tensor_parent(ox), B1, B2, Y};
    CHECK_EQ_INT(gwr_peak_memory(net, foreign, 9, NULL, &peak, &at), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(gwr_network_errmsg(net), "not of this network");
    gwr_network_free(other);
    CHECK_EQ_INT(gwr_peak_memory(NULL, NULL, 0, NULL, &peak, &at), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(gwr_last_errmsg(), "NULL");
    /* A removed layer is not in the order. */
    gwr_tensor *dead = gwr_relu(net, x);
    gwr_layer_mark_as_removed(gwr_tensor_parent(dead));
    CHECK_OK(gwr_peak_memory(net, o1, 9, NULL, &peak, &at));
    CHECK_EQ_INT(peak, 120);
    gwr_network_free(net);
}

TEST(peak_memory_not_network_order) {
    /* A rewrite appends the new layer: network order stops being
     * topological and the analysis takes the topological order. */
    gwr_network *net = gwr_network_new("late");
    gwr_dim d[1] = {4};
    gwr_tensor *x = input(net, "x", 1, d);
    gwr_tensor *r = gwr_relu(net, x);
    gwr_tensor *y = gwr_neg(net, r);
    gwr_network_mark_output(net, y);
    gwr_tensor *s = gwr_sigmoid(net, x); /* after neg in network order */
    CHECK_OK(gwr_layer_set_input(gwr_tensor_parent(y), 0, s));
    gwr_layer_mark_as_removed(gwr_tensor_parent(r));
    gwr_analysis *an = gwr_analyze_network(net, NULL);
    if (CHECK(an)) {
        gwr_memory_stats m;
        CHECK_OK(gwr_analysis_memory(an, &m));
        CHECK_EQ_INT(m.network_order, 0);
        /* sigmoid (x + s = 32) then neg (s + y = 32). */
        CHECK_EQ_INT(m.peak_bytes, 32);
        CHECK(m.peak_layer == gwr_tensor_parent(s));
    }
    gwr_analysis_free(an);
    gwr_network_free(net);
}

/* ---- dims ------------------------------------------------------------------ */

TEST(symbolic_dims) {
    gwr_network *net = gwr_network_new("sym");
    gwr_dim d[2] = {gwr_network_dim_sym(net, "batch"), 8};
    gwr_tensor *x = input(net, "x", 2, d);
    gwr_tensor *y = gwr_relu(net, x);
    gwr_network_mark_output(net, y);
    /* Unbound: batch counts as 1 and is reported. */
    gwr_analysis *an = gwr_analyze_network(net, NULL);
    if (CHECK(an)) {
        const gwr_layer_cost *c = cost_of(an, y);
        if (CHECK(c)) {
            CHECK_EQ_INT(c->flops, 8);
            CHECK_EQ_INT(c->known, 0);
        }
        CHECK_EQ_INT(gwr_analysis_num_assumed(an), 1);
        CHECK_STR(gwr_analysis_assumed(an, 0), "batch");
        CHECK(gwr_analysis_assumed(an, 1) == NULL);
        CHECK_EQ_INT(gwr_analysis_unknown_tensors(an), 0);
        gwr_cost_totals t;
        CHECK_OK(gwr_analysis_totals(an, &t));
        CHECK_EQ_INT(t.known_layers, 0);
    }
    gwr_analysis_free(an);
    /* Bound: batch = 4; "seq" names nothing and is reported unused. */
    gwr_args *dims = gwr_args_new();
    gwr_args_set_int(dims, "seq", 3);
    gwr_args_set_int(dims, "batch", 4);
    an = gwr_analyze_network(net, dims);
    if (CHECK(an)) {
        const gwr_layer_cost *c = cost_of(an, y);
        if (CHECK(c)) {
            CHECK_EQ_INT(c->flops, 32);
            CHECK_EQ_INT(c->bytes_read, 128);
            CHECK_EQ_INT(c->known, 1);
        }
        CHECK_EQ_INT(gwr_analysis_num_assumed(an), 0);
        CHECK_EQ_INT(gwr_analysis_num_unused(an), 1);
        CHECK_STR(gwr_analysis_unused(an, 0), "seq");
        gwr_memory_stats m;
        CHECK_OK(gwr_analysis_memory(an, &m));
        CHECK_EQ_INT(m.peak_bytes, 256); /* x and y, 32 floats each */
    }
    gwr_analysis_free(an);
    int64_t peak = 0;
    CHECK_OK(gwr_peak_memory(net, NULL, 0, dims, &peak, NULL));
    CHECK_EQ_INT(peak, 256);
    /* Bad bindings: not an int, negative. */
    gwr_args_set_string(dims, "batch", "four");
    CHECK(gwr_analyze_network(net, dims) == NULL);
    CHECK_CONTAINS(gwr_network_errmsg(net), "'batch' must be an int");
    CHECK_EQ_INT(gwr_peak_memory(net, NULL, 0, dims, &peak, NULL), GWR_ERR_TYPE);
    gwr_args_set_int(dims, "batch", -2);
    CHECK(gwr_analyze_network(net, dims) == NULL);
    CHECK_CONTAINS(gwr_network_errmsg(net), "'batch' must be >= 0");
    gwr_args_free(dims);
    gwr_network_free(net);
}

TEST(unknown_dims) {
    gwr_network *net = gwr_network_new("unk");
    gwr_dim d[2] = {GWR_DIM_UNKNOWN, 8};
    gwr_tensor *x = input(net, "x", 2, d);
    gwr_tensor *u = input(net, "u", -1, NULL); /* unknown rank: one element */
    gwr_tensor *y = gwr_relu(net, x);
    gwr_tensor *z = gwr_neg(net, u);
    gwr_network_mark_output(net, y);
    gwr_network_mark_output(net, z);
    gwr_analysis *an = gwr_analyze_network(net, NULL);
    if (CHECK(an)) {
        const gwr_layer_cost *c = cost_of(an, y);
        if (CHECK(c)) {
            CHECK_EQ_INT(c->flops, 8);
            CHECK_EQ_INT(c->known, 0);
        }
        c = cost_of(an, z);
        if (CHECK(c)) {
            CHECK_EQ_INT(c->flops, 1);
            CHECK_EQ_INT(c->bytes_read, 4);
            CHECK_EQ_INT(c->known, 0);
        }
        CHECK_EQ_INT(gwr_analysis_unknown_tensors(an), 4); /* x, y, u, z */
        CHECK_EQ_INT(gwr_analysis_num_assumed(an), 0);
    }
    gwr_analysis_free(an);
    gwr_network_free(net);
}

TEST(saturation) {
    gwr_network *net = gwr_network_new("big");
    gwr_dim d[2] = {gwr_network_dim_sym(net, "n"), gwr_network_dim_sym(net, "n")};
    gwr_tensor *y = gwr_matmul(net, input(net, "a", 2, d), input(net, "b", 2, d));
    gwr_network_mark_output(net, y);
    gwr_args *dims = gwr_args_new();
    gwr_args_set_int(dims, "n", INT64_C(1) << 40);
    gwr_analysis *an = gwr_analyze_network(net, dims);
    if (CHECK(an)) {
        const gwr_layer_cost *c = cost_of(an, y);
        if (CHECK(c)) CHECK(c->flops == INT64_MAX && c->bytes_read == INT64_MAX);
        gwr_memory_stats m;
        CHECK_OK(gwr_analysis_memory(an, &m));
        CHECK(m.peak_bytes == INT64_MAX);
    }
    gwr_analysis_free(an);
    gwr_args_free(dims);
    gwr_network_free(net);
}

/* ---- the report ------------------------------------------------------------- */

TEST(top_layers_and_write) {
    gwr_network *net = gwr_network_new("report");
    gwr_dim da[2] = {2, 3}, db[2] = {3, 4};
    gwr_tensor *a = input(net, "a", 2, da), *b = input(net, "b", 2, db);
    gwr_tensor *r = gwr_relu(net, a);        /* 6 */
    gwr_tensor *y = gwr_matmul(net, r, b);   /* 48 */
    gwr_tensor *s = gwr_softmax(net, y, -1); /* 40 */
    gwr_tensor *n = gwr_neg(net, a);         /* 6: ties with the relu */
    gwr_tensor_set_name(s, "out \"quoted\"\n");
    gwr_network_mark_output(net, s);
    gwr_network_mark_output(net, n);
    gwr_analysis *an = gwr_analyze_network(net, NULL);
    if (!CHECK(an)) {
        gwr_network_free(net);
        return;
    }
    int64_t idx[8];
    CHECK_EQ_INT(gwr_analysis_top_layers(an, 8, idx), 4);
    CHECK_EQ_INT(idx[0], 1); /* matmul */
    CHECK_EQ_INT(idx[1], 2); /* softmax */
    CHECK_EQ_INT(idx[2], 0); /* relu, then neg: ties in network order */
    CHECK_EQ_INT(idx[3], 3);
    CHECK_EQ_INT(gwr_analysis_top_layers(an, 2, idx), 2);
    CHECK(idx[0] == 1 && idx[1] == 2);
    CHECK_EQ_INT(gwr_analysis_top_layers(an, 0, NULL), 0);
    CHECK_EQ_INT(gwr_analysis_top_layers(an, -1, idx), -1);
    CHECK_EQ_INT(gwr_analysis_top_layers(NULL, 1, idx), -1);

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK_OK(gwr_analysis_write(an, f, 0, 2));
    fclose(f);
    CHECK_CONTAINS(buf, "FLOPs:          100\n");
    CHECK_CONTAINS(buf, "top 2 layers by FLOPs:");
    CHECK_CONTAINS(buf, "MatMul");
    const char *table = strstr(buf, "top 2 layers");
    CHECK(table && strstr(table, "Neg") == NULL); /* not in the top 2 */
    CHECK_CONTAINS(buf, "         1  Neg\n");     /* only in the histogram */
    CHECK_CONTAINS(buf, "layers:         4 (4 with every dim known or bound)");
    free(buf);
    buf = NULL;
    f = open_memstream(&buf, &len);
    CHECK_OK(gwr_analysis_write(an, f, 1, -1));
    fclose(f);
    CHECK_CONTAINS(buf, "\"flops\": 100,");
    CHECK_CONTAINS(buf, "\"flops\": 48,");
    CHECK_CONTAINS(buf, "\"op\": \"Neg\"");
    CHECK_CONTAINS(buf, "\"assumed\": []");
    free(buf);
    CHECK_EQ_INT(gwr_analysis_write(an, NULL, 0, 1), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_analysis_write(NULL, stdout, 0, 1), GWR_ERR_INVALID_ARG);
    gwr_analysis_free(an);
    gwr_network_free(net);
}

TEST(top_layers_many) {
    /* 30 Relus of sizes 1..10, three of each: both ways of ranking (a
     * window for n <= 16, a sort beyond) give FLOPs descending, ties in
     * network order. */
    gwr_network *net = gwr_network_new("many");
    for (int i = 0; i < 30; i++) {
        gwr_dim d[1] = {1 + i % 10};
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        gwr_network_mark_output(net, gwr_relu(net, input(net, name, 1, d)));
    }
    gwr_analysis *an = gwr_analyze_network(net, NULL);
    if (!CHECK(an)) {
        gwr_network_free(net);
        return;
    }
    int64_t all[40], few[16];
    CHECK_EQ_INT(gwr_analysis_top_layers(an, 40, all), 30);
    CHECK_EQ_INT(gwr_analysis_top_layers(an, 16, few), 16);
    /* Sizes 10 (layers 9, 19, 29), 9 (8, 18, 28), ... */
    for (int i = 0; i < 30; i++) CHECK_EQ_INT(all[i], (9 - i / 3) + 10 * (i % 3));
    for (int i = 0; i < 16; i++) CHECK_EQ_INT(few[i], all[i]);
    gwr_analysis_free(an);
    gwr_network_free(net);
}

TEST(bad_input) {
    CHECK(gwr_analyze_network(NULL, NULL) == NULL);
    CHECK_CONTAINS(gwr_last_errmsg(), "NULL network");
    gwr_analysis_free(NULL);
    gwr_param_stats p;
    gwr_cost_totals t;
    gwr_memory_stats m;
    CHECK_EQ_INT(gwr_analysis_params(NULL, &p), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_analysis_totals(NULL, &t), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_analysis_memory(NULL, &m), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_analysis_num_ops(NULL), -1);
    CHECK(gwr_analysis_layer_cost(NULL, 0) == NULL);
    CHECK(gwr_analysis_assumed(NULL, 0) == NULL);
    CHECK(gwr_analysis_unused(NULL, 0) == NULL);
    CHECK_STR(gwr_analysis_errmsg(NULL), "");
    /* An empty network. */
    gwr_network *net = gwr_network_new(NULL);
    gwr_analysis *an = gwr_analyze_network(net, NULL);
    if (CHECK(an)) {
        CHECK_EQ_INT(gwr_analysis_num_layers(an), 0);
        CHECK_EQ_INT(gwr_analysis_num_ops(an), 0);
        CHECK_OK(gwr_analysis_memory(an, &m));
        CHECK_EQ_INT(m.peak_index, -1);
        CHECK(m.peak_layer == NULL);
        CHECK(gwr_analysis_network(an) == net);
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        CHECK_OK(gwr_analysis_write(an, f, 1, 10));
        fclose(f);
        CHECK_CONTAINS(buf, "\"peak_layer\": null");
        free(buf);
    }
    gwr_analysis_free(an);
    /* Inputs only: the peak is the inputs, at no layer. */
    gwr_dim d[1] = {3};
    gwr_network_mark_output(net, input(net, "x", 1, d));
    int64_t peak = 0, at = 0;
    CHECK_OK(gwr_peak_memory(net, NULL, 0, NULL, &peak, &at));
    CHECK_EQ_INT(peak, 12);
    CHECK_EQ_INT(at, -1);
    gwr_network_free(net);
}

/* ---- the analysis manager itself --------------------------------------------- */

typedef struct log_ctx {
    char text[512];
    int nlayers[8];
    gwr_layer *layers[8][4];
    int calls;
} log_ctx;

static gwr_status log_analyze(gwr_rewrite_ctx *c, gwr_layer *const *layers, int n) {
    log_ctx *lg = gwr_rewrite_ctx_user(c);
    size_t used = strlen(lg->text);
    snprintf(lg->text + used, sizeof lg->text - used, "%s@%s ", gwr_rewrite_ctx_label(c), gwr_layer_op(layers[0]));
    if (lg->calls < 8) {
        lg->nlayers[lg->calls] = n;
        for (int i = 0; i < n && i < 4; i++) lg->layers[lg->calls][i] = layers[i];
    }
    lg->calls++;
    return GWR_OK;
}

/* Matches a Relu and adds the producers of its input and of that one's
 * first input: the subgraph x -> Add -> Relu. */
static int chain_match(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_layer *p = gwr_tensor_parent(gwr_layer_input(l, 0));
    if (!p || gwr_layer_ew_op(p) != GWR_EW_SUM) return gwr_rewrite_no_match(c, "input not from an Add");
    if (gwr_rewrite_ctx_add_match(c, p)) return -1;
    gwr_layer *q = gwr_tensor_parent(gwr_layer_input(p, 1));
    if (q && gwr_rewrite_ctx_add_match(c, q)) return -1;
    return 1;
}

static gwr_status mutating_analyze(gwr_rewrite_ctx *c, gwr_layer *const *layers, int n) {
    (void)n;
    gwr_relu(gwr_rewrite_ctx_network(c), gwr_layer_output(layers[0], 0));
    return GWR_OK;
}

static gwr_status failing_analyze(gwr_rewrite_ctx *c, gwr_layer *const *layers, int n) {
    (void)n;
    return (gwr_status)-gwr_rewrite_fail(c, GWR_ERR_SHAPE, "cannot size '%s'", gwr_layer_name(layers[0]));
}

static gwr_network *small_net(void) {
    gwr_network *net = gwr_network_new("small");
    gwr_dim d[1] = {4};
    gwr_tensor *x = input(net, "x", 1, d);
    gwr_tensor *s = gwr_add(net, x, gwr_neg(net, x)); /* Neg, Add */
    gwr_tensor *y = gwr_relu(net, s);                 /* Relu */
    gwr_network_mark_output(net, y);
    return net;
}

TEST(manager_add_rules) {
    gwr_analysis_manager *m = gwr_analysis_manager_new();
    log_ctx lg = {{0}, {0}, {{0}}, 0};
    gwr_pattern_analyzer p = {"log", 0, NULL, NULL, log_analyze, &lg};
    /* Neither root classes nor root ops: refused, naming the label. */
    CHECK_EQ_INT(gwr_analysis_manager_add(m, "none", &p, 1), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(gwr_analysis_manager_errmsg(m), "none");
    const char *const empty[] = {NULL};
    p.root_ops = empty;
    CHECK_EQ_INT(gwr_analysis_manager_add(m, "none", &p, 1), GWR_ERR_INVALID_ARG);
    p.root_ops = NULL;
    p.root_classes = GWR_ROOT_ANY;
    CHECK_OK(gwr_analysis_manager_add(m, "log", &p, 1));
    CHECK_EQ_INT(gwr_analysis_manager_add(m, "log", &p, 2), GWR_ERR_DUPLICATE);
    CHECK_CONTAINS(gwr_analysis_manager_errmsg(m), "log");
    CHECK_EQ_INT(gwr_analysis_manager_count(m), 1);
    p.analyze = NULL;
    CHECK_EQ_INT(gwr_analysis_manager_add(m, "noanalyze", &p, 1), GWR_ERR_INVALID_ARG);
    CHECK(gwr_analysis_manager_get(m, "log") != NULL);
    CHECK(gwr_analysis_manager_get(m, "none") == NULL);
    gwr_analysis_manager_free(m);
}

TEST(manager_benefit_order_and_matches) {
    gwr_network *net = small_net();
    gwr_analysis_manager *m = gwr_analysis_manager_new();
    log_ctx lg = {{0}, {0}, {{0}}, 0};
    /* Same root: higher benefit first; equal benefits in the order added. */
    gwr_pattern_analyzer lo = {"lo", GWR_ROOT_CLASS(GWR_LAYER_ACTIVATION), NULL, NULL, log_analyze, &lg};
    gwr_pattern_analyzer hi = {"hi", GWR_ROOT_CLASS(GWR_LAYER_ACTIVATION), NULL, NULL, log_analyze, &lg};
    gwr_pattern_analyzer mid1 = {"mid1", 0, (const char *const[]){"Relu", NULL}, NULL, log_analyze, &lg};
    gwr_pattern_analyzer mid2 = {"mid2", GWR_ROOT_ANY, NULL, NULL, log_analyze, &lg};
    CHECK_OK(gwr_analysis_manager_add(m, "lo", &lo, 1));
    CHECK_OK(gwr_analysis_manager_add(m, "mid1", &mid1, 5));
    CHECK_OK(gwr_analysis_manager_add(m, "hi", &hi, 9));
    CHECK_OK(gwr_analysis_manager_add(m, "mid2", &mid2, 5));
    CHECK_STR(gwr_analysis_manager_label(m, 0), "hi");
    CHECK_STR(gwr_analysis_manager_label(m, 1), "mid1");
    CHECK_STR(gwr_analysis_manager_label(m, 2), "mid2");
    CHECK_STR(gwr_analysis_manager_label(m, 3), "lo");
    CHECK_OK(gwr_analysis_manager_analyze(m, net, NULL));
    /* Network order Neg, Add, Relu; Relu (ACTIVATION) is offered to all
     * four, best first; the others only to mid2. */
    CHECK_STR(lg.text, "mid2@Neg mid2@Add hi@Relu mid1@Relu mid2@Relu lo@Relu ");
    gwr_analysis_manager_free(m);

    /* add_match: analyze gets the root, then the layers added, in order. */
    m = gwr_analysis_manager_new();
    memset(&lg, 0, sizeof lg);
    gwr_pattern_analyzer chain = {"chain", GWR_ROOT_CLASS(GWR_LAYER_ACTIVATION), NULL, chain_match, log_analyze, &lg};
    CHECK_OK(gwr_analysis_manager_add(m, "chain", &chain, 1));
    CHECK_OK(gwr_analysis_manager_analyze(m, net, NULL));
    gwr_layer *relu = gwr_tensor_parent(gwr_network_output(net, 0));
    gwr_layer *add = gwr_tensor_parent(gwr_layer_input(relu, 0));
    gwr_layer *neg = gwr_tensor_parent(gwr_layer_input(add, 1));
    if (CHECK_EQ_INT(lg.calls, 1) && CHECK_EQ_INT(lg.nlayers[0], 3)) {
        CHECK(lg.layers[0][0] == relu);
        CHECK(lg.layers[0][1] == add);
        CHECK(lg.layers[0][2] == neg);
    }
    /* Twice in a row: the match list starts afresh. */
    lg.calls = 0;
    CHECK_OK(gwr_analysis_manager_analyze(m, net, NULL));
    CHECK_EQ_INT(lg.nlayers[0], 3);
    gwr_analysis_manager_free(m);
    gwr_network_free(net);
}

TEST(manager_refuses_changes_and_reports_failures) {
    gwr_network *net = small_net();
    int64_t layers = gwr_network_num_layers(net);
    gwr_analysis_manager *m = gwr_analysis_manager_new();
    gwr_pattern_analyzer mut = {"mutator", GWR_ROOT_CLASS(GWR_LAYER_ACTIVATION), NULL, NULL, mutating_analyze, NULL};
    CHECK_OK(gwr_analysis_manager_add(m, "sneaky", &mut, 1));
    CHECK_EQ_INT(gwr_analysis_manager_analyze(m, net, NULL), GWR_ERR_STATE);
    CHECK_CONTAINS(gwr_analysis_manager_errmsg(m), "'sneaky' changed the network");
    CHECK_CONTAINS(gwr_analysis_manager_errmsg(m), "Relu");
    CHECK_EQ_INT(gwr_network_num_layers(net), layers + 1); /* the change happened, and was caught */
    CHECK_OK(gwr_network_verify(net));
    gwr_analysis_manager_free(m);

    m = gwr_analysis_manager_new();
    gwr_pattern_analyzer fail = {"failer", GWR_ROOT_CLASS(GWR_LAYER_ELEMENTWISE), NULL, NULL, failing_analyze, NULL};
    CHECK_OK(gwr_analysis_manager_add(m, "failer", &fail, 1));
    CHECK_EQ_INT(gwr_analysis_manager_analyze(m, net, NULL), GWR_ERR_SHAPE);
    CHECK_CONTAINS(gwr_analysis_manager_errmsg(m), "failer");
    CHECK_CONTAINS(gwr_analysis_manager_errmsg(m), "cannot size");
    CHECK_EQ_INT(gwr_analysis_manager_analyze(m, NULL, NULL), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_analysis_manager_analyze(NULL, net, NULL), GWR_ERR_INVALID_ARG);
    gwr_analysis_manager_free(m);
    gwr_network_free(net);
}

TEST(analysis_leaves_network_alone) {
    gwr_network *net = gwr_network_new("gpt");
    gwr_gpt_config cfg = {.blocks = 2, .hidden = 32, .heads = 4, .use_plugin = 1, .seed = 1};
    gwr_tensor *y = gwr_build_gpt(net, &cfg);
    if (!CHECK(y)) {
        gwr_network_free(net);
        return;
    }
    int64_t layers = gwr_network_num_layers(net);
    gwr_args *dims = gwr_args_new();
    gwr_args_set_int(dims, "batch", 2);
    gwr_args_set_int(dims, "seq", 8);
    gwr_analysis *an = gwr_analyze_network(net, dims);
    if (CHECK(an)) {
        gwr_cost_totals t;
        CHECK_OK(gwr_analysis_totals(an, &t));
        CHECK_EQ_INT(t.known_layers, t.layers); /* everything bound */
        CHECK(t.flops > 0);
        CHECK_EQ_INT(gwr_analysis_num_assumed(an), 0);
        CHECK_EQ_INT(gwr_analysis_num_unused(an), 0);
        /* Two attention plugins: b=2, h=4, s=8, d=8: scores 512:
         * 4*512*8 + 5*512 = 18944, plus the bias if the block has one. */
        int64_t found = 0;
        for (int64_t i = 0; i < gwr_analysis_num_ops(an); i++)
            if (!strcmp(gwr_analysis_op(an, i)->op, "GPTAttention")) found = gwr_analysis_op(an, i)->count;
        CHECK_EQ_INT(found, 2);
        for (int64_t i = 0; i < gwr_analysis_num_layers(an); i++) {
            const gwr_layer_cost *c = gwr_analysis_layer_cost(an, i);
            if (strcmp(gwr_layer_op(c->layer), "GPTAttention")) continue;
            int64_t extra = gwr_layer_input(c->layer, 1) ? 2 * 8 * 96 : 0;
            CHECK_EQ_INT(c->flops, 18944 + extra);
        }
    }
    gwr_analysis_free(an);
    gwr_args_free(dims);
    CHECK_EQ_INT(gwr_network_num_layers(net), layers);
    CHECK_OK(gwr_network_verify(net));
    gwr_network_free(net);
}

int main(void) {
    RUN(matmul_cost);
    RUN(gemm_cost);
    RUN(conv_cost);
    RUN(deform_conv_cost);
    RUN(elementwise_norm_softmax_reduce_pool);
    RUN(attention_cost);
    RUN(onnx_attention_cost);
    RUN(state_ops_cost);
    RUN(state_ops_shape_errors);
    RUN(op_histogram);
    RUN(parameters_shared_buffer);
    RUN(parameters_in_subgraphs);
    RUN(peak_memory_chain);
    RUN(peak_memory_diamond_orders);
    RUN(peak_memory_not_network_order);
    RUN(symbolic_dims);
    RUN(unknown_dims);
    RUN(saturation);
    RUN(top_layers_and_write);
    RUN(top_layers_many);
    RUN(bad_input);
    RUN(manager_add_rules);
    RUN(manager_benefit_order_and_matches);
    RUN(manager_refuses_changes_and_reports_failures);
    RUN(analysis_leaves_network_alone);
    return check_report();
}
