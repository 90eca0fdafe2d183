/* function_text.c - ONNX's textual syntax for functions (the grammar of
 * onnx/defs/parser.cc: `<domain: "d", opset_import: ["" : 18]>
 * name <attrs> (inputs) => (outputs) { out = Op <attr = value> (in) }`),
 * read as rewrite rules the way onnxsim 0.8's function_rewrite_rules read
 * FunctionProto pairs: the pattern's inputs are wildcards, its body is the
 * DAG to match, its outputs are rewired to the replacement's outputs; the
 * replacement's inputs are the pattern's inputs of the same name; an
 * attribute `a = @r` binds (pattern) or substitutes (replacement) an
 * attribute; a pattern Constant matches a constant of that value.
 *
 * The pair becomes one rule of the .rules language (docs/rules.md), which
 * gwr_rules_parse reads; each emitted token remembers the input offset it
 * came from, so that an error about the .rules text is reported at its
 * place in the function text. */
#include "rules/function_text.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* The parsed form (everything in one arena).                          */

typedef enum {
    A_INT,
    A_FLOAT,
    A_STRING,
    A_INTS,
    A_FLOATS,
    A_STRINGS,
    A_TENSOR,
    A_REF,   /* a = @name */
    A_OTHER, /* type_proto / graph / ...: parsed, never emitted */
} akind;

typedef struct ft_tensor {
    int dtype; /* ONNX TensorProto.DataType (= gwr_dtype) */
    int rank;
    int64_t dims[8];
    int n; /* number of values written */
    double *v;
    int64_t *iv;
    const char **sv;
} ft_tensor;

typedef struct ft_attr {
    const char *name;
    size_t pos;
    akind k;
    int64_t i;
    double f;
    const char *s;
    int n;
    int64_t *ints;
    double *floats;
    const char **strs;
    ft_tensor t;
    const char *ref;
    size_t vpos; /* position of the value */
} ft_attr;

typedef struct ft_names {
    const char **v;
    size_t *pos;
    int n, cap;
} ft_names;

typedef struct ft_node {
    size_t pos; /* of the op name */
    const char *domain, *op;
    ft_names in, out;
    ft_attr *at;
    int nat, capat;
    int state; /* emission: 0 new, 1 being emitted, 2 emitted */
    int reads; /* pattern emission: how many pattern inputs read its outputs */
} ft_node;

typedef struct ft_func {
    size_t pos; /* of the name */
    const char *name;
    ft_names in, out, attrs;
    ft_node *nodes;
    int nnode, capnode;
} ft_func;

typedef struct parser {
    const char *s;
    size_t pos, len;
    gwr_arena *a;
    int failed;
    size_t epos;
    char emsg[GWR_FT_MSG_MAX];
} parser;

static int fail_at(parser *p, size_t pos, const char *fmt, ...) GWR_PRINTF(3, 4);
static int fail_at(parser *p, size_t pos, const char *fmt, ...) {
    if (p->failed) return 0;
    p->failed = 1;
    p->epos = pos;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->emsg, sizeof p->emsg, fmt, ap);
    va_end(ap);
    return 0;
}

static int oom(parser *p) { return fail_at(p, p->pos, "out of memory"); }

/* Grows an arena array of `elem`-byte elements to hold n + 1. */
static int grow(parser *p, void **arr, int *cap, int n, size_t elem) {
    if (n < *cap) return 1;
    int ncap = *cap ? *cap * 2 : 4;
    void *na = gwr_arena_alloc(p->a, (size_t)ncap * elem);
    if (!na) return oom(p);
    if (n) memcpy(na, *arr, (size_t)n * elem);
    *arr = na;
    *cap = ncap;
    return 1;
}

static int names_add(parser *p, ft_names *l, const char *v, size_t pos) {
    int c1 = l->cap, c2 = l->cap;
    if (!grow(p, (void **)&l->v, &c1, l->n, sizeof *l->v)) return 0;
    if (!grow(p, (void **)&l->pos, &c2, l->n, sizeof *l->pos)) return 0;
    l->cap = c1;
    l->v[l->n] = v;
    l->pos[l->n++] = pos;
    return 1;
}

/* ------------------------------------------------------------------ */
/* Lexing, as onnx/defs/parser.h: blanks, `#` comments to end of line.  */

static void skip(parser *p) {
    for (;;) {
        while (p->pos < p->len && isspace((unsigned char)p->s[p->pos])) p->pos++;
        if (p->pos >= p->len || p->s[p->pos] != '#') return;
        while (p->pos < p->len && p->s[p->pos] != '\n') p->pos++;
    }
}

static int peek(parser *p) {
    skip(p);
    return p->pos < p->len ? (unsigned char)p->s[p->pos] : 0;
}

static int accept(parser *p, int c) {
    if (peek(p) != c) return 0;
    p->pos++;
    return 1;
}

static const char *tok_desc(parser *p, char *buf, size_t n) {
    skip(p);
    if (p->pos >= p->len) return "end of input";
    size_t k = 0;
    const char *t = p->s + p->pos;
    if (isalnum((unsigned char)*t) || *t == '_') {
        while (t[k] && (isalnum((unsigned char)t[k]) || t[k] == '_') && k + 3 < n) k++;
    } else {
        k = 1;
    }
    snprintf(buf, n, "'%.*s'", (int)k, t);
    return buf;
}

static int expect(parser *p, int c, const char *where) {
    if (accept(p, c)) return 1;
    char b[48];
    return fail_at(p, p->pos, "expected '%c' %s, found %s", c, where, tok_desc(p, b, sizeof b));
}

static int is_id_start(int c) { return isalpha(c) || c == '_'; }
static int is_id_char(int c) { return isalnum(c) || c == '_'; }

/* [A-Za-z_][A-Za-z0-9_]* or NULL (nothing consumed). */
static const char *ident_opt(parser *p) {
    skip(p);
    size_t from = p->pos;
    if (p->pos >= p->len || !is_id_start((unsigned char)p->s[p->pos])) return NULL;
    while (p->pos < p->len && is_id_char((unsigned char)p->s[p->pos])) p->pos++;
    char *r = gwr_arena_alloc(p->a, p->pos - from + 1);
    if (!r) return oom(p), NULL;
    memcpy(r, p->s + from, p->pos - from);
    return r;
}

static const char *ident(parser *p, const char *what) {
    const char *r = ident_opt(p);
    if (!r && !p->failed) {
        char b[48];
        fail_at(p, p->pos, "expected %s, found %s", what, tok_desc(p, b, sizeof b));
    }
    return r;
}

/* A "..." literal (the opening quote is next), escapes as ONNX's: a
 * backslash keeps the character after it. */
static const char *string_lit(parser *p) {
    size_t from = p->pos;
    p->pos++;
    char *r = gwr_arena_alloc(p->a, p->len - p->pos + 1);
    if (!r) return oom(p), NULL;
    size_t k = 0;
    while (p->pos < p->len && p->s[p->pos] != '"') {
        if (p->s[p->pos] == '\\') p->pos++;
        if (p->pos >= p->len) break;
        r[k++] = p->s[p->pos++];
    }
    if (p->pos >= p->len) return fail_at(p, from, "unterminated string"), NULL;
    p->pos++;
    return r;
}

/* A name: an identifier or a "quoted" one. */
static const char *quotable(parser *p, const char *what) {
    if (peek(p) == '"') return string_lit(p);
    return ident(p, what);
}

static int is_float_word(const char *w) {
    char l[12];
    size_t n = strlen(w);
    if (n >= sizeof l) return 0;
    for (size_t i = 0; i <= n; i++) l[i] = (char)tolower((unsigned char)w[i]);
    return !strcmp(l, "inf") || !strcmp(l, "infinity") || !strcmp(l, "nan");
}

typedef struct literal {
    int kind; /* 1 int, 2 float, 3 string */
    int64_t i;
    double f;
    const char *s;
    size_t pos;
} literal;

static int number_or_string(parser *p, literal *l) {
    skip(p);
    l->pos = p->pos;
    if (p->pos >= p->len) return fail_at(p, p->pos, "expected a value, found end of input");
    if (p->s[p->pos] == '"') {
        l->kind = 3;
        l->s = string_lit(p);
        return l->s != NULL;
    }
    size_t from = p->pos;
    int neg = 0;
    if (p->s[p->pos] == '-') {
        neg = 1;
        p->pos++;
        skip(p);
    }
    if (p->pos < p->len && isalpha((unsigned char)p->s[p->pos])) {
        size_t w0 = p->pos;
        while (p->pos < p->len && isalpha((unsigned char)p->s[p->pos])) p->pos++;
        char w[16];
        size_t n = p->pos - w0;
        if (n < sizeof w) {
            memcpy(w, p->s + w0, n);
            w[n] = 0;
        }
        if (n >= sizeof w || !is_float_word(w) ||
            (p->pos < p->len && isdigit((unsigned char)p->s[p->pos]))) {
            p->pos = from;
            return fail_at(p, from, "expected a number");
        }
        l->kind = 2;
        l->f = tolower((unsigned char)w[0]) == 'n' ? NAN : INFINITY;
        if (neg) l->f = -l->f;
        return 1;
    }
    if (p->pos >= p->len || !isdigit((unsigned char)p->s[p->pos])) {
        char b[48];
        p->pos = from;
        return fail_at(p, from, "expected a value, found %s", tok_desc(p, b, sizeof b));
    }
    size_t d0 = p->pos;
    int isf = 0;
    while (p->pos < p->len && (isdigit((unsigned char)p->s[p->pos]) || p->s[p->pos] == '.')) {
        if (p->s[p->pos] == '.') {
            if (isf) break;
            isf = 1;
        }
        p->pos++;
    }
    if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
        isf = 1;
        p->pos++;
        if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-')) p->pos++;
        while (p->pos < p->len && isdigit((unsigned char)p->s[p->pos])) p->pos++;
    }
    char buf[64];
    size_t n = p->pos - d0;
    if (n >= sizeof buf) return fail_at(p, from, "number too long");
    memcpy(buf, p->s + d0, n);
    buf[n] = 0;
    if (isf) {
        l->kind = 2;
        l->f = strtod(buf, NULL);
        if (neg) l->f = -l->f;
    } else {
        char *end;
        errno = 0;
        unsigned long long u = strtoull(buf, &end, 10);
        if (errno || u > (unsigned long long)INT64_MAX + (unsigned long long)neg)
            return fail_at(p, from, "integer out of range");
        l->kind = 1;
        l->i = neg ? (int64_t)(0 - u) : (int64_t)u;
    }
    return 1;
}

/* ------------------------------------------------------------------ */
/* Types (parsed to be skipped: onnxsim ignores them).                  */

static const char *const prim_types[] = {
    "float",          "uint8",      "int8",           "uint16",     "int16",      "int32",
    "int64",          "string",     "bool",           "float16",    "double",     "uint32",
    "uint64",         "complex64",  "complex128",     "bfloat16",   "float8e4m3fn",
    "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "float8e8m0", "uint4",      "int4",
    "float4e2m1",     "uint2",      "int2",           "float6e2m3", "float6e3m2",
};

static int prim_type(const char *w) {
    for (size_t i = 0; i < sizeof prim_types / sizeof *prim_types; i++)
        if (!strcmp(w, prim_types[i])) return 1;
    return 0;
}

static int type_word(const char *w) {
    return prim_type(w) || !strcmp(w, "seq") || !strcmp(w, "map") || !strcmp(w, "optional") ||
           !strcmp(w, "sparse_tensor") || !strcmp(w, "opaque");
}

/* The identifier ahead, without consuming it ("" when none). */
static void peek_ident(parser *p, char *buf, size_t n) {
    skip(p);
    size_t k = 0, i = p->pos;
    if (i < p->len && is_id_start((unsigned char)p->s[i]))
        while (i < p->len && is_id_char((unsigned char)p->s[i]) && k + 1 < n) buf[k++] = p->s[i++];
    buf[k] = 0;
}

static int next_is_type(parser *p) {
    char w[32];
    peek_ident(p, w, sizeof w);
    return type_word(w);
}

/* A tensor shape `[d, ...]` after the element type: dims are ints, `?`,
 * identifiers or "strings". Writes the numeric ones to t (when given). */
static int shape(parser *p, ft_tensor *t) {
    if (!accept(p, '[')) return 1;
    if (accept(p, ']')) return 1;
    do {
        size_t at = p->pos;
        if (accept(p, '?')) {
            if (t) return fail_at(p, at, "a constant's shape needs numeric dims");
        } else if (peek(p) == '"' || is_id_start(peek(p))) {
            if (!quotable(p, "a dimension")) return 0;
            if (t) return fail_at(p, at, "a constant's shape needs numeric dims");
        } else {
            literal l;
            if (!number_or_string(p, &l)) return 0;
            if (l.kind != 1) return fail_at(p, l.pos, "expected a dimension");
            if (t) {
                if (t->rank >= 8) return fail_at(p, at, "more than 8 dims");
                t->dims[t->rank++] = l.i;
            }
        }
    } while (accept(p, ','));
    return expect(p, ']', "after the dims");
}

/* A type; *elem gets a tensor type's element type name (else NULL). */
static int type(parser *p, const char **elem, ft_tensor *t) {
    size_t at = p->pos;
    const char *w = ident(p, "a type");
    if (!w) return 0;
    if (elem) *elem = NULL;
    if (prim_type(w)) {
        if (elem) *elem = w;
        return shape(p, t);
    }
    if (t) return fail_at(p, at, "expected a tensor type");
    if (!strcmp(w, "seq") || !strcmp(w, "optional")) {
        return expect(p, '(', "after the type") && type(p, NULL, NULL) &&
               expect(p, ')', "after the type");
    }
    if (!strcmp(w, "map")) {
        return expect(p, '(', "after map") && ident(p, "a key type") &&
               expect(p, ',', "after the key type") && type(p, NULL, NULL) &&
               expect(p, ')', "after the type");
    }
    if (!strcmp(w, "sparse_tensor")) {
        return expect(p, '(', "after sparse_tensor") && type(p, NULL, NULL) &&
               expect(p, ')', "after the type");
    }
    if (!strcmp(w, "opaque")) {
        if (!expect(p, '(', "after opaque")) return 0;
        while (peek(p) && peek(p) != ')') p->pos++;
        return expect(p, ')', "after the opaque type");
    }
    return fail_at(p, at, "unknown type '%s'", w);
}

/* ------------------------------------------------------------------ */
/* Attributes.                                                          */

static int dtype_of(const char *w) {
    gwr_dtype d = gwr_dtype_from_name(w);
    return (int)d;
}

static int tensor_values(parser *p, ft_tensor *t) {
    if (!accept(p, '{')) {
        if (peek(p) == '[') return fail_at(p, p->pos, "external tensor data is not supported");
        return 1;
    }
    int cap = 0;
    int isstr = t->dtype == GWR_STRING;
    if (accept(p, '}')) return 1;
    do {
        literal l;
        if (!number_or_string(p, &l)) return 0;
        if (isstr != (l.kind == 3))
            return fail_at(p, l.pos, isstr ? "expected a string" : "expected a number");
        int c1 = cap, c2 = cap, c3 = cap;
        if (!grow(p, (void **)&t->v, &c1, t->n, sizeof *t->v)) return 0;
        if (!grow(p, (void **)&t->iv, &c2, t->n, sizeof *t->iv)) return 0;
        if (!grow(p, (void **)&t->sv, &c3, t->n, sizeof *t->sv)) return 0;
        cap = c1;
        t->v[t->n] = l.kind == 1 ? (double)l.i : l.f;
        t->iv[t->n] = l.kind == 1 ? l.i : (int64_t)l.f;
        t->sv[t->n] = l.s;
        if (l.kind == 2 && !gwr_dtype_is_float((gwr_dtype)t->dtype))
            return fail_at(p, l.pos, "expected an integer for a %s tensor",
                           gwr_dtype_name((gwr_dtype)t->dtype));
        t->n++;
    } while (accept(p, ','));
    return expect(p, '}', "after the tensor's values");
}

static int graph_body(parser *p, ft_func *f);

/* One value of an attribute; `want`: the declared type's kind or -1. */
static int attr_single(parser *p, ft_attr *a, int want) {
    int c = peek(p);
    a->vpos = p->pos;
    if (is_id_start(c)) {
        char w[32];
        peek_ident(p, w, sizeof w);
        if (type_word(w)) {
            const char *elem = NULL;
            size_t at = p->pos;
            ft_tensor t;
            memset(&t, 0, sizeof t);
            size_t save = p->pos;
            if (!type(p, &elem, NULL)) return 0;
            int nc = peek(p);
            if (nc == '{' || nc == '=' || is_id_start(nc)) {
                /* a tensor: type [name] [=] {values}; re-read the shape */
                p->pos = save;
                if (!elem) return fail_at(p, at, "expected a tensor type");
                ident(p, "a type");
                t.dtype = dtype_of(elem);
                if (!shape(p, &t)) return 0;
                if (is_id_start(peek(p))) ident_opt(p);
                else if (peek(p) == '"') string_lit(p);
                accept(p, '=');
                if (!tensor_values(p, &t)) return 0;
                a->k = A_TENSOR;
                a->t = t;
                return !p->failed;
            }
            a->k = A_OTHER; /* a type_proto attribute */
            return 1;
        }
        if (is_float_word(w)) {
            literal l;
            if (!number_or_string(p, &l)) return 0;
            a->k = A_FLOAT;
            a->f = l.f;
            return 1;
        }
        /* a graph: name (inputs) => (outputs) { nodes } */
        ft_func g;
        memset(&g, 0, sizeof g);
        if (!graph_body(p, &g)) return 0;
        a->k = A_OTHER;
        return 1;
    }
    if (accept(p, '@')) {
        a->k = A_REF;
        a->ref = quotable(p, "an attribute name after '@'");
        return a->ref != NULL;
    }
    literal l;
    if (!number_or_string(p, &l)) return 0;
    if (l.kind == 1 && want == A_FLOAT) {
        a->k = A_FLOAT;
        a->f = (double)l.i;
    } else if (l.kind == 1) {
        a->k = A_INT;
        a->i = l.i;
    } else if (l.kind == 2) {
        a->k = A_FLOAT;
        a->f = l.f;
    } else {
        a->k = A_STRING;
        a->s = l.s;
    }
    return 1;
}

static const struct {
    const char *name;
    int kind;
} attr_types[] = {
    {"float", A_FLOAT},  {"int", A_INT},       {"string", A_STRING},      {"tensor", A_TENSOR},
    {"floats", A_FLOATS}, {"ints", A_INTS},    {"strings", A_STRINGS},    {"graph", A_OTHER},
    {"graphs", A_OTHER}, {"tensors", A_OTHER}, {"sparse_tensor", A_OTHER}, {"type_proto", A_OTHER},
    {"sparse_tensors", A_OTHER}, {"type_protos", A_OTHER},
};

/* name [: type] = value | [values] (the name is read by the caller). */
static int attr_rest(parser *p, ft_attr *a) {
    int want = -1;
    if (accept(p, ':')) {
        size_t at = p->pos;
        const char *t = ident(p, "an attribute type");
        if (!t) return 0;
        size_t i;
        for (i = 0; i < sizeof attr_types / sizeof *attr_types; i++)
            if (!strcmp(t, attr_types[i].name)) break;
        if (i == sizeof attr_types / sizeof *attr_types)
            return fail_at(p, at, "unknown attribute type '%s'", t);
        want = attr_types[i].kind;
    }
    if (!expect(p, '=', "after the attribute name")) return 0;
    if (!accept(p, '[')) {
        int single = want == A_INTS ? A_INT : want == A_FLOATS ? A_FLOAT : want;
        if (!attr_single(p, a, single)) return 0;
        if (want == A_FLOAT && a->k == A_INT) a->k = A_FLOAT, a->f = (double)a->i;
        if (want >= 0 && want != A_OTHER && a->k != A_REF && a->k != (akind)want &&
            !(want == A_TENSOR && a->k == A_TENSOR))
            return fail_at(p, a->vpos, "the value does not have the declared type");
        return 1;
    }
    a->vpos = p->pos;
    int any_float = want == A_FLOATS, any_int = 0, any_str = 0, cap = 0;
    if (accept(p, ']')) {
        if (want != A_INTS && want != A_FLOATS && want != A_STRINGS)
            return fail_at(p, a->vpos, "an empty list needs a type (`name: ints = []`)");
        a->k = (akind)want;
        return 1;
    }
    do {
        ft_attr e;
        memset(&e, 0, sizeof e);
        if (!attr_single(p, &e, want == A_FLOATS ? A_FLOAT : -1)) return 0;
        if (e.k != A_INT && e.k != A_FLOAT && e.k != A_STRING)
            return fail_at(p, e.vpos, "a list holds numbers or strings here");
        any_float |= e.k == A_FLOAT;
        any_int |= e.k == A_INT;
        any_str |= e.k == A_STRING;
        int c1 = cap, c2 = cap, c3 = cap;
        if (!grow(p, (void **)&a->ints, &c1, a->n, sizeof *a->ints)) return 0;
        if (!grow(p, (void **)&a->floats, &c2, a->n, sizeof *a->floats)) return 0;
        if (!grow(p, (void **)&a->strs, &c3, a->n, sizeof *a->strs)) return 0;
        cap = c1;
        a->ints[a->n] = e.i;
        a->floats[a->n] = e.k == A_INT ? (double)e.i : e.f;
        a->strs[a->n] = e.s;
        a->n++;
        if (any_str && (any_float || any_int))
            return fail_at(p, e.vpos, "a list mixes strings and numbers");
    } while (accept(p, ','));
    if (!expect(p, ']', "after the list")) return 0;
    a->k = any_str ? A_STRINGS : any_float ? A_FLOATS : A_INTS;
    if (want >= 0 && (akind)want != a->k)
        return fail_at(p, a->vpos, "the list does not have the declared type");
    return 1;
}

static int attr(parser *p, ft_attr *a) {
    memset(a, 0, sizeof *a);
    skip(p);
    a->pos = p->pos;
    a->name = ident(p, "an attribute name");
    return a->name && attr_rest(p, a);
}

static int attr_list(parser *p, ft_node *n) {
    if (!accept(p, '<')) return 1;
    do {
        if (!grow(p, (void **)&n->at, &n->capat, n->nat, sizeof *n->at)) return 0;
        if (!attr(p, &n->at[n->nat])) return 0;
        n->nat++;
    } while (accept(p, ','));
    return expect(p, '>', "after the attributes");
}

/* ------------------------------------------------------------------ */
/* Nodes, functions.                                                    */

/* A list of names, "" or nothing between commas being an empty one (as
 * ONNX's IdList: `Op()` none, `Op(,x)` two, `Op(x,)` one). */
static int id_list(parser *p, ft_names *l) {
    for (;;) {
        int c = peek(p);
        size_t at = p->pos;
        const char *id = NULL;
        if (c == '"') {
            id = string_lit(p);
            if (!id) return 0;
        } else if (is_id_start(c)) {
            id = ident_opt(p);
            if (!id) return 0;
        } else if (c == ',') {
            id = "";
        } else {
            return 1;
        }
        if (!names_add(p, l, id, at)) return 0;
        if (!accept(p, ',')) return 1;
    }
}

static int node(parser *p, ft_node *n) {
    memset(n, 0, sizeof *n);
    if (accept(p, '[')) {
        if (peek(p) == '"') string_lit(p);
        else ident_opt(p);
        if (!expect(p, ']', "after the node name")) return 0;
    }
    size_t at = p->pos;
    if (!id_list(p, &n->out)) return 0;
    if (!n->out.n) {
        char b[48];
        return fail_at(p, at, "expected a node (`out = Op(in)`) or '}', found %s",
                       tok_desc(p, b, sizeof b));
    }
    if (!expect(p, '=', "after the node's outputs")) return 0;
    skip(p);
    n->pos = p->pos;
    const char *id = ident(p, "an op name");
    if (!id) return 0;
    size_t dlen = 0;
    char *dom = NULL;
    while (accept(p, '.')) {
        size_t l = strlen(id);
        char *nd = gwr_arena_alloc(p->a, dlen + l + 2);
        if (!nd) return oom(p);
        if (dlen) memcpy(nd, dom, dlen), nd[dlen++] = '.';
        memcpy(nd + dlen, id, l);
        dlen += l;
        dom = nd;
        skip(p);
        n->pos = p->pos;
        id = ident(p, "an op name after the domain");
        if (!id) return 0;
    }
    n->domain = dom ? dom : "";
    n->op = id;
    if (accept(p, ':')) {
        size_t ov = p->pos;
        if (!ident(p, "an overload name")) return 0;
        return fail_at(p, ov, "function overloads are not supported in rules");
    }
    if (!attr_list(p, n)) return 0;
    if (!expect(p, '(', "after the op name")) return 0;
    if (!id_list(p, &n->in)) return 0;
    if (!expect(p, ')', "after the node's inputs")) return 0;
    if (!n->nat && !attr_list(p, n)) return 0;
    return 1;
}

static int node_list(parser *p, ft_func *f) {
    if (!expect(p, '{', "to open the body")) return 0;
    while (!accept(p, '}')) {
        if (!peek(p)) return fail_at(p, p->pos, "expected '}' to close the body, found end of input");
        if (!grow(p, (void **)&f->nodes, &f->capnode, f->nnode, sizeof *f->nodes)) return 0;
        if (!node(p, &f->nodes[f->nnode])) return 0;
        f->nnode++;
    }
    return 1;
}

/* ( [type] name, ... ) */
static int io_list(parser *p, ft_names *l, const char *what) {
    if (!expect(p, '(', what)) return 0;
    if (accept(p, ')')) return 1;
    do {
        if (next_is_type(p) && !type(p, NULL, NULL)) return 0;
        skip(p);
        size_t at = p->pos;
        const char *id = quotable(p, "a name");
        if (!id) return 0;
        if (!names_add(p, l, id, at)) return 0;
    } while (accept(p, ','));
    return expect(p, ')', "after the names");
}

static int arrow(parser *p) {
    skip(p);
    if (p->pos + 1 < p->len && p->s[p->pos] == '=' && p->s[p->pos + 1] == '>') {
        p->pos += 2;
        return 1;
    }
    char b[48];
    return fail_at(p, p->pos, "expected '=>' between the inputs and the outputs, found %s",
                   tok_desc(p, b, sizeof b));
}

/* < type name [= value], ... > after a signature (value infos). */
static int value_infos(parser *p) {
    if (!accept(p, '<')) return 1;
    if (accept(p, '>')) return 1;
    do {
        ft_tensor t;
        memset(&t, 0, sizeof t);
        if (!type(p, NULL, NULL) || !quotable(p, "a name")) return 0;
    } while (accept(p, ','));
    return expect(p, '>', "after the value infos");
}

/* A graph-valued attribute: name (inputs) => (outputs) {nodes}. */
static int graph_body(parser *p, ft_func *g) {
    skip(p);
    g->pos = p->pos;
    g->name = quotable(p, "a graph name");
    if (!g->name) return 0;
    if (!io_list(p, &g->in, "to open the graph's inputs") || !arrow(p) ||
        !io_list(p, &g->out, "to open the graph's outputs") || !value_infos(p))
        return 0;
    return node_list(p, g);
}

static int opset_list(parser *p) {
    if (!expect(p, '[', "to open the opset list")) return 0;
    if (accept(p, ']')) return 1;
    do {
        literal d, v;
        if (!number_or_string(p, &d)) return 0;
        if (d.kind != 3) return fail_at(p, d.pos, "expected a domain string");
        if (!expect(p, ':', "after the domain")) return 0;
        if (!number_or_string(p, &v)) return 0;
        if (v.kind != 1) return fail_at(p, v.pos, "expected an opset version");
    } while (accept(p, ','));
    return expect(p, ']', "after the opset list");
}

static int function(parser *p, ft_func *f) {
    memset(f, 0, sizeof *f);
    if (accept(p, '<')) {
        do {
            skip(p);
            size_t at = p->pos;
            const char *k = ident(p, "a header key (domain, opset_import, doc_string, overload)");
            if (!k) return 0;
            if (!expect(p, ':', "after the header key")) return 0;
            if (!strcmp(k, "opset_import")) {
                if (!opset_list(p)) return 0;
            } else if (!strcmp(k, "domain") || !strcmp(k, "doc_string") ||
                       !strcmp(k, "overload")) {
                literal l;
                if (!number_or_string(p, &l)) return 0;
                if (l.kind != 3) return fail_at(p, l.pos, "expected a string");
            } else {
                return fail_at(p, at, "unknown function header key '%s'", k);
            }
        } while (accept(p, ','));
        if (!expect(p, '>', "to close the function header")) return 0;
    }
    skip(p);
    f->pos = p->pos;
    f->name = quotable(p, "a function name");
    if (!f->name) return 0;
    /* <attribute parameters>: names, or name [: type] = default */
    if (accept(p, '<')) {
        do {
            skip(p);
            size_t at = p->pos;
            const char *id = quotable(p, "an attribute parameter");
            if (!id) return 0;
            int c = peek(p);
            if (c == ':' || c == '=') {
                ft_attr a;
                memset(&a, 0, sizeof a);
                a.name = id;
                if (!attr_rest(p, &a)) return 0;
            }
            if (!names_add(p, &f->attrs, id, at)) return 0;
        } while (accept(p, ','));
        if (!expect(p, '>', "after the attribute parameters")) return 0;
    }
    if (!io_list(p, &f->in, "to open the function's inputs") || !arrow(p) ||
        !io_list(p, &f->out, "to open the function's outputs") || !value_infos(p))
        return 0;
    return node_list(p, f);
}

/* ------------------------------------------------------------------ */
/* Emission.                                                            */

typedef struct emitter {
    gwr_ft_rules *r;
    size_t cap;
    parser *p; /* errors go to the parser's slot */
    /* the pair being emitted */
    const ft_func *pat, *rep;
    /* onnx name -> emitted name, for tensors and attribute refs */
    gwr_strmap names;
    gwr_strmap used; /* emitted names taken */
    int nfresh;
} emitter;

static int put(emitter *e, const char *s, size_t n) {
    gwr_ft_rules *r = e->r;
    if (r->len + n + 1 > e->cap) {
        size_t nc = e->cap ? e->cap * 2 : 1024;
        while (nc < r->len + n + 1) nc *= 2;
        char *t = gwr_realloc(r->text, nc);
        if (!t) return oom(e->p);
        r->text = t;
        e->cap = nc;
    }
    memcpy(r->text + r->len, s, n);
    r->len += n;
    r->text[r->len] = 0;
    return 1;
}

static int puts_(emitter *e, const char *s) { return put(e, s, strlen(s)); }

static int putf(emitter *e, const char *fmt, ...) GWR_PRINTF(2, 3);
static int putf(emitter *e, const char *fmt, ...) {
    char b[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    if (n < 0) return 0;
    return put(e, b, (size_t)n < sizeof b ? (size_t)n : sizeof b - 1);
}

/* What is emitted from here on came from input offset `in`. */
static int mark(emitter *e, size_t in) {
    gwr_ft_rules *r = e->r;
    if (r->nspans && r->spans[r->nspans - 1].out == r->len) {
        r->spans[r->nspans - 1].in = in;
        return 1;
    }
    if (gwr_grow((void **)&r->spans, sizeof *r->spans, &r->cap, r->nspans + 1)) return oom(e->p);
    r->spans[r->nspans].out = r->len;
    r->spans[r->nspans++].in = in;
    return 1;
}

static int efail(emitter *e, size_t pos, const char *fmt, ...) GWR_PRINTF(3, 4);
static int efail(emitter *e, size_t pos, const char *fmt, ...) {
    char m[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    return fail_at(e->p, pos, "%s", m);
}

/* Words of the .rules language that cannot name a binding. */
static const char *const reserved[] = {
    "rule", "benefit", "phase", "target", "opset", "tol", "where", "and", "or", "not",
    "const", "none", "default", "rank", "shape", "dtype", "numel", "value", "is_const",
    "len", "compose", "inverse", "reshape", "transpose", "concat", "sqrt", "cast",
    "float", "f32", "f16", "f64", "bf16", "i8", "i16", "i32", "i64", "u8", "u16", "u32",
    "u64", "bool", "cleanup", "fold", "fuse", "lower", "onnx", "ort", "gwr", "true", "false",
};

static int is_reserved(const char *s) {
    for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++)
        if (!strcmp(s, reserved[i])) return 1;
    return 0;
}

/* The .rules name of ONNX name `onnx` (a tensor or an attribute ref): the
 * name itself when it is a lower-case identifier of no other use, else a
 * made-up `v_...` one. `kind` 't' or 'a' keeps the two namespaces apart. */
static const char *bind_name(emitter *e, const char *onnx, int kind) {
    size_t l = strlen(onnx);
    char *key = gwr_arena_alloc(e->p->a, l + 2);
    if (!key) return oom(e->p), NULL;
    key[0] = (char)kind;
    memcpy(key + 1, onnx, l + 1);
    const char *got = gwr_strmap_get(&e->names, key);
    if (got) return got;
    char buf[96];
    int ok = islower((unsigned char)onnx[0]) && l < 64 && !is_reserved(onnx) &&
             strcmp(onnx, "_") != 0;
    for (size_t i = 0; ok && i < l; i++) ok = is_id_char((unsigned char)onnx[i]);
    if (ok) {
        snprintf(buf, sizeof buf, "%s", onnx);
    } else {
        size_t k = (size_t)snprintf(buf, sizeof buf, "v_");
        for (size_t i = 0; i < l && k + 1 < 40; i++)
            buf[k++] = is_id_char((unsigned char)onnx[i]) ? onnx[i] : '_';
        buf[k] = 0;
    }
    if (gwr_strmap_get(&e->used, buf)) {
        size_t k = strlen(buf);
        do snprintf(buf + k, sizeof buf - k, "_%d", ++e->nfresh);
        while (gwr_strmap_get(&e->used, buf));
    }
    char *name = gwr_arena_strdup(e->p->a, buf);
    if (!name) return oom(e->p), NULL;
    if (gwr_strmap_put(&e->names, key, name) || gwr_strmap_put(&e->used, name, name))
        return oom(e->p), NULL;
    return name;
}

static int put_float(emitter *e, double v, size_t pos) {
    if (!isfinite(v)) return efail(e, pos, "infinite or NaN values cannot be written in a rule");
    char b[40];
    snprintf(b, sizeof b, "%.9g", v);
    if (!strpbrk(b, ".eE")) strcat(b, ".0");
    return puts_(e, b);
}

/* A string as .rules writes it: between quotes, no escapes. */
static int put_string(emitter *e, const char *s, size_t pos) {
    if (strpbrk(s, "\"\n\r"))
        return efail(e, pos, "a string holding a quote or a line break cannot be written in a rule");
    return puts_(e, "\"") && puts_(e, s) && puts_(e, "\"");
}

/* An attribute's value (not a ref). */
static int put_attr_value(emitter *e, const ft_attr *a) {
    switch (a->k) {
    case A_INT: return putf(e, "%lld", (long long)a->i);
    case A_FLOAT: return put_float(e, a->f, a->vpos);
    case A_STRING: return put_string(e, a->s, a->vpos);
    case A_INTS:
    case A_FLOATS:
    case A_STRINGS:
        if (!puts_(e, "[")) return 0;
        for (int i = 0; i < a->n; i++) {
            if (i && !puts_(e, ", ")) return 0;
            int ok = a->k == A_INTS     ? putf(e, "%lld", (long long)a->ints[i])
                     : a->k == A_FLOATS ? put_float(e, a->floats[i], a->vpos)
                                        : put_string(e, a->strs[i], a->vpos);
            if (!ok) return 0;
        }
        return puts_(e, "]");
    case A_TENSOR:
        return efail(e, a->vpos, "tensor-valued attribute '%s' is only supported on Constant",
                     a->name);
    default:
        return efail(e, a->vpos, "attribute '%s': graph and type values are not supported in rules",
                     a->name);
    }
}

/* An attribute ref's .rules name: in the pattern it binds, in the
 * replacement it must have been bound. */
static const char *ref_name(emitter *e, const ft_attr *a, int in_pattern) {
    char key[96];
    snprintf(key, sizeof key, "a%s", a->ref);
    if (!in_pattern && !gwr_strmap_get(&e->names, key)) {
        efail(e, a->vpos, "attribute reference '@%s' is not bound by the pattern '%s'", a->ref,
              e->pat->name);
        return NULL;
    }
    return bind_name(e, a->ref, 'a');
}

static int put_attrs(emitter *e, const ft_node *n, int in_pattern) {
    if (!n->nat) return 1;
    if (!puts_(e, "<")) return 0;
    for (int i = 0; i < n->nat; i++) {
        const ft_attr *a = &n->at[i];
        if (i && !puts_(e, ", ")) return 0;
        if (!mark(e, a->pos) || !putf(e, "%s=", a->name)) return 0;
        if (!mark(e, a->vpos)) return 0;
        if (a->k == A_REF) {
            const char *nm = ref_name(e, a, in_pattern);
            if (!nm || !puts_(e, nm)) return 0;
        } else if (!put_attr_value(e, a)) {
            return 0;
        }
    }
    return puts_(e, ">");
}

/* Index of the node of f producing `name` (its slot in *slot), or -1. */
static int producer(const ft_func *f, const char *name, int *slot) {
    for (int i = f->nnode - 1; i >= 0; i--)
        for (int s = 0; s < f->nodes[i].out.n; s++)
            if (!strcmp(f->nodes[i].out.v[s], name)) {
                *slot = s;
                return i;
            }
    return -1;
}

static int is_input(const ft_func *f, const char *name) {
    for (int i = 0; i < f->in.n; i++)
        if (!strcmp(f->in.v[i], name)) return 1;
    return 0;
}

static int default_domain(const char *d) { return !*d || !strcmp(d, "ai.onnx"); }

static const char *rules_dtype(int dt) {
    switch (dt) {
    case GWR_FLOAT32: return "f32";
    case GWR_FLOAT16: return "f16";
    case GWR_FLOAT64: return "f64";
    case GWR_BFLOAT16: return "bf16";
    case GWR_INT8: return "i8";
    case GWR_INT16: return "i16";
    case GWR_INT32: return "i32";
    case GWR_INT64: return "i64";
    case GWR_UINT8: return "u8";
    case GWR_UINT16: return "u16";
    case GWR_UINT32: return "u32";
    case GWR_UINT64: return "u64";
    case GWR_BOOL: return "bool";
    default: return NULL;
    }
}

/* A Constant node's value as a tensor (value, value_float(s), value_int(s)). */
static int constant_value(emitter *e, const ft_node *n, ft_tensor *t) {
    if (n->nat != 1)
        return efail(e, n->pos, "a Constant in a rule needs exactly one value attribute");
    const ft_attr *a = &n->at[0];
    memset(t, 0, sizeof *t);
    if (!strcmp(a->name, "value") && a->k == A_TENSOR) {
        *t = a->t;
        int64_t numel = 1;
        for (int i = 0; i < t->rank; i++) numel *= t->dims[i];
        if (t->n != numel)
            return efail(e, a->vpos, "the constant has %d values for %lld elements", t->n,
                         (long long)numel);
        if (!rules_dtype(t->dtype))
            return efail(e, a->vpos, "%s constants are not supported in rules",
                         gwr_dtype_name((gwr_dtype)t->dtype));
        if (t->dtype == GWR_FLOAT16 || t->dtype == GWR_BFLOAT16)
            return efail(e, a->vpos, "write the constant as float (16-bit values in ONNX text are raw bits)");
        return 1;
    }
    if (!strcmp(a->name, "value_float") && a->k == A_FLOAT) {
        t->dtype = GWR_FLOAT32;
        t->n = 1;
        t->v = (double *)&a->f;
        return 1;
    }
    if (!strcmp(a->name, "value_int") && a->k == A_INT) {
        t->dtype = GWR_INT64;
        t->n = 1;
        t->iv = (int64_t *)&a->i;
        t->v = gwr_arena_alloc(e->p->a, sizeof *t->v);
        if (!t->v) return oom(e->p);
        t->v[0] = (double)a->i;
        return 1;
    }
    if ((!strcmp(a->name, "value_floats") && a->k == A_FLOATS) ||
        (!strcmp(a->name, "value_ints") && a->k == A_INTS)) {
        t->dtype = a->k == A_FLOATS ? GWR_FLOAT32 : GWR_INT64;
        t->rank = 1;
        t->dims[0] = a->n;
        t->n = a->n;
        t->v = a->floats;
        t->iv = a->ints;
        return 1;
    }
    return efail(e, a->pos, "Constant attribute '%s' is not supported in rules", a->name);
}

static int put_number(emitter *e, const ft_tensor *t, int i, size_t pos) {
    if (gwr_dtype_is_float((gwr_dtype)t->dtype)) return put_float(e, t->v[i], pos);
    return putf(e, "%lld", (long long)t->iv[i]);
}

/* A pattern Constant: a literal (a constant equal to it everywhere). */
static int put_pattern_constant(emitter *e, const ft_node *n) {
    ft_tensor t;
    if (!constant_value(e, n, &t)) return 0;
    size_t vpos = n->at[0].vpos;
    if (t.n == 0) return efail(e, vpos, "an empty constant cannot be matched by a rule");
    for (int i = 1; i < t.n; i++)
        if (t.v[i] != t.v[0])
            return efail(e, vpos,
                         "a pattern constant must hold one value (every element equal): .rules "
                         "matches constants by value");
    if (!mark(e, n->pos)) return 0;
    return put_number(e, &t, 0, vpos);
}

/* A replacement Constant: a computed constant of its dtype and shape. */
static int put_replacement_constant(emitter *e, const ft_node *n) {
    ft_tensor t;
    if (!constant_value(e, n, &t)) return 0;
    size_t vpos = n->at[0].vpos;
    if (!mark(e, n->pos)) return 0;
    int isf = t.dtype == GWR_FLOAT32; /* a float32 literal follows its operand */
    if (t.rank > 1 && !puts_(e, "reshape(")) return 0;
    if (!isf && !puts_(e, "cast(")) return 0;
    if (t.rank == 0) {
        if (!put_number(e, &t, 0, vpos)) return 0;
    } else {
        if (!puts_(e, "[")) return 0;
        for (int i = 0; i < t.n; i++)
            if ((i && !puts_(e, ", ")) || !put_number(e, &t, i, vpos)) return 0;
        if (!puts_(e, "]")) return 0;
    }
    if (!isf && !putf(e, ", %s)", rules_dtype(t.dtype))) return 0;
    if (t.rank > 1) {
        if (!puts_(e, ", [")) return 0;
        for (int i = 0; i < t.rank; i++)
            if (!putf(e, "%s%lld", i ? ", " : "", (long long)t.dims[i])) return 0;
        if (!puts_(e, "])")) return 0;
    }
    return 1;
}

static int put_node(emitter *e, const ft_func *f, int k, int in_pattern);

/* The .rules name of a pattern node read more than once (n@Op), made
 * from its first output's name. */
static const char *node_name(emitter *e, const ft_node *n) {
    for (int s = 0; s < n->out.n; s++)
        if (*n->out.v[s]) return bind_name(e, n->out.v[s], 'n');
    return bind_name(e, "node", 'n');
}

/* A value used at input offset `pos` of function f. */
static int put_value(emitter *e, const ft_func *f, const char *name, size_t pos, int in_pattern) {
    if (!*name) return mark(e, pos) && puts_(e, "none");
    if (is_input(f, name)) {
        if (!in_pattern && !is_input(e->pat, name)) {
            /* replacement inputs are the pattern's inputs of the same name */
            for (int i = 0; i < f->in.n; i++)
                if (!strcmp(f->in.v[i], name)) pos = f->in.pos[i];
            return efail(e, pos, "replacement input '%s' is not an input of the pattern '%s'",
                         name, e->pat->name);
        }
        const char *nm = bind_name(e, name, 't');
        return nm && mark(e, pos) && puts_(e, nm);
    }
    int slot;
    int k = producer(f, name, &slot);
    if (k < 0)
        return efail(e, pos, "'%s' is neither an input of '%s' nor an output of one of its nodes",
                     name, f->name);
    const ft_node *n = &f->nodes[k];
    if (n->state == 1) return efail(e, pos, "'%s' depends on itself (a cycle)", name);
    if (n->state == 2 && in_pattern) { /* read again: the named node (n@Op) */
        const char *nm = node_name(e, n);
        if (!nm || !mark(e, pos) || !puts_(e, nm)) return 0;
    } else if (!put_node(e, f, k, in_pattern)) {
        return 0;
    }
    int nout = 0;
    for (int s = 0; s < n->out.n; s++) nout += n->out.v[s][0] != 0;
    if (slot > 0 || nout > 1) return putf(e, "[%d]", slot);
    return 1;
}

static int put_node(emitter *e, const ft_func *f, int k, int in_pattern) {
    ft_node *n = &f->nodes[k];
    int is_const = default_domain(n->domain) && !strcmp(n->op, "Constant") && !n->in.n;
    if (is_const)
        return in_pattern ? put_pattern_constant(e, n) : put_replacement_constant(e, n);
    n->state = 1;
    if (!mark(e, n->pos)) return 0;
    if (in_pattern && n->reads > 1) { /* read again later: named, the later reads name it */
        const char *nm = node_name(e, n);
        if (!nm || !putf(e, "%s@", nm)) return 0;
    }
    if (!default_domain(n->domain) && !putf(e, "%s::", n->domain)) return 0;
    if (!puts_(e, n->op) || !put_attrs(e, n, in_pattern) || !puts_(e, "(")) return 0;
    for (int i = 0; i < n->in.n; i++) {
        if (i && !puts_(e, ", ")) return 0;
        if (!put_value(e, f, n->in.v[i], n->in.pos[i], in_pattern)) return 0;
    }
    n->state = 2;
    return puts_(e, ")");
}

/* The node whose outputs 0..k-1 are f's outputs (the root), or -1 with
 * *direct set when f's only output is one of its inputs. */
static int root_of(emitter *e, const ft_func *f, int *direct, const char *role) {
    *direct = 0;
    if (!f->out.n) return efail(e, f->pos, "the %s '%s' has no outputs", role, f->name), -2;
    if (f->out.n == 1 && is_input(f, f->out.v[0])) {
        *direct = 1;
        return -1;
    }
    int slot, k = producer(f, f->out.v[0], &slot);
    if (k < 0)
        return efail(e, f->out.pos[0], "output '%s' of '%s' is not computed by any node",
                     f->out.v[0], f->name), -2;
    for (int i = 0; i < f->out.n; i++) {
        int s2, k2 = producer(f, f->out.v[i], &s2);
        if (k2 != k || s2 != i)
            return efail(e, f->out.pos[i],
                         "the outputs of '%s' must be the outputs of one node, in order (a rule "
                         "has one root)", f->name), -2;
    }
    return k;
}

/* Marks the nodes reachable from value `name`. */
static void reach(const ft_func *f, const char *name, char *seen) {
    int slot, k = producer(f, name, &slot);
    if (k < 0 || seen[k]) return;
    seen[k] = 1;
    for (int i = 0; i < f->nodes[k].in.n; i++) reach(f, f->nodes[k].in.v[i], seen);
}

static int check_reachable(emitter *e, const ft_func *f) {
    char *seen = gwr_arena_alloc(e->p->a, (size_t)f->nnode + 1);
    if (!seen) return oom(e->p);
    for (int i = 0; i < f->out.n; i++) reach(f, f->out.v[i], seen);
    for (int i = 0; i < f->nnode; i++)
        if (!seen[i])
            return efail(e, f->nodes[i].pos,
                         "this node of '%s' does not lead to its outputs", f->name);
    return 1;
}

static int rule_name(emitter *e, const ft_func *pat) {
    char b[96];
    size_t l = strlen(pat->name), k = 0;
    const char *suffix = "_pattern";
    size_t sl = strlen(suffix);
    if (l > sl && !strcmp(pat->name + l - sl, suffix)) l -= sl;
    if (!is_id_start((unsigned char)pat->name[0])) b[k++] = 'r', b[k++] = '_';
    for (size_t i = 0; i < l && k + 1 < sizeof b; i++)
        b[k++] = is_id_char((unsigned char)pat->name[i]) ? pat->name[i] : '_';
    b[k] = 0;
    return mark(e, pat->pos) && putf(e, "rule %s:\n  ", b);
}

static int emit_pair(emitter *e, const ft_func *pat, const ft_func *rep) {
    e->pat = pat;
    e->rep = rep;
    gwr_strmap_free(&e->names);
    gwr_strmap_free(&e->used);
    memset(&e->names, 0, sizeof e->names);
    memset(&e->used, 0, sizeof e->used);
    int direct;
    if (!pat->nnode) return efail(e, pat->pos, "the pattern '%s' has no nodes", pat->name);
    int pk = root_of(e, pat, &direct, "pattern");
    if (pk == -2) return 0;
    if (direct)
        return efail(e, pat->out.pos[0], "the pattern '%s' returns its input: nothing to match",
                     pat->name);
    if (!check_reachable(e, pat) || !check_reachable(e, rep)) return 0;
    /* tensor names first, so that a replacement of the same names reuses them */
    for (int i = 0; i < pat->in.n; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(pat->in.v[i], pat->in.v[j]))
                return efail(e, pat->in.pos[i], "input '%s' is declared twice", pat->in.v[i]);
    if (rep->out.n != pat->out.n)
        return efail(e, rep->pos,
                     "the replacement '%s' has %d outputs, the pattern '%s' has %d", rep->name,
                     rep->out.n, pat->name, pat->out.n);
    if (!rule_name(e, pat)) return 0;
    for (int i = 0; i < pat->nnode; i++) pat->nodes[i].reads = 0;
    for (int i = 0; i < pat->nnode; i++)
        for (int j = 0; j < pat->nodes[i].in.n; j++) {
            int slot, k = *pat->nodes[i].in.v[j] ? producer(pat, pat->nodes[i].in.v[j], &slot) : -1;
            if (k >= 0) pat->nodes[k].reads++;
        }
    if (!put_node(e, pat, pk, 1)) return 0;
    if (!mark(e, rep->pos) || !puts_(e, "  =>  ")) return 0;
    int rk = root_of(e, rep, &direct, "replacement");
    if (rk == -2) return 0;
    if (direct) {
        if (!put_value(e, rep, rep->out.v[0], rep->out.pos[0], 0)) return 0;
    } else if (!put_node(e, rep, rk, 0)) {
        return 0;
    }
    return puts_(e, "\n");
}

/* ------------------------------------------------------------------ */
/* Entry points.                                                        */

void gwr_ft_rules_free(gwr_ft_rules *r) {
    if (!r) return;
    gwr_free(r->text);
    gwr_free(r->spans);
    memset(r, 0, sizeof *r);
}

size_t gwr_ft_input_offset(const gwr_ft_rules *r, size_t out_off) {
    int64_t lo = 0, hi = r->nspans - 1, best = -1;
    while (lo <= hi) {
        int64_t mid = (lo + hi) / 2;
        if (r->spans[mid].out <= out_off) best = mid, lo = mid + 1;
        else hi = mid - 1;
    }
    return best < 0 ? 0 : r->spans[best].in;
}

gwr_status gwr_ft_to_rules(const char *text, gwr_ft_rules *out, size_t *err_off, char *msg) {
    memset(out, 0, sizeof *out);
    *err_off = 0;
    msg[0] = 0;
    gwr_arena arena;
    gwr_arena_init(&arena);
    parser p = {.s = text, .len = strlen(text), .a = &arena};
    emitter e = {.r = out, .p = &p};
    ft_func *fs = NULL;
    int nf = 0, capf = 0;
    while (peek(&p)) {
        if (!grow(&p, (void **)&fs, &capf, nf, sizeof *fs)) break;
        if (!function(&p, &fs[nf])) break;
        nf++;
    }
    if (!p.failed && nf == 0) fail_at(&p, p.pos, "no function: expected a pattern and its replacement");
    if (!p.failed && nf % 2)
        fail_at(&p, fs[nf - 1].pos,
                "the pattern '%s' has no replacement: functions come in pairs (pattern, then "
                "replacement)", fs[nf - 1].name);
    if (!p.failed && !puts_(&e, "# rules from ONNX function text\n")) fail_at(&p, 0, "out of memory");
    for (int i = 0; i + 1 < nf && !p.failed; i += 2) {
        if (emit_pair(&e, &fs[i], &fs[i + 1])) out->nrules++;
    }
    gwr_strmap_free(&e.names);
    gwr_strmap_free(&e.used);
    gwr_status st = GWR_OK;
    if (p.failed) {
        st = strcmp(p.emsg, "out of memory") ? GWR_ERR_PARSE : GWR_ERR_NOMEM;
        *err_off = p.epos;
        memcpy(msg, p.emsg, sizeof p.emsg);
        gwr_ft_rules_free(out);
    }
    gwr_arena_free(&arena);
    return st;
}

/* Skips a bracketed group opening at p->pos (strings inside skipped): 0
 * when it does not close. */
static int skip_group(parser *p, char open, char close) {
    int depth = 0;
    for (; p->pos < p->len; p->pos++) {
        char ch = p->s[p->pos];
        if (ch == '"') {
            while (++p->pos < p->len && p->s[p->pos] != '"')
                if (p->s[p->pos] == '\\') p->pos++;
        } else if (ch == open) {
            depth++;
        } else if (ch == close && --depth == 0) {
            p->pos++;
            return 1;
        }
    }
    return 0;
}

int gwr_ft_looks_like_functions(const char *text) {
    parser p = {.s = text, .len = strlen(text)};
    int c = peek(&p);
    if (c == '<') return 1; /* a function header; .rules never starts so */
    /* name [<attrs>] (inputs) => (outputs) [<value infos>] { */
    if (c == '"') {
        while (++p.pos < p.len && p.s[p.pos] != '"')
            if (p.s[p.pos] == '\\') p.pos++;
        if (p.pos++ >= p.len) return 0;
    } else if (is_id_start(c)) {
        size_t from = p.pos;
        while (p.pos < p.len && is_id_char((unsigned char)p.s[p.pos])) p.pos++;
        if (p.pos - from == 4 && !strncmp(text + from, "rule", 4)) return 0;
    } else {
        return 0;
    }
    if (peek(&p) == '<' && !skip_group(&p, '<', '>')) return 0;
    if (peek(&p) != '(' || !skip_group(&p, '(', ')')) return 0;
    if (peek(&p) != '=' || p.pos + 1 >= p.len || p.s[p.pos + 1] != '>') return 0;
    p.pos += 2;
    if (peek(&p) != '(' || !skip_group(&p, '(', ')')) return 0;
    if (peek(&p) == '<' && !skip_group(&p, '<', '>')) return 0;
    return peek(&p) == '{';
}
