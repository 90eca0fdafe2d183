/* function_rules.c - gwr_rules_parse_functions: pattern/replacement pairs
 * of ONNX function text (function_text.c turns them into .rules text) as
 * a rule set. The .rules text is parsed as every rule set is
 * (rl_parse_set); once parsed, every position of its syntax tree moves to
 * the place in the function text it came from and the set keeps the
 * function text, so that the load-time checks (and later messages about a
 * rule) point into the user's file. */
#include <string.h>

#include "rules/function_text.h"
#include "rules/rules_internal.h"

/* Line starts of a text, to turn (line, col) into an offset and back. */
typedef struct lines {
    size_t *start;
    int64_t n, cap;
} lines;

static int lines_of(const char *text, lines *l) {
    memset(l, 0, sizeof *l);
    for (size_t i = 0;; i++) {
        if (i == 0 || text[i - 1] == '\n') {
            if (gwr_grow((void **)&l->start, sizeof *l->start, &l->cap, l->n + 1)) return -1;
            l->start[l->n++] = i;
        }
        if (!text[i]) return 0;
    }
}

static size_t offset_of(const lines *l, int line, int col) {
    if (line < 1) return 0;
    if (line > l->n) line = (int)l->n;
    return l->start[line - 1] + (size_t)(col > 0 ? col - 1 : 0);
}

static void line_col_of(const lines *l, size_t off, int *line, int *col) {
    int64_t lo = 0, hi = l->n - 1;
    while (lo < hi) {
        int64_t mid = (lo + hi + 1) / 2;
        if (l->start[mid] <= off) lo = mid;
        else hi = mid - 1;
    }
    *line = (int)lo + 1;
    *col = (int)(off - l->start[lo]) + 1;
}

typedef struct remap {
    const gwr_ft_rules *ft;
    const char *text; /* the function text */
    lines out, in;
} remap;

static void move(const remap *m, int *line, int *col) {
    size_t in = gwr_ft_input_offset(m->ft, offset_of(&m->out, *line, *col));
    line_col_of(&m->in, in, line, col);
}

static void move_expr(const remap *m, rl_expr *x) {
    if (!x) return;
    move(m, &x->line, &x->col);
    for (int i = 0; i < x->na; i++) move_expr(m, x->a[i]);
    for (int i = 0; i < x->nattrs; i++) {
        move(m, &x->attrs[i].line, &x->attrs[i].col);
        move_expr(m, x->attrs[i].val);
        move_expr(m, x->attrs[i].def);
    }
    for (int i = 0; i < x->nshape; i++) move_expr(m, x->shape[i]);
}

static void move_rules(const remap *m, gwr_rules *set) {
    for (int r = 0; r < set->nrules; r++) {
        gwr_rl_rule *x = &set->rules[r];
        move(m, &x->line, &x->col);
        move(m, &x->name_line, &x->name_col);
        move_expr(m, x->pattern);
        move_expr(m, x->repl);
        for (int w = 0; w < x->nwhere; w++) move_expr(m, x->where[w]);
    }
}

/* rl_parse_set's hook: positions into the function text, which the set
 * then holds (the .rules text is made well-formed: a refusal of rl_parse
 * is a name or value the function text carried into it). */
static gwr_status after_parse(gwr_rules *set, gwr_status parsed, rl_error *e, void *user) {
    const remap *m = user;
    if (e->line) move(m, &e->line, &e->col);
    if (!parsed) move_rules(m, set);
    const char *orig = rl_strndup(&set->arena, m->text, strlen(m->text));
    if (!orig) return parsed ? parsed : gwr_set_last_error(GWR_ERR_NOMEM, "out of memory");
    set->text = orig;
    return parsed;
}

gwr_status gwr_rules_parse_functions(const char *text, const char *filename, gwr_rules **out) {
    if (out) *out = NULL;
    if (!text || !out)
        return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_rules_parse_functions: NULL %s",
                                  text ? "out" : "text");
    const char *fn = filename ? filename : "<string>";
    gwr_ft_rules ft;
    size_t off;
    rl_error e = {0};
    _Static_assert(sizeof e.msg >= GWR_FT_MSG_MAX, "rl_error holds the front end's messages");
    gwr_status s = gwr_ft_to_rules(text, &ft, &off, e.msg);
    remap m = {.ft = &ft, .text = text};
    if (lines_of(text, &m.in) || (!s && lines_of(ft.text, &m.out))) {
        s = gwr_set_last_error(GWR_ERR_NOMEM, "%s: out of memory", fn);
    } else if (s == GWR_ERR_NOMEM) {
        gwr_set_last_error(s, "%s: out of memory", fn);
    } else if (s) {
        line_col_of(&m.in, off, &e.line, &e.col);
        s = rl_error_finish(&e, text, fn);
    } else {
        s = rl_parse_set(ft.text, fn, after_parse, &m, out);
    }
    gwr_free(m.out.start);
    gwr_free(m.in.start);
    gwr_ft_rules_free(&ft);
    return s;
}
