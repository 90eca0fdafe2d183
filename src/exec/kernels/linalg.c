/* linalg.c - matrix products: MatMul (NumPy matmul: batch dims broadcast,
 * 1-D operands promoted and their dim dropped), Gemm, MatMulInteger,
 * QLinearMatMul and Einsum; and Det.
 *
 * float32 and float64 go to sgemm / dgemm, one call per batch matrix, or
 * one call for all when B is a single matrix (A's batch folds into M: the
 * decoder's activations-times-weights case). float16 and bfloat16 are
 * widened to float32; the 8-bit integer products subtract the zero points
 * into int16 and run igemm.c's exact wrapping int32 GEMM; int32 / int64 /
 * uint32 / uint64 are plain loops in wrapping unsigned arithmetic. Einsum
 * is one generic loop nest over the labels, with strides for repeated
 * labels (diagonals) and broadcast ellipsis dims. Det is LU with partial
 * pivoting in float64. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/blas.h"
#include "exec/kernels/igemm.h"
#include "exec/kernels/kernel_util.h"

#define MAXR 16 /* batch dims of a matrix product */

/* Element i of an integer value as uint64 (sign-extended). */
static uint64_t iget(const gwr_value *v, int64_t i) {
    switch (v->dtype) {
    case GWR_INT8: return (uint64_t)(int64_t)((const int8_t *)v->data)[i];
    case GWR_UINT8: return ((const uint8_t *)v->data)[i];
    case GWR_INT16: return (uint64_t)(int64_t)((const int16_t *)v->data)[i];
    case GWR_UINT16: return ((const uint16_t *)v->data)[i];
    case GWR_INT32: return (uint64_t)(int64_t)((const int32_t *)v->data)[i];
    case GWR_UINT32: return ((const uint32_t *)v->data)[i];
    default: return ((const uint64_t *)v->data)[i];
    }
}

/* Stores the low bits of x into element i (two's complement wrap). */
static void iset(gwr_value *v, int64_t i, uint64_t x) {
    switch (v->dtype) {
    case GWR_INT8: case GWR_UINT8: ((uint8_t *)v->data)[i] = (uint8_t)x; break;
    case GWR_INT16: case GWR_UINT16: ((uint16_t *)v->data)[i] = (uint16_t)x; break;
    case GWR_INT32: case GWR_UINT32: ((uint32_t *)v->data)[i] = (uint32_t)x; break;
    default: ((uint64_t *)v->data)[i] = x; break;
    }
}

/* The dtypes of MatMul and Gemm: the floats through BLAS, the wide
 * integers through wrapping loops. */
static int product_dtype(gwr_dtype dt) {
    return gwr_ku_is_float(dt) || dt == GWR_INT32 || dt == GWR_INT64 || dt == GWR_UINT32 || dt == GWR_UINT64;
}

/* ---- MatMul -------------------------------------------------------------- */

typedef struct mmshape {
    int64_t M, N, K, batch;
    int64_t *aoff, *boff;  /* per batch matrix: offsets in elements */
    int fold;              /* B is one matrix and A's batch is dense: one product of batch*M rows */
    int orank;
    int64_t odims[MAXR + 2];
} mmshape;

/* The shapes of matmul(a, b) into p (p->aoff / boff malloc'd unless fold). */
static gwr_status mm_setup(gwr_kctx *k, const gwr_value *a, const gwr_value *b, mmshape *p) {
    memset(p, 0, sizeof *p);
    if (a->rank < 1 || b->rank < 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "MatMul operands must have rank 1 or more (got %d and %d)", a->rank, b->rank);
    if (a->rank > MAXR + 2 || b->rank > MAXR + 2) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "rank above %d", MAXR + 2);
    int abr = a->rank > 1 ? a->rank - 2 : 0, bbr = b->rank > 1 ? b->rank - 2 : 0, obr;
    p->M = a->rank > 1 ? a->dims[a->rank - 2] : 1;
    p->K = a->dims[a->rank - 1];
    int64_t kb = b->rank > 1 ? b->dims[b->rank - 2] : b->dims[0];
    p->N = b->rank > 1 ? b->dims[b->rank - 1] : 1;
    if (kb != p->K)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "inner dims differ: A has %lld columns, B has %lld rows", (long long)p->K, (long long)kb);
    int64_t obd[MAXR];
    if (gwr_broadcast(abr, a->dims, bbr, b->dims, &obr, obd))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "batch dims of A and B do not broadcast");
    p->batch = gwr_shape_numel(obr, obd);
    p->orank = obr;
    memcpy(p->odims, obd, (size_t)obr * sizeof *obd);
    if (a->rank > 1) p->odims[p->orank++] = p->M;
    if (b->rank > 1) p->odims[p->orank++] = p->N;
    if (!gwr_ku_fits_int(p->M) || !gwr_ku_fits_int(p->N) || !gwr_ku_fits_int(p->K) || p->batch < 0)
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "matrix dims too large for BLAS");
    int64_t anum = gwr_shape_numel(abr, a->dims), bnum = gwr_shape_numel(bbr, b->dims);
    if (bnum == 1 && anum == p->batch && gwr_ku_fits_int(p->batch * p->M)) {
        p->fold = 1;
        return GWR_OK;
    }
    if (!p->batch) return GWR_OK;
    int64_t sa[MAXR], sb[MAXR], idx[MAXR] = {0};
    gwr_bcast_strides(abr, a->dims, obr, obd, sa);
    gwr_bcast_strides(bbr, b->dims, obr, obd, sb);
    p->aoff = gwr_malloc((size_t)p->batch * sizeof *p->aoff);
    p->boff = gwr_malloc((size_t)p->batch * sizeof *p->boff);
    if (!p->aoff || !p->boff) {
        gwr_free(p->aoff), gwr_free(p->boff);
        p->aoff = p->boff = NULL;
        return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    }
    int64_t ao = 0, bo = 0;
    for (int64_t t = 0; t < p->batch; t++) {
        p->aoff[t] = ao * p->M * p->K, p->boff[t] = bo * p->K * p->N;
        for (int d = obr - 1; d >= 0; d--) {
            ao += sa[d], bo += sb[d];
            if (++idx[d] < obd[d]) break;
            ao -= sa[d] * obd[d], bo -= sb[d] * obd[d], idx[d] = 0;
        }
    }
    return GWR_OK;
}

static void mm_free(mmshape *p) { gwr_free(p->aoff), gwr_free(p->boff); }

static void mm_f32(const mmshape *p, const float *A, const float *B, float *Y) {
    int M = (int)p->M, N = (int)p->N, K = (int)p->K;
    if (p->fold) {
        gwr_ku_sgemm(0, 0, (int)(p->batch * p->M), N, K, 1, A, K, B, N, 0, Y, N);
        return;
    }
    for (int64_t t = 0; t < p->batch; t++) gwr_ku_sgemm(0, 0, M, N, K, 1, A + p->aoff[t], K, B + p->boff[t], N, 0, Y + t * p->M * p->N, N);
}

static void mm_f64(const mmshape *p, const double *A, const double *B, double *Y) {
    int M = (int)p->M, N = (int)p->N, K = (int)p->K;
    if (p->fold) {
        gwr_ku_dgemm(0, 0, (int)(p->batch * p->M), N, K, 1, A, K, B, N, 0, Y, N);
        return;
    }
    for (int64_t t = 0; t < p->batch; t++) gwr_ku_dgemm(0, 0, M, N, K, 1, A + p->aoff[t], K, B + p->boff[t], N, 0, Y + t * p->M * p->N, N);
}

/* Integer matmul, wrapping: Y[t] = A[t] B[t]. */
static int mm_int(const mmshape *p, const gwr_value *a, const gwr_value *b, gwr_value *y) {
    int64_t M = p->M, N = p->N, K = p->K;
    uint64_t *row = gwr_malloc((size_t)(N ? N : 1) * sizeof *row);
    if (!row) return -1;
    for (int64_t t = 0; t < p->batch; t++) {
        int64_t ao = p->fold ? t * M * K : p->aoff[t], bo = p->fold ? 0 : p->boff[t];
        for (int64_t i = 0; i < M; i++) {
            memset(row, 0, (size_t)N * sizeof *row);
            for (int64_t q = 0; q < K; q++) {
                uint64_t av = iget(a, ao + i * K + q);
                if (!av) continue;
                for (int64_t j = 0; j < N; j++) row[j] += av * iget(b, bo + q * N + j);
            }
            for (int64_t j = 0; j < N; j++) iset(y, (t * M + i) * N + j, row[j]);
        }
    }
    gwr_free(row);
    return 0;
}

static gwr_status k_matmul(gwr_kctx *k) {
    const gwr_value *a = k->nin > 0 ? k->in[0] : NULL, *b = k->nin > 1 ? k->in[1] : NULL;
    if (!a || !b) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %s is missing", a ? "B" : "A");
    if (a->dtype != b->dtype)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "A is %s but B is %s", gwr_dtype_name(a->dtype), gwr_dtype_name(b->dtype));
    gwr_dtype dt = a->dtype;
    if (!product_dtype(dt))
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "dtype %s is not supported", gwr_dtype_name(dt));
    mmshape p;
    gwr_status st = mm_setup(k, a, b, &p);
    if (st) return st;
    gwr_value *y = gwr_k_out(k, 0, dt, p.orank, p.odims);
    if (!y) {
        mm_free(&p);
        return GWR_ERR_NOMEM;
    }
    gwr_blas_threads(k->threads);
    const gwr_mm_prep *pp = gwr_ku_mm_prep(k, b); /* B prepared at planning: float32 [K, N] */
    if (dt == GWR_FLOAT32 && p.fold && !gwr_ku_mm_packed(k, b, 0, (int)(p.batch * p.M), a->data, (int)p.K, 1.0f, 0.0f, y->data, (int)p.N)) {
        /* B packed at planning: done */
    } else if (dt == GWR_FLOAT32) {
        mm_f32(&p, a->data, pp ? pp->b : b->data, y->data);
    } else if (dt == GWR_FLOAT64) {
        mm_f64(&p, a->data, b->data, y->data);
    } else if (dt == GWR_FLOAT16 || dt == GWR_BFLOAT16) {
        /* B widened (and packed) at planning: only A is widened here */
        float *af = gwr_ku_widen(a), *bf = pp ? pp->b : gwr_ku_widen(b);
        float *yf = gwr_malloc((size_t)(y->numel ? y->numel : 1) * sizeof *yf);
        if (!af || !bf || !yf) {
            st = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
        } else {
            if (!p.fold || gwr_ku_mm_packed(k, b, 0, (int)(p.batch * p.M), af, (int)p.K, 1.0f, 0.0f, yf, (int)p.N))
                mm_f32(&p, af, bf, yf);
            gwr_ku_narrow(yf, y);
        }
        gwr_free(af), gwr_free(yf);
        if (!pp) gwr_free(bf);
    } else {
        if (mm_int(&p, a, b, y)) st = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    }
    mm_free(&p);
    return st;
}

/* ---- 8-bit integer products ---------------------------------------------- */

/* A zero point or scale: absent (0), a scalar (1), or a 1-D value of
 * `per` elements (2); -1 after gwr_k_fail. */
static int qparam(gwr_kctx *k, const gwr_value *v, const char *name, gwr_dtype want, int64_t per) {
    if (!v) return 0;
    if (want != GWR_UNDEFINED && v->dtype != want)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s is %s, expected %s", name, gwr_dtype_name(v->dtype), gwr_dtype_name(want)), -1;
    if (v->numel == 1) return 1;
    if (per >= 0 && v->rank == 1 && v->numel == per) return 2;
    if (per < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s must be a scalar", name), -1;
    return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s must be a scalar or a 1-D tensor of %lld elements", name, (long long)per), -1;
}

/* A zero point as int32 values: NULL when absent, else *n of them. */
static int32_t *q_zp(const gwr_value *zp, int *n) {
    *n = 0;
    if (!zp) return NULL;
    int32_t *z = gwr_malloc((size_t)zp->numel * sizeof *z);
    if (z)
        for (int64_t i = 0; i < zp->numel; i++) z[i] = (int32_t)gwr_ku_q8(zp, i);
    *n = (int)zp->numel;
    return z;
}

/* (a - azp) (b - bzp) into *acc (y->numel int32 sums, exact, wrapping as
 * the spec's int32 accumulation: igemm.c); azp per row of A (M values) or
 * scalar, bzp per column of B (N values) or scalar. */
static gwr_status q_matmul(gwr_kctx *k, const gwr_value *a, const gwr_value *azp, const gwr_value *b, const gwr_value *bzp,
                           const gwr_ku_qmm_prep *qp, mmshape *p, int32_t **acc) {
    int M = (int)p->M, N = (int)p->N, K = (int)p->K, nbatch = (int)(p->fold ? 1 : p->batch);
    int Mf = p->fold ? (int)(p->batch * p->M) : M, naz, nbz;
    int64_t ynum = p->batch * p->M * p->N;
    int sa = a->dtype == GWR_INT8, sb = b->dtype == GWR_INT8;
    if (qp && !(b->rank == 2 && qp->K == p->K && qp->N == p->N)) qp = NULL;
    const int16_t *bprep = qp ? qp->bp : NULL;
    const gwr_ku_ig8b *b8 = qp ? qp->b8 : NULL;
    int pre = bprep || b8;
    int32_t *az = q_zp(azp, &naz), *bz = pre ? NULL : q_zp(bzp, &nbz), *azf = NULL, *zeff = NULL;
    int16_t *ap = NULL, *bpk = pre ? NULL : gwr_malloc(gwr_ku_igemm_b_size(K, N) * sizeof *bpk);
    uint8_t *ap8 = NULL;
    if (b8) ap8 = gwr_malloc(gwr_ku_igemm8_a_size(Mf, K)), zeff = gwr_malloc((size_t)(Mf ? Mf : 1) * sizeof *zeff);
    else ap = gwr_malloc(gwr_ku_igemm_a_size(Mf, K) * sizeof *ap);
    *acc = gwr_malloc((size_t)(ynum ? ynum : 1) * sizeof **acc);
    int bad = (b8 ? !ap8 || !zeff : !ap) || (!pre && !bpk) || !*acc || (azp && !az) || (bzp && !pre && !bz);
    if (!bad && p->fold && naz > 1 && p->batch > 1) { /* a per-row zero point repeats over the folded batch */
        if ((azf = gwr_malloc((size_t)Mf * sizeof *azf)))
            for (int i = 0; i < Mf; i++) azf[i] = az[i % M];
        bad = !azf;
    }
    const uint8_t *ad = a->data, *bd = b->data;
    size_t esz = 1;
    for (int64_t t = 0; !bad && t < nbatch; t++) {
        int64_t ao = p->fold ? 0 : p->aoff[t], bo = p->fold ? 0 : p->boff[t];
        int32_t *yt = *acc + t * p->M * p->N;
        if (b8) {
            gwr_ku_igemm8_pack_a(ad + ao * esz, sa, Mf, K, azf ? azf : az, azf ? Mf : naz, ap8, zeff);
            bad = gwr_ku_igemm8(Mf, ap8, zeff, b8, yt, N) != 0;
            continue;
        }
        if (!pre && (t == 0 || p->boff[t] != p->boff[t - 1])) gwr_ku_igemm_pack_b(bd + bo * esz, sb, K, N, bz, nbz, bpk);
        gwr_ku_igemm_pack_a(ad + ao * esz, sa, Mf, K, azf ? azf : az, azf ? Mf : naz, ap);
        bad = gwr_ku_igemm(Mf, N, K, ap, bprep ? bprep : bpk, yt, N) != 0;
    }
    gwr_free(az), gwr_free(bz), gwr_free(azf), gwr_free(ap), gwr_free(bpk), gwr_free(ap8), gwr_free(zeff);
    if (bad) {
        gwr_free(*acc);
        *acc = NULL;
        return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    }
    return GWR_OK;
}

/* MatMulInteger's state from a constant 2-D B (and a constant or absent
 * b_zero_point): B minus its zero point packed for igemm.c once; also
 * MatMulIntegerToFloat's and DynamicQuantizeMatMul's (qmatmul.c). */
void gwr_ku_qmm_prep_free(void *state) {
    gwr_ku_qmm_prep *q = state;
    if (q) gwr_free(q->bp), gwr_ku_ig8b_free(q->b8), gwr_free(q);
}

gwr_status gwr_ku_qmm_prepare_at(gwr_kctx *k, int ib, int izp, void **state) {
    *state = NULL;
    const gwr_value *b = k->nin > ib ? k->in[ib] : NULL, *bzp = k->nin > izp ? k->in[izp] : NULL;
    int has_zp = k->nin > izp && gwr_layer_input(k->layer, izp) != NULL;
    if (!b || b->rank != 2 || !gwr_ku_is_q8(b->dtype) || (has_zp && !bzp)) return GWR_OK;
    int64_t K = b->dims[0], N = b->dims[1];
    if (!gwr_ku_fits_int(K) || !gwr_ku_fits_int(N) || !K || !N) return GWR_OK;
    if (bzp && (bzp->dtype != b->dtype || !(bzp->numel == 1 || (bzp->rank == 1 && bzp->numel == N)))) return GWR_OK; /* the run reports it */
    int nbz;
    int32_t *bz = q_zp(bzp, &nbz);
    gwr_ku_qmm_prep *q = gwr_calloc(1, sizeof *q);
    if (q && (!bzp || bz)) q->b8 = gwr_ku_ig8b_make(b->data, b->dtype == GWR_INT8, (int)K, (int)N, bz, nbz, -1);
    if (q && !q->b8) q->bp = gwr_malloc(gwr_ku_igemm_b_size((int)K, (int)N) * sizeof *q->bp);
    if (!q || (!q->bp && !q->b8) || (bzp && !bz)) {
        gwr_free(bz), gwr_ku_qmm_prep_free(q);
        return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory preparing B");
    }
    q->K = K, q->N = N;
    if (q->bp) gwr_ku_igemm_pack_b(b->data, b->dtype == GWR_INT8, (int)K, (int)N, bz, nbz, q->bp);
    gwr_free(bz);
    *state = q;
    return GWR_OK;
}

static gwr_status qmm_prepare(gwr_kctx *k, void **state) { return gwr_ku_qmm_prepare_at(k, 1, 3, state); }
static gwr_status qlmm_prepare(gwr_kctx *k, void **state) { return gwr_ku_qmm_prepare_at(k, 3, 5, state); }

static gwr_status k_matmul_integer(gwr_kctx *k) {
    const gwr_value *a = k->nin > 0 ? k->in[0] : NULL, *b = k->nin > 1 ? k->in[1] : NULL;
    const gwr_value *azp = k->nin > 2 ? k->in[2] : NULL, *bzp = k->nin > 3 ? k->in[3] : NULL;
    if (!a || !b) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %s is missing", a ? "B" : "A");
    if (!gwr_ku_is_q8(a->dtype) || !gwr_ku_is_q8(b->dtype))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "A and B must be int8 or uint8 (got %s, %s)", gwr_dtype_name(a->dtype), gwr_dtype_name(b->dtype));
    mmshape p;
    gwr_status st = mm_setup(k, a, b, &p);
    if (st) return st;
    int32_t *acc = NULL;
    const gwr_ku_qmm_prep *qp = k->prep;
    gwr_value *y;
    if (qparam(k, azp, "a_zero_point", a->dtype, p.M) < 0 || qparam(k, bzp, "b_zero_point", b->dtype, p.N) < 0) st = GWR_ERR_INVALID_ARG;
    else if (!(y = gwr_k_out(k, 0, GWR_INT32, p.orank, p.odims))) st = GWR_ERR_NOMEM;
    else if (!(st = q_matmul(k, a, azp, b, bzp, qp, &p, &acc)))
        memcpy(y->data, acc, (size_t)y->numel * sizeof *acc);
    gwr_free(acc);
    mm_free(&p);
    return st;
}

static gwr_status k_qlinear_matmul(gwr_kctx *k) {
    static const char *const names[8] = {"a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point"};
    if (k->nin < 8) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "QLinearMatMul takes 8 inputs, got %d", k->nin);
    for (int i = 0; i < 8; i++)
        if (!k->in[i]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %s is missing", names[i]);
    const gwr_value *a = k->in[0], *as = k->in[1], *azp = k->in[2], *b = k->in[3], *bs = k->in[4], *bzp = k->in[5], *ys = k->in[6],
                    *yzp = k->in[7];
    if (!gwr_ku_is_q8(a->dtype) || !gwr_ku_is_q8(b->dtype) || !gwr_ku_is_q8(yzp->dtype))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "a, b and y_zero_point must be int8 or uint8");
    mmshape p;
    gwr_status st = mm_setup(k, a, b, &p);
    if (st) return st;
    int32_t *acc = NULL;
    gwr_value *y = NULL;
    int ras = 0, rbs = 0;
    /* the scales: float32, or (opset 21) all float16 / all bfloat16 */
    gwr_dtype sdt = as->dtype == GWR_FLOAT16 || as->dtype == GWR_BFLOAT16 ? as->dtype : GWR_FLOAT32;
    if ((ras = qparam(k, as, "a_scale", sdt, p.M)) < 0 || qparam(k, azp, "a_zero_point", a->dtype, p.M) < 0 ||
        (rbs = qparam(k, bs, "b_scale", sdt, p.N)) < 0 || qparam(k, bzp, "b_zero_point", b->dtype, p.N) < 0 ||
        qparam(k, ys, "y_scale", sdt, -1) < 0 || qparam(k, yzp, "y_zero_point", GWR_UNDEFINED, -1) < 0)
        st = GWR_ERR_INVALID_ARG;
    else if (!(y = gwr_k_out(k, 0, yzp->dtype, p.orank, p.odims))) st = GWR_ERR_NOMEM;
    else if (!(st = q_matmul(k, a, azp, b, bzp, k->prep, &p, &acc))) {
        /* the int32 accumulator times a_scale * b_scale / y_scale, in
         * float32; a zero y_scale saturates (NaN: 0 / 0 gives the low end) */
        float ysc = (float)gwr_ku_get(ys, 0); /* float16 / bfloat16 scales widened: exact */
        double zy = gwr_ku_q8(yzp, 0), lo, hi;
        gwr_ku_qrange(yzp->dtype, &lo, &hi);
        for (int64_t i = 0; i < y->numel; i++) {
            int64_t col = i % p.N, row = (i / p.N) % p.M;
            float scale = (float)gwr_ku_get(as, ras == 2 ? row : 0) * (float)gwr_ku_get(bs, rbs == 2 ? col : 0) / ysc;
            double q = gwr_ku_requant(acc[i], scale, zy, lo, hi);
            if (y->dtype == GWR_INT8) ((int8_t *)y->data)[i] = (int8_t)q;
            else ((uint8_t *)y->data)[i] = (uint8_t)q;
        }
    }
    gwr_free(acc);
    mm_free(&p);
    return st;
}

/* ---- Gemm ---------------------------------------------------------------- */

gwr_status gwr_ku_gemm_kernel(gwr_kctx *k) {
    const gwr_value *a = k->nin > 0 ? k->in[0] : NULL, *b = k->nin > 1 ? k->in[1] : NULL, *c = k->nin > 2 ? k->in[2] : NULL;
    if (!a || !b) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %s is missing", a ? "B" : "A");
    gwr_dtype dt = a->dtype;
    if (b->dtype != dt || (c && c->dtype != dt))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "A is %s but %s is %s", gwr_dtype_name(dt), b->dtype != dt ? "B" : "C",
                          gwr_dtype_name(b->dtype != dt ? b->dtype : c->dtype));
    if (!product_dtype(dt))
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "dtype %s is not supported", gwr_dtype_name(dt));
    if (a->rank != 2 || b->rank != 2) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "A and B must be 2-D (ranks %d and %d)", a->rank, b->rank);
    int ta = gwr_k_int(k, "transA", 0) != 0, tb = gwr_k_int(k, "transB", 0) != 0;
    float alpha = gwr_k_float(k, "alpha", 1.0f), beta = gwr_k_float(k, "beta", 1.0f);
    int64_t M = ta ? a->dims[1] : a->dims[0], K = ta ? a->dims[0] : a->dims[1];
    int64_t kb = tb ? b->dims[1] : b->dims[0], N = tb ? b->dims[0] : b->dims[1];
    if (kb != K) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "inner dims differ: A' has %lld columns, B' has %lld rows", (long long)K, (long long)kb);
    if (!gwr_ku_fits_int(M) || !gwr_ku_fits_int(N) || !gwr_ku_fits_int(K)) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "matrix dims too large for BLAS");
    int64_t cs[2] = {0, 0}; /* strides of C over (M, N) */
    if (c) {
        int64_t od[2] = {M, N};
        if (c->rank > 2) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "C has rank %d, expected at most 2", c->rank);
        for (int i = 0; i < c->rank; i++) {
            int64_t cd = c->dims[i], want = od[2 - c->rank + i];
            if (cd != 1 && cd != want)
                return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "C of shape dim %d = %lld does not broadcast to [%lld, %lld]", i, (long long)cd,
                                  (long long)M, (long long)N);
        }
        gwr_bcast_strides(c->rank, c->dims, 2, od, cs);
    }
    int64_t od[2] = {M, N};
    gwr_value *y = gwr_k_out(k, 0, dt, 2, od);
    if (!y) return GWR_ERR_NOMEM;
    int use_c = c && beta != 0;
    int lda = (int)a->dims[1], ldb = (int)b->dims[1];
    gwr_blas_threads(k->threads);
    const gwr_mm_prep *pp = gwr_ku_mm_prep(k, b); /* B prepared at planning: float32 [K, N] */
    if (pp) tb = 0, ldb = (int)N;
    if (dt == GWR_FLOAT32 || dt == GWR_FLOAT16 || dt == GWR_BFLOAT16) {
        int wide = dt != GWR_FLOAT32;
        float *af = wide ? gwr_ku_widen(a) : a->data, *bf = pp ? pp->b : wide ? gwr_ku_widen(b) : b->data;
        float *cf = wide && use_c ? gwr_ku_widen(c) : NULL;
        float *yf = wide ? gwr_malloc((size_t)(y->numel ? y->numel : 1) * sizeof *yf) : y->data;
        gwr_status st = GWR_OK;
        if (!af || !bf || !yf || (wide && use_c && !cf)) {
            st = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
        } else {
            const float *cv = wide ? cf : c ? c->data : NULL;
            if (use_c && beta == 1.0f && cs[1] == 1) /* a bias row (or C whole): copies sgemm accumulates onto */
                for (int64_t i = 0; i < M; i++) memcpy(yf + i * N, cv + i * cs[0], (size_t)N * sizeof *yf);
            else if (use_c)
                for (int64_t i = 0; i < M; i++)
                    for (int64_t j = 0; j < N; j++) yf[i * N + j] = beta * cv[i * cs[0] + j * cs[1]];
            if (gwr_ku_mm_packed(k, b, ta, (int)M, af, lda, alpha, use_c ? 1.0f : 0.0f, yf, (int)N))
                gwr_ku_sgemm(ta, tb, (int)M, (int)N, (int)K, alpha, af, lda, bf, ldb, use_c ? 1.0f : 0.0f, yf, (int)N);
            if (wide) gwr_ku_narrow(yf, y);
        }
        if (wide) gwr_free(af), gwr_free(cf), gwr_free(yf);
        if (wide && !pp) gwr_free(bf);
        return st;
    }
    if (dt == GWR_FLOAT64) {
        double *yd = y->data;
        const double *cv = c ? c->data : NULL;
        if (use_c)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) yd[i * N + j] = (double)beta * cv[i * cs[0] + j * cs[1]];
        gwr_ku_dgemm(ta, tb, (int)M, (int)N, (int)K, alpha, a->data, lda, b->data, ldb, use_c ? 1.0 : 0.0, yd, (int)N);
        return GWR_OK;
    }
    /* integers: exact wrapping products; alpha and beta other than 1 through
     * float64, saturated */
    int exact = alpha == 1.0f && (!use_c || beta == 1.0f);
    int sgn = !gwr_ku_is_uint(dt);
    double lo = dt == GWR_INT32 ? -2147483648.0 : dt == GWR_INT64 ? -9223372036854775808.0 : 0;
    double hi = dt == GWR_INT32 ? 2147483647.0 : dt == GWR_UINT32 ? 4294967295.0 : dt == GWR_INT64 ? 9223372036854774784.0 : 18446744073709549568.0;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            uint64_t s = 0;
            for (int64_t q = 0; q < K; q++)
                s += iget(a, ta ? q * M + i : i * K + q) * iget(b, tb ? j * K + q : q * N + j);
            uint64_t cv = use_c ? iget(c, i * cs[0] + j * cs[1]) : 0;
            if (exact) {
                iset(y, i * N + j, s + cv);
            } else {
                double sv = sgn ? (double)(int64_t)s : (double)s, cd = sgn ? (double)(int64_t)cv : (double)cv;
                if (dt == GWR_INT32 || dt == GWR_UINT32) sv = sgn ? (double)(int32_t)(uint32_t)s : (double)(uint32_t)s;
                double r = alpha * sv + (use_c ? beta * cd : 0);
                r = r != r ? 0 : r < lo ? lo : r > hi ? hi : r;
                iset(y, i * N + j, sgn ? (uint64_t)(int64_t)r : (uint64_t)r);
            }
        }
    return GWR_OK;
}

/* ---- Einsum -------------------------------------------------------------- */

#define EIN_LETTERS 52
#define EIN_MAXELL 16
#define EIN_LABELS (EIN_LETTERS + EIN_MAXELL)
#define EIN_MAXIN 16

static int ein_letter(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
    return -1;
}

/* One term: its labels in order, -2 standing for the ellipsis; count or
 * -1 on a bad character. */
static int ein_term(const char *s, size_t n, int *lab, int max, int *nell) {
    int cnt = 0;
    *nell = 0;
    for (size_t i = 0; i < n;) {
        if (s[i] == '.') {
            if (i + 3 > n || s[i + 1] != '.' || s[i + 2] != '.' || *nell) return -1;
            if (cnt >= max) return -1;
            lab[cnt++] = -2, (*nell)++, i += 3;
            continue;
        }
        int l = ein_letter(s[i]);
        if (l < 0 || cnt >= max) return -1;
        lab[cnt++] = l, i++;
    }
    return cnt;
}

/* An equation bound to its inputs: label ids 0..51 are the letters, 52 + j
 * the ellipsis dims (right-aligned over E). */
typedef struct ein_plan {
    int nin, E;
    int lab[EIN_MAXIN][64], nlab[EIN_MAXIN], nell[EIN_MAXIN]; /* each term's labels, -2 the ellipsis */
    int64_t size[EIN_LABELS];                  /* -1: not seen */
    int seen[EIN_LABELS];                      /* occurrences over the inputs */
    int64_t strides[EIN_MAXIN][EIN_LABELS];    /* per input, summed over repeats (diagonals) */
    int out[EIN_LABELS], nout, inout[EIN_LABELS];
    int con[EIN_LABELS], ncon;                 /* the contracted labels */
    int64_t odims[EIN_LABELS], total_c;        /* output dims; contracted combinations */
} ein_plan;

static char ein_char(int l) { return (char)(l < 26 ? 'A' + l : 'a' + l - 26); }

/* The inputs: 1 to EIN_MAXIN present values of one dtype Einsum reads. */
static gwr_status ein_inputs(gwr_kctx *k, gwr_dtype *dtp) {
    int nin = k->nin;
    if (nin < 1 || nin > EIN_MAXIN) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "Einsum takes 1 to %d inputs, got %d", EIN_MAXIN, nin);
    gwr_dtype dt = GWR_UNDEFINED;
    for (int i = 0; i < nin; i++) {
        if (!k->in[i]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %d is missing", i);
        if (i && k->in[i]->dtype != dt)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %d is %s, input 0 is %s", i, gwr_dtype_name(k->in[i]->dtype), gwr_dtype_name(dt));
        dt = k->in[i]->dtype;
        if (k->in[i]->rank > 32) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "input %d has rank %d", i, k->in[i]->rank);
    }
    if (!gwr_ku_is_int(dt) && !gwr_ku_is_float(dt))
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "dtype %s is not supported", gwr_dtype_name(dt));
    *dtp = dt;
    return GWR_OK;
}

/* The input terms of buf (the equation without spaces; lhs_len bytes
 * before "->") into p, checked against the inputs' ranks. */
static gwr_status ein_terms(gwr_kctx *k, const char *eq, const char *buf, size_t lhs_len, ein_plan *p) {
    size_t pos = 0;
    for (int i = 0; i < p->nin; i++) {
        size_t end = pos;
        while (end < lhs_len && buf[end] != ',') end++;
        if ((i < p->nin - 1) != (end < lhs_len))
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "equation '%s' has a term count other than the %d inputs", eq, p->nin);
        p->nlab[i] = ein_term(buf + pos, end - pos, p->lab[i], 64, &p->nell[i]);
        if (p->nlab[i] < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "bad term %d in equation '%s'", i, eq);
        int e = p->nell[i] ? k->in[i]->rank - (p->nlab[i] - 1) : 0;
        if ((p->nell[i] && e < 0) || (!p->nell[i] && p->nlab[i] != k->in[i]->rank))
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "term %d has %d labels but input %d has rank %d", i, p->nlab[i] - p->nell[i], i,
                              k->in[i]->rank);
        if (e > EIN_MAXELL) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "ellipsis of %d dims", e);
        if (e > p->E) p->E = e;
        pos = end + 1;
    }
    return GWR_OK;
}

/* Each label's size and each input's stride along it. */
static gwr_status ein_bind(gwr_kctx *k, ein_plan *p) {
    for (int i = 0; i < p->nin; i++) {
        const gwr_value *v = k->in[i];
        int64_t vs[32];
        gwr_strides(v->rank, v->dims, vs);
        int e = p->nell[i] ? v->rank - (p->nlab[i] - 1) : 0, dim = 0;
        for (int t = 0; t < p->nlab[i]; t++) {
            if (p->lab[i][t] == -2) {
                for (int j = 0; j < e; j++, dim++) {
                    int l = EIN_LETTERS + p->E - e + j;
                    int64_t d = v->dims[dim];
                    if (p->size[l] < 0 || p->size[l] == 1) p->size[l] = d;
                    else if (d != 1 && d != p->size[l])
                        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "ellipsis dims of input %d do not broadcast", i);
                    if (d != 1) p->strides[i][l] += vs[dim];
                    p->seen[l]++;
                }
                continue;
            }
            int l = p->lab[i][t];
            int64_t d = v->dims[dim];
            if (p->size[l] >= 0 && p->size[l] != d)
                return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "label '%c' has sizes %lld and %lld", ein_char(l), (long long)p->size[l],
                                  (long long)d);
            p->size[l] = d;
            p->strides[i][l] += vs[dim];
            p->seen[l]++;
            dim++;
        }
    }
    return GWR_OK;
}

/* The output labels (the explicit term after "->", or the ellipsis and
 * the labels seen once, in order), the contracted ones, and the sizes. */
static gwr_status ein_output(gwr_kctx *k, const char *eq, const char *arrow, ein_plan *p) {
    int E = p->E;
    if (arrow) {
        int olab[64], oell;
        int no = ein_term(arrow + 2, strlen(arrow + 2), olab, 64, &oell);
        if (no < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "bad output term in equation '%s'", eq);
        for (int t = 0; t < no; t++) {
            if (olab[t] == -2) {
                for (int l = EIN_LETTERS; l < EIN_LETTERS + E; l++) p->out[p->nout++] = l, p->inout[l] = 1;
                continue;
            }
            int l = olab[t];
            if (!p->seen[l] || p->inout[l])
                return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "output label '%c' is %s", ein_char(l),
                                  p->inout[l] ? "repeated" : "not an input label");
            p->out[p->nout++] = l, p->inout[l] = 1;
        }
    } else {
        for (int l = EIN_LETTERS; l < EIN_LETTERS + E; l++) p->out[p->nout++] = l, p->inout[l] = 1;
        for (int l = 0; l < EIN_LETTERS; l++)
            if (p->seen[l] == 1) p->out[p->nout++] = l, p->inout[l] = 1;
    }
    for (int l = 0; l < EIN_LETTERS + E; l++)
        if (p->seen[l] && !p->inout[l]) p->con[p->ncon++] = l;
    double work = 1;
    p->total_c = 1;
    for (int t = 0; t < p->nout; t++) p->odims[t] = p->size[p->out[t]] < 0 ? 1 : p->size[p->out[t]];
    for (int c = 0; c < p->ncon; c++) p->total_c *= p->size[p->con[c]], work *= (double)p->size[p->con[c]];
    for (int t = 0; t < p->nout; t++) work *= (double)p->odims[t];
    if (work > 1e15) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "einsum '%s' is too large for the generic loop", eq);
    return GWR_OK;
}

/* y[e] = the sum over the contracted labels of the product of the
 * operands (data: float64, or uint64 wrapping when isint), walking every
 * operand by its strides. */
static void ein_loop(const ein_plan *p, void *const *data, int isint, gwr_value *y) {
    int nin = p->nin;
    int64_t oidx[EIN_LABELS] = {0}, cidx[EIN_LABELS], base[EIN_MAXIN] = {0}, off[EIN_MAXIN];
    for (int64_t e = 0; e < y->numel; e++) {
        double acc = 0;
        uint64_t iacc = 0;
        memset(cidx, 0, (size_t)p->ncon * sizeof *cidx);
        memcpy(off, base, (size_t)nin * sizeof *off);
        for (int64_t t = 0; t < p->total_c; t++) {
            if (isint) {
                uint64_t pr = 1;
                for (int i = 0; i < nin; i++) pr *= ((const uint64_t *)data[i])[off[i]];
                iacc += pr;
            } else {
                double pr = 1;
                for (int i = 0; i < nin; i++) pr *= ((const double *)data[i])[off[i]];
                acc += pr;
            }
            for (int c = p->ncon - 1; c >= 0; c--) {
                int l = p->con[c];
                for (int i = 0; i < nin; i++) off[i] += p->strides[i][l];
                if (++cidx[c] < p->size[l]) break;
                for (int i = 0; i < nin; i++) off[i] -= p->strides[i][l] * p->size[l];
                cidx[c] = 0;
            }
        }
        if (isint) iset(y, e, iacc);
        else gwr_v_set_f64(y, e, acc);
        for (int t = p->nout - 1; t >= 0; t--) {
            int l = p->out[t];
            for (int i = 0; i < nin; i++) base[i] += p->strides[i][l];
            if (++oidx[t] < p->odims[t]) break;
            for (int i = 0; i < nin; i++) base[i] -= p->strides[i][l] * p->odims[t];
            oidx[t] = 0;
        }
    }
}

/* The operands as float64, or uint64 when isint (malloc'd into data). */
static gwr_status ein_operands(gwr_kctx *k, int isint, void **data) {
    for (int i = 0; i < k->nin; i++) {
        const gwr_value *v = k->in[i];
        if (!(data[i] = gwr_malloc((size_t)(v->numel ? v->numel : 1) * 8))) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
        if (isint)
            for (int64_t j = 0; j < v->numel; j++) ((uint64_t *)data[i])[j] = iget(v, j);
        else
            for (int64_t j = 0; j < v->numel; j++) ((double *)data[i])[j] = gwr_v_get_f64(v, j);
    }
    return GWR_OK;
}

static gwr_status k_einsum(gwr_kctx *k) {
    const char *eq = gwr_k_string(k, "equation", NULL);
    if (!eq) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "the equation attribute is missing");
    gwr_dtype dt = GWR_UNDEFINED;
    gwr_status st = ein_inputs(k, &dt);
    if (st) return st;
    int isint = gwr_ku_is_int(dt);
    /* the equation without spaces */
    char buf[512];
    size_t n = 0;
    for (const char *c = eq; *c; c++)
        if (*c != ' ') {
            if (n + 1 >= sizeof buf) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "equation too long");
            buf[n++] = *c;
        }
    buf[n] = 0;
    char *arrow = strstr(buf, "->");
    ein_plan p;
    memset(&p, 0, sizeof p);
    p.nin = k->nin;
    for (int l = 0; l < EIN_LABELS; l++) p.size[l] = -1;
    if ((st = ein_terms(k, eq, buf, arrow ? (size_t)(arrow - buf) : n, &p)) || (st = ein_bind(k, &p)) ||
        (st = ein_output(k, eq, arrow, &p)))
        return st;
    gwr_value *y = gwr_k_out(k, 0, dt, p.nout, p.odims);
    if (!y) return GWR_ERR_NOMEM;
    void *data[EIN_MAXIN] = {0};
    if (!(st = ein_operands(k, isint, data))) ein_loop(&p, data, isint, y);
    for (int i = 0; i < p.nin; i++) gwr_free(data[i]);
    return st;
}

/* ---- Det ----------------------------------------------------------------- */

/* The determinant of each trailing M x M matrix: LU with partial pivoting
 * in double. */
static gwr_status k_det(gwr_kctx *k) {
    const gwr_value *x = k->nin > 0 ? k->in[0] : NULL;
    if (!x || !gwr_ku_is_float(x->dtype)) return gwr_k_fail(k, GWR_ERR_TYPE, "input must be a float tensor");
    if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2])
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input must be [..., M, M]");
    int64_t m = x->dims[x->rank - 1], batch = m ? x->numel / (m * m) : 0;
    if (m == 0) batch = gwr_shape_numel(x->rank - 2, x->dims);
    gwr_value *y = gwr_k_out(k, 0, x->dtype, x->rank - 2, x->dims);
    if (!y) return GWR_ERR_NOMEM;
    int64_t mm = m * m;
    double *a = gwr_malloc((size_t)(mm > 0 ? mm : 1) * sizeof *a);
    if (!a) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    for (int64_t b = 0; b < batch; b++) {
        for (int64_t i = 0; i < m * m; i++) a[i] = gwr_v_get_f64(x, b * m * m + i);
        double det = 1;
        for (int64_t c = 0; c < m && det != 0; c++) {
            int64_t p = c;
            for (int64_t r = c + 1; r < m; r++)
                if (fabs(a[r * m + c]) > fabs(a[p * m + c])) p = r;
            if (a[p * m + c] == 0) {
                det = 0;
                break;
            }
            if (p != c) {
                for (int64_t j = 0; j < m; j++) {
                    double t = a[c * m + j];
                    a[c * m + j] = a[p * m + j], a[p * m + j] = t;
                }
                det = -det;
            }
            det *= a[c * m + c];
            for (int64_t r = c + 1; r < m; r++) {
                double f = a[r * m + c] / a[c * m + c];
                for (int64_t j = c; j < m; j++) a[r * m + j] -= f * a[c * m + j];
            }
        }
        gwr_v_set_f64(y, b, det);
    }
    gwr_free(a);
    return GWR_OK;
}

const gwr_kernel_entry gwr_kernels_linalg[] = {
    GWR_KERNEL(MatMul, k_matmul, .flags = GWR_KF_BLAS, .prepare = gwr_ku_mm_prepare, .prep_free = gwr_ku_mm_prep_free),
    GWR_KERNEL(Gemm, gwr_ku_gemm_kernel, .flags = GWR_KF_BLAS, .prepare = gwr_ku_mm_prepare,
               .prep_free = gwr_ku_mm_prep_free),
    GWR_KERNEL(MatMulInteger, k_matmul_integer, .prepare = qmm_prepare, .prep_free = gwr_ku_qmm_prep_free),
    GWR_KERNEL(QLinearMatMul, k_qlinear_matmul, .flags = GWR_KF_BLAS, .prepare = qlmm_prepare, .prep_free = gwr_ku_qmm_prep_free),
    GWR_KERNEL(Einsum, k_einsum),
    GWR_KERNEL(Det, k_det),
    {.fn = NULL},
};
