/* weight_only.c - weight-only quantization (gwr_quantize,
 * GWR_QUANT_WEIGHT_ONLY): the constant float32 weight of every MatMul with
 * a 2-D B [K, N] (and Gemm without transA, its B transposed when transB)
 * becomes o->bits-bit signed codes in blocks of o->block_size along K, one
 * float scale per block and output column, symmetric: the block's weight of
 * largest magnitude maps to the lowest code (-8 or -128; its scale takes
 * the sign that needs), the others round to nearest within [-8, 7] (or
 * [-128, 127]); a K that is no multiple of the block pads the last block.
 *
 *   target ort, gwr  com.microsoft MatMulNBits(A, B, scales, , , bias)
 *                    K, N, bits, block_size, accuracy_level 0; B uint8
 *                    [N, k_blocks, block_size * bits / 8], code + 2^(bits-1)
 *                    packed low bits first (no zero_points: the default
 *                    2^(bits-1)); scales [N * k_blocks]; the bias of an Add
 *                    of a constant [N] that alone reads the MatMul, or
 *                    Gemm's beta * C of N elements; Gemm's alpha in the
 *                    scales.
 *   target onnx      a constant INT4 (bits 4) or INT8 [K, N] ->
 *                    DequantizeLinear(scales [k_blocks, N], axis 0,
 *                    block_size) -> the MatMul / Gemm (transB cleared): the
 *                    default-domain opset is raised to 21 when lower.
 *
 * Methods: o->wo_method RTN rounds each weight to nearest; GPTQ (Frantar et
 * al.) quantizes the input channels k one by one and spreads each one's
 * rounding error over the channels not yet quantized, in proportion to the
 * layer's inputs' correlation: H = X^T X summed over the calibration
 * samples (gwr_q_collect on the layer's input) over `rows` rows of K
 * inputs, damped by (1% + K / rows) of its mean diagonal (the second term
 * shrinks a Hessian of too few rows toward the identity, where GPTQ is
 * round to nearest), U the upper Cholesky factor of H^-1; after rounding channel i,
 * W[:, j] -= (W[:, i] - Q[:, i]) / U[i][i] * U[i][j] for j > i. A block's
 * scales are computed from the weights as they are when the block starts.
 * An input that is 0 on every sample (H[i][i] = 0) is decoupled from the
 * others: its weights are rounded to nearest. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gwr/functional.h"
#include "quant/qgraph.h"

#define MS "com.microsoft"

static gwr_status oom(gwr_network *net) {
    return gwr_ir_error(net, GWR_ERR_NOMEM, "weight-only quantization: out of memory");
}

/* One layer to quantize: its codes q[N][kb * bs] (signed, padding 0) and
 * scales[N * kb], filled before the network changes. */
typedef struct wlayer {
    gwr_q_linear q;
    int8_t *codes;
    float *scales;
    const char *method; /* what was done: "rtn", "gptq", "rtn (gptq: ...)" */
} wlayer;

typedef struct wo {
    gwr_network *net;
    const gwr_quantize_options *o;
    int bits, bs, qmin, qmax;
    wlayer *w;
    int64_t nw, cap;
} wo;

static int64_t kblocks(const wo *c, int64_t K) { return (K + c->bs - 1) / c->bs; }

/* The scale of n weights (stride apart): the one of largest magnitude
 * maps to qmin; an all-zero block gets 1. */
static float block_scale(const wo *c, const float *w, int64_t n, int64_t stride) {
    float m = 0;
    for (int64_t i = 0; i < n; i++)
        if (fabsf(w[i * stride]) > fabsf(m)) m = w[i * stride];
    return m != 0 ? m / (float)c->qmin : 1.0f;
}

static int code_of(const wo *c, float w, float s) {
    float v = nearbyintf(w / s);
    return v < c->qmin ? c->qmin : v > c->qmax ? c->qmax : (int)v;
}

/* Round to nearest: w [K, N]. */
static void rtn(const wo *c, const float *w, int64_t K, int64_t N, int8_t *codes, float *scales) {
    int64_t kb = kblocks(c, K), kp = kb * c->bs;
    for (int64_t n = 0; n < N; n++)
        for (int64_t b = 0; b < kb; b++) {
            int64_t k0 = b * c->bs, len = K - k0 < c->bs ? K - k0 : c->bs;
            float s = block_scale(c, w + k0 * N + n, len, N);
            scales[n * kb + b] = s;
            for (int64_t k = k0; k < k0 + len; k++) codes[n * kp + k] = (int8_t)code_of(c, w[k * N + n], s);
        }
}

/* ---- GPTQ ------------------------------------------------------------------ */

/* In-place Cholesky factor of the lower triangle of the K x K matrix a
 * (a = L L^T, L in the lower triangle); -1 when a is not positive definite. */
static int cholesky(double *a, int64_t K) {
    for (int64_t i = 0; i < K; i++) {
        double *ri = a + i * K;
        for (int64_t j = 0; j <= i; j++) {
            const double *rj = a + j * K;
            double s = ri[j];
            for (int64_t k = 0; k < j; k++) s -= ri[k] * rj[k];
            if (i == j) {
                if (!(s > 0)) return -1;
                ri[i] = sqrt(s);
            } else {
                ri[j] = s / rj[j];
            }
        }
    }
    return 0;
}

/* U, the upper Cholesky factor of H^-1 (H^-1 = U^T U), into the upper
 * triangle of u (K x K), from H's lower triangle in h (overwritten); -1
 * when H is not positive definite. With J the order reversed, J H J = M M^T
 * (M lower) makes H = R R^T with R = J M J upper, so H^-1 = R^-T R^-1 and
 * U = R^-1 = J M^-1 J: one factorization and one triangular inverse. */
static int inverse_factor(double *h, double *u, int64_t K, double *t) {
    for (int64_t i = 0; i < K; i++) /* J H J, lower triangle */
        for (int64_t j = 0; j <= i; j++) u[i * K + j] = h[(K - 1 - j) * K + (K - 1 - i)];
    if (cholesky(u, K)) return -1;
    /* M^-1 in place, row by row: row i from the rows above it */
    for (int64_t i = 0; i < K; i++) {
        double *ri = u + i * K;
        for (int64_t j = 0; j < i; j++) t[j] = 0;
        for (int64_t k = 0; k < i; k++) {
            double lik = ri[k];
            const double *xk = u + k * K;
            for (int64_t j = 0; j <= k; j++) t[j] += lik * xk[j];
        }
        double d = 1.0 / ri[i];
        for (int64_t j = 0; j < i; j++) ri[j] = -t[j] * d;
        ri[i] = d;
    }
    for (int64_t i = 0; i < K; i++) /* U = J M^-1 J, upper */
        for (int64_t j = i; j < K; j++) h[i * K + j] = u[(K - 1 - i) * K + (K - 1 - j)];
    memcpy(u, h, (size_t)(K * K) * sizeof *u);
    return 0;
}

/* GPTQ of w [K, N] with the inputs' X^T X hsum (K x K, symmetric): codes
 * and scales as rtn's. 0, -1 when the damped Hessian is not positive
 * definite, -2 when out of memory. */
static int gptq(const wo *c, const float *w, int64_t K, int64_t N, const double *hsum, int64_t rows, int8_t *codes,
                float *scales) {
    int64_t kb = kblocks(c, K), kp = kb * c->bs;
    float *wt = gwr_malloc((size_t)(N * K) * sizeof *wt), *err = gwr_malloc((size_t)N * sizeof *err);
    double *h = gwr_malloc((size_t)(K * K) * sizeof *h), *u = gwr_malloc((size_t)(K * K) * sizeof *u);
    double *t = gwr_malloc((size_t)K * sizeof *t);
    int rc = -2;
    if (!wt || !err || !h || !u || !t) goto done;
    for (int64_t k = 0; k < K; k++) /* one row per output column */
        for (int64_t n = 0; n < N; n++) wt[n * K + k] = w[k * N + n];
    double mean = 0;
    for (int64_t i = 0; i < K; i++) mean += hsum[i * K + i];
    mean /= (double)K;
    rc = -1;
    /* 1% of the mean diagonal, plus K / rows of it: fewer calibration rows
     * than inputs leave X^T X singular, and GPTQ would then fit the few
     * rows it saw; shrunk toward the identity it tends to round to
     * nearest instead (test: 32 rows for K 128 made GPTQ worse than RTN
     * on other inputs, 0.18 vs 0.15, and 0.14 with the shrinkage) */
    for (double damp = 0.01 + (double)K / (double)(rows > 0 ? rows : 1); rc && damp <= 1e4; damp *= 10) {
        memcpy(h, hsum, (size_t)(K * K) * sizeof *h);
        for (int64_t i = 0; i < K; i++) {
            /* an input that was 0 on every sample: decoupled, so its weights are
             * rounded to nearest (GPTQ's zeroing them would break an
             * embedding whose rows the samples did not reach) */
            if (h[i * K + i] == 0) h[i * K + i] = 1;
            h[i * K + i] += damp * (mean > 0 ? mean : 1);
        }
        rc = inverse_factor(h, u, K, t);
    }
    if (rc) goto done;
    for (int64_t i = 0; i < K; i++) {
        int64_t b = i / c->bs;
        if (i % c->bs == 0) {
            int64_t len = K - i < c->bs ? K - i : c->bs;
            for (int64_t n = 0; n < N; n++) scales[n * kb + b] = block_scale(c, wt + n * K + i, len, 1);
        }
        const double *ui = u + i * K;
        for (int64_t n = 0; n < N; n++) {
            float s = scales[n * kb + b], v = wt[n * K + i];
            int q = code_of(c, v, s);
            codes[n * kp + i] = (int8_t)q;
            err[n] = (float)((v - (float)q * s) / ui[i]);
        }
        for (int64_t n = 0; n < N; n++) {
            float e = err[n], *row = wt + n * K;
            if (e == 0) continue;
            for (int64_t j = i + 1; j < K; j++) row[j] -= e * (float)ui[j];
        }
    }
done:
    gwr_free(wt), gwr_free(err), gwr_free(h), gwr_free(u), gwr_free(t);
    return rc;
}

/* X^T X of the inputs read by the layers being quantized, a batch of
 * inputs at a time. */
typedef struct hess {
    gwr_tensor *x;
    int64_t K, rows;
    double *h; /* lower triangle summed; mirrored after the run */
} hess;

typedef struct hctx {
    gwr_network *net;
    hess *hs;
} hctx;

/* sum a[r] * b[r] over n <= 64 values, in double (eight partial sums, so
 * that the compiler vectorizes the loop). */
static double dot_rows(const float *a, const float *b, int64_t n) {
    double p[8] = {0};
    int64_t r = 0;
    for (; r + 8 <= n; r += 8)
        for (int q = 0; q < 8; q++) p[q] += (double)a[r + q] * (double)b[r + q];
    for (; r < n; r++) p[0] += (double)a[r] * (double)b[r];
    return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
}

static gwr_status accumulate(void *ctx, int sample, int idx, gwr_value *v) {
    hctx *c = ctx;
    hess *e = &c->hs[idx];
    int r = gwr_value_rank(v);
    if (gwr_value_dtype(v) != GWR_FLOAT32 || r < 1 || gwr_value_dims(v)[r - 1] != e->K)
        return gwr_ir_error(c->net, GWR_ERR_SHAPE, "GPTQ: sample %d: input '%s' is not float32 [..., %lld]", sample,
                            gwr_tensor_name(e->x), (long long)e->K);
    const float *x = gwr_value_cdata(v);
    int64_t K = e->K, rows = gwr_value_numel(v) / K;
    e->rows += rows;
    /* Blocks of HB rows transposed, so that each h[i][j] takes one dot
     * product of two contiguous rows of HB values a block: the K x K
     * doubles of h stream through the cache once a block, not once a row
     * (a row at a time took 46 s on MiniLM-L3's 32 samples). */
    enum { HB = 64 };
    float *xt = gwr_malloc((size_t)(K * HB) * sizeof *xt);
    if (!xt) return gwr_ir_error(c->net, GWR_ERR_NOMEM, "GPTQ: out of memory");
    for (int64_t r0 = 0; r0 < rows; r0 += HB) {
        int64_t nb = rows - r0 < HB ? rows - r0 : HB;
        for (int64_t rr = 0; rr < nb; rr++)
            for (int64_t i = 0; i < K; i++) xt[i * HB + rr] = x[(r0 + rr) * K + i];
        for (int64_t i = 0; i < K; i++) {
            const float *xi = xt + i * HB;
            double *hi = e->h + i * K;
            for (int64_t j = 0; j <= i; j++) hi[j] += dot_rows(xi, xt + j * HB, nb);
        }
    }
    gwr_free(xt);
    return GWR_OK;
}

/* The Hessians of every layer's input, collected in batches that hold at
 * most ~256 MiB, and each layer quantized by GPTQ once its input's is in. */
#define GPTQ_BATCH_BYTES ((int64_t)256 << 20)

static gwr_status gptq_all(wo *c, int64_t *todo, int64_t ntodo, float **wkn) {
    gwr_network *net = c->net;
    hess *hs = gwr_calloc((size_t)ntodo + 1, sizeof *hs);
    const char **names = gwr_calloc((size_t)ntodo + 1, sizeof *names);
    gwr_status st = hs && names ? GWR_OK : oom(net);
    for (int64_t start = 0; !st && start < ntodo;) {
        /* the distinct inputs of layers todo[start..end) that fit a batch */
        int nh = 0;
        int64_t bytes = 0, end = start;
        for (; end < ntodo; end++) {
            wlayer *wl = &c->w[todo[end]];
            int found = 0;
            for (int k = 0; k < nh && !found; k++) found = hs[k].x == wl->q.x;
            if (found) continue;
            int64_t b = wl->q.K * wl->q.K * 8;
            if (nh && bytes + b > GPTQ_BATCH_BYTES) break;
            if (!(hs[nh].h = gwr_calloc((size_t)(wl->q.K * wl->q.K), sizeof(double)))) {
                st = oom(net);
                break;
            }
            hs[nh].x = wl->q.x, hs[nh].K = wl->q.K, hs[nh].rows = 0, names[nh] = gwr_tensor_name(wl->q.x);
            nh++, bytes += b;
        }
        hctx hc = {net, hs};
        if (!st) st = gwr_q_collect(net, c->o->calib, nh, names, accumulate, &hc, c->o->threads);
        for (int k = 0; !st && k < nh; k++) {
            int64_t K = hs[k].K;
            for (int64_t i = 0; i < K; i++)
                for (int64_t j = 0; j < i; j++) hs[k].h[j * K + i] = hs[k].h[i * K + j];
        }
        for (int64_t i = start; !st && i < end; i++) {
            wlayer *wl = &c->w[todo[i]];
            const double *h = NULL;
            int64_t rows = 0;
            for (int k = 0; k < nh && !h; k++)
                if (hs[k].x == wl->q.x) h = hs[k].h, rows = hs[k].rows;
            int rc = gptq(c, wkn[todo[i]], wl->q.K, wl->q.N, h, rows, wl->codes, wl->scales);
            if (rc == -2) st = oom(net);
            else if (rc) { /* not positive definite even damped: round to nearest */
                rtn(c, wkn[todo[i]], wl->q.K, wl->q.N, wl->codes, wl->scales);
                wl->method = "rtn (GPTQ: the inputs' Hessian is not positive definite)";
            }
        }
        for (int k = 0; k < nh; k++) gwr_free(hs[k].h), hs[k].h = NULL;
        start = end;
    }
    gwr_free(hs), gwr_free(names);
    return st;
}

/* ---- writing ----------------------------------------------------------------- */

/* MatMulNBits (targets ort, gwr) for wl, with bias (may be NULL), taking
 * the place of `last` (the layer or its bias Add). */
static gwr_status emit_nbits(wo *c, wlayer *wl, gwr_tensor *bias, gwr_layer *last, int64_t *bytes) {
    gwr_network *net = c->net;
    const gwr_q_linear *q = &wl->q;
    int64_t K = q->K, N = q->N, kb = kblocks(c, K), kp = kb * c->bs, blob = c->bs * c->bits / 8;
    int off = 1 << (c->bits - 1);
    uint8_t *packed = gwr_calloc((size_t)(N * kb * blob), 1);
    if (!packed) return oom(net);
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < kp; k++) {
            int u = wl->codes[n * kp + k] + off; /* padding: code 0 */
            uint8_t *p = packed + n * kb * blob;
            if (c->bits == 8) p[k] = (uint8_t)u;
            else p[k / 2] |= (uint8_t)(k & 1 ? u << 4 : u);
        }
    if (q->alpha != 1)
        for (int64_t i = 0; i < N * kb; i++) wl->scales[i] *= q->alpha;
    const char *wn = gwr_tensor_name(q->w);
    int64_t bdims[3] = {N, kb, blob}, ns = N * kb;
    gwr_tensor *tb = gwr_q_const(net, wn, c->bits == 4 ? "_Q4" : "_Q8", GWR_UINT8, 3, bdims, packed);
    gwr_free(packed);
    gwr_tensor *ts = tb ? gwr_q_const(net, wn, "_scales", GWR_FLOAT32, 1, &ns, wl->scales) : NULL;
    gwr_args *a = gwr_args_new();
    gwr_status st = GWR_OK;
    if (!a || gwr_args_set_int(a, "K", K) || gwr_args_set_int(a, "N", N) || gwr_args_set_int(a, "bits", c->bits) ||
        gwr_args_set_int(a, "block_size", c->bs) || gwr_args_set_int(a, "accuracy_level", 0))
        st = oom(net);
    gwr_tensor *in[6] = {q->x, tb, ts, NULL, NULL, bias}, *y = NULL;
    gwr_layer *mm = !st && ts ? gwr_op_call(net, MS, "MatMulNBits", bias ? 6 : 3, in, a, 1, &y) : NULL;
    gwr_args_free(a);
    if (st) return st;
    if (!mm) return gwr_q_fail(net, GWR_OK, "MatMulNBits for '%s'", gwr_layer_name(q->l));
    /* [..., K] -> [..., N] (the op table may not know the op) */
    int r = gwr_tensor_rank(q->x);
    if (r >= 1) {
        gwr_dim d[GWR_MAX_RANK];
        memcpy(d, gwr_tensor_dims(q->x), (size_t)r * sizeof *d);
        d[r - 1] = N;
        if ((st = gwr_tensor_set_type(y, GWR_FLOAT32, r, d))) return st;
    }
    if (q->kind == GWR_QL_GEMM && q->c && !bias) { /* a C that is no [N] constant: + beta * C after */
        gwr_tensor *cc = q->c, *beta = q->beta != 1 ? gwr_constant_f32(net, q->beta) : NULL;
        if (q->beta != 1) cc = beta ? gwr_mul(net, q->c, beta) : NULL;
        if (!cc || !(y = gwr_add(net, y, cc))) return gwr_q_fail(net, GWR_OK, "Gemm '%s': C", gwr_layer_name(q->l));
    }
    if (last != q->l && (st = gwr_layer_mark_as_removed(q->l))) return st;
    if (!(st = gwr_q_take_place(last, y, NULL))) gwr_q_rename_as(q->l, mm);
    if (!st) *bytes = N * kb * blob + 4 * ns;
    return st;
}

/* DequantizeLinear with block_size (target onnx) feeding wl's layer. */
static gwr_status emit_dq(wo *c, wlayer *wl, int64_t *bytes) {
    gwr_network *net = c->net;
    const gwr_q_linear *q = &wl->q;
    int64_t K = q->K, N = q->N, kb = kblocks(c, K), kp = kb * c->bs;
    size_t nb = (size_t)((K * N * c->bits + 7) / 8);
    uint8_t *packed = gwr_calloc(nb, 1);
    float *sc = gwr_malloc((size_t)(kb * N) * sizeof *sc);
    if (!packed || !sc) {
        gwr_free(packed), gwr_free(sc);
        return oom(net);
    }
    for (int64_t k = 0; k < K; k++)
        for (int64_t n = 0; n < N; n++) {
            int v = wl->codes[n * kp + k];
            int64_t i = k * N + n;
            if (c->bits == 8) packed[i] = (uint8_t)(int8_t)v;
            else packed[i / 2] |= (uint8_t)((v & 15) << (i & 1 ? 4 : 0));
        }
    for (int64_t b = 0; b < kb; b++)
        for (int64_t n = 0; n < N; n++) sc[b * N + n] = wl->scales[n * kb + b];
    const char *wn = gwr_tensor_name(q->w);
    int64_t wd[2] = {K, N}, sd[2] = {kb, N};
    gwr_tensor *tq = gwr_q_const(net, wn, "_quantized", c->bits == 8 ? GWR_INT8 : GWR_INT4, 2, wd, packed);
    gwr_tensor *ts = tq ? gwr_q_const(net, wn, "_scale", GWR_FLOAT32, 2, sd, sc) : NULL;
    gwr_free(packed), gwr_free(sc);
    gwr_args *a = gwr_args_new();
    gwr_status st = GWR_OK;
    if (!a || gwr_args_set_int(a, "axis", 0) || gwr_args_set_int(a, "block_size", c->bs)) st = oom(net);
    gwr_tensor *in[2] = {tq, ts}, *deq = NULL;
    if (!st && (!ts || !gwr_op_call(net, "", "DequantizeLinear", 2, in, a, 1, &deq)))
        st = gwr_q_fail(net, GWR_OK, "DequantizeLinear for '%s'", gwr_layer_name(q->l));
    gwr_args_free(a);
    if (!st) st = gwr_layer_set_input(q->l, 1, deq);
    if (!st && q->kind == GWR_QL_GEMM && q->trans_b) st = gwr_layer_set_int(q->l, "transB", 0);
    if (!st) *bytes = (int64_t)nb + 4 * kb * N;
    return st;
}

/* The bias that MatMulNBits takes for wl (a constant of N float32
 * elements), and the layer whose output the MatMulNBits then replaces. */
static gwr_tensor *bias_of(wo *c, wlayer *wl, gwr_layer **last, gwr_status *st) {
    const gwr_q_linear *q = &wl->q;
    gwr_network *net = c->net;
    *last = q->l, *st = GWR_OK;
    gwr_match_const k;
    if (q->kind == GWR_QL_GEMM) {
        if (!q->c || !gwr_match_const_get(q->c, &k) || k.dtype != GWR_FLOAT32 || k.numel != q->N || k.rank > 2 ||
            k.dims[k.rank - 1] != q->N)
            return NULL;
        float *b = gwr_malloc((size_t)q->N * sizeof *b);
        if (!b) return *st = oom(net), NULL;
        for (int64_t i = 0; i < q->N; i++) b[i] = q->beta * ((const float *)k.data)[i];
        gwr_tensor *t = gwr_q_const(net, gwr_tensor_name(q->c), "_bias", GWR_FLOAT32, 1, &q->N, b);
        gwr_free(b);
        if (!t) *st = GWR_ERR_NOMEM;
        return t;
    }
    gwr_tensor *y = gwr_layer_output(q->l, 0);
    gwr_layer *add = gwr_match_sole_reader(y);
    if (gwr_tensor_output_index(y) >= 0 || !gwr_match_is_op(add, "Add")) return NULL;
    gwr_tensor *b = gwr_layer_input(add, 0) == y ? gwr_layer_input(add, 1) : gwr_layer_input(add, 0);
    int ry = gwr_tensor_rank(y);
    if (b == y || !gwr_match_const_get(b, &k) || k.dtype != GWR_FLOAT32 || k.numel != q->N || k.rank < 1 ||
        ry < k.rank || k.dims[k.rank - 1] != q->N)
        return NULL;
    if (k.rank != 1 && !(b = gwr_q_const(net, gwr_tensor_name(b), "_flat", GWR_FLOAT32, 1, &q->N, k.data))) {
        *st = GWR_ERR_NOMEM;
        return NULL;
    }
    *last = add;
    return b;
}

/* ---- the mode ---------------------------------------------------------------- */

gwr_status gwr_q_weight_only(gwr_network *net, const gwr_quantize_options *o, gwr_quant_report *rep) {
    wo c = {.net = net, .o = o, .bits = o->bits, .bs = o->block_size};
    c.qmin = -(1 << (c.bits - 1)), c.qmax = (1 << (c.bits - 1)) - 1;
    int contrib = (o->target & (GWR_TARGET_ORT | GWR_TARGET_GWR)) != 0;
    int gptq_on = o->wo_method == GWR_WO_GPTQ;
    int64_t before = 0, after = 0, n0 = gwr_network_num_layers(net), ntodo = 0;
    int64_t *todo = gwr_calloc((size_t)n0 + 1, sizeof *todo);
    float **wkn = gwr_calloc((size_t)n0 + 1, sizeof *wkn);
    gwr_status st = todo && wkn ? GWR_OK : oom(net);
    /* 1. the layers, their weights as [K, N] */
    for (int64_t i = 0; !st && i < n0; i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        gwr_q_linear q;
        if (!gwr_q_linear_of(l, &q)) continue;
        const char *kept = NULL;
        if (q.kind == GWR_QL_CONV) kept = "kept float32: weight-only quantizes MatMul and Gemm";
        else if (gwr_q_listed(o->exclude, l)) kept = "kept float32: --exclude";
        else if (q.kind == GWR_QL_GEMM && q.trans_a) kept = "kept float32: Gemm with transA";
        before += gwr_q_weight_bytes(&q);
        if (kept) {
            after += gwr_q_weight_bytes(&q);
            if (rep && gwr_q_report_add(rep, gwr_layer_name(l), gwr_layer_op(l), kept, -1, -1)) st = oom(net);
            continue;
        }
        if (gwr_grow((void **)&c.w, sizeof *c.w, &c.cap, c.nw + 1)) {
            st = oom(net);
            break;
        }
        wlayer *wl = &c.w[c.nw];
        memset(wl, 0, sizeof *wl);
        wl->q = q, wl->method = gptq_on ? "gptq" : "rtn";
        int64_t kp = kblocks(&c, q.K) * c.bs;
        wl->codes = gwr_calloc((size_t)(q.N * kp), 1);
        wl->scales = gwr_malloc((size_t)(q.N * kblocks(&c, q.K)) * sizeof(float));
        wkn[c.nw] = gwr_q_weight_kn(&q);
        c.nw++;
        if (!wl->codes || !wl->scales || !wkn[c.nw - 1]) st = oom(net);
        todo[ntodo++] = c.nw - 1;
    }
    /* 2. the codes, before anything changes */
    if (!st && gptq_on && ntodo) st = gptq_all(&c, todo, ntodo, wkn);
    else
        for (int64_t i = 0; !st && i < c.nw; i++) rtn(&c, wkn[i], c.w[i].q.K, c.w[i].q.N, c.w[i].codes, c.w[i].scales);
    /* 3. opset 21 for blocked DequantizeLinear (checked before it changes anything) */
    if (!st && c.nw && !contrib)
        st = gwr_q_need_opset(net, 21, "weight-only quantization for target onnx (DequantizeLinear with block_size)");
    /* 4. the layers rewritten */
    for (int64_t i = 0; !st && i < c.nw; i++) {
        wlayer *wl = &c.w[i];
        wl->q.x = gwr_layer_input(wl->q.l, 0); /* a layer rewritten before may have replaced it */
        if ((st = gwr_q_type_x(&wl->q))) break;
        char name[256], op[64], what[160];
        snprintf(name, sizeof name, "%s", gwr_layer_name(wl->q.l));
        snprintf(op, sizeof op, "%s", gwr_layer_op(wl->q.l));
        int64_t qb = 0;
        if (contrib) {
            gwr_layer *last;
            gwr_tensor *bias = bias_of(&c, wl, &last, &st);
            if (!st) st = emit_nbits(&c, wl, bias, last, &qb);
        } else {
            st = emit_dq(&c, wl, &qb);
        }
        after += qb;
        snprintf(what, sizeof what, "%d-bit block %d, %s", c.bits, c.bs, wl->method);
        if (!st && rep && gwr_q_report_add(rep, name, op, what, -1, -1)) st = oom(net);
    }
    for (int64_t i = 0; i < c.nw; i++) gwr_free(c.w[i].codes), gwr_free(c.w[i].scales), gwr_free(wkn[i]);
    gwr_free(c.w), gwr_free(wkn), gwr_free(todo);
    if (rep) rep->bytes_before += before, rep->bytes_after += after;
    if (!st && c.nw) st = gwr_q_finish(net);
    return st;
}
