/* fuzz_onnx_check.h - the one sequence both the libFuzzer target
 * (fuzz_onnx_import.c) and the regression test (tests/unit/
 * test_onnx_badinput.c) run on an input: load it from memory; on success
 * verify, save to memory, load the saved bytes again and verify that.
 *
 * The contract it checks: gwr_onnx_load_memory either returns a network
 * that verifies, or NULL with a non-empty one-line gwr_last_errmsg(); a
 * network that loaded and verified saves, and what it saves loads and
 * verifies again. With `compare` set, the round trip must also be exact:
 * saving the reloaded network gives the same bytes as the first save (a
 * fixed point), and the reloaded network is gwr_network_equal to the first
 * up to what a save adds by design (docs/onnx.md): opset imports for
 * domains the layers use, and ir_version 8 when the file had none (then
 * the equality is not checked). Memory errors are the sanitizers'
 * business. Include from one file. */
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

/* The exactness checks of compare mode; a and b verified, b loaded from
 * buf[0..n) = the save of a. */
static int fuzz_compare(gwr_network *a, gwr_network *b, const void *buf, size_t n, char *why, size_t whysize) {
    void *buf2 = NULL;
    size_t n2 = 0;
    if (gwr_onnx_save_memory(b, &buf2, &n2) != GWR_OK) {
        snprintf(why, whysize, "the reloaded network does not save: %s", gwr_network_errmsg(b));
        return 1;
    }
    size_t k = 0;
    while (k < n && k < n2 && ((const unsigned char *)buf)[k] == ((const unsigned char *)buf2)[k]) k++;
    free(buf2);
    if (k < n || n != n2) {
        snprintf(why, whysize, "re-saving the reloaded network gives other bytes (%zu vs %zu bytes, first difference at byte %zu)", n,
                 n2, k);
        return 1;
    }
    if (!gwr_network_prop(a, "onnx.ir_version", NULL)) return 0;
    /* The opsets a save adds come after the network's own, in b's order. */
    for (int i = 0; i < gwr_network_num_opsets(b); i++) {
        const char *d = gwr_network_opset_domain(b, i);
        if (gwr_network_opset(a, d) < 0) gwr_network_set_opset(a, d, gwr_network_opset(b, d));
    }
    char diff[512];
    if (!gwr_network_equal(a, b, diff, sizeof diff)) {
        snprintf(why, whysize, "load-save-load is not equal: %s", diff);
        return 1;
    }
    return 0;
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
        bad = fuzz_compare(a, b, buf, n, why, whysize);
    }
    gwr_network_free(b);
    free(buf);
    gwr_network_free(a);
    return bad;
}

#endif
