/* cli.h - what the subcommands of the gwr tool share. */
#ifndef GWR_CLI_H
#define GWR_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gwr/gwr.h"
#include "util/util.h" /* gwr_json_str, gwr_utf8_len */

/* Exit codes: 0 success, 1 failure, 2 bad usage. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

typedef struct cli_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv); /* argv[0] is the command name */
    void (*help)(FILE *out);
} cli_command;

extern const cli_command cli_demo;
extern const cli_command cli_inspect;
extern const cli_command cli_convert;
extern const cli_command cli_dot;
extern const cli_command cli_rewrite;
extern const cli_command cli_optimize;
extern const cli_command cli_analyze;
extern const cli_command cli_test_onnx;
extern const cli_command cli_run;
extern const cli_command cli_verify;

/* Prints the layer table of net: one line per live layer with its class,
 * op, inputs and outputs (with types). */
void cli_print_layers(gwr_network *net, FILE *out);

/* Prints "gwr: <what>: <message>" on stderr as one line (newlines in msg
 * become spaces). When msg already starts with `what` (the library's
 * messages start with the file name), prints "gwr: <message>". */
void cli_error(const char *what, const char *msg);

/* Bad usage of command `cmd`: prints "gwr: <cmd>: <message> (try 'gwr <cmd>
 * --help')" as one line and returns CLI_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Does argv hold -h or --help? */
int cli_wants_help(int argc, char **argv);

/* Loads an ONNX model; on failure prints one line naming path and the
 * problem and returns NULL. opt may be NULL. */
gwr_network *cli_load(const char *path, const gwr_onnx_load_options *opt);


/* Frees a network the command is done with when the process is about to
 * exit: only in sanitizer builds (GWR_SANITIZE), where LeakSanitizer must
 * see everything freed. Otherwise exit(2) returns the memory at once,
 * where freeing a big network object by object costs as much as a tenth
 * of a load (the -disable-free of compilers). */
void cli_free_at_exit(gwr_network *net);

/* Draws net to file: .dot writes the DOT text, .svg and .png go through
 * Graphviz's `dot` (an error when it is not installed). Atomic (temporary
 * file renamed); on failure prints one line naming the file and returns -1. */
int cli_draw(gwr_network *net, const char *file);

/* Parses s, all of it, as a decimal integer in [0, INT64_MAX] into *out:
 * 0, or -1 with *why saying what is wrong ("negative", "not an integer",
 * "past int64 (...)"): a value past int64 is refused, never clamped. */
int cli_parse_int(const char *s, int64_t *out, const char **why);

/* "<path>.tmp.<pid>" in a malloc'd string, for writing a file atomically;
 * NULL when out of memory. */
char *cli_temp_name(const char *path);

#endif
