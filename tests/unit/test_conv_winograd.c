/* test_conv_winograd.c - Winograd F(2x2, 3x3) (conv_winograd.c), the
 * path conv.c's choose_alg takes for float32 3x3 stride-1 group-1 layers
 * of at least 32 input and output channels and 32 tiles of 2x2 outputs.
 *
 * Every case runs against a float64 convolution written here from the ONNX
 * Conv formula (zeros outside X, + B, + Z, the activation from its ONNX
 * definition) and against the same layer in float64, which the im2col path
 * runs. The weights come either as a constant (the layer's prepare hook
 * transforms them once) or as a graph input (transformed on each run).
 * Winograd's transforms round differently from a direct sum: the float32
 * result is held to 2e-5 * (1 + |y|) (absolute + relative), the maximum
 * error seen is printed. Odd sizes leave half tiles at the bottom and
 * right edges; pads 0, 1, 2 and asymmetric ones move the tiles' origin. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "conv_case.h"
#include "exec/kernels/cnn_isa.h"
#include "gwr/gwr.h"

typedef struct wconf {
    int64_t N, C, H, W, M;
    int64_t pads[4]; /* top, left, bottom, right */
    int bias, z, const_w;
    const char *act; /* FusedConv's activation, NULL: none */
    float ap[2];
} wconf;

static char last_msg[1024];
static double max_err;

static void release_nothing(void *ctx, const void *data, size_t size) { (void)ctx, (void)data, (void)size; }

/* One Conv / FusedConv over x, w, b, z (b, z may be NULL); w a constant
 * layer when c->const_w. */
static gwr_status run_layer(const wconf *c, gwr_value *x, gwr_value *w, gwr_value *b, gwr_value *z, gwr_value **y) {
    int fused = c->act || c->z;
    gwr_network *net = gwr_network_new("t");
    gwr_tensor *ts[4] = {0};
    const char *names[4];
    gwr_value *vals[4];
    int nv = 0;
    ts[0] = gwr_network_add_input(net, "x", gwr_value_dtype(x), -1, NULL), names[nv] = "x", vals[nv++] = x;
    gwr_buffer *buf = NULL;
    if (c->const_w) {
        buf = gwr_buffer_wrap(gwr_value_cdata(w), gwr_value_nbytes(w), release_nothing, NULL);
        gwr_weights wt = {gwr_value_dtype(w), 4, gwr_value_dims(w), gwr_value_cdata(w), gwr_value_nbytes(w), buf, NULL};
        ts[1] = gwr_network_add_constant(net, "w", &wt);
    } else {
        ts[1] = gwr_network_add_input(net, "w", gwr_value_dtype(w), -1, NULL), names[nv] = "w", vals[nv++] = w;
    }
    if (b) ts[2] = gwr_network_add_input(net, "b", gwr_value_dtype(b), -1, NULL), names[nv] = "b", vals[nv++] = b;
    if (z) ts[3] = gwr_network_add_input(net, "z", gwr_value_dtype(z), -1, NULL), names[nv] = "z", vals[nv++] = z;
    gwr_layer *l = gwr_network_add_layer(net, fused ? "FusedConv" : "Conv", fused ? "com.microsoft" : "", "L", fused ? 4 : 3, ts, 1, NULL);
    gwr_layer_set_ints(l, "pads", c->pads, 4);
    if (c->act) conv_case_set_activation(l, c->act, c->ap);
    gwr_status rc = conv_case_run(net, l, nv, names, vals, y, last_msg, sizeof last_msg);
    gwr_network_free(net);
    gwr_buffer_release(buf);
    return rc;
}

static unsigned rng = 777;
static double urand(void) { return conv_case_urand(&rng); }


static double act_ref(const wconf *c, double v) { return conv_case_act(c->act, c->ap, v); }

/* The ONNX Conv formula (3x3, stride 1, group 1) in float64. */
static void ref_conv(const wconf *c, const double *x, const double *w, const double *b, const double *z, int64_t OH, int64_t OW,
                     double *y) {
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t m = 0; m < c->M; m++)
            for (int64_t oy = 0; oy < OH; oy++)
                for (int64_t ox = 0; ox < OW; ox++) {
                    double s = b ? b[m] : 0;
                    for (int64_t ci = 0; ci < c->C; ci++)
                        for (int64_t ky = 0; ky < 3; ky++)
                            for (int64_t kx = 0; kx < 3; kx++) {
                                int64_t iy = oy - c->pads[0] + ky, ix = ox - c->pads[1] + kx;
                                if (iy < 0 || iy >= c->H || ix < 0 || ix >= c->W) continue;
                                s += x[((n * c->C + ci) * c->H + iy) * c->W + ix] * w[((m * c->C + ci) * 3 + ky) * 3 + kx];
                            }
                    int64_t i = ((n * c->M + m) * OH + oy) * OW + ox;
                    y[i] = act_ref(c, s + (z ? z[i] : 0));
                }
}

static int close_to(const gwr_value *got, const double *want, int64_t n, double tol, const char *what) {
    if (!got || gwr_value_numel(got) != n) {
        fprintf(stderr, "  %s: no output (%s)\n", what, last_msg);
        return 0;
    }
    for (int64_t i = 0; i < n; i++) {
        double g = gwr_value_get_f64(got, i), e = want[i], d = fabs(g - e);
        if (d > max_err && gwr_value_dtype(got) == GWR_FLOAT32) max_err = d;
        if (!(d <= tol * (1 + fabs(e)))) {
            fprintf(stderr, "  %s: element %lld is %.9g, expected %.9g\n", what, (long long)i, g, e);
            return 0;
        }
    }
    return 1;
}

/* Case c in float32 against the float64 formula and the float64 layer. */
static int run_case(const wconf *c) {
    int64_t OH = c->H + c->pads[0] + c->pads[2] - 2, OW = c->W + c->pads[1] + c->pads[3] - 2;
    int64_t nx = c->N * c->C * c->H * c->W, nw = c->M * c->C * 9, ny = c->N * c->M * OH * OW;
    double *x = malloc((size_t)nx * sizeof *x), *w = malloc((size_t)nw * sizeof *w), *b = malloc((size_t)c->M * sizeof *b);
    double *z = malloc((size_t)ny * sizeof *z), *y = malloc((size_t)ny * sizeof *y);
    /* multiples of 1/32768 in [-1, 1): float32 holds them exactly, their products not */
    for (int64_t i = 0; i < nx; i++) x[i] = urand();
    for (int64_t i = 0; i < nw; i++) w[i] = urand() / 4;
    for (int64_t i = 0; i < c->M; i++) b[i] = round(urand() * 256) / 256;
    for (int64_t i = 0; i < ny; i++) z[i] = round(urand() * 256) / 256;
    ref_conv(c, x, w, c->bias ? b : NULL, c->z ? z : NULL, OH, OW, y);
    int ok = 1;
    char what[160];
    for (int d = 0; d < 2; d++) {
        gwr_dtype dt = d ? GWR_FLOAT64 : GWR_FLOAT32;
        gwr_value *xv = conv_case_value(dt, 4, (const int64_t[]){c->N, c->C, c->H, c->W}, x);
        gwr_value *wv = conv_case_value(dt, 4, (const int64_t[]){c->M, c->C, 3, 3}, w);
        gwr_value *bv = c->bias ? conv_case_value(dt, 1, (const int64_t[]){c->M}, b) : NULL;
        gwr_value *zv = c->z ? conv_case_value(dt, 4, (const int64_t[]){c->N, c->M, OH, OW}, z) : NULL;
        gwr_value *out = NULL;
        gwr_status rc = run_layer(c, xv, wv, bv, zv, &out);
        snprintf(what, sizeof what, "N%lld C%lld M%lld %lldx%lld pads %lld,%lld,%lld,%lld %s%s%s %s", (long long)c->N,
                 (long long)c->C, (long long)c->M, (long long)c->H, (long long)c->W, (long long)c->pads[0], (long long)c->pads[1],
                 (long long)c->pads[2], (long long)c->pads[3], c->z ? "+Z " : "", c->act ? c->act : "",
                 c->const_w ? " const W" : "", gwr_dtype_name(dt));
        if (rc) fprintf(stderr, "  %s failed: %s\n", what, last_msg);
        ok &= !rc && close_to(out, y, ny, d ? 1e-12 : 2e-5, what);
        gwr_value_release(out), gwr_value_release(xv), gwr_value_release(wv), gwr_value_release(bv), gwr_value_release(zv);
    }
    free(x), free(w), free(b), free(z), free(y);
    return ok;
}

static wconf conf(int64_t N, int64_t C, int64_t M, int64_t H, int64_t W, int64_t t, int64_t l, int64_t bt, int64_t r) {
    wconf c = {.N = N, .C = C, .H = H, .W = W, .M = M, .pads = {t, l, bt, r}, .bias = 1};
    return c;
}

TEST(winograd_geometries) {
    wconf cs[] = {
        conf(2, 33, 35, 11, 13, 1, 1, 1, 1),  /* odd sizes: half tiles at the right and bottom */
        conf(1, 32, 32, 13, 15, 0, 0, 0, 0),  /* no pads */
        conf(2, 37, 33, 12, 14, 0, 1, 2, 0),  /* asymmetric pads */
        conf(1, 34, 32, 10, 11, 2, 2, 2, 2),  /* pads beyond the window: zero border tiles */
        conf(1, 32, 36, 30, 31, 1, 1, 1, 1),  /* several blocks of tiles, one ending mid row */
        conf(1, 40, 64, 8, 80, 1, 1, 1, 1),   /* a wide row: four tiles at a time, then the rest */
        conf(1, 33, 32, 9, 30, 1, 1, 1, 1),   /* 15 tiles a row: eight (AVX2), four, then three */
        conf(2, 16, 32, 12, 12, 1, 1, 1, 1),  /* 16 inputs: im2col (the threshold) */
        conf(1, 64, 64, 7, 7, 1, 1, 1, 1),    /* 16 tiles: im2col (the threshold) */
    };
    for (size_t i = 0; i < sizeof cs / sizeof *cs; i++)
        for (int cw = 0; cw < 2; cw++) {
            cs[i].const_w = cw;
            cs[i].bias = cw;
            CHECK(run_case(&cs[i]));
        }
}

static const struct {
    const char *name;
    float p[2];
} acts[] = {{"Relu", {0, 0}},        {"Tanh", {0, 0}},          {"Sigmoid", {0, 0}},
            {"LeakyRelu", {0.1f, 0}}, {"Clip", {-0.25f, 0.75f}}, {"HardSigmoid", {0.2f, 0.5f}}};

TEST(winograd_epilogue) {
    for (size_t a = 0; a < sizeof acts / sizeof *acts; a++)
        for (int z = 0; z < 2; z++) {
            wconf c = conf(2, 33, 34, 11, 12, 1, 1, 1, 1);
            c.act = acts[a].name, c.ap[0] = acts[a].p[0], c.ap[1] = acts[a].p[1], c.z = z, c.const_w = a % 2;
            CHECK(run_case(&c));
        }
    wconf c = conf(2, 33, 34, 11, 12, 1, 0, 1, 0);
    c.z = 1, c.const_w = 1; /* Z, no activation */
    CHECK(run_case(&c));
}

/* FusedConv on the Winograd path gives the bits of Conv, Add and Relu
 * run apart (the epilogue's order: + B, + Z, then the activation). */
TEST(winograd_fused_equals_unfused_bits) {
    wconf c = conf(1, 32, 33, 12, 13, 1, 1, 1, 1);
    int64_t nx = c.C * c.H * c.W, nw = c.M * c.C * 9, ny = c.M * c.H * c.W;
    double *v = malloc((size_t)(nx + nw + c.M + ny) * sizeof *v);
    for (int64_t i = 0; i < nx + nw + c.M + ny; i++) v[i] = urand();
    gwr_value *x = conv_case_value(GWR_FLOAT32, 4, (const int64_t[]){1, c.C, c.H, c.W}, v);
    gwr_value *w = conv_case_value(GWR_FLOAT32, 4, (const int64_t[]){c.M, c.C, 3, 3}, v + nx);
    gwr_value *b = conv_case_value(GWR_FLOAT32, 1, (const int64_t[]){c.M}, v + nx + nw);
    gwr_value *z = conv_case_value(GWR_FLOAT32, 4, (const int64_t[]){1, c.M, c.H, c.W}, v + nx + nw + c.M);
    gwr_value *fz = NULL, *cv = NULL, *want = NULL;
    c.const_w = 1;
    wconf fc = c;
    fc.act = "Relu", fc.z = 1;
    CHECK(!run_layer(&fc, x, w, b, z, &fz));
    CHECK(!run_layer(&c, x, w, b, NULL, &cv));
    if (CHECK(cv && fz && gwr_value_numel(fz) == ny)) {
        want = gwr_value_new(GWR_FLOAT32, 4, gwr_value_dims(cv));
        for (int64_t i = 0; i < ny; i++) {
            float s = (float)gwr_value_get_f64(cv, i) + (float)gwr_value_get_f64(z, i);
            gwr_value_set_f64(want, i, s < 0 ? 0 : s);
        }
        CHECK(!memcmp(gwr_value_cdata(fz), gwr_value_cdata(want), (size_t)ny * sizeof(float)));
    }
    gwr_value_release(fz), gwr_value_release(cv), gwr_value_release(want);
    gwr_value_release(x), gwr_value_release(w), gwr_value_release(b), gwr_value_release(z);
    free(v);
}

int main(void) {
    RUN(winograd_geometries);
    RUN(winograd_epilogue);
    RUN(winograd_fused_equals_unfused_bits);
    /* again on the portable transforms (four tiles a step; AVX2 does eight) */
    gwr_ku_cnn_force_portable(1);
    RUN(winograd_geometries);
    RUN(winograd_epilogue);
    gwr_ku_cnn_force_portable(0);
    fprintf(stderr, "winograd: max abs error against the float64 formula %.3g\n", max_err);
    return check_report();
}
