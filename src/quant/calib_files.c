/* calib_files.c - gwr_calib_load: calibration samples from a directory
 * (not written yet). */
#include "quant/quant_internal.h"

gwr_calib *gwr_calib_load(const char *dir, gwr_network *net) {
    (void)net;
    gwr_set_last_error(GWR_ERR_UNSUPPORTED, "%s: loading calibration files is not implemented yet", dir ? dir : "(null)");
    return NULL;
}
