/* gwr/core.h - status codes, element types, dimensions, value types and
 * reference-counted data buffers: the small value types every room shares. */
#ifndef GWR_CORE_H
#define GWR_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define GWR_API __attribute__((visibility("default")))
#else
#define GWR_API
#endif

#define GWR_VERSION_MAJOR 0
#define GWR_VERSION_MINOR 1
#define GWR_VERSION_PATCH 0
#define GWR_VERSION_STRING "0.1.0"

/* Returns GWR_VERSION_STRING of the library actually linked. */
GWR_API const char *gwr_version(void);

/* ---- status ------------------------------------------------------------ */

/* Every fallible call returns one of these. The message that goes with a
 * failure lives on the object the call was made on (gwr_network_errmsg) or,
 * for constructors and calls given a NULL handle, in gwr_last_errmsg(). */
typedef enum gwr_status {
    GWR_OK = 0,
    GWR_ERR_INVALID_ARG,   /* NULL handle, bad index, malformed argument */
    GWR_ERR_NOT_FOUND,     /* no such name / attribute / entry */
    GWR_ERR_TYPE,          /* wrong dtype or attribute type */
    GWR_ERR_SHAPE,         /* shapes that do not fit the op */
    GWR_ERR_DUPLICATE,     /* a name or label that is already taken */
    GWR_ERR_CYCLE,         /* the change would create, or the graph has, a cycle */
    GWR_ERR_INVALID_GRAPH, /* gwr_network_verify found a broken invariant */
    GWR_ERR_NOMEM,         /* allocation failed */
    GWR_ERR_IO,            /* file or stream error */
    GWR_ERR_PARSE,         /* malformed input data */
    GWR_ERR_UNSUPPORTED,   /* valid request that gwr does not implement */
    GWR_ERR_NOT_CONVERGED, /* a rewrite limit was hit */
    GWR_ERR_STATE          /* call not allowed in the object's current state */
} gwr_status;

/* Stable upper-case name of a status ("GWR_ERR_CYCLE"); never NULL. */
GWR_API const char *gwr_status_name(gwr_status s);

/* The message of the last failure on this thread that had no object to keep
 * it (constructors, NULL handles). Never NULL; "" when none. */
GWR_API const char *gwr_last_errmsg(void);

/* The status that went with the last failure message gwr wrote on this
 * thread, whichever object holds the message (gwr_last_errmsg's, a
 * network's, a session's, a manager's): what a caller of a function that
 * returns NULL rather than a status (the builders, gwr_onnx_load) reads
 * to tell a shape error from a dtype error, or a missing file from a
 * malformed one. GWR_OK before any failure. */
GWR_API gwr_status gwr_last_status(void);

/* ---- element types ----------------------------------------------------- */

/* Numbered exactly as ONNX's TensorProto.DataType, so values can cross the
 * ONNX edge unchanged. */
typedef enum gwr_dtype {
    GWR_UNDEFINED = 0,
    GWR_FLOAT32 = 1,
    GWR_UINT8 = 2,
    GWR_INT8 = 3,
    GWR_UINT16 = 4,
    GWR_INT16 = 5,
    GWR_INT32 = 6,
    GWR_INT64 = 7,
    GWR_STRING = 8,
    GWR_BOOL = 9,
    GWR_FLOAT16 = 10,
    GWR_FLOAT64 = 11,
    GWR_UINT32 = 12,
    GWR_UINT64 = 13,
    GWR_COMPLEX64 = 14,
    GWR_COMPLEX128 = 15,
    GWR_BFLOAT16 = 16,
    GWR_FLOAT8E4M3FN = 17,
    GWR_FLOAT8E4M3FNUZ = 18,
    GWR_FLOAT8E5M2 = 19,
    GWR_FLOAT8E5M2FNUZ = 20,
    GWR_UINT4 = 21,
    GWR_INT4 = 22,
    GWR_FLOAT4E2M1 = 23,
    GWR_FLOAT8E8M0 = 24,
    GWR_UINT2 = 25,
    GWR_INT2 = 26,
    GWR_DTYPE_COUNT
} gwr_dtype;

/* Lower-case NumPy-style name: "float32", "float16", "bfloat16", "int64",
 * "bool", "string", "complex64", "float8e4m3fn", ...; "undefined" for
 * anything unknown. */
GWR_API const char *gwr_dtype_name(gwr_dtype t);
/* Parses a name from gwr_dtype_name (also ONNX's "float", "double" and
 * "half"); GWR_UNDEFINED when unknown. */
GWR_API gwr_dtype gwr_dtype_from_name(const char *name);
/* Size of one element in bits (4 for the 4-bit types, 2 for the 2-bit
 * ones, 0 for STRING and UNDEFINED). Sub-byte types are packed as ONNX
 * packs them: the first element in the lowest bits of a byte. */
GWR_API int gwr_dtype_bits(gwr_dtype t);
/* Size of one element in bytes, rounded up; 0 for STRING and UNDEFINED. */
GWR_API size_t gwr_dtype_size(gwr_dtype t);
/* 1 for the floating-point types (incl. float8, float8e8m0, float4e2m1 and
 * complex), else 0. */
GWR_API int gwr_dtype_is_float(gwr_dtype t);
/* 1 for signed and unsigned integers (not bool), else 0. */
GWR_API int gwr_dtype_is_int(gwr_dtype t);
/* 1 for every defined value of the enum. */
GWR_API int gwr_dtype_is_valid(gwr_dtype t);

/* ---- dimensions -------------------------------------------------------- */

/* A dimension is an int64_t: >= 0 is a known extent, GWR_DIM_UNKNOWN is an
 * unknown one, and any value <= GWR_DIM_SYM_BASE is a symbolic dimension
 * interned in a network (gwr_network_dim_sym), named e.g. "batch". */
typedef int64_t gwr_dim;
#define GWR_DIM_UNKNOWN ((gwr_dim)-1)
#define GWR_DIM_SYM_BASE ((gwr_dim)-2)
#define GWR_DIM_IS_KNOWN(d) ((d) >= 0)
#define GWR_DIM_IS_SYM(d) ((d) <= GWR_DIM_SYM_BASE)

/* Largest rank gwr accepts anywhere (ONNX puts no limit; every real model
 * stays far below). */
#define GWR_MAX_RANK 64

/* ---- value types ------------------------------------------------------- */

/* What a tensor (a value flowing along an edge) holds. Plain tensors are the
 * common case; the others are carried so that models using them survive a
 * round trip. */
typedef enum gwr_value_kind {
    GWR_VALUE_TENSOR = 0,
    GWR_VALUE_SPARSE_TENSOR,
    GWR_VALUE_SEQUENCE,
    GWR_VALUE_MAP,
    GWR_VALUE_OPTIONAL
} gwr_value_kind;

GWR_API const char *gwr_value_kind_name(gwr_value_kind k);

/* A value type. For TENSOR and SPARSE_TENSOR: dtype, rank (-1 = unknown
 * rank) and dims. For SEQUENCE and OPTIONAL: elem. For MAP: dtype is the key
 * type and elem the value type. Types attached to a network are copied into
 * it; the caller keeps ownership of what it passes in. */
typedef struct gwr_type {
    gwr_value_kind kind;
    gwr_dtype dtype;
    int rank;
    const gwr_dim *dims;
    const struct gwr_type *elem;
} gwr_type;

/* ---- data buffers and weights -------------------------------------------- */

/* A reference-counted block of bytes, owned (malloc'd copy) or borrowed
 * (for example a memory-mapped file, released through a callback when the
 * last reference goes). Thread-compatible: retain/release are atomic. */
typedef struct gwr_buffer gwr_buffer;

/* Copies `size` bytes of `data` into a new buffer with one reference.
 * NULL (and gwr_last_errmsg) on allocation failure. data may be NULL when
 * size is 0, or to get zero-filled bytes. */
GWR_API gwr_buffer *gwr_buffer_new_copy(const void *data, size_t size);
/* Wraps memory gwr does not own. `release(ctx, data, size)` is called once
 * when the last reference goes (may be NULL for static memory). */
GWR_API gwr_buffer *gwr_buffer_wrap(const void *data, size_t size,
                                    void (*release)(void *ctx, const void *data, size_t size),
                                    void *ctx);
GWR_API void gwr_buffer_retain(gwr_buffer *b);
/* Drops one reference; frees at zero. NULL is ignored. */
GWR_API void gwr_buffer_release(gwr_buffer *b);
GWR_API const void *gwr_buffer_data(const gwr_buffer *b);
GWR_API size_t gwr_buffer_size(const gwr_buffer *b);

/* Constant tensor data (TensorRT's Weights): used for CONSTANT layers and
 * tensor-valued attributes. For STRING data, `data` points to `count`
 * gwr_bytes entries whose bytes live in the same buffer. */
typedef struct gwr_bytes {
    size_t len;
    const char *data;
} gwr_bytes;

typedef struct gwr_weights {
    gwr_dtype dtype;
    int rank;              /* >= 0 */
    const int64_t *dims;   /* rank known extents */
    const void *data;      /* count elements, inside buffer */
    size_t nbytes;         /* bytes at data */
    gwr_buffer *buffer;    /* the reference keeping data alive */
    const char *name;      /* optional (ONNX TensorProto.name); may be NULL */
} gwr_weights;

/* Number of elements of a shape of known dims (1 for rank 0); -1 when a
 * dim is negative or the product overflows int64. */
GWR_API int64_t gwr_shape_numel(int rank, const int64_t *dims);

#ifdef __cplusplus
}
#endif
#endif
