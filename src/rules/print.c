/* print.c - gwr_rules_print (`gwr rules print FILE`): the parsed rules
 * written back in the language's own syntax, one rule at a time: its
 * header with every field (benefit and tol with their defaults filled in),
 * the pattern and the replacement on one line, each where clause on its
 * own. What it prints parses back to the same rules. */
#include <math.h>
#include <string.h>

#include "gwr/passes.h"
#include "rules/rules_internal.h"

static void expr(FILE *o, const rl_expr *x, int in_pattern);

static void number(FILE *o, double v, int is_float) {
    char b[64];
    snprintf(b, sizeof b, "%.9g", v);
    if (is_float && isfinite(v) && !strpbrk(b, ".eE")) strcat(b, ".0");
    fputs(b, o);
}

static void string(FILE *o, const char *s) {
    fputc('"', o);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', o);
        fputc(*s, o);
    }
    fputc('"', o);
}

static void dtypes(FILE *o, uint32_t bits) {
    static const struct { const char *n; gwr_dtype d; } names[] = {
        {"f16", GWR_FLOAT16}, {"f32", GWR_FLOAT32}, {"f64", GWR_FLOAT64}, {"bf16", GWR_BFLOAT16},
        {"i8", GWR_INT8}, {"i16", GWR_INT16}, {"i32", GWR_INT32}, {"i64", GWR_INT64},
        {"u8", GWR_UINT8}, {"u16", GWR_UINT16}, {"u32", GWR_UINT32}, {"u64", GWR_UINT64}, {"bool", GWR_BOOL}};
    int first = 1;
    for (int d = 0; d < 32; d++) {
        if (!(bits & (1u << d))) continue;
        const char *n = gwr_dtype_name((gwr_dtype)d);
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
            if (names[k].d == (gwr_dtype)d) n = names[k].n;
        fprintf(o, "%s%s", first ? "" : "|", n);
        first = 0;
    }
}

static void constraints(FILE *o, const rl_expr *x) {
    if (x->has_tilde) {
        fputs(" ~ ", o);
        number(o, x->tilde_v, 1);
        fputs(" tol ", o);
        number(o, x->tilde_tol, 0);
    }
    int c = (x->is_const && !x->has_tilde) || x->dtypes || x->rank_lo >= 0 || x->nshape >= 0;
    if (!c) return;
    fputc(':', o);
    if (x->is_const && !x->has_tilde) fputs(" const", o);
    if (x->dtypes) fputc(' ', o), dtypes(o, x->dtypes);
    if (x->rank_lo >= 0) {
        fprintf(o, " rank %d", x->rank_lo);
        if (x->rank_hi != x->rank_lo) fprintf(o, "..%d", x->rank_hi);
    }
    if (x->nshape >= 0) {
        fputs(" shape [", o);
        for (int i = 0; i < x->nshape; i++) {
            if (i) fputs(", ", o);
            expr(o, x->shape[i], 0);
        }
        fputc(']', o);
    }
}

static const char *binop_text(rl_binop op) {
    static const char *const t[] = {"or", "and", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/"};
    return (unsigned)op < sizeof t / sizeof t[0] ? t[op] : "?";
}

static int prec(const rl_expr *x) {
    if (x->kind != RL_BIN) return 9;
    switch (x->op) {
    case RL_OR: return 1;
    case RL_AND: return 2;
    case RL_ADD:
    case RL_SUB: return 4;
    case RL_MUL:
    case RL_DIV: return 5;
    default: return 3;
    }
}

static void operand(FILE *o, const rl_expr *x, int in_pattern, int need) {
    int paren = prec(x) < need || (x->kind == RL_ALT);
    if (paren) fputc('(', o);
    expr(o, x, in_pattern);
    if (paren) fputc(')', o);
}

static void list(FILE *o, rl_expr *const *a, int n, int in_pattern) {
    for (int i = 0; i < n; i++) {
        if (i) fputs(", ", o);
        expr(o, a[i], in_pattern);
    }
}

static void expr(FILE *o, const rl_expr *x, int in_pattern) {
    switch (x->kind) {
    case RL_NUM: number(o, x->num, x->is_float); break;
    case RL_STR: string(o, x->s); break;
    case RL_NAME:
        fputs(x->s, o);
        if (x->rest) fputs("...", o);
        if (x->optional) fputc('?', o);
        if (in_pattern) constraints(o, x);
        break;
    case RL_ANY: fputs(x->optional ? "_?" : "_", o); break;
    case RL_NONE: fputs("none", o); break;
    case RL_LIST:
        fputc('[', o);
        list(o, x->a, x->na, in_pattern);
        fputc(']', o);
        break;
    case RL_OP:
        if (x->node) fprintf(o, "%s@", x->node);
        for (int i = 0; i < x->nops; i++) fprintf(o, "%s%s", i ? "|" : "", x->ops[i]);
        if (x->nattrs || x->copy) {
            fputc('<', o);
            int first = 1;
            if (x->copy) fprintf(o, "...%s", x->copy), first = 0;
            for (int i = 0; i < x->nattrs; i++, first = 0) {
                const rl_attr *a = &x->attrs[i];
                fprintf(o, "%s%s=", first ? "" : ", ", a->name);
                if (a->absent || !a->val) fputc('!', o);
                else expr(o, a->val, 0);
                if (a->def) fputs(" default ", o), expr(o, a->def, 0);
            }
            fputc('>', o);
        }
        fputc('(', o);
        list(o, x->a, x->na, in_pattern);
        fputc(')', o);
        if (x->out) fprintf(o, "[%d]", x->out);
        break;
    case RL_CALL:
        fprintf(o, "%s(", x->s);
        list(o, x->a, x->na, in_pattern);
        fputc(')', o);
        break;
    case RL_BIN: {
        int p = prec(x);
        operand(o, x->a[0], in_pattern, p);
        fprintf(o, " %s ", binop_text(x->op));
        operand(o, x->a[1], in_pattern, p + 1);
        break;
    }
    case RL_NOT: fputs("not ", o), operand(o, x->a[0], in_pattern, 6); break;
    case RL_NEG: fputc('-', o), operand(o, x->a[0], in_pattern, 6); break;
    case RL_INDEX:
        operand(o, x->a[0], in_pattern, 9);
        fputc('[', o);
        expr(o, x->a[1], in_pattern);
        fputc(']', o);
        break;
    case RL_FIELD: operand(o, x->a[0], in_pattern, 9), fprintf(o, ".%s", x->s); break;
    case RL_ALT:
        for (int i = 0; i < x->na; i++) {
            if (i) fputs(" | ", o);
            operand(o, x->a[i], in_pattern, 9);
        }
        break;
    }
}

gwr_status gwr_rules_print(const gwr_rules *r, FILE *o) {
    if (!r || !o) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_rules_print: NULL %s", r ? "out" : "rules");
    static const char *const phases[] = {"", "cleanup", "fold", "fuse", "lower"};
    for (int i = 0; i < r->nrules; i++) {
        const gwr_rl_rule *x = &r->rules[i];
        if (i) fputc('\n', o);
        fprintf(o, "# %s:%d\nrule %s benefit %d", r->filename ? r->filename : "<string>", x->line, x->name, x->benefit);
        if (x->phase > RL_PHASE_NONE && x->phase <= RL_PHASE_LOWER) fprintf(o, " phase %s", phases[x->phase]);
        if (x->targets) {
            fputs(" target ", o);
            const char *sep = "";
            if (x->targets & GWR_TARGET_ONNX) fprintf(o, "%sonnx", sep), sep = ",";
            if (x->targets & GWR_TARGET_ORT) fprintf(o, "%sort", sep), sep = ",";
            if (x->targets & GWR_TARGET_GWR) fprintf(o, "%sgwr", sep);
        }
        if (x->opset) fprintf(o, " opset %d", x->opset);
        fputs(" tol ", o);
        number(o, x->tol, 0);
        fputs(":\n  ", o);
        expr(o, x->pattern, 1);
        fputs("  =>  ", o);
        expr(o, x->repl, 0);
        fputc('\n', o);
        for (int k = 0; k < x->nwhere; k++) {
            fputs("  where ", o);
            expr(o, x->where[k], 0);
            fputc('\n', o);
        }
    }
    return ferror(o) ? gwr_set_last_error(GWR_ERR_IO, "gwr_rules_print: cannot write") : GWR_OK;
}
