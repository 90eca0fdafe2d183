/* names.c - the name maps of a network, generated names (see
 * gwr_network.gen), lookups and renames. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir_internal.h"

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
    gwr_name_slot *slots = gwr_calloc((size_t)ncap, sizeof *slots);
    if (!slots) return -1;
    gwr_advise_huge(slots, (size_t)ncap * sizeof *slots);
    for (int64_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].hash) continue;
        int64_t j = (int64_t)(m->slots[i].hash & (uint64_t)(ncap - 1));
        while (slots[j].hash) j = (j + 1) & (ncap - 1);
        slots[j] = m->slots[i];
    }
    gwr_free(m->slots);
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

int gwr_ir_namemap_reserve(gwr_namemap *m, int64_t extra) {
    int64_t cap = m->cap ? m->cap : 16;
    while ((m->count + extra) * 4 > cap * 3) cap *= 2;
    return cap == m->cap ? 0 : namemap_resize(m, cap);
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

/* The outermost network of net's tree: it holds the name counter and
 * floor of the whole tree (a model and every If/Loop/Scan body in it), so
 * that a generated name is unique across all of them, as ONNX wants names
 * to be. The walk is as long as the nesting (a few levels). */
gwr_network *gwr_ir_name_root(gwr_network *net) {
    while (net->parent) net = net->parent;
    return net;
}

/* Keeps the tree's name_floor above the number a name put in net ends with
 * when it looks generated (its last '_' followed by digits; see
 * gwr_ir_next_name). */
static void note_name(gwr_network *net, const char *name) {
    const char *u = strrchr(name, '_');
    if (!u || u[1] < '0' || u[1] > '9') return;
    net = gwr_ir_name_root(net);
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
 * add_layer makes from the counter (they need no note: see gwr_ir_next_name). */
int gwr_ir_name_put(gwr_network *net, gwr_namemap *m, void *obj, uint32_t h) {
    note_name(net, obj_name(obj));
    return gwr_ir_namemap_put_h(m, obj, h);
}

/* ---- generated names (see gwr_network.gen) ---- */

/* n of a name "..._<n>" (*k = 0) or "..._<n>:<k>", as gwr_ir_next_name and
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

gwr_layer *gwr_ir_find_layer_h(const gwr_network *net, const char *name, uint32_t h) {
    gwr_layer *l = gwr_ir_namemap_get_h(&net->layer_names, name, h);
    return l ? l : net->ngen_layers ? gen_layer(net, name) : NULL;
}

gwr_tensor *gwr_ir_find_tensor_h(const gwr_network *net, const char *name, uint32_t h) {
    gwr_tensor *t = gwr_ir_namemap_get_h(&net->tensor_names, name, h);
    return t ? t : net->ngen_tensors ? gen_tensor(net, name) : NULL;
}

gwr_layer *gwr_ir_find_layer(const gwr_network *net, const char *name) {
    return gwr_ir_find_layer_h(net, name, gwr_ir_name_hash(name));
}

gwr_tensor *gwr_ir_find_tensor(const gwr_network *net, const char *name) {
    return gwr_ir_find_tensor_h(net, name, gwr_ir_name_hash(name));
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

/* ---- names ---- */

/* Writes "<base>_<n>" with the tree's next counter value into buf (at
 * least 160 bytes; base is cut at 120) and its hash into *hash; *n (may be
 * NULL) gets n. The counter and the floor are the outermost network's
 * (gwr_ir_name_root), and the counter skips up to the floor, so the name is
 * free in every map of every network of the tree: n >= name_floor, and
 * *fresh (may be NULL) says so. (Names generated before have smaller
 * numbers; any other name equal to this one would end in "_<n>" too and
 * have raised the floor past n when it was put, in whichever network; so
 * would one equal to "<this>:<i>".) Only a floor at UINT64_MAX, which no
 * counter reaches, leaves names that are not fresh: add_layer then looks
 * them up in its own maps. */
const char *gwr_ir_next_name(gwr_network *net, const char *base, char *buf, uint32_t *hash, int *fresh,
                             uint64_t *num) {
    size_t n = strlen(base);
    if (n > 120) n = 120;
    memmove(buf, base, n);
    buf[n++] = '_';
    char digits[24];
    int k = 0;
    gwr_network *root = gwr_ir_name_root(net);
    uint64_t v = root->name_counter;
    if (v < root->name_floor && root->name_floor != UINT64_MAX) v = root->name_floor;
    root->name_counter = v + 1;
    if (fresh) *fresh = v >= root->name_floor;
    if (num) *num = v;
    do digits[k++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    for (int i = 0; i < k; i++) buf[n + (size_t)i] = digits[k - 1 - i];
    buf[n + (size_t)k] = 0;
    *hash = gwr_ir_name_hash(buf);
    return buf;
}

/* gwr_ir_next_name until the name is free among net's tensors. */
const char *gwr_ir_unique_tensor_name(gwr_network *net, const char *base, char *buf, uint32_t *hash) {
    char tmp[128]; /* buf may hold base itself */
    size_t bl = strlen(base);
    if (bl > 120) bl = 120;
    memcpy(tmp, base, bl);
    tmp[bl] = 0;
    do gwr_ir_next_name(net, tmp, buf, hash, NULL, NULL);
    while (gwr_ir_find_tensor_h(net, buf, *hash));
    return buf;
}

int gwr_ir_name_ok(gwr_network *net, const char *name, const char *what) {
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
    if (!gwr_ir_name_ok(net, name, "layer")) return GWR_ERR_INVALID_ARG;
    if (gwr_ir_find_layer(net, name))
        return gwr_ir_error(net, GWR_ERR_DUPLICATE, "layer name '%s' is already taken", name);
    char *d = gwr_strdup(name);
    if (!d || gwr_ir_namemap_reserve(&net->layer_names, 1)) {
        gwr_free(d);
        return gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
    }
    gwr_ir_unname_layer(net, l, 0);
    if (l->flags & LF_OWN_NAME) gwr_free((void *)l->name);
    l->name = d;
    l->flags |= LF_OWN_NAME;
    if (gwr_ir_name_put(net, &net->layer_names, l, gwr_ir_name_hash(d))) return gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
    return GWR_OK;
}

/* Renames without checks (the caller knows the name is free). */
gwr_status gwr_ir_tensor_rename(gwr_tensor *t, const char *name) {
    char *d = gwr_strdup(name);
    if (!d || gwr_ir_namemap_reserve(&gwr_ir_tnet(t)->tensor_names, 1)) {
        gwr_free(d);
        return gwr_ir_error(gwr_ir_tnet(t), GWR_ERR_NOMEM, "out of memory");
    }
    gwr_ir_unname_tensor(gwr_ir_tnet(t), t, 0);
    if (t->flags & TF_OWN_NAME) gwr_free((void *)t->name);
    t->name = d;
    t->flags |= TF_OWN_NAME;
    if (gwr_ir_name_put(gwr_ir_tnet(t), &gwr_ir_tnet(t)->tensor_names, t, gwr_ir_name_hash(d)))
        return gwr_ir_error(gwr_ir_tnet(t), GWR_ERR_NOMEM, "out of memory");
    return GWR_OK;
}

static gwr_status gwr_tensor_set_name_impl(gwr_tensor *t, const char *name) {
    if (!t || !name) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_tensor_set_name: NULL argument");
    if (!strcmp(t->name, name)) return GWR_OK;
    if (!gwr_ir_name_ok(gwr_ir_tnet(t), name, "tensor")) return GWR_ERR_INVALID_ARG;
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
