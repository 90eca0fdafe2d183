/* signal.c - the signal kernel family (none yet). */
#include "exec/exec_internal.h"

const gwr_kernel_entry gwr_kernels_signal[] = {{NULL, NULL, NULL}};
