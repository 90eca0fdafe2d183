/* analyze.c - the built-in analyses (gwr/analyze.h): each is a
 * PatternAnalyzer run by one gwr_analysis_manager, as a user would write
 * it. "cost.bytes" (highest benefit) opens a cost record for every layer;
 * the FLOPs analyzers of each family, offered the layer afterwards, fill
 * in its FLOPs. Lifetimes and the peak memory are a plain walk over a
 * layer order. The writer is in analyze_write.c. */
#include <stdlib.h>
#include <string.h>

#include "gwr/analyze.h"
#include "ir/ir_api.h"
#include "passes/analyze_internal.h"

/* ---- saturating arithmetic (every count is >= 0) ----------------------------- */

int64_t an_add(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

int64_t an_mul(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

/* ---- dims -------------------------------------------------------------------- */

#define SYM_UNSET INT64_MIN
#define SYM_ASSUMED (-1)

gwr_status an_dims_init(an_dims *D, gwr_network *net, const gwr_args *dims, char *errbuf) {
    memset(D, 0, sizeof *D);
    D->net = net;
    int n = dims ? gwr_args_count(dims) : 0;
    if (n <= 0) return GWR_OK;
    D->bind = gwr_calloc((size_t)n, sizeof *D->bind);
    if (!D->bind) return gwr_fmt_error(errbuf, GWR_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        const char *name = gwr_args_name(dims, i);
        int64_t v = 0;
        if (gwr_args_type(dims, i) != GWR_ARG_INT)
            return gwr_fmt_error(errbuf, GWR_ERR_TYPE, "dims: '%s' must be an int, not %s", name,
                                 gwr_arg_type_name(gwr_args_type(dims, i)));
        gwr_args_get_int(dims, name, &v);
        if (v < 0)
            return gwr_fmt_error(errbuf, GWR_ERR_TYPE, "dims: '%s' must be >= 0, not %lld", name, (long long)v);
        an_binding *b = &D->bind[D->nbind];
        if (!(b->name = gwr_strdup(name))) return gwr_fmt_error(errbuf, GWR_ERR_NOMEM, "out of memory");
        b->value = v;
        D->nbind++;
        if (gwr_strmap_put(&D->index, b->name, b)) return gwr_fmt_error(errbuf, GWR_ERR_NOMEM, "out of memory");
    }
    return GWR_OK;
}

void an_dims_free(an_dims *D) {
    for (int64_t i = 0; i < D->nbind; i++) gwr_free(D->bind[i].name);
    gwr_free(D->bind);
    gwr_strmap_free(&D->index);
    gwr_free(D->sym);
    for (int64_t i = 0; i < D->nassumed; i++) gwr_free(D->assumed[i]);
    gwr_free(D->assumed);
    gwr_ptrmap_free(&D->unknown);
    memset(D, 0, sizeof *D);
}

an_binding *an_dims_binding(an_dims *D, const char *name) {
    an_binding *b = gwr_strmap_get(&D->index, name);
    if (b) b->used = 1;
    return b;
}

/* The value of one dim: known, bound, or 1 (*known cleared). */
static int64_t resolve(an_dims *D, gwr_dim d, int *known, int *unknown) {
    if (d >= 0) return d;
    if (!GWR_DIM_IS_SYM(d)) {
        *known = 0, *unknown = 1;
        return 1;
    }
    int64_t k = GWR_DIM_SYM_BASE - d;
    if (k < D->nsym && D->sym[k] != SYM_UNSET) {
        if (D->sym[k] == SYM_ASSUMED) *known = 0;
        return D->sym[k] == SYM_ASSUMED ? 1 : D->sym[k];
    }
    const char *name = gwr_network_dim_name(D->net, d);
    if (!name) { /* not a symbol of this network: as unknown */
        *known = 0, *unknown = 1;
        return 1;
    }
    if (k >= D->symcap) {
        int64_t cap = D->symcap;
        if (gwr_grow((void **)&D->sym, sizeof *D->sym, &cap, k + 1)) {
            D->nomem = 1;
            *known = 0;
            return 1;
        }
        for (int64_t i = D->symcap; i < cap; i++) D->sym[i] = SYM_UNSET;
        D->symcap = cap;
    }
    if (k >= D->nsym) D->nsym = k + 1;
    an_binding *b = an_dims_binding(D, name);
    if (b) return D->sym[k] = b->value;
    char *copy = gwr_strdup(name);
    int64_t cap = D->assumed_cap;
    if (!copy || gwr_grow((void **)&D->assumed, sizeof *D->assumed, &cap, D->nassumed + 1)) {
        gwr_free(copy);
        D->nomem = 1;
    } else {
        D->assumed_cap = cap;
        D->assumed[D->nassumed++] = copy;
    }
    D->sym[k] = SYM_ASSUMED;
    *known = 0;
    return 1;
}

static void note_unknown(an_dims *D, const gwr_tensor *t) {
    if (gwr_ptrmap_get(&D->unknown, t)) return;
    if (gwr_ptrmap_put(&D->unknown, t, (void *)1)) D->nomem = 1;
}

int64_t an_dim(an_dims *D, const gwr_tensor *t, int i, int *known) {
    int rank = t ? gwr_tensor_rank(t) : -1;
    int unknown = 0;
    if (i < 0) i += rank;
    if (rank < 0 || i < 0 || i >= rank) {
        *known = 0;
        if (t) note_unknown(D, t);
        return 1;
    }
    int64_t v = resolve(D, gwr_tensor_dims(t)[i], known, &unknown);
    if (unknown) note_unknown(D, t);
    return v;
}

int64_t an_numel(an_dims *D, const gwr_tensor *t, int *known) {
    if (!t) return 0;
    int rank = gwr_tensor_rank(t);
    if (rank < 0) {
        *known = 0;
        note_unknown(D, t);
        return 1;
    }
    const gwr_dim *dims = gwr_tensor_dims(t);
    int64_t n = 1;
    int unknown = 0;
    for (int i = 0; i < rank; i++) n = an_mul(n, resolve(D, dims[i], known, &unknown));
    if (unknown) note_unknown(D, t);
    return n;
}

int64_t an_bytes(an_dims *D, const gwr_tensor *t, int *known) {
    if (!t || gwr_tensor_kind(t) != GWR_VALUE_TENSOR) return 0;
    int64_t n = an_numel(D, t, known);
    int bits = gwr_dtype_bits(gwr_tensor_dtype(t));
    if (gwr_tensor_dtype(t) == GWR_UNDEFINED) *known = 0;
    if (bits <= 0) return 0;
    if (bits % 8 == 0) return an_mul(n, bits / 8);
    return n > INT64_MAX / 8 ? INT64_MAX : (n * bits + 7) / 8;
}

/* ---- the analyzers --------------------------------------------------------- */

typedef struct an_span {
    uintptr_t start, end;
} an_span;

typedef struct an_state {
    gwr_network *net;
    an_dims *dims;
    gwr_op_count *ops; /* one per live layer, then the histogram */
    int64_t nops, ops_cap;
    gwr_param_stats params;
    an_span *spans; /* where the weights' bytes live */
    int64_t nspans, spans_cap;
    int64_t total_bytes;
    gwr_layer_cost *cost;
    int64_t ncost, cost_cap;
    /* The graph being analyzed (the network or a body) and how many times
     * its layers count; the body records while in a body. */
    gwr_network *cur;
    int64_t times;
    gwr_layer_cost *other;
    int64_t nother, other_cap;
} an_state;

static an_state *state(gwr_rewrite_ctx *c) { return gwr_rewrite_ctx_user(c); }

/* Swaps the cost records with the bodies' (the analyzers append to
 * st->cost). */
static void swap_records(an_state *st) {
    gwr_layer_cost *p = st->cost;
    int64_t n = st->ncost, cap = st->cost_cap;
    st->cost = st->other, st->ncost = st->nother, st->cost_cap = st->other_cap;
    st->other = p, st->nother = n, st->other_cap = cap;
}

static int nomem(gwr_rewrite_ctx *c) { return gwr_rewrite_fail(c, GWR_ERR_NOMEM, "out of memory"); }

/* The histogram is of the network itself. */
static int main_only(gwr_rewrite_ctx *c, gwr_layer *l) {
    if (gwr_layer_network(l) != state(c)->net) return gwr_rewrite_no_match(c, "a layer of a subgraph");
    return 1;
}

/* Costs: of the graph being analyzed (the network, then each body). */
static int top_only(gwr_rewrite_ctx *c, gwr_layer *l) {
    if (gwr_layer_network(l) != state(c)->cur) return gwr_rewrite_no_match(c, "a layer of another graph");
    return 1;
}

static gwr_status ops_analyze(gwr_rewrite_ctx *c, gwr_layer *const *layers, int n) {
    an_state *st = state(c);
    (void)n;
    if (gwr_grow((void **)&st->ops, sizeof *st->ops, &st->ops_cap, st->nops + 1)) return (gwr_status)-nomem(c);
    st->ops[st->nops++] = (gwr_op_count){gwr_layer_domain(layers[0]), gwr_layer_op(layers[0]), 1};
    return GWR_OK;
}

/* One tensor of weights; data (may be NULL) is where its bytes live, so
 * that bytes shared by several tensors (one gwr_buffer, or views into
 * it) are counted once (params_finish). */
static void count_weights(an_state *st, int64_t elements, int64_t bytes, const void *data, int *oom) {
    st->params.tensors++;
    st->params.elements = an_add(st->params.elements, elements);
    st->total_bytes = an_add(st->total_bytes, bytes);
    if (!data || bytes <= 0) {
        st->params.bytes = an_add(st->params.bytes, bytes);
        return;
    }
    if (gwr_grow((void **)&st->spans, sizeof *st->spans, &st->spans_cap, st->nspans + 1)) {
        *oom = 1;
        return;
    }
    uintptr_t b = (uintptr_t)data;
    st->spans[st->nspans++] = (an_span){b, (uint64_t)bytes > (uint64_t)(UINTPTR_MAX - b) ? UINTPTR_MAX : b + (uintptr_t)bytes};
}

static int cmp_span(const void *a, const void *b) {
    const an_span *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return x->end > y->end ? -1 : x->end < y->end; /* the longer first */
}

/* Distinct bytes: the union of the spans. A tensor whose span overlaps
 * what came before it (in address order) shares data. */
static void params_finish(an_state *st) {
    if (st->nspans) qsort(st->spans, (size_t)st->nspans, sizeof *st->spans, cmp_span);
    uintptr_t end = 0;
    for (int64_t i = 0; i < st->nspans; i++) {
        const an_span *sp = &st->spans[i];
        if (i && sp->start < end) {
            st->params.shared_tensors++;
            if (sp->end > end) st->params.bytes = an_add(st->params.bytes, (int64_t)(sp->end - end)), end = sp->end;
        } else {
            st->params.bytes = an_add(st->params.bytes, (int64_t)(sp->end - sp->start));
            end = sp->end;
        }
    }
    st->params.shared_bytes = st->total_bytes >= st->params.bytes ? st->total_bytes - st->params.bytes : 0;
}

static void count_weights_value(an_state *st, const gwr_weights *w, int *oom) {
    int64_t n = gwr_shape_numel(w->rank, w->dims);
    count_weights(st, n < 0 ? 0 : n, w->nbytes > (size_t)INT64_MAX ? INT64_MAX : (int64_t)w->nbytes, w->data, oom);
}

static gwr_status params_analyze(gwr_rewrite_ctx *c, gwr_layer *const *layers, int n) {
    an_state *st = state(c);
    gwr_layer *l = layers[0];
    const gwr_weights *w;
    int oom = 0;
    (void)n;
    if (gwr_layer_get_tensor(l, "value", &w) == GWR_OK) {
        count_weights_value(st, w, &oom);
    } else {
        /* value_float, value_ints, ...: the output's type says the size. */
        int known = 1;
        gwr_tensor *t = gwr_layer_output(l, 0);
        int64_t elements = t && gwr_tensor_rank(t) >= 0 ? an_numel(st->dims, t, &known) : 0;
        int64_t bytes = t ? an_bytes(st->dims, t, &known) : 0;
        count_weights(st, elements, bytes, NULL, &oom);
    }
    return oom ? (gwr_status)-nomem(c) : GWR_OK;
}

/* Opens the cost record of the layer: bytes read and written. */
static gwr_status bytes_analyze(gwr_rewrite_ctx *c, gwr_layer *const *layers, int n) {
    an_state *st = state(c);
    gwr_layer *l = layers[0];
    (void)n;
    if (gwr_grow((void **)&st->cost, sizeof *st->cost, &st->cost_cap, st->ncost + 1)) return (gwr_status)-nomem(c);
    gwr_layer_cost *r = &st->cost[st->ncost++];
    *r = (gwr_layer_cost){l, 0, 0, 0, 1, st->times};
    if (gwr_layer_type(l) == GWR_LAYER_CONSTANT) return GWR_OK;
    int nin = gwr_layer_num_inputs(l);
    for (int i = 0; i < nin; i++) {
        gwr_tensor *t = gwr_layer_input(l, i);
        int dup = 0;
        for (int j = 0; t && j < i && !dup; j++) dup = gwr_layer_input(l, j) == t;
        if (t && !dup) r->bytes_read = an_add(r->bytes_read, an_bytes(st->dims, t, &r->known));
    }
    for (int i = 0; i < gwr_layer_num_outputs(l); i++)
        r->bytes_written = an_add(r->bytes_written, an_bytes(st->dims, gwr_layer_output(l, i), &r->known));
    return st->dims->nomem ? (gwr_status)-nomem(c) : GWR_OK;
}

/* The record bytes_analyze opened for l (it has the highest benefit). */
static gwr_layer_cost *record(gwr_rewrite_ctx *c, gwr_layer *l) {
    an_state *st = state(c);
    if (!st->ncost || st->cost[st->ncost - 1].layer != l) {
        gwr_rewrite_fail(c, GWR_ERR_STATE, "no cost record: 'cost.bytes' must run before '%s'", gwr_rewrite_ctx_label(c));
        return NULL;
    }
    return &st->cost[st->ncost - 1];
}

static int64_t attr_int(gwr_layer *l, const char *name, int64_t dflt) {
    int64_t v;
    gwr_layer_attr_int(l, name, dflt, &v); /* another type: dflt */
    return v;
}

/* [.., M, K] x [.., K, N] with NumPy batch broadcasting; 1-D operands as
 * ONNX MatMul takes them. */
static int64_t matmul_flops(an_dims *D, gwr_tensor *a, gwr_tensor *b, int *known) {
    int ra = a ? gwr_tensor_rank(a) : -1, rb = b ? gwr_tensor_rank(b) : -1;
    if (ra < 1 || rb < 1) {
        *known = 0;
        return 0;
    }
    int64_t k = an_dim(D, a, ra - 1, known);
    int64_t m = ra >= 2 ? an_dim(D, a, ra - 2, known) : 1;
    int64_t nn = rb >= 2 ? an_dim(D, b, rb - 1, known) : 1;
    int64_t batch = 1;
    int ba = ra > 2 ? ra - 2 : 0, bb = rb > 2 ? rb - 2 : 0, nb = ba > bb ? ba : bb;
    for (int i = 0; i < nb; i++) {
        int64_t da = i < ba ? an_dim(D, a, ba - 1 - i, known) : 1;
        int64_t db = i < bb ? an_dim(D, b, bb - 1 - i, known) : 1;
        batch = an_mul(batch, da > db ? da : db);
    }
    return an_mul(2, an_mul(batch, an_mul(m, an_mul(nn, k))));
}

/* com.microsoft MultiHeadAttention, query (B, S, H), key (B, T, H), value
 * (B, T, Hv): QK^T (2*B*S*T*H) and PV (2*B*S*T*Hv), softmax (5 per score,
 * B*heads*S*T scores), the bias (B*(S*H + T*H + T*Hv)) and attention_bias
 * (one add per score) when present. Other forms: not known. */
static int64_t mha_flops(an_dims *D, gwr_layer *l, int *known) {
    int n = gwr_layer_num_inputs(l);
    gwr_tensor *q = n > 0 ? gwr_layer_input(l, 0) : NULL, *k = n > 1 ? gwr_layer_input(l, 1) : NULL;
    gwr_tensor *v = n > 2 ? gwr_layer_input(l, 2) : NULL;
    int64_t nh = attr_int(l, "num_heads", 0);
    if (!q || !k || !v || gwr_tensor_rank(q) != 3 || gwr_tensor_rank(k) != 3 || gwr_tensor_rank(v) != 3 || nh <= 0) {
        *known = 0;
        return 0;
    }
    int64_t b = an_dim(D, q, 0, known), s = an_dim(D, q, 1, known), h = an_dim(D, q, 2, known);
    int64_t t = an_dim(D, k, 1, known), hv = an_dim(D, v, 2, known);
    int64_t scores = an_mul(b, an_mul(nh, an_mul(s, t)));
    int64_t f = an_mul(2, an_mul(b, an_mul(s, an_mul(t, an_add(h, hv)))));
    f = an_add(f, an_mul(GWR_FLOPS_PER_SOFTMAX_ELEMENT, scores));
    if (n > 3 && gwr_layer_input(l, 3)) f = an_add(f, an_mul(b, an_add(an_mul(s, h), an_mul(t, an_add(h, hv)))));
    if (n > 5 && gwr_layer_input(l, 5)) f = an_add(f, scores);
    return f;
}

/* com.microsoft Attention, input (B, S, In), weights (In, W = 2H + Hv):
 * the projection (2*B*S*In*W, + B*S*W with a bias), then the heads as
 * MultiHeadAttention's with T = S. Other forms: not known. */
static int64_t ms_attention_flops(an_dims *D, gwr_layer *l, int *known) {
    int n = gwr_layer_num_inputs(l);
    gwr_tensor *x = n > 0 ? gwr_layer_input(l, 0) : NULL, *w = n > 1 ? gwr_layer_input(l, 1) : NULL;
    int64_t nh = attr_int(l, "num_heads", 0);
    if (!x || !w || gwr_tensor_rank(x) != 3 || gwr_tensor_rank(w) != 2 || nh <= 0) {
        *known = 0;
        return 0;
    }
    int64_t b = an_dim(D, x, 0, known), s = an_dim(D, x, 1, known), in = an_dim(D, x, 2, known);
    int64_t wd = an_dim(D, w, 1, known), h = wd / 3, hv = wd - 2 * h;
    int64_t rows = an_mul(b, s), scores = an_mul(b, an_mul(nh, an_mul(s, s)));
    int64_t f = an_mul(2, an_mul(rows, an_mul(in, wd)));
    if (n > 2 && gwr_layer_input(l, 2)) f = an_add(f, an_mul(rows, wd));
    f = an_add(f, an_mul(2, an_mul(b, an_mul(s, an_mul(s, an_add(h, hv))))));
    f = an_add(f, an_mul(GWR_FLOPS_PER_SOFTMAX_ELEMENT, scores));
    if (n > 5 && gwr_layer_input(l, 5)) f = an_add(f, scores);
    return f;
}

/* ONNX Attention (opset 23), Q (B, qh, S, Dh) or (B, S, qh * Dh), K and V
 * with L keys after a past of P: QK^T and PV (2*B*qh*S*T*(Dh + Dv), T = P +
 * L) and the softmax (5 per score). Shapes not known: not known. */
static int64_t onnx_attention_flops(an_dims *D, gwr_layer *l, int *known) {
    int n = gwr_layer_num_inputs(l), r3;
    gwr_tensor *q = n > 2 ? gwr_layer_input(l, 0) : NULL, *k = q ? gwr_layer_input(l, 1) : NULL;
    gwr_tensor *v = q ? gwr_layer_input(l, 2) : NULL, *pk = n > 4 ? gwr_layer_input(l, 4) : NULL;
    int64_t qnh = attr_int(l, "q_num_heads", 0), knh = attr_int(l, "kv_num_heads", 0);
    r3 = q && gwr_tensor_rank(q) == 3;
    if (!q || !k || !v || (gwr_tensor_rank(q) != 4 && !(r3 && qnh > 0 && knh > 0)) || gwr_tensor_rank(k) != gwr_tensor_rank(q) ||
        gwr_tensor_rank(v) != gwr_tensor_rank(q) || (pk && gwr_tensor_rank(pk) != 4)) {
        *known = 0;
        return 0;
    }
    int64_t b = an_dim(D, q, 0, known), qh = r3 ? qnh : an_dim(D, q, 1, known), s = an_dim(D, q, r3 ? 1 : 2, known);
    int64_t dh = r3 ? an_dim(D, q, 2, known) / qnh : an_dim(D, q, 3, known);
    int64_t dv = r3 ? an_dim(D, v, 2, known) / knh : an_dim(D, v, 3, known);
    int64_t t = an_add(an_dim(D, k, r3 ? 1 : 2, known), pk ? an_dim(D, pk, 2, known) : 0);
    int64_t scores = an_mul(b, an_mul(qh, an_mul(s, t)));
    return an_add(an_mul(2, an_mul(scores, an_add(dh, dv))), an_mul(GWR_FLOPS_PER_SOFTMAX_ELEMENT, scores));
}

/* LinearAttention (opset 27), query (B, T, qh * dk), value (B, T, kvh *
 * dv): per token and kv head the state update k v^T (2*dk*dv), the decay
 * (dk*dv) when gated and the delta read S^T k (2*dk*dv) when delta; per
 * token and query head the read q^T S (2*dk*dv). Shapes not known: not
 * known. */
static int64_t linear_attention_flops(an_dims *D, gwr_layer *l, int *known) {
    int n = gwr_layer_num_inputs(l);
    gwr_tensor *q = n > 2 ? gwr_layer_input(l, 0) : NULL, *v = q ? gwr_layer_input(l, 2) : NULL;
    int64_t qh = attr_int(l, "q_num_heads", 0), kvh = attr_int(l, "kv_num_heads", 0);
    if (!q || !v || gwr_tensor_rank(q) != 3 || gwr_tensor_rank(v) != 3 || qh <= 0 || kvh <= 0) {
        *known = 0;
        return 0;
    }
    int gated = n > 4 && gwr_layer_input(l, 4), delta = n > 5 && gwr_layer_input(l, 5);
    int64_t bt = an_mul(an_dim(D, q, 0, known), an_dim(D, q, 1, known));
    int64_t st = an_mul(an_dim(D, q, 2, known) / qh, an_dim(D, v, 2, known) / kvh); /* dk * dv */
    int64_t per_kv = an_mul(2 + gated + 2 * delta, st);
    return an_mul(bt, an_add(an_mul(kvh, per_kv), an_mul(qh, an_mul(2, st))));
}

/* ai.onnx.preview FlexAttention, Q (B, Hq, L, E), V (B, Hkv, S, Ev): QK^T
 * and PV (2*B*Hq*L*S*(E + Ev)) and the softmax (5 per score); the
 * score_mod and prob_mod graphs count as subgraph bodies (once each). */
static int64_t flex_attention_flops(an_dims *D, gwr_layer *l, int *known) {
    int n = gwr_layer_num_inputs(l);
    gwr_tensor *q = n > 2 ? gwr_layer_input(l, 0) : NULL, *k = q ? gwr_layer_input(l, 1) : NULL;
    gwr_tensor *v = q ? gwr_layer_input(l, 2) : NULL;
    if (!q || !k || !v || gwr_tensor_rank(q) != 4 || gwr_tensor_rank(k) != 4 || gwr_tensor_rank(v) != 4) {
        *known = 0;
        return 0;
    }
    int64_t scores = an_mul(an_mul(an_dim(D, q, 0, known), an_dim(D, q, 1, known)),
                            an_mul(an_dim(D, q, 2, known), an_dim(D, k, 2, known)));
    int64_t dd = an_add(an_dim(D, q, 3, known), an_dim(D, v, 3, known));
    return an_add(an_mul(2, an_mul(scores, dd)), an_mul(GWR_FLOPS_PER_SOFTMAX_ELEMENT, scores));
}

static gwr_status matmul_analyze(gwr_rewrite_ctx *c, gwr_layer *const *layers, int n) {
    gwr_layer *l = layers[0];
    an_dims *D = state(c)->dims;
    gwr_layer_cost *r = record(c, l);
    (void)n;
    if (!r) return GWR_ERR_STATE;
    switch (gwr_layer_op_id(l)) {
    case GWR_OP_MatMul:
    case GWR_OP_MatMulInteger:
    case GWR_OP_MS_MatMulIntegerToFloat: /* com.microsoft: its scaling and bias as MatMulInteger's */
    case GWR_OP_MS_DynamicQuantizeMatMul:
        r->flops = matmul_flops(D, gwr_layer_input(l, 0), gwr_layer_input(l, 1), &r->known);
        break;
    case GWR_OP_QLinearMatMul:
        r->flops = matmul_flops(D, gwr_layer_input(l, 0), gwr_layer_input(l, 3), &r->known);
        break;
    case GWR_OP_MS_MatMulNBits: /* com.microsoft: A [..., K] x [K, N] (attribute N); dequantization not counted */
        r->flops = an_mul(2, an_mul(an_numel(D, gwr_layer_input(l, 0), &r->known), attr_int(l, "N", 0)));
        break;
    case GWR_OP_Gemm:
    case GWR_OP_MS_FusedGemm: { /* its activation: one flop an element, as the Relu's it replaced */
        gwr_tensor *a = gwr_layer_input(l, 0), *b = gwr_layer_input(l, 1);
        gwr_tensor *bias = gwr_layer_num_inputs(l) > 2 ? gwr_layer_input(l, 2) : NULL;
        if (!a || !b || gwr_tensor_rank(a) != 2 || gwr_tensor_rank(b) != 2) {
            r->known = 0;
            break;
        }
        int ta = attr_int(l, "transA", 0) != 0, tb = attr_int(l, "transB", 0) != 0;
        int64_t m = an_dim(D, a, ta ? 1 : 0, &r->known), k = an_dim(D, a, ta ? 0 : 1, &r->known);
        int64_t nn = an_dim(D, b, tb ? 0 : 1, &r->known);
        r->flops = an_mul(2, an_mul(m, an_mul(nn, k)));
        if (bias) r->flops = an_add(r->flops, an_mul(m, nn));
        if (gwr_layer_op_id(l) == GWR_OP_MS_FusedGemm) r->flops = an_add(r->flops, an_mul(m, nn));
        break;
    }
    case GWR_OP_MS_FusedMatMul: { /* MatMul with op(A) [..., M, K]: 2 K per output element */
        gwr_tensor *a = gwr_layer_input(l, 0);
        int ra = a ? gwr_tensor_rank(a) : -1, ta = attr_int(l, "transA", 0) != 0 && ra >= 2;
        int64_t kk = ra >= 1 ? an_dim(D, a, ra - (ta ? 2 : 1), &r->known) : (r->known = 0);
        r->flops = an_mul(2, an_mul(kk, an_numel(D, gwr_layer_output(l, 0), &r->known)));
        break;
    }
    case GWR_OP_MS_MultiHeadAttention:
        r->flops = mha_flops(D, l, &r->known);
        break;
    case GWR_OP_MS_Attention:
        r->flops = ms_attention_flops(D, l, &r->known);
        break;
    case GWR_OP_Attention:
        r->flops = onnx_attention_flops(D, l, &r->known);
        break;
    case GWR_OP_LinearAttention:
        r->flops = linear_attention_flops(D, l, &r->known);
        break;
    case GWR_OP_PREVIEW_FlexAttention:
        r->flops = flex_attention_flops(D, l, &r->known);
        break;
    default: /* Det: not counted */
        break;
    }
    return GWR_OK;
}

static int64_t kernel_size(an_dims *D, gwr_tensor *w, int *known) {
    int rw = w ? gwr_tensor_rank(w) : -1;
    if (rw < 2) {
        *known = 0;
        return 0;
    }
    int64_t p = 1;
    for (int i = 1; i < rw; i++) p = an_mul(p, an_dim(D, w, i, known));
    return p;
}

static gwr_status conv_analyze(gwr_rewrite_ctx *c, gwr_layer *const *layers, int n) {
    gwr_layer *l = layers[0];
    an_dims *D = state(c)->dims;
    gwr_layer_cost *r = record(c, l);
    (void)n;
    if (!r) return GWR_ERR_STATE;
    gwr_tensor *y = gwr_layer_output(l, 0), *w = NULL, *bias = NULL;
    int nin = gwr_layer_num_inputs(l);
    switch (gwr_layer_op_id(l)) {
    case GWR_OP_Conv:
    case GWR_OP_ConvTranspose:
    case GWR_OP_MS_FusedConv: /* and one flop an element for Z's sum and for the activation */
        w = gwr_layer_input(l, 1);
        bias = nin > 2 ? gwr_layer_input(l, 2) : NULL;
        break;
    case GWR_OP_ConvInteger:
        w = gwr_layer_input(l, 1);
        break;
    case GWR_OP_CausalConvWithState: /* weight (C, 1, k): 2k per output element, the bias, and SiLU's 4 */
        w = gwr_layer_input(l, 1);
        bias = nin > 2 ? gwr_layer_input(l, 2) : NULL;
        break;
    case GWR_OP_DeformConv: /* X, W, offset, B?, mask? */
        w = gwr_layer_input(l, 1);
        bias = nin > 3 ? gwr_layer_input(l, 3) : NULL;
        break;
    case GWR_OP_QLinearConv:
        w = gwr_layer_input(l, 3);
        bias = nin > 8 ? gwr_layer_input(l, 8) : NULL;
        break;
    default:
        return GWR_OK;
    }
    /* Conv: each output element is a dot product of (Cin/group) * kernel
     * terms, w = [Cout, Cin/group, k...]. ConvTranspose: each input element
     * is scattered through (Cout/group) * kernel weights, w = [Cin,
     * Cout/group, k...]. */
    int64_t per = kernel_size(D, w, &r->known);
    int64_t base = gwr_layer_op_id(l) == GWR_OP_ConvTranspose ? an_numel(D, gwr_layer_input(l, 0), &r->known)
                                                               : an_numel(D, y, &r->known);
    r->flops = an_mul(2, an_mul(base, per));
    if (bias) r->flops = an_add(r->flops, an_numel(D, y, &r->known));
    const char *act = NULL;
    if (gwr_layer_op_id(l) == GWR_OP_CausalConvWithState && !gwr_layer_get_string(l, "activation", &act, NULL) && act &&
        strcmp(act, "none"))
        r->flops = an_add(r->flops, an_mul(4, an_numel(D, y, &r->known)));
    if (gwr_layer_op_id(l) == GWR_OP_DeformConv) {
        /* and a bilinear sample (4 corners, 2 flops each; a mask: one more
         * product) per input channel, tap and output position: N * P *
         * C * K, where C * K = per * group and N * P = numel(Y) / oC */
        int64_t oc = an_dim(D, w, 0, &r->known), ny = an_numel(D, y, &r->known);
        int64_t taps = an_mul(an_mul(oc > 0 ? ny / oc : 0, per), attr_int(l, "group", 1));
        r->flops = an_add(r->flops, an_mul(8 + (nin > 4 && gwr_layer_input(l, 4) != NULL), taps));
    }
    if (gwr_layer_op_id(l) == GWR_OP_MS_FusedConv) {
        int terms = (nin > 3 && gwr_layer_input(l, 3)) + gwr_layer_has_attr(l, "activation");
        r->flops = an_add(r->flops, an_mul(terms, an_numel(D, y, &r->known)));
    }
    return GWR_OK;
}

static gwr_status pool_analyze(gwr_rewrite_ctx *c, gwr_layer *const *layers, int n) {
    gwr_layer *l = layers[0];
    an_dims *D = state(c)->dims;
    gwr_layer_cost *r = record(c, l);
    (void)n;
    if (!r) return GWR_ERR_STATE;
    switch (gwr_layer_op_id(l)) {
    case GWR_OP_GlobalAveragePool:
    case GWR_OP_GlobalMaxPool:
    case GWR_OP_GlobalLpPool:
        r->flops = an_numel(D, gwr_layer_input(l, 0), &r->known);
        break;
    case GWR_OP_AveragePool:
    case GWR_OP_MaxPool:
    case GWR_OP_LpPool: {
        const int64_t *k;
        int64_t nk;
        int64_t per = 1;
        if (gwr_layer_get_ints(l, "kernel_shape", &k, &nk) == GWR_OK)
            for (int64_t i = 0; i < nk; i++) per = an_mul(per, k[i] > 0 ? k[i] : 1);
        else r->known = 0;
        r->flops = an_mul(an_numel(D, gwr_layer_output(l, 0), &r->known), per);
        break;
    }
    default:
        break;
    }
    return GWR_OK;
}

/* Element-wise, unary and activation ops: one FLOP per output element and
 * operation (an n-ary Sum of n inputs: n - 1). */
static gwr_status elementwise_analyze(gwr_rewrite_ctx *c, gwr_layer *const *layers, int n) {
    gwr_layer *l = layers[0];
    gwr_layer_cost *r = record(c, l);
    (void)n;
    if (!r) return GWR_ERR_STATE;
    int64_t per = 1;
    if (gwr_layer_type(l) == GWR_LAYER_ELEMENTWISE) {
        int present = 0;
        for (int i = 0; i < gwr_layer_num_inputs(l); i++) present += gwr_layer_input(l, i) != NULL;
        if (present > 2) per = present - 1;
    }
    r->flops = an_mul(per, an_numel(state(c)->dims, gwr_layer_output(l, 0), &r->known));
    return GWR_OK;
}

static gwr_status per_element_analyze(gwr_rewrite_ctx *c, gwr_layer *const *layers, int n) {
    gwr_layer *l = layers[0];
    gwr_layer_cost *r = record(c, l);
    (void)n;
    if (!r) return GWR_ERR_STATE;
    int64_t per = gwr_layer_type(l) == GWR_LAYER_SOFTMAX ? GWR_FLOPS_PER_SOFTMAX_ELEMENT : GWR_FLOPS_PER_NORM_ELEMENT;
    r->flops = an_mul(per, an_numel(state(c)->dims, gwr_layer_output(l, 0), &r->known));
    return GWR_OK;
}

static gwr_status reduce_analyze(gwr_rewrite_ctx *c, gwr_layer *const *layers, int n) {
    gwr_layer *l = layers[0];
    gwr_layer_cost *r = record(c, l);
    (void)n;
    if (!r) return GWR_ERR_STATE;
    r->flops = an_numel(state(c)->dims, gwr_layer_input(l, 0), &r->known);
    return GWR_OK;
}

/* gwr::GPTAttention: QK^T and PV (2*b*h*s*s*d each), softmax (5 per
 * score), the qkv bias (b*s*3*h*d) when set. With remove_padding, qkv is
 * [1, T, 3*h*d]: the packed sequences are `seq` long when dims binds seq
 * to a divisor of T, else the T tokens count as one sequence (not known). */
static gwr_status attention_analyze(gwr_rewrite_ctx *c, gwr_layer *const *layers, int n) {
    gwr_layer *l = layers[0];
    an_dims *D = state(c)->dims;
    gwr_layer_cost *r = record(c, l);
    (void)n;
    if (!r) return GWR_ERR_STATE;
    gwr_tensor *qkv = gwr_layer_num_inputs(l) > 0 ? gwr_layer_input(l, 0) : NULL;
    gwr_tensor *bias = gwr_layer_num_inputs(l) > 1 ? gwr_layer_input(l, 1) : NULL;
    int64_t h = attr_int(l, "num_heads", 0), d = attr_int(l, "head_size", 0);
    if (!qkv || gwr_tensor_rank(qkv) != 3 || h <= 0 || d <= 0) {
        r->known = 0;
        return GWR_OK;
    }
    int64_t b = an_dim(D, qkv, 0, &r->known), s = an_dim(D, qkv, 1, &r->known);
    if (attr_int(l, "remove_padding", 0)) {
        int64_t tokens = an_mul(b, s);
        an_binding *seq = an_dims_binding(D, "seq");
        if (seq && seq->value > 0 && tokens % seq->value == 0) {
            b = tokens / seq->value;
            s = seq->value;
        } else {
            b = 1, s = tokens;
            r->known = 0;
        }
    }
    int64_t scores = an_mul(b, an_mul(h, an_mul(s, s)));
    r->flops = an_add(an_mul(4, an_mul(scores, d)), an_mul(GWR_FLOPS_PER_SOFTMAX_ELEMENT, scores));
    if (bias) r->flops = an_add(r->flops, an_mul(b, an_mul(s, an_mul(3, an_mul(h, d)))));
    return GWR_OK;
}

/* gwr::ElementwiseChain: what cost.elementwise counts for its links, one
 * FLOP per output element each (the ops field holds one code a link). */
static gwr_status ew_chain_analyze(gwr_rewrite_ctx *c, gwr_layer *const *layers, int n) {
    gwr_layer *l = layers[0];
    gwr_layer_cost *r = record(c, l);
    const int64_t *ops = NULL;
    int64_t nops = 0;
    (void)n;
    if (!r) return GWR_ERR_STATE;
    if (gwr_layer_attr_ints(l, "ops", &ops, &nops) || nops < 1) {
        r->known = 0;
        return GWR_OK;
    }
    r->flops = an_mul(nops, an_numel(state(c)->dims, gwr_layer_output(l, 0), &r->known));
    return GWR_OK;
}

/* ---- the report ------------------------------------------------------------ */

static int cmp_domain_op(const void *a, const void *b) {
    const gwr_op_count *x = a, *y = b;
    int c = strcmp(x->domain, y->domain);
    return c ? c : strcmp(x->op, y->op);
}

/* "domain::op" order, the default domain's "op" bare. */
static int cmp_key(const gwr_op_count *x, const gwr_op_count *y) {
    const char *xs[3] = {x->domain, *x->domain ? "::" : "", x->op};
    const char *ys[3] = {y->domain, *y->domain ? "::" : "", y->op};
    int i = 0, j = 0;
    const char *p = xs[0], *q = ys[0];
    for (;;) {
        while (!*p && i < 2) p = xs[++i];
        while (!*q && j < 2) q = ys[++j];
        if (!*p || !*q || *p != *q) return (int)(unsigned char)*p - (int)(unsigned char)*q;
        p++, q++;
    }
}

static int cmp_count_key(const void *a, const void *b) {
    const gwr_op_count *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return cmp_key(x, y);
}

static void histogram(an_state *st) {
    if (!st->nops) return;
    qsort(st->ops, (size_t)st->nops, sizeof *st->ops, cmp_domain_op);
    int64_t k = 0;
    for (int64_t i = 0; i < st->nops; i++) {
        if (k && !cmp_domain_op(&st->ops[k - 1], &st->ops[i])) st->ops[k - 1].count++;
        else st->ops[k++] = st->ops[i];
    }
    st->nops = k;
    qsort(st->ops, (size_t)k, sizeof *st->ops, cmp_count_key);
}

/* The layer of net that runs user u: u itself, or the If/Loop/Scan layer
 * whose body holds it; NULL when u (or that layer) is removed. */
static gwr_layer *in_net(gwr_network *net, gwr_layer *u) {
    if (gwr_layer_is_removed(u)) return NULL;
    while (u && gwr_layer_network(u) != net) {
        gwr_network *g = gwr_layer_network(u);
        u = g ? gwr_network_owner(g) : NULL;
        if (u && gwr_layer_is_removed(u)) return NULL;
    }
    return u;
}

static gwr_status live_order(gwr_network *net, gwr_layer ***order, int64_t *n, int *network_order, char *errbuf);

/* The bodies (If branches, a Loop's or Scan's body) of layer l into *gs
 * (at most max); their count. */
static int layer_bodies(gwr_layer *l, gwr_network **gs, int max) {
    int k = 0;
    for (int a = 0; a < gwr_layer_num_attrs(l); a++) {
        const char *name = gwr_layer_attr_name(l, a);
        gwr_network *g, *const *many = NULL;
        int64_t ng = 0;
        if (gwr_layer_attr_type(l, a) == GWR_ATTR_GRAPH && gwr_layer_get_graph(l, name, &g) == GWR_OK) many = &g, ng = 1;
        else if (gwr_layer_attr_type(l, a) == GWR_ATTR_GRAPHS) gwr_layer_get_graphs(l, name, &many, &ng);
        for (int64_t j = 0; j < ng && k < max; j++) gs[k++] = many[j];
    }
    return k;
}

/* The most bytes a layer's bodies hold at once while it runs: the worst
 * body's own peak (its inputs and intermediates; what the enclosing graph
 * holds is counted there). 0 for a layer without bodies. */
static int64_t body_peak(gwr_layer *l, an_dims *D, char *errbuf, gwr_status *s, int depth) {
    gwr_network *gs[16];
    int ng = depth < 32 ? layer_bodies(l, gs, 16) : 0;
    int64_t worst = 0;
    for (int k = 0; k < ng && !*s; k++) {
        gwr_layer **order = NULL;
        int64_t n = 0, peak = 0, at;
        int netorder;
        if (!(*s = live_order(gs[k], &order, &n, &netorder, errbuf)))
            *s = an_lifetimes_at(gs[k], order, n, D, errbuf, NULL, NULL, &peak, &at, depth + 1);
        gwr_free(order);
        if (peak > worst) worst = peak;
    }
    return worst;
}

gwr_status an_lifetimes(gwr_network *net, gwr_layer *const *order, int64_t n, an_dims *D, char *errbuf,
                        gwr_tensor_lifetime **out, int64_t *nout, int64_t *peak, int64_t *at) {
    return an_lifetimes_at(net, order, n, D, errbuf, out, nout, peak, at, 0);
}

gwr_status an_lifetimes_at(gwr_network *net, gwr_layer *const *order, int64_t n, an_dims *D, char *errbuf,
                           gwr_tensor_lifetime **out, int64_t *nout, int64_t *peak, int64_t *at, int depth) {
    int64_t nl = gwr_network_num_layers(net), live = gwr_network_num_live_layers(net);
    if (n != live)
        return gwr_fmt_error(errbuf, GWR_ERR_INVALID_ARG, "the order has %lld layers; the network has %lld live ones",
                             (long long)n, (long long)live);
    int64_t *pos = gwr_malloc((size_t)(nl ? nl : 1) * sizeof *pos);
    int64_t *diff = gwr_calloc((size_t)n + 1, sizeof *diff);
    int ninputs = gwr_network_num_inputs(net);
    gwr_tensor_lifetime *life = NULL;
    gwr_status s = GWR_OK;
    int64_t nlife = 0, cap = ninputs;
    if (!pos || !diff) {
        s = gwr_fmt_error(errbuf, GWR_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int64_t i = 0; i < nl; i++) pos[i] = -1;
    for (int64_t i = 0; i < n; i++) {
        gwr_layer *l = order[i];
        if (!l) {
            s = gwr_fmt_error(errbuf, GWR_ERR_INVALID_ARG, "the order's entry %lld is NULL", (long long)i);
            goto done;
        }
        if (gwr_layer_network(l) != net) {
            s = gwr_fmt_error(errbuf, GWR_ERR_INVALID_ARG, "the order's entry %lld, layer '%s', is not of this network",
                              (long long)i, gwr_layer_name(l));
            goto done;
        }
        if (gwr_layer_is_removed(l)) {
            s = gwr_fmt_error(errbuf, GWR_ERR_INVALID_ARG, "the order's entry %lld, layer '%s', is removed",
                              (long long)i, gwr_layer_name(l));
            goto done;
        }
        int64_t idx = gwr_layer_index(l);
        if (pos[idx] >= 0) {
            s = gwr_fmt_error(errbuf, GWR_ERR_INVALID_ARG, "layer '%s' is in the order twice (entries %lld and %lld)",
                              gwr_layer_name(l), (long long)pos[idx], (long long)i);
            goto done;
        }
        pos[idx] = i;
        cap += gwr_layer_num_outputs(l);
    }
    if (!(life = gwr_malloc((size_t)(cap ? cap : 1) * sizeof *life))) {
        s = gwr_fmt_error(errbuf, GWR_ERR_NOMEM, "out of memory");
        goto done;
    }
    /* Lifetimes: last use from the users' positions (a body layer counts
     * as its If/Loop layer); a reader at or before the producer means the
     * order is not topological. */
    for (int i = 0; i < ninputs; i++) {
        gwr_tensor *t = gwr_network_input(net, i);
        if (gwr_tensor_default(t)) continue; /* a weight (an initializer named like an input) */
        gwr_tensor_lifetime *lt = &life[nlife++];
        *lt = (gwr_tensor_lifetime){t, 0, 0, 0};
        int known = 1;
        lt->bytes = an_bytes(D, t, &known);
        for (int64_t u = 0; u < gwr_tensor_num_users(t); u++) {
            gwr_layer *a = in_net(net, gwr_tensor_user(t, u, NULL));
            if (a && pos[gwr_layer_index(a)] > lt->last) lt->last = pos[gwr_layer_index(a)];
        }
        if (gwr_tensor_output_index(t) >= 0 && n) lt->last = n - 1;
    }
    for (int64_t i = 0; i < n; i++) {
        gwr_layer *l = order[i];
        int weight = gwr_layer_type(l) == GWR_LAYER_CONSTANT;
        for (int o = 0; o < gwr_layer_num_outputs(l); o++) {
            gwr_tensor *t = gwr_layer_output(l, o);
            int64_t last = i;
            for (int64_t u = 0; u < gwr_tensor_num_users(t); u++) {
                gwr_layer *a = in_net(net, gwr_tensor_user(t, u, NULL));
                if (!a) continue;
                int64_t p = pos[gwr_layer_index(a)];
                if (p <= i) {
                    s = gwr_fmt_error(errbuf, GWR_ERR_INVALID_ARG,
                                      "the order is not topological: layer '%s' (position %lld) reads '%s' before "
                                      "its producer '%s' (position %lld) runs",
                                      gwr_layer_name(a), (long long)p, gwr_tensor_name(t), gwr_layer_name(l), (long long)i);
                    goto done;
                }
                if (p > last) last = p;
            }
            if (weight) continue;
            if (gwr_tensor_output_index(t) >= 0) last = n - 1;
            int known = 1;
            life[nlife++] = (gwr_tensor_lifetime){t, i, last, an_bytes(D, t, &known)};
        }
    }
    /* The peak: bytes live at each position, by differences. */
    int64_t total = 0, best = 0, best_at = n ? 0 : -1;
    for (int64_t i = 0; i < nlife; i++) total = an_add(total, life[i].bytes);
    if (!n) {
        best = total;
    } else if (total < INT64_MAX) {
        for (int64_t i = 0; i < nlife; i++) {
            diff[life[i].first] += life[i].bytes;
            diff[life[i].last + 1] -= life[i].bytes;
        }
        int64_t run = 0;
        best = -1;
        for (int64_t i = 0; i < n && !s; i++) {
            run += diff[i];
            /* a layer with bodies: its worst body's own peak on top */
            int64_t here = an_add(run, body_peak(order[i], D, errbuf, &s, depth));
            if (here > best) best = here, best_at = i;
        }
        if (s) goto done;
    } else {
        /* Past int64: the same in long double, the result saturated. */
        long double run = 0, lbest = -1;
        long double *ld = gwr_calloc((size_t)n + 1, sizeof *ld);
        if (!ld) {
            s = gwr_fmt_error(errbuf, GWR_ERR_NOMEM, "out of memory");
            goto done;
        }
        for (int64_t i = 0; i < nlife; i++) {
            ld[life[i].first] += (long double)life[i].bytes;
            ld[life[i].last + 1] -= (long double)life[i].bytes;
        }
        for (int64_t i = 0; i < n && !s; i++) {
            run += ld[i];
            long double here = run + (long double)body_peak(order[i], D, errbuf, &s, depth);
            if (here > lbest) lbest = here, best_at = i;
        }
        gwr_free(ld);
        if (s) goto done;
        best = lbest >= (long double)INT64_MAX ? INT64_MAX : (int64_t)lbest;
    }
    if (D->nomem) s = gwr_fmt_error(errbuf, GWR_ERR_NOMEM, "out of memory");
    if (peak) *peak = best;
    if (at) *at = best_at;
done:
    gwr_free(pos);
    gwr_free(diff);
    if (s || !out) {
        gwr_free(life);
    } else {
        *out = life;
        *nout = nlife;
    }
    return s;
}

/* Live layers in network order when that is topological, else in the
 * stable topological order. A malloc'd array of n entries. */
static gwr_status live_order(gwr_network *net, gwr_layer ***order, int64_t *n, int *network_order, char *errbuf) {
    int64_t nl = gwr_network_num_layers(net);
    gwr_layer **all = gwr_malloc((size_t)(nl ? nl : 1) * sizeof *all);
    if (!all) return gwr_fmt_error(errbuf, GWR_ERR_NOMEM, "out of memory");
    /* Network order is topological when every live reader comes after its
     * producer (readers inside bodies as their If/Loop layer). */
    int topo = 1;
    for (int64_t i = 0; i < nl && topo; i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (gwr_layer_is_removed(l)) continue;
        for (int o = 0; o < gwr_layer_num_outputs(l) && topo; o++) {
            gwr_tensor *t = gwr_layer_output(l, o);
            for (int64_t u = 0; u < gwr_tensor_num_users(t) && topo; u++) {
                gwr_layer *a = in_net(net, gwr_tensor_user(t, u, NULL));
                if (a && gwr_layer_index(a) <= i) topo = 0;
            }
        }
    }
    if (topo) {
        for (int64_t i = 0; i < nl; i++) all[i] = gwr_network_layer(net, i);
    } else if (gwr_network_topo_order(net, all)) {
        gwr_status s = gwr_fmt_error(errbuf, GWR_ERR_CYCLE, "%s", gwr_network_errmsg(net));
        gwr_free(all);
        return s;
    }
    int64_t k = 0;
    for (int64_t i = 0; i < nl; i++)
        if (!gwr_layer_is_removed(all[i])) all[k++] = all[i];
    *order = all;
    *n = k;
    *network_order = topo;
    return GWR_OK;
}

gwr_status gwr_peak_memory(gwr_network *net, gwr_layer *const *order, int64_t n, const gwr_args *dims,
                           int64_t *peak_bytes, int64_t *at_index) {
    if (!net) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_peak_memory: NULL network");
    char err[GWR_ERRMSG_MAX] = "";
    an_dims D;
    gwr_layer **own = NULL;
    int netorder;
    gwr_status s = an_dims_init(&D, net, dims, err);
    if (!s && !order) {
        s = live_order(net, &own, &n, &netorder, err);
        order = own;
    }
    if (!s && n < 0) s = gwr_fmt_error(err, GWR_ERR_INVALID_ARG, "negative layer count %lld", (long long)n);
    if (!s) s = an_lifetimes(net, order, n, &D, err, NULL, NULL, peak_bytes, at_index);
    gwr_free(own);
    an_dims_free(&D);
    if (s) return gwr_ir_error(net, s, "gwr_peak_memory: %s", err);
    return GWR_OK;
}

static const gwr_pattern_analyzer builtin[] = {
    /* name, root classes, root ops, match, analyze, user */
    {"cost.bytes", GWR_ROOT_ANY, NULL, top_only, bytes_analyze, NULL},
    {"ops", GWR_ROOT_ANY, NULL, main_only, ops_analyze, NULL},
    {"params", GWR_ROOT_CLASS(GWR_LAYER_CONSTANT), NULL, NULL, params_analyze, NULL},
    {"cost.matmul", GWR_ROOT_CLASS(GWR_LAYER_MATRIX_MULTIPLY), NULL, top_only, matmul_analyze, NULL},
    {"cost.conv", GWR_ROOT_CLASS(GWR_LAYER_CONVOLUTION) | GWR_ROOT_CLASS(GWR_LAYER_DECONVOLUTION), NULL, top_only,
     conv_analyze, NULL},
    {"cost.pooling", GWR_ROOT_CLASS(GWR_LAYER_POOLING), NULL, top_only, pool_analyze, NULL},
    {"cost.elementwise",
     GWR_ROOT_CLASS(GWR_LAYER_ELEMENTWISE) | GWR_ROOT_CLASS(GWR_LAYER_UNARY) | GWR_ROOT_CLASS(GWR_LAYER_ACTIVATION),
     NULL, top_only, elementwise_analyze, NULL},
    {"cost.normalization", GWR_ROOT_CLASS(GWR_LAYER_NORMALIZATION) | GWR_ROOT_CLASS(GWR_LAYER_LRN), NULL, top_only,
     per_element_analyze, NULL},
    {"cost.softmax", GWR_ROOT_CLASS(GWR_LAYER_SOFTMAX), NULL, top_only, per_element_analyze, NULL},
    {"cost.reduce", GWR_ROOT_CLASS(GWR_LAYER_REDUCE), NULL, top_only, reduce_analyze, NULL},
    {"cost.attention", 0, (const char *const[]){"gwr::GPTAttention", NULL}, top_only, attention_analyze, NULL},
    {"cost.ew_chain", 0, (const char *const[]){"gwr::ElementwiseChain", NULL}, top_only, ew_chain_analyze, NULL},
};
/* cost.bytes opens each layer's record: it must come first. */
static const int builtin_benefit[] = {100, 90, 90, 50, 50, 50, 50, 50, 50, 50, 50, 50};

/* builtin[] from this entry on are the FLOP rules (cost.bytes, ops and
 * params apply to every layer and count no FLOPs). */
#define FIRST_FLOPS_RULE 3

/* Classes that move or make data without arithmetic: their FLOPs are 0 by
 * definition, and cost.bytes counts their traffic. */
#define ZERO_FLOP_CLASSES                                                                                       \
    (GWR_ROOT_CLASS(GWR_LAYER_SHUFFLE) | GWR_ROOT_CLASS(GWR_LAYER_CONCATENATION) | GWR_ROOT_CLASS(GWR_LAYER_SPLIT) | \
     GWR_ROOT_CLASS(GWR_LAYER_SLICE) | GWR_ROOT_CLASS(GWR_LAYER_GATHER) | GWR_ROOT_CLASS(GWR_LAYER_SCATTER) |      \
     GWR_ROOT_CLASS(GWR_LAYER_SHAPE) | GWR_ROOT_CLASS(GWR_LAYER_CONSTANT) | GWR_ROOT_CLASS(GWR_LAYER_IDENTITY) |   \
     GWR_ROOT_CLASS(GWR_LAYER_PADDING) | GWR_ROOT_CLASS(GWR_LAYER_SEQUENCE) |                                     \
     GWR_ROOT_CLASS(GWR_LAYER_REVERSE_SEQUENCE) | GWR_ROOT_CLASS(GWR_LAYER_FILL))

int an_op_has_cost_rule(gwr_op_id id) {
    const gwr_op_info *info = gwr_op_info_get(id);
    if (!info) return 0;
    if (ZERO_FLOP_CLASSES & GWR_ROOT_CLASS(info->layer_type)) return 1;
    char qual[256];
    snprintf(qual, sizeof qual, "%s%s%s", info->domain, *info->domain ? "::" : "", info->name);
    for (size_t i = FIRST_FLOPS_RULE; i < sizeof builtin / sizeof *builtin; i++) {
        if (builtin[i].root_classes & GWR_ROOT_CLASS(info->layer_type)) return 1;
        for (const char *const *op = builtin[i].root_ops; op && *op; op++)
            if (!strcmp(*op, qual)) return 1;
    }
    return 0;
}

typedef struct an_graph {
    gwr_network *g;
    int64_t times;
} an_graph;

/* How many times one run executes the body of l: a Loop's trip count when
 * a constant gives it, a Scan's length (scan axis of its first scan
 * input); else 1 with *once set. An If runs a branch once. */
static int64_t body_times(an_dims *D, gwr_layer *l, int *once) {
    int nin = gwr_layer_num_inputs(l);
    if (gwr_layer_op_id(l) == GWR_OP_Loop) {
        gwr_tensor *m = nin > 0 ? gwr_layer_input(l, 0) : NULL;
        gwr_layer *c = m ? gwr_tensor_parent(m) : NULL;
        const gwr_weights *w;
        if (c && !gwr_layer_is_removed(c) && gwr_layer_op_id(c) == GWR_OP_Constant &&
            gwr_layer_get_tensor(c, "value", &w) == GWR_OK && w->dtype == GWR_INT64 && w->nbytes == 8 && w->data) {
            int64_t v;
            memcpy(&v, w->data, sizeof v);
            return v < 0 ? 0 : v;
        }
        *once = 1;
        return 1;
    }
    if (gwr_layer_op_id(l) == GWR_OP_Scan) {
        int64_t ns = attr_int(l, "num_scan_inputs", 0);
        const int64_t *axes;
        int64_t nax, axis = 0;
        if (gwr_layer_get_ints(l, "scan_input_axes", &axes, &nax) == GWR_OK && nax > 0) axis = axes[0];
        gwr_tensor *x = ns > 0 && ns <= nin ? gwr_layer_input(l, nin - (int)ns) : NULL;
        int known = 1, r = x ? gwr_tensor_rank(x) : -1;
        if (axis < 0) axis += r;
        int64_t len = x && r > 0 && axis >= 0 && axis < r ? an_dim(D, x, (int)axis, &known) : (known = 0, 1);
        if (!known) *once = 1;
        return len;
    }
    return 1;
}

/* Pushes the If/Loop/Scan bodies of net's live layers onto *stack, each
 * with the times its layers count. */
static int push_bodies(an_dims *D, const an_graph *at, an_graph **stack, int64_t *n, int64_t *cap, int64_t *once) {
    for (int64_t i = 0; i < gwr_network_num_layers(at->g); i++) {
        gwr_layer *l = gwr_network_layer(at->g, i);
        if (gwr_layer_is_removed(l)) continue;
        gwr_network *gs[16];
        int ng = layer_bodies(l, gs, 16), o = 0;
        int64_t times = ng ? an_mul(at->times, body_times(D, l, &o)) : 0;
        *once += o;
        for (int k = 0; k < ng; k++) {
            if (gwr_grow((void **)stack, sizeof **stack, cap, *n + 1)) return -1;
            (*stack)[(*n)++] = (an_graph){gs[k], times};
        }
    }
    return 0;
}

gwr_analysis *gwr_analyze_network(gwr_network *net, const gwr_args *dims) {
    if (!net) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_analyze_network: NULL network");
        return NULL;
    }
    gwr_analysis *a = gwr_calloc(1, sizeof *a);
    if (!a) {
        gwr_ir_error(net, GWR_ERR_NOMEM, "gwr_analyze_network: out of memory");
        return NULL;
    }
    a->net = net;
    char err[GWR_ERRMSG_MAX] = "";
    an_dims *D = &a->dims;
    an_state st = {.net = net, .dims = D};
    gwr_analysis_manager *m = NULL;
    an_graph *stack = NULL;
    int64_t nstack = 0, stack_cap = 0;
    gwr_layer **order = NULL;
    int64_t norder = 0;
    gwr_status s = an_dims_init(D, net, dims, err);
    if (s) goto fail;
    if (!(m = gwr_analysis_manager_new())) {
        s = gwr_fmt_error(err, GWR_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < sizeof builtin / sizeof *builtin && !s; i++) {
        gwr_pattern_analyzer p = builtin[i];
        p.user = &st;
        if ((s = gwr_analysis_manager_add(m, p.name, &p, builtin_benefit[i])))
            gwr_fmt_error(err, s, "%s", gwr_analysis_manager_errmsg(m));
    }
    if (s) goto fail;
    /* The network, then every body (for the parameters). */
    if (gwr_grow((void **)&stack, sizeof *stack, &stack_cap, 1)) {
        s = gwr_fmt_error(err, GWR_ERR_NOMEM, "out of memory");
        goto fail;
    }
    stack[nstack++] = (an_graph){net, 1};
    int64_t once = 0;
    while (nstack) {
        an_graph at = stack[--nstack];
        /* A body's records go to the other array: the network's stay in
         * network order. */
        int body = at.g != net;
        st.cur = at.g, st.times = at.times;
        if (body) swap_records(&st);
        s = gwr_analysis_manager_analyze(m, at.g, dims);
        if (body) swap_records(&st);
        if (s) {
            gwr_fmt_error(err, s, "%s", gwr_analysis_manager_errmsg(m));
            goto fail;
        }
        if (push_bodies(D, &at, &stack, &nstack, &stack_cap, &once)) {
            s = gwr_fmt_error(err, GWR_ERR_NOMEM, "out of memory");
            goto fail;
        }
    }
    /* Graph inputs' default values are weights too. */
    int oom = 0;
    for (int i = 0; i < gwr_network_num_inputs(net); i++) {
        const gwr_weights *w = gwr_tensor_default(gwr_network_input(net, i));
        if (w) count_weights_value(&st, w, &oom);
    }
    if (oom) {
        s = gwr_fmt_error(err, GWR_ERR_NOMEM, "out of memory");
        goto fail;
    }
    histogram(&st);
    params_finish(&st);
    a->ops = st.ops, a->nops = st.nops, st.ops = NULL;
    a->cost = st.cost, a->ncost = st.ncost, st.cost = NULL;
    a->body_cost = st.other, a->nbody = st.nother, st.other = NULL;
    a->params = st.params;
    a->totals.layers = a->ncost;
    for (int64_t i = 0; i < a->ncost; i++) {
        const gwr_layer_cost *r = &a->cost[i];
        a->totals.known_layers += r->known != 0;
        a->totals.flops = an_add(a->totals.flops, r->flops);
        a->totals.bytes_read = an_add(a->totals.bytes_read, r->bytes_read);
        a->totals.bytes_written = an_add(a->totals.bytes_written, r->bytes_written);
    }
    a->totals.body_layers = a->nbody;
    a->totals.loops_counted_once = once;
    for (int64_t i = 0; i < a->nbody; i++) {
        const gwr_layer_cost *r = &a->body_cost[i];
        int64_t f = an_mul(r->flops, r->times);
        a->totals.body_flops = an_add(a->totals.body_flops, f);
        a->totals.flops = an_add(a->totals.flops, f);
        a->totals.bytes_read = an_add(a->totals.bytes_read, an_mul(r->bytes_read, r->times));
        a->totals.bytes_written = an_add(a->totals.bytes_written, an_mul(r->bytes_written, r->times));
    }
    if ((s = live_order(net, &order, &norder, &a->mem.network_order, err))) goto fail;
    if ((s = an_lifetimes(net, order, norder, D, err, &a->life, &a->nlife, &a->mem.peak_bytes, &a->mem.peak_index)))
        goto fail;
    a->mem.peak_layer = a->mem.peak_index >= 0 ? order[a->mem.peak_index] : NULL;
    a->mem.weight_bytes = a->params.bytes;
    if (D->nomem) {
        s = gwr_fmt_error(err, GWR_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if (D->nassumed) qsort(D->assumed, (size_t)D->nassumed, sizeof *D->assumed, an_cmp_str);
    gwr_free(order);
    gwr_free(stack);
    gwr_free(st.spans);
    gwr_analysis_manager_free(m);
    return a;
fail:
    gwr_ir_error(net, s, "gwr_analyze_network: %s", err);
    gwr_free(order);
    gwr_free(stack);
    gwr_free(st.ops);
    gwr_free(st.cost);
    gwr_free(st.other);
    gwr_free(st.spans);
    gwr_analysis_manager_free(m);
    gwr_analysis_free(a);
    return NULL;
}

int an_cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

void gwr_analysis_free(gwr_analysis *a) {
    if (!a) return;
    gwr_free(a->ops);
    gwr_free(a->cost);
    gwr_free(a->body_cost);
    gwr_free(a->life);
    an_dims_free(&a->dims);
    gwr_free(a);
}

/* ---- accessors ------------------------------------------------------------- */

static gwr_status bad(const char *fn) { return gwr_set_last_error(GWR_ERR_INVALID_ARG, "%s: NULL argument", fn); }

const char *gwr_analysis_errmsg(const gwr_analysis *a) { return a ? a->errmsg : ""; }
gwr_network *gwr_analysis_network(const gwr_analysis *a) { return a ? a->net : NULL; }

int64_t gwr_analysis_num_ops(const gwr_analysis *a) { return a ? a->nops : -1; }
const gwr_op_count *gwr_analysis_op(const gwr_analysis *a, int64_t i) {
    return a && i >= 0 && i < a->nops ? &a->ops[i] : NULL;
}

gwr_status gwr_analysis_params(const gwr_analysis *a, gwr_param_stats *out) {
    if (!a || !out) return bad("gwr_analysis_params");
    *out = a->params;
    return GWR_OK;
}

int64_t gwr_analysis_num_layers(const gwr_analysis *a) { return a ? a->ncost : -1; }
int64_t gwr_analysis_num_body_layers(const gwr_analysis *a) { return a ? a->nbody : -1; }
const gwr_layer_cost *gwr_analysis_body_layer_cost(const gwr_analysis *a, int64_t i) {
    return a && i >= 0 && i < a->nbody ? &a->body_cost[i] : NULL;
}
const gwr_layer_cost *gwr_analysis_layer_cost(const gwr_analysis *a, int64_t i) {
    return a && i >= 0 && i < a->ncost ? &a->cost[i] : NULL;
}

gwr_status gwr_analysis_totals(const gwr_analysis *a, gwr_cost_totals *out) {
    if (!a || !out) return bad("gwr_analysis_totals");
    *out = a->totals;
    return GWR_OK;
}

typedef struct an_rank {
    int64_t flops, index;
} an_rank;

static int cmp_rank(const void *a, const void *b) {
    const an_rank *x = a, *y = b;
    if (x->flops != y->flops) return x->flops > y->flops ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

int64_t gwr_analysis_top_layers(const gwr_analysis *a, int64_t n, int64_t *idx) {
    if (!a || n < 0 || (n && !idx)) {
        bad("gwr_analysis_top_layers");
        return -1;
    }
    if (n > a->ncost) n = a->ncost;
    if (n > 16) {
        /* Many: sort them all, O(layers log layers). */
        an_rank *r = gwr_malloc((size_t)a->ncost * sizeof *r);
        if (!r) {
            gwr_set_last_error(GWR_ERR_NOMEM, "gwr_analysis_top_layers: out of memory");
            return -1;
        }
        for (int64_t i = 0; i < a->ncost; i++) r[i] = (an_rank){a->cost[i].flops, i};
        qsort(r, (size_t)a->ncost, sizeof *r, cmp_rank);
        for (int64_t i = 0; i < n; i++) idx[i] = r[i].index;
        gwr_free(r);
        return n;
    }
    /* Few: insertion into a sorted window of n, O(layers * n). */
    int64_t k = 0;
    for (int64_t i = 0; i < a->ncost && n; i++) {
        int64_t f = a->cost[i].flops;
        if (k == n && a->cost[idx[k - 1]].flops >= f) continue;
        int64_t j = k < n ? k++ : n - 1;
        while (j > 0 && a->cost[idx[j - 1]].flops < f) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = i;
    }
    return k;
}

gwr_status gwr_analysis_memory(const gwr_analysis *a, gwr_memory_stats *out) {
    if (!a || !out) return bad("gwr_analysis_memory");
    *out = a->mem;
    return GWR_OK;
}

int64_t gwr_analysis_num_lifetimes(const gwr_analysis *a) { return a ? a->nlife : -1; }
const gwr_tensor_lifetime *gwr_analysis_lifetime(const gwr_analysis *a, int64_t i) {
    return a && i >= 0 && i < a->nlife ? &a->life[i] : NULL;
}

int64_t gwr_analysis_num_assumed(const gwr_analysis *a) { return a ? a->dims.nassumed : -1; }
const char *gwr_analysis_assumed(const gwr_analysis *a, int64_t i) {
    return a && i >= 0 && i < a->dims.nassumed ? a->dims.assumed[i] : NULL;
}
int64_t gwr_analysis_unknown_tensors(const gwr_analysis *a) { return a ? a->dims.unknown.count : -1; }

int64_t gwr_analysis_num_unused(const gwr_analysis *a) {
    if (!a) return -1;
    int64_t n = 0;
    for (int64_t i = 0; i < a->dims.nbind; i++) n += !a->dims.bind[i].used;
    return n;
}
const char *gwr_analysis_unused(const gwr_analysis *a, int64_t i) {
    for (int64_t k = 0; a && i >= 0 && k < a->dims.nbind; k++)
        if (!a->dims.bind[k].used && i-- == 0) return a->dims.bind[k].name;
    return NULL;
}
