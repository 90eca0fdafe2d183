/* fuzz_onnx_check.h - the one sequence both the libFuzzer target
 * (fuzz_onnx_import.c) and the regression test (tests/unit/
 * test_onnx_badinput.c) run on an input: load it from memory; on success
 * verify, save to memory, load the saved bytes again and verify that.
 *
 * The contract it checks: gwr_onnx_load_memory either returns a network
 * that verifies, or NULL with a non-empty one-line gwr_last_errmsg(); a
 * network that loaded and verified saves, and what it saves loads and
 * verifies again. With `compare` set, the reloaded network must also be
 * gwr_network_equal to the first (docs/onnx.md's round-trip promise).
 * Memory errors are the sanitizers' business. Include from one file. */
#ifndef GWR_FUZZ_ONNX_CHECK_H
#define GWR_FUZZ_ONNX_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gwr/gwr.h"

/* Is msg a usable error message: non-empty, one line? */
static int fuzz_msg_ok(const char *msg) {
    return msg && *msg && !strchr(msg, '\n') && !strchr(msg, '\r');
}

/* Runs the sequence on data[0..size), loading under `name` (used in
 * messages). Returns 0 when the contract held (whether or not the input
 * loaded); otherwise 1 with what broke in why. *loaded (may be NULL) says
 * whether the input loaded. */
static int fuzz_onnx_check(const uint8_t *data, size_t size, const char *name, int compare, char *why,
                           size_t whysize, int *loaded) {
    if (loaded) *loaded = 0;
    why[0] = 0;
    gwr_network *a = gwr_onnx_load_memory(data, size, NULL, name, NULL);
    if (!a) {
        const char *msg = gwr_last_errmsg();
        if (fuzz_msg_ok(msg)) return 0;
        snprintf(why, whysize, "load failed with a bad message: \"%s\"", msg ? msg : "(null)");
        return 1;
    }
    if (loaded) *loaded = 1;
    int bad = 0;
    void *buf = NULL;
    size_t n = 0;
    gwr_network *b = NULL;
    if (gwr_network_verify(a) != GWR_OK) {
        snprintf(why, whysize, "loaded network does not verify: %s", gwr_network_errmsg(a));
        bad = 1;
    } else if (gwr_onnx_save_memory(a, &buf, &n) != GWR_OK) {
        snprintf(why, whysize, "a verified network does not save: %s", gwr_network_errmsg(a));
        bad = 1;
    } else if (!(b = gwr_onnx_load_memory(buf, n, NULL, "fuzz-resaved", NULL))) {
        snprintf(why, whysize, "the saved model does not load again: %s", gwr_last_errmsg());
        bad = 1;
    } else if (gwr_network_verify(b) != GWR_OK) {
        snprintf(why, whysize, "the reloaded network does not verify: %s", gwr_network_errmsg(b));
        bad = 1;
    } else if (compare) {
        char diff[512];
        if (!gwr_network_equal(a, b, diff, sizeof diff)) {
            snprintf(why, whysize, "load-save-load is not equal: %s", diff);
            bad = 1;
        }
    }
    gwr_network_free(b);
    free(buf);
    gwr_network_free(a);
    return bad;
}

#endif
