/* test_exec_misc.c - src/exec/kernels/quant.c, signal.c, linalg.c: quantization, windows, Det.
 * Hand-computed corners (saturation, ties to even, a singular matrix, a
 * one-point window) and every bad input as a named error; ONNX's test data
 * covers the common cases. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "exec_run.h"
#include "gwr/gwr.h"

/* Builds `op` over the given constants, runs it, returns output 0 (or NULL
 * with the message in msg). */
static gwr_value *run_op(const char *op, int n, gwr_tensor *(*mk)(gwr_network *, int), void (*attrs)(gwr_layer *),
                         char *msg, size_t size) {
    gwr_network *net = gwr_network_new("m");
    gwr_tensor *in[4];
    for (int i = 0; i < n; i++) in[i] = mk(net, i);
    gwr_layer *l = gwr_network_add_layer(net, op, "", "L", n, in, 1, NULL);
    if (attrs) attrs(l);
    return run_layer_output0(net, l, msg, size);
}

/* x = [-1, 0.5, 1.5, 2.5, 300], scale 1, zero point 0 (uint8). */
static gwr_tensor *q_in(gwr_network *net, int i) {
    static const float x[5] = {-1, 0.5f, 1.5f, 2.5f, 300};
    static const int64_t d5[1] = {5};
    static const float s = 1;
    static const uint8_t z = 0;
    return i == 0 ? gwr_constant(net, GWR_FLOAT32, 1, d5, x)
                  : i == 1 ? gwr_constant(net, GWR_FLOAT32, 0, NULL, &s) : gwr_constant(net, GWR_UINT8, 0, NULL, &z);
}

TEST(quantize_saturates_and_rounds_to_even) {
    char msg[512];
    gwr_value *v = run_op("QuantizeLinear", 3, q_in, NULL, msg, sizeof msg);
    if (!CHECK(v)) {
        fprintf(stderr, "  %s\n", msg);
        return;
    }
    static const int64_t want[5] = {0, 0, 2, 2, 255};
    for (int i = 0; i < 5; i++) CHECK_EQ_INT(gwr_value_get_i64(v, i), want[i]);
    CHECK_EQ_INT(gwr_value_dtype(v), GWR_UINT8);
    gwr_value_release(v);
}

/* per-axis scales that do not match the axis */
static gwr_tensor *q_bad(gwr_network *net, int i) {
    static const float x[6] = {0}, s[3] = {1, 1, 1};
    static const int64_t d[2] = {2, 3}, d3[1] = {3};
    return i == 0 ? gwr_constant(net, GWR_FLOAT32, 2, d, x) : gwr_constant(net, GWR_FLOAT32, 1, d3, s);
}

static void axis0(gwr_layer *l) { gwr_layer_set_int(l, "axis", 0); }
static void axis9(gwr_layer *l) { gwr_layer_set_int(l, "axis", 9); }

TEST(quantize_errors_named) {
    char msg[512];
    CHECK(!run_op("QuantizeLinear", 2, q_bad, axis0, msg, sizeof msg));
    CHECK_CONTAINS(msg, "layer 'L'");
    CHECK_CONTAINS(msg, "3 scales for axis 0 of extent 2");
    CHECK(!run_op("QuantizeLinear", 2, q_bad, axis9, msg, sizeof msg));
    CHECK_CONTAINS(msg, "axis is out of range");
    CHECK(!run_op("DequantizeLinear", 2, q_bad, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "x must be a 2, 4, 8, 16 or 32-bit integer");
}

static gwr_tensor *size1(gwr_network *net, int i) {
    (void)i;
    static const int64_t one = 1;
    return gwr_constant(net, GWR_INT64, 0, NULL, &one);
}

static gwr_tensor *size_neg(gwr_network *net, int i) {
    (void)i;
    static const int64_t neg = -3;
    return gwr_constant(net, GWR_INT64, 0, NULL, &neg);
}

static void symmetric(gwr_layer *l) { gwr_layer_set_int(l, "periodic", 0); }

TEST(windows) {
    char msg[512];
    /* one point, symmetric: no division by zero, the value at n = 0 */
    gwr_value *v = run_op("HannWindow", 1, size1, symmetric, msg, sizeof msg);
    if (CHECK(v)) {
        CHECK_EQ_INT(gwr_value_numel(v), 1);
        CHECK(gwr_value_get_f64(v, 0) == 0.0);
        gwr_value_release(v);
    }
    CHECK(!run_op("BlackmanWindow", 1, size_neg, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "size -3 is out of range");
}

static gwr_tensor *singular(gwr_network *net, int i) {
    (void)i;
    static const float a[8] = {1, 2, 2, 4, 0, 1, 1, 0};
    static const int64_t d[3] = {2, 2, 2};
    return gwr_constant(net, GWR_FLOAT32, 3, d, a);
}

static gwr_tensor *nonsquare(gwr_network *net, int i) {
    (void)i;
    static const float a[6] = {0};
    static const int64_t d[2] = {2, 3};
    return gwr_constant(net, GWR_FLOAT32, 2, d, a);
}

TEST(det) {
    char msg[512];
    gwr_value *v = run_op("Det", 1, singular, NULL, msg, sizeof msg);
    if (CHECK(v)) {
        CHECK_EQ_INT(gwr_value_numel(v), 2);
        CHECK(gwr_value_get_f64(v, 0) == 0.0);  /* singular */
        CHECK(gwr_value_get_f64(v, 1) == -1.0); /* a row swap */
        gwr_value_release(v);
    }
    CHECK(!run_op("Det", 1, nonsquare, NULL, msg, sizeof msg));
    CHECK_CONTAINS(msg, "input must be [..., M, M]");
}

int main(void) {
    RUN(quantize_saturates_and_rounds_to_even);
    RUN(quantize_errors_named);
    RUN(windows);
    RUN(det);
    return check_report();
}
