/* strings.c - the opset-20 string ops: StringConcat (element-wise, with
 * broadcasting), StringSplit (Python's str.split per element, padded with
 * empty strings) and RegexFullMatch (a whole-string match of an RE2
 * pattern, run by POSIX <regex.h> after a translation of the RE2 subset
 * that docs/conformance-notes.md lists; other RE2 syntax is refused).
 *
 * Semantics follow ONNX's operator specification. Every input and
 * attribute is checked first; strings are bytes (UTF-8 is not decoded). */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/kernels/kernel_util.h"

static const gwr_value *need_strings(gwr_kctx *k, int i, const char *name) {
    const gwr_value *v = gwr_ku_need_named(k, i, name);
    if (v && v->dtype != GWR_STRING) {
        gwr_k_fail(k, GWR_ERR_TYPE, "%s must be a string tensor, not %s", name, gwr_dtype_name(v->dtype));
        return NULL;
    }
    return v;
}

/* ---- StringConcat ---------------------------------------------------------- */

static gwr_status k_string_concat(gwr_kctx *k) {
    const gwr_value *x = need_strings(k, 0, "X"), *y = x ? need_strings(k, 1, "Y") : NULL;
    if (!y) return GWR_ERR_INVALID_ARG;
    int r;
    int64_t od[GWR_MAX_RANK], sx[GWR_MAX_RANK], sy[GWR_MAX_RANK], st[GWR_MAX_RANK];
    if (gwr_broadcast(x->rank, x->dims, y->rank, y->dims, &r, od))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "X and Y do not broadcast");
    gwr_value *z = gwr_k_out(k, 0, GWR_STRING, r, od);
    if (!z) return GWR_ERR_NOMEM;
    gwr_bcast_strides(x->rank, x->dims, r, od, sx);
    gwr_bcast_strides(y->rank, y->dims, r, od, sy);
    gwr_strides(r, od, st);
    const gwr_bytes *xs = x->data, *ys = y->data;
    for (int64_t i = 0; i < z->numel; i++) {
        int64_t ix = 0, iy = 0, rem = i;
        for (int d = 0; d < r; d++) {
            int64_t c = rem / st[d];
            rem -= c * st[d];
            ix += c * sx[d], iy += c * sy[d];
        }
        size_t a = xs[ix].len, b = ys[iy].len;
        char *s = gwr_malloc(a + b + 1);
        if (!s) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
        if (a) memcpy(s, xs[ix].data, a);
        if (b) memcpy(s + a, ys[iy].data, b);
        s[a + b] = 0;
        gwr_bytes *o = &((gwr_bytes *)z->data)[i];
        o->data = s, o->len = a + b; /* the output's entries start empty: z owns s now */
    }
    return GWR_OK;
}

/* ---- StringSplit ----------------------------------------------------------- */

/* Python's whitespace in ASCII: \t \n \v \f \r, the separators 0x1c-0x1f
 * and space. */
static int is_space(unsigned char c) { return c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f); }

/* The pieces of s[0..n) as str.split(delim or whitespace, maxsplit) cuts
 * them: calls put(ctx, start, len) per piece when put is not NULL; returns
 * the count. maxsplit < 0: no limit. */
typedef void (*piece_fn)(void *ctx, int64_t j, const char *p, size_t len);
static int64_t split_one(const char *s, size_t n, const char *delim, size_t dn, int64_t maxsplit, piece_fn put, void *ctx) {
    int64_t count = 0;
    size_t i = 0;
    if (!dn) {
        for (;;) {
            while (i < n && is_space((unsigned char)s[i])) i++;
            if (i == n) break;
            if (maxsplit >= 0 && count == maxsplit) { /* the rest, trailing whitespace kept */
                if (put) put(ctx, count, s + i, n - i);
                count++;
                break;
            }
            size_t b = i;
            while (i < n && !is_space((unsigned char)s[i])) i++;
            if (put) put(ctx, count, s + b, i - b);
            count++;
        }
        return count;
    }
    for (;;) {
        const char *hit = NULL;
        if (maxsplit < 0 || count < maxsplit)
            for (size_t j = i; j + dn <= n && !hit; j++)
                if (!memcmp(s + j, delim, dn)) hit = s + j;
        if (!hit) {
            if (put) put(ctx, count, s + i, n - i);
            return count + 1;
        }
        if (put) put(ctx, count, s + i, (size_t)(hit - (s + i)));
        count++;
        i = (size_t)(hit - s) + dn;
    }
}

typedef struct split_out {
    gwr_value *y;
    int64_t base;
    int bad;
} split_out;

static void put_piece(void *ctx, int64_t j, const char *p, size_t len) {
    split_out *o = ctx;
    if (!o->bad && gwr_value_set_string(o->y, o->base + j, p, len)) o->bad = 1;
}

static gwr_status k_string_split(gwr_kctx *k) {
    const gwr_value *x = need_strings(k, 0, "X");
    if (!x) return GWR_ERR_INVALID_ARG;
    if (x->rank >= GWR_MAX_RANK) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "input rank %d leaves no room for the output's extra axis", x->rank);
    const char *delim = NULL;
    size_t dn = 0;
    if (gwr_layer_get_string(k->layer, "delimiter", &delim, &dn)) dn = 0;
    int64_t maxsplit = gwr_k_int(k, "maxsplit", -1);
    const gwr_bytes *xs = x->data;
    int64_t most = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t c = split_one(xs[i].data ? xs[i].data : "", xs[i].len, delim, dn, maxsplit, NULL, NULL);
        if (c > most) most = c;
    }
    int64_t yd[GWR_MAX_RANK];
    if (x->rank) memcpy(yd, x->dims, (size_t)x->rank * sizeof *yd);
    yd[x->rank] = most;
    gwr_value *y = gwr_k_out(k, 0, GWR_STRING, x->rank + 1, yd);
    gwr_value *z = y ? gwr_k_out(k, 1, GWR_INT64, x->rank, x->dims) : NULL;
    if (!z) return GWR_ERR_NOMEM;
    split_out o = {y, 0, 0};
    for (int64_t i = 0; i < x->numel && !o.bad; i++) {
        o.base = i * most;
        int64_t c = split_one(xs[i].data ? xs[i].data : "", xs[i].len, delim, dn, maxsplit, put_piece, &o);
        ((int64_t *)z->data)[i] = c;
        for (int64_t j = c; j < most && !o.bad; j++) put_piece(&o, j, "", 0); /* padding: "" */
    }
    return o.bad ? gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory") : GWR_OK;
}

/* ---- RegexFullMatch ---------------------------------------------------------- */

typedef struct rbuf {
    char *p;
    size_t n, cap;
    int bad;
} rbuf;

static void rb_put(rbuf *b, const char *s) {
    size_t m = strlen(s);
    if (b->bad) return;
    if (b->n + m + 1 > b->cap) {
        size_t cap = (b->n + m + 1) * 2;
        char *q = gwr_realloc(b->p, cap);
        if (!q) {
            b->bad = 1;
            return;
        }
        b->p = q, b->cap = cap;
    }
    memcpy(b->p + b->n, s, m + 1);
    b->n += m;
}

static void rb_ch(rbuf *b, char c) {
    char s[2] = {c, 0};
    rb_put(b, s);
}

/* The class a \letter names, as the inside of a bracket expression (NULL:
 * not a class); *neg for the upper-case (negated) ones. */
static const char *escape_class(char c, int *neg) {
    *neg = c == 'W' || c == 'D' || c == 'S';
    switch (c) {
    case 'w': case 'W': return "[:alnum:]_";
    case 'd': case 'D': return "0-9";
    case 's': case 'S': return "[:space:]";
    default: return NULL;
    }
}

/* A literal escape: \n \t \r \f \v, or punctuation; 0 when c is neither. */
static char escape_literal(char c) {
    switch (c) {
    case 'n': return '\n';
    case 't': return '\t';
    case 'r': return '\r';
    case 'f': return '\f';
    case 'v': return '\v';
    default: return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') || (c >= '{' && c <= '~') ? c : 0;
    }
}

/* RE2 to POSIX ERE, anchored as ^(...)$ for a whole-string match. The
 * subset: literals, . [] [^] ranges, [:class:] inside brackets, groups,
 * |, * + ? {m,n}, ^ $, the escapes \w \W \d \D \s \S (also inside
 * brackets, except the negated ones), \b \B (glibc's regcomp has them),
 * \n \t \r \f \v and escaped punctuation. Lazy quantifiers (*? +? ?? {}?)
 * become greedy: a whole-string match exists for one exactly when it does
 * for the other. Refused (why set, NULL returned): (?...) groups and flags,
 * \A \z \p \Q and other escapes, backreferences. */
static char *re2_to_ere(const char *re, char *why, size_t size) {
    rbuf b = {0};
    rb_put(&b, "^(");
    int prev_quant = 0;
    for (const char *p = re; *p && !b.bad; p++) {
        int neg;
        const char *cls;
        if (*p == '(' && p[1] == '?') {
            snprintf(why, size, "'(?' groups and flags are not supported");
            goto refuse;
        }
        if (*p == '?' && prev_quant) { /* lazy: same full-match set */
            prev_quant = 0;
            continue;
        }
        prev_quant = 0;
        if (*p == '*' || *p == '+' || *p == '?') {
            rb_ch(&b, *p);
            prev_quant = 1;
            continue;
        }
        if (*p == '{') {
            const char *q = p + 1;
            while (*q && *q != '}') q++;
            if (!*q) {
                snprintf(why, size, "unterminated '{'");
                goto refuse;
            }
            for (; p <= q; p++) rb_ch(&b, *p);
            p--;
            prev_quant = 1;
            continue;
        }
        if (*p == '[') {
            /* Items go in a fresh bracket: ']' first, '-' last, '^' not first. */
            rbuf in = {0};
            int negated = 0, close = 0, dash = 0, caret = 0;
            p++;
            if (*p == '^') negated = 1, p++;
            if (*p == ']') close = 1, p++;
            for (; *p && *p != ']' && !in.bad; p++) {
                if (*p == '[' && p[1] == ':') {
                    const char *e = strstr(p + 2, ":]");
                    if (!e) break;
                    for (; p < e + 2; p++) rb_ch(&in, *p);
                    p--;
                } else if (*p == '\\') {
                    char c = *++p;
                    if (!c) break;
                    if ((cls = escape_class(c, &neg))) {
                        if (neg) {
                            gwr_free(in.p);
                            snprintf(why, size, "'\\%c' inside brackets is not supported", c);
                            goto refuse;
                        }
                        rb_put(&in, cls);
                    } else if (escape_literal(c)) {
                        c = escape_literal(c);
                        if (c == ']') close = 1;
                        else if (c == '-') dash = 1;
                        else if (c == '^') caret = 1;
                        else rb_ch(&in, c);
                    } else {
                        gwr_free(in.p);
                        snprintf(why, size, "escape '\\%c' inside brackets is not supported", c);
                        goto refuse;
                    }
                } else if (*p == '-' && (p[1] == ']' || !in.n)) {
                    dash = 1;
                } else if (*p == '^') {
                    caret = 1;
                } else {
                    rb_ch(&in, *p);
                }
            }
            if (*p != ']') {
                gwr_free(in.p);
                snprintf(why, size, "unterminated '['");
                goto refuse;
            }
            rb_put(&b, negated ? "[^" : "[");
            if (close) rb_ch(&b, ']');
            if (in.p) rb_put(&b, in.p);
            if (caret) rb_ch(&b, '^');
            if (dash) rb_ch(&b, '-');
            rb_ch(&b, ']');
            if (in.bad) b.bad = 1;
            gwr_free(in.p);
            continue;
        }
        if (*p != '\\') {
            rb_ch(&b, *p);
            continue;
        }
        char c = *++p;
        if (!c) {
            snprintf(why, size, "trailing '\\'");
            goto refuse;
        }
        if ((cls = escape_class(c, &neg))) {
            rb_put(&b, neg ? "[^" : "[");
            rb_put(&b, cls);
            rb_ch(&b, ']');
        } else if (c == 'b' || c == 'B') {
            rb_ch(&b, '\\'), rb_ch(&b, c);
        } else if (escape_literal(c)) {
            c = escape_literal(c);
            if (strchr(".[]()*+?{}|^$\\", c)) rb_ch(&b, '\\');
            rb_ch(&b, c);
        } else {
            snprintf(why, size, "escape '\\%c' is not supported", c);
            goto refuse;
        }
    }
    rb_put(&b, ")$");
    if (b.bad) {
        snprintf(why, size, "out of memory");
        goto refuse;
    }
    return b.p;
refuse:
    gwr_free(b.p);
    return NULL;
}

static gwr_status k_regex_full_match(gwr_kctx *k) {
    const gwr_value *x = need_strings(k, 0, "X");
    if (!x) return GWR_ERR_INVALID_ARG;
    const char *pat = NULL;
    size_t plen = 0;
    if (gwr_layer_get_string(k->layer, "pattern", &pat, &plen)) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attribute 'pattern' is required");
    if (strlen(pat) != plen) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "pattern holds a NUL byte");
    char why[160];
    char *ere = re2_to_ere(pat, why, sizeof why);
    if (!ere) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "pattern '%.80s': %s", pat, why);
    regex_t rx;
    int rc = regcomp(&rx, ere, REG_EXTENDED | REG_NOSUB);
    gwr_free(ere);
    if (rc) {
        regerror(rc, NULL, why, sizeof why);
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "pattern '%.80s': %s", pat, why);
    }
    gwr_value *y = gwr_k_out(k, 0, GWR_BOOL, x->rank, x->dims);
    gwr_status st = y ? GWR_OK : GWR_ERR_NOMEM;
    const gwr_bytes *xs = x->data;
    for (int64_t i = 0; i < x->numel && !st; i++) {
        const char *s = xs[i].data ? xs[i].data : "";
        if (strlen(s) != xs[i].len) st = gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "string %lld holds a NUL byte", (long long)i);
        else ((uint8_t *)y->data)[i] = regexec(&rx, s, 0, NULL, 0) == 0;
    }
    regfree(&rx);
    return st;
}

const gwr_kernel_entry gwr_kernels_strings[] = {
    GWR_KERNEL_CUSTOM("", "StringConcat", k_string_concat, .first_opset = 20),
    GWR_KERNEL_CUSTOM("", "StringSplit", k_string_split, .first_opset = 20),
    GWR_KERNEL_CUSTOM("", "RegexFullMatch", k_regex_full_match, .first_opset = 20),
    {0},
};
