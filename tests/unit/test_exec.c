/* test_exec.c - the executor's core (src/exec/session.c, value.c): values,
 * planning, running, memory reuse and every error a caller can cause. The
 * kernels themselves are judged by ONNX's own test data (gwr test-onnx). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"

TEST(values) {
    int64_t d[2] = {2, 3};
    gwr_value *v = gwr_value_new(GWR_FLOAT32, 2, d);
    if (!CHECK(v)) return;
    CHECK_EQ_INT(gwr_value_numel(v), 6);
    CHECK_EQ_INT((long long)gwr_value_nbytes(v), 24);
    float *p = gwr_value_data(v);
    CHECK(p[0] == 0 && p[5] == 0); /* zero-filled */
    p[4] = 2.5f;
    CHECK(gwr_value_get_f64(v, 4) == 2.5);
    CHECK_EQ_INT(gwr_value_get_i64(v, 4), 2);
    CHECK(isnan(gwr_value_get_f64(v, 6))); /* out of range */
    char buf[64];
    gwr_value_type_str(v, buf, sizeof buf);
    CHECK_STR(buf, "float32[2,3]");
    /* weights share the bytes both ways */
    gwr_weights w;
    CHECK_OK(gwr_value_to_weights(v, &w));
    CHECK(w.data == gwr_value_cdata(v) && w.nbytes == 24);
    gwr_value *u = gwr_value_from_weights(&w);
    CHECK(u && gwr_value_cdata(u) == w.data);
    gwr_buffer_release(w.buffer);
    gwr_value_release(v);
    CHECK(((const float *)gwr_value_cdata(u))[4] == 2.5f); /* u keeps the bytes */
    gwr_value_release(u);
    /* strings own their bytes */
    int64_t two = 2;
    gwr_value *s = gwr_value_new(GWR_STRING, 1, &two);
    CHECK_OK(gwr_value_set_string(s, 1, "a\0b", 3));
    const gwr_bytes *b = gwr_value_cdata(s);
    CHECK(b[0].len == 0 && b[1].len == 3 && !memcmp(b[1].data, "a\0b", 3));
    CHECK_EQ_INT(gwr_value_set_string(s, 2, "x", 1), GWR_ERR_INVALID_ARG);
    gwr_value_release(s);
    /* bad arguments */
    int64_t neg = -1;
    CHECK(!gwr_value_new(GWR_FLOAT32, 1, &neg));
    CHECK(!gwr_value_new(GWR_UNDEFINED, 0, NULL));
    CHECK(!gwr_value_new(GWR_FLOAT32, -1, NULL));
    gwr_value_release(NULL);
}

/* x -> Identity -> Identity -> y, plus a constant output. */
static gwr_network *tiny(void) {
    gwr_network *net = gwr_network_new("tiny");
    gwr_dim d[1] = {3};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, d);
    const char *n1 = "h", *n2 = "y";
    gwr_layer *a = gwr_network_add_layer(net, "Identity", "", "a", 1, &x, 1, &n1);
    gwr_tensor *h = gwr_layer_output(a, 0);
    gwr_layer *b = gwr_network_add_layer(net, "Identity", "", "b", 1, &h, 1, &n2);
    gwr_network_mark_output(net, gwr_layer_output(b, 0));
    static const int64_t two = 2, kv[2] = {7, -7};
    gwr_buffer *buf = gwr_buffer_new_copy(kv, sizeof kv);
    gwr_weights w = {GWR_INT64, 1, &two, gwr_buffer_data(buf), sizeof kv, buf, NULL};
    gwr_network_mark_output(net, gwr_network_add_constant(net, "k", &w));
    gwr_buffer_release(buf);
    return net;
}

TEST(run_and_errors) {
    gwr_network *net = tiny();
    gwr_session *s = gwr_session_new(net, NULL);
    if (!CHECK(s)) return;
    int64_t three = 3, four = 4;
    gwr_value *x = gwr_value_new(GWR_FLOAT32, 1, &three);
    ((float *)gwr_value_data(x))[1] = 1.5f;
    const char *in = "x";
    gwr_value *out[2] = {NULL, NULL};
    if (CHECK_OK(gwr_session_run(s, 1, &in, &x, 2, NULL, out))) {
        CHECK(gwr_value_get_f64(out[0], 1) == 1.5);
        CHECK(gwr_value_get_i64(out[1], 1) == -7);
    }
    gwr_value_release(out[0]), gwr_value_release(out[1]);
    /* by name, one output */
    const char *yn = "k";
    gwr_value *k = NULL;
    CHECK_OK(gwr_session_run(s, 1, &in, &x, 1, &yn, &k));
    CHECK(k && gwr_value_numel(k) == 2);
    gwr_value_release(k);
    /* caller errors: named, nothing returned */
    CHECK_EQ_INT(gwr_session_run(s, 0, NULL, NULL, 2, NULL, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(gwr_session_errmsg(s), "input 'x' is missing");
    CHECK(!out[0] && !out[1]);
    const char *bad = "nope";
    CHECK_EQ_INT(gwr_session_run(s, 1, &bad, &x, 2, NULL, out), GWR_ERR_NOT_FOUND);
    CHECK_CONTAINS(gwr_session_errmsg(s), "'nope' is not an input");
    CHECK_EQ_INT(gwr_session_run(s, 1, &in, &x, 1, &bad, out), GWR_ERR_NOT_FOUND);
    CHECK_CONTAINS(gwr_session_errmsg(s), "'nope' is not an output");
    CHECK_EQ_INT(gwr_session_run(s, 1, &in, &x, 1, NULL, out), GWR_ERR_INVALID_ARG);
    gwr_value *wrong = gwr_value_new(GWR_FLOAT32, 1, &four);
    CHECK_EQ_INT(gwr_session_run(s, 1, &in, &wrong, 2, NULL, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(gwr_session_errmsg(s), "input 'x': dim 0 is 4, expected 3");
    gwr_value_release(wrong);
    wrong = gwr_value_new(GWR_INT32, 1, &three);
    CHECK_EQ_INT(gwr_session_run(s, 1, &in, &wrong, 2, NULL, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(gwr_session_errmsg(s), "dtype int32, expected float32");
    gwr_value_release(wrong);
    wrong = gwr_value_new(GWR_FLOAT32, 0, NULL);
    CHECK_EQ_INT(gwr_session_run(s, 1, &in, &wrong, 2, NULL, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(gwr_session_errmsg(s), "rank 0, expected 1");
    gwr_value_release(wrong);
    CHECK_EQ_INT(gwr_session_run(NULL, 1, &in, &x, 2, NULL, out), GWR_ERR_INVALID_ARG);
    /* and it still runs */
    CHECK_OK(gwr_session_run(s, 1, &in, &x, 2, NULL, out));
    gwr_value_release(out[0]), gwr_value_release(out[1]);
    gwr_value_release(x);
    gwr_session_free(s);
    gwr_network_free(net);
}

TEST(no_kernel_named) {
    gwr_network *net = gwr_network_new("n");
    gwr_dim d[1] = {3};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, d);
    gwr_layer *l = gwr_network_add_layer(net, "MyOp", "my.domain", "mine", 1, &x, 1, NULL);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    CHECK(!gwr_session_new(net, NULL));
    CHECK_CONTAINS(gwr_last_errmsg(), "layer 'mine': no kernel for my.domain::MyOp");
    CHECK(!gwr_exec_has_kernel("my.domain", "MyOp"));
    CHECK(gwr_exec_has_kernel("", "Identity"));
    CHECK(!gwr_session_new(NULL, NULL));
    gwr_network_free(net);
}

/* A chain of Identity layers: the outputs alias, nothing is allocated;
 * the memory figures stay 0 and the input is returned as is. */
TEST(aliasing_and_memory_figures) {
    gwr_network *net = tiny();
    gwr_session *s = gwr_session_new(net, NULL);
    int64_t three = 3;
    gwr_value *x = gwr_value_new(GWR_FLOAT32, 1, &three);
    const char *in = "x";
    gwr_value *out[2] = {NULL, NULL};
    if (CHECK(s) && CHECK_OK(gwr_session_run(s, 1, &in, &x, 2, NULL, out))) {
        CHECK(out[0] == x);
        CHECK_EQ_INT(gwr_session_peak_bytes(s), 0);
        CHECK_EQ_INT(gwr_session_total_bytes(s), 0);
    }
    gwr_value_release(out[0]), gwr_value_release(out[1]), gwr_value_release(x);
    gwr_session_free(s);
    gwr_network_free(net);
}

/* A symbolic dim takes one value across the inputs of a run. */
TEST(symbolic_dims_agree) {
    gwr_network *net = gwr_network_new("sym");
    gwr_dim n[1] = {gwr_network_dim_sym(net, "n")};
    gwr_tensor *a = gwr_network_add_input(net, "a", GWR_FLOAT32, 1, n);
    gwr_tensor *b = gwr_network_add_input(net, "b", GWR_FLOAT32, 1, n);
    gwr_network_mark_output(net, gwr_layer_output(gwr_network_add_layer(net, "Identity", "", "ia", 1, &a, 1, NULL), 0));
    gwr_network_mark_output(net, gwr_layer_output(gwr_network_add_layer(net, "Identity", "", "ib", 1, &b, 1, NULL), 0));
    gwr_session *s = gwr_session_new(net, NULL);
    int64_t two = 2, three = 3;
    gwr_value *v2 = gwr_value_new(GWR_FLOAT32, 1, &two), *v3 = gwr_value_new(GWR_FLOAT32, 1, &three), *out[2] = {0};
    const char *names[2] = {"a", "b"};
    gwr_value *same[2] = {v2, v2}, *differ[2] = {v2, v3};
    if (CHECK(s)) {
        CHECK_OK(gwr_session_run(s, 2, names, same, 2, NULL, out));
        gwr_value_release(out[0]), gwr_value_release(out[1]);
        CHECK_EQ_INT(gwr_session_run(s, 2, names, differ, 2, NULL, out), GWR_ERR_INVALID_ARG);
        CHECK_CONTAINS(gwr_session_errmsg(s), "dim 'n' is 2 in input 'a' but 3 in input 'b'");
        /* other shapes in a later run are fine */
        gwr_value *again[2] = {v3, v3};
        CHECK_OK(gwr_session_run(s, 2, names, again, 2, NULL, out));
        gwr_value_release(out[0]), gwr_value_release(out[1]);
    }
    gwr_value_release(v2), gwr_value_release(v3);
    gwr_session_free(s);
    gwr_network_free(net);
}

int main(void) {
    RUN(symbolic_dims_agree);
    RUN(values);
    RUN(run_and_errors);
    RUN(no_kernel_named);
    RUN(aliasing_and_memory_figures);
    return check_report();
}
