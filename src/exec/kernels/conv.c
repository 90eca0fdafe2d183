/* conv.c - the conv kernel family (none yet). */
#include "exec/exec_internal.h"

const gwr_kernel_entry gwr_kernels_conv[] = {{NULL, NULL, NULL}};
