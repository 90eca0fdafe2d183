/* rnn.c - the rnn kernel family (none yet). */
#include "exec/exec_internal.h"

const gwr_kernel_entry gwr_kernels_rnn[] = {{NULL, NULL, NULL}};
