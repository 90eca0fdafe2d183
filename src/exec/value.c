/* value.c - gwr_value: dense tensors for the executor, element access for
 * kernels, half-precision conversion and broadcasting helpers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec_internal.h"
#include "util/util.h"

/* ---- values -------------------------------------------------------------- */

static int set_shape(gwr_value *v, int rank, const int64_t *dims) {
    v->rank = rank;
    v->dims = rank <= (int)(sizeof v->dims_small / sizeof *v->dims_small) ? v->dims_small
                                                                           : gwr_malloc((size_t)rank * sizeof *v->dims);
    if (!v->dims) return -1;
    if (rank) memcpy(v->dims, dims, (size_t)rank * sizeof *dims);
    v->numel = gwr_shape_numel(rank, dims);
    return 0;
}

static gwr_status check_type(gwr_dtype dtype, int rank, const int64_t *dims, int64_t *numel, size_t *nbytes) {
    if (!gwr_dtype_is_valid(dtype) || dtype == GWR_UNDEFINED)
        return gwr_set_last_error(GWR_ERR_INVALID_ARG, "value: bad dtype %d", (int)dtype);
    if (rank < 0 || rank > GWR_MAX_RANK || (rank && !dims))
        return gwr_set_last_error(GWR_ERR_INVALID_ARG, "value: bad rank %d", rank);
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "value: dim %d is negative", i);
    int64_t n = gwr_shape_numel(rank, dims);
    size_t esz = dtype == GWR_STRING ? sizeof(gwr_bytes) : 0;
    int bits = gwr_dtype_bits(dtype);
    if (n < 0 || (uint64_t)n > ((uint64_t)1 << 56) / (uint64_t)(bits ? bits : 64))
        return gwr_set_last_error(GWR_ERR_INVALID_ARG, "value: too many elements");
    *numel = n;
    *nbytes = esz ? (size_t)n * esz : (size_t)(((uint64_t)n * (uint64_t)bits + 7) / 8);
    return GWR_OK;
}

gwr_value *gwr_value_over(gwr_buffer *buf, void *data, gwr_dtype dtype, int rank, const int64_t *dims) {
    int64_t numel;
    size_t nbytes;
    if (check_type(dtype, rank, dims, &numel, &nbytes)) return NULL;
    gwr_value *v = gwr_calloc(1, sizeof *v);
    if (!v || set_shape(v, rank, dims)) {
        gwr_free(v);
        gwr_set_last_error(GWR_ERR_NOMEM, "value: out of memory");
        return NULL;
    }
    atomic_init(&v->refs, 1);
    v->dtype = dtype;
    v->nbytes = nbytes;
    if (dtype == GWR_STRING) {
        v->data = gwr_calloc((size_t)(numel ? numel : 1), sizeof(gwr_bytes));
        if (!v->data) {
            gwr_value_release(v);
            gwr_set_last_error(GWR_ERR_NOMEM, "value: out of memory");
            return NULL;
        }
    } else {
        gwr_buffer_retain(buf);
        v->buf = buf;
        v->data = data;
    }
    return v;
}

gwr_value *gwr_value_new(gwr_dtype dtype, int rank, const int64_t *dims) {
    int64_t numel;
    size_t nbytes;
    if (check_type(dtype, rank, dims, &numel, &nbytes)) return NULL;
    if (dtype == GWR_STRING) return gwr_value_over(NULL, NULL, dtype, rank, dims);
    gwr_buffer *b = gwr_buffer_new_copy(NULL, nbytes);
    if (!b) return NULL;
    gwr_value *v = gwr_value_over(b, (void *)(uintptr_t)gwr_buffer_data(b), dtype, rank, dims);
    gwr_buffer_release(b);
    return v;
}

gwr_value *gwr_value_from_weights(const gwr_weights *w) {
    if (!w) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_value_from_weights: NULL weights");
        return NULL;
    }
    if (w->dtype == GWR_STRING) {
        gwr_value *v = gwr_value_over(NULL, NULL, w->dtype, w->rank, w->dims);
        const gwr_bytes *b = w->data;
        for (int64_t i = 0; v && i < v->numel; i++)
            if (gwr_value_set_string(v, i, b[i].data, b[i].len)) {
                gwr_value_release(v);
                return NULL;
            }
        return v;
    }
    gwr_value *v = gwr_value_over(w->buffer, (void *)(uintptr_t)w->data, w->dtype, w->rank, w->dims);
    if (v && v->nbytes != w->nbytes) {
        gwr_value_release(v);
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_value_from_weights: %zu bytes for %zu", w->nbytes, v->nbytes);
        return NULL;
    }
    return v;
}

static void kv_unref(gwr_kv_store *kv) {
    if (kv && atomic_fetch_sub(&kv->refs, 1) == 1) gwr_free(kv);
}

gwr_value *gwr_value_retain(gwr_value *v) {
    if (v) atomic_fetch_add(&v->refs, 1);
    return v;
}

void gwr_value_release(gwr_value *v) {
    if (!v || atomic_fetch_sub(&v->refs, 1) != 1) return;
    for (int64_t i = 0; i < v->nelems; i++) gwr_value_release(v->elems[i]);
    gwr_free(v->elems);
    if (v->dtype == GWR_STRING && v->data) {
        gwr_bytes *b = v->data;
        for (int64_t i = 0; i < v->numel; i++) gwr_free((void *)(uintptr_t)b[i].data);
        gwr_free(v->data);
    }
    gwr_buffer_release(v->buf);
    kv_unref(v->kv);
    if (v->dims != v->dims_small) gwr_free(v->dims);
    gwr_free(v);
}

/* ---- sequences and optionals --------------------------------------------- */

/* An empty value of kind with room for n elements; NULL after
 * gwr_set_last_error. */
static gwr_value *new_holder(gwr_value_kind kind, gwr_dtype dtype, int64_t n) {
    gwr_value *v = gwr_calloc(1, sizeof *v);
    if (v && n > 0 && !(v->elems = gwr_calloc((size_t)n, sizeof *v->elems))) gwr_free(v), v = NULL;
    if (!v) {
        gwr_set_last_error(GWR_ERR_NOMEM, "value: out of memory");
        return NULL;
    }
    atomic_init(&v->refs, 1);
    v->kind = kind, v->dtype = dtype, v->dims = v->dims_small;
    return v;
}

gwr_value *gwr_value_new_sequence(gwr_dtype dtype, int64_t n, gwr_value *const *elems) {
    if (n < 0 || (n && !elems) || (dtype != GWR_UNDEFINED && !gwr_dtype_is_valid(dtype))) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_value_new_sequence: bad argument");
        return NULL;
    }
    if (dtype == GWR_UNDEFINED && n) dtype = elems[0] ? elems[0]->dtype : GWR_UNDEFINED;
    for (int64_t i = 0; i < n; i++) {
        if (!elems[i] || !gwr_value_is_tensor(elems[i])) {
            gwr_set_last_error(GWR_ERR_TYPE, "sequence element %lld is %s, not a tensor", (long long)i,
                               elems[i] ? gwr_value_kind_name(elems[i]->kind) : "NULL");
            return NULL;
        }
        if (elems[i]->dtype != dtype) {
            gwr_set_last_error(GWR_ERR_TYPE, "sequence element %lld is %s in a sequence of %s", (long long)i,
                               gwr_dtype_name(elems[i]->dtype), gwr_dtype_name(dtype));
            return NULL;
        }
    }
    gwr_value *v = new_holder(GWR_VALUE_SEQUENCE, dtype, n);
    for (int64_t i = 0; v && i < n; i++) v->elems[v->nelems++] = gwr_value_retain(elems[i]);
    return v;
}

gwr_value *gwr_value_new_optional(gwr_value *elem, gwr_dtype dtype) {
    if (elem && elem->kind != GWR_VALUE_TENSOR && elem->kind != GWR_VALUE_SEQUENCE) {
        gwr_set_last_error(GWR_ERR_TYPE, "an optional holds a tensor or a sequence, not %s", gwr_value_kind_name(elem->kind));
        return NULL;
    }
    if (dtype != GWR_UNDEFINED && !gwr_dtype_is_valid(dtype)) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_value_new_optional: bad dtype %d", (int)dtype);
        return NULL;
    }
    gwr_value *v = new_holder(GWR_VALUE_OPTIONAL, elem ? elem->dtype : dtype, elem ? 1 : 0);
    if (v && elem) v->elems[v->nelems++] = gwr_value_retain(elem);
    return v;
}

gwr_value_kind gwr_value_get_kind(const gwr_value *v) { return v ? v->kind : GWR_VALUE_TENSOR; }
int64_t gwr_value_length(const gwr_value *v) { return !v || gwr_value_is_tensor(v) ? -1 : v->nelems; }
gwr_value *gwr_value_element(const gwr_value *v, int64_t i) {
    return v && !gwr_value_is_tensor(v) && i >= 0 && i < v->nelems ? v->elems[i] : NULL;
}

gwr_dtype gwr_value_dtype(const gwr_value *v) { return v ? v->dtype : GWR_UNDEFINED; }
int gwr_value_rank(const gwr_value *v) { return v ? v->rank : -1; }
const int64_t *gwr_value_dims(const gwr_value *v) { return v ? v->dims : NULL; }
int64_t gwr_value_numel(const gwr_value *v) { return v ? v->numel : -1; }
size_t gwr_value_nbytes(const gwr_value *v) { return v ? v->nbytes : 0; }
/* ---- KV-cache values ------------------------------------------------------ */

gwr_value *gwr_value_cache_over(gwr_buffer *buf, void *data, gwr_dtype dtype, const int64_t dims[4], int64_t cap) {
    gwr_kv_store *kv = gwr_calloc(1, sizeof *kv);
    gwr_value *v = kv ? gwr_value_over(buf, data, dtype, 4, dims) : NULL;
    if (!v) {
        gwr_free(kv);
        if (!kv) gwr_set_last_error(GWR_ERR_NOMEM, "value: out of memory");
        return NULL;
    }
    atomic_init(&kv->refs, 1);
    atomic_init(&kv->fill, dims[2]);
    kv->cap = cap;
    v->kv = kv;
    return v;
}

gwr_value *gwr_value_new_cache(gwr_dtype dtype, const int64_t dims[4], int64_t cap) {
    int64_t numel;
    size_t nbytes;
    if (!dims) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_value_new_cache: NULL dims");
        return NULL;
    }
    if (check_type(dtype, 4, dims, &numel, &nbytes)) return NULL;
    if (dtype == GWR_STRING || gwr_dtype_bits(dtype) % 8) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_value_new_cache: %s elements are not whole bytes", gwr_dtype_name(dtype));
        return NULL;
    }
    if (cap < dims[2]) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_value_new_cache: capacity %lld is less than dim 2 (%lld)", (long long)cap,
                           (long long)dims[2]);
        return NULL;
    }
    int64_t room[4] = {dims[0], dims[1], cap, dims[3]};
    if (check_type(dtype, 4, room, &numel, &nbytes)) return NULL;
    gwr_buffer *b = gwr_buffer_new_copy(NULL, nbytes ? nbytes : 1);
    if (!b) return NULL;
    gwr_value *v = gwr_value_cache_over(b, (void *)(uintptr_t)gwr_buffer_data(b), dtype, dims, cap);
    gwr_buffer_release(b);
    return v;
}

int64_t gwr_value_capacity(const gwr_value *v) {
    if (!v || !gwr_value_is_tensor(v) || v->rank != 4) return -1;
    return v->kv ? v->kv->cap : v->dims[2];
}

gwr_value *gwr_value_cache_view(const gwr_value *of, int64_t len) {
    int64_t d[4] = {of->dims[0], of->dims[1], len, of->dims[3]};
    gwr_value *v = gwr_value_over(of->buf, of->data, of->dtype, 4, d);
    if (v) atomic_fetch_add(&of->kv->refs, 1), v->kv = of->kv;
    return v;
}

int gwr_value_cache_claim(const gwr_value *v, int64_t n) {
    if (!v->kv || n < 0 || v->dims[2] > v->kv->cap - n) return 0;
    int64_t want = v->dims[2];
    return atomic_compare_exchange_strong(&v->kv->fill, &want, v->dims[2] + n);
}

void gwr_value_gather(const gwr_value *v, void *dst) {
    if (!gwr_value_strided(v)) {
        if (v->nbytes) memcpy(dst, v->data, v->nbytes);
        return;
    }
    size_t row = (size_t)(v->dims[2] * v->dims[3]) * (size_t)gwr_dtype_bits(v->dtype) / 8;
    size_t stride = (size_t)(v->kv->cap * v->dims[3]) * (size_t)gwr_dtype_bits(v->dtype) / 8;
    for (int64_t h = 0; h < v->dims[0] * v->dims[1]; h++)
        memcpy((char *)dst + (size_t)h * row, (const char *)v->data + (size_t)h * stride, row);
}

gwr_value *gwr_value_dense(gwr_value *v, gwr_exec_pool *pool) {
    if (!gwr_value_strided(v)) return gwr_value_retain(v);
    gwr_buffer *b = pool ? gwr_exec_pool_alloc(pool, v->nbytes) : gwr_buffer_new_copy(NULL, v->nbytes);
    gwr_value *d = b ? gwr_value_over(b, (void *)(uintptr_t)gwr_buffer_data(b), v->dtype, v->rank, v->dims) : NULL;
    gwr_buffer_release(b);
    if (d) gwr_value_gather(v, d->data);
    return d;
}

/* A strided view made dense in place: its own bytes, no longer a view of
 * the cache (which it can then no longer append to). NULL when out of
 * memory (v unchanged). */
static void *detach(gwr_value *v) {
    if (!gwr_value_strided(v)) return v->data;
    gwr_buffer *b = gwr_buffer_new_copy(NULL, v->nbytes);
    if (!b) return NULL;
    void *d = (void *)(uintptr_t)gwr_buffer_data(b);
    gwr_value_gather(v, d);
    gwr_buffer_release(v->buf);
    kv_unref(v->kv);
    v->buf = b, v->data = d, v->kv = NULL;
    return d;
}

/* The element index of dense index i in v's bytes. */
static int64_t elem_at(const gwr_value *v, int64_t i) {
    if (!gwr_value_strided(v)) return i;
    int64_t row = i / v->dims[3];
    return ((row / v->dims[2]) * v->kv->cap + row % v->dims[2]) * v->dims[3] + i % v->dims[3];
}

void *gwr_value_data(gwr_value *v) { return v ? detach(v) : NULL; }
const void *gwr_value_cdata(const gwr_value *v) { return v ? detach((gwr_value *)(uintptr_t)v) : NULL; }

gwr_status gwr_value_set_string(gwr_value *v, int64_t i, const void *data, size_t len) {
    if (!v || v->dtype != GWR_STRING || i < 0 || i >= v->numel || (!data && len))
        return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_value_set_string: bad argument");
    char *d = gwr_malloc(len + 1);
    if (!d) return gwr_set_last_error(GWR_ERR_NOMEM, "gwr_value_set_string: out of memory");
    if (len) memcpy(d, data, len);
    d[len] = 0;
    gwr_bytes *b = &((gwr_bytes *)v->data)[i];
    gwr_free((void *)(uintptr_t)b->data);
    b->data = d, b->len = len;
    return GWR_OK;
}

gwr_status gwr_value_to_weights(const gwr_value *v, gwr_weights *w) {
    if (!v || !w) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_value_to_weights: NULL argument");
    if (!gwr_value_is_tensor(v))
        return gwr_set_last_error(GWR_ERR_TYPE, "gwr_value_to_weights: a %s is not a tensor", gwr_value_kind_name(v->kind));
    if (!detach((gwr_value *)(uintptr_t)v)) return gwr_set_last_error(GWR_ERR_NOMEM, "gwr_value_to_weights: out of memory");
    memset(w, 0, sizeof *w);
    w->dtype = v->dtype, w->rank = v->rank, w->dims = v->dims;
    if (v->dtype != GWR_STRING) {
        gwr_buffer_retain(v->buf);
        w->buffer = v->buf, w->data = v->data, w->nbytes = v->nbytes;
        return GWR_OK;
    }
    /* Strings: entries and bytes in one new buffer, as weights keep them. */
    const gwr_bytes *s = v->data;
    size_t total = (size_t)v->numel * sizeof(gwr_bytes);
    for (int64_t i = 0; i < v->numel; i++) total += s[i].len;
    gwr_buffer *b = gwr_buffer_new_copy(NULL, total);
    if (!b) return GWR_ERR_NOMEM;
    gwr_bytes *e = (gwr_bytes *)(uintptr_t)gwr_buffer_data(b);
    char *p = (char *)(e + v->numel);
    for (int64_t i = 0; i < v->numel; i++) {
        if (s[i].len) memcpy(p, s[i].data, s[i].len);
        e[i].data = p, e[i].len = s[i].len;
        p += s[i].len;
    }
    w->buffer = b, w->data = e, w->nbytes = (size_t)v->numel * sizeof(gwr_bytes);
    return GWR_OK;
}

int gwr_value_type_str(const gwr_value *v, char *buf, size_t size) {
    if (!v) return snprintf(buf, size, "(null)");
    if (v->kind == GWR_VALUE_SEQUENCE)
        return snprintf(buf, size, "sequence(%s)[%lld]", gwr_dtype_name(v->dtype), (long long)v->nelems);
    if (v->kind == GWR_VALUE_OPTIONAL) {
        if (!v->nelems) return snprintf(buf, size, "optional(none)");
        char in[160];
        gwr_value_type_str(v->elems[0], in, sizeof in);
        return snprintf(buf, size, "optional(%s)", in);
    }
    int n = snprintf(buf, size, "%s[", gwr_dtype_name(v->dtype));
    for (int i = 0; i < v->rank; i++)
        n += snprintf(buf + (n < (int)size ? n : (int)size), size > (size_t)n ? size - (size_t)n : 0, "%s%lld",
                      i ? "," : "", (long long)v->dims[i]);
    n += snprintf(buf + (n < (int)size ? n : (int)size), size > (size_t)n ? size - (size_t)n : 0, "]");
    return n;
}

/* ---- half precision ------------------------------------------------------ */

float gwr_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, f;
    if (exp == 0x1f) {
        f = sign | 0x7f800000u | (man << 13);
    } else if (exp) {
        f = sign | ((exp + 112) << 23) | (man << 13);
    } else if (!man) {
        f = sign;
    } else { /* subnormal: normalize */
        int e = -1;
        do man <<= 1, e++;
        while (!(man & 0x400));
        f = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
    }
    float r;
    memcpy(&r, &f, 4);
    return r;
}

uint16_t gwr_f32_to_f16(float x) {
    uint32_t f;
    memcpy(&f, &x, 4);
    uint32_t sign = (f >> 16) & 0x8000, exp = (f >> 23) & 0xff, man = f & 0x7fffff;
    if (exp == 0xff) return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 0x1f) return (uint16_t)(sign | 0x7c00);
    if (e <= 0) {
        if (e < -10) return (uint16_t)sign;
        man |= 0x800000;
        int shift = 14 - e;
        uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++; /* may carry into the exponent: correct */
    return (uint16_t)(sign | half);
}

float gwr_bf16_to_f32(uint16_t h) {
    uint32_t f = (uint32_t)h << 16;
    float r;
    memcpy(&r, &f, 4);
    return r;
}

uint16_t gwr_f32_to_bf16(float x) {
    uint32_t f;
    memcpy(&f, &x, 4);
    if ((f & 0x7f800000u) == 0x7f800000u && (f & 0x7fffff)) return (uint16_t)((f >> 16) | 0x40);
    f += 0x7fff + ((f >> 16) & 1);
    return (uint16_t)(f >> 16);
}

/* ---- element access ------------------------------------------------------ */

double gwr_v_get_f64(const gwr_value *v, int64_t j) {
    const void *p = v->data;
    switch (v->dtype) {
    case GWR_FLOAT32: return ((const float *)p)[j];
    case GWR_FLOAT64: return ((const double *)p)[j];
    case GWR_FLOAT16: return gwr_f16_to_f32(((const uint16_t *)p)[j]);
    case GWR_BFLOAT16: return gwr_bf16_to_f32(((const uint16_t *)p)[j]);
    case GWR_INT8: return ((const int8_t *)p)[j];
    case GWR_UINT8: return ((const uint8_t *)p)[j];
    case GWR_INT16: return ((const int16_t *)p)[j];
    case GWR_UINT16: return ((const uint16_t *)p)[j];
    case GWR_INT32: return ((const int32_t *)p)[j];
    case GWR_UINT32: return ((const uint32_t *)p)[j];
    case GWR_INT64: return (double)((const int64_t *)p)[j];
    case GWR_UINT64: return (double)((const uint64_t *)p)[j];
    case GWR_BOOL: return ((const uint8_t *)p)[j] != 0;
    default:
        return gwr_small_is_small(v->dtype) ? gwr_small_decode(v->dtype, gwr_packed_get(p, gwr_dtype_bits(v->dtype), j)) : NAN;
    }
}

int64_t gwr_v_get_i64(const gwr_value *v, int64_t j) {
    const void *p = v->data;
    switch (v->dtype) {
    case GWR_INT8: return ((const int8_t *)p)[j];
    case GWR_UINT8: return ((const uint8_t *)p)[j];
    case GWR_INT16: return ((const int16_t *)p)[j];
    case GWR_UINT16: return ((const uint16_t *)p)[j];
    case GWR_INT32: return ((const int32_t *)p)[j];
    case GWR_UINT32: return ((const uint32_t *)p)[j];
    case GWR_INT64: return ((const int64_t *)p)[j];
    case GWR_UINT64: return (int64_t)((const uint64_t *)p)[j];
    case GWR_BOOL: return ((const uint8_t *)p)[j] != 0;
    default: {
        double d = gwr_v_get_f64(v, j);
        return d != d ? 0 : d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : (int64_t)d;
    }
    }
}

void gwr_v_set_f64(gwr_value *v, int64_t j, double x) {
    void *p = v->data;
    switch (v->dtype) {
    case GWR_FLOAT32: ((float *)p)[j] = (float)x; break;
    case GWR_FLOAT64: ((double *)p)[j] = x; break;
    case GWR_FLOAT16: ((uint16_t *)p)[j] = gwr_f32_to_f16((float)x); break;
    case GWR_BFLOAT16: ((uint16_t *)p)[j] = gwr_f32_to_bf16((float)x); break;
    case GWR_BOOL: ((uint8_t *)p)[j] = x != 0; break;
    default: {
        /* the small types: as Cast converts (float8 saturating) */
        if (gwr_small_is_small(v->dtype)) {
            gwr_packed_set(p, gwr_dtype_bits(v->dtype), j, gwr_small_encode(v->dtype, x, 1, GWR_E8M0_UP));
            break;
        }
        /* Integers: truncation toward zero, wrapping as the C conversion of
         * an int64 would (NaN and out-of-range values give 0 / the bounds). */
        int64_t i = x != x ? 0 : x >= 9.2e18 ? INT64_MAX : x <= -9.2e18 ? INT64_MIN : (int64_t)x;
        switch (v->dtype) {
        case GWR_INT8: ((int8_t *)p)[j] = (int8_t)i; break;
        case GWR_UINT8: ((uint8_t *)p)[j] = (uint8_t)i; break;
        case GWR_INT16: ((int16_t *)p)[j] = (int16_t)i; break;
        case GWR_UINT16: ((uint16_t *)p)[j] = (uint16_t)i; break;
        case GWR_INT32: ((int32_t *)p)[j] = (int32_t)i; break;
        case GWR_UINT32: ((uint32_t *)p)[j] = (uint32_t)i; break;
        case GWR_INT64: ((int64_t *)p)[j] = i; break;
        case GWR_UINT64: ((uint64_t *)p)[j] = x >= 1.8e19 ? UINT64_MAX : x >= 9.2e18 ? (uint64_t)x : (uint64_t)i; break;
        default: break;
        }
    }
    }
}

/* ---- shapes -------------------------------------------------------------- */

gwr_status gwr_broadcast(int ra, const int64_t *a, int rb, const int64_t *b, int *orank, int64_t *out) {
    int r = ra > rb ? ra : rb;
    for (int i = 0; i < r; i++) {
        int64_t x = i < r - ra ? 1 : a[i - (r - ra)], y = i < r - rb ? 1 : b[i - (r - rb)];
        if (x != y && x != 1 && y != 1) return GWR_ERR_INVALID_ARG;
        out[i] = x == 1 ? y : x;
    }
    *orank = r;
    return GWR_OK;
}

void gwr_strides(int r, const int64_t *d, int64_t *s) {
    int64_t acc = 1;
    for (int i = r - 1; i >= 0; i--) s[i] = acc, acc *= d[i];
}

void gwr_bcast_strides(int r, const int64_t *d, int orank, const int64_t *od, int64_t *s) {
    int64_t acc = 1;
    for (int i = orank - 1; i >= 0; i--) {
        int k = i - (orank - r);
        if (k < 0 || d[k] == 1) {
            s[i] = 0;
            if (k >= 0) acc *= d[k];
        } else {
            s[i] = acc;
            acc *= d[k];
        }
        (void)od;
    }
}

int gwr_axis(int64_t axis, int rank) {
    if (axis < 0) axis += rank;
    return axis >= 0 && axis < rank ? (int)axis : -1;
}

static int numeric(const gwr_value *v, int64_t i) {
    return v && i >= 0 && i < v->numel && v->dtype != GWR_STRING && v->dtype != GWR_COMPLEX64 &&
           v->dtype != GWR_COMPLEX128 && ((gwr_dtype_bits(v->dtype) >= 8 && v->dtype < GWR_FLOAT8E4M3FN) ||
                                          gwr_small_is_small(v->dtype));
}

double gwr_value_get_f64(const gwr_value *v, int64_t i) { return numeric(v, i) ? gwr_v_get_f64(v, elem_at(v, i)) : NAN; }
int64_t gwr_value_get_i64(const gwr_value *v, int64_t i) { return numeric(v, i) ? gwr_v_get_i64(v, elem_at(v, i)) : 0; }
void gwr_value_set_f64(gwr_value *v, int64_t i, double x) {
    if (numeric(v, i) && detach(v)) gwr_v_set_f64(v, i, x);
}
