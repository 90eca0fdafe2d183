/* fuse_swiglu.c - the gated MLP of Llama-style decoders (SwiGLU):
 *
 *   merge_gate_up_matmuls (fuse, targets gwr and ort):
 *     SiLU(MatMul(x, W1)) * MatMul(x, W3)
 *     ->  G, U = Split(MatMul(x, [W1 | W3]), [F, F], axis -1);  SiLU(G) * U
 *   fuse_swiglu (lower, target gwr):
 *     SiLU(G) * U, G and U the first and second halves of one Y (..., 2F)
 *     along its last axis (a Split in two, or two Slices: Phi-3's fused
 *     gate_up_proj)  ->  gwr::SwiGLU(Y)
 *
 * SiLU is x * Sigmoid(x) (either operand order) or com.microsoft
 * QuickGelu(x) with alpha exactly 1, which fuse_silu makes of it. The
 * merge halves a decode step's passes over x and its threads' hand-offs
 * (one product of 2F columns, not two of F); SwiGLU then reads the
 * product once and writes F values, where the unfused graph wrote the
 * SiLU and the product (kernels/swiglu.c).
 *
 * Both fire only on the whole shape: G read by nothing but the SiLU, the
 * SiLU's output and U by nothing but the product (none a network
 * output); for the merge, W1 and W3 constant 2-D weights of x's float
 * dtype and one shape [K, F], each read by its MatMul alone (a weight
 * read elsewhere would be copied: the model would grow), and no bias
 * between the MatMuls and the SiLU and the product (a biased projection
 * is not this shape and stays). The merged weight is the two weights'
 * bytes side by side, row by row: exact. onnxruntime has no SwiGLU, but
 * its MatMul runs the merged product faster too (llama-gqa's decode step,
 * per-node minimum over 150 runs: 1.51 against 1.55 ms on one thread, 1.01
 * against 1.19 on two), so target ort gets the merge and keeps its SiLU
 * (QuickGelu) and the product; target onnx keeps the two projections. 
 *
 * Not rules: the merge builds a constant from two (rows interleaved), and
 * the halves are a Split or two Slices of computed bounds. */
#include <string.h>

#include "functional/functional_api.h"
#include "gwr/match.h"
#include "gwr/passes.h"
#include "passes/pass_util.h"
#include "util/util.h"

/* ---- the shapes both passes share ------------------------------------------- */

/* The parts of SiLU(g) whose output s only `root` reads. */
typedef struct silu_m {
    gwr_tensor *g;
    gwr_layer *layers[2];
    int n;
} silu_m;

static int live_op(const gwr_layer *l, const char *op) { return l && gwr_match_is_op(l, op); }

/* Does nothing but these n layers read t (t not a network output)? */
static int read_only_by(const gwr_tensor *t, gwr_layer *const *ls, int n) {
    if (gwr_tensor_output_index(t) >= 0 || gwr_tensor_num_live_users(t) != n) return 0;
    for (int64_t i = 0; i < gwr_tensor_num_users(t); i++) {
        gwr_layer *u = gwr_tensor_user(t, i, NULL);
        int ok = gwr_layer_is_removed(u);
        for (int j = 0; j < n && !ok; j++) ok = u == ls[j];
        if (!ok) return 0;
    }
    return 1;
}

/* s = SiLU(g), read by root alone: 1 and *m, else 0 and *why. */
static int silu_of(gwr_tensor *s, gwr_layer *root, silu_m *m, const char **why) {
    gwr_layer *p = gwr_tensor_parent(s);
    m->n = 0;
    if (live_op(p, "com.microsoft::QuickGelu") && gwr_layer_num_inputs(p) == 1) {
        float a = 0;
        if (gwr_layer_attr_float(p, "alpha", 1.702f, &a) || a != 1.0f) return *why = "QuickGelu's alpha is not 1 (not a SiLU)", 0;
        m->g = gwr_layer_input(p, 0), m->layers[m->n++] = p;
    } else if (live_op(p, "Mul") && gwr_layer_num_inputs(p) == 2) {
        for (int side = 0; side < 2 && !m->n; side++) {
            gwr_layer *sig = gwr_tensor_parent(gwr_layer_input(p, side));
            gwr_tensor *g = gwr_layer_input(p, 1 - side);
            if (!live_op(sig, "Sigmoid") || gwr_layer_num_inputs(sig) != 1 || gwr_layer_input(sig, 0) != g) continue;
            if (gwr_match_sole_reader(gwr_layer_output(sig, 0)) != p) return *why = "the Sigmoid's output is read elsewhere", 0;
            m->g = g, m->layers[m->n++] = p, m->layers[m->n++] = sig;
        }
        if (!m->n) return *why = "no SiLU (x * Sigmoid(x) or QuickGelu(x; alpha 1))", 0;
    } else {
        return *why = "no SiLU (x * Sigmoid(x) or QuickGelu(x; alpha 1))", 0;
    }
    if (gwr_match_sole_reader(s) != root) return *why = "the SiLU's output is read elsewhere", 0;
    if (!read_only_by(m->g, m->layers, m->n)) return *why = "the SiLU's input is read elsewhere", 0;
    return 1;
}

/* Mul l = SiLU(g) * u in either operand order: the SiLU's side, or -1 and *why. */
static int gated(gwr_layer *l, silu_m *m, const char **why) {
    if (gwr_layer_num_inputs(l) != 2 || *gwr_layer_domain(l)) return *why = "not an ONNX Mul of two inputs", -1;
    const char *w0 = NULL;
    for (int side = 0; side < 2; side++) {
        if (!silu_of(gwr_layer_input(l, side), l, m, why)) {
            if (!w0) w0 = *why;
            continue;
        }
        if (gwr_match_sole_reader(gwr_layer_input(l, 1 - side)) != l) return *why = "the up projection is read elsewhere", -1;
        return side;
    }
    *why = w0;
    return -1;
}

/* ---- merge_gate_up_matmuls ------------------------------------------------- */

/* MatMul l = x * W with W a constant 2-D weight of x's real float dtype
 * read by l alone: W's view in *w. */
static int projection(gwr_layer *l, gwr_match_const *w) {
    if (!live_op(l, "MatMul") || gwr_layer_num_inputs(l) != 2) return 0;
    gwr_tensor *x = gwr_layer_input(l, 0), *wt = gwr_layer_input(l, 1);
    gwr_dtype dt = gwr_tensor_dtype(x);
    if (!gwr_match_dtype_real_float(dt) || !gwr_match_const_get(wt, w) || w->rank != 2 || w->dtype != dt) return 0;
    return gwr_tensor_num_live_users(wt) == 1 && gwr_tensor_output_index(wt) < 0;
}

static int merge_gate_up(gwr_rewrite_ctx *c, gwr_layer *l) {
    if (!(gwr_ps_target(c) & (GWR_TARGET_GWR | GWR_TARGET_ORT))) return gwr_rewrite_no_match(c, "the merge is for targets gwr and ort");
    silu_m m;
    const char *why = NULL;
    int side = gated(l, &m, &why);
    if (side < 0) return gwr_rewrite_no_match(c, "%s", why);
    gwr_layer *pg = gwr_tensor_parent(m.g), *pu = gwr_tensor_parent(gwr_layer_input(l, 1 - side));
    gwr_match_const wg, wu;
    if (!projection(pg, &wg) || !projection(pu, &wu) || pg == pu)
        return gwr_rewrite_no_match(c, "the gate and up are not two MatMuls by unshared constant 2-D weights");
    gwr_tensor *x = gwr_layer_input(pg, 0);
    if (gwr_layer_input(pu, 0) != x) return gwr_rewrite_no_match(c, "the gate and up projections read different inputs");
    if (wg.dims[0] != wu.dims[0] || wg.dims[1] != wu.dims[1] || wg.dims[1] < 1)
        return gwr_rewrite_no_match(c, "the gate and up weights differ in shape");
    int64_t K = wg.dims[0], F = wg.dims[1], dims[2] = {K, 2 * F};
    size_t es = gwr_dtype_size(wg.dtype), row = (size_t)F * es;
    unsigned char *v = gwr_malloc((size_t)K * 2 * row + 1);
    if (!v) return gwr_rewrite_fail(c, GWR_ERR_NOMEM, "merge_gate_up_matmuls: out of memory");
    for (int64_t k = 0; k < K; k++) { /* [W1 | W3], row by row */
        memcpy(v + (size_t)k * 2 * row, (const unsigned char *)wg.data + (size_t)k * row, row);
        memcpy(v + (size_t)k * 2 * row + row, (const unsigned char *)wu.data + (size_t)k * row, row);
    }
    gwr_network *net = gwr_rewrite_ctx_network(c);
    gwr_tensor *W = gwr_constant(net, wg.dtype, 2, dims, v);
    gwr_free(v);
    gwr_tensor *y = W ? gwr_matmul(net, x, W) : NULL, *halves[2];
    int64_t sizes[2] = {F, F};
    if (!y || !gwr_split(net, y, -1, 2, sizes, halves))
        return gwr_rewrite_fail(c, GWR_ERR_NOMEM, "merge_gate_up_matmuls: %s", gwr_network_errmsg(net));
    gwr_status s = gwr_match_replace_layer(pg, 1, &halves[0]);
    if (!s) s = gwr_match_replace_layer(pu, 1, &halves[1]);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}

/* ---- fuse_swiglu ------------------------------------------------------------ */

/* The last axis of rank r as given (-1 or r - 1): 1 when it is. */
static int last_axis(int64_t a, int r) { return r > 0 && (a == -1 || a == r - 1); }

/* Slice l of Y along its last axis: [start, end) into *b, *e (steps 1). */
static int slice_of(gwr_layer *l, gwr_tensor **y, int64_t *b, int64_t *e) {
    if (!live_op(l, "Slice") || gwr_layer_num_inputs(l) < 3 || gwr_layer_num_inputs(l) > 5) return 0;
    int64_t st, en, ax = 0, step = 1;
    *y = gwr_layer_input(l, 0);
    int r = gwr_tensor_rank(*y);
    if (gwr_match_const_ints(gwr_layer_input(l, 1), &st, 1) != 1 || gwr_match_const_ints(gwr_layer_input(l, 2), &en, 1) != 1) return 0;
    gwr_tensor *axes = gwr_layer_num_inputs(l) > 3 ? gwr_layer_input(l, 3) : NULL, *steps = gwr_layer_num_inputs(l) > 4 ? gwr_layer_input(l, 4) : NULL;
    if (axes && gwr_match_const_ints(axes, &ax, 1) != 1) return 0;
    if (steps && (gwr_match_const_ints(steps, &step, 1) != 1 || step != 1)) return 0;
    if (!last_axis(ax, r)) return 0;
    *b = st, *e = en;
    return 1;
}

/* g and u the first and second halves of one Y (..., 2F) along its last
 * axis: Y, with the layers that cut it in *cut (1 or 2), else NULL. */
static gwr_tensor *halves_of(gwr_tensor *g, gwr_tensor *u, gwr_layer **cut, int *ncut, const char **why) {
    gwr_layer *pg = gwr_tensor_parent(g), *pu = gwr_tensor_parent(u);
    gwr_tensor *y = NULL;
    *why = "the SiLU's input and the other factor are not the two halves of one tensor (a Split in two or two Slices)";
    if (pg && pg == pu && live_op(pg, "Split")) {
        y = gwr_layer_input(pg, 0);
        int r = gwr_tensor_rank(y);
        int64_t ax = 0, sz[2];
        if (gwr_layer_num_outputs(pg) != 2 || gwr_layer_output(pg, 0) != g || gwr_layer_output(pg, 1) != u) return NULL;
        if (gwr_layer_attr_int(pg, "axis", 0, &ax) || !last_axis(ax, r)) return NULL;
        gwr_dim d = r > 0 ? gwr_tensor_dim(y, r - 1) : -1;
        if (!GWR_DIM_IS_KNOWN(d) || d % 2) return *why = "the split axis is of unknown or odd length", NULL;
        const int64_t *sa = NULL;
        int64_t n = -1;
        if (gwr_layer_num_inputs(pg) > 1 && gwr_layer_input(pg, 1)) {
            if (gwr_match_const_ints(gwr_layer_input(pg, 1), sz, 2) != 2 || sz[0] != d / 2 || sz[1] != d / 2) return NULL;
        } else if (gwr_layer_has_attr(pg, "split") && (gwr_layer_attr_ints(pg, "split", &sa, &n) || n != 2 || sa[0] != d / 2 || sa[1] != d / 2)) {
            return NULL;
        }
        cut[0] = pg, *ncut = 1;
        return y;
    }
    int64_t b0, e0, b1, e1;
    gwr_tensor *y1;
    if (!slice_of(pg, &y, &b0, &e0) || !slice_of(pu, &y1, &b1, &e1) || y != y1) return NULL;
    int r = gwr_tensor_rank(y);
    gwr_dim d = gwr_tensor_dim(y, r - 1);
    if (!GWR_DIM_IS_KNOWN(d) || d % 2) return *why = "the sliced axis is of unknown or odd length", NULL;
    if (b0 != 0 || e0 != d / 2 || b1 != d / 2 || e1 < d) return *why = "the Slices are not the first and second halves in that order", NULL;
    cut[0] = pg, cut[1] = pu, *ncut = 2;
    return y;
}

static int fuse_swiglu(gwr_rewrite_ctx *c, gwr_layer *l) {
    if (gwr_ps_target(c) != GWR_TARGET_GWR) return gwr_rewrite_no_match(c, "SwiGLU is gwr's own op (target gwr)");
    silu_m m;
    const char *why = NULL;
    int side = gated(l, &m, &why);
    if (side < 0) return gwr_rewrite_no_match(c, "%s", why);
    gwr_layer *cut[2];
    int ncut = 0;
    gwr_tensor *u = gwr_layer_input(l, 1 - side), *y = halves_of(m.g, u, cut, &ncut, &why);
    if (!y) return gwr_rewrite_no_match(c, "%s", why);
    gwr_network *net = gwr_rewrite_ctx_network(c);
    gwr_layer *f = gwr_plugin_create(net, GWR_PLUGIN_DOMAIN, GWR_SWIGLU_OP, NULL, 1, &y, NULL);
    if (!f) return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "SwiGLU: %s", gwr_last_errmsg());
    gwr_tensor *out = gwr_layer_output(f, 0);
    if (!gwr_match_same_type(out, gwr_layer_output(l, 0))) {
        gwr_layer_mark_as_removed(f);
        return gwr_rewrite_no_match(c, "the product is not of the halves' type (a broadcast)");
    }
    gwr_status s = gwr_match_replace_layer(l, 1, &out);
    for (int i = 0; !s && i < m.n; i++) s = gwr_layer_mark_as_removed(m.layers[i]);
    for (int i = 0; !s && i < ncut; i++) s = gwr_layer_mark_as_removed(cut[i]);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}

static const char *const roots[] = {"Mul", NULL};

const gwr_pattern_rewriter gwr_pattern_merge_gate_up_matmuls = {
    .name = "merge_gate_up_matmuls",
    .root_ops = roots,
    .match_and_rewrite = merge_gate_up,
};

const gwr_pattern_rewriter gwr_pattern_fuse_swiglu = {
    .name = "fuse_swiglu",
    .root_ops = roots,
    .match_and_rewrite = fuse_swiglu,
};

/* ---- the pass table's rows (pass_table.h) ---- */
#include "passes/pass_table.h"

GWR_PASS(merge_gate_up_matmuls, FUSE, .pattern = &gwr_pattern_merge_gate_up_matmuls, .level = GWR_LEVEL_EXTENDED,
         .targets = GWR_TARGET_ORT | GWR_TARGET_GWR, .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-5,
         .summary = "turn a gated MLP's gate and up projections, SiLU(x W1) * (x W3), into one MatMul of [W1 | W3] "
                    "and a Split");
GWR_PASS(fuse_swiglu, LOWER, .pattern = &gwr_pattern_fuse_swiglu, .level = GWR_LEVEL_EXTENDED, .targets = GWR_TARGET_GWR,
         .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-5,
         .summary = "turn SiLU(G) * U, G and U the halves of one tensor's last axis (a Split or two Slices), into "
                    "gwr::SwiGLU");
