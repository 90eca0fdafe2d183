/* smalltype.h - the element types narrower than float16 that have no C
 * type: float8 (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz, e8m0), float4e2m1 and the
 * 4 and 2-bit integers. One element is held in the low bits of an
 * unsigned; the sub-byte types are packed in memory as ONNX's IR.md packs
 * them (two 4-bit or four 2-bit elements a byte, the first in the lowest
 * bits). Cast, QuantizeLinear / DequantizeLinear, the value accessors and
 * the ONNX loader all convert through these. */
#ifndef GWR_SMALLTYPE_H
#define GWR_SMALLTYPE_H

#include <stdint.h>

#include "gwr/core.h"

/* 1 for float8e4m3fn ... float8e5m2fnuz, float8e8m0 and float4e2m1. */
int gwr_small_is_float(gwr_dtype t);
/* 1 for the small floats and for int4, uint4, int2, uint2. */
int gwr_small_is_small(gwr_dtype t);

/* float8e8m0's round_mode (Cast opset 24). */
enum { GWR_E8M0_UP = 0, GWR_E8M0_DOWN = 1, GWR_E8M0_NEAREST = 2 };

/* The value of one element `bits` of small type t (exact in a double):
 * NaN for the NaN encodings, +-inf for float8e5m2's. */
double gwr_small_decode(gwr_dtype t, unsigned bits);
/* x rounded to small float t as the Cast spec says: round to nearest even
 * (float8e8m0: by round_mode), out-of-range values to +-max when saturate,
 * else to inf or NaN where the type has them. For the small integers: x
 * truncated toward zero, its low bits kept (two's complement). */
unsigned gwr_small_encode(gwr_dtype t, double x, int saturate, int round_mode);
/* The same for an integer (exact; small integers wrap). */
unsigned gwr_small_encode_int(gwr_dtype t, int64_t x, int saturate, int round_mode);

/* Element i of packed `bits`-bit data (bits 1, 2 or 4: low bits first;
 * 8: a byte). */
static inline unsigned gwr_packed_get(const void *data, int bits, int64_t i) {
    const uint8_t *p = (const uint8_t *)data;
    if (bits >= 8) return p[i];
    int per = 8 / bits;
    return (unsigned)(p[i / per] >> ((i % per) * bits)) & ((1u << bits) - 1);
}
static inline void gwr_packed_set(void *data, int bits, int64_t i, unsigned v) {
    uint8_t *p = (uint8_t *)data;
    if (bits >= 8) {
        p[i] = (uint8_t)v;
        return;
    }
    int per = 8 / bits, sh = (int)(i % per) * bits;
    unsigned m = ((1u << bits) - 1) << sh;
    p[i / per] = (uint8_t)((p[i / per] & ~m) | ((v << sh) & m));
}

#endif
