/* util.c - helpers the subcommands share: errors, loading, JSON strings,
 * temporary file names. */
#include <errno.h>
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

size_t cli_utf8_len(const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) len = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef) len = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4) len = 4, min = 0x10000;
    else return 0;
    if (len > n) return 0;
    unsigned cp = c & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return len;
}

void cli_json_str(FILE *out, const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', out);
    for (size_t i = 0; i < len;) {
        unsigned c = p[i];
        if (c == '"' || c == '\\') {
            fputc('\\', out);
            fputc((int)c, out);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            switch (c) {
            case '\n': fputs("\\n", out); break;
            case '\r': fputs("\\r", out); break;
            case '\t': fputs("\\t", out); break;
            case '\b': fputs("\\b", out); break;
            case '\f': fputs("\\f", out); break;
            default: fprintf(out, "\\u%04x", c);
            }
            i++;
        } else {
            size_t n = cli_utf8_len(s + i, len - i);
            if (n == 0) {
                fputs("\\ufffd", out);
                i++;
            } else {
                fwrite(p + i, 1, n, out);
                i += n;
            }
        }
    }
    fputc('"', out);
}

char *cli_temp_name(const char *path) {
    size_t n = strlen(path) + 32;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s.tmp.%ld", path, (long)getpid());
    return s;
}
