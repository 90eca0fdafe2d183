/* instance.h - random instances of a match table (gwr/match.h): a small
 * network whose root layer the table matches, for `gwr rules check` and
 * `gwr rules lint` (check.c, lint.c) and for checking the hand-written C
 * tables of src/passes the same way.
 *
 * From a table, every capture becomes a network input (CAP) or a constant
 * (CONST, SPLAT), of dtypes and shapes drawn to fit the ops reading them;
 * every node becomes a layer (attribute constraints set, required
 * attributes given a value); the root's outputs are the network's outputs.
 * Shapes are drawn by a few strategies (every operand one shape; scalar
 * constants; per-channel constants [C,1,1]; last-dim constants [D]; rank-2
 * square), tried in turn with fresh random extents until shape inference
 * accepts every layer and gwr_match_layer matches the root. A seed makes
 * the whole draw reproducible. */
#ifndef GWR_RULES_INSTANCE_H
#define GWR_RULES_INSTANCE_H

#include <stdio.h>

#include "gwr/match.h"

/* What a rule knows of a capture slot beyond the table (all zero: nothing). */
typedef struct gwr_rules_slot_hint {
    const char *name;      /* the rule's name for it ("x"), for inputs and messages; NULL: "x<slot>"/"c<slot>" */
    gwr_dtype dtype;       /* GWR_UNDEFINED: float32 */
    int ranked;            /* rank_min..rank_max holds */
    int rank_min, rank_max;
    int nshape;            /* > 0: the rank, with dims[i] >= 0 a fixed extent (-1: drawn) */
    int64_t dims[GWR_MAX_RANK];
    int positive;          /* constant values drawn > 0 */
    int has_value;         /* a constant within tol of value (SPLAT-like CONST: `c ~ V tol T`) */
    double value, tol;
} gwr_rules_slot_hint;

/* An attribute a rule captures (`Transpose<perm=p>`): the instance gives
 * table node `node` a drawn value of it (perm: a permutation of the
 * input's rank; axis, axes: an axis of it; epsilon, alpha, beta, ...: a
 * small positive float; a string attribute (approximate, mode, ...) its
 * ONNX default; other names: the int 1), or the value the rule asks for. */
typedef struct gwr_rules_attr_draw {
    int node;
    const char *name;
    /* The value the rule asks for (its where clause: `a == "none"`,
     * `abs(a - 1.0 / 6.0) <= T`; else its default), given as is: 1 a
     * number (an int when is_int), 2 the string str; 0: drawn. */
    int kind;
    int is_int;
    double num;
    const char *str;
} gwr_rules_attr_draw;

typedef struct gwr_rules_instance_options {
    int max_tries;                    /* 0: 60 */
    int64_t opset;                    /* default-domain opset imported; 0: none imported */
    const gwr_rules_slot_hint *hints; /* GWR_MATCH_MAX_CAPTURES entries, or NULL */
    /* Constants of SPLAT references drawn within their tolerance rather
     * than exactly (the check's odd instances). */
    int perturb;
    gwr_dtype dtype;                  /* captures of no dtype the ops or hints fix; GWR_UNDEFINED: float32 */
    const gwr_rules_attr_draw *attrs; /* nattrs entries */
    int nattrs;
    /* An Identity after each output of the root, the network's outputs
     * instead of the root's (a rule that keeps a network output's name
     * refuses a root that makes one). */
    int tail;
} gwr_rules_instance_options;

typedef struct gwr_rules_instance {
    gwr_network *net;   /* owned: inputs, constants, one layer per table node */
    gwr_layer *root;    /* the layer of the table's root */
    gwr_match match;    /* the table's match at root */
    int strategy;       /* the shape strategy that worked (gwr_rules_instance_strategy_name) */
    int tries;          /* draws it took */
} gwr_rules_instance;

/* Builds an instance of p from seed. GWR_OK and *out filled; otherwise
 * GWR_ERR_NOT_FOUND with the last draw's reason in gwr_last_errmsg()
 * ("pattern 'x': no instance in 60 draws; last: node 2 (Mul): ..."), or
 * GWR_ERR_INVALID_ARG for a malformed table. */
gwr_status gwr_rules_instance_new(const gwr_match_pattern *p, uint64_t seed, const gwr_rules_instance_options *o,
                                  gwr_rules_instance *out);
void gwr_rules_instance_free(gwr_rules_instance *inst);
const char *gwr_rules_instance_strategy_name(int strategy);

/* Prints the instance's live layers, one a line, with every input's and
 * output's type: "  Mul_2 = Mul(x: float32[2,3], c0: float32[] const) -> float32[2,3]". */
void gwr_rules_instance_print(gwr_network *net, FILE *out, const char *indent);

/* The dtype an instance gives a capture allowed the dtypes in mask
 * (GWR_M_DT bits): GWR_UNDEFINED (float32, the default) when float32 is
 * allowed or mask is 0, else the first real float, else the lowest. */
gwr_dtype gwr_rules_pick_dtype(uint64_t mask);

/* The xorshift64* step the draws use (state nonzero). */
uint64_t gwr_rules_rand(uint64_t *state);

#endif
