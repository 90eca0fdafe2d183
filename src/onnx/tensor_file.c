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

/* One serialized TensorProto (size bytes at data) into w, its dims copied
 * into dims (GWR_MAX_RANK entries), its name into *name (may be NULL).
 * c->err set on error; c->path and c->base_dir set by the caller. */
static gwr_status unpack_tensor(gwr_oi_ctx *c, const uint8_t *data, size_t size, gwr_weights *w, int64_t *dims, char **name) {
    Onnx__TensorProto *t = onnx__tensor_proto__unpack(&gwr_onnx_pb_allocator, size, data);
    if (!t) {
        snprintf(c->err, sizeof c->err, "not a serialized TensorProto");
        return GWR_ERR_PARSE;
    }
    gwr_status s = gwr_oi_tensor(c, t, "tensor", w);
    if (!s && w->rank > GWR_MAX_RANK) {
        gwr_buffer_release(w->buffer);
        memset(w, 0, sizeof *w);
        s = GWR_ERR_UNSUPPORTED;
    }
    if (!s) {
        if (w->rank) memcpy(dims, w->dims, (size_t)w->rank * sizeof *dims);
        w->dims = dims;
        w->name = NULL;
        if (name && t->name && !(*name = gwr_strdup(t->name))) s = GWR_ERR_NOMEM;
    }
    onnx__tensor_proto__free_unpacked(t, &gwr_onnx_pb_allocator);
    return s;
}

/* The file's bytes and the context to read them with (external data
 * resolves next to the file) into *out; the status of gwr_set_last_error
 * and *out NULL on error. */
static gwr_status open_data(const char *path, uint8_t **data, size_t *size, gwr_oi_ctx **out) {
    gwr_oi_ctx *c = *out = gwr_calloc(1, sizeof *c);
    if (!c) return gwr_set_last_error(GWR_ERR_NOMEM, "%s: out of memory", path);
    const char *slash = strrchr(path, '/');
    char *dir = slash ? gwr_memdup(path, slash == path ? 1 : (size_t)(slash - path)) : gwr_strdup(".");
    *data = dir ? read_file(path, size, c->err, sizeof c->err) : NULL;
    if (!*data) {
        gwr_status s = gwr_set_last_error(dir ? GWR_ERR_IO : GWR_ERR_NOMEM, "%s: %s", path, dir ? c->err : "out of memory");
        gwr_free(dir), gwr_free(c);
        *out = NULL;
        return s;
    }
    c->path = path, c->base_dir = dir, c->steal_raw = 1, c->data = *data, c->size = *size;
    return GWR_OK;
}

static gwr_status close_data(gwr_oi_ctx *c, uint8_t *data, const char *path, gwr_status s) {
    gwr_oi_ext_close(c);
    gwr_free((void *)(uintptr_t)c->base_dir);
    gwr_free(data);
    if (s) gwr_set_last_error(s, "%s: %s", path, c->err[0] ? c->err : gwr_status_name(s));
    gwr_free(c);
    return s;
}

gwr_status gwr_onnx_read_tensor(const char *path, gwr_weights *w, int64_t *dims, char **name) {
    if (!path || !w || !dims) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_onnx_read_tensor: NULL argument");
    memset(w, 0, sizeof *w);
    if (name) *name = NULL;
    uint8_t *data;
    size_t size = 0;
    gwr_oi_ctx *c;
    gwr_status s0 = open_data(path, &data, &size, &c);
    if (s0) return s0;
    gwr_status s = unpack_tensor(c, data, size, w, dims, name);
    if (s) {
        gwr_buffer_release(w->buffer);
        memset(w, 0, sizeof *w);
        if (name) gwr_free(*name), *name = NULL;
    }
    return close_data(c, data, path, s);
}

/* ---- SequenceProto and OptionalProto (onnx-data.proto) --------------------- */

void gwr_onnx_data_free(gwr_onnx_data *d) {
    if (!d) return;
    for (int64_t i = 0; i < d->count; i++) {
        gwr_buffer_release(d->w[i].buffer);
        gwr_free((void *)(uintptr_t)d->w[i].dims);
    }
    gwr_free(d->w);
    gwr_free(d->name);
    gwr_free(d);
}

/* Appends the TensorProto at [p, p+n) to d. */
static gwr_status data_add_tensor(gwr_oi_ctx *c, gwr_onnx_data *d, int64_t *cap, const uint8_t *p, size_t n) {
    int64_t *dims = gwr_malloc(GWR_MAX_RANK * sizeof *dims);
    if (!dims || gwr_grow((void **)&d->w, sizeof *d->w, cap, d->count + 1)) {
        gwr_free(dims);
        snprintf(c->err, sizeof c->err, "out of memory");
        return GWR_ERR_NOMEM;
    }
    gwr_weights *w = &d->w[d->count];
    memset(w, 0, sizeof *w);
    gwr_status s = unpack_tensor(c, p, n, w, dims, NULL);
    if (s) gwr_free(dims);
    else d->count++;
    return s;
}

/* A SequenceProto of tensors at [p, end) into d's tensors; its name into
 * d->name when `top`. Field numbers: name 1, elem_type 2, tensor_values 3;
 * sparse tensors 4, sequences 5, maps 6 and optionals 7 are refused. */
static gwr_status read_sequence(gwr_oi_ctx *c, gwr_onnx_data *d, const uint8_t *p, const uint8_t *end, int top) {
    int64_t cap = 0;
    gwr_status s = GWR_OK;
    while (p < end && !s) {
        uint32_t num;
        unsigned wt;
        const uint8_t *pl;
        size_t len;
        if (gwr_oi_wire_field(c, &p, end, "SequenceProto", &num, &wt, &pl, &len)) return GWR_ERR_PARSE;
        if (num == 1 && wt == 2 && top && !d->name && !(d->name = gwr_memdup(pl, len))) s = GWR_ERR_NOMEM;
        else if (num == 3 && wt == 2) s = data_add_tensor(c, d, &cap, pl, len);
        else if (num >= 4 && num <= 7)
            snprintf(c->err, sizeof c->err, "a SequenceProto of %s is not supported",
                     num == 4 ? "sparse tensors" : num == 5 ? "sequences" : num == 6 ? "maps" : "optionals"),
                s = GWR_ERR_UNSUPPORTED;
    }
    return s;
}

/* An OptionalProto: name 1, elem_type 2, tensor_value 3, sequence_value 5;
 * sparse tensors 4, maps 6 and optionals 7 refused. */
static gwr_status read_optional(gwr_oi_ctx *c, gwr_onnx_data *d, const uint8_t *p, const uint8_t *end) {
    int64_t cap = 0;
    gwr_status s = GWR_OK;
    while (p < end && !s) {
        uint32_t num;
        unsigned wt;
        const uint8_t *pl;
        size_t len;
        if (gwr_oi_wire_field(c, &p, end, "OptionalProto", &num, &wt, &pl, &len)) return GWR_ERR_PARSE;
        if (num == 1 && wt == 2 && !d->name && !(d->name = gwr_memdup(pl, len))) {
            s = GWR_ERR_NOMEM;
        } else if ((num == 3 || num == 5) && wt == 2) {
            if (d->has_value) {
                snprintf(c->err, sizeof c->err, "an OptionalProto with two values");
                return GWR_ERR_PARSE;
            }
            d->has_value = 1;
            d->elem_kind = num == 3 ? GWR_VALUE_TENSOR : GWR_VALUE_SEQUENCE;
            s = num == 3 ? data_add_tensor(c, d, &cap, pl, len) : read_sequence(c, d, pl, pl + len, 0);
        } else if (num == 4 || num == 6 || num == 7) {
            snprintf(c->err, sizeof c->err, "an OptionalProto of %s is not supported",
                     num == 4 ? "a sparse tensor" : num == 6 ? "a map" : "an optional");
            s = GWR_ERR_UNSUPPORTED;
        }
    }
    return s;
}

gwr_status gwr_onnx_read_data(const char *path, gwr_value_kind kind, gwr_onnx_data **out) {
    if (!path || !out) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_onnx_read_data: NULL argument");
    *out = NULL;
    if (kind != GWR_VALUE_TENSOR && kind != GWR_VALUE_SEQUENCE && kind != GWR_VALUE_OPTIONAL)
        return gwr_set_last_error(GWR_ERR_UNSUPPORTED, "%s: reading a %s is not supported", path, gwr_value_kind_name(kind));
    gwr_onnx_data *d = gwr_calloc(1, sizeof *d);
    if (!d) return gwr_set_last_error(GWR_ERR_NOMEM, "%s: out of memory", path);
    d->kind = kind, d->elem_kind = GWR_VALUE_TENSOR, d->has_value = kind != GWR_VALUE_OPTIONAL;
    uint8_t *data;
    size_t size = 0;
    gwr_oi_ctx *c;
    gwr_status s0 = open_data(path, &data, &size, &c);
    if (s0) {
        gwr_free(d);
        return s0;
    }
    gwr_status s;
    if (kind == GWR_VALUE_TENSOR) {
        int64_t cap = 0;
        s = data_add_tensor(c, d, &cap, data, size);
    } else if (kind == GWR_VALUE_SEQUENCE) {
        s = read_sequence(c, d, data, data + size, 1);
    } else {
        s = read_optional(c, d, data, data + size);
    }
    if (s) gwr_onnx_data_free(d);
    else *out = d;
    return close_data(c, data, path, s);
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
