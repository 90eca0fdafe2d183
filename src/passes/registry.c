/* registry.c - the built-in rewrite patterns by label, for
 * gwr_passes_add and `gwr rewrite --pattern LABEL`. */
#include <string.h>

#include "gwr/passes.h"
#include "rewrite/rewrite_api.h"

typedef struct builtin {
    const char *label;
    const gwr_pattern_rewriter *pattern;
    int benefit;
    const char *summary;
} builtin;

/* Benefits: the fusion first, so that it sees the Add before
 * replace_add_with_sub turns it into a Sub. */
static const builtin builtins[] = {
    {"fuse_attention_with_bias", &gwr_pattern_fuse_attention_with_bias, 20,
     "fold a constant Add feeding a GPTAttention's qkv into its qkv_bias"},
    {"gpt_attention_remove_padding", &gwr_pattern_gpt_attention_remove_padding, 10,
     "re-create GPTAttention plugins in remove-padding mode (args batch_size, in_len, hidden_size)"},
    {"fold_constants", &gwr_pattern_fold_constants, 30,
     "compute layers whose inputs are all constants into constants (arg fold_max_bytes, default 16 MiB)"},
    {"replace_add_with_sub", &gwr_pattern_replace_add_with_sub, 1,
     "turn every two-input Add into a Sub (the tutorial pattern; changes the numbers)"},
};

#define NBUILTIN ((int)(sizeof builtins / sizeof builtins[0]))

int gwr_passes_count(void) { return NBUILTIN; }
const char *gwr_passes_label(int i) { return i >= 0 && i < NBUILTIN ? builtins[i].label : NULL; }
const char *gwr_passes_summary(int i) { return i >= 0 && i < NBUILTIN ? builtins[i].summary : NULL; }
int gwr_passes_benefit(int i) { return i >= 0 && i < NBUILTIN ? builtins[i].benefit : 0; }

const gwr_pattern_rewriter *gwr_passes_find(const char *label, int *benefit) {
    for (int i = 0; label && i < NBUILTIN; i++)
        if (!strcmp(builtins[i].label, label)) {
            if (benefit) *benefit = builtins[i].benefit;
            return builtins[i].pattern;
        }
    return NULL;
}

gwr_status gwr_passes_add(gwr_rewrite_manager *m, const char *label) {
    if (!m) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_passes_add: NULL manager");
    int benefit = 0;
    const gwr_pattern_rewriter *p = gwr_passes_find(label, &benefit);
    if (!p) {
        char known[256] = "";
        size_t off = 0;
        for (int i = 0; i < NBUILTIN && off < sizeof known; i++) {
            int w = snprintf(known + off, sizeof known - off, "%s%s", i ? ", " : "", builtins[i].label);
            if (w < 0) break;
            off += (size_t)w;
        }
        return rw_manager_error(m, GWR_ERR_NOT_FOUND, "no built-in pattern '%s' (known: %s)", label ? label : "(null)",
                                known);
    }
    return gwr_rewrite_manager_add(m, label, p, benefit);
}
