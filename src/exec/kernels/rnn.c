/* rnn.c - the recurrent layers of ONNX: RNN, GRU and LSTM.
 *
 * One driver serves the three: it checks the inputs, converts them to
 * double (float16, float32 and float64 tensors alike), computes the input
 * projection of every time step with one GEMM per direction, then walks
 * the steps, each a GEMM of the previous hidden state with R followed by
 * the cell's gate arithmetic. sequence_lens cut each batch entry short: a
 * finished entry keeps its state, its later Y rows are zero, and a reverse
 * direction starts from its own last valid step. float32 layers run in
 * float instead (rnn_f32.c) once the checks here pass. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "exec/kernels/rnn_internal.h"

/* Gates per cell (rows of W and R per hidden unit) and activations per
 * direction. */
static const int cell_gates[] = {1, 3, 4};
static const int cell_nact[] = {1, 2, 3};
static const char *const cell_name[] = {"RNN", "GRU", "LSTM"};

/* Keeps element counts well inside size_t and int64 arithmetic. */
#define RNN_MAX_ELEMS (INT64_C(1) << 34)

/* ---- activations ---------------------------------------------------------- */

/* name, how many of activation_alpha / activation_beta it takes, defaults */
static const struct {
    const char *name;
    enum act_kind kind;
    int na, nb;
    double alpha, beta;
} act_table[] = {
    {"Relu", A_RELU, 0, 0, 0, 0},           {"Tanh", A_TANH, 0, 0, 0, 0},
    {"Sigmoid", A_SIGMOID, 0, 0, 0, 0},     {"Affine", A_AFFINE, 1, 1, 1.0, 0.0},
    {"LeakyRelu", A_LEAKY, 1, 0, 0.01, 0},  {"ThresholdedRelu", A_THRESH, 1, 0, 1.0, 0},
    {"ScaledTanh", A_STANH, 1, 1, 1.0, 1.0}, {"HardSigmoid", A_HSIG, 1, 1, 0.2, 0.5},
    {"Elu", A_ELU, 1, 0, 1.0, 0},           {"Softsign", A_SOFTSIGN, 0, 0, 0, 0},
    {"Softplus", A_SOFTPLUS, 0, 0, 0, 0},
};

/* ---- element conversion ----------------------------------------------------- */

static int rnn_dtype_ok(gwr_dtype t) { return t == GWR_FLOAT32 || t == GWR_FLOAT64 || t == GWR_FLOAT16; }

/* A whole value as doubles. */
static void load_all(const gwr_value *v, double *dst) { gwr_ku_load_f64(v, 0, v->numel, dst); }

/* ---- the driver --------------------------------------------------------------- */

static int64_t checked_mul(int64_t a, int64_t b) { return gwr_ku_mul_max(a, b, RNN_MAX_ELEMS); }

static gwr_status parse_acts(gwr_kctx *k, rnn_args *a) {
    int nact = cell_nact[a->cell];
    static const enum act_kind defaults[3][3] = {
        {A_TANH, A_TANH, A_TANH}, {A_SIGMOID, A_TANH, A_TANH}, {A_SIGMOID, A_TANH, A_TANH}};
    for (int d = 0; d < 2; d++)
        for (int j = 0; j < 3; j++) a->acts[d][j] = (act){defaults[a->cell][j], 0, 0};
    const gwr_bytes *names;
    int64_t n;
    gwr_status st = gwr_layer_get_strings(k->layer, "activations", &names, &n);
    if (st == GWR_ERR_NOT_FOUND) return GWR_OK;
    if (st) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attribute 'activations' must be a list of strings");
    if (n != nact && n != nact * a->D)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s takes %d activations per direction (%lld directions), %lld given",
                          cell_name[a->cell], nact, (long long)a->D, (long long)n);
    const float *alphas = NULL, *betas = NULL;
    int64_t nal = gwr_k_floats(k, "activation_alpha", &alphas), nbe = gwr_k_floats(k, "activation_beta", &betas);
    int64_t ia = 0, ib = 0;
    for (int64_t j = 0; j < n; j++) {
        size_t t = 0, nt = sizeof act_table / sizeof *act_table;
        while (t < nt && (strlen(act_table[t].name) != names[j].len ||
                          strncasecmp(act_table[t].name, (const char *)names[j].data, names[j].len)))
            t++;
        if (t == nt)
            return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "unknown activation '%.*s'", (int)(names[j].len > 64 ? 64 : names[j].len),
                              (const char *)names[j].data);
        act ac = {act_table[t].kind, act_table[t].alpha, act_table[t].beta};
        if (act_table[t].na && ia < nal) ac.alpha = alphas[ia++];
        if (act_table[t].nb && ib < nbe) ac.beta = betas[ib++];
        a->acts[j / nact][j % nact] = ac;
    }
    if (n == nact && a->D == 2)
        for (int j = 0; j < nact; j++) a->acts[1][j] = a->acts[0][j];
    return GWR_OK;
}

/* Checks that input i is absent or has dtype dt and the given dims. */
static gwr_status check_input(gwr_kctx *k, int i, const char *what, gwr_dtype dt, int rank, const int64_t *dims) {
    const gwr_value *v = i < k->nin ? k->in[i] : NULL;
    if (!v) return GWR_OK;
    if (v->dtype != dt)
        return gwr_k_fail(k, GWR_ERR_TYPE, "%s is %s, expected %s", what, gwr_dtype_name(v->dtype), gwr_dtype_name(dt));
    int ok = v->rank == rank;
    for (int j = 0; ok && j < rank; j++) ok = v->dims[j] == dims[j];
    if (!ok) {
        char got[96], want[96];
        int n = snprintf(want, sizeof want, "[");
        for (int j = 0; j < rank && n > 0 && (size_t)n < sizeof want; j++)
            n += snprintf(want + n, sizeof want - (size_t)n, "%s%lld", j ? "," : "", (long long)dims[j]);
        if (n > 0 && (size_t)n < sizeof want) snprintf(want + n, sizeof want - (size_t)n, "]");
        gwr_value_type_str(v, got, sizeof got);
        return gwr_k_fail(k, GWR_ERR_SHAPE, "%s is %s, expected shape %s", what, got, want);
    }
    return GWR_OK;
}

static gwr_status rnn_parse(gwr_kctx *k, rnn_args *a) {
    int G = a->G = cell_gates[a->cell];
    int maxin = a->cell == CELL_LSTM ? 8 : 6;
    if (k->nin < 3 || k->nin > maxin)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s takes 3 to %d inputs, %d given", cell_name[a->cell], maxin, k->nin);
    if (k->nout < 1 || k->nout > (a->cell == CELL_LSTM ? 3 : 2))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s has %d outputs, at most %d allowed", cell_name[a->cell], k->nout,
                          a->cell == CELL_LSTM ? 3 : 2);
    const gwr_value *X = k->in[0], *W = k->in[1], *R = k->in[2];
    if (!X || !W || !R) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "X, W and R are required");
    if (!rnn_dtype_ok(X->dtype))
        return gwr_k_fail(k, GWR_ERR_TYPE, "X is %s; float16, float32 or float64 expected", gwr_dtype_name(X->dtype));
    if (X->rank != 3 || W->rank != 3 || R->rank != 3)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "X, W and R must have rank 3 (ranks %d, %d, %d)", X->rank, W->rank, R->rank);
    int64_t layout = gwr_k_int(k, "layout", 0);
    if (layout != 0 && layout != 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "layout must be 0 or 1, not %lld", (long long)layout);
    a->layout = (int)layout;
    const char *dir = gwr_k_string(k, "direction", "forward");
    if (!strcmp(dir, "forward")) a->D = 1;
    else if (!strcmp(dir, "reverse")) a->D = 1, a->reverse_only = 1;
    else if (!strcmp(dir, "bidirectional")) a->D = 2;
    else return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "direction must be forward, reverse or bidirectional, not '%s'", dir);
    a->T = layout ? X->dims[1] : X->dims[0];
    a->B = layout ? X->dims[0] : X->dims[1];
    a->I = X->dims[2];
    if (W->dims[1] % G)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "W's dim 1 (%lld) is not a multiple of %d gates", (long long)W->dims[1], G);
    int64_t H = W->dims[1] / G, hs = gwr_k_int(k, "hidden_size", H);
    if (hs != H)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "hidden_size is %lld but W holds %lld rows (%d gates)", (long long)hs,
                          (long long)W->dims[1], G);
    if (H <= 0) return gwr_k_fail(k, GWR_ERR_SHAPE, "hidden size must be positive");
    a->H = H;
    int64_t wd[3] = {a->D, G * H, a->I}, rd[3] = {a->D, G * H, H}, bd[2] = {a->D, 2 * G * H};
    gwr_status st;
    if ((st = check_input(k, 1, "W", X->dtype, 3, wd)) || (st = check_input(k, 2, "R", X->dtype, 3, rd)) ||
        (st = check_input(k, 3, "B", X->dtype, 2, bd)))
        return st;
    if (k->nin > 4 && k->in[4]) {
        const gwr_value *sl = k->in[4];
        if ((sl->dtype != GWR_INT32 && sl->dtype != GWR_INT64) || sl->rank != 1 || sl->dims[0] != a->B)
            return gwr_k_fail(k, GWR_ERR_SHAPE, "sequence_lens must be int32 [%lld]", (long long)a->B);
        for (int64_t b = 0; b < a->B; b++) {
            int64_t L = gwr_v_get_i64(sl, b);
            if (L < 0 || L > a->T)
                return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "sequence_lens[%lld] is %lld, outside [0, %lld]", (long long)b,
                                  (long long)L, (long long)a->T);
        }
    }
    int64_t hd[3] = {a->D, a->B, H};
    if (layout) hd[0] = a->B, hd[1] = a->D;
    if ((st = check_input(k, 5, "initial_h", X->dtype, 3, hd))) return st;
    if (a->cell == CELL_LSTM) {
        int64_t pd[2] = {a->D, 3 * H};
        if ((st = check_input(k, 6, "initial_c", X->dtype, 3, hd)) || (st = check_input(k, 7, "P", X->dtype, 2, pd)))
            return st;
    }
    /* Size bound: the largest buffers are T*B*G*H (projections) and T*B*I. */
    if (checked_mul(checked_mul(checked_mul(a->T, a->B), G * a->D), H) < 0 || checked_mul(checked_mul(a->T, a->B), a->I) < 0 ||
        checked_mul(checked_mul(a->D, G * H), a->I > H ? a->I : H) < 0)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "tensors too large");
    float clip;
    if (!gwr_layer_get_float(k->layer, "clip", &clip)) {
        if (!(clip > 0)) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "clip must be positive, not %g", (double)clip);
        a->has_clip = 1, a->clip = clip;
    }
    int64_t lbr = gwr_k_int(k, "linear_before_reset", 0), inf = gwr_k_int(k, "input_forget", 0);
    if (lbr != 0 && lbr != 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "linear_before_reset must be 0 or 1");
    if (inf != 0 && inf != 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input_forget must be 0 or 1");
    a->lbr = (int)lbr, a->input_forget = (int)inf;
    return parse_acts(k, a);
}

static double clipv(const rnn_args *a, double x) {
    if (!a->has_clip) return x;
    return x > a->clip ? a->clip : x < -a->clip ? -a->clip : x;
}

/* The work buffers of one run. */
typedef struct rnn_buf {
    double *x;    /* [T][B][I] */
    double *w;    /* [D][G*H][I] */
    double *r;    /* [D][G*H][H] */
    double *bias; /* [D][2*G*H], zeros when absent */
    double *p;    /* [D][3*H], zeros when absent */
    double *h0;   /* [D][B][H] */
    double *c0;   /* [D][B][H] */
    double *xw;   /* [T][B][G*H] of the current direction */
    double *hr;   /* [B][G*H] */
    double *tmp;  /* [B][H] */
    double *h, *c; /* [B][H] */
    int64_t *len;
} rnn_buf;

static void buf_free(rnn_buf *b) {
    gwr_free(b->x), gwr_free(b->w), gwr_free(b->r), gwr_free(b->bias), gwr_free(b->p), gwr_free(b->h0), gwr_free(b->c0), gwr_free(b->xw), gwr_free(b->hr);
    gwr_free(b->tmp), gwr_free(b->h), gwr_free(b->c), gwr_free(b->len);
}

static double *alloc_d(int64_t n) { return gwr_calloc((size_t)(n ? n : 1), sizeof(double)); }

/* Loads the inputs into b (x in [T][B][I] order, states in [D][B][H]). */
static int buf_load(gwr_kctx *k, const rnn_args *a, rnn_buf *b) {
    int64_t T = a->T, B = a->B, I = a->I, H = a->H, D = a->D, GH = a->G * a->H;
    b->x = alloc_d(T * B * I), b->w = alloc_d(D * GH * I), b->r = alloc_d(D * GH * H), b->bias = alloc_d(D * 2 * GH);
    b->p = alloc_d(D * 3 * H), b->h0 = alloc_d(D * B * H), b->c0 = alloc_d(D * B * H), b->xw = alloc_d(T * B * GH);
    b->hr = alloc_d(B * GH), b->tmp = alloc_d(B * H), b->h = alloc_d(B * H), b->c = alloc_d(B * H);
    b->len = gwr_malloc((size_t)(B ? B : 1) * sizeof *b->len);
    if (!b->x || !b->w || !b->r || !b->bias || !b->p || !b->h0 || !b->c0 || !b->xw || !b->hr || !b->tmp || !b->h || !b->c ||
        !b->len)
        return -1;
    const gwr_value *X = k->in[0];
    if (!a->layout) {
        load_all(X, b->x);
    } else {
        double *xb = alloc_d(T * B * I);
        if (!xb) return -1;
        load_all(X, xb);
        for (int64_t bb = 0; bb < B; bb++)
            for (int64_t t = 0; t < T; t++) memcpy(b->x + (t * B + bb) * I, xb + (bb * T + t) * I, (size_t)I * sizeof(double));
        gwr_free(xb);
    }
    load_all(k->in[1], b->w);
    load_all(k->in[2], b->r);
    if (k->nin > 3 && k->in[3]) load_all(k->in[3], b->bias);
    if (a->cell == CELL_LSTM && k->nin > 7 && k->in[7]) load_all(k->in[7], b->p);
    for (int s = 0; s < 2; s++) {
        int idx = s ? 6 : 5;
        double *dst = s ? b->c0 : b->h0;
        const gwr_value *v = idx < k->nin ? k->in[idx] : NULL;
        if (!v) continue;
        if (!a->layout) {
            load_all(v, dst);
        } else { /* [B][D][H] -> [D][B][H] */
            for (int64_t bb = 0; bb < B; bb++)
                for (int64_t d = 0; d < D; d++)
                    for (int64_t j = 0; j < H; j++) dst[(d * B + bb) * H + j] = gwr_v_get_f64(v, (bb * D + d) * H + j);
        }
    }
    const gwr_value *sl = k->nin > 4 ? k->in[4] : NULL;
    for (int64_t bb = 0; bb < B; bb++) b->len[bb] = sl ? gwr_v_get_i64(sl, bb) : T;
    return 0;
}

/* C[m][n] (rows ldc apart) = A[m][kk] * Bm[n][kk]^T. */
static void gemm_nt(int64_t m, int64_t n, int64_t kk, const double *A, const double *Bm, double *C, int64_t ldc) {
    gwr_ku_dgemm(0, 1, (int)m, (int)n, (int)kk, 1.0, A, (int)kk, Bm, (int)kk, 0.0, C, (int)ldc);
}

static int gemm_fits(const rnn_args *a) {
    int64_t lim = INT32_MAX;
    return a->T * a->B < lim && a->G * a->H < lim && a->I < lim && a->H < lim;
}

/* Runs direction d (reverse when rev) and writes Y, Y_h, Y_c. */
static void run_direction(const rnn_args *a, rnn_buf *b, int64_t d, int rev, gwr_value *Y, gwr_value *Yh, gwr_value *Yc) {
    int64_t T = a->T, B = a->B, I = a->I, H = a->H, D = a->D, GH = a->G * a->H;
    const double *w = b->w + d * GH * I, *r = b->r + d * GH * H, *wb = b->bias + d * 2 * GH, *rb = wb + GH;
    const double *p = b->p + d * 3 * H;
    const act *ac = a->acts[d];
    /* Input projections of every step: xw = x W^T + Wb (+ Rb where it is
     * simply added). */
    gemm_nt(T * B, GH, I, b->x, w, b->xw, GH);
    for (int64_t tb = 0; tb < T * B; tb++) {
        double *row = b->xw + tb * GH;
        for (int64_t j = 0; j < GH; j++) {
            /* GRU keeps Rbh apart: it goes inside the reset gate's product. */
            int keep_rb = a->cell == CELL_GRU && j >= 2 * H;
            row[j] += wb[j] + (keep_rb ? 0 : rb[j]);
        }
    }
    memcpy(b->h, b->h0 + d * B * H, (size_t)(B * H) * sizeof(double));
    memcpy(b->c, b->c0 + d * B * H, (size_t)(B * H) * sizeof(double));
    for (int64_t s = 0; s < T; s++) {
        /* hr = h R^T over all gates (GRU default mode: z and r only, its h
         * gate needs r first). */
        int64_t ng = a->cell == CELL_GRU && !a->lbr ? 2 * H : GH;
        gemm_nt(B, ng, H, b->h, r, b->hr, GH);
        if (ng < GH)
            for (int64_t bb = 0; bb < B; bb++) memset(b->hr + bb * GH + ng, 0, (size_t)(GH - ng) * sizeof(double));
        for (int64_t bb = 0; bb < B; bb++) {
            if (s >= b->len[bb]) continue;
            int64_t t = rev ? b->len[bb] - 1 - s : s;
            const double *xw = b->xw + (t * B + bb) * GH;
            const double *hr = b->hr + bb * GH;
            double *h = b->h + bb * H, *c = b->c + bb * H, *tmp = b->tmp + bb * H;
            switch (a->cell) {
            case CELL_RNN:
                for (int64_t j = 0; j < H; j++) tmp[j] = gwr_rnn_act_apply(&ac[0], clipv(a, xw[j] + hr[j]));
                memcpy(h, tmp, (size_t)H * sizeof(double));
                break;
            case CELL_GRU: {
                /* z = tmp; r kept in hr's r block; the new h gate in c (unused by GRU) */
                double *rr = b->hr + bb * GH + H;
                for (int64_t j = 0; j < H; j++) {
                    tmp[j] = gwr_rnn_act_apply(&ac[0], clipv(a, xw[j] + hr[j]));
                    rr[j] = gwr_rnn_act_apply(&ac[0], clipv(a, xw[H + j] + hr[H + j]));
                }
                if (a->lbr) {
                    for (int64_t j = 0; j < H; j++)
                        c[j] = gwr_rnn_act_apply(&ac[1], clipv(a, xw[2 * H + j] + rr[j] * (hr[2 * H + j] + rb[2 * H + j])));
                } else {
                    /* (r . h) Rh^T + Rbh, one row */
                    double *rh = b->hr + bb * GH + 2 * H; /* free: ng excluded it */
                    for (int64_t j = 0; j < H; j++) rh[j] = rr[j] * h[j];
                    for (int64_t j = 0; j < H; j++) {
                        const double *rrow = r + (2 * H + j) * H;
                        double acc = 0;
                        for (int64_t q = 0; q < H; q++) acc += rh[q] * rrow[q];
                        c[j] = gwr_rnn_act_apply(&ac[1], clipv(a, xw[2 * H + j] + acc + rb[2 * H + j]));
                    }
                }
                for (int64_t j = 0; j < H; j++) h[j] = (1 - tmp[j]) * c[j] + tmp[j] * h[j];
                break;
            }
            case CELL_LSTM:
                for (int64_t j = 0; j < H; j++) {
                    double gi = xw[j] + hr[j] + p[j] * c[j];
                    double gf = xw[2 * H + j] + hr[2 * H + j] + p[2 * H + j] * c[j];
                    double gc = xw[3 * H + j] + hr[3 * H + j];
                    double it = gwr_rnn_act_apply(&ac[0], clipv(a, gi));
                    double ft = a->input_forget ? 1.0 - it : gwr_rnn_act_apply(&ac[0], clipv(a, gf));
                    double ct = gwr_rnn_act_apply(&ac[1], clipv(a, gc));
                    double cn = ft * c[j] + it * ct;
                    double go = xw[H + j] + hr[H + j] + p[H + j] * cn;
                    double ot = gwr_rnn_act_apply(&ac[0], clipv(a, go));
                    c[j] = cn;
                    tmp[j] = ot * gwr_rnn_act_apply(&ac[2], cn);
                }
                memcpy(h, tmp, (size_t)H * sizeof(double));
                break;
            }
            if (Y) {
                int64_t base = a->layout ? ((bb * T + t) * D + d) * H : ((t * D + d) * B + bb) * H;
                for (int64_t j = 0; j < H; j++) gwr_ku_set(Y, base + j, h[j]);
            }
        }
    }
    for (int64_t bb = 0; bb < B; bb++) {
        int64_t base = a->layout ? (bb * D + d) * H : (d * B + bb) * H;
        for (int64_t j = 0; j < H; j++) {
            if (Yh) gwr_ku_set(Yh, base + j, b->h[bb * H + j]);
            if (Yc) gwr_ku_set(Yc, base + j, b->c[bb * H + j]);
        }
    }
}

static gwr_status k_recurrent(gwr_kctx *k, enum cell cell) {
    rnn_args a;
    memset(&a, 0, sizeof a);
    a.cell = cell;
    gwr_status st = rnn_parse(k, &a);
    if (st) return st;
    if (!gemm_fits(&a)) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "tensors too large");
    gwr_dtype dt = k->in[0]->dtype;
    int64_t yd[4] = {a.T, a.D, a.B, a.H}, hd[3] = {a.D, a.B, a.H};
    if (a.layout) yd[0] = a.B, yd[1] = a.T, yd[2] = a.D, hd[0] = a.B, hd[1] = a.D;
    gwr_value *out[3] = {NULL, NULL, NULL};
    for (int o = 0; o < k->nout; o++) {
        if (!gwr_k_out_used(k, o)) continue;
        if (!(out[o] = o ? gwr_k_out(k, o, dt, 3, hd) : gwr_k_out(k, o, dt, 4, yd))) return GWR_ERR_NOMEM;
    }
    /* Y rows past an entry's sequence length stay zero. */
    if (out[0] && out[0]->nbytes) memset(out[0]->data, 0, out[0]->nbytes);
    if (dt == GWR_FLOAT32) return gwr_rnn_f32(k, &a, out);
    rnn_buf b;
    memset(&b, 0, sizeof b);
    if (buf_load(k, &a, &b)) {
        buf_free(&b);
        return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    }
    for (int64_t d = 0; d < a.D; d++) run_direction(&a, &b, d, a.reverse_only || d == 1, out[0], out[1], out[2]);
    buf_free(&b);
    return GWR_OK;
}

static gwr_status k_rnn(gwr_kctx *k) { return k_recurrent(k, CELL_RNN); }
static gwr_status k_gru(gwr_kctx *k) { return k_recurrent(k, CELL_GRU); }
static gwr_status k_lstm(gwr_kctx *k) { return k_recurrent(k, CELL_LSTM); }
gwr_status gwr_rnn_lstm(gwr_kctx *k) { return k_lstm(k); }

const gwr_kernel_entry gwr_kernels_rnn[] = {
    GWR_KERNEL(RNN, k_rnn, .flags = GWR_KF_BLAS, .prepare = gwr_rnn_prepare, .prep_free = gwr_rnn_prep_free),
    GWR_KERNEL(GRU, k_gru, .flags = GWR_KF_BLAS, .prepare = gwr_rnn_prepare, .prep_free = gwr_rnn_prep_free),
    GWR_KERNEL(LSTM, k_lstm, .flags = GWR_KF_BLAS, .prepare = gwr_rnn_prepare, .prep_free = gwr_rnn_prep_free),
    {.fn = NULL},
};
