/* test_exec_seq.c - sequences and optionals in the executor (value.c,
 * kernels/sequence.c, the session's kind checks): the value API's
 * ownership and refusals, and the corners ONNX's test data does not
 * cover, each bad input an error naming the layer and the problem (never
 * a crash; ASan and LeakSanitizer check the references). Expected values
 * are worked out by hand from the ONNX spec. */
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "gwr/gwr.h"

static gwr_value *f32v(int rank, const int64_t *dims, const float *x) {
    gwr_value *v = gwr_value_new(GWR_FLOAT32, rank, dims);
    if (v && x) memcpy(gwr_value_data(v), x, (size_t)gwr_value_numel(v) * sizeof *x);
    return v;
}

static gwr_value *i64v(int64_t x) {
    gwr_value *v = gwr_value_new(GWR_INT64, 0, NULL);
    if (v) *(int64_t *)gwr_value_data(v) = x;
    return v;
}

/* A graph input of kind (SEQUENCE / OPTIONAL of float32 tensors, or a
 * float32 / int64 tensor of unknown rank). */
static gwr_tensor *input(gwr_network *net, const char *name, gwr_value_kind kind, gwr_dtype dt) {
    gwr_tensor *t = gwr_network_add_input(net, name, dt, -1, NULL);
    if (kind != GWR_VALUE_TENSOR) {
        gwr_type el = {.kind = GWR_VALUE_TENSOR, .dtype = dt, .rank = -1};
        gwr_type ty = {.kind = kind, .elem = &el};
        gwr_tensor_set_value_type(t, &ty);
    }
    return t;
}

/* Runs layer 'L' (op over the graph inputs, nout outputs) on the values
 * given for them; outs get the outputs, msg the error. Frees net. */
static gwr_status go(gwr_network *net, const char *op, int nin, gwr_value *const *vals, int nout, gwr_value **outs, char *msg,
                     size_t size) {
    gwr_tensor *in[8];
    const char *names[8];
    for (int i = 0; i < nin; i++) in[i] = gwr_network_input(net, i), names[i] = gwr_tensor_name(in[i]);
    gwr_layer *l = gwr_network_add_layer(net, op, "", "L", nin, in, nout, NULL);
    for (int i = 0; i < nout; i++) gwr_network_mark_output(net, gwr_layer_output(l, i)), outs[i] = NULL;
    gwr_session *s = gwr_session_new_raw(net, NULL);
    gwr_status rc = GWR_ERR_STATE;
    msg[0] = 0;
    if (!s) snprintf(msg, size, "%s", gwr_last_errmsg());
    else if ((rc = gwr_session_run(s, nin, names, vals, nout, NULL, outs))) snprintf(msg, size, "%s", gwr_session_errmsg(s));
    gwr_session_free(s);
    gwr_network_free(net);
    return rc;
}

/* A sequence of float32 scalars 0, 1, ..., n-1 (or of shape [2] when wide). */
static gwr_value *seq_of(int n, int wide) {
    gwr_value *e[8];
    int64_t d[1] = {2};
    for (int i = 0; i < n; i++) {
        float x[2] = {(float)i, (float)(10 * i)};
        e[i] = f32v(wide, d, x);
    }
    gwr_value *s = gwr_value_new_sequence(GWR_FLOAT32, n, e);
    for (int i = 0; i < n; i++) gwr_value_release(e[i]);
    return s;
}

static float f0(const gwr_value *v) { return ((const float *)gwr_value_cdata(v))[0]; }

/* ---- the value API ----------------------------------------------------------- */

TEST(value_api) {
    gwr_value *a = f32v(0, NULL, (float[]){1}), *b = gwr_value_new(GWR_INT64, 0, NULL);
    gwr_value *mixed[2] = {a, b};
    CHECK(gwr_value_new_sequence(GWR_UNDEFINED, 2, mixed) == NULL); /* two dtypes */
    CHECK_CONTAINS(gwr_last_errmsg(), "int64");
    gwr_value *s = gwr_value_new_sequence(GWR_UNDEFINED, 1, &a);
    CHECK(s && gwr_value_get_kind(s) == GWR_VALUE_SEQUENCE && gwr_value_dtype(s) == GWR_FLOAT32);
    CHECK_EQ_INT(gwr_value_length(s), 1);
    CHECK(gwr_value_element(s, 0) == a && gwr_value_element(s, 1) == NULL && gwr_value_element(s, -1) == NULL);
    CHECK(gwr_value_new_sequence(GWR_FLOAT32, 1, &s) == NULL); /* sequences of sequences: refused */
    gwr_value *o = gwr_value_new_optional(s, GWR_UNDEFINED), *none = gwr_value_new_optional(NULL, GWR_FLOAT32);
    CHECK(o && gwr_value_length(o) == 1 && gwr_value_element(o, 0) == s);
    CHECK(none && gwr_value_length(none) == 0 && gwr_value_element(none, 0) == NULL);
    CHECK(gwr_value_new_optional(o, GWR_UNDEFINED) == NULL); /* optional of optional: refused */
    CHECK_EQ_INT(gwr_value_length(a), -1);
    gwr_weights w;
    CHECK(gwr_value_to_weights(s, &w) == GWR_ERR_TYPE);
    char buf[64];
    gwr_value_type_str(o, buf, sizeof buf);
    CHECK_STR(buf, "optional(sequence(float32)[1])");
    /* The holders keep their elements: release in any order. */
    gwr_value_release(a), gwr_value_release(b), gwr_value_release(s);
    CHECK(f0(gwr_value_element(gwr_value_element(o, 0), 0)) == 1.0f);
    gwr_value_release(o), gwr_value_release(none);
}

/* ---- bad input ----------------------------------------------------------------- */

TEST(sequence_at_out_of_range) {
    gwr_network *net = gwr_network_new("m");
    input(net, "s", GWR_VALUE_SEQUENCE, GWR_FLOAT32), input(net, "p", GWR_VALUE_TENSOR, GWR_INT64);
    gwr_value *v[2] = {seq_of(3, 0), i64v(-4)}, *o;
    char msg[512];
    CHECK(go(net, "SequenceAt", 2, v, 1, &o, msg, sizeof msg) == GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(msg, "layer 'L'");
    CHECK_CONTAINS(msg, "position -4 is out of range for a sequence of 3");
    gwr_value_release(v[0]), gwr_value_release(v[1]);
}

TEST(sequence_at_negative) {
    gwr_network *net = gwr_network_new("m");
    input(net, "s", GWR_VALUE_SEQUENCE, GWR_FLOAT32), input(net, "p", GWR_VALUE_TENSOR, GWR_INT64);
    gwr_value *v[2] = {seq_of(3, 0), i64v(-1)}, *o;
    char msg[512];
    if (CHECK_OK(go(net, "SequenceAt", 2, v, 1, &o, msg, sizeof msg))) {
        CHECK(f0(o) == 2.0f);
        CHECK(o == gwr_value_element(v[0], 2)); /* the element itself, not a copy */
        gwr_value_release(o);
    }
    gwr_value_release(v[0]), gwr_value_release(v[1]);
}

TEST(optional_get_element_empty) {
    gwr_network *net = gwr_network_new("m");
    input(net, "o", GWR_VALUE_OPTIONAL, GWR_FLOAT32);
    gwr_value *v = gwr_value_new_optional(NULL, GWR_FLOAT32), *o;
    char msg[512];
    CHECK(go(net, "OptionalGetElement", 1, &v, 1, &o, msg, sizeof msg) == GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(msg, "layer 'L'");
    CHECK_CONTAINS(msg, "the optional is empty");
    gwr_value_release(v);
}

TEST(sequence_insert_dtype_mismatch) {
    gwr_network *net = gwr_network_new("m");
    input(net, "s", GWR_VALUE_SEQUENCE, GWR_FLOAT32), input(net, "t", GWR_VALUE_TENSOR, GWR_INT64);
    gwr_value *v[2] = {seq_of(2, 0), i64v(7)}, *o;
    char msg[512];
    CHECK(go(net, "SequenceInsert", 2, v, 1, &o, msg, sizeof msg) == GWR_ERR_TYPE);
    CHECK_CONTAINS(msg, "layer 'L'");
    CHECK_CONTAINS(msg, "a int64 tensor cannot go into a sequence of float32");
    gwr_value_release(v[0]), gwr_value_release(v[1]);
}

TEST(sequence_insert_position_end) {
    gwr_network *net = gwr_network_new("m");
    input(net, "s", GWR_VALUE_SEQUENCE, GWR_FLOAT32), input(net, "t", GWR_VALUE_TENSOR, GWR_FLOAT32);
    input(net, "p", GWR_VALUE_TENSOR, GWR_INT64);
    gwr_value *v[3] = {seq_of(2, 0), f32v(0, NULL, (float[]){9}), i64v(2)}, *o;
    char msg[512];
    if (CHECK_OK(go(net, "SequenceInsert", 3, v, 1, &o, msg, sizeof msg))) {
        CHECK_EQ_INT(gwr_value_length(o), 3);
        CHECK(f0(gwr_value_element(o, 2)) == 9.0f && f0(gwr_value_element(o, 0)) == 0.0f);
        gwr_value_release(o);
    }
    CHECK_EQ_INT(gwr_value_length(v[0]), 2); /* the input sequence is unchanged */
    for (int i = 0; i < 3; i++) gwr_value_release(v[i]);
}

TEST(sequence_erase_empty) {
    gwr_network *net = gwr_network_new("m");
    input(net, "s", GWR_VALUE_SEQUENCE, GWR_FLOAT32);
    gwr_value *v = gwr_value_new_sequence(GWR_FLOAT32, 0, NULL), *o;
    char msg[512];
    CHECK(go(net, "SequenceErase", 1, &v, 1, &o, msg, sizeof msg) == GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(msg, "empty sequence");
    gwr_value_release(v);
}

/* A tensor kernel is never handed a sequence (here through an untyped
 * graph input, which takes any value): the session refuses it. */
TEST(tensor_kernel_given_sequence) {
    gwr_network *net = gwr_network_new("m");
    input(net, "s", GWR_VALUE_TENSOR, GWR_UNDEFINED);
    gwr_value *v = seq_of(2, 1), *o;
    char msg[512];
    CHECK(go(net, "Relu", 1, &v, 1, &o, msg, sizeof msg) == GWR_ERR_TYPE);
    CHECK_CONTAINS(msg, "layer 'L' (Relu): input 0 ('s') is a sequence; the kernel takes tensors only");
    gwr_value_release(v);
}

/* A sequence where the graph declares a tensor (with a type): refused at the input. */
TEST(session_input_kind) {
    gwr_network *net = gwr_network_new("m");
    gwr_network_add_input(net, "x", GWR_FLOAT32, 1, (gwr_dim[]){2});
    gwr_value *v = seq_of(2, 1), *o;
    char msg[512];
    CHECK(go(net, "Relu", 1, &v, 1, &o, msg, sizeof msg) == GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(msg, "input 'x': a sequence, expected a tensor");
    gwr_value_release(v);
}

TEST(sequence_at_given_tensor) {
    gwr_network *net = gwr_network_new("m");
    input(net, "s", GWR_VALUE_TENSOR, GWR_FLOAT32), input(net, "p", GWR_VALUE_TENSOR, GWR_INT64);
    gwr_value *v[2] = {f32v(0, NULL, (float[]){1}), i64v(0)}, *o;
    char msg[512];
    CHECK(go(net, "SequenceAt", 2, v, 1, &o, msg, sizeof msg) == GWR_ERR_TYPE);
    CHECK_CONTAINS(msg, "input 0 (input_sequence) is a tensor, not a sequence");
    gwr_value_release(v[0]), gwr_value_release(v[1]);
}

/* ---- ConcatFromSequence, SplitToSequence ---------------------------------------- */

TEST(concat_new_axis) {
    gwr_value *v = seq_of(3, 1), *o;
    gwr_network *n2 = gwr_network_new("m2");
    input(n2, "s", GWR_VALUE_SEQUENCE, GWR_FLOAT32);
    gwr_tensor *in = gwr_network_input(n2, 0);
    gwr_layer *l = gwr_network_add_layer(n2, "ConcatFromSequence", "", "L", 1, &in, 1, NULL);
    gwr_layer_set_int(l, "axis", -1), gwr_layer_set_int(l, "new_axis", 1);
    gwr_network_mark_output(n2, gwr_layer_output(l, 0));
    gwr_session *s = gwr_session_new_raw(n2, NULL);
    const char *nm = "s";
    if (CHECK(s != NULL) && CHECK_OK(gwr_session_run(s, 1, &nm, &v, 1, NULL, &o))) {
        /* three [2] tensors stacked on a new last axis: [2, 3] */
        CHECK_EQ_INT(gwr_value_rank(o), 2);
        CHECK(gwr_value_dims(o)[0] == 2 && gwr_value_dims(o)[1] == 3);
        const float *y = gwr_value_cdata(o);
        CHECK(y[0] == 0 && y[1] == 1 && y[2] == 2 && y[3] == 0 && y[4] == 10 && y[5] == 20);
        gwr_value_release(o);
    } else if (s) {
        fprintf(stderr, "  %s\n", gwr_session_errmsg(s));
    }
    gwr_session_free(s);
    gwr_network_free(n2);
    gwr_value_release(v);
}

TEST(concat_mismatch) {
    gwr_network *net = gwr_network_new("m");
    gwr_value *e[2] = {f32v(1, (int64_t[]){2}, (float[]){1, 2}), f32v(2, (int64_t[]){1, 2}, (float[]){1, 2})};
    gwr_value *v = gwr_value_new_sequence(GWR_FLOAT32, 2, e), *o;
    gwr_value_release(e[0]), gwr_value_release(e[1]);
    input(net, "s", GWR_VALUE_SEQUENCE, GWR_FLOAT32);
    gwr_tensor *in = gwr_network_input(net, 0);
    gwr_layer *l = gwr_network_add_layer(net, "ConcatFromSequence", "", "L", 1, &in, 1, NULL);
    gwr_layer_set_int(l, "axis", 0);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    gwr_session *s = gwr_session_new_raw(net, NULL);
    const char *nm = "s";
    CHECK(s && gwr_session_run(s, 1, &nm, &v, 1, NULL, &o) == GWR_ERR_SHAPE);
    if (s) CHECK_CONTAINS(gwr_session_errmsg(s), "do not concatenate");
    gwr_session_free(s);
    gwr_network_free(net);
    gwr_value_release(v);
}

/* split 2 over 5 rows: chunks of 2, 2 and 1 */
TEST(split_scalar_remainder) {
    gwr_network *net = gwr_network_new("m");
    input(net, "x", GWR_VALUE_TENSOR, GWR_FLOAT32), input(net, "n", GWR_VALUE_TENSOR, GWR_INT64);
    gwr_value *v[2] = {f32v(1, (int64_t[]){5}, (float[]){1, 2, 3, 4, 5}), i64v(2)}, *o;
    char msg[512];
    if (CHECK_OK(go(net, "SplitToSequence", 2, v, 1, &o, msg, sizeof msg))) {
        CHECK_EQ_INT(gwr_value_length(o), 3);
        const gwr_value *last = gwr_value_element(o, 2);
        CHECK(gwr_value_rank(last) == 1 && gwr_value_dims(last)[0] == 1 && f0(last) == 5.0f);
        CHECK(((const float *)gwr_value_cdata(gwr_value_element(o, 1)))[1] == 4.0f);
        gwr_value_release(o);
    } else {
        fprintf(stderr, "  %s\n", msg);
    }
    gwr_value_release(v[0]), gwr_value_release(v[1]);
}

TEST(split_bad_sizes) {
    gwr_network *net = gwr_network_new("m");
    input(net, "x", GWR_VALUE_TENSOR, GWR_FLOAT32), input(net, "n", GWR_VALUE_TENSOR, GWR_INT64);
    gwr_value *sp = gwr_value_new(GWR_INT64, 1, (int64_t[]){2});
    ((int64_t *)gwr_value_data(sp))[0] = 2, ((int64_t *)gwr_value_data(sp))[1] = 2;
    gwr_value *v[2] = {f32v(1, (int64_t[]){5}, (float[]){1, 2, 3, 4, 5}), sp}, *o;
    char msg[512];
    CHECK(go(net, "SplitToSequence", 2, v, 1, &o, msg, sizeof msg) == GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(msg, "split sizes add up to 4, not the axis' 5");
    gwr_value_release(v[0]), gwr_value_release(v[1]);
}

/* ---- SequenceMap: sequences of different lengths ------------------------------- */

TEST(sequence_map_lengths) {
    gwr_network *net = gwr_network_new("m");
    input(net, "a", GWR_VALUE_SEQUENCE, GWR_FLOAT32), input(net, "b", GWR_VALUE_SEQUENCE, GWR_FLOAT32);
    gwr_tensor *in[2] = {gwr_network_input(net, 0), gwr_network_input(net, 1)};
    gwr_layer *l = gwr_network_add_layer(net, "SequenceMap", "", "L", 2, in, 1, NULL);
    gwr_network *body = gwr_network_new_subgraph(net, "body");
    gwr_tensor *x = gwr_network_add_input(body, "x", GWR_FLOAT32, -1, NULL), *y = gwr_network_add_input(body, "y", GWR_FLOAT32, -1, NULL);
    gwr_tensor *bx[2] = {x, y};
    gwr_layer *add = gwr_network_add_layer(body, "Add", "", "add", 2, bx, 1, NULL);
    gwr_network_mark_output(body, gwr_layer_output(add, 0));
    gwr_layer_set_graph(l, "body", body);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    gwr_value *v[2] = {seq_of(3, 0), seq_of(2, 0)}, *o = NULL;
    const char *nm[2] = {"a", "b"};
    gwr_session *s = gwr_session_new_raw(net, NULL);
    CHECK(s && gwr_session_run(s, 2, nm, v, 1, NULL, &o) == GWR_ERR_INVALID_ARG);
    if (s) CHECK_CONTAINS(gwr_session_errmsg(s), "input 1 is a sequence of 2, input 0 of 3");
    /* equal lengths: element-wise sums */
    gwr_value_release(v[1]);
    v[1] = seq_of(3, 0);
    if (s && CHECK_OK(gwr_session_run(s, 2, nm, v, 1, NULL, &o))) {
        CHECK_EQ_INT(gwr_value_length(o), 3);
        CHECK(f0(gwr_value_element(o, 2)) == 4.0f);
        gwr_value_release(o);
    }
    gwr_session_free(s);
    gwr_network_free(net);
    gwr_value_release(v[0]), gwr_value_release(v[1]);
}

/* ---- gwr_onnx_read_data: hand-written SequenceProto / OptionalProto bytes ---- */

static const char *write_tmp(const char *name, const unsigned char *b, size_t n) {
    static char path[256];
    snprintf(path, sizeof path, "/tmp/gwr_test_seq_%ld_%s.pb", (long)getpid(), name);
    FILE *f = fopen(path, "wb");
    if (f) fwrite(b, 1, n, f), fclose(f);
    return path;
}

TEST(read_data) {
    /* TensorProto: dims [1] (field 1), data_type float (field 2), raw_data 1.0f (field 9) */
#define TENSOR 0x08, 0x01, 0x10, 0x01, 0x4a, 0x04, 0x00, 0x00, 0x80, 0x3f
    static const unsigned char seq[] = {0x0a, 0x01, 's', 0x10, 0x01, 0x1a, 0x0a, TENSOR, 0x1a, 0x0a, TENSOR};
    gwr_onnx_data *d = NULL;
    const char *p = write_tmp("seq", seq, sizeof seq);
    if (CHECK_OK(gwr_onnx_read_data(p, GWR_VALUE_SEQUENCE, &d))) {
        CHECK(d->kind == GWR_VALUE_SEQUENCE && d->count == 2 && d->name && !strcmp(d->name, "s"));
        CHECK(d->w[1].dtype == GWR_FLOAT32 && d->w[1].rank == 1 && ((const float *)d->w[1].data)[0] == 1.0f);
        gwr_onnx_data_free(d);
    }
    remove(p);
    static const unsigned char none[] = {0x10, 0x01}; /* OptionalProto: elem_type only */
    p = write_tmp("none", none, sizeof none);
    if (CHECK_OK(gwr_onnx_read_data(p, GWR_VALUE_OPTIONAL, &d))) {
        CHECK(!d->has_value && d->count == 0);
        gwr_onnx_data_free(d);
    }
    remove(p);
    static const unsigned char trunc[] = {0x1a, 0x0a, 0x08, 0x01}; /* a tensor of 10 bytes cut after 2 */
    p = write_tmp("trunc", trunc, sizeof trunc);
    CHECK(gwr_onnx_read_data(p, GWR_VALUE_SEQUENCE, &d) == GWR_ERR_PARSE && d == NULL);
    CHECK_CONTAINS(gwr_last_errmsg(), "truncated");
    remove(p);
    static const unsigned char map[] = {0x32, 0x00}; /* map_values (field 6) */
    p = write_tmp("map", map, sizeof map);
    CHECK(gwr_onnx_read_data(p, GWR_VALUE_SEQUENCE, &d) == GWR_ERR_UNSUPPORTED);
    CHECK_CONTAINS(gwr_last_errmsg(), "a SequenceProto of maps is not supported");
    remove(p);
#undef TENSOR
}

/* gwr_exec_compare looks inside sequences: Split(x) against Split(-x)
 * differs in every element; against itself it passes, all 4 counted. */
static gwr_network *split_net(int negate) {
    gwr_network *net = gwr_network_new("m");
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, (gwr_dim[]){4});
    if (negate) x = gwr_layer_output(gwr_network_add_layer(net, "Neg", "", "neg", 1, &x, 1, NULL), 0);
    gwr_layer *l = gwr_network_add_layer(net, "SplitToSequence", "", "L", 1, &x, 1, NULL);
    gwr_tensor_set_name(gwr_layer_output(l, 0), "s");
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    return net;
}

TEST(compare_sequences) {
    gwr_network *a = split_net(0), *b = split_net(1);
    gwr_compare_report rep;
    if (CHECK_OK(gwr_exec_compare(a, b, NULL, &rep))) {
        CHECK(!rep.pass && rep.noutputs == 1 && rep.outputs[0].same_type);
        CHECK_EQ_INT(rep.outputs[0].numel, 4);
        CHECK(rep.outputs[0].nbad > 0);
        gwr_compare_report_free(&rep);
    }
    if (CHECK_OK(gwr_exec_compare(a, a, NULL, &rep))) {
        CHECK(rep.pass && rep.outputs[0].numel == 4);
        gwr_compare_report_free(&rep);
    }
    gwr_network_free(a), gwr_network_free(b);
}

int main(void) {
    RUN(read_data);
    RUN(compare_sequences);
    RUN(value_api);
    RUN(sequence_at_out_of_range);
    RUN(sequence_at_negative);
    RUN(optional_get_element_empty);
    RUN(sequence_insert_dtype_mismatch);
    RUN(sequence_insert_position_end);
    RUN(sequence_erase_empty);
    RUN(tensor_kernel_given_sequence);
    RUN(session_input_kind);
    RUN(sequence_at_given_tensor);
    RUN(concat_new_axis);
    RUN(concat_mismatch);
    RUN(split_scalar_remainder);
    RUN(split_bad_sizes);
    RUN(sequence_map_lengths);
    return check_report();
}
