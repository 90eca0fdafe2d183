/* test_exec_geometry.c - the kernels of issue 22's missing ops beyond ONNX's
 * test data: CumProd, SpaceToDepth's CRD mode, CenterCropPad, Col2Im,
 * AffineGrid, GridSample on 5-D input, DeformConv and the optimizers of
 * ai.onnx.preview.training (Adagrad, Adam, Momentum). Expected values are
 * worked out by hand (or with numpy, noted where used) from the operator
 * specification; every bad input must fail with a status and a message,
 * never crash. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"

#include "one_layer.h"

#define TRAINING "ai.onnx.preview.training"

static gwr_value *scalar_i(int64_t v) { return vi(0, NULL, &v); }
static gwr_value *scalar_f(float v) { return vf(0, NULL, &v); }
static gwr_value *vec_i(int n, const int64_t *v) {
    int64_t d = n;
    return vi(1, &d, v);
}

/* out has n values, each near e[i]. */
static int values_are(const gwr_value *out, int n, const double *e) {
    if (!out || gwr_value_numel(out) != n) return 0;
    for (int i = 0; i < n; i++)
        if (!near(at(out, i), e[i])) {
            fprintf(stderr, "  element %d is %.9g, expected %.9g\n", i, at(out, i), e[i]);
            return 0;
        }
    return 1;
}

/* ---- CumProd ------------------------------------------------------------------------ */

TEST(cumprod_modes) {
    int64_t four = 4;
    float d[4] = {1, 2, 3, 4};
    gwr_value *in[2] = {vf(1, &four, d), scalar_i(0)}, *out[1];
    struct {
        int excl, rev;
        double e[4];
    } cases[] = {{0, 0, {1, 2, 6, 24}}, {1, 0, {1, 1, 2, 6}}, {0, 1, {24, 24, 12, 4}}, {1, 1, {24, 12, 4, 1}}};
    for (int c = 0; c < 4; c++) {
        gwr_layer *l = layer("CumProd", 2, in, 1);
        gwr_layer_set_int(l, "exclusive", cases[c].excl);
        gwr_layer_set_int(l, "reverse", cases[c].rev);
        if (CHECK_OK(run(26, 2, in, 1, out))) CHECK(values_are(out[0], 4, cases[c].e));
        rel(1, out);
    }
    rel(2, in);
    /* [[1, 2], [3, 4]] along axis 1 and axis -2 */
    int64_t sq[2] = {2, 2};
    gwr_value *m[2] = {vf(2, sq, d), scalar_i(1)};
    layer("CumProd", 2, m, 1);
    if (CHECK_OK(run(26, 2, m, 1, out))) CHECK(values_are(out[0], 4, (double[]){1, 2, 3, 12}));
    rel(1, out);
    *(int64_t *)gwr_value_data(m[1]) = -2;
    layer("CumProd", 2, m, 1);
    if (CHECK_OK(run(26, 2, m, 1, out))) CHECK(values_are(out[0], 4, (double[]){1, 2, 3, 8}));
    rel(1, out);
    rel(2, m);
}

TEST(cumprod_int_wrap_empty_and_bad) {
    /* int64 wraps as two's complement: 2^62 * 4 = 2^64 = 0 */
    int64_t two = 2, big[2] = {(int64_t)1 << 62, 4};
    gwr_value *in[2] = {vi(1, &two, big), scalar_i(0)}, *out[1];
    layer("CumProd", 2, in, 1);
    if (CHECK_OK(run(26, 2, in, 1, out))) {
        CHECK_EQ_INT(gwr_value_get_i64(out[0], 0), (int64_t)1 << 62);
        CHECK_EQ_INT(gwr_value_get_i64(out[0], 1), 0);
    }
    rel(1, out);
    rel(2, in);
    /* an empty axis, reverse and exclusive: an empty output of the same shape */
    int64_t ed[2] = {0, 3};
    gwr_value *e[2] = {vf(2, ed, NULL), scalar_i(0)};
    gwr_layer *l = layer("CumProd", 2, e, 1);
    gwr_layer_set_int(l, "exclusive", 1);
    gwr_layer_set_int(l, "reverse", 1);
    if (CHECK_OK(run(26, 2, e, 1, out))) CHECK(dims_are(out[0], 2, ed));
    rel(1, out);
    /* axis out of range, a scalar x, a bool x */
    *(int64_t *)gwr_value_data(e[1]) = 2;
    layer("CumProd", 2, e, 1);
    CHECK_EQ_INT(run(26, 2, e, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "axis 2 is out of range");
    rel(2, e);
    gwr_value *s[2] = {scalar_f(2), scalar_i(0)};
    layer("CumProd", 2, s, 1);
    CHECK_EQ_INT(run(26, 2, s, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "rank 1 or more");
    rel(2, s);
    int64_t one = 1;
    gwr_value *b[2] = {gwr_value_new(GWR_BOOL, 1, &one), scalar_i(0)};
    layer("CumProd", 2, b, 1);
    CHECK_EQ_INT(run(26, 2, b, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "CumProd does not take bool");
    rel(2, b);
}

/* ---- SpaceToDepth mode ------------------------------------------------------------- */

/* X [1, 2, 2, 2] = 0..7, blocksize 2: DCR puts output channel (row * 2 +
 * column) * C + c, CRD c * 4 + row * 2 + column. */
TEST(space_to_depth_modes) {
    float d[8];
    for (int i = 0; i < 8; i++) d[i] = (float)i;
    int64_t xd[4] = {1, 2, 2, 2}, od[4] = {1, 8, 1, 1};
    gwr_value *in[1] = {vf(4, xd, d)}, *out[1];
    const char *modes[2] = {"DCR", "CRD"};
    double want[2][8] = {{0, 4, 1, 5, 2, 6, 3, 7}, {0, 1, 2, 3, 4, 5, 6, 7}};
    for (int m = 0; m < 2; m++) {
        gwr_layer *l = layer("SpaceToDepth", 1, in, 1);
        gwr_layer_set_int(l, "blocksize", 2);
        gwr_layer_set_string(l, "mode", modes[m]);
        if (CHECK_OK(run(28, 1, in, 1, out))) CHECK(dims_are(out[0], 4, od) && values_are(out[0], 8, want[m]));
        rel(1, out);
    }
    gwr_layer *l = layer("SpaceToDepth", 1, in, 1);
    gwr_layer_set_int(l, "blocksize", 2);
    gwr_layer_set_string(l, "mode", "XYZ");
    CHECK_EQ_INT(run(28, 1, in, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "unknown mode 'XYZ'");
    rel(1, in);
}

/* ---- CenterCropPad ---------------------------------------------------------------- */

static gwr_status ccp(gwr_value *x, int n, const int64_t *shape, const int64_t *axes, int naxes, gwr_value **out) {
    gwr_value *in[2] = {x, vec_i(n, shape)};
    gwr_layer *l = layer("CenterCropPad", 2, in, 1);
    if (axes) gwr_layer_set_ints(l, "axes", axes, naxes);
    gwr_status s = run(18, 2, in, 1, out);
    gwr_value_release(in[1]);
    return s;
}

TEST(center_crop_pad) {
    int64_t five = 5;
    float d[6] = {1, 2, 3, 4, 5, 6};
    gwr_value *x = vf(1, &five, d), *out[1];
    /* crop 5 -> 3 starts at 1; 5 -> 4 at floor(1 / 2) = 0; pad 5 -> 8 puts 1 zero first, 2 last */
    if (CHECK_OK(ccp(x, 1, (int64_t[]){3}, NULL, 0, out))) CHECK(values_are(out[0], 3, (double[]){2, 3, 4}));
    rel(1, out);
    if (CHECK_OK(ccp(x, 1, (int64_t[]){4}, NULL, 0, out))) CHECK(values_are(out[0], 4, (double[]){1, 2, 3, 4}));
    rel(1, out);
    if (CHECK_OK(ccp(x, 1, (int64_t[]){8}, NULL, 0, out))) CHECK(values_are(out[0], 8, (double[]){0, 1, 2, 3, 4, 5, 0, 0}));
    rel(1, out);
    if (CHECK_OK(ccp(x, 1, (int64_t[]){0}, NULL, 0, out))) CHECK_EQ_INT(gwr_value_numel(out[0]), 0);
    rel(1, out);
    /* bad: a negative size, a count that is not the rank, repeated axes, a scalar */
    CHECK_EQ_INT(ccp(x, 1, (int64_t[]){-1}, NULL, 0, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "shape[0] = -1 is negative");
    CHECK(ccp(x, 2, (int64_t[]){2, 2}, NULL, 0, out) != GWR_OK);
    CHECK_CONTAINS(t_err, "shape has 2 values for 1 axes");
    rel(1, &x);
    /* [[1, 2, 3], [4, 5, 6]]: the last axis cropped to 1 (axes [-1]); both
     * axes to [4, 1]: rows padded 1 + 1, columns cropped from 1 */
    int64_t xd[2] = {2, 3}, od[2] = {4, 1}, cd[2] = {2, 1};
    x = vf(2, xd, d);
    if (CHECK_OK(ccp(x, 1, (int64_t[]){1}, (int64_t[]){-1}, 1, out))) CHECK(dims_are(out[0], 2, cd) && values_are(out[0], 2, (double[]){2, 5}));
    rel(1, out);
    if (CHECK_OK(ccp(x, 2, (int64_t[]){4, 1}, NULL, 0, out))) CHECK(dims_are(out[0], 2, od) && values_are(out[0], 4, (double[]){0, 2, 5, 0}));
    rel(1, out);
    CHECK(ccp(x, 2, (int64_t[]){1, 1}, (int64_t[]){1, -1}, 2, out) != GWR_OK);
    CHECK_CONTAINS(t_err, "repeated");
    CHECK(ccp(x, 1, (int64_t[]){1}, (int64_t[]){2}, 1, out) != GWR_OK);
    CHECK_CONTAINS(t_err, "out of range");
    rel(1, &x);
    x = scalar_f(1);
    CHECK(ccp(x, 0, NULL, NULL, 0, out) != GWR_OK);
    CHECK_CONTAINS(t_err, "scalar");
    rel(1, &x);
}

/* ---- Col2Im ------------------------------------------------------------------------ */

static gwr_status col2im(gwr_value *x, int n, const int64_t *img, const int64_t *blk, const int64_t *pads, const int64_t *strides,
                         const int64_t *dil, gwr_value **out) {
    gwr_value *in[3] = {x, vec_i(n, img), vec_i(n, blk)};
    gwr_layer *l = layer("Col2Im", 3, in, 1);
    if (pads) gwr_layer_set_ints(l, "pads", pads, 2 * n);
    if (strides) gwr_layer_set_ints(l, "strides", strides, n);
    if (dil) gwr_layer_set_ints(l, "dilations", dil, n);
    gwr_status s = run(18, 3, in, 1, out);
    gwr_value_release(in[1]), gwr_value_release(in[2]);
    return s;
}

TEST(col2im_sums) {
    /* a 2 x 3 image of 1 x 2 blocks: 2 x 2 windows; col[k][l] = 10 k + l;
     * pixel (i, j) sums the (window (a, b), tap k) with a == i, b + k == j */
    float c[8] = {0, 1, 2, 3, 10, 11, 12, 13};
    int64_t xd[3] = {1, 2, 4}, od[4] = {1, 1, 2, 3};
    gwr_value *x = vf(3, xd, c), *out[1];
    if (CHECK_OK(col2im(x, 2, (int64_t[]){2, 3}, (int64_t[]){1, 2}, NULL, NULL, NULL, out)))
        CHECK(dims_are(out[0], 4, od) && values_are(out[0], 6, (double[]){0, 11, 11, 2, 15, 13}));
    rel(1, out);
    /* bad: 4 blocks given where the shapes make 6; dim 1 not a multiple of
     * prod(block_shape); lengths that differ; a negative image; block 0 */
    CHECK_EQ_INT(col2im(x, 2, (int64_t[]){2, 4}, (int64_t[]){1, 2}, NULL, NULL, NULL, out), GWR_ERR_SHAPE);
    CHECK_CONTAINS(t_err, "input has 4 blocks, image_shape and block_shape give 6");
    CHECK_EQ_INT(col2im(x, 2, (int64_t[]){2, 3}, (int64_t[]){1, 3}, NULL, NULL, NULL, out), GWR_ERR_SHAPE);
    CHECK_CONTAINS(t_err, "not a multiple of prod(block_shape) = 3");
    CHECK_EQ_INT(col2im(x, 2, (int64_t[]){-2, 3}, (int64_t[]){1, 2}, NULL, NULL, NULL, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "image_shape[0] = -2");
    CHECK_EQ_INT(col2im(x, 2, (int64_t[]){2, 3}, (int64_t[]){0, 2}, NULL, NULL, NULL, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "block_shape[0] = 0");
    gwr_value *in[3] = {x, vec_i(2, (int64_t[]){2, 3}), vec_i(1, (int64_t[]){2})};
    layer("Col2Im", 3, in, 1);
    CHECK(run(18, 3, in, 1, out) != GWR_OK);
    CHECK_CONTAINS(t_err, "same length");
    gwr_value_release(in[1]), gwr_value_release(in[2]);
    rel(1, &x);
    /* 1-D, image 3, block 2, pads [1, 1], stride 2: windows start at -1 and
     * 1; col [k][l] = [[1, 3], [2, 4]] lands at -1 (dropped), 0, 1, 2 */
    int64_t x1[3] = {1, 2, 2};
    x = vf(3, x1, (float[]){1, 3, 2, 4});
    if (CHECK_OK(col2im(x, 1, (int64_t[]){3}, (int64_t[]){2}, (int64_t[]){1, 1}, (int64_t[]){2}, NULL, out)))
        CHECK(values_are(out[0], 3, (double[]){2, 3, 4}));
    rel(1, out);
    /* dilation 2, image 4, block 2: windows read {0, 2} and {1, 3} */
    if (CHECK_OK(col2im(x, 1, (int64_t[]){4}, (int64_t[]){2}, NULL, NULL, (int64_t[]){2}, out)))
        CHECK(values_are(out[0], 4, (double[]){1, 3, 2, 4}));
    rel(1, out);
    /* a rank-2 input */
    int64_t r2[2] = {2, 2};
    gwr_value *bad = vf(2, r2, (float[]){1, 2, 3, 4});
    CHECK(col2im(bad, 1, (int64_t[]){3}, (int64_t[]){2}, NULL, NULL, NULL, out) != GWR_OK);
    CHECK_CONTAINS(t_err, "rank 2");
    rel(1, &bad);
    rel(1, &x);
}

/* ---- AffineGrid -------------------------------------------------------------------- */

static gwr_status affine(gwr_value *theta, int n, const int64_t *size, int align, gwr_value **out) {
    gwr_value *in[2] = {theta, vec_i(n, size)};
    gwr_layer *l = layer("AffineGrid", 2, in, 1);
    gwr_layer_set_int(l, "align_corners", align);
    gwr_status s = run(20, 2, in, 1, out);
    gwr_value_release(in[1]);
    return s;
}

TEST(affine_grid) {
    /* x' = 2 x + 0.5, y' = y - 1 over H = 2, W = 3: without align_corners
     * x = -2/3, 0, 2/3 and y = -1/2, 1/2; with it x = -1, 0, 1 and y = -1, 1 */
    int64_t td[3] = {1, 2, 3}, od[4] = {1, 2, 3, 2};
    gwr_value *th = vf(3, td, (float[]){2, 0, 0.5f, 0, 1, -1}), *out[1];
    if (CHECK_OK(affine(th, 4, (int64_t[]){1, 1, 2, 3}, 0, out))) {
        double e[12];
        double xs[3] = {-2.0 / 3, 0, 2.0 / 3}, ys[2] = {-0.5, 0.5};
        for (int h = 0; h < 2; h++)
            for (int w = 0; w < 3; w++) e[(h * 3 + w) * 2] = 2 * xs[w] + 0.5, e[(h * 3 + w) * 2 + 1] = ys[h] - 1;
        CHECK(dims_are(out[0], 4, od) && values_are(out[0], 12, e));
    }
    rel(1, out);
    if (CHECK_OK(affine(th, 4, (int64_t[]){1, 1, 2, 3}, 1, out)))
        CHECK(values_are(out[0], 12, (double[]){-1.5, -2, 0.5, -2, 2.5, -2, -1.5, 0, 0.5, 0, 2.5, 0}));
    rel(1, out);
    /* a one-pixel axis sits at 0 in both modes */
    for (int a = 0; a < 2; a++) {
        if (CHECK_OK(affine(th, 4, (int64_t[]){1, 1, 1, 1}, a, out))) CHECK(values_are(out[0], 2, (double[]){0.5, -1}));
        rel(1, out);
    }
    /* bad: a 3-value size, a 3-D size for a 2-D theta, a batch mismatch, a negative size */
    CHECK_EQ_INT(affine(th, 3, (int64_t[]){1, 2, 3}, 0, out), GWR_ERR_SHAPE);
    CHECK_CONTAINS(t_err, "not 3 values");
    CHECK_EQ_INT(affine(th, 5, (int64_t[]){1, 1, 2, 2, 2}, 0, out), GWR_ERR_SHAPE);
    CHECK_CONTAINS(t_err, "theta must be (N, 3, 4)");
    CHECK_EQ_INT(affine(th, 4, (int64_t[]){2, 1, 2, 2}, 0, out), GWR_ERR_SHAPE);
    CHECK_CONTAINS(t_err, "1 matrices for a batch of 2");
    CHECK_EQ_INT(affine(th, 4, (int64_t[]){1, 1, -2, 2}, 0, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "negative");
    rel(1, &th);
    /* 3-D, identity plus (0.1, 0.2, 0.3), D = 2, H = 1, W = 2, align_corners:
     * z = -1, 1; y = 0; x = -1, 1; the point is (x, y, z) */
    int64_t t3[3] = {1, 3, 4}, o3[5] = {1, 2, 1, 2, 3};
    th = vf(3, t3, (float[]){1, 0, 0, 0.1f, 0, 1, 0, 0.2f, 0, 0, 1, 0.3f});
    if (CHECK_OK(affine(th, 5, (int64_t[]){1, 1, 2, 1, 2}, 1, out)))
        CHECK(dims_are(out[0], 5, o3) &&
              values_are(out[0], 12, (double[]){-0.9, 0.2, -0.7, 1.1, 0.2, -0.7, -0.9, 0.2, 1.3, 1.1, 0.2, 1.3}));
    rel(1, out);
    rel(1, &th);
}

/* ---- GridSample on 5-D (and 3-D) input ------------------------------------------------------- */

static gwr_status grid_sample(gwr_value *x, gwr_value *g, const char *mode, gwr_value **out) {
    gwr_value *in[2] = {x, g};
    gwr_layer *l = layer("GridSample", 2, in, 1);
    gwr_layer_set_int(l, "align_corners", 1);
    gwr_layer_set_string(l, "mode", mode);
    return run(20, 2, in, 1, out);
}

TEST(grid_sample_3d) {
    /* X [1, 1, 2, 2, 2] = 0..7 (d * 4 + h * 2 + w), align_corners: -1 and 1
     * are the corner pixels. (x, y, z) = (0, 0, 0) is the mean 3.5; (1, -1,
     * 1) the pixel d 1, h 0, w 1 = 5; (0, 1, -1) halfway between 2 and 3 */
    float d[8];
    for (int i = 0; i < 8; i++) d[i] = (float)i;
    int64_t xd[5] = {1, 1, 2, 2, 2}, gd[5] = {1, 1, 1, 3, 3}, od[5] = {1, 1, 1, 1, 3};
    gwr_value *x = vf(5, xd, d), *g = vf(5, gd, (float[]){0, 0, 0, 1, -1, 1, 0, 1, -1}), *out[1];
    if (CHECK_OK(grid_sample(x, g, "linear", out))) CHECK(dims_are(out[0], 5, od) && values_are(out[0], 3, (double[]){3.5, 5, 2.5}));
    rel(1, out);
    /* nearest: (0.2, 0.9, -0.9) -> w 0.6 -> 1, h 0.95 -> 1, d 0.05 -> 0: 3 */
    gwr_value *gn = vf(5, (int64_t[]){1, 1, 1, 1, 3}, (float[]){0.2f, 0.9f, -0.9f});
    if (CHECK_OK(grid_sample(x, gn, "nearest", out))) CHECK(values_are(out[0], 1, (double[]){3}));
    rel(1, out);
    /* bad: bicubic on 5-D, a grid whose last dim is 2 for 5-D X */
    CHECK_EQ_INT(grid_sample(x, g, "cubic", out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "4-D X only");
    gwr_value *g2 = vf(5, (int64_t[]){1, 1, 1, 1, 2}, (float[]){0, 0});
    CHECK_EQ_INT(grid_sample(x, g2, "linear", out), GWR_ERR_SHAPE);
    CHECK_CONTAINS(t_err, "D_out, H_out, W_out, 3");
    rel(1, &g2);
    /* 1-D: X [0, 10, 20], x = 0 and 0.5 (align_corners) read positions 1 and 1.5 */
    gwr_value *x1 = vf(3, (int64_t[]){1, 1, 3}, (float[]){0, 10, 20}), *g1 = vf(3, (int64_t[]){1, 2, 1}, (float[]){0, 0.5f});
    if (CHECK_OK(grid_sample(x1, g1, "linear", out))) CHECK(values_are(out[0], 2, (double[]){10, 15}));
    rel(1, out);
    rel(1, &x1), rel(1, &g1);
    gwr_value *x0 = vf(5, (int64_t[]){1, 1, 0, 2, 2}, NULL);
    CHECK_EQ_INT(grid_sample(x0, gn, "linear", out), GWR_ERR_SHAPE);
    CHECK_CONTAINS(t_err, "X has no pixels (D = 0, H = 2, W = 2)");
    rel(1, &x0);
    rel(1, &gn);
    rel(1, &g);
    rel(1, &x);
}

/* ---- DeformConv -------------------------------------------------------------------- */

static gwr_status deform(gwr_value *x, gwr_value *w, gwr_value *off, gwr_value *b, gwr_value *mask, gwr_value **out) {
    gwr_value *in[5] = {x, w, off, b, mask};
    int n = mask ? 5 : b ? 4 : 3;
    layer("DeformConv", n, in, 1);
    return run(19, n, in, 1, out);
}

TEST(deform_conv) {
    /* zero offsets: a plain 2 x 2 convolution of [[1 2 3] [4 5 6] [7 8 9]]
     * by [[1 2] [3 4]], plus bias 0.5 */
    float xv[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    int64_t xd[4] = {1, 1, 3, 3}, wd[4] = {1, 1, 2, 2}, offd[4] = {1, 8, 2, 2}, od[4] = {1, 1, 2, 2};
    gwr_value *x = vf(4, xd, xv), *w = vf(4, wd, (float[]){1, 2, 3, 4}), *off = vf(4, offd, NULL), *out[1];
    memset(gwr_value_data(off), 0, gwr_value_nbytes(off));
    int64_t one = 1;
    gwr_value *b = vf(1, &one, (float[]){0.5f});
    if (CHECK_OK(deform(x, w, off, b, NULL, out))) CHECK(dims_are(out[0], 4, od) && values_are(out[0], 4, (double[]){37.5, 47.5, 67.5, 77.5}));
    rel(1, out);
    /* bad: offset with 4 channels for a 2 x 2 kernel (needs 8) */
    gwr_value *off4 = vf(4, (int64_t[]){1, 4, 2, 2}, NULL);
    CHECK_EQ_INT(deform(x, w, off4, NULL, NULL, out), GWR_ERR_SHAPE);
    CHECK_CONTAINS(t_err, "offset must be (N, offset_group * prod(kernel) * 2 = 8");
    rel(1, &off4);
    /* bad: W for 2 input channels, group 1 */
    gwr_value *w2 = vf(4, (int64_t[]){1, 2, 2, 2}, NULL);
    CHECK_EQ_INT(deform(x, w2, off, NULL, NULL, out), GWR_ERR_SHAPE);
    CHECK_CONTAINS(t_err, "do not fit group 1");
    rel(1, &w2);
    rel(1, &off), rel(1, &w);
    /* a 1 x 1 kernel read at (i + 0.25, j + 0.5): 0.375 X[i][j] + 0.375
     * X[i][j+1] + 0.125 X[i+1][j] + 0.125 X[i+1][j+1], zero outside;
     * with a mask of 2 everywhere, twice that */
    w = vf(4, (int64_t[]){1, 1, 1, 1}, (float[]){1});
    off = vf(4, (int64_t[]){1, 2, 3, 3}, NULL);
    for (int i = 0; i < 9; i++) ((float *)gwr_value_data(off))[i] = 0.25f, ((float *)gwr_value_data(off))[9 + i] = 0.5f;
    gwr_value *mask = vf(4, (int64_t[]){1, 1, 3, 3}, NULL);
    for (int i = 0; i < 9; i++) ((float *)gwr_value_data(mask))[i] = 2;
    double e[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
#define XA(r, c) ((r) < 3 && (c) < 3 ? xv[(r) * 3 + (c)] : 0.0)
            e[i * 3 + j] = 2 * (0.375 * XA(i, j) + 0.375 * XA(i, j + 1) + 0.125 * XA(i + 1, j) + 0.125 * XA(i + 1, j + 1));
#undef XA
        }
    CHECK(fabs(e[0] - 4.5) < 1e-12 && fabs(e[8] - 6.75) < 1e-12); /* 2 * 2.25, 2 * 3.375 */
    if (CHECK_OK(deform(x, w, off, NULL, mask, out))) CHECK(values_are(out[0], 9, e));
    rel(1, out);
    /* bad: a mask of the wrong spatial size */
    gwr_value *m2 = vf(4, (int64_t[]){1, 1, 2, 2}, NULL);
    CHECK_EQ_INT(deform(x, w, off, b, m2, out), GWR_ERR_SHAPE);
    CHECK_CONTAINS(t_err, "spatial dim 0");
    rel(1, &m2);
    /* bad: a rank-2 X */
    gwr_value *x2 = vf(2, (int64_t[]){3, 3}, xv);
    CHECK(deform(x2, w, off, NULL, NULL, out) != GWR_OK);
    CHECK_CONTAINS(t_err, "rank 2");
    rel(1, &x2);
    rel(1, &mask), rel(1, &off), rel(1, &w), rel(1, &b), rel(1, &x);
}

/* ---- optimizers (ai.onnx.preview.training) ----------------------------------------- */

TEST(optimizers) {
    gwr_value *out[3];
    /* Adagrad, R 0.1, T 1, decay 0.5, norm 0.01, X 1, G 0.5, H 0.2 (numpy):
     * X_new 0.9498752568578094, H_new 0.4601 */
    gwr_value *in[5] = {scalar_f(0.1f), scalar_i(1), scalar_f(1), scalar_f(0.5f), scalar_f(0.2f)};
    gwr_layer *l = layer_of(TRAINING, "Adagrad", 5, in, 2);
    gwr_layer_set_float(l, "decay_factor", 0.5f);
    gwr_layer_set_float(l, "norm_coefficient", 0.01f);
    if (CHECK_OK(run(0, 5, in, 2, out))) CHECK(values_are(out[0], 1, (double[]){0.9498752568578094}) && values_are(out[1], 1, (double[]){0.4601}));
    rel(2, out);
    /* bad: 4 tensors after R and T are not groups of 3 */
    layer_of(TRAINING, "Adagrad", 4, in, 1);
    CHECK_EQ_INT(run(0, 4, in, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(t_err, "not 3 groups");
    rel(5, in);
    /* Adam, R 0.1, alpha 0.9, beta 0.999, norm 0.01, post 0.1, X 1, G 0.5,
     * V 0.3, H 0.2 (numpy): T 2: X 0.8848008561193301, V 0.321, H
     * 0.2000601; T 0 (R not adjusted): X 0.8354098444999195 */
    int64_t ts[2] = {2, 0};
    double xs[2] = {0.8848008561193301, 0.8354098444999195};
    for (int c = 0; c < 2; c++) {
        gwr_value *a[6] = {scalar_f(0.1f), scalar_i(ts[c]), scalar_f(1), scalar_f(0.5f), scalar_f(0.3f), scalar_f(0.2f)};
        l = layer_of(TRAINING, "Adam", 6, a, 3);
        gwr_layer_set_float(l, "norm_coefficient", 0.01f);
        gwr_layer_set_float(l, "norm_coefficient_post", 0.1f);
        if (CHECK_OK(run(0, 6, a, 3, out)))
            CHECK(values_are(out[0], 1, &xs[c]) && values_are(out[1], 1, (double[]){0.321}) &&
                  values_are(out[2], 1, (double[]){0.2000601}));
        rel(3, out);
        rel(6, a);
    }
    /* Momentum, R 0.1, alpha 0.9, beta 0.5, norm 0.01, X 1, G 0.5, V 0.3:
     * G_reg 0.51; T 0 (beta taken as 1): V 0.78, X 0.922; T 1: V 0.525, X
     * 0.9475; Nesterov T 1: X 1 - 0.1 (0.51 + 0.9 * 0.525) = 0.90175 */
    struct {
        int64_t t;
        const char *mode;
        double x, v;
    } mc[3] = {{0, "standard", 0.922, 0.78}, {1, "standard", 0.9475, 0.525}, {1, "nesterov", 0.90175, 0.525}};
    for (int c = 0; c < 3; c++) {
        gwr_value *m[5] = {scalar_f(0.1f), scalar_i(mc[c].t), scalar_f(1), scalar_f(0.5f), scalar_f(0.3f)};
        l = layer_of(TRAINING, "Momentum", 5, m, 2);
        gwr_layer_set_float(l, "alpha", 0.9f);
        gwr_layer_set_float(l, "beta", 0.5f);
        gwr_layer_set_float(l, "norm_coefficient", 0.01f);
        gwr_layer_set_string(l, "mode", mc[c].mode);
        if (CHECK_OK(run(0, 5, m, 2, out))) CHECK(values_are(out[0], 1, &mc[c].x) && values_are(out[1], 1, &mc[c].v));
        rel(2, out);
        if (c < 2) {
            rel(5, m);
            continue;
        }
        /* bad: no mode; G of another shape; T a float; X an int */
        l = layer_of(TRAINING, "Momentum", 5, m, 2);
        gwr_layer_set_float(l, "alpha", 0.9f);
        gwr_layer_set_float(l, "beta", 0.5f);
        gwr_layer_set_float(l, "norm_coefficient", 0.01f);
        CHECK_EQ_INT(run(0, 5, m, 2, out), GWR_ERR_INVALID_ARG);
        CHECK_CONTAINS(t_err, "attribute mode is missing");
        gwr_value *g2 = vf(1, (int64_t[]){2}, (float[]){1, 2}), *keep = m[3];
        m[3] = g2;
        l = layer_of(TRAINING, "Momentum", 5, m, 2);
        gwr_layer_set_float(l, "alpha", 0.9f);
        gwr_layer_set_float(l, "beta", 0.5f);
        gwr_layer_set_float(l, "norm_coefficient", 0.01f);
        gwr_layer_set_string(l, "mode", "standard");
        CHECK(run(0, 5, m, 2, out) != GWR_OK);
        CHECK_CONTAINS(t_err, "must have the dtype and shape of X1");
        m[3] = keep, gwr_value_release(g2);
        gwr_value *tf = scalar_f(1), *ti = m[1];
        m[1] = tf;
        l = layer_of(TRAINING, "Adam", 4, m, 1);
        CHECK(run(0, 4, m, 1, out) != GWR_OK);
        CHECK_CONTAINS(t_err, "T must be int64");
        m[1] = ti, gwr_value_release(tf);
        rel(5, m);
    }
}

int main(void) {
    RUN(cumprod_modes);
    RUN(cumprod_int_wrap_empty_and_bad);
    RUN(space_to_depth_modes);
    RUN(center_crop_pad);
    RUN(col2im_sums);
    RUN(affine_grid);
    RUN(grid_sample_3d);
    RUN(deform_conv);
    RUN(optimizers);
    return check_report();
}
