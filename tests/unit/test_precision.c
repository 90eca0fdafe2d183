/* test_precision.c - gwr_precision (src/quant/precision.c, auto_mixed.c):
 * where the Casts go, what is stored half, what stays float32 and why,
 * the refusals, and --auto on a network whose sensitive layers are known
 * by arithmetic. Expected half bit patterns are IEEE 754 binary16's
 * (worked out beside each); expected outputs are computed here in double.
 * Also the executor's Cast between float32 and float16 (an F16C path where
 * the CPU has one): the same bits as the spec's rounding. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"

static int count_op(gwr_network *net, const char *op) {
    int n = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (!gwr_layer_is_removed(l) && !strcmp(gwr_layer_op(l), op)) n++;
    }
    return n;
}

static const gwr_quant_entry *entry(const gwr_quant_report *r, const char *layer) {
    for (int i = 0; i < gwr_quant_report_count(r); i++)
        if (!strcmp(gwr_quant_report_entry(r, i)->layer, layer)) return gwr_quant_report_entry(r, i);
    return NULL;
}

/* x[2,4] -> MatMul(W[4,3]) -> Add(b[3]) -> Relu -> y */
static gwr_network *mlp(void) {
    gwr_network *net = gwr_network_new("mlp");
    gwr_network_set_opset(net, "", 17);
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, (const gwr_dim[]){2, 4});
    float w[12], b[3] = {0.5f, -0.25f, 1.0f};
    for (int i = 0; i < 12; i++) w[i] = 0.1f * (float)(i - 6);
    gwr_tensor *W = gwr_constant(net, GWR_FLOAT32, 2, (const int64_t[]){4, 3}, w);
    gwr_tensor *B = gwr_constant(net, GWR_FLOAT32, 1, (const int64_t[]){3}, b);
    gwr_layer *mm = gwr_network_add_layer(net, "MatMul", "", "mm", 2, (gwr_tensor *[]){x, W}, 1, NULL);
    gwr_layer *add = gwr_network_add_layer(net, "Add", "", "bias", 2, (gwr_tensor *[]){gwr_layer_output(mm, 0), B}, 1, NULL);
    gwr_layer *relu = gwr_network_add_layer(net, "Relu", "", "relu", 1, (gwr_tensor *[]){gwr_layer_output(add, 0)}, 1,
                                            (const char *[]){"y"});
    gwr_tensor_set_type(gwr_layer_output(mm, 0), GWR_FLOAT32, 2, (const gwr_dim[]){2, 3});
    gwr_tensor_set_type(gwr_layer_output(add, 0), GWR_FLOAT32, 2, (const gwr_dim[]){2, 3});
    gwr_tensor_set_type(gwr_layer_output(relu, 0), GWR_FLOAT32, 2, (const gwr_dim[]){2, 3});
    gwr_network_mark_output(net, gwr_layer_output(relu, 0));
    return net;
}

TEST(cast_float16_bits) {
    /* 16 values (two F16C blocks of 8) and their binary16 bits */
    static const float in[16] = {1.0f, -2.0f, 65504.0f, 65520.0f, 5.9604645e-8f, 1e-8f, 0.1f, 1.0f + 0x1p-11f,
                                 1.0f + 3 * 0x1p-11f, 6.1035156e-5f, -0.0f, INFINITY, 2.9802322e-8f, 3.0e-8f, 1000.3f,
                                 -65505.0f};
    static const uint16_t want[16] = {
        0x3c00, 0xc000,
        0x7bff, /* the largest finite */
        0x7c00, /* 65520 is the tie past it: rounds to infinity */
        0x0001, /* 2^-24, the smallest subnormal */
        0x0000, /* under half of it */
        0x2e66, /* 0.1 = 0x3dcccccd: mantissa 0x4cccccd >> 13 = 0x266, remainder 0x0ccd < half */
        0x3c00, /* tie at 1 + 2^-11: to even */
        0x3c02, /* tie at 1 + 3 * 2^-11: to even (up) */
        0x0400, /* 2^-14, the smallest normal */
        0x8000, 0x7c00,
        0x0000, /* 2^-25: the tie between 0 and 2^-24, to even (0) */
        0x0001, /* past it */
        0x63d1, /* 1000.3 = 1000 + 0.3: ulp 0.5, nearest 1000.5 = 0x63d1 */
        0xfbff  /* -65505 rounds to -65504 */
    };
    gwr_network *net = gwr_network_new("cast");
    gwr_tensor *c = gwr_constant(net, GWR_FLOAT32, 1, (const int64_t[]){16}, in);
    gwr_layer *l = gwr_network_add_layer(net, "Cast", "", "to16", 1, &c, 1, NULL);
    gwr_layer_set_int(l, "to", GWR_FLOAT16);
    gwr_layer *back = gwr_network_add_layer(net, "Cast", "", "to32", 1, (gwr_tensor *[]){gwr_layer_output(l, 0)}, 1, NULL);
    gwr_layer_set_int(back, "to", GWR_FLOAT32);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    gwr_network_mark_output(net, gwr_layer_output(back, 0));
    gwr_session *s = gwr_session_new_raw(net, NULL);
    CHECK(s != NULL);
    gwr_value *out[2] = {0};
    CHECK_OK(gwr_session_run(s, 0, NULL, NULL, 2, NULL, out));
    const uint16_t *h = gwr_value_cdata(out[0]);
    const float *f = gwr_value_cdata(out[1]);
    for (int i = 0; i < 16; i++) {
        CHECK_EQ_INT(h[i], want[i]);
        /* back: the binary16 value exactly */
        uint16_t e = (want[i] >> 10) & 0x1f, m = want[i] & 0x3ff;
        double v = e == 0x1f ? INFINITY : e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
        if (want[i] & 0x8000) v = -v;
        CHECK(f[i] == (float)v);
    }
    gwr_value_release(out[0]), gwr_value_release(out[1]);
    gwr_session_free(s);
    gwr_network_free(net);
}

TEST(convert_all) {
    gwr_network *net = mlp();
    gwr_precision_options o = {.to = GWR_FLOAT16};
    gwr_quant_report *r = NULL;
    CHECK_OK(gwr_precision(net, &o, &r));
    CHECK_EQ_INT(gwr_tensor_dtype(gwr_network_input(net, 0)), GWR_FLOAT16);
    CHECK_EQ_INT(gwr_tensor_dtype(gwr_network_output(net, 0)), GWR_FLOAT16);
    CHECK_STR(gwr_tensor_name(gwr_network_output(net, 0)), "y");
    CHECK_EQ_INT(count_op(net, "Cast"), 0);
    /* the weights are stored half: W[0] = -0.6 -> 0xb8cd (0.6 = 0x3f19999a:
     * mantissa 0x19999a >> 13 = 0xcc, remainder 0x199a > half: 0xcd) */
    gwr_layer *mm = gwr_network_find_layer(net, "mm");
    gwr_layer *p = gwr_tensor_parent(gwr_layer_input(mm, 1));
    const gwr_weights *w = NULL;
    CHECK_OK(gwr_layer_get_tensor(p, "value", &w));
    CHECK_EQ_INT(w->dtype, GWR_FLOAT16);
    CHECK_EQ_INT(((const uint16_t *)w->data)[0], 0xb8cd);
    CHECK_EQ_INT(gwr_quant_report_weight_bytes(r, 0), 48);
    CHECK_EQ_INT(gwr_quant_report_weight_bytes(r, 1), 24);
    CHECK(entry(r, "relu") && !strcmp(entry(r, "relu")->what, "float16"));
    CHECK_OK(gwr_network_verify(net));
    gwr_quant_report_free(r);
    gwr_network_free(net);
}

TEST(keep_io_casts_at_the_edges) {
    gwr_network *net = mlp();
    gwr_precision_options o = {.to = GWR_BFLOAT16, .keep_io = 1};
    CHECK_OK(gwr_precision(net, &o, NULL));
    gwr_tensor *x = gwr_network_input(net, 0), *y = gwr_network_output(net, 0);
    CHECK_EQ_INT(gwr_tensor_dtype(x), GWR_FLOAT32);
    CHECK_EQ_INT(gwr_tensor_dtype(y), GWR_FLOAT32);
    CHECK_STR(gwr_tensor_name(y), "y");
    CHECK_EQ_INT(count_op(net, "Cast"), 2);
    /* the input's one reader is a Cast to bfloat16; the output a Cast to float */
    int slot;
    gwr_layer *c = gwr_tensor_user(x, 0, &slot);
    int64_t to = 0;
    CHECK(c && !strcmp(gwr_layer_op(c), "Cast") && !gwr_layer_get_int(c, "to", &to) && to == GWR_BFLOAT16);
    CHECK(!strcmp(gwr_layer_op(gwr_tensor_parent(y)), "Cast"));
    CHECK_EQ_INT(gwr_tensor_dtype(gwr_layer_input(gwr_tensor_parent(y), 0)), GWR_BFLOAT16);
    gwr_network_free(net);
}

TEST(kept_layers_and_shared_weights) {
    /* x -> MatMul(W) -> Sigmoid -> MatMul(W) -> y, the second MatMul kept by
     * name: W stored both ways, no Cast of W; Casts only around "mm2". */
    gwr_network *net = gwr_network_new("k");
    gwr_network_set_opset(net, "", 17);
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, (const gwr_dim[]){2, 2});
    float w[4] = {1, 2, 3, 4};
    gwr_tensor *W = gwr_constant(net, GWR_FLOAT32, 2, (const int64_t[]){2, 2}, w);
    gwr_layer *m1 = gwr_network_add_layer(net, "MatMul", "", "mm1", 2, (gwr_tensor *[]){x, W}, 1, NULL);
    gwr_layer *sg = gwr_network_add_layer(net, "Sigmoid", "", "sig", 1, (gwr_tensor *[]){gwr_layer_output(m1, 0)}, 1, NULL);
    gwr_layer *m2 = gwr_network_add_layer(net, "MatMul", "", "mm2", 2, (gwr_tensor *[]){gwr_layer_output(sg, 0), W}, 1,
                                          (const char *[]){"y"});
    gwr_layer *ls[3] = {m1, sg, m2};
    for (int i = 0; i < 3; i++) gwr_tensor_set_type(gwr_layer_output(ls[i], 0), GWR_FLOAT32, 2, (const gwr_dim[]){2, 2});
    gwr_network_mark_output(net, gwr_layer_output(m2, 0));
    gwr_precision_options o = {.to = GWR_FLOAT16, .keep_nodes = "mm2", .keep_ops = "Sigmoid"};
    gwr_quant_report *r = NULL;
    CHECK_OK(gwr_precision(net, &o, &r));
    CHECK(entry(r, "mm2") && !strcmp(entry(r, "mm2")->what, "kept float32: --keep-node"));
    CHECK(entry(r, "sig") && !strcmp(entry(r, "sig")->what, "kept float32: --keep"));
    CHECK(entry(r, "mm1") && !strcmp(entry(r, "mm1")->what, "float16"));
    m1 = gwr_network_find_layer(net, "mm1"), m2 = gwr_network_find_layer(net, "mm2");
    CHECK_EQ_INT(gwr_tensor_dtype(gwr_layer_input(m1, 1)), GWR_FLOAT16);
    CHECK_EQ_INT(gwr_tensor_dtype(gwr_layer_input(m2, 1)), GWR_FLOAT32);
    CHECK(!strcmp(gwr_layer_op(gwr_tensor_parent(gwr_layer_input(m1, 1))), "Constant"));
    CHECK(!strcmp(gwr_layer_op(gwr_tensor_parent(gwr_layer_input(m2, 1))), "Constant"));
    /* x -> Cast? no: x is half (not --keep-io); mm1 half -> Cast(float) ->
     * sig, mm2 float -> Cast(half) -> y: two Casts */
    CHECK_EQ_INT(count_op(net, "Cast"), 2);
    CHECK_EQ_INT(gwr_tensor_dtype(gwr_network_output(net, 0)), GWR_FLOAT16);
    gwr_quant_report_free(r);
    gwr_network_free(net);
}

TEST(range_stays_float32) {
    /* Range(0, 8, 1) float -> Mul(x) -> y: Range kept (the table), one Cast
     * to half between it and the Mul */
    gwr_network *net = gwr_network_new("r");
    gwr_network_set_opset(net, "", 17);
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, (const gwr_dim[]){8});
    gwr_tensor *a = gwr_constant_f32(net, 0), *b = gwr_constant_f32(net, 8), *d = gwr_constant_f32(net, 1);
    gwr_layer *rg = gwr_network_add_layer(net, "Range", "", "range", 3, (gwr_tensor *[]){a, b, d}, 1, NULL);
    gwr_tensor_set_type(gwr_layer_output(rg, 0), GWR_FLOAT32, 1, (const gwr_dim[]){8});
    gwr_layer *mul = gwr_network_add_layer(net, "Mul", "", "mul", 2, (gwr_tensor *[]){x, gwr_layer_output(rg, 0)}, 1,
                                           (const char *[]){"y"});
    gwr_tensor_set_type(gwr_layer_output(mul, 0), GWR_FLOAT32, 1, (const gwr_dim[]){8});
    gwr_network_mark_output(net, gwr_layer_output(mul, 0));
    gwr_precision_options o = {.to = GWR_FLOAT16};
    gwr_quant_report *r = NULL;
    CHECK_OK(gwr_precision(net, &o, &r));
    const gwr_quant_entry *e = entry(r, "range");
    CHECK(e != NULL);
    if (e) CHECK_CONTAINS(e->what, "kept float32: Range computes shapes");
    rg = gwr_network_find_layer(net, "range");
    CHECK_EQ_INT(gwr_tensor_dtype(gwr_layer_output(rg, 0)), GWR_FLOAT32);
    CHECK_EQ_INT(gwr_tensor_dtype(gwr_layer_input(rg, 0)), GWR_FLOAT32);
    CHECK_EQ_INT(count_op(net, "Cast"), 1);
    gwr_quant_report_free(r);
    gwr_network_free(net);
}

TEST(cast_pairs_removed) {
    /* x -> Cast(float16) -> Cast(float) -> Relu -> y: converted, x is half,
     * both Casts go (each then casts to its input's own type) */
    gwr_network *net = gwr_network_new("c");
    gwr_network_set_opset(net, "", 17);
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, (const gwr_dim[]){4});
    gwr_layer *c1 = gwr_network_add_layer(net, "Cast", "", "c1", 1, &x, 1, NULL);
    gwr_layer_set_int(c1, "to", GWR_FLOAT16);
    gwr_tensor_set_type(gwr_layer_output(c1, 0), GWR_FLOAT16, 1, (const gwr_dim[]){4});
    gwr_layer *c2 = gwr_network_add_layer(net, "Cast", "", "c2", 1, (gwr_tensor *[]){gwr_layer_output(c1, 0)}, 1, NULL);
    gwr_layer_set_int(c2, "to", GWR_FLOAT32);
    gwr_tensor_set_type(gwr_layer_output(c2, 0), GWR_FLOAT32, 1, (const gwr_dim[]){4});
    gwr_layer *rl = gwr_network_add_layer(net, "Relu", "", "relu", 1, (gwr_tensor *[]){gwr_layer_output(c2, 0)}, 1,
                                          (const char *[]){"y"});
    gwr_tensor_set_type(gwr_layer_output(rl, 0), GWR_FLOAT32, 1, (const gwr_dim[]){4});
    gwr_network_mark_output(net, gwr_layer_output(rl, 0));
    /* already holds a float16 tensor: refused, unchanged */
    gwr_network *before = gwr_network_clone(net);
    gwr_precision_options o = {.to = GWR_FLOAT16};
    CHECK_EQ_INT(gwr_precision(net, &o, NULL), GWR_ERR_UNSUPPORTED);
    CHECK(gwr_network_equal(net, before, NULL, 0));
    gwr_network_free(before);
    /* the float32 -> float16 -> float32 pair of a float32 tensor, with a
     * --keep-io interface: the pair goes, and the Casts at the edges */
    gwr_network_free(net);
    net = gwr_network_new("c");
    gwr_network_set_opset(net, "", 17);
    x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, (const gwr_dim[]){4});
    gwr_layer *sg = gwr_network_add_layer(net, "Sigmoid", "", "sig", 1, &x, 1, NULL);
    gwr_tensor_set_type(gwr_layer_output(sg, 0), GWR_FLOAT32, 1, (const gwr_dim[]){4});
    rl = gwr_network_add_layer(net, "Relu", "", "relu", 1, (gwr_tensor *[]){gwr_layer_output(sg, 0)}, 1,
                               (const char *[]){"y"});
    gwr_tensor_set_type(gwr_layer_output(rl, 0), GWR_FLOAT32, 1, (const gwr_dim[]){4});
    gwr_network_mark_output(net, gwr_layer_output(rl, 0));
    /* both kept: Cast(half) at entry would meet Cast(float) -> none at all */
    o = (gwr_precision_options){.to = GWR_FLOAT16, .keep_ops = "Sigmoid,Relu", .keep_io = 1};
    CHECK_OK(gwr_precision(net, &o, NULL));
    CHECK_EQ_INT(count_op(net, "Cast"), 0);
    gwr_network_free(net);
}

TEST(bad_options) {
    gwr_network *net = mlp();
    gwr_network *before = gwr_network_clone(net);
    gwr_precision_options o = {.to = GWR_INT8};
    CHECK_EQ_INT(gwr_precision(net, &o, NULL), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(gwr_network_errmsg(net), "float16 or bfloat16");
    o = (gwr_precision_options){.to = GWR_FLOAT16, .auto_tol = -1};
    CHECK_EQ_INT(gwr_precision(net, &o, NULL), GWR_ERR_INVALID_ARG);
    o = (gwr_precision_options){.to = GWR_FLOAT16, .auto_tol = NAN};
    CHECK_EQ_INT(gwr_precision(net, &o, NULL), GWR_ERR_INVALID_ARG);
    CHECK(gwr_network_equal(net, before, NULL, 0));
    /* bfloat16 below opset 13 (no bfloat16 Cast): refused */
    gwr_network_set_opset(net, "", 11);
    o = (gwr_precision_options){.to = GWR_BFLOAT16};
    CHECK_EQ_INT(gwr_precision(net, &o, NULL), GWR_ERR_UNSUPPORTED);
    CHECK_CONTAINS(gwr_network_errmsg(net), "opset 13");
    CHECK_EQ_INT(gwr_precision(NULL, &o, NULL), GWR_ERR_INVALID_ARG);
    gwr_network_free(before);
    gwr_network_free(net);
}

/* y = (x * 1024 + 30000) - 30000 for x in [-1, 1]: in float16 the middle
 * values (28976..31024) have an ulp of 16, an error up to 8 against
 * max |y| ~ 1024: past tol 1e-3. x * 1024 (ulp <= 0.5) holds. So --auto
 * keeps the Add (its output) and the Sub (it reads the Add's float32
 * output: a Cast to half would round it again), and converts the Mul. */
TEST(auto_keeps_the_sensitive_layers) {
    gwr_network *net = gwr_network_new("a");
    gwr_network_set_opset(net, "", 17);
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, (const gwr_dim[]){64});
    gwr_layer *mul = gwr_network_add_layer(net, "Mul", "", "mul", 2, (gwr_tensor *[]){x, gwr_constant_f32(net, 1024)},
                                           1, NULL);
    gwr_layer *add = gwr_network_add_layer(net, "Add", "", "add", 2,
                                           (gwr_tensor *[]){gwr_layer_output(mul, 0), gwr_constant_f32(net, 30000)}, 1, NULL);
    gwr_layer *sub = gwr_network_add_layer(net, "Sub", "", "sub", 2,
                                           (gwr_tensor *[]){gwr_layer_output(add, 0), gwr_constant_f32(net, 30000)}, 1,
                                           (const char *[]){"y"});
    gwr_layer *ls[3] = {mul, add, sub};
    for (int i = 0; i < 3; i++) gwr_tensor_set_type(gwr_layer_output(ls[i], 0), GWR_FLOAT32, 1, (const gwr_dim[]){64});
    gwr_network_mark_output(net, gwr_layer_output(sub, 0));
    gwr_calib *c = gwr_calib_new();
    float xs[4][64];
    for (int s = 0; s < 4; s++) {
        for (int i = 0; i < 64; i++) xs[s][i] = (float)sin(1.0 + 7.3 * s + 0.77 * i);
        gwr_value *v = gwr_value_new(GWR_FLOAT32, 1, (const int64_t[]){64});
        memcpy(gwr_value_data(v), xs[s], sizeof xs[s]);
        CHECK_OK(gwr_calib_add(c, 1, (const char *[]){"x"}, &v));
        gwr_value_release(v);
    }
    gwr_precision_options o = {.to = GWR_FLOAT16, .keep_io = 1, .auto_tol = 1e-3, .calib = c};
    gwr_quant_report *r = NULL;
    CHECK_OK(gwr_precision(net, &o, &r));
    const gwr_quant_entry *em = entry(r, "mul"), *ea = entry(r, "add"), *es = entry(r, "sub");
    CHECK(em && ea && es);
    if (em && ea && es) {
        CHECK_STR(em->what, "float16");
        CHECK_CONTAINS(ea->what, "kept float32: auto");
        CHECK_CONTAINS(es->what, "kept float32: auto");
    }
    /* the converted network on the executor holds tol on every sample */
    gwr_session *s = gwr_session_new_raw(net, NULL);
    CHECK(s != NULL);
    for (int k = 0; s && k < 4; k++) {
        gwr_value *in = gwr_value_new(GWR_FLOAT32, 1, (const int64_t[]){64}), *out = NULL;
        memcpy(gwr_value_data(in), xs[k], sizeof xs[k]);
        CHECK_OK(gwr_session_run(s, 1, (const char *[]){"x"}, &in, 1, NULL, &out));
        double d = 0, m = 0;
        for (int i = 0; out && i < 64; i++) {
            double want = ((double)xs[k][i] * 1024 + 30000) - 30000;
            d = fmax(d, fabs(gwr_value_get_f64(out, i) - want));
            m = fmax(m, fabs(want));
        }
        CHECK(d <= 1e-3 * fmax(1, m));
        gwr_value_release(in), gwr_value_release(out);
    }
    gwr_session_free(s);
    gwr_quant_report_free(r);
    gwr_calib_free(c);
    gwr_network_free(net);
}

int main(void) {
    RUN(cast_float16_bits);
    RUN(convert_all);
    RUN(keep_io_casts_at_the_edges);
    RUN(kept_layers_and_shared_weights);
    RUN(range_stays_float32);
    RUN(cast_pairs_removed);
    RUN(bad_options);
    RUN(auto_keeps_the_sensitive_layers);
    return check_report();
}
