/* util.c - see util.h. */
#include "util/util.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- errors ---- */

static _Thread_local char last_errmsg[GWR_ERRMSG_MAX];

/* The status of the last message written on this thread, whatever object
 * it went to: builders and loaders return NULL, not a status. */
static _Thread_local gwr_status last_status;

const char *gwr_last_errmsg(void) { return last_errmsg; }

gwr_status gwr_last_status(void) { return last_status; }

gwr_status gwr_vfmt_error(char *buf, gwr_status s, const char *fmt, va_list ap) {
    vsnprintf(buf, GWR_ERRMSG_MAX, fmt, ap);
    if (s != GWR_OK) last_status = s;
    return s;
}

gwr_status gwr_fmt_error(char *buf, gwr_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    gwr_vfmt_error(buf, s, fmt, ap);
    va_end(ap);
    return s;
}

gwr_status gwr_set_last_error(gwr_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    gwr_vfmt_error(last_errmsg, s, fmt, ap);
    va_end(ap);
    return s;
}

/* ---- memory ---- */

/* countdown: allocations to go until the one that fails; 0: disarmed;
 * -1: failing every one (sticky, past the n-th). An unarmed allocation
 * pays one relaxed load. */
static atomic_llong countdown;
static atomic_int sticky_fail;
static atomic_llong failures;

void gwr_alloc_hook_arm(int64_t n, int sticky) {
    atomic_store(&countdown, 0);
    atomic_store(&failures, 0);
    atomic_store(&sticky_fail, sticky ? 1 : 0);
    atomic_store(&countdown, n > 0 ? n : 0);
}

int64_t gwr_alloc_hook_failures(void) { return atomic_load(&failures); }

static const void *_Atomic last_site;

const void *gwr_alloc_hook_last_site(void) { return atomic_load(&last_site); }

/* noinline: the return address is then the caller's call site. */
__attribute__((noinline)) int gwr_alloc_fails_at(const void *site) {
    long long c = atomic_load_explicit(&countdown, memory_order_relaxed);
    if (GWR_LIKELY(c == 0)) return 0;
    while (c > 0) {
        long long next = c > 1 ? c - 1 : atomic_load(&sticky_fail) ? -1 : 0;
        if (atomic_compare_exchange_weak(&countdown, &c, next)) {
            if (c > 1) return 0;
            break;
        }
    }
    if (c == 0) return 0;
    atomic_store(&last_site, site ? site : __builtin_return_address(0));
    atomic_fetch_add(&failures, 1);
    return 1;
}

#define FAILS() gwr_alloc_fails_at(__builtin_return_address(0))

__attribute__((noinline)) void *gwr_malloc(size_t n) { return FAILS() ? NULL : malloc(n); }

__attribute__((noinline)) void *gwr_calloc(size_t n, size_t size) { return FAILS() ? NULL : calloc(n, size); }

__attribute__((noinline)) void *gwr_realloc(void *p, size_t n) { return FAILS() ? NULL : realloc(p, n); }

void gwr_free(void *p) { free(p); }

int gwr_grow(void **arr, size_t elem, int64_t *cap, int64_t need) {
    if (need <= *cap) return 0;
    int64_t ncap = *cap ? *cap : 4;
    while (ncap < need) {
        if (ncap > INT64_MAX / 2) return -1;
        ncap *= 2;
    }
    if ((uint64_t)ncap > SIZE_MAX / elem) return -1;
    void *p = FAILS() ? NULL : realloc(*arr, (size_t)ncap * elem);
    if (!p) return -1;
    *arr = p;
    *cap = ncap;
    return 0;
}

char *gwr_memdup(const void *p, size_t n) {
    char *d = FAILS() ? NULL : malloc(n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, p, n);
    d[n] = 0;
    return d;
}

char *gwr_strdup(const char *s) { return s ? gwr_memdup(s, strlen(s)) : NULL; }

struct gwr_arena_chunk {
    gwr_arena_chunk *next;
    size_t size;
    _Alignas(16) char data[];
};

/* Below glibc's mmap threshold (128 KiB): chunks come from the heap and
 * go back to it, so memory an arena gave back (the ONNX importer's, after
 * a load) is reused by what comes next instead of being faulted in anew. */
#define ARENA_CHUNK (64 * 1024)

void gwr_arena_init(gwr_arena *a) { memset(a, 0, sizeof *a); }

void gwr_arena_free(gwr_arena *a) {
    gwr_arena_chunk *c = a->head;
    while (c) {
        gwr_arena_chunk *n = c->next;
        free(c);
        c = n;
    }
    memset(a, 0, sizeof *a);
}

void *gwr_arena_alloc(gwr_arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (n == 0) n = 16;
    if ((size_t)(a->end - a->cur) < n || !a->cur) {
        size_t sz = n > ARENA_CHUNK / 4 ? n : ARENA_CHUNK;
        gwr_arena_chunk *c = FAILS() ? NULL : malloc(sizeof *c + sz);
        if (!c) return NULL;
        c->size = sz;
        a->bytes += sizeof *c + sz;
        if (n > ARENA_CHUNK / 4 && a->head) {
            /* A big object gets a chunk of its own, kept behind the current
             * one so the space left in the current chunk is not wasted. */
            c->next = a->head->next;
            a->head->next = c;
            memset(c->data, 0, n);
            return c->data;
        }
        c->next = a->head;
        a->head = c;
        a->cur = c->data;
        a->end = c->data + sz;
    }
    void *p = a->cur;
    a->cur += n;
    memset(p, 0, n);
    return p;
}

char *gwr_arena_strdup(gwr_arena *a, const char *s) {
    size_t n = strlen(s);
    char *d = gwr_arena_alloc(a, n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}

/* ---- hashing ---- */

/* Eight bytes at a time, multiply-xorshift mixing, a full avalanche at the
 * end: generated names ("Add_123456") differ only in their last bytes, and
 * the maps index by the low bits. */
uint64_t gwr_hash_str(const char *s) {
    size_t n = strlen(s);
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n, w;
    for (; n >= 8; s += 8, n -= 8) {
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 29;
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 32);
}

/* Both maps: linear probing, capacity a power of two, load <= 1/2,
 * deletion by backward shift (no tombstones, so lookups stay short under
 * heavy rename/remove churn). */

static int strmap_resize(gwr_strmap *m, int64_t ncap) {
    const char **keys = gwr_calloc((size_t)ncap, sizeof *keys);
    void **vals = gwr_calloc((size_t)ncap, sizeof *vals);
    uint64_t *hashes = gwr_calloc((size_t)ncap, sizeof *hashes);
    if (!keys || !vals || !hashes) {
        free(keys), free(vals), free(hashes);
        return -1;
    }
    for (int64_t i = 0; i < m->cap; i++) {
        if (!m->keys[i]) continue;
        int64_t j = (int64_t)(m->hashes[i] & (uint64_t)(ncap - 1));
        while (keys[j]) j = (j + 1) & (ncap - 1);
        keys[j] = m->keys[i], vals[j] = m->vals[i], hashes[j] = m->hashes[i];
    }
    free(m->keys), free(m->vals), free(m->hashes);
    m->keys = keys, m->vals = vals, m->hashes = hashes, m->cap = ncap;
    return 0;
}

void gwr_strmap_free(gwr_strmap *m) {
    free(m->keys), free(m->vals), free(m->hashes);
    memset(m, 0, sizeof *m);
}

static int64_t strmap_slot(const gwr_strmap *m, const char *key, uint64_t h) {
    int64_t j = (int64_t)(h & (uint64_t)(m->cap - 1));
    while (m->keys[j]) {
        if (m->hashes[j] == h && strcmp(m->keys[j], key) == 0) return j;
        j = (j + 1) & (m->cap - 1);
    }
    return -1 - j; /* free slot, encoded */
}

void *gwr_strmap_get(const gwr_strmap *m, const char *key) {
    if (!m->cap || !key) return NULL;
    int64_t j = strmap_slot(m, key, gwr_hash_str(key));
    return j >= 0 ? m->vals[j] : NULL;
}

int gwr_strmap_put(gwr_strmap *m, const char *key, void *val) {
    if ((m->count + 1) * 2 > m->cap && strmap_resize(m, m->cap ? m->cap * 2 : 16)) return -1;
    uint64_t h = gwr_hash_str(key);
    int64_t j = strmap_slot(m, key, h);
    if (j >= 0) {
        m->keys[j] = key, m->vals[j] = val;
        return 0;
    }
    j = -1 - j;
    m->keys[j] = key, m->vals[j] = val, m->hashes[j] = h;
    m->count++;
    return 0;
}

void gwr_strmap_del(gwr_strmap *m, const char *key, const void *val) {
    if (!m->cap || !key) return;
    int64_t i = strmap_slot(m, key, gwr_hash_str(key));
    if (i < 0 || (val && m->vals[i] != val)) return;
    int64_t mask = m->cap - 1, j = i;
    for (;;) {
        m->keys[i] = NULL;
        for (;;) {
            j = (j + 1) & mask;
            if (!m->keys[j]) {
                m->count--;
                return;
            }
            int64_t home = (int64_t)(m->hashes[j] & (uint64_t)mask);
            /* Move j back to i unless its home lies cyclically in (i, j]. */
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) break;
        }
        m->keys[i] = m->keys[j], m->vals[i] = m->vals[j], m->hashes[i] = m->hashes[j];
        i = j;
    }
}

void gwr_advise_huge(void *p, size_t n) {
#ifdef MADV_HUGEPAGE
    const uintptr_t huge = (uintptr_t)2 << 20;
    if (!p || n < 2 * huge) return;
    uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(huge - 1), hi = ((uintptr_t)p + n) & ~(huge - 1);
    if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)p, (void)n;
#endif
}

static int ptrmap_resize(gwr_ptrmap *m, int64_t ncap) {
    const void **keys = gwr_calloc((size_t)ncap, sizeof *keys);
    void **vals = gwr_calloc((size_t)ncap, sizeof *vals);
    if (!keys || !vals) {
        free(keys), free(vals);
        return -1;
    }
    gwr_advise_huge(keys, (size_t)ncap * sizeof *keys);
    gwr_advise_huge(vals, (size_t)ncap * sizeof *vals);
    for (int64_t i = 0; i < m->cap; i++) {
        if (!m->keys[i]) continue;
        int64_t j = (int64_t)(gwr_hash_ptr(m->keys[i]) & (uint64_t)(ncap - 1));
        while (keys[j]) j = (j + 1) & (ncap - 1);
        keys[j] = m->keys[i], vals[j] = m->vals[i];
    }
    free(m->keys), free(m->vals);
    m->keys = keys, m->vals = vals, m->cap = ncap;
    return 0;
}

void gwr_ptrmap_free(gwr_ptrmap *m) {
    free(m->keys), free(m->vals);
    memset(m, 0, sizeof *m);
}

static int64_t ptrmap_slot(const gwr_ptrmap *m, const void *key) {
    int64_t j = (int64_t)(gwr_hash_ptr(key) & (uint64_t)(m->cap - 1));
    while (m->keys[j]) {
        if (m->keys[j] == key) return j;
        j = (j + 1) & (m->cap - 1);
    }
    return -1 - j;
}

void *gwr_ptrmap_get(const gwr_ptrmap *m, const void *key) {
    if (!m->cap || !key) return NULL;
    int64_t j = ptrmap_slot(m, key);
    return j >= 0 ? m->vals[j] : NULL;
}

int gwr_ptrmap_put(gwr_ptrmap *m, const void *key, void *val) {
    if ((m->count + 1) * 2 > m->cap && ptrmap_resize(m, m->cap ? m->cap * 2 : 16)) return -1;
    int64_t j = ptrmap_slot(m, key);
    if (j < 0) {
        j = -1 - j;
        m->keys[j] = key;
        m->count++;
    }
    m->vals[j] = val;
    return 0;
}

void *gwr_ptrmap_get_or_new(gwr_ptrmap *m, const void *key, size_t size) {
    void *v = gwr_ptrmap_get(m, key);
    if (v) return v;
    if (!(v = gwr_calloc(1, size)) || gwr_ptrmap_put(m, key, v)) {
        free(v);
        return NULL;
    }
    return v;
}

void gwr_ptrmap_del(gwr_ptrmap *m, const void *key) {
    if (!m->cap || !key) return;
    int64_t i = ptrmap_slot(m, key);
    if (i < 0) return;
    int64_t mask = m->cap - 1, j = i;
    for (;;) {
        m->keys[i] = NULL;
        for (;;) {
            j = (j + 1) & mask;
            if (!m->keys[j]) {
                m->count--;
                return;
            }
            int64_t home = (int64_t)(gwr_hash_ptr(m->keys[j]) & (uint64_t)mask);
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) break;
        }
        m->keys[i] = m->keys[j], m->vals[i] = m->vals[j];
        i = j;
    }
}

/* ---- text ---- */

size_t gwr_utf8_len(const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) len = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef) len = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4) len = 4, min = 0x10000;
    else return 0;
    if (len > n) return 0;
    unsigned cp = c & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return len;
}

/* gwr_json_str's escaping, to any sink: put(ctx, bytes, n). */
typedef void (*json_put_fn)(void *ctx, const char *p, size_t n);

static void json_str_to(json_put_fn put, void *ctx, const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)s;
    put(ctx, "\"", 1);
    for (size_t i = 0; i < len;) {
        unsigned c = p[i];
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\', esc[1] = (char)c;
            put(ctx, esc, 2);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            switch (c) {
            case '\n': put(ctx, "\\n", 2); break;
            case '\r': put(ctx, "\\r", 2); break;
            case '\t': put(ctx, "\\t", 2); break;
            case '\b': put(ctx, "\\b", 2); break;
            case '\f': put(ctx, "\\f", 2); break;
            default: snprintf(esc, sizeof esc, "\\u%04x", c), put(ctx, esc, 6);
            }
            i++;
        } else {
            size_t n = gwr_utf8_len(s + i, len - i);
            if (n == 0) {
                put(ctx, "\\ufffd", 6);
                i++;
            } else {
                put(ctx, s + i, n);
                i += n;
            }
        }
    }
    put(ctx, "\"", 1);
}

static void put_file(void *ctx, const char *p, size_t n) { fwrite(p, 1, n, ctx); }

void gwr_json_str(FILE *out, const char *s, size_t len) { json_str_to(put_file, out, s, len); }

static void put_buf(void *ctx, const char *p, size_t n) { gwr_buf_add(ctx, p, n); }

void gwr_buf_add(gwr_buf *b, const void *p, size_t n) {
    if (b->failed) return;
    if (gwr_grow((void **)&b->s, 1, &b->cap, b->len + (int64_t)n + 1)) {
        b->failed = 1;
        return;
    }
    if (n) memcpy(b->s + b->len, p, n);
    b->len += (int64_t)n;
    b->s[b->len] = 0;
}

void gwr_buf_str(gwr_buf *b, const char *s) { gwr_buf_add(b, s, strlen(s)); }

void gwr_buf_json_str(gwr_buf *b, const char *s, size_t len) { json_str_to(put_buf, b, s, len); }
