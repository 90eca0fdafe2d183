/* rewrite_internal.h - the pattern table shared by the two managers: each
 * pattern's copy, the priority order, and the dispatch index (layer class
 * and op -> the patterns to offer, best first). Private to src/rewrite
 * (rooms above include rewrite_api.h). */
#ifndef GWR_REWRITE_INTERNAL_H
#define GWR_REWRITE_INTERNAL_H

#include "gwr/rewrite.h"
#include "ir/ir_api.h"
#include "rewrite/rewrite_api.h"
#include "util/util.h"

/* Phases a manager's patterns may be in (rw_manager_set_phase): 0 to 7. */
#define RW_MAX_PHASES 8

/* One pattern kept by a manager. */
typedef struct rw_pattern {
    char *label, *name;
    int benefit;
    int phase;                    /* rw_manager_set_phase; 0 by default */
    int64_t order;                /* insertion number: ties keep it */
    int index;                    /* position in priority order */
    uint64_t classes;
    int any;                      /* no root class and no root op */
    int nops;
    char **ops;                   /* NULL-terminated copies of root_ops, as given */
    char **op_domain, **op_name;  /* parsed root ops */
    gwr_op_id *op_id;             /* GWR_OP_CUSTOM for ops the table lacks */
    gwr_pattern_rewriter rw;      /* the caller's struct, strings pointing at our copies */
    gwr_pattern_analyzer an;
    gwr_pattern_stats stats;
} rw_pattern;

/* Where each phase starts in a dispatch list (the lists go phase by phase,
 * each in priority order), and the phases it has (bit per phase). */
typedef struct rw_list_index {
    int32_t start[RW_MAX_PHASES];
    uint8_t phases;
} rw_list_index;

typedef struct rw_table {
    rw_pattern **v;               /* priority order: benefit descending, then insertion */
    int64_t n, cap;
    int64_t next_order;
    int frozen;
    rw_pattern **class_lists[GWR_LAYER_TYPE_COUNT]; /* NULL-terminated */
    rw_pattern ***op_lists;       /* by op id; NULL where no pattern names the op */
    rw_list_index class_index[GWR_LAYER_TYPE_COUNT]; /* of class_lists */
    rw_list_index *op_index;      /* of op_lists, by op id */
    gwr_ptrmap custom;            /* custom op info -> list, filled lazily per run */
    int has_custom_ops;
} rw_table;

/* Adds a pattern record (strings copied); the caller fills rw or an.
 * GWR_ERR_DUPLICATE, GWR_ERR_INVALID_ARG (message in errbuf). */
gwr_status rw_table_add(rw_table *t, char *errbuf, const char *what, const char *label, const char *name,
                        uint64_t classes, const char *const *root_ops, int benefit, rw_pattern **out);
rw_pattern *rw_table_find(const rw_table *t, const char *label);
/* Pattern i in priority order, or NULL out of range (t may be NULL). */
rw_pattern *rw_table_at(const rw_table *t, int i);
/* Zeroes every pattern's statistics (a run starts). */
void rw_table_reset_stats(rw_table *t);
/* The pattern's own copy of its root ops, for the struct get() returns. */
static inline const char *const *rw_pattern_ops(const rw_pattern *p) {
    return p->nops ? (const char *const *)p->ops : NULL;
}
/* Builds the dispatch index; GWR_ERR_NOMEM. */
gwr_status rw_table_freeze(rw_table *t, char *errbuf);
/* Drops the index (the custom-op cache refers to a network's op infos). */
void rw_table_thaw(rw_table *t);
void rw_table_free(rw_table *t);
/* Patterns of custom-op layer l (filled lazily); NULL on allocation failure. */
rw_pattern *const *rw_custom_candidates(rw_table *t, const gwr_layer *l);

/* The patterns to offer layer l, best first, NULL-terminated; NULL only
 * on allocation failure. */
static inline rw_pattern *const *rw_candidates(rw_table *t, const gwr_layer *l) {
    if (l->op_id != GWR_OP_CUSTOM) {
        rw_pattern **o = t->op_lists ? t->op_lists[l->op_id] : NULL;
        return o ? o : t->class_lists[l->type];
    }
    return t->has_custom_ops ? rw_custom_candidates(t, l) : t->class_lists[l->type];
}

static inline const rw_list_index *rw_candidate_index(const rw_table *t, const gwr_layer *l) {
    return t->op_lists && t->op_lists[l->op_id] ? &t->op_index[l->op_id] : &t->class_index[l->type];
}

/* The phases (bit per phase) of the patterns rw_candidates gives layer l;
 * every bit for a custom op (its list is made when first asked for). */
static inline unsigned rw_candidate_phases(const rw_table *t, const gwr_layer *l) {
    return l->op_id == GWR_OP_CUSTOM ? 0xff : rw_candidate_index(t, l)->phases;
}

/* rw_candidates from the first pattern of phase ph on (a custom op's list
 * whole). */
static inline rw_pattern *const *rw_phase_candidates(rw_table *t, const gwr_layer *l, int ph) {
    rw_pattern *const *c = rw_candidates(t, l);
    return c && l->op_id != GWR_OP_CUSTOM ? c + rw_candidate_index(t, l)->start[ph] : c;
}

/* What callbacks see (gwr_rewrite_ctx). */
struct gwr_rewrite_ctx {
    gwr_network *net;
    const gwr_args *args;
    rw_pattern *cur;
    gwr_layer *root;
    int want_reason;
    char reason[256];
    int failed;
    gwr_status fail_status;
    char fail_msg[GWR_ERRMSG_MAX];
    int analyzing;
    gwr_layer **match;
    int64_t nmatch, match_cap;
};

/* Resets the per-attempt fields of c. */
static inline void rw_ctx_begin(gwr_rewrite_ctx *c, rw_pattern *p, gwr_layer *l) {
    c->cur = p;
    c->root = l;
    c->reason[0] = 0;
    c->failed = 0;
    c->nmatch = 0;
    /* A callback that fails without gwr_rewrite_fail is reported with the
     * network's message: make sure it is its own, not an older one. */
    gwr_ir_clear_error(c->net);
}

/* The message and status of a failed callback: what it gave
 * gwr_rewrite_fail, else the status it returned (0 for a bare negative
 * int: GWR_ERR_STATE) and the network's message. */
const char *rw_ctx_failure(const gwr_rewrite_ctx *c, gwr_status returned, gwr_status *status);


#endif
