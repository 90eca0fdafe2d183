/* shapes.c - `--shape` with one meaning in every command (run, verify,
 * optimize, analyze). `--shape NAME=D0,D1,...` is the whole shape of the
 * model's input NAME; `--shape SYM=N` binds the symbolic dim SYM to N.
 * Which one is decided by the model: NAME an input, SYM a symbolic dim of
 * it; a name that is both, or neither, is refused. A whole shape also binds
 * the symbolic dims the input declares (x [batch, 3] given 4,3 binds
 * batch=4 for every other tensor), so the two forms never disagree. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void cli_shapes_free(cli_shapes *sh) {
    free(sh->args);
    free(sh->inputs), free(sh->dims), free(sh->input_arg);
    for (int i = 0; i < sh->nbind; i++) free((char *)sh->bind[i].name);
    free(sh->bind), free(sh->bind_arg);
    memset(sh, 0, sizeof *sh);
}

/* The length of the NAME of "NAME=REST"; 0 for a bad form. */
static size_t name_len(const char *arg) {
    const char *eq = strchr(arg, '=');
    return eq && eq != arg && eq[1] ? (size_t)(eq - arg) : 0;
}

int cli_shapes_add(cli_shapes *sh, const char *cmd, const char *arg) {
    size_t n = name_len(arg);
    if (!n) return cli_usage(cmd, "--shape '%s': expected INPUT=D0,D1,... or SYMBOL=N", arg);
    for (int i = 0; i < sh->nargs; i++)
        if (name_len(sh->args[i]) == n && !strncmp(sh->args[i], arg, n))
            return cli_usage(cmd, "--shape '%s': '%.*s' given twice", arg, (int)n, arg);
    /* The numbers now, so that a bad one is refused before the model loads. */
    int64_t dims[GWR_MAX_RANK];
    int rank;
    const char *why;
    if (cli_parse_dims(arg + n + 1, dims, &rank, &why))
        return cli_usage(cmd, "--shape '%s': %s; expected INPUT=D0,D1,... (integers >= 0), INPUT=scalar or SYMBOL=N",
                         arg, why);
    const char **v = realloc(sh->args, (size_t)(sh->nargs + 1) * sizeof *v);
    if (!v) {
        cli_error(cmd, "out of memory");
        return CLI_FAIL;
    }
    sh->args = v;
    v[sh->nargs++] = arg;
    return CLI_OK;
}

int cli_parse_dims(const char *s, int64_t *dims, int *rank, const char **why) {
    *rank = 0;
    if (!strcmp(s, "scalar")) return 0;
    char num[32];
    while (*s) {
        const char *c = strchr(s, ',');
        size_t n = c ? (size_t)(c - s) : strlen(s);
        if (*rank == GWR_MAX_RANK) return *why = "more dims than gwr's rank limit", -1;
        if (n >= sizeof num) return *why = "a dim past int64 (at most 9223372036854775807)", -1;
        memcpy(num, s, n), num[n] = 0;
        if (cli_parse_int(num, &dims[(*rank)++], why)) return -1;
        s += n;
        if (*s == ',' && !*++s) return *why = "not an integer", -1;
    }
    if (!*rank) return *why = "no dims", -1;
    return 0;
}

/* Does a tensor of g (or of a body inside it) have the symbolic dim
 * named `name`? */
static int tensor_has_sym(gwr_network *root, const gwr_tensor *t, const char *name) {
    for (int d = 0; t && d < gwr_tensor_rank(t); d++) {
        gwr_dim x = gwr_tensor_dim(t, d);
        const char *s = GWR_DIM_IS_SYM(x) ? gwr_network_dim_name(root, x) : NULL;
        if (s && !strcmp(s, name)) return 1;
    }
    return 0;
}

static int net_has_sym(gwr_network *root, gwr_network *g, const char *name, int depth) {
    if (depth > 64) return 0;
    for (int i = 0; i < gwr_network_num_inputs(g); i++)
        if (tensor_has_sym(root, gwr_network_input(g, i), name)) return 1;
    for (int64_t i = 0; i < gwr_network_num_layers(g); i++) {
        gwr_layer *l = gwr_network_layer(g, i);
        if (gwr_layer_is_removed(l)) continue;
        for (int o = 0; o < gwr_layer_num_outputs(l); o++)
            if (tensor_has_sym(root, gwr_layer_output(l, o), name)) return 1;
        for (int a = 0; a < gwr_layer_num_attrs(l); a++) {
            const char *an = gwr_layer_attr_name(l, a);
            gwr_network *b, *const *bs = NULL;
            int64_t nb = 0;
            if (gwr_layer_attr_type(l, a) == GWR_ATTR_GRAPH && !gwr_layer_get_graph(l, an, &b)) bs = &b, nb = 1;
            else if (gwr_layer_attr_type(l, a) == GWR_ATTR_GRAPHS) gwr_layer_get_graphs(l, an, &bs, &nb);
            for (int64_t k = 0; k < nb; k++)
                if (net_has_sym(root, bs[k], name, depth + 1)) return 1;
        }
    }
    return 0;
}

static gwr_tensor *input_named(gwr_network *net, const char *name) {
    for (int i = 0; i < gwr_network_num_inputs(net); i++)
        if (!strcmp(gwr_tensor_name(gwr_network_input(net, i)), name)) return gwr_network_input(net, i);
    return NULL;
}

/* Binds sym to v (arg says where it came from); a second binding of the
 * same symbol to another value is bad usage naming both. */
static int bind(cli_shapes *sh, const char *cmd, const char *sym, int64_t v, const char *arg) {
    for (int i = 0; i < sh->nbind; i++)
        if (!strcmp(sh->bind[i].name, sym)) {
            if (sh->bind[i].value == v) return CLI_OK;
            return cli_usage(cmd, "--shape '%s': makes dim '%s' %lld, but --shape '%s' makes it %lld", arg, sym,
                             (long long)v, sh->bind_arg[i], (long long)sh->bind[i].value);
        }
    gwr_dim_binding *b = realloc(sh->bind, (size_t)(sh->nbind + 1) * sizeof *b);
    if (b) sh->bind = b;
    const char **ba = realloc(sh->bind_arg, (size_t)(sh->nbind + 1) * sizeof *ba);
    if (ba) sh->bind_arg = ba;
    char *name = gwr_strdup(sym);
    if (!b || !ba || !name) {
        free(name);
        cli_error(cmd, "out of memory");
        return CLI_FAIL;
    }
    b[sh->nbind] = (gwr_dim_binding){name, v};
    ba[sh->nbind++] = arg;
    return CLI_OK;
}

int cli_shapes_resolve(cli_shapes *sh, const char *cmd, gwr_network *net, const char *also) {
    sh->inputs = calloc((size_t)sh->nargs + 1, sizeof *sh->inputs);
    sh->dims = calloc((size_t)sh->nargs + 1, sizeof *sh->dims);
    sh->input_arg = calloc((size_t)sh->nargs + 1, sizeof *sh->input_arg);
    if (!sh->inputs || !sh->dims || !sh->input_arg) {
        cli_error(cmd, "out of memory");
        return CLI_FAIL;
    }
    /* Symbols first, then whole shapes: an explicit SYM=N is what a whole
     * shape that disagrees is compared with. */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < sh->nargs; i++) {
            const char *arg = sh->args[i];
            size_t n = name_len(arg);
            char name[256];
            if (n >= sizeof name) return cli_usage(cmd, "--shape '%s': the name is too long", arg);
            memcpy(name, arg, n), name[n] = 0;
            gwr_tensor *in = input_named(net, name);
            int sym = net_has_sym(net, net, name, 0) || (also && !strcmp(name, also));
            int64_t dims[GWR_MAX_RANK];
            int rank;
            const char *why;
            cli_parse_dims(arg + n + 1, dims, &rank, &why); /* checked by cli_shapes_add */
            if (in && sym)
                return cli_usage(cmd, "--shape '%s': '%s' is both an input and a symbolic dim of the model; rename one",
                                 arg, name);
            if (!in && !sym)
                return cli_usage(cmd, "--shape '%s': the model has no input and no symbolic dim '%s'", arg, name);
            if (sym && pass == 0) {
                if (rank != 1 || !strcmp(arg + n + 1, "scalar"))
                    return cli_usage(cmd, "--shape '%s': '%s' is a symbolic dim: give one extent, %s=N", arg, name, name);
                int rc = bind(sh, cmd, name, dims[0], arg);
                if (rc) return rc;
            }
            if (!in || pass == 0) continue;
            int r = gwr_tensor_rank(in);
            if (r >= 0 && r != rank)
                return cli_usage(cmd, "--shape '%s': input '%s' has rank %d, not %d", arg, name, r, rank);
            for (int d = 0; d < rank && r >= 0; d++) {
                gwr_dim x = gwr_tensor_dim(in, d);
                if (GWR_DIM_IS_KNOWN(x) && x != dims[d])
                    return cli_usage(cmd, "--shape '%s': dim %d of input '%s' is %lld, not %lld", arg, d, name,
                                     (long long)x, (long long)dims[d]);
                const char *s = GWR_DIM_IS_SYM(x) ? gwr_network_dim_name(net, x) : NULL;
                int rc = s ? bind(sh, cmd, s, dims[d], arg) : CLI_OK;
                if (rc) return rc;
            }
            int k = sh->ninputs++;
            memcpy(sh->dims[k], dims, sizeof dims);
            sh->inputs[k] = (gwr_input_shape){gwr_tensor_name(in), rank, sh->dims[k]};
            sh->input_arg[k] = arg;
        }
    return CLI_OK;
}

const gwr_input_shape *cli_shapes_input(const cli_shapes *sh, const char *name) {
    for (int i = 0; i < sh->ninputs; i++)
        if (!strcmp(sh->inputs[i].name, name)) return &sh->inputs[i];
    return NULL;
}

int cli_shapes_need_known(const cli_shapes *sh, const char *cmd, gwr_network *net, const char *const *given,
                          int ngiven) {
    for (int i = 0; i < gwr_network_num_inputs(net); i++) {
        gwr_tensor *t = gwr_network_input(net, i);
        const char *name = gwr_tensor_name(t);
        int g = 0;
        while (g < ngiven && strcmp(given[g], name)) g++;
        if (g < ngiven || cli_shapes_input(sh, name) || gwr_tensor_default(t) ||
            gwr_tensor_kind(t) != GWR_VALUE_TENSOR)
            continue;
        if (gwr_tensor_rank(t) < 0)
            return cli_usage(cmd, "input '%s' has an unknown rank: give --shape %s=D0,D1,...", name, name);
        for (int d = 0; d < gwr_tensor_rank(t); d++) {
            gwr_dim x = gwr_tensor_dim(t, d);
            if (GWR_DIM_IS_KNOWN(x) || GWR_DIM_IS_SYM(x)) continue;
            char want[256];
            int n = 0;
            for (int e = 0; e < gwr_tensor_rank(t) && n < (int)sizeof want - 24; e++) {
                gwr_dim y = gwr_tensor_dim(t, e);
                const char *s = GWR_DIM_IS_SYM(y) ? gwr_network_dim_name(net, y) : NULL;
                n += snprintf(want + n, sizeof want - (size_t)n, "%s", e ? "," : "");
                if (GWR_DIM_IS_KNOWN(y)) n += snprintf(want + n, sizeof want - (size_t)n, "%lld", (long long)y);
                else if (s) n += snprintf(want + n, sizeof want - (size_t)n, "%s", s);
                else n += snprintf(want + n, sizeof want - (size_t)n, "D%d", e);
            }
            return cli_usage(cmd, "input '%s' dim %d is unknown (unnamed): give --shape %s=%s", name, d, name, want);
        }
    }
    return CLI_OK;
}

int cli_shapes_apply(const cli_shapes *sh, const char *cmd, const char *path, gwr_network *net) {
    int changed = 0;
    for (int i = 0; i < sh->ninputs; i++) {
        gwr_tensor *t = gwr_network_input(net, 0);
        for (int k = 0; k < gwr_network_num_inputs(net); k++)
            if (!strcmp(gwr_tensor_name(gwr_network_input(net, k)), sh->inputs[i].name)) t = gwr_network_input(net, k);
        int r = sh->inputs[i].rank, unknown = gwr_tensor_rank(t) < 0;
        gwr_dim dims[GWR_MAX_RANK];
        for (int d = 0; d < r; d++) {
            gwr_dim x = unknown ? GWR_DIM_UNKNOWN : gwr_tensor_dim(t, d);
            /* symbols stay: the bindings set them everywhere at once */
            dims[d] = GWR_DIM_IS_SYM(x) ? x : sh->inputs[i].dims[d];
            unknown |= !GWR_DIM_IS_KNOWN(x) && !GWR_DIM_IS_SYM(x);
        }
        if (!unknown) continue;
        if (gwr_tensor_set_type(t, gwr_tensor_dtype(t), r, dims)) {
            cli_error(path, gwr_network_errmsg(net));
            return CLI_FAIL;
        }
        changed = 1;
    }
    if (!changed) return CLI_OK;
    /* The dims now known flow on: the layers' types again, in order (a
     * layer whose rule cannot say more keeps what it had). */
    int64_t nl = gwr_network_num_layers(net);
    gwr_layer **order = malloc((size_t)(nl ? nl : 1) * sizeof *order);
    if (!order) {
        cli_error(cmd, "out of memory");
        return CLI_FAIL;
    }
    if (gwr_network_topo_order(net, order)) {
        free(order);
        cli_error(path, gwr_network_errmsg(net));
        return CLI_FAIL;
    }
    for (int64_t i = 0; i < nl; i++) {
        gwr_layer *l = order[i];
        int no = gwr_layer_num_outputs(l);
        if (gwr_layer_is_removed(l) || gwr_layer_type(l) == GWR_LAYER_CONSTANT || no > 64) continue;
        struct {
            gwr_dtype dt;
            int rank;
            gwr_dim dims[GWR_MAX_RANK];
        } was[64];
        for (int o = 0; o < no; o++) {
            gwr_tensor *y = gwr_layer_output(l, o);
            was[o].dt = gwr_tensor_dtype(y), was[o].rank = gwr_tensor_rank(y);
            for (int d = 0; d < was[o].rank && d < GWR_MAX_RANK; d++) was[o].dims[d] = gwr_tensor_dim(y, d);
        }
        gwr_status st = gwr_layer_infer(l);
        for (int o = 0; o < no; o++) {
            gwr_tensor *y = gwr_layer_output(l, o);
            if (gwr_tensor_kind(y) != GWR_VALUE_TENSOR) continue;
            if (st || (gwr_tensor_rank(y) < 0 && was[o].rank >= 0) ||
                (gwr_tensor_dtype(y) == GWR_UNDEFINED && was[o].dt != GWR_UNDEFINED))
                gwr_tensor_set_type(y, was[o].dt, was[o].rank, was[o].rank >= 0 ? was[o].dims : NULL);
        }
    }
    free(order);
    return CLI_OK;
}
