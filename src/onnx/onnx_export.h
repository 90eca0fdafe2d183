/* onnx_export.h - what the two files of the ONNX exporter share: export.c
 * builds a protobuf-c message tree that points into the network (names,
 * attribute arrays, weight bytes: nothing is copied), export_write.c packs
 * it to memory or streams it to a file, with the large tensors optionally
 * moved to a side file. Private to src/onnx. */
#ifndef GWR_ONNX_EXPORT_H
#define GWR_ONNX_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "gwr/onnx.h"
#include "onnx.pb-c.h"
#include "util/util.h"

/* A TensorProto the exporter made from weights with raw bytes: the
 * candidates for external data. */
typedef struct gwr_ox_tensor {
    Onnx__TensorProto *tp;
    const void *data;
    size_t nbytes;
} gwr_ox_tensor;

/* A string field of an unpacked (serialized-in-a-property) message that the
 * exporter pointed elsewhere; put back before the message is freed. */
typedef struct gwr_ox_patch {
    char **field;
    char *orig;
} gwr_ox_patch;

/* A domain the written layers use, with the newest since_version among
 * their ops: what an opset import added for it must be at least. */
typedef struct gwr_ox_domain {
    const char *domain;
    int64_t since;
} gwr_ox_domain;

typedef struct gwr_ox_ctx {
    gwr_network *net;            /* the root being saved */
    gwr_arena arena;             /* every message struct and array we build */
    ProtobufCMessage **unpacked; /* messages unpacked from properties */
    int64_t nunpacked, unpacked_cap;
    gwr_ox_patch *patches;
    int64_t npatches, patches_cap;
    gwr_ox_tensor *tensors;      /* raw-data tensors, in the order built */
    int64_t ntensors, tensors_cap;
    gwr_ox_domain *domains;
    int64_t ndomains, domains_cap;
    gwr_status st;
    int64_t dtype_ir;            /* the IR version the element types written need */
    int provenance;              /* write layers' provenance (node metadata_props) */
    char err[GWR_ERRMSG_MAX];    /* the problem, without the path */
} gwr_ox_ctx;

/* Records the first failure (later ones are ignored) and returns s. */
gwr_status gwr_ox_fail(gwr_ox_ctx *c, gwr_status s, const char *fmt, ...) GWR_PRINTF(3, 4);

/* export.c. Checks net (a root network that passes gwr_network_verify, no
 * written layer reading a removed one) and builds the model in *out; the
 * tree lives until gwr_ox_free. Tensors are embedded (raw_data). */
gwr_status gwr_ox_build(gwr_ox_ctx *c, gwr_network *net, Onnx__ModelProto **out);
/* Frees the tree and everything else the context holds. */
void gwr_ox_free(gwr_ox_ctx *c);

/* export_pack.c. A message serialized back to front (see there): the
 * bytes buf[pos, cap) with the large bytes fields kept by reference. */
typedef struct gwr_pb_ref {
    const void *data;
    size_t len;
    size_t after; /* bytes of buf that follow it in the output */
} gwr_pb_ref;

typedef struct gwr_pb_out {
    uint8_t *buf;
    size_t cap, pos;
    gwr_pb_ref *refs;
    int64_t nrefs, refcap;
    uint8_t **owned; /* bytes packed by protobuf-c that refs point into */
    int64_t nowned, owncap;
    uint64_t total;  /* bytes of the output: buffer and references */
} gwr_pb_out;

/* Serializes m into w (emptied first); GWR_ERR_NOMEM on failure. The
 * references point into m's data, which must outlive w's use. */
gwr_status gwr_pb_pack(gwr_pb_out *w, const ProtobufCMessage *m);
/* Copies the output (w->total bytes) to dst. */
void gwr_pb_copy(const gwr_pb_out *w, void *dst);
/* Writes the output to fd; 0 or an errno. */
int gwr_pb_write(const gwr_pb_out *w, int fd);
void gwr_pb_free(gwr_pb_out *w);

/* Protobuf's limit on a message: a serialized model may not pass it. */
#define GWR_OX_MAX_MODEL ((size_t)INT32_MAX)

#endif
