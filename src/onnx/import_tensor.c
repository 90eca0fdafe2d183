/* import_tensor.c - TensorProto to gwr_weights: every element type, from
 * raw_data (stolen from the unpacked message, not copied), from the typed
 * fields (converted into a new buffer), or from an external file
 * (memory-mapped and borrowed, or copied on request). */
#define _DEFAULT_SOURCE /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx/onnx_common.h"
#include "onnx/onnx_import.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ONNX importer assumes a little-endian host (raw_data is little-endian)"
#endif

/* ---- external files ---- */

struct gwr_oi_map {
    atomic_long refs;
    void *base;
    size_t size;
    int shared; /* a chunk of several tensors' raw_data (raw_room) */
};

static void map_unref(gwr_oi_map *m) {
    if (!m || atomic_fetch_sub(&m->refs, 1) != 1) return;
    if (m->base) munmap(m->base, m->size);
    gwr_free(m);
}

/* A tensor of a shared chunk released: the whole pages inside its bytes
 * hold nothing else (the chunk never hands out a range twice), so they go
 * back to the system now rather than when the last tensor of the chunk
 * goes (a rewrite that drops or replaces a weight, a merged Q/K/V, would
 * otherwise keep it resident as long as any neighbour lives). */
static void map_release(void *ctx, const void *data, size_t size) {
    gwr_oi_map *m = ctx;
    if (m && m->shared && size) {
        uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), b = (uintptr_t)data, e = b + size;
        b = (b + pg - 1) / pg * pg, e = e / pg * pg;
        if (pg > 1 && e > b) (void)madvise((void *)b, e - b, MADV_DONTNEED);
    }
    map_unref(m);
}

static void free_release(void *ctx, const void *data, size_t size) {
    (void)ctx, (void)size;
    gwr_free((void *)data);
}

static void munmap_release(void *ctx, const void *data, size_t size) {
    (void)ctx;
    munmap((void *)data, size);
}

void gwr_oi_ext_close(gwr_oi_ctx *c) {
    map_unref(c->raw_chunk);
    c->raw_chunk = NULL;
    for (int64_t i = 0; i < c->next; i++) {
        gwr_free(c->ext[i].location);
        map_unref(c->ext[i].map);
    }
    gwr_free(c->ext);
    c->ext = NULL;
    c->next = c->extcap = 0;
    gwr_free(c->base_real);
    c->base_real = NULL;
}


/* The mapped external file named `loc` (checked, opened and mapped on
 * first use). NULL with the error recorded. */
static gwr_oi_extfile *ext_open(gwr_oi_ctx *c, const char *loc, const char *what) {
    for (int64_t i = 0; i < c->next; i++)
        if (!strcmp(c->ext[i].location, loc)) return &c->ext[i];
    if (!c->base_dir) {
        gwr_oi_fail(c, GWR_ERR_IO, "%s: external data '%s' cannot be found: the model was loaded from memory without a base directory",
                    what, loc);
        return NULL;
    }
    if (!gwr_onnx_location_ok(loc, 0)) {
        gwr_oi_fail(c, GWR_ERR_PARSE,
                    "%s: external data location '%s' is not a relative path inside the model's directory", what, loc);
        return NULL;
    }
    if (!c->base_real && !(c->base_real = realpath(c->base_dir, NULL))) {
        gwr_oi_fail(c, GWR_ERR_IO, "%s: cannot resolve the model's directory '%s': %s", what, c->base_dir,
                    strerror(errno));
        return NULL;
    }
    size_t bl = strlen(c->base_dir), ll = strlen(loc);
    char *full = gwr_malloc(bl + ll + 2);
    if (!full) {
        gwr_oi_fail(c, GWR_ERR_NOMEM, "out of memory");
        return NULL;
    }
    memcpy(full, c->base_dir, bl);
    full[bl] = '/';
    memcpy(full + bl + 1, loc, ll + 1);
    char *real = realpath(full, NULL);
    gwr_free(full);
    if (!real) {
        gwr_oi_fail(c, GWR_ERR_IO, "%s: cannot open external data file '%s': %s", what, loc, strerror(errno));
        return NULL;
    }
    /* Symlinks may not lead out of the model's directory either. */
    size_t rl = strlen(c->base_real);
    int inside = !strncmp(real, c->base_real, rl) && (real[rl] == '/' || (rl == 1 && c->base_real[0] == '/'));
    if (!inside) {
        gwr_free(real);
        gwr_oi_fail(c, GWR_ERR_PARSE, "%s: external data file '%s' lies outside the model's directory", what, loc);
        return NULL;
    }
    int fd = open(real, O_RDONLY | O_CLOEXEC);
    gwr_free(real);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        int e = fd < 0 ? errno : EINVAL;
        if (fd >= 0) close(fd);
        gwr_oi_fail(c, GWR_ERR_IO, "%s: cannot open external data file '%s': %s", what, loc,
                    e == EINVAL ? "not a regular file" : strerror(e));
        return NULL;
    }
    gwr_oi_map *m = gwr_calloc(1, sizeof *m);
    char *lc = gwr_strdup(loc);
    if (!m || !lc || gwr_grow((void **)&c->ext, sizeof *c->ext, &c->extcap, c->next + 1)) {
        close(fd);
        gwr_free(m), gwr_free(lc);
        gwr_oi_fail(c, GWR_ERR_NOMEM, "out of memory");
        return NULL;
    }
    atomic_init(&m->refs, 1);
    m->size = (size_t)st.st_size;
    if (m->size) {
        void *base = mmap(NULL, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (base == MAP_FAILED) {
            int e = errno;
            close(fd);
            gwr_free(m), gwr_free(lc);
            gwr_oi_fail(c, GWR_ERR_IO, "%s: cannot map external data file '%s': %s", what, loc, strerror(e));
            return NULL;
        }
        m->base = base;
    }
    close(fd);
    gwr_oi_extfile *x = &c->ext[c->next++];
    x->location = lc;
    x->map = m;
    x->size = m->size;
    return x;
}

/* A copy of len bytes at p (an external file's mapping), chunk by chunk,
 * giving the file's whole pages back behind the copy so that the file and
 * the copy are never both resident. Big copies go to memory mapped for
 * huge pages. */
static gwr_buffer *copy_out(const char *p, size_t len) {
    gwr_buffer *b;
    char *dst;
    if (len >= ((size_t)2 << 20)) {
        void *m = gwr_alloc_fails() ? MAP_FAILED : mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
        (void)madvise(m, len, MADV_HUGEPAGE);
#endif
        if (!(b = gwr_buffer_wrap(m, len, munmap_release, NULL))) {
            munmap(m, len);
            return NULL;
        }
        dst = m;
    } else {
        if (!(b = gwr_buffer_new_copy(NULL, len))) return NULL;
        dst = (char *)gwr_buffer_data(b);
    }
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), chunk = (size_t)16 << 20;
    for (size_t done = 0; done < len;) {
        size_t n = len - done < chunk ? len - done : chunk;
        memcpy(dst + done, p + done, n);
        uintptr_t lo = ((uintptr_t)p + done + pg - 1) / pg * pg, hi = ((uintptr_t)p + done + n) / pg * pg;
        if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
        done += n;
    }
    return b;
}

/* A decimal size from an external_data entry; -1 when malformed. */
static int parse_size(const char *s, uint64_t *out) {
    uint64_t v = 0;
    if (!s || !*s) return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10) return -1;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return 0;
}

/* The alignment typed reads of dtype need (complex types: their parts). */
static size_t dtype_align(gwr_dtype t) {
    size_t s = gwr_dtype_size(t);
    if (t == GWR_COMPLEX64) return 4;
    if (t == GWR_COMPLEX128) return 8;
    return s ? s : 1;
}

static gwr_status external_data(gwr_oi_ctx *c, Onnx__TensorProto *t, const char *what, gwr_dtype dt, size_t nbytes,
                                gwr_buffer **buf, const void **data) {
    const char *loc = NULL;
    uint64_t off = 0, len = 0;
    int has_len = 0;
    for (size_t i = 0; i < t->n_external_data; i++) {
        const char *k = t->external_data[i]->key ? t->external_data[i]->key : "";
        const char *v = t->external_data[i]->value ? t->external_data[i]->value : "";
        if (!strcmp(k, "location")) {
            loc = v;
        } else if (!strcmp(k, "offset")) {
            if (parse_size(v, &off))
                return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: external data offset '%s' is not a non-negative integer", what, v);
        } else if (!strcmp(k, "length")) {
            if (parse_size(v, &len))
                return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: external data length '%s' is not a non-negative integer", what, v);
            has_len = 1;
        }
    }
    if (!loc) return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: external data without a 'location'", what);
    if (dt == GWR_STRING) return gwr_oi_fail(c, GWR_ERR_UNSUPPORTED, "%s: string tensors cannot use external data", what);
    gwr_oi_extfile *x = ext_open(c, loc, what);
    if (!x) return c->st;
    uint64_t span = has_len ? len : (uint64_t)nbytes;
    if (off > x->size || span > x->size - off)
        return gwr_oi_fail(c, GWR_ERR_PARSE,
                           "%s: external data [%llu, %llu) lies past the end of '%s' (%zu bytes)", what,
                           (unsigned long long)off, (unsigned long long)off + (unsigned long long)span, loc, x->size);
    if (has_len && len != nbytes)
        return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: external data length %llu does not match the %zu bytes its shape needs",
                           what, (unsigned long long)len, nbytes);
    const char *p = (const char *)x->map->base + off;
    if (!nbytes || c->opt.copy_external_data || (uintptr_t)p % dtype_align(dt)) {
        /* Copied: on request, and when misaligned for typed reads. */
        *buf = nbytes ? copy_out(p, nbytes) : gwr_buffer_new_copy(NULL, 0);
    } else {
        atomic_fetch_add(&x->map->refs, 1);
        *buf = gwr_buffer_wrap(p, nbytes, map_release, x->map);
        if (!*buf) map_unref(x->map);
    }
    if (!*buf) return gwr_oi_fail(c, GWR_ERR_NOMEM, "%s: out of memory", what);
    *data = gwr_buffer_data(*buf);
    return GWR_OK;
}

/* ---- typed fields ---- */

static const char *typed_field_name(int k) {
    static const char *const names[] = {"float_data", "int32_data", "string_data", "int64_data", "double_data",
                                        "uint64_data"};
    return names[k];
}

enum { TF_FLOAT, TF_INT32, TF_STRING, TF_INT64, TF_DOUBLE, TF_UINT64, TF_NONE };

static size_t typed_count(const Onnx__TensorProto *t, int k) {
    switch (k) {
    case TF_FLOAT: return t->n_float_data;
    case TF_INT32: return t->n_int32_data;
    case TF_STRING: return t->n_string_data;
    case TF_INT64: return t->n_int64_data;
    case TF_DOUBLE: return t->n_double_data;
    case TF_UINT64: return t->n_uint64_data;
    default: return 0;
    }
}

/* Which typed field holds dtype's values, and how many entries per
 * element (2 for complex; for the 4-bit types, see want_count). */
static int typed_field_of(gwr_dtype dt) {
    switch (dt) {
    case GWR_FLOAT32:
    case GWR_COMPLEX64: return TF_FLOAT;
    case GWR_INT64: return TF_INT64;
    case GWR_FLOAT64:
    case GWR_COMPLEX128: return TF_DOUBLE;
    case GWR_UINT32:
    case GWR_UINT64: return TF_UINT64;
    case GWR_STRING: return TF_STRING;
    default: return TF_INT32; /* every 4/8/16/32-bit integer, bool, float16, bfloat16, float8 */
    }
}

static gwr_status typed_data(gwr_oi_ctx *c, Onnx__TensorProto *t, const char *what, gwr_dtype dt, int64_t numel,
                             size_t nbytes, gwr_buffer **buf, const void **data) {
    int k = typed_field_of(dt);
    for (int o = TF_FLOAT; o < TF_NONE; o++)
        if (o != k && typed_count(t, o))
            return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: a %s tensor cannot store its values in %s", what,
                               gwr_dtype_name(dt), typed_field_name(o));
    uint64_t want = (uint64_t)numel;
    if (dt == GWR_COMPLEX64 || dt == GWR_COMPLEX128) want *= 2;
    if (dt != GWR_STRING && gwr_dtype_bits(dt) < 8) /* sub-byte types: one packed byte per entry (2 or 4 elements) */
        want = (want * (uint64_t)gwr_dtype_bits(dt) + 7) / 8;
    size_t have = typed_count(t, k);
    if (have != want)
        return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: %zu values in %s, but its shape needs %llu", what, have,
                           typed_field_name(k), (unsigned long long)want);
    if (dt == GWR_STRING) {
        size_t total = nbytes;
        for (size_t i = 0; i < have; i++) total += t->string_data[i].len + 1;
        gwr_buffer *b = gwr_buffer_new_copy(NULL, total);
        if (!b) return gwr_oi_fail(c, GWR_ERR_NOMEM, "%s: out of memory", what);
        gwr_bytes *arr = (gwr_bytes *)gwr_buffer_data(b);
        char *p = (char *)(arr + have);
        for (size_t i = 0; i < have; i++) {
            size_t n = t->string_data[i].len;
            if (n) memcpy(p, t->string_data[i].data, n);
            p[n] = 0;
            arr[i].len = n;
            arr[i].data = p;
            p += n + 1;
        }
        *buf = b;
        *data = arr;
        return GWR_OK;
    }
    gwr_buffer *b = gwr_buffer_new_copy(NULL, nbytes);
    if (!b) return gwr_oi_fail(c, GWR_ERR_NOMEM, "%s: out of memory (%zu bytes)", what, nbytes);
    void *out = (void *)gwr_buffer_data(b);
    switch (k) {
    case TF_FLOAT:
        if (nbytes) memcpy(out, t->float_data, nbytes);
        break;
    case TF_INT64:
        if (nbytes) memcpy(out, t->int64_data, nbytes);
        break;
    case TF_DOUBLE:
        if (nbytes) memcpy(out, t->double_data, nbytes);
        break;
    case TF_UINT64:
        if (dt == GWR_UINT64) {
            if (nbytes) memcpy(out, t->uint64_data, nbytes);
        } else {
            for (size_t i = 0; i < have; i++) ((uint32_t *)out)[i] = (uint32_t)t->uint64_data[i];
        }
        break;
    default: /* TF_INT32 */
        switch (gwr_dtype_size(dt)) {
        case 4:
            if (nbytes) memcpy(out, t->int32_data, nbytes);
            break;
        case 2:
            for (size_t i = 0; i < have; i++) ((uint16_t *)out)[i] = (uint16_t)t->int32_data[i];
            break;
        default:
            if (dt == GWR_BOOL)
                for (size_t i = 0; i < have; i++) ((uint8_t *)out)[i] = t->int32_data[i] != 0;
            else
                for (size_t i = 0; i < have; i++) ((uint8_t *)out)[i] = (uint8_t)t->int32_data[i];
            break;
        }
    }
    *buf = b;
    *data = out;
    return GWR_OK;
}

/* ---- the tensor ---- */

/* Checks data_type and dims; w gets dtype, rank, dims and nbytes. */
static gwr_status tensor_header(gwr_oi_ctx *c, int has_dtype, int32_t dtype, size_t rank, const int64_t *dims,
                                const char *what, gwr_weights *w) {
    if (!has_dtype || dtype == 0) return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: no data_type", what);
    if (!gwr_dtype_is_valid((gwr_dtype)dtype) || dtype < 0)
        return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: unknown data_type %d", what, (int)dtype);
    gwr_dtype dt = (gwr_dtype)dtype;
    if (rank > GWR_MAX_RANK) return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: rank %zu exceeds %d", what, rank, GWR_MAX_RANK);
    for (size_t i = 0; i < rank; i++)
        if (dims[i] < 0)
            return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: dim %zu is negative (%lld)", what, i, (long long)dims[i]);
    int64_t numel = gwr_shape_numel((int)rank, dims);
    int bits = gwr_dtype_bits(dt);
    if (numel < 0 || (dt != GWR_STRING && (uint64_t)numel > (UINT64_MAX - 7) / (uint64_t)bits) ||
        (dt == GWR_STRING && (uint64_t)numel > SIZE_MAX / sizeof(gwr_bytes)))
        return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: its dims overflow the element count", what);
    uint64_t nb = dt == GWR_STRING ? (uint64_t)numel * sizeof(gwr_bytes) : ((uint64_t)numel * (uint64_t)bits + 7) / 8;
    if (nb > SIZE_MAX / 2 || nb > (uint64_t)INT64_MAX)
        return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: %llu bytes is too large", what, (unsigned long long)nb);
    w->dtype = dt;
    w->rank = (int)rank;
    w->dims = dims;
    w->nbytes = (size_t)nb;
    return GWR_OK;
}

static gwr_status raw_len_check(gwr_oi_ctx *c, const gwr_weights *w, size_t len, const char *what) {
    if (w->dtype == GWR_STRING) return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: string tensors cannot use raw_data", what);
    if (len != w->nbytes)
        return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: raw_data has %zu bytes, but %s%s needs %zu", what, len,
                           gwr_dtype_name(w->dtype), w->rank ? " of its shape" : " scalar", w->nbytes);
    return GWR_OK;
}

gwr_status gwr_oi_tensor(gwr_oi_ctx *c, Onnx__TensorProto *t, const char *what, gwr_weights *w) {
    memset(w, 0, sizeof *w);
    if (t->segment) return gwr_oi_fail(c, GWR_ERR_UNSUPPORTED, "%s: segmented tensors are not supported", what);
    if (tensor_header(c, t->has_data_type, t->data_type, t->n_dims, t->dims, what, w)) return c->st;
    gwr_dtype dt = w->dtype;
    int64_t numel = gwr_shape_numel(w->rank, w->dims);
    size_t nbytes = w->nbytes;
    w->name = t->name && *t->name ? t->name : NULL;
    gwr_buffer *buf = NULL;
    const void *data = NULL;
    gwr_status s;
    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        s = external_data(c, t, what, dt, nbytes, &buf, &data);
    } else if (t->has_data_location && t->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT) {
        s = gwr_oi_fail(c, GWR_ERR_PARSE, "%s: unknown data_location %d", what, (int)t->data_location);
    } else if (t->has_raw_data) {
        if (dt == GWR_STRING) return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: string tensors cannot use raw_data", what);
        for (int o = TF_FLOAT; o < TF_NONE; o++)
            if (typed_count(t, o))
                return gwr_oi_fail(c, GWR_ERR_PARSE, "%s: has both raw_data and %s", what, typed_field_name(o));
        if (raw_len_check(c, w, t->raw_data.len, what)) return c->st;
        if (nbytes && c->steal_raw) {
            /* Steal the bytes protobuf-c copied out of the file: the message
             * no longer owns them, the buffer frees them. */
            int mapped = c->big_raw && t->raw_data.data == c->big_raw;
            buf = gwr_buffer_wrap(t->raw_data.data, nbytes, mapped ? munmap_release : free_release, NULL);
            if (buf) {
                t->raw_data.data = NULL, t->raw_data.len = 0;
                if (mapped) c->big_raw = NULL;
            }
        } else if (nbytes) {
            buf = gwr_buffer_new_copy(t->raw_data.data, nbytes); /* the message lives in an arena */
        } else {
            buf = gwr_buffer_new_copy(NULL, 0);
        }
        if (!buf) return gwr_oi_fail(c, GWR_ERR_NOMEM, "%s: out of memory", what);
        data = gwr_buffer_data(buf);
        s = GWR_OK;
    } else {
        s = typed_data(c, t, what, dt, numel, nbytes, &buf, &data);
    }
    if (s) return s;
    w->buffer = buf;
    w->data = data;
    return GWR_OK;
}

/* ---- plain tensors: raw_data copied into shared chunks ---- */

/* The raw_data of a model's initializers is copied into chunks of
 * anonymous memory (huge pages where the kernel gives them), each tensor at
 * a 64-byte aligned offset and holding a reference on its chunk: a few
 * allocations and page faults per chunk, where a malloc per tensor faulted
 * its pages one by one. A chunk is unmapped when its last tensor is
 * released; before, a released tensor's whole pages are given back
 * (map_release), so a rewrite that drops a weight frees all but the
 * partial pages at its ends. Tensors of at least RAW_OWN bytes get a
 * mapping of their own. */
#define RAW_CHUNK ((size_t)32 << 20)
#define RAW_OWN ((size_t)4 << 20)
#define RAW_ALIGN 64

static void drop_chunk(gwr_oi_ctx *c) {
    map_unref(c->raw_chunk);
    c->raw_chunk = NULL;
    c->raw_used = 0;
}

static gwr_oi_map *new_mapping(size_t size) {
    gwr_oi_map *m = gwr_calloc(1, sizeof *m);
    if (!m) return NULL;
    void *base = gwr_alloc_fails() ? MAP_FAILED : mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
        gwr_free(m);
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    (void)madvise(base, size, MADV_HUGEPAGE);
#endif
    atomic_init(&m->refs, 1);
    m->base = base, m->size = size;
    return m;
}

/* Room for len bytes; *m gets the mapping (a new reference). */
static char *raw_room(gwr_oi_ctx *c, size_t len, gwr_oi_map **m) {
    if (len >= RAW_OWN) {
        if (!(*m = new_mapping(len))) return NULL;
        return (*m)->base;
    }
    size_t at = (c->raw_used + RAW_ALIGN - 1) / RAW_ALIGN * RAW_ALIGN;
    if (!c->raw_chunk || at + len > c->raw_chunk->size) {
        drop_chunk(c);
        if (!(c->raw_chunk = new_mapping(RAW_CHUNK))) return NULL;
        c->raw_chunk->shared = 1;
        at = 0;
    }
    c->raw_used = at + len;
    atomic_fetch_add(&c->raw_chunk->refs, 1);
    *m = c->raw_chunk;
    return (char *)c->raw_chunk->base + at;
}

gwr_status gwr_oi_plain_weights(gwr_oi_ctx *c, const gwr_oi_plain_tensor *t, const char *what, gwr_weights *w) {
    memset(w, 0, sizeof *w);
    if (tensor_header(c, t->has_dtype, t->dtype, (size_t)t->rank, t->dims, what, w) ||
        raw_len_check(c, w, t->raw.len, what))
        return c->st;
    if (!w->nbytes) {
        if (!(w->buffer = gwr_buffer_new_copy(NULL, 0))) return gwr_oi_fail(c, GWR_ERR_NOMEM, "%s: out of memory", what);
    } else {
        gwr_oi_map *m;
        char *dst = raw_room(c, w->nbytes, &m);
        if (!dst)
            return gwr_oi_fail(c, GWR_ERR_NOMEM, "%s: out of memory (%zu bytes)", what, w->nbytes);
        /* Big ones in steps, giving the file's pages back behind the copy,
         * so that the file and the copy are never both resident whole. */
        for (size_t done = 0; done < w->nbytes;) {
            size_t n = w->nbytes - done < RAW_OWN ? w->nbytes - done : RAW_OWN;
            memcpy(dst + done, c->data + t->raw.off + done, n);
            done += n;
            if (w->nbytes >= RAW_OWN) gwr_oi_drop_consumed(c, t->raw.off + done);
        }
        if (!(w->buffer = gwr_buffer_wrap(dst, w->nbytes, map_release, m))) {
            map_unref(m);
            return gwr_oi_fail(c, GWR_ERR_NOMEM, "%s: out of memory", what);
        }
    }
    w->data = gwr_buffer_data(w->buffer);
    return GWR_OK;
}
