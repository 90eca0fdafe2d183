/* linalg.c - the row of fuse_matmul_add, whose rules are
 * src/passes/rules/matmul_add.rules (run by rules_pass.c). The row stays in
 * this file for its place in the fuse phase (rows are ordered by phase,
 * then file name): before merge_qkv_matmuls, which must see the MatMul
 * that Gemm absorbs only when it is not one of three. */
#include "passes/pass_table.h"
#include "passes/rules_pass.h"

GWR_PASS(fuse_matmul_add, FUSE, .pattern = &gwr_ps_pattern_fuse_matmul_add, .level = GWR_LEVEL_EXTENDED,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-4,
         .summary = "turn MatMul(a, B) + C, a of rank 2, B and C constant, into Gemm(a, B, C)");
