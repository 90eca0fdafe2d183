/* plugins.c - the plugins kernel family (none yet). */
#include "exec/exec_internal.h"

const gwr_kernel_entry gwr_kernels_plugins[] = {{NULL, NULL, NULL}};
