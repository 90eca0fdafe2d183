/* test_exec_nbits.c - com.microsoft MatMulNBits (exec/kernels/nbits.c)
 * against a reference written here: B unpacked and dequantized in double
 * by the operator's definition, (q - zero_point) * scale, then a plain
 * matrix product in double. 4 and 8 bits; zero points absent, packed
 * uint8 and float; bias; K not a multiple of block_size (the last block
 * padded); batch dims; 1 to 8 rows (the GEMV path, 4 rows at a time) and
 * 9 or more (the dequantized panels); the AVX2 path and the portable one (gwr_ku_cnn_force_portable);
 * 1 and 2 threads giving the same bits. Bad input (bits 3, a B of the wrong
 * shape) fails with a message, not a crash. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "exec/kernels/cnn_isa.h"
#include "gwr/gwr.h"

static unsigned rng = 2024;
static unsigned urand(void) { return rng = rng * 1103515245u + 12345u, (rng >> 8) & 0xffffu; }
static float frand(float lo, float hi) { return lo + (hi - lo) * (float)urand() / 65535.0f; }

enum { ZP_NONE, ZP_U8, ZP_FLOAT };

typedef struct ncase {
    int bits, bs, K, N, zp, bias;
    int d0, d1; /* A [d0, d1, K] */
} ncase;

typedef struct ndata {
    float *a, *sc, *zf, *bias;
    uint8_t *b, *zq;
    int kb, blob, zrow;
} ndata;

static int64_t nq(const ncase *c) { return (int64_t)c->N * ((c->K + c->bs - 1) / c->bs) * (c->bs * c->bits / 8); }

static void make_data(const ncase *c, ndata *d) {
    d->kb = (c->K + c->bs - 1) / c->bs, d->blob = c->bs * c->bits / 8, d->zrow = (d->kb * c->bits + 7) / 8;
    int M = c->d0 * c->d1;
    d->a = malloc((size_t)M * c->K * sizeof *d->a);
    d->b = malloc((size_t)nq(c));
    d->sc = malloc((size_t)c->N * d->kb * sizeof *d->sc);
    d->zf = malloc((size_t)c->N * d->kb * sizeof *d->zf);
    d->zq = malloc((size_t)c->N * d->zrow);
    d->bias = malloc((size_t)c->N * sizeof *d->bias);
    for (int i = 0; i < M * c->K; i++) d->a[i] = frand(-1, 1);
    for (int64_t i = 0; i < nq(c); i++) d->b[i] = (uint8_t)urand();
    for (int i = 0; i < c->N * d->kb; i++) d->sc[i] = frand(0.005f, 0.05f), d->zf[i] = frand(0, (float)(1 << c->bits));
    for (int i = 0; i < c->N * d->zrow; i++) d->zq[i] = (uint8_t)urand();
    for (int i = 0; i < c->N; i++) d->bias[i] = frand(-2, 2);
}

static void free_data(ndata *d) { free(d->a), free(d->b), free(d->sc), free(d->zf), free(d->zq), free(d->bias); }

/* W[k][n] by the definition, in double. */
static double wref(const ncase *c, const ndata *d, int k, int n) {
    int b = k / c->bs, e = k % c->bs;
    const uint8_t *blk = d->b + ((size_t)n * d->kb + b) * d->blob;
    int q = c->bits == 8 ? blk[e] : (blk[e / 2] >> ((e % 2) * 4)) & 15;
    double z = 1 << (c->bits - 1);
    if (c->zp == ZP_FLOAT) z = d->zf[n * d->kb + b];
    if (c->zp == ZP_U8) {
        uint8_t byte = d->zq[n * d->zrow + (c->bits == 8 ? b : b / 2)];
        z = c->bits == 8 ? byte : (byte >> ((b % 2) * 4)) & 15;
    }
    return (q - z) * (double)d->sc[n * d->kb + b];
}

static gwr_network *build(const ncase *c, int bits_attr, int64_t b_last) {
    gwr_network *net = gwr_network_new("nbits");
    int kb = (c->K + c->bs - 1) / c->bs;
    gwr_tensor *in[6] = {0};
    in[0] = gwr_network_add_input(net, "a", GWR_FLOAT32, 3, (const gwr_dim[]){c->d0, c->d1, c->K});
    in[1] = gwr_network_add_input(net, "b", GWR_UINT8, 3, (const gwr_dim[]){c->N, kb, b_last});
    in[2] = gwr_network_add_input(net, "s", GWR_FLOAT32, 2, (const gwr_dim[]){c->N, kb});
    if (c->zp == ZP_U8) in[3] = gwr_network_add_input(net, "z", GWR_UINT8, 2, (const gwr_dim[]){c->N, (kb * c->bits + 7) / 8});
    if (c->zp == ZP_FLOAT) in[3] = gwr_network_add_input(net, "z", GWR_FLOAT32, 2, (const gwr_dim[]){c->N, kb});
    if (c->bias) in[5] = gwr_network_add_input(net, "bias", GWR_FLOAT32, 1, (const gwr_dim[]){c->N});
    int nin = c->bias ? 6 : c->zp ? 4 : 3;
    gwr_layer *l = gwr_network_add_layer(net, "MatMulNBits", "com.microsoft", "mm", nin, in, 1, NULL);
    if (!l) return net;
    gwr_layer_set_int(l, "K", c->K), gwr_layer_set_int(l, "N", c->N), gwr_layer_set_int(l, "bits", bits_attr);
    gwr_layer_set_int(l, "block_size", c->bs), gwr_layer_set_int(l, "accuracy_level", 0);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    return net;
}

/* Runs the layer on `threads` threads; the output (new reference) or NULL
 * with the message in err. */
static gwr_value *run(const ncase *c, const ndata *d, int threads, int bits_attr, int64_t b_last, char *err, size_t errn) {
    gwr_network *net = build(c, bits_attr, b_last);
    gwr_session_options opt = {.threads = threads};
    gwr_session *s = gwr_session_new_raw(net, &opt);
    gwr_value *y = NULL;
    snprintf(err, errn, "%s", s ? "" : gwr_last_errmsg());
    if (s) {
        int kb = d->kb;
        const char *names[5] = {"a", "b", "s"};
        gwr_value *v[5] = {gwr_value_new(GWR_FLOAT32, 3, (const int64_t[]){c->d0, c->d1, c->K}),
                           gwr_value_new(GWR_UINT8, 3, (const int64_t[]){c->N, kb, b_last}),
                           gwr_value_new(GWR_FLOAT32, 2, (const int64_t[]){c->N, kb})};
        memcpy(gwr_value_data(v[0]), d->a, (size_t)c->d0 * c->d1 * c->K * sizeof(float));
        int64_t nb = (int64_t)c->N * kb * b_last;
        memcpy(gwr_value_data(v[1]), d->b, (size_t)(nb < nq(c) ? nb : nq(c)));
        memcpy(gwr_value_data(v[2]), d->sc, (size_t)c->N * kb * sizeof(float));
        int n = 3;
        if (c->zp == ZP_U8) {
            names[n] = "z", v[n] = gwr_value_new(GWR_UINT8, 2, (const int64_t[]){c->N, d->zrow});
            memcpy(gwr_value_data(v[n++]), d->zq, (size_t)c->N * d->zrow);
        } else if (c->zp == ZP_FLOAT) {
            names[n] = "z", v[n] = gwr_value_new(GWR_FLOAT32, 2, (const int64_t[]){c->N, kb});
            memcpy(gwr_value_data(v[n++]), d->zf, (size_t)c->N * kb * sizeof(float));
        }
        if (c->bias) {
            names[n] = "bias", v[n] = gwr_value_new(GWR_FLOAT32, 1, (const int64_t[]){c->N});
            memcpy(gwr_value_data(v[n++]), d->bias, (size_t)c->N * sizeof(float));
        }
        if (gwr_session_run(s, n, names, v, 1, NULL, &y) != GWR_OK) snprintf(err, errn, "%s", gwr_session_errmsg(s)), y = NULL;
        for (int i = 0; i < n; i++) gwr_value_release(v[i]);
    }
    gwr_session_free(s);
    gwr_network_free(net);
    return y;
}

static void one_case(const ncase *c) {
    ndata d;
    char err[512];
    make_data(c, &d);
    int M = c->d0 * c->d1;
    gwr_value *y1 = run(c, &d, 1, c->bits, d.blob, err, sizeof err);
    gwr_value *y2 = run(c, &d, 2, c->bits, d.blob, err, sizeof err);
    if (!CHECK(y1 && y2)) {
        fprintf(stderr, "  bits %d bs %d K %d N %d M %d: %s\n", c->bits, c->bs, c->K, c->N, M, err);
        goto done;
    }
    const int64_t *dims = gwr_value_dims(y1);
    CHECK(gwr_value_rank(y1) == 3 && dims[0] == c->d0 && dims[1] == c->d1 && dims[2] == c->N);
    const float *g = gwr_value_data(y1);
    /* 1 and 2 threads: the same bits */
    if (!CHECK(memcmp(g, gwr_value_data(y2), (size_t)M * c->N * sizeof *g) == 0))
        fprintf(stderr, "  bits %d bs %d K %d N %d M %d: 1 and 2 threads differ\n", c->bits, c->bs, c->K, c->N, M);
    double worst = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < c->N; n++) {
            double s = c->bias ? d.bias[n] : 0, mag = fabs(s);
            for (int k = 0; k < c->K; k++) {
                double t = d.a[m * c->K + k] * wref(c, &d, k, n);
                s += t, mag += fabs(t);
            }
            /* float32 accumulation: a few ulps of the sum of magnitudes */
            double e = fabs(g[m * c->N + n] - s) / (mag + 1e-30);
            if (e > worst) worst = e;
        }
    if (!CHECK(worst < 1e-5))
        fprintf(stderr, "  bits %d bs %d K %d N %d M %d zp %d: error %g of the magnitude\n", c->bits, c->bs, c->K, c->N, M, c->zp, worst);
done:
    gwr_value_release(y1), gwr_value_release(y2);
    free_data(&d);
}

static const ncase cases[] = {
    {4, 32, 64, 300, ZP_NONE, 0, 1, 1},  {4, 32, 100, 300, ZP_U8, 1, 1, 1},   {4, 16, 100, 300, ZP_U8, 1, 1, 7},
    {4, 64, 200, 300, ZP_FLOAT, 1, 1, 1}, {4, 32, 96, 300, ZP_FLOAT, 0, 7, 1}, {4, 128, 130, 257, ZP_NONE, 1, 1, 7},
    {8, 16, 48, 300, ZP_U8, 1, 1, 1},     {8, 32, 70, 300, ZP_NONE, 1, 7, 1},  {8, 64, 200, 300, ZP_U8, 0, 1, 7},
    {8, 32, 40, 300, ZP_FLOAT, 1, 1, 1},  {4, 16, 33, 3, ZP_U8, 1, 2, 1},     {4, 32, 5000, 300, ZP_U8, 1, 1, 1},
    {4, 32, 77, 65, ZP_U8, 1, 1, 9},      {8, 16, 17, 130, ZP_NONE, 0, 3, 3},  {4, 32, 100, 300, ZP_FLOAT, 1, 3, 1},
    {8, 32, 64, 300, ZP_U8, 1, 4, 1},
    /* a prefill's rows: several panels, the last narrower than the packed panels, rows past whole tiles */
    {4, 32, 100, 300, ZP_FLOAT, 1, 10, 13}, {4, 32, 512, 200, ZP_U8, 0, 1, 128},
};

TEST(nbits_vs_reference) {
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) one_case(&cases[i]);
}

TEST(nbits_portable) {
    gwr_ku_cnn_force_portable(1);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) one_case(&cases[i]);
    gwr_ku_cnn_force_portable(0);
}

/* Errors, not crashes: bits 3, B of the wrong shape. */
TEST(nbits_bad_input) {
    ncase c = {4, 32, 64, 8, ZP_U8, 1, 1, 1};
    ndata d;
    char err[512];
    make_data(&c, &d);
    gwr_value *y = run(&c, &d, 1, 3, d.blob, err, sizeof err);
    CHECK(y == NULL && strstr(err, "bits 3"));
    gwr_value_release(y);
    y = run(&c, &d, 1, 4, d.blob - 1, err, sizeof err);
    CHECK(y == NULL && strstr(err, "B must be"));
    gwr_value_release(y);
    free_data(&d);
}

int main(void) {
    RUN(nbits_vs_reference);
    RUN(nbits_portable);
    RUN(nbits_bad_input);
    return check_report();
}
