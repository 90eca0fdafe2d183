/* builders.c - the builder API: the generic op call, constants, and one
 * function per common op (element-wise, unary and activations, matrix
 * products, convolution and pooling, normalization, reductions, shape
 * manipulation), plus gwr_layer_infer.
 *
 * Every builder checks its arguments (NULL network, NULL tensors, bad
 * counts, and the dtype checks that need no shapes) before it creates
 * anything. Shape checks need the layer (they are the op's inference
 * rule): when inference refuses, the new layer, and the constant layers
 * made for it, are taken out again with gwr_ir_discard_new_layer, so a
 * failed call leaves the network exactly as it was, with the message on
 * it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "functional/functional_internal.h"
#include "ir/ir_api.h"

/* ======================================================================
 * Errors and rollback
 * ====================================================================== */

static int check_net(const gwr_network *net, const char *fn) {
    if (!net)
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "%s: network is NULL", fn);
    return net != NULL;
}

/* The n required tensors ts (called names[i] in messages) are non-NULL. */
static int check_tensors(gwr_network *net, const char *op, int n, gwr_tensor *const *ts,
                         const char *const *names) {
    for (int i = 0; i < n; i++)
        if (!ts[i]) {
            gwr_ir_error(net, GWR_ERR_INVALID_ARG, "%s: input '%s' is NULL", op, names[i]);
            return 0;
        }
    return 1;
}

/* Takes back a layer that failed after creation, then the helper layers
 * made for it (newest first), keeping the failure's message. */
static void rollback(gwr_network *net, gwr_layer *l, gwr_tensor *const *helpers, int nh) {
    char msg[GWR_ERRMSG_MAX];
    snprintf(msg, sizeof msg, "%s", gwr_network_errmsg(net));
    if (l)
        gwr_ir_discard_new_layer(l);
    for (int i = nh - 1; i >= 0; i--)
        if (helpers[i] && gwr_tensor_parent(helpers[i]))
            gwr_ir_discard_new_layer(gwr_tensor_parent(helpers[i]));
    if (strcmp(msg, gwr_network_errmsg(net)) != 0)
        gwr_ir_error(net, GWR_ERR_STATE, "%s", msg);
}

/* ======================================================================
 * Creating a layer
 * ====================================================================== */

/* An attribute set by a builder. */
typedef enum { BA_NONE, BA_INT, BA_FLOAT, BA_STRING, BA_INTS } ba_kind;
typedef struct battr {
    const char *name;
    ba_kind kind;
    int64_t i;
    float f;
    const char *s;
    const int64_t *ints;
    int64_t n;
} battr;

#define A_INT(nm, v) ((battr){(nm), BA_INT, (v), 0, NULL, NULL, 0})
#define A_FLOAT(nm, v) ((battr){(nm), BA_FLOAT, 0, (v), NULL, NULL, 0})
#define A_STR(nm, v) ((battr){(nm), BA_STRING, 0, 0, (v), NULL, 0})
#define A_INTS(nm, v, cnt) ((battr){(nm), BA_INTS, 0, 0, NULL, (v), (cnt)})
#define MAX_BATTRS 8

static gwr_status set_battr(gwr_layer *l, const battr *a) {
    switch (a->kind) {
    case BA_INT: return gwr_layer_set_int(l, a->name, a->i);
    case BA_FLOAT: return gwr_layer_set_float(l, a->name, a->f);
    case BA_STRING: return gwr_layer_set_string(l, a->name, a->s);
    case BA_INTS: return gwr_layer_set_ints(l, a->name, a->ints, a->n);
    default: return GWR_OK;
    }
}

/* Creates op over the inputs, sets the attributes, infers; on failure
 * rolls back the layer and the helpers (constants made for it). */
static gwr_layer *make(gwr_network *net, const char *op, int nin, gwr_tensor *const *in, int nout,
                       const battr *attrs, int nattrs, gwr_tensor *const *helpers, int nh) {
    gwr_layer *l = gwr_network_add_layer(net, op, "", NULL, nin, in, nout, NULL);
    gwr_status st = l ? GWR_OK : GWR_ERR_INVALID_ARG;
    for (int i = 0; l && st == GWR_OK && i < nattrs; i++)
        st = set_battr(l, &attrs[i]);
    if (l && st == GWR_OK)
        st = gwr_layer_infer(l);
    if (st != GWR_OK) {
        rollback(net, l, helpers, nh);
        return NULL;
    }
    return l;
}

static gwr_tensor *make1(gwr_network *net, const char *op, int nin, gwr_tensor *const *in,
                         const battr *attrs, int nattrs, gwr_tensor *const *helpers, int nh) {
    gwr_layer *l = make(net, op, nin, in, 1, attrs, nattrs, helpers, nh);
    return l ? gwr_layer_output(l, 0) : NULL;
}

/* ======================================================================
 * The generic op call and inference
 * ====================================================================== */

gwr_status gwr_layer_infer(gwr_layer *l) {
    int found = 0;
    gwr_status st;
    if (!l)
        return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_layer_infer: layer is NULL");
    /* Plugins are ops the table lacks (gwr_plugin_register refuses the
     * others): a table op skips the registry and its lock. */
    if (gwr_layer_op_id(l) == GWR_OP_CUSTOM) {
        st = gwr_fn_infer_plugin(l, &found);
        if (found)
            return st;
    }
    return gwr_fn_infer_op(l);
}

/* "2", "1..3", "1 or more". */
static const char *arity_str(int lo, int hi, char *buf, size_t size) {
    if (hi < 0)
        snprintf(buf, size, "%d or more", lo);
    else if (lo == hi)
        snprintf(buf, size, "%d", lo);
    else
        snprintf(buf, size, "%d..%d", lo, hi);
    return buf;
}

gwr_layer *gwr_op_call(gwr_network *net, const char *domain, const char *op, int ninputs,
                       gwr_tensor *const *inputs, const gwr_args *attrs, int noutputs,
                       gwr_tensor **outs) {
    const gwr_op_info *info;
    gwr_layer *l;
    gwr_status st;
    char buf[32];
    if (!check_net(net, "gwr_op_call"))
        return NULL;
    if (!op || !*op) {
        gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_op_call: op name is empty");
        return NULL;
    }
    if (ninputs < 0 || noutputs < 0 || (ninputs > 0 && !inputs)) {
        gwr_ir_error(net, GWR_ERR_INVALID_ARG, "%s: bad counts (%d inputs, %d outputs)", op,
                     ninputs, noutputs);
        return NULL;
    }
    info = gwr_op_info_get(gwr_op_lookup(domain ? domain : "", op));
    if (info) {
        if (ninputs < info->min_inputs || (info->max_inputs >= 0 && ninputs > info->max_inputs)) {
            gwr_ir_error(net, GWR_ERR_INVALID_ARG, "%s takes %s inputs, got %d", op,
                         arity_str(info->min_inputs, info->max_inputs, buf, sizeof buf), ninputs);
            return NULL;
        }
        if (noutputs < info->min_outputs ||
            (info->max_outputs >= 0 && noutputs > info->max_outputs)) {
            gwr_ir_error(net, GWR_ERR_INVALID_ARG, "%s has %s outputs, got %d", op,
                         arity_str(info->min_outputs, info->max_outputs, buf, sizeof buf),
                         noutputs);
            return NULL;
        }
        /* The leading inputs are required (Loop's and If's are optional
         * positions, so their ops are left to their own rules). */
        for (int i = 0; !(info->flags & GWR_OPF_SUBGRAPH) && i < ninputs; i++)
            if (!inputs[i] && (i < info->min_inputs || (info->flags & GWR_OPF_VARIADIC))) {
                gwr_ir_error(net, GWR_ERR_INVALID_ARG, "%s: input %d is required but NULL", op, i);
                return NULL;
            }
    }
    l = gwr_network_add_layer(net, op, domain ? domain : "", NULL, ninputs, inputs, noutputs,
                              NULL);
    if (!l)
        return NULL;
    st = gwr_fn_set_attrs(l, attrs);
    if (st == GWR_OK)
        st = gwr_layer_infer(l);
    if (st != GWR_OK) {
        rollback(net, l, NULL, 0);
        return NULL;
    }
    for (int i = 0; outs && i < noutputs; i++)
        outs[i] = gwr_layer_output(l, i);
    return l;
}

/* ======================================================================
 * Constants
 * ====================================================================== */

static void free_block(void *ctx, const void *data, size_t size) {
    (void)ctx;
    (void)size;
    gwr_free((void *)data);
}

/* A buffer holding n gwr_bytes entries followed by their NUL-terminated
 * bytes, all in one block (the layout gwr_weights asks for). */
static gwr_buffer *string_buffer(gwr_network *net, int64_t n, const char *const *strs,
                                 size_t *nbytes) {
    size_t total = (size_t)n * sizeof(gwr_bytes), off;
    char *block;
    gwr_bytes *e;
    gwr_buffer *b;
    for (int64_t i = 0; i < n; i++) {
        if (!strs[i]) {
            gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_constant: string %lld is NULL", (long long)i);
            return NULL;
        }
        total += strlen(strs[i]) + 1;
    }
    block = gwr_malloc(total ? total : 1);
    if (!block) {
        gwr_ir_error(net, GWR_ERR_NOMEM, "gwr_constant: out of memory");
        return NULL;
    }
    e = (gwr_bytes *)(void *)block;
    off = (size_t)n * sizeof(gwr_bytes);
    for (int64_t i = 0; i < n; i++) {
        size_t len = strlen(strs[i]);
        memcpy(block + off, strs[i], len + 1);
        e[i].len = len;
        e[i].data = block + off;
        off += len + 1;
    }
    b = gwr_buffer_wrap(block, total, free_block, NULL);
    if (!b) {
        gwr_free(block);
        gwr_ir_error(net, GWR_ERR_NOMEM, "gwr_constant: out of memory");
        return NULL;
    }
    *nbytes = (size_t)n * sizeof(gwr_bytes);
    return b;
}

gwr_tensor *gwr_constant(gwr_network *net, gwr_dtype dtype, int rank, const int64_t *dims,
                         const void *data) {
    gwr_weights w;
    gwr_buffer *b;
    gwr_tensor *t;
    int64_t n;
    size_t nbytes;
    if (!check_net(net, "gwr_constant"))
        return NULL;
    if (!gwr_dtype_is_valid(dtype) || dtype == GWR_UNDEFINED) {
        gwr_ir_error(net, GWR_ERR_TYPE, "gwr_constant: invalid dtype %d", (int)dtype);
        return NULL;
    }
    if (rank < 0 || rank > GWR_MAX_RANK || (rank > 0 && !dims)) {
        gwr_ir_error(net, GWR_ERR_SHAPE, "gwr_constant: invalid rank %d", rank);
        return NULL;
    }
    n = gwr_shape_numel(rank, dims);
    if (n < 0 || (uint64_t)n > SIZE_MAX / 16) {
        gwr_ir_error(net, GWR_ERR_SHAPE, "gwr_constant: invalid dims (negative or too large)");
        return NULL;
    }
    if (!data && n > 0 && dtype == GWR_STRING) {
        gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_constant: data is NULL");
        return NULL;
    }
    if (dtype == GWR_STRING) {
        b = string_buffer(net, n, (const char *const *)data, &nbytes);
    } else {
        /* NULL data: zeros. Sub-byte types pack two elements a byte. */
        nbytes = ((size_t)n * (size_t)gwr_dtype_bits(dtype) + 7) / 8;
        b = gwr_buffer_new_copy(data, nbytes);
        if (!b)
            gwr_ir_error(net, GWR_ERR_NOMEM, "gwr_constant: out of memory");
    }
    if (!b)
        return NULL;
    w.dtype = dtype;
    w.rank = rank;
    w.dims = dims;
    w.data = gwr_buffer_data(b);
    w.nbytes = nbytes;
    w.buffer = b;
    w.name = NULL;
    t = gwr_network_add_constant(net, NULL, &w);
    gwr_buffer_release(b); /* the layer holds its own reference */
    return t;
}

gwr_tensor *gwr_constant_f32(gwr_network *net, float v) {
    return gwr_constant(net, GWR_FLOAT32, 0, NULL, &v);
}

gwr_tensor *gwr_constant_i64(gwr_network *net, int64_t v) {
    return gwr_constant(net, GWR_INT64, 0, NULL, &v);
}

gwr_tensor *gwr_constant_i64s(gwr_network *net, int n, const int64_t *v) {
    int64_t dim = n;
    if (!check_net(net, "gwr_constant_i64s"))
        return NULL;
    if (n < 0 || (n > 0 && !v)) {
        gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_constant_i64s: bad values (n = %d)", n);
        return NULL;
    }
    return gwr_constant(net, GWR_INT64, 1, &dim, v);
}

/* ======================================================================
 * Element-wise
 * ====================================================================== */

/* A and B of an element-wise op: present, and of one dtype where both are
 * known (Pow's exponent may differ). */
static int check_binary(gwr_network *net, const char *op, gwr_tensor *a, gwr_tensor *b) {
    gwr_tensor *ab[2] = {a, b};
    static const char *const names[] = {"a", "b"};
    char sa[160], sb[160];
    if (!check_tensors(net, op, 2, ab, names))
        return 0;
    if (strcmp(op, "Pow") != 0 && gwr_tensor_dtype(a) != GWR_UNDEFINED &&
        gwr_tensor_dtype(b) != GWR_UNDEFINED && gwr_tensor_dtype(a) != gwr_tensor_dtype(b)) {
        gwr_tensor_type_str(a, sa, sizeof sa);
        gwr_tensor_type_str(b, sb, sizeof sb);
        gwr_ir_error(net, GWR_ERR_TYPE, "%s: input dtypes differ: %s vs %s", op, sa, sb);
        return 0;
    }
    return 1;
}

static gwr_tensor *binary(gwr_network *net, const char *fn, const char *op, gwr_tensor *a,
                          gwr_tensor *b) {
    gwr_tensor *in[2] = {a, b};
    battr at[1] = {{.kind = BA_NONE}};
    int nat = 0;
    if (!check_net(net, fn) || !check_binary(net, op, a, b))
        return NULL;
    /* ONNX Mod needs fmod=1 for floating-point operands. */
    if (!strcmp(op, "Mod") && gwr_dtype_is_float(gwr_tensor_dtype(a)))
        at[nat++] = A_INT("fmod", 1);
    return make1(net, op, 2, in, at, nat, NULL, 0);
}

#define BINARY_BUILDER(fn, op)                                          \
    gwr_tensor *fn(gwr_network *net, gwr_tensor *a, gwr_tensor *b) {  \
        return binary(net, #fn, op, a, b);                              \
    }
BINARY_BUILDER(gwr_add, "Add")
BINARY_BUILDER(gwr_sub, "Sub")
BINARY_BUILDER(gwr_mul, "Mul")
BINARY_BUILDER(gwr_div, "Div")
BINARY_BUILDER(gwr_pow, "Pow")
BINARY_BUILDER(gwr_max, "Max")
BINARY_BUILDER(gwr_min, "Min")
BINARY_BUILDER(gwr_mod, "Mod")
BINARY_BUILDER(gwr_equal, "Equal")
BINARY_BUILDER(gwr_less, "Less")
BINARY_BUILDER(gwr_less_equal, "LessOrEqual")
BINARY_BUILDER(gwr_greater, "Greater")
BINARY_BUILDER(gwr_greater_equal, "GreaterOrEqual")
BINARY_BUILDER(gwr_and, "And")
BINARY_BUILDER(gwr_or, "Or")
BINARY_BUILDER(gwr_xor, "Xor")
#undef BINARY_BUILDER

/* TensorRT's ElementWiseOperation as ONNX ops. */
static const struct {
    gwr_ew_op ew;
    const char *op;
} EW_OPS[] = {
    {GWR_EW_SUM, "Add"},        {GWR_EW_PROD, "Mul"},           {GWR_EW_MAX, "Max"},
    {GWR_EW_MIN, "Min"},        {GWR_EW_SUB, "Sub"},            {GWR_EW_DIV, "Div"},
    {GWR_EW_POW, "Pow"},        {GWR_EW_MOD, "Mod"},            {GWR_EW_AND, "And"},
    {GWR_EW_OR, "Or"},          {GWR_EW_XOR, "Xor"},            {GWR_EW_EQUAL, "Equal"},
    {GWR_EW_GREATER, "Greater"}, {GWR_EW_GREATER_EQUAL, "GreaterOrEqual"},
    {GWR_EW_LESS, "Less"},      {GWR_EW_LESS_EQUAL, "LessOrEqual"}, {GWR_EW_MEAN, "Mean"},
};

gwr_tensor *gwr_elementwise(gwr_network *net, gwr_ew_op op, gwr_tensor *a, gwr_tensor *b) {
    if (!check_net(net, "gwr_elementwise"))
        return NULL;
    for (size_t i = 0; i < sizeof EW_OPS / sizeof EW_OPS[0]; i++)
        if (EW_OPS[i].ew == op)
            return binary(net, "gwr_elementwise", EW_OPS[i].op, a, b);
    if (op == GWR_EW_FLOOR_DIV) {
        /* No ONNX op: Floor(Div(a, b)), which is floor division only for
         * floating-point operands (integer Div truncates). */
        gwr_tensor *q;
        if (!check_binary(net, "Div", a, b))
            return NULL;
        if (!gwr_dtype_is_float(gwr_tensor_dtype(a))) {
            gwr_ir_error(net, GWR_ERR_UNSUPPORTED,
                         "gwr_elementwise: FLOOR_DIV is only supported for floating-point operands");
            return NULL;
        }
        q = binary(net, "gwr_elementwise", "Div", a, b);
        return q ? make1(net, "Floor", 1, &q, NULL, 0, &q, 1) : NULL;
    }
    if (op >= 0 && op < GWR_EW_OP_COUNT && op != GWR_EW_NONE)
        gwr_ir_error(net, GWR_ERR_UNSUPPORTED,
                     "gwr_elementwise: %s has no ONNX op in opset 17 (use gwr_op_call)",
                     gwr_ew_op_name(op));
    else
        gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_elementwise: invalid operation %d", (int)op);
    return NULL;
}

/* ======================================================================
 * Unary math and activations
 * ====================================================================== */

/* One-input op x with attributes. */
static gwr_tensor *unary_op(gwr_network *net, const char *fn, const char *op, gwr_tensor *x,
                            const battr *attrs, int nattrs) {
    static const char *const names[] = {"x"};
    if (!check_net(net, fn) || !check_tensors(net, op, 1, &x, names))
        return NULL;
    return make1(net, op, 1, &x, attrs, nattrs, NULL, 0);
}

gwr_tensor *gwr_unary(gwr_network *net, gwr_op_id op, gwr_tensor *x) {
    const gwr_op_info *info = gwr_op_info_get(op);
    if (!check_net(net, "gwr_unary"))
        return NULL;
    if (!info || (info->layer_type != GWR_LAYER_UNARY && info->layer_type != GWR_LAYER_ACTIVATION) ||
        info->min_inputs != 1) {
        gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_unary: %s is not a one-input unary op",
                     info ? info->name : "op");
        return NULL;
    }
    return unary_op(net, "gwr_unary", info->name, x, NULL, 0);
}

#define UNARY_BUILDER(fn, id)                                                     \
    gwr_tensor *fn(gwr_network *net, gwr_tensor *x) {                             \
        return check_net(net, #fn) ? gwr_unary(net, GWR_OP_##id, x) : NULL;       \
    }
UNARY_BUILDER(gwr_not, Not)
UNARY_BUILDER(gwr_abs, Abs)
UNARY_BUILDER(gwr_neg, Neg)
UNARY_BUILDER(gwr_exp, Exp)
UNARY_BUILDER(gwr_log, Log)
UNARY_BUILDER(gwr_sqrt, Sqrt)
UNARY_BUILDER(gwr_reciprocal, Reciprocal)
UNARY_BUILDER(gwr_floor, Floor)
UNARY_BUILDER(gwr_ceil, Ceil)
UNARY_BUILDER(gwr_sin, Sin)
UNARY_BUILDER(gwr_cos, Cos)
UNARY_BUILDER(gwr_erf, Erf)
UNARY_BUILDER(gwr_relu, Relu)
UNARY_BUILDER(gwr_sigmoid, Sigmoid)
UNARY_BUILDER(gwr_tanh, Tanh)
UNARY_BUILDER(gwr_softplus, Softplus)
UNARY_BUILDER(gwr_hard_swish, HardSwish)
#undef UNARY_BUILDER

gwr_tensor *gwr_leaky_relu(gwr_network *net, gwr_tensor *x, float alpha) {
    battr a = A_FLOAT("alpha", alpha);
    return unary_op(net, "gwr_leaky_relu", "LeakyRelu", x, &a, 1);
}

gwr_tensor *gwr_elu(gwr_network *net, gwr_tensor *x, float alpha) {
    battr a = A_FLOAT("alpha", alpha);
    return unary_op(net, "gwr_elu", "Elu", x, &a, 1);
}

gwr_tensor *gwr_gelu(gwr_network *net, gwr_tensor *x, const char *approximate) {
    battr a;
    if (!approximate)
        approximate = "none";
    if (!check_net(net, "gwr_gelu"))
        return NULL;
    if (strcmp(approximate, "none") != 0 && strcmp(approximate, "tanh") != 0) {
        gwr_ir_error(net, GWR_ERR_INVALID_ARG,
                     "Gelu: approximate must be \"none\" or \"tanh\", got \"%s\"", approximate);
        return NULL;
    }
    a = A_STR("approximate", approximate);
    return unary_op(net, "gwr_gelu", "Gelu", x, &a, 1);
}

gwr_tensor *gwr_silu(gwr_network *net, gwr_tensor *x) {
    gwr_tensor *s = gwr_sigmoid(net, x), *in[2] = {x, s};
    return s ? make1(net, "Mul", 2, in, NULL, 0, &s, 1) : NULL;
}

gwr_tensor *gwr_clip(gwr_network *net, gwr_tensor *x, gwr_tensor *lo, gwr_tensor *hi) {
    static const char *const names[] = {"x"};
    gwr_tensor *in[3] = {x, lo, hi};
    if (!check_net(net, "gwr_clip") || !check_tensors(net, "Clip", 1, in, names))
        return NULL;
    return make1(net, "Clip", hi ? 3 : lo ? 2 : 1, in, NULL, 0, NULL, 0);
}

/* ======================================================================
 * Matrix multiply, convolution, pooling
 * ====================================================================== */

gwr_tensor *gwr_matmul(gwr_network *net, gwr_tensor *a, gwr_tensor *b) {
    gwr_tensor *in[2] = {a, b};
    if (!check_net(net, "gwr_matmul") || !check_binary(net, "MatMul", a, b))
        return NULL;
    return make1(net, "MatMul", 2, in, NULL, 0, NULL, 0);
}

gwr_tensor *gwr_gemm(gwr_network *net, gwr_tensor *a, gwr_tensor *b, gwr_tensor *c, float alpha,
                     float beta, int trans_a, int trans_b) {
    gwr_tensor *in[3] = {a, b, c};
    battr at[4] = {{.kind = BA_NONE}};
    if (!check_net(net, "gwr_gemm") || !check_binary(net, "Gemm", a, b))
        return NULL;
    at[0] = A_FLOAT("alpha", alpha);
    at[1] = A_FLOAT("beta", beta);
    at[2] = A_INT("transA", trans_a != 0);
    at[3] = A_INT("transB", trans_b != 0);
    return make1(net, "Gemm", c ? 3 : 2, in, at, 4, NULL, 0);
}

/* Attributes of a conv or pool from p; 0 (and a message) when p is
 * malformed. */
static int conv_attrs(gwr_network *net, const char *op, const gwr_conv_params *p, int pool,
                      battr *at, int *nat) {
    int n;
    *nat = 0;
    if (!p)
        return 1;
    n = p->nspatial;
    if ((n < 1 || n > GWR_MAX_RANK - 2) &&
        (pool || p->strides || p->pads || p->dilations || p->output_padding)) {
        gwr_ir_error(net, GWR_ERR_INVALID_ARG, "%s: nspatial %d is invalid", op, n);
        return 0;
    }
    if (pool && !p->kernel) {
        gwr_ir_error(net, GWR_ERR_INVALID_ARG, "%s: kernel is required", op);
        return 0;
    }
    if (pool || p->kernel)
        at[(*nat)++] = A_INTS("kernel_shape", p->kernel, n);
    if (p->strides)
        at[(*nat)++] = A_INTS("strides", p->strides, n);
    if (p->pads)
        at[(*nat)++] = A_INTS("pads", p->pads, 2 * (int64_t)n);
    if (p->dilations)
        at[(*nat)++] = A_INTS("dilations", p->dilations, n);
    if (p->output_padding && !strcmp(op, "ConvTranspose"))
        at[(*nat)++] = A_INTS("output_padding", p->output_padding, n);
    if (p->group > 1 && !pool)
        at[(*nat)++] = A_INT("group", p->group);
    if (p->group < 0) {
        gwr_ir_error(net, GWR_ERR_INVALID_ARG, "%s: group %lld is invalid", op, (long long)p->group);
        return 0;
    }
    if (p->auto_pad && strcmp(p->auto_pad, "NOTSET") != 0) {
        if (strcmp(p->auto_pad, "SAME_UPPER") != 0 && strcmp(p->auto_pad, "SAME_LOWER") != 0 &&
            strcmp(p->auto_pad, "VALID") != 0) {
            gwr_ir_error(net, GWR_ERR_INVALID_ARG, "%s: unknown auto_pad \"%s\"", op, p->auto_pad);
            return 0;
        }
        at[(*nat)++] = A_STR("auto_pad", p->auto_pad);
    }
    if (pool && p->ceil_mode)
        at[(*nat)++] = A_INT("ceil_mode", 1);
    if (pool && p->count_include_pad && !strcmp(op, "AveragePool"))
        at[(*nat)++] = A_INT("count_include_pad", 1);
    return 1;
}

static gwr_tensor *conv_like(gwr_network *net, const char *fn, const char *op, gwr_tensor *x,
                             gwr_tensor *w, gwr_tensor *b, const gwr_conv_params *p) {
    static const char *const names[] = {"x", "w"};
    gwr_tensor *in[3] = {x, w, b};
    battr at[MAX_BATTRS] = {{.kind = BA_NONE}};
    int nat;
    if (!check_net(net, fn) || !check_tensors(net, op, 2, in, names) ||
        !conv_attrs(net, op, p, 0, at, &nat))
        return NULL;
    return make1(net, op, b ? 3 : 2, in, at, nat, NULL, 0);
}

gwr_tensor *gwr_conv(gwr_network *net, gwr_tensor *x, gwr_tensor *w, gwr_tensor *b,
                     const gwr_conv_params *p) {
    return conv_like(net, "gwr_conv", "Conv", x, w, b, p);
}

gwr_tensor *gwr_conv_transpose(gwr_network *net, gwr_tensor *x, gwr_tensor *w, gwr_tensor *b,
                               const gwr_conv_params *p) {
    return conv_like(net, "gwr_conv_transpose", "ConvTranspose", x, w, b, p);
}

static gwr_tensor *pool(gwr_network *net, const char *fn, const char *op, gwr_tensor *x,
                        const gwr_conv_params *p) {
    battr at[MAX_BATTRS] = {{.kind = BA_NONE}};
    int nat;
    if (!check_net(net, fn))
        return NULL;
    if (!p) {
        gwr_ir_error(net, GWR_ERR_INVALID_ARG, "%s: parameters (with kernel) are required", op);
        return NULL;
    }
    if (!conv_attrs(net, op, p, 1, at, &nat))
        return NULL;
    return unary_op(net, fn, op, x, at, nat);
}

gwr_tensor *gwr_max_pool(gwr_network *net, gwr_tensor *x, const gwr_conv_params *p) {
    return pool(net, "gwr_max_pool", "MaxPool", x, p);
}

gwr_tensor *gwr_avg_pool(gwr_network *net, gwr_tensor *x, const gwr_conv_params *p) {
    return pool(net, "gwr_avg_pool", "AveragePool", x, p);
}

gwr_tensor *gwr_global_avg_pool(gwr_network *net, gwr_tensor *x) {
    return unary_op(net, "gwr_global_avg_pool", "GlobalAveragePool", x, NULL, 0);
}

gwr_tensor *gwr_global_max_pool(gwr_network *net, gwr_tensor *x) {
    return unary_op(net, "gwr_global_max_pool", "GlobalMaxPool", x, NULL, 0);
}

/* ======================================================================
 * Normalization, softmax, reductions
 * ====================================================================== */

gwr_tensor *gwr_batch_norm(gwr_network *net, gwr_tensor *x, gwr_tensor *scale, gwr_tensor *bias,
                           gwr_tensor *mean, gwr_tensor *var, float epsilon) {
    static const char *const names[] = {"x", "scale", "bias", "mean", "var"};
    gwr_tensor *in[5] = {x, scale, bias, mean, var};
    battr a = A_FLOAT("epsilon", epsilon);
    if (!check_net(net, "gwr_batch_norm") ||
        !check_tensors(net, "BatchNormalization", 5, in, names))
        return NULL;
    return make1(net, "BatchNormalization", 5, in, &a, 1, NULL, 0);
}

gwr_tensor *gwr_layer_norm(gwr_network *net, gwr_tensor *x, gwr_tensor *scale, gwr_tensor *bias,
                           int64_t axis, float epsilon) {
    static const char *const names[] = {"x", "scale"};
    gwr_tensor *in[3] = {x, scale, bias};
    battr at[2] = {{.kind = BA_NONE}};
    if (!check_net(net, "gwr_layer_norm") ||
        !check_tensors(net, "LayerNormalization", 2, in, names))
        return NULL;
    at[0] = A_INT("axis", axis);
    at[1] = A_FLOAT("epsilon", epsilon);
    return make1(net, "LayerNormalization", bias ? 3 : 2, in, at, 2, NULL, 0);
}

gwr_tensor *gwr_softmax(gwr_network *net, gwr_tensor *x, int64_t axis) {
    battr a = A_INT("axis", axis);
    return unary_op(net, "gwr_softmax", "Softmax", x, &a, 1);
}

gwr_tensor *gwr_reduce(gwr_network *net, gwr_op_id op, gwr_tensor *x, int naxes,
                       const int64_t *axes, int keepdims) {
    static const char *const names[] = {"x"};
    const gwr_op_info *info = gwr_op_info_get(op);
    gwr_tensor *in[2] = {x, NULL};
    battr at[2] = {{.kind = BA_NONE}};
    int nat = 0;
    if (!check_net(net, "gwr_reduce"))
        return NULL;
    if (!info || info->layer_type != GWR_LAYER_REDUCE || strncmp(info->name, "Reduce", 6) != 0) {
        gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_reduce: %s is not a Reduce* op",
                     info ? info->name : "op");
        return NULL;
    }
    if (!check_tensors(net, info->name, 1, in, names))
        return NULL;
    if (naxes < 0 || (naxes > 0 && !axes)) {
        gwr_ir_error(net, GWR_ERR_INVALID_ARG, "%s: bad axes (naxes = %d)", info->name, naxes);
        return NULL;
    }
    at[nat++] = A_INT("keepdims", keepdims != 0);
    if (op != GWR_OP_ReduceSum) { /* opset 13: axes is an attribute */
        if (naxes > 0)
            at[nat++] = A_INTS("axes", axes, naxes);
        return make1(net, info->name, 1, in, at, nat, NULL, 0);
    }
    if (naxes == 0) /* no axes input: reduce over all axes */
        return make1(net, info->name, 1, in, at, nat, NULL, 0);
    if (!(in[1] = gwr_constant_i64s(net, naxes, axes)))
        return NULL;
    return make1(net, info->name, 2, in, at, nat, &in[1], 1);
}

gwr_tensor *gwr_reduce_sum(gwr_network *net, gwr_tensor *x, int naxes, const int64_t *axes,
                           int keepdims) {
    return gwr_reduce(net, GWR_OP_ReduceSum, x, naxes, axes, keepdims);
}

gwr_tensor *gwr_reduce_mean(gwr_network *net, gwr_tensor *x, int naxes, const int64_t *axes,
                            int keepdims) {
    return gwr_reduce(net, GWR_OP_ReduceMean, x, naxes, axes, keepdims);
}

gwr_tensor *gwr_reduce_max(gwr_network *net, gwr_tensor *x, int naxes, const int64_t *axes,
                           int keepdims) {
    return gwr_reduce(net, GWR_OP_ReduceMax, x, naxes, axes, keepdims);
}

/* ======================================================================
 * Shape manipulation
 * ====================================================================== */

/* x op c, where c is a new 1-D int64 constant of the n values v. */
static gwr_tensor *with_ints(gwr_network *net, const char *fn, const char *op, gwr_tensor *x,
                             int n, const int64_t *v, const battr *attrs, int nattrs) {
    static const char *const names[] = {"x"};
    gwr_tensor *in[2] = {x, NULL};
    if (!check_net(net, fn) || !check_tensors(net, op, 1, in, names))
        return NULL;
    if (n < 0 || (n > 0 && !v)) {
        gwr_ir_error(net, GWR_ERR_INVALID_ARG, "%s: bad values (n = %d)", op, n);
        return NULL;
    }
    if (!(in[1] = gwr_constant_i64s(net, n, v)))
        return NULL;
    return make1(net, op, 2, in, attrs, nattrs, &in[1], 1);
}

gwr_tensor *gwr_reshape(gwr_network *net, gwr_tensor *x, int rank, const int64_t *shape) {
    return with_ints(net, "gwr_reshape", "Reshape", x, rank, shape, NULL, 0);
}

gwr_tensor *gwr_transpose(gwr_network *net, gwr_tensor *x, int n, const int64_t *perm) {
    battr a = A_INTS("perm", perm, n);
    if (perm && n < 0) {
        if (check_net(net, "gwr_transpose"))
            gwr_ir_error(net, GWR_ERR_INVALID_ARG, "Transpose: bad perm (n = %d)", n);
        return NULL;
    }
    return unary_op(net, "gwr_transpose", "Transpose", x, &a, perm ? 1 : 0);
}

gwr_tensor *gwr_concat(gwr_network *net, int n, gwr_tensor *const *xs, int64_t axis) {
    battr a = A_INT("axis", axis);
    if (!check_net(net, "gwr_concat"))
        return NULL;
    if (n < 1 || !xs) {
        gwr_ir_error(net, GWR_ERR_INVALID_ARG, "Concat: needs at least one input (n = %d)", n);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (!xs[i]) {
            gwr_ir_error(net, GWR_ERR_INVALID_ARG, "Concat: input %d is NULL", i);
            return NULL;
        }
    return make1(net, "Concat", n, xs, &a, 1, NULL, 0);
}

gwr_layer *gwr_split(gwr_network *net, gwr_tensor *x, int64_t axis, int n, const int64_t *sizes,
                     gwr_tensor **outs) {
    static const char *const names[] = {"x"};
    gwr_tensor *in[2] = {x, NULL};
    battr a = A_INT("axis", axis);
    gwr_layer *l;
    if (!check_net(net, "gwr_split") || !check_tensors(net, "Split", 1, in, names))
        return NULL;
    if (n < 1) {
        gwr_ir_error(net, GWR_ERR_INVALID_ARG, "Split: needs at least one output (n = %d)", n);
        return NULL;
    }
    if (sizes && !(in[1] = gwr_constant_i64s(net, n, sizes)))
        return NULL;
    l = make(net, "Split", sizes ? 2 : 1, in, n, &a, 1, &in[1], sizes ? 1 : 0);
    for (int i = 0; l && outs && i < n; i++)
        outs[i] = gwr_layer_output(l, i);
    return l;
}

gwr_tensor *gwr_slice(gwr_network *net, gwr_tensor *x, int n, const int64_t *starts,
                      const int64_t *ends, const int64_t *axes, const int64_t *steps) {
    static const char *const names[] = {"x"};
    gwr_tensor *in[5] = {x, NULL, NULL, NULL, NULL};
    const int64_t *vals[4] = {starts, ends, axes, steps};
    int nin = 3, nh = 0;
    gwr_tensor *out;
    if (!check_net(net, "gwr_slice") || !check_tensors(net, "Slice", 1, in, names))
        return NULL;
    if (n < 0 || (n > 0 && (!starts || !ends))) {
        gwr_ir_error(net, GWR_ERR_INVALID_ARG, "Slice: bad parameters (n = %d)", n);
        return NULL;
    }
    for (int i = 0; i < 4; i++) {
        if (i >= 2 && !vals[i])
            continue; /* absent optional input */
        if (!(in[1 + i] = gwr_constant_i64s(net, n, vals[i]))) {
            rollback(net, NULL, in + 1, nh);
            return NULL;
        }
        nh = 1 + i;
        nin = 2 + i;
    }
    out = make1(net, "Slice", nin, in, NULL, 0, in + 1, nh);
    return out;
}

gwr_tensor *gwr_gather(gwr_network *net, gwr_tensor *x, gwr_tensor *indices, int64_t axis) {
    static const char *const names[] = {"x", "indices"};
    gwr_tensor *in[2] = {x, indices};
    battr a = A_INT("axis", axis);
    if (!check_net(net, "gwr_gather") || !check_tensors(net, "Gather", 2, in, names))
        return NULL;
    return make1(net, "Gather", 2, in, &a, 1, NULL, 0);
}

gwr_tensor *gwr_squeeze(gwr_network *net, gwr_tensor *x, int n, const int64_t *axes) {
    static const char *const names[] = {"x"};
    int64_t ones[GWR_MAX_RANK];
    int rank, k = 0;
    if (!check_net(net, "gwr_squeeze") || !check_tensors(net, "Squeeze", 1, &x, names))
        return NULL;
    if (n != 0)
        return with_ints(net, "gwr_squeeze", "Squeeze", x, n, axes, NULL, 0);
    /* n 0: the dims known to be 1. With an unknown rank, ONNX's own
     * no-axes form (squeeze whatever is 1 at run time). */
    rank = gwr_tensor_rank(x);
    if (rank < 0)
        return make1(net, "Squeeze", 1, &x, NULL, 0, NULL, 0);
    for (int i = 0; i < rank && i < GWR_MAX_RANK; i++)
        if (gwr_tensor_dim(x, i) == 1)
            ones[k++] = i;
    if (k == 0) /* nothing to squeeze: an explicit no-op */
        return make1(net, "Identity", 1, &x, NULL, 0, NULL, 0);
    return with_ints(net, "gwr_squeeze", "Squeeze", x, k, ones, NULL, 0);
}

gwr_tensor *gwr_unsqueeze(gwr_network *net, gwr_tensor *x, int n, const int64_t *axes) {
    return with_ints(net, "gwr_unsqueeze", "Unsqueeze", x, n, axes, NULL, 0);
}

gwr_tensor *gwr_expand(gwr_network *net, gwr_tensor *x, int rank, const int64_t *shape) {
    return with_ints(net, "gwr_expand", "Expand", x, rank, shape, NULL, 0);
}

gwr_tensor *gwr_cast(gwr_network *net, gwr_tensor *x, gwr_dtype to) {
    battr a = A_INT("to", to);
    if (!check_net(net, "gwr_cast"))
        return NULL;
    if (!gwr_dtype_is_valid(to) || to == GWR_UNDEFINED) {
        gwr_ir_error(net, GWR_ERR_TYPE, "Cast: invalid target dtype %d", (int)to);
        return NULL;
    }
    return unary_op(net, "gwr_cast", "Cast", x, &a, 1);
}

gwr_tensor *gwr_shape_of(gwr_network *net, gwr_tensor *x) {
    return unary_op(net, "gwr_shape_of", "Shape", x, NULL, 0);
}

gwr_tensor *gwr_where(gwr_network *net, gwr_tensor *cond, gwr_tensor *x, gwr_tensor *y) {
    static const char *const names[] = {"cond", "x", "y"};
    gwr_tensor *in[3] = {cond, x, y};
    if (!check_net(net, "gwr_where") || !check_tensors(net, "Where", 3, in, names))
        return NULL;
    return make1(net, "Where", 3, in, NULL, 0, NULL, 0);
}
