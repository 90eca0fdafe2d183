/* infer.c - dtype and shape inference for the ops of the table, following
 * ONNX semantics (the opset 13-17 forms, plus the older attribute forms
 * where they are cheap to read): the dispatcher. Each family of ops has its
 * rules in src/functional/infer/ (elementwise.c, conv.c, ...; the helpers
 * they share in common.c) and exports one table of {op id, rule}; the
 * tables are merged once into an array indexed by op id. An op that no
 * table names gets the generic rule (the first known input dtype, unknown
 * shapes), as does an op the table does not know (GWR_OP_CUSTOM: plugins
 * are inferred through their registry, plugin.c). */
#include <assert.h>
#include <threads.h>

#include "functional/infer/infer_internal.h"

#define FAMILIES(X)                                                                                                    \
    X(elementwise)                                                                                                     \
    X(activation) X(linalg) X(conv) X(pool) X(norm) X(reduce) X(loss) X(tensor) X(gather) X(basic) X(resize) X(rnn)    \
        X(quant) X(image) X(text) X(control) X(signal) X(ml) X(fused_cnn) X(contrib) X(attention) \
        X(state_ops) X(training) X(geometry)

#define DECLARE(f) extern const gwr_fi_entry gwr_fi_rules_##f[];
FAMILIES(DECLARE)
#undef DECLARE

#define LIST(f) gwr_fi_rules_##f,
static const gwr_fi_entry *const families[] = {FAMILIES(LIST)};
#undef LIST

/* Filled once, read-only afterwards: lookups need no lock. */
static gwr_fi_rule rules[GWR_OP_COUNT];
static once_flag rules_once = ONCE_FLAG_INIT;

static void rules_init(void) {
    for (size_t f = 0; f < sizeof families / sizeof *families; f++)
        for (const gwr_fi_entry *e = families[f]; e->rule; e++) {
            /* One rule per op: two families naming an op is a mistake. */
            assert((int)e->op > GWR_OP_CUSTOM && (int)e->op < GWR_OP_COUNT && !rules[e->op]);
            rules[e->op] = e->rule;
        }
}

static gwr_fi_rule rule_of(gwr_op_id id) {
    if ((int)id <= GWR_OP_CUSTOM || (int)id >= GWR_OP_COUNT) return NULL;
    call_once(&rules_once, rules_init);
    return rules[id];
}

int gwr_fn_infer_has_rule(gwr_op_id id) { return rule_of(id) != NULL; }

gwr_status gwr_fn_infer_op(gwr_layer *l) {
    ictx c;
    gwr_fi_rule rule;
    if (!l) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_fn_infer_op: layer is NULL");
    c.l = l;
    c.net = gwr_layer_network(l);
    c.id = gwr_layer_op_id(l);
    c.nin = gwr_layer_num_inputs(l);
    c.nout = gwr_layer_num_outputs(l);
    c.st = GWR_OK;
    rule = rule_of(c.id);
    return rule ? rule(&c) : gwr_fi_rule_generic(&c);
}
