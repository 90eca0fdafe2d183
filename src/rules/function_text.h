/* function_text.h - the FunctionProto-text front end of the rules room:
 * pattern/replacement pairs written in ONNX's textual syntax (the form
 * onnx.parser.parse_function reads and onnx.printer writes, the form
 * onnxsim 0.8's function_rewrite_rules take) turned into the .rules
 * language, which gwr_rules_parse then reads. Internal to src/rules. */
#ifndef GWR_RULES_FUNCTION_TEXT_H
#define GWR_RULES_FUNCTION_TEXT_H

#include <stddef.h>

#include "util/util.h"

/* One emitted span: bytes of the .rules text from `out` on came from the
 * input position `in` (a byte offset into the function text). */
typedef struct gwr_ft_span {
    size_t out, in;
} gwr_ft_span;

typedef struct gwr_ft_rules {
    char *text;          /* the .rules text, NUL-terminated */
    size_t len;
    gwr_ft_span *spans;  /* increasing `out` */
    int64_t nspans, cap;
    int nrules;
} gwr_ft_rules;

/* Parses `text` (a sequence of ONNX-text functions, taken two by two as
 * pattern then replacement) and writes the equivalent .rules text into
 * *out. On error: a status, *out empty, *err_off the byte offset of the
 * problem in text and msg (GWR_FT_MSG_MAX bytes) the message. */
#define GWR_FT_MSG_MAX 256
gwr_status gwr_ft_to_rules(const char *text, gwr_ft_rules *out, size_t *err_off, char *msg);
void gwr_ft_rules_free(gwr_ft_rules *r);
/* The input offset the .rules byte at `out_off` came from. */
size_t gwr_ft_input_offset(const gwr_ft_rules *r, size_t out_off);
/* 1 when text is in the function form rather than .rules: its first
 * token (after blanks and # comments) is '<' (a function's header), or it
 * reads `name [<...>] (...) => (...) [<...>] {`, a signature. */
int gwr_ft_looks_like_functions(const char *text);
#endif
