/* test_exec_quant.c - the seven quantized ops (QuantizeLinear,
 * DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, ConvInteger,
 * QLinearMatMul, QLinearConv) against values the ONNX spec gives: each
 * expected value is worked out by hand in the comment beside it (float32
 * quotients as IEEE float32 division gives them), never from gwr's output.
 * Ties at .5 both ways, saturation at both ends, int8 and uint8, per
 * tensor, per axis and blocked, NaN / infinity / a zero scale (defined
 * results: saturation, NaN to the low end as onnxruntime), 32-bit
 * accumulators that wrap (not saturate), and the cases the spec leaves to
 * onnxruntime (docs/conformance.md, "Quantized ops"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"

/* One constant input: dtype, shape, data; dt 0 is an absent input. */
typedef struct arg {
    gwr_dtype dt;
    int rank;
    int64_t d[4];
    const void *p;
} arg;

typedef struct attr {
    const char *name;
    int64_t v;
} attr;

static char msg[512];

/* Runs op over the constants (attributes: ints, and pads when npads > 0)
 * as written; fills out[0..nout) (the caller releases) and returns 1, or 0
 * with the session's message in msg. */
static int run_pads(const char *op, int n, const arg *in, const attr *attrs, int npads, const int64_t *pads, int nout,
                    gwr_value **out) {
    gwr_network *net = gwr_network_new("m");
    gwr_tensor *t[9];
    for (int i = 0; i < n; i++) t[i] = in[i].dt ? gwr_constant(net, in[i].dt, in[i].rank, in[i].d, in[i].p) : NULL;
    gwr_layer *l = gwr_network_add_layer(net, op, "", "L", n, t, nout, NULL);
    for (const attr *a = attrs; a && a->name; a++) gwr_layer_set_int(l, a->name, a->v);
    if (npads) gwr_layer_set_ints(l, "pads", pads, npads);
    for (int i = 0; i < nout; i++) gwr_network_mark_output(net, gwr_layer_output(l, i));
    gwr_session *s = gwr_session_new_raw(net, NULL);
    int ok = 0;
    msg[0] = 0;
    if (!s) snprintf(msg, sizeof msg, "%s", gwr_last_errmsg());
    else if (gwr_session_run(s, 0, NULL, NULL, nout, NULL, out)) snprintf(msg, sizeof msg, "%s", gwr_session_errmsg(s));
    else ok = 1;
    gwr_session_free(s);
    gwr_network_free(net);
    if (!ok) fprintf(stderr, "  %s: %s\n", op, msg);
    return ok;
}

static gwr_value *run1(const char *op, int n, const arg *in, const attr *attrs) {
    gwr_value *v = NULL;
    return run_pads(op, n, in, attrs, 0, NULL, 1, &v) ? v : NULL;
}

/* v is dtype dt with n elements equal to want[] (as int64); releases v. */
static void expect_i(gwr_value *v, gwr_dtype dt, int64_t n, const int64_t *want) {
    if (!CHECK(v)) return;
    CHECK_EQ_INT(gwr_value_dtype(v), dt);
    if (CHECK_EQ_INT(gwr_value_numel(v), n))
        for (int64_t i = 0; i < n; i++)
            if (!CHECK_EQ_INT(gwr_value_get_i64(v, i), want[i])) fprintf(stderr, "  at element %lld\n", (long long)i);
    gwr_value_release(v);
}

/* float32 v equal (bit for bit, as floats) to want[]; releases v. */
static void expect_f(gwr_value *v, int64_t n, const float *want) {
    if (!CHECK(v)) return;
    CHECK_EQ_INT(gwr_value_dtype(v), GWR_FLOAT32);
    if (CHECK_EQ_INT(gwr_value_numel(v), n))
        for (int64_t i = 0; i < n; i++)
            if (!CHECK(((const float *)gwr_value_data(v))[i] == want[i]))
                fprintf(stderr, "  element %lld: %.9g, want %.9g\n", (long long)i, ((const float *)gwr_value_data(v))[i], want[i]);
    gwr_value_release(v);
}

#define F32(r, ...) GWR_FLOAT32, r, {__VA_ARGS__}
#define SCALAR(dt, p) {dt, 0, {0}, p}

/* ---- QuantizeLinear ------------------------------------------------------- */

TEST(quantize_per_tensor) {
    static const float x[11] = {1, 3, 5, -3, -5, 0, 500, -500, NAN, INFINITY, -INFINITY}, s = 2;
    static const uint8_t zu = 10;
    static const int8_t zi = -3;
    /* x / 2 = .5 1.5 2.5 -1.5 -2.5 0 250 -250 NaN inf -inf; half to even:
     * 0 2 2 -2 -2 0 250 -250; + 10, saturated, NaN to the low end */
    static const int64_t wu[11] = {10, 12, 12, 8, 8, 10, 255, 0, 0, 255, 0};
    arg in[3] = {{F32(1, 11), x}, SCALAR(GWR_FLOAT32, &s), SCALAR(GWR_UINT8, &zu)};
    expect_i(run1("QuantizeLinear", 3, in, NULL), GWR_UINT8, 11, wu);
    /* int8, zero point -3: the same roundings - 3 */
    static const int64_t wi[11] = {-3, -1, -1, -5, -5, -3, 127, -128, -128, 127, -128};
    in[2] = (arg)SCALAR(GWR_INT8, &zi);
    expect_i(run1("QuantizeLinear", 3, in, NULL), GWR_INT8, 11, wi);
    /* no zero point: uint8, zero point 0 */
    static const int64_t w0[11] = {0, 2, 2, 0, 0, 0, 250, 0, 0, 255, 0};
    expect_i(run1("QuantizeLinear", 2, in, NULL), GWR_UINT8, 11, w0);
    /* opset 21's output_dtype (3: int8) without a zero point */
    static const int64_t wo[11] = {0, 2, 2, -2, -2, 0, 127, -128, -128, 127, -128};
    static const attr od[] = {{"output_dtype", GWR_INT8}, {NULL, 0}};
    expect_i(run1("QuantizeLinear", 2, in, od), GWR_INT8, 11, wo);
}

TEST(quantize_16bit_and_float32_division) {
    static const float x[4] = {40000, -40000, 1.5f, -2.5f}, s = 1;
    static const int16_t z16 = 0;
    static const uint16_t zu16 = 0;
    arg in[3] = {{F32(1, 4), x}, SCALAR(GWR_FLOAT32, &s), SCALAR(GWR_INT16, &z16)};
    static const int64_t w16[4] = {32767, -32768, 2, -2};
    expect_i(run1("QuantizeLinear", 3, in, NULL), GWR_INT16, 4, w16);
    in[2] = (arg)SCALAR(GWR_UINT16, &zu16);
    static const int64_t wu16[4] = {40000, 0, 2, 0};
    expect_i(run1("QuantizeLinear", 3, in, NULL), GWR_UINT16, 4, wu16);
    /* int32 x (opset 21): 7 / 2 = 3.5 -> 4, -7 / 2 -> -4 + 0 -> 0 (uint8),
     * 100000 / 2 -> 255 */
    static const int32_t xi[3] = {7, -7, 100000};
    static const float two = 2;
    static const int64_t wi[3] = {4, 0, 255};
    arg ini[2] = {{GWR_INT32, 1, {3}, xi}, SCALAR(GWR_FLOAT32, &two)};
    expect_i(run1("QuantizeLinear", 2, ini, NULL), GWR_UINT8, 3, wi);
    /* the division is float32's: 1.05f / 0.7f is exactly 1.5 in float32
     * (1.49999996 in float64), a tie, to even 2; 3.85f / 0.7f is 5.5 in
     * float32 (5.49999996 in float64), to 6 */
    static const float x2[2] = {1.05f, 3.85f}, s2 = 0.7f;
    static const int64_t w2[2] = {2, 6};
    arg in2[2] = {{F32(1, 2), x2}, SCALAR(GWR_FLOAT32, &s2)};
    expect_i(run1("QuantizeLinear", 2, in2, NULL), GWR_UINT8, 2, w2);
}

TEST(quantize_zero_scale) {
    /* x / 0: inf, -inf, NaN (0 / 0), NaN: saturated, NaN to the low end */
    static const float x[4] = {1, -1, 0, NAN}, s = 0;
    static const uint8_t zu = 7;
    static const int8_t zi = 7;
    arg in[3] = {{F32(1, 4), x}, SCALAR(GWR_FLOAT32, &s), SCALAR(GWR_UINT8, &zu)};
    static const int64_t wu[4] = {255, 0, 0, 0}, wi[4] = {127, -128, -128, -128};
    expect_i(run1("QuantizeLinear", 3, in, NULL), GWR_UINT8, 4, wu);
    in[2] = (arg)SCALAR(GWR_INT8, &zi);
    expect_i(run1("QuantizeLinear", 3, in, NULL), GWR_INT8, 4, wi);
}

TEST(quantize_per_axis) {
    /* [2, 3], axis 1: scales 1 2 4, int8 zero points 0 1 -1
     * col 0: 1.5 -> 2, -2.5 -> -2; col 1: 1.5 -> 2 + 1, -1.5 -> -2 + 1;
     * col 2: 2.5 -> 2 - 1, 1.5 -> 2 - 1 */
    static const float x[6] = {1.5f, 3, 10, -2.5f, -3, 6}, s[3] = {1, 2, 4};
    static const int8_t z[3] = {0, 1, -1};
    static const int64_t want[6] = {2, 3, 1, -2, -1, 1};
    arg in[3] = {{F32(2, 2, 3), x}, {F32(1, 3), s}, {GWR_INT8, 1, {3}, z}};
    expect_i(run1("QuantizeLinear", 3, in, NULL), GWR_INT8, 6, want);
    /* axis 0, scales 1 10: .5 1.5 2.5 and 5 15 25 / 10 -> 0 2 2 both rows */
    static const float x0[6] = {0.5f, 1.5f, 2.5f, 5, 15, 25}, s0[2] = {1, 10};
    static const int64_t w0[6] = {0, 2, 2, 0, 2, 2};
    static const attr ax0[] = {{"axis", 0}, {NULL, 0}};
    arg in0[2] = {{F32(2, 2, 3), x0}, {F32(1, 2), s0}};
    expect_i(run1("QuantizeLinear", 2, in0, ax0), GWR_UINT8, 6, w0);
}

TEST(quantize_blocked) {
    /* x [2, 4], axis 1, block 2: scale and zero point [2, 2]
     * row 0: .5/1 -> 0, 1.5/1 -> 2 | 3/2 = 1.5 -> 2 + 10, 5/2 = 2.5 -> 2 + 10
     * row 1: 2/4 = .5 -> 0 + 20, 6/4 = 1.5 -> 2 + 20 | 4/8 -> 0 + 30, 20/8 = 2.5 -> 2 + 30 */
    static const float x[8] = {0.5f, 1.5f, 3, 5, 2, 6, 4, 20}, s[4] = {1, 2, 4, 8};
    static const uint8_t z[4] = {0, 10, 20, 30};
    static const int64_t want[8] = {0, 2, 12, 12, 20, 22, 30, 32};
    static const attr blk[] = {{"axis", 1}, {"block_size", 2}, {NULL, 0}};
    arg in[3] = {{F32(2, 2, 4), x}, {F32(2, 2, 2), s}, {GWR_UINT8, 2, {2, 2}, z}};
    expect_i(run1("QuantizeLinear", 3, in, blk), GWR_UINT8, 8, want);
    /* axis 0, block 2 over 3 rows (the last block short): scale [2, 1]
     * rows 0-1 / 1: 2.5 -> 2, 3.5 -> 4; row 2 / 3: 4.5 / 3 = 1.5 -> 2 */
    static const float x0[3] = {2.5f, 3.5f, 4.5f}, s0[2] = {1, 3};
    static const int64_t w0[3] = {2, 4, 2};
    static const attr blk0[] = {{"axis", 0}, {"block_size", 2}, {NULL, 0}};
    arg in0[2] = {{F32(2, 3, 1), x0}, {F32(2, 2, 1), s0}};
    expect_i(run1("QuantizeLinear", 2, in0, blk0), GWR_UINT8, 3, w0);
    /* a scale whose blocked dim is not ceil(3 / 2) is refused */
    static const float s1[3] = {1, 1, 1};
    arg bad[2] = {{F32(2, 3, 1), x0}, {F32(2, 3, 1), s1}};
    CHECK(!run1("QuantizeLinear", 2, bad, blk0));
    CHECK_CONTAINS(msg, "blocked scale must have x's shape");
}

/* ---- DequantizeLinear ----------------------------------------------------- */

TEST(dequantize) {
    /* (x - 128) * 0.5 */
    static const uint8_t x[3] = {0, 128, 255}, z = 128;
    static const float s = 0.5f, want[3] = {-64, 0, 63.5f};
    arg in[3] = {{GWR_UINT8, 1, {3}, x}, SCALAR(GWR_FLOAT32, &s), SCALAR(GWR_UINT8, &z)};
    expect_f(run1("DequantizeLinear", 3, in, NULL), 3, want);
    /* per axis 0: row 0 (x - 1) * 2, row 1 (x + 1) * 0.25 */
    static const int8_t xi[4] = {-128, 127, 0, 1}, zi[2] = {1, -1};
    static const float si[2] = {2, 0.25f}, wi[4] = {-258, 252, 0.25f, 0.5f};
    static const attr ax0[] = {{"axis", 0}, {NULL, 0}};
    arg ini[3] = {{GWR_INT8, 2, {2, 2}, xi}, {F32(1, 2), si}, {GWR_INT8, 1, {2}, zi}};
    expect_f(run1("DequantizeLinear", 3, ini, ax0), 4, wi);
    /* blocked, axis 1, block 2: (3 - 1) * .5, (5 - 1) * .5 | (-2 + 2) * 3, (0 + 2) * 3 */
    static const int8_t xb[4] = {3, 5, -2, 0}, zb[2] = {1, -2};
    static const float sb[2] = {0.5f, 3}, wb[4] = {1, 2, 0, 6};
    static const attr blk[] = {{"axis", 1}, {"block_size", 2}, {NULL, 0}};
    arg inb[3] = {{GWR_INT8, 2, {1, 4}, xb}, {F32(2, 1, 2), sb}, {GWR_INT8, 2, {1, 2}, zb}};
    expect_f(run1("DequantizeLinear", 3, inb, blk), 4, wb);
}

TEST(dequantize_int32_exact) {
    /* x - zp exactly, not wrapped in 32 bits: (2147483647 + 1) * 0.5 = 2^30
     * (onnxruntime wraps to -2^31 * 0.5); (-2147483648 - 1) is -2^31 - 1,
     * float32 -2^31, * 0.5 = -2^30; (5 + 1) * 0.5 = 3 */
    static const int32_t x[3] = {INT32_MAX, INT32_MIN, 5}, zp = -1, zp1 = 1;
    static const float s = 0.5f, want[3] = {1073741824.0f, -1073741824.0f, 3};
    arg in[3] = {{GWR_INT32, 1, {3}, x}, SCALAR(GWR_FLOAT32, &s), SCALAR(GWR_INT32, &zp)};
    gwr_value *v = run1("DequantizeLinear", 3, in, NULL);
    if (CHECK(v)) {
        const float *y = gwr_value_data(v);
        CHECK(y[0] == want[0]);
        CHECK(y[2] == want[2]);
        gwr_value_release(v);
    }
    in[2] = (arg)SCALAR(GWR_INT32, &zp1);
    v = run1("DequantizeLinear", 3, in, NULL);
    if (CHECK(v)) {
        CHECK(((const float *)gwr_value_data(v))[1] == want[1]);
        gwr_value_release(v);
    }
    /* the product is float32's: 16777217 is 2^24 in float32, * 3 = 50331648
     * (the exact 50331651 would round to 50331652) */
    static const int32_t x2 = 16777217;
    static const float s2 = 3, w2 = 50331648.0f;
    arg in2[2] = {SCALAR(GWR_INT32, &x2), SCALAR(GWR_FLOAT32, &s2)};
    expect_f(run1("DequantizeLinear", 2, in2, NULL), 1, &w2);
}

/* ---- DynamicQuantizeLinear ------------------------------------------------ */

/* Runs DynamicQuantizeLinear on x[n] and checks y, the scale (as float32
 * bits) and the zero point. */
static void dql(const float *x, int64_t n, const int64_t *wy, uint32_t wscale_bits, int64_t wzp) {
    arg in[1] = {{GWR_FLOAT32, 1, {n}, x}};
    gwr_value *out[3] = {NULL, NULL, NULL};
    if (!CHECK(run_pads("DynamicQuantizeLinear", 1, in, NULL, 0, NULL, 3, out))) return;
    uint32_t bits;
    memcpy(&bits, gwr_value_data(out[1]), 4);
    if (!CHECK_EQ_INT(bits, wscale_bits)) fprintf(stderr, "  scale %.9g\n", ((const float *)gwr_value_data(out[1]))[0]);
    CHECK_EQ_INT(gwr_value_get_i64(out[2], 0), wzp);
    expect_i(out[0], GWR_UINT8, n, wy);
    gwr_value_release(out[1]);
    gwr_value_release(out[2]);
}

static uint32_t fbits(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

TEST(dynamic_quantize_spec_example) {
    /* the spec's example (onnx's test data): range [-3, 2], scale 5 / 255 =
     * 0.019607844, zero point 153; -2.5 / scale = -127.49999 -> -127 + 153,
     * 0.5 / scale = 25.5 exactly, to even 26, + 153 */
    static const float x[6] = {0, 2, -3, -2.5f, 1.34f, 0.5f};
    static const int64_t y[6] = {153, 255, 0, 26, 221, 179};
    dql(x, 6, y, fbits(5.0f / 255.0f), 153);
}

TEST(dynamic_quantize_float32_scale) {
    /* range [-2.44f, 2.43f]: float32 (2.43f + 2.44f) = 4.87f, / 255 in
     * float32 has bits 0x3c9c737d (0.019098038); the float64 quotient of the
     * exact difference rounds to the next float up (0x3c9c737e), which
     * flips the last two: zero point 0 - (-2.44f / scale) = 127.76 -> 128;
     * -2.435f / scale = -127.50001 in float32 -> -128 + 128 = 0 (1 with the
     * other scale); -2.2822156f / scale = -119.5 exactly, to even -120, + 128
     * = 8 (9 with the other scale) */
    static const float x[5] = {2.43f, -2.44f, 0, -2.435f, -2.2822156f};
    static const int64_t y[5] = {255, 0, 128, 0, 8};
    dql(x, 5, y, 0x3c9c737du, 128);
}

TEST(dynamic_quantize_open_cases) {
    /* NaN does not count in the range [-1, 2] and quantizes to 0: scale
     * 3 / 255, zero point 1 / (3 / 255) = 85, 1 -> 85 + 85, 2 -> 170 + 85 */
    static const float xn[4] = {1, NAN, -1, 2};
    static const int64_t yn[4] = {170, 0, 0, 255};
    dql(xn, 4, yn, fbits(3.0f / 255.0f), 85);
    /* +inf: scale inf, zero point 0 - (-1 / inf) = 0; finite / inf = 0,
     * inf / inf = NaN -> 0 */
    static const float xi[3] = {1, INFINITY, -1};
    static const int64_t yi[3] = {0, 0, 0};
    dql(xi, 3, yi, fbits(INFINITY), 0);
    /* -inf: scale inf, zero point 0 - (-inf / inf) = NaN -> 255 (as
     * onnxruntime); 1 / inf = 0 -> 255, NaN -> 0 */
    static const float xm[3] = {1, -INFINITY, 2};
    static const int64_t ym[3] = {255, 0, 255};
    dql(xm, 3, ym, fbits(INFINITY), 255);
    /* all zeros and empty: the spec's 0 / 255 scale would divide by zero;
     * onnxruntime's scale 1, zero point 0 */
    static const float xz[3] = {0, 0, 0};
    static const int64_t yz[3] = {0, 0, 0};
    dql(xz, 3, yz, fbits(1.0f), 0);
    dql(xz, 0, yz, fbits(1.0f), 0);
    /* a constant: the range still includes 0: [0, 5] -> scale 5 / 255, 5 ->
     * 255; [-5, 0] -> zero point 255, -5 -> -255 + 255 = 0 */
    static const float x5[2] = {5, 5}, xm5[2] = {-5, -5};
    static const int64_t y5[2] = {255, 255}, ym5[2] = {0, 0};
    dql(x5, 2, y5, fbits(5.0f / 255.0f), 0);
    dql(xm5, 2, ym5, fbits(5.0f / 255.0f), 255);
}

TEST(dynamic_quantize_huge_range) {
    /* [-3e38, 3e38]: max - min overflows float32 (onnxruntime: scale inf,
     * every y 0); the spec's value is 6e38 / 255 = 2.3529411e36 (bits
     * 0x7be2947a, the float64 quotient rounded), zero point 3e38 / scale =
     * 127.50001 -> 128, y: 127.50001 -> 128 + 128 saturated to 255, -128 +
     * 128 = 0, 1 / scale -> 0 + 128 */
    static const float x[3] = {3e38f, -3e38f, 1};
    static const int64_t y[3] = {255, 0, 128};
    dql(x, 3, y, 0x7be2947au, 128);
}

/* ---- MatMulInteger -------------------------------------------------------- */

TEST(matmul_integer) {
    /* A [2, 3] uint8, a_zero_point 1; B [3, 2] int8, b_zero_point per
     * column 0, -1:
     * A - 1 = [[0 1 2] [254 -1 9]]; B - zp = [[1 3] [-2 1] [5 -127]]
     * row 0: 0 - 2 + 10 = 8, 0 + 1 - 254 = -253
     * row 1: 254 + 2 + 45 = 301, 762 - 1 - 1143 = -382 */
    static const uint8_t a[6] = {1, 2, 3, 255, 0, 10}, az = 1;
    static const int8_t b[6] = {1, 2, -2, 0, 5, -128}, bz[2] = {0, -1};
    static const int64_t want[4] = {8, -253, 301, -382};
    arg in[4] = {{GWR_UINT8, 2, {2, 3}, a}, {GWR_INT8, 2, {3, 2}, b}, SCALAR(GWR_UINT8, &az), {GWR_INT8, 1, {2}, bz}};
    expect_i(run1("MatMulInteger", 4, in, NULL), GWR_INT32, 4, want);
    /* products never saturate: 255 * 127 + 255 * 127 = 64770 (onnxruntime's
     * u8s8 path gives 65534, two int16-saturated pairs); -128 * -128 = 16384 */
    static const uint8_t a2[2] = {255, 255};
    static const int8_t b2[2] = {127, 127}, a3 = -128, b3 = -128;
    static const int64_t w2 = 64770, w3 = 16384;
    arg in2[2] = {{GWR_UINT8, 2, {1, 2}, a2}, {GWR_INT8, 2, {2, 1}, b2}};
    expect_i(run1("MatMulInteger", 2, in2, NULL), GWR_INT32, 1, &w2);
    arg in3[2] = {{GWR_INT8, 2, {1, 1}, &a3}, {GWR_INT8, 2, {1, 1}, &b3}};
    expect_i(run1("MatMulInteger", 2, in3, NULL), GWR_INT32, 1, &w3);
}

TEST(matmul_integer_past_float32) {
    /* sums exact past float32's integers: 255 * 255 * 258 = 16776450 < 2^24,
     * 255 * 255 * 259 = 16841475 > 2^24 and odd, not a float32 */
    static uint8_t a[259];
    memset(a, 255, sizeof a);
    static const int64_t w258 = 16776450, w259 = 16841475;
    arg in[2] = {{GWR_UINT8, 2, {1, 258}, a}, {GWR_UINT8, 2, {258, 1}, a}};
    expect_i(run1("MatMulInteger", 2, in, NULL), GWR_INT32, 1, &w258);
    in[0].d[1] = in[1].d[0] = 259;
    expect_i(run1("MatMulInteger", 2, in, NULL), GWR_INT32, 1, &w259);
}

enum { BIG_K = 40000 };

TEST(integer_sums_wrap_in_32_bits) {
    /* 40000 * 255 * 255 = 2601000000 > INT32_MAX: the accumulation wraps,
     * 2601000000 - 2^32 = -1693967296 */
    uint8_t *ones = malloc(BIG_K);
    if (!CHECK(ones)) return;
    memset(ones, 255, BIG_K);
    static const int64_t want = 2601000000LL - 4294967296LL;
    arg in[2] = {{GWR_UINT8, 2, {1, BIG_K}, ones}, {GWR_UINT8, 2, {BIG_K, 1}, ones}};
    expect_i(run1("MatMulInteger", 2, in, NULL), GWR_INT32, 1, &want);
    /* ConvInteger: a 1x1 conv over 40000 channels, the same sum */
    arg cin[2] = {{GWR_UINT8, 4, {1, BIG_K, 1, 1}, ones}, {GWR_UINT8, 4, {1, BIG_K, 1, 1}, ones}};
    expect_i(run1("ConvInteger", 2, cin, NULL), GWR_INT32, 1, &want);
    /* QLinearMatMul requantizes the wrapped accumulator: -1693967296 in
     * float32 (-1693967360) * (1 * 1 / 1e8f) = -16.94 -> -17 + 100 = 83 (the
     * unwrapped sum would give 26 + 100) */
    static const float one = 1, ys = 1e8f;
    static const uint8_t zero = 0, yz = 100;
    static const int64_t wq = 83;
    arg qin[8] = {{GWR_UINT8, 2, {1, BIG_K}, ones}, SCALAR(GWR_FLOAT32, &one), SCALAR(GWR_UINT8, &zero),
                  {GWR_UINT8, 2, {BIG_K, 1}, ones}, SCALAR(GWR_FLOAT32, &one), SCALAR(GWR_UINT8, &zero),
                  SCALAR(GWR_FLOAT32, &ys),         SCALAR(GWR_UINT8, &yz)};
    expect_i(run1("QLinearMatMul", 8, qin, NULL), GWR_UINT8, 1, &wq);
    free(ones);
}

/* ---- ConvInteger ------------------------------------------------------------ */

TEST(conv_integer) {
    /* x [1,1,3,3] uint8 - 1, w [1,1,2,2] uint8 (no zero point):
     * x - 1 = [[0 1 2] [3 4 5] [6 7 8]], w = [[1 2] [3 4]]
     * out[0][0] = 0 + 2 + 9 + 16 = 27, [0][1] = 1 + 4 + 12 + 20 = 37,
     * [1][0] = 3 + 8 + 18 + 28 = 57, [1][1] = 4 + 10 + 21 + 32 = 67 */
    static const uint8_t x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 2, 3, 4}, xz = 1;
    static const int64_t want[4] = {27, 37, 57, 67};
    arg in[3] = {{GWR_UINT8, 4, {1, 1, 3, 3}, x}, {GWR_UINT8, 4, {1, 1, 2, 2}, w}, SCALAR(GWR_UINT8, &xz)};
    expect_i(run1("ConvInteger", 3, in, NULL), GWR_INT32, 4, want);
    /* the padding is the zero point (0 after the subtraction): x = 5, zero
     * point 3, a 3x3 kernel of ones, pads 1: (5 - 3) * 1 = 2 */
    static const uint8_t x1 = 5, z1 = 3, w9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    static const int64_t pads[4] = {1, 1, 1, 1}, w1 = 2;
    arg in1[3] = {{GWR_UINT8, 4, {1, 1, 1, 1}, &x1}, {GWR_UINT8, 4, {1, 1, 3, 3}, w9}, SCALAR(GWR_UINT8, &z1)};
    gwr_value *v = NULL;
    if (CHECK(run_pads("ConvInteger", 3, in1, NULL, 4, pads, 1, &v))) expect_i(v, GWR_INT32, 1, &w1);
    /* int8 x int8, w_zero_point per output channel 1, -1: x = -128 (zero
     * point 0), w = [-128, 127]: -128 * (-128 - 1) = 16512,
     * -128 * (127 + 1) = -16384 */
    static const int8_t xi = -128, wi[2] = {-128, 127}, wz[2] = {1, -1};
    static const int64_t wi_want[2] = {16512, -16384};
    arg ini[4] = {{GWR_INT8, 4, {1, 1, 1, 1}, &xi}, {GWR_INT8, 4, {2, 1, 1, 1}, wi}, {0, 0, {0}, NULL}, {GWR_INT8, 1, {2}, wz}};
    expect_i(run1("ConvInteger", 4, ini, NULL), GWR_INT32, 2, wi_want);
}

/* ---- QLinearMatMul ---------------------------------------------------------- */

/* QLinearMatMul of a [m, k] and b [k, n] with per-tensor scalars */
static gwr_value *qlmm(gwr_dtype at, const void *a, int64_t m, int64_t k, float as, const void *az, gwr_dtype bt, const void *b,
                       int64_t n, float bs, const void *bz, float ys, gwr_dtype yt, const void *yz) {
    arg in[8] = {{at, 2, {m, k}, a},  SCALAR(GWR_FLOAT32, &as), SCALAR(at, az), {bt, 2, {k, n}, b}, SCALAR(GWR_FLOAT32, &bs),
                 SCALAR(bt, bz), SCALAR(GWR_FLOAT32, &ys), SCALAR(yt, yz)};
    return run1("QLinearMatMul", 8, in, NULL);
}

TEST(qlinear_matmul) {
    static const uint8_t zu = 0, zu7 = 7, one_u = 1;
    static const int8_t zi = 0, zi7 = 7;
    /* ties: [1 3 5 7 9] * 1 / 2 = .5 1.5 2.5 3.5 4.5 -> 0 2 2 4 4 */
    static const uint8_t a[5] = {1, 3, 5, 7, 9};
    static const int64_t wt[5] = {0, 2, 2, 4, 4};
    expect_i(qlmm(GWR_UINT8, a, 5, 1, 1, &zu, GWR_UINT8, &one_u, 1, 1, &zu, 2, GWR_UINT8, &zu), GWR_UINT8, 5, wt);
    /* negative ties, int8: -.5 -1.5 -2.5 -3.5 -4.5 -> 0 -2 -2 -4 -4 */
    static const int8_t an[5] = {-1, -3, -5, -7, -9}, one_i = 1;
    static const int64_t wn[5] = {0, -2, -2, -4, -4};
    expect_i(qlmm(GWR_INT8, an, 5, 1, 1, &zi, GWR_INT8, &one_i, 1, 1, &zi, 2, GWR_INT8, &zi), GWR_INT8, 5, wn);
    /* saturation: 200 * 1 / 0.5 = 400 -> 255; int8 out, zero point 7:
     * -100 / 0.5 = -200 + 7 -> -128, 100 / 0.5 -> 127 */
    static const uint8_t a200 = 200;
    static const int64_t w255 = 255;
    expect_i(qlmm(GWR_UINT8, &a200, 1, 1, 1, &zu, GWR_UINT8, &one_u, 1, 1, &zu, 0.5f, GWR_UINT8, &zu), GWR_UINT8, 1, &w255);
    static const int8_t a100[2] = {-100, 100};
    static const int64_t w100[2] = {-128, 127};
    expect_i(qlmm(GWR_INT8, a100, 2, 1, 1, &zi, GWR_INT8, &one_i, 1, 1, &zi, 0.5f, GWR_INT8, &zi7), GWR_INT8, 2, w100);
    /* zero y_scale: a - 1 = [1 -1 -1] times b = [[1 0 0] [0 1 0] [0 0 0]]
     * gives accumulators 1 -1 0: acc * inf = inf -> the high end, -inf ->
     * the low end, 0 * inf = NaN -> the low end (not the zero point) */
    static const uint8_t az1 = 1, a3[3] = {2, 0, 0}, b33[9] = {1, 0, 0, 0, 1, 0, 0, 0, 0};
    static const int64_t wzu[3] = {255, 0, 0}, wzi[3] = {127, -128, -128};
    expect_i(qlmm(GWR_UINT8, a3, 1, 3, 1, &az1, GWR_UINT8, b33, 3, 1, &zu, 0, GWR_UINT8, &zu7), GWR_UINT8, 3, wzu);
    expect_i(qlmm(GWR_UINT8, a3, 1, 3, 1, &az1, GWR_UINT8, b33, 3, 1, &zu, 0, GWR_INT8, &zi7), GWR_INT8, 3, wzi);
}

TEST(qlinear_matmul_per_row_and_column) {
    /* a [2, 1] = [3 5], a_scale per row [1 2]; b [1, 2] = [1 3], b_scale
     * per column [1 0.5]; y_scale 1, zero point 10:
     * [3*1*1, 3*3*1*.5] = [3, 4.5 -> 4]; [5*2*1, 15*2*.5] = [10, 15] */
    static const uint8_t a[2] = {3, 5}, b[2] = {1, 3}, az[2] = {0, 0}, bz[2] = {0, 0}, yz = 10;
    static const float as[2] = {1, 2}, bs[2] = {1, 0.5f}, ys = 1;
    static const int64_t want[4] = {13, 14, 20, 25};
    arg in[8] = {{GWR_UINT8, 2, {2, 1}, a}, {F32(1, 2), as}, {GWR_UINT8, 1, {2}, az}, {GWR_UINT8, 2, {1, 2}, b},
                 {F32(1, 2), bs},          {GWR_UINT8, 1, {2}, bz}, SCALAR(GWR_FLOAT32, &ys), SCALAR(GWR_UINT8, &yz)};
    expect_i(run1("QLinearMatMul", 8, in, NULL), GWR_UINT8, 4, want);
}

TEST(qlinear_matmul_float16_scales) {
    /* opset 21: float16 scales (bits 0x3c00 = 1, 0x4000 = 2, 0x3800 = 0.5):
     * [3 5] * 1 * 0.5 / 2 = .75 1.25 -> 1 1, + 10 */
    static const uint8_t a[2] = {3, 5}, b = 1, z = 0, yz = 10;
    static const uint16_t one = 0x3c00, two = 0x4000, half = 0x3800;
    static const int64_t want[2] = {11, 11};
    arg in[8] = {{GWR_UINT8, 2, {2, 1}, a}, SCALAR(GWR_FLOAT16, &one), SCALAR(GWR_UINT8, &z), {GWR_UINT8, 2, {1, 1}, &b},
                 SCALAR(GWR_FLOAT16, &half), SCALAR(GWR_UINT8, &z), SCALAR(GWR_FLOAT16, &two), SCALAR(GWR_UINT8, &yz)};
    expect_i(run1("QLinearMatMul", 8, in, NULL), GWR_UINT8, 2, want);
}

/* ---- QLinearConv ------------------------------------------------------------ */

TEST(qlinear_conv) {
    /* x = 1 (a 1x1 image, zero point 0, scale 1); w int8 [6,1,1,1] = 1 3 5
     * -1 -3 -5, w_scale 1; y_scale 2: .5 1.5 2.5 -.5 -1.5 -2.5 -> 0 2 2 0 -2 -2
     * (ties to even both ways), + y zero point -1 */
    static const uint8_t x = 1, xz = 0;
    static const int8_t w[6] = {1, 3, 5, -1, -3, -5}, wz = 0, yz = -1;
    static const float one = 1, two = 2;
    static const int64_t want[6] = {-1, 1, 1, -1, -3, -3};
    arg in[9] = {{GWR_UINT8, 4, {1, 1, 1, 1}, &x}, SCALAR(GWR_FLOAT32, &one), SCALAR(GWR_UINT8, &xz),
                 {GWR_INT8, 4, {6, 1, 1, 1}, w},    SCALAR(GWR_FLOAT32, &one), SCALAR(GWR_INT8, &wz),
                 SCALAR(GWR_FLOAT32, &two),         SCALAR(GWR_INT8, &yz),     {0, 0, {0}, NULL}};
    expect_i(run1("QLinearConv", 8, in, NULL), GWR_INT8, 6, want);
    /* bias and per-channel w_scale: x = 10, w = [1 3 5 -5], w_scale [.5 .5 .5 1],
     * B = [0 0 0 1] (int32, scale x_scale * w_scale):
     * acc 10 30 50 -49; * 1 * w_scale / 4: 1.25 3.75 6.25 -12.25 -> 1 4 6 -12, + 2 */
    static const uint8_t x10 = 10;
    static const int8_t w4[4] = {1, 3, 5, -5}, wz4[4] = {0, 0, 0, 0}, yz2 = 2;
    static const float ws4[4] = {0.5f, 0.5f, 0.5f, 1}, four = 4;
    static const int32_t bias[4] = {0, 0, 0, 1};
    static const int64_t wb[4] = {3, 6, 8, -10};
    arg inb[9] = {{GWR_UINT8, 4, {1, 1, 1, 1}, &x10}, SCALAR(GWR_FLOAT32, &one), SCALAR(GWR_UINT8, &xz),
                  {GWR_INT8, 4, {4, 1, 1, 1}, w4},     {F32(1, 4), ws4},          {GWR_INT8, 1, {4}, wz4},
                  SCALAR(GWR_FLOAT32, &four),          SCALAR(GWR_INT8, &yz2),    {GWR_INT32, 1, {4}, bias}};
    expect_i(run1("QLinearConv", 9, inb, NULL), GWR_INT8, 4, wb);
}

TEST(qlinear_conv_saturation_and_zero_scale) {
    /* x - 3 with x zero point 3 over a padded 3x3 kernel of ones: x = 203 ->
     * acc 200; y_scale 0.5 -> 400 -> 255; w = -1 -> -400 -> 0 (uint8 y) */
    static const uint8_t x = 203, xz = 3, w9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, wz = 0, yz = 0;
    static const float one = 1, half = 0.5f, zero = 0;
    static const int64_t pads[4] = {1, 1, 1, 1}, w255 = 255, w0 = 0;
    arg in[8] = {{GWR_UINT8, 4, {1, 1, 1, 1}, &x}, SCALAR(GWR_FLOAT32, &one), SCALAR(GWR_UINT8, &xz),
                 {GWR_UINT8, 4, {1, 1, 3, 3}, w9},  SCALAR(GWR_FLOAT32, &one), SCALAR(GWR_UINT8, &wz),
                 SCALAR(GWR_FLOAT32, &half),        SCALAR(GWR_UINT8, &yz)};
    gwr_value *v = NULL;
    if (CHECK(run_pads("QLinearConv", 8, in, NULL, 4, pads, 1, &v))) expect_i(v, GWR_UINT8, 1, &w255);
    static const uint8_t wz2 = 2, w1 = 1;
    arg in2[8] = {{GWR_UINT8, 4, {1, 1, 1, 1}, &x}, SCALAR(GWR_FLOAT32, &one), SCALAR(GWR_UINT8, &xz),
                  {GWR_UINT8, 4, {1, 1, 1, 1}, &w1}, SCALAR(GWR_FLOAT32, &one), SCALAR(GWR_UINT8, &wz2),
                  SCALAR(GWR_FLOAT32, &half),        SCALAR(GWR_UINT8, &yz)};
    expect_i(run1("QLinearConv", 8, in2, NULL), GWR_UINT8, 1, &w0);
    /* zero y_scale, int8 y, zero point 5: acc 200 * inf -> 127, -200 -> -128,
     * acc 0 (x = x zero point): NaN -> -128 */
    static const uint8_t xa = 203, xb = 3;
    static const int8_t wpos = 1, wneg = -1, wz3 = 0, yz3 = 5;
    static const int64_t wp = 127, wn = -128;
    const void *xs[3] = {&xa, &xa, &xb}, *ws[3] = {&wpos, &wneg, &wpos};
    const int64_t *wants[3] = {&wp, &wn, &wn};
    for (int i = 0; i < 3; i++) {
        arg inz[8] = {{GWR_UINT8, 4, {1, 1, 1, 1}, xs[i]}, SCALAR(GWR_FLOAT32, &one),  SCALAR(GWR_UINT8, &xz),
                      {GWR_INT8, 4, {1, 1, 1, 1}, ws[i]},  SCALAR(GWR_FLOAT32, &one),  SCALAR(GWR_INT8, &wz3),
                      SCALAR(GWR_FLOAT32, &zero),          SCALAR(GWR_INT8, &yz3)};
        expect_i(run1("QLinearConv", 8, inz, NULL), GWR_INT8, 1, wants[i]);
    }
}

int main(void) {
    RUN(quantize_per_tensor);
    RUN(quantize_16bit_and_float32_division);
    RUN(quantize_zero_scale);
    RUN(quantize_per_axis);
    RUN(quantize_blocked);
    RUN(dequantize);
    RUN(dequantize_int32_exact);
    RUN(dynamic_quantize_spec_example);
    RUN(dynamic_quantize_float32_scale);
    RUN(dynamic_quantize_open_cases);
    RUN(dynamic_quantize_huge_range);
    RUN(matmul_integer);
    RUN(matmul_integer_past_float32);
    RUN(integer_sums_wrap_in_32_bits);
    RUN(conv_integer);
    RUN(qlinear_matmul);
    RUN(qlinear_matmul_per_row_and_column);
    RUN(qlinear_matmul_float16_scales);
    RUN(qlinear_conv);
    RUN(qlinear_conv_saturation_and_zero_scale);
    return check_report();
}
