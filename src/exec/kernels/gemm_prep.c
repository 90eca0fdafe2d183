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
 * B is then always float32 [K, N] row-major: op(B) of the layer.
 *
 * Float32 and half layers (not Attention, whose products are per head)
 * also get B packed into panels for gwr's own sgemm (sgemm.h), a half B
 * from its float32 widening, which then multiplies without repacking (a
 * half layer's A widened per run): that is what the run uses, p->b / B
 * in place stay for the products it declines (out of scratch, FusedMatMul
 * in half). */
#include <string.h>

#include "exec/kernels/kernel_util.h"
#include "exec/kernels/sgemm.h"

/* Which input is B and whether the layer transposes it. */
static int mm_transb(const gwr_kctx *k) {
    gwr_op_id op = gwr_layer_op_id(k->layer);
    if (op == GWR_OP_Gemm || op == GWR_OP_MS_FusedGemm || op == GWR_OP_MS_FusedMatMul)
        return gwr_k_int(k, "transB", 0) != 0;
    return 0;
}

/* p->b: B widened and / or transposed to [K, N]. */
static gwr_status prep_b(gwr_kctx *k, const gwr_value *b, int tb, gwr_mm_prep *p) {
    float *w = gwr_ku_widen(b);
    if (w && !tb) {
        p->b = w;
    } else if (w && (p->b = gwr_malloc((size_t)(b->numel ? b->numel : 1) * sizeof *p->b))) {
        for (int64_t n = 0; n < p->N; n++) /* w is [N, K] */
            for (int64_t q = 0; q < p->K; q++) p->b[q * p->N + n] = w[n * p->K + q];
        gwr_free(w);
    } else {
        gwr_free(w);
        return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory preparing B");
    }
    return GWR_OK;
}

gwr_status gwr_ku_mm_prepare(gwr_kctx *k, void **state) {
    *state = NULL;
    const gwr_value *b = k->nin > 1 ? k->in[1] : NULL;
    if (!b || b->rank != 2 || (b->dtype != GWR_FLOAT32 && !gwr_ku_is_half(b->dtype))) return GWR_OK;
    gwr_op_id op = gwr_layer_op_id(k->layer);
    if (op == GWR_OP_MS_FusedMatMul && gwr_k_int(k, "transBatchB", 0)) return GWR_OK;
    int tb = mm_transb(k);
    int64_t K = tb ? b->dims[1] : b->dims[0], N = tb ? b->dims[0] : b->dims[1];
    int need_b = b->dtype != GWR_FLOAT32 || (tb && K > N);
    int pack = op != GWR_OP_MS_Attention && gwr_sgemm_enabled() && K > 0 && N > 0 && gwr_ku_fits_int(K) && gwr_ku_fits_int(N);
    if (!need_b && !pack) return GWR_OK; /* read in place */
    gwr_mm_prep *p = gwr_calloc(1, sizeof *p);
    if (!p) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory preparing B");
    p->K = K, p->N = N, p->dtype = b->dtype;
    gwr_status st = need_b ? prep_b(k, b, tb, p) : GWR_OK;
    /* a half B packs from its float32 widening, [K, N] */
    int half = b->dtype != GWR_FLOAT32;
    if (!st && pack &&
        !(p->pk = gwr_sgemm_pack_b(half ? 0 : tb, (int)K, (int)N, half ? p->b : (const float *)b->data, half ? (int)N : (int)b->dims[1])))
        st = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory packing B");
    if (st) {
        gwr_ku_mm_prep_free(p);
        return st;
    }
    *state = p;
    return GWR_OK;
}

void gwr_ku_mm_prep_free(void *state) {
    gwr_mm_prep *p = state;
    if (!p) return;
    gwr_free(p->b);
    gwr_sgemm_pack_free(p->pk);
    gwr_free(p);
}

/* k's state when it was prepared from a B like b. */
static const gwr_mm_prep *prep_of(const gwr_kctx *k, const gwr_value *b) {
    const gwr_mm_prep *p = k->prep;
    if (!p || !b || b->rank != 2 || b->dtype != p->dtype || b->numel != p->K * p->N) return NULL;
    return p;
}

const gwr_mm_prep *gwr_ku_mm_prep(const gwr_kctx *k, const gwr_value *b) {
    const gwr_mm_prep *p = prep_of(k, b);
    return p && p->b ? p : NULL;
}

int gwr_ku_mm_packed(const gwr_kctx *k, const gwr_value *b, int ta, int M, const float *A, int lda, float alpha, float beta, float *C,
                     int ldc) {
    const gwr_mm_prep *p = prep_of(k, b);
    /* Few rows (a decode step's token): gwr_sgemv_pb streams the packed
     * panels once, split over the pool by pairs of panels (OpenBLAS's
     * sgemv, B in place, ran at one thread inside a pooled run and gave
     * other bits for other column ranges). bench_gemv, one thread, B from
     * memory: both at the memory's 17-20 GB/s on one core; the panels
     * split over two threads where sgemv cannot. */
    if (!p || !p->pk || !gwr_sgemm_for(k)) return -1;
    if (!ta && M <= GWR_SGEMV_MAX_ROWS) return gwr_sgemv_pb(k->tpool, M, A, lda, p->pk, alpha, beta, C, ldc);
    return gwr_sgemm_pb(k->tpool, ta, M, A, lda, p->pk, alpha, beta, C, ldc);
}
