/* json.c - a small JSON reader (json.h): recursive descent, depth-limited,
 * every value and string in one arena. */
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

#define MAX_DEPTH 256

struct cli_json_doc {
    gwr_arena arena;
    cli_json root;
};

typedef struct parser {
    const char *s;
    size_t n, i;
    gwr_arena *a;
    char *err;
    size_t errsz;
    int failed;
} parser;

static int fail(parser *p, const char *what) {
    if (!p->failed) snprintf(p->err, p->errsz, "at byte %zu: %s", p->i, what);
    p->failed = 1;
    return -1;
}

static void skip_ws(parser *p) {
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r')) p->i++;
}

static int hex4(parser *p, unsigned *out) {
    if (p->n - p->i < 4) return fail(p, "bad \\u escape");
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        char c = p->s[p->i++];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return fail(p, "bad \\u escape");
    }
    *out = v;
    return 0;
}

static size_t put_utf8(char *o, unsigned c) {
    if (c < 0x80) return o[0] = (char)c, 1;
    if (c < 0x800) return o[0] = (char)(0xc0 | c >> 6), o[1] = (char)(0x80 | (c & 0x3f)), 2;
    if (c < 0x10000)
        return o[0] = (char)(0xe0 | c >> 12), o[1] = (char)(0x80 | ((c >> 6) & 0x3f)), o[2] = (char)(0x80 | (c & 0x3f)), 3;
    o[0] = (char)(0xf0 | c >> 18), o[1] = (char)(0x80 | ((c >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3f)), o[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

/* At the opening quote: the unescaped string in the arena. */
static int string(parser *p, const char **out, size_t *len) {
    size_t start = ++p->i, end = start;
    while (end < p->n && p->s[end] != '"') end += p->s[end] == '\\' ? 2 : 1;
    if (end >= p->n) return fail(p, "unterminated string");
    char *o = gwr_arena_alloc(p->a, end - start + 1); /* unescaping only shrinks */
    if (!o) return fail(p, "out of memory");
    size_t k = 0;
    while (p->i < end) {
        unsigned char c = (unsigned char)p->s[p->i];
        if (c < 0x20) return fail(p, "control character in a string");
        if (c != '\\') {
            o[k++] = (char)c, p->i++;
            continue;
        }
        char e = p->s[++p->i];
        p->i++;
        switch (e) {
        case '"': o[k++] = '"'; break;
        case '\\': o[k++] = '\\'; break;
        case '/': o[k++] = '/'; break;
        case 'b': o[k++] = '\b'; break;
        case 'f': o[k++] = '\f'; break;
        case 'n': o[k++] = '\n'; break;
        case 'r': o[k++] = '\r'; break;
        case 't': o[k++] = '\t'; break;
        case 'u': {
            unsigned c1, c2;
            if (hex4(p, &c1)) return -1;
            if (c1 >= 0xd800 && c1 < 0xdc00 && p->i + 6 <= end && p->s[p->i] == '\\' && p->s[p->i + 1] == 'u') {
                p->i += 2;
                if (hex4(p, &c2)) return -1;
                if (c2 >= 0xdc00 && c2 < 0xe000) c1 = 0x10000 + ((c1 - 0xd800) << 10) + (c2 - 0xdc00);
                else k += put_utf8(o + k, 0xfffd), c1 = c2;
            }
            if (c1 >= 0xd800 && c1 < 0xe000) c1 = 0xfffd;
            k += put_utf8(o + k, c1);
            break;
        }
        default: return fail(p, "bad escape in a string");
        }
    }
    p->i = end + 1;
    o[k] = 0;
    *out = o, *len = k;
    return 0;
}

static int value(parser *p, cli_json *v, int depth);

/* An array or object: the items (and keys) gathered in growing arrays,
 * then copied into the arena. */
static int container(parser *p, cli_json *v, int depth) {
    int obj = p->s[p->i] == '{';
    char close = obj ? '}' : ']';
    p->i++;
    cli_json *items = NULL;
    const char **keys = NULL;
    int64_t n = 0, cap = 0, kcap = 0;
    int rc = 0;
    skip_ws(p);
    if (p->i < p->n && p->s[p->i] == close) {
        p->i++;
    } else {
        for (;;) {
            if (gwr_grow((void **)&items, sizeof *items, &cap, n + 1) ||
                (obj && gwr_grow((void **)&keys, sizeof *keys, &kcap, n + 1))) {
                rc = fail(p, "out of memory");
                break;
            }
            memset(&items[n], 0, sizeof items[n]);
            skip_ws(p);
            if (obj) {
                size_t kl;
                if (p->i >= p->n || p->s[p->i] != '"') {
                    rc = fail(p, "expected a string key");
                    break;
                }
                if ((rc = string(p, &keys[n], &kl))) break;
                skip_ws(p);
                if (p->i >= p->n || p->s[p->i] != ':') {
                    rc = fail(p, "expected ':'");
                    break;
                }
                p->i++;
            }
            if ((rc = value(p, &items[n], depth + 1))) break;
            n++;
            skip_ws(p);
            if (p->i < p->n && p->s[p->i] == ',') {
                p->i++;
                continue;
            }
            if (p->i < p->n && p->s[p->i] == close) {
                p->i++;
                break;
            }
            rc = fail(p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
            break;
        }
    }
    if (!rc && n) {
        cli_json *ai = gwr_arena_alloc(p->a, (size_t)n * sizeof *ai);
        const char **ak = obj ? gwr_arena_alloc(p->a, (size_t)n * sizeof *ak) : NULL;
        if (!ai || (obj && !ak)) {
            rc = fail(p, "out of memory");
        } else {
            memcpy(ai, items, (size_t)n * sizeof *ai);
            if (obj) memcpy(ak, keys, (size_t)n * sizeof *ak);
            v->items = ai, v->keys = ak;
        }
    }
    v->type = obj ? CJ_OBJ : CJ_ARR;
    v->n = n;
    gwr_free(items);
    gwr_free(keys);
    return rc;
}

static int literal(parser *p, const char *word) {
    size_t k = strlen(word);
    if (p->n - p->i < k || memcmp(p->s + p->i, word, k)) return fail(p, "not a JSON value");
    p->i += k;
    return 0;
}

static int value(parser *p, cli_json *v, int depth) {
    if (depth > MAX_DEPTH) return fail(p, "nested too deeply");
    skip_ws(p);
    if (p->i >= p->n) return fail(p, "unexpected end");
    char c = p->s[p->i];
    if (c == '{' || c == '[') return container(p, v, depth);
    if (c == '"') return v->type = CJ_STR, string(p, &v->str, &v->len);
    if (c == 't') return v->type = CJ_BOOL, v->boolean = 1, literal(p, "true");
    if (c == 'f') return v->type = CJ_BOOL, literal(p, "false");
    if (c == 'n') return v->type = CJ_NULL, literal(p, "null");
    if (c == '-' || (c >= '0' && c <= '9')) {
        char buf[64];
        size_t k = 0;
        while (p->i + k < p->n && k < sizeof buf - 1 && strchr("+-0123456789.eE", p->s[p->i + k])) buf[k] = p->s[p->i + k], k++;
        buf[k] = 0;
        char *end;
        v->type = CJ_NUM;
        v->num = strtod(buf, &end);
        if (end != buf + k || k == sizeof buf - 1) return fail(p, "bad number");
        p->i += k;
        return 0;
    }
    return fail(p, "not a JSON value");
}

cli_json_doc *cli_json_parse(const char *text, size_t len, char *err, size_t size) {
    cli_json_doc *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, size, "out of memory");
        return NULL;
    }
    gwr_arena_init(&d->arena);
    parser p = {text, len, 0, &d->arena, err, size, 0};
    if (!value(&p, &d->root, 0)) {
        skip_ws(&p);
        if (p.i == p.n) return d;
        fail(&p, "text after the JSON value");
    }
    cli_json_free(d);
    return NULL;
}

void cli_json_free(cli_json_doc *d) {
    if (!d) return;
    gwr_arena_free(&d->arena);
    free(d);
}

const cli_json *cli_json_root(const cli_json_doc *d) { return d ? &d->root : NULL; }

const cli_json *cli_json_get(const cli_json *o, const char *key) {
    if (!o || o->type != CJ_OBJ) return NULL;
    for (int64_t i = 0; i < o->n; i++)
        if (!strcmp(o->keys[i], key)) return &o->items[i];
    return NULL;
}

const char *cli_json_str(const cli_json *o, const char *key) {
    const cli_json *v = cli_json_get(o, key);
    return v && v->type == CJ_STR ? v->str : NULL;
}

double cli_json_num(const cli_json *o, const char *key, double def) {
    const cli_json *v = cli_json_get(o, key);
    return v && v->type == CJ_NUM ? v->num : def;
}
