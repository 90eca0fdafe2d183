/* test_smalltype.c - the element types narrower than float16 (float8
 * e4m3fn / e4m3fnuz / e5m2 / e5m2fnuz / e8m0, float4e2m1, int4, uint4,
 * int2, uint2): the converter (src/util/smalltype.h) against bit patterns
 * worked out by hand from the formats' definitions (ONNX's Cast spec and
 * IR.md; the value of each code is in the comment beside it), Cast /
 * QuantizeLinear / DequantizeLinear / BitCast / ReduceMax on bool in the
 * executor, and the ONNX tensor reader on packed and bad data. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "exec_run.h"
#include "gwr/gwr.h"
#include "util/smalltype.h"

static char msg[512];

/* ---- the dtype table ------------------------------------------------------ */

TEST(dtype_table) {
    CHECK_STR(gwr_dtype_name(GWR_FLOAT4E2M1), "float4e2m1");
    CHECK_STR(gwr_dtype_name(GWR_FLOAT8E8M0), "float8e8m0");
    CHECK_STR(gwr_dtype_name(GWR_UINT2), "uint2");
    CHECK_STR(gwr_dtype_name(GWR_INT2), "int2");
    CHECK_EQ_INT(GWR_FLOAT4E2M1, 23); /* TensorProto.DataType */
    CHECK_EQ_INT(GWR_INT2, 26);
    CHECK_EQ_INT(gwr_dtype_bits(GWR_FLOAT4E2M1), 4);
    CHECK_EQ_INT(gwr_dtype_bits(GWR_FLOAT8E8M0), 8);
    CHECK_EQ_INT(gwr_dtype_bits(GWR_UINT2), 2);
    CHECK_EQ_INT(gwr_dtype_size(GWR_INT2), 1);
    CHECK(gwr_dtype_is_float(GWR_FLOAT4E2M1) && gwr_dtype_is_float(GWR_FLOAT8E8M0));
    CHECK(gwr_dtype_is_int(GWR_UINT2) && gwr_dtype_is_int(GWR_INT2) && !gwr_dtype_is_float(GWR_INT2));
    CHECK_EQ_INT(gwr_dtype_from_name("float8e8m0"), GWR_FLOAT8E8M0);
    CHECK(!gwr_dtype_is_valid((gwr_dtype)27)); /* float6e2m3: not known */
}

/* ---- float8 ---------------------------------------------------------------- */

#define ENC(t, x, sat) gwr_small_encode(t, x, sat, GWR_E8M0_UP)

TEST(e4m3fn) {
    gwr_dtype t = GWR_FLOAT8E4M3FN; /* S EEEE MMM, bias 7, S.1111.111 NaN, no inf */
    CHECK(gwr_small_decode(t, 0x7E) == 448);      /* 1.75 * 2^8: the max */
    CHECK(gwr_small_decode(t, 0x38) == 1);        /* E 7 */
    CHECK(gwr_small_decode(t, 0x08) == 0x1p-6);   /* the smallest normal */
    CHECK(gwr_small_decode(t, 0x01) == 0x1p-9);   /* the smallest subnormal */
    CHECK(gwr_small_decode(t, 0xFE) == -448);
    CHECK(isnan(gwr_small_decode(t, 0x7F)) && isnan(gwr_small_decode(t, 0xFF)));
    CHECK(gwr_small_decode(t, 0x78) == 256); /* E 15 M 0: a number, not inf */
    CHECK_EQ_INT(ENC(t, 448, 1), 0x7E);
    CHECK_EQ_INT(ENC(t, 1, 0), 0x38);
    CHECK_EQ_INT(ENC(t, 464, 0), 0x7E);   /* halfway 448 / 480: even mantissa 110, in range */
    CHECK_EQ_INT(ENC(t, 480, 1), 0x7E);   /* past the max: saturated */
    CHECK_EQ_INT(ENC(t, 480, 0), 0x7F);   /* ... or NaN */
    CHECK_EQ_INT(ENC(t, -480, 0), 0xFF);  /* -NaN */
    CHECK_EQ_INT(ENC(t, INFINITY, 1), 0x7E);
    CHECK_EQ_INT(ENC(t, -INFINITY, 1), 0xFE);
    CHECK_EQ_INT(ENC(t, INFINITY, 0), 0x7F);
    CHECK_EQ_INT(ENC(t, -INFINITY, 0), 0xFF);
    CHECK_EQ_INT(ENC(t, NAN, 1), 0x7F);
    CHECK_EQ_INT(ENC(t, -0.0, 1), 0x80);
    CHECK_EQ_INT(ENC(t, 0x1p-10, 1), 0x00);     /* half the smallest subnormal: tie to 0 */
    CHECK_EQ_INT(ENC(t, 0x3p-11, 1), 0x01);     /* 0.75 * 2^-9 -> 2^-9 */
    CHECK_EQ_INT(ENC(t, 0x3p-10, 1), 0x02);     /* 1.5 * 2^-9: tie, to the even 2 * 2^-9 */
    CHECK_EQ_INT(ENC(t, 1.0625, 1), 0x38);      /* halfway 1 / 1.125: to the even 1 */
    CHECK_EQ_INT(ENC(t, 1.1875, 1), 0x3A);      /* halfway 1.125 / 1.25: to the even 1.25 */
}

TEST(e4m3fnuz) {
    gwr_dtype t = GWR_FLOAT8E4M3FNUZ; /* bias 8, 0x80 NaN, no -0, no inf */
    CHECK(gwr_small_decode(t, 0x7F) == 240); /* 1.875 * 2^7 */
    CHECK(gwr_small_decode(t, 0x40) == 1);
    CHECK(gwr_small_decode(t, 0x01) == 0x1p-10);
    CHECK(isnan(gwr_small_decode(t, 0x80)));
    CHECK(gwr_small_decode(t, 0xFF) == -240);
    CHECK_EQ_INT(ENC(t, 1, 1), 0x40);
    CHECK_EQ_INT(ENC(t, -0.0, 1), 0x00);
    CHECK_EQ_INT(ENC(t, NAN, 1), 0x80);
    CHECK_EQ_INT(ENC(t, 1000, 1), 0x7F);
    CHECK_EQ_INT(ENC(t, -1000, 1), 0xFF);
    CHECK_EQ_INT(ENC(t, 1000, 0), 0x80);
    CHECK_EQ_INT(ENC(t, -INFINITY, 0), 0x80);
    CHECK_EQ_INT(ENC(t, -0x1p-12, 1), 0x00); /* rounds to zero: +0, the only zero */
}

TEST(e5m2) {
    gwr_dtype t = GWR_FLOAT8E5M2; /* S EEEEE MM, bias 15, IEEE inf and NaN */
    CHECK(gwr_small_decode(t, 0x7B) == 57344); /* 1.75 * 2^15 */
    CHECK(gwr_small_decode(t, 0x3C) == 1);
    CHECK(gwr_small_decode(t, 0x01) == 0x1p-16);
    CHECK(isinf(gwr_small_decode(t, 0x7C)) && gwr_small_decode(t, 0xFC) < 0);
    CHECK(isnan(gwr_small_decode(t, 0x7E)) && isnan(gwr_small_decode(t, 0x7D)) && isnan(gwr_small_decode(t, 0xFF)));
    CHECK_EQ_INT(ENC(t, 1, 1), 0x3C);
    CHECK_EQ_INT(ENC(t, 61440, 1), 0x7B); /* halfway 57344 / 65536 goes to 65536: past the max */
    CHECK_EQ_INT(ENC(t, 61440, 0), 0x7C); /* ... inf without saturation */
    CHECK_EQ_INT(ENC(t, 59392, 0), 0x7B); /* below halfway: the max */
    CHECK_EQ_INT(ENC(t, -INFINITY, 0), 0xFC);
    CHECK_EQ_INT(ENC(t, INFINITY, 1), 0x7B);
    CHECK(isnan(gwr_small_decode(t, ENC(t, NAN, 0))));
    CHECK_EQ_INT(ENC(t, -0.0, 0), 0x80);
}

TEST(e5m2fnuz) {
    gwr_dtype t = GWR_FLOAT8E5M2FNUZ; /* bias 16, 0x80 NaN */
    CHECK(gwr_small_decode(t, 0x7F) == 57344);
    CHECK(gwr_small_decode(t, 0x40) == 1);
    CHECK(gwr_small_decode(t, 0x01) == 0x1p-17);
    CHECK(isnan(gwr_small_decode(t, 0x80)));
    CHECK_EQ_INT(ENC(t, 1e9, 1), 0x7F);
    CHECK_EQ_INT(ENC(t, 1e9, 0), 0x80);
    CHECK_EQ_INT(ENC(t, INFINITY, 0), 0x80);
    CHECK_EQ_INT(ENC(t, -0.0, 0), 0x00);
}

/* Every code that is a number reads back as itself (fnuz: the one zero). */
TEST(float8_codes_round_trip) {
    const gwr_dtype ts[] = {GWR_FLOAT8E4M3FN, GWR_FLOAT8E4M3FNUZ, GWR_FLOAT8E5M2, GWR_FLOAT8E5M2FNUZ};
    for (int k = 0; k < 4; k++) {
        int bad = 0;
        for (unsigned c = 0; c < 256; c++) {
            double v = gwr_small_decode(ts[k], c);
            if (isnan(v) || isinf(v)) continue;
            bad += ENC(ts[k], v, 0) != c;
        }
        CHECK_EQ_INT(bad, 0);
    }
}

/* ---- float4e2m1, float8e8m0 ---------------------------------------------- */

TEST(float4e2m1) {
    gwr_dtype t = GWR_FLOAT4E2M1; /* S EE M, bias 1: 0 0.5 1 1.5 2 3 4 6 */
    const double v[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    for (unsigned c = 0; c < 8; c++) {
        CHECK(gwr_small_decode(t, c) == v[c]);
        CHECK(gwr_small_decode(t, c | 8) == -v[c]);
        CHECK_EQ_INT(ENC(t, v[c], 0), c);
    }
    CHECK_EQ_INT(ENC(t, 5, 0), 0x6);      /* halfway 4 / 6: the even 4 */
    CHECK_EQ_INT(ENC(t, 2.5, 0), 0x4);    /* halfway 2 / 3: the even 2 */
    CHECK_EQ_INT(ENC(t, 0.75, 0), 0x2);   /* halfway 0.5 / 1: the even 1 */
    CHECK_EQ_INT(ENC(t, 0.25, 0), 0x0);   /* halfway 0 / 0.5: 0 */
    CHECK_EQ_INT(ENC(t, 100, 0), 0x7);    /* no inf: always the max */
    CHECK_EQ_INT(ENC(t, -INFINITY, 0), 0xF);
    CHECK_EQ_INT(ENC(t, -0.0, 0), 0x8);
}

TEST(float8e8m0) {
    gwr_dtype t = GWR_FLOAT8E8M0; /* 2^(b - 127), 0xFF NaN */
    CHECK(gwr_small_decode(t, 127) == 1);
    CHECK(gwr_small_decode(t, 0) == 0x1p-127);
    CHECK(gwr_small_decode(t, 254) == 0x1p127);
    CHECK(isnan(gwr_small_decode(t, 255)));
    CHECK_EQ_INT(gwr_small_encode(t, 1.5, 1, GWR_E8M0_UP), 128);
    CHECK_EQ_INT(gwr_small_encode(t, 1.5, 1, GWR_E8M0_DOWN), 127);
    CHECK_EQ_INT(gwr_small_encode(t, 1.5, 1, GWR_E8M0_NEAREST), 128); /* ties up */
    CHECK_EQ_INT(gwr_small_encode(t, 1.4, 1, GWR_E8M0_NEAREST), 127);
    CHECK_EQ_INT(gwr_small_encode(t, 4, 1, GWR_E8M0_UP), 129); /* exact: no rounding */
    CHECK_EQ_INT(gwr_small_encode(t, 0, 1, GWR_E8M0_UP), 0);   /* the spec's table */
    CHECK_EQ_INT(gwr_small_encode(t, 0, 0, GWR_E8M0_NEAREST), 255);
    CHECK_EQ_INT(gwr_small_encode(t, INFINITY, 1, GWR_E8M0_UP), 254);
    CHECK_EQ_INT(gwr_small_encode(t, INFINITY, 0, GWR_E8M0_NEAREST), 255);
    CHECK_EQ_INT(gwr_small_encode(t, 0x1p200, 1, GWR_E8M0_UP), 254);
    CHECK_EQ_INT(gwr_small_encode(t, 0x1p200, 0, GWR_E8M0_UP), 255);
    CHECK_EQ_INT(gwr_small_encode(t, NAN, 1, GWR_E8M0_UP), 255);
}

/* ---- small integers, packing ----------------------------------------------- */

TEST(small_ints) {
    CHECK(gwr_small_decode(GWR_INT4, 0x8) == -8 && gwr_small_decode(GWR_INT4, 0xF) == -1 && gwr_small_decode(GWR_INT4, 7) == 7);
    CHECK(gwr_small_decode(GWR_UINT4, 0xF) == 15);
    CHECK(gwr_small_decode(GWR_INT2, 2) == -2 && gwr_small_decode(GWR_INT2, 3) == -1 && gwr_small_decode(GWR_INT2, 1) == 1);
    CHECK(gwr_small_decode(GWR_UINT2, 3) == 3);
    CHECK_EQ_INT(gwr_small_encode_int(GWR_INT4, -9, 1, 0), 0x7); /* low bits of ...10111 */
    CHECK_EQ_INT(gwr_small_encode_int(GWR_UINT2, 5, 1, 0), 1);
    CHECK_EQ_INT(gwr_small_encode(GWR_INT4, -2.7, 1, 0), 0xE); /* toward zero: -2 */
    CHECK_EQ_INT(gwr_small_encode(GWR_UINT4, NAN, 1, 0), 0);
}

TEST(packing) {
    uint8_t b[2] = {0xAA, 0xAA};
    for (int i = 0; i < 3; i++) gwr_packed_set(b, 4, i, (unsigned)i + 1);
    CHECK_EQ_INT(b[0], 0x21); /* first element in the low nibble */
    CHECK_EQ_INT(b[1], 0xA3); /* the high nibble untouched */
    uint8_t c[2] = {0, 0};
    const unsigned e[5] = {1, 2, 3, 0, 1};
    for (int i = 0; i < 5; i++) gwr_packed_set(c, 2, i, e[i]);
    CHECK_EQ_INT(c[0], 0x39); /* 1 | 2 << 2 | 3 << 4 | 0 << 6 */
    CHECK_EQ_INT(c[1], 0x01);
    for (int i = 0; i < 5; i++) CHECK_EQ_INT(gwr_packed_get(c, 2, i), e[i]);
}

/* ---- the executor ---------------------------------------------------------- */

static gwr_value *run_op(const char *op, int n, gwr_dtype const *dt, const int64_t *len, const void *const *data,
                         const char *sattr, const char *sval, const char *iattr, int64_t ival) {
    gwr_network *net = gwr_network_new("m");
    gwr_tensor *t[3];
    for (int i = 0; i < n; i++) t[i] = gwr_constant(net, dt[i], len[i] < 0 ? 0 : 1, len[i] < 0 ? NULL : &len[i], data[i]);
    gwr_layer *l = gwr_network_add_layer(net, op, "", "L", n, t, 1, NULL);
    if (sattr) gwr_layer_set_string(l, sattr, sval);
    if (iattr) gwr_layer_set_int(l, iattr, ival);
    return run_layer_output0(net, l, msg, sizeof msg);
}

static gwr_value *cast1(gwr_dtype from, int64_t n, const void *data, gwr_dtype to, int saturate) {
    gwr_network *net = gwr_network_new("m");
    gwr_tensor *x = gwr_constant(net, from, 1, &n, data);
    gwr_layer *l = gwr_network_add_layer(net, "Cast", "", "L", 1, &x, 1, NULL);
    gwr_layer_set_int(l, "to", to);
    if (saturate >= 0) gwr_layer_set_int(l, "saturate", saturate);
    return run_layer_output0(net, l, msg, sizeof msg);
}

static const uint8_t *bytes(const gwr_value *v) { return gwr_value_cdata(v); }

TEST(cast_to_float8) {
    const float x[5] = {1, 448, 500, -INFINITY, NAN};
    gwr_value *v = cast1(GWR_FLOAT32, 5, x, GWR_FLOAT8E4M3FN, 0);
    if (CHECK(v)) {
        const uint8_t want[5] = {0x38, 0x7E, 0x7F, 0xFF, 0x7F};
        CHECK_EQ_INT(memcmp(bytes(v), want, 5), 0);
        CHECK(gwr_value_get_f64(v, 1) == 448);
        CHECK(isnan(gwr_value_get_f64(v, 2)));
    }
    gwr_value_release(v);
    v = cast1(GWR_FLOAT32, 5, x, GWR_FLOAT8E4M3FN, -1); /* saturate defaults to 1 */
    if (CHECK(v)) CHECK(bytes(v)[2] == 0x7E && bytes(v)[3] == 0xFE);
    gwr_value_release(v);
}

TEST(cast_sub_byte) {
    const uint8_t u4[2] = {0x21, 0xF3}; /* uint4 1, 2, 3 (the 0xF is padding) */
    gwr_value *v = cast1(GWR_UINT4, 3, u4, GWR_INT32, -1);
    if (CHECK(v)) {
        const int32_t *p = gwr_value_cdata(v);
        CHECK(p[0] == 1 && p[1] == 2 && p[2] == 3);
    }
    gwr_value_release(v);
    const uint8_t i4[1] = {0xF8}; /* int4 -8, -1 */
    v = cast1(GWR_INT4, 2, i4, GWR_FLOAT32, -1);
    if (CHECK(v)) CHECK(((const float *)gwr_value_cdata(v))[0] == -8 && ((const float *)gwr_value_cdata(v))[1] == -1);
    gwr_value_release(v);
    const float f[3] = {-9, 2.7f, 7};
    v = cast1(GWR_FLOAT32, 3, f, GWR_INT4, -1); /* 7 (-9 wrapped), 2, 7 */
    if (CHECK(v)) CHECK(gwr_value_nbytes(v) == 2 && bytes(v)[0] == 0x27 && bytes(v)[1] == 0x07);
    gwr_value_release(v);
    const int64_t big[2] = {6, -1}; /* uint2: 6 -> 2, -1 -> 3 */
    v = cast1(GWR_INT64, 2, big, GWR_UINT2, -1);
    if (CHECK(v)) CHECK_EQ_INT(bytes(v)[0], 0x0E);
    gwr_value_release(v);
    /* float4 -> float16: 6 is 0x4600, -0.5 is 0xB800 */
    const uint8_t f4[1] = {0x97};
    v = cast1(GWR_FLOAT4E2M1, 2, f4, GWR_FLOAT16, -1);
    if (CHECK(v)) {
        const uint16_t *h = gwr_value_cdata(v);
        CHECK(h[0] == 0x4600 && h[1] == 0xB800);
    }
    gwr_value_release(v);
}

/* Cast of float32 x[0..n) to float8e8m0 with a round_mode (saturate -1:
 * the attribute left out). */
static gwr_value *cast_e8m0(const float *x, int64_t n, int saturate, const char *round_mode) {
    gwr_network *net = gwr_network_new("m");
    gwr_tensor *t = gwr_constant(net, GWR_FLOAT32, 1, &n, x);
    gwr_layer *l = gwr_network_add_layer(net, "Cast", "", "L", 1, &t, 1, NULL);
    gwr_layer_set_int(l, "to", GWR_FLOAT8E8M0);
    if (saturate >= 0) gwr_layer_set_int(l, "saturate", saturate);
    gwr_layer_set_string(l, "round_mode", round_mode);
    return run_layer_output0(net, l, msg, sizeof msg);
}

TEST(cast_e8m0_round_mode) {
    const float x[3] = {1.5f, 1.4f, 0};
    gwr_value *v = cast_e8m0(x, 3, 0, "nearest");
    if (CHECK(v)) CHECK(bytes(v)[0] == 128 && bytes(v)[1] == 127 && bytes(v)[2] == 255);
    gwr_value_release(v);
    v = cast_e8m0(x, 3, -1, "down");
    if (CHECK(v)) CHECK(bytes(v)[0] == 127 && bytes(v)[1] == 127 && bytes(v)[2] == 0);
    gwr_value_release(v);
    v = cast_e8m0(x, 3, -1, "sideways");
    CHECK(!v);
    CHECK_CONTAINS(msg, "round_mode");
}

TEST(cast_unknown_type) {
    const float x[1] = {1};
    gwr_value *v = cast1(GWR_FLOAT32, 1, x, (gwr_dtype)27, -1);
    CHECK(!v);
    CHECK_CONTAINS(msg, "not a dtype");
}

TEST(quantize_int4) {
    const float x[5] = {-20, -3, 0.5f, 1.5f, 100};
    const float s = 1;
    const uint8_t zp = 0;
    gwr_dtype dt[3] = {GWR_FLOAT32, GWR_FLOAT32, GWR_INT4};
    const int64_t len[3] = {5, -1, -1};
    const void *d[3] = {x, &s, &zp};
    gwr_value *v = run_op("QuantizeLinear", 3, dt, len, d, NULL, NULL, NULL, 0);
    /* -8 (saturated), -3, 0 (half to even), 2, 7 (saturated): nibbles 8 D 0 2 7 */
    if (CHECK(v)) CHECK(gwr_value_dtype(v) == GWR_INT4 && bytes(v)[0] == 0xD8 && bytes(v)[1] == 0x20 && bytes(v)[2] == 0x07);
    gwr_value_release(v);
}

TEST(quantize_float8) {
    const float x[4] = {1, 2, 100000, -1000};
    const float s = 2;
    const uint8_t zp = 0;
    gwr_dtype dt[3] = {GWR_FLOAT32, GWR_FLOAT32, GWR_FLOAT8E4M3FN};
    const int64_t len[3] = {4, -1, -1};
    const void *d[3] = {x, &s, &zp};
    gwr_value *v = run_op("QuantizeLinear", 3, dt, len, d, NULL, NULL, NULL, 0);
    /* 0.5 = 0x30, 1 = 0x38, 50000 -> 448 saturated = 0x7E, -500 -> -448 = 0xFE */
    if (CHECK(v)) CHECK(bytes(v)[0] == 0x30 && bytes(v)[1] == 0x38 && bytes(v)[2] == 0x7E && bytes(v)[3] == 0xFE);
    gwr_value_release(v);
    v = run_op("QuantizeLinear", 3, dt, len, d, NULL, NULL, "saturate", 0);
    if (CHECK(v)) CHECK(bytes(v)[2] == 0x7F && bytes(v)[3] == 0xFF);
    gwr_value_release(v);
}

TEST(dequantize_int2_float8) {
    const uint8_t x = 0x4E; /* int2 -2, -1, 0, 1 */
    const float s = 0.5f;
    const uint8_t zp = 1; /* int2 1 */
    gwr_dtype dt[3] = {GWR_INT2, GWR_FLOAT32, GWR_INT2};
    const int64_t len[3] = {4, -1, -1};
    const void *d[3] = {&x, &s, &zp};
    gwr_value *v = run_op("DequantizeLinear", 3, dt, len, d, NULL, NULL, NULL, 0);
    if (CHECK(v)) {
        const float *y = gwr_value_cdata(v);
        CHECK(y[0] == -1.5f && y[1] == -1 && y[2] == -0.5f && y[3] == 0);
    }
    gwr_value_release(v);
    const uint8_t f8[2] = {0x7E, 0xB8}; /* e4m3fn 448, -1 */
    const float s2 = 0.25f;
    gwr_dtype dt2[2] = {GWR_FLOAT8E4M3FN, GWR_FLOAT32};
    const int64_t len2[2] = {2, -1};
    const void *d2[2] = {f8, &s2};
    v = run_op("DequantizeLinear", 2, dt2, len2, d2, NULL, NULL, "output_dtype", GWR_FLOAT16);
    if (CHECK(v)) {
        const uint16_t *h = gwr_value_cdata(v);
        CHECK(gwr_value_dtype(v) == GWR_FLOAT16 && h[0] == 0x5700 && h[1] == 0xB400); /* 112, -0.25 */
    }
    gwr_value_release(v);
}

TEST(bitcast) {
    const float one = 1;
    gwr_dtype dt[1] = {GWR_FLOAT32};
    const int64_t len[1] = {1};
    const void *d[1] = {&one};
    gwr_value *v = run_op("BitCast", 1, dt, len, d, NULL, NULL, "to", GWR_INT32);
    if (CHECK(v)) CHECK(gwr_value_dtype(v) == GWR_INT32 && ((const int32_t *)gwr_value_cdata(v))[0] == 0x3F800000);
    gwr_value_release(v);
    v = run_op("BitCast", 1, dt, len, d, NULL, NULL, "to", GWR_INT64);
    CHECK(!v);
    CHECK_CONTAINS(msg, "differ in width");
}

TEST(reduce_bool) {
    const uint8_t b[4] = {1, 0, 0, 0};
    gwr_dtype dt[1] = {GWR_BOOL};
    const int64_t len[1] = {4};
    const void *d[1] = {b};
    gwr_value *v = run_op("ReduceMax", 1, dt, len, d, NULL, NULL, "keepdims", 0);
    if (CHECK(v)) CHECK(gwr_value_dtype(v) == GWR_BOOL && bytes(v)[0] == 1);
    gwr_value_release(v);
    v = run_op("ReduceMin", 1, dt, len, d, NULL, NULL, "keepdims", 0);
    if (CHECK(v)) CHECK(bytes(v)[0] == 0);
    gwr_value_release(v);
    v = run_op("ReduceSum", 1, dt, len, d, NULL, NULL, "keepdims", 0);
    CHECK(!v);
}

/* ---- ONNX tensors ---------------------------------------------------------- */

/* Writes a TensorProto: dims {n}, data_type dt, then `rest` (raw_data or
 * int32_data, already encoded); returns its path. */
static const char *tensor_file(int64_t n, int dt, const uint8_t *rest, size_t len) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/gwr_smalltype_%d.pb", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) return path;
    uint8_t head[4] = {0x08, (uint8_t)n, 0x10, (uint8_t)dt}; /* field 1 dims, field 2 data_type */
    fwrite(head, 1, 4, f);
    fwrite(rest, 1, len, f);
    fclose(f);
    return path;
}

TEST(onnx_packed_tensors) {
    gwr_weights w;
    int64_t dims[GWR_MAX_RANK];
    /* int2 x5 in int32_data (field 5, packed): bytes 0x4E 0x01 -> -2 -1 0 1 1 */
    const uint8_t i32[4] = {0x2A, 2, 0x4E, 0x01};
    const char *p = tensor_file(5, 26, i32, sizeof i32);
    if (CHECK(!gwr_onnx_read_tensor(p, &w, dims, NULL))) {
        CHECK(w.dtype == GWR_INT2 && w.nbytes == 2);
        gwr_value *v = gwr_value_from_weights(&w);
        if (CHECK(v)) {
            CHECK(gwr_value_get_f64(v, 0) == -2 && gwr_value_get_f64(v, 1) == -1 && gwr_value_get_f64(v, 3) == 1 &&
                  gwr_value_get_f64(v, 4) == 1);
            gwr_value_release(v);
        }
        gwr_buffer_release(w.buffer);
    }
    /* float4e2m1 x3 in raw_data (field 9): two bytes */
    const uint8_t raw[4] = {0x4A, 2, 0x97, 0x02};
    p = tensor_file(3, 23, raw, sizeof raw);
    if (CHECK(!gwr_onnx_read_tensor(p, &w, dims, NULL))) {
        CHECK(w.dtype == GWR_FLOAT4E2M1 && w.nbytes == 2);
        /* written again and read back: the same bytes */
        char out[80];
        snprintf(out, sizeof out, "%s.out", p);
        gwr_weights w2;
        if (CHECK(!gwr_onnx_write_tensor(out, "t", &w)) && CHECK(!gwr_onnx_read_tensor(out, &w2, dims, NULL))) {
            CHECK(w2.dtype == GWR_FLOAT4E2M1 && w2.nbytes == 2 && !memcmp(w2.data, raw + 2, 2));
            gwr_buffer_release(w2.buffer);
        }
        remove(out);
        gwr_buffer_release(w.buffer);
    }
    /* float8e8m0 one byte */
    const uint8_t e8[3] = {0x4A, 1, 127};
    p = tensor_file(1, 24, e8, sizeof e8);
    if (CHECK(!gwr_onnx_read_tensor(p, &w, dims, NULL))) {
        CHECK(w.dtype == GWR_FLOAT8E8M0);
        gwr_buffer_release(w.buffer);
    }
    remove(p);
}

TEST(onnx_bad_tensors) {
    gwr_weights w;
    int64_t dims[GWR_MAX_RANK];
    /* int2 x5 needs 2 raw bytes, has 1 */
    const uint8_t raw[3] = {0x4A, 1, 0x4E};
    const char *p = tensor_file(5, 26, raw, sizeof raw);
    CHECK(gwr_onnx_read_tensor(p, &w, dims, NULL));
    CHECK_CONTAINS(gwr_last_errmsg(), "raw_data has 1 bytes");
    /* uint4 x5 needs 3 int32_data entries (packed pairs), has 5 */
    const uint8_t i32[7] = {0x2A, 5, 1, 2, 3, 4, 5};
    p = tensor_file(5, 21, i32, sizeof i32);
    CHECK(gwr_onnx_read_tensor(p, &w, dims, NULL));
    CHECK_CONTAINS(gwr_last_errmsg(), "needs 3");
    /* float6e2m3 (27) is not known */
    p = tensor_file(1, 27, raw, sizeof raw);
    CHECK(gwr_onnx_read_tensor(p, &w, dims, NULL));
    CHECK_CONTAINS(gwr_last_errmsg(), "unknown data_type 27");
    /* truncated: the raw_data field's length runs past the end */
    const uint8_t cut[3] = {0x4A, 9, 0x4E};
    p = tensor_file(5, 26, cut, sizeof cut);
    CHECK(gwr_onnx_read_tensor(p, &w, dims, NULL));
    remove(p);
}

/* A network built with gwr (IR 8 unless told) that holds a newer element
 * type is written with the IR version that introduced it. */
static const char *saved_ir(gwr_dtype dt) {
    static char ir[32];
    gwr_network *net = gwr_network_new("m");
    const int64_t n = 4;
    const uint8_t data[4] = {0};
    gwr_tensor *c = gwr_constant(net, dt, 1, &n, data);
    gwr_layer *l = gwr_network_add_layer(net, "Identity", "", "L", 1, &c, 1, NULL);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    void *buf = NULL;
    size_t size = 0;
    snprintf(ir, sizeof ir, "?");
    if (!gwr_onnx_save_memory(net, &buf, &size)) {
        gwr_network *back = gwr_onnx_load_memory(buf, size, NULL, "m", NULL);
        size_t len = 0;
        const char *p = back ? gwr_network_prop(back, "onnx.ir_version", &len) : NULL;
        if (p) snprintf(ir, sizeof ir, "%.*s", (int)len, p);
        gwr_network_free(back);
    }
    free(buf);
    gwr_network_free(net);
    return ir;
}

TEST(export_ir_version) {
    CHECK_STR(saved_ir(GWR_UINT8), "8");
    CHECK_STR(saved_ir(GWR_FLOAT8E5M2), "9");
    CHECK_STR(saved_ir(GWR_INT4), "10");
    CHECK_STR(saved_ir(GWR_FLOAT4E2M1), "11");
    CHECK_STR(saved_ir(GWR_FLOAT8E8M0), "12");
    CHECK_STR(saved_ir(GWR_INT2), "13");
}

int main(void) {
    RUN(dtype_table);
    RUN(e4m3fn);
    RUN(e4m3fnuz);
    RUN(e5m2);
    RUN(e5m2fnuz);
    RUN(float8_codes_round_trip);
    RUN(float4e2m1);
    RUN(float8e8m0);
    RUN(small_ints);
    RUN(packing);
    RUN(cast_to_float8);
    RUN(cast_sub_byte);
    RUN(cast_e8m0_round_mode);
    RUN(cast_unknown_type);
    RUN(quantize_int4);
    RUN(quantize_float8);
    RUN(dequantize_int2_float8);
    RUN(bitcast);
    RUN(reduce_bool);
    RUN(onnx_packed_tensors);
    RUN(onnx_bad_tensors);
    RUN(export_ir_version);
    return check_report();
}
