/* cmd_demo.c - `gwr demo`, what `make demo` runs: builds a small GPT-style
 * network with the functional C API, applies the three seed rewrite
 * patterns with the trace on, and writes the network before and after as
 * ONNX, as pictures and as the page of `gwr view` (before/after, the
 * trace, each new layer's provenance). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "view.h"

static void help(FILE *out) {
    fprintf(out,
            "usage: gwr demo [--blocks N] [--dir DIR] [--svg] [--onnx-attention]\n"
            "\n"
            "Builds a GPT-style decoder of N blocks (default 2) with gwr's functional C API\n"
            "(attention is the GPTAttention plugin, recorded with its FLayerInfo), prints its\n"
            "layer table, then applies the three seed patterns of TensorRT-LLM's graph\n"
            "rewriting module with the trace on:\n"
            "  fuse_attention_with_bias      (benefit 20) the qkv bias Add moves into the plugin\n"
            "  gpt_attention_remove_padding  (benefit 10) plugins re-created in remove-padding mode\n"
            "  replace_add_with_sub          (benefit 1)  the remaining Adds become Subs\n"
            "and prints the table again and the statistics. Writes, in DIR (default .):\n"
            "  demo.onnx, demo.rewritten.onnx      the network before and after (with each new\n"
            "                                      layer's provenance: gwr explain)\n"
            "  demo.dot, demo.rewritten.dot        Graphviz pictures of both (--svg: .svg too)\n"
            "  demo.view.html                      the page of 'gwr view': both side by side,\n"
            "                                      the trace, each new layer's provenance\n"
            "--onnx-attention builds attention from plain ONNX ops instead of the plugin (then\n"
            "only replace_add_with_sub finds work).\n");
}

static int save_all(gwr_network *net, const char *dir, const char *stem, int svg) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.onnx", dir, stem);
    gwr_onnx_save_options so = {.provenance = 1}; /* `gwr explain` reads it */
    if (gwr_onnx_save(net, path, &so)) {
        cli_error(path, gwr_network_errmsg(net));
        return -1;
    }
    printf("wrote %s\n", path);
    const char *exts[2] = {"dot", "svg"};
    for (int i = 0; i < 1 + svg; i++) {
        snprintf(path, sizeof path, "%s/%s.%s", dir, stem, exts[i]);
        if (cli_draw(net, path)) return -1;
        printf("wrote %s\n", path);
    }
    return 0;
}

static void heading(const char *text) { printf("\n== %s\n\n", text); }

static int run(int argc, char **argv) {
    gwr_gpt_config cfg = {.blocks = 2, .hidden = 64, .heads = 4, .use_plugin = 1, .seed = 1};
    const char *dir = ".";
    int svg = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--blocks") && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 100000) return cli_usage("demo", "--blocks needs a number from 1 to 100000");
            cfg.blocks = (int)v;
        } else if (!strcmp(argv[i], "--dir") && i + 1 < argc) {
            dir = argv[++i];
        } else if (!strcmp(argv[i], "--svg")) {
            svg = 1;
        } else if (!strcmp(argv[i], "--onnx-attention")) {
            cfg.use_plugin = 0;
        } else {
            return cli_usage("demo", "unknown argument '%s'", argv[i]);
        }
    }
    gwr_network *net = gwr_network_new("demo");
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    gwr_args *args = gwr_args_new();
    gwr_network *before = NULL; /* for demo.view.html */
    view_trace *vtrace = NULL;
    int rc = CLI_FAIL;
    if (!net || !m || !args) {
        cli_error("demo", "out of memory");
        goto out;
    }
    gwr_tensor *y = gwr_build_gpt(net, &cfg);
    if (!y || gwr_network_verify(net)) {
        cli_error("demo", gwr_network_errmsg(net));
        goto out;
    }
    heading("the network, built with the functional C API");
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
    printf("\n");
    if (save_all(net, dir, "demo", svg)) goto out;
    /* The page of `gwr view` wants the network as it was and the trace. */
    if (gwr_view_have_dagre && !(before = gwr_network_clone(net))) {
        cli_error("demo", gwr_last_errmsg());
        goto out;
    }

    /* The three seed patterns; remove-padding reads its shapes from the
     * manager's args. */
    static const char *const seeds[] = {"replace_add_with_sub", "gpt_attention_remove_padding",
                                        "fuse_attention_with_bias"};
    for (int i = 0; i < 3; i++)
        if (gwr_passes_add(m, seeds[i])) {
            cli_error("demo", gwr_rewrite_manager_errmsg(m));
            goto out;
        }
    gwr_args_set_int(args, "batch_size", 2);
    gwr_args_set_int(args, "in_len", 16);
    gwr_args_set_int(args, "hidden_size", 3 * cfg.hidden);
    gwr_rewrite_manager_set_options(m, &(gwr_rewrite_options){.time_patterns = 1, .provenance = 1});
    gwr_rewrite_listener vls;
    if (before && (!(vtrace = view_trace_new()) ||
                   (vls = view_trace_listener(vtrace), gwr_rewrite_manager_add_listener(m, &vls) < 0))) {
        cli_error("demo", "out of memory");
        goto out;
    }
    if (gwr_rewrite_manager_trace(m, stdout, GWR_TRACE_TEXT, 0) < 0) {
        cli_error("demo", "out of memory");
        goto out;
    }
    heading("rewriting (batch_size=2, in_len=16, hidden_size=192): the trace");
    if (gwr_rewrite_manager_rewrite(m, net, args) || gwr_network_verify(net)) {
        cli_error("demo", *gwr_rewrite_manager_errmsg(m) ? gwr_rewrite_manager_errmsg(m) : gwr_network_errmsg(net));
        goto out;
    }
    heading("the network after rewriting");
    cli_print_layers(net, stdout);
    heading("statistics");
    gwr_rewrite_manager_print_stats(m, stdout);
    printf("\n");
    if (save_all(net, dir, "demo.rewritten", svg)) goto out;
    if (before) {
        char page[4096];
        snprintf(page, sizeof page, "%s/demo.view.html", dir);
        view_page pg = {.models = {before, net}, .files = {"demo.onnx", "demo.rewritten.onnx"}, .nmodels = 2,
                        .trace = vtrace};
        if (view_write(page, &pg)) goto out;
        printf("wrote %s (open it in a browser: before and after, the trace, provenance)\n", page);
    } else {
        printf("no demo.view.html: gwr was built without the viewer's layout library (npm install)\n");
    }
    rc = CLI_OK;
out:
    view_trace_free(vtrace);
    gwr_network_free(before);
    gwr_args_free(args);
    gwr_rewrite_manager_free(m);
    gwr_network_free(net);
    return rc;
}

const cli_command cli_demo = {"demo", "build a GPT-style network, rewrite it with the seed patterns, save both",
                              run, help};
