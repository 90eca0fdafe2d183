/* linalg.c - shape rules of the matrix products: MatMul (NumPy matmul:
 * batch dims broadcast, 1-D operands promoted and their dim dropped),
 * MatMulInteger, QLinearMatMul, com.microsoft's MatMulIntegerToFloat and
 * DynamicQuantizeMatMul and MatMulNBits, Gemm, Det and Einsum. As in
 * exec/kernels/linalg.c (Det included). */

#include <string.h>

#include "functional/infer/infer_internal.h"

/* NumPy matmul of shapes a and b (1-D operands promoted and dropped). */
static int matmul_shape(ictx *c, const gwr_tensor *ta, const gwr_tensor *tb, shp *out) {
    shp a, b, ba, bb, batch;
    gwr_dim k;
    sbuf x, y;
    gwr_fi_shp_get(ta, &a);
    gwr_fi_shp_get(tb, &b);
    if (a.rank == 0 || b.rank == 0) {
        gwr_fi_fail(c, GWR_ERR_SHAPE, "operands must have rank >= 1, got %s and %s", gwr_fi_tstr(ta, &x),
                    gwr_fi_tstr(tb, &y));
        return 0;
    }
    if (a.rank < 0 || b.rank < 0) {
        out->rank = -1;
        return 1;
    }
    if (!gwr_fi_dmerge(a.d[a.rank - 1], b.d[b.rank == 1 ? 0 : b.rank - 2], &k)) {
        gwr_fi_fail(c, GWR_ERR_SHAPE, "inner dimensions differ: %s x %s", gwr_fi_tstr(ta, &x), gwr_fi_tstr(tb, &y));
        return 0;
    }
    ba.rank = a.rank > 2 ? a.rank - 2 : 0;
    bb.rank = b.rank > 2 ? b.rank - 2 : 0;
    memcpy(ba.d, a.d, (size_t)ba.rank * sizeof a.d[0]);
    memcpy(bb.d, b.d, (size_t)bb.rank * sizeof b.d[0]);
    if (!gwr_fi_bcast(&ba, &bb, &batch)) {
        gwr_fi_fail(c, GWR_ERR_SHAPE, "cannot broadcast the batch dims of %s and %s", gwr_fi_tstr(ta, &x),
                    gwr_fi_tstr(tb, &y));
        return 0;
    }
    *out = batch;
    if (a.rank >= 2) out->d[out->rank++] = a.d[a.rank - 2];
    if (b.rank >= 2) out->d[out->rank++] = b.d[b.rank - 1];
    return 1;
}

static gwr_status infer_matmul(ictx *c) {
    int ia = 0, ib = 1;
    gwr_dtype dt;
    gwr_tensor *a, *b;
    shp out;
    if (c->id == GWR_OP_QLinearMatMul) ib = 3;
    a = gwr_fi_need(c, ia, "A");
    b = gwr_fi_need(c, ib, "B");
    if (!a || !b) return c->st;
    if (c->id == GWR_OP_MatMul && !gwr_fi_same_dtype(c, a, b)) return c->st;
    if (c->id == GWR_OP_MS_MatMulIntegerToFloat && !gwr_fi_need(c, 2, "a_scale")) return c->st;
    if (!matmul_shape(c, a, b, &out)) return c->st;
    dt = c->id == GWR_OP_MatMulInteger ? GWR_INT32 : c->id == GWR_OP_QLinearMatMul ? dt_of(inp(c, 7)) : dt_of(a);
    if (c->id == GWR_OP_MS_MatMulIntegerToFloat) dt = dt_of(inp(c, 2)); /* the scales' float type */
    return gwr_fi_put(c, 0, dt, &out);
}

/* com.microsoft MatMulNBits: A [..., K] times the dequantized B [K, N]
 * (attributes K, N): Y [..., N] of A's dtype. */
static gwr_status infer_matmul_nbits(ictx *c) {
    gwr_tensor *a = gwr_fi_need(c, 0, "A");
    shp s;
    sbuf x;
    if (!a || !gwr_fi_need(c, 1, "B") || !gwr_fi_need(c, 2, "scales")) return c->st;
    int64_t K = gwr_fi_aint(c, "K", -1), N = gwr_fi_aint(c, "N", -1);
    if (c->st) return c->st;
    if (K < 1 || N < 1) return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "attributes K and N must be set and positive");
    gwr_fi_shp_get(a, &s);
    if (s.rank == 0) return gwr_fi_fail(c, GWR_ERR_SHAPE, "A must have rank >= 1, got %s", gwr_fi_tstr(a, &x));
    if (s.rank > 0) {
        gwr_dim k;
        if (!gwr_fi_dmerge(s.d[s.rank - 1], K, &k))
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "A %s does not end in K = %lld", gwr_fi_tstr(a, &x), (long long)K);
        s.d[s.rank - 1] = N;
    }
    return gwr_fi_put(c, 0, dt_of(a), s.rank > 0 ? &s : NULL);
}

/* Gemm, and the Gemm part of com.microsoft's FusedGemm (fused_cnn.c). */
gwr_status gwr_fi_rule_gemm(ictx *c) {
    gwr_tensor *a = gwr_fi_need(c, 0, "A"), *b = gwr_fi_need(c, 1, "B"), *cc = inp(c, 2);
    shp sa, sb, sc, out;
    gwr_dim k;
    sbuf x, y;
    int64_t ta, tb;
    if (!a || !b) return c->st;
    ta = gwr_fi_aint(c, "transA", 0);
    tb = gwr_fi_aint(c, "transB", 0);
    if (c->st || !gwr_fi_same_dtype(c, a, b) || !gwr_fi_same_dtype(c, a, cc)) return c->st;
    gwr_fi_shp_get(a, &sa);
    gwr_fi_shp_get(b, &sb);
    if (!gwr_fi_want_rank(c, a, &sa, 2, 2, "A") || !gwr_fi_want_rank(c, b, &sb, 2, 2, "B")) return c->st;
    out.rank = 2;
    out.d[0] = sa.rank == 2 ? sa.d[ta ? 1 : 0] : GWR_DIM_UNKNOWN;
    out.d[1] = sb.rank == 2 ? sb.d[tb ? 0 : 1] : GWR_DIM_UNKNOWN;
    if (sa.rank == 2 && sb.rank == 2 && !gwr_fi_dmerge(sa.d[ta ? 0 : 1], sb.d[tb ? 1 : 0], &k))
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "inner dimensions differ: %s x %s (transA=%lld, transB=%lld)",
                           gwr_fi_tstr(a, &x), gwr_fi_tstr(b, &y), (long long)ta, (long long)tb);
    if (cc) {
        gwr_fi_shp_get(cc, &sc);
        if (!gwr_fi_ubcast_ok(&out, &sc))
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "C %s does not broadcast to %s", gwr_fi_tstr(cc, &x),
                               gwr_fi_shp_str(c, &out, &y));
    }
    return gwr_fi_put(c, 0, dt_of(a), &out);
}

static gwr_status infer_det(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X");
    shp s;
    gwr_dim m;
    sbuf b;
    if (!x) return c->st;
    gwr_fi_shp_get(x, &s);
    if (!gwr_fi_want_rank(c, x, &s, 2, GWR_MAX_RANK, "X")) return c->st;
    if (s.rank >= 2) {
        if (!gwr_fi_dmerge(s.d[s.rank - 1], s.d[s.rank - 2], &m))
            return gwr_fi_fail(c, GWR_ERR_SHAPE, "needs square matrices, got %s", gwr_fi_tstr(x, &b));
        s.rank -= 2;
    }
    return gwr_fi_put(c, 0, dt_of(x), &s);
}

/* Einsum: dims by letter, without ellipses (those give an unknown rank). */
static gwr_status infer_einsum(ictx *c) {
    const char *eq = gwr_fi_astr(c, "equation", NULL), *q;
    gwr_dim dim[128];
    int count[128] = {0}, term = 0, pos = 0;
    shp s, out;
    gwr_dtype dt = dt_of(inp(c, 0));
    sbuf p;
    if (c->st) return c->st;
    if (!eq) return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "missing attribute equation");
    for (int i = 0; i < c->nin; i++) {
        if (!gwr_fi_need(c, i, "operand") || !gwr_fi_same_dtype(c, inp(c, 0), inp(c, i))) return c->st;
    }
    if (strchr(eq, '.')) return gwr_fi_put(c, 0, dt, NULL);
    for (int i = 0; i < 128; i++) dim[i] = GWR_DIM_UNKNOWN;
    gwr_fi_shp_get(inp(c, 0), &s);
    for (q = eq; *q && !(q[0] == '-' && q[1] == '>'); q++) {
        unsigned char ch = (unsigned char)*q;
        if (ch == ' ') continue;
        if (ch == ',') {
            if (s.rank >= 0 && pos != s.rank)
                return gwr_fi_fail(c, GWR_ERR_SHAPE, "term %d names %d axes but operand %d is %s", term, pos, term,
                                   gwr_fi_tstr(inp(c, term), &p));
            if (++term >= c->nin)
                return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "equation \"%s\" has more terms than inputs", eq);
            gwr_fi_shp_get(inp(c, term), &s);
            pos = 0;
            continue;
        }
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')))
            return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "invalid equation \"%s\"", eq);
        if (s.rank >= 0 && pos < s.rank) {
            gwr_dim d = s.d[pos];
            /* A letter's extents must agree, except that 1 broadcasts. */
            if (count[ch] && d != 1 && dim[ch] != 1 && !gwr_fi_dmerge(dim[ch], d, &dim[ch]))
                return gwr_fi_fail(c, GWR_ERR_SHAPE, "axis '%c' has extents %lld and %lld", ch, (long long)dim[ch],
                                   (long long)d);
            if (!count[ch] || dim[ch] == 1) dim[ch] = d;
        }
        count[ch]++;
        pos++;
    }
    if (term != c->nin - 1)
        return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "equation \"%s\" has %d terms for %d inputs", eq, term + 1, c->nin);
    if (s.rank >= 0 && pos != s.rank)
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "term %d names %d axes but operand %d is %s", term, pos, term,
                           gwr_fi_tstr(inp(c, term), &p));
    out.rank = 0;
    if (*q) { /* explicit output */
        for (q += 2; *q; q++) {
            unsigned char ch = (unsigned char)*q;
            if (ch == ' ') continue;
            if (ch >= 128 || !count[ch] || out.rank >= GWR_MAX_RANK)
                return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "invalid output in equation \"%s\"", eq);
            out.d[out.rank++] = dim[ch];
        }
    } else { /* implicit: the letters seen once, in alphabetical order */
        for (int ch = 'A'; ch <= 'z'; ch++)
            if (count[ch] == 1 && out.rank < GWR_MAX_RANK) out.d[out.rank++] = dim[ch];
    }
    return gwr_fi_put(c, 0, dt, &out);
}

const gwr_fi_entry gwr_fi_rules_linalg[] = {
    {GWR_OP_MatMul, infer_matmul},
    {GWR_OP_MatMulInteger, infer_matmul},
    {GWR_OP_QLinearMatMul, infer_matmul},
    {GWR_OP_MS_MatMulIntegerToFloat, infer_matmul},  /* com.microsoft: MatMulInteger then * a_scale * b_scale + bias */
    {GWR_OP_MS_DynamicQuantizeMatMul, infer_matmul}, /* com.microsoft: float A, DynamicQuantizeLinear'd */
    {GWR_OP_MS_MatMulNBits, infer_matmul_nbits},    /* com.microsoft: B of 4 or 8 bits, dequantized */
    {GWR_OP_Gemm, gwr_fi_rule_gemm},
    {GWR_OP_Det, infer_det},
    {GWR_OP_Einsum, infer_einsum},
    {GWR_OP_CUSTOM, NULL},
};
