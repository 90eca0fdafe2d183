/* weights.c - checking, copying and releasing gwr_weights (attribute
 * values and graph-input defaults hold copies). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir_internal.h"

gwr_status gwr_ir_weights_check(gwr_network *net, const gwr_weights *w) {
    if (!gwr_dtype_is_valid(w->dtype))
        return gwr_ir_error(net, GWR_ERR_TYPE, "weights: invalid dtype %d", (int)w->dtype);
    if (w->rank < 0 || w->rank > GWR_MAX_RANK || (w->rank && !w->dims))
        return gwr_ir_error(net, GWR_ERR_SHAPE, "weights: bad rank %d", w->rank);
    int64_t n = gwr_shape_numel(w->rank, w->dims);
    if (n < 0) return gwr_ir_error(net, GWR_ERR_SHAPE, "weights: negative or overflowing dims");
    if (w->dtype == GWR_STRING) {
        if ((uint64_t)n > SIZE_MAX / sizeof(gwr_bytes) || w->nbytes != (size_t)n * sizeof(gwr_bytes))
            return gwr_ir_error(net, GWR_ERR_SHAPE, "weights: %lld strings need %lld bytes of gwr_bytes, got %zu",
                                (long long)n, (long long)(n * (int64_t)sizeof(gwr_bytes)), w->nbytes);
    } else {
        uint64_t bits = (uint64_t)n * (uint64_t)gwr_dtype_bits(w->dtype);
        if (n && bits / (uint64_t)n != (uint64_t)gwr_dtype_bits(w->dtype))
            return gwr_ir_error(net, GWR_ERR_SHAPE, "weights: size overflows");
        if ((bits + 7) / 8 != w->nbytes)
            return gwr_ir_error(net, GWR_ERR_SHAPE, "weights: %s with %lld elements needs %llu bytes, got %zu",
                                gwr_dtype_name(w->dtype), (long long)n, (unsigned long long)((bits + 7) / 8),
                                w->nbytes);
    }
    if (w->nbytes && !w->data) return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "weights: NULL data");
    if (w->buffer) {
        const char *b = gwr_buffer_data(w->buffer), *d = w->data;
        if (w->nbytes && (d < b || d + w->nbytes > b + gwr_buffer_size(w->buffer)))
            return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "weights: data lies outside its buffer");
    }
    return GWR_OK;
}

/* Copies w; data stays in w's buffer (retained). Without a buffer, the
 * data is copied into a new one. */
gwr_status gwr_ir_weights_copy(gwr_weights *dst, const gwr_weights *w) {
    memset(dst, 0, sizeof *dst);
    dst->dtype = w->dtype;
    dst->rank = w->rank;
    dst->nbytes = w->nbytes;
    int64_t *dims = NULL;
    if (w->rank) {
        dims = gwr_malloc((size_t)w->rank * sizeof *dims);
        if (!dims) return GWR_ERR_NOMEM;
        memcpy(dims, w->dims, (size_t)w->rank * sizeof *dims);
    }
    dst->dims = dims;
    if (w->name && !(dst->name = gwr_strdup(w->name))) goto nomem;
    if (w->buffer) {
        gwr_buffer_retain(w->buffer);
        dst->buffer = w->buffer;
        dst->data = w->data;
    } else if (w->dtype == GWR_STRING) {
        /* One buffer: the gwr_bytes array, then the bytes. */
        size_t n = w->nbytes / sizeof(gwr_bytes), total = w->nbytes;
        const gwr_bytes *src = w->data;
        for (size_t i = 0; i < n; i++) total += src[i].len + 1;
        gwr_buffer *b = gwr_buffer_new_copy(NULL, total);
        if (!b) goto nomem;
        gwr_bytes *arr = (gwr_bytes *)gwr_buffer_data(b);
        char *p = (char *)(arr + n);
        for (size_t i = 0; i < n; i++) {
            if (src[i].len) memcpy(p, src[i].data, src[i].len);
            p[src[i].len] = 0;
            arr[i].len = src[i].len;
            arr[i].data = p;
            p += src[i].len + 1;
        }
        dst->buffer = b;
        dst->data = arr;
    } else {
        if (!(dst->buffer = gwr_buffer_new_copy(w->data, w->nbytes))) goto nomem;
        dst->data = gwr_buffer_data(dst->buffer);
    }
    return GWR_OK;
nomem:
    gwr_ir_weights_clear(dst);
    return GWR_ERR_NOMEM;
}

void gwr_ir_weights_clear(gwr_weights *w) {
    gwr_free((void *)w->dims);
    gwr_free((void *)w->name);
    gwr_buffer_release(w->buffer);
    memset(w, 0, sizeof *w);
}
