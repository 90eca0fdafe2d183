/* gwr/rewrite.h - pattern rewriting and analysis: the Graph Rewriting
 * module of TensorRT-LLM, with an indexed dispatch, a worklist driver that
 * runs to a fixpoint (or stops with GWR_ERR_NOT_CONVERGED), listeners, a
 * trace and per-pattern statistics.
 *
 * A pattern is a small struct of callbacks (PatternRewriter or
 * PatternAnalyzer). Patterns are kept in a manager by label with a benefit;
 * higher benefit is tried first, equal benefits in the order added. A
 * layer is offered only to the patterns whose root classes or root ops
 * include it.
 *
 * Ownership: a manager copies the pattern structs and their strings; it
 * owns its listeners' copies, not their ctx. Callbacks receive a
 * gwr_rewrite_ctx valid only during the call. Managers are not
 * thread-safe; distinct managers on distinct networks are independent. */
#ifndef GWR_REWRITE_H
#define GWR_REWRITE_H

#include <stdio.h>

#include "gwr/functional.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A root-class set: GWR_ROOT_CLASS(GWR_LAYER_ELEMENTWISE) | ... */
#define GWR_ROOT_CLASS(c) (UINT64_C(1) << (unsigned)(c))
/* Every class. */
#define GWR_ROOT_ANY (~UINT64_C(0))

/* What a callback can ask while a manager runs. */
typedef struct gwr_rewrite_ctx gwr_rewrite_ctx;

/* The manager's args (the `args` of rewrite/analyze, `self.args` in the
 * reference); may be NULL when none were given. */
GWR_API const gwr_args *gwr_rewrite_ctx_args(const gwr_rewrite_ctx *c);
/* The running pattern's user pointer, label and network. */
GWR_API void *gwr_rewrite_ctx_user(const gwr_rewrite_ctx *c);
GWR_API const char *gwr_rewrite_ctx_label(const gwr_rewrite_ctx *c);
GWR_API gwr_network *gwr_rewrite_ctx_network(const gwr_rewrite_ctx *c);
/* Records why a match failed, for listeners (match_failed) and the trace;
 * formatted only when a listener wants it. Returns 0, so a match can end
 * with `return gwr_rewrite_no_match(c, "bias used %d times", n);`. */
GWR_API int gwr_rewrite_no_match(gwr_rewrite_ctx *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Records a failure (status and message) of the running callback and
 * returns -(int)s, so an int-returning callback can end with
 * `return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "...")`. The manager stops and
 * reports it with the pattern's label and the layer's name. A callback
 * that fails without it is reported with the status it returned (a
 * rewrite's or analyze's gwr_status; GWR_ERR_STATE for a bare negative
 * int) and the network's message, which is cleared before each call. */
GWR_API int gwr_rewrite_fail(gwr_rewrite_ctx *c, gwr_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Analyzers only: adds a layer to the current match, which analyze then
 * receives after the root (the matched subgraph). */
GWR_API gwr_status gwr_rewrite_ctx_add_match(gwr_rewrite_ctx *c, gwr_layer *l);

/* ---- patterns ------------------------------------------------------------ */

/* A PatternRewriter. It is offered every live layer whose class is in
 * root_classes or whose op is in root_ops (a NULL-terminated list of "Op"
 * for the default domain or "domain::Op", e.g. "gwr::GPTAttention"); when
 * both are empty, every layer.
 *
 * With separate_match_rewrite, match decides (1 yes, 0 no, < 0 failure)
 * and must not change the network; rewrite then changes it (GWR_OK or a
 * status). Otherwise match_and_rewrite does both and returns 1 when it
 * changed the network, 0 when it did not match, < 0 on failure.
 *
 * A rewrite never edits a layer in place by convention (though attribute
 * edits are seen and allowed): it builds new layers from the old one's
 * inputs, redirects the old outputs' users (gwr_tensor_replace_all_uses_with
 * or gwr_flayer_replace_outputs_uses_with) and marks the old layers removed
 * (gwr_layer_mark_as_removed). Layers it creates are visited afterwards. */
typedef struct gwr_pattern_rewriter {
    const char *name;
    uint64_t root_classes;
    const char *const *root_ops;
    int separate_match_rewrite;
    int (*match)(gwr_rewrite_ctx *c, gwr_layer *l);
    gwr_status (*rewrite)(gwr_rewrite_ctx *c, gwr_layer *l);
    int (*match_and_rewrite)(gwr_rewrite_ctx *c, gwr_layer *l);
    void *user;
} gwr_pattern_rewriter;

/* A PatternAnalyzer: offered the layers of its root classes (required) or
 * root ops. match (NULL: every offered layer matches) returns 1, 0 or < 0
 * and may add layers to the match (gwr_rewrite_ctx_add_match); analyze then
 * receives the matched layers, the root first. Analyzers must not change
 * the network; a manager that sees a change fails. */
typedef struct gwr_pattern_analyzer {
    const char *name;
    uint64_t root_classes;
    const char *const *root_ops;
    int (*match)(gwr_rewrite_ctx *c, gwr_layer *l);
    gwr_status (*analyze)(gwr_rewrite_ctx *c, gwr_layer *const *layers, int n);
    void *user;
} gwr_pattern_analyzer;

/* ---- listeners and events ------------------------------------------------ */

/* One successful rewrite: pattern, root layer, and what it did. Arrays and
 * strings live for the duration of the callback. Layers in `removed` are
 * still valid then (they are dropped by the final prune). */
typedef struct gwr_rewrite_event {
    int64_t seq;                 /* 1 for the first rewrite of a run */
    const char *label;           /* the pattern's label in the manager */
    const char *pattern;         /* the pattern's name */
    gwr_layer *root;
    gwr_layer *const *added;
    int64_t nadded;
    gwr_layer *const *removed;
    int64_t nremoved;
    int64_t nreplaced;           /* tensors whose uses were redirected */
    int64_t nmodified;           /* input or attribute edits of existing layers */
} gwr_rewrite_event;

/* Callbacks of a running manager; any may be NULL. label is the pattern
 * running when the change was made. */
typedef struct gwr_rewrite_listener {
    void (*layer_added)(void *ctx, const char *label, gwr_layer *l);
    void (*layer_removed)(void *ctx, const char *label, gwr_layer *l);
    void (*tensor_replaced)(void *ctx, const char *label, gwr_tensor *old_t, gwr_tensor *new_t);
    void (*pattern_applied)(void *ctx, const gwr_rewrite_event *e);
    /* reason is "" when the pattern gave none (gwr_rewrite_no_match). */
    void (*match_failed)(void *ctx, const char *label, gwr_layer *root, const char *reason);
    void *ctx;
} gwr_rewrite_listener;

/* ---- the rewrite manager ------------------------------------------------- */

typedef struct gwr_rewrite_manager gwr_rewrite_manager;

/* Run options; zero-initialized means the defaults. */
typedef struct gwr_rewrite_options {
    /* Visit each layer present at the start once, in network order; layers
     * created or touched by rewrites are not revisited. */
    int single_pass;
    /* Stop with GWR_ERR_NOT_CONVERGED after this many rewrites; 0 means
     * 8 * (layers at the start) + 64; < 0 means no limit. */
    int64_t max_rewrites;
    /* Keep dead layers (no final prune). */
    int keep_dead;
    /* Verify the network after every rewrite; fail on a pattern that
     * claims a change and made none, reports no change but made one, or
     * changes the network in match. */
    int debug;
    /* Nonzero: visit the worklist in a random order from this seed. */
    uint64_t shuffle_seed;
    /* Measure time per pattern (two clock reads per attempt). */
    int time_patterns;
    /* The reference's driver, for comparison only: after every rewrite,
     * scan the whole network again from its first layer. */
    int full_rescan;
    /* Asked every 1024 layers visited (never when NULL): a nonzero return
     * stops the run with GWR_ERR_STATE ("interrupted"), the network
     * holding the rewrites made so far, as after any failure. Ctrl-C in a
     * binding, or a time budget. */
    int (*interrupt)(void *ctx);
    void *interrupt_ctx;
    /* Stop cleanly after this many rewrites (the replays of `gwr bisect`):
     * the run returns GWR_OK with summary.stopped set and converged 0, the
     * network holding exactly the first stop_after rewrites of the run
     * without it (the same order of visits, so the same rewrites) and
     * pruned as after a fixpoint (unless keep_dead): it verifies and
     * exports. 0 (the default) means no stop; GWR_STOP_BEFORE_FIRST (any
     * negative value) stops before the first rewrite. A stop at or below
     * max_rewrites comes first. */
    int64_t stop_after;
    /* Record provenance: every layer a rewrite adds gets the property
     * GWR_PROVENANCE_PROP (see gwr/ir.h), the pattern's label and the
     * layers it replaced. Off by default: on a million-layer rewrite it
     * costs about 1.5 us per rewrite (docs/design.md, "Provenance"); the gwr tool
     * turns it on. */
    int provenance;
} gwr_rewrite_options;

/* gwr_rewrite_options.stop_after (and gwr_optimize_options.stop_after):
 * no rewrite at all. */
#define GWR_STOP_BEFORE_FIRST INT64_C(-1)

/* Counters of one pattern over the last run. */
typedef struct gwr_pattern_stats {
    int64_t attempts;    /* times the pattern was offered a layer */
    int64_t matches;     /* match said yes (or match_and_rewrite changed) */
    int64_t rewrites;    /* changes made */
    double seconds;      /* with time_patterns */
} gwr_pattern_stats;

/* Totals of the last run. */
typedef struct gwr_rewrite_summary {
    int64_t visited;     /* layers taken off the worklist and offered */
    int64_t rewrites;
    int64_t layers_before, layers_after;  /* live layers */
    int64_t pruned;
    int converged;
    double seconds;      /* the whole call, prune included */
    int stopped;         /* the run ended at options.stop_after (GWR_OK, not converged) */
} gwr_rewrite_summary;

/* NULL on allocation failure (gwr_last_errmsg). */
GWR_API gwr_rewrite_manager *gwr_rewrite_manager_new(void);
/* Refused (a message on m) from inside one of m's own callbacks. */
GWR_API void gwr_rewrite_manager_free(gwr_rewrite_manager *m);
/* The message of the last failing call on m; "" when none. */
GWR_API const char *gwr_rewrite_manager_errmsg(const gwr_rewrite_manager *m);
/* Adds a copy of p under label. GWR_ERR_DUPLICATE for a taken label;
 * GWR_ERR_INVALID_ARG when the callbacks do not fit separate_match_rewrite
 * or a root op is malformed. */
GWR_API gwr_status gwr_rewrite_manager_add(gwr_rewrite_manager *m, const char *label,
                                           const gwr_pattern_rewriter *p, int benefit);
/* The pattern stored under label, or NULL. */
GWR_API const gwr_pattern_rewriter *gwr_rewrite_manager_get(const gwr_rewrite_manager *m,
                                                            const char *label);
/* Labels in the order patterns are tried (benefit, then insertion). */
GWR_API int gwr_rewrite_manager_count(const gwr_rewrite_manager *m);
GWR_API const char *gwr_rewrite_manager_label(const gwr_rewrite_manager *m, int i);
GWR_API int gwr_rewrite_manager_benefit(const gwr_rewrite_manager *m, int i);
GWR_API gwr_status gwr_rewrite_manager_set_options(gwr_rewrite_manager *m,
                                                   const gwr_rewrite_options *o);
/* Listeners are copied; returns an id >= 0, or -1 on error. */
GWR_API int gwr_rewrite_manager_add_listener(gwr_rewrite_manager *m,
                                             const gwr_rewrite_listener *ls);
GWR_API gwr_status gwr_rewrite_manager_remove_listener(gwr_rewrite_manager *m, int id);

/* Applies the patterns to net until none matches (see options). On
 * failure the network still verifies: it holds every rewrite completed
 * before the failure, dead layers included (no prune). The message names
 * the pattern and the layer (a failing callback), or the patterns that
 * fired last (GWR_ERR_NOT_CONVERGED). Only the layers of net itself are
 * visited, not those of If/Loop/Scan bodies. While it runs, prune,
 * toposort and free of net are refused (GWR_ERR_STATE), and so is a second
 * manager on the same network. */
GWR_API gwr_status gwr_rewrite_manager_rewrite(gwr_rewrite_manager *m, gwr_network *net,
                                               const gwr_args *args);
/* Statistics of the last run for pattern i (manager order). */
GWR_API gwr_status gwr_rewrite_manager_stats(const gwr_rewrite_manager *m, int i,
                                             gwr_pattern_stats *out);
GWR_API gwr_status gwr_rewrite_manager_summary(const gwr_rewrite_manager *m,
                                               gwr_rewrite_summary *out);
/* Prints the statistics table of the last run. */
GWR_API void gwr_rewrite_manager_print_stats(const gwr_rewrite_manager *m, FILE *out);

/* A trace listener: one line per rewrite, as text
 *   "#3 fuse_attention_with_bias at 'add_5' (Add): +gpt_attention_2 -add_5 -gpt_attention_1"
 * or as JSON lines {"seq":3,"label":...,"root":...,"op":...,"added":[...],
 * "removed":[...],"replaced":N}. With failures, match failures with their
 * reasons too. Returns the listener id or -1. */
typedef enum gwr_trace_format { GWR_TRACE_TEXT = 0, GWR_TRACE_JSON = 1 } gwr_trace_format;
GWR_API int gwr_rewrite_manager_trace(gwr_rewrite_manager *m, FILE *out, gwr_trace_format fmt,
                                      int failures);

/* ---- the analysis manager ------------------------------------------------ */

typedef struct gwr_analysis_manager gwr_analysis_manager;

GWR_API gwr_analysis_manager *gwr_analysis_manager_new(void);
GWR_API void gwr_analysis_manager_free(gwr_analysis_manager *m);
GWR_API const char *gwr_analysis_manager_errmsg(const gwr_analysis_manager *m);
/* As gwr_rewrite_manager_add; root_classes or root_ops is required. */
GWR_API gwr_status gwr_analysis_manager_add(gwr_analysis_manager *m, const char *label,
                                            const gwr_pattern_analyzer *p, int benefit);
GWR_API const gwr_pattern_analyzer *gwr_analysis_manager_get(const gwr_analysis_manager *m,
                                                             const char *label);
GWR_API int gwr_analysis_manager_count(const gwr_analysis_manager *m);
GWR_API const char *gwr_analysis_manager_label(const gwr_analysis_manager *m, int i);
/* Offers every live layer, in network order, to the analyzers that root
 * on it (higher benefit first) and calls analyze on each match. Fails,
 * naming the analyzer and the layer, when a callback fails or changes
 * the network. */
/* Attempts and matches of analyzer i (manager order) in the last run. */
GWR_API gwr_status gwr_analysis_manager_stats(const gwr_analysis_manager *m, int i,
                                              gwr_pattern_stats *out);
GWR_API gwr_status gwr_analysis_manager_analyze(gwr_analysis_manager *m, gwr_network *net,
                                                const gwr_args *args);

#ifdef __cplusplus
}
#endif
#endif
