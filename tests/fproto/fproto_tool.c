/* fproto_tool - drives the FunctionProto-text front end for
 * tests/fproto/fproto_cases.py.
 *   fproto_tool emit FILE   prints the .rules text FILE converts to, or the
 *                           error at its byte offset (exit 1) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/function_text.h"

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    size_t k;
    while (b && (k = fread(b + n, 1, cap - n - 1, f)) > 0) {
        n += k;
        if (n + 1 == cap) b = realloc(b, cap *= 2);
    }
    fclose(f);
    if (b) b[n] = 0;
    return b;
}

int main(int argc, char **argv) {
    if (argc != 3 || strcmp(argv[1], "emit")) {
        fprintf(stderr, "usage: fproto_tool emit FILE\n");
        return 2;
    }
    char *text = slurp(argv[2]);
    if (!text) {
        fprintf(stderr, "%s: cannot read\n", argv[2]);
        return 2;
    }
    gwr_ft_rules r;
    size_t off;
    char msg[GWR_FT_MSG_MAX];
    int rc = 0;
    if (gwr_ft_to_rules(text, &r, &off, msg)) {
        printf("%s: byte %zu: %s\n", argv[2], off, msg);
        rc = 1;
    } else {
        fputs(r.text, stdout);
        gwr_ft_rules_free(&r);
    }
    free(text);
    return rc;
}
