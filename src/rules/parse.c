/* parse.c - the lexer and parser of the .rules language (docs/rules.md):
 *
 *   rule NAME [benefit N] [phase P] [target a,b] [opset N] [tol T]:
 *       PATTERN => REPLACEMENT [where COND]...
 *
 * Newlines are whitespace: a rule runs to the next `rule` keyword; `where`
 * ends an expression. One grammar serves the pattern, the replacement and
 * the where clauses (precedence: | < or < and < not < comparisons < + - <
 * * / < unary - < postfix [i] .attr ? ... < primary); what is allowed
 * where is checked by compile.c. Errors stop at the first refusal. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gwr/passes.h"
#include "rules/rules_internal.h"

/* ---- the arena ----------------------------------------------------------------- */

struct rl_block {
    struct rl_block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void *rl_alloc(rl_arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    struct rl_block *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > 8192 ? n : 8192;
        b = gwr_malloc(sizeof *b + cap);
        if (!b) return NULL;
        b->next = a->head, b->used = 0, b->cap = cap;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

char *rl_strndup(rl_arena *a, const char *s, size_t n) {
    char *p = rl_alloc(a, n + 1);
    if (p) memcpy(p, s, n), p[n] = 0;
    return p;
}

void rl_arena_free(rl_arena *a) {
    while (a->head) {
        struct rl_block *n = a->head->next;
        gwr_free(a->head);
        a->head = n;
    }
}

/* ---- errors ------------------------------------------------------------------------ */

gwr_status rl_fail(rl_error *e, int line, int col, const char *fmt, ...) {
    if (e->line) return GWR_ERR_PARSE; /* the first refusal stays */
    e->line = line, e->col = col;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return GWR_ERR_PARSE;
}

gwr_status rl_error_finish(const rl_error *e, const char *text, const char *filename) {
    const char *p = text ? text : "";
    for (int l = 1; l < e->line && *p; p++)
        if (*p == '\n') l++;
    const char *end = strchr(p, '\n');
    int len = end ? (int)(end - p) : (int)strlen(p);
    if (len > 0 && p[len - 1] == '\r') len--;
    if (len > 400) len = 400;
    char caret[420];
    int k = 0;
    for (; k < e->col - 1 && k < 400; k++) caret[k] = k < len && p[k] == '\t' ? '\t' : ' ';
    caret[k++] = '^';
    caret[k] = 0;
    return gwr_set_last_error(GWR_ERR_PARSE, "%s:%d:%d: %s\n%.*s\n%s", filename ? filename : "<string>", e->line, e->col,
                              e->msg, len, p, caret);
}

/* ---- the lexer ------------------------------------------------------------------------ */

typedef enum tok_kind {
    T_EOF, T_IDENT, T_NUM, T_STR, T_ARROW, T_EQ, T_NE, T_LE, T_GE, T_ELLIPSIS, T_DOTDOT, T_PUNCT
} tok_kind;

typedef struct token {
    tok_kind kind;
    const char *p;   /* start in the text */
    int len;
    int line, col;
    double num;
    int is_float;
    char c;          /* T_PUNCT */
} token;

typedef struct parser {
    gwr_rules *set;
    rl_arena *a;
    const char *src;
    const char *p;
    int line;
    const char *line_start;
    token tok, next;  /* current and one look-ahead */
    rl_error *e;
    int angle;        /* inside <...> at this nesting: '>' closes */
    int pattern;      /* parsing a pattern: '|' separates alternatives */
} parser;

static int is_id0(int c) { return isalpha(c) || c == '_'; }
static int is_id(int c) { return isalnum(c) || c == '_'; }

static gwr_status lex(parser *ps, token *t) {
    const char *p = ps->p;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') {
            if (*p == '\n') ps->line++, ps->line_start = p + 1;
            p++;
        }
        if (*p == '#') {
            while (*p && *p != '\n') p++;
            continue;
        }
        break;
    }
    memset(t, 0, sizeof *t);
    t->p = p, t->line = ps->line, t->col = (int)(p - ps->line_start) + 1;
    if (!*p) {
        t->kind = T_EOF;
        ps->p = p;
        return GWR_OK;
    }
    if (is_id0((unsigned char)*p)) {
        /* A domain-qualified op: com.microsoft::FusedConv, gwr::X */
        const char *q = p;
        while (is_id((unsigned char)*q) || (*q == '.' && is_id0((unsigned char)q[1]))) q++;
        if (q[0] == ':' && q[1] == ':' && is_id0((unsigned char)q[2])) {
            q += 2;
            while (is_id((unsigned char)*q)) q++;
        } else {
            q = p;
            while (is_id((unsigned char)*q)) q++;
        }
        t->kind = T_IDENT, t->len = (int)(q - p);
        ps->p = q;
        return GWR_OK;
    }
    if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
        const char *q = p;
        while (isdigit((unsigned char)*q)) q++;
        if (*q == '.' && q[1] != '.') {
            t->is_float = 1;
            q++;
            while (isdigit((unsigned char)*q)) q++;
        }
        if ((*q == 'e' || *q == 'E') && (isdigit((unsigned char)q[1]) || ((q[1] == '-' || q[1] == '+') && isdigit((unsigned char)q[2])))) {
            t->is_float = 1;
            q += 2;
            while (isdigit((unsigned char)*q)) q++;
        }
        if (is_id((unsigned char)*q)) return rl_fail(ps->e, t->line, t->col, "malformed number");
        char buf[64];
        int n = (int)(q - p) < 63 ? (int)(q - p) : 63;
        memcpy(buf, p, (size_t)n), buf[n] = 0;
        t->num = strtod(buf, NULL);
        t->kind = T_NUM, t->len = (int)(q - p);
        ps->p = q;
        return GWR_OK;
    }
    if (*p == '"') {
        const char *q = p + 1;
        while (*q && *q != '"' && *q != '\n') q++;
        if (*q != '"') return rl_fail(ps->e, t->line, t->col, "unterminated string");
        t->kind = T_STR, t->len = (int)(q + 1 - p);
        ps->p = q + 1;
        return GWR_OK;
    }
    static const struct { const char *s; tok_kind k; } two[] = {
        {"=>", T_ARROW}, {"==", T_EQ}, {"!=", T_NE}, {"<=", T_LE}, {">=", T_GE}, {"...", T_ELLIPSIS}, {"..", T_DOTDOT}};
    for (size_t i = 0; i < sizeof two / sizeof two[0]; i++) {
        size_t n = strlen(two[i].s);
        if (!strncmp(p, two[i].s, n)) {
            /* `<=` inside <...> would be an attribute `<` then `=`: never written so */
            t->kind = two[i].k, t->len = (int)n;
            ps->p = p + n;
            return GWR_OK;
        }
    }
    if (strchr("()[]<>,:|~@=!?+-*/.", *p)) {
        t->kind = T_PUNCT, t->c = *p, t->len = 1;
        ps->p = p + 1;
        return GWR_OK;
    }
    return rl_fail(ps->e, t->line, t->col, "unexpected character '%c'", *p);
}

static gwr_status advance(parser *ps) {
    ps->tok = ps->next;
    if (ps->tok.kind == T_EOF) return GWR_OK;
    return lex(ps, &ps->next);
}

static int is_punct(const token *t, char c) { return t->kind == T_PUNCT && t->c == c; }
static int is_word(const token *t, const char *w) {
    return t->kind == T_IDENT && (int)strlen(w) == t->len && !strncmp(t->p, w, (size_t)t->len);
}
static int is_keyword(const token *t) {
    return is_word(t, "rule") || is_word(t, "where") || is_word(t, "and") || is_word(t, "or") || is_word(t, "not");
}

static const char *tok_text(parser *ps, const token *t) { return rl_strndup(ps->a, t->p, (size_t)t->len); }

static gwr_status unexpected(parser *ps, const char *what) {
    const token *t = &ps->tok;
    if (t->kind == T_EOF) return rl_fail(ps->e, t->line, t->col, "expected %s, found the end of the file", what);
    return rl_fail(ps->e, t->line, t->col, "expected %s, found '%.*s'", what, t->len > 40 ? 40 : t->len, t->p);
}

static gwr_status expect(parser *ps, char c, const char *what) {
    if (!is_punct(&ps->tok, c)) return unexpected(ps, what);
    return advance(ps);
}

#define TRY(x)                      \
    do {                            \
        gwr_status s_ = (x);        \
        if (s_) return s_;          \
    } while (0)
#define NOMEM(ps) rl_fail((ps)->e, (ps)->tok.line, (ps)->tok.col, "out of memory")

static rl_expr *node_at(parser *ps, rl_kind k, const token *t) {
    rl_expr *x = rl_alloc(ps->a, sizeof *x);
    if (!x) return NULL;
    x->kind = k, x->line = t->line, x->col = t->col;
    x->rank_lo = x->rank_hi = -1, x->nshape = -1;
    return x;
}

/* A growing array of expressions in the arena. */
typedef struct xlist {
    rl_expr **v;
    int n, cap;
} xlist;

static int xpush(parser *ps, xlist *l, rl_expr *x) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 4;
        rl_expr **v = rl_alloc(ps->a, (size_t)cap * sizeof *v);
        if (!v) return -1;
        if (l->n) memcpy(v, l->v, (size_t)l->n * sizeof *v);
        l->v = v, l->cap = cap;
    }
    l->v[l->n++] = x;
    return 0;
}

static gwr_status parse_expr(parser *ps, rl_expr **out);

/* Comma-separated expressions up to `close`; '>' and '|' act normally inside. */
static gwr_status parse_list(parser *ps, char close, xlist *l) {
    int angle = ps->angle;
    ps->angle = 0;
    while (!is_punct(&ps->tok, close)) {
        rl_expr *x;
        TRY(parse_expr(ps, &x));
        if (xpush(ps, l, x)) return NOMEM(ps);
        if (is_punct(&ps->tok, ',')) TRY(advance(ps));
        else if (!is_punct(&ps->tok, close)) {
            char what[32];
            snprintf(what, sizeof what, "',' or '%c'", close);
            return unexpected(ps, what);
        }
    }
    ps->angle = angle;
    return advance(ps);
}

static int is_op_name(const token *t) {
    if (t->kind != T_IDENT) return 0;
    if (memchr(t->p, ':', (size_t)t->len)) return 1;
    return isupper((unsigned char)t->p[0]);
}

/* `<attr=EXPR, attr=name default LIT, attr=!, ...n>` */
static gwr_status parse_attrs(parser *ps, rl_expr *op) {
    TRY(advance(ps)); /* '<' */
    rl_attr *v = NULL;
    int n = 0, cap = 0;
    while (!is_punct(&ps->tok, '>')) {
        if (ps->tok.kind == T_ELLIPSIS) {
            TRY(advance(ps));
            if (ps->tok.kind != T_IDENT) return unexpected(ps, "a node name after '...'");
            op->copy = tok_text(ps, &ps->tok);
            TRY(advance(ps));
        } else {
            if (ps->tok.kind != T_IDENT) return unexpected(ps, "an attribute name");
            if (n == cap) {
                int nc = cap ? 2 * cap : 4;
                rl_attr *nv = rl_alloc(ps->a, (size_t)nc * sizeof *nv);
                if (!nv) return NOMEM(ps);
                if (n) memcpy(nv, v, (size_t)n * sizeof *nv);
                v = nv, cap = nc;
            }
            rl_attr *at = &v[n++];
            at->name = tok_text(ps, &ps->tok);
            at->line = ps->tok.line, at->col = ps->tok.col;
            TRY(advance(ps));
            TRY(expect(ps, '=', "'=' after the attribute name"));
            if (is_punct(&ps->tok, '!')) {
                at->absent = 1;
                TRY(advance(ps));
            } else {
                int angle = ps->angle, pat = ps->pattern;
                ps->angle = 1, ps->pattern = 0;
                TRY(parse_expr(ps, &at->val));
                if (is_word(&ps->tok, "default")) {
                    TRY(advance(ps));
                    TRY(parse_expr(ps, &at->def));
                }
                ps->angle = angle, ps->pattern = pat;
            }
        }
        if (is_punct(&ps->tok, ',')) TRY(advance(ps));
        else if (!is_punct(&ps->tok, '>')) return unexpected(ps, "',' or '>'");
    }
    op->attrs = v, op->nattrs = n;
    return advance(ps);
}

/* Ops: Name, dom::Name, Relu|Sigmoid|Tanh, then <attrs>, (inputs), [k]. */
static gwr_status parse_op(parser *ps, rl_expr **out, const char *node) {
    rl_expr *x = node_at(ps, RL_OP, &ps->tok);
    if (!x) return NOMEM(ps);
    const char *names[GWR_MATCH_MAX_NODES];
    int n = 0;
    for (;;) {
        if (n == GWR_MATCH_MAX_NODES) return rl_fail(ps->e, ps->tok.line, ps->tok.col, "too many alternative ops");
        names[n++] = tok_text(ps, &ps->tok);
        TRY(advance(ps));
        if (is_punct(&ps->tok, '|') && is_op_name(&ps->next)) {
            TRY(advance(ps));
            continue;
        }
        break;
    }
    x->ops = rl_alloc(ps->a, (size_t)n * sizeof *x->ops);
    if (!x->ops) return NOMEM(ps);
    memcpy(x->ops, names, (size_t)n * sizeof *names);
    x->nops = n, x->node = node;
    if (is_punct(&ps->tok, '<')) TRY(parse_attrs(ps, x));
    if (!is_punct(&ps->tok, '(')) return unexpected(ps, "'(' and the op's inputs");
    TRY(advance(ps));
    xlist l = {0};
    TRY(parse_list(ps, ')', &l));
    x->a = l.v, x->na = l.n;
    if (is_punct(&ps->tok, '[') && ps->next.kind == T_NUM && !ps->next.is_float) {
        TRY(advance(ps));
        x->out = (int)ps->tok.num;
        TRY(advance(ps));
        TRY(expect(ps, ']', "']'"));
    }
    *out = x;
    return GWR_OK;
}

static int dtype_bits_of(const char *w, uint32_t *bits) {
    static const struct { const char *n; gwr_dtype d; } names[] = {
        {"f16", GWR_FLOAT16}, {"f32", GWR_FLOAT32}, {"f64", GWR_FLOAT64}, {"bf16", GWR_BFLOAT16},
        {"i8", GWR_INT8}, {"i16", GWR_INT16}, {"i32", GWR_INT32}, {"i64", GWR_INT64},
        {"u8", GWR_UINT8}, {"u16", GWR_UINT16}, {"u32", GWR_UINT32}, {"u64", GWR_UINT64}, {"bool", GWR_BOOL}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(w, names[i].n)) return *bits |= 1u << names[i].d, 1;
    if (!strcmp(w, "float")) {
        *bits |= 1u << GWR_FLOAT16 | 1u << GWR_FLOAT32 | 1u << GWR_FLOAT64 | 1u << GWR_BFLOAT16;
        return 1;
    }
    if (!strcmp(w, "int")) {
        *bits |= 1u << GWR_INT8 | 1u << GWR_INT16 | 1u << GWR_INT32 | 1u << GWR_INT64 | 1u << GWR_UINT8 |
                 1u << GWR_UINT16 | 1u << GWR_UINT32 | 1u << GWR_UINT64;
        return 1;
    }
    gwr_dtype d = gwr_dtype_from_name(w);
    if (d != GWR_UNDEFINED && d < 32) return *bits |= 1u << d, 1;
    return 0;
}


int rl_dtype_name_bits(const char *w, uint32_t *bits) { return dtype_bits_of(w, bits); }

static gwr_status parse_int_tok(parser *ps, int *v, const char *what) {
    if (ps->tok.kind != T_NUM || ps->tok.is_float) return unexpected(ps, what);
    *v = (int)ps->tok.num;
    return advance(ps);
}

/* After `name :` - const, dtypes, rank N[..M], shape [..] in any order. */
static gwr_status parse_constraints(parser *ps, rl_expr *x) {
    int any = 0;
    for (;;) {
        const token *t = &ps->tok;
        if (is_word(t, "const")) {
            x->is_const = 1;
            TRY(advance(ps));
        } else if (is_word(t, "rank")) {
            TRY(advance(ps));
            TRY(parse_int_tok(ps, &x->rank_lo, "a rank"));
            x->rank_hi = x->rank_lo;
            if (ps->tok.kind == T_DOTDOT) {
                TRY(advance(ps));
                TRY(parse_int_tok(ps, &x->rank_hi, "the highest rank"));
            }
        } else if (is_word(t, "shape")) {
            TRY(advance(ps));
            if (!is_punct(&ps->tok, '[')) return unexpected(ps, "'[' and the dims");
            TRY(advance(ps));
            xlist l = {0};
            TRY(parse_list(ps, ']', &l));
            for (int i = 0; i < l.n; i++)
                if (l.v[i]->kind != RL_NAME && l.v[i]->kind != RL_ANY && (l.v[i]->kind != RL_NUM || l.v[i]->is_float))
                    return rl_fail(ps->e, l.v[i]->line, l.v[i]->col, "a dim is a name, '_' or an integer");
            x->shape = l.v, x->nshape = l.n;
        } else if (t->kind == T_IDENT) {
            char w[32];
            snprintf(w, sizeof w, "%.*s", t->len, t->p);
            if (!dtype_bits_of(w, &x->dtypes)) {
                if (any) break;
                return rl_fail(ps->e, t->line, t->col, "unknown constraint '%s' (const, a dtype, rank or shape)", w);
            }
            TRY(advance(ps));
            while (is_punct(&ps->tok, '|') && ps->next.kind == T_IDENT) {
                TRY(advance(ps));
                snprintf(w, sizeof w, "%.*s", ps->tok.len, ps->tok.p);
                if (!dtype_bits_of(w, &x->dtypes)) return rl_fail(ps->e, ps->tok.line, ps->tok.col, "unknown dtype '%s'", w);
                TRY(advance(ps));
            }
        } else {
            if (any) break;
            return unexpected(ps, "a constraint (const, a dtype, rank or shape)");
        }
        any = 1;
    }
    return GWR_OK;
}

static gwr_status parse_primary(parser *ps, rl_expr **out) {
    token t = ps->tok;
    rl_expr *x = NULL;
    if (t.kind == T_NUM) {
        if (!(x = node_at(ps, RL_NUM, &t))) return NOMEM(ps);
        x->num = t.num, x->is_float = t.is_float;
        TRY(advance(ps));
    } else if (t.kind == T_STR) {
        if (!(x = node_at(ps, RL_STR, &t))) return NOMEM(ps);
        x->s = rl_strndup(ps->a, t.p + 1, (size_t)t.len - 2);
        TRY(advance(ps));
    } else if (is_punct(&t, '[')) {
        if (!(x = node_at(ps, RL_LIST, &t))) return NOMEM(ps);
        TRY(advance(ps));
        xlist l = {0};
        TRY(parse_list(ps, ']', &l));
        x->a = l.v, x->na = l.n;
    } else if (is_punct(&t, '(')) {
        TRY(advance(ps));
        int angle = ps->angle;
        ps->angle = 0;
        TRY(parse_expr(ps, &x));
        ps->angle = angle;
        TRY(expect(ps, ')', "')'"));
    } else if (t.kind == T_IDENT && !is_keyword(&t)) {
        if (ps->next.kind == T_PUNCT && ps->next.c == '@') {
            const char *node = tok_text(ps, &t);
            TRY(advance(ps));
            TRY(advance(ps));
            if (!is_op_name(&ps->tok)) return unexpected(ps, "an op after '@'");
            return parse_op(ps, out, node);
        }
        if (is_op_name(&t) && (is_punct(&ps->next, '(') || is_punct(&ps->next, '<') ||
                               (is_punct(&ps->next, '|') && ps->pattern))) {
            if (is_punct(&ps->next, '|')) {
                /* Relu|Sigmoid(x): an op list only when an op name follows */
                const char *q = ps->next.p + 1;
                while (*q == ' ' || *q == '\t') q++;
                if (!isupper((unsigned char)*q) && !isalpha((unsigned char)*q)) goto name;
            }
            return parse_op(ps, out, NULL);
        }
        if (is_punct(&ps->next, '(') && !is_op_name(&t)) {
            if (!(x = node_at(ps, RL_CALL, &t))) return NOMEM(ps);
            x->s = tok_text(ps, &t);
            TRY(advance(ps));
            TRY(advance(ps));
            xlist l = {0};
            TRY(parse_list(ps, ')', &l));
            x->a = l.v, x->na = l.n;
            *out = x;
            return GWR_OK;
        }
    name:
        if (is_word(&t, "_")) x = node_at(ps, RL_ANY, &t);
        else if (is_word(&t, "none")) x = node_at(ps, RL_NONE, &t);
        else if ((x = node_at(ps, RL_NAME, &t))) x->s = tok_text(ps, &t);
        if (!x) return NOMEM(ps);
        TRY(advance(ps));
        if (ps->pattern && x->kind == RL_NAME && is_punct(&ps->tok, '~')) {
            TRY(advance(ps));
            int neg = 0;
            if (is_punct(&ps->tok, '-')) {
                neg = 1;
                TRY(advance(ps));
            }
            if (ps->tok.kind != T_NUM) return unexpected(ps, "a number after '~'");
            x->has_tilde = x->is_const = 1, x->tilde_v = neg ? -ps->tok.num : ps->tok.num;
            x->tilde_tol = 1e-6 * fmax(1.0, fabs(x->tilde_v));
            TRY(advance(ps));
            if (is_word(&ps->tok, "tol")) {
                TRY(advance(ps));
                if (ps->tok.kind != T_NUM) return unexpected(ps, "a tolerance after 'tol'");
                x->tilde_tol = ps->tok.num;
                TRY(advance(ps));
            }
        }
        if (ps->pattern && x->kind == RL_NAME && is_punct(&ps->tok, ':')) {
            TRY(advance(ps));
            TRY(parse_constraints(ps, x));
        }
    } else {
        return unexpected(ps, "an expression");
    }
    *out = x;
    return GWR_OK;
}

static gwr_status parse_postfix(parser *ps, rl_expr **out) {
    rl_expr *x;
    TRY(parse_primary(ps, &x));
    for (;;) {
        token t = ps->tok;
        if (is_punct(&t, '[') && x->kind != RL_OP) {
            rl_expr *ix = node_at(ps, RL_INDEX, &t);
            if (!ix || !(ix->a = rl_alloc(ps->a, 2 * sizeof *ix->a))) return NOMEM(ps);
            TRY(advance(ps));
            int angle = ps->angle;
            ps->angle = 0;
            ix->a[0] = x, ix->na = 2;
            TRY(parse_expr(ps, &ix->a[1]));
            ps->angle = angle;
            TRY(expect(ps, ']', "']'"));
            x = ix;
        } else if (is_punct(&t, '.') && ps->next.kind == T_IDENT) {
            rl_expr *f = node_at(ps, RL_FIELD, &t);
            if (!f || !(f->a = rl_alloc(ps->a, sizeof *f->a))) return NOMEM(ps);
            TRY(advance(ps));
            f->s = tok_text(ps, &ps->tok), f->a[0] = x, f->na = 1;
            TRY(advance(ps));
            x = f;
        } else if (is_punct(&t, '?') && x->kind == RL_NAME) {
            x->optional = 1;
            TRY(advance(ps));
        } else if (t.kind == T_ELLIPSIS && x->kind == RL_NAME) {
            x->rest = 1;
            TRY(advance(ps));
        } else {
            break;
        }
    }
    *out = x;
    return GWR_OK;
}

static gwr_status unary(parser *ps, rl_kind k, gwr_status (*sub)(parser *, rl_expr **), rl_expr **out) {
    rl_expr *x = node_at(ps, k, &ps->tok);
    if (!x || !(x->a = rl_alloc(ps->a, sizeof *x->a))) return NOMEM(ps);
    TRY(advance(ps));
    x->na = 1;
    TRY(sub(ps, &x->a[0]));
    *out = x;
    return GWR_OK;
}

static gwr_status parse_unary(parser *ps, rl_expr **out) {
    if (is_punct(&ps->tok, '-')) {
        if (ps->next.kind == T_NUM) { /* a negative literal stays a literal */
            token t = ps->tok;
            TRY(advance(ps));
            TRY(parse_postfix(ps, out));
            if ((*out)->kind == RL_NUM) {
                (*out)->num = -(*out)->num, (*out)->line = t.line, (*out)->col = t.col;
                return GWR_OK;
            }
            rl_expr *x = node_at(ps, RL_NEG, &t);
            if (!x || !(x->a = rl_alloc(ps->a, sizeof *x->a))) return NOMEM(ps);
            x->a[0] = *out, x->na = 1, *out = x;
            return GWR_OK;
        }
        return unary(ps, RL_NEG, parse_unary, out);
    }
    return parse_postfix(ps, out);
}

static rl_expr *binary(parser *ps, const token *t, rl_binop op, rl_expr *l, rl_expr *r) {
    rl_expr *x = node_at(ps, RL_BIN, t);
    if (!x || !(x->a = rl_alloc(ps->a, 2 * sizeof *x->a))) return NULL;
    x->op = op, x->a[0] = l, x->a[1] = r, x->na = 2;
    return x;
}

static gwr_status parse_mul(parser *ps, rl_expr **out) {
    TRY(parse_unary(ps, out));
    while (is_punct(&ps->tok, '*') || is_punct(&ps->tok, '/')) {
        token t = ps->tok;
        rl_expr *r;
        TRY(advance(ps));
        TRY(parse_unary(ps, &r));
        if (!(*out = binary(ps, &t, t.c == '*' ? RL_MUL : RL_DIV, *out, r))) return NOMEM(ps);
    }
    return GWR_OK;
}

static gwr_status parse_add(parser *ps, rl_expr **out) {
    TRY(parse_mul(ps, out));
    while (is_punct(&ps->tok, '+') || is_punct(&ps->tok, '-')) {
        token t = ps->tok;
        rl_expr *r;
        TRY(advance(ps));
        TRY(parse_mul(ps, &r));
        if (!(*out = binary(ps, &t, t.c == '+' ? RL_ADD : RL_SUB, *out, r))) return NOMEM(ps);
    }
    return GWR_OK;
}

static gwr_status parse_cmp(parser *ps, rl_expr **out) {
    TRY(parse_add(ps, out));
    token t = ps->tok;
    rl_binop op;
    if (t.kind == T_EQ) op = RL_EQ;
    else if (t.kind == T_NE) op = RL_NE;
    else if (t.kind == T_LE) op = RL_LE;
    else if (t.kind == T_GE) op = RL_GE;
    else if (is_punct(&t, '<')) op = RL_LT;
    else if (is_punct(&t, '>') && !ps->angle) op = RL_GT;
    else return GWR_OK;
    rl_expr *r;
    TRY(advance(ps));
    TRY(parse_add(ps, &r));
    if (!(*out = binary(ps, &t, op, *out, r))) return NOMEM(ps);
    return GWR_OK;
}

static gwr_status parse_not(parser *ps, rl_expr **out) {
    if (is_word(&ps->tok, "not")) return unary(ps, RL_NOT, parse_not, out);
    return parse_cmp(ps, out);
}

static gwr_status parse_and(parser *ps, rl_expr **out) {
    TRY(parse_not(ps, out));
    while (is_word(&ps->tok, "and")) {
        token t = ps->tok;
        rl_expr *r;
        TRY(advance(ps));
        TRY(parse_not(ps, &r));
        if (!(*out = binary(ps, &t, RL_AND, *out, r))) return NOMEM(ps);
    }
    return GWR_OK;
}

static gwr_status parse_or(parser *ps, rl_expr **out) {
    TRY(parse_and(ps, out));
    while (is_word(&ps->tok, "or")) {
        token t = ps->tok;
        rl_expr *r;
        TRY(advance(ps));
        TRY(parse_and(ps, &r));
        if (!(*out = binary(ps, &t, RL_OR, *out, r))) return NOMEM(ps);
    }
    return GWR_OK;
}

static gwr_status parse_expr(parser *ps, rl_expr **out) {
    TRY(parse_or(ps, out));
    if (!ps->pattern || !is_punct(&ps->tok, '|')) return GWR_OK;
    rl_expr *alt = node_at(ps, RL_ALT, &ps->tok);
    if (!alt) return NOMEM(ps);
    alt->line = (*out)->line, alt->col = (*out)->col;
    xlist l = {0};
    if (xpush(ps, &l, *out)) return NOMEM(ps);
    while (is_punct(&ps->tok, '|')) {
        rl_expr *r;
        TRY(advance(ps));
        TRY(parse_or(ps, &r));
        if (xpush(ps, &l, r)) return NOMEM(ps);
    }
    alt->a = l.v, alt->na = l.n;
    *out = alt;
    return GWR_OK;
}

/* ---- rules ------------------------------------------------------------------------------- */

static gwr_status parse_header(parser *ps, gwr_rl_rule *r) {
    int seen[5] = {0};
    static const char *const words[5] = {"benefit", "phase", "target", "opset", "tol"};
    while (!is_punct(&ps->tok, ':')) {
        int w = -1;
        for (int i = 0; i < 5; i++)
            if (is_word(&ps->tok, words[i])) w = i;
        if (w < 0) return unexpected(ps, "benefit, phase, target, opset, tol or ':'");
        if (seen[w]) return rl_fail(ps->e, ps->tok.line, ps->tok.col, "'%s' given twice", words[w]);
        seen[w] = 1;
        TRY(advance(ps));
        token t = ps->tok;
        switch (w) {
        case 0:
            if (is_punct(&t, '-') && ps->next.kind == T_NUM) {
                TRY(advance(ps));
                TRY(parse_int_tok(ps, &r->benefit, "an integer benefit"));
                r->benefit = -r->benefit;
            } else {
                TRY(parse_int_tok(ps, &r->benefit, "an integer benefit"));
            }
            break;
        case 1: {
            static const char *const ph[] = {"cleanup", "fold", "fuse", "lower"};
            int k = -1;
            for (int i = 0; i < 4; i++)
                if (is_word(&t, ph[i])) k = i;
            if (k < 0) return unexpected(ps, "a phase (cleanup, fold, fuse or lower)");
            r->phase = (rl_phase)(k + 1);
            TRY(advance(ps));
            break;
        }
        case 2:
            for (;;) {
                if (is_word(&ps->tok, "onnx")) r->targets |= GWR_TARGET_ONNX;
                else if (is_word(&ps->tok, "ort")) r->targets |= GWR_TARGET_ORT;
                else if (is_word(&ps->tok, "gwr")) r->targets |= GWR_TARGET_GWR;
                else return unexpected(ps, "a target (onnx, ort or gwr)");
                TRY(advance(ps));
                if (!is_punct(&ps->tok, ',')) break;
                TRY(advance(ps));
            }
            break;
        case 3:
            TRY(parse_int_tok(ps, &r->opset, "an opset version"));
            if (r->opset < 1) return rl_fail(ps->e, t.line, t.col, "the opset must be at least 1");
            break;
        default:
            if (t.kind != T_NUM || t.num < 0) return unexpected(ps, "a tolerance >= 0");
            r->tol = t.num;
            TRY(advance(ps));
        }
    }
    return advance(ps);
}

static gwr_status parse_rule(parser *ps, gwr_rl_rule *r) {
    r->line = ps->tok.line, r->col = ps->tok.col;
    TRY(advance(ps)); /* rule */
    if (ps->tok.kind != T_IDENT || is_keyword(&ps->tok)) return unexpected(ps, "a rule name");
    r->name = tok_text(ps, &ps->tok);
    r->name_line = ps->tok.line, r->name_col = ps->tok.col;
    if (!r->name) return NOMEM(ps);
    r->benefit = 10, r->tol = 1e-5;
    TRY(advance(ps));
    TRY(parse_header(ps, r));
    ps->pattern = 1;
    TRY(parse_expr(ps, &r->pattern));
    ps->pattern = 0;
    if (ps->tok.kind != T_ARROW) return unexpected(ps, "'=>' and the replacement");
    TRY(advance(ps));
    TRY(parse_expr(ps, &r->repl));
    xlist l = {0};
    while (is_word(&ps->tok, "where")) {
        TRY(advance(ps));
        rl_expr *w;
        TRY(parse_expr(ps, &w));
        if (xpush(ps, &l, w)) return NOMEM(ps);
    }
    r->where = l.v, r->nwhere = l.n;
    if (ps->tok.kind != T_EOF && !is_word(&ps->tok, "rule")) return unexpected(ps, "'where', the next rule or the end");
    return GWR_OK;
}

gwr_status rl_parse(gwr_rules *set, rl_error *e) {
    parser ps = {.set = set, .a = &set->arena, .src = set->text, .p = set->text, .line = 1, .line_start = set->text, .e = e};
    TRY(lex(&ps, &ps.next));
    TRY(advance(&ps));
    int cap = 0;
    while (ps.tok.kind != T_EOF) {
        if (!is_word(&ps.tok, "rule")) return unexpected(&ps, "'rule'");
        if (set->nrules == cap) {
            int nc = cap ? 2 * cap : 8;
            gwr_rl_rule *v = rl_alloc(ps.a, (size_t)nc * sizeof *v);
            if (!v) return NOMEM(&ps);
            if (set->nrules) memcpy(v, set->rules, (size_t)set->nrules * sizeof *v);
            set->rules = v, cap = nc;
        }
        gwr_rl_rule *r = &set->rules[set->nrules++];
        r->set = set;
        TRY(parse_rule(&ps, r));
    }
    return GWR_OK;
}
