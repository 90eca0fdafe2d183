/* test_onnx_import.c - gwr_onnx_load against docs/onnx.md: real models from
 * the ONNX backend test data (Debian libonnx-testdata) and models made at
 * test time by tests/onnx/make_import_cases.py (Debian's /usr/bin/python3
 * with python3-onnx; its absence fails the test) for what the test data
 * lacks, including every error path. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "gwr/functional.h"
#include "gwr/onnx.h"

static const char *const TD = "/usr/share/libonnx-testdata/data";
static char g_dir[512];  /* the generated cases */
static int g_have_cases;

/* A path in a ring of buffers, so that a few can be alive at once. */
static const char *pathf(const char *fmt, const char *a, const char *b) {
    static char ring[8][1024];
    static int k;
    char *p = ring[k++ & 7];
    snprintf(p, sizeof ring[0], fmt, a, b);
    return p;
}
static const char *td(const char *name) { return pathf("%s/%s/model.onnx", TD, name); }
static const char *cs(const char *name) { return pathf("%s/%s", g_dir, name); }

static gwr_network *load(const char *path) {
    gwr_network *n = gwr_onnx_load(path, NULL);
    if (!n) fprintf(stderr, "load %s: %s\n", path, gwr_last_errmsg());
    return n;
}

static gwr_layer *layer_named(gwr_network *n, const char *name) { return gwr_network_find_layer(n, name); }

static const char *prop(const void *p) { return p ? (const char *)p : "(absent)"; }
#define NPROP(n, k) prop(gwr_network_prop((n), (k), NULL))
#define LPROP(l, k) prop(gwr_layer_prop((l), (k), NULL))
#define TPROP(t, k) prop(gwr_tensor_prop((t), (k), NULL))

static int type_is(gwr_tensor *t, const char *want) {
    char buf[256];
    gwr_tensor_type_str(t, buf, sizeof buf);
    if (strcmp(buf, want)) fprintf(stderr, "  tensor '%s' has type %s, expected %s\n", gwr_tensor_name(t), buf, want);
    return !strcmp(buf, want);
}

/* The message of a failed load: one line naming the file. */
static void expect_fail_path(const char *path, const char *needle) {
    gwr_network *n = gwr_onnx_load(path, NULL);
    const char *msg = gwr_last_errmsg();
    if (!CHECK(n == NULL)) {
        fprintf(stderr, "  %s loaded, expected an error with \"%s\"\n", path, needle);
        gwr_network_free(n);
        return;
    }
    CHECK(strncmp(msg, path, strlen(path)) == 0 && msg[strlen(path)] == ':');
    CHECK_CONTAINS(msg, needle);
    CHECK(strchr(msg, '\n') == NULL);
}
static void expect_fail(const char *name, const char *needle) { expect_fail_path(cs(name), needle); }

/* ---- the backend test data ---- */

TEST(td_add) {
    gwr_network *n = load(td("node/test_add"));
    if (!CHECK(n)) return;
    CHECK_EQ_INT(gwr_network_num_inputs(n), 2);
    CHECK_EQ_INT(gwr_network_num_layers(n), 1);
    gwr_layer *l = gwr_network_layer(n, 0);
    CHECK_STR(gwr_layer_op(l), "Add");
    CHECK_EQ_INT(gwr_layer_type(l), GWR_LAYER_ELEMENTWISE);
    CHECK_EQ_INT(gwr_layer_ew_op(l), GWR_EW_SUM);
    CHECK(gwr_layer_prop(l, "onnx.unnamed", NULL) != NULL);
    CHECK(gwr_layer_input(l, 0) == gwr_network_input(n, 0));
    CHECK(gwr_layer_input(l, 1) == gwr_network_input(n, 1));
    CHECK_EQ_INT(gwr_network_num_outputs(n), 1);
    CHECK_STR(gwr_tensor_name(gwr_network_output(n, 0)), "sum");
    CHECK(gwr_network_output(n, 0) == gwr_layer_output(l, 0));
    CHECK(type_is(gwr_network_output(n, 0), "float32[3,4,5]"));
    CHECK(type_is(gwr_network_input(n, 0), "float32[3,4,5]"));
    CHECK_EQ_INT(gwr_network_opset(n, ""), 14);
    CHECK_EQ_INT(gwr_network_num_opsets(n), 1);
    CHECK_STR(NPROP(n, "onnx.ir_version"), "7");
    CHECK_STR(NPROP(n, "onnx.producer_name"), "backend-test");
    CHECK_STR(gwr_network_name(n), "test_add");
    CHECK_OK(gwr_network_verify(n));
    gwr_network_free(n);
}

TEST(td_constant) {
    gwr_network *n = load(td("node/test_constant"));
    if (!CHECK(n)) return;
    CHECK_EQ_INT(gwr_network_num_layers(n), 1);
    gwr_layer *l = gwr_network_layer(n, 0);
    CHECK_EQ_INT(gwr_layer_type(l), GWR_LAYER_CONSTANT);
    CHECK(gwr_layer_prop(l, "onnx.constant_node", NULL) != NULL);
    const gwr_weights *w;
    if (CHECK_OK(gwr_layer_get_tensor(l, "value", &w))) {
        CHECK_EQ_INT(w->dtype, GWR_FLOAT32);
        CHECK_EQ_INT(w->rank, 2);
        CHECK_EQ_INT(w->nbytes, 100);
    }
    /* The Constant's output type comes from its value. */
    CHECK(type_is(gwr_layer_output(l, 0), "float32[5,5]"));
    gwr_network_free(n);
}

TEST(td_if) {
    gwr_network *n = load(td("node/test_if"));
    if (!CHECK(n)) return;
    gwr_layer *l = gwr_network_layer(n, 0);
    CHECK_STR(gwr_layer_op(l), "If");
    CHECK_EQ_INT(gwr_layer_type(l), GWR_LAYER_CONDITION);
    gwr_network *t = NULL, *e = NULL;
    CHECK_OK(gwr_layer_get_graph(l, "then_branch", &t));
    CHECK_OK(gwr_layer_get_graph(l, "else_branch", &e));
    if (!CHECK(t && e)) goto out;
    CHECK_STR(gwr_network_name(t), "then_body");
    CHECK_STR(gwr_network_name(e), "else_body");
    CHECK(gwr_network_parent(t) == n);
    CHECK(gwr_network_owner(t) == l);
    CHECK_EQ_INT(gwr_network_num_layers(t), 1);
    CHECK_EQ_INT(gwr_network_num_inputs(t), 0);
    CHECK_EQ_INT(gwr_network_num_outputs(t), 1);
    CHECK(type_is(gwr_network_output(t, 0), "float32[5]"));
    const gwr_weights *w;
    if (CHECK_OK(gwr_layer_get_tensor(gwr_network_layer(t, 0), "value", &w))) {
        const float *f = w->data;
        CHECK(f[0] == 1.0f && f[4] == 5.0f);
    }
    CHECK(type_is(gwr_network_input(n, 0), "bool[]"));
out:
    gwr_network_free(n);
}

TEST(td_loop11) {
    gwr_network *n = load(td("node/test_loop11"));
    if (!CHECK(n)) return;
    gwr_layer *loop = gwr_network_layer(n, 0);
    gwr_network *b = NULL;
    if (!CHECK_OK(gwr_layer_get_graph(loop, "body", &b))) goto out;
    CHECK_STR(gwr_network_name(b), "loop_body");
    CHECK_EQ_INT(gwr_network_num_inputs(b), 3);
    CHECK_STR(gwr_tensor_name(gwr_network_input(b, 0)), "iter_count");
    CHECK(type_is(gwr_network_input(b, 0), "int64[]"));
    CHECK_EQ_INT(gwr_network_num_layers(b), 9);
    CHECK_EQ_INT(gwr_network_num_outputs(b), 3);
    /* The Add reads a subgraph input and a Constant of the subgraph. */
    gwr_layer *add = gwr_tensor_parent(gwr_network_find_tensor(b, "end"));
    if (CHECK(add)) {
        CHECK(gwr_layer_input(add, 0) == gwr_network_input(b, 0));
        CHECK(gwr_layer_input(add, 1) == gwr_network_find_tensor(b, "one"));
    }
    /* float_data and int64_data become the same bytes raw_data would. */
    const gwr_weights *w;
    gwr_layer *cx = gwr_tensor_parent(gwr_network_find_tensor(b, "x"));
    if (CHECK(cx) && CHECK_OK(gwr_layer_get_tensor(cx, "value", &w))) {
        const float *f = w->data;
        CHECK(w->nbytes == 20 && f[0] == 1.0f && f[4] == 5.0f);
        CHECK_STR(w->name, "const_tensor_x");
    }
    gwr_layer *c1 = gwr_tensor_parent(gwr_network_find_tensor(b, "one"));
    if (CHECK(c1) && CHECK_OK(gwr_layer_get_tensor(c1, "value", &w))) {
        CHECK(w->rank == 0 && w->nbytes == 8 && *(const int64_t *)w->data == 1);
    }
    CHECK(gwr_network_find_tensor(n, "x") == NULL); /* body names stay in the body */
out:
    gwr_network_free(n);
}

TEST(td_capture) {
    gwr_network *n = load(td("node/test_range_float_type_positive_delta_expanded"));
    if (!CHECK(n)) return;
    gwr_tensor *delta = gwr_network_find_tensor(n, "delta");
    gwr_layer *loop = NULL;
    for (int64_t i = 0; i < gwr_network_num_layers(n); i++)
        if (!strcmp(gwr_layer_op(gwr_network_layer(n, i)), "Loop")) loop = gwr_network_layer(n, i);
    gwr_network *b = NULL;
    if (!CHECK(loop && delta) || !CHECK_OK(gwr_layer_get_graph(loop, "body", &b))) goto out;
    gwr_tensor *cur = gwr_network_find_tensor(b, "Range_test_range_float_type_positive_delta_expanded_function_current");
    gwr_layer *add = cur ? gwr_tensor_parent(cur) : NULL;
    if (CHECK(add)) {
        /* The body reads the enclosing graph's input: the same tensor. */
        CHECK(gwr_layer_input(add, 1) == delta);
        CHECK(gwr_tensor_is_input(gwr_layer_input(add, 1)));
        CHECK(gwr_tensor_network(gwr_layer_input(add, 1)) == n);
        CHECK(gwr_layer_input(add, 0) == gwr_network_input(b, 2));
    }
    /* delta is read by the Cast and, through the body, by the Add. */
    CHECK(gwr_tensor_num_users(delta) >= 2);
    /* A body input without a type stays untyped. */
    CHECK(type_is(gwr_network_input(b, 2), "undefined[...]"));
out:
    gwr_network_free(n);
}

TEST(td_sequence_defaults) {
    gwr_network *n = load(td("simple/test_sequence_model1"));
    if (!CHECK(n)) return;
    CHECK_EQ_INT(gwr_network_num_inputs(n), 5);
    /* Both initializers are named like inputs: defaults, not layers. */
    CHECK_EQ_INT(gwr_network_num_layers(n), 5);
    gwr_tensor *pos = gwr_network_find_tensor(n, "pos");
    const gwr_weights *d = pos ? gwr_tensor_default(pos) : NULL;
    if (CHECK(d)) {
        CHECK_EQ_INT(d->dtype, GWR_INT64);
        CHECK_EQ_INT(d->rank, 0);
        CHECK_EQ_INT(d->nbytes, 8);
    }
    CHECK(gwr_tensor_default(gwr_network_find_tensor(n, "X")) == NULL);
    gwr_layer *l = gwr_network_layer(n, 0);
    CHECK_STR(gwr_layer_op(l), "SequenceEmpty");
    CHECK(type_is(gwr_network_output(n, 0), "float32[?,3,4]") || type_is(gwr_network_output(n, 0), "float32[...]") ||
          gwr_tensor_dtype(gwr_network_output(n, 0)) == GWR_FLOAT32);
    gwr_network_free(n);
}

TEST(td_optional) {
    gwr_network *n = load(td("node/test_optional_has_element"));
    if (!CHECK(n)) return;
    gwr_tensor *in = gwr_network_input(n, 0);
    CHECK_EQ_INT(gwr_tensor_kind(in), GWR_VALUE_OPTIONAL);
    CHECK(type_is(in, "optional<float32[4]>"));
    CHECK(type_is(gwr_network_output(n, 0), "bool[]"));
    gwr_network_free(n);
    n = load(td("node/test_if_seq"));
    if (!CHECK(n)) return;
    CHECK_EQ_INT(gwr_tensor_kind(gwr_network_output(n, 0)), GWR_VALUE_SEQUENCE);
    gwr_network_free(n);
}

TEST(td_conv_transpose) {
    gwr_network *n = load(td("pytorch-converted/test_ConvTranspose2d"));
    if (!CHECK(n)) return;
    CHECK_EQ_INT(gwr_network_num_inputs(n), 3);
    CHECK_EQ_INT(gwr_network_num_layers(n), 1);
    gwr_tensor *w = gwr_network_find_tensor(n, "1");
    const gwr_weights *d = w ? gwr_tensor_default(w) : NULL;
    if (CHECK(d)) {
        CHECK_EQ_INT(d->rank, 4);
        CHECK_EQ_INT(d->dims[0], 3);
        CHECK_EQ_INT(d->nbytes, 3 * 4 * 3 * 3 * 4);
        CHECK(d->name == NULL); /* named by its input */
    }
    gwr_layer *l = gwr_network_layer(n, 0);
    CHECK_EQ_INT(gwr_layer_type(l), GWR_LAYER_DECONVOLUTION);
    const int64_t *v;
    int64_t nv;
    if (CHECK_OK(gwr_layer_get_ints(l, "strides", &v, &nv))) CHECK(nv == 2 && v[0] == 3 && v[1] == 2);
    int64_t group;
    CHECK_OK(gwr_layer_get_int(l, "group", &group));
    CHECK_EQ_INT(group, 1);
    CHECK_EQ_INT(gwr_layer_num_attrs(l), 6);
    CHECK_STR(gwr_network_name(n), "torch-jit-export");
    gwr_network_free(n);
}

TEST(td_absent) {
    gwr_network *n = load(td("node/test_clip_default_inbounds"));
    if (!CHECK(n)) return;
    gwr_layer *l = gwr_network_layer(n, 0);
    CHECK_EQ_INT(gwr_layer_num_inputs(l), 3);
    CHECK(gwr_layer_input(l, 1) == NULL && gwr_layer_input(l, 2) == NULL);
    gwr_network_free(n);
    n = load(td("node/test_lstm_defaults"));
    if (!CHECK(n)) return;
    l = gwr_network_layer(n, 0);
    CHECK_EQ_INT(gwr_layer_num_outputs(l), 2);
    gwr_tensor *y = gwr_layer_output(l, 0);
    CHECK(gwr_tensor_prop(y, "onnx.absent", NULL) != NULL);
    CHECK(gwr_tensor_prop(gwr_layer_output(l, 1), "onnx.absent", NULL) == NULL);
    CHECK_STR(gwr_tensor_name(gwr_layer_output(l, 1)), "Y_h");
    gwr_network_free(n);
}

/* Every model of the test data loads and verifies, with and without
 * shape inference. */
TEST(td_all) {
    static const char *const dirs[] = {"node", "pytorch-converted", "pytorch-operator", "real", "simple"};
    int nok = 0, nbad = 0;
    for (size_t d = 0; d < sizeof dirs / sizeof *dirs; d++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "ls -1 %s/%s", TD, dirs[d]);
        FILE *p = popen(cmd, "r");
        if (!CHECK(p)) continue;
        char line[512];
        while (fgets(line, sizeof line, p)) {
            line[strcspn(line, "\n")] = 0;
            char path[1200];
            snprintf(path, sizeof path, "%s/%s/%s/model.onnx", TD, dirs[d], line);
            if (access(path, R_OK)) continue;
            for (int infer = 0; infer < 2; infer++) {
                gwr_onnx_load_options o = {0, infer};
                gwr_network *n = gwr_onnx_load(path, &o);
                if (n && gwr_network_verify(n) == GWR_OK) {
                    nok++;
                } else {
                    nbad++;
                    fprintf(stderr, "  %s: %s\n", path, n ? gwr_network_errmsg(n) : gwr_last_errmsg());
                }
                gwr_network_free(n);
            }
        }
        pclose(p);
    }
    CHECK_EQ_INT(nbad, 0);
    CHECK(nok >= 2000);
}

/* ---- generated models ---- */

TEST(features) {
    gwr_network *n = load(cs("features.onnx"));
    if (!CHECK(n)) return;
    /* model */
    CHECK_STR(NPROP(n, "onnx.ir_version"), "8");
    CHECK_STR(NPROP(n, "onnx.model_version"), "7");
    CHECK_STR(NPROP(n, "onnx.producer_name"), "gwr-test");
    CHECK_STR(NPROP(n, "onnx.producer_version"), "1.2");
    CHECK_STR(NPROP(n, "onnx.domain"), "org.test");
    CHECK_STR(NPROP(n, "onnx.doc_string"), "model doc");
    CHECK_STR(NPROP(n, "onnx.meta.author"), "me");
    CHECK_STR(NPROP(n, "onnx.meta.license"), "MIT");
    CHECK_STR(NPROP(n, "onnx.graph_doc_string"), "graph doc");
    CHECK_STR(gwr_network_name(n), "features");
    /* metadata in file order */
    int ia = -1, il = -1;
    for (int i = 0; i < gwr_network_num_props(n); i++) {
        if (!strcmp(gwr_network_prop_key(n, i), "onnx.meta.author")) ia = i;
        if (!strcmp(gwr_network_prop_key(n, i), "onnx.meta.license")) il = i;
    }
    CHECK(ia >= 0 && il == ia + 1);
    size_t len;
    CHECK(gwr_network_prop(n, "onnx.function.0", &len) != NULL && len > 10);
    CHECK(gwr_network_prop(n, "onnx.function.1", NULL) == NULL);
    CHECK(gwr_network_prop(n, "onnx.training_info.0", &len) != NULL && len > 10);
    CHECK(gwr_network_prop(n, "onnx.quantization_annotation.0", &len) != NULL && len > 5);
    /* opsets, "ai.onnx" style domains kept in order */
    CHECK_EQ_INT(gwr_network_num_opsets(n), 3);
    CHECK_STR(gwr_network_opset_domain(n, 0), "");
    CHECK_STR(gwr_network_opset_domain(n, 1), "ai.onnx.ml");
    CHECK_EQ_INT(gwr_network_opset(n, "ai.onnx.ml"), 3);
    CHECK_EQ_INT(gwr_network_opset(n, "org.custom"), 1);
    /* inputs: symbolic dims, denotations, doc, default */
    gwr_tensor *x = gwr_network_input(n, 0);
    CHECK(type_is(x, "float32[batch,4]"));
    CHECK(GWR_DIM_IS_SYM(gwr_tensor_dim(x, 0)));
    CHECK_STR(gwr_network_dim_name(n, gwr_tensor_dim(x, 0)), "batch");
    CHECK_STR(TPROP(x, "onnx.denotation"), "TENSOR");
    CHECK_STR(TPROP(x, "onnx.dim_denotation.0"), "DATA_BATCH");
    CHECK(gwr_tensor_prop(x, "onnx.dim_denotation.1", NULL) == NULL);
    CHECK_STR(TPROP(x, "onnx.doc"), "the input");
    gwr_tensor *bias = gwr_network_input(n, 1);
    const gwr_weights *bd = gwr_tensor_default(bias);
    if (CHECK(bd)) CHECK(((const float *)bd->data)[0] == 100.0f);
    /* initializers first, in file order; then the sparse one; then nodes */
    CHECK_EQ_INT(gwr_network_num_layers(n), 3 + 9);
    gwr_layer *lw = gwr_network_layer(n, 0);
    CHECK_STR(gwr_layer_name(lw), "W");
    CHECK_EQ_INT(gwr_layer_type(lw), GWR_LAYER_CONSTANT);
    CHECK(gwr_layer_prop(lw, "onnx.constant_node", NULL) == NULL);
    CHECK_STR(gwr_tensor_name(gwr_layer_output(lw, 0)), "W");
    CHECK(type_is(gwr_layer_output(lw, 0), "float32[4,4]"));
    const gwr_weights *w;
    if (CHECK_OK(gwr_layer_get_tensor(lw, "value", &w))) {
        CHECK(((const float *)w->data)[15] == 15.0f);
        CHECK(w->name == NULL); /* named by its tensor */
    }
    /* the initializer "clash" gives its layer name to the node "clash" */
    gwr_layer *lc = gwr_network_layer(n, 1);
    CHECK_STR(gwr_tensor_name(gwr_layer_output(lc, 0)), "clash");
    CHECK(strcmp(gwr_layer_name(lc), "clash") != 0);
    CHECK(gwr_layer_prop(lc, "onnx.constant_node", NULL) == NULL);
    gwr_layer *sp = gwr_network_layer(n, 2);
    CHECK(gwr_layer_prop(sp, "onnx.sparse", NULL) != NULL);
    CHECK(gwr_layer_prop(sp, "onnx.sparse", NULL) != NULL);
    CHECK_STR(gwr_tensor_name(gwr_layer_output(sp, 0)), "sp");
    CHECK(type_is(gwr_layer_output(sp, 0), "float32[3,3]"));
    const char *sv;
    CHECK_OK(gwr_layer_get_string(sp, "sparse_value", &sv, &len));
    CHECK(len > 10);
    /* unnamed, duplicate and ai.onnx nodes */
    gwr_layer *mm = gwr_network_layer(n, 3);
    CHECK_STR(gwr_layer_op(mm), "MatMul");
    CHECK(gwr_layer_prop(mm, "onnx.unnamed", NULL) != NULL);
    CHECK(gwr_layer_input(mm, 1) == gwr_layer_output(lw, 0));
    CHECK(type_is(gwr_layer_output(mm, 0), "undefined[...]")); /* no inference by default */
    gwr_layer *d1 = gwr_network_layer(n, 4), *d2 = gwr_network_layer(n, 5);
    CHECK_STR(gwr_layer_name(d1), "dup");
    CHECK(gwr_layer_prop(d1, "onnx.name", NULL) == NULL);
    CHECK(strcmp(gwr_layer_name(d2), "dup") != 0);
    CHECK_STR(LPROP(d2, "onnx.name"), "dup");
    CHECK(gwr_layer_input(d1, 1) == bias);
    gwr_layer *clip = layer_named(n, "clip");
    if (CHECK(clip)) {
        CHECK_STR(gwr_layer_domain(clip), "");
        CHECK_STR(LPROP(clip, "onnx.domain"), "ai.onnx");
        CHECK_EQ_INT(gwr_layer_type(clip), GWR_LAYER_ACTIVATION);
        CHECK_STR(gwr_layer_doc(clip), "node doc");
        CHECK(gwr_layer_input(clip, 1) == NULL && gwr_layer_input(clip, 2) == NULL);
    }
    /* value_info: type, doc, prop; entries for unknown names are dropped */
    gwr_tensor *add = gwr_network_find_tensor(n, "add");
    CHECK(type_is(add, "float32[batch,4]"));
    CHECK_STR(TPROP(add, "onnx.doc"), "add doc");
    CHECK(gwr_tensor_prop(add, "onnx.value_info", NULL) != NULL);
    CHECK(gwr_tensor_prop(gwr_network_find_tensor(n, "relu"), "onnx.value_info", NULL) == NULL);
    CHECK(gwr_network_find_tensor(n, "nonexistent") == NULL);
    /* the custom op: PLUGIN in its domain, every attribute kind */
    gwr_layer *foo = layer_named(n, "clash");
    if (CHECK(foo)) {
        CHECK_EQ_INT(gwr_layer_type(foo), GWR_LAYER_PLUGIN);
        CHECK_STR(gwr_layer_domain(foo), "org.custom");
        CHECK_STR(gwr_layer_op(foo), "Foo");
        CHECK_EQ_INT(gwr_layer_num_inputs(foo), 4);
        CHECK(gwr_layer_input(foo, 1) == gwr_layer_output(lc, 0));
        CHECK(gwr_layer_input(foo, 2) == gwr_layer_output(sp, 0));
        CHECK(gwr_layer_input(foo, 3) == NULL);
        CHECK_EQ_INT(gwr_layer_num_outputs(foo), 3);
        gwr_tensor *absent = gwr_layer_output(foo, 1);
        CHECK(gwr_tensor_prop(absent, "onnx.absent", NULL) != NULL);
        CHECK_STR(gwr_tensor_name(gwr_layer_output(foo, 2)), "f2");
        const char *s;
        CHECK_OK(gwr_layer_get_string(foo, "s", &s, &len));
        CHECK(len == 5 && !strcmp(s, "hello"));
        const gwr_bytes *ss;
        int64_t ns;
        if (CHECK_OK(gwr_layer_get_strings(foo, "ss", &ss, &ns)))
            CHECK(ns == 2 && ss[1].len == 2 && !memcmp(ss[1].data, "bc", 2));
        float f;
        CHECK_OK(gwr_layer_get_float(foo, "f", &f));
        CHECK(f == 1.5f);
        CHECK_STR(LPROP(foo, "onnx.attr_doc.f"), "attr doc");
        const gwr_weights *ts;
        int64_t nt;
        if (CHECK_OK(gwr_layer_get_tensors(foo, "ts", &ts, &nt))) {
            CHECK(nt == 2 && ts[0].dtype == GWR_INT32 && ((const int32_t *)ts[0].data)[1] == 2);
            CHECK(ts[1].rank == 0 && *(const float *)ts[1].data == 3.5f);
        }
        const int64_t *iv;
        int64_t ni = -1;
        CHECK_OK(gwr_layer_get_ints(foo, "ints", &iv, &ni));
        CHECK_EQ_INT(ni, 0);
        CHECK_OK(gwr_layer_get_string(foo, "sp", &s, &len));
        CHECK_STR(LPROP(foo, "onnx.attr_type.sp"), "sparse_tensor");
        CHECK_OK(gwr_layer_get_string(foo, "tp", &s, &len));
        CHECK_STR(LPROP(foo, "onnx.attr_type.tp"), "type_proto");
        CHECK_STR(LPROP(foo, "onnx.attr_ref.ref"), "outer");
        CHECK(gwr_layer_has_attr(foo, "ref"));
        const gwr_bytes *lst;
        int64_t nl;
        if (CHECK_OK(gwr_layer_get_strings(foo, "tps", &lst, &nl))) CHECK(nl == 2 && lst[1].len > 4);
        CHECK_STR(LPROP(foo, "onnx.attr_type.tps"), "type_protos");
        if (CHECK_OK(gwr_layer_get_strings(foo, "sps", &lst, &nl))) CHECK(nl == 1 && lst[0].len > 4);
        CHECK_STR(LPROP(foo, "onnx.attr_type.sps"), "sparse_tensors");
    }
    /* GRAPHS: subgraphs owned by the layer, reading the enclosing input */
    gwr_layer *bar = layer_named(n, "bar");
    gwr_network *const *bodies;
    int64_t nb = 0;
    if (CHECK(bar) && CHECK_OK(gwr_layer_get_graphs(bar, "bodies", &bodies, &nb)) && CHECK_EQ_INT(nb, 2)) {
        CHECK_STR(gwr_network_name(bodies[1]), "body_Abs");
        CHECK(gwr_network_owner(bodies[0]) == bar && gwr_network_parent(bodies[0]) == n);
        CHECK(gwr_layer_input(gwr_network_layer(bodies[1], 0), 0) == x);
        CHECK_STR(gwr_layer_op(gwr_network_layer(bodies[1], 0)), "Abs");
    }
    /* a node named like a generated name keeps its name */
    CHECK(layer_named(n, "Add_0") != NULL);
    /* Constant nodes: attributes as they are, type from the value */
    gwr_tensor *ci = gwr_network_find_tensor(n, "c_int"), *cf = gwr_network_find_tensor(n, "c_f");
    if (CHECK(ci && cf)) {
        gwr_layer *l = gwr_tensor_parent(ci);
        CHECK_EQ_INT(gwr_layer_type(l), GWR_LAYER_CONSTANT);
        CHECK(gwr_layer_prop(l, "onnx.constant_node", NULL) != NULL);
        const int64_t *iv;
        int64_t ni;
        CHECK_OK(gwr_layer_get_ints(l, "value_ints", &iv, &ni));
        CHECK(ni == 3 && iv[2] == 3);
        CHECK(type_is(ci, "int64[3]"));
        CHECK(type_is(cf, "float32[]"));
    }
    /* outputs, in order */
    CHECK_EQ_INT(gwr_network_num_outputs(n), 2);
    CHECK_STR(gwr_tensor_name(gwr_network_output(n, 0)), "out");
    CHECK(type_is(gwr_network_output(n, 0), "float32[batch,4]"));
    CHECK(gwr_network_output(n, 1) == ci);
    gwr_network_free(n);
}

/* Every element type: the typed fields give the bytes raw_data gives. */
TEST(dtypes) {
    gwr_network *n = load(cs("dtypes.onnx"));
    if (!CHECK(n)) return;
    for (int dt = 1; dt <= 22; dt++) {
        if (dt == GWR_STRING) continue;
        char rn[16], tn[16];
        snprintf(rn, sizeof rn, "r%d", dt);
        snprintf(tn, sizeof tn, "t%d", dt);
        gwr_tensor *r = gwr_network_find_tensor(n, rn), *t = gwr_network_find_tensor(n, tn);
        const gwr_weights *wr = NULL, *wt = NULL;
        if (!CHECK(r && t)) continue;
        CHECK_OK(gwr_layer_get_tensor(gwr_tensor_parent(r), "value", &wr));
        CHECK_OK(gwr_layer_get_tensor(gwr_tensor_parent(t), "value", &wt));
        if (!CHECK(wr && wt)) continue;
        CHECK_EQ_INT(wr->dtype, dt);
        CHECK_EQ_INT(wt->dtype, dt);
        if (!CHECK_EQ_INT(wr->nbytes, wt->nbytes) || memcmp(wr->data, wt->data, wr->nbytes)) {
            CHECK(!"typed and raw bytes differ");
            fprintf(stderr, "  dtype %d (%s)\n", dt, gwr_dtype_name((gwr_dtype)dt));
        }
        CHECK_EQ_INT(gwr_tensor_dtype(r), dt);
    }
    const gwr_weights *w;
    gwr_tensor *t;
#define VALUE(name) ((t = gwr_network_find_tensor(n, name)) && !gwr_layer_get_tensor(gwr_tensor_parent(t), "value", &w))
    if (CHECK(VALUE("t9"))) CHECK(!memcmp(w->data, "\1\0\1", 3));
    if (CHECK(VALUE("t10"))) CHECK(((const uint16_t *)w->data)[0] == 0x3800); /* float16 0.5 */
    if (CHECK(VALUE("t12"))) CHECK(((const uint32_t *)w->data)[2] == 0xffffffffu);
    if (CHECK(VALUE("t13"))) CHECK(((const uint64_t *)w->data)[2] == UINT64_MAX);
    if (CHECK(VALUE("t14"))) CHECK(w->nbytes == 24 && ((const float *)w->data)[1] == 2.0f);
    if (CHECK(VALUE("t21"))) CHECK(w->nbytes == 3 && ((const uint8_t *)w->data)[1] == 0x43);
    if (CHECK(VALUE("t2"))) CHECK(((const uint8_t *)w->data)[1] == 200);
    if (CHECK(VALUE("str"))) {
        const gwr_bytes *b = w->data;
        CHECK(w->nbytes == 2 * sizeof(gwr_bytes));
        CHECK(b[0].len == 2 && !memcmp(b[0].data, "ab", 2));
        CHECK(b[1].len == 2 && b[1].data[0] == 0 && b[1].data[1] == 'z');
        CHECK(type_is(t, "string[2]"));
    }
    if (CHECK(VALUE("empty"))) CHECK(w->nbytes == 0 && w->rank == 2);
    if (CHECK(VALUE("empty_typed"))) CHECK(w->nbytes == 0 && w->dims[1] == 0);
    if (CHECK(VALUE("big"))) {
        const float *f = w->data;
        CHECK(w->nbytes == 70000 * 4 && f[0] == 0.0f && f[69999] == 69999.0f);
        CHECK((uintptr_t)f % 16 == 0);
    }
#undef VALUE
    gwr_network_free(n);
}

TEST(subgraphs) {
    gwr_network *n = load(cs("subgraphs.onnx"));
    if (!CHECK(n)) return;
    gwr_layer *iff = layer_named(n, "the_if"), *late = layer_named(n, "late_relu");
    gwr_network *tg = NULL, *eg = NULL, *body = NULL;
    if (!CHECK(iff && late)) goto out;
    CHECK_OK(gwr_layer_get_graph(iff, "then_branch", &tg));
    CHECK_OK(gwr_layer_get_graph(iff, "else_branch", &eg));
    if (!CHECK(tg && eg)) goto out;
    /* an initializer inside a subgraph is a layer of the subgraph */
    gwr_tensor *k = gwr_network_find_tensor(tg, "k");
    CHECK(k && !gwr_layer_prop(gwr_tensor_parent(k), "onnx.constant_node", NULL));
    gwr_layer *tadd = layer_named(tg, "then_add");
    if (CHECK(tadd)) {
        CHECK(gwr_layer_input(tadd, 0) == gwr_network_find_tensor(n, "x"));
        CHECK(gwr_layer_input(tadd, 1) == k);
    }
    /* two levels down: reads the root's initializer */
    gwr_layer *loop = layer_named(eg, "inner_loop");
    if (!CHECK(loop) || !CHECK_OK(gwr_layer_get_graph(loop, "body", &body))) goto out;
    gwr_layer *dadd = layer_named(body, "deep_add");
    if (CHECK(dadd)) CHECK(gwr_layer_input(dadd, 1) == gwr_network_find_tensor(n, "W"));
    /* the inner loop reads a root tensor produced after the If */
    CHECK(gwr_layer_input(loop, 2) == gwr_layer_output(late, 0));
    CHECK(gwr_layer_input(loop, 0) == gwr_network_find_tensor(n, "n"));
    /* so the If comes after the Relu in topological order */
    gwr_layer *order[8];
    if (CHECK(gwr_network_num_layers(n) <= 8) && CHECK_OK(gwr_network_topo_order(n, order))) {
        int pi = -1, pr = -1;
        for (int i = 0; i < gwr_network_num_layers(n); i++) {
            if (order[i] == iff) pi = i;
            if (order[i] == late) pr = i;
        }
        CHECK(pr >= 0 && pi > pr);
    }
    CHECK_OK(gwr_network_verify(n));
out:
    gwr_network_free(n);
}

TEST(types) {
    gwr_network *n = load(cs("types.onnx"));
    if (!CHECK(n)) return;
    CHECK(type_is(gwr_network_find_tensor(n, "seq"), "sequence<float32[n]>"));
    CHECK(type_is(gwr_network_find_tensor(n, "map"), "map<int64,float32[3]>"));
    CHECK(type_is(gwr_network_find_tensor(n, "opt"), "optional<int32[]>"));
    CHECK(type_is(gwr_network_find_tensor(n, "sp"), "sparse float32[3,3]"));
    CHECK(type_is(gwr_network_find_tensor(n, "untyped"), "undefined[...]"));
    CHECK(type_is(gwr_network_find_tensor(n, "neg"), "float32[?]"));
    CHECK(type_is(gwr_network_find_tensor(n, "noshape"), "int8[...]"));
    CHECK_EQ_INT(gwr_tensor_kind(gwr_network_find_tensor(n, "map")), GWR_VALUE_MAP);
    gwr_network_free(n);
}

TEST(infer) {
    gwr_network *n = load(cs("infer.onnx"));
    if (!CHECK(n)) return;
    CHECK(type_is(gwr_network_find_tensor(n, "mm"), "undefined[...]"));
    gwr_network_free(n);
    gwr_onnx_load_options o = {0, 1};
    n = gwr_onnx_load(cs("infer.onnx"), &o);
    if (!CHECK(n)) return;
    CHECK(type_is(gwr_network_find_tensor(n, "mm"), "float32[b,5]"));
    CHECK(type_is(gwr_network_find_tensor(n, "r"), "float32[b,5]"));
    /* a failed inference leaves the layer as it was */
    CHECK(type_is(gwr_network_find_tensor(n, "bad"), "undefined[...]"));
    CHECK_OK(gwr_network_verify(n));
    gwr_network_free(n);
}

/* dim_param "?" (Paddle2ONNX's spelling of a dynamic dim) is an unknown
 * dim: two of them need not be equal, and no symbol "?" is made. */
TEST(question_dims) {
    gwr_network *n = load(cs("question_dims.onnx"));
    if (!CHECK(n)) return;
    gwr_tensor *x = gwr_network_find_tensor(n, "x");
    CHECK(type_is(x, "float32[?,3,?,?]"));
    CHECK(gwr_tensor_rank(x) == 4 && gwr_tensor_dims(x)[0] == GWR_DIM_UNKNOWN && gwr_tensor_dims(x)[2] == GWR_DIM_UNKNOWN);
    gwr_network_free(n);
}

TEST(merged_graph_fields) {
    gwr_network *n = load(cs("merged.onnx"));
    if (!CHECK(n)) return;
    CHECK_EQ_INT(gwr_network_num_layers(n), 4);
    CHECK_STR(gwr_layer_name(gwr_network_layer(n, 0)), "W1");
    CHECK_STR(gwr_layer_name(gwr_network_layer(n, 1)), "W2");
    CHECK_EQ_INT(gwr_network_num_inputs(n), 1);
    CHECK_EQ_INT(gwr_network_num_outputs(n), 1);
    CHECK_EQ_INT(gwr_network_opset(n, ""), 17);
    gwr_network_free(n);
}

/* Initializers in the forms the importer reads from the wire itself
 * (docs/onnx.md) give what protobuf-c's unpacking gives: packed and
 * unpacked dims, the last of a repeated singular field, an empty tensor;
 * E (float_data) is unpacked by protobuf-c, for comparison. The bytes of
 * those read from the wire are copied to 64-byte aligned memory. */
TEST(initializer_wire_forms) {
    gwr_network *n = load(cs("wire_forms.onnx"));
    if (!CHECK(n)) return;
    static const float want[6] = {1, 2, 3, 4, 5, 6};
    const char *names[] = {"A", "B", "E"};
    for (int k = 0; k < 3; k++) {
        gwr_layer *l = layer_named(n, names[k]);
        const gwr_weights *w;
        if (!CHECK(l) || !CHECK_OK(gwr_layer_get_tensor(l, "value", &w))) continue;
        CHECK_EQ_INT(w->dtype, GWR_FLOAT32);
        CHECK_EQ_INT(w->rank, 2);
        CHECK(w->rank == 2 && w->dims[0] == 2 && w->dims[1] == 3);
        CHECK(w->nbytes == sizeof want && !memcmp(w->data, want, sizeof want));
        if (k < 2) CHECK_EQ_INT((uintptr_t)w->data % 64, 0);
        CHECK(type_is(gwr_layer_output(l, 0), "float32[2,3]"));
    }
    const gwr_weights *w;
    gwr_layer *c = layer_named(n, "C");
    CHECK(!layer_named(n, "wrong"));
    if (CHECK(c) && CHECK_OK(gwr_layer_get_tensor(c, "value", &w))) {
        static const int64_t cw[3] = {-1, 0, (int64_t)1 << 40};
        CHECK_EQ_INT(w->dtype, GWR_INT64);
        CHECK(w->rank == 1 && w->dims[0] == 3);
        CHECK(w->nbytes == sizeof cw && !memcmp(w->data, cw, sizeof cw));
    }
    gwr_layer *d = layer_named(n, "D");
    if (CHECK(d) && CHECK_OK(gwr_layer_get_tensor(d, "value", &w))) {
        CHECK(w->rank == 1 && w->dims[0] == 0 && w->nbytes == 0);
        CHECK(type_is(gwr_layer_output(d, 0), "float32[0]"));
    }
    CHECK_OK(gwr_network_verify(n));
    gwr_network_free(n);
}

/* STRINGS attributes are bytes: an entry may hold NULs. */
TEST(strings_with_nul) {
    gwr_network *n = load(cs("strings_nul.onnx"));
    if (!CHECK(n)) return;
    const gwr_bytes *v = NULL;
    int64_t k = 0;
    CHECK_OK(gwr_layer_get_strings(gwr_network_find_layer(n, "F"), "strs", &v, &k));
    CHECK(k == 2 && v[1].len == 3 && !memcmp(v[1].data, "a\0b", 3));
    gwr_network_free(n);
}

TEST(deep_ok) {
    gwr_network *n = load(cs("ok_deep_if.onnx"));
    if (!CHECK(n)) return;
    int depth = 0;
    gwr_network *g = n;
    for (;;) {
        gwr_layer *l = gwr_network_num_layers(g) ? gwr_network_layer(g, 0) : NULL;
        gwr_network *sub = NULL;
        if (!l || strcmp(gwr_layer_op(l), "If") || gwr_layer_get_graph(l, "then_branch", &sub)) break;
        g = sub;
        depth++;
    }
    CHECK_EQ_INT(depth, 60);
    /* the innermost reads the root's input */
    CHECK(gwr_layer_input(gwr_network_layer(g, 0), 0) == gwr_network_input(n, 0));
    gwr_network_free(n);
}

/* A subgraph output naming an enclosing graph's tensor: an Identity
 * layer reads it. */
TEST(outer_output) {
    gwr_network *n = load(cs("ok_subgraph_outer_output.onnx"));
    if (!CHECK(n)) return;
    gwr_layer *iff = gwr_network_layer(n, 0);
    gwr_network *g = NULL;
    if (CHECK_OK(gwr_layer_get_graph(iff, "then_branch", &g))) {
        CHECK_EQ_INT(gwr_network_num_layers(g), 1);
        gwr_layer *id = gwr_network_layer(g, 0);
        CHECK_STR(gwr_layer_op(id), "Identity");
        CHECK_STR(gwr_layer_name(id), "x:passthrough");
        CHECK(gwr_layer_input(id, 0) == gwr_network_input(n, 0));
        CHECK(gwr_network_output(g, 0) == gwr_layer_output(id, 0));
        CHECK(type_is(gwr_network_output(g, 0), "float32[2,3]"));
    }
    gwr_network_free(n);
}

TEST(passthrough) {
    gwr_network *n = load(cs("ok_passthrough.onnx"));
    if (!CHECK(n)) return;
    CHECK_EQ_INT(gwr_network_num_layers(n), 0);
    CHECK(gwr_network_output(n, 0) == gwr_network_input(n, 0));
    gwr_network_free(n);
}

static const float *value_of(gwr_network *n, const char *name, size_t *nbytes) {
    gwr_tensor *t = gwr_network_find_tensor(n, name);
    const gwr_weights *w;
    if (!t || gwr_layer_get_tensor(gwr_tensor_parent(t), "value", &w)) return NULL;
    *nbytes = w->nbytes;
    return w->data;
}

static void check_ext_values(gwr_network *n) {
    size_t nb = 0;
    const float *a = value_of(n, "a", &nb);
    if (CHECK(a)) CHECK(nb == 4096 && a[0] == 0.0f && a[1023] == 1023.0f);
    const float *b = value_of(n, "b", &nb);
    if (CHECK(b)) CHECK(nb == 12 && b[0] == 1.0f && b[2] == 3.0f && (uintptr_t)b % 4 == 0);
    const int64_t *c = (const int64_t *)value_of(n, "c", &nb);
    if (CHECK(c)) CHECK(nb == 16 && c[0] == 7 && c[1] == -7);
    const float *d = value_of(n, "d", &nb);
    if (CHECK(d)) CHECK(nb == 4 && d[0] == 42.0f);
}

TEST(external_ok) {
    gwr_network *n = load(cs("ext/ok.onnx"));
    if (!CHECK(n)) return;
    check_ext_values(n);
    /* borrowed weights outlive the network that held them */
    gwr_tensor *t = gwr_network_find_tensor(n, "a");
    const gwr_weights *w;
    gwr_buffer *keep = NULL;
    if (CHECK(t) && CHECK_OK(gwr_layer_get_tensor(gwr_tensor_parent(t), "value", &w))) {
        keep = w->buffer;
        gwr_buffer_retain(keep);
    }
    gwr_network_free(n);
    if (keep) {
        const float *f = gwr_buffer_data(keep);
        CHECK(gwr_buffer_size(keep) == 4096 && f[1023] == 1023.0f);
        gwr_buffer_release(keep);
    }
    gwr_onnx_load_options o = {1, 0};
    n = gwr_onnx_load(cs("ext/ok.onnx"), &o);
    if (CHECK(n)) check_ext_values(n);
    gwr_network_free(n);
}

static void *read_all(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *b = malloc(sz > 0 ? (size_t)sz : 1);
    if (b && fread(b, 1, (size_t)sz, f) != (size_t)sz) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *size = (size_t)sz;
    return b;
}

TEST(load_memory) {
    size_t size;
    void *buf = read_all(cs("ext/ok.onnx"), &size);
    if (!CHECK(buf)) return;
    gwr_network *n = gwr_onnx_load_memory(buf, size, cs("ext"), "mem-model", NULL);
    if (CHECK(n)) check_ext_values(n);
    gwr_network_free(n);
    /* without a base directory, external data is an error */
    n = gwr_onnx_load_memory(buf, size, NULL, "mem-model", NULL);
    CHECK(n == NULL);
    CHECK(!strncmp(gwr_last_errmsg(), "mem-model: ", 11));
    CHECK_CONTAINS(gwr_last_errmsg(), "without a base directory");
    free(buf);
    /* the bytes may go away right after the call */
    buf = read_all(cs("features.onnx"), &size);
    if (!CHECK(buf)) return;
    n = gwr_onnx_load_memory(buf, size, NULL, NULL, NULL);
    memset(buf, 0, size);
    free(buf);
    if (CHECK(n)) {
        CHECK_EQ_INT(gwr_network_num_layers(n), 12);
        const gwr_weights *w;
        if (CHECK_OK(gwr_layer_get_tensor(gwr_network_layer(n, 0), "value", &w)))
            CHECK(((const float *)w->data)[15] == 15.0f);
    }
    gwr_network_free(n);
    n = gwr_onnx_load_memory(NULL, 0, NULL, NULL, NULL);
    CHECK(n == NULL);
    CHECK_CONTAINS(gwr_last_errmsg(), "<memory>: empty file");
}

TEST(external_errors) {
    expect_fail("ext/abs.onnx", "is not a relative path inside the model's directory");
    expect_fail("ext/dotdot.onnx", "'../outside.bin' is not a relative path");
    expect_fail("ext/dotdot_inside.onnx", "'sub/../weights.bin' is not a relative path");
    expect_fail("ext/link.onnx", "'link.bin' lies outside the model's directory");
    expect_fail("ext/eof.onnx", "lies past the end of 'weights.bin'");
    expect_fail("ext/eof_len.onnx", "[0, 20000) lies past the end");
    expect_fail("ext/badoff.onnx", "offset '12x' is not a non-negative integer");
    expect_fail("ext/badlen.onnx", "length 8 does not match the 16 bytes");
    expect_fail("ext/missing.onnx", "cannot open external data file 'nothere.bin'");
    expect_fail("ext/noloc.onnx", "without a 'location'");
    gwr_onnx_load_options o = {1, 0};
    CHECK(gwr_onnx_load(cs("ext/link.onnx"), &o) == NULL);
}

TEST(model_errors) {
    static const char *const cases[][2] = {
        {"err_raw_size.onnx", "initializer 'W': raw_data has 20 bytes, but float32 of its shape needs 24"},
        {"err_typed_count.onnx", "initializer 'W': 5 values in float_data, but its shape needs 6"},
        {"err_typed_field.onnx", "cannot store its values in int64_data"},
        {"err_neg_dims.onnx", "initializer 'W': dim 0 is negative"},
        {"err_overflow.onnx", "overflow"},
        {"err_overflow_bytes.onnx", "overflow"},
        {"err_absurd.onnx", "raw_data has 4 bytes"},
        {"err_elem_type.onnx", "unknown data_type 99"},
        {"err_no_dtype.onnx", "no data_type"},
        {"err_string_raw.onnx", "string tensors cannot use raw_data"},
        {"err_raw_and_typed.onnx", "both raw_data and float_data"},
        {"err_segment.onnx", "segmented tensors are not supported"},
        {"err_vi_elem_type.onnx", "graph input 'x': unknown elem_type 77"},
        {"err_undefined.onnx", "node 'Conv_3' (Conv) reads 'x9', which no node, initializer or input defines"},
        {"err_dup_output.onnx", "node 'B' (Neg) writes 'y', which node 'A' (Relu) also writes"},
        {"err_dup_output_same.onnx", "node 'S' (Split) writes 'y' twice"},
        {"err_writes_input.onnx", "node 'R' (Relu) writes 'x', which is a graph input"},
        {"err_writes_init.onnx", "initializer 'W' is also written by node 'R' (Relu)"},
        {"err_dup_init.onnx", "initializer 'W' is defined twice"},
        {"err_cycle.onnx", "cycle"},
        {"err_self_cycle.onnx", "cycle"},
        {"err_subgraph_cycle.onnx", "cycle"},
        {"err_empty.onnx", "empty graph"},
        {"err_no_graph.onnx", "no graph"},
        {"err_attr_notype.onnx", "node 'R' (Relu) attribute 'alpha' has no type"},
        {"err_attr_badtype.onnx", "attribute 'alpha' has unknown type 99"},
        {"err_dup_attr.onnx", "attribute 'alpha' is given twice"},
        {"err_no_op.onnx", "has no op_type"},
        {"err_constant_novalue.onnx", "invalid graph: Constant layer 'C' has 0 value attributes"},
        {"err_unnamed_input.onnx", "graph input #1 has no name"},
        {"err_output_undefined.onnx", "graph output 'nope' is not produced"},
        {"err_subgraph_output_undefined.onnx", "graph output 'nope' is not produced"},
        {"err_nul_name.onnx", "NodeProto.name 'a' holds a NUL byte"},
        {"err_bad_opset.onnx", "negative version"},
        {"err_type_nested.onnx", "type nested deeper than 32"},
        {"err_notproto.onnx", "not a valid ONNX model"},
        {"err_wrong_wire.onnx", "ModelProto.graph has wire type 0, expected 2"},
        {"err_wrong_wire_scalar.onnx", "ModelProto.ir_version has wire type 2, expected 0"},
        {"err_group.onnx", "unsupported wire type 3"},
        {"err_truncated.onnx", "truncated"},
        {"err_truncated_init.onnx", "truncated"},
        {"err_deep_if.onnx", "subgraphs nested deeper than 64"},
        {"err_very_deep.onnx", "nested deeper than"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) expect_fail(cases[i][0], cases[i][1]);
}

TEST(file_errors) {
    expect_fail_path(pathf("%s/%s", g_dir, "no-such-model.onnx"), "cannot open: No such file or directory");
    expect_fail_path(g_dir, "is a directory");
    const char *empty = cs("empty.onnx");
    FILE *f = fopen(empty, "wb");
    if (CHECK(f)) fclose(f);
    expect_fail_path(empty, "empty file");
    CHECK(gwr_onnx_load(NULL, NULL) == NULL);
    CHECK_CONTAINS(gwr_last_errmsg(), "NULL path");
    CHECK(gwr_onnx_load_memory(NULL, 5, NULL, "m", NULL) == NULL);
    CHECK_CONTAINS(gwr_last_errmsg(), "m: NULL data");
    /* a name with a newline still gives one line */
    const char *nl = cs("bad\nname.onnx");
    f = fopen(nl, "wb");
    if (CHECK(f)) {
        fputs("junk", f);
        fclose(f);
    }
    CHECK(gwr_onnx_load(nl, NULL) == NULL);
    CHECK(strchr(gwr_last_errmsg(), '\n') == NULL);
}

/* Every prefix and every single-byte change of a model loads or fails
 * cleanly (the sanitizer build checks the "cleanly"). */
static void mangle(const char *name, int step) {
    size_t size;
    unsigned char *buf = read_all(cs(name), &size);
    if (!CHECK(buf)) return;
    int nok = 0, nfail = 0;
    for (size_t cut = 0; cut < size; cut += (size_t)step) {
        gwr_network *n = gwr_onnx_load_memory(buf, cut, NULL, "cut", NULL);
        if (n) {
            nok++;
            CHECK_OK(gwr_network_verify(n));
        } else {
            nfail++;
            CHECK(!strncmp(gwr_last_errmsg(), "cut: ", 5));
        }
        gwr_network_free(n);
    }
    for (size_t i = 0; i < size; i += (size_t)step) {
        for (int x = 0; x < 3; x++) {
            static const unsigned char flips[] = {0xff, 0x80, 0x01};
            buf[i] ^= flips[x];
            gwr_network *n = gwr_onnx_load_memory(buf, size, NULL, "flip", NULL);
            if (n) CHECK_OK(gwr_network_verify(n));
            else CHECK(!strncmp(gwr_last_errmsg(), "flip: ", 6));
            gwr_network_free(n);
            buf[i] ^= flips[x];
        }
    }
    CHECK(nfail > 0);
    free(buf);
}

TEST(mangled) {
    mangle("features.onnx", 1);
    mangle("subgraphs.onnx", 1);
    mangle("types.onnx", 1);
}

/* The generator, found from this file's path (CMake compiles it by its
 * absolute path) or $GWR_SOURCE_DIR. */
static void source_dir(char *out, size_t size) {
    const char *env = getenv("GWR_SOURCE_DIR");
    if (env && *env) {
        snprintf(out, size, "%s", env);
        return;
    }
    snprintf(out, size, "%s", __FILE__);
    char *p = strstr(out, "/tests/unit/test_onnx_import.c");
    if (p) *p = 0;
    else snprintf(out, size, ".");
}

static int make_cases(void) {
    char tmpl[] = "/tmp/gwr_onnx_import_XXXXXX", src[1024];
    if (!mkdtemp(tmpl)) return 0;
    snprintf(g_dir, sizeof g_dir, "%s", tmpl);
    source_dir(src, sizeof src);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/tests/onnx/make_import_cases.py' '%s'", src, g_dir);
    int rc = system(cmd);
    if (rc != 0) fprintf(stderr, "make_import_cases.py failed (%d): python3-onnx is required\n", rc);
    return rc == 0;
}

int main(void) {
    g_have_cases = make_cases();
    CHECK(g_have_cases);
    RUN(td_add);
    RUN(td_constant);
    RUN(td_if);
    RUN(td_loop11);
    RUN(td_capture);
    RUN(td_sequence_defaults);
    RUN(td_optional);
    RUN(td_conv_transpose);
    RUN(td_absent);
    RUN(td_all);
    if (g_have_cases) {
        RUN(features);
        RUN(dtypes);
        RUN(subgraphs);
        RUN(types);
        RUN(infer);
        RUN(question_dims);
        RUN(merged_graph_fields);
    RUN(initializer_wire_forms);
        RUN(strings_with_nul);
    RUN(deep_ok);
        RUN(passthrough);
        RUN(outer_output);
        RUN(external_ok);
        RUN(load_memory);
        RUN(external_errors);
        RUN(model_errors);
        RUN(file_errors);
        RUN(mangled);
    }
    if (g_dir[0]) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
        if (system(cmd)) fprintf(stderr, "could not remove %s\n", g_dir);
    }
    return check_report();
}
