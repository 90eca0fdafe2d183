/* attention_linear.c - ONNX LinearAttention (opset 27) and
 * ai.onnx.preview FlexAttention (version 1).
 *
 * LinearAttention: query (B, T, Hq * dk), key (B, T, Hkv * dk), value (B,
 * T, Hkv * dv); each kv head carries a state S (dk x dv), from past_state
 * (B, Hkv, dk, dv) or zeros. Per token t, with g the decay (per head, or
 * per key dim: decay (B, T, Hkv) or (B, T, Hkv * dk)) and b the update
 * rate (beta (B, T, Hkv) or (B, T, 1)):
 *   linear       S = S + k v^T
 *   gated        S = exp(g) S + k v^T
 *   delta        S = S + k (b (v - S^T k))^T
 *   gated_delta  S = exp(g) S, then as delta
 *   output_t     = scale q^T S for each query head of the kv head's group
 * (GQA: query head h reads kv head h / (Hq / Hkv)); scale 0 means 1 /
 * sqrt(dk). present_state is the last S, in past_state's dtype (the
 * query's without one). chunk_size is a hint for chunked GPU forms with the
 * same result: the recurrence runs token by token, in double.
 *
 * FlexAttention: Q (B, Hq, L, E), K (B, Hkv, S, E), V (B, Hkv, S, Ev);
 * scores = (Q sqrt(scale)) (K sqrt(scale))^T (scale 1/sqrt(E) by default,
 * sqrt(scale) and the two scaled operands rounded to Q's type, the scores
 * rounded to it too), then in the softmax precision (softmax_precision,
 * else float32, double for double inputs): the score_mod subgraph on the
 * whole (B, Hq, L, S) score tensor, the softmax of each row, the prob_mod
 * subgraph on the probabilities, and Y = P V in V's type. Products and
 * sums in double, each stage rounded to its type. */
#include <math.h>
#include <string.h>

#include "exec/exec_internal.h"
#include "exec/kernels/kernel_util.h"

/* ---- LinearAttention ------------------------------------------------------ */

typedef struct lin_att {
    int64_t B, T, qh, kvh, dk, dv;
    int64_t gw, bw; /* decay's and beta's last dims (0: absent) */
    int gating, delta;
} lin_att;

static const char *const lin_rules[] = {"linear", "gated", "delta", "gated_delta"};

static gwr_status lin_check(gwr_kctx *k, lin_att *a) {
    static const char *const names[] = {"query", "key", "value"};
    const gwr_value *in[3];
    for (int i = 0; i < 3; i++)
        if (!(in[i] = gwr_ku_need_float(k, i, names[i]))) return GWR_ERR_INVALID_ARG;
    const gwr_value *ps = gwr_ku_opt(k, 3), *g = gwr_ku_opt(k, 4), *be = gwr_ku_opt(k, 5);
    const char *rule = gwr_k_string(k, "update_rule", "gated_delta");
    int r = 0;
    while (r < 4 && strcmp(rule, lin_rules[r])) r++;
    if (r == 4)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "update_rule must be linear, gated, delta or gated_delta, not \"%s\"", rule);
    a->gating = r == 1 || r == 3, a->delta = r >= 2;
    a->qh = gwr_k_int(k, "q_num_heads", 0), a->kvh = gwr_k_int(k, "kv_num_heads", 0);
    if (a->qh <= 0 || a->kvh <= 0 || a->qh % a->kvh)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "q_num_heads (%lld) must be a positive multiple of kv_num_heads (%lld)",
                          (long long)a->qh, (long long)a->kvh);
    char t0[128], t1[128], t2[128];
    gwr_value_type_str(in[0], t0, sizeof t0), gwr_value_type_str(in[1], t1, sizeof t1), gwr_value_type_str(in[2], t2, sizeof t2);
    gwr_dtype dt = in[0]->dtype;
    if (in[1]->dtype != dt || in[2]->dtype != dt || (g && g->dtype != dt) || (be && be->dtype != dt))
        return gwr_k_fail(k, GWR_ERR_TYPE, "key, value, decay and beta must have query's dtype %s", gwr_dtype_name(dt));
    if (in[0]->rank != 3 || in[1]->rank != 3 || in[2]->rank != 3)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "query %s, key %s and value %s must be 3-D (batch, seq, heads * head_size)", t0, t1, t2);
    a->B = in[0]->dims[0], a->T = in[0]->dims[1];
    a->dk = in[0]->dims[2] / a->qh, a->dv = in[2]->dims[2] / a->kvh;
    if (in[0]->dims[2] % a->qh || in[2]->dims[2] % a->kvh || in[1]->dims[2] != a->kvh * a->dk)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "query %s, key %s and value %s do not hold %lld query and %lld kv heads of one key size",
                          t0, t1, t2, (long long)a->qh, (long long)a->kvh);
    for (int i = 1; i < 3; i++)
        if (in[i]->dims[0] != a->B || in[i]->dims[1] != a->T)
            return gwr_k_fail(k, GWR_ERR_SHAPE, "query %s, key %s and value %s must share batch and sequence", t0, t1, t2);
    if (a->gating != !!g || a->delta != !!be)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "update_rule %s %s decay and %s beta", rule, a->gating ? "needs" : "takes no",
                          a->delta ? "needs" : "takes no");
    a->gw = a->bw = 0;
    if (g) {
        gwr_value_type_str(g, t1, sizeof t1);
        if (g->rank != 3 || g->dims[0] != a->B || g->dims[1] != a->T || (g->dims[2] != a->kvh && g->dims[2] != a->kvh * a->dk))
            return gwr_k_fail(k, GWR_ERR_SHAPE, "decay must be (%lld, %lld, %lld or %lld), got %s", (long long)a->B,
                              (long long)a->T, (long long)a->kvh, (long long)(a->kvh * a->dk), t1);
        a->gw = g->dims[2];
    }
    if (be) {
        gwr_value_type_str(be, t1, sizeof t1);
        if (be->rank != 3 || be->dims[0] != a->B || be->dims[1] != a->T || (be->dims[2] != a->kvh && be->dims[2] != 1))
            return gwr_k_fail(k, GWR_ERR_SHAPE, "beta must be (%lld, %lld, %lld or 1), got %s", (long long)a->B, (long long)a->T,
                              (long long)a->kvh, t1);
        a->bw = be->dims[2];
    }
    if (ps) {
        gwr_value_type_str(ps, t1, sizeof t1);
        if (!gwr_ku_is_float(ps->dtype) || ps->rank != 4 || ps->dims[0] != a->B || ps->dims[1] != a->kvh ||
            ps->dims[2] != a->dk || ps->dims[3] != a->dv)
            return gwr_k_fail(k, GWR_ERR_SHAPE, "past_state must be float (%lld, %lld, %lld, %lld), got %s", (long long)a->B,
                              (long long)a->kvh, (long long)a->dk, (long long)a->dv, t1);
    }
    return GWR_OK;
}

static gwr_status k_linear_attention(gwr_kctx *k) {
    lin_att a = {0};
    gwr_status st = lin_check(k, &a);
    if (st) return st;
    const gwr_value *q = k->in[0], *key = k->in[1], *v = k->in[2], *ps = gwr_ku_opt(k, 3);
    const gwr_value *g = gwr_ku_opt(k, 4), *be = gwr_ku_opt(k, 5);
    double scale = gwr_k_float(k, "scale", 0.0f);
    if (scale == 0) scale = 1.0 / sqrt((double)a.dk);
    int64_t od[3] = {a.B, a.T, a.qh * a.dv}, sd[4] = {a.B, a.kvh, a.dk, a.dv}, grp = a.qh / a.kvh;
    gwr_value *y = gwr_k_out(k, 0, q->dtype, 3, od), *pso = NULL;
    if (!y) return GWR_ERR_NOMEM;
    if (k->nout > 1 && gwr_k_out_used(k, 1) && !(pso = gwr_k_out(k, 1, ps ? ps->dtype : q->dtype, 4, sd))) return GWR_ERR_NOMEM;
    int64_t ns = a.dk * a.dv;
    double *buf = gwr_ku_scratch(k, ns + 3 * a.dk + 3 * a.dv + 1, sizeof *buf);
    if (!buf) return GWR_ERR_NOMEM;
    double *S = buf, *kr = S + ns, *qr = kr + a.dk, *gr = qr + a.dk, *vr = gr + a.dk, *ret = vr + a.dv, *o = ret + a.dv;
    for (int64_t b = 0; b < a.B; b++)
        for (int64_t h = 0; h < a.kvh; h++) {
            if (ps) gwr_ku_load_f64(ps, (b * a.kvh + h) * ns, ns, S);
            else memset(S, 0, (size_t)ns * sizeof *S);
            for (int64_t t = 0; t < a.T; t++) {
                int64_t bt = b * a.T + t;
                gwr_ku_load_f64(key, (bt * a.kvh + h) * a.dk, a.dk, kr);
                gwr_ku_load_f64(v, (bt * a.kvh + h) * a.dv, a.dv, vr);
                if (a.gating) {
                    if (a.gw == a.kvh) {
                        double e = exp(gwr_v_get_f64(g, bt * a.kvh + h));
                        for (int64_t i = 0; i < a.dk; i++) gr[i] = e;
                    } else {
                        gwr_ku_load_f64(g, (bt * a.kvh + h) * a.dk, a.dk, gr);
                        for (int64_t i = 0; i < a.dk; i++) gr[i] = exp(gr[i]);
                    }
                    for (int64_t i = 0; i < a.dk; i++)
                        for (int64_t m = 0; m < a.dv; m++) S[i * a.dv + m] *= gr[i];
                }
                if (a.delta) {
                    double beta = gwr_v_get_f64(be, bt * a.bw + (a.bw > 1 ? h : 0));
                    for (int64_t m = 0; m < a.dv; m++) ret[m] = 0;
                    for (int64_t i = 0; i < a.dk; i++)
                        for (int64_t m = 0; m < a.dv; m++) ret[m] += S[i * a.dv + m] * kr[i];
                    for (int64_t m = 0; m < a.dv; m++) vr[m] = beta * (vr[m] - ret[m]);
                }
                for (int64_t i = 0; i < a.dk; i++)
                    for (int64_t m = 0; m < a.dv; m++) S[i * a.dv + m] += kr[i] * vr[m];
                for (int64_t hq = h * grp; hq < (h + 1) * grp; hq++) {
                    gwr_ku_load_f64(q, (bt * a.qh + hq) * a.dk, a.dk, qr);
                    for (int64_t m = 0; m < a.dv; m++) o[m] = 0;
                    for (int64_t i = 0; i < a.dk; i++)
                        for (int64_t m = 0; m < a.dv; m++) o[m] += qr[i] * S[i * a.dv + m];
                    for (int64_t m = 0; m < a.dv; m++) o[m] *= scale;
                    gwr_ku_store_f64(y, (bt * a.qh + hq) * a.dv, a.dv, o);
                }
            }
            if (pso) gwr_ku_store_f64(pso, (b * a.kvh + h) * ns, ns, S);
        }
    gwr_free(buf);
    return GWR_OK;
}

/* ---- FlexAttention --------------------------------------------------------- */

/* Runs the modifier subgraph `name` (when the layer has it) on *x, which it
 * replaces: one input, one output of *x's dtype and shape. */
static gwr_status flex_mod(gwr_kctx *k, const char *name, gwr_value **x) {
    gwr_network *g = NULL;
    gwr_status st = gwr_layer_get_graph(k->layer, name, &g);
    if (st == GWR_ERR_NOT_FOUND) return GWR_OK;
    if (st || !g) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attribute '%s' is not a graph", name);
    if (gwr_network_num_inputs(g) != 1 || gwr_network_num_outputs(g) != 1)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s takes one input and gives one output, not %d and %d", name,
                          gwr_network_num_inputs(g), gwr_network_num_outputs(g));
    gwr_value *out = NULL;
    if ((st = gwr_k_run_graph(k, g, 1, x, 1, &out))) return st;
    const gwr_value *in = *x;
    if (!out || out->dtype != in->dtype || out->rank != in->rank ||
        memcmp(out->dims, in->dims, (size_t)in->rank * sizeof *in->dims)) {
        char a[128] = "nothing", b[128];
        if (out) gwr_value_type_str(out, a, sizeof a);
        gwr_value_type_str(in, b, sizeof b);
        gwr_value_release(out);
        return gwr_k_fail(k, GWR_ERR_SHAPE, "%s gives %s for an input %s: it must keep the type and shape", name, a, b);
    }
    gwr_value_release(*x);
    *x = out;
    return GWR_OK;
}

static gwr_status k_flex_attention(gwr_kctx *k) {
    static const char *const names[] = {"Q", "K", "V"};
    const gwr_value *in[3];
    for (int i = 0; i < 3; i++)
        if (!(in[i] = gwr_ku_need_float(k, i, names[i]))) return GWR_ERR_INVALID_ARG;
    const gwr_value *q = in[0], *kk = in[1], *v = in[2];
    char t0[128], t1[128], t2[128];
    gwr_value_type_str(q, t0, sizeof t0), gwr_value_type_str(kk, t1, sizeof t1), gwr_value_type_str(v, t2, sizeof t2);
    gwr_dtype dt = q->dtype;
    if (kk->dtype != dt || v->dtype != dt) return gwr_k_fail(k, GWR_ERR_TYPE, "Q %s, K %s and V %s must share a dtype", t0, t1, t2);
    if (q->rank != 4 || kk->rank != 4 || v->rank != 4)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "Q %s, K %s and V %s must be 4-D (batch, heads, seq, head_size)", t0, t1, t2);
    int64_t B = q->dims[0], Hq = q->dims[1], L = q->dims[2], E = q->dims[3];
    int64_t Hkv = kk->dims[1], S = kk->dims[2], Ev = v->dims[3];
    if (kk->dims[0] != B || v->dims[0] != B || v->dims[1] != Hkv || v->dims[2] != S || kk->dims[3] != E)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "Q %s, K %s and V %s: batch, kv heads, kv length or head size differ", t0, t1, t2);
    if (Hkv <= 0 || Hq % Hkv)
        return gwr_k_fail(k, GWR_ERR_SHAPE, "Q's %lld heads must be a multiple of K's %lld", (long long)Hq, (long long)Hkv);
    gwr_dtype ct = dt == GWR_FLOAT64 ? GWR_FLOAT64 : GWR_FLOAT32;
    int64_t prec = gwr_k_int(k, "softmax_precision", 0);
    if (prec) {
        if (prec != GWR_FLOAT32 && prec != GWR_FLOAT16 && prec != GWR_BFLOAT16 && prec != GWR_FLOAT64)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "softmax_precision %lld is not float, float16, bfloat16 or double",
                              (long long)prec);
        ct = (gwr_dtype)prec;
    }
    double scale = gwr_k_float(k, "scale", NAN);
    if (isnan(scale)) scale = 1.0 / sqrt((double)E);
    double ss = gwr_ku_round(dt, sqrtf((float)scale)); /* sqrt(scale) in float32, then Q's type */
    int64_t sd[4] = {B, Hq, L, S}, yd[4] = {B, Hq, L, Ev}, grp = Hq / Hkv;
    gwr_value *y = gwr_k_out(k, 0, v->dtype, 4, yd), *p = y ? gwr_value_new(ct, 4, sd) : NULL;
    double *buf = p ? gwr_ku_scratch(k, E + (E > Ev ? E : Ev) * S + S + Ev, sizeof *buf) : NULL;
    if (y && !p) gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    if (!buf) {
        gwr_value_release(p);
        return GWR_ERR_NOMEM;
    }
    double *qr = buf, *kr = qr + E, *row = kr + (E > Ev ? E : Ev) * S, *acc = row + S;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++) {
            int64_t hk = b * Hkv + h / grp;
            gwr_ku_load_f64(kk, hk * S * E, S * E, kr);
            for (int64_t j = 0; j < S * E; j++) kr[j] = gwr_ku_round(dt, kr[j] * ss);
            for (int64_t i = 0; i < L; i++) {
                gwr_ku_load_f64(q, ((b * Hq + h) * L + i) * E, E, qr);
                for (int64_t d = 0; d < E; d++) qr[d] = gwr_ku_round(dt, qr[d] * ss);
                for (int64_t j = 0; j < S; j++) {
                    double sc = 0;
                    for (int64_t d = 0; d < E; d++) sc += qr[d] * kr[j * E + d];
                    row[j] = gwr_ku_round(dt, sc);
                }
                gwr_ku_store_f64(p, ((b * Hq + h) * L + i) * S, S, row);
            }
        }
    gwr_status st = flex_mod(k, "score_mod", &p);
    /* into a new value: score_mod's output may be bytes it shares (a constant of its graph) */
    gwr_value *pr = st ? NULL : gwr_value_new(ct, 4, sd);
    if (!st && !pr) st = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    for (int64_t r = 0; !st && r < B * Hq * L; r++) { /* softmax rows, each step in the softmax type */
        gwr_ku_load_f64(p, r * S, S, row);
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < S; j++) mx = row[j] > mx ? row[j] : mx;
        for (int64_t j = 0; j < S; j++) sum += (row[j] = gwr_ku_round(ct, exp(gwr_ku_round(ct, row[j] - mx))));
        sum = gwr_ku_round(ct, sum);
        for (int64_t j = 0; j < S; j++) row[j] /= sum;
        gwr_ku_store_f64(pr, r * S, S, row);
    }
    gwr_value_release(p);
    p = pr;
    if (!st) st = flex_mod(k, "prob_mod", &p);
    for (int64_t b = 0; !st && b < B; b++)
        for (int64_t h = 0; h < Hq; h++) {
            int64_t hk = b * Hkv + h / grp;
            gwr_ku_load_f64(v, hk * S * Ev, S * Ev, kr); /* kr: K's rows, now V's */
            for (int64_t i = 0; i < L; i++) {
                gwr_ku_load_f64(p, ((b * Hq + h) * L + i) * S, S, row);
                memset(acc, 0, (size_t)Ev * sizeof *acc);
                for (int64_t j = 0; j < S; j++)
                    for (int64_t d = 0; d < Ev; d++) acc[d] += row[j] * kr[j * Ev + d];
                for (int64_t d = 0; d < Ev; d++) acc[d] = gwr_ku_round(ct, acc[d]);
                gwr_ku_store_f64(y, ((b * Hq + h) * L + i) * Ev, Ev, acc);
            }
        }
    gwr_value_release(p);
    gwr_free(buf);
    return st;
}

const gwr_kernel_entry gwr_kernels_attention_linear[] = {
    GWR_KERNEL(LinearAttention, k_linear_attention),
    GWR_KERNEL(PREVIEW_FlexAttention, k_flex_attention),
    {.fn = NULL},
};
