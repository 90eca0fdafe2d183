/* passes_api.h - what the passes room offers the rooms above it (quant)
 * beyond the public headers (gwr/passes.h, gwr/optimize.h, gwr/analyze.h). */
#ifndef GWR_PASSES_API_H
#define GWR_PASSES_API_H

#include "gwr/ir.h"

/* Raises net's default-domain opset to `opset` (optimize_opset.c): checks
 * every op of net and its bodies against the schema table, converts the
 * ones it knows how to, and refuses (nothing changed) with a message
 * naming the first blocking op. What `gwr optimize --opset` does; the
 * quantizer uses it when the ops it writes need a newer opset. */
gwr_status gwr_opt_raise_opset(gwr_network *net, int64_t opset);

#endif
