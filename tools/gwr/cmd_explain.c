/* cmd_explain.c - `gwr explain MODEL NODE [--json]`: where a layer came
 * from. Prints the provenance chain that rewrites recorded on the layer
 * (the property GWR_PROVENANCE_PROP, saved in the file's node
 * metadata_props by `gwr optimize --provenance`) as an indented tree back
 * to the layers of the original network. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(FILE *out) {
    fprintf(out,
            "usage: gwr explain MODEL NODE [--json]\n"
            "\n"
            "Prints how layer NODE of the ONNX model MODEL was made: the rewrite rule that\n"
            "made it and the layers it replaced, and theirs in turn, down to the layers of\n"
            "the original network, as an indented tree. The lineage is what\n"
            "'gwr optimize --provenance' and 'gwr rewrite --provenance' save in the nodes'\n"
            "metadata_props; a layer without it is an original layer. NODE is searched in\n"
            "the graph, then in every If/Loop/Scan body.\n"
            "\n"
            "  --json   print {\"name\", \"op\", \"provenance\"} as one JSON object, with the\n"
            "           provenance JSON as recorded (null for an original layer)\n"
            "\n"
            "Exit status: 0 success, 1 the recorded provenance does not read, 2 bad usage,\n"
            "a model that cannot be read or a NODE the model does not have.\n");
}

/* The bodies of layer x's attribute a (GRAPH or GRAPHS) in *gs; their count. */
static int64_t bodies(gwr_layer *x, int a, gwr_network **one, gwr_network *const **gs) {
    const char *name = gwr_layer_attr_name(x, a);
    int64_t n = 0;
    if (gwr_layer_attr_type(x, a) == GWR_ATTR_GRAPH) {
        *gs = one;
        return gwr_layer_get_graph(x, name, one) ? 0 : 1;
    }
    if (gwr_layer_attr_type(x, a) == GWR_ATTR_GRAPHS && !gwr_layer_get_graphs(x, name, gs, &n)) return n;
    return 0;
}

/* Layer `name` in net or, depth first, in the bodies of its layers. */
static gwr_layer *find(gwr_network *net, const char *name) {
    gwr_layer *l = gwr_network_find_layer(net, name);
    if (l && !gwr_layer_is_removed(l)) return l;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *x = gwr_network_layer(net, i);
        for (int a = 0; !gwr_layer_is_removed(x) && a < gwr_layer_num_attrs(x); a++) {
            gwr_network *one, *const *gs;
            int64_t n = bodies(x, a, &one, &gs);
            for (int64_t k = 0; k < n; k++)
                if ((l = find(gs[k], name))) return l;
        }
    }
    return NULL;
}

/* Does any layer of net (or of its bodies) carry provenance? */
static int any_provenance(gwr_network *net) {
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *x = gwr_network_layer(net, i);
        if (gwr_layer_provenance(x)) return 1;
        for (int a = 0; a < gwr_layer_num_attrs(x); a++) {
            gwr_network *one, *const *gs;
            int64_t n = bodies(x, a, &one, &gs);
            for (int64_t k = 0; k < n; k++)
                if (any_provenance(gs[k])) return 1;
        }
    }
    return 0;
}

static int run(int argc, char **argv) {
    const char *model = NULL, *node = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json")) json = 1;
        else if (a[0] == '-' && a[1]) return cli_usage("explain", "unknown option '%s'", a);
        else if (!model) model = a;
        else if (!node) node = a;
        else return cli_usage("explain", "unexpected argument '%s': one MODEL and one NODE", a);
    }
    if (!model) return cli_usage("explain", "missing MODEL");
    if (!node) return cli_usage("explain", "missing NODE (a layer name of the model)");
    gwr_network *net = cli_load(model, NULL);
    if (!net) return CLI_USAGE;
    int rc = CLI_OK;
    gwr_layer *l = find(net, node);
    if (!l) {
        char msg[300];
        snprintf(msg, sizeof msg, "no layer named '%.200s'", node);
        cli_error(model, msg);
        rc = CLI_USAGE;
        goto done;
    }
    const char *prov = gwr_layer_provenance(l);
    char *text = prov ? gwr_provenance_text(gwr_layer_name(l), prov) : NULL;
    if (prov && !text) {
        cli_error(model, gwr_last_errmsg());
        rc = CLI_FAIL;
        goto done;
    }
    if (json) {
        fputs("{\"name\":", stdout);
        gwr_json_str(stdout, gwr_layer_name(l), strlen(gwr_layer_name(l)));
        fputs(",\"op\":", stdout);
        gwr_json_str(stdout, gwr_layer_op(l), strlen(gwr_layer_op(l)));
        printf(",\"provenance\":%s}\n", prov ? prov : "null");
    } else if (text) {
        fputs(text, stdout);
    } else {
        printf("%s (%s) is an original layer: no rewrite made it\n", gwr_layer_name(l), gwr_layer_op(l));
        if (!any_provenance(net))
            printf("(%s records no provenance at all: was it saved with 'gwr optimize --provenance'?)\n", model);
    }
    free(text);
done:
    cli_free_at_exit(net);
    return rc;
}

const cli_command cli_explain = {"explain", "print the rewrite chain that made a layer (its provenance)", run, help};
