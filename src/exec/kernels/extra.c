/* extra.c - the extra kernel family (none yet). */
#include "exec/exec_internal.h"

const gwr_kernel_entry gwr_kernels_extra[] = {{NULL, NULL, NULL}};
