/* elementwise.c - the elementwise kernel family (none yet). */
#include "exec/exec_internal.h"

const gwr_kernel_entry gwr_kernels_elementwise[] = {{NULL, NULL, NULL}};
