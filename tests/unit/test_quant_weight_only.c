/* test_quant_weight_only.c - gwr_quantize, mode weight-only
 * (src/quant/weight_only.c): 4- and 8-bit codes and scales worked out by
 * hand, MatMulNBits' packing (onnxruntime's layout: B uint8 [N, k_blocks,
 * blob], low nibble first, zero point 2^(bits-1); checked against
 * onnxruntime itself by tests/cli/quantize_ort.py), a padded last block,
 * the bias folded, Gemm, the DequantizeLinear form of target onnx (opset
 * 21, INT4 [K, N], block_size) run on the executor, and GPTQ lowering the
 * output error of round-to-nearest on correlated inputs. */
#include "check.h"
#include "quant_case.h"

#define K16 16
#define N3 3

/* Column 0: k - 8 (scale 1, codes k - 8); column 1: (k - 8) / 2 (scale
 * 0.5); column 2: k / 10, its largest magnitude 1.5 positive, so the scale
 * is 1.5 / -8 = -0.1875 and the codes round(-0.5333 k). */
static void weights16(float *w) {
    for (int k = 0; k < K16; k++) w[k * N3] = (float)(k - 8), w[k * N3 + 1] = 0.5f * (float)(k - 8), w[k * N3 + 2] = 0.1f * (float)k;
}
static const int CODES2[16] = {0, -1, -1, -2, -2, -3, -3, -4, -4, -5, -5, -6, -6, -7, -7, -8};
static const float SCALES[3] = {1, 0.5f, -0.1875f};

static gwr_network *one_matmul(int64_t K, int64_t N, const float *w, const float *bias) {
    gwr_network *net = gwr_network_new("wo");
    gwr_network_set_opset(net, "", 17);
    int64_t xd[2] = {2, K}, wd[2] = {K, N};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, xd);
    gwr_tensor *y = gwr_matmul(net, x, qc_const(net, 2, wd, w));
    gwr_layer_set_name(gwr_tensor_parent(y), "fc");
    if (bias) y = gwr_add(net, y, qc_const(net, 1, &N, bias));
    gwr_network_mark_output(net, y);
    return net;
}

static gwr_status quantize(gwr_network *net, unsigned target, int bits, int bs, gwr_wo_method m, const gwr_calib *c,
                           gwr_quant_report **rep) {
    gwr_quantize_options o = {.mode = GWR_QUANT_WEIGHT_ONLY, .target = target, .bits = bits, .block_size = bs,
                              .wo_method = m, .calib = c};
    gwr_status st = gwr_quantize(net, &o, rep);
    if (st) fprintf(stderr, "  gwr_quantize: %s\n", gwr_network_errmsg(net));
    CHECK_OK(gwr_network_verify(net));
    return st;
}

static int64_t attr(gwr_layer *l, const char *name) {
    int64_t v = -1;
    gwr_layer_get_int(l, name, &v);
    return v;
}

TEST(nbits_4bit_layout) {
    float w[K16 * N3];
    weights16(w);
    gwr_network *net = one_matmul(K16, N3, w, NULL);
    gwr_quant_report *rep = NULL;
    CHECK_OK(quantize(net, GWR_TARGET_ORT, 4, 16, GWR_WO_RTN, NULL, &rep));
    CHECK_EQ_INT(count_op(net, "MatMul"), 0);
    gwr_layer *l = qc_find_op(net, "MatMulNBits");
    if (!CHECK(l)) return;
    CHECK_STR(gwr_layer_domain(l), "com.microsoft");
    CHECK_STR(gwr_layer_name(l), "fc");
    CHECK_EQ_INT(attr(l, "K"), 16), CHECK_EQ_INT(attr(l, "N"), 3), CHECK_EQ_INT(attr(l, "bits"), 4);
    CHECK_EQ_INT(attr(l, "block_size"), 16), CHECK_EQ_INT(attr(l, "accuracy_level"), 0);
    CHECK_EQ_INT(gwr_layer_num_inputs(l), 3); /* symmetric: no zero_points; no bias */
    gwr_dtype dt;
    int rank;
    const int64_t *dims;
    const uint8_t *b = qc_const_data(gwr_layer_input(l, 1), &dt, &rank, &dims);
    if (CHECK(b) && CHECK_EQ_INT(dt, GWR_UINT8) && CHECK_EQ_INT(rank, 3)) {
        CHECK_EQ_INT(dims[0], 3), CHECK_EQ_INT(dims[1], 1), CHECK_EQ_INT(dims[2], 8);
        /* columns 0 and 1: codes k - 8 stored as k, two a byte, the first low */
        static const uint8_t c01[8] = {0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE};
        CHECK(!memcmp(b, c01, 8));
        CHECK(!memcmp(b + 8, c01, 8));
        for (int j = 0; j < 8; j++)
            CHECK_EQ_INT(b[16 + j], (CODES2[2 * j] + 8) | ((CODES2[2 * j + 1] + 8) << 4));
    }
    const float *s = qc_const_data(gwr_layer_input(l, 2), &dt, &rank, &dims);
    if (CHECK(s) && CHECK_EQ_INT(rank, 1) && CHECK_EQ_INT(dims[0], 3))
        for (int n = 0; n < 3; n++) CHECK(s[n] == SCALES[n]);
    /* the output keeps [2, N] */
    gwr_tensor *y = gwr_network_output(net, 0);
    CHECK_EQ_INT(gwr_tensor_rank(y), 2), CHECK_EQ_INT(gwr_tensor_dim(y, 1), 3);
    if (CHECK(rep) && CHECK_EQ_INT(gwr_quant_report_count(rep), 1)) {
        CHECK_STR(gwr_quant_report_entry(rep, 0)->what, "4-bit block 16, rtn");
        CHECK_EQ_INT(gwr_quant_report_weight_bytes(rep, 0), 16 * 3 * 4);
        CHECK_EQ_INT(gwr_quant_report_weight_bytes(rep, 1), 3 * 8 + 3 * 4);
    }
    gwr_quant_report_free(rep);
    gwr_network_free(net);
}

/* K 20 in blocks of 16: the second block holds 4 weights and 12 of padding
 * (code 0, stored 8). */
TEST(nbits_padded_block_and_bias) {
    float w[20];
    for (int k = 0; k < 16; k++) w[k] = (float)(k - 8);
    w[16] = 1, w[17] = -2, w[18] = 0.5f, w[19] = 0.25f; /* scale -2 / -8 = 0.25: codes 4, -8, 2, 1 */
    gwr_network *net = one_matmul(20, 1, w, (const float[]){0.75f});
    CHECK_OK(quantize(net, GWR_TARGET_GWR, 4, 16, GWR_WO_RTN, NULL, NULL));
    CHECK_EQ_INT(count_op(net, "Add"), 0);
    gwr_layer *l = qc_find_op(net, "MatMulNBits");
    if (!CHECK(l)) return;
    const int64_t *dims;
    const uint8_t *b = qc_const_data(gwr_layer_input(l, 1), NULL, NULL, &dims);
    if (CHECK(b)) {
        CHECK_EQ_INT(dims[1], 2);
        static const uint8_t blk1[8] = {0x0C, 0x9A, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88};
        CHECK(!memcmp(b + 8, blk1, 8));
    }
    const float *s = qc_const_data(gwr_layer_input(l, 2), NULL, NULL, NULL);
    if (CHECK(s)) CHECK(s[0] == 1 && s[1] == 0.25f);
    if (CHECK_EQ_INT(gwr_layer_num_inputs(l), 6)) { /* A, B, scales, -, -, bias */
        CHECK(!gwr_layer_input(l, 3) && !gwr_layer_input(l, 4));
        const float *bias = qc_const_data(gwr_layer_input(l, 5), NULL, NULL, NULL);
        CHECK(bias && bias[0] == 0.75f);
    }
    gwr_network_free(net);
}

TEST(nbits_8bit) {
    float w[K16 * N3];
    weights16(w);
    gwr_network *net = one_matmul(K16, N3, w, NULL);
    CHECK_OK(quantize(net, GWR_TARGET_ORT, 8, 16, GWR_WO_RTN, NULL, NULL));
    gwr_layer *l = qc_find_op(net, "MatMulNBits");
    if (!CHECK(l)) return;
    CHECK_EQ_INT(attr(l, "bits"), 8);
    const int64_t *dims;
    const uint8_t *b = qc_const_data(gwr_layer_input(l, 1), NULL, NULL, &dims);
    const float *s = qc_const_data(gwr_layer_input(l, 2), NULL, NULL, NULL);
    /* column 0: scale -8 / -128 = 1/16, codes 16 (k - 8), stored + 128 = 16 k */
    if (CHECK(b) && CHECK(s) && CHECK_EQ_INT(dims[2], 16)) {
        CHECK(s[0] == 0.0625f);
        for (int k = 0; k < 16; k++) CHECK_EQ_INT(b[k], 16 * k);
    }
    gwr_network_free(net);
}

/* Gemm(x, B^T, C) alpha 2: B transposed to [K, N], alpha in the scales, C the bias. */
TEST(nbits_gemm) {
    float w[K16 * N3], bt[K16 * N3];
    weights16(w);
    for (int k = 0; k < K16; k++)
        for (int n = 0; n < N3; n++) bt[n * K16 + k] = w[k * N3 + n];
    gwr_network *net = gwr_network_new("gemm");
    int64_t xd[2] = {2, K16}, bd[2] = {N3, K16}, cd[1] = {N3};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, xd);
    gwr_network_mark_output(net, gwr_gemm(net, x, qc_const(net, 2, bd, bt), qc_const(net, 1, cd, (const float[]){1, 2, 3}), 2,
                                          1, 0, 1));
    CHECK_OK(quantize(net, GWR_TARGET_ORT, 4, 16, GWR_WO_RTN, NULL, NULL));
    CHECK_EQ_INT(count_op(net, "Gemm"), 0);
    gwr_layer *l = qc_find_op(net, "MatMulNBits");
    if (!CHECK(l) || !CHECK_EQ_INT(gwr_layer_num_inputs(l), 6)) return;
    const uint8_t *b = qc_const_data(gwr_layer_input(l, 1), NULL, NULL, NULL);
    const float *s = qc_const_data(gwr_layer_input(l, 2), NULL, NULL, NULL);
    const float *c = qc_const_data(gwr_layer_input(l, 5), NULL, NULL, NULL);
    if (CHECK(b && s && c)) {
        CHECK_EQ_INT(b[0], 0x10);
        for (int n = 0; n < 3; n++) CHECK(s[n] == 2 * SCALES[n]), CHECK(c[n] == (float)(n + 1));
    }
    gwr_network_free(net);
}

/* target onnx: INT4 [K, N] -> DequantizeLinear(axis 0, block_size) -> MatMul at opset 21, run. */
TEST(onnx_dequantize_linear) {
    float w[K16 * N3];
    weights16(w);
    gwr_network *net = one_matmul(K16, N3, w, NULL);
    CHECK_OK(quantize(net, GWR_TARGET_ONNX, 4, 16, GWR_WO_RTN, NULL, NULL));
    CHECK_EQ_INT(gwr_network_opset(net, ""), 21);
    CHECK_EQ_INT(count_op(net, "MatMulNBits"), 0);
    gwr_layer *mm = qc_find_op(net, "MatMul");
    gwr_layer *dq = mm ? gwr_tensor_parent(gwr_layer_input(mm, 1)) : NULL;
    if (!CHECK(dq) || !CHECK_STR(gwr_layer_op(dq), "DequantizeLinear")) return;
    CHECK_EQ_INT(attr(dq, "axis"), 0), CHECK_EQ_INT(attr(dq, "block_size"), 16);
    gwr_dtype dt;
    int rank;
    const int64_t *dims;
    const uint8_t *q = qc_const_data(gwr_layer_input(dq, 0), &dt, &rank, &dims);
    if (CHECK(q) && CHECK_EQ_INT(dt, GWR_INT4) && CHECK_EQ_INT(rank, 2)) {
        CHECK_EQ_INT(dims[0], 16), CHECK_EQ_INT(dims[1], 3);
        /* elements (0,0) -8, (0,1) -8 | (0,2) 0, (1,0) -7: nibbles 8 8 | 0 9 */
        CHECK_EQ_INT(q[0], 0x88), CHECK_EQ_INT(q[1], 0x90);
    }
    const float *s = qc_const_data(gwr_layer_input(dq, 1), NULL, &rank, &dims);
    if (CHECK(s) && CHECK_EQ_INT(rank, 2) && CHECK_EQ_INT(dims[0], 1) && CHECK_EQ_INT(dims[1], 3))
        for (int n = 0; n < 3; n++) CHECK(s[n] == SCALES[n]);
    /* the executor: x @ (code * scale) */
    float x[32], want[6] = {0};
    for (int i = 0; i < 32; i++) x[i] = (float)((i * 7) % 11) / 10.0f - 0.5f;
    for (int m = 0; m < 2; m++)
        for (int k = 0; k < 16; k++) {
            want[m * 3] += x[m * 16 + k] * (float)(k - 8);
            want[m * 3 + 1] += x[m * 16 + k] * 0.5f * (float)(k - 8);
            want[m * 3 + 2] += x[m * 16 + k] * (float)CODES2[k] * -0.1875f;
        }
    int64_t xd[2] = {2, 16}, n = 0;
    gwr_value *xv = qc_value(2, xd, x);
    float *y = qc_run(net, xv, 0, &n);
    if (CHECK(y) && CHECK_EQ_INT(n, 6))
        for (int i = 0; i < 6; i++) CHECK(fabsf(y[i] - want[i]) <= 1e-5f * fmaxf(1, fabsf(want[i])));
    free(y);
    gwr_value_release(xv);
    gwr_network_free(net);
}

TEST(exclude) {
    float w[K16 * N3];
    weights16(w);
    gwr_network *net = one_matmul(K16, N3, w, NULL);
    gwr_quantize_options o = {.mode = GWR_QUANT_WEIGHT_ONLY, .exclude = "fc"};
    CHECK_OK(gwr_quantize(net, &o, NULL));
    CHECK_EQ_INT(count_op(net, "MatMul"), 1);
    CHECK_EQ_INT(count_op(net, "MatMulNBits"), 0);
    CHECK_EQ_INT(gwr_network_opset(net, ""), 17);
    gwr_network_free(net);
}

/* GPTQ against round to nearest, 4 bits, blocks of 32: x [8, 64] of
 * strongly correlated channels (z [8, 12] @ M [12, 64] plus a little noise),
 * W [64, 48] normal. Calibrated on 24 samples, measured on 16 others. */
#define GK 64
#define GN 48
#define GR 12
static gwr_value *correlated(uint64_t *seed, const float *mix) {
    float x[8 * GK];
    for (int r = 0; r < 8; r++) {
        float z[GR];
        for (int j = 0; j < GR; j++) z[j] = (float)qc_normal(seed);
        for (int k = 0; k < GK; k++) {
            float v = 0.05f * (float)qc_normal(seed);
            for (int j = 0; j < GR; j++) v += z[j] * mix[j * GK + k];
            x[r * GK + k] = v;
        }
    }
    int64_t d[2] = {8, GK};
    return qc_value(2, d, x);
}

TEST(gptq_beats_rtn) {
    uint64_t seed = 24;
    static float w[GK * GN], mix[GR * GK];
    for (int i = 0; i < GK * GN; i++) w[i] = (float)qc_normal(&seed);
    for (int i = 0; i < GR * GK; i++) mix[i] = (float)qc_normal(&seed);
    gwr_calib *cal = gwr_calib_new();
    const char *nm = "x";
    for (int i = 0; i < 24; i++) {
        gwr_value *v = correlated(&seed, mix);
        gwr_calib_add(cal, 1, &nm, &v);
        gwr_value_release(v);
    }
    gwr_value *test[16];
    for (int i = 0; i < 16; i++) test[i] = correlated(&seed, mix);
    double err[2] = {0, 0};
    for (int m = 0; m < 2; m++) {
        gwr_network *fp = gwr_network_new("g");
        int64_t xd[2] = {8, GK}, wd[2] = {GK, GN};
        gwr_network_set_opset(fp, "", 17);
        gwr_network_mark_output(fp, gwr_matmul(fp, gwr_network_add_input(fp, "x", GWR_FLOAT32, 2, xd), qc_const(fp, 2, wd, w)));
        gwr_network *qn = gwr_network_clone(fp);
        gwr_quant_report *rep = NULL;
        CHECK_OK(quantize(qn, GWR_TARGET_ONNX, 4, 32, m ? GWR_WO_GPTQ : GWR_WO_RTN, cal, &rep));
        if (CHECK(rep) && CHECK_EQ_INT(gwr_quant_report_count(rep), 1))
            CHECK_STR(gwr_quant_report_entry(rep, 0)->what, m ? "4-bit block 32, gptq" : "4-bit block 32, rtn");
        gwr_quant_report_free(rep);
        double dd = 0, bb = 0;
        for (int i = 0; i < 16; i++) {
            int64_t n1 = 0, n2 = 0;
            float *a = qc_run(qn, test[i], 0, &n1), *b = qc_run(fp, test[i], 0, &n2);
            if (CHECK(a && b && n1 == n2))
                for (int64_t j = 0; j < n1; j++) dd += (a[j] - b[j]) * (double)(a[j] - b[j]), bb += (double)b[j] * b[j];
            free(a), free(b);
        }
        err[m] = sqrt(dd / bb);
        gwr_network_free(fp), gwr_network_free(qn);
    }
    printf("4-bit block 32 output rel. RMS error on held-out inputs: rtn %.4f, gptq %.4f (%.2fx)\n", err[0], err[1],
           err[1] / err[0]);
    CHECK(err[0] > 0.01); /* 4 bits lose something */
    CHECK(err[1] < 0.8 * err[0]);
    for (int i = 0; i < 16; i++) gwr_value_release(test[i]);
    gwr_calib_free(cal);
}

/* Inputs the calibration never sets (an embedding's rows the samples do
 * not reach): GPTQ rounds their weights to nearest instead of zeroing
 * them. x [8, 32]: channels 16..31 always 0 in calibration. */
TEST(gptq_unseen_inputs) {
    uint64_t seed = 5;
    static float w[32 * 4];
    for (int i = 0; i < 32 * 4; i++) w[i] = (float)qc_normal(&seed);
    gwr_calib *cal = gwr_calib_new();
    const char *nm = "x";
    int64_t xd[2] = {8, 32}, wd[2] = {32, 4};
    for (int i = 0; i < 16; i++) {
        float x[8 * 32] = {0};
        for (int r = 0; r < 8; r++)
            for (int k = 0; k < 16; k++) x[r * 32 + k] = (float)qc_normal(&seed);
        gwr_value *v = qc_value(2, xd, x);
        gwr_calib_add(cal, 1, &nm, &v);
        gwr_value_release(v);
    }
    gwr_network *net = gwr_network_new("emb");
    gwr_network_set_opset(net, "", 17);
    gwr_network_mark_output(net, gwr_matmul(net, gwr_network_add_input(net, "x", GWR_FLOAT32, 2, xd), qc_const(net, 2, wd, w)));
    CHECK_OK(quantize(net, GWR_TARGET_ONNX, 4, 16, GWR_WO_GPTQ, cal, NULL));
    float x[8 * 32] = {0};
    for (int r = 0; r < 8; r++) x[r * 32 + 16 + 2 * r] = 1; /* row r: weight row 16 + 2r */
    int64_t n = 0;
    gwr_value *xv = qc_value(2, xd, x);
    float *y = qc_run(net, xv, 0, &n);
    /* within one step (the block's max |w| / 8) of the float weight, as rounding to nearest is */
    float step[4] = {0};
    for (int k = 16; k < 32; k++)
        for (int c = 0; c < 4; c++) step[c] = fmaxf(step[c], fabsf(w[k * 4 + c]) / 8);
    if (CHECK(y) && CHECK_EQ_INT(n, 32))
        for (int r = 0; r < 8; r++)
            for (int c = 0; c < 4; c++) {
                float want = w[(16 + 2 * r) * 4 + c];
                if (!CHECK(fabsf(y[r * 4 + c] - want) <= step[c] * 1.0001f))
                    fprintf(stderr, "  row %d column %d: %g for %g\n", 16 + 2 * r, c, y[r * 4 + c], want);
            }
    free(y);
    gwr_value_release(xv);
    gwr_calib_free(cal);
    gwr_network_free(net);
}

int main(void) {
    RUN(nbits_4bit_layout);
    RUN(nbits_padded_block_and_bias);
    RUN(nbits_8bit);
    RUN(nbits_gemm);
    RUN(onnx_dequantize_linear);
    RUN(exclude);
    RUN(gptq_beats_rtn);
    RUN(gptq_unseen_inputs);
    return check_report();
}
