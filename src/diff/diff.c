/* diff.c - gwr_diff_networks: layers of two networks matched (provenance,
 * then name and op, then structure in b's topological order), each pair
 * classified, the interface and the weights compared (gwr/diff.h says
 * what each step means). Reads the IR's structs (ir_api.h), never changes
 * them; weights are read through match's constant views. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "diff/diff_internal.h"
#include "gwr/match.h"

#define PROV_KEY "gwr.provenance"
#define WHY_MAX 240

typedef struct run {
    gwr_diff *d;
    int oom;
    gwr_ptrmap by_value;  /* hash of a weight's value -> 1 + first a index of that hash */
    int64_t *next_value;  /* the chain of a indices of one hash */
    int values_built;
} run;

static int live(const gwr_layer *l) { return !(l->flags & LF_REMOVED); }

static int same_op(const gwr_layer *x, const gwr_layer *y) {
    return !strcmp(x->info->name, y->info->name) && !strcmp(x->info->domain, y->info->domain);
}

/* Is layer i of a / j of b still to be matched? */
static int free_a(const gwr_diff *d, int64_t i) { return d->match_a[i] < 0 && d->prov_a[i] < 0; }
static int free_b(const gwr_diff *d, int64_t j) { return d->match_b[j] < 0 && d->prov_b[j] < 0; }

static void pair(gwr_diff *d, int64_t i, int64_t j) {
    d->match_a[i] = j;
    d->match_b[j] = i;
}

/* A copy in d's arena of the formatted text ("" when out of memory, which
 * r->oom records). */
static const char *fmt(run *r, const char *f, ...) GWR_PRINTF(2, 3);
static const char *fmt(run *r, const char *f, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    const char *s = gwr_arena_strdup(&r->d->arena, buf);
    if (!s) r->oom = 1;
    return s ? s : "";
}

/* ---- 1. provenance ---- */

typedef struct prov_ctx {
    gwr_diff *d;
    int64_t *from;
    int64_t n, cap;
    int64_t *seen; /* per layer of a: the last b layer whose record named it */
    int64_t j;     /* the b layer read now */
} prov_ctx;

/* A name of the tree: a live layer of a, unless b still has a live layer
 * of that name and op (then it was not replaced). */
static int prov_name(void *ctx, const char *s) {
    prov_ctx *c = ctx;
    const gwr_layer *la = gwr_network_find_layer(c->d->a, s), *lb;
    if (!la || !live(la)) return 0;
    if ((lb = gwr_network_find_layer(c->d->b, s)) && live(lb) && same_op(la, lb)) return 0;
    if (c->seen[la->index] == c->j) return 0; /* named twice in one tree */
    c->seen[la->index] = c->j;
    if (gwr_grow((void **)&c->from, sizeof *c->from, &c->cap, c->n + 1)) return -1;
    c->from[c->n++] = la->index;
    return 0;
}

static int match_provenance(run *r) {
    gwr_diff *d = r->d;
    int64_t *seen = NULL;
    for (int64_t j = 0; j < d->nb; j++) {
        const gwr_layer *lb = d->b->layers[j];
        size_t len;
        const char *p = live(lb) ? gwr_layer_prop(lb, PROV_KEY, &len) : NULL;
        if (!p) continue;
        if (!seen) {
            if (!(seen = gwr_malloc((size_t)(d->na ? d->na : 1) * sizeof *seen))) return r->oom = 1, -1;
            for (int64_t i = 0; i < d->na; i++) seen[i] = -1;
        }
        prov_ctx c = {.d = d, .seen = seen, .j = j};
        char *rule = NULL;
        int rc = gwr_ir_provenance_read(p, len, &rule, prov_name, &c);
        if (rc || !c.n) {
            /* Unreadable, or naming no layer of a: matched as if it had none. */
            gwr_free(c.from);
            gwr_free(rule);
            if (rc == -2) return gwr_free(seen), r->oom = 1, -1;
            continue;
        }
        const char *arule = gwr_arena_strdup(&d->arena, rule ? rule : "a rewrite");
        gwr_free(rule);
        if (!arule || gwr_grow((void **)&d->prov, sizeof *d->prov, &d->prov_cap, d->nprov + 1)) {
            gwr_free(c.from);
            gwr_free(seen);
            return r->oom = 1, -1;
        }
        d->prov[d->nprov] = (gwr_df_prov){j, arule, c.from, c.n};
        d->prov_b[j] = d->nprov;
        for (int64_t k = 0; k < c.n; k++)
            if (d->prov_a[c.from[k]] < 0) d->prov_a[c.from[k]] = d->nprov;
        d->nprov++;
    }
    gwr_free(seen);
    return 0;
}

/* ---- 2. name and op ---- */

static void match_names(gwr_diff *d) {
    for (int64_t j = 0; j < d->nb; j++) {
        const gwr_layer *lb = d->b->layers[j], *la;
        if (!live(lb) || !free_b(d, j)) continue;
        if ((la = gwr_network_find_layer(d->a, lb->name)) && live(la) && free_a(d, la->index) && same_op(la, lb))
            pair(d, la->index, j);
    }
}

/* ---- 3. structure ---- */

/* Does tensor ta of a stand where tb of b does: both absent, graph inputs
 * of one name, tensors of enclosing networks (a and b are bodies) of one
 * name, or the same output of matched producers? */
static int corresponds(const gwr_diff *d, const gwr_tensor *ta, const gwr_tensor *tb) {
    if (!ta || !tb) return !ta && !tb;
    int outer_a = gwr_ir_tnet(ta) != d->a, outer_b = gwr_ir_tnet(tb) != d->b;
    if (outer_a || outer_b) return outer_a && outer_b && !strcmp(ta->name, tb->name);
    if (!tb->producer) return !ta->producer && !strcmp(ta->name, tb->name);
    if (!ta->producer) return 0;
    return d->match_b[tb->producer->index] == ta->producer->index && ta->out_index == tb->out_index;
}

/* The tensor of a that corresponds to tb, or NULL. */
static const gwr_tensor *a_tensor_of(const gwr_diff *d, const gwr_tensor *tb) {
    if (gwr_ir_tnet(tb) != d->b) {
        const gwr_tensor *t = gwr_network_lookup_tensor(d->a, tb->name);
        return t && gwr_ir_tnet(t) != d->a ? t : NULL;
    }
    if (!tb->producer) {
        const gwr_tensor *t = gwr_network_find_tensor(d->a, tb->name);
        return t && !t->producer ? t : NULL;
    }
    int64_t i = d->match_b[tb->producer->index];
    if (i < 0 || tb->out_index >= d->a->layers[i]->noutputs) return NULL;
    return &gwr_ir_outputs(d->a->layers[i])[tb->out_index];
}

static int inputs_correspond(const gwr_diff *d, const gwr_layer *la, const gwr_layer *lb) {
    if (la->ninputs != lb->ninputs) return 0;
    for (int k = 0; k < la->ninputs; k++)
        if (!corresponds(d, la->inputs[k], lb->inputs[k])) return 0;
    return 1;
}

/* Index in y of the attribute named like x's attribute k, or -1. */
static int attr_in(const gwr_layer *y, const gwr_attr *at) { return gwr_layer_find_attr(y, at->name); }

static int attrs_equal(const gwr_layer *x, const gwr_layer *y) {
    if (x->nattrs != y->nattrs) return 0;
    for (int k = 0; k < x->nattrs; k++) {
        int m = attr_in(y, &x->attrs[k]);
        if (m < 0 || !gwr_ir_attr_equal(&x->attrs[k], &y->attrs[m])) return 0;
    }
    return 1;
}

/* An unmatched layer of a that reads what lb reads, with lb's op and
 * attributes; NULL when none. Candidates are the readers of the first
 * input lb has. */
static const gwr_layer *structural_twin(const gwr_diff *d, const gwr_layer *lb) {
    int k = 0;
    while (k < lb->ninputs && !lb->inputs[k]) k++;
    if (k == lb->ninputs) return NULL;
    const gwr_tensor *ta = a_tensor_of(d, lb->inputs[k]);
    if (!ta) return NULL;
    int64_t nu = gwr_tensor_num_users(ta);
    for (int64_t u = 0; u < nu; u++) {
        int slot;
        const gwr_layer *la = gwr_tensor_user(ta, u, &slot);
        if (!la || slot != k || la->net != d->a || !live(la) || !free_a(d, la->index)) continue;
        if (same_op(la, lb) && la->noutputs == lb->noutputs && inputs_correspond(d, la, lb) && attrs_equal(la, lb))
            return la;
    }
    return NULL;
}

/* The value of a weight layer ("value" tensor), or NULL. */
static const gwr_weights *weight_value(const gwr_layer *l) {
    const gwr_weights *w;
    int k = gwr_layer_find_attr(l, "value");
    if (k < 0 || l->attrs[k].type != GWR_ATTR_TENSOR || gwr_layer_get_tensor(l, "value", &w)) return NULL;
    return w;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n) {
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ULL;
    return h;
}

/* A hash of a value's type and of some of its bytes (the first and last
 * 64 and 64 spread between): equal values hash alike, and values_equal
 * decides, so a big weight costs no full pass here. */
static uint64_t value_hash(const gwr_weights *w) {
    uint64_t h = 0xcbf29ce484222325ULL;
    h = hash_bytes(h, &w->dtype, sizeof w->dtype);
    h = hash_bytes(h, &w->rank, sizeof w->rank);
    h = hash_bytes(h, &w->nbytes, sizeof w->nbytes);
    if (w->rank) h = hash_bytes(h, w->dims, (size_t)w->rank * sizeof *w->dims);
    if (w->dtype == GWR_STRING) return h | 1;
    const unsigned char *p = w->data;
    size_t n = w->nbytes;
    if (n <= 192) return hash_bytes(h, p, n) | 1;
    h = hash_bytes(h, p, 64);
    h = hash_bytes(h, p + n - 64, 64);
    for (size_t k = 1; k <= 64; k++) h = hash_bytes(h, p + k * (n - 1) / 65, 1);
    return h | 1; /* a map key is never NULL */
}

static int values_equal(const gwr_weights *x, const gwr_weights *y) {
    return x->dtype == y->dtype && x->dtype != GWR_STRING && x->rank == y->rank && x->nbytes == y->nbytes &&
           (!x->rank || !memcmp(x->dims, y->dims, (size_t)x->rank * sizeof *x->dims)) &&
           (!x->nbytes || !memcmp(x->data, y->data, x->nbytes));
}

/* The unmatched weights of a by value, built when first needed. */
static int build_values(run *r) {
    gwr_diff *d = r->d;
    r->values_built = 1;
    if (!(r->next_value = gwr_malloc((size_t)(d->na ? d->na : 1) * sizeof *r->next_value))) return -1;
    for (int64_t i = 0; i < d->na; i++) {
        const gwr_layer *la = d->a->layers[i];
        const gwr_weights *w;
        r->next_value[i] = -1;
        if (!live(la) || !gwr_df_is_weight(la) || !free_a(d, i) || !(w = weight_value(la))) continue;
        const void *key = (const void *)(uintptr_t)value_hash(w);
        intptr_t head = (intptr_t)gwr_ptrmap_get(&r->by_value, key);
        r->next_value[i] = head - 1;
        if (gwr_ptrmap_put(&r->by_value, key, (void *)(intptr_t)(i + 1))) return -1;
    }
    return 0;
}

/* A weight of a for weight lb: the one producing a tensor of lb's output
 * name, else one of equal value. */
static const gwr_layer *weight_twin(run *r, const gwr_layer *lb) {
    gwr_diff *d = r->d;
    const gwr_tensor *t = gwr_network_find_tensor(d->a, gwr_ir_outputs(lb)[0].name);
    if (t && t->producer && t->producer->net == d->a && live(t->producer) && gwr_df_is_weight(t->producer) &&
        free_a(d, t->producer->index))
        return t->producer;
    const gwr_weights *w = weight_value(lb);
    if (!w) return NULL;
    if (!r->values_built && build_values(r)) return r->oom = 1, NULL;
    intptr_t head = (intptr_t)gwr_ptrmap_get(&r->by_value, (const void *)(uintptr_t)value_hash(w));
    for (int64_t i = head - 1; i >= 0; i = r->next_value[i]) {
        const gwr_weights *wa;
        if (free_a(d, i) && (wa = weight_value(d->a->layers[i])) && values_equal(wa, w)) return d->a->layers[i];
    }
    return NULL;
}

static int match_structure(run *r) {
    gwr_diff *d = r->d;
    gwr_layer **order = gwr_malloc((size_t)(d->nb ? d->nb : 1) * sizeof *order);
    if (!order) return r->oom = 1, -1;
    gwr_status s = gwr_network_topo_order((gwr_network *)d->b, order);
    if (s) {
        gwr_free(order);
        return gwr_set_last_error(s, "gwr_diff_networks: the second network: %s", gwr_network_errmsg(d->b)), -1;
    }
    for (int64_t n = 0; n < d->nb && !r->oom; n++) {
        const gwr_layer *lb = order[n], *la;
        if (!live(lb) || !free_b(d, lb->index)) continue;
        if (gwr_df_is_weight(lb)) la = weight_twin(r, lb);
        else la = structural_twin(d, lb);
        /* Failing that: the same name reading the same producers, another op. */
        if (!la && !gwr_df_is_weight(lb) && (la = gwr_network_find_layer(d->a, lb->name)) &&
            (!live(la) || !free_a(d, la->index) || gwr_df_is_weight(la) || !inputs_correspond(d, la, lb)))
            la = NULL;
        if (la) pair(d, la->index, lb->index);
    }
    gwr_free(order);
    return r->oom ? -1 : 0;
}

/* ---- 4. what changed in a pair ---- */

typedef struct reasons {
    char s[WHY_MAX];
    size_t n;
    int nattr;
} reasons;

static void why_add(reasons *w, const char *what, const char *name) {
    if (w->n >= sizeof w->s - 1) return;
    int k = snprintf(w->s + w->n, sizeof w->s - w->n, "%s%s%s%s", w->n ? ", " : "", what, name ? " " : "",
                     name ? name : "");
    if (k > 0) w->n += (size_t)k;
    if (w->n > sizeof w->s - 1) w->n = sizeof w->s - 1;
}

/* Compares two numeric constants within d's tolerance: NULL when they
 * agree, else the reason; *max_abs and *nbad for values. */
static const char *weights_cmp(const gwr_diff *d, const gwr_match_const *x, const gwr_match_const *y, double *max_abs,
                               int64_t *nbad) {
    *max_abs = 0, *nbad = 0;
    if (x->dtype != y->dtype) return "weights dtype";
    if (x->rank != y->rank || (x->rank && memcmp(x->dims, y->dims, (size_t)x->rank * sizeof *x->dims)))
        return "weights shape";
    size_t esz = gwr_dtype_size(x->dtype);
    const unsigned char *px = x->data, *py = y->data;
    if (x->data == y->data || !memcmp(px, py, (size_t)x->numel * esz)) return NULL;
    int exact = d->o.rtol == 0 && d->o.atol == 0, ints = gwr_dtype_is_int(x->dtype);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t ia, ib;
        double va, vb;
        if (!memcmp(px + (size_t)i * esz, py + (size_t)i * esz, esz)) continue; /* equal bits */
        if (ints && gwr_match_const_int_at(x, i, &ia) && gwr_match_const_int_at(y, i, &ib)) {
            if (ia == ib) continue;
            va = (double)ia, vb = (double)ib;
        } else {
            va = gwr_match_const_at(x, i), vb = gwr_match_const_at(y, i);
            if (va == vb || (isnan(va) && isnan(vb))) continue;
        }
        double diff = fabs(va - vb);
        if (isnan(diff)) diff = INFINITY;
        if (diff > *max_abs) *max_abs = diff;
        if (exact || !(diff <= d->o.atol + d->o.rtol * fabs(vb))) (*nbad)++;
    }
    return *nbad ? "weights" : NULL;
}

static int add_weight(run *r, int64_t ia, int64_t ib, const char *why, double max_abs, int64_t nbad) {
    gwr_diff *d = r->d;
    if (gwr_grow((void **)&d->w, sizeof *d->w, &d->w_cap, d->nw + 1)) return r->oom = 1, -1;
    d->w[d->nw++] = (gwr_df_weight){ia, ib, why, max_abs, nbad};
    return 0;
}

/* The attributes of a pair that differ, by name, into w (a few, then "..."). */
static void attrs_diff(reasons *w, const gwr_layer *la, const gwr_layer *lb) {
    for (int k = 0; k < la->nattrs + lb->nattrs; k++) {
        const gwr_attr *at = k < la->nattrs ? &la->attrs[k] : &lb->attrs[k - la->nattrs];
        int m = attr_in(k < la->nattrs ? lb : la, at);
        if (k >= la->nattrs && m >= 0) continue; /* seen from a's side */
        if (m >= 0 && gwr_ir_attr_equal(at, k < la->nattrs ? &lb->attrs[m] : &la->attrs[m])) continue;
        if (w->nattr++ == 4) why_add(w, "attr ...", NULL);
        else if (w->nattr < 5) why_add(w, "attr", at->name);
    }
}

static void classify_pair(run *r, int64_t i, int64_t j) {
    gwr_diff *d = r->d;
    const gwr_layer *la = d->a->layers[i], *lb = d->b->layers[j];
    reasons w = {.n = 0};
    w.s[0] = 0;
    if (!same_op(la, lb)) why_add(&w, "op", NULL);
    if (!inputs_correspond(d, la, lb)) why_add(&w, la->ninputs != lb->ninputs ? "inputs count" : "inputs", NULL);
    int weights = gwr_df_is_weight(la) && gwr_df_is_weight(lb);
    if (la->noutputs != lb->noutputs) {
        why_add(&w, "outputs count", NULL);
    } else if (!weights) { /* a weight's type is its value's, compared below */
        for (int k = 0; k < la->noutputs; k++)
            if (!gwr_ir_type_equal(&gwr_ir_outputs(la)[k], &gwr_ir_outputs(lb)[k])) {
                why_add(&w, "output type", NULL);
                break;
            }
    }
    gwr_match_const ca, cb;
    if (weights && gwr_match_const_get(&gwr_ir_outputs(la)[0], &ca) &&
        gwr_match_const_get(&gwr_ir_outputs(lb)[0], &cb)) {
        double max_abs;
        int64_t nbad;
        const char *wr = weights_cmp(d, &ca, &cb, &max_abs, &nbad);
        if (wr) {
            why_add(&w, wr, NULL);
            add_weight(r, i, j, strcmp(wr, "weights") ? wr + 8 : "values", max_abs, nbad);
        }
    } else {
        size_t before = w.n;
        attrs_diff(&w, la, lb);
        if (w.n != before && weights) add_weight(r, i, j, "values", 0, 0);
    }
    if (!w.n) return;
    d->kind_a[i] = d->kind_b[j] = GWR_DIFF_CHANGED;
    d->why_a[i] = d->why_b[j] = fmt(r, "%s", w.s);
}

static void classify(run *r) {
    gwr_diff *d = r->d;
    for (int64_t j = 0; j < d->nb; j++) {
        const gwr_layer *lb = d->b->layers[j];
        if (d->match_b[j] >= 0) {
            classify_pair(r, d->match_b[j], j);
        } else {
            d->kind_b[j] = GWR_DIFF_ADDED;
            if (!live(lb)) {
                d->why_b[j] = "marked removed";
                continue;
            }
            if (d->prov_b[j] >= 0) {
                const gwr_df_prov *p = &d->prov[d->prov_b[j]];
                d->why_b[j] = fmt(r, "made by %s from %" PRId64 " layer%s", p->rule, p->nfrom, p->nfrom == 1 ? "" : "s");
            } else {
                d->why_b[j] = "new";
            }
            if (gwr_df_is_weight(lb)) add_weight(r, -1, j, "added", 0, 0);
        }
        if (live(lb) && !gwr_df_is_weight(lb)) d->counts[d->kind_b[j]]++;
    }
    for (int64_t i = 0; i < d->na; i++) {
        const gwr_layer *la = d->a->layers[i];
        if (d->match_a[i] >= 0) continue;
        d->kind_a[i] = GWR_DIFF_REMOVED;
        if (!live(la)) {
            d->why_a[i] = "marked removed";
            continue;
        }
        if (d->prov_a[i] >= 0) {
            const gwr_df_prov *p = &d->prov[d->prov_a[i]];
            d->why_a[i] = fmt(r, "replaced by %s (%s)", d->b->layers[p->b]->name, p->rule);
        } else {
            d->why_a[i] = "gone";
        }
        if (gwr_df_is_weight(la)) add_weight(r, i, -1, "removed", 0, 0);
        else d->counts[GWR_DIFF_REMOVED]++;
    }
}

/* ---- 5. the interface ---- */

static const char *type_text(run *r, const gwr_tensor *t) {
    char buf[256];
    gwr_tensor_type_str(t, buf, sizeof buf);
    return fmt(r, "%s", buf);
}

static int add_io(run *r, int output, const char *name, const char *change, const gwr_tensor *ta,
                  const gwr_tensor *tb, int64_t pa, int64_t pb) {
    gwr_diff *d = r->d;
    if (gwr_grow((void **)&d->io, sizeof *d->io, &d->io_cap, d->nio + 1)) return r->oom = 1, -1;
    d->io[d->nio++] = (gwr_df_io){output, name, change, ta ? type_text(r, ta) : NULL, tb ? type_text(r, tb) : NULL,
                                  pa, pb};
    return 0;
}

static int defaults_equal(const gwr_weights *x, const gwr_weights *y) {
    if (!x || !y) return !x && !y;
    if (x->dtype == GWR_STRING || y->dtype == GWR_STRING) return 0;
    return values_equal(x, y);
}

/* Inputs (output 0) or outputs (1) of a against b's, by name. */
static void compare_io(run *r, int output) {
    gwr_diff *d = r->d;
    int64_t na = output ? d->a->noutputs : d->a->ninputs, nb = output ? d->b->noutputs : d->b->ninputs;
    gwr_tensor *const *va = output ? d->a->outputs : d->a->inputs, *const *vb = output ? d->b->outputs : d->b->inputs;
    for (int64_t p = 0; p < na; p++) {
        const gwr_tensor *ta = va[p], *tb = gwr_network_find_tensor(d->b, ta->name);
        int64_t q = !tb ? -1 : output ? tb->output_index : tb->producer ? -1 : tb->out_index;
        if (q < 0) add_io(r, output, ta->name, "removed", ta, NULL, p, -1);
        else if (!gwr_ir_type_equal(ta, tb)) add_io(r, output, ta->name, "retyped", ta, tb, p, q);
        else if (!output && !defaults_equal(gwr_tensor_default(ta), gwr_tensor_default(tb)))
            add_io(r, output, ta->name, "default", ta, tb, p, q);
        else if (p != q) add_io(r, output, ta->name, "moved", ta, tb, p, q);
    }
    for (int64_t q = 0; q < nb; q++) {
        const gwr_tensor *tb = vb[q], *ta = gwr_network_find_tensor(d->a, tb->name);
        int64_t p = !ta ? -1 : output ? ta->output_index : ta->producer ? -1 : ta->out_index;
        if (p < 0) add_io(r, output, tb->name, "added", NULL, tb, -1, q);
    }
}

/* ---- the API ---- */

void gwr_diff_free(gwr_diff *d) {
    if (!d) return;
    for (int64_t k = 0; k < d->nprov; k++) gwr_free(d->prov[k].from);
    gwr_free(d->prov);
    gwr_free(d->io);
    gwr_free(d->w);
    gwr_free(d->kind_a), gwr_free(d->kind_b);
    gwr_free(d->match_a), gwr_free(d->match_b);
    gwr_free(d->why_a), gwr_free(d->why_b);
    gwr_free(d->prov_a), gwr_free(d->prov_b);
    gwr_arena_free(&d->arena);
    gwr_free(d);
}

static int alloc_side(int64_t n, unsigned char **kind, int64_t **match, const char ***why, int64_t **prov) {
    size_t m = (size_t)(n ? n : 1);
    *kind = gwr_calloc(m, 1);
    *match = gwr_malloc(m * sizeof **match);
    *why = gwr_malloc(m * sizeof **why);
    *prov = gwr_malloc(m * sizeof **prov);
    if (!*kind || !*match || !*why || !*prov) return -1;
    for (int64_t i = 0; i < n; i++) (*match)[i] = (*prov)[i] = -1, (*why)[i] = "";
    return 0;
}

gwr_diff *gwr_diff_networks(const gwr_network *a, const gwr_network *b, const gwr_diff_options *o) {
    if (!a || !b) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_diff_networks: NULL network"), NULL;
    gwr_diff_options opt = o ? *o : (gwr_diff_options){0, 0};
    if (!(opt.rtol >= 0) || !(opt.atol >= 0))
        return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_diff_networks: rtol and atol must be >= 0 (got %g, %g)",
                                  opt.rtol, opt.atol), NULL;
    gwr_diff *d = gwr_calloc(1, sizeof *d);
    if (!d) return gwr_set_last_error(GWR_ERR_NOMEM, "gwr_diff_networks: out of memory"), NULL;
    gwr_arena_init(&d->arena);
    d->a = a, d->b = b, d->o = opt;
    d->na = a->nlayers, d->nb = b->nlayers;
    run r = {.d = d};
    int failed = alloc_side(d->na, &d->kind_a, &d->match_a, &d->why_a, &d->prov_a) ||
                 alloc_side(d->nb, &d->kind_b, &d->match_b, &d->why_b, &d->prov_b);
    if (failed) r.oom = 1;
    if (!failed) failed = match_provenance(&r);
    if (!failed) match_names(d), failed = match_structure(&r);
    if (!failed) classify(&r), compare_io(&r, 0), compare_io(&r, 1);
    gwr_ptrmap_free(&r.by_value);
    gwr_free(r.next_value);
    if (failed || r.oom) {
        if (r.oom) gwr_set_last_error(GWR_ERR_NOMEM, "gwr_diff_networks: out of memory");
        gwr_diff_free(d);
        return NULL;
    }
    return d;
}

gwr_diff_kind gwr_diff_kind_a(const gwr_diff *d, int64_t i) {
    return d && i >= 0 && i < d->na ? (gwr_diff_kind)d->kind_a[i] : GWR_DIFF_SAME;
}
gwr_diff_kind gwr_diff_kind_b(const gwr_diff *d, int64_t j) {
    return d && j >= 0 && j < d->nb ? (gwr_diff_kind)d->kind_b[j] : GWR_DIFF_SAME;
}
int64_t gwr_diff_match_a(const gwr_diff *d, int64_t i) { return d && i >= 0 && i < d->na ? d->match_a[i] : -1; }
int64_t gwr_diff_match_b(const gwr_diff *d, int64_t j) { return d && j >= 0 && j < d->nb ? d->match_b[j] : -1; }
const char *gwr_diff_why_a(const gwr_diff *d, int64_t i) { return d && i >= 0 && i < d->na ? d->why_a[i] : ""; }
const char *gwr_diff_why_b(const gwr_diff *d, int64_t j) { return d && j >= 0 && j < d->nb ? d->why_b[j] : ""; }

void gwr_diff_counts(const gwr_diff *d, int64_t *same, int64_t *changed, int64_t *removed, int64_t *added) {
    static const int64_t zero[4];
    const int64_t *c = d ? d->counts : zero;
    if (same) *same = c[GWR_DIFF_SAME];
    if (changed) *changed = c[GWR_DIFF_CHANGED];
    if (removed) *removed = c[GWR_DIFF_REMOVED];
    if (added) *added = c[GWR_DIFF_ADDED];
}

int gwr_diff_identical(const gwr_diff *d) {
    return d && !d->counts[GWR_DIFF_CHANGED] && !d->counts[GWR_DIFF_REMOVED] && !d->counts[GWR_DIFF_ADDED] &&
           !d->nio && !d->nw;
}
