/* registry.c - every kernel, found by op id in O(1).
 *
 * Each family file exports one table (gwr_kernels_<family>[], ended by an
 * entry with no fn). The first lookup copies their entries into an array
 * indexed by gwr_op_id, with the default opset ranges resolved from
 * ops.def; ops the table lacks (gwr's own plugin ops) go to a short list
 * looked up by domain and name. Built once (call_once), read-only after,
 * so lookups need no lock. */
#include <assert.h>
#include <limits.h>
#include <string.h>
#include <threads.h>

#include "exec/exec_internal.h"

#define FAMILIES(X)                                                                                        \
    X(basic) X(elementwise) X(activation) X(linalg) X(conv) X(pool) X(norm) X(reduce) X(tensor) X(gather) \
        X(resize) X(rnn) X(control) X(plugins) X(loss) X(quant) X(signal) X(text) X(image) X(fused_cnn) X(contrib) X(attention) X(ew_chain) \
        X(state_ops) X(attention_linear) X(rotary) X(training) X(geometry) X(strings) X(ml) X(sequence) X(qmatmul) X(dq_lstm) X(nbits) \
        X(attention_cache) X(swiglu)

#define DECLARE(f) extern const gwr_kernel_entry gwr_kernels_##f[];
FAMILIES(DECLARE)
#undef DECLARE

#define LIST(f) gwr_kernels_##f,
static const gwr_kernel_entry *const families[] = {FAMILIES(LIST)};
#undef LIST

#define MAX_CUSTOM 32

static gwr_kernel_entry by_op[GWR_OP_COUNT];
static gwr_kernel_entry custom[MAX_CUSTOM];
static int ncustom;
static once_flag built = ONCE_FLAG_INIT;

static void build(void) {
    for (size_t f = 0; f < sizeof families / sizeof *families; f++)
        for (const gwr_kernel_entry *e = families[f]; e->fn; e++) {
            gwr_kernel_entry r = *e;
            const gwr_op_info *info = gwr_op_info_get(e->op);
            if (!r.first_opset) r.first_opset = info ? info->since_version : 1;
            if (!r.last_opset) r.last_opset = INT_MAX;
            if (info) {
                assert(!by_op[e->op].fn && "two kernels for one op");
                r.domain = info->domain, r.name = info->name;
                by_op[e->op] = r;
            } else {
                assert(e->op == GWR_OP_CUSTOM && e->domain && e->name && ncustom < MAX_CUSTOM);
                if (ncustom < MAX_CUSTOM) custom[ncustom++] = r;
            }
        }
}

const gwr_kernel_entry *gwr_kernel_for_op(gwr_op_id id) {
    if (id <= GWR_OP_CUSTOM || id >= GWR_OP_COUNT) return NULL;
    call_once(&built, build);
    return by_op[id].fn ? &by_op[id] : NULL;
}

static const gwr_kernel_entry *find_custom(const char *domain, const char *op) {
    call_once(&built, build);
    for (int i = 0; i < ncustom; i++)
        if (!strcmp(custom[i].name, op) && !strcmp(custom[i].domain, domain)) return &custom[i];
    return NULL;
}

const gwr_kernel_entry *gwr_kernel_find(const char *domain, const char *op) {
    if (!op) return NULL;
    if (!domain || !strcmp(domain, "ai.onnx")) domain = "";
    gwr_op_id id = gwr_op_lookup(domain, op);
    return id != GWR_OP_CUSTOM ? gwr_kernel_for_op(id) : find_custom(domain, op);
}

const gwr_kernel_entry *gwr_kernel_for_layer(const gwr_layer *l) {
    gwr_op_id id = gwr_layer_op_id(l);
    return id != GWR_OP_CUSTOM ? gwr_kernel_for_op(id) : gwr_kernel_find(gwr_layer_domain(l), gwr_layer_op(l));
}

int gwr_kernel_supports(const gwr_kernel_entry *e, int64_t opset) {
    return opset == 0 || (opset >= e->first_opset && opset <= e->last_opset);
}
