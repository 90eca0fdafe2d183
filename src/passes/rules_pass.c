/* rules_pass.c - built-in rule files as passes: each embedded file is
 * parsed once (the first time a pass of it runs; the text is parsed at run
 * time like any user file, without the load-time instance check that the
 * test suite runs on these files instead: gwr_rl_parse_builtin) and its
 * rules run through the rules room. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "passes/rules_pass.h"
#include "rules/rules_api.h"
#include "util/util.h"

static gwr_rules **parsed;
static char parse_error[512];
static pthread_once_t parse_once = PTHREAD_ONCE_INIT;

static void parse_all(void) {
    parsed = gwr_calloc((size_t)gwr_ps_rules_nfiles + 1, sizeof *parsed);
    for (int i = 0; parsed && i < gwr_ps_rules_nfiles; i++)
        if (gwr_rl_parse_builtin(gwr_ps_rules_files[i].text, gwr_ps_rules_files[i].name, &parsed[i]) && !parse_error[0])
            snprintf(parse_error, sizeof parse_error, "%s", gwr_last_errmsg());
}

const gwr_rules *gwr_ps_rules_file_get(const char *name) {
    pthread_once(&parse_once, parse_all);
    for (int i = 0; parsed && i < gwr_ps_rules_nfiles; i++)
        if (!strcmp(gwr_ps_rules_files[i].name, name)) {
            if (!parsed[i]) gwr_set_last_error(GWR_ERR_PARSE, "built-in rules: %s", parse_error);
            return parsed[i];
        }
    gwr_set_last_error(GWR_ERR_NOT_FOUND, "built-in rules: no file '%s'%s", name, parsed ? "" : " (out of memory)");
    return NULL;
}

int gwr_ps_rules_file_run(gwr_rewrite_ctx *c, gwr_layer *l) {
    const gwr_rules *r = gwr_ps_rules_file_get(gwr_rewrite_ctx_user(c));
    if (!r) return gwr_rewrite_fail(c, gwr_last_status(), "%s", gwr_last_errmsg());
    return gwr_rl_run_all(r, c, l);
}

static const char *const cleanup_roots[] = {"Neg", "Not", "Abs", "Floor", "Ceil", "Round", NULL};
const gwr_pattern_rewriter gwr_ps_pattern_rules_cleanup = GWR_PS_RULES_PASS("rules_cleanup", "cleanup.rules", cleanup_roots);

/* The optimizer's passes written as rule files, under their old labels. */
static const char *const gelu_roots[] = {"Mul", NULL};
const gwr_pattern_rewriter gwr_ps_pattern_fuse_gelu = GWR_PS_RULES_PASS("fuse_gelu", "gelu.rules", gelu_roots);
static const char *const hard_swish_roots[] = {"Div", "Mul", NULL};
const gwr_pattern_rewriter gwr_ps_pattern_fuse_hard_swish = GWR_PS_RULES_PASS("fuse_hard_swish", "hard_swish.rules", hard_swish_roots);
const gwr_pattern_rewriter gwr_ps_pattern_fuse_silu = GWR_PS_RULES_PASS("fuse_silu", "silu.rules", gelu_roots);
static const char *const bias_gelu_roots[] = {"Gelu", "com.microsoft::Gelu", "com.microsoft::FastGelu", NULL};
const gwr_pattern_rewriter gwr_ps_pattern_fuse_bias_gelu = GWR_PS_RULES_PASS("fuse_bias_gelu", "bias_gelu.rules", bias_gelu_roots);
static const char *const add_roots[] = {"Add", NULL};
const gwr_pattern_rewriter gwr_ps_pattern_fuse_matmul_add = GWR_PS_RULES_PASS("fuse_matmul_add", "matmul_add.rules", add_roots);
static const char *const arith_roots[] = {"Add", "Sub", "Mul", "Div", NULL};
const gwr_pattern_rewriter gwr_ps_pattern_eliminate_noop_arith = GWR_PS_RULES_PASS("eliminate_noop_arith", "noop_arith.rules", arith_roots);
static const char *const transpose_roots[] = {"Transpose", NULL};
const gwr_pattern_rewriter gwr_ps_pattern_compose_transposes = GWR_PS_RULES_PASS("compose_transposes", "transposes.rules", transpose_roots);
static const char *const identity_roots[] = {"Identity", "Dropout", NULL};
const gwr_pattern_rewriter gwr_ps_pattern_eliminate_identity = GWR_PS_RULES_PASS("eliminate_identity", "identity.rules", identity_roots);

/* ---- the pass table's row of cleanup.rules (the rule-file passes that
 * replaced hand-written ones keep their rows where those were) ---- */
#include "passes/pass_table.h"

GWR_PASS(rules_cleanup, CLEANUP, .pattern = &gwr_ps_pattern_rules_cleanup, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_EXACT,
         .summary = "the rules of src/passes/rules/cleanup.rules: Neg(Neg(x)) and Not(Not(x)) to x; Abs(Abs(x)) and "
                    "Abs(Neg(x)) to Abs(x); Floor/Ceil/Round of itself to one");
