/* attention_cache.c - ONNX Attention (opset 23) for decoders, in float32
 * (float16 widened): 4-D Q (B, qh, S, Dh), K (B, kvh, L, Dh), V (B, kvh,
 * L, Dv), past_key / past_value (B, kvh, P, D*), present_key /
 * present_value (B, kvh, T = P + L, D*), grouped-query heads (query head h
 * reads key head h / (qh / kvh)), attn_mask (bool or additive, broadcast to
 * (B, qh, S, T)), is_causal, scale, softcap.
 *
 * present first: when past is a KV-cache view that can take the L new rows
 * (gwr/exec.h, "KV caches"; gwr_value_cache_claim), the rows are written
 * into its storage and present is a new view of it, so a decode step
 * copies L rows, not the cache; otherwise present is a new cache holding a
 * copy (capacity: exec.h's rules). Either way every (batch, kv head)'s T
 * rows then lie together, and the heads read them there.
 *
 * The heads: one unit is (batch, kv head, a group of the query heads that
 * read it), so a key or value row is fetched once for the whole group; the
 * units run on the session's threads, and every row's arithmetic is the
 * same whichever unit and thread takes it (the same bits for any thread
 * count). Few query rows (S <= FA_DECODE_S, a decode step): q.k over the
 * keys in blocks that stay in L1 (eight-lane dot products), the softmax,
 * then p.V as row updates skipping zero probabilities. More rows
 * (prefill): per head, blocks of FA_BLOCK rows take two products on
 * gwr_ku_sgemm (scores, then probabilities by V), only over the keys the
 * block can see (is_causal, a mask shorter than T).
 *
 * Each row: s_j = scale q.k_j (scale 1/sqrt(Dh) by default), softcap c > 0
 * makes it c tanh(s_j / c), the mask added (bool false: -inf; keys past the
 * mask's last dim: -inf), causal keys j > i + P dropped, softmax in float32
 * (fast_exp_small); a row that sees no key gives zeros (as the reference).
 *
 * What it does not take runs the reference (attention.c,
 * gwr_ku_attention_ref) on dense copies of its inputs: 3-D Q, K, V,
 * qk_matmul_output, nonpad_kv_seqlen, opset 25's window sizes, bfloat16
 * (whose test data rounds every intermediate as onnx's reference does),
 * mixed dtypes and every shape error (its messages). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "no-trapping-math")
#endif

/* after the pragma: its inline functions take its options */
#include "exec/kernels/fast_math.h"
#include "exec/blas.h"
#include "exec/kernels/kernel_util.h"

enum {
    FA_DECODE_S = 4, /* query rows per head that take the decode loops */
    FA_ROWS = 32,    /* rows of one decode block (heads times S) */
    FA_BLOCK = 64,   /* query rows per product in prefill */
    FA_JB = 32       /* keys per block of the decode loops (8 KiB of rows at Dh 64) */
};

typedef struct fa_dims {
    int64_t B, qh, kvh, grp, S, L, P, T, Dh, Dv;
} fa_dims;

/* attn_mask read as (B, qh, S, Lm): row (b, h, i) at b st[0] + h st[1] + i st[2]. */
typedef struct fa_mask {
    const gwr_value *m; /* NULL: none */
    int64_t st[3], Lm;
} fa_mask;

/* Is k of the form the fast path runs? *d and *mk set when it is. Reads
 * shapes and dtypes only (inputs may be strided views). */
static int fa_form(const gwr_kctx *k, fa_dims *d, fa_mask *mk) {
    const gwr_value *q = gwr_ku_opt(k, 0), *kk = gwr_ku_opt(k, 1), *v = gwr_ku_opt(k, 2), *m = gwr_ku_opt(k, 3);
    const gwr_value *pk = gwr_ku_opt(k, 4), *pv = gwr_ku_opt(k, 5);
    if (!q || !kk || !v || gwr_ku_opt(k, 6) || (q->dtype != GWR_FLOAT32 && q->dtype != GWR_FLOAT16)) return 0;
    if (kk->dtype != q->dtype || v->dtype != q->dtype || q->rank != 4 || kk->rank != 4 || v->rank != 4) return 0;
    if (k->nout > 3 && gwr_k_out_used(k, 3)) return 0;
    if (gwr_k_int(k, "left_window_size", -1) >= 0 || gwr_k_int(k, "right_window_size", -1) >= 0) return 0;
    d->B = q->dims[0], d->qh = q->dims[1], d->S = q->dims[2], d->Dh = q->dims[3];
    d->kvh = kk->dims[1], d->L = kk->dims[2], d->Dv = v->dims[3];
    if (kk->dims[0] != d->B || v->dims[0] != d->B || v->dims[1] != d->kvh || v->dims[2] != d->L || kk->dims[3] != d->Dh)
        return 0;
    if (d->kvh <= 0 || d->qh % d->kvh) return 0;
    d->grp = d->qh / d->kvh;
    d->P = 0;
    if (!pk != !pv) return 0;
    if (pk) {
        if (pk->dtype != q->dtype || pv->dtype != q->dtype || pk->rank != 4 || pv->rank != 4 || pk->dims[0] != d->B ||
            pk->dims[1] != d->kvh || pk->dims[3] != d->Dh || pv->dims[0] != d->B || pv->dims[1] != d->kvh ||
            pv->dims[2] != pk->dims[2] || pv->dims[3] != d->Dv)
            return 0;
        d->P = pk->dims[2];
    }
    d->T = d->P + d->L;
    if (!gwr_ku_fits_int(d->T) || !gwr_ku_fits_int(d->S) || !gwr_ku_fits_int(d->Dh) || !gwr_ku_fits_int(d->Dv) ||
        gwr_ku_mul_max(d->T, 2 * FA_BLOCK + d->Dh + d->Dv, INT64_C(1) << 40) < 0)
        return 0;
    memset(mk, 0, sizeof *mk);
    mk->Lm = d->T;
    if (m) {
        if (m->rank < 1 || m->rank > 4 || (m->dtype != GWR_BOOL && m->dtype != q->dtype)) return 0;
        int64_t want[3] = {d->B, d->qh, d->S}, sd = m->dims[m->rank - 1];
        if ((mk->Lm = sd) > d->T) return 0;
        for (int i = 2; i >= 0; i--) {
            int j = i - (4 - m->rank);
            int64_t md = j >= 0 ? m->dims[j] : 1;
            if (md != 1 && md != want[i]) return 0;
            mk->st[i] = md == 1 ? 0 : sd;
            sd *= md;
        }
        mk->m = m;
    }
    return 1;
}

/* present (B, kvh, T, D) from past (input pi, may be absent) and the new
 * rows (input ci): in past's storage when it takes them, else a new cache;
 * output oi when something reads it. A new reference the caller releases;
 * NULL after gwr_k_fail. */
static gwr_value *fa_present(gwr_kctx *k, const fa_dims *d, int pi, int ci, int oi, int64_t D) {
    const gwr_value *past = gwr_ku_opt(k, pi), *cur = k->in[ci];
    size_t esz = (size_t)gwr_dtype_bits(cur->dtype) / 8;
    int64_t dims[4] = {d->B, d->kvh, d->T, D};
    int copy_past = 0;
    gwr_value *pr;
    if (past && gwr_value_cache_claim(past, d->L)) {
        if (!(pr = gwr_value_cache_view(past, d->T))) {
            gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
            return NULL;
        }
    } else {
        int64_t cap = d->T;
        if (past && past->kv) { /* full: twice the room; stale: the same room */
            int64_t c = past->kv->cap;
            cap = atomic_load(&past->kv->fill) == past->dims[2] && c < INT64_MAX / 4 ? 2 * c : c;
            if (cap < d->T) cap = d->T;
        }
        if (!(pr = gwr_k_cache_value(k, cur->dtype, dims, cap))) return NULL;
        copy_past = past && d->P;
    }
    int64_t cap = pr->kv->cap, pcap = past && past->kv ? past->kv->cap : d->P;
    size_t prow = (size_t)(d->P * D) * esz, lrow = (size_t)(d->L * D) * esz;
    for (int64_t h = 0; h < d->B * d->kvh; h++) {
        char *dst = (char *)pr->data + (size_t)(h * cap * D) * esz;
        if (copy_past) memcpy(dst, (const char *)past->data + (size_t)(h * pcap * D) * esz, prow);
        if (lrow) memcpy(dst + prow, (const char *)cur->data + (size_t)h * lrow, lrow);
    }
    if (oi < k->nout && gwr_k_out_used(k, oi)) gwr_k_set_out(k, oi, pr);
    return pr;
}

/* ---- the rows ---- */

/* The eight lanes of a[] summed in a fixed order. */
#define FA_HSUM(a) ((((a)[0] + (a)[4]) + ((a)[1] + (a)[5])) + (((a)[2] + (a)[6]) + ((a)[3] + (a)[7])))

/* sc[r][j] = scale q_r.K_j for nr rows q (Dh apart) and T keys, by blocks
 * of keys that stay in L1 while every row visits them: four keys at once
 * (four eight-lane accumulators; the row of q loaded once), each dot
 * product's lanes summed in a fixed order (FA_HSUM). */
GWR_VEC_CLONES static void fa_qk(const float *q, int64_t nr, int64_t Dh, const float *K, int64_t T, float scale, float *sc) {
    int64_t D8 = Dh / 8 * 8;
    for (int64_t j0 = 0; j0 < T; j0 += FA_JB) {
        int64_t j1 = j0 + FA_JB < T ? j0 + FA_JB : T;
        for (int64_t r = 0; r < nr; r++) {
            const float *restrict a = q + r * Dh;
            for (int64_t j = j0; j < j1; j += 4) {
                int nk = j1 - j < 4 ? (int)(j1 - j) : 4;
                const float *restrict b0 = K + j * Dh, *restrict b1 = b0 + (nk > 1 ? Dh : 0);
                const float *restrict b2 = b0 + (nk > 2 ? 2 * Dh : 0), *restrict b3 = b0 + (nk > 3 ? 3 * Dh : 0);
                float a0[8] = {0}, a1[8] = {0}, a2[8] = {0}, a3[8] = {0}, s[4] = {0};
                for (int64_t d = 0; d < D8; d += 8)
                    for (int l = 0; l < 8; l++) {
                        float x = a[d + l];
                        a0[l] += x * b0[d + l], a1[l] += x * b1[d + l], a2[l] += x * b2[d + l], a3[l] += x * b3[d + l];
                    }
                for (int64_t d = D8; d < Dh; d++) s[0] += a[d] * b0[d], s[1] += a[d] * b1[d], s[2] += a[d] * b2[d], s[3] += a[d] * b3[d];
                float t[4] = {s[0] + FA_HSUM(a0), s[1] + FA_HSUM(a1), s[2] + FA_HSUM(a2), s[3] + FA_HSUM(a3)};
                for (int k = 0; k < nk; k++) sc[r * T + j + k] = scale * t[k];
            }
        }
    }
}

/* o[r] = sum_j p[r][j] V_j (rows of T probabilities; zero ones skipped),
 * 32 columns of a row in four eight-lane accumulators over a block of keys. */
GWR_VEC_CLONES static void fa_pv(const float *p, int64_t nr, const float *V, int64_t T, int64_t Dv, float *restrict o) {
    memset(o, 0, (size_t)(nr * Dv) * sizeof *o);
    for (int64_t j0 = 0; j0 < T; j0 += FA_JB) {
        int64_t j1 = j0 + FA_JB < T ? j0 + FA_JB : T;
        for (int64_t r = 0; r < nr; r++) {
            const float *pr = p + r * T;
            int64_t c0 = 0;
            for (; c0 + 32 <= Dv; c0 += 32) {
                float *restrict orow = o + r * Dv + c0, a0[8], a1[8], a2[8], a3[8];
                for (int l = 0; l < 8; l++) a0[l] = orow[l], a1[l] = orow[8 + l], a2[l] = orow[16 + l], a3[l] = orow[24 + l];
                for (int64_t j = j0; j < j1; j++) {
                    float pj = pr[j];
                    if (pj == 0.0f) continue;
                    const float *restrict v = V + j * Dv + c0;
                    for (int l = 0; l < 8; l++)
                        a0[l] += pj * v[l], a1[l] += pj * v[8 + l], a2[l] += pj * v[16 + l], a3[l] += pj * v[24 + l];
                }
                for (int l = 0; l < 8; l++) orow[l] = a0[l], orow[8 + l] = a1[l], orow[16 + l] = a2[l], orow[24 + l] = a3[l];
            }
            if (c0 < Dv) {
                float *restrict orow = o + r * Dv;
                for (int64_t j = j0; j < j1; j++) {
                    float pj = pr[j];
                    if (pj == 0.0f) continue;
                    const float *restrict v = V + j * Dv;
                    for (int64_t c = c0; c < Dv; c++) orow[c] += pj * v[c];
                }
            }
        }
    }
}

/* x[0..n) into its softmax: zeros when every entry is -inf (n 0 too). */
GWR_VEC_CLONES static void fa_softmax(float *restrict x, int64_t n) {
    float mx = -INFINITY, lane[8], acc[8] = {0}, sum = 0;
    int64_t j0 = 0;
    for (int q = 0; q < 8; q++) lane[q] = -INFINITY;
    for (; j0 + 8 <= n; j0 += 8)
        for (int q = 0; q < 8; q++) lane[q] = x[j0 + q] > lane[q] ? x[j0 + q] : lane[q];
    for (int64_t j = j0; j < n; j++) mx = x[j] > mx ? x[j] : mx;
    for (int q = 0; q < 8; q++) mx = lane[q] > mx ? lane[q] : mx;
    if (mx == -INFINITY) {
        memset(x, 0, (size_t)n * sizeof *x);
        return;
    }
    for (int64_t j = 0; j < n; j++) x[j] = fast_exp_small(x[j] - mx); /* <= 0 (-inf: 0) */
    for (j0 = 0; j0 + 8 <= n; j0 += 8)
        for (int q = 0; q < 8; q++) acc[q] += x[j0 + q];
    for (int64_t j = j0; j < n; j++) sum += x[j];
    for (int q = 0; q < 8; q++) sum += acc[q];
    float inv = 1.0f / sum;
    for (int64_t j = 0; j < n; j++) x[j] *= inv;
}

typedef struct fa_run {
    const fa_dims *d;
    float scale, softcap;
    int causal;
    fa_mask mk;
    gwr_dtype dt;          /* float32 or float16 */
    const void *q;         /* Q's elements */
    const void *ks, *vs;   /* present's storages: (b, g)'s rows at (b kvh + g) cap D */
    int64_t kcap, vcap;
    void *y;
    float *scr;            /* per thread: `per` floats */
    int64_t per, nsplit;   /* units per (batch, kv head) */
} fa_run;

/* Scores x[0..width) of query row (b, h, i) into probabilities: softcap,
 * mask, causal limit, softmax over the keys the row sees, zeros after. mt:
 * T floats for a float16 mask row. */
static void fa_row(const fa_run *r, float *x, int64_t width, int64_t b, int64_t h, int64_t i, float *mt) {
    const fa_dims *d = r->d;
    int64_t n = width < r->mk.Lm ? width : r->mk.Lm;
    if (r->causal && n > i + d->P + 1) n = i + d->P + 1;
    if (n < 0) n = 0;
    if (r->softcap > 0)
        for (int64_t j = 0; j < n; j++) x[j] = r->softcap * tanhf(x[j] / r->softcap);
    const gwr_value *m = r->mk.m;
    if (m && n) {
        int64_t off = b * r->mk.st[0] + h * r->mk.st[1] + i * r->mk.st[2];
        if (m->dtype == GWR_BOOL) {
            const uint8_t *mb = (const uint8_t *)m->data + off;
            for (int64_t j = 0; j < n; j++) x[j] = mb[j] ? x[j] : -INFINITY;
        } else {
            const float *mf = (const float *)m->data + off;
            if (m->dtype != GWR_FLOAT32) gwr_ku_half_to_f32(m->dtype, (const uint16_t *)m->data + off, 1, mt, n), mf = mt;
            for (int64_t j = 0; j < n; j++) x[j] += mf[j];
        }
    }
    fa_softmax(x, n);
    if (width > n) memset(x + n, 0, (size_t)(width - n) * sizeof *x);
}

/* rows of float32 (a float32 tensor's own, or n widened into buf) */
static const float *fa_f32(gwr_dtype dt, const void *base, int64_t off, int64_t n, float *buf) {
    if (dt == GWR_FLOAT32) return (const float *)base + off;
    gwr_ku_half_to_f32(dt, (const uint16_t *)base + off, 1, buf, n);
    return buf;
}

/* n floats into Y at element off */
static void fa_store(const fa_run *r, int64_t off, const float *o, int64_t n) {
    if (r->dt == GWR_FLOAT32) memcpy((float *)r->y + off, o, (size_t)n * sizeof *o);
    else gwr_ku_f32_to_half(r->dt, o, (uint16_t *)r->y + off, n);
}

/* Units [u0, u1): (batch, kv head, part of its query heads). */
static void fa_units(void *ctx, int64_t u0, int64_t u1) {
    const fa_run *r = ctx;
    const fa_dims *d = r->d;
    int64_t T = d->T, Dh = d->Dh, Dv = d->Dv, S = d->S, half = r->dt != GWR_FLOAT32;
    float *w = r->scr + (int64_t)gwr_par_thread() * r->per;
    for (int64_t u = u0; u < u1; u++) {
        int64_t b = u / (d->kvh * r->nsplit), g = u / r->nsplit % d->kvh, part = u % r->nsplit;
        int64_t h0 = g * d->grp + part * d->grp / r->nsplit, h1 = g * d->grp + (part + 1) * d->grp / r->nsplit;
        float *p = w;
        const float *K = fa_f32(r->dt, r->ks, (b * d->kvh + g) * r->kcap * Dh, T * Dh, p);
        p += half ? T * Dh : 0;
        const float *V = fa_f32(r->dt, r->vs, (b * d->kvh + g) * r->vcap * Dv, T * Dv, p);
        p += half ? T * Dv : 0;
        float *qb = p, *sc = qb + FA_BLOCK * Dh, *ob = sc + FA_BLOCK * T, *mt = ob + FA_BLOCK * Dv;
        if (S <= FA_DECODE_S) {
            int64_t hc = FA_ROWS / S > 0 ? FA_ROWS / S : 1;
            for (int64_t h = h0; h < h1; h += hc) {
                int64_t he = h + hc < h1 ? h + hc : h1, nr = (he - h) * S, row0 = (b * d->qh + h) * S;
                const float *q = fa_f32(r->dt, r->q, row0 * Dh, nr * Dh, qb);
                fa_qk(q, nr, Dh, K, T, r->scale, sc);
                for (int64_t x = 0; x < nr; x++) fa_row(r, sc + x * T, T, b, h + x / S, x % S, mt);
                fa_pv(sc, nr, V, T, Dv, ob);
                fa_store(r, row0 * Dv, ob, nr * Dv);
            }
            continue;
        }
        for (int64_t h = h0; h < h1; h++)
            for (int64_t i0 = 0; i0 < S; i0 += FA_BLOCK) {
                int64_t m = S - i0 < FA_BLOCK ? S - i0 : FA_BLOCK, row0 = (b * d->qh + h) * S + i0;
                int64_t te = T < r->mk.Lm ? T : r->mk.Lm; /* the keys any row of the block sees */
                if (r->causal && te > d->P + i0 + m) te = d->P + i0 + m;
                const float *q = fa_f32(r->dt, r->q, row0 * Dh, m * Dh, qb);
                gwr_ku_sgemm(0, 1, (int)m, (int)te, (int)Dh, r->scale, q, (int)Dh, K, (int)Dh, 0.0f, sc, (int)(te > 0 ? te : 1));
                for (int64_t x = 0; x < m; x++) fa_row(r, sc + x * te, te, b, h, i0 + x, mt);
                float *o = half ? ob : (float *)r->y + row0 * Dv;
                gwr_ku_sgemm(0, 0, (int)m, (int)Dv, (int)te, 1.0f, sc, (int)(te > 0 ? te : 1), V, (int)Dv, 0.0f, o, (int)Dv);
                if (half) fa_store(r, row0 * Dv, ob, m * Dv);
            }
    }
}

static gwr_status fa_run_fast(gwr_kctx *k, const fa_dims *d, const fa_mask *mk) {
    gwr_dtype dt = k->in[0]->dtype;
    float scale = gwr_k_float(k, "scale", NAN);
    fa_run r = {.d = d, .scale = isnan(scale) ? (float)(1.0 / sqrt((double)d->Dh)) : scale,
                .softcap = gwr_k_float(k, "softcap", 0.0f), .causal = gwr_k_int(k, "is_causal", 0) != 0, .mk = *mk,
                .dt = dt, .q = k->in[0]->data};
    gwr_value *pk = fa_present(k, d, 4, 1, 1, d->Dh), *pv = pk ? fa_present(k, d, 5, 2, 2, d->Dv) : NULL;
    int64_t yd[4] = {d->B, d->qh, d->S, d->Dv};
    gwr_value *y = pv ? gwr_k_out(k, 0, dt, 4, yd) : NULL;
    gwr_status st = y ? GWR_OK : GWR_ERR_NOMEM;
    if (!st) {
        r.ks = pk->data, r.vs = pv->data, r.kcap = pk->kv->cap, r.vcap = pv->kv->cap, r.y = y->data;
        /* units: enough parts of each kv head's group for the threads */
        int64_t base = d->B * d->kvh, th = gwr_tpool_size(k->tpool);
        r.nsplit = base >= th || base == 0 ? 1 : (th + base - 1) / base;
        if (r.nsplit > d->grp) r.nsplit = d->grp > 0 ? d->grp : 1;
        int64_t n = base * r.nsplit;
        int64_t grain = gwr_par_grain(d->grp / r.nsplit * d->S * d->T * (d->Dh + d->Dv + 4) / 4);
        int nth = gwr_tpool_splits(k->tpool, n, grain) ? gwr_tpool_size(k->tpool) : 1;
        r.per = (dt != GWR_FLOAT32 ? d->T * (d->Dh + d->Dv) : 0) + FA_BLOCK * (d->Dh + d->T + d->Dv) + d->T;
        if (!(r.scr = gwr_ku_scratch(k, nth * r.per, sizeof *r.scr))) st = GWR_ERR_NOMEM;
        r.mk.m = mk->m ? k->in[3] : NULL; /* the dense copy, if it was a strided view */
        if (!st && d->S) {
            gwr_blas_threads(k->threads);
            gwr_k_parallel(k, n, grain, fa_units, &r);
        }
        gwr_free(r.scr);
    }
    gwr_value_release(pk), gwr_value_release(pv);
    return st;
}

/* Attention: the fast path, or the reference; strided views it does not
 * read in place (all but the fast path's past) as dense copies. */
static gwr_status k_attention(gwr_kctx *k) {
    fa_dims d;
    fa_mask mk;
    int fast = fa_form(k, &d, &mk);
    gwr_value *in[8] = {0};
    if (k->nin > 8) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "Attention takes at most 7 inputs, not %d", k->nin);
    gwr_status st = GWR_OK;
    for (int j = 0; j < k->nin && !st; j++)
        if (k->in[j] && !(in[j] = fast && (j == 4 || j == 5) ? gwr_value_retain(k->in[j]) : gwr_value_dense(k->in[j], k->pool)))
            st = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    if (!st) {
        gwr_kctx kc = *k;
        kc.in = in;
        st = fast ? fa_run_fast(&kc, &d, &mk) : gwr_ku_attention_ref(&kc);
    }
    for (int j = 0; j < k->nin; j++) gwr_value_release(in[j]);
    return st;
}

const gwr_kernel_entry gwr_kernels_attention_cache[] = {
    /* at every opset: fuse_attention emits it into older models for target gwr */
    GWR_KERNEL(Attention, k_attention, .flags = GWR_KF_BLAS | GWR_KF_CACHE, .first_opset = 1),
    {.fn = NULL},
};
