/* rules_internal.h - the rules room's own structures: the AST of a .rules
 * file, a rule, its compiled match tables and the evaluation of its
 * expressions. Private to src/rules (the helpers check, lint and the
 * FunctionProto front end of this room build on it). */
#ifndef GWR_RULES_INTERNAL_H
#define GWR_RULES_INTERNAL_H

#include <stdint.h>

#include "gwr/rules.h"
#include "rules/rules_api.h"
#include "util/util.h"

/* ---- memory: everything of one rule set lives in one arena ------------------ */

typedef struct rl_arena {
    struct rl_block *head;
    size_t chunk;      /* bytes of a block (0: 8 KiB); an evaluation's arena takes small ones */
} rl_arena;
#define RL_EVAL_CHUNK 960 /* a block in malloc's per-thread cache */
void *rl_alloc(rl_arena *a, size_t n);          /* zeroed; NULL when out of memory */
char *rl_strndup(rl_arena *a, const char *s, size_t n);
void rl_arena_free(rl_arena *a);

/* ---- the AST ------------------------------------------------------------------ */

typedef enum rl_kind {
    RL_NUM,   /* num (is_float: written with '.' or an exponent) */
    RL_STR,   /* s */
    RL_NAME,  /* s; in a pattern with its constraints */
    RL_ANY,   /* _ */
    RL_NONE,  /* none: an absent input */
    RL_LIST,  /* [a...] */
    RL_OP,    /* ops[0..nops) (alternatives), a = inputs, attrs, out, node */
    RL_CALL,  /* s(a...) : compose, rank, sqrt, ... */
    RL_BIN,   /* a[0] binop a[1] */
    RL_NOT,   /* not a[0] */
    RL_NEG,   /* -a[0] */
    RL_INDEX, /* a[0][a[1]] */
    RL_FIELD, /* a[0].s : n.attr */
    RL_ALT    /* a[0] | a[1] | ... (pattern alternatives) */
} rl_kind;

typedef enum rl_binop {
    RL_OR, RL_AND, RL_EQ, RL_NE, RL_LT, RL_LE, RL_GT, RL_GE, RL_ADD, RL_SUB, RL_MUL, RL_DIV
} rl_binop;

typedef struct rl_expr rl_expr;

typedef struct rl_attr {
    const char *name;
    rl_expr *val;   /* NULL with absent: `attr=!` */
    rl_expr *def;   /* `attr=name default LIT`, or NULL */
    int absent;
    int line, col;
} rl_attr;

struct rl_expr {
    rl_kind kind;
    int line, col;
    double num;
    int is_float;
    const char *s;
    const char **ops;   /* RL_OP: "Op" or "domain::Op" */
    int nops;
    rl_expr **a;
    int na;
    rl_attr *attrs;     /* RL_OP */
    int nattrs;
    const char *copy;   /* RL_OP `<...n>`: copy n's attributes */
    int out;            /* RL_OP `[k]`: output k (default 0) */
    const char *node;   /* RL_OP `n@Op`: the node's name */
    int optional;       /* `x?` */
    int rest;           /* `xs...` */
    rl_binop op;        /* RL_BIN */
    /* RL_NAME constraints in a pattern */
    int has_tilde;      /* `c ~ V tol T` */
    double tilde_v, tilde_tol;
    int is_const;       /* `: const` (or a tilde) */
    uint32_t dtypes;    /* bit d: dtype d allowed (0: any) */
    int rank_lo, rank_hi; /* -1: no rank constraint */
    rl_expr **shape;    /* `shape [N, _, 3]`: RL_NAME, RL_ANY or RL_NUM */
    int nshape;         /* -1: no shape constraint */
    int alt;            /* pattern choice point (RL_ALT, RL_OP with nops > 1): its index */
};

/* ---- a compiled table: one concrete choice among the rule's alternatives ------ */

typedef enum rl_bind_kind {
    RL_B_TENSOR, /* capture slot */
    RL_B_ATTR,   /* attribute `attr` of table node `node` (def: default or NULL) */
    RL_B_NODE,   /* table node `node` (n@Op) */
    RL_B_DIM,    /* dim `pos` of the tensor in capture `slot` */
    RL_B_REST    /* inputs `pos`.. of table node `node` (xs...) */
} rl_bind_kind;

typedef struct rl_bind {
    const char *name;
    rl_bind_kind kind;
    int slot, node, pos;
    const char *attr;
    const rl_expr *def;
    const rl_expr *decl;  /* the RL_NAME carrying constraints, or NULL */
} rl_bind;

#define RL_MAX_BINDS 48
#define RL_PRE_OPS 8

typedef struct gwr_rl_rule gwr_rl_rule;

typedef struct gwr_rl_table {
    gwr_match_pattern pat;           /* pat.user is this table */
    gwr_match_node nodes[GWR_MATCH_MAX_NODES];
    const rl_expr *node_expr[GWR_MATCH_MAX_NODES];
    int64_t *ints;                   /* storage of INTS attribute constraints */
    rl_bind binds[RL_MAX_BINDS];
    int nbinds;
    /* the constrained name occurrences: `c ~ V tol T`, `x: f32 rank 2`, ... */
    struct { int slot; const rl_expr *x; } cons[RL_MAX_BINDS];
    int ncons;
    gwr_rl_rule *rule;
    /* The prefilter (rules.c), derived from the table: node i's op ids
     * (pre_nops[i] 0: any op), and whether the root reads a constant. */
    gwr_op_id pre_ops[GWR_MATCH_MAX_NODES][RL_PRE_OPS];
    int pre_nops[GWR_MATCH_MAX_NODES];
} gwr_rl_table;

typedef enum rl_phase { RL_PHASE_NONE = 0, RL_PHASE_CLEANUP, RL_PHASE_FOLD, RL_PHASE_FUSE, RL_PHASE_LOWER } rl_phase;

struct gwr_rl_rule {
    const char *name;
    int line, col;     /* of `rule` */
    int name_line, name_col;
    int benefit;
    rl_phase phase;
    unsigned targets;  /* GWR_TARGET_* mask; 0: any */
    int opset;         /* 0: any */
    double tol;
    rl_expr *pattern, *repl;
    rl_expr **where;
    int nwhere;
    gwr_rl_table *tables;
    int ntables;
    const char *root_ops[GWR_MATCH_MAX_NODES + 1]; /* NULL-terminated, distinct */
    /* Run-time dispatch (rules.c): the root op ids (nroot_ids -1: any
     * layer), and the newest default-domain op of the replacement. */
    gwr_op_id root_ids[GWR_MATCH_MAX_NODES + 1];
    int nroot_ids;
    int repl_since;
    const char *repl_since_op;
    const gwr_rules *set;
};

struct gwr_rules {
    rl_arena arena;
    const char *text;
    const char *filename;
    gwr_rl_rule *rules;
    int nrules;
    int *order;        /* rule indices by benefit, higher first (stable) */
};

/* ---- the front end (parse.c) --------------------------------------------------- */

/* A load-time refusal: position and message; formatted with the source
 * line and a caret by rl_error_finish. */
typedef struct rl_error {
    int line, col;
    char msg[256];
} rl_error;

gwr_status rl_fail(rl_error *e, int line, int col, const char *fmt, ...) GWR_PRINTF(4, 5);
/* Sets gwr_last_errmsg to "file:line:col: msg\n<line>\n<caret>". */
gwr_status rl_error_finish(const rl_error *e, const char *text, const char *filename);

/* Parses every rule of set->text into set->rules (no checks beyond syntax). */
gwr_status rl_parse(gwr_rules *set, rl_error *e);
/* Adds the dtypes a constraint word names (f32, float, i64, int, bool,
 * float32, ...) to *bits: 1, or 0 for no dtype name. */
int rl_dtype_name_bits(const char *w, uint32_t *bits);

/* Parses, compiles and checks text into a new set (set.c; the body of
 * gwr_rules_parse). `after`, when given, runs once rl_parse is done, with
 * its status and refusal: it may move the positions of the tree and of
 * the refusal and replace set->text (the text messages quote), and
 * returns the status to go on with. */
typedef gwr_status (*rl_after_parse)(gwr_rules *set, gwr_status parsed, rl_error *e, void *user);
gwr_status rl_parse_set(const char *text, const char *filename, rl_after_parse after, void *user,
                        gwr_rules **out);

/* ---- checks and compilation (compile.c) ------------------------------------------ */

/* Checks and compiles every rule into its tables; rules.c then sets each
 * table's root predicate and rewrite (eval.c, build.c) and runs the
 * instance hook. */
gwr_status rl_compile(gwr_rules *set, rl_error *e);
/* The binding of name in table t, or NULL (eval.c). */
const rl_bind *rl_find_bind(const gwr_rl_table *t, const char *name);

/* Instance-based checks of one rule at load time (helper `check` fills
 * this in, in src/rules/hook.c): GWR_OK, or a refusal written to
 * e (its line and col at the rule part at fault). */
gwr_status rl_check_instance(const gwr_rules *set, int rule, rl_error *e);

/* ---- evaluation (eval.c) --------------------------------------------------------- */

typedef enum rl_vkind { RL_V_ARR, RL_V_STR, RL_V_TENSOR, RL_V_DTYPE } rl_vkind;

#define RL_MAX_RANK 16

/* A value of an expression: numbers are arrays of doubles (a scalar has
 * rank 0, a list rank 1); dtype GWR_UNDEFINED for literals. */
typedef struct rl_val {
    rl_vkind kind;
    gwr_dtype dtype;
    int is_float;
    int rank;
    int64_t dims[RL_MAX_RANK];
    int64_t n;
    double *d;          /* arena-owned */
    const char *s;      /* STR */
    size_t slen;
    gwr_tensor *t;      /* TENSOR */
} rl_val;

/* What an evaluation can see: a successful match of table t. */
typedef struct rl_env {
    const gwr_rl_table *t;
    const gwr_match *m;
    rl_arena tmp;       /* values of this evaluation */
    char *why;          /* refusal reason buffer */
    size_t why_size;
} rl_env;

/* 1 and *out, or 0 with env->why set (an unknown value, a non-constant in
 * arithmetic, ...), -1 out of memory. */
int rl_eval(rl_env *env, const rl_expr *x, rl_val *out);
/* A tensor-valued name read as its constant values (1), or 0. */
int rl_val_numeric(rl_env *env, rl_val *v);
/* Truth of a value: a non-zero scalar. */
int rl_truth(const rl_val *v);
/* The pattern's checks a table cannot express: tolerances, attribute
 * captures, constraints and where clauses. 1 holds, 0 refuses (env->why). */
int rl_check_match(rl_env *env);

/* ---- the replacement (build.c) ---------------------------------------------------- */

/* The rewrite callback of every compiled table. */
int rl_rewrite(gwr_rewrite_ctx *c, const gwr_match *m);
/* This thread's buffer for the reason a predicate or a replacement
 * refused (rule sets are shared: the built-in ones by every manager of
 * the process, so nothing of a match is written into the rules). */
#define RL_WHY_SIZE 256
char *rl_why_buf(void);
/* This thread's flag: set while a run nobody explains tries a rule, so its
 * predicates format no refusal text (the rule sets are shared). */
int *rl_quiet(void);

#endif
