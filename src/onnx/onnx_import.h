/* onnx_import.h - what the files of the ONNX importer share (import.c on
 * import_wire.c and import_tensor.c, all three on import_ctx.c). Private
 * to src/onnx: it names protobuf-c types, which nothing outside src/onnx
 * may see. */
#ifndef GWR_ONNX_IMPORT_H
#define GWR_ONNX_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include "gwr/onnx.h"
#include "onnx.pb-c.h"
#include "util/util.h"

/* Subgraphs (If/Loop/Scan bodies) nested deeper than this are refused. */
#define GWR_OI_MAX_GRAPH_DEPTH 64
/* Protobuf messages nested deeper than this are refused before protobuf-c
 * (which recurses without a limit) sees them. A graph nested
 * GWR_OI_MAX_GRAPH_DEPTH deep needs 3 levels per graph (node, attribute,
 * graph) plus its types; this leaves room for that and no more. */
#define GWR_OI_MAX_MSG_DEPTH 320

/* A byte range of the model. */
typedef struct gwr_oi_span {
    size_t off, len;
} gwr_oi_span;

/* An external data file, memory-mapped once per import and shared by the
 * weights that borrow from it (refcounted; the last reference unmaps). */
typedef struct gwr_oi_map gwr_oi_map;

typedef struct gwr_oi_extfile {
    char *location;   /* as written in the model */
    gwr_oi_map *map;  /* one reference held by the import */
    size_t size;      /* file size */
} gwr_oi_extfile;

typedef struct gwr_oi_deferred {
    gwr_layer *layer;
    int slot;
    const char *name;
    const Onnx__NodeProto *node;  /* for messages */
    size_t idx;                   /* its index in its graph */
} gwr_oi_deferred;

/* One graph being imported, innermost last in gwr_oi_ctx.scopes. */
typedef struct gwr_oi_scope {
    gwr_network *net;
    const Onnx__GraphProto *g;
    gwr_strmap outs;          /* node output name -> node index + 1 */
    gwr_strmap node_names;    /* every node name of the graph -> 1 */
    gwr_oi_deferred *def;     /* reads of names produced later in this graph */
    int64_t ndef, defcap;
    uint64_t counter;         /* for generated names */
} gwr_oi_scope;

typedef struct gwr_oi_ctx {
    const char *path;                 /* the model, for messages */
    const char *base_dir;             /* external data directory, or NULL */
    char *base_real;                  /* realpath(base_dir), made on first use */
    gwr_onnx_load_options opt;
    const uint8_t *data;              /* the serialized model */
    size_t size;
    int drop_pages;                   /* data is our own mapping: give consumed pages back */
    size_t dropped;                   /* [0, dropped) given back */
    ProtobufCAllocator alloc;         /* malloc/free, so that bytes can be stolen */
    int steal_raw;                    /* the TensorProto given to gwr_oi_tensor came from
                                         alloc (its raw_data can be taken), not from an arena */
    void *big_raw;                    /* raw_data put into a TensorProto by the importer, */
    size_t big_raw_len;               /* mmap'd (released with munmap, not free) */
    gwr_oi_map *raw_chunk;            /* the chunk raw_data is copied into now */
    size_t raw_used;                  /* bytes of it given out */
    gwr_oi_extfile *ext;
    int64_t next, extcap;
    gwr_oi_scope scopes[GWR_OI_MAX_GRAPH_DEPTH + 1];
    int depth;                        /* index of the innermost scope in use */
    int deferred;                     /* some node read a name produced after it */
    int wraps;                        /* subgraph contexts put in front of err */
    gwr_status st;
    char err[GWR_ERRMSG_MAX];         /* the problem, without the path */
} gwr_oi_ctx;

/* import_ctx.c, at the bottom: the other files of the importer use it,
 * and it uses none of them. Records the first failure (later ones are
 * ignored) and returns s. */
gwr_status gwr_oi_fail(gwr_oi_ctx *c, gwr_status s, const char *fmt, ...) GWR_PRINTF(3, 4);
/* Puts "<prefix>: " in front of the recorded message (context on unwind). */
void gwr_oi_wrap(gwr_oi_ctx *c, const char *fmt, ...) GWR_PRINTF(2, 3);
/* Gives the pages of the model's own mapping before byte `upto` back to
 * the kernel (when the model is a file gwr mapped). */
void gwr_oi_drop_consumed(gwr_oi_ctx *c, size_t upto);

/* import_wire.c. Walks the whole message tree with protobuf-c's
 * descriptors before protobuf-c unpacks it: lengths, wire types, nesting
 * depth, and NUL bytes in string fields (protobuf-c would silently cut such
 * a string at the NUL). */
gwr_status gwr_oi_wire_check(gwr_oi_ctx *c);
/* Reads the field at *p of a message (c->data its file's first byte, for
 * messages): its number, wire type, and payload (after a length prefix for
 * wire type 2; for the others the value's bytes). For messages protobuf-c
 * was not generated for (onnx-data.proto's SequenceProto and
 * OptionalProto). 0 on success, -1 malformed (c->err set). */
int gwr_oi_wire_field(gwr_oi_ctx *c, const uint8_t **p, const uint8_t *end, const char *msgname, uint32_t *number,
                      unsigned *wt, const uint8_t **payload, size_t *len);

/* Splits a checked model into a skeleton (the model without the main
 * graph's initializers, malloc'd into *skel; NULL when there are none) and
 * the initializers' byte ranges in file order, so that they can be
 * unpacked one at a time. */
gwr_status gwr_oi_wire_split(gwr_oi_ctx *c, uint8_t **skel, size_t *skel_len, gwr_oi_span **inits,
                             size_t *ninits);

/* Finds the raw_data of a TensorProto at `tensor`: when it holds at least
 * min_raw bytes, *raw gets its range and *rest (malloc'd) the message
 * without it; otherwise raw->len is 0 and *rest NULL. */
gwr_status gwr_oi_wire_tensor_split(gwr_oi_ctx *c, gwr_oi_span tensor, size_t min_raw, gwr_oi_span *raw,
                                    uint8_t **rest, size_t *rest_len);

/* A TensorProto in its common form: dims, data_type, name and raw_data
 * and nothing else (the last occurrence of a singular field wins, as
 * protobuf says). name points into the model, not NUL-terminated. */
typedef struct gwr_oi_plain_tensor {
    const char *name;
    size_t name_len;
    int has_dtype, has_raw;
    int32_t dtype;
    int rank;
    int64_t dims[GWR_MAX_RANK];
    gwr_oi_span raw;
} gwr_oi_plain_tensor;

/* Reads the TensorProto at `tensor` without protobuf-c: 1 when it is in
 * the plain form (raw_data present, at most GWR_MAX_RANK dims), 0 when it
 * is not (the caller unpacks it), -1 when it is malformed (c->err set). */
int gwr_oi_wire_plain_tensor(gwr_oi_ctx *c, gwr_oi_span tensor, gwr_oi_plain_tensor *t);

/* import_tensor.c. Converts a TensorProto into weights: w->dims and
 * w->name point into t, w->buffer is a new reference the caller releases.
 * raw_data is stolen from t (t no longer holds it) rather than copied.
 * `what` names the tensor in messages ("initializer 'W'"). */
gwr_status gwr_oi_tensor(gwr_oi_ctx *c, Onnx__TensorProto *t, const char *what, gwr_weights *w);
/* Weights for a plain TensorProto: its raw_data copied once, into shared
 * 64-byte aligned chunks of anonymous memory (see import_tensor.c). The
 * same checks and messages as gwr_oi_tensor; w->dims point into t. */
gwr_status gwr_oi_plain_weights(gwr_oi_ctx *c, const gwr_oi_plain_tensor *t, const char *what, gwr_weights *w);
/* Drops the import's references to the external files and raw chunks. */
void gwr_oi_ext_close(gwr_oi_ctx *c);

#endif
