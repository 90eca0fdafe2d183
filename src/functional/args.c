/* args.c - gwr_args, an ordered list of named values, and its conversion to
 * layer attributes. */
#include <stdlib.h>
#include <string.h>

#include "functional/functional_internal.h"

/* A named value. Names shorter than ARG_INLINE bytes (all the usual ones)
 * live in the item itself: a list is cloned for every recorded call and
 * every plugin a rewrite re-creates, and a malloc per name was most of
 * that cost. */
enum { ARG_INLINE = 16 };

typedef struct arg {
    char *heap_name;       /* a malloc'd copy of a long name, or NULL */
    char inl[ARG_INLINE];  /* a short name, when heap_name is NULL */
    gwr_arg_type type;
    int n;                 /* element count for lists */
    union {
        gwr_tensor *t;
        gwr_tensor **ts;
        int64_t i;
        double f;
        char *s;
        int64_t *ints;
        double *floats;
    } v;
} arg;

struct gwr_args {
    arg *items;
    int64_t n, cap;
    char errmsg[GWR_ERRMSG_MAX];
};

static const char *arg_name(const arg *x) { return x->heap_name ? x->heap_name : x->inl; }

/* Gives x a copy of name; -1 on allocation failure. */
static int arg_set_name(arg *x, const char *name) {
    size_t len = strlen(name);
    if (len < ARG_INLINE) {
        memcpy(x->inl, name, len + 1);
        x->heap_name = NULL;
        return 0;
    }
    return (x->heap_name = gwr_strdup(name)) ? 0 : -1;
}

const char *gwr_arg_type_name(gwr_arg_type t) {
    static const char *const names[] = {"none", "tensor", "tensors", "int", "float", "string", "ints", "floats"};
    return (unsigned)t <= GWR_ARG_FLOATS ? names[t] : "unknown";
}

gwr_args *gwr_args_new(void) {
    /* Not calloc: the message buffer need not be zeroed. */
    gwr_args *a = gwr_malloc(sizeof *a);
    if (!a) {
        gwr_set_last_error(GWR_ERR_NOMEM, "gwr_args_new: out of memory");
        return NULL;
    }
    a->items = NULL;
    a->n = a->cap = 0;
    a->errmsg[0] = 0;
    return a;
}

static void value_free(arg *x) {
    switch (x->type) {
    case GWR_ARG_TENSORS: gwr_free(x->v.ts); break;
    case GWR_ARG_STRING: gwr_free(x->v.s); break;
    case GWR_ARG_INTS: gwr_free(x->v.ints); break;
    case GWR_ARG_FLOATS: gwr_free(x->v.floats); break;
    default: break;
    }
    x->type = GWR_ARG_NONE;
    x->n = 0;
}

/* Sets dst's value (freed first) to a deep copy of src's; on allocation
 * failure dst is left NONE and -1 returned. */
static int value_copy(arg *dst, const arg *src) {
    value_free(dst);
    arg v = *src;
    switch (src->type) {
    case GWR_ARG_TENSORS:
        v.v.ts = (gwr_tensor **)gwr_memdup(src->v.ts, (size_t)src->n * sizeof *src->v.ts);
        if (!v.v.ts) return -1;
        break;
    case GWR_ARG_STRING:
        if (!(v.v.s = gwr_strdup(src->v.s))) return -1;
        break;
    case GWR_ARG_INTS:
        v.v.ints = (int64_t *)gwr_memdup(src->v.ints, (size_t)src->n * sizeof *src->v.ints);
        if (!v.v.ints) return -1;
        break;
    case GWR_ARG_FLOATS:
        v.v.floats = (double *)gwr_memdup(src->v.floats, (size_t)src->n * sizeof *src->v.floats);
        if (!v.v.floats) return -1;
        break;
    default: break;
    }
    dst->type = v.type;
    dst->n = v.n;
    dst->v = v.v;
    return 0;
}

void gwr_args_free(gwr_args *a) {
    if (!a) return;
    for (int64_t i = 0; i < a->n; i++) {
        value_free(&a->items[i]);
        gwr_free(a->items[i].heap_name);
    }
    gwr_free(a->items);
    gwr_free(a);
}

int gwr_args_count(const gwr_args *a) { return a ? (int)a->n : -1; }
const char *gwr_args_name(const gwr_args *a, int i) { return a && i >= 0 && i < a->n ? arg_name(&a->items[i]) : NULL; }
gwr_arg_type gwr_args_type(const gwr_args *a, int i) {
    return a && i >= 0 && i < a->n ? a->items[i].type : GWR_ARG_NONE;
}
const char *gwr_args_errmsg(const gwr_args *a) { return a ? a->errmsg : gwr_last_errmsg(); }

int gwr_args_find(const gwr_args *a, const char *name) {
    if (!a || !name) return -1;
    for (int64_t i = 0; i < a->n; i++) {
        const char *n = arg_name(&a->items[i]);
        if (n[0] == name[0] && !strcmp(n, name)) return (int)i;
    }
    return -1;
}

gwr_status gwr_args_remove(gwr_args *a, const char *name) {
    if (!a || !name) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_args_remove: NULL argument");
    int i = gwr_args_find(a, name);
    if (i < 0) return gwr_fmt_error(a->errmsg, GWR_ERR_NOT_FOUND, "no argument '%s'", name);
    value_free(&a->items[i]);
    gwr_free(a->items[i].heap_name);
    memmove(&a->items[i], &a->items[i + 1], (size_t)(a->n - i - 1) * sizeof *a->items);
    a->n--;
    return GWR_OK;
}

/* The slot for `name`, created at the end (as NONE) when absent. */
static arg *slot_for(gwr_args *a, const char *name, gwr_status *st) {
    if (!a || !name) {
        *st = gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_args setter: NULL argument");
        return NULL;
    }
    if (!*name) {
        *st = gwr_fmt_error(a->errmsg, GWR_ERR_INVALID_ARG, "empty argument name");
        return NULL;
    }
    int i = gwr_args_find(a, name);
    if (i >= 0) return &a->items[i];
    if (gwr_grow((void **)&a->items, sizeof *a->items, &a->cap, a->n + 1)) {
        *st = gwr_fmt_error(a->errmsg, GWR_ERR_NOMEM, "out of memory");
        return NULL;
    }
    arg *x = &a->items[a->n];
    memset(x, 0, sizeof *x);
    if (arg_set_name(x, name)) {
        *st = gwr_fmt_error(a->errmsg, GWR_ERR_NOMEM, "out of memory");
        return NULL;
    }
    a->n++;
    return x;
}

/* Sets a value built by the caller into slot `name`. */
static gwr_status put(gwr_args *a, const char *name, const arg *val) {
    gwr_status st = GWR_OK;
    arg *x = slot_for(a, name, &st);
    if (!x) return st;
    value_free(x);
    x->type = val->type;
    x->n = val->n;
    x->v = val->v;
    return GWR_OK;
}

static gwr_status nomem(gwr_args *a) { return gwr_fmt_error(a->errmsg, GWR_ERR_NOMEM, "out of memory"); }

static gwr_status count_ok(gwr_args *a, const char *name, int n, const void *v) {
    if (!a || !name) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_args setter: NULL argument");
    if (n < 0 || (n && !v))
        return gwr_fmt_error(a->errmsg, GWR_ERR_INVALID_ARG, "argument '%s': bad list (n=%d)", name, n);
    return GWR_OK;
}

gwr_status gwr_args_set_none(gwr_args *a, const char *name) {
    arg v = {.type = GWR_ARG_NONE};
    return put(a, name, &v);
}

gwr_status gwr_args_set_tensor(gwr_args *a, const char *name, gwr_tensor *t) {
    arg v = {.type = t ? GWR_ARG_TENSOR : GWR_ARG_NONE, .v.t = t};
    return put(a, name, &v);
}

gwr_status gwr_args_set_tensors(gwr_args *a, const char *name, int n, gwr_tensor *const *t) {
    gwr_status s = count_ok(a, name, n, t);
    if (s) return s;
    arg v = {.type = GWR_ARG_TENSORS, .n = n, .v.ts = gwr_malloc((size_t)(n ? n : 1) * sizeof *t)};
    if (!v.v.ts) return nomem(a);
    if (n) memcpy(v.v.ts, t, (size_t)n * sizeof *t);
    if ((s = put(a, name, &v))) gwr_free(v.v.ts);
    return s;
}

gwr_status gwr_args_set_int(gwr_args *a, const char *name, int64_t i) {
    arg v = {.type = GWR_ARG_INT, .v.i = i};
    return put(a, name, &v);
}

gwr_status gwr_args_set_float(gwr_args *a, const char *name, double f) {
    arg v = {.type = GWR_ARG_FLOAT, .v.f = f};
    return put(a, name, &v);
}

gwr_status gwr_args_set_string(gwr_args *a, const char *name, const char *str) {
    gwr_status s = count_ok(a, name, 1, str);
    if (s) return s;
    arg v = {.type = GWR_ARG_STRING, .v.s = gwr_strdup(str)};
    if (!v.v.s) return nomem(a);
    if ((s = put(a, name, &v))) gwr_free(v.v.s);
    return s;
}

gwr_status gwr_args_set_ints(gwr_args *a, const char *name, int n, const int64_t *p) {
    gwr_status s = count_ok(a, name, n, p);
    if (s) return s;
    arg v = {.type = GWR_ARG_INTS, .n = n, .v.ints = (int64_t *)gwr_memdup(p, (size_t)n * sizeof *p)};
    if (!v.v.ints) return nomem(a);
    if ((s = put(a, name, &v))) gwr_free(v.v.ints);
    return s;
}

gwr_status gwr_args_set_floats(gwr_args *a, const char *name, int n, const double *p) {
    gwr_status s = count_ok(a, name, n, p);
    if (s) return s;
    arg v = {.type = GWR_ARG_FLOATS, .n = n, .v.floats = (double *)gwr_memdup(p, (size_t)n * sizeof *p)};
    if (!v.v.floats) return nomem(a);
    if ((s = put(a, name, &v))) gwr_free(v.v.floats);
    return s;
}

gwr_status gwr_fn_args_set_item(gwr_args *dst, int j, const gwr_args *src, int i) {
    return value_copy(&dst->items[j], &src->items[i]) ? nomem(dst) : GWR_OK;
}

gwr_args *gwr_args_clone(const gwr_args *a) {
    if (!a) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_args_clone: NULL argument");
        return NULL;
    }
    gwr_args *c = gwr_args_new();
    if (!c) return NULL;
    /* Item by item, without looking names up: they are distinct in a. */
    if (a->n && !(c->items = gwr_malloc((size_t)a->n * sizeof *c->items))) goto nomem;
    c->cap = a->n;
    for (int64_t i = 0; i < a->n; i++) {
        arg *x = &c->items[i];
        memset(x, 0, sizeof *x);
        if (arg_set_name(x, arg_name(&a->items[i]))) goto nomem;
        c->n++;
        if (value_copy(x, &a->items[i])) goto nomem;
    }
    return c;
nomem:
    gwr_set_last_error(GWR_ERR_NOMEM, "gwr_args_clone: out of memory");
    gwr_args_free(c);
    return NULL;
}

/* ---- getters ---- */

static const arg *get(const gwr_args *a, const char *name, gwr_status *st) {
    if (!a || !name) {
        *st = gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_args getter: NULL argument");
        return NULL;
    }
    int i = gwr_args_find(a, name);
    if (i < 0) {
        *st = gwr_fmt_error(((gwr_args *)a)->errmsg, GWR_ERR_NOT_FOUND, "no argument '%s'", name);
        return NULL;
    }
    return &a->items[i];
}

static gwr_status mistyped(const gwr_args *a, const arg *x, gwr_arg_type want) {
    return gwr_fmt_error(((gwr_args *)a)->errmsg, GWR_ERR_TYPE, "argument '%s' is %s, not %s", arg_name(x),
                         gwr_arg_type_name(x->type), gwr_arg_type_name(want));
}

int gwr_args_is_none(const gwr_args *a, const char *name) {
    int i = gwr_args_find(a, name);
    return i >= 0 && a->items[i].type == GWR_ARG_NONE;
}

gwr_status gwr_args_get_tensor(const gwr_args *a, const char *name, gwr_tensor **out) {
    gwr_status s = GWR_OK;
    const arg *x = get(a, name, &s);
    if (!x) return s;
    if (x->type != GWR_ARG_TENSOR && x->type != GWR_ARG_NONE) return mistyped(a, x, GWR_ARG_TENSOR);
    if (out) *out = x->type == GWR_ARG_TENSOR ? x->v.t : NULL;
    return GWR_OK;
}

gwr_status gwr_args_get_tensors(const gwr_args *a, const char *name, gwr_tensor *const **out, int *n) {
    gwr_status s = GWR_OK;
    const arg *x = get(a, name, &s);
    if (!x) return s;
    if (x->type != GWR_ARG_TENSORS) return mistyped(a, x, GWR_ARG_TENSORS);
    if (out) *out = x->v.ts;
    if (n) *n = x->n;
    return GWR_OK;
}

gwr_status gwr_args_get_int(const gwr_args *a, const char *name, int64_t *out) {
    gwr_status s = GWR_OK;
    const arg *x = get(a, name, &s);
    if (!x) return s;
    if (x->type != GWR_ARG_INT) return mistyped(a, x, GWR_ARG_INT);
    if (out) *out = x->v.i;
    return GWR_OK;
}

gwr_status gwr_args_get_float(const gwr_args *a, const char *name, double *out) {
    gwr_status s = GWR_OK;
    const arg *x = get(a, name, &s);
    if (!x) return s;
    if (x->type != GWR_ARG_FLOAT && x->type != GWR_ARG_INT) return mistyped(a, x, GWR_ARG_FLOAT);
    if (out) *out = x->type == GWR_ARG_FLOAT ? x->v.f : (double)x->v.i;
    return GWR_OK;
}

gwr_status gwr_args_get_string(const gwr_args *a, const char *name, const char **out) {
    gwr_status s = GWR_OK;
    const arg *x = get(a, name, &s);
    if (!x) return s;
    if (x->type != GWR_ARG_STRING) return mistyped(a, x, GWR_ARG_STRING);
    if (out) *out = x->v.s;
    return GWR_OK;
}

gwr_status gwr_args_get_ints(const gwr_args *a, const char *name, const int64_t **out, int *n) {
    gwr_status s = GWR_OK;
    const arg *x = get(a, name, &s);
    if (!x) return s;
    if (x->type != GWR_ARG_INTS) return mistyped(a, x, GWR_ARG_INTS);
    if (out) *out = x->v.ints;
    if (n) *n = x->n;
    return GWR_OK;
}

gwr_status gwr_args_get_floats(const gwr_args *a, const char *name, const double **out, int *n) {
    gwr_status s = GWR_OK;
    const arg *x = get(a, name, &s);
    if (!x) return s;
    if (x->type != GWR_ARG_FLOATS) return mistyped(a, x, GWR_ARG_FLOATS);
    if (out) *out = x->v.floats;
    if (n) *n = x->n;
    return GWR_OK;
}

/* ---- internal: tensor references, for the FLayerInfo memo ---- */

/* Replaces every reference to `from` by `to`; returns how many. */
int gwr_fn_args_replace_tensor(gwr_args *a, gwr_tensor *from, gwr_tensor *to) {
    int n = 0;
    for (int64_t i = 0; i < a->n; i++) {
        arg *x = &a->items[i];
        if (x->type == GWR_ARG_TENSOR && x->v.t == from) {
            x->v.t = to, n++;
            if (!to) x->type = GWR_ARG_NONE;
        } else if (x->type == GWR_ARG_TENSORS) {
            for (int k = 0; k < x->n; k++)
                if (x->v.ts[k] == from) x->v.ts[k] = to, n++;
        }
    }
    return n;
}

/* Calls fn(t, ctx) for every tensor referenced. */
void gwr_fn_args_each_tensor(const gwr_args *a, void (*fn)(gwr_tensor *t, void *ctx), void *ctx) {
    for (int64_t i = 0; i < a->n; i++) {
        const arg *x = &a->items[i];
        if (x->type == GWR_ARG_TENSOR) fn(x->v.t, ctx);
        else if (x->type == GWR_ARG_TENSORS)
            for (int k = 0; k < x->n; k++)
                if (x->v.ts[k]) fn(x->v.ts[k], ctx);
    }
}

/* ---- to attributes ---- */

gwr_status gwr_fn_set_attrs(gwr_layer *l, const gwr_args *attrs) {
    if (!attrs) return GWR_OK;
    gwr_network *net = gwr_layer_network(l);
    for (int64_t i = 0; i < attrs->n; i++) {
        const arg *x = &attrs->items[i];
        gwr_status s = GWR_OK;
        switch (x->type) {
        case GWR_ARG_NONE: break;
        case GWR_ARG_INT: s = gwr_layer_set_int(l, arg_name(x), x->v.i); break;
        case GWR_ARG_FLOAT: s = gwr_layer_set_float(l, arg_name(x), (float)x->v.f); break;
        case GWR_ARG_STRING: s = gwr_layer_set_string(l, arg_name(x), x->v.s); break;
        case GWR_ARG_INTS: s = gwr_layer_set_ints(l, arg_name(x), x->v.ints, x->n); break;
        case GWR_ARG_FLOATS: {
            float *f = gwr_malloc((size_t)(x->n ? x->n : 1) * sizeof *f);
            if (!f) return gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
            for (int k = 0; k < x->n; k++) f[k] = (float)x->v.floats[k];
            s = gwr_layer_set_floats(l, arg_name(x), f, x->n);
            gwr_free(f);
            break;
        }
        default:
            return gwr_ir_error(net, GWR_ERR_TYPE, "%s '%s': argument '%s' is a %s, which cannot be an attribute",
                                gwr_layer_op(l), gwr_layer_name(l), arg_name(x), gwr_arg_type_name(x->type));
        }
        if (s) return s;
    }
    return GWR_OK;
}
