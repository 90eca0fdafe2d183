/* registry.c - the built-in rewrite patterns by label, for
 * gwr_passes_add and `gwr rewrite --pattern LABEL`. */
#include <stdio.h>
#include <string.h>

#include "gwr/passes.h"
#include "passes/rules_pass.h"
#include "rewrite/rewrite_api.h"

/* Benefits: the fusion first, so that it sees the Add before
 * replace_add_with_sub turns it into a Sub; the eliminations (40-60)
 * before folding (30), so that a fold never computes a no-op. */
static const gwr_pass_info builtins[] = {
    {"fuse_attention_with_bias", &gwr_pattern_fuse_attention_with_bias, 20, GWR_LEVEL_NONE, GWR_TARGET_GWR,
     GWR_NUMERICS_APPROX, 1e-5, "fold a constant Add feeding a GPTAttention's qkv into its qkv_bias"},
    {"gpt_attention_remove_padding", &gwr_pattern_gpt_attention_remove_padding, 10, GWR_LEVEL_NONE, GWR_TARGET_GWR,
     GWR_NUMERICS_APPROX, 1e-5,
     "re-create GPTAttention plugins in remove-padding mode (args batch_size, in_len, hidden_size)"},
    {"eliminate_identity", &gwr_ps_pattern_eliminate_identity, 60, GWR_LEVEL_BASIC, GWR_TARGET_ANY, GWR_NUMERICS_EXACT, 0,
     "remove Identity and inference-mode Dropout (mask unread): readers read the input"},
    {"eliminate_noop_reshape", &gwr_pattern_eliminate_noop_reshape, 55, GWR_LEVEL_BASIC, GWR_TARGET_ANY,
     GWR_NUMERICS_EXACT, 0,
     "remove Cast to its own dtype, Reshape/Expand to the same known shape, identity Transpose, full Slice, "
     "zero Pad, Tile by ones, one-part Concat/Split"},
    {"eliminate_common_subexpressions", &gwr_pattern_eliminate_common_subexpressions, 52, GWR_LEVEL_BASIC,
     GWR_TARGET_ANY, GWR_NUMERICS_EXACT, 0,
     "merge layers computing the same thing (same op, inputs, attributes bit for bit) and equal constants; "
     "not random ops, subgraphs or plugins"},
    {"compose_transposes", &gwr_ps_pattern_compose_transposes, 50, GWR_LEVEL_BASIC, GWR_TARGET_ANY, GWR_NUMERICS_EXACT, 0,
     "merge Transpose(Transpose(x)) into one Transpose, or none when the perms cancel"},
    {"eliminate_noop_arith", &gwr_ps_pattern_eliminate_noop_arith, 45, GWR_LEVEL_BASIC, GWR_TARGET_ANY, GWR_NUMERICS_EXACT,
     0, "remove x+0, x-0, x*1, x/1 (exact splat constant, x's dtype and shape kept)"},
    {"fold_constants", &gwr_pattern_fold_constants, 30, GWR_LEVEL_BASIC, GWR_TARGET_ANY, GWR_NUMERICS_EXACT, 0,
     "compute layers whose inputs are all constants into constants (arg fold_max_bytes, default 16 MiB)"},
    {"fold_constant_if", &gwr_pattern_fold_constant_if, 62, GWR_LEVEL_BASIC, GWR_TARGET_ANY, GWR_NUMERICS_EXACT, 0,
     "replace an If whose condition is a constant by the layers of the branch it takes"},
    {"fold_batchnorm", &gwr_pattern_fold_batchnorm, 50, GWR_LEVEL_BASIC, GWR_TARGET_ANY, GWR_NUMERICS_APPROX, 1e-4,
     "fold an inference BatchNormalization into the constant weights of the Conv, ConvTranspose, Gemm or MatMul before it"},
    /* scale and Pad folding (fold_scale.c, fold_pad.c) */
    {"fold_scale_into_conv", &gwr_pattern_fold_scale_into_conv, 48, GWR_LEVEL_BASIC, GWR_TARGET_ANY,
     GWR_NUMERICS_APPROX, 1e-4,
     "fold a per-channel or scalar constant Mul/Div/Add/Sub after a Conv or ConvTranspose into its weights and bias"},
    {"fold_scale_into_gemm", &gwr_pattern_fold_scale_into_gemm, 48, GWR_LEVEL_BASIC, GWR_TARGET_ANY,
     GWR_NUMERICS_APPROX, 1e-4,
     "fold a per-column or scalar constant Mul/Div/Add/Sub after a Gemm (Mul/Div after a MatMul) into its weights"},
    {"fold_scalar_around_matmul", &gwr_pattern_fold_scalar_around_matmul, 47, GWR_LEVEL_BASIC, GWR_TARGET_ANY,
     GWR_NUMERICS_APPROX, 1e-4,
     "fold a scalar Mul/Div on the input or output of a MatMul or Gemm into its constant operand"},
    {"fold_pad_into_conv", &gwr_pattern_fold_pad_into_conv, 48, GWR_LEVEL_BASIC, GWR_TARGET_ANY, GWR_NUMERICS_APPROX,
     1e-5, "fold a zero Pad of the spatial axes into the pads of the Conv or AveragePool (count_include_pad 1) reading it"},
    /* end of scale and Pad folding */
    {"fuse_hard_swish", &gwr_ps_pattern_fuse_hard_swish, 40, GWR_LEVEL_EXTENDED, GWR_TARGET_ANY, GWR_NUMERICS_APPROX,
     1e-5, "turn x*Clip(x+3,0,6)/6 and x*HardSigmoid(x) into HardSwish (opset >= 14 or target gwr; else x*HardSigmoid(x)), Clip(x+3,0,6)/6 into HardSigmoid"},
    {"fuse_layer_norm", &gwr_pattern_fuse_layer_norm, 45, GWR_LEVEL_EXTENDED, GWR_TARGET_ANY, GWR_NUMERICS_APPROX,
     1e-5, "turn the exporters' ReduceMean/Sub/Pow/Sqrt/Div chain (and constant gamma, beta) into LayerNormalization "
     "(opset >= 17)"},
    {"fuse_matmul_add", &gwr_ps_pattern_fuse_matmul_add, 35, GWR_LEVEL_EXTENDED, GWR_TARGET_ANY, GWR_NUMERICS_APPROX,
     1e-4, "turn MatMul(a, B) + C, a of rank 2, B and C constant, into Gemm(a, B, C)"},
    {"fuse_gelu", &gwr_ps_pattern_fuse_gelu, 40, GWR_LEVEL_EXTENDED, GWR_TARGET_ANY, GWR_NUMERICS_APPROX, 5e-5,
     "turn the erf and tanh GELU formulas into Gelu (opset >= 20, or any opset for target gwr)"},
    {"fuse_clip_chains", &gwr_pattern_fuse_clip_chains, 42, GWR_LEVEL_BASIC, GWR_TARGET_ANY, GWR_NUMERICS_EXACT, 0,
     "merge Relu(Relu), Clip(Relu), Clip(Clip) into one; Max(x,0) into Relu, Min(Max(x,lo),hi) into Clip"},
    /* A built-in rule file (src/passes/rules/cleanup.rules) as one pass. */
    {"rules_cleanup", &gwr_ps_pattern_rules_cleanup, 44, GWR_LEVEL_BASIC, GWR_TARGET_ANY, GWR_NUMERICS_EXACT, 0,
     "the rules of src/passes/rules/cleanup.rules: Neg(Neg(x)) and Not(Not(x)) to x; Abs(Abs(x)) and Abs(Neg(x)) to Abs(x); "
     "Floor/Ceil/Round of itself to one"},
    /* onnxruntime's CNN fusions (fuse_conv.c): com.microsoft ops, never for target onnx */
    {"fuse_conv_activation", &gwr_pattern_fuse_conv_activation, 25, GWR_LEVEL_EXTENDED,
     GWR_TARGET_ORT | GWR_TARGET_GWR, GWR_NUMERICS_EXACT, 0,
     "turn Conv (or a FusedConv without one) + Relu/Tanh/Sigmoid/LeakyRelu/HardSigmoid/Clip into com.microsoft "
     "FusedConv (float32; constant Clip bounds); + HardSwish or QuickGelu (SiLU) too for target gwr (gwr's extensions)"},
    {"fuse_conv_add_activation", &gwr_pattern_fuse_conv_add_activation, 26, GWR_LEVEL_EXTENDED,
     GWR_TARGET_ORT | GWR_TARGET_GWR, GWR_NUMERICS_EXACT, 0,
     "turn Conv + Add of a residual z of the Conv output's exact shape into FusedConv(x, W, B, z); the activation "
     "after it then fuses too"},
    {"fuse_gemm_activation", &gwr_pattern_fuse_gemm_activation, 25, GWR_LEVEL_EXTENDED,
     GWR_TARGET_ORT | GWR_TARGET_GWR, GWR_NUMERICS_EXACT, 0,
     "turn Gemm + Relu/Tanh/Sigmoid/LeakyRelu/HardSigmoid into com.microsoft FusedGemm (float32)"},
    /* transformer fusions (fuse_transformer.c): onnxruntime's contrib ops for ort and gwr */
    /* level all; extended for target gwr (gwr_levels) */
    {"fuse_skip_layer_norm", &gwr_pattern_fuse_skip_layer_norm, 40, GWR_LEVEL_ALL, GWR_TARGET_ORT | GWR_TARGET_GWR,
     GWR_NUMERICS_APPROX, 1e-4,
     "turn LayerNormalization(a + b [+ bias]) into SkipLayerNormalization (SimplifiedLayerNormalization(a + b) into "
     "SkipSimplifiedLayerNormalization), also when the sum has other readers (they read its input_skip_bias_sum output)"},
    {"fuse_bias_gelu", &gwr_ps_pattern_fuse_bias_gelu, 38, GWR_LEVEL_EXTENDED, GWR_TARGET_ORT | GWR_TARGET_GWR,
     GWR_NUMERICS_APPROX, 1e-5, "turn Gelu(x + bias), bias a constant over the last axis, into BiasGelu (FastGelu for tanh)"},
    {"fuse_matmul_scale", &gwr_pattern_fuse_matmul_scale, 36, GWR_LEVEL_EXTENDED, GWR_TARGET_ORT | GWR_TARGET_GWR,
     GWR_NUMERICS_APPROX, 1e-5,
     "fold Transposes of the last two axes and constant scalar Mul/Div around a MatMul into FusedMatMul "
     "(transA, transB, alpha)"},
    {"fuse_silu", &gwr_ps_pattern_fuse_silu, 40, GWR_LEVEL_EXTENDED, GWR_TARGET_ORT | GWR_TARGET_GWR, GWR_NUMERICS_APPROX,
     1e-5, "turn x * Sigmoid(x) into QuickGelu(x; alpha 1)"},
    {"fuse_rms_norm", &gwr_pattern_fuse_rms_norm, 44, GWR_LEVEL_EXTENDED, GWR_TARGET_ORT | GWR_TARGET_GWR,
     GWR_NUMERICS_APPROX, 1e-5,
     "turn the RMSNorm chain x / Sqrt(ReduceMean(x^2) + eps) [* gamma] into onnxruntime's SimplifiedLayerNormalization"},
    /* dynamically quantized MatMul (fuse_qmatmul.c): the product first, then its DynamicQuantizeLinear */
    {"fuse_matmul_integer_to_float", &gwr_pattern_fuse_matmul_integer_to_float, 42, GWR_LEVEL_EXTENDED,
     GWR_TARGET_ORT | GWR_TARGET_GWR, GWR_NUMERICS_EXACT, 0,
     "turn Cast(MatMulInteger(A, B)) * (a_scale * b_scale) [+ bias] into MatMulIntegerToFloat (B constant, scalar "
     "a_scale and a_zero_point)"},
    {"fuse_dynamic_quantize_matmul", &gwr_pattern_fuse_dynamic_quantize_matmul, 41, GWR_LEVEL_EXTENDED,
     GWR_TARGET_ORT | GWR_TARGET_GWR, GWR_NUMERICS_EXACT, 0,
     "turn MatMulIntegerToFloat(DynamicQuantizeLinear(x), ..) into DynamicQuantizeMatMul(x, ..) when the "
     "DynamicQuantizeLinear has no other reader"},
    {"fuse_transpose_into_gemm", &gwr_pattern_fuse_transpose_into_gemm, 45, GWR_LEVEL_BASIC, GWR_TARGET_ANY,
     GWR_NUMERICS_EXACT, 0, "drop a Transpose([1, 0]) read only by a Gemm's A or B and flip transA / transB"},
    /* attention (fuse_attention.c, merge_qkv.c): the fusion first, so that it
     * sees the MatMuls before a merge (it also takes the merged Split form) */
    {"fuse_attention", &gwr_pattern_fuse_attention, 38, GWR_LEVEL_EXTENDED, GWR_TARGET_ANY, GWR_NUMERICS_APPROX, 1e-4,
     "turn the exporters' scaled-dot-product attention (scale, additive or Where mask, Softmax) into ONNX Attention "
     "(opset >= 23; below it only where lower_attention takes it, targets ort and gwr), the mask kept exactly"},
    {"lower_attention", &gwr_pattern_lower_attention, 37, GWR_LEVEL_EXTENDED, GWR_TARGET_ORT | GWR_TARGET_GWR, GWR_NUMERICS_APPROX, 1e-4, "turn fuse_attention's Attention and the head Reshape/Transposes around it (and q/k/v MatMul + bias) into com.microsoft MultiHeadAttention or Attention, the mask kept exactly"},
    {"merge_qkv_matmuls", &gwr_pattern_merge_qkv_matmuls, 33, GWR_LEVEL_EXTENDED, GWR_TARGET_ANY, GWR_NUMERICS_APPROX,
     1e-5, "turn three or more MatMuls (+ constant bias) of one input by constant weights into one MatMul (+ Add) and a "
     "Split"},
    /* shape chains, constants, transposes (eliminate_shape.c, constants.c, transpose_push.c) */
    {"compose_reshapes", &gwr_pattern_compose_reshapes, 48, GWR_LEVEL_BASIC, GWR_TARGET_ANY, GWR_NUMERICS_EXACT, 0,
     "merge Reshape/Squeeze/Unsqueeze/Flatten chains into one Reshape, one Squeeze/Unsqueeze or none; Flatten to "
     "Reshape"},
    {"fold_shape_dims", &gwr_pattern_fold_shape_dims, 32, GWR_LEVEL_BASIC, GWR_TARGET_ANY, GWR_NUMERICS_EXACT, 0,
     "fold Shape -> Gather/Slice/Concat of known dims into constants; a Reshape target with one dynamic dim gets -1"},
    {"constants_to_initializers", &gwr_pattern_constants_to_initializers, 58, GWR_LEVEL_BASIC, GWR_TARGET_ANY,
     GWR_NUMERICS_EXACT, 0, "write Constant nodes (tensor form) as initializers"},
    {"fold_input_defaults", &gwr_pattern_fold_input_defaults, 64, GWR_LEVEL_BASIC, GWR_TARGET_ANY,
     GWR_NUMERICS_EXACT, 0,
     "make initializers listed as graph inputs constants (target onnx; others with input_defaults fold)"},
    {"compose_slices", &gwr_pattern_compose_slices, 47, GWR_LEVEL_BASIC, GWR_TARGET_ANY, GWR_NUMERICS_EXACT, 0,
     "merge Slice(Slice(x)) on different axes into one Slice of x"},
    {"merge_slices_into_split", &gwr_pattern_merge_slices_into_split, 46, GWR_LEVEL_BASIC, GWR_TARGET_ANY,
     GWR_NUMERICS_EXACT, 0, "replace Slices that cut one axis of x into consecutive parts by one Split"},
    {"push_transpose_through_elementwise", &gwr_pattern_push_transpose_through_elementwise, 49, GWR_LEVEL_BASIC,
     GWR_TARGET_ANY, GWR_NUMERICS_EXACT, 0,
     "move a Transpose up through lone elementwise layers (unary, or with a constant, permuted) to meet "
     "another Transpose: one or none left"},
    /* element-wise chains (ew_chain.c): after every other fusion */
    {"fuse_elementwise_chain", &gwr_pattern_fuse_elementwise_chain, 5, GWR_LEVEL_EXTENDED, GWR_TARGET_GWR,
     GWR_NUMERICS_EXACT, 0,
     "turn chains of 2+ float32 element-wise layers (unary activations and math, Add/Sub/Mul/Div/Max/Min with a scalar, "
     "same-shape or per-channel operand) into one gwr::ElementwiseChain loop"},
    /* the tutorial pattern last: it changes the numbers on purpose (only --only runs it) */
    {"replace_add_with_sub", &gwr_pattern_replace_add_with_sub, 1, GWR_LEVEL_NONE, GWR_TARGET_ANY,
     GWR_NUMERICS_CHANGES, 0, "turn every two-input Add into a Sub (the tutorial pattern; changes the numbers)"},
};

#define NBUILTIN ((int)(sizeof builtins / sizeof builtins[0]))

const char *gwr_pass_level_name(gwr_pass_level level) {
    static const char *const names[] = {"none", "basic", "extended", "all"};
    return (unsigned)level <= GWR_LEVEL_ALL ? names[level] : "unknown";
}

/* Passes whose level differs for target gwr: onnxruntime's
 * SkipLayerNormalization kernel is slower than Add + LayerNormalization
 * (docs/benchmarks.md), gwr's faster (docs/design.md). */
static const struct {
    const char *label;
    gwr_pass_level level;
} gwr_levels[] = {{"fuse_skip_layer_norm", GWR_LEVEL_EXTENDED}};

static gwr_pass_level gwr_level_of(const gwr_pass_info *p) {
    for (size_t i = 0; i < sizeof gwr_levels / sizeof gwr_levels[0]; i++)
        if (!strcmp(gwr_levels[i].label, p->label)) return gwr_levels[i].level;
    return p->level;
}

gwr_pass_level gwr_pass_level_for(const gwr_pass_info *p, unsigned target) {
    if (!p) return GWR_LEVEL_NONE;
    return target == GWR_TARGET_GWR ? gwr_level_of(p) : p->level;
}

/* The level column: "all", or "all/gwr:extended" where target gwr's
 * differs (no space: scripts split the text columns). */
static void level_str(const gwr_pass_info *p, char *buf, size_t size) {
    gwr_pass_level g = gwr_level_of(p);
    if (g == p->level) snprintf(buf, size, "%s", gwr_pass_level_name(p->level));
    else snprintf(buf, size, "%s/gwr:%s", gwr_pass_level_name(p->level), gwr_pass_level_name(g));
}

const gwr_pass_info *gwr_passes_info(int i) { return i >= 0 && i < NBUILTIN ? &builtins[i] : NULL; }
int gwr_passes_count(void) { return NBUILTIN; }
const char *gwr_passes_label(int i) { return i >= 0 && i < NBUILTIN ? builtins[i].label : NULL; }
const char *gwr_passes_summary(int i) { return i >= 0 && i < NBUILTIN ? builtins[i].summary : NULL; }
int gwr_passes_benefit(int i) { return i >= 0 && i < NBUILTIN ? builtins[i].benefit : 0; }

static void targets_str(unsigned t, char *buf, size_t size) {
    snprintf(buf, size, "%s%s%s%s%s", t & GWR_TARGET_ONNX ? "onnx" : "",
             (t & GWR_TARGET_ONNX) && (t & (GWR_TARGET_ORT | GWR_TARGET_GWR)) ? "," : "", t & GWR_TARGET_ORT ? "ort" : "",
             (t & GWR_TARGET_ORT) && (t & GWR_TARGET_GWR) ? "," : "", t & GWR_TARGET_GWR ? "gwr" : "");
}

static void numerics_str(const gwr_pass_info *p, char *buf, size_t size) {
    if (p->numerics == GWR_NUMERICS_EXACT) snprintf(buf, size, "exact");
    else if (p->numerics == GWR_NUMERICS_APPROX) snprintf(buf, size, "within %g", p->tolerance);
    else snprintf(buf, size, "changes");
}

void gwr_passes_print(FILE *out, int markdown) {
    if (!out) return;
    if (markdown)
        fprintf(out, "| label | benefit | level | targets | numerics | what it does |\n| --- | ---: | --- | --- | --- | --- |\n");
    else
        fprintf(out, "%-30s %7s  %-8s  %-12s  %-12s  %s\n", "pattern", "benefit", "level", "targets", "numerics",
                "what it does");
    for (int i = 0; i < NBUILTIN; i++) {
        const gwr_pass_info *p = &builtins[i];
        char tg[32], nu[32], lv[48];
        targets_str(p->targets, tg, sizeof tg);
        numerics_str(p, nu, sizeof nu);
        level_str(p, lv, sizeof lv);
        if (markdown)
            fprintf(out, "| `%s` | %d | %s | %s | %s | %s |\n", p->label, p->benefit, lv, tg, nu, p->summary);
        else
            fprintf(out, "%-30s %7d  %-8s  %-12s  %-12s  %s\n", p->label, p->benefit, lv, tg, nu, p->summary);
    }
}

const gwr_pattern_rewriter *gwr_passes_find(const char *label, int *benefit) {
    for (int i = 0; label && i < NBUILTIN; i++)
        if (!strcmp(builtins[i].label, label)) {
            if (benefit) *benefit = builtins[i].benefit;
            return builtins[i].pattern;
        }
    return NULL;
}

gwr_status gwr_passes_add(gwr_rewrite_manager *m, const char *label) {
    if (!m) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_passes_add: NULL manager");
    int benefit = 0;
    const gwr_pattern_rewriter *p = gwr_passes_find(label, &benefit);
    if (!p) {
        /* As many labels as the message holds; "..." when they do not all fit. */
        char known[400] = "";
        size_t off = 0;
        for (int i = 0; i < NBUILTIN; i++) {
            size_t need = strlen(builtins[i].label) + 2;
            if (off + need + 40 >= sizeof known) {
                snprintf(known + off, sizeof known - off, ", ... (%d in all: gwr rewrite --list)", NBUILTIN);
                break;
            }
            off += (size_t)snprintf(known + off, sizeof known - off, "%s%s", i ? ", " : "", builtins[i].label);
        }
        return rw_manager_error(m, GWR_ERR_NOT_FOUND, "no built-in pattern '%s' (known: %s)", label ? label : "(null)",
                                known);
    }
    return gwr_rewrite_manager_add(m, label, p, benefit);
}
