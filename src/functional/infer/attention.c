/* attention.c - shape rules of the attention ops: com.microsoft
 * MultiHeadAttention and Attention (onnxruntime's contrib ops), ONNX's
 * Attention and RotaryEmbedding (opset 23).
 *
 * MultiHeadAttention: query (batch, seq, hidden) with key (batch, kv_seq,
 * hidden) and value (batch, kv_seq, v_hidden), or a packed qkv (batch,
 * seq, num_heads, 3, head_size) alone; bias (hidden + hidden + v_hidden);
 * attention_bias (batch or 1, num_heads or 1, seq, total_seq). Output 0 is
 * (batch, seq, v_hidden); present_key, present_value and qk get the
 * query's dtype and an unknown shape (the rule does not track the past).
 * Only definite contradictions are errors: a rank the schema has no form
 * for, a hidden size num_heads does not divide, dtypes that differ, a
 * non-float query, an int mask that is not int32. */
#include "functional/infer/infer_internal.h"

static int float_dtype(gwr_dtype t) {
    return t == GWR_UNDEFINED || t == GWR_FLOAT32 || t == GWR_FLOAT16 || t == GWR_BFLOAT16;
}

/* Every present one of inputs 1, 2, 3, 5 (key, value, bias, attention_bias)
 * and inputs 6, 7 (past) of q's dtype. */
static int same_dtypes(ictx *c, const gwr_tensor *q) {
    static const int same[] = {1, 2, 3, 5, 6, 7};
    for (size_t i = 0; i < sizeof same / sizeof *same; i++)
        if (!gwr_fi_same_dtype(c, q, inp(c, same[i]))) return 0;
    return 1;
}

static gwr_status infer_mha(ictx *c) {
    gwr_tensor *q = gwr_fi_need(c, 0, "query"), *k = inp(c, 1), *v = inp(c, 2), *bias = inp(c, 3);
    gwr_tensor *kpm = inp(c, 4), *ab = inp(c, 5);
    if (!q) return c->st;
    int64_t nh = gwr_fi_aint(c, "num_heads", 0);
    if (c->st) return c->st;
    if (nh <= 0) return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "num_heads must be positive, got %lld", (long long)nh);
    gwr_dtype dt = dt_of(q);
    sbuf x;
    if (!float_dtype(dt))
        return gwr_fi_fail(c, GWR_ERR_TYPE, "query must be float, float16 or bfloat16, got %s", gwr_fi_tstr(q, &x));
    if (!same_dtypes(c, q)) return c->st;
    if (kpm && !gwr_fi_want_dtype(c, kpm, GWR_INT32, "key_padding_mask")) return c->st;
    shp sq, sv, sab, out = {.rank = 3};
    gwr_fi_shp_get(q, &sq);
    gwr_fi_shp_get(v, &sv);
    gwr_fi_shp_get(ab, &sab);
    if (ab && !gwr_fi_want_rank(c, ab, &sab, 4, 4, "attention_bias")) return c->st;
    if (sq.rank < 0) return gwr_fi_put(c, 0, dt, NULL);
    if (sq.rank != 3 && sq.rank != 5)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "query must be (batch, seq, hidden) or a packed (batch, seq, heads, 3, "
                                             "head_size), got %s", gwr_fi_tstr(q, &x));
    out.d[0] = sq.d[0], out.d[1] = sq.d[1], out.d[2] = GWR_DIM_UNKNOWN;
    if (sq.rank == 5) {
        if (k || v) return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "a packed qkv query takes no key or value");
        if (GWR_DIM_IS_KNOWN(sq.d[2]) && sq.d[2] != nh)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "packed qkv %s has not num_heads (%lld) heads", gwr_fi_tstr(q, &x), (long long)nh);
        out.d[2] = gwr_fi_dmul(sq.d[2], sq.d[4]);
    } else {
        if (GWR_DIM_IS_KNOWN(sq.d[2]) && sq.d[2] % nh)
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "query hidden size %lld is not a multiple of num_heads %lld",
                               (long long)sq.d[2], (long long)nh);
        if (!k && !v) return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "a 3-D query needs key and value (or pass a packed qkv)");
        if (sv.rank == 3) out.d[2] = sv.d[2];                                  /* value (batch, kv_seq, v_hidden) */
        else if (sv.rank == 4) out.d[2] = gwr_fi_dmul(sv.d[1], sv.d[3]);      /* past value (batch, heads, kv, hs) */
        else if (!v) out.d[2] = sq.d[2];                                       /* packed kv: v_hidden = hidden */
    }
    if (bias && sq.rank == 3 && sv.rank == 3 &&
        !gwr_fi_want_vec(c, bias, gwr_fi_dadd(gwr_fi_dadd(sq.d[2], sq.d[2]), sv.d[2]), "bias"))
        return c->st;
    for (int i = 1; i < c->nout; i++)
        if (gwr_fi_put(c, i, dt, NULL)) return c->st;
    return gwr_fi_put(c, 0, dt, &out);
}

/* Attention: input (B, S, In), weights (In, H + H + Hv) with H = Hv =
 * W / 3 unless qkv_hidden_sizes says; output (B, S, Hv). */
static gwr_status infer_attention(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "input"), *w = gwr_fi_need(c, 1, "weights");
    if (!x || !w) return c->st;
    int64_t nh = gwr_fi_aint(c, "num_heads", 0);
    if (c->st) return c->st;
    if (nh <= 0) return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "num_heads must be positive, got %lld", (long long)nh);
    gwr_dtype dt = dt_of(x);
    sbuf b1, b2;
    if (!float_dtype(dt))
        return gwr_fi_fail(c, GWR_ERR_TYPE, "input must be float, float16 or bfloat16, got %s", gwr_fi_tstr(x, &b1));
    if (!gwr_fi_same_dtype(c, x, w) || !gwr_fi_same_dtype(c, x, inp(c, 2)) || !gwr_fi_same_dtype(c, x, inp(c, 5)))
        return c->st;
    shp sx, sw, out = {.rank = 3};
    gwr_fi_shp_get(x, &sx);
    gwr_fi_shp_get(w, &sw);
    if (!gwr_fi_want_rank(c, x, &sx, 3, 3, "input") || !gwr_fi_want_rank(c, w, &sw, 2, 2, "weights")) return c->st;
    gwr_dim in;
    if (sx.rank == 3 && sw.rank == 2 && !gwr_fi_dmerge(sx.d[2], sw.d[0], &in))
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "input %s and weights %s do not chain", gwr_fi_tstr(x, &b1), gwr_fi_tstr(w, &b2));
    const int64_t *hs;
    int64_t n = 0;
    gwr_dim wd = sw.rank == 2 ? sw.d[1] : GWR_DIM_UNKNOWN, hv = GWR_DIM_UNKNOWN;
    if (gwr_fi_aints(c, "qkv_hidden_sizes", &hs, &n)) {
        if (n != 3 || hs[0] != hs[1] || hs[2] < 0 || hs[0] < 0 || (GWR_DIM_IS_KNOWN(wd) && hs[0] + hs[1] + hs[2] != wd))
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "qkv_hidden_sizes do not split weights %s", gwr_fi_tstr(w, &b2));
        hv = hs[2];
    } else if (c->st) {
        return c->st;
    } else if (GWR_DIM_IS_KNOWN(wd)) {
        if (wd % (3 * nh)) return gwr_fi_fail(c, GWR_ERR_SHAPE, "weights %s do not hold 3 x %lld heads", gwr_fi_tstr(w, &b2), (long long)nh);
        hv = wd / 3;
    }
    out.d[0] = sx.rank == 3 ? sx.d[0] : GWR_DIM_UNKNOWN, out.d[1] = sx.rank == 3 ? sx.d[1] : GWR_DIM_UNKNOWN, out.d[2] = hv;
    if (c->nout > 1 && gwr_fi_put(c, 1, dt, NULL)) return c->st;
    return gwr_fi_put(c, 0, dt, &out);
}

/* ONNX Attention (opset 23, 24): Q, K, V all (B, S, heads * D) with
 * q_num_heads and kv_num_heads, or all (B, heads, S, D); past_key and
 * past_value (B, kv_heads, P, D). Y: Q's layout with V's head size;
 * present_key and present_value (B, kv_heads, P + L, D); qk_matmul_output
 * (B, q_heads, S, P + L). Unknown dims stay unknown. */
static gwr_dim known_div(gwr_dim a, int64_t b) { return GWR_DIM_IS_KNOWN(a) && b > 0 ? a / b : GWR_DIM_UNKNOWN; }

static gwr_status infer_onnx_attention(ictx *c) {
    gwr_tensor *q = gwr_fi_need(c, 0, "Q"), *k = gwr_fi_need(c, 1, "K"), *v = gwr_fi_need(c, 2, "V");
    gwr_tensor *pk = inp(c, 4), *pv = inp(c, 5);
    if (!q || !k || !v || !gwr_fi_same_dtype(c, q, k) || !gwr_fi_same_dtype(c, q, v) || !gwr_fi_same_dtype(c, q, pk) ||
        !gwr_fi_same_dtype(c, q, pv))
        return c->st;
    int64_t qnh = gwr_fi_aint(c, "q_num_heads", 0), knh = gwr_fi_aint(c, "kv_num_heads", 0);
    if (c->st) return c->st;
    gwr_dtype dt = dt_of(q);
    sbuf x;
    if (!float_dtype(dt)) return gwr_fi_fail(c, GWR_ERR_TYPE, "Q must be float, float16 or bfloat16, got %s", gwr_fi_tstr(q, &x));
    shp sq, sk, sv, sp, y, pks = {.rank = 4}, pvs = {.rank = 4}, qk = {.rank = 4};
    gwr_fi_shp_get(q, &sq);
    gwr_fi_shp_get(k, &sk);
    gwr_fi_shp_get(v, &sv);
    gwr_fi_shp_get(pk, &sp);
    if (sq.rank < 0 || sk.rank < 0 || sv.rank < 0) return gwr_fi_put_all_unknown(c, dt);
    if (sq.rank != sk.rank || sq.rank != sv.rank || (sq.rank != 3 && sq.rank != 4))
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "Q, K and V must all be 3-D or all 4-D, got %s", gwr_fi_tstr(q, &x));
    gwr_dim B = sq.d[0], S, L, qh, kvh, Dh, Dv;
    if (sq.rank == 3) {
        if (qnh <= 0 || knh <= 0)
            return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "3-D Q, K and V need q_num_heads and kv_num_heads");
        qh = qnh, kvh = knh, S = sq.d[1], L = sk.d[1], Dh = known_div(sq.d[2], qnh), Dv = known_div(sv.d[2], knh);
        y.rank = 3, y.d[0] = B, y.d[1] = S, y.d[2] = gwr_fi_dmul(qh, Dv);
    } else {
        qh = sq.d[1], kvh = sk.d[1], S = sq.d[2], L = sk.d[2], Dh = sq.d[3], Dv = sv.d[3];
        y.rank = 4, y.d[0] = B, y.d[1] = qh, y.d[2] = S, y.d[3] = Dv;
    }
    gwr_dim T = pk ? (sp.rank == 4 ? gwr_fi_dadd(sp.d[2], L) : GWR_DIM_UNKNOWN) : L;
    pks.d[0] = pvs.d[0] = qk.d[0] = B, pks.d[1] = pvs.d[1] = kvh, qk.d[1] = qh;
    pks.d[2] = pvs.d[2] = qk.d[3] = T, qk.d[2] = S, pks.d[3] = Dh, pvs.d[3] = Dv;
    if (gwr_fi_put(c, 0, dt, &y) || gwr_fi_put(c, 1, dt, &pks) || gwr_fi_put(c, 2, dt, &pvs)) return c->st;
    return gwr_fi_put(c, 3, dt, &qk);
}

const gwr_fi_entry gwr_fi_rules_attention[] = {
    {GWR_OP_MS_MultiHeadAttention, infer_mha},
    {GWR_OP_MS_Attention, infer_attention},
    {GWR_OP_RotaryEmbedding, gwr_fi_rule_same}, /* the input's type and shape */
    {GWR_OP_Attention, infer_onnx_attention},
    {GWR_OP_CUSTOM, NULL},
};
