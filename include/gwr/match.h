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
#define GWR_MATCH_MAX_ALTS 4      /* sub-patterns one EITHER reference chooses among */
#define GWR_MATCH_MAX_ATTR_SLOTS 8 /* attribute capture slots 0..7 (m->attrs) */
#define GWR_MATCH_MAX_DIMS_EQ 2   /* dims equalities of one node */
#define GWR_MATCH_MAX_COMBOS 4096 /* choice combinations (swaps x alternatives) of one table */

/* ---- input references ------------------------------------------------------ */

typedef enum gwr_mref_kind {
    GWR_MREF_END = 0, /* no more inputs: the layer has exactly the ones listed */
    GWR_MREF_NODE,    /* output `out` of table node `idx` (an earlier node) */
    GWR_MREF_CAP,     /* any tensor, captured in slot idx (-1: not captured) */
    GWR_MREF_CONST,   /* produced by a CONSTANT layer; captured in slot idx (-1: not) */
    GWR_MREF_SPLAT,   /* a CONSTANT equal to `value` everywhere (within 1e-6 * max(1, |value|)) */
    GWR_MREF_ABSENT,  /* the input must be absent */
    GWR_MREF_REST,    /* any number (>= min) of further inputs (last entry only); m->nrest[node] the count */
    GWR_MREF_EITHER   /* output `out` of ONE of the earlier nodes alt[0..nalt) (alternatives) */
} gwr_mref_kind;

/* A reference. Any reference to a present tensor may also constrain it
 * (v2): dtypes, a mask of GWR_M_DT(t) bits (0: any dtype; an unknown dtype
 * never passes a mask), and with rank_set the rank in rank_lo..rank_hi (an
 * unknown rank never passes). A capture used in several places gets every
 * place's constraints. */
typedef struct gwr_mref {
    gwr_mref_kind kind;
    int idx;          /* node index (NODE) or capture slot */
    int out;          /* NODE, EITHER: which output of the node's layer */
    int optional;     /* the input may also be absent (the slot then stays NULL) */
    double value;     /* SPLAT */
    double tol;       /* SPLAT: |element - value| <= tol for every element (tol_set), else
                       * within 1e-6 * max(1, |value|) */
    int tol_set;      /* SPLAT: tol was given (GWR_M_SPLAT_TOL): a tol of 0 then means exactly value */
    uint64_t dtypes;  /* 0, or the dtypes allowed (GWR_M_DT bits) */
    int rank_set, rank_lo, rank_hi; /* rank_set: rank_lo <= rank <= rank_hi */
    int min;          /* REST: at least this many further input positions */
    int alt[GWR_MATCH_MAX_ALTS]; /* EITHER: the candidate nodes (earlier ones), tried in order */
    int nalt;         /* EITHER: how many (2..GWR_MATCH_MAX_ALTS) */
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

/* ---- v2 references ----------------------------------------------------------
 *
 * SPLAT with a tolerance: a constant of any shape (it broadcasts) whose
 * every element is within tol of v. GELU's sqrt(2) written with 8 digits:
 *   GWR_M_SPLAT_TOL(C, 1.4142135, 1e-4)
 *
 * Constraints on a captured tensor (any reference kind; designators):
 *   GWR_M_CAP_IF(X, .dtypes = GWR_M_REAL_FLOATS, GWR_M_RANKS(2, 3))   x: f16|bf16|f32|f64, rank 2..3
 *   GWR_M_CONST_IF(W, GWR_M_RANKS(2, 2))                              w: a constant of rank 2
 * (a constant-only capture is GWR_M_CONST; an unknown dtype or rank never
 * passes a constraint on it).
 *
 * Alternatives of sub-patterns: GWR_M_EITHER(2, 3) is the output 0 of node
 * 2 OR of node 3 (both earlier). The attempts try each (a choice point, as
 * a commutative swap is one); the nodes of the alternative not taken stay
 * NULL in m->layers. LayerNorm's variance of Pow(d, 2) or Mul(d, d):
 *   GWR_M_OP("Pow", GWR_M_NODE(1), GWR_M_SPLAT(P2, 2.0)),   // 2
 *   GWR_M_OP("Mul", GWR_M_NODE(1), GWR_M_NODE(1)),          // 3
 *   {.op = "ReduceMean", .in = {GWR_M_EITHER(2, 3)}},       // 4: reads node 2 or node 3
 * GWR_M_EITHER_OUT(o, a, b) takes output o of the node chosen.
 *
 * Variadic: GWR_M_REST_MIN(n) as the last reference: at least n further
 * input positions; m->nrest[node] gets how many there were (GWR_M_REST: 0
 * or more). Concat of x and at least one more: {GWR_M_CAP(X), GWR_M_REST_MIN(1)}. */
#define GWR_M_SPLAT_TOL(slot, v, t) {.kind = GWR_MREF_SPLAT, .idx = (slot), .value = (v), .tol = (t), .tol_set = 1}
#define GWR_M_CAP_IF(slot, ...) {.kind = GWR_MREF_CAP, .idx = (slot), __VA_ARGS__}
#define GWR_M_CONST_IF(slot, ...) {.kind = GWR_MREF_CONST, .idx = (slot), __VA_ARGS__}
#define GWR_M_RANKS(lo, hi) .rank_set = 1, .rank_lo = (lo), .rank_hi = (hi)
#define GWR_M_DT(t) (UINT64_C(1) << (t))
#define GWR_M_REAL_FLOATS (GWR_M_DT(GWR_FLOAT32) | GWR_M_DT(GWR_FLOAT16) | GWR_M_DT(GWR_BFLOAT16) | GWR_M_DT(GWR_FLOAT64))
#define GWR_M_EITHER(...) GWR_M_EITHER_OUT(0, __VA_ARGS__)
#define GWR_M_EITHER_OUT(o, ...)                                                                                   \
    {.kind = GWR_MREF_EITHER, .out = (o), .alt = {__VA_ARGS__}, .nalt = (int)(sizeof((int[]){__VA_ARGS__}) / sizeof(int))}
#define GWR_M_REST_MIN(n) {.kind = GWR_MREF_REST, .min = (n)}

/* ---- attribute constraints ------------------------------------------------- */

typedef enum gwr_mattr_kind {
    GWR_MATTR_NONE = 0,
    GWR_MATTR_INT,    /* == i */
    GWR_MATTR_FLOAT,  /* |attr - f| <= tol */
    GWR_MATTR_STRING, /* == s */
    GWR_MATTR_INTS,   /* == ints[0..n) */
    GWR_MATTR_ABSENT, /* not set */
    GWR_MATTR_CAPTURE /* v2: any value, bound into m->attrs[slot] (absent: no match, or the default) */
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
    int slot;             /* CAPTURE: the attribute slot */
    gwr_mattr_kind def;   /* CAPTURE with absent_ok: the default's kind (INT, FLOAT, STRING, INTS) in i, f, s, ints/n */
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
/* Attribute captures (v2): the value is bound into m->attrs[slot]; the
 * same slot captured twice must hold equal values. Transpose(Transpose(x))
 * with both perms: {.op = "Transpose", .in = {GWR_M_CAP(X)}, .attrs = {GWR_MA_CAPTURE("perm", P1)}}.
 * The _OR forms bind a default when the attribute is absent (is_default 1):
 * GWR_MA_CAPTURE_INT_OR("axis", AX, -1). */
#define GWR_MA_CAPTURE(nm, sl) {.name = (nm), .kind = GWR_MATTR_CAPTURE, .slot = (sl)}
#define GWR_MA_CAPTURE_INT_OR(nm, sl, v) {.name = (nm), .kind = GWR_MATTR_CAPTURE, .slot = (sl), .absent_ok = 1, .def = GWR_MATTR_INT, .i = (v)}
#define GWR_MA_CAPTURE_FLOAT_OR(nm, sl, v) {.name = (nm), .kind = GWR_MATTR_CAPTURE, .slot = (sl), .absent_ok = 1, .def = GWR_MATTR_FLOAT, .f = (v)}
#define GWR_MA_CAPTURE_STR_OR(nm, sl, v) {.name = (nm), .kind = GWR_MATTR_CAPTURE, .slot = (sl), .absent_ok = 1, .def = GWR_MATTR_STRING, .s = (v)}
#define GWR_MA_CAPTURE_INTS_OR(nm, sl, arr)                                                                        \
    {.name = (nm), .kind = GWR_MATTR_CAPTURE, .slot = (sl), .absent_ok = 1, .def = GWR_MATTR_INTS, .ints = (arr),     \
     .n = (int)(sizeof(arr) / sizeof((arr)[0]))}

/* A captured attribute. type GWR_ATTR_UNDEFINED: the slot is unbound. The
 * values of INT, FLOAT, STRING (s, len; not NUL-terminated), INTS and
 * FLOATS (ints or floats, n) are filled; other types only name theirs.
 * Pointers point into the layer (or the table, for a default). */
typedef struct gwr_match_attr {
    gwr_attr_type type;
    int is_default;       /* the attribute was absent: the table's default */
    int64_t i;
    double f;
    const char *s;
    size_t len;
    const int64_t *ints;
    const float *floats;
    int64_t n;
} gwr_match_attr;

/* dims equality (v2): dim da of capture a equals dim db of capture b (a
 * negative dim counts from the back); both known, or the same symbol.
 * MatMul's x [.., K] against w [K, N]: GWR_M_DIMS_EQ(X, -1, W, 0). */
typedef struct gwr_mdims {
    int on, a, da, b, db;
} gwr_mdims;
#define GWR_M_DIMS_EQ(a_, da_, b_, db_) {.on = 1, .a = (a_), .da = (da_), .b = (b_), .db = (db_)}

/* ---- tables and matches ---------------------------------------------------- */

typedef struct gwr_match gwr_match;

/* One node. op: "Add" (default domain) or "domain::Op" ("gwr::GPTAttention");
 * NULL with op_id GWR_OP_CUSTOM: any op. op_id (when not GWR_OP_CUSTOM) is
 * compared instead of op and is the faster test. in: the inputs in order,
 * ended by the first GWR_MREF_END entry (trailing optional references may
 * be missing on the layer). pred (may be NULL) runs once the whole table
 * has matched structurally, in table order: 1 keeps the match, 0 refuses.
 *
 * v2 fields (all optional):
 * - ops: alternatives, a NULL-terminated list of op names (as `op`; set
 *   ops OR op/op_id): {.ops = (const char *const[]){"Relu", "Sigmoid", NULL}, .in = {GWR_M_CAP(X)}}.
 *   Two operands of a node whose ops include a commutative one are tried
 *   in both orders; the swapped order holds only for a commutative layer.
 * - dims_eq: dims equalities between captures, checked after the
 *   structure (with the predicates).
 * The pattern-wide fields go on the ROOT (the last node; gwr_match_check
 * refuses them elsewhere):
 * - where: a predicate over the whole match, run after every node's pred:
 *   {.op = "Div", .in = {...}, .where = same_dtype_as_root}.
 * - targets, min_opset, opset_targets: the rule driver's gate (see
 *   gwr_match_drive), checked before matching. */
typedef struct gwr_match_node {
    const char *op;
    gwr_mref in[GWR_MATCH_MAX_INPUTS];
    gwr_mattr attrs[GWR_MATCH_MAX_ATTRS];
    int (*pred)(const gwr_match *m, int node, void *user);
    gwr_op_id op_id;
    const char *const *ops;
    gwr_mdims dims_eq[GWR_MATCH_MAX_DIMS_EQ];
    int (*where)(const gwr_match *m, void *user);
    int64_t targets;       /* root: the manager arg "target" must have a bit of this mask (0: any target) */
    int64_t min_opset;     /* root: the network's default-domain opset must be >= this (0: any) ... */
    int64_t opset_targets; /* root: ... for these targets (0: every target); no opset import passes */
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
    gwr_layer *layers[GWR_MATCH_MAX_NODES];   /* NULL: a node of an alternative not taken */
    gwr_tensor *captures[GWR_MATCH_MAX_CAPTURES];
    gwr_match_attr attrs[GWR_MATCH_MAX_ATTR_SLOTS]; /* attribute captures (v2) */
    int nrest[GWR_MATCH_MAX_NODES];          /* REST: further input positions of node i */
    int nlayers;
    const char *why;     /* static text of the failure, or NULL */
    int why_node;        /* table node where it failed, or -1 */
    int why_input;       /* input slot, or -1 */
    const gwr_tensor *why_tensor; /* the tensor in question, or NULL */
};

/* Checks a pattern's table: node count, ops (op or ops, not both; no empty
 * names), references to earlier nodes only (EITHER: 2..GWR_MATCH_MAX_ALTS
 * distinct earlier nodes), capture slots in range, REST last with min >= 0,
 * SPLAT tolerances >= 0, rank ranges, every node reachable from the root,
 * attribute constraints named (capture slots in range, defaults of a
 * capturable kind), dims equalities over capture slots, where and the gate
 * on the root only, at most GWR_MATCH_MAX_COMBOS choice combinations.
 * GWR_ERR_INVALID_ARG with a message naming the pattern, node and input in
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

/* ---- the rule driver (v2) ---------------------------------------------------
 *
 * gwr_match_drive is a match_and_rewrite whose rewriter's user is a
 * gwr_match_pattern. For layer l it: checks the root's gate (the manager
 * arg "target", GWR_TARGET_* of gwr/passes.h, 1 = onnx when absent, must
 * have a bit of `targets`; the default-domain opset of l's outermost
 * network must be >= min_opset for the targets in opset_targets), then
 * matches (the single-reader and not-a-network-output rule included), and
 * gives the failure reason to the trace (gwr_rewrite_no_match), else calls
 * p->rewrite. A table-based pass is then:
 *
 *   static int to_gelu(gwr_rewrite_ctx *c, const gwr_match *m) {   // only the arithmetic
 *       return gwr_match_finish(c, m, gwr_gelu(gwr_rewrite_ctx_network(c), m->captures[X]));
 *   }
 *   static const gwr_match_pattern gelu = {"fuse_gelu", GWR_M_NODES(gelu_nodes), to_gelu, NULL};
 *   static const char *const roots[] = {"Mul", NULL};
 *   const gwr_pattern_rewriter gwr_pattern_fuse_gelu = GWR_MATCH_PASS("fuse_gelu", roots, &gelu);
 */
GWR_API int gwr_match_drive(gwr_rewrite_ctx *c, gwr_layer *l);
#define GWR_MATCH_PASS(nm, roots, pat) {.name = (nm), .root_ops = (roots), .match_and_rewrite = gwr_match_drive, .user = (void *)(pat)}
/* The gate of p's root for layer l under ctx c (the driver's first step):
 * 1 when it passes, else 0 with why not in why (size bytes). */
GWR_API int gwr_match_gate(const gwr_match_pattern *p, gwr_rewrite_ctx *c, const gwr_layer *l, char *why, size_t size);
/* The manager arg "target" (GWR_TARGET_*), 1 (onnx) when absent. */
GWR_API int64_t gwr_match_target(gwr_rewrite_ctx *c);
/* The default-domain opset of l's outermost network; -1 when it imports none. */
GWR_API int64_t gwr_match_opset(const gwr_layer *l);
/* Ends a rewrite: y NULL -> the network's error (gwr_rewrite_fail); y not
 * of the root output's dtype and shape -> no match; else every reader of
 * the root's (single) output reads y, the matched layers are removed
 * (gwr_match_replace) and 1 is returned. y NULL fails with GWR_ERR_SHAPE. */
GWR_API int gwr_match_finish(gwr_rewrite_ctx *c, const gwr_match *m, gwr_tensor *y);

/* ---- helpers patterns share --------------------------------------------------- */

/* Is l a live layer of op `op` ("Add", or "domain::Op")? */
GWR_API int gwr_match_is_op(const gwr_layer *l, const char *op);
/* The only live reader of t when t has exactly one and is not a network
 * output; else NULL. Stops at the second live reader (a chain asking this
 * of each link stays linear). */
GWR_API gwr_layer *gwr_match_sole_reader(const gwr_tensor *t);
/* x is of a real float dtype (gwr_match_dtype_real_float), y has x's dtype,
 * and both have the same known rank and the same dims. */
GWR_API int gwr_match_same_type(const gwr_tensor *x, const gwr_tensor *y);

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
