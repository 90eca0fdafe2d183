/* main.c - the gwr command-line tool: dispatch to one file per subcommand. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const cli_command *const commands[] = {
    &cli_inspect, &cli_convert, &cli_dot,      &cli_rewrite, &cli_optimize, &cli_analyze, &cli_run,
    &cli_generate, &cli_verify, &cli_test_onnx, &cli_rules,  &cli_quantize, &cli_precision, &cli_demo,
    &cli_view,
    &cli_diff,
    &cli_bisect,
    &cli_explain,
};
#define NCOMMANDS (sizeof commands / sizeof *commands)

static void usage(FILE *out) {
    fprintf(out,
            "usage: gwr [--version] [--help] <command> [args]\n"
            "\n"
            "gwr rewrites neural-network graphs: build, inspect, rewrite and save networks.\n"
            "\n"
            "commands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++) fprintf(out, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(out, "\n'gwr <command> --help' describes a command.\n");
}

int cli_wants_help(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return 1;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        if (argc > 2)
            for (size_t i = 0; i < NCOMMANDS; i++)
                if (!strcmp(argv[2], commands[i]->name)) {
                    commands[i]->help(stdout);
                    return CLI_OK;
                }
        usage(stdout);
        return CLI_OK;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V") || !strcmp(cmd, "version")) {
        printf("gwr %s\n", gwr_version());
        return CLI_OK;
    }
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (!strcmp(cmd, commands[i]->name)) {
            if (cli_wants_help(argc - 1, argv + 1)) {
                commands[i]->help(stdout);
                return CLI_OK;
            }
            return commands[i]->run(argc - 1, argv + 1);
        }
    fprintf(stderr, "gwr: unknown command '%s' (try 'gwr --help')\n", cmd);
    return CLI_USAGE;
}
