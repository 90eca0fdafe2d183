/* pass_util.h - what the optimizer's passes (src/passes) share beyond the
 * public match helpers: building constants from computed values, which
 * needs the executor's dtype conversions. Private to src/passes. */
#ifndef GWR_PASS_UTIL_H
#define GWR_PASS_UTIL_H

#include "gwr/gwr.h"
#include "rules/rules_api.h"

/* A new CONSTANT layer of dtype dt and shape dims holding the numel(dims)
 * doubles of v, each rounded once to dt (as gwr_value_set_f64 rounds), or,
 * with v NULL, `fill` everywhere. Its output, or NULL: out of memory
 * (gwr_last_errmsg) or refused by the network (message on net). The one
 * copy lives in the rules room (its replacements compute constants too). */
static inline gwr_tensor *gwr_ps_const_new(gwr_network *net, gwr_dtype dt, int rank, const int64_t *dims,
                                           const double *v, double fill) {
    return gwr_rl_const_new(net, dt, rank, dims, v, fill);
}

/* The optimizer's target and the sole reader are the match room's
 * (gwr_match_target, gwr_match_sole_reader); these names stay for code
 * written against them. */
#define gwr_ps_target(c) gwr_match_target(c)
#define gwr_ps_sole_reader(t) gwr_match_sole_reader(t)

/* Does the optimizer's target take onnxruntime's com.microsoft contrib ops
 * (targets ort and gwr)? */
static inline int gwr_ps_target_contrib(gwr_rewrite_ctx *c) {
    return (gwr_match_target(c) & (GWR_TARGET_ORT | GWR_TARGET_GWR)) != 0;
}

/* fuse_qdq.c: is DequantizeLinear dq the weight's (or a Conv's int32
 * bias's) of groups that the planned rows `which` (GWR_PS_QDQ_*) fuse, at
 * every reader? fold_constants leaves such a one unfolded (manager arg
 * "fuse_qdq": which rows gwr_optimize planned), so that the weights reach
 * the fusion still quantized. */
enum { GWR_PS_QDQ_MATMUL = 1, GWR_PS_QDQ_CONV = 2 };
int gwr_ps_qdq_takes(gwr_layer *dq, int which);

/* ReduceMean l reduces exactly the last axis of a rank-r input: its axes
 * attribute, or else its constant axes input (from opset 18; int64 or
 * int32), is [-1] or [r - 1] (not both, not neither). */
int gwr_ps_reduces_last_axis(const gwr_layer *l, const gwr_tensor *axes_in, int r);

/* The perm of Transpose l over an input of rank r (absent: the reverse,
 * which needs r >= 0) into p (GWR_MAX_RANK entries); the count, or -1 when
 * it is not a permutation of r axes. */
int gwr_ps_transpose_perm(const gwr_layer *l, int r, int64_t *p);

/* The weight layouts that scale folding rewrites (scale.c, fold_scale.c). */
enum { GWR_PS_W_CONV, GWR_PS_W_CONVT, GWR_PS_W_GEMM, GWR_PS_W_MATMUL };
/* The output channel that element i of a weight of `kind` (dims, numel)
 * feeds: Conv W [C_out, C_in/group, k...] dim 0; ConvTranspose W
 * [C_in, C_out/group, k...] group-wise; Gemm B [K, N] or (trans_b) [N, K];
 * MatMul W [K, N]: the column. */
int64_t gwr_ps_weight_channel(int kind, const int64_t *dims, int64_t numel, int64_t group, int trans_b, int64_t i);

/* How a constant weight w of a producer p of `kind` maps to its output
 * channels: nch channels; Conv W [C_out, ...] (rank >= 3), ConvTranspose W
 * [C_in, C_out/group, ...] (rank >= 3, C_in a multiple of group), Gemm B
 * 2-D with transB and beta (its optional C, `bias`, must be constant along
 * M), MatMul W 2-D [K, N]. */
typedef struct gwr_ps_layout {
    int64_t nch, group, trans_b;
    float beta; /* Gemm's, else 1 */
} gwr_ps_layout;
/* Fills *lo; NULL when w fits the producer's rules, else why not. */
const char *gwr_ps_weight_layout(int kind, const gwr_layer *p, const gwr_match_const *w, const gwr_tensor *bias,
                                 gwr_ps_layout *lo);

#endif
