/* gwr/passes.h - the built-in passes, by label: the pass table (its
 * phases, levels, targets, numerics), gwr_passes_add to put one in a
 * rewrite manager, and the compatibility symbols of the older passes. */
#ifndef GWR_PASSES_H
#define GWR_PASSES_H

#include <stdio.h>

#include "gwr/rewrite.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- compatibility: the gwr_pattern_* symbols ----
 * The passes below predate the pass table's rows and keep their public
 * symbols for callers that add them to a manager by hand. A new pass adds
 * no symbol: its file declares its row (GWR_PASS, docs/optimize.md,
 * "Writing a pass") and callers reach it by label (gwr_passes_add,
 * gwr_passes_find, gwr_passes_info). */

/* Every SUM (Add) becomes a SUB with the same inputs and consumers. Root
 * ELEMENTWISE, separate match and rewrite. The tutorial pattern: it
 * changes the numbers on purpose. */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_replace_add_with_sub;
/* A gwr::GPTAttention plugin not yet in remove-padding mode is re-created
 * through its FLayerInfo with qkv reshaped to (1, batch_size*in_len,
 * hidden_size) and remove_padding set; its context output is reshaped
 * back to (batch_size, in_len, hidden). Needs the manager's args
 * batch_size, in_len and hidden_size (the qkv width). A plugin without an
 * attention_mask gets the sequence lengths (a constant of batch_size
 * in_len's, shared) so the packed sequences stay apart; a (batch, seq)
 * mask marks them already. Does not fire when qkv's known dims disagree
 * with the args or when the plugin's present output is read (its packed
 * layout differs). */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_gpt_attention_remove_padding;
/* An Add of a non-constant tensor and a 1-D constant whose output is read
 * only by a GPTAttention plugin's qkv, with qkv_bias unset and not a
 * network output: the constant moves into qkv_bias, the plugin is
 * re-created, the Add is removed. Root ELEMENTWISE. */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_fuse_attention_with_bias;

/* Constant folding: a layer whose inputs are all CONSTANT layers (or a
 * Shape of a tensor whose dims are known) is replaced by CONSTANT layers
 * holding its outputs, computed by the executor (gwr/exec.h). Skips random
 * ops, layers with subgraphs, ops without a kernel, and outputs over the
 * manager arg fold_max_bytes (default 16 MiB). Root: any layer. */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_fold_constants;
/* fold_constant_if (fold_if.c): an If whose condition is a constant
 * single-element bool becomes the layers of the branch it takes, copied
 * into its network with fresh names (gwr_network_inline_subgraph); its
 * readers read the copied branch outputs, a network output keeping its
 * name. Root: If. */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_fold_constant_if;

/* fold_batchnorm (scale.c): an inference BatchNormalization (training_mode
 * 0, extra outputs unread) with constant scale, B, mean and var, reading
 * the only output of a Conv, ConvTranspose or Gemm with constant weights
 * (a MatMul with a constant 2-D weight and an input of known rank 2
 * becomes a Gemm), is folded into new weight and bias constants computed
 * in double: W' = W * s per output channel, B' = (B - mean) * s + beta,
 * s = scale / sqrt(var + epsilon). Shared weights are copied, never
 * changed. Root: BatchNormalization. */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_fold_batchnorm;

/* ---- scale and Pad folding (fold_scale.c, fold_pad.c) ---- */
/* fold_scale_into_conv: Mul, Div (the Conv's output the numerator), Add
 * or Sub (either side) of a constant per output channel or scalar, in a
 * broadcast form that keeps the output's shape ([], [1], [C,1,1],
 * [1,C,1,1], ...; a [C] alone runs along the last axis and is refused),
 * after a Conv or ConvTranspose with constant weights (and bias) whose
 * output has no other reader, becomes new weights and bias computed in
 * double: Mul/Div scale both, Add/Sub only the bias. Not for a Div by 0.
 * Roots: Mul, Div, Add, Sub. */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_fold_scale_into_conv;
/* fold_scale_into_gemm: the same after a Gemm with a constant B (and C
 * per column or scalar; the new Gemm has beta 1) per output column, and
 * Mul/Div only after a MatMul with a constant 2-D weight. Roots: Mul,
 * Div, Add, Sub. */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_fold_scale_into_gemm;
/* fold_scalar_around_matmul: a one-element constant Mul or Div on an
 * input of a MatMul or Gemm whose other operand is constant, or on its
 * output (Gemm's C constant then), folded into that constant operand
 * (x*s @ W = x @ (s*W)); not a scale of a Mul's or Div's output (GELU's
 * trailing 0.5). Roots: MatMul, Gemm, Mul, Div. */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_fold_scalar_around_matmul;
/* fold_pad_into_conv: a Pad by zeros (mode constant, every opset form) of
 * the spatial axes only, with constant non-negative pads, read only by a
 * Conv (auto_pad NOTSET) or an AveragePool (count_include_pad 1,
 * ceil_mode 0, pads kept below the kernel) is added to its pads. MaxPool
 * and ConvTranspose are refused. Roots: Conv, AveragePool. */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_fold_pad_into_conv;
/* ---- end of scale and Pad folding ---- */

/* fuse_hard_swish, fuse_gelu: rule files (src/passes/rules/hard_swish.rules,
 * gelu.rules), run as the passes of those labels (gwr_passes_add). */
/* fuse_clip_chains (activation.c): clamp chains become one layer, bit for
 * bit (NaN and signed zeros included): Relu(Relu(x)) -> Relu(x);
 * Clip(Relu(x), lo, hi) -> Clip(x, lo, hi) with lo >= +0; Clip(Clip(x, a,
 * b), c, d) -> Clip(x, max(a, c), min(b, d)) when the intervals are in
 * order and overlap; Max(x, +0) -> Relu(x); Min(Max(x, lo), hi) ->
 * Clip(x, lo, hi) and Min(Relu(x), hi) -> Clip(x, +0, hi), x and the Max
 * or Relu as first operands (gwr's Max/Min keep the
 * first operand on a tie, so the mirrored orders differ in the sign of a
 * zero). Bounds: one-element constants of x's dtype, not NaN, not -0.0;
 * the Clip forms need default opset >= 11 or none. Roots: Relu, Clip, Max,
 * Min. */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_fuse_clip_chains;

/* fuse_layer_norm (norm.c): the exporters' chain over the last axis,
 * d = x - ReduceMean(x), d / Sqrt(ReduceMean(Pow(d, 2) or d * d) + eps)
 * (or d * Reciprocal(...)), then an optional Mul by a constant 1-D gamma
 * and Add of a constant 1-D beta of x's last dim, becomes
 * LayerNormalization(x, gamma or ones, beta; axis -1, epsilon eps). The
 * ReduceMeans (keepdims 1) name only the last axis (-1 or rank - 1) as an
 * attribute or a constant input; x (the same tensor in both places) is a
 * float tensor with a known last dim; the intermediates have no reader
 * outside the chain. Not under default opset 17 (none set is fine), for
 * any target. Roots: Div and Mul. */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_fuse_layer_norm;

/* fuse_matmul_add: a rule file (src/passes/rules/matmul_add.rules). */

/* onnxruntime's CNN fusions (fuse_conv.c), for targets ort and gwr only
 * (the manager arg "target" GWR_TARGET_ONNX refuses; no arg fuses), all
 * tensors float32, the producer's output read only by the next layer and
 * not a network output:
 * fuse_conv_activation: Relu, Tanh, Sigmoid, LeakyRelu, HardSigmoid or Clip
 * (constant one-element bounds) of a Conv, or of a FusedConv without an
 * activation, becomes com.microsoft FusedConv with "activation" and
 * "activation_params". Roots: the activations.
 * fuse_conv_add_activation: Add(Conv(x, W, B), z), either order, z of the
 * Conv output's known shape (no broadcast), becomes FusedConv(x, W, B, z)
 * (the activation after it then fuses as above). Root: Add.
 * fuse_gemm_activation: Relu, Tanh, Sigmoid, LeakyRelu or HardSigmoid of a
 * Gemm becomes com.microsoft FusedGemm with "activation",
 * "activation_alpha", "activation_beta". Roots: the activations. */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_fuse_conv_activation;
GWR_API extern const gwr_pattern_rewriter gwr_pattern_fuse_conv_add_activation;
GWR_API extern const gwr_pattern_rewriter gwr_pattern_fuse_gemm_activation;
/* ---- attention (fuse_attention.c, merge_qkv.c) ---- */
/* fuse_attention: the exporters' scaled-dot-product core (q k^T scaled by
 * constants on q, k or the scores, or a com.microsoft FusedMatMul; an
 * optional additive mask or Where(C, s, fill <= -1e30) with a constant C;
 * Softmax over the last axis; the product with v) becomes ONNX Attention
 * (opset 23, 4-D q/k/v, attn_mask the exact additive mask, scale). Below
 * opset 23 only for targets ort and gwr and only where lower_attention
 * takes the result. Root: MatMul. */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_fuse_attention;
/* lower_attention: that Attention with the head Reshape/Transposes around
 * it becomes com.microsoft MultiHeadAttention(q, k, v, bias, ,
 * attention_bias; num_heads, scale), constant q/k/v biases folded into its
 * bias; q, k, v as a Split of one MatMul(x, W) by a constant W give
 * com.microsoft Attention(x, W, bias, , , attention_bias). Root: Attention.
 * Targets ort and gwr. */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_lower_attention;
/* merge_qkv_matmuls: MatMuls (each maybe + a constant bias Add) of one
 * input by constant weights of the same dtype and rows become one MatMul
 * by the weights side by side (+ one Add of the biases side by side) and a
 * Split on the last axis. Root: MatMul. */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_merge_qkv_matmuls;

/* The eliminations (eliminate.c): layers whose output provably equals an
 * input are removed and their readers read that input. Constants are
 * compared exactly, shapes from known dims; an Identity carrying a network
 * output's name for a graph input, another output or an outer tensor stays.
 * eliminate_noop_reshape: Cast(Like) to x's dtype, Reshape/Expand to x's
 * known shape, an identity Transpose, a Slice of everything, a zero Pad, a
 * Tile by ones, a one-input Concat, a one-output Split.
 * eliminate_identity, eliminate_noop_arith and compose_transposes are rule
 * files (src/passes/rules/identity.rules, noop_arith.rules,
 * transposes.rules). */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_eliminate_noop_reshape;

/* eliminate_common_subexpressions (cse.c): two live layers of one network
 * with the same op (of the op table), the same input tensors in the same
 * slots (either order for a commutative binary op), the same number of
 * outputs and equal attributes (floats and tensors bit for bit, tensor
 * names ignored) become one: the earlier in network order stays, the
 * later's readers read its outputs. Equal Constants (same dtype, dims,
 * bytes) merge the same way when they are read by one layer, or in
 * corresponding layers of one op that share another input, so that their
 * readers can merge next. Never merged: random ops, Dropout, layers with
 * graph attributes (subgraphs are not compared), plugins and ops outside
 * the table, and a pair whose outputs are both network outputs (the later
 * output's name moves to the kept tensor otherwise). Root: any layer. */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_eliminate_common_subexpressions;

/* Transformer fusions (fuse_transformer.c). The first two emit
 * onnxruntime's com.microsoft contrib ops and fire only for the manager arg
 * "target" GWR_TARGET_ORT or GWR_TARGET_GWR.
 * fuse_skip_layer_norm: LayerNormalization over the last axis (constant
 * 1-D gamma, beta; Mean and InvStdDev unread) of Add(a, b), Add(Add(a, b),
 * bias) or Add(Add(a, bias), b) (bias a constant 1-D over the last axis),
 * a of rank 2 or 3 and b of a's shape or [1, S, H] / [S, H], becomes
 * SkipLayerNormalization(a, b, gamma, beta, bias); when the sum has other
 * readers or is a network output, they read its output 3
 * (input_skip_bias_sum). SimplifiedLayerNormalization (fuse_rms_norm's)
 * of Add(a, b) becomes SkipSimplifiedLayerNormalization(a, b, gamma) the
 * same way (no bias form). Root: LayerNormalization,
 * SimplifiedLayerNormalization.
 * fuse_matmul_scale: MatMul (or FusedMatMul) whose operands are
 * Transpose(x) swapping only the last two axes and/or x times (or divided
 * by) a constant splat, or whose result is scaled so, becomes
 * FusedMatMul(alpha, transA, transB) (float32 for target ort). Root: the
 * MatMul.
 * fuse_transpose_into_gemm (every target): a Transpose([1, 0]) read only by
 * a Gemm's A or B is dropped and transA / transB flipped. Root: Gemm.
 * fuse_bias_gelu and fuse_silu are rule files (src/passes/rules/bias_gelu.rules,
 * silu.rules). */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_fuse_skip_layer_norm;
GWR_API extern const gwr_pattern_rewriter gwr_pattern_fuse_matmul_scale;
GWR_API extern const gwr_pattern_rewriter gwr_pattern_fuse_transpose_into_gemm;
/* fuse_rms_norm (fuse_transformer.c; targets ort and gwr): x / Sqrt(ReduceMean(Pow(x, 2) or x * x,
 * last axis) + eps), or x * Reciprocal(Sqrt(...)) or x * (1 / Sqrt(...)), times an optional 1-D
 * constant gamma, becomes
 * onnxruntime's SimplifiedLayerNormalization (default domain). Root: the Div or Mul. */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_fuse_rms_norm;
/* Dynamically quantized MatMul (fuse_qmatmul.c; targets ort and gwr, exact).
 * fuse_matmul_integer_to_float: Cast(MatMulInteger(A, B, azp?, bzp?), to
 * float) * Mul(a_scale, b_scale) becomes com.microsoft
 * MatMulIntegerToFloat(A, B, a_scale, b_scale, azp, bzp) (B a constant 2-D
 * int8/uint8, A uint8 or int8 with int8 B; a_scale a float32 scalar, azp
 * a scalar; b_scale, bzp constant scalars or 1-D over B's columns); an Add
 * of a float32 1-D constant over the last axis after a MatMulIntegerToFloat
 * or DynamicQuantizeMatMul without bias becomes its bias. Root: Mul, Add.
 * fuse_dynamic_quantize_matmul: MatMulIntegerToFloat reading the three
 * outputs of a DynamicQuantizeLinear(x) that nothing else reads becomes
 * DynamicQuantizeMatMul(x, B, b_scale, bzp, bias). Root:
 * com.microsoft::MatMulIntegerToFloat. */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_fuse_matmul_integer_to_float;
GWR_API extern const gwr_pattern_rewriter gwr_pattern_fuse_dynamic_quantize_matmul;
/* fuse_elementwise_chain (ew_chain.c; target gwr, exact): a chain of two or
 * more float32 element-wise layers (Relu, LeakyRelu, Clip, Sigmoid, Tanh,
 * HardSigmoid, Neg, Abs, Exp, Log, Sqrt, Reciprocal, Erf, Softplus; Add, Sub, Mul,
 * Div, Max, Min with a side operand that is a scalar, of the output's shape
 * or one run of its axes), every intermediate read only by the next link
 * and not a network output, becomes one gwr::ElementwiseChain. Root: the
 * last link. Chains that other fusions take (a norm's statistics, the input
 * of Softmax, Gelu, the norms, MatMul, Gemm) are left. */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_fuse_elementwise_chain;
/* The shape passes (eliminate_shape.c), exact.
 * compose_reshapes: Reshape, Squeeze, Unsqueeze or Flatten of another of
 * them read only there becomes one Reshape when the result's shape is
 * known (a Reshape's constant target, its 0s copied from known dims; or
 * the output's dims, one unknown as -1), one Squeeze or Unsqueeze with the
 * axes merged, or the input itself when a Squeeze and an Unsqueeze of the
 * same axes cancel; a lone Flatten of known enough dims becomes a Reshape.
 * fold_shape_dims: Gather, Slice or Concat of Shape values whose dims are
 * all known becomes a constant; Reshape(x, shape values known but for one)
 * gets a constant shape with -1 there (the others known and positive).
 * Unknown dims are reasons in the rewrite trace and the optimize report. */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_compose_reshapes;
GWR_API extern const gwr_pattern_rewriter gwr_pattern_fold_shape_dims;
/* constants_to_initializers (constants.c): a Constant node read from a
 * file (layer property onnx.constant_node) in its tensor form is written as
 * an initializer; not before IR version 4. */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_constants_to_initializers;
GWR_API extern const gwr_pattern_rewriter gwr_pattern_fold_input_defaults;
/* compose_slices, merge_slices_into_split (slices.c): Slice(Slice(x)) on
 * different axes -> one Slice; Slices cutting one axis of x into
 * consecutive parts -> one Split. */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_compose_slices;
GWR_API extern const gwr_pattern_rewriter gwr_pattern_merge_slices_into_split;
/* push_transpose_through_elementwise (transpose_push.c): Transpose(E_k(...
 * E_1(Transpose(x, p1)))) with each E elementwise (a unary op, Clip with
 * scalar bounds, or a binary op with a constant, permuted into a new one
 * when it has more than one element) and every
 * intermediate read only there becomes E_k(...E_1(Transpose(x, p1[p2]))),
 * or E_k(...E_1(x)) when the perms cancel: never more layers. */
GWR_API extern const gwr_pattern_rewriter gwr_pattern_push_transpose_through_elementwise;

/* Records the FLayerInfo of every gwr::GPTAttention plugin layer that has
 * none (one loaded from ONNX), from its inputs and attributes, so that the
 * plugin patterns can re-create it. *nrecorded (may be NULL) gets the count. */
GWR_API gwr_status gwr_passes_recover_flayers(gwr_network *net, int64_t *nrecorded);

/* The one table of built-in passes. Each pass's own file declares its row;
 * the build collects the rows (cmake/pass_list.cmake) in phase order, and
 * within a phase by file name and by order in the file: that order is the
 * table's, the one `gwr rewrite --list` prints. gwr_optimize runs the
 * phases in order, each to a fixpoint, and again from the first while a
 * later phase changed something (gwr/optimize.h); within a phase a layer
 * is offered to the passes in table order.
 * `level` says which optimization level runs a pass, as onnxruntime's
 * levels do (NONE: never implied by a level; the tutorial patterns), and
 * `level_gwr` the level for target gwr where it differs (NONE: the same);
 * `targets` which outputs it may be used for (GWR_TARGET_*: standard ONNX,
 * onnxruntime's contrib ops, gwr's own executor); `numerics` whether
 * outputs stay bit-identical, agree within `tolerance` (max abs difference
 * on the test cases' inputs), or change on purpose. The registry, `gwr
 * rewrite --list`, the table in docs/api.md and the test loop over every
 * pass all read this table. */
typedef enum gwr_pass_level {
    GWR_LEVEL_NONE = 0,
    GWR_LEVEL_BASIC,    /* eliminations and folding */
    GWR_LEVEL_EXTENDED, /* fusions */
    GWR_LEVEL_ALL
} gwr_pass_level;
enum { GWR_TARGET_ONNX = 1, GWR_TARGET_ORT = 2, GWR_TARGET_GWR = 4, GWR_TARGET_ANY = 7 };
typedef enum gwr_pass_numerics {
    GWR_NUMERICS_EXACT = 0,
    GWR_NUMERICS_APPROX, /* within tolerance */
    GWR_NUMERICS_CHANGES /* changes the results on purpose */
} gwr_pass_numerics;
/* The phases, in the order they run (docs/optimize.md). */
typedef enum gwr_pass_phase {
    GWR_PHASE_CLEANUP = 0, /* exact eliminations and canonical forms: nothing computed, nothing fused */
    GWR_PHASE_FOLD,        /* constants computed; constants, scales, pads, transposes folded into their readers */
    GWR_PHASE_FUSE,        /* chains of ops into one: standard ONNX ones (every target), FusedMatMul */
    GWR_PHASE_LOWER,       /* into the target's own ops: onnxruntime's contrib ops, gwr's plugins */
    GWR_PHASE_KERNEL,      /* gwr's executor's composite kernels, from what the other phases left */
    GWR_PHASE_COUNT
} gwr_pass_phase;
typedef struct gwr_pass_info {
    const char *label;
    const gwr_pattern_rewriter *pattern;
    int benefit; /* unused since the phases (0): gwr_passes_benefit gives the manager's benefit */
    gwr_pass_level level;
    unsigned targets;
    gwr_pass_numerics numerics;
    double tolerance;
    const char *summary;
    gwr_pass_phase phase;
    gwr_pass_level level_gwr; /* the level for target gwr; GWR_LEVEL_NONE: `level` */
} gwr_pass_info;

GWR_API const char *gwr_pass_level_name(gwr_pass_level level); /* "basic" */
GWR_API const char *gwr_pass_phase_name(gwr_pass_phase phase); /* "cleanup"; "unknown" out of range */
/* The level pass p runs at for target (one of GWR_TARGET_*): p->level, or
 * p->level_gwr when set and the target is gwr (a fusion whose
 * onnxruntime kernel is slower than the layers it replaces while gwr's is
 * faster). */
GWR_API gwr_pass_level gwr_pass_level_for(const gwr_pass_info *p, unsigned target);
/* Entry i of the table (0 <= i < gwr_passes_count()), or NULL. */
GWR_API const gwr_pass_info *gwr_passes_info(int i);
/* Writes the table as `gwr rewrite --list` prints it: text columns, or a
 * Markdown table (the one in docs/api.md) when markdown is 1. */
GWR_API void gwr_passes_print(FILE *out, int markdown);

/* The built-in passes, in table order. */
GWR_API int gwr_passes_count(void);
GWR_API const char *gwr_passes_label(int i);
GWR_API const char *gwr_passes_summary(int i);
/* The benefit a manager gives pass i: from its position, the first
 * highest, so that one manager offers a layer the passes in table order. */
GWR_API int gwr_passes_benefit(int i);
/* The pattern of a label (and its benefit as gwr_passes_benefit), or NULL. */
GWR_API const gwr_pattern_rewriter *gwr_passes_find(const char *label, int *benefit);
/* Adds the built-in pattern `label` to m with its benefit (one manager,
 * no phases: the table's order). GWR_ERR_NOT_FOUND (message on m naming
 * the known labels). */
GWR_API gwr_status gwr_passes_add(gwr_rewrite_manager *m, const char *label);

#ifdef __cplusplus
}
#endif
#endif
