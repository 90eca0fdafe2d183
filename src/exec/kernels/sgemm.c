/* sgemm.c - the GEMM driver over sgemm_kern.h's micro-kernels: packing,
 * blocking over K, and the split of C's columns (and rows, for narrow
 * products) over workers.
 *
 * Loop order (Goto's): per block of kc values of k, per panel of NR
 * columns, per tile of MR rows: the panel's kc x NR floats (32 KB at most)
 * stay in L1 while every tile of A's block (M x kc, from L2) passes over
 * them. A (the broadcast side) is read in place, or from k-major tiles
 * packed per call (A^T); B is a panel packed at planning or read in
 * place, where the last, narrower panel is copied (zero-padded) so that
 * the kernel may read whole vectors, and so are all panels of a B whose
 * rows lie far apart (below). */
#include <stdlib.h>
#include <string.h>

#include "exec/kernels/sgemm.h"
#include "util/util.h"

#define MAXKC 256   /* the largest kc of ISAS */
#define MAXNR 48    /* the widest panel of the kernels */
#define PAN_GRAIN 2 /* panels per share of a parallel loop */

typedef struct isa_info {
    int mr, nr, kc; /* kc: k per block, a panel's kc x nr floats in L1 (32 KB, 30 for AVX-512's) */
    int vl;         /* floats per vector: the narrowest panel the kernel computes */
    gwr_sgemm_kern_fn kern;
    gwr_sgemm_dot_fn dot;
    gwr_sgemv_kern_fn gemv;
} isa_info;

static const isa_info ISAS[GWR_SGEMM_NISA] = {
    {8, 48, 160, 16, gwr_sgemm_kern_avx512, gwr_sgemm_dot_avx512, gwr_sgemv_kern_avx512},
    {6, 16, 256, 8, gwr_sgemm_kern_avx2, gwr_sgemm_dot_avx2, gwr_sgemv_kern_avx2},
    {4, 8, 256, 4, gwr_sgemm_kern_vec, gwr_sgemm_dot_vec, gwr_sgemv_kern_vec},
};

static int isa_ok(gwr_sgemm_isa isa) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (isa == GWR_SGEMM_AVX512) return __builtin_cpu_supports("avx512f");
    if (isa == GWR_SGEMM_AVX2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    return isa == GWR_SGEMM_VEC;
}

/* -1: not chosen yet. Set once per process (or by a test): a data race
 * would only pick the same value twice. */
static int g_isa = -1;

gwr_sgemm_isa gwr_sgemm_current_isa(void) {
    int isa = __atomic_load_n(&g_isa, __ATOMIC_RELAXED);
    if (isa < 0) {
        isa = GWR_SGEMM_VEC;
        for (int i = GWR_SGEMM_AVX2; i >= GWR_SGEMM_AVX512; i--)
            if (isa_ok((gwr_sgemm_isa)i)) isa = i;
        __atomic_store_n(&g_isa, isa, __ATOMIC_RELAXED);
    }
    return (gwr_sgemm_isa)isa;
}

int gwr_sgemm_force_isa(gwr_sgemm_isa isa) {
    if (isa == GWR_SGEMM_NISA) {
        __atomic_store_n(&g_isa, -1, __ATOMIC_RELAXED);
        return 0;
    }
    if ((int)isa < 0 || isa > GWR_SGEMM_NISA || !isa_ok(isa)) return -1;
    __atomic_store_n(&g_isa, (int)isa, __ATOMIC_RELAXED);
    return 0;
}

int gwr_sgemm_enabled(void) {
    static int on = -1; /* a race only reads the environment twice */
    int v = __atomic_load_n(&on, __ATOMIC_RELAXED);
    if (v < 0) {
        const char *e = getenv("GWR_SGEMM");
        v = !(e && !strcmp(e, "off"));
        __atomic_store_n(&on, v, __ATOMIC_RELAXED);
    }
    return v;
}

int gwr_sgemm_for(const gwr_kctx *k) { return gwr_sgemm_enabled() && k->threads <= gwr_tpool_size(k->tpool); }

/* ---- packing --------------------------------------------------------------- */

static int cdiv(int a, int b) { return (int)(((int64_t)a + b - 1) / b); }

/* A^T [M, K] (A is [K, M], rows lda apart) as tiles of mr rows, tile t
 * at t * mr * K, [k][i] within (rows past M zero): an untransposed A is
 * read in place. */
static void pack_at_into(int mr, int M, int K, const float *A, int lda, float *dst) {
    for (int i0 = 0; i0 < M; i0 += mr, dst += (size_t)mr * K) {
        int rows = M - i0 < mr ? M - i0 : mr;
        if (rows < mr) memset(dst, 0, (size_t)mr * K * sizeof *dst);
        for (int k = 0; k < K; k++) memcpy(dst + (size_t)k * mr, A + (size_t)k * lda + i0, (size_t)rows * sizeof *dst);
    }
}

/* op(B) [K, N] as panels of nr columns, panel p at p * nr * K, [k][j]
 * within (columns past N zero). */
static void pack_b_into(int nr, int tb, int K, int N, const float *B, int ldb, float *dst) {
    for (int j0 = 0; j0 < N; j0 += nr, dst += (size_t)nr * K) {
        int cols = N - j0 < nr ? N - j0 : nr;
        if (cols < nr) memset(dst, 0, (size_t)nr * K * sizeof *dst);
        if (!tb) {
            for (int k = 0; k < K; k++) memcpy(dst + (size_t)k * nr, B + (size_t)k * ldb + j0, (size_t)cols * sizeof *dst);
        } else { /* B is [N, K]: a transposition, 64 k at a time so that they stay in L1 */
            for (int k0 = 0; k0 < K; k0 += 64) {
                int k1 = K - k0 < 64 ? K : k0 + 64;
                for (int j = 0; j < cols; j++) {
                    const float *src = B + (size_t)(j0 + j) * ldb;
                    for (int k = k0; k < k1; k++) dst[(size_t)k * nr + j] = src[k];
                }
            }
        }
    }
}

gwr_sgemm_pack *gwr_sgemm_pack_b(int tb, int K, int N, const float *B, int ldb) {
    if (K < 1 || N < 1) return NULL;
    gwr_sgemm_isa isa = gwr_sgemm_current_isa();
    int nr = ISAS[isa].nr;
    gwr_sgemm_pack *pk = gwr_calloc(1, sizeof *pk);
    float *p = pk ? gwr_malloc((size_t)cdiv(N, nr) * nr * K * sizeof *p) : NULL;
    if (!p) {
        gwr_free(pk);
        return NULL;
    }
    pack_b_into(nr, tb, K, N, B, ldb, p);
    pk->isa = isa, pk->K = K, pk->N = N, pk->p = p;
    return pk;
}

void gwr_sgemm_pack_free(gwr_sgemm_pack *pk) {
    if (!pk) return;
    gwr_free(pk->p);
    gwr_free(pk);
}

/* ---- the product ----------------------------------------------------------- */

typedef struct job {
    const isa_info *is;
    int M, N, K;
    const float *ap;  /* packed tiles of A, or A in place, rows lda apart: */
    ptrdiff_t lda;    /* 0: packed */
    const float *bp;  /* packed panels of B, or NULL: */
    const float *b;   /* B [K, N] in place, rows ldb apart */
    ptrdiff_t ldb;
    float alpha, beta;
    float *C;
    ptrdiff_t ldc;
    int Mall; /* the whole product's rows, of which this job may be a block (0: M) */
} job;

/* A last panel of few columns, A in place, may be computed as dot
 * products: the kernel computes whole vectors of columns (N = 49 on
 * AVX-512: 48 + 16 for 49), a column's dot products read its K values
 * once per row of A, vectors along k, at some 30 cycles a row besides.
 * Per row of A that is cols * (K / vl + 30) against about K for the
 * kernel's one vector (bench_sgemm: ResNet's 512 x 49 x 4608, 2254
 * against 2758 us; MobileNet's 96 x 49 x 576, 50.6 against 66.3; its
 * 144 x 196 x 48, four columns over 48 sums, stays on the kernel). */
static int dot_panel(const job *j, int64_t p) {
    int cols = j->N - (int)p * j->is->nr;
    return j->lda && cols <= 4 && (int64_t)cols * (j->K / j->is->vl + 30) < j->K && j->K <= MAXKC * MAXNR;
}

/* C's columns from c0 on, each gathered from B into bcol, then a dot
 * product per row of A: all of K at once. */
static void run_dots(const job *j, int c0, float *bcol) {
    const isa_info *is = j->is;
    for (int c = c0; c < j->N; c++) {
        if (j->bp)
            for (int k = 0; k < j->K; k++) bcol[k] = j->bp[(size_t)c0 * j->K + (size_t)k * is->nr + (c - c0)];
        else
            for (int k = 0; k < j->K; k++) bcol[k] = j->b[(size_t)k * j->ldb + c];
        for (int i = 0; i < j->M; i++) {
            float *cp = j->C + (size_t)i * j->ldc + c, d = j->alpha * is->dot(j->ap + (size_t)i * j->lda, bcol, j->K);
            *cp = j->beta == 0 ? d : d + j->beta * *cp;
        }
    }
}

/* Whether kc rows of B in place, ldb floats apart, fall into too few sets
 * of a 32 KB 8-way L1 (64 sets of 64-byte lines) to stay there while
 * the tiles of A pass over them: rows a multiple of 64 bytes apart use
 * 64 / gcd(64, ldb / 16) sets, 8 lines each. Magika's 5x1 Conv (512 x 256
 * x 1280, B the im2col columns, rows 1 KB apart: 4 sets, 32 lines for a
 * panel of 256) ran at 60 GFLOP/s in place and 70 copied (bench_sgemm). */
static int few_l1_sets(ptrdiff_t ldb, int kc) {
    if (ldb % 16) return 0; /* rows not 64-byte multiples apart: their lines spread over the sets */
    int64_t g = 64, x = (int64_t)(ldb / 16) % 64;
    while (x) {
        int64_t t = g % x;
        g = x, x = t;
    }
    return (64 / g) * 8 < kc;
}

/* Panels [p0, p1) of C, every block of k. */
static void run_panels(void *ctx, int64_t p0, int64_t p1) {
    const job *j = ctx;
    const isa_info *is = j->is;
    int mr = is->mr, nr = is->nr, K = j->K;
    float edge[MAXKC * MAXNR];
    if (p1 > p0 && dot_panel(j, p1 - 1)) run_dots(j, (int)(p1 - 1) * nr, edge), p1--;
    /* One tile of rows reuses no panel: nothing to keep in L1, B's packed
     * panels stream once, in order */
    int Mall = j->Mall ? j->Mall : j->M; /* the blocking of the whole product: a row block's bits are its */
    int kb = Mall <= mr && j->bp ? K : is->kc;
    /* B in place with rows over 4 KB apart: the panel's kc rows would
     * touch kc pages per tile (TLB misses: 63 against 89 GFLOP/s at
     * ResNet's 64 x 3136 x 576); copied once, every tile reads it dense.
     * Not for few rows of B or of tiles, which the copy costs more than it
     * saves (MobileNet's 24 x 3136 x 64: 88 against 103 GFLOP/s). Rows
     * that share too few L1 sets (few_l1_sets) are copied too where
     * enough tiles reuse the panel: from 16 tiles on the copy pays (at 4
     * tiles, 24 x 256 x 288, it cost 18%; at 16 it broke even). */
    int copy = !j->bp && Mall > 2 * mr && K > 96 && (j->ldb >= 1024 || (Mall >= 16 * mr && few_l1_sets(j->ldb, K < kb ? K : kb)));
    for (int k0 = 0; k0 < K; k0 += kb) {
        int kc = K - k0 < kb ? K - k0 : kb;
        float beta = k0 ? 1.0f : j->beta;
        for (int64_t p = p0; p < p1; p++) {
            int c0 = (int)p * nr, cols = j->N - c0 < nr ? j->N - c0 : nr;
            const float *b;
            ptrdiff_t ldb = nr;
            if (j->bp) {
                b = j->bp + (size_t)p * nr * K + (size_t)k0 * nr;
            } else if (cols == nr && !copy) {
                b = j->b + (size_t)k0 * j->ldb + c0, ldb = j->ldb;
            } else { /* copied: rows far apart, or the last panel, narrower (zero-padded: whole vectors read) */
                if (cols < nr) memset(edge, 0, (size_t)kc * nr * sizeof *edge);
                for (int k = 0; k < kc; k++) memcpy(edge + k * nr, j->b + (size_t)(k0 + k) * j->ldb + c0, (size_t)cols * sizeof *edge);
                b = edge;
            }
            for (int i0 = 0; i0 < j->M; i0 += mr) {
                int rows = j->M - i0 < mr ? j->M - i0 : mr;
                const float *a = j->lda ? j->ap + (size_t)i0 * j->lda + k0 : j->ap + (size_t)i0 * K + (size_t)k0 * mr;
                is->kern(rows, kc, a, j->lda, b, ldb, j->C + (size_t)i0 * j->ldc + c0, j->ldc, cols, j->alpha, beta);
            }
        }
    }
}

/* C = beta C, for K = 0. */
static void scale_c(int M, int N, float beta, float *C, int ldc) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] = beta == 0 ? 0 : beta * C[(size_t)i * ldc + j];
}

/* A narrow product (a convolution's 7 x 7 or 14 x 14 outputs, one block of
 * Winograd tiles: 1 to 5 panels) has too few panels to share: it is cut
 * into blocks of rows too, a unit being a block of rows by a panel. */
typedef struct {
    const job *j;
    int64_t npan;
    int rb; /* rows per block, a multiple of mr */
} units_job;

static void run_units(void *ctx, int64_t u0, int64_t u1) {
    const units_job *s = ctx;
    const job *j = s->j;
    for (int64_t u = u0; u < u1;) {
        int64_t r = u / s->npan, p0 = u % s->npan, p1 = s->npan - p0 < u1 - u ? s->npan : p0 + (u1 - u);
        int i0 = (int)r * s->rb;
        job sub = *j;
        sub.M = j->M - i0 < s->rb ? j->M - i0 : s->rb;
        sub.ap = j->ap + (size_t)i0 * (size_t)(j->lda ? j->lda : j->K); /* packed tiles: mr x K each */
        sub.C = j->C + (size_t)i0 * j->ldc;
        sub.Mall = j->M;
        run_panels(&sub, p0, p1);
        u += p1 - p0;
    }
}

/* Products under this many multiply-adds are not worth a second split. */
#define UNITS_MIN_MACS ((int64_t)1 << 20)

static void run_job(gwr_tpool *tp, job *j) {
    int npan = cdiv(j->N, j->is->nr), mr = j->is->mr, T = gwr_tpool_size(tp);
    if (npan < 4 * PAN_GRAIN * T && j->M >= 2 * mr && (int64_t)j->M * j->N * j->K >= UNITS_MIN_MACS) {
        int want = 4 * T / npan + 1; /* row blocks: some four units a thread */
        units_job u = {j, npan, cdiv(cdiv(j->M, want), mr) * mr};
        int64_t n = (int64_t)cdiv(j->M, u.rb) * npan;
        if (gwr_tpool_splits(tp, n, 1)) {
            gwr_tpool_parallel(tp, n, 1, run_units, &u);
            return;
        }
    }
    gwr_tpool_parallel(tp, npan, PAN_GRAIN, run_panels, j);
}

int gwr_sgemm_pb(gwr_tpool *tp, int ta, int M, const float *A, int lda, const gwr_sgemm_pack *pb, float alpha, float beta, float *C,
                 int ldc) {
    if (M < 1) return 0;
    const isa_info *is = &ISAS[pb->isa];
    float *ap = NULL; /* A^T packed; A itself is read in place */
    if (ta && !(ap = gwr_malloc((size_t)cdiv(M, is->mr) * is->mr * pb->K * sizeof *ap))) return -1;
    if (ta) pack_at_into(is->mr, M, pb->K, A, lda, ap);
    job j = {is, M, pb->N, pb->K, ta ? ap : A, ta ? 0 : lda, pb->p, NULL, 0, alpha, beta, C, ldc, 0};
    run_job(tp, &j);
    gwr_free(ap);
    return 0;
}

/* ---- the products of few rows ------------------------------------------- */

typedef struct gemv_job {
    const isa_info *is;
    int M, N, K;
    const float *A;
    ptrdiff_t lda;
    const float *bp;
    float alpha, beta;
    float *C;
    ptrdiff_t ldc;
} gemv_job;

/* Groups of GEMV_GROUP panels [q0, q1) (the last group may be short). */
#define GEMV_GROUP 4
static void run_gemv(void *ctx, int64_t q0, int64_t q1) {
    const gemv_job *j = ctx;
    int nr = j->is->nr, npan = cdiv(j->N, nr);
    for (int64_t q = q0; q < q1; q++) {
        int p = (int)q * GEMV_GROUP, np = npan - p < GEMV_GROUP ? npan - p : GEMV_GROUP, ncols[GEMV_GROUP];
        for (int i = 0; i < np; i++) ncols[i] = j->N - (p + i) * nr < nr ? j->N - (p + i) * nr : nr;
        j->is->gemv(j->M, np, j->K, j->A, j->lda, j->bp + (size_t)p * nr * j->K, (ptrdiff_t)nr * j->K, j->C + (size_t)p * nr, j->ldc,
                    ncols, j->alpha, j->beta);
    }
}

int gwr_sgemv_pb(gwr_tpool *tp, int M, const float *A, int lda, const gwr_sgemm_pack *pb, float alpha, float beta, float *C, int ldc) {
    if (M < 1 || M > GWR_SGEMV_MAX_ROWS) return -1;
    const isa_info *is = &ISAS[pb->isa];
    gemv_job j = {is, M, pb->N, pb->K, A, lda, pb->p, alpha, beta, C, ldc};
    int64_t ngroup = cdiv(cdiv(pb->N, is->nr), GEMV_GROUP), per = (int64_t)GEMV_GROUP * is->nr * pb->K;
    /* a group reads `per` floats; a worker is worth waking for some 64 KB */
    gwr_tpool_parallel(tp, ngroup, (16384 + per - 1) / per, run_gemv, &j);
    return 0;
}

int gwr_sgemm_min_n(void) { return ISAS[gwr_sgemm_current_isa()].vl; }

int gwr_sgemm(gwr_tpool *tp, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
              float beta, float *C, int ldc) {
    if (M < 1 || N < 1) return 0;
    if (K < 1) {
        scale_c(M, N, beta, C, ldc);
        return 0;
    }
    const isa_info *is = &ISAS[gwr_sgemm_current_isa()];
    /* packed per call: A^T (A is read in place), B^T (B is) */
    size_t na = ta ? (size_t)cdiv(M, is->mr) * is->mr * K : 0, nb = tb ? (size_t)cdiv(N, is->nr) * is->nr * K : 0;
    float *ap = na + nb ? gwr_malloc((na + nb) * sizeof *ap) : NULL;
    if (na + nb && !ap) return -1;
    if (ta) pack_at_into(is->mr, M, K, A, lda, ap);
    if (tb) pack_b_into(is->nr, 1, K, N, B, ldb, ap + na);
    job j = {is, M, N, K, ta ? ap : A, ta ? 0 : lda, tb ? ap + na : NULL, B, ldb, alpha, beta, C, ldc, 0};
    run_job(tp, &j);
    gwr_free(ap);
    return 0;
}
