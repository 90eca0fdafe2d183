/* optimize_opset.c - `gwr optimize --opset N`: raising the default-domain
 * opset so that passes gated on newer ops can fire, only where that keeps
 * the model's meaning.
 *
 * opset_table.inc lists, per default-domain op, the versions its schema
 * changed, each marked 't' (only types added) or 'a' (only optional
 * attributes or trailing optional inputs whose defaults keep the old
 * behaviour), or unmarked (anything else). Raising from F to T is checked
 * op by op over the network and its bodies: every version v with
 * F < v <= T must be marked, or be one this file converts:
 *
 *   Squeeze, Unsqueeze 13; ReduceSum 13; ReduceX 18  the axes attribute becomes input 1
 *   Split 13                                          the split attribute becomes input 1
 *   Split 18                                          no split input: num_outputs = the outputs
 *   BatchNormalization 14                             one output (inference): nothing to do
 *   Clip 11, Dropout 12 (float32 data)                min/max, ratio become scalar inputs
 *
 * Everything is checked before anything changes, so a refusal leaves the
 * network as it was. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "gwr/optimize.h"
#include "ir/ir_api.h"
#include "optimize_internal.h"

typedef struct opv {
    const char *op;
    const char *versions; /* "1 11t 13 21t" */
} opv;

static const opv table[] = {
#define OPV(name, versions) {name, versions},
#include "opset_table.inc"
#undef OPV
};

static int cmp_opv(const void *k, const void *e) { return strcmp((const char *)k, ((const opv *)e)->op); }

static const opv *find_op(const char *op) {
    return bsearch(op, table, sizeof table / sizeof *table, sizeof *table, cmp_opv);
}

static int is_reduce(const char *op) { return !strncmp(op, "Reduce", 6); }

/* Can version v of l's op be reached by converting l? 2: convert at the
 * end, 1: nothing to convert, 0: no. */
static int convertible(const gwr_layer *l, long v) {
    const char *op = gwr_layer_op(l);
    if (v == 13 && (!strcmp(op, "Squeeze") || !strcmp(op, "Unsqueeze") || !strcmp(op, "ReduceSum")))
        return 2;
    if (v == 18 && is_reduce(op) && strcmp(op, "ReduceSum")) return 2;
    if (v == 13 && !strcmp(op, "Split")) return 2;
    if (v == 18 && !strcmp(op, "Split")) return 2;
    if (v == 14 && !strcmp(op, "BatchNormalization")) return gwr_layer_num_outputs(l) == 1;
    /* Clip's bounds and Dropout's ratio become float inputs: float32 data
     * only (Clip 6 and onnxruntime's kernel compare in float) */
    if ((v == 11 && !strcmp(op, "Clip")) || (v == 12 && !strcmp(op, "Dropout")))
        return gwr_tensor_dtype(gwr_layer_input(l, 0)) == GWR_FLOAT32 ? 2 : 0;
    return 0;
}

/* Checks l for from -> to: GWR_OK, or GWR_ERR_UNSUPPORTED with the message
 * on root. *convert counts the layers that need converting. */
static gwr_status check_layer(gwr_network *root, const gwr_layer *l, long from, long to, int64_t *convert) {
    if (*gwr_layer_domain(l) || gwr_layer_type(l) == GWR_LAYER_CONSTANT) return GWR_OK;
    const opv *e = find_op(gwr_layer_op(l));
    if (!e)
        return gwr_ir_error(root, GWR_ERR_UNSUPPORTED, "--opset %ld: op '%s' (layer '%s') is not in the schema table",
                            to, gwr_layer_op(l), gwr_layer_name(l));
    int conv = 0;
    for (const char *p = e->versions; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        int marked = *end == 't' || *end == 'a';
        p = end + marked;
        while (*p == ' ') p++;
        if (v <= from || v > to || marked) continue;
        int c = convertible(l, v);
        if (!c)
            return gwr_ir_error(root, GWR_ERR_UNSUPPORTED,
                                "--opset %ld: op '%s' (layer '%s') changes at opset %ld (versions %s): not converted",
                                to, gwr_layer_op(l), gwr_layer_name(l), v, e->versions);
        conv |= c == 2;
    }
    *convert += conv;
    return GWR_OK;
}

/* Calls f on every live layer of g and its bodies; stops at the first
 * failure. */
typedef gwr_status (*layer_fn)(gwr_network *root, gwr_layer *l, long from, long to, int64_t *n);

static gwr_status each_layer(gwr_network *root, gwr_network *g, layer_fn f, long from, long to, int64_t *n,
                             int depth) {
    gwr_status s = GWR_OK;
    if (depth > 64) return gwr_ir_error(root, GWR_ERR_UNSUPPORTED, "--opset: bodies nested over 64 deep");
    for (int64_t i = 0; !s && i < gwr_network_num_layers(g); i++) {
        gwr_layer *l = gwr_network_layer(g, i);
        if (gwr_layer_is_removed(l)) continue;
        for (int a = 0; !s && a < gwr_layer_num_attrs(l); a++) {
            gwr_attr_type t = gwr_layer_attr_type(l, a);
            gwr_network *one = NULL, *const *gs = NULL;
            int64_t k = 0;
            if (t == GWR_ATTR_GRAPH && !gwr_layer_get_graph(l, gwr_layer_attr_name(l, a), &one)) gs = &one, k = 1;
            else if (t == GWR_ATTR_GRAPHS) gwr_layer_get_graphs(l, gwr_layer_attr_name(l, a), &gs, &k);
            for (int64_t j = 0; !s && j < k; j++) s = each_layer(root, gs[j], f, from, to, n, depth + 1);
        }
        if (!s) s = f(root, l, from, to, n);
    }
    return s;
}

static gwr_status check_fn(gwr_network *root, gwr_layer *l, long from, long to, int64_t *n) {
    return check_layer(root, l, from, to, n);
}

/* Moves int list attribute `name` of l to a new constant int64 input
 * (appended: these ops have one input before it). */
static gwr_status attr_to_input(gwr_layer *l, const char *name) {
    const int64_t *v;
    int64_t n;
    if (gwr_layer_get_ints(l, name, &v, &n)) return GWR_OK; /* absent: the input stays absent */
    if (gwr_layer_num_inputs(l) != 1) return GWR_ERR_INVALID_GRAPH;
    gwr_tensor *k = gwr_constant_i64s(gwr_layer_network(l), (int)n, v);
    gwr_status s = k ? gwr_layer_append_input(l, k) : GWR_ERR_NOMEM;
    return s ? s : gwr_layer_remove_attr(l, name);
}

/* Moves float attributes names[0..n) of l to new float32 scalar inputs
 * 1..n, each `def` when absent (Clip 6's bounds were -FLT_MAX and FLT_MAX,
 * which clamp infinities, where an absent input of Clip 11 does not). */
static gwr_status floats_to_inputs(gwr_layer *l, int n, const char *const *names, const float *def) {
    gwr_status s = gwr_layer_num_inputs(l) == 1 ? GWR_OK : GWR_ERR_INVALID_GRAPH;
    for (int i = 0; !s && i < n; i++) {
        float v = def[i];
        gwr_layer_attr_float(l, names[i], def[i], &v);
        gwr_tensor *k = gwr_constant(gwr_layer_network(l), GWR_FLOAT32, 0, NULL, &v);
        s = k ? gwr_layer_append_input(l, k) : GWR_ERR_NOMEM;
        if (!s && gwr_layer_has_attr(l, names[i])) s = gwr_layer_remove_attr(l, names[i]);
    }
    return s;
}

static gwr_status convert_fn(gwr_network *root, gwr_layer *l, long from, long to, int64_t *n) {
    const char *op = gwr_layer_op(l);
    gwr_status s = GWR_OK;
    if (*gwr_layer_domain(l)) return GWR_OK;
    int split = !strcmp(op, "Split");
    if ((from < 13 && 13 <= to && (!strcmp(op, "Squeeze") || !strcmp(op, "Unsqueeze") || !strcmp(op, "ReduceSum"))) ||
        (from < 18 && 18 <= to && is_reduce(op) && strcmp(op, "ReduceSum")))
        s = attr_to_input(l, "axes"), ++*n;
    if (!s && split && from < 13 && 13 <= to) s = attr_to_input(l, "split"), ++*n;
    if (!s && from < 11 && 11 <= to && !strcmp(op, "Clip")) {
        static const char *const bounds[2] = {"min", "max"};
        static const float def[2] = {-FLT_MAX, FLT_MAX};
        s = floats_to_inputs(l, 2, bounds, def), ++*n;
    }
    if (!s && from < 12 && 12 <= to && !strcmp(op, "Dropout")) {
        static const char *const ratio[1] = {"ratio"};
        static const float def[1] = {0.5f};
        s = floats_to_inputs(l, 1, ratio, def), ++*n;
    }
    if (!s && split && from < 18 && 18 <= to && (gwr_layer_num_inputs(l) < 2 || !gwr_layer_input(l, 1)))
        s = gwr_layer_set_int(l, "num_outputs", gwr_layer_num_outputs(l)), ++*n;
    if (s)
        return gwr_ir_error(root, s, "--opset %ld: converting layer '%s' (%s): %s", to, gwr_layer_name(l), op,
                            gwr_network_errmsg(gwr_layer_network(l)));
    return GWR_OK;
}

gwr_status gwr_opt_raise_opset(gwr_network *net, int64_t opset) {
    int64_t from = gwr_network_opset(net, "");
    if (opset <= 0) return GWR_OK;
    if (from < 1)
        return gwr_ir_error(net, GWR_ERR_UNSUPPORTED, "--opset %lld: the model imports no default-domain opset",
                            (long long)opset);
    if (opset < from)
        return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "--opset %lld: lowering the opset (the model's is %lld) is refused",
                            (long long)opset, (long long)from);
    if (opset == from) return GWR_OK;
    if (opset > GWR_OPSET_TABLE_MAX)
        return gwr_ir_error(net, GWR_ERR_UNSUPPORTED, "--opset %lld: the schema table knows opsets up to %d",
                            (long long)opset, GWR_OPSET_TABLE_MAX);
    int64_t nconv = 0;
    gwr_status s = each_layer(net, net, check_fn, (long)from, (long)opset, &nconv, 0);
    if (s) return s;
    nconv = 0;
    if ((s = each_layer(net, net, convert_fn, (long)from, (long)opset, &nconv, 0))) return s;
    return gwr_network_set_opset(net, "", opset);
}
