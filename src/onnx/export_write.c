/* export_write.c - gwr_onnx_save and gwr_onnx_save_memory: pack the tree
 * export.c builds, to memory in one exact-size buffer, or streamed to a
 * file through a small buffer (weight bytes go from the network straight to
 * write(2)). External data: tensors at or above a threshold move to a side
 * file at aligned offsets (one copy of bytes that several tensors share).
 * Both files are written under temporary names in their directory and
 * renamed into place, so a failure leaves nothing behind. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/ir_api.h"
#include "onnx/onnx_common.h"
#include "onnx/onnx_export.h"

#define DEFAULT_THRESHOLD 1024
#define DEFAULT_ALIGN 4096
#define WRITE_BUF (1u << 20)

/* ---- a ProtobufCBuffer that streams to a FILE ---- */

typedef struct ox_writer {
    ProtobufCBuffer base;
    FILE *f;
    uint8_t *buf;
    size_t n, cap;
    uint64_t total;
    int err; /* errno of the first failed write, or 0 */
} ox_writer;

static void writer_put(ox_writer *w, const void *data, size_t len) {
    if (w->err || !len) return;
    if (fwrite(data, 1, len, w->f) != len) w->err = errno ? errno : EIO;
}

static void writer_flush(ox_writer *w) {
    writer_put(w, w->buf, w->n);
    w->n = 0;
}

static void writer_append(ProtobufCBuffer *b, size_t len, const uint8_t *data) {
    ox_writer *w = (ox_writer *)b;
    w->total += len;
    if (w->n + len <= w->cap) {
        memcpy(w->buf + w->n, data, len);
        w->n += len;
        return;
    }
    writer_flush(w);
    if (len >= w->cap / 2) writer_put(w, data, len); /* big: straight from the network */
    else memcpy(w->buf, data, len), w->n = len;
}

static void writer_zeros(ox_writer *w, uint64_t n) {
    static const uint8_t zeros[4096];
    while (n) {
        size_t k = n < sizeof zeros ? (size_t)n : sizeof zeros;
        writer_append(&w->base, k, zeros);
        n -= k;
    }
}

/* Opens `tmp` for writing, unbuffered (the writer buffers). */
static int writer_open(ox_writer *w, const char *tmp) {
    memset(w, 0, sizeof *w);
    w->base.append = writer_append;
    if (!(w->buf = gwr_malloc(WRITE_BUF))) {
        w->err = ENOMEM;
        return -1;
    }
    w->cap = WRITE_BUF;
    if (!(w->f = fopen(tmp, "wb"))) {
        w->err = errno;
        gwr_free(w->buf);
        w->buf = NULL;
        return -1;
    }
    setvbuf(w->f, NULL, _IONBF, 0);
    return 0;
}

/* Flushes and closes; the first error's errno, or 0. */
static int writer_close(ox_writer *w) {
    if (w->f) {
        writer_flush(w);
        if (fclose(w->f) && !w->err) w->err = errno ? errno : EIO;
        w->f = NULL;
    }
    gwr_free(w->buf);
    w->buf = NULL;
    return w->err;
}

/* ---- external data ---- */

/* One range of the side file: the bytes of one or more tensors. */
typedef struct ext_range {
    const void *data;
    size_t nbytes;
    uint64_t offset;
} ext_range;

typedef struct ext_plan {
    ext_range *ranges;
    int64_t n, cap;
    uint64_t size; /* of the side file */
} ext_plan;

static Onnx__StringStringEntryProto *entry(gwr_arena *a, const char *key, const char *value) {
    Onnx__StringStringEntryProto *e = gwr_arena_alloc(a, sizeof *e);
    if (!e) return NULL;
    Onnx__StringStringEntryProto init = ONNX__STRING_STRING_ENTRY_PROTO__INIT;
    *e = init;
    e->key = (char *)key;
    e->value = (char *)value;
    return e;
}

/* Moves every raw-data tensor of at least `threshold` bytes to the side
 * file `location`: lays out the ranges (aligned; bytes shared by several
 * tensors stored once) and rewrites the TensorProtos to point there. */
static gwr_status plan_external(gwr_ox_ctx *c, ext_plan *p, const char *location, size_t threshold, size_t align) {
    gwr_ptrmap seen = {0}; /* data pointer -> range index + 1 */
    gwr_status s = GWR_OK;
    for (int64_t i = 0; i < c->ntensors && !s; i++) {
        gwr_ox_tensor *t = &c->tensors[i];
        if (t->nbytes < threshold) continue;
        intptr_t r = (intptr_t)gwr_ptrmap_get(&seen, t->data);
        if (!r || p->ranges[r - 1].nbytes != t->nbytes) {
            uint64_t off = (p->size + align - 1) / align * align;
            if (off < p->size || off + t->nbytes < off) {
                s = gwr_ox_fail(c, GWR_ERR_UNSUPPORTED, "external data larger than 2^64 bytes");
                break;
            }
            if (gwr_grow((void **)&p->ranges, sizeof *p->ranges, &p->cap, p->n + 1) ||
                (!r && gwr_ptrmap_put(&seen, t->data, (void *)(intptr_t)(p->n + 1)))) {
                s = gwr_ox_fail(c, GWR_ERR_NOMEM, "out of memory");
                break;
            }
            p->ranges[p->n] = (ext_range){t->data, t->nbytes, off};
            r = ++p->n;
            p->size = off + t->nbytes;
        }
        char num[2][24];
        snprintf(num[0], sizeof num[0], "%" PRIu64, p->ranges[r - 1].offset);
        snprintf(num[1], sizeof num[1], "%zu", t->nbytes);
        Onnx__StringStringEntryProto **ev = gwr_arena_alloc(&c->arena, 3 * sizeof *ev);
        char *o = ev ? gwr_arena_strdup(&c->arena, num[0]) : NULL, *l = o ? gwr_arena_strdup(&c->arena, num[1]) : NULL;
        if (!l || !(ev[0] = entry(&c->arena, "location", location)) || !(ev[1] = entry(&c->arena, "offset", o)) ||
            !(ev[2] = entry(&c->arena, "length", l))) {
            s = gwr_ox_fail(c, GWR_ERR_NOMEM, "out of memory");
            break;
        }
        Onnx__TensorProto *tp = t->tp;
        tp->has_raw_data = 0;
        tp->raw_data.len = 0;
        tp->raw_data.data = NULL;
        tp->has_data_location = 1;
        tp->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
        tp->n_external_data = 3;
        tp->external_data = ev;
    }
    gwr_ptrmap_free(&seen);
    return s;
}

/* ---- paths ---- */

/* "<path>.tmp.<pid>", malloc'd. */
static char *tmp_name(const char *path) {
    size_t n = strlen(path) + 32;
    char *t = gwr_malloc(n);
    if (t) snprintf(t, n, "%s.tmp.%ld", path, (long)getpid());
    return t;
}

/* The directory part of path with its slash ("" for none), and the rest. */
static size_t dir_len(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? (size_t)(slash - path) + 1 : 0;
}

/* A side file name must stay inside the model's directory. */

/* ---- saving ---- */

static gwr_status save_error(gwr_network *net, const char *path, gwr_status s, const char *msg) {
    char m[GWR_ERRMSG_MAX];
    snprintf(m, sizeof m, "%s", msg); /* msg may be net's own buffer */
    return gwr_ir_error(net, s, "cannot save '%s': %s", path, m);
}

/* Writes the packed model to file `tmp`; 0 or an errno. */
static int write_model(const gwr_pb_out *packed, const char *tmp) {
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) return errno;
    int err = gwr_pb_write(packed, fd);
    if (close(fd) && !err) err = errno ? errno : EIO;
    return err;
}

static int write_side_file(const ext_plan *p, const char *tmp) {
    ox_writer w;
    if (writer_open(&w, tmp)) return w.err;
    for (int64_t i = 0; i < p->n && !w.err; i++) {
        writer_zeros(&w, p->ranges[i].offset - w.total);
        writer_append(&w.base, p->ranges[i].nbytes, p->ranges[i].data);
    }
    return writer_close(&w);
}

gwr_status gwr_onnx_save(gwr_network *net, const char *path, const gwr_onnx_save_options *opt) {
    if (!net) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_onnx_save: NULL network");
    if (!path || !*path) return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_onnx_save: no path");
    gwr_onnx_save_options o = {0};
    if (opt) o = *opt;
    size_t threshold = o.external_threshold ? o.external_threshold : DEFAULT_THRESHOLD;
    size_t align = o.external_align ? o.external_align : DEFAULT_ALIGN;
    size_t dl = dir_len(path);
    if (!path[dl]) return save_error(net, path, GWR_ERR_INVALID_ARG, "the path names a directory");
    if (o.external_file && !gwr_onnx_location_ok(o.external_file, 1))
        return save_error(net, path, GWR_ERR_INVALID_ARG,
                          "the external data file must be a relative path inside the model's directory (no '..')");

    gwr_ox_ctx c = {0};
    gwr_arena_init(&c.arena);
    ext_plan plan = {0};
    char *loc = NULL, *data_path = NULL, *data_tmp = NULL, *model_tmp = NULL;
    int data_written = 0, model_written = 0;
    Onnx__ModelProto *m;
    gwr_pb_out packed = {0};
    c.provenance = o.provenance;
    gwr_status s = gwr_ox_build(&c, net, &m);
    if (s) goto fail;
    if (gwr_pb_pack(&packed, &m->base)) {
        s = gwr_ox_fail(&c, GWR_ERR_NOMEM, "out of memory");
        goto fail;
    }
    size_t size = packed.total;
    if (o.external_data || size > GWR_OX_MAX_MODEL) {
        /* The side file's name as the model records it, and its path. */
        if (o.external_file) {
            loc = gwr_strdup(o.external_file);
        } else if ((loc = gwr_malloc(strlen(path + dl) + 6))) {
            sprintf(loc, "%s.data", path + dl);
        }
        if (!loc || !(data_path = gwr_malloc(dl + strlen(loc) + 1))) {
            s = gwr_ox_fail(&c, GWR_ERR_NOMEM, "out of memory");
            goto fail;
        }
        memcpy(data_path, path, dl);
        strcpy(data_path + dl, loc);
        if (!strcmp(data_path, path)) {
            s = gwr_ox_fail(&c, GWR_ERR_INVALID_ARG, "the external data file is the model file itself");
            goto fail;
        }
        if ((s = plan_external(&c, &plan, loc, threshold, align))) goto fail;
        if (gwr_pb_pack(&packed, &m->base)) {
            s = gwr_ox_fail(&c, GWR_ERR_NOMEM, "out of memory");
            goto fail;
        }
        size = packed.total;
    }
    if (size > GWR_OX_MAX_MODEL) {
        s = gwr_ox_fail(&c, GWR_ERR_UNSUPPORTED,
                        "the model needs %zu bytes, more than protobuf's limit of 2 GiB even with %" PRId64
                        " tensors in external data (threshold %zu bytes)",
                        size, plan.n, threshold);
        goto fail;
    }
    if (!(model_tmp = tmp_name(path)) || (plan.n && !(data_tmp = tmp_name(data_path)))) {
        s = gwr_ox_fail(&c, GWR_ERR_NOMEM, "out of memory");
        goto fail;
    }
    int err;
    if (plan.n) {
        data_written = 1;
        if ((err = write_side_file(&plan, data_tmp))) {
            s = gwr_ox_fail(&c, GWR_ERR_IO, "cannot write '%s': %s", data_tmp, strerror(err));
            goto fail;
        }
    }
    model_written = 1;
    if ((err = write_model(&packed, model_tmp))) {
        s = gwr_ox_fail(&c, GWR_ERR_IO, "cannot write '%s': %s", model_tmp, strerror(err));
        goto fail;
    }
    if (plan.n && rename(data_tmp, data_path)) {
        s = gwr_ox_fail(&c, GWR_ERR_IO, "cannot rename '%s' to '%s': %s", data_tmp, data_path, strerror(errno));
        goto fail;
    }
    if (rename(model_tmp, path)) {
        s = gwr_ox_fail(&c, GWR_ERR_IO, "cannot rename '%s' to '%s': %s", model_tmp, path, strerror(errno));
        if (plan.n) unlink(data_path); /* it belongs to the model that failed */
        goto fail;
    }
    gwr_pb_free(&packed);
    gwr_ox_free(&c);
    gwr_free(plan.ranges), gwr_free(loc), gwr_free(data_path), gwr_free(data_tmp), gwr_free(model_tmp);
    return GWR_OK;

fail:
    if (data_written && data_tmp) unlink(data_tmp);
    if (model_written && model_tmp) unlink(model_tmp);
    s = save_error(net, path, s, c.err);
    gwr_pb_free(&packed);
    gwr_ox_free(&c);
    gwr_free(plan.ranges), gwr_free(loc), gwr_free(data_path), gwr_free(data_tmp), gwr_free(model_tmp);
    return s;
}

gwr_status gwr_onnx_save_memory(gwr_network *net, void **data, size_t *size) {
    if (!net) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_onnx_save_memory: NULL network");
    if (!data || !size) return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_onnx_save_memory: NULL output");
    *data = NULL;
    *size = 0;
    gwr_ox_ctx c = {0};
    gwr_arena_init(&c.arena);
    Onnx__ModelProto *m;
    gwr_status s = gwr_ox_build(&c, net, &m);
    gwr_pb_out packed = {0};
    if (!s && gwr_pb_pack(&packed, &m->base)) s = gwr_ox_fail(&c, GWR_ERR_NOMEM, "out of memory");
    if (!s) {
        size_t n = packed.total;
        uint8_t *buf = NULL;
        if (n > GWR_OX_MAX_MODEL)
            s = gwr_ox_fail(&c, GWR_ERR_UNSUPPORTED,
                            "the model needs %zu bytes, more than protobuf's limit of 2 GiB; save it to a file "
                            "with external data",
                            n);
        else if (!(buf = gwr_malloc(n ? n : 1)))
            s = gwr_ox_fail(&c, GWR_ERR_NOMEM, "out of memory for %zu bytes", n);
        else
            gwr_pb_copy(&packed, buf);
        if (s) {
            gwr_free(buf);
        } else {
            *data = buf;
            *size = n;
        }
    }
    if (s) {
        char m2[GWR_ERRMSG_MAX];
        snprintf(m2, sizeof m2, "%s", c.err);
        gwr_ir_error(net, s, "cannot save to memory: %s", m2);
    }
    gwr_pb_free(&packed);
    gwr_ox_free(&c);
    return s;
}
