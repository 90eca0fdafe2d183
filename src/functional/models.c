/* models.c - generated networks for demos, tests and benchmarks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "functional/functional_internal.h"

/* Deterministic weights: a 64-bit LCG mapped to [-scale, scale]. */
static gwr_buffer *random_buffer(uint64_t *state, int64_t n, float scale, float offset) {
    gwr_buffer *b = gwr_buffer_new_copy(NULL, (size_t)n * sizeof(float));
    if (!b) return NULL;
    float *p = (float *)gwr_buffer_data(b);
    for (int64_t i = 0; i < n; i++) {
        *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
        p[i] = offset + scale * ((float)(*state >> 40) / (float)(1u << 24) * 2.0f - 1.0f);
    }
    return b;
}

typedef struct gen {
    gwr_network *net;
    const gwr_gpt_config *cfg;
    uint64_t state;
    /* Shared buffers (share_weights), indexed by weight kind. */
    gwr_buffer *shared[16];
    gwr_tensor *causal; /* [seq, seq]: 0 on and below the diagonal, -inf above */
} gen;

/* A float32 constant of the given dims, from a shared or fresh buffer. */
static gwr_tensor *weight(gen *g, int kind, int rank, const int64_t *dims, float scale, float offset) {
    int64_t n = gwr_shape_numel(rank, dims);
    int share = g->cfg->share_weights;
    gwr_buffer *b = share ? g->shared[kind] : NULL;
    if (!b) {
        if (!(b = random_buffer(&g->state, n, scale, offset))) {
            gwr_ir_error(g->net, GWR_ERR_NOMEM, "out of memory for weights");
            return NULL;
        }
        if (share) g->shared[kind] = b; /* the generator's reference, dropped at the end */
    }
    gwr_weights w = {GWR_FLOAT32, rank, dims, gwr_buffer_data(b), (size_t)n * sizeof(float), b, NULL};
    gwr_tensor *t = gwr_network_add_constant(g->net, NULL, &w); /* the layer retains b */
    if (!share) gwr_buffer_release(b);
    return t;
}

static gwr_tensor *linear(gen *g, gwr_tensor *x, int kind, int64_t in, int64_t out) {
    int64_t wd[2] = {in, out}, bd[1] = {out};
    gwr_tensor *w = weight(g, kind, 2, wd, 0.02f, 0.0f);
    gwr_tensor *b = w ? weight(g, kind + 1, 1, bd, 0.02f, 0.0f) : NULL;
    gwr_tensor *y = b ? gwr_matmul(g->net, x, w) : NULL;
    return y ? gwr_add(g->net, y, b) : NULL;
}

static gwr_tensor *layer_norm(gen *g, gwr_tensor *x, int kind, int64_t h) {
    gwr_tensor *s = weight(g, kind, 1, &h, 0.1f, 1.0f);
    gwr_tensor *b = s ? weight(g, kind + 1, 1, &h, 0.02f, 0.0f) : NULL;
    return b ? gwr_layer_norm(g->net, x, s, b, -1, 1e-5f) : NULL;
}

/* The additive causal mask of the plain-ONNX attention, built once from
 * x's sequence length: Trilu(ConstantOfShape([seq, seq], -inf), k = 1)
 * keeps -inf strictly above the diagonal (a query cannot see later keys)
 * and zeroes the rest, as the GPTAttention plugin does implicitly. */
static gwr_tensor *causal_mask(gen *g, gwr_tensor *x) {
    gwr_network *net = g->net;
    int64_t one_start = 1, one_end = 2;
    gwr_tensor *seq = gwr_slice(net, gwr_shape_of(net, x), 1, &one_start, &one_end, NULL, NULL);
    gwr_tensor *ss[2] = {seq, seq}, *shape = seq ? gwr_concat(net, 2, ss, 0) : NULL, *fill = NULL, *mask = NULL;
    gwr_layer *c = shape ? gwr_op_call(net, "", "ConstantOfShape", 1, &shape, NULL, 1, &fill) : NULL;
    float ninf = -INFINITY;
    int64_t one = 1;
    gwr_buffer *b = c ? gwr_buffer_new_copy(&ninf, sizeof ninf) : NULL;
    gwr_weights w = {GWR_FLOAT32, 1, &one, b ? gwr_buffer_data(b) : NULL, sizeof ninf, b, NULL};
    if (!b || gwr_layer_set_tensor(c, "value", &w) || gwr_layer_infer(c)) {
        gwr_buffer_release(b);
        return NULL;
    }
    gwr_buffer_release(b);
    gwr_tensor *tri[2] = {fill, gwr_constant_i64(net, 1)};
    return tri[1] && gwr_op_call(net, "", "Trilu", 2, tri, NULL, 1, &mask) ? mask : NULL;
}

/* Attention out of plain ONNX ops, causal. */
static gwr_tensor *attention_onnx(gen *g, gwr_tensor *qkv) {
    gwr_network *net = g->net;
    int64_t h = g->cfg->hidden, nh = g->cfg->heads, hs = h / nh;
    gwr_tensor *parts[3];
    int64_t sizes[3] = {h, h, h};
    if (!gwr_split(net, qkv, -1, 3, sizes, parts)) return NULL;
    int64_t heads_shape[4] = {0, 0, nh, hs};
    int64_t perm_q[4] = {0, 2, 1, 3}, perm_k[4] = {0, 2, 3, 1};
    gwr_tensor *q = gwr_transpose(net, gwr_reshape(net, parts[0], 4, heads_shape), 4, perm_q);
    gwr_tensor *k = gwr_transpose(net, gwr_reshape(net, parts[1], 4, heads_shape), 4, perm_k);
    gwr_tensor *v = gwr_transpose(net, gwr_reshape(net, parts[2], 4, heads_shape), 4, perm_q);
    if (!q || !k || !v) return NULL;
    gwr_tensor *scores = gwr_mul(net, gwr_matmul(net, q, k), gwr_constant_f32(net, 1.0f / sqrtf((float)hs)));
    gwr_tensor *p = scores ? gwr_softmax(net, gwr_add(net, scores, g->causal), -1) : NULL;
    gwr_tensor *ctx = gwr_transpose(net, gwr_matmul(net, p, v), 4, perm_q);
    int64_t merged[3] = {0, 0, h};
    return ctx ? gwr_reshape(net, ctx, 3, merged) : NULL;
}

static gwr_tensor *attention_plugin(gen *g, gwr_tensor *qkv) {
    gwr_args *a = gwr_args_new();
    if (!a || gwr_args_set_tensor(a, "qkv", qkv) || gwr_args_set_int(a, "num_heads", g->cfg->heads) ||
        gwr_args_set_int(a, "head_size", g->cfg->hidden / g->cfg->heads)) {
        gwr_args_free(a);
        gwr_ir_error(g->net, GWR_ERR_NOMEM, "out of memory");
        return NULL;
    }
    gwr_tensor *outs[2] = {NULL, NULL};
    gwr_status s = gwr_call(g->net, GWR_GPT_ATTENTION, a, outs, 2, NULL);
    gwr_args_free(a);
    return s ? NULL : outs[0];
}

static gwr_tensor *block(gen *g, gwr_tensor *x) {
    int64_t h = g->cfg->hidden, f = g->cfg->ffn ? g->cfg->ffn : 4 * h;
    gwr_tensor *a = layer_norm(g, x, 0, h);
    gwr_tensor *qkv = a ? linear(g, a, 2, h, 3 * h) : NULL;
    gwr_tensor *ctx = qkv ? (g->cfg->use_plugin ? attention_plugin(g, qkv) : attention_onnx(g, qkv)) : NULL;
    gwr_tensor *proj = ctx ? linear(g, ctx, 4, h, h) : NULL;
    gwr_tensor *r = proj ? gwr_add(g->net, x, proj) : NULL;
    gwr_tensor *m = r ? layer_norm(g, r, 6, h) : NULL;
    gwr_tensor *up = m ? linear(g, m, 8, h, f) : NULL;
    gwr_tensor *act = up ? gwr_gelu(g->net, up, NULL) : NULL;
    gwr_tensor *down = act ? linear(g, act, 10, f, h) : NULL;
    return down ? gwr_add(g->net, r, down) : NULL;
}

gwr_tensor *gwr_build_gpt(gwr_network *net, const gwr_gpt_config *cfg) {
    if (!net || !cfg) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_build_gpt: NULL argument");
        return NULL;
    }
    if (cfg->blocks < 0 || cfg->hidden <= 0 || cfg->heads <= 0 || cfg->hidden % cfg->heads || cfg->ffn < 0 ||
        cfg->hidden > (1 << 16) || cfg->ffn > (1 << 18)) {
        gwr_ir_error(net, GWR_ERR_INVALID_ARG,
                     "gwr_build_gpt: bad config (blocks %d, hidden %d, heads %d, ffn %d): hidden must be a positive "
                     "multiple of heads",
                     cfg->blocks, cfg->hidden, cfg->heads, cfg->ffn);
        return NULL;
    }
    gen g = {.net = net, .cfg = cfg, .state = cfg->seed * 2654435761ULL + 1};
    gwr_dim dims[3] = {gwr_network_dim_sym(net, "batch"), gwr_network_dim_sym(net, "seq"), cfg->hidden};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 3, dims);
    if (x && !cfg->use_plugin && cfg->blocks && !(g.causal = causal_mask(&g, x))) x = NULL;
    for (int i = 0; x && i < cfg->blocks; i++) x = block(&g, x);
    gwr_tensor *y = x ? layer_norm(&g, x, 12, cfg->hidden) : NULL;
    if (y && (gwr_tensor_set_name(y, "y") || gwr_network_mark_output(net, y))) y = NULL;
    for (int k = 0; k < 16; k++) gwr_buffer_release(g.shared[k]);
    return y;
}
