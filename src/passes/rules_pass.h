/* rules_pass.h - a built-in rule file (a .rules file of src/passes/rules/, embedded
 * by cmake/embed_rules.cmake) run as one pass of the pass table. Private
 * to src/passes. */
#ifndef GWR_RULES_PASS_H
#define GWR_RULES_PASS_H

#include "gwr/gwr.h"

typedef struct gwr_ps_rules_file {
    const char *name;  /* "cleanup.rules" */
    const char *text;
} gwr_ps_rules_file;

/* The embedded files (generated: builtin_rules.c). */
extern const gwr_ps_rules_file gwr_ps_rules_files[];
extern const int gwr_ps_rules_nfiles;

/* The parsed rules of an embedded file (parsed once per process, kept to
 * its end), or NULL with the message in gwr_last_errmsg(). */
const gwr_rules *gwr_ps_rules_file_get(const char *name);

/* match_and_rewrite of a rule-file pass: the rewriter's user is the file
 * name; every rule of the file rooted on l's op is tried, higher benefit
 * first. roots: the root ops of the file's rules, a NULL-terminated list
 * (test_rules_builtin checks it against the parsed file). */
int gwr_ps_rules_file_run(gwr_rewrite_ctx *c, gwr_layer *l);
#define GWR_PS_RULES_PASS(label, file, roots) {.name = (label), .root_ops = (roots), .match_and_rewrite = gwr_ps_rules_file_run, .user = (void *)(file)}

/* The pass of src/passes/rules/cleanup.rules. */
extern const gwr_pattern_rewriter gwr_ps_pattern_rules_cleanup;
/* The optimizer's passes that are rule files (gelu.rules, ...). */
extern const gwr_pattern_rewriter gwr_ps_pattern_fuse_gelu, gwr_ps_pattern_fuse_hard_swish, gwr_ps_pattern_fuse_silu,
    gwr_ps_pattern_fuse_bias_gelu, gwr_ps_pattern_fuse_matmul_add, gwr_ps_pattern_eliminate_noop_arith,
    gwr_ps_pattern_compose_transposes, gwr_ps_pattern_eliminate_identity;

#endif
