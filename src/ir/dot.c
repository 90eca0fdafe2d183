/* dot.c - Graphviz DOT output of a network. */
#include <string.h>

#include "ir/ir_internal.h"

/* Writes s as the inside of a DOT double-quoted string. */
static void dot_str(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        if (*s == '\n') fputs("\\n", f);
        else fputc(*s, f);
    }
}

static int is_constant(const gwr_layer *l) { return l->type == GWR_LAYER_CONSTANT; }

gwr_status gwr_network_write_dot(gwr_network *net, FILE *out) {
    if (!net || !out) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_write_dot: NULL argument");
    fputs("digraph \"", out);
    dot_str(out, net->name[0] ? net->name : "network");
    fputs("\" {\n  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", fillcolor=\"#eef3fb\", "
          "fontname=\"Helvetica\", fontsize=11];\n  edge [fontname=\"Helvetica\", fontsize=9];\n", out);
    /* Graph inputs and outputs: ellipses named i<k> / o<k>. */
    for (int64_t i = 0; i < net->ninputs; i++) {
        fprintf(out, "  i%lld [shape=ellipse, fillcolor=\"#dff0d8\", label=\"", (long long)i);
        dot_str(out, net->inputs[i]->name);
        fputs("\"];\n", out);
    }
    for (int64_t i = 0; i < net->noutputs; i++) {
        fprintf(out, "  o%lld [shape=ellipse, fillcolor=\"#fcf8e3\", label=\"", (long long)i);
        dot_str(out, net->outputs[i]->name);
        fputs("\"];\n", out);
    }
    char type[256];
    for (int64_t i = 0; i < net->nlayers; i++) {
        gwr_layer *l = net->layers[i];
        if (l->flags & LF_REMOVED) continue;
        fprintf(out, "  l%lld [", (long long)i);
        if (is_constant(l)) fputs("shape=box, fontsize=8, height=0.2, fillcolor=\"#f5f5f5\", ", out);
        else if (l->type == GWR_LAYER_PLUGIN) fputs("fillcolor=\"#f2dede\", ", out);
        fputs("label=\"", out);
        if (l->info->domain[0]) {
            dot_str(out, l->info->domain);
            fputs("::", out);
        }
        dot_str(out, l->info->name);
        if (!is_constant(l)) {
            fputs("\\n", out);
            dot_str(out, l->name);
        }
        fputs("\"];\n", out);
    }
    /* Edges: producer (layer or input) to each live user, labelled with
     * the tensor's type; and to the output ellipses. */
    for (int64_t i = 0; i < net->nlayers; i++) {
        gwr_layer *l = net->layers[i];
        if (l->flags & LF_REMOVED) continue;
        for (int s = 0; s < l->ninputs; s++) {
            gwr_tensor *t = l->inputs[s];
            if (!t) continue;
            if (gwr_ir_tnet(t) != net) continue; /* read from an enclosing network */
            if (t->producer) {
                if (t->producer->flags & LF_REMOVED) continue;
                fprintf(out, "  l%lld -> l%lld", (long long)t->producer->index, (long long)i);
            } else {
                fprintf(out, "  i%d -> l%lld", t->out_index, (long long)i);
            }
            gwr_tensor_type_str(t, type, sizeof type);
            fputs(" [label=\"", out);
            dot_str(out, type);
            fputs("\"];\n", out);
        }
    }
    for (int64_t i = 0; i < net->noutputs; i++) {
        gwr_tensor *t = net->outputs[i];
        gwr_tensor_type_str(t, type, sizeof type);
        if (t->producer) {
            if (t->producer->flags & LF_REMOVED) continue;
            fprintf(out, "  l%lld -> o%lld", (long long)t->producer->index, (long long)i);
        } else {
            fprintf(out, "  i%d -> o%lld", t->out_index, (long long)i);
        }
        fputs(" [label=\"", out);
        dot_str(out, type);
        fputs("\"];\n", out);
    }
    fputs("}\n", out);
    if (ferror(out)) return gwr_ir_error(net, GWR_ERR_IO, "writing DOT failed");
    return GWR_OK;
}
