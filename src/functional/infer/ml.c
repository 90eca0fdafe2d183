/* ml.c - shape rules of the ai.onnx.ml domain. Binarizer, Imputer and
 * ArrayFeatureExtractor take the generic rule: their output has the dtype
 * of their first input. The others have no rule yet: they output float
 * scores, labels, maps or sequences whatever their input, which the
 * generic rule gets wrong. */

#include "functional/infer/infer_internal.h"

const gwr_fi_entry gwr_fi_rules_ml[] = {
    {GWR_OP_ML_Binarizer, gwr_fi_rule_generic},
    {GWR_OP_ML_Imputer, gwr_fi_rule_generic},
    {GWR_OP_ML_ArrayFeatureExtractor, gwr_fi_rule_generic},
    {GWR_OP_CUSTOM, NULL},
};
