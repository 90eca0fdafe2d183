/* gwr/optimize.h - the optimizer: the built-in passes of the pass table
 * (gwr/passes.h) chosen by level and target, run phase by phase (cleanup,
 * fold, fuse, lower, kernel), each to a fixpoint, and the sequence again
 * while a later phase changed something, over a network and every
 * If/Loop/Scan body in it, with a report of what each pass did. `gwr
 * optimize` is its command-line form. */
#ifndef GWR_OPTIMIZE_H
#define GWR_OPTIMIZE_H

#include <stdio.h>

#include "gwr/exec.h"
#include "gwr/passes.h"
#include "gwr/rules.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Zero-initialized means the defaults. */
typedef enum gwr_input_defaults {
    GWR_INPUT_DEFAULTS_AUTO = 0,
    GWR_INPUT_DEFAULTS_KEEP,
    GWR_INPUT_DEFAULTS_FOLD
} gwr_input_defaults;

typedef struct gwr_optimize_options {
    gwr_pass_level level; /* passes of this level and below; GWR_LEVEL_NONE means EXTENDED */
    unsigned target;      /* one GWR_TARGET_*: the passes that may serve it; 0 means ONNX */
    /* Comma-separated pass labels. `only`: exactly these (whatever their
     * level; each must serve the target). `disable`: not these. An unknown
     * label is GWR_ERR_NOT_FOUND. NULL: none. */
    const char *only;
    const char *disable;
    int debug;            /* verify the network after every rewrite */
    /* Symbolic dims bound before the passes run (`gwr optimize --shape`):
     * every dim `name` of the network's tensors, its inputs' and its
     * bodies' included, becomes `value` (>= 0), so that the shape passes
     * can fold what depends on it. The written model then takes inputs of
     * those extents only. A symbol the model lacks binds nothing. */
    int nbind;
    const gwr_dim_binding *bind;
    /* Raise the default-domain opset to this version first (`gwr optimize
     * --opset N`), so that passes needing a newer op can fire; 0 keeps the
     * model's. Refused (GWR_ERR_UNSUPPORTED, naming the op) when an op of
     * the network changed between the two versions in a way not converted
     * (Squeeze/Unsqueeze/ReduceX axes, Split's split, Clip's bounds and
     * Dropout's ratio become inputs);
     * lowering is refused (GWR_ERR_INVALID_ARG). */
    int64_t opset;
    /* Passed to the rewrite manager (gwr_rewrite_options.interrupt): a
     * nonzero return stops the passes with GWR_ERR_STATE. */
    int (*interrupt)(void *ctx);
    void *interrupt_ctx;
    /* Initializers the file also lists as graph inputs (inputs with a
     * default value: overridable by the caller from ONNX IR version 4 on).
     * AUTO: made constants for target onnx (as onnxsim and onnxslim do, and
     * as TensorRT reads them), kept overridable inputs for targets ort and
     * gwr (onnxruntime's rule); FOLD: constants for every target; KEEP:
     * inputs for every target. The pass fold_input_defaults does it. */
    gwr_input_defaults input_defaults;
    /* Rules (gwr/rules.h) run with the passes, in the same manager and over
     * the same bodies, each under its name and benefit (`gwr optimize
     * --rules FILE`); the report lists them after the passes. NULL: none.
     * A rule named as a pass is GWR_ERR_DUPLICATE. */
    const gwr_rules *rules;
    /* Stop after this many rewrites of the whole run (as
     * gwr_rewrite_options.stop_after), counted over the rounds, the phases
     * and the bodies in the order they run: the run with stop_after K holds
     * exactly the first K rewrites of the run without it (runs are
     * deterministic: the same model and options make the same rewrites in
     * the same order), then the steps after the passes as usual (unread
     * input defaults dropped, the outputs' types checked); GWR_OK, and
     * gwr_optimize_report_stopped says so. `gwr bisect` replays with it.
     * 0: no stop; GWR_STOP_BEFORE_FIRST: no rewrite at all (the model as
     * the passes first see it: --shape bound, --opset raised). */
    int64_t stop_after;
    /* Told of every change of the run (NULL: none). Its pattern_applied
     * events carry seq counted over the whole run (1, 2, ... across rounds
     * and bodies), not per network as one manager run numbers them. The
     * struct is copied; ctx stays the caller's. */
    const gwr_rewrite_listener *listener;
    /* Time each pass (two clock reads per attempt) for the report's rounds
     * and gwr_optimize_report_write_trace (`gwr optimize --profile`);
     * without it the passes' seconds are 0, the rest is recorded. */
    int profile;
    /* Record provenance on the layers the passes make
     * (gwr_rewrite_options.provenance). */
    int provenance;
} gwr_optimize_options;

/* What a run did: per pass of the table, whether it ran (or why not) and
 * its counters summed over the network and its bodies. Owned by the
 * caller (gwr_optimize_report_free). */
typedef struct gwr_optimize_report gwr_optimize_report;
typedef struct gwr_optimize_pass {
    const char *label;
    const char *skipped;  /* NULL when it ran; else why not ("level extended", "disabled", ...) */
    int64_t attempts, matches, rewrites;
    /* What the pass left undone that the user can act on, or NULL
     * (fold_shape_dims: the Reshapes whose shape is still computed at run
     * time, and the dims to bind). Lives as long as the report. */
    const char *note;
} gwr_optimize_pass;

/* Optimizes net in place. The passes find the target in the manager's
 * args, as the int "target" (a GWR_TARGET_* value), to choose what they
 * may emit. The outputs keep their types: a pass result that changes an
 * output's known dtype, rank or dim is GWR_ERR_INVALID_GRAPH (message on
 * net). On failure the network still verifies, holding
 * the rewrites completed before it, and the message is on net. *report
 * (report may be NULL) is set on success and on a failed run, NULL when
 * the options were refused. */
GWR_API gwr_status gwr_optimize(gwr_network *net, const gwr_optimize_options *opt, gwr_optimize_report **report);
GWR_API void gwr_optimize_report_free(gwr_optimize_report *r);
/* One entry per pass of the table, in its order (phase by phase). */
GWR_API int gwr_optimize_report_count(const gwr_optimize_report *r);
GWR_API const gwr_optimize_pass *gwr_optimize_report_pass(const gwr_optimize_report *r, int i);
/* Live layers of the network itself before and after, and the networks
 * visited (1 + the bodies). */
GWR_API void gwr_optimize_report_layers(const gwr_optimize_report *r, int64_t *before, int64_t *after,
                                        int64_t *networks);
/* The report as a table, one line per pass. */
GWR_API void gwr_optimize_report_print(const gwr_optimize_report *r, FILE *out);

/* The rewrites of the run (the pattern_applied events; fold_input_defaults'
 * dropped inputs are not rewrites of a manager and not counted), and
 * whether the run ended at options.stop_after. */
GWR_API int64_t gwr_optimize_report_rewrites(const gwr_optimize_report *r);
GWR_API int gwr_optimize_report_stopped(const gwr_optimize_report *r);

/* The rounds: each is one manager run over the network and then its
 * bodies; gwr_optimize runs another while a round made types known (at
 * most 8). Within a round the passes run interleaved (phase by phase,
 * layer by layer), so a pass's time is the sum of its attempts. */
typedef struct gwr_optimize_round {
    double start, seconds;        /* from the start of the first round; its wall time */
    int64_t layers_before, layers_after; /* live layers of the network itself */
    int64_t rewrites;
} gwr_optimize_round;
typedef struct gwr_optimize_pass_round {
    int64_t attempts, matches, rewrites;
    /* Layers its rewrites added and marked removed (the events' added and
     * removed, bodies included): removed - added is its own reduction;
     * what the final prune drops (layers left dead) shows only in the
     * round's layers_after. */
    int64_t layers_added, layers_removed;
    double seconds;               /* with options.profile; else 0 */
} gwr_optimize_pass_round;
GWR_API int gwr_optimize_report_rounds(const gwr_optimize_report *r);
/* NULL for a round out of range. */
GWR_API const gwr_optimize_round *gwr_optimize_report_round(const gwr_optimize_report *r, int round);
/* Pass i (the index of gwr_optimize_report_pass) in round `round`; NULL
 * out of range. A skipped pass has zeros. */
GWR_API const gwr_optimize_pass_round *gwr_optimize_report_round_pass(const gwr_optimize_report *r, int round,
                                                                     int i);
/* The rounds as a Chrome trace (the format of `gwr run --profile`; open it
 * in chrome://tracing or Perfetto): per round one complete event ("ph":"X",
 * "cat":"round", "name":"round N", tid 0, args round, rewrites,
 * layers_before, layers_after) and one per pass that ran ("cat":"pass",
 * "name" its label, tid 1, args round, rewrites, matches, attempts,
 * layers_removed, layers_added), the passes laid end to end in table order
 * inside their round's span, each as long as its measured time; a counter
 * "layers" ("ph":"C", args {"layers": N}) at the start and after each
 * round. Times in microseconds. GWR_ERR_IO when out fails. */
GWR_API gwr_status gwr_optimize_report_write_trace(const gwr_optimize_report *r, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
