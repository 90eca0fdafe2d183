/* gwr/diff.h - what changed between two networks: layers matched across
 * them, each SAME, CHANGED, REMOVED (in a only) or ADDED (in b only) with a
 * short reason, the interface's changes and the weights changed beyond a
 * tolerance. `gwr diff A B` prints it; `gwr view A B` colours by it.
 *
 * Matching, in this order (docs/api.md "Diff"):
 *   1. provenance: a layer of b with the property "gwr.provenance" (the
 *      rewrite driver's record, {"rule":..,"from":[..]}) whose tree names
 *      live layers of a: those layers are REMOVED, the b layer ADDED, made
 *      by the rule from them (unless a has a layer of the same name, op and
 *      provenance: then the two are one layer, matched by name);
 *   2. name and op (and domain);
 *   3. structure, walking b in topological order: an a layer of the same
 *      op and attributes whose inputs come from the matched producers (or
 *      the graph inputs of the same name); constants of equal value;
 *      failing that, a layer of the same name and another op reading the
 *      same producers is CHANGED ("op").
 * A matched pair is CHANGED when its op or domain, an attribute (weights
 * beyond the tolerance; subgraphs by gwr_network_equal), an input's
 * producer ("inputs": redirected), the number of inputs or an output's type
 * differs. Layers of op Constant are the weights: they get kinds like any
 * layer but are counted apart from the layers (gwr_diff_counts counts the
 * others) and listed as weights by gwr_diff_write. Layers marked removed
 * take no part (REMOVED / ADDED, match -1, why "marked removed", not
 * counted). Only the top-level graphs are matched; an If/Loop/Scan body is
 * an attribute of its layer. */
#ifndef GWR_DIFF_H
#define GWR_DIFF_H

#include <stdio.h>

#include "gwr/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Weights (Constant layers, tensor attributes) count as changed when an
 * element differs by more than atol + rtol * |b's element| (NaN equals
 * NaN), or when their dtype or shape differs. {0, 0}: any difference. */
typedef struct gwr_diff_options {
    double rtol, atol;
} gwr_diff_options;

typedef enum gwr_diff_kind { GWR_DIFF_SAME = 0, GWR_DIFF_CHANGED, GWR_DIFF_REMOVED, GWR_DIFF_ADDED } gwr_diff_kind;

typedef struct gwr_diff gwr_diff;

/* Compares a (the old network) with b (the new one); o may be NULL ({0,0}).
 * The result reads a and b until it is freed: change or free neither
 * before gwr_diff_free. Neither is changed. NULL with gwr_last_errmsg() set
 * on NULL networks, negative or NaN tolerances, a cycle or out of memory.
 * O(layers + edges) with hashed lookups. */
GWR_API gwr_diff *gwr_diff_networks(const gwr_network *a, const gwr_network *b, const gwr_diff_options *o);
/* NULL is ignored. */
GWR_API void gwr_diff_free(gwr_diff *d);

/* For layer index i of a (gwr_network_layer(a, i)) / j of b. An index out
 * of range gives SAME, -1 and "". */
GWR_API gwr_diff_kind gwr_diff_kind_a(const gwr_diff *d, int64_t i); /* SAME, CHANGED or REMOVED */
GWR_API gwr_diff_kind gwr_diff_kind_b(const gwr_diff *d, int64_t j); /* SAME, CHANGED or ADDED */
GWR_API int64_t gwr_diff_match_a(const gwr_diff *d, int64_t i);      /* index in b, or -1 */
GWR_API int64_t gwr_diff_match_b(const gwr_diff *d, int64_t j);      /* index in a, or -1 */
/* Why a layer of b is what it is: "" for SAME; for CHANGED the reasons
 * joined by ", " ("op", "attr axis", "inputs", "weights", "weights shape",
 * "weights dtype", "output type", "inputs count", "outputs count"); for
 * ADDED "made by RULE from N layers" (provenance) or "new". Lives as long
 * as d. */
GWR_API const char *gwr_diff_why_b(const gwr_diff *d, int64_t j);
/* The same for a layer of a: the CHANGED reasons, or for REMOVED "fused
 * into NAME by RULE" (provenance) or "gone". */
GWR_API const char *gwr_diff_why_a(const gwr_diff *d, int64_t i);
/* Counts of the layers other than weights (any pointer may be NULL): same
 * and changed count matched pairs, removed the layers of a only, added
 * those of b only. */
GWR_API void gwr_diff_counts(const gwr_diff *d, int64_t *same, int64_t *changed, int64_t *removed, int64_t *added);
/* 1 when nothing differs: every layer and weight SAME, the interface the
 * same. */
GWR_API int gwr_diff_identical(const gwr_diff *d);
/* What `gwr diff` prints: json 0, a text summary (counts, the interface,
 * then one line per added, removed and changed layer, grouped, then the
 * weights); json 1, one JSON object (docs/api.md). GWR_ERR_IO when
 * writing fails. */
GWR_API gwr_status gwr_diff_write(const gwr_diff *d, FILE *out, int json);

#ifdef __cplusplus
}
#endif
#endif
