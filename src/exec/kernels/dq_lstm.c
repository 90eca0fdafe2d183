/* dq_lstm.c - onnxruntime's com.microsoft DynamicQuantizeLSTM (version 1):
 * an LSTM whose W [D, I, 4H] and R [D, H, 4H] are int8 / uint8 with scales
 * and zero points W_scale, W_zero_point, R_scale, R_zero_point per
 * direction ([D]) or per gate column ([D, 4H]); inputs 0-7 and the
 * attributes are LSTM's.
 *
 * gwr runs it as LSTM (rnn.c's kernel, its packed float32 GEMMs included)
 * on the dequantized weights, (w - zero_point) * scale in float32,
 * transposed into LSTM's [D, 4H, I] and [D, 4H, H]; built once at planning
 * when the weights are constant, else at each run. onnxruntime also
 * quantizes the activations (X and each step's hidden state) to uint8 for
 * its integer GEMMs; gwr keeps them float32, so the two differ by that
 * quantization's rounding (docs/conformance.md, "Quantized ops"). */
#include "exec/kernels/kernel_util.h"
#include "exec/kernels/rnn_internal.h"

enum { DQ_W = 1, DQ_R = 2, DQ_WS = 8, DQ_WZ = 9, DQ_RS = 10, DQ_RZ = 11, DQ_NIN = 12 };

typedef struct dq_prep {
    gwr_value *w, *r; /* float32 [D, 4H, I], [D, 4H, H] */
    void *rnn;        /* rnn_prep.c's state for them, or NULL */
} dq_prep;

/* q [D, K, G] int8/uint8 -> float32 [D, G, K], (q - zp) * scale, scale and
 * zp per direction or per (direction, column); NULL after gwr_k_fail. */
static gwr_value *dequant_t(gwr_kctx *k, const gwr_value *q, const gwr_value *sc, const gwr_value *zp, const char *name) {
    if (!q || !sc || q->rank != 3 || !gwr_ku_is_q8(q->dtype))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s must be a 3-D int8 or uint8 tensor with its scale", name), NULL;
    int64_t D = q->dims[0], K = q->dims[1], G = q->dims[2];
    int per_col = sc->numel == D * G && D * G != D;
    if (sc->dtype != GWR_FLOAT32 || !(sc->numel == D || per_col) || (zp && (zp->dtype != q->dtype || zp->numel != sc->numel)))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s's scale and zero point must be float32 and %s, [%lld] or [%lld, %lld]", name,
                          gwr_dtype_name(q->dtype), (long long)D, (long long)D, (long long)G),
               NULL;
    int64_t dims[3] = {D, G, K};
    gwr_value *v = gwr_value_new(GWR_FLOAT32, 3, dims);
    if (!v) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory dequantizing %s", name), NULL;
    const float *s = sc->data;
    float *o = v->data;
    for (int64_t d = 0; d < D; d++)
        for (int64_t g = 0; g < G; g++) {
            int64_t c = per_col ? d * G + g : d;
            float sv = s[c];
            double z = zp ? gwr_ku_q8(zp, c) : 0;
            for (int64_t i = 0; i < K; i++) o[(d * G + g) * K + i] = (float)(gwr_ku_q8(q, (d * K + i) * G + g) - z) * sv;
        }
    return v;
}

static void dq_free(void *state) {
    dq_prep *p = state;
    if (!p) return;
    gwr_value_release(p->w), gwr_value_release(p->r);
    gwr_rnn_prep_free(p->rnn);
    gwr_free(p);
}

/* k as an LSTM's context over p's float32 W and R (in: 8 slots). No
 * input is the last read of its value for the LSTM (in_last 0): W and R
 * belong to p. */
static void as_lstm(const gwr_kctx *k, const dq_prep *p, gwr_kctx *kc, gwr_value **in) {
    *kc = *k;
    for (int i = 0; i < 8; i++) in[i] = k->in[i];
    in[DQ_W] = p->w, in[DQ_R] = p->r;
    kc->in = in;
    kc->nin = 8;
    kc->in_last = 0;
    kc->prep = NULL;
}

/* W and R dequantized into p; with prep, rnn_prep.c's packing too. */
static gwr_status dq_build(gwr_kctx *k, dq_prep *p, int prep) {
    if (k->nin != DQ_NIN) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "DynamicQuantizeLSTM takes 12 inputs, %d given", k->nin);
    if (!(p->w = dequant_t(k, k->in[DQ_W], k->in[DQ_WS], k->in[DQ_WZ], "W")) ||
        !(p->r = dequant_t(k, k->in[DQ_R], k->in[DQ_RS], k->in[DQ_RZ], "R")))
        return GWR_ERR_INVALID_ARG;
    if (!prep) return GWR_OK;
    gwr_kctx kc;
    gwr_value *in[8];
    as_lstm(k, p, &kc, in);
    return gwr_rnn_prepare(&kc, &p->rnn);
}

static gwr_status dq_prepare(gwr_kctx *k, void **state) {
    *state = NULL;
    if (k->nin != DQ_NIN) return GWR_OK; /* the run reports it */
    for (int i = DQ_W; i < DQ_NIN; i++) /* the weights, scales and zero points: constant (or an absent zero point) */
        if ((i == DQ_W || i == DQ_R || i >= DQ_WS) && !k->in[i] && (i == DQ_W || i == DQ_R || i == DQ_WS || i == DQ_RS ||
                                                                     gwr_layer_input(k->layer, i)))
            return GWR_OK;
    dq_prep *p = gwr_calloc(1, sizeof *p);
    if (!p) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    gwr_status st = dq_build(k, p, 1);
    if (st) {
        dq_free(p);
        return st == GWR_ERR_NOMEM ? st : GWR_OK; /* a bad input: the run reports it */
    }
    *state = p;
    return GWR_OK;
}

static gwr_status k_dq_lstm(gwr_kctx *k) {
    dq_prep local = {0}, *p = k->prep;
    gwr_status st = GWR_OK;
    if (!p && (st = dq_build(k, p = &local, 0))) {
        gwr_value_release(local.w), gwr_value_release(local.r);
        return st;
    }
    gwr_kctx kc;
    gwr_value *in[8];
    as_lstm(k, p, &kc, in);
    kc.prep = p->rnn;
    st = gwr_rnn_lstm(&kc);
    gwr_value_release(local.w), gwr_value_release(local.r);
    return st;
}

const gwr_kernel_entry gwr_kernels_dq_lstm[] = {
    GWR_KERNEL(MS_DynamicQuantizeLSTM, k_dq_lstm, .flags = GWR_KF_BLAS, .prepare = dq_prepare, .prep_free = dq_free),
    {.fn = NULL},
};
