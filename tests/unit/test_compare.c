/* test_compare.c - gwr_network_equal: pairs of networks built the same way
 * except for exactly one thing must compare unequal with a message naming
 * that thing; pairs that differ only where equality does not look (opset
 * order, attribute order, symbol numbering) must compare equal. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gwr/gwr.h"
#include "check.h"

/* Every way the second network of a pair differs from the first. */
typedef enum {
    V_NONE = 0,
    V_NET_NAME,
    V_NET_PROP_VALUE,
    V_NET_PROP_ORDER,
    V_NET_PROP_EXTRA,
    V_OPSET_VERSION,
    V_OPSET_MISSING,
    V_OPSET_ORDER,     /* equal */
    V_SYM_NUMBERING,   /* equal: the same names interned in another order */
    V_INPUT_NAME,
    V_INPUT_DTYPE,
    V_INPUT_SYM,
    V_INPUT_RANK,
    V_INPUT_PROP,
    V_INPUT_DEFAULT_BYTE,
    V_INPUT_DEFAULT_ABSENT,
    V_OUTPUT_NAME,
    V_OUTPUT_EXTRA,
    V_LAYER_NAME,
    V_LAYER_OP,
    V_LAYER_DOMAIN,
    V_LAYER_INPUT,
    V_LAYER_INPUT_ABSENT,
    V_LAYER_OUTPUT_TYPE,
    V_LAYER_OUTPUT_NAME,
    V_TENSOR_PROP,
    V_LAYER_PROP,
    V_LAYER_DOC,
    V_REMOVED,
    V_ATTR_INT,
    V_ATTR_FLOAT_NEGZERO,
    V_ATTR_FLOAT_NAN,  /* equal: the same NaN bits */
    V_ATTR_STRING,
    V_ATTR_INTS,
    V_ATTR_INTS_LONG,
    V_ATTR_FLOATS,
    V_ATTR_STRINGS,
    V_ATTR_MISSING,
    V_ATTR_EXTRA,
    V_ATTR_TYPE,
    V_ATTR_ORDER,      /* equal */
    V_WEIGHTS_BYTE,
    V_WEIGHTS_DIMS,
    V_WEIGHTS_DTYPE,
    V_WEIGHTS_NAME,
    V_WEIGHTS_STRING,
    V_TENSORS_COUNT,
    V_SUB_LAYER_OP,
    V_SUB_OUTPUT,
    V_SUB_NAME,
    V_SUB_NESTED_ATTR,
    V_EXTRA_LAYER,
    V_VALUE_TYPE_SEQ,
    V_COUNT
} variant;


static const float W16[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

/* A subgraph that reads the outer tensor `outer`: Neg (or op) of it. */
static gwr_network *branch(gwr_network *net, const char *name, gwr_tensor *outer, const char *op, int nested_variant) {
    gwr_network *g = gwr_network_new_subgraph(net, name);
    gwr_layer *l = gwr_network_add_layer(g, op, "", "b_op", 1, &outer, 1, NULL);
    gwr_tensor *t = gwr_layer_output(l, 0);
    gwr_tensor_set_type(t, GWR_FLOAT32, -1, NULL);
    /* A second level: a Loop-like custom layer holding its own graph. */
    gwr_layer *holder = gwr_network_add_layer(g, "Wrap", "my.domain", "holder", 1, &t, 1, NULL);
    gwr_network *inner = gwr_network_new_subgraph(g, "inner");
    gwr_layer *il = gwr_network_add_layer(inner, "Identity", "", "inner_id", 1, &t, 1, NULL);
    gwr_layer_set_int(il, "depth", nested_variant ? 3 : 2);
    gwr_network_mark_output(inner, gwr_layer_output(il, 0));
    gwr_layer_set_graph(holder, "body", inner);
    gwr_network_mark_output(g, gwr_layer_output(holder, 0));
    return g;
}

static gwr_network *build(variant v) {
    gwr_network *net = gwr_network_new(v == V_NET_NAME ? "model2" : "model");
    if (!net) return NULL;
    if (v == V_NET_PROP_ORDER) {
        gwr_network_set_prop(net, "onnx.doc_string", "a doc", 5);
        gwr_network_set_prop(net, "onnx.producer_name", "gwr", 3);
    } else {
        gwr_network_set_prop(net, "onnx.producer_name", "gwr", 3);
        gwr_network_set_prop(net, "onnx.doc_string", v == V_NET_PROP_VALUE ? "a dot" : "a doc", 5);
    }
    if (v == V_NET_PROP_EXTRA) gwr_network_set_prop(net, "onnx.meta.k", "v\0w", 3);
    if (v == V_OPSET_ORDER) {
        gwr_network_set_opset(net, "ai.onnx.ml", 3);
        gwr_network_set_opset(net, "", 17);
    } else {
        gwr_network_set_opset(net, "", v == V_OPSET_VERSION ? 18 : 17);
        if (v != V_OPSET_MISSING) gwr_network_set_opset(net, "ai.onnx.ml", 3);
    }
    if (v == V_SYM_NUMBERING) gwr_network_dim_sym(net, "unused_first");
    gwr_dim d_x[2] = {gwr_network_dim_sym(net, v == V_INPUT_SYM ? "N" : "batch"), 4};
    gwr_tensor *x = gwr_network_add_input(net, v == V_INPUT_NAME ? "x2" : "x", v == V_INPUT_DTYPE ? GWR_FLOAT16 : GWR_FLOAT32,
                                          v == V_INPUT_RANK ? 1 : 2, d_x);
    if (v == V_INPUT_PROP) gwr_tensor_set_prop(x, "onnx.doc", "input doc", 9);
    gwr_dim d_m[1] = {4};
    gwr_tensor *m = gwr_network_add_input(net, "mask", GWR_FLOAT32, 1, d_m);
    if (v != V_INPUT_DEFAULT_ABSENT) {
        float dv[4] = {0, 1, 2, 3};
        if (v == V_INPUT_DEFAULT_BYTE) dv[3] = 3.5f;
        int64_t dd[1] = {4};
        gwr_weights w = {GWR_FLOAT32, 1, dd, dv, sizeof dv, NULL, "mask"};
        gwr_tensor_set_default(m, &w);
    }
    /* Weights: a constant matrix; the name and content vary. */
    int64_t wd[2] = {4, 4};
    float wv[16];
    memcpy(wv, W16, sizeof wv);
    if (v == V_WEIGHTS_BYTE) ((unsigned char *)wv)[37] ^= 1;
    if (v == V_WEIGHTS_DIMS) wd[0] = 2, wd[1] = 8;
    gwr_weights w = {v == V_WEIGHTS_DTYPE ? GWR_INT32 : GWR_FLOAT32, 2, wd, wv, sizeof wv, NULL,
                     v == V_WEIGHTS_NAME ? "w_renamed" : "w"};
    gwr_tensor *wt = gwr_network_add_constant(net, "W", &w);
    gwr_tensor_set_type(wt, GWR_FLOAT32, 2, (const gwr_dim[]){4, 4}); /* only the weights differ */
    gwr_tensor *mm = gwr_matmul(net, x, wt);
    gwr_tensor *sum = gwr_add(net, mm, v == V_LAYER_INPUT ? mm : m);
    gwr_layer *act = gwr_network_add_layer(net, v == V_LAYER_OP ? "Sigmoid" : "Relu", v == V_LAYER_DOMAIN ? "my.domain" : "",
                                           v == V_LAYER_NAME ? "act2" : "act", 1, &sum, 1,
                                           (const char *[]){v == V_LAYER_OUTPUT_NAME ? "act_out2" : "act_out"});
    gwr_tensor *a = gwr_layer_output(act, 0);
    gwr_tensor_set_type(a, GWR_FLOAT32, 2, v == V_LAYER_OUTPUT_TYPE ? (gwr_dim[]){d_x[0], 5} : d_x);
    if (v == V_TENSOR_PROP) gwr_tensor_set_prop(a, "onnx.value_info", "", 0);
    if (v == V_LAYER_PROP) gwr_layer_set_prop(act, "onnx.unnamed", "", 0);
    if (v == V_LAYER_DOC) gwr_layer_set_doc(act, "explains");
    gwr_tensor *lo = gwr_constant_f32(net, 0.0f);
    /* Clip reading (a, lo, lo), or (a, absent, lo). */
    gwr_tensor *clipped = gwr_clip(net, a, v == V_LAYER_INPUT_ABSENT ? NULL : lo, NULL);
    gwr_layer *cl = gwr_tensor_parent(clipped);
    if (v == V_LAYER_INPUT_ABSENT) gwr_layer_append_input(cl, NULL);
    gwr_layer_append_input(cl, lo);
    /* A plugin-style layer with every attribute type. */
    gwr_layer *p = gwr_network_add_layer(net, "Fancy", "my.domain", "fancy", 1, &clipped, 2, NULL);
    gwr_tensor_set_type(gwr_layer_output(p, 0), GWR_FLOAT32, 2, d_x);
    gwr_tensor_set_type(gwr_layer_output(p, 1), GWR_INT64, -1, NULL);
    if (v == V_ATTR_ORDER) gwr_layer_set_float(p, "alpha", 0.5f);
    if (v != V_ATTR_MISSING) gwr_layer_set_int(p, "axis", v == V_ATTR_INT ? 2 : 1);
    if (v != V_ATTR_ORDER) {
        if (v == V_ATTR_TYPE) gwr_layer_set_int(p, "alpha", 1);
        else gwr_layer_set_float(p, "alpha", 0.5f);
    }
    gwr_layer_set_float(p, "zero", v == V_ATTR_FLOAT_NEGZERO ? -0.0f : 0.0f);
    gwr_layer_set_float(p, "nan", NAN);
    gwr_layer_set_bytes(p, "mode", v == V_ATTR_STRING ? "ab\0d" : "ab\0c", 4);
    int64_t ints[3] = {0, 0, v == V_ATTR_INTS ? 2 : 1};
    gwr_layer_set_ints(p, "pads", ints, 3);
    int64_t many[100];
    for (int i = 0; i < 100; i++) many[i] = i;
    if (v == V_ATTR_INTS_LONG) many[57] = -1;
    gwr_layer_set_ints(p, "many", many, 100);
    float fl[2] = {1.5f, v == V_ATTR_FLOATS ? 2.25f : 2.5f};
    gwr_layer_set_floats(p, "scales", fl, 2);
    const char *strs[2] = {"one", v == V_ATTR_STRINGS ? "too" : "two"};
    gwr_layer_set_strings(p, "names", strs, 2);
    if (v == V_ATTR_EXTRA) gwr_layer_set_int(p, "extra", 0);
    /* String weights and a tensor list. */
    gwr_bytes sb[2] = {{3, "abc"}, {4, v == V_WEIGHTS_STRING ? "de\0g" : "de\0f"}};
    int64_t sd[1] = {2};
    gwr_weights sw = {GWR_STRING, 1, sd, sb, sizeof sb, NULL, NULL};
    gwr_layer_set_tensor(p, "labels", &sw);
    int64_t one[1] = {1};
    gwr_weights tl[3] = {{GWR_FLOAT32, 1, one, &W16[0], 4, NULL, NULL},
                         {GWR_FLOAT32, 1, one, &W16[1], 4, NULL, NULL},
                         {GWR_FLOAT32, 1, one, &W16[2], 4, NULL, NULL}};
    gwr_layer_set_tensors(p, "tl", tl, v == V_TENSORS_COUNT ? 2 : 3);
    /* If with two branches, the second two levels deep. */
    gwr_tensor *cond = gwr_network_add_input(net, "cond", GWR_BOOL, 0, NULL);
    gwr_tensor *po = gwr_layer_output(p, 0);
    gwr_layer *lif = gwr_network_add_layer(net, "If", "", "if", 1, &cond, 1, (const char *[]){"if_out"});
    gwr_network *then_g = branch(net, v == V_SUB_NAME ? "then2" : "then", po, v == V_SUB_LAYER_OP ? "Abs" : "Neg", 0);
    gwr_network *else_g = branch(net, "else", po, "Neg", v == V_SUB_NESTED_ATTR);
    if (v == V_SUB_OUTPUT) gwr_network_mark_output(then_g, gwr_network_layer(then_g, 0) ? gwr_layer_output(gwr_network_layer(then_g, 0), 0) : NULL);
    gwr_layer_set_graph(lif, "then_branch", then_g);
    gwr_layer_set_graph(lif, "else_branch", else_g);
    gwr_tensor *y = gwr_layer_output(lif, 0);
    gwr_tensor_set_name(y, v == V_OUTPUT_NAME ? "y2" : "y");
    gwr_network_mark_output(net, y);
    if (v == V_OUTPUT_EXTRA) gwr_network_mark_output(net, gwr_layer_output(p, 1));
    if (v == V_REMOVED) gwr_layer_mark_as_removed(gwr_tensor_parent(lo));
    if (v == V_EXTRA_LAYER) gwr_relu(net, y);
    if (v == V_VALUE_TYPE_SEQ) {
        gwr_type el = {GWR_VALUE_TENSOR, GWR_FLOAT32, 1, d_m, NULL};
        gwr_type seq = {GWR_VALUE_SEQUENCE, GWR_UNDEFINED, -1, NULL, &el};
        gwr_tensor_set_value_type(gwr_layer_output(p, 1), &seq);
    }
    return net;
}

/* Builds the pair (V_NONE, v) and checks the verdict and the message. */
static void expect(variant v, int equal, const char *needle) {
    gwr_network *a = build(V_NONE), *b = build(v);
    if (!CHECK(a && b)) return;
    if (!CHECK_OK(gwr_network_verify(a))) fprintf(stderr, "  %s\n", gwr_network_errmsg(a));
    if (!CHECK_OK(gwr_network_verify(b))) fprintf(stderr, "  variant %d: %s\n", (int)v, gwr_network_errmsg(b));
    char why[512];
    strcpy(why, "untouched");
    int r = gwr_network_equal(a, b, why, sizeof why);
    if (!CHECK_EQ_INT(r, equal)) fprintf(stderr, "  variant %d: why = %s\n", (int)v, why);
    if (equal) CHECK_STR(why, "");
    else if (needle) CHECK_CONTAINS(why, needle);
    /* Symmetric verdict. */
    char why2[512];
    CHECK_EQ_INT(gwr_network_equal(b, a, why2, sizeof why2), equal);
    gwr_network_free(a);
    gwr_network_free(b);
}

TEST(equal_pairs) {
    expect(V_NONE, 1, NULL);
    expect(V_OPSET_ORDER, 1, NULL);
    expect(V_SYM_NUMBERING, 1, NULL);
    expect(V_ATTR_FLOAT_NAN, 1, NULL);
    expect(V_ATTR_ORDER, 1, NULL);
    gwr_network *a = build(V_NONE);
    CHECK_EQ_INT(gwr_network_equal(a, a, NULL, 0), 1);
    gwr_network_free(a);
}

TEST(network_level) {
    expect(V_NET_NAME, 0, "network name 'model' vs 'model2'");
    expect(V_NET_PROP_VALUE, 0, "property 'onnx.doc_string' differs: \"a doc\" vs \"a dot\"");
    expect(V_NET_PROP_ORDER, 0, "network: property 0 is 'onnx.producer_name' vs 'onnx.doc_string'");
    expect(V_NET_PROP_EXTRA, 0, "2 vs 3 properties (first extra: 'onnx.meta.k')");
    expect(V_OPSET_VERSION, 0, "opset import '': version 17 vs 18");
    expect(V_OPSET_MISSING, 0, "opset import 'ai.onnx.ml' (version 3) is missing in the second network");
}

TEST(interface) {
    expect(V_INPUT_NAME, 0, "graph input 0: name 'x' vs 'x2'");
    expect(V_INPUT_DTYPE, 0, "graph input 0 ('x'): type float32[batch,4] vs float16[batch,4]");
    expect(V_INPUT_SYM, 0, "type float32[batch,4] vs float32[N,4]");
    expect(V_INPUT_RANK, 0, "graph input 0 ('x'): type");
    expect(V_INPUT_PROP, 0, "graph input 0 ('x'): 0 vs 1 properties (first extra: 'onnx.doc')");
    expect(V_INPUT_DEFAULT_BYTE, 0, "graph input 1 ('mask'): default value differs: byte 14 of 16");
    expect(V_INPUT_DEFAULT_ABSENT, 0, "graph input 1 ('mask'): default value present vs absent");
    expect(V_OUTPUT_NAME, 0, "graph output 0: 'y' vs 'y2'");
    expect(V_OUTPUT_EXTRA, 0, "1 vs 2 graph outputs");
}

TEST(layers) {
    expect(V_LAYER_NAME, 0, "layer 3: name 'act' vs 'act2'");
    expect(V_LAYER_OP, 0, "layer 3 ('act'): op 'Relu' vs 'Sigmoid'");
    expect(V_LAYER_DOMAIN, 0, "layer 3 ('act'): op 'Relu' vs 'my.domain.Relu'");
    expect(V_LAYER_INPUT, 0, "input 1 is 'mask' vs");
    expect(V_LAYER_INPUT_ABSENT, 0, "input 1 is 'Constant_");
    expect(V_LAYER_OUTPUT_TYPE, 0, "layer 3 ('act'): output 0 ('act_out'): type float32[batch,4] vs float32[batch,5]");
    expect(V_LAYER_OUTPUT_NAME, 0, "layer 3 ('act'): output 0: name 'act_out' vs 'act_out2'");
    expect(V_TENSOR_PROP, 0, "output 0 ('act_out'): 0 vs 1 properties (first extra: 'onnx.value_info')");
    expect(V_LAYER_PROP, 0, "layer 3 ('act'): 0 vs 1 properties (first extra: 'onnx.unnamed')");
    expect(V_LAYER_DOC, 0, "layer 3 ('act'): 0 vs 1 properties (first extra: 'doc')");
    expect(V_REMOVED, 0, "removed no vs yes");
    expect(V_EXTRA_LAYER, 0, "vs 9 layers (first extra: ");
    expect(V_VALUE_TYPE_SEQ, 0, "output 1 ('fancy:1'): type int64[...] vs sequence<float32[4]>");
}

TEST(attributes) {
    expect(V_ATTR_INT, 0, "layer 6 ('fancy'): attribute 'axis' differs: 1 vs 2");
    expect(V_ATTR_FLOAT_NEGZERO, 0, "attribute 'zero' differs: 0 vs -0");
    expect(V_ATTR_STRING, 0, "attribute 'mode' differs: \"ab\\x00c\" vs \"ab\\x00d\"");
    expect(V_ATTR_INTS, 0, "attribute 'pads' differs: [0,0,1] vs [0,0,2]");
    expect(V_ATTR_INTS_LONG, 0, "attribute 'many' differs at entry 57: 57 vs -1");
    expect(V_ATTR_FLOATS, 0, "attribute 'scales' differs: [1.5,2.5] vs [1.5,2.25]");
    expect(V_ATTR_STRINGS, 0, "attribute 'names' differs at entry 1: \"two\" vs \"too\"");
    expect(V_ATTR_MISSING, 0, "attribute 'axis' is missing in the second network");
    expect(V_ATTR_EXTRA, 0, "attribute 'extra' is missing in the first network");
    expect(V_ATTR_TYPE, 0, "attribute 'alpha' differs: type float vs int");
    expect(V_WEIGHTS_BYTE, 0, "layer 0 ('W'): attribute 'value' differs: byte 37 of 64");
    expect(V_WEIGHTS_DIMS, 0, "attribute 'value' differs: dims [4,4] vs [2,8]");
    expect(V_WEIGHTS_DTYPE, 0, "attribute 'value' differs: dtype float32 vs int32");
    expect(V_WEIGHTS_NAME, 0, "attribute 'value' differs: name 'w' vs 'w_renamed'");
    expect(V_WEIGHTS_STRING, 0, "attribute 'labels' differs: string 1 is \"de\\x00f\" vs \"de\\x00g\"");
    expect(V_TENSORS_COUNT, 0, "attribute 'tl' differs: 3 vs 2 tensors");
}

TEST(subgraphs) {
    expect(V_SUB_LAYER_OP, 0, "layer 7 ('if'): attribute 'then_branch': layer 0 ('b_op'): op 'Neg' vs 'Abs'");
    expect(V_SUB_LAYER_OP, 0, "op 'Neg' vs 'Abs'");
    expect(V_SUB_OUTPUT, 0, "attribute 'then_branch': 1 vs 2 graph outputs");
    expect(V_SUB_NAME, 0, "attribute 'then_branch': network name 'then' vs 'then2'");
    expect(V_SUB_NESTED_ATTR, 0,
           "layer 7 ('if'): attribute 'else_branch': layer 1 ('holder'): attribute 'body': layer 0 ('inner_id'): "
           "attribute 'depth' differs: 2 vs 3");
}

TEST(null_and_truncation) {
    gwr_network *a = build(V_NONE), *b = build(V_NET_NAME);
    char why[64];
    CHECK_EQ_INT(gwr_network_equal(NULL, NULL, why, sizeof why), 1);
    CHECK_EQ_INT(gwr_network_equal(a, NULL, why, sizeof why), 0);
    CHECK_CONTAINS(why, "second network is NULL");
    CHECK_EQ_INT(gwr_network_equal(NULL, a, why, sizeof why), 0);
    CHECK_CONTAINS(why, "first network is NULL");
    CHECK_EQ_INT(gwr_network_equal(a, b, NULL, 0), 0); /* why may be NULL */
    char tiny[8];
    memset(tiny, 'x', sizeof tiny);
    CHECK_EQ_INT(gwr_network_equal(a, b, tiny, sizeof tiny), 0);
    CHECK_EQ_INT((int)strlen(tiny), 7); /* cut, terminated */
    CHECK_EQ_INT(gwr_network_equal(a, b, tiny, 1), 0);
    CHECK_STR(tiny, "");
    gwr_network_free(a);
    gwr_network_free(b);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A long chain: equality must be linear (a quadratic step would take
 * minutes at this size); one difference at the very end is found. */
static gwr_network *chain(int64_t n, int last_op_differs) {
    gwr_network *net = gwr_network_new("chain");
    gwr_dim d[1] = {8};
    gwr_tensor *t = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, d);
    for (int64_t i = 0; i < n && t; i++) {
        char name[32];
        snprintf(name, sizeof name, "L%lld", (long long)i);
        gwr_layer *l = gwr_network_add_layer(net, (i == n - 1 && last_op_differs) ? "Neg" : "Relu", "", name, 1, &t, 1, NULL);
        t = l ? gwr_layer_output(l, 0) : NULL;
        if (t) gwr_tensor_set_type(t, GWR_FLOAT32, 1, d);
    }
    if (t) gwr_network_mark_output(net, t);
    return net;
}

TEST(huge_networks_linear) {
    const int64_t n = 1000000;
    gwr_network *a = chain(n, 0), *b = chain(n, 0), *c = chain(n, 1);
    if (!CHECK(a && b && c && gwr_network_num_layers(c) == n)) return;
    char why[256];
    double t0 = now_s();
    CHECK_EQ_INT(gwr_network_equal(a, b, why, sizeof why), 1);
    CHECK_EQ_INT(gwr_network_equal(a, c, why, sizeof why), 0);
    double dt = now_s() - t0;
    CHECK_CONTAINS(why, "layer 999999 ('L999999'): op 'Relu' vs 'Neg'");
    /* Generous: about 0.1 s each on a laptop, even under sanitizers < 10 s. */
    if (!CHECK(dt < 20.0)) fprintf(stderr, "  two compares of 1M layers took %.2f s\n", dt);
    gwr_network_free(a);
    gwr_network_free(b);
    gwr_network_free(c);
}

int main(void) {
    RUN(equal_pairs);
    RUN(network_level);
    RUN(interface);
    RUN(layers);
    RUN(attributes);
    RUN(subgraphs);
    RUN(null_and_truncation);
    RUN(huge_networks_linear);
    return check_report();
}
