/* table.c - the layer table printed by several commands. */
#include <string.h>

#include "cli.h"

static void tensor_ref(FILE *out, const gwr_tensor *t) {
    char ty[160];
    if (!t) {
        fputs("-", out);
        return;
    }
    gwr_tensor_type_str(t, ty, sizeof ty);
    fprintf(out, "%s:%s", gwr_tensor_name(t), ty);
}

void cli_print_layers(gwr_network *net, FILE *out) {
    fprintf(out, "network '%s': %lld layers, %d inputs, %d outputs\n", gwr_network_name(net),
            (long long)gwr_network_num_live_layers(net), gwr_network_num_inputs(net), gwr_network_num_outputs(net));
    for (int i = 0; i < gwr_network_num_inputs(net); i++) {
        fputs("  input  ", out);
        tensor_ref(out, gwr_network_input(net, i));
        fputc('\n', out);
    }
    fprintf(out, "  %4s  %-22s %-16s %-20s %s\n", "#", "layer", "class", "op", "inputs -> outputs");
    int64_t row = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (gwr_layer_is_removed(l)) continue;
        char op[96];
        const char *dom = gwr_layer_domain(l);
        snprintf(op, sizeof op, "%s%s%s", dom, *dom ? "::" : "", gwr_layer_op(l));
        fprintf(out, "  %4lld  %-22s %-16s %-20s ", (long long)row++, gwr_layer_name(l),
                gwr_layer_type_name(gwr_layer_type(l)), op);
        for (int k = 0; k < gwr_layer_num_inputs(l); k++) {
            if (k) fputs(", ", out);
            const gwr_tensor *t = gwr_layer_input(l, k);
            if (t && gwr_layer_type(gwr_tensor_parent(t)) == GWR_LAYER_CONSTANT && gwr_tensor_parent(t) != NULL)
                fprintf(out, "%s", gwr_tensor_name(t)); /* weights: name only */
            else
                tensor_ref(out, t);
        }
        fputs(" -> ", out);
        for (int k = 0; k < gwr_layer_num_outputs(l); k++) {
            if (k) fputs(", ", out);
            tensor_ref(out, gwr_layer_output(l, k));
        }
        fputc('\n', out);
    }
    for (int i = 0; i < gwr_network_num_outputs(net); i++) {
        fputs("  output ", out);
        tensor_ref(out, gwr_network_output(net, i));
        fputc('\n', out);
    }
}
