/* json.h - a small JSON reader for the tool: the trace lines of `gwr
 * rewrite --trace-json` and the Chrome traces of `gwr run --profile` and
 * `gwr optimize --profile`, read by `gwr view` (view.c). The whole text
 * becomes a tree of values in one arena. */
#ifndef GWR_CLI_JSON_H
#define GWR_CLI_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef enum cli_json_type { CJ_NULL, CJ_BOOL, CJ_NUM, CJ_STR, CJ_ARR, CJ_OBJ } cli_json_type;

typedef struct cli_json {
    cli_json_type type;
    int boolean;
    double num;
    const char *str;               /* CJ_STR: UTF-8, NUL-terminated (may hold NULs: len) */
    size_t len;
    const struct cli_json *items;  /* CJ_ARR, CJ_OBJ: n values */
    const char *const *keys;       /* CJ_OBJ: n keys */
    int64_t n;
} cli_json;

typedef struct cli_json_doc cli_json_doc;

/* Parses text[0..len) (one value, white space around it): the document,
 * or NULL with a message ("at byte N: expected ':'", "out of memory") in
 * err (size bytes). */
cli_json_doc *cli_json_parse(const char *text, size_t len, char *err, size_t size);
void cli_json_free(cli_json_doc *d);
const cli_json *cli_json_root(const cli_json_doc *d);
/* The value of key in object o (the first), or NULL (o not an object). */
const cli_json *cli_json_get(const cli_json *o, const char *key);
/* The string of key in o, or NULL when absent or not a string. */
const char *cli_json_str(const cli_json *o, const char *key);
/* The number of key in o, or def when absent or not a number. */
double cli_json_num(const cli_json *o, const char *key, double def);

#endif
