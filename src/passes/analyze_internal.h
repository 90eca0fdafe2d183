/* analyze_internal.h - what analyze.c and analyze_write.c share: the
 * report's layout and the dims resolver. Not part of the public API. */
#ifndef GWR_ANALYZE_INTERNAL_H
#define GWR_ANALYZE_INTERNAL_H

#include "gwr/analyze.h"
#include "util/util.h"

/* A name of the dims list. */
typedef struct an_binding {
    char *name;
    int64_t value;
    int used;
} an_binding;

/* Resolves dims: bindings, the symbols looked up (cached by symbol
 * number), the ones assumed 1, the tensors read with unknown dims. */
typedef struct an_dims {
    gwr_network *net;
    an_binding *bind;
    int64_t nbind;
    gwr_strmap index;        /* name -> binding */
    int64_t *sym;            /* by GWR_DIM_SYM_BASE - dim: value, SYM_ASSUMED or SYM_UNSET */
    int64_t nsym, symcap;
    char **assumed;          /* copies of the names */
    int64_t nassumed, assumed_cap;
    gwr_ptrmap unknown;      /* tensors read with an unknown dim or rank */
    int nomem;
} an_dims;

struct gwr_analysis {
    gwr_network *net;
    gwr_op_count *ops;
    int64_t nops;
    gwr_param_stats params;
    gwr_layer_cost *cost;
    int64_t ncost;
    gwr_layer_cost *body_cost; /* layers of If/Loop/Scan bodies */
    int64_t nbody;
    gwr_cost_totals totals;
    gwr_tensor_lifetime *life;
    int64_t nlife;
    gwr_memory_stats mem;
    an_dims dims;
    char errmsg[GWR_ERRMSG_MAX];
};

int64_t an_add(int64_t a, int64_t b);
int64_t an_mul(int64_t a, int64_t b);
int an_cmp_str(const void *a, const void *b);
/* Does gwr_analyze_network count the FLOPs of layers of this op? */
int an_op_has_cost_rule(gwr_op_id id);

/* Checks dims (every entry an INT >= 0) and copies it. */
gwr_status an_dims_init(an_dims *D, gwr_network *net, const gwr_args *dims, char *errbuf);
void an_dims_free(an_dims *D);
/* The binding of name (marked used), or NULL. */
an_binding *an_dims_binding(an_dims *D, const char *name);
/* Dim i of t (negative from the back), elements, bytes: resolved, with
 * *known cleared when something was unknown or unbound. */
int64_t an_dim(an_dims *D, const gwr_tensor *t, int i, int *known);
int64_t an_numel(an_dims *D, const gwr_tensor *t, int *known);
int64_t an_bytes(an_dims *D, const gwr_tensor *t, int *known);

/* Lifetimes of the non-constant tensors in `order` (n live layers of net)
 * and the peak; *out (malloc'd; may be NULL: not wanted). Message in
 * errbuf. */
gwr_status an_lifetimes(gwr_network *net, gwr_layer *const *order, int64_t n, an_dims *D, char *errbuf,
                        gwr_tensor_lifetime **out, int64_t *nout, int64_t *peak, int64_t *at);
/* The same inside `depth` bodies. The peak counts, at a layer with If/
 * Loop/Scan bodies, the worst body's own peak on top of what is live. */
gwr_status an_lifetimes_at(gwr_network *net, gwr_layer *const *order, int64_t n, an_dims *D, char *errbuf,
                           gwr_tensor_lifetime **out, int64_t *nout, int64_t *peak, int64_t *at, int depth);

#endif
