/* test_functional.c - the builders and shape/dtype inference: every
 * builder, the rules of infer.c with their edge cases, and the error paths
 * (NULL return, a message naming the op, the network left unchanged). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"

/* ---- helpers ------------------------------------------------------------ */

static gwr_network *net; /* a fresh network for every test (see RUN_NET) */

#define RUN_NET(fn)                         \
    do {                                    \
        net = gwr_network_new(#fn);         \
        RUN(fn);                            \
        gwr_network_free(net);              \
        net = NULL;                         \
    } while (0)

#define NDIMS(...) ((int)(sizeof((gwr_dim[]){__VA_ARGS__}) / sizeof(gwr_dim)))
#define DIMS(...) NDIMS(__VA_ARGS__), (gwr_dim[]){__VA_ARGS__}
#define I64S(...) NDIMS(__VA_ARGS__), (int64_t[]){__VA_ARGS__}
#define V(...) ((int64_t[]){__VA_ARGS__})

static gwr_tensor *input(gwr_dtype dt, int rank, const gwr_dim *dims) {
    static int k;
    char name[32];
    snprintf(name, sizeof name, "in%d", k++);
    return gwr_network_add_input(net, name, dt, rank, dims);
}
/* IN(GWR_FLOAT32, 2, 3): a graph input float32[2,3]. */
#define IN(dt, ...) input((dt), DIMS(__VA_ARGS__))
#define SCALAR(dt) input((dt), 0, NULL)

/* "f32[2,batch,?]" for a tensor's type, independent of the library's own
 * dtype names; "f32[*]" for an unknown rank; "(null)" for NULL. */
static const char *ty(const gwr_tensor *t) {
    static char bufs[8][256];
    static int k;
    static const char *const names[] = {
        [GWR_UNDEFINED] = "undef", [GWR_FLOAT32] = "f32", [GWR_UINT8] = "u8",
        [GWR_INT8] = "i8", [GWR_UINT16] = "u16", [GWR_INT16] = "i16", [GWR_INT32] = "i32",
        [GWR_INT64] = "i64", [GWR_STRING] = "str", [GWR_BOOL] = "bool", [GWR_FLOAT16] = "f16",
        [GWR_FLOAT64] = "f64", [GWR_UINT32] = "u32", [GWR_UINT64] = "u64", [GWR_BFLOAT16] = "bf16"};
    char *b = bufs[k++ & 7];
    size_t n;
    int rank;
    gwr_dtype dt;
    if (!t)
        return "(null)";
    dt = gwr_tensor_dtype(t);
    n = (size_t)snprintf(b, 256, "%s", dt < GWR_BFLOAT16 + 1 && names[dt] ? names[dt] : "dt?");
    rank = gwr_tensor_rank(t);
    if (rank < 0) {
        snprintf(b + n, 256 - n, "[*]");
        return b;
    }
    b[n++] = '[';
    for (int i = 0; i < rank && n < 200; i++) {
        gwr_dim d = gwr_tensor_dim(t, i);
        const char *sym = gwr_network_dim_name(gwr_tensor_network(t), d);
        if (i)
            b[n++] = ',';
        if (sym)
            n += (size_t)snprintf(b + n, 256 - n, "%s", sym);
        else if (d >= 0)
            n += (size_t)snprintf(b + n, 256 - n, "%lld", (long long)d);
        else
            n += (size_t)snprintf(b + n, 256 - n, "?");
    }
    snprintf(b + n, 256 - n, "]");
    return b;
}

#define CHECK_TYPE(t, s) CHECK_STR(ty(t), s)

/* Layers of other classes than CONSTANT at index >= from. */
static int64_t non_constants_since(int64_t from) {
    int64_t n = 0;
    for (int64_t i = from; i < gwr_network_num_layers(net); i++)
        n += gwr_layer_type(gwr_network_layer(net, i)) != GWR_LAYER_CONSTANT;
    return n;
}

/* The call fails: NULL, a message containing `what` (the op name), and the
 * network keeps its layers (nothing half-built is left behind). */
#define CHECK_FAILS(expr, what)                                          \
    do {                                                                 \
        int64_t n0_ = gwr_network_num_layers(net);                       \
        const void *r_ = (expr);                                         \
        CHECK(r_ == NULL);                                               \
        CHECK_CONTAINS(gwr_network_errmsg(net), what);                   \
        CHECK_EQ_INT(gwr_network_num_layers(net), n0_);                  \
    } while (0)

/* The same for calls whose arguments create constants (CI64S(...) and the
 * like inside expr): no layer but those constants is left behind. */
#define CHECK_FAILS_CALL(expr, what)                                     \
    do {                                                                 \
        int64_t n0_ = gwr_network_num_layers(net);                       \
        const void *r_ = (expr);                                         \
        CHECK(r_ == NULL);                                               \
        CHECK_CONTAINS(gwr_network_errmsg(net), what);                   \
        CHECK_EQ_INT(non_constants_since(n0_), 0);                       \
    } while (0)

/* One-output gwr_op_call of a default-domain op; NULL on error. */
static gwr_tensor *call(const char *op, int nin, gwr_tensor *const *in, const gwr_args *attrs) {
    gwr_tensor *out = NULL;
    gwr_layer *l = gwr_op_call(net, "", op, nin, in, attrs, 1, &out);
    return l ? out : NULL;
}
#define TS(...) ((gwr_tensor *[]){__VA_ARGS__})
#define CALL(op, attrs, ...) call(op, (int)(sizeof(TS(__VA_ARGS__)) / sizeof(gwr_tensor *)), TS(__VA_ARGS__), attrs)
#define CALL0(op, attrs) call(op, 0, NULL, attrs) /* no inputs */

static gwr_args *args_int(const char *name, int64_t v) {
    gwr_args *a = gwr_args_new();
    gwr_args_set_int(a, name, v);
    return a;
}

static gwr_args *args_ints(const char *name, int n, const int64_t *v) {
    gwr_args *a = gwr_args_new();
    gwr_args_set_ints(a, name, n, v);
    return a;
}

static gwr_tensor *ci64s(int n, const int64_t *v) { return gwr_constant_i64s(net, n, v); }
#define CI64S(...) ci64s(I64S(__VA_ARGS__))

static const char *op_of(const gwr_tensor *t) {
    return t && gwr_tensor_parent(t) ? gwr_layer_op(gwr_tensor_parent(t)) : "(none)";
}

/* ---- constants ---------------------------------------------------------- */

TEST(constants_scalar_and_vector) {
    gwr_tensor *f = gwr_constant_f32(net, 2.5f), *i = gwr_constant_i64(net, -7);
    gwr_tensor *v = CI64S(4, 5, 6);
    const gwr_weights *w = NULL;
    CHECK_TYPE(f, "f32[]");
    CHECK_TYPE(i, "i64[]");
    CHECK_TYPE(v, "i64[3]");
    CHECK_EQ_INT(gwr_layer_type(gwr_tensor_parent(f)), GWR_LAYER_CONSTANT);
    CHECK_STR(op_of(v), "Constant");
    if (CHECK_OK(gwr_layer_get_tensor(gwr_tensor_parent(v), "value", &w)) && CHECK(w)) {
        CHECK_EQ_INT(w->dtype, GWR_INT64);
        CHECK_EQ_INT(w->rank, 1);
        CHECK_EQ_INT(w->nbytes, 24);
        CHECK_EQ_INT(((const int64_t *)w->data)[2], 6);
    }
    if (CHECK_OK(gwr_layer_get_tensor(gwr_tensor_parent(f), "value", &w)) && CHECK(w))
        CHECK(((const float *)w->data)[0] == 2.5f);
}

TEST(constants_general) {
    float data[6] = {1, 2, 3, 4, 5, 6};
    const char *strs[2] = {"ab", ""};
    const gwr_weights *w = NULL;
    gwr_tensor *t = gwr_constant(net, GWR_FLOAT32, 2, (int64_t[]){2, 3}, data);
    gwr_tensor *s = gwr_constant(net, GWR_STRING, 1, (int64_t[]){2}, strs);
    gwr_tensor *z = gwr_constant(net, GWR_INT32, 1, (int64_t[]){0}, NULL);
    gwr_tensor *zeros = gwr_constant(net, GWR_INT32, 1, (int64_t[]){3}, NULL);
    data[0] = 99; /* the constant holds a copy */
    CHECK_TYPE(t, "f32[2,3]");
    if (CHECK_OK(gwr_layer_get_tensor(gwr_tensor_parent(t), "value", &w)) && CHECK(w))
        CHECK(((const float *)w->data)[0] == 1 && ((const float *)w->data)[5] == 6);
    CHECK_TYPE(s, "str[2]");
    if (CHECK_OK(gwr_layer_get_tensor(gwr_tensor_parent(s), "value", &w)) && CHECK(w)) {
        const gwr_bytes *b = w->data;
        CHECK_EQ_INT(b[0].len, 2);
        CHECK(memcmp(b[0].data, "ab", 2) == 0);
        CHECK_EQ_INT(b[1].len, 0);
    }
    CHECK_TYPE(z, "i32[0]");
    if (CHECK_OK(gwr_layer_get_tensor(gwr_tensor_parent(zeros), "value", &w)) && CHECK(w))
        CHECK(((const int32_t *)w->data)[2] == 0);
}

TEST(constants_bad_input) {
    float v = 1;
    const char *strs[1] = {NULL};
    CHECK(gwr_constant_f32(NULL, 1.0f) == NULL);
    CHECK(strlen(gwr_last_errmsg()) > 0);
    CHECK(gwr_constant_i64s(NULL, 1, (int64_t[]){1}) == NULL);
    CHECK_FAILS_CALL(gwr_constant(net, GWR_UNDEFINED, 0, NULL, &v), "dtype");
    CHECK_FAILS_CALL(gwr_constant(net, (gwr_dtype)99, 0, NULL, &v), "dtype");
    CHECK_FAILS_CALL(gwr_constant(net, GWR_FLOAT32, 1, (int64_t[]){-2}, &v), "gwr_constant");
    CHECK_FAILS_CALL(gwr_constant(net, GWR_FLOAT32, 2, NULL, &v), "gwr_constant");
    CHECK_FAILS_CALL(gwr_constant(net, GWR_FLOAT32, -1, NULL, &v), "gwr_constant");
    CHECK_FAILS_CALL(gwr_constant(net, GWR_FLOAT32, 2, (int64_t[]){INT64_MAX, 4}, NULL), "gwr_constant");
    CHECK_FAILS_CALL(gwr_constant(net, GWR_STRING, 1, (int64_t[]){1}, strs), "NULL");
    CHECK_FAILS_CALL(gwr_constant_i64s(net, -1, NULL), "gwr_constant_i64s");
    CHECK_FAILS_CALL(gwr_constant_i64s(net, 2, NULL), "gwr_constant_i64s");
}

/* ---- element-wise -------------------------------------------------------- */

TEST(broadcast_known) {
    CHECK_TYPE(gwr_add(net, IN(GWR_FLOAT32, 2, 3), IN(GWR_FLOAT32, 3)), "f32[2,3]");
    CHECK_TYPE(gwr_mul(net, IN(GWR_FLOAT32, 2, 1, 4), IN(GWR_FLOAT32, 3, 1)), "f32[2,3,4]");
    CHECK_TYPE(gwr_sub(net, SCALAR(GWR_FLOAT32), IN(GWR_FLOAT32, 5)), "f32[5]");
    CHECK_TYPE(gwr_div(net, SCALAR(GWR_FLOAT32), SCALAR(GWR_FLOAT32)), "f32[]");
    CHECK_TYPE(gwr_max(net, IN(GWR_INT32, 0, 1), IN(GWR_INT32, 1, 7)), "i32[0,7]");
    CHECK_TYPE(gwr_min(net, IN(GWR_INT32, 4, 1), input(GWR_INT32, -1, NULL)), "i32[*]");
}

TEST(broadcast_symbolic) {
    gwr_dim B = gwr_network_dim_sym(net, "batch"), S = gwr_network_dim_sym(net, "seq");
    gwr_dim U = GWR_DIM_UNKNOWN;
    CHECK(GWR_DIM_IS_SYM(B) && GWR_DIM_IS_SYM(S) && B != S);
    CHECK_TYPE(gwr_add(net, IN(GWR_FLOAT32, B, 3), IN(GWR_FLOAT32, 1, 3)), "f32[batch,3]");
    CHECK_TYPE(gwr_add(net, IN(GWR_FLOAT32, B, 3), IN(GWR_FLOAT32, B, 1)), "f32[batch,3]");
    CHECK_TYPE(gwr_add(net, IN(GWR_FLOAT32, B), IN(GWR_FLOAT32, 4)), "f32[4]");
    CHECK_TYPE(gwr_add(net, IN(GWR_FLOAT32, 4), IN(GWR_FLOAT32, B)), "f32[4]");
    CHECK_TYPE(gwr_add(net, IN(GWR_FLOAT32, B), IN(GWR_FLOAT32, S)), "f32[?]");
    CHECK_TYPE(gwr_add(net, IN(GWR_FLOAT32, U), IN(GWR_FLOAT32, 3)), "f32[3]");
    CHECK_TYPE(gwr_add(net, IN(GWR_FLOAT32, U), IN(GWR_FLOAT32, 1)), "f32[?]");
    CHECK_TYPE(gwr_add(net, IN(GWR_FLOAT32, U), IN(GWR_FLOAT32, B)), "f32[?]");
    CHECK_TYPE(gwr_add(net, IN(GWR_FLOAT32, B, 1, S), IN(GWR_FLOAT32, 1, 8, S)), "f32[batch,8,seq]");
    CHECK_TYPE(gwr_where(net, IN(GWR_BOOL, B, 1), IN(GWR_FLOAT32, 1, S), IN(GWR_FLOAT32, 1)),
               "f32[batch,seq]");
}

TEST(broadcast_errors) {
    gwr_tensor *a = IN(GWR_FLOAT32, 2, 3), *b = IN(GWR_FLOAT32, 4, 3);
    const char *m;
    CHECK_FAILS(gwr_add(net, a, b), "Add");
    m = gwr_network_errmsg(net);
    CHECK_CONTAINS(m, "cannot broadcast");
    CHECK_CONTAINS(m, "[2,3]");
    CHECK_CONTAINS(m, "[4,3]");
    CHECK_CONTAINS(m, "Add '"); /* names the layer */
    CHECK_FAILS(gwr_mul(net, IN(GWR_FLOAT32, 2, 3, 5), IN(GWR_FLOAT32, 2, 1)), "Mul");
    CHECK_FAILS(gwr_where(net, IN(GWR_BOOL, 2), IN(GWR_FLOAT32, 3), IN(GWR_FLOAT32, 1)), "Where");
    /* variadic Sum through the generic call */
    CHECK_FAILS(CALL("Sum", NULL, IN(GWR_FLOAT32, 2), IN(GWR_FLOAT32, 2, 1), IN(GWR_FLOAT32, 3)),
                "Sum");
    CHECK_TYPE(CALL("Sum", NULL, IN(GWR_FLOAT32, 2), IN(GWR_FLOAT32, 3, 1), IN(GWR_FLOAT32, 1)),
               "f32[3,2]");
}

TEST(elementwise_dtypes) {
    gwr_tensor *f = IN(GWR_FLOAT32, 3), *i = IN(GWR_INT64, 3), *b = IN(GWR_BOOL, 3);
    CHECK_FAILS(gwr_add(net, f, i), "Add");
    CHECK_CONTAINS(gwr_network_errmsg(net), "dtype");
    CHECK_FAILS(gwr_equal(net, f, i), "Equal");
    CHECK_TYPE(gwr_equal(net, f, f), "bool[3]");
    CHECK_TYPE(gwr_less(net, i, i), "bool[3]");
    CHECK_TYPE(gwr_less_equal(net, i, i), "bool[3]");
    CHECK_TYPE(gwr_greater(net, f, f), "bool[3]");
    CHECK_TYPE(gwr_greater_equal(net, f, f), "bool[3]");
    CHECK_TYPE(gwr_and(net, b, b), "bool[3]");
    CHECK_TYPE(gwr_or(net, b, b), "bool[3]");
    CHECK_TYPE(gwr_xor(net, b, b), "bool[3]");
    CHECK_FAILS(gwr_and(net, f, f), "And");
    CHECK_CONTAINS(gwr_network_errmsg(net), "bool");
    CHECK_TYPE(gwr_not(net, b), "bool[3]");
    CHECK_FAILS(gwr_not(net, f), "Not");
    /* Pow: the exponent may have another dtype; the result is the base's */
    CHECK_TYPE(gwr_pow(net, f, IN(GWR_INT32, 1)), "f32[3]");
    CHECK_TYPE(gwr_pow(net, i, f), "i64[3]");
    CHECK_STR(op_of(gwr_pow(net, f, f)), "Pow");
}

TEST(last_status_names_the_failure) {
    /* Builders return NULL; gwr_last_status tells what kind of failure
     * the message on the network is (the Python binding raises by it). */
    gwr_tensor *a = IN(GWR_FLOAT32, 3), *b = IN(GWR_FLOAT32, 4), *i = IN(GWR_INT64, 3);
    CHECK(gwr_add(net, a, b) == NULL);
    CHECK_EQ_INT(gwr_last_status(), GWR_ERR_SHAPE);
    CHECK(gwr_add(net, a, i) == NULL);
    CHECK_EQ_INT(gwr_last_status(), GWR_ERR_TYPE);
    CHECK_CONTAINS(gwr_network_errmsg(net), "dtypes differ");
    /* a success does not reset it: it is the last failure's */
    CHECK(gwr_add(net, a, a) != NULL);
    CHECK_EQ_INT(gwr_last_status(), GWR_ERR_TYPE);
    CHECK(gwr_constant(net, GWR_FLOAT32, -1, NULL, NULL) == NULL);
    CHECK_EQ_INT(gwr_last_status(), GWR_ERR_SHAPE);
}

TEST(elementwise_null_args) {
    gwr_tensor *a = IN(GWR_FLOAT32, 3);
    CHECK_FAILS(gwr_add(net, a, NULL), "Add");
    CHECK_FAILS(gwr_sub(net, NULL, a), "Sub");
    CHECK_FAILS(gwr_not(net, NULL), "Not");
    CHECK(gwr_add(NULL, a, a) == NULL);
    CHECK_CONTAINS(gwr_last_errmsg(), "gwr_add");
    CHECK(gwr_where(NULL, a, a, a) == NULL);
    CHECK_CONTAINS(gwr_last_errmsg(), "gwr_where");
    CHECK_FAILS(gwr_where(net, NULL, a, a), "Where");
}

TEST(elementwise_ops_and_mod) {
    static const struct { gwr_tensor *(*fn)(gwr_network *, gwr_tensor *, gwr_tensor *); const char *op; gwr_ew_op ew; } tab[] = {
        {gwr_add, "Add", GWR_EW_SUM},     {gwr_sub, "Sub", GWR_EW_SUB},   {gwr_mul, "Mul", GWR_EW_PROD},
        {gwr_div, "Div", GWR_EW_DIV},     {gwr_pow, "Pow", GWR_EW_POW},   {gwr_max, "Max", GWR_EW_MAX},
        {gwr_min, "Min", GWR_EW_MIN},     {gwr_mod, "Mod", GWR_EW_MOD},   {gwr_equal, "Equal", GWR_EW_EQUAL},
        {gwr_less, "Less", GWR_EW_LESS},  {gwr_greater, "Greater", GWR_EW_GREATER},
        {gwr_less_equal, "LessOrEqual", GWR_EW_LESS_EQUAL},
        {gwr_greater_equal, "GreaterOrEqual", GWR_EW_GREATER_EQUAL},
    };
    gwr_tensor *a = IN(GWR_FLOAT32, 2), *i = IN(GWR_INT32, 2);
    int64_t fmod = -1;
    for (size_t k = 0; k < sizeof tab / sizeof tab[0]; k++) {
        gwr_tensor *t = tab[k].fn(net, a, a);
        CHECK_STR(op_of(t), tab[k].op);
        if (t) {
            CHECK_EQ_INT(gwr_layer_type(gwr_tensor_parent(t)), GWR_LAYER_ELEMENTWISE);
            CHECK_EQ_INT(gwr_layer_ew_op(gwr_tensor_parent(t)), tab[k].ew);
        }
    }
    CHECK_OK(gwr_layer_get_int(gwr_tensor_parent(gwr_mod(net, a, a)), "fmod", &fmod));
    CHECK_EQ_INT(fmod, 1); /* ONNX needs fmod=1 for floats */
    CHECK(!gwr_layer_has_attr(gwr_tensor_parent(gwr_mod(net, i, i)), "fmod"));
}

TEST(elementwise_generic) {
    gwr_tensor *a = IN(GWR_FLOAT32, 2, 3), *b = IN(GWR_FLOAT32, 3), *i = IN(GWR_INT32, 3), *t;
    CHECK_STR(op_of(gwr_elementwise(net, GWR_EW_SUM, a, b)), "Add");
    CHECK_STR(op_of(gwr_elementwise(net, GWR_EW_PROD, a, b)), "Mul");
    CHECK_STR(op_of(gwr_elementwise(net, GWR_EW_GREATER_EQUAL, a, b)), "GreaterOrEqual");
    t = gwr_elementwise(net, GWR_EW_MEAN, a, b);
    CHECK_STR(op_of(t), "Mean");
    CHECK_TYPE(t, "f32[2,3]");
    t = gwr_elementwise(net, GWR_EW_FLOOR_DIV, a, b);
    CHECK_STR(op_of(t), "Floor");
    CHECK_TYPE(t, "f32[2,3]");
    if (t)
        CHECK_STR(op_of(gwr_layer_input(gwr_tensor_parent(t), 0)), "Div");
    CHECK_FAILS(gwr_elementwise(net, GWR_EW_FLOOR_DIV, i, i), "FLOOR_DIV");
    CHECK_FAILS(gwr_elementwise(net, GWR_EW_BIT_AND, i, i), "BIT_AND");
    CHECK_FAILS(gwr_elementwise(net, GWR_EW_NONE, a, b), "gwr_elementwise");
    CHECK_FAILS(gwr_elementwise(net, (gwr_ew_op)1000, a, b), "gwr_elementwise");
    CHECK_FAILS(gwr_elementwise(net, GWR_EW_SUM, a, IN(GWR_FLOAT32, 4)), "Add");
    /* FLOOR_DIV's second layer failing must take the first back too */
    CHECK_FAILS(gwr_elementwise(net, GWR_EW_FLOOR_DIV, a, IN(GWR_FLOAT32, 4)), "Div");
}

/* ---- unary and activations ------------------------------------------------ */

TEST(unary_builders) {
    static const struct { gwr_tensor *(*fn)(gwr_network *, gwr_tensor *); const char *op; } tab[] = {
        {gwr_abs, "Abs"},         {gwr_neg, "Neg"},     {gwr_exp, "Exp"},         {gwr_log, "Log"},
        {gwr_sqrt, "Sqrt"},       {gwr_reciprocal, "Reciprocal"}, {gwr_floor, "Floor"},
        {gwr_ceil, "Ceil"},       {gwr_sin, "Sin"},     {gwr_cos, "Cos"},         {gwr_erf, "Erf"},
        {gwr_relu, "Relu"},       {gwr_sigmoid, "Sigmoid"}, {gwr_tanh, "Tanh"},
        {gwr_softplus, "Softplus"}, {gwr_hard_swish, "HardSwish"},
    };
    gwr_dim B = gwr_network_dim_sym(net, "batch");
    gwr_tensor *x = IN(GWR_FLOAT16, B, 7);
    for (size_t k = 0; k < sizeof tab / sizeof tab[0]; k++) {
        gwr_tensor *t = tab[k].fn(net, x);
        CHECK_STR(op_of(t), tab[k].op);
        CHECK_TYPE(t, "f16[batch,7]");
        CHECK_FAILS(tab[k].fn(net, NULL), tab[k].op);
    }
    CHECK(gwr_relu(NULL, x) == NULL);
    CHECK_CONTAINS(gwr_last_errmsg(), "gwr_relu");
}

TEST(unary_generic) {
    gwr_tensor *x = IN(GWR_FLOAT32, 2, 2);
    CHECK_TYPE(gwr_unary(net, GWR_OP_IsNaN, x), "bool[2,2]");
    CHECK_TYPE(gwr_unary(net, GWR_OP_IsInf, x), "bool[2,2]");
    CHECK_TYPE(gwr_unary(net, GWR_OP_Selu, x), "f32[2,2]");
    CHECK_STR(op_of(gwr_unary(net, GWR_OP_Round, x)), "Round");
    CHECK_FAILS(gwr_unary(net, GWR_OP_MatMul, x), "gwr_unary");
    CHECK_FAILS(gwr_unary(net, GWR_OP_PRelu, x), "PRelu"); /* two inputs */
    CHECK_FAILS(gwr_unary(net, GWR_OP_CUSTOM, x), "gwr_unary");
    CHECK_FAILS(gwr_unary(net, (gwr_op_id)-5, x), "gwr_unary");
}

TEST(activations_with_attrs) {
    gwr_tensor *x = IN(GWR_FLOAT32, 4), *t;
    float f = 0;
    const char *s = NULL;
    t = gwr_leaky_relu(net, x, 0.2f);
    CHECK_STR(op_of(t), "LeakyRelu");
    CHECK_OK(gwr_layer_get_float(gwr_tensor_parent(t), "alpha", &f));
    CHECK(f == 0.2f);
    t = gwr_elu(net, x, 1.5f);
    CHECK_STR(op_of(t), "Elu");
    CHECK_OK(gwr_layer_get_float(gwr_tensor_parent(t), "alpha", &f));
    CHECK(f == 1.5f);
    t = gwr_gelu(net, x, NULL);
    CHECK_STR(op_of(t), "Gelu");
    CHECK_TYPE(t, "f32[4]");
    CHECK_EQ_INT(gwr_layer_type(gwr_tensor_parent(t)), GWR_LAYER_ACTIVATION);
    CHECK_OK(gwr_layer_get_string(gwr_tensor_parent(t), "approximate", &s, NULL));
    CHECK_STR(s, "none");
    t = gwr_gelu(net, x, "tanh");
    CHECK_OK(gwr_layer_get_string(gwr_tensor_parent(t), "approximate", &s, NULL));
    CHECK_STR(s, "tanh");
    CHECK_FAILS(gwr_gelu(net, x, "erf"), "Gelu");
    CHECK_FAILS(gwr_leaky_relu(net, NULL, 0.1f), "LeakyRelu");
    CHECK_FAILS(gwr_elu(net, NULL, 0.1f), "Elu");
    /* a bad approximate given through the generic call is caught by inference */
    {
        gwr_args *a = gwr_args_new();
        gwr_args_set_string(a, "approximate", "fast");
        CHECK_FAILS(CALL("Gelu", a, x), "Gelu");
        gwr_args_free(a);
    }
}

TEST(silu) {
    gwr_tensor *x = IN(GWR_FLOAT32, 2, 8), *t = gwr_silu(net, x);
    gwr_layer *mul = gwr_tensor_parent(t);
    CHECK_STR(op_of(t), "Mul");
    CHECK_TYPE(t, "f32[2,8]");
    if (CHECK(mul)) {
        CHECK(gwr_layer_input(mul, 0) == x);
        CHECK_STR(op_of(gwr_layer_input(mul, 1)), "Sigmoid");
        CHECK(gwr_layer_input(gwr_tensor_parent(gwr_layer_input(mul, 1)), 0) == x);
    }
    CHECK_FAILS(gwr_silu(net, NULL), "Sigmoid");
}

TEST(clip_and_prelu) {
    gwr_tensor *x = IN(GWR_FLOAT32, 2, 3), *lo = gwr_constant_f32(net, 0), *hi = gwr_constant_f32(net, 6);
    gwr_tensor *t = gwr_clip(net, x, NULL, NULL);
    CHECK_TYPE(t, "f32[2,3]");
    CHECK_EQ_INT(gwr_layer_num_inputs(gwr_tensor_parent(t)), 1);
    t = gwr_clip(net, x, lo, NULL);
    CHECK_EQ_INT(gwr_layer_num_inputs(gwr_tensor_parent(t)), 2);
    t = gwr_clip(net, x, lo, hi);
    CHECK_EQ_INT(gwr_layer_num_inputs(gwr_tensor_parent(t)), 3);
    t = gwr_clip(net, x, NULL, hi);
    if (CHECK(t)) {
        CHECK(gwr_layer_input(gwr_tensor_parent(t), 1) == NULL);
        CHECK(gwr_layer_input(gwr_tensor_parent(t), 2) == hi);
    }
    CHECK_FAILS_CALL(gwr_clip(net, x, gwr_constant_i64(net, 0), NULL), "Clip");
    CHECK_FAILS(gwr_clip(net, x, IN(GWR_FLOAT32, 2), NULL), "Clip");
    CHECK_FAILS(gwr_clip(net, NULL, lo, hi), "Clip");
    /* PRelu: slope broadcasts to X one way */
    CHECK_TYPE(CALL("PRelu", NULL, IN(GWR_FLOAT32, 1, 3, 4, 4), IN(GWR_FLOAT32, 3, 1, 1)),
               "f32[1,3,4,4]");
    CHECK_FAILS(CALL("PRelu", NULL, IN(GWR_FLOAT32, 3), IN(GWR_FLOAT32, 2, 3)), "PRelu");
    CHECK_FAILS(CALL("PRelu", NULL, IN(GWR_FLOAT32, 3), IN(GWR_FLOAT32, 4)), "PRelu");
}

/* ---- matrix products --------------------------------------------------------- */

TEST(matmul_shapes) {
    gwr_dim B = gwr_network_dim_sym(net, "batch"), K = gwr_network_dim_sym(net, "k");
    CHECK_TYPE(gwr_matmul(net, IN(GWR_FLOAT32, 2, 3), IN(GWR_FLOAT32, 3, 4)), "f32[2,4]");
    CHECK_TYPE(gwr_matmul(net, IN(GWR_FLOAT32, 3), IN(GWR_FLOAT32, 3, 4)), "f32[4]");
    CHECK_TYPE(gwr_matmul(net, IN(GWR_FLOAT32, 2, 3), IN(GWR_FLOAT32, 3)), "f32[2]");
    CHECK_TYPE(gwr_matmul(net, IN(GWR_FLOAT32, 3), IN(GWR_FLOAT32, 3)), "f32[]");
    CHECK_TYPE(gwr_matmul(net, IN(GWR_FLOAT32, 5, 2, 3), IN(GWR_FLOAT32, 3)), "f32[5,2]");
    CHECK_TYPE(gwr_matmul(net, IN(GWR_FLOAT32, 3), IN(GWR_FLOAT32, 5, 3, 4)), "f32[5,4]");
    CHECK_TYPE(gwr_matmul(net, IN(GWR_FLOAT32, 2, 1, 3, 4), IN(GWR_FLOAT32, 5, 4, 6)),
               "f32[2,5,3,6]");
    CHECK_TYPE(gwr_matmul(net, IN(GWR_FLOAT32, B, 7, K), IN(GWR_FLOAT32, K, 9)), "f32[batch,7,9]");
    CHECK_TYPE(gwr_matmul(net, IN(GWR_FLOAT32, B, 7, 3), IN(GWR_FLOAT32, 1, 3, 9)),
               "f32[batch,7,9]");
    CHECK_TYPE(gwr_matmul(net, input(GWR_FLOAT32, -1, NULL), IN(GWR_FLOAT32, 3, 9)), "f32[*]");
}

TEST(matmul_errors) {
    CHECK_FAILS(gwr_matmul(net, IN(GWR_FLOAT32, 2, 3), IN(GWR_FLOAT32, 4, 5)), "MatMul");
    CHECK_CONTAINS(gwr_network_errmsg(net), "inner");
    CHECK_FAILS(gwr_matmul(net, IN(GWR_FLOAT32, 3), IN(GWR_FLOAT32, 4)), "MatMul");
    CHECK_FAILS(gwr_matmul(net, SCALAR(GWR_FLOAT32), IN(GWR_FLOAT32, 4)), "MatMul");
    CHECK_FAILS(gwr_matmul(net, IN(GWR_FLOAT32, 2, 2, 3), IN(GWR_FLOAT32, 3, 3, 4)), "MatMul");
    CHECK_FAILS(gwr_matmul(net, IN(GWR_FLOAT32, 2, 3), IN(GWR_FLOAT16, 3, 4)), "MatMul");
    CHECK_FAILS(gwr_matmul(net, IN(GWR_FLOAT32, 2, 3), NULL), "MatMul");
    /* MatMulInteger gives int32 */
    CHECK_TYPE(CALL("MatMulInteger", NULL, IN(GWR_UINT8, 2, 3), IN(GWR_INT8, 3, 4)), "i32[2,4]");
}

TEST(gemm) {
    gwr_tensor *a = IN(GWR_FLOAT32, 4, 3), *b = IN(GWR_FLOAT32, 5, 3), *t;
    int64_t v = -1;
    float f = 0;
    t = gwr_gemm(net, a, b, NULL, 1.0f, 1.0f, 0, 1);
    CHECK_TYPE(t, "f32[4,5]");
    CHECK_OK(gwr_layer_get_int(gwr_tensor_parent(t), "transB", &v));
    CHECK_EQ_INT(v, 1);
    CHECK_EQ_INT(gwr_layer_num_inputs(gwr_tensor_parent(t)), 2);
    t = gwr_gemm(net, IN(GWR_FLOAT32, 3, 4), IN(GWR_FLOAT32, 3, 5), IN(GWR_FLOAT32, 5), 0.5f, 2.0f,
                 1, 0);
    CHECK_TYPE(t, "f32[4,5]");
    CHECK_OK(gwr_layer_get_float(gwr_tensor_parent(t), "alpha", &f));
    CHECK(f == 0.5f);
    CHECK_TYPE(gwr_gemm(net, a, b, IN(GWR_FLOAT32, 4, 1), 1, 1, 0, 1), "f32[4,5]");
    CHECK_FAILS(gwr_gemm(net, a, b, NULL, 1, 1, 0, 0), "Gemm");
    CHECK_FAILS(gwr_gemm(net, a, b, IN(GWR_FLOAT32, 3), 1, 1, 0, 1), "Gemm");
    CHECK_FAILS(gwr_gemm(net, IN(GWR_FLOAT32, 4, 3, 1), b, NULL, 1, 1, 0, 1), "Gemm");
    CHECK_FAILS(gwr_gemm(net, NULL, b, NULL, 1, 1, 0, 1), "Gemm");
    CHECK_FAILS(gwr_gemm(net, a, b, IN(GWR_FLOAT16, 5), 1, 1, 0, 1), "Gemm");
}

/* ---- convolution and pooling ---------------------------------------------- */

/* ONNX: out = floor((in + pad_begin + pad_end - ((k - 1) * d + 1)) / s) + 1 */
TEST(conv_output_sizes) {
    gwr_conv_params p = {0};
    gwr_dim B = gwr_network_dim_sym(net, "N");
    /* ResNet stem: 224, k7, s2, pads 3 -> floor((224+6-7)/2)+1 = 112 */
    p.nspatial = 2;
    p.strides = (int64_t[]){2, 2};
    p.pads = (int64_t[]){3, 3, 3, 3};
    CHECK_TYPE(gwr_conv(net, IN(GWR_FLOAT32, B, 3, 224, 224), IN(GWR_FLOAT32, 64, 3, 7, 7),
                        IN(GWR_FLOAT32, 64), &p),
               "f32[N,64,112,112]");
    /* no params: stride 1, no pads: 10 - 3 + 1 = 8 */
    CHECK_TYPE(gwr_conv(net, IN(GWR_FLOAT32, 1, 1, 10, 12), IN(GWR_FLOAT32, 2, 1, 3, 5), NULL, NULL),
               "f32[1,2,8,8]");
    /* dilation 2: effective kernel (3-1)*2+1 = 5: 10 - 5 + 1 = 6; asymmetric pads 1,0 / 0,2 */
    memset(&p, 0, sizeof p);
    p.nspatial = 2;
    p.dilations = (int64_t[]){2, 2};
    p.pads = (int64_t[]){1, 0, 0, 2};
    CHECK_TYPE(gwr_conv(net, IN(GWR_FLOAT32, 1, 1, 10, 10), IN(GWR_FLOAT32, 1, 1, 3, 3), NULL, &p),
               "f32[1,1,7,8]");
    /* auto_pad SAME_UPPER: ceil(7/2) = 4; VALID: floor((7-3)/2)+1 = 3 */
    memset(&p, 0, sizeof p);
    p.nspatial = 2;
    p.strides = (int64_t[]){2, 2};
    p.auto_pad = "SAME_UPPER";
    CHECK_TYPE(gwr_conv(net, IN(GWR_FLOAT32, 1, 1, 7, 8), IN(GWR_FLOAT32, 1, 1, 3, 3), NULL, &p),
               "f32[1,1,4,4]");
    p.auto_pad = "SAME_LOWER";
    CHECK_TYPE(gwr_conv(net, IN(GWR_FLOAT32, 1, 1, 7, 8), IN(GWR_FLOAT32, 1, 1, 3, 3), NULL, &p),
               "f32[1,1,4,4]");
    p.auto_pad = "VALID";
    CHECK_TYPE(gwr_conv(net, IN(GWR_FLOAT32, 1, 1, 7, 8), IN(GWR_FLOAT32, 1, 1, 3, 3), NULL, &p),
               "f32[1,1,3,3]");
    /* groups: 8 input channels, 4 groups of 2 */
    memset(&p, 0, sizeof p);
    p.group = 4;
    CHECK_TYPE(gwr_conv(net, IN(GWR_FLOAT32, 1, 8, 5, 5), IN(GWR_FLOAT32, 16, 2, 3, 3), NULL, &p),
               "f32[1,16,3,3]");
    /* 1-D, stride 3: floor((20 - 4) / 3) + 1 = 6 */
    memset(&p, 0, sizeof p);
    p.nspatial = 1;
    p.strides = (int64_t[]){3};
    CHECK_TYPE(gwr_conv(net, IN(GWR_FLOAT32, 2, 4, 20), IN(GWR_FLOAT32, 6, 4, 4), NULL, &p),
               "f32[2,6,6]");
}

TEST(conv_symbolic_and_errors) {
    gwr_dim H = gwr_network_dim_sym(net, "H"), W = gwr_network_dim_sym(net, "W");
    gwr_conv_params p = {0};
    /* a 1x1 stride-1 conv keeps symbolic extents; a 3x3 one cannot know them */
    CHECK_TYPE(gwr_conv(net, IN(GWR_FLOAT32, 1, 3, H, W), IN(GWR_FLOAT32, 8, 3, 1, 1), NULL, NULL),
               "f32[1,8,H,W]");
    CHECK_TYPE(gwr_conv(net, IN(GWR_FLOAT32, 1, 3, H, W), IN(GWR_FLOAT32, 8, 3, 3, 3), NULL, NULL),
               "f32[1,8,?,?]");
    p.nspatial = 2;
    p.auto_pad = "SAME_UPPER";
    CHECK_TYPE(gwr_conv(net, IN(GWR_FLOAT32, 1, 3, H, W), IN(GWR_FLOAT32, 8, 3, 3, 3), NULL, &p),
               "f32[1,8,H,W]");
    CHECK_FAILS(gwr_conv(net, IN(GWR_FLOAT32, 1, 3, 8, 8), IN(GWR_FLOAT32, 8, 4, 3, 3), NULL, NULL),
                "Conv");
    CHECK_CONTAINS(gwr_network_errmsg(net), "channels");
    CHECK_FAILS(gwr_conv(net, IN(GWR_FLOAT32, 1, 3, 8, 8), IN(GWR_FLOAT32, 8, 3, 3, 3),
                         IN(GWR_FLOAT32, 7), NULL),
                "Conv");
    CHECK_FAILS(gwr_conv(net, IN(GWR_FLOAT32, 1, 3, 2, 2), IN(GWR_FLOAT32, 8, 3, 3, 3), NULL, NULL),
                "Conv");
    CHECK_FAILS(gwr_conv(net, IN(GWR_FLOAT32, 1, 3, 8), IN(GWR_FLOAT32, 8, 3, 3, 3), NULL, NULL),
                "Conv");
    CHECK_FAILS(gwr_conv(net, IN(GWR_FLOAT32, 3, 8), IN(GWR_FLOAT32, 8, 3), NULL, NULL), "Conv");
    CHECK_FAILS(gwr_conv(net, IN(GWR_FLOAT32, 1, 3, 8, 8), NULL, NULL, NULL), "Conv");
    p.auto_pad = "SAME";
    CHECK_FAILS(gwr_conv(net, IN(GWR_FLOAT32, 1, 3, 8, 8), IN(GWR_FLOAT32, 8, 3, 3, 3), NULL, &p),
                "Conv");
    memset(&p, 0, sizeof p);
    p.nspatial = 0;
    p.strides = (int64_t[]){1, 1};
    CHECK_FAILS(gwr_conv(net, IN(GWR_FLOAT32, 1, 3, 8, 8), IN(GWR_FLOAT32, 8, 3, 3, 3), NULL, &p),
                "Conv");
    p.nspatial = 1; /* strides of the wrong length for a 2-D conv */
    CHECK_FAILS(gwr_conv(net, IN(GWR_FLOAT32, 1, 3, 8, 8), IN(GWR_FLOAT32, 8, 3, 3, 3), NULL, &p),
                "Conv");
    memset(&p, 0, sizeof p);
    p.nspatial = 2;
    p.strides = (int64_t[]){0, 1};
    CHECK_FAILS(gwr_conv(net, IN(GWR_FLOAT32, 1, 3, 8, 8), IN(GWR_FLOAT32, 8, 3, 3, 3), NULL, &p),
                "Conv");
    p.strides = (int64_t[]){INT64_MAX, INT64_MAX};
    CHECK_TYPE(gwr_conv(net, IN(GWR_FLOAT32, 1, 3, 8, 8), IN(GWR_FLOAT32, 8, 3, 3, 3), NULL, &p),
               "f32[1,8,1,1]");
    p.strides = NULL;
    p.dilations = (int64_t[]){INT64_MAX, 1};
    CHECK_FAILS(gwr_conv(net, IN(GWR_FLOAT32, 1, 3, 8, 8), IN(GWR_FLOAT32, 8, 3, 3, 3), NULL, &p),
                "Conv");
}

/* ONNX: out = stride * (in - 1) + output_padding + ((k - 1) * d + 1) - pad_begin - pad_end */
TEST(conv_transpose) {
    gwr_conv_params p = {0};
    gwr_args *a;
    p.nspatial = 2;
    p.strides = (int64_t[]){2, 2};
    p.pads = (int64_t[]){1, 1, 1, 1};
    p.output_padding = (int64_t[]){1, 0};
    /* 2*(3-1) + 1 + 3 - 2 = 6 and 2*(3-1) + 0 + 3 - 2 = 5 */
    CHECK_TYPE(gwr_conv_transpose(net, IN(GWR_FLOAT32, 1, 2, 3, 3), IN(GWR_FLOAT32, 2, 4, 3, 3), NULL,
                                  &p),
               "f32[1,4,6,5]");
    p.group = 2;
    p.output_padding = NULL;
    CHECK_TYPE(gwr_conv_transpose(net, IN(GWR_FLOAT32, 1, 2, 3, 3), IN(GWR_FLOAT32, 2, 4, 3, 3),
                                  IN(GWR_FLOAT32, 8), &p),
               "f32[1,8,5,5]");
    memset(&p, 0, sizeof p);
    p.nspatial = 1;
    p.strides = (int64_t[]){3};
    p.auto_pad = "SAME_UPPER";
    CHECK_TYPE(gwr_conv_transpose(net, IN(GWR_FLOAT32, 1, 2, 5), IN(GWR_FLOAT32, 2, 1, 4), NULL, &p),
               "f32[1,1,15]");
    a = args_ints("output_shape", 2, (int64_t[]){10, 11});
    CHECK_TYPE(CALL("ConvTranspose", a, IN(GWR_FLOAT32, 1, 2, 5, 5), IN(GWR_FLOAT32, 2, 3, 3, 3)),
               "f32[1,3,10,11]");
    gwr_args_free(a);
    CHECK_FAILS(gwr_conv_transpose(net, IN(GWR_FLOAT32, 1, 3, 3, 3), IN(GWR_FLOAT32, 2, 4, 3, 3),
                                   NULL, NULL),
                "ConvTranspose");
    memset(&p, 0, sizeof p);
    p.nspatial = 2;
    p.pads = (int64_t[]){5, 5, 5, 5};
    CHECK_FAILS(gwr_conv_transpose(net, IN(GWR_FLOAT32, 1, 2, 2, 2), IN(GWR_FLOAT32, 2, 4, 3, 3),
                                   NULL, &p),
                "ConvTranspose");
}

TEST(pooling) {
    gwr_conv_params p = {0};
    gwr_layer *l;
    gwr_tensor *outs[2];
    p.nspatial = 2;
    p.kernel = (int64_t[]){3, 3};
    p.strides = (int64_t[]){2, 2};
    /* floor((32 - 3) / 2) + 1 = 15; with ceil_mode ceil(29 / 2) + 1 = 16 */
    CHECK_TYPE(gwr_max_pool(net, IN(GWR_FLOAT32, 1, 3, 32, 32), &p), "f32[1,3,15,15]");
    p.ceil_mode = 1;
    CHECK_TYPE(gwr_max_pool(net, IN(GWR_FLOAT32, 1, 3, 32, 32), &p), "f32[1,3,16,16]");
    /* ceil_mode: the last window must start inside the (begin-padded)
     * input: in 5, k 2, s 2, pads 1: ceil(5/2)+1 = 4, but window 3 would
     * start at 6 >= 5 + 1, so 3 */
    p.kernel = (int64_t[]){2, 2};
    p.pads = (int64_t[]){1, 1, 1, 1};
    CHECK_TYPE(gwr_avg_pool(net, IN(GWR_FLOAT32, 1, 1, 5, 6), &p), "f32[1,1,3,4]");
    memset(&p, 0, sizeof p);
    p.nspatial = 1;
    p.kernel = (int64_t[]){2};
    p.count_include_pad = 1;
    p.auto_pad = "SAME_UPPER";
    p.strides = (int64_t[]){2};
    {
        gwr_tensor *t = gwr_avg_pool(net, IN(GWR_FLOAT32, 2, 3, 9), &p);
        int64_t v = 0;
        CHECK_TYPE(t, "f32[2,3,5]");
        CHECK_OK(gwr_layer_get_int(gwr_tensor_parent(t), "count_include_pad", &v));
        CHECK_EQ_INT(v, 1);
    }
    /* MaxPool's optional Indices output is int64 */
    {
        gwr_args *a = args_ints("kernel_shape", 2, (int64_t[]){2, 2});
        gwr_tensor *x = IN(GWR_FLOAT32, 1, 3, 8, 8);
        l = gwr_op_call(net, "", "MaxPool", 1, &x, a, 2, outs);
        gwr_args_free(a);
        if (CHECK(l)) {
            CHECK_TYPE(outs[0], "f32[1,3,7,7]");
            CHECK_TYPE(outs[1], "i64[1,3,7,7]");
        }
    }
    CHECK_TYPE(gwr_global_avg_pool(net, IN(GWR_FLOAT32, 2, 3, 7, 7)), "f32[2,3,1,1]");
    CHECK_TYPE(gwr_global_max_pool(net, IN(GWR_FLOAT32, 2, 3, 7)), "f32[2,3,1]");
    CHECK_FAILS(gwr_global_max_pool(net, IN(GWR_FLOAT32, 2)), "GlobalMaxPool");
    CHECK_FAILS(gwr_max_pool(net, IN(GWR_FLOAT32, 1, 3, 8, 8), NULL), "MaxPool");
    memset(&p, 0, sizeof p);
    p.nspatial = 2;
    CHECK_FAILS(gwr_max_pool(net, IN(GWR_FLOAT32, 1, 3, 8, 8), &p), "MaxPool"); /* no kernel */
    p.kernel = (int64_t[]){3, 3};
    CHECK_FAILS(gwr_max_pool(net, IN(GWR_FLOAT32, 1, 3, 8), &p), "MaxPool");
    CHECK_FAILS(gwr_avg_pool(net, IN(GWR_FLOAT32, 1, 3, 2, 2), &p), "AveragePool");
    CHECK_FAILS(gwr_max_pool(net, NULL, &p), "MaxPool");
    CHECK_FAILS(CALL("MaxPool", NULL, IN(GWR_FLOAT32, 1, 3, 8, 8)), "kernel_shape");
}

/* ---- normalization, softmax, reductions ----------------------------------- */

TEST(batch_norm) {
    gwr_tensor *x = IN(GWR_FLOAT32, 2, 4, 5, 5), *c = IN(GWR_FLOAT32, 4), *outs[3];
    gwr_layer *l;
    float eps = 0;
    gwr_tensor *t = gwr_batch_norm(net, x, c, c, c, c, 1e-3f);
    CHECK_TYPE(t, "f32[2,4,5,5]");
    CHECK_EQ_INT(gwr_layer_type(gwr_tensor_parent(t)), GWR_LAYER_NORMALIZATION);
    CHECK_OK(gwr_layer_get_float(gwr_tensor_parent(t), "epsilon", &eps));
    CHECK(eps == 1e-3f);
    CHECK_FAILS(gwr_batch_norm(net, x, IN(GWR_FLOAT32, 3), c, c, c, 1e-5f), "BatchNormalization");
    CHECK_FAILS(gwr_batch_norm(net, x, IN(GWR_FLOAT32, 4, 1), c, c, c, 1e-5f), "BatchNormalization");
    CHECK_FAILS(gwr_batch_norm(net, x, c, c, NULL, c, 1e-5f), "BatchNormalization");
    l = gwr_op_call(net, "", "BatchNormalization", 5, TS(x, c, c, c, c), NULL, 3, outs);
    if (CHECK(l)) {
        CHECK_TYPE(outs[1], "f32[4]");
        CHECK_TYPE(outs[2], "f32[4]");
    }
    CHECK_TYPE(CALL("InstanceNormalization", NULL, x, c, c), "f32[2,4,5,5]");
    CHECK_FAILS(CALL("InstanceNormalization", NULL, x, IN(GWR_FLOAT32, 5), c), "InstanceNormalization");
}

TEST(layer_norm) {
    gwr_dim B = gwr_network_dim_sym(net, "batch");
    gwr_tensor *x = IN(GWR_FLOAT16, B, 5, 8), *s = IN(GWR_FLOAT16, 8), *outs[3];
    gwr_layer *l;
    gwr_args *a;
    CHECK_TYPE(gwr_layer_norm(net, x, s, NULL, -1, 1e-5f), "f16[batch,5,8]");
    CHECK_TYPE(gwr_layer_norm(net, x, s, s, 2, 1e-5f), "f16[batch,5,8]");
    CHECK_TYPE(gwr_layer_norm(net, x, IN(GWR_FLOAT16, 5, 8), NULL, 1, 1e-5f), "f16[batch,5,8]");
    l = gwr_op_call(net, "", "LayerNormalization", 2, TS(x, s), NULL, 3, outs);
    if (CHECK(l)) {
        CHECK_TYPE(outs[0], "f16[batch,5,8]");
        CHECK_TYPE(outs[1], "f32[batch,5,1]"); /* stash_type float */
        CHECK_TYPE(outs[2], "f32[batch,5,1]");
    }
    a = args_int("axis", 1);
    gwr_args_set_int(a, "stash_type", GWR_FLOAT64);
    l = gwr_op_call(net, "", "LayerNormalization", 2, TS(x, IN(GWR_FLOAT16, 5, 8)), a, 2, outs);
    gwr_args_free(a);
    if (CHECK(l))
        CHECK_TYPE(outs[1], "f64[batch,1,1]");
    CHECK_FAILS(gwr_layer_norm(net, x, s, NULL, 3, 1e-5f), "LayerNormalization");
    CHECK_FAILS(gwr_layer_norm(net, x, s, NULL, -4, 1e-5f), "LayerNormalization");
    CHECK_FAILS(gwr_layer_norm(net, x, IN(GWR_FLOAT16, 7), NULL, -1, 1e-5f), "LayerNormalization");
    CHECK_FAILS(gwr_layer_norm(net, x, IN(GWR_FLOAT32, 8), NULL, -1, 1e-5f), "LayerNormalization");
    CHECK_FAILS(gwr_layer_norm(net, x, NULL, NULL, -1, 1e-5f), "LayerNormalization");
}

TEST(softmax) {
    gwr_tensor *x = IN(GWR_FLOAT32, 2, 3), *t;
    int64_t axis = 0;
    t = gwr_softmax(net, x, 0);
    CHECK_TYPE(t, "f32[2,3]");
    CHECK_OK(gwr_layer_get_int(gwr_tensor_parent(t), "axis", &axis));
    CHECK_EQ_INT(axis, 0);
    CHECK_TYPE(gwr_softmax(net, x, -2), "f32[2,3]");
    CHECK_FAILS(gwr_softmax(net, x, 2), "Softmax");
    CHECK_CONTAINS(gwr_network_errmsg(net), "axis");
    CHECK_FAILS(gwr_softmax(net, x, -3), "Softmax");
    CHECK_FAILS(gwr_softmax(net, NULL, 0), "Softmax");
    CHECK_TYPE(CALL("LogSoftmax", NULL, x), "f32[2,3]");
    CHECK_TYPE(CALL("Hardmax", NULL, x), "f32[2,3]");
}

TEST(reductions) {
    gwr_dim B = gwr_network_dim_sym(net, "batch");
    gwr_tensor *x = IN(GWR_FLOAT32, B, 3, 4, 5), *t;
    const int64_t *axes = NULL;
    int64_t n = 0;
    /* ReduceSum (opset 13) takes axes as a constant input */
    t = gwr_reduce_sum(net, x, I64S(1, -1), 1);
    CHECK_TYPE(t, "f32[batch,1,4,1]");
    if (CHECK(t)) {
        CHECK_EQ_INT(gwr_layer_num_inputs(gwr_tensor_parent(t)), 2);
        CHECK_TYPE(gwr_layer_input(gwr_tensor_parent(t), 1), "i64[2]");
    }
    CHECK_TYPE(gwr_reduce_sum(net, x, I64S(1, -1), 0), "f32[batch,4]");
    t = gwr_reduce_sum(net, x, 0, NULL, 0);
    CHECK_TYPE(t, "f32[]");
    CHECK_EQ_INT(gwr_layer_num_inputs(gwr_tensor_parent(t)), 1);
    CHECK_TYPE(gwr_reduce_sum(net, x, 0, NULL, 1), "f32[1,1,1,1]");
    /* the others take an axes attribute */
    t = gwr_reduce_mean(net, x, I64S(-1), 1);
    CHECK_TYPE(t, "f32[batch,3,4,1]");
    if (CHECK(t)) {
        CHECK_EQ_INT(gwr_layer_num_inputs(gwr_tensor_parent(t)), 1);
        CHECK_OK(gwr_layer_get_ints(gwr_tensor_parent(t), "axes", &axes, &n));
        CHECK_EQ_INT(n, 1);
    }
    CHECK_TYPE(gwr_reduce_max(net, x, I64S(0, 2), 0), "f32[3,5]");
    CHECK_TYPE(gwr_reduce(net, GWR_OP_ReduceL2, x, 0, NULL, 0), "f32[]");
    CHECK_TYPE(gwr_reduce(net, GWR_OP_ReduceLogSumExp, x, I64S(3), 0), "f32[batch,3,4]");
    CHECK_FAILS(gwr_reduce_sum(net, x, I64S(4), 1), "ReduceSum");
    CHECK_FAILS(gwr_reduce_mean(net, x, I64S(-5), 1), "ReduceMean");
    CHECK_FAILS(gwr_reduce_max(net, x, I64S(1, -3), 1), "ReduceMax");
    CHECK_CONTAINS(gwr_network_errmsg(net), "repeated");
    CHECK_FAILS(gwr_reduce(net, GWR_OP_Add, x, 0, NULL, 1), "gwr_reduce");
    CHECK_FAILS(gwr_reduce(net, GWR_OP_NegativeLogLikelihoodLoss, x, 0, NULL, 1), "gwr_reduce");
    CHECK_FAILS(gwr_reduce_sum(net, x, 2, NULL, 1), "ReduceSum");
    CHECK_FAILS(gwr_reduce_sum(net, NULL, 0, NULL, 1), "ReduceSum");
    CHECK(gwr_reduce_sum(NULL, x, 0, NULL, 1) == NULL);
}

TEST(reductions_generic_forms) {
    gwr_tensor *x = IN(GWR_FLOAT32, 2, 3, 4), *axes_in = IN(GWR_INT64, 1);
    gwr_args *a;
    /* noop_with_empty_axes: no axes means identity */
    a = args_int("noop_with_empty_axes", 1);
    CHECK_TYPE(CALL("ReduceSum", a, x), "f32[2,3,4]");
    gwr_args_free(a);
    /* axes not constant: keepdims keeps the rank, extents unknown */
    CHECK_TYPE(CALL("ReduceSum", NULL, x, axes_in), "f32[?,?,?]");
    a = args_int("keepdims", 0);
    CHECK_TYPE(CALL("ReduceSum", a, x, axes_in), "f32[*]");
    gwr_args_free(a);
    /* the older attribute form of ReduceSum */
    a = args_ints("axes", 1, (int64_t[]){1});
    CHECK_TYPE(CALL("ReduceSum", a, x), "f32[2,1,4]");
    gwr_args_free(a);
    /* ArgMax / ArgMin: int64 */
    a = args_int("axis", -1);
    gwr_args_set_int(a, "keepdims", 0);
    CHECK_TYPE(CALL("ArgMax", a, x), "i64[2,3]");
    gwr_args_free(a);
    CHECK_TYPE(CALL("ArgMin", NULL, x), "i64[1,3,4]");
    a = args_int("axis", 3);
    CHECK_FAILS(CALL("ArgMax", a, x), "ArgMax");
    gwr_args_free(a);
}

/* ---- shape manipulation ----------------------------------------------------- */

TEST(reshape) {
    gwr_dim B = gwr_network_dim_sym(net, "batch");
    gwr_tensor *x = IN(GWR_FLOAT32, 2, 3, 4), *t;
    t = gwr_reshape(net, x, I64S(0, -1));
    CHECK_TYPE(t, "f32[2,12]");
    if (CHECK(t))
        CHECK_TYPE(gwr_layer_input(gwr_tensor_parent(t), 1), "i64[2]");
    CHECK_TYPE(gwr_reshape(net, x, I64S(-1)), "f32[24]");
    CHECK_TYPE(gwr_reshape(net, x, I64S(4, -1, 2)), "f32[4,3,2]");
    CHECK_TYPE(gwr_reshape(net, x, I64S(0, 0, 0)), "f32[2,3,4]");
    CHECK_TYPE(gwr_reshape(net, x, I64S(2, 3, 4, 1, 1)), "f32[2,3,4,1,1]");
    CHECK_TYPE(gwr_reshape(net, IN(GWR_FLOAT32, 1), 0, NULL), "f32[]");
    CHECK_TYPE(gwr_reshape(net, IN(GWR_FLOAT32, 0, 5), I64S(-1, 0)), "f32[0,5]");
    /* symbols: 0 copies one, -1 is inferred where the others cancel */
    x = IN(GWR_FLOAT32, B, 3, 4);
    CHECK_TYPE(gwr_reshape(net, x, I64S(0, 12)), "f32[batch,12]");
    CHECK_TYPE(gwr_reshape(net, x, I64S(0, -1)), "f32[batch,12]");
    CHECK_TYPE(gwr_reshape(net, x, I64S(-1, 12)), "f32[batch,12]");
    CHECK_TYPE(gwr_reshape(net, x, I64S(0, 3, 2, -1)), "f32[batch,3,2,2]");
    CHECK_TYPE(gwr_reshape(net, x, I64S(-1)), "f32[?]");
    CHECK_TYPE(gwr_reshape(net, x, I64S(5, 7)), "f32[5,7]"); /* cannot be checked */
}

TEST(reshape_errors) {
    gwr_tensor *x = IN(GWR_FLOAT32, 2, 3, 4);
    CHECK_FAILS(gwr_reshape(net, x, I64S(5, 5)), "Reshape");
    CHECK_CONTAINS(gwr_network_errmsg(net), "[5,5]");
    CHECK_FAILS(gwr_reshape(net, x, I64S(5, -1)), "Reshape");
    CHECK_FAILS(gwr_reshape(net, x, I64S(-1, -1)), "Reshape");
    CHECK_FAILS(gwr_reshape(net, x, I64S(0, 0, 0, 0)), "Reshape");
    CHECK_FAILS(gwr_reshape(net, x, I64S(2, -2, 12)), "Reshape");
    CHECK_FAILS(gwr_reshape(net, x, -1, NULL), "Reshape");
    CHECK_FAILS(gwr_reshape(net, NULL, I64S(1)), "Reshape");
    /* huge extents: an overflowing element count is not an error, nor a crash */
    CHECK_TYPE(gwr_reshape(net, IN(GWR_FLOAT32, INT64_MAX / 2, 4), I64S(-1, 2)), "f32[?,2]");
    /* a shape given as a scalar */
    CHECK_FAILS_CALL(CALL("Reshape", NULL, x, gwr_constant_i64(net, 24)), "Reshape");
    /* the shape must be int64 */
    CHECK_FAILS(CALL("Reshape", NULL, x, IN(GWR_INT32, 2)), "Reshape");
}

TEST(reshape_generic_forms) {
    gwr_tensor *x = IN(GWR_FLOAT32, 2, 0, 4);
    gwr_args *a = args_int("allowzero", 1);
    /* allowzero: 0 is an extent, not a copy */
    CHECK_TYPE(CALL("Reshape", a, x, CI64S(0, 8)), "f32[0,8]");
    CHECK_FAILS_CALL(CALL("Reshape", a, x, CI64S(0, -1)), "Reshape");
    gwr_args_free(a);
    /* a shape that is not constant but of known length: the rank */
    CHECK_TYPE(CALL("Reshape", NULL, x, IN(GWR_INT64, 3)), "f32[?,?,?]");
    CHECK_TYPE(CALL("Reshape", NULL, x, input(GWR_INT64, 1, (gwr_dim[]){GWR_DIM_UNKNOWN})),
               "f32[*]");
}

TEST(reshape_from_shape_values) {
    /* x.reshape(x.shape[0], -1) as exporters write it: Shape, Gather,
     * Unsqueeze, Concat; the values travel through to Reshape. */
    gwr_dim B = gwr_network_dim_sym(net, "batch"), S = gwr_network_dim_sym(net, "seq");
    gwr_tensor *x = IN(GWR_FLOAT32, B, S, 64), *shape, *b, *s, *target;
    shape = gwr_shape_of(net, x);
    CHECK_TYPE(shape, "i64[3]");
    b = gwr_gather(net, shape, gwr_constant_i64(net, 0), 0);
    CHECK_TYPE(b, "i64[]");
    s = gwr_gather(net, shape, gwr_constant_i64(net, 1), 0);
    b = gwr_unsqueeze(net, b, I64S(0));
    s = gwr_unsqueeze(net, s, I64S(0));
    CHECK_TYPE(b, "i64[1]");
    target = gwr_concat(net, 4, TS(b, s, CI64S(4), CI64S(-1)), 0);
    CHECK_TYPE(target, "i64[4]");
    CHECK_TYPE(CALL("Reshape", NULL, x, target), "f32[batch,seq,4,16]");
    /* and Shape -> Slice -> Concat */
    target = gwr_concat(net, 2, TS(gwr_slice(net, shape, NDIMS(0), V(0), V(2), NULL, NULL), CI64S(8, 8)), 0);
    CHECK_TYPE(CALL("Reshape", NULL, x, target), "f32[batch,seq,8,8]");
    /* Size, Mul and Div on shape values */
    target = gwr_div(net, CALL("Size", NULL, IN(GWR_FLOAT32, 6, 4)), gwr_constant_i64(net, 4));
    target = gwr_unsqueeze(net, target, I64S(0));
    CHECK_TYPE(CALL("Reshape", NULL, IN(GWR_FLOAT32, 2, 3), target), "f32[6]");
    CHECK_FAILS(CALL("Reshape", NULL, IN(GWR_FLOAT32, 24), target), "Reshape"); /* 24 vs 6 */
    /* ConstantOfShape and Expand read propagated shapes too */
    CHECK_TYPE(CALL("ConstantOfShape", NULL, shape), "f32[batch,seq,64]");
    CHECK_TYPE(CALL("Expand", NULL, IN(GWR_FLOAT32, 1, 1, 64), shape), "f32[batch,seq,64]");
    /* Range(0, seq, 1): a symbolic length */
    CHECK_TYPE(CALL("Range", NULL, gwr_constant_i64(net, 0), gwr_gather(net, shape, gwr_constant_i64(net, 1), 0),
                    gwr_constant_i64(net, 1)),
               "i64[seq]");
}

TEST(flatten_and_transpose) {
    gwr_dim B = gwr_network_dim_sym(net, "batch");
    gwr_tensor *x = IN(GWR_FLOAT32, 2, 3, 4), *t;
    gwr_args *a = args_int("axis", 0);
    const int64_t *perm;
    int64_t n;
    CHECK_TYPE(CALL("Flatten", NULL, x), "f32[2,12]");
    CHECK_TYPE(CALL("Flatten", a, x), "f32[1,24]");
    gwr_args_set_int(a, "axis", 3);
    CHECK_TYPE(CALL("Flatten", a, x), "f32[24,1]");
    gwr_args_set_int(a, "axis", -2);
    CHECK_TYPE(CALL("Flatten", a, IN(GWR_FLOAT32, B, 3, 4)), "f32[batch,12]");
    gwr_args_set_int(a, "axis", 4);
    CHECK_FAILS(CALL("Flatten", a, x), "Flatten");
    gwr_args_free(a);
    t = gwr_transpose(net, x, 0, NULL);
    CHECK_TYPE(t, "f32[4,3,2]");
    CHECK(!gwr_layer_has_attr(gwr_tensor_parent(t), "perm"));
    t = gwr_transpose(net, x, I64S(1, 0, 2));
    CHECK_TYPE(t, "f32[3,2,4]");
    CHECK_OK(gwr_layer_get_ints(gwr_tensor_parent(t), "perm", &perm, &n));
    CHECK_EQ_INT(n, 3);
    CHECK_TYPE(gwr_transpose(net, IN(GWR_FLOAT32, B, 7), I64S(1, 0)), "f32[7,batch]");
    CHECK_FAILS(gwr_transpose(net, x, I64S(0, 1)), "Transpose");
    CHECK_FAILS(gwr_transpose(net, x, I64S(0, 1, 1)), "Transpose");
    CHECK_FAILS(gwr_transpose(net, x, I64S(0, 1, 3)), "Transpose");
    CHECK_FAILS(gwr_transpose(net, NULL, 0, NULL), "Transpose");
}

TEST(concat) {
    gwr_dim B = gwr_network_dim_sym(net, "batch");
    gwr_tensor *a = IN(GWR_FLOAT32, 2, 3), *b = IN(GWR_FLOAT32, 2, 5);
    CHECK_TYPE(gwr_concat(net, 2, TS(a, b), 1), "f32[2,8]");
    CHECK_TYPE(gwr_concat(net, 2, TS(a, b), -1), "f32[2,8]");
    CHECK_TYPE(gwr_concat(net, 3, TS(a, a, a), 0), "f32[6,3]");
    CHECK_TYPE(gwr_concat(net, 1, TS(a), 0), "f32[2,3]");
    CHECK_TYPE(gwr_concat(net, 2, TS(IN(GWR_FLOAT32, B, 3), IN(GWR_FLOAT32, 2, 3)), 0),
               "f32[?,3]");
    CHECK_TYPE(gwr_concat(net, 2, TS(IN(GWR_FLOAT32, B, 3), IN(GWR_FLOAT32, 0, 3)), 0),
               "f32[batch,3]");
    CHECK_TYPE(gwr_concat(net, 2, TS(IN(GWR_FLOAT32, B, 3), IN(GWR_FLOAT32, 2, 4)), 1),
               "f32[2,7]");
    CHECK_TYPE(gwr_concat(net, 2, TS(a, input(GWR_FLOAT32, -1, NULL)), 1), "f32[2,?]");
    CHECK_FAILS(gwr_concat(net, 2, TS(a, b), 0), "Concat");
    CHECK_CONTAINS(gwr_network_errmsg(net), "[2,5]");
    CHECK_FAILS(gwr_concat(net, 2, TS(a, IN(GWR_FLOAT32, 2, 3, 1)), 0), "Concat");
    CHECK_FAILS(gwr_concat(net, 2, TS(a, IN(GWR_INT32, 2, 3)), 0), "Concat");
    CHECK_FAILS(gwr_concat(net, 2, TS(a, b), 2), "Concat");
    CHECK_FAILS(gwr_concat(net, 2, TS(SCALAR(GWR_FLOAT32), SCALAR(GWR_FLOAT32)), 0), "Concat");
    CHECK_FAILS(gwr_concat(net, 0, NULL, 0), "Concat");
    CHECK_FAILS(gwr_concat(net, 2, TS(a, NULL), 0), "Concat");
    CHECK_FAILS(CALL("Concat", NULL, a, b), "axis"); /* a required attribute */
}

TEST(split) {
    gwr_tensor *x = IN(GWR_FLOAT32, 6, 4), *outs[3] = {NULL, NULL, NULL};
    gwr_layer *l = gwr_split(net, x, 0, 3, NULL, outs);
    gwr_args *a;
    if (CHECK(l)) {
        CHECK_EQ_INT(gwr_layer_num_outputs(l), 3);
        CHECK_EQ_INT(gwr_layer_num_inputs(l), 1);
        CHECK_TYPE(outs[0], "f32[2,4]");
        CHECK_TYPE(outs[2], "f32[2,4]");
    }
    l = gwr_split(net, x, 0, 3, (int64_t[]){1, 2, 3}, outs);
    if (CHECK(l)) {
        CHECK_EQ_INT(gwr_layer_num_inputs(l), 2);
        CHECK_TYPE(outs[0], "f32[1,4]");
        CHECK_TYPE(outs[1], "f32[2,4]");
        CHECK_TYPE(outs[2], "f32[3,4]");
    }
    l = gwr_split(net, x, -1, 2, (int64_t[]){1, 3}, NULL);
    if (CHECK(l))
        CHECK_TYPE(gwr_layer_output(l, 1), "f32[6,3]");
    CHECK_FAILS(gwr_split(net, x, 0, 3, (int64_t[]){1, 2, 2}, outs), "Split");
    CHECK_CONTAINS(gwr_network_errmsg(net), "add up");
    CHECK_FAILS(gwr_split(net, x, 0, 4, NULL, outs), "Split");
    CHECK_FAILS(gwr_split(net, x, 0, 2, (int64_t[]){-1, 7}, outs), "Split");
    CHECK_FAILS(gwr_split(net, x, 2, 2, NULL, outs), "Split");
    CHECK_FAILS(gwr_split(net, x, 0, 0, NULL, outs), "Split");
    CHECK_FAILS(gwr_split(net, NULL, 0, 2, NULL, outs), "Split");
    /* opset 18's num_outputs: the last part may be smaller */
    a = args_int("num_outputs", 3);
    l = gwr_op_call(net, "", "Split", 1, &x, a, 3, outs);
    gwr_args_free(a);
    a = args_int("num_outputs", 3);
    gwr_args_set_int(a, "axis", 1);
    l = gwr_op_call(net, "", "Split", 1, &x, a, 3, outs);
    gwr_args_free(a);
    if (CHECK(l)) {
        CHECK_TYPE(outs[0], "f32[6,2]");
        CHECK_TYPE(outs[2], "f32[6,0]");
    }
    /* the older attribute form */
    a = args_ints("split", 2, (int64_t[]){4, 2});
    l = gwr_op_call(net, "", "Split", 1, &x, a, 2, outs);
    gwr_args_free(a);
    if (CHECK(l))
        CHECK_TYPE(outs[0], "f32[4,4]");
}

TEST(slice_clamping) {
    gwr_tensor *x = IN(GWR_FLOAT32, 10, 6), *t;
    CHECK_TYPE(gwr_slice(net, x, NDIMS(2), V(2), V(5), NULL, NULL), "f32[3,6]");
    CHECK_TYPE(gwr_slice(net, x, NDIMS(-3), V(-3), V(INT64_MAX), NULL, NULL), "f32[3,6]");
    CHECK_TYPE(gwr_slice(net, x, NDIMS(-100), V(-100), V(100), NULL, NULL), "f32[10,6]");
    CHECK_TYPE(gwr_slice(net, x, NDIMS(7), V(7), V(3), NULL, NULL), "f32[0,6]");
    CHECK_TYPE(gwr_slice(net, x, NDIMS(20), V(20), V(30), NULL, NULL), "f32[0,6]");
    CHECK_TYPE(gwr_slice(net, x, NDIMS(INT64_MIN), V(INT64_MIN), V(INT64_MIN), NULL, NULL), "f32[0,6]");
    /* steps: ceil((end - start) / step) */
    CHECK_TYPE(gwr_slice(net, x, NDIMS(1), V(1), V(10), NULL, (int64_t[]){4}), "f32[3,6]");
    CHECK_TYPE(gwr_slice(net, x, NDIMS(0), V(0), V(INT64_MAX), NULL, (int64_t[]){INT64_MAX}), "f32[1,6]");
    /* negative steps: start clamps to [0, dim-1], end to [-1, dim-1] */
    CHECK_TYPE(gwr_slice(net, x, NDIMS(-1), V(-1), V(INT64_MIN), NULL, (int64_t[]){-1}), "f32[10,6]");
    CHECK_TYPE(gwr_slice(net, x, NDIMS(8), V(8), V(2), NULL, (int64_t[]){-2}), "f32[3,6]");
    CHECK_TYPE(gwr_slice(net, x, NDIMS(100), V(100), V(-100), NULL, (int64_t[]){-3}), "f32[4,6]");
    CHECK_TYPE(gwr_slice(net, x, NDIMS(2), V(2), V(8), NULL, (int64_t[]){-1}), "f32[0,6]");
    CHECK_TYPE(gwr_slice(net, x, NDIMS(5), V(5), V(0), NULL, (int64_t[]){INT64_MIN}), "f32[1,6]");
    /* axes */
    CHECK_TYPE(gwr_slice(net, x, NDIMS(1), V(1), V(-1), (int64_t[]){-1}, NULL), "f32[10,4]");
    CHECK_TYPE(gwr_slice(net, x, NDIMS(0, 1), V(0, 1), V(5, 3), (int64_t[]){1, 0}, NULL), "f32[2,5]");
    t = gwr_slice(net, x, NDIMS(0), V(0), V(4), NULL, (int64_t[]){2});
    CHECK_TYPE(t, "f32[2,6]");
    if (CHECK(t)) { /* steps without axes: the axes slot stays empty */
        CHECK_EQ_INT(gwr_layer_num_inputs(gwr_tensor_parent(t)), 5);
        CHECK(gwr_layer_input(gwr_tensor_parent(t), 3) == NULL);
    }
    CHECK_TYPE(gwr_slice(net, x, 0, NULL, NULL, NULL, NULL), "f32[10,6]");
}

TEST(slice_symbolic_and_errors) {
    gwr_dim S = gwr_network_dim_sym(net, "seq");
    gwr_tensor *x = IN(GWR_FLOAT32, S, 6);
    gwr_tensor *starts = IN(GWR_INT64, 1);
    CHECK_TYPE(gwr_slice(net, x, NDIMS(0), V(0), V(INT64_MAX), NULL, NULL), "f32[seq,6]");
    CHECK_TYPE(gwr_slice(net, x, NDIMS(-1), V(-1), V(INT64_MIN), NULL, (int64_t[]){-1}), "f32[seq,6]");
    CHECK_TYPE(gwr_slice(net, x, NDIMS(1), V(1), V(INT64_MAX), NULL, NULL), "f32[?,6]");
    CHECK_TYPE(gwr_slice(net, x, NDIMS(3), V(3), V(3), NULL, NULL), "f32[0,6]");
    /* starts not constant: that axis becomes unknown */
    CHECK_TYPE(CALL("Slice", NULL, IN(GWR_FLOAT32, 4, 5), starts, CI64S(3), CI64S(1)), "f32[4,?]");
    CHECK_TYPE(CALL("Slice", NULL, IN(GWR_FLOAT32, 4, 5), starts, CI64S(3), IN(GWR_INT64, 1)),
               "f32[?,?]");
    CHECK_FAILS(gwr_slice(net, x, NDIMS(0), V(0), V(1), NULL, (int64_t[]){0}), "Slice");
    CHECK_FAILS(gwr_slice(net, x, NDIMS(0), V(0), V(1), (int64_t[]){2}, NULL), "Slice");
    CHECK_FAILS(gwr_slice(net, x, NDIMS(0, 0), V(0, 0), V(1, 1), (int64_t[]){1, -1}, NULL), "Slice");
    CHECK_FAILS(gwr_slice(net, x, NDIMS(0, 0, 0), V(0, 0, 0), V(1, 1, 1), NULL, NULL), "Slice");
    CHECK_FAILS(gwr_slice(net, x, 1, NULL, V(1), NULL, NULL), "Slice");
    CHECK_FAILS(gwr_slice(net, NULL, NDIMS(0), V(0), V(1), NULL, NULL), "Slice");
    CHECK_FAILS_CALL(CALL("Slice", NULL, x, CI64S(0, 0), CI64S(1)), "Slice");
    CHECK_FAILS_CALL(CALL("Slice", NULL, x, gwr_constant_f32(net, 0), CI64S(1)), "Slice");
}

TEST(slice_attribute_form) {
    /* opset 1: one input, starts/ends/axes attributes (built directly, the
     * way an importer would; gwr_op_call checks the opset 13 arity) */
    gwr_tensor *x = IN(GWR_FLOAT32, 5, 6);
    gwr_layer *l = gwr_network_add_layer(net, "Slice", "", NULL, 1, &x, 1, NULL);
    if (!CHECK(l))
        return;
    gwr_layer_set_ints(l, "starts", (int64_t[]){1}, 1);
    gwr_layer_set_ints(l, "ends", (int64_t[]){-1}, 1);
    gwr_layer_set_ints(l, "axes", (int64_t[]){1}, 1);
    CHECK_OK(gwr_layer_infer(l));
    CHECK_TYPE(gwr_layer_output(l, 0), "f32[5,4]");
}

TEST(gather) {
    gwr_tensor *x = IN(GWR_FLOAT32, 5, 4, 3);
    CHECK_TYPE(gwr_gather(net, x, IN(GWR_INT64, 2, 7), 0), "f32[2,7,4,3]");
    CHECK_TYPE(gwr_gather(net, x, SCALAR(GWR_INT32), 1), "f32[5,3]");
    CHECK_TYPE(gwr_gather(net, x, IN(GWR_INT64, 6), -1), "f32[5,4,6]");
    CHECK_FAILS(gwr_gather(net, x, IN(GWR_FLOAT32, 2), 0), "Gather");
    CHECK_FAILS(gwr_gather(net, x, IN(GWR_INT64, 2), 3), "Gather");
    CHECK_FAILS(gwr_gather(net, SCALAR(GWR_FLOAT32), IN(GWR_INT64, 2), 0), "Gather");
    CHECK_FAILS(gwr_gather(net, x, NULL, 0), "Gather");
    CHECK_TYPE(CALL("GatherElements", NULL, x, IN(GWR_INT64, 2, 4, 1)), "f32[2,4,1]");
    CHECK_FAILS(CALL("GatherElements", NULL, x, IN(GWR_INT64, 2, 4)), "GatherElements");
    CHECK_TYPE(CALL("GatherND", NULL, x, IN(GWR_INT64, 6, 2)), "f32[6,3]");
    CHECK_FAILS(CALL("GatherND", NULL, x, IN(GWR_INT64, 6, 4)), "GatherND");
    CHECK_TYPE(CALL("ScatterElements", NULL, x, IN(GWR_INT64, 1, 4, 3), IN(GWR_FLOAT32, 1, 4, 3)),
               "f32[5,4,3]");
    CHECK_FAILS(CALL("ScatterND", NULL, x, IN(GWR_INT64, 1, 1), IN(GWR_INT32, 1, 4, 3)), "ScatterND");
}

TEST(squeeze_unsqueeze) {
    gwr_dim B = gwr_network_dim_sym(net, "batch");
    gwr_tensor *x = IN(GWR_FLOAT32, 1, 3, 1), *t;
    gwr_args *a;
    t = gwr_squeeze(net, x, I64S(0));
    CHECK_TYPE(t, "f32[3,1]");
    if (CHECK(t))
        CHECK_EQ_INT(gwr_layer_num_inputs(gwr_tensor_parent(t)), 2);
    CHECK_TYPE(gwr_squeeze(net, x, I64S(-1, 0)), "f32[3]");
    CHECK_TYPE(gwr_squeeze(net, x, 0, NULL), "f32[3]"); /* every dim known to be 1 */
    t = gwr_squeeze(net, IN(GWR_FLOAT32, B, 3), 0, NULL);
    CHECK_TYPE(t, "f32[batch,3]");
    CHECK_STR(op_of(t), "Identity"); /* nothing known to be 1 */
    t = gwr_squeeze(net, input(GWR_FLOAT32, -1, NULL), 0, NULL);
    CHECK_STR(op_of(t), "Squeeze");
    CHECK_TYPE(t, "f32[*]");
    CHECK_TYPE(gwr_squeeze(net, IN(GWR_FLOAT32, B, 1), I64S(0)), "f32[1]"); /* batch may be 1 */
    CHECK_FAILS(gwr_squeeze(net, x, I64S(1)), "Squeeze");
    CHECK_CONTAINS(gwr_network_errmsg(net), "extent is 3");
    CHECK_FAILS(gwr_squeeze(net, x, I64S(3)), "Squeeze");
    CHECK_FAILS(gwr_squeeze(net, x, I64S(0, 0)), "Squeeze");
    CHECK_FAILS(gwr_squeeze(net, NULL, I64S(0)), "Squeeze");
    /* ONNX's own no-axes form, and the older attribute form */
    CHECK_TYPE(CALL("Squeeze", NULL, x), "f32[3]");
    CHECK_TYPE(CALL("Squeeze", NULL, IN(GWR_FLOAT32, 1, B)), "f32[*]");
    a = args_ints("axes", 1, (int64_t[]){2});
    CHECK_TYPE(CALL("Squeeze", a, x), "f32[1,3]");
    gwr_args_free(a);

    x = IN(GWR_FLOAT32, 3, B);
    CHECK_TYPE(gwr_unsqueeze(net, x, I64S(0)), "f32[1,3,batch]");
    CHECK_TYPE(gwr_unsqueeze(net, x, I64S(0, 2)), "f32[1,3,1,batch]");
    CHECK_TYPE(gwr_unsqueeze(net, x, I64S(-1)), "f32[3,batch,1]");
    CHECK_TYPE(gwr_unsqueeze(net, x, I64S(3, 0)), "f32[1,3,batch,1]");
    CHECK_TYPE(gwr_unsqueeze(net, SCALAR(GWR_INT64), I64S(0)), "i64[1]");
    CHECK_TYPE(CALL("Unsqueeze", NULL, x, IN(GWR_INT64, 2)), "f32[?,?,?,?]");
    CHECK_FAILS(gwr_unsqueeze(net, x, I64S(4)), "Unsqueeze");
    CHECK_FAILS(gwr_unsqueeze(net, x, I64S(1, 1)), "Unsqueeze");
    CHECK_FAILS(gwr_unsqueeze(net, x, I64S(-5)), "Unsqueeze");
    CHECK_FAILS(gwr_unsqueeze(net, x, 1, NULL), "Unsqueeze");
}

TEST(expand_tile_pad) {
    gwr_dim B = gwr_network_dim_sym(net, "batch");
    gwr_tensor *x = IN(GWR_FLOAT32, 3, 1);
    CHECK_TYPE(gwr_expand(net, x, I64S(2, 3, 4)), "f32[2,3,4]");
    CHECK_TYPE(gwr_expand(net, x, I64S(1, 5)), "f32[3,5]");
    CHECK_TYPE(gwr_expand(net, x, I64S(1)), "f32[3,1]");
    CHECK_TYPE(gwr_expand(net, IN(GWR_FLOAT32, B, 1), I64S(1, 6)), "f32[batch,6]");
    CHECK_FAILS(gwr_expand(net, x, I64S(4, 4)), "Expand");
    CHECK_CONTAINS(gwr_network_errmsg(net), "[4,4]");
    CHECK_FAILS(gwr_expand(net, x, I64S(-2, 1)), "Expand");
    CHECK_FAILS(gwr_expand(net, NULL, I64S(1)), "Expand");
    CHECK_TYPE(CALL("Expand", NULL, x, IN(GWR_INT64, 3)), "f32[?,3,?]");

    CHECK_TYPE(CALL("Tile", NULL, IN(GWR_FLOAT32, 2, 3), CI64S(2, 2)), "f32[4,6]");
    CHECK_TYPE(CALL("Tile", NULL, IN(GWR_FLOAT32, B, 3), CI64S(1, 0)), "f32[batch,0]");
    CHECK_TYPE(CALL("Tile", NULL, IN(GWR_FLOAT32, 2, 3), IN(GWR_INT64, 2)), "f32[?,?]");
    CHECK_FAILS_CALL(CALL("Tile", NULL, IN(GWR_FLOAT32, 2, 3), CI64S(2)), "Tile");
    CHECK_FAILS_CALL(CALL("Tile", NULL, IN(GWR_FLOAT32, 2, 3), CI64S(2, -1)), "Tile");

    /* pads: all begins, then all ends */
    CHECK_TYPE(CALL("Pad", NULL, IN(GWR_FLOAT32, 2, 3), CI64S(0, 1, 0, 2)), "f32[2,6]");
    CHECK_TYPE(CALL("Pad", NULL, IN(GWR_FLOAT32, 2, 3), CI64S(1, -1, 1, -1)), "f32[4,1]");
    CHECK_TYPE(CALL("Pad", NULL, IN(GWR_FLOAT32, B, 3), CI64S(0, 1, 0, 1)), "f32[batch,5]");
    CHECK_TYPE(CALL("Pad", NULL, IN(GWR_FLOAT32, 2, 3), CI64S(1, 1, 1, 1), gwr_constant_f32(net, 0)),
               "f32[4,5]");
    CHECK_FAILS_CALL(CALL("Pad", NULL, IN(GWR_FLOAT32, 2, 3), CI64S(0, -2, 0, -2)), "Pad");
    CHECK_FAILS_CALL(CALL("Pad", NULL, IN(GWR_FLOAT32, 2, 3), CI64S(1, 1)), "Pad");
    CHECK_FAILS_CALL(CALL("Pad", NULL, IN(GWR_FLOAT32, 2, 3), CI64S(1, 1, 1, 1), gwr_constant_i64(net, 0)),
                "Pad");
}

TEST(cast_shape_size) {
    gwr_dim B = gwr_network_dim_sym(net, "batch");
    gwr_tensor *x = IN(GWR_FLOAT32, B, 4), *t;
    gwr_args *a;
    int64_t to = 0;
    t = gwr_cast(net, x, GWR_FLOAT16);
    CHECK_TYPE(t, "f16[batch,4]");
    CHECK_OK(gwr_layer_get_int(gwr_tensor_parent(t), "to", &to));
    CHECK_EQ_INT(to, GWR_FLOAT16);
    CHECK_EQ_INT(gwr_layer_type(gwr_tensor_parent(t)), GWR_LAYER_CAST);
    CHECK_FAILS(gwr_cast(net, x, GWR_UNDEFINED), "Cast");
    CHECK_FAILS(gwr_cast(net, x, (gwr_dtype)77), "Cast");
    CHECK_FAILS(gwr_cast(net, NULL, GWR_INT32), "Cast");
    CHECK_FAILS(CALL("Cast", NULL, x), "Cast");
    CHECK_TYPE(CALL("CastLike", NULL, x, IN(GWR_INT8, 1)), "i8[batch,4]");
    CHECK_TYPE(gwr_shape_of(net, x), "i64[2]");
    CHECK_TYPE(gwr_shape_of(net, input(GWR_FLOAT32, -1, NULL)), "i64[?]");
    CHECK_FAILS(gwr_shape_of(net, NULL), "Shape");
    a = args_int("start", 1);
    CHECK_TYPE(CALL("Shape", a, IN(GWR_FLOAT32, 2, 3, 4)), "i64[2]");
    gwr_args_set_int(a, "end", -1);
    CHECK_TYPE(CALL("Shape", a, IN(GWR_FLOAT32, 2, 3, 4)), "i64[1]");
    gwr_args_set_int(a, "start", 10);
    CHECK_TYPE(CALL("Shape", a, IN(GWR_FLOAT32, 2, 3, 4)), "i64[0]");
    gwr_args_free(a);
    CHECK_TYPE(CALL("Size", NULL, x), "i64[]");
}

TEST(where) {
    gwr_tensor *c = IN(GWR_BOOL, 2, 1), *x = IN(GWR_FLOAT32, 1, 3), *y = IN(GWR_FLOAT32, 3);
    gwr_tensor *t = gwr_where(net, c, x, y);
    CHECK_TYPE(t, "f32[2,3]");
    CHECK_EQ_INT(gwr_layer_type(gwr_tensor_parent(t)), GWR_LAYER_SELECT);
    CHECK_FAILS(gwr_where(net, IN(GWR_FLOAT32, 2, 1), x, y), "Where");
    CHECK_CONTAINS(gwr_network_errmsg(net), "bool");
    CHECK_FAILS(gwr_where(net, c, x, IN(GWR_INT64, 3)), "Where");
    CHECK_FAILS(gwr_where(net, c, x, NULL), "Where");
}

/* ---- the generic call ------------------------------------------------------ */

TEST(op_call_unknown_ops_are_plugins) {
    gwr_tensor *x = IN(GWR_FLOAT16, 2, 3), *y = IN(GWR_INT32, 4), *outs[2] = {NULL, NULL};
    gwr_args *a = gwr_args_new();
    gwr_layer *l;
    int64_t v = 0;
    gwr_args_set_int(a, "heads", 8);
    l = gwr_op_call(net, "com.example", "FusedThing", 2, TS(x, y), a, 2, outs);
    if (CHECK(l)) {
        CHECK_EQ_INT(gwr_layer_type(l), GWR_LAYER_PLUGIN);
        CHECK_EQ_INT(gwr_layer_op_id(l), GWR_OP_CUSTOM);
        CHECK_STR(gwr_layer_op(l), "FusedThing");
        CHECK_STR(gwr_layer_domain(l), "com.example");
        CHECK_TYPE(outs[0], "f16[*]");
        CHECK_TYPE(outs[1], "f16[*]");
        CHECK_OK(gwr_layer_get_int(l, "heads", &v));
        CHECK_EQ_INT(v, 8);
    }
    /* a name the table lacks in the default domain, and no inputs at all */
    l = gwr_op_call(net, "", "NotAnOnnxOp", 0, NULL, NULL, 1, outs);
    if (CHECK(l)) {
        CHECK_EQ_INT(gwr_layer_type(l), GWR_LAYER_PLUGIN);
        CHECK_TYPE(outs[0], "undef[*]");
    }
    /* NULL domain means the default one */
    l = gwr_op_call(net, NULL, "Relu", 1, &x, NULL, 1, outs);
    if (CHECK(l))
        CHECK_EQ_INT(gwr_layer_op_id(l), GWR_OP_Relu);
    gwr_args_free(a);
}

TEST(op_call_errors) {
    gwr_tensor *x = IN(GWR_FLOAT32, 2, 3), *outs[3];
    gwr_args *a = gwr_args_new();
    CHECK(gwr_op_call(NULL, "", "Relu", 1, &x, NULL, 1, outs) == NULL);
    CHECK_CONTAINS(gwr_last_errmsg(), "gwr_op_call");
    CHECK_FAILS(gwr_op_call(net, "", "Add", 1, &x, NULL, 1, outs), "Add");
    CHECK_CONTAINS(gwr_network_errmsg(net), "inputs");
    CHECK_FAILS(gwr_op_call(net, "", "Add", 3, TS(x, x, x), NULL, 1, outs), "Add");
    CHECK_FAILS(gwr_op_call(net, "", "Relu", 1, &x, NULL, 2, outs), "Relu");
    CHECK_FAILS_CALL(gwr_op_call(net, "", "TopK", 2, TS(x, CI64S(1)), NULL, 1, outs), "TopK");
    CHECK_FAILS(gwr_op_call(net, "", "Add", 2, TS(x, NULL), NULL, 1, outs), "Add");
    CHECK_FAILS(gwr_op_call(net, "", "Concat", 2, TS(x, NULL), NULL, 1, outs), "Concat");
    CHECK_FAILS(gwr_op_call(net, "", "", 1, &x, NULL, 1, outs), "gwr_op_call");
    CHECK_FAILS(gwr_op_call(net, "", NULL, 1, &x, NULL, 1, outs), "gwr_op_call");
    CHECK_FAILS(gwr_op_call(net, "", "Relu", -1, &x, NULL, 1, outs), "Relu");
    CHECK_FAILS(gwr_op_call(net, "", "Relu", 1, NULL, NULL, 1, outs), "Relu");
    /* a tensor-valued argument cannot become an attribute */
    gwr_args_set_tensor(a, "x", x);
    CHECK_FAILS(gwr_op_call(net, "", "Relu", 1, &x, a, 1, outs), "Relu");
    /* an attribute of the wrong type is caught by inference */
    gwr_args_free(a);
    a = gwr_args_new();
    gwr_args_set_string(a, "axis", "one");
    CHECK_FAILS(gwr_op_call(net, "", "Softmax", 1, &x, a, 1, outs), "axis");
    gwr_args_free(a);
    /* outs may be NULL */
    CHECK(gwr_op_call(net, "", "Relu", 1, &x, NULL, 1, NULL) != NULL);
}

TEST(infer_after_rewiring) {
    gwr_tensor *a = IN(GWR_FLOAT32, 2, 3), *b = IN(GWR_FLOAT32, 5, 1, 3), *bad = IN(GWR_FLOAT32, 4);
    gwr_tensor *t = gwr_relu(net, a), *s;
    gwr_layer *l = gwr_tensor_parent(t);
    CHECK_TYPE(t, "f32[2,3]");
    CHECK_OK(gwr_layer_set_input(l, 0, b));
    CHECK_OK(gwr_layer_infer(l));
    CHECK_TYPE(t, "f32[5,1,3]");
    s = gwr_add(net, a, a);
    CHECK_OK(gwr_layer_set_input(gwr_tensor_parent(s), 1, bad));
    CHECK_EQ_INT(gwr_layer_infer(gwr_tensor_parent(s)), GWR_ERR_SHAPE);
    CHECK_CONTAINS(gwr_network_errmsg(net), "Add");
    CHECK_EQ_INT(gwr_layer_infer(NULL), GWR_ERR_INVALID_ARG);
}

/* ---- constants and generated tensors ----------------------------------------- */

TEST(constant_ops) {
    gwr_args *a = gwr_args_new();
    CHECK_FAILS(CALL0("Constant", NULL), "Constant");
    gwr_args_set_ints(a, "value_ints", 3, (int64_t[]){1, 2, 3});
    CHECK_TYPE(CALL0("Constant", a), "i64[3]");
    gwr_args_free(a);
    a = gwr_args_new();
    gwr_args_set_float(a, "value_float", 2.0);
    CHECK_TYPE(CALL0("Constant", a), "f32[]");
    gwr_args_free(a);
    a = gwr_args_new();
    gwr_args_set_floats(a, "value_floats", 2, (double[]){1.0, 2.0});
    CHECK_TYPE(CALL0("Constant", a), "f32[2]");
    gwr_args_free(a);
    a = args_int("value_int", 4);
    CHECK_TYPE(CALL0("Constant", a), "i64[]");
    gwr_args_free(a);
    a = gwr_args_new();
    gwr_args_set_string(a, "value_string", "hi");
    CHECK_TYPE(CALL0("Constant", a), "str[]");
    gwr_args_free(a);
    /* a Constant's value feeds shapes like any other constant */
    a = args_ints("value_ints", 2, (int64_t[]){3, -1});
    CHECK_TYPE(CALL("Reshape", NULL, IN(GWR_FLOAT32, 6, 2), CALL0("Constant", a)), "f32[3,4]");
    gwr_args_free(a);
}

TEST(fill_ops) {
    gwr_tensor *t;
    CHECK_TYPE(CALL("ConstantOfShape", NULL, CI64S(2, 3)), "f32[2,3]");
    {
        int32_t one = 1;
        gwr_weights w = {GWR_INT32, 1, (int64_t[]){1}, &one, 4, NULL, NULL};
        gwr_layer *l;
        gwr_tensor *in = CI64S(4), *out = NULL;
        w.buffer = gwr_buffer_new_copy(&one, 4);
        w.data = gwr_buffer_data(w.buffer);
        l = gwr_network_add_layer(net, "ConstantOfShape", "", NULL, 1, &in, 1, NULL);
        if (CHECK(l)) {
            CHECK_OK(gwr_layer_set_tensor(l, "value", &w));
            CHECK_OK(gwr_layer_infer(l));
            out = gwr_layer_output(l, 0);
            CHECK_TYPE(out, "i32[4]");
        }
        gwr_buffer_release(w.buffer);
    }
    CHECK_TYPE(CALL("ConstantOfShape", NULL, IN(GWR_INT64, 3)), "f32[?,?,?]");
    CHECK_FAILS_CALL(CALL("ConstantOfShape", NULL, CI64S(2, -3)), "ConstantOfShape");
    /* Range: max(ceil((limit - start) / delta), 0) */
    t = CALL("Range", NULL, gwr_constant_i64(net, 0), gwr_constant_i64(net, 10), gwr_constant_i64(net, 3));
    CHECK_TYPE(t, "i64[4]");
    CHECK_TYPE(CALL("Range", NULL, gwr_constant_i64(net, 10), gwr_constant_i64(net, 0),
                    gwr_constant_i64(net, -3)),
               "i64[4]");
    CHECK_TYPE(CALL("Range", NULL, gwr_constant_i64(net, 5), gwr_constant_i64(net, 0),
                    gwr_constant_i64(net, 1)),
               "i64[0]");
    CHECK_TYPE(CALL("Range", NULL, gwr_constant_f32(net, 0), gwr_constant_f32(net, 1),
                    gwr_constant_f32(net, 0.25f)),
               "f32[4]");
    CHECK_TYPE(CALL("Range", NULL, gwr_constant_i64(net, INT64_MIN), gwr_constant_i64(net, INT64_MAX),
                    gwr_constant_i64(net, 1)),
               "i64[?]");
    CHECK_TYPE(CALL("Range", NULL, SCALAR(GWR_INT32), SCALAR(GWR_INT32), SCALAR(GWR_INT32)), "i32[?]");
    CHECK_FAILS_CALL(CALL("Range", NULL, gwr_constant_i64(net, 0), gwr_constant_i64(net, 4),
                     gwr_constant_i64(net, 0)),
                "Range");
    CHECK_FAILS_CALL(CALL("Range", NULL, gwr_constant_i64(net, 0), gwr_constant_f32(net, 4),
                     gwr_constant_i64(net, 1)),
                "Range");
    CHECK_FAILS_CALL(CALL("Range", NULL, CI64S(0, 1), gwr_constant_i64(net, 4), gwr_constant_i64(net, 1)),
                "Range");
    CHECK_TYPE(CALL("EyeLike", NULL, IN(GWR_FLOAT32, 3, 4)), "f32[3,4]");
    CHECK_FAILS(CALL("EyeLike", NULL, IN(GWR_FLOAT32, 3)), "EyeLike");
    {
        gwr_args *a = args_ints("shape", 2, (int64_t[]){2, 5});
        CHECK_TYPE(CALL0("RandomNormal", a), "f32[2,5]");
        gwr_args_set_int(a, "dtype", GWR_FLOAT16);
        CHECK_TYPE(CALL0("RandomUniform", a), "f16[2,5]");
        gwr_args_free(a);
        CHECK_FAILS(CALL0("RandomUniform", NULL), "RandomUniform");
        CHECK_TYPE(CALL("RandomNormalLike", NULL, IN(GWR_FLOAT64, 3)), "f64[3]");
    }
}

/* ---- other single-purpose ops ---------------------------------------------- */

TEST(topk_onehot_nonzero_cumsum) {
    gwr_tensor *x = IN(GWR_FLOAT32, 5, 10), *outs[2];
    gwr_layer *l = gwr_op_call(net, "", "TopK", 2, TS(x, CI64S(3)), NULL, 2, outs);
    gwr_args *a;
    if (CHECK(l)) {
        CHECK_TYPE(outs[0], "f32[5,3]");
        CHECK_TYPE(outs[1], "i64[5,3]");
    }
    a = args_int("axis", 0);
    l = gwr_op_call(net, "", "TopK", 2, TS(x, IN(GWR_INT64, 1)), a, 2, outs);
    if (CHECK(l))
        CHECK_TYPE(outs[1], "i64[?,10]");
    CHECK_FAILS_CALL(gwr_op_call(net, "", "TopK", 2, TS(x, CI64S(6)), a, 2, outs), "TopK");
    gwr_args_free(a);
    CHECK_FAILS_CALL(gwr_op_call(net, "", "TopK", 2, TS(x, CI64S(-1)), NULL, 2, outs), "TopK");

    CHECK_TYPE(CALL("OneHot", NULL, IN(GWR_INT64, 2, 3), gwr_constant_i64(net, 10), IN(GWR_FLOAT32, 2)),
               "f32[2,3,10]");
    a = args_int("axis", 0);
    CHECK_TYPE(CALL("OneHot", a, IN(GWR_INT64, 2, 3), gwr_constant_f32(net, 4), IN(GWR_INT32, 2)),
               "i32[4,2,3]");
    gwr_args_set_int(a, "axis", -4);
    CHECK_FAILS_CALL(CALL("OneHot", a, IN(GWR_INT64, 2, 3), gwr_constant_i64(net, 10), IN(GWR_FLOAT32, 2)),
                "OneHot");
    gwr_args_free(a);
    CHECK_TYPE(CALL("OneHot", NULL, IN(GWR_INT64, 2), IN(GWR_INT64, 1), IN(GWR_FLOAT32, 2)), "f32[2,?]");

    CHECK_TYPE(CALL("NonZero", NULL, IN(GWR_FLOAT32, 4, 5, 6)), "i64[3,?]");
    CHECK_TYPE(CALL("NonZero", NULL, input(GWR_FLOAT32, -1, NULL)), "i64[?,?]");
    CHECK_TYPE(CALL("CumSum", NULL, x, gwr_constant_i64(net, 1)), "f32[5,10]");
    CHECK_FAILS_CALL(CALL("CumSum", NULL, x, gwr_constant_i64(net, 2)), "CumSum");
    CHECK_FAILS_CALL(CALL("CumSum", NULL, x, gwr_constant_f32(net, 0)), "CumSum");
}

TEST(einsum) {
    gwr_dim B = gwr_network_dim_sym(net, "batch");
    gwr_args *a = gwr_args_new();
    gwr_tensor *p = IN(GWR_FLOAT32, 2, 3), *q = IN(GWR_FLOAT32, 3, 4);
    gwr_args_set_string(a, "equation", "ij,jk->ik");
    CHECK_TYPE(CALL("Einsum", a, p, q), "f32[2,4]");
    gwr_args_set_string(a, "equation", "ij,jk");
    CHECK_TYPE(CALL("Einsum", a, p, q), "f32[2,4]");
    gwr_args_set_string(a, "equation", "bij, bjk -> bki");
    CHECK_TYPE(CALL("Einsum", a, IN(GWR_FLOAT32, B, 2, 3), IN(GWR_FLOAT32, B, 3, 5)), "f32[batch,5,2]");
    gwr_args_set_string(a, "equation", "ii->i");
    CHECK_TYPE(CALL("Einsum", a, IN(GWR_FLOAT32, 4, 4)), "f32[4]");
    gwr_args_set_string(a, "equation", "ij->");
    CHECK_TYPE(CALL("Einsum", a, p), "f32[]");
    gwr_args_set_string(a, "equation", "...ij,...jk->...ik");
    CHECK_TYPE(CALL("Einsum", a, p, q), "f32[*]");
    gwr_args_set_string(a, "equation", "ij,jk->ik");
    CHECK_FAILS(CALL("Einsum", a, p, IN(GWR_FLOAT32, 5, 4)), "Einsum");
    CHECK_FAILS(CALL("Einsum", a, p), "Einsum");
    CHECK_FAILS(CALL("Einsum", a, p, q, q), "Einsum");
    gwr_args_set_string(a, "equation", "ij,jk->iz");
    CHECK_FAILS(CALL("Einsum", a, p, q), "Einsum");
    gwr_args_set_string(a, "equation", "i1,jk->ik");
    CHECK_FAILS(CALL("Einsum", a, p, q), "Einsum");
    gwr_args_set_string(a, "equation", "ijk,jk->ik");
    CHECK_FAILS(CALL("Einsum", a, p, q), "Einsum");
    CHECK_FAILS(CALL("Einsum", NULL, p, q), "equation");
    gwr_args_free(a);
}

TEST(dropout_resize_quant) {
    gwr_tensor *x = IN(GWR_FLOAT32, 1, 3, 4, 6), *outs[2];
    gwr_layer *l = gwr_op_call(net, "", "Dropout", 1, &x, NULL, 2, outs);
    float sc[4] = {1, 1, 2, 0.5f};
    if (CHECK(l)) {
        CHECK_TYPE(outs[0], "f32[1,3,4,6]");
        CHECK_TYPE(outs[1], "bool[1,3,4,6]");
    }
    CHECK_TYPE(CALL("Identity", NULL, x), "f32[1,3,4,6]");
    CHECK_TYPE(CALL("Resize", NULL, x, IN(GWR_FLOAT32, 0), gwr_constant(net, GWR_FLOAT32, 1, (int64_t[]){4}, sc)),
               "f32[1,3,8,3]");
    CHECK_TYPE(CALL("Resize", NULL, x, NULL, gwr_constant(net, GWR_FLOAT32, 1, (int64_t[]){0}, NULL),
                    CI64S(1, 3, 5, 5)),
               "f32[1,3,5,5]");
    CHECK_TYPE(CALL("Resize", NULL, x, NULL, IN(GWR_FLOAT32, 4)), "f32[?,?,?,?]");
    CHECK_TYPE(CALL("Upsample", NULL, x, gwr_constant(net, GWR_FLOAT32, 1, (int64_t[]){4}, sc)), "f32[1,3,8,3]");
    CHECK_FAILS_CALL(CALL("Resize", NULL, x, NULL, NULL, CI64S(1, 3, 5)), "Resize");
    sc[2] = -1;
    CHECK_FAILS_CALL(CALL("Resize", NULL, x, NULL, gwr_constant(net, GWR_FLOAT32, 1, (int64_t[]){4}, sc)), "Resize");

    CHECK_TYPE(CALL("QuantizeLinear", NULL, x, gwr_constant_f32(net, 0.1f)), "u8[1,3,4,6]");
    {
        int8_t zp = 0;
        gwr_tensor *z = gwr_constant(net, GWR_INT8, 0, NULL, &zp), *qx;
        qx = CALL("QuantizeLinear", NULL, x, gwr_constant_f32(net, 0.1f), z);
        CHECK_TYPE(qx, "i8[1,3,4,6]");
        CHECK_TYPE(CALL("DequantizeLinear", NULL, qx, gwr_constant_f32(net, 0.1f), z), "f32[1,3,4,6]");
        CHECK_FAILS_CALL(CALL("DequantizeLinear", NULL, qx, gwr_constant_f32(net, 0.1f), CI64S(0)),
                    "DequantizeLinear");
    }
    l = gwr_op_call(net, "", "DynamicQuantizeLinear", 1, &x, NULL, 3, TS(NULL, NULL, NULL));
    CHECK(l != NULL);
    if (l) {
        CHECK_TYPE(gwr_layer_output(l, 0), "u8[1,3,4,6]");
        CHECK_TYPE(gwr_layer_output(l, 1), "f32[]");
    }
}

TEST(depth_space_rnn_misc) {
    gwr_args *a = args_int("blocksize", 2);
    gwr_tensor *outs[3];
    gwr_layer *l;
    CHECK_TYPE(CALL("DepthToSpace", a, IN(GWR_FLOAT32, 1, 8, 2, 3)), "f32[1,2,4,6]");
    CHECK_TYPE(CALL("SpaceToDepth", a, IN(GWR_FLOAT32, 1, 2, 4, 6)), "f32[1,8,2,3]");
    CHECK_FAILS(CALL("SpaceToDepth", a, IN(GWR_FLOAT32, 1, 2, 5, 6)), "SpaceToDepth");
    CHECK_FAILS(CALL("DepthToSpace", a, IN(GWR_FLOAT32, 1, 6, 2, 3)), "DepthToSpace");
    CHECK_FAILS(CALL("DepthToSpace", a, IN(GWR_FLOAT32, 8, 2, 3)), "DepthToSpace");
    CHECK_FAILS(CALL("DepthToSpace", NULL, IN(GWR_FLOAT32, 1, 8, 2, 3)), "blocksize");
    gwr_args_free(a);
    /* LSTM: X (seq, batch, input), W (dirs, 4*hidden, input), R (dirs, 4*hidden, hidden) */
    a = gwr_args_new();
    gwr_args_set_string(a, "direction", "bidirectional");
    gwr_args_set_int(a, "hidden_size", 16);
    l = gwr_op_call(net, "", "LSTM", 3,
                    TS(IN(GWR_FLOAT32, 7, 2, 10), IN(GWR_FLOAT32, 2, 64, 10), IN(GWR_FLOAT32, 2, 64, 16)),
                    a, 3, outs);
    if (CHECK(l)) {
        CHECK_TYPE(outs[0], "f32[7,2,2,16]");
        CHECK_TYPE(outs[1], "f32[2,2,16]");
        CHECK_TYPE(outs[2], "f32[2,2,16]");
    }
    gwr_args_set_string(a, "direction", "sideways");
    CHECK_FAILS(gwr_op_call(net, "", "GRU", 3,
                            TS(IN(GWR_FLOAT32, 7, 2, 10), IN(GWR_FLOAT32, 1, 48, 10), IN(GWR_FLOAT32, 1, 48, 16)),
                            a, 2, outs),
                "GRU");
    gwr_args_free(a);
    /* ops without a rule: the first input's dtype, unknown rank */
    CHECK_TYPE(CALL("DFT", NULL, IN(GWR_FLOAT64, 4, 2)), "f64[*]");
    CHECK_TYPE(CALL("Trilu", NULL, IN(GWR_FLOAT32, 4, 4)), "f32[4,4]");
    CHECK_TYPE(CALL("NonMaxSuppression", NULL, IN(GWR_FLOAT32, 1, 5, 4), IN(GWR_FLOAT32, 1, 1, 5)), "i64[?,3]");
    CHECK_TYPE(CALL("Det", NULL, IN(GWR_FLOAT32, 3, 4, 4)), "f32[3]");
    CHECK_FAILS(CALL("Det", NULL, IN(GWR_FLOAT32, 3, 4, 5)), "Det");
    CHECK_TYPE(CALL("GridSample", NULL, IN(GWR_FLOAT32, 2, 3, 8, 8), IN(GWR_FLOAT32, 2, 5, 6, 2)), "f32[2,3,5,6]");
}

/* Malformed constants never crash inference. */
TEST(robust_against_bad_constants) {
    gwr_tensor *x = IN(GWR_FLOAT32, 4, 4);
    int32_t v32[2] = {2, 8};
    /* an int32 shape is a type error for Reshape but readable for Tile */
    gwr_tensor *s32 = gwr_constant(net, GWR_INT32, 1, (int64_t[]){2}, v32);
    CHECK_FAILS(CALL("Reshape", NULL, x, s32), "Reshape");
    /* a weights blob too short for its dims is not read */
    {
        gwr_layer *l;
        gwr_tensor *in = CI64S(1, 2), *o;
        l = gwr_network_add_layer(net, "Unsqueeze", "", NULL, 2, TS(x, in), 1, NULL);
        if (CHECK(l)) {
            CHECK_OK(gwr_layer_infer(l));
            o = gwr_layer_output(l, 0);
            CHECK_TYPE(o, "f32[4,1,1,4]");
        }
    }
    /* a huge axes list */
    {
        int64_t axes[300];
        for (int i = 0; i < 300; i++)
            axes[i] = i;
        CHECK_FAILS(gwr_unsqueeze(net, x, 300, axes), "Unsqueeze");
        CHECK_TYPE(gwr_reshape(net, x, I64S(16)), "f32[16]");
    }
    /* Reshape to more dims than the rank limit */
    {
        int64_t ones[GWR_MAX_RANK + 1];
        for (int i = 0; i <= GWR_MAX_RANK; i++)
            ones[i] = 1;
        ones[0] = 16;
        CHECK_FAILS(gwr_reshape(net, x, GWR_MAX_RANK + 1, ones), "Reshape");
        CHECK_FAILS(gwr_expand(net, x, GWR_MAX_RANK + 1, ones), "Expand");
        CHECK_FAILS_CALL(CALL("ConstantOfShape", NULL, ci64s(GWR_MAX_RANK + 1, ones)), "ConstantOfShape");
        /* a Split into more parts than values the inference reads: sizes unknown, no error */
        {
            int64_t sizes[100];
            gwr_tensor *parts[100];
            for (int i = 0; i < 100; i++)
                sizes[i] = 1;
            CHECK(gwr_split(net, IN(GWR_FLOAT32, 100), 0, 100, sizes, parts) != NULL);
            CHECK(gwr_split(net, IN(GWR_FLOAT32, 100), 0, 100, NULL, parts) != NULL);
            CHECK_TYPE(parts[99], "f32[1]");
        }
    }
}

/* A plugin kind's own inference runs for layers made by gwr_op_call. */
static int plugin_calls;
static gwr_status plugin_infer(gwr_layer *l, void *user) {
    gwr_dim d[1] = {*(const int64_t *)user};
    plugin_calls++;
    return gwr_tensor_set_type(gwr_layer_output(l, 0), GWR_INT8, 1, d);
}

TEST(op_call_registered_plugin) {
    static const int64_t n = 42;
    gwr_tensor *x = IN(GWR_FLOAT32, 3), *out = NULL;
    gwr_layer *l;
    if (!gwr_plugin_is_registered("test.functional", "Answer"))
        CHECK_OK(gwr_plugin_register("test.functional", "Answer", 1, plugin_infer, (void *)&n));
    l = gwr_op_call(net, "test.functional", "Answer", 1, &x, NULL, 1, &out);
    if (CHECK(l)) {
        CHECK_EQ_INT(gwr_layer_type(l), GWR_LAYER_PLUGIN);
        CHECK_TYPE(out, "i8[42]");
        CHECK_EQ_INT(plugin_calls, 1);
        CHECK_OK(gwr_layer_infer(l));
        CHECK_EQ_INT(plugin_calls, 2);
    }
}

/* An external plugin reports a refusal through gwr_network_error: the
 * message and status reach the caller of gwr_plugin_create. */
static gwr_status picky_infer(gwr_layer *l, void *user) {
    (void)user;
    if (gwr_tensor_rank(gwr_layer_input(l, 0)) != 2)
        return gwr_network_error(gwr_layer_network(l), GWR_ERR_SHAPE, "Picky '%s': wants a matrix", gwr_layer_name(l));
    return gwr_tensor_set_type(gwr_layer_output(l, 0), GWR_FLOAT32, 0, NULL);
}

TEST(plugin_reports_through_the_network) {
    if (!gwr_plugin_is_registered("test.functional", "Picky"))
        CHECK_OK(gwr_plugin_register("test.functional", "Picky", 1, picky_infer, NULL));
    gwr_tensor *v = IN(GWR_FLOAT32, 3), *m = IN(GWR_FLOAT32, 2, 2);
    CHECK(gwr_plugin_create(net, "test.functional", "Picky", "p1", 1, &v, NULL) == NULL);
    CHECK_CONTAINS(gwr_network_errmsg(net), "Picky 'p1': wants a matrix");
    CHECK_EQ_INT(gwr_last_status(), GWR_ERR_SHAPE);
    CHECK(gwr_network_find_layer(net, "p1") == NULL); /* the refused layer is gone */
    gwr_layer *ok = gwr_plugin_create(net, "test.functional", "Picky", "p2", 1, &m, NULL);
    if (CHECK(ok)) CHECK_TYPE(gwr_layer_output(ok, 0), "f32[]");
    CHECK_EQ_INT(gwr_network_error(NULL, GWR_ERR_IO, "no network: %d", 7), GWR_ERR_IO);
    CHECK_STR(gwr_last_errmsg(), "no network: 7");
}

TEST(arity_messages) {
    gwr_tensor *x = IN(GWR_FLOAT32, 3), *out;
    CHECK_FAILS(gwr_op_call(net, "", "Concat", 0, NULL, NULL, 1, &out), "1 or more");
    CHECK_FAILS(gwr_op_call(net, "", "Clip", 4, TS(x, x, x, x), NULL, 1, &out), "1..3");
    CHECK_FAILS(gwr_op_call(net, "", "Split", 1, &x, NULL, 0, &out), "Split");
    CHECK_FAILS(gwr_transpose(net, x, -1, V(0)), "Transpose");
    {
        gwr_conv_params p = {0};
        p.group = -2;
        CHECK_FAILS(gwr_conv(net, IN(GWR_FLOAT32, 1, 2, 4, 4), IN(GWR_FLOAT32, 2, 1, 3, 3), NULL, &p),
                    "group");
    }
    CHECK_FAILS(gwr_constant(net, GWR_STRING, 1, (int64_t[]){2}, NULL), "NULL");
}

TEST(more_rules) {
    gwr_tensor *x = IN(GWR_FLOAT32, 4, 5), *outs[4];
    gwr_args *a = gwr_args_new();
    gwr_layer *l;
    /* Compress: unknown count along the axis, or a 1-D result */
    CHECK_TYPE(CALL("Compress", NULL, x, IN(GWR_BOOL, 3)), "f32[?]");
    gwr_args_set_int(a, "axis", 1);
    CHECK_TYPE(CALL("Compress", a, x, IN(GWR_BOOL, 3)), "f32[4,?]");
    CHECK_FAILS(CALL("Compress", a, x, IN(GWR_INT64, 3)), "Compress");
    gwr_args_set_int(a, "axis", 2);
    CHECK_FAILS(CALL("Compress", a, x, IN(GWR_BOOL, 3)), "Compress");
    /* losses: a scalar, or the target's shape with reduction "none" */
    CHECK_TYPE(CALL("NegativeLogLikelihoodLoss", NULL, IN(GWR_FLOAT32, 8, 5), IN(GWR_INT64, 8)), "f32[]");
    gwr_args_free(a);
    a = gwr_args_new();
    gwr_args_set_string(a, "reduction", "none");
    l = gwr_op_call(net, "", "SoftmaxCrossEntropyLoss", 2, TS(IN(GWR_FLOAT32, 8, 5, 2), IN(GWR_INT64, 8, 2)),
                    a, 2, outs);
    if (CHECK(l)) {
        CHECK_TYPE(outs[0], "f32[8,2]");
        CHECK_TYPE(outs[1], "f32[8,5,2]");
    }
    gwr_args_set_string(a, "reduction", "avg");
    CHECK_FAILS(CALL("NegativeLogLikelihoodLoss", a, IN(GWR_FLOAT32, 8, 5), IN(GWR_INT64, 8)),
                "reduction");
    CHECK_FAILS(CALL("NegativeLogLikelihoodLoss", NULL, IN(GWR_FLOAT32, 8, 5), IN(GWR_FLOAT32, 8)),
                "target");
    gwr_args_free(a);
    /* Unique */
    l = gwr_op_call(net, "", "Unique", 1, &x, NULL, 4, outs);
    if (CHECK(l)) {
        CHECK_TYPE(outs[0], "f32[?]");
        CHECK_TYPE(outs[3], "i64[?]");
    }
    a = args_int("axis", -1);
    l = gwr_op_call(net, "", "Unique", 1, &x, a, 2, outs);
    gwr_args_free(a);
    if (CHECK(l))
        CHECK_TYPE(outs[0], "f32[4,?]");
    /* MaxUnpool: (in - 1) * stride + kernel - pads, or output_shape */
    a = args_ints("kernel_shape", 2, (int64_t[]){2, 2});
    gwr_args_set_ints(a, "strides", 2, (int64_t[]){2, 2});
    CHECK_TYPE(CALL("MaxUnpool", a, IN(GWR_FLOAT32, 1, 3, 4, 5), IN(GWR_INT64, 1, 3, 4, 5)), "f32[1,3,8,10]");
    CHECK_TYPE(CALL("MaxUnpool", a, IN(GWR_FLOAT32, 1, 3, 4, 5), IN(GWR_INT64, 1, 3, 4, 5), CI64S(1, 3, 9, 11)),
               "f32[1,3,9,11]");
    CHECK_TYPE(CALL("MaxUnpool", a, IN(GWR_FLOAT32, 1, 3, 4), IN(GWR_INT64, 1, 3, 4)), "f32[?,?,?]");
    gwr_args_free(a);
    /* RoiAlign, MaxRoiPool */
    a = args_int("output_height", 7);
    gwr_args_set_int(a, "output_width", 5);
    CHECK_TYPE(CALL("RoiAlign", a, IN(GWR_FLOAT32, 2, 16, 32, 32), IN(GWR_FLOAT32, 9, 4), IN(GWR_INT64, 9)),
               "f32[9,16,7,5]");
    gwr_args_free(a);
    a = args_ints("pooled_shape", 2, (int64_t[]){3, 3});
    CHECK_TYPE(CALL("MaxRoiPool", a, IN(GWR_FLOAT32, 2, 16, 32, 32), IN(GWR_FLOAT32, 9, 5)), "f32[9,16,3,3]");
    gwr_args_free(a);
    CHECK_FAILS(CALL("MaxRoiPool", NULL, IN(GWR_FLOAT32, 2, 16, 32, 32), IN(GWR_FLOAT32, 9, 5)),
                "pooled_shape");
    /* generators */
    a = args_int("sample_size", 6);
    CHECK_TYPE(CALL("Multinomial", a, IN(GWR_FLOAT32, 3, 10)), "i32[3,6]");
    gwr_args_set_int(a, "dtype", 12345);
    CHECK_FAILS(CALL("Multinomial", a, IN(GWR_FLOAT32, 3, 10)), "dtype");
    gwr_args_free(a);
    CHECK_TYPE(CALL("Bernoulli", NULL, IN(GWR_FLOAT64, 3, 10)), "f64[3,10]");
    /* Pad: opset 18 axes input, opset 2 attribute form (built the way an
     * importer does; gwr_op_call checks opset 17 arities) */
    l = gwr_network_add_layer(net, "Pad", "", NULL, 4,
                              TS(IN(GWR_FLOAT32, 2, 3, 4), CI64S(1, 2), NULL, CI64S(-1)), 1, NULL);
    if (CHECK(l)) {
        CHECK_OK(gwr_layer_infer(l));
        CHECK_TYPE(gwr_layer_output(l, 0), "f32[2,3,7]");
    }
    x = IN(GWR_FLOAT32, 2, 3);
    l = gwr_network_add_layer(net, "Pad", "", NULL, 1, &x, 1, NULL);
    if (CHECK(l)) {
        CHECK_EQ_INT(gwr_layer_infer(l), GWR_ERR_INVALID_ARG);
        CHECK_CONTAINS(gwr_network_errmsg(net), "pads");
        CHECK_OK(gwr_layer_set_ints(l, "pads", (int64_t[]){1, 0, 1, 0}, 4));
        CHECK_OK(gwr_layer_infer(l));
        CHECK_TYPE(gwr_layer_output(l, 0), "f32[4,3]");
    }
    /* Cast's to of the wrong type */
    a = gwr_args_new();
    gwr_args_set_string(a, "to", "float");
    CHECK_FAILS(CALL("Cast", a, x), "to");
    gwr_args_free(a);
}

TEST(constant_forms_and_integer_dtypes) {
    gwr_args *a;
    int32_t i32[3] = {0, 9, 2};
    int16_t i16[1] = {7};
    int8_t i8[2] = {-1, 3};
    uint8_t u8[2] = {1, 3};
    uint64_t big = UINT64_MAX;
    double f64[3] = {1.0, 2.0, 0.5};
    /* integer constants of other widths feed shapes and Range */
    CHECK_TYPE(CALL("Range", NULL, gwr_constant(net, GWR_INT32, 0, NULL, &i32[0]),
                    gwr_constant(net, GWR_INT32, 0, NULL, &i32[1]), gwr_constant(net, GWR_INT32, 0, NULL, &i32[2])),
               "i32[5]");
    CHECK_TYPE(CALL("Range", NULL, gwr_constant(net, GWR_INT16, 0, NULL, i16),
                    gwr_constant(net, GWR_INT16, 0, NULL, i16), gwr_constant(net, GWR_INT16, 0, NULL, i16)),
               "i16[0]");
    CHECK_TYPE(CALL("Range", NULL, gwr_constant(net, GWR_FLOAT64, 0, NULL, &f64[0]),
                    gwr_constant(net, GWR_FLOAT64, 0, NULL, &f64[1]), gwr_constant(net, GWR_FLOAT64, 0, NULL, &f64[2])),
               "f64[2]");
    CHECK_TYPE(CALL("CumSum", NULL, IN(GWR_FLOAT32, 2, 3), gwr_constant(net, GWR_INT32, 0, NULL, &i32[0])),
               "f32[2,3]");
    CHECK_FAILS_CALL(CALL("CumSum", NULL, IN(GWR_FLOAT32, 2, 3), gwr_constant(net, GWR_INT8, 0, NULL, i8)),
                     "CumSum"); /* axis must be int32 or int64 */
    CHECK_TYPE(CALL("OneHot", NULL, IN(GWR_INT64, 2), gwr_constant(net, GWR_INT8, 0, NULL, &i8[1]),
                    IN(GWR_FLOAT32, 2)),
               "f32[2,3]");
    CHECK_TYPE(CALL("OneHot", NULL, IN(GWR_INT64, 2), gwr_constant(net, GWR_UINT8, 1, (int64_t[]){1}, u8),
                    IN(GWR_FLOAT32, 2)),
               "f32[2,1]");
    /* a uint64 beyond int64 is not a usable value */
    CHECK_TYPE(CALL("OneHot", NULL, IN(GWR_INT64, 2), gwr_constant(net, GWR_UINT64, 0, NULL, &big),
                    IN(GWR_FLOAT32, 2)),
               "f32[2,?]");
    /* Constant's attribute forms as values */
    a = gwr_args_new();
    gwr_args_set_floats(a, "value_floats", 4, (double[]){1, 1, 3, 0.5});
    CHECK_TYPE(CALL("Resize", NULL, IN(GWR_FLOAT32, 1, 2, 4, 6), NULL, CALL0("Constant", a)), "f32[1,2,12,3]");
    gwr_args_free(a);
    a = gwr_args_new();
    gwr_args_set_float(a, "value_float", 3);
    CHECK_TYPE(CALL("OneHot", NULL, IN(GWR_INT64, 2), CALL0("Constant", a), IN(GWR_FLOAT32, 2)), "f32[2,3]");
    gwr_args_free(a);
    a = args_int("value_int", 5);
    CHECK_TYPE(CALL("OneHot", NULL, IN(GWR_INT64, 2), CALL0("Constant", a), IN(GWR_FLOAT32, 2)), "f32[2,5]");
    /* the value 5 travels through Unsqueeze: axis 5 does not fit rank 2 */
    {
        gwr_tensor *axes = gwr_unsqueeze(net, CALL0("Constant", a), I64S(0));
        CHECK_FAILS(CALL("Unsqueeze", NULL, IN(GWR_FLOAT32, 2), axes), "Unsqueeze");
    }
    gwr_args_free(a);
    {
        gwr_layer *l = gwr_network_add_layer(net, "Constant", "", NULL, 0, NULL, 1, NULL);
        const char *strs[3] = {"a", "b", "c"};
        if (CHECK(l)) {
            CHECK_OK(gwr_layer_set_strings(l, "value_strings", strs, 3));
            CHECK_OK(gwr_layer_infer(l));
            CHECK_TYPE(gwr_layer_output(l, 0), "str[3]");
            CHECK_OK(gwr_layer_remove_attr(l, "value_strings"));
            CHECK_OK(gwr_layer_set_int(l, "value", 3));
            CHECK_EQ_INT(gwr_layer_infer(l), GWR_ERR_TYPE);
            CHECK_CONTAINS(gwr_network_errmsg(net), "Constant");
            CHECK_OK(gwr_layer_remove_attr(l, "value"));
            CHECK_OK(gwr_layer_set_int(l, "sparse_value", 0));
            CHECK_OK(gwr_layer_infer(l));
            CHECK_TYPE(gwr_layer_output(l, 0), "undef[*]");
        }
    }
}

TEST(shape_value_arithmetic) {
    gwr_dim B = gwr_network_dim_sym(net, "batch");
    gwr_tensor *x = IN(GWR_FLOAT32, B, 6, 4), *shape = gwr_shape_of(net, x), *t, *heads;
    /* (batch + 0, 6 * 4 / 2, 2) */
    gwr_tensor *b = gwr_add(net, gwr_slice(net, shape, 1, V(0), V(1), NULL, NULL), CI64S(0));
    gwr_tensor *m = gwr_div(net, gwr_mul(net, gwr_slice(net, shape, 1, V(1), V(2), NULL, NULL),
                                         gwr_slice(net, shape, 1, V(-1), V(INT64_MAX), V(0), V(1))),
                            CI64S(2));
    t = gwr_concat(net, 3, TS(b, m, CI64S(2)), 0);
    CHECK_TYPE(CALL("Reshape", NULL, x, t), "f32[batch,12,2]");
    /* 1 * batch, batch - 0, and reversing Shape with a negative step */
    heads = gwr_slice(net, shape, 1, V(-1), V(INT64_MIN), NULL, V(-1));
    CHECK_TYPE(CALL("Expand", NULL, IN(GWR_FLOAT32, 4, 1, 1), heads), "f32[4,6,batch]");
    t = gwr_concat(net, 2, TS(gwr_mul(net, CI64S(1), gwr_slice(net, shape, 1, V(0), V(1), NULL, NULL)),
                              gwr_sub(net, CI64S(24), CI64S(0))), 0);
    CHECK_TYPE(CALL("Reshape", NULL, x, t), "f32[batch,24]");
    /* a Cast to int64 passes values; a Cast to float does not */
    CHECK_TYPE(CALL("Reshape", NULL, x, gwr_cast(net, t, GWR_INT64)), "f32[batch,24]");
    CHECK_TYPE(CALL("ConstantOfShape", NULL, gwr_cast(net, gwr_cast(net, shape, GWR_FLOAT32), GWR_INT64)),
               "f32[?,?,?]");
    /* unknown dims pass through as unknown elements */
    CHECK_TYPE(CALL("ConstantOfShape", NULL, gwr_shape_of(net, IN(GWR_FLOAT32, GWR_DIM_UNKNOWN, 3))),
               "f32[?,3]");
}

/* Issue 22 (helper opsb): the shape rules of CumProd, CenterCropPad,
 * Col2Im, AffineGrid, DeformConv, 5-D GridSample and the optimizers. */
TEST(opsb_geometry_and_training_rules) {
    gwr_tensor *x = IN(GWR_FLOAT32, 5, 10), *outs[3];
    gwr_args *a;
    CHECK_TYPE(CALL("CumProd", NULL, x, gwr_constant_i64(net, -1)), "f32[5,10]");
    CHECK_FAILS_CALL(CALL("CumProd", NULL, x, gwr_constant_i64(net, 2)), "CumProd");

    /* CenterCropPad: the axes take the shape's values (unknown when not constant) */
    gwr_tensor *img = IN(GWR_FLOAT32, 4, 5, 6);
    a = args_ints("axes", 2, V(1, -1));
    CHECK_TYPE(CALL("CenterCropPad", a, img, CI64S(2, 8)), "f32[4,2,8]");
    CHECK_TYPE(CALL("CenterCropPad", a, img, IN(GWR_INT64, 2)), "f32[4,?,?]");
    CHECK_FAILS_CALL(CALL("CenterCropPad", a, img, CI64S(2, -8)), "negative");
    CHECK_FAILS_CALL(CALL("CenterCropPad", a, img, CI64S(2, 8, 1)), "3 values for 2 axes");
    gwr_args_free(a);
    CHECK_TYPE(CALL("CenterCropPad", NULL, img, CI64S(1, 2, 3)), "f32[1,2,3]");

    /* Col2Im: [2, 12, 6] with 2 x 2 blocks of a 3 x 4 image: C = 3 */
    gwr_tensor *cols = IN(GWR_FLOAT32, 2, 12, 6);
    CHECK_TYPE(CALL("Col2Im", NULL, cols, CI64S(3, 4), CI64S(2, 2)), "f32[2,3,3,4]");
    CHECK_FAILS_CALL(CALL("Col2Im", NULL, cols, CI64S(3, 4), CI64S(5, 1)), "multiple of prod(block_shape)");
    CHECK_FAILS_CALL(CALL("Col2Im", NULL, IN(GWR_FLOAT32, 12, 6), CI64S(3, 4), CI64S(2, 2)), "Col2Im");

    /* AffineGrid: (N, H, W, 2) and (N, D, H, W, 3) */
    CHECK_TYPE(CALL("AffineGrid", NULL, IN(GWR_FLOAT32, 2, 2, 3), CI64S(2, 3, 4, 5)), "f32[2,4,5,2]");
    CHECK_TYPE(CALL("AffineGrid", NULL, IN(GWR_FLOAT32, 2, 3, 4), CI64S(2, 3, 4, 5, 6)), "f32[2,4,5,6,3]");
    CHECK_FAILS_CALL(CALL("AffineGrid", NULL, IN(GWR_FLOAT32, 2, 2, 3), CI64S(2, 3, 4)), "not 3 values");

    /* DeformConv: (N, oC, offset's spatial dims); GridSample on 5-D input */
    CHECK_TYPE(CALL("DeformConv", NULL, IN(GWR_FLOAT32, 1, 4, 8, 8), IN(GWR_FLOAT32, 6, 4, 3, 3), IN(GWR_FLOAT32, 1, 18, 6, 6)),
               "f32[1,6,6,6]");
    CHECK_FAILS_CALL(CALL("DeformConv", NULL, IN(GWR_FLOAT32, 1, 4, 8, 8), IN(GWR_FLOAT32, 6, 4, 3), IN(GWR_FLOAT32, 1, 18, 6, 6)),
                     "DeformConv");
    CHECK_TYPE(CALL("GridSample", NULL, IN(GWR_FLOAT32, 1, 2, 4, 4, 4), IN(GWR_FLOAT32, 1, 3, 5, 7, 3)), "f32[1,2,3,5,7]");

    /* Adam: R, T, X, G, V, H -> X_new, V_new, H_new shaped like X; Momentum
     * with 2 tensors: outputs X1, X2, V1, V2 */
    gwr_tensor *r = SCALAR(GWR_FLOAT32), *t = SCALAR(GWR_INT64), *p = IN(GWR_FLOAT32, 3), *q = IN(GWR_FLOAT32, 2, 2);
    if (CHECK(gwr_op_call(net, "ai.onnx.preview.training", "Adam", 6, TS(r, t, p, p, p, p), NULL, 3, outs))) {
        CHECK_TYPE(outs[0], "f32[3]");
        CHECK_TYPE(outs[2], "f32[3]");
    }
    gwr_tensor *mo[4];
    if (CHECK(gwr_op_call(net, "ai.onnx.preview.training", "Momentum", 8, TS(r, t, p, q, p, q, p, q), NULL, 4, mo))) {
        CHECK_TYPE(mo[1], "f32[2,2]");
        CHECK_TYPE(mo[2], "f32[3]");
    }
    CHECK_FAILS(gwr_op_call(net, "ai.onnx.preview.training", "Adagrad", 4, TS(r, t, p, p), NULL, 1, outs), "groups");
}

int main(void) {
    RUN_NET(constants_scalar_and_vector);
    RUN_NET(constants_general);
    RUN_NET(constants_bad_input);
    RUN_NET(broadcast_known);
    RUN_NET(broadcast_symbolic);
    RUN_NET(broadcast_errors);
    RUN_NET(elementwise_dtypes);
    RUN_NET(elementwise_null_args);
    RUN_NET(last_status_names_the_failure);
    RUN_NET(elementwise_ops_and_mod);
    RUN_NET(elementwise_generic);
    RUN_NET(unary_builders);
    RUN_NET(unary_generic);
    RUN_NET(activations_with_attrs);
    RUN_NET(silu);
    RUN_NET(clip_and_prelu);
    RUN_NET(matmul_shapes);
    RUN_NET(matmul_errors);
    RUN_NET(gemm);
    RUN_NET(conv_output_sizes);
    RUN_NET(conv_symbolic_and_errors);
    RUN_NET(conv_transpose);
    RUN_NET(pooling);
    RUN_NET(batch_norm);
    RUN_NET(layer_norm);
    RUN_NET(softmax);
    RUN_NET(reductions);
    RUN_NET(reductions_generic_forms);
    RUN_NET(reshape);
    RUN_NET(reshape_errors);
    RUN_NET(reshape_generic_forms);
    RUN_NET(reshape_from_shape_values);
    RUN_NET(flatten_and_transpose);
    RUN_NET(concat);
    RUN_NET(split);
    RUN_NET(slice_clamping);
    RUN_NET(slice_symbolic_and_errors);
    RUN_NET(slice_attribute_form);
    RUN_NET(gather);
    RUN_NET(squeeze_unsqueeze);
    RUN_NET(expand_tile_pad);
    RUN_NET(cast_shape_size);
    RUN_NET(where);
    RUN_NET(op_call_unknown_ops_are_plugins);
    RUN_NET(op_call_errors);
    RUN_NET(infer_after_rewiring);
    RUN_NET(constant_ops);
    RUN_NET(fill_ops);
    RUN_NET(topk_onehot_nonzero_cumsum);
    RUN_NET(einsum);
    RUN_NET(dropout_resize_quant);
    RUN_NET(depth_space_rnn_misc);
    RUN_NET(robust_against_bad_constants);
    RUN_NET(op_call_registered_plugin);
    RUN_NET(plugin_reports_through_the_network);
    RUN_NET(arity_messages);
    RUN_NET(more_rules);
    RUN_NET(constant_forms_and_integer_dtypes);
    RUN_NET(shape_value_arithmetic);
    RUN_NET(opsb_geometry_and_training_rules);
    return check_report();
}
