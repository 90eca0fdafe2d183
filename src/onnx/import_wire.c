/* import_wire.c - a pass over the protobuf wire format of a model before
 * protobuf-c unpacks it, and the split of the main graph's initializers
 * from the rest.
 *
 * Why a pass of our own: protobuf-c recurses into nested messages without
 * a limit (a hostile file nests GraphProto in NodeProto in GraphProto until
 * the stack overflows), keeps strings as NUL-terminated char * (a name with
 * a NUL byte would be cut short without a word), and says only "failed"
 * when unpacking fails. This pass finds all three first, with the byte
 * offset, and it parses lengths and tags exactly as protobuf-c does (tags
 * and lengths at most 5 bytes, varints at most 10).
 *
 * Why the split: unpacking the whole model at once holds the file and a
 * copy of every weight at the same time. Unpacking the main graph's
 * initializers one by one, after the rest, lets the importer give the
 * file's pages back as it goes. */
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_import.h"

typedef struct wire_field {
    uint32_t number;
    unsigned wt;               /* wire type */
    const uint8_t *start;      /* the tag's first byte */
    const uint8_t *payload;    /* after the tag (and length prefix for wt 2) */
    size_t len;                /* payload bytes (wt 2), else the value's bytes */
    const uint8_t *end;        /* one past the field */
} wire_field;

/* Reads a varint of at most maxlen bytes. 0 on success. */
static int rd_varint(const uint8_t **p, const uint8_t *end, int maxlen, uint64_t *v) {
    uint64_t x = 0;
    const uint8_t *q = *p;
    for (int i = 0; i < maxlen; i++) {
        if (q >= end) return -1;
        uint8_t b = *q++;
        if (i < 10) x |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *p = q;
            *v = x;
            return 0;
        }
    }
    return -1;
}

/* Reads one field at *p; 0 on success, -1 malformed (c->err set). */
static int rd_field(gwr_oi_ctx *c, const uint8_t **p, const uint8_t *end, const char *msgname, wire_field *f) {
    const uint8_t *q = *p;
    uint64_t tag, v;
    f->start = q;
    if (rd_varint(&q, end, 5, &tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) {
        gwr_oi_fail(c, GWR_ERR_PARSE, "not a valid ONNX model: bad field tag in %s at byte %zu", msgname,
                    (size_t)(f->start - c->data));
        return -1;
    }
    f->number = (uint32_t)(tag >> 3);
    f->wt = (unsigned)(tag & 7);
    switch (f->wt) {
    case 0:
        f->payload = q;
        if (rd_varint(&q, end, 10, &v)) goto trunc;
        f->len = (size_t)(q - f->payload);
        break;
    case 1:
    case 5: {
        size_t n = f->wt == 1 ? 8 : 4;
        if ((size_t)(end - q) < n) goto trunc;
        f->payload = q;
        f->len = n;
        q += n;
        break;
    }
    case 2:
        if (rd_varint(&q, end, 5, &v) || v > (uint64_t)(end - q)) goto trunc;
        f->payload = q;
        f->len = (size_t)v;
        q += v;
        break;
    default:
        gwr_oi_fail(c, GWR_ERR_PARSE, "not a valid ONNX model: unsupported wire type %u (field %u of %s) at byte %zu",
                    f->wt, (unsigned)f->number, msgname, (size_t)(f->start - c->data));
        return -1;
    }
    f->end = q;
    *p = q;
    return 0;
trunc:
    gwr_oi_fail(c, GWR_ERR_PARSE,
                "not a valid ONNX model: truncated or malformed field %u of %s at byte %zu (file truncated?)",
                (unsigned)f->number, msgname, (size_t)(f->start - c->data));
    return -1;
}

int gwr_oi_wire_field(gwr_oi_ctx *c, const uint8_t **p, const uint8_t *end, const char *msgname, uint32_t *number,
                      unsigned *wt, const uint8_t **payload, size_t *len) {
    wire_field f;
    if (rd_field(c, p, end, msgname, &f)) return -1;
    *number = f.number, *wt = f.wt, *payload = f.payload, *len = f.len;
    return 0;
}

/* The wire type a scalar protobuf type is written with. */
static unsigned scalar_wt(ProtobufCType t) {
    switch (t) {
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_FLOAT: return 5;
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE: return 1;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE: return 2;
    default: return 0;
    }
}

/* "ModelProto" from "onnx.ModelProto". */
static const char *short_name(const ProtobufCMessageDescriptor *d) {
    const char *s = strrchr(d->name, '.');
    return s ? s + 1 : d->name;
}

static int walk(gwr_oi_ctx *c, const ProtobufCMessageDescriptor *desc, const uint8_t *p, const uint8_t *end,
                int depth) {
    const char *mname = short_name(desc);
    if (depth > GWR_OI_MAX_MSG_DEPTH) {
        gwr_oi_fail(c, GWR_ERR_PARSE,
                    "protobuf messages nested deeper than %d (%s at byte %zu): subgraphs or types nested too deep",
                    GWR_OI_MAX_MSG_DEPTH, mname, (size_t)(p - c->data));
        return -1;
    }
    while (p < end) {
        wire_field f;
        if (rd_field(c, &p, end, mname, &f)) return -1;
        const ProtobufCFieldDescriptor *fd = protobuf_c_message_descriptor_get_field(desc, f.number);
        if (!fd) continue; /* unknown fields are kept by protobuf-c as they are */
        unsigned want = scalar_wt(fd->type);
        int packed = fd->label == PROTOBUF_C_LABEL_REPEATED && want != 2 && f.wt == 2;
        if (f.wt != want && !packed) {
            gwr_oi_fail(c, GWR_ERR_PARSE, "not a valid ONNX model: %s.%s has wire type %u, expected %u (byte %zu)",
                        mname, fd->name, f.wt, want, (size_t)(f.start - c->data));
            return -1;
        }
        if (packed && ((want == 5 && f.len % 4) || (want == 1 && f.len % 8))) {
            gwr_oi_fail(c, GWR_ERR_PARSE, "not a valid ONNX model: packed %s.%s has %zu bytes, not a multiple of %d (byte %zu)",
                        mname, fd->name, f.len, want == 5 ? 4 : 8, (size_t)(f.start - c->data));
            return -1;
        }
        if (packed && want == 0 && f.len && (f.payload[f.len - 1] & 0x80)) {
            gwr_oi_fail(c, GWR_ERR_PARSE, "not a valid ONNX model: packed %s.%s ends inside a varint (byte %zu)", mname,
                        fd->name, (size_t)(f.start - c->data));
            return -1;
        }
        if (fd->type == PROTOBUF_C_TYPE_MESSAGE) {
            if (walk(c, fd->descriptor, f.payload, f.payload + f.len, depth + 1)) return -1;
        } else if (fd->type == PROTOBUF_C_TYPE_STRING && memchr(f.payload, 0, f.len)) {
            size_t k = (size_t)((const uint8_t *)memchr(f.payload, 0, f.len) - f.payload);
            gwr_oi_fail(c, GWR_ERR_PARSE, "%s.%s '%.*s' holds a NUL byte (byte %zu), which names may not", mname,
                        fd->name, (int)(k > 64 ? 64 : k), (const char *)f.payload, (size_t)(f.payload + k - c->data));
            return -1;
        }
    }
    return 0;
}

gwr_status gwr_oi_wire_check(gwr_oi_ctx *c) {
    if (walk(c, &onnx__model_proto__descriptor, c->data, c->data + c->size, 0)) return c->st;
    return GWR_OK;
}

/* ModelProto.graph and GraphProto.initializer. */
enum { MODEL_GRAPH = 7, GRAPH_INITIALIZER = 5 };

static size_t varint_size(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) v >>= 7, n++;
    return n;
}

static uint8_t *put_varint(uint8_t *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

gwr_status gwr_oi_wire_split(gwr_oi_ctx *c, uint8_t **skel, size_t *skel_len, gwr_oi_span **inits, size_t *ninits) {
    *skel = NULL, *skel_len = 0, *inits = NULL, *ninits = 0;
    const uint8_t *p, *end = c->data + c->size;
    wire_field f, g;
    /* Pass 1: count initializers and the bytes of everything else. */
    size_t nin = 0, model_rest = 0, graph_rest = 0;
    for (p = c->data; p < end;) {
        if (rd_field(c, &p, end, "ModelProto", &f)) return c->st;
        if (f.number != MODEL_GRAPH || f.wt != 2) {
            model_rest += (size_t)(f.end - f.start);
            continue;
        }
        for (const uint8_t *q = f.payload; q < f.payload + f.len;) {
            if (rd_field(c, &q, f.payload + f.len, "GraphProto", &g)) return c->st;
            if (g.number == GRAPH_INITIALIZER && g.wt == 2) nin++;
            else graph_rest += (size_t)(g.end - g.start);
        }
    }
    if (!nin) return GWR_OK; /* nothing to split: unpack the model as it is */
    *inits = gwr_malloc(nin * sizeof **inits);
    size_t total = model_rest + 1 + varint_size(graph_rest) + graph_rest;
    *skel = gwr_malloc(total ? total : 1);
    if (!*inits || !*skel) {
        gwr_free(*inits), gwr_free(*skel);
        *inits = NULL, *skel = NULL;
        return gwr_oi_fail(c, GWR_ERR_NOMEM, "out of memory");
    }
    /* Pass 2: copy. The graph fields, merged into one (protobuf merges
     * repeated occurrences of a message field by concatenation), go last. */
    uint8_t *o = *skel, *go = *skel + model_rest + 1 + varint_size(graph_rest);
    for (p = c->data; p < end;) {
        (void)rd_field(c, &p, end, "ModelProto", &f);
        if (f.number != MODEL_GRAPH || f.wt != 2) {
            memcpy(o, f.start, (size_t)(f.end - f.start));
            o += f.end - f.start;
            continue;
        }
        for (const uint8_t *q = f.payload; q < f.payload + f.len;) {
            (void)rd_field(c, &q, f.payload + f.len, "GraphProto", &g);
            if (g.number == GRAPH_INITIALIZER && g.wt == 2) {
                (*inits)[(*ninits)++] = (gwr_oi_span){(size_t)(g.payload - c->data), g.len};
            } else {
                memcpy(go, g.start, (size_t)(g.end - g.start));
                go += g.end - g.start;
            }
        }
    }
    *o++ = (uint8_t)(MODEL_GRAPH << 3 | 2);
    o = put_varint(o, graph_rest);
    *skel_len = total;
    return GWR_OK;
}

/* TensorProto.raw_data */
enum { TENSOR_RAW_DATA = 9 };

gwr_status gwr_oi_wire_tensor_split(gwr_oi_ctx *c, gwr_oi_span tensor, size_t min_raw, gwr_oi_span *raw,
                                    uint8_t **rest, size_t *rest_len) {
    const uint8_t *p = c->data + tensor.off, *end = p + tensor.len;
    wire_field f;
    size_t other = 0;
    int found = 0;
    *rest = NULL, *rest_len = 0, raw->off = raw->len = 0;
    while (p < end) {
        if (rd_field(c, &p, end, "TensorProto", &f)) return c->st;
        if (f.number == TENSOR_RAW_DATA && f.wt == 2) {
            /* The last occurrence wins, as protobuf says for a singular field. */
            *raw = (gwr_oi_span){(size_t)(f.payload - c->data), f.len};
            found = 1;
        } else {
            other += (size_t)(f.end - f.start);
        }
    }
    if (!found || raw->len < min_raw) {
        raw->off = raw->len = 0;
        return GWR_OK;
    }
    uint8_t *o = *rest = gwr_malloc(other ? other : 1);
    if (!o) return gwr_oi_fail(c, GWR_ERR_NOMEM, "out of memory");
    for (p = c->data + tensor.off; p < end;) {
        (void)rd_field(c, &p, end, "TensorProto", &f);
        if (f.number == TENSOR_RAW_DATA && f.wt == 2) continue;
        memcpy(o, f.start, (size_t)(f.end - f.start));
        o += f.end - f.start;
    }
    *rest_len = other;
    return GWR_OK;
}

/* TensorProto fields of the plain form (numbers from onnx.proto; a unit
 * test checks them against protobuf-c's descriptor). */
enum { TENSOR_DIMS = 1, TENSOR_DATA_TYPE = 2, TENSOR_NAME = 8 };

int gwr_oi_wire_plain_tensor(gwr_oi_ctx *c, gwr_oi_span tensor, gwr_oi_plain_tensor *t) {
    const uint8_t *p = c->data + tensor.off, *end = p + tensor.len;
    wire_field f;
    uint64_t v = 0;
    memset(t, 0, sizeof *t);
    while (p < end) {
        if (rd_field(c, &p, end, "TensorProto", &f)) return -1;
        const uint8_t *q = f.payload;
        switch (f.number) {
        case TENSOR_DIMS:
            if (f.wt == 0) { /* one element */
                if (t->rank == GWR_MAX_RANK) return 0;
                (void)rd_varint(&q, f.end, 10, &v); /* rd_field read it already */
                t->dims[t->rank++] = (int64_t)v;
            } else if (f.wt == 2) { /* packed */
                while (q < f.end) {
                    if (t->rank == GWR_MAX_RANK || rd_varint(&q, f.end, 10, &v)) return 0;
                    t->dims[t->rank++] = (int64_t)v;
                }
            } else {
                return 0;
            }
            break;
        case TENSOR_DATA_TYPE:
            if (f.wt != 0) return 0;
            (void)rd_varint(&q, f.end, 10, &v);
            t->has_dtype = 1;
            t->dtype = (int32_t)(uint32_t)v; /* protobuf's int32: the low 32 bits */
            break;
        case TENSOR_NAME:
            if (f.wt != 2) return 0;
            t->name = (const char *)f.payload, t->name_len = f.len;
            break;
        case TENSOR_RAW_DATA:
            if (f.wt != 2) return 0;
            t->has_raw = 1;
            t->raw = (gwr_oi_span){(size_t)(f.payload - c->data), f.len};
            break;
        default:
            return 0; /* anything else: protobuf-c and gwr_oi_tensor decide */
        }
    }
    return t->has_raw;
}
