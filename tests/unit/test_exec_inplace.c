/* test_exec_inplace.c - element-wise unary layers writing their output
 * over their input (gwr_k_out_over, src/exec/kctx.c, session.c): a chain
 * of them runs in one buffer, so the run's peak memory is one tensor, and
 * every value something else still reads is left alone: an intermediate
 * read again later, one that is a network output, one a view (Flatten)
 * shares, the caller's input, a CONSTANT's weights. Expected values are
 * the ONNX formulas computed here: Neg -x, Relu max(0, x), Sigmoid
 * 1 / (1 + e^-x). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"

enum { N = 1000 }; /* elements: 4000 bytes a float tensor; not a whole number of the kernels' chunks */

static const int64_t DIMS[2] = {2, N / 2};

static float xval(int i) { return (float)((i * 37) % 101) / 10.0f - 5.0f; }
static float relu(float v) { return v > 0 ? v : 0.0f; }
static float sigm(float v) { return 1.0f / (1.0f + expf(-v)); }

static gwr_tensor *op1(gwr_network *net, const char *op, const char *name, gwr_tensor *x) {
    return gwr_layer_output(gwr_network_add_layer(net, op, "", name, 1, &x, 1, NULL), 0);
}

/* Runs net on x = xval (the caller keeps its reference to x and checks it
 * after); the outputs go to out; the run's peak bytes to *peak. */
static gwr_status run(gwr_network *net, gwr_value **out, int nout, int64_t *peak) {
    gwr_value *x = gwr_value_new(GWR_FLOAT32, 2, DIMS);
    float *d = gwr_value_data(x);
    for (int i = 0; i < N; i++) d[i] = xval(i);
    gwr_session *s = gwr_session_new_raw(net, NULL);
    const char *names[1] = {"x"};
    gwr_status rc = s ? gwr_session_run(s, 1, names, &x, nout, NULL, out) : GWR_ERR_STATE;
    if (peak) *peak = gwr_session_peak_bytes(s);
    for (int i = 0; i < N && !rc; i++)
        if (d[i] != xval(i)) {
            CHECK(!"the caller's input was written over");
            break;
        }
    gwr_value_release(x);
    gwr_session_free(s);
    return rc;
}

/* Is v's element i want(i) for every i (within float rounding)? */
static int all_near(gwr_value *v, float (*want)(int)) {
    if (!v || gwr_value_numel(v) != N) return 0;
    const float *d = gwr_value_data(v);
    for (int i = 0; i < N; i++)
        if (fabsf(d[i] - want(i)) > 1e-6f * (1 + fabsf(want(i)))) return 0;
    return 1;
}

static float want_neg(int i) { return -xval(i); }
static float want_chain(int i) { return sigm(relu(-xval(i))); }
static float want_relu_neg(int i) { return relu(-xval(i)); }
static float want_sig_neg(int i) { return sigm(-xval(i)); }

/* Runs net's two outputs, checks them against want0 and want1, frees net. */
static void run_two(gwr_network *net, float (*want0)(int), float (*want1)(int)) {
    gwr_value *y[2] = {0};
    CHECK_EQ_INT(run(net, y, 2, NULL), GWR_OK);
    CHECK(all_near(y[0], want0));
    CHECK(all_near(y[1], want1));
    gwr_value_release(y[0]), gwr_value_release(y[1]);
    gwr_network_free(net);
}

static float want_relu(int i) { return relu(xval(i)); }

static gwr_network *new_net(gwr_tensor **x) {
    gwr_network *net = gwr_network_new("t");
    *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, DIMS);
    return net;
}

/* x -> Neg -> Relu -> Sigmoid: Relu and Sigmoid are the last readers of
 * their inputs and write over them: the run holds one 4 KiB tensor at a
 * time, not two (the 4000 bytes, not 8000). */
TEST(chain_runs_in_one_buffer) {
    gwr_tensor *x;
    gwr_network *net = new_net(&x);
    gwr_network_mark_output(net, op1(net, "Sigmoid", "s", op1(net, "Relu", "r", op1(net, "Neg", "n", x))));
    gwr_value *y = NULL;
    int64_t peak = 0;
    CHECK_EQ_INT(run(net, &y, 1, &peak), GWR_OK);
    CHECK(all_near(y, want_chain));
    CHECK_EQ_INT(peak, N * 4); /* 2 * N * 4 when each layer has its own buffer */
    gwr_value_release(y);
    gwr_network_free(net);
}

/* In double (the chunked in-place loop with 8-byte elements): Cast, then
 * Neg, Abs, Sqrt over one another: sqrt(|x|), in one 8000-byte buffer. */
TEST(double_chain_runs_in_one_buffer) {
    gwr_tensor *x;
    gwr_network *net = new_net(&x);
    gwr_layer *c = gwr_network_add_layer(net, "Cast", "", "c", 1, &x, 1, NULL);
    gwr_layer_set_int(c, "to", GWR_FLOAT64);
    gwr_tensor *t = op1(net, "Sqrt", "q", op1(net, "Abs", "a", op1(net, "Neg", "n", gwr_layer_output(c, 0))));
    gwr_network_mark_output(net, t);
    gwr_value *y = NULL;
    int64_t peak = 0;
    CHECK_EQ_INT(run(net, &y, 1, &peak), GWR_OK);
    int ok = y && gwr_value_numel(y) == N && gwr_value_dtype(y) == GWR_FLOAT64;
    const double *d = ok ? gwr_value_data(y) : NULL;
    for (int i = 0; ok && i < N; i++) ok = fabs(d[i] - sqrt(fabs((double)xval(i)))) <= 1e-12;
    CHECK(ok);
    CHECK_EQ_INT(peak, N * 8);
    gwr_value_release(y);
    gwr_network_free(net);
}

/* t = Neg(x) read by Relu and by Sigmoid: the first of them must leave t
 * as it is for the second. */
TEST(second_reader_keeps_its_input) {
    gwr_tensor *x;
    gwr_network *net = new_net(&x);
    gwr_tensor *t = op1(net, "Neg", "n", x);
    gwr_network_mark_output(net, op1(net, "Relu", "r", t));
    gwr_network_mark_output(net, op1(net, "Sigmoid", "s", t));
    run_two(net, want_relu_neg, want_sig_neg);
}

/* t = Neg(x) is a network output and Relu's input: the caller gets -x. */
TEST(network_output_is_not_written_over) {
    gwr_tensor *x;
    gwr_network *net = new_net(&x);
    gwr_tensor *t = op1(net, "Neg", "n", x);
    gwr_network_mark_output(net, t);
    gwr_network_mark_output(net, op1(net, "Relu", "r", t));
    run_two(net, want_neg, want_relu_neg);
}

/* v = Flatten(t) shares t's bytes (a view, another value); Relu, t's
 * last reader, must not write over them: v is still -x. */
TEST(views_keep_their_bytes) {
    gwr_tensor *x;
    gwr_network *net = new_net(&x);
    gwr_tensor *t = op1(net, "Neg", "n", x);
    gwr_layer *fl = gwr_network_add_layer(net, "Flatten", "", "f", 1, &t, 1, NULL);
    gwr_layer_set_int(fl, "axis", 1);
    gwr_network_mark_output(net, gwr_layer_output(fl, 0));
    gwr_network_mark_output(net, op1(net, "Relu", "r", t)); /* runs after Flatten: stable order */
    run_two(net, want_neg, want_relu_neg);
}

/* u = Identity(t) is t's very value under another name: Relu, t's last
 * reader, must leave it: u is still -x. */
TEST(shared_values_are_not_written_over) {
    gwr_tensor *x;
    gwr_network *net = new_net(&x);
    gwr_tensor *t = op1(net, "Neg", "n", x);
    gwr_network_mark_output(net, op1(net, "Identity", "i", t));
    gwr_network_mark_output(net, op1(net, "Relu", "r", t));
    run_two(net, want_neg, want_relu_neg);
}

/* Relu of the network input and of a CONSTANT: the caller's value (run
 * checks it) and the weights stay as they were, run after run. */
TEST(inputs_and_constants_are_not_written_over) {
    gwr_tensor *x;
    gwr_network *net = new_net(&x);
    float *cd = malloc(N * sizeof *cd);
    for (int i = 0; i < N; i++) cd[i] = xval(i);
    gwr_buffer *buf = gwr_buffer_new_copy(cd, N * sizeof *cd);
    free(cd);
    gwr_weights w = {GWR_FLOAT32, 2, DIMS, gwr_buffer_data(buf), N * sizeof(float), buf, NULL};
    gwr_tensor *c = gwr_network_add_constant(net, "c", &w);
    gwr_buffer_release(buf);
    gwr_network_mark_output(net, op1(net, "Relu", "rx", x));
    gwr_network_mark_output(net, op1(net, "Relu", "rc", c));
    for (int r = 0; r < 2; r++) {
        gwr_value *y[2] = {0};
        CHECK_EQ_INT(run(net, y, 2, NULL), GWR_OK);
        CHECK(all_near(y[0], want_relu));
        CHECK(all_near(y[1], want_relu));
        gwr_value_release(y[0]), gwr_value_release(y[1]);
    }
    const float *d = w.data;
    int same = 1;
    for (int i = 0; i < N; i++) same &= d[i] == xval(i);
    CHECK(same);
    gwr_network_free(net);
}

int main(void) {
    RUN(chain_runs_in_one_buffer);
    RUN(double_chain_runs_in_one_buffer);
    RUN(second_reader_keeps_its_input);
    RUN(network_output_is_not_written_over);
    RUN(views_keep_their_bytes);
    RUN(shared_values_are_not_written_over);
    RUN(inputs_and_constants_are_not_written_over);
    return check_report();
}
