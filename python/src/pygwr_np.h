/* pygwr_np.h - numpy's C API for the extension's files. session.c owns the
 * API table (it includes this header without NO_IMPORT_ARRAY and calls
 * import_array from pg_init_session); every other file that uses numpy
 * defines NO_IMPORT_ARRAY before including this header. */
#ifndef PYGWR_NP_H
#define PYGWR_NP_H

#define PY_ARRAY_UNIQUE_SYMBOL pg_ARRAY_API
#ifndef NPY_NO_DEPRECATED_API
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#endif
#include <numpy/arrayobject.h>

#endif
