/* constants.c - constants_to_initializers (level basic, every target,
 * exact): a Constant node read from a file (the importer marks it with the
 * layer property onnx.constant_node, so that a plain load and save keeps
 * it a node) is written as an initializer instead, as exporters write
 * weights and as onnxruntime's own optimizer turns them.
 *
 * Only the tensor form (attribute "value") moves: the scalar and list
 * forms (value_float, value_ints, ...) and sparse or string values stay
 * nodes. Not before ONNX IR version 4, where every initializer had to be
 * a graph input too. The values are not touched: exact.
 *
 * fold_input_defaults (level basic, exact): a graph input with a default
 * value (an initializer the file also lists as a graph input) becomes a
 * Constant of the same name and leaves the inputs, so that the passes may
 * fold it as the weight it is. Whether it runs is gwr_optimize's choice
 * (gwr_optimize_options.input_defaults, docs/optimize.md): by default for
 * target onnx only, as onnxsim and onnxslim do; onnxruntime lets a caller
 * override such an initializer from IR version 4 on, so targets ort and gwr
 * keep it an input. Never before IR version 4 (every initializer had to be
 * a graph input then), nor for an input that is also a network output or
 * read only inside subgraphs.
 *
 * Not a rule file: it changes how a constant is written (initializer, graph input), not which
 * layers there are.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gwr/passes.h"
#include "optimize_internal.h"
#include "util/util.h"

/* The root network's IR version from the file (onnx.ir_version), or 0. */
static long ir_version(const gwr_layer *l) {
    const gwr_network *n = gwr_layer_network(l);
    while (gwr_network_parent(n)) n = gwr_network_parent(n);
    const char *v = gwr_network_prop(n, "onnx.ir_version", NULL);
    return v ? strtol(v, NULL, 10) : 0;
}

/* A new CONSTANT layer sharing w's buffer, without the mark, takes l's
 * place and its output's name (so that readers and the file keep it). */
static int replace(gwr_rewrite_ctx *c, gwr_layer *l, const gwr_weights *w) {
    gwr_network *net = gwr_layer_network(l);
    gwr_tensor *old = gwr_layer_output(l, 0), *k = gwr_network_add_constant(net, NULL, w);
    char *name = k ? gwr_strdup(gwr_tensor_name(old)) : NULL;
    gwr_status s = name ? GWR_OK : GWR_ERR_NOMEM;
    if (!s) s = gwr_tensor_replace_all_uses_with(old, k);
    if (!s) s = gwr_layer_mark_as_removed(l);
    /* a network output already swapped names with k; else the removed
     * tensor takes a free name and k the one it had */
    if (!s && strcmp(gwr_tensor_name(k), name)) {
        char tmp[300];
        for (int i = 0; i < 1000; i++) {
            snprintf(tmp, sizeof tmp, "%.250s.removed%d", name, i);
            if (!gwr_network_find_tensor(net, tmp)) break;
        }
        if (!(s = gwr_tensor_set_name(old, tmp))) s = gwr_tensor_set_name(k, name);
    }
    gwr_free(name);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_network_errmsg(net)) : 1;
}

/* The root network's IR version forbids initializers that are not inputs? */
static int ir_before_4(const gwr_layer *l) {
    long ir = ir_version(l);
    return ir && ir < 4;
}

static int fold_default(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_network *net = gwr_layer_network(l);
    gwr_tensor *t = NULL;
    const gwr_weights *w = NULL;
    for (int i = 0; i < gwr_layer_num_inputs(l) && !w; i++) {
        t = gwr_layer_input(l, i);
        if (t && gwr_tensor_is_input(t) && gwr_tensor_network(t) == net && gwr_tensor_output_index(t) < 0)
            w = gwr_tensor_default(t);
    }
    if (!w) return gwr_rewrite_no_match(c, "reads no graph input with a default value");
    if (ir_before_4(l)) return gwr_rewrite_no_match(c, "IR version < 4: initializers must be graph inputs");
    gwr_weights v = *w;
    v.name = NULL;
    char *name = gwr_strdup(gwr_tensor_name(t));
    gwr_tensor *k = name ? gwr_network_add_constant(net, NULL, &v) : NULL;
    gwr_status s = k ? GWR_OK : GWR_ERR_NOMEM;
    if (!s) s = gwr_tensor_replace_all_uses_with(t, k);
    if (!s) s = gwr_network_remove_input(net, t);
    if (!s) s = gwr_tensor_set_name(k, name);
    /* the layer too, as the importer names an initializer's, when free */
    if (!s && !gwr_network_find_layer(net, name)) s = gwr_layer_set_name(gwr_tensor_parent(k), name);
    gwr_free(name);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_network_errmsg(net)) : 1;
}

/* After fold_input_defaults: the inputs with a default that nothing reads
 * (a BatchNormalization's num_batches_tracked, say) leave the root network
 * too, as they would have as constants. Their count, or -1 (message on
 * net). */
int64_t gwr_opt_drop_unread_defaults(gwr_network *net) {
    int64_t n = 0;
    const char *v = gwr_network_prop(net, "onnx.ir_version", NULL);
    long ir = v ? strtol(v, NULL, 10) : 0;
    if (ir && ir < 4) return 0;
    for (int i = gwr_network_num_inputs(net) - 1; i >= 0; i--) {
        gwr_tensor *t = gwr_network_input(net, i);
        if (!gwr_tensor_default(t) || gwr_tensor_num_users(t) || gwr_tensor_output_index(t) >= 0) continue;
        if (gwr_network_remove_input(net, t)) return -1;
        n++;
    }
    return n;
}

const gwr_pattern_rewriter gwr_pattern_fold_input_defaults = {
    .name = "fold_input_defaults",
    .match_and_rewrite = fold_default,
};

static int to_initializer(gwr_rewrite_ctx *c, gwr_layer *l) {
    if (gwr_layer_op_id(l) != GWR_OP_Constant || *gwr_layer_domain(l))
        return gwr_rewrite_no_match(c, "not a Constant");
    if (!gwr_layer_prop(l, "onnx.constant_node", NULL)) return gwr_rewrite_no_match(c, "already an initializer");
    const gwr_weights *w;
    if (gwr_layer_num_attrs(l) != 1 || gwr_layer_get_tensor(l, "value", &w) || w->dtype == GWR_STRING)
        return gwr_rewrite_no_match(c, "not the tensor form of Constant");
    if (ir_before_4(l)) return gwr_rewrite_no_match(c, "IR version < 4: initializers must be graph inputs");
    return replace(c, l, w);
}

static const char *const constant_ops[] = {"Constant", NULL};

const gwr_pattern_rewriter gwr_pattern_constants_to_initializers = {
    .name = "constants_to_initializers",
    .root_ops = constant_ops,
    .match_and_rewrite = to_initializer,
};

/* ---- the pass table's rows (pass_table.h) ---- */
#include "passes/pass_table.h"

GWR_PASS(fold_input_defaults, CLEANUP, .pattern = &gwr_pattern_fold_input_defaults, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_EXACT,
         .summary = "make initializers listed as graph inputs constants (target onnx; others with input_defaults "
                    "fold)");

GWR_PASS(constants_to_initializers, CLEANUP, .pattern = &gwr_pattern_constants_to_initializers, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_EXACT,
         .summary = "write Constant nodes (tensor form) as initializers");
