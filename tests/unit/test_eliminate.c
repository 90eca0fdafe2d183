/* test_eliminate.c - the elimination passes of src/passes/eliminate.c
 * (eliminate_identity, eliminate_noop_arith, eliminate_noop_reshape,
 * compose_transposes): cases where each must fire and cases where it must
 * not (second readers, network outputs, non-constants, wrong constants,
 * growing broadcasts, unknown dims, training-mode Dropout), the interface
 * kept, idempotence, If bodies, and bit-identical outputs.
 *
 * Every case goes through one helper: the network is cloned
 * (gwr_network_clone) before gwr_optimize runs on it (level basic, debug:
 * verified after every rewrite); both are run with gwr_session_run on the
 * same inputs and every output must have the same dtype, shape and bytes;
 * the input and output names must be unchanged and in order; a second run
 * must rewrite nothing. (A shared gwr_exec_compare / pass_case.h helper
 * is not on main yet.) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "net_count.h"

/* ---- the harness ------------------------------------------------------------- */

/* An input of t's type, unknown and symbolic dims set to dyn, filled with
 * a pattern that avoids -0 (x + 0 would turn it into +0). */
static gwr_value *make_input(const gwr_tensor *t, int64_t dyn, int k) {
    int64_t dims[GWR_MAX_RANK];
    int r = gwr_tensor_rank(t);
    for (int i = 0; i < r; i++) dims[i] = GWR_DIM_IS_KNOWN(gwr_tensor_dim(t, i)) ? gwr_tensor_dim(t, i) : dyn;
    gwr_value *v = gwr_value_new(gwr_tensor_dtype(t), r, dims);
    for (int64_t i = 0; v && i < gwr_value_numel(v); i++) {
        gwr_dtype dt = gwr_tensor_dtype(t);
        double x = dt == GWR_BOOL              ? (double)((i + k) % 2)
                   : gwr_dtype_is_float(dt) ? ((i * 7 + k * 3) % 11 - 5) * 0.37 + 0.125
                                            : (double)((i * 7 + k) % 9 - 4);
        gwr_value_set_f64(v, i, x);
    }
    return v;
}

/* a and b give bit-identical outputs (by name) on make_input's inputs. */
static int same_outputs(gwr_network *a, gwr_network *b, int64_t dyn) {
    int nin = gwr_network_num_inputs(a), ok = nin <= 16;
    gwr_value *in[16] = {0};
    const char *names[16];
    for (int i = 0; ok && i < nin; i++) {
        names[i] = gwr_tensor_name(gwr_network_input(a, i));
        ok = (in[i] = make_input(gwr_network_input(a, i), dyn, i)) != NULL;
    }
    gwr_compare_options co = {.atol = 0, .rtol = 0};
    gwr_compare_report rep;
    memset(&rep, 0, sizeof rep);
    co.inputs.ngiven = nin, co.inputs.given_names = names, co.inputs.given_values = in;
    if (ok && (ok = !gwr_exec_compare(a, b, &co, &rep)) == 0) fprintf(stderr, "  compare: %s\n", gwr_last_errmsg());
    if (ok && !rep.pass) {
        fprintf(stderr, "  output '%s' differs by %g\n", rep.worst_name ? rep.worst_name : "?", rep.max_abs);
        ok = 0;
    }
    gwr_compare_report_free(&rep);
    for (int i = 0; i < nin && i < 16; i++) gwr_value_release(in[i]);
    return ok;
}

static int64_t rewrites_of(const gwr_optimize_report *r, const char *label) {
    for (int i = 0; i < gwr_optimize_report_count(r); i++)
        if (!strcmp(gwr_optimize_report_pass(r, i)->label, label)) return gwr_optimize_report_pass(r, i)->rewrites;
    return -1;
}

static int64_t all_rewrites(const gwr_optimize_report *r) {
    int64_t n = 0;
    for (int i = 0; i < gwr_optimize_report_count(r); i++) n += gwr_optimize_report_pass(r, i)->rewrites;
    return n;
}

/* Optimizes net in place (level basic; `only` may name passes) and checks
 * it against a clone taken before: verify, the interface, the outputs bit
 * for bit (when run is set), and a second run rewriting nothing. Returns
 * the rewrites of `label`, or -1. */
static int64_t optimize_case(gwr_network *net, const char *only, const char *label, int64_t dyn, int run) {
    char names[32][64];
    int nin = gwr_network_num_inputs(net), nout = gwr_network_num_outputs(net);
    if (!CHECK(net && nin + nout <= 32)) return -1;
    for (int i = 0; i < nin + nout; i++)
        snprintf(names[i], sizeof names[i], "%s",
                 gwr_tensor_name(i < nin ? gwr_network_input(net, i) : gwr_network_output(net, i - nin)));
    gwr_network *before = gwr_network_clone(net);
    if (!CHECK(before != NULL)) return -1;
    gwr_optimize_options o = {.level = GWR_LEVEL_BASIC, .only = only, .debug = 1};
    gwr_optimize_report *r = NULL;
    int64_t n = -1;
    if (CHECK_OK(gwr_optimize(net, &o, &r))) n = rewrites_of(r, label);
    else fprintf(stderr, "  optimize: %s\n", gwr_network_errmsg(net));
    gwr_optimize_report_free(r);
    CHECK_OK(gwr_network_verify(net));
    CHECK_EQ_INT(gwr_network_num_inputs(net), nin);
    CHECK_EQ_INT(gwr_network_num_outputs(net), nout);
    for (int i = 0; i < nin + nout; i++)
        CHECK_STR(gwr_tensor_name(i < nin ? gwr_network_input(net, i) : gwr_network_output(net, i - nin)), names[i]);
    if (run) CHECK(same_outputs(before, net, dyn));
    gwr_network_free(before);
    /* idempotent */
    if (CHECK_OK(gwr_optimize(net, &o, &r))) CHECK_EQ_INT(all_rewrites(r), 0);
    gwr_optimize_report_free(r);
    return n;
}

static gwr_network *new_net(void) {
    gwr_network *net = gwr_network_new("elim");
    gwr_network_set_opset(net, "", 17);
    return net;
}

static gwr_tensor *input(gwr_network *net, const char *name, gwr_dtype dt, int rank, const gwr_dim *dims) {
    return gwr_network_add_input(net, name, dt, rank, dims);
}

static gwr_tensor *relu(gwr_network *net, gwr_tensor *x) { return gwr_unary(net, GWR_OP_Relu, x); }

static gwr_tensor *op1(gwr_network *net, const char *op, int nin, gwr_tensor *const *in, const gwr_args *attrs) {
    gwr_tensor *out = NULL;
    return gwr_op_call(net, "", op, nin, in, attrs, 1, &out) ? out : NULL;
}

static const gwr_dim d23[2] = {2, 3};

/* ---- eliminate_identity ---------------------------------------------------- */

TEST(identity_fires) {
    /* x -> Identity -> Identity -> Relu -> Identity -> y */
    gwr_network *net = new_net();
    gwr_tensor *x = input(net, "x", GWR_FLOAT32, 2, d23);
    gwr_tensor *t = op1(net, "Identity", 1, &x, NULL);
    t = op1(net, "Identity", 1, &t, NULL);
    t = op1(net, "Identity", 1, (gwr_tensor *[]){relu(net, t)}, NULL);
    gwr_tensor_set_name(t, "y");
    gwr_network_mark_output(net, t);
    CHECK_EQ_INT(optimize_case(net, "eliminate_identity", "eliminate_identity", 0, 1), 3);
    CHECK_EQ_INT(count_op(net, "Identity"), 0);
    CHECK_EQ_INT(gwr_network_num_live_layers(net), 1);
    CHECK(gwr_tensor_parent(gwr_network_output(net, 0)) != NULL); /* the Relu now carries y */
    gwr_network_free(net);
}

TEST(identity_keeps_interface) {
    /* y0 = Identity(x) (an input), y1 = Relu(x), y2 = Identity(y1) (another
     * output): each Identity carries an output name and stays. */
    gwr_network *net = new_net();
    gwr_tensor *x = input(net, "x", GWR_FLOAT32, 2, d23);
    gwr_tensor *y0 = op1(net, "Identity", 1, &x, NULL), *y1 = relu(net, x);
    gwr_tensor *y2 = op1(net, "Identity", 1, &y1, NULL);
    gwr_network_mark_output(net, y0);
    gwr_network_mark_output(net, y1);
    gwr_network_mark_output(net, y2);
    CHECK_EQ_INT(optimize_case(net, NULL, "eliminate_identity", 0, 1), 0);
    CHECK_EQ_INT(count_op(net, "Identity"), 2);
    gwr_network_free(net);
}

/* Dropout with `ninputs` inputs (ratio 0.5, training `training` when
 * ninputs is 3; mode < 0: training_mode is a graph input), two outputs
 * when mask is set (mask_out: the mask is a network output too). */
static gwr_network *dropout_net(int ninputs, int training, int mask, int mask_out, int64_t opset, int is_test) {
    gwr_network *net = gwr_network_new("dropout");
    gwr_network_set_opset(net, "", opset);
    gwr_tensor *x = input(net, "x", GWR_FLOAT32, 2, d23);
    uint8_t tb = (uint8_t)(training > 0);
    gwr_tensor *in[3] = {x, NULL, NULL};
    if (ninputs > 1) in[1] = gwr_constant_f32(net, 0.5f);
    if (ninputs > 2)
        in[2] = training < 0 ? input(net, "train", GWR_BOOL, 0, NULL) : gwr_constant(net, GWR_BOOL, 0, NULL, &tb);
    gwr_tensor *outs[2] = {0};
    gwr_args *a = gwr_args_new();
    if (is_test >= 0) gwr_args_set_int(a, "is_test", is_test);
    gwr_op_call(net, "", "Dropout", ninputs, in, a, mask ? 2 : 1, outs);
    gwr_args_free(a);
    gwr_network_mark_output(net, relu(net, outs[0]));
    if (mask_out) gwr_network_mark_output(net, outs[1]);
    return net;
}

TEST(dropout) {
    struct {
        int nin, training, mask, mask_out;
        int64_t opset;
        int is_test, fires;
    } cases[] = {
        {1, 0, 0, 0, 17, -1, 1},  /* opset 12+: no training_mode */
        {3, 0, 1, 0, 17, -1, 1},  /* training_mode false, the mask unread */
        {3, 1, 0, 0, 17, -1, 0},  /* training */
        {3, -1, 0, 0, 17, -1, 0}, /* training_mode not a constant */
        {1, 0, 1, 1, 17, -1, 0},  /* the mask is a network output */
        {1, 0, 0, 0, 10, -1, 1},  /* opsets 7-11: inference */
        {1, 0, 0, 0, 6, 1, 1},    /* opset 6 with is_test */
        {1, 0, 0, 0, 6, -1, 0},   /* opset 6 without: training */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gwr_network *net = dropout_net(cases[i].nin, cases[i].training, cases[i].mask, cases[i].mask_out,
                                       cases[i].opset, cases[i].is_test);
        if (!CHECK_EQ_INT(optimize_case(net, "eliminate_identity", "eliminate_identity", 0, 1), cases[i].fires))
            fprintf(stderr, "  dropout case %zu\n", i);
        CHECK_EQ_INT(count_op(net, "Dropout"), !cases[i].fires);
        gwr_network_free(net);
    }
}

/* If(cond) with then = Identity(Relu(x)), else = Identity(x): x from the
 * enclosing network. The then-body's Identity goes; the else-body's
 * carries its output for an outer tensor and stays. */
TEST(identity_in_bodies) {
    gwr_network *net = new_net();
    gwr_tensor *x = input(net, "x", GWR_FLOAT32, 2, d23), *cond = input(net, "cond", GWR_BOOL, 0, NULL);
    gwr_layer *iff = gwr_network_add_layer(net, "If", "", "if", 1, &cond, 1, NULL);
    gwr_network *th = gwr_network_new_subgraph(net, "then"), *el = gwr_network_new_subgraph(net, "else");
    gwr_network_mark_output(th, op1(th, "Identity", 1, (gwr_tensor *[]){relu(th, x)}, NULL));
    gwr_network_mark_output(el, op1(el, "Identity", 1, &x, NULL));
    CHECK_OK(gwr_layer_set_graph(iff, "then_branch", th));
    CHECK_OK(gwr_layer_set_graph(iff, "else_branch", el));
    gwr_tensor_set_type(gwr_layer_output(iff, 0), GWR_FLOAT32, 2, d23);
    gwr_network_mark_output(net, gwr_layer_output(iff, 0));
    CHECK_EQ_INT(optimize_case(net, NULL, "eliminate_identity", 0, 1), 1);
    CHECK_EQ_INT(count_op(th, "Identity"), 0);
    CHECK_EQ_INT(count_op(el, "Identity"), 1);
    CHECK_EQ_INT(gwr_network_num_outputs(th), 1);
    gwr_network_free(net);
}

/* ---- eliminate_noop_arith -------------------------------------------------- */

/* y = Relu(x op k) (k on the left when left), x of type dt and dims xd,
 * k a constant of dims kd filled with v (v2 at element 1, when set). */
static gwr_network *arith_net(const char *op, int left, gwr_dtype dt, int xr, const gwr_dim *xd, int kr,
                              const int64_t *kd, double v, double v2, int yout) {
    gwr_network *net = new_net();
    gwr_tensor *x = input(net, "x", dt, xr, xd);
    int64_t n = gwr_shape_numel(kr, kd);
    double buf[64];
    uint8_t raw[64 * 8];
    for (int64_t i = 0; i < n && i < 64; i++) buf[i] = i == 1 ? v2 : v;
    for (int64_t i = 0; i < n && i < 64; i++) {
        if (dt == GWR_FLOAT32) ((float *)raw)[i] = (float)buf[i];
        else if (dt == GWR_INT32) ((int32_t *)raw)[i] = (int32_t)buf[i];
        else ((int64_t *)raw)[i] = (int64_t)buf[i];
    }
    gwr_tensor *k = gwr_constant(net, dt, kr, kd, raw);
    gwr_tensor *in[2] = {left ? k : x, left ? x : k};
    gwr_tensor *y = op1(net, op, 2, in, NULL);
    if (!yout) y = dt == GWR_FLOAT32 ? relu(net, y) : op1(net, "Neg", 1, &y, NULL);
    gwr_tensor_set_name(y, "y");
    gwr_network_mark_output(net, y);
    return net;
}

TEST(noop_arith_fires) {
    static const int64_t k1[1] = {1}, k3[1] = {3}, k23[2] = {2, 3};
    struct {
        const char *op;
        int left;
        gwr_dtype dt;
        int kr;
        const int64_t *kd;
        double v;
    } cases[] = {
        {"Add", 0, GWR_FLOAT32, 1, k3, 0}, {"Add", 1, GWR_FLOAT32, 0, NULL, 0}, {"Sub", 0, GWR_FLOAT32, 2, k23, 0},
        {"Mul", 0, GWR_FLOAT32, 1, k1, 1}, {"Mul", 1, GWR_FLOAT32, 2, k23, 1}, {"Div", 0, GWR_FLOAT32, 0, NULL, 1},
        {"Add", 0, GWR_INT64, 1, k3, 0},   {"Mul", 1, GWR_INT32, 0, NULL, 1},  {"Div", 0, GWR_INT64, 1, k1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gwr_network *net = arith_net(cases[i].op, cases[i].left, cases[i].dt, 2, d23, cases[i].kr, cases[i].kd,
                                     cases[i].v, cases[i].v, 0);
        if (!CHECK_EQ_INT(optimize_case(net, NULL, "eliminate_noop_arith", 0, 1), 1))
            fprintf(stderr, "  arith case %zu\n", i);
        CHECK_EQ_INT(count_op(net, cases[i].op), 0);
        CHECK_EQ_INT(gwr_network_num_live_layers(net), 1); /* the Relu or Neg; the constant pruned */
        gwr_network_free(net);
    }
}

TEST(noop_arith_refuses) {
    static const int64_t k3[1] = {3}, k34[2] = {3, 4}, k14[2] = {1, 4}, k4[1] = {4};
    static const gwr_dim d14[2] = {1, 4};
    gwr_dim dn4[2] = {GWR_DIM_UNKNOWN, 4};
    struct {
        const char *op;
        int left, xr;
        const gwr_dim *xd;
        int kr;
        const int64_t *kd;
        double v, v2;
        int fires;
    } cases[] = {
        {"Add", 0, 2, d23, 0, NULL, 1e-3, 1e-3, 0},  /* x + 1e-3 */
        {"Mul", 0, 2, d23, 0, NULL, 1 + 1e-6, 1 + 1e-6, 0},
        {"Sub", 1, 2, d23, 0, NULL, 0, 0, 0},        /* 0 - x */
        {"Div", 1, 2, d23, 0, NULL, 1, 1, 0},        /* 1 / x */
        {"Add", 0, 2, d23, 1, k3, 0, 1, 0},          /* not a splat */
        {"Add", 0, 2, d14, 2, k34, 0, 0, 0},         /* x[1,4] + zeros[3,4] grows the shape */
        {"Mul", 0, 1, k4, 2, k14, 1, 1, 0},          /* x[4] * ones[1,4] grows the rank */
        {"Add", 0, 2, NULL, 2, k34, 0, 0, 0},        /* x[?,4] + zeros[3,4]: unknown dim */
        {"Add", 0, 2, NULL, 2, k14, 0, 0, 1},        /* x[?,4] + zeros[1,4]: a 1 keeps any extent */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gwr_network *net = arith_net(cases[i].op, cases[i].left, GWR_FLOAT32, cases[i].xr,
                                     cases[i].xd ? cases[i].xd : dn4, cases[i].kr, cases[i].kd, cases[i].v,
                                     cases[i].v2, 0);
        if (!CHECK_EQ_INT(optimize_case(net, "eliminate_noop_arith", "eliminate_noop_arith", 3, 1), cases[i].fires))
            fprintf(stderr, "  arith refusal case %zu\n", i);
        CHECK_EQ_INT(count_op(net, cases[i].op), !cases[i].fires);
        gwr_network_free(net);
    }
    /* Not a constant: x + z, z a graph input of zeros. */
    gwr_network *net = new_net();
    gwr_tensor *x = input(net, "x", GWR_FLOAT32, 2, d23), *z = input(net, "z", GWR_FLOAT32, 0, NULL);
    gwr_network_mark_output(net, relu(net, gwr_add(net, x, z)));
    CHECK_EQ_INT(optimize_case(net, NULL, "eliminate_noop_arith", 0, 1), 0);
    CHECK_EQ_INT(count_op(net, "Add"), 1);
    gwr_network_free(net);
}

/* y = x + 0 with x a graph input and y a network output: the Add goes, an
 * Identity carries y (and stays), and a second run does nothing. */
TEST(noop_arith_output_of_input) {
    gwr_network *net = arith_net("Add", 0, GWR_FLOAT32, 2, d23, 0, NULL, 0, 0, 1);
    CHECK_EQ_INT(optimize_case(net, NULL, "eliminate_noop_arith", 0, 1), 1);
    CHECK_EQ_INT(count_op(net, "Add"), 0);
    CHECK_EQ_INT(count_op(net, "Identity"), 1);
    CHECK_EQ_INT(gwr_network_num_live_layers(net), 1);
    gwr_network_free(net);
}

/* ---- eliminate_noop_reshape ------------------------------------------------ */

static gwr_tensor *ints(gwr_network *net, int n, const int64_t *v) { return gwr_constant_i64s(net, n, v); }

/* Cases whose inputs the run cannot take (a shape from a graph input, an
 * expansion that fits only some extents) skip the numeric comparison. */
static int g_no_run;

/* y = Relu(op(x, extra...)); x float32 of dims xd (NULL: [?, 3]). */
static int64_t reshape_case(const char *op, const gwr_dim *xd, int nin, gwr_tensor *(*extra)(gwr_network *, int), int k,
                            const gwr_args *attrs) {
    gwr_network *net = new_net();
    gwr_dim dn3[2] = {GWR_DIM_UNKNOWN, 3};
    gwr_tensor *in[5] = {input(net, "x", GWR_FLOAT32, 2, xd ? xd : dn3)};
    for (int i = 1; i < nin; i++) in[i] = extra(net, k * 8 + i);
    gwr_tensor *y = op1(net, op, nin, in, attrs);
    if (!CHECK(y != NULL)) {
        fprintf(stderr, "  building %s case %d: %s\n", op, k, gwr_network_errmsg(net));
        gwr_network_free(net);
        return -1;
    }
    gwr_network_mark_output(net, relu(net, y));
    int64_t n = optimize_case(net, "eliminate_noop_reshape", "eliminate_noop_reshape", 5, !g_no_run);
    CHECK_EQ_INT(count_op(net, op), n != 1);
    gwr_network_free(net);
    return n;
}

/* The constant inputs of the cases below, by k * 8 + input index. */
static gwr_tensor *shape_inputs(gwr_network *net, int key) {
    static const int64_t s23[2] = {2, 3}, s0m[2] = {0, -1}, s32[2] = {3, 2}, s03[2] = {0, 3}, sm3[2] = {-1, 3},
                         s13[2] = {1, 3}, s323[3] = {3, 2, 3}, s43[2] = {4, 3}, sm0[2] = {-1, 0};
    switch (key) {
    case 1 * 8 + 1: return ints(net, 2, s23);
    case 2 * 8 + 1: return ints(net, 2, s0m);
    case 3 * 8 + 1: return ints(net, 2, s32);
    case 4 * 8 + 1: return ints(net, 2, s03);
    case 5 * 8 + 1: return ints(net, 2, sm3);
    case 6 * 8 + 1: return ints(net, 2, sm0);
    case 7 * 8 + 1: return ints(net, 2, s13);
    case 8 * 8 + 1: return ints(net, 3, s323);
    case 9 * 8 + 1: return ints(net, 2, s43);
    default: return input(net, "s", GWR_INT64, 1, (gwr_dim[]){2});
    }
}

TEST(noop_reshape_and_expand) {
    CHECK_EQ_INT(reshape_case("Reshape", d23, 2, shape_inputs, 1, NULL), 1);  /* [2,3] */
    CHECK_EQ_INT(reshape_case("Reshape", d23, 2, shape_inputs, 2, NULL), 1);  /* [0,-1] */
    CHECK_EQ_INT(reshape_case("Reshape", d23, 2, shape_inputs, 3, NULL), 0);  /* [3,2] */
    CHECK_EQ_INT(reshape_case("Reshape", NULL, 2, shape_inputs, 4, NULL), 1); /* [?,3] by [0,3] */
    CHECK_EQ_INT(reshape_case("Reshape", NULL, 2, shape_inputs, 5, NULL), 1); /* [?,3] by [-1,3] */
    CHECK_EQ_INT(reshape_case("Reshape", NULL, 2, shape_inputs, 6, NULL), 1); /* [?,3] by [-1,0]: 0 copies the 3 */
    CHECK_EQ_INT(reshape_case("Reshape", NULL, 2, shape_inputs, 2, NULL), 0); /* [?,3] by [0,-1]: -1 beside a ? */
    g_no_run = 1;
    CHECK_EQ_INT(reshape_case("Reshape", d23, 2, shape_inputs, 0, NULL), 0);  /* a shape that is no constant */
    gwr_args *a = gwr_args_new();
    gwr_args_set_int(a, "allowzero", 1);
    CHECK_EQ_INT(reshape_case("Reshape", NULL, 2, shape_inputs, 4, a), 0);    /* allowzero: 0 means 0 */
    gwr_args_free(a);
    g_no_run = 0;
    CHECK_EQ_INT(reshape_case("Expand", d23, 2, shape_inputs, 7, NULL), 1);   /* [1,3] */
    CHECK_EQ_INT(reshape_case("Expand", d23, 2, shape_inputs, 1, NULL), 1);   /* [2,3] */
    CHECK_EQ_INT(reshape_case("Expand", NULL, 2, shape_inputs, 7, NULL), 1);  /* [?,3] by [1,3] */
    CHECK_EQ_INT(reshape_case("Expand", d23, 2, shape_inputs, 8, NULL), 0);   /* [3,2,3] grows the rank */
    g_no_run = 1;
    CHECK_EQ_INT(reshape_case("Expand", NULL, 2, shape_inputs, 9, NULL), 0);  /* [?,3] by [4,3] */
    g_no_run = 0;
}

static gwr_tensor *slice_inputs(gwr_network *net, int key) {
    static const int64_t z[1] = {0}, one[1] = {1}, two[1] = {2}, big[1] = {INT64_MAX}, e3[1] = {3}, e2[1] = {2},
                         e100[1] = {100};
    /* k: 1 everything of axis 1 to INT64_MAX; 2 axis 1 to its extent 3;
     * 3 axis 1 to 2; 4 step 2; 5 start 1; 6 axis 0 (?) to INT64_MAX;
     * 7 axis 0 (?) to 100; 8 negative axis -1 to 3 */
    int k = key / 8, i = key % 8;
    const int64_t *starts = k == 5 ? one : z, *ends = k == 1 || k == 6 ? big : k == 3 ? e2 : k == 7 ? e100 : e3;
    const int64_t *axes = k >= 6 && k <= 7 ? z : k == 8 ? (const int64_t[]){-1} : one;
    const int64_t *steps = k == 4 ? two : one;
    return ints(net, 1, i == 1 ? starts : i == 2 ? ends : i == 3 ? axes : steps);
}

TEST(noop_slice) {
    CHECK_EQ_INT(reshape_case("Slice", NULL, 5, slice_inputs, 1, NULL), 1);
    CHECK_EQ_INT(reshape_case("Slice", NULL, 5, slice_inputs, 2, NULL), 1);
    CHECK_EQ_INT(reshape_case("Slice", NULL, 5, slice_inputs, 3, NULL), 0);
    CHECK_EQ_INT(reshape_case("Slice", NULL, 5, slice_inputs, 4, NULL), 0);
    CHECK_EQ_INT(reshape_case("Slice", NULL, 5, slice_inputs, 5, NULL), 0);
    CHECK_EQ_INT(reshape_case("Slice", NULL, 5, slice_inputs, 6, NULL), 1);
    CHECK_EQ_INT(reshape_case("Slice", NULL, 5, slice_inputs, 7, NULL), 0); /* end 100 of an unknown extent */
    CHECK_EQ_INT(reshape_case("Slice", NULL, 4, slice_inputs, 8, NULL), 1); /* no steps, axis -1 */
    CHECK_EQ_INT(reshape_case("Slice", d23, 4, slice_inputs, 7, NULL), 1);  /* end 100 past a known 2 */
}

static gwr_tensor *misc_inputs(gwr_network *net, int key) {
    static const int64_t p0[4] = {0, 0, 0, 0}, p1[4] = {0, 1, 0, 0}, r11[2] = {1, 1}, r12[2] = {1, 2};
    switch (key) {
    case 1 * 8 + 1: return ints(net, 4, p0);
    case 2 * 8 + 1: return ints(net, 4, p1);
    case 3 * 8 + 1: return ints(net, 2, r11);
    case 4 * 8 + 1: return ints(net, 2, r12);
    case 5 * 8 + 1: return input(net, "x2", GWR_FLOAT32, 2, d23);
    default: return input(net, "s", GWR_INT64, 1, (gwr_dim[]){4});
    }
}

TEST(noop_cast_transpose_pad_tile_concat_split) {
    gwr_args *a = gwr_args_new();
    gwr_args_set_int(a, "to", GWR_FLOAT32);
    CHECK_EQ_INT(reshape_case("Cast", d23, 1, misc_inputs, 0, a), 1);
    gwr_args_set_int(a, "to", GWR_FLOAT64);
    CHECK_EQ_INT(reshape_case("Cast", d23, 1, misc_inputs, 0, a), 0);
    gwr_args_free(a);
    a = gwr_args_new();
    gwr_args_set_ints(a, "perm", 2, (int64_t[]){0, 1});
    CHECK_EQ_INT(reshape_case("Transpose", NULL, 1, misc_inputs, 0, a), 1);
    gwr_args_set_ints(a, "perm", 2, (int64_t[]){1, 0});
    CHECK_EQ_INT(reshape_case("Transpose", NULL, 1, misc_inputs, 0, a), 0);
    CHECK_EQ_INT(reshape_case("Transpose", d23, 1, misc_inputs, 0, NULL), 0); /* the default reverses */
    gwr_args_free(a);
    CHECK_EQ_INT(reshape_case("Pad", d23, 2, misc_inputs, 1, NULL), 1);
    CHECK_EQ_INT(reshape_case("Pad", d23, 2, misc_inputs, 2, NULL), 0);
    g_no_run = 1;
    CHECK_EQ_INT(reshape_case("Pad", d23, 2, misc_inputs, 0, NULL), 0); /* pads not a constant */
    g_no_run = 0;
    CHECK_EQ_INT(reshape_case("Tile", d23, 2, misc_inputs, 3, NULL), 1);
    CHECK_EQ_INT(reshape_case("Tile", d23, 2, misc_inputs, 4, NULL), 0);
    a = gwr_args_new();
    gwr_args_set_int(a, "axis", 0);
    CHECK_EQ_INT(reshape_case("Concat", d23, 1, misc_inputs, 0, a), 1);
    CHECK_EQ_INT(reshape_case("Concat", d23, 2, misc_inputs, 5, a), 0);
    CHECK_EQ_INT(reshape_case("Split", d23, 1, misc_inputs, 0, a), 1);
    gwr_args_free(a);
    /* A Split into two parts is no copy. */
    gwr_network *net = new_net();
    gwr_tensor *parts[2];
    gwr_split(net, input(net, "x", GWR_FLOAT32, 2, d23), 0, 2, NULL, parts);
    gwr_network_mark_output(net, relu(net, parts[0]));
    gwr_network_mark_output(net, relu(net, parts[1]));
    CHECK_EQ_INT(optimize_case(net, NULL, "eliminate_noop_reshape", 0, 1), 0);
    gwr_network_free(net);
}

/* Opset 9's Slice and opset 2's Pad take attributes. */
TEST(noop_attribute_forms) {
    for (int pad = 0; pad < 2; pad++)
        for (int noop = 0; noop < 2; noop++) {
            gwr_network *net = gwr_network_new("attrs");
            gwr_network_set_opset(net, "", pad ? 2 : 9);
            gwr_tensor *x = input(net, "x", GWR_FLOAT32, 2, d23);
            /* added directly: the builders check today's arity */
            gwr_layer *l = gwr_network_add_layer(net, pad ? "Pad" : "Slice", "", NULL, 1, &x, 1, NULL);
            if (pad) {
                gwr_layer_set_ints(l, "pads", (int64_t[]){0, 0, 0, noop ? 0 : 1}, 4);
            } else {
                gwr_layer_set_ints(l, "starts", (int64_t[]){0}, 1);
                gwr_layer_set_ints(l, "ends", (int64_t[]){noop ? INT64_MAX : 2}, 1);
                gwr_layer_set_ints(l, "axes", (int64_t[]){1}, 1);
            }
            gwr_tensor *y = gwr_layer_output(l, 0);
            gwr_tensor_set_type(y, GWR_FLOAT32, 2, (gwr_dim[]){2, noop ? 3 : pad ? 4 : 2});
            gwr_network_mark_output(net, gwr_unary(net, GWR_OP_Neg, y));
            CHECK_EQ_INT(optimize_case(net, "eliminate_noop_reshape", "eliminate_noop_reshape", 0, 1), noop);
            gwr_network_free(net);
        }
}

/* ---- compose_transposes ---------------------------------------------------- */

/* y = Relu(T(T(x, p1), p2)) over x[2,3,4]; `share`: the inner Transpose
 * also feeds an output (1: through a Relu, 2: it is one). */
static gwr_network *tt_net(const int64_t *p1, const int64_t *p2, int share) {
    static const gwr_dim d234[3] = {2, 3, 4};
    gwr_network *net = new_net();
    gwr_tensor *x = input(net, "x", GWR_FLOAT32, 3, d234);
    gwr_tensor *t = gwr_transpose(net, x, 3, p1);
    gwr_network_mark_output(net, relu(net, gwr_transpose(net, t, 3, p2)));
    if (share) gwr_network_mark_output(net, share == 1 ? relu(net, t) : t);
    return net;
}

TEST(compose) {
    static const int64_t p120[3] = {1, 2, 0}, p201[3] = {2, 0, 1}, p021[3] = {0, 2, 1}, p102[3] = {1, 0, 2};
    /* perms that cancel: x itself */
    gwr_network *net = tt_net(p120, p201, 0);
    CHECK_EQ_INT(optimize_case(net, "compose_transposes", "compose_transposes", 0, 1), 1);
    CHECK_EQ_INT(count_op(net, "Transpose"), 0);
    gwr_network_free(net);
    /* one Transpose with p1[p2] = [1, 0, 2] */
    net = tt_net(p120, p021, 0);
    CHECK_EQ_INT(optimize_case(net, "compose_transposes", "compose_transposes", 0, 1), 1);
    CHECK_EQ_INT(count_op(net, "Transpose"), 1);
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        const int64_t *p;
        int64_t n;
        if (!gwr_layer_is_removed(l) && !strcmp(gwr_layer_op(l), "Transpose") &&
            CHECK_OK(gwr_layer_get_ints(l, "perm", &p, &n)))
            CHECK(n == 3 && !memcmp(p, p102, sizeof p102));
    }
    gwr_network_free(net);
    /* the inner Transpose has another reader, or is a network output */
    for (int share = 1; share <= 2; share++) {
        net = tt_net(p120, p201, share);
        CHECK_EQ_INT(optimize_case(net, NULL, "compose_transposes", 0, 1), 0);
        CHECK_EQ_INT(count_op(net, "Transpose"), 2);
        gwr_network_free(net);
    }
    /* three in a row, with the defaults (reverse) and x an input feeding
     * the output: T(T(T(x))) = T(x); then y = T(T(x)) = x needs an Identity */
    static const gwr_dim d23x[2] = {2, 3};
    net = new_net();
    gwr_tensor *x = input(net, "x", GWR_FLOAT32, 2, d23x);
    gwr_tensor *y = gwr_transpose(net, gwr_transpose(net, gwr_transpose(net, x, 0, NULL), 0, NULL), 0, NULL);
    gwr_network_mark_output(net, y);
    gwr_network_mark_output(net, gwr_transpose(net, gwr_transpose(net, x, 0, NULL), 0, NULL));
    /* alone: eliminate_common_subexpressions would merge the two T(x) first */
    CHECK_EQ_INT(optimize_case(net, "compose_transposes", "compose_transposes", 0, 1), 2);
    CHECK_EQ_INT(count_op(net, "Transpose"), 1);
    CHECK_EQ_INT(count_op(net, "Identity"), 1);
    gwr_network_free(net);
}

int main(void) {
    RUN(identity_fires);
    RUN(identity_keeps_interface);
    RUN(dropout);
    RUN(identity_in_bodies);
    RUN(noop_arith_fires);
    RUN(noop_arith_refuses);
    RUN(noop_arith_output_of_input);
    RUN(noop_reshape_and_expand);
    RUN(noop_slice);
    RUN(noop_cast_transpose_pad_tile_concat_split);
    RUN(noop_attribute_forms);
    RUN(compose);
    return check_report();
}
