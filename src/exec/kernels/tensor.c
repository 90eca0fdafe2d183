/* tensor.c - the tensor kernel family (none yet). */
#include "exec/exec_internal.h"

const gwr_kernel_entry gwr_kernels_tensor[] = {{NULL, NULL, NULL}};
