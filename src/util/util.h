/* util.h - small internal helpers shared by every room: error messages,
 * growth of dynamic arrays, hashing, an arena, and two open-addressing hash
 * maps (string -> pointer, pointer -> pointer); the small element types'
 * conversions (smalltype.h). Not part of the public API. */
#ifndef GWR_UTIL_H
#define GWR_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gwr/core.h"
#include "util/smalltype.h" /* the float8 / 4-bit / 2-bit conversions */

#if defined(__GNUC__)
#define GWR_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define GWR_LIKELY(x) __builtin_expect(!!(x), 1)
#define GWR_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define GWR_PRINTF(a, b)
#define GWR_LIKELY(x) (x)
#define GWR_UNLIKELY(x) (x)
/* ---- text ---- */
/* Length of the valid UTF-8 sequence at str (at most n > 0 bytes), 0 when
 * the bytes there are not valid UTF-8. */
size_t gwr_utf8_len(const char *str, size_t n);
/* Writes bytes s[0..len) as a JSON string, quotes included: control
 * characters, quotes and backslashes escaped, invalid UTF-8 replaced by
 * U+FFFD, so that the output is always valid JSON. */
void gwr_json_str(FILE *out, const char *s, size_t len);

#endif

/* ---- errors ---- */
#define GWR_ERRMSG_MAX 512
/* Formats into buf (GWR_ERRMSG_MAX bytes) and returns s. */
gwr_status gwr_fmt_error(char *buf, gwr_status s, const char *fmt, ...) GWR_PRINTF(3, 4);
gwr_status gwr_vfmt_error(char *buf, gwr_status s, const char *fmt, va_list ap);
/* Sets the thread-local message of gwr_last_errmsg() and returns s. */
gwr_status gwr_set_last_error(gwr_status s, const char *fmt, ...) GWR_PRINTF(2, 3);

/* ---- memory ---- */
/* Every allocation of gwr goes through these (protobuf-c's and the weight
 * chunks' too): the one place a test can make an allocation fail. They
 * behave as the C library's; gwr_free(NULL) does nothing. */
void *gwr_malloc(size_t n);
void *gwr_calloc(size_t n, size_t size);
void *gwr_realloc(void *p, size_t n);
void gwr_free(void *p);
/* For memory that does not come from malloc (mmap'd chunks) and for the
 * allocating helpers of util: 1 when the allocation about to be made must
 * fail, counting it as one. `site` names the call site for the test's
 * count of sites (a return address; NULL: the caller's). */
int gwr_alloc_fails_at(const void *site);
#define gwr_alloc_fails() gwr_alloc_fails_at(NULL)

/* The test hook, as SQLite tests its allocations: arm it with n >= 1 and
 * the n-th allocation from now fails (and, with `sticky`, every one after
 * it, until the hook is disarmed); n = 0 disarms it. Process-wide; the
 * count is atomic, so allocations of other threads count too.
 * gwr_alloc_hook_failures() says how many allocations failed since the
 * hook was last armed: 0 after a run means the run completed. */
void gwr_alloc_hook_arm(int64_t n, int sticky);
int64_t gwr_alloc_hook_failures(void);
/* The call site of the last allocation the hook failed (a code address:
 * distinct sites have distinct values), or NULL. */
const void *gwr_alloc_hook_last_site(void);

/* Grows *arr (elements of `elem` bytes, capacity *cap) to hold `need`
 * elements; 0 on success, -1 on overflow or allocation failure (then *arr
 * is unchanged). */
int gwr_grow(void **arr, size_t elem, int64_t *cap, int64_t need);
char *gwr_strdup(const char *s);
char *gwr_memdup(const void *p, size_t n);

/* Asks the kernel for huge pages under the 2 MB-aligned part of [p, p+n)
 * (a big hash table probed at random: one TLB entry per 2 MB instead of
 * per 4 KB). Only for memory not touched yet (fresh calloc of 4 MB and
 * more, which glibc maps anew); a hint, ignored where unsupported. */
void gwr_advise_huge(void *p, size_t n);

/* A bump allocator: objects live until the arena is freed. */
typedef struct gwr_arena_chunk gwr_arena_chunk;
typedef struct gwr_arena {
    gwr_arena_chunk *head;
    char *cur, *end;
    size_t bytes;   /* total bytes obtained from malloc */
} gwr_arena;
void gwr_arena_init(gwr_arena *a);
void gwr_arena_free(gwr_arena *a);
/* 16-byte aligned, zeroed; NULL on allocation failure. */
void *gwr_arena_alloc(gwr_arena *a, size_t n);
char *gwr_arena_strdup(gwr_arena *a, const char *s);

/* ---- hashing ---- */
uint64_t gwr_hash_str(const char *s);
static inline uint64_t gwr_hash_ptr(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

/* String -> pointer map. Keys are borrowed: the caller keeps each key
 * string alive while it is in the map (they are the objects' own names). */
typedef struct gwr_strmap {
    const char **keys;
    void **vals;
    uint64_t *hashes;
    int64_t cap, count;
} gwr_strmap;
void gwr_strmap_free(gwr_strmap *m);
void *gwr_strmap_get(const gwr_strmap *m, const char *key);
/* Inserts or replaces; 0 on success, -1 on allocation failure. */
int gwr_strmap_put(gwr_strmap *m, const char *key, void *val);
/* Removes key if present (its value must match when val is not NULL). */
void gwr_strmap_del(gwr_strmap *m, const char *key, const void *val);

/* Pointer -> pointer map (NULL keys not allowed). */
typedef struct gwr_ptrmap {
    const void **keys;
    void **vals;
    int64_t cap, count;
} gwr_ptrmap;
void gwr_ptrmap_free(gwr_ptrmap *m);
void *gwr_ptrmap_get(const gwr_ptrmap *m, const void *key);
int gwr_ptrmap_put(gwr_ptrmap *m, const void *key, void *val);
void gwr_ptrmap_del(gwr_ptrmap *m, const void *key);
/* key's value; when absent, a new zeroed object of `size` bytes (calloc'd,
 * the caller frees it) is put first. NULL: out of memory. */
void *gwr_ptrmap_get_or_new(gwr_ptrmap *m, const void *key, size_t size);

/* ---- text ---- */
/* Length of the valid UTF-8 sequence at str (at most n > 0 bytes), 0 when
 * the bytes there are not valid UTF-8. */
size_t gwr_utf8_len(const char *str, size_t n);
/* Writes bytes s[0..len) as a JSON string, quotes included: control
 * characters, quotes and backslashes escaped, invalid UTF-8 replaced by
 * U+FFFD, so that the output is always valid JSON. */
void gwr_json_str(FILE *out, const char *s, size_t len);
/* A growing NUL-terminated byte buffer (s NULL until the first byte). An
 * allocation failure sets `failed` and drops what follows. */
typedef struct gwr_buf {
    char *s;
    int64_t len, cap;
    int failed;
} gwr_buf;
void gwr_buf_add(gwr_buf *b, const void *p, size_t n);
void gwr_buf_str(gwr_buf *b, const char *s);
/* gwr_json_str into a buffer. */
void gwr_buf_json_str(gwr_buf *b, const char *s, size_t len);

#endif
