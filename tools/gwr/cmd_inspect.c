/* cmd_inspect.c - `gwr inspect MODEL [--json]`: what a model holds, without
 * printing every layer: metadata, opsets, interface, op histogram,
 * parameter count. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(FILE *out) {
    fprintf(out,
            "usage: gwr inspect MODEL [--json]\n"
            "\n"
            "Summarizes an ONNX model: IR version, producer, opset imports, inputs and outputs\n"
            "with element types and shapes (symbolic dimensions by name), the number of layers\n"
            "(nodes and initializers of the main graph; layers inside If/Loop/Scan bodies are\n"
            "counted separately), a histogram of ops (domain::op, most frequent first), the\n"
            "number of parameters (elements of every constant and initializer, and of graph\n"
            "inputs' default values, subgraphs included) and their bytes, the custom domains\n"
            "(every domain but the default and ai.onnx.ml) and the metadata properties.\n"
            "\n"
            "  --json   print one JSON object instead of text\n"
            "\n"
            "Exit status: 0 success, 1 the model cannot be read, 2 bad usage.\n");
}

/* ---- gathering ------------------------------------------------------------ */

typedef struct op_entry {
    const char *domain, *op;
    char *key; /* "op" for the default domain, else "domain::op" */
    int64_t count;
} op_entry;

typedef struct summary {
    int64_t layers;     /* live layers of the main graph */
    int64_t sub_layers; /* live layers of nested graphs, at any depth */
    int64_t params;     /* elements */
    uint64_t bytes;
    op_entry *ops; /* histogram, sorted */
    size_t nops;
    const char **domains; /* custom domains, sorted, unique */
    size_t ndomains, domains_cap;
} summary;

static int add_domain(summary *s, const char *d) {
    if (!d || !*d || !strcmp(d, "ai.onnx") || !strcmp(d, "ai.onnx.ml")) return 0;
    if (s->ndomains == s->domains_cap) {
        size_t cap = s->domains_cap ? 2 * s->domains_cap : 16;
        const char **p = realloc(s->domains, cap * sizeof *p);
        if (!p) return -1;
        s->domains = p;
        s->domains_cap = cap;
    }
    s->domains[s->ndomains++] = d;
    return 0;
}

static void add_weights(summary *s, const gwr_weights *w) {
    if (!w) return;
    int64_t n = gwr_shape_numel(w->rank, w->dims);
    if (n > 0) s->params += n;
    s->bytes += w->nbytes;
}

/* Parameters, custom domains and layer counts of net and its subgraphs. */
static int walk(summary *s, gwr_network *net, int depth) {
    for (int i = 0; i < gwr_network_num_inputs(net); i++) add_weights(s, gwr_tensor_default(gwr_network_input(net, i)));
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (gwr_layer_is_removed(l)) continue;
        if (depth == 0) s->layers++;
        else s->sub_layers++;
        if (add_domain(s, gwr_layer_domain(l))) return -1;
        const gwr_weights *w;
        if (gwr_layer_type(l) == GWR_LAYER_CONSTANT && gwr_layer_get_tensor(l, "value", &w) == GWR_OK)
            add_weights(s, w);
        for (int a = 0; a < gwr_layer_num_attrs(l); a++) {
            const char *name = gwr_layer_attr_name(l, a);
            gwr_network *g;
            gwr_network *const *gs;
            int64_t ng;
            if (gwr_layer_attr_type(l, a) == GWR_ATTR_GRAPH && gwr_layer_get_graph(l, name, &g) == GWR_OK) {
                if (walk(s, g, depth + 1)) return -1;
            } else if (gwr_layer_attr_type(l, a) == GWR_ATTR_GRAPHS &&
                       gwr_layer_get_graphs(l, name, &gs, &ng) == GWR_OK) {
                for (int64_t k = 0; k < ng; k++)
                    if (walk(s, gs[k], depth + 1)) return -1;
            }
        }
    }
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static int cmp_domain_op(const void *a, const void *b) {
    const op_entry *x = a, *y = b;
    int c = strcmp(x->domain, y->domain);
    return c ? c : strcmp(x->op, y->op);
}

static int cmp_count_key(const void *a, const void *b) {
    const op_entry *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return strcmp(x->key, y->key);
}

static int summarize(summary *s, gwr_network *net) {
    memset(s, 0, sizeof *s);
    for (int i = 0; i < gwr_network_num_opsets(net); i++)
        if (add_domain(s, gwr_network_opset_domain(net, i))) return -1;
    if (walk(s, net, 0)) return -1;
    if (s->ndomains) {
        qsort(s->domains, s->ndomains, sizeof *s->domains, cmp_str);
        size_t k = 1;
        for (size_t i = 1; i < s->ndomains; i++)
            if (strcmp(s->domains[i], s->domains[k - 1])) s->domains[k++] = s->domains[i];
        s->ndomains = k;
    }
    /* The histogram: sort (domain, op) pairs, count runs, then order the
     * runs by count. O(n log n) whatever the number of distinct ops. */
    if (s->layers == 0) return 0;
    op_entry *e = calloc((size_t)s->layers, sizeof *e);
    if (!e) return -1;
    size_t n = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (gwr_layer_is_removed(l) || n == (size_t)s->layers) continue;
        e[n].domain = gwr_layer_domain(l);
        e[n].op = gwr_layer_op(l);
        e[n].count = 1;
        n++;
    }
    qsort(e, n, sizeof *e, cmp_domain_op);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k && !cmp_domain_op(&e[k - 1], &e[i])) {
            e[k - 1].count++;
            continue;
        }
        e[k++] = e[i];
    }
    s->ops = e;
    s->nops = k;
    for (size_t i = 0; i < k; i++) {
        size_t len = strlen(e[i].domain) + strlen(e[i].op) + 3;
        if (!(e[i].key = malloc(len))) return -1;
        snprintf(e[i].key, len, "%s%s%s", e[i].domain, *e[i].domain ? "::" : "", e[i].op);
    }
    qsort(e, k, sizeof *e, cmp_count_key);
    return 0;
}

static void summary_free(summary *s) {
    for (size_t i = 0; i < s->nops; i++) free(s->ops[i].key);
    free(s->ops);
    free(s->domains);
}

/* A network property as text, or NULL. */
static const char *prop(gwr_network *net, const char *key, size_t *len) {
    size_t n = 0;
    const char *v = gwr_network_prop(net, key, &n);
    if (len) *len = n;
    return v;
}

/* Is v[0..len) a plain decimal integer (what the importer writes for
 * ir_version and model_version)? */
static int is_integer(const char *v, size_t len) {
    size_t i = (len && v[0] == '-') ? 1 : 0;
    if (i == len || len - i > 18) return 0;
    for (; i < len; i++)
        if (v[i] < '0' || v[i] > '9') return 0;
    return 1;
}

#define META_PREFIX "onnx.meta."

/* ---- text ----------------------------------------------------------------- */

/* Bytes as readable text on one line: backslashes, control characters and
 * bytes that are not UTF-8 escaped (\\, \n, \xNN). */
static void text_str(FILE *out, const char *s, size_t len) {
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)s[i];
        size_t n = gwr_utf8_len(s + i, len - i);
        if (c == '\n') fputs("\\n", out);
        else if (c == '\\') fputs("\\\\", out);
        else if (c < 0x20 || c == 0x7f || n == 0) fprintf(out, "\\x%02x", c);
        else {
            fwrite(s + i, 1, n, out);
            i += n;
            continue;
        }
        i++;
    }
}

static void text_prop(FILE *out, gwr_network *net, const char *key, const char *none) {
    size_t len;
    const char *v = prop(net, key, &len);
    if (v) text_str(out, v, len);
    else fputs(none, out);
}

static void text_tensor(FILE *out, const gwr_tensor *t) {
    char small[256];
    int n = gwr_tensor_type_str(t, small, sizeof small);
    char *ty = small;
    if (n >= (int)sizeof small && (ty = malloc((size_t)n + 1))) gwr_tensor_type_str(t, ty, (size_t)n + 1);
    fputs("  ", out);
    const char *name = gwr_tensor_name(t);
    text_str(out, name, strlen(name));
    fputs("  ", out);
    text_str(out, ty ? ty : small, strlen(ty ? ty : small));
    if (gwr_tensor_default(t)) fputs("  (has a default value)", out);
    fputc('\n', out);
    if (ty != small) free(ty);
}

static void human_bytes(char *buf, size_t size, uint64_t b) {
    static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1024 && u < 4) v /= 1024, u++;
    if (u == 0) snprintf(buf, size, "%llu bytes", (unsigned long long)b);
    else snprintf(buf, size, "%llu bytes, %.1f %s", (unsigned long long)b, v, unit[u]);
}

static void print_text(FILE *out, const char *path, gwr_network *net, const summary *s) {
    fprintf(out, "model:          ");
    text_str(out, path, strlen(path));
    fprintf(out, "\nir_version:     ");
    text_prop(out, net, "onnx.ir_version", "(not set)");
    fprintf(out, "\nproducer:       ");
    text_prop(out, net, "onnx.producer_name", "(none)");
    if (prop(net, "onnx.producer_version", NULL)) {
        fputc(' ', out);
        text_prop(out, net, "onnx.producer_version", "");
    }
    fprintf(out, "\ngraph:          ");
    const char *gname = gwr_network_name(net);
    text_str(out, gname, strlen(gname));
    if (prop(net, "onnx.domain", NULL)) {
        fprintf(out, "\ndomain:         ");
        text_prop(out, net, "onnx.domain", "");
    }
    if (prop(net, "onnx.model_version", NULL)) {
        fprintf(out, "\nmodel_version:  ");
        text_prop(out, net, "onnx.model_version", "");
    }
    fprintf(out, "\nopsets:         ");
    for (int i = 0; i < gwr_network_num_opsets(net); i++) {
        const char *d = gwr_network_opset_domain(net, i);
        if (i) fputs(", ", out);
        text_str(out, *d ? d : "ai.onnx", strlen(*d ? d : "ai.onnx"));
        fprintf(out, " %lld", (long long)gwr_network_opset(net, d));
    }
    if (gwr_network_num_opsets(net) == 0) fputs("(none)", out);
    fprintf(out, "\ninputs:         %d\n", gwr_network_num_inputs(net));
    for (int i = 0; i < gwr_network_num_inputs(net); i++) text_tensor(out, gwr_network_input(net, i));
    fprintf(out, "outputs:        %d\n", gwr_network_num_outputs(net));
    for (int i = 0; i < gwr_network_num_outputs(net); i++) text_tensor(out, gwr_network_output(net, i));
    fprintf(out, "layers:         %lld", (long long)s->layers);
    if (s->sub_layers) fprintf(out, " (and %lld in subgraphs)", (long long)s->sub_layers);
    fprintf(out, "\nops:            %zu distinct\n", s->nops);
    for (size_t i = 0; i < s->nops; i++) {
        fprintf(out, "  %8lld  ", (long long)s->ops[i].count);
        text_str(out, s->ops[i].key, strlen(s->ops[i].key));
        fputc('\n', out);
    }
    char hb[64];
    human_bytes(hb, sizeof hb, s->bytes);
    fprintf(out, "parameters:     %lld (%s)\n", (long long)s->params, hb);
    fprintf(out, "custom domains: ");
    for (size_t i = 0; i < s->ndomains; i++) {
        if (i) fputs(", ", out);
        text_str(out, s->domains[i], strlen(s->domains[i]));
    }
    if (!s->ndomains) fputs("(none)", out);
    fputc('\n', out);
    int header = 0;
    for (int i = 0; i < gwr_network_num_props(net); i++) {
        const char *key = gwr_network_prop_key(net, i);
        if (strncmp(key, META_PREFIX, strlen(META_PREFIX))) continue;
        if (!header++) fputs("metadata:\n", out);
        fputs("  ", out);
        text_str(out, key + strlen(META_PREFIX), strlen(key + strlen(META_PREFIX)));
        fputs(": ", out);
        text_prop(out, net, key, "");
        fputc('\n', out);
    }
}

/* ---- JSON ----------------------------------------------------------------- */

static void json_cstr(FILE *out, const char *s) { gwr_json_str(out, s ? s : "", s ? strlen(s) : 0); }

/* A property as a JSON string (or number when `numeric` and it is one),
 * null when absent. */
static void json_prop(FILE *out, gwr_network *net, const char *key, int numeric) {
    size_t len;
    const char *v = prop(net, key, &len);
    if (!v) fputs("null", out);
    else if (numeric && is_integer(v, len)) fwrite(v, 1, len, out);
    else gwr_json_str(out, v, len);
}

static void json_type(FILE *out, gwr_network *net, const gwr_type *ty, int depth) {
    if (!ty || depth > 64) {
        fputs("null", out);
        return;
    }
    fputs("{\"kind\": ", out);
    json_cstr(out, gwr_value_kind_name(ty->kind));
    switch (ty->kind) {
    case GWR_VALUE_SEQUENCE:
    case GWR_VALUE_OPTIONAL:
        fputs(", \"elem\": ", out);
        json_type(out, net, ty->elem, depth + 1);
        break;
    case GWR_VALUE_MAP:
        fputs(", \"key\": ", out);
        json_cstr(out, gwr_dtype_name(ty->dtype));
        fputs(", \"value\": ", out);
        json_type(out, net, ty->elem, depth + 1);
        break;
    default:
        fputs(", \"dtype\": ", out);
        json_cstr(out, gwr_dtype_name(ty->dtype));
        fputs(", \"shape\": ", out);
        if (ty->rank < 0 || (ty->rank > 0 && !ty->dims)) {
            fputs("null", out);
            break;
        }
        fputc('[', out);
        for (int i = 0; i < ty->rank; i++) {
            const char *sym = gwr_network_dim_name(net, ty->dims[i]);
            if (i) fputs(", ", out);
            if (sym) json_cstr(out, sym);
            else if (ty->dims[i] >= 0) fprintf(out, "%lld", (long long)ty->dims[i]);
            else fputs("null", out);
        }
        fputc(']', out);
    }
    fputc('}', out);
}

static void json_tensor(FILE *out, gwr_network *net, const gwr_tensor *t) {
    gwr_type ty;
    char small[256];
    int n = gwr_tensor_type_str(t, small, sizeof small);
    char *str = small;
    if (n >= (int)sizeof small && (str = malloc((size_t)n + 1))) gwr_tensor_type_str(t, str, (size_t)n + 1);
    fputs("{\"name\": ", out);
    json_cstr(out, gwr_tensor_name(t));
    fputs(", \"type\": ", out);
    json_cstr(out, str ? str : small);
    if (str != small) free(str);
    fputs(", \"value_type\": ", out);
    if (gwr_tensor_value_type(t, &ty) == GWR_OK) json_type(out, net, &ty, 0);
    else fputs("null", out);
    fprintf(out, ", \"has_default\": %s}", gwr_tensor_default(t) ? "true" : "false");
}

static void print_json(FILE *out, const char *path, gwr_network *net, const summary *s) {
    fputs("{\n  \"file\": ", out);
    json_cstr(out, path);
    fputs(",\n  \"ir_version\": ", out);
    json_prop(out, net, "onnx.ir_version", 1);
    fputs(",\n  \"producer\": {\"name\": ", out);
    json_prop(out, net, "onnx.producer_name", 0);
    fputs(", \"version\": ", out);
    json_prop(out, net, "onnx.producer_version", 0);
    fputs("},\n  \"domain\": ", out);
    json_prop(out, net, "onnx.domain", 0);
    fputs(",\n  \"model_version\": ", out);
    json_prop(out, net, "onnx.model_version", 1);
    fputs(",\n  \"graph_name\": ", out);
    json_cstr(out, gwr_network_name(net));
    fputs(",\n  \"opsets\": [", out);
    for (int i = 0; i < gwr_network_num_opsets(net); i++) {
        const char *d = gwr_network_opset_domain(net, i);
        fputs(i ? ", {\"domain\": " : "{\"domain\": ", out);
        json_cstr(out, d);
        fprintf(out, ", \"version\": %lld}", (long long)gwr_network_opset(net, d));
    }
    fputs("],\n  \"inputs\": [", out);
    for (int i = 0; i < gwr_network_num_inputs(net); i++) {
        fputs(i ? ",\n    " : "\n    ", out);
        json_tensor(out, net, gwr_network_input(net, i));
    }
    fputs(gwr_network_num_inputs(net) ? "\n  ],\n  \"outputs\": [" : "],\n  \"outputs\": [", out);
    for (int i = 0; i < gwr_network_num_outputs(net); i++) {
        fputs(i ? ",\n    " : "\n    ", out);
        json_tensor(out, net, gwr_network_output(net, i));
    }
    fprintf(out, "%s],\n  \"layers\": %lld,\n  \"subgraph_layers\": %lld,\n  \"ops\": {",
            gwr_network_num_outputs(net) ? "\n  " : "", (long long)s->layers, (long long)s->sub_layers);
    for (size_t i = 0; i < s->nops; i++) {
        fputs(i ? ", " : "", out);
        json_cstr(out, s->ops[i].key);
        fprintf(out, ": %lld", (long long)s->ops[i].count);
    }
    fprintf(out, "},\n  \"parameters\": %lld,\n  \"parameter_bytes\": %llu,\n  \"custom_domains\": [",
            (long long)s->params, (unsigned long long)s->bytes);
    for (size_t i = 0; i < s->ndomains; i++) {
        fputs(i ? ", " : "", out);
        json_cstr(out, s->domains[i]);
    }
    fputs("],\n  \"metadata\": {", out);
    int nmeta = 0;
    for (int i = 0; i < gwr_network_num_props(net); i++) {
        const char *key = gwr_network_prop_key(net, i);
        if (strncmp(key, META_PREFIX, strlen(META_PREFIX))) continue;
        fputs(nmeta++ ? ", " : "", out);
        json_cstr(out, key + strlen(META_PREFIX));
        fputs(": ", out);
        json_prop(out, net, key, 0);
    }
    fputs("}\n}\n", out);
}

/* ---- the command ---------------------------------------------------------- */

static int run(int argc, char **argv) {
    const char *path = NULL;
    int json = 0, opts = 1;
    for (int i = 1; i < argc; i++) {
        if (opts && !strcmp(argv[i], "--json")) {
            json = 1;
        } else if (opts && !strcmp(argv[i], "--")) {
            opts = 0;
        } else if (opts && argv[i][0] == '-' && argv[i][1]) {
            return cli_usage("inspect", "unknown option '%s'", argv[i]);
        } else if (!path) {
            path = argv[i];
        } else {
            return cli_usage("inspect", "unexpected argument '%s': one MODEL only", argv[i]);
        }
    }
    if (!path) return cli_usage("inspect", "missing MODEL");
    gwr_network *net = cli_load(path, NULL);
    if (!net) return CLI_FAIL;
    summary s;
    int rc = CLI_OK;
    if (summarize(&s, net)) {
        cli_error(path, "out of memory");
        rc = CLI_FAIL;
    } else {
        if (json) print_json(stdout, path, net, &s);
        else print_text(stdout, path, net, &s);
        if (fflush(stdout) || ferror(stdout)) {
            cli_error("inspect", "cannot write to standard output");
            rc = CLI_FAIL;
        }
    }
    summary_free(&s);
    gwr_network_free(net);
    return rc;
}

const cli_command cli_inspect = {"inspect", "summarize an ONNX model: metadata, interface, ops, parameters", run,
                                 help};
