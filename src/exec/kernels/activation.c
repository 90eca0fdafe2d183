/* activation.c - the activation kernel family (none yet). */
#include "exec/exec_internal.h"

const gwr_kernel_entry gwr_kernels_activation[] = {{NULL, NULL, NULL}};
