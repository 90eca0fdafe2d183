/* test_exec_tensor.c - the tensor and gather kernel families
 * (src/exec/kernels/tensor.c, gather.c) where ONNX's test data does not
 * reach: every bad input a caller can give is a GWR_ERR_* status and a
 * message naming the problem (never a crash), and hand-computed edge cases
 * (empty tensors, zero-size dims, strings, negative steps, aliasing). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"

/* ---- a one-layer network ------------------------------------------------- */

typedef struct one_op {
    gwr_network *net;
    gwr_layer *l;
    int nin, nout;
    gwr_value *in[8];
    char names[8][8];
} one_op;

static char last_msg[1024];

static gwr_value *val(gwr_dtype dt, int rank, const int64_t *dims, const void *data) {
    gwr_value *v = gwr_value_new(dt, rank, dims);
    if (v && data && dt != GWR_STRING) memcpy(gwr_value_data(v), data, gwr_value_nbytes(v));
    return v;
}
static gwr_value *f32(int rank, const int64_t *dims, const float *d) { return val(GWR_FLOAT32, rank, dims, d); }
static gwr_value *i64(int rank, const int64_t *dims, const int64_t *d) { return val(GWR_INT64, rank, dims, d); }
static gwr_value *i64s(int64_t n, const int64_t *d) { return val(GWR_INT64, 1, &n, d); }
static gwr_value *strs(int rank, const int64_t *dims, const char *const *s) {
    gwr_value *v = gwr_value_new(GWR_STRING, rank, dims);
    for (int64_t i = 0; v && i < gwr_value_numel(v); i++) gwr_value_set_string(v, i, s[i], strlen(s[i]));
    return v;
}

/* A network of one `op` layer reading ins (NULL: absent), under opset
 * (0: none imported). Takes the references of ins. */
static gwr_layer *op_new(one_op *t, const char *op, int64_t opset, int nin, gwr_value *const *ins, int nout) {
    memset(t, 0, sizeof *t);
    t->net = gwr_network_new("t");
    if (opset) gwr_network_set_opset(t->net, "", opset);
    gwr_tensor *ts[8] = {NULL};
    t->nin = nin, t->nout = nout;
    for (int i = 0; i < nin; i++) {
        t->in[i] = ins[i];
        snprintf(t->names[i], sizeof t->names[i], "x%d", i);
        if (ins[i]) ts[i] = gwr_network_add_input(t->net, t->names[i], gwr_value_dtype(ins[i]), -1, NULL);
    }
    t->l = gwr_network_add_layer(t->net, op, "", "L", nin, ts, nout, NULL);
    for (int o = 0; t->l && o < nout; o++) gwr_network_mark_output(t->net, gwr_layer_output(t->l, o));
    return t->l;
}

/* Runs it; outs get the outputs (NULL on error). last_msg: the message. */
static gwr_status op_run(one_op *t, gwr_value **outs) {
    last_msg[0] = 0;
    gwr_session *s = gwr_session_new_raw(t->net, NULL);
    if (!s) {
        snprintf(last_msg, sizeof last_msg, "%s", gwr_last_errmsg());
        return GWR_ERR_STATE;
    }
    const char *names[8];
    gwr_value *vals[8];
    int n = 0;
    for (int i = 0; i < t->nin; i++)
        if (t->in[i]) names[n] = t->names[i], vals[n++] = t->in[i];
    gwr_status rc = gwr_session_run(s, n, names, vals, t->nout, NULL, outs);
    snprintf(last_msg, sizeof last_msg, "%s", rc ? gwr_session_errmsg(s) : "");
    gwr_session_free(s);
    return rc;
}

static void op_free(one_op *t) {
    for (int i = 0; i < t->nin; i++) gwr_value_release(t->in[i]);
    gwr_network_free(t->net);
}

/* Runs op on ins (one output) and returns it, or NULL with *rc set. */
static gwr_value *run1(one_op *t, gwr_status *rc) {
    gwr_value *o = NULL;
    *rc = op_run(t, &o);
    return o;
}

/* Expects the layer to fail with status st and a message containing msg. */
static void expect_fail(one_op *t, gwr_status st, const char *msg, int line) {
    gwr_value *outs[8] = {NULL};
    gwr_status rc = op_run(t, outs);
    if (!CHECK_EQ_INT(rc, st)) fprintf(stderr, "  (line %d: %s)\n", line, last_msg);
    if (!CHECK_CONTAINS(last_msg, msg)) fprintf(stderr, "  (line %d)\n", line);
    CHECK_CONTAINS(last_msg, "layer 'L'");
    for (int i = 0; i < 8; i++) CHECK(!outs[i]), gwr_value_release(outs[i]);
    op_free(t);
}
#define EXPECT_FAIL(t, st, msg) expect_fail((t), (st), (msg), __LINE__)

static int same_dims(const gwr_value *v, int rank, const int64_t *d) {
    if (!v || gwr_value_rank(v) != rank) return 0;
    for (int i = 0; i < rank; i++)
        if (gwr_value_dims(v)[i] != d[i]) return 0;
    return 1;
}

static int same_f32(const gwr_value *v, int64_t n, const float *want) {
    if (!v || gwr_value_numel(v) != n || gwr_value_dtype(v) != GWR_FLOAT32) return 0;
    return !n || !memcmp(gwr_value_cdata(v), want, (size_t)n * sizeof *want);
}

static int same_i64(const gwr_value *v, int64_t n, const int64_t *want) {
    if (!v || gwr_value_numel(v) != n) return 0;
    for (int64_t i = 0; i < n; i++)
        if (gwr_value_get_i64(v, i) != want[i]) return 0;
    return 1;
}

static int same_strs(const gwr_value *v, int64_t n, const char *const *want) {
    if (!v || gwr_value_numel(v) != n || gwr_value_dtype(v) != GWR_STRING) return 0;
    const gwr_bytes *b = gwr_value_cdata(v);
    for (int64_t i = 0; i < n; i++)
        if (b[i].len != strlen(want[i]) || (b[i].len && memcmp(b[i].data, want[i], b[i].len))) return 0;
    return 1;
}

static const float seq[64] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                              22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43,
                              44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63};

/* ---- views ----------------------------------------------------------------- */

TEST(reshape) {
    one_op t;
    gwr_status rc;
    int64_t d23[2] = {2, 3}, sh[3] = {0, -1, 1};
    gwr_value *ins[2] = {f32(2, d23, seq), i64s(3, sh)};
    op_new(&t, "Reshape", 14, 2, ins, 1);
    gwr_value *o = run1(&t, &rc);
    int64_t want[3] = {2, 3, 1};
    if (CHECK_OK(rc)) {
        CHECK(same_dims(o, 3, want));
        CHECK(gwr_value_cdata(o) == gwr_value_cdata(t.in[0])); /* shares the bytes */
    }
    gwr_value_release(o);
    op_free(&t);

    /* allowzero: a 0 is a 0 */
    int64_t d03[2] = {0, 3}, sh2[2] = {3, 0};
    ins[0] = f32(2, d03, NULL), ins[1] = i64s(2, sh2);
    op_new(&t, "Reshape", 14, 2, ins, 1);
    gwr_layer_set_int(t.l, "allowzero", 1);
    o = run1(&t, &rc);
    if (CHECK_OK(rc)) CHECK(same_dims(o, 2, sh2));
    gwr_value_release(o);
    op_free(&t);

    /* strings */
    const char *s6[6] = {"a", "bb", "", "d", "e", "f"};
    int64_t sh3[1] = {-1};
    ins[0] = strs(2, d23, s6), ins[1] = i64s(1, sh3);
    op_new(&t, "Reshape", 13, 2, ins, 1);
    o = run1(&t, &rc);
    if (CHECK_OK(rc)) CHECK(same_strs(o, 6, s6) && gwr_value_rank(o) == 1);
    gwr_value_release(o);
    op_free(&t);

    int64_t two_neg[2] = {-1, -1}, bad[2] = {4, 2}, neg2[2] = {-2, 3}, zero_neg[2] = {0, -1};
    ins[0] = f32(2, d23, seq), ins[1] = i64s(2, two_neg);
    op_new(&t, "Reshape", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "more than one -1");
    ins[0] = f32(2, d23, seq), ins[1] = i64s(2, bad);
    op_new(&t, "Reshape", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "cannot reshape [2,3] (6 elements) into [4,2]");
    ins[0] = f32(2, d23, seq), ins[1] = i64s(2, neg2);
    op_new(&t, "Reshape", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "shape entry 0 is -2");
    /* an empty input with 0 and -1: the -1 cannot be inferred */
    ins[0] = f32(2, d03, NULL), ins[1] = i64s(2, zero_neg);
    op_new(&t, "Reshape", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "cannot infer the -1");
    ins[0] = f32(2, d23, seq), ins[1] = NULL;
    op_new(&t, "Reshape", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "no shape");
    ins[0] = f32(2, d23, seq), ins[1] = f32(1, (int64_t[]){1}, seq);
    op_new(&t, "Reshape", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "int32 or int64");
}

TEST(flatten_squeeze_unsqueeze) {
    one_op t;
    gwr_status rc;
    int64_t d[3] = {2, 0, 3};
    gwr_value *ins[2] = {f32(3, d, NULL), NULL};
    op_new(&t, "Flatten", 13, 1, ins, 1);
    gwr_layer_set_int(t.l, "axis", 2);
    gwr_value *o = run1(&t, &rc);
    int64_t w[2] = {0, 3};
    if (CHECK_OK(rc)) CHECK(same_dims(o, 2, w));
    gwr_value_release(o);
    op_free(&t);
    ins[0] = f32(3, d, NULL);
    op_new(&t, "Flatten", 13, 1, ins, 1);
    gwr_layer_set_int(t.l, "axis", 4);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "axis 4 is out of range for rank 3");

    int64_t d1[3] = {1, 2, 1}, ax[1] = {1}, axd[2] = {0, -3}, ax9[1] = {9};
    ins[0] = f32(3, d1, seq), ins[1] = i64s(1, ax);
    op_new(&t, "Squeeze", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "cannot squeeze axis 1 of size 2");
    ins[0] = f32(3, d1, seq), ins[1] = i64s(2, axd);
    op_new(&t, "Squeeze", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "repeated");
    ins[0] = f32(3, d1, seq);
    op_new(&t, "Squeeze", 13, 1, ins, 1); /* no axes: every 1 goes */
    o = run1(&t, &rc);
    int64_t w2[1] = {2};
    if (CHECK_OK(rc)) CHECK(same_dims(o, 1, w2));
    gwr_value_release(o);
    op_free(&t);
    /* opset 11: axes as an attribute */
    ins[0] = f32(3, d1, seq);
    op_new(&t, "Squeeze", 11, 1, ins, 1);
    gwr_layer_set_ints(t.l, "axes", (int64_t[]){-1}, 1);
    o = run1(&t, &rc);
    int64_t w3[2] = {1, 2};
    if (CHECK_OK(rc)) CHECK(same_dims(o, 2, w3));
    gwr_value_release(o);
    op_free(&t);

    int64_t uax[2] = {3, 0};
    ins[0] = f32(2, w3, seq), ins[1] = i64s(2, uax);
    op_new(&t, "Unsqueeze", 13, 2, ins, 1);
    o = run1(&t, &rc);
    int64_t w4[4] = {1, 1, 2, 1};
    if (CHECK_OK(rc)) CHECK(same_dims(o, 4, w4));
    gwr_value_release(o);
    op_free(&t);
    ins[0] = f32(2, w3, seq), ins[1] = i64s(1, ax9);
    op_new(&t, "Unsqueeze", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "axis 9 is out of range for output rank 3");
    int64_t dup[2] = {0, -4};
    ins[0] = f32(2, w3, seq), ins[1] = i64s(2, dup);
    op_new(&t, "Unsqueeze", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "repeated");
    ins[0] = f32(2, w3, seq);
    op_new(&t, "Unsqueeze", 13, 1, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "no axes");
}

/* ---- Transpose, DepthToSpace ------------------------------------------------- */

TEST(transpose) {
    one_op t;
    gwr_status rc;
    int64_t d[2] = {2, 3};
    gwr_value *ins[1] = {f32(2, d, seq)};
    op_new(&t, "Transpose", 13, 1, ins, 1);
    gwr_value *o = run1(&t, &rc);
    const float w[6] = {0, 3, 1, 4, 2, 5};
    if (CHECK_OK(rc)) CHECK(same_f32(o, 6, w));
    gwr_value_release(o);
    op_free(&t);

    /* a large 3-D one (the tiled path) against the definition */
    int64_t big[3] = {3, 37, 45};
    float *src = malloc(3 * 37 * 45 * sizeof *src);
    for (int i = 0; i < 3 * 37 * 45; i++) src[i] = (float)i;
    ins[0] = f32(3, big, src);
    op_new(&t, "Transpose", 13, 1, ins, 1);
    gwr_layer_set_ints(t.l, "perm", (int64_t[]){2, 0, 1}, 3);
    o = run1(&t, &rc);
    int64_t wd[3] = {45, 3, 37};
    if (CHECK_OK(rc) && CHECK(same_dims(o, 3, wd))) {
        const float *p = gwr_value_cdata(o);
        int bad = 0;
        for (int c = 0; c < 45; c++)
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 37; b++) bad += p[(c * 3 + a) * 37 + b] != src[(a * 37 + b) * 45 + c];
        CHECK_EQ_INT(bad, 0);
    }
    gwr_value_release(o);
    op_free(&t);
    free(src);

    const char *s6[6] = {"a", "b", "c", "d", "e", "f"}, *ws[6] = {"a", "d", "b", "e", "c", "f"};
    ins[0] = strs(2, d, s6);
    op_new(&t, "Transpose", 13, 1, ins, 1);
    o = run1(&t, &rc);
    if (CHECK_OK(rc)) CHECK(same_strs(o, 6, ws));
    gwr_value_release(o);
    op_free(&t);

    ins[0] = f32(2, d, seq);
    op_new(&t, "Transpose", 13, 1, ins, 1);
    gwr_layer_set_ints(t.l, "perm", (int64_t[]){0, 0}, 2);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "not a permutation");
    ins[0] = f32(2, d, seq);
    op_new(&t, "Transpose", 13, 1, ins, 1);
    gwr_layer_set_ints(t.l, "perm", (int64_t[]){0, 1, 2}, 3);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "perm has 3 entries for rank 2");
}

TEST(depth_space_round_trip) {
    one_op t;
    gwr_status rc;
    int64_t d[4] = {1, 8, 2, 3};
    gwr_value *ins[1] = {f32(4, d, seq)};
    op_new(&t, "DepthToSpace", 13, 1, ins, 1);
    gwr_layer_set_int(t.l, "blocksize", 2);
    gwr_layer_set_string(t.l, "mode", "DCR");
    gwr_value *o = run1(&t, &rc);
    int64_t wd[4] = {1, 2, 4, 6};
    if (!CHECK_OK(rc) || !CHECK(same_dims(o, 4, wd))) {
        gwr_value_release(o);
        op_free(&t);
        return;
    }
    /* out[0, c, 2h+i, 2w+j] = in[0, (i*2+j)*2 + c, h, w] */
    CHECK(((const float *)gwr_value_cdata(o))[0 * 24 + 1 * 6 + 3] == seq[(1 * 2 + 1) * 2 * 6 + 0 * 6 + 1]);
    one_op u;
    gwr_value *ins2[1] = {o};
    op_new(&u, "SpaceToDepth", 13, 1, ins2, 1);
    gwr_layer_set_int(u.l, "blocksize", 2);
    gwr_value *back = run1(&u, &rc);
    if (CHECK_OK(rc)) CHECK(same_f32(back, 48, seq));
    gwr_value_release(back);
    op_free(&u);
    op_free(&t);

    ins[0] = f32(4, d, seq);
    op_new(&t, "DepthToSpace", 13, 1, ins, 1);
    gwr_layer_set_int(t.l, "blocksize", 3);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "not a multiple of blocksize^2");
    ins[0] = f32(4, d, seq);
    op_new(&t, "SpaceToDepth", 13, 1, ins, 1);
    gwr_layer_set_int(t.l, "blocksize", 0);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "blocksize 0");
    ins[0] = f32(2, d + 2, seq);
    op_new(&t, "SpaceToDepth", 13, 1, ins, 1);
    gwr_layer_set_int(t.l, "blocksize", 1);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "rank 4");
}

/* ---- Concat, Split, Slice --------------------------------------------------- */

TEST(concat) {
    one_op t;
    gwr_status rc;
    int64_t a[2] = {2, 1}, b[2] = {2, 0}, c[2] = {2, 2};
    gwr_value *ins[3] = {f32(2, a, seq), f32(2, b, NULL), f32(2, c, seq + 10)};
    op_new(&t, "Concat", 13, 3, ins, 1);
    gwr_layer_set_int(t.l, "axis", -1);
    gwr_value *o = run1(&t, &rc);
    const float w[6] = {0, 10, 11, 1, 12, 13};
    int64_t wd[2] = {2, 3};
    if (CHECK_OK(rc)) CHECK(same_dims(o, 2, wd) && same_f32(o, 6, w));
    gwr_value_release(o);
    op_free(&t);

    const char *s1[2] = {"x", "y"}, *s2[2] = {"", "zz"}, *ws[4] = {"x", "y", "", "zz"};
    int64_t two = 2;
    ins[0] = strs(1, &two, s1), ins[1] = strs(1, &two, s2);
    op_new(&t, "Concat", 13, 2, ins, 1);
    gwr_layer_set_int(t.l, "axis", 0);
    o = run1(&t, &rc);
    if (CHECK_OK(rc)) CHECK(same_strs(o, 4, ws));
    gwr_value_release(o);
    op_free(&t);

    int64_t e[2] = {3, 1};
    ins[0] = f32(2, a, seq), ins[1] = f32(2, e, seq);
    op_new(&t, "Concat", 13, 2, ins, 1);
    gwr_layer_set_int(t.l, "axis", 1);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "input 1 has dim 0 = 3, input 0 2");
    ins[0] = f32(2, a, seq), ins[1] = i64(2, a, (int64_t[]){1, 2});
    op_new(&t, "Concat", 13, 2, ins, 1);
    gwr_layer_set_int(t.l, "axis", 1);
    EXPECT_FAIL(&t, GWR_ERR_TYPE, "input 1 is int64");
    ins[0] = f32(2, a, seq), ins[1] = f32(2, a, seq);
    op_new(&t, "Concat", 13, 2, ins, 1);
    gwr_layer_set_int(t.l, "axis", 2);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "axis 2 is out of range");
    ins[0] = f32(2, a, seq), ins[1] = f32(1, a, seq);
    op_new(&t, "Concat", 13, 2, ins, 1);
    gwr_layer_set_int(t.l, "axis", 0);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "rank");
}

TEST(split) {
    one_op t;
    int64_t d[2] = {2, 5};
    gwr_value *ins[2] = {f32(2, d, seq), NULL};
    /* opset 18: num_outputs 3 over 5 -> 2, 2, 1 */
    op_new(&t, "Split", 18, 1, ins, 3);
    gwr_layer_set_int(t.l, "axis", 1);
    gwr_layer_set_int(t.l, "num_outputs", 3);
    gwr_value *o[3] = {NULL};
    if (CHECK_OK(op_run(&t, o))) {
        const float w0[4] = {0, 1, 5, 6}, w1[4] = {2, 3, 7, 8}, w2[2] = {4, 9};
        CHECK(same_f32(o[0], 4, w0) && same_f32(o[1], 4, w1) && same_f32(o[2], 2, w2));
    }
    for (int i = 0; i < 3; i++) gwr_value_release(o[i]);
    op_free(&t);

    /* split along axis 0 with a zero-size part: the parts share the input */
    int64_t sp[3] = {0, 1, 1};
    ins[0] = f32(2, d, seq), ins[1] = i64s(3, sp);
    op_new(&t, "Split", 13, 2, ins, 3);
    if (CHECK_OK(op_run(&t, o))) {
        CHECK_EQ_INT(gwr_value_numel(o[0]), 0);
        CHECK(same_f32(o[2], 5, seq + 5));
        CHECK((const float *)gwr_value_cdata(o[2]) == (const float *)gwr_value_cdata(t.in[0]) + 5);
    }
    for (int i = 0; i < 3; i++) gwr_value_release(o[i]);
    op_free(&t);

    int64_t sp2[2] = {1, 3};
    ins[0] = f32(2, d, seq), ins[1] = i64s(2, sp2);
    op_new(&t, "Split", 13, 2, ins, 2);
    gwr_layer_set_int(t.l, "axis", 1);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "split sums to 4, the axis has 5");
    int64_t sp3[2] = {-1, 6};
    ins[0] = f32(2, d, seq), ins[1] = i64s(2, sp3);
    op_new(&t, "Split", 13, 2, ins, 2);
    gwr_layer_set_int(t.l, "axis", 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "split entry 0 is -1");
    ins[0] = f32(2, d, seq), ins[1] = i64s(2, sp2);
    op_new(&t, "Split", 13, 2, ins, 3);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "split has 2 entries for 3 outputs");
    ins[0] = f32(2, d, seq);
    op_new(&t, "Split", 13, 1, ins, 2);
    gwr_layer_set_int(t.l, "axis", 1);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "does not split into 2 equal parts");
}

TEST(slice) {
    one_op t;
    gwr_status rc;
    int64_t d[2] = {3, 4};
    /* x[::-2, 3:0:-2] (ends beyond the bounds clamp) */
    int64_t st[2] = {-1, 100}, en[2] = {INT64_MIN, 0}, ax[2] = {0, 1}, sp[2] = {-2, -2};
    gwr_value *ins[5] = {f32(2, d, seq), i64s(2, st), i64s(2, en), i64s(2, ax), i64s(2, sp)};
    op_new(&t, "Slice", 13, 5, ins, 1);
    gwr_value *o = run1(&t, &rc);
    const float w[4] = {11, 9, 3, 1};
    int64_t wd[2] = {2, 2};
    if (CHECK_OK(rc)) CHECK(same_dims(o, 2, wd) && same_f32(o, 4, w));
    gwr_value_release(o);
    op_free(&t);

    /* rows 1..2: contiguous, shared */
    int64_t s1[1] = {1}, e1[1] = {3};
    ins[0] = f32(2, d, seq), ins[1] = i64s(1, s1), ins[2] = i64s(1, e1), ins[3] = NULL, ins[4] = NULL;
    op_new(&t, "Slice", 13, 3, ins, 1);
    o = run1(&t, &rc);
    if (CHECK_OK(rc)) {
        CHECK(same_f32(o, 8, seq + 4));
        CHECK((const float *)gwr_value_cdata(o) == (const float *)gwr_value_cdata(t.in[0]) + 4);
    }
    gwr_value_release(o);
    op_free(&t);

    /* an empty result, strings */
    const char *s6[6] = {"a", "b", "c", "d", "e", "f"}, *ws[2] = {"f", "d"};
    int64_t six = 6, s2[1] = {5}, e2[1] = {2}, st2[1] = {-2}, e3[1] = {0};
    ins[0] = strs(1, &six, s6), ins[1] = i64s(1, s2), ins[2] = i64s(1, e2), ins[3] = NULL, ins[4] = i64s(1, st2);
    op_new(&t, "Slice", 13, 5, ins, 1);
    o = run1(&t, &rc);
    if (CHECK_OK(rc)) CHECK(same_strs(o, 2, ws));
    gwr_value_release(o);
    op_free(&t);
    ins[0] = f32(2, d, seq), ins[1] = i64s(1, s2), ins[2] = i64s(1, e3);
    op_new(&t, "Slice", 13, 3, ins, 1);
    o = run1(&t, &rc);
    int64_t wz[2] = {0, 4};
    if (CHECK_OK(rc)) CHECK(same_dims(o, 2, wz));
    gwr_value_release(o);
    op_free(&t);

    /* opset 1: attributes */
    ins[0] = f32(2, d, seq);
    op_new(&t, "Slice", 1, 1, ins, 1);
    gwr_layer_set_ints(t.l, "starts", (int64_t[]){1}, 1);
    gwr_layer_set_ints(t.l, "ends", (int64_t[]){2}, 1);
    gwr_layer_set_ints(t.l, "axes", (int64_t[]){1}, 1);
    o = run1(&t, &rc);
    const float w1[3] = {1, 5, 9};
    if (CHECK_OK(rc)) CHECK(same_f32(o, 3, w1));
    gwr_value_release(o);
    op_free(&t);

    /* the most negative step: one element */
    int64_t mn[1] = {INT64_MIN}, m1[1] = {-1};
    ins[0] = f32(2, d, seq), ins[1] = i64s(1, m1), ins[2] = i64s(1, mn), ins[3] = NULL, ins[4] = i64s(1, mn);
    op_new(&t, "Slice", 13, 5, ins, 1);
    o = run1(&t, &rc);
    int64_t w14[2] = {1, 4};
    if (CHECK_OK(rc)) CHECK(same_dims(o, 2, w14) && same_f32(o, 4, seq + 8));
    gwr_value_release(o);
    op_free(&t);

    int64_t z[1] = {0};
    ins[0] = f32(2, d, seq), ins[1] = i64s(1, s1), ins[2] = i64s(1, e1), ins[3] = NULL, ins[4] = i64s(1, z);
    op_new(&t, "Slice", 13, 5, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "is 0");
    ins[0] = f32(2, d, seq), ins[1] = i64s(2, st), ins[2] = i64s(1, e1);
    op_new(&t, "Slice", 13, 3, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "starts has 2 entries, ends 1");
    int64_t a5[1] = {5};
    ins[0] = f32(2, d, seq), ins[1] = i64s(1, s1), ins[2] = i64s(1, e1), ins[3] = i64s(1, a5);
    op_new(&t, "Slice", 13, 4, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "axis 5 is out of range");
    int64_t a00[2] = {0, -2};
    ins[0] = f32(2, d, seq), ins[1] = i64s(2, st), ins[2] = i64s(2, en), ins[3] = i64s(2, a00);
    op_new(&t, "Slice", 13, 4, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "repeated");
}

/* ---- Expand, Tile, Pad ------------------------------------------------------ */

TEST(expand_tile) {
    one_op t;
    gwr_status rc;
    int64_t d[2] = {3, 1}, sh[3] = {2, 1, 2};
    gwr_value *ins[2] = {f32(2, d, seq), i64s(3, sh)};
    op_new(&t, "Expand", 13, 2, ins, 1);
    gwr_value *o = run1(&t, &rc);
    const float w[12] = {0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2};
    int64_t wd[3] = {2, 3, 2};
    if (CHECK_OK(rc)) CHECK(same_dims(o, 3, wd) && same_f32(o, 12, w));
    gwr_value_release(o);
    op_free(&t);

    int64_t bad[2] = {2, 2}, huge[3] = {1 << 20, 3, 1 << 20}, neg[1] = {-3};
    ins[0] = f32(2, d, seq), ins[1] = i64s(2, bad);
    op_new(&t, "Expand", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "cannot expand [3,1] to [2,2]");
    ins[0] = f32(2, d, seq), ins[1] = i64s(3, huge);
    op_new(&t, "Expand", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "at most");
    ins[0] = f32(2, d, seq), ins[1] = i64s(1, neg);
    op_new(&t, "Expand", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "shape entry 0 is -3");

    int64_t d2[2] = {2, 2}, rep[2] = {2, 3};
    ins[0] = f32(2, d2, seq), ins[1] = i64s(2, rep);
    op_new(&t, "Tile", 13, 2, ins, 1);
    o = run1(&t, &rc);
    const float wt[24] = {0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3};
    int64_t wtd[2] = {4, 6};
    if (CHECK_OK(rc)) CHECK(same_dims(o, 2, wtd) && same_f32(o, 24, wt));
    gwr_value_release(o);
    op_free(&t);
    int64_t rep0[2] = {0, 1};
    ins[0] = f32(2, d2, seq), ins[1] = i64s(2, rep0);
    op_new(&t, "Tile", 13, 2, ins, 1);
    o = run1(&t, &rc);
    int64_t w0[2] = {0, 2};
    if (CHECK_OK(rc)) CHECK(same_dims(o, 2, w0));
    gwr_value_release(o);
    op_free(&t);

    /* a zero-size input with a huge dim: tiling it must not overflow */
    int64_t dz[2] = {INT64_C(1) << 40, 0}, rz[2] = {1 << 30, 1};
    ins[0] = f32(2, dz, NULL), ins[1] = i64s(2, rz);
    op_new(&t, "Tile", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "overflow");
    int64_t rneg[2] = {1, -1}, rbig[2] = {1 << 30, 1 << 30}, r1[1] = {2};
    ins[0] = f32(2, d2, seq), ins[1] = i64s(2, rneg);
    op_new(&t, "Tile", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "repeats entry 1 is -1");
    ins[0] = f32(2, d2, seq), ins[1] = i64s(2, rbig);
    op_new(&t, "Tile", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "at most");
    ins[0] = f32(2, d2, seq), ins[1] = i64s(1, r1);
    op_new(&t, "Tile", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "repeats has 1 entries for rank 2");
}

static gwr_value *pad1(const char *mode, int64_t lo, int64_t hi, gwr_status *rc) {
    one_op t;
    int64_t four = 4, pads[2] = {lo, hi};
    const float x[4] = {1, 2, 3, 4}, c = 9;
    gwr_value *ins[3] = {f32(1, &four, x), i64s(2, pads), f32(0, NULL, &c)};
    op_new(&t, "Pad", 13, 3, ins, 1);
    gwr_layer_set_string(t.l, "mode", mode);
    gwr_value *o = run1(&t, rc);
    op_free(&t);
    return o;
}

TEST(pad) {
    gwr_status rc;
    struct {
        const char *mode;
        int64_t lo, hi, n;
        float w[12];
    } cases[] = {
        {"constant", 2, 1, 7, {9, 9, 1, 2, 3, 4, 9}},
        {"reflect", 3, 2, 9, {4, 3, 2, 1, 2, 3, 4, 3, 2}},
        {"reflect", 5, 0, 9, {2, 3, 4, 3, 2, 1, 2, 3, 4}}, /* beyond one reflection */
        {"edge", 2, 2, 8, {1, 1, 1, 2, 3, 4, 4, 4}},
        {"wrap", 2, 5, 11, {3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 1}},
        {"constant", -1, -2, 1, {2}}, /* negative pads crop */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        gwr_value *o = pad1(cases[i].mode, cases[i].lo, cases[i].hi, &rc);
        if (!CHECK_OK(rc) || !CHECK(same_f32(o, cases[i].n, cases[i].w)))
            fprintf(stderr, "  pad case %zu (%s): %s\n", i, cases[i].mode, last_msg);
        gwr_value_release(o);
    }
    /* 2-D constant pad with opset 2 attributes */
    one_op t;
    int64_t d[2] = {2, 2};
    gwr_value *ins[4] = {f32(2, d, seq), NULL, NULL, NULL};
    op_new(&t, "Pad", 2, 1, ins, 1);
    gwr_layer_set_ints(t.l, "pads", (int64_t[]){1, 0, 0, 1}, 4);
    gwr_layer_set_float(t.l, "value", -1.0f);
    gwr_value *o = run1(&t, &rc);
    const float w2[9] = {-1, -1, -1, 0, 1, -1, 2, 3, -1};
    if (CHECK_OK(rc)) CHECK(same_f32(o, 9, w2));
    gwr_value_release(o);
    op_free(&t);
    /* opset 18 axes */
    int64_t pads[2] = {0, 1}, axes[1] = {-1};
    ins[0] = f32(2, d, seq), ins[1] = i64s(2, pads), ins[2] = NULL, ins[3] = i64s(1, axes);
    op_new(&t, "Pad", 18, 4, ins, 1);
    gwr_layer_set_string(t.l, "mode", "edge");
    o = run1(&t, &rc);
    const float w3[6] = {0, 1, 1, 2, 3, 3};
    if (CHECK_OK(rc)) CHECK(same_f32(o, 6, w3));
    gwr_value_release(o);
    op_free(&t);

    /* errors */
    int64_t zero = 0, p3[3] = {1, 1, 1}, p4[4] = {1, 1, 1, 1}, pneg[4] = {0, -3, 0, 0}, pbig[4] = {0, 1 << 30, 0, 1 << 30};
    const float c = 0;
    ins[0] = f32(1, &zero, NULL), ins[1] = i64s(2, (int64_t[]){1, 0}), ins[2] = NULL, ins[3] = NULL;
    op_new(&t, "Pad", 13, 2, ins, 1);
    gwr_layer_set_string(t.l, "mode", "reflect");
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "cannot reflect-pad the empty axis 0");
    ins[0] = f32(2, d, seq), ins[1] = i64s(3, p3);
    op_new(&t, "Pad", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "pads has 3 entries, expected 4");
    ins[0] = f32(2, d, seq), ins[1] = i64s(4, pneg);
    op_new(&t, "Pad", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "negative");
    ins[0] = f32(2, d, seq), ins[1] = i64s(4, pbig);
    op_new(&t, "Pad", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "at most");
    ins[0] = f32(2, d, seq), ins[1] = i64s(4, p4), ins[2] = i64(0, NULL, (const int64_t[]){0});
    op_new(&t, "Pad", 13, 3, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_TYPE, "constant_value is int64");
    ins[0] = f32(2, d, seq), ins[1] = i64s(4, p4), ins[2] = f32(0, NULL, &c);
    op_new(&t, "Pad", 13, 3, ins, 1);
    gwr_layer_set_string(t.l, "mode", "mirror");
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "unknown mode 'mirror'");
}

/* ---- makers ------------------------------------------------------------------ */

TEST(shape_size_constant_range) {
    one_op t;
    gwr_status rc;
    int64_t d[3] = {2, 0, 5};
    gwr_value *ins[3] = {f32(3, d, NULL)};
    op_new(&t, "Shape", 15, 1, ins, 1);
    gwr_layer_set_int(t.l, "start", -2);
    gwr_value *o = run1(&t, &rc);
    if (CHECK_OK(rc)) CHECK(same_i64(o, 2, d + 1));
    gwr_value_release(o);
    op_free(&t);
    ins[0] = f32(3, d, NULL);
    op_new(&t, "Size", 13, 1, ins, 1);
    o = run1(&t, &rc);
    if (CHECK_OK(rc)) CHECK(gwr_value_rank(o) == 0 && gwr_value_get_i64(o, 0) == 0);
    gwr_value_release(o);
    op_free(&t);

    int64_t sh[2] = {2, 3};
    ins[0] = i64s(2, sh);
    op_new(&t, "ConstantOfShape", 9, 1, ins, 1);
    static const int32_t seven = 7;
    gwr_buffer *buf = gwr_buffer_new_copy(&seven, 4);
    int64_t one = 1;
    gwr_weights w = {GWR_INT32, 1, &one, gwr_buffer_data(buf), 4, buf, NULL};
    gwr_layer_set_tensor(t.l, "value", &w);
    gwr_buffer_release(buf);
    o = run1(&t, &rc);
    const int64_t sevens[6] = {7, 7, 7, 7, 7, 7};
    if (CHECK_OK(rc)) CHECK(gwr_value_dtype(o) == GWR_INT32 && same_dims(o, 2, sh) && same_i64(o, 6, sevens));
    gwr_value_release(o);
    op_free(&t);
    int64_t huge[2] = {1 << 30, 1 << 30}, neg[1] = {-1};
    ins[0] = i64s(2, huge);
    op_new(&t, "ConstantOfShape", 9, 1, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "at most");
    ins[0] = i64s(1, neg);
    op_new(&t, "ConstantOfShape", 9, 1, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "shape entry 0 is -1");

    const int64_t r[3] = {10, 3, -3};
    ins[0] = i64(0, NULL, r), ins[1] = i64(0, NULL, r + 1), ins[2] = i64(0, NULL, r + 2);
    op_new(&t, "Range", 11, 3, ins, 1);
    o = run1(&t, &rc);
    const int64_t wr[3] = {10, 7, 4};
    if (CHECK_OK(rc)) CHECK(same_i64(o, 3, wr));
    gwr_value_release(o);
    op_free(&t);
    const int64_t z = 0, big = INT64_MAX;
    ins[0] = i64(0, NULL, r), ins[1] = i64(0, NULL, r + 1), ins[2] = i64(0, NULL, &z);
    op_new(&t, "Range", 11, 3, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "delta is 0");
    ins[0] = i64(0, NULL, &z), ins[1] = i64(0, NULL, &big), ins[2] = i64(0, NULL, r + 1);
    op_new(&t, "Range", 11, 3, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "at most");
    const float fr[3] = {0, 1, 0.25f};
    ins[0] = f32(0, NULL, fr), ins[1] = f32(0, NULL, fr + 1), ins[2] = f32(0, NULL, fr + 2);
    op_new(&t, "Range", 11, 3, ins, 1);
    o = run1(&t, &rc);
    const float wf[4] = {0, 0.25f, 0.5f, 0.75f};
    if (CHECK_OK(rc)) CHECK(same_f32(o, 4, wf));
    gwr_value_release(o);
    op_free(&t);
    ins[0] = f32(0, NULL, fr), ins[1] = i64(0, NULL, r), ins[2] = f32(0, NULL, fr + 2);
    op_new(&t, "Range", 11, 3, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_TYPE, "differ in dtype");
}

TEST(eye_trilu_nonzero_onehot) {
    one_op t;
    gwr_status rc;
    int64_t d[2] = {3, 4};
    gwr_value *ins[3] = {f32(2, d, seq)};
    op_new(&t, "EyeLike", 9, 1, ins, 1);
    gwr_layer_set_int(t.l, "k", 1);
    gwr_layer_set_int(t.l, "dtype", GWR_INT32);
    gwr_value *o = run1(&t, &rc);
    const int64_t we[12] = {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    if (CHECK_OK(rc)) CHECK(gwr_value_dtype(o) == GWR_INT32 && same_i64(o, 12, we));
    gwr_value_release(o);
    op_free(&t);
    ins[0] = f32(1, d, seq);
    op_new(&t, "EyeLike", 9, 1, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "rank 2");

    const int64_t km1 = -1;
    ins[0] = f32(2, d, seq), ins[1] = i64(0, NULL, &km1);
    op_new(&t, "Trilu", 14, 2, ins, 1);
    gwr_layer_set_int(t.l, "upper", 0);
    o = run1(&t, &rc);
    const float wt[12] = {0, 0, 0, 0, 4, 0, 0, 0, 8, 9, 0, 0};
    if (CHECK_OK(rc)) CHECK(same_f32(o, 12, wt));
    gwr_value_release(o);
    op_free(&t);
    const char *s4[4] = {"a", "b", "c", "d"}, *ws[4] = {"a", "b", "", "d"};
    int64_t d22[2] = {2, 2};
    ins[0] = strs(2, d22, s4);
    op_new(&t, "Trilu", 14, 1, ins, 1);
    o = run1(&t, &rc);
    if (CHECK_OK(rc)) CHECK(same_strs(o, 4, ws));
    gwr_value_release(o);
    op_free(&t);
    ins[0] = f32(1, d, seq);
    op_new(&t, "Trilu", 14, 1, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "rank 2 or more");

    const float nz[6] = {0, 1.5f, 0, -0.0f, NAN, 2};
    int64_t d23[2] = {2, 3};
    ins[0] = f32(2, d23, nz);
    op_new(&t, "NonZero", 13, 1, ins, 1);
    o = run1(&t, &rc);
    const int64_t wn[6] = {0, 1, 1, 1, 1, 2};
    int64_t wnd[2] = {2, 3};
    if (CHECK_OK(rc)) CHECK(same_dims(o, 2, wnd) && same_i64(o, 6, wn));
    gwr_value_release(o);
    op_free(&t);

    const int64_t idx[3] = {1, -1, 7}, depth = 3;
    const float onoff[2] = {0, 5};
    int64_t three = 3, two = 2;
    ins[0] = i64(1, &three, idx), ins[1] = i64(0, NULL, &depth), ins[2] = f32(1, &two, onoff);
    op_new(&t, "OneHot", 11, 3, ins, 1);
    gwr_layer_set_int(t.l, "axis", 0);
    o = run1(&t, &rc);
    /* out[depth, 3]: column i has 5 at row idx[i]; -1 wraps to 2; 7 is off */
    const float wo[9] = {0, 0, 0, 5, 0, 0, 0, 5, 0};
    if (CHECK_OK(rc)) CHECK(same_f32(o, 9, wo));
    gwr_value_release(o);
    op_free(&t);
    const int64_t d0 = 0;
    ins[0] = i64(1, &three, idx), ins[1] = i64(0, NULL, &d0), ins[2] = f32(1, &two, onoff);
    op_new(&t, "OneHot", 11, 3, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "depth 0");
    ins[0] = i64(1, &three, idx), ins[1] = i64(0, NULL, &depth), ins[2] = f32(1, &three, seq);
    op_new(&t, "OneHot", 11, 3, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "two elements");
}

TEST(reverse_sequence_compress) {
    one_op t;
    gwr_status rc;
    int64_t d[2] = {3, 2}, two = 2; /* [time, batch] */
    const int64_t lens[2] = {3, 1};
    gwr_value *ins[2] = {f32(2, d, seq), i64(1, &two, lens)};
    op_new(&t, "ReverseSequence", 10, 2, ins, 1);
    gwr_value *o = run1(&t, &rc);
    const float w[6] = {4, 1, 2, 3, 0, 5};
    if (CHECK_OK(rc)) CHECK(same_f32(o, 6, w));
    gwr_value_release(o);
    op_free(&t);
    const int64_t badl[2] = {4, 1};
    ins[0] = f32(2, d, seq), ins[1] = i64(1, &two, badl);
    op_new(&t, "ReverseSequence", 10, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "sequence_lens[0] = 4 is out of [0, 3]");
    ins[0] = f32(2, d, seq), ins[1] = i64(1, &two, lens);
    op_new(&t, "ReverseSequence", 10, 2, ins, 1);
    gwr_layer_set_int(t.l, "batch_axis", 0);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "must be 0 and 1");

    const uint8_t cond[2] = {0, 1};
    ins[0] = f32(2, d, seq), ins[1] = val(GWR_BOOL, 1, &two, cond);
    op_new(&t, "Compress", 11, 2, ins, 1);
    gwr_layer_set_int(t.l, "axis", 1);
    o = run1(&t, &rc);
    const float wc[3] = {1, 3, 5};
    int64_t wcd[2] = {3, 1};
    if (CHECK_OK(rc)) CHECK(same_dims(o, 2, wcd) && same_f32(o, 3, wc));
    gwr_value_release(o);
    op_free(&t);
    ins[0] = f32(2, d, seq), ins[1] = val(GWR_BOOL, 1, &two, cond); /* no axis: flattened */
    op_new(&t, "Compress", 11, 2, ins, 1);
    o = run1(&t, &rc);
    if (CHECK_OK(rc)) CHECK(same_f32(o, 1, seq + 1));
    gwr_value_release(o);
    op_free(&t);
    const uint8_t c4[4] = {0, 0, 0, 1};
    int64_t four = 4;
    ins[0] = f32(2, d, seq), ins[1] = val(GWR_BOOL, 1, &four, c4);
    op_new(&t, "Compress", 11, 2, ins, 1);
    gwr_layer_set_int(t.l, "axis", 1);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "condition selects entry 3 of an axis of 2");
    ins[0] = f32(2, d, seq), ins[1] = f32(1, &two, seq);
    op_new(&t, "Compress", 11, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_TYPE, "bool");
}

/* ---- gather and scatter ----------------------------------------------------- */

TEST(gather) {
    one_op t;
    gwr_status rc;
    int64_t d[2] = {3, 2}, id[2] = {2, 2};
    const int64_t ix[4] = {2, 0, -1, 1};
    gwr_value *ins[3] = {f32(2, d, seq), i64(2, id, ix)};
    op_new(&t, "Gather", 13, 2, ins, 1);
    gwr_value *o = run1(&t, &rc);
    const float w[8] = {4, 5, 0, 1, 4, 5, 2, 3};
    int64_t wd[3] = {2, 2, 2};
    if (CHECK_OK(rc)) CHECK(same_dims(o, 3, wd) && same_f32(o, 8, w));
    gwr_value_release(o);
    op_free(&t);
    /* axis 1, a scalar index, strings */
    const char *s6[6] = {"a", "b", "c", "d", "e", "f"}, *ws[3] = {"b", "d", "f"};
    const int32_t one = 1;
    ins[0] = strs(2, d, s6), ins[1] = val(GWR_INT32, 0, NULL, &one);
    op_new(&t, "Gather", 13, 2, ins, 1);
    gwr_layer_set_int(t.l, "axis", 1);
    o = run1(&t, &rc);
    if (CHECK_OK(rc)) CHECK(same_strs(o, 3, ws) && gwr_value_rank(o) == 1);
    gwr_value_release(o);
    op_free(&t);
    /* empty indices */
    int64_t zero = 0;
    ins[0] = f32(2, d, seq), ins[1] = i64(1, &zero, NULL);
    op_new(&t, "Gather", 13, 2, ins, 1);
    o = run1(&t, &rc);
    int64_t wz[2] = {0, 2};
    if (CHECK_OK(rc)) CHECK(same_dims(o, 2, wz));
    gwr_value_release(o);
    op_free(&t);

    const int64_t oob[1] = {3}, oobn[1] = {-4};
    int64_t n1 = 1;
    ins[0] = f32(2, d, seq), ins[1] = i64(1, &n1, oob);
    op_new(&t, "Gather", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "index 3 (entry 0) is out of range for a dim of 3");
    ins[0] = f32(2, d, seq), ins[1] = i64(1, &n1, oobn);
    op_new(&t, "Gather", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "index -4 (entry 0) is out of range");
    ins[0] = f32(2, d, seq), ins[1] = i64(1, &n1, ix);
    op_new(&t, "Gather", 13, 2, ins, 1);
    gwr_layer_set_int(t.l, "axis", -3);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "axis -3 is out of range for rank 2");
    ins[0] = f32(2, d, seq), ins[1] = f32(1, &n1, seq);
    op_new(&t, "Gather", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_TYPE, "int32 or int64");
}

TEST(gather_elements_nd) {
    one_op t;
    gwr_status rc;
    int64_t d[2] = {2, 3}, id[2] = {2, 2};
    const int64_t ix[4] = {2, -3, 1, 1};
    gwr_value *ins[2] = {f32(2, d, seq), i64(2, id, ix)};
    op_new(&t, "GatherElements", 13, 2, ins, 1);
    gwr_layer_set_int(t.l, "axis", 1);
    gwr_value *o = run1(&t, &rc);
    const float w[4] = {2, 0, 4, 4};
    if (CHECK_OK(rc)) CHECK(same_f32(o, 4, w));
    gwr_value_release(o);
    op_free(&t);
    const int64_t bad[4] = {0, 3, 0, 0};
    ins[0] = f32(2, d, seq), ins[1] = i64(2, id, bad);
    op_new(&t, "GatherElements", 13, 2, ins, 1);
    gwr_layer_set_int(t.l, "axis", 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "index 3 (entry 1) is out of range for a dim of 3");
    int64_t id3[2] = {3, 1};
    ins[0] = f32(2, d, seq), ins[1] = i64(2, id3, ix);
    op_new(&t, "GatherElements", 13, 2, ins, 1);
    gwr_layer_set_int(t.l, "axis", 1);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "larger than the data's");
    ins[0] = f32(2, d, seq), ins[1] = i64(1, id, ix);
    op_new(&t, "GatherElements", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "indices have rank 1, data rank 2");

    /* GatherND, batch_dims 1: data [2,3], indices [2,1] -> [data[0][2], data[1][0]] */
    int64_t bd[2] = {2, 1};
    const int64_t bix[2] = {2, -3};
    ins[0] = f32(2, d, seq), ins[1] = i64(2, bd, bix);
    op_new(&t, "GatherND", 13, 2, ins, 1);
    gwr_layer_set_int(t.l, "batch_dims", 1);
    o = run1(&t, &rc);
    const float wn[2] = {2, 3};
    if (CHECK_OK(rc)) CHECK(same_f32(o, 2, wn) && gwr_value_rank(o) == 1);
    gwr_value_release(o);
    op_free(&t);
    /* rows by index: indices [1,1] -> [1, 3] */
    int64_t rd[2] = {1, 1};
    ins[0] = f32(2, d, seq), ins[1] = i64(2, rd, bix + 1);
    op_new(&t, "GatherND", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "index -3 (entry 0) is out of range for a dim of 2");
    int64_t md[2] = {1, 3};
    ins[0] = f32(2, d, seq), ins[1] = i64(2, md, ix);
    op_new(&t, "GatherND", 13, 2, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "the last dim of indices is 3, must be in [1, 2]");
    ins[0] = f32(2, d, seq), ins[1] = i64(2, bd, bix);
    op_new(&t, "GatherND", 13, 2, ins, 1);
    gwr_layer_set_int(t.l, "batch_dims", 2);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "batch_dims 2");
}

TEST(scatter) {
    one_op t;
    int64_t d[2] = {2, 3}, id[2] = {1, 3};
    const int64_t ix[3] = {1, 1, -3};
    const float up[3] = {10, 20, 30};
    /* add with duplicate indices */
    gwr_value *ins[3] = {f32(2, d, seq), i64(2, id, ix), f32(2, id, up)};
    op_new(&t, "ScatterElements", 16, 3, ins, 1);
    gwr_layer_set_int(t.l, "axis", 1);
    gwr_layer_set_string(t.l, "reduction", "add");
    gwr_value *o = NULL;
    if (CHECK_OK(op_run(&t, &o))) {
        const float w[6] = {30, 31, 2, 3, 4, 5};
        CHECK(same_f32(o, 6, w));
        CHECK(((const float *)gwr_value_cdata(t.in[0]))[0] == 0); /* the input is untouched */
    }
    gwr_value_release(o), o = NULL;
    op_free(&t);
    /* max on int64 */
    const int64_t di[6] = {5, -5, 0, 1, 2, 3}, ui[3] = {-7, 9, 4};
    ins[0] = i64(2, d, di), ins[1] = i64(2, id, ix), ins[2] = i64(2, id, ui);
    op_new(&t, "ScatterElements", 18, 3, ins, 1);
    gwr_layer_set_int(t.l, "axis", 1);
    gwr_layer_set_string(t.l, "reduction", "max");
    if (CHECK_OK(op_run(&t, &o))) {
        const int64_t w[6] = {5, 9, 0, 1, 2, 3};
        CHECK(same_i64(o, 6, w));
    }
    gwr_value_release(o), o = NULL;
    op_free(&t);

    const int64_t oob[3] = {0, 3, 0};
    ins[0] = f32(2, d, seq), ins[1] = i64(2, id, oob), ins[2] = f32(2, id, up);
    op_new(&t, "ScatterElements", 16, 3, ins, 1);
    gwr_layer_set_int(t.l, "axis", 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "index 3 (entry 1) is out of range for a dim of 3");
    int64_t ud[2] = {1, 2};
    ins[0] = f32(2, d, seq), ins[1] = i64(2, id, ix), ins[2] = f32(2, ud, up);
    op_new(&t, "ScatterElements", 16, 3, ins, 1);
    gwr_layer_set_int(t.l, "axis", 1);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "updates and indices differ in shape");
    ins[0] = f32(2, d, seq), ins[1] = i64(2, id, ix), ins[2] = f32(2, id, up);
    op_new(&t, "ScatterElements", 16, 3, ins, 1);
    gwr_layer_set_string(t.l, "reduction", "sum");
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "unknown reduction 'sum'");
    ins[0] = f32(2, d, seq), ins[1] = i64(2, id, ix), ins[2] = i64(2, id, ui);
    op_new(&t, "Scatter", 10, 3, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_TYPE, "updates are int64, data float32");

    /* ScatterND: rows, mul */
    int64_t nd[2] = {2, 1};
    const int64_t rows[2] = {1, -1};
    const float upd[6] = {2, 2, 2, 3, 3, 3};
    ins[0] = f32(2, d, seq), ins[1] = i64(2, nd, rows), ins[2] = f32(2, d, upd);
    op_new(&t, "ScatterND", 16, 3, ins, 1);
    gwr_layer_set_string(t.l, "reduction", "mul");
    if (CHECK_OK(op_run(&t, &o))) {
        const float w[6] = {0, 1, 2, 18, 24, 30};
        CHECK(same_f32(o, 6, w));
    }
    gwr_value_release(o), o = NULL;
    op_free(&t);
    /* strings, no reduction */
    const char *s6[6] = {"a", "b", "c", "d", "e", "f"}, *su[1] = {"Z"}, *ws[6] = {"a", "b", "c", "d", "Z", "f"};
    int64_t pd[2] = {1, 2}, one = 1;
    const int64_t pt[2] = {1, 1};
    ins[0] = strs(2, d, s6), ins[1] = i64(2, pd, pt), ins[2] = strs(1, &one, su);
    op_new(&t, "ScatterND", 16, 3, ins, 1);
    if (CHECK_OK(op_run(&t, &o))) CHECK(same_strs(o, 6, ws));
    gwr_value_release(o), o = NULL;
    op_free(&t);
    ins[0] = strs(2, d, s6), ins[1] = i64(2, pd, pt), ins[2] = strs(1, &one, su);
    op_new(&t, "ScatterND", 16, 3, ins, 1);
    gwr_layer_set_string(t.l, "reduction", "add");
    EXPECT_FAIL(&t, GWR_ERR_TYPE, "not supported for string");
    ins[0] = f32(2, d, seq), ins[1] = i64(2, nd, rows), ins[2] = f32(2, ud, upd);
    op_new(&t, "ScatterND", 16, 3, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_SHAPE, "updates must have shape");
    const int64_t big[2] = {2, 0};
    ins[0] = f32(2, d, seq), ins[1] = i64(2, nd, big), ins[2] = f32(2, d, upd);
    op_new(&t, "ScatterND", 16, 3, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "index 2 (entry 0) is out of range for a dim of 2");
}

/* Every element size through Transpose (the strided paths) and Tile (the
 * broadcast ones), checked byte by byte; strings through Expand and Pad. */
TEST(dtypes) {
    static const gwr_dtype dts[] = {GWR_BOOL, GWR_UINT8, GWR_FLOAT16, GWR_BFLOAT16, GWR_INT32, GWR_FLOAT64, GWR_COMPLEX128};
    int64_t d[2] = {3, 2};
    unsigned char bytes[6 * 16];
    for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (unsigned char)(i * 7 + 1);
    for (size_t q = 0; q < sizeof dts / sizeof *dts; q++) {
        size_t esz = gwr_dtype_size(dts[q]);
        one_op t;
        gwr_status rc;
        gwr_value *ins[2] = {val(dts[q], 2, d, bytes), NULL};
        op_new(&t, "Transpose", 13, 1, ins, 1);
        gwr_value *o = run1(&t, &rc);
        if (CHECK_OK(rc)) {
            const unsigned char *p = gwr_value_cdata(o);
            int bad = 0;
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 3; j++) bad += memcmp(p + (i * 3 + j) * esz, bytes + (j * 2 + i) * esz, esz) != 0;
            if (!CHECK_EQ_INT(bad, 0)) fprintf(stderr, "  Transpose of %s\n", gwr_dtype_name(dts[q]));
        }
        gwr_value_release(o);
        op_free(&t);
        int64_t rep[2] = {1, 2};
        ins[0] = val(dts[q], 2, d, bytes), ins[1] = i64s(2, rep);
        op_new(&t, "Tile", 13, 2, ins, 1);
        o = run1(&t, &rc);
        if (CHECK_OK(rc)) {
            const unsigned char *p = gwr_value_cdata(o);
            int bad = 0;
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 4; j++) bad += memcmp(p + (i * 4 + j) * esz, bytes + (i * 2 + j % 2) * esz, esz) != 0;
            if (!CHECK_EQ_INT(bad, 0)) fprintf(stderr, "  Tile of %s\n", gwr_dtype_name(dts[q]));
        }
        gwr_value_release(o);
        op_free(&t);
    }
    one_op t;
    gwr_status rc;
    const char *s2[2] = {"p", "q"}, *we[4] = {"p", "q", "p", "q"}, *wp[5] = {"", "p", "q", "", ""};
    int64_t two = 2, sh[2] = {2, 1}, pads[2] = {1, 2};
    gwr_value *ins[2] = {strs(1, &two, s2), i64s(2, sh)};
    op_new(&t, "Expand", 13, 2, ins, 1);
    gwr_value *o = run1(&t, &rc);
    int64_t wd[2] = {2, 2};
    if (CHECK_OK(rc)) CHECK(same_dims(o, 2, wd) && same_strs(o, 4, we));
    gwr_value_release(o);
    op_free(&t);
    ins[0] = strs(1, &two, s2), ins[1] = i64s(2, pads);
    op_new(&t, "Pad", 13, 2, ins, 1);
    o = run1(&t, &rc);
    if (CHECK_OK(rc)) CHECK(same_strs(o, 5, wp));
    gwr_value_release(o);
    op_free(&t);
    /* 4-bit elements are refused by the ops that index them, with a message */
    ins[0] = gwr_value_new(GWR_INT4, 2, d);
    op_new(&t, "Transpose", 13, 1, ins, 1);
    EXPECT_FAIL(&t, GWR_ERR_UNSUPPORTED, "dtype int4 is not supported");
}

TEST(missing_inputs) {
    static const char *const ops[] = {"Reshape", "Transpose", "Concat", "Slice", "Expand", "Tile", "Pad",
                                      "Gather", "GatherND", "ScatterND", "OneHot", "Range"};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        one_op t;
        gwr_value *ins[3] = {NULL, NULL, NULL};
        op_new(&t, ops[i], 13, 3, ins, 1);
        gwr_layer_set_int(t.l, "axis", 0);
        EXPECT_FAIL(&t, GWR_ERR_INVALID_ARG, "is missing");
    }
}

int main(void) {
    RUN(reshape);
    RUN(flatten_squeeze_unsqueeze);
    RUN(transpose);
    RUN(depth_space_round_trip);
    RUN(concat);
    RUN(split);
    RUN(slice);
    RUN(expand_tile);
    RUN(pad);
    RUN(shape_size_constant_range);
    RUN(eye_trilu_nonzero_onehot);
    RUN(reverse_sequence_compress);
    RUN(gather);
    RUN(gather_elements_nd);
    RUN(scatter);
    RUN(dtypes);
    RUN(missing_inputs);
    return check_report();
}
