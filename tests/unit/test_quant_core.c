/* test_quant_core.c - the quant room's shared parts (src/quant: calib.c,
 * collect.c, report.c, quantize.c's refusals): calibration sets checked
 * against a network, the collector handing intermediate values sample by
 * sample, the error measures, exclusion lists, reports. Expected values
 * are hand arithmetic. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "gwr/gwr.h"
#include "quant/quant_internal.h"

/* x float32 [2, 3] -> r = Relu(x) -> y = r + 1 (output). */
static gwr_network *small_net(void) {
    gwr_network *net = gwr_network_new("q");
    gwr_dim d[2] = {2, 3};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, d);
    gwr_tensor *r = gwr_relu(net, x);
    gwr_tensor_set_name(r, "r");
    gwr_tensor *y = gwr_add(net, r, gwr_constant_f32(net, 1.0f));
    gwr_tensor_set_name(y, "y");
    gwr_network_mark_output(net, y);
    return net;
}

static gwr_value *vec(gwr_dtype dt, int rank, const int64_t *dims, const float *v) {
    gwr_value *val = gwr_value_new(dt, rank, dims);
    for (int64_t i = 0; val && v && i < gwr_value_numel(val); i++) gwr_value_set_f64(val, i, v[i]);
    return val;
}

TEST(calib_fits_checks_names_dtypes_shapes) {
    gwr_network *net = small_net();
    int64_t d23[2] = {2, 3}, d33[2] = {3, 3};
    char why[256];
    gwr_calib *c = gwr_calib_new();
    CHECK(!gwr_calib_fits(c, net, why, sizeof why));
    CHECK_CONTAINS(why, "no calibration samples");
    gwr_value *good = vec(GWR_FLOAT32, 2, d23, NULL);
    const char *xn[1] = {"x"};
    CHECK_OK(gwr_calib_add(c, 1, xn, &good));
    CHECK(gwr_calib_fits(c, net, why, sizeof why));
    CHECK_EQ_INT(gwr_calib_count(c), 1);
    /* another name, another dtype, another dim: each named */
    const char *bn[1] = {"z"};
    gwr_calib *c2 = gwr_calib_new();
    CHECK_OK(gwr_calib_add(c2, 1, bn, &good));
    CHECK(!gwr_calib_fits(c2, net, why, sizeof why));
    CHECK_CONTAINS(why, "no input 'z'");
    gwr_value *i64 = vec(GWR_INT64, 2, d23, NULL), *wide = vec(GWR_FLOAT32, 2, d33, NULL);
    gwr_calib *c3 = gwr_calib_new(), *c4 = gwr_calib_new();
    CHECK_OK(gwr_calib_add(c3, 1, xn, &i64));
    CHECK_OK(gwr_calib_add(c4, 1, xn, &wide));
    CHECK(!gwr_calib_fits(c3, net, why, sizeof why));
    CHECK_CONTAINS(why, "int64");
    CHECK(!gwr_calib_fits(c4, net, why, sizeof why));
    CHECK_CONTAINS(why, "input 'x'");
    /* a sample that lacks an input */
    gwr_calib *c5 = gwr_calib_new();
    CHECK_OK(gwr_calib_add(c5, 0, NULL, NULL));
    CHECK(!gwr_calib_fits(c5, net, why, sizeof why));
    CHECK_CONTAINS(why, "'x' is missing");
    CHECK(gwr_calib_add(NULL, 0, NULL, NULL) == GWR_ERR_INVALID_ARG);
    gwr_value_release(good), gwr_value_release(i64), gwr_value_release(wide);
    gwr_calib_free(c), gwr_calib_free(c2), gwr_calib_free(c3), gwr_calib_free(c4), gwr_calib_free(c5);
    gwr_network_free(net);
}

struct sums {
    double s[2][2]; /* [sample][tensor] sum of elements */
    int calls;
};
static gwr_status add_up(void *ctx, int sample, int idx, gwr_value *v) {
    struct sums *s = ctx;
    s->calls++;
    for (int64_t i = 0; i < gwr_value_numel(v); i++) s->s[sample][idx] += gwr_value_get_f64(v, i);
    return GWR_OK;
}

TEST(collect_hands_intermediate_values_per_sample) {
    gwr_network *net = small_net();
    int64_t d23[2] = {2, 3};
    float a[6] = {-1, 2, -3, 4, 0.5f, -6}, b[6] = {1, 1, 1, 1, 1, 1};
    gwr_value *va = vec(GWR_FLOAT32, 2, d23, a), *vb = vec(GWR_FLOAT32, 2, d23, b);
    const char *xn[1] = {"x"};
    gwr_calib *c = gwr_calib_new();
    CHECK_OK(gwr_calib_add(c, 1, xn, &va));
    CHECK_OK(gwr_calib_add(c, 1, xn, &vb));
    struct sums s = {0};
    const char *names[2] = {"r", "y"};
    CHECK_OK(gwr_q_collect(net, c, 2, names, add_up, &s, 1));
    CHECK_EQ_INT(s.calls, 4);
    CHECK(s.s[0][0] == 6.5);  /* relu: 2 + 4 + 0.5 */
    CHECK(s.s[0][1] == 12.5); /* + 1 each */
    CHECK(s.s[1][0] == 6.0 && s.s[1][1] == 12.0);
    /* the network itself is unchanged: r is not made an output */
    CHECK_EQ_INT(gwr_network_num_outputs(net), 1);
    /* an unknown tensor is an error on net */
    const char *bad[1] = {"nope"};
    CHECK(gwr_q_collect(net, c, 1, bad, add_up, &s, 1) == GWR_ERR_NOT_FOUND);
    CHECK_CONTAINS(gwr_network_errmsg(net), "nope");
    gwr_value *out[1] = {NULL};
    CHECK_OK(gwr_q_run_sample(net, c, 0, 1, out));
    CHECK(out[0] && gwr_value_get_f64(out[0], 1) == 3.0);
    gwr_value_release(out[0]);
    gwr_value_release(va), gwr_value_release(vb);
    gwr_calib_free(c);
    gwr_network_free(net);
}

TEST(random_calibration_is_seeded_and_fits) {
    gwr_network *net = small_net();
    gwr_calib *a = gwr_calib_random(net, 3, NULL), *b = gwr_calib_random(net, 3, NULL);
    CHECK(a && b);
    CHECK_EQ_INT(gwr_calib_count(a), 3);
    CHECK(gwr_calib_fits(a, net, NULL, 0));
    gwr_value *const *va, *const *vb;
    gwr_calib_sample(a, 0, NULL, &va);
    gwr_calib_sample(b, 0, NULL, &vb);
    CHECK(!memcmp(gwr_value_cdata(va[0]), gwr_value_cdata(vb[0]), 24));
    gwr_value *const *v1;
    gwr_calib_sample(a, 1, NULL, &v1);
    CHECK(memcmp(gwr_value_cdata(va[0]), gwr_value_cdata(v1[0]), 24) != 0);
    CHECK(!gwr_calib_random(net, 0, NULL));
    gwr_calib_free(a), gwr_calib_free(b);
    gwr_network_free(net);
}

TEST(error_measures) {
    float b[4] = {3, 4, 0, 0}, a[4] = {3, 4, 0, 0}, c[4] = {0, 0, 3, 4}, d[4] = {6, 8, 0, 0};
    double rel, cos;
    gwr_q_error(a, b, 4, &rel, &cos);
    CHECK(rel == 0 && fabs(cos - 1) < 1e-15);
    gwr_q_error(c, b, 4, &rel, &cos);
    CHECK(fabs(rel - sqrt(2.0)) < 1e-12 && cos == 0); /* |c - b| = 5 sqrt 2, |b| = 5 */
    gwr_q_error(d, b, 4, &rel, &cos);
    CHECK(fabs(rel - 1) < 1e-12 && fabs(cos - 1) < 1e-12);
}

TEST(lists_match_ops_and_names) {
    gwr_network *net = small_net();
    gwr_layer *relu = gwr_tensor_parent(gwr_network_find_tensor(net, "r"));
    CHECK(gwr_q_listed("Relu", relu));
    CHECK(gwr_q_listed("Conv,Relu", relu));
    CHECK(gwr_q_listed(gwr_layer_name(relu), relu));
    CHECK(!gwr_q_listed("Rel,Relux,", relu));
    CHECK(!gwr_q_listed("", relu) && !gwr_q_listed(NULL, relu));
    CHECK(!gwr_q_is_quantized(net));
    gwr_network_free(net);
}

TEST(quantize_refuses_bad_options_and_quantized_models) {
    gwr_network *net = small_net();
    gwr_quantize_options o = {.mode = GWR_QUANT_WEIGHT_ONLY, .bits = 3};
    CHECK(gwr_quantize(net, &o, NULL) == GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(gwr_network_errmsg(net), "bits must be 4 or 8");
    o.bits = 4, o.block_size = 24;
    CHECK(gwr_quantize(net, &o, NULL) == GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(gwr_network_errmsg(net), "power of two");
    o = (gwr_quantize_options){.mode = GWR_QUANT_DYNAMIC, .smoothquant_alpha = 2};
    CHECK(gwr_quantize(net, &o, NULL) == GWR_ERR_INVALID_ARG);
    o = (gwr_quantize_options){0};
    CHECK(gwr_quantize(net, &o, NULL) == GWR_ERR_INVALID_ARG);
    /* a model with a QuantizeLinear is refused as already quantized */
    gwr_tensor *x = gwr_network_input(net, 0), *in[2] = {x, gwr_constant_f32(net, 0.5f)}, *q = NULL;
    CHECK(gwr_op_call(net, "", "QuantizeLinear", 2, in, NULL, 1, &q) != NULL);
    gwr_network_mark_output(net, q);
    CHECK(gwr_q_is_quantized(net));
    int64_t before = gwr_network_num_layers(net);
    o = (gwr_quantize_options){.mode = GWR_QUANT_DYNAMIC};
    CHECK(gwr_quantize(net, &o, NULL) == GWR_ERR_UNSUPPORTED);
    CHECK_CONTAINS(gwr_network_errmsg(net), "already quantized");
    CHECK_EQ_INT(gwr_network_num_layers(net), before);
    gwr_network_free(net);
}

TEST(report_sorts_worst_first) {
    gwr_quant_report *r = gwr_q_report_new();
    CHECK(!gwr_q_report_add(r, "a", "MatMul", "int8", 0.01, 0.999));
    CHECK(!gwr_q_report_add(r, "b", "Conv", "int8", 0.2, 0.98));
    CHECK(!gwr_q_report_add(r, "c", "Gemm", "kept float32: --exclude", -1, -1));
    r->bytes_before = 400, r->bytes_after = 100;
    CHECK_EQ_INT(gwr_quant_report_count(r), 3);
    CHECK_STR(gwr_quant_report_entry(r, 1)->layer, "b");
    CHECK(!gwr_quant_report_entry(r, 3));
    CHECK_EQ_INT(gwr_quant_report_weight_bytes(r, 1), 100);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK_OK(gwr_quant_report_write(r, f, 0));
    fclose(f);
    char *pb = strstr(buf, "\nb "), *pa = strstr(buf, "\na "), *pc = strstr(buf, "\nc ");
    CHECK(pb && pa && pc && pb < pa && pa < pc);
    CHECK_CONTAINS(buf, "0.250x");
    free(buf);
    f = open_memstream(&buf, &len);
    CHECK_OK(gwr_quant_report_write(r, f, 1));
    fclose(f);
    CHECK_CONTAINS(buf, "{\"layer\":\"b\",\"op\":\"Conv\"");
    CHECK_CONTAINS(buf, "\"rel_error\":null");
    free(buf);
    gwr_quant_report_free(r);
}

int main(void) {
    RUN(calib_fits_checks_names_dtypes_shapes);
    RUN(collect_hands_intermediate_values_per_sample);
    RUN(random_calibration_is_seeded_and_fits);
    RUN(error_measures);
    RUN(lists_match_ops_and_names);
    RUN(quantize_refuses_bad_options_and_quantized_models);
    RUN(report_sorts_worst_first);
    return check_report();
}
