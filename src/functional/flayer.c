/* flayer.c - signature recording (gwr_call) and the FLayerInfo memo.
 *
 * The memo lives in the network (an ir extension slot) and listens to it:
 * when a tensor is replaced, every FLayerInfo that referred to it is
 * updated through a tensor -> FLayerInfo index, in O(references); when a
 * layer is removed or pruned its entry is dropped.
 *
 * Where things are kept: a layer points at its FLayerInfo (gwr_layer's
 * flayer field), and a tensor of the memo's own network at its referrers
 * (memo_ref, an entry of the memo's pool). In a network of a million
 * layers, a hash map keyed by address costs a cache miss on every lookup,
 * insert and delete; a field in the object being worked on costs none. A
 * tensor of another network (an enclosing graph's, read by a subgraph's
 * FLayerInfo) belongs to another memo's pool, so this memo keeps its
 * referrers in a map instead. */
#include <stdlib.h>
#include <string.h>

#include "functional/functional_internal.h"
#include "ir/ir_api.h"

struct gwr_flayer {
    char *kind;
    gwr_layer *layer;
    gwr_args *inputs;
    gwr_tensor **outputs;
    int noutputs;
};

/* A tensor's referrers: the FLayerInfos whose arguments name it (an entry
 * per reference, so a tensor named twice by one FLayerInfo is listed
 * twice). Up to REFS_INLINE live in the entry itself (cap 0). A free pool
 * entry has n == -1 and the next free index in cap. */
#define REFS_INLINE 2
typedef struct refs {
    gwr_flayer **v;
    int32_t n, cap;
    gwr_flayer *inl[REFS_INLINE];
} refs;

typedef struct memo {
    gwr_network *net;
    int64_t count;    /* FLayerInfos on the network's layers */
    refs *pool;       /* referrers of the network's own tensors; [0] unused */
    int64_t npool, poolcap;
    int32_t free_ref; /* first free pool entry, or 0 */
    gwr_ptrmap foreign; /* tensor of another network -> refs (malloc'd) */
    int listener;
} memo;

static gwr_flayer **ref_items(refs *r) { return r->cap ? r->v : r->inl; }

static void flayer_free(gwr_flayer *f) {
    if (!f) return;
    gwr_free(f->kind);
    gwr_args_free(f->inputs);
    gwr_free(f->outputs);
    gwr_free(f);
}

static void memo_free(void *p) {
    memo *m = p;
    /* Called as the network is destroyed, before its layers are freed;
     * removed and pruned layers have given theirs back already. */
    for (int64_t i = 0; i < m->net->nlayers; i++) {
        gwr_layer *l = m->net->layers[i];
        flayer_free(l->flayer);
        gwr_ir_layer_set_flayer(l, NULL);
    }
    for (int64_t i = 1; i < m->npool; i++)
        if (m->pool[i].n >= 0 && m->pool[i].cap) gwr_free(m->pool[i].v);
    for (int64_t i = 0; i < m->foreign.cap; i++)
        if (m->foreign.keys[i]) {
            refs *r = m->foreign.vals[i];
            if (r->cap) gwr_free(r->v);
            gwr_free(r);
        }
    gwr_free(m->pool);
    gwr_ptrmap_free(&m->foreign);
    gwr_free(m);
}

/* t's referrers in m, or NULL; with `create`, an empty entry is made
 * (NULL: out of memory). The pointer is good until the next call that
 * creates an entry. */
static refs *ref_get(memo *m, gwr_tensor *t, int create) {
    if (gwr_ir_tnet(t) != m->net)
        return create ? gwr_ptrmap_get_or_new(&m->foreign, t, sizeof(refs)) : gwr_ptrmap_get(&m->foreign, t);
    if (t->memo_ref || !create) return t->memo_ref ? &m->pool[t->memo_ref] : NULL;
    int64_t i = m->free_ref;
    if (i) {
        m->free_ref = m->pool[i].cap;
    } else {
        if (m->npool >= UINT32_MAX) return NULL;
        if (gwr_grow((void **)&m->pool, sizeof *m->pool, &m->poolcap, m->npool + 1)) return NULL;
        i = m->npool++;
    }
    m->pool[i] = (refs){0};
    gwr_ir_tensor_set_memo_ref(t, (uint32_t)i);
    return &m->pool[i];
}

/* Drops t's (now empty or forgotten) entry. */
static void ref_release(memo *m, gwr_tensor *t) {
    refs *r;
    if (gwr_ir_tnet(t) != m->net) {
        if (!(r = gwr_ptrmap_get(&m->foreign, t))) return;
        gwr_ptrmap_del(&m->foreign, t);
        if (r->cap) gwr_free(r->v);
        gwr_free(r);
        return;
    }
    if (!t->memo_ref) return;
    r = &m->pool[t->memo_ref];
    if (r->cap) gwr_free(r->v);
    *r = (refs){.n = -1, .cap = m->free_ref};
    m->free_ref = (int32_t)t->memo_ref;
    gwr_ir_tensor_set_memo_ref(t, 0);
}

static int ref_push(refs *r, gwr_flayer *f) {
    if (!r->cap && r->n < REFS_INLINE) {
        r->inl[r->n++] = f;
        return 0;
    }
    if (!r->cap) {
        gwr_flayer **v = gwr_malloc(2 * REFS_INLINE * sizeof *v);
        if (!v) return -1;
        memcpy(v, r->inl, sizeof r->inl);
        r->v = v, r->cap = 2 * REFS_INLINE;
    } else if (r->n == r->cap) {
        if (r->cap > INT32_MAX / 2) return -1;
        gwr_flayer **v = gwr_realloc(r->v, 2 * (size_t)r->cap * sizeof *v);
        if (!v) return -1;
        r->v = v, r->cap *= 2;
    }
    r->v[r->n++] = f;
    return 0;
}

typedef struct {
    memo *m;
    gwr_flayer *f;
    int failed;
} ref_ctx;

static void ref_add(gwr_tensor *t, void *ctx) {
    ref_ctx *c = ctx;
    if (!t) return;
    refs *r = ref_get(c->m, t, 1);
    if (!r || ref_push(r, c->f)) {
        c->failed = 1;
        if (r && !r->n) ref_release(c->m, t);
    }
}

static void ref_del(gwr_tensor *t, void *ctx) {
    ref_ctx *c = ctx;
    refs *r = t ? ref_get(c->m, t, 0) : NULL;
    if (!r) return;
    gwr_flayer **v = ref_items(r);
    for (int32_t i = 0; i < r->n; i++)
        if (v[i] == c->f) {
            v[i] = v[--r->n];
            break;
        }
    if (!r->n) ref_release(c->m, t);
}

static void memo_drop_layer(memo *m, gwr_layer *l) {
    gwr_flayer *f = l->flayer;
    if (!f) return;
    gwr_ir_layer_set_flayer(l, NULL);
    ref_ctx c = {m, f, 0};
    gwr_fn_args_each_tensor(f->inputs, ref_del, &c);
    m->count--;
    flayer_free(f);
}

/* ---- listener callbacks ---- */

static void on_layer_removed(void *ctx, gwr_layer *l) { memo_drop_layer(ctx, l); }

static void on_layer_dropped(void *ctx, gwr_layer *l) {
    memo *m = ctx;
    memo_drop_layer(m, l);
    /* Arguments naming an output of a pruned layer become none. */
    for (int o = 0; o < l->noutputs; o++) {
        gwr_tensor *t = &gwr_ir_outputs(l)[o];
        refs *r = t->memo_ref ? ref_get(m, t, 0) : NULL;
        if (!r) continue;
        gwr_flayer **v = ref_items(r);
        for (int32_t i = 0; i < r->n; i++) gwr_fn_args_replace_tensor(v[i]->inputs, t, NULL);
        ref_release(m, t);
    }
}

static void on_tensor_replaced(void *ctx, gwr_tensor *old_t, gwr_tensor *new_t) {
    memo *m = ctx;
    refs *r = ref_get(m, old_t, 0);
    if (!r) return;
    /* Each reference to old_t becomes one to new_t (replacing is
     * idempotent, so an FLayerInfo listed twice is fine). */
    for (int32_t i = 0; i < r->n; i++) gwr_fn_args_replace_tensor(ref_items(r)[i]->inputs, old_t, new_t);
    /* Making new_t's entry may move the pool: old_t's is found again. */
    refs *nr = ref_get(m, new_t, 1);
    r = ref_get(m, old_t, 0);
    for (int32_t i = 0; nr && i < r->n; i++)
        if (ref_push(nr, ref_items(r)[i])) break;
    ref_release(m, old_t);
}

static memo *memo_of(gwr_network *net, int create) {
    memo *m = gwr_ir_ext_get(net, GWR_EXT_FLAYER_MEMO);
    if (m || !create) return m;
    if (!(m = gwr_calloc(1, sizeof *m))) return NULL;
    m->net = net;
    m->npool = 1; /* entry 0 means none */
    gwr_listener ls = {.layer_removed = on_layer_removed,
                       .layer_dropped = on_layer_dropped,
                       .tensor_replaced = on_tensor_replaced,
                       .ctx = m};
    if ((m->listener = gwr_network_add_listener(net, &ls)) < 0) {
        gwr_free(m);
        return NULL;
    }
    gwr_ir_ext_set(net, GWR_EXT_FLAYER_MEMO, m, memo_free);
    return m;
}

#define MAX_OUTS 64

/* Records an FLayerInfo on layer l: takes `bound` (the arguments bound
 * onto kind's signature), copies the n outputs. */
static gwr_status memo_record(gwr_network *net, gwr_layer *l, const char *kind, gwr_args *bound,
                              gwr_tensor *const *o, int n) {
    memo *m = memo_of(net, 1);
    gwr_flayer *f = gwr_calloc(1, sizeof *f);
    if (!m || !f || !(f->kind = gwr_strdup(kind)) || !(f->outputs = gwr_malloc((size_t)(n ? n : 1) * sizeof *o))) {
        if (f) gwr_free(f->kind);
        gwr_free(f);
        gwr_args_free(bound);
        return gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
    }
    f->layer = l;
    f->inputs = bound;
    f->noutputs = n;
    if (n) memcpy(f->outputs, o, (size_t)n * sizeof *o);
    ref_ctx c = {m, f, 0};
    gwr_fn_args_each_tensor(bound, ref_add, &c);
    if (c.failed) {
        gwr_fn_args_each_tensor(bound, ref_del, &c);
        flayer_free(f);
        return gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
    }
    gwr_ir_layer_set_flayer(l, f);
    m->count++;
    return GWR_OK;
}

/* Binds args onto the signature of fn into a new list; message on net. */
static gwr_status bind_args(gwr_network *net, const gwr_fn_functional *fn, const char *kind, const gwr_args *args,
                            gwr_args **out) {
    gwr_args *bound = gwr_args_clone(fn->params);
    if (!bound) return gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
    for (int i = 0; args && i < gwr_args_count(args); i++) {
        const char *name = gwr_args_name(args, i);
        int j = gwr_args_find(bound, name);
        gwr_status s = j < 0 ? gwr_ir_error(net, GWR_ERR_INVALID_ARG, "%s: unknown argument '%s'", kind, name)
                             : gwr_fn_args_set_item(bound, j, args, i);
        if (s) {
            if (s == GWR_ERR_NOMEM) gwr_ir_error(net, s, "out of memory");
            gwr_args_free(bound);
            return s;
        }
    }
    *out = bound;
    return GWR_OK;
}

gwr_status gwr_flayer_record(gwr_network *net, gwr_layer *l, const char *kind, const gwr_args *args) {
    if (!net || !l || !kind) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_flayer_record: NULL argument");
    if (gwr_layer_network(l) != net)
        return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_flayer_record: layer '%s' is not in this network",
                            gwr_layer_name(l));
    if (gwr_layer_is_removed(l))
        return gwr_ir_error(net, GWR_ERR_STATE, "gwr_flayer_record: layer '%s' is removed", gwr_layer_name(l));
    if (gwr_flayer_get(net, l))
        return gwr_ir_error(net, GWR_ERR_DUPLICATE, "gwr_flayer_record: layer '%s' already has an FLayerInfo",
                            gwr_layer_name(l));
    const gwr_fn_functional *fn = gwr_fn_functional_find(kind);
    if (!fn) return gwr_ir_error(net, GWR_ERR_NOT_FOUND, "gwr_flayer_record: no functional '%s' is registered", kind);
    gwr_args *bound;
    gwr_status s = bind_args(net, fn, kind, args, &bound);
    if (s) return s;
    gwr_tensor *outs[MAX_OUTS];
    int n = gwr_layer_num_outputs(l);
    if (n > MAX_OUTS) {
        gwr_args_free(bound);
        return gwr_ir_error(net, GWR_ERR_UNSUPPORTED, "gwr_flayer_record: more than %d outputs", MAX_OUTS);
    }
    for (int i = 0; i < n; i++) outs[i] = gwr_layer_output(l, i);
    return memo_record(net, l, kind, bound, outs, n);
}

/* ---- gwr_call ---- */

gwr_status gwr_call(gwr_network *net, const char *kind, const gwr_args *args, gwr_tensor **outs, int max_outs,
                    int *nouts) {
    if (!net || !kind) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_call: NULL argument");
    if (max_outs < 0 || (max_outs && !outs)) return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_call: bad outs");
    const gwr_fn_functional *fn = gwr_fn_functional_find(kind);
    if (!fn) return gwr_ir_error(net, GWR_ERR_NOT_FOUND, "gwr_call: no functional '%s' is registered", kind);
    /* Bind the arguments onto the signature, in its order. */
    gwr_args *bound;
    gwr_status s = bind_args(net, fn, kind, args, &bound);
    if (s) return s;
    gwr_tensor *local[MAX_OUTS];
    gwr_tensor **o = outs ? outs : local;
    int cap = outs ? max_outs : MAX_OUTS, n = 0;
    int64_t before = net->nlayers;
    gwr_layer *last_before = net->last_added;
    s = fn->fn(net, bound, o, cap, &n, fn->user);
    if (!s && (net->nlayers == before || net->last_added == last_before || !net->last_added))
        s = gwr_ir_error(net, GWR_ERR_STATE, "%s: the functional created no layer", kind);
    if (!s && (n < 0 || n > cap)) s = gwr_ir_error(net, GWR_ERR_STATE, "%s: bad output count %d", kind, n);
    if (s) {
        /* What a failed call built is dead: flag it for prune. */
        for (int64_t i = before; i < net->nlayers; i++) gwr_layer_mark_as_removed(net->layers[i]);
        gwr_args_free(bound);
        return s;
    }
    if ((s = memo_record(net, net->last_added, kind, bound, o, n))) return s;
    if (nouts) *nouts = n;
    return GWR_OK;
}

/* ---- the FLayerInfo API ---- */

gwr_flayer *gwr_flayer_get(const gwr_network *net, const gwr_layer *l) {
    return net && l && l->net == net ? l->flayer : NULL;
}

int64_t gwr_flayer_memo_size(const gwr_network *net) {
    memo *m = net ? memo_of((gwr_network *)net, 0) : NULL;
    return m ? m->count : 0;
}

const char *gwr_flayer_kind(const gwr_flayer *f) { return f ? f->kind : NULL; }
gwr_layer *gwr_flayer_layer(const gwr_flayer *f) { return f ? f->layer : NULL; }
const gwr_args *gwr_flayer_inputs(const gwr_flayer *f) { return f ? f->inputs : NULL; }
int gwr_flayer_num_outputs(const gwr_flayer *f) { return f ? f->noutputs : -1; }
gwr_tensor *gwr_flayer_output(const gwr_flayer *f, int i) {
    return f && i >= 0 && i < f->noutputs ? f->outputs[i] : NULL;
}

gwr_tensor *gwr_flayer_get_input(const gwr_flayer *f, const char *name) {
    gwr_tensor *t = NULL;
    if (!f || !name || gwr_args_get_tensor(f->inputs, name, &t)) return NULL;
    return t;
}

gwr_args *gwr_flayer_clone_inputs(const gwr_flayer *f) {
    if (!f) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_flayer_clone_inputs: NULL FLayerInfo");
        return NULL;
    }
    return gwr_args_clone(f->inputs);
}

gwr_status gwr_flayer_replace_input_with(gwr_flayer *f, gwr_tensor *src, gwr_tensor *dst) {
    if (!f || !src || !dst) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_flayer_replace_input_with: NULL argument");
    gwr_layer *l = f->layer;
    gwr_network *net = gwr_layer_network(l);
    memo *m = memo_of(net, 0);
    refs *r = m ? ref_get(m, src, 0) : NULL;
    int named = 0;
    for (int32_t i = 0; r && i < r->n; i++) named |= ref_items(r)[i] == f;
    if (!named) return gwr_ir_error(net, GWR_ERR_NOT_FOUND, "%s on '%s' has no input '%s'", f->kind, l->name, src->name);
    if (src->dtype != GWR_UNDEFINED && dst->dtype != GWR_UNDEFINED && src->dtype != dst->dtype)
        return gwr_ir_error(net, GWR_ERR_TYPE, "%s on '%s': cannot replace %s input '%s' with %s '%s'", f->kind,
                            l->name, gwr_dtype_name(src->dtype), src->name, gwr_dtype_name(dst->dtype), dst->name);
    /* The layer first: its checks (scope, cycle) can refuse. */
    for (int i = 0; i < l->ninputs; i++)
        if (l->inputs[i] == src) {
            gwr_status s = gwr_layer_set_input(l, i, dst);
            if (s) {
                for (int k = 0; k < i; k++)
                    if (l->inputs[k] == dst) gwr_layer_set_input(l, k, src); /* undo */
                return s;
            }
        }
    ref_ctx c = {m, f, 0};
    gwr_fn_args_each_tensor(f->inputs, ref_del, &c); /* re-index f */
    gwr_fn_args_replace_tensor(f->inputs, src, dst);
    gwr_fn_args_each_tensor(f->inputs, ref_add, &c);
    return c.failed ? gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory") : GWR_OK;
}

gwr_status gwr_flayer_replace_outputs_uses_with(gwr_flayer *f, int n, gwr_tensor *const *new_outs) {
    if (!f || (n && !new_outs)) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_flayer_replace_outputs_uses_with: NULL argument");
    gwr_network *net = gwr_layer_network(f->layer);
    if (n != f->noutputs)
        return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "%s on '%s' has %d outputs, got %d replacements", f->kind,
                            f->layer->name, f->noutputs, n);
    /* Check everything before changing anything. */
    for (int i = 0; i < n; i++) {
        gwr_tensor *o = f->outputs[i], *nw = new_outs[i];
        if (!nw) return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "%s: replacement %d is NULL", f->kind, i);
        gwr_status s = o == nw ? GWR_OK : gwr_ir_replace_check(o, nw, NULL, NULL);
        if (s) return s;
    }
    for (int i = 0; i < n; i++) {
        gwr_status s = gwr_tensor_replace_all_uses_with(f->outputs[i], new_outs[i]);
        if (s) return s;
    }
    return GWR_OK;
}
