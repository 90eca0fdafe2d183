/* test_sgemm.c - gwr's own sgemm (src/exec/kernels/sgemm.c), every
 * micro-kernel the CPU has (AVX-512, AVX2+FMA, portable: forced in turn
 * with gwr_sgemm_force_isa), against a float64 triple loop written here
 * from C = alpha op(A) op(B) + beta C.
 *
 * Each product runs two ways: per call (gwr_sgemm: A^T and B^T packed,
 * A and B read in place) and with B packed beforehand (gwr_sgemm_pb). Shapes straddle the kernels' tiles (MR rows, NR
 * columns) and the K block (160 or 256): 1, MR - 1, MR, MR + 1, ..., with leading
 * dimensions above the minimum, alpha and beta varied, beta 0 over a C of
 * NaNs (which must not leak), and the bytes between C's rows checked
 * untouched. Values are uniform in [-1, 1]; float32 sums differ from the
 * float64 one by rounding and order only, bounded by K * eps * sum |terms|:
 * the test allows 2e-7 * (K + 8) * (|alpha| sum_k |a b| + |beta c|), under
 * the size of one term for the K tested (<= 515), so a term missed or
 * counted twice fails. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "exec/blas.h"
#include "exec/kernels/kernel_util.h"
#include "exec/kernels/sgemm.h"

/* sgemm.c's tiles and k blocks per instruction set */
static const int TILE_MR[GWR_SGEMM_NISA] = {8, 6, 4}, TILE_NR[GWR_SGEMM_NISA] = {48, 16, 8}, TILE_KC[GWR_SGEMM_NISA] = {160, 256, 256};

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static float urand(void) {
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return (float)((rng * 0x2545f4914f6cdd1dULL) >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}

static float *rand_buf(size_t n) {
    float *p = malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; i < n; i++) p[i] = urand();
    return p;
}

typedef struct gcase {
    int ta, tb, M, N, K, lda, ldb, ldc;
    float alpha, beta;
} gcase;

static double max_err_seen;

/* op(X)[r][c] of a matrix stored rows ld apart, trans: X is [c, r]. */
static double at(const float *X, int trans, int ld, int r, int c) { return trans ? X[(size_t)c * ld + r] : X[(size_t)r * ld + c]; }

/* C after the product, checked against the reference from C0; way names
 * the path in a failure. */
static void check_c(const gcase *g, const float *A, const float *B, const float *C0, const float *C, const char *way, int isa) {
    int bad = 0;
    for (int i = 0; i < g->M && !bad; i++) {
        for (int j = 0; j < g->ldc && !bad; j++) {
            size_t o = (size_t)i * g->ldc + j;
            if (j >= g->N) { /* between rows: untouched */
                bad = memcmp(&C[o], &C0[o], sizeof *C) != 0;
                if (bad) CHECK(!"bytes past N written");
                continue;
            }
            double s = 0, sa = 0;
            for (int q = 0; q < g->K; q++) {
                double t = at(A, g->ta, g->lda, i, q) * at(B, g->tb, g->ldb, q, j);
                s += t, sa += fabs(t);
            }
            double c0 = g->beta == 0 ? 0 : (double)g->beta * C0[o];
            double want = g->alpha * s + c0, tol = 2e-7 * (g->K + 8) * (fabs(g->alpha) * sa + fabs(c0)) + 1e-30;
            double err = fabs(C[o] - want);
            if (!(err <= tol)) {
                bad = 1;
                CHECK(!"result off");
                fprintf(stderr, "  isa %d %s ta %d tb %d M %d N %d K %d alpha %g beta %g: C[%d][%d] = %.9g, want %.9g\n", isa, way, g->ta,
                        g->tb, g->M, g->N, g->K, g->alpha, g->beta, i, j, C[o], want);
            }
            if (sa > 0 && err / (fabs(g->alpha) * sa + fabs(c0)) > max_err_seen) max_err_seen = err / (fabs(g->alpha) * sa + fabs(c0));
        }
    }
    if (!bad) CHECK(1);
}

/* A fresh C: NaN where beta is 0 (garbage the product must not read). */
static float *make_c(const gcase *g) {
    size_t n = (size_t)g->M * g->ldc;
    float *C = rand_buf(n);
    if (g->beta == 0)
        for (int i = 0; i < g->M; i++)
            for (int j = 0; j < g->N; j++) C[(size_t)i * g->ldc + j] = NAN;
    return C;
}

static void run_case(const gcase *g, int isa) {
    size_t na = g->ta ? (size_t)g->K * g->lda : (size_t)g->M * g->lda, nb = g->tb ? (size_t)g->N * g->ldb : (size_t)g->K * g->ldb;
    float *A = rand_buf(na), *B = rand_buf(nb), *C0 = make_c(g), *C = malloc(((size_t)g->M * g->ldc + 1) * sizeof *C);
    size_t cb = (size_t)g->M * g->ldc * sizeof *C;
    memcpy(C, C0, cb);
    CHECK_EQ_INT(gwr_sgemm(NULL, g->ta, g->tb, g->M, g->N, g->K, g->alpha, A, g->lda, B, g->ldb, g->beta, C, g->ldc), 0);
    check_c(g, A, B, C0, C, "unpacked", isa);
    gwr_sgemm_pack *pb = gwr_sgemm_pack_b(g->tb, g->K, g->N, B, g->ldb);
    if (CHECK(pb != NULL)) {
        CHECK_EQ_INT(pb->isa, isa);
        memcpy(C, C0, cb);
        CHECK_EQ_INT(gwr_sgemm_pb(NULL, g->ta, g->M, A, g->lda, pb, g->alpha, g->beta, C, g->ldc), 0);
        check_c(g, A, B, C0, C, "packed B", isa);
    }
    gwr_sgemm_pack_free(pb);
    free(A), free(B), free(C0), free(C);
}

static gcase make(int ta, int tb, int M, int N, int K, int pad, float alpha, float beta) {
    gcase g = {ta, tb, M, N, K, 0, 0, 0, alpha, beta};
    g.lda = (ta ? M : K) + pad, g.ldb = (tb ? K : N) + pad, g.ldc = N + pad;
    return g;
}

/* Every M and N around the tile edges, K rotating through its edges. */
static void sweep(int isa) {
    int mr = TILE_MR[isa], nr = TILE_NR[isa], KC = TILE_KC[isa];
    int Ms[] = {1, 2, 3, mr - 1, mr, mr + 1, 2 * mr + 1, 37};
    int Ns[] = {1, 2, 15, 16, 17, 33, nr - 1, nr, nr + 1, 2 * nr + 3, 100}; /* 16, 32: AVX-512's vectors */
    int Ks[] = {1, 2, 17, KC - 1, KC, KC + 1, 2 * KC + 3};
    int nM = sizeof Ms / sizeof *Ms, nN = sizeof Ns / sizeof *Ns, nK = sizeof Ks / sizeof *Ks, c = 0;
    for (int i = 0; i < nM; i++)
        for (int j = 0; j < nN; j++, c++) {
            float betas[] = {0.0f, 1.0f, 0.5f}, alphas[] = {1.0f, -0.75f};
            gcase g = make(c & 1, (c >> 1) & 1, Ms[i], Ns[j], Ks[c % nK], c % 3 == 0 ? 3 : 0, alphas[c % 2], betas[c % 3]);
            run_case(&g, isa);
        }
    for (int t = 0; t < 2; t++) { /* B's rows 4 KB apart or more: its panels copied, for tiles of rows enough */
        gcase g = make(0, 0, 2 * mr + 1 + t * mr, 1024 + 7 * t, 300, t ? 0 : 5, 1.0f, t ? 0.5f : 0.0f);
        run_case(&g, isa);
    }
    for (int t = 0; t < 3; t++) { /* B's rows 1 KB / 512 B apart (few L1 sets), 16+ tiles of rows: copied; a last narrow panel, two k blocks */
        int pad[] = {0, 6, 0}, N[] = {256, 250, 128};
        gcase g = make(0, 0, 16 * mr + t * (mr - 1) + (t == 1), N[t], t == 2 ? 97 : KC + 3, pad[t], t ? -0.75f : 1.0f, t == 1 ? 0.5f : 0.0f);
        run_case(&g, isa);
    }
    for (int q = 0; q < nK; q++) /* every K with each transpose, one tile and a bit */
        for (int t = 0; t < 4; t++) {
            gcase g = make(t & 1, t >> 1, mr + 1, nr + 1, Ks[q], 1, 1.0f, t == 3 ? 1.0f : 0.0f);
            run_case(&g, isa);
        }
}

TEST(every_isa) {
    int ran = 0;
    for (int isa = 0; isa < GWR_SGEMM_NISA; isa++) {
        if (gwr_sgemm_force_isa((gwr_sgemm_isa)isa)) {
            fprintf(stderr, "test_sgemm: this CPU lacks instruction set %d: skipped\n", isa);
            continue;
        }
        CHECK_EQ_INT(gwr_sgemm_current_isa(), isa);
        sweep(isa);
        ran++;
    }
    CHECK(ran >= 1); /* the portable kernel at least */
    CHECK_EQ_INT(gwr_sgemm_force_isa(GWR_SGEMM_NISA), 0);
    fprintf(stderr, "test_sgemm: %d instruction sets, max error %.3g of sum |terms|\n", ran, max_err_seen);
}

TEST(portable_always_available) {
    CHECK_EQ_INT(gwr_sgemm_force_isa(GWR_SGEMM_VEC), 0);
    CHECK_EQ_INT(gwr_sgemm_current_isa(), GWR_SGEMM_VEC);
    CHECK(gwr_sgemm_force_isa((gwr_sgemm_isa)-1) != 0);
    CHECK(gwr_sgemm_force_isa((gwr_sgemm_isa)(GWR_SGEMM_NISA + 1)) != 0);
    CHECK_EQ_INT(gwr_sgemm_current_isa(), GWR_SGEMM_VEC); /* a bad request changes nothing */
    CHECK_EQ_INT(gwr_sgemm_force_isa(GWR_SGEMM_NISA), 0);
}

TEST(degenerate_shapes) {
    float A[4] = {1, 2, 3, 4}, B[4] = {1, 1, 1, 1}, C[4] = {2, 4, 6, 8};
    CHECK_EQ_INT(gwr_sgemm(NULL, 0, 0, 2, 2, 0, 1.0f, A, 1, B, 2, 0.5f, C, 2), 0); /* K = 0: C = beta C */
    CHECK(C[0] == 1 && C[1] == 2 && C[2] == 3 && C[3] == 4);
    C[0] = NAN;
    CHECK_EQ_INT(gwr_sgemm(NULL, 0, 0, 2, 2, 0, 1.0f, A, 1, B, 2, 0.0f, C, 2), 0); /* beta 0: zeros, NaN gone */
    CHECK(C[0] == 0 && C[3] == 0);
    C[0] = 7;
    CHECK_EQ_INT(gwr_sgemm(NULL, 0, 0, 0, 2, 2, 1.0f, A, 2, B, 2, 0.0f, C, 2), 0); /* M = 0: nothing */
    CHECK_EQ_INT(gwr_sgemm(NULL, 0, 0, 2, 0, 2, 1.0f, A, 2, B, 2, 0.0f, C, 2), 0); /* N = 0 */
    CHECK(C[0] == 7);
    CHECK(gwr_sgemm_pack_b(0, 0, 2, B, 2) == NULL);
    CHECK(gwr_sgemm_pack_b(0, 2, 0, B, 2) == NULL);
    CHECK(gwr_sgemm_min_n() >= 1);
    gwr_sgemm_pack_free(NULL);
}

/* gwr_ku_sgemm (what most kernels call) hands sgemm.c the products it
 * runs faster on one thread (M >= 16, N >= 64, K >= 64, none transposed):
 * the same checks through it, just above and below those bounds, beside
 * OpenBLAS's shapes. */
TEST(ku_sgemm_dispatch) {
    const char *why;
    if (!CHECK(gwr_blas_load(&why) == 0)) return;
    gwr_blas_threads(1);
    int shapes[][3] = {{16, 64, 64}, {20, 70, 65}, {15, 64, 64}, {16, 63, 64}, {16, 64, 63}, {33, 130, 300}};
    for (int i = 0; i < 6; i++)
        for (int t = 0; t < 3; t++) {
            gcase g = make(t == 2, 0, shapes[i][0], shapes[i][1], shapes[i][2], t, t ? 0.5f : 1.0f, t == 1 ? 1.0f : 0.0f);
            size_t na = g.ta ? (size_t)g.K * g.lda : (size_t)g.M * g.lda;
            float *A = rand_buf(na), *B = rand_buf((size_t)g.K * g.ldb), *C0 = make_c(&g), *C = malloc((size_t)g.M * g.ldc * sizeof *C);
            memcpy(C, C0, (size_t)g.M * g.ldc * sizeof *C);
            gwr_ku_sgemm(g.ta, 0, g.M, g.N, g.K, g.alpha, A, g.lda, B, g.ldb, g.beta, C, g.ldc);
            check_c(&g, A, B, C0, C, "gwr_ku_sgemm", (int)gwr_sgemm_current_isa());
            free(A), free(B), free(C0), free(C);
        }
}

/* On a pool, a product of few panels (N up to a few NR) is cut into
 * blocks of rows by panels (sgemm.c run_units): against the reference,
 * and bit-identical to the same product on one thread (a row block keeps
 * the whole product's k blocking). Shapes big enough to be split. */
static void split_case(gwr_tpool *tp, const gcase *g, int isa) {
    size_t na = g->ta ? (size_t)g->K * g->lda : (size_t)g->M * g->lda, nb = g->tb ? (size_t)g->N * g->ldb : (size_t)g->K * g->ldb;
    float *A = rand_buf(na), *B = rand_buf(nb), *C0 = make_c(g), *C1 = malloc((size_t)g->M * g->ldc * sizeof *C1),
          *C2 = malloc((size_t)g->M * g->ldc * sizeof *C2);
    size_t cb = (size_t)g->M * g->ldc * sizeof *C1;
    gwr_sgemm_pack *pb = gwr_sgemm_pack_b(g->tb, g->K, g->N, B, g->ldb);
    for (int way = 0; way < 2 && CHECK(pb != NULL); way++) {
        memcpy(C1, C0, cb), memcpy(C2, C0, cb);
        if (way == 0) {
            CHECK_EQ_INT(gwr_sgemm(NULL, g->ta, g->tb, g->M, g->N, g->K, g->alpha, A, g->lda, B, g->ldb, g->beta, C1, g->ldc), 0);
            CHECK_EQ_INT(gwr_sgemm(tp, g->ta, g->tb, g->M, g->N, g->K, g->alpha, A, g->lda, B, g->ldb, g->beta, C2, g->ldc), 0);
        } else {
            CHECK_EQ_INT(gwr_sgemm_pb(NULL, g->ta, g->M, A, g->lda, pb, g->alpha, g->beta, C1, g->ldc), 0);
            CHECK_EQ_INT(gwr_sgemm_pb(tp, g->ta, g->M, A, g->lda, pb, g->alpha, g->beta, C2, g->ldc), 0);
        }
        check_c(g, A, B, C0, C2, way ? "packed B on a pool" : "on a pool", isa);
        if (!CHECK(memcmp(C1, C2, cb) == 0)) fprintf(stderr, "  isa %d M %d N %d K %d: bits differ on a pool\n", isa, g->M, g->N, g->K);
    }
    gwr_sgemm_pack_free(pb);
    free(A), free(B), free(C0), free(C1), free(C2);
}

TEST(split_rows_on_a_pool) {
    gwr_tpool *tps[2] = {gwr_tpool_new(2), gwr_tpool_new(3)};
    for (int isa = 0; isa < GWR_SGEMM_NISA; isa++) {
        if (gwr_sgemm_force_isa((gwr_sgemm_isa)isa)) continue;
        int mr = TILE_MR[isa], nr = TILE_NR[isa], KC = TILE_KC[isa];
        int shapes[][3] = {{517, 1, 2100}, {2 * mr + 3, 2 * nr + 1, 4000}, {100, nr + 5, 2 * KC + 3}, {64, 17, 1100}, {4 * mr, nr, 1500}};
        for (int t = 0; t < 2; t++)
            for (int i = 0; i < 5; i++) {
                gcase g = make(i & 1, (i >> 1) & 1, shapes[i][0], shapes[i][1], shapes[i][2], i % 3 == 0 ? 3 : 0, 1.0f, i == 2 ? 0.5f : 0.0f);
                split_case(tps[t], &g, isa);
            }
    }
    CHECK_EQ_INT(gwr_sgemm_force_isa(GWR_SGEMM_NISA), 0);
    gwr_tpool_free(tps[0]), gwr_tpool_free(tps[1]);
}

/* gwr_sgemv_pb, the products of 1 to 4 rows over packed panels: against
 * the reference at N around the panel edges (one panel, groups of 2 to 4
 * and a short last group), alpha and beta varied, padded rows; on pools
 * of 2 and 3 threads, every group of panels its own chunk
 * (GWR_TPOOL_GRAIN_ONE), bit-identical to one thread. */
TEST(gemv_rows) {
    setenv("GWR_TPOOL_GRAIN_ONE", "1", 1);
    gwr_tpool *tps[2] = {gwr_tpool_new(2), gwr_tpool_new(3)};
    unsetenv("GWR_TPOOL_GRAIN_ONE");
    for (int isa = 0; isa < GWR_SGEMM_NISA; isa++) {
        if (gwr_sgemm_force_isa((gwr_sgemm_isa)isa)) continue;
        int nr = TILE_NR[isa], c = 0;
        int Ns[] = {1, 5, nr - 1, nr, nr + 1, 2 * nr, 2 * nr + 3, 3 * nr, 4 * nr, 5 * nr + 7, 9 * nr - 2};
        int Ks[] = {1, 2, 3, 17, 64, 515};
        for (int M = 1; M <= GWR_SGEMV_MAX_ROWS; M++)
            for (size_t j = 0; j < sizeof Ns / sizeof *Ns; j++)
                for (size_t q = 0; q < sizeof Ks / sizeof *Ks; q++, c++) {
                    float betas[] = {0.0f, 1.0f, 0.5f}, alphas[] = {1.0f, -0.75f};
                    gcase g = make(0, c & 1, M, Ns[j], Ks[q], c % 3 == 0 ? 3 : 0, alphas[c % 2], betas[c % 3]);
                    size_t nb = g.tb ? (size_t)g.N * g.ldb : (size_t)g.K * g.ldb, cb = (size_t)g.M * g.ldc * sizeof(float);
                    float *A = rand_buf((size_t)g.M * g.lda), *B = rand_buf(nb), *C0 = make_c(&g), *C = malloc(cb), *C2 = malloc(cb);
                    gwr_sgemm_pack *pb = gwr_sgemm_pack_b(g.tb, g.K, g.N, B, g.ldb);
                    if (CHECK(pb != NULL)) {
                        memcpy(C, C0, cb);
                        CHECK_EQ_INT(gwr_sgemv_pb(NULL, g.M, A, g.lda, pb, g.alpha, g.beta, C, g.ldc), 0);
                        check_c(&g, A, B, C0, C, "gemv", isa);
                        for (int t = 0; t < 2; t++) {
                            memcpy(C2, C0, cb);
                            CHECK_EQ_INT(gwr_sgemv_pb(tps[t], g.M, A, g.lda, pb, g.alpha, g.beta, C2, g.ldc), 0);
                            if (!CHECK(memcmp(C, C2, cb) == 0))
                                fprintf(stderr, "  isa %d M %d N %d K %d: gemv bits differ on %d threads\n", isa, g.M, g.N, g.K, t + 2);
                        }
                    }
                    gwr_sgemm_pack_free(pb);
                    free(A), free(B), free(C0), free(C), free(C2);
                }
        /* rows outside 1..4: refused, C untouched */
        float a[5 * 8] = {0}, b[8 * 8] = {0}, y[5 * 8] = {1};
        gwr_sgemm_pack *pb = gwr_sgemm_pack_b(0, 8, 8, b, 8);
        if (CHECK(pb != NULL)) {
            CHECK_EQ_INT(gwr_sgemv_pb(NULL, 0, a, 8, pb, 1.0f, 0.0f, y, 8), -1);
            CHECK_EQ_INT(gwr_sgemv_pb(NULL, 5, a, 8, pb, 1.0f, 0.0f, y, 8), -1);
            CHECK(y[0] == 1.0f);
        }
        gwr_sgemm_pack_free(pb);
    }
    CHECK_EQ_INT(gwr_sgemm_force_isa(GWR_SGEMM_NISA), 0);
    gwr_tpool_free(tps[0]), gwr_tpool_free(tps[1]);
}

int main(void) {
    RUN(portable_always_available);
    RUN(degenerate_shapes);
    RUN(every_isa);
    RUN(ku_sgemm_dispatch);
    RUN(split_rows_on_a_pool);
    RUN(gemv_rows);
    return check_report();
}
