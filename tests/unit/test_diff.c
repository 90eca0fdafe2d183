/* test_diff.c - gwr_diff_networks on small networks built twice, the
 * second time with exactly one change. The expected kinds come from the
 * construction: which layers the change touched (names listed by hand
 * here), never from the diff's own output.
 *
 * The base network (x: float32[1,4]):
 *   mm = MatMul(x, W); the Gelu form of mm: div = mm / sqrt2, erf = Erf(div),
 *   add = erf + one, mul1 = mm * add, mul2 = mul1 * half; relu = Relu(mul2);
 *   sm = Softmax(relu, axis=1) -> output. Weights W, sqrt2, one, half. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "util/util.h" /* the allocation hook */

typedef enum {
    V_NONE = 0,
    V_FUSED,        /* div..mul2 replaced by gelu = Gelu(mm) */
    V_FUSED_PROV,   /* the same, gelu with a provenance record */
    V_RENAMED,      /* erf named erf_renamed (and its output) */
    V_REDIRECTED,   /* relu reads mm, not mul2 */
    V_ATTR,         /* sm's axis -1 */
    V_WEIGHT,       /* W[5] + 1e-3 */
    V_WEIGHT_DTYPE, /* W as float64 */
    V_INTERFACE,    /* x is [1,5], a new input y, the output sm unmarked and relu marked */
    V_OP,           /* relu is a Sigmoid named relu */
    V_PROV_RENAME,  /* relu named relu_new, made by rule r from relu */
} variant;

static gwr_tensor *konst(gwr_network *net, const char *name, gwr_dtype dt, int rank, const int64_t *dims,
                         const void *data, size_t nbytes) {
    gwr_buffer *b = gwr_buffer_new_copy(data, nbytes);
    gwr_weights w = {.dtype = dt, .rank = rank, .dims = dims, .data = gwr_buffer_data(b), .nbytes = nbytes, .buffer = b};
    gwr_tensor *t = gwr_network_add_constant(net, name, &w);
    gwr_buffer_release(b);
    return t;
}

static gwr_tensor *op(gwr_network *net, const char *type, const char *name, gwr_tensor *a, gwr_tensor *b) {
    gwr_tensor *in[2] = {a, b};
    gwr_layer *l = gwr_network_add_layer(net, type, "", name, b ? 2 : 1, in, 1, NULL);
    return l ? gwr_layer_output(l, 0) : NULL;
}

static const char *const PROV =
    "{\"rule\":\"fuse_gelu\",\"from\":[\"div\",\"erf\",{\"name\":\"Mul_99\",\"rule\":\"fuse_x\","
    "\"from\":[\"add\",\"mul1\"]},\"mul2\"]}";

static gwr_network *build(variant v) {
    gwr_network *net = gwr_network_new("g");
    gwr_dim d[2] = {1, v == V_INTERFACE ? 5 : 4};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, d);
    if (v == V_INTERFACE) gwr_network_add_input(net, "y", GWR_FLOAT32, 2, d);
    float wv[16];
    double wd[16];
    for (int i = 0; i < 16; i++) wv[i] = (float)i * 0.25f, wd[i] = (double)i * 0.25;
    if (v == V_WEIGHT) wv[5] += 1e-3f;
    int64_t wdims[2] = {4, 4};
    gwr_tensor *W = v == V_WEIGHT_DTYPE ? konst(net, "W", GWR_FLOAT64, 2, wdims, wd, sizeof wd)
                                        : konst(net, "W", GWR_FLOAT32, 2, wdims, wv, sizeof wv);
    gwr_tensor *mm = op(net, "MatMul", "mm", x, W), *g;
    if (v == V_FUSED || v == V_FUSED_PROV) {
        g = op(net, "Gelu", "gelu", mm, NULL);
        if (v == V_FUSED_PROV) gwr_layer_set_prop(gwr_tensor_parent(g), "gwr.provenance", PROV, strlen(PROV));
    } else {
        float s2 = 1.41421356f, one = 1.0f, half = 0.5f;
        gwr_tensor *div = op(net, "Div", "div", mm, konst(net, "sqrt2", GWR_FLOAT32, 0, NULL, &s2, 4));
        gwr_tensor *erf = op(net, "Erf", v == V_RENAMED ? "erf_renamed" : "erf", div, NULL);
        gwr_tensor *add = op(net, "Add", "add", erf, konst(net, "one", GWR_FLOAT32, 0, NULL, &one, 4));
        gwr_tensor *mul1 = op(net, "Mul", "mul1", mm, add);
        g = op(net, "Mul", "mul2", mul1, konst(net, "half", GWR_FLOAT32, 0, NULL, &half, 4));
    }
    const char *rname = v == V_PROV_RENAME ? "relu_new" : "relu";
    gwr_tensor *relu = op(net, v == V_OP ? "Sigmoid" : "Relu", rname, v == V_REDIRECTED ? mm : g, NULL);
    if (v == V_PROV_RENAME) {
        const char *p = "{\"rule\":\"r\",\"from\":[\"relu\"]}";
        gwr_layer_set_prop(gwr_tensor_parent(relu), "gwr.provenance", p, strlen(p));
    }
    gwr_tensor *sm = op(net, "Softmax", "sm", relu, NULL);
    gwr_layer_set_int(gwr_tensor_parent(sm), "axis", v == V_ATTR ? -1 : 1);
    gwr_network_mark_output(net, v == V_INTERFACE ? relu : sm);
    if (gwr_network_verify(net)) fprintf(stderr, "build(%d): %s\n", (int)v, gwr_network_errmsg(net));
    return net;
}

static int64_t idx(gwr_network *net, const char *name) {
    gwr_layer *l = gwr_network_find_layer(net, name);
    return l ? gwr_layer_index(l) : -1;
}

/* The kinds of the named layers of a (side 0) or b (side 1). */
static void check_kinds(const gwr_diff *d, gwr_network *net, int side, const char *const *names, gwr_diff_kind k) {
    for (int i = 0; names[i]; i++) {
        int64_t j = idx(net, names[i]);
        if (!CHECK(j >= 0)) continue;
        gwr_diff_kind got = side ? gwr_diff_kind_b(d, j) : gwr_diff_kind_a(d, j);
        if (!CHECK_EQ_INT(got, k)) fprintf(stderr, "  layer %s\n", names[i]);
    }
}

static void check_counts(const gwr_diff *d, int64_t same, int64_t changed, int64_t removed, int64_t added) {
    int64_t s, c, r, a;
    gwr_diff_counts(d, &s, &c, &r, &a);
    CHECK_EQ_INT(s, same);
    CHECK_EQ_INT(c, changed);
    CHECK_EQ_INT(r, removed);
    CHECK_EQ_INT(a, added);
}

/* What gwr_diff_write prints, in a malloc'd string. */
static char *written(const gwr_diff *d, int json) {
    FILE *f = tmpfile();
    if (!f) return NULL;
    CHECK_OK(gwr_diff_write(d, f, json));
    long n = ftell(f);
    char *s = calloc(1, (size_t)n + 1);
    rewind(f);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) s[0] = 0;
    fclose(f);
    return s;
}

typedef struct pairnets {
    gwr_network *a, *b;
    gwr_diff *d;
} pairnets;

static pairnets diff_of(variant v, double rtol, double atol) {
    pairnets p = {build(V_NONE), build(v), NULL};
    gwr_diff_options o = {rtol, atol};
    p.d = gwr_diff_networks(p.a, p.b, &o);
    if (!p.d) fprintf(stderr, "diff: %s\n", gwr_last_errmsg());
    return p;
}

static void done(pairnets *p) {
    gwr_diff_free(p->d);
    gwr_network_free(p->a);
    gwr_network_free(p->b);
}

static const char *const ALL[] = {"mm", "div", "erf", "add", "mul1", "mul2", "relu", "sm", "W", "sqrt2", "one", "half", NULL};
static const char *const GELU_FORM[] = {"div", "erf", "add", "mul1", "mul2", NULL};

TEST(identical_all_same) {
    pairnets p = diff_of(V_NONE, 0, 0);
    if (!CHECK(p.d)) return done(&p);
    check_kinds(p.d, p.a, 0, ALL, GWR_DIFF_SAME);
    check_kinds(p.d, p.b, 1, ALL, GWR_DIFF_SAME);
    for (int i = 0; ALL[i]; i++) CHECK_EQ_INT(gwr_diff_match_a(p.d, idx(p.a, ALL[i])), idx(p.b, ALL[i]));
    check_counts(p.d, 8, 0, 0, 0);
    CHECK(gwr_diff_identical(p.d));
    char *t = written(p.d, 0);
    CHECK_CONTAINS(t, "layers: 8 same, 0 changed, 0 removed, 0 added");
    CHECK_CONTAINS(t, "identical");
    free(t);
    done(&p);
}

TEST(fused_pair_removed_added) {
    pairnets p = diff_of(V_FUSED, 0, 0);
    if (!CHECK(p.d)) return done(&p);
    check_kinds(p.d, p.a, 0, GELU_FORM, GWR_DIFF_REMOVED);
    const char *const gone_w[] = {"sqrt2", "one", "half", NULL}, *const added[] = {"gelu", NULL};
    check_kinds(p.d, p.a, 0, gone_w, GWR_DIFF_REMOVED);
    check_kinds(p.d, p.b, 1, added, GWR_DIFF_ADDED);
    const char *const same[] = {"mm", "sm", "W", NULL}, *const changed[] = {"relu", NULL};
    check_kinds(p.d, p.b, 1, same, GWR_DIFF_SAME);
    check_kinds(p.d, p.b, 1, changed, GWR_DIFF_CHANGED);
    CHECK_STR(gwr_diff_why_b(p.d, idx(p.b, "relu")), "inputs"); /* now reads gelu: redirected */
    CHECK_EQ_INT(gwr_diff_match_b(p.d, idx(p.b, "gelu")), -1);
    CHECK_STR(gwr_diff_why_b(p.d, idx(p.b, "gelu")), "new");
    check_counts(p.d, 2, 1, 5, 1);
    CHECK(!gwr_diff_identical(p.d));
    char *t = written(p.d, 0);
    CHECK_CONTAINS(t, "layers: 2 same, 1 changed, 5 removed, 1 added");
    CHECK_CONTAINS(t, "  + gelu (Gelu) new");
    CHECK_CONTAINS(t, "  - div (Div) gone");
    CHECK_CONTAINS(t, "  ~ relu (Relu): inputs");
    CHECK_CONTAINS(t, "  - sqrt2 float32[] removed");
    free(t);
    done(&p);
}

TEST(provenance_matches) {
    pairnets p = diff_of(V_FUSED_PROV, 0, 0);
    if (!CHECK(p.d)) return done(&p);
    check_kinds(p.d, p.a, 0, GELU_FORM, GWR_DIFF_REMOVED);
    /* five layers of a named by the tree, the nested Mul_99 is not in a */
    CHECK_STR(gwr_diff_why_b(p.d, idx(p.b, "gelu")), "made by fuse_gelu from 5 layers");
    CHECK_STR(gwr_diff_why_a(p.d, idx(p.a, "add")), "replaced by gelu (fuse_gelu)");
    check_counts(p.d, 2, 1, 5, 1);
    char *t = written(p.d, 0);
    CHECK_CONTAINS(t, "  + gelu (Gelu) made by fuse_gelu from div, erf, add, mul1, mul2\n");
    free(t);
    t = written(p.d, 1);
    CHECK_CONTAINS(t, "\"rule\":\"fuse_gelu\",\"from\":[\"div\",\"erf\",\"add\",\"mul1\",\"mul2\"]");
    CHECK_CONTAINS(t, "\"kind\":\"removed\",\"name\":\"div\",\"op\":\"Div\",\"domain\":\"\",\"match\":null");
    free(t);
    done(&p);
}

/* Without its record, relu_new would be matched to relu by structure
 * (SAME): the record makes it a new layer made from relu. */
TEST(provenance_before_structure) {
    pairnets p = diff_of(V_PROV_RENAME, 0, 0);
    if (!CHECK(p.d)) return done(&p);
    CHECK_EQ_INT(gwr_diff_kind_a(p.d, idx(p.a, "relu")), GWR_DIFF_REMOVED);
    CHECK_EQ_INT(gwr_diff_kind_b(p.d, idx(p.b, "relu_new")), GWR_DIFF_ADDED);
    CHECK_STR(gwr_diff_why_b(p.d, idx(p.b, "relu_new")), "made by r from 1 layer");
    CHECK_EQ_INT(gwr_diff_kind_b(p.d, idx(p.b, "sm")), GWR_DIFF_CHANGED); /* reads relu_new now */
    check_counts(p.d, 6, 1, 1, 1);
    /* The same rename with the record dropped: matched by structure. */
    gwr_layer_remove_prop(gwr_network_find_layer(p.b, "relu_new"), "gwr.provenance");
    gwr_diff_free(p.d);
    p.d = gwr_diff_networks(p.a, p.b, NULL);
    if (!CHECK(p.d)) return done(&p);
    CHECK_EQ_INT(gwr_diff_kind_b(p.d, idx(p.b, "relu_new")), GWR_DIFF_SAME);
    CHECK_EQ_INT(gwr_diff_match_b(p.d, idx(p.b, "relu_new")), idx(p.a, "relu"));
    check_counts(p.d, 8, 0, 0, 0);
    done(&p);
}

/* A record that names no layer of a (a already had the fused layer) or is
 * not JSON counts as none. */
TEST(provenance_unusable) {
    gwr_network *a = build(V_FUSED), *b = build(V_FUSED_PROV);
    gwr_diff *d = gwr_diff_networks(a, b, NULL);
    if (CHECK(d)) {
        CHECK_EQ_INT(gwr_diff_kind_b(d, idx(b, "gelu")), GWR_DIFF_SAME);
        check_counts(d, 4, 0, 0, 0);
        CHECK(gwr_diff_identical(d));
    }
    gwr_diff_free(d);
    gwr_network_free(a);
    a = build(V_NONE);
    static const char *const bad[] = {"{\"rule\":\"r\",\"from\":[\"div\",]}", "[\"div\"]", "{\"from\":[\"div\"",
                                      "{\"rule\":\"r\",\"from\":[\"d\\u00e9v\"]}",
                                      /* items are names or objects, nothing else */
                                      "{\"rule\":\"r\",\"from\":[\"div\", 12, null]}"};
    for (int k = 0; k < 5; k++) {
        gwr_layer_set_prop(gwr_network_find_layer(b, "gelu"), "gwr.provenance", bad[k], strlen(bad[k]));
        d = gwr_diff_networks(a, b, NULL);
        if (CHECK(d)) CHECK_STR(gwr_diff_why_b(d, idx(b, "gelu")), "new");
        gwr_diff_free(d);
    }
    /* Escapes are read: "d\u0069v" is div. */
    const char *esc = "{\"more\":3,\"rule\":\"fu\\\"se\",\"from\":[\"d\\u0069v\"]}";
    gwr_layer_set_prop(gwr_network_find_layer(b, "gelu"), "gwr.provenance", esc, strlen(esc));
    d = gwr_diff_networks(a, b, NULL);
    if (CHECK(d)) {
        CHECK_STR(gwr_diff_why_b(d, idx(b, "gelu")), "made by fu\"se from 1 layer");
        CHECK_EQ_INT(gwr_diff_kind_a(d, idx(a, "div")), GWR_DIFF_REMOVED);
    }
    gwr_diff_free(d);
    gwr_network_free(a);
    gwr_network_free(b);
}

TEST(renamed_by_structure) {
    pairnets p = diff_of(V_RENAMED, 0, 0);
    if (!CHECK(p.d)) return done(&p);
    CHECK_EQ_INT(gwr_diff_match_b(p.d, idx(p.b, "erf_renamed")), idx(p.a, "erf"));
    CHECK_EQ_INT(gwr_diff_match_a(p.d, idx(p.a, "erf")), idx(p.b, "erf_renamed"));
    CHECK_EQ_INT(gwr_diff_kind_b(p.d, idx(p.b, "erf_renamed")), GWR_DIFF_SAME);
    CHECK_EQ_INT(gwr_diff_kind_b(p.d, idx(p.b, "add")), GWR_DIFF_SAME); /* reads the renamed output */
    check_counts(p.d, 8, 0, 0, 0);
    done(&p);
}

TEST(redirected_input) {
    pairnets p = diff_of(V_REDIRECTED, 0, 0);
    if (!CHECK(p.d)) return done(&p);
    CHECK_EQ_INT(gwr_diff_kind_b(p.d, idx(p.b, "relu")), GWR_DIFF_CHANGED);
    CHECK_STR(gwr_diff_why_b(p.d, idx(p.b, "relu")), "inputs");
    CHECK_STR(gwr_diff_why_a(p.d, idx(p.a, "relu")), "inputs");
    check_counts(p.d, 7, 1, 0, 0);
    done(&p);
}

TEST(attribute_and_op) {
    pairnets p = diff_of(V_ATTR, 0, 0);
    if (CHECK(p.d)) {
        CHECK_STR(gwr_diff_why_b(p.d, idx(p.b, "sm")), "attr axis");
        check_counts(p.d, 7, 1, 0, 0);
    }
    done(&p);
    p = diff_of(V_OP, 0, 0);
    if (CHECK(p.d)) {
        CHECK_EQ_INT(gwr_diff_match_b(p.d, idx(p.b, "relu")), idx(p.a, "relu"));
        CHECK_STR(gwr_diff_why_b(p.d, idx(p.b, "relu")), "op");
        check_counts(p.d, 7, 1, 0, 0);
        char *t = written(p.d, 0);
        CHECK_CONTAINS(t, "  ~ relu (Sigmoid) was relu (Relu): op");
        free(t);
    }
    done(&p);
}

TEST(weights_tolerance) {
    /* 1e-3 apart at one element (float32: 1.25 + 1e-3 rounds to within 1e-7
     * of 1.251) */
    pairnets p = diff_of(V_WEIGHT, 0, 1e-2);
    if (CHECK(p.d)) {
        CHECK_EQ_INT(gwr_diff_kind_b(p.d, idx(p.b, "W")), GWR_DIFF_SAME);
        CHECK(gwr_diff_identical(p.d));
    }
    done(&p);
    p = diff_of(V_WEIGHT, 0, 1e-4);
    if (CHECK(p.d)) {
        CHECK_EQ_INT(gwr_diff_kind_b(p.d, idx(p.b, "W")), GWR_DIFF_CHANGED);
        CHECK_STR(gwr_diff_why_b(p.d, idx(p.b, "W")), "weights");
        check_counts(p.d, 8, 0, 0, 0); /* weights are counted apart */
        CHECK(!gwr_diff_identical(p.d));
        char *t = written(p.d, 0);
        CHECK_CONTAINS(t, "  ~ W float32[4,4]: 1 value beyond tolerance, max abs diff 0.001");
        free(t);
    }
    done(&p);
    /* rtol relative to b's element (1.251): 1e-3 is within 1e-3 * 1.251 */
    p = diff_of(V_WEIGHT, 1e-3, 0);
    if (CHECK(p.d)) CHECK(gwr_diff_identical(p.d));
    done(&p);
    p = diff_of(V_WEIGHT, 0, 0);
    if (CHECK(p.d)) CHECK_STR(gwr_diff_why_b(p.d, idx(p.b, "W")), "weights");
    done(&p);
    p = diff_of(V_WEIGHT_DTYPE, 1, 1);
    if (CHECK(p.d)) CHECK_STR(gwr_diff_why_b(p.d, idx(p.b, "W")), "weights dtype");
    done(&p);
}

TEST(interface_changes) {
    pairnets p = diff_of(V_INTERFACE, 0, 0);
    if (!CHECK(p.d)) return done(&p);
    CHECK(!gwr_diff_identical(p.d));
    char *t = written(p.d, 0);
    CHECK_CONTAINS(t, "  ~ input x: float32[1,4] -> float32[1,5]");
    CHECK_CONTAINS(t, "  + input y float32[1,5]");
    CHECK_CONTAINS(t, "  - output sm");
    CHECK_CONTAINS(t, "  + output relu");
    free(t);
    t = written(p.d, 1);
    CHECK_CONTAINS(t, "\"inputs\": [{\"name\":\"x\",\"change\":\"retyped\",\"a\":\"float32[1,4]\",\"b\":\"float32[1,5]\"");
    free(t);
    done(&p);
}

TEST(bad_arguments) {
    gwr_network *a = build(V_NONE);
    CHECK(!gwr_diff_networks(a, NULL, NULL));
    CHECK_CONTAINS(gwr_last_errmsg(), "NULL network");
    gwr_diff_options o = {-1, 0};
    CHECK(!gwr_diff_networks(a, a, &o));
    CHECK_CONTAINS(gwr_last_errmsg(), "rtol and atol must be >= 0");
    CHECK_EQ_INT(gwr_diff_kind_a(NULL, 0), GWR_DIFF_SAME);
    CHECK_EQ_INT(gwr_diff_match_b(NULL, 0), -1);
    CHECK_STR(gwr_diff_why_b(NULL, 3), "");
    CHECK(gwr_diff_write(NULL, stdout, 0) != GWR_OK);
    gwr_diff_free(NULL);
    gwr_network_free(a);
}

/* x, cond -> If(cond) with then = Relu(x) (x of the enclosing graph),
 * else = Neg(x); rel names the then branch's Relu. */
static gwr_network *with_if(const char *rel) {
    gwr_network *net = gwr_network_new("g");
    gwr_dim d[1] = {4};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, d);
    gwr_tensor *c = gwr_network_add_input(net, "cond", GWR_BOOL, 0, NULL);
    gwr_layer *iff = gwr_network_add_layer(net, "If", "", "if", 1, &c, 1, NULL);
    const char *names[2] = {"then_branch", "else_branch"};
    for (int k = 0; k < 2; k++) {
        gwr_network *g = gwr_network_new_subgraph(net, names[k]);
        gwr_network_mark_output(g, op(g, k ? "Neg" : "Relu", k ? "neg" : rel, x, NULL));
        gwr_layer_set_graph(iff, names[k], g);
    }
    gwr_network_mark_output(net, gwr_layer_output(iff, 0));
    return net;
}

/* Bodies diffed on their own: tensors of the enclosing graph match by
 * name (a renamed layer reading one is found by structure); a body that
 * differs makes its If CHANGED. */
TEST(bodies) {
    gwr_network *a = with_if("relu"), *b = with_if("relu_renamed");
    gwr_network *ta, *tb;
    gwr_layer_get_graph(gwr_network_find_layer(a, "if"), "then_branch", &ta);
    gwr_layer_get_graph(gwr_network_find_layer(b, "if"), "then_branch", &tb);
    gwr_diff *d = gwr_diff_networks(ta, tb, NULL);
    if (CHECK(d)) {
        CHECK_EQ_INT(gwr_diff_match_b(d, idx(tb, "relu_renamed")), idx(ta, "relu"));
        CHECK_EQ_INT(gwr_diff_kind_b(d, idx(tb, "relu_renamed")), GWR_DIFF_SAME);
    }
    gwr_diff_free(d);
    d = gwr_diff_networks(a, b, NULL);
    if (CHECK(d)) CHECK_STR(gwr_diff_why_b(d, idx(b, "if")), "attr then_branch");
    gwr_diff_free(d);
    gwr_network_free(a);
    gwr_network_free(b);
}

/* The record comes from model files: every prefix of a valid one, and
 * every byte of it replaced by JSON's punctuation, reads or is refused,
 * never read out of bounds (AddressSanitizer in build-san), and a diff
 * results either way. */
TEST(provenance_mutations) {
    gwr_network *a = build(V_NONE), *b = build(V_FUSED_PROV);
    gwr_layer *g = gwr_network_find_layer(b, "gelu");
    size_t n = strlen(PROV);
    char buf[256];
    static const char subst[] = "{}[],:\\\"u0 ";
    int ok = 1;
    for (size_t k = 0; k <= n && ok; k++) {
        gwr_layer_set_prop(g, "gwr.provenance", PROV, k);
        gwr_diff *d = gwr_diff_networks(a, b, NULL);
        ok = CHECK(d != NULL);
        gwr_diff_free(d);
    }
    for (size_t k = 0; k < n && ok; k++)
        for (size_t c = 0; c < sizeof subst - 1 && ok; c++) {
            memcpy(buf, PROV, n);
            buf[k] = subst[c];
            gwr_layer_set_prop(g, "gwr.provenance", buf, n);
            gwr_diff *d = gwr_diff_networks(a, b, NULL);
            ok = CHECK(d != NULL);
            gwr_diff_free(d);
        }
    gwr_network_free(a);
    gwr_network_free(b);
}

/* Every allocation of a diff failing in turn, for every variant: NULL and
 * GWR_ERR_NOMEM, never a crash or a leak (LeakSanitizer in build-san),
 * until one run completes. */
TEST(allocation_failures) {
    for (variant v = V_NONE; v <= V_PROV_RENAME; v++) {
        gwr_network *a = build(V_NONE), *b = build(v);
        int completed = 0;
        for (int64_t n = 1; n < 100000 && !completed; n++) {
            gwr_alloc_hook_arm(n, 1);
            gwr_diff *d = gwr_diff_networks(a, b, NULL);
            int64_t failures = gwr_alloc_hook_failures();
            gwr_alloc_hook_arm(0, 0);
            if (!failures) {
                completed = CHECK(d != NULL);
            } else if (!CHECK(d == NULL) || !CHECK_EQ_INT(gwr_last_status(), GWR_ERR_NOMEM)) {
                fprintf(stderr, "  variant %d, allocation %lld\n", (int)v, (long long)n);
                completed = 1;
            }
            gwr_diff_free(d);
        }
        CHECK(completed);
        gwr_network_free(a);
        gwr_network_free(b);
    }
}

int main(void) {
    RUN(identical_all_same);
    RUN(fused_pair_removed_added);
    RUN(provenance_matches);
    RUN(provenance_before_structure);
    RUN(provenance_unusable);
    RUN(renamed_by_structure);
    RUN(redirected_input);
    RUN(attribute_and_op);
    RUN(weights_tolerance);
    RUN(interface_changes);
    RUN(bad_arguments);
    RUN(bodies);
    RUN(provenance_mutations);
    RUN(allocation_failures);
    return check_report();
}
