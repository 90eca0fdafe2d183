/* util.c - helpers the subcommands share: errors, loading, JSON strings,
 * temporary file names. */
#include <errno.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* Prints s with every line break turned into a space, so that a message
 * stays on one line whatever the library put in it. */
static void put_one_line(FILE *f, const char *s) {
    for (; *s; s++) fputc(*s == '\n' || *s == '\r' ? ' ' : *s, f);
}

void cli_error(const char *what, const char *msg) {
    if (!msg || !*msg) msg = "failed";
    fputs("gwr: ", stderr);
    size_t n = strlen(what);
    if (strncmp(msg, what, n) != 0 || msg[n] != ':') {
        put_one_line(stderr, what);
        fputs(": ", stderr);
    }
    put_one_line(stderr, msg);
    fputc('\n', stderr);
}

int cli_load_rules(const char *path, gwr_rules **out) {
    if (!gwr_rules_parse_file(path, out)) return CLI_OK;
    /* The first line of the message: FILE:LINE:COL: message (the source
     * line and the caret follow it in the library's message). */
    const char *msg = gwr_last_errmsg(), *nl = strchr(msg, '\n');
    char line[512];
    snprintf(line, sizeof line, "%.*s", nl ? (int)(nl - msg) : (int)strlen(msg), msg);
    cli_error(path, line);
    return CLI_FAIL;
}

int cli_usage(const char *cmd, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "gwr: %s: ", cmd);
    put_one_line(stderr, msg);
    fprintf(stderr, " (try 'gwr %s --help')\n", cmd);
    return CLI_USAGE;
}

void cli_free_at_exit(gwr_network *net) {
#ifdef GWR_SANITIZE
    gwr_network_free(net);
#else
    (void)net;
#endif
}

gwr_network *cli_load(const char *path, const gwr_onnx_load_options *opt) {
    /* Say plainly what is wrong with the path itself before parsing. */
    struct stat st;
    if (stat(path, &st) != 0) {
        cli_error(path, strerror(errno));
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) {
        cli_error(path, "is a directory, not an ONNX model file");
        return NULL;
    }
    gwr_network *net = gwr_onnx_load(path, opt);
    if (!net) {
        /* The library's message starts with the file name; cli_error adds
         * it when it does not. */
        const char *msg = gwr_last_errmsg();
        cli_error(path, *msg ? msg : "cannot load the model");
    }
    return net;
}


int cli_parse_int(const char *s, int64_t *out, const char **why) {
    const char *p = s;
    if (*p == '-' && p[1] >= '0' && p[1] <= '9') return *why = "negative", -1;
    if (*p < '0' || *p > '9') return *why = "not an integer", -1;
    uint64_t v = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        /* past int64: refused, never clamped */
        if (v > ((uint64_t)INT64_MAX - (uint64_t)(*p - '0')) / 10) return *why = "past int64 (at most 9223372036854775807)", -1;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (*p) return *why = "not an integer", -1;
    *out = (int64_t)v;
    return 0;
}

char *cli_temp_name(const char *path) {
    size_t n = strlen(path) + 32;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s.tmp.%ld", path, (long)getpid());
    return s;
}
