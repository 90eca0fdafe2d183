/* reduce.c - the reduce kernel family (none yet). */
#include "exec/exec_internal.h"

const gwr_kernel_entry gwr_kernels_reduce[] = {{NULL, NULL, NULL}};
