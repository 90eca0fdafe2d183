/* exec_internal.h - what the session and the kernels share (src/exec).
 *
 * A kernel is a function of a gwr_kctx: it reads the layer's attributes
 * and its input values, and sets its outputs, allocated with gwr_k_out
 * (memory from the session's pool) or passed through with gwr_k_set_out /
 * gwr_k_alias. It returns GWR_OK or the status of gwr_k_fail, whose
 * message the session prefixes with the layer. Kernels never see
 * patterns, ONNX files or other kernels (docs/design.md); what several kernel
 * families share is in kernels/kernel_util.h. The files depend one way:
 * session.c on the registry, the registry on the kernel families, they on
 * kctx.c, pool.c, value.c and kernel_util.c, none of which calls back. */
#ifndef GWR_EXEC_INTERNAL_H
#define GWR_EXEC_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "exec/exec_api.h"
#include "gwr/exec.h"
#include "util/util.h"

/* The shared part of a KV cache's views (gwr_value_new_cache, the
 * Attention kernel's present outputs): the rows of storage along axis 2
 * (cap) and how many of them have been written (fill, the longest view's
 * length). A view whose length is fill may append in place: it claims the
 * next rows by moving fill (gwr_value_cache_claim), so a stale view (one
 * that someone appended past) or a second claimer gets a copy instead. */
typedef struct gwr_kv_store {
    atomic_long refs;
    _Atomic int64_t fill;
    int64_t cap;
} gwr_kv_store;

struct gwr_value {
    atomic_long refs;
    gwr_dtype dtype;
    int rank;
    int64_t *dims;            /* dims_small or malloc'd */
    int64_t dims_small[6];
    int64_t numel;
    size_t nbytes;
    void *data;               /* inside buf; for STRING, gwr_bytes[numel] owned by the value */
    gwr_buffer *buf;          /* NULL for STRING values */
    /* Not a tensor (gwr_value_new_sequence / _optional): rank 0, numel 0,
     * no data; dtype the elements' (GWR_UNDEFINED: not known). A SEQUENCE
     * holds nelems tensors, an OPTIONAL none or one tensor or sequence; it
     * owns a reference to each. */
    gwr_value_kind kind;
    int64_t nelems;
    gwr_value **elems;
    /* A KV-cache view (rank 4, dims (d0, d1, d2, d3)): element (a, b, t, c)
     * at data[((a * d1 + b) * kv->cap + t) * d3 + c]; buf holds all cap
     * rows. NULL: a dense value. */
    gwr_kv_store *kv;
};

static inline int gwr_value_is_tensor(const gwr_value *v) { return v->kind == GWR_VALUE_TENSOR; }

/* ---- KV-cache views (value.c) ---- */

typedef struct gwr_exec_pool gwr_exec_pool;

/* Is v a cache view whose elements are not dense at v->data (rows of
 * several (d0, d1) heads with room between them)? Only kernels flagged
 * GWR_KF_CACHE are given such values. */
static inline int gwr_value_strided(const gwr_value *v) {
    return v->kv && v->numel > 0 && v->dims[2] != v->kv->cap && v->dims[0] * v->dims[1] > 1;
}
/* v's elements densely into dst (v->nbytes bytes). */
void gwr_value_gather(const gwr_value *v, void *dst);
/* A dense value of v's elements: v itself (a new reference) unless it is
 * strided, else a copy (bytes from pool, or malloc'd when pool is NULL);
 * NULL when out of memory. */
gwr_value *gwr_value_dense(gwr_value *v, gwr_exec_pool *pool);
/* A view of the store of cache value `of` (its buffer, data and kv) with
 * axis-2 length len (<= the store's cap); NULL when out of memory. */
gwr_value *gwr_value_cache_view(const gwr_value *of, int64_t len);
/* A cache value over buf (retained; d0 * d1 * cap * d3 elements at data)
 * with a new store of cap rows, dims[2] of them filled. */
gwr_value *gwr_value_cache_over(gwr_buffer *buf, void *data, gwr_dtype dtype, const int64_t dims[4], int64_t cap);
/* Rows [dims[2], dims[2] + n) of v's store for the caller to write, when
 * v is a cache view that nobody appended past and that has room for n
 * more: 1, and the store's fill moved (atomically) to dims[2] + n; else 0. */
int gwr_value_cache_claim(const gwr_value *v, int64_t n);

/* A value of numel elements over bytes of `buf` at `data` (retained), with
 * a copy of dims. */
gwr_value *gwr_value_over(gwr_buffer *buf, void *data, gwr_dtype dtype, int rank, const int64_t *dims);

/* ---- intra-op threads (threads.c) ------------------------------------------ */

/* A session's workers for the kernels' loops (--threads N). */
typedef struct gwr_tpool gwr_tpool;

/* One share of a parallel loop: the indices [begin, end). */
typedef void (*gwr_par_fn)(void *ctx, int64_t begin, int64_t end);

/* Calls fn over disjoint ranges that cover [0, n), on the calling thread
 * and up to the pool's other workers, and returns when every range is
 * done. Ranges are at least `grain` long (the last may be shorter), so
 * work under grain runs on the caller alone; grain < 1 reads as 1. p NULL
 * runs fn(ctx, 0, n) on the caller. Loops do not nest: one that fn calls
 * runs serially on fn's thread. fn must write only what its range owns
 * and may not fail: a kernel checks its arguments and allocates first. fn
 * may call OpenBLAS: a loop split over threads runs it at one thread. */
void gwr_tpool_parallel(gwr_tpool *p, int64_t n, int64_t grain, gwr_par_fn fn, void *ctx);
/* Workers the pool runs loops on, the caller included (1 for NULL). */
int gwr_tpool_size(const gwr_tpool *p);
/* A pool of threads-1 workers plus the caller (threads.c); NULL for
 * threads <= 1 or out of memory, which gwr_tpool_parallel runs serially.
 * Fewer workers than asked when threads cannot be started. One caller at a
 * time: the session's run. */
gwr_tpool *gwr_tpool_new(int threads);
/* Stops and joins the workers (asleep or spinning) and frees p; NULL: no-op. */
void gwr_tpool_free(gwr_tpool *p);
/* Would gwr_tpool_parallel(p, n, grain, ...) called here use more than
 * one thread? (Then a body's per-thread scratch needs gwr_tpool_size
 * shares; else one.) */
int gwr_tpool_splits(const gwr_tpool *p, int64_t n, int64_t grain);
/* Inside a loop body: which thread runs it, in [0, gwr_tpool_size(p)) (0:
 * the caller), for per-thread scratch allocated before the loop. A loop
 * nested in a body (run serially) sees its outer body's index. */
int gwr_par_thread(void);
/* The pool of the run on this thread (a session sets it for the length of
 * a run; NULL outside one): for the few helpers that have no kctx, such as
 * gwr_ku_sgemm's products of few rows, which it splits by columns.
 * gwr_tpool_run_set returns the pool it replaces, to give back after. */
gwr_tpool *gwr_tpool_run_set(gwr_tpool *p);
gwr_tpool *gwr_tpool_current(void);

/* Loops of less work than about this many elements stay on the caller:
 * handing a range to a worker costs a few microseconds. */
enum { GWR_PAR_MIN_ELEMS = 16384 };
/* The grain of a loop whose every index covers `per` elements' work. */
static inline int64_t gwr_par_grain(int64_t per) {
    return per >= GWR_PAR_MIN_ELEMS ? 1 : GWR_PAR_MIN_ELEMS / (per > 0 ? per : 1);
}

/* ---- the memory pool (pool.c) -------------------------------------------- */

/* A pool with one reference, the owner's; NULL when out of memory. */
gwr_exec_pool *gwr_exec_pool_new(void);
/* Gives the owner's reference back; buffers still out keep the pool until
 * they are released (their blocks are then freed, not kept). */
void gwr_exec_pool_close(gwr_exec_pool *p);
/* A buffer of n bytes (64-byte aligned), or NULL when out of memory. */
gwr_buffer *gwr_exec_pool_alloc(gwr_exec_pool *p, size_t n);
/* Starts a run's figures: total 0, peak the bytes out now; frees the free
 * blocks of each size class beyond what the last runs needed of it at once
 * (pool.c). */
void gwr_exec_pool_begin_run(gwr_exec_pool *p);
void gwr_exec_pool_stats(const gwr_exec_pool *p, int64_t *peak, int64_t *total);
/* Bytes the pool keeps on its free lists (whole blocks). */
int64_t gwr_exec_pool_held(const gwr_exec_pool *p);
/* Is b a buffer of p that nothing but its one holder references? */
int gwr_exec_pool_owns_sole(const gwr_exec_pool *p, const gwr_buffer *b);

/* ---- kernel contexts ----------------------------------------------------- */

/* What gwr_k_fail records, for the caller to report after the kernel. */
typedef struct gwr_kmsg {
    gwr_status status;
    char text[GWR_ERRMSG_MAX];
} gwr_kmsg;

typedef struct gwr_kctx gwr_kctx;

/* Runs subgraph g for kernel k (see gwr_k_run_graph); set by the session. */
typedef gwr_status (*gwr_kgraph_fn)(gwr_kctx *k, gwr_network *g, int nin, gwr_value *const *in, int nout,
                                    gwr_value **out);

struct gwr_kctx {
    gwr_layer *layer;
    int64_t opset;            /* of the layer's domain, from the root network; 0 when the
                               * model imports none (read it as the newest) */
    int nin, nout;
    gwr_value *const *in;     /* in[i] is NULL for an absent optional input */
    gwr_value **out;          /* set by the kernel */
    int threads;
    /* The caller's side, read by the gwr_k_* helpers (kctx.c) only. */
    gwr_exec_pool *pool;      /* where outputs are allocated */
    gwr_kmsg *msg;            /* what gwr_k_fail writes */
    const uint8_t *out_used;  /* per output: read by anything; NULL: every output is */
    uint32_t in_last;         /* bit j: this layer is the last reader of input j's value (see
                               * gwr_k_out_over); 0 outside a session */
    gwr_kgraph_fn run_graph;  /* NULL: no subgraphs here (gwr_exec_layer) */
    void *run_ctx;            /* run_graph's: the session's frame */
    void *prep;               /* the layer's state from its kernel's prepare; NULL: none */
    gwr_tpool *tpool;         /* the session's workers; NULL: loops run on the caller */
};

/* gwr_tpool_parallel on the kernel's workers (k->tpool). */
void gwr_k_parallel(const gwr_kctx *k, int64_t n, int64_t grain, gwr_par_fn fn, void *ctx);

typedef gwr_status (*gwr_kernel_fn)(gwr_kctx *k);

/* A kernel's planning hook: called once per layer when the session plans
 * it, with k->in[i] set for the inputs a Constant layer produces (the
 * weights) and NULL for the others, and no outputs. It may build state
 * from the weights (a widened or transposed copy of a GEMM's B) into
 * *state, which every run of the layer then finds in k->prep and which the
 * session frees with the entry's prep_free when the plan goes. *state
 * NULL: nothing to prepare (the inputs it needs are not constant, or the
 * plain path is as fast): the kernel runs as without the hook, and that
 * path reports bad inputs. An error status (out of memory) fails
 * planning with gwr_k_fail's message. */
typedef gwr_status (*gwr_kprepare_fn)(gwr_kctx *k, void **state);
typedef void (*gwr_kprep_free_fn)(void *state);

/* ---- the kernel registry (kernels/registry.c) ----------------------------- */

#define GWR_KF_BLAS 1u  /* calls OpenBLAS: the caller loads it first (gwr_blas_load, exec/blas.h) */
#define GWR_KF_ALIAS 2u /* an output may share an input's bytes (gwr_k_set_out of an input, gwr_k_alias) */
#define GWR_KF_VALUES 4u /* takes sequences and optionals too; other kernels are given tensors only (the
                          * session refuses the layer otherwise) */
#define GWR_KF_CACHE 8u  /* takes KV-cache views as they are (gwr_value_strided: rows cap apart); other
                          * kernels are given a dense copy of a strided input (session.c) */

/* One kernel. Family files list theirs in a table gwr_kernels_<family>[],
 * ended by an entry with no fn, written with GWR_KERNEL (ops of ops.def) or
 * GWR_KERNEL_CUSTOM (ops the table lacks, by domain and name). */
typedef struct gwr_kernel_entry {
    gwr_op_id op;          /* GWR_OP_CUSTOM: the op named by domain and name */
    gwr_kernel_fn fn;
    unsigned flags;        /* GWR_KF_* */
    /* The opsets of the op's domain the kernel implements. In a family's
     * table 0 means the default: from the op's `since` in ops.def (1 for
     * custom ops), with no upper bound; the registry's copies (what
     * gwr_kernel_for_op gives) hold the resolved numbers, INT_MAX for none. */
    int first_opset, last_opset;
    const char *domain, *name; /* custom ops only */
    gwr_kprepare_fn prepare;   /* optional: state built at planning (above) */
    gwr_kprep_free_fn prep_free; /* frees prepare's state; required with prepare */
} gwr_kernel_entry;

/* GWR_KERNEL(Add, k_add) or GWR_KERNEL(MatMul, k_matmul, .flags = GWR_KF_BLAS). */
#define GWR_KERNEL(id, ...) {.op = GWR_OP_##id, .fn = __VA_ARGS__}
#define GWR_KERNEL_CUSTOM(dom, nm, ...) {.op = GWR_OP_CUSTOM, .domain = dom, .name = nm, .fn = __VA_ARGS__}

/* The kernel of an op of ops.def, or NULL when it has none. O(1). */
const gwr_kernel_entry *gwr_kernel_for_op(gwr_op_id id);
/* The kernel for (domain, op) (domain "" or "ai.onnx" for ONNX's), ops.def's
 * ops and the custom ones alike, or NULL. */
const gwr_kernel_entry *gwr_kernel_find(const char *domain, const char *op);
/* The kernel for layer l, or NULL. */
const gwr_kernel_entry *gwr_kernel_for_layer(const gwr_layer *l);
/* Does e implement opset `opset` of its domain (0: the newest, always)? */
int gwr_kernel_supports(const gwr_kernel_entry *e, int64_t opset);

/* ---- for kernels (kctx.c) ----------------------------------------------- */

/* Allocates output i (uninitialized bytes; STRING entries empty). NULL
 * after gwr_k_fail when out of memory (NOMEM) or on a bad shape
 * (INVALID_ARG); the kernel may return GWR_ERR_NOMEM either way: the
 * status gwr_k_fail recorded is the one reported. */
gwr_value *gwr_k_out(gwr_kctx *k, int i, gwr_dtype dtype, int rank, const int64_t *dims);
/* A tensor from the session's pool that is not (yet) an output: an element
 * of a sequence a kernel builds. NULL after gwr_k_fail, as gwr_k_out. */
gwr_value *gwr_k_value(gwr_kctx *k, gwr_dtype dtype, int rank, const int64_t *dims);
/* As gwr_k_out, but output i takes input j's bytes when nothing reads
 * them after this layer (k->in_last, the value and its bytes held by the
 * frame alone, from the session's pool) and they are as many as the
 * output needs: an element-wise kernel that reads x[i] before it writes
 * o[i] then runs in place, and the run's peak memory does not grow by an
 * output. Otherwise a fresh output, as gwr_k_out. */
gwr_value *gwr_k_out_over(gwr_kctx *k, int i, int j, gwr_dtype dtype, int rank, const int64_t *dims);
/* A KV-cache value from the pool that is not (yet) an output: dims
 * (d0, d1, d2, d3) with room for cap >= d2 rows along axis 2, d2 of them
 * filled (the bytes are not initialized). NULL after gwr_k_fail. */
gwr_value *gwr_k_cache_value(gwr_kctx *k, gwr_dtype dtype, const int64_t dims[4], int64_t cap);
/* Output i is v (a new reference is taken). */
void gwr_k_set_out(gwr_kctx *k, int i, gwr_value *v);
/* Output i shares v's bytes with another shape of the same element count. */
gwr_status gwr_k_alias(gwr_kctx *k, int i, gwr_value *v, int rank, const int64_t *dims);
/* Is output i read by anything (a layer, a subgraph, the caller)? */
int gwr_k_out_used(const gwr_kctx *k, int i);
/* Records "msg" for the layer; returns s. */
gwr_status gwr_k_fail(gwr_kctx *k, gwr_status s, const char *fmt, ...) GWR_PRINTF(3, 4);

/* Attributes, with defaults when absent. */
int64_t gwr_k_int(const gwr_kctx *k, const char *name, int64_t def);
float gwr_k_float(const gwr_kctx *k, const char *name, float def);
const char *gwr_k_string(const gwr_kctx *k, const char *name, const char *def);
/* Number of elements of an INTS / FLOATS attribute (*v set), -1 when absent. */
int64_t gwr_k_ints(const gwr_kctx *k, const char *name, const int64_t **v);
int64_t gwr_k_floats(const gwr_kctx *k, const char *name, const float **v);

/* Input i as int64s (a 1-D or scalar int32/int64 tensor of at most max
 * elements, as Reshape's shape or Slice's starts): count, or -1 after
 * gwr_k_fail. */
int64_t gwr_k_in_ints(gwr_kctx *k, int i, int64_t *out, int64_t max);
/* Element j of a numeric value as double / int64 (any numeric dtype). */
double gwr_v_get_f64(const gwr_value *v, int64_t j);
int64_t gwr_v_get_i64(const gwr_value *v, int64_t j);
/* Sets element j of a numeric value from a double (rounded / converted as
 * a C cast; float16 and bfloat16 round to nearest even). */
void gwr_v_set_f64(gwr_value *v, int64_t j, double x);

/* Runs subgraph g (an attribute of k's layer) with its inputs bound in
 * order and its outputs returned (new references), names of enclosing
 * graphs resolved through k's frame (k->run_graph; UNSUPPORTED without). */
gwr_status gwr_k_run_graph(gwr_kctx *k, gwr_network *g, int nin, gwr_value *const *in, int nout, gwr_value **out);

/* ---- shapes (value.c) ------------------------------------------------------ */

/* NumPy broadcasting of two shapes into out (rank *orank); GWR_ERR_INVALID_ARG
 * when they do not broadcast. */
gwr_status gwr_broadcast(int ra, const int64_t *a, int rb, const int64_t *b, int *orank, int64_t *out);
/* Element strides of a shape (rank r, dims d) read as shape (orank, od)
 * after broadcasting: 0 along broadcast dims. */
void gwr_bcast_strides(int r, const int64_t *d, int orank, const int64_t *od, int64_t *strides);
/* Row-major strides of a shape. */
void gwr_strides(int r, const int64_t *d, int64_t *strides);
/* Normalizes axis (negative counts from the end) into [0, rank); -1 when
 * out of range (Unsqueeze passes the output rank). */
int gwr_axis(int64_t axis, int rank);

/* ---- half precision: gwr_f16_to_f32 & co. are in exec_api.h ---- */

#endif
