/* registry.c - every kernel family, and the lookup by (domain, op). Each
 * family lives in its own file and exports one table ending with a NULL
 * op. */
#include <string.h>

#include "exec/exec_internal.h"

#define FAMILIES(X)                                                                                        \
    X(basic) X(elementwise) X(activation) X(linalg) X(conv) X(pool) X(norm) X(reduce) X(tensor) X(gather) \
        X(resize) X(rnn) X(control) X(plugins) X(loss) X(misc) X(extra) X(signal)

#define DECLARE(f) extern const gwr_kernel_entry gwr_kernels_##f[];
FAMILIES(DECLARE)
#undef DECLARE

#define LIST(f) gwr_kernels_##f,
static const gwr_kernel_entry *const families[] = {FAMILIES(LIST)};
#undef LIST

gwr_kernel_fn gwr_kernel_find(const char *domain, const char *op, int *needs_blas) {
    if (!strcmp(domain, "ai.onnx")) domain = "";
    for (size_t f = 0; f < sizeof families / sizeof *families; f++)
        for (const gwr_kernel_entry *e = families[f]; e->op; e++)
            if (!strcmp(e->op, op) && !strcmp(e->domain, domain)) {
                if (needs_blas)
                    *needs_blas = families[f] == gwr_kernels_linalg || families[f] == gwr_kernels_conv ||
                                  families[f] == gwr_kernels_rnn;
                return e->fn;
            }
    return NULL;
}
