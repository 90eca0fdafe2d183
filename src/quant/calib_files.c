/* calib_files.c - gwr_calib_load: calibration samples from a directory,
 * in ONNX's test-data layout (TensorProto files, read by the onnx room) or
 * as NumPy .npz files (read here: a zip reader for stored and deflated
 * members, inflated by zlib, and a .npy reader for C-order arrays of
 * little-endian numbers).
 *
 * Every sample is checked against the network as it is read, so that a
 * message names the file: an unknown name, a missing input, another dtype,
 * rank or known dim. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "gwr/onnx.h"
#include "quant/quant_internal.h"

/* ---- a sample being read ------------------------------------------------------ */

typedef struct smp_entry {
    char *name;
    gwr_value *v;
    char *src; /* the file it came from, for messages */
} smp_entry;
typedef struct smp {
    int n;
    int64_t cap;
    smp_entry *e;
} smp;

static void smp_free(smp *s) {
    for (int i = 0; i < s->n; i++) {
        gwr_free(s->e[i].name);
        gwr_free(s->e[i].src);
        gwr_value_release(s->e[i].v);
    }
    gwr_free(s->e);
    memset(s, 0, sizeof *s);
}

/* Takes v (its reference) and copies name and src; releases v on failure. */
static gwr_status smp_add(smp *s, const char *name, gwr_value *v, const char *src) {
    char *nm = gwr_strdup(name), *sr = gwr_strdup(src);
    if (!nm || !sr || gwr_grow((void **)&s->e, sizeof *s->e, &s->cap, s->n + 1)) {
        gwr_free(nm), gwr_free(sr), gwr_value_release(v);
        return gwr_set_last_error(GWR_ERR_NOMEM, "%s: out of memory", src);
    }
    s->e[s->n++] = (smp_entry){nm, v, sr};
    return GWR_OK;
}

static gwr_tensor *find_input(gwr_network *net, const char *name) {
    for (int j = 0; j < gwr_network_num_inputs(net); j++)
        if (!strcmp(gwr_tensor_name(gwr_network_input(net, j)), name)) return gwr_network_input(net, j);
    return NULL;
}

/* The sample (read from `where`: a file or a directory) against net's
 * inputs: each value an input's, once, of its dtype, rank and known dims;
 * every input without a default given. */
static gwr_status smp_check(const smp *s, const char *where, gwr_network *net) {
    for (int k = 0; k < s->n; k++) {
        const char *nm = s->e[k].name, *src = s->e[k].src;
        gwr_tensor *t = find_input(net, nm);
        if (!t) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "%s: no input named '%s' in the model", src, nm);
        for (int j = 0; j < k; j++)
            if (!strcmp(s->e[j].name, nm))
                return gwr_set_last_error(GWR_ERR_INVALID_ARG, "%s: input '%s' given twice (also by %s)", src, nm,
                                          s->e[j].src);
        if (gwr_tensor_kind(t) != GWR_VALUE_TENSOR)
            return gwr_set_last_error(GWR_ERR_UNSUPPORTED, "%s: input '%s' is a %s; calibration samples are tensors",
                                      src, nm, gwr_value_kind_name(gwr_tensor_kind(t)));
        gwr_dtype want = gwr_tensor_dtype(t), got = gwr_value_dtype(s->e[k].v);
        if (want != GWR_UNDEFINED && want != got)
            return gwr_set_last_error(GWR_ERR_INVALID_ARG, "%s: input '%s' is %s, the model takes %s", src, nm,
                                      gwr_dtype_name(got), gwr_dtype_name(want));
        if (!gwr_value_fits(t, s->e[k].v, NULL, 0)) {
            char a[160], b[160];
            gwr_value_type_str(s->e[k].v, a, sizeof a);
            gwr_tensor_type_str(t, b, sizeof b);
            return gwr_set_last_error(GWR_ERR_INVALID_ARG, "%s: input '%s' is %s, the model takes %s", src, nm, a, b);
        }
    }
    for (int j = 0; j < gwr_network_num_inputs(net); j++) {
        gwr_tensor *t = gwr_network_input(net, j);
        int found = gwr_tensor_default(t) != NULL;
        for (int k = 0; !found && k < s->n; k++) found = !strcmp(s->e[k].name, gwr_tensor_name(t));
        if (!found) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "%s: input '%s' is missing", where, gwr_tensor_name(t));
    }
    return GWR_OK;
}

/* ---- files --------------------------------------------------------------------- */

static char *join(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = gwr_malloc(n);
    if (p) snprintf(p, n, "%s/%s", a, b);
    return p;
}

static int has_suffix(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n > m && !strcmp(s + n - m, suf);
}

/* Names in natural order: digit runs compare as numbers (input_2 before
 * input_10, s9.npz before s10.npz), the rest byte by byte. */
static int natural_cmp(const void *pa, const void *pb) {
    const char *a = *(const char *const *)pa, *b = *(const char *const *)pb, *a0 = a, *b0 = b;
    while (*a && *b) {
        if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
            while (*a == '0') a++;
            while (*b == '0') b++;
            size_t la = strspn(a, "0123456789"), lb = strspn(b, "0123456789");
            if (la != lb) return la < lb ? -1 : 1;
            int c = strncmp(a, b, la);
            if (c) return c;
            a += la, b += lb;
        } else {
            if (*a != *b) return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
            a++, b++;
        }
    }
    return *a ? 1 : *b ? -1 : strcmp(a0, b0); /* "s01" and "s1": by bytes */
}

static void free_list(char **v, int64_t n) {
    for (int64_t i = 0; i < n; i++) gwr_free(v[i]);
    gwr_free(v);
}

/* The entries of dir (no dot files) in natural order; -1 with the message
 * set when it cannot be read. */
static int64_t list_dir(const char *dir, char ***out) {
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d) return gwr_set_last_error(GWR_ERR_IO, "%s: cannot open the directory: %s", dir, strerror(errno)), -1;
    char **v = NULL;
    int64_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char *s = NULL;
        if (gwr_grow((void **)&v, sizeof *v, &cap, n + 1) || !(s = gwr_strdup(e->d_name))) {
            closedir(d);
            free_list(v, n);
            return gwr_set_last_error(GWR_ERR_NOMEM, "%s: out of memory", dir), -1;
        }
        v[n++] = s;
    }
    closedir(d);
    if (n) qsort(v, (size_t)n, sizeof *v, natural_cmp);
    *out = v;
    return n;
}

static int is_kind(const char *path, int dir) {
    struct stat st;
    return !stat(path, &st) && (dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode));
}

static uint8_t *read_all(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return gwr_set_last_error(GWR_ERR_IO, "%s: cannot open: %s", path, strerror(errno)), NULL;
    uint8_t *buf = NULL;
    long n = -1;
    if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET)) {
        buf = gwr_malloc((size_t)n + 1);
        if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) gwr_free(buf), buf = NULL, n = -1;
        else if (!buf) gwr_set_last_error(GWR_ERR_NOMEM, "%s: out of memory", path);
    }
    fclose(f);
    if (n < 0) gwr_set_last_error(GWR_ERR_IO, "%s: cannot read", path);
    *size = buf ? (size_t)n : 0;
    return buf;
}

/* Little-endian integers. */
static uint32_t rd16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t rd32(const uint8_t *p) { return rd16(p) | rd16(p + 2) << 16; }
static uint64_t rd64(const uint8_t *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

/* ---- .npy ------------------------------------------------------------------------- */

/* The header's Python dict literal: {'descr': '<f4', 'fortran_order': False,
 * 'shape': (2, 3), }. Only the three keys numpy writes; a structured dtype
 * (a list for descr) is refused. */
typedef struct npy_head {
    char descr[16];
    int fortran, rank;
    int64_t dims[GWR_MAX_RANK];
} npy_head;

static const char *skip_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* A quoted string at p into buf; the position after it or NULL. */
static const char *npy_str(const char *p, const char *end, char *buf, size_t size) {
    if (p >= end || (*p != '\'' && *p != '"')) return NULL;
    char q = *p++;
    const char *s = p;
    while (p < end && *p != q) p++;
    if (p >= end || (size_t)(p - s) >= size) return NULL;
    memcpy(buf, s, (size_t)(p - s));
    buf[p - s] = 0;
    return p + 1;
}

static const char *npy_shape(const char *p, const char *end, npy_head *h) {
    if (p >= end || *p != '(') return NULL;
    p = skip_ws(p + 1, end);
    h->rank = 0;
    while (p < end && *p != ')') {
        if (h->rank == GWR_MAX_RANK || *p < '0' || *p > '9') return NULL;
        int64_t d = 0;
        while (p < end && *p >= '0' && *p <= '9') {
            if (d > (INT64_MAX - 9) / 10) return NULL;
            d = d * 10 + (*p++ - '0');
        }
        if (p < end && *p == 'L') p++; /* Python 2's longs */
        h->dims[h->rank++] = d;
        p = skip_ws(p, end);
        if (p < end && *p == ',') p = skip_ws(p + 1, end);
    }
    return p < end ? p + 1 : NULL;
}

/* 0, or -1 with why. */
static int npy_header(const char *p, const char *end, npy_head *h, const char **why) {
    int have = 0;
    *why = "a malformed header";
    p = skip_ws(p, end);
    if (p >= end || *p++ != '{') return -1;
    for (;;) {
        p = skip_ws(p, end);
        if (p < end && *p == '}') break;
        char key[32];
        if (!(p = npy_str(p, end, key, sizeof key))) return -1;
        p = skip_ws(p, end);
        if (p >= end || *p++ != ':') return -1;
        p = skip_ws(p, end);
        if (!strcmp(key, "descr")) {
            if (p < end && *p == '[') return *why = "a structured dtype (not supported)", -1;
            if (!(p = npy_str(p, end, h->descr, sizeof h->descr))) return -1;
            have |= 1;
        } else if (!strcmp(key, "fortran_order")) {
            if (end - p >= 4 && !memcmp(p, "True", 4)) h->fortran = 1, p += 4;
            else if (end - p >= 5 && !memcmp(p, "False", 5)) h->fortran = 0, p += 5;
            else return -1;
            have |= 2;
        } else if (!strcmp(key, "shape")) {
            if (!(p = npy_shape(p, end, h))) return -1;
            have |= 4;
        } else {
            return -1;
        }
        p = skip_ws(p, end);
        if (p < end && *p == ',') p++;
        else if (p < end && *p == '}') break;
        else return -1;
    }
    if (have != 7) return *why = "a header without descr, fortran_order or shape", -1;
    return 0;
}

/* numpy's dtype string as a gwr dtype (little-endian, or one byte). */
static gwr_dtype npy_dtype(const char *d) {
    static const struct {
        const char *s;
        gwr_dtype t;
    } map[] = {{"f4", GWR_FLOAT32}, {"f2", GWR_FLOAT16}, {"f8", GWR_FLOAT64}, {"i8", GWR_INT64},
               {"i4", GWR_INT32},   {"i2", GWR_INT16},   {"i1", GWR_INT8},    {"u8", GWR_UINT64},
               {"u4", GWR_UINT32},  {"u2", GWR_UINT16},  {"u1", GWR_UINT8},   {"b1", GWR_BOOL},
               {"c8", GWR_COMPLEX64}, {"c16", GWR_COMPLEX128}};
    if (d[0] != '<' && d[0] != '|' && d[0] != '=') return GWR_UNDEFINED;
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (!strcmp(d + 1, map[i].s)) return (d[0] == '|') == (gwr_dtype_size(map[i].t) == 1) ? map[i].t : GWR_UNDEFINED;
    return GWR_UNDEFINED;
}

/* The .npy bytes of member `member` of file path as a new value. */
static gwr_value *npy_parse(const char *path, const char *member, const uint8_t *p, size_t n) {
    static const uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    if (n < 10 || memcmp(p, magic, 6))
        return gwr_set_last_error(GWR_ERR_PARSE, "%s: %s is not a .npy array (no NUMPY magic)", path, member), NULL;
    int major = p[6];
    if (major < 1 || major > 3)
        return gwr_set_last_error(GWR_ERR_UNSUPPORTED, "%s: %s: .npy format version %d is not supported", path, member,
                                  major),
               NULL;
    size_t off = major == 1 ? 10 : 12;
    size_t hl = n < off ? 0 : major == 1 ? rd16(p + 8) : rd32(p + 8);
    if (n < off || hl > n - off) return gwr_set_last_error(GWR_ERR_PARSE, "%s: %s: truncated .npy header", path, member), NULL;
    npy_head h = {0};
    const char *why;
    if (npy_header((const char *)p + off, (const char *)p + off + hl, &h, &why))
        return gwr_set_last_error(GWR_ERR_PARSE, "%s: %s: %s", path, member, why), NULL;
    gwr_dtype dt = npy_dtype(h.descr);
    if (dt == GWR_UNDEFINED)
        return gwr_set_last_error(GWR_ERR_UNSUPPORTED,
                                  "%s: %s: dtype '%s' is not supported (little-endian numbers and bool only)", path,
                                  member, h.descr),
               NULL;
    int64_t count = 1;
    for (int i = 0; i < h.rank; i++) {
        if (h.dims[i] && count > INT64_MAX / 16 / h.dims[i])
            return gwr_set_last_error(GWR_ERR_PARSE, "%s: %s: shape too large", path, member), NULL;
        count *= h.dims[i];
    }
    if (h.fortran && h.rank > 1 && count > 1)
        return gwr_set_last_error(GWR_ERR_UNSUPPORTED,
                                  "%s: %s: Fortran-order arrays are not supported (save numpy.ascontiguousarray(a))",
                                  path, member),
               NULL;
    size_t bytes = (size_t)count * gwr_dtype_size(dt), have = n - off - hl;
    if (have != bytes)
        return gwr_set_last_error(GWR_ERR_PARSE, "%s: %s: %s data: %zu bytes for %zu", path, member,
                                  have < bytes ? "truncated" : "trailing", have, bytes),
               NULL;
    gwr_value *v = gwr_value_new(dt, h.rank, h.dims);
    if (!v) return gwr_set_last_error(GWR_ERR_NOMEM, "%s: %s: %s", path, member, gwr_last_errmsg()), NULL;
    if (bytes) memcpy(gwr_value_data(v), p + off + hl, bytes);
    return v;
}

/* ---- .npz (zip) ----------------------------------------------------------------- */

/* The central directory's place: offset, size and entry count (zip64 too). */
static int zip_directory(const uint8_t *d, size_t n, uint64_t *off, uint64_t *size, uint64_t *count) {
    if (n < 22) return -1;
    size_t i = n - 22, stop = n - 22 > 65535 ? n - 22 - 65535 : 0;
    while (rd32(d + i) != 0x06054b50) {
        if (i == stop) return -1;
        i--;
    }
    *count = rd16(d + i + 10), *size = rd32(d + i + 12), *off = rd32(d + i + 16);
    if (*count == 0xffff || *size == 0xffffffff || *off == 0xffffffff) {
        /* the zip64 end record, through its locator just before */
        if (i < 20 || rd32(d + i - 20) != 0x07064b50) return -1;
        uint64_t z = rd64(d + i - 20 + 8);
        if (n < 56 || z > n - 56 || rd32(d + z) != 0x06064b50) return -1;
        *count = rd64(d + z + 32), *size = rd64(d + z + 40), *off = rd64(d + z + 48);
    }
    return *off <= n && *size <= n - *off ? 0 : -1;
}

/* zip64's extra field (id 1) for the fields that read 0xffffffff. */
static int zip64_extra(const uint8_t *e, size_t n, uint64_t *usize, uint64_t *csize, uint64_t *loff) {
    while (n >= 4) {
        uint32_t id = rd16(e), len = rd16(e + 2);
        if (len > n - 4) return -1;
        if (id == 1) {
            const uint8_t *p = e + 4, *end = p + len;
            uint64_t *f[3] = {usize, csize, loff};
            for (int k = 0; k < 3; k++) {
                if (*f[k] != 0xffffffff) continue;
                if (end - p < 8) return -1;
                *f[k] = rd64(p), p += 8;
            }
            return 0;
        }
        e += 4 + len, n -= 4 + len;
    }
    return 0;
}

/* One member's bytes, stored or deflated, CRC checked: *out points into d
 * (stored) or to *owned (inflated; the caller frees). */
static gwr_status zip_member(const char *path, const char *name, const uint8_t *d, size_t n, uint32_t method,
                             uint32_t crc, uint64_t csize, uint64_t usize, uint64_t loff, const uint8_t **out,
                             uint8_t **owned) {
    *owned = NULL;
    if (loff > n || n - loff < 30 || rd32(d + loff) != 0x04034b50)
        return gwr_set_last_error(GWR_ERR_PARSE, "%s: corrupt zip: member '%s' has no local header", path, name);
    uint64_t data = loff + 30 + rd16(d + loff + 26) + rd16(d + loff + 28);
    if (data > n || csize > n - data)
        return gwr_set_last_error(GWR_ERR_PARSE, "%s: truncated zip: member '%s' runs past the end", path, name);
    if (method == 0) {
        if (csize != usize) return gwr_set_last_error(GWR_ERR_PARSE, "%s: corrupt zip: member '%s' sizes differ", path, name);
        *out = d + data;
    } else if (method == 8) {
        /* deflate expands at most 1032:1: more is a corrupt directory, not an allocation to try */
        if (usize / 1032 > csize + 1)
            return gwr_set_last_error(GWR_ERR_PARSE, "%s: corrupt zip: member '%s' claims %llu bytes from %llu", path,
                                      name, (unsigned long long)usize, (unsigned long long)csize);
        uint8_t *buf = gwr_malloc((size_t)usize + 1);
        if (!buf) return gwr_set_last_error(GWR_ERR_NOMEM, "%s: out of memory", path);
        z_stream z;
        memset(&z, 0, sizeof z);
        int zr = inflateInit2(&z, -MAX_WBITS);
        size_t done = 0;
        const uint8_t *in = d + data;
        uint64_t in_left = csize;
        while (zr == Z_OK) {
            uInt ci = in_left > 1u << 30 ? 1u << 30 : (uInt)in_left;
            uInt co = usize - done + 1 > 1u << 30 ? 1u << 30 : (uInt)(usize - done + 1);
            z.next_in = (Bytef *)(uintptr_t)in, z.avail_in = ci;
            z.next_out = buf + done, z.avail_out = co;
            zr = inflate(&z, Z_NO_FLUSH);
            in += ci - z.avail_in, in_left -= ci - z.avail_in;
            done += co - z.avail_out;
            if (zr == Z_OK && z.avail_in == ci && z.avail_out == co) zr = Z_BUF_ERROR; /* no progress */
        }
        inflateEnd(&z);
        if (zr != Z_STREAM_END || done != usize) {
            gwr_free(buf);
            return gwr_set_last_error(GWR_ERR_PARSE, "%s: corrupt zip: member '%s' does not inflate to its %llu bytes",
                                      path, name, (unsigned long long)usize);
        }
        *out = *owned = buf;
    } else {
        return gwr_set_last_error(GWR_ERR_UNSUPPORTED,
                                  "%s: member '%s' is compressed with method %u (stored and deflated only)", path, name,
                                  method);
    }
    if ((uint32_t)crc32_z(0L, *out, (z_size_t)usize) != crc) {
        gwr_free(*owned), *owned = NULL;
        return gwr_set_last_error(GWR_ERR_PARSE, "%s: corrupt zip: member '%s' fails its CRC check", path, name);
    }
    return GWR_OK;
}

/* An .npz file: one value per NAME.npy member, into s. */
static gwr_status npz_read(const char *path, smp *s) {
    size_t n;
    uint8_t *d = read_all(path, &n);
    if (!d) return gwr_last_status();
    uint64_t off = 0, size = 0, count = 0;
    gwr_status st = GWR_OK;
    if (zip_directory(d, n, &off, &size, &count)) {
        st = gwr_set_last_error(GWR_ERR_PARSE, "%s: %s", path,
                                n >= 4 && rd32(d) == 0x04034b50 ? "truncated zip (no central directory)"
                                                                 : "not a zip file (numpy.savez writes .npz)");
    }
    const uint8_t *p = d + off, *end = d + off + size;
    for (uint64_t i = 0; !st && i < count; i++) {
        if (end - p < 46 || rd32(p) != 0x02014b50) {
            st = gwr_set_last_error(GWR_ERR_PARSE, "%s: corrupt zip: central directory entry %llu", path,
                                    (unsigned long long)i);
            break;
        }
        uint32_t flags = rd16(p + 8), method = rd16(p + 10), crc = rd32(p + 16);
        uint64_t csize = rd32(p + 20), usize = rd32(p + 24), loff = rd32(p + 42);
        uint32_t nl = rd16(p + 28), el = rd16(p + 30), cl = rd16(p + 32);
        if ((size_t)(end - p) < 46 + (size_t)nl + el + cl || zip64_extra(p + 46 + nl, el, &usize, &csize, &loff)) {
            st = gwr_set_last_error(GWR_ERR_PARSE, "%s: corrupt zip: central directory entry %llu", path,
                                    (unsigned long long)i);
            break;
        }
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)nl, (const char *)p + 46);
        p += 46 + nl + el + cl;
        if (has_suffix(name, "/")) continue; /* a directory entry */
        if (flags & 1) {
            st = gwr_set_last_error(GWR_ERR_UNSUPPORTED, "%s: member '%s' is encrypted", path, name);
            break;
        }
        if (!has_suffix(name, ".npy")) {
            st = gwr_set_last_error(GWR_ERR_PARSE, "%s: member '%s' is not a .npy array", path, name);
            break;
        }
        const uint8_t *bytes = NULL;
        uint8_t *owned = NULL;
        if ((st = zip_member(path, name, d, n, method, crc, csize, usize, loff, &bytes, &owned))) break;
        gwr_value *v = npy_parse(path, name, bytes, (size_t)usize);
        gwr_free(owned);
        if (!v) {
            st = gwr_last_status();
            break;
        }
        name[strlen(name) - 4] = 0;
        st = smp_add(s, name, v, path);
    }
    gwr_free(d);
    return st;
}

/* ---- TensorProto files ------------------------------------------------------------ */

/* The .pb files of dir (input_*.pb when there are such: ONNX's test data
 * keeps output_*.pb beside them) in order, as one sample: a tensor named as
 * an input is that input; an unnamed one (or one named otherwise) the
 * k-th input without a default, k its place among the files. */
static gwr_status pb_read(const char *dir, char **files, int64_t nfiles, gwr_network *net, smp *s) {
    int inputs_only = 0;
    for (int64_t i = 0; i < nfiles; i++)
        if (!strncmp(files[i], "input_", 6) && has_suffix(files[i], ".pb")) inputs_only = 1;
    int k = 0;
    for (int64_t i = 0; i < nfiles; i++) {
        if (!has_suffix(files[i], ".pb") || (inputs_only && strncmp(files[i], "input_", 6))) continue;
        char *path = join(dir, files[i]);
        if (!path) return gwr_set_last_error(GWR_ERR_NOMEM, "%s: out of memory", dir);
        if (!is_kind(path, 0)) {
            gwr_free(path);
            continue;
        }
        gwr_weights w;
        int64_t dims[GWR_MAX_RANK];
        char *name = NULL;
        gwr_status st = gwr_onnx_read_tensor(path, &w, dims, &name);
        gwr_value *v = st ? NULL : gwr_value_from_weights(&w);
        if (!st) gwr_buffer_release(w.buffer);
        if (!st && !v) st = gwr_last_status();
        const char *use = name && *name && find_input(net, name) ? name : NULL;
        int seen = 0; /* inputs without a default */
        for (int j = 0; !st && !use && j < gwr_network_num_inputs(net); j++) {
            gwr_tensor *x = gwr_network_input(net, j);
            if (!gwr_tensor_default(x) && seen++ == k) use = gwr_tensor_name(x);
        }
        if (!st && !use) {
            gwr_value_release(v);
            st = gwr_set_last_error(GWR_ERR_INVALID_ARG, "%s: %s%s%s, and the model has %d input%s to take it by place",
                                    path, name && *name ? "no input named '" : "no name",
                                    name && *name ? name : "", name && *name ? "' in the model" : "", seen,
                                    seen == 1 ? "" : "s");
        }
        if (!st) st = smp_add(s, use, v, path);
        gwr_free(name);
        gwr_free(path);
        if (st) return st;
        k++;
    }
    return GWR_OK;
}

/* ---- the directory ------------------------------------------------------------------ */

static gwr_status add_sample(gwr_calib *c, smp *s, const char *where, gwr_network *net) {
    gwr_status st = smp_check(s, where, net);
    const char **names = st ? NULL : gwr_malloc(((size_t)s->n + 1) * sizeof *names);
    gwr_value **vals = st ? NULL : gwr_malloc(((size_t)s->n + 1) * sizeof *vals);
    for (int k = 0; names && vals && k < s->n; k++) names[k] = s->e[k].name, vals[k] = s->e[k].v;
    if (!st && (!names || !vals || gwr_calib_add(c, s->n, names, vals)))
        st = gwr_set_last_error(GWR_ERR_NOMEM, "%s: out of memory", where);
    gwr_free(names), gwr_free(vals);
    smp_free(s);
    return st;
}

/* A sub-directory with .pb files: one sample; 0 when it holds none. */
static int64_t count_pb(char **files, int64_t n) {
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) k += has_suffix(files[i], ".pb");
    return k;
}

gwr_calib *gwr_calib_load(const char *dir, gwr_network *net) {
    if (!dir || !net) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_calib_load: NULL directory or network"), NULL;
    char **ents;
    int64_t n = list_dir(dir, &ents);
    if (n < 0) return NULL;
    gwr_calib *c = gwr_calib_new();
    gwr_status st = c ? GWR_OK : GWR_ERR_NOMEM;
    int top_pb = 0;
    for (int64_t i = 0; !st && i < n; i++) {
        char *path = join(dir, ents[i]);
        smp s = {0};
        if (!path) {
            st = gwr_set_last_error(GWR_ERR_NOMEM, "%s: out of memory", dir);
        } else if (has_suffix(ents[i], ".npz") && is_kind(path, 0)) {
            if (!(st = npz_read(path, &s))) st = add_sample(c, &s, path, net);
        } else if (has_suffix(ents[i], ".pb") && is_kind(path, 0)) {
            /* TensorProto files directly in DIR: one sample, read once */
            if (!top_pb++ && !(st = pb_read(dir, ents, n, net, &s))) st = add_sample(c, &s, dir, net);
        } else if (is_kind(path, 1)) {
            char **files;
            int64_t nf = list_dir(path, &files);
            if (nf < 0) st = gwr_last_status();
            else if (count_pb(files, nf) && !(st = pb_read(path, files, nf, net, &s))) st = add_sample(c, &s, path, net);
            if (nf >= 0) free_list(files, nf);
        }
        smp_free(&s);
        gwr_free(path);
    }
    free_list(ents, n);
    if (!st && c && c->n == 0)
        st = gwr_set_last_error(GWR_ERR_INVALID_ARG,
                                "%s: no calibration samples (no .npz files and no test-data directories)", dir);
    if (st) {
        gwr_calib_free(c);
        return NULL;
    }
    return c;
}
