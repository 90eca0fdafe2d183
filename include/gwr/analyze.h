/* gwr/analyze.h - the built-in analyses of a network: op histogram,
 * parameters, FLOPs and bytes moved per layer, tensor lifetimes and the
 * peak activation memory of a layer order.
 *
 * gwr_analyze_network runs them as PatternAnalyzers in one
 * gwr_analysis_manager (the op histogram, the parameters, a bytes-moved
 * analyzer of every layer and one FLOPs analyzer per family) and keeps the
 * results in a report (gwr_analysis). docs/api.md ("Analysis") gives the
 * FLOP conventions.
 *
 * Dimensions: a known dim counts as itself; a symbolic dim ("batch")
 * takes its value from the `dims` list (an INT per name, >= 0) or, when
 * unbound, counts as 1 and is listed as assumed; an unknown dim (or a
 * tensor of unknown rank, counted as one element) counts as 1 and the
 * tensor is counted among the unknown ones. A layer's cost is `known`
 * when every dim it read was known or bound. Counts saturate at
 * INT64_MAX. String tensors and non-tensor values count 0 bytes.
 *
 * Ownership: the caller frees a report with gwr_analysis_free. A report
 * refers to layers and tensors of its network: those handles (and the
 * layer and op names the writer prints) stay valid until the network is
 * pruned or freed, so write a report before either. Strings returned by
 * accessors live as long as the report. */
#ifndef GWR_ANALYZE_H
#define GWR_ANALYZE_H

#include <stdio.h>

#include "gwr/rewrite.h"

#ifdef __cplusplus
extern "C" {
#endif

/* FLOPs charged per element by the conventions of docs/api.md. */
#define GWR_FLOPS_PER_NORM_ELEMENT 5    /* BatchNorm, LayerNorm, InstanceNorm, LpNorm, MVN, LRN */
#define GWR_FLOPS_PER_SOFTMAX_ELEMENT 5 /* Softmax, LogSoftmax, Hardmax */

/* An analysis report (opaque). */
typedef struct gwr_analysis gwr_analysis;

/* Runs every built-in analysis over the live layers of net. dims (may be
 * NULL) binds symbolic dim names to INT values >= 0 ("batch" = 1, "seq" =
 * 128). Returns a report, or NULL with the message on net (a dims entry
 * that is not an INT >= 0, an analyzer failure, no memory) or, for a NULL
 * net, in gwr_last_errmsg(). The network is not changed. The peak
 * memory is taken over network order when that is topological, else over
 * the stable topological order (gwr_network_topo_order). Parameters
 * include the constants of If/Loop/Scan bodies; the histogram, the costs
 * and the lifetimes cover the layers of net itself (a body's cost is not
 * charged to its If/Loop layer). */
GWR_API gwr_analysis *gwr_analyze_network(gwr_network *net, const gwr_args *dims);
/* NULL is ignored. */
GWR_API void gwr_analysis_free(gwr_analysis *a);
/* The message of the last failing call on a; "" when none. */
GWR_API const char *gwr_analysis_errmsg(const gwr_analysis *a);
GWR_API gwr_network *gwr_analysis_network(const gwr_analysis *a);

/* ---- op histogram ----------------------------------------------------------- */

/* One (domain, op) of the histogram; strings are the network's. */
typedef struct gwr_op_count {
    const char *domain; /* "" for the default ONNX domain */
    const char *op;
    int64_t count;
} gwr_op_count;

/* Distinct (domain, op) pairs among the live layers. */
GWR_API int64_t gwr_analysis_num_ops(const gwr_analysis *a);
/* Entry i, most frequent first, ties by "domain::op" (just "op" for the
 * default domain) in byte order; NULL out of range. */
GWR_API const gwr_op_count *gwr_analysis_op(const gwr_analysis *a, int64_t i);

/* ---- parameters ------------------------------------------------------------- */

typedef struct gwr_param_stats {
    /* Weights tensors: the value of every live CONSTANT layer (subgraphs
     * included) and every graph input's default value. */
    int64_t tensors;
    int64_t elements;       /* their elements, every tensor counted */
    int64_t bytes;          /* bytes of distinct data: data shared by several
                             * tensors (the same bytes of one gwr_buffer) once */
    int64_t shared_tensors; /* tensors whose data was counted already */
    int64_t shared_bytes;   /* what they would have added */
} gwr_param_stats;

GWR_API gwr_status gwr_analysis_params(const gwr_analysis *a, gwr_param_stats *out);

/* ---- cost ------------------------------------------------------------------- */

/* FLOPs and bytes moved by one layer (docs/api.md has the conventions).
 * bytes_read sums the distinct input tensors (constants included),
 * bytes_written the outputs. CONSTANT layers cost nothing: their bytes
 * are read by their users. */
typedef struct gwr_layer_cost {
    gwr_layer *layer;
    int64_t flops;
    int64_t bytes_read;
    int64_t bytes_written;
    int known; /* 1 when every dim it read was known or bound */
    /* Executions counted: 1 in the network; in an If/Loop/Scan body, the
     * product of the enclosing Loops' constant trip counts and Scans'
     * lengths (1 where not constant: gwr_cost_totals.loops_counted_once). */
    int64_t times;
} gwr_layer_cost;

typedef struct gwr_cost_totals {
    int64_t layers;       /* live layers */
    int64_t known_layers; /* of which `known` */
    int64_t flops;
    int64_t bytes_read;
    int64_t bytes_written;
    /* Layers of If/Loop/Scan bodies (at any depth; not in `layers`). Their
     * FLOPs and bytes, each times its `times`, are in the totals above:
     * both branches of an If (the model's work, not one execution's), a
     * Loop body times its trip count when that is a constant, a Scan body
     * times its scan length. */
    int64_t body_layers;
    int64_t body_flops;
    /* Loops without a constant trip count (and Scans of an unknown
     * length): their body counted once. */
    int64_t loops_counted_once;
} gwr_cost_totals;

/* Live layers of the If/Loop/Scan bodies (depth first), and the cost of
 * body layer i (its `times` set); NULL out of range. */
GWR_API int64_t gwr_analysis_num_body_layers(const gwr_analysis *a);
GWR_API const gwr_layer_cost *gwr_analysis_body_layer_cost(const gwr_analysis *a, int64_t i);

/* Live layers, in network order. */
GWR_API int64_t gwr_analysis_num_layers(const gwr_analysis *a);
/* The cost of live layer i (network order); NULL out of range. */
GWR_API const gwr_layer_cost *gwr_analysis_layer_cost(const gwr_analysis *a, int64_t i);
GWR_API gwr_status gwr_analysis_totals(const gwr_analysis *a, gwr_cost_totals *out);
/* Writes to idx (room for n) the indices of the n costliest layers by
 * FLOPs, ties in network order; returns how many it wrote (< n when there
 * are fewer layers), or -1 on bad arguments or no memory
 * (gwr_last_errmsg). */
GWR_API int64_t gwr_analysis_top_layers(const gwr_analysis *a, int64_t n, int64_t *idx);

/* ---- lifetimes and peak memory --------------------------------------------- */

/* The life of a non-constant tensor in a layer order: positions first
 * (its producer; 0 for a graph input) to last (its last reader; the last
 * position for a network output; first when never read), inclusive. */
typedef struct gwr_tensor_lifetime {
    gwr_tensor *tensor;
    int64_t first, last;
    int64_t bytes;
} gwr_tensor_lifetime;

typedef struct gwr_memory_stats {
    int64_t peak_bytes;    /* max over positions of the bytes of live tensors */
    int64_t peak_index;    /* first position reaching it; -1 without layers */
    gwr_layer *peak_layer; /* the layer there, or NULL */
    int network_order;     /* 1: positions are network order (of live layers);
                            * 0: the stable topological order */
    int64_t weight_bytes;  /* constants, not counted in the peak (= params bytes) */
} gwr_memory_stats;

GWR_API gwr_status gwr_analysis_memory(const gwr_analysis *a, gwr_memory_stats *out);
/* Graph inputs (but those with a default value: weights), then the
 * outputs of live non-CONSTANT layers, in order. */
GWR_API int64_t gwr_analysis_num_lifetimes(const gwr_analysis *a);
GWR_API const gwr_tensor_lifetime *gwr_analysis_lifetime(const gwr_analysis *a, int64_t i);

/* Peak activation memory of running net's live layers in `order` (n
 * layers; order NULL: network order when topological, else the stable
 * topological order, n ignored). Live tensors at a position: those whose
 * lifetime (above) covers it: a layer's inputs and outputs are live
 * together. Weights are not counted: outputs of CONSTANT layers and graph
 * inputs with a default value (ONNX initializers named like inputs). dims as
 * for gwr_analyze_network. *peak_bytes and *at_index (the first position
 * reaching the peak, -1 when there are no layers; either may be NULL)
 * are written on success. GWR_ERR_INVALID_ARG, with the message on net,
 * for an order that is not every live layer of net once or that is not
 * topological (naming the layer that reads a tensor before its producer
 * runs); GWR_ERR_TYPE for a bad dims entry. */
GWR_API gwr_status gwr_peak_memory(gwr_network *net, gwr_layer *const *order, int64_t n, const gwr_args *dims,
                                   int64_t *peak_bytes, int64_t *at_index);

/* ---- dims -------------------------------------------------------------------- */

/* Symbolic dims read while unbound (counted as 1), sorted by name. */
GWR_API int64_t gwr_analysis_num_assumed(const gwr_analysis *a);
GWR_API const char *gwr_analysis_assumed(const gwr_analysis *a, int64_t i);
/* Tensors read with an unknown dim or rank (counted as 1). */
GWR_API int64_t gwr_analysis_unknown_tensors(const gwr_analysis *a);
/* Names in dims that no tensor read, in the order given. */
GWR_API int64_t gwr_analysis_num_unused(const gwr_analysis *a);
GWR_API const char *gwr_analysis_unused(const gwr_analysis *a, int64_t i);

/* ---- output ------------------------------------------------------------------ */

/* Prints the report: as text, or (json nonzero) as one JSON object
 * followed by a newline (docs/api.md shows both). `top` layers are listed
 * by FLOPs; top < 0 lists every layer. GWR_ERR_IO (message on a) when the
 * stream fails. */
GWR_API gwr_status gwr_analysis_write(const gwr_analysis *a, FILE *out, int json, int64_t top);

#ifdef __cplusplus
}
#endif
#endif
