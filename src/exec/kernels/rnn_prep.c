/* rnn_prep.c - the prepare hook of RNN, GRU and LSTM: constant float32 W
 * and R packed once for sgemm.c, per direction.
 *
 * rnn_f32.c's products are x W^T (every step at once) and, per step,
 * h R^T over the batch's rows: one row for most models, where OpenBLAS's
 * sgemv re-reads R as stored on every step. Over R^T packed in panels the
 * step's product runs 12.3 against 14.8 us (bench_sgemm, the LSTM's
 * 1 x 1024 x 256), the projection 322 against 356 us (128 x 1024 x 128).
 * GRU's default mode multiplies only the z and r gates' rows of R per step
 * (its third block goes inside the reset gate's product, left to
 * OpenBLAS): that is what is packed for it. */
#include "exec/kernels/rnn_internal.h"
#include "exec/kernels/sgemm.h"

void gwr_rnn_prep_free(void *state) {
    gwr_rnn_prep *p = state;
    if (!p) return;
    for (int d = 0; d < 2; d++) gwr_sgemm_pack_free(p->w[d]), gwr_sgemm_pack_free(p->r[d]);
    gwr_free(p);
}

/* W [D, GH, I] and R [D, GH, H], both constant float32, D 1 or 2. */
static int shapes_ok(const gwr_value *w, const gwr_value *r) {
    if (!w || !r || w->dtype != GWR_FLOAT32 || r->dtype != GWR_FLOAT32 || w->rank != 3 || r->rank != 3) return 0;
    if (w->dims[0] != r->dims[0] || w->dims[0] < 1 || w->dims[0] > 2 || w->dims[1] != r->dims[1]) return 0;
    for (int i = 1; i < 3; i++)
        if (w->dims[i] < 1 || r->dims[i] < 1 || !gwr_ku_fits_int(w->dims[i]) || !gwr_ku_fits_int(r->dims[i])) return 0;
    return 1;
}

gwr_status gwr_rnn_prepare(gwr_kctx *k, void **state) {
    *state = NULL;
    const gwr_value *w = k->nin > 1 ? k->in[1] : NULL, *r = k->nin > 2 ? k->in[2] : NULL;
    if (!gwr_sgemm_enabled() || !shapes_ok(w, r)) return GWR_OK;
    int64_t D = w->dims[0], GH = w->dims[1], I = w->dims[2], H = r->dims[2];
    int gru_split = gwr_layer_op_id(k->layer) == GWR_OP_GRU && !gwr_k_int(k, "linear_before_reset", 0);
    int64_t ng = gru_split ? 2 * H : GH;
    if (ng > GH) return GWR_OK; /* a bad GRU: the run reports it */
    gwr_rnn_prep *p = gwr_calloc(1, sizeof *p);
    if (!p) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory packing W and R");
    p->D = D, p->GH = GH, p->I = I, p->H = H, p->ng = ng;
    for (int64_t d = 0; d < D; d++) {
        const float *wd = (const float *)w->data + d * GH * I, *rd = (const float *)r->data + d * GH * H;
        p->w[d] = gwr_sgemm_pack_b(1, (int)I, (int)GH, wd, (int)I); /* B = W^T [I, GH] */
        p->r[d] = gwr_sgemm_pack_b(1, (int)H, (int)ng, rd, (int)H); /* B = R^T, its first ng columns */
        if (!p->w[d] || !p->r[d]) {
            gwr_rnn_prep_free(p);
            return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory packing W and R");
        }
    }
    *state = p;
    return GWR_OK;
}
