/* test_exec_strings_ml.c - src/exec/kernels/strings.c and ml.c: StringSplit,
 * StringConcat, RegexFullMatch, LabelEncoder, TreeEnsemble, Binarizer and
 * ArrayFeatureExtractor on the corners ONNX's test data leaves out, with
 * answers worked out by hand from the spec (Python's str.split for
 * StringSplit), and bad input as an error naming the layer. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"

static gwr_layer *add(gwr_network *net, const char *op, const char *dom, int nin, gwr_tensor *const *in, int nout) {
    return gwr_network_add_layer(net, op, dom, "L", nin, in, nout, NULL);
}

/* Runs layer 'L' of net into outs (NULL on error, msg set); frees net. */
static gwr_status go(gwr_network *net, int nout, gwr_value **outs, char *msg, size_t size) {
    gwr_layer *l = gwr_network_find_layer(net, "L");
    for (int i = 0; i < nout; i++) gwr_network_mark_output(net, gwr_layer_output(l, i)), outs[i] = NULL;
    gwr_session *s = gwr_session_new_raw(net, NULL);
    gwr_status rc = GWR_ERR_STATE;
    msg[0] = 0;
    if (!s) snprintf(msg, size, "%s", gwr_last_errmsg());
    else if ((rc = gwr_session_run(s, 0, NULL, NULL, nout, NULL, outs))) snprintf(msg, size, "%s", gwr_session_errmsg(s));
    gwr_session_free(s);
    gwr_network_free(net);
    return rc;
}

static int str_at(const gwr_value *v, int64_t i, const char *want) {
    const gwr_bytes *b = (const gwr_bytes *)gwr_value_cdata(v) + i;
    return b->len == strlen(want) && (!b->len || !memcmp(b->data, want, b->len));
}

static gwr_tensor *strs(gwr_network *net, int64_t n, const char *const *s) {
    return gwr_constant(net, GWR_STRING, 1, &n, s);
}

#define CHECK_FAILS(net, nout, what)                       \
    do {                                                   \
        gwr_value *o_[4];                                  \
        char m_[512];                                      \
        CHECK(go(net, nout, o_, m_, sizeof m_) != GWR_OK); \
        CHECK_CONTAINS(m_, "layer 'L'");                   \
        CHECK_CONTAINS(m_, what);                          \
    } while (0)

/* ---- strings -------------------------------------------------------------------- */

/* No delimiter, maxsplit 1: Python's "  a b  c ".split(None, 1) is
 * ['a', 'b  c '] (the rest keeps its trailing whitespace); "".split() is []. */
TEST(split_whitespace_maxsplit) {
    gwr_network *net = gwr_network_new("m");
    static const char *x[2] = {"  a b  c ", ""};
    gwr_tensor *in = strs(net, 2, x);
    gwr_layer_set_int(add(net, "StringSplit", "", 1, &in, 2), "maxsplit", 1);
    gwr_value *o[2];
    char msg[512];
    if (!CHECK_OK(go(net, 2, o, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
    CHECK(gwr_value_rank(o[0]) == 2 && gwr_value_dims(o[0])[1] == 2);
    CHECK(str_at(o[0], 0, "a") && str_at(o[0], 1, "b  c ") && str_at(o[0], 2, "") && str_at(o[0], 3, ""));
    CHECK(((const int64_t *)gwr_value_cdata(o[1]))[0] == 2 && ((const int64_t *)gwr_value_cdata(o[1]))[1] == 0);
    gwr_value_release(o[0]), gwr_value_release(o[1]);
}

/* A two-byte delimiter at both ends: "--a----b--".split("--") is
 * ['', 'a', '', 'b', '']. */
TEST(split_multibyte_delimiter) {
    gwr_network *net = gwr_network_new("m");
    static const char *x[1] = {"--a----b--"};
    gwr_tensor *in = strs(net, 1, x);
    gwr_layer_set_string(add(net, "StringSplit", "", 1, &in, 2), "delimiter", "--");
    gwr_value *o[2];
    char msg[512];
    if (!CHECK_OK(go(net, 2, o, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
    CHECK(gwr_value_dims(o[0])[1] == 5);
    CHECK(str_at(o[0], 0, "") && str_at(o[0], 1, "a") && str_at(o[0], 2, "") && str_at(o[0], 3, "b") && str_at(o[0], 4, ""));
    gwr_value_release(o[0]), gwr_value_release(o[1]);
}

TEST(concat_no_broadcast) {
    gwr_network *net = gwr_network_new("m");
    static const char *a[2] = {"a", "b"}, *b[3] = {"x", "y", "z"};
    gwr_tensor *in[2] = {strs(net, 2, a), strs(net, 3, b)};
    add(net, "StringConcat", "", 2, in, 1);
    CHECK_FAILS(net, 1, "X and Y do not broadcast");
}

TEST(concat_numbers_refused) {
    gwr_network *net = gwr_network_new("m");
    static const char *a[1] = {"a"};
    gwr_tensor *in[2] = {strs(net, 1, a), gwr_constant_f32(net, 1.0f)};
    add(net, "StringConcat", "", 2, in, 1);
    CHECK_FAILS(net, 1, "Y must be a string tensor, not float32");
}

/* Whole-string matches: a lazy quantifier, classes inside brackets, an
 * escaped dot, alternation. */
static void regex_case(const char *pattern, int n, const char *const *x, const int *want) {
    gwr_network *net = gwr_network_new("m");
    gwr_tensor *in = strs(net, n, x);
    gwr_layer_set_string(add(net, "RegexFullMatch", "", 1, &in, 1), "pattern", pattern);
    gwr_value *o;
    char msg[512];
    if (!CHECK_OK(go(net, 1, &o, msg, sizeof msg))) return (void)fprintf(stderr, "  %s: %s\n", pattern, msg);
    for (int i = 0; i < n; i++)
        if (!CHECK(((const uint8_t *)gwr_value_cdata(o))[i] == want[i])) fprintf(stderr, "  '%s' on '%s'\n", pattern, x[i]);
    gwr_value_release(o);
}

TEST(regex_subset) {
    static const char *x[5] = {"aaab", "ab", "b", "a.b", "a-b_9"};
    regex_case("a+?b", 5, x, (const int[]){1, 1, 0, 0, 0});
    regex_case("[\\w\\-]+", 5, x, (const int[]){1, 1, 1, 0, 1});
    regex_case("a\\.b|b", 5, x, (const int[]){0, 0, 1, 1, 0});
    regex_case("\\w-\\w_\\d", 5, x, (const int[]){0, 0, 0, 0, 1});
    regex_case("[^\\d]*", 5, x, (const int[]){1, 1, 1, 1, 0});
}

TEST(regex_refused) {
    static const char *pats[3] = {"(?i)abc", "\\pL", "[\\W]"};
    static const char *whys[3] = {"'(?' groups and flags are not supported", "escape '\\p' is not supported",
                                  "'\\W' inside brackets is not supported"};
    for (int i = 0; i < 3; i++) {
        gwr_network *net = gwr_network_new("m");
        static const char *x[1] = {"abc"};
        gwr_tensor *in = strs(net, 1, x);
        gwr_layer_set_string(add(net, "RegexFullMatch", "", 1, &in, 1), "pattern", pats[i]);
        CHECK_FAILS(net, 1, whys[i]);
    }
}

/* ---- ai.onnx.ml --------------------------------------------------------------- */

/* Repeated keys: the last wins; a NaN key matches a NaN input. */
TEST(label_encoder_repeats_and_nan) {
    gwr_network *net = gwr_network_new("m");
    static const float x[3] = {1.0f, NAN, 2.0f};
    int64_t n = 3;
    gwr_tensor *in = gwr_constant(net, GWR_FLOAT32, 1, &n, x);
    gwr_layer *l = add(net, "LabelEncoder", "ai.onnx.ml", 1, &in, 1);
    static const float keys[3] = {1.0f, NAN, 1.0f};
    static const int64_t vals[3] = {10, 20, 30};
    gwr_layer_set_floats(l, "keys_floats", keys, 3);
    gwr_layer_set_ints(l, "values_int64s", vals, 3);
    gwr_value *o;
    char msg[512];
    if (!CHECK_OK(go(net, 1, &o, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
    const int64_t *y = gwr_value_cdata(o);
    CHECK(y[0] == 30 && y[1] == 20 && y[2] == -1); /* default_int64 is -1 */
    gwr_value_release(o);
}

TEST(label_encoder_bad) {
    gwr_network *net = gwr_network_new("m");
    static const char *x[1] = {"a"};
    gwr_tensor *in = strs(net, 1, x);
    gwr_layer *l = add(net, "LabelEncoder", "ai.onnx.ml", 1, &in, 1);
    static const char *keys[2] = {"a", "b"};
    static const int64_t vals[1] = {1};
    gwr_layer_set_strings(l, "keys_strings", keys, 2);
    gwr_layer_set_ints(l, "values_int64s", vals, 1);
    CHECK_FAILS(net, 1, "2 keys for 1 values");
    net = gwr_network_new("m");
    in = gwr_constant_f32(net, 1.0f);
    l = add(net, "LabelEncoder", "ai.onnx.ml", 1, &in, 1);
    gwr_layer_set_strings(l, "keys_strings", keys, 1);
    gwr_layer_set_ints(l, "values_int64s", vals, 1);
    CHECK_FAILS(net, 1, "input of float32 for keys of string");
}

/* One tree (x0 <= 0.5 ? leaf 0 : x1 > 2 ? leaf 1 : leaf 2), two targets. */
static gwr_layer *tree(gwr_network *net, int64_t rows, const float *x, int64_t falsenode1) {
    int64_t d[2] = {rows, 2};
    gwr_tensor *in = gwr_constant(net, GWR_FLOAT32, 2, d, x);
    gwr_layer *l = add(net, "TreeEnsemble", "ai.onnx.ml", 1, &in, 1);
    int64_t nn = 2, nl = 3;
    static const uint8_t modes[2] = {0, 3};
    static const float splits[2] = {0.5f, 2.0f}, weights[3] = {1.0f, 2.0f, 4.0f};
    gwr_weights wm = {.dtype = GWR_UINT8, .rank = 1, .dims = &nn, .data = modes, .nbytes = 2};
    gwr_weights ws = {.dtype = GWR_FLOAT32, .rank = 1, .dims = &nn, .data = splits, .nbytes = 8};
    gwr_weights ww = {.dtype = GWR_FLOAT32, .rank = 1, .dims = &nl, .data = weights, .nbytes = 12};
    gwr_buffer *b1 = gwr_buffer_new_copy(modes, 2), *b2 = gwr_buffer_new_copy(splits, 8), *b3 = gwr_buffer_new_copy(weights, 12);
    wm.buffer = b1, wm.data = gwr_buffer_data(b1), ws.buffer = b2, ws.data = gwr_buffer_data(b2), ww.buffer = b3, ww.data = gwr_buffer_data(b3);
    gwr_layer_set_tensor(l, "nodes_modes", &wm), gwr_layer_set_tensor(l, "nodes_splits", &ws), gwr_layer_set_tensor(l, "leaf_weights", &ww);
    gwr_buffer_release(b1), gwr_buffer_release(b2), gwr_buffer_release(b3);
    gwr_layer_set_ints(l, "nodes_featureids", (const int64_t[]){0, 1}, 2);
    gwr_layer_set_ints(l, "nodes_truenodeids", (const int64_t[]){0, 1}, 2);
    gwr_layer_set_ints(l, "nodes_trueleafs", (const int64_t[]){1, 1}, 2);
    gwr_layer_set_ints(l, "nodes_falsenodeids", (const int64_t[]){1, falsenode1}, 2);
    gwr_layer_set_ints(l, "nodes_falseleafs", (const int64_t[]){0, 1}, 2);
    gwr_layer_set_ints(l, "leaf_targetids", (const int64_t[]){0, 1, 1}, 3);
    gwr_layer_set_ints(l, "tree_roots", (const int64_t[]){0}, 1);
    gwr_layer_set_int(l, "n_targets", 2);
    return l;
}

TEST(tree_ensemble_walk) {
    gwr_network *net = gwr_network_new("m");
    static const float x[6] = {0.0f, 9.0f, 1.0f, 3.0f, 1.0f, 1.0f};
    tree(net, 3, x, 2);
    gwr_value *o;
    char msg[512];
    if (!CHECK_OK(go(net, 1, &o, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
    const float *y = gwr_value_cdata(o);
    /* row 0: leaf 0 (target 0, 1); row 1: leaf 1 (target 1, 2); row 2: leaf 2 (target 1, 4) */
    CHECK(y[0] == 1 && y[1] == 0 && y[2] == 0 && y[3] == 2 && y[4] == 0 && y[5] == 4);
    gwr_value_release(o);
}

TEST(tree_ensemble_bad) {
    gwr_network *net = gwr_network_new("m");
    static const float x[2] = {1.0f, 1.0f};
    tree(net, 1, x, 7); /* a false leaf past the three leaves */
    CHECK_FAILS(net, 1, "node 1 has a branch out of range");
    net = gwr_network_new("m");
    gwr_layer_set_int(tree(net, 1, x, 2), "post_transform", 2);
    CHECK_FAILS(net, 1, "post_transform 2");
}

TEST(array_feature_extractor) {
    gwr_network *net = gwr_network_new("m");
    int64_t n = 3, m = 2;
    static const int64_t idx[2] = {2, 0};
    gwr_tensor *in[2] = {gwr_constant(net, GWR_FLOAT32, 1, &n, (const float[]){5, 6, 7}), gwr_constant(net, GWR_INT64, 1, &m, idx)};
    add(net, "ArrayFeatureExtractor", "ai.onnx.ml", 2, in, 1);
    gwr_value *o;
    char msg[512];
    if (!CHECK_OK(go(net, 1, &o, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
    CHECK(gwr_value_rank(o) == 2 && gwr_value_dims(o)[0] == 1 && gwr_value_dims(o)[1] == 2);
    CHECK(((const float *)gwr_value_cdata(o))[0] == 7 && ((const float *)gwr_value_cdata(o))[1] == 5);
    gwr_value_release(o);
    net = gwr_network_new("m");
    gwr_tensor *in2[2] = {gwr_constant(net, GWR_FLOAT32, 1, &n, (const float[]){5, 6, 7}), gwr_constant_i64(net, 3)};
    add(net, "ArrayFeatureExtractor", "ai.onnx.ml", 2, in2, 1);
    CHECK_FAILS(net, 1, "index 3 is out of range for a last axis of 3");
}

TEST(binarizer) {
    gwr_network *net = gwr_network_new("m");
    int64_t n = 3;
    gwr_tensor *in = gwr_constant(net, GWR_FLOAT32, 1, &n, (const float[]){-1, 0.5f, 2});
    gwr_layer_set_float(add(net, "Binarizer", "ai.onnx.ml", 1, &in, 1), "threshold", 0.5f);
    gwr_value *o;
    char msg[512];
    if (!CHECK_OK(go(net, 1, &o, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
    const float *y = gwr_value_cdata(o);
    CHECK(y[0] == 0 && y[1] == 0 && y[2] == 1); /* strictly greater */
    gwr_value_release(o);
}

int main(void) {
    RUN(split_whitespace_maxsplit);
    RUN(split_multibyte_delimiter);
    RUN(concat_no_broadcast);
    RUN(concat_numbers_refused);
    RUN(regex_subset);
    RUN(regex_refused);
    RUN(label_encoder_repeats_and_nan);
    RUN(label_encoder_bad);
    RUN(tree_ensemble_walk);
    RUN(tree_ensemble_bad);
    RUN(array_feature_extractor);
    RUN(binarizer);
    return check_report();
}
