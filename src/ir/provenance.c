/* provenance.c - the lineage of layers made by rewrites: the JSON of the
 * layer property "gwr.provenance" (docs/design.md, "Provenance"):
 *
 *   {"rule":"fuse_gelu","from":["Div_3",{"name":"Mul_9","rule":"r","from":["a"]}],"more":N}
 *
 * A string item is a layer of the original network, an object item a
 * layer an earlier rewrite made (its own chain, under its name). A tree
 * lists at most GWR_PROV_MAX_LEAVES strings and nests at most
 * GWR_PROV_MAX_DEPTH objects; what it leaves out is counted in the "more"
 * of the object that stops listing. The rewrite driver builds one per
 * rewrite from the layers it replaced (gwr_ir_provenance_json); this file
 * also reads them back (gwr_provenance_text, for `gwr explain`). */
#include <stdlib.h>
#include <string.h>

#include "ir/ir_internal.h"

#define GWR_PROV_MAX_LEAVES 256
#define GWR_PROV_MAX_DEPTH 64

const char *gwr_layer_provenance(const gwr_layer *l) {
    return gwr_layer_prop(l, GWR_PROVENANCE_PROP, NULL);
}

/* ---- the tree ---- */

/* A node: a leaf (rule NULL) names an original layer; else a layer made by
 * `rule` from `from`, with `more` leaves already left out. */
typedef struct prov_node {
    char *name, *rule;
    struct prov_node **from;
    int64_t n, cap, more;
} prov_node;

static void node_free(prov_node *p) {
    if (!p) return;
    for (int64_t i = 0; i < p->n; i++) node_free(p->from[i]);
    gwr_free(p->from), gwr_free(p->name), gwr_free(p->rule), gwr_free(p);
}

static int node_add(prov_node *p, prov_node *c) {
    if (gwr_grow((void **)&p->from, sizeof *p->from, &p->cap, p->n + 1)) return -1;
    p->from[p->n++] = c;
    return 0;
}

/* Leaves under p, listed or counted in a "more". */
static int64_t leaves(const prov_node *p) {
    if (!p->rule) return 1;
    int64_t k = p->more;
    for (int64_t i = 0; i < p->n; i++) k += leaves(p->from[i]);
    return k;
}

/* ---- reading the JSON (our shape; unknown keys skipped) ---- */

typedef struct rd {
    const char *p, *end;
    int oom; /* an allocation failed (the text may be fine) */
} rd;

static void ws(rd *r) {
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\t' || *r->p == '\r')) r->p++;
}

static int eat(rd *r, char c) {
    ws(r);
    if (r->p < r->end && *r->p == c) {
        r->p++;
        return 1;
    }
    return 0;
}

static int hex4(rd *r, unsigned *v) {
    *v = 0;
    for (int i = 0; i < 4; i++, r->p++) {
        if (r->p >= r->end) return -1;
        char c = *r->p;
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16u;
        if (d > 15) return -1;
        *v = *v << 4 | d;
    }
    return 0;
}

static void put_utf8(gwr_buf *b, unsigned cp) {
    char u[4];
    size_t n;
    if (cp < 0x80) u[0] = (char)cp, n = 1;
    else if (cp < 0x800) u[0] = (char)(0xC0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
    else if (cp < 0x10000)
        u[0] = (char)(0xE0 | cp >> 12), u[1] = (char)(0x80 | (cp >> 6 & 0x3F)), u[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
    else
        u[0] = (char)(0xF0 | cp >> 18), u[1] = (char)(0x80 | (cp >> 12 & 0x3F)), u[2] = (char)(0x80 | (cp >> 6 & 0x3F)),
        u[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
    gwr_buf_add(b, u, n);
}

/* A JSON string, unescaped, malloc'd ("" is not NULL); NULL when bad. */
static char *str(rd *r) {
    if (!eat(r, '"')) return NULL;
    gwr_buf b = {0};
    gwr_buf_add(&b, "", 0);
    while (r->p < r->end && *r->p != '"') {
        if ((unsigned char)*r->p < 0x20) break;
        if (*r->p != '\\') {
            const char *q = r->p;
            while (q < r->end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20) q++;
            gwr_buf_add(&b, r->p, (size_t)(q - r->p));
            r->p = q;
            continue;
        }
        if (++r->p >= r->end) break;
        char c = *r->p++;
        const char *simple = strchr("\"\\/bfnrt", c);
        if (simple && c) {
            static const char out[] = "\"\\/\b\f\n\r\t";
            gwr_buf_add(&b, &out[simple - "\"\\/bfnrt"], 1);
            continue;
        }
        unsigned cp, lo;
        if (c != 'u' || hex4(r, &cp)) goto bad;
        if (cp >= 0xD800 && cp < 0xDC00) {
            if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u') goto bad;
            r->p += 2;
            if (hex4(r, &lo) || lo < 0xDC00 || lo > 0xDFFF) goto bad;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp < 0xE000) {
            goto bad;
        }
        put_utf8(&b, cp);
    }
    if (b.failed) r->oom = 1;
    if (r->p >= r->end || *r->p != '"' || b.failed) goto bad;
    r->p++;
    return b.s;
bad:
    gwr_free(b.s);
    return NULL;
}

/* Skips any JSON value (for keys this reader does not know). */
static int skip(rd *r, int depth) {
    ws(r);
    if (r->p >= r->end || depth > GWR_PROV_MAX_DEPTH) return -1;
    char c = *r->p;
    if (c == '"') {
        char *s = str(r);
        gwr_free(s);
        return s ? 0 : -1;
    }
    if (c == '[' || c == '{') {
        char close = c == '[' ? ']' : '}';
        r->p++;
        if (eat(r, close)) return 0;
        do {
            if (c == '{') {
                char *k = str(r);
                if (!k) return -1;
                gwr_free(k);
                if (!eat(r, ':')) return -1;
            }
            if (skip(r, depth + 1)) return -1;
        } while (eat(r, ','));
        return eat(r, close) ? 0 : -1;
    }
    const char *q = r->p;
    while (q < r->end && (strchr("+-.eE", *q) || (*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'z'))) q++;
    if (q == r->p) return -1;
    r->p = q;
    return 0;
}

static prov_node *object(rd *r, int depth);

static int from_list(rd *r, prov_node *p, int depth) {
    if (!eat(r, '[')) return -1;
    if (eat(r, ']')) return 0;
    do {
        ws(r);
        prov_node *c;
        if (r->p < r->end && *r->p == '"') {
            c = gwr_calloc(1, sizeof *c);
            if (!c) r->oom = 1;
            if (!c || !(c->name = str(r))) {
                node_free(c);
                return -1;
            }
        } else if (!(c = object(r, depth + 1))) {
            return -1;
        }
        if (node_add(p, c)) {
            node_free(c);
            r->oom = 1;
            return -1;
        }
    } while (eat(r, ','));
    return eat(r, ']') ? 0 : -1;
}

/* {"name":..,"rule":..,"from":[..],"more":N}; rule and from required. */
static prov_node *object(rd *r, int depth) {
    if (depth > GWR_PROV_MAX_DEPTH || !eat(r, '{')) return NULL;
    prov_node *p = gwr_calloc(1, sizeof *p);
    int has_from = 0;
    if (!p) return r->oom = 1, NULL;
    if (!eat(r, '}')) {
        do {
            char *k = str(r);
            int ok = k && eat(r, ':');
            if (ok && !strcmp(k, "name") && !p->name) {
                ok = (p->name = str(r)) != NULL;
            } else if (ok && !strcmp(k, "rule") && !p->rule) {
                ok = (p->rule = str(r)) != NULL;
            } else if (ok && !strcmp(k, "from") && !has_from) {
                ok = !from_list(r, p, depth);
                has_from = 1;
            } else if (ok && !strcmp(k, "more")) {
                ws(r);
                char *e = NULL;
                long long v = r->p < r->end && *r->p >= '0' && *r->p <= '9' ? strtoll(r->p, &e, 10) : -1;
                ok = v >= 0 && e <= r->end;
                if (ok) p->more = v, r->p = e;
            } else if (ok) {
                ok = !skip(r, depth + 1);
            }
            gwr_free(k);
            if (!ok) goto bad;
        } while (eat(r, ','));
        if (!eat(r, '}')) goto bad;
    }
    if (p->rule && has_from) return p;
bad:
    node_free(p);
    return NULL;
}

/* The tree of json (len bytes); NULL when it is not a provenance object
 * or, with *oom set (oom may be NULL), when memory ran out. */
static prov_node *parse(const char *json, size_t len, int *oom) {
    rd r = {json, json + len, 0};
    prov_node *p = object(&r, 0);
    ws(&r);
    if (p && r.p != r.end) node_free(p), p = NULL;
    if (oom) *oom = r.oom;
    return p;
}

/* Calls name(ctx, s) for every layer name under p, depth first in text
 * order: a nested object's own name before its items. */
static int names_of(const prov_node *p, int nested, int (*name)(void *ctx, const char *s), void *ctx) {
    if (nested && p->name && name(ctx, p->name)) return -1;
    for (int64_t i = 0; i < p->n; i++)
        if (names_of(p->from[i], 1, name, ctx)) return -1;
    return 0;
}

int gwr_ir_provenance_read(const char *json, size_t len, char **rule, int (*name)(void *ctx, const char *s),
                           void *ctx) {
    int oom = 0;
    *rule = NULL;
    prov_node *p = parse(json, len, &oom);
    if (!p) return oom ? -2 : -1;
    int rc = names_of(p, 0, name, ctx) ? -2 : 0;
    if (!rc && !(*rule = gwr_strdup(p->rule))) rc = -2;
    node_free(p);
    return rc;
}

/* ---- writing ---- */

/* Writes object p listing at most *budget leaves (taken from it); what it
 * leaves out goes to the "more" of the object that stops listing. */
static void write_node(gwr_buf *b, const prov_node *p, int64_t *budget, int depth) {
    gwr_buf_str(b, "{");
    if (p->name) {
        gwr_buf_str(b, "\"name\":");
        gwr_buf_json_str(b, p->name, strlen(p->name));
        gwr_buf_str(b, ",");
    }
    gwr_buf_str(b, "\"rule\":");
    gwr_buf_json_str(b, p->rule, strlen(p->rule));
    gwr_buf_str(b, ",\"from\":[");
    int64_t more = p->more, listed = 0;
    for (int64_t i = 0; i < p->n; i++) {
        const prov_node *c = p->from[i];
        if (*budget <= 0 || (c->rule && depth + 1 >= GWR_PROV_MAX_DEPTH)) {
            more += leaves(c);
            continue;
        }
        if (listed++) gwr_buf_str(b, ",");
        if (c->rule) {
            write_node(b, c, budget, depth + 1);
        } else {
            gwr_buf_json_str(b, c->name, strlen(c->name));
            (*budget)--;
        }
    }
    gwr_buf_str(b, "]");
    if (more) {
        char m[32];
        snprintf(m, sizeof m, ",\"more\":%lld", (long long)more);
        gwr_buf_str(b, m);
    }
    gwr_buf_str(b, "}");
}

/* The common case, no layer in from made by a rewrite: written directly. */
static char *flat_json(const char *rule, gwr_layer *const *from, int64_t n) {
    gwr_buf b = {0};
    gwr_grow((void **)&b.s, 1, &b.cap, 64 + 16 * n);
    gwr_buf_str(&b, "{\"rule\":");
    gwr_buf_json_str(&b, rule, strlen(rule));
    gwr_buf_str(&b, ",\"from\":[");
    int64_t k = n < GWR_PROV_MAX_LEAVES ? n : GWR_PROV_MAX_LEAVES;
    for (int64_t i = 0; i < k; i++) {
        if (i) gwr_buf_str(&b, ",");
        gwr_buf_json_str(&b, from[i]->name, strlen(from[i]->name));
    }
    gwr_buf_str(&b, "]");
    if (n > k) {
        char m[32];
        snprintf(m, sizeof m, ",\"more\":%lld", (long long)(n - k));
        gwr_buf_str(&b, m);
    }
    gwr_buf_str(&b, "}");
    if (b.failed) gwr_free(b.s), b.s = NULL;
    return b.s;
}

char *gwr_ir_provenance_json(const char *rule, gwr_layer *const *from, int64_t n) {
    if (!rule) rule = "?";
    int nested = 0;
    for (int64_t i = 0; i < n && !nested; i++) nested = gwr_layer_provenance(from[i]) != NULL;
    if (!nested) return flat_json(rule, from, n);
    prov_node top = {.rule = (char *)rule};
    char *out = NULL;
    int failed = 0;
    for (int64_t i = 0; i < n && !failed; i++) {
        const gwr_layer *l = from[i];
        size_t len = 0;
        const char *j = gwr_layer_prop(l, GWR_PROVENANCE_PROP, &len);
        /* A layer whose provenance does not read is taken as an original. */
        prov_node *c = j ? parse(j, len, NULL) : NULL;
        if (!c) c = gwr_calloc(1, sizeof *c);
        if (!c) {
            failed = 1;
            break;
        }
        gwr_free(c->name);
        if (!(c->name = gwr_strdup(l->name)) || node_add(&top, c)) {
            node_free(c);
            failed = 1;
        }
    }
    if (!failed) {
        gwr_buf b = {0};
        int64_t budget = GWR_PROV_MAX_LEAVES;
        write_node(&b, &top, &budget, 0);
        if (b.failed) gwr_free(b.s);
        else out = b.s;
    }
    for (int64_t i = 0; i < top.n; i++) node_free(top.from[i]);
    gwr_free(top.from);
    return out;
}

/* ---- the text tree ---- */

static void text_node(gwr_buf *b, const prov_node *p, int indent) {
    char pad[2 * GWR_PROV_MAX_DEPTH + 8];
    int w = indent < GWR_PROV_MAX_DEPTH + 2 ? 2 * indent : 2 * (GWR_PROV_MAX_DEPTH + 2);
    memset(pad, ' ', (size_t)w);
    pad[w] = 0;
    for (int64_t i = 0; i < p->n; i++) {
        const prov_node *c = p->from[i];
        gwr_buf_str(b, pad);
        gwr_buf_str(b, c->name ? c->name : "?");
        if (!c->rule) {
            gwr_buf_str(b, " (original)\n");
            continue;
        }
        gwr_buf_str(b, ": made by ");
        gwr_buf_str(b, c->rule);
        gwr_buf_str(b, c->n ? " from\n" : " from nothing it replaced\n");
        text_node(b, c, indent + 1);
    }
    if (p->more) {
        char m[64];
        snprintf(m, sizeof m, "... and %lld more original layers\n", (long long)p->more);
        gwr_buf_str(b, pad);
        gwr_buf_str(b, m);
    }
}

char *gwr_provenance_text(const char *name, const char *json) {
    if (!json) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_provenance_text: NULL provenance");
        return NULL;
    }
    prov_node *p = parse(json, strlen(json), NULL);
    if (!p) {
        gwr_set_last_error(GWR_ERR_PARSE, "provenance of '%.200s' is not valid provenance JSON",
                           name ? name : "?");
        return NULL;
    }
    gwr_buf b = {0};
    gwr_buf_str(&b, name ? name : "?");
    gwr_buf_str(&b, ": made by ");
    gwr_buf_str(&b, p->rule);
    gwr_buf_str(&b, p->n ? " from\n" : " from nothing it replaced\n");
    text_node(&b, p, 1);
    node_free(p);
    if (b.failed) {
        gwr_free(b.s);
        gwr_set_last_error(GWR_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return b.s;
}
