/* fold_if.c - fold_constant_if (level basic, every target, exact): an If
 * whose condition is a constant single-element bool (a literal, or one
 * that fold_constants made, e.g. Silero VAD's Equal(sr, 16000) once sr is
 * known) is replaced by the branch it takes. The branch's layers are
 * copied into the If's network with fresh names
 * (gwr_network_inline_subgraph: reads of enclosing tensors stay, nested
 * bodies come along) and the If's readers read the copies of the branch
 * outputs; an If output that is a network output keeps its name
 * (gwr_match_replace_layer swaps the names, or puts an Identity in when
 * the branch outputs an enclosing tensor). Each rewrite removes one If, so
 * the pass converges.
 *
 * Not a rule file: it copies a subgraph (the branch taken) into the network, which a rule's
 * replacement cannot do.
 */
#include <stdlib.h>

#include "gwr/match.h"
#include "gwr/passes.h"
#include "util/util.h"

static int fold_constant_if(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_tensor *cond = gwr_layer_input(l, 0);
    gwr_match_const k;
    if (!cond || !gwr_match_const_get(cond, &k)) return gwr_rewrite_no_match(c, "the condition is not a constant");
    /* The spec: cond is a bool tensor with a single element. */
    if (k.dtype != GWR_BOOL || k.numel != 1)
        return gwr_rewrite_no_match(c, "the condition is not a single-element bool");
    const char *branch = gwr_match_const_at(&k, 0) != 0 ? "then_branch" : "else_branch";
    gwr_network *g = NULL;
    if (gwr_layer_get_graph(l, branch, &g) || !g) return gwr_rewrite_no_match(c, "no %s graph", branch);
    int n = gwr_layer_num_outputs(l);
    if (gwr_network_num_inputs(g) || gwr_network_num_outputs(g) != n)
        return gwr_rewrite_no_match(c, "%s has inputs or %d outputs for %d", branch, gwr_network_num_outputs(g), n);
    for (int i = 0; i < n; i++) {
        gwr_dtype a = gwr_tensor_dtype(gwr_layer_output(l, i)), b = gwr_tensor_dtype(gwr_network_output(g, i));
        if (a != GWR_UNDEFINED && b != GWR_UNDEFINED && a != b)
            return gwr_rewrite_no_match(c, "output %d is %s, %s's is %s", i, gwr_dtype_name(a), branch,
                                        gwr_dtype_name(b));
    }
    gwr_tensor **outs = gwr_calloc((size_t)(n ? n : 1), sizeof *outs);
    if (!outs) return gwr_rewrite_fail(c, GWR_ERR_NOMEM, "out of memory");
    gwr_status s = gwr_network_inline_subgraph(g, outs);
    if (s) {
        gwr_free(outs);
        return gwr_rewrite_fail(c, s, "%s", gwr_network_errmsg(gwr_layer_network(l)));
    }
    s = gwr_match_replace_layer(l, n, outs);
    gwr_free(outs);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}

static const char *const if_ops[] = {"If", NULL};

const gwr_pattern_rewriter gwr_pattern_fold_constant_if = {
    .name = "fold_constant_if",
    .root_ops = if_ops,
    .match_and_rewrite = fold_constant_if,
};

/* ---- the pass table's row (pass_table.h) ---- */
#include "passes/pass_table.h"

GWR_PASS(fold_constant_if, FOLD, .pattern = &gwr_pattern_fold_constant_if, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_EXACT,
         .summary = "replace an If whose condition is a constant by the layers of the branch it takes");
