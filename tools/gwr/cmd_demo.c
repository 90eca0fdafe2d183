/* cmd_demo.c - `gwr demo`: builds a small GPT-style network with the
 * functional API, checks it, and prints it. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(FILE *out) {
    fprintf(out,
            "usage: gwr demo [--blocks N] [--onnx-attention] [--dot FILE]\n"
            "\n"
            "Builds a GPT-style decoder of N blocks (default 2) with gwr's functional C API,\n"
            "verifies it, shows a tensor's parent and users and the recorded FLayerInfo of the\n"
            "attention plugin, and prints the layer table. --onnx-attention builds attention\n"
            "from plain ONNX ops instead of the GPTAttention plugin; --dot writes a Graphviz\n"
            "picture of the network.\n");
}

static int run(int argc, char **argv) {
    gwr_gpt_config cfg = {.blocks = 2, .hidden = 64, .heads = 4, .use_plugin = 1, .seed = 1};
    const char *dot = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--blocks") && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 100000) {
                cli_error("demo", "--blocks needs a number from 1 to 100000");
                return CLI_USAGE;
            }
            cfg.blocks = (int)v;
        } else if (!strcmp(argv[i], "--onnx-attention")) {
            cfg.use_plugin = 0;
        } else if (!strcmp(argv[i], "--dot") && i + 1 < argc) {
            dot = argv[++i];
        } else {
            fprintf(stderr, "gwr: demo: unknown argument '%s' (try 'gwr demo --help')\n", argv[i]);
            return CLI_USAGE;
        }
    }
    gwr_network *net = gwr_network_new("demo");
    if (!net) {
        cli_error("demo", gwr_last_errmsg());
        return CLI_FAIL;
    }
    int rc = CLI_FAIL;
    gwr_tensor *y = gwr_build_gpt(net, &cfg);
    if (!y) {
        cli_error("demo", gwr_network_errmsg(net));
        goto out;
    }
    if (gwr_network_verify(net)) {
        cli_error("demo", gwr_network_errmsg(net));
        goto out;
    }
    cli_print_layers(net, stdout);

    /* A short walk: the input's users, the output's parent, and the
     * signature recorded for the first attention plugin. */
    gwr_tensor *x = gwr_network_input(net, 0);
    printf("\ntensor '%s' has %lld users:", gwr_tensor_name(x), (long long)gwr_tensor_num_users(x));
    for (int64_t i = 0; i < gwr_tensor_num_users(x); i++) printf(" %s", gwr_layer_name(gwr_tensor_user(x, i, NULL)));
    printf("\ntensor '%s' is produced by '%s' (%s)\n", gwr_tensor_name(y), gwr_layer_name(gwr_tensor_parent(y)),
           gwr_layer_op(gwr_tensor_parent(y)));
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        gwr_flayer *f = gwr_flayer_get(net, l);
        if (!f) continue;
        const gwr_args *a = gwr_flayer_inputs(f);
        printf("FLayerInfo of '%s': %s(", gwr_layer_name(l), gwr_flayer_kind(f));
        for (int k = 0; k < gwr_args_count(a); k++) {
            const char *n = gwr_args_name(a, k);
            int64_t v;
            gwr_tensor *t;
            printf("%s%s=", k ? ", " : "", n);
            if (gwr_args_type(a, k) == GWR_ARG_TENSOR && !gwr_args_get_tensor(a, n, &t)) printf("%s", gwr_tensor_name(t));
            else if (gwr_args_type(a, k) == GWR_ARG_INT && !gwr_args_get_int(a, n, &v)) printf("%lld", (long long)v);
            else printf("%s", gwr_arg_type_name(gwr_args_type(a, k)));
        }
        printf(")\n");
        break;
    }
    if (dot) {
        FILE *f = fopen(dot, "w");
        if (!f || gwr_network_write_dot(net, f) || fclose(f)) {
            if (f) fclose(f);
            remove(dot);
            cli_error(dot, "cannot write the DOT file");
            goto out;
        }
        printf("wrote %s\n", dot);
    }
    rc = CLI_OK;
out:
    gwr_network_free(net);
    return rc;
}

const cli_command cli_demo = {"demo", "build a GPT-style network with the C API and print it", run, help};
