/* cmd_quantize.c - gwr quantize (not written yet; gwr/quantize.h). */
#include "cli.h"

static void help(FILE *out) { fprintf(out, "usage: gwr quantize MODEL -o OUT [options]\n"); }

static int run(int argc, char **argv) {
    (void)argc, (void)argv;
    fprintf(stderr, "gwr: quantize: not implemented yet\n");
    return CLI_FAIL;
}

const cli_command cli_quantize = {"quantize", "int8 / 4-bit quantization (dynamic, static, weight-only)", run, help};
