/* test_exec_control.c - the executor's control-flow kernels (If, Loop,
 * Scan: src/exec/kernels/control.c), its recurrent ones (RNN, GRU, LSTM:
 * rnn.c) and the gwr::GPTAttention plugin kernel (plugins.c): small cases
 * computed by hand, the errors a network can cause (a status and a
 * message, never a crash), and the plugin's equivalences: with the plain
 * ONNX attention of gwr_build_gpt, and before and after the seed
 * rewrites. ONNX's backend test data judges the rest (gwr test-onnx).
 *
 * Cases that need kernels of other families (Add, MatMul, ...) check for
 * them and say on stderr when they cannot run yet. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"

/* ---- helpers --------------------------------------------------------------- */

static char last_err[2048];

/* Plans and runs net once; the message of a failure is kept in last_err. */
static gwr_status run_net(gwr_network *net, int nin, const char *const *names, gwr_value *const *vals, int nout,
                          gwr_value **outs) {
    last_err[0] = 0;
    gwr_session *s = gwr_session_new_raw(net, NULL);
    if (!s) {
        snprintf(last_err, sizeof last_err, "%s", gwr_last_errmsg());
        return GWR_ERR_INVALID_ARG;
    }
    gwr_status st = gwr_session_run(s, nin, names, vals, nout, NULL, outs);
    if (st) snprintf(last_err, sizeof last_err, "%s", gwr_session_errmsg(s));
    gwr_session_free(s);
    return st;
}

static gwr_value *val(gwr_dtype dt, int rank, const int64_t *dims, const void *data) {
    gwr_value *v = gwr_value_new(dt, rank, dims);
    if (v && data && gwr_value_nbytes(v)) memcpy(gwr_value_data(v), data, gwr_value_nbytes(v));
    return v;
}

static gwr_value *bool_scalar(int b) {
    uint8_t x = (uint8_t)b;
    return val(GWR_BOOL, 0, NULL, &x);
}

static gwr_value *i64_scalar(int64_t x) { return val(GWR_INT64, 0, NULL, &x); }

/* Has v this shape and these values (within tol)? Prints what differs. */
static int same_f(const gwr_value *v, int rank, const int64_t *dims, const float *want, double tol) {
    if (!v) return 0;
    if (gwr_value_rank(v) != rank) {
        fprintf(stderr, "  rank %d, expected %d\n", gwr_value_rank(v), rank);
        return 0;
    }
    for (int i = 0; i < rank; i++)
        if (gwr_value_dims(v)[i] != dims[i]) {
            fprintf(stderr, "  dim %d is %lld, expected %lld\n", i, (long long)gwr_value_dims(v)[i], (long long)dims[i]);
            return 0;
        }
    for (int64_t i = 0; i < gwr_value_numel(v); i++)
        if (!(fabs(gwr_value_get_f64(v, i) - want[i]) <= tol)) {
            fprintf(stderr, "  element %lld is %.7g, expected %.7g\n", (long long)i, gwr_value_get_f64(v, i), (double)want[i]);
            return 0;
        }
    return 1;
}

/* Largest |a - b| over two values of one shape; INFINITY when the shapes
 * differ. */
static double max_diff(const gwr_value *a, const gwr_value *b) {
    if (!a || !b || gwr_value_rank(a) != gwr_value_rank(b)) return INFINITY;
    for (int i = 0; i < gwr_value_rank(a); i++)
        if (gwr_value_dims(a)[i] != gwr_value_dims(b)[i]) return INFINITY;
    double m = 0;
    for (int64_t i = 0; i < gwr_value_numel(a); i++) {
        double d = fabs(gwr_value_get_f64(a, i) - gwr_value_get_f64(b, i));
        if (!(d <= m)) m = d; /* NaN wins */
    }
    return m;
}

/* One layer of op with inputs and one output named out (NULL: made up). */
static gwr_layer *layer(gwr_network *n, const char *op, int nin, gwr_tensor *const *in, int nout, const char *const *outs) {
    return gwr_network_add_layer(n, op, "", NULL, nin, in, nout, outs);
}

static gwr_tensor *op1(gwr_network *n, const char *op, gwr_tensor *x) {
    gwr_layer *l = layer(n, op, 1, &x, 1, NULL);
    return l ? gwr_layer_output(l, 0) : NULL;
}

static gwr_tensor *cf32(gwr_network *n, int rank, const int64_t *dims, const float *data) {
    return gwr_constant(n, GWR_FLOAT32, rank, dims, data);
}

static int have_kernels(const char *what, const char *const *ops) {
    for (int i = 0; ops[i]; i++)
        if (!gwr_exec_has_kernel("", ops[i])) {
            fprintf(stderr, "note: %s not run: no kernel for %s yet\n", what, ops[i]);
            return 0;
        }
    return 1;
}

/* ---- If -------------------------------------------------------------------- */

/* y = If(c) then Identity(x) (an outer-scope read) else a constant of
 * another shape. */
static gwr_network *if_net(int then_outputs) {
    gwr_network *net = gwr_network_new("if");
    gwr_dim d3 = 3;
    gwr_tensor *c = gwr_network_add_input(net, "c", GWR_BOOL, 0, NULL);
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, &d3);
    const char *yn = "y";
    gwr_layer *l = layer(net, "If", 1, &c, 1, &yn);
    gwr_network *th = gwr_network_new_subgraph(net, "then");
    gwr_network_mark_output(th, op1(th, "Identity", x));
    if (then_outputs == 2) gwr_network_mark_output(th, op1(th, "Identity", x));
    gwr_network *el = gwr_network_new_subgraph(net, "else");
    static const float four[4] = {1, 2, 3, 4};
    int64_t d4 = 4;
    gwr_network_mark_output(el, cf32(el, 1, &d4, four));
    gwr_layer_set_graph(l, "then_branch", th);
    gwr_layer_set_graph(l, "else_branch", el);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    return net;
}

TEST(if_picks_a_branch) {
    gwr_network *net = if_net(1);
    int64_t d3 = 3, d4 = 4;
    static const float xs[3] = {7, 8, 9}, four[4] = {1, 2, 3, 4};
    const char *names[2] = {"c", "x"};
    for (int c = 0; c < 2; c++) {
        gwr_value *in[2] = {bool_scalar(c), val(GWR_FLOAT32, 1, &d3, xs)}, *y = NULL;
        if (CHECK_OK(run_net(net, 2, names, in, 1, &y)))
            CHECK(c ? same_f(y, 1, &d3, xs, 0) : same_f(y, 1, &d4, four, 0));
        gwr_value_release(y), gwr_value_release(in[0]), gwr_value_release(in[1]);
    }
    gwr_network_free(net);
}

TEST(if_errors) {
    int64_t d3 = 3, d2 = 2;
    static const float xs[3] = {7, 8, 9};
    static const uint8_t two[2] = {1, 0};
    const char *names[2] = {"c", "x"};
    /* a branch with more outputs than the If */
    gwr_network *net = if_net(2);
    gwr_value *in[2] = {bool_scalar(1), val(GWR_FLOAT32, 1, &d3, xs)}, *y = NULL;
    CHECK_EQ_INT(run_net(net, 2, names, in, 1, &y), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(last_err, "then branch 'then' gives 2 outputs; the If has 1");
    CHECK(!y);
    gwr_network_free(net);
    /* cond of two elements */
    gwr_value_release(in[0]);
    in[0] = val(GWR_BOOL, 1, &d2, two);
    net = gwr_network_new("if2");
    gwr_tensor *c = gwr_network_add_input(net, "c", GWR_BOOL, 1, (gwr_dim[]){2});
    gwr_layer *l = layer(net, "If", 1, &c, 1, NULL);
    gwr_network *th = gwr_network_new_subgraph(net, "then"), *el = gwr_network_new_subgraph(net, "else");
    gwr_network_mark_output(th, cf32(th, 1, &d3, xs));
    gwr_network_mark_output(el, cf32(el, 1, &d3, xs));
    gwr_layer_set_graph(l, "then_branch", th);
    gwr_layer_set_graph(l, "else_branch", el);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    CHECK_EQ_INT(run_net(net, 1, names, in, 1, &y), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(last_err, "cond must be a one-element bool tensor, got bool[2]");
    gwr_network_free(net);
    /* no cond at all, and a missing branch */
    net = gwr_network_new("if3");
    gwr_tensor *none = NULL;
    l = layer(net, "If", 1, &none, 1, NULL);
    th = gwr_network_new_subgraph(net, "then");
    gwr_network_mark_output(th, cf32(th, 1, &d3, xs));
    gwr_layer_set_graph(l, "then_branch", th);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    CHECK_EQ_INT(run_net(net, 0, NULL, NULL, 1, &y), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(last_err, "If takes one input, cond");
    gwr_network_free(net);
    net = gwr_network_new("if4");
    c = gwr_network_add_input(net, "c", GWR_BOOL, 0, NULL);
    l = layer(net, "If", 1, &c, 1, NULL);
    th = gwr_network_new_subgraph(net, "then");
    gwr_network_mark_output(th, cf32(th, 1, &d3, xs));
    gwr_layer_set_graph(l, "then_branch", th);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    gwr_value_release(in[0]);
    in[0] = bool_scalar(0);
    CHECK_EQ_INT(run_net(net, 1, names, in, 1, &y), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(last_err, "attribute 'else_branch' (a graph) is missing");
    gwr_value_release(in[0]);
    in[0] = bool_scalar(1); /* the then branch runs fine */
    if (CHECK_OK(run_net(net, 1, names, in, 1, &y))) CHECK(same_f(y, 1, &d3, xs, 0));
    gwr_value_release(y);
    gwr_network_free(net);
    gwr_value_release(in[0]), gwr_value_release(in[1]);
}

/* ---- Loop ------------------------------------------------------------------- */

/* Loop(M, cond, v) whose body passes v on (Identity, or Add(v, x) with x
 * of the outer graph when add), gives cond from `cond_src` (0: Identity of
 * its cond input, 1: a constant false) and scans out the iteration
 * number. has_m / has_cond: whether the Loop gets M and cond. */
static gwr_network *loop_net(int has_m, int has_cond, int cond_src, int add) {
    gwr_network *net = gwr_network_new("loop");
    gwr_dim d2 = 2;
    gwr_tensor *m = gwr_network_add_input(net, "M", GWR_INT64, 0, NULL);
    gwr_tensor *c = gwr_network_add_input(net, "cond", GWR_BOOL, 0, NULL);
    gwr_tensor *v = gwr_network_add_input(net, "v", GWR_FLOAT32, 1, &d2);
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 1, &d2);
    gwr_tensor *in[3] = {has_m ? m : NULL, has_cond ? c : NULL, v};
    const char *outs[2] = {"v_final", "iters"};
    gwr_layer *l = layer(net, "Loop", 3, in, 2, outs);
    gwr_network *body = gwr_network_new_subgraph(net, "body");
    gwr_tensor *bi = gwr_network_add_input(body, "i", GWR_INT64, 0, NULL);
    gwr_tensor *bc = gwr_network_add_input(body, "c_in", GWR_BOOL, 0, NULL);
    gwr_tensor *bv = gwr_network_add_input(body, "v_in", GWR_FLOAT32, 1, &d2);
    uint8_t no = 0;
    gwr_tensor *cout = cond_src ? gwr_constant(body, GWR_BOOL, 0, NULL, &no) : op1(body, "Identity", bc);
    gwr_tensor *vout = add ? gwr_add(body, bv, x) : op1(body, "Identity", bv);
    gwr_tensor *iters = op1(body, "Identity", bi);
    gwr_tensor_set_type(iters, GWR_INT64, 0, NULL); /* what an ONNX body declares */
    gwr_network_mark_output(body, cout);
    gwr_network_mark_output(body, vout);
    gwr_network_mark_output(body, iters);
    gwr_layer_set_graph(l, "body", body);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    gwr_network_mark_output(net, gwr_layer_output(l, 1));
    return net;
}

/* Runs a loop_net with M, cond, v = {1, 2}, x = {10, 20}; returns the
 * status, outputs in out[2]. */
static gwr_status run_loop(gwr_network *net, int64_t M, int cond, gwr_value **out) {
    int64_t d2 = 2;
    static const float v[2] = {1, 2}, x[2] = {10, 20};
    gwr_value *in[4] = {i64_scalar(M), bool_scalar(cond), val(GWR_FLOAT32, 1, &d2, v), val(GWR_FLOAT32, 1, &d2, x)};
    const char *names[4] = {"M", "cond", "v", "x"};
    out[0] = out[1] = NULL;
    gwr_status st = run_net(net, 4, names, in, 2, out);
    for (int i = 0; i < 4; i++) gwr_value_release(in[i]);
    return st;
}

static int iters_are(const gwr_value *v, int64_t n) {
    if (!v || gwr_value_dtype(v) != GWR_INT64 || gwr_value_rank(v) != 1 || gwr_value_dims(v)[0] != n) {
        char ty[64] = "nothing";
        if (v) gwr_value_type_str(v, ty, sizeof ty);
        fprintf(stderr, "  iterations: %s, expected int64[%lld]\n", ty, (long long)n);
        return 0;
    }
    for (int64_t i = 0; i < n; i++)
        if (((const int64_t *)gwr_value_cdata(v))[i] != i) return 0;
    return 1;
}

TEST(loop_trip_count_and_cond) {
    static const float v[2] = {1, 2};
    int64_t d2 = 2;
    gwr_value *out[2];
    struct {
        int has_m, has_cond, cond_src;
        int64_t M;
        int cond;
        int64_t iters;
    } cases[] = {
        {1, 1, 0, 3, 1, 3},  /* for loop with a condition that stays true */
        {1, 1, 0, 3, 0, 0},  /* cond false: no iteration */
        {1, 1, 0, 0, 1, 0},  /* M = 0 */
        {1, 1, 0, -5, 1, 0}, /* negative M: none */
        {1, 1, 1, 9, 1, 1},  /* the body says stop: one iteration */
        {1, 0, 1, 2, 1, 2},  /* no cond input: the body's cond is ignored */
        {0, 1, 1, 0, 1, 1},  /* while loop stopped by the body */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        gwr_network *net = loop_net(cases[i].has_m, cases[i].has_cond, cases[i].cond_src, 0);
        if (CHECK_OK(run_loop(net, cases[i].M, cases[i].cond, out))) {
            if (!CHECK(iters_are(out[1], cases[i].iters))) fprintf(stderr, "  case %zu\n", i);
            CHECK(same_f(out[0], 1, &d2, v, 0));
        }
        gwr_value_release(out[0]), gwr_value_release(out[1]);
        gwr_network_free(net);
    }
}

TEST(loop_sums) {
    if (!have_kernels("loop_sums", (const char *const[]){"Add", NULL})) return;
    gwr_network *net = loop_net(1, 1, 0, 1);
    gwr_value *out[2];
    int64_t d2 = 2;
    static const float want[2] = {1 + 4 * 10, 2 + 4 * 20};
    if (CHECK_OK(run_loop(net, 4, 1, out))) CHECK(same_f(out[0], 1, &d2, want, 0)), CHECK(iters_are(out[1], 4));
    gwr_value_release(out[0]), gwr_value_release(out[1]);
    gwr_network_free(net);
}

TEST(loop_errors) {
    gwr_value *out[2];
    /* the body's cond is not a scalar bool */
    gwr_network *net = loop_net(1, 1, 0, 0);
    gwr_network *body;
    gwr_layer *l = gwr_tensor_parent(gwr_network_output(net, 0));
    gwr_layer_get_graph(l, "body", &body);
    gwr_network_unmark_output(body, gwr_network_output(body, 0));
    gwr_network_unmark_output(body, gwr_network_output(body, 0));
    gwr_tensor *it = gwr_network_output(body, 0);
    gwr_network_unmark_output(body, it);
    static const float f2[2] = {1, 1};
    int64_t d2 = 2;
    gwr_network_mark_output(body, cf32(body, 1, &d2, f2)); /* cond: float[2] */
    gwr_network_mark_output(body, gwr_network_input(body, 2));
    gwr_network_mark_output(body, it);
    CHECK_EQ_INT(run_loop(net, 3, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(last_err, "the body's cond output must be a one-element bool tensor, got float32[2]");
    CHECK(!out[0] && !out[1]);
    gwr_network_free(net);
    /* a body taking the wrong number of inputs */
    net = loop_net(1, 1, 0, 0);
    l = gwr_tensor_parent(gwr_network_output(net, 0));
    gwr_layer_get_graph(l, "body", &body);
    gwr_network_add_input(body, "extra", GWR_FLOAT32, 0, NULL);
    CHECK_EQ_INT(run_loop(net, 3, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(last_err, "body 'body' takes 4 inputs; it must take 2 + 1");
    gwr_network_free(net);
    /* M of the wrong type */
    net = gwr_network_new("loopm");
    gwr_tensor *m = gwr_network_add_input(net, "M", GWR_FLOAT32, 0, NULL);
    gwr_tensor *in[2] = {m, NULL};
    l = layer(net, "Loop", 2, in, 0, NULL);
    body = gwr_network_new_subgraph(net, "body");
    gwr_network_add_input(body, "i", GWR_INT64, 0, NULL);
    gwr_network_mark_output(body, op1(body, "Identity", gwr_network_add_input(body, "c", GWR_BOOL, 0, NULL)));
    gwr_layer_set_graph(l, "body", body);
    gwr_network_mark_output(net, gwr_network_input(net, 0));
    float one = 1;
    gwr_value *mv = val(GWR_FLOAT32, 0, NULL, &one), *o = NULL;
    const char *mn = "M";
    CHECK_EQ_INT(run_net(net, 1, &mn, &mv, 1, &o), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(last_err, "M must be a one-element int64 tensor, got float32");
    gwr_value_release(mv);
    gwr_network_free(net);
    /* Loop carries sequences (test_exec_seq.c, onnx's test_loop13_seq),
     * but what it stacks are tensors: a scan output that is a sequence
     * (SequenceConstruct of the iteration number) is refused. */
    net = loop_net(1, 1, 0, 0);
    l = gwr_tensor_parent(gwr_network_output(net, 0));
    gwr_layer_get_graph(l, "body", &body);
    gwr_tensor *iters = gwr_network_output(body, 2), *bi = gwr_network_input(body, 0);
    CHECK_OK(gwr_network_unmark_output(body, iters));
    gwr_network_mark_output(body, op1(body, "SequenceConstruct", bi));
    CHECK_EQ_INT(run_loop(net, 3, 1, out), GWR_ERR_UNSUPPORTED);
    CHECK_CONTAINS(last_err, "scan output 0 is a sequence: only tensors are stacked");
    gwr_network_free(net);
}

/* A loop without M or cond whose scan output is a 16 MiB constant: it
 * would run forever; the growing output stops it with an error. */
TEST(loop_runaway_is_stopped) {
    gwr_network *net = gwr_network_new("forever");
    gwr_tensor *none[2] = {NULL, NULL};
    gwr_layer *l = layer(net, "Loop", 2, none, 1, NULL);
    gwr_network *body = gwr_network_new_subgraph(net, "body");
    gwr_network_add_input(body, "i", GWR_INT64, 0, NULL);
    gwr_tensor *c = gwr_network_add_input(body, "c", GWR_BOOL, 0, NULL);
    gwr_network_mark_output(body, op1(body, "Identity", c));
    int64_t n = 4 << 20;
    float *big = calloc((size_t)n, sizeof *big);
    if (!CHECK(big)) return;
    gwr_network_mark_output(body, cf32(body, 1, &n, big));
    free(big);
    gwr_layer_set_graph(l, "body", body);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    gwr_value *o = NULL;
    CHECK_EQ_INT(run_net(net, 0, NULL, NULL, 1, &o), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(last_err, "scan output 0 grows past");
    CHECK(!o);
    gwr_network_free(net);
}

/* ---- Scan ------------------------------------------------------------------- */

/* Scan(s0, x) with a body: s_out = Add(s, x_t) when add (else Identity(s)),
 * y = Identity of the new state when add (else of x_t). Body inputs have
 * an unknown rank so any scan axis fits. */
static gwr_network *scan_net(int add, int64_t x_rows) {
    gwr_network *net = gwr_network_new("scan");
    gwr_dim d2 = 2, dx[2] = {x_rows, 2};
    gwr_tensor *s0 = gwr_network_add_input(net, "s0", GWR_FLOAT32, 1, &d2);
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, dx);
    gwr_tensor *in[2] = {s0, x};
    const char *outs[2] = {"s", "y"};
    gwr_layer *l = layer(net, "Scan", 2, in, 2, outs);
    gwr_network *body = gwr_network_new_subgraph(net, "body");
    gwr_tensor *bs = gwr_network_add_input(body, "s_in", GWR_FLOAT32, -1, NULL);
    gwr_tensor *bx = gwr_network_add_input(body, "x_t", GWR_FLOAT32, -1, NULL);
    gwr_tensor *so = add ? gwr_add(body, bs, bx) : op1(body, "Identity", bs);
    gwr_network_mark_output(body, so);
    gwr_network_mark_output(body, op1(body, "Identity", add ? so : bx));
    gwr_layer_set_graph(l, "body", body);
    gwr_layer_set_int(l, "num_scan_inputs", 1);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    gwr_network_mark_output(net, gwr_layer_output(l, 1));
    gwr_network_set_opset(net, "", 16);
    return net;
}

static gwr_status run_scan(gwr_network *net, int64_t rows, const float *x, gwr_value **out) {
    int64_t d2 = 2, dx[2] = {rows, 2};
    static const float s0[2] = {100, 200};
    gwr_value *in[2] = {val(GWR_FLOAT32, 1, &d2, s0), val(GWR_FLOAT32, 2, dx, x)};
    const char *names[2] = {"s0", "x"};
    out[0] = out[1] = NULL;
    gwr_status st = run_net(net, 2, names, in, 2, out);
    gwr_value_release(in[0]), gwr_value_release(in[1]);
    return st;
}

TEST(scan_axes_and_directions) {
    static const float x[6] = {1, 2, 3, 4, 5, 6}, s0[2] = {100, 200};
    int64_t d2 = 2, d32[2] = {3, 2}, d23[2] = {2, 3};
    struct {
        const char *attr;
        int64_t v;
        int rank;
        const int64_t *dims;
        float want[6];
    } cases[] = {
        {NULL, 0, 2, d32, {1, 2, 3, 4, 5, 6}},                   /* rows in order */
        {"scan_input_directions", 1, 2, d32, {5, 6, 3, 4, 1, 2}}, /* rows backwards */
        {"scan_output_directions", 1, 2, d32, {5, 6, 3, 4, 1, 2}},
        {"scan_output_axes", 1, 2, d23, {1, 3, 5, 2, 4, 6}}, /* stacked as columns: x^T */
        {"scan_output_axes", -1, 2, d23, {1, 3, 5, 2, 4, 6}},
        {"scan_input_axes", 1, 2, d23, {1, 3, 5, 2, 4, 6}}, /* columns of x, stacked as rows */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        gwr_network *net = scan_net(0, 3);
        gwr_layer *l = gwr_tensor_parent(gwr_network_output(net, 0));
        if (cases[i].attr) gwr_layer_set_ints(l, cases[i].attr, &cases[i].v, 1);
        gwr_value *out[2];
        if (CHECK_OK(run_scan(net, 3, x, out))) {
            CHECK(same_f(out[0], 1, &d2, s0, 0));
            if (!CHECK(same_f(out[1], cases[i].rank, cases[i].dims, cases[i].want, 0))) fprintf(stderr, "  case %zu\n", i);
        }
        gwr_value_release(out[0]), gwr_value_release(out[1]);
        gwr_network_free(net);
    }
    /* no steps: the states come back, the scan output is empty */
    gwr_network *net = scan_net(0, 0);
    gwr_value *out[2];
    int64_t d02[2] = {0, 2};
    if (CHECK_OK(run_scan(net, 0, x, out))) {
        CHECK(same_f(out[0], 1, &d2, s0, 0));
        CHECK(out[1] && gwr_value_numel(out[1]) == 0 && gwr_value_dims(out[1])[0] == 0);
    }
    (void)d02;
    gwr_value_release(out[0]), gwr_value_release(out[1]);
    gwr_network_free(net);
}

TEST(scan_cumulative_sum) {
    if (!have_kernels("scan_cumulative_sum", (const char *const[]){"Add", NULL})) return;
    static const float x[6] = {1, 2, 3, 4, 5, 6}, fin[2] = {109, 212}, ys[6] = {101, 202, 104, 206, 109, 212};
    int64_t d2 = 2, d32[2] = {3, 2};
    gwr_network *net = scan_net(1, 3);
    gwr_value *out[2];
    if (CHECK_OK(run_scan(net, 3, x, out))) CHECK(same_f(out[0], 1, &d2, fin, 0)), CHECK(same_f(out[1], 2, d32, ys, 0));
    gwr_value_release(out[0]), gwr_value_release(out[1]);
    gwr_network_free(net);
}

TEST(scan_errors) {
    static const float x[6] = {1, 2, 3, 4, 5, 6};
    gwr_value *out[2];
    /* num_scan_inputs missing */
    gwr_network *net = scan_net(0, 3);
    gwr_layer *l = gwr_tensor_parent(gwr_network_output(net, 0));
    gwr_layer_remove_attr(l, "num_scan_inputs");
    CHECK_EQ_INT(run_scan(net, 3, x, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(last_err, "num_scan_inputs is -1");
    gwr_network_free(net);
    /* a scan axis outside the rank; a bad direction */
    net = scan_net(0, 3);
    l = gwr_tensor_parent(gwr_network_output(net, 0));
    int64_t ax = 2;
    gwr_layer_set_ints(l, "scan_input_axes", &ax, 1);
    CHECK_EQ_INT(run_scan(net, 3, x, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(last_err, "scan input 0: axis 2 is outside rank 2");
    gwr_layer_remove_attr(l, "scan_input_axes");
    gwr_layer_set_ints(l, "scan_output_directions", &ax, 1);
    CHECK_EQ_INT(run_scan(net, 3, x, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(last_err, "scan_output_directions[0] must be 0 or 1");
    gwr_layer_remove_attr(l, "scan_output_directions");
    int64_t two[2] = {0, 0};
    gwr_layer_set_ints(l, "scan_input_axes", two, 2);
    CHECK_EQ_INT(run_scan(net, 3, x, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(last_err, "attribute 'scan_input_axes' has 2 values, expected 1");
    gwr_network_free(net);
    /* two scan inputs of different lengths */
    net = gwr_network_new("scan2");
    gwr_tensor *a = gwr_network_add_input(net, "a", GWR_FLOAT32, 1, (gwr_dim[]){3});
    gwr_tensor *b = gwr_network_add_input(net, "b", GWR_FLOAT32, 1, (gwr_dim[]){4});
    gwr_tensor *in[2] = {a, b};
    l = layer(net, "Scan", 2, in, 1, NULL);
    gwr_network *body = gwr_network_new_subgraph(net, "body");
    gwr_network_mark_output(body, op1(body, "Identity", gwr_network_add_input(body, "a_t", GWR_FLOAT32, 0, NULL)));
    gwr_network_add_input(body, "b_t", GWR_FLOAT32, 0, NULL);
    gwr_layer_set_graph(l, "body", body);
    gwr_layer_set_int(l, "num_scan_inputs", 2);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    int64_t d3 = 3, d4 = 4;
    gwr_value *iv[2] = {val(GWR_FLOAT32, 1, &d3, x), val(GWR_FLOAT32, 1, &d4, x)};
    const char *names[2] = {"a", "b"};
    CHECK_EQ_INT(run_net(net, 2, names, iv, 1, out), GWR_ERR_SHAPE);
    CHECK_CONTAINS(last_err, "scan input 1 has 4 steps along axis 0, another has 3");
    gwr_value_release(iv[0]), gwr_value_release(iv[1]);
    gwr_network_free(net);
}

/* ---- RNN, GRU, LSTM ------------------------------------------------------------- */

/* A one-unit RNN over two steps: h_t = tanh(0.5 x_t + 2 h_{t-1} + 0.1 + 0.2). */
static gwr_network *rnn_net(const char *direction, int with_lens) {
    gwr_network *net = gwr_network_new("rnn");
    gwr_tensor *x = gwr_network_add_input(net, "X", GWR_FLOAT32, 3, (gwr_dim[]){2, 1, 1});
    int64_t d111[3] = {1, 1, 1}, d12[2] = {1, 2}, d1 = 1;
    static const float w = 0.5f, r = 2.0f, bias[2] = {0.1f, 0.2f};
    static const int32_t len = 1;
    gwr_tensor *in[5] = {x, cf32(net, 3, d111, &w), cf32(net, 3, d111, &r), cf32(net, 2, d12, bias),
                         with_lens ? gwr_constant(net, GWR_INT32, 1, &d1, &len) : NULL};
    const char *outs[2] = {"Y", "Y_h"};
    gwr_layer *l = layer(net, "RNN", 5, in, 2, outs);
    gwr_layer_set_int(l, "hidden_size", 1);
    if (direction) gwr_layer_set_string(l, "direction", direction);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    gwr_network_mark_output(net, gwr_layer_output(l, 1));
    return net;
}

TEST(rnn_by_hand) {
    static const float xs[2] = {1, -1};
    int64_t dx[3] = {2, 1, 1}, dy[4] = {2, 1, 1, 1}, dh[3] = {1, 1, 1};
    const char *xn = "X";
    float h1 = tanhf(0.5f + 0.3f), h2 = tanhf(-0.5f + 2 * h1 + 0.3f);
    float r1 = tanhf(-0.5f + 0.3f), r0 = tanhf(0.5f + 2 * r1 + 0.3f);
    struct {
        const char *dir;
        int lens;
        float y[2], h;
    } cases[] = {
        {NULL, 0, {h1, h2}, h2},
        {"reverse", 0, {r0, r1}, r0},
        {NULL, 1, {h1, 0}, h1}, /* the one sequence ends after a step */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        gwr_network *net = rnn_net(cases[i].dir, cases[i].lens);
        gwr_value *x = val(GWR_FLOAT32, 3, dx, xs), *out[2] = {NULL, NULL};
        if (CHECK_OK(run_net(net, 1, &xn, &x, 2, out))) {
            if (!CHECK(same_f(out[0], 4, dy, cases[i].y, 1e-6))) fprintf(stderr, "  case %zu\n", i);
            CHECK(same_f(out[1], 3, dh, &cases[i].h, 1e-6));
        }
        gwr_value_release(x), gwr_value_release(out[0]), gwr_value_release(out[1]);
        gwr_network_free(net);
    }
}

TEST(rnn_errors) {
    static const float xs[2] = {1, -1};
    int64_t dx[3] = {2, 1, 1};
    const char *xn = "X";
    gwr_value *x = val(GWR_FLOAT32, 3, dx, xs), *out[2];
    struct {
        const char *attr, *sval;
        int64_t ival;
        gwr_status st;
        const char *msg;
    } cases[] = {
        {"hidden_size", NULL, 3, GWR_ERR_SHAPE, "hidden_size is 3 but W holds 1 rows"},
        {"direction", "sideways", 0, GWR_ERR_INVALID_ARG, "direction must be forward, reverse or bidirectional"},
        {"direction", "bidirectional", 0, GWR_ERR_SHAPE, "W is float32[1,1,1], expected shape [2,1,1]"},
        {"activations", "Swish", 0, GWR_ERR_UNSUPPORTED, "unknown activation 'Swish'"},
        {"layout", NULL, 2, GWR_ERR_INVALID_ARG, "layout must be 0 or 1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        gwr_network *net = rnn_net(NULL, 0);
        gwr_layer *l = gwr_tensor_parent(gwr_network_output(net, 0));
        if (!strcmp(cases[i].attr, "activations")) gwr_layer_set_strings(l, "activations", &cases[i].sval, 1);
        else if (cases[i].sval) gwr_layer_set_string(l, cases[i].attr, cases[i].sval);
        else gwr_layer_set_int(l, cases[i].attr, cases[i].ival);
        if (!CHECK_EQ_INT(run_net(net, 1, &xn, &x, 2, out), cases[i].st)) fprintf(stderr, "  case %zu\n", i);
        CHECK_CONTAINS(last_err, cases[i].msg);
        gwr_network_free(net);
    }
    /* a LSTM whose P has the wrong size, and an integer X */
    gwr_network *net = gwr_network_new("lstm");
    gwr_tensor *xt = gwr_network_add_input(net, "X", GWR_FLOAT32, 3, (gwr_dim[]){2, 1, 1});
    int64_t d141[3] = {1, 4, 1}, d18[2] = {1, 8}, d12[2] = {1, 2};
    static const float zeros[8] = {0};
    gwr_tensor *in[8] = {xt, cf32(net, 3, d141, zeros), cf32(net, 3, d141, zeros), cf32(net, 2, d18, zeros), NULL, NULL, NULL,
                         cf32(net, 2, d12, zeros)};
    gwr_layer *l = layer(net, "LSTM", 8, in, 1, NULL);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    CHECK_EQ_INT(run_net(net, 1, &xn, &x, 1, out), GWR_ERR_SHAPE);
    CHECK_CONTAINS(last_err, "P is float32[1,2], expected shape [1,3]");
    gwr_network_free(net);
    gwr_value_release(x);
    net = gwr_network_new("gru");
    xt = gwr_network_add_input(net, "X", GWR_INT32, 3, (gwr_dim[]){2, 1, 1});
    gwr_tensor *gin[3] = {xt, xt, xt};
    l = layer(net, "GRU", 3, gin, 1, NULL);
    gwr_network_mark_output(net, gwr_layer_output(l, 0));
    static const int32_t xi[2] = {1, 2};
    x = val(GWR_INT32, 3, dx, xi);
    CHECK_EQ_INT(run_net(net, 1, &xn, &x, 1, out), GWR_ERR_TYPE);
    CHECK_CONTAINS(last_err, "X is int32; float16, float32 or float64 expected");
    gwr_value_release(x);
    gwr_network_free(net);
}

/* ---- GPTAttention ----------------------------------------------------------------- */

/* Straightforward causal attention over (B, S, 3*nh*hs) with bias and an
 * optional (B, S) key mask: the definition, written out. */
static void attention_ref(int64_t B, int64_t S, int64_t nh, int64_t hs, const float *qkv, const float *bias,
                          const float *mask, float *ctx, float *present) {
    int64_t H = nh * hs, W = 3 * H;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < nh; h++)
            for (int64_t i = 0; i < S; i++) {
                double sc[64], mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < S; j++) {
                    double d = 0;
                    for (int64_t e = 0; e < hs; e++)
                        d += ((double)qkv[(b * S + i) * W + h * hs + e] + bias[h * hs + e]) *
                             ((double)qkv[(b * S + j) * W + H + h * hs + e] + bias[H + h * hs + e]);
                    sc[j] = j > i || (mask && mask[b * S + j] == 0) ? -INFINITY : d / sqrt((double)hs);
                    if (sc[j] > mx) mx = sc[j];
                }
                for (int64_t j = 0; j < S; j++) sum += sc[j] == -INFINITY ? 0 : exp(sc[j] - mx);
                for (int64_t e = 0; e < hs; e++) {
                    double acc = 0;
                    for (int64_t j = 0; j < S; j++)
                        if (sc[j] != -INFINITY)
                            acc += exp(sc[j] - mx) / sum * ((double)qkv[(b * S + j) * W + 2 * H + h * hs + e] + bias[2 * H + h * hs + e]);
                    ctx[(b * S + i) * H + h * hs + e] = (float)acc;
                }
            }
    for (int64_t b = 0; b < B; b++)
        for (int64_t kv = 0; kv < 2; kv++)
            for (int64_t h = 0; h < nh; h++)
                for (int64_t t = 0; t < S; t++)
                    for (int64_t e = 0; e < hs; e++)
                        present[(((b * 2 + kv) * nh + h) * S + t) * hs + e] =
                            qkv[(b * S + t) * W + (1 + kv) * H + h * hs + e] + bias[(1 + kv) * H + h * hs + e];
}

enum { AB = 2, AS = 4, ANH = 2, AHS = 3, AH = ANH * AHS, AW = 3 * AH };

static float pseudo(int i) { return (float)((i * 37 + 11) % 23) / 11.0f - 1.0f; }

/* A network of one plugin: input "qkv" of dims qd, constant bias, the mask
 * as a constant (mask_rank 0: none; 1: int64 lengths; 2: float (rows, cols)). */
static gwr_network *plugin_net(const int64_t qd[3], int remove_padding, const float *bias, int mask_rank,
                               const int64_t *mask_dims, const void *mask) {
    gwr_network *net = gwr_network_new("att");
    gwr_dim d[3] = {qd[0], qd[1], qd[2]};
    gwr_args *a = gwr_args_new();
    gwr_args_set_tensor(a, "qkv", gwr_network_add_input(net, "qkv", GWR_FLOAT32, 3, d));
    int64_t bw = AW;
    if (bias) gwr_args_set_tensor(a, "qkv_bias", cf32(net, 1, &bw, bias));
    if (mask_rank)
        gwr_args_set_tensor(a, "attention_mask",
                            gwr_constant(net, mask_rank == 1 ? GWR_INT64 : GWR_FLOAT32, mask_rank, mask_dims, mask));
    gwr_args_set_int(a, "num_heads", ANH);
    gwr_args_set_int(a, "head_size", AHS);
    gwr_args_set_int(a, "remove_padding", remove_padding);
    gwr_tensor *outs[2] = {NULL, NULL};
    gwr_status st = gwr_call(net, GWR_GPT_ATTENTION, a, outs, 2, NULL);
    gwr_args_free(a);
    if (st) {
        fprintf(stderr, "gpt_attention: %s\n", gwr_network_errmsg(net));
        gwr_network_free(net);
        return NULL;
    }
    gwr_tensor_set_name(outs[0], "ctx");
    gwr_tensor_set_name(outs[1], "present");
    gwr_network_mark_output(net, outs[0]);
    gwr_network_mark_output(net, outs[1]);
    return net;
}

TEST(gpt_attention_by_definition) {
    float qkv[AB * AS * AW], bias[AW], mask[AB * AS] = {1, 1, 1, 1, 0, 1, 1, 0};
    float ctx[AB * AS * AH], present[AB * 2 * ANH * AS * AHS];
    for (int i = 0; i < AB * AS * AW; i++) qkv[i] = pseudo(i);
    for (int i = 0; i < AW; i++) bias[i] = pseudo(3 * i + 1) / 4;
    int64_t qd[3] = {AB, AS, AW}, cd[3] = {AB, AS, AH}, pd[5] = {AB, 2, ANH, AS, AHS}, md[2] = {AB, AS};
    const char *qn = "qkv";
    for (int masked = 0; masked < 2; masked++) {
        attention_ref(AB, AS, ANH, AHS, qkv, bias, masked ? mask : NULL, ctx, present);
        gwr_network *net = plugin_net(qd, 0, bias, masked ? 2 : 0, md, mask);
        if (!CHECK(net)) return;
        gwr_value *in = val(GWR_FLOAT32, 3, qd, qkv), *out[2] = {NULL, NULL};
        if (CHECK_OK(run_net(net, 1, &qn, &in, 2, out))) {
            CHECK(same_f(out[0], 3, cd, ctx, 1e-5));
            CHECK(same_f(out[1], 5, pd, present, 0));
        }
        /* batch 1, row 0 sees no key: zeros */
        if (masked && out[0]) CHECK(gwr_value_get_f64(out[0], AS * AH) == 0);
        gwr_value_release(in), gwr_value_release(out[0]), gwr_value_release(out[1]);
        gwr_network_free(net);
    }
    /* remove padding: the same tokens packed as (1, B*S); the mask, or the
     * lengths, tell where each sequence starts */
    int64_t pq[3] = {1, AB * AS, AW}, pc[3] = {1, AB * AS, AH}, ld = AB;
    static const int64_t lens[AB] = {AS, AS};
    for (int how = 0; how < 3; how++) {
        if (how < 2) attention_ref(AB, AS, ANH, AHS, qkv, bias, how == 1 ? mask : NULL, ctx, present);
        else attention_ref(1, AB * AS, ANH, AHS, qkv, bias, NULL, ctx, present); /* one long sequence */
        gwr_network *net = how == 0   ? plugin_net(pq, 1, bias, 1, &ld, lens)
                           : how == 1 ? plugin_net(pq, 1, bias, 2, md, mask)
                                      : plugin_net(pq, 1, bias, 0, NULL, NULL);
        if (!CHECK(net)) return;
        gwr_value *in = val(GWR_FLOAT32, 3, pq, qkv), *out[2] = {NULL, NULL};
        if (CHECK_OK(run_net(net, 1, &qn, &in, 2, out))) {
            CHECK(same_f(out[0], 3, pc, ctx, 1e-5));
        }
        gwr_value_release(in), gwr_value_release(out[0]), gwr_value_release(out[1]);
        gwr_network_free(net);
    }
}

TEST(gpt_attention_errors) {
    float qkv[AB * AS * AW] = {0}, bias[AW] = {0};
    int64_t qd[3] = {AB, AS, AW}, md[2] = {AB, AS + 1}, ld = 2;
    static const float mask[AB * (AS + 1)] = {0};
    static const int64_t lens[2] = {AS, AS + 1};
    const char *qn = "qkv";
    gwr_value *in = val(GWR_FLOAT32, 3, qd, qkv), *out[2];
    /* a mask of the wrong shape */
    gwr_network *net = plugin_net(qd, 0, bias, 2, md, mask);
    if (CHECK(net)) {
        CHECK_EQ_INT(run_net(net, 1, &qn, &in, 2, out), GWR_ERR_SHAPE);
        CHECK_CONTAINS(last_err, "attention_mask float32[2,5] does not fit qkv [2, 4, 18]");
        /* remove_padding set on a batch of 2 (the layer edited past the builder's check) */
        gwr_layer *l = gwr_tensor_parent(gwr_network_output(net, 0));
        gwr_layer_set_input(l, 2, NULL);
        gwr_layer_set_int(l, "remove_padding", 1);
        CHECK_EQ_INT(run_net(net, 1, &qn, &in, 2, out), GWR_ERR_SHAPE);
        CHECK_CONTAINS(last_err, "with remove_padding qkv must be [1, tokens, 18], got float32[2,4,18]");
        gwr_layer_set_int(l, "remove_padding", 0);
        gwr_layer_set_int(l, "num_heads", 3);
        CHECK_EQ_INT(run_net(net, 1, &qn, &in, 2, out), GWR_ERR_SHAPE);
        CHECK_CONTAINS(last_err, "qkv must be float [batch, seq, 27], got float32[2,4,18]");
        gwr_layer_set_int(l, "num_heads", 0);
        CHECK_EQ_INT(run_net(net, 1, &qn, &in, 2, out), GWR_ERR_INVALID_ARG);
        CHECK_CONTAINS(last_err, "num_heads and head_size must be positive");
        gwr_network_free(net);
    }
    /* lengths that do not add up to the tokens */
    int64_t pq[3] = {1, AB * AS, AW};
    gwr_value_release(in);
    in = val(GWR_FLOAT32, 3, pq, qkv);
    net = plugin_net(pq, 1, bias, 1, &ld, lens);
    if (CHECK(net)) {
        CHECK_EQ_INT(run_net(net, 1, &qn, &in, 2, out), GWR_ERR_SHAPE);
        CHECK_CONTAINS(last_err, "exceed the 8 tokens");
        gwr_network_free(net);
    }
    gwr_value_release(in);
}

/* ---- GPTAttention against gwr_build_gpt and the seed rewrites ----------------------- */

static const char *const gpt_ops[] = {"LayerNormalization", "MatMul", "Add", "Gelu", "Split", "Reshape",
                                      "Transpose", "Mul", "Softmax", "Shape", "Slice", "Concat",
                                      "ConstantOfShape", "Trilu", NULL};

static gwr_network *gpt(int use_plugin, int hidden, int heads) {
    gwr_network *net = gwr_network_new("gpt");
    gwr_gpt_config cfg = {.blocks = 2, .hidden = hidden, .heads = heads, .use_plugin = use_plugin, .seed = 5};
    if (!gwr_build_gpt(net, &cfg)) {
        fprintf(stderr, "gwr_build_gpt: %s\n", gwr_network_errmsg(net));
        gwr_network_free(net);
        return NULL;
    }
    return net;
}

/* Runs net on x (batch, seq, hidden) of pseudo-random values; NULL (and a
 * note) on error. */
static gwr_value *run_gpt(gwr_network *net, int64_t b, int64_t s, int64_t hidden) {
    int64_t d[3] = {b, s, hidden};
    gwr_value *x = gwr_value_new(GWR_FLOAT32, 3, d), *y = NULL;
    for (int64_t i = 0; x && i < b * s * hidden; i++) ((float *)gwr_value_data(x))[i] = pseudo((int)i) * 2;
    const char *xn = "x";
    if (run_net(net, 1, &xn, &x, 1, &y)) fprintf(stderr, "  run: %s\n", last_err);
    gwr_value_release(x);
    return y;
}

TEST(gpt_attention_matches_onnx_attention) {
    if (!have_kernels("gpt_attention_matches_onnx_attention", gpt_ops)) return;
    const int hidden = 16, heads = 4;
    gwr_network *p = gpt(1, hidden, heads), *o = gpt(0, hidden, heads);
    if (!CHECK(p && o)) goto done;
    /* One token per sequence: causal or not, the same. */
    gwr_value *yp = run_gpt(p, 3, 1, hidden), *yo = run_gpt(o, 3, 1, hidden);
    CHECK(yp && yo);
    double d = max_diff(yp, yo);
    if (!CHECK(d < 1e-4)) fprintf(stderr, "  seq 1: plugin and ONNX attention differ by %g\n", d);
    gwr_value_release(yp), gwr_value_release(yo);
    /* Longer sequences: both are causal (gwr_build_gpt's ONNX attention
     * adds its mask before the Softmax). */
    yp = run_gpt(p, 2, 5, hidden), yo = run_gpt(o, 2, 5, hidden);
    CHECK(yp && yo);
    d = max_diff(yp, yo);
    if (!CHECK(d < 1e-4)) fprintf(stderr, "  seq 5: plugin and ONNX attention differ by %g\n", d);
    gwr_value_release(yp), gwr_value_release(yo);
done:
    gwr_network_free(p), gwr_network_free(o);
}

static int rewrite_with(gwr_network *net, const char *const *labels, int64_t b, int64_t s, int64_t qkv_width,
                        int64_t *nrewrites) {
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    gwr_args *a = gwr_args_new();
    int ok = m && a;
    for (int i = 0; ok && labels[i]; i++) ok = !gwr_passes_add(m, labels[i]);
    if (ok) {
        gwr_args_set_int(a, "batch_size", b);
        gwr_args_set_int(a, "in_len", s);
        gwr_args_set_int(a, "hidden_size", qkv_width);
        ok = !gwr_rewrite_manager_rewrite(m, net, a);
        if (!ok) fprintf(stderr, "  rewrite: %s\n", gwr_rewrite_manager_errmsg(m));
        gwr_rewrite_summary sum;
        if (ok && !gwr_rewrite_manager_summary(m, &sum)) *nrewrites = sum.rewrites;
    }
    gwr_args_free(a);
    gwr_rewrite_manager_free(m);
    return ok;
}

TEST(gpt_attention_survives_seed_rewrites) {
    if (!have_kernels("gpt_attention_survives_seed_rewrites", gpt_ops)) return;
    /* Batch 2 and no mask: once packed, the plugin tells the two
     * sequences apart by the lengths the pattern gives it. */
    const int hidden = 16, heads = 2;
    const int64_t b = 2, s = 6;
    static const char *const plugin_patterns[] = {"fuse_attention_with_bias", "gpt_attention_remove_padding", NULL};
    static const char *const add_to_sub[] = {"replace_add_with_sub", NULL};
    gwr_network *before = gpt(1, hidden, heads), *after = gpt(1, hidden, heads);
    if (!CHECK(before && after)) goto done;
    int64_t n = 0;
    /* two blocks: two biases fused, two plugins re-created */
    CHECK(rewrite_with(after, plugin_patterns, b, s, 3 * hidden, &n));
    CHECK_EQ_INT(n, 4);
    gwr_value *y0 = run_gpt(before, b, s, hidden), *y1 = run_gpt(after, b, s, hidden);
    double d = max_diff(y0, y1);
    if (!CHECK(d < 1e-5)) fprintf(stderr, "  the plugin rewrites changed the output by %g\n", d);
    gwr_value_release(y1);
    /* the tutorial pattern changes the numbers on purpose */
    CHECK(rewrite_with(after, add_to_sub, b, s, 3 * hidden, &n));
    CHECK(n > 0);
    y1 = run_gpt(after, b, s, hidden);
    CHECK(y1 && max_diff(y0, y1) > 1e-3);
    gwr_value_release(y0), gwr_value_release(y1);
done:
    gwr_network_free(before), gwr_network_free(after);
}

/* qkv -> Add(bias) -> GPTAttention(mask) of batch 2, before and after the
 * two plugin patterns: the mask keeps the sequences apart once packed. */
TEST(gpt_attention_remove_padding_with_mask) {
    if (!have_kernels("gpt_attention_remove_padding_with_mask", (const char *const[]){"Add", "Reshape", NULL})) return;
    static const char *const plugin_patterns[] = {"fuse_attention_with_bias", "gpt_attention_remove_padding", NULL};
    float qkv[AB * AS * AW], bias[AW], mask[AB * AS] = {1, 1, 1, 1, 1, 1, 0, 1};
    for (int i = 0; i < AB * AS * AW; i++) qkv[i] = pseudo(5 * i);
    for (int i = 0; i < AW; i++) bias[i] = pseudo(i + 7);
    int64_t qd[3] = {AB, AS, AW}, md[2] = {AB, AS}, bw = AW;
    gwr_network *nets[2];
    for (int k = 0; k < 2; k++) {
        gwr_network *net = nets[k] = gwr_network_new("att");
        gwr_args *a = gwr_args_new();
        gwr_tensor *x = gwr_network_add_input(net, "qkv", GWR_FLOAT32, 3, (gwr_dim[]){AB, AS, AW});
        gwr_args_set_tensor(a, "qkv", gwr_add(net, x, cf32(net, 1, &bw, bias)));
        gwr_args_set_tensor(a, "attention_mask", cf32(net, 2, md, mask));
        gwr_args_set_int(a, "num_heads", ANH);
        gwr_args_set_int(a, "head_size", AHS);
        gwr_tensor *outs[2] = {NULL, NULL};
        CHECK_OK(gwr_call(net, GWR_GPT_ATTENTION, a, outs, 2, NULL));
        gwr_args_free(a);
        if (outs[0]) gwr_tensor_set_name(outs[0], "ctx"), gwr_network_mark_output(net, outs[0]);
    }
    int64_t n = 0;
    CHECK(rewrite_with(nets[1], plugin_patterns, AB, AS, AW, &n));
    CHECK_EQ_INT(n, 2);
    gwr_value *y[2] = {NULL, NULL};
    const char *qn = "qkv";
    gwr_value *in = val(GWR_FLOAT32, 3, qd, qkv);
    for (int k = 0; k < 2; k++) CHECK_OK(run_net(nets[k], 1, &qn, &in, 1, &y[k]));
    double d = max_diff(y[0], y[1]);
    if (!CHECK(d < 1e-6)) fprintf(stderr, "  remove padding changed the context by %g\n", d);
    for (int k = 0; k < 2; k++) gwr_value_release(y[k]), gwr_network_free(nets[k]);
    gwr_value_release(in);
}

int main(void) {
    RUN(if_picks_a_branch);
    RUN(if_errors);
    RUN(loop_trip_count_and_cond);
    RUN(loop_sums);
    RUN(loop_errors);
    RUN(loop_runaway_is_stopped);
    RUN(scan_axes_and_directions);
    RUN(scan_cumulative_sum);
    RUN(scan_errors);
    RUN(rnn_by_hand);
    RUN(rnn_errors);
    RUN(gpt_attention_by_definition);
    RUN(gpt_attention_errors);
    RUN(gpt_attention_matches_onnx_attention);
    RUN(gpt_attention_survives_seed_rewrites);
    RUN(gpt_attention_remove_padding_with_mask);
    return check_report();
}
