/* norm.c - the norm kernel family (none yet). */
#include "exec/exec_internal.h"

const gwr_kernel_entry gwr_kernels_norm[] = {{NULL, NULL, NULL}};
