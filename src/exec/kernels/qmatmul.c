/* qmatmul.c - onnxruntime's dynamically quantized matrix products
 * (com.microsoft, version 1), which `gwr optimize` fuses for targets ort
 * and gwr (passes/fuse_qmatmul.c):
 *
 *   MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zero_point?, b_zero_point?, bias?)
 *     = float(MatMulInteger(A, B, a_zero_point, b_zero_point)) * (a_scale * b_scale) + bias
 *   DynamicQuantizeMatMul(A, B, b_scale, b_zero_point?, bias?)
 *     = the same with A, a_scale, a_zero_point = DynamicQuantizeLinear(A)
 *
 * computed as the unfused layers compute them, to the bit: the exact
 * int32 sums of igemm.c (wrapping, never saturating), each converted to
 * float32 and multiplied by the float32 product a_scale * b_scale[j], then
 * bias[j] added in a rounding of its own; DynamicQuantizeLinear's scale,
 * zero point and rounding are quant.c's (gwr_ku_dql_params), its uint8
 * values written straight into the packed int16 operand. A is [..., K]
 * (uint8 or int8; float32 for DynamicQuantizeMatMul), B 2-D [K, N]
 * (packed once at planning when constant), a_scale and a_zero_point
 * scalars (per tensor), b_scale and b_zero_point scalars or 1-D [N] (per
 * column), bias 1-D [N]; Y is [..., N] float32. */
#include "exec/kernels/igemm.h"
#include "exec/kernels/kernel_util.h"

/* in[i] when present; NULL when absent. */
static const gwr_value *opt_in(const gwr_kctx *k, int i) { return k->nin > i ? k->in[i] : NULL; }

/* A float32 value: a scalar (scalar_ok) or 1-D [per] (per >= 0); 0 after
 * gwr_k_fail. */
static int fvec_ok(gwr_kctx *k, const gwr_value *v, const char *name, int scalar_ok, int64_t per) {
    if (v->dtype != GWR_FLOAT32)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s is %s, expected float32", name, gwr_dtype_name(v->dtype)), 0;
    if ((scalar_ok && v->numel == 1) || (per >= 0 && v->rank == 1 && v->numel == per)) return 1;
    if (per < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s must be a scalar", name), 0;
    return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s must be %sa 1-D tensor of %lld elements", name,
                      scalar_ok ? "a scalar or " : "", (long long)per),
           0;
}

/* A zero point of dtype dt: a scalar or (per > 0) 1-D [per]; its values as
 * int32 into *z (malloc'd) and their count into *nz; 0 after gwr_k_fail. */
static int zp_ok(gwr_kctx *k, const gwr_value *v, const char *name, gwr_dtype dt, int64_t per, int32_t **z, int *nz) {
    *z = NULL, *nz = 0;
    if (!v) return 1;
    if (v->dtype != dt)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s is %s, expected %s", name, gwr_dtype_name(v->dtype), gwr_dtype_name(dt)), 0;
    if (!(v->numel == 1 || (per > 0 && v->rank == 1 && v->numel == per)))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s must be a scalar%s", name, per > 0 ? " or 1-D over B's columns" : " (per tensor)"), 0;
    if (!(*z = gwr_malloc((size_t)v->numel * sizeof **z))) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory"), 0;
    for (int64_t i = 0; i < v->numel; i++) (*z)[i] = (int32_t)gwr_ku_q8(v, i);
    *nz = (int)v->numel;
    return 1;
}

/* Both ops; dyn: DynamicQuantizeMatMul's input layout and float A. */
static gwr_status qmm_float(gwr_kctx *k, int dyn) {
    const gwr_value *a = opt_in(k, 0), *b = opt_in(k, 1);
    const gwr_value *as = dyn ? NULL : opt_in(k, 2), *bs = opt_in(k, dyn ? 2 : 3);
    const gwr_value *azp = dyn ? NULL : opt_in(k, 4), *bzp = opt_in(k, dyn ? 3 : 5), *bias = opt_in(k, dyn ? 4 : 6);
    if (!a || !b || !bs || (!dyn && !as)) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "a required input is missing");
    if (dyn ? a->dtype != GWR_FLOAT32 : !gwr_ku_is_q8(a->dtype))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "A is %s, expected %s", gwr_dtype_name(a->dtype), dyn ? "float32" : "int8 or uint8");
    if (!gwr_ku_is_q8(b->dtype)) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "B is %s, expected int8 or uint8", gwr_dtype_name(b->dtype));
    if (a->rank < 1 || b->rank != 2)
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "A of rank >= 1 and B of rank 2 only (got %d and %d)", a->rank, b->rank);
    int64_t K = a->dims[a->rank - 1], N = b->dims[1], M = K ? a->numel / K : 0;
    if (b->dims[0] != K)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "inner dims differ: A has %lld columns, B has %lld rows", (long long)K, (long long)b->dims[0]);
    if (!K) M = gwr_shape_numel(a->rank - 1, a->dims);
    if (!gwr_ku_fits_int(M) || !gwr_ku_fits_int(N) || !gwr_ku_fits_int(K))
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "matrix dims too large");
    if ((as && !fvec_ok(k, as, "a_scale", 1, -1)) || !fvec_ok(k, bs, "b_scale", 1, N) || (bias && !fvec_ok(k, bias, "bias", 0, N)))
        return GWR_ERR_INVALID_ARG;
    int64_t odims[GWR_MAX_RANK];
    memcpy(odims, a->dims, (size_t)(a->rank - 1) * sizeof *odims);
    odims[a->rank - 1] = N;
    int32_t *az = NULL, *bz = NULL;
    int naz = 0, nbz = 0;
    const gwr_ku_qmm_prep *qp = k->prep;
    if (qp && !(qp->K == K && qp->N == N)) qp = NULL;
    const int16_t *bprep = qp ? qp->bp : NULL;
    const gwr_ku_ig8b *b8 = qp ? qp->b8 : NULL;
    if (!zp_ok(k, azp, "a_zero_point", a->dtype, -1, &az, &naz) || !zp_ok(k, bzp, "b_zero_point", b->dtype, N, &bz, &nbz)) {
        gwr_free(az);
        return GWR_ERR_INVALID_ARG;
    }
    gwr_value *y = gwr_k_out(k, 0, GWR_FLOAT32, a->rank, odims);
    int16_t *ap = NULL, *bpk = bprep || b8 ? NULL : gwr_malloc(gwr_ku_igemm_b_size((int)K, (int)N) * sizeof *bpk);
    uint8_t *ap8 = NULL;
    int32_t *zeff = NULL;
    if (b8) ap8 = gwr_malloc(gwr_ku_igemm8_a_size((int)M, (int)K)), zeff = gwr_malloc((size_t)(M ? M : 1) * sizeof *zeff);
    else ap = gwr_malloc(gwr_ku_igemm_a_size((int)M, (int)K) * sizeof *ap);
    float *sc = gwr_malloc((size_t)(N ? N : 1) * sizeof *sc);
    int nomem = (b8 ? !ap8 || !zeff : !ap || (!bprep && !bpk)) || !sc;
    gwr_status st = !y ? GWR_ERR_NOMEM : nomem ? gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory") : GWR_OK;
    if (!st) {
        float a_scale;
        int zp = 0;
        if (dyn) gwr_ku_dql_params(a->data, a->numel, &a_scale, &zp);
        else a_scale = *(const float *)as->data;
        if (b8 && dyn) gwr_ku_igemm8_pack_a_dql(a->data, (int)M, (int)K, a_scale, zp, ap8, zeff);
        else if (b8) gwr_ku_igemm8_pack_a(a->data, a->dtype == GWR_INT8, (int)M, (int)K, az, naz, ap8, zeff);
        else if (dyn) gwr_ku_igemm_pack_a_dql(a->data, (int)M, (int)K, a_scale, zp, ap);
        else gwr_ku_igemm_pack_a(a->data, a->dtype == GWR_INT8, (int)M, (int)K, az, naz, ap);
        const float *bsd = bs->data;
        int nsc = bs->numel == 1 ? 1 : (int)N;
        for (int j = 0; j < nsc; j++) sc[j] = a_scale * bsd[j];
        const float *bi = bias ? bias->data : NULL;
        if (!b8 && !bprep) gwr_ku_igemm_pack_b(b->data, b->dtype == GWR_INT8, (int)K, (int)N, bz, nbz, bpk);
        if (b8 ? gwr_ku_igemm8_f32((int)M, ap8, zeff, b8, sc, nsc, bi, y->data, (int)N)
               : gwr_ku_igemm_f32((int)M, (int)N, (int)K, ap, bprep ? bprep : bpk, sc, nsc, bi, y->data, (int)N))
            st = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    }
    gwr_free(ap8), gwr_free(zeff);
    gwr_free(az), gwr_free(bz), gwr_free(ap), gwr_free(bpk), gwr_free(sc);
    return st;
}

static gwr_status k_mm_integer_to_float(gwr_kctx *k) { return qmm_float(k, 0); }
static gwr_status k_dyn_quant_matmul(gwr_kctx *k) { return qmm_float(k, 1); }
static gwr_status prep_mmitf(gwr_kctx *k, void **state) { return gwr_ku_qmm_prepare_at(k, 1, 5, state); }
static gwr_status prep_dqmm(gwr_kctx *k, void **state) { return gwr_ku_qmm_prepare_at(k, 1, 3, state); }

const gwr_kernel_entry gwr_kernels_qmatmul[] = {
    GWR_KERNEL(MS_MatMulIntegerToFloat, k_mm_integer_to_float, .prepare = prep_mmitf, .prep_free = gwr_ku_qmm_prep_free),
    GWR_KERNEL(MS_DynamicQuantizeMatMul, k_dyn_quant_matmul, .prepare = prep_dqmm, .prep_free = gwr_ku_qmm_prep_free),
    {.fn = NULL},
};
