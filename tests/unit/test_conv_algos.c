/* test_conv_algos.c - conv.c's algorithms chosen per layer (direct
 * depthwise, 1x1 as a GEMM on the input as it lies, im2col) and the
 * epilogue they share (bias, FusedConv's Z and activation on each tile).
 *
 * Every case runs against a float64 convolution written here from the ONNX
 * Conv formula (y[n,m,oy,ox] = B[m] + sum over c in m's group, ky, kx of
 * X[n,c,oy*s - pad + ky*d, ...] W[m,c,ky,kx], zeros outside X), with the
 * activation applied in float64 from its ONNX definition, and against the
 * generic im2col path (the same layer in float64, which only it runs).
 * The numpy side of the same cases is tests/cli/test_conv_algos.sh. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "conv_case.h"
#include "gwr/gwr.h"

/* ---- harness ------------------------------------------------------------- */

typedef struct cconf {
    int64_t N, C, H, W, M, G, k, s, d;
    int64_t pads[4]; /* top, left, bottom, right (ONNX: begins, then ends) */
    int bias, z;
    const char *act; /* FusedConv's activation, NULL: a Conv (or FusedConv without) */
    float ap[2];
    int fused; /* FusedConv (com.microsoft) instead of Conv */
} cconf;

static char last_msg[1024];

static int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe) {
    return (in + pb + pe - ((k - 1) * d + 1)) / s + 1;
}

/* Runs one layer over the given inputs (NULL: absent), output in *y. */
static gwr_status run_layer(const char *op, const char *domain, int nin, gwr_value *const *in, const cconf *c, gwr_value **y) {
    gwr_network *net = gwr_network_new("t");
    gwr_tensor *ts[4] = {0};
    const char *names[4];
    gwr_value *vals[4];
    static const char *const nm[4] = {"x", "w", "b", "z"};
    int nv = 0;
    for (int i = 0; i < nin; i++) {
        if (!in[i]) continue;
        ts[i] = gwr_network_add_input(net, nm[i], gwr_value_dtype(in[i]), -1, NULL);
        names[nv] = nm[i], vals[nv++] = in[i];
    }
    gwr_layer *l = gwr_network_add_layer(net, op, domain, "L", nin, ts, 1, NULL);
    if (c) {
        gwr_layer_set_ints(l, "strides", (const int64_t[]){c->s, c->s}, 2);
        gwr_layer_set_ints(l, "dilations", (const int64_t[]){c->d, c->d}, 2);
        gwr_layer_set_ints(l, "pads", (const int64_t[]){c->pads[0], c->pads[1], c->pads[2], c->pads[3]}, 4);
        gwr_layer_set_int(l, "group", c->G);
        if (c->act) conv_case_set_activation(l, c->act, c->ap);
    } else if (!strcmp(op, "LeakyRelu")) {
        gwr_layer_set_float(l, "alpha", 0.1f);
    }
    gwr_status rc = conv_case_run(net, l, nv, names, vals, y, last_msg, sizeof last_msg);
    gwr_network_free(net);
    return rc;
}

static unsigned rng = 4242;
static double urand(void) { return conv_case_urand(&rng); }


/* The activation from its ONNX definition. */
static double act_ref(const cconf *c, double v) { return conv_case_act(c->act, c->ap, v); }

/* The ONNX Conv formula in float64, then + z and the activation. */
static void ref_conv(const cconf *c, const double *x, const double *w, const double *b, const double *z, int64_t OH, int64_t OW,
                     double *y) {
    int64_t Cg = c->C / c->G, Mg = c->M / c->G;
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t m = 0; m < c->M; m++)
            for (int64_t oy = 0; oy < OH; oy++)
                for (int64_t ox = 0; ox < OW; ox++) {
                    double s = b ? b[m] : 0;
                    for (int64_t ci = 0; ci < Cg; ci++) {
                        int64_t ch = m / Mg * Cg + ci;
                        for (int64_t ky = 0; ky < c->k; ky++)
                            for (int64_t kx = 0; kx < c->k; kx++) {
                                int64_t iy = oy * c->s - c->pads[0] + ky * c->d, ix = ox * c->s - c->pads[1] + kx * c->d;
                                if (iy < 0 || iy >= c->H || ix < 0 || ix >= c->W) continue;
                                s += x[((n * c->C + ch) * c->H + iy) * c->W + ix] * w[((m * Cg + ci) * c->k + ky) * c->k + kx];
                            }
                    }
                    int64_t i = ((n * c->M + m) * OH + oy) * OW + ox;
                    y[i] = act_ref(c, s + (z ? z[i] : 0));
                }
}

/* got matches want within tol (relative + absolute); NaN matches NaN and
 * an infinity the same infinity. */
static int close_to(const gwr_value *got, const double *want, int64_t n, double tol, const char *what) {
    if (!got || gwr_value_numel(got) != n) {
        fprintf(stderr, "  %s: no output or %lld elements (%s)\n", what, got ? (long long)gwr_value_numel(got) : -1LL, last_msg);
        return 0;
    }
    for (int64_t i = 0; i < n; i++) {
        double g = gwr_value_get_f64(got, i), e = want[i];
        int ok = isnan(e) ? isnan(g) : isinf(e) ? g == e : fabs(g - e) <= tol * (1 + fabs(e));
        if (!ok) {
            fprintf(stderr, "  %s: element %lld is %.9g, expected %.9g\n", what, (long long)i, g, e);
            return 0;
        }
    }
    return 1;
}

/* Runs case c in dtype dt (x holding xs, with nspecial special values set
 * at positions spec_at), checking against the float64 reference within
 * tol; when cmp_f64, the same case in float64 (the im2col path) too. */
static int run_case(const cconf *c, gwr_dtype dt, double tol, const double *special, int nspecial) {
    int64_t OH = out_dim(c->H, c->k, c->s, c->d, c->pads[0], c->pads[2]);
    int64_t OW = out_dim(c->W, c->k, c->s, c->d, c->pads[1], c->pads[3]);
    int64_t nx = c->N * c->C * c->H * c->W, nw = c->M * (c->C / c->G) * c->k * c->k, ny = c->N * c->M * OH * OW;
    double *x = malloc((size_t)nx * sizeof *x), *w = malloc((size_t)nw * sizeof *w), *b = malloc((size_t)c->M * sizeof *b);
    double *z = malloc((size_t)ny * sizeof *z), *y = malloc((size_t)ny * sizeof *y);
    /* values a float16 holds exactly, so every dtype sees the same input */
    for (int64_t i = 0; i < nx; i++) x[i] = round(urand() * 256) / 256;
    for (int64_t i = 0; i < nw; i++) w[i] = round(urand() * 256) / 256;
    for (int64_t i = 0; i < c->M; i++) b[i] = round(urand() * 256) / 256;
    for (int64_t i = 0; i < ny; i++) z[i] = round(urand() * 256) / 256;
    for (int i = 0; i < nspecial; i++) x[(i * 7919) % nx] = special[i];
    ref_conv(c, x, w, c->bias ? b : NULL, c->z ? z : NULL, OH, OW, y);
    gwr_value *in[4] = {conv_case_value(dt, 4, (const int64_t[]){c->N, c->C, c->H, c->W}, x),
                        conv_case_value(dt, 4, (const int64_t[]){c->M, c->C / c->G, c->k, c->k}, w),
                        c->bias ? conv_case_value(dt, 1, (const int64_t[]){c->M}, b) : NULL,
                        c->z ? conv_case_value(dt, 4, (const int64_t[]){c->N, c->M, OH, OW}, z) : NULL};
    gwr_value *out = NULL;
    int fused = c->fused || c->act || c->z;
    gwr_status rc = run_layer(fused ? "FusedConv" : "Conv", fused ? "com.microsoft" : "", fused ? 4 : 3, in, c, &out);
    char what[160];
    snprintf(what, sizeof what, "%s k%lld s%lld d%lld C%lld M%lld G%lld %lldx%lld %s%s %s", fused ? "FusedConv" : "Conv",
             (long long)c->k, (long long)c->s, (long long)c->d, (long long)c->C, (long long)c->M, (long long)c->G, (long long)c->H,
             (long long)c->W, c->z ? "+Z " : "", c->act ? c->act : "", gwr_dtype_name(dt));
    int ok = !rc && close_to(out, y, ny, tol, what);
    if (rc) fprintf(stderr, "  %s failed: %s\n", what, last_msg);
    gwr_value_release(out);
    for (int i = 0; i < 4; i++) gwr_value_release(in[i]);
    free(x), free(w), free(b), free(z), free(y);
    return ok;
}

static cconf dw(int64_t C, int64_t H, int64_t W, int64_t k, int64_t s, int64_t p0, int64_t p1, int64_t p2, int64_t p3) {
    cconf c = {.N = 2, .C = C, .H = H, .W = W, .M = C, .G = C, .k = k, .s = s, .d = 1, .pads = {p0, p1, p2, p3}, .bias = 1};
    return c;
}

/* ---- the depthwise path -------------------------------------------------- */

TEST(depthwise_geometries) {
    cconf cs[] = {
        dw(3, 13, 11, 3, 1, 1, 1, 1, 1),   /* odd sizes, same pads */
        dw(2, 15, 9, 3, 2, 1, 1, 1, 1),    /* stride 2, odd input */
        dw(2, 16, 16, 3, 2, 0, 0, 1, 1),   /* pads at the end only (TF SAME) */
        dw(3, 7, 10, 3, 1, 1, 0, 0, 2),    /* pads on one side per dim */
        dw(2, 12, 37, 3, 1, 1, 1, 1, 1),   /* a wide row: 8-wide vectors and a remainder */
        dw(2, 11, 13, 5, 1, 2, 2, 2, 2),   /* 5x5 */
        dw(2, 17, 19, 5, 2, 2, 1, 1, 2),   /* 5x5 stride 2, uneven pads */
        dw(2, 2, 3, 5, 1, 2, 2, 2, 2),     /* input smaller than the window: all border */
        dw(1, 9, 9, 3, 1, 3, 3, 3, 3),     /* pads beyond the window */
        dw(4, 6, 6, 3, 1, 0, 0, 0, 0),     /* no pads: all interior */
        dw(3, 1, 20, 3, 1, 1, 1, 1, 1),    /* one row */
    };
    for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
        CHECK(run_case(&cs[i], GWR_FLOAT32, 1e-5, NULL, 0));
        cs[i].bias = 0;
        CHECK(run_case(&cs[i], GWR_FLOAT32, 1e-5, NULL, 0));
        CHECK(run_case(&cs[i], GWR_FLOAT64, 1e-12, NULL, 0)); /* the im2col path, the same cases */
    }
}

TEST(depthwise_fallbacks) {
    cconf c = dw(3, 12, 12, 3, 1, 2, 2, 2, 2);
    c.d = 2; /* dilation: im2col */
    CHECK(run_case(&c, GWR_FLOAT32, 1e-5, NULL, 0));
    c = dw(3, 11, 9, 3, 1, 1, 1, 1, 1);
    c.M = 6; /* a depthwise multiplier of 2: direct, two planes per input */
    CHECK(run_case(&c, GWR_FLOAT32, 1e-5, NULL, 0));
    c.s = 2, c.k = 5, c.pads[0] = c.pads[1] = c.pads[2] = c.pads[3] = 2;
    CHECK(run_case(&c, GWR_FLOAT32, 1e-5, NULL, 0));
    c = dw(3, 11, 9, 3, 3, 1, 1, 1, 1); /* stride 3: im2col */
    CHECK(run_case(&c, GWR_FLOAT32, 1e-5, NULL, 0));
    c = dw(3, 11, 9, 7, 1, 3, 3, 3, 3); /* 7x7: im2col */
    CHECK(run_case(&c, GWR_FLOAT32, 1e-5, NULL, 0));
    c = dw(4, 9, 9, 3, 1, 1, 1, 1, 1);
    c.G = 2, c.M = 4; /* two channels per group: not depthwise */
    CHECK(run_case(&c, GWR_FLOAT32, 1e-5, NULL, 0));
    c = dw(3, 9, 10, 3, 2, 1, 1, 1, 1);
    CHECK(run_case(&c, GWR_FLOAT16, 2e-2, NULL, 0)); /* float16 widens to float32: direct */
    CHECK(run_case(&c, GWR_BFLOAT16, 6e-2, NULL, 0));
}

/* ---- 1x1 and im2col ------------------------------------------------------ */

TEST(pointwise_and_im2col) {
    cconf c = {.N = 2, .C = 8, .H = 5, .W = 7, .M = 12, .G = 1, .k = 1, .s = 1, .d = 1, .bias = 1};
    CHECK(run_case(&c, GWR_FLOAT32, 1e-5, NULL, 0)); /* the input as the GEMM's B */
    c.G = 4;
    CHECK(run_case(&c, GWR_FLOAT32, 1e-5, NULL, 0)); /* grouped 1x1 */
    c.G = 1, c.s = 2;
    CHECK(run_case(&c, GWR_FLOAT32, 1e-5, NULL, 0)); /* strided 1x1: gathered */
    c.s = 1, c.pads[0] = 1, c.pads[3] = 1;
    CHECK(run_case(&c, GWR_FLOAT32, 1e-5, NULL, 0)); /* padded 1x1 */
    /* more columns than one epilogue tile (256 KiB of 12 rows): blocks */
    cconf big = {.N = 1, .C = 2, .H = 80, .W = 81, .M = 12, .G = 1, .k = 1, .s = 1, .d = 1, .bias = 1, .z = 1, .act = "Relu"};
    CHECK(run_case(&big, GWR_FLOAT32, 1e-5, NULL, 0));
    /* im2col over several column blocks, with the epilogue per block */
    cconf blk = {.N = 1, .C = 16, .H = 64, .W = 64, .M = 8, .G = 1, .k = 3, .s = 1, .d = 1, .pads = {1, 1, 1, 1}, .bias = 1, .z = 1,
                 .act = "Clip", .ap = {-0.5f, 0.5f}};
    CHECK(run_case(&blk, GWR_FLOAT32, 1e-5, NULL, 0));
    cconf g3 = {.N = 2, .C = 6, .H = 9, .W = 8, .M = 4, .G = 2, .k = 3, .s = 2, .d = 2, .pads = {2, 0, 1, 2}, .bias = 1};
    CHECK(run_case(&g3, GWR_FLOAT32, 1e-5, NULL, 0));
    /* 4 output columns (under a vector) by 32 x 576 weights: gwr's sgemm,
     * its last panel narrower than the kernel's vectors */
    cconf narrow = {.N = 1, .C = 64, .H = 4, .W = 4, .M = 32, .G = 1, .k = 3, .s = 1, .d = 1, .bias = 1};
    CHECK(run_case(&narrow, GWR_FLOAT32, 1e-4, NULL, 0));
}

/* im2col's whole-row copies: a k x 1 window over an [H, 1] plane (a 1-D
 * conv exported as 2-D, TensorFlow's way) reads consecutive input rows for
 * consecutive output rows, copied in one run per tap; the runs stop at the
 * padding and at the column blocks (300 rows: two blocks). The same with
 * W padded to keep its size. */
TEST(im2col_whole_rows) {
    cconf c = {.N = 2, .C = 3, .H = 9, .W = 1, .M = 4, .G = 1, .k = 3, .s = 1, .d = 1, .pads = {1, 1, 1, 1}, .bias = 1};
    CHECK(run_case(&c, GWR_FLOAT32, 1e-5, NULL, 0));
    CHECK(run_case(&c, GWR_FLOAT64, 1e-12, NULL, 0));
    cconf tall = {.N = 1, .C = 4, .H = 300, .W = 1, .M = 5, .G = 1, .k = 3, .s = 1, .d = 1, .pads = {3, 1, 0, 1}, .bias = 1};
    CHECK(run_case(&tall, GWR_FLOAT32, 1e-5, NULL, 0));
    /* a 3 x 3 window padded to keep W: the side taps' runs skip a column
     * (zeroed after the copy), through the last input element */
    cconf side = {.N = 2, .C = 3, .H = 6, .W = 5, .M = 4, .G = 1, .k = 3, .s = 1, .d = 1, .pads = {0, 1, 2, 1}, .bias = 1};
    CHECK(run_case(&side, GWR_FLOAT32, 1e-5, NULL, 0));
    CHECK(run_case(&side, GWR_FLOAT64, 1e-12, NULL, 0));
    side.d = 2, side.pads[1] = side.pads[3] = 2;
    CHECK(run_case(&side, GWR_FLOAT32, 1e-5, NULL, 0));
}

/* ---- the epilogue -------------------------------------------------------- */

static const struct {
    const char *name;
    float p[2];
} acts[] = {{"Relu", {0, 0}},        {"Tanh", {0, 0}},       {"Sigmoid", {0, 0}},
            {"LeakyRelu", {0.1f, 0}}, {"Clip", {-0.25f, 0.75f}}, {"HardSigmoid", {0.2f, 0.5f}}};

TEST(fused_activations_every_path) {
    cconf shapes[3] = {dw(3, 9, 11, 3, 1, 1, 1, 1, 1), /* depthwise */
                       {.N = 2, .C = 5, .H = 6, .W = 7, .M = 6, .G = 1, .k = 1, .s = 1, .d = 1, .bias = 1},
                       {.N = 1, .C = 4, .H = 7, .W = 6, .M = 5, .G = 1, .k = 3, .s = 2, .d = 1, .pads = {1, 0, 1, 1}, .bias = 1}};
    for (int si = 0; si < 3; si++)
        for (size_t a = 0; a < sizeof acts / sizeof *acts; a++)
            for (int z = 0; z < 2; z++) {
                cconf c = shapes[si];
                c.act = acts[a].name, c.ap[0] = acts[a].p[0], c.ap[1] = acts[a].p[1], c.z = z;
                /* float32 Tanh / Sigmoid use the executor's fast exp: 1e-6 relative */
                CHECK(run_case(&c, GWR_FLOAT32, 2e-5, NULL, 0));
                CHECK(run_case(&c, GWR_FLOAT64, 1e-12, NULL, 0));
                c.bias = 0;
                CHECK(run_case(&c, GWR_FLOAT16, 2e-2, NULL, 0));
            }
    cconf c = shapes[0];
    c.fused = 1, c.z = 1; /* Z, no activation */
    CHECK(run_case(&c, GWR_FLOAT32, 1e-5, NULL, 0));
}

/* NaN and infinities through the activations that keep them: NaN stays
 * NaN in every tap it reaches, -inf clamps under Relu / Clip. */
TEST(fused_special_values) {
    static const double sp[] = {NAN, INFINITY, -INFINITY};
    const char *names[] = {"Relu", "Clip", "LeakyRelu", "Sigmoid"};
    for (int si = 0; si < 2; si++)
        for (int a = 0; a < 4; a++) {
            cconf c = si ? (cconf){.N = 1, .C = 3, .H = 7, .W = 9, .M = 4, .G = 1, .k = 1, .s = 1, .d = 1, .bias = 1}
                         : dw(3, 7, 9, 3, 1, 1, 1, 1, 1);
            c.act = names[a], c.ap[0] = a == 1 ? -1.0f : 0.1f, c.ap[1] = 2.0f, c.z = 1;
            CHECK(run_case(&c, GWR_FLOAT32, 2e-5, sp, 3));
        }
}

/* FusedConv gives the bits of Conv, Add and the activation run apart. */
TEST(fused_equals_unfused_bits) {
    cconf shapes[2] = {dw(3, 9, 11, 3, 2, 1, 1, 1, 1),
                       {.N = 1, .C = 4, .H = 7, .W = 6, .M = 5, .G = 1, .k = 3, .s = 1, .d = 1, .pads = {1, 1, 1, 1}, .bias = 1}};
    const char *names[] = {"Relu", "Sigmoid", "LeakyRelu"};
    for (int si = 0; si < 2; si++)
        for (int a = 0; a < 3; a++) {
            cconf c = shapes[si];
            c.act = names[a], c.ap[0] = 0.1f, c.z = 1;
            int64_t OH = out_dim(c.H, c.k, c.s, c.d, c.pads[0], c.pads[2]), OW = out_dim(c.W, c.k, c.s, c.d, c.pads[1], c.pads[3]);
            int64_t nx = c.N * c.C * c.H * c.W, nw = c.M * (c.C / c.G) * 9, ny = c.N * c.M * OH * OW;
            double *v = malloc((size_t)(nx + nw + c.M + ny) * sizeof *v);
            for (int64_t i = 0; i < nx + nw + c.M + ny; i++) v[i] = urand();
            v[3] = NAN;
            gwr_value *in[4] = {conv_case_value(GWR_FLOAT32, 4, (const int64_t[]){c.N, c.C, c.H, c.W}, v),
                                conv_case_value(GWR_FLOAT32, 4, (const int64_t[]){c.M, c.C / c.G, 3, 3}, v + nx),
                                conv_case_value(GWR_FLOAT32, 1, (const int64_t[]){c.M}, v + nx + nw),
                                conv_case_value(GWR_FLOAT32, 4, (const int64_t[]){c.N, c.M, OH, OW}, v + nx + nw + c.M)};
            gwr_value *fz = NULL, *cv = NULL, *sum = NULL, *act = NULL;
            cconf plain = c;
            plain.act = NULL, plain.z = 0;
            CHECK(!run_layer("FusedConv", "com.microsoft", 4, in, &c, &fz));
            CHECK(!run_layer("Conv", "", 3, in, &plain, &cv));
            gwr_value *addin[2] = {cv, in[3]};
            CHECK(!run_layer("Add", "", 2, addin, NULL, &sum));
            CHECK(!run_layer(names[a], "", 1, &sum, NULL, &act));
            if (CHECK(fz && act && gwr_value_numel(fz) == ny && gwr_value_numel(act) == ny))
                CHECK(!memcmp(gwr_value_cdata(fz), gwr_value_cdata(act), (size_t)ny * sizeof(float)));
            gwr_value_release(fz), gwr_value_release(cv), gwr_value_release(sum), gwr_value_release(act);
            for (int i = 0; i < 4; i++) gwr_value_release(in[i]);
            free(v);
        }
}

TEST(fused_z_errors) {
    cconf c = dw(2, 5, 5, 3, 1, 1, 1, 1, 1);
    c.act = "Relu";
    gwr_value *in[4] = {gwr_value_new(GWR_FLOAT32, 4, (const int64_t[]){1, 2, 5, 5}),
                        gwr_value_new(GWR_FLOAT32, 4, (const int64_t[]){2, 1, 3, 3}), NULL,
                        gwr_value_new(GWR_FLOAT32, 4, (const int64_t[]){1, 2, 4, 5})};
    gwr_value *y = NULL;
    CHECK(run_layer("FusedConv", "com.microsoft", 4, in, &c, &y) != GWR_OK);
    CHECK_CONTAINS(last_msg, "Z is not of the output's shape");
    gwr_value_release(y);
    for (int i = 0; i < 4; i++) gwr_value_release(in[i]);
}

/* HardSigmoid / HardSwish clamp with compares (fast_math.h): the ONNX
 * formulas max(0, min(1, a x + b)) (x times it), NaN kept. */
TEST(hard_activations_clamp) {
    static const double xs[] = {NAN, -INFINITY, INFINITY, -3.5, -3.0, -0.25, 0.0, 0.2, 2.9, 3.0, 10.0};
    int n = (int)(sizeof xs / sizeof *xs);
    double want_sig[16], want_sw[16];
    for (int i = 0; i < n; i++) {
        double t = 0.2 * xs[i] + 0.5, u = xs[i] / 6 + 0.5;
        want_sig[i] = isnan(t) ? t : t < 0 ? 0 : t > 1 ? 1 : t;
        want_sw[i] = isnan(u) ? u : xs[i] * (u < 0 ? 0 : u > 1 ? 1 : u);
    }
    want_sw[1] = NAN; /* -inf * 0 */
    gwr_value *x = conv_case_value(GWR_FLOAT32, 1, (const int64_t[]){n}, xs), *y = NULL;
    CHECK(!run_layer("HardSigmoid", "", 1, &x, NULL, &y));
    CHECK(close_to(y, want_sig, n, 1e-6, "HardSigmoid"));
    gwr_value_release(y);
    CHECK(!run_layer("HardSwish", "", 1, &x, NULL, &y));
    CHECK(close_to(y, want_sw, n, 1e-6, "HardSwish"));
    gwr_value_release(y), gwr_value_release(x);
}

/* GlobalAveragePool's float32 sum in eight lanes (pool.c): the mean in
 * float64, planes of 1, 7, 8, 17 and 4096 elements, a NaN kept. */
TEST(global_average_pool_lanes) {
    static const int64_t sizes[] = {1, 7, 8, 17, 4096};
    for (int si = 0; si < 5; si++) {
        int64_t S = sizes[si], n = 3 * S;
        double *x = malloc((size_t)n * sizeof *x), want[3];
        for (int64_t i = 0; i < n; i++) x[i] = urand() * 100;
        x[2 * S] = NAN;
        gwr_value *v = conv_case_value(GWR_FLOAT32, 4, (const int64_t[]){1, 3, 1, S}, x), *y = NULL;
        for (int64_t i = 0; i < n; i++) x[i] = gwr_value_get_f64(v, i); /* the float32 values */
        for (int p = 0; p < 3; p++) {
            double s = 0;
            for (int64_t i = 0; i < S; i++) s += x[p * S + i];
            want[p] = s / (double)S;
        }
        CHECK(!run_layer("GlobalAveragePool", "", 1, &v, NULL, &y));
        CHECK(close_to(y, want, 3, 1e-6, "GlobalAveragePool"));
        gwr_value_release(y), gwr_value_release(v);
        free(x);
    }
}

int main(void) {
    RUN(depthwise_geometries);
    RUN(depthwise_fallbacks);
    RUN(pointwise_and_im2col);
    RUN(im2col_whole_rows);
    RUN(fused_activations_every_path);
    RUN(fused_special_values);
    RUN(fused_equals_unfused_bits);
    RUN(fused_z_errors);
    RUN(hard_activations_clamp);
    RUN(global_average_pool_lanes);
    return check_report();
}
