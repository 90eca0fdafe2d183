/* core.c - version, status names, element types, buffers. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir_internal.h"

const char *gwr_version(void) { return GWR_VERSION_STRING; }

const char *gwr_status_name(gwr_status s) {
    static const char *const names[] = {
        "GWR_OK",           "GWR_ERR_INVALID_ARG",   "GWR_ERR_NOT_FOUND", "GWR_ERR_TYPE",
        "GWR_ERR_SHAPE",    "GWR_ERR_DUPLICATE",     "GWR_ERR_CYCLE",     "GWR_ERR_INVALID_GRAPH",
        "GWR_ERR_NOMEM",    "GWR_ERR_IO",            "GWR_ERR_PARSE",     "GWR_ERR_UNSUPPORTED",
        "GWR_ERR_NOT_CONVERGED", "GWR_ERR_STATE"};
    _Static_assert(sizeof names / sizeof names[0] == GWR_ERR_STATE + 1, "status names out of step");
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "GWR_ERR_UNKNOWN";
}

/* ---- element types ---- */

static const struct {
    const char *name;
    int bits;
} dtypes[GWR_DTYPE_COUNT] = {
    [GWR_UNDEFINED] = {"undefined", 0},  [GWR_FLOAT32] = {"float32", 32},
    [GWR_UINT8] = {"uint8", 8},          [GWR_INT8] = {"int8", 8},
    [GWR_UINT16] = {"uint16", 16},       [GWR_INT16] = {"int16", 16},
    [GWR_INT32] = {"int32", 32},         [GWR_INT64] = {"int64", 64},
    [GWR_STRING] = {"string", 0},        [GWR_BOOL] = {"bool", 8},
    [GWR_FLOAT16] = {"float16", 16},     [GWR_FLOAT64] = {"float64", 64},
    [GWR_UINT32] = {"uint32", 32},       [GWR_UINT64] = {"uint64", 64},
    [GWR_COMPLEX64] = {"complex64", 64}, [GWR_COMPLEX128] = {"complex128", 128},
    [GWR_BFLOAT16] = {"bfloat16", 16},   [GWR_FLOAT8E4M3FN] = {"float8e4m3fn", 8},
    [GWR_FLOAT8E4M3FNUZ] = {"float8e4m3fnuz", 8}, [GWR_FLOAT8E5M2] = {"float8e5m2", 8},
    [GWR_FLOAT8E5M2FNUZ] = {"float8e5m2fnuz", 8}, [GWR_UINT4] = {"uint4", 4},
    [GWR_INT4] = {"int4", 4},          [GWR_FLOAT4E2M1] = {"float4e2m1", 4},
    [GWR_FLOAT8E8M0] = {"float8e8m0", 8}, [GWR_UINT2] = {"uint2", 2},
    [GWR_INT2] = {"int2", 2},
};

int gwr_dtype_is_valid(gwr_dtype t) { return t > GWR_UNDEFINED && t < GWR_DTYPE_COUNT; }

const char *gwr_dtype_name(gwr_dtype t) {
    return (unsigned)t < GWR_DTYPE_COUNT ? dtypes[t].name : "undefined";
}

gwr_dtype gwr_dtype_from_name(const char *name) {
    if (!name) return GWR_UNDEFINED;
    for (int t = 1; t < GWR_DTYPE_COUNT; t++)
        if (strcmp(name, dtypes[t].name) == 0) return (gwr_dtype)t;
    if (!strcmp(name, "float")) return GWR_FLOAT32;
    if (!strcmp(name, "double")) return GWR_FLOAT64;
    if (!strcmp(name, "half")) return GWR_FLOAT16;
    return GWR_UNDEFINED;
}

int gwr_dtype_bits(gwr_dtype t) { return (unsigned)t < GWR_DTYPE_COUNT ? dtypes[t].bits : 0; }

size_t gwr_dtype_size(gwr_dtype t) { return (size_t)(gwr_dtype_bits(t) + 7) / 8; }

int gwr_dtype_is_float(gwr_dtype t) {
    switch (t) {
    case GWR_FLOAT32: case GWR_FLOAT16: case GWR_FLOAT64: case GWR_BFLOAT16:
    case GWR_COMPLEX64: case GWR_COMPLEX128: case GWR_FLOAT8E4M3FN: case GWR_FLOAT8E4M3FNUZ:
    case GWR_FLOAT8E5M2: case GWR_FLOAT8E5M2FNUZ: case GWR_FLOAT4E2M1: case GWR_FLOAT8E8M0:
        return 1;
    default:
        return 0;
    }
}

int gwr_dtype_is_int(gwr_dtype t) {
    switch (t) {
    case GWR_UINT8: case GWR_INT8: case GWR_UINT16: case GWR_INT16: case GWR_INT32:
    case GWR_INT64: case GWR_UINT32: case GWR_UINT64: case GWR_UINT4: case GWR_INT4:
    case GWR_UINT2: case GWR_INT2:
        return 1;
    default:
        return 0;
    }
}

const char *gwr_value_kind_name(gwr_value_kind k) {
    static const char *const names[] = {"tensor", "sparse_tensor", "sequence", "map", "optional"};
    return (unsigned)k < 5 ? names[k] : "unknown";
}

int64_t gwr_shape_numel(int rank, const int64_t *dims) {
    int64_t n = 1;
    if (rank < 0 || (rank > 0 && !dims)) return -1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0) return -1;
        if (dims[i] && n > INT64_MAX / dims[i]) return -1;
        n *= dims[i];
    }
    return n;
}

/* ---- buffers ---- */

struct gwr_buffer {
    atomic_long refs;
    const void *data;
    size_t size;
    void (*release)(void *ctx, const void *data, size_t size);
    void *ctx;
    int owned;
};

gwr_buffer *gwr_buffer_new_copy(const void *data, size_t size) {
    gwr_buffer *b = gwr_malloc(sizeof *b);
    void *p = gwr_malloc(size ? size : 1);
    if (!b || !p) {
        gwr_free(b), gwr_free(p);
        gwr_set_last_error(GWR_ERR_NOMEM, "gwr_buffer_new_copy: out of memory (%zu bytes)", size);
        return NULL;
    }
    if (data && size) memcpy(p, data, size);
    else memset(p, 0, size ? size : 1);
    atomic_init(&b->refs, 1);
    b->data = p, b->size = size, b->release = NULL, b->ctx = NULL, b->owned = 1;
    return b;
}

gwr_buffer *gwr_buffer_wrap(const void *data, size_t size,
                            void (*release)(void *ctx, const void *data, size_t size), void *ctx) {
    if (!data && size) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_buffer_wrap: NULL data with size %zu", size);
        return NULL;
    }
    gwr_buffer *b = gwr_malloc(sizeof *b);
    if (!b) {
        gwr_set_last_error(GWR_ERR_NOMEM, "gwr_buffer_wrap: out of memory");
        return NULL;
    }
    atomic_init(&b->refs, 1);
    b->data = data, b->size = size, b->release = release, b->ctx = ctx, b->owned = 0;
    return b;
}

void gwr_buffer_retain(gwr_buffer *b) {
    if (b) atomic_fetch_add(&b->refs, 1);
}

void gwr_buffer_release(gwr_buffer *b) {
    if (!b || atomic_fetch_sub(&b->refs, 1) != 1) return;
    if (b->owned) gwr_free((void *)b->data);
    else if (b->release) b->release(b->ctx, b->data, b->size);
    gwr_free(b);
}

const void *gwr_buffer_data(const gwr_buffer *b) { return b ? b->data : NULL; }

int gwr_ir_buffer_is_sole(const gwr_buffer *b, void (*release)(void *ctx, const void *data, size_t size),
                          const void *ctx) {
    return b && !b->owned && b->release == release && b->ctx == ctx && atomic_load(&b->refs) == 1;
}
size_t gwr_buffer_size(const gwr_buffer *b) { return b ? b->size : 0; }
