/* test_rules_docs.c - every ```rules example of docs/rules.md loads (the
 * page's examples stay true to the parser and the load-time checks). The
 * file is found from this source's path (ctest runs in the build's tests
 * directory, where __FILE__ is relative). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"

static char *read_docs(void) {
    char path[1024];
    const char *f = __FILE__, *cut = strstr(f, "tests/unit/");
    if (!cut) return NULL;
    snprintf(path, sizeof path, "%.*sdocs/rules.md", (int)(cut - f), f);
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    char *buf = calloc(1, 1 << 20);
    size_t n = buf ? fread(buf, 1, (1 << 20) - 1, fp) : 0;
    fclose(fp);
    if (buf) buf[n] = 0;
    return buf;
}

TEST(every_example_loads) {
    char *text = read_docs();
    if (!CHECK(text != NULL)) return;
    int blocks = 0;
    for (char *p = strstr(text, "```rules\n"); p; p = strstr(p, "```rules\n")) {
        p += 9;
        char *end = strstr(p, "```");
        if (!CHECK(end != NULL)) break;
        *end = 0;
        gwr_rules *r = NULL;
        if (!CHECK_OK(gwr_rules_parse(p, "docs/rules.md block", &r))) fprintf(stderr, "  %s\n", gwr_last_errmsg());
        else CHECK(gwr_rules_count(r) >= 1);
        gwr_rules_free(r);
        blocks++;
        p = end + 3;
    }
    CHECK(blocks >= 12);
    free(text);
}

int main(void) {
    RUN(every_example_loads);
    return check_report();
}
