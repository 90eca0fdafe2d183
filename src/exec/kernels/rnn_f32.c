/* rnn_f32.c - RNN, GRU and LSTM over float32 tensors, in float.
 *
 * rnn.c's driver widens every tensor to double and multiplies with dgemm;
 * for float32 models that cost 4-6x onnxruntime's time (dgemm and libm's
 * double exp/tanh were most of it). Here W, R and X are read in place: the
 * input projection of every step and direction is one sgemm (X [T*B, I]
 * times W^T), each step's recurrent product one sgemm (sgemv for one batch
 * row) on R read as stored ([G*H, H] row-major: R h is a row of dot
 * products, the order sgemv reads fastest), and the gates are row loops
 * over fast_math.h's float sigmoid and tanh that vectorize. Constant W and
 * R are packed at planning (rnn_prep.c) and both products then run on
 * sgemm.c over them; the two biases are summed once per run (G*H adds).
 *
 * rnn.c has checked the inputs and attributes (rnn_args) and keeps the
 * double path for float64 and float16, and as the reference of the tests. */
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "no-trapping-math")
#endif

/* after the pragma: their inline functions take its options */
#include "exec/kernels/fast_math.h"
#include "exec/kernels/rnn_internal.h"
#include "exec/kernels/sgemm.h"

/* v = a(clip(v)) over n floats: sigmoid and tanh vectorized, the rarer
 * activations through rnn_act.c's double expressions. */
GWR_VEC_CLONES static void act_row(const act *a, int has_clip, float clip, float *restrict v, int64_t n) {
    if (has_clip)
        for (int64_t i = 0; i < n; i++) {
            float x = v[i];
            v[i] = x > clip ? clip : x < -clip ? -clip : x; /* NaN stays NaN */
        }
    switch (a->kind) {
    case A_SIGMOID:
        for (int64_t i = 0; i < n; i++) v[i] = 1.0f / (1.0f + fast_expf(-v[i]));
        break;
    case A_TANH:
        for (int64_t i = 0; i < n; i++) v[i] = fast_tanhf(v[i]);
        break;
    default:
        for (int64_t i = 0; i < n; i++) v[i] = (float)gwr_rnn_act_apply(a, v[i]);
        break;
    }
}

/* g = xw + hr (+ the input and forget gates' peepholes on c), 4H floats in
 * ONNX's gate order i, o, f, c. */
GWR_VEC_CLONES static void gates_in(int64_t H, const float *restrict xw, const float *restrict hr, const float *restrict p,
                                    const float *restrict c, float *restrict g) {
    for (int64_t j = 0; j < 4 * H; j++) g[j] = xw[j] + hr[j];
    if (!p) return;
    for (int64_t j = 0; j < H; j++) g[j] += p[j] * c[j];
    for (int64_t j = 0; j < H; j++) g[2 * H + j] += p[2 * H + j] * c[j];
}

/* One batch entry's step: c and h updated from its gate sums g. */
static void lstm_cell(const rnn_args *a, const act *ac, const float *p, float *restrict g, float *restrict h, float *restrict c) {
    int64_t H = a->H;
    float clip = (float)a->clip;
    float *gi = g, *go = g + H, *gf = g + 2 * H, *gc = g + 3 * H;
    act_row(&ac[0], a->has_clip, clip, gi, H);
    if (a->input_forget)
        for (int64_t j = 0; j < H; j++) gf[j] = 1.0f - gi[j];
    else
        act_row(&ac[0], a->has_clip, clip, gf, H);
    act_row(&ac[1], a->has_clip, clip, gc, H);
    for (int64_t j = 0; j < H; j++) c[j] = gf[j] * c[j] + gi[j] * gc[j];
    if (p)
        for (int64_t j = 0; j < H; j++) go[j] += p[H + j] * c[j];
    act_row(&ac[0], a->has_clip, clip, go, H);
    memcpy(gc, c, (size_t)H * sizeof *gc); /* gc is spent: it takes act2(c) */
    act_row(&ac[2], 0, 0, gc, H);
    for (int64_t j = 0; j < H; j++) h[j] = go[j] * gc[j];
}

/* One GRU entry's step (gates z, r, h): h updated. g holds G*H + 2H
 * floats: the gate sums, then r . h and its product with Rh. */
static void gru_cell(const rnn_args *a, const act *ac, const float *rh, const float *rbh, const float *restrict xw,
                     const float *restrict hr, float *restrict g, float *restrict h) {
    int64_t H = a->H;
    float clip = (float)a->clip;
    float *z = g, *r = g + H, *ht = g + 2 * H, *rhh = g + 3 * H, *prod = g + 4 * H;
    for (int64_t j = 0; j < 2 * H; j++) g[j] = xw[j] + hr[j];
    act_row(&ac[0], a->has_clip, clip, g, 2 * H);
    if (a->lbr) {
        for (int64_t j = 0; j < H; j++) ht[j] = xw[2 * H + j] + r[j] * (hr[2 * H + j] + rbh[j]);
    } else {
        /* (r . h) Rh^T + Rbh */
        for (int64_t j = 0; j < H; j++) rhh[j] = r[j] * h[j];
        gwr_ku_sgemm(0, 1, 1, (int)H, (int)H, 1.0f, rhh, (int)H, rh, (int)H, 0.0f, prod, (int)H);
        for (int64_t j = 0; j < H; j++) ht[j] = xw[2 * H + j] + prod[j] + rbh[j];
    }
    act_row(&ac[1], a->has_clip, clip, ht, H);
    for (int64_t j = 0; j < H; j++) h[j] = (1.0f - z[j]) * ht[j] + z[j] * h[j];
}

/* The work buffers of one run. */
typedef struct rnn_fbuf {
    float *xw;    /* [T*B][G*H]: x W^T + Wb + Rb (GRU: Rbh apart), rows in X's order */
    float *hr;    /* [B][G*H]: h R^T */
    float *g;     /* [G*H + 2H]: one entry's gates (and GRU's r . h products) */
    float *bias;  /* [G*H] */
    float *rbh;   /* [H]: GRU's Rbh, zeros when absent */
    float *h, *c; /* [B][H] */
    int64_t *len;
} rnn_fbuf;

static void lbuf_free(rnn_fbuf *b) {
    gwr_free(b->xw), gwr_free(b->hr), gwr_free(b->g), gwr_free(b->bias), gwr_free(b->rbh), gwr_free(b->h), gwr_free(b->c), gwr_free(b->len);
}

static float *alloc_f(int64_t n) { return gwr_malloc((size_t)(n ? n : 1) * sizeof(float)); }

/* k's packed W and R when they are of a's shapes. */
static const gwr_rnn_prep *prep_of(const gwr_kctx *k, const rnn_args *a) {
    const gwr_rnn_prep *p = k->prep;
    int64_t ng = a->cell == CELL_GRU && !a->lbr ? 2 * a->H : a->G * a->H;
    if (!p || p->D != a->D || p->GH != a->G * a->H || p->I != a->I || p->H != a->H || p->ng != ng || !gwr_sgemm_for(k)) return NULL;
    return p;
}

static const float *in_f(const gwr_kctx *k, int i) {
    return i < k->nin && k->in[i] ? (const float *)k->in[i]->data : NULL;
}

/* Y's, and Y_h's / Y_c's / the initial states', row of (step t,) entry bb. */
static int64_t y_row(const rnn_args *a, int64_t t, int64_t d, int64_t bb) {
    return a->layout ? ((bb * a->T + t) * a->D + d) * a->H : ((t * a->D + d) * a->B + bb) * a->H;
}
static int64_t state_row(const rnn_args *a, int64_t d, int64_t bb) {
    return a->layout ? (bb * a->D + d) * a->H : (d * a->B + bb) * a->H;
}

/* Direction d's projections of every step, biases included. */
static void project(const gwr_kctx *k, const rnn_args *a, rnn_fbuf *b, int64_t d) {
    int64_t T = a->T, B = a->B, I = a->I, H = a->H, GH = a->G * H;
    const float *x = in_f(k, 0), *w = in_f(k, 1) + d * GH * I, *bias = in_f(k, 3);
    const gwr_rnn_prep *pp = prep_of(k, a);
    if (!pp || gwr_sgemm_pb(k->tpool, 0, (int)(T * B), x, (int)I, pp->w[d], 1.0f, 0.0f, b->xw, (int)GH))
        gwr_ku_sgemm(0, 1, (int)(T * B), (int)GH, (int)I, 1.0f, x, (int)I, w, (int)I, 0.0f, b->xw, (int)GH);
    memset(b->rbh, 0, (size_t)H * sizeof *b->rbh);
    if (!bias) return;
    bias += d * 2 * GH;
    /* GRU keeps Rbh apart: it goes inside the reset gate's product. */
    int64_t split = a->cell == CELL_GRU ? 2 * H : GH;
    for (int64_t j = 0; j < GH; j++) b->bias[j] = bias[j] + (j < split ? bias[GH + j] : 0.0f);
    if (split < GH) memcpy(b->rbh, bias + GH + split, (size_t)H * sizeof *b->rbh);
    for (int64_t r = 0; r < T * B; r++) {
        float *row = b->xw + r * GH;
        for (int64_t j = 0; j < GH; j++) row[j] += b->bias[j];
    }
}

/* Runs direction d (reverse when rev), writing Y's rows and the final states. */
static void run_dir(const gwr_kctx *k, const rnn_args *a, rnn_fbuf *b, int64_t d, int rev, gwr_value *const out[3]) {
    int64_t T = a->T, B = a->B, H = a->H, GH = a->G * H;
    int lstm = a->cell == CELL_LSTM;
    const float *r = in_f(k, 2) + d * GH * H, *h0 = in_f(k, 5);
    const float *p = lstm ? in_f(k, 7) : NULL, *c0 = lstm ? in_f(k, 6) : NULL;
    if (p) p += d * 3 * H;
    /* GRU's default mode multiplies Rh after the reset gate: z and r only here */
    int64_t ng = a->cell == CELL_GRU && !a->lbr ? 2 * H : GH;
    project(k, a, b, d);
    for (int64_t bb = 0; bb < B; bb++) {
        int64_t s0 = state_row(a, d, bb);
        if (h0) memcpy(b->h + bb * H, h0 + s0, (size_t)H * sizeof(float));
        else memset(b->h + bb * H, 0, (size_t)H * sizeof(float));
        if (c0) memcpy(b->c + bb * H, c0 + s0, (size_t)H * sizeof(float));
        else memset(b->c + bb * H, 0, (size_t)H * sizeof(float));
    }
    float *Y = out[0] ? (float *)out[0]->data : NULL;
    const gwr_rnn_prep *pp = prep_of(k, a);
    for (int64_t s = 0; s < T; s++) {
        if (!pp || gwr_sgemm_pb(k->tpool, 0, (int)B, b->h, (int)H, pp->r[d], 1.0f, 0.0f, b->hr, (int)GH))
            gwr_ku_sgemm(0, 1, (int)B, (int)ng, (int)H, 1.0f, b->h, (int)H, r, (int)H, 0.0f, b->hr, (int)GH);
        for (int64_t bb = 0; bb < B; bb++) {
            if (s >= b->len[bb]) continue; /* finished: keeps its state */
            int64_t t = rev ? b->len[bb] - 1 - s : s;
            const float *xw = b->xw + (a->layout ? bb * T + t : t * B + bb) * GH;
            float *h = b->h + bb * H, *c = b->c + bb * H;
            const float *hr = b->hr + bb * GH;
            if (lstm) {
                gates_in(H, xw, hr, p, c, b->g);
                lstm_cell(a, a->acts[d], p, b->g, h, c);
            } else if (a->cell == CELL_GRU) {
                gru_cell(a, a->acts[d], r + 2 * H * H, b->rbh, xw, hr, b->g, h);
            } else {
                for (int64_t j = 0; j < H; j++) h[j] = xw[j] + hr[j];
                act_row(&a->acts[d][0], a->has_clip, (float)a->clip, h, H);
            }
            if (Y) memcpy(Y + y_row(a, t, d, bb), h, (size_t)H * sizeof(float));
        }
    }
    for (int o = 1; o < 3; o++) {
        if (!out[o] || (o == 2 && !lstm)) continue;
        const float *src = o == 1 ? b->h : b->c;
        for (int64_t bb = 0; bb < B; bb++)
            memcpy((float *)out[o]->data + state_row(a, d, bb), src + bb * H, (size_t)H * sizeof(float));
    }
}

gwr_status gwr_rnn_f32(gwr_kctx *k, const rnn_args *a, gwr_value *const out[3]) {
    int64_t T = a->T, B = a->B, H = a->H, GH = a->G * H;
    rnn_fbuf b;
    memset(&b, 0, sizeof b);
    b.xw = alloc_f(T * B * GH), b.hr = alloc_f(B * GH), b.g = alloc_f(GH + 2 * H), b.bias = alloc_f(GH), b.rbh = alloc_f(H);
    b.h = alloc_f(B * H), b.c = alloc_f(B * H);
    b.len = gwr_malloc((size_t)(B ? B : 1) * sizeof *b.len);
    if (!b.xw || !b.hr || !b.g || !b.bias || !b.rbh || !b.h || !b.c || !b.len) {
        lbuf_free(&b);
        return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    }
    const gwr_value *sl = k->nin > 4 ? k->in[4] : NULL;
    for (int64_t bb = 0; bb < B; bb++) b.len[bb] = sl ? gwr_v_get_i64(sl, bb) : T;
    for (int64_t d = 0; d < a->D; d++) run_dir(k, a, &b, d, a->reverse_only || d == 1, out);
    lbuf_free(&b);
    return GWR_OK;
}
