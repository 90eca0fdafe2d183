/* test_exec_igemm.c - igemm.c's exact 8-bit integer GEMM (MatMulInteger,
 * QLinearMatMul) against sums written here in int64 and wrapped to int32
 * (the spec's int32 accumulation), on the AVX2 path where the CPU has it
 * and on the portable one (gwr_ku_cnn_force_portable): shapes off the
 * 6 x 16 tile and the 256-wide K blocks, odd K, uint8 and int8, zero
 * points absent / scalar / per row or column, sums past int32. And
 * MatMulInteger in a session with a constant B and b_zero_point (B packed
 * once at planning) against the same sums. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "igemm_ref.h"
#include "exec/kernels/cnn_isa.h"
#include "exec/kernels/igemm.h"
#include "gwr/gwr.h"

static unsigned rng = 12345;
static unsigned urand(void) { return rng = rng * 1103515245u + 12345u, (rng >> 8) & 0xffffu; }

/* zmode 0: no zero points; 1: scalars; 2: per row of A and column of B. */
static void one_case(int M, int N, int K, int sa, int sb, int zmode, int fill255) {
    uint8_t *a = malloc((size_t)M * K), *b = malloc((size_t)K * N);
    int32_t *za = malloc((size_t)M * sizeof *za), *zb = malloc((size_t)N * sizeof *zb), *y = malloc((size_t)M * N * sizeof *y);
    int16_t *ap = malloc(gwr_ku_igemm_a_size(M, K) * sizeof *ap), *bp = malloc(gwr_ku_igemm_b_size(K, N) * sizeof *bp);
    if (!CHECK(a && b && za && zb && y && ap && bp)) goto done;
    for (int i = 0; i < M * K; i++) a[i] = fill255 ? (sa ? 0x80 : 255) : (uint8_t)urand();
    for (int i = 0; i < K * N; i++) b[i] = fill255 ? (sb ? 0x80 : 255) : (uint8_t)urand();
    for (int i = 0; i < M; i++) za[i] = zmode == 0 ? 0 : sa ? (int8_t)urand() : (uint8_t)urand();
    for (int j = 0; j < N; j++) zb[j] = zmode == 0 ? 0 : sb ? (int8_t)urand() : (uint8_t)urand();
    if (zmode == 1) {
        for (int i = 1; i < M; i++) za[i] = za[0];
        for (int j = 1; j < N; j++) zb[j] = zb[0];
    }
    gwr_ku_igemm_pack_a(a, sa, M, K, zmode ? za : NULL, zmode == 2 ? M : 1, ap);
    gwr_ku_igemm_pack_b(b, sb, K, N, zmode ? zb : NULL, zmode == 2 ? N : 1, bp);
    memset(y, 0x5a, (size_t)M * N * sizeof *y);
    if (!CHECK(gwr_ku_igemm(M, N, K, ap, bp, y, N) == 0)) goto done;
    int bad = 0;
    for (int i = 0; i < M && !bad; i++)
        for (int j = 0; j < N && !bad; j++) {
            int32_t want = ref(a, sa, b, sb, N, K, i, j, za[i], zb[j]);
            if (y[(size_t)i * N + j] != want) {
                bad = 1;
                fprintf(stderr, "  M %d N %d K %d sa %d sb %d z %d: y[%d][%d] = %d, want %d\n", M, N, K, sa, sb, zmode, i, j,
                        (int)y[(size_t)i * N + j], (int)want);
                CHECK(0);
            }
        }
done:
    free(a), free(b), free(za), free(zb), free(y), free(ap), free(bp);
}

static void all_cases(void) {
    static const int shapes[][3] = {{1, 1, 1}, {4, 16, 2}, {5, 17, 3}, {3, 33, 257}, {64, 48, 512}, {7, 9, 600}, {13, 31, 1}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int sg = 0; sg < 4; sg++)
            for (int z = 0; z < 3; z++) one_case(shapes[s][0], shapes[s][1], shapes[s][2], sg & 1, sg >> 1, z, 0);
    /* 40000 * 255 * 255 = 2601000000 wraps to -1693967296 (u8 x u8);
     * int8 -128 - 127 = -255 both sides: the same sum (z scalar 127) */
    one_case(5, 3, 40000, 0, 0, 0, 1);
}

TEST(igemm_exact) {
    all_cases();
    gwr_ku_cnn_force_portable(1);
    all_cases();
    gwr_ku_cnn_force_portable(0);
}

TEST(matmul_integer_constant_b) {
    enum { M = 6, K = 300, N = 21 };
    static uint8_t a[M * K];
    static int8_t b[K * N], bz[N];
    static const uint8_t az = 131;
    for (int i = 0; i < M * K; i++) a[i] = (uint8_t)urand();
    for (int i = 0; i < K * N; i++) b[i] = (int8_t)urand();
    for (int j = 0; j < N; j++) bz[j] = (int8_t)urand();
    gwr_network *net = gwr_network_new("t");
    gwr_tensor *in[4];
    in[0] = gwr_network_add_input(net, "a", GWR_UINT8, 2, (const gwr_dim[]){M, K});
    in[2] = gwr_network_add_input(net, "az", GWR_UINT8, 0, NULL);
    const void *cdata[2] = {b, bz};
    const int64_t cdims[2][2] = {{K, N}, {N, 0}};
    for (int c = 0; c < 2; c++) {
        gwr_layer *cl = gwr_network_add_layer(net, "Constant", "", c ? "bz" : "b", 0, NULL, 1, NULL);
        gwr_buffer *buf = gwr_buffer_new_copy(cdata[c], c ? N : (size_t)K * N);
        gwr_weights w = {GWR_INT8, c ? 1 : 2, cdims[c], gwr_buffer_data(buf), c ? N : (size_t)K * N, buf, NULL};
        CHECK(gwr_layer_set_tensor(cl, "value", &w) == GWR_OK);
        gwr_buffer_release(buf);
        in[c ? 3 : 1] = gwr_layer_output(cl, 0);
    }
    gwr_layer *l = gwr_network_add_layer(net, "MatMulInteger", "", "mm", 4, in, 1, NULL);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    gwr_session_options opt = {.threads = 1};
    gwr_session *s = gwr_session_new_raw(net, &opt);
    if (!s) fprintf(stderr, "  %s\n", gwr_last_errmsg());
    if (!CHECK(s != NULL)) goto done;
    CHECK(gwr_session_prepared_layers(s) >= 1); /* B packed at planning */
    const char *names[2] = {"a", "az"};
    gwr_value *vals[2] = {gwr_value_new(GWR_UINT8, 2, (const int64_t[]){M, K}), gwr_value_new(GWR_UINT8, 0, NULL)};
    memcpy(gwr_value_data(vals[0]), a, sizeof a);
    memcpy(gwr_value_data(vals[1]), &az, 1);
    for (int run = 0; run < 2; run++) {
        gwr_value *y = NULL;
        gwr_status rc = gwr_session_run(s, 2, names, vals, 1, NULL, &y);
        if (rc) fprintf(stderr, "  %s\n", gwr_session_errmsg(s));
        if (!CHECK(rc == GWR_OK)) break;
        const int32_t *yd = gwr_value_data(y);
        int bad = 0;
        for (int i = 0; i < M && !bad; i++)
            for (int j = 0; j < N && !bad; j++) {
                int32_t want = ref(a, 0, (const uint8_t *)b, 1, N, K, i, j, az, bz[j]);
                if (yd[i * N + j] != want) {
                    bad = 1;
                    fprintf(stderr, "  y[%d][%d] = %d, want %d\n", i, j, (int)yd[i * N + j], (int)want);
                    CHECK(0);
                }
            }
        gwr_value_release(y);
    }
    gwr_value_release(vals[0]), gwr_value_release(vals[1]);
done:
    gwr_session_free(s);
    gwr_network_free(net);
}

int main(void) {
    RUN(igemm_exact);
    RUN(matmul_integer_constant_b);
    return check_report();
}
