/* prov_json.c - the reader of the provenance a rewrite records on a layer
 * (property "gwr.provenance"):
 *   {"rule":"fuse_gelu","from":["Div_3",{"name":"Mul_9","rule":"r","from":[..]},..]}
 * A general JSON walker, iterative (a chain of rewrites nests as deep as it
 * is long), that keeps only the top rule and the layer names: strings in a
 * "from" array and the "name" of nested objects. Other keys ("more", keys
 * a later version adds) are read and skipped. */
#include <string.h>

#include "diff/diff_internal.h"

typedef struct walker {
    const char *p, *end;
    char *buf; /* the last string read, unescaped, NUL-terminated */
    int64_t len, cap;
    int oom;
} walker;

static void skip_ws(walker *w) {
    while (w->p < w->end && (*w->p == ' ' || *w->p == '\t' || *w->p == '\n' || *w->p == '\r')) w->p++;
}

static int put(walker *w, const char *s, int64_t n) {
    if (gwr_grow((void **)&w->buf, 1, &w->cap, w->len + n + 1)) return w->oom = 1, -1;
    memcpy(w->buf + w->len, s, (size_t)n);
    w->len += n;
    w->buf[w->len] = 0;
    return 0;
}

static int hex4(const char *p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

static int put_utf8(walker *w, unsigned cp) {
    char b[4];
    int n;
    if (cp < 0x80) b[0] = (char)cp, n = 1;
    else if (cp < 0x800) b[0] = (char)(0xc0 | cp >> 6), b[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
    else if (cp < 0x10000)
        b[0] = (char)(0xe0 | cp >> 12), b[1] = (char)(0x80 | ((cp >> 6) & 0x3f)), b[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
    else
        b[0] = (char)(0xf0 | cp >> 18), b[1] = (char)(0x80 | ((cp >> 12) & 0x3f)),
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), b[3] = (char)(0x80 | (cp & 0x3f)), n = 4;
    return put(w, b, n);
}

/* A string at w->p (the opening quote) into w->buf. */
static int read_string(walker *w) {
    w->len = 0;
    if (put(w, "", 0)) return -1;
    w->p++;
    while (w->p < w->end && *w->p != '"') {
        const char *run = w->p;
        while (w->p < w->end && *w->p != '"' && *w->p != '\\') {
            if ((unsigned char)*w->p < 0x20) return -1;
            w->p++;
        }
        if (w->p > run && put(w, run, w->p - run)) return -1;
        if (w->p >= w->end || *w->p == '"') break;
        if (w->end - w->p < 2) return -1;
        char e = w->p[1], c;
        w->p += 2;
        switch (e) {
        case '"': case '\\': case '/': c = e; break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'n': c = '\n'; break;
        case 'r': c = '\r'; break;
        case 't': c = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (w->end - w->p < 4 || hex4(w->p, &cp)) return -1;
            w->p += 4;
            if (cp >= 0xd800 && cp < 0xdc00) {
                if (w->end - w->p < 6 || w->p[0] != '\\' || w->p[1] != 'u' || hex4(w->p + 2, &lo) || lo < 0xdc00 ||
                    lo > 0xdfff)
                    return -1;
                w->p += 6;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            } else if (cp >= 0xdc00 && cp < 0xe000) {
                return -1;
            }
            if (put_utf8(w, cp)) return -1;
            continue;
        }
        default: return -1;
        }
        if (put(w, &c, 1)) return -1;
    }
    if (w->p >= w->end) return -1;
    w->p++;
    return 0;
}

/* A number, true, false or null: skipped (their text checked loosely). */
static int skip_scalar(walker *w) {
    static const char *const words[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(words[i]);
        if ((size_t)(w->end - w->p) >= n && !memcmp(w->p, words[i], n)) return w->p += n, 0;
    }
    const char *s = w->p;
    while (w->p < w->end && *w->p && strchr("+-0123456789.eE", *w->p)) w->p++;
    return w->p > s ? 0 : -1;
}

/* What a container on the walk's stack is: an object (and the key whose
 * value comes next) or an array (and whether it is a "from" list). */
enum { K_OTHER, K_RULE, K_NAME, K_FROM };
typedef struct frame {
    char obj;    /* 1: object, 0: array */
    char key;    /* objects: K_* of the current key; arrays: 1 for a "from" list */
    char first;  /* nothing read in it yet */
} frame;

int gwr_df_prov_parse(const char *s, size_t len, char **rule, int (*name)(void *ctx, const char *s), void *ctx) {
    walker w = {.p = s, .end = s + len};
    frame *st = NULL;
    int64_t n = 0, cap = 0;
    int rc = -1;
    *rule = NULL;
    skip_ws(&w);
    if (w.p >= w.end || *w.p != '{') return -1;
    for (;;) {
        /* At a value. */
        skip_ws(&w);
        if (w.p >= w.end) goto out;
        frame *top = n ? &st[n - 1] : NULL;
        if (*w.p == '{' || *w.p == '[') {
            int from = top && top->obj && top->key == K_FROM; /* before growing moves the stack */
            if (gwr_grow((void **)&st, sizeof *st, &cap, n + 1)) {
                w.oom = 1;
                goto out;
            }
            st[n++] = (frame){*w.p == '{', (char)(*w.p == '[' ? from : K_OTHER), 1};
            w.p++;
        } else if (*w.p == '"') {
            if (!top || read_string(&w)) goto out;
            if (top->obj && top->key == K_RULE && n == 1) {
                gwr_free(*rule);
                if (!(*rule = gwr_strdup(w.buf))) {
                    w.oom = 1;
                    goto out;
                }
            } else if ((top->obj && top->key == K_NAME && n > 1) || (!top->obj && top->key)) {
                if (name(ctx, w.buf)) {
                    w.oom = 1;
                    goto out;
                }
            }
        } else if (!top || skip_scalar(&w)) {
            goto out;
        }
        /* After a value (or an opening bracket): a key, a comma, or closings. */
        for (;;) {
            skip_ws(&w);
            if (!n) {
                rc = w.p == w.end ? 0 : -1;
                goto out;
            }
            frame *f = &st[n - 1];
            if (w.p >= w.end) goto out;
            char close = f->obj ? '}' : ']';
            if (*w.p == close) { /* after a comma a value is read first: no trailing comma */
                w.p++, n--;
                if (n) st[n - 1].first = 0;
                continue;
            }
            if (!f->first) {
                if (*w.p != ',') goto out;
                w.p++;
                skip_ws(&w);
            }
            f->first = 0;
            if (f->obj) {
                if (w.p >= w.end || *w.p != '"' || read_string(&w)) goto out;
                f->key = !strcmp(w.buf, "rule") ? K_RULE : !strcmp(w.buf, "name") ? K_NAME
                         : !strcmp(w.buf, "from") ? K_FROM : K_OTHER;
                skip_ws(&w);
                if (w.p >= w.end || *w.p != ':') goto out;
                w.p++;
            }
            break;
        }
    }
out:
    gwr_free(st);
    gwr_free(w.buf);
    if (w.oom) rc = -2;
    if (rc) gwr_free(*rule), *rule = NULL;
    return rc;
}
