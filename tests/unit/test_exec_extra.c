/* test_exec_extra.c - src/exec/kernels/text.c, gather.c, image.c: StringNormalizer, Unique,
 * NonMaxSuppression, TfIdfVectorizer, RoiAlign, GridSample. ONNX's test
 * data covers the common cases; here are the corners it does not (empty
 * inputs, everything filtered, NaN, infinities, ties, one-pixel images,
 * duplicates in a pool) with hand-computed answers, and every bad input as
 * an error that names the layer and the problem. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"

/* A layer 'L' of op over the inputs (NULL: absent). */
static gwr_layer *add(gwr_network *net, const char *op, int nin, gwr_tensor *const *in, int nout) {
    return gwr_network_add_layer(net, op, "", "L", nin, in, nout, NULL);
}

/* Runs layer 'L' of net, its first nout outputs into outs (NULL on error,
 * with the message in msg), and frees net. */
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

static void release(int n, gwr_value **v) {
    for (int i = 0; i < n; i++) gwr_value_release(v[i]), v[i] = NULL;
}

/* The dims of v equal want (rank n). */
static int dims_are(const gwr_value *v, int n, const int64_t *want) {
    if (gwr_value_rank(v) != n) return 0;
    for (int i = 0; i < n; i++)
        if (gwr_value_dims(v)[i] != want[i]) return 0;
    return 1;
}

static int str_at(const gwr_value *v, int64_t i, const char *want) {
    const gwr_bytes *b = (const gwr_bytes *)gwr_value_cdata(v) + i;
    return b->len == strlen(want) && (!b->len || !memcmp(b->data, want, b->len));
}

static gwr_tensor *strs(gwr_network *net, int rank, const int64_t *dims, const char *const *s) {
    static const char *none[1] = {""};
    return gwr_constant(net, GWR_STRING, rank, dims, s ? (const void *)s : (const void *)none);
}

static gwr_tensor *f32s(gwr_network *net, int rank, const int64_t *dims, const float *v) {
    return gwr_constant(net, GWR_FLOAT32, rank, dims, v);
}

static gwr_tensor *i64s(gwr_network *net, int rank, const int64_t *dims, const int64_t *v) {
    return gwr_constant(net, GWR_INT64, rank, dims, v);
}

/* Expects a failure whose message names layer 'L' and holds `what`. */
#define CHECK_FAILS(net, nout, what)                                   \
    do {                                                               \
        gwr_value *o_[4];                                              \
        char m_[512];                                                  \
        CHECK(go(net, nout, o_, m_, sizeof m_) != GWR_OK);             \
        CHECK_CONTAINS(m_, "layer 'L'");                               \
        CHECK_CONTAINS(m_, what);                                      \
    } while (0)

/* ---- StringNormalizer ------------------------------------------------------ */

TEST(strnorm_all_filtered_two_dims) {
    gwr_network *net = gwr_network_new("m");
    static const char *x[3] = {"Monday", "MONDAY", "monday"};
    static const int64_t d[2] = {1, 3};
    gwr_tensor *in = strs(net, 2, d, x);
    gwr_layer *l = add(net, "StringNormalizer", 1, &in, 1);
    static const char *sw[1] = {"monDAY"};
    gwr_layer_set_strings(l, "stopwords", sw, 1);
    gwr_value *y;
    char msg[512];
    if (!CHECK_OK(go(net, 1, &y, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
    static const int64_t want[2] = {1, 1};
    CHECK(dims_are(y, 2, want));
    CHECK(str_at(y, 0, ""));
    gwr_value_release(y);
}

TEST(strnorm_empty_input) {
    gwr_network *net = gwr_network_new("m");
    static const int64_t d[1] = {0};
    gwr_tensor *in = strs(net, 1, d, NULL);
    gwr_layer *l = add(net, "StringNormalizer", 1, &in, 1);
    gwr_layer_set_string(l, "case_change_action", "UPPER");
    gwr_value *y;
    char msg[512];
    if (!CHECK_OK(go(net, 1, &y, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
    static const int64_t want[1] = {1};
    CHECK(dims_are(y, 1, want));
    CHECK(str_at(y, 0, ""));
    gwr_value_release(y);
}

/* Two-byte UTF-8 letters change case and match stop words case-blind; the
 * sharp s (no two-byte capital) and bytes that are not UTF-8 stay. */
TEST(strnorm_utf8) {
    gwr_network *net = gwr_network_new("m");
    static const char *x[5] = {"Caf\xc3\xa9", "\xc3\x89" "COLE", "Stra\xc3\x9f" "e",
                               "\xcf\x83\xce\xbf\xcf\x86\xce\xaf\xce\xb1 \xc5\x82\xc3\xb3" "d\xc5\xba", "bad\xc3"};
    static const int64_t d[1] = {5};
    gwr_tensor *in = strs(net, 1, d, x);
    gwr_layer *l = add(net, "StringNormalizer", 1, &in, 1);
    static const char *sw[1] = {"\xc3\xa9" "cole"};
    gwr_layer_set_strings(l, "stopwords", sw, 1);
    gwr_layer_set_string(l, "case_change_action", "UPPER");
    gwr_value *y;
    char msg[512];
    if (!CHECK_OK(go(net, 1, &y, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
    static const int64_t want[1] = {4};
    if (!CHECK(dims_are(y, 1, want))) return gwr_value_release(y);
    CHECK(str_at(y, 0, "CAF\xc3\x89"));
    CHECK(str_at(y, 1, "STRA\xc3\x9f" "E"));
    CHECK(str_at(y, 2, "\xce\xa3\xce\x9f\xce\xa6\xce\x8a\xce\x91 \xc5\x81\xc3\x93" "D\xc5\xb9"));
    CHECK(str_at(y, 3, "BAD\xc3"));
    gwr_value_release(y);
}

TEST(strnorm_errors) {
    static const char *x[6] = {"a", "b", "c", "d", "e", "f"};
    static const int64_t d23[2] = {2, 3}, d1[1] = {1};
    gwr_network *net = gwr_network_new("m");
    gwr_tensor *in = strs(net, 2, d23, x);
    add(net, "StringNormalizer", 1, &in, 1);
    CHECK_FAILS(net, 1, "X must be [C] or [1, C]");

    net = gwr_network_new("m");
    in = strs(net, 1, d1, x);
    gwr_layer_set_string(add(net, "StringNormalizer", 1, &in, 1), "case_change_action", "lower");
    CHECK_FAILS(net, 1, "case_change_action 'lower' is not LOWER, UPPER or NONE");

    net = gwr_network_new("m");
    in = strs(net, 1, d1, x);
    gwr_layer_set_string(add(net, "StringNormalizer", 1, &in, 1), "locale", "tr_TR.UTF-8");
    CHECK_FAILS(net, 1, "locale 'tr_TR.UTF-8'");

    net = gwr_network_new("m");
    static const float f = 1;
    in = f32s(net, 1, d1, &f);
    add(net, "StringNormalizer", 1, &in, 1);
    CHECK_FAILS(net, 1, "X must be string, not float32");
}

/* ---- Unique ------------------------------------------------------------------ */

static int i64_are(const gwr_value *v, int n, const int64_t *want) {
    if (gwr_value_numel(v) != n || gwr_value_dtype(v) != GWR_INT64) return 0;
    for (int i = 0; i < n; i++)
        if (((const int64_t *)gwr_value_cdata(v))[i] != want[i]) return 0;
    return 1;
}

/* NaNs are one value, after every number; -0 and 0 are one value, the
 * first met. */
TEST(unique_nan_and_signed_zero) {
    gwr_network *net = gwr_network_new("m");
    const float x[5] = {NAN, 1, NAN, -0.0f, 0.0f};
    static const int64_t d[1] = {5};
    gwr_tensor *in = f32s(net, 1, d, x);
    add(net, "Unique", 1, &in, 4);
    gwr_value *o[4];
    char msg[512];
    if (!CHECK_OK(go(net, 4, o, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
    const float *y = gwr_value_cdata(o[0]);
    if (CHECK_EQ_INT(gwr_value_numel(o[0]), 3)) {
        CHECK(y[0] == 0 && signbit(y[0]));
        CHECK(y[1] == 1);
        CHECK(isnan(y[2]));
    }
    static const int64_t ix[3] = {3, 1, 0}, inv[5] = {2, 1, 2, 0, 0}, cnt[3] = {2, 1, 2};
    CHECK(i64_are(o[1], 3, ix));
    CHECK(i64_are(o[2], 5, inv));
    CHECK(i64_are(o[3], 3, cnt));
    release(4, o);
}

TEST(unique_strings_unsorted) {
    gwr_network *net = gwr_network_new("m");
    static const char *x[5] = {"b", "", "ab", "b", ""};
    static const int64_t d[1] = {5};
    gwr_tensor *in = strs(net, 1, d, x);
    gwr_layer_set_int(add(net, "Unique", 1, &in, 4), "sorted", 0);
    gwr_value *o[4];
    char msg[512];
    if (!CHECK_OK(go(net, 4, o, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
    if (CHECK_EQ_INT(gwr_value_numel(o[0]), 3)) {
        CHECK(str_at(o[0], 0, "b"));
        CHECK(str_at(o[0], 1, ""));
        CHECK(str_at(o[0], 2, "ab"));
    }
    static const int64_t inv[5] = {0, 1, 2, 0, 1}, cnt[3] = {2, 2, 1};
    CHECK(i64_are(o[2], 5, inv));
    CHECK(i64_are(o[3], 3, cnt));
    release(4, o);
}

TEST(unique_empty) {
    gwr_network *net = gwr_network_new("m");
    static const int64_t d[1] = {0}, dummy = 0;
    gwr_tensor *in = i64s(net, 1, d, &dummy);
    add(net, "Unique", 1, &in, 4);
    gwr_value *o[4];
    char msg[512];
    if (!CHECK_OK(go(net, 4, o, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
    for (int i = 0; i < 4; i++) CHECK(dims_are(o[i], 1, d));
    release(4, o);
}

/* Slices with no elements along an axis of 3: all equal, one unique. */
TEST(unique_empty_slices) {
    gwr_network *net = gwr_network_new("m");
    static const int64_t d[2] = {3, 0}, dummy = 0;
    gwr_tensor *in = i64s(net, 2, d, &dummy);
    gwr_layer_set_int(add(net, "Unique", 1, &in, 4), "axis", 0);
    gwr_value *o[4];
    char msg[512];
    if (!CHECK_OK(go(net, 4, o, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
    static const int64_t yd[2] = {1, 0}, ix[1] = {0}, inv[3] = {0, 0, 0}, cnt[1] = {3};
    CHECK(dims_are(o[0], 2, yd));
    CHECK(i64_are(o[1], 1, ix));
    CHECK(i64_are(o[2], 3, inv));
    CHECK(i64_are(o[3], 1, cnt));
    release(4, o);
}

/* Only Y asked for: the optional outputs are not needed. */
TEST(unique_y_only) {
    gwr_network *net = gwr_network_new("m");
    static const int64_t x[4] = {3, 1, 3, 2}, d[1] = {4};
    gwr_tensor *in = i64s(net, 1, d, x);
    add(net, "Unique", 1, &in, 1);
    gwr_value *y;
    char msg[512];
    if (!CHECK_OK(go(net, 1, &y, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
    static const int64_t want[3] = {1, 2, 3};
    CHECK(i64_are(y, 3, want));
    gwr_value_release(y);
}

TEST(unique_errors) {
    static const int64_t x[4] = {0}, d[2] = {2, 2};
    gwr_network *net = gwr_network_new("m");
    gwr_tensor *in = i64s(net, 2, d, x);
    gwr_layer_set_int(add(net, "Unique", 1, &in, 4), "axis", 2);
    CHECK_FAILS(net, 4, "axis 2 is out of range for rank 2");

    net = gwr_network_new("m");
    in = i64s(net, 0, NULL, x);
    gwr_layer_set_int(add(net, "Unique", 1, &in, 1), "axis", 0);
    CHECK_FAILS(net, 1, "axis 0 is out of range for rank 0");

    net = gwr_network_new("m");
    in = i64s(net, 2, d, x);
    gwr_layer_set_int(add(net, "Unique", 1, &in, 1), "sorted", 2);
    CHECK_FAILS(net, 1, "sorted must be 0 or 1, not 2");

    net = gwr_network_new("m");
    in = gwr_constant(net, GWR_INT4, 1, d, x);
    add(net, "Unique", 1, &in, 1);
    CHECK_FAILS(net, 1, "X of dtype int4 is not supported");
}

/* ---- NonMaxSuppression ---------------------------------------------------------- */

/* boxes 0 and 1 overlap (IoU 1/1.05), box 2 has no area, box 3 stands
 * alone; box 3's score is NaN */
static gwr_layer *nms_net(gwr_network *net, int nin, const float *iou, const float *score_thr, const int64_t *maxout) {
    static const float b[16] = {0, 0, 1, 1, 0, 0, 1, 1.05f, 0, 0, 0, 0, 2, 2, 3, 3};
    static const int64_t db[3] = {1, 4, 4}, ds[3] = {1, 1, 4};
    const float s[4] = {0.9f, 0.8f, 0.95f, NAN};
    gwr_tensor *in[5] = {f32s(net, 3, db, b), f32s(net, 3, ds, s), maxout ? i64s(net, 0, NULL, maxout) : NULL,
                         iou ? f32s(net, 0, NULL, iou) : NULL, score_thr ? f32s(net, 0, NULL, score_thr) : NULL};
    return add(net, "NonMaxSuppression", nin, in, 1);
}

TEST(nms_zero_area_and_nan) {
    static const float iou = 0.5f, thr = 0.5f;
    static const int64_t ten = 10;
    gwr_network *net = gwr_network_new("m");
    nms_net(net, 4, &iou, NULL, &ten);
    gwr_value *y;
    char msg[512];
    if (!CHECK_OK(go(net, 1, &y, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
    /* no area: kept, suppresses nothing; NaN score: last */
    static const int64_t want[9] = {0, 0, 2, 0, 0, 0, 0, 0, 3}, d[2] = {3, 3};
    CHECK(dims_are(y, 2, d));
    CHECK(i64_are(y, 9, want));
    gwr_value_release(y);

    net = gwr_network_new("m");
    nms_net(net, 5, &iou, &thr, &ten);
    if (!CHECK_OK(go(net, 1, &y, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
    CHECK(i64_are(y, 6, want)); /* the NaN score does not pass the threshold */
    gwr_value_release(y);
}

TEST(nms_no_output) {
    static const int64_t neg = -4, d[2] = {0, 3};
    gwr_network *net = gwr_network_new("m");
    nms_net(net, 2, NULL, NULL, NULL); /* max_output_boxes_per_class absent: 0 */
    gwr_value *y;
    char msg[512];
    if (!CHECK_OK(go(net, 1, &y, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
    CHECK(dims_are(y, 2, d));
    gwr_value_release(y);

    net = gwr_network_new("m");
    nms_net(net, 3, NULL, NULL, &neg);
    if (!CHECK_OK(go(net, 1, &y, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
    CHECK(dims_are(y, 2, d));
    gwr_value_release(y);
}

TEST(nms_errors) {
    static const float bad_iou = 1.5f;
    static const int64_t one = 1;
    gwr_network *net = gwr_network_new("m");
    nms_net(net, 4, &bad_iou, NULL, &one);
    CHECK_FAILS(net, 1, "iou_threshold 1.5 is not in [0, 1]");

    net = gwr_network_new("m");
    gwr_layer_set_int(nms_net(net, 2, NULL, NULL, NULL), "center_point_box", 2);
    CHECK_FAILS(net, 1, "center_point_box must be 0 or 1, not 2");

    static const float b[8] = {0}, s[3] = {0};
    static const int64_t db[3] = {1, 2, 4}, ds[3] = {1, 1, 3}, db2[2] = {2, 4};
    net = gwr_network_new("m");
    gwr_tensor *in[2] = {f32s(net, 3, db, b), f32s(net, 3, ds, s)};
    add(net, "NonMaxSuppression", 2, in, 1);
    CHECK_FAILS(net, 1, "scores [1, 1, 3] do not match boxes [1, 2, 4]");

    net = gwr_network_new("m");
    in[0] = f32s(net, 2, db2, b), in[1] = f32s(net, 3, ds, s);
    add(net, "NonMaxSuppression", 2, in, 1);
    CHECK_FAILS(net, 1, "boxes must be [num_batches, spatial_dimension, 4]");

    net = gwr_network_new("m");
    in[0] = f32s(net, 3, db, b);
    add(net, "NonMaxSuppression", 1, in, 1);
    CHECK_FAILS(net, 1, "input 1 (scores) is missing");
}

/* ---- TfIdfVectorizer -------------------------------------------------------------- */

static void tfidf_attrs(gwr_layer *l, const char *mode, int64_t mn, int64_t mx, int64_t skip) {
    gwr_layer_set_string(l, "mode", mode);
    gwr_layer_set_int(l, "min_gram_length", mn);
    gwr_layer_set_int(l, "max_gram_length", mx);
    gwr_layer_set_int(l, "max_skip_count", skip);
}

/* pool {5, 5}: the same 1-gram twice; the later one counts */
TEST(tfidf_duplicate_and_empty) {
    static const int64_t x[3] = {5, 5, 5}, d3[1] = {3}, d0[1] = {0}, pool[2] = {5, 5}, counts[1] = {0}, idx[2] = {0, 1};
    for (int empty = 0; empty < 2; empty++) {
        gwr_network *net = gwr_network_new("m");
        gwr_tensor *in = i64s(net, 1, empty ? d0 : d3, x);
        gwr_layer *l = add(net, "TfIdfVectorizer", 1, &in, 1);
        tfidf_attrs(l, "TF", 1, 1, 0);
        gwr_layer_set_ints(l, "pool_int64s", pool, 2);
        gwr_layer_set_ints(l, "ngram_counts", counts, 1);
        gwr_layer_set_ints(l, "ngram_indexes", idx, 2);
        gwr_value *y;
        char msg[512];
        if (!CHECK_OK(go(net, 1, &y, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
        static const int64_t d2[1] = {2};
        CHECK(dims_are(y, 1, d2));
        const float *v = gwr_value_cdata(y);
        CHECK(v[0] == 0);
        CHECK(v[1] == (empty ? 0 : 3));
        gwr_value_release(y);
    }
}

/* Strings: "c" is not in the pool and breaks every n-gram through it;
 * TFIDF weights belong to pool n-grams, not to output columns. */
TEST(tfidf_strings_weights) {
    static const char *x[5] = {"a", "b", "c", "a", "b"};
    static const char *pool[4] = {"a", "b", "a", "b"};
    static const int64_t d[1] = {5}, counts[2] = {0, 2}, idx[3] = {2, 0, 1};
    gwr_network *net = gwr_network_new("m");
    gwr_tensor *in = strs(net, 1, d, x);
    gwr_layer *l = add(net, "TfIdfVectorizer", 1, &in, 1);
    tfidf_attrs(l, "TFIDF", 1, 2, 0);
    gwr_layer_set_strings(l, "pool_strings", pool, 4);
    gwr_layer_set_ints(l, "ngram_counts", counts, 2);
    gwr_layer_set_ints(l, "ngram_indexes", idx, 3);
    static const float w[3] = {0.5f, 2, 10};
    gwr_layer_set_floats(l, "weights", w, 3);
    gwr_value *y;
    char msg[512];
    if (!CHECK_OK(go(net, 1, &y, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
    const float *v = gwr_value_cdata(y);
    /* a: 2 x 0.5 -> column 2; b: 2 x 2 -> column 0; "a b": 2 x 10 -> column 1 */
    if (CHECK_EQ_INT(gwr_value_numel(y), 3)) {
        CHECK(v[0] == 4);
        CHECK(v[1] == 20);
        CHECK(v[2] == 1);
    }
    gwr_value_release(y);
}

TEST(tfidf_errors) {
    static const int64_t x[4] = {1, 2, 3, 4}, d[1] = {4}, d3[3] = {1, 2, 2}, pool[3] = {1, 2, 3}, c0[1] = {0}, c1[1] = {1},
                         c02[2] = {0, 2}, idx3[3] = {0, 1, 2}, idx2[2] = {0, 1};
    struct {
        const char *mode;
        int64_t mn, mx;
        const int64_t *counts;
        int ncounts;
        const int64_t *idx;
        int nidx;
        const char *msg;
    } cases[] = {
        {"TFX", 1, 1, c0, 1, idx3, 3, "mode 'TFX' is not TF, IDF or TFIDF"},
        {"TF", 2, 1, c0, 1, idx3, 3, "gram lengths [2, 1] must satisfy 1 <= min <= max"},
        {"TF", 1, 1, c0, 1, idx2, 2, "ngram_indexes has 2 entries, the pool 3 n-grams"},
        {"TF", 1, 2, c1, 1, idx3, 3, "ngram_counts must rise from 0"},
        {"TF", 1, 2, c02, 2, idx3, 3, "the 2-grams span 1 pool entries, not a multiple of 2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        gwr_network *net = gwr_network_new("m");
        gwr_tensor *in = i64s(net, 1, d, x);
        gwr_layer *l = add(net, "TfIdfVectorizer", 1, &in, 1);
        tfidf_attrs(l, cases[i].mode, cases[i].mn, cases[i].mx, 0);
        gwr_layer_set_ints(l, "pool_int64s", pool, 3);
        gwr_layer_set_ints(l, "ngram_counts", cases[i].counts, cases[i].ncounts);
        gwr_layer_set_ints(l, "ngram_indexes", cases[i].idx, cases[i].nidx);
        CHECK_FAILS(net, 1, cases[i].msg);
    }
    /* a rank-3 X; strings against an int pool; no mode; both pools; bad weights */
    gwr_network *net = gwr_network_new("m");
    gwr_tensor *in = i64s(net, 3, d3, x);
    gwr_layer *l = add(net, "TfIdfVectorizer", 1, &in, 1);
    tfidf_attrs(l, "TF", 1, 1, 0);
    CHECK_FAILS(net, 1, "X must be [C] or [N, C], not rank 3");

    static const char *sx[1] = {"a"};
    static const int64_t d1[1] = {1};
    net = gwr_network_new("m");
    in = strs(net, 1, d1, sx);
    l = add(net, "TfIdfVectorizer", 1, &in, 1);
    tfidf_attrs(l, "TF", 1, 1, 0);
    gwr_layer_set_ints(l, "pool_int64s", pool, 3);
    gwr_layer_set_ints(l, "ngram_counts", c0, 1);
    gwr_layer_set_ints(l, "ngram_indexes", idx3, 3);
    CHECK_FAILS(net, 1, "X of dtype string needs pool_strings");

    net = gwr_network_new("m");
    in = i64s(net, 1, d, x);
    l = add(net, "TfIdfVectorizer", 1, &in, 1);
    gwr_layer_set_int(l, "min_gram_length", 1);
    CHECK_FAILS(net, 1, "attribute mode is missing");

    net = gwr_network_new("m");
    in = i64s(net, 1, d, x);
    l = add(net, "TfIdfVectorizer", 1, &in, 1);
    tfidf_attrs(l, "TF", 1, 1, 0);
    gwr_layer_set_ints(l, "pool_int64s", pool, 3);
    gwr_layer_set_strings(l, "pool_strings", sx, 1);
    gwr_layer_set_ints(l, "ngram_counts", c0, 1);
    gwr_layer_set_ints(l, "ngram_indexes", idx3, 3);
    CHECK_FAILS(net, 1, "exactly one of pool_int64s and pool_strings");

    net = gwr_network_new("m");
    in = i64s(net, 1, d, x);
    l = add(net, "TfIdfVectorizer", 1, &in, 1);
    tfidf_attrs(l, "IDF", 1, 1, 0);
    gwr_layer_set_ints(l, "pool_int64s", pool, 3);
    gwr_layer_set_ints(l, "ngram_counts", c0, 1);
    gwr_layer_set_ints(l, "ngram_indexes", idx3, 3);
    static const float w2[2] = {1, 1};
    gwr_layer_set_floats(l, "weights", w2, 2);
    CHECK_FAILS(net, 1, "weights has 2 entries, ngram_indexes 3");

    static const int64_t huge[3] = {0, 1, (int64_t)1 << 40};
    net = gwr_network_new("m");
    in = i64s(net, 1, d, x);
    l = add(net, "TfIdfVectorizer", 1, &in, 1);
    tfidf_attrs(l, "TF", 1, 1, 0);
    gwr_layer_set_ints(l, "pool_int64s", pool, 3);
    gwr_layer_set_ints(l, "ngram_counts", c0, 1);
    gwr_layer_set_ints(l, "ngram_indexes", huge, 3);
    CHECK_FAILS(net, 1, "ngram_indexes[2] = 1099511627776 is out of range");
}

/* ---- RoiAlign --------------------------------------------------------------------- */

static const float img22[4] = {1, 2, 3, 4};

static gwr_layer *roi_net(gwr_network *net, const float *roi, int64_t batch, const int64_t *xdims) {
    static const int64_t dx[4] = {1, 1, 2, 2}, dr[2] = {1, 4}, db[1] = {1};
    static const float zeros[8] = {0};
    gwr_tensor *in[3] = {f32s(net, 4, xdims ? xdims : dx, xdims ? zeros : img22), f32s(net, 2, dr, roi), i64s(net, 1, db, &batch)};
    gwr_layer *l = add(net, "RoiAlign", 3, in, 1);
    gwr_layer_set_string(l, "coordinate_transformation_mode", "output_half_pixel");
    gwr_layer_set_int(l, "sampling_ratio", 1);
    return l;
}

/* One sample at (0.5, 0.5): each corner weighs 1/4. avg: their mean; max:
 * the largest weighted corner (ONNX's reference), 4 / 4. */
TEST(roialign_avg_max) {
    static const float roi[4] = {0, 0, 1, 1};
    for (int mx = 0; mx < 2; mx++) {
        gwr_network *net = gwr_network_new("m");
        gwr_layer *l = roi_net(net, roi, 0, NULL);
        if (mx) gwr_layer_set_string(l, "mode", "max");
        gwr_value *y;
        char msg[512];
        if (!CHECK_OK(go(net, 1, &y, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
        static const int64_t d[4] = {1, 1, 1, 1};
        CHECK(dims_are(y, 4, d));
        CHECK(gwr_value_get_f64(y, 0) == (mx ? 1.0 : 2.5));
        gwr_value_release(y);
    }
}

/* Without coordinate_transformation_mode, opset 10 means output_half_pixel
 * (one sample at (0.5, 0.5): 2.5) and opset 16 half_pixel (the roi moves
 * by -0.5: the sample lands on pixel (0, 0)). */
TEST(roialign_default_by_opset) {
    static const float roi[4] = {0, 0, 1, 1};
    static const int64_t opsets[2] = {10, 16};
    for (int i = 0; i < 2; i++) {
        gwr_network *net = gwr_network_new("m");
        gwr_network_set_opset(net, "", opsets[i]);
        gwr_layer_remove_attr(roi_net(net, roi, 0, NULL), "coordinate_transformation_mode");
        gwr_value *y;
        char msg[512];
        if (!CHECK_OK(go(net, 1, &y, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
        CHECK(gwr_value_get_f64(y, 0) == (i ? 1.0 : 2.5));
        gwr_value_release(y);
    }
}

/* roi [0, 6] x [0, 6] with 2 x 2 samples at 1.5 and 4.5 on a 3 x 3 map of
 * -1: one sample lands inside, between four pixels (-1 each, weighing
 * 1/4), three fall outside and count 0. avg: -1 / 4; max: 0, above every
 * weighted corner (-1/4). */
TEST(roialign_samples_outside) {
    static const float neg[9] = {-1, -1, -1, -1, -1, -1, -1, -1, -1}, roi[4] = {0, 0, 6, 6};
    static const int64_t dx[4] = {1, 1, 3, 3}, dr[2] = {1, 4}, db[1] = {1}, zero = 0;
    for (int mx = 0; mx < 2; mx++) {
        gwr_network *net = gwr_network_new("m");
        gwr_tensor *in[3] = {f32s(net, 4, dx, neg), f32s(net, 2, dr, roi), i64s(net, 1, db, &zero)};
        gwr_layer *l = add(net, "RoiAlign", 3, in, 1);
        gwr_layer_set_string(l, "coordinate_transformation_mode", "output_half_pixel");
        gwr_layer_set_int(l, "sampling_ratio", 2);
        if (mx) gwr_layer_set_string(l, "mode", "max");
        gwr_value *y;
        char msg[512];
        if (!CHECK_OK(go(net, 1, &y, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
        CHECK(gwr_value_get_f64(y, 0) == (mx ? 0.0 : -0.25));
        gwr_value_release(y);
    }
}

/* A map with no pixels: every sample is outside, the output 0. */
TEST(roialign_empty_map) {
    static const float roi[4] = {0, 0, 1, 1};
    static const int64_t dx[4] = {1, 2, 0, 3};
    gwr_network *net = gwr_network_new("m");
    roi_net(net, roi, 0, dx);
    gwr_value *y;
    char msg[512];
    if (!CHECK_OK(go(net, 1, &y, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
    if (CHECK_EQ_INT(gwr_value_numel(y), 2)) CHECK(gwr_value_get_f64(y, 0) == 0 && gwr_value_get_f64(y, 1) == 0);
    gwr_value_release(y);
}

TEST(roialign_errors) {
    static const float roi[4] = {0, 0, 1, 1}, nan_roi[4] = {0, NAN, 1, 1}, huge[4] = {0, 0, 1e30f, 1e30f};
    gwr_network *net = gwr_network_new("m");
    roi_net(net, roi, 1, NULL);
    CHECK_FAILS(net, 1, "batch_indices[0] = 1 is out of range for a batch of 1");

    net = gwr_network_new("m");
    roi_net(net, roi, -1, NULL);
    CHECK_FAILS(net, 1, "batch_indices[0] = -1 is out of range");

    net = gwr_network_new("m");
    roi_net(net, nan_roi, 0, NULL);
    CHECK_FAILS(net, 1, "roi 0 has a coordinate that is not finite");

    net = gwr_network_new("m");
    gwr_layer_set_int(roi_net(net, huge, 0, NULL), "sampling_ratio", 0);
    CHECK_FAILS(net, 1, "samples per output element");

    net = gwr_network_new("m");
    gwr_layer_set_int(roi_net(net, roi, 0, NULL), "output_height", 0);
    CHECK_FAILS(net, 1, "output_height and output_width must be >= 1");

    net = gwr_network_new("m");
    gwr_layer_set_string(roi_net(net, roi, 0, NULL), "mode", "sum");
    CHECK_FAILS(net, 1, "mode 'sum' is not avg or max");

    net = gwr_network_new("m");
    gwr_layer_set_string(roi_net(net, roi, 0, NULL), "coordinate_transformation_mode", "align_corners");
    CHECK_FAILS(net, 1, "coordinate_transformation_mode 'align_corners'");

    static const int64_t dr[2] = {1, 3}, db[1] = {1}, dx[4] = {1, 1, 2, 2}, zero = 0;
    net = gwr_network_new("m");
    gwr_tensor *in[3] = {f32s(net, 4, dx, img22), f32s(net, 2, dr, roi), i64s(net, 1, db, &zero)};
    add(net, "RoiAlign", 3, in, 1);
    CHECK_FAILS(net, 1, "rois must be [num_rois, 4]");
}

/* ---- GridSample ------------------------------------------------------------------- */

/* X = [[1, 2], [3, 4]] sampled at one grid point (gx, gy). */
static double gs_one(float gx, float gy, const char *mode, const char *pad, int align, char *msg, size_t size) {
    static const int64_t dx[4] = {1, 1, 2, 2}, dg[4] = {1, 1, 1, 2};
    gwr_network *net = gwr_network_new("m");
    const float g[2] = {gx, gy};
    gwr_tensor *in[2] = {f32s(net, 4, dx, img22), f32s(net, 4, dg, g)};
    gwr_layer *l = add(net, "GridSample", 2, in, 1);
    gwr_layer_set_string(l, "mode", mode);
    gwr_layer_set_string(l, "padding_mode", pad);
    gwr_layer_set_int(l, "align_corners", align);
    gwr_value *y;
    if (go(net, 1, &y, msg, size)) return -1e300;
    double v = gwr_value_get_f64(y, 0);
    gwr_value_release(y);
    return v;
}

TEST(gridsample_corners) {
    char msg[512];
    CHECK(gs_one(0, 0, "bilinear", "zeros", 0, msg, sizeof msg) == 2.5);
    /* nearest rounds half to even: 0.5 -> 0 on both axes */
    CHECK(gs_one(0, 0, "nearest", "zeros", 1, msg, sizeof msg) == 1);
    /* NaN in, NaN out; infinity: zeros reads nothing, border the edge,
     * reflection has no answer */
    CHECK(isnan(gs_one(NAN, 0, "bilinear", "border", 0, msg, sizeof msg)));
    CHECK(gs_one(INFINITY, 0, "bilinear", "zeros", 0, msg, sizeof msg) == 0);
    CHECK(gs_one(INFINITY, 0, "bicubic", "zeros", 1, msg, sizeof msg) == 0);
    CHECK(gs_one(INFINITY, 0, "bilinear", "border", 1, msg, sizeof msg) == 3);
    CHECK(fabs(gs_one(-INFINITY, 1, "bicubic", "border", 1, msg, sizeof msg) - 3) < 1e-6);
    CHECK(isnan(gs_one(INFINITY, 0, "bilinear", "reflection", 0, msg, sizeof msg)));
    /* far away, reflection still lands on a pixel: x = 1e6 + 0.5 with
     * align_corners reflects by period 2 onto 0.5 */
    double v = gs_one(2e6f, -1, "bicubic", "reflection", 1, msg, sizeof msg);
    CHECK(v >= 0.5 && v <= 2.5);
    v = gs_one(-3e7f, 1, "bilinear", "reflection", 0, msg, sizeof msg);
    CHECK(v >= 3 && v <= 4);
    /* the opset-20 names */
    CHECK(gs_one(0, 0, "linear", "zeros", 0, msg, sizeof msg) == 2.5);
    CHECK(fabs(gs_one(-1, -1, "cubic", "border", 1, msg, sizeof msg) - 1) < 1e-6);
}

/* Bicubic pads the taps, not the coordinate: on the row [0, 0, 0, 8]
 * (align_corners, border) x = 3.5 reads taps 2..5 as 0, 8, 8, 8 with
 * weights -3/32, 19/32, 19/32, -3/32: 8.75, where clamping x to 3 first
 * would give 8. */
TEST(gridsample_bicubic_border_taps) {
    static const int64_t dx[4] = {1, 1, 1, 4}, dg[4] = {1, 1, 1, 2};
    static const float x[4] = {0, 0, 0, 8};
    const float g[2] = {4.0f / 3.0f, 0};
    gwr_network *net = gwr_network_new("m");
    gwr_tensor *in[2] = {f32s(net, 4, dx, x), f32s(net, 4, dg, g)};
    gwr_layer *l = add(net, "GridSample", 2, in, 1);
    gwr_layer_set_string(l, "mode", "bicubic");
    gwr_layer_set_string(l, "padding_mode", "border");
    gwr_layer_set_int(l, "align_corners", 1);
    gwr_value *y;
    char msg[512];
    if (!CHECK_OK(go(net, 1, &y, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
    CHECK(fabs(gwr_value_get_f64(y, 0) - 8.75) < 1e-4);
    gwr_value_release(y);
}

/* One pixel, align_corners: the reflection range is empty; every mode
 * returns the pixel. */
TEST(gridsample_one_pixel) {
    static const int64_t dx[4] = {1, 1, 1, 1}, dg[4] = {1, 1, 2, 2};
    static const float x = 7, g[4] = {0.3f, -0.9f, 5, -5};
    const char *modes[3] = {"bilinear", "nearest", "bicubic"};
    for (int m = 0; m < 3; m++) {
        gwr_network *net = gwr_network_new("m");
        gwr_tensor *in[2] = {f32s(net, 4, dx, &x), f32s(net, 4, dg, g)};
        gwr_layer *l = add(net, "GridSample", 2, in, 1);
        gwr_layer_set_string(l, "mode", modes[m]);
        gwr_layer_set_string(l, "padding_mode", "reflection");
        gwr_layer_set_int(l, "align_corners", 1);
        gwr_value *y;
        char msg[512];
        if (!CHECK_OK(go(net, 1, &y, msg, sizeof msg))) return (void)fprintf(stderr, "  %s\n", msg);
        for (int i = 0; i < 2; i++) CHECK(fabs(gwr_value_get_f64(y, i) - 7) < 1e-6);
        gwr_value_release(y);
    }
}

TEST(gridsample_errors) {
    char msg[512];
    CHECK(gs_one(0, 0, "area", "zeros", 0, msg, sizeof msg) == -1e300);
    CHECK_CONTAINS(msg, "layer 'L'");
    CHECK_CONTAINS(msg, "mode 'area' is not bilinear, nearest or bicubic");
    gs_one(0, 0, "bilinear", "wrap", 0, msg, sizeof msg);
    CHECK_CONTAINS(msg, "padding_mode 'wrap' is not zeros, border or reflection");
    gs_one(0, 0, "bilinear", "zeros", 2, msg, sizeof msg);
    CHECK_CONTAINS(msg, "align_corners must be 0 or 1, not 2");

    static const float z[8] = {0};
    static const int64_t d6[6] = {1, 1, 2, 2, 1, 1}, dg6[6] = {1, 1, 1, 1, 1, 4}, dx[4] = {1, 1, 2, 2}, dg[4] = {2, 1, 1, 2},
                         dx0[4] = {1, 1, 0, 2}, dg1[4] = {1, 1, 1, 2};
    gwr_network *net = gwr_network_new("m");
    gwr_tensor *in[2] = {f32s(net, 6, d6, z), f32s(net, 6, dg6, z)};
    add(net, "GridSample", 2, in, 1);
    CHECK_FAILS(net, 1, "only 3-D to 5-D X are supported, not rank 6");

    net = gwr_network_new("m");
    in[0] = f32s(net, 4, dx, z), in[1] = f32s(net, 4, dg, z);
    add(net, "GridSample", 2, in, 1);
    CHECK_FAILS(net, 1, "grid must be [N, H_out, W_out, 2] with X's N (1)");

    net = gwr_network_new("m");
    in[0] = f32s(net, 4, dx0, z), in[1] = f32s(net, 4, dg1, z);
    add(net, "GridSample", 2, in, 1);
    CHECK_FAILS(net, 1, "X has no pixels (H = 0, W = 2)");

    net = gwr_network_new("m");
    in[0] = i64s(net, 4, dx, (const int64_t *)z), in[1] = f32s(net, 4, dg1, z);
    add(net, "GridSample", 2, in, 1);
    CHECK_FAILS(net, 1, "X and grid must be float, not int64 and float32");
}

int main(void) {
    RUN(strnorm_all_filtered_two_dims);
    RUN(strnorm_empty_input);
    RUN(strnorm_utf8);
    RUN(strnorm_errors);
    RUN(unique_nan_and_signed_zero);
    RUN(unique_strings_unsorted);
    RUN(unique_empty);
    RUN(unique_empty_slices);
    RUN(unique_y_only);
    RUN(unique_errors);
    RUN(nms_zero_area_and_nan);
    RUN(nms_no_output);
    RUN(nms_errors);
    RUN(tfidf_duplicate_and_empty);
    RUN(tfidf_strings_weights);
    RUN(tfidf_errors);
    RUN(roialign_avg_max);
    RUN(roialign_default_by_opset);
    RUN(roialign_samples_outside);
    RUN(roialign_empty_map);
    RUN(roialign_errors);
    RUN(gridsample_corners);
    RUN(gridsample_bicubic_border_taps);
    RUN(gridsample_one_pixel);
    RUN(gridsample_errors);
    return check_report();
}
