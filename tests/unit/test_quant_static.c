/* test_quant_static.c - gwr_quantize --mode static through the C API on
 * small networks whose quantization parameters are worked out by hand:
 * activation scales and zero points from the calibration extremes, int8
 * per-channel weights, the int32 bias, Concat's common scale, QOperator's
 * QLinearMatMul, exclusion, the byte counts and the error report. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"

static gwr_network *new_net(void) {
    gwr_network *net = gwr_network_new("t");
    if (net) gwr_network_set_opset(net, "", 17);
    return net;
}

static gwr_tensor *input(gwr_network *net, const char *name, int64_t r, int64_t c) {
    gwr_dim d[2] = {r, c};
    return gwr_network_add_input(net, name, GWR_FLOAT32, 2, d);
}

static gwr_tensor *layer(gwr_network *net, const char *op, const char *name, const char *out, int n,
                         gwr_tensor *const *in, gwr_args *args) {
    gwr_tensor *y = NULL;
    gwr_layer *l = gwr_op_call(net, "", op, n, in, args, 1, &y);
    gwr_args_free(args);
    if (!l) return NULL;
    gwr_layer_set_name(l, name);
    gwr_tensor_set_name(y, out);
    return y;
}

/* A calibration set of one sample: one or two [r, c] float inputs. */
static gwr_calib *calib2(const char *n1, const float *v1, const char *n2, const float *v2, int64_t r, int64_t c) {
    gwr_calib *cal = gwr_calib_new();
    int64_t dims[2] = {r, c};
    gwr_value *v[2] = {gwr_value_new(GWR_FLOAT32, 2, dims), n2 ? gwr_value_new(GWR_FLOAT32, 2, dims) : NULL};
    const char *names[2] = {n1, n2};
    memcpy(gwr_value_data(v[0]), v1, (size_t)(r * c) * sizeof(float));
    if (n2) memcpy(gwr_value_data(v[1]), v2, (size_t)(r * c) * sizeof(float));
    gwr_calib_add(cal, n2 ? 2 : 1, names, v);
    gwr_value_release(v[0]), gwr_value_release(v[1]);
    return cal;
}

/* The live layer of op reading a tensor named `in` at slot 0 (NULL: any). */
static gwr_layer *find(gwr_network *net, const char *op, const char *in) {
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (gwr_layer_is_removed(l) || strcmp(gwr_layer_op(l), op)) continue;
        if (!in || (gwr_layer_num_inputs(l) > 0 && gwr_layer_input(l, 0) && !strcmp(gwr_tensor_name(gwr_layer_input(l, 0)), in)))
            return l;
    }
    return NULL;
}

static int count(gwr_network *net, const char *op) {
    int n = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++)
        n += !gwr_layer_is_removed(gwr_network_layer(net, i)) && !strcmp(gwr_layer_op(gwr_network_layer(net, i)), op);
    return n;
}

/* Input i of l as a constant: element k widened. */
static double at(gwr_layer *l, int i, int64_t k) {
    gwr_match_const c;
    if (!l || i >= gwr_layer_num_inputs(l) || !gwr_match_const_get(gwr_layer_input(l, i), &c)) return NAN;
    return gwr_match_const_at(&c, k);
}

/* Q(x) scale and zero point of the QuantizeLinear reading `in`. */
static int qparams(gwr_network *net, const char *in, double *scale, double *zp) {
    gwr_layer *q = find(net, "QuantizeLinear", in);
    if (!q) return 0;
    *scale = at(q, 1, 0), *zp = at(q, 2, 0);
    return 1;
}

/* x [2, 4] @ W [4, 3], W's columns each holding +-127: per-column scale 1,
 * int8 W = W. Calibration x in [-1, 3]: scale 4/255, zero point
 * round(1 / (4/255)) = 64. y's rows: [-121, 128.5, -388.5] and
 * [252, -190, 103.5]: [-388.5, 252], scale 640.5/255, zero point
 * round(388.5 / (640.5/255)) = round(154.68) = 155. */
static const float W1[12] = {127, -127, 10, -1, 64, 20, 2, 0, -127, 0, 3, 5};
static const float X1[8] = {-1, 0, 3, 0.5f, 2, 1, -0.5f, 0};

static gwr_network *matmul_net(void) {
    gwr_network *net = new_net();
    gwr_tensor *x = input(net, "x", 2, 4);
    int64_t wd[2] = {4, 3};
    gwr_tensor *in[2] = {x, gwr_constant(net, GWR_FLOAT32, 2, wd, W1)};
    gwr_tensor *y = layer(net, "MatMul", "mm", "y", 2, in, NULL);
    gwr_network_mark_output(net, y);
    return net;
}

/* Target ort: weight codes within [-64, 64] (gwr_q_weight_qmax; every
 * column of W1 has max |w| 127, scale 127 / 64), by hand. */
TEST(ort_target_seven_bit_weights) {
    static const int8_t want[12] = {64, -64, 5, -1, 32, 10, 1, 0, -64, 0, 2, 3};
    gwr_network *net = matmul_net();
    gwr_calib *cal = calib2("x", X1, NULL, NULL, 2, 4);
    gwr_quantize_options o = {.mode = GWR_QUANT_STATIC, .calib = cal};
    if (CHECK_OK(gwr_quantize(net, &o, NULL))) {
        gwr_layer *mm = gwr_network_find_layer(net, "mm");
        gwr_layer *wdq = mm ? gwr_tensor_parent(gwr_layer_input(mm, 1)) : NULL;
        if (CHECK(wdq)) {
            int same = 1;
            for (int k = 0; k < 12; k++) same &= at(wdq, 0, k) == want[k];
            CHECK(same);
            CHECK(at(wdq, 1, 0) == (float)(127.0 / 64) && at(wdq, 1, 2) == (float)(127.0 / 64));
        }
    }
    gwr_calib_free(cal);
    gwr_network_free(net);
}

TEST(matmul_qdq_by_hand) {
    gwr_network *net = matmul_net();
    gwr_calib *cal = calib2("x", X1, NULL, NULL, 2, 4);
    gwr_quantize_options o = {.mode = GWR_QUANT_STATIC, .target = GWR_TARGET_GWR, .calib = cal};
    gwr_quant_report *rep = NULL;
    if (!CHECK_OK(gwr_quantize(net, &o, &rep))) {
        fprintf(stderr, "%s\n", gwr_network_errmsg(net));
        goto out;
    }
    CHECK_OK(gwr_network_verify(net));
    double s, z;
    CHECK(qparams(net, "x", &s, &z) && s == (float)(4.0 / 255) && z == 64);
    CHECK(qparams(net, "y_float", &s, &z) && s == (float)(640.5 / 255) && z == 155);
    /* the output keeps its name, on the dequantized value */
    gwr_tensor *y = gwr_network_output(net, 0);
    CHECK_STR(gwr_tensor_name(y), "y");
    CHECK_STR(gwr_layer_op(gwr_tensor_parent(y)), "DequantizeLinear");
    gwr_layer *mm = gwr_network_find_layer(net, "mm");
    if (!CHECK(mm)) goto out;
    /* the graph input keeps its name; the MatMul reads its dequantized value */
    CHECK_STR(gwr_tensor_name(gwr_layer_input(mm, 0)), "x_dequantized");
    CHECK_STR(gwr_tensor_name(gwr_network_input(net, 0)), "x");
    gwr_layer *wdq = gwr_tensor_parent(gwr_layer_input(mm, 1));
    CHECK_STR(gwr_layer_op(wdq), "DequantizeLinear");
    int64_t axis = -1;
    gwr_layer_attr_int(wdq, "axis", 1, &axis);
    CHECK_EQ_INT(axis, 1);
    CHECK_EQ_INT(gwr_tensor_dtype(gwr_layer_input(wdq, 0)), GWR_INT8);
    int same = 1;
    for (int k = 0; k < 12; k++) same &= at(wdq, 0, k) == W1[k];
    CHECK(same);
    CHECK(at(wdq, 1, 0) == 1 && at(wdq, 1, 2) == 1 && at(wdq, 2, 1) == 0);
    /* one entry; bytes: 48 float -> 12 int8 + 3 scales + 3 zero points */
    CHECK_EQ_INT(gwr_quant_report_count(rep), 1);
    CHECK_CONTAINS(gwr_quant_report_entry(rep, 0)->what, "int8 per-channel");
    CHECK_EQ_INT(gwr_quant_report_weight_bytes(rep, 0), 48);
    CHECK_EQ_INT(gwr_quant_report_weight_bytes(rep, 1), 12 + 3 * 4 + 3);
out:
    gwr_quant_report_free(rep);
    gwr_calib_free(cal);
    gwr_network_free(net);
}

/* y = Gemm(x [1, 2], B [2, 2] (transB), C [1, -2]), quantized statically
 * in format fmt on one sample x = [2.55, 1]; NULL when gwr_quantize fails. */
static gwr_network *gemm_quantized(const float *b, gwr_quant_format fmt) {
    gwr_network *net = new_net();
    gwr_tensor *x = input(net, "x", 1, 2);
    int64_t bd[2] = {2, 2}, cd[1] = {2};
    float c[2] = {1, -2}, xv[2] = {2.55f, 1};
    gwr_args *a = gwr_args_new();
    gwr_args_set_int(a, "transB", 1);
    gwr_tensor *in[3] = {x, gwr_constant(net, GWR_FLOAT32, 2, bd, b), gwr_constant(net, GWR_FLOAT32, 1, cd, c)};
    gwr_network_mark_output(net, layer(net, "Gemm", "fc", "y", 3, in, a));
    gwr_calib *cal = calib2("x", xv, NULL, NULL, 1, 2);
    gwr_quantize_options o = {.mode = GWR_QUANT_STATIC, .target = GWR_TARGET_GWR, .calib = cal, .format = fmt};
    gwr_status st = gwr_quantize(net, &o, NULL);
    if (st) fprintf(stderr, "%s\n", gwr_network_errmsg(net));
    gwr_calib_free(cal);
    if (!CHECK_OK(st)) gwr_network_free(net), net = NULL;
    return net;
}

/* Gemm x [1, 2] with B [2, 2] transB (rows per output channel: scales 1
 * and 0.5) and bias [1, -2]; x in [0, 2.55]: scale 0.01, zero point 0;
 * the int32 bias round(1 / 0.01) = 100, round(-2 / (0.01 * 0.5)) = -400. */
TEST(gemm_bias_int32) {
    float b[4] = {127, 0, 0, 63.5f};
    gwr_network *net = gemm_quantized(b, GWR_QFORMAT_QDQ);
    if (!net) return;
    double s, z;
    CHECK(qparams(net, "x", &s, &z) && s == (float)(2.55 / 255) && z == 0);
    gwr_layer *fc = gwr_network_find_layer(net, "fc");
    gwr_layer *bdq = fc ? gwr_tensor_parent(gwr_layer_input(fc, 2)) : NULL;
    if (!CHECK(bdq && !strcmp(gwr_layer_op(bdq), "DequantizeLinear"))) goto out;
    CHECK_EQ_INT(gwr_tensor_dtype(gwr_layer_input(bdq, 0)), GWR_INT32);
    CHECK(at(bdq, 0, 0) == 100 && at(bdq, 0, 1) == -400);
    CHECK(at(bdq, 1, 0) == (float)(2.55 / 255) * 1.0f && at(bdq, 1, 1) == (float)(2.55 / 255) * 0.5f);
    gwr_layer *wdq = gwr_tensor_parent(gwr_layer_input(fc, 1));
    int64_t axis = -1;
    gwr_layer_attr_int(wdq, "axis", 1, &axis);
    CHECK(axis == 0 && at(wdq, 0, 0) == 127 && at(wdq, 0, 3) == 127 && at(wdq, 1, 1) == 0.5);
out:
    gwr_network_free(net);
}

/* a = x1 @ I, b = x2 @ 2I, Concat(a, b) -> MatMul: a in [-1, 0.5] and
 * b in [1, 2] share one scale, the union's [-1, 2]: 3/255, zero point
 * round(1 / (3/255)) = 85; so does the Concat's output. */
TEST(concat_shares_one_scale) {
    gwr_network *net = new_net();
    gwr_tensor *x1 = input(net, "x1", 1, 2), *x2 = input(net, "x2", 1, 2);
    int64_t d2[2] = {2, 2}, d3[2] = {4, 1};
    float i1[4] = {1, 0, 0, 1}, i2[4] = {2, 0, 0, 2}, ones[4] = {1, 1, 1, 1};
    gwr_tensor *in1[2] = {x1, gwr_constant(net, GWR_FLOAT32, 2, d2, i1)};
    gwr_tensor *in2[2] = {x2, gwr_constant(net, GWR_FLOAT32, 2, d2, i2)};
    gwr_tensor *ab[2] = {layer(net, "MatMul", "m1", "a", 2, in1, NULL), layer(net, "MatMul", "m2", "b", 2, in2, NULL)};
    gwr_args *ax = gwr_args_new();
    gwr_args_set_int(ax, "axis", 1);
    gwr_tensor *in3[2] = {layer(net, "Concat", "cat", "c", 2, ab, ax), gwr_constant(net, GWR_FLOAT32, 2, d3, ones)};
    gwr_network_mark_output(net, layer(net, "MatMul", "m3", "y", 2, in3, NULL));
    float v1[2] = {-1, 0.5f}, v2[2] = {0.5f, 1};
    gwr_calib *cal = calib2("x1", v1, "x2", v2, 1, 2);
    gwr_quantize_options o = {.mode = GWR_QUANT_STATIC, .target = GWR_TARGET_GWR, .calib = cal};
    if (!CHECK_OK(gwr_quantize(net, &o, NULL))) goto out;
    double s[3], z[3];
    CHECK(qparams(net, "a_float", &s[0], &z[0]) && qparams(net, "b_float", &s[1], &z[1]) &&
          qparams(net, "c_float", &s[2], &z[2]));
    for (int i = 0; i < 3; i++) CHECK(s[i] == (float)(3.0 / 255) && z[i] == 85);
out:
    gwr_calib_free(cal);
    gwr_network_free(net);
}

/* QOperator: QuantizeLinear -> QLinearMatMul (named as the MatMul) ->
 * DequantizeLinear; its output within one output step (640.5/255) of
 * x @ W, which the executor computes on the float network. */
TEST(matmul_qoperator) {
    gwr_network *net = matmul_net(), *ref = matmul_net();
    gwr_calib *cal = calib2("x", X1, NULL, NULL, 2, 4);
    gwr_quantize_options o = {.mode = GWR_QUANT_STATIC, .target = GWR_TARGET_GWR, .calib = cal, .format = GWR_QFORMAT_QOPERATOR};
    gwr_session *s1 = NULL, *s2 = NULL;
    if (!CHECK_OK(gwr_quantize(net, &o, NULL))) goto out;
    CHECK_OK(gwr_network_verify(net));
    CHECK_EQ_INT(count(net, "MatMul"), 0);
    CHECK_EQ_INT(count(net, "QLinearMatMul"), 1);
    CHECK_EQ_INT(count(net, "QuantizeLinear"), 1);
    CHECK_EQ_INT(count(net, "DequantizeLinear"), 1);
    gwr_layer *mm = gwr_network_find_layer(net, "mm");
    CHECK(mm && !strcmp(gwr_layer_op(mm), "QLinearMatMul"));
    CHECK_STR(gwr_tensor_name(gwr_network_output(net, 0)), "y");
    const char *names[1] = {"x"};
    int64_t d[2] = {2, 4};
    gwr_value *x = gwr_value_new(GWR_FLOAT32, 2, d), *y1 = NULL, *y2 = NULL;
    memcpy(gwr_value_data(x), X1, sizeof X1);
    s1 = gwr_session_new_raw(net, NULL), s2 = gwr_session_new_raw(ref, NULL);
    if (CHECK(s1 && s2) && CHECK_OK(gwr_session_run(s1, 1, names, &x, 1, NULL, &y1)) &&
        CHECK_OK(gwr_session_run(s2, 1, names, &x, 1, NULL, &y2))) {
        const float *a = gwr_value_cdata(y1), *b = gwr_value_cdata(y2);
        double worst = 0;
        for (int i = 0; i < 6; i++) worst = fmax(worst, fabs(a[i] - b[i]));
        CHECK(worst <= 640.5 / 255);
    }
    gwr_value_release(x), gwr_value_release(y1), gwr_value_release(y2);
out:
    gwr_session_free(s1), gwr_session_free(s2);
    gwr_calib_free(cal);
    gwr_network_free(net), gwr_network_free(ref);
}

TEST(exclude_and_report) {
    gwr_network *net = matmul_net();
    gwr_calib *cal = calib2("x", X1, NULL, NULL, 2, 4);
    gwr_quantize_options o = {.mode = GWR_QUANT_STATIC, .target = GWR_TARGET_GWR, .calib = cal, .exclude = "mm"};
    gwr_quant_report *rep = NULL;
    if (CHECK_OK(gwr_quantize(net, &o, &rep))) {
        CHECK_EQ_INT(count(net, "QuantizeLinear") + count(net, "DequantizeLinear"), 0);
        CHECK_STR(gwr_quant_report_entry(rep, 0)->what, "kept float32: --exclude");
        CHECK_EQ_INT(gwr_quant_report_weight_bytes(rep, 1), 48);
    }
    gwr_quant_report_free(rep), rep = NULL;
    gwr_network_free(net);
    /* --report: the layer measured against the float network */
    net = matmul_net();
    gwr_quantize_options r = {.mode = GWR_QUANT_STATIC, .target = GWR_TARGET_GWR, .calib = cal, .report = 1};
    if (CHECK_OK(gwr_quantize(net, &r, &rep))) {
        const gwr_quant_entry *e = gwr_quant_report_entry(rep, 0);
        CHECK(e && e->rel_error >= 0 && e->rel_error < 0.02 && e->cosine > 0.999);
    }
    gwr_quant_report_free(rep);
    gwr_calib_free(cal);
    gwr_network_free(net);
}

/* The method reaches the observers: x [1, 1000] evenly over [-1, 1) plus
 * one value at 1000 (in place of the last); minmax spans the outlier
 * (scale (1000 + 0.999) / 255); percentile 99.8 (0.1% in each tail: one
 * value) stops at the 999th value, 0.997, read at a bin's outer edge: bins
 * are 1000 / 2048 wide, so the range is within [-1.49, 1.49], the scale
 * at most 2.98 / 255. */
TEST(method_reaches_the_observers) {
    float x[1000];
    for (int i = 0; i < 1000; i++) x[i] = -1 + 2 * ((float)i + 0.5f) / 1000;
    x[999] = 1000;
    gwr_calib *cal = calib2("x", x, NULL, NULL, 1, 1000);
    double scale[2];
    for (int m = 0; m < 2; m++) {
        gwr_network *net = new_net();
        int64_t wd[2] = {1000, 1};
        static float w[1000];
        w[0] = 1;
        gwr_tensor *in[2] = {input(net, "x", 1, 1000), gwr_constant(net, GWR_FLOAT32, 2, wd, w)};
        gwr_network_mark_output(net, layer(net, "MatMul", "mm", "y", 2, in, NULL));
        gwr_quantize_options o = {.mode = GWR_QUANT_STATIC, .target = GWR_TARGET_GWR, .calib = cal,
                                  .method = m ? GWR_CALIB_PERCENTILE : GWR_CALIB_MINMAX, .percentile = 99.8};
        double z;
        scale[m] = NAN;
        if (CHECK_OK(gwr_quantize(net, &o, NULL))) CHECK(qparams(net, "x", &scale[m], &z));
        gwr_network_free(net);
    }
    CHECK(scale[0] == (float)((1000 + (1 - 1.0 / 1000)) / 255));
    CHECK(scale[1] > 1.99 / 255 && scale[1] <= 2.98 / 255);
    gwr_calib_free(cal);
}

/* QOperator Gemm(x, B, C) with transB: QLinearMatMul on B transposed to
 * [K, N] and C added in float. B's rows (channels) [127, 0] and [10, 63.5]:
 * scales 1 and 0.5, int8 rows [127, 0] and [20, 127]; [K, N]:
 * [[127, 20], [0, 127]]; b_scale [1, 0.5] over the columns. */
TEST(gemm_qoperator_transposes_b) {
    float b[4] = {127, 0, 10, 63.5f};
    gwr_network *net = gemm_quantized(b, GWR_QFORMAT_QOPERATOR);
    if (!net) return;
    CHECK_OK(gwr_network_verify(net));
    CHECK_EQ_INT(count(net, "Gemm"), 0);
    gwr_layer *fc = gwr_network_find_layer(net, "fc");
    if (!CHECK(fc && !strcmp(gwr_layer_op(fc), "QLinearMatMul"))) goto out;
    CHECK(at(fc, 3, 0) == 127 && at(fc, 3, 1) == 20 && at(fc, 3, 2) == 0 && at(fc, 3, 3) == 127);
    CHECK(at(fc, 4, 0) == 1 && at(fc, 4, 1) == 0.5);
    /* the output: Add(DequantizeLinear(..), C), named y */
    gwr_tensor *y = gwr_network_output(net, 0);
    CHECK_STR(gwr_tensor_name(y), "y");
    CHECK_STR(gwr_layer_op(gwr_tensor_parent(y)), "Add");
out:
    gwr_network_free(net);
}

/* A network output whose producer's shape inference cannot tell (a
 * Reshape to a shape given at run time, carried on uint8 in QOperator)
 * keeps the type declared for it: [3, 2] float32. */
TEST(output_keeps_declared_type) {
    gwr_network *net = new_net();
    gwr_dim sd[1] = {2};
    gwr_tensor *x = input(net, "x", 2, 4), *shape = gwr_network_add_input(net, "s", GWR_INT64, 1, sd);
    int64_t wd[2] = {4, 3};
    gwr_tensor *in[2] = {x, gwr_constant(net, GWR_FLOAT32, 2, wd, W1)};
    gwr_tensor *r[2] = {layer(net, "MatMul", "mm", "m", 2, in, NULL), shape};
    gwr_tensor *y = layer(net, "Reshape", "reshape", "y", 2, r, NULL);
    gwr_dim yd[2] = {3, 2};
    gwr_tensor_set_type(y, GWR_FLOAT32, 2, yd);
    gwr_network_mark_output(net, y);
    gwr_calib *cal = gwr_calib_new();
    int64_t xd[2] = {2, 4}, s1[1] = {2};
    gwr_value *v[2] = {gwr_value_new(GWR_FLOAT32, 2, xd), gwr_value_new(GWR_INT64, 1, s1)};
    memcpy(gwr_value_data(v[0]), X1, sizeof X1);
    ((int64_t *)gwr_value_data(v[1]))[0] = 3, ((int64_t *)gwr_value_data(v[1]))[1] = 2;
    const char *names[2] = {"x", "s"};
    gwr_calib_add(cal, 2, names, v);
    gwr_value_release(v[0]), gwr_value_release(v[1]);
    gwr_quantize_options o = {.mode = GWR_QUANT_STATIC, .target = GWR_TARGET_GWR, .calib = cal, .format = GWR_QFORMAT_QOPERATOR};
    if (CHECK_OK(gwr_quantize(net, &o, NULL))) {
        gwr_tensor *out = gwr_network_output(net, 0);
        CHECK_STR(gwr_tensor_name(out), "y");
        CHECK_STR(gwr_layer_op(gwr_tensor_parent(out)), "DequantizeLinear");
        CHECK(gwr_tensor_rank(out) == 2 && gwr_tensor_dim(out, 0) == 3 && gwr_tensor_dim(out, 1) == 2);
    }
    gwr_calib_free(cal);
    gwr_network_free(net);
}

/* Per channel needs opset 13: a MatMul network at opset 11 is raised to
 * 13 (per-channel weights); one with a Softmax (which changes at 13, not
 * converted) stays at 11 with per-tensor weights; at opset 9 it is
 * refused (QuantizeLinear is opset 10). */
TEST(opset_raised_for_per_channel) {
    gwr_calib *cal = calib2("x", X1, NULL, NULL, 2, 4);
    for (int k = 0; k < 3; k++) {
        gwr_network *net = matmul_net();
        gwr_network_set_opset(net, "", k == 2 ? 9 : 11);
        if (k) {
            gwr_tensor *y = gwr_network_output(net, 0), *in[1] = {y};
            gwr_network_unmark_output(net, y);
            gwr_network_mark_output(net, layer(net, "Softmax", "softmax", "p", 1, in, NULL));
        }
        gwr_quantize_options o = {.mode = GWR_QUANT_STATIC, .target = GWR_TARGET_GWR, .calib = cal};
        gwr_quant_report *rep = NULL;
        gwr_status st = gwr_quantize(net, &o, &rep);
        if (k == 2) {
            CHECK_EQ_INT(st, GWR_ERR_UNSUPPORTED);
            CHECK_CONTAINS(gwr_network_errmsg(net), "opset 10");
        } else if (CHECK_OK(st)) {
            CHECK_EQ_INT(gwr_network_opset(net, ""), k ? 11 : 13);
            CHECK_CONTAINS(gwr_quant_report_entry(rep, 0)->what, k ? "per-tensor" : "per-channel");
        }
        gwr_quant_report_free(rep);
        gwr_network_free(net);
    }
    gwr_calib_free(cal);
}

int main(void) {
    RUN(opset_raised_for_per_channel);
    RUN(output_keeps_declared_type);
    RUN(gemm_qoperator_transposes_b);
    RUN(method_reaches_the_observers);
    RUN(matmul_qdq_by_hand);
    RUN(ort_target_seven_bit_weights);
    RUN(gemm_bias_int32);
    RUN(concat_shares_one_scale);
    RUN(matmul_qoperator);
    RUN(exclude_and_report);
    return check_report();
}
