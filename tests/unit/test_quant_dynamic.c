/* test_quant_dynamic.c - gwr_quantize, mode dynamic (src/quant/dynamic.c):
 * the weights' int8 codes and scales worked out by hand, the layers of each
 * form (qoperator, qdq, the fused DynamicQuantizeMatMul of targets ort and
 * gwr), the outputs against the ONNX spec's arithmetic (DynamicQuantizeLinear
 * then the exact integer product) written out here, Conv and Gemm,
 * exclusion, per-tensor scales, and the report. */
#include "check.h"
#include "quant_case.h"

/* W [3, 2]: column 0 has max |w| 1.27 (scale 0.01), column 1 2.54 (0.02). */
static const float W32[6] = {1.27f, -2.54f, 0.5f, 1.0f, -1.0f, 0.3f};
static const int8_t WQ[6] = {127, -127, 50, 50, -100, 15};
static const float X23[6] = {1, -1, 0.5f, 0.2f, 0.3f, -0.25f};
/* x @ W in exact arithmetic */
/* Target ort: max |w| / 64 per column (gwr_q_weight_qmax): 1.27 / 64 and
 * 2.54 / 64; codes w / scale rounded within [-64, 64]. */
static const int8_t WQ_ORT[6] = {64, -64, 25, 25, -50, 8};
static const float Y_FLOAT[4] = {0.27f, -3.39f, 0.654f, -0.283f};

/* x [2, 3] -> MatMul(x, W) [-> Add bias] -> y */
static gwr_network *mlp_w(int bias, const float *w) {
    gwr_network *net = gwr_network_new("mlp");
    gwr_network_set_opset(net, "", 17);
    int64_t xd[2] = {2, 3}, wd[2] = {3, 2}, bd[1] = {2};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, xd);
    gwr_tensor *y = gwr_matmul(net, x, qc_const(net, 2, wd, w));
    gwr_layer_set_name(gwr_tensor_parent(y), "fc");
    if (bias) y = gwr_add(net, y, qc_const(net, 1, bd, (const float[]){0.5f, -0.25f}));
    gwr_network_mark_output(net, y);
    return net;
}

static gwr_network *mlp(int bias) { return mlp_w(bias, W32); }

/* ONNX's DynamicQuantizeLinear of x (n values) and the product with the
 * int8 codes wq [K, N] and scales ws, as the spec defines them. */
static void reference(const float *x, int64_t M, int64_t K, int64_t N, const int8_t *wq, const float *ws, int per_tensor,
                      float *y) {
    float lo = 0, hi = 0;
    for (int64_t i = 0; i < M * K; i++) lo = fminf(lo, x[i]), hi = fmaxf(hi, x[i]);
    float s = (hi - lo) / 255.0f;
    float z = nearbyintf(fminf(fmaxf(0 - lo / s, 0), 255));
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            int32_t acc = 0;
            for (int64_t k = 0; k < K; k++) {
                float q = fminf(fmaxf(nearbyintf(x[m * K + k] / s) + z, 0), 255);
                acc += ((int32_t)q - (int32_t)z) * wq[k * N + n];
            }
            y[m * N + n] = (float)acc * (s * ws[per_tensor ? 0 : n]);
        }
}

/* net's output on X23 against the reference of codes wq and scales ws
 * (plus add[n % 2] when add), within tol relative; and against float y
 * (may be NULL) within ftol. */
static void check_outputs(gwr_network *net, const int8_t *wq, const float *ws, int per_tensor, const float *add,
                          float tol, const float *yf, float ftol) {
    int64_t two[2] = {2, 3}, n = 0;
    gwr_value *x = qc_value(2, two, X23);
    float *y = qc_run(net, x, 0, &n), want[4];
    reference(X23, 2, 3, 2, wq, ws, per_tensor, want);
    if (CHECK(y) && CHECK_EQ_INT(n, 4))
        for (int i = 0; i < 4; i++) {
            float w = want[i] + (add ? add[i % 2] : 0);
            CHECK(fabsf(y[i] - w) <= tol * fmaxf(1, fabsf(w)));
            if (yf) CHECK(fabsf(y[i] - yf[i]) < ftol);
        }
    free(y);
    gwr_value_release(x);
}

static void quantize(gwr_network *net, unsigned target, gwr_quant_format fmt, int per_tensor, const char *exclude,
                     gwr_quant_report **rep) {
    gwr_quantize_options o = {.mode = GWR_QUANT_DYNAMIC, .target = target, .format = fmt, .per_tensor = per_tensor,
                              .exclude = exclude};
    gwr_status st = gwr_quantize(net, &o, rep);
    if (!CHECK_OK(st)) fprintf(stderr, "  %s\n", gwr_network_errmsg(net));
    CHECK_OK(gwr_network_verify(net));
}

TEST(qoperator_codes_and_outputs) {
    gwr_network *net = mlp(0);
    gwr_quant_report *rep = NULL;
    quantize(net, GWR_TARGET_ONNX, GWR_QFORMAT_QOPERATOR, 0, NULL, &rep);
    CHECK_EQ_INT(count_op(net, "MatMul"), 0);
    CHECK_EQ_INT(count_op(net, "DynamicQuantizeLinear"), 1);
    CHECK_EQ_INT(count_op(net, "MatMulInteger"), 1);
    CHECK_EQ_INT(count_op(net, "Cast"), 1);
    CHECK_EQ_INT(count_op(net, "Mul"), 2);
    gwr_layer *mm = qc_find_op(net, "MatMulInteger");
    if (!CHECK(mm)) return;
    CHECK_STR(gwr_layer_name(mm), "fc"); /* the layer keeps its name */
    gwr_dtype dt;
    int rank;
    const int64_t *dims;
    const int8_t *wq = qc_const_data(gwr_layer_input(mm, 1), &dt, &rank, &dims);
    if (CHECK(wq) && CHECK_EQ_INT(dt, GWR_INT8) && CHECK_EQ_INT(rank, 2)) {
        CHECK_EQ_INT(dims[0], 3), CHECK_EQ_INT(dims[1], 2);
        CHECK(!memcmp(wq, WQ, 6));
    }
    CHECK_EQ_INT(gwr_layer_num_inputs(mm), 3); /* symmetric weights: no b_zero_point */
    /* the scales: the Mul of x_scale by the constant [0.01, 0.02] */
    const float *ws = NULL;
    for (int64_t i = 0; i < gwr_network_num_layers(net) && !ws; i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (!strcmp(gwr_layer_op(l), "Mul"))
            for (int k = 0; k < 2 && !ws; k++) ws = qc_const_data(gwr_layer_input(l, k), &dt, &rank, &dims);
    }
    if (CHECK(ws) && CHECK_EQ_INT(rank, 1) && CHECK_EQ_INT(dims[0], 2))
        CHECK(fabsf(ws[0] - 0.01f) < 1e-8f && fabsf(ws[1] - 0.02f) < 1e-8f);
    /* the report */
    if (CHECK(rep) && CHECK_EQ_INT(gwr_quant_report_count(rep), 1)) {
        const gwr_quant_entry *e = gwr_quant_report_entry(rep, 0);
        CHECK_STR(e->layer, "fc");
        CHECK_STR(e->op, "MatMul");
        CHECK_STR(e->what, "int8 per-channel weights, dynamic activations");
        CHECK_EQ_INT(gwr_quant_report_weight_bytes(rep, 0), 24); /* 6 floats */
        CHECK_EQ_INT(gwr_quant_report_weight_bytes(rep, 1), 14); /* 6 int8 + 2 float scales */
    }
    gwr_quant_report_free(rep);
    /* outputs: the spec's arithmetic, and near x @ W */
    check_outputs(net, WQ, (const float[]){0.01f, 0.02f}, 0, NULL, 1e-6f, Y_FLOAT, 0.03f);
    gwr_network_free(net);
}

TEST(qdq_form) {
    gwr_network *net = mlp(0);
    quantize(net, GWR_TARGET_GWR, GWR_QFORMAT_QDQ, 0, NULL, NULL);
    CHECK_EQ_INT(count_op(net, "MatMul"), 1);
    CHECK_EQ_INT(count_op(net, "DynamicQuantizeLinear"), 1);
    CHECK_EQ_INT(count_op(net, "DequantizeLinear"), 2);
    CHECK_EQ_INT(count_op(net, "MatMulInteger") + count_op(net, "DynamicQuantizeMatMul"), 0);
    gwr_layer *mm = qc_find_op(net, "MatMul");
    gwr_layer *wdq = mm ? gwr_tensor_parent(gwr_layer_input(mm, 1)) : NULL;
    if (CHECK(wdq) && CHECK_STR(gwr_layer_op(wdq), "DequantizeLinear")) {
        int64_t axis = -1;
        CHECK_OK(gwr_layer_get_int(wdq, "axis", &axis));
        CHECK_EQ_INT(axis, 1); /* MatMul's output channel: B's columns */
        gwr_dtype dt;
        const int8_t *wq = qc_const_data(gwr_layer_input(wdq, 0), &dt, NULL, NULL);
        const int8_t *zp = qc_const_data(gwr_layer_input(wdq, 2), NULL, NULL, NULL);
        CHECK(wq && !memcmp(wq, WQ, 6));
        CHECK(zp && zp[0] == 0 && zp[1] == 0);
    }
    check_outputs(net, WQ, (const float[]){0.01f, 0.02f}, 0, NULL, 1e-5f, NULL, 0);
    gwr_network_free(net);
}

TEST(ort_target_fuses) {
    /* one MatMul and its bias: DynamicQuantizeMatMul with the bias */
    gwr_network *net = mlp(1);
    quantize(net, GWR_TARGET_GWR, GWR_QFORMAT_QOPERATOR, 0, NULL, NULL);
    CHECK_EQ_INT(count_op(net, "DynamicQuantizeMatMul"), 1);
    CHECK_EQ_INT(count_op(net, "DynamicQuantizeLinear") + count_op(net, "MatMulInteger") + count_op(net, "Add"), 0);
    check_outputs(net, WQ, (const float[]){0.01f, 0.02f}, 0, (const float[]){0.5f, -0.25f}, 1e-5f, NULL, 0);
    gwr_network_free(net);

    /* three MatMuls reading x: one DynamicQuantizeLinear, three MatMulIntegerToFloat */
    net = gwr_network_new("qkv");
    int64_t xd[2] = {2, 3}, wd[2] = {3, 2};
    gwr_tensor *xi = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, xd);
    for (int i = 0; i < 3; i++) gwr_network_mark_output(net, gwr_matmul(net, xi, qc_const(net, 2, wd, W32)));
    quantize(net, GWR_TARGET_GWR, GWR_QFORMAT_QOPERATOR, 0, NULL, NULL);
    CHECK_EQ_INT(count_op(net, "DynamicQuantizeLinear"), 1);
    CHECK_EQ_INT(count_op(net, "MatMulIntegerToFloat"), 3);
    gwr_network_free(net);
}

/* Target ort keeps every code within [-64, 64]: onnxruntime's u8 x s8
 * kernels without VNNI add pairs of products in int16 with saturation
 * (255 * 127 * 2 overflows it, 255 * 64 * 2 does not). */
TEST(ort_target_seven_bit_weights) {
    gwr_network *net = mlp(0);
    quantize(net, GWR_TARGET_ORT, GWR_QFORMAT_QDQ, 0, NULL, NULL);
    gwr_layer *mm = qc_find_op(net, "MatMul");
    gwr_layer *wdq = mm ? gwr_tensor_parent(gwr_layer_input(mm, 1)) : NULL;
    if (CHECK(wdq) && CHECK_STR(gwr_layer_op(wdq), "DequantizeLinear")) {
        const int8_t *wq = qc_const_data(gwr_layer_input(wdq, 0), NULL, NULL, NULL);
        const float *ws = qc_const_data(gwr_layer_input(wdq, 1), NULL, NULL, NULL);
        CHECK(wq && !memcmp(wq, WQ_ORT, 6));
        CHECK(ws && ws[0] == 1.27f / 64 && ws[1] == 2.54f / 64);
    }
    check_outputs(net, WQ_ORT, (const float[]){1.27f / 64, 2.54f / 64}, 0, NULL, 1e-5f, NULL, 0);
    gwr_network_free(net);
}

TEST(per_tensor) {
    static const float w[6] = {1.26f, -2.54f, 0.5f, 1.0f, -1.0f, 0.3f};
    gwr_network *net = mlp_w(0, w);
    quantize(net, GWR_TARGET_ONNX, GWR_QFORMAT_QOPERATOR, 1, NULL, NULL);
    gwr_layer *mm = qc_find_op(net, "MatMulInteger");
    /* one scale: max |w| 2.54 / 127 = 0.02; codes w / 0.02 rounded */
    static const int8_t wq_t[6] = {63, -127, 25, 50, -50, 15};
    const int8_t *wq = mm ? qc_const_data(gwr_layer_input(mm, 1), NULL, NULL, NULL) : NULL;
    if (CHECK(wq)) CHECK(!memcmp(wq, wq_t, 6));
    check_outputs(net, wq_t, (const float[]){0.02f}, 1, NULL, 1e-5f, NULL, 0);
    gwr_network_free(net);
}

TEST(exclude) {
    const char *lists[2] = {"fc", "Gemm,MatMul"};
    for (int k = 0; k < 2; k++) {
        gwr_network *net = mlp(0);
        gwr_quant_report *rep = NULL;
        quantize(net, GWR_TARGET_ORT, GWR_QFORMAT_QOPERATOR, 0, lists[k], &rep);
        CHECK_EQ_INT(count_op(net, "MatMul"), 1);
        CHECK_EQ_INT(count_op(net, "DynamicQuantizeLinear"), 0);
        if (CHECK(rep) && CHECK_EQ_INT(gwr_quant_report_count(rep), 1)) {
            CHECK_STR(gwr_quant_report_entry(rep, 0)->what, "kept float32: --exclude");
            CHECK_EQ_INT(gwr_quant_report_weight_bytes(rep, 1), 24);
        }
        gwr_quant_report_free(rep);
        gwr_network_free(net);
    }
}

/* Gemm(x, B^T) with transB, alpha 2, C [2], beta 0.5: MatMulInteger on B as
 * [K, N], alpha in the scales, beta * C added. */
TEST(gemm) {
    gwr_network *net = gwr_network_new("gemm");
    int64_t xd[2] = {2, 3}, bd[2] = {2, 3}, cd[1] = {2};
    float bt[6]; /* W32 transposed: [N, K] */
    for (int k = 0; k < 3; k++)
        for (int n = 0; n < 2; n++) bt[n * 3 + k] = W32[k * 2 + n];
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, xd);
    gwr_tensor *y = gwr_gemm(net, x, qc_const(net, 2, bd, bt), qc_const(net, 1, cd, (const float[]){1, -2}), 2, 0.5f, 0, 1);
    gwr_network_mark_output(net, y);
    quantize(net, GWR_TARGET_ONNX, GWR_QFORMAT_QOPERATOR, 0, NULL, NULL);
    CHECK_EQ_INT(count_op(net, "Gemm"), 0);
    gwr_layer *mm = qc_find_op(net, "MatMulInteger");
    const int8_t *wq = mm ? qc_const_data(gwr_layer_input(mm, 1), NULL, NULL, NULL) : NULL;
    if (CHECK(wq)) CHECK(!memcmp(wq, WQ, 6));
    /* alpha 2 in the scales, beta * C = [0.5, -1] added */
    float yf[4];
    for (int i = 0; i < 4; i++) yf[i] = 2 * Y_FLOAT[i] + (i % 2 ? -1 : 0.5f);
    check_outputs(net, WQ, (const float[]){0.02f, 0.04f}, 0, (const float[]){0.5f, -1}, 1e-5f, yf, 0.06f);
    gwr_network_free(net);
}

/* Conv x [1, 1, 3, 3], W [2, 1, 2, 2], bias [2]: ConvInteger, the scales
 * and the bias over the channel axis. */
TEST(conv) {
    static const float w[8] = {0.5f, -0.25f, 1.27f, 0, /* channel 0: scale 0.01 */
                               -0.127f, 0.1f, 0.05f, 0.02f}; /* channel 1: scale 0.001 */
    static const int8_t wq[8] = {50, -25, 127, 0, -127, 100, 50, 20};
    static const float x[9] = {1, 0.5f, -0.5f, 0.25f, -1, 0.75f, 0, 0.125f, 0.5f};
    for (int fmt = 0; fmt < 2; fmt++) {
        gwr_network *net = gwr_network_new("cnn");
        int64_t xd[4] = {1, 1, 3, 3}, wd[4] = {2, 1, 2, 2}, bd[1] = {2};
        gwr_tensor *xi = gwr_network_add_input(net, "x", GWR_FLOAT32, 4, xd);
        gwr_tensor *y = gwr_conv(net, xi, qc_const(net, 4, wd, w), qc_const(net, 1, bd, (const float[]){0.5f, -1}), NULL);
        gwr_network_mark_output(net, y);
        quantize(net, GWR_TARGET_GWR, fmt ? GWR_QFORMAT_QOPERATOR : GWR_QFORMAT_QDQ, 0, NULL, NULL);
        CHECK_EQ_INT(count_op(net, "ConvInteger"), fmt);
        CHECK_EQ_INT(count_op(net, "Conv"), !fmt);
        gwr_layer *ci = qc_find_op(net, fmt ? "ConvInteger" : "Conv");
        if (!fmt && ci) ci = gwr_tensor_parent(gwr_layer_input(ci, 1)); /* the weights' DequantizeLinear */
        const int8_t *q = ci ? qc_const_data(gwr_layer_input(ci, fmt ? 1 : 0), NULL, NULL, NULL) : NULL;
        if (CHECK(q)) CHECK(!memcmp(q, wq, 8));
        /* against the spec's arithmetic: x quantized as DynamicQuantizeLinear does */
        float s = (1 - -1) / 255.0f, z = nearbyintf(1 / s), want[8];
        for (int c = 0; c < 2; c++)
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++) {
                    int32_t acc = 0;
                    for (int a = 0; a < 2; a++)
                        for (int b = 0; b < 2; b++)
                            acc += ((int32_t)(nearbyintf(x[(i + a) * 3 + j + b] / s) + z) - (int32_t)z) * wq[c * 4 + a * 2 + b];
                    want[c * 4 + i * 2 + j] = (float)acc * (s * (c ? 0.001f : 0.01f)) + (c ? -1 : 0.5f);
                }
        int64_t n = 0;
        gwr_value *xv = qc_value(4, xd, x);
        float *yv = qc_run(net, xv, 0, &n);
        if (CHECK(yv) && CHECK_EQ_INT(n, 8))
            for (int i = 0; i < 8; i++) CHECK(fabsf(yv[i] - want[i]) <= 1e-5f);
        free(yv);
        gwr_value_release(xv);
        gwr_network_free(net);
    }
}

/* DynamicQuantizeLinear needs opset 11 and DequantizeLinear's axis 13:
 * the model's opset is raised, or, where an op of it changed meaning in
 * between (Softmax at 13), the model is refused as it was. */
TEST(opset) {
    gwr_network *net = mlp(0);
    gwr_network_set_opset(net, "", 10);
    quantize(net, GWR_TARGET_ONNX, GWR_QFORMAT_QOPERATOR, 0, NULL, NULL);
    CHECK_EQ_INT(gwr_network_opset(net, ""), 11);
    CHECK_EQ_INT(count_op(net, "MatMulInteger"), 1);
    gwr_network_free(net);

    net = mlp(0);
    gwr_network_set_opset(net, "", 12);
    gwr_tensor *y = gwr_network_output(net, 0);
    gwr_network_unmark_output(net, y);
    gwr_network_mark_output(net, gwr_softmax(net, y, 1));
    gwr_quantize_options o = {.mode = GWR_QUANT_DYNAMIC, .format = GWR_QFORMAT_QDQ};
    CHECK_EQ_INT(gwr_quantize(net, &o, NULL), GWR_ERR_UNSUPPORTED);
    CHECK_CONTAINS(gwr_network_errmsg(net), "needs opset 13 (the model's is 12)");
    CHECK_CONTAINS(gwr_network_errmsg(net), "Softmax");
    CHECK_EQ_INT(gwr_network_opset(net, ""), 12);
    CHECK_EQ_INT(count_op(net, "MatMul"), 1);
    CHECK_EQ_INT(count_op(net, "DynamicQuantizeLinear"), 0);
    gwr_network_free(net);
}

int main(void) {
    RUN(qoperator_codes_and_outputs);
    RUN(qdq_form);
    RUN(ort_target_fuses);
    RUN(ort_target_seven_bit_weights);
    RUN(per_tensor);
    RUN(exclude);
    RUN(gemm);
    RUN(conv);
    RUN(opset);
    return check_report();
}
