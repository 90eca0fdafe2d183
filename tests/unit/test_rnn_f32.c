/* test_rnn_f32.c - the float32 LSTM, GRU and RNN (src/exec/kernels/rnn_f32.c)
 * against the double path (rnn.c), which runs the same numbers given as
 * float64: odd sizes, both directions, layout 1, sequence_lens shorter than
 * T, clip, peepholes, initial states, input_forget, GRU's
 * linear_before_reset, activations the float path takes through the double
 * expressions, one-row batches, and W/R/B as constants or as inputs. The
 * double path itself is judged by ONNX's backend test data
 * (conformance/exec: test_lstm_*, test_gru_*, test_*rnn_*). A NaN in X
 * reaches the same outputs on both paths. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"

/* float path against double path: float accumulation over I + H terms and
 * fast_math's exp/tanh (a few ulps) through T steps */
#define F32_TOL 1e-5

typedef struct lcase {
    const char *op, *name;
    int64_t T, B, I, H;
    const char *dir;
    int layout, lens, clip, peep, init, forget, hsig, consts, lbr;
} lcase;

static int is_lstm(const lcase *c) { return !strcmp(c->op, "LSTM"); }
static int64_t gates(const lcase *c) { return is_lstm(c) ? 4 : !strcmp(c->op, "GRU") ? 3 : 1; }

static float lcg(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f; /* [-1, 1) */
}

/* The inputs of case c as floats: X, W, R, B, initial_h, initial_c, P;
 * sizes in n[]. */
enum { NX, NW, NR, NB, NH0, NC0, NP, NIN };

typedef struct ldata {
    float *v[NIN];
    int64_t dims[NIN][3];
    int rank[NIN];
    int32_t lens[8];
} ldata;

static int64_t numel(const ldata *d, int i) {
    int64_t n = 1;
    for (int j = 0; j < d->rank[i]; j++) n *= d->dims[i][j];
    return n;
}

static void set_dims(ldata *d, int i, int rank, int64_t a, int64_t b, int64_t c) {
    d->rank[i] = rank, d->dims[i][0] = a, d->dims[i][1] = b, d->dims[i][2] = c;
}

static int make_data(const lcase *c, ldata *d) {
    int64_t D = strcmp(c->dir, "bidirectional") ? 1 : 2, T = c->T, B = c->B, H = c->H;
    memset(d, 0, sizeof *d);
    if (c->layout) set_dims(d, NX, 3, B, T, c->I), set_dims(d, NH0, 3, B, D, H), set_dims(d, NC0, 3, B, D, H);
    else set_dims(d, NX, 3, T, B, c->I), set_dims(d, NH0, 3, D, B, H), set_dims(d, NC0, 3, D, B, H);
    int64_t G = gates(c);
    set_dims(d, NW, 3, D, G * H, c->I), set_dims(d, NR, 3, D, G * H, H), set_dims(d, NB, 2, D, 2 * G * H, 0);
    set_dims(d, NP, 2, D, 3 * H, 0);
    uint32_t s = (uint32_t)(T * 131 + B * 17 + c->I * 7 + H);
    float scale[NIN] = {2.0f, 1.5f, 1.5f, 0.5f, 0.8f, 2.0f, 1.0f};
    for (int i = 0; i < NIN; i++) {
        int64_t n = numel(d, i);
        if (!(d->v[i] = malloc((size_t)n * sizeof(float)))) return 0;
        /* R scaled by 2/sqrt(H) (as trained models are, about): a larger R
         * makes the recurrence chaotic, any rounding growing step by step */
        float sc = i == NR ? 2.0f / sqrtf((float)H) : scale[i];
        for (int64_t j = 0; j < n; j++) d->v[i][j] = sc * lcg(&s);
    }
    for (int64_t b = 0; b < B && b < 8; b++) d->lens[b] = (int32_t)(c->lens ? (T - b * 2 > 0 ? T - b * 2 : b % 2) : T);
    return 1;
}

static void free_data(ldata *d) {
    for (int i = 0; i < NIN; i++) free(d->v[i]);
}

static gwr_tensor *input(gwr_network *net, const ldata *d, int i, gwr_dtype dt, int as_const, const double *v64) {
    static const char *const names[NIN] = {"X", "W", "R", "B", "initial_h", "initial_c", "P"};
    gwr_dim dims[3] = {d->dims[i][0], d->dims[i][1], d->dims[i][2]};
    if (!as_const) return gwr_network_add_input(net, names[i], dt, d->rank[i], dims);
    return gwr_constant(net, dt, d->rank[i], d->dims[i], dt == GWR_FLOAT32 ? (const void *)d->v[i] : (const void *)v64);
}

/* Runs case c with its data as dt; out[3] Y, Y_h, Y_c. x_nan: X[x_nan]
 * is NaN (-1: none). */
static gwr_status run_case(const lcase *c, const ldata *d, gwr_dtype dt, gwr_value **out) {
    gwr_network *net = gwr_network_new(c->op);
    double *v64[NIN] = {NULL};
    for (int i = 0; i < NIN; i++) {
        int64_t n = numel(d, i);
        v64[i] = malloc((size_t)n * sizeof(double));
        for (int64_t j = 0; v64[i] && j < n; j++) v64[i][j] = d->v[i][j];
    }
    gwr_tensor *in[8] = {NULL};
    int lstm = is_lstm(c), nin = lstm ? 8 : 6, nout = lstm ? 3 : 2;
    int used[8] = {1, 1, 1, 1, c->lens, c->init, lstm && c->init, lstm && c->peep};
    const char *names[8];
    gwr_value *vals[8];
    int nfeed = 0;
    for (int i = 0; i < nin; i++) {
        if (!used[i]) continue;
        if (i == 4) {
            in[4] = gwr_network_add_input(net, "sequence_lens", GWR_INT32, 1, (gwr_dim[]){c->B});
            gwr_value *v = gwr_value_new(GWR_INT32, 1, &c->B);
            if (v) memcpy(gwr_value_data(v), d->lens, (size_t)c->B * sizeof(int32_t));
            names[nfeed] = "sequence_lens", vals[nfeed++] = v;
            continue;
        }
        int di = i < 4 ? i : i - 1; /* ldata skips sequence_lens */
        int as_const = c->consts && (i == 1 || i == 2 || i == 3 || i == 7);
        in[i] = input(net, d, di, dt, as_const, v64[di]);
        if (as_const) continue;
        gwr_value *v = gwr_value_new(dt, d->rank[di], d->dims[di]);
        if (v) memcpy(gwr_value_data(v), dt == GWR_FLOAT32 ? (const void *)d->v[di] : (const void *)v64[di], gwr_value_nbytes(v));
        names[nfeed] = gwr_tensor_name(in[i]), vals[nfeed++] = v;
    }
    static const char *const outs[3] = {"Y", "Y_h", "Y_c"};
    gwr_layer *l = gwr_network_add_layer(net, c->op, "", NULL, nin, in, nout, outs);
    gwr_layer_set_int(l, "hidden_size", c->H);
    gwr_layer_set_string(l, "direction", c->dir);
    if (c->layout) gwr_layer_set_int(l, "layout", 1);
    if (c->clip) gwr_layer_set_float(l, "clip", 0.7f);
    if (c->forget) gwr_layer_set_int(l, "input_forget", 1);
    if (c->lbr) gwr_layer_set_int(l, "linear_before_reset", 1);
    if (c->hsig) {
        static const char *const acts[3] = {"HardSigmoid", "Tanh", "Softsign"};
        static const char *const acts1[1] = {"Softsign"};
        gwr_layer_set_strings(l, "activations", nout == 2 && gates(c) == 1 ? acts1 : acts, lstm ? 3 : gates(c) == 3 ? 2 : 1);
    }
    for (int o = 0; o < nout; o++) gwr_network_mark_output(net, gwr_layer_output(l, o));
    gwr_session *s = gwr_session_new_raw(net, NULL);
    gwr_status st = s ? gwr_session_run(s, nfeed, names, vals, nout, NULL, out) : GWR_ERR_INVALID_ARG;
    if (st) fprintf(stderr, "  %s: %s\n", c->name, s ? gwr_session_errmsg(s) : gwr_last_errmsg());
    gwr_session_free(s);
    for (int i = 0; i < nfeed; i++) gwr_value_release(vals[i]);
    for (int i = 0; i < NIN; i++) free(v64[i]);
    gwr_network_free(net);
    return st;
}

/* Largest |a - b|, NaN matching NaN; INFINITY on a shape or NaN mismatch. */
static double diff(const gwr_value *a, const gwr_value *b) {
    if (!a || !b || gwr_value_numel(a) != gwr_value_numel(b) || gwr_value_rank(a) != gwr_value_rank(b)) return INFINITY;
    double m = 0;
    for (int64_t i = 0; i < gwr_value_numel(a); i++) {
        double x = gwr_value_get_f64(a, i), y = gwr_value_get_f64(b, i);
        if (isnan(x) || isnan(y)) {
            if (isnan(x) != isnan(y)) return INFINITY;
            continue;
        }
        if (fabs(x - y) > m) m = fabs(x - y);
    }
    return m;
}

static const lcase cases[] = {
    /* op   name          T  B  I  H  dir              lay lens clip peep init forget hsig consts lbr */
    {"LSTM", "plain",        5, 3, 7, 9, "forward",       0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"LSTM", "one_row",      6, 1, 5, 13, "forward",      0, 0, 0, 0, 0, 0, 0, 1, 0},
    {"LSTM", "reverse",      4, 2, 3, 5, "reverse",       0, 1, 0, 0, 1, 0, 0, 0, 0},
    {"LSTM", "bidir_lens",   7, 4, 6, 11, "bidirectional", 0, 1, 0, 1, 1, 0, 0, 1, 0},
    {"LSTM", "layout1",      5, 3, 4, 7, "bidirectional", 1, 1, 1, 1, 1, 0, 0, 0, 0},
    {"LSTM", "clip_peep",    6, 2, 9, 17, "forward",      0, 0, 1, 1, 0, 0, 0, 1, 0},
    {"LSTM", "forget_acts",  5, 3, 4, 6, "bidirectional", 0, 0, 0, 1, 1, 1, 1, 0, 0},
    {"LSTM", "long",        40, 2, 33, 31, "forward",     1, 1, 0, 1, 1, 0, 0, 1, 0},
    {"GRU", "plain",         5, 3, 7, 9, "forward",       0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"GRU", "one_row_lbr",   6, 1, 5, 13, "forward",      0, 0, 0, 0, 1, 0, 0, 1, 1},
    {"GRU", "bidir_lens",    7, 4, 6, 11, "bidirectional", 0, 1, 0, 0, 1, 0, 0, 1, 0},
    {"GRU", "layout1_clip",  5, 3, 4, 7, "bidirectional", 1, 1, 1, 0, 1, 0, 0, 0, 1},
    {"GRU", "reverse_acts",  6, 2, 9, 17, "reverse",      0, 1, 0, 0, 0, 0, 1, 0, 0},
    {"GRU", "long",         40, 2, 33, 31, "forward",     1, 1, 0, 0, 1, 0, 0, 1, 0},
    {"RNN", "plain",         5, 3, 7, 9, "forward",       0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"RNN", "bidir_lens",    7, 4, 6, 11, "bidirectional", 1, 1, 1, 0, 1, 0, 0, 1, 0},
    {"RNN", "reverse_acts",  6, 1, 9, 17, "reverse",      0, 1, 0, 0, 1, 0, 1, 0, 0},
};

TEST(lstm_f32_matches_double) {
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const lcase *c = &cases[i];
        ldata d;
        gwr_value *o32[3] = {NULL}, *o64[3] = {NULL};
        if (CHECK(make_data(c, &d)) && CHECK_OK(run_case(c, &d, GWR_FLOAT32, o32)) && CHECK_OK(run_case(c, &d, GWR_FLOAT64, o64))) {
            for (int o = 0; o < (is_lstm(c) ? 3 : 2); o++) {
                CHECK_EQ_INT(gwr_value_dtype(o32[o]), GWR_FLOAT32);
                double m = diff(o32[o], o64[o]);
                if (!CHECK(m <= F32_TOL)) fprintf(stderr, "  case %s %s output %d: max abs diff %g\n", c->op, c->name, o, m);
                if (getenv("GWR_TEST_VERBOSE")) fprintf(stderr, "  %s %s output %d: max abs diff %.3g\n", c->op, c->name, o, m);
            }
        }
        for (int o = 0; o < 3; o++) gwr_value_release(o32[o]), gwr_value_release(o64[o]);
        free_data(&d);
    }
}

/* An entry whose X holds a NaN at its step 1 has NaN outputs from there
 * on, in both paths alike; the other entries stay finite. */
TEST(lstm_f32_nan) {
    lcase c = {"LSTM", "nan", 4, 2, 3, 5, "forward", 0, 0, 0, 0, 0, 0, 0, 0, 0};
    ldata d;
    gwr_value *o32[3] = {NULL}, *o64[3] = {NULL};
    if (CHECK(make_data(&c, &d))) {
        d.v[NX][(1 * c.B + 0) * c.I + 1] = NAN; /* step 1, entry 0 */
        if (CHECK_OK(run_case(&c, &d, GWR_FLOAT32, o32)) && CHECK_OK(run_case(&c, &d, GWR_FLOAT64, o64))) {
            for (int o = 0; o < 3; o++) CHECK(diff(o32[o], o64[o]) <= F32_TOL);
            CHECK(isnan(gwr_value_get_f64(o32[0], 0 * c.B * c.H)) == 0);        /* step 0, entry 0 */
            CHECK(isnan(gwr_value_get_f64(o32[0], (1 * c.B + 0) * c.H)));      /* step 1, entry 0 */
            CHECK(isnan(gwr_value_get_f64(o32[1], 0)));                        /* Y_h, entry 0 */
            CHECK(isnan(gwr_value_get_f64(o32[1], c.H)) == 0);                 /* Y_h, entry 1 */
        }
    }
    for (int o = 0; o < 3; o++) gwr_value_release(o32[o]), gwr_value_release(o64[o]);
    free_data(&d);
}

int main(void) {
    RUN(lstm_f32_matches_double);
    RUN(lstm_f32_nan);
    return check_report();
}
