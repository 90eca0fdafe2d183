/* onnx_common.h - what the importer and the exporter share. Private to
 * src/onnx. */
#ifndef GWR_ONNX_COMMON_H
#define GWR_ONNX_COMMON_H

#include <protobuf-c/protobuf-c.h>

/* protobuf-c's allocations through util's gwr_malloc / gwr_free, so that
 * they can be made to fail like every other (tests/alloc). */
extern ProtobufCAllocator gwr_onnx_pb_allocator;

/* Is loc an external-data location that stays inside the model's
 * directory: relative, no ".." component? With `for_writing`, also no
 * empty component ("a//b") and no trailing slash (a directory). */
int gwr_onnx_location_ok(const char *loc, int for_writing);

#endif
