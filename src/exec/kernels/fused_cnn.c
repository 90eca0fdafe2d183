/* fused_cnn.c - onnxruntime's CNN fusions (com.microsoft): FusedConv and
 * FusedGemm.
 *
 *   FusedConv(X, W, B?, Z?)  Y = act(Conv(X, W, B) + Z)   (Z of Y's exact shape)
 *   FusedGemm(A, B, C?)      Y = act(Gemm(A, B, C))
 *
 * as onnxruntime's CPU kernels compute them (Z is added before the
 * activation). The Conv and the Gemm are the Conv and Gemm kernels
 * themselves (gwr_ku_conv_kernel, gwr_ku_gemm_kernel: the layer carries
 * their attributes); the sum and the activation then run in place on the
 * output, with the expressions of the Add, Relu, LeakyRelu, Sigmoid,
 * HardSigmoid, Tanh and Clip kernels, so that a fused layer gives the
 * unfused layers' bits on this executor (act_rows.c has those rows; for
 * float32 and float64 the Conv runs them on each output tile, conv.c).
 * float16 and bfloat16 round after the sum and after the activation, as
 * the separate layers would.
 *
 * Activations: FusedConv's "activation" with its "activation_params"
 * (LeakyRelu alpha; Clip min, max; HardSigmoid alpha, beta); FusedGemm's
 * with "activation_alpha" and "activation_beta" (LeakyRelu alpha, default
 * 0.01; HardSigmoid alpha and beta, default 0.2 and 0.5). FusedConv
 * also takes "HardSwish" (no parameters) and "QuickGelu" (alpha), gwr
 * extensions that onnxruntime's FusedConv refuses (QuickGelu in float16 /
 * bfloat16 goes through float32 here, through double in its own kernel): `gwr optimize --target gwr` emits it
 * for this executor only. */
#include <stdint.h>
#include <string.h>

#include "exec/exec_internal.h"
#include "exec/kernels/kernel_util.h"

#define CHUNK 256

typedef gwr_ku_act_kind act_kind;
typedef gwr_ku_act act_spec;

typedef struct act_row {
    const char *name;
    act_kind kind;
    int nparams;  /* FusedConv's activation_params count */
    int for_gemm; /* FusedGemm has it (onnxruntime's functors: no Clip) */
} act_row;

static const act_row acts[] = {
    {"Relu", GWR_KU_ACT_RELU, 0, 1},      {"Tanh", GWR_KU_ACT_TANH, 0, 1}, {"Sigmoid", GWR_KU_ACT_SIGMOID, 0, 1},
    {"LeakyRelu", GWR_KU_ACT_LEAKY, 1, 1}, {"Clip", GWR_KU_ACT_CLIP, 2, 0}, {"HardSigmoid", GWR_KU_ACT_HSIG, 2, 1},
    /* gwr's extension (onnxruntime refuses it): FusedConv only, no
     * parameter (act_rows.c applies the HardSwish kernel's 1/6 and 1/2) */
    {"HardSwish", GWR_KU_ACT_HSWISH, 0, 0},
    /* gwr's extension: com.microsoft's QuickGelu x * sigmoid(alpha x), the
     * SiLU at alpha 1 (fuse_silu's); activation_params [alpha] */
    {"QuickGelu", GWR_KU_ACT_QGELU, 1, 0},
};

/* The layer's activation into *a; GWR_OK, or the failure recorded. */
static gwr_status read_activation(gwr_kctx *k, int gemm, act_spec *a) {
    const char *name = gwr_k_string(k, "activation", NULL);
    memset(a, 0, sizeof *a);
    if (!name && !gemm) return GWR_OK;
    if (!name) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attribute 'activation' is required");
    const act_row *r = NULL;
    for (size_t i = 0; i < sizeof acts / sizeof *acts && !r; i++)
        if (!strcmp(acts[i].name, name) && (!gemm || acts[i].for_gemm)) r = &acts[i];
    if (!r) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "activation '%.64s' is not supported", name);
    a->kind = r->kind;
    if (gemm) {
        a->p[0] = gwr_k_float(k, "activation_alpha", r->kind == GWR_KU_ACT_LEAKY ? 0.01f : 0.2f);
        a->p[1] = gwr_k_float(k, "activation_beta", 0.5f);
        return GWR_OK;
    }
    const float *v = NULL;
    int64_t n = gwr_k_floats(k, "activation_params", &v);
    if (n != r->nparams && r->nparams)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "activation %s needs %d activation_params, %lld given", name,
                          r->nparams, (long long)(n < 0 ? 0 : n));
    for (int i = 0; i < r->nparams; i++) a->p[i] = v[i];
    return GWR_OK;
}

/* y = act(y + z) in place: kernel_util.h's rows (act_rows.c) */
#define act_f32 gwr_ku_act_f32
#define act_f64 gwr_ku_act_f64

/* float16 / bfloat16: through float32 in chunks, rounded after the sum
 * (the Add's output) and after the activation. */
static void act_half(const act_spec *a, gwr_value *y, const gwr_value *z) {
    float yf[CHUNK], zf[CHUNK];
    uint16_t *yh = y->data;
    act_spec none = {.kind = GWR_KU_ACT_NONE};
    for (int64_t off = 0; off < y->numel; off += CHUNK) {
        int64_t n = y->numel - off < CHUNK ? y->numel - off : CHUNK;
        gwr_ku_half_to_f32(y->dtype, yh + off, 1, yf, n);
        if (z) {
            gwr_ku_half_to_f32(z->dtype, (const uint16_t *)z->data + off, 1, zf, n);
            act_f32(&none, yf, NULL, zf, n);
            gwr_ku_f32_to_half(y->dtype, yf, yh + off, n);
            gwr_ku_half_to_f32(y->dtype, yh + off, 1, yf, n);
        }
        act_f32(a, yf, NULL, NULL, n);
        gwr_ku_f32_to_half(y->dtype, yf, yh + off, n);
    }
}

/* y = act(y + z): z, when given, of y's dtype and shape. */
static gwr_status finish(gwr_kctx *k, const act_spec *a, const gwr_value *z) {
    gwr_value *y = k->out[0];
    if (z) {
        if (z->dtype != y->dtype)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "Z is %s, Y is %s", gwr_dtype_name(z->dtype),
                              gwr_dtype_name(y->dtype));
        int same = z->rank == y->rank;
        for (int i = 0; same && i < y->rank; i++) same = z->dims[i] == y->dims[i];
        if (!same) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "Z is not of the output's shape");
    }
    if (!z && a->kind == GWR_KU_ACT_NONE) return GWR_OK;
    if (y->dtype == GWR_FLOAT32) act_f32(a, y->data, NULL, z ? z->data : NULL, y->numel);
    else if (y->dtype == GWR_FLOAT64) act_f64(a, y->data, NULL, z ? z->data : NULL, y->numel);
    else if (gwr_ku_is_half(y->dtype)) act_half(a, y, z);
    else return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "dtype %s is not supported", gwr_dtype_name(y->dtype));
    return GWR_OK;
}

/* float32 / float64: the sum and the activation run inside the Conv, on
 * each output tile while it is in cache (conv.c); half types here. */
static gwr_status k_fused_conv(gwr_kctx *k) {
    act_spec a;
    int done = 0;
    const gwr_value *z = gwr_ku_opt(k, 3);
    gwr_status st = read_activation(k, 0, &a);
    if (!st) st = gwr_ku_conv_epilogue_kernel(k, &a, z, &done);
    return st ? st : done ? GWR_OK : finish(k, &a, z);
}

static gwr_status k_fused_gemm(gwr_kctx *k) {
    act_spec a;
    gwr_status st = read_activation(k, 1, &a);
    if (!st) st = gwr_ku_gemm_kernel(k);
    return st ? st : finish(k, &a, NULL);
}

const gwr_kernel_entry gwr_kernels_fused_cnn[] = {
    GWR_KERNEL(MS_FusedConv, k_fused_conv, .flags = GWR_KF_BLAS, .prepare = gwr_ku_conv_prepare,
               .prep_free = gwr_ku_conv_prep_free),
    GWR_KERNEL(MS_FusedGemm, k_fused_gemm, .flags = GWR_KF_BLAS, .prepare = gwr_ku_mm_prepare,
               .prep_free = gwr_ku_mm_prep_free),
    {.fn = NULL},
};
