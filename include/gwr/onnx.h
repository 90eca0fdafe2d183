/* gwr/onnx.h - ONNX import and export. A model file becomes a gwr_network
 * and back; what the IR has no field for (producer, metadata, doc strings,
 * value_info, initializer-vs-Constant, ...) rides along in properties, so an
 * unchanged model comes out the same. docs/onnx.md is the mapping. */
#ifndef GWR_ONNX_H
#define GWR_ONNX_H

#include "gwr/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gwr_onnx_load_options {
    /* 1: read external data into memory instead of memory-mapping it. */
    int copy_external_data;
    /* 1: run dtype and shape inference (gwr_layer_infer) on layers whose
     * outputs the file leaves untyped; failures leave them untyped. */
    int infer_shapes;
} gwr_onnx_load_options;

/* Loads an ONNX model file. External data is looked up relative to the
 * model's directory and memory-mapped; a location outside that directory
 * (absolute, or through ..) or a range past the end of its file is an
 * error. Returns NULL on error with gwr_last_errmsg() set to one line
 * naming the file and the problem. opt may be NULL. */
GWR_API gwr_network *gwr_onnx_load(const char *path, const gwr_onnx_load_options *opt);
/* The same from bytes in memory (copied where kept). base_dir (may be
 * NULL: external data is then an error) resolves external data; name is
 * used in messages. */
GWR_API gwr_network *gwr_onnx_load_memory(const void *data, size_t size, const char *base_dir,
                                          const char *name, const gwr_onnx_load_options *opt);

typedef struct gwr_onnx_save_options {
    /* 1: write tensors of at least external_threshold bytes to a side file.
     * Also done, whatever this says, when the model would pass 2 GB
     * (protobuf's limit). */
    int external_data;
    size_t external_threshold;  /* 0 means 1024 bytes */
    const char *external_file;  /* relative to the model's directory; NULL:
                                 * "<model file name>.data" */
    size_t external_align;      /* 0 means 4096: offsets are multiples of it */
    /* 1: write each layer's provenance (GWR_PROVENANCE_PROP, gwr/ir.h) into
     * its node's metadata_props under the key "gwr.provenance". Other
     * node metadata_props read from a file are always written back. */
    int provenance;
} gwr_onnx_save_options;

/* Saves net as an ONNX model: writes to a temporary file in the same
 * directory and renames it over path, so a failure leaves no partial file.
 * Layers are written in a stable topological order; opset imports gain the
 * domains of layers that rewrites added. Message on net on error. */
GWR_API gwr_status gwr_onnx_save(gwr_network *net, const char *path, const gwr_onnx_save_options *opt);
/* The serialized model in a malloc'd buffer (*data, freed by the caller
 * with free()); never uses external data. */
GWR_API gwr_status gwr_onnx_save_memory(gwr_network *net, void **data, size_t *size);

/* One serialized TensorProto per file, as ONNX's test data keeps inputs
 * and outputs (test_data_set_0/input_0.pb). Reading: w gets the tensor
 * (w->buffer a new reference the caller releases; w->dims = dims, which
 * must hold GWR_MAX_RANK entries), *name (may be NULL) a malloc'd copy of
 * its name or NULL. A file that is not a TensorProto (a SequenceProto,
 * say) is GWR_ERR_PARSE. Writing is atomic (temporary file, rename). */
GWR_API gwr_status gwr_onnx_read_tensor(const char *path, gwr_weights *w, int64_t *dims, char **name);
GWR_API gwr_status gwr_onnx_write_tensor(const char *path, const char *name, const gwr_weights *w);

/* One value of ONNX's test data that may not be a tensor: a TensorProto, a
 * SequenceProto of tensors, or an OptionalProto holding nothing, a tensor
 * or a sequence of tensors (onnx-data.proto). What the file holds is read
 * as `kind` says (the kind the model declares for it: the files carry no
 * type of their own). Sparse tensors, maps, and sequences or optionals
 * nested any deeper are GWR_ERR_UNSUPPORTED. */
typedef struct gwr_onnx_data {
    gwr_value_kind kind;      /* TENSOR, SEQUENCE or OPTIONAL */
    int has_value;            /* OPTIONAL: 0 when it holds nothing; else 1 */
    gwr_value_kind elem_kind; /* OPTIONAL: what it holds, TENSOR or SEQUENCE; else TENSOR */
    int64_t count;            /* tensors in w: 1 for a tensor, the length of a sequence */
    gwr_weights *w;           /* the tensors (their buffers and dims owned by the data) */
    char *name;               /* the proto's name; NULL when none */
} gwr_onnx_data;
/* Reads path as kind; *out gets data the caller frees with
 * gwr_onnx_data_free. GWR_ERR_PARSE for a malformed file. */
GWR_API gwr_status gwr_onnx_read_data(const char *path, gwr_value_kind kind, gwr_onnx_data **out);
GWR_API void gwr_onnx_data_free(gwr_onnx_data *d);

#ifdef __cplusplus
}
#endif
#endif
