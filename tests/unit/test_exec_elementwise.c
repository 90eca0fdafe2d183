/* test_exec_elementwise.c - the elementwise and activation kernels
 * (src/exec/kernels/elementwise.c, activation.c) where ONNX's test data
 * does not reach: every bad input gives a status and a message naming the
 * problem, and hand-computed corners (broadcasting, empty tensors, NaN,
 * integer wrap-around, division by zero, casts, half precision). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"

/* ---- helpers --------------------------------------------------------------- */

static gwr_value *mk(gwr_dtype t, int rank, const int64_t *dims, const void *data) {
    gwr_value *v = gwr_value_new(t, rank, dims);
    if (v && data && gwr_value_nbytes(v)) memcpy(gwr_value_data(v), data, gwr_value_nbytes(v));
    return v;
}

static gwr_value *f32v(int rank, const int64_t *dims, const float *data) { return mk(GWR_FLOAT32, rank, dims, data); }

static gwr_value *strv(int n, const char *const *s) {
    int64_t d = n;
    gwr_value *v = gwr_value_new(GWR_STRING, 1, &d);
    for (int i = 0; v && i < n; i++) gwr_value_set_string(v, i, s[i], strlen(s[i]));
    return v;
}

typedef struct attr {
    const char *name;
    char kind; /* 'i', 'f', 's' */
    int64_t i;
    float f;
    const char *s;
} attr;

static char msg[1024];

/* Runs one layer of `op` (opset of "" set when opset > 0) on in[0..nin)
 * (NULL: an absent optional input); outputs into out[0..nout). Returns the
 * run's status, the session's message in msg. */
static gwr_status run_op(const char *op, int64_t opset, const attr *attrs, int nin, gwr_value *const *in, int nout,
                         gwr_value **out) {
    gwr_network *net = gwr_network_new("t");
    msg[0] = 0;
    for (int i = 0; i < nout; i++) out[i] = NULL;
    if (opset > 0) gwr_network_set_opset(net, "", opset);
    gwr_tensor *ts[8] = {NULL};
    const char *names[8];
    const char *in_names[8] = {"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7"};
    const char *out_names[4] = {"y0", "y1", "y2", "y3"};
    gwr_value *vals[8];
    int nv = 0;
    for (int i = 0; i < nin; i++) {
        if (!in[i]) continue;
        ts[i] = gwr_network_add_input(net, in_names[i], gwr_value_dtype(in[i]), -1, NULL);
        names[nv] = in_names[i], vals[nv] = in[i], nv++;
    }
    gwr_layer *l = gwr_network_add_layer(net, op, "", "L", nin, ts, nout, out_names);
    gwr_status rc = GWR_ERR_STATE;
    if (!l) {
        snprintf(msg, sizeof msg, "add_layer: %s", gwr_network_errmsg(net));
        gwr_network_free(net);
        return rc;
    }
    for (const attr *a = attrs; a && a->name; a++) {
        if (a->kind == 'i') gwr_layer_set_int(l, a->name, a->i);
        else if (a->kind == 'f') gwr_layer_set_float(l, a->name, a->f);
        else gwr_layer_set_string(l, a->name, a->s);
    }
    for (int i = 0; i < nout; i++) gwr_network_mark_output(net, gwr_layer_output(l, i));
    gwr_session *s = gwr_session_new_raw(net, NULL);
    if (!s) {
        snprintf(msg, sizeof msg, "session: %s", gwr_last_errmsg());
    } else {
        rc = gwr_session_run(s, nv, names, vals, nout, NULL, out);
        snprintf(msg, sizeof msg, "%s", rc ? gwr_session_errmsg(s) : "");
        gwr_session_free(s);
    }
    gwr_network_free(net);
    return rc;
}

static gwr_status run2(const char *op, const attr *attrs, gwr_value *a, gwr_value *b, gwr_value **out) {
    gwr_value *in[2] = {a, b};
    return run_op(op, 17, attrs, 2, in, 1, out);
}

static gwr_status run1(const char *op, const attr *attrs, gwr_value *a, gwr_value **out) {
    return run_op(op, 17, attrs, 1, &a, 1, out);
}

static int same_shape(const gwr_value *v, int rank, const int64_t *dims) {
    if (!v || gwr_value_rank(v) != rank) return 0;
    for (int i = 0; i < rank; i++)
        if (gwr_value_dims(v)[i] != dims[i]) return 0;
    return 1;
}

static const float *F(const gwr_value *v) { return gwr_value_cdata(v); }

static int near(double a, double b, double tol) { return fabs(a - b) <= tol * (1 + fabs(b)); }

/* ---- broadcasting ---------------------------------------------------------- */

TEST(add_broadcast_corners) {
    int64_t d23[2] = {2, 3}, d3[1] = {3}, d213[3] = {2, 1, 3}, d41[2] = {4, 1}, d0[1] = {0};
    float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30}, c[4] = {100, 200, 300, 400};
    gwr_value *va = f32v(2, d23, a), *vb = f32v(1, d3, b), *out = NULL;
    /* row broadcast */
    if (CHECK_OK(run2("Add", NULL, va, vb, &out)) && CHECK(same_shape(out, 2, d23)))
        CHECK(F(out)[0] == 11 && F(out)[2] == 33 && F(out)[3] == 14 && F(out)[5] == 36);
    gwr_value_release(out);
    /* both sides broadcast: [2,1,3] - [4,1] -> [2,4,3] */
    gwr_value *v213 = f32v(3, d213, a), *v41 = f32v(2, d41, c);
    int64_t d243[3] = {2, 4, 3};
    if (CHECK_OK(run2("Sub", NULL, v213, v41, &out)) && CHECK(same_shape(out, 3, d243))) {
        CHECK(F(out)[0] == 1 - 100);               /* [0,0,0] */
        CHECK(F(out)[5] == 3 - 200);               /* [0,1,2] */
        CHECK(F(out)[23] == 6 - 400);              /* [1,3,2] */
        CHECK(F(out)[12 + 4] == 5 - 200);          /* [1,1,1] */
    }
    gwr_value_release(out);
    /* scalars and empty tensors */
    float two = 2;
    gwr_value *s = f32v(0, NULL, &two), *e = f32v(1, d0, NULL);
    if (CHECK_OK(run2("Mul", NULL, s, s, &out))) CHECK(gwr_value_rank(out) == 0 && F(out)[0] == 4);
    gwr_value_release(out);
    if (CHECK_OK(run2("Mul", NULL, s, e, &out))) CHECK(same_shape(out, 1, d0));
    gwr_value_release(out);
    /* [0] does not broadcast with [3] */
    CHECK_EQ_INT(run2("Add", NULL, e, vb, &out), GWR_ERR_SHAPE);
    CHECK_CONTAINS(msg, "does not broadcast");
    CHECK_CONTAINS(msg, "layer 'L'");
    CHECK(!out);
    /* [2,3] and [4,1]: no */
    CHECK_EQ_INT(run2("Add", NULL, va, v41, &out), GWR_ERR_SHAPE);
    CHECK_CONTAINS(msg, "float32[4,1]");
    gwr_value_release(va), gwr_value_release(vb), gwr_value_release(v213), gwr_value_release(v41);
    gwr_value_release(s), gwr_value_release(e);
}

/* ---- integers -------------------------------------------------------------- */

TEST(integer_wrap_and_division) {
    int64_t two = 2;
    int32_t a[2] = {INT32_MAX, INT32_MIN}, b[2] = {1, -1};
    gwr_value *va = mk(GWR_INT32, 1, &two, a), *vb = mk(GWR_INT32, 1, &two, b), *out = NULL;
    if (CHECK_OK(run2("Add", NULL, va, vb, &out))) {
        const int32_t *o = gwr_value_cdata(out);
        CHECK(o[0] == INT32_MIN && o[1] == INT32_MAX);
    }
    gwr_value_release(out);
    if (CHECK_OK(run2("Div", NULL, va, vb, &out))) { /* INT32_MIN / -1 wraps, no trap */
        const int32_t *o = gwr_value_cdata(out);
        CHECK(o[0] == INT32_MAX && o[1] == INT32_MIN);
    }
    gwr_value_release(out);
    if (CHECK_OK(run1("Abs", NULL, va, &out))) CHECK(((const int32_t *)gwr_value_cdata(out))[1] == INT32_MIN);
    gwr_value_release(out);
    if (CHECK_OK(run1("Neg", NULL, va, &out))) CHECK(((const int32_t *)gwr_value_cdata(out))[0] == -INT32_MAX);
    gwr_value_release(out);
    int8_t c[2] = {100, -100}, d[2] = {3, 3};
    gwr_value *vc = mk(GWR_INT8, 1, &two, c), *vd = mk(GWR_INT8, 1, &two, d);
    if (CHECK_OK(run2("Mul", NULL, vc, vd, &out))) {
        const int8_t *o = gwr_value_cdata(out);
        CHECK(o[0] == 44 && o[1] == -44);
    }
    gwr_value_release(out);
    uint16_t e[2] = {65535, 0}, f[2] = {65535, 1};
    gwr_value *ve = mk(GWR_UINT16, 1, &two, e), *vf = mk(GWR_UINT16, 1, &two, f);
    if (CHECK_OK(run2("Mul", NULL, ve, vf, &out))) CHECK(((const uint16_t *)gwr_value_cdata(out))[0] == 1);
    gwr_value_release(out);
    if (CHECK_OK(run2("Sub", NULL, ve, vf, &out))) CHECK(((const uint16_t *)gwr_value_cdata(out))[1] == 65535);
    gwr_value_release(out);
    /* integer division and modulo by zero fail */
    int32_t z[2] = {4, 0};
    gwr_value *vz = mk(GWR_INT32, 1, &two, z);
    CHECK_EQ_INT(run2("Div", NULL, va, vz, &out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(msg, "division by zero");
    attr fm1[] = {{"fmod", 'i', 1, 0, NULL}, {NULL, 0, 0, 0, NULL}};
    CHECK_EQ_INT(run2("Mod", fm1, va, vz, &out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(msg, "division by zero");
    CHECK_EQ_INT(run2("Mod", NULL, va, vz, &out), GWR_ERR_INVALID_ARG);
    CHECK(!out);
    /* floats divide by zero as IEEE does */
    float fa[3] = {1, -1, 0}, fz[3] = {0, 0, 0};
    int64_t three = 3;
    gwr_value *vfa = f32v(1, &three, fa), *vfz = f32v(1, &three, fz);
    if (CHECK_OK(run2("Div", NULL, vfa, vfz, &out))) CHECK(F(out)[0] == INFINITY && F(out)[1] == -INFINITY && isnan(F(out)[2]));
    gwr_value_release(out);
    gwr_value_release(va), gwr_value_release(vb), gwr_value_release(vc), gwr_value_release(vd);
    gwr_value_release(ve), gwr_value_release(vf), gwr_value_release(vz), gwr_value_release(vfa), gwr_value_release(vfz);
}

TEST(mod_signs) {
    int64_t four = 4;
    int64_t a[4] = {-7, 7, -7, 7}, b[4] = {3, -3, -3, 3};
    gwr_value *va = mk(GWR_INT64, 1, &four, a), *vb = mk(GWR_INT64, 1, &four, b), *out = NULL;
    if (CHECK_OK(run2("Mod", NULL, va, vb, &out))) { /* the divisor's sign */
        const int64_t *o = gwr_value_cdata(out);
        CHECK(o[0] == 2 && o[1] == -2 && o[2] == -1 && o[3] == 1);
    }
    gwr_value_release(out);
    attr fm1[] = {{"fmod", 'i', 1, 0, NULL}, {NULL, 0, 0, 0, NULL}};
    if (CHECK_OK(run2("Mod", fm1, va, vb, &out))) { /* the dividend's sign */
        const int64_t *o = gwr_value_cdata(out);
        CHECK(o[0] == -1 && o[1] == 1 && o[2] == -1 && o[3] == 1);
    }
    gwr_value_release(out);
    float fa[1] = {-7.5f}, fb[1] = {2};
    int64_t one = 1;
    gwr_value *vfa = f32v(1, &one, fa), *vfb = f32v(1, &one, fb);
    if (CHECK_OK(run2("Mod", fm1, vfa, vfb, &out))) CHECK(F(out)[0] == -1.5f);
    gwr_value_release(out);
    {   /* fmod=0 on floats (opset 28): x - floor(x / y) * y and the spec's special cases */
        float px[8] = {-7.5f, 7.5f, 0.0f, -0.0f, INFINITY, 3, 3, -3}, py[8] = {2, -2, -2, 2, 2, 0, INFINITY, INFINITY};
        int64_t eight = 8;
        gwr_value *vpx = f32v(1, &eight, px), *vpy = f32v(1, &eight, py);
        if (CHECK_OK(run2("Mod", NULL, vpx, vpy, &out))) {
            const float *o = F(out);
            CHECK(o[0] == 0.5f && o[1] == -0.5f);
            CHECK(o[2] == 0 && signbit(o[2]) && o[3] == 0 && !signbit(o[3])); /* zero signed as y */
            CHECK(isnan(o[4]) && isnan(o[5]));                                  /* infinite x, zero y */
            CHECK(o[6] == 3 && o[7] == INFINITY);                               /* infinite y */
        }
        gwr_value_release(out);
        gwr_value_release(vpx), gwr_value_release(vpy);
    }
    attr fm2[] = {{"fmod", 'i', 2, 0, NULL}, {NULL, 0, 0, 0, NULL}};
    CHECK_EQ_INT(run2("Mod", fm2, va, vb, &out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(msg, "fmod must be 0 or 1");
    gwr_value_release(va), gwr_value_release(vb), gwr_value_release(vfa), gwr_value_release(vfb);
}

TEST(bit_ops) {
    int64_t three = 3;
    uint8_t a[3] = {0xff, 1, 0x81}, b[3] = {8, 7, 1};
    gwr_value *va = mk(GWR_UINT8, 1, &three, a), *vb = mk(GWR_UINT8, 1, &three, b), *out = NULL;
    attr left[] = {{"direction", 's', 0, 0, "LEFT"}, {NULL, 0, 0, 0, NULL}};
    attr right[] = {{"direction", 's', 0, 0, "RIGHT"}, {NULL, 0, 0, 0, NULL}};
    attr bad[] = {{"direction", 's', 0, 0, "UP"}, {NULL, 0, 0, 0, NULL}};
    if (CHECK_OK(run2("BitShift", left, va, vb, &out))) {
        const uint8_t *o = gwr_value_cdata(out);
        CHECK(o[0] == 0 && o[1] == 0x80 && o[2] == 0x02); /* by the width: 0 */
    }
    gwr_value_release(out);
    if (CHECK_OK(run2("BitShift", right, va, vb, &out))) {
        const uint8_t *o = gwr_value_cdata(out);
        CHECK(o[0] == 0 && o[1] == 0 && o[2] == 0x40);
    }
    gwr_value_release(out);
    {   /* signed (opset 28): left wraps, right fills with the sign; a negative
         * shift or one by the width or more gives the sign fill alone */
        int64_t five = 5;
        int8_t sx[5] = {-128, -3, 5, -1, 64}, sy[5] = {1, 1, 9, -1, 1};
        gwr_value *vx = mk(GWR_INT8, 1, &five, sx), *vy = mk(GWR_INT8, 1, &five, sy);
        if (CHECK_OK(run2("BitShift", left, vx, vy, &out))) {
            const int8_t *o = gwr_value_cdata(out);
            CHECK(o[0] == 0 && o[1] == -6 && o[2] == 0 && o[3] == 0 && o[4] == -128);
        }
        gwr_value_release(out);
        if (CHECK_OK(run2("BitShift", right, vx, vy, &out))) {
            const int8_t *o = gwr_value_cdata(out);
            CHECK(o[0] == -64 && o[1] == -2 && o[2] == 0 && o[3] == -1 && o[4] == 32);
        }
        gwr_value_release(out);
        gwr_value_release(vx), gwr_value_release(vy);
    }
    CHECK_EQ_INT(run2("BitShift", bad, va, vb, &out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(msg, "direction must be LEFT or RIGHT");
    CHECK_EQ_INT(run2("BitShift", NULL, va, vb, &out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(msg, "'direction' is missing");
    if (CHECK_OK(run2("BitwiseXor", NULL, va, vb, &out))) CHECK(((const uint8_t *)gwr_value_cdata(out))[0] == 0xf7);
    gwr_value_release(out);
    if (CHECK_OK(run1("BitwiseNot", NULL, va, &out))) CHECK(((const uint8_t *)gwr_value_cdata(out))[2] == 0x7e);
    gwr_value_release(out);
    /* logic ops want bool */
    CHECK_EQ_INT(run2("And", NULL, va, vb, &out), GWR_ERR_TYPE);
    CHECK_CONTAINS(msg, "dtype uint8 is not supported");
    uint8_t t[3] = {1, 0, 1}, u[3] = {1, 1, 0};
    gwr_value *vt = mk(GWR_BOOL, 1, &three, t), *vu = mk(GWR_BOOL, 1, &three, u);
    if (CHECK_OK(run2("Xor", NULL, vt, vu, &out))) {
        const uint8_t *o = gwr_value_cdata(out);
        CHECK(o[0] == 0 && o[1] == 1 && o[2] == 1);
    }
    gwr_value_release(out);
    if (CHECK_OK(run1("Not", NULL, vt, &out))) CHECK(((const uint8_t *)gwr_value_cdata(out))[1] == 1);
    gwr_value_release(out);
    gwr_value_release(va), gwr_value_release(vb), gwr_value_release(vt), gwr_value_release(vu);
}

/* ---- floats ---------------------------------------------------------------- */

TEST(nan_max_min_compare) {
    int64_t three = 3;
    float a[3] = {NAN, 1, 5}, b[3] = {1, NAN, 2};
    gwr_value *va = f32v(1, &three, a), *vb = f32v(1, &three, b), *out = NULL;
    if (CHECK_OK(run2("Max", NULL, va, vb, &out))) CHECK(isnan(F(out)[0]) && isnan(F(out)[1]) && F(out)[2] == 5);
    gwr_value_release(out);
    if (CHECK_OK(run2("Min", NULL, va, vb, &out))) CHECK(isnan(F(out)[0]) && isnan(F(out)[1]) && F(out)[2] == 2);
    gwr_value_release(out);
    if (CHECK_OK(run2("Less", NULL, va, vb, &out))) {
        const uint8_t *o = gwr_value_cdata(out);
        CHECK(gwr_value_dtype(out) == GWR_BOOL && o[0] == 0 && o[1] == 0 && o[2] == 0);
    }
    gwr_value_release(out);
    if (CHECK_OK(run2("Equal", NULL, va, va, &out))) CHECK(((const uint8_t *)gwr_value_cdata(out))[0] == 0);
    gwr_value_release(out);
    if (CHECK_OK(run1("IsNaN", NULL, va, &out))) {
        const uint8_t *o = gwr_value_cdata(out);
        CHECK(o[0] == 1 && o[1] == 0);
    }
    gwr_value_release(out);
    float inf[3] = {INFINITY, -INFINITY, 0};
    gwr_value *vi = f32v(1, &three, inf);
    attr noneg[] = {{"detect_negative", 'i', 0, 0, NULL}, {NULL, 0, 0, 0, NULL}};
    if (CHECK_OK(run1("IsInf", noneg, vi, &out))) {
        const uint8_t *o = gwr_value_cdata(out);
        CHECK(o[0] == 1 && o[1] == 0 && o[2] == 0);
    }
    gwr_value_release(out);
    /* Relu keeps NaN, Round goes half to even */
    if (CHECK_OK(run1("Relu", NULL, va, &out))) CHECK(isnan(F(out)[0]) && F(out)[1] == 1);
    gwr_value_release(out);
    float r[3] = {0.5f, 1.5f, -2.5f};
    gwr_value *vr = f32v(1, &three, r);
    if (CHECK_OK(run1("Round", NULL, vr, &out))) CHECK(F(out)[0] == 0 && F(out)[1] == 2 && F(out)[2] == -2);
    gwr_value_release(out);
    if (CHECK_OK(run1("Sign", NULL, vr, &out))) CHECK(F(out)[0] == 1 && F(out)[2] == -1);
    gwr_value_release(out);
    gwr_value_release(va), gwr_value_release(vb), gwr_value_release(vi), gwr_value_release(vr);
}

TEST(variadic) {
    int64_t d1[1] = {1}, d2[1] = {2}, d21[2] = {2, 1};
    float a[1] = {1}, b[2] = {10, 20}, c[2] = {100, 200};
    gwr_value *in[3] = {f32v(1, d1, a), f32v(1, d2, b), f32v(2, d21, c)}, *out = NULL;
    int64_t d22[2] = {2, 2};
    if (CHECK_OK(run_op("Sum", 13, NULL, 3, in, 1, &out)) && CHECK(same_shape(out, 2, d22)))
        CHECK(F(out)[0] == 111 && F(out)[1] == 121 && F(out)[2] == 211 && F(out)[3] == 221);
    gwr_value_release(out);
    if (CHECK_OK(run_op("Mean", 13, NULL, 3, in, 1, &out))) CHECK(F(out)[3] == 221.0f / 3);
    gwr_value_release(out);
    if (CHECK_OK(run_op("Max", 13, NULL, 1, in, 1, &out))) CHECK(F(out)[0] == 1); /* one input */
    gwr_value_release(out);
    CHECK_EQ_INT(run_op("Max", 13, NULL, 0, in, 1, &out), GWR_ERR_INVALID_ARG);
    gwr_value *bad[2] = {in[0], NULL};
    int64_t two = 2;
    int32_t iv[2] = {1, 2};
    bad[1] = mk(GWR_INT32, 1, &two, iv);
    CHECK_EQ_INT(run_op("Sum", 13, NULL, 2, bad, 1, &out), GWR_ERR_TYPE);
    CHECK_CONTAINS(msg, "input 1: dtype int32");
    CHECK_EQ_INT(run_op("Mean", 13, NULL, 1, &bad[1], 1, &out), GWR_ERR_TYPE); /* floats only */
    gwr_value_release(bad[1]);
    for (int i = 0; i < 3; i++) gwr_value_release(in[i]);
}

TEST(pow_types) {
    int64_t three = 3;
    float x[3] = {2, -3, 0.5f}, two = 2, three_f = 3;
    gwr_value *vx = f32v(1, &three, x), *v2 = f32v(0, NULL, &two), *v3 = f32v(0, NULL, &three_f), *out = NULL;
    if (CHECK_OK(run2("Pow", NULL, vx, v2, &out))) CHECK(F(out)[0] == 4 && F(out)[1] == 9 && F(out)[2] == 0.25f);
    gwr_value_release(out);
    if (CHECK_OK(run2("Pow", NULL, vx, v3, &out))) CHECK(F(out)[1] == -27);
    gwr_value_release(out);
    int32_t b[3] = {2, -2, 3}, e[3] = {10, 3, 0};
    gwr_value *vb = mk(GWR_INT32, 1, &three, b), *ve = mk(GWR_INT32, 1, &three, e);
    if (CHECK_OK(run2("Pow", NULL, vb, ve, &out))) {
        const int32_t *o = gwr_value_cdata(out);
        CHECK(o[0] == 1024 && o[1] == -8 && o[2] == 1);
    }
    gwr_value_release(out);
    if (CHECK_OK(run2("Pow", NULL, vb, vx, &out))) { /* int base, float exponent: truncated */
        const int32_t *o = gwr_value_cdata(out);
        CHECK(gwr_value_dtype(out) == GWR_INT32 && o[0] == 4 && o[2] == 1);
    }
    gwr_value_release(out);
    gwr_value_release(vx), gwr_value_release(v2), gwr_value_release(v3), gwr_value_release(vb), gwr_value_release(ve);
}

TEST(half_precision) {
    int64_t two = 2;
    uint16_t a[2] = {0x3e00 /* 1.5 */, 0x7c00 /* inf */}, b[2] = {0x4080 /* 2.25 */, 0x3c00 /* 1 */};
    gwr_value *va = mk(GWR_FLOAT16, 1, &two, a), *vb = mk(GWR_FLOAT16, 1, &two, b), *out = NULL;
    if (CHECK_OK(run2("Add", NULL, va, vb, &out))) {
        const uint16_t *o = gwr_value_cdata(out);
        CHECK(gwr_value_dtype(out) == GWR_FLOAT16 && o[0] == 0x4380 /* 3.75 */ && o[1] == 0x7c00);
    }
    gwr_value_release(out);
    if (CHECK_OK(run2("Greater", NULL, va, vb, &out))) {
        const uint8_t *o = gwr_value_cdata(out);
        CHECK(o[0] == 0 && o[1] == 1);
    }
    gwr_value_release(out);
    uint16_t c[2] = {0x3fc0 /* bf16 1.5 */, 0xc000 /* -2 */};
    gwr_value *vc = mk(GWR_BFLOAT16, 1, &two, c);
    if (CHECK_OK(run1("Abs", NULL, vc, &out))) CHECK(((const uint16_t *)gwr_value_cdata(out))[1] == 0x4000);
    gwr_value_release(out);
    if (CHECK_OK(run1("Relu", NULL, vc, &out))) CHECK(((const uint16_t *)gwr_value_cdata(out))[1] == 0);
    gwr_value_release(out);
    CHECK_EQ_INT(run2("Add", NULL, va, vc, &out), GWR_ERR_TYPE);
    CHECK_CONTAINS(msg, "input dtypes differ: float16 and bfloat16");
    gwr_value_release(va), gwr_value_release(vb), gwr_value_release(vc);
}

/* ---- Where, Clip ----------------------------------------------------------- */

TEST(where_and_clip) {
    int64_t d2[1] = {2}, d21[2] = {2, 1};
    uint8_t cnd[2] = {1, 0};
    gwr_value *c = mk(GWR_BOOL, 1, d2, cnd);
    const char *xs[1] = {"yes"}, *ys[2] = {"no", "nein"};
    gwr_value *x = strv(1, xs), *y = mk(GWR_STRING, 2, d21, NULL);
    gwr_value_set_string(y, 0, ys[0], 2), gwr_value_set_string(y, 1, ys[1], 4);
    gwr_value *in[3] = {c, x, y}, *out = NULL;
    int64_t d22[2] = {2, 2};
    if (CHECK_OK(run_op("Where", 16, NULL, 3, in, 1, &out)) && CHECK(same_shape(out, 2, d22))) {
        const gwr_bytes *o = gwr_value_cdata(out);
        CHECK(o[0].len == 3 && !memcmp(o[0].data, "yes", 3));
        CHECK(o[1].len == 2 && !memcmp(o[1].data, "no", 2));
        CHECK(o[3].len == 4 && !memcmp(o[3].data, "nein", 4));
    }
    gwr_value_release(out);
    in[0] = x;
    CHECK_EQ_INT(run_op("Where", 16, NULL, 3, in, 1, &out), GWR_ERR_TYPE);
    CHECK_CONTAINS(msg, "condition must be bool");
    gwr_value_release(c), gwr_value_release(x), gwr_value_release(y);

    int64_t four = 4;
    float v[4] = {-5, 0.5f, 5, NAN}, lo = -1, hi = 1;
    gwr_value *vv = f32v(1, &four, v), *vlo = f32v(0, NULL, &lo), *vhi = f32v(0, NULL, &hi);
    gwr_value *ci[3] = {vv, vlo, vhi};
    if (CHECK_OK(run_op("Clip", 13, NULL, 3, ci, 1, &out)))
        CHECK(F(out)[0] == -1 && F(out)[1] == 0.5f && F(out)[2] == 1 && isnan(F(out)[3]));
    gwr_value_release(out);
    ci[1] = NULL; /* only max */
    if (CHECK_OK(run_op("Clip", 13, NULL, 3, ci, 1, &out))) CHECK(F(out)[0] == -5 && F(out)[2] == 1);
    gwr_value_release(out);
    ci[1] = vhi, ci[2] = vlo; /* min > max: everything is max */
    if (CHECK_OK(run_op("Clip", 13, NULL, 3, ci, 1, &out))) CHECK(F(out)[0] == -1 && F(out)[1] == -1 && F(out)[2] == -1);
    gwr_value_release(out);
    ci[1] = vv; /* not a scalar */
    CHECK_EQ_INT(run_op("Clip", 13, NULL, 2, ci, 1, &out), GWR_ERR_SHAPE);
    CHECK_CONTAINS(msg, "must be a scalar");
    attr old[] = {{"min", 'f', 0, 0.0f, NULL}, {NULL, 0, 0, 0, NULL}}; /* opset 6: attributes */
    if (CHECK_OK(run_op("Clip", 6, old, 1, &vv, 1, &out))) CHECK(F(out)[0] == 0 && F(out)[2] == 5);
    gwr_value_release(out);
    int8_t iv[4] = {-128, 0, 100, 127}, ilo = -10, ihi = 10;
    gwr_value *vi = mk(GWR_INT8, 1, &four, iv), *vilo = mk(GWR_INT8, 0, NULL, &ilo), *vihi = mk(GWR_INT8, 0, NULL, &ihi);
    gwr_value *ii[3] = {vi, vilo, vihi};
    if (CHECK_OK(run_op("Clip", 13, NULL, 3, ii, 1, &out))) {
        const int8_t *o = gwr_value_cdata(out);
        CHECK(o[0] == -10 && o[1] == 0 && o[2] == 10 && o[3] == 10);
    }
    gwr_value_release(out);
    ii[1] = vlo; /* min of another dtype */
    CHECK_EQ_INT(run_op("Clip", 13, NULL, 3, ii, 1, &out), GWR_ERR_TYPE);
    CHECK_CONTAINS(msg, "(min): dtype float32");
    gwr_value_release(vv), gwr_value_release(vlo), gwr_value_release(vhi);
    gwr_value_release(vi), gwr_value_release(vilo), gwr_value_release(vihi);
}

/* ---- Cast ------------------------------------------------------------------ */

TEST(casts) {
    int64_t five = 5;
    float f[5] = {NAN, 300.7f, -1.5f, 1e-5f, 3};
    gwr_value *vf = f32v(1, &five, f), *out = NULL;
    attr to_u8[] = {{"to", 'i', GWR_UINT8, 0, NULL}, {NULL, 0, 0, 0, NULL}};
    if (CHECK_OK(run1("Cast", to_u8, vf, &out))) {
        const uint8_t *o = gwr_value_cdata(out);
        CHECK(o[0] == 0 && o[1] == 44 && o[2] == 255 && o[4] == 3);
    }
    gwr_value_release(out);
    attr to_str[] = {{"to", 'i', GWR_STRING, 0, NULL}, {NULL, 0, 0, 0, NULL}};
    if (CHECK_OK(run1("Cast", to_str, vf, &out))) {
        const gwr_bytes *o = gwr_value_cdata(out);
        CHECK_STR(o[0].data, "nan");
        CHECK_STR(o[1].data, "300.7");
        CHECK_STR(o[2].data, "-1.5");
        CHECK_STR(o[3].data, "1e-05");
        CHECK_STR(o[4].data, "3.0");
    }
    gwr_value_release(out);
    attr to_bool[] = {{"to", 'i', GWR_BOOL, 0, NULL}, {NULL, 0, 0, 0, NULL}};
    if (CHECK_OK(run1("Cast", to_bool, vf, &out))) {
        const uint8_t *o = gwr_value_cdata(out);
        CHECK(o[0] == 1 && o[2] == 1); /* NaN is true */
    }
    gwr_value_release(out);
    attr to_f16[] = {{"to", 'i', GWR_FLOAT16, 0, NULL}, {NULL, 0, 0, 0, NULL}};
    if (CHECK_OK(run1("Cast", to_f16, vf, &out))) CHECK(((const uint16_t *)gwr_value_cdata(out))[4] == 0x4200);
    gwr_value_release(out);
    const char *s[3] = {"-12", " 2.5", "INF"};
    gwr_value *vs = strv(3, s);
    attr to_i64[] = {{"to", 'i', GWR_INT64, 0, NULL}, {NULL, 0, 0, 0, NULL}};
    attr to_f32[] = {{"to", 'i', GWR_FLOAT32, 0, NULL}, {NULL, 0, 0, 0, NULL}};
    if (CHECK_OK(run1("Cast", to_i64, vs, &out))) {
        const int64_t *o = gwr_value_cdata(out);
        CHECK(o[0] == -12 && o[1] == 2 && o[2] == INT64_MAX);
    }
    gwr_value_release(out);
    if (CHECK_OK(run1("Cast", to_f32, vs, &out))) CHECK(F(out)[1] == 2.5f && F(out)[2] == INFINITY);
    gwr_value_release(out);
    const char *bad[1] = {"abc"};
    gwr_value *vb = strv(1, bad);
    CHECK_EQ_INT(run1("Cast", to_f32, vb, &out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(msg, "'abc' is not a number");
    attr to_bad[] = {{"to", 'i', 99, 0, NULL}, {NULL, 0, 0, 0, NULL}};
    CHECK_EQ_INT(run1("Cast", to_bad, vf, &out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(msg, "99 is not a dtype");
    CHECK_EQ_INT(run1("Cast", NULL, vf, &out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(msg, "'to' is missing");
    /* CastLike takes the second input's dtype */
    int64_t one = 1;
    double dd = 0;
    gwr_value *like = mk(GWR_FLOAT64, 1, &one, &dd);
    if (CHECK_OK(run2("CastLike", NULL, vf, like, &out)))
        CHECK(gwr_value_dtype(out) == GWR_FLOAT64 && ((const double *)gwr_value_cdata(out))[1] == (double)300.7f);
    gwr_value_release(out);
    gwr_value_release(vf), gwr_value_release(vs), gwr_value_release(vb), gwr_value_release(like);
}

/* ---- activations ----------------------------------------------------------- */

TEST(activations) {
    int64_t four = 4;
    float x[4] = {-100, -1, 1, 100};
    gwr_value *vx = f32v(1, &four, x), *out = NULL;
    if (CHECK_OK(run1("Gelu", NULL, vx, &out))) CHECK(near(F(out)[2], 0.8413447, 1e-6) && F(out)[0] == 0);
    gwr_value_release(out);
    attr tanh_[] = {{"approximate", 's', 0, 0, "tanh"}, {NULL, 0, 0, 0, NULL}};
    if (CHECK_OK(run1("Gelu", tanh_, vx, &out))) CHECK(near(F(out)[2], 0.8411920, 1e-6));
    gwr_value_release(out);
    attr badap[] = {{"approximate", 's', 0, 0, "fast"}, {NULL, 0, 0, 0, NULL}};
    CHECK_EQ_INT(run1("Gelu", badap, vx, &out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(msg, "approximate must be");
    if (CHECK_OK(run1("Softplus", NULL, vx, &out))) CHECK(F(out)[3] == 100 && F(out)[0] >= 0 && F(out)[0] < 1e-30);
    gwr_value_release(out);
    if (CHECK_OK(run1("Sigmoid", NULL, vx, &out))) CHECK(F(out)[0] >= 0 && F(out)[0] < 1e-30 && F(out)[3] == 1);
    gwr_value_release(out);
    if (CHECK_OK(run1("HardSwish", NULL, vx, &out))) CHECK(F(out)[0] == 0 && near(F(out)[1], -1.0 / 3, 1e-6) && near(F(out)[2], 2.0 / 3, 1e-6));
    gwr_value_release(out);
    if (CHECK_OK(run1("Mish", NULL, vx, &out))) CHECK(near(F(out)[2], 0.86509839, 1e-6) && F(out)[3] == 100);
    gwr_value_release(out);
    attr alpha0[] = {{"alpha", 'f', 0, 0.0f, NULL}, {NULL, 0, 0, 0, NULL}};
    CHECK_EQ_INT(run1("Celu", alpha0, vx, &out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(msg, "alpha must not be 0");
    CHECK_EQ_INT(run1("Sigmoid", NULL, NULL, &out), GWR_ERR_INVALID_ARG); /* absent input */
    CHECK_CONTAINS(msg, "input 0 is missing");
    int64_t two = 2;
    int32_t iv[2] = {-3, 3};
    gwr_value *vi = mk(GWR_INT32, 1, &two, iv);
    if (CHECK_OK(run1("Relu", NULL, vi, &out))) CHECK(((const int32_t *)gwr_value_cdata(out))[0] == 0);
    gwr_value_release(out);
    CHECK_EQ_INT(run1("Sigmoid", NULL, vi, &out), GWR_ERR_TYPE);
    CHECK_CONTAINS(msg, "dtype int32 is not supported");
    attr sh[] = {{"lambd", 'f', 0, 1.0f, NULL}, {"bias", 'f', 0, 1.0f, NULL}, {NULL, 0, 0, 0, NULL}};
    if (CHECK_OK(run1("Shrink", sh, vi, &out))) {
        const int32_t *o = gwr_value_cdata(out);
        CHECK(o[0] == -2 && o[1] == 2);
    }
    gwr_value_release(out);
    gwr_value_release(vx), gwr_value_release(vi);
}

TEST(prelu_broadcast) {
    int64_t dx[4] = {1, 2, 2, 1}, ds[3] = {2, 1, 1}, d1[1] = {2}, d3[1] = {3};
    float x[4] = {-1, 2, -3, -4}, s[2] = {0.5f, 2}, s3[3] = {1, 2, 3};
    gwr_value *vx = f32v(4, dx, x), *vs = f32v(3, ds, s), *out = NULL;
    if (CHECK_OK(run2("PRelu", NULL, vx, vs, &out)))
        CHECK(F(out)[0] == -0.5f && F(out)[1] == 2 && F(out)[2] == -6 && F(out)[3] == -8);
    gwr_value_release(out);
    gwr_value *v1 = f32v(1, d1, s); /* a 1-D slope per channel, as old exporters wrote it */
    if (CHECK_OK(run2("PRelu", NULL, vx, v1, &out))) CHECK(F(out)[0] == -0.5f && F(out)[2] == -6);
    gwr_value_release(out);
    gwr_value *v3 = f32v(1, d3, s3);
    CHECK_EQ_INT(run2("PRelu", NULL, vx, v3, &out), GWR_ERR_SHAPE);
    CHECK_CONTAINS(msg, "does not broadcast to input");
    gwr_value_release(vx), gwr_value_release(vs), gwr_value_release(v1), gwr_value_release(v3);
}

TEST(dropout) {
    int64_t n = 1000;
    float *x = malloc((size_t)n * sizeof *x);
    for (int64_t i = 0; i < n; i++) x[i] = 1;
    gwr_value *vx = f32v(1, &n, x), *out[2] = {NULL, NULL};
    free(x);
    /* inference: the input itself, the mask all true */
    if (CHECK_OK(run_op("Dropout", 13, NULL, 1, &vx, 2, out))) {
        CHECK(out[0] == vx);
        CHECK(gwr_value_dtype(out[1]) == GWR_BOOL && ((const uint8_t *)gwr_value_cdata(out[1]))[999] == 1);
    }
    gwr_value_release(out[0]), gwr_value_release(out[1]);
    /* opset 7: the mask has the input's type */
    if (CHECK_OK(run_op("Dropout", 7, NULL, 1, &vx, 2, out))) CHECK(gwr_value_dtype(out[1]) == GWR_FLOAT32);
    gwr_value_release(out[0]), gwr_value_release(out[1]);
    /* training: about ratio dropped, the rest scaled */
    float r = 0.25f;
    uint8_t t = 1;
    gwr_value *vr = f32v(0, NULL, &r), *vt = mk(GWR_BOOL, 0, NULL, &t);
    gwr_value *in[3] = {vx, vr, vt};
    if (CHECK_OK(run_op("Dropout", 13, NULL, 3, in, 2, out))) {
        int64_t kept = 0, consistent = 1;
        const uint8_t *m = gwr_value_cdata(out[1]);
        for (int64_t i = 0; i < n; i++) {
            kept += m[i];
            if (F(out[0])[i] != (m[i] ? 1 / 0.75f : 0)) consistent = 0;
        }
        CHECK(kept > 650 && kept < 850);
        CHECK(consistent);
    }
    gwr_value_release(out[0]), gwr_value_release(out[1]);
    float big = 2;
    gwr_value *vbig = f32v(0, NULL, &big);
    in[1] = vbig;
    CHECK_EQ_INT(run_op("Dropout", 13, NULL, 3, in, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(msg, "ratio must be in [0, 1]");
    in[1] = vt; /* a bool ratio */
    CHECK_EQ_INT(run_op("Dropout", 13, NULL, 3, in, 1, out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(msg, "ratio must be a float scalar");
    gwr_value_release(vx), gwr_value_release(vr), gwr_value_release(vt), gwr_value_release(vbig);
}

TEST(arity_errors) {
    float one = 1;
    gwr_value *v = f32v(0, NULL, &one), *out = NULL;
    gwr_value *three[3] = {v, v, v};
    CHECK_EQ_INT(run_op("Add", 13, NULL, 1, three, 1, &out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(msg, "takes 2 inputs, 1 given");
    CHECK_EQ_INT(run_op("Sqrt", 13, NULL, 2, three, 1, &out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(msg, "takes 1 inputs, 2 given");
    gwr_value *absent[2] = {v, NULL};
    CHECK_EQ_INT(run_op("Mul", 13, NULL, 2, absent, 1, &out), GWR_ERR_INVALID_ARG);
    CHECK_CONTAINS(msg, "input 1 is missing");
    CHECK_EQ_INT(run_op("Where", 16, NULL, 2, three, 1, &out), GWR_ERR_INVALID_ARG);
    int64_t two = 2;
    int32_t iv[2] = {4, 9};
    gwr_value *vi = mk(GWR_INT32, 1, &two, iv);
    CHECK_EQ_INT(run1("Sqrt", NULL, vi, &out), GWR_ERR_TYPE);
    CHECK_CONTAINS(msg, "dtype int32 is not supported");
    if (CHECK_OK(run1("Erf", NULL, vi, &out))) CHECK(((const int32_t *)gwr_value_cdata(out))[0] == 0); /* erf(4) -> 0.99.. */
    gwr_value_release(out);
    gwr_value_release(v), gwr_value_release(vi);
}

int main(void) {
    RUN(add_broadcast_corners);
    RUN(integer_wrap_and_division);
    RUN(mod_signs);
    RUN(bit_ops);
    RUN(nan_max_min_compare);
    RUN(variadic);
    RUN(pow_types);
    RUN(half_precision);
    RUN(where_and_clip);
    RUN(casts);
    RUN(activations);
    RUN(prelu_broadcast);
    RUN(dropout);
    RUN(arity_errors);
    return check_report();
}
