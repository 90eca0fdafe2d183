/* gwr/match.h - declarative patterns and the helpers patterns share, built
 * only on the public API (as Lua's luaL_ layer is on lua_).
 *
 * A pattern is a static table of nodes describing a DAG of layers. The
 * ROOT IS THE LAST NODE; every node's inputs refer to captures or to
 * EARLIER nodes of the table (a table reads bottom-up, producers first, as
 * the code that would build the subgraph). HardSwish written out,
 * Div(Mul(x, Clip(Add(x, 3), 0, 6)), 6):
 *
 *   enum { X, K3, LO, HI, K6, NCAP };
 *   static const gwr_match_node hswish_nodes[] = {
 *       GWR_M_OP("Add", GWR_M_CAP(X), GWR_M_SPLAT(K3, 3.0)),                      // 0
 *       GWR_M_OP("Clip", GWR_M_NODE(0), GWR_M_SPLAT(LO, 0.0), GWR_M_SPLAT(HI, 6.0)), // 1
 *       GWR_M_OP("Mul", GWR_M_CAP(X), GWR_M_NODE(1)),                             // 2
 *       GWR_M_OP("Div", GWR_M_NODE(2), GWR_M_SPLAT(K6, 6.0)),                      // 3: root
 *   };
 *
 * A node with attribute constraints or a predicate is written with
 * designators (positional initializers trip -Wmissing-field-initializers):
 *
 *   {.op = "Softmax", .in = {GWR_M_CAP(X)}, .attrs = {GWR_MA_INT_OR_ABSENT("axis", -1)}}
 *   static int to_hswish(gwr_rewrite_ctx *c, const gwr_match *m) {
 *       gwr_tensor *y = gwr_hard_swish(gwr_rewrite_ctx_network(c), m->captures[X]);
 *       if (!y) return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "%s", gwr_network_errmsg(...));
 *       gwr_status s = gwr_match_replace(m, 1, &y);
 *       return s ? gwr_rewrite_fail(c, s, "...") : 1;
 *   }
 *   static const gwr_match_pattern hswish = {"fuse_hard_swish", GWR_M_NODES(hswish_nodes), to_hswish, NULL};
 *   gwr_match_add(manager, "fuse_hard_swish", &hswish, 10);
 *
 * The capture X appears twice: both places must hold the same tensor.
 * Add and Mul are commutative (GWR_OPF_COMMUTATIVE), so x + 3 and 3 + x,
 * x * clip and clip * x all match. Every tensor a matched non-root layer
 * produces must be read only by matched layers and must not be a network
 * output (the single-reader rule), so replacing the root's outputs leaves
 * the other matched layers dead.
 *
 * Ownership: tables, patterns and the strings in them are the caller's and
 * must outlive every manager they are added to (static tables do). A
 * gwr_match is a plain value filled by the matcher; its handles live as
 * long as the network's layers. Nothing here allocates while matching. */
#ifndef GWR_MATCH_H
#define GWR_MATCH_H

#include "gwr/rewrite.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GWR_MATCH_MAX_NODES 16    /* nodes of one table */
#define GWR_MATCH_MAX_CAPTURES 16 /* capture slots 0..15 */
#define GWR_MATCH_MAX_INPUTS 8    /* input references of one node */
#define GWR_MATCH_MAX_ATTRS 4     /* attribute constraints of one node */

/* ---- input references ------------------------------------------------------ */

typedef enum gwr_mref_kind {
    GWR_MREF_END = 0, /* no more inputs: the layer has exactly the ones listed */
    GWR_MREF_NODE,    /* output `out` of table node `idx` (an earlier node) */
    GWR_MREF_CAP,     /* any tensor, captured in slot idx (-1: not captured) */
    GWR_MREF_CONST,   /* produced by a CONSTANT layer; captured in slot idx (-1: not) */
    GWR_MREF_SPLAT,   /* a CONSTANT equal to `value` everywhere (within 1e-6 * max(1, |value|)) */
    GWR_MREF_ABSENT,  /* the input must be absent */
    GWR_MREF_REST     /* any number of further inputs (last entry only) */
} gwr_mref_kind;

typedef struct gwr_mref {
    gwr_mref_kind kind;
    int idx;          /* node index (NODE) or capture slot */
    int out;          /* NODE: which output of the node's layer */
    int optional;     /* the input may also be absent (the slot then stays NULL) */
    double value;     /* SPLAT */
} gwr_mref;

#define GWR_M_NODE(i) {.kind = GWR_MREF_NODE, .idx = (i)}
#define GWR_M_NODE_OUT(i, o) {.kind = GWR_MREF_NODE, .idx = (i), .out = (o)}
#define GWR_M_CAP(slot) {.kind = GWR_MREF_CAP, .idx = (slot)}
#define GWR_M_ANY {.kind = GWR_MREF_CAP, .idx = -1}
#define GWR_M_CONST(slot) {.kind = GWR_MREF_CONST, .idx = (slot)}
#define GWR_M_SPLAT(slot, v) {.kind = GWR_MREF_SPLAT, .idx = (slot), .value = (v)}
#define GWR_M_ABSENT {.kind = GWR_MREF_ABSENT}
#define GWR_M_REST {.kind = GWR_MREF_REST}
/* Optional forms: absent, or matching as the plain form. */
#define GWR_M_OPT_CAP(slot) {.kind = GWR_MREF_CAP, .idx = (slot), .optional = 1}
#define GWR_M_OPT_CONST(slot) {.kind = GWR_MREF_CONST, .idx = (slot), .optional = 1}
#define GWR_M_OPT_NODE(i) {.kind = GWR_MREF_NODE, .idx = (i), .optional = 1}

/* ---- attribute constraints ------------------------------------------------- */

typedef enum gwr_mattr_kind {
    GWR_MATTR_NONE = 0,
    GWR_MATTR_INT,    /* == i */
    GWR_MATTR_FLOAT,  /* |attr - f| <= tol */
    GWR_MATTR_STRING, /* == s */
    GWR_MATTR_INTS,   /* == ints[0..n) */
    GWR_MATTR_ABSENT  /* not set */
} gwr_mattr_kind;

typedef struct gwr_mattr {
    const char *name;
    gwr_mattr_kind kind;
    int absent_ok;        /* an absent attribute passes too (the value is its default) */
    int64_t i;
    double f, tol;
    const char *s;
    const int64_t *ints;
    int n;
} gwr_mattr;

#define GWR_MA_INT(nm, v) {.name = (nm), .kind = GWR_MATTR_INT, .i = (v)}
#define GWR_MA_INT_OR_ABSENT(nm, v) {.name = (nm), .kind = GWR_MATTR_INT, .i = (v), .absent_ok = 1}
#define GWR_MA_FLOAT(nm, v, t) {.name = (nm), .kind = GWR_MATTR_FLOAT, .f = (v), .tol = (t)}
#define GWR_MA_FLOAT_OR_ABSENT(nm, v, t) {.name = (nm), .kind = GWR_MATTR_FLOAT, .f = (v), .tol = (t), .absent_ok = 1}
#define GWR_MA_STR(nm, v) {.name = (nm), .kind = GWR_MATTR_STRING, .s = (v)}
#define GWR_MA_STR_OR_ABSENT(nm, v) {.name = (nm), .kind = GWR_MATTR_STRING, .s = (v), .absent_ok = 1}
/* arr: a static int64_t array. */
#define GWR_MA_INTS(nm, arr) {.name = (nm), .kind = GWR_MATTR_INTS, .ints = (arr), .n = (int)(sizeof(arr) / sizeof((arr)[0]))}
#define GWR_MA_ABSENT(nm) {.name = (nm), .kind = GWR_MATTR_ABSENT}

/* ---- tables and matches ---------------------------------------------------- */

typedef struct gwr_match gwr_match;

/* One node. op: "Add" (default domain) or "domain::Op" ("gwr::GPTAttention");
 * NULL with op_id GWR_OP_CUSTOM: any op. op_id (when not GWR_OP_CUSTOM) is
 * compared instead of op and is the faster test. in: the inputs in order,
 * ended by the first GWR_MREF_END entry (trailing optional references may
 * be missing on the layer). pred (may be NULL) runs once the whole table
 * has matched structurally, in table order: 1 keeps the match, 0 refuses. */
typedef struct gwr_match_node {
    const char *op;
    gwr_mref in[GWR_MATCH_MAX_INPUTS];
    gwr_mattr attrs[GWR_MATCH_MAX_ATTRS];
    int (*pred)(const gwr_match *m, int node, void *user);
    gwr_op_id op_id;
} gwr_match_node;

/* A pattern: the table and what to do with a match. rewrite (for managers)
 * gets the match and the manager's ctx; it returns 1 when it changed the
 * network, 0 when it refuses the match without changing anything (say
 * through gwr_rewrite_no_match), < 0 on failure (gwr_rewrite_fail). */
typedef struct gwr_match_pattern {
    const char *name;
    const gwr_match_node *nodes;
    int nnodes;
    int (*rewrite)(gwr_rewrite_ctx *c, const gwr_match *m);
    void *user;       /* for pred and rewrite (m->pattern->user) */
} gwr_match_pattern;

/* A node of op `name` reading the references given (no attributes). */
#define GWR_M_OP(name, ...) {.op = (name), .in = {__VA_ARGS__}}

/* nodes, nnodes of a static array. */
#define GWR_M_NODES(arr) (arr), (int)(sizeof(arr) / sizeof((arr)[0]))

/* What a match found. layers[i] is the layer of table node i (root last);
 * captures[k] the tensor of slot k (NULL when unused or an absent optional
 * input). After a failed match, `why` and the fields after it say where it
 * failed (gwr_match_why formats them). */
struct gwr_match {
    const gwr_match_pattern *pattern;
    gwr_layer *layers[GWR_MATCH_MAX_NODES];
    gwr_tensor *captures[GWR_MATCH_MAX_CAPTURES];
    int nlayers;
    const char *why;     /* static text of the failure, or NULL */
    int why_node;        /* table node where it failed, or -1 */
    int why_input;       /* input slot, or -1 */
    const gwr_tensor *why_tensor; /* the tensor in question, or NULL */
};

/* Checks a pattern's table: node count, ops, references to earlier nodes
 * only, capture slots in range, REST last, every node reachable from the
 * root, attribute constraints named. GWR_ERR_INVALID_ARG with a message in
 * gwr_last_errmsg() when malformed. */
GWR_API gwr_status gwr_match_check(const gwr_match_pattern *p);

/* Matches root layer l against p. Returns 1 and fills *m; 0 when l does
 * not match (m->why says why); < 0, -(gwr_status), for a malformed table
 * or NULL arguments, with a message in gwr_last_errmsg(). Never changes the
 * network. Commutative ops are tried in both operand orders. */
GWR_API int gwr_match_layer(const gwr_match_pattern *p, gwr_layer *l, gwr_match *m);

/* Writes why the last gwr_match_layer on m failed ("node 2 (Mul) input 1
 * 'y': a second reader outside the match"); returns what snprintf returns. */
GWR_API int gwr_match_why(const gwr_match *m, char *buf, size_t size);

/* Fills a gwr_pattern_rewriter running p: roots are the class of the
 * root's op (PLUGIN for ops the table lacks; every class for an any-op
 * root), match_and_rewrite matches and calls p->rewrite, user is p.
 * GWR_ERR_INVALID_ARG (gwr_last_errmsg) when p is malformed or has no
 * rewrite. p must outlive every manager the rewriter is added to. */
GWR_API gwr_status gwr_match_rewriter(const gwr_match_pattern *p, gwr_pattern_rewriter *out);
/* gwr_match_rewriter, rooted on the root's exact op, added to m. */
GWR_API gwr_status gwr_match_add(gwr_rewrite_manager *m, const char *label, const gwr_match_pattern *p,
                                 int benefit);

/* ---- replacing ------------------------------------------------------------- */

/* Makes the readers of every output of l read outs[i] instead (network
 * output marks and names move as with gwr_tensor_replace_all_uses_with) and
 * marks l removed. n must be l's output count; an outs[i] may be NULL only
 * for an output nobody reads. Checked before anything changes: counts,
 * NULLs, dtypes (GWR_ERR_TYPE when both are known and differ), networks,
 * a new tensor being one of l's own outputs, and, with several outputs, a
 * new tensor depending on l (a cycle: a walk over its producers); with one
 * output the IR refuses a cycle itself. So an error changes nothing.
 * Message in gwr_last_errmsg(). */
GWR_API gwr_status gwr_match_replace_layer(gwr_layer *l, int n, gwr_tensor *const *outs);
/* gwr_match_replace_layer on m's root, then every other matched layer is
 * marked removed (the single-reader rule left them dead). */
GWR_API gwr_status gwr_match_replace(const gwr_match *m, int n, gwr_tensor *const *outs);

/* ---- constants ------------------------------------------------------------- */

/* A view of a numeric constant: the tensor produced by a live CONSTANT
 * layer holding "value" (a tensor) or "value_float", "value_floats",
 * "value_int", "value_ints". data and dims point into the layer or, for
 * the non-tensor forms, into the view itself (do not copy the struct then).
 */
typedef struct gwr_match_const {
    gwr_dtype dtype;
    int rank;
    const int64_t *dims;
    int64_t numel;
    const void *data;
    int64_t dim0_;
    union { float f; int64_t i; } scalar_;
} gwr_match_const;

/* 1 and *out filled when t is a constant of a numeric dtype the helpers
 * read (float16/32/64, bfloat16, the 8- to 64-bit ints, bool); else 0. */
GWR_API int gwr_match_const_get(const gwr_tensor *t, gwr_match_const *out);
/* Element i widened to double; NaN for a bad index. */
GWR_API double gwr_match_const_at(const gwr_match_const *c, int64_t i);
/* Element i of an integer constant exactly, into *v: 1, or 0 when c's
 * dtype is not an integer one, i is out of range, or the value (a uint64
 * above INT64_MAX) is not an int64. Read integer constants (axes, shapes,
 * slice bounds) with this, never through the double of
 * gwr_match_const_at: INT64_MAX has no double. */
GWR_API int gwr_match_const_int_at(const gwr_match_const *c, int64_t i, int64_t *v);
/* The values of a constant integer tensor of rank <= 1, exactly, into v
 * (cap entries): the count, or -1 when t is not such a constant, has more
 * than cap entries or holds a value that is not an int64. */
GWR_API int gwr_match_const_ints(const gwr_tensor *t, int64_t *v, int cap);
/* All of t's elements widened to double into out (cap entries); *n gets
 * the count, *rank and dims (may be NULL; GWR_MAX_RANK entries) the shape.
 * GWR_ERR_TYPE when t is not a readable constant, GWR_ERR_SHAPE when cap
 * is too small (*n still says how many). Message in gwr_last_errmsg(). */
GWR_API gwr_status gwr_match_const_f64(const gwr_tensor *t, double *out, int64_t cap, int64_t *n, int *rank,
                                       int64_t *dims);
/* 1 when t is a constant with at least one element, every one within tol
 * of v (NaN never is). */
/* Is t a real floating-point dtype the kernels compute in: float16,
 * bfloat16, float32, float64? (gwr_dtype_is_float also counts complex and
 * float8 types, which no arithmetic pattern may rewrite.) */
GWR_API int gwr_match_dtype_real_float(gwr_dtype t);
GWR_API int gwr_match_const_is_splat(const gwr_tensor *t, double v, double tol);
/* 1 and *v when t is a constant with exactly one element (any rank). */
GWR_API int gwr_match_const_scalar(const gwr_tensor *t, double *v);
/* Per-channel broadcasting: 1 when constant t broadcasts (NumPy-style,
 * right-aligned) against a tensor of rank `rank` varying at most along
 * `axis` (negative counts from the back) and has no more dims than rank;
 * *channels gets its extent along axis (1: the same value for every
 * channel). Element c of such a constant is channel c (or element 0). */
GWR_API int gwr_match_const_per_channel(const gwr_tensor *t, int rank, int axis, int64_t *channels);

/* ---- cloning --------------------------------------------------------------- */

/* A new layer in l's network with l's op, domain, output count and every
 * attribute (tensors share their buffers; graphs are deep-copied), reading
 * `inputs`, with output types inferred (gwr_layer_infer). NULL on error,
 * message in gwr_last_errmsg(); a layer made before the error is marked
 * removed. */
GWR_API gwr_layer *gwr_match_clone_layer(gwr_layer *l, int ninputs, gwr_tensor *const *inputs);
/* Copies every attribute of `from` onto `to` (replacing same-named ones;
 * graphs deep-copied into to's network). Message in gwr_last_errmsg(). */
GWR_API gwr_status gwr_match_copy_attrs(gwr_layer *to, const gwr_layer *from);

#ifdef __cplusplus
}
#endif
#endif
