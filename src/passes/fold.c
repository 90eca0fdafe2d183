/* fold.c - fold_constants: a layer whose inputs are all constants becomes
 * CONSTANT layers holding its outputs, computed by the executor's kernel
 * (gwr_exec_layer). The driver revisits the readers of the new constants,
 * so chains fold in one run. Shape of a tensor whose dims are all known
 * folds too, whatever produces the tensor.
 *
 * Not folded: random ops (a folded RandomNormal would freeze one draw),
 * layers with subgraphs, plugins and ops without a kernel, and outputs over
 * the size limit (manager arg fold_max_bytes, default 16 MiB), so that a
 * Tile or a ConstantOfShape cannot blow a model up: when the output types
 * are known the limit is checked before anything runs. Nor the
 * DequantizeLinear of a quantized weight that fuse_qdq will fuse, when it
 * is planned (manager arg "fuse_qdq", gwr_ps_qdq_takes).
 *
 * Not a rule file: it runs the executor's kernel of any op whose inputs are all constants; there is
 * no pattern, only the test 'every input constant'.
 */
#include <stdlib.h>
#include <string.h>

#include "gwr/exec.h"
#include "gwr/passes.h"
#include "passes/pass_util.h"
#include "util/util.h"

#define DEFAULT_MAX_BYTES ((int64_t)16 << 20)

static const char *const random_ops[] = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                                         "Multinomial", "Bernoulli", NULL};

static int is_constant_layer(const gwr_layer *l) {
    return l && gwr_layer_type(l) == GWR_LAYER_CONSTANT && !gwr_layer_is_removed(l);
}

/* The value a CONSTANT layer holds (new reference), or NULL. */
static gwr_value *constant_value(gwr_layer *l) {
    if (gwr_exec_has_kernel(gwr_layer_domain(l), gwr_layer_op(l))) {
        gwr_value *v = NULL;
        if (gwr_layer_num_outputs(l) == 1 && !gwr_exec_layer(l, NULL, &v)) return v;
    }
    return NULL;
}

static int64_t max_bytes(gwr_rewrite_ctx *c) {
    int64_t v;
    return gwr_args_get_int(gwr_rewrite_ctx_args(c), "fold_max_bytes", &v) || v < 0 ? DEFAULT_MAX_BYTES : v;
}

/* Known output size in bytes, or -1. */
static int64_t known_bytes(const gwr_tensor *t) {
    int r = gwr_tensor_rank(t);
    gwr_dtype dt = gwr_tensor_dtype(t);
    if (r < 0 || dt == GWR_UNDEFINED || dt == GWR_STRING) return -1;
    int64_t n = 1;
    for (int i = 0; i < r; i++) {
        gwr_dim d = gwr_tensor_dim(t, i);
        if (!GWR_DIM_IS_KNOWN(d)) return -1;
        if (d && n > INT64_MAX / 16 / d) return INT64_MAX;
        n *= d;
    }
    return (n * gwr_dtype_bits(dt) + 7) / 8;
}

/* Is `Shape` layer l foldable from its input's type alone? */
static int shape_known(const gwr_layer *l) {
    if (strcmp(gwr_layer_op(l), "Shape") || *gwr_layer_domain(l) || gwr_layer_num_inputs(l) != 1) return 0;
    const gwr_tensor *t = gwr_layer_input(l, 0);
    if (!t || gwr_tensor_rank(t) < 0) return 0;
    for (int i = 0; i < gwr_tensor_rank(t); i++)
        if (!GWR_DIM_IS_KNOWN(gwr_tensor_dim(t, i))) return 0;
    return 1;
}

static int fold_match(gwr_rewrite_ctx *c, gwr_layer *l) {
    if (gwr_layer_type(l) == GWR_LAYER_CONSTANT) return gwr_rewrite_no_match(c, "already a constant");
    int64_t qdq = 0;
    if (!gwr_args_get_int(gwr_rewrite_ctx_args(c), "fuse_qdq", &qdq) && qdq && gwr_ps_qdq_takes(l, (int)qdq))
        return gwr_rewrite_no_match(c, "a quantized weight fuse_qdq takes");
    for (const char *const *r = random_ops; *r; r++)
        if (!strcmp(gwr_layer_op(l), *r)) return gwr_rewrite_no_match(c, "a random op");
    for (int a = 0; a < gwr_layer_num_attrs(l); a++)
        if (gwr_layer_attr_type(l, a) == GWR_ATTR_GRAPH || gwr_layer_attr_type(l, a) == GWR_ATTR_GRAPHS)
            return gwr_rewrite_no_match(c, "has a subgraph");
    if (!shape_known(l)) {
        if (!gwr_exec_has_kernel(gwr_layer_domain(l), gwr_layer_op(l))) return gwr_rewrite_no_match(c, "no kernel");
        int n = 0;
        for (int i = 0; i < gwr_layer_num_inputs(l); i++) {
            gwr_tensor *t = gwr_layer_input(l, i);
            if (!t) continue;
            if (!is_constant_layer(gwr_tensor_parent(t)))
                return gwr_rewrite_no_match(c, "input %d ('%s') is not a constant", i, gwr_tensor_name(t));
            n++;
        }
        if (!n) return gwr_rewrite_no_match(c, "no inputs");
    }
    int64_t limit = max_bytes(c);
    for (int o = 0; o < gwr_layer_num_outputs(l); o++) {
        int64_t b = known_bytes(gwr_layer_output(l, o));
        if (b > limit) return gwr_rewrite_no_match(c, "output %d would take %lld bytes (limit %lld)", o, (long long)b, (long long)limit);
    }
    return 1;
}

/* The values of l's outputs: from the input's type for a Shape, else by
 * running its kernel on its inputs' constant values. 1 with out filled,
 * 0 when the kernel refuses these inputs (nothing to fold), < 0 on error. */
static int compute(gwr_rewrite_ctx *c, gwr_layer *l, gwr_value **out) {
    if (shape_known(l)) {
        const gwr_tensor *t = gwr_layer_input(l, 0);
        int64_t r = gwr_tensor_rank(t), start = 0, end = r;
        if (!gwr_layer_get_int(l, "start", &start) && start < 0) start += r;
        if (!gwr_layer_get_int(l, "end", &end) && end < 0) end += r;
        start = start < 0 ? 0 : start > r ? r : start;
        end = end < start ? start : end > r ? r : end;
        int64_t n = end - start;
        if (!(out[0] = gwr_value_new(GWR_INT64, 1, &n))) return gwr_rewrite_fail(c, GWR_ERR_NOMEM, "out of memory");
        for (int64_t i = 0; i < n; i++) ((int64_t *)gwr_value_data(out[0]))[i] = gwr_tensor_dim(t, (int)(start + i));
        return 1;
    }
    int nin = gwr_layer_num_inputs(l), rc = 1;
    gwr_value **in = gwr_calloc((size_t)nin + 1, sizeof *in);
    if (!in) return gwr_rewrite_fail(c, GWR_ERR_NOMEM, "out of memory");
    for (int i = 0; i < nin && rc == 1; i++) {
        gwr_tensor *t = gwr_layer_input(l, i);
        if (t && !(in[i] = constant_value(gwr_tensor_parent(t))))
            rc = gwr_rewrite_fail(c, GWR_ERR_UNSUPPORTED, "cannot read constant '%s': %s", gwr_tensor_name(t),
                                  gwr_last_errmsg());
    }
    /* A kernel that refuses these constants (a Div by zero of integers,
     * say) leaves the layer as it is, for the run to report; running out
     * of memory ends the run, as anywhere else. */
    gwr_status es = rc == 1 ? gwr_exec_layer(l, in, out) : GWR_OK;
    if (es == GWR_ERR_NOMEM) rc = gwr_rewrite_fail(c, es, "folding: %s", gwr_last_errmsg());
    else if (es) rc = gwr_rewrite_no_match(c, "the kernel fails: %s", gwr_last_errmsg());
    for (int i = 0; i < nin; i++) gwr_value_release(in[i]);
    gwr_free(in);
    return rc;
}

static int fold(gwr_rewrite_ctx *c, gwr_layer *l) {
    int rc = fold_match(c, l);
    if (rc <= 0) return rc;
    gwr_network *net = gwr_rewrite_ctx_network(c);
    int nout = gwr_layer_num_outputs(l);
    gwr_value **out = gwr_calloc((size_t)nout + 1, sizeof *out);
    if (!out) return gwr_rewrite_fail(c, GWR_ERR_NOMEM, "out of memory");
    rc = compute(c, l, out);
    int64_t limit = max_bytes(c);
    for (int o = 0; o < nout && rc == 1; o++) {
        gwr_tensor *t = gwr_layer_output(l, o);
        int wanted = gwr_tensor_num_live_users(t) > 0 || gwr_tensor_output_index(t) >= 0;
        if (wanted && !out[o]) rc = gwr_rewrite_no_match(c, "the kernel gave no value for output %d", o);
        else if (out[o] && gwr_value_get_kind(out[o]) != GWR_VALUE_TENSOR) /* a sequence or an optional: no constant holds it */
            rc = gwr_rewrite_no_match(c, "output %d is a %s", o, gwr_value_kind_name(gwr_value_get_kind(out[o])));
        else if (out[o] && (int64_t)gwr_value_nbytes(out[o]) > limit)
            rc = gwr_rewrite_no_match(c, "output %d takes %zu bytes (limit %lld)", o, gwr_value_nbytes(out[o]), (long long)limit);
    }
    for (int o = 0; o < nout && rc == 1; o++) {
        if (!out[o]) continue;
        gwr_weights w;
        gwr_status s = gwr_value_to_weights(out[o], &w);
        gwr_tensor *k = s ? NULL : gwr_network_add_constant(net, NULL, &w);
        gwr_buffer_release(w.buffer);
        if (!k || (s = gwr_tensor_replace_all_uses_with(gwr_layer_output(l, o), k)))
            rc = gwr_rewrite_fail(c, s ? s : GWR_ERR_NOMEM, "%s", gwr_network_errmsg(net));
    }
    if (rc == 1 && gwr_layer_mark_as_removed(l)) rc = gwr_rewrite_fail(c, GWR_ERR_STATE, "%s", gwr_network_errmsg(net));
    for (int o = 0; o < nout; o++) gwr_value_release(out[o]);
    gwr_free(out);
    return rc;
}

const gwr_pattern_rewriter gwr_pattern_fold_constants = {
    .name = "fold_constants",
    .root_classes = GWR_ROOT_ANY,
    .match_and_rewrite = fold,
};

/* ---- the pass table's row (pass_table.h) ---- */
#include "passes/pass_table.h"

GWR_PASS(fold_constants, FOLD, .pattern = &gwr_pattern_fold_constants, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_EXACT,
         .summary = "compute layers whose inputs are all constants into constants (arg fold_max_bytes, default 16 "
                    "MiB)");
