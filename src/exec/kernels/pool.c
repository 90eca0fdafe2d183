/* pool.c - the pool kernel family (none yet). */
#include "exec/exec_internal.h"

const gwr_kernel_entry gwr_kernels_pool[] = {{NULL, NULL, NULL}};
