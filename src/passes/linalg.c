/* linalg.c - fuse_matmul_add: a MatMul by a constant matrix followed by the
 * Add of a constant bias becomes one Gemm.
 *
 *   Add(MatMul(a, B), C)  or  Add(C, MatMul(a, B))  ->  Gemm(a, B, C)   (alpha = beta = 1)
 *
 * Gemm multiplies matrices only: a must have known rank 2 (a MatMul of a
 * batch stays), B must be a constant of rank 2 (a weight; a non-constant B
 * stays, as onnxruntime's MatMulAddFusion would too for the CPU), and C a
 * constant that broadcasts unidirectionally to [M, N] (rank <= 2, each dim
 * 1 or the output's extent; a dim 0 other than 1 needs M known), so the
 * Add's result keeps the MatMul's shape: a C that broadcasts the result to
 * a bigger shape stays. a, B, C and the Add's result share one float dtype.
 * The MatMul's output must have no other reader and not be a network output
 * (the matcher's single-reader rule). Gemm's C broadcasts from opset 7: a
 * network importing an older default opset keeps its MatMul. */
#include <string.h>

#include "gwr/match.h"
#include "gwr/passes.h"
#include "util/util.h"

enum { A, B, C, NCAP };

static const gwr_match_node matmul_add[] = {
    GWR_M_OP("MatMul", GWR_M_CAP(A), GWR_M_CONST(B)),
    GWR_M_OP("Add", GWR_M_NODE(0), GWR_M_CONST(C)),
};
static const gwr_match_pattern table = {"matmul_add", GWR_M_NODES(matmul_add), NULL, NULL};

/* NULL when the match fits Gemm, else why not. */
static const char *check(const gwr_match *m) {
    gwr_tensor *a = m->captures[A], *y = gwr_layer_output(m->layers[1], 0);
    gwr_dtype dt = gwr_tensor_dtype(a);
    if (!gwr_match_dtype_real_float(dt)) return "a is not a float tensor";
    if (gwr_tensor_rank(a) != 2) return "a is not known to be of rank 2";
    gwr_match_const b, c;
    if (!gwr_match_const_get(m->captures[B], &b) || b.rank != 2 || b.dtype != dt) return "B is not a 2-D constant of a's dtype";
    if (!gwr_match_const_get(m->captures[C], &c) || c.rank > 2 || c.dtype != dt) return "C is not a constant of a's dtype of rank <= 2";
    if (gwr_tensor_dtype(y) != dt) return "the Add's result is of another dtype";
    gwr_dim md = gwr_tensor_dim(a, 0);
    int64_t n = b.dims[1];
    /* C right-aligned against [M, N]: its last dim is 1 or N, a dim before it 1 or the known M */
    if (c.rank >= 1 && c.dims[c.rank - 1] != 1 && c.dims[c.rank - 1] != n) return "C does not broadcast along N";
    if (c.rank == 2 && c.dims[0] != 1 && (!GWR_DIM_IS_KNOWN(md) || c.dims[0] != md))
        return "C's dim 0 is not 1 or a's known M";
    return NULL;
}

static int fuse(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    if (*gwr_layer_domain(l) || gwr_layer_num_outputs(l) != 1) return gwr_rewrite_no_match(c, "not an ONNX Add");
    int64_t opset = gwr_network_opset(net, "");
    if (opset >= 0 && opset < 7) return gwr_rewrite_no_match(c, "Gemm's C broadcasts from opset 7");
    gwr_match m;
    int rc = gwr_match_layer(&table, l, &m);
    if (rc < 0) return gwr_rewrite_fail(c, (gwr_status)-rc, "%s", gwr_last_errmsg());
    if (!rc) {
        char why[256];
        gwr_match_why(&m, why, sizeof why);
        return gwr_rewrite_no_match(c, "%s", why);
    }
    const char *why = check(&m);
    if (why) return gwr_rewrite_no_match(c, "%s", why);
    gwr_tensor *y = gwr_gemm(net, m.captures[A], m.captures[B], m.captures[C], 1.0f, 1.0f, 0, 0);
    if (!y) return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "%s", gwr_network_errmsg(net));
    gwr_status s = gwr_match_replace(&m, 1, &y);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}

static const char *const roots[] = {"Add", NULL};

const gwr_pattern_rewriter gwr_pattern_fuse_matmul_add = {
    .name = "fuse_matmul_add",
    .root_ops = roots,
    .match_and_rewrite = fuse,
};

/* ---- the pass table's row (pass_table.h) ---- */
#include "passes/pass_table.h"

GWR_PASS(fuse_matmul_add, FUSE, .pattern = &gwr_pattern_fuse_matmul_add, .level = GWR_LEVEL_EXTENDED,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-4,
         .summary = "turn MatMul(a, B) + C, a of rank 2, B and C constant, into Gemm(a, B, C)");
