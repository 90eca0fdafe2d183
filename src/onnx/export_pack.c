/* export_pack.c - serializes a protobuf-c message tree back to front.
 *
 * Why not protobuf-c's own packing: it writes a nested message's length
 * before the message, so it computes the size of every message once per
 * enclosing level (a string inside an attribute inside a node inside the
 * graph inside the model is measured five times), and it copies every byte
 * through its buffer. Written from the last field to the first, a
 * message's length is known when its tag goes in front of it: one visit
 * per field. Bytes fields of REF_MIN bytes or more (the weights) are not
 * copied at all: the output keeps a reference, and the file is written
 * with writev straight from the network's buffers.
 *
 * The bytes are exactly protobuf-c's (fields in descriptor order, which
 * is field-number order; repeated elements in order; the same rules for
 * what an optional or oneof field writes); tests/unit/test_onnx_export.c
 * compares the two on every model of the ONNX backend test data. What
 * this packer does not cover (unknown fields, and proto3's unlabeled
 * fields, which onnx.proto does not use) is packed by protobuf-c and
 * copied in. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "onnx/onnx_export.h"

#define REF_MIN 4096

/* A buffer that grows downward: the output so far is buf[pos, cap). */
static int room(gwr_pb_out *w, size_t n) {
    if (w->pos >= n) return 0;
    size_t used = w->cap - w->pos, ncap = w->cap ? w->cap * 2 : 1 << 16;
    while (ncap - used < n) ncap *= 2;
    uint8_t *nb = gwr_malloc(ncap);
    if (!nb) return -1;
    if (used) memcpy(nb + ncap - used, w->buf + w->pos, used);
    gwr_free(w->buf);
    w->buf = nb, w->cap = ncap, w->pos = ncap - used;
    return 0;
}

static int put(gwr_pb_out *w, const void *p, size_t n) {
    if (n >= REF_MIN) {
        if (gwr_grow((void **)&w->refs, sizeof *w->refs, &w->refcap, w->nrefs + 1)) return -1;
        w->refs[w->nrefs++] = (gwr_pb_ref){p, n, w->cap - w->pos};
    } else {
        if (room(w, n)) return -1;
        w->pos -= n;
        if (n) memcpy(w->buf + w->pos, p, n);
    }
    w->total += n;
    return 0;
}

/* Tags and lengths are most of the calls: written in place, not through
 * put's memcpy. */
static int put_varint(gwr_pb_out *w, uint64_t v) {
    uint8_t b[10];
    size_t n = 0;
    while (v >= 0x80) b[n++] = (uint8_t)(v | 0x80), v >>= 7;
    b[n++] = (uint8_t)v;
    if (w->pos < n && room(w, n)) return -1;
    uint8_t *d = w->buf + (w->pos -= n);
    for (size_t i = 0; i < n; i++) d[i] = b[i];
    w->total += n;
    return 0;
}

static int put_tag(gwr_pb_out *w, uint32_t id, unsigned wt) { return put_varint(w, (uint64_t)id << 3 | wt); }

static int pack_message(gwr_pb_out *w, const ProtobufCMessage *m);

/* The varint a scalar of type t at p is written as; 0 when t is not
 * written as a varint. */
static int varint_of(ProtobufCType t, const void *p, uint64_t *v) {
    switch (t) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_ENUM: /* negative: ten bytes, sign-extended */
        *v = (uint64_t)(int64_t) * (const int32_t *)p;
        return 1;
    case PROTOBUF_C_TYPE_UINT32: *v = *(const uint32_t *)p; return 1;
    case PROTOBUF_C_TYPE_SINT32: {
        int32_t x = *(const int32_t *)p;
        *v = ((uint32_t)x << 1) ^ (uint32_t)(x >> 31);
        return 1;
    }
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_UINT64: *v = *(const uint64_t *)p; return 1;
    case PROTOBUF_C_TYPE_SINT64: {
        int64_t x = *(const int64_t *)p;
        *v = ((uint64_t)x << 1) ^ (uint64_t)(x >> 63);
        return 1;
    }
    case PROTOBUF_C_TYPE_BOOL: *v = *(const protobuf_c_boolean *)p ? 1 : 0; return 1;
    default: return 0;
    }
}

/* One value of a field (protobuf-c's "required" form), at p. */
static int pack_value(gwr_pb_out *w, const ProtobufCFieldDescriptor *f, const void *p) {
    uint64_t v;
    if (varint_of(f->type, p, &v)) return put_varint(w, v) || put_tag(w, f->id, 0);
    switch (f->type) {
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_FLOAT:
        return put(w, p, 4) || put_tag(w, f->id, 5);
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return put(w, p, 8) || put_tag(w, f->id, 1);
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(const char *const *)p;
        size_t n = s ? strlen(s) : 0;
        return put(w, s, n) || put_varint(w, n) || put_tag(w, f->id, 2);
    }
    case PROTOBUF_C_TYPE_BYTES: {
        const ProtobufCBinaryData *b = p;
        return put(w, b->data, b->len) || put_varint(w, b->len) || put_tag(w, f->id, 2);
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessage *m = *(const ProtobufCMessage *const *)p;
        uint64_t before = w->total;
        if (m && pack_message(w, m)) return -1;
        return put_varint(w, w->total - before) || put_tag(w, f->id, 2);
    }
    default:
        return -1;
    }
}

static size_t elem_size(ProtobufCType t) {
    switch (t) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE: return 8;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_MESSAGE: return sizeof(void *);
    case PROTOBUF_C_TYPE_BYTES: return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_BOOL: return sizeof(protobuf_c_boolean);
    default: return 4;
    }
}

/* What protobuf-c packs and this file does not: copied in from it. */
static int pack_foreign(gwr_pb_out *w, const ProtobufCMessage *m) {
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *b = gwr_malloc(n ? n : 1);
    if (!b || gwr_grow((void **)&w->owned, sizeof *w->owned, &w->owncap, w->nowned + 1)) {
        gwr_free(b);
        return -1;
    }
    protobuf_c_message_pack(m, b);
    /* Big: referenced, not copied, so kept until the output is written. */
    w->owned[w->nowned++] = b;
    return put(w, b, n);
}

/* A packed repeated scalar field of n > 0 elements at a: one
 * length-delimited run of the values (ONNX's typed tensor data). */
static int pack_packed(gwr_pb_out *w, const ProtobufCFieldDescriptor *f, const char *a, size_t n) {
    uint64_t before = w->total;
    size_t sz = elem_size(f->type);
    switch (f->type) {
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE: /* little-endian host: the array is the wire form */
        if (put(w, a, n * sz)) return -1;
        break;
    default:
        for (size_t k = n; k-- > 0;) {
            uint64_t v;
            if (!varint_of(f->type, a + k * sz, &v) || put_varint(w, v)) return -1;
        }
    }
    return put_varint(w, w->total - before) || put_tag(w, f->id, 2);
}

static int pack_message(gwr_pb_out *w, const ProtobufCMessage *m) {
    const ProtobufCMessageDescriptor *d = m->descriptor;
    if (m->n_unknown_fields) return pack_foreign(w, m);
    for (unsigned i = d->n_fields; i-- > 0;) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        const char *member = (const char *)m + f->offset, *q = (const char *)m + f->quantifier_offset;
        if (f->label == PROTOBUF_C_LABEL_NONE) return pack_foreign(w, m);
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)q, sz = elem_size(f->type);
            const char *a = *(const char *const *)member;
            if (!n) continue;
            if (f->flags & PROTOBUF_C_FIELD_FLAG_PACKED) {
                if (pack_packed(w, f, a, n)) return -1;
                continue;
            }
            for (size_t k = n; k-- > 0;)
                if (pack_value(w, f, a + k * sz)) return -1;
            continue;
        }
        if (f->label == PROTOBUF_C_LABEL_OPTIONAL) {
            if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
                if (*(const uint32_t *)q != f->id) continue;
            } else if (f->type != PROTOBUF_C_TYPE_MESSAGE && f->type != PROTOBUF_C_TYPE_STRING &&
                       !*(const protobuf_c_boolean *)q) {
                continue;
            }
            if (f->type == PROTOBUF_C_TYPE_MESSAGE || f->type == PROTOBUF_C_TYPE_STRING) {
                const void *ptr = *(const void *const *)member;
                if (!ptr || ptr == f->default_value) continue;
            }
        }
        if (pack_value(w, f, member)) return -1;
    }
    return 0;
}

gwr_status gwr_pb_pack(gwr_pb_out *w, const ProtobufCMessage *m) {
    gwr_pb_free(w);
    return pack_message(w, m) ? GWR_ERR_NOMEM : GWR_OK;
}

void gwr_pb_free(gwr_pb_out *w) {
    for (int64_t i = 0; i < w->nowned; i++) gwr_free(w->owned[i]);
    gwr_free(w->owned), gwr_free(w->refs), gwr_free(w->buf);
    memset(w, 0, sizeof *w);
}

/* The output's pieces in order: f(ctx, data, len) for each; stops at the
 * first nonzero return. */
static int each_piece(const gwr_pb_out *w, int (*f)(void *ctx, const void *p, size_t n), void *ctx) {
    size_t cur = w->pos;
    for (int64_t i = w->nrefs; i-- > 0;) {
        const gwr_pb_ref *r = &w->refs[i];
        size_t at = w->cap - r->after;
        if (at > cur && f(ctx, w->buf + cur, at - cur)) return -1;
        cur = at;
        if (f(ctx, r->data, r->len)) return -1;
    }
    return w->cap > cur ? f(ctx, w->buf + cur, w->cap - cur) : 0;
}

static int copy_piece(void *ctx, const void *p, size_t n) {
    uint8_t **o = ctx;
    memcpy(*o, p, n);
    *o += n;
    return 0;
}

void gwr_pb_copy(const gwr_pb_out *w, void *dst) {
    uint8_t *o = dst;
    (void)each_piece(w, copy_piece, &o);
}

/* writev in batches of up to IOV_BATCH pieces. */
#define IOV_BATCH 512
typedef struct {
    int fd, err;
    struct iovec iov[IOV_BATCH];
    int n;
} vwriter;

static int vflush(vwriter *v) {
    struct iovec *iov = v->iov;
    int n = v->n;
    v->n = 0;
    while (n > 0) {
        ssize_t k = writev(v->fd, iov, n);
        if (k < 0) {
            if (errno == EINTR) continue;
            v->err = errno;
            return -1;
        }
        while (n > 0 && (size_t)k >= iov->iov_len) k -= (ssize_t)iov->iov_len, iov++, n--;
        if (n > 0) iov->iov_base = (char *)iov->iov_base + k, iov->iov_len -= (size_t)k;
    }
    return 0;
}

static int write_piece(void *ctx, const void *p, size_t n) {
    vwriter *v = ctx;
    while (n) {
        /* writev's total must fit ssize_t: big pieces go in 1 GiB steps. */
        size_t k = n < ((size_t)1 << 30) ? n : (size_t)1 << 30;
        v->iov[v->n++] = (struct iovec){(void *)(uintptr_t)p, k};
        if (v->n == IOV_BATCH && vflush(v)) return -1;
        p = (const char *)p + k, n -= k;
    }
    return 0;
}

int gwr_pb_write(const gwr_pb_out *w, int fd) {
    vwriter v = {.fd = fd};
    if (each_piece(w, write_piece, &v) || vflush(&v)) return v.err ? v.err : EIO;
    return 0;
}
