/* test_attention_cache.c - KV-cache values (gwr_value_new_cache, the views
 * the ONNX Attention kernel appends to in place) and the float32 Attention
 * kernel (src/exec/kernels/attention_cache.c) against the double reference
 * of attention.c (gwr_ku_attention_ref, which ONNX's backend test data
 * checks) over random shapes, masks and attributes, at 1 and 3 threads
 * (the same bits). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "exec/exec_internal.h"
#include "exec/kernels/kernel_util.h"
#include "gwr/gwr.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_u(void) {
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return rng * 0x2545f4914f6cdd1dull;
}
static int irand(int n) { return (int)(next_u() % (uint64_t)n); }
static double urand(void) { return (double)(next_u() >> 11) / 9007199254740992.0 * 2 - 1; }

static gwr_value *rand_value(gwr_dtype dt, int rank, const int64_t *dims, double amp) {
    gwr_value *v = gwr_value_new(dt, rank, dims);
    for (int64_t i = 0; v && i < gwr_value_numel(v); i++) gwr_value_set_f64(v, i, amp * urand());
    return v;
}

/* ---- an Attention network ---- */

static const char *const in_names[6] = {"Q", "K", "V", "mask", "past_key", "past_value"};
static const char *const out_names[3] = {"Y", "present_key", "present_value"};

typedef struct attrs {
    int causal;
    double scale, softcap; /* 0: absent */
} attrs;

/* One Attention layer (opset 23) over the inputs given (in[i] NULL: absent). */
static gwr_network *att_net(gwr_value *const *in, const attrs *a) {
    gwr_network *net = gwr_network_new("att");
    gwr_tensor *ts[6] = {0};
    for (int i = 0; i < 6; i++)
        if (in[i]) ts[i] = gwr_network_add_input(net, in_names[i], gwr_value_dtype(in[i]), -1, NULL);
    int nin = in[4] ? 6 : in[3] ? 4 : 3;
    gwr_layer *l = gwr_network_add_layer(net, "Attention", "", "A", nin, ts, 3, NULL);
    if (a->causal) gwr_layer_set_int(l, "is_causal", 1);
    if (a->scale) gwr_layer_set_float(l, "scale", (float)a->scale);
    if (a->softcap) gwr_layer_set_float(l, "softcap", (float)a->softcap);
    for (int o = 0; o < 3; o++) {
        gwr_tensor_set_name(gwr_layer_output(l, o), out_names[o]);
        gwr_network_mark_output(net, gwr_layer_output(l, o));
    }
    gwr_network_set_opset(net, "", 23);
    return net;
}

/* Runs net in a session of `threads` on in (6 slots); out: 3 values. */
static gwr_status run_net(gwr_network *net, int threads, gwr_value *const *in, gwr_value **out) {
    gwr_session_options o = {.threads = threads};
    gwr_session *s = gwr_session_new_raw(net, &o);
    if (!s) return GWR_ERR_INVALID_ARG;
    const char *nm[6];
    gwr_value *vals[6];
    int n = 0;
    for (int i = 0; i < 6; i++)
        if (in[i]) nm[n] = in_names[i], vals[n++] = in[i];
    gwr_status rc = gwr_session_run(s, n, nm, vals, 3, NULL, out);
    if (rc) fprintf(stderr, "run: %s\n", gwr_session_errmsg(s));
    gwr_session_free(s);
    return rc;
}

/* The reference kernel on dense copies of in (outputs: new references). */
static gwr_status run_ref(gwr_network *net, gwr_value *const *in, gwr_value **out) {
    gwr_layer *l = gwr_network_layer(net, 0);
    int nin = gwr_layer_num_inputs(l);
    gwr_value *dn[6] = {0};
    for (int i = 0; i < nin; i++) dn[i] = in[i] ? gwr_value_dense(in[i], NULL) : NULL;
    gwr_exec_pool *pool = gwr_exec_pool_new();
    gwr_kmsg km = {GWR_OK, ""};
    gwr_kctx kc = {.layer = l, .opset = 23, .nin = nin, .nout = 3, .in = dn, .out = out, .threads = 1, .pool = pool, .msg = &km};
    for (int o = 0; o < 3; o++) out[o] = NULL;
    gwr_status rc = gwr_ku_attention_ref(&kc);
    if (rc) fprintf(stderr, "reference: %s\n", km.text);
    gwr_exec_pool_close(pool);
    for (int i = 0; i < nin; i++) gwr_value_release(dn[i]);
    return rc;
}

/* Worst |a - b| / (atol + rtol |b|) over the elements (types must agree). */
static double excess(const gwr_value *a, const gwr_value *b, double atol, double rtol) {
    if (!a || !b || gwr_value_numel(a) != gwr_value_numel(b) || gwr_value_rank(a) != gwr_value_rank(b)) return INFINITY;
    double w = 0;
    for (int64_t i = 0; i < gwr_value_numel(a); i++) {
        double x = gwr_value_get_f64(a, i), y = gwr_value_get_f64(b, i);
        double e = fabs(x - y) / (atol + rtol * fabs(y));
        if (isnan(x) != isnan(y)) e = INFINITY;
        if (!isnan(x) && e > w) w = e;
    }
    return w;
}

static int same_bits(const gwr_value *a, const gwr_value *b) {
    if (!a || !b || gwr_value_nbytes(a) != gwr_value_nbytes(b)) return 0;
    for (int64_t i = 0; i < gwr_value_numel(a); i++) {
        double x = gwr_value_get_f64(a, i), y = gwr_value_get_f64(b, i);
        if (memcmp(&x, &y, sizeof x) && !(isnan(x) && isnan(y))) return 0;
    }
    return 1;
}

static void release_all(gwr_value **v, int n) {
    for (int i = 0; i < n; i++) gwr_value_release(v[i]), v[i] = NULL;
}

/* ---- random cases: fast kernel against the reference ---- */

TEST(random_against_reference) {
    int cases = 0, fast_shapes = 0;
    for (int c = 0; c < 400; c++) {
        gwr_dtype dt = irand(5) == 0 ? GWR_FLOAT16 : GWR_FLOAT32;
        int64_t B = 1 + irand(2), kvh = 1 + irand(3), grp = (int64_t[]){1, 2, 4}[irand(3)], qh = kvh * grp;
        int64_t S = (int64_t[]){1, 1, 1, 2, 3, 4, 5, 9, 70}[irand(9)];
        int64_t L = irand(4) ? S : 1 + irand(5);
        int64_t P = irand(3) ? (int64_t[]){0, 1, 7, 40, 130}[irand(5)] : -1; /* -1: no past inputs */
        int64_t Dh = (int64_t[]){1, 3, 8, 16, 64}[irand(5)], Dv = irand(3) ? Dh : (int64_t[]){2, 8, 24}[irand(3)];
        int64_t T = L + (P > 0 ? P : 0);
        attrs a = {.causal = irand(2), .scale = irand(3) ? 0 : 0.3, .softcap = irand(5) ? 0 : 2.5};
        gwr_value *in[6] = {0};
        int64_t qd[4] = {B, qh, S, Dh}, kd[4] = {B, kvh, L, Dh}, vd[4] = {B, kvh, L, Dv};
        in[0] = rand_value(dt, 4, qd, 2), in[1] = rand_value(dt, 4, kd, 1), in[2] = rand_value(dt, 4, vd, 1);
        int mk = irand(3); /* none, bool, float */
        if (mk) {
            int rank = 1 + irand(4);
            int64_t full[4] = {B, qh, S, irand(4) ? T : 1 + irand((int)T)}, md[4];
            for (int i = 0; i < rank; i++) {
                int j = 4 - rank + i;
                md[i] = j == 3 || irand(2) ? full[j] : 1;
            }
            gwr_value *m = gwr_value_new(mk == 1 ? GWR_BOOL : dt, rank, md);
            for (int64_t i = 0; i < gwr_value_numel(m); i++)
                gwr_value_set_f64(m, i, mk == 1 ? irand(5) != 0 : irand(8) == 0 ? -INFINITY : urand());
            in[3] = m;
        }
        if (P >= 0) {
            int64_t pk[4] = {B, kvh, P, Dh}, pv[4] = {B, kvh, P, Dv};
            if (irand(2)) { /* as cache views with room, or dense */
                int64_t cap = P + L + irand(3);
                in[4] = gwr_value_new_cache(dt, pk, cap), in[5] = gwr_value_new_cache(dt, pv, cap);
                for (int i = 4; i < 6; i++) /* random rows through the strided layout */
                    for (int64_t e = 0; e < gwr_value_numel(in[i]); e++) {
                        int64_t D = gwr_value_dims(in[i])[3], row = e / D, bh = row / P, t = row % P;
                        if (dt == GWR_FLOAT32) ((float *)in[i]->data)[(bh * cap + t) * D + e % D] = (float)urand();
                        else ((uint16_t *)in[i]->data)[(bh * cap + t) * D + e % D] = gwr_f32_to_f16((float)urand());
                    }
            } else {
                in[4] = rand_value(dt, 4, pk, 1), in[5] = rand_value(dt, 4, pv, 1);
            }
        }
        gwr_network *net = att_net(in, &a);
        gwr_value *ref[3], *got[3] = {0}, *got3[3] = {0};
        if (!CHECK_OK(run_ref(net, in, ref))) goto next; /* before the runs: they append to the caches */
        /* a copy of the cache inputs for the second run (the first appends in place) */
        gwr_value *in2[6];
        for (int i = 0; i < 6; i++) in2[i] = in[i] && in[i]->kv ? gwr_value_dense(in[i], NULL) : gwr_value_retain(in[i]);
        if (!CHECK_OK(run_net(net, 1, in, got)) || !CHECK_OK(run_net(net, 3, in2, got3))) {
            release_all(in2, 6);
            goto next;
        }
        double tol = dt == GWR_FLOAT16 ? 2e-3 : 1e-5;
        for (int o = 0; o < 3; o++) {
            double e = excess(got[o], ref[o], tol, tol * 10);
            if (!CHECK(e <= 1))
                fprintf(stderr, "  case %d output %d: excess %g (dt %d B %lld qh %lld kvh %lld S %lld L %lld P %lld Dh %lld Dv %lld mask %d causal %d)\n",
                        c, o, e, (int)dt, (long long)B, (long long)qh, (long long)kvh, (long long)S, (long long)L, (long long)P,
                        (long long)Dh, (long long)Dv, mk, a.causal);
            CHECK(same_bits(got[o], got3[o]));
        }
        cases++;
        fast_shapes += P >= 0 && in[4]->kv;
        release_all(in2, 6);
        release_all(got3, 3);
    next:
        release_all(got, 3);
        release_all(ref, 3);
        release_all(in, 6);
        gwr_network_free(net);
    }
    CHECK(cases == 400);
    CHECK(fast_shapes > 50);
}

/* ---- the cache values ---- */

TEST(new_cache_and_capacity) {
    int64_t d[4] = {2, 3, 4, 5}, bad[4] = {2, -1, 4, 5};
    gwr_value *c = gwr_value_new_cache(GWR_FLOAT32, d, 10);
    if (!CHECK(c)) return;
    CHECK_EQ_INT(gwr_value_capacity(c), 10);
    CHECK_EQ_INT(gwr_value_numel(c), 120);
    CHECK_EQ_INT(gwr_value_rank(c), 4);
    for (int64_t i = 0; i < 120; i++) CHECK(gwr_value_get_f64(c, i) == 0);
    CHECK(!gwr_value_new_cache(GWR_FLOAT32, d, 3));
    CHECK_CONTAINS(gwr_last_errmsg(), "capacity");
    CHECK(!gwr_value_new_cache(GWR_FLOAT32, bad, 10));
    CHECK(!gwr_value_new_cache(GWR_STRING, d, 10));
    CHECK(!gwr_value_new_cache(GWR_INT4, d, 10));
    CHECK(!gwr_value_new_cache(GWR_FLOAT32, NULL, 10));
    gwr_value *dense = gwr_value_new(GWR_FLOAT32, 4, d), *r2 = gwr_value_new(GWR_FLOAT32, 2, d);
    CHECK_EQ_INT(gwr_value_capacity(dense), 4);
    CHECK_EQ_INT(gwr_value_capacity(r2), -1);
    CHECK_EQ_INT(gwr_value_capacity(NULL), -1);
    gwr_value_release(dense), gwr_value_release(r2), gwr_value_release(c);
}

/* A strided view read element by element where it is, made dense by
 * gwr_value_data (its own bytes after), and its writes reaching no other
 * view. */
TEST(strided_view_access) {
    int64_t d[4] = {1, 2, 3, 2};
    gwr_value *c = gwr_value_new_cache(GWR_FLOAT32, d, 5);
    float *st = c->data; /* storage: 2 heads of 5 rows of 2 */
    for (int i = 0; i < 20; i++) st[i] = (float)i;
    gwr_value *v = gwr_value_cache_view(c, 3), *w = gwr_value_cache_view(c, 3);
    CHECK(gwr_value_strided(v));
    /* dense (h, t, c): head 0 rows 0..2 = 0..5, head 1 rows 0..2 = 10..15 */
    double want[12] = {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15};
    for (int i = 0; i < 12; i++) CHECK(gwr_value_get_f64(v, i) == want[i]);
    float *p = gwr_value_data(v);
    if (CHECK(p)) {
        for (int i = 0; i < 12; i++) CHECK(p[i] == (float)want[i]);
        CHECK(!gwr_value_strided(v) && !v->kv);
        CHECK_EQ_INT(gwr_value_capacity(v), 3);
        p[6] = -1;
        CHECK(gwr_value_get_f64(w, 6) == 10); /* the other view and the storage keep theirs */
        CHECK(gwr_value_cdata(v) == p);       /* stable */
    }
    gwr_value_set_f64(w, 0, 7); /* detaches w too */
    CHECK(gwr_value_get_f64(w, 0) == 7 && st[0] == 0);
    gwr_weights wt;
    gwr_value *x = gwr_value_cache_view(c, 2);
    if (CHECK_OK(gwr_value_to_weights(x, &wt))) {
        CHECK(((const float *)wt.data)[4] == 10);
        gwr_buffer_release(wt.buffer);
    }
    /* released in another order than made */
    gwr_value_release(c), gwr_value_release(w), gwr_value_release(x), gwr_value_release(v);
}

/* One decode step of a (B 2, 2 kv heads, 4 query heads, D 3) layer at
 * cache length P, as dense inputs for the reference. */
typedef struct step_in {
    gwr_value *q, *k, *v;
} step_in;

static step_in step_values(int64_t S) {
    int64_t qd[4] = {2, 4, S, 3}, kd[4] = {2, 2, S, 3};
    return (step_in){rand_value(GWR_FLOAT32, 4, qd, 2), rand_value(GWR_FLOAT32, 4, kd, 1), rand_value(GWR_FLOAT32, 4, kd, 1)};
}

/* Runs one step on pk/pv (any kind of value) and checks it against the
 * reference on dense copies; returns the outputs. */
static int step_check(step_in s, gwr_value *pk, gwr_value *pv, gwr_value **out) {
    gwr_value *in[6] = {s.q, s.k, s.v, NULL, pk, pv}, *ref[3];
    attrs a = {.causal = 1};
    gwr_network *net = att_net(in, &a);
    int ok = CHECK_OK(run_ref(net, in, ref)) && CHECK_OK(run_net(net, 1, in, out));
    for (int o = 0; ok && o < 3; o++) ok &= CHECK(excess(out[o], ref[o], 1e-5, 1e-4) <= 1);
    if (ok) ok &= CHECK(same_bits(out[1], ref[1])) && CHECK(same_bits(out[2], ref[2]));
    release_all(ref, 3);
    gwr_network_free(net);
    return ok;
}

static void step_free(step_in *s) { gwr_value_release(s->q), gwr_value_release(s->k), gwr_value_release(s->v); }

/* The decode loop: present shares past's storage (no copy), until the
 * room runs out; then a new cache twice as large. */
TEST(decode_in_place_then_grow) {
    int64_t d0[4] = {2, 2, 0, 3};
    gwr_value *pk = gwr_value_new_cache(GWR_FLOAT32, d0, 6), *pv = gwr_value_new_cache(GWR_FLOAT32, d0, 6);
    const void *kst = pk->data, *vst = pv->data;
    for (int stepn = 0; stepn < 9; stepn++) {
        int64_t S = stepn == 0 ? 3 : 1, P = gwr_value_dims(pk)[2];
        step_in s = step_values(S);
        gwr_value *out[3];
        if (!step_check(s, pk, pv, out)) {
            step_free(&s), gwr_value_release(pk), gwr_value_release(pv);
            return;
        }
        int64_t cap = gwr_value_capacity(pk);
        int in_place = P + S <= cap;
        CHECK_EQ_INT(gwr_value_dims(out[1])[2], P + S);
        CHECK_EQ_INT(gwr_value_capacity(out[1]), in_place ? cap : 2 * cap);
        CHECK_EQ_INT(gwr_value_capacity(out[2]), in_place ? cap : 2 * cap);
        CHECK((out[1]->data == kst) == in_place);
        CHECK((out[2]->data == vst) == in_place);
        if (!in_place) kst = out[1]->data, vst = out[2]->data; /* the new cache's: in place from here */
        gwr_value_release(pk), gwr_value_release(pv);
        pk = out[1], pv = out[2];
        gwr_value_release(out[0]);
        step_free(&s);
        if (stepn == 2) CHECK(gwr_value_strided(pk));
    }
    CHECK_EQ_INT(gwr_value_dims(pk)[2], 11);
    CHECK_EQ_INT(gwr_value_capacity(pk), 12);
    gwr_value_release(pv), gwr_value_release(pk);
}

/* A stale view (someone appended past it) gets a copy of its own rows and
 * leaves the newer view as it was; so does a past given as both past_key
 * and past_value; views released in any order. */
TEST(stale_and_shared_views) {
    int64_t d0[4] = {2, 2, 2, 3};
    gwr_value *c0 = gwr_value_new_cache(GWR_FLOAT32, d0, 8);
    for (int64_t i = 0; i < gwr_value_numel(c0); i++) ((float *)c0->data)[(i / 6) * 24 + i % 6] = (float)urand();
    gwr_value *v0 = gwr_value_new_cache(GWR_FLOAT32, d0, 8);
    step_in s1 = step_values(1), s2 = step_values(1), s3 = step_values(1);
    gwr_value *a[3], *b[3], *c[3];
    if (!step_check(s1, c0, v0, a)) goto done1;      /* in place: a = views of length 3 */
    CHECK(a[1]->data == c0->data);
    gwr_value *snap = gwr_value_dense(a[1], NULL);  /* what a[1] holds now */
    if (!step_check(s2, c0, v0, b)) goto done2;      /* c0 is stale now: copies */
    CHECK(b[1]->data != c0->data && b[2]->data != v0->data);
    CHECK_EQ_INT(gwr_value_capacity(b[1]), 8);
    CHECK(same_bits(a[1], snap));                     /* the newer view unchanged */
    /* a[1] is still the longest view of its cache: in place again */
    if (!step_check(s3, a[1], a[2], c)) goto done3;
    CHECK(c[1]->data == c0->data);
    release_all(c, 3);
    /* the same value as past_key and past_value: the key appends in place, the value copies */
    if (step_check(s3, b[1], b[1], c)) {
        CHECK(c[1]->data == b[1]->data);
        CHECK(c[2]->data != b[1]->data);
        release_all(c, 3);
    }
done3:
    /* any order: the first cache's views and values go before or after the second's */
    gwr_value_release(a[1]), gwr_value_release(b[0]), gwr_value_release(a[0]);
    release_all(b + 1, 2);
    gwr_value_release(a[2]);
done2:
    gwr_value_release(snap);
done1:
    gwr_value_release(v0), gwr_value_release(c0);
    step_free(&s1), step_free(&s2), step_free(&s3);
}

/* present read by a kernel that does not take strided views (Relu) and by
 * Shape: the first sees a dense copy, the second the dims. */
TEST(other_kernels_see_dense) {
    int64_t d0[4] = {2, 2, 4, 3};
    gwr_value *pk = gwr_value_new_cache(GWR_FLOAT32, d0, 9), *pv = gwr_value_new_cache(GWR_FLOAT32, d0, 9);
    for (int64_t i = 0; i < 2 * 2 * 9 * 3; i++) ((float *)pk->data)[i] = (float)urand(), ((float *)pv->data)[i] = (float)urand();
    step_in s = step_values(1);
    gwr_network *net = gwr_network_new("g");
    gwr_tensor *ts[6];
    gwr_value *in[6] = {s.q, s.k, s.v, NULL, pk, pv};
    for (int i = 0; i < 6; i++) ts[i] = in[i] ? gwr_network_add_input(net, in_names[i], GWR_FLOAT32, -1, NULL) : NULL;
    gwr_layer *l = gwr_network_add_layer(net, "Attention", "", "A", 6, ts, 3, NULL);
    gwr_tensor *pres = gwr_layer_output(l, 1);
    gwr_layer *relu = gwr_network_add_layer(net, "Relu", "", "R", 1, &pres, 1, NULL);
    gwr_layer *shape = gwr_network_add_layer(net, "Shape", "", "S", 1, &pres, 1, NULL);
    gwr_network_mark_output(net, gwr_layer_output(relu, 0));
    gwr_network_mark_output(net, gwr_layer_output(shape, 0));
    gwr_network_mark_output(net, pres);
    gwr_network_set_opset(net, "", 23);
    gwr_value *out[3] = {0};
    gwr_session *ses = gwr_session_new_raw(net, NULL);
    const char *nm[5] = {"Q", "K", "V", "past_key", "past_value"};
    gwr_value *vals[5] = {s.q, s.k, s.v, pk, pv};
    if (CHECK(ses) && CHECK_OK(gwr_session_run(ses, 5, nm, vals, 3, NULL, out))) {
        CHECK(gwr_value_strided(out[2]) && out[2]->data == pk->data);
        CHECK(!gwr_value_strided(out[0]));
        for (int64_t i = 0; i < gwr_value_numel(out[0]); i++) {
            double x = gwr_value_get_f64(out[2], i);
            CHECK(gwr_value_get_f64(out[0], i) == (x > 0 ? x : 0));
        }
        CHECK_EQ_INT(gwr_value_numel(out[1]), 4);
        CHECK_EQ_INT(gwr_value_get_i64(out[1], 2), 5);
    }
    release_all(out, 3);
    gwr_session_free(ses);
    /* gwr_exec_layer (constant folding's way in) gives Relu a dense copy too */
    gwr_value *view = gwr_value_cache_view(pk, 2), *r = NULL;
    if (CHECK(gwr_value_strided(view)) && CHECK_OK(gwr_exec_layer(relu, &view, &r))) {
        for (int64_t i = 0; i < gwr_value_numel(r); i++) {
            double x = gwr_value_get_f64(view, i);
            CHECK(gwr_value_get_f64(r, i) == (x > 0 ? x : 0));
        }
        CHECK(gwr_value_strided(view)); /* the caller's view untouched */
    }
    gwr_value_release(r), gwr_value_release(view);
    gwr_network_free(net);
    step_free(&s);
    gwr_value_release(pk), gwr_value_release(pv);
}

int main(void) {
    setenv("GWR_TPOOL_GRAIN_ONE", "1", 1); /* split every loop over the threads */
    RUN(new_cache_and_capacity);
    RUN(strided_view_access);
    RUN(decode_in_place_then_grow);
    RUN(stale_and_shared_views);
    RUN(other_kernels_see_dense);
    RUN(random_against_reference);
    return check_report();
}
