/* fuzz_onnx_import.c - libFuzzer target for the ONNX importer: any bytes
 * go through gwr_onnx_load_memory, and what loads goes through verify,
 * save and load again (fuzz_onnx_check.h). A broken contract aborts, so
 * libFuzzer keeps the input as a crash. Set GWR_FUZZ_COMPARE=1 to also
 * require load-save-load to give an equal network. See README.md. */
#include "fuzz_onnx_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int compare_mode = -1;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (compare_mode < 0) {
        const char *e = getenv("GWR_FUZZ_COMPARE");
        compare_mode = e && *e == '1';
    }
    char why[1024];
    if (fuzz_onnx_check(data, size, "fuzz", compare_mode, why, sizeof why, NULL)) {
        fprintf(stderr, "gwr fuzz: contract broken: %s\n", why);
        abort();
    }
    return 0;
}
