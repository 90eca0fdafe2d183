/* cmd_precision.c - gwr precision (not written yet; gwr/quantize.h). */
#include "cli.h"

static void help(FILE *out) { fprintf(out, "usage: gwr precision MODEL -o OUT [options]\n"); }

static int run(int argc, char **argv) {
    (void)argc, (void)argv;
    fprintf(stderr, "gwr: precision: not implemented yet\n");
    return CLI_FAIL;
}

const cli_command cli_precision = {"precision", "float16 / bfloat16 conversion, automatic mixed precision", run, help};
