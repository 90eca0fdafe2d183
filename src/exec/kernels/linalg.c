/* linalg.c - the linalg kernel family (none yet). */
#include "exec/exec_internal.h"

const gwr_kernel_entry gwr_kernels_linalg[] = {{NULL, NULL, NULL}};
