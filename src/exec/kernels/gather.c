/* gather.c - the gather kernel family (none yet). */
#include "exec/exec_internal.h"

const gwr_kernel_entry gwr_kernels_gather[] = {{NULL, NULL, NULL}};
