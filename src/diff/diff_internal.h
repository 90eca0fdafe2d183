/* diff_internal.h - private to src/diff: the result of gwr_diff_networks,
 * which diff.c fills and diff_write.c prints. Provenance records are read
 * by the IR's reader (gwr_ir_provenance_read, src/ir/provenance.c). */
#ifndef GWR_DIFF_INTERNAL_H
#define GWR_DIFF_INTERNAL_H

#include "gwr/diff.h"
#include "ir/ir_api.h"

/* A layer of b made by a rewrite (its "gwr.provenance"): the rule and the
 * layers of a its tree names. */
typedef struct gwr_df_prov {
    int64_t b;          /* the layer of b */
    const char *rule;   /* in the arena */
    int64_t *from;      /* indices in a, in the tree's order (malloc'd) */
    int64_t nfrom;
} gwr_df_prov;

/* A change of the interface: a graph input or output added, removed,
 * retyped, moved, or (inputs) its default value changed. */
typedef struct gwr_df_io {
    int output;          /* 0: input, 1: output */
    const char *name;    /* in a or b */
    const char *change;  /* "added", "removed", "retyped", "moved", "default" */
    const char *ta, *tb; /* type texts (arena), NULL where absent */
    int64_t pa, pb;      /* positions, -1 where absent */
} gwr_df_io;

/* A weight (Constant layer) that is not SAME: ia/ib its layers (-1 where
 * absent), why the reason, max_abs the largest difference of the values
 * (values compared only), nbad how many elements are beyond tolerance. */
typedef struct gwr_df_weight {
    int64_t ia, ib;
    const char *why;
    double max_abs;
    int64_t nbad;
} gwr_df_weight;

struct gwr_diff {
    const gwr_network *a, *b;
    gwr_diff_options o;
    int64_t na, nb;
    unsigned char *kind_a, *kind_b;
    int64_t *match_a, *match_b;
    const char **why_a, **why_b; /* "" or arena strings */
    int64_t *prov_b;             /* per b layer: index in prov, or -1 */
    int64_t *prov_a;             /* per a layer: index in prov that removed it, or -1 */
    gwr_df_prov *prov;
    int64_t nprov, prov_cap;
    gwr_df_io *io;
    int64_t nio, io_cap;
    gwr_df_weight *w;
    int64_t nw, w_cap;
    int64_t counts[4];           /* by gwr_diff_kind, layers other than weights */
    gwr_arena arena;
};

/* Is l a weight (a Constant layer)? */
static inline int gwr_df_is_weight(const gwr_layer *l) { return l->op_id == GWR_OP_Constant; }


#endif
