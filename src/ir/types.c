/* types.c - tensors: accessors, dtypes and shapes, value types of other
 * kinds (sequences, maps, optionals), and their text form. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir_internal.h"

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

/* Drops the value type kept for a tensor of a non-tensor kind. */
void gwr_ir_tensor_drop_vtype(gwr_tensor *t) {
    if (t->kind == GWR_VALUE_TENSOR) return;
    gwr_network *net = gwr_ir_tnet(t);
    gwr_type *ty = gwr_ptrmap_get(&net->vtypes, t);
    if (ty) {
        gwr_ir_type_free(ty);
        gwr_ptrmap_del(&net->vtypes, t);
    }
    t->kind = GWR_VALUE_TENSOR;
}

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
    gwr_ir_tensor_drop_vtype(t);
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
        gwr_free((void *)ty->dims);
        gwr_free(ty);
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
    gwr_type *d = gwr_calloc(1, sizeof *d);
    if (!d) goto nomem;
    *d = *src;
    d->rank = rank;
    d->dims = NULL;
    d->elem = NULL;
    if (rank > 0) {
        gwr_dim *dims = gwr_malloc((size_t)rank * sizeof *dims);
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
    gwr_free(d);
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
