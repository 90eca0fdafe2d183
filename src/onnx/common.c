/* common.c - see onnx_common.h. */
#include "onnx/onnx_common.h"

#include <string.h>

#include "util/util.h"

static void *pb_alloc(void *ud, size_t n) {
    (void)ud;
    return gwr_malloc(n ? n : 1);
}

static void pb_free(void *ud, void *p) {
    (void)ud;
    gwr_free(p);
}

ProtobufCAllocator gwr_onnx_pb_allocator = {pb_alloc, pb_free, NULL};

int gwr_onnx_location_ok(const char *loc, int for_writing) {
    if (!*loc || loc[0] == '/') return 0;
    for (const char *p = loc; *p;) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') return 0;
        if (for_writing && n == 0 && e) return 0;
        p += n;
        if (!e) break;
        p++;
        if (for_writing && !*p) return 0;
        if (!for_writing)
            while (*p == '/') p++;
    }
    return 1;
}
