/* tensor_file.c - one TensorProto per file, the layout of ONNX's test data
 * (test_data_set_0/input_0.pb): read into weights, written from weights. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnx/onnx_common.h"
#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"

static void *read_file(const char *path, size_t *size, char *err, size_t errsize) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errsize, "cannot open: %s", strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = gwr_malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *b = cap > SIZE_MAX / 2 ? NULL : gwr_realloc(buf, cap * 2);
        if (!b) gwr_free(buf);
        buf = b, cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        gwr_free(buf);
        snprintf(err, errsize, bad ? "cannot read" : "out of memory");
        return NULL;
    }
    *size = n;
    return buf;
}

gwr_status gwr_onnx_read_tensor(const char *path, gwr_weights *w, int64_t *dims, char **name) {
    if (!path || !w || !dims) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_onnx_read_tensor: NULL argument");
    memset(w, 0, sizeof *w);
    if (name) *name = NULL;
    gwr_oi_ctx *c = gwr_calloc(1, sizeof *c);
    if (!c) return gwr_set_last_error(GWR_ERR_NOMEM, "%s: out of memory", path);
    size_t size = 0;
    uint8_t *data = read_file(path, &size, c->err, sizeof c->err);
    gwr_status s = data ? GWR_OK : GWR_ERR_IO;
    Onnx__TensorProto *t = NULL;
    if (!s && !(t = onnx__tensor_proto__unpack(&gwr_onnx_pb_allocator, size, data)))
        s = GWR_ERR_PARSE, snprintf(c->err, sizeof c->err, "not a serialized TensorProto");
    if (!s) {
        /* External data resolves next to the file. */
        const char *slash = strrchr(path, '/');
        char *dir = slash ? gwr_memdup(path, slash == path ? 1 : (size_t)(slash - path)) : gwr_strdup(".");
        c->path = path, c->base_dir = dir, c->steal_raw = 1;
        s = dir ? gwr_oi_tensor(c, t, "tensor", w) : (snprintf(c->err, sizeof c->err, "out of memory"), GWR_ERR_NOMEM);
        if (!s && w->rank > GWR_MAX_RANK) s = GWR_ERR_UNSUPPORTED;
        if (!s) {
            if (w->rank) memcpy(dims, w->dims, (size_t)w->rank * sizeof *dims);
            w->dims = dims;
            if (name && t->name && !(*name = gwr_strdup(t->name))) s = GWR_ERR_NOMEM;
            w->name = NULL;
        }
        gwr_oi_ext_close(c);
        gwr_free(dir);
    }
    if (t) onnx__tensor_proto__free_unpacked(t, &gwr_onnx_pb_allocator);
    gwr_free(data);
    if (s) {
        gwr_buffer_release(w->buffer);
        memset(w, 0, sizeof *w);
        if (name) gwr_free(*name), *name = NULL;
        gwr_set_last_error(s, "%s: %s", path, c->err[0] ? c->err : gwr_status_name(s));
    }
    gwr_free(c);
    return s;
}

gwr_status gwr_onnx_write_tensor(const char *path, const char *name, const gwr_weights *w) {
    if (!path || !w) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_onnx_write_tensor: NULL argument");
    Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
    tp.name = (char *)(uintptr_t)(name && *name ? name : NULL);
    tp.has_data_type = 1;
    tp.data_type = (int32_t)w->dtype;
    tp.n_dims = (size_t)w->rank;
    tp.dims = (int64_t *)(uintptr_t)w->dims;
    ProtobufCBinaryData *sd = NULL;
    if (w->dtype == GWR_STRING) {
        size_t n = w->nbytes / sizeof(gwr_bytes);
        const gwr_bytes *b = w->data;
        if (n && !(sd = gwr_malloc(n * sizeof *sd))) return gwr_set_last_error(GWR_ERR_NOMEM, "%s: out of memory", path);
        for (size_t i = 0; i < n; i++) sd[i].len = b[i].len, sd[i].data = (uint8_t *)(uintptr_t)b[i].data;
        tp.n_string_data = n, tp.string_data = sd;
    } else {
        tp.has_raw_data = 1;
        tp.raw_data.len = w->nbytes;
        tp.raw_data.data = (uint8_t *)(uintptr_t)w->data;
    }
    gwr_pb_out out = {0};
    gwr_status s = gwr_pb_pack(&out, &tp.base);
    gwr_free(sd);
    if (s) {
        gwr_pb_free(&out);
        return gwr_set_last_error(s, "%s: out of memory", path);
    }
    size_t plen = strlen(path);
    char *tmp = gwr_malloc(plen + 16);
    if (!tmp) {
        gwr_pb_free(&out);
        return gwr_set_last_error(GWR_ERR_NOMEM, "%s: out of memory", path);
    }
    snprintf(tmp, plen + 16, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    int err = f ? gwr_pb_write(&out, fileno(f)) : errno;
    if (f && fclose(f) && !err) err = errno ? errno : EIO;
    if (!err && rename(tmp, path)) err = errno;
    if (err) unlink(tmp);
    gwr_free(tmp);
    gwr_pb_free(&out);
    return err ? gwr_set_last_error(GWR_ERR_IO, "%s: cannot write: %s", path, strerror(err)) : GWR_OK;
}
