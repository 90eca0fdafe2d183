/* signal.c - shape rules of signal processing. DFT and STFT take the
 * generic rule: their output has the dtype of their first input (the
 * signal), and its shape is left unknown. The window functions (HannWindow,
 * HammingWindow, BlackmanWindow) and MelWeightMatrix have no rule yet:
 * their dtype is the output_datatype attribute, not their first input's. */

#include "functional/infer/infer_internal.h"

const gwr_fi_entry gwr_fi_rules_signal[] = {
    {GWR_OP_DFT, gwr_fi_rule_generic},
    {GWR_OP_STFT, gwr_fi_rule_generic},
    {GWR_OP_CUSTOM, NULL},
};
