/* control.c - the shape rule of control flow (If, Loop, Scan) and of the
 * sequence and optional ops: none is computed here. Their outputs are
 * sequences, optionals or the values of subgraphs, whose types the
 * importer sets; a plain tensor type guessed from the first input, as the
 * generic rule would, would be wrong. If alone fills an output left
 * untyped from what both branches agree on. */

#include "functional/infer/infer_internal.h"

/* Leaves the outputs' types as they were set. */
static gwr_status infer_keep_declared(ictx *c) {
    (void)c;
    return GWR_OK;
}

/* If: an output the file left untyped takes the type both branches agree
 * on (dtype, rank; a dim where they differ is unknown), so that what reads
 * it infers too and nothing is exported with an element type nobody knows.
 * Declared types stay as they are. */
static gwr_status infer_if(ictx *c) {
    gwr_network *g[2];
    if (gwr_layer_get_graph(c->l, "then_branch", &g[0]) || gwr_layer_get_graph(c->l, "else_branch", &g[1]))
        return GWR_OK;
    for (int i = 0; i < c->nout; i++) {
        gwr_tensor *y = gwr_layer_output(c->l, i);
        if (!y || gwr_tensor_kind(y) != GWR_VALUE_TENSOR || gwr_tensor_dtype(y) != GWR_UNDEFINED ||
            gwr_tensor_rank(y) >= 0 || i >= gwr_network_num_outputs(g[0]) || i >= gwr_network_num_outputs(g[1]))
            continue;
        gwr_tensor *a = gwr_network_output(g[0], i), *b = gwr_network_output(g[1], i);
        gwr_dtype dt = dt_of(a);
        if (gwr_tensor_kind(a) != GWR_VALUE_TENSOR || gwr_tensor_kind(b) != GWR_VALUE_TENSOR || dt == GWR_UNDEFINED ||
            dt_of(b) != dt)
            continue;
        shp sa, sb;
        gwr_fi_shp_get(a, &sa);
        gwr_fi_shp_get(b, &sb);
        int same_rank = sa.rank >= 0 && sa.rank == sb.rank;
        for (int d = 0; same_rank && d < sa.rank; d++)
            if (sa.d[d] != sb.d[d]) sa.d[d] = GWR_DIM_UNKNOWN;
        gwr_status st = gwr_fi_put(c, i, dt, same_rank ? &sa : NULL);
        if (st) return st;
    }
    return GWR_OK;
}

const gwr_fi_entry gwr_fi_rules_control[] = {
    {GWR_OP_If, infer_if},
    {GWR_OP_Loop, infer_keep_declared},
    {GWR_OP_Scan, infer_keep_declared},
    {GWR_OP_SequenceConstruct, infer_keep_declared},
    {GWR_OP_SequenceEmpty, infer_keep_declared},
    {GWR_OP_SequenceAt, infer_keep_declared},
    {GWR_OP_SequenceInsert, infer_keep_declared},
    {GWR_OP_SequenceErase, infer_keep_declared},
    {GWR_OP_SequenceLength, infer_keep_declared},
    {GWR_OP_SequenceMap, infer_keep_declared},
    {GWR_OP_SplitToSequence, infer_keep_declared},
    {GWR_OP_ConcatFromSequence, infer_keep_declared},
    {GWR_OP_Optional, infer_keep_declared},
    {GWR_OP_OptionalHasElement, infer_keep_declared},
    {GWR_OP_OptionalGetElement, infer_keep_declared},
    {GWR_OP_CUSTOM, NULL},
};
