/* gemm_prep.c - the state a GEMM layer (MatMul, Gemm, com.microsoft
 * FusedGemm and FusedMatMul) prepares at planning from a constant B.
 *
 * OpenBLAS 0.3.21 (Debian 12) exports no sgemm packing API (no
 * cblas_sgemm_pack / sgemm_pack: `nm -D libopenblas.so.0`), so sgemm packs
 * B on every call whatever its layout. What a layer can still do once
 * instead of every run, measured on this OpenBLAS (one thread, M 128):
 *   - float16 / bfloat16 B: widen it to float32 (the run widened it each
 *     time, a malloc and a pass over K*N values);
 *   - a transposed float32 B (Gemm / FusedMatMul transB) with K > N: copy it
 *     to [K, N], the layout sgemm reads fastest there (K 1024, N 256:
 *     660 us NN against 780 us NT); with K <= N the two are even (within
 *     5%), and an untransposed float32 B is read in place: no state.
 * B is then always float32 [K, N] row-major: op(B) of the layer. */
#include <string.h>

#include "exec/kernels/kernel_util.h"

/* Which input is B and whether the layer transposes it. */
static int mm_transb(const gwr_kctx *k) {
    gwr_op_id op = gwr_layer_op_id(k->layer);
    if (op == GWR_OP_Gemm || op == GWR_OP_MS_FusedGemm || op == GWR_OP_MS_FusedMatMul)
        return gwr_k_int(k, "transB", 0) != 0;
    return 0;
}

gwr_status gwr_ku_mm_prepare(gwr_kctx *k, void **state) {
    *state = NULL;
    const gwr_value *b = k->nin > 1 ? k->in[1] : NULL;
    if (!b || b->rank != 2 || (b->dtype != GWR_FLOAT32 && !gwr_ku_is_half(b->dtype))) return GWR_OK;
    if (gwr_layer_op_id(k->layer) == GWR_OP_MS_FusedMatMul && gwr_k_int(k, "transBatchB", 0)) return GWR_OK;
    int tb = mm_transb(k);
    int64_t K = tb ? b->dims[1] : b->dims[0], N = tb ? b->dims[0] : b->dims[1];
    if (b->dtype == GWR_FLOAT32 && (!tb || K <= N)) return GWR_OK; /* read in place */
    gwr_mm_prep *p = gwr_calloc(1, sizeof *p);
    float *w = p ? gwr_ku_widen(b) : NULL;
    if (!w) {
        gwr_free(p);
        return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory preparing B");
    }
    p->K = K, p->N = N, p->dtype = b->dtype;
    if (!tb) {
        p->b = w;
    } else if ((p->b = gwr_malloc((size_t)(b->numel ? b->numel : 1) * sizeof *p->b))) {
        for (int64_t n = 0; n < N; n++) /* w is [N, K] */
            for (int64_t q = 0; q < K; q++) p->b[q * N + n] = w[n * K + q];
        gwr_free(w);
    } else {
        gwr_free(w), gwr_free(p);
        return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory preparing B");
    }
    *state = p;
    return GWR_OK;
}

void gwr_ku_mm_prep_free(void *state) {
    gwr_mm_prep *p = state;
    if (!p) return;
    gwr_free(p->b);
    gwr_free(p);
}

const gwr_mm_prep *gwr_ku_mm_prep(const gwr_kctx *k, const gwr_value *b) {
    const gwr_mm_prep *p = k->prep;
    if (!p || !b || b->rank != 2 || b->dtype != p->dtype || b->numel != p->K * p->N) return NULL;
    return p;
}
