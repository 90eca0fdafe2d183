/* bench_exec.c - the models of the executor benchmark (issue 5), built with
 * gwr's functional API and saved as ONNX:
 *
 *   bench_exec gen-gpt FILE      a 12-block GPT-style decoder, hidden 256,
 *                                4 heads, plain ONNX ops (MatMul, Softmax,
 *                                LayerNormalization, Gelu, ...); input x of
 *                                shape [batch, seq, 256]
 *   bench_exec gen-resnet FILE   a ResNet-18-style CNN for 224x224 images:
 *                                7x7/2 stem and 3x3 max pool, four stages of
 *                                two basic blocks (64, 128, 256, 512
 *                                channels; 1x1/2 projections), global
 *                                average pool and a 1000-way Gemm; Conv with
 *                                bias then Relu, as exporters write a model
 *                                whose batch norms were folded; input x of
 *                                shape [1, 3, 224, 224]
 *
 * Weights are deterministic pseudo-random values, scaled so activations
 * stay O(1). bench/run_exec_bench.sh times `gwr run` on them against
 * onnxruntime. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gwr/gwr.h"

static int die(const char *what, const char *msg) {
    fprintf(stderr, "bench_exec: %s: %s\n", what, msg);
    return 1;
}

static uint64_t rng = 0x853c49e6748fea9bULL;
static float urand(void) {
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return (float)((rng * 0x2545f4914f6cdd1dULL) >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}

static gwr_tensor *weights(gwr_network *net, int rank, const int64_t *dims, float scale) {
    int64_t n = gwr_shape_numel(rank, dims);
    float *v = malloc((size_t)n * sizeof *v);
    if (!v) return NULL;
    for (int64_t i = 0; i < n; i++) v[i] = urand() * scale;
    gwr_tensor *t = gwr_constant(net, GWR_FLOAT32, rank, dims, v);
    free(v);
    return t;
}

/* Conv (+ bias) with He-like scaling, optionally followed by Relu. */
static gwr_tensor *conv(gwr_network *net, gwr_tensor *x, int64_t cin, int64_t cout, int64_t k, int64_t stride,
                        int relu) {
    int64_t wd[4] = {cout, cin, k, k}, bd[1] = {cout}, pad = k / 2;
    int64_t strides[2] = {stride, stride}, pads[4] = {pad, pad, pad, pad};
    gwr_conv_params p = {.nspatial = 2, .strides = strides, .pads = pads};
    gwr_tensor *y = gwr_conv(net, x, weights(net, 4, wd, sqrtf(3.0f / (float)(cin * k * k))),
                             weights(net, 1, bd, 0.01f), &p);
    return relu && y ? gwr_relu(net, y) : y;
}

static gwr_tensor *basic_block(gwr_network *net, gwr_tensor *x, int64_t cin, int64_t cout, int64_t stride) {
    gwr_tensor *y = conv(net, x, cin, cout, 3, stride, 1);
    y = conv(net, y, cout, cout, 3, 1, 0);
    gwr_tensor *skip = cin == cout && stride == 1 ? x : conv(net, x, cin, cout, 1, stride, 0);
    return gwr_relu(net, gwr_add(net, y, skip));
}

static int gen_resnet(const char *path) {
    gwr_network *net = gwr_network_new("resnet18");
    gwr_dim xd[4] = {1, 3, 224, 224};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 4, xd);
    gwr_tensor *y = conv(net, x, 3, 64, 7, 2, 1);
    int64_t k3[2] = {3, 3}, s2[2] = {2, 2}, p1[4] = {1, 1, 1, 1};
    gwr_conv_params mp = {.nspatial = 2, .kernel = k3, .strides = s2, .pads = p1};
    y = gwr_max_pool(net, y, &mp);
    int64_t c = 64;
    static const int64_t widths[4] = {64, 128, 256, 512};
    for (int s = 0; s < 4 && y; s++) {
        y = basic_block(net, y, c, widths[s], s ? 2 : 1);
        y = basic_block(net, y, widths[s], widths[s], 1);
        c = widths[s];
    }
    y = gwr_global_avg_pool(net, y);
    int64_t flat[2] = {1, 512}, wd[2] = {512, 1000}, bd[1] = {1000};
    y = gwr_reshape(net, y, 2, flat);
    y = gwr_gemm(net, y, weights(net, 2, wd, sqrtf(3.0f / 512)), weights(net, 1, bd, 0.01f), 1.0f, 1.0f, 0, 0);
    if (!y || gwr_tensor_set_name(y, "logits") || gwr_network_mark_output(net, y))
        return die("resnet", gwr_network_errmsg(net));
    if (gwr_onnx_save(net, path, NULL)) return die(path, gwr_network_errmsg(net));
    printf("%s: ResNet-18-style CNN, %lld layers\n", path, (long long)gwr_network_num_live_layers(net));
    gwr_network_free(net);
    return 0;
}

static int gen_gpt(const char *path) {
    gwr_network *net = gwr_network_new("gpt12");
    gwr_gpt_config cfg = {.blocks = 12, .hidden = 256, .heads = 4, .use_plugin = 0, .seed = 1};
    if (!gwr_build_gpt(net, &cfg)) return die("gwr_build_gpt", gwr_network_errmsg(net));
    if (gwr_onnx_save(net, path, NULL)) return die(path, gwr_network_errmsg(net));
    printf("%s: 12-block GPT-style decoder, hidden 256, %lld layers\n", path, (long long)gwr_network_num_live_layers(net));
    gwr_network_free(net);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "gen-gpt")) return gen_gpt(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "gen-resnet")) return gen_resnet(argv[2]);
    fprintf(stderr, "usage: bench_exec gen-gpt FILE | gen-resnet FILE\n");
    return 2;
}
