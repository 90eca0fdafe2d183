/* cli.h - what the subcommands of the gwr tool share. */
#ifndef GWR_CLI_H
#define GWR_CLI_H

#include <stdio.h>

#include "gwr/gwr.h"

/* Exit codes: 0 success, 1 failure, 2 bad usage. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

typedef struct cli_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv); /* argv[0] is the command name */
    void (*help)(FILE *out);
} cli_command;

extern const cli_command cli_demo;

/* Prints the layer table of net: one line per live layer with its class,
 * op, inputs and outputs (with types). */
void cli_print_layers(gwr_network *net, FILE *out);

/* Prints "gwr: <what>: <message>" on stderr as one line. */
void cli_error(const char *what, const char *msg);

/* Does argv hold -h or --help? */
int cli_wants_help(int argc, char **argv);

#endif
