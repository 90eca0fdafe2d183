/* intern.c - the bottom of the IR: errors on a network, strings and
 * shapes interned in the root network, dimension symbols, scope and the
 * per-network state of the rooms above. Uses nothing else of src/ir. */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir_internal.h"

/* ---- errors ---- */

gwr_status gwr_ir_error(gwr_network *net, gwr_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (net) gwr_vfmt_error(net->errmsg, s, fmt, ap);
    else gwr_vfmt_error((char *)gwr_last_errmsg(), s, fmt, ap);
    va_end(ap);
    return s;
}

gwr_status gwr_network_error(gwr_network *net, gwr_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (net) gwr_vfmt_error(net->errmsg, s, fmt ? fmt : "", ap);
    else gwr_vfmt_error((char *)gwr_last_errmsg(), s, fmt ? fmt : "", ap);
    va_end(ap);
    return s;
}

const char *gwr_network_errmsg(const gwr_network *net) {
    return net ? net->errmsg : gwr_last_errmsg();
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
        void **ns = gwr_calloc((size_t)ncap, sizeof *ns);
        if (!ns) return NULL;
        for (int64_t i = 0; i < r->shapes_cap; i++) {
            gwr_ishape *s = r->shapes[i];
            if (!s) continue;
            uint64_t j = shape_hash(s->rank, s->dims) & (uint64_t)(ncap - 1);
            while (ns[j]) j = (j + 1) & (uint64_t)(ncap - 1);
            ns[j] = s;
        }
        gwr_free(r->shapes);
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

/* ---- scope and state of the rooms above ---- */

int gwr_ir_in_scope(const gwr_network *anc, const gwr_network *net) {
    for (; net; net = net->parent)
        if (net == anc) return 1;
    return 0;
}

void *gwr_ir_ext_get(const gwr_network *net, gwr_ext_slot slot) { return net->ext[slot]; }

void gwr_ir_ext_set(gwr_network *net, gwr_ext_slot slot, void *p, void (*free_fn)(void *)) {
    net->ext[slot] = p;
    net->ext_free[slot] = free_fn;
}
