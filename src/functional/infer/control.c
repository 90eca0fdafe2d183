/* control.c - the shape rule of control flow (If, Loop, Scan) and of the
 * sequence and optional ops: none is computed here. Their outputs are
 * sequences, optionals or the values of subgraphs, whose types the
 * importer sets; a plain tensor type guessed from the first input, as the
 * generic rule would, would be wrong. */

#include "functional/infer/infer_internal.h"

/* Leaves the outputs' types as they were set. */
static gwr_status infer_keep_declared(ictx *c) {
    (void)c;
    return GWR_OK;
}

const gwr_fi_entry gwr_fi_rules_control[] = {
    {GWR_OP_If, infer_keep_declared},
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
