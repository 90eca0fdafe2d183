/* text.c - shape rules of the text ops, as exec/kernels/text.c.
 * StringNormalizer is strings in and out: the generic rule, named. TfIdfVectorizer
 * has no rule yet: its output is float whatever its input, which the
 * generic rule gets wrong (tests/unit/op_coverage_expected_missing.txt). */

#include "functional/infer/infer_internal.h"

const gwr_fi_entry gwr_fi_rules_text[] = {
    {GWR_OP_StringNormalizer, gwr_fi_rule_generic},
    {GWR_OP_CUSTOM, NULL},
};
