/* test_ir.c - unit tests of the IR room through the public API only
 * (include/gwr/core.h and include/gwr/ir.h; a few builders from
 * functional.h). The header comments are the spec: every check below cites
 * behaviour they promise. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gwr/gwr.h"
#include "ir/ir_internal.h" /* ranks, for the test of their upkeep */
#include "check.h"

/* ---- helpers -------------------------------------------------------------- */

static const gwr_dim D24[2] = {2, 4};

static gwr_tensor *in_f32(gwr_network *net, const char *name) {
    return gwr_network_add_input(net, name, GWR_FLOAT32, 2, D24);
}

static gwr_layer *lay1(gwr_network *net, const char *op, const char *name, gwr_tensor *a) {
    gwr_tensor *ins[1] = {a};
    return gwr_network_add_layer(net, op, "", name, 1, ins, 1, NULL);
}

static gwr_layer *lay2(gwr_network *net, const char *op, const char *name, gwr_tensor *a,
                       gwr_tensor *b) {
    gwr_tensor *ins[2] = {a, b};
    return gwr_network_add_layer(net, op, "", name, 2, ins, 1, NULL);
}

/* A one-input layer whose single output gets an explicit name. */
static gwr_layer *lay1n(gwr_network *net, const char *op, const char *name, gwr_tensor *a,
                        const char *out_name) {
    gwr_tensor *ins[1] = {a};
    const char *outs[1] = {out_name};
    return gwr_network_add_layer(net, op, "", name, 1, ins, 1, outs);
}

static gwr_tensor *out0(const gwr_layer *l) { return gwr_layer_output(l, 0); }

static void set_f32(gwr_tensor *t) { gwr_tensor_set_type(t, GWR_FLOAT32, 2, D24); }

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* How many of t's uses are (l, slot). */
static int count_use(const gwr_tensor *t, const gwr_layer *l, int slot) {
    int c = 0;
    for (int64_t i = 0; i < gwr_tensor_num_users(t); i++) {
        int s = -7;
        gwr_layer *u = gwr_tensor_user(t, i, &s);
        if (u == l && s == slot) c++;
    }
    return c;
}

/* Every use (u, s) of t satisfies gwr_layer_input(u, s) == t. */
static int uses_consistent(const gwr_tensor *t) {
    for (int64_t i = 0; i < gwr_tensor_num_users(t); i++) {
        int s = -7;
        gwr_layer *u = gwr_tensor_user(t, i, &s);
        if (!u || gwr_layer_input(u, s) != t) return 0;
    }
    return 1;
}

/* Every layer's inputs are produced earlier in network order (or are
 * inputs / tensors of an enclosing network). */
static int is_topological(const gwr_network *net) {
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (gwr_layer_index(l) != i) return 0;
        for (int k = 0; k < gwr_layer_num_inputs(l); k++) {
            gwr_tensor *t = gwr_layer_input(l, k);
            if (!t) continue;
            gwr_layer *p = gwr_tensor_parent(t);
            if (p && gwr_layer_network(p) == net && gwr_layer_index(p) >= i) return 0;
        }
    }
    return 1;
}

/* Records calls of a buffer release callback. */
typedef struct release_log {
    int calls;
    const void *data;
    size_t size;
} release_log;

static void count_release(void *ctx, const void *data, size_t size) {
    release_log *r = ctx;
    r->calls++;
    r->data = data;
    r->size = size;
}

/* ---- core.h --------------------------------------------------------------- */

/* Must run first: nothing has failed yet on this thread. */
TEST(test_errmsg_initially_empty) { CHECK_STR(gwr_last_errmsg(), ""); }

TEST(test_version_and_status) {
    CHECK_STR(gwr_version(), GWR_VERSION_STRING);
    static const struct {
        gwr_status s;
        const char *name;
    } st[] = {
        {GWR_OK, "GWR_OK"},
        {GWR_ERR_INVALID_ARG, "GWR_ERR_INVALID_ARG"},
        {GWR_ERR_NOT_FOUND, "GWR_ERR_NOT_FOUND"},
        {GWR_ERR_TYPE, "GWR_ERR_TYPE"},
        {GWR_ERR_SHAPE, "GWR_ERR_SHAPE"},
        {GWR_ERR_DUPLICATE, "GWR_ERR_DUPLICATE"},
        {GWR_ERR_CYCLE, "GWR_ERR_CYCLE"},
        {GWR_ERR_INVALID_GRAPH, "GWR_ERR_INVALID_GRAPH"},
        {GWR_ERR_NOMEM, "GWR_ERR_NOMEM"},
        {GWR_ERR_IO, "GWR_ERR_IO"},
        {GWR_ERR_PARSE, "GWR_ERR_PARSE"},
        {GWR_ERR_UNSUPPORTED, "GWR_ERR_UNSUPPORTED"},
        {GWR_ERR_NOT_CONVERGED, "GWR_ERR_NOT_CONVERGED"},
        {GWR_ERR_STATE, "GWR_ERR_STATE"},
    };
    for (size_t i = 0; i < sizeof st / sizeof st[0]; i++) CHECK_STR(gwr_status_name(st[i].s), st[i].name);
    /* never NULL, even for values outside the enum */
    CHECK(gwr_status_name((gwr_status)999) != NULL);
    CHECK(gwr_status_name((gwr_status)-1) != NULL);
}

TEST(test_dtypes) {
    static const struct {
        gwr_dtype t;
        const char *name;
        int bits;
        size_t size;
        int is_float, is_int;
    } dt[] = {
        {GWR_UNDEFINED, "undefined", 0, 0, 0, 0},
        {GWR_FLOAT32, "float32", 32, 4, 1, 0},
        {GWR_UINT8, "uint8", 8, 1, 0, 1},
        {GWR_INT8, "int8", 8, 1, 0, 1},
        {GWR_UINT16, "uint16", 16, 2, 0, 1},
        {GWR_INT16, "int16", 16, 2, 0, 1},
        {GWR_INT32, "int32", 32, 4, 0, 1},
        {GWR_INT64, "int64", 64, 8, 0, 1},
        {GWR_STRING, "string", 0, 0, 0, 0},
        {GWR_BOOL, "bool", 8, 1, 0, 0},
        {GWR_FLOAT16, "float16", 16, 2, 1, 0},
        {GWR_FLOAT64, "float64", 64, 8, 1, 0},
        {GWR_UINT32, "uint32", 32, 4, 0, 1},
        {GWR_UINT64, "uint64", 64, 8, 0, 1},
        {GWR_COMPLEX64, "complex64", 64, 8, 1, 0},
        {GWR_COMPLEX128, "complex128", 128, 16, 1, 0},
        {GWR_BFLOAT16, "bfloat16", 16, 2, 1, 0},
        {GWR_FLOAT8E4M3FN, "float8e4m3fn", 8, 1, 1, 0},
        {GWR_FLOAT8E4M3FNUZ, "float8e4m3fnuz", 8, 1, 1, 0},
        {GWR_FLOAT8E5M2, "float8e5m2", 8, 1, 1, 0},
        {GWR_FLOAT8E5M2FNUZ, "float8e5m2fnuz", 8, 1, 1, 0},
        {GWR_UINT4, "uint4", 4, 1, 0, 1},
        {GWR_INT4, "int4", 4, 1, 0, 1},
        {GWR_FLOAT4E2M1, "float4e2m1", 4, 1, 1, 0},
        {GWR_FLOAT8E8M0, "float8e8m0", 8, 1, 1, 0},
        {GWR_UINT2, "uint2", 2, 1, 0, 1},
        {GWR_INT2, "int2", 2, 1, 0, 1},
    };
    CHECK_EQ_INT(sizeof dt / sizeof dt[0], GWR_DTYPE_COUNT);
    for (size_t i = 0; i < sizeof dt / sizeof dt[0]; i++) {
        gwr_dtype t = dt[i].t;
        CHECK_EQ_INT(t, (gwr_dtype)i);
        CHECK_STR(gwr_dtype_name(t), dt[i].name);
        CHECK_EQ_INT(gwr_dtype_bits(t), dt[i].bits);
        CHECK_EQ_INT(gwr_dtype_size(t), dt[i].size);
        CHECK_EQ_INT(gwr_dtype_is_float(t), dt[i].is_float);
        CHECK_EQ_INT(gwr_dtype_is_int(t), dt[i].is_int);
        CHECK_EQ_INT(gwr_dtype_from_name(dt[i].name), t);
        if (t != GWR_UNDEFINED) CHECK_EQ_INT(gwr_dtype_is_valid(t), 1);
    }
    CHECK_EQ_INT(gwr_dtype_from_name("float"), GWR_FLOAT32);
    CHECK_EQ_INT(gwr_dtype_from_name("double"), GWR_FLOAT64);
    CHECK_EQ_INT(gwr_dtype_from_name("half"), GWR_FLOAT16);
    CHECK_EQ_INT(gwr_dtype_from_name("no_such_type"), GWR_UNDEFINED);
    CHECK_EQ_INT(gwr_dtype_from_name(""), GWR_UNDEFINED);
    CHECK_EQ_INT(gwr_dtype_from_name(NULL), GWR_UNDEFINED);
    /* values outside the enum */
    CHECK_STR(gwr_dtype_name(GWR_DTYPE_COUNT), "undefined");
    CHECK_STR(gwr_dtype_name((gwr_dtype)-3), "undefined");
    CHECK_STR(gwr_dtype_name((gwr_dtype)1000), "undefined");
    CHECK_EQ_INT(gwr_dtype_bits(GWR_DTYPE_COUNT), 0);
    CHECK_EQ_INT(gwr_dtype_size((gwr_dtype)-1), 0);
    CHECK_EQ_INT(gwr_dtype_is_valid(GWR_DTYPE_COUNT), 0);
    CHECK_EQ_INT(gwr_dtype_is_valid((gwr_dtype)-1), 0);
    CHECK_EQ_INT(gwr_dtype_is_float((gwr_dtype)1000), 0);
    CHECK_EQ_INT(gwr_dtype_is_int((gwr_dtype)1000), 0);
}

TEST(test_value_kind_and_numel) {
    const char *names[5];
    for (int k = 0; k < 5; k++) {
        names[k] = gwr_value_kind_name((gwr_value_kind)k);
        CHECK(names[k] != NULL && names[k][0] != '\0');
    }
    for (int a = 0; a < 5; a++)
        for (int b = a + 1; b < 5; b++)
            if (names[a] && names[b]) CHECK(strcmp(names[a], names[b]) != 0);
    (void)gwr_value_kind_name((gwr_value_kind)77); /* must not crash */

    const int64_t d3[3] = {2, 3, 4}, dz[3] = {2, 0, 5}, dneg[2] = {2, -1};
    const int64_t dbig[2] = {INT64_C(1) << 62, 2}, dbig2[2] = {INT64_C(3037000500), INT64_C(3037000500)};
    CHECK_EQ_INT(gwr_shape_numel(0, NULL), 1);
    CHECK_EQ_INT(gwr_shape_numel(3, d3), 24);
    CHECK_EQ_INT(gwr_shape_numel(3, dz), 0);
    CHECK_EQ_INT(gwr_shape_numel(2, dneg), -1);
    CHECK_EQ_INT(gwr_shape_numel(2, dbig), -1);
    CHECK_EQ_INT(gwr_shape_numel(2, dbig2), -1);
    CHECK_EQ_INT(gwr_shape_numel(1, d3), 2);
}

TEST(test_buffers) {
    char src[8] = "abcdefg";
    gwr_buffer *b = gwr_buffer_new_copy(src, sizeof src);
    if (!CHECK(b != NULL)) return;
    CHECK(gwr_buffer_data(b) != (const void *)src); /* a copy, not a borrow */
    CHECK_EQ_INT(gwr_buffer_size(b), sizeof src);
    CHECK(memcmp(gwr_buffer_data(b), "abcdefg", 8) == 0);
    src[0] = 'z';
    CHECK_EQ_INT(((const char *)gwr_buffer_data(b))[0], 'a');
    gwr_buffer_retain(b);
    gwr_buffer_release(b);
    CHECK_EQ_INT(((const char *)gwr_buffer_data(b))[1], 'b'); /* still alive */
    gwr_buffer_release(b);

    /* data NULL: zero-filled */
    b = gwr_buffer_new_copy(NULL, 64);
    if (CHECK(b != NULL)) {
        CHECK_EQ_INT(gwr_buffer_size(b), 64);
        const unsigned char *p = gwr_buffer_data(b);
        int zero = p != NULL;
        for (int i = 0; zero && i < 64; i++) zero = p[i] == 0;
        CHECK(zero);
        gwr_buffer_release(b);
    }
    b = gwr_buffer_new_copy(NULL, 0);
    if (CHECK(b != NULL)) {
        CHECK_EQ_INT(gwr_buffer_size(b), 0);
        gwr_buffer_release(b);
    }

    /* wrap: borrowed memory, released once through the callback */
    static double mem[4] = {1, 2, 3, 4};
    release_log rl = {0, NULL, 0};
    b = gwr_buffer_wrap(mem, sizeof mem, count_release, &rl);
    if (!CHECK(b != NULL)) return;
    CHECK(gwr_buffer_data(b) == (const void *)mem);
    CHECK_EQ_INT(gwr_buffer_size(b), sizeof mem);
    gwr_buffer_retain(b);
    gwr_buffer_retain(b);
    gwr_buffer_release(b);
    gwr_buffer_release(b);
    CHECK_EQ_INT(rl.calls, 0);
    gwr_buffer_release(b);
    CHECK_EQ_INT(rl.calls, 1);
    CHECK(rl.data == (const void *)mem);
    CHECK_EQ_INT(rl.size, sizeof mem);

    /* static memory: no callback */
    b = gwr_buffer_wrap(mem, sizeof mem, NULL, NULL);
    if (CHECK(b != NULL)) {
        CHECK(gwr_buffer_data(b) == (const void *)mem);
        gwr_buffer_release(b);
    }
    gwr_buffer_release(NULL); /* ignored */
    gwr_buffer_retain(NULL);  /* must not crash */
    CHECK(gwr_buffer_data(NULL) == NULL);
    CHECK_EQ_INT(gwr_buffer_size(NULL), 0);
}

/* ---- symbolic dims and tensor types --------------------------------------- */

TEST(test_symbolic_dims) {
    gwr_network *net = gwr_network_new("syms");
    if (!CHECK(net != NULL)) return;
    gwr_dim b = gwr_network_dim_sym(net, "batch");
    CHECK(GWR_DIM_IS_SYM(b));
    CHECK(b <= GWR_DIM_SYM_BASE);
    CHECK(!GWR_DIM_IS_KNOWN(b));
    CHECK_EQ_INT(gwr_network_dim_sym(net, "batch"), b);
    gwr_dim s = gwr_network_dim_sym(net, "seq");
    CHECK(GWR_DIM_IS_SYM(s));
    CHECK(s != b);
    CHECK_STR(gwr_network_dim_name(net, b), "batch");
    CHECK_STR(gwr_network_dim_name(net, s), "seq");
    CHECK(gwr_network_dim_name(net, 5) == NULL);
    CHECK(gwr_network_dim_name(net, GWR_DIM_UNKNOWN) == NULL);
    CHECK(gwr_network_dim_name(net, GWR_DIM_SYM_BASE - 1000) == NULL);
    CHECK_EQ_INT(gwr_network_dim_sym(net, NULL), GWR_DIM_UNKNOWN);
    CHECK(gwr_network_errmsg(net)[0] != '\0');

    /* a subgraph shares its root's symbols, both ways */
    gwr_network *sub = gwr_network_new_subgraph(net, "body");
    if (CHECK(sub != NULL)) {
        CHECK_EQ_INT(gwr_network_dim_sym(sub, "batch"), b);
        CHECK_STR(gwr_network_dim_name(sub, s), "seq");
        gwr_dim t = gwr_network_dim_sym(sub, "time");
        CHECK(GWR_DIM_IS_SYM(t));
        CHECK(t != b && t != s);
        CHECK_EQ_INT(gwr_network_dim_sym(net, "time"), t);
        CHECK_STR(gwr_network_dim_name(net, t), "time");
        gwr_network *subsub = gwr_network_new_subgraph(sub, "inner");
        if (CHECK(subsub != NULL)) {
            CHECK_EQ_INT(gwr_network_dim_sym(subsub, "time"), t);
            gwr_network_free(subsub);
        }
        gwr_dim sd[1] = {t};
        CHECK(gwr_network_add_input(sub, "sub_in", GWR_FLOAT32, 1, sd) != NULL);
        gwr_network_free(sub);
    }

    /* dims on tensors, and their text */
    gwr_dim dims[3] = {b, 128, GWR_DIM_UNKNOWN};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 3, dims);
    if (!CHECK(x != NULL)) goto done;
    CHECK_EQ_INT(gwr_tensor_rank(x), 3);
    CHECK_EQ_INT(gwr_tensor_dim(x, 0), b);
    CHECK_EQ_INT(gwr_tensor_dim(x, 1), 128);
    CHECK_EQ_INT(gwr_tensor_dim(x, 2), GWR_DIM_UNKNOWN);
    CHECK_EQ_INT(gwr_tensor_dim(x, -3), b);
    CHECK_EQ_INT(gwr_tensor_dim(x, -2), 128);
    CHECK_EQ_INT(gwr_tensor_dim(x, 3), GWR_DIM_UNKNOWN);
    CHECK_EQ_INT(gwr_tensor_dim(x, -4), GWR_DIM_UNKNOWN);
    const gwr_dim *xd = gwr_tensor_dims(x);
    if (CHECK(xd != NULL)) CHECK_EQ_INT(xd[1], 128);
    dims[1] = 7; /* the network keeps its own copy */
    CHECK_EQ_INT(gwr_tensor_dim(x, 1), 128);
    char buf[64];
    int n = gwr_tensor_type_str(x, buf, sizeof buf);
    CHECK_STR(buf, "float32[batch,128,?]");
    CHECK_EQ_INT(n, strlen("float32[batch,128,?]"));
    char small[8];
    memset(small, 'X', sizeof small);
    CHECK_EQ_INT(gwr_tensor_type_str(x, small, sizeof small), n); /* like snprintf */
    CHECK_EQ_INT(small[7], '\0');
    CHECK(strncmp(small, "float32", 7) == 0);
    CHECK_EQ_INT(gwr_tensor_type_str(x, NULL, 0), n);

    gwr_tensor *u = gwr_network_add_input(net, "u", GWR_INT64, -1, NULL);
    if (CHECK(u != NULL)) {
        CHECK_EQ_INT(gwr_tensor_rank(u), -1);
        CHECK(gwr_tensor_dims(u) == NULL);
        CHECK_EQ_INT(gwr_tensor_dim(u, 0), GWR_DIM_UNKNOWN);
        CHECK_EQ_INT(gwr_tensor_dtype(u), GWR_INT64);
    }
    gwr_tensor *sc = gwr_network_add_input(net, "scalar", GWR_BOOL, 0, NULL);
    if (CHECK(sc != NULL)) CHECK_EQ_INT(gwr_tensor_rank(sc), 0);

    /* set_type: symbols must belong to this network's root */
    {
        gwr_network *other = gwr_network_new("other");
        gwr_dim foreign = GWR_DIM_UNKNOWN;
        char nm[16];
        for (int i = 0; i < 40; i++) {
            snprintf(nm, sizeof nm, "o%d", i);
            foreign = gwr_network_dim_sym(other, nm);
        }
        CHECK(GWR_DIM_IS_SYM(foreign));
        CHECK(gwr_network_dim_name(net, foreign) == NULL); /* net has 3 symbols */
        gwr_dim fd[2] = {foreign, 4};
        CHECK(gwr_tensor_set_type(x, GWR_FLOAT32, 2, fd) != GWR_OK);
        CHECK_EQ_INT(gwr_tensor_rank(x), 3); /* unchanged */
        CHECK(gwr_network_errmsg(net)[0] != '\0');
        gwr_network_free(other);
    }
    /* set_type: other refusals, type unchanged */
    gwr_dim two[2] = {s, 16};
    CHECK(gwr_tensor_set_type(x, (gwr_dtype)999, 2, two) != GWR_OK);
    CHECK(gwr_tensor_set_type(x, GWR_FLOAT32, 2, NULL) != GWR_OK);
    CHECK(gwr_tensor_set_type(x, GWR_FLOAT32, GWR_MAX_RANK + 1, NULL) != GWR_OK);
    CHECK(gwr_tensor_set_type(x, GWR_FLOAT32, -5, NULL) != GWR_OK);
    CHECK_EQ_INT(gwr_tensor_rank(x), 3);
    CHECK_EQ_INT(gwr_tensor_dtype(x), GWR_FLOAT32);
    CHECK_OK(gwr_tensor_set_type(x, GWR_FLOAT16, 2, two));
    CHECK_EQ_INT(gwr_tensor_dtype(x), GWR_FLOAT16);
    CHECK_EQ_INT(gwr_tensor_dim(x, 0), s);
    CHECK_EQ_INT(gwr_tensor_dim(x, -1), 16);
    CHECK_OK(gwr_tensor_set_type(x, GWR_FLOAT32, -1, NULL));
    CHECK_EQ_INT(gwr_tensor_rank(x), -1);
    CHECK_OK(gwr_network_verify(net));
done:
    gwr_network_free(net);
}

TEST(test_value_types) {
    gwr_network *net = gwr_network_new("vt");
    gwr_tensor *t = gwr_network_add_input(net, "seq_in", GWR_FLOAT32, -1, NULL);
    if (!CHECK(t != NULL)) goto done;
    CHECK_EQ_INT(gwr_tensor_kind(t), GWR_VALUE_TENSOR);
    gwr_dim d1[1] = {4};
    gwr_type elem = {GWR_VALUE_TENSOR, GWR_FLOAT32, 1, d1, NULL};
    gwr_type seq = {GWR_VALUE_SEQUENCE, GWR_UNDEFINED, -1, NULL, &elem};
    CHECK_OK(gwr_tensor_set_value_type(t, &seq));
    d1[0] = 99; /* copied in */
    CHECK_EQ_INT(gwr_tensor_kind(t), GWR_VALUE_SEQUENCE);
    gwr_type out;
    memset(&out, 0, sizeof out);
    CHECK_OK(gwr_tensor_value_type(t, &out));
    CHECK_EQ_INT(out.kind, GWR_VALUE_SEQUENCE);
    if (CHECK(out.elem != NULL)) {
        CHECK_EQ_INT(out.elem->kind, GWR_VALUE_TENSOR);
        CHECK_EQ_INT(out.elem->dtype, GWR_FLOAT32);
        CHECK_EQ_INT(out.elem->rank, 1);
        if (CHECK(out.elem->dims != NULL)) CHECK_EQ_INT(out.elem->dims[0], 4);
    }
    /* map<int64, tensor(float)> */
    gwr_type val = {GWR_VALUE_TENSOR, GWR_FLOAT32, -1, NULL, NULL};
    gwr_type map = {GWR_VALUE_MAP, GWR_INT64, -1, NULL, &val};
    CHECK_OK(gwr_tensor_set_value_type(t, &map));
    memset(&out, 0, sizeof out);
    CHECK_OK(gwr_tensor_value_type(t, &out));
    CHECK_EQ_INT(out.kind, GWR_VALUE_MAP);
    CHECK_EQ_INT(out.dtype, GWR_INT64);
    if (CHECK(out.elem != NULL)) CHECK_EQ_INT(out.elem->dtype, GWR_FLOAT32);
    /* optional<sequence<tensor>> */
    gwr_type opt = {GWR_VALUE_OPTIONAL, GWR_UNDEFINED, -1, NULL, &seq};
    CHECK_OK(gwr_tensor_set_value_type(t, &opt));
    CHECK_EQ_INT(gwr_tensor_kind(t), GWR_VALUE_OPTIONAL);
    /* a plain tensor type again */
    CHECK_OK(gwr_tensor_set_type(t, GWR_INT32, 2, D24));
    CHECK_EQ_INT(gwr_tensor_kind(t), GWR_VALUE_TENSOR);
    memset(&out, 0, sizeof out);
    CHECK_OK(gwr_tensor_value_type(t, &out));
    CHECK_EQ_INT(out.kind, GWR_VALUE_TENSOR);
    CHECK_EQ_INT(out.dtype, GWR_INT32);
    CHECK_EQ_INT(out.rank, 2);
    CHECK(gwr_tensor_set_value_type(t, NULL) != GWR_OK);
    CHECK(gwr_tensor_value_type(t, NULL) != GWR_OK);
    CHECK_OK(gwr_network_verify(net));
done:
    gwr_network_free(net);
}

/* ---- networks: inputs, outputs, layers, names ------------------------------ */

TEST(test_network_io) {
    gwr_network *net = gwr_network_new("n1");
    if (!CHECK(net != NULL)) return;
    CHECK_STR(gwr_network_name(net), "n1");
    CHECK_OK(gwr_network_set_name(net, "n2"));
    CHECK_STR(gwr_network_name(net), "n2");
    CHECK(gwr_network_parent(net) == NULL);
    CHECK(gwr_network_owner(net) == NULL);
    CHECK_STR(gwr_network_errmsg(net), "");
    CHECK_EQ_INT(gwr_network_num_inputs(net), 0);
    CHECK_EQ_INT(gwr_network_num_outputs(net), 0);
    CHECK_EQ_INT(gwr_network_num_layers(net), 0);
    CHECK_EQ_INT(gwr_network_num_live_layers(net), 0);
    CHECK_OK(gwr_network_verify(net));

    gwr_tensor *x = in_f32(net, "input_x");
    gwr_tensor *y = gwr_network_add_input(net, "input_y", GWR_INT64, 0, NULL);
    if (!CHECK(x && y)) goto done;
    CHECK_EQ_INT(gwr_network_num_inputs(net), 2);
    CHECK(gwr_network_input(net, 0) == x);
    CHECK(gwr_network_input(net, 1) == y);
    CHECK(gwr_network_input(net, 2) == NULL);
    CHECK(gwr_network_input(net, -1) == NULL);
    CHECK_EQ_INT(gwr_tensor_is_input(x), 1);
    CHECK(gwr_tensor_parent(x) == NULL);
    CHECK_EQ_INT(gwr_tensor_parent_output_index(x), -1);
    CHECK_EQ_INT(gwr_tensor_output_index(x), -1);
    CHECK(gwr_tensor_network(x) == net);
    CHECK_STR(gwr_tensor_name(x), "input_x");
    CHECK_EQ_INT(gwr_tensor_dtype(x), GWR_FLOAT32);
    CHECK_EQ_INT(gwr_tensor_kind(x), GWR_VALUE_TENSOR);
    CHECK_EQ_INT(gwr_tensor_num_users(x), 0);
    /* names are unique */
    CHECK(gwr_network_add_input(net, "input_x", GWR_FLOAT32, 2, D24) == NULL);
    CHECK_EQ_INT(gwr_network_num_inputs(net), 2);
    CHECK(gwr_network_errmsg(net)[0] != '\0');

    gwr_layer *l = lay2(net, "Add", "add", x, x);
    if (!CHECK(l != NULL)) goto done;
    gwr_tensor *o = out0(l);
    CHECK_OK(gwr_network_mark_output(net, o));
    CHECK_EQ_INT(gwr_network_num_outputs(net), 1);
    CHECK(gwr_network_output(net, 0) == o);
    CHECK_EQ_INT(gwr_tensor_output_index(o), 0);
    /* marking twice is an error and changes nothing */
    CHECK(gwr_network_mark_output(net, o) != GWR_OK);
    CHECK_EQ_INT(gwr_network_num_outputs(net), 1);
    CHECK(gwr_network_errmsg(net)[0] != '\0');

    gwr_layer *r = lay1(net, "Relu", "relu", o);
    if (!CHECK(r != NULL)) goto done;
    gwr_tensor *ro = out0(r);
    CHECK_OK(gwr_network_mark_output(net, ro));
    CHECK_EQ_INT(gwr_network_num_outputs(net), 2);
    CHECK(gwr_network_output(net, 1) == ro);
    CHECK_EQ_INT(gwr_tensor_output_index(ro), 1);
    CHECK(gwr_network_output(net, 2) == NULL);
    CHECK(gwr_network_output(net, -1) == NULL);

    CHECK_OK(gwr_network_unmark_output(net, o));
    CHECK_EQ_INT(gwr_network_num_outputs(net), 1);
    CHECK(gwr_network_output(net, 0) == ro);
    CHECK_EQ_INT(gwr_tensor_output_index(ro), 0);
    CHECK_EQ_INT(gwr_tensor_output_index(o), -1);
    CHECK(gwr_network_unmark_output(net, o) != GWR_OK);
    CHECK_EQ_INT(gwr_network_num_outputs(net), 1);
    CHECK_OK(gwr_network_mark_output(net, o)); /* appended at the end */
    CHECK(gwr_network_output(net, 1) == o);
    CHECK_EQ_INT(gwr_tensor_output_index(o), 1);
    CHECK_OK(gwr_network_verify(net));
done:
    gwr_network_free(net);
}

TEST(test_layer_accessors) {
    gwr_network *net = gwr_network_new("la");
    gwr_tensor *x = in_f32(net, "x");
    if (!CHECK(x != NULL)) goto done;
    gwr_layer *l = lay2(net, "Add", "my_add", x, x);
    if (!CHECK(l != NULL)) goto done;
    CHECK_STR(gwr_layer_name(l), "my_add");
    CHECK(gwr_layer_network(l) == net);
    CHECK_EQ_INT(gwr_layer_type_of(l), GWR_LAYER_ELEMENTWISE);
    CHECK_EQ_INT(gwr_layer_type(l), GWR_LAYER_ELEMENTWISE);
    CHECK_STR(gwr_layer_op(l), "Add");
    CHECK_STR(gwr_layer_domain(l), "");
    CHECK_EQ_INT(gwr_layer_op_id(l), GWR_OP_Add);
    CHECK_EQ_INT(gwr_layer_ew_op(l), GWR_EW_SUM);
    CHECK_EQ_INT(gwr_layer_index(l), 0);
    CHECK_EQ_INT(gwr_layer_is_removed(l), 0);
    CHECK_EQ_INT(gwr_layer_num_inputs(l), 2);
    CHECK(gwr_layer_input(l, 0) == x);
    CHECK(gwr_layer_input(l, 1) == x);
    CHECK(gwr_layer_input(l, 2) == NULL);
    CHECK(gwr_network_errmsg(net)[0] != '\0'); /* out of range is reported */
    CHECK(gwr_layer_input(l, -1) == NULL);
    CHECK_EQ_INT(gwr_layer_num_outputs(l), 1);
    gwr_tensor *y = out0(l);
    if (!CHECK(y != NULL)) goto done;
    CHECK(gwr_layer_output(l, 1) == NULL);
    CHECK(gwr_layer_output(l, -1) == NULL);
    CHECK(gwr_tensor_name(y) != NULL && gwr_tensor_name(y)[0] != '\0');
    CHECK(gwr_network_find_tensor(net, gwr_tensor_name(y)) == y);
    CHECK(gwr_tensor_parent(y) == l);
    CHECK_EQ_INT(gwr_tensor_parent_output_index(y), 0);
    CHECK_EQ_INT(gwr_tensor_is_input(y), 0);
    CHECK(gwr_tensor_network(y) == net);
    CHECK_EQ_INT(gwr_tensor_dtype(y), GWR_UNDEFINED); /* add_layer leaves types undefined */
    CHECK_EQ_INT(gwr_tensor_rank(y), -1);
    CHECK_EQ_INT(gwr_tensor_num_users(y), 0);

    /* a layer reading a tensor twice is listed twice */
    CHECK_EQ_INT(gwr_tensor_num_users(x), 2);
    CHECK_EQ_INT(count_use(x, l, 0), 1);
    CHECK_EQ_INT(count_use(x, l, 1), 1);
    CHECK(uses_consistent(x));
    int slot = 1234;
    CHECK(gwr_tensor_user(x, 2, &slot) == NULL);
    CHECK(gwr_tensor_user(x, -1, &slot) == NULL);

    /* multiple outputs, some named */
    gwr_tensor *ins[1] = {x};
    const char *onames[3] = {"s0", NULL, "s2"};
    gwr_layer *sp = gwr_network_add_layer(net, "Split", "", "split", 1, ins, 3, onames);
    if (!CHECK(sp != NULL)) goto done;
    CHECK_EQ_INT(gwr_layer_index(sp), 1);
    CHECK_EQ_INT(gwr_layer_type_of(sp), GWR_LAYER_SPLIT);
    CHECK_EQ_INT(gwr_layer_ew_op(sp), GWR_EW_NONE);
    CHECK_EQ_INT(gwr_layer_num_outputs(sp), 3);
    CHECK_STR(gwr_tensor_name(gwr_layer_output(sp, 0)), "s0");
    CHECK_STR(gwr_tensor_name(gwr_layer_output(sp, 2)), "s2");
    gwr_tensor *s1 = gwr_layer_output(sp, 1);
    if (CHECK(s1 != NULL)) {
        CHECK(gwr_tensor_name(s1) != NULL && gwr_tensor_name(s1)[0] != '\0');
        CHECK(strcmp(gwr_tensor_name(s1), "s0") != 0 && strcmp(gwr_tensor_name(s1), "s2") != 0);
        CHECK_EQ_INT(gwr_tensor_parent_output_index(s1), 1);
        CHECK(gwr_tensor_parent(s1) == sp);
    }
    CHECK_EQ_INT(gwr_tensor_parent_output_index(gwr_layer_output(sp, 2)), 2);
    CHECK(gwr_network_find_tensor(net, "s2") == gwr_layer_output(sp, 2));
    CHECK_EQ_INT(gwr_tensor_num_users(x), 3);

    /* absent optional inputs */
    gwr_tensor *cins[3] = {x, NULL, NULL};
    gwr_layer *clip = gwr_network_add_layer(net, "Clip", "", "clip", 3, cins, 1, NULL);
    if (CHECK(clip != NULL)) {
        CHECK_EQ_INT(gwr_layer_num_inputs(clip), 3);
        CHECK(gwr_layer_input(clip, 0) == x);
        CHECK(gwr_layer_input(clip, 1) == NULL);
        CHECK(gwr_layer_input(clip, 2) == NULL);
        CHECK_EQ_INT(gwr_tensor_num_users(x), 4);
        CHECK_EQ_INT(gwr_layer_type_of(clip), GWR_LAYER_ACTIVATION);
    }
    /* a layer with no inputs */
    gwr_layer *rnd = gwr_network_add_layer(net, "RandomNormal", "", NULL, 0, NULL, 1, NULL);
    if (CHECK(rnd != NULL)) {
        CHECK_EQ_INT(gwr_layer_num_inputs(rnd), 0);
        CHECK_EQ_INT(gwr_layer_type_of(rnd), GWR_LAYER_RANDOM);
    }

    /* network order */
    CHECK_EQ_INT(gwr_network_num_layers(net), 4);
    CHECK(gwr_network_layer(net, 0) == l);
    CHECK(gwr_network_layer(net, 1) == sp);
    CHECK(gwr_network_layer(net, 4) == NULL);
    CHECK(gwr_network_layer(net, -1) == NULL);
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++)
        CHECK_EQ_INT(gwr_layer_index(gwr_network_layer(net, i)), i);

    /* doc strings */
    CHECK_STR(gwr_layer_doc(l), "");
    CHECK_OK(gwr_layer_set_doc(l, "adds x to itself"));
    CHECK_STR(gwr_layer_doc(l), "adds x to itself");
    CHECK_OK(gwr_layer_set_doc(l, "second"));
    CHECK_STR(gwr_layer_doc(l), "second");
    CHECK_STR(gwr_layer_doc(sp), "");

    /* bad arguments to add_layer: NULL, nothing added */
    int64_t before = gwr_network_num_layers(net);
    CHECK(gwr_network_add_layer(net, NULL, "", NULL, 1, ins, 1, NULL) == NULL);
    CHECK(gwr_network_add_layer(net, "Relu", "", NULL, -1, ins, 1, NULL) == NULL);
    CHECK(gwr_network_add_layer(net, "Relu", "", NULL, 1, NULL, 1, NULL) == NULL);
    CHECK(gwr_network_add_layer(net, "Relu", "", NULL, 1, ins, -1, NULL) == NULL);
    CHECK(gwr_network_add_layer(net, "Relu", "", "my_add", 1, ins, 1, NULL) == NULL); /* name taken */
    const char *dup_out[1] = {"x"};
    CHECK(gwr_network_add_layer(net, "Relu", "", NULL, 1, ins, 1, dup_out) == NULL); /* tensor name taken */
    CHECK_EQ_INT(gwr_network_num_layers(net), before);
    CHECK_EQ_INT(gwr_tensor_num_users(x), 4);
    CHECK(gwr_network_errmsg(net)[0] != '\0');
    CHECK_OK(gwr_network_verify(net));
done:
    gwr_network_free(net);
}

static int all_distinct(char **names, int n) {
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (!names[i] || !names[j] || strcmp(names[i], names[j]) == 0) return 0;
    return 1;
}

TEST(test_names_lookup_rename) {
    gwr_network *net = gwr_network_new("names");
    gwr_tensor *x = in_f32(net, "input_x");
    gwr_layer *l = lay1(net, "Relu", "my_relu", x);
    gwr_layer *l2 = lay1(net, "Relu", "other", x);
    if (!CHECK(x && l && l2)) goto done;
    CHECK(gwr_network_find_layer(net, "my_relu") == l);
    CHECK(gwr_network_find_layer(net, "other") == l2);
    CHECK(gwr_network_find_layer(net, "nope") == NULL);
    CHECK(gwr_network_find_tensor(net, "input_x") == x);
    CHECK(gwr_network_find_tensor(net, "nope") == NULL);
    CHECK(gwr_network_lookup_tensor(net, "input_x") == x);

    /* rename a layer */
    CHECK_OK(gwr_layer_set_name(l, "renamed"));
    CHECK_STR(gwr_layer_name(l), "renamed");
    CHECK(gwr_network_find_layer(net, "my_relu") == NULL);
    CHECK(gwr_network_find_layer(net, "renamed") == l);
    CHECK_EQ_INT(gwr_layer_set_name(l2, "renamed"), GWR_ERR_DUPLICATE);
    CHECK_CONTAINS(gwr_network_errmsg(net), "renamed");
    CHECK_STR(gwr_layer_name(l2), "other");
    CHECK(gwr_network_find_layer(net, "other") == l2);
    CHECK(gwr_network_find_layer(net, "renamed") == l);
    CHECK(gwr_layer_set_name(l2, NULL) != GWR_OK);
    CHECK_STR(gwr_layer_name(l2), "other");

    /* rename a tensor */
    gwr_tensor *y = out0(l);
    CHECK_OK(gwr_tensor_set_name(y, "relu_out"));
    CHECK_STR(gwr_tensor_name(y), "relu_out");
    CHECK(gwr_network_find_tensor(net, "relu_out") == y);
    CHECK_EQ_INT(gwr_tensor_set_name(out0(l2), "relu_out"), GWR_ERR_DUPLICATE);
    CHECK_CONTAINS(gwr_network_errmsg(net), "relu_out");
    CHECK_EQ_INT(gwr_tensor_set_name(y, "input_x"), GWR_ERR_DUPLICATE);
    CHECK_STR(gwr_tensor_name(y), "relu_out");
    CHECK(gwr_network_find_tensor(net, "input_x") == x);
    CHECK_OK(gwr_tensor_set_name(x, "renamed_input"));
    CHECK(gwr_network_find_tensor(net, "input_x") == NULL);
    CHECK(gwr_network_find_tensor(net, "renamed_input") == x);
    CHECK(gwr_network_input(net, 0) == x);
    CHECK_OK(gwr_network_verify(net));

    /* a given output name equal to the name made for an earlier output of
     * the same layer ("sp" for output 0, "sp:1" for output 1): refused,
     * and nothing of the layer is left behind */
    {
        int64_t before = gwr_network_num_layers(net);
        gwr_tensor *sins[1] = {x};
        const char *clash0[2] = {NULL, "sp"}, *clash1[3] = {NULL, NULL, "sp:1"};
        CHECK(gwr_network_add_layer(net, "Split", "", "sp", 1, sins, 2, clash0) == NULL);
        CHECK_CONTAINS(gwr_network_errmsg(net), "'sp'");
        CHECK(gwr_network_add_layer(net, "Split", "", "sp", 1, sins, 3, clash1) == NULL);
        CHECK_CONTAINS(gwr_network_errmsg(net), "'sp:1'");
        CHECK_EQ_INT(gwr_network_num_layers(net), before);
        CHECK(gwr_network_find_tensor(net, "sp") == NULL);
        CHECK(gwr_network_find_tensor(net, "sp:1") == NULL);
        CHECK(gwr_network_find_layer(net, "sp") == NULL);
        const char *fine[2] = {NULL, "sp_second"};
        gwr_layer *sp = gwr_network_add_layer(net, "Split", "", "sp", 1, sins, 2, fine);
        if (CHECK(sp != NULL)) {
            CHECK_STR(gwr_tensor_name(gwr_layer_output(sp, 0)), "sp");
            CHECK_STR(gwr_tensor_name(gwr_layer_output(sp, 1)), "sp_second");
        }
        CHECK_OK(gwr_network_verify(net));
    }

    /* auto-generated names: unique, even against names a user took that
     * look exactly like generated ones */
    enum { N = 60 };
    char *lnames[3 * N] = {0}, *tnames[3 * N] = {0};
    gwr_network *a = gwr_network_new("a");
    gwr_tensor *ax = in_f32(a, "x");
    for (int i = 0; i < N; i++) {
        gwr_layer *al = lay1(a, i % 2 ? "Relu" : "Add", NULL, ax);
        if (!CHECK(al != NULL)) goto free_a;
        lnames[i] = strdup(gwr_layer_name(al));
        tnames[i] = strdup(gwr_tensor_name(out0(al)));
    }
    CHECK(all_distinct(lnames, N));
    CHECK(all_distinct(tnames, N));
    {
        gwr_network *b = gwr_network_new("b");
        gwr_tensor *bx = in_f32(b, "x");
        for (int i = 0; i < N; i++) { /* take the names `a` generated */
            gwr_layer *bl = lay1n(b, "Relu", lnames[i], bx, tnames[i]);
            if (!CHECK(bl != NULL)) break;
            lnames[N + i] = strdup(gwr_layer_name(bl));
            tnames[N + i] = strdup(gwr_tensor_name(out0(bl)));
        }
        for (int i = 0; i < N; i++) { /* then generate more of the same ops */
            gwr_layer *bl = lay1(b, i % 2 ? "Relu" : "Add", NULL, bx);
            if (!CHECK(bl != NULL)) break;
            lnames[2 * N + i] = strdup(gwr_layer_name(bl));
            tnames[2 * N + i] = strdup(gwr_tensor_name(out0(bl)));
            CHECK(gwr_network_find_layer(b, gwr_layer_name(bl)) == bl);
            CHECK(gwr_network_find_tensor(b, gwr_tensor_name(out0(bl))) == out0(bl));
        }
        CHECK(all_distinct(lnames + N, 2 * N));
        CHECK(all_distinct(tnames + N, 2 * N));
        CHECK_OK(gwr_network_verify(b));
        gwr_network_free(b);
    }
free_a:
    for (int i = 0; i < 3 * N; i++) {
        free(lnames[i]);
        free(tnames[i]);
    }
    gwr_network_free(a);
done:
    gwr_network_free(net);
}

/* ---- the op table ---------------------------------------------------------- */

TEST(test_op_table) {
    gwr_op_id add = gwr_op_lookup("", "Add");
    CHECK_EQ_INT(add, GWR_OP_Add);
    CHECK_EQ_INT(gwr_op_lookup("ai.onnx", "Add"), GWR_OP_Add);
    const gwr_op_info *ai = gwr_op_info_get(add);
    if (CHECK(ai != NULL)) {
        CHECK_EQ_INT(ai->id, GWR_OP_Add);
        CHECK_STR(ai->name, "Add");
        CHECK_STR(ai->domain, "");
        CHECK_EQ_INT(ai->layer_type, GWR_LAYER_ELEMENTWISE);
        CHECK_EQ_INT(ai->ew_op, GWR_EW_SUM);
        CHECK(ai->flags & GWR_OPF_COMMUTATIVE);
        CHECK_EQ_INT(ai->min_inputs, 2);
        CHECK_EQ_INT(ai->max_inputs, 2);
    }
    const gwr_op_info *si = gwr_op_info_get(gwr_op_lookup("", "Sub"));
    if (CHECK(si != NULL)) {
        CHECK_EQ_INT(si->ew_op, GWR_EW_SUB);
        CHECK(!(si->flags & GWR_OPF_COMMUTATIVE));
    }
    gwr_op_id lc = gwr_op_lookup("ai.onnx.ml", "LinearClassifier");
    CHECK_EQ_INT(lc, GWR_OP_ML_LinearClassifier);
    const gwr_op_info *li = gwr_op_info_get(lc);
    if (CHECK(li != NULL)) {
        CHECK_EQ_INT(li->layer_type, GWR_LAYER_ML);
        CHECK_STR(li->domain, "ai.onnx.ml");
        CHECK_STR(li->name, "LinearClassifier");
        CHECK_EQ_INT(li->ew_op, GWR_EW_NONE);
    }
    CHECK_EQ_INT(gwr_op_lookup("com.acme", "Foo"), GWR_OP_CUSTOM);
    CHECK_EQ_INT(gwr_op_lookup("com.acme", "Add"), GWR_OP_CUSTOM);
    CHECK_EQ_INT(gwr_op_lookup("", "add"), GWR_OP_CUSTOM); /* case matters */
    CHECK_EQ_INT(gwr_op_lookup("", "LinearClassifier"), GWR_OP_CUSTOM);
    CHECK_EQ_INT(gwr_op_lookup("", NULL), GWR_OP_CUSTOM);
    CHECK(gwr_op_info_get(GWR_OP_CUSTOM) == NULL);
    CHECK(gwr_op_info_get(GWR_OP_COUNT) == NULL);
    CHECK(gwr_op_info_get((gwr_op_id)-1) == NULL);

    /* the whole table: ids, lookups and columns agree */
    int bad = 0;
    for (int id = 1; id < GWR_OP_COUNT; id++) {
        const gwr_op_info *oi = gwr_op_info_get((gwr_op_id)id);
        if (!oi || (int)oi->id != id || !oi->name || !oi->domain) { bad++; continue; }
        if ((int)gwr_op_lookup(oi->domain, oi->name) != id) bad++;
        if (oi->domain[0] == '\0' && (int)gwr_op_lookup("ai.onnx", oi->name) != id) bad++;
        if (oi->layer_type < 0 || oi->layer_type >= GWR_LAYER_TYPE_COUNT) bad++;
        if (oi->layer_type != GWR_LAYER_ELEMENTWISE && oi->ew_op != GWR_EW_NONE) bad++;
        if (oi->layer_type == GWR_LAYER_ELEMENTWISE && oi->ew_op == GWR_EW_NONE) bad++;
        if (!!(oi->flags & GWR_OPF_VARIADIC) != (oi->max_inputs == -1)) bad++;
        if (oi->max_inputs != -1 && oi->max_inputs < oi->min_inputs) bad++;
        if (oi->since_version < 1) bad++;
        if (bad) {
            fprintf(stderr, "op table entry %d (%s) inconsistent\n", id, oi->name);
            break;
        }
    }
    CHECK_EQ_INT(bad, 0);

    /* class and element-wise names */
    CHECK_STR(gwr_layer_type_name(GWR_LAYER_ELEMENTWISE), "ELEMENTWISE");
    CHECK_STR(gwr_layer_type_name(GWR_LAYER_PLUGIN), "PLUGIN");
    CHECK_STR(gwr_layer_type_name(GWR_LAYER_ML), "ML");
    CHECK_STR(gwr_layer_type_name(GWR_LAYER_MATRIX_MULTIPLY), "MATRIX_MULTIPLY");
    for (int t = 0; t < GWR_LAYER_TYPE_COUNT; t++) {
        const char *n = gwr_layer_type_name((gwr_layer_type)t);
        CHECK(n != NULL && n[0] != '\0');
    }
    CHECK_STR(gwr_ew_op_name(GWR_EW_SUM), "SUM");
    CHECK_STR(gwr_ew_op_name(GWR_EW_NONE), "NONE");
    CHECK_STR(gwr_ew_op_name(GWR_EW_MEAN), "MEAN");
    CHECK_STR(gwr_ew_op_name(GWR_EW_GREATER_EQUAL), "GREATER_EQUAL");
    for (int e = 0; e < GWR_EW_OP_COUNT; e++) CHECK(gwr_ew_op_name((gwr_ew_op)e) != NULL);

    /* layers: a known op, an ML op, an unknown op (PLUGIN with its domain) */
    gwr_network *net = gwr_network_new("ops");
    gwr_tensor *x = in_f32(net, "x");
    gwr_tensor *ins[1] = {x};
    gwr_layer *ml = gwr_network_add_layer(net, "LinearClassifier", "ai.onnx.ml", NULL, 1, ins, 2, NULL);
    if (CHECK(ml != NULL)) {
        CHECK_EQ_INT(gwr_layer_type_of(ml), GWR_LAYER_ML);
        CHECK_EQ_INT(gwr_layer_op_id(ml), GWR_OP_ML_LinearClassifier);
        CHECK_STR(gwr_layer_domain(ml), "ai.onnx.ml");
        CHECK_STR(gwr_layer_op(ml), "LinearClassifier");
    }
    gwr_layer *pl = gwr_network_add_layer(net, "Foo", "com.acme", "foo", 1, ins, 2, NULL);
    if (CHECK(pl != NULL)) {
        CHECK_EQ_INT(gwr_layer_type_of(pl), GWR_LAYER_PLUGIN);
        CHECK_EQ_INT(gwr_layer_op_id(pl), GWR_OP_CUSTOM);
        CHECK_EQ_INT(gwr_layer_ew_op(pl), GWR_EW_NONE);
        CHECK_STR(gwr_layer_op(pl), "Foo");
        CHECK_STR(gwr_layer_domain(pl), "com.acme");
        CHECK_EQ_INT(gwr_layer_num_outputs(pl), 2);
    }
    gwr_layer *pa = gwr_network_add_layer(net, "Add", "com.acme", NULL, 1, ins, 1, NULL);
    if (CHECK(pa != NULL)) {
        CHECK_EQ_INT(gwr_layer_type_of(pa), GWR_LAYER_PLUGIN);
        CHECK_EQ_INT(gwr_layer_op_id(pa), GWR_OP_CUSTOM);
    }
    gwr_layer *mm = gwr_network_add_layer(net, "MatMul", "", NULL, 1, ins, 1, NULL);
    if (CHECK(mm != NULL)) {
        CHECK_EQ_INT(gwr_layer_type_of(mm), GWR_LAYER_MATRIX_MULTIPLY);
        CHECK_EQ_INT(gwr_layer_op_id(mm), GWR_OP_MatMul);
    }
    CHECK_OK(gwr_network_verify(net));
    gwr_network_free(net);
}

/* ---- set_input and append_input -------------------------------------------- */

TEST(test_set_input) {
    gwr_network *net = gwr_network_new("si");
    gwr_tensor *x = in_f32(net, "x"), *y = in_f32(net, "y"), *z = in_f32(net, "z");
    gwr_layer *l = lay2(net, "Add", "l", x, y);
    if (!CHECK(x && y && z && l)) goto done;
    CHECK_OK(gwr_layer_set_input(l, 1, z));
    CHECK(gwr_layer_input(l, 1) == z);
    CHECK(gwr_layer_input(l, 0) == x);
    CHECK_EQ_INT(gwr_tensor_num_users(y), 0);
    CHECK_EQ_INT(gwr_tensor_num_users(z), 1);
    CHECK_EQ_INT(count_use(z, l, 1), 1);
    /* NULL: absent */
    CHECK_OK(gwr_layer_set_input(l, 1, NULL));
    CHECK(gwr_layer_input(l, 1) == NULL);
    CHECK_EQ_INT(gwr_layer_num_inputs(l), 2);
    CHECK_EQ_INT(gwr_tensor_num_users(z), 0);
    CHECK_OK(gwr_layer_set_input(l, 1, y));
    CHECK_EQ_INT(count_use(y, l, 1), 1);
    /* reading the same tensor in both slots */
    CHECK_OK(gwr_layer_set_input(l, 0, y));
    CHECK_EQ_INT(gwr_tensor_num_users(y), 2);
    CHECK_EQ_INT(gwr_tensor_num_users(x), 0);
    CHECK(uses_consistent(y));
    CHECK_OK(gwr_layer_set_input(l, 0, x));
    /* out-of-range slots */
    CHECK_EQ_INT(gwr_layer_set_input(l, 2, z), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_layer_set_input(l, -1, z), GWR_ERR_INVALID_ARG);
    CHECK(gwr_network_errmsg(net)[0] != '\0');
    CHECK_EQ_INT(gwr_tensor_num_users(z), 0);
    CHECK_EQ_INT(gwr_layer_num_inputs(l), 2);

    /* cycles are refused and nothing changes */
    gwr_layer *la = lay1(net, "Relu", "la", x);
    gwr_layer *lb = lay1(net, "Relu", "lb", out0(la));
    gwr_layer *lc = lay2(net, "Add", "lc", out0(lb), y);
    if (!CHECK(la && lb && lc)) goto done;
    int64_t xu = gwr_tensor_num_users(x);
    CHECK_EQ_INT(gwr_layer_set_input(la, 0, out0(lc)), GWR_ERR_CYCLE);
    CHECK(gwr_layer_input(la, 0) == x);
    CHECK_EQ_INT(gwr_tensor_num_users(out0(lc)), 0);
    CHECK_EQ_INT(gwr_tensor_num_users(x), xu);
    CHECK_EQ_INT(gwr_layer_set_input(la, 0, out0(la)), GWR_ERR_CYCLE); /* self loop */
    CHECK(gwr_layer_input(la, 0) == x);
    CHECK_EQ_INT(gwr_layer_set_input(lb, 0, out0(lc)), GWR_ERR_CYCLE);
    CHECK(gwr_layer_input(lb, 0) == out0(la));
    CHECK(gwr_network_errmsg(net)[0] != '\0');
    CHECK_OK(gwr_network_verify(net));

    /* acyclic but against network order: fine */
    gwr_layer *ld = lay1(net, "Relu", "ld", y);
    if (!CHECK(ld != NULL)) goto done;
    CHECK_OK(gwr_layer_set_input(la, 0, out0(ld)));
    CHECK(gwr_layer_input(la, 0) == out0(ld));
    CHECK_EQ_INT(count_use(out0(ld), la, 0), 1);
    CHECK_OK(gwr_network_verify(net));
    /* and now ld -> la -> lb -> lc: ld may not read lc's output */
    CHECK_EQ_INT(gwr_layer_set_input(ld, 0, out0(lc)), GWR_ERR_CYCLE);
    CHECK(gwr_layer_input(ld, 0) == y);

    /* a tensor of another network is refused */
    gwr_network *other = gwr_network_new("other");
    gwr_tensor *ox = in_f32(other, "ox");
    CHECK(gwr_layer_set_input(l, 0, ox) != GWR_OK);
    CHECK(gwr_layer_input(l, 0) == x);
    CHECK_EQ_INT(gwr_tensor_num_users(ox), 0);
    CHECK(gwr_layer_append_input(l, ox) != GWR_OK);
    CHECK_EQ_INT(gwr_layer_num_inputs(l), 2);

    /* append_input */
    gwr_tensor *cins[1] = {x};
    gwr_layer *cat = gwr_network_add_layer(net, "Concat", "", "cat", 1, cins, 1, NULL);
    if (CHECK(cat != NULL)) {
        CHECK_OK(gwr_layer_append_input(cat, y));
        CHECK_OK(gwr_layer_append_input(cat, y));
        CHECK_EQ_INT(gwr_layer_num_inputs(cat), 3);
        CHECK(gwr_layer_input(cat, 1) == y && gwr_layer_input(cat, 2) == y);
        CHECK_EQ_INT(count_use(y, cat, 1), 1);
        CHECK_EQ_INT(count_use(y, cat, 2), 1);
        for (int i = 0; i < 20; i++) CHECK_OK(gwr_layer_append_input(cat, z));
        CHECK_EQ_INT(gwr_layer_num_inputs(cat), 23);
        CHECK_EQ_INT(gwr_tensor_num_users(z), 20);
        CHECK(uses_consistent(z));
        CHECK_EQ_INT(gwr_layer_append_input(cat, out0(cat)), GWR_ERR_CYCLE);
        CHECK_EQ_INT(gwr_layer_num_inputs(cat), 23);
    }
    CHECK_OK(gwr_network_verify(net));
    gwr_network_free(other);
done:
    gwr_network_free(net);
}

/* ---- replace_all_uses_with ------------------------------------------------- */

TEST(test_rauw_users) {
    gwr_network *net = gwr_network_new("rauw");
    gwr_tensor *x = in_f32(net, "x"), *w = in_f32(net, "w");
    gwr_layer *ly = lay1(net, "Sigmoid", "ly", x);
    gwr_layer *lz = lay1(net, "Tanh", "lz", x);
    if (!CHECK(x && w && ly && lz)) goto done;
    gwr_tensor *y = out0(ly), *z = out0(lz);
    set_f32(y);
    set_f32(z);
    gwr_layer *u1 = lay1(net, "Relu", "u1", y);
    gwr_layer *u2 = lay2(net, "Add", "u2", w, y);
    gwr_layer *u3 = lay2(net, "Mul", "u3", y, y);
    if (!CHECK(u1 && u2 && u3)) goto done;
    CHECK_EQ_INT(gwr_tensor_num_users(y), 4);
    CHECK_OK(gwr_tensor_replace_all_uses_with(y, z));
    CHECK_EQ_INT(gwr_tensor_num_users(y), 0);
    CHECK_EQ_INT(gwr_tensor_num_users(z), 4);
    CHECK(gwr_layer_input(u1, 0) == z);
    CHECK(gwr_layer_input(u2, 0) == w);
    CHECK(gwr_layer_input(u2, 1) == z);
    CHECK(gwr_layer_input(u3, 0) == z && gwr_layer_input(u3, 1) == z);
    CHECK_EQ_INT(count_use(z, u3, 0) + count_use(z, u3, 1), 2);
    CHECK(uses_consistent(z));
    CHECK_EQ_INT(gwr_tensor_num_users(w), 1);
    CHECK_OK(gwr_network_verify(net));
    /* and back */
    CHECK_OK(gwr_tensor_replace_all_uses_with(z, y));
    CHECK_EQ_INT(gwr_tensor_num_users(y), 4);
    CHECK_EQ_INT(gwr_tensor_num_users(z), 0);
    CHECK(uses_consistent(y));
    /* a tensor without users: nothing to do, OK */
    CHECK_OK(gwr_tensor_replace_all_uses_with(z, y));
    CHECK_EQ_INT(gwr_tensor_num_users(y), 4);
    /* a graph input as the old tensor */
    CHECK_OK(gwr_tensor_replace_all_uses_with(w, y));
    CHECK(gwr_layer_input(u2, 0) == y);
    CHECK_EQ_INT(gwr_tensor_num_users(w), 0);
    CHECK_EQ_INT(gwr_tensor_num_users(y), 5);
    CHECK_OK(gwr_network_verify(net));
done:
    gwr_network_free(net);
}

static void output_names(const gwr_network *net, char out[][32], int max) {
    for (int i = 0; i < max && i < gwr_network_num_outputs(net); i++) {
        const char *n = gwr_tensor_name(gwr_network_output(net, i));
        snprintf(out[i], 32, "%s", n ? n : "(null)");
    }
}

TEST(test_rauw_outputs) {
    /* A: old is an output; new takes its place and name, they swap names */
    {
        gwr_network *net = gwr_network_new("outA");
        gwr_tensor *x = in_f32(net, "x");
        gwr_layer *ly = lay1n(net, "Relu", "ly", x, "out");
        gwr_layer *lz = lay1n(net, "Sigmoid", "lz", x, "zname");
        if (!CHECK(x && ly && lz)) { gwr_network_free(net); return; }
        gwr_tensor *y = out0(ly), *z = out0(lz);
        set_f32(y);
        set_f32(z);
        gwr_layer *u = lay1(net, "Neg", "u", y);
        CHECK_OK(gwr_network_mark_output(net, y));
        CHECK_OK(gwr_tensor_replace_all_uses_with(y, z));
        CHECK_EQ_INT(gwr_network_num_outputs(net), 1);
        CHECK(gwr_network_output(net, 0) == z);
        CHECK_STR(gwr_tensor_name(z), "out");
        CHECK_STR(gwr_tensor_name(y), "zname");
        CHECK_EQ_INT(gwr_tensor_output_index(z), 0);
        CHECK_EQ_INT(gwr_tensor_output_index(y), -1);
        CHECK(gwr_network_find_tensor(net, "out") == z);
        CHECK(gwr_network_find_tensor(net, "zname") == y);
        CHECK(gwr_layer_input(u, 0) == z);
        CHECK_EQ_INT(gwr_network_num_layers(net), 3); /* no Identity needed */
        CHECK_OK(gwr_network_verify(net));
        gwr_network_free(net);
    }
    /* B: new is a graph input: an Identity named after the output */
    {
        gwr_network *net = gwr_network_new("outB");
        gwr_tensor *x = in_f32(net, "x");
        gwr_layer *ly = lay1n(net, "Relu", "ly", x, "out");
        if (!CHECK(x && ly)) { gwr_network_free(net); return; }
        gwr_tensor *y = out0(ly);
        set_f32(y);
        gwr_layer *u = lay1(net, "Neg", "u", y);
        CHECK_OK(gwr_network_mark_output(net, y));
        CHECK_OK(gwr_tensor_replace_all_uses_with(y, x));
        CHECK_EQ_INT(gwr_network_num_outputs(net), 1);
        gwr_tensor *o = gwr_network_output(net, 0);
        CHECK_STR(gwr_tensor_name(o), "out");
        CHECK_STR(gwr_tensor_name(x), "x");
        CHECK_EQ_INT(gwr_tensor_is_input(x), 1);
        CHECK(gwr_network_input(net, 0) == x);
        CHECK(o != y);
        CHECK(o != x);
        gwr_layer *id = gwr_tensor_parent(o);
        if (CHECK(id != NULL)) {
            CHECK_STR(gwr_layer_op(id), "Identity");
            CHECK_EQ_INT(gwr_layer_type_of(id), GWR_LAYER_IDENTITY);
            CHECK(gwr_layer_input(id, 0) == x);
        }
        CHECK(gwr_network_find_tensor(net, "out") == o);
        CHECK_EQ_INT(gwr_tensor_output_index(y), -1);
        CHECK(gwr_layer_input(u, 0) == x);
        CHECK_OK(gwr_network_verify(net));
        gwr_network_free(net);
    }
    /* B2: the same with several users to move onto a graph input that is
     * already read: the Identity's use and the moved ones all fit */
    {
        gwr_network *net = gwr_network_new("outB2");
        gwr_tensor *x = in_f32(net, "x");
        gwr_layer *ly = lay1n(net, "Relu", "ly", x, "out");
        if (!CHECK(x && ly)) { gwr_network_free(net); return; }
        gwr_tensor *y = out0(ly);
        set_f32(y);
        gwr_layer *us[3]; /* 1 use of x + 3 to move: exactly a power of two */
        for (int i = 0; i < 3; i++) us[i] = lay1(net, "Neg", NULL, y);
        CHECK_OK(gwr_network_mark_output(net, y));
        CHECK_EQ_INT(gwr_tensor_num_users(x), 1);
        CHECK_OK(gwr_tensor_replace_all_uses_with(y, x));
        CHECK_EQ_INT(gwr_tensor_num_users(x), 1 + 1 + 3); /* ly, the Identity, the moved users */
        CHECK(uses_consistent(x));
        for (int i = 0; i < 3; i++) CHECK(gwr_layer_input(us[i], 0) == x);
        CHECK_STR(gwr_tensor_name(gwr_network_output(net, 0)), "out");
        CHECK_OK(gwr_network_verify(net));
        gwr_network_free(net);
    }
    /* C: new is already an output: an Identity keeps the old output's name */
    {
        gwr_network *net = gwr_network_new("outC");
        gwr_tensor *x = in_f32(net, "x");
        gwr_layer *ly = lay1n(net, "Relu", "ly", x, "out1");
        gwr_layer *lz = lay1n(net, "Sigmoid", "lz", x, "out2");
        if (!CHECK(x && ly && lz)) { gwr_network_free(net); return; }
        gwr_tensor *y = out0(ly), *z = out0(lz);
        set_f32(y);
        set_f32(z);
        CHECK_OK(gwr_network_mark_output(net, y));
        CHECK_OK(gwr_network_mark_output(net, z));
        CHECK_OK(gwr_tensor_replace_all_uses_with(y, z));
        CHECK_EQ_INT(gwr_network_num_outputs(net), 2);
        char names[2][32] = {"", ""};
        output_names(net, names, 2);
        CHECK_STR(names[0], "out1");
        CHECK_STR(names[1], "out2");
        CHECK(gwr_network_output(net, 1) == z);
        gwr_tensor *o = gwr_network_output(net, 0);
        gwr_layer *id = gwr_tensor_parent(o);
        if (CHECK(id != NULL)) {
            CHECK_STR(gwr_layer_op(id), "Identity");
            CHECK(gwr_layer_input(id, 0) == z);
        }
        CHECK_OK(gwr_network_verify(net));
        gwr_network_free(net);
    }
    /* D: dtypes that differ are refused; unknown dtypes are not */
    {
        gwr_network *net = gwr_network_new("outD");
        gwr_tensor *x = in_f32(net, "x");
        gwr_layer *ly = lay1n(net, "Relu", "ly", x, "out");
        gwr_layer *lk = lay1n(net, "Cast", "lk", x, "k");
        gwr_layer *lq = lay1n(net, "Exp", "lq", x, "q");
        if (!CHECK(x && ly && lk && lq)) { gwr_network_free(net); return; }
        gwr_tensor *y = out0(ly), *k = out0(lk), *q = out0(lq);
        set_f32(y);
        gwr_tensor_set_type(k, GWR_INT64, 2, D24);
        gwr_layer *u = lay1(net, "Neg", "u", y);
        CHECK_OK(gwr_network_mark_output(net, y));
        CHECK_EQ_INT(gwr_tensor_replace_all_uses_with(y, k), GWR_ERR_TYPE);
        CHECK(gwr_network_errmsg(net)[0] != '\0');
        CHECK(gwr_layer_input(u, 0) == y);
        CHECK_EQ_INT(gwr_tensor_num_users(y), 1);
        CHECK_EQ_INT(gwr_tensor_num_users(k), 0);
        CHECK(gwr_network_output(net, 0) == y);
        CHECK_STR(gwr_tensor_name(y), "out");
        CHECK_STR(gwr_tensor_name(k), "k");
        CHECK_EQ_INT(gwr_network_num_layers(net), 4);
        CHECK_EQ_INT(gwr_tensor_replace_all_uses_except(y, k, NULL), GWR_ERR_TYPE);
        CHECK(gwr_layer_input(u, 0) == y);
        /* q has an undefined dtype: allowed */
        CHECK_OK(gwr_tensor_replace_all_uses_with(y, q));
        CHECK(gwr_layer_input(u, 0) == q);
        CHECK_STR(gwr_tensor_name(q), "out");
        CHECK_OK(gwr_network_verify(net));
        gwr_network_free(net);
    }
    /* E: a cycle is refused, nothing changes */
    {
        gwr_network *net = gwr_network_new("outE");
        gwr_tensor *x = in_f32(net, "x");
        gwr_layer *ly = lay1n(net, "Relu", "ly", x, "out");
        if (!CHECK(x && ly)) { gwr_network_free(net); return; }
        gwr_tensor *y = out0(ly);
        gwr_layer *u = lay1n(net, "Neg", "u", y, "v");
        gwr_layer *u2 = lay1n(net, "Exp", "u2", out0(u), "v2");
        if (!CHECK(u && u2)) { gwr_network_free(net); return; }
        set_f32(y);
        set_f32(out0(u));
        set_f32(out0(u2));
        CHECK_OK(gwr_network_mark_output(net, y));
        CHECK_EQ_INT(gwr_tensor_replace_all_uses_with(y, out0(u2)), GWR_ERR_CYCLE);
        CHECK_EQ_INT(gwr_tensor_replace_all_uses_with(y, out0(u)), GWR_ERR_CYCLE);
        CHECK(gwr_layer_input(u, 0) == y);
        CHECK_EQ_INT(gwr_tensor_num_users(y), 1);
        CHECK_EQ_INT(gwr_tensor_num_users(out0(u2)), 0);
        CHECK(gwr_network_output(net, 0) == y);
        CHECK_STR(gwr_tensor_name(y), "out");
        CHECK_STR(gwr_tensor_name(out0(u2)), "v2");
        CHECK_EQ_INT(gwr_network_num_layers(net), 3);
        CHECK_EQ_INT(gwr_network_num_outputs(net), 1);
        CHECK(gwr_network_errmsg(net)[0] != '\0');
        CHECK_OK(gwr_network_verify(net));
        gwr_network_free(net);
    }
    /* G: auto-generated names (a layer's first output may be named like the
     * layer): the output name survives the swap and the pruning of the old
     * producer, and again through an Identity */
    {
        gwr_network *net = gwr_network_new("outG");
        gwr_tensor *x = in_f32(net, "x");
        gwr_layer *la = lay1(net, "Relu", NULL, x);
        gwr_layer *lb = lay1(net, "Neg", NULL, x);
        gwr_layer *lc = lay1(net, "Exp", NULL, x);
        if (!CHECK(x && la && lb && lc)) { gwr_network_free(net); return; }
        char name[64];
        snprintf(name, sizeof name, "%s", gwr_tensor_name(out0(la)));
        CHECK_OK(gwr_network_mark_output(net, out0(la)));
        CHECK_OK(gwr_network_mark_output(net, out0(lc)));
        CHECK_OK(gwr_layer_set_name(la, "renamed_once"));
        CHECK_OK(gwr_layer_set_name(la, "renamed_twice"));
        CHECK_STR(gwr_tensor_name(out0(la)), name); /* renaming a layer leaves its outputs alone */
        CHECK_OK(gwr_tensor_replace_all_uses_with(out0(la), out0(lb)));
        int64_t n = -1;
        CHECK_OK(gwr_network_prune(net, &n));
        CHECK_EQ_INT(n, 1); /* la */
        CHECK_STR(gwr_tensor_name(gwr_network_output(net, 0)), name);
        CHECK(gwr_network_find_tensor(net, name) == gwr_network_output(net, 0));
        CHECK_OK(gwr_network_verify(net));
        /* now through an Identity: lb's output (named `name`) replaced by
         * the other output; then the Identity's output by lb's again */
        CHECK_OK(gwr_tensor_replace_all_uses_with(out0(lb), out0(lc)));
        gwr_tensor *o = gwr_network_output(net, 0);
        CHECK_STR(gwr_tensor_name(o), name);
        CHECK_OK(gwr_network_prune(net, &n));
        CHECK_EQ_INT(n, 1); /* lb */
        CHECK_STR(gwr_tensor_name(gwr_network_output(net, 0)), name);
        gwr_layer *ld = lay1(net, "Abs", NULL, x);
        if (CHECK(ld != NULL)) {
            CHECK_OK(gwr_tensor_replace_all_uses_with(gwr_network_output(net, 0), out0(ld)));
            CHECK_OK(gwr_network_prune(net, &n));
            CHECK_EQ_INT(n, 1); /* the Identity */
            CHECK_STR(gwr_tensor_name(gwr_network_output(net, 0)), name);
            CHECK(gwr_network_output(net, 0) == out0(ld));
        }
        CHECK_OK(gwr_network_verify(net));
        gwr_network_free(net);
    }
    /* F: out of scope (another network, or a subgraph's own tensor) */
    {
        gwr_network *net = gwr_network_new("outF");
        gwr_network *other = gwr_network_new("otherF");
        gwr_tensor *x = in_f32(net, "x");
        gwr_tensor *ox = in_f32(other, "ox");
        gwr_layer *ly = lay1(net, "Relu", "ly", x);
        if (!CHECK(x && ox && ly)) { gwr_network_free(net); gwr_network_free(other); return; }
        gwr_layer *u = lay1(net, "Neg", "u", out0(ly));
        CHECK(gwr_tensor_replace_all_uses_with(out0(ly), ox) != GWR_OK);
        CHECK(gwr_layer_input(u, 0) == out0(ly));
        CHECK_EQ_INT(gwr_tensor_num_users(ox), 0);
        gwr_network *sub = gwr_network_new_subgraph(net, "sub");
        gwr_layer *inner = lay1(sub, "Relu", "inner", x);
        if (CHECK(inner != NULL)) {
            CHECK(gwr_tensor_replace_all_uses_with(out0(ly), out0(inner)) != GWR_OK);
            CHECK(gwr_layer_input(u, 0) == out0(ly));
            CHECK_EQ_INT(gwr_tensor_num_users(out0(inner)), 0);
            /* x is read by ly itself: replacing x by ly's output is a cycle,
             * even though the inner user alone would be fine */
            CHECK_EQ_INT(gwr_tensor_replace_all_uses_with(x, out0(ly)), GWR_ERR_CYCLE);
            CHECK(gwr_layer_input(inner, 0) == x); /* x feeds ly: refused */
        }
        CHECK_OK(gwr_network_verify(net));
        gwr_network_free(sub);
        gwr_network_free(net);
        gwr_network_free(other);
    }
}

TEST(test_rauw_subgraph_users) {
    gwr_network *net = gwr_network_new("rsub");
    gwr_tensor *x = in_f32(net, "x"), *x2 = in_f32(net, "x2");
    gwr_layer *lt = lay1(net, "Relu", "lt", x);
    if (!CHECK(x && x2 && lt)) goto done;
    gwr_tensor *t = out0(lt);
    set_f32(t);
    gwr_network *sub = gwr_network_new_subgraph(net, "sub");
    gwr_layer *inner = lay1(sub, "Neg", "inner", t);
    if (!CHECK(sub && inner)) goto done;
    CHECK_EQ_INT(gwr_tensor_num_users(t), 1);
    CHECK_EQ_INT(count_use(t, inner, 0), 1);
    CHECK_OK(gwr_tensor_replace_all_uses_with(t, x2));
    CHECK(gwr_layer_input(inner, 0) == x2);
    CHECK_EQ_INT(count_use(x2, inner, 0), 1);
    CHECK_EQ_INT(gwr_tensor_num_users(t), 0);
    CHECK_OK(gwr_layer_set_input(inner, 0, t));
    CHECK_EQ_INT(count_use(t, inner, 0), 1);
    CHECK_EQ_INT(gwr_tensor_num_users(x2), 0);
    CHECK_OK(gwr_network_verify(sub));
    CHECK_OK(gwr_network_verify(net));
    gwr_network_free(sub);
    CHECK_EQ_INT(gwr_tensor_num_users(t), 0); /* freeing the subgraph drops its uses */
    CHECK_OK(gwr_network_verify(net));
done:
    gwr_network_free(net);
}

TEST(test_rauw_except) {
    gwr_network *net = gwr_network_new("except");
    gwr_tensor *x = in_f32(net, "x");
    gwr_layer *ly = lay1n(net, "Sigmoid", "ly", x, "y_out");
    if (!CHECK(x && ly)) goto done;
    gwr_tensor *y = out0(ly);
    set_f32(y);
    gwr_layer *u1 = lay1(net, "Neg", "u1", y);
    gwr_layer *u2 = lay2(net, "Add", "u2", y, x);
    CHECK_OK(gwr_network_mark_output(net, y));
    /* insert relu after y */
    gwr_layer *lr = lay1n(net, "Relu", "inserted", y, "r");
    if (!CHECK(u1 && u2 && lr)) goto done;
    gwr_tensor *r = out0(lr);
    set_f32(r);
    /* plain replace would make lr read its own output */
    CHECK_EQ_INT(gwr_tensor_replace_all_uses_with(y, r), GWR_ERR_CYCLE);
    CHECK(gwr_layer_input(u1, 0) == y);
    CHECK(gwr_network_output(net, 0) == y);
    CHECK_OK(gwr_tensor_replace_all_uses_except(y, r, lr));
    CHECK(gwr_layer_input(u1, 0) == r);
    CHECK(gwr_layer_input(u2, 0) == r);
    CHECK(gwr_layer_input(u2, 1) == x);
    CHECK(gwr_layer_input(lr, 0) == y);
    CHECK_EQ_INT(gwr_tensor_num_users(y), 1);
    CHECK_EQ_INT(count_use(y, lr, 0), 1);
    CHECK_EQ_INT(gwr_tensor_num_users(r), 2);
    CHECK(uses_consistent(r));
    CHECK(gwr_network_output(net, 0) == r);
    CHECK_STR(gwr_tensor_name(r), "y_out");
    CHECK(gwr_network_find_tensor(net, "y_out") == r);
    CHECK_OK(gwr_network_verify(net));
done:
    gwr_network_free(net);
}

/* A chain of n Relu layers from x; a, b: two side tensors; a has 3 users. */
typedef struct flat_net {
    gwr_network *net;
    gwr_tensor *a, *b;
    gwr_tensor *probe[64];
    char probe_name[64][32];
} flat_net;

static int build_flat(flat_net *f, int64_t n) {
    memset(f, 0, sizeof *f);
    f->net = gwr_network_new("flat");
    gwr_tensor *x = in_f32(f->net, "x"), *prev = x;
    int64_t step = n / 64 > 0 ? n / 64 : 1;
    int k = 0;
    for (int64_t i = 0; i < n; i++) {
        gwr_layer *l = lay1(f->net, "Relu", NULL, prev);
        if (!l) return 0;
        prev = out0(l);
        if (i % step == 0 && k < 64) {
            f->probe[k] = prev;
            snprintf(f->probe_name[k], 32, "%s", gwr_tensor_name(prev));
            k++;
        }
    }
    for (; k < 64; k++) { /* fewer than 64 layers: repeat the last */
        f->probe[k] = prev;
        snprintf(f->probe_name[k], 32, "%s", gwr_tensor_name(prev));
    }
    gwr_layer *la = lay1(f->net, "Sigmoid", NULL, prev), *lb = lay1(f->net, "Tanh", NULL, prev);
    if (!la || !lb) return 0;
    f->a = out0(la);
    f->b = out0(lb);
    set_f32(f->a);
    set_f32(f->b);
    for (int i = 0; i < 3; i++)
        if (!lay2(f->net, "Add", NULL, f->a, x)) return 0;
    return 1;
}

static double rauw_ns(flat_net *f, int reps) {
    double best = 1e30;
    for (int r = 0; r < 3; r++) {
        double t0 = now_s();
        for (int i = 0; i < reps; i++) {
            gwr_tensor_replace_all_uses_with(f->a, f->b);
            gwr_tensor_replace_all_uses_with(f->b, f->a);
        }
        double dt = (now_s() - t0) * 1e9 / (2.0 * reps);
        if (dt < best) best = dt;
    }
    return best;
}

static double find_ns(flat_net *f, int reps) {
    double best = 1e30;
    int miss = 0;
    for (int r = 0; r < 3; r++) {
        double t0 = now_s();
        for (int i = 0; i < reps; i++)
            miss += gwr_network_find_tensor(f->net, f->probe_name[i & 63]) != f->probe[i & 63];
        double dt = (now_s() - t0) * 1e9 / reps;
        if (dt < best) best = dt;
    }
    CHECK_EQ_INT(miss, 0);
    return best;
}

/* O(users) and O(1) in practice: the cost does not grow with the network.
 * Generous bounds (10x for a 200x larger network) so that only a linear
 * implementation fails. */
TEST(test_costs_flat) {
    flat_net small, big;
    if (!CHECK(build_flat(&small, 1000)) || !CHECK(build_flat(&big, 200000))) {
        gwr_network_free(small.net);
        gwr_network_free(big.net);
        return;
    }
    double rs = rauw_ns(&small, 3000), rb = rauw_ns(&big, 3000);
    double fs = find_ns(&small, 30000), fb = find_ns(&big, 30000);
    fprintf(stderr, "  replace_all_uses_with: %.0f ns (1e3 layers), %.0f ns (2e5 layers)\n", rs, rb);
    fprintf(stderr, "  find_tensor:           %.0f ns (1e3 layers), %.0f ns (2e5 layers)\n", fs, fb);
    CHECK(rb < 10 * rs + 200);
    CHECK(fb < 10 * fs + 200);
    CHECK_EQ_INT(gwr_tensor_num_users(big.a), 3);
    CHECK_OK(gwr_network_verify(big.net));
    gwr_network_free(small.net);
    gwr_network_free(big.net);
}

/* ---- mark_as_removed and prune --------------------------------------------- */

TEST(test_mark_removed) {
    gwr_network *net = gwr_network_new("rm");
    gwr_tensor *x = in_f32(net, "x");
    gwr_layer *la = lay1(net, "Relu", "la", x);
    gwr_layer *lb = lay1(net, "Relu", "lb", out0(la));
    gwr_layer *ld = lay1(net, "Relu", "ld", x);
    if (!CHECK(x && la && lb && ld)) goto done;
    CHECK_OK(gwr_network_mark_output(net, out0(lb)));
    CHECK_EQ_INT(gwr_network_num_live_layers(net), 3);
    CHECK_OK(gwr_layer_mark_as_removed(ld));
    CHECK_EQ_INT(gwr_layer_is_removed(ld), 1);
    CHECK_EQ_INT(gwr_layer_is_removed(la), 0);
    CHECK_EQ_INT(gwr_network_num_live_layers(net), 2);
    CHECK_EQ_INT(gwr_network_num_layers(net), 3);
    CHECK_OK(gwr_layer_mark_as_removed(ld)); /* idempotent */
    CHECK_EQ_INT(gwr_network_num_live_layers(net), 2);
    /* edges stay until prune */
    CHECK(gwr_layer_input(ld, 0) == x);
    CHECK_EQ_INT(gwr_tensor_num_users(x), 2);
    CHECK_EQ_INT(count_use(x, ld, 0), 1);
    CHECK(gwr_network_layer(net, 2) == ld);
    CHECK(gwr_network_find_layer(net, "ld") == ld);
    CHECK_OK(gwr_network_verify(net));
done:
    gwr_network_free(net);
}

TEST(test_prune) {
    gwr_network *net = gwr_network_new("prune");
    gwr_tensor *x = in_f32(net, "x");
    gwr_tensor *unused = in_f32(net, "unused");
    gwr_layer *la = lay1n(net, "Relu", "la", x, "a");
    gwr_layer *lb = lay1n(net, "Relu", "lb", out0(la), "b");
    gwr_layer *ld = lay1n(net, "Relu", "ld", x, "d");          /* dead */
    gwr_layer *ld2 = lay1n(net, "Exp", "ld2", out0(ld), "d2"); /* dead */
    gwr_layer *lc = lay1n(net, "Neg", "lc", out0(la), "c");    /* removed */
    gwr_layer *lc2 = lay1n(net, "Neg", "lc2", out0(lc), "c2"); /* removed, reads lc */
    if (!CHECK(x && unused && la && lb && ld && ld2 && lc && lc2)) goto done;
    CHECK_OK(gwr_network_mark_output(net, out0(lb)));
    CHECK_OK(gwr_layer_mark_as_removed(lc));
    CHECK_OK(gwr_layer_mark_as_removed(lc2));
    int64_t n = -1;
    CHECK_OK(gwr_network_prune(net, &n));
    CHECK_EQ_INT(n, 4);
    CHECK_EQ_INT(gwr_network_num_layers(net), 2);
    CHECK_EQ_INT(gwr_network_num_live_layers(net), 2);
    CHECK(gwr_network_layer(net, 0) == la);
    CHECK(gwr_network_layer(net, 1) == lb);
    CHECK_EQ_INT(gwr_layer_index(la), 0);
    CHECK_EQ_INT(gwr_layer_index(lb), 1);
    CHECK_EQ_INT(gwr_network_num_inputs(net), 2); /* inputs stay, used or not */
    CHECK(gwr_network_input(net, 0) == x);
    CHECK(gwr_network_input(net, 1) == unused);
    CHECK(gwr_network_find_layer(net, "ld") == NULL);
    CHECK(gwr_network_find_layer(net, "lc2") == NULL);
    CHECK(gwr_network_find_tensor(net, "d") == NULL);
    CHECK(gwr_network_find_tensor(net, "c") == NULL);
    CHECK(gwr_network_find_tensor(net, "a") == out0(la));
    CHECK_EQ_INT(gwr_tensor_num_users(out0(la)), 1);
    CHECK_EQ_INT(gwr_tensor_num_users(x), 1);
    CHECK(uses_consistent(x));
    CHECK(gwr_network_output(net, 0) == out0(lb));
    CHECK_OK(gwr_network_verify(net));
    n = -1;
    CHECK_OK(gwr_network_prune(net, &n)); /* nothing left to drop */
    CHECK_EQ_INT(n, 0);
    CHECK_OK(gwr_network_prune(net, NULL));
    CHECK_EQ_INT(gwr_network_num_layers(net), 2);
    /* with no outputs, every layer is dead */
    CHECK_OK(gwr_network_unmark_output(net, out0(lb)));
    CHECK_OK(gwr_network_prune(net, &n));
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(gwr_network_num_layers(net), 0);
    CHECK_EQ_INT(gwr_network_num_inputs(net), 2);
    CHECK_EQ_INT(gwr_tensor_num_users(x), 0);
    CHECK_OK(gwr_network_verify(net));
done:
    gwr_network_free(net);
}

/* A tensor read by many dropped layers (twice by some) and a few live
 * ones: prune takes the dropped readers off its use list in one pass and
 * keeps the live ones, slots intact. */
TEST(test_prune_sweeps_shared_inputs) {
    gwr_network *net = gwr_network_new("sweep");
    gwr_tensor *x = in_f32(net, "x");
    gwr_layer *keep[3] = {0};
    int ok = x != NULL;
    for (int i = 0; ok && i < 300; i++) {
        char name[32];
        snprintf(name, sizeof name, "l%d", i);
        gwr_layer *l = i % 3 ? lay1n(net, "Relu", name, x, NULL) : lay2(net, "Add", name, x, x);
        ok = l != NULL;
        if (ok && i % 100 == 50) keep[i / 100] = l;
        else if (ok && i % 2) ok = gwr_layer_mark_as_removed(l) == GWR_OK; /* removed; the rest dead */
    }
    if (!CHECK(ok)) goto done;
    for (int k = 0; k < 3; k++) CHECK_OK(gwr_network_mark_output(net, out0(keep[k])));
    int64_t n = -1;
    CHECK_OK(gwr_network_prune(net, &n));
    CHECK_EQ_INT(n, 297);
    /* l50 and l250 read x once (Relu), l150 twice (Add): 4 uses */
    CHECK_EQ_INT(gwr_tensor_num_users(x), 4);
    CHECK(uses_consistent(x));
    CHECK_OK(gwr_network_verify(net));
done:
    gwr_network_free(net);
}

TEST(test_prune_refuses_used_removed) {
    /* removed layer feeding a live layer */
    gwr_network *net = gwr_network_new("prune2");
    gwr_tensor *x = in_f32(net, "x");
    gwr_layer *la = lay1n(net, "Relu", "la", x, "a");
    gwr_layer *lb = lay1n(net, "Relu", "lb", out0(la), "b");
    gwr_layer *ld = lay1n(net, "Relu", "ld", x, "d");
    if (!CHECK(x && la && lb && ld)) goto done;
    CHECK_OK(gwr_network_mark_output(net, out0(lb)));
    CHECK_OK(gwr_layer_mark_as_removed(la));
    int64_t n = -1;
    CHECK_EQ_INT(gwr_network_prune(net, &n), GWR_ERR_STATE);
    CHECK(gwr_network_errmsg(net)[0] != '\0');
    CHECK_EQ_INT(gwr_network_num_layers(net), 3); /* nothing dropped, not even ld */
    CHECK(gwr_network_find_layer(net, "ld") == ld);
    CHECK(gwr_network_find_layer(net, "la") == la);
    CHECK(gwr_layer_input(lb, 0) == out0(la));
    CHECK_OK(gwr_network_verify(net));
    /* removed layer producing a network output */
    gwr_network *net2 = gwr_network_new("prune3");
    gwr_tensor *x2 = in_f32(net2, "x");
    gwr_layer *lo = lay1(net2, "Relu", "lo", x2);
    gwr_layer *dead = lay1(net2, "Relu", "dead", x2);
    if (CHECK(lo && dead)) {
        CHECK_OK(gwr_network_mark_output(net2, out0(lo)));
        CHECK_OK(gwr_layer_mark_as_removed(lo));
        CHECK_EQ_INT(gwr_network_prune(net2, NULL), GWR_ERR_STATE);
        CHECK_EQ_INT(gwr_network_num_layers(net2), 2);
        CHECK(gwr_network_output(net2, 0) == out0(lo));
        CHECK_OK(gwr_network_verify(net2));
    }
    gwr_network_free(net2);
done:
    gwr_network_free(net);
}

/* Generated names skip the uniqueness lookup once the counter has passed
 * every number an explicit name ends in: names that look generated, given
 * before or after, must still never be taken twice. */
TEST(test_generated_names_vs_explicit) {
    gwr_network *net = gwr_network_new("gen");
    gwr_tensor *x = in_f32(net, "x");
    gwr_layer *first = lay1(net, "Relu", "Relu_3", x); /* what the counter will make */
    if (!CHECK(x && first)) goto done;
    gwr_layer *g[12];
    for (int i = 0; i < 12; i++) {
        g[i] = lay1(net, "Relu", NULL, x);
        if (!CHECK(g[i])) goto done;
        CHECK(gwr_network_find_layer(net, gwr_layer_name(g[i])) == g[i]);
        CHECK(gwr_network_find_tensor(net, gwr_tensor_name(out0(g[i]))) == out0(g[i]));
    }
    CHECK(gwr_network_find_layer(net, "Relu_3") == first);
    /* Explicit names ahead of the counter, given after: a layer, a tensor,
     * and the "<layer>:<i>" form of a second output. */
    CHECK_OK(gwr_layer_set_name(g[0], "Relu_40"));
    CHECK_OK(gwr_tensor_set_name(out0(g[1]), "Relu_41"));
    CHECK_OK(gwr_tensor_set_name(out0(g[2]), "Split_44:1"));
    CHECK_OK(gwr_layer_set_name(g[3], "a_99999999999999999999999999")); /* past any counter */
    gwr_tensor *ins[1] = {x};
    for (int i = 0; i < 50; i++) {
        gwr_layer *l = i % 2 ? lay1(net, "Relu", NULL, x) : gwr_network_add_layer(net, "Split", "", NULL, 1, ins, 2, NULL);
        if (!CHECK(l)) goto done;
        CHECK(gwr_network_find_layer(net, gwr_layer_name(l)) == l);
        for (int o = 0; o < gwr_layer_num_outputs(l); o++)
            CHECK(gwr_network_find_tensor(net, gwr_tensor_name(gwr_layer_output(l, o))) == gwr_layer_output(l, o));
    }
    CHECK(gwr_network_find_layer(net, "Relu_40") == g[0]);
    CHECK(gwr_network_find_tensor(net, "Relu_41") == out0(g[1]));
    CHECK(gwr_network_find_tensor(net, "Split_44:1") == out0(g[2]));
    CHECK_OK(gwr_network_verify(net)); /* every name once in its map */
done:
    gwr_network_free(net);
}

/* The name maps through churn: many layers dropped and added again, every
 * surviving name still found, every dropped one gone. */
TEST(test_names_under_churn) {
    enum { N = 6000 };
    gwr_network *net = gwr_network_new("churn");
    gwr_tensor *x = in_f32(net, "x");
    static char names[N][32];
    gwr_layer *l[N];
    if (!CHECK(x)) goto done;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) {
            l[i] = lay1(net, i % 2 ? "Relu" : "Neg", NULL, x);
            if (!CHECK(l[i])) goto done;
            snprintf(names[i], sizeof names[i], "%s", gwr_layer_name(l[i]));
            if (i % 3 == 0) CHECK_OK(gwr_network_mark_output(net, out0(l[i])));
        }
        int64_t n = -1;
        CHECK_OK(gwr_network_prune(net, &n));
        CHECK_EQ_INT(n, N - N / 3 + (round ? N / 3 : 0)); /* and the last round's, no longer outputs */
        for (int i = 0; i < N; i++) {
            gwr_layer *f = gwr_network_find_layer(net, names[i]);
            gwr_tensor *t = gwr_network_find_tensor(net, names[i]);
            if (i % 3 == 0) CHECK(f == l[i] && t == out0(l[i]));
            else CHECK(!f && !t);
        }
        for (int i = 0; i < N; i += 3) CHECK_OK(gwr_network_unmark_output(net, out0(l[i])));
        CHECK_OK(gwr_network_verify(net));
    }
    int64_t n = -1;
    CHECK_OK(gwr_network_prune(net, &n)); /* no outputs left: all dead */
    CHECK_EQ_INT(n, N / 3);
    CHECK_EQ_INT(gwr_network_num_layers(net), 0);
    CHECK_OK(gwr_network_verify(net));
done:
    gwr_network_free(net);
}

/* Prune by counting readers: dead chains go whole, a layer reading one
 * dead tensor twice, a removed layer read only by dead ones; a removed
 * layer still read by a live one is refused, naming that reader. */
TEST(test_prune_dead_chains) {
    gwr_network *net = gwr_network_new("chains");
    gwr_tensor *x = in_f32(net, "x");
    gwr_layer *keep = lay1(net, "Relu", "keep", x);
    gwr_layer *a = lay1(net, "Relu", "a", out0(keep));
    gwr_layer *b = lay2(net, "Add", "b", out0(a), out0(a)); /* reads a twice */
    gwr_layer *c = lay1(net, "Neg", "c", out0(b));
    gwr_layer *r = lay1(net, "Exp", "r", x);                /* removed */
    gwr_layer *rd = lay1(net, "Neg", "rd", out0(r));        /* dead, reads r */
    if (!CHECK(x && keep && a && b && c && r && rd)) goto done;
    CHECK_OK(gwr_network_mark_output(net, out0(keep)));
    CHECK_OK(gwr_layer_mark_as_removed(r));
    int64_t n = -1;
    CHECK_OK(gwr_network_prune(net, &n));
    CHECK_EQ_INT(n, 5);
    CHECK_EQ_INT(gwr_network_num_layers(net), 1);
    CHECK(gwr_network_layer(net, 0) == keep);
    CHECK_EQ_INT(gwr_tensor_num_users(out0(keep)), 0);
    CHECK_EQ_INT(gwr_tensor_num_users(x), 1);
    CHECK_OK(gwr_network_verify(net));
    /* A removed layer with a live reader. */
    gwr_layer *m = lay1(net, "Relu", "m", x);
    gwr_layer *u = lay1(net, "Relu", "u", out0(m));
    if (!CHECK(m && u)) goto done;
    CHECK_OK(gwr_network_mark_output(net, out0(u)));
    CHECK_OK(gwr_layer_mark_as_removed(m));
    CHECK_EQ_INT(gwr_network_prune(net, &n), GWR_ERR_STATE);
    CHECK(strstr(gwr_network_errmsg(net), "'m'") && strstr(gwr_network_errmsg(net), "'u'"));
    CHECK_EQ_INT(gwr_network_num_layers(net), 3);
    CHECK_OK(gwr_network_verify(net));
done:
    gwr_network_free(net);
}

/* A subgraph not attached to any layer that reads a tensor of its parent:
 * the parent's use lists then name a layer of another network (counted,
 * checked by verify) and prune takes the search from the outputs, as it
 * does with subgraphs attached; after the subgraph is freed, counting
 * again. Either way the same layers go. */
TEST(test_prune_with_detached_subgraph) {
    gwr_network *net = gwr_network_new("outer");
    gwr_tensor *x = in_f32(net, "x");
    gwr_layer *p = lay1(net, "Relu", "p", x);
    gwr_layer *q = lay1(net, "Relu", "q", x);
    gwr_network *g = gwr_network_new_subgraph(net, "g");
    if (!CHECK(x && p && q && g)) goto done;
    CHECK_OK(gwr_network_mark_output(net, out0(q)));
    gwr_layer *inner = lay1(g, "Neg", "inner", out0(p));
    if (!CHECK(inner)) goto done;
    CHECK_EQ_INT(gwr_tensor_num_users(out0(p)), 1);
    CHECK_OK(gwr_network_verify(net));
    gwr_network_free(g);
    CHECK_EQ_INT(gwr_tensor_num_users(out0(p)), 0);
    CHECK_OK(gwr_network_verify(net));
    int64_t n = -1;
    CHECK_OK(gwr_network_prune(net, &n));
    CHECK_EQ_INT(n, 1);
    CHECK(gwr_network_find_layer(net, "p") == NULL);
    CHECK_OK(gwr_network_verify(net));
done:
    gwr_network_free(net);
}

/* ---- subgraphs and graph attributes ---------------------------------------- */

TEST(test_subgraphs) {
    gwr_network *net = gwr_network_new("outer");
    gwr_tensor *x = in_f32(net, "x");
    gwr_tensor *cond = gwr_network_add_input(net, "cond", GWR_BOOL, 0, NULL);
    gwr_layer *lp = lay1n(net, "Relu", "producer", x, "t");
    if (!CHECK(x && cond && lp)) goto done;
    gwr_tensor *t = out0(lp);
    set_f32(t);

    gwr_network *g = gwr_network_new_subgraph(net, "then_body");
    gwr_network *g2 = gwr_network_new_subgraph(net, "else_body");
    if (!CHECK(g && g2)) goto done;
    CHECK(gwr_network_parent(g) == net);
    CHECK(gwr_network_owner(g) == NULL);
    CHECK_STR(gwr_network_name(g), "then_body");
    gwr_layer *inner = lay1n(g, "Neg", "inner_neg", t, "inner_out");
    gwr_layer *inner2 = lay1n(g2, "Identity", "inner_id", x, "inner2_out");
    if (!CHECK(inner && inner2)) goto done;
    CHECK(gwr_layer_network(inner) == g);
    CHECK_OK(gwr_network_mark_output(g, out0(inner)));
    CHECK_OK(gwr_network_mark_output(g2, out0(inner2)));
    /* the outer tensor lists the inner layer as a user */
    CHECK_EQ_INT(gwr_tensor_num_users(t), 1);
    CHECK_EQ_INT(count_use(t, inner, 0), 1);
    CHECK(uses_consistent(t));
    /* names in scope */
    CHECK(gwr_network_find_tensor(g, "t") == NULL);
    CHECK(gwr_network_lookup_tensor(g, "t") == t);
    CHECK(gwr_network_lookup_tensor(g, "inner_out") == out0(inner));
    CHECK(gwr_network_lookup_tensor(net, "inner_out") == NULL);
    CHECK(gwr_network_find_layer(net, "inner_neg") == NULL);
    CHECK(gwr_network_find_layer(g, "inner_neg") == inner);
    /* out of scope: an outer layer reading an inner tensor, a sibling's */
    CHECK(lay1(net, "Relu", NULL, out0(inner)) == NULL);
    CHECK(lay1(g2, "Relu", NULL, out0(inner)) == NULL);
    CHECK_EQ_INT(gwr_tensor_num_users(out0(inner)), 0);

    gwr_layer *lif = gwr_network_add_layer(net, "If", "", "if", 1, &cond, 1, NULL);
    if (!CHECK(lif != NULL)) goto done;
    CHECK_EQ_INT(gwr_layer_type_of(lif), GWR_LAYER_CONDITION);
    CHECK_OK(gwr_layer_set_graph(lif, "then_branch", g));
    CHECK_OK(gwr_layer_set_graph(lif, "else_branch", g2));
    CHECK(gwr_network_owner(g) == lif);
    CHECK(gwr_network_owner(g2) == lif);
    gwr_network *got = NULL;
    CHECK_OK(gwr_layer_get_graph(lif, "then_branch", &got));
    CHECK(got == g);
    CHECK_EQ_INT(gwr_layer_find_attr(lif, "else_branch") >= 0, 1);
    CHECK_EQ_INT(gwr_layer_attr_type(lif, gwr_layer_find_attr(lif, "else_branch")), GWR_ATTR_GRAPH);
    CHECK_OK(gwr_network_mark_output(net, out0(lif)));
    gwr_layer *ldead = lay1(net, "Relu", "dead", x);
    CHECK(ldead != NULL);
    CHECK_OK(gwr_network_verify(net));

    /* an attached subgraph cannot be freed by the caller */
    gwr_network_free(g);
    CHECK_EQ_INT(gwr_network_num_layers(g), 1);
    CHECK(gwr_network_errmsg(g)[0] != '\0');
    CHECK(gwr_network_owner(g) == lif);
    /* nor attached twice, nor attached to another network's layer */
    gwr_layer *lif2 = gwr_network_add_layer(net, "If", "", "if2", 1, &cond, 1, NULL);
    if (CHECK(lif2 != NULL)) {
        CHECK(gwr_layer_set_graph(lif2, "then_branch", g) != GWR_OK);
        CHECK_EQ_INT(gwr_layer_has_attr(lif2, "then_branch"), 0);
        CHECK(gwr_network_owner(g) == lif);
    }
    gwr_network *stranger = gwr_network_new("stranger");
    gwr_network *sg = gwr_network_new_subgraph(stranger, "sg");
    CHECK(gwr_layer_set_graph(lif2, "then_branch", sg) != GWR_OK);
    gwr_network *root2 = gwr_network_new("not_a_subgraph");
    CHECK(gwr_layer_set_graph(lif2, "then_branch", root2) != GWR_OK);
    gwr_network_free(root2);
    gwr_network_free(sg); /* the caller kept it */
    gwr_network_free(stranger);

    /* prune keeps the producer of a tensor read only inside a subgraph */
    int64_t n = -1;
    CHECK_OK(gwr_network_prune(net, &n));
    CHECK_EQ_INT(n, 2); /* dead, if2 */
    CHECK(gwr_network_find_layer(net, "producer") == lp);
    CHECK(gwr_network_find_layer(net, "dead") == NULL);
    CHECK_EQ_INT(gwr_tensor_num_users(t), 1);
    CHECK_EQ_INT(gwr_network_num_layers(g), 1);
    CHECK_OK(gwr_network_verify(net));

    /* removing the attribute frees the subgraph and its uses */
    CHECK_OK(gwr_layer_remove_attr(lif, "then_branch"));
    CHECK_EQ_INT(gwr_tensor_num_users(t), 0);
    CHECK_EQ_INT(gwr_layer_get_graph(lif, "then_branch", &got), GWR_ERR_NOT_FOUND);
    CHECK_OK(gwr_network_verify(net));
    CHECK_OK(gwr_network_prune(net, &n));
    CHECK_EQ_INT(n, 1); /* the producer is dead now */
    CHECK(gwr_network_find_layer(net, "producer") == NULL);
    CHECK_OK(gwr_network_verify(net));

    /* graph lists */
    gwr_network *gs[2] = {gwr_network_new_subgraph(net, "b0"), gwr_network_new_subgraph(net, "b1")};
    gwr_tensor *ins[1] = {x};
    gwr_layer *lp2 = gwr_network_add_layer(net, "Foo", "com.acme", "multi", 1, ins, 1, NULL);
    if (CHECK(gs[0] && gs[1] && lp2)) {
        CHECK(lay1(gs[1], "Relu", "b1_relu", x) != NULL);
        CHECK_OK(gwr_layer_set_graphs(lp2, "branches", gs, 2));
        gwr_network *const *gl = NULL;
        int64_t ng = -1;
        CHECK_OK(gwr_layer_get_graphs(lp2, "branches", &gl, &ng));
        CHECK_EQ_INT(ng, 2);
        if (gl && ng == 2) CHECK(gl[0] == gs[0] && gl[1] == gs[1]);
        CHECK(gwr_network_owner(gs[1]) == lp2);
        CHECK_EQ_INT(gwr_layer_get_graph(lp2, "branches", &got), GWR_ERR_TYPE);
        CHECK_OK(gwr_network_verify(net));
    }
done:
    gwr_network_free(net); /* frees the attached subgraphs */
}

/* ---- attributes ------------------------------------------------------------ */

TEST(test_attrs_scalars_lists) {
    gwr_network *net = gwr_network_new("attrs");
    gwr_tensor *x = in_f32(net, "x");
    gwr_layer *l = lay1(net, "Foo", "foo", x);
    if (!CHECK(x && l)) goto done;
    CHECK_EQ_INT(gwr_layer_num_attrs(l), 0);

    int64_t iv = 42;
    float fv = 1.5f;
    CHECK_EQ_INT(gwr_layer_get_int(l, "axis", &iv), GWR_ERR_NOT_FOUND);
    CHECK_EQ_INT(iv, 42);
    CHECK_OK(gwr_layer_set_int(l, "axis", -3));
    CHECK_OK(gwr_layer_get_int(l, "axis", &iv));
    CHECK_EQ_INT(iv, -3);
    CHECK_OK(gwr_layer_set_int(l, "big", INT64_MIN));
    CHECK_OK(gwr_layer_get_int(l, "big", &iv));
    CHECK(iv == INT64_MIN);
    CHECK_OK(gwr_layer_set_float(l, "alpha", 0.25f));
    CHECK_OK(gwr_layer_get_float(l, "alpha", &fv));
    CHECK(fv == 0.25f);
    /* wrong type: GWR_ERR_TYPE, *out untouched */
    iv = 77;
    fv = 9.0f;
    CHECK_EQ_INT(gwr_layer_get_int(l, "alpha", &iv), GWR_ERR_TYPE);
    CHECK_EQ_INT(iv, 77);
    CHECK_EQ_INT(gwr_layer_get_float(l, "axis", &fv), GWR_ERR_TYPE);
    CHECK(fv == 9.0f);

    /* getters with a default: absent gives the default and no message,
     * another type GWR_ERR_TYPE with the default */
    char before[512];
    snprintf(before, sizeof before, "%s", gwr_network_errmsg(net));
    CHECK_OK(gwr_layer_attr_int(l, "nope", 5, &iv));
    CHECK_EQ_INT(iv, 5);
    CHECK_STR(gwr_network_errmsg(net), before);
    CHECK_OK(gwr_layer_attr_int(l, "axis", 5, &iv));
    CHECK_EQ_INT(iv, -3);
    CHECK_EQ_INT(gwr_layer_attr_int(l, "alpha", 5, &iv), GWR_ERR_TYPE);
    CHECK_EQ_INT(iv, 5);
    CHECK(strstr(gwr_network_errmsg(net), "alpha") != NULL);
    CHECK_OK(gwr_layer_attr_float(l, "alpha", 2.0f, &fv));
    CHECK(fv == 0.25f);
    CHECK_OK(gwr_layer_attr_float(l, "nope", 2.0f, &fv));
    CHECK(fv == 2.0f);
    CHECK_EQ_INT(gwr_layer_attr_float(l, "axis", 2.0f, &fv), GWR_ERR_TYPE);
    CHECK(fv == 2.0f);

    /* strings, and bytes with embedded NULs */
    CHECK_OK(gwr_layer_set_string(l, "mode", "linear"));
    const char *sv = NULL;
    size_t sl = 0;
    CHECK_OK(gwr_layer_get_string(l, "mode", &sv, &sl));
    CHECK_STR(sv, "linear");
    CHECK_EQ_INT(sl, 6);
    CHECK_OK(gwr_layer_get_string(l, "mode", &sv, NULL));
    static const char raw[5] = {'a', '\0', 'b', '\0', 'c'};
    CHECK_OK(gwr_layer_set_bytes(l, "blob", raw, sizeof raw));
    sv = NULL;
    sl = 0;
    CHECK_OK(gwr_layer_get_string(l, "blob", &sv, &sl));
    CHECK_EQ_INT(sl, 5);
    if (CHECK(sv != NULL)) {
        CHECK(memcmp(sv, raw, 5) == 0);
        CHECK_EQ_INT(sv[5], '\0'); /* NUL-terminated */
    }
    CHECK_OK(gwr_layer_set_bytes(l, "empty", NULL, 0));
    CHECK_OK(gwr_layer_get_string(l, "empty", &sv, &sl));
    CHECK_EQ_INT(sl, 0);
    sv = (const char *)raw;
    CHECK_EQ_INT(gwr_layer_get_string(l, "axis", &sv, &sl), GWR_ERR_TYPE);
    CHECK(sv == (const char *)raw);
    CHECK_EQ_INT(gwr_layer_get_string(l, "missing", &sv, &sl), GWR_ERR_NOT_FOUND);
    CHECK(sv == (const char *)raw);

    /* lists: copied in */
    int64_t ints[4] = {1, -2, 3, INT64_MAX};
    CHECK_OK(gwr_layer_set_ints(l, "pads", ints, 4));
    ints[0] = 100;
    const int64_t *io = NULL;
    int64_t n = -1;
    CHECK_OK(gwr_layer_get_ints(l, "pads", &io, &n));
    CHECK_EQ_INT(n, 4);
    if (CHECK(io != NULL) && n == 4) {
        CHECK_EQ_INT(io[0], 1);
        CHECK_EQ_INT(io[1], -2);
        CHECK(io[3] == INT64_MAX);
    }
    {
        const int64_t *dv = NULL;
        int64_t dn = 0;
        const float *fl = (const float *)raw;
        const char *ds = NULL;
        CHECK_OK(gwr_layer_attr_ints(l, "pads", &dv, &dn));
        CHECK_EQ_INT(dn, 4);
        CHECK(dv == io);
        CHECK_OK(gwr_layer_attr_ints(l, "nope", &dv, &dn));
        CHECK_EQ_INT(dn, -1);
        CHECK(dv == NULL);
        CHECK_EQ_INT(gwr_layer_attr_floats(l, "pads", &fl, &dn), GWR_ERR_TYPE);
        CHECK_EQ_INT(dn, -1);
        CHECK(fl == NULL);
        CHECK_OK(gwr_layer_attr_string(l, "mode", "x", &ds));
        CHECK_STR(ds, "linear");
        CHECK_OK(gwr_layer_attr_string(l, "nope", "x", &ds));
        CHECK_STR(ds, "x");
        CHECK_EQ_INT(gwr_layer_attr_string(l, "pads", "x", &ds), GWR_ERR_TYPE);
        CHECK_STR(ds, "x");
    }
    CHECK_OK(gwr_layer_set_ints(l, "none", NULL, 0));
    CHECK_OK(gwr_layer_get_ints(l, "none", &io, &n));
    CHECK_EQ_INT(n, 0);
    float floats[3] = {0.5f, -1.0f, 3.25f};
    CHECK_OK(gwr_layer_set_floats(l, "scales", floats, 3));
    floats[0] = 0;
    const float *fo = NULL;
    CHECK_OK(gwr_layer_get_floats(l, "scales", &fo, &n));
    CHECK_EQ_INT(n, 3);
    if (CHECK(fo != NULL) && n == 3) CHECK(fo[0] == 0.5f && fo[2] == 3.25f);
    const char *strs[3] = {"a", "bc", ""};
    CHECK_OK(gwr_layer_set_strings(l, "names", strs, 3));
    const gwr_bytes *bo = NULL;
    CHECK_OK(gwr_layer_get_strings(l, "names", &bo, &n));
    CHECK_EQ_INT(n, 3);
    if (CHECK(bo != NULL) && n == 3) {
        CHECK_EQ_INT(bo[0].len, 1);
        CHECK(memcmp(bo[0].data, "a", 1) == 0);
        CHECK_EQ_INT(bo[1].len, 2);
        CHECK(memcmp(bo[1].data, "bc", 2) == 0);
        CHECK_EQ_INT(bo[2].len, 0);
    }
    /* wrong types and missing names leave the outputs alone */
    io = (const int64_t *)ints;
    n = -9;
    CHECK_EQ_INT(gwr_layer_get_ints(l, "scales", &io, &n), GWR_ERR_TYPE);
    CHECK(io == (const int64_t *)ints);
    CHECK_EQ_INT(n, -9);
    fo = floats;
    CHECK_EQ_INT(gwr_layer_get_floats(l, "pads", &fo, &n), GWR_ERR_TYPE);
    CHECK(fo == floats);
    bo = NULL;
    CHECK_EQ_INT(gwr_layer_get_strings(l, "mode", &bo, &n), GWR_ERR_TYPE);
    CHECK(bo == NULL);
    CHECK_EQ_INT(gwr_layer_get_strings(l, "missing", &bo, &n), GWR_ERR_NOT_FOUND);
    CHECK_EQ_INT(gwr_layer_get_floats(l, "missing", &fo, &n), GWR_ERR_NOT_FOUND);
    CHECK_EQ_INT(gwr_layer_get_ints(l, "missing", &io, &n), GWR_ERR_NOT_FOUND);
    CHECK_EQ_INT(n, -9);
    CHECK_EQ_INT(gwr_layer_get_float(l, "missing", &fv), GWR_ERR_NOT_FOUND);
    const gwr_weights *wo = NULL;
    CHECK_EQ_INT(gwr_layer_get_tensor(l, "axis", &wo), GWR_ERR_TYPE);
    CHECK_EQ_INT(gwr_layer_get_tensor(l, "missing", &wo), GWR_ERR_NOT_FOUND);
    CHECK_EQ_INT(gwr_layer_get_tensors(l, "axis", &wo, &n), GWR_ERR_TYPE);
    CHECK(wo == NULL);
    gwr_network *go = NULL;
    CHECK_EQ_INT(gwr_layer_get_graph(l, "axis", &go), GWR_ERR_TYPE);
    CHECK_EQ_INT(gwr_layer_get_graph(l, "missing", &go), GWR_ERR_NOT_FOUND);
    gwr_network *const *gso = NULL;
    CHECK_EQ_INT(gwr_layer_get_graphs(l, "axis", &gso, &n), GWR_ERR_TYPE);
    CHECK(go == NULL && gso == NULL);

    /* iterate */
    const char *expect[] = {"axis", "big", "alpha", "mode", "blob", "empty", "pads", "none", "scales", "names"};
    const gwr_attr_type etype[] = {GWR_ATTR_INT, GWR_ATTR_INT, GWR_ATTR_FLOAT, GWR_ATTR_STRING,
                                   GWR_ATTR_STRING, GWR_ATTR_STRING, GWR_ATTR_INTS, GWR_ATTR_INTS,
                                   GWR_ATTR_FLOATS, GWR_ATTR_STRINGS};
    int na = (int)(sizeof expect / sizeof expect[0]);
    CHECK_EQ_INT(gwr_layer_num_attrs(l), na);
    int seen = 0;
    for (int i = 0; i < gwr_layer_num_attrs(l); i++) {
        const char *an = gwr_layer_attr_name(l, i);
        if (!CHECK(an != NULL)) continue;
        CHECK_EQ_INT(gwr_layer_find_attr(l, an), i);
        CHECK_EQ_INT(gwr_layer_has_attr(l, an), 1);
        for (int k = 0; k < na; k++)
            if (strcmp(an, expect[k]) == 0) {
                seen |= 1 << k;
                CHECK_EQ_INT(gwr_layer_attr_type(l, i), etype[k]);
            }
    }
    CHECK_EQ_INT(seen, (1 << na) - 1);
    CHECK(gwr_layer_attr_name(l, na) == NULL);
    CHECK(gwr_layer_attr_name(l, -1) == NULL);
    CHECK_EQ_INT(gwr_layer_attr_type(l, na), GWR_ATTR_UNDEFINED);
    CHECK_EQ_INT(gwr_layer_find_attr(l, "missing"), -1);
    CHECK_EQ_INT(gwr_layer_has_attr(l, "missing"), 0);

    /* replace: same name, any type; count unchanged */
    CHECK_OK(gwr_layer_set_float(l, "axis", 2.0f));
    CHECK_EQ_INT(gwr_layer_num_attrs(l), na);
    CHECK_EQ_INT(gwr_layer_attr_type(l, gwr_layer_find_attr(l, "axis")), GWR_ATTR_FLOAT);
    CHECK_EQ_INT(gwr_layer_get_int(l, "axis", &iv), GWR_ERR_TYPE);
    CHECK_OK(gwr_layer_get_float(l, "axis", &fv));
    CHECK(fv == 2.0f);
    CHECK_OK(gwr_layer_set_string(l, "pads", "now a string"));
    CHECK_OK(gwr_layer_get_string(l, "pads", &sv, &sl));
    CHECK_STR(sv, "now a string");
    CHECK_EQ_INT(gwr_layer_num_attrs(l), na);

    /* remove */
    CHECK_OK(gwr_layer_remove_attr(l, "blob"));
    CHECK_EQ_INT(gwr_layer_num_attrs(l), na - 1);
    CHECK_EQ_INT(gwr_layer_has_attr(l, "blob"), 0);
    CHECK_EQ_INT(gwr_layer_get_string(l, "blob", &sv, &sl), GWR_ERR_NOT_FOUND);
    CHECK_EQ_INT(gwr_layer_remove_attr(l, "blob"), GWR_ERR_NOT_FOUND);
    CHECK_EQ_INT(gwr_layer_num_attrs(l), na - 1);
    for (int i = 0; i < gwr_layer_num_attrs(l); i++)
        CHECK_EQ_INT(gwr_layer_find_attr(l, gwr_layer_attr_name(l, i)), i);
    CHECK_OK(gwr_layer_get_ints(l, "none", &io, &n)); /* the others survive */

    /* type names */
    for (int t = GWR_ATTR_UNDEFINED; t <= GWR_ATTR_GRAPHS; t++) {
        const char *tn = gwr_attr_type_name((gwr_attr_type)t);
        CHECK(tn != NULL && tn[0] != '\0');
    }
    CHECK_OK(gwr_network_verify(net));
done:
    gwr_network_free(net);
}

TEST(test_attrs_tensors) {
    static float vals[4] = {1, 2, 3, 4};
    release_log rl = {0, NULL, 0};
    gwr_buffer *buf = gwr_buffer_wrap(vals, sizeof vals, count_release, &rl);
    if (!CHECK(buf != NULL)) return;
    gwr_network *net = gwr_network_new("tattrs");
    gwr_tensor *x = in_f32(net, "x");
    gwr_layer *l = lay1(net, "Foo", "foo", x);
    gwr_layer *l2 = lay1(net, "Bar", "bar", x);
    if (!CHECK(x && l && l2)) goto done;
    int64_t dims[2] = {2, 2};
    gwr_weights w = {GWR_FLOAT32, 2, dims, vals, sizeof vals, buf, "wname"};
    CHECK_OK(gwr_layer_set_tensor(l, "value", &w));
    dims[0] = 99; /* dims are copied */
    const gwr_weights *wo = NULL;
    CHECK_OK(gwr_layer_get_tensor(l, "value", &wo));
    if (CHECK(wo != NULL)) {
        CHECK(wo->data == (const void *)vals); /* shared, not copied */
        CHECK(wo->buffer == buf);
        CHECK_EQ_INT(wo->dtype, GWR_FLOAT32);
        CHECK_EQ_INT(wo->rank, 2);
        if (CHECK(wo->dims != NULL)) CHECK_EQ_INT(wo->dims[0], 2);
        CHECK_EQ_INT(wo->nbytes, sizeof vals);
        if (CHECK(wo->name != NULL)) CHECK_STR(wo->name, "wname");
    }
    /* a list of two, sharing the same buffer */
    gwr_weights ws[2] = {w, w};
    ws[0].dims = (const int64_t[]){4};
    ws[0].rank = 1;
    ws[1].rank = 0;
    ws[1].nbytes = sizeof(float);
    ws[1].name = NULL;
    CHECK_OK(gwr_layer_set_tensors(l2, "tables", ws, 2));
    const gwr_weights *wl = NULL;
    int64_t n = 0;
    CHECK_OK(gwr_layer_get_tensors(l2, "tables", &wl, &n));
    CHECK_EQ_INT(n, 2);
    if (CHECK(wl != NULL) && n == 2) {
        CHECK_EQ_INT(wl[0].rank, 1);
        CHECK_EQ_INT(wl[1].rank, 0);
        CHECK(wl[1].buffer == buf);
    }
    CHECK_EQ_INT(gwr_layer_get_tensor(l2, "tables", &wo), GWR_ERR_TYPE);

    /* the layer holds its own references */
    gwr_buffer_release(buf);
    CHECK_EQ_INT(rl.calls, 0);
    CHECK_OK(gwr_layer_remove_attr(l, "value"));
    CHECK_EQ_INT(rl.calls, 0); /* l2 still holds two */
    CHECK_OK(gwr_layer_set_int(l2, "tables", 1)); /* replacing drops the weights */
    CHECK_EQ_INT(rl.calls, 1);
    CHECK(rl.data == (const void *)vals);

    /* network free releases attribute buffers */
    release_log rl2 = {0, NULL, 0};
    gwr_buffer *b2 = gwr_buffer_wrap(vals, sizeof vals, count_release, &rl2);
    gwr_weights w2 = {GWR_FLOAT32, 1, (const int64_t[]){4}, vals, sizeof vals, b2, NULL};
    CHECK_OK(gwr_layer_set_tensor(l, "again", &w2));
    gwr_buffer_release(b2);
    CHECK_EQ_INT(rl2.calls, 0);
    gwr_network_free(net);
    CHECK_EQ_INT(rl2.calls, 1);
    return;
done:
    gwr_network_free(net);
    gwr_buffer_release(buf);
}

TEST(test_add_constant) {
    static const float vals[6] = {1, 2, 3, 4, 5, 6};
    release_log rl = {0, NULL, 0};
    gwr_buffer *buf = gwr_buffer_wrap(vals, sizeof vals, count_release, &rl);
    gwr_network *net = gwr_network_new("const");
    int64_t dims[2] = {2, 3};
    gwr_weights w = {GWR_FLOAT32, 2, dims, vals, sizeof vals, buf, NULL};
    gwr_tensor *c = gwr_network_add_constant(net, "weight", &w);
    gwr_buffer_release(buf);
    if (!CHECK(c != NULL)) goto done;
    dims[0] = 7;
    gwr_layer *cl = gwr_tensor_parent(c);
    if (!CHECK(cl != NULL)) goto done;
    CHECK_EQ_INT(gwr_layer_type_of(cl), GWR_LAYER_CONSTANT);
    CHECK_STR(gwr_layer_op(cl), "Constant");
    CHECK_EQ_INT(gwr_layer_op_id(cl), GWR_OP_Constant);
    CHECK_EQ_INT(gwr_layer_num_inputs(cl), 0);
    CHECK(gwr_network_find_layer(net, "weight") == cl || gwr_network_find_tensor(net, "weight") == c);
    CHECK_EQ_INT(gwr_tensor_dtype(c), GWR_FLOAT32);
    CHECK_EQ_INT(gwr_tensor_rank(c), 2);
    CHECK_EQ_INT(gwr_tensor_dim(c, 0), 2);
    CHECK_EQ_INT(gwr_tensor_dim(c, 1), 3);
    const gwr_weights *wo = NULL;
    CHECK_OK(gwr_layer_get_tensor(cl, "value", &wo));
    if (CHECK(wo != NULL)) {
        CHECK(wo->data == (const void *)vals);
        CHECK(wo->buffer == buf);
        if (CHECK(wo->dims != NULL)) CHECK_EQ_INT(wo->dims[0], 2);
    }
    CHECK_EQ_INT(rl.calls, 0);
    CHECK_OK(gwr_network_mark_output(net, c));
    CHECK_OK(gwr_network_verify(net));
    /* gwr_constant_f32 from functional.h */
    gwr_tensor *k = gwr_constant_f32(net, 2.5f);
    if (CHECK(k != NULL)) {
        CHECK_EQ_INT(gwr_tensor_rank(k), 0);
        CHECK_EQ_INT(gwr_layer_type_of(gwr_tensor_parent(k)), GWR_LAYER_CONSTANT);
    }
    CHECK(gwr_network_add_constant(net, "bad", NULL) == NULL);
    CHECK_OK(gwr_network_verify(net));
done:
    gwr_network_free(net);
    CHECK_EQ_INT(rl.calls, 1);
}

/* ---- verify ------------------------------------------------------------------ */

TEST(test_verify) {
    gwr_network *net = gwr_network_new("verify");
    CHECK_OK(gwr_network_verify(net));
    gwr_tensor *x = in_f32(net, "x");
    gwr_tensor *y = gwr_add(net, x, x);
    gwr_tensor *z = gwr_relu(net, y);
    if (!CHECK(x && y && z)) goto done;
    CHECK_EQ_INT(gwr_tensor_dtype(z), GWR_FLOAT32); /* the builders infer types */
    CHECK_OK(gwr_network_mark_output(net, z));
    CHECK_OK(gwr_network_verify(net));

    /* what the API would let a caller get wrong is refused up front */
    gwr_network *other = gwr_network_new("other");
    gwr_tensor *ox = in_f32(other, "ox");
    gwr_layer *ol = lay1(other, "Relu", "ol", ox);
    int64_t nl = gwr_network_num_layers(net);
    CHECK(lay1(net, "Relu", "foreign_reader", ox) == NULL);
    CHECK(gwr_network_errmsg(net)[0] != '\0');
    CHECK(lay2(net, "Add", "foreign_reader2", x, out0(ol)) == NULL);
    CHECK_EQ_INT(gwr_network_num_layers(net), nl);
    CHECK_EQ_INT(gwr_tensor_num_users(ox), 1);
    CHECK_EQ_INT(gwr_tensor_num_users(x), 2);
    CHECK(gwr_network_find_layer(net, "foreign_reader") == NULL);
    CHECK(gwr_network_mark_output(net, ox) != GWR_OK);
    CHECK_EQ_INT(gwr_network_num_outputs(net), 1);
    CHECK(gwr_network_unmark_output(net, ox) != GWR_OK);
    CHECK(gwr_layer_set_input(gwr_tensor_parent(z), 0, ox) != GWR_OK);
    CHECK(gwr_tensor_replace_all_uses_with(y, out0(ol)) != GWR_OK);
    CHECK(gwr_tensor_replace_all_uses_except(y, out0(ol), NULL) != GWR_OK);
    CHECK(gwr_layer_input(gwr_tensor_parent(z), 0) == y);
    CHECK(gwr_tensor_replace_all_uses_with(out0(ol), y) != GWR_OK);
    CHECK(gwr_layer_input(gwr_tensor_parent(z), 0) == y);
    CHECK(gwr_add(net, x, ox) == NULL);
    CHECK_OK(gwr_network_verify(net));
    CHECK_OK(gwr_network_verify(other));
    /* verify also holds after a mix of edits */
    gwr_tensor *w = gwr_sigmoid(net, x);
    CHECK_OK(gwr_tensor_replace_all_uses_with(y, w));
    CHECK_OK(gwr_layer_mark_as_removed(gwr_tensor_parent(y)));
    CHECK_OK(gwr_network_verify(net));
    CHECK_OK(gwr_network_toposort(net));
    CHECK_OK(gwr_network_verify(net));
    CHECK_OK(gwr_network_prune(net, NULL));
    CHECK_OK(gwr_network_verify(net));
    gwr_network_free(other);
done:
    gwr_network_free(net);
}

/* ---- toposort ---------------------------------------------------------------- */

TEST(test_toposort) {
    gwr_network *net = gwr_network_new("topo");
    gwr_tensor *x = in_f32(net, "x");
    gwr_layer *l1 = lay1(net, "Relu", "l1", x);
    gwr_layer *l2 = lay1(net, "Relu", "l2", x);
    gwr_layer *l3 = lay1(net, "Relu", "l3", x);
    gwr_layer *l4 = lay2(net, "Add", "l4", out0(l1), out0(l2));
    gwr_layer *l5 = lay1(net, "Neg", "l5", out0(l4));
    if (!CHECK(x && l1 && l2 && l3 && l4 && l5)) goto done;
    CHECK_OK(gwr_network_mark_output(net, out0(l5)));
    /* already sorted: unchanged */
    gwr_layer *before[5];
    for (int i = 0; i < 5; i++) before[i] = gwr_network_layer(net, i);
    CHECK_OK(gwr_network_toposort(net));
    for (int i = 0; i < 5; i++) CHECK(gwr_network_layer(net, i) == before[i]);

    /* make it non-topological: l1 reads l3 (after it), l2 reads a new l6;
     * l7 (removed) reads l1 */
    CHECK_OK(gwr_layer_set_input(l1, 0, out0(l3)));
    gwr_layer *l6 = lay1(net, "Exp", "l6", x);
    if (!CHECK(l6 != NULL)) goto done;
    CHECK_OK(gwr_layer_set_input(l2, 0, out0(l6)));
    gwr_layer *l7 = lay1(net, "Exp", "l7", out0(l1)); /* removed, dead */
    CHECK_OK(gwr_layer_mark_as_removed(l7));
    CHECK(!is_topological(net));
    CHECK_OK(gwr_network_verify(net));
    CHECK_OK(gwr_network_toposort(net));
    CHECK(is_topological(net));
    CHECK_EQ_INT(gwr_network_num_layers(net), 7);
    CHECK(gwr_layer_index(l7) > gwr_layer_index(l1)); /* removed layers stay after their inputs */
    CHECK(gwr_layer_index(l3) < gwr_layer_index(l1));
    CHECK(gwr_layer_index(l6) < gwr_layer_index(l2));
    CHECK(gwr_layer_index(l5) > gwr_layer_index(l4));
    CHECK_OK(gwr_network_verify(net));
    /* stable: sorting again changes nothing */
    gwr_layer *after[7];
    for (int i = 0; i < 7; i++) after[i] = gwr_network_layer(net, i);
    CHECK_OK(gwr_network_toposort(net));
    for (int i = 0; i < 7; i++) CHECK(gwr_network_layer(net, i) == after[i]);
done:
    gwr_network_free(net);
}

/* A million-deep chain: toposort, verify and prune must not recurse. */
TEST(test_deep_chain) {
    enum { N = 1000000 };
    double t0 = now_s();
    gwr_network *net = gwr_network_new("deep");
    gwr_tensor *x = in_f32(net, "x"), *prev = x;
    gwr_layer *first = NULL, *last = NULL;
    for (int i = 0; i < N; i++) {
        gwr_layer *l = lay1(net, "Relu", NULL, prev);
        if (!l) break;
        if (!first) first = l;
        last = l;
        prev = out0(l);
    }
    if (!CHECK_EQ_INT(gwr_network_num_layers(net), N)) goto done;
    double t1 = now_s();
    /* a head layer created last that the whole chain now depends on */
    gwr_layer *head = lay1(net, "Neg", "head", x);
    if (!CHECK(head != NULL)) goto done;
    CHECK_OK(gwr_layer_set_input(first, 0, out0(head)));
    CHECK_OK(gwr_network_mark_output(net, out0(last)));
    double t2 = now_s();
    CHECK_OK(gwr_network_toposort(net));
    double t3 = now_s();
    CHECK(gwr_network_layer(net, 0) == head);
    CHECK(gwr_network_layer(net, 1) == first);
    CHECK(gwr_network_layer(net, N) == last);
    CHECK(is_topological(net));
    double t4 = now_s();
    CHECK_OK(gwr_network_verify(net));
    double t5 = now_s();
    int64_t n = -1;
    CHECK_OK(gwr_network_prune(net, &n));
    CHECK_EQ_INT(n, 0);
    double t6 = now_s();
    fprintf(stderr,
            "  deep chain of %d: build %.2f s, set_input %.3f s, toposort %.3f s, verify %.3f s, "
            "prune %.3f s\n",
            N, t1 - t0, t2 - t1, t3 - t2, t5 - t4, t6 - t5);
done:
    gwr_network_free(net);
}

/* ---- listeners --------------------------------------------------------------- */

typedef struct ev_log {
    int added, removed, dropped, replaced, changed, modified, tmodified;
    gwr_layer *last_added, *last_removed, *last_modified;
    gwr_tensor *old_t, *new_t;
    gwr_layer *changed_layer;
    int changed_slot;
    gwr_tensor *changed_old;
    gwr_tensor *changed_now;
    char dropped_names[256];
} ev_log;

static void on_added(void *ctx, gwr_layer *l) {
    ev_log *e = ctx;
    e->added++;
    e->last_added = l;
}
static void on_removed(void *ctx, gwr_layer *l) {
    ev_log *e = ctx;
    e->removed++;
    e->last_removed = l;
}
static void on_dropped(void *ctx, gwr_layer *l) {
    ev_log *e = ctx;
    e->dropped++;
    size_t len = strlen(e->dropped_names);
    snprintf(e->dropped_names + len, sizeof e->dropped_names - len, "[%s]", gwr_layer_name(l));
}
static void on_replaced(void *ctx, gwr_tensor *o, gwr_tensor *n) {
    ev_log *e = ctx;
    e->replaced++;
    e->old_t = o;
    e->new_t = n;
}
static void on_changed(void *ctx, gwr_layer *l, int slot, gwr_tensor *old_t) {
    ev_log *e = ctx;
    e->changed++;
    e->changed_layer = l;
    e->changed_slot = slot;
    e->changed_old = old_t;
    e->changed_now = gwr_layer_input(l, slot); /* called after the change */
}

static void on_modified(void *ctx, gwr_layer *l) {
    ev_log *e = ctx;
    e->modified++;
    e->last_modified = l;
}

static void on_tmodified(void *ctx, gwr_tensor *t) {
    (void)t;
    ((ev_log *)ctx)->tmodified++;
}

TEST(test_listeners) {
    gwr_network *net = gwr_network_new("listen");
    gwr_tensor *x = in_f32(net, "x"), *y = in_f32(net, "y");
    ev_log e, e2;
    memset(&e, 0, sizeof e);
    memset(&e2, 0, sizeof e2);
    gwr_listener ls = {on_added, on_removed, on_dropped, on_replaced, on_changed, &e, on_modified, on_tmodified, NULL};
    int id = gwr_network_add_listener(net, &ls);
    CHECK(id >= 0);
    ls.ctx = NULL; /* the struct was copied */
    gwr_layer *l = lay2(net, "Add", "l", x, x);
    if (!CHECK(l != NULL)) goto done;
    CHECK_EQ_INT(e.added, 1);
    CHECK(e.last_added == l);

    CHECK_OK(gwr_layer_set_input(l, 1, y));
    CHECK_EQ_INT(e.changed, 1);
    CHECK(e.changed_layer == l);
    CHECK_EQ_INT(e.changed_slot, 1);
    CHECK(e.changed_old == x);
    CHECK(e.changed_now == y);
    CHECK_EQ_INT(gwr_layer_set_input(l, 5, y), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(e.changed, 1); /* a refused change is not reported */

    /* attribute edits are reported as modifications; refused ones are not */
    CHECK_OK(gwr_layer_set_int(l, "k", 3));
    CHECK_OK(gwr_layer_set_int(l, "k", 4));
    CHECK_EQ_INT(e.modified, 2);
    CHECK(e.last_modified == l);
    CHECK_OK(gwr_layer_remove_attr(l, "k"));
    CHECK_EQ_INT(e.modified, 3);
    CHECK_EQ_INT(gwr_layer_remove_attr(l, "k"), GWR_ERR_NOT_FOUND);
    CHECK_EQ_INT(gwr_layer_set_int(l, "", 1), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(e.modified, 3);

    /* tensor edits: type, name, output marks, defaults */
    int tm = e.tmodified;
    gwr_dim d2[1] = {7};
    CHECK_OK(gwr_tensor_set_type(out0(l), GWR_FLOAT32, 1, d2));
    CHECK_OK(gwr_tensor_set_name(out0(l), "renamed"));
    CHECK_OK(gwr_network_mark_output(net, out0(l)));
    CHECK_OK(gwr_network_unmark_output(net, out0(l)));
    CHECK_EQ_INT(e.tmodified, tm + 4);
    CHECK_EQ_INT(gwr_tensor_set_name(out0(l), ""), GWR_ERR_INVALID_ARG);
    CHECK_EQ_INT(gwr_network_unmark_output(net, out0(l)), GWR_ERR_NOT_FOUND);
    CHECK_EQ_INT(e.tmodified, tm + 4); /* refused: not reported */

    gwr_layer *la = lay1n(net, "Relu", "la", x, "a");
    gwr_layer *lb = lay1n(net, "Tanh", "lb", x, "b");
    gwr_layer *u = lay1(net, "Neg", "u", out0(la));
    if (!CHECK(la && lb && u)) goto done;
    CHECK_EQ_INT(e.added, 4);
    CHECK(e.last_added == u);
    CHECK_OK(gwr_network_mark_output(net, out0(u)));
    CHECK_OK(gwr_tensor_replace_all_uses_with(out0(la), out0(lb)));
    CHECK_EQ_INT(e.replaced, 1);
    CHECK(e.old_t == out0(la));
    CHECK(e.new_t == out0(lb));
    int changed_before = e.changed;
    CHECK_EQ_INT(gwr_tensor_replace_all_uses_with(out0(lb), out0(u)), GWR_ERR_CYCLE);
    CHECK_EQ_INT(e.replaced, 1); /* refused: not reported */
    CHECK_EQ_INT(e.changed, changed_before);

    CHECK_OK(gwr_layer_mark_as_removed(la));
    CHECK_EQ_INT(e.removed, 1);
    CHECK(e.last_removed == la);

    /* a second listener with only one callback */
    gwr_listener ls2;
    memset(&ls2, 0, sizeof ls2);
    ls2.layer_added = on_added;
    ls2.ctx = &e2;
    int id2 = gwr_network_add_listener(net, &ls2);
    CHECK(id2 >= 0 && id2 != id);
    int64_t n = 0;
    CHECK_OK(gwr_network_prune(net, &n)); /* la (removed), l (dead) */
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(e.dropped, 2);
    CHECK_CONTAINS(e.dropped_names, "[la]");
    CHECK_CONTAINS(e.dropped_names, "[l]");
    CHECK_EQ_INT(e2.added, 0);
    gwr_layer *m = lay1(net, "Relu", "m", x);
    CHECK_EQ_INT(e.added, 5);
    CHECK_EQ_INT(e2.added, 1);
    CHECK(e2.last_added == m);

    /* remove by id */
    CHECK_OK(gwr_network_remove_listener(net, id));
    CHECK(gwr_network_remove_listener(net, id) != GWR_OK);
    CHECK(gwr_network_remove_listener(net, 12345) != GWR_OK);
    CHECK(gwr_network_remove_listener(net, -1) != GWR_OK);
    lay1(net, "Relu", "m2", x);
    CHECK_EQ_INT(e.added, 5);
    CHECK_EQ_INT(e2.added, 2);
    CHECK_OK(gwr_network_remove_listener(net, id2));
    lay1(net, "Relu", "m3", x);
    CHECK_EQ_INT(e2.added, 2);
    CHECK_EQ_INT(gwr_network_add_listener(net, NULL), -1);
done:
    gwr_network_free(net);
}

/* ---- DOT ------------------------------------------------------------------------ */

static char *read_all(FILE *f) {
    if (fseek(f, 0, SEEK_END) != 0) return NULL;
    long sz = ftell(f);
    if (sz < 0) return NULL;
    rewind(f);
    char *s = malloc((size_t)sz + 1);
    if (!s) return NULL;
    size_t got = fread(s, 1, (size_t)sz, f);
    s[got] = '\0';
    return s;
}

static int count_substr(const char *s, const char *sub) {
    int c = 0;
    for (const char *p = s; (p = strstr(p, sub)) != NULL; p += strlen(sub)) c++;
    return c;
}

TEST(test_write_dot) {
    gwr_network *net = gwr_network_new("dot \"net\"");
    gwr_dim dims[2] = {gwr_network_dim_sym(net, "batch"), 8};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, dims);
    gwr_layer *l1 = lay1n(net, "Relu", "relu_one", x, "r1");
    if (!CHECK(x && l1)) goto done;
    gwr_tensor_set_type(out0(l1), GWR_FLOAT32, 2, dims);
    /* names that need escaping in DOT */
    gwr_layer *l2 = lay2(net, "Add", "we\"ird\\name {x} <y>", out0(l1), x);
    gwr_tensor *ins[1] = {out0(l2)};
    gwr_layer *pl = gwr_network_add_layer(net, "FancyOp", "com.acme", "plugin_layer", 1, ins, 1, NULL);
    gwr_layer *gone = lay1(net, "Neg", "gone_layer", out0(l1));
    if (!CHECK(l2 && pl && gone)) goto done;
    static const float cv[2] = {1, 2};
    gwr_buffer *cb = gwr_buffer_new_copy(cv, sizeof cv);
    gwr_weights w = {GWR_FLOAT32, 1, (const int64_t[]){2}, NULL, sizeof cv, cb, NULL};
    w.data = gwr_buffer_data(cb);
    gwr_tensor *c = gwr_network_add_constant(net, "const_k", &w);
    gwr_buffer_release(cb);
    gwr_layer *l3 = lay2(net, "Mul", "mul_const", out0(pl), c);
    if (!CHECK(c && l3)) goto done;
    CHECK_OK(gwr_network_mark_output(net, out0(l3)));
    CHECK_OK(gwr_layer_mark_as_removed(gone));

    FILE *f = tmpfile();
    if (!CHECK(f != NULL)) goto done;
    CHECK_OK(gwr_network_write_dot(net, f));
    char *s = read_all(f);
    fclose(f);
    if (!CHECK(s != NULL)) goto done;
    CHECK_CONTAINS(s, "digraph");
    CHECK_CONTAINS(s, "relu_one");
    CHECK_CONTAINS(s, "plugin_layer");
    CHECK_CONTAINS(s, "FancyOp");
    CHECK_CONTAINS(s, "com.acme");
    CHECK_CONTAINS(s, "mul_const");
    CHECK_CONTAINS(s, "->");
    CHECK(strstr(s, "gone_layer") == NULL); /* removed layers left out */
    CHECK(count_substr(s, "->") >= 6);     /* x->relu, relu->add, x->add, add->plug, plug->mul, const->mul */
    free(s);

    /* Graphviz must accept it */
    char path[] = "/tmp/gwr_test_dot_XXXXXX";
    int fd = mkstemp(path);
    if (!CHECK(fd >= 0)) goto done;
    FILE *df = fdopen(fd, "w");
    if (CHECK(df != NULL)) {
        CHECK_OK(gwr_network_write_dot(net, df));
        fclose(df);
        CHECK(access("/usr/bin/dot", X_OK) == 0);
        char cmd[256];
        snprintf(cmd, sizeof cmd, "/usr/bin/dot -Tsvg '%s' -o /dev/null", path);
        int rc = system(cmd);
        CHECK(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
        if (!(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0)) {
            fprintf(stderr, "  dot rejected %s:\n", path);
            snprintf(cmd, sizeof cmd, "cat '%s' >&2", path);
            if (system(cmd) != 0) fprintf(stderr, "  (could not print it)\n");
        }
    }
    unlink(path);
    CHECK(gwr_network_write_dot(net, NULL) != GWR_OK);
done:
    gwr_network_free(net);
}

/* ---- NULL handles -------------------------------------------------------------- */

#define NULL_STATUS(call)                          \
    do {                                           \
        gwr_status s_ = (call);                    \
        CHECK(s_ != GWR_OK);                       \
        CHECK(gwr_last_errmsg()[0] != '\0');       \
    } while (0)

TEST(test_null_handles) {
    gwr_network *net = gwr_network_new("nulls");
    gwr_tensor *x = in_f32(net, "x");
    gwr_layer *l = lay1(net, "Relu", "l", x);
    if (!CHECK(x && l)) goto done;
    int64_t iv = 5;
    float fv = 1.0f;
    const char *sv = "keep";
    size_t sl = 3;
    const int64_t *io = NULL;
    const float *fo = NULL;
    const gwr_bytes *bo = NULL;
    const gwr_weights *wo = NULL;
    gwr_network *go = NULL;
    gwr_network *const *gso = NULL;
    int64_t n = 7;
    int slot = 3;
    gwr_type ty;
    memset(&ty, 0, sizeof ty);
    char buf[16];
    static const float wv[1] = {1};
    gwr_weights w = {GWR_FLOAT32, 0, NULL, wv, sizeof wv, NULL, NULL};
    gwr_listener ls;
    memset(&ls, 0, sizeof ls);

    /* core */
    CHECK(gwr_status_name(GWR_OK) != NULL);
    CHECK(gwr_buffer_data(NULL) == NULL);
    CHECK_EQ_INT(gwr_shape_numel(2, NULL), -1);

    /* networks */
    gwr_network_free(NULL);
    CHECK(gwr_network_new_subgraph(NULL, "s") == NULL);
    CHECK(gwr_last_errmsg()[0] != '\0');
    CHECK(gwr_network_errmsg(NULL) != NULL);
    (void)gwr_network_name(NULL);
    NULL_STATUS(gwr_network_set_name(NULL, "a"));
    CHECK(gwr_network_parent(NULL) == NULL);
    CHECK(gwr_network_owner(NULL) == NULL);
    CHECK(gwr_network_add_input(NULL, "a", GWR_FLOAT32, 0, NULL) == NULL);
    CHECK(gwr_last_errmsg()[0] != '\0');
    CHECK(gwr_network_add_input(net, NULL, GWR_FLOAT32, 0, NULL) == NULL);
    CHECK(gwr_network_add_input(net, "bad_rank", GWR_FLOAT32, 2, NULL) == NULL);
    CHECK_EQ_INT(gwr_network_num_inputs(NULL), -1);
    CHECK(gwr_network_input(NULL, 0) == NULL);
    NULL_STATUS(gwr_network_mark_output(NULL, x));
    NULL_STATUS(gwr_network_unmark_output(NULL, x));
    CHECK(gwr_network_mark_output(net, NULL) != GWR_OK);
    CHECK(gwr_network_unmark_output(net, NULL) != GWR_OK);
    CHECK_EQ_INT(gwr_network_num_outputs(NULL), -1);
    CHECK(gwr_network_output(NULL, 0) == NULL);
    CHECK_EQ_INT(gwr_network_num_layers(NULL), -1);
    CHECK(gwr_network_layer(NULL, 0) == NULL);
    CHECK_EQ_INT(gwr_network_num_live_layers(NULL), -1);
    CHECK(gwr_network_find_layer(NULL, "l") == NULL);
    CHECK(gwr_network_find_layer(net, NULL) == NULL);
    CHECK(gwr_network_find_tensor(NULL, "x") == NULL);
    CHECK(gwr_network_find_tensor(net, NULL) == NULL);
    CHECK(gwr_network_lookup_tensor(NULL, "x") == NULL);
    CHECK(gwr_network_lookup_tensor(net, NULL) == NULL);
    CHECK_EQ_INT(gwr_network_dim_sym(NULL, "b"), GWR_DIM_UNKNOWN);
    CHECK(gwr_network_dim_name(NULL, GWR_DIM_SYM_BASE) == NULL);
    CHECK(gwr_network_add_layer(NULL, "Relu", "", NULL, 1, &x, 1, NULL) == NULL);
    CHECK(gwr_last_errmsg()[0] != '\0');
    CHECK(gwr_network_add_constant(NULL, "c", &w) == NULL);
    NULL_STATUS(gwr_network_prune(NULL, &n));
    NULL_STATUS(gwr_network_verify(NULL));
    NULL_STATUS(gwr_network_toposort(NULL));
    NULL_STATUS(gwr_network_write_dot(NULL, stderr));
    CHECK_EQ_INT(gwr_network_add_listener(NULL, &ls), -1);
    NULL_STATUS(gwr_network_remove_listener(NULL, 0));

    /* layers */
    CHECK(gwr_layer_network(NULL) == NULL);
    (void)gwr_layer_name(NULL);
    NULL_STATUS(gwr_layer_set_name(NULL, "a"));
    (void)gwr_layer_type_of(NULL);
    (void)gwr_layer_op(NULL);
    (void)gwr_layer_domain(NULL);
    CHECK_EQ_INT(gwr_layer_op_id(NULL), GWR_OP_CUSTOM);
    CHECK_EQ_INT(gwr_layer_ew_op(NULL), GWR_EW_NONE);
    CHECK_EQ_INT(gwr_layer_index(NULL), -1);
    CHECK_EQ_INT(gwr_layer_num_inputs(NULL), -1);
    CHECK(gwr_layer_input(NULL, 0) == NULL);
    NULL_STATUS(gwr_layer_set_input(NULL, 0, x));
    NULL_STATUS(gwr_layer_append_input(NULL, x));
    CHECK_EQ_INT(gwr_layer_num_outputs(NULL), -1);
    CHECK(gwr_layer_output(NULL, 0) == NULL);
    NULL_STATUS(gwr_layer_mark_as_removed(NULL));
    (void)gwr_layer_is_removed(NULL);
    (void)gwr_layer_doc(NULL);
    NULL_STATUS(gwr_layer_set_doc(NULL, "d"));

    /* attributes */
    (void)gwr_attr_type_name((gwr_attr_type)99);
    CHECK_EQ_INT(gwr_layer_num_attrs(NULL), -1);
    CHECK(gwr_layer_attr_name(NULL, 0) == NULL);
    CHECK_EQ_INT(gwr_layer_attr_type(NULL, 0), GWR_ATTR_UNDEFINED);
    CHECK_EQ_INT(gwr_layer_find_attr(NULL, "a"), -1);
    CHECK_EQ_INT(gwr_layer_find_attr(l, NULL), -1);
    CHECK_EQ_INT(gwr_layer_has_attr(NULL, "a"), 0);
    NULL_STATUS(gwr_layer_remove_attr(NULL, "a"));
    NULL_STATUS(gwr_layer_get_int(NULL, "a", &iv));
    NULL_STATUS(gwr_layer_get_float(NULL, "a", &fv));
    NULL_STATUS(gwr_layer_get_string(NULL, "a", &sv, &sl));
    NULL_STATUS(gwr_layer_get_ints(NULL, "a", &io, &n));
    NULL_STATUS(gwr_layer_get_floats(NULL, "a", &fo, &n));
    NULL_STATUS(gwr_layer_get_strings(NULL, "a", &bo, &n));
    NULL_STATUS(gwr_layer_get_tensor(NULL, "a", &wo));
    NULL_STATUS(gwr_layer_get_tensors(NULL, "a", &wo, &n));
    NULL_STATUS(gwr_layer_get_graph(NULL, "a", &go));
    NULL_STATUS(gwr_layer_get_graphs(NULL, "a", &gso, &n));
    CHECK_EQ_INT(iv, 5);
    CHECK(fv == 1.0f);
    CHECK_STR(sv, "keep");
    CHECK_EQ_INT(n, 7);
    CHECK(io == NULL && fo == NULL && bo == NULL && wo == NULL && go == NULL && gso == NULL);
    NULL_STATUS(gwr_layer_set_int(NULL, "a", 1));
    NULL_STATUS(gwr_layer_set_float(NULL, "a", 1.0f));
    NULL_STATUS(gwr_layer_set_string(NULL, "a", "s"));
    NULL_STATUS(gwr_layer_set_bytes(NULL, "a", "s", 1));
    NULL_STATUS(gwr_layer_set_ints(NULL, "a", &iv, 1));
    NULL_STATUS(gwr_layer_set_floats(NULL, "a", &fv, 1));
    NULL_STATUS(gwr_layer_set_strings(NULL, "a", &sv, 1));
    NULL_STATUS(gwr_layer_set_tensor(NULL, "a", &w));
    NULL_STATUS(gwr_layer_set_tensors(NULL, "a", &w, 1));
    NULL_STATUS(gwr_layer_set_graph(NULL, "a", net));
    NULL_STATUS(gwr_layer_set_graphs(NULL, "a", &net, 1));
    /* a valid layer with NULL names / values / outputs */
    CHECK(gwr_layer_set_int(l, NULL, 1) != GWR_OK);
    CHECK(gwr_layer_set_string(l, "s", NULL) != GWR_OK);
    CHECK(gwr_layer_set_bytes(l, "s", NULL, 3) != GWR_OK);
    CHECK(gwr_layer_set_ints(l, "s", NULL, 3) != GWR_OK);
    CHECK(gwr_layer_set_ints(l, "s", &iv, -1) != GWR_OK);
    CHECK(gwr_layer_set_tensor(l, "s", NULL) != GWR_OK);
    CHECK(gwr_layer_set_graph(l, "s", NULL) != GWR_OK);
    CHECK(gwr_layer_get_int(l, NULL, &iv) != GWR_OK);
    CHECK_OK(gwr_layer_set_int(l, "i", 3));
    CHECK(gwr_layer_get_int(l, "i", NULL) != GWR_OK);
    CHECK(gwr_layer_remove_attr(l, NULL) != GWR_OK);
    CHECK_EQ_INT(gwr_layer_num_attrs(l), 1);

    /* tensors */
    CHECK(gwr_tensor_network(NULL) == NULL);
    (void)gwr_tensor_name(NULL);
    NULL_STATUS(gwr_tensor_set_name(NULL, "a"));
    CHECK(gwr_tensor_set_name(x, NULL) != GWR_OK);
    CHECK_STR(gwr_tensor_name(x), "x");
    (void)gwr_tensor_kind(NULL);
    CHECK_EQ_INT(gwr_tensor_dtype(NULL), GWR_UNDEFINED);
    CHECK_EQ_INT(gwr_tensor_rank(NULL), -1);
    CHECK_EQ_INT(gwr_tensor_dim(NULL, 0), GWR_DIM_UNKNOWN);
    CHECK(gwr_tensor_dims(NULL) == NULL);
    NULL_STATUS(gwr_tensor_set_type(NULL, GWR_FLOAT32, 0, NULL));
    NULL_STATUS(gwr_tensor_value_type(NULL, &ty));
    NULL_STATUS(gwr_tensor_set_value_type(NULL, &ty));
    CHECK(gwr_tensor_type_str(NULL, buf, sizeof buf) < 0);
    CHECK(gwr_tensor_parent(NULL) == NULL);
    CHECK_EQ_INT(gwr_tensor_parent_output_index(NULL), -1);
    CHECK_EQ_INT(gwr_tensor_is_input(NULL), 0);
    CHECK_EQ_INT(gwr_tensor_output_index(NULL), -1);
    CHECK_EQ_INT(gwr_tensor_num_users(NULL), -1);
    CHECK(gwr_tensor_user(NULL, 0, &slot) == NULL);
    NULL_STATUS(gwr_tensor_replace_all_uses_with(NULL, x));
    NULL_STATUS(gwr_tensor_replace_all_uses_with(x, NULL));
    NULL_STATUS(gwr_tensor_replace_all_uses_except(NULL, x, l));
    NULL_STATUS(gwr_tensor_replace_all_uses_except(x, NULL, l));
    CHECK(gwr_layer_input(l, 0) == x);

    /* builders from functional.h: NULL tensors are errors, not crashes */
    CHECK(gwr_add(net, x, NULL) == NULL);
    CHECK(gwr_add(NULL, x, x) == NULL);
    CHECK(gwr_relu(net, NULL) == NULL);
    CHECK_OK(gwr_network_verify(net));
done:
    gwr_network_free(net);
}

/* Inserting a chain between two layers re-ranks the chain, not the
 * network downstream: a rewrite that lengthens a path must not cost
 * O(layers downstream) (it did, and made a pass quadratic). */
TEST(test_rank_insertion_is_local) {
    gwr_network *net = gwr_network_new("ranks");
    gwr_tensor *t = in_f32(net, "x");
    gwr_layer *first = NULL;
    for (int i = 0; i < 200; i++) {
        gwr_layer *l = lay1(net, "Relu", NULL, t);
        if (!first) first = l;
        t = gwr_layer_output(l, 0);
    }
    gwr_network_mark_output(net, t);
    gwr_layer *second = gwr_tensor_user(gwr_layer_output(first, 0), 0, NULL);
    int32_t before[200];
    for (int i = 0; i < 200; i++) before[i] = gwr_network_layer(net, i)->rank;
    /* Three times: a chain of 3 new layers between first and second. */
    for (int k = 0; k < 3; k++) {
        gwr_tensor *o = gwr_layer_output(first, 0), *c = o;
        for (int j = 0; j < 3; j++) c = gwr_layer_output(lay1(net, "Neg", NULL, c), 0);
        gwr_layer *reader = gwr_tensor_user(o, 0, NULL);
        CHECK_OK(gwr_layer_set_input(reader, 0, c));
        CHECK_OK(gwr_network_verify(net)); /* ranks stay below consumers */
    }
    int raised = 0;
    for (int i = 1; i < 200; i++) raised += gwr_network_layer(net, i)->rank != before[i];
    /* The first insertion fits below `second`; later ones raise at most a
     * few layers, never the whole chain. */
    CHECK(raised <= 4);
    CHECK(second->rank >= before[1]);
    /* The same through replace_all_uses_with. */
    gwr_tensor *o = gwr_layer_output(second, 0), *c = o;
    for (int j = 0; j < 3; j++) c = gwr_layer_output(lay1(net, "Neg", NULL, c), 0);
    CHECK_OK(gwr_tensor_replace_all_uses_except(o, c, gwr_tensor_parent(gwr_layer_input(gwr_tensor_parent(gwr_layer_input(gwr_tensor_parent(c), 0)), 0))));
    CHECK_OK(gwr_network_verify(net));
    raised = 0;
    for (int i = 2; i < 200; i++) raised += gwr_network_layer(net, i)->rank != before[i];
    CHECK(raised <= 8);
    gwr_network_free(net);
}

/* Generated names live outside the name maps (gwr_network.gen in
 * ir_internal.h): every lookup, clash, rename, swap and prune must see them
 * exactly as it sees names in the maps. */
TEST(test_generated_names) {
    gwr_network *net = gwr_network_new("gen");
    gwr_tensor *x = in_f32(net, "x");
    gwr_layer *relu = lay1(net, "Relu", NULL, x);
    gwr_tensor *sins[1] = {relu ? out0(relu) : NULL};
    gwr_layer *sp = relu ? gwr_network_add_layer(net, "Split", "", NULL, 1, sins, 3, NULL) : NULL;
    gwr_layer *neg = sp ? lay1(net, "Neg", NULL, gwr_layer_output(sp, 2)) : NULL;
    if (!CHECK(relu && sp && neg)) goto done;
    char rn[64], sn[64], s1[80], s2[80], s3[80], lead0[80];
    snprintf(rn, sizeof rn, "%s", gwr_layer_name(relu));
    snprintf(sn, sizeof sn, "%s", gwr_layer_name(sp));
    snprintf(s1, sizeof s1, "%s:1", sn);
    snprintf(s2, sizeof s2, "%s:2", sn);
    snprintf(s3, sizeof s3, "%s:3", sn);
    CHECK(!strncmp(rn, "Relu_", 5) && !strncmp(sn, "Split_", 6));
    CHECK_STR(gwr_tensor_name(gwr_layer_output(sp, 1)), s1);
    CHECK(gwr_network_find_layer(net, rn) == relu);
    CHECK(gwr_network_find_layer(net, sn) == sp);
    CHECK(gwr_network_find_tensor(net, rn) == out0(relu));
    CHECK(gwr_network_find_tensor(net, sn) == gwr_layer_output(sp, 0));
    CHECK(gwr_network_find_tensor(net, s1) == gwr_layer_output(sp, 1));
    CHECK(gwr_network_find_tensor(net, s2) == gwr_layer_output(sp, 2));
    CHECK(gwr_network_lookup_tensor(net, s2) == gwr_layer_output(sp, 2));
    /* near misses */
    CHECK(gwr_network_find_tensor(net, s3) == NULL);
    CHECK(gwr_network_find_layer(net, s1) == NULL);
    snprintf(lead0, sizeof lead0, "Split_0%s", sn + 6);
    CHECK(gwr_network_find_layer(net, lead0) == NULL);
    CHECK(gwr_network_find_layer(net, "Relu_") == NULL);
    CHECK(gwr_network_find_layer(net, "_7") == NULL);
    CHECK(gwr_network_find_tensor(net, ":1") == NULL);
    CHECK(gwr_network_find_layer(net, "Relu_99999999999999999999") == NULL);
    char other[64];
    snprintf(other, sizeof other, "Tanh_%s", rn + 5); /* same number, other op */
    CHECK(gwr_network_find_layer(net, other) == NULL);
    CHECK_OK(gwr_network_verify(net));

    /* every way of taking a generated name is refused */
    CHECK(gwr_network_add_input(net, rn, GWR_FLOAT32, 2, D24) == NULL);
    CHECK_CONTAINS(gwr_network_errmsg(net), rn);
    CHECK(gwr_network_add_input(net, s1, GWR_FLOAT32, 2, D24) == NULL);
    CHECK(lay1(net, "Tanh", rn, x) == NULL);
    CHECK(lay1(net, "Tanh", sn, x) == NULL);
    CHECK(lay1n(net, "Tanh", "t_ok", x, s2) == NULL);
    CHECK_EQ_INT(gwr_layer_set_name(neg, sn), GWR_ERR_DUPLICATE);
    CHECK_EQ_INT(gwr_tensor_set_name(out0(neg), s1), GWR_ERR_DUPLICATE);
    CHECK_EQ_INT(gwr_tensor_set_name(x, rn), GWR_ERR_DUPLICATE);
    CHECK_OK(gwr_network_verify(net));

    /* renaming a generated layer keeps its outputs' names findable */
    CHECK_OK(gwr_layer_set_name(sp, "splitter"));
    CHECK(gwr_network_find_layer(net, sn) == NULL);
    CHECK(gwr_network_find_layer(net, "splitter") == sp);
    CHECK(gwr_network_find_tensor(net, sn) == gwr_layer_output(sp, 0));
    CHECK(gwr_network_find_tensor(net, s1) == gwr_layer_output(sp, 1));
    CHECK_OK(gwr_network_verify(net));
    /* its old name is free again, for a layer */
    gwr_layer *again = lay1(net, "Split", sn, x);
    CHECK(again != NULL && gwr_network_find_layer(net, sn) == again);
    /* renaming a generated tensor frees its name */
    CHECK_OK(gwr_tensor_set_name(gwr_layer_output(sp, 1), "part1"));
    CHECK(gwr_network_find_tensor(net, s1) == NULL);
    CHECK(gwr_network_find_tensor(net, "part1") == gwr_layer_output(sp, 1));
    CHECK_OK(gwr_tensor_set_name(out0(neg), s1));
    CHECK(gwr_network_find_tensor(net, s1) == out0(neg));
    CHECK(gwr_network_find_tensor(net, s2) == gwr_layer_output(sp, 2));
    CHECK_OK(gwr_network_verify(net));

    /* a network output made by a generated layer keeps its name when its
     * uses move to another tensor (the names swap) */
    gwr_layer *sig = lay1(net, "Sigmoid", NULL, x);
    gwr_layer *abs_ = lay1(net, "Abs", NULL, x);
    if (!CHECK(sig && abs_)) goto done;
    char sign[64], absn[64];
    snprintf(sign, sizeof sign, "%s", gwr_layer_name(sig));
    snprintf(absn, sizeof absn, "%s", gwr_layer_name(abs_));
    CHECK_OK(gwr_network_mark_output(net, out0(sig)));
    CHECK_OK(gwr_tensor_replace_all_uses_with(out0(sig), out0(abs_)));
    CHECK(gwr_network_output(net, 0) == out0(abs_));
    CHECK_STR(gwr_tensor_name(out0(abs_)), sign);
    CHECK(gwr_network_find_tensor(net, sign) == out0(abs_));
    CHECK(gwr_network_find_tensor(net, absn) == out0(sig));
    CHECK(gwr_network_find_layer(net, sign) == sig);
    CHECK_OK(gwr_network_verify(net));

    /* prune: the dropped layers' names go, new generated names stay unique */
    CHECK_OK(gwr_layer_mark_as_removed(sig));
    int64_t pruned = 0;
    CHECK_OK(gwr_network_prune(net, &pruned));
    CHECK(pruned >= 1);
    CHECK(gwr_network_find_layer(net, sign) == NULL);
    CHECK(gwr_network_find_tensor(net, absn) == NULL);
    CHECK(gwr_network_find_tensor(net, sign) == out0(abs_));
    CHECK_OK(gwr_network_verify(net));
    for (int i = 0; i < 50; i++) {
        gwr_layer *k = lay1(net, i % 2 ? "Sigmoid" : "Abs", NULL, x);
        if (!CHECK(k != NULL)) break;
        CHECK(gwr_network_find_layer(net, gwr_layer_name(k)) == k);
        CHECK(gwr_network_find_tensor(net, gwr_tensor_name(out0(k))) == out0(k));
    }
    CHECK_OK(gwr_network_verify(net));
done:
    gwr_network_free(net);
}

/* Generated names are unique across a network and all its bodies (ONNX
 * wants one name space for a model, subgraphs included): layers and
 * outputs made unnamed in the main graph, in two bodies and in a body of
 * a body never share a name, nor take a name given in any of them that
 * looks generated ("Relu_7" given in a body, "Relu_9:1" in another). */
TEST(test_generated_names_across_bodies) {
    enum { PER = 50 };
    gwr_network *net = gwr_network_new("root");
    gwr_network *b1 = gwr_network_new_subgraph(net, "b1"), *b2 = gwr_network_new_subgraph(net, "b2");
    gwr_network *b11 = gwr_network_new_subgraph(b1, "b11");
    gwr_network *nets[4] = {net, b1, b2, b11};
    gwr_tensor *x = in_f32(net, "x");
    CHECK(lay1(b1, "Relu", "Relu_7", x) != NULL);
    CHECK(lay1n(b2, "Relu", "Relu_9", x, "Relu_9:1") != NULL);
    char *names[4 * PER * 2];
    int nn = 0;
    for (int i = 0; i < PER; i++)
        for (int k = 0; k < 4; k++) {
            gwr_layer *l = lay1(nets[k], "Relu", NULL, x);
            if (!CHECK(l != NULL)) goto done;
            names[nn++] = gwr_strdup(gwr_layer_name(l));
            names[nn++] = gwr_strdup(gwr_tensor_name(out0(l)));
            CHECK(strcmp(gwr_layer_name(l), "Relu_7") && strcmp(gwr_layer_name(l), "Relu_9"));
        }
    /* a layer and its own output 0 share a name; nothing else does */
    for (int i = 0; i < nn; i += 2) {
        CHECK_STR(names[i], names[i + 1]);
        for (int j = i + 2; j < nn; j += 2)
            if (!CHECK(strcmp(names[i], names[j]))) fprintf(stderr, "  '%s' made twice\n", names[i]);
    }
    for (int k = 0; k < 4; k++) CHECK_OK(gwr_network_verify(nets[k]));
done:
    for (int i = 0; i < nn; i++) gwr_free(names[i]);
    gwr_network_free(net);
}

int main(void) {
    RUN(test_errmsg_initially_empty);
    RUN(test_rank_insertion_is_local);
    RUN(test_version_and_status);
    RUN(test_dtypes);
    RUN(test_value_kind_and_numel);
    RUN(test_buffers);
    RUN(test_symbolic_dims);
    RUN(test_value_types);
    RUN(test_network_io);
    RUN(test_layer_accessors);
    RUN(test_names_lookup_rename);
    RUN(test_generated_names);
    RUN(test_op_table);
    RUN(test_set_input);
    RUN(test_rauw_users);
    RUN(test_rauw_outputs);
    RUN(test_rauw_subgraph_users);
    RUN(test_rauw_except);
    RUN(test_costs_flat);
    RUN(test_mark_removed);
    RUN(test_prune);
    RUN(test_prune_sweeps_shared_inputs);
    RUN(test_prune_refuses_used_removed);
    RUN(test_generated_names_vs_explicit);
    RUN(test_names_under_churn);
    RUN(test_prune_dead_chains);
    RUN(test_prune_with_detached_subgraph);
    RUN(test_subgraphs);
    RUN(test_attrs_scalars_lists);
    RUN(test_attrs_tensors);
    RUN(test_add_constant);
    RUN(test_verify);
    RUN(test_toposort);
    RUN(test_deep_chain);
    RUN(test_listeners);
    RUN(test_write_dot);
    RUN(test_null_handles);
    RUN(test_generated_names_across_bodies);
    return check_report();
}
