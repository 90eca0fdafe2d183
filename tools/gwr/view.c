/* view.c - the data of `gwr view`'s page and the page itself (view.h):
 * models (tensors, layers in topological order, attributes as text, FLOPs
 * and parameters, groups with structural signatures, bodies), the diff of
 * two models, a rewrite trace and a profile, as compact JSON inside the
 * embedded template. */
#include "view.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

#define MAX_CHILDREN 200 /* direct children (layers + groups) of a group or of the top level */

/* ---- a growing byte buffer ---------------------------------------------- */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static int sb_need(sbuf *b, size_t k) {
    if (b->oom) return -1;
    if (b->n + k <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < b->n + k) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return b->oom = 1, -1;
    b->p = p, b->cap = cap;
    return 0;
}

static void sb_put(sbuf *b, const char *s, size_t k) {
    if (sb_need(b, k)) return;
    memcpy(b->p + b->n, s, k);
    b->n += k;
}

static void sb_s(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }
static void sb_c(sbuf *b, char c) { sb_put(b, &c, 1); }

static void sb_i(sbuf *b, int64_t v) {
    char t[24];
    int k = snprintf(t, sizeof t, "%" PRId64, v);
    sb_put(b, t, (size_t)k);
}

static void sb_f(sbuf *b, const char *fmt, ...) GWR_PRINTF(2, 3);
static void sb_f(sbuf *b, const char *fmt, ...) {
    char t[256];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t, sizeof t, fmt, ap);
    va_end(ap);
    if (k > 0) sb_put(b, t, (size_t)k < sizeof t ? (size_t)k : sizeof t - 1);
}

/* A JSON string, quotes included, safe inside <script>: every '<' is
 * written \u003c, so that no "</script" or "<!--" can end the element;
 * invalid UTF-8 becomes U+FFFD. (gwr_json_str writes to a FILE and leaves
 * '<' alone.) */
static void sb_str(sbuf *b, const char *s, size_t len) {
    static const char hex[] = "0123456789abcdef";
    if (sb_need(b, len + 2)) return;
    b->p[b->n++] = '"';
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && (unsigned char)s[j] >= 0x20 && (unsigned char)s[j] < 0x7f && s[j] != '"' && s[j] != '\\' &&
               s[j] != '<')
            j++;
        sb_put(b, s + i, j - i);
        if (j == len) break;
        unsigned char c = (unsigned char)s[j];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            sb_put(b, e, 2), i = j + 1;
        } else if (c < 0x20 || c == 0x7f || c == '<') {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            sb_put(b, e, 6), i = j + 1;
        } else {
            size_t k = gwr_utf8_len(s + j, len - j);
            if (k) sb_put(b, s + j, k), i = j + k;
            else sb_s(b, "\\ufffd"), i = j + 1;
        }
    }
    sb_c(b, '"');
}

static void sb_cstr(sbuf *b, const char *s) {
    if (s) sb_str(b, s, strlen(s));
    else sb_s(b, "null");
}

/* ---- the trace ----------------------------------------------------------- */

typedef struct view_event {
    char *label, *root, *op;
    char **added, **removed;
    int64_t nadded, nremoved, replaced, modified;
} view_event;

struct view_trace {
    gwr_arena arena;
    view_event *v;
    int64_t n, cap;
    int oom;
};

view_trace *view_trace_new(void) {
    view_trace *t = calloc(1, sizeof *t);
    if (t) gwr_arena_init(&t->arena);
    return t;
}

void view_trace_free(view_trace *t) {
    if (!t) return;
    gwr_arena_free(&t->arena);
    gwr_free(t->v);
    free(t);
}

static char *tr_dup(view_trace *t, const char *s) {
    char *d = gwr_arena_strdup(&t->arena, s ? s : "");
    if (!d) t->oom = 1;
    return d;
}

static view_event *tr_add(view_trace *t) {
    if (gwr_grow((void **)&t->v, sizeof *t->v, &t->cap, t->n + 1)) return t->oom = 1, NULL;
    view_event *e = &t->v[t->n++];
    memset(e, 0, sizeof *e);
    return e;
}

static char **tr_names(view_trace *t, int64_t n) {
    char **v = gwr_arena_alloc(&t->arena, (size_t)(n ? n : 1) * sizeof *v);
    if (!v) t->oom = 1;
    return v;
}

static void on_applied(void *ctx, const gwr_rewrite_event *ev) {
    view_trace *t = ctx;
    view_event *e = tr_add(t);
    if (!e) return;
    e->label = tr_dup(t, ev->label);
    e->root = tr_dup(t, gwr_layer_name(ev->root));
    e->op = tr_dup(t, gwr_layer_op(ev->root));
    e->nadded = ev->nadded, e->nremoved = ev->nremoved;
    e->replaced = ev->nreplaced, e->modified = ev->nmodified;
    if (!(e->added = tr_names(t, ev->nadded)) || !(e->removed = tr_names(t, ev->nremoved))) {
        e->nadded = e->nremoved = 0;
        return;
    }
    for (int64_t i = 0; i < ev->nadded; i++) e->added[i] = tr_dup(t, gwr_layer_name(ev->added[i]));
    for (int64_t i = 0; i < ev->nremoved; i++) e->removed[i] = tr_dup(t, gwr_layer_name(ev->removed[i]));
}

gwr_rewrite_listener view_trace_listener(view_trace *t) {
    gwr_rewrite_listener ls = {.pattern_applied = on_applied, .ctx = t};
    return ls;
}

/* The whole of path, NUL-terminated, in *out (malloc'd). CLI_OK, or a
 * code after one line naming path. */
static int read_all(const char *path, char **out, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        cli_error(path, strerror(errno));
        return CLI_USAGE;
    }
    char *p = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 65536 + 1 > cap) {
            cap = cap ? cap * 2 : 65536 * 2;
            char *q = realloc(p, cap);
            if (!q) {
                free(p), fclose(f);
                cli_error(path, "out of memory");
                return CLI_FAIL;
            }
            p = q;
        }
        size_t k = fread(p + n, 1, cap - n - 1, f);
        n += k;
        if (k == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(p);
        cli_error(path, "cannot read the file (is it a directory?)");
        return CLI_USAGE;
    }
    p[n] = 0;
    *out = p, *len = n;
    return CLI_OK;
}

static int names_from(view_trace *t, const cli_json *a, char ***out, int64_t *n) {
    if (!a) return *n = 0, *out = tr_names(t, 0), 0;
    if (a->type != CJ_ARR) return -1;
    if (!(*out = tr_names(t, a->n))) return 0;
    for (int64_t i = 0; i < a->n; i++) {
        if (a->items[i].type != CJ_STR) return -1;
        (*out)[i] = tr_dup(t, a->items[i].str);
    }
    *n = a->n;
    return 0;
}

int view_trace_read(view_trace *t, const char *path) {
    char *text;
    size_t len;
    int rc = read_all(path, &text, &len);
    if (rc) return rc;
    int64_t line = 0;
    char msg[400];
    rc = CLI_OK;
    for (char *p = text; p < text + len && !rc;) {
        char *end = memchr(p, '\n', (size_t)(text + len - p));
        if (!end) end = text + len;
        line++;
        char *q = p;
        while (q < end && (*q == ' ' || *q == '\t' || *q == '\r')) q++;
        /* gwr rewrite's own last line, printed after the trace on stdout. */
        int wrote = end - q > 6 && !memcmp(q, "wrote ", 6);
        if (q < end && !wrote) {
            char err[200];
            cli_json_doc *d = cli_json_parse(p, (size_t)(end - p), err, sizeof err);
            const cli_json *o = cli_json_root(d);
            const char *ev = cli_json_str(o, "event");
            if (!d) {
                snprintf(msg, sizeof msg, "line %" PRId64 " is not JSON (%s): not a trace of 'gwr rewrite --trace-json'", line, err);
                rc = CLI_USAGE;
            } else if (o->type != CJ_OBJ) {
                snprintf(msg, sizeof msg, "line %" PRId64 " is not a JSON object: not a trace of 'gwr rewrite --trace-json'", line);
                rc = CLI_USAGE;
            } else if (!ev || !strcmp(ev, "rewrite")) {
                const char *label = cli_json_str(o, "label"), *root = cli_json_str(o, "root");
                view_event *e = tr_add(t);
                if (!e) {
                    rc = CLI_FAIL;
                } else if (!label || !root) {
                    snprintf(msg, sizeof msg, "line %" PRId64 ": a rewrite needs \"label\" and \"root\" strings", line);
                    rc = CLI_USAGE;
                } else {
                    e->label = tr_dup(t, label);
                    e->root = tr_dup(t, root);
                    e->op = tr_dup(t, cli_json_str(o, "op"));
                    e->replaced = (int64_t)cli_json_num(o, "replaced", 0);
                    e->modified = (int64_t)cli_json_num(o, "modified", 0);
                    if (names_from(t, cli_json_get(o, "added"), &e->added, &e->nadded) ||
                        names_from(t, cli_json_get(o, "removed"), &e->removed, &e->nremoved)) {
                        snprintf(msg, sizeof msg, "line %" PRId64 ": \"added\" and \"removed\" must be arrays of layer names", line);
                        rc = CLI_USAGE;
                    }
                }
            }
            cli_json_free(d);
        }
        p = end + 1;
    }
    free(text);
    if (!rc && t->oom) rc = CLI_FAIL;
    if (rc == CLI_FAIL) cli_error(path, "out of memory");
    else if (rc) cli_error(path, msg);
    return rc;
}

static int known_name(gwr_network *const *models, int nmodels, const char *name) {
    for (int m = 0; m < nmodels; m++) {
        gwr_layer *l = gwr_network_find_layer(models[m], name);
        if (l && !gwr_layer_is_removed(l)) return 1;
    }
    return 0;
}

int view_trace_check(const view_trace *t, gwr_network *const *models, int nmodels, const char *path) {
    if (!t->n) return CLI_OK;
    /* Layers a rewrite made and a later one removed are in neither model:
     * the trace is refused only when it names no layer of them at all. */
    for (int64_t i = 0; i < t->n; i++) {
        const view_event *e = &t->v[i];
        if (known_name(models, nmodels, e->root)) return CLI_OK;
        for (int64_t k = 0; k < e->nadded; k++)
            if (known_name(models, nmodels, e->added[k])) return CLI_OK;
        for (int64_t k = 0; k < e->nremoved; k++)
            if (known_name(models, nmodels, e->removed[k])) return CLI_OK;
    }
    char msg[300];
    snprintf(msg, sizeof msg, "the trace names no layer of the model%s (first rewrite at '%s'): a trace of another model?",
             nmodels > 1 ? "s" : "", t->v[0].root);
    cli_error(path, msg);
    return CLI_USAGE;
}

static void write_trace(sbuf *b, const view_trace *t) {
    sb_c(b, '[');
    for (int64_t i = 0; i < t->n; i++) {
        const view_event *e = &t->v[i];
        sb_s(b, i ? ",\n{\"seq\":" : "\n{\"seq\":");
        sb_i(b, i + 1);
        sb_s(b, ",\"label\":");
        sb_cstr(b, e->label);
        sb_s(b, ",\"root\":");
        sb_cstr(b, e->root);
        sb_s(b, ",\"op\":");
        sb_cstr(b, e->op);
        sb_s(b, ",\"added\":[");
        for (int64_t k = 0; k < e->nadded; k++) {
            if (k) sb_c(b, ',');
            sb_cstr(b, e->added[k]);
        }
        sb_s(b, "],\"removed\":[");
        for (int64_t k = 0; k < e->nremoved; k++) {
            if (k) sb_c(b, ',');
            sb_cstr(b, e->removed[k]);
        }
        sb_s(b, "],\"replaced\":");
        sb_i(b, e->replaced);
        sb_s(b, ",\"modified\":");
        sb_i(b, e->modified);
        sb_c(b, '}');
    }
    sb_c(b, ']');
}

/* ---- profiles ------------------------------------------------------------- */

typedef struct prof_layer {
    const char *name;
    double us;
    int64_t calls;
} prof_layer;

static void num_field(sbuf *b, const char *key, const cli_json *args, const char *from, int always) {
    const cli_json *v = cli_json_get(args, from);
    if (!always && (!v || v->type != CJ_NUM)) return;
    sb_s(b, ",\"");
    sb_s(b, key);
    sb_s(b, "\":");
    if (v && v->type == CJ_NUM) sb_f(b, "%.15g", v->num);
    else sb_s(b, "-1");
}

char *view_profile_read(const char *path, int *rc) {
    char *text;
    size_t len;
    if ((*rc = read_all(path, &text, &len))) return NULL;
    char err[200];
    cli_json_doc *d = cli_json_parse(text, len, err, sizeof err);
    free(text);
    if (!d) {
        char msg[300];
        snprintf(msg, sizeof msg, "not JSON (%s): not a Chrome trace of 'gwr run --profile' or 'gwr optimize --profile'", err);
        cli_error(path, msg);
        *rc = CLI_USAGE;
        return NULL;
    }
    const cli_json *root = cli_json_root(d);
    const cli_json *ev = root->type == CJ_ARR ? root : cli_json_get(root, "traceEvents");
    if (!ev || ev->type != CJ_ARR) {
        cli_error(path, "not a Chrome trace (no \"traceEvents\" array): give a file of 'gwr run --profile' or 'gwr optimize --profile'");
        cli_json_free(d);
        *rc = CLI_USAGE;
        return NULL;
    }
    gwr_strmap seen = {0};
    prof_layer *layers = NULL;
    int64_t nlayers = 0, cap = 0, npasses = 0;
    sbuf passes = {0};
    int oom = 0;
    for (int64_t i = 0; i < ev->n && !oom; i++) {
        const cli_json *e = &ev->items[i];
        const char *ph = cli_json_str(e, "ph"), *cat = cli_json_str(e, "cat"), *name = cli_json_str(e, "name");
        if (!ph || strcmp(ph, "X") || !cat || !name) continue;
        double dur = cli_json_num(e, "dur", 0);
        if (!strcmp(cat, "layer")) {
            prof_layer *pl = gwr_strmap_get(&seen, name);
            if (!pl) {
                if (gwr_grow((void **)&layers, sizeof *layers, &cap, nlayers + 1)) {
                    oom = 1;
                    break;
                }
                layers[nlayers] = (prof_layer){name, 0, 0};
                /* The map holds index + 1: the array moves as it grows. */
                if (gwr_strmap_put(&seen, name, (void *)(intptr_t)(nlayers + 1))) oom = 1;
                pl = &layers[nlayers++];
            } else {
                pl = &layers[(intptr_t)pl - 1];
            }
            pl->us += dur;
            pl->calls++;
        } else if (!strcmp(cat, "pass")) {
            const cli_json *args = cli_json_get(e, "args");
            sb_s(&passes, npasses++ ? ",\n{\"name\":" : "\n{\"name\":");
            sb_cstr(&passes, name);
            num_field(&passes, "round", args, "round", 1);
            sb_f(&passes, ",\"us\":%.3f", dur);
            num_field(&passes, "rewrites", args, "rewrites", 1);
            num_field(&passes, "layers_before", args, "layers_before", 1);
            num_field(&passes, "layers_after", args, "layers_after", 1);
            num_field(&passes, "matches", args, "matches", 0);
            num_field(&passes, "attempts", args, "attempts", 0);
            num_field(&passes, "layers_removed", args, "layers_removed", 0);
            num_field(&passes, "layers_added", args, "layers_added", 0);
            sb_c(&passes, '}');
        }
    }
    sbuf b = {0};
    sb_s(&b, npasses ? "{\"kind\":\"optimize\",\"layers\":{" : "{\"kind\":\"run\",\"layers\":{");
    for (int64_t i = 0; i < nlayers; i++) {
        sb_s(&b, i ? ",\n" : "\n");
        sb_cstr(&b, layers[i].name);
        sb_f(&b, ":{\"us\":%.3f,\"calls\":%" PRId64 "}", layers[i].us, layers[i].calls);
    }
    sb_s(&b, "},\"passes\":[");
    if (passes.n) sb_put(&b, passes.p, passes.n);
    sb_s(&b, "]}");
    sb_c(&b, 0);
    oom |= b.oom | passes.oom;
    free(passes.p);
    gwr_free(layers);
    gwr_strmap_free(&seen);
    cli_json_free(d);
    if (oom) {
        free(b.p);
        cli_error(path, "out of memory");
        *rc = CLI_FAIL;
        return NULL;
    }
    *rc = CLI_OK;
    return b.p;
}

/* ---- one model: order, groups, diff --------------------------------------- */

typedef struct vgroup {
    const char *name;
    int64_t parent, first, nlayers, depth, repeat;
    uint64_t sig;
} vgroup;

typedef struct minfo {
    gwr_network *net;
    gwr_layer **ord; /* live layers, topological */
    int64_t n;
    int64_t *lidx;   /* network index -> position in ord, -1 when removed */
    int64_t *lgroup; /* innermost group of each position, -1 none */
    int64_t *okey;   /* where the layer sits among its siblings (an adopted constant: its reader's position) */
    vgroup *g;
    int64_t ng, gcap;
    gwr_arena arena;
    /* With two models: the diff of each position. */
    const char **diff, **why;
    int64_t *match;
    int oom;
} minfo;

static void minfo_free(minfo *m) {
    free(m->ord);
    free(m->lidx);
    free(m->lgroup);
    free(m->okey);
    gwr_free(m->g);
    free(m->diff);
    free(m->why);
    free(m->match);
    gwr_arena_free(&m->arena);
}

static int is_const(const gwr_layer *l) { return gwr_layer_type_of(l) == GWR_LAYER_CONSTANT; }

/* The value a constant layer holds; NULL for another layer (or none). */
static const gwr_weights *const_value(const gwr_layer *l) {
    const gwr_weights *w;
    return is_const(l) && !gwr_layer_get_tensor(l, "value", &w) ? w : NULL;
}

/* The position in m's order of the layer producing t, -1 for a graph
 * input or a tensor of an enclosing network. */
static int64_t producer_pos(const minfo *m, const gwr_tensor *t) {
    gwr_layer *p = t ? gwr_tensor_parent(t) : NULL;
    if (!p || gwr_layer_network(p) != m->net) return -1;
    return m->lidx[gwr_layer_index(p)];
}

static int minfo_init(minfo *m, gwr_network *net) {
    memset(m, 0, sizeof *m);
    gwr_arena_init(&m->arena);
    m->net = net;
    int64_t nall = gwr_network_num_layers(net);
    m->ord = malloc((size_t)(nall ? nall : 1) * sizeof *m->ord);
    m->lidx = malloc((size_t)(nall ? nall : 1) * sizeof *m->lidx);
    if (!m->ord || !m->lidx) return -1;
    if (gwr_network_topo_order(net, m->ord))
        for (int64_t i = 0; i < nall; i++) m->ord[i] = gwr_network_layer(net, i);
    for (int64_t i = 0; i < nall; i++) m->lidx[i] = -1;
    for (int64_t i = 0; i < nall; i++)
        if (!gwr_layer_is_removed(m->ord[i])) {
            m->lidx[gwr_layer_index(m->ord[i])] = m->n;
            m->ord[m->n++] = m->ord[i];
        }
    size_t n1 = (size_t)(m->n ? m->n : 1);
    m->lgroup = malloc(n1 * sizeof *m->lgroup);
    m->okey = malloc(n1 * sizeof *m->okey);
    if (!m->lgroup || !m->okey) return -1;
    for (int64_t i = 0; i < m->n; i++) m->lgroup[i] = -1, m->okey[i] = i;
    return 0;
}

static int64_t group_new(minfo *m, const char *name, size_t len, int64_t parent, int64_t first) {
    if (gwr_grow((void **)&m->g, sizeof *m->g, &m->gcap, m->ng + 1)) return m->oom = 1, -1;
    char *s = gwr_arena_alloc(&m->arena, len + 1);
    if (!s) return m->oom = 1, -1;
    memcpy(s, name, len);
    s[len] = 0;
    m->g[m->ng] = (vgroup){s, parent, first, 0, -1, 1, 0};
    return m->ng++;
}

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL ^ (h >> 29);
}

static uint64_t op_hash(const gwr_layer *l) {
    gwr_op_id id = gwr_layer_op_id(l);
    if (id != GWR_OP_CUSTOM) return mix(0x51, (uint64_t)id);
    return mix(gwr_hash_str(gwr_layer_op(l)), gwr_hash_str(gwr_layer_domain(l)));
}

static uint64_t dims_hash(uint64_t h, int rank, const int64_t *dims) {
    h = mix(h, (uint64_t)rank);
    for (int i = 0; i < rank && dims; i++) h = mix(h, (uint64_t)dims[i]);
    return h;
}

/* Attribute names, types and values (tensors by type and shape, graphs by
 * size): what makes two layers of one op the same layer but for weights. */
static uint64_t attr_hash(const gwr_layer *l) {
    uint64_t h = 0x7a;
    for (int a = 0; a < gwr_layer_num_attrs(l); a++) {
        const char *name = gwr_layer_attr_name(l, a);
        gwr_attr_type t = gwr_layer_attr_type(l, a);
        h = mix(mix(h, gwr_hash_str(name)), (uint64_t)t);
        int64_t iv, n;
        float fv;
        const int64_t *is;
        const float *fs;
        const char *s;
        const gwr_weights *w;
        gwr_network *g;
        if (t == GWR_ATTR_INT && !gwr_layer_get_int(l, name, &iv)) h = mix(h, (uint64_t)iv);
        else if (t == GWR_ATTR_FLOAT && !gwr_layer_get_float(l, name, &fv)) h = mix(h, (uint64_t)(int64_t)(fv * 1e6f));
        else if (t == GWR_ATTR_INTS && !gwr_layer_get_ints(l, name, &is, &n)) h = dims_hash(h, (int)n, is);
        else if (t == GWR_ATTR_FLOATS && !gwr_layer_get_floats(l, name, &fs, &n)) h = mix(h, (uint64_t)n);
        else if (t == GWR_ATTR_STRING && !gwr_layer_get_string(l, name, &s, NULL)) h = mix(h, gwr_hash_str(s));
        else if (t == GWR_ATTR_TENSOR && !gwr_layer_get_tensor(l, name, &w)) h = dims_hash(mix(h, (uint64_t)w->dtype), w->rank, w->dims);
        else if (t == GWR_ATTR_GRAPH && !gwr_layer_get_graph(l, name, &g)) h = mix(h, (uint64_t)gwr_network_num_live_layers(g));
    }
    return h;
}

/* Splits a layer name on '/' and '.' into tokens (start, length); a token
 * of digits stays with the one before it ("layers.3"). Empty tokens are
 * dropped. Returns the count (at most max). */
static int name_tokens(const char *s, int64_t (*tok)[2], int max) {
    int n = 0;
    for (int64_t i = 0; s[i];) {
        int64_t j = i;
        while (s[j] && s[j] != '/' && s[j] != '.') j++;
        if (j > i) {
            int digits = 1;
            for (int64_t k = i; k < j; k++)
                if (s[k] < '0' || s[k] > '9') digits = 0;
            if (digits && n && tok[n - 1][0] + tok[n - 1][1] + 1 == i) tok[n - 1][1] = j - tok[n - 1][0];
            else if (n < max) tok[n][0] = i, tok[n][1] = j - i, n++;
        }
        i = s[j] ? j + 1 : j;
    }
    return n;
}

/* Groups from the names' hierarchy. Returns 1 when the names give one
 * (half the non-constant layers or more have a path, and the paths split
 * somewhere), else 0 (no groups kept); -1 out of memory. */
static int groups_by_name(minfo *m) {
    gwr_strmap keys = {0};
    char key[4096];
    int64_t named = 0, plain = 0;
    for (int64_t i = 0; i < m->n && !m->oom; i++) {
        const char *name = gwr_layer_name(m->ord[i]);
        int64_t tok[32][2];
        int nt = name_tokens(name, tok, 32);
        if (!is_const(m->ord[i])) plain++, named += nt >= 2;
        size_t kl = 0;
        int64_t parent = -1;
        for (int k = 0; k + 1 < nt; k++) {
            if (kl + (size_t)tok[k][1] + 2 > sizeof key) break;
            if (kl) key[kl++] = '/';
            memcpy(key + kl, name + tok[k][0], (size_t)tok[k][1]);
            kl += (size_t)tok[k][1];
            key[kl] = 0;
            intptr_t id = (intptr_t)gwr_strmap_get(&keys, key);
            if (!id) {
                int64_t g = group_new(m, name + tok[k][0], (size_t)tok[k][1], parent, i);
                char *kd = gwr_arena_strdup(&m->arena, key);
                if (g < 0 || !kd || gwr_strmap_put(&keys, kd, (void *)(intptr_t)(g + 1))) {
                    m->oom = 1;
                    break;
                }
                id = (intptr_t)(g + 1);
            }
            parent = (int64_t)id - 1;
        }
        m->lgroup[i] = parent;
    }
    gwr_strmap_free(&keys);
    if (m->oom) return -1;
    /* A hierarchy splits somewhere: some level holds two groups or more
     * (one prefix on every name, "p2o.Conv.3", is no hierarchy). */
    int splits = 0;
    int64_t *nsub = calloc((size_t)m->ng + 1, sizeof *nsub);
    if (!nsub) return m->oom = 1, -1;
    for (int64_t g = 0; g < m->ng; g++)
        if (++nsub[m->g[g].parent + 1] >= 2) splits = 1;
    free(nsub);
    if (splits && named * 2 >= plain && named) return 1;
    m->ng = 0;
    for (int64_t i = 0; i < m->n; i++) m->lgroup[i] = -1;
    return 0;
}

/* Groups from repeated structure: the period of the op sequence of the
 * non-constant layers in topological order, then every run of two or
 * more equal windows of that length becomes blocks "block.K". */
static void groups_by_structure(minfo *m) {
    int64_t k = 0;
    int64_t *s = malloc((size_t)(m->n ? m->n : 1) * sizeof *s);
    uint64_t *h = malloc((size_t)(m->n ? m->n : 1) * sizeof *h);
    uint64_t *pre = malloc((size_t)(m->n + 1) * sizeof *pre);
    if (!s || !h || !pre) {
        m->oom = 1;
        goto out;
    }
    for (int64_t i = 0; i < m->n; i++)
        if (!is_const(m->ord[i])) s[k] = i, h[k] = mix(op_hash(m->ord[i]), attr_hash(m->ord[i])), k++;
    const uint64_t B = 0x100000001b3ULL;
    pre[0] = 0;
    for (int64_t j = 0; j < k; j++) pre[j + 1] = pre[j] * B + h[j];
    uint64_t pw = 1;
    int64_t p = 0;
#define WIN(j) (pre[(j) + p] - pre[j] * pw)
    if (k <= 4096) {
        /* Few layers: the period whose runs of equal windows cover the
         * most layers (half of them at least), the shortest on a tie. */
        int64_t best = 0, bestp = 0;
        for (p = 3, pw = B * B * B; p <= k / 2; p++, pw *= B) {
            int64_t cover = 0;
            for (int64_t j = 0; j + 2 * p <= k;) {
                if (WIN(j) != WIN(j + p)) {
                    j++;
                    continue;
                }
                uint64_t w = WIN(j);
                while (j + p <= k && WIN(j) == w) cover += p, j += p;
            }
            if (cover > best) best = cover, bestp = p;
        }
        p = best * 2 >= k ? bestp : 0;
    } else {
        /* Many: the shortest period at which 7 in 8 layers or more repeat
         * the op of the layer p before (prologue and epilogue aside). */
        for (int64_t c = 3; c <= k / 2 && c <= 4096 && !p; c++) {
            int64_t miss = 0, limit = (k - c) / 8;
            int64_t j = 0;
            for (; j < k - c; j++)
                if (h[j] != h[j + c] && ++miss > limit) break;
            if (j == k - c) p = c;
        }
    }
    if (!p) goto out;
    pw = 1;
    for (int64_t j = 0; j < p; j++) pw *= B;
    int64_t nblock = 0;
    for (int64_t j = 0; j + 2 * p <= k;) {
        if (WIN(j) != WIN(j + p)) {
            j++;
            continue;
        }
        uint64_t w = WIN(j);
        while (j + p <= k && WIN(j) == w) {
            char name[32];
            int len = snprintf(name, sizeof name, "block.%" PRId64, nblock++);
            int64_t g = group_new(m, name, (size_t)len, -1, s[j]);
            if (g < 0) goto out;
            for (int64_t q = j; q < j + p; q++) m->lgroup[s[q]] = g;
            j += p;
        }
    }
#undef WIN
out:
    free(s);
    free(h);
    free(pre);
}

/* A constant nobody grouped goes with its first reader. */
static void adopt_constants(minfo *m) {
    char *free_c = calloc((size_t)(m->n ? m->n : 1), 1);
    if (!free_c) {
        m->oom = 1;
        return;
    }
    for (int64_t i = 0; i < m->n; i++) free_c[i] = is_const(m->ord[i]) && m->lgroup[i] < 0;
    for (int64_t i = 0; i < m->n; i++) {
        if (is_const(m->ord[i])) continue;
        for (int k = 0; k < gwr_layer_num_inputs(m->ord[i]); k++) {
            int64_t j = producer_pos(m, gwr_layer_input(m->ord[i], k));
            if (j >= 0 && free_c[j]) free_c[j] = 0, m->lgroup[j] = m->lgroup[i], m->okey[j] = i;
        }
    }
    free(free_c);
}

static const char *child_name(const minfo *m, int64_t c) {
    return c >= 0 ? gwr_layer_name(m->ord[c]) : m->g[-2 - c].name;
}

/* "block.0-199" from "block.0" and "block.199"; else "first..last". */
static int64_t range_group(minfo *m, int64_t parent, const int64_t *c, int64_t n, int64_t first) {
    const char *a = child_name(m, c[0]), *b = child_name(m, c[n - 1]);
    size_t la = strlen(a), lb = strlen(b), da = la, db = lb;
    while (da && a[da - 1] >= '0' && a[da - 1] <= '9') da--;
    while (db && b[db - 1] >= '0' && b[db - 1] <= '9') db--;
    char name[512];
    if (da < la && db < lb && da == db && !memcmp(a, b, da))
        snprintf(name, sizeof name, "%s-%s", a, b + db);
    else
        snprintf(name, sizeof name, "%.240s..%.240s", a, b);
    return group_new(m, name, strlen(name), parent, first);
}

/* Keeps parent's children c[0..n) (layers >= 0, groups -2 - g) to at most
 * MAX_CHILDREN: runs of them go into range groups, nested as needed. */
static void bound(minfo *m, int64_t parent, int64_t *c, int64_t n) {
    if (n <= MAX_CHILDREN || m->oom) return;
    int64_t size = MAX_CHILDREN;
    while ((n + size - 1) / size > MAX_CHILDREN) size *= MAX_CHILDREN;
    for (int64_t a = 0; a < n; a += size) {
        int64_t len = n - a < size ? n - a : size;
        int64_t first = c[a] >= 0 ? m->okey[c[a]] : m->g[-2 - c[a]].first;
        int64_t r = range_group(m, parent, c + a, len, first);
        if (r < 0) return;
        for (int64_t q = a; q < a + len; q++)
            if (c[q] >= 0) m->lgroup[c[q]] = r;
            else m->g[-2 - c[q]].parent = r;
        bound(m, r, c + a, len);
    }
}

static int64_t group_depth(minfo *m, int64_t g) {
    if (g < 0) return -1;
    if (m->g[g].depth < 0) m->g[g].depth = group_depth(m, m->g[g].parent) + 1;
    return m->g[g].depth;
}

static const minfo *sort_m;
static int by_parent_first(const void *x, const void *y) {
    const vgroup *a = &sort_m->g[*(const int64_t *)x], *b = &sort_m->g[*(const int64_t *)y];
    if (a->parent != b->parent) return a->parent < b->parent ? -1 : 1;
    if (a->first != b->first) return a->first < b->first ? -1 : 1;
    return *(const int64_t *)x < *(const int64_t *)y ? -1 : 1;
}
static int by_first_depth(const void *x, const void *y) {
    const vgroup *a = &sort_m->g[*(const int64_t *)x], *b = &sort_m->g[*(const int64_t *)y];
    if (a->first != b->first) return a->first < b->first ? -1 : 1;
    if (a->depth != b->depth) return a->depth < b->depth ? -1 : 1;
    return *(const int64_t *)x < *(const int64_t *)y ? -1 : 1;
}

/* The structural signature of every group: its layers in topological
 * order, each by op, attributes and where its inputs come from (an earlier
 * layer of the group, by distance in the group's own numbering; else
 * outside), so that identical blocks hash equal whatever their names. */
static void signatures(minfo *m) {
    int64_t *off = malloc((size_t)(m->n + 1) * sizeof *off);
    int64_t *cnt = calloc((size_t)(m->ng ? m->ng : 1), sizeof *cnt);
    if (!off || !cnt) {
        free(off), free(cnt), m->oom = 1;
        return;
    }
    off[0] = 0;
    for (int64_t i = 0; i < m->n; i++) off[i + 1] = off[i] + group_depth(m, m->lgroup[i]) + 1;
    int64_t *chain = malloc((size_t)(off[m->n] ? off[m->n] : 1) * sizeof *chain);
    int64_t *pos = malloc((size_t)(off[m->n] ? off[m->n] : 1) * sizeof *pos);
    if (!chain || !pos) {
        m->oom = 1;
        goto out;
    }
    for (int64_t g = 0; g < m->ng; g++) m->g[g].sig = 0x9a;
    for (int64_t i = 0; i < m->n; i++) {
        int64_t d = off[i + 1] - off[i];
        for (int64_t g = m->lgroup[i], k = d - 1; g >= 0; g = m->g[g].parent, k--) {
            chain[off[i] + k] = g;
            pos[off[i] + k] = cnt[g]++;
            m->g[g].nlayers++;
        }
        if (!d) continue;
        gwr_layer *l = m->ord[i];
        uint64_t lh = mix(mix(op_hash(l), attr_hash(l)), (uint64_t)gwr_layer_num_outputs(l));
        const gwr_weights *w = const_value(l);
        if (w) lh = dims_hash(lh, w->rank, w->dims);
        for (int64_t k = 0; k < d; k++) {
            int64_t g = chain[off[i] + k];
            uint64_t h = mix(m->g[g].sig, lh);
            for (int s = 0; s < gwr_layer_num_inputs(l); s++) {
                gwr_tensor *t = gwr_layer_input(l, s);
                int64_t j = producer_pos(m, t);
                uint64_t v = t ? 0xe : 0xa;
                if (j >= 0 && off[j + 1] - off[j] > k && chain[off[j] + k] == g)
                    v = mix((uint64_t)(pos[off[i] + k] - pos[off[j] + k]), (uint64_t)gwr_tensor_parent_output_index(t));
                h = mix(h, v);
            }
            m->g[g].sig = h;
        }
    }
    for (int64_t g = 0; g < m->ng; g++) m->g[g].sig = mix(m->g[g].sig, (uint64_t)m->g[g].nlayers);
out:
    free(off);
    free(cnt);
    free(chain);
    free(pos);
}

/* The groups of m (names, else structure), bounded, with signatures and
 * repeat indices, renumbered parents first (by first layer, then depth). */
static void compute_groups(minfo *m) {
    if (!m->n) return;
    if (groups_by_name(m) == 0) groups_by_structure(m);
    adopt_constants(m);
    if (m->oom) return;
    /* Siblings in order of okey: a counting sort of the positions. */
    int64_t n = m->n, ng0 = m->ng;
    int64_t *perm = malloc((size_t)n * sizeof *perm), *start = calloc((size_t)n + 1, sizeof *start);
    int64_t *nch = calloc((size_t)ng0 + 2, sizeof *nch), *items = malloc((size_t)(n + ng0) * sizeof *items);
    int64_t *fill = calloc((size_t)ng0 + 2, sizeof *fill);
    if (!perm || !start || !nch || !items || !fill) {
        m->oom = 1;
        goto out;
    }
    for (int64_t i = 0; i < n; i++) start[m->okey[i] + 1]++;
    for (int64_t i = 0; i < n; i++) start[i + 1] += start[i];
    for (int64_t i = 0; i < n; i++) perm[start[m->okey[i]]++] = i;
    for (int64_t g = 0; g < ng0; g++) m->g[g].first = -1;
    /* Children lists (slot 0 the top level, g + 1 group g): two passes,
     * counting then filling; a group is listed where its first layer is. */
    for (int pass = 0; pass < 2; pass++) {
        if (pass) {
            int64_t at = 0;
            for (int64_t g = 0; g < ng0 + 1; g++) fill[g] = at, at += nch[g];
            for (int64_t g = 0; g < ng0; g++) m->g[g].first = -1;
        }
        for (int64_t q = 0; q < n; q++) {
            int64_t i = perm[q];
            int64_t stack[64], ns = 0;
            for (int64_t g = m->lgroup[i]; g >= 0 && m->g[g].first < 0 && ns < 64; g = m->g[g].parent)
                stack[ns++] = g, m->g[g].first = m->okey[i];
            while (ns--) {
                int64_t g = stack[ns], slot = m->g[g].parent + 1;
                if (pass) items[fill[slot]++] = -2 - g;
                else nch[slot]++;
            }
            int64_t slot = m->lgroup[i] + 1;
            if (pass) items[fill[slot]++] = i;
            else nch[slot]++;
        }
    }
    for (int64_t g = 0, at = 0; g < ng0 + 1; g++) {
        bound(m, g - 1, items + at, nch[g]);
        at += nch[g];
    }
    if (m->oom) goto out;
    for (int64_t g = 0; g < m->ng; g++) m->g[g].depth = -1;
    signatures(m);
    if (m->oom) goto out;
    /* Repeat: the place in a run of siblings of equal signature. */
    int64_t *ids = malloc((size_t)(m->ng ? m->ng : 1) * sizeof *ids), *newid = malloc((size_t)(m->ng ? m->ng : 1) * sizeof *ids);
    if (!ids || !newid) {
        free(ids), free(newid), m->oom = 1;
        goto out;
    }
    for (int64_t g = 0; g < m->ng; g++) ids[g] = g;
    sort_m = m;
    qsort(ids, (size_t)m->ng, sizeof *ids, by_parent_first);
    for (int64_t k = 0; k < m->ng; k++) {
        vgroup *a = &m->g[ids[k]], *prev = k ? &m->g[ids[k - 1]] : NULL;
        a->repeat = prev && prev->parent == a->parent && prev->sig == a->sig ? prev->repeat + 1 : 1;
    }
    qsort(ids, (size_t)m->ng, sizeof *ids, by_first_depth);
    for (int64_t k = 0; k < m->ng; k++) newid[ids[k]] = k;
    vgroup *ng = malloc((size_t)(m->ng ? m->ng : 1) * sizeof *ng);
    if (!ng) {
        m->oom = 1;
    } else {
        for (int64_t k = 0; k < m->ng; k++) {
            ng[k] = m->g[ids[k]];
            if (ng[k].parent >= 0) ng[k].parent = newid[ng[k].parent];
        }
        if (m->ng) memcpy(m->g, ng, (size_t)m->ng * sizeof *ng);
        free(ng);
        for (int64_t i = 0; i < n; i++)
            if (m->lgroup[i] >= 0) m->lgroup[i] = newid[m->lgroup[i]];
    }
    free(ids);
    free(newid);
out:
    free(perm);
    free(start);
    free(nch);
    free(items);
    free(fill);
}

/* ---- the diff of two models ------------------------------------------------ */

/* The diff fields of both models from gwr_diff_networks (include/gwr/
 * diff.h: provenance, then name and op, then structure). Its indices are
 * network order; the page's are positions in ord (lidx). The reasons are
 * the diff's strings: d lives until the page is written. */
static const char *kind_name(gwr_diff_kind k) {
    return k == GWR_DIFF_SAME ? "same" : k == GWR_DIFF_CHANGED ? "changed" : k == GWR_DIFF_REMOVED ? "removed" : "added";
}

static gwr_diff *diff_models(minfo *a, minfo *b) {
    gwr_diff *d = gwr_diff_networks(a->net, b->net, NULL);
    if (!d) return NULL;
    minfo *m2[2] = {a, b};
    for (int s = 0; s < 2; s++) {
        minfo *m = m2[s], *o = m2[1 - s];
        size_t n1 = (size_t)(m->n ? m->n : 1);
        if (!(m->diff = malloc(n1 * sizeof *m->diff)) || !(m->why = malloc(n1 * sizeof *m->why)) ||
            !(m->match = malloc(n1 * sizeof *m->match))) {
            gwr_diff_free(d);
            return NULL;
        }
        for (int64_t i = 0; i < m->n; i++) {
            int64_t x = gwr_layer_index(m->ord[i]);
            int64_t j = s ? gwr_diff_match_b(d, x) : gwr_diff_match_a(d, x);
            const char *why = s ? gwr_diff_why_b(d, x) : gwr_diff_why_a(d, x);
            m->match[i] = j >= 0 ? o->lidx[j] : -1;
            m->diff[i] = kind_name(s ? gwr_diff_kind_b(d, x) : gwr_diff_kind_a(d, x));
            m->why[i] = why ? why : "";
        }
    }
    return d;
}

/* ---- writing a model ---------------------------------------------------------- */

typedef struct wctx {
    sbuf *b;
    gwr_network *root;
    const gwr_layer_cost **root_cost; /* by network index of the root's layers */
    gwr_ptrmap costs;                 /* body layer -> const gwr_layer_cost * */
} wctx;

static const gwr_layer_cost *cost_of(const wctx *w, const gwr_layer *l) {
    if (gwr_layer_network(l) == w->root) return w->root_cost ? w->root_cost[gwr_layer_index(l)] : NULL;
    return gwr_ptrmap_get(&w->costs, l);
}

static void shape_text(sbuf *b, gwr_network *net, const gwr_tensor *t) {
    int rank = gwr_tensor_rank(t);
    if (gwr_tensor_kind(t) != GWR_VALUE_TENSOR || rank < 0) {
        sb_s(b, "null");
        return;
    }
    char buf[1024];
    size_t k = 0;
    const gwr_dim *d = gwr_tensor_dims(t);
    for (int i = 0; i < rank && k < sizeof buf - 80; i++) {
        if (i) buf[k++] = 'x';
        const char *sym = GWR_DIM_IS_SYM(d[i]) ? gwr_network_dim_name(net, d[i]) : NULL;
        if (GWR_DIM_IS_KNOWN(d[i])) k += (size_t)snprintf(buf + k, sizeof buf - k, "%" PRId64, d[i]);
        else if (sym) k += (size_t)snprintf(buf + k, sizeof buf - k, "%.60s", sym);
        else buf[k++] = '?';
    }
    sb_str(b, buf, k);
}

static void dtype_text(sbuf *b, const gwr_tensor *t) {
    if (gwr_tensor_kind(t) == GWR_VALUE_TENSOR) {
        sb_cstr(b, gwr_dtype_name(gwr_tensor_dtype(t)));
        return;
    }
    char buf[256];
    gwr_tensor_type_str(t, buf, sizeof buf);
    sb_cstr(b, buf);
}

static int64_t weights_numel(const gwr_weights *w) { return gwr_shape_numel(w->rank, w->dims); }

/* An attribute as display text ("[3, 3]", "0.5", "float32[64x3] = [...]"). */
static void attr_text(sbuf *o, const gwr_layer *l, int a) {
    const char *name = gwr_layer_attr_name(l, a);
    int64_t iv, n;
    float fv;
    const int64_t *is;
    const float *fs;
    const char *s;
    size_t slen;
    const gwr_bytes *bs;
    const gwr_weights *w;
    gwr_network *g;
    gwr_network *const *gs;
    enum { MAXV = 32 };
    switch (gwr_layer_attr_type(l, a)) {
    case GWR_ATTR_INT:
        if (!gwr_layer_get_int(l, name, &iv)) sb_i(o, iv);
        break;
    case GWR_ATTR_FLOAT:
        if (!gwr_layer_get_float(l, name, &fv)) sb_f(o, "%g", (double)fv);
        break;
    case GWR_ATTR_STRING:
        if (!gwr_layer_get_string(l, name, &s, &slen)) sb_put(o, s, slen);
        break;
    case GWR_ATTR_INTS:
    case GWR_ATTR_FLOATS:
    case GWR_ATTR_STRINGS: {
        gwr_attr_type t = gwr_layer_attr_type(l, a);
        if ((t == GWR_ATTR_INTS && gwr_layer_get_ints(l, name, &is, &n)) ||
            (t == GWR_ATTR_FLOATS && gwr_layer_get_floats(l, name, &fs, &n)) ||
            (t == GWR_ATTR_STRINGS && gwr_layer_get_strings(l, name, &bs, &n)))
            break;
        sb_c(o, '[');
        for (int64_t k = 0; k < n && k < MAXV; k++) {
            if (k) sb_s(o, ", ");
            if (t == GWR_ATTR_INTS) sb_i(o, is[k]);
            else if (t == GWR_ATTR_FLOATS) sb_f(o, "%g", (double)fs[k]);
            else sb_c(o, '"'), sb_put(o, bs[k].data, bs[k].len < 200 ? bs[k].len : 200), sb_c(o, '"');
        }
        if (n > MAXV) sb_f(o, ", ... (%" PRId64 " in all)", n);
        sb_c(o, ']');
        break;
    }
    case GWR_ATTR_TENSOR:
        if (gwr_layer_get_tensor(l, name, &w)) break;
        sb_s(o, gwr_dtype_name(w->dtype));
        sb_c(o, '[');
        for (int k = 0; k < w->rank; k++) {
            if (k) sb_c(o, 'x');
            sb_i(o, w->dims[k]);
        }
        sb_c(o, ']');
        n = weights_numel(w);
        if (n >= 0 && n <= 8 && (w->dtype == GWR_FLOAT32 || w->dtype == GWR_INT64 || w->dtype == GWR_INT32) &&
            w->nbytes >= (size_t)n * (w->dtype == GWR_INT64 ? 8 : 4)) {
            sb_s(o, " = [");
            for (int64_t k = 0; k < n; k++) {
                if (k) sb_s(o, ", ");
                if (w->dtype == GWR_FLOAT32) {
                    float f;
                    memcpy(&f, (const char *)w->data + 4 * k, 4);
                    sb_f(o, "%g", (double)f);
                } else if (w->dtype == GWR_INT64) {
                    int64_t v;
                    memcpy(&v, (const char *)w->data + 8 * k, 8);
                    sb_i(o, v);
                } else {
                    int32_t v;
                    memcpy(&v, (const char *)w->data + 4 * k, 4);
                    sb_i(o, v);
                }
            }
            sb_c(o, ']');
        }
        break;
    case GWR_ATTR_TENSORS:
        if (!gwr_layer_get_tensors(l, name, &w, &n)) sb_f(o, "%" PRId64 " tensors", n);
        break;
    case GWR_ATTR_GRAPH:
        if (!gwr_layer_get_graph(l, name, &g))
            sb_f(o, "graph '%.100s' (%" PRId64 " layers)", gwr_network_name(g) ? gwr_network_name(g) : "",
                 gwr_network_num_live_layers(g));
        break;
    case GWR_ATTR_GRAPHS:
        if (!gwr_layer_get_graphs(l, name, &gs, &n)) sb_f(o, "%" PRId64 " graphs", n);
        break;
    default: break;
    }
}

/* Elements of the weights a layer holds (a constant) or reads (inputs
 * made by constants, graph inputs with a default value); -1 when a shape
 * is unknown. */
static int64_t layer_params(const gwr_layer *l) {
    if (is_const(l)) {
        const gwr_weights *w = const_value(l);
        return w ? weights_numel(w) : -1;
    }
    int64_t sum = 0;
    for (int k = 0; k < gwr_layer_num_inputs(l); k++) {
        gwr_tensor *t = gwr_layer_input(l, k);
        gwr_layer *p = t ? gwr_tensor_parent(t) : NULL;
        const gwr_weights *d = !t ? NULL : p ? const_value(p) : gwr_tensor_default(t);
        if (!d) continue;
        int64_t e = weights_numel(d);
        if (e < 0) return -1;
        sum += e;
    }
    return sum;
}

/* The index of t in the model's tensor list: the outputs of the model's
 * own live layers by position (obase), the rest (graph inputs, enclosing
 * tensors) from the map; -1 when not listed. */
static int64_t tensor_index(const minfo *m, const int64_t *obase, const gwr_ptrmap *tmap, const gwr_tensor *t) {
    int64_t j = producer_pos(m, t);
    if (j >= 0) return obase[j] + gwr_tensor_parent_output_index(t);
    return (int64_t)(intptr_t)gwr_ptrmap_get(tmap, t) - 1;
}

static void io_list(sbuf *b, const minfo *m, const int64_t *obase, int out, gwr_ptrmap *tmap) {
    gwr_network *net = m->net;
    int n = out ? gwr_network_num_outputs(net) : gwr_network_num_inputs(net);
    sb_c(b, '[');
    for (int i = 0; i < n; i++) {
        gwr_tensor *t = out ? gwr_network_output(net, i) : gwr_network_input(net, i);
        sb_s(b, i ? ",{\"name\":" : "{\"name\":");
        sb_cstr(b, gwr_tensor_name(t));
        sb_s(b, ",\"dtype\":");
        dtype_text(b, t);
        sb_s(b, ",\"shape\":");
        shape_text(b, net, t);
        sb_s(b, ",\"tensor\":");
        sb_i(b, tensor_index(m, obase, tmap, t));
        sb_c(b, '}');
    }
    sb_c(b, ']');
}

static int write_model(wctx *w, gwr_network *net, minfo *m, const char *file, int depth);

/* A body (If/Loop/Scan): a model of its own, without "file". */
static int write_body(wctx *w, gwr_network *g, int depth) {
    minfo m;
    int rc = minfo_init(&m, g);
    if (!rc) {
        compute_groups(&m);
        rc = m.oom ? -1 : write_model(w, g, &m, NULL, depth + 1);
    }
    minfo_free(&m);
    return rc;
}

static int write_model(wctx *w, gwr_network *net, minfo *m, const char *file, int depth) {
    sbuf *b = w->b;
    /* Tensors: graph inputs, the layers' outputs in order, then the
     * enclosing networks' tensors a body reads. Map: tensor -> index + 1. */
    gwr_ptrmap tmap = {0};
    int64_t *obase = malloc((size_t)(m->n + 1) * sizeof *obase);
    gwr_tensor **tv = NULL;
    const char **kind = NULL;
    int64_t nt = 0, cap = 0, kcap = 0;
    int rc = 0;
    if (!obase) {
        rc = -1;
        goto out;
    }
#define ADD_TENSOR(t, k, map)                                                                                  \
    do {                                                                                                       \
        if (gwr_grow((void **)&tv, sizeof *tv, &cap, nt + 1) || gwr_grow((void **)&kind, sizeof *kind, &kcap, nt + 1) || \
            ((map) && gwr_ptrmap_put(&tmap, (t), (void *)(intptr_t)(nt + 1)))) {                               \
            rc = -1;                                                                                           \
            goto out;                                                                                          \
        }                                                                                                      \
        tv[nt] = (t), kind[nt++] = (k);                                                                        \
    } while (0)
    for (int i = 0; i < gwr_network_num_inputs(net); i++) {
        gwr_tensor *t = gwr_network_input(net, i);
        ADD_TENSOR(t, gwr_tensor_default(t) ? "weight" : "input", 1);
    }
    for (int64_t i = 0; i < m->n; i++) {
        gwr_layer *l = m->ord[i];
        const gwr_weights *cw = const_value(l);
        const char *k = !is_const(l) ? "act" : cw && weights_numel(cw) <= 8 ? "const" : "weight";
        obase[i] = nt;
        for (int o = 0; o < gwr_layer_num_outputs(l); o++) ADD_TENSOR(gwr_layer_output(l, o), k, 0);
    }
    for (int64_t i = 0; i < m->n; i++)
        for (int k = 0; k < gwr_layer_num_inputs(m->ord[i]); k++) {
            gwr_tensor *t = gwr_layer_input(m->ord[i], k);
            if (t && tensor_index(m, obase, &tmap, t) < 0) ADD_TENSOR(t, "outer", 1);
        }
#undef ADD_TENSOR
    sb_c(b, '{');
    if (file) {
        sb_s(b, "\"file\":");
        sb_cstr(b, file);
        sb_c(b, ',');
    }
    sb_s(b, "\"graph\":");
    sb_cstr(b, gwr_network_name(net) ? gwr_network_name(net) : "");
    sb_s(b, ",\n\"inputs\":");
    io_list(b, m, obase, 0, &tmap);
    sb_s(b, ",\n\"outputs\":");
    io_list(b, m, obase, 1, &tmap);
    sb_s(b, ",\n\"tensors\":[");
    for (int64_t i = 0; i < nt; i++) {
        gwr_tensor *t = tv[i];
        gwr_layer *p = gwr_tensor_parent(t);
        sb_s(b, i ? ",\n{\"name\":" : "\n{\"name\":");
        sb_cstr(b, gwr_tensor_name(t));
        sb_s(b, ",\"dtype\":");
        dtype_text(b, t);
        sb_s(b, ",\"shape\":");
        shape_text(b, net, t);
        sb_s(b, ",\"producer\":");
        sb_i(b, p && gwr_layer_network(p) == net ? m->lidx[gwr_layer_index(p)] : -1);
        sb_s(b, ",\"kind\":\"");
        sb_s(b, kind[i]);
        sb_s(b, "\"}");
    }
    sb_s(b, "],\n\"layers\":[");
    sbuf at = {0};
    for (int64_t i = 0; i < m->n && !rc; i++) {
        gwr_layer *l = m->ord[i];
        sb_s(b, i ? ",\n{\"name\":" : "\n{\"name\":");
        sb_cstr(b, gwr_layer_name(l));
        sb_s(b, ",\"op\":");
        sb_cstr(b, gwr_layer_op(l));
        sb_s(b, ",\"domain\":");
        sb_cstr(b, gwr_layer_domain(l));
        sb_s(b, ",\"in\":[");
        for (int k = 0; k < gwr_layer_num_inputs(l); k++) {
            if (k) sb_c(b, ',');
            gwr_tensor *t = gwr_layer_input(l, k);
            sb_i(b, t ? tensor_index(m, obase, &tmap, t) : -1);
        }
        sb_s(b, "],\"out\":[");
        for (int k = 0; k < gwr_layer_num_outputs(l); k++) {
            if (k) sb_c(b, ',');
            sb_i(b, obase[i] + k);
        }
        sb_s(b, "],\"attrs\":{");
        for (int a = 0, na = 0; a < gwr_layer_num_attrs(l); a++) {
            if (na++) sb_c(b, ',');
            sb_cstr(b, gwr_layer_attr_name(l, a));
            sb_c(b, ':');
            at.n = 0;
            attr_text(&at, l, a);
            if (at.oom) rc = -1;
            sb_str(b, at.p ? at.p : "", at.n);
        }
        const gwr_layer_cost *c = cost_of(w, l);
        sb_s(b, "},\"flops\":");
        sb_i(b, c ? c->flops : -1);
        sb_s(b, ",\"params\":");
        sb_i(b, layer_params(l));
        sb_s(b, ",\"group\":");
        sb_i(b, m->lgroup[i]);
        size_t plen;
        const char *prov = gwr_layer_prop(l, "gwr.provenance", &plen);
        sb_s(b, ",\"prov\":");
        if (prov) sb_str(b, prov, plen);
        else sb_s(b, "null");
        sb_s(b, ",\"diff\":");
        if (m->diff) {
            sb_c(b, '"');
            sb_s(b, m->diff[i]);
            sb_s(b, "\",\"match\":");
            sb_i(b, m->match[i]);
            sb_s(b, ",\"why\":");
            sb_cstr(b, m->why[i]);
        } else {
            sb_s(b, "null");
        }
        sb_s(b, ",\"bodies\":[");
        int nb = 0;
        for (int a = 0; a < gwr_layer_num_attrs(l) && !rc; a++) {
            gwr_network *one;
            gwr_network *const *gs = NULL;
            int64_t ngs = 0;
            const char *an = gwr_layer_attr_name(l, a);
            if (gwr_layer_attr_type(l, a) == GWR_ATTR_GRAPH && !gwr_layer_get_graph(l, an, &one)) gs = &one, ngs = 1;
            else if (gwr_layer_attr_type(l, a) == GWR_ATTR_GRAPHS) gwr_layer_get_graphs(l, an, &gs, &ngs);
            for (int64_t k = 0; k < ngs && !rc; k++) {
                sb_s(b, nb++ ? ",{\"attr\":" : "{\"attr\":");
                sb_cstr(b, an);
                sb_s(b, ",\"model\":");
                rc = depth < 64 ? write_body(w, gs[k], depth) : (sb_s(b, "null"), 0);
                sb_c(b, '}');
            }
        }
        sb_s(b, "]}");
    }
    free(at.p);
    sb_s(b, "],\n\"groups\":[");
    for (int64_t g = 0; g < m->ng; g++) {
        const vgroup *v = &m->g[g];
        sb_s(b, g ? ",\n{\"name\":" : "\n{\"name\":");
        sb_cstr(b, v->name);
        sb_s(b, ",\"parent\":");
        sb_i(b, v->parent);
        sb_s(b, ",\"layers\":");
        sb_i(b, v->nlayers);
        sb_f(b, ",\"sig\":\"%016" PRIx64 "\",\"repeat\":%" PRId64 "}", v->sig, v->repeat);
    }
    sb_s(b, "]}");
out:
    gwr_free(tv);
    gwr_free(kind);
    free(obase);
    gwr_ptrmap_free(&tmap);
    return rc || b->oom ? -1 : 0;
}

/* ---- the page ----------------------------------------------------------------- */

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* FLOPs of every layer (bodies included) from gwr_analyze_network; none
 * when the analysis fails (the page then shows -1). */
static gwr_analysis *costs_of(gwr_network *net, wctx *w) {
    gwr_analysis *a = gwr_analyze_network(net, NULL);
    w->root = net;
    if (!a || !(w->root_cost = calloc((size_t)gwr_network_num_layers(net) + 1, sizeof *w->root_cost))) return a;
    for (int64_t i = 0; i < gwr_analysis_num_layers(a); i++) {
        const gwr_layer_cost *c = gwr_analysis_layer_cost(a, i);
        if (c) w->root_cost[gwr_layer_index(c->layer)] = c;
    }
    for (int64_t i = 0; i < gwr_analysis_num_body_layers(a); i++) {
        const gwr_layer_cost *c = gwr_analysis_body_layer_cost(a, i);
        if (c && gwr_ptrmap_put(&w->costs, c->layer, (void *)c)) return a;
    }
    return a;
}

static int build_json(sbuf *b, const view_page *pg) {
    minfo m[2];
    int n = pg->nmodels, rc = 0, ninit = 0;
    for (; ninit < n && !rc; ninit++)
        if (minfo_init(&m[ninit], pg->models[ninit])) rc = -1;
    for (int k = 0; k < n && !rc; k++) {
        compute_groups(&m[k]);
        if (m[k].oom) rc = -1;
    }
    gwr_diff *d = NULL;
    if (!rc && n == 2 && !(d = diff_models(&m[0], &m[1]))) rc = -1;
    sb_s(b, "{\"version\":1,\"title\":");
    char title[1024];
    snprintf(title, sizeof title, n == 2 ? "%s -> %s" : "%s", base_name(pg->files[0]), n == 2 ? base_name(pg->files[1]) : "");
    sb_cstr(b, title);
    sb_s(b, ",\n\"models\":[");
    for (int k = 0; k < n && !rc; k++) {
        wctx w = {b, NULL, NULL, {0}};
        gwr_analysis *a = costs_of(pg->models[k], &w);
        if (k) sb_s(b, ",\n");
        rc = write_model(&w, pg->models[k], &m[k], base_name(pg->files[k]), 0);
        gwr_ptrmap_free(&w.costs);
        free(w.root_cost);
        gwr_analysis_free(a);
    }
    sb_s(b, "],\n\"trace\":");
    if (pg->trace) write_trace(b, pg->trace);
    else sb_s(b, "null");
    sb_s(b, ",\n\"profile\":");
    sb_s(b, pg->profile ? pg->profile : "null");
    sb_s(b, "}");
    for (int k = 0; k < ninit; k++) minfo_free(&m[k]);
    gwr_diff_free(d);
    return rc || b->oom ? -1 : 0;
}

/* Writes s, every "</script" as "<\/script" (the same script to the
 * browser), so that an embedded script cannot end its element. */
static void put_script(FILE *f, const char *s) {
    for (const char *p; (p = strstr(s, "</script"));) {
        fwrite(s, 1, (size_t)(p - s), f);
        fputs("<\\/", f);
        s = p + 2;
    }
    fputs(s, f);
}

int view_available(void) {
    if (gwr_view_have_dagre) return CLI_OK;
    cli_error("view", "built without the viewer's layout library: run npm install --ignore-scripts, then rebuild");
    return CLI_FAIL;
}

int view_write(const char *file, const view_page *pg) {
    if (view_available()) return CLI_FAIL;
    static const char *const marks[3] = {"<!--GWR:STYLE-->", "<!--GWR:DATA-->", "<!--GWR:SCRIPT-->"};
    const char *at[3];
    for (int k = 0; k < 3; k++)
        if (!(at[k] = strstr(gwr_view_html, marks[k]))) {
            char msg[200];
            snprintf(msg, sizeof msg, "the page template (tools/view/view.html) has no %s line: rebuild gwr", marks[k]);
            cli_error("view", msg);
            return CLI_FAIL;
        }
    sbuf b = {0};
    if (build_json(&b, pg)) {
        free(b.p);
        cli_error(file, "out of memory while making the page");
        return CLI_FAIL;
    }
    char *tmp = cli_temp_name(file);
    FILE *f = tmp ? fopen(tmp, "wb") : NULL;
    if (!f) {
        char msg[300];
        snprintf(msg, sizeof msg, "cannot write the page: %s", tmp ? strerror(errno) : "out of memory");
        cli_error(file, msg);
        free(tmp), free(b.p);
        return CLI_FAIL;
    }
    /* The template with each marker replaced, in the order they come. */
    int order[3] = {0, 1, 2};
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (at[order[j]] < at[order[i]]) {
                int t = order[i];
                order[i] = order[j], order[j] = t;
            }
    const char *p = gwr_view_html;
    for (int i = 0; i < 3; i++) {
        int k = order[i];
        fwrite(p, 1, (size_t)(at[k] - p), f);
        if (k == 0) {
            fputs("<style>\n", f);
            fputs(gwr_view_css, f);
            fputs("</style>", f);
        } else if (k == 1) {
            fputs("<script id=\"gwr-data\" type=\"application/json\">", f);
            fwrite(b.p, 1, b.n, f);
            fputs("</script>", f);
        } else {
            fputs("<script>\n", f);
            put_script(f, gwr_view_dagre);
            fputs("\n</script><script>\n", f);
            put_script(f, gwr_view_js);
            fputs("\n</script>", f);
        }
        p = at[k] + strlen(marks[k]);
    }
    fputs(p, f);
    free(b.p);
    int bad = ferror(f);
    if (fclose(f) || bad || rename(tmp, file)) {
        char msg[300];
        snprintf(msg, sizeof msg, "cannot write the page: %s", strerror(errno ? errno : EIO));
        cli_error(file, msg);
        remove(tmp);
        free(tmp);
        return CLI_FAIL;
    }
    free(tmp);
    return CLI_OK;
}
