/* exec_api.h - what the executor offers the rooms above it beyond
 * gwr/exec.h: the optimizing gwr_session_new (src/passes/session_opt.c)
 * plans its private copy with gwr_session_new_raw and hands the copy to
 * the session, which frees it with itself. */
#ifndef GWR_EXEC_API_H
#define GWR_EXEC_API_H

#include <stdint.h>

#include "gwr/exec.h"

/* Records where s's network came from: `owned` (may be NULL) is the
 * optimized copy s planned, freed by gwr_session_free; `why` (NULL when
 * optimized) says why s plans the caller's network as written. */
void gwr_session_set_origin(gwr_session *s, gwr_network *owned, const char *why);

/* Half-precision conversions (value.c), rounding to nearest even: what
 * the quant room's float16 / bfloat16 conversion writes. */
float gwr_f16_to_f32(uint16_t h);
uint16_t gwr_f32_to_f16(float f);
float gwr_bf16_to_f32(uint16_t h);
uint16_t gwr_f32_to_bf16(float f);

#endif
