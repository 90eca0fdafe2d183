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
/* The elements (for STRING, gwr_bytes entries). Writing through it is for
 * the value's owner only: a value may share its bytes with weights or with
 * other values (a Reshape's output shares its input's). */
GWR_API void *gwr_value_data(gwr_value *v);
GWR_API const void *gwr_value_cdata(const gwr_value *v);
/* Sets STRING element i to a copy of len bytes. */
GWR_API gwr_status gwr_value_set_string(gwr_value *v, int64_t i, const void *data, size_t len);
/* A weights view of v (w->buffer is a new reference the caller releases;
 * w->dims point into v, which must outlive w). STRING values are copied. */
GWR_API gwr_status gwr_value_to_weights(const gwr_value *v, gwr_weights *w);
/* Element i of a numeric (or bool) value as a double / an int64 (floats
 * truncated toward zero); NaN / 0 for other dtypes or a bad index. */
GWR_API double gwr_value_get_f64(const gwr_value *v, int64_t i);
GWR_API int64_t gwr_value_get_i64(const gwr_value *v, int64_t i);
/* Sets element i of a numeric (or bool) value from a double, as a C
 * conversion would (float16 / bfloat16 rounded to nearest even); ignored
 * for other dtypes or a bad index. */
GWR_API void gwr_value_set_f64(gwr_value *v, int64_t i, double x);
/* "float32[2,3]" into buf; returns what snprintf returns. */
GWR_API int gwr_value_type_str(const gwr_value *v, char *buf, size_t size);

/* ---- sessions ------------------------------------------------------------ */

typedef struct gwr_session gwr_session;

typedef struct gwr_session_options {
    int threads; /* intra-op threads for the kernels that use them; 0 means 1 */
} gwr_session_options;

/* Plans net for running: a topological order, each tensor's last reader,
 * a kernel for every layer (an op without one is an error naming the
 * layer), constants turned into values once. The network must stay
 * unchanged while the session lives. NULL with gwr_last_errmsg on error. */
GWR_API gwr_session *gwr_session_new(gwr_network *net, const gwr_session_options *opt);
GWR_API void gwr_session_free(gwr_session *s);
GWR_API const char *gwr_session_errmsg(const gwr_session *s);

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

/* Runs one layer's kernel on input values (inputs[i] NULL for an absent
 * optional input), outside any session: what constant folding needs.
 * outputs[i] (gwr_layer_num_outputs of them) get new references, NULL for
 * an output the kernel did not make. Layers with subgraphs are refused.
 * On error the message (naming the layer) is in gwr_last_errmsg(). */
GWR_API gwr_status gwr_exec_layer(gwr_layer *l, gwr_value *const *inputs, gwr_value **outputs);

/* 1 when the executor has a kernel for the op (domain "" is ONNX). */
GWR_API int gwr_exec_has_kernel(const char *domain, const char *op);

#ifdef __cplusplus
}
#endif
#endif
