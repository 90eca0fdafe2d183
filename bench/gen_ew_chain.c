/* gen_ew_chain.c - writes the element-wise chain models of the
 * fuse_elementwise_chain measurements (docs/optimize.md) to DIR:
 *   ew_swish.onnx     x * Sigmoid(1.702 x)                      x [1, 64, 112, 112]
 *   ew_norm.onnx      Relu((x - mean[c]) / std[c] * g[c] + b[c])  x [1, 64, 112, 112]
 *   ew_mish.onnx      x * Tanh(Softplus(x))                      x [128, 768]
 *   ew_mask.onnx      Clip((x - 1) * m + bias[768], -10, 10)      x, m [128, 768]
 * Usage: gen_ew_chain DIR. Run them with `gwr run M --random 1 --repeat 50
 * --threads 1` (the session fuses the chain) and with onnxruntime
 * (bench/ort_run.js) on the inputs `gwr run -o` writes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gwr/gwr.h"

static gwr_tensor *vec(gwr_network *net, int rank, const int64_t *d, float base, float step) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= d[i];
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = base + step * (float)(i % 17);
    gwr_tensor *t = gwr_constant(net, GWR_FLOAT32, rank, d, v);
    free(v);
    return t;
}

static gwr_tensor *op(gwr_network *net, const char *name, gwr_tensor *a, gwr_tensor *b) {
    gwr_tensor *in[2] = {a, b}, *y = NULL;
    gwr_op_call(net, "", name, b ? 2 : 1, in, NULL, 1, &y);
    return y;
}

static int save(gwr_network *net, gwr_tensor *y, const char *dir, const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int bad = !y || gwr_network_mark_output(net, y) || gwr_onnx_save(net, path, NULL);
    if (bad) fprintf(stderr, "gen_ew_chain: %s: %s\n", name, gwr_last_errmsg());
    gwr_network_free(net);
    return bad;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: gen_ew_chain DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    int bad = 0;
    gwr_dim img[4] = {1, 64, 112, 112}, tok[2] = {128, 768};
    int64_t ch[3] = {64, 1, 1}, last[1] = {768};

    gwr_network *net = gwr_network_new("ew_swish");
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 4, img);
    bad |= save(net, op(net, "Mul", x, op(net, "Sigmoid", op(net, "Mul", x, gwr_constant_f32(net, 1.702f)), NULL)), dir,
                "ew_swish.onnx");

    net = gwr_network_new("ew_norm");
    x = gwr_network_add_input(net, "x", GWR_FLOAT32, 4, img);
    gwr_tensor *t = op(net, "Sub", x, vec(net, 3, ch, 0.1f, 0.01f));
    t = op(net, "Div", t, vec(net, 3, ch, 0.5f, 0.05f));
    t = op(net, "Mul", t, vec(net, 3, ch, 0.9f, 0.02f));
    t = op(net, "Add", t, vec(net, 3, ch, -0.2f, 0.03f));
    bad |= save(net, op(net, "Relu", t, NULL), dir, "ew_norm.onnx");

    net = gwr_network_new("ew_mish");
    x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, tok);
    bad |= save(net, op(net, "Mul", x, op(net, "Tanh", op(net, "Softplus", x, NULL), NULL)), dir, "ew_mish.onnx");

    net = gwr_network_new("ew_mask");
    x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, tok);
    gwr_tensor *m = gwr_network_add_input(net, "m", GWR_FLOAT32, 2, tok);
    t = op(net, "Mul", op(net, "Sub", x, gwr_constant_f32(net, 1.0f)), m);
    t = op(net, "Add", t, vec(net, 1, last, -0.5f, 0.1f));
    gwr_tensor *in[3] = {t, gwr_constant_f32(net, -10.0f), gwr_constant_f32(net, 10.0f)}, *y = NULL;
    gwr_op_call(net, "", "Clip", 3, in, NULL, 1, &y);
    bad |= save(net, y, dir, "ew_mask.onnx");
    return bad;
}
