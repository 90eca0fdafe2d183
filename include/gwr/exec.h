/* gwr/exec.h - the reference executor: runs a network on the CPU, to prove
 * that a rewrite changed no output and to measure what a fusion buys.
 *
 * A session plans a network once (order, lifetimes, a kernel per layer)
 * and runs it any number of times, with inputs of any shapes the network
 * accepts. Values are dense tensors in row-major order; STRING elements
 * are gwr_bytes owned by their value. Everything here is thread-compatible:
 * one session runs one call at a time. */
#ifndef GWR_EXEC_H
#define GWR_EXEC_H

#include "gwr/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- values -------------------------------------------------------------- */

/* A tensor value (ONNX Runtime's OrtValue): dtype, shape and bytes,
 * reference-counted. */
typedef struct gwr_value gwr_value;

/* A zero-filled value; NULL (and gwr_last_errmsg) on a bad dtype, a
 * negative dim, or no memory. dims may be NULL when rank is 0. */
GWR_API gwr_value *gwr_value_new(gwr_dtype dtype, int rank, const int64_t *dims);
/* A value sharing w's bytes (its buffer is retained; STRING data is
 * copied). */
GWR_API gwr_value *gwr_value_from_weights(const gwr_weights *w);
GWR_API gwr_value *gwr_value_retain(gwr_value *v);
/* Drops one reference; NULL is ignored. */
GWR_API void gwr_value_release(gwr_value *v);

GWR_API gwr_dtype gwr_value_dtype(const gwr_value *v);
GWR_API int gwr_value_rank(const gwr_value *v);
GWR_API const int64_t *gwr_value_dims(const gwr_value *v);
GWR_API int64_t gwr_value_numel(const gwr_value *v);
GWR_API size_t gwr_value_nbytes(const gwr_value *v);
/* The elements (for STRING, gwr_bytes entries), dense in row-major order.
 * Writing through it is for the value's owner only: a value may share its
 * bytes with weights or with other values (a Reshape's output shares its
 * input's, a KV-cache view its cache's). A strided KV-cache view (below)
 * is first made dense in place: it gets its own bytes, a copy, and is no
 * longer a view of the cache (so the pointer stays valid, and writes reach
 * this value only); NULL when that copy finds no memory. Not thread-safe
 * against other calls on the same strided view. */
GWR_API void *gwr_value_data(gwr_value *v);
GWR_API const void *gwr_value_cdata(const gwr_value *v);
/* ---- KV caches ---- */
/* A rank-4 value (d0, d1, d2, d3) = dims stored with room for cap >= d2
 * entries along axis 2 (zero-filled): a decoder's past key or value
 * (batch, kv heads, past length, head size) that the ONNX Attention kernel
 * appends to in place. Element (a, b, t, c) lies at ((a * d1 + b) * cap +
 * t) * d3 + c of the storage, which is shared by the views of the cache.
 * The rules:
 * - Attention given past_key / past_value that are cache views with room
 *   for the L new rows, and that nobody has appended past (the cache's
 *   fill mark, shared by its views and moved atomically, equals their
 *   d2), writes the new rows in place and returns present_key /
 *   present_value as new views of the same storage, d2 = P + L: no copy
 *   of the cache per step. The past view stays valid (its rows are not
 *   touched) but is now stale.
 * - Otherwise (a dense past, a stale view, one that a sibling input
 *   already appended through, no room left) present is a new cache that
 *   holds a copy: of capacity P + L for a dense or absent past, twice
 *   the old capacity (at least P + L) when the cache was full, and the
 *   old capacity (at least P + L) for a stale view. The answer is the
 *   same either way.
 * - Views are reference-counted like any value and may be released in any
 *   order; the storage goes with the last one.
 * - A view is strided when d0 * d1 > 1 and d2 < cap: its rows lie apart.
 *   Kernels that do not declare they take such values (all but Attention,
 *   Shape, Size and Identity) are given a dense copy by the session;
 *   gwr_value_data / gwr_value_cdata / gwr_value_to_weights make the view
 *   dense in place (above); gwr_value_get_f64 / _get_i64 read it where it
 *   is; gwr_value_set_f64 makes it dense first. A view that is not strided
 *   is dense already: its data is the cache's first rows, shared.
 * NULL (and gwr_last_errmsg) on a bad dtype (strings and the types of
 * less than a byte are refused), a negative dim, cap < dims[2], or no
 * memory. */
GWR_API gwr_value *gwr_value_new_cache(gwr_dtype dtype, const int64_t dims[4], int64_t cap);
/* The room along axis 2: cap for a KV-cache view, dims[2] for a dense
 * rank-4 tensor, -1 for anything else. */
GWR_API int64_t gwr_value_capacity(const gwr_value *v);
/* Sets STRING element i to a copy of len bytes. */
GWR_API gwr_status gwr_value_set_string(gwr_value *v, int64_t i, const void *data, size_t len);
/* A weights view of v (w->buffer is a new reference the caller releases;
 * w->dims point into v, which must outlive w). STRING values are copied. */
GWR_API gwr_status gwr_value_to_weights(const gwr_value *v, gwr_weights *w);
/* Element i of a numeric (or bool) value as a double / an int64 (floats
 * truncated toward zero); NaN / 0 for other dtypes or a bad index. The
 * float8 / float4 types and the packed 4 and 2-bit integers count as
 * numeric (their exact values). */
GWR_API double gwr_value_get_f64(const gwr_value *v, int64_t i);
GWR_API int64_t gwr_value_get_i64(const gwr_value *v, int64_t i);
/* Sets element i of a numeric (or bool) value from a double, as a C
 * conversion would (float16 / bfloat16 rounded to nearest even; float8 /
 * float4 as Cast with saturate; the 4 and 2-bit integers keep the low bits
 * of the truncated value); ignored for other dtypes or a bad index. */
GWR_API void gwr_value_set_f64(gwr_value *v, int64_t i, double x);
/* "float32[2,3]" into buf; returns what snprintf returns. */
GWR_API int gwr_value_type_str(const gwr_value *v, char *buf, size_t size);
/* ---- sequences and optionals ---- */
/* A value is a tensor, a SEQUENCE of tensors of one dtype, or an OPTIONAL
 * holding nothing, a tensor or a sequence (ONNX's sequence and optional
 * types). The calls above treat the latter two as empty: rank 0, no
 * elements, no data; their dtype is their tensors' (GWR_UNDEFINED when not
 * known). */
GWR_API gwr_value_kind gwr_value_get_kind(const gwr_value *v);
/* A sequence of n tensors (each retained), all of dtype (GWR_UNDEFINED:
 * elems[0]'s, or not known for an empty one). NULL with gwr_last_errmsg when
 * an element is not a tensor or of another dtype. */
GWR_API gwr_value *gwr_value_new_sequence(gwr_dtype dtype, int64_t n, gwr_value *const *elems);
/* An optional holding elem (retained; a tensor or a sequence) or nothing
 * (elem NULL; dtype then says what it would hold, GWR_UNDEFINED: not known). */
GWR_API gwr_value *gwr_value_new_optional(gwr_value *elem, gwr_dtype dtype);
/* Elements of a sequence, 0 or 1 for an optional, -1 for a tensor. */
GWR_API int64_t gwr_value_length(const gwr_value *v);
/* Element i of a sequence or an optional (borrowed: valid while v is); NULL
 * when out of range. */
GWR_API gwr_value *gwr_value_element(const gwr_value *v, int64_t i);
/* Does v fit tensor t's declared type: its dtype (when known), its rank
 * (when known) and every known dim? 1 if so; else 0 with why ("dtype
 * float64, expected float32", "rank 2, expected 4", "dim 0 is 3, expected
 * 2") in why (may be NULL). What gwr_session_run checks of its inputs. */
GWR_API int gwr_value_fits(const gwr_tensor *t, const gwr_value *v, char *why, size_t size);

/* ---- sessions ------------------------------------------------------------ */

typedef struct gwr_session gwr_session;

/* What the session does to the network before planning it. */
typedef enum gwr_session_optimize {
    /* The default: the optimizer's passes that make this executor faster
     * (gwr_optimize with target GWR_TARGET_GWR, level extended, less the
     * passes measured slower here; docs/api.md lists them), run on a
     * private copy of the network. */
    GWR_SESSION_OPTIMIZE = 0,
    GWR_SESSION_RAW,   /* plan the network as written (conformance runs) */
    GWR_SESSION_BASIC  /* eliminations and folding only (level basic), on a copy */
} gwr_session_optimize;

/* The most intra-op threads a session starts. More is refused (not
 * clamped): a session of 100,000 threads would start them all, each with
 * its stack, on a machine with a few cores. */
#define GWR_SESSION_MAX_THREADS 256

/* A symbolic dimension ("batch") bound to a value: for random inputs
 * (gwr_input_options), an optimized session (gwr_session_options) and
 * gwr_optimize (gwr_optimize_options). */
typedef struct gwr_dim_binding {
    const char *name;
    int64_t value;            /* >= 0 */
} gwr_dim_binding;

typedef struct gwr_session_options {
    int threads; /* intra-op threads for the kernels that use them; 0 means 1; at most GWR_SESSION_MAX_THREADS */
    gwr_session_optimize optimize; /* 0: GWR_SESSION_OPTIMIZE */
    /* Symbolic dims bound in the optimized copy before its passes run (as
     * gwr_optimize_options.bind): the shape passes fold what depends on
     * them and the fusions that need known dims fire, and the session then
     * takes inputs of those extents only. Ignored by GWR_SESSION_RAW and
     * gwr_session_new_raw. */
    int nbind;
    const gwr_dim_binding *bind;
} gwr_session_options;

/* Plans net for running. Unless opt->optimize is GWR_SESSION_RAW, the
 * network is first cloned and the clone optimized (the user's network is
 * never changed; the session owns the clone); when that fails, the
 * session plans net as written instead and gwr_session_optimize_msg says
 * why: an optimization never keeps a network from running. Planning is
 * gwr_session_new_raw's. NULL with gwr_last_errmsg on error. (Defined
 * with the optimizer, in the passes room, which sits above the
 * executor.) */
GWR_API gwr_session *gwr_session_new(gwr_network *net, const gwr_session_options *opt);
/* Plans net as written, whatever opt->optimize says: a topological order,
 * each tensor's last reader, a kernel for every layer (an op without one
 * is an error naming the layer), constants turned into values once. The
 * network must stay unchanged while the session lives. NULL with
 * gwr_last_errmsg on error. */
GWR_API gwr_session *gwr_session_new_raw(gwr_network *net, const gwr_session_options *opt);
GWR_API void gwr_session_free(gwr_session *s);
GWR_API const char *gwr_session_errmsg(const gwr_session *s);
/* 1 when the session runs an optimized copy of the network, else 0. */
GWR_API int gwr_session_optimized(const gwr_session *s);
/* Why the session runs the network as written: "off" when the options
 * asked for it, "planned as written" for gwr_session_new_raw, else the
 * optimizer's or the planner's message; "" when optimized. */
GWR_API const char *gwr_session_optimize_msg(const gwr_session *s);
/* The network the session planned: its optimized copy, or the caller's. */
GWR_API gwr_network *gwr_session_network(gwr_session *s);

/* Runs the network. Inputs by name (every graph input without a default
 * must be given; dtypes and ranks must match the network's, and known
 * dims too); outputs by name (out_names NULL: all network outputs, in
 * order; nout must then be their count). Each out_values[i] gets a new
 * reference the caller releases. On error nothing is returned and the
 * message names the layer. */
GWR_API gwr_status gwr_session_run(gwr_session *s, int nin, const char *const *in_names,
                                   gwr_value *const *in_values, int nout, const char *const *out_names,
                                   gwr_value **out_values);

/* Memory of the last run: the most bytes of intermediate values alive at
 * once (what the plan needed), and the bytes of all of them together (what
 * a plan that never reused memory would need). */
GWR_API int64_t gwr_session_peak_bytes(const gwr_session *s);
GWR_API int64_t gwr_session_total_bytes(const gwr_session *s);
/* Layers whose kernel prepared state from their constant inputs when the
 * session planned them (a GEMM's B widened or laid out once), over the
 * network and the subgraphs planned so far. */
GWR_API int64_t gwr_session_prepared_layers(const gwr_session *s);

/* ---- profiling ---------------------------------------------------------- */

/* One timed interval of a session's profile. Times are CLOCK_MONOTONIC
 * nanoseconds (gwr_clock_ns). */
typedef struct gwr_profile_event {
    const char *name;   /* the layer's name, "run", or the phase: "plan", or one the caller added */
    const char *op;     /* the layer's op; "" for runs and phases */
    const char *cat;    /* "layer", "run" or "phase" */
    int64_t start_ns, dur_ns; /* dur_ns >= 0 */
    int depth;          /* layers: 0 in the network, 1 + the If/Loop/Scan bodies around them */
    const char *shapes; /* layers: "float32[1,3,8,8], float32[4,3,3,3] -> float32[1,4,6,6]" (inputs,
                         * absent ones "-", then outputs) as they ran; else NULL */
} gwr_profile_event;

/* CLOCK_MONOTONIC now, in nanoseconds: the clock of profile events. */
GWR_API int64_t gwr_clock_ns(void);
/* on 1: clears the profile and records from now on: the "plan" phase (the
 * session's planning, always timed), then one "run" event per successful
 * gwr_session_run and one "layer" event per layer executed (a layer of a
 * Loop body once per iteration), with what it read and wrote. on 0: stops
 * recording (the events stay). Off, a run costs one test of a flag per
 * layer. */
GWR_API gwr_status gwr_session_profile(gwr_session *s, int on);
/* Adds a phase the caller timed ("load" before gwr_session_new, say). */
GWR_API gwr_status gwr_session_profile_phase(gwr_session *s, const char *name, int64_t start_ns, int64_t dur_ns);
/* Adds the "optimize" phase of an optimized session: from new_start_ns
 * (gwr_clock_ns() when the caller called gwr_session_new: the clone and
 * gwr_optimize) to the start of planning. Nothing for a session planned as
 * written. */
GWR_API gwr_status gwr_session_profile_optimize(gwr_session *s, int64_t new_start_ns);
/* The events recorded, in the order they ended (phases first as added). */
GWR_API int64_t gwr_session_profile_count(const gwr_session *s);
GWR_API const gwr_profile_event *gwr_session_profile_event(const gwr_session *s, int64_t i);
/* Writes the events as a Chrome trace (chrome://tracing, Perfetto):
 * {"traceEvents":[{"name":..,"cat":..,"ph":"X","ts":..,"dur":..,"pid":1,
 * "tid":..,"args":{"op":..,"shapes":..,"depth":..}}, ...]}; ts and dur in
 * microseconds from the earliest event; phases on tid 0, runs and layers
 * on tid 1. */
GWR_API gwr_status gwr_session_profile_write(const gwr_session *s, FILE *out);

/* Runs one layer's kernel on input values (inputs[i] NULL for an absent
 * optional input), outside any session: what constant folding needs.
 * outputs[i] (gwr_layer_num_outputs of them) get new references, NULL for
 * an output the kernel did not make. Layers with subgraphs are refused.
 * On error the message (naming the layer) is in gwr_last_errmsg(). */
GWR_API gwr_status gwr_exec_layer(gwr_layer *l, gwr_value *const *inputs, gwr_value **outputs);

/* 1 when the executor has a kernel for the op (domain "" is ONNX). */
GWR_API int gwr_exec_has_kernel(const char *domain, const char *op);

/* ---- inputs: given, or seeded random ------------------------------------ */

/* A new value of seeded random data (`gwr run --random`): floats uniform
 * in [-1, 1), integers in [0, 3] (valid as small indices), bools 0/1,
 * strings "s0".."s3". *state is a xorshift64* state, advanced by one step
 * per element (nonzero; gwr_exec_make_inputs seeds it). NULL (and
 * gwr_last_errmsg) on a bad type or no memory. */
GWR_API gwr_value *gwr_value_random(gwr_dtype dtype, int rank, const int64_t *dims, uint64_t *state);

/* The shape of the random value of input `name`. */
typedef struct gwr_input_shape {
    const char *name;
    int rank;                 /* 0..GWR_MAX_RANK */
    const int64_t *dims;      /* rank entries >= 0 */
} gwr_input_shape;


/* How gwr_exec_make_inputs makes a network's inputs. All zero: random
 * values of the declared shapes with unknown and symbolic dims 1, seed 0. */
typedef struct gwr_input_options {
    uint64_t seed;
    /* Values given by input name (retained, not copied). */
    int ngiven;
    const char *const *given_names;
    gwr_value *const *given_values;
    /* Shapes of random inputs by name (else the declared shape). */
    int nshapes;
    const gwr_input_shape *shapes;
    /* Symbolic dims of declared shapes, by symbol name. */
    int nbind;
    const gwr_dim_binding *bind;
    int64_t default_dim;      /* unknown and unbound symbolic dims; 0 means 1 */
} gwr_input_options;

/* Inputs ready for gwr_session_run: names point into the network (valid
 * while it is unchanged), values are references the struct holds. */
typedef struct gwr_inputs {
    int n;
    const char **names;
    gwr_value **values;
    /* On error: the entry of opt->shapes or opt->given_names at fault, or
     * -1; the network input at fault (its name), or NULL. */
    int bad_shape, bad_given;
    const char *bad_input;
} gwr_inputs;

/* Values for every input of net in network order: the given one; else,
 * for an input with a default value (initializer) and no shape given,
 * none (the session uses the default); else seeded random data (one
 * generator for all, advanced in input order, so the same seed gives the
 * same values). opt may be NULL. Errors (gwr_last_errmsg, out->bad_*):
 * GWR_ERR_TYPE for an input without a tensor type that is not given;
 * GWR_ERR_INVALID_ARG for a shape of another rank than the input's or
 * contradicting a known dim, a bad shape or binding, or a given or shaped
 * name the network has no input of. *out is left empty on error. */
GWR_API gwr_status gwr_exec_make_inputs(gwr_network *net, const gwr_input_options *opt, gwr_inputs *out);
/* Releases the values and empties *in; NULL is ignored. */
GWR_API void gwr_inputs_free(gwr_inputs *in);

/* ---- comparing two networks' outputs -------------------------------------- */

/* An element of a and b is within tolerance when |a - b| <= atol + rtol *
 * |b|; NaN matches NaN, and a NaN against a number differs. */
typedef struct gwr_compare_options {
    double atol, rtol;
    gwr_input_options inputs; /* how the inputs are made (from the first network) */
    int threads;              /* gwr_session_options.threads of both sessions */
    /* How both sessions are made (with .threads = threads): NULL plans the
     * networks as written (gwr_session_new_raw), which is what checking a
     * rewrite wants; gwr_session_new runs them optimized (`gwr verify`). */
    gwr_session *(*session_new)(gwr_network *net, const gwr_session_options *opt);
} gwr_compare_options;
/* The tolerances of `gwr verify`: atol 1e-5, rtol 1e-4. */
#define GWR_COMPARE_DEFAULTS {.atol = 1e-5, .rtol = 1e-4}

/* One output of both networks. */
typedef struct gwr_compare_output {
    char *name;
    gwr_value *a, *b;         /* the outputs (references the report holds) */
    int same_type;            /* kind, dtype and dims equal (sequences and optionals: as many elements, each
                               * of the same type); else nothing else is compared */
    double max_abs, max_rel;  /* worst |a - b| and |a - b| / |b| (infinity for NaN against a number) */
    double excess;            /* worst |a - b| / (atol + rtol * |b|): beyond tolerance when > 1 */
    int64_t numel, nbad;      /* elements (of all the tensors of a sequence), and those beyond tolerance */
    int pass;                 /* same_type and nbad == 0 */
} gwr_compare_output;

typedef struct gwr_compare_report {
    int pass;                 /* every output passes */
    int noutputs;
    gwr_compare_output *outputs; /* in the first network's output order */
    int worst;                /* the output with the largest excess (type mismatch first), -1 if none differs */
    const char *worst_name;   /* its name, or NULL */
    double max_abs, max_rel;  /* over all outputs */
    /* On an error of planning or running: 1 or 2 for the network that
     * failed (the session's message is in gwr_last_errmsg), else 0. */
    int error_in;
} gwr_compare_report;

/* Runs a and b on the same inputs (made from a's interface by
 * gwr_exec_make_inputs with opt->inputs) and compares their outputs by
 * name: `gwr verify` as a function, the numeric check of every rewrite
 * test. opt NULL: GWR_COMPARE_DEFAULTS. The interface must agree: the same
 * output names, every input without a default value of either network an
 * input of the other, and equal dtypes where both are known; otherwise
 * GWR_ERR_TYPE with a message naming the first difference, before
 * anything runs. Outputs that differ are not an error: *rep says pass or
 * fail, per output and in all; free it with gwr_compare_report_free (also
 * after an error, when it is empty). Networks are only read. */
GWR_API gwr_status gwr_exec_compare(gwr_network *a, gwr_network *b, const gwr_compare_options *opt,
                                    gwr_compare_report *rep);
GWR_API void gwr_compare_report_free(gwr_compare_report *rep);

#ifdef __cplusplus
}
#endif
#endif
