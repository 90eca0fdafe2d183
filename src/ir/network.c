/* network.c - networks, layers and tensors: creation, names, types,
 * inputs and outputs, listeners, freeing. Graph algorithms (rewiring,
 * cycles, order, prune, verify) are in graph.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir_internal.h"
#include "ir/ir_graph.h"

/* ---- errors ---- */

gwr_status gwr_ir_error(gwr_network *net, gwr_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (net) gwr_vfmt_error(net->errmsg, s, fmt, ap);
    else gwr_vfmt_error((char *)gwr_last_errmsg(), s, fmt, ap);
    va_end(ap);
    return s;
}

const char *gwr_network_errmsg(const gwr_network *net) {
    return net ? net->errmsg : gwr_last_errmsg();
}

/* ---- name maps: open addressing over object pointers, key = obj->name ---- */

static const char *obj_name(const void *obj) { return *(const char *const *)obj; }

uint32_t gwr_ir_name_hash(const char *name) {
    /* gwr_hash_str already folds its high half into the low one. */
    uint32_t x = (uint32_t)gwr_hash_str(name);
    return x ? x : 1;
}

static void *slot_obj(const gwr_name_slot *s) {
    void *obj;
    memcpy(&obj, s->obj, sizeof obj);
    return obj;
}

static void slot_set(gwr_name_slot *s, void *obj, uint32_t h) {
    s->hash = h;
    memcpy(s->obj, &obj, sizeof obj);
}

static int namemap_resize(gwr_namemap *m, int64_t ncap) {
    gwr_name_slot *slots = calloc((size_t)ncap, sizeof *slots);
    if (!slots) return -1;
    gwr_advise_huge(slots, (size_t)ncap * sizeof *slots);
    for (int64_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].hash) continue;
        int64_t j = (int64_t)(m->slots[i].hash & (uint64_t)(ncap - 1));
        while (slots[j].hash) j = (j + 1) & (ncap - 1);
        slots[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = slots, m->cap = ncap;
    return 0;
}

/* The slot holding `name` (hash h), or -1. */
static int64_t namemap_find(const gwr_namemap *m, const char *name, uint32_t h) {
    if (!m->cap) return -1;
    int64_t j = (int64_t)(h & (uint64_t)(m->cap - 1));
    while (m->slots[j].hash) {
        if (m->slots[j].hash == h && !strcmp(obj_name(slot_obj(&m->slots[j])), name)) return j;
        j = (j + 1) & (m->cap - 1);
    }
    return -1;
}

void *gwr_ir_namemap_get_h(const gwr_namemap *m, const char *name, uint32_t h) {
    int64_t j = namemap_find(m, name, h);
    return j >= 0 ? slot_obj(&m->slots[j]) : NULL;
}

/* Starts loading the slot a lookup of hash h will read first: the maps of a
 * big network miss the cache on every lookup, and add_layer has other work
 * to overlap with the miss. */
void gwr_ir_namemap_prefetch(const gwr_namemap *m, uint32_t h) {
    if (!m->cap) return;
    __builtin_prefetch(&m->slots[h & (uint64_t)(m->cap - 1)]);
}

void *gwr_ir_namemap_get(const gwr_namemap *m, const char *name) {
    return name ? gwr_ir_namemap_get_h(m, name, gwr_ir_name_hash(name)) : NULL;
}

/* Caller has checked the name is free; h is gwr_ir_name_hash(obj's name). */
int gwr_ir_namemap_put_h(gwr_namemap *m, void *obj, uint32_t h) {
    if ((m->count + 1) * 4 > m->cap * 3 && namemap_resize(m, m->cap ? m->cap * 2 : 16)) return -1;
    int64_t j = (int64_t)(h & (uint64_t)(m->cap - 1));
    while (m->slots[j].hash) j = (j + 1) & (m->cap - 1);
    slot_set(&m->slots[j], obj, h);
    m->count++;
    return 0;
}

int gwr_ir_namemap_put(gwr_namemap *m, void *obj) {
    return gwr_ir_namemap_put_h(m, obj, gwr_ir_name_hash(obj_name(obj)));
}

void gwr_ir_namemap_del_h(gwr_namemap *m, void *obj, uint32_t h) {
    if (!m->cap) return;
    /* obj is in the map at most once: look for the pointer itself, with no
     * name to read and compare. */
    int64_t mask = m->cap - 1, i = (int64_t)(h & (uint64_t)mask);
    for (;; i = (i + 1) & mask) {
        if (!m->slots[i].hash) return;
        if (m->slots[i].hash == h && slot_obj(&m->slots[i]) == obj) break;
    }
    int64_t j = i;
    for (;;) {
        m->slots[i].hash = 0;
        for (;;) {
            j = (j + 1) & mask;
            if (!m->slots[j].hash) {
                m->count--;
                return;
            }
            int64_t home = (int64_t)(m->slots[j].hash & (uint64_t)mask);
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) break;
        }
        m->slots[i] = m->slots[j];
        i = j;
    }
}

void gwr_ir_namemap_del(gwr_namemap *m, void *obj) {
    gwr_ir_namemap_del_h(m, obj, gwr_ir_name_hash(obj_name(obj)));
}

/* Keeps net->name_floor above the number a name ends with when it looks
 * generated (its last '_' followed by digits; see next_name). */
static void note_name(gwr_network *net, const char *name) {
    const char *u = strrchr(name, '_');
    if (!u || u[1] < '0' || u[1] > '9') return;
    uint64_t v = 0;
    for (const char *p = u + 1; *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - 9) / 10) {
            net->name_floor = UINT64_MAX; /* no counter gets there */
            return;
        }
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (v >= net->name_floor) net->name_floor = v + 1;
}

/* Every name that enters one of net's maps goes through here, except those
 * add_layer makes from the counter (they need no note: see next_name). */
static int name_put(gwr_network *net, gwr_namemap *m, void *obj, uint32_t h) {
    note_name(net, obj_name(obj));
    return gwr_ir_namemap_put_h(m, obj, h);
}

/* ---- generated names (see gwr_network.gen) ---- */

#define GWR_GEN_MAX (INT64_C(1) << 31)

/* n of a name "..._<n>" (*k = 0) or "..._<n>:<k>", as next_name and
 * add_layer write them (no leading zeros); -1 for any other name. */
static int64_t gen_parse(const char *name, int *k) {
    const char *end = name + strlen(name), *p = end;
    *k = 0;
    while (p > name && p[-1] >= '0' && p[-1] <= '9') p--;
    if (p == end || end - p > 10 || (*p == '0' && end - p > 1)) return -1;
    if (p > name && p[-1] == ':') {
        int v = 0;
        for (const char *q = p; q < end; q++) v = v * 10 + (*q - '0');
        if (v > (1 << 24)) return -1;
        *k = v;
        end = p - 1, p = end;
        while (p > name && p[-1] >= '0' && p[-1] <= '9') p--;
        if (p == end || end - p > 10 || (*p == '0' && end - p > 1)) return -1;
    }
    if (p == name || p[-1] != '_') return -1;
    int64_t v = 0;
    for (const char *q = p; q < end; q++) v = v * 10 + (*q - '0');
    return v < GWR_GEN_MAX ? v : -1;
}

static int gen_marked(const gwr_layer *l) {
    if (l->flags & LF_GEN_NAME) return 1;
    for (int o = 0; o < l->noutputs; o++)
        if (gwr_ir_outputs(l)[o].flags & TF_GEN_NAME) return 1;
    return 0;
}

/* After a mark was taken off l or one of its outputs (whose name gave n). */
static void gen_release(gwr_network *net, gwr_layer *l, int64_t n) {
    if (n >= 0 && n < net->gen_cap && net->gen[n] == l && !gen_marked(l)) net->gen[n] = NULL;
}

static gwr_layer *gen_layer(const gwr_network *net, const char *name) {
    int k;
    int64_t n = gen_parse(name, &k);
    if (n < 0 || k || n >= net->gen_cap || !net->gen[n]) return NULL;
    gwr_layer *l = net->gen[n];
    return (l->flags & LF_GEN_NAME) && !strcmp(l->name, name) ? l : NULL;
}

static gwr_tensor *gen_tensor(const gwr_network *net, const char *name) {
    int k;
    int64_t n = gen_parse(name, &k);
    if (n < 0 || n >= net->gen_cap || !net->gen[n] || k >= net->gen[n]->noutputs) return NULL;
    gwr_tensor *t = &gwr_ir_outputs(net->gen[n])[k];
    return (t->flags & TF_GEN_NAME) && !strcmp(t->name, name) ? t : NULL;
}

static gwr_layer *find_layer_h(const gwr_network *net, const char *name, uint32_t h) {
    gwr_layer *l = gwr_ir_namemap_get_h(&net->layer_names, name, h);
    return l ? l : net->ngen_layers ? gen_layer(net, name) : NULL;
}

static gwr_tensor *find_tensor_h(const gwr_network *net, const char *name, uint32_t h) {
    gwr_tensor *t = gwr_ir_namemap_get_h(&net->tensor_names, name, h);
    return t ? t : net->ngen_tensors ? gen_tensor(net, name) : NULL;
}

gwr_layer *gwr_ir_find_layer(const gwr_network *net, const char *name) {
    return find_layer_h(net, name, gwr_ir_name_hash(name));
}

gwr_tensor *gwr_ir_find_tensor(const gwr_network *net, const char *name) {
    return find_tensor_h(net, name, gwr_ir_name_hash(name));
}

void gwr_ir_unname_layer(gwr_network *net, gwr_layer *l, uint32_t h) {
    if (!(l->flags & LF_GEN_NAME)) {
        gwr_ir_namemap_del_h(&net->layer_names, l, h ? h : gwr_ir_name_hash(l->name));
        return;
    }
    int k;
    l->flags &= (uint8_t)~LF_GEN_NAME;
    net->ngen_layers--;
    gen_release(net, l, gen_parse(l->name, &k));
}

/* Takes the TF_GEN_NAME mark off t (found through net->gen no longer). */
static void gen_unmark_tensor(gwr_network *net, gwr_tensor *t) {
    int k;
    t->flags &= (uint8_t)~TF_GEN_NAME;
    net->ngen_tensors--;
    gen_release(net, t->producer, gen_parse(t->name, &k));
}

void gwr_ir_unname_tensor(gwr_network *net, gwr_tensor *t, uint32_t h) {
    if (t->flags & TF_GEN_NAME) gen_unmark_tensor(net, t);
    else gwr_ir_namemap_del_h(&net->tensor_names, t, h ? h : gwr_ir_name_hash(t->name));
}

/* ---- interning (root network) ---- */

const char *gwr_ir_intern(gwr_network *net, const char *s) {
    gwr_network *r = net->root;
    const char *p = gwr_strmap_get(&r->strings, s);
    if (p) return p;
    char *d = gwr_arena_strdup(&r->arena, s);
    if (!d || gwr_strmap_put(&r->strings, d, d)) return NULL;
    return d;
}

static uint64_t shape_hash(int rank, const gwr_dim *dims) {
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)rank;
    for (int i = 0; i < rank; i++) h = (h ^ (uint64_t)dims[i]) * 0x100000001b3ULL;
    return h ^ (h >> 31);
}

static int shape_eq(const gwr_ishape *s, int rank, const gwr_dim *dims) {
    return s->rank == rank && (!rank || !memcmp(s->dims, dims, (size_t)rank * sizeof *dims));
}

const gwr_ishape *gwr_ir_intern_shape(gwr_network *net, int rank, const gwr_dim *dims) {
    if (rank < 0) return NULL;
    gwr_network *r = net->root;
    /* Builders set the same shape over and over: a one-entry cache. */
    if (r->last_shape && shape_eq(r->last_shape, rank, dims)) return r->last_shape;
    if (r->shapes_cap) {
        uint64_t j = shape_hash(rank, dims) & (uint64_t)(r->shapes_cap - 1);
        while (r->shapes[j]) {
            if (shape_eq(r->shapes[j], rank, dims)) return r->last_shape = r->shapes[j];
            j = (j + 1) & (uint64_t)(r->shapes_cap - 1);
        }
    }
    if ((r->nshapes + 1) * 2 > r->shapes_cap) {
        int64_t ncap = r->shapes_cap ? r->shapes_cap * 2 : 64;
        void **ns = calloc((size_t)ncap, sizeof *ns);
        if (!ns) return NULL;
        for (int64_t i = 0; i < r->shapes_cap; i++) {
            gwr_ishape *s = r->shapes[i];
            if (!s) continue;
            uint64_t j = shape_hash(s->rank, s->dims) & (uint64_t)(ncap - 1);
            while (ns[j]) j = (j + 1) & (uint64_t)(ncap - 1);
            ns[j] = s;
        }
        free(r->shapes);
        r->shapes = ns, r->shapes_cap = ncap;
    }
    gwr_ishape *s = gwr_arena_alloc(&r->arena, sizeof *s + (size_t)rank * sizeof(gwr_dim));
    if (!s) return NULL;
    s->rank = rank;
    if (rank) memcpy(s->dims, dims, (size_t)rank * sizeof *dims);
    uint64_t j = shape_hash(rank, dims) & (uint64_t)(r->shapes_cap - 1);
    while (r->shapes[j]) j = (j + 1) & (uint64_t)(r->shapes_cap - 1);
    r->shapes[j] = s;
    r->nshapes++;
    r->last_shape = s;
    return s;
}

/* ---- networks ---- */

static gwr_network *network_alloc(const char *name) {
    gwr_network *net = calloc(1, sizeof *net);
    if (!net) {
        gwr_set_last_error(GWR_ERR_NOMEM, "gwr_network_new: out of memory");
        return NULL;
    }
    net->name = gwr_strdup(name ? name : "");
    if (!net->name) {
        free(net);
        gwr_set_last_error(GWR_ERR_NOMEM, "gwr_network_new: out of memory");
        return NULL;
    }
    net->root = net;
    gwr_arena_init(&net->arena);
    return net;
}

gwr_network *gwr_network_new(const char *name) { return network_alloc(name); }

gwr_network *gwr_network_new_subgraph(gwr_network *parent, const char *name) {
    if (!parent) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_new_subgraph: NULL parent");
        return NULL;
    }
    gwr_network *net = network_alloc(name);
    if (!net) return NULL;
    net->parent = parent;
    net->root = parent->root;
    return net;
}

/* Drops the value type kept for a tensor of a non-tensor kind. */
static void tensor_drop_vtype(gwr_tensor *t) {
    if (t->kind == GWR_VALUE_TENSOR) return;
    gwr_network *net = gwr_ir_tnet(t);
    gwr_type *ty = gwr_ptrmap_get(&net->vtypes, t);
    if (ty) {
        gwr_ir_type_free(ty);
        gwr_ptrmap_del(&net->vtypes, t);
    }
    t->kind = GWR_VALUE_TENSOR;
}

static void tensor_free_fields(gwr_tensor *t) {
    if (t->cap > 1) free(t->uses.many);
    tensor_drop_vtype(t);
    if (t->flags & TF_OWN_NAME) free((void *)t->name);
}

void gwr_ir_layer_free(gwr_layer *l) {
    gwr_ir_attrs_free(l);
    for (int i = 0; i < l->noutputs; i++) tensor_free_fields(&gwr_ir_outputs(l)[i]);
    if (l->flags & LF_OWN_NAME) free((void *)l->name);
    if (l->flags & LF_OWN_INPUTS) free(l->inputs);
    free(l);
}

void gwr_network_free(gwr_network *net) {
    if (!net) return;
    if (net->driven) {
        gwr_ir_error(net, GWR_ERR_STATE, "gwr_network_free: network '%s' is being rewritten", net->name);
        return;
    }
    if (net->owner) {
        gwr_ir_error(net, GWR_ERR_STATE,
                     "gwr_network_free: subgraph '%s' is owned by layer '%s'; free its network",
                     net->name, net->owner->name);
        return;
    }
    gwr_ir_network_destroy(net);
}

/* Frees everything. A subgraph detaches its layers' uses of tensors of
 * enclosing networks, unless those are being torn down too. */
void gwr_ir_network_destroy(gwr_network *net) {
    int outer = net->parent != NULL;
    net->tearing_down = 1;
    for (int e = 0; e < GWR_EXT_COUNT; e++)
        if (net->ext[e] && net->ext_free[e]) net->ext_free[e](net->ext[e]);
    for (int64_t i = 0; i < net->nlayers; i++) {
        gwr_layer *l = net->layers[i];
        if (outer)
            for (int s = 0; s < l->ninputs; s++) {
                gwr_tensor *t = l->inputs[s];
                if (t && gwr_ir_tnet(t) != net && !gwr_ir_tnet(t)->tearing_down) gwr_ir_use_del(t, l, s);
            }
    }
    /* Subgraphs first, while every tensor they read is still alive. */
    for (int64_t i = 0; i < net->nlayers; i++) gwr_ir_attrs_free(net->layers[i]);
    for (int64_t i = 0; i < net->nlayers; i++) gwr_ir_layer_free(net->layers[i]);
    for (int64_t i = 0; i < net->ninputs; i++) {
        tensor_free_fields(net->inputs[i]);
        free(net->inputs[i]);
    }
    gwr_ir_props_destroy(net);
    for (int64_t i = 0; i < net->vtypes.cap; i++)
        if (net->vtypes.keys[i]) gwr_ir_type_free(net->vtypes.vals[i]);
    gwr_ptrmap_free(&net->vtypes);
    free(net->layers), free(net->inputs), free(net->outputs), free(net->listeners);
    free(net->layer_names.slots), free(net->tensor_names.slots), free(net->gen);
    if (net->root == net) {
        gwr_arena_free(&net->arena);
        gwr_strmap_free(&net->strings);
        gwr_strmap_free(&net->custom_ops);
        gwr_strmap_free(&net->sym_index);
        free(net->shapes);
        free(net->syms);
    }
    free(net->name);
    free(net);
}

const char *gwr_network_name(const gwr_network *net) { return net ? net->name : NULL; }

gwr_status gwr_network_set_name(gwr_network *net, const char *name) {
    if (!net || !name) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_set_name: NULL argument");
    char *d = gwr_strdup(name);
    if (!d) return gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
    free(net->name);
    net->name = d;
    return GWR_OK;
}

gwr_network *gwr_network_parent(const gwr_network *net) { return net ? net->parent : NULL; }
gwr_layer *gwr_network_owner(const gwr_network *net) { return net ? net->owner : NULL; }

void *gwr_ir_ext_get(const gwr_network *net, gwr_ext_slot slot) { return net->ext[slot]; }

void gwr_ir_ext_set(gwr_network *net, gwr_ext_slot slot, void *p, void (*free_fn)(void *)) {
    net->ext[slot] = p;
    net->ext_free[slot] = free_fn;
}

int gwr_ir_in_scope(const gwr_network *anc, const gwr_network *net) {
    for (; net; net = net->parent)
        if (net == anc) return 1;
    return 0;
}

/* ---- symbols ---- */

gwr_dim gwr_network_dim_sym(gwr_network *net, const char *name) {
    if (!net || !name || !*name) {
        if (net) gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_network_dim_sym: empty symbol name");
        else gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_dim_sym: NULL network");
        return GWR_DIM_UNKNOWN;
    }
    gwr_network *r = net->root;
    intptr_t idx = (intptr_t)gwr_strmap_get(&r->sym_index, name);
    if (idx) return GWR_DIM_SYM_BASE - (idx - 1);
    const char *s = gwr_ir_intern(net, name);
    if (!s || gwr_grow((void **)&r->syms, sizeof *r->syms, &r->syms_cap, r->nsyms + 1) ||
        gwr_strmap_put(&r->sym_index, s, (void *)(intptr_t)(r->nsyms + 1))) {
        gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
        return GWR_DIM_UNKNOWN;
    }
    r->syms[r->nsyms] = s;
    return GWR_DIM_SYM_BASE - r->nsyms++;
}

const char *gwr_network_dim_name(const gwr_network *net, gwr_dim d) {
    if (!net || !GWR_DIM_IS_SYM(d)) return NULL;
    int64_t idx = GWR_DIM_SYM_BASE - d;
    return idx < net->root->nsyms ? net->root->syms[idx] : NULL;
}

/* ---- names ---- */

/* Writes "<base>_<n>" with the network's next counter value into buf (at
 * least 160 bytes; base is cut at 120) and its hash into *hash. *fresh (may
 * be NULL) is set when the name is known to be free in both maps without
 * looking: n >= name_floor. (Names generated before have smaller numbers;
 * any other name equal to this one would end in "_<n>" too and have raised
 * the floor past n when it was put; so would one equal to "<this>:<i>".) */
static const char *next_name(gwr_network *net, const char *base, char *buf, uint32_t *hash, int *fresh) {
    size_t n = strlen(base);
    if (n > 120) n = 120;
    memmove(buf, base, n);
    buf[n++] = '_';
    char digits[24];
    int k = 0;
    uint64_t v = net->name_counter++;
    if (fresh) *fresh = v >= net->name_floor;
    do digits[k++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    for (int i = 0; i < k; i++) buf[n + (size_t)i] = digits[k - 1 - i];
    buf[n + (size_t)k] = 0;
    *hash = gwr_ir_name_hash(buf);
    return buf;
}

/* next_name until the name is free in m. */
static const char *unique_tensor_name(gwr_network *net, const char *base, char *buf, uint32_t *hash) {
    char tmp[128]; /* buf may hold base itself */
    size_t bl = strlen(base);
    if (bl > 120) bl = 120;
    memcpy(tmp, base, bl);
    tmp[bl] = 0;
    do next_name(net, tmp, buf, hash, NULL);
    while (find_tensor_h(net, buf, *hash));
    return buf;
}

static int name_ok(gwr_network *net, const char *name, const char *what) {
    if (!*name) {
        gwr_ir_error(net, GWR_ERR_INVALID_ARG, "empty %s name", what);
        return 0;
    }
    return 1;
}

gwr_status gwr_layer_set_name(gwr_layer *l, const char *name) {
    if (!l || !name) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_layer_set_name: NULL argument");
    gwr_network *net = l->net;
    if (!strcmp(l->name, name)) return GWR_OK;
    if (!name_ok(net, name, "layer")) return GWR_ERR_INVALID_ARG;
    if (gwr_ir_find_layer(net, name))
        return gwr_ir_error(net, GWR_ERR_DUPLICATE, "layer name '%s' is already taken", name);
    char *d = gwr_strdup(name);
    if (!d) return gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
    gwr_ir_unname_layer(net, l, 0);
    if (l->flags & LF_OWN_NAME) free((void *)l->name);
    l->name = d;
    l->flags |= LF_OWN_NAME;
    if (name_put(net, &net->layer_names, l, gwr_ir_name_hash(d))) return gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
    return GWR_OK;
}

/* Renames without checks (the caller knows the name is free). */
gwr_status gwr_ir_tensor_rename(gwr_tensor *t, const char *name) {
    char *d = gwr_strdup(name);
    if (!d) return gwr_ir_error(gwr_ir_tnet(t), GWR_ERR_NOMEM, "out of memory");
    gwr_ir_unname_tensor(gwr_ir_tnet(t), t, 0);
    if (t->flags & TF_OWN_NAME) free((void *)t->name);
    t->name = d;
    t->flags |= TF_OWN_NAME;
    if (name_put(gwr_ir_tnet(t), &gwr_ir_tnet(t)->tensor_names, t, gwr_ir_name_hash(d)))
        return gwr_ir_error(gwr_ir_tnet(t), GWR_ERR_NOMEM, "out of memory");
    return GWR_OK;
}

static gwr_status gwr_tensor_set_name_impl(gwr_tensor *t, const char *name) {
    if (!t || !name) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_tensor_set_name: NULL argument");
    if (!strcmp(t->name, name)) return GWR_OK;
    if (!name_ok(gwr_ir_tnet(t), name, "tensor")) return GWR_ERR_INVALID_ARG;
    if (gwr_ir_find_tensor(gwr_ir_tnet(t), name))
        return gwr_ir_error(gwr_ir_tnet(t), GWR_ERR_DUPLICATE, "tensor name '%s' is already taken", name);
    return gwr_ir_tensor_rename(t, name);
}

gwr_status gwr_tensor_set_name(gwr_tensor *t, const char *name) {
    gwr_status s = gwr_tensor_set_name_impl(t, name);
    if (s == GWR_OK) GWR_IR_NOTIFY(gwr_ir_tnet(t), tensor_modified, t);
    return s;
}

/* Gives t a malloc'd copy of its name (output 0 shares its layer's block
 * copy, which must not travel to another tensor). */
gwr_status gwr_ir_tensor_own_name(gwr_tensor *t) {
    gwr_network *net = gwr_ir_tnet(t);
    if (t->flags & TF_GEN_NAME) { /* into the map, where swap_names works */
        if (gwr_ir_namemap_put_h(&net->tensor_names, t, gwr_ir_name_hash(t->name)))
            return gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
        gen_unmark_tensor(net, t);
    }
    if (t->flags & TF_OWN_NAME) return GWR_OK;
    char *d = gwr_strdup(t->name);
    if (!d) return gwr_ir_error(gwr_ir_tnet(t), GWR_ERR_NOMEM, "out of memory");
    /* Same string, same hash: the map entry (the object) stays valid. */
    t->name = d;
    t->flags |= TF_OWN_NAME;
    return GWR_OK;
}

/* Swaps the names of two tensors of one network (maps stay consistent).
 * Both must own their names (gwr_ir_tensor_own_name), which also puts
 * them in the map. */
void gwr_ir_tensor_swap_names(gwr_tensor *a, gwr_tensor *b) {
    gwr_namemap *m = &gwr_ir_tnet(a)->tensor_names;
    gwr_ir_namemap_del(m, a);
    gwr_ir_namemap_del(m, b);
    const char *n = a->name;
    a->name = b->name, b->name = n;
    uint8_t fa = a->flags & TF_OWN_NAME, fb = b->flags & TF_OWN_NAME;
    a->flags = (uint8_t)((a->flags & ~TF_OWN_NAME) | fb);
    b->flags = (uint8_t)((b->flags & ~TF_OWN_NAME) | fa);
    /* Both names were in the map a moment ago: re-inserting cannot need
     * more room than the map has. */
    (void)gwr_ir_namemap_put(m, a);
    (void)gwr_ir_namemap_put(m, b);
}

gwr_layer *gwr_network_find_layer(const gwr_network *net, const char *name) {
    return net && name ? gwr_ir_find_layer(net, name) : NULL;
}

gwr_tensor *gwr_network_find_tensor(const gwr_network *net, const char *name) {
    return net && name ? gwr_ir_find_tensor(net, name) : NULL;
}

gwr_tensor *gwr_network_lookup_tensor(const gwr_network *net, const char *name) {
    for (; net && name; net = net->parent) {
        gwr_tensor *t = gwr_ir_find_tensor(net, name);
        if (t) return t;
    }
    return NULL;
}

/* ---- listeners ---- */

int gwr_network_add_listener(gwr_network *net, const gwr_listener *ls) {
    if (!net || !ls) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_add_listener: NULL argument");
        return -1;
    }
    if (gwr_grow((void **)&net->listeners, sizeof *net->listeners, &net->listeners_cap,
                 net->nlisteners + 1)) {
        gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
        return -1;
    }
    net->listeners[net->nlisteners].ls = *ls;
    net->listeners[net->nlisteners].id = net->next_listener_id;
    net->nlisteners++;
    return net->next_listener_id++;
}

gwr_status gwr_network_remove_listener(gwr_network *net, int id) {
    if (!net) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_remove_listener: NULL network");
    for (int64_t i = 0; i < net->nlisteners; i++)
        if (net->listeners[i].id == id) {
            memmove(&net->listeners[i], &net->listeners[i + 1],
                    (size_t)(net->nlisteners - i - 1) * sizeof *net->listeners);
            net->nlisteners--;
            return GWR_OK;
        }
    return gwr_ir_error(net, GWR_ERR_NOT_FOUND, "no listener with id %d", id);
}

/* ---- inputs and outputs ---- */

gwr_tensor *gwr_network_add_input(gwr_network *net, const char *name, gwr_dtype dtype, int rank,
                                  const gwr_dim *dims) {
    if (!net) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_add_input: NULL network");
        return NULL;
    }
    if (!name) {
        gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_network_add_input: a graph input needs a name");
        return NULL;
    }
    if (!name_ok(net, name, "input")) return NULL;
    if (gwr_ir_find_tensor(net, name)) {
        gwr_ir_error(net, GWR_ERR_DUPLICATE, "input name '%s' is already taken", name);
        return NULL;
    }
    gwr_input_tensor *it = calloc(1, sizeof *it);
    gwr_tensor *t = &it->t;
    char *d = gwr_strdup(name);
    if (!it || !d || gwr_grow((void **)&net->inputs, sizeof *net->inputs, &net->inputs_cap, net->ninputs + 1)) {
        free(it), free(d);
        gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
        return NULL;
    }
    t->name = d;
    it->net = net;
    t->flags = TF_INPUT | TF_OWN_NAME;
    t->output_index = -1;
    if (gwr_tensor_set_type(t, dtype, rank, dims) != GWR_OK) {
        free(d), free(t);
        return NULL;
    }
    if (name_put(net, &net->tensor_names, t, gwr_ir_name_hash(d))) {
        free(d), free(t);
        gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
        return NULL;
    }
    t->out_index = (int32_t)net->ninputs;
    net->inputs[net->ninputs++] = t;
    return t;
}

/* Is i a valid index among n things of net? Leaves a message if not. */
static int index_ok(const gwr_network *net, const char *what, int64_t i, int64_t n) {
    if (i >= 0 && i < n) return 1;
    gwr_ir_error((gwr_network *)net, GWR_ERR_INVALID_ARG, "%s index %lld out of range [0, %lld)", what, (long long)i,
                 (long long)n);
    return 0;
}

int gwr_network_num_inputs(const gwr_network *net) { return net ? (int)net->ninputs : -1; }

gwr_tensor *gwr_network_input(const gwr_network *net, int i) {
    return net && index_ok(net, "input", i, net->ninputs) ? net->inputs[i] : NULL;
}

static gwr_status gwr_network_mark_output_impl(gwr_network *net, gwr_tensor *t) {
    if (!net || !t) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_mark_output: NULL argument");
    if (gwr_ir_tnet(t) != net)
        return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "tensor '%s' belongs to another network", t->name);
    if (t->output_index >= 0)
        return gwr_ir_error(net, GWR_ERR_DUPLICATE, "tensor '%s' is already output %d", t->name, t->output_index);
    if (t->producer && (t->producer->flags & LF_REMOVED))
        return gwr_ir_error(net, GWR_ERR_STATE, "tensor '%s' is produced by removed layer '%s'", t->name,
                            t->producer->name);
    if (gwr_grow((void **)&net->outputs, sizeof *net->outputs, &net->outputs_cap, net->noutputs + 1))
        return gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
    t->output_index = (int32_t)net->noutputs;
    net->outputs[net->noutputs++] = t;
    return GWR_OK;
}

gwr_status gwr_network_mark_output(gwr_network *net, gwr_tensor *t) {
    gwr_status s = gwr_network_mark_output_impl(net, t);
    if (s == GWR_OK) GWR_IR_NOTIFY(net, tensor_modified, t);
    return s;
}

static gwr_status gwr_network_unmark_output_impl(gwr_network *net, gwr_tensor *t) {
    if (!net || !t) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_unmark_output: NULL argument");
    if (gwr_ir_tnet(t) != net || t->output_index < 0)
        return gwr_ir_error(net, GWR_ERR_NOT_FOUND, "tensor '%s' is not an output of this network", t->name);
    int64_t k = t->output_index;
    memmove(&net->outputs[k], &net->outputs[k + 1], (size_t)(net->noutputs - k - 1) * sizeof *net->outputs);
    net->noutputs--;
    for (int64_t i = k; i < net->noutputs; i++) net->outputs[i]->output_index = (int32_t)i;
    t->output_index = -1;
    return GWR_OK;
}

gwr_status gwr_network_unmark_output(gwr_network *net, gwr_tensor *t) {
    gwr_status s = gwr_network_unmark_output_impl(net, t);
    if (s == GWR_OK) GWR_IR_NOTIFY(net, tensor_modified, t);
    return s;
}

int gwr_network_num_outputs(const gwr_network *net) { return net ? (int)net->noutputs : -1; }

gwr_tensor *gwr_network_output(const gwr_network *net, int i) {
    return net && index_ok(net, "output", i, net->noutputs) ? net->outputs[i] : NULL;
}

int64_t gwr_network_num_layers(const gwr_network *net) { return net ? net->nlayers : -1; }
int64_t gwr_network_num_live_layers(const gwr_network *net) {
    return net ? net->nlayers - net->nremoved : -1;
}

gwr_layer *gwr_network_layer(const gwr_network *net, int64_t i) {
    return net && index_ok(net, "layer", i, net->nlayers) ? net->layers[i] : NULL;
}

/* ---- layers ---- */

/* The interned table entry of an op the table does not know: class PLUGIN,
 * any arity. */
static const gwr_op_info *custom_op(gwr_network *net, const char *domain, const char *op) {
    gwr_network *r = net->root;
    size_t dl = strlen(domain), ol = strlen(op);
    char *key = malloc(dl + ol + 2);
    if (!key) return NULL;
    memcpy(key, domain, dl);
    key[dl] = '\x1f';
    memcpy(key + dl + 1, op, ol + 1);
    gwr_op_info *info = gwr_strmap_get(&r->custom_ops, key);
    if (!info) {
        const char *k = gwr_ir_intern(net, key), *d = gwr_ir_intern(net, domain), *o = gwr_ir_intern(net, op);
        info = k && d && o ? gwr_arena_alloc(&r->arena, sizeof *info) : NULL;
        if (info) {
            *info = (gwr_op_info){GWR_OP_CUSTOM, o, d, GWR_LAYER_PLUGIN, GWR_EW_NONE, 0, -1, 0, -1, GWR_OPF_VARIADIC, 1};
            if (gwr_strmap_put(&r->custom_ops, k, info)) info = NULL;
        }
    }
    free(key);
    return info;
}

/* Gives up a layer being added whose first n outputs are named: takes
 * their names and the layer's (hash hl; absent is fine) back out of where
 * lookups find them, frees the names they own and the block. */
static void add_undo(gwr_network *net, gwr_layer *l, int n, uint32_t hl) {
    gwr_tensor *outs = gwr_ir_outputs(l);
    for (int j = 0; j < n; j++) {
        gwr_ir_unname_tensor(net, &outs[j], 0);
        if (outs[j].flags & TF_OWN_NAME) free((void *)outs[j].name);
    }
    gwr_ir_unname_layer(net, l, hl);
    free(l);
}

/* What naming a new layer decided, for the steps after it. */
typedef struct add_name {
    const char *name;             /* the layer's name: given, or in buf */
    uint32_t hash;                /* gwr_ir_name_hash(name) */
    int generated;                /* no name was given */
    int fresh;                    /* a generated name known to be free (next_name) */
    int fresh_outs;               /* "<name>:<i>" are too (name not cut by them) */
    int64_t gen_n;                /* the name's slot in net->gen, or -1: it goes to the map */
    size_t len;                   /* strlen(name) */
    char buf[160];                /* generated names; later unique_tensor_name's */
} add_name;

/* The arguments, apart from names: message on net (the thread's for a
 * NULL net); 0 when they are wrong. */
static int add_check_args(gwr_network *net, const char *op, int ninputs, gwr_tensor *const *inputs, int noutputs) {
    if (!net) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_add_layer: NULL network");
        return 0;
    }
    if (!op || !*op) {
        gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_network_add_layer: empty op");
        return 0;
    }
    if (ninputs < 0 || noutputs < 0 || (ninputs && !inputs) || ninputs > (1 << 24) || noutputs > (1 << 24)) {
        gwr_ir_error(net, GWR_ERR_INVALID_ARG, "%s: bad counts (%d inputs, %d outputs)", op, ninputs, noutputs);
        return 0;
    }
    for (int i = 0; i < ninputs; i++) {
        gwr_tensor *t = inputs[i];
        if (!t) continue;
        if (!gwr_ir_in_scope(gwr_ir_tnet(t), net) || (t->producer && (t->producer->flags & LF_DROPPED))) {
            gwr_ir_error(net, GWR_ERR_INVALID_ARG, "%s: input %d ('%s') is not a tensor of this network or an enclosing one",
                         op, i, t->name);
            return 0;
        }
    }
    return 1;
}

/* Reading a tensor of an enclosing network from an attached subgraph adds
 * an edge to the subgraph's owner, which can close a cycle: 0 if one would. */
static int add_check_captures(gwr_network *net, const char *op, int ninputs, gwr_tensor *const *inputs) {
    for (int i = 0; i < ninputs; i++) {
        gwr_tensor *t = inputs[i];
        if (!t || gwr_ir_tnet(t) == net || !t->producer || !net->owner) continue;
        gwr_network *g = net;
        while (g->owner && g->owner->net != gwr_ir_tnet(t)) g = g->owner->net;
        if (g->owner && gwr_ir_would_cycle(t->producer, g->owner)) {
            gwr_ir_error(net, GWR_ERR_CYCLE, "%s: reading '%s' here would create a cycle through '%s'", op, t->name,
                         g->owner->name);
            return 0;
        }
    }
    return 1;
}

/* The layer's name, given or the next from the counter (not yet known to
 * be free unless nm->fresh). A fresh counter name gets a slot in net->gen;
 * any other starts loading the name maps' slots it will be looked up in. */
static int add_pick_name(gwr_network *net, const char *op, const char *name, add_name *nm) {
    nm->generated = !name;
    nm->fresh = 0;
    if (name) {
        if (!name_ok(net, name, "layer")) return 0;
        nm->name = name;
        nm->hash = gwr_ir_name_hash(name);
    } else {
        nm->name = next_name(net, op, nm->buf, &nm->hash, &nm->fresh);
    }
    uint64_t n = net->name_counter - 1;
    nm->gen_n = nm->generated && nm->fresh && n < (uint64_t)GWR_GEN_MAX ? (int64_t)n : -1;
    if (nm->gen_n < 0) {
        gwr_ir_namemap_prefetch(&net->layer_names, nm->hash);
        gwr_ir_namemap_prefetch(&net->tensor_names, nm->hash); /* output 0 is usually named after the layer */
    } else if (nm->gen_n >= net->gen_cap) {
        int64_t old = net->gen_cap;
        if (gwr_grow((void **)&net->gen, sizeof *net->gen, &net->gen_cap, nm->gen_n + 1)) {
            gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
            return 0;
        }
        memset(net->gen + old, 0, (size_t)(net->gen_cap - old) * sizeof *net->gen);
    }
    return 1;
}

/* A given name must be free; a generated one is drawn again until it is. */
static int add_claim_name(gwr_network *net, const char *op, add_name *nm) {
    if (!nm->generated) {
        if (!find_layer_h(net, nm->name, nm->hash)) return 1;
        gwr_ir_error(net, GWR_ERR_DUPLICATE, "layer name '%s' is already taken", nm->name);
        return 0;
    }
    while (!nm->fresh && find_layer_h(net, nm->name, nm->hash))
        nm->name = next_name(net, op, nm->buf, &nm->hash, &nm->fresh);
    return 1;
}

/* Given output names must be free and distinct. They are checked against
 * the maps only, not against the names made for the other outputs: those
 * are then looked up (nm->fresh cleared). */
static int add_check_output_names(gwr_network *net, int noutputs, const char *const *output_names, add_name *nm) {
    if (!output_names) return 1;
    nm->fresh = 0;
    for (int i = 0; i < noutputs; i++) {
        if (!output_names[i]) continue;
        if (!name_ok(net, output_names[i], "tensor")) return 0;
        if (gwr_ir_find_tensor(net, output_names[i])) {
            gwr_ir_error(net, GWR_ERR_DUPLICATE, "tensor name '%s' is already taken", output_names[i]);
            return 0;
        }
        for (int j = 0; j < i; j++)
            if (output_names[j] && !strcmp(output_names[j], output_names[i])) {
                gwr_ir_error(net, GWR_ERR_DUPLICATE, "output name '%s' given twice", output_names[i]);
                return 0;
            }
    }
    return 1;
}

/* One block for the layer, its outputs, its input slots and its name, and
 * a place in net->layers; the layer's fields from the op table. A layer
 * with a slot in net->gen is put there now: lookups of its outputs' names,
 * made next, go through it. */
static gwr_layer *add_alloc(gwr_network *net, const char *op, const char *domain, gwr_op_id id, add_name *nm,
                            int ninputs, int noutputs) {
    nm->len = strlen(nm->name);
    size_t namelen = nm->len + 1;
    /* "<layer>:<i>" keeps the layer's number only when not cut below. */
    nm->fresh_outs = nm->fresh && nm->len <= 120;
    size_t size = sizeof(gwr_layer) + (size_t)noutputs * sizeof(gwr_tensor) + (size_t)ninputs * sizeof(gwr_tensor *) +
                  namelen;
    if (net->nlayers >= INT32_MAX - 1) {
        gwr_ir_error(net, GWR_ERR_UNSUPPORTED, "a network holds at most %d layers", INT32_MAX - 1);
        return NULL;
    }
    gwr_layer *l = malloc(size);
    if (!l || gwr_grow((void **)&net->layers, sizeof *net->layers, &net->layers_cap, net->nlayers + 1)) {
        free(l);
        gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
        return NULL;
    }
    memset(l, 0, sizeof *l + (size_t)noutputs * sizeof(gwr_tensor));
    l->inputs = (gwr_tensor **)((char *)l + sizeof *l + (size_t)noutputs * sizeof(gwr_tensor));
    char *lname = (char *)(l->inputs + ninputs);
    memcpy(lname, nm->name, namelen);
    l->name = nm->name = lname; /* nm->buf is free for unique_tensor_name */
    l->net = net;
    l->op_id = (uint16_t)id;
    l->info = id != GWR_OP_CUSTOM ? gwr_op_info_get(id) : custom_op(net, domain, op);
    if (!l->info) {
        free(l);
        gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
        return NULL;
    }
    l->type = (uint8_t)l->info->layer_type;
    l->ninputs = l->incap = ninputs;
    l->noutputs = noutputs;
    if (nm->gen_n >= 0) {
        l->flags |= LF_GEN_NAME;
        net->ngen_layers++;
        net->gen[nm->gen_n] = l;
    }
    return l;
}

/* The name made for output i of l when none is given: the layer's for
 * output 0, "<layer>:<i>" (in tbuf) for the others, another from the
 * counter (in nm->buf) when that one is taken. *th gets its hash (0 when
 * nothing will need it). */
static const char *add_output_name(gwr_network *net, const gwr_layer *l, int i, add_name *nm, char *tbuf,
                                   uint32_t *th) {
    const char *tn;
    if (i == 0) {
        tn = l->name, *th = nm->hash;
    } else {
        /* "%.120s:%d", without printf's cost (plugins have two outputs) */
        size_t n = nm->len < 120 ? nm->len : 120;
        memcpy(tbuf, l->name, n);
        tbuf[n++] = ':';
        char digits[12];
        int k = 0;
        for (int v = i; k == 0 || v; v /= 10) digits[k++] = (char)('0' + v % 10);
        while (k) tbuf[n++] = digits[--k];
        tbuf[n] = 0;
        tn = tbuf, *th = nm->gen_n >= 0 && nm->fresh_outs ? 0 : gwr_ir_name_hash(tn);
    }
    if (!(i ? nm->fresh_outs : nm->fresh) && find_tensor_h(net, tn, *th))
        tn = unique_tensor_name(net, tn, nm->buf, th);
    return tn;
}

/* Names output i of the new layer l (given: its name or NULL) and puts the
 * name where lookups find it. *made: an earlier output's name was made
 * here, and a given name may equal it. On failure the layer is given up. */
static int add_name_output(gwr_network *net, gwr_layer *l, int i, add_name *nm, const char *given, int *made) {
    gwr_tensor *t = &gwr_ir_outputs(l)[i];
    t->producer = l;
    t->out_index = i;
    t->output_index = -1;
    char tbuf[160];
    uint32_t th;
    const char *tn = given;
    if (!tn) {
        tn = add_output_name(net, l, i, nm, tbuf, &th);
        *made = 1;
    } else {
        th = gwr_ir_name_hash(tn);
        /* Checked against the map before, not against the names made here. */
        if (*made && find_tensor_h(net, tn, th)) {
            add_undo(net, l, i, nm->hash);
            gwr_ir_error(net, GWR_ERR_DUPLICATE, "output name '%s' is also the name made for another output", tn);
            return 0;
        }
    }
    int failed = 0;
    if (tn == l->name) t->name = l->name; /* shares the block's copy */
    else if (!(t->name = gwr_strdup(tn))) failed = 1;
    else t->flags |= TF_OWN_NAME;
    /* Names from the counter (a generated layer name and those made from
     * it, or unique_tensor_name's) need no note (see next_name). */
    int from_counter = !given && (nm->generated || tn == nm->buf);
    /* Named after a layer in net->gen, with its number: found through it. */
    int gen_out = nm->gen_n >= 0 && !given && (i ? nm->fresh_outs && tn == tbuf : tn == l->name);
    if (failed || (!gen_out && (from_counter ? gwr_ir_namemap_put_h(&net->tensor_names, t, th)
                                             : name_put(net, &net->tensor_names, t, th)))) {
        if (t->flags & TF_OWN_NAME) free((void *)t->name); /* not in the map */
        add_undo(net, l, i, nm->hash);
        gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
        return 0;
    }
    if (gen_out) {
        t->flags |= TF_GEN_NAME;
        net->ngen_tensors++;
    }
    return 1;
}

/* Puts the layer's name where lookups find it (a slot of net->gen already
 * holds it). On failure the layer is given up. */
static int add_name_layer(gwr_network *net, gwr_layer *l, const add_name *nm) {
    if (nm->gen_n >= 0) return 1;
    if (!(nm->generated ? gwr_ir_namemap_put_h(&net->layer_names, l, nm->hash)
                        : name_put(net, &net->layer_names, l, nm->hash)))
        return 1;
    add_undo(net, l, l->noutputs, nm->hash);
    gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
    return 0;
}

/* Adds l to its inputs' use lists and ranks it GWR_RANK_STEP above its
 * highest producer in net. A new layer cannot close a cycle (nothing
 * reads its outputs yet), so only ranks need care. On failure the layer
 * is given up. */
static int add_wire_inputs(gwr_network *net, gwr_layer *l, gwr_tensor *const *inputs, const add_name *nm) {
    int64_t rank = 0;
    for (int i = 0; i < l->ninputs; i++) {
        gwr_tensor *t = inputs[i];
        l->inputs[i] = t;
        if (!t) continue;
        if (gwr_ir_use_add(t, l, i)) {
            for (int j = 0; j < i; j++)
                if (l->inputs[j]) gwr_ir_use_del(l->inputs[j], l, j);
            add_undo(net, l, l->noutputs, nm->hash);
            gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
            return 0;
        }
        if (t->producer && gwr_ir_tnet(t) == net && t->producer->rank + (int64_t)GWR_RANK_STEP > rank)
            rank = t->producer->rank + (int64_t)GWR_RANK_STEP;
    }
    l->rank = (int32_t)(rank < INT32_MAX - 1 ? rank : INT32_MAX - 1);
    return 1;
}

/* Puts l last in net's layers and tells the listeners. A layer in an
 * attached subgraph that reads an outer tensor makes its owner depend on
 * that tensor's producer. */
static void add_append(gwr_network *net, gwr_layer *l) {
    l->index = (int32_t)net->nlayers;
    net->layers[net->nlayers++] = l;
    if (l->rank >= INT32_MAX - 2 * (int64_t)GWR_RANK_STEP) gwr_ir_retighten_ranks(net);
    net->last_added = l;
    for (int i = 0; i < l->ninputs; i++)
        if (l->inputs[i] && gwr_ir_tnet(l->inputs[i]) != net) gwr_ir_capture_edge(l->inputs[i], l);
    GWR_IR_NOTIFY(net, layer_added, l);
}

gwr_layer *gwr_network_add_layer(gwr_network *net, const char *op, const char *domain, const char *name,
                                 int ninputs, gwr_tensor *const *inputs, int noutputs,
                                 const char *const *output_names) {
    if (!add_check_args(net, op, ninputs, inputs, noutputs) || !add_check_captures(net, op, ninputs, inputs))
        return NULL;
    if (!domain || !strcmp(domain, "ai.onnx")) domain = "";
    add_name nm;
    if (!add_pick_name(net, op, name, &nm)) return NULL;
    gwr_op_id id = gwr_op_lookup(domain, op); /* while the slots add_pick_name prefetched load */
    if (!add_claim_name(net, op, &nm) || !add_check_output_names(net, noutputs, output_names, &nm)) return NULL;
    gwr_layer *l = add_alloc(net, op, domain, id, &nm, ninputs, noutputs);
    if (!l) return NULL;
    int made = 0;
    for (int i = 0; i < noutputs; i++)
        if (!add_name_output(net, l, i, &nm, output_names ? output_names[i] : NULL, &made)) return NULL;
    if (!add_name_layer(net, l, &nm) || !add_wire_inputs(net, l, inputs, &nm)) return NULL;
    add_append(net, l);
    return l;
}

gwr_tensor *gwr_network_add_constant(gwr_network *net, const char *name, const gwr_weights *w) {
    if (!net || !w) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_add_constant: NULL argument");
        return NULL;
    }
    gwr_status st = gwr_ir_weights_check(net, w);
    if (st) return NULL;
    gwr_layer *l = gwr_network_add_layer(net, "Constant", "", name, 0, NULL, 1, NULL);
    if (!l) return NULL;
    if (gwr_layer_set_tensor(l, "value", w) != GWR_OK ||
        gwr_tensor_set_type(gwr_ir_outputs(l), w->dtype, w->rank, w->dims) != GWR_OK) {
        gwr_ir_discard_new_layer(l);
        return NULL;
    }
    return gwr_ir_outputs(l);
}

/* ---- layer accessors ---- */

gwr_network *gwr_layer_network(const gwr_layer *l) { return l ? l->net : NULL; }
const char *gwr_layer_name(const gwr_layer *l) { return l ? l->name : NULL; }
gwr_layer_type gwr_layer_type_of(const gwr_layer *l) { return l ? (gwr_layer_type)l->type : GWR_LAYER_PLUGIN; }
const char *gwr_layer_op(const gwr_layer *l) { return l ? l->info->name : NULL; }
const char *gwr_layer_domain(const gwr_layer *l) { return l ? l->info->domain : NULL; }
gwr_op_id gwr_layer_op_id(const gwr_layer *l) { return l ? (gwr_op_id)l->op_id : GWR_OP_CUSTOM; }
gwr_ew_op gwr_layer_ew_op(const gwr_layer *l) { return l ? l->info->ew_op : GWR_EW_NONE; }
int64_t gwr_layer_index(const gwr_layer *l) { return l ? l->index : -1; }
int gwr_layer_num_inputs(const gwr_layer *l) { return l ? l->ninputs : -1; }
int gwr_layer_num_outputs(const gwr_layer *l) { return l ? l->noutputs : -1; }

gwr_tensor *gwr_layer_input(const gwr_layer *l, int i) {
    if (!l) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_layer_input: NULL layer");
        return NULL;
    }
    if (i < 0 || i >= l->ninputs) {
        gwr_ir_error(l->net, GWR_ERR_INVALID_ARG, "layer '%s' has no input %d (it has %d)", l->name, i,
                     l->ninputs);
        return NULL;
    }
    return l->inputs[i];
}

gwr_tensor *gwr_layer_output(const gwr_layer *l, int i) {
    if (!l) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_layer_output: NULL layer");
        return NULL;
    }
    if (i < 0 || i >= l->noutputs) {
        gwr_ir_error(l->net, GWR_ERR_INVALID_ARG, "layer '%s' has no output %d (it has %d)", l->name, i,
                     l->noutputs);
        return NULL;
    }
    return &gwr_ir_outputs(l)[i];
}

gwr_status gwr_layer_mark_as_removed(gwr_layer *l) {
    if (!l) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_layer_mark_as_removed: NULL layer");
    if (l->flags & LF_REMOVED) return GWR_OK;
    l->flags |= LF_REMOVED;
    l->net->nremoved++;
    GWR_IR_NOTIFY(l->net, layer_removed, l);
    return GWR_OK;
}

int gwr_layer_is_removed(const gwr_layer *l) { return l ? (l->flags & LF_REMOVED) != 0 : 0; }

const char *gwr_layer_doc(const gwr_layer *l) {
    const char *d = gwr_layer_prop(l, "doc", NULL);
    return d ? d : "";
}

gwr_status gwr_layer_set_doc(gwr_layer *l, const char *doc) {
    if (!l || !doc) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_layer_set_doc: NULL argument");
    if (!*doc) {
        gwr_layer_remove_prop(l, "doc");
        return GWR_OK;
    }
    return gwr_layer_set_prop(l, "doc", doc, strlen(doc));
}

/* ---- tensor accessors and types ---- */

gwr_network *gwr_tensor_network(const gwr_tensor *t) { return t ? gwr_ir_tnet(t) : NULL; }
const char *gwr_tensor_name(const gwr_tensor *t) { return t ? t->name : NULL; }
gwr_value_kind gwr_tensor_kind(const gwr_tensor *t) { return t ? (gwr_value_kind)t->kind : GWR_VALUE_TENSOR; }
gwr_dtype gwr_tensor_dtype(const gwr_tensor *t) { return t ? (gwr_dtype)t->dtype : GWR_UNDEFINED; }
int gwr_tensor_rank(const gwr_tensor *t) { return t && t->shape ? t->shape->rank : -1; }

gwr_dim gwr_tensor_dim(const gwr_tensor *t, int i) {
    if (!t || !t->shape) return GWR_DIM_UNKNOWN;
    if (i < 0) i += t->shape->rank;
    return i >= 0 && i < t->shape->rank ? t->shape->dims[i] : GWR_DIM_UNKNOWN;
}

const gwr_dim *gwr_tensor_dims(const gwr_tensor *t) { return t && t->shape ? t->shape->dims : NULL; }

static gwr_status check_dims(gwr_network *net, const char *what, int rank, const gwr_dim *dims) {
    if (rank < -1 || rank > GWR_MAX_RANK)
        return gwr_ir_error(net, GWR_ERR_SHAPE, "%s: rank %d out of range [-1, %d]", what, rank, GWR_MAX_RANK);
    if (rank > 0 && !dims) return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "%s: NULL dims for rank %d", what, rank);
    for (int i = 0; i < rank; i++) {
        gwr_dim d = dims[i];
        if (GWR_DIM_IS_SYM(d) && !gwr_network_dim_name(net, d))
            return gwr_ir_error(net, GWR_ERR_SHAPE, "%s: dim %d is not a symbol of this network", what, i);
    }
    return GWR_OK;
}

static gwr_status gwr_tensor_set_type_impl(gwr_tensor *t, gwr_dtype dtype, int rank, const gwr_dim *dims) {
    if (!t) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_tensor_set_type: NULL tensor");
    if ((unsigned)dtype >= GWR_DTYPE_COUNT)
        return gwr_ir_error(gwr_ir_tnet(t), GWR_ERR_TYPE, "tensor '%s': invalid dtype %d", t->name, (int)dtype);
    gwr_status st = check_dims(gwr_ir_tnet(t), t->name, rank, dims);
    if (st) return st;
    const gwr_ishape *s = NULL;
    if (rank >= 0 && !(s = gwr_ir_intern_shape(gwr_ir_tnet(t), rank, dims)))
        return gwr_ir_error(gwr_ir_tnet(t), GWR_ERR_NOMEM, "out of memory");
    tensor_drop_vtype(t);
    t->dtype = (uint8_t)dtype;
    t->shape = s;
    return GWR_OK;
}

gwr_status gwr_tensor_set_type(gwr_tensor *t, gwr_dtype dtype, int rank, const gwr_dim *dims) {
    gwr_status s = gwr_tensor_set_type_impl(t, dtype, rank, dims);
    if (s == GWR_OK) GWR_IR_NOTIFY(gwr_ir_tnet(t), tensor_modified, t);
    return s;
}

void gwr_ir_type_free(gwr_type *ty) {
    while (ty) {
        gwr_type *e = (gwr_type *)ty->elem;
        free((void *)ty->dims);
        free(ty);
        ty = e;
    }
}

static gwr_type *type_copy(gwr_network *net, const gwr_type *src, int depth, gwr_status *st) {
    if (depth > 32) {
        *st = gwr_ir_error(net, GWR_ERR_TYPE, "value type nested deeper than 32");
        return NULL;
    }
    if ((unsigned)src->kind > GWR_VALUE_OPTIONAL || (unsigned)src->dtype >= GWR_DTYPE_COUNT) {
        *st = gwr_ir_error(net, GWR_ERR_TYPE, "invalid value type (kind %d, dtype %d)", src->kind, src->dtype);
        return NULL;
    }
    int has_elem = src->kind == GWR_VALUE_SEQUENCE || src->kind == GWR_VALUE_OPTIONAL || src->kind == GWR_VALUE_MAP;
    if (has_elem && !src->elem) {
        *st = gwr_ir_error(net, GWR_ERR_TYPE, "%s type without an element type", gwr_value_kind_name(src->kind));
        return NULL;
    }
    int rank = has_elem ? -1 : src->rank;
    if ((*st = check_dims(net, "value type", rank, src->dims))) return NULL;
    gwr_type *d = calloc(1, sizeof *d);
    if (!d) goto nomem;
    *d = *src;
    d->rank = rank;
    d->dims = NULL;
    d->elem = NULL;
    if (rank > 0) {
        gwr_dim *dims = malloc((size_t)rank * sizeof *dims);
        if (!dims) goto nomem_d;
        memcpy(dims, src->dims, (size_t)rank * sizeof *dims);
        d->dims = dims;
    }
    if (has_elem && !(d->elem = type_copy(net, src->elem, depth + 1, st))) {
        gwr_ir_type_free(d);
        return NULL;
    }
    return d;
nomem_d:
    free(d);
nomem:
    *st = gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
    return NULL;
}

static gwr_status gwr_tensor_set_value_type_impl(gwr_tensor *t, const gwr_type *type) {
    if (!t || !type) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_tensor_set_value_type: NULL argument");
    if (type->kind == GWR_VALUE_TENSOR) return gwr_tensor_set_type(t, type->dtype, type->rank, type->dims);
    gwr_status st = GWR_OK;
    gwr_type *c = type_copy(gwr_ir_tnet(t), type, 0, &st);
    if (!c) return st;
    gwr_network *net = gwr_ir_tnet(t);
    gwr_type *old = gwr_ptrmap_get(&net->vtypes, t);
    if (gwr_ptrmap_put(&net->vtypes, t, c)) {
        gwr_ir_type_free(c);
        return gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
    }
    if (old) gwr_ir_type_free(old);
    t->kind = (uint8_t)type->kind;
    t->dtype = (uint8_t)(type->kind == GWR_VALUE_SPARSE_TENSOR ? type->dtype : GWR_UNDEFINED);
    t->shape = type->kind == GWR_VALUE_SPARSE_TENSOR ? gwr_ir_intern_shape(gwr_ir_tnet(t), c->rank, c->dims) : NULL;
    return GWR_OK;
}

gwr_status gwr_tensor_set_value_type(gwr_tensor *t, const gwr_type *type) {
    gwr_status s = gwr_tensor_set_value_type_impl(t, type);
    if (s == GWR_OK) GWR_IR_NOTIFY(gwr_ir_tnet(t), tensor_modified, t);
    return s;
}

gwr_status gwr_tensor_value_type(const gwr_tensor *t, gwr_type *out) {
    if (!t || !out) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_tensor_value_type: NULL argument");
    if (t->kind != GWR_VALUE_TENSOR) {
        const gwr_type *ty = gwr_ptrmap_get(&gwr_ir_tnet(t)->vtypes, t);
        if (ty) {
            *out = *ty;
            return GWR_OK;
        }
    }
    memset(out, 0, sizeof *out);
    out->kind = GWR_VALUE_TENSOR;
    out->dtype = (gwr_dtype)t->dtype;
    out->rank = t->shape ? t->shape->rank : -1;
    out->dims = t->shape ? t->shape->dims : NULL;
    return GWR_OK;
}

/* buf may be NULL (size 0) to measure, as with snprintf. */
#define AT(b, off) ((b) ? (b) + (off) : NULL)

static int dims_str(const gwr_network *net, int rank, const gwr_dim *dims, char *buf, size_t size) {
    size_t n = 0;
#define PUT(...) n += (size_t)snprintf(AT(buf, n < size ? n : size), n < size ? size - n : 0, __VA_ARGS__)
    if (rank < 0) {
        PUT("[...]");
        return (int)n;
    }
    PUT("[");
    for (int i = 0; i < rank; i++) {
        const char *sym = gwr_network_dim_name(net, dims[i]);
        if (sym) PUT("%s%s", i ? "," : "", sym);
        else if (dims[i] >= 0) PUT("%s%lld", i ? "," : "", (long long)dims[i]);
        else PUT("%s?", i ? "," : "");
    }
    PUT("]");
#undef PUT
    return (int)n;
}

static int type_str(const gwr_network *net, const gwr_type *ty, char *buf, size_t size) {
    int n;
    size_t off;
    switch (ty->kind) {
    case GWR_VALUE_SEQUENCE:
    case GWR_VALUE_OPTIONAL:
        n = snprintf(buf, size, "%s<", gwr_value_kind_name(ty->kind));
        off = (size_t)n < size ? (size_t)n : size;
        n += type_str(net, ty->elem, AT(buf, off), size - off);
        off = (size_t)n < size ? (size_t)n : size;
        return n + snprintf(AT(buf, off), size - off, ">");
    case GWR_VALUE_MAP:
        n = snprintf(buf, size, "map<%s,", gwr_dtype_name(ty->dtype));
        off = (size_t)n < size ? (size_t)n : size;
        n += type_str(net, ty->elem, AT(buf, off), size - off);
        off = (size_t)n < size ? (size_t)n : size;
        return n + snprintf(AT(buf, off), size - off, ">");
    default:
        n = snprintf(buf, size, "%s%s", ty->kind == GWR_VALUE_SPARSE_TENSOR ? "sparse " : "", gwr_dtype_name(ty->dtype));
        off = (size_t)n < size ? (size_t)n : size;
        return n + dims_str(net, ty->rank, ty->dims, AT(buf, off), size - off);
    }
}

#undef AT

int gwr_tensor_type_str(const gwr_tensor *t, char *buf, size_t size) {
    if (!t) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_tensor_type_str: NULL tensor");
        return -1;
    }
    gwr_type ty;
    gwr_tensor_value_type(t, &ty);
    return type_str(gwr_ir_tnet(t), &ty, buf, size);
}
