/* test_exec_igemm8.c - igemm.c's u8 x s8 kernels on a prepared B
 * (gwr_ku_ig8b: AVX2 vpmaddubsw with B' clamped to [-64, 64], AVX-512 VNNI
 * vpdpbusd and portable with [-127, 127], the rest of B' as per-column
 * outliers) against sums written here in int64 and wrapped to int32 (the
 * spec's int32 accumulation), and gwr_ku_igemm8_f32 against the int16
 * path's gwr_ku_igemm_f32 bit for bit. Every packing kind is run on the
 * kernel the CPU has for it and on the portable kernel
 * (gwr_ku_cnn_force_portable); the VNNI kernel itself runs only where the
 * CPU has AVX-512 VNNI (its packing is checked everywhere). And
 * DynamicQuantizeLinear's row quantization and parameters (AVX2 and
 * portable) against the spec's rule written here with rintf. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "igemm_ref.h"
#include "exec/kernels/cnn_isa.h"
#include "exec/kernels/igemm.h"
#include "exec/kernels/kernel_util.h"

static unsigned rng = 777;
static int n_checked, n_outliers;
static unsigned urand(void) { return rng = rng * 1103515245u + 12345u, (rng >> 8) & 0xffffu; }


/* bmode 0: B' within [-64, 64]; 1: a few outliers (1 in 2048) anywhere in the
 * dtype's range; 2: full range (too many outliers for kind 1 and for many
 * zero points); 3: B' = 64
 * and A at its dtype's extreme everywhere (with K large the sums wrap). */
static void one_case(int M, int N, int K, int sa, int sb, int zmode, int bmode, int kind) {
    uint8_t *a = malloc((size_t)M * K), *b = malloc((size_t)K * N), *a8 = malloc(gwr_ku_igemm8_a_size(M, K));
    int32_t *za = malloc((size_t)M * sizeof *za), *zb = malloc((size_t)N * sizeof *zb), *y = malloc((size_t)M * N * sizeof *y);
    int32_t *zeff = malloc((size_t)M * sizeof *zeff);
    float *f8 = malloc((size_t)M * N * sizeof *f8), *f16 = malloc((size_t)M * N * sizeof *f16), *sc = malloc((size_t)N * sizeof *sc),
          *bias = malloc((size_t)N * sizeof *bias);
    int16_t *ap = malloc(gwr_ku_igemm_a_size(M, K) * sizeof *ap), *bp = malloc(gwr_ku_igemm_b_size(K, N) * sizeof *bp);
    gwr_ku_ig8b *p = NULL;
    if (!CHECK(a && b && a8 && za && zb && y && zeff && f8 && f16 && sc && bias && ap && bp)) goto done;
    for (int i = 0; i < M; i++) za[i] = zmode == 0 ? 0 : sa ? (int8_t)urand() : (uint8_t)urand();
    int zb0 = zmode == 0 ? 0 : sb ? (int8_t)(urand() % 64) : 64 + (int)(urand() % 128);
    for (int j = 0; j < N; j++) zb[j] = zmode == 2 ? (sb ? (int8_t)(urand() % 64) : 64 + (int)(urand() % 128)) : zb0;
    for (int i = 0; i < M * K; i++) a[i] = bmode == 3 ? (sa ? 0x80 : 255) : (uint8_t)urand();
    for (int q = 0; q < K; q++)
        for (int j = 0; j < N; j++) {
            int v; /* B' wanted, then B = B' + zb in the dtype's range */
            if (bmode == 3) v = 64;
            else if (bmode == 2 || (bmode == 1 && urand() % 2048 == 0)) v = (sb ? (int8_t)urand() : (uint8_t)urand()) - zb[j];
            else v = (int)(urand() % 129) - 64;
            int w = v + zb[j], lo = sb ? -128 : 0, hi = sb ? 127 : 255;
            w = w < lo ? lo : w > hi ? hi : w;
            b[(size_t)q * N + j] = (uint8_t)w;
        }
    for (int j = 0; j < N; j++) sc[j] = (float)(urand() % 1000 + 1) * 1e-5f, bias[j] = (float)((int)urand() - 32768) * 1e-3f;
    const int32_t *zap = zmode ? za : NULL, *zbp = zmode ? zb : NULL;
    int nza = zmode == 2 ? M : 1, nzb = zmode == 2 ? N : 1;
    if (zmode == 1)
        for (int i = 1; i < M; i++) za[i] = za[0];
    p = gwr_ku_ig8b_make(b, sb, K, N, zbp, nzb, kind);
    /* more than 1/1024 of B' outside what the kernel takes: no packing, the
     * int16 path is left to do it. Portable and VNNI take [-127, 127]; AVX2
     * also needs |b0| + |b1| <= 128 for each pair of K of a column, and a
     * pair that fails costs one or two entries. */
    size_t lo = 0, hi = 0, lim = (size_t)K * N / 1024;
    for (int j = 0; j < N; j++)
        for (int q = 0; q < K; q += 2) {
            int v0 = (sb ? (int8_t)b[(size_t)q * N + j] : b[(size_t)q * N + j]) - zb[j];
            int v1 = q + 1 < K ? (sb ? (int8_t)b[(size_t)(q + 1) * N + j] : b[(size_t)(q + 1) * N + j]) - zb[j] : 0;
            int n = (abs(v0) > 127) + (abs(v1) > 127);
            if (kind == 1 && abs(v0) + abs(v1) > 128) lo += n ? n : 1, hi += 2;
            else lo += n, hi += n;
        }
    if (lo > lim) CHECK(p == NULL);
    if (hi <= lim) CHECK(p != NULL);
    if (!p) goto done;
    n_checked++, n_outliers += hi > 0;
    gwr_ku_igemm8_pack_a(a, sa, M, K, zap, nza, a8, zeff);
    memset(y, 0x5a, (size_t)M * N * sizeof *y);
    if (!CHECK(gwr_ku_igemm8(M, a8, zeff, p, y, N) == 0)) goto done;
    int bad = 0;
    for (int i = 0; i < M && !bad; i++)
        for (int j = 0; j < N && !bad; j++) {
            int32_t want = ref(a, sa, b, sb, N, K, i, j, za[i], zb[j]);
            if (y[(size_t)i * N + j] != want) {
                bad = 1;
                fprintf(stderr, "  kind %d M %d N %d K %d sa %d sb %d z %d b %d: y[%d][%d] = %d, want %d\n", kind, M, N, K, sa, sb, zmode,
                        bmode, i, j, (int)y[(size_t)i * N + j], (int)want);
                CHECK(0);
            }
        }
    /* the float form: the same bits as the int16 path's */
    gwr_ku_igemm_pack_a(a, sa, M, K, zap, nza, ap);
    gwr_ku_igemm_pack_b(b, sb, K, N, zbp, nzb, bp);
    int nsc = zmode == 2 ? N : 1;
    CHECK(gwr_ku_igemm_f32(M, N, K, ap, bp, sc, nsc, bias, f16, N) == 0);
    CHECK(gwr_ku_igemm8_f32(M, a8, zeff, p, sc, nsc, bias, f8, N) == 0);
    CHECK(memcmp(f8, f16, (size_t)M * N * sizeof *f8) == 0);
done:
    gwr_ku_ig8b_free(p);
    free(a), free(b), free(a8), free(za), free(zb), free(y), free(zeff), free(f8), free(f16), free(sc), free(bias), free(ap), free(bp);
}

static void all_cases(void) {
    static const int shapes[][3] = {{1, 1, 1}, {4, 16, 4}, {5, 17, 3}, {3, 33, 257}, {64, 48, 512}, {7, 9, 600}, {13, 31, 1}, {6, 40, 1030}};
    for (int kind = 0; kind < 3; kind++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            for (int sg = 0; sg < 4; sg++)
                for (int z = 0; z < 3; z++)
                    for (int bm = 0; bm < 3; bm++) one_case(shapes[s][0], shapes[s][1], shapes[s][2], sg & 1, sg >> 1, z, bm, kind);
    /* 140000 * 255 * 64 = 2284800000 wraps to -2010167296; int8 A: -128 * 64 * 140000 */
    for (int kind = 0; kind < 3; kind++) one_case(5, 3, 140000, 0, 1, 0, 3, kind), one_case(5, 3, 140000, 1, 1, 0, 3, kind);
}

TEST(igemm8_exact) {
    all_cases();
    CHECK(n_checked > 600 && n_outliers > 60); /* the products ran, with and without outliers */
    fprintf(stderr, "  %d products checked, %d with outliers\n", n_checked, n_outliers);
    gwr_ku_cnn_force_portable(1);
    all_cases();
    gwr_ku_cnn_force_portable(0);
}

/* DynamicQuantizeLinear's element rule from the spec: saturate(round(x /
 * scale) + zp) into [0, 255], the division in float32, rounding half to
 * even (rintf in the default mode); NaN gives 0 as onnxruntime does. */
static int dql_ref(float x, float scale, int zp) {
    float q = x / scale;
    if (isnan(q)) return 0;
    float v = rintf(q) + (float)zp;
    return v < 0 ? 0 : v > 255 ? 255 : (int)v;
}

static void dql_cases(void) {
    enum { N = 203 }; /* not a multiple of 8: the tail too */
    float x[N];
    uint8_t out[N];
    const float scale = 0.5f;
    for (int i = 0; i < N; i++) x[i] = ((float)(int)(urand() % 2001) - 1000.0f) / 7.0f;
    /* ties (q = k + 0.5 both parities), zeros, NaN, infinities, huge, about 2^22 */
    const float special[] = {0.25f, 0.75f, -0.25f, -0.75f, 1.25f, -1.25f, 0.0f, -0.0f, NAN, INFINITY, -INFINITY, 3e38f, -3e38f,
                             0x1p21f, 0x1p21f + 0.25f, -0x1p21f - 0.25f, 63.75f, -64.25f, 127.25f, 127.75f};
    for (size_t i = 0; i < sizeof special / sizeof *special; i++) x[3 + 9 * i] = special[i];
    for (int zp = 0; zp <= 255; zp += 85) {
        gwr_ku_dql_row(x, N, scale, zp, out);
        for (int i = 0; i < N; i++)
            if (out[i] != dql_ref(x[i], scale, zp)) {
                fprintf(stderr, "  dql x %g zp %d: %d, want %d\n", (double)x[i], zp, out[i], dql_ref(x[i], scale, zp));
                CHECK(0);
            }
    }
    /* the parameters: the range always holds 0, NaN is ignored */
    float sc;
    int zp;
    gwr_ku_dql_params(x, N, &sc, &zp);
    float mn = 0, mx = 0;
    for (int i = 0; i < N; i++)
        if (!isnan(x[i])) mn = fminf(mn, x[i]), mx = fmaxf(mx, x[i]);
    CHECK(isinf(mx) && isinf(mn)); /* the infinities are in x: the scale is inf or NaN either way */
    float y[N - 40];
    for (int i = 0; i < N - 40; i++) y[i] = x[i + 40] != x[i + 40] || isinf(x[i + 40]) || fabsf(x[i + 40]) > 1e30f ? 1.0f : x[i + 40];
    y[77] = NAN;
    gwr_ku_dql_params(y, N - 40, &sc, &zp);
    mn = 0, mx = 0;
    for (int i = 0; i < N - 40; i++)
        if (!isnan(y[i])) mn = fminf(mn, y[i]), mx = fmaxf(mx, y[i]);
    CHECK(sc == (mx - mn) / 255.0f);
}

TEST(dql_row_and_params) {
    dql_cases();
    gwr_ku_cnn_force_portable(1);
    dql_cases();
    gwr_ku_cnn_force_portable(0);
}

int main(void) {
    RUN(igemm8_exact);
    RUN(dql_row_and_params);
    return check_report();
}
