/* test_exec_conv.c - the linalg, conv and pool kernels (src/exec/kernels/
 * linalg.c, conv.c, pool.c) where ONNX's test data does not reach: values
 * worked out by hand for the edge cases (1-D MatMul operands, batch
 * broadcasting, groups, asymmetric pads, dilations, ceil_mode,
 * count_include_pad, storage_order), a naive reference for the combined
 * cases, and every bad input giving a status and a message naming the
 * problem. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "exec/exec_internal.h"
#include "gwr/gwr.h"

/* ---- harness ------------------------------------------------------------- */

typedef struct attr {
    const char *name;
    char type; /* i f s v */
    int64_t i;
    float f;
    const char *s;
    const int64_t *v;
    int n;
} attr;

#define AI(nm, x) {nm, 'i', x, 0, NULL, NULL, 0}
#define AF(nm, x) {nm, 'f', 0, x, NULL, NULL, 0}
#define AS(nm, x) {nm, 's', 0, 0, x, NULL, 0}
#define AV(nm, ...) {nm, 'v', 0, 0, NULL, (const int64_t[]){__VA_ARGS__}, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))}
#define AEND {NULL, 0, 0, 0, NULL, NULL, 0}

static char last_msg[1024];

/* Runs one layer `op` over in[0..nin) (NULL: absent) with attributes a;
 * the first nused of its nout outputs are network outputs, returned in
 * out. The session's message goes to last_msg. */
static gwr_status run_op(const char *op, int nin, gwr_value *const *in, int nout, int nused, gwr_value **out, const attr *a,
                         int threads) {
    gwr_network *net = gwr_network_new("t");
    gwr_tensor *ts[16] = {0};
    const char *names[16];
    char nb[16][8];
    int nnames = 0;
    for (int i = 0; i < nin; i++) {
        if (!in[i]) continue;
        snprintf(nb[i], sizeof nb[i], "in%d", i);
        ts[i] = gwr_network_add_input(net, nb[i], gwr_value_dtype(in[i]), -1, NULL);
        names[nnames++] = nb[i];
    }
    gwr_layer *l = gwr_network_add_layer(net, op, "", "L", nin, ts, nout, NULL);
    for (; a && a->name; a++) {
        if (a->type == 'i') gwr_layer_set_int(l, a->name, a->i);
        if (a->type == 'f') gwr_layer_set_float(l, a->name, a->f);
        if (a->type == 's') gwr_layer_set_string(l, a->name, a->s);
        if (a->type == 'v') gwr_layer_set_ints(l, a->name, a->v, a->n);
    }
    for (int o = 0; o < nused; o++) gwr_network_mark_output(net, gwr_layer_output(l, o));
    gwr_session_options opt = {.threads = threads};
    gwr_session *s = gwr_session_new_raw(net, &opt);
    gwr_status rc;
    if (!s) {
        rc = GWR_ERR_STATE;
        snprintf(last_msg, sizeof last_msg, "%s", gwr_last_errmsg());
    } else {
        gwr_value *vals[16];
        int nv = 0;
        for (int i = 0; i < nin; i++)
            if (in[i]) vals[nv++] = in[i];
        rc = gwr_session_run(s, nnames, names, vals, nused, NULL, out);
        snprintf(last_msg, sizeof last_msg, "%s", rc ? gwr_session_errmsg(s) : "");
    }
    gwr_session_free(s);
    gwr_network_free(net);
    return rc;
}

static gwr_status run1(const char *op, int nin, gwr_value *const *in, gwr_value **y, const attr *a) {
    *y = NULL;
    return run_op(op, nin, in, 1, 1, y, a, 1);
}

/* A value of dtype dt and shape dims holding vals (converted). */
static gwr_value *mk(gwr_dtype dt, int rank, const int64_t *dims, const double *vals) {
    gwr_value *v = gwr_value_new(dt, rank, dims);
    for (int64_t i = 0; v && vals && i < gwr_value_numel(v); i++) gwr_v_set_f64(v, i, vals[i]);
    return v;
}
#define DIMS(...) (const int64_t[]){__VA_ARGS__}
#define VALS(...) (const double[]){__VA_ARGS__}
#define F32(rank, dims, vals) mk(GWR_FLOAT32, rank, dims, vals)

/* A float32 value of shape dims with pseudo-random entries in [-1, 1). */
static unsigned rng = 12345;
static gwr_value *rnd(int rank, const int64_t *dims) {
    gwr_value *v = gwr_value_new(GWR_FLOAT32, rank, dims);
    float *p = gwr_value_data(v);
    for (int64_t i = 0; i < gwr_value_numel(v); i++) {
        rng = rng * 1103515245u + 12345u;
        p[i] = (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    return v;
}

/* y has shape dims and values want (within tol relative + absolute). */
static int same(const gwr_value *y, int rank, const int64_t *dims, const double *want, double tol) {
    if (!y) return 0;
    if (gwr_value_rank(y) != rank) {
        fprintf(stderr, "  rank %d, expected %d\n", gwr_value_rank(y), rank);
        return 0;
    }
    for (int i = 0; i < rank; i++)
        if (gwr_value_dims(y)[i] != dims[i]) {
            fprintf(stderr, "  dim %d is %lld, expected %lld\n", i, (long long)gwr_value_dims(y)[i], (long long)dims[i]);
            return 0;
        }
    for (int64_t i = 0; i < gwr_value_numel(y); i++) {
        double g = gwr_value_get_f64(y, i);
        if (!(fabs(g - want[i]) <= tol * (1 + fabs(want[i])))) {
            fprintf(stderr, "  element %lld is %g, expected %g\n", (long long)i, g, want[i]);
            return 0;
        }
    }
    return 1;
}

/* Runs op and checks the single output against dims / want. */
static int expect(const char *op, int nin, gwr_value *const *in, const attr *a, int rank, const int64_t *dims, const double *want) {
    gwr_value *y;
    gwr_status rc = run1(op, nin, in, &y, a);
    if (rc) fprintf(stderr, "  %s failed: %s\n", op, last_msg);
    int ok = !rc && same(y, rank, dims, want, 1e-5);
    gwr_value_release(y);
    return ok;
}

/* Runs op expecting status st and a message containing msg. */
static int expect_fail(const char *op, int nin, gwr_value *const *in, const attr *a, gwr_status st, const char *msg) {
    gwr_value *y;
    gwr_status rc = run1(op, nin, in, &y, a);
    gwr_value_release(y);
    int ok = rc == st && strstr(last_msg, msg) && strstr(last_msg, "layer 'L'");
    if (!ok) fprintf(stderr, "  status %d (%s), expected %d with \"%s\"\n", rc, last_msg, st, msg);
    return ok;
}

static void release_all(gwr_value **v, int n) {
    for (int i = 0; i < n; i++) gwr_value_release(v[i]);
}

/* ---- MatMul -------------------------------------------------------------- */

/* Naive NumPy matmul of float32 values of rank >= 2 (batch broadcast). */
static void ref_matmul(const gwr_value *a, const gwr_value *b, int orank, const int64_t *od, double *out) {
    int ra = gwr_value_rank(a), rb = gwr_value_rank(b);
    const int64_t *ad = gwr_value_dims(a), *bd = gwr_value_dims(b);
    int64_t M = ad[ra - 2], K = ad[ra - 1], N = bd[rb - 1], batch = 1;
    for (int i = 0; i < orank - 2; i++) batch *= od[i];
    const float *A = gwr_value_cdata(a), *B = gwr_value_cdata(b);
    for (int64_t t = 0; t < batch; t++) {
        /* the batch index, read back into each operand (size-1 dims repeat) */
        int64_t ao = 0, bo = 0, rem = t, am = 1, bm = 1;
        for (int d = orank - 3; d >= 0; d--) {
            int64_t c = rem % od[d];
            rem /= od[d];
            int ia = d - (orank - ra), ib = d - (orank - rb);
            if (ia >= 0) ao += (ad[ia] == 1 ? 0 : c) * am, am *= ad[ia];
            if (ib >= 0) bo += (bd[ib] == 1 ? 0 : c) * bm, bm *= bd[ib];
        }
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = 0;
                for (int64_t q = 0; q < K; q++) s += (double)A[ao * M * K + i * K + q] * B[bo * K * N + q * N + j];
                out[(t * M + i) * N + j] = s;
            }
    }
}

static void matmul_case(int ra, const int64_t *ad, int rb, const int64_t *bd, int orank, const int64_t *od) {
    gwr_value *in[2] = {rnd(ra, ad), rnd(rb, bd)};
    int64_t n = 1;
    for (int i = 0; i < orank; i++) n *= od[i];
    double *want = malloc((size_t)n * sizeof *want);
    ref_matmul(in[0], in[1], orank, od, want);
    CHECK(expect("MatMul", 2, in, NULL, orank, od, want));
    free(want);
    release_all(in, 2);
}

TEST(matmul_batch_broadcast) {
    matmul_case(4, DIMS(2, 1, 2, 3), 3, DIMS(3, 3, 2), 4, DIMS(2, 3, 2, 2)); /* both broadcast */
    matmul_case(3, DIMS(2, 3, 4), 2, DIMS(4, 5), 3, DIMS(2, 3, 5));          /* one matrix B: folded */
    matmul_case(3, DIMS(1, 3, 4), 3, DIMS(2, 4, 5), 3, DIMS(2, 3, 5));       /* A repeated */
    matmul_case(2, DIMS(3, 4), 4, DIMS(2, 2, 4, 1), 4, DIMS(2, 2, 3, 1));
    /* hand-checked: [[1,2],[3,4]] x [[5],[6]] per batch, B batch of 2 */
    gwr_value *in[2] = {F32(2, DIMS(2, 2), VALS(1, 2, 3, 4)), F32(3, DIMS(2, 2, 1), VALS(5, 6, 1, 0))};
    CHECK(expect("MatMul", 2, in, NULL, 3, DIMS(2, 2, 1), VALS(17, 39, 1, 3)));
    release_all(in, 2);
}

TEST(matmul_1d_operands) {
    gwr_value *a = F32(1, DIMS(3), VALS(1, 2, 3)), *b = F32(1, DIMS(3), VALS(4, 5, 6));
    gwr_value *in[2] = {a, b};
    CHECK(expect("MatMul", 2, in, NULL, 0, NULL, VALS(32))); /* vector . vector: a scalar */
    gwr_value *m = F32(2, DIMS(2, 3), VALS(1, 0, 0, 0, 1, 1));
    in[0] = m, in[1] = b;
    CHECK(expect("MatMul", 2, in, NULL, 1, DIMS(2), VALS(4, 11))); /* matrix . vector */
    gwr_value *bb = F32(3, DIMS(2, 3, 1), VALS(1, 1, 1, 0, 0, 2));
    in[0] = a, in[1] = bb;
    CHECK(expect("MatMul", 2, in, NULL, 2, DIMS(2, 1), VALS(6, 6))); /* vector . batched matrices */
    gwr_value_release(a), gwr_value_release(b), gwr_value_release(m), gwr_value_release(bb);
}

TEST(matmul_dtypes) {
    gwr_value *in[2] = {mk(GWR_INT64, 2, DIMS(1, 2), VALS(3, -2)), mk(GWR_INT64, 2, DIMS(2, 1), VALS(5, 7))};
    CHECK(expect("MatMul", 2, in, NULL, 2, DIMS(1, 1), VALS(1)));
    release_all(in, 2);
    in[0] = mk(GWR_INT32, 2, DIMS(1, 1), VALS(65536)), in[1] = mk(GWR_INT32, 2, DIMS(1, 1), VALS(65537));
    CHECK(expect("MatMul", 2, in, NULL, 2, DIMS(1, 1), VALS(65536))); /* 2^32 + 2^16 wraps */
    release_all(in, 2);
    in[0] = mk(GWR_FLOAT16, 2, DIMS(1, 2), VALS(0.5, 2)), in[1] = mk(GWR_FLOAT16, 2, DIMS(2, 2), VALS(2, 4, 1.5, -1));
    CHECK(expect("MatMul", 2, in, NULL, 2, DIMS(1, 2), VALS(4, 0)));
    release_all(in, 2);
    in[0] = mk(GWR_FLOAT64, 1, DIMS(2), VALS(0.5, 2)), in[1] = mk(GWR_FLOAT64, 1, DIMS(2), VALS(3, 0.25));
    CHECK(expect("MatMul", 2, in, NULL, 0, NULL, VALS(2)));
    release_all(in, 2);
    /* empty inner dim: zeros */
    in[0] = F32(2, DIMS(2, 0), NULL), in[1] = F32(2, DIMS(0, 3), NULL);
    CHECK(expect("MatMul", 2, in, NULL, 2, DIMS(2, 3), VALS(0, 0, 0, 0, 0, 0)));
    release_all(in, 2);
}

TEST(matmul_errors) {
    gwr_value *in[2] = {F32(2, DIMS(2, 3), NULL), F32(2, DIMS(2, 3), NULL)};
    CHECK(expect_fail("MatMul", 2, in, NULL, GWR_ERR_INVALID_ARG, "inner dims differ: A has 3 columns, B has 2 rows"));
    release_all(in, 2);
    in[0] = F32(3, DIMS(2, 2, 3), NULL), in[1] = F32(3, DIMS(3, 3, 2), NULL);
    CHECK(expect_fail("MatMul", 2, in, NULL, GWR_ERR_INVALID_ARG, "batch dims of A and B do not broadcast"));
    release_all(in, 2);
    in[0] = F32(0, NULL, NULL), in[1] = F32(1, DIMS(1), NULL);
    CHECK(expect_fail("MatMul", 2, in, NULL, GWR_ERR_INVALID_ARG, "rank 1 or more"));
    release_all(in, 2);
    in[0] = F32(1, DIMS(2), NULL), in[1] = mk(GWR_FLOAT64, 1, DIMS(2), NULL);
    CHECK(expect_fail("MatMul", 2, in, NULL, GWR_ERR_INVALID_ARG, "A is float32 but B is float64"));
    release_all(in, 2);
    in[0] = mk(GWR_INT8, 1, DIMS(2), NULL), in[1] = mk(GWR_INT8, 1, DIMS(2), NULL);
    CHECK(expect_fail("MatMul", 2, in, NULL, GWR_ERR_UNSUPPORTED, "dtype int8"));
    release_all(in, 2);
    in[0] = F32(1, DIMS(2), NULL), in[1] = NULL;
    CHECK(expect_fail("MatMul", 2, in, NULL, GWR_ERR_INVALID_ARG, "input B is missing"));
    gwr_value_release(in[0]);
}

TEST(matmul_integer) {
    /* (a - 1) (b - 2): [[2,3]] - 1 = [1,2]; [[3],[4]] - 2 = [1,2] -> 5 */
    gwr_value *in[4] = {mk(GWR_UINT8, 2, DIMS(1, 2), VALS(2, 3)), mk(GWR_INT8, 2, DIMS(2, 1), VALS(3, 4)), mk(GWR_UINT8, 0, NULL, VALS(1)),
                        mk(GWR_INT8, 0, NULL, VALS(2))};
    gwr_value *y;
    if (CHECK_OK(run1("MatMulInteger", 4, in, &y, NULL))) {
        CHECK(gwr_value_dtype(y) == GWR_INT32);
        CHECK(same(y, 2, DIMS(1, 1), VALS(5), 0));
    }
    gwr_value_release(y);
    gwr_value_release(in[3]);
    in[3] = mk(GWR_INT8, 1, DIMS(3), VALS(1, 2, 3)); /* neither a scalar nor one per column */
    CHECK(expect_fail("MatMulInteger", 4, in, NULL, GWR_ERR_INVALID_ARG, "b_zero_point must be a scalar or a 1-D tensor of 1 elements"));
    release_all(in, 4);
}

/* ---- Gemm ---------------------------------------------------------------- */

TEST(gemm_attributes) {
    /* 2 A I + 0.5 C */
    gwr_value *a = F32(2, DIMS(2, 2), VALS(1, 2, 3, 4)), *at = F32(2, DIMS(2, 2), VALS(1, 3, 2, 4));
    gwr_value *id = F32(2, DIMS(2, 2), VALS(1, 0, 0, 1)), *crow = F32(1, DIMS(2), VALS(10, 20)), *ccol = F32(2, DIMS(2, 1), VALS(10, 20));
    attr ab[] = {AF("alpha", 2), AF("beta", 0.5f), AEND};
    gwr_value *in[3] = {a, id, crow};
    CHECK(expect("Gemm", 3, in, ab, 2, DIMS(2, 2), VALS(7, 14, 11, 18)));
    in[2] = ccol;
    CHECK(expect("Gemm", 3, in, ab, 2, DIMS(2, 2), VALS(7, 9, 16, 18)));
    attr tt[] = {AF("alpha", 2), AF("beta", 0.5f), AI("transA", 1), AI("transB", 1), AEND};
    in[0] = at, in[2] = crow;
    CHECK(expect("Gemm", 3, in, tt, 2, DIMS(2, 2), VALS(7, 14, 11, 18)));
    /* no C; B transposed for real */
    gwr_value *b = F32(2, DIMS(3, 2), VALS(1, 0, 0, 1, 1, 1));
    attr tb[] = {AI("transB", 1), AEND};
    in[0] = a, in[1] = b;
    CHECK(expect("Gemm", 2, in, tb, 2, DIMS(2, 3), VALS(1, 2, 3, 3, 4, 7)));
    /* float64 and int32 */
    gwr_value *in2[3] = {mk(GWR_FLOAT64, 2, DIMS(1, 1), VALS(3)), mk(GWR_FLOAT64, 2, DIMS(1, 1), VALS(4)), mk(GWR_FLOAT64, 0, NULL, VALS(1))};
    CHECK(expect("Gemm", 3, in2, NULL, 2, DIMS(1, 1), VALS(13)));
    release_all(in2, 3);
    gwr_value *in3[3] = {mk(GWR_INT32, 2, DIMS(1, 2), VALS(3, 1)), mk(GWR_INT32, 2, DIMS(2, 1), VALS(4, -5)), mk(GWR_INT32, 1, DIMS(1), VALS(100))};
    CHECK(expect("Gemm", 3, in3, NULL, 2, DIMS(1, 1), VALS(107)));
    release_all(in3, 3);
    /* errors */
    gwr_value *c3 = F32(1, DIMS(3), NULL);
    in[0] = a, in[1] = id, in[2] = c3;
    CHECK(expect_fail("Gemm", 3, in, NULL, GWR_ERR_INVALID_ARG, "does not broadcast to [2, 2]"));
    in[1] = b;
    CHECK(expect_fail("Gemm", 2, in, NULL, GWR_ERR_INVALID_ARG, "inner dims differ"));
    in[1] = crow;
    CHECK(expect_fail("Gemm", 2, in, NULL, GWR_ERR_INVALID_ARG, "must be 2-D"));
    gwr_value_release(c3);
    gwr_value *g[] = {a, at, id, crow, ccol, b};
    release_all(g, 6);
}

/* ---- Conv ---------------------------------------------------------------- */

/* Direct 2-D convolution, the definition. */
static void ref_conv2d(const float *x, const float *w, const float *b, double *y, int N, int C, int H, int W, int M, int G, int KH, int KW,
                       int sh, int sw, int dh, int dw, int pt, int pl, int OH, int OW) {
    int Cg = C / G, Mg = M / G;
    for (int n = 0; n < N; n++)
        for (int m = 0; m < M; m++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    double s = b ? b[m] : 0;
                    int g = m / Mg;
                    for (int c = 0; c < Cg; c++)
                        for (int kh = 0; kh < KH; kh++)
                            for (int kw = 0; kw < KW; kw++) {
                                int ih = oh * sh - pt + kh * dh, iw = ow * sw - pl + kw * dw;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                s += (double)x[((n * C + g * Cg + c) * H + ih) * W + iw] * w[((m * Cg + c) * KH + kh) * KW + kw];
                            }
                    y[((n * M + m) * OH + oh) * OW + ow] = s;
                }
}

TEST(conv_hand) {
    /* groups: two channels each, 1x1 */
    gwr_value *in[3] = {F32(4, DIMS(1, 4, 1, 1), VALS(1, 2, 3, 4)), F32(4, DIMS(2, 2, 1, 1), VALS(1, 10, 100, 1000)),
                        F32(1, DIMS(2), VALS(0.5, -1))};
    attr g2[] = {AI("group", 2), AEND};
    CHECK(expect("Conv", 3, in, g2, 4, DIMS(1, 2, 1, 1), VALS(21.5, 4299)));
    release_all(in, 3);
    /* asymmetric pads on a row: pairwise sums */
    in[0] = F32(4, DIMS(1, 1, 1, 3), VALS(1, 2, 3)), in[1] = F32(4, DIMS(1, 1, 1, 2), VALS(1, 1));
    attr p1[] = {AV("pads", 0, 1, 0, 0), AEND};
    CHECK(expect("Conv", 2, in, p1, 4, DIMS(1, 1, 1, 3), VALS(1, 3, 5)));
    attr p2[] = {AV("pads", 0, 0, 0, 2), AEND};
    CHECK(expect("Conv", 2, in, p2, 4, DIMS(1, 1, 1, 4), VALS(3, 5, 3, 0)));
    attr p3[] = {AV("pads", 0, 1, 0, 2), AV("strides", 1, 2), AEND};
    CHECK(expect("Conv", 2, in, p3, 4, DIMS(1, 1, 1, 3), VALS(1, 5, 0)));
    attr su[] = {AS("auto_pad", "SAME_UPPER"), AEND}, sl[] = {AS("auto_pad", "SAME_LOWER"), AEND};
    CHECK(expect("Conv", 2, in, su, 4, DIMS(1, 1, 1, 3), VALS(3, 5, 3)));
    CHECK(expect("Conv", 2, in, sl, 4, DIMS(1, 1, 1, 3), VALS(1, 3, 5)));
    release_all(in, 2);
    /* dilation 2 along W: x[i] + 10 x[i + 2] */
    in[0] = F32(4, DIMS(1, 1, 1, 5), VALS(1, 2, 3, 4, 5)), in[1] = F32(4, DIMS(1, 1, 1, 2), VALS(1, 10));
    attr d2[] = {AV("dilations", 1, 2), AEND};
    CHECK(expect("Conv", 2, in, d2, 4, DIMS(1, 1, 1, 3), VALS(31, 42, 53)));
    release_all(in, 2);
    /* 1-D and 3-D */
    in[0] = F32(3, DIMS(1, 1, 4), VALS(1, 2, 3, 4)), in[1] = F32(3, DIMS(1, 1, 2), VALS(1, -1));
    CHECK(expect("Conv", 2, in, NULL, 3, DIMS(1, 1, 3), VALS(-1, -1, -1)));
    release_all(in, 2);
    in[0] = F32(5, DIMS(1, 1, 2, 2, 2), VALS(1, 2, 3, 4, 5, 6, 7, 8)), in[1] = F32(5, DIMS(1, 1, 2, 1, 1), VALS(1, 1));
    CHECK(expect("Conv", 2, in, NULL, 5, DIMS(1, 1, 1, 2, 2), VALS(6, 8, 10, 12)));
    release_all(in, 2);
}

static void conv_vs_ref(int N, int C, int H, int W, int M, int G, int KH, int KW, int sh, int sw, int dh, int dw, int pt, int pl, int pb,
                        int pr, int bias, int threads) {
    int OH = (H + pt + pb - ((KH - 1) * dh + 1)) / sh + 1, OW = (W + pl + pr - ((KW - 1) * dw + 1)) / sw + 1;
    gwr_value *in[3] = {rnd(4, DIMS(N, C, H, W)), rnd(4, DIMS(M, C / G, KH, KW)), bias ? rnd(1, DIMS(M)) : NULL};
    double *want = malloc((size_t)(N * M * OH * OW) * sizeof *want);
    ref_conv2d(gwr_value_cdata(in[0]), gwr_value_cdata(in[1]), bias ? gwr_value_cdata(in[2]) : NULL, want, N, C, H, W, M, G, KH, KW, sh, sw,
               dh, dw, pt, pl, OH, OW);
    attr a[] = {AI("group", G), AV("strides", sh, sw), AV("dilations", dh, dw), AV("pads", pt, pl, pb, pr), AEND};
    gwr_value *y = NULL;
    gwr_status rc = run_op("Conv", bias ? 3 : 2, in, 1, 1, &y, a, threads);
    if (rc) fprintf(stderr, "  %s\n", last_msg);
    CHECK(!rc && same(y, 4, DIMS(N, M, OH, OW), want, 1e-4));
    gwr_value_release(y);
    free(want);
    release_all(in, 3);
}

TEST(conv_vs_reference) {
    conv_vs_ref(2, 4, 7, 6, 6, 2, 3, 2, 2, 1, 2, 1, 1, 0, 0, 2, 1, 1); /* groups, strides, dilations, asymmetric pads */
    conv_vs_ref(1, 3, 9, 9, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1); /* depthwise */
    conv_vs_ref(1, 8, 5, 5, 4, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1); /* 1x1: no im2col */
    conv_vs_ref(1, 8, 5, 5, 4, 1, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 1, 1); /* 1x1 strided */
    conv_vs_ref(2, 16, 12, 12, 32, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2); /* two threads */
}

TEST(conv_dtypes) {
    gwr_value *in[2] = {mk(GWR_FLOAT64, 3, DIMS(1, 1, 3), VALS(1, 2, 3)), mk(GWR_FLOAT64, 3, DIMS(1, 1, 2), VALS(0.5, 0.25))};
    CHECK(expect("Conv", 2, in, NULL, 3, DIMS(1, 1, 2), VALS(1, 1.75)));
    release_all(in, 2);
    in[0] = mk(GWR_FLOAT16, 3, DIMS(1, 1, 3), VALS(1, 2, 3)), in[1] = mk(GWR_FLOAT16, 3, DIMS(1, 1, 2), VALS(0.5, 0.25));
    CHECK(expect("Conv", 2, in, NULL, 3, DIMS(1, 1, 2), VALS(1, 1.75)));
    release_all(in, 2);
    /* ConvInteger: (x - 1) * (w - 2) with a per-channel w zero point */
    gwr_value *q[4] = {mk(GWR_UINT8, 3, DIMS(1, 1, 2), VALS(3, 5)), mk(GWR_INT8, 3, DIMS(2, 1, 1), VALS(4, -1)), mk(GWR_UINT8, 0, NULL, VALS(1)),
                       mk(GWR_INT8, 1, DIMS(2), VALS(2, -3))};
    gwr_value *y;
    if (CHECK_OK(run1("ConvInteger", 4, q, &y, NULL))) {
        CHECK(gwr_value_dtype(y) == GWR_INT32);
        CHECK(same(y, 3, DIMS(1, 2, 2), VALS(4, 8, 4, 8), 0));
    }
    gwr_value_release(y);
    release_all(q, 4);
}

TEST(conv_errors) {
    gwr_value *x = F32(4, DIMS(1, 3, 4, 4), NULL), *w = F32(4, DIMS(2, 3, 3, 3), NULL), *w2 = F32(4, DIMS(2, 2, 3, 3), NULL);
    gwr_value *big = F32(4, DIMS(1, 3, 5, 5), NULL), *b3 = F32(1, DIMS(3), NULL), *x2 = F32(2, DIMS(1, 3), NULL);
    gwr_value *in[3] = {x, w, NULL};
    attr g2[] = {AI("group", 2), AEND};
    CHECK(expect_fail("Conv", 2, in, g2, GWR_ERR_INVALID_ARG, "3 input channels are not divisible by group 2"));
    in[1] = w2;
    CHECK(expect_fail("Conv", 2, in, NULL, GWR_ERR_INVALID_ARG, "W has 2 channels per group"));
    in[1] = big;
    CHECK(expect_fail("Conv", 2, in, NULL, GWR_ERR_INVALID_ARG, "kernel extent 5 is larger than the padded input 4"));
    in[1] = w;
    attr ks[] = {AV("kernel_shape", 2, 2), AEND};
    CHECK(expect_fail("Conv", 2, in, ks, GWR_ERR_INVALID_ARG, "kernel_shape[0] = 2 but the weights have 3"));
    attr dl[] = {AV("dilations", 3, 1), AEND};
    CHECK(expect_fail("Conv", 2, in, dl, GWR_ERR_INVALID_ARG, "kernel extent 7 is larger than the padded input 4"));
    attr st[] = {AV("strides", 1), AEND};
    CHECK(expect_fail("Conv", 2, in, st, GWR_ERR_INVALID_ARG, "strides has 1 values, expected 2"));
    attr zs[] = {AV("strides", 0, 1), AEND};
    CHECK(expect_fail("Conv", 2, in, zs, GWR_ERR_INVALID_ARG, "strides[0] = 0 is out of range"));
    attr np[] = {AV("pads", -1, 0, 0, 0), AEND};
    CHECK(expect_fail("Conv", 2, in, np, GWR_ERR_INVALID_ARG, "pads[0] = -1 is out of range"));
    attr ap[] = {AS("auto_pad", "SAME"), AEND};
    CHECK(expect_fail("Conv", 2, in, ap, GWR_ERR_INVALID_ARG, "auto_pad 'SAME' is not"));
    in[2] = b3;
    CHECK(expect_fail("Conv", 3, in, NULL, GWR_ERR_INVALID_ARG, "B must have shape [2]"));
    in[2] = NULL, in[0] = x2;
    CHECK(expect_fail("Conv", 2, in, NULL, GWR_ERR_INVALID_ARG, "X has rank 2"));
    in[0] = x, in[1] = NULL;
    CHECK(expect_fail("Conv", 2, in, NULL, GWR_ERR_INVALID_ARG, "input W is missing"));
    gwr_value *wd = mk(GWR_FLOAT64, 4, DIMS(2, 3, 3, 3), NULL);
    in[1] = wd;
    CHECK(expect_fail("Conv", 2, in, NULL, GWR_ERR_INVALID_ARG, "X is float32 but W is float64"));
    gwr_value *xi = mk(GWR_INT32, 4, DIMS(1, 3, 4, 4), NULL), *wi = mk(GWR_INT32, 4, DIMS(2, 3, 3, 3), NULL);
    in[0] = xi, in[1] = wi;
    CHECK(expect_fail("Conv", 2, in, NULL, GWR_ERR_UNSUPPORTED, "dtype int32 is not supported"));
    gwr_value *x6 = F32(6, DIMS(1, 1, 1, 1, 1, 1), NULL), *w6 = F32(6, DIMS(1, 1, 1, 1, 1, 1), NULL);
    in[0] = x6, in[1] = w6;
    CHECK(expect_fail("Conv", 2, in, NULL, GWR_ERR_UNSUPPORTED, "1 to 3 spatial dims"));
    /* ConvTranspose */
    in[0] = x, in[1] = w2;
    CHECK(expect_fail("ConvTranspose", 2, in, NULL, GWR_ERR_INVALID_ARG, "W dim 0 is 2, X has 3 channels"));
    in[1] = w;
    gwr_value *wt = F32(4, DIMS(3, 1, 3, 3), NULL);
    in[1] = wt;
    attr bigpad[] = {AV("pads", 3, 3, 3, 3), AEND};
    CHECK(expect_fail("ConvTranspose", 2, in, bigpad, GWR_ERR_INVALID_ARG, "output spatial dim 0 would be"));
    attr osl[] = {AV("output_shape", 1, 2, 3), AEND};
    CHECK(expect_fail("ConvTranspose", 2, in, osl, GWR_ERR_INVALID_ARG, "output_shape has 3 values"));
    gwr_value *all[] = {x, w, w2, big, b3, x2, wd, xi, wi, x6, w6, wt};
    release_all(all, 12);
}

TEST(conv_transpose_hand) {
    gwr_value *in[3] = {F32(3, DIMS(1, 1, 2), VALS(1, 2)), F32(3, DIMS(1, 1, 3), VALS(1, 10, 100)), NULL};
    attr s2[] = {AV("strides", 2), AEND};
    CHECK(expect("ConvTranspose", 2, in, s2, 3, DIMS(1, 1, 5), VALS(1, 10, 102, 20, 200)));
    attr op[] = {AV("strides", 2), AV("output_padding", 1), AEND};
    CHECK(expect("ConvTranspose", 2, in, op, 3, DIMS(1, 1, 6), VALS(1, 10, 102, 20, 200, 0)));
    attr pd[] = {AV("strides", 2), AV("pads", 1, 1), AEND};
    CHECK(expect("ConvTranspose", 2, in, pd, 3, DIMS(1, 1, 3), VALS(10, 102, 20)));
    attr os[] = {AV("strides", 2), AV("output_shape", 6), AEND}; /* total padding -1: an extra zero at the end */
    CHECK(expect("ConvTranspose", 2, in, os, 3, DIMS(1, 1, 6), VALS(1, 10, 102, 20, 200, 0)));
    attr os4[] = {AV("strides", 2), AV("output_shape", 4), AEND}; /* total 1: cut at the start */
    CHECK(expect("ConvTranspose", 2, in, os4, 3, DIMS(1, 1, 4), VALS(10, 102, 20, 200)));
    attr dl[] = {AV("dilations", 2), AEND};
    CHECK(expect("ConvTranspose", 2, in, dl, 3, DIMS(1, 1, 6), VALS(1, 2, 10, 20, 100, 200)));
    in[2] = F32(1, DIMS(1), VALS(0.5));
    CHECK(expect("ConvTranspose", 3, in, s2, 3, DIMS(1, 1, 5), VALS(1.5, 10.5, 102.5, 20.5, 200.5)));
    release_all(in, 3);
    /* groups: each channel scaled by its own weight */
    in[0] = F32(3, DIMS(1, 2, 1), VALS(1, 2)), in[1] = F32(3, DIMS(2, 1, 1), VALS(3, 5)), in[2] = NULL;
    attr g2[] = {AI("group", 2), AEND};
    CHECK(expect("ConvTranspose", 2, in, g2, 3, DIMS(1, 2, 1), VALS(3, 10)));
    release_all(in, 2);
    /* 2-D: 1x1 kernel, stride 1 (the direct path), two output channels */
    in[0] = F32(4, DIMS(1, 2, 1, 2), VALS(1, 2, 3, 4)), in[1] = F32(4, DIMS(2, 2, 1, 1), VALS(1, 0, 0, 1));
    CHECK(expect("ConvTranspose", 2, in, NULL, 4, DIMS(1, 2, 1, 2), VALS(1, 2, 3, 4)));
    release_all(in, 2);
}

/* ConvTranspose is the adjoint of Conv with the same attributes:
 * <Conv(x, w), u> = <x, ConvTranspose(u, w)>, output_padding making up
 * what the stride dropped. Covers groups, strides, dilations and
 * asymmetric pads of ConvTranspose against the checked Conv. */
static void adjoint_case(int C, int H, int W, int M, int G, int KH, int KW, int sh, int sw, int dh, int dw, int pt, int pl, int pb, int pr) {
    int OH = (H + pt + pb - ((KH - 1) * dh + 1)) / sh + 1, OW = (W + pl + pr - ((KW - 1) * dw + 1)) / sw + 1;
    int oph = (H + pt + pb - ((KH - 1) * dh + 1)) % sh, opw = (W + pl + pr - ((KW - 1) * dw + 1)) % sw;
    gwr_value *x = rnd(4, DIMS(2, C, H, W)), *w = rnd(4, DIMS(M, C / G, KH, KW)), *u = rnd(4, DIMS(2, M, OH, OW));
    attr a[] = {AI("group", G), AV("strides", sh, sw), AV("dilations", dh, dw), AV("pads", pt, pl, pb, pr), AEND};
    attr at[] = {AI("group", G), AV("strides", sh, sw), AV("dilations", dh, dw), AV("pads", pt, pl, pb, pr), AV("output_padding", oph, opw), AEND};
    gwr_value *in[2] = {x, w}, *y = NULL, *z = NULL;
    CHECK_OK(run1("Conv", 2, in, &y, a));
    in[0] = u;
    CHECK_OK(run1("ConvTranspose", 2, in, &z, at));
    if (CHECK(y && z && gwr_value_numel(y) == gwr_value_numel(u) && gwr_value_numel(z) == gwr_value_numel(x))) {
        double l = 0, r = 0;
        const float *yp = gwr_value_cdata(y), *up = gwr_value_cdata(u), *xp = gwr_value_cdata(x), *zp = gwr_value_cdata(z);
        for (int64_t i = 0; i < gwr_value_numel(y); i++) l += (double)yp[i] * up[i];
        for (int64_t i = 0; i < gwr_value_numel(x); i++) r += (double)xp[i] * zp[i];
        if (!CHECK(fabs(l - r) <= 1e-4 * (1 + fabs(l)))) fprintf(stderr, "  <Conv x, u> = %g, <x, ConvT u> = %g\n", l, r);
    }
    gwr_value *all[] = {x, w, u, y, z};
    release_all(all, 5);
}

TEST(conv_transpose_adjoint) {
    adjoint_case(4, 7, 6, 6, 2, 3, 2, 2, 1, 2, 1, 1, 0, 0, 2);
    adjoint_case(3, 8, 9, 3, 3, 3, 3, 2, 3, 1, 1, 1, 1, 2, 0);
    adjoint_case(2, 5, 5, 4, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0); /* 1x1: the direct path */
    adjoint_case(6, 10, 4, 4, 2, 4, 1, 3, 1, 2, 1, 2, 0, 1, 0);
}

/* ---- pooling ------------------------------------------------------------- */

TEST(maxpool_ceil_dilation_indices) {
    gwr_value *x = F32(3, DIMS(1, 1, 5), VALS(1, 5, 2, 4, 3)), *y[2] = {NULL, NULL};
    attr c1[] = {AV("kernel_shape", 2), AV("strides", 2), AI("ceil_mode", 1), AEND};
    if (CHECK_OK(run_op("MaxPool", 1, &x, 2, 2, y, c1, 1))) {
        CHECK(same(y[0], 3, DIMS(1, 1, 3), VALS(5, 4, 3), 0));
        CHECK(same(y[1], 3, DIMS(1, 1, 3), VALS(1, 3, 4), 0));
    }
    release_all(y, 2);
    attr c0[] = {AV("kernel_shape", 2), AV("strides", 2), AEND};
    CHECK(expect("MaxPool", 1, &x, c0, 3, DIMS(1, 1, 2), VALS(5, 4)));
    /* a last window that would start in the end padding is dropped */
    attr cd[] = {AV("kernel_shape", 2), AV("strides", 2), AV("pads", 0, 2), AI("ceil_mode", 1), AEND};
    CHECK(expect("MaxPool", 1, &x, cd, 3, DIMS(1, 1, 3), VALS(5, 4, 3)));
    attr dl[] = {AV("kernel_shape", 2), AV("dilations", 2), AEND};
    CHECK(expect("MaxPool", 1, &x, dl, 3, DIMS(1, 1, 3), VALS(2, 5, 3)));
    attr pd[] = {AV("kernel_shape", 3), AV("pads", 1, 1), AV("strides", 2), AEND};
    CHECK(expect("MaxPool", 1, &x, pd, 3, DIMS(1, 1, 3), VALS(5, 5, 4)));
    gwr_value_release(x);
    /* storage_order: row-major vs column-major indices, over the batch */
    x = F32(4, DIMS(2, 1, 2, 3), VALS(1, 2, 9, 4, 6, 5, 1, 2, 9, 4, 6, 5));
    attr r0[] = {AV("kernel_shape", 2, 2), AEND}, r1[] = {AV("kernel_shape", 2, 2), AI("storage_order", 1), AEND};
    if (CHECK_OK(run_op("MaxPool", 1, &x, 2, 2, y, r0, 1))) {
        CHECK(same(y[0], 4, DIMS(2, 1, 1, 2), VALS(6, 9, 6, 9), 0));
        CHECK(same(y[1], 4, DIMS(2, 1, 1, 2), VALS(4, 2, 10, 8), 0));
    }
    release_all(y, 2);
    if (CHECK_OK(run_op("MaxPool", 1, &x, 2, 2, y, r1, 1))) CHECK(same(y[1], 4, DIMS(2, 1, 1, 2), VALS(3, 4, 9, 10), 0));
    release_all(y, 2);
    /* Indices unread: not needed */
    y[0] = NULL;
    CHECK_OK(run_op("MaxPool", 1, &x, 2, 1, y, r0, 1));
    CHECK(same(y[0], 4, DIMS(2, 1, 1, 2), VALS(6, 9, 6, 9), 0));
    gwr_value_release(y[0]);
    gwr_value_release(x);
    /* uint8 and float16 */
    x = mk(GWR_UINT8, 3, DIMS(1, 1, 4), VALS(3, 250, 7, 1));
    CHECK(expect("MaxPool", 1, &x, c0, 3, DIMS(1, 1, 2), VALS(250, 7)));
    gwr_value_release(x);
    x = mk(GWR_FLOAT16, 3, DIMS(1, 1, 4), VALS(-3, -2.5, 7, 1));
    CHECK(expect("MaxPool", 1, &x, c0, 3, DIMS(1, 1, 2), VALS(-2.5, 7)));
    gwr_value_release(x);
}

TEST(avgpool_pads_and_ceil) {
    gwr_value *x = F32(4, DIMS(1, 1, 3, 3), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9));
    attr ex[] = {AV("kernel_shape", 3, 3), AV("pads", 1, 1, 1, 1), AV("strides", 2, 2), AEND};
    CHECK(expect("AveragePool", 1, &x, ex, 4, DIMS(1, 1, 2, 2), VALS(3, 4, 6, 7))); /* (1+2+4+5)/4 ... */
    attr in[] = {AV("kernel_shape", 3, 3), AV("pads", 1, 1, 1, 1), AV("strides", 2, 2), AI("count_include_pad", 1), AEND};
    CHECK(expect("AveragePool", 1, &x, in, 4, DIMS(1, 1, 2, 2), VALS(12 / 9., 16 / 9., 24 / 9., 28 / 9.)));
    attr su[] = {AV("kernel_shape", 2, 2), AS("auto_pad", "SAME_UPPER"), AEND};
    CHECK(expect("AveragePool", 1, &x, su, 4, DIMS(1, 1, 3, 3), VALS(3, 4, 4.5, 6, 7, 7.5, 7.5, 8.5, 9)));
    attr sl[] = {AV("kernel_shape", 2, 2), AS("auto_pad", "SAME_LOWER"), AEND};
    CHECK(expect("AveragePool", 1, &x, sl, 4, DIMS(1, 1, 3, 3), VALS(1, 1.5, 2.5, 2.5, 3, 4, 5.5, 6, 7)));
    gwr_value_release(x);
    x = F32(3, DIMS(1, 1, 5), VALS(1, 2, 3, 4, 5));
    attr ce[] = {AV("kernel_shape", 2), AV("strides", 2), AI("ceil_mode", 1), AEND};
    CHECK(expect("AveragePool", 1, &x, ce, 3, DIMS(1, 1, 3), VALS(1.5, 3.5, 5)));
    attr cp[] = {AV("kernel_shape", 2), AV("strides", 2), AV("pads", 1, 1), AI("ceil_mode", 1), AI("count_include_pad", 1), AEND};
    CHECK(expect("AveragePool", 1, &x, cp, 3, DIMS(1, 1, 3), VALS(0.5, 2.5, 4.5)));
    gwr_value_release(x);
    x = mk(GWR_FLOAT64, 3, DIMS(1, 1, 3), VALS(1, 2, 4));
    attr k2[] = {AV("kernel_shape", 2), AEND};
    CHECK(expect("AveragePool", 1, &x, k2, 3, DIMS(1, 1, 2), VALS(1.5, 3)));
    gwr_value_release(x);
}

TEST(lp_and_global_pools) {
    gwr_value *x = F32(4, DIMS(1, 2, 2, 2), VALS(1, 2, 3, 4, 5, 6, 7, 8));
    CHECK(expect("GlobalAveragePool", 1, &x, NULL, 4, DIMS(1, 2, 1, 1), VALS(2.5, 6.5)));
    CHECK(expect("GlobalMaxPool", 1, &x, NULL, 4, DIMS(1, 2, 1, 1), VALS(4, 8)));
    gwr_value_release(x);
    x = F32(3, DIMS(1, 1, 2), VALS(3, -4));
    CHECK(expect("GlobalLpPool", 1, &x, NULL, 3, DIMS(1, 1, 1), VALS(5)));
    attr p1[] = {AI("p", 1), AEND};
    CHECK(expect("GlobalLpPool", 1, &x, p1, 3, DIMS(1, 1, 1), VALS(7)));
    gwr_value_release(x);
    x = F32(3, DIMS(1, 1, 3), VALS(1, -2, 3));
    attr lp1[] = {AV("kernel_shape", 2), AI("p", 1), AEND}, lp2[] = {AV("kernel_shape", 2), AEND}, lp3[] = {AV("kernel_shape", 2), AI("p", 3), AEND};
    CHECK(expect("LpPool", 1, &x, lp1, 3, DIMS(1, 1, 2), VALS(3, 5)));
    CHECK(expect("LpPool", 1, &x, lp2, 3, DIMS(1, 1, 2), VALS(sqrt(5), sqrt(13))));
    CHECK(expect("LpPool", 1, &x, lp3, 3, DIMS(1, 1, 2), VALS(cbrt(9), cbrt(35))));
    gwr_value_release(x);
    x = mk(GWR_FLOAT16, 3, DIMS(1, 2, 2), VALS(1, 2, 3, 5));
    CHECK(expect("GlobalAveragePool", 1, &x, NULL, 3, DIMS(1, 2, 1), VALS(1.5, 4)));
    gwr_value_release(x);
}

TEST(maxunpool) {
    /* the indices MaxPool gives, back to their places */
    gwr_value *in[3] = {F32(4, DIMS(1, 1, 1, 2), VALS(6, 9)), mk(GWR_INT64, 4, DIMS(1, 1, 1, 2), VALS(4, 2)), NULL};
    attr a[] = {AV("kernel_shape", 2, 2), AV("strides", 2, 2), AEND};
    CHECK(expect("MaxUnpool", 2, in, a, 4, DIMS(1, 1, 2, 4), VALS(0, 0, 9, 0, 6, 0, 0, 0)));
    in[2] = mk(GWR_INT64, 1, DIMS(4), VALS(1, 1, 3, 5));
    CHECK(expect("MaxUnpool", 3, in, a, 4, DIMS(1, 1, 3, 5), VALS(0, 0, 9, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0)));
    gwr_value_release(in[1]);
    in[1] = mk(GWR_INT64, 4, DIMS(1, 1, 1, 2), VALS(4, 8));
    CHECK(expect_fail("MaxUnpool", 2, in, a, GWR_ERR_INVALID_ARG, "index 8 (I[1]) is outside the 8 elements"));
    gwr_value_release(in[2]);
    in[2] = mk(GWR_INT64, 1, DIMS(3), VALS(1, 1, 3));
    CHECK(expect_fail("MaxUnpool", 3, in, a, GWR_ERR_INVALID_ARG, "output_shape has 3 values, expected 4"));
    release_all(in, 3);
}

TEST(pool_errors) {
    gwr_value *x = F32(4, DIMS(1, 1, 3, 3), NULL), *xi = mk(GWR_INT32, 4, DIMS(1, 1, 3, 3), NULL), *x1 = F32(1, DIMS(3), NULL);
    CHECK(expect_fail("MaxPool", 1, &x, NULL, GWR_ERR_INVALID_ARG, "kernel_shape is required"));
    attr big[] = {AV("kernel_shape", 4, 1), AEND};
    CHECK(expect_fail("MaxPool", 1, &x, big, GWR_ERR_INVALID_ARG, "kernel extent 4 is larger than the padded input 3"));
    attr bad_len[] = {AV("kernel_shape", 2), AEND};
    CHECK(expect_fail("AveragePool", 1, &x, bad_len, GWR_ERR_INVALID_ARG, "kernel_shape has 1 values, expected 2"));
    attr so[] = {AV("kernel_shape", 2, 2), AI("storage_order", 2), AEND};
    CHECK(expect_fail("MaxPool", 1, &x, so, GWR_ERR_INVALID_ARG, "storage_order = 2"));
    attr pads3[] = {AV("kernel_shape", 2, 2), AV("pads", 1, 1, 1), AEND};
    CHECK(expect_fail("MaxPool", 1, &x, pads3, GWR_ERR_INVALID_ARG, "pads has 3 values, expected 4"));
    attr k2[] = {AV("kernel_shape", 2, 2), AEND};
    CHECK(expect_fail("AveragePool", 1, &xi, k2, GWR_ERR_UNSUPPORTED, "dtype int32 is not supported"));
    CHECK(expect_fail("MaxPool", 1, &x1, k2, GWR_ERR_INVALID_ARG, "X has rank 1"));
    CHECK(expect_fail("GlobalAveragePool", 1, &x1, NULL, GWR_ERR_INVALID_ARG, "X has rank 1"));
    attr p0[] = {AV("kernel_shape", 2, 2), AI("p", 0), AEND};
    CHECK(expect_fail("LpPool", 1, &x, p0, GWR_ERR_INVALID_ARG, "p = 0"));
    gwr_value *none = NULL;
    CHECK(expect_fail("GlobalMaxPool", 1, &none, NULL, GWR_ERR_INVALID_ARG, "input X is missing"));
    gwr_value *all[] = {x, xi, x1};
    release_all(all, 3);
}

/* ---- Einsum -------------------------------------------------------------- */

TEST(einsum_forms) {
    gwr_value *m = F32(2, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6)), *sq = F32(2, DIMS(2, 2), VALS(1, 2, 3, 4));
    gwr_value *u = F32(1, DIMS(2), VALS(1, 2)), *v = F32(1, DIMS(3), VALS(1, 10, 100));
    attr tr[] = {AS("equation", "ij->ji"), AEND};
    CHECK(expect("Einsum", 1, &m, tr, 2, DIMS(3, 2), VALS(1, 4, 2, 5, 3, 6)));
    attr sum[] = {AS("equation", "ij->"), AEND};
    CHECK(expect("Einsum", 1, &m, sum, 0, NULL, VALS(21)));
    attr rows[] = {AS("equation", "ij -> i"), AEND};
    CHECK(expect("Einsum", 1, &m, rows, 1, DIMS(2), VALS(6, 15)));
    attr diag[] = {AS("equation", "ii->i"), AEND}, trace[] = {AS("equation", "ii"), AEND};
    CHECK(expect("Einsum", 1, &sq, diag, 1, DIMS(2), VALS(1, 4)));
    CHECK(expect("Einsum", 1, &sq, trace, 0, NULL, VALS(5)));
    gwr_value *in[2] = {u, v};
    attr outer[] = {AS("equation", "i,j->ij"), AEND};
    CHECK(expect("Einsum", 2, in, outer, 2, DIMS(2, 3), VALS(1, 10, 100, 2, 20, 200)));
    in[0] = sq, in[1] = m;
    attr mm[] = {AS("equation", "ij,jk"), AEND}; /* implicit: ik */
    CHECK(expect("Einsum", 2, in, mm, 2, DIMS(2, 3), VALS(9, 12, 15, 19, 26, 33)));
    attr mmt[] = {AS("equation", "ij,jk->ki"), AEND};
    CHECK(expect("Einsum", 2, in, mmt, 2, DIMS(3, 2), VALS(9, 19, 12, 26, 15, 33)));
    /* batched, with an ellipsis broadcast over the batch */
    gwr_value *b3 = F32(3, DIMS(2, 1, 2), VALS(1, 0, 0, 1)), *b2 = F32(2, DIMS(2, 2), VALS(1, 2, 3, 4));
    in[0] = b3, in[1] = b2;
    attr bm[] = {AS("equation", "...ij,...jk->...ik"), AEND};
    CHECK(expect("Einsum", 2, in, bm, 3, DIMS(2, 1, 2), VALS(1, 2, 3, 4)));
    attr ell[] = {AS("equation", "...j->..."), AEND};
    CHECK(expect("Einsum", 1, &m, ell, 1, DIMS(2), VALS(6, 15)));
    gwr_value *iv[2] = {mk(GWR_INT64, 1, DIMS(3), VALS(1, 2, 3)), mk(GWR_INT64, 1, DIMS(3), VALS(4, 5, -6))};
    attr dot[] = {AS("equation", "i,i"), AEND};
    CHECK(expect("Einsum", 2, iv, dot, 0, NULL, VALS(-4)));
    release_all(iv, 2);
    /* errors */
    attr bad[] = {AS("equation", "i1->i"), AEND};
    CHECK(expect_fail("Einsum", 1, &u, bad, GWR_ERR_INVALID_ARG, "bad term 0"));
    attr cnt[] = {AS("equation", "ij->i"), AEND};
    CHECK(expect_fail("Einsum", 1, &u, cnt, GWR_ERR_INVALID_ARG, "term 0 has 2 labels but input 0 has rank 1"));
    in[0] = u, in[1] = v;
    attr sz[] = {AS("equation", "i,i->i"), AEND};
    CHECK(expect_fail("Einsum", 2, in, sz, GWR_ERR_INVALID_ARG, "label 'i' has sizes 2 and 3"));
    attr terms[] = {AS("equation", "i->i"), AEND};
    CHECK(expect_fail("Einsum", 2, in, terms, GWR_ERR_INVALID_ARG, "term count"));
    attr outl[] = {AS("equation", "i,j->k"), AEND};
    CHECK(expect_fail("Einsum", 2, in, outl, GWR_ERR_INVALID_ARG, "output label 'k' is not an input label"));
    CHECK(expect_fail("Einsum", 1, &u, NULL, GWR_ERR_INVALID_ARG, "equation attribute is missing"));
    gwr_value *all[] = {m, sq, u, v, b3, b2};
    release_all(all, 6);
}

int main(void) {
    RUN(matmul_batch_broadcast);
    RUN(matmul_1d_operands);
    RUN(matmul_dtypes);
    RUN(matmul_errors);
    RUN(matmul_integer);
    RUN(gemm_attributes);
    RUN(conv_hand);
    RUN(conv_vs_reference);
    RUN(conv_dtypes);
    RUN(conv_errors);
    RUN(conv_transpose_hand);
    RUN(conv_transpose_adjoint);
    RUN(maxpool_ceil_dilation_indices);
    RUN(avgpool_pads_and_ceil);
    RUN(lp_and_global_pools);
    RUN(maxunpool);
    RUN(pool_errors);
    RUN(einsum_forms);
    return check_report();
}
