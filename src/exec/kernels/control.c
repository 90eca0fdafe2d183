/* control.c - the control kernel family (none yet). */
#include "exec/exec_internal.h"

const gwr_kernel_entry gwr_kernels_control[] = {{NULL, NULL, NULL}};
