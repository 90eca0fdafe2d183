/* optimize_internal.h - what gwr_optimize (optimize.c) calls around the
 * passes: binding dims, raising the opset, the note on shapes left
 * dynamic. Private to src/passes. */
#ifndef GWR_OPTIMIZE_INTERNAL_H
#define GWR_OPTIMIZE_INTERNAL_H

#include "passes/passes_api.h"
#include <stddef.h>

#include "gwr/optimize.h"

/* Binds the symbolic dims named in b (optimize_shape.c; checked by the
 * caller: names set, values >= 0). Message on net. */
gwr_status gwr_opt_bind_dims(gwr_network *net, const gwr_dim_binding *b, int nb);
/* Writes into note (size bytes) how many Shape layers and Reshapes of a
 * shape computed at run time net keeps, and the dims that would fold them
 * if bound; "" when none. */
void gwr_opt_dynamic_note(gwr_network *net, char *note, size_t size);
/* Infers again, in net and its bodies, the layers with an output whose
 * dtype, rank or a dim is not known (optimize_shape.c), keeping only what
 * fills those without changing anything known: a rewrite that made an input
 * constant (a Pad's pads folded) makes dims known below it, which passes
 * like fold_shape_dims need. The count of outputs refined (0: nothing new),
 * or -1 when out of memory. */
int64_t gwr_opt_refine_types(gwr_network *net);
/* gwr_opt_raise_opset is in passes_api.h (the quant room uses it). */

/* The interface guard (optimize_guard.c): the outputs' dtypes and shapes
 * before the passes (NULL when out of memory), and the check after them:
 * GWR_ERR_INVALID_GRAPH with a message on net naming the first output whose
 * known dtype, rank or dim (known or symbolic) changed. */
typedef struct gwr_opt_guard gwr_opt_guard;
gwr_opt_guard *gwr_opt_guard_take(const gwr_network *net);
gwr_status gwr_opt_guard_check(const gwr_opt_guard *g, gwr_network *net);
void gwr_opt_guard_free(gwr_opt_guard *g);

/* After fold_input_defaults ran (constants.c): removes the root network's
 * inputs with a default value that nothing reads; their count, or -1 with
 * a message on net. */
int64_t gwr_opt_drop_unread_defaults(gwr_network *net);

#endif
