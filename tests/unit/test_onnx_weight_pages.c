/* test_onnx_weight_pages.c - the memory of a loaded weight leaves the
 * process when the weight is released, even while other weights loaded
 * next to it live on (src/onnx/import_tensor.c puts the raw_data of
 * tensors under 4 MiB side by side in shared chunks): what a rewrite drops
 * or replaces (a merged Q/K/V, the originals of a session's optimized
 * copy) is not kept resident by its neighbours. Checked with mincore on
 * the released weight's pages, and the survivor's values. */
#define _DEFAULT_SOURCE /* mincore */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "gwr/gwr.h"

enum { NW = 8, ROWS = 256, COLS = 1024 }; /* 1 MiB each: in one chunk */

/* The resident pages among the whole pages inside [p, p + n). */
static long resident_pages(const void *p, size_t n, long *whole) {
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), b = ((uintptr_t)p + pg - 1) / pg * pg,
              e = ((uintptr_t)p + n) / pg * pg;
    *whole = e > b ? (long)((e - b) / pg) : 0;
    if (e <= b) return 0;
    unsigned char *v = malloc(*whole);
    long r = -1;
    if (v && mincore((void *)b, e - b, v) == 0) {
        r = 0;
        for (long i = 0; i < *whole; i++) r += v[i] & 1;
    }
    free(v);
    return r;
}

TEST(a_released_weight_leaves_its_chunk) {
    gwr_network *src = gwr_network_new("weights");
    CHECK(src != NULL);
    int64_t xd[2] = {1, ROWS}, wd[2] = {ROWS, COLS};
    gwr_tensor *x = gwr_network_add_input(src, "x", GWR_FLOAT32, 2, xd);
    float *w = malloc(sizeof(float) * ROWS * COLS);
    CHECK(x && w);
    for (int i = 0; i < NW; i++) {
        for (int64_t j = 0; j < (int64_t)ROWS * COLS; j++) w[j] = (float)(i + 1);
        gwr_tensor *c = gwr_constant(src, GWR_FLOAT32, 2, wd, w);
        CHECK_OK(gwr_network_mark_output(src, gwr_matmul(src, x, c)));
    }
    void *bytes = NULL;
    size_t size = 0;
    CHECK_OK(gwr_onnx_save_memory(src, &bytes, &size));
    gwr_network_free(src);
    gwr_network *net = gwr_onnx_load_memory(bytes, size, NULL, "weights.onnx", NULL);
    free(bytes);
    CHECK(net != NULL);
    /* the weights as loaded: Constant layers, in order */
    const gwr_weights *ws[NW];
    int n = 0;
    for (int64_t i = 0; net && i < gwr_network_num_layers(net); i++) {
        const gwr_weights *cw = NULL;
        if (n < NW && gwr_layer_get_tensor(gwr_network_layer(net, i), "value", &cw) == GWR_OK && cw &&
            cw->nbytes == sizeof(float) * ROWS * COLS)
            ws[n++] = cw;
    }
    CHECK_EQ_INT(n, NW);
    if (n == NW) {
        gwr_buffer *keep = ws[0]->buffer;
        const float *kept = ws[0]->data;
        float first = kept[0];
        const void *gone[NW];
        for (int i = 1; i < NW; i++) gone[i] = ws[i]->data;
        gwr_buffer_retain(keep);
        long whole, before = resident_pages(gone[1], ws[1]->nbytes, &whole);
        CHECK(whole > 200 && before == whole); /* loaded: resident */
        gwr_network_free(net);
        net = NULL;
        /* weight 0 keeps the chunk mapped; the others' pages are gone */
        for (int i = 1; i < NW; i++) CHECK_EQ_INT(resident_pages(gone[i], sizeof(float) * ROWS * COLS, &whole), 0);
        int same = 1;
        for (int64_t j = 0; j < (int64_t)ROWS * COLS; j++) same &= kept[j] == first;
        CHECK(same);
        gwr_buffer_release(keep);
    }
    gwr_network_free(net);
    free(w);
}

int main(void) {
    RUN(a_released_weight_leaves_its_chunk);
    return check_report();
}
