/* test_exec_prepare.c - the kernels' prepare hook (a GEMM's constant B
 * prepared once at planning) and the kernels rewritten for speed: GEMMs of
 * one to four rows over the packed B (gwr_sgemv_pb), the float32 GELUs
 * and SkipLayerNormalization.
 *
 * Expected values are the ops' formulas computed here in double from the
 * same inputs (naive triple loops, erf from libm), never the executor's.
 * Which layers prepared is read with gwr_session_prepared_layers: a
 * constant float16 B (widened and packed), or a transposed float32 one with
 * K > N, prepares; so does any constant float32 B (packed for sgemm.c),
 * also where the graph fixes A at one row (gwr_sgemv_pb reads the packed
 * panels); a B that is a graph input does not. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "util/util.h"

/* Value i of a test matrix: multiples of 1/8 in [-1, 1), exact in float16,
 * so that products and their sums are exact in float32. */
static double val(int64_t i, int seed) { return (double)((i * 7 + seed * 13) % 16 - 8) / 8.0; }

static gwr_value *make_value(gwr_dtype dt, int rank, const int64_t *dims, int seed) {
    gwr_value *v = gwr_value_new(dt, rank, dims);
    for (int64_t i = 0; v && i < gwr_value_numel(v); i++) gwr_value_set_f64(v, i, val(i, seed));
    return v;
}

static gwr_tensor *add_const(gwr_network *net, const char *name, gwr_dtype dt, int rank, const int64_t *dims, int seed) {
    gwr_value *v = make_value(dt, rank, dims, seed);
    gwr_weights w;
    gwr_tensor *t = NULL;
    if (v && !gwr_value_to_weights(v, &w)) {
        t = gwr_network_add_constant(net, name, &w);
        gwr_buffer_release(w.buffer);
    }
    gwr_value_release(v);
    return t;
}

/* B as a constant (cb) or a graph input named "b". */
static gwr_tensor *operand_b(gwr_network *net, int cb, gwr_dtype dt, int rank, const int64_t *dims) {
    if (cb) return add_const(net, "bw", dt, rank, dims, 2);
    gwr_dim d[4];
    for (int i = 0; i < rank; i++) d[i] = dims[i];
    return gwr_network_add_input(net, "b", dt, rank, d);
}

/* Runs net (input "a" [dims of a], and "b" when it is an input) twice, checks
 * both runs agree, and returns output 0 of the second (the caller's). */
static gwr_value *run_twice(gwr_network *net, gwr_dtype dt, int ra, const int64_t *da, int rb, const int64_t *db,
                            int64_t want_prepared) {
    gwr_session *s = gwr_session_new_raw(net, NULL);
    if (!CHECK(s != NULL)) {
        fprintf(stderr, "  %s\n", gwr_last_errmsg());
        return NULL;
    }
    CHECK_EQ_INT(gwr_session_prepared_layers(s), want_prepared);
    gwr_value *in[2] = {make_value(dt, ra, da, 1), make_value(dt, rb, db, 2)}, *out[2] = {NULL, NULL};
    const char *names[2] = {"a", "b"};
    int nin = gwr_network_num_inputs(net);
    for (int r = 0; r < 2; r++)
        if (!CHECK_OK(gwr_session_run(s, nin, names, in, 1, NULL, &out[r]))) fprintf(stderr, "  %s\n", gwr_session_errmsg(s));
    if (out[0] && out[1]) CHECK(!memcmp(gwr_value_cdata(out[0]), gwr_value_cdata(out[1]), gwr_value_nbytes(out[0])));
    gwr_value_release(in[0]), gwr_value_release(in[1]), gwr_value_release(out[0]);
    gwr_session_free(s);
    return out[1];
}

/* y[t, m, n] = alpha sum_k A[t, m, k] op(B)[k, n] + beta c[n], then act
 * (1: relu); B is [K, N], or [N, K] with tb. */
static void check_product(const gwr_value *y, int64_t T, int64_t M, int64_t N, int64_t K, int tb, double alpha,
                          double beta, int hasc, int act, double tol) {
    if (!CHECK(y != NULL) || !CHECK_EQ_INT(gwr_value_numel(y), T * M * N)) return;
    double worst = 0;
    for (int64_t t = 0; t < T; t++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double s = 0;
                for (int64_t q = 0; q < K; q++) s += val((t * M + m) * K + q, 1) * val(tb ? n * K + q : q * N + n, 2);
                s = alpha * s + (hasc ? beta * val(n, 3) : 0);
                if (act && s < 0) s = 0;
                double got = gwr_value_get_f64(y, (t * M + m) * N + n), err = fabs(got - s) / (1 + fabs(s));
                worst = err > worst ? err : worst;
            }
    if (!CHECK(worst <= tol)) fprintf(stderr, "  worst relative error %g > %g\n", worst, tol);
}

/* MatMul of A [T, M, K] (T 0: [M, K]) by B [K, N]. */
static void matmul_case(gwr_dtype dt, int cb, int64_t T, int64_t M, int64_t K, int64_t N, int64_t want, double tol) {
    gwr_network *net = gwr_network_new("mm");
    int64_t da[3] = {T, M, K}, db[2] = {K, N};
    int ra = T ? 3 : 2;
    gwr_dim dd[3] = {da[0], da[1], da[2]};
    gwr_tensor *a = gwr_network_add_input(net, "a", dt, ra, T ? dd : dd + 1), *b = operand_b(net, cb, dt, 2, db);
    gwr_layer *l = gwr_network_add_layer(net, "MatMul", "", "mm", 2, (gwr_tensor *[]){a, b}, 1, NULL);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    gwr_value *y = run_twice(net, dt, ra, T ? da : da + 1, 2, db, want);
    check_product(y, T ? T : 1, M, N, K, 0, 1, 0, 0, 0, tol);
    gwr_value_release(y);
    gwr_network_free(net);
}

TEST(matmul_half_b_prepared) {
    for (int64_t M = 1; M <= 6; M += 5) {
        matmul_case(GWR_FLOAT16, 1, 0, M, 7, 5, 1, 2e-3);  /* a constant B: widened once */
        matmul_case(GWR_FLOAT16, 0, 0, M, 7, 5, 0, 2e-3);  /* B an input: the plain path */
        matmul_case(GWR_BFLOAT16, 1, 2, M, 9, 3, 1, 1e-2); /* batched A over one B */
    }
    matmul_case(GWR_FLOAT32, 1, 0, 3, 7, 5, 1, 1e-6);     /* float32 B packed for sgemm.c */
    matmul_case(GWR_FLOAT32, 1, 0, 1, 7, 5, 1, 1e-6);     /* one row: packed too (gwr_sgemv_pb) */
    matmul_case(GWR_FLOAT32, 1, 4, 1, 7, 5, 1, 1e-6);     /* a batch of one-row matrices: one product of 4 rows */
}

/* Gemm (op "Gemm" or com.microsoft FusedGemm with Relu) with transB. */
static void gemm_case(const char *op, int64_t M, int64_t K, int64_t N, int tb, int64_t want, float beta) {
    gwr_network *net = gwr_network_new("gemm");
    int64_t da[2] = {M, K}, db[2] = {tb ? N : K, tb ? K : N}, dc = N;
    gwr_dim dd[2] = {M, K};
    gwr_tensor *a = gwr_network_add_input(net, "a", GWR_FLOAT32, 2, dd), *b = operand_b(net, 1, GWR_FLOAT32, 2, db);
    gwr_tensor *c = add_const(net, "c", GWR_FLOAT32, 1, &dc, 3);
    int fused = strcmp(op, "Gemm") != 0;
    gwr_layer *l = gwr_network_add_layer(net, op, fused ? "com.microsoft" : "", "g", 3, (gwr_tensor *[]){a, b, c}, 1, NULL);
    gwr_layer_set_int(l, "transB", tb);
    gwr_layer_set_float(l, "alpha", 0.5f);
    gwr_layer_set_float(l, "beta", beta);
    if (fused) gwr_layer_set_string(l, "activation", "Relu");
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    gwr_value *y = run_twice(net, GWR_FLOAT32, 2, da, 2, db, want);
    check_product(y, 1, M, N, K, tb, 0.5, beta, 1, fused, 1e-6);
    gwr_value_release(y);
    gwr_network_free(net);
}

TEST(gemm_transposed_b_prepared) {
    for (int64_t M = 1; M <= 5; M += 2) {
        gemm_case("Gemm", M, 9, 4, 1, 1, 2.0f);       /* K > N: laid out [K, N] */
        gemm_case("Gemm", M, 3, 6, 1, 1, 1.0f);       /* K <= N: packed as it is */
        gemm_case("Gemm", M, 9, 4, 0, 1, 2.0f);
        gemm_case("FusedGemm", M, 11, 5, 1, 1, 1.0f); /* the fused layer shares the hook */
    }
}

TEST(fused_matmul_prepared) {
    for (int half = 0; half < 2; half++) {
        gwr_dtype dt = half ? GWR_FLOAT16 : GWR_FLOAT32;
        gwr_network *net = gwr_network_new("fmm");
        int64_t da[3] = {2, 3, 10}, db[2] = {4, 10};
        gwr_dim dd[3] = {2, 3, 10};
        gwr_tensor *a = gwr_network_add_input(net, "a", dt, 3, dd), *b = operand_b(net, 1, dt, 2, db);
        gwr_layer *l = gwr_network_add_layer(net, "FusedMatMul", "com.microsoft", "f", 2, (gwr_tensor *[]){a, b}, 1, NULL);
        gwr_layer_set_int(l, "transB", 1);
        gwr_layer_set_float(l, "alpha", 0.25f);
        gwr_network_mark_output(net, gwr_layer_output(l, 0));
        gwr_value *y = run_twice(net, dt, 3, da, 2, db, 1);
        check_product(y, 2, 3, 4, 10, 1, 0.25, 0, 0, 0, half ? 2e-3 : 1e-6);
        gwr_value_release(y);
        gwr_network_free(net);
    }
}

/* One to four rows against a B of 256K values or more: gwr_sgemv_pb over
 * the packed B (five rows: sgemm.c); float16 too, B widened and packed. */
TEST(gemv_rows) {
    for (int64_t M = 1; M <= 5; M++) matmul_case(GWR_FLOAT32, 1, 0, M, 517, 513, 1, 1e-6);
    for (int64_t M = 1; M <= 5; M += 2) matmul_case(GWR_FLOAT16, 1, 0, M, 517, 513, 1, 2e-3);
    matmul_case(GWR_FLOAT32, 0, 3, 1, 33, 7, 0, 1e-6); /* three batch matrices of one row, B an input */
    gemm_case("Gemm", 1, 600, 520, 1, 1, 2.0f);
    gemm_case("Gemm", 2, 520, 600, 1, 1, 1.0f);
}

/* Planning with the n-th allocation failing, for every n until it
 * succeeds: each failure is a clean error with a message (the sanitizer
 * build checks that nothing leaks), the prepare's included. */
static void prepare_oom(gwr_dtype dt, const char *msg) {
    gwr_network *net = gwr_network_new("mm");
    int64_t db[2] = {7, 5};
    gwr_dim dd[2] = {3, 7};
    gwr_tensor *a = gwr_network_add_input(net, "a", dt, 2, dd), *b = operand_b(net, 1, dt, 2, db);
    gwr_layer *l = gwr_network_add_layer(net, "MatMul", "", "mm", 2, (gwr_tensor *[]){a, b}, 1, NULL);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    int prep_failed = 0;
    for (int64_t n = 1; n < 10000; n++) {
        gwr_alloc_hook_arm(n, 0);
        gwr_session *s = gwr_session_new_raw(net, NULL);
        int64_t failed = gwr_alloc_hook_failures();
        gwr_alloc_hook_arm(0, 0);
        if (!failed) {
            CHECK(s != NULL);
            if (s) CHECK_EQ_INT(gwr_session_prepared_layers(s), 1);
            gwr_session_free(s);
            break;
        }
        if (s) { /* an allocation it can do without */
            gwr_session_free(s);
            continue;
        }
        CHECK(*gwr_last_errmsg() != 0);
        prep_failed |= strstr(gwr_last_errmsg(), msg) != NULL;
    }
    CHECK(prep_failed);
    gwr_network_free(net);
}

TEST(prepare_out_of_memory) {
    prepare_oom(GWR_FLOAT16, "preparing B");
    prepare_oom(GWR_FLOAT32, "packing B");
}

/* Gemm with transA over a packed B: A is [K, M], C a bias row. Values are
 * multiples of 1/8, so the float32 sums are exact. */
TEST(gemm_trans_a_packed) {
    int64_t M = 13, K = 300, N = 37, da[2] = {K, M}, db[2] = {K, N}, dc = N;
    gwr_network *net = gwr_network_new("gemm");
    gwr_dim dd[2] = {K, M};
    gwr_tensor *a = gwr_network_add_input(net, "a", GWR_FLOAT32, 2, dd), *b = operand_b(net, 1, GWR_FLOAT32, 2, db);
    gwr_tensor *c = add_const(net, "c", GWR_FLOAT32, 1, &dc, 3);
    gwr_layer *l = gwr_network_add_layer(net, "Gemm", "", "g", 3, (gwr_tensor *[]){a, b, c}, 1, NULL);
    gwr_layer_set_int(l, "transA", 1);
    gwr_layer_set_float(l, "alpha", 0.5f);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    gwr_value *y = run_twice(net, GWR_FLOAT32, 2, da, 2, db, 1);
    double worst = 0;
    for (int64_t m = 0; y && m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double sum = 0;
            for (int64_t q = 0; q < K; q++) sum += val(q * M + m, 1) * val(q * N + n, 2);
            double want = 0.5 * sum + val(n, 3), err = fabs(gwr_value_get_f64(y, m * N + n) - want);
            worst = err > worst ? err : worst;
        }
    CHECK(y != NULL);
    if (!CHECK(worst == 0)) fprintf(stderr, "  worst error %g\n", worst);
    gwr_value_release(y);
    gwr_network_free(net);
}

/* com.microsoft Attention over input [2, 3, 8], constant weights [8, 12]
 * and bias [12], 2 heads: output 0 in float32. */
static gwr_value *attention_run(gwr_dtype dt, int64_t *prepared) {
    gwr_network *net = gwr_network_new("att");
    int64_t dx[3] = {2, 3, 8}, dw[2] = {8, 12}, db = 12;
    gwr_dim dd[3] = {2, 3, 8};
    gwr_tensor *in[3] = {gwr_network_add_input(net, "a", dt, 3, dd), add_const(net, "w", dt, 2, dw, 2),
                         add_const(net, "bias", dt, 1, &db, 3)};
    gwr_layer *l = gwr_network_add_layer(net, "Attention", "com.microsoft", "att", 3, in, 1, NULL);
    gwr_layer_set_int(l, "num_heads", 2);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    gwr_session *s = gwr_session_new_raw(net, NULL);
    gwr_value *x = make_value(dt, 3, dx, 1), *y = NULL, *f = NULL;
    const char *names[1] = {"a"};
    *prepared = s ? gwr_session_prepared_layers(s) : -1;
    if (CHECK(s != NULL) && CHECK_OK(gwr_session_run(s, 1, names, &x, 1, NULL, &y))) {
        f = gwr_value_new(GWR_FLOAT32, 3, dx);
        for (int64_t i = 0; f && i < gwr_value_numel(y); i++) gwr_value_set_f64(f, i, gwr_value_get_f64(y, i));
    }
    gwr_value_release(x), gwr_value_release(y);
    gwr_session_free(s);
    gwr_network_free(net);
    return f;
}

/* Attention's float16 weights are widened once at planning; the result
 * matches the float32 layer (weights read in place, nothing prepared)
 * within float16's rounding of q, k, v and the output. */
TEST(attention_half_weights_prepared) {
    int64_t p32 = -1, p16 = -1;
    gwr_value *a = attention_run(GWR_FLOAT32, &p32), *b = attention_run(GWR_FLOAT16, &p16);
    CHECK_EQ_INT(p32, 0);
    CHECK_EQ_INT(p16, 1);
    double worst = 0;
    for (int64_t i = 0; a && b && i < gwr_value_numel(a); i++) {
        double e = fabs(gwr_value_get_f64(a, i) - gwr_value_get_f64(b, i));
        worst = e > worst ? e : worst;
    }
    if (!CHECK(a && b && worst <= 1e-2)) fprintf(stderr, "  float16 against float32: worst %g\n", worst);
    gwr_value_release(a), gwr_value_release(b);
}

/* ---- the float32 rows of the GELUs and SkipLayerNormalization ---------------------- */

/* Runs one com.microsoft layer over float32 inputs x [R, n] and params
 * (1-D [n], seeds 2, 3, ...), returns output o. */
static gwr_value *run_ms(const char *op, int64_t R, int64_t n, int nparams, int absent, int nout, int o) {
    gwr_network *net = gwr_network_new("ms");
    gwr_dim dx[2] = {R, n};
    int64_t dims[2] = {R, n};
    gwr_tensor *in[6] = {gwr_network_add_input(net, "a", GWR_FLOAT32, 2, dx)};
    for (int i = 1; i <= nparams; i++) {
        char name[8];
        snprintf(name, sizeof name, "p%d", i);
        in[i] = i == absent ? NULL : add_const(net, name, GWR_FLOAT32, i == 1 && nparams > 1 ? 2 : 1, i == 1 && nparams > 1 ? dims : &n, i + 1);
    }
    gwr_layer *l = gwr_network_add_layer(net, op, "com.microsoft", "l", 1 + nparams, in, nout, NULL);
    gwr_layer_set_float(l, "epsilon", 1e-5f);
    gwr_network_mark_output(net, gwr_layer_output(l, o));
    gwr_session *s = gwr_session_new_raw(net, NULL);
    gwr_value *x = make_value(GWR_FLOAT32, 2, dims, 1), *y = NULL;
    const char *names[1] = {"a"};
    if (CHECK(s != NULL) && !CHECK_OK(gwr_session_run(s, 1, names, &x, 1, NULL, &y)))
        fprintf(stderr, "  %s\n", gwr_session_errmsg(s));
    gwr_value_release(x);
    gwr_session_free(s);
    gwr_network_free(net);
    return y;
}

TEST(bias_gelu_rows) {
    /* x/2 (1 + erf(x/sqrt2)) of x + bias, odd widths (the vector loops' tails) */
    for (int64_t n = 1; n <= 67; n += 33) {
        gwr_value *y = run_ms("BiasGelu", 3, n, 1, 0, 1, 0);
        if (!CHECK(y != NULL)) continue;
        double worst = 0;
        for (int64_t i = 0; i < 3 * n; i++) {
            double x = val(i, 1) + val(i % n, 2), e = 0.5 * x * (1 + erf(x / sqrt(2.0)));
            double err = fabs(gwr_value_get_f64(y, i) - e);
            worst = err > worst ? err : worst;
        }
        if (!CHECK(worst <= 1e-6)) fprintf(stderr, "  BiasGelu n %lld: worst %g\n", (long long)n, worst);
        gwr_value_release(y);
    }
}

/* One SkipLayerNormalization of R rows of n (input `absent` left out: 3
 * beta, 4 bias, 0 none) against the definition in double: y = (v - mean)
 * / sqrt(var + eps) * gamma + beta, v = x + skip + bias; output 3 is v
 * itself. The kernel's float sums differ by reassociation only: 2e-6
 * absolute on values of a few units (n <= 300: about 300 roundings of
 * 6e-8 relative each, far less in the sixteen-lane sums). */
static void skip_ln_case(int64_t R, int64_t n, int absent, int o) {
    gwr_value *y = run_ms("SkipLayerNormalization", R, n, 4, absent, 4, o);
    if (!CHECK(y != NULL)) return;
    double worst = 0;
    for (int64_t r = 0; r < R; r++) {
        double v[300], mean = 0, var = 0;
        for (int64_t j = 0; j < n; j++)
            mean += v[j] = val(r * n + j, 1) + val(r * n + j, 2) + (absent == 4 ? 0 : val(j, 5));
        mean /= (double)n;
        for (int64_t j = 0; j < n; j++) var += (v[j] - mean) * (v[j] - mean);
        double inv = 1 / sqrt(var / (double)n + 1e-5);
        for (int64_t j = 0; j < n; j++) {
            double e = o ? v[j] : (v[j] - mean) * inv * val(j, 3) + (absent == 3 ? 0 : val(j, 4));
            double err = fabs(gwr_value_get_f64(y, r * n + j) - e);
            worst = err > worst ? err : worst;
        }
    }
    if (!CHECK(worst <= 2e-6))
        fprintf(stderr, "  SkipLayerNormalization %lld x %lld absent %d output %d: worst %g\n", (long long)R,
                (long long)n, absent, o, worst);
    gwr_value_release(y);
}

TEST(skip_layer_norm_rows) {
    /* row lengths about the sixteen lanes and the tails, rows over the
     * parallel grain (16384 / n + 1) */
    static const int64_t ns[] = {1, 5, 15, 16, 17, 33, 41, 77, 256, 300};
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
        for (int o = 0; o < 4; o += 3) {
            skip_ln_case(4, ns[i], 0, o);
            skip_ln_case(3, ns[i], 4, o);
        }
    skip_ln_case(2, 33, 3, 0);
    skip_ln_case(70, 256, 0, 0);
    skip_ln_case(70, 256, 0, 3);
}

int main(void) {
    RUN(matmul_half_b_prepared);
    RUN(gemm_transposed_b_prepared);
    RUN(fused_matmul_prepared);
    RUN(gemv_rows);
    RUN(prepare_out_of_memory);
    RUN(gemm_trans_a_packed);
    RUN(attention_half_weights_prepared);
    RUN(bias_gelu_rows);
    RUN(skip_layer_norm_rows);
    return check_report();
}
