/* test_conv_dw.c - the direct depthwise kernels (conv_depthwise.c) over
 * edge geometries, on the AVX2 path where the CPU has it and on the
 * portable path (gwr_ku_cnn_force_portable) everywhere.
 *
 * Every case runs a Conv or FusedConv layer of group == channels through
 * a session and checks it against a float64 convolution written here from
 * the ONNX Conv formula (y[n,m,oy,ox] = B[m] + sum over ky, kx of
 * X[n, m/mult, oy*s - pad_top + ky, ox*s - pad_left + kx] W[m,0,ky,kx],
 * zeros outside X), + Z and the activation from its ONNX definition.
 * Tolerance 1e-5 relative (+1e-5 absolute): the float32 sums of at most
 * 25 products of inputs in [-1, 1] may be reassociated or fused (FMA),
 * which moves them by a few ulps of the largest partial sum (~1e-6). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "conv_case.h"
#include "exec/kernels/cnn_isa.h"
#include "exec/kernels/kernel_util.h"
#include "gwr/gwr.h"

typedef struct dconf {
    int64_t N, C, mult, H, W, k, s, d;
    int64_t pads[4]; /* top, left, bottom, right */
    int bias, z;
    const char *act; /* FusedConv's activation; NULL: Conv */
    float ap[2];
} dconf;

static char msg[1024];
static unsigned rng = 777;
static double urand(void) { return conv_case_urand(&rng); }

static int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe) {
    return (in + pb + pe - ((k - 1) * d + 1)) / s + 1;
}

/* The activation from its ONNX definition (HardSwish too, which the
 * shared helper lacks). */
static double act_ref(const dconf *c, double v) {
    if (c->act && !strcmp(c->act, "HardSwish")) return v * fmax(0, fmin(1, v / 6 + 0.5));
    return conv_case_act(c->act, c->ap, v);
}

static void ref_dw(const dconf *c, const double *x, const double *w, const double *b, const double *z, int64_t OH, int64_t OW,
                   double *y) {
    int64_t M = c->C * c->mult;
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t oy = 0; oy < OH; oy++)
                for (int64_t ox = 0; ox < OW; ox++) {
                    double s = b ? b[m] : 0;
                    for (int64_t ky = 0; ky < c->k; ky++)
                        for (int64_t kx = 0; kx < c->k; kx++) {
                            int64_t iy = oy * c->s - c->pads[0] + ky * c->d, ix = ox * c->s - c->pads[1] + kx * c->d;
                            if (iy < 0 || iy >= c->H || ix < 0 || ix >= c->W) continue;
                            s += x[((n * c->C + m / c->mult) * c->H + iy) * c->W + ix] * w[(m * c->k + ky) * c->k + kx];
                        }
                    int64_t i = ((n * M + m) * OH + oy) * OW + ox;
                    y[i] = act_ref(c, s + (z ? z[i] : 0));
                }
}

/* Runs c through a session on x, w, b, z (float32 values), output in
 * *out; GWR_OK or the failure (message in msg). */
static gwr_status run_dw(const dconf *c, gwr_value *const *in, gwr_value **out) {
    int fused = c->act || c->z;
    gwr_network *net = gwr_network_new("t");
    static const char *const nm[4] = {"x", "w", "b", "z"};
    const char *names[4];
    gwr_value *vals[4];
    gwr_tensor *ts[4] = {0};
    int nv = 0, nin = fused ? 4 : 3;
    for (int i = 0; i < nin; i++) {
        if ((i == 2 && !c->bias) || (i == 3 && !c->z)) continue;
        ts[i] = gwr_network_add_input(net, nm[i], GWR_FLOAT32, -1, NULL);
        names[nv] = nm[i], vals[nv++] = in[i];
    }
    gwr_layer *l = gwr_network_add_layer(net, fused ? "FusedConv" : "Conv", fused ? "com.microsoft" : "", "L", nin, ts, 1, NULL);
    gwr_layer_set_ints(l, "strides", (const int64_t[]){c->s, c->s}, 2);
    gwr_layer_set_ints(l, "dilations", (const int64_t[]){c->d, c->d}, 2);
    gwr_layer_set_ints(l, "pads", c->pads, 4);
    gwr_layer_set_int(l, "group", c->C);
    if (c->act) conv_case_set_activation(l, c->act, c->ap);
    gwr_status rc = conv_case_run(net, l, nv, names, vals, out, msg, sizeof msg);
    gwr_network_free(net);
    return rc;
}

/* c's inputs, random, in float32 (and as doubles in xd.. when given). */
static void make_inputs(const dconf *c, gwr_value **in, double **xd, double **wd, double **bd, double **zd) {
    int64_t M = c->C * c->mult, OH = out_dim(c->H, c->k, c->s, c->d, c->pads[0], c->pads[2]);
    int64_t OW = out_dim(c->W, c->k, c->s, c->d, c->pads[1], c->pads[3]);
    int64_t n[4] = {c->N * c->C * c->H * c->W, M * c->k * c->k, M, c->N * M * OH * OW};
    double *v[4];
    for (int t = 0; t < 4; t++) {
        v[t] = malloc((size_t)n[t] * sizeof *v[t]);
        for (int64_t i = 0; i < n[t]; i++) v[t][i] = (float)urand(); /* as float32 holds them */
    }
    in[0] = conv_case_value(GWR_FLOAT32, 4, (const int64_t[]){c->N, c->C, c->H, c->W}, v[0]);
    in[1] = conv_case_value(GWR_FLOAT32, 4, (const int64_t[]){M, 1, c->k, c->k}, v[1]);
    in[2] = conv_case_value(GWR_FLOAT32, 1, (const int64_t[]){M}, v[2]);
    in[3] = conv_case_value(GWR_FLOAT32, 4, (const int64_t[]){c->N, M, OH, OW}, v[3]);
    double **outs[4] = {xd, wd, bd, zd};
    for (int t = 0; t < 4; t++) {
        if (outs[t]) *outs[t] = v[t];
        else free(v[t]);
    }
}

/* Runs c through a session; 1 when every output is within tolerance. */
static int run_case(const dconf *c) {
    int64_t M = c->C * c->mult, OH = out_dim(c->H, c->k, c->s, c->d, c->pads[0], c->pads[2]);
    int64_t OW = out_dim(c->W, c->k, c->s, c->d, c->pads[1], c->pads[3]);
    int64_t ny = c->N * M * OH * OW;
    double *x, *w, *b, *z, *y = malloc((size_t)ny * sizeof *y);
    gwr_value *in[4];
    make_inputs(c, in, &x, &w, &b, &z);
    ref_dw(c, x, w, c->bias ? b : NULL, c->z ? z : NULL, OH, OW, y);
    gwr_value *out = NULL;
    gwr_status rc = run_dw(c, in, &out);
    int ok = !rc && out && gwr_value_numel(out) == ny;
    for (int64_t i = 0; ok && i < ny; i++) {
        double g = gwr_value_get_f64(out, i);
        if (!(fabs(g - y[i]) <= 1e-5 * (1 + fabs(y[i])))) {
            fprintf(stderr, "  k%lld s%lld C%lld x%lld N%lld %lldx%lld pads %lld,%lld,%lld,%lld %s: element %lld is %.9g, expected %.9g\n",
                    (long long)c->k, (long long)c->s, (long long)c->C, (long long)c->mult, (long long)c->N, (long long)c->H,
                    (long long)c->W, (long long)c->pads[0], (long long)c->pads[1], (long long)c->pads[2], (long long)c->pads[3],
                    c->act ? c->act : "-", (long long)i, g, y[i]);
            ok = 0;
        }
    }
    if (rc) fprintf(stderr, "  failed: %s\n", msg);
    gwr_value_release(out);
    for (int i = 0; i < 4; i++) gwr_value_release(in[i]);
    free(x), free(w), free(b), free(z), free(y);
    return ok;
}

static dconf dw(int64_t C, int64_t H, int64_t W, int64_t k, int64_t s, int64_t p) {
    dconf c = {.N = 2, .C = C, .mult = 1, .H = H, .W = W, .k = k, .s = s, .d = 1, .pads = {p, p, p, p}, .bias = 1};
    return c;
}

/* Sizes below, at and above the vector width (8) and the stride-2
 * staging step (16), with each window, stride and pad; both paths. */
static void geometries(void) {
    static const int64_t sizes[] = {1, 2, 7, 15, 16, 17, 33};
    int ns = (int)(sizeof sizes / sizeof *sizes);
    for (int k = 3; k <= 5; k += 2)
        for (int s = 1; s <= 2; s++)
            for (int p = 0; p <= 2; p++)
                for (int hi = 0; hi < ns; hi++)
                    for (int wi = hi % 2; wi < ns; wi += 2) {
                        dconf c = dw(hi % 3 ? 3 : 1, sizes[hi], sizes[wi], k, s, p);
                        if (sizes[hi] + 2 * p < k || sizes[wi] + 2 * p < k) continue; /* no output */
                        c.bias = (hi + wi) % 2;
                        CHECK(run_case(&c));
                    }
}

/* Pads that differ per side (TF SAME, one-sided, beyond the window). */
static void uneven_pads(void) {
    static const int64_t pads[][4] = {{0, 0, 1, 1}, {1, 0, 0, 2}, {2, 1, 1, 2}, {0, 2, 2, 0}, {3, 3, 3, 3}, {1, 2, 0, 0}};
    for (int k = 3; k <= 5; k += 2)
        for (int s = 1; s <= 2; s++)
            for (int i = 0; i < 6; i++) {
                dconf c = dw(3, 17, 15 + i, k, s, 0);
                memcpy(c.pads, pads[i], sizeof c.pads);
                CHECK(run_case(&c));
            }
}

/* Bias, Z and every fused activation on each kernel; a depth multiplier. */
static void epilogues(void) {
    static const struct {
        const char *name;
        float p[2];
    } acts[] = {{"Relu", {0, 0}}, {"HardSwish", {0, 0}}, {"Clip", {0, 6}}, {"LeakyRelu", {0.1f, 0}}, {"HardSigmoid", {0.2f, 0.5f}},
                {"Sigmoid", {0, 0}}, {"Tanh", {0, 0}}};
    for (int k = 3; k <= 5; k += 2)
        for (int s = 1; s <= 2; s++)
            for (size_t a = 0; a < sizeof acts / sizeof *acts; a++) {
                dconf c = dw(5, 9, 20, k, s, k / 2);
                c.act = acts[a].name, c.ap[0] = acts[a].p[0], c.ap[1] = acts[a].p[1], c.z = (int)a % 2, c.bias = (int)a % 3 != 2;
                CHECK(run_case(&c));
            }
    dconf c = dw(3, 11, 9, 5, 2, 2);
    c.mult = 2; /* two output planes per input plane */
    CHECK(run_case(&c));
    c = dw(3, 12, 12, 3, 1, 2);
    c.d = 2; /* dilation: not the direct kernel (im2col), same answer */
    CHECK(run_case(&c));
}

TEST(depthwise_cpu_path) {
    geometries();
    uneven_pads();
    epilogues();
}

TEST(depthwise_portable_path) {
    gwr_ku_cnn_force_portable(1);
    CHECK(!gwr_ku_cnn_avx2());
    geometries();
    uneven_pads();
    epilogues();
    gwr_ku_cnn_force_portable(0);
}

/* The kernel writes its plane and nothing past it: a row under eight
 * wide stores whole vectors into the rows after it, never past the
 * plane's last element (the next plane may be another worker's). */
TEST(depthwise_plane_bounds) {
    for (int portable = 0; portable < 2; portable++) {
        gwr_ku_cnn_force_portable(portable);
        for (int64_t ow = 1; ow <= 9; ow++)
            for (int k = 3; k <= 5; k += 2)
                for (int s = 1; s <= 2; s++) {
                    gwr_ku_window g;
                    gwr_ku_window_init(&g, 2);
                    g.k[1] = g.k[2] = k, g.s[1] = g.s[2] = s;
                    g.pb[1] = g.pb[2] = g.pe[1] = g.pe[2] = k / 2;
                    g.in[1] = 3, g.in[2] = (ow - 1) * s + 1;
                    g.out[1] = (g.in[1] + 2 * (k / 2) - k) / s + 1, g.out[2] = ow;
                    int64_t ny = g.out[1] * g.out[2];
                    float x[64], wt[25], y[96 + 16];
                    for (int i = 0; i < 64; i++) x[i] = (float)urand();
                    for (int i = 0; i < 25; i++) wt[i] = (float)urand();
                    for (int i = 0; i < 96 + 16; i++) y[i] = 12345.0f;
                    float *pad = calloc((size_t)gwr_ku_dw_scratch(&g), sizeof *pad);
                    gwr_ku_dw_plane_f32(x, wt, &g, pad, y);
                    int clean = 1;
                    for (int64_t i = ny; i < 96 + 16; i++) clean &= y[i] == 12345.0f;
                    CHECK(clean);
                    for (int64_t i = 0; i < ny; i++) CHECK(y[i] != 12345.0f);
                    free(pad);
                }
    }
    gwr_ku_cnn_force_portable(0);
}

/* im2col's strided gather (im2col_rows.c): dst[i] = src[s i] on both
 * paths, lengths around both vector widths, and nothing written past n
 * nor read past src[s (n - 1)] (the source ends there: ASan sees it). */
TEST(im2col_gather) {
    for (int portable = 0; portable < 2; portable++) {
        gwr_ku_cnn_force_portable(portable);
        for (int64_t st = 1; st <= 3; st++)
            for (int64_t n = 0; n <= 40; n++) {
                int64_t len = n ? st * (n - 1) + 1 : 0;
                float *src = malloc((size_t)(len ? len : 1) * sizeof *src), dst[48];
                for (int64_t i = 0; i < len; i++) src[i] = (float)(i * 3 + 1);
                for (int i = 0; i < 48; i++) dst[i] = -1.0f;
                gwr_ku_gather_f32(src, st, n, dst);
                int ok = 1;
                for (int64_t i = 0; i < n; i++) ok &= dst[i] == (float)(st * i * 3 + 1);
                for (int64_t i = n; i < 48; i++) ok &= dst[i] == -1.0f;
                if (!CHECK(ok)) fprintf(stderr, "  stride %lld, n %lld, portable %d\n", (long long)st, (long long)n, portable);
                free(src);
            }
    }
    gwr_ku_cnn_force_portable(0);
}

/* Strided convolutions that im2col gathers, on both paths, against the
 * same formula: one input channel (group 1 = C), so a dilated 3x3 or a
 * 7x7 (with four outputs) is not the direct kernel. */
TEST(im2col_strided_layers) {
    for (int portable = 0; portable < 2; portable++) {
        gwr_ku_cnn_force_portable(portable);
        for (int64_t w = 3; w <= 39; w += 4) {
            dconf c = dw(1, 9, w, 3, 2, 1);
            c.d = 2; /* dilation 2: not the direct kernel */
            CHECK(run_case(&c));
            c = dw(1, 11, w + 6, 7, 2, 3);  /* a 7x7 stride-2 first layer */
            c.mult = 4;
            CHECK(run_case(&c));
        }
    }
    gwr_ku_cnn_force_portable(0);
}

/* One activation layer (with its attributes) on v. */
static gwr_value *run_act(const char *op, const float ap[2], gwr_value *v) {
    gwr_network *net = gwr_network_new("a");
    gwr_tensor *t = gwr_network_add_input(net, "v", GWR_FLOAT32, -1, NULL);
    gwr_layer *l = gwr_network_add_layer(net, op, "", "A", 1, &t, 1, NULL);
    if (!strcmp(op, "LeakyRelu")) gwr_layer_set_float(l, "alpha", ap[0]);
    if (!strcmp(op, "HardSigmoid")) gwr_layer_set_float(l, "alpha", ap[0]), gwr_layer_set_float(l, "beta", ap[1]);
    gwr_value *y = NULL;
    const char *name = "v";
    if (conv_case_run(net, l, 1, &name, &v, &y, msg, sizeof msg)) fprintf(stderr, "  %s failed: %s\n", op, msg);
    gwr_network_free(net);
    return y;
}

static int same_bits(const gwr_value *a, const gwr_value *b) {
    return a && b && gwr_value_numel(a) == gwr_value_numel(b) &&
           !memcmp(gwr_value_cdata(a), gwr_value_cdata(b), (size_t)gwr_value_numel(a) * sizeof(float));
}

/* a and b within 1e-5 relative (the AVX2 path's fused multiply-adds
 * against the portable path's two roundings); NaN where the other is. */
static int close_vals(const gwr_value *a, const gwr_value *b) {
    if (!a || !b || gwr_value_numel(a) != gwr_value_numel(b)) return 0;
    const float *x = gwr_value_cdata(a), *y = gwr_value_cdata(b);
    for (int64_t i = 0; i < gwr_value_numel(a); i++)
        if (isnan(x[i]) != isnan(y[i]) || (!isnan(x[i]) && x[i] != y[i] && !(fabsf(x[i] - y[i]) <= 1e-5f * (1 + fabsf(y[i])))))
            return 0;
    return 1;
}

/* The activations applied on the stored vectors give the bits of Conv
 * then the activation layer, on each path; the two paths agree within the
 * sums' rounding. */
TEST(depthwise_epilogue_bits) {
    static const struct {
        const char *name;
        float p[2];
    } acts[] = {{"Relu", {0, 0}}, {"HardSwish", {0, 0}}, {"LeakyRelu", {0.1f, 0}}, {"HardSigmoid", {0.2f, 0.5f}}};
    for (int k = 3; k <= 5; k += 2)
        for (int s = 1; s <= 2; s++)
            for (int a = 0; a < 4; a++) {
                dconf c = dw(3, 13, 7 + 6 * a, k, s, k / 2), plain = c;
                c.act = acts[a].name, c.ap[0] = acts[a].p[0], c.ap[1] = acts[a].p[1];
                gwr_value *in[4], *fused[2] = {NULL, NULL};
                make_inputs(&c, in, NULL, NULL, NULL, NULL);
                /* special values through the activation: NaN, infinities, 0 */
                float *xv = gwr_value_data(in[0]);
                xv[5] = NAN, xv[40] = INFINITY, xv[77] = -INFINITY;
                for (int portable = 0; portable < 2; portable++) {
                    gwr_value *conv = NULL;
                    gwr_ku_cnn_force_portable(portable);
                    CHECK(!run_dw(&c, in, &fused[portable]));
                    CHECK(!run_dw(&plain, in, &conv));
                    gwr_value *sep = conv ? run_act(c.act, c.ap, conv) : NULL;
                    CHECK(same_bits(fused[portable], sep));
                    gwr_value_release(conv), gwr_value_release(sep);
                }
                gwr_ku_cnn_force_portable(0);
                CHECK(close_vals(fused[0], fused[1]));
                gwr_value_release(fused[0]), gwr_value_release(fused[1]);
                for (int i = 0; i < 4; i++) gwr_value_release(in[i]);
            }
}

/* MaxPool's float32 rows (pool.c + gwr_ku_max_row_f32) against the ONNX
 * definition scanned in window order with the executor's compare (a NaN
 * never wins, -inf where no input does; the first of equal values, so
 * -0 / +0 keep their sign): windows 2, 3 and 5, strides 1, 2, 3, pads,
 * a dilation, widths around both vector widths; exact, on both paths. */
static int maxpool_case(int64_t H, int64_t W, int64_t k, int64_t s, int64_t p, int64_t d, int64_t ceil) {
    int64_t ek = (k - 1) * d + 1, OH = (H + 2 * p - ek + (ceil ? s - 1 : 0)) / s + 1, OW = (W + 2 * p - ek + (ceil ? s - 1 : 0)) / s + 1;
    if (ceil && (OH - 1) * s >= H + p) OH--; /* a last window starting in the end padding does not count */
    if (ceil && (OW - 1) * s >= W + p) OW--;
    int64_t N = 2, C = 3, nx = N * C * H * W, ny = N * C * OH * OW;
    double *x = malloc((size_t)nx * sizeof *x), *y = malloc((size_t)ny * sizeof *y);
    static const double sp[] = {NAN, -INFINITY, INFINITY, 0.0, -0.0};
    for (int64_t i = 0; i < nx; i++) x[i] = (float)urand();
    for (int64_t i = 0; i < nx; i += 7) x[i] = sp[(i / 7) % 5];
    for (int64_t pl = 0; pl < N * C; pl++)
        for (int64_t oy = 0; oy < OH; oy++)
            for (int64_t ox = 0; ox < OW; ox++) {
                float m = -INFINITY;
                for (int64_t ky = 0; ky < k; ky++)
                    for (int64_t kx = 0; kx < k; kx++) {
                        int64_t iy = oy * s - p + ky * d, ix = ox * s - p + kx * d;
                        if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                        float v = (float)x[(pl * H + iy) * W + ix];
                        if (v > m) m = v;
                    }
                y[(pl * OH + oy) * OW + ox] = m;
            }
    gwr_value *xv = conv_case_value(GWR_FLOAT32, 4, (const int64_t[]){N, C, H, W}, x), *out = NULL;
    gwr_network *net = gwr_network_new("p");
    gwr_tensor *t = gwr_network_add_input(net, "x", GWR_FLOAT32, -1, NULL);
    gwr_layer *l = gwr_network_add_layer(net, "MaxPool", "", "P", 1, &t, 1, NULL);
    gwr_layer_set_ints(l, "kernel_shape", (const int64_t[]){k, k}, 2);
    gwr_layer_set_ints(l, "strides", (const int64_t[]){s, s}, 2);
    gwr_layer_set_ints(l, "pads", (const int64_t[]){p, p, p, p}, 4);
    gwr_layer_set_ints(l, "dilations", (const int64_t[]){d, d}, 2);
    gwr_layer_set_int(l, "ceil_mode", ceil);
    const char *name = "x";
    gwr_status rc = conv_case_run(net, l, 1, &name, &xv, &out, msg, sizeof msg);
    int ok = !rc && out && gwr_value_numel(out) == ny;
    const float *got = ok ? gwr_value_cdata(out) : NULL;
    for (int64_t i = 0; ok && i < ny; i++) {
        float e = (float)y[i];
        if (memcmp(&got[i], &e, sizeof e) && !(isnan(got[i]) && isnan(e))) {
            fprintf(stderr, "  MaxPool %lldx%lld k%lld s%lld p%lld d%lld ceil %lld: element %lld is %g, expected %g\n", (long long)H,
                    (long long)W, (long long)k, (long long)s, (long long)p, (long long)d, (long long)ceil, (long long)i, got[i], e);
            ok = 0;
        }
    }
    if (rc) fprintf(stderr, "  MaxPool failed: %s\n", msg);
    gwr_value_release(out), gwr_value_release(xv);
    gwr_network_free(net);
    free(x), free(y);
    return ok;
}

TEST(maxpool_rows) {
    static const int64_t widths[] = {1, 2, 7, 8, 9, 15, 16, 17, 33, 40};
    for (int portable = 0; portable < 2; portable++) {
        gwr_ku_cnn_force_portable(portable);
        for (int wi = 0; wi < 10; wi++)
            for (int64_t s = 1; s <= 3; s++) {
                int64_t W = widths[wi];
                CHECK(maxpool_case(9, W, 3, s, 1, 1, 0));
                if (W >= 2) CHECK(maxpool_case(6, W, 2, s, 0, 1, 1));
                if (W >= 3) CHECK(maxpool_case(11, W, 5, s, 2, 1, 0));
                if (W >= 5) CHECK(maxpool_case(8, W, 3, s, 1, 2, 0));
            }
    }
    gwr_ku_cnn_force_portable(0);
}

/* The blocked kernel (eight planes' channels in a vector, small planes)
 * and the row kernel each on every plane size, by moving the width
 * bound: geometries, pads and epilogues again on each path. */
TEST(depthwise_kernel_choice) {
    static const int64_t bounds[] = {0, (int64_t)1 << 40};
    for (int bi = 0; bi < 2; bi++) {
        gwr_ku_dwc_set_max_ow(bounds[bi]);
        for (int portable = 0; portable < 2; portable++) {
            gwr_ku_cnn_force_portable(portable);
            geometries();
            uneven_pads();
            epilogues();
        }
    }
    gwr_ku_cnn_force_portable(0);
    gwr_ku_dwc_set_max_ow(28);
}

/* The blocked kernel over channel counts around its block (8) with batch
 * 2 (blocks run on from one image into the next), the planes of
 * mobilenet (7, 14, 28) and around them, each window, stride and pad,
 * against the formula; both paths. */
TEST(depthwise_blocked_channels) {
    static const int64_t chans[] = {1, 7, 8, 9, 15, 16, 17, 88}, planes[] = {1, 2, 7, 13, 14, 27, 28, 29};
    static const char *const acts[] = {NULL, "Relu", "HardSwish", "Clip"};
    gwr_ku_dwc_set_max_ow((int64_t)1 << 40);
    for (int portable = 0; portable < 2; portable++) {
        gwr_ku_cnn_force_portable(portable);
        int n = 0;
        for (int ci = 0; ci < 8; ci++)
            for (int pi = 0; pi < 8; pi++, n++) {
                int64_t k = n % 2 ? 5 : 3, st = n / 2 % 2 + 1, pd = n / 4 % 3, H = planes[pi], W = planes[(pi + n / 3) % 8];
                if (H + 2 * pd < k || W + 2 * pd < k) pd = 2;
                if (H + 2 * pd < k || W + 2 * pd < k) continue; /* no output */
                dconf c = dw(chans[ci], H, W, k, st, pd);
                c.bias = n % 5 != 0, c.act = acts[n % 4], c.ap[1] = 6;
                if (n % 7 == 3 && H + pd >= k) c.pads[0] = 0, c.pads[3] = pd + 1; /* uneven */
                if (n % 11 == 5) c.z = 1;                            /* Z: the pass after the kernel */
                CHECK(run_case(&c));
            }
    }
    gwr_ku_cnn_force_portable(0);
    gwr_ku_dwc_set_max_ow(28);
}

/* The blocked kernel gives the row kernel's bits (same sums in the same
 * order, same rounding, same epilogue) on each path, for every
 * activation it takes, NaN and infinities included, and writes each
 * plane and nothing past it. */
TEST(depthwise_blocked_bits) {
    static const gwr_ku_act acts[] = {{GWR_KU_ACT_NONE, {0, 0}}, {GWR_KU_ACT_RELU, {0, 0}}, {GWR_KU_ACT_CLIP, {-0.5f, 0.5f}},
                                      {GWR_KU_ACT_HSWISH, {0, 0}}};
    enum { GUARD = 16 };
    for (int portable = 0; portable < 2; portable++) {
        gwr_ku_cnn_force_portable(portable);
        for (int n = 0; n < 96; n++) {
            int k = n % 2 ? 5 : 3, s = n / 2 % 2 + 1, nc = n % 8 + 1;
            gwr_ku_window g;
            gwr_ku_window_init(&g, 2);
            g.k[1] = g.k[2] = k, g.s[1] = g.s[2] = s;
            g.pb[1] = n / 4 % 3, g.pb[2] = n / 12 % 3, g.pe[1] = n / 5 % 3, g.pe[2] = n / 7 % 3;
            g.in[1] = 1 + n % 15, g.in[2] = 1 + n * 5 % 17;
            if (g.in[1] + g.pb[1] + g.pe[1] < k) g.pe[1] = k;
            if (g.in[2] + g.pb[2] + g.pe[2] < k) g.pe[2] = k;
            g.out[1] = (g.in[1] + g.pb[1] + g.pe[1] - k) / s + 1, g.out[2] = (g.in[2] + g.pb[2] + g.pe[2] - k) / s + 1;
            int64_t P = g.in[1] * g.in[2], Q = g.out[1] * g.out[2];
            float *x = malloc((size_t)(8 * P) * sizeof *x), *w = malloc(8 * 25 * sizeof *w), b[8];
            float *ya = malloc((size_t)(8 * (Q + GUARD)) * sizeof *ya), *yb = malloc((size_t)(8 * (Q + GUARD)) * sizeof *yb);
            for (int64_t i = 0; i < 8 * P; i++) x[i] = (float)urand();
            for (int i = 0; i < 8 * 25; i++) w[i] = (float)urand();
            for (int i = 0; i < 8; i++) b[i] = (float)urand();
            x[n % (8 * P)] = NAN, x[(3 * n + 1) % (8 * P)] = INFINITY;
            for (int64_t i = 0; i < 8 * (Q + GUARD); i++) ya[i] = yb[i] = 12345.0f;
            const float *xs[8], *ws[8];
            float *ys[8];
            for (int c = 0; c < nc; c++) xs[c] = x + c * P, ws[c] = w + c * k * k, ys[c] = yb + c * (Q + GUARD);
            const gwr_ku_act *a = &acts[n / 3 % 4];
            const float *bp = n % 3 ? b : NULL;
            float *pad = calloc((size_t)gwr_ku_dw_scratch(&g), sizeof *pad), *padc = calloc((size_t)gwr_ku_dwc_scratch(&g), sizeof *padc);
            for (int c = 0; c < nc; c++) gwr_ku_dw_plane_epi_f32(xs[c], ws[c], &g, bp ? bp + c : NULL, a, pad, ya + c * (Q + GUARD));
            gwr_ku_dwc_block_f32(xs, ws, nc, &g, bp, a, padc, ys);
            int same = 1, clean = 1;
            for (int c = 0; c < nc; c++)
                for (int64_t i = 0; i < Q + GUARD; i++) {
                    float u = ya[c * (Q + GUARD) + i], v = yb[c * (Q + GUARD) + i];
                    same &= memcmp(&u, &v, sizeof u) == 0;
                    if (i >= Q) clean &= v == 12345.0f;
                }
            for (int64_t i = nc * (Q + GUARD); i < 8 * (Q + GUARD); i++) clean &= yb[i] == 12345.0f;
            if (!CHECK(same && clean))
                fprintf(stderr, "  n %d: k%d s%d nc %d %lldx%lld, portable %d: same %d clean %d\n", n, k, s, nc, (long long)g.in[1],
                        (long long)g.in[2], portable, same, clean);
            free(x), free(w), free(ya), free(yb), free(pad), free(padc);
        }
    }
    gwr_ku_cnn_force_portable(0);
}

int main(void) {
    RUN(maxpool_rows);
    RUN(depthwise_epilogue_bits);
    RUN(im2col_gather);
    RUN(im2col_strided_layers);
    RUN(depthwise_cpu_path);
    RUN(depthwise_portable_path);
    RUN(depthwise_plane_bounds);
    RUN(depthwise_kernel_choice);
    RUN(depthwise_blocked_channels);
    RUN(depthwise_blocked_bits);
    return check_report();
}
