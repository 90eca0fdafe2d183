/* pass_table.h - how a pass file declares its row of the pass table
 * (gwr_pass_info, gwr/passes.h). Private to src/passes.
 *
 * At the end of the pass's file:
 *
 *     #include "passes/pass_table.h"
 *     GWR_PASS(fuse_gelu, FUSE, .pattern = &fuse_gelu_rw, .level = GWR_LEVEL_EXTENDED,
 *              .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_APPROX, .tolerance = 5e-5,
 *              .summary = "turn the erf and tanh GELU formulas into Gelu");
 *
 * The label (a C identifier: the name `gwr rewrite --pattern`, `gwr
 * optimize --only` and gwr_passes_add take) and the phase (CLEANUP, FOLD,
 * FUSE, LOWER or KERNEL) come first, on the line that starts with
 * GWR_PASS(; the other fields of gwr_pass_info follow by name (level_gwr
 * only where target gwr's level differs). The build (cmake/pass_list.cmake)
 * collects those lines of src/passes into pass_list.inc, which registry.c
 * turns into the table: phase by phase, within a phase by file name, then
 * in the file's order. The row is a global of hidden visibility, not part
 * of the library's API; the pattern itself may be static in the file. Two
 * rows with one label do not link. */
#ifndef GWR_PASS_TABLE_H
#define GWR_PASS_TABLE_H

#include "gwr/passes.h"

#define GWR_PASS(label_, phase_, ...)                          \
    extern const gwr_pass_info gwr_pass_row_##label_;          \
    const gwr_pass_info gwr_pass_row_##label_ = {              \
        .label = #label_, .phase = GWR_PHASE_##phase_, __VA_ARGS__}

#endif
