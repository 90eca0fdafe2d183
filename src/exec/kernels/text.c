/* text.c - the string ops: StringNormalizer (case change and stop words,
 * one string at a time) and TfIdfVectorizer (n-gram counts and weights
 * along the last axis, over int64 or string items).
 *
 * Semantics follow ONNX's operator specification and, where it is silent,
 * ONNX's reference implementation and ONNX Runtime. Every input, attribute
 * and index is checked first. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/kernels/kernel_util.h"

/* The most elements an output may have. */
#define MAX_ELEMS ((int64_t)1 << 32)

/* ---- StringNormalizer ------------------------------------------------------ */

/* The case of one code point: ASCII, and the letters of Latin-1, Latin
 * Extended-A, Greek and Cyrillic whose both cases are two UTF-8 bytes (so
 * a string keeps its length; modern Greek only; dotted / dotless i and
 * long s, whose other case is one byte, stay as they are). */
static uint32_t case_map(uint32_t c, int upper) {
    int pair_even_upper = (c >= 0x100 && c <= 0x12F) || (c >= 0x132 && c <= 0x137) || (c >= 0x14A && c <= 0x177);
    int pair_odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    if (pair_even_upper || pair_odd_upper) {
        int is_upper = (int)(c & 1) == pair_odd_upper;
        return is_upper == upper ? c : upper ? c - 1 : c + 1;
    }
    if (upper) {
        if (c >= 'a' && c <= 'z') return c - 0x20;
        if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 0x20;
        if (c == 0xFF) return 0x178;
        if (c == 0x3C2) return 0x3A3; /* final sigma */
        if (c == 0x3AC) return 0x386;
        if (c >= 0x3AD && c <= 0x3AF) return c - 0x25;
        if (c == 0x3CC) return 0x38C;
        if (c == 0x3CD || c == 0x3CE) return c - 0x3F;
        if (c >= 0x3B1 && c <= 0x3CB) return c - 0x20;
        if (c >= 0x430 && c <= 0x44F) return c - 0x20;
        if (c >= 0x450 && c <= 0x45F) return c - 0x50;
    } else {
        if (c >= 'A' && c <= 'Z') return c + 0x20;
        if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 0x20;
        if (c == 0x178) return 0xFF;
        if (c == 0x386) return 0x3AC;
        if (c >= 0x388 && c <= 0x38A) return c + 0x25;
        if (c == 0x38C) return 0x3CC;
        if (c == 0x38E || c == 0x38F) return c + 0x3F;
        if (c >= 0x391 && c <= 0x3AB && c != 0x3A2) return c + 0x20;
        if (c >= 0x410 && c <= 0x42F) return c + 0x20;
        if (c >= 0x400 && c <= 0x40F) return c + 0x50;
    }
    return c;
}

/* dst[0..n) = src with its case changed; bytes that are not ASCII or a
 * well-formed two-byte sequence are copied as they are. */
static void change_case(char *dst, const char *src, size_t n, int upper) {
    const unsigned char *s = (const unsigned char *)src;
    for (size_t i = 0; i < n;) {
        if (s[i] < 0x80) {
            dst[i] = (char)case_map(s[i], upper);
            i++;
        } else if (s[i] >= 0xC2 && s[i] <= 0xDF && i + 1 < n && (s[i + 1] & 0xC0) == 0x80) {
            uint32_t c = case_map(((uint32_t)(s[i] & 0x1F) << 6) | (s[i + 1] & 0x3F), upper);
            dst[i] = (char)(0xC0 | (c >> 6));
            dst[i + 1] = (char)(0x80 | (c & 0x3F));
            i += 2;
        } else {
            dst[i] = (char)s[i];
            i++;
        }
    }
}

enum { CASE_NONE, CASE_LOWER, CASE_UPPER };

static gwr_status k_string_normalizer(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_named(k, 0, "X");
    if (!x) return GWR_ERR_INVALID_ARG;
    if (x->dtype != GWR_STRING) return gwr_k_fail(k, GWR_ERR_TYPE, "X must be string, not %s", gwr_dtype_name(x->dtype));
    if (!(x->rank == 1 || (x->rank == 2 && x->dims[0] == 1)))
        return gwr_k_fail(k, GWR_ERR_SHAPE, "X must be [C] or [1, C], not rank %d%s", x->rank,
                          x->rank == 2 ? " with a first dim other than 1" : "");
    const char *act = gwr_k_string(k, "case_change_action", "NONE");
    int action = !strcmp(act, "NONE") ? CASE_NONE : !strcmp(act, "LOWER") ? CASE_LOWER : !strcmp(act, "UPPER") ? CASE_UPPER : -1;
    if (action < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "case_change_action '%s' is not LOWER, UPPER or NONE", act);
    int64_t sens = gwr_k_int(k, "is_case_sensitive", 0);
    if (sens != 0 && sens != 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "is_case_sensitive must be 0 or 1, not %lld", (long long)sens);
    /* Case rules here are the locale-independent ones; Turkish and Azeri
     * map i and I differently, which this kernel does not do. */
    const char *loc = gwr_k_string(k, "locale", "");
    if (!strncmp(loc, "tr", 2) || !strncmp(loc, "az", 2))
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "locale '%s' has case rules this kernel does not implement", loc);
    const gwr_bytes *sw = NULL;
    int64_t nsw = 0;
    if (gwr_layer_get_strings(k->layer, "stopwords", &sw, &nsw)) sw = NULL, nsw = 0;

    const gwr_bytes *xs = x->data;
    int64_t c = x->numel;
    size_t maxlen = 0;
    for (int64_t i = 0; i < c; i++)
        if (xs[i].len > maxlen) maxlen = xs[i].len;
    for (int64_t i = 0; i < nsw; i++)
        if (sw[i].len > maxlen) maxlen = sw[i].len;
    /* Case-insensitive matching compares upper-cased copies (so that both
     * sigmas match); the stop words are folded once, into one block. */
    size_t swbytes = 0;
    if (!sens)
        for (int64_t i = 0; i < nsw; i++) swbytes += sw[i].len;
    char *buf = gwr_ku_scratch(k, (int64_t)(maxlen + swbytes + 1), 1);
    char *keep = buf ? gwr_ku_scratch(k, c, 1) : NULL;
    if (!keep) {
        gwr_free(buf);
        return GWR_ERR_NOMEM;
    }
    char *folded = buf + maxlen;
    if (!sens)
        for (int64_t i = 0, off = 0; i < nsw; off += (int64_t)sw[i].len, i++) change_case(folded + off, sw[i].data, sw[i].len, 1);
    int64_t m = 0;
    for (int64_t i = 0; i < c; i++) {
        const char *s = xs[i].data;
        if (!sens) {
            change_case(buf, xs[i].data, xs[i].len, 1);
            s = buf;
        }
        int stop = 0;
        for (int64_t j = 0, off = 0; j < nsw && !stop; off += (int64_t)sw[j].len, j++)
            stop = sw[j].len == xs[i].len && (!xs[i].len || !memcmp(s, sens ? sw[j].data : folded + off, xs[i].len));
        keep[i] = (char)!stop;
        m += !stop;
    }
    /* Everything filtered: one empty string, [1] or [1, 1]. */
    int64_t od[2] = {1, m ? m : 1};
    gwr_value *y = x->rank == 1 ? gwr_k_out(k, 0, GWR_STRING, 1, od + 1) : gwr_k_out(k, 0, GWR_STRING, 2, od);
    gwr_status rc = y ? GWR_OK : GWR_ERR_NOMEM;
    /* the empty string as a string (not a NULL entry) */
    if (!rc && !m && gwr_value_set_string(y, 0, "", 0)) rc = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    for (int64_t i = 0, o = 0; i < c && !rc; i++) {
        if (!keep[i]) continue;
        const char *s = xs[i].data;
        if (action != CASE_NONE) {
            change_case(buf, xs[i].data, xs[i].len, action == CASE_UPPER);
            s = buf;
        }
        if (gwr_value_set_string(y, o++, s, xs[i].len)) rc = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    }
    gwr_free(buf);
    gwr_free(keep);
    return rc;
}

/* ---- TfIdfVectorizer ------------------------------------------------------------ */

/* N-grams as keys: int64 items as they are, strings as their rank among
 * the pool's distinct strings (-1 for an input string not in the pool). */
typedef struct {
    const int64_t *pk;  /* key of each pool item */
    const int64_t *off; /* first pool item of n-gram g */
    int64_t n;          /* the n-gram length of this table */
} grams;

static int cmp_grams(const void *ctx, int64_t a, int64_t b) {
    const grams *g = ctx;
    for (int64_t t = 0; t < g->n; t++) {
        int64_t u = g->pk[g->off[a] + t], v = g->pk[g->off[b] + t];
        if (u != v) return u < v ? -1 : 1;
    }
    return 0;
}

static int cmp_pool_str(const void *ctx, int64_t a, int64_t b) {
    const gwr_bytes *s = ctx;
    return gwr_ku_cmp_bytes(&s[a], &s[b]);
}

/* The n-gram of table tab (ntab entries) equal to the keys key[0], key[s],
 * ..., or -1. */
static int64_t find_gram(const grams *g, const int64_t *tab, int64_t ntab, const int64_t *key, int64_t s) {
    int64_t lo = 0, hi = ntab;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2, c = 0;
        for (int64_t t = 0; t < g->n && !c; t++) {
            int64_t u = g->pk[g->off[tab[mid]] + t], v = key[t * s];
            c = u < v ? -1 : u > v;
        }
        if (!c) return tab[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

static gwr_status req_int(gwr_kctx *k, const char *name, int64_t *v) {
    if (gwr_layer_get_int(k->layer, name, v)) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attribute %s is missing", name);
    return GWR_OK;
}

enum { TF_TF, TF_IDF, TF_TFIDF };

static gwr_status k_tfidf(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_named(k, 0, "X");
    if (!x) return GWR_ERR_INVALID_ARG;
    if (x->dtype != GWR_INT32 && x->dtype != GWR_INT64 && x->dtype != GWR_STRING)
        return gwr_k_fail(k, GWR_ERR_TYPE, "X must be int32, int64 or string, not %s", gwr_dtype_name(x->dtype));
    if (x->rank > 2) return gwr_k_fail(k, GWR_ERR_SHAPE, "X must be [C] or [N, C], not rank %d", x->rank);
    int64_t rows = x->rank == 2 ? x->dims[0] : 1, c = x->rank == 0 ? 1 : x->dims[x->rank - 1];
    const char *ms;
    if (gwr_layer_get_string(k->layer, "mode", &ms, NULL)) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attribute mode is missing");
    int mode = !strcmp(ms, "TF") ? TF_TF : !strcmp(ms, "IDF") ? TF_IDF : !strcmp(ms, "TFIDF") ? TF_TFIDF : -1;
    if (mode < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "mode '%s' is not TF, IDF or TFIDF", ms);
    int64_t mn, mx, skip;
    if (req_int(k, "min_gram_length", &mn) || req_int(k, "max_gram_length", &mx) || req_int(k, "max_skip_count", &skip))
        return GWR_ERR_INVALID_ARG;
    if (mn < 1 || mx < mn)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "gram lengths [%lld, %lld] must satisfy 1 <= min <= max", (long long)mn, (long long)mx);
    if (skip < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "max_skip_count %lld is negative", (long long)skip);
    const int64_t *counts, *idx, *pint = NULL;
    const gwr_bytes *pstr = NULL;
    const float *w = NULL;
    int64_t ncounts = gwr_k_ints(k, "ngram_counts", &counts), nidx = gwr_k_ints(k, "ngram_indexes", &idx), np, nw;
    if (ncounts < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attribute ngram_counts is missing");
    if (nidx < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attribute ngram_indexes is missing");
    int64_t npi = gwr_k_ints(k, "pool_int64s", &pint), nps = -1;
    if (gwr_layer_get_strings(k->layer, "pool_strings", &pstr, &nps)) nps = -1;
    if ((npi < 0) == (nps < 0)) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "exactly one of pool_int64s and pool_strings must be set");
    if ((nps >= 0) != (x->dtype == GWR_STRING))
        return gwr_k_fail(k, GWR_ERR_TYPE, "X of dtype %s needs %s", gwr_dtype_name(x->dtype),
                          nps >= 0 ? "pool_int64s, not pool_strings" : "pool_strings, not pool_int64s");
    np = npi >= 0 ? npi : nps;
    /* The pool: ngram_counts[i] is where the (i+1)-grams start. */
    int64_t total = 0;
    for (int64_t i = 0; i < ncounts; i++) {
        int64_t end = i + 1 < ncounts ? counts[i + 1] : np;
        if (counts[i] < 0 || counts[i] > np || (i == 0 && counts[i] != 0) || end < counts[i])
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "ngram_counts must rise from 0 to at most the pool size %lld (entry %lld is %lld)",
                              (long long)np, (long long)i, (long long)counts[i]);
        if ((end - counts[i]) % (i + 1))
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "the %lld-grams span %lld pool entries, not a multiple of %lld", (long long)(i + 1),
                              (long long)(end - counts[i]), (long long)(i + 1));
        total += (end - counts[i]) / (i + 1);
    }
    if (nidx != total)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "ngram_indexes has %lld entries, the pool %lld n-grams", (long long)nidx,
                          (long long)total);
    int64_t ncol = 0;
    for (int64_t i = 0; i < nidx; i++) {
        if (idx[i] < 0 || idx[i] >= MAX_ELEMS)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "ngram_indexes[%lld] = %lld is out of range", (long long)i, (long long)idx[i]);
        if (idx[i] + 1 > ncol) ncol = idx[i] + 1;
    }
    int64_t ny = gwr_ku_mul_max(rows, ncol, INT64_MAX);
    if (ny < 0 || ny > MAX_ELEMS)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "an output of %lld x %lld is too large", (long long)rows, (long long)ncol);
    nw = gwr_k_floats(k, "weights", &w);
    if (nw >= 0 && nw != nidx)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "weights has %lld entries, ngram_indexes %lld", (long long)nw, (long long)nidx);
    if (nw < 0) w = NULL;

    /* Keys of pool and input, the start of every n-gram, one table per
     * length, frequencies. */
    int64_t *mem = gwr_ku_scratch(k, 3 * np + x->numel + 4 * total + 2 * ncounts, sizeof(int64_t));
    if (!mem) return GWR_ERR_NOMEM;
    int64_t *pk = mem, *xk = pk + np, *off = xk + x->numel, *tab = off + total, *tmp = tab + total, *perm = tmp + total,
            *ptmp = perm + np, *cnt = ptmp + np;
    if (pint) {
        memcpy(pk, pint, (size_t)np * sizeof *pk);
        for (int64_t i = 0; i < x->numel; i++) xk[i] = gwr_v_get_i64(x, i);
    } else {
        for (int64_t i = 0; i < np; i++) perm[i] = i;
        gwr_ku_merge_sort(perm, ptmp, np, cmp_pool_str, pstr);
        for (int64_t i = 0, id = -1; i < np; i++) {
            if (i == 0 || gwr_ku_cmp_bytes(&pstr[perm[i - 1]], &pstr[perm[i]])) id++;
            pk[perm[i]] = id;
        }
        const gwr_bytes *xs = x->data;
        for (int64_t i = 0; i < x->numel; i++) {
            int64_t lo = 0, hi = np;
            xk[i] = -1;
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                int cc = gwr_ku_cmp_bytes(&pstr[perm[mid]], &xs[i]);
                if (!cc) {
                    xk[i] = pk[perm[mid]];
                    break;
                }
                if (cc < 0) lo = mid + 1;
                else hi = mid;
            }
        }
    }
    /* tf[n-1] / tl[n-1]: where the n-grams sit in tab, sorted, duplicates
     * dropped (a later duplicate wins, as in the reference); none for the
     * lengths outside [min, max]. */
    int64_t g = 0, nmax = mx < ncounts ? mx : ncounts, *tf = cnt + total, *tl = tf + ncounts;
    for (int64_t i = 0; i < ncounts; i++) {
        int64_t n = i + 1, end = i + 1 < ncounts ? counts[i + 1] : np, ng = (end - counts[i]) / n;
        for (int64_t j = 0; j < ng; j++) off[g + j] = counts[i] + j * n, tab[g + j] = g + j;
        tf[i] = g, tl[i] = 0;
        if (n >= mn && n <= mx && ng) {
            grams gc = {pk, off, n};
            gwr_ku_merge_sort(tab + g, tmp, ng, cmp_grams, &gc);
            int64_t m = 0;
            for (int64_t j = 0; j < ng; j++) {
                if (m && !cmp_grams(&gc, tab[g + m - 1], tab[g + j])) tab[g + m - 1] = tab[g + j];
                else tab[g + m++] = tab[g + j];
            }
            tl[i] = m;
        }
        g += ng;
    }
    int64_t od[2] = {rows, ncol};
    gwr_value *y = x->rank == 2 ? gwr_k_out(k, 0, GWR_FLOAT32, 2, od) : gwr_k_out(k, 0, GWR_FLOAT32, 1, od + 1);
    int64_t smax = skip + 1 < c ? skip + 1 : c;
    for (int64_t r = 0; y && r < rows; r++) {
        const int64_t *row = xk + r * c;
        memset(cnt, 0, (size_t)total * sizeof *cnt);
        for (int64_t s = 1; s <= smax; s++)
            for (int64_t n = s > 1 && mn < 2 ? 2 : mn; n <= nmax; n++) {
                int64_t span = (n - 1) * s;
                if (!tl[n - 1] || span >= c) continue;
                grams gc = {pk, off, n};
                for (int64_t st = 0; st + span < c; st++) {
                    int64_t hit = find_gram(&gc, tab + tf[n - 1], tl[n - 1], row + st, s);
                    if (hit >= 0) cnt[hit]++;
                }
            }
        /* Weights belong to pool n-grams (as the spec and ONNX Runtime have
         * it). Where several n-grams share a column, TF and TFIDF add up;
         * IDF takes the weight of the last n-gram found, in pool order. */
        float *yr = (float *)y->data + r * ncol;
        for (int64_t j = 0; j < ncol; j++) yr[j] = 0;
        for (int64_t i = 0; i < total; i++) {
            double f = (double)cnt[i], wt = w ? w[i] : 1.0;
            if (!cnt[i]) continue;
            if (mode == TF_TF) yr[idx[i]] += (float)f;
            else if (mode == TF_TFIDF) yr[idx[i]] += (float)(f * wt);
            else yr[idx[i]] = (float)wt;
        }
    }
    gwr_free(mem);
    return y ? GWR_OK : GWR_ERR_NOMEM;
}

const gwr_kernel_entry gwr_kernels_text[] = {
    GWR_KERNEL(StringNormalizer, k_string_normalizer),
    GWR_KERNEL(TfIdfVectorizer, k_tfidf),
    {.fn = NULL},
};
