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
        double x = dt == GWR_BOOL ? (double)((i + k) % 2) : gwr_dtype_is_float(dt) ? ((i * 7 + k * 3) % 11 - 5) * 0.37 + 0.125
                                                                : (double)((i * 7 + k) % 9 - 4);
        gwr_value_set_f64(v, i, x);
    }
    return v;
}

/* Runs net on make_input's inputs; outs (16 at most) get the outputs. */
static int run_net(gwr_network *net, int64_t dyn, gwr_value **outs) {
    int nin = gwr_network_num_inputs(net), nout = gwr_network_num_outputs(net), ok = nin <= 16 && nout <= 16;
    gwr_value *in[16] = {0};
    const char *names[16];
    for (int i = 0; ok && i < nin; i++) {
        names[i] = gwr_tensor_name(gwr_network_input(net, i));
        ok = (in[i] = make_input(gwr_network_input(net, i), dyn, i)) != NULL;
    }
    gwr_session *s = ok ? gwr_session_new(net, NULL) : NULL;
    if (ok && !s) fprintf(stderr, "  session: %s\n", gwr_last_errmsg());
    ok = s && !gwr_session_run(s, nin, names, in, nout, NULL, outs);
    if (s && !ok) fprintf(stderr, "  run: %s\n", gwr_session_errmsg(s));
    for (int i = 0; i < nin; i++) gwr_value_release(in[i]);
    gwr_session_free(s);
    return ok;
}

static int same_value(const gwr_value *a, const gwr_value *b) {
    return gwr_value_dtype(a) == gwr_value_dtype(b) && gwr_value_rank(a) == gwr_value_rank(b) &&
           !memcmp(gwr_value_dims(a), gwr_value_dims(b), (size_t)gwr_value_rank(a) * sizeof(int64_t)) &&
           gwr_value_nbytes(a) == gwr_value_nbytes(b) && !memcmp(gwr_value_cdata(a), gwr_value_cdata(b), gwr_value_nbytes(a));
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
    gwr_value *a[16] = {0}, *b[16] = {0};
    if (run && CHECK(run_net(before, dyn, a)) && CHECK(run_net(net, dyn, b)))
        for (int i = 0; i < nout; i++) CHECK(same_value(a[i], b[i]));
    for (int i = 0; i < 16; i++) gwr_value_release(a[i]), gwr_value_release(b[i]);
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
        gwr_network *net = dropout_net(cases[i].nin, cases[i].training, cases[i].mask, cases[i].mask_out, cases[i].opset,
                                       cases[i].is_test);
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

int main(void) {
    RUN(identity_fires);
    RUN(identity_keeps_interface);
    RUN(dropout);
    RUN(identity_in_bodies);
    return check_report();
}
