/* gwr/functional.h - building networks: one function per common op, a
 * generic op call, plugins, named argument lists, and signature recording
 * (FLayerInfo) so that a rewrite can re-create a layer with changed
 * arguments.
 *
 * Builders return the new output tensor, or NULL with a message naming the
 * op and the shapes on the network (gwr_network_errmsg). A NULL tensor
 * argument where one is required is an error, not a crash. Output dtypes
 * and shapes are inferred with NumPy broadcasting and symbolic dims. */
#ifndef GWR_FUNCTIONAL_H
#define GWR_FUNCTIONAL_H

#include "gwr/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- named argument lists ---------------------------------------------- */

/* An ordered list of named values: the C form of a Python kwargs dict.
 * Owned by its creator; independent of any network (tensor values are
 * handles, not copies). Setting an existing name replaces its value in
 * place, keeping its position. */
typedef struct gwr_args gwr_args;

typedef enum gwr_arg_type {
    GWR_ARG_NONE = 0,
    GWR_ARG_TENSOR,
    GWR_ARG_TENSORS,
    GWR_ARG_INT,
    GWR_ARG_FLOAT,
    GWR_ARG_STRING,
    GWR_ARG_INTS,
    GWR_ARG_FLOATS
} gwr_arg_type;

GWR_API const char *gwr_arg_type_name(gwr_arg_type t);

GWR_API gwr_args *gwr_args_new(void);
GWR_API void gwr_args_free(gwr_args *a);
/* A deep, independent copy (tensor handles are shared). */
GWR_API gwr_args *gwr_args_clone(const gwr_args *a);
GWR_API int gwr_args_count(const gwr_args *a);
GWR_API const char *gwr_args_name(const gwr_args *a, int i);
GWR_API gwr_arg_type gwr_args_type(const gwr_args *a, int i);
/* Index of name, or -1. */
GWR_API int gwr_args_find(const gwr_args *a, const char *name);
GWR_API gwr_status gwr_args_remove(gwr_args *a, const char *name);
/* The message of the last failing call on this list. */
GWR_API const char *gwr_args_errmsg(const gwr_args *a);

GWR_API gwr_status gwr_args_set_none(gwr_args *a, const char *name);
/* t may be NULL: stored as NONE. */
GWR_API gwr_status gwr_args_set_tensor(gwr_args *a, const char *name, gwr_tensor *t);
GWR_API gwr_status gwr_args_set_tensors(gwr_args *a, const char *name, int n, gwr_tensor *const *t);
GWR_API gwr_status gwr_args_set_int(gwr_args *a, const char *name, int64_t v);
GWR_API gwr_status gwr_args_set_float(gwr_args *a, const char *name, double v);
GWR_API gwr_status gwr_args_set_string(gwr_args *a, const char *name, const char *v);
GWR_API gwr_status gwr_args_set_ints(gwr_args *a, const char *name, int n, const int64_t *v);
GWR_API gwr_status gwr_args_set_floats(gwr_args *a, const char *name, int n, const double *v);

/* Getters: GWR_ERR_NOT_FOUND when absent, GWR_ERR_TYPE when of another
 * type (get_tensor accepts NONE and gives NULL; get_float accepts an INT).
 * Arrays live until the value is replaced or the list freed. */
GWR_API int gwr_args_is_none(const gwr_args *a, const char *name);
GWR_API gwr_status gwr_args_get_tensor(const gwr_args *a, const char *name, gwr_tensor **out);
GWR_API gwr_status gwr_args_get_tensors(const gwr_args *a, const char *name, gwr_tensor *const **out,
                                        int *n);
GWR_API gwr_status gwr_args_get_int(const gwr_args *a, const char *name, int64_t *out);
GWR_API gwr_status gwr_args_get_float(const gwr_args *a, const char *name, double *out);
GWR_API gwr_status gwr_args_get_string(const gwr_args *a, const char *name, const char **out);
GWR_API gwr_status gwr_args_get_ints(const gwr_args *a, const char *name, const int64_t **out,
                                     int *n);
GWR_API gwr_status gwr_args_get_floats(const gwr_args *a, const char *name, const double **out,
                                       int *n);

/* ---- the generic op call ------------------------------------------------ */

/* Creates a layer of any op: a known one (shape inference by the op's rule,
 * arity checked) or an unknown one (a PLUGIN-class layer whose outputs get
 * the first input's dtype and an unknown shape unless a registered plugin
 * says otherwise). `attrs` (may be NULL) become layer attributes: INT,
 * FLOAT, STRING, INTS, FLOATS map to the same attribute types. Writes
 * `noutputs` outputs to `outs` (may be NULL). Returns the layer or NULL. */
GWR_API gwr_layer *gwr_op_call(gwr_network *net, const char *domain, const char *op, int ninputs,
                               gwr_tensor *const *inputs, const gwr_args *attrs, int noutputs,
                               gwr_tensor **outs);
/* Re-runs shape and dtype inference for one layer from its current
 * inputs and attributes (after gwr_layer_set_input, say). */
GWR_API gwr_status gwr_layer_infer(gwr_layer *l);

/* ---- constants ---------------------------------------------------------- */

/* A CONSTANT layer holding a copy of `data` (numel(dims) elements of dtype;
 * for GWR_STRING, `data` is an array of NUL-terminated char pointers). */
GWR_API gwr_tensor *gwr_constant(gwr_network *net, gwr_dtype dtype, int rank, const int64_t *dims,
                                 const void *data);
GWR_API gwr_tensor *gwr_constant_f32(gwr_network *net, float v);   /* rank 0 */
GWR_API gwr_tensor *gwr_constant_i64(gwr_network *net, int64_t v); /* rank 0 */
/* A 1-D int64 constant (shapes, axes). */
GWR_API gwr_tensor *gwr_constant_i64s(gwr_network *net, int n, const int64_t *v);

/* ---- element-wise ------------------------------------------------------- */

/* TensorRT's addElementWise: any GWR_EW_* operation. */
GWR_API gwr_tensor *gwr_elementwise(gwr_network *net, gwr_ew_op op, gwr_tensor *a, gwr_tensor *b);
GWR_API gwr_tensor *gwr_add(gwr_network *net, gwr_tensor *a, gwr_tensor *b);
GWR_API gwr_tensor *gwr_sub(gwr_network *net, gwr_tensor *a, gwr_tensor *b);
GWR_API gwr_tensor *gwr_mul(gwr_network *net, gwr_tensor *a, gwr_tensor *b);
GWR_API gwr_tensor *gwr_div(gwr_network *net, gwr_tensor *a, gwr_tensor *b);
GWR_API gwr_tensor *gwr_pow(gwr_network *net, gwr_tensor *a, gwr_tensor *b);
GWR_API gwr_tensor *gwr_max(gwr_network *net, gwr_tensor *a, gwr_tensor *b);
GWR_API gwr_tensor *gwr_min(gwr_network *net, gwr_tensor *a, gwr_tensor *b);
GWR_API gwr_tensor *gwr_mod(gwr_network *net, gwr_tensor *a, gwr_tensor *b);
GWR_API gwr_tensor *gwr_equal(gwr_network *net, gwr_tensor *a, gwr_tensor *b);
GWR_API gwr_tensor *gwr_less(gwr_network *net, gwr_tensor *a, gwr_tensor *b);
GWR_API gwr_tensor *gwr_less_equal(gwr_network *net, gwr_tensor *a, gwr_tensor *b);
GWR_API gwr_tensor *gwr_greater(gwr_network *net, gwr_tensor *a, gwr_tensor *b);
GWR_API gwr_tensor *gwr_greater_equal(gwr_network *net, gwr_tensor *a, gwr_tensor *b);
GWR_API gwr_tensor *gwr_and(gwr_network *net, gwr_tensor *a, gwr_tensor *b);
GWR_API gwr_tensor *gwr_or(gwr_network *net, gwr_tensor *a, gwr_tensor *b);
GWR_API gwr_tensor *gwr_xor(gwr_network *net, gwr_tensor *a, gwr_tensor *b);
GWR_API gwr_tensor *gwr_not(gwr_network *net, gwr_tensor *x);

/* ---- unary math and activations ----------------------------------------- */

/* Any op of class UNARY or ACTIVATION that takes one input and no
 * required attribute (Abs, Exp, Relu, Sigmoid, ...). */
GWR_API gwr_tensor *gwr_unary(gwr_network *net, gwr_op_id op, gwr_tensor *x);
GWR_API gwr_tensor *gwr_abs(gwr_network *net, gwr_tensor *x);
GWR_API gwr_tensor *gwr_neg(gwr_network *net, gwr_tensor *x);
GWR_API gwr_tensor *gwr_exp(gwr_network *net, gwr_tensor *x);
GWR_API gwr_tensor *gwr_log(gwr_network *net, gwr_tensor *x);
GWR_API gwr_tensor *gwr_sqrt(gwr_network *net, gwr_tensor *x);
GWR_API gwr_tensor *gwr_reciprocal(gwr_network *net, gwr_tensor *x);
GWR_API gwr_tensor *gwr_floor(gwr_network *net, gwr_tensor *x);
GWR_API gwr_tensor *gwr_ceil(gwr_network *net, gwr_tensor *x);
GWR_API gwr_tensor *gwr_sin(gwr_network *net, gwr_tensor *x);
GWR_API gwr_tensor *gwr_cos(gwr_network *net, gwr_tensor *x);
GWR_API gwr_tensor *gwr_erf(gwr_network *net, gwr_tensor *x);
GWR_API gwr_tensor *gwr_relu(gwr_network *net, gwr_tensor *x);
GWR_API gwr_tensor *gwr_sigmoid(gwr_network *net, gwr_tensor *x);
GWR_API gwr_tensor *gwr_tanh(gwr_network *net, gwr_tensor *x);
GWR_API gwr_tensor *gwr_softplus(gwr_network *net, gwr_tensor *x);
GWR_API gwr_tensor *gwr_hard_swish(gwr_network *net, gwr_tensor *x);
GWR_API gwr_tensor *gwr_leaky_relu(gwr_network *net, gwr_tensor *x, float alpha);
GWR_API gwr_tensor *gwr_elu(gwr_network *net, gwr_tensor *x, float alpha);
/* approximate: "none" (erf form) or "tanh"; NULL means "none". */
GWR_API gwr_tensor *gwr_gelu(gwr_network *net, gwr_tensor *x, const char *approximate);
/* SiLU (swish): x * Sigmoid(x), two layers; returns the Mul's output. */
GWR_API gwr_tensor *gwr_silu(gwr_network *net, gwr_tensor *x);
/* lo and hi may be NULL (no bound). */
GWR_API gwr_tensor *gwr_clip(gwr_network *net, gwr_tensor *x, gwr_tensor *lo, gwr_tensor *hi);

/* ---- matrix multiply, convolution, pooling ------------------------------ */

GWR_API gwr_tensor *gwr_matmul(gwr_network *net, gwr_tensor *a, gwr_tensor *b);
/* c may be NULL. */
GWR_API gwr_tensor *gwr_gemm(gwr_network *net, gwr_tensor *a, gwr_tensor *b, gwr_tensor *c,
                             float alpha, float beta, int trans_a, int trans_b);

/* Convolution and pooling parameters for `nspatial` spatial dims. Arrays
 * may be NULL: strides and dilations default to 1, pads to 0. pads holds
 * 2*nspatial values: all begins, then all ends (ONNX order). auto_pad:
 * NULL or "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID". */
typedef struct gwr_conv_params {
    int nspatial;
    const int64_t *kernel;         /* pooling only: kernel extent per spatial dim */
    const int64_t *strides;
    const int64_t *pads;
    const int64_t *dilations;
    const int64_t *output_padding; /* ConvTranspose only */
    int64_t group;                 /* 0 means 1 */
    const char *auto_pad;
    int ceil_mode;                 /* pooling only */
    int count_include_pad;         /* AveragePool only */
} gwr_conv_params;

/* b may be NULL. p may be NULL for all defaults (nspatial from x). */
GWR_API gwr_tensor *gwr_conv(gwr_network *net, gwr_tensor *x, gwr_tensor *w, gwr_tensor *b,
                             const gwr_conv_params *p);
GWR_API gwr_tensor *gwr_conv_transpose(gwr_network *net, gwr_tensor *x, gwr_tensor *w,
                                       gwr_tensor *b, const gwr_conv_params *p);
GWR_API gwr_tensor *gwr_max_pool(gwr_network *net, gwr_tensor *x, const gwr_conv_params *p);
GWR_API gwr_tensor *gwr_avg_pool(gwr_network *net, gwr_tensor *x, const gwr_conv_params *p);
GWR_API gwr_tensor *gwr_global_avg_pool(gwr_network *net, gwr_tensor *x);
GWR_API gwr_tensor *gwr_global_max_pool(gwr_network *net, gwr_tensor *x);

/* ---- normalization, softmax, reductions --------------------------------- */

GWR_API gwr_tensor *gwr_batch_norm(gwr_network *net, gwr_tensor *x, gwr_tensor *scale,
                                   gwr_tensor *bias, gwr_tensor *mean, gwr_tensor *var,
                                   float epsilon);
/* bias may be NULL. */
GWR_API gwr_tensor *gwr_layer_norm(gwr_network *net, gwr_tensor *x, gwr_tensor *scale,
                                   gwr_tensor *bias, int64_t axis, float epsilon);
GWR_API gwr_tensor *gwr_softmax(gwr_network *net, gwr_tensor *x, int64_t axis);
/* op: one of the Reduce* ops. naxes 0: reduce over all axes. */
GWR_API gwr_tensor *gwr_reduce(gwr_network *net, gwr_op_id op, gwr_tensor *x, int naxes,
                               const int64_t *axes, int keepdims);
GWR_API gwr_tensor *gwr_reduce_sum(gwr_network *net, gwr_tensor *x, int naxes, const int64_t *axes,
                                   int keepdims);
GWR_API gwr_tensor *gwr_reduce_mean(gwr_network *net, gwr_tensor *x, int naxes,
                                    const int64_t *axes, int keepdims);
GWR_API gwr_tensor *gwr_reduce_max(gwr_network *net, gwr_tensor *x, int naxes, const int64_t *axes,
                                   int keepdims);

/* ---- shape manipulation -------------------------------------------------- */

/* shape: ONNX Reshape semantics (0 copies the input dim, one -1 is
 * inferred). Stored as a constant int64 input. */
GWR_API gwr_tensor *gwr_reshape(gwr_network *net, gwr_tensor *x, int rank, const int64_t *shape);
/* perm NULL: reverse the axes. */
GWR_API gwr_tensor *gwr_transpose(gwr_network *net, gwr_tensor *x, int n, const int64_t *perm);
GWR_API gwr_tensor *gwr_concat(gwr_network *net, int n, gwr_tensor *const *xs, int64_t axis);
/* Splits into `n` outputs written to outs; sizes may be NULL (equal parts).
 * Returns the layer or NULL. */
GWR_API gwr_layer *gwr_split(gwr_network *net, gwr_tensor *x, int64_t axis, int n,
                             const int64_t *sizes, gwr_tensor **outs);
/* axes, steps may be NULL (all leading axes, step 1). */
GWR_API gwr_tensor *gwr_slice(gwr_network *net, gwr_tensor *x, int n, const int64_t *starts,
                              const int64_t *ends, const int64_t *axes, const int64_t *steps);
GWR_API gwr_tensor *gwr_gather(gwr_network *net, gwr_tensor *x, gwr_tensor *indices,
                               int64_t axis);
/* n 0: squeeze every dim known to be 1. */
GWR_API gwr_tensor *gwr_squeeze(gwr_network *net, gwr_tensor *x, int n, const int64_t *axes);
GWR_API gwr_tensor *gwr_unsqueeze(gwr_network *net, gwr_tensor *x, int n, const int64_t *axes);
GWR_API gwr_tensor *gwr_expand(gwr_network *net, gwr_tensor *x, int rank, const int64_t *shape);
GWR_API gwr_tensor *gwr_cast(gwr_network *net, gwr_tensor *x, gwr_dtype to);
/* ONNX Shape: a 1-D int64 tensor of x's dims. */
GWR_API gwr_tensor *gwr_shape_of(gwr_network *net, gwr_tensor *x);
GWR_API gwr_tensor *gwr_where(gwr_network *net, gwr_tensor *cond, gwr_tensor *x, gwr_tensor *y);

/* ---- plugins ------------------------------------------------------------ */

/* Sets the dtypes and shapes of a plugin layer's outputs from its inputs
 * and attributes (its fields). Returns an error status, with a message on
 * the layer's network, when the inputs do not fit. */
typedef gwr_status (*gwr_plugin_infer_fn)(gwr_layer *l, void *user);

/* Registers a plugin kind, process-wide (like TensorRT's plugin registry;
 * thread-safe). GWR_ERR_DUPLICATE when (domain, type) is taken. */
GWR_API gwr_status gwr_plugin_register(const char *domain, const char *type, int noutputs,
                                       gwr_plugin_infer_fn infer, void *user);
GWR_API int gwr_plugin_is_registered(const char *domain, const char *type);
/* A layer of a registered plugin kind; fields (may be NULL) become
 * attributes. NULL on error (unregistered kind: use gwr_op_call). */
GWR_API gwr_layer *gwr_plugin_create(gwr_network *net, const char *domain, const char *type,
                                     const char *name, int ninputs, gwr_tensor *const *inputs,
                                     const gwr_args *fields);

/* ---- recorded functionals and FLayerInfo -------------------------------- */

/* A functional: builds layers from named arguments and writes its outputs
 * (at most max_outs) to outs and their count to *nouts. */
typedef gwr_status (*gwr_functional_fn)(gwr_network *net, const gwr_args *args, gwr_tensor **outs,
                                        int max_outs, int *nouts, void *user);

/* Registers a functional under `kind`, process-wide, with its signature:
 * `params` lists every parameter in order with its default (NONE for
 * required or optional-absent ones). GWR_ERR_DUPLICATE for a taken kind. */
GWR_API gwr_status gwr_functional_register(const char *kind, gwr_functional_fn fn,
                                           const gwr_args *params, void *user);
/* Runs a registered functional: binds args onto the signature (an unknown
 * name is GWR_ERR_INVALID_ARG), runs it, and records the FLayerInfo (kind,
 * every parameter including defaults, the outputs) on the last layer it
 * created. The message of a failure is on net. */
GWR_API gwr_status gwr_call(gwr_network *net, const char *kind, const gwr_args *args,
                            gwr_tensor **outs, int max_outs, int *nouts);

/* FLayerInfo: a recorded call signature. Owned by the network's memo. */
typedef struct gwr_flayer gwr_flayer;

/* Records an FLayerInfo of functional `kind` on an existing layer l (one
 * loaded from a file, say), as if gwr_call had made it: args are bound
 * onto kind's signature, the outputs are l's. GWR_ERR_DUPLICATE when l
 * has one already, GWR_ERR_NOT_FOUND for an unregistered kind. */
GWR_API gwr_status gwr_flayer_record(gwr_network *net, gwr_layer *l, const char *kind, const gwr_args *args);

/* The FLayerInfo recorded on l, or NULL (none, or l was removed). O(1). */
GWR_API gwr_flayer *gwr_flayer_get(const gwr_network *net, const gwr_layer *l);
/* Number of entries in the network's memo. */
GWR_API int64_t gwr_flayer_memo_size(const gwr_network *net);
GWR_API const char *gwr_flayer_kind(const gwr_flayer *f);
GWR_API gwr_layer *gwr_flayer_layer(const gwr_flayer *f);
/* The bound arguments, read-only; kept consistent with the network. */
GWR_API const gwr_args *gwr_flayer_inputs(const gwr_flayer *f);
/* The tensor bound to parameter `name`; NULL when it is none, absent or not
 * a tensor. */
GWR_API gwr_tensor *gwr_flayer_get_input(const gwr_flayer *f, const char *name);
/* A deep, independent copy of the arguments, for a new gwr_call. The caller
 * frees it with gwr_args_free. */
GWR_API gwr_args *gwr_flayer_clone_inputs(const gwr_flayer *f);
GWR_API int gwr_flayer_num_outputs(const gwr_flayer *f);
GWR_API gwr_tensor *gwr_flayer_output(const gwr_flayer *f, int i);
/* Replaces src by dst everywhere in the recorded arguments and in the
 * layer's inputs (with the same checks as gwr_layer_set_input). */
GWR_API gwr_status gwr_flayer_replace_input_with(gwr_flayer *f, gwr_tensor *src, gwr_tensor *dst);
/* Redirects every user and network-output mark of output i to new_outs[i],
 * for all i. n must equal the number of outputs and each dtype must match;
 * nothing changes on error. */
GWR_API gwr_status gwr_flayer_replace_outputs_uses_with(gwr_flayer *f, int n,
                                                        gwr_tensor *const *new_outs);

/* ---- built-in functionals ----------------------------------------------- */

/* "gpt_attention": a GPTAttention plugin layer (domain "gwr"). Parameters:
 * qkv (tensor: (batch, seq, 3*hidden), or (1, tokens, 3*hidden) with
 * remove_padding), qkv_bias (constant tensor (3*hidden) or none),
 * attention_mask (tensor or none), num_heads, head_size (ints),
 * remove_padding (0/1, default 0). Outputs: context (batch, seq, hidden)
 * and present key/value (batch, 2, num_heads, seq, head_size). */
#define GWR_GPT_ATTENTION "gpt_attention"
#define GWR_PLUGIN_DOMAIN "gwr"

/* ---- model generators (demos, tests, benchmarks) ------------------------ */

/* A GPT-style decoder: `blocks` pre-LayerNorm transformer blocks over an
 * input "x" of type float32[batch, seq, hidden] ("batch" and "seq"
 * symbolic), output "y". Attention is the GPTAttention plugin (through the
 * recorded gpt_attention functional) when use_plugin is 1, or plain ONNX
 * ops (Split, Reshape, Transpose, MatMul, Softmax, ...) when 0, so the
 * network can be exported and run anywhere. Weights are deterministic
 * pseudo-random values (seed); with share_weights every block's constants
 * share one buffer per kind, so a million-layer network stays small. */
typedef struct gwr_gpt_config {
    int blocks;
    int hidden;        /* multiple of heads */
    int heads;
    int ffn;           /* inner width of the MLP; 0 means 4*hidden */
    int use_plugin;
    int share_weights;
    uint64_t seed;
} gwr_gpt_config;

/* Builds the decoder into net (which should be empty) and returns the
 * output tensor, or NULL with the message on net. */
GWR_API gwr_tensor *gwr_build_gpt(gwr_network *net, const gwr_gpt_config *cfg);

#ifdef __cplusplus
}
#endif
#endif
