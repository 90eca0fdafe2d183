/* gwr/rules.h - rewrite rules written as text (docs/rules.md): a `.rules`
 * file is parsed at run time, checked (unknown ops, arity, unbound names,
 * a replacement whose dtype cannot match) and compiled into the tables of
 * gwr/match.h; each rule then runs as a pattern rewriter of a manager.
 *
 *   rule fold_transposes:
 *     Transpose<perm=p2>(Transpose<perm=p1>(x))  =>  Transpose<perm=compose(p1, p2)>(x)
 *
 * Ownership: a gwr_rules owns its text, its tables and its strings. The
 * rewriters it gives point into it: it must outlive every manager they are
 * added to (gwr_rules_load hands it to the manager). */
#ifndef GWR_RULES_H
#define GWR_RULES_H

#include "gwr/match.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A parsed, checked, compiled rule set (opaque). */
typedef struct gwr_rules gwr_rules;

/* Parses text (filename used in messages; NULL -> "<string>"). On error:
 * the status (GWR_ERR_PARSE for every refusal of the text), *out NULL, and
 * the message "file:line:col: message\n<the source line>\n<caret under
 * the column>" in gwr_last_errmsg(). */
GWR_API gwr_status gwr_rules_parse(const char *text, const char *filename, gwr_rules **out);
/* Reads the file and parses it (messages name the path). */
GWR_API gwr_status gwr_rules_parse_file(const char *path, gwr_rules **out);
GWR_API void gwr_rules_free(gwr_rules *r);
/* The rules in file order; name, benefit (header `benefit N`, default 10)
 * and declared tolerance (header `tol T`, default 1e-5) of rule i. */
GWR_API int gwr_rules_count(const gwr_rules *r);
GWR_API const char *gwr_rules_name(const gwr_rules *r, int i);
GWR_API int gwr_rules_benefit(const gwr_rules *r, int i);
GWR_API double gwr_rules_tolerance(const gwr_rules *r, int i);
/* Adds every rule to m under its name (benefit from the rule); r must
 * outlive m. GWR_ERR_DUPLICATE when a label is taken (message on m and in
 * gwr_last_errmsg). */
GWR_API gwr_status gwr_rules_add_to(const gwr_rules *r, gwr_rewrite_manager *m);
/* One rule as a pattern rewriter (for check/lint and bisecting); its
 * strings and user point into r. */
GWR_API gwr_status gwr_rules_rewriter(const gwr_rules *r, int i, gwr_pattern_rewriter *out);
/* path_or_text: text when it contains a newline or "=>", else a file
 * path. Parses it and adds every rule to m; the manager keeps the parsed
 * rules alive until it is freed. On error nothing is added. */
GWR_API gwr_status gwr_rules_load(gwr_rewrite_manager *m, const char *path_or_text);

#ifdef __cplusplus
}
#endif
#endif
