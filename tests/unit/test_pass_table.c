/* test_pass_table.c - the test loop of the pass table: every pass of
 * gwr_passes_info has, here, a case where it must fire and a case where it
 * must not, both run through pass_case.h (debug rewrite, count, verify,
 * outputs compared on seeded inputs) with the numerics the table claims:
 * bit-identical for an exact pass, within its tolerance for an approximate
 * one, and a difference the comparison sees for one that changes the
 * results on purpose. A pass added to the table without cases here fails
 * the loop. */
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "pass_case.h"

/* ---- builders ------------------------------------------------------------------ */

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

/* y = x * (a + b): one all-constant Add */
static gwr_network *fold_fires(void) {
    static const float a[3] = {1, 2, 3}, b[3] = {0.5f, -1, 4};
    int64_t d = 3;
    gwr_dim dd = 3;
    gwr_network *net = gwr_network_new("fold");
    gwr_tensor *x = input(net, "x", 1, &dd);
    gwr_tensor *k = gwr_add(net, gwr_constant(net, GWR_FLOAT32, 1, &d, a), gwr_constant(net, GWR_FLOAT32, 1, &d, b));
    return finish(net, gwr_mul(net, x, k));
}

/* y = If(c){Relu(x)}{Neg(x)} * x; c a constant true, or an input */
static gwr_network *if_net(int constant) {
    static const uint8_t t = 1;
    gwr_dim dd = 3;
    gwr_network *net = gwr_network_new("if");
    gwr_tensor *x = input(net, "x", 1, &dd);
    gwr_tensor *c = constant ? gwr_constant(net, GWR_BOOL, 0, NULL, &t) : gwr_network_add_input(net, "c", GWR_BOOL, 0, NULL);
    gwr_layer *iff = gwr_network_add_layer(net, "If", "", NULL, 1, &c, 1, NULL);
    gwr_network *th = gwr_network_new_subgraph(net, "then"), *el = gwr_network_new_subgraph(net, "else");
    gwr_network_mark_output(th, gwr_relu(th, x));
    gwr_network_mark_output(el, gwr_neg(el, x));
    if (!iff || gwr_layer_set_graph(iff, "then_branch", th) || gwr_layer_set_graph(iff, "else_branch", el)) {
        gwr_network_free(th), gwr_network_free(el);
        return finish(net, NULL);
    }
    gwr_tensor_set_type(gwr_layer_output(iff, 0), GWR_FLOAT32, 1, &dd);
    return finish(net, gwr_mul(net, gwr_layer_output(iff, 0), x));
}
static gwr_network *if_fires(void) { return if_net(1); }
static gwr_network *if_idle(void) { return if_net(0); }

/* y = (x + x) * x: nothing constant to fold */
static gwr_network *no_constants(void) {
    gwr_dim dd = 3;
    gwr_network *net = gwr_network_new("plain");
    gwr_tensor *x = input(net, "x", 1, &dd);
    return finish(net, gwr_mul(net, gwr_add(net, x, x), x));
}

/* y = relu(x) * x: no Add at all */
static gwr_network *no_add(void) {
    gwr_dim dd = 3;
    gwr_network *net = gwr_network_new("noadd");
    gwr_tensor *x = input(net, "x", 1, &dd);
    return finish(net, gwr_mul(net, gwr_relu(net, x), x));
}

static gwr_network *gpt(int use_plugin) {
    gwr_gpt_config cfg = {.blocks = 1, .hidden = 8, .heads = 2, .ffn = 16, .use_plugin = use_plugin, .seed = 5};
    gwr_network *net = gwr_network_new("gpt");
    if (net && !gwr_build_gpt(net, &cfg)) {
        gwr_network_free(net);
        return NULL;
    }
    return net;
}
static gwr_network *gpt_plugin(void) { return gpt(1); }
static gwr_network *gpt_onnx(void) { return gpt(0); }
/* the plain decoder at opset 23 (ONNX Attention), and after fuse_attention there */
static gwr_network *gpt_onnx23(void) {
    gwr_network *net = gpt(0);
    if (net) gwr_network_set_opset(net, "", 23);
    return net;
}
static gwr_network *gpt_sdpa(void) {
    gwr_network *net = gpt_onnx23();
    gwr_optimize_options o = {.only = "fuse_attention", .target = GWR_TARGET_ONNX};
    if (net && gwr_optimize(net, &o, NULL)) gwr_network_free(net), net = NULL;
    return net;
}

static gwr_tensor *op(gwr_network *net, const char *name, int nin, gwr_tensor *const *in) {
    gwr_tensor *out = NULL;
    return gwr_op_call(net, "", name, nin, in, NULL, 1, &out) ? out : NULL;
}

static gwr_tensor *vec(gwr_network *net, int64_t n, const float *v) { return gwr_constant(net, GWR_FLOAT32, 1, &n, v); }

/* BatchNormalization(Conv(x, W, B)), every parameter constant; with
 * `second_reader`, the Conv's output is also read by a Relu that is an
 * output too, so the BN must not be folded. */
static gwr_network *conv_bn(int second_reader) {
    static float w[3 * 2 * 3 * 3];
    static const float b[3] = {0.1f, -0.2f, 0.3f}, g[3] = {1.5f, 0.5f, -1}, be[3] = {0.25f, 0, -0.5f},
                       mean[3] = {0.2f, -0.1f, 0.05f}, var[3] = {0.5f, 2, 1.25f};
    for (int i = 0; i < 54; i++) w[i] = (float)((i * 37 % 19) - 9) / 10.0f;
    gwr_dim xd[4] = {1, 2, 5, 5};
    int64_t wd[4] = {3, 2, 3, 3};
    gwr_network *net = gwr_network_new("conv_bn");
    gwr_tensor *x = input(net, "x", 4, xd);
    gwr_tensor *cin[3] = {x, gwr_constant(net, GWR_FLOAT32, 4, wd, w), vec(net, 3, b)};
    gwr_tensor *c = op(net, "Conv", 3, cin);
    gwr_tensor *bin[5] = {c, vec(net, 3, g), vec(net, 3, be), vec(net, 3, mean), vec(net, 3, var)};
    gwr_tensor *y = op(net, "BatchNormalization", 5, bin);
    if (second_reader && y && gwr_network_mark_output(net, gwr_relu(net, c))) y = NULL;
    return finish(net, y);
}
static gwr_network *bn_fires(void) { return conv_bn(0); }
static gwr_network *bn_idle(void) { return conv_bn(1); }

/* Div(Mul(x, Clip(Add(x, 3), 0, hi)), 6): HardSwish when hi is 6 */
static gwr_network *hswish(float hi) {
    gwr_dim d = 8;
    gwr_network *net = gwr_network_new("hswish");
    if (net && gwr_network_set_opset(net, "", 14)) {
        gwr_network_free(net);
        return NULL;
    }
    gwr_tensor *x = input(net, "x", 1, &d);
    gwr_tensor *cl[3] = {gwr_add(net, x, gwr_constant_f32(net, 3)), gwr_constant_f32(net, 0), gwr_constant_f32(net, hi)};
    return finish(net, gwr_div(net, gwr_mul(net, x, op(net, "Clip", 3, cl)), gwr_constant_f32(net, 6)));
}
static gwr_network *hswish_fires(void) { return hswish(6); }
static gwr_network *hswish_idle(void) { return hswish(5); }

/* y = relu(Identity(x)) or, idle, relu(x) * x with an Identity whose
 * output is a network output reading the graph input (an Identity that
 * carries an interface name stays). */
static gwr_network *identity_fires(void) {
    gwr_dim d = 4;
    gwr_network *net = gwr_network_new("id");
    gwr_tensor *x = input(net, "x", 1, &d);
    return finish(net, gwr_relu(net, op(net, "Identity", 1, &x)));
}
static gwr_network *identity_idle(void) {
    gwr_dim d = 4;
    gwr_network *net = gwr_network_new("id_idle");
    gwr_tensor *x = input(net, "x", 1, &d);
    gwr_tensor *i = op(net, "Identity", 1, &x);
    if (i && gwr_network_mark_output(net, i)) i = NULL;
    return finish(net, i ? gwr_mul(net, gwr_relu(net, x), x) : NULL);
}

/* relu(x + 0) fires; relu(x + 0.001) must not */
static gwr_network *add_k(float k) {
    gwr_dim d[2] = {2, 3};
    gwr_network *net = gwr_network_new("arith");
    gwr_tensor *x = input(net, "x", 2, d);
    return finish(net, gwr_relu(net, gwr_add(net, x, gwr_constant_f32(net, k))));
}
static gwr_network *arith_fires(void) { return add_k(0); }
static gwr_network *arith_idle(void) { return add_k(0.001f); }

/* relu(Transpose(x, perm)): the identity perm fires, a swap does not */
static gwr_network *transpose_of(const int64_t *perm1, const int64_t *perm2) {
    gwr_dim d[2] = {2, 3};
    gwr_network *net = gwr_network_new("transpose");
    gwr_tensor *x = input(net, "x", 2, d);
    gwr_args *a = gwr_args_new();
    gwr_tensor *t = NULL, *u = NULL;
    int ok = a && !gwr_args_set_ints(a, "perm", 2, perm1) && gwr_op_call(net, "", "Transpose", 1, &x, a, 1, &t);
    if (ok && perm2) {
        ok = !gwr_args_set_ints(a, "perm", 2, perm2) && gwr_op_call(net, "", "Transpose", 1, &t, a, 1, &u);
        t = u;
    }
    if (!ok) t = NULL;
    gwr_args_free(a);
    return finish(net, gwr_relu(net, t));
}
static const int64_t id2[2] = {0, 1}, swap2[2] = {1, 0};
static gwr_network *reshape_fires(void) { return transpose_of(id2, NULL); }
static gwr_network *reshape_idle(void) { return transpose_of(swap2, NULL); }
static gwr_network *transposes_fire(void) { return transpose_of(swap2, swap2); }
static gwr_network *transpose_single(void) { return transpose_of(swap2, NULL); }

/* The exporters' LayerNormalization of x [2, 8] (opset 17), Pow and Div:
 * fires; with the mean also an output, idle. */
static gwr_network *layer_norm(int mean_out) {
    static const float g[8] = {1, 0.5f, 2, 1, -1, 1.5f, 1, 0.25f}, b[8] = {0, 0.1f, -0.2f, 0.3f, 0, 1, -1, 0.5f};
    gwr_dim d[2] = {2, 8};
    int64_t ax = -1;
    gwr_network *net = gwr_network_new("layer_norm");
    if (net && gwr_network_set_opset(net, "", 17)) {
        gwr_network_free(net);
        return NULL;
    }
    gwr_tensor *x = input(net, "x", 2, d), *mean = gwr_reduce_mean(net, x, 1, &ax, 1);
    gwr_tensor *dv = gwr_sub(net, x, mean);
    gwr_tensor *var = gwr_reduce_mean(net, gwr_pow(net, dv, gwr_constant_f32(net, 2)), 1, &ax, 1);
    gwr_tensor *sq = gwr_add(net, var, gwr_constant_f32(net, 1e-5f));
    gwr_tensor *y = gwr_add(net, gwr_mul(net, gwr_div(net, dv, op(net, "Sqrt", 1, &sq)), vec(net, 8, g)), vec(net, 8, b));
    if (mean_out && y && gwr_network_mark_output(net, mean)) y = NULL;
    return finish(net, y);
}
static gwr_network *layer_norm_fires(void) { return layer_norm(0); }
static gwr_network *layer_norm_idle(void) { return layer_norm(1); }

/* MatMul(a [3, 4], B) + C [5] fires; with a [2, 3, 4] it stays. */
static gwr_network *matmul_add(int rank3) {
    static float w[20];
    static const float c[5] = {0.5f, -1, 0.25f, 2, 0};
    for (int i = 0; i < 20; i++) w[i] = (float)((i * 7 % 11) - 5) / 4.0f;
    gwr_dim d3[3] = {2, 3, 4};
    int64_t wd[2] = {4, 5};
    gwr_network *net = gwr_network_new("matmul_add");
    gwr_tensor *a = input(net, "a", rank3 ? 3 : 2, rank3 ? d3 : d3 + 1);
    return finish(net, gwr_add(net, gwr_matmul(net, a, gwr_constant(net, GWR_FLOAT32, 2, wd, w)), vec(net, 5, c)));
}
static gwr_network *matmul_add_fires(void) { return matmul_add(0); }
static gwr_network *matmul_add_idle(void) { return matmul_add(1); }
/* 0.5 x (1 + Erf(x / 1.4142135)) at opset `opset` (0: none): Gelu only from
 * opset 20 for the default target (onnx) */
static gwr_network *gelu_at(int64_t opset) {
    gwr_dim d = 8;
    gwr_network *net = gwr_network_new("gelu");
    if (net && opset && gwr_network_set_opset(net, "", opset)) {
        gwr_network_free(net);
        return NULL;
    }
    gwr_tensor *x = input(net, "x", 1, &d);
    gwr_tensor *in[2] = {x, gwr_constant_f32(net, 1.4142135f)}, *e = op(net, "Div", 2, in);
    gwr_tensor *one = gwr_add(net, op(net, "Erf", 1, &e), gwr_constant_f32(net, 1));
    return finish(net, gwr_mul(net, gwr_mul(net, x, one), gwr_constant_f32(net, 0.5f)));
}
static gwr_network *gelu_fires(void) { return gelu_at(0); }
static gwr_network *gelu_idle(void) { return gelu_at(17); }

/* Clip(Clip(x, 0, 6), lo, 4): one Clip when [0, 6] and [lo, 4] overlap (lo 1);
 * lo 7 leaves them (the fused bounds would be out of order) */
static gwr_network *clips(float lo) {
    gwr_dim d = 8;
    gwr_network *net = gwr_network_new("clips");
    gwr_tensor *x = input(net, "x", 1, &d);
    gwr_tensor *c = gwr_clip(net, x, gwr_constant_f32(net, 0), gwr_constant_f32(net, 6));
    return finish(net, gwr_clip(net, c, gwr_constant_f32(net, lo), gwr_constant_f32(net, 4)));
}
static gwr_network *clips_fire(void) { return clips(1); }
static gwr_network *clips_idle(void) { return clips(7); }

/* LeakyRelu(x, 0.1) + LeakyRelu(x, alpha): one LeakyRelu when alpha is 0.1;
 * 0.2 leaves both */
static gwr_network *leaky_twins(float alpha) {
    gwr_dim d = 8;
    gwr_network *net = gwr_network_new("cse");
    gwr_tensor *x = input(net, "x", 1, &d);
    gwr_tensor *a = gwr_leaky_relu(net, x, 0.1f), *b = gwr_leaky_relu(net, x, alpha);
    return finish(net, gwr_add(net, a, b));
}
static gwr_network *cse_fires(void) { return leaky_twins(0.1f); }
static gwr_network *cse_idle(void) { return leaky_twins(0.2f); }

/* act(Conv(x, W, B)) [+ Add of a residual first]: the CNN fusions' cases.
 * kind 0: Relu(Conv) fires; 1: the Conv's output is also a network output
 * (idle); 2: Relu(Conv + x) fires the Add; 3: Conv + a [3, 1, 1] constant
 * (a broadcast, idle). */
static gwr_network *conv_fusion(int kind) {
    static float w[3 * 3 * 3 * 3];
    static const float b[3] = {0.1f, -0.2f, 0.3f}, k[3] = {1, 2, 3};
    for (int i = 0; i < 81; i++) w[i] = (float)((i * 29 % 17) - 8) / 10.0f;
    gwr_dim xd[4] = {1, 3, 5, 5};
    int64_t wd[4] = {3, 3, 3, 3}, kd[3] = {3, 1, 1};
    gwr_network *net = gwr_network_new("conv_fusion");
    gwr_args *a = gwr_args_new();
    gwr_tensor *x = input(net, "x", 4, xd), *c = NULL;
    gwr_tensor *cin[3] = {x, gwr_constant(net, GWR_FLOAT32, 4, wd, w), vec(net, 3, b)};
    static const int64_t pads[4] = {1, 1, 1, 1};
    if (a && !gwr_args_set_ints(a, "pads", 4, pads)) gwr_op_call(net, "", "Conv", 3, cin, a, 1, &c);
    gwr_args_free(a);
    if (kind == 1 && c && gwr_network_mark_output(net, c)) c = NULL;
    if (kind == 2) c = gwr_add(net, c, x);
    if (kind == 3) return finish(net, gwr_add(net, c, gwr_constant(net, GWR_FLOAT32, 3, kd, k)));
    return finish(net, gwr_relu(net, c));
}
static gwr_network *conv_act_fires(void) { return conv_fusion(0); }
static gwr_network *conv_act_idle(void) { return conv_fusion(1); }
static gwr_network *conv_add_fires(void) { return conv_fusion(2); }
static gwr_network *conv_add_idle(void) { return conv_fusion(3); }

/* act(Gemm(a, B, C)): Relu fires; Clip stays (onnxruntime's FusedGemm has none) */
static gwr_network *gemm_act(int clip) {
    static float w[20];
    static const float c[5] = {0.5f, -1, 0.25f, 2, 0};
    for (int i = 0; i < 20; i++) w[i] = (float)((i * 7 % 11) - 5) / 4.0f;
    gwr_dim ad[2] = {3, 4};
    int64_t wd[2] = {4, 5};
    gwr_network *net = gwr_network_new("gemm_act");
    gwr_tensor *g = gwr_gemm(net, input(net, "a", 2, ad), gwr_constant(net, GWR_FLOAT32, 2, wd, w), vec(net, 5, c),
                             1.0f, 1.0f, 0, 0);
    return finish(net, clip ? gwr_clip(net, g, gwr_constant_f32(net, 0), gwr_constant_f32(net, 1)) : gwr_relu(net, g));
}
static gwr_network *gemm_act_fires(void) { return gemm_act(0); }
static gwr_network *gemm_act_idle(void) { return gemm_act(1); }
/* ---- scale and Pad folding -------------------------------------------------------- */

static const float w3223[54] = {0.5f, -0.25f, 1, 0.75f, -1, 0.125f, 0.5f, 0.25f, -0.5f, 1, -0.75f, 0.25f, 0.5f, -0.125f,
                                0.375f, -1, 0.5f, 0.25f, 0.75f, -0.5f, 0.125f, 1, -0.25f, 0.5f, -0.375f, 0.25f, 0.5f,
                                -1, 0.75f, 0.25f, -0.5f, 0.125f, 1, 0.5f, -0.25f, 0.375f, 0.25f, -0.75f, 0.5f, 1,
                                -0.125f, 0.25f, 0.5f, -0.5f, 0.75f, 0.125f, -1, 0.25f, 0.5f, 0.375f, -0.25f, 1, 0.5f,
                                -0.75f};

/* Conv(x [1,2,5,5]) -> [1,3,3,3] * k: k [1,3,1,1] is per channel; k [3]
 * runs along the last axis (also of extent 3) and must stay. */
static gwr_network *scale_conv(int per_channel) {
    static const float k[3] = {0.5f, 2, -1.5f};
    gwr_dim xd[4] = {1, 2, 5, 5};
    const int64_t wd[4] = {3, 2, 3, 3}, kd[4] = {1, 3, 1, 1};
    gwr_network *net = gwr_network_new("scale_conv");
    gwr_tensor *y = gwr_conv(net, input(net, "x", 4, xd), gwr_constant(net, GWR_FLOAT32, 4, wd, w3223), NULL, NULL);
    gwr_tensor *kt = per_channel ? gwr_constant(net, GWR_FLOAT32, 4, kd, k) : vec(net, 3, k);
    return finish(net, gwr_mul(net, y, kt));
}
static gwr_network *scale_conv_fires(void) { return scale_conv(1); }
static gwr_network *scale_conv_idle(void) { return scale_conv(0); }

/* MatMul(a [3, 4], W [4, 5]) * k: k [5] per column; k [3, 1] per row stays. */
static gwr_network *scale_gemm(int per_column) {
    static const float k[5] = {0.5f, 2, -1.5f, 1, 0.25f};
    gwr_dim ad[2] = {3, 4};
    const int64_t wd[2] = {4, 5}, kd[2] = {3, 1};
    gwr_network *net = gwr_network_new("scale_gemm");
    gwr_tensor *y = gwr_matmul(net, input(net, "a", 2, ad), gwr_constant(net, GWR_FLOAT32, 2, wd, w3223));
    gwr_tensor *kt = per_column ? vec(net, 5, k) : gwr_constant(net, GWR_FLOAT32, 2, kd, k);
    return finish(net, gwr_mul(net, y, kt));
}
static gwr_network *scale_gemm_fires(void) { return scale_gemm(1); }
static gwr_network *scale_gemm_idle(void) { return scale_gemm(0); }

/* MatMul(a * 0.125, W): W constant folds; W a graph input (q @ k^T) stays. */
static gwr_network *scalar_mm(int const_w) {
    gwr_dim ad[2] = {3, 4}, wdd[2] = {4, 5};
    const int64_t wd[2] = {4, 5};
    gwr_network *net = gwr_network_new("scalar_mm");
    gwr_tensor *a = input(net, "a", 2, ad);
    gwr_tensor *w = const_w ? gwr_constant(net, GWR_FLOAT32, 2, wd, w3223) : input(net, "w", 2, wdd);
    return finish(net, gwr_matmul(net, gwr_mul(net, a, gwr_constant_f32(net, 0.125f)), w));
}
static gwr_network *scalar_mm_fires(void) { return scalar_mm(1); }
static gwr_network *scalar_mm_idle(void) { return scalar_mm(0); }

/* Pad(x, 1 on H and W) -> Conv fires; -> AveragePool with
 * count_include_pad 0 stays (the padded zeros would stop counting). */
static gwr_network *pad_reader(int conv) {
    static const int64_t pads[8] = {0, 0, 1, 1, 0, 0, 1, 1}, kern[2] = {3, 3};
    const int64_t wd[4] = {3, 2, 3, 3}, np = 8;
    gwr_dim xd[4] = {1, 2, 5, 5};
    gwr_network *net = gwr_network_new("pad_reader");
    gwr_tensor *x = input(net, "x", 4, xd);
    gwr_tensor *in[2] = {x, gwr_constant(net, GWR_INT64, 1, &np, pads)}, *p = op(net, "Pad", 2, in);
    gwr_conv_params cp = {.nspatial = 2, .kernel = kern};
    gwr_tensor *y = conv ? gwr_conv(net, p, gwr_constant(net, GWR_FLOAT32, 4, wd, w3223), NULL, &cp)
                         : gwr_avg_pool(net, p, &cp);
    return finish(net, y);
}
static gwr_network *pad_conv_fires(void) { return pad_reader(1); }
static gwr_network *pad_pool_idle(void) { return pad_reader(0); }
/* ---- transformer fusions (fuse_transformer.c; targets ort and gwr) --------------- */

static gwr_tensor *ramp(gwr_network *net, int64_t n, float a, float b) {
    float v[16];
    for (int64_t i = 0; i < n && i < 16; i++) v[i] = a + b * (float)i;
    return vec(net, n, v);
}

/* LayerNormalization(x + r) over the last axis; with `other_axis`, over axis 1 */
static gwr_network *skip_ln(int other_axis) {
    gwr_dim d[3] = {2, 4, 8};
    gwr_network *net = gwr_network_new("skip_ln");
    gwr_tensor *s = gwr_add(net, input(net, "x", 3, d), input(net, "r", 3, d));
    gwr_tensor *g = other_axis ? gwr_constant(net, GWR_FLOAT32, 2, (int64_t[]){4, 8}, (float[32]){1}) : ramp(net, 8, 0.5f, 0.1f);
    return finish(net, gwr_layer_norm(net, s, g, other_axis ? NULL : ramp(net, 8, -0.2f, 0.05f), other_axis ? 1 : -1, 1e-5f));
}
static gwr_network *skip_ln_fires(void) { return skip_ln(0); }
static gwr_network *skip_ln_idle(void) { return skip_ln(1); }

/* SimplifiedLayerNormalization(x + r) over the last axis; with `other_axis`, over axis 1 */
static gwr_network *skip_rms(int other_axis) {
    gwr_dim d[3] = {2, 4, 8};
    gwr_network *net = gwr_network_new("skip_rms");
    gwr_tensor *in[2] = {gwr_add(net, input(net, "x", 3, d), input(net, "r", 3, d)),
                         other_axis ? gwr_constant(net, GWR_FLOAT32, 2, (int64_t[]){4, 8}, (float[32]){1}) : ramp(net, 8, 0.5f, 0.1f)};
    gwr_tensor *y = NULL;
    gwr_args *a = gwr_args_new();
    if (a && !gwr_args_set_int(a, "axis", other_axis ? 1 : -1)) gwr_op_call(net, "", "SimplifiedLayerNormalization", 2, in, a, 1, &y);
    gwr_args_free(a);
    return finish(net, y);
}
static gwr_network *skip_rms_fires(void) { return skip_rms(0); }
static gwr_network *skip_rms_idle(void) { return skip_rms(1); }

/* rotate-half rotary, opset 23: q * Unsqueeze(Cos(Concat(f, f)), [1]) + Concat(-q2, q1) * Unsqueeze(Sin(..));
 * idle: Concat(q1, -q2) */
static gwr_network *rotary(int swapped) {
    gwr_dim xd[4] = {2, 3, 5, 8}, fd[3] = {2, 5, 4};
    static const int64_t one = 1;
    gwr_network *net = gwr_network_new("rotary");
    gwr_network_set_opset(net, "", 23);
    gwr_tensor *q = input(net, "q", 4, xd), *f = input(net, "f", 3, fd), *ff[2] = {f, f}, *h[2] = {NULL, NULL};
    gwr_tensor *e = gwr_concat(net, 2, ff, -1), *c = gwr_unsqueeze(net, gwr_cos(net, e), 1, &one);
    gwr_tensor *sn = gwr_unsqueeze(net, gwr_sin(net, e), 1, &one);
    gwr_split(net, q, -1, 2, NULL, h);
    gwr_tensor *parts[2] = {gwr_neg(net, h[1]), h[0]};
    if (swapped) parts[0] = h[0], parts[1] = gwr_neg(net, h[1]);
    return finish(net, gwr_add(net, gwr_mul(net, q, c), gwr_mul(net, gwr_concat(net, 2, parts, -1), sn)));
}
static gwr_network *rotary_fires(void) { return rotary(0); }

/* RotaryEmbedding(q [2, 3, 5, 8], cos, sin [2, 5, 4]) at opset 18 (lower_rotary, target ort); idle: opset 23 */
static gwr_network *rotary_op(int opset23) {
    gwr_dim xd[4] = {2, 3, 5, 8}, cd[3] = {2, 5, 4};
    gwr_network *net = gwr_network_new("rotary_op");
    gwr_network_set_opset(net, "", opset23 ? 23 : 18);
    gwr_tensor *in[3] = {input(net, "q", 4, xd), input(net, "c", 3, cd), input(net, "s", 3, cd)}, *y = NULL;
    gwr_op_call(net, "", "RotaryEmbedding", 3, in, NULL, 1, &y);
    return finish(net, y);
}
static gwr_network *rotary_op_fires(void) { return rotary_op(0); }
static gwr_network *rotary_op_idle(void) { return rotary_op(1); }

/* Expand(c [1, 4, 1], Where(Equal(k, [-1, -1, -1]), [1, 1, 1], k)), k = Concat(Shape(x)[0:1], [-1], [1]);
 * idle: k's first piece an int64 input (any value) */
static gwr_network *where_guard(int from_input) {
    static const int64_t z[1] = {0}, one[1] = {1}, m1[1] = {-1}, ones[3] = {1, 1, 1}, negs[3] = {-1, -1, -1};
    gwr_dim xd[2] = {2, 3}, nd[1] = {1};
    gwr_network *net = gwr_network_new("where_guard");
    gwr_tensor *x = input(net, "x", 2, xd);
    gwr_tensor *first = from_input ? gwr_network_add_input(net, "n", GWR_INT64, 1, nd)
                                   : gwr_slice(net, gwr_shape_of(net, x), 1, z, one, z, NULL);
    gwr_tensor *parts[3] = {first, gwr_constant_i64s(net, 1, m1), gwr_constant_i64s(net, 1, one)};
    gwr_tensor *k = gwr_concat(net, 3, parts, 0), *eq = NULL, *w = NULL;
    gwr_tensor *ein[2] = {k, gwr_constant_i64s(net, 3, negs)};
    gwr_op_call(net, "", "Equal", 2, ein, NULL, 1, &eq);
    gwr_tensor *win[3] = {eq, gwr_constant_i64s(net, 3, ones), k};
    if (eq) gwr_op_call(net, "", "Where", 3, win, NULL, 1, &w);
    return finish(net, w);
}
static gwr_network *where_guard_fires(void) { return where_guard(0); }
static gwr_network *where_guard_idle(void) { return where_guard(1); }

/* Transpose(MatMul(c [1, 4, 1], p [2, 1, 5]), [0, 2, 1]); idle: perm [0, 1, 2] */
static gwr_network *freqs(int idle) {
    static const float cv[4] = {1.0f, 0.5f, 0.25f, 0.125f};
    static const int64_t cd[3] = {1, 4, 1}, p021[3] = {0, 2, 1}, p012[3] = {0, 1, 2};
    gwr_dim pd[3] = {2, 1, 5};
    gwr_network *net = gwr_network_new("freqs");
    gwr_tensor *m = gwr_matmul(net, gwr_constant(net, GWR_FLOAT32, 3, cd, cv), input(net, "p", 3, pd));
    return finish(net, gwr_transpose(net, m, 3, idle ? p012 : p021));
}
static gwr_network *freqs_fires(void) { return freqs(0); }

/* Gather(Shape(Range(n0, n0 + n1, 1)), 0) with n0, n1 = x's dims; idle: step 2 */
static gwr_network *range_len(int step2) {
    static const int64_t z = 0, one = 1, two = 2;
    gwr_dim xd[2] = {3, 4};
    gwr_network *net = gwr_network_new("range_len");
    gwr_tensor *sh = gwr_shape_of(net, input(net, "x", 2, xd)), *a = NULL, *b = NULL, *r = NULL, *y = NULL;
    gwr_tensor *g0[2] = {sh, gwr_constant(net, GWR_INT64, 0, NULL, &z)}, *g1[2] = {sh, gwr_constant(net, GWR_INT64, 0, NULL, &one)};
    gwr_op_call(net, "", "Gather", 2, g0, NULL, 1, &a);
    gwr_op_call(net, "", "Gather", 2, g1, NULL, 1, &b);
    gwr_tensor *rin[3] = {a, gwr_add(net, a, b), gwr_constant(net, GWR_INT64, 0, NULL, step2 ? &two : &one)};
    gwr_op_call(net, "", "Range", 3, rin, NULL, 1, &r);
    gwr_tensor *gi[2] = {gwr_shape_of(net, r), gwr_constant(net, GWR_INT64, 0, NULL, &z)};
    gwr_op_call(net, "", "Gather", 2, gi, NULL, 1, &y);
    return finish(net, y);
}
static gwr_network *range_len_fires(void) { return range_len(0); }
static gwr_network *range_len_idle(void) { return range_len(1); }
static gwr_network *freqs_idle(void) { return freqs(1); }
static gwr_network *rotary_idle(void) { return rotary(1); }

/* Gelu(x + bias [8]); with `wide`, the bias [2, 8] */
static gwr_network *bias_gelu(int wide) {
    gwr_dim d[2] = {3, 8};
    int64_t bd[2] = {2, 8};
    gwr_network *net = gwr_network_new("bias_gelu");
    gwr_tensor *x = input(net, "x", wide ? 2 : 1, wide ? (gwr_dim[]){2, 8} : d + 1);
    gwr_tensor *b = wide ? gwr_constant(net, GWR_FLOAT32, 2, bd, (float[16]){0.5f, -1}) : ramp(net, 8, -1, 0.25f);
    return finish(net, gwr_gelu(net, gwr_add(net, x, b), NULL));
}
static gwr_network *bias_gelu_fires(void) { return bias_gelu(0); }
static gwr_network *bias_gelu_idle(void) { return bias_gelu(1); }

/* MatMul(q, Transpose(k, perm)) * 0.125 fires; with perm [1, 0, 2] (not
 * the last two axes) and q in place of the constant scale, nothing folds */
static gwr_network *matmul_scale(int bad_perm) {
    gwr_dim d[3] = {4, 4, 4};
    static const int64_t swap[3] = {0, 2, 1}, other[3] = {1, 0, 2};
    gwr_network *net = gwr_network_new("matmul_scale");
    gwr_tensor *q = input(net, "q", 3, d), *k = input(net, "k", 3, d);
    gwr_tensor *kt = gwr_transpose(net, k, 3, bad_perm ? other : swap);
    return finish(net, gwr_mul(net, gwr_matmul(net, q, kt), bad_perm ? q : gwr_constant_f32(net, 0.125f)));
}
static gwr_network *matmul_scale_fires(void) { return matmul_scale(0); }
static gwr_network *matmul_scale_idle(void) { return matmul_scale(1); }

/* x * Sigmoid(x); idle: y * Sigmoid(x) */
static gwr_network *silu(int other) {
    gwr_dim d = 8;
    gwr_network *net = gwr_network_new("silu");
    gwr_tensor *x = input(net, "x", 1, &d), *y = other ? input(net, "y", 1, &d) : x;
    return finish(net, gwr_mul(net, y, gwr_sigmoid(net, x)));
}
static gwr_network *silu_fires(void) { return silu(0); }
static gwr_network *silu_idle(void) { return silu(1); }

/* DynamicQuantizeLinear(x) -> MatMulInteger(q, W) -> Cast -> * (s * ws), W int8 [6, 5]
 * (t5q); fused: the MatMulIntegerToFloat written directly. idle: the Cast also a
 * network output (matmul_integer_to_float), the DQL's scale also one
 * (dynamic_quantize_matmul). */
static gwr_network *qmm_net(int fused, int shared) {
    static const int8_t w[30] = {3, -7, 12, 0, 5, -64, 9, 1, -2, 33, 8, -8, 4, 17, -30, 2, 6, -1, 60, -12, 7, 0, -5, 11, 21, -3, 14, -9, 1, 40};
    static const int8_t wz = 2;
    static const float ws = 0.0125f;
    int64_t wd[2] = {6, 5};
    gwr_dim xd[2] = {4, 6};
    gwr_network *net = gwr_network_new("qmm");
    gwr_tensor *x = input(net, "x", 2, xd), *q[3] = {NULL}, *y = NULL;
    gwr_tensor *W = gwr_constant(net, GWR_INT8, 2, wd, w), *Z = gwr_constant(net, GWR_INT8, 0, NULL, &wz);
    gwr_tensor *S = gwr_constant(net, GWR_FLOAT32, 0, NULL, &ws);
    if (!gwr_op_call(net, "", "DynamicQuantizeLinear", 1, &x, NULL, 3, q)) return finish(net, NULL);
    if (fused) {
        gwr_tensor *in[6] = {q[0], W, q[1], S, q[2], Z};
        if (!gwr_op_call(net, "com.microsoft", "MatMulIntegerToFloat", 6, in, NULL, 1, &y)) return finish(net, NULL);
    } else {
        gwr_tensor *in[4] = {q[0], W, q[2], Z}, *acc = NULL, *f = NULL;
        gwr_args *a = gwr_args_new();
        if (!a || gwr_args_set_int(a, "to", GWR_FLOAT32) || !gwr_op_call(net, "", "MatMulInteger", 4, in, NULL, 1, &acc) ||
            !gwr_op_call(net, "", "Cast", 1, &acc, a, 1, &f)) {
            gwr_args_free(a);
            return finish(net, NULL);
        }
        gwr_args_free(a);
        y = gwr_mul(net, f, gwr_mul(net, q[1], S));
        if (shared && gwr_network_mark_output(net, f)) return finish(net, NULL);
    }
    if (fused && shared && gwr_network_mark_output(net, q[1])) return finish(net, NULL);
    return finish(net, y);
}
static gwr_network *qmm_fires(void) { return qmm_net(0, 0); }
static gwr_network *qmm_idle(void) { return qmm_net(0, 1); }
static gwr_network *dqmm_fires(void) { return qmm_net(1, 0); }
static gwr_network *dqmm_idle(void) { return qmm_net(1, 1); }

/* QDQ: DQ(Q(x)) and DQ(W int8 per output channel) -> MatMul or Conv -> Q -> DQ.
 * MatMul (fuse_qdq): x [4, 6], W [6, 5] per column; fires: QLinearMatMul. Conv
 * (fuse_qdq_conv): x [1, 2, 4, 4], W [3, 2, 3, 3] per output channel, pads 1;
 * fires: QLinearConv. One y step (0.05, 0.2) apart at most, within the table's
 * 1. idle: W_q a network input, not a constant. */
static gwr_network *qdq_net(int conv, int idle) {
    static int8_t w[54];
    for (int i = 0; i < 54; i++) w[i] = (int8_t)((i * 37) % 255 - 127);
    static const float xs = 0.01f, ws[5] = {0.01f, 0.02f, 0.015f, 0.012f, 0.03f};
    static const uint8_t xz = 128, yz = 120;
    static const int64_t pads[4] = {1, 1, 1, 1};
    const float ys = conv ? 0.2f : 0.05f;
    int64_t wd[4] = {3, 2, 3, 3}, nch = conv ? 3 : 5;
    gwr_dim xd[4] = {1, 2, 4, 4}, wdd[4] = {3, 2, 3, 3};
    int rank = conv ? 4 : 2;
    if (!conv) xd[0] = 4, xd[1] = 6, wd[0] = wdd[0] = 6, wd[1] = wdd[1] = 5;
    gwr_network *net = gwr_network_new("qdq");
    gwr_tensor *x = input(net, "x", rank, xd);
    gwr_tensor *W = idle ? gwr_network_add_input(net, "wq", GWR_INT8, rank, wdd) : gwr_constant(net, GWR_INT8, rank, wd, w);
    gwr_tensor *XS = gwr_constant(net, GWR_FLOAT32, 0, NULL, &xs), *XZ = gwr_constant(net, GWR_UINT8, 0, NULL, &xz);
    gwr_tensor *YS = gwr_constant(net, GWR_FLOAT32, 0, NULL, &ys), *YZ = gwr_constant(net, GWR_UINT8, 0, NULL, &yz);
    gwr_tensor *WS = gwr_constant(net, GWR_FLOAT32, 1, &nch, ws), *t[6] = {NULL};
    gwr_tensor *q0[3] = {x, XS, XZ}, *w0[2] = {W, WS};
    gwr_args *a = gwr_args_new(), *ca = gwr_args_new();
    int bad = !a || !ca || gwr_args_set_int(a, "axis", conv ? 0 : 1) || gwr_args_set_ints(ca, "pads", 4, pads) ||
              !gwr_op_call(net, "", "QuantizeLinear", 3, q0, NULL, 1, &t[0]);
    gwr_tensor *d0[3] = {t[0], XS, XZ};
    bad = bad || !gwr_op_call(net, "", "DequantizeLinear", 3, d0, NULL, 1, &t[1]) || !gwr_op_call(net, "", "DequantizeLinear", 2, w0, a, 1, &t[2]);
    gwr_tensor *m[2] = {t[1], t[2]};
    bad = bad || !gwr_op_call(net, "", conv ? "Conv" : "MatMul", 2, m, conv ? ca : NULL, 1, &t[3]);
    gwr_tensor *q1[3] = {t[3], YS, YZ};
    bad = bad || !gwr_op_call(net, "", "QuantizeLinear", 3, q1, NULL, 1, &t[4]);
    gwr_tensor *d1[3] = {t[4], YS, YZ};
    bad = bad || !gwr_op_call(net, "", "DequantizeLinear", 3, d1, NULL, 1, &t[5]);
    gwr_args_free(a), gwr_args_free(ca);
    return finish(net, bad ? NULL : t[5]);
}
static gwr_network *qdq_fires(void) { return qdq_net(0, 0); }
static gwr_network *qdq_idle(void) { return qdq_net(0, 1); }
static gwr_network *qdq_conv_fires(void) { return qdq_net(1, 0); }
static gwr_network *qdq_conv_idle(void) { return qdq_net(1, 1); }

/* Sigmoid(Relu(x) + 1); idle: the Relu also a network output (links of one) */
static gwr_network *ew_chain(int shared) {
    gwr_dim d[2] = {3, 5};
    gwr_network *net = gwr_network_new("ew_chain");
    gwr_tensor *r = gwr_relu(net, input(net, "x", 2, d));
    if (shared) return gwr_network_mark_output(net, r) ? finish(net, NULL) : finish(net, gwr_sigmoid(net, r));
    return finish(net, gwr_sigmoid(net, gwr_add(net, r, gwr_constant_f32(net, 1.0f))));
}
static gwr_network *ew_chain_fires(void) { return ew_chain(0); }
static gwr_network *ew_chain_idle(void) { return ew_chain(1); }

/* Gemm(Transpose(a), W, c); idle: the Transpose also a network output */
static gwr_network *gemm_transpose(int shared) {
    gwr_dim d[2] = {4, 3};
    static const int64_t perm[2] = {1, 0};
    static float w[20];
    for (int i = 0; i < 20; i++) w[i] = (float)(i % 7) / 3.0f - 1;
    gwr_network *net = gwr_network_new("gemm_transpose");
    gwr_tensor *at = gwr_transpose(net, input(net, "a", 2, d), 2, perm);
    gwr_tensor *y = gwr_gemm(net, at, gwr_constant(net, GWR_FLOAT32, 2, (int64_t[]){4, 5}, w), ramp(net, 5, 0, 1), 1.0f,
                             1.0f, 0, 0);
    if (shared && gwr_network_mark_output(net, at)) return finish(net, NULL);
    return finish(net, y);
}
static gwr_network *gemm_transpose_fires(void) { return gemm_transpose(0); }
static gwr_network *gemm_transpose_idle(void) { return gemm_transpose(1); }

/* x / Sqrt(ReduceMean(x * x, axes=[-1]) + 1e-6) * gamma; idle: axes [0] */
static gwr_network *rms_norm(int axis0) {
    gwr_dim d[2] = {3, 8};
    static const int64_t last[1] = {-1}, first[1] = {0};
    gwr_network *net = gwr_network_new("rms");
    gwr_tensor *x = input(net, "x", 2, d), *sq = gwr_mul(net, x, x), *m = NULL, *s = NULL;
    gwr_args *a = gwr_args_new();
    gwr_args_set_ints(a, "axes", 1, axis0 ? first : last);
    gwr_op_call(net, "", "ReduceMean", 1, &sq, a, 1, &m);
    gwr_args_free(a);
    gwr_tensor *e = gwr_add(net, m, gwr_constant_f32(net, 1e-6f));
    gwr_op_call(net, "", "Sqrt", 1, &e, NULL, 1, &s);
    return finish(net, gwr_mul(net, gwr_div(net, x, s), ramp(net, 8, 0.5f, 0.1f)));
}
static gwr_network *rms_norm_fires(void) { return rms_norm(0); }
static gwr_network *rms_norm_idle(void) { return rms_norm(1); }
/* relu(Reshape(Reshape(x [2, 6], [3, 4]), [12])): one Reshape; with the
 * middle also an output, idle */
static gwr_network *reshapes(int middle_out) {
    static const int64_t s1[2] = {3, 4}, s2[1] = {12};
    gwr_dim d[2] = {2, 6};
    gwr_network *net = gwr_network_new("reshapes");
    gwr_tensor *m = gwr_reshape(net, input(net, "x", 2, d), 2, s1), *y = gwr_reshape(net, m, 1, s2);
    if (middle_out && m && gwr_network_mark_output(net, m)) y = NULL;
    return finish(net, gwr_relu(net, y));
}
static gwr_network *reshapes_fire(void) { return reshapes(0); }
static gwr_network *reshapes_idle(void) { return reshapes(1); }

/* relu(Reshape(x [batch, 3, 4], Concat(Gather(Shape(x), [0]), [k]))): k 12
 * folds to [-1, 12]; k -1 with the dim read off z [other, 12] instead of x
 * does not (a -1 beside a dynamic entry that is not x's own dim 0) */
static gwr_network *shape_chain(int64_t k) {
    static const int64_t i0[1] = {0};
    gwr_network *net = gwr_network_new("shape_chain");
    gwr_dim d[3] = {gwr_network_dim_sym(net, "batch"), 3, 4}, dz[2] = {gwr_network_dim_sym(net, "other"), 12};
    gwr_tensor *x = input(net, "x", 3, d), *z = k < 0 ? input(net, "z", 2, dz) : x, *s = op(net, "Shape", 1, &z);
    gwr_tensor *g[2] = {s, gwr_constant_i64s(net, 1, i0)};
    gwr_tensor *parts[2] = {op(net, "Gather", 2, g), gwr_constant_i64s(net, 1, &k)};
    gwr_tensor *in[2] = {x, gwr_concat(net, 2, parts, 0)};
    return finish(net, gwr_relu(net, op(net, "Reshape", 2, in)));
}
static gwr_network *shape_dims_fire(void) { return shape_chain(12); }
static gwr_network *shape_dims_idle(void) { return shape_chain(-1); }

/* x * k with k a Constant node read from a file (onnx.constant_node): it
 * becomes an initializer; without the mark (already one), idle. */
static gwr_network *constant_node(int marked) {
    static const float k[4] = {1, -2, 0.5f, 3};
    int64_t kd = 4;
    gwr_dim d = 4;
    gwr_network *net = gwr_network_new("constant_node");
    gwr_tensor *c = gwr_constant(net, GWR_FLOAT32, 1, &kd, k);
    if (marked && c && gwr_layer_set_prop(gwr_tensor_parent(c), "onnx.constant_node", "", 0)) c = NULL;
    return finish(net, gwr_mul(net, input(net, "x", 1, &d), c));
}
static gwr_network *constant_node_fires(void) { return constant_node(1); }
static gwr_network *constant_node_idle(void) { return constant_node(0); }
/* x * w with w a graph input with a default value (an initializer listed
 * as an input): w becomes a Constant; in an IR version 3 file, idle. */
static gwr_network *input_default(int ir3) {
    static const float k[4] = {1, -2, 0.5f, 3};
    int64_t kd = 4;
    gwr_dim d = 4;
    gwr_network *net = gwr_network_new("input_default");
    gwr_tensor *w = input(net, "w", 1, &d);
    gwr_weights v = {GWR_FLOAT32, 1, &kd, k, sizeof k, NULL, NULL};
    if (w && gwr_tensor_set_default(w, &v)) w = NULL;
    if (ir3 && gwr_network_set_prop(net, "onnx.ir_version", "3", 1)) w = NULL;
    return finish(net, gwr_mul(net, input(net, "x", 1, &d), w));
}
static gwr_network *input_default_fires(void) { return input_default(0); }
static gwr_network *input_default_idle(void) { return input_default(1); }
/* Focus: x[:, :, ::2, :][:, :, :, ::2] as two Slices, composed into one;
 * with both on axis 2, idle (not composed). */
static gwr_network *focus(int same_axis) {
    static const int64_t st[1] = {0}, en[1] = {INT64_MAX}, a2[1] = {2}, a3[1] = {3}, two[1] = {2};
    gwr_dim d[4] = {1, 2, 4, 6};
    gwr_network *net = gwr_network_new("focus");
    gwr_tensor *h = gwr_slice(net, input(net, "x", 4, d), 1, st, en, a2, two);
    return finish(net, gwr_relu(net, gwr_slice(net, h, 1, st, en, same_axis ? a2 : a3, two)));
}
static gwr_network *focus_fires(void) { return focus(0); }
static gwr_network *focus_idle(void) { return focus(1); }
/* x[:, :2] and x[:, 2:] (axis 1 of extent 5): one Split; with x[:, 3:]
 * instead (a gap), idle. */
static gwr_network *two_slices(int gap) {
    static const int64_t z[1] = {0}, two[1] = {2}, three[1] = {3}, end[1] = {INT64_MAX}, ax[1] = {1};
    gwr_dim d[2] = {3, 5};
    gwr_network *net = gwr_network_new("two_slices");
    gwr_tensor *x = gwr_relu(net, input(net, "x", 2, d));
    gwr_tensor *a = gwr_slice(net, x, 1, z, two, ax, NULL), *b = gwr_slice(net, x, 1, gap ? three : two, end, ax, NULL);
    gwr_tensor *in[2] = {gwr_reduce_sum(net, a, 1, ax, 1), gwr_reduce_sum(net, b, 1, ax, 1)};
    return finish(net, gwr_concat(net, 2, in, 1));
}
static gwr_network *two_slices_fires(void) { return two_slices(0); }
static gwr_network *two_slices_idle(void) { return two_slices(1); }

/* Transpose(Relu(Transpose(x, [1,0]) + 0.5), [1,0]): the Transposes cancel;
 * with the Relu also an output, idle */
static gwr_network *push_transpose(int relu_out) {
    static const int64_t swap[2] = {1, 0};
    gwr_dim d[2] = {2, 3};
    gwr_network *net = gwr_network_new("push_transpose");
    gwr_tensor *t = gwr_transpose(net, input(net, "x", 2, d), 2, swap);
    gwr_tensor *r = gwr_relu(net, gwr_add(net, t, gwr_constant_f32(net, 0.5f)));
    if (relu_out && r && gwr_network_mark_output(net, r)) r = NULL;
    return finish(net, gwr_sigmoid(net, gwr_transpose(net, r, 2, swap)));
}
static gwr_network *push_transpose_fires(void) { return push_transpose(0); }
static gwr_network *push_transpose_idle(void) { return push_transpose(1); }
/* x [2, 3, 4] read by `n` MatMuls by constant [4, 5] weights, each + a
 * constant bias: merge_qkv_matmuls merges three, leaves two */
static gwr_network *projections(int n) {
    static float w[4 * 5], b[5];
    for (int i = 0; i < 20; i++) w[i] = (float)((i * 7) % 11) / 11.0f - 0.5f;
    for (int i = 0; i < 5; i++) b[i] = 0.1f * (float)i - 0.2f;
    int64_t wd[2] = {4, 5}, bd = 5;
    gwr_dim xd[3] = {2, 3, 4};
    gwr_network *net = gwr_network_new("qkv");
    gwr_tensor *x = input(net, "x", 3, xd), *y = NULL;
    for (int i = 0; i < n; i++) {
        gwr_tensor *p = gwr_add(net, gwr_matmul(net, x, gwr_constant(net, GWR_FLOAT32, 2, wd, w)),
                                gwr_constant(net, GWR_FLOAT32, 1, &bd, b));
        y = y ? gwr_mul(net, y, p) : p;
    }
    return finish(net, y);
}
static gwr_network *qkv_fires(void) { return projections(3); }
static gwr_network *qkv_idle(void) { return projections(2); }
/* x [2, 3, 4], a gated MLP SiLU(x W1) * (x W3), W [4, 5]: the merge fires,
 * not with a bias after the gate projection (form 1); form 2 is the
 * merged product's halves (a Split), which fuse_swiglu takes, and form 0,
 * unmerged, it leaves */
static gwr_network *gated_mlp(int form) {
    static float w[4 * 10], b[5];
    for (int i = 0; i < 40; i++) w[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
    for (int i = 0; i < 5; i++) b[i] = 0.1f * (float)i - 0.2f;
    int64_t wd[2] = {4, 5}, w2[2] = {4, 10}, bd = 5;
    gwr_dim xd[3] = {2, 3, 4};
    gwr_network *net = gwr_network_new("mlp");
    gwr_tensor *x = input(net, "x", 3, xd), *g, *u;
    if (form == 2) {
        gwr_tensor *h[2];
        gwr_split(net, gwr_matmul(net, x, gwr_constant(net, GWR_FLOAT32, 2, w2, w)), -1, 2, NULL, h);
        g = h[0], u = h[1];
    } else {
        g = gwr_matmul(net, x, gwr_constant(net, GWR_FLOAT32, 2, wd, w));
        u = gwr_matmul(net, x, gwr_constant(net, GWR_FLOAT32, 2, wd, w + 20));
        if (form == 1) g = gwr_add(net, g, gwr_constant(net, GWR_FLOAT32, 1, &bd, b));
    }
    return finish(net, gwr_mul(net, gwr_mul(net, g, gwr_sigmoid(net, g)), u));
}
static gwr_network *gate_up_fires(void) { return gated_mlp(0); }
static gwr_network *gate_up_idle(void) { return gated_mlp(1); }
static gwr_network *swiglu_fires(void) { return gated_mlp(2); }

/* ---- the cases of each pass ------------------------------------------------------ */

/* rules_cleanup (src/passes/rules/cleanup.rules): Abs(Neg(x)) is Abs(x);
 * Neg(Abs(x)) is not touched. */
static gwr_network *cleanup_rules(int fire) {
    gwr_dim d = 8;
    gwr_network *net = gwr_network_new("cleanup");
    gwr_tensor *x = input(net, "x", 1, &d);
    gwr_layer *in = gwr_network_add_layer(net, fire ? "Neg" : "Abs", "", NULL, 1, &x, 1, NULL);
    gwr_layer_infer(in);
    gwr_tensor *y = gwr_layer_output(in, 0);
    gwr_layer *out = gwr_network_add_layer(net, fire ? "Abs" : "Neg", "", NULL, 1, &y, 1, NULL);
    gwr_layer_infer(out);
    return finish(net, gwr_layer_output(out, 0));
}
static gwr_network *cleanup_fires(void) { return cleanup_rules(1); }
static gwr_network *cleanup_idle(void) { return cleanup_rules(0); }

typedef struct pass_cases {
    const char *label;
    pass_case_build_fn fires, idle;
    int64_t expect;      /* rewrites of the firing case; -1: at least one */
    int needs_args;      /* the gpt_attention args */
} pass_cases;

static const pass_cases cases[] = {
    {"fuse_attention_with_bias", gpt_plugin, gpt_onnx, 1, 0},
    {"gpt_attention_remove_padding", gpt_plugin, gpt_onnx, -1, 1},
    {"fold_constants", fold_fires, no_constants, 1, 0},
    {"fold_constant_if", if_fires, if_idle, 1, 0},
    {"replace_add_with_sub", no_constants, no_add, 1, 0},
    {"fold_batchnorm", bn_fires, bn_idle, 1, 0},
    {"eliminate_identity", identity_fires, identity_idle, 1, 0},
    {"eliminate_noop_arith", arith_fires, arith_idle, 1, 0},
    {"eliminate_noop_reshape", reshape_fires, reshape_idle, 1, 0},
    {"compose_transposes", transposes_fire, transpose_single, 1, 0},
    {"fuse_hard_swish", hswish_fires, hswish_idle, 1, 0},
    {"fuse_layer_norm", layer_norm_fires, layer_norm_idle, 1, 0},
    {"fuse_matmul_add", matmul_add_fires, matmul_add_idle, 1, 0},
    {"fuse_gelu", gelu_fires, gelu_idle, 1, 0},
    {"fuse_clip_chains", clips_fire, clips_idle, 1, 0},
    {"rules_cleanup", cleanup_fires, cleanup_idle, 1, 0},
    {"eliminate_common_subexpressions", cse_fires, cse_idle, 1, 0},
    {"fuse_conv_activation", conv_act_fires, conv_act_idle, 1, 0},
    {"fuse_conv_add_activation", conv_add_fires, conv_add_idle, 1, 0},
    {"fuse_gemm_activation", gemm_act_fires, gemm_act_idle, 1, 0},
    {"fold_scale_into_conv", scale_conv_fires, scale_conv_idle, 1, 0},
    {"fold_scale_into_gemm", scale_gemm_fires, scale_gemm_idle, 1, 0},
    {"fold_scalar_around_matmul", scalar_mm_fires, scalar_mm_idle, 1, 0},
    {"fold_pad_into_conv", pad_conv_fires, pad_pool_idle, 1, 0},
    {"fuse_skip_layer_norm", skip_ln_fires, skip_ln_idle, 1, 0},
    {"fuse_skip_rms_norm", skip_rms_fires, skip_rms_idle, 1, 0},
    {"fuse_rotary", rotary_fires, rotary_idle, 1, 0},
    {"lower_rotary", rotary_op_fires, rotary_op_idle, 1, 0},
    {"fold_where_nonneg", where_guard_fires, where_guard_idle, 1, 0},
    {"fold_rotary_freqs", freqs_fires, freqs_idle, 1, 0},
    {"fold_range_length", range_len_fires, range_len_idle, -1, 0},
    {"fuse_bias_gelu", bias_gelu_fires, bias_gelu_idle, 1, 0},
    {"fuse_matmul_scale", matmul_scale_fires, matmul_scale_idle, 1, 0},
    {"fuse_silu", silu_fires, silu_idle, 1, 0},
    {"fuse_transpose_into_gemm", gemm_transpose_fires, gemm_transpose_idle, 1, 0},
    {"fuse_rms_norm", rms_norm_fires, rms_norm_idle, 1, 0},
    {"compose_reshapes", reshapes_fire, reshapes_idle, 1, 0},
    {"fold_shape_dims", shape_dims_fire, shape_dims_idle, 1, 0},
    {"constants_to_initializers", constant_node_fires, constant_node_idle, 1, 0},
    {"fold_input_defaults", input_default_fires, input_default_idle, 1, 0},
    {"compose_slices", focus_fires, focus_idle, 1, 0},
    {"merge_slices_into_split", two_slices_fires, two_slices_idle, 1, 0},
    {"push_transpose_through_elementwise", push_transpose_fires, push_transpose_idle, 1, 0},
    /* attention (test_attention.c has the forms) */
    {"fuse_attention", gpt_onnx23, gpt_plugin, 1, 0},
    {"lower_attention", gpt_sdpa, gpt_onnx, 1, 0},
    {"merge_qkv_matmuls", qkv_fires, qkv_idle, 1, 0},
    {"merge_gate_up_matmuls", gate_up_fires, gate_up_idle, 1, 0},
    {"fuse_swiglu", swiglu_fires, gate_up_fires, 1, 0},
    {"fuse_elementwise_chain", ew_chain_fires, ew_chain_idle, 1, 0},
    {"fuse_qdq", qdq_fires, qdq_idle, 1, 0},
    {"fuse_qdq_conv", qdq_conv_fires, qdq_conv_idle, 1, 0},
    {"fuse_matmul_integer_to_float", qmm_fires, qmm_idle, 1, 0},
    {"fuse_dynamic_quantize_matmul", dqmm_fires, dqmm_idle, 1, 0},
};

static const pass_cases *cases_of(const char *label) {
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (!strcmp(cases[i].label, label)) return &cases[i];
    return NULL;
}

static void run_pass(const gwr_pass_info *p, const pass_cases *pc) {
    static const gwr_dim_binding bind[] = {{"batch", 2}, {"seq", 4}};
    gwr_args *args = gwr_args_new();
    if (!CHECK(args)) return;
    gwr_args_set_int(args, "batch_size", 2);
    gwr_args_set_int(args, "in_len", 4);
    gwr_args_set_int(args, "hidden_size", 24);
    /* a pass not for target onnx runs for the first target it serves */
    unsigned target = p->targets & GWR_TARGET_ONNX ? 0 : p->targets & GWR_TARGET_ORT ? GWR_TARGET_ORT : GWR_TARGET_GWR;
    if (target) gwr_args_set_int(args, "target", target);
    pass_case c = {.label = p->label, .args = pc->needs_args || target ? args : NULL, .nbind = 2, .bind = bind,
                   .seed = 11};
    /* the numerics the table claims */
    c.atol = p->numerics == GWR_NUMERICS_APPROX ? p->tolerance : 0;
    c.rtol = 0;
    c.build = pc->fires;
    c.expect = pc->expect;
    pass_case_result r = pass_case_run(&c);
    if (!CHECK(r.rewrote && r.verified && r.compared && r.fired != 0 && (pc->expect < 0 || r.fired == pc->expect)))
        fprintf(stderr, "  %s, firing case: fired %lld; %s\n", p->label, (long long)r.fired, r.why);
    if (p->numerics == GWR_NUMERICS_CHANGES) {
        if (!CHECK(!r.numeric_pass)) fprintf(stderr, "  %s claims to change the results; they are the same\n", p->label);
    } else if (!CHECK(r.numeric_pass)) {
        fprintf(stderr, "  %s: '%s' differs by %g, over what the table claims (%s %g)\n", p->label, r.worst, r.max_abs,
                p->numerics == GWR_NUMERICS_EXACT ? "exact" : "within", c.atol);
    }
    c.build = pc->idle;
    c.expect = 0;
    r = pass_case_run(&c);
    if (!CHECK(r.ok)) fprintf(stderr, "  %s, idle case: %s\n", p->label, r.why);
    gwr_args_free(args);
}

TEST(test_every_pass_has_its_cases) {
    for (int i = 0; i < gwr_passes_count(); i++) {
        const gwr_pass_info *p = gwr_passes_info(i);
        const pass_cases *pc = cases_of(p->label);
        if (!CHECK(pc != NULL)) {
            fprintf(stderr, "  pass '%s' of the table has no cases in test_pass_table.c\n", p->label);
            continue;
        }
        run_pass(p, pc);
    }
    /* and no cases for a pass the table lost */
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (!CHECK(gwr_passes_find(cases[i].label, NULL) != NULL))
            fprintf(stderr, "  cases for '%s', which the table does not hold\n", cases[i].label);
}

int main(void) {
    RUN(test_every_pass_has_its_cases);
    return check_report();
}
