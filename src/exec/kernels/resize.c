/* resize.c - the resize kernel family (none yet). */
#include "exec/exec_internal.h"

const gwr_kernel_entry gwr_kernels_resize[] = {{NULL, NULL, NULL}};
