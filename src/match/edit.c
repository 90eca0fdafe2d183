/* edit.c - the editing helpers of gwr/match.h: replace a layer's outputs
 * and retire it in one call, copy attributes (graphs deep-copied through
 * the public API), clone a layer onto new inputs. Public API only. */
#include <string.h>

#include "gwr/match.h"
#include "util/util.h"

/* ---- replacing ------------------------------------------------------------------ */

static int in_scope(const gwr_network *net, const gwr_network *of) {
    for (; net; net = gwr_network_parent(net))
        if (net == of) return 1;
    return 0;
}

/* Does t depend on layer l? A backward walk over producers (visited set). -1: out of memory. */
static int depends_on(gwr_tensor *t, const gwr_layer *l) {
    gwr_layer *p = gwr_tensor_parent(t);
    if (!p) return 0;
    gwr_ptrmap seen = {0};
    int64_t cap = 0, n = 0;
    gwr_layer **stack = NULL;
    int r = 0;
    if (gwr_grow((void **)&stack, sizeof *stack, &cap, 1) || gwr_ptrmap_put(&seen, p, p)) r = -1;
    else stack[n++] = p;
    while (n && !r) {
        gwr_layer *x = stack[--n];
        if (x == l) r = 1;
        for (int i = 0; i < gwr_layer_num_inputs(x) && !r; i++) {
            gwr_tensor *in = gwr_layer_input(x, i);
            gwr_layer *q = in ? gwr_tensor_parent(in) : NULL;
            if (!q || gwr_ptrmap_get(&seen, q)) continue;
            if (gwr_ptrmap_put(&seen, q, q) || gwr_grow((void **)&stack, sizeof *stack, &cap, n + 1)) r = -1;
            else stack[n++] = q;
        }
    }
    gwr_free(stack);
    gwr_ptrmap_free(&seen);
    return r;
}

static gwr_status check_replacement(gwr_layer *l, int n, gwr_tensor *const *outs) {
    const char *ln = gwr_layer_name(l);
    if (n != gwr_layer_num_outputs(l) || (n && !outs))
        return gwr_set_last_error(GWR_ERR_INVALID_ARG, "replacing layer '%s': %d new outputs for %d", ln, n,
                                  gwr_layer_num_outputs(l));
    gwr_network *net = gwr_layer_network(l);
    for (int i = 0; i < n; i++) {
        gwr_tensor *o = gwr_layer_output(l, i), *t = outs[i];
        if (!t) {
            if (gwr_tensor_num_live_users(o) || gwr_tensor_output_index(o) >= 0)
                return gwr_set_last_error(GWR_ERR_INVALID_ARG, "replacing layer '%s': output %d ('%s') is read but has no replacement",
                                          ln, i, gwr_tensor_name(o));
            continue;
        }
        if (gwr_tensor_parent(t) == l)
            return gwr_set_last_error(GWR_ERR_INVALID_ARG, "replacing layer '%s': output %d would be replaced by its own output '%s'",
                                      ln, i, gwr_tensor_name(t));
        if (!in_scope(net, gwr_tensor_network(t)))
            return gwr_set_last_error(GWR_ERR_INVALID_ARG, "replacing layer '%s': '%s' is not in the layer's network", ln,
                                      gwr_tensor_name(t));
        gwr_dtype a = gwr_tensor_dtype(o), b = gwr_tensor_dtype(t);
        if (a != GWR_UNDEFINED && b != GWR_UNDEFINED && a != b)
            return gwr_set_last_error(GWR_ERR_TYPE, "replacing layer '%s': output %d ('%s') is %s, its replacement '%s' is %s", ln,
                                      i, gwr_tensor_name(o), gwr_dtype_name(a), gwr_tensor_name(t), gwr_dtype_name(b));
        /* The IR refuses a cycle atomically, but only one tensor at a time:
         * with several outputs, a cycle at a later one is found first. */
        int d = n > 1 ? depends_on(t, l) : 0;
        if (d < 0) return gwr_set_last_error(GWR_ERR_NOMEM, "replacing layer '%s': out of memory", ln);
        if (d) return gwr_set_last_error(GWR_ERR_CYCLE, "replacing layer '%s': '%s' depends on the layer", ln, gwr_tensor_name(t));
    }
    return GWR_OK;
}

gwr_status gwr_match_replace_layer(gwr_layer *l, int n, gwr_tensor *const *outs) {
    if (!l) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_match_replace_layer: NULL layer");
    gwr_status s = check_replacement(l, n, outs);
    if (s) return s;
    for (int i = 0; i < n; i++) {
        if (!outs[i]) continue;
        if ((s = gwr_tensor_replace_all_uses_with(gwr_layer_output(l, i), outs[i])))
            return gwr_set_last_error(s, "replacing layer '%s': %s", gwr_layer_name(l), gwr_network_errmsg(gwr_layer_network(l)));
    }
    return gwr_layer_mark_as_removed(l);
}

gwr_status gwr_match_replace(const gwr_match *m, int n, gwr_tensor *const *outs) {
    if (!m || !m->pattern || m->nlayers < 1 || !m->layers[m->nlayers - 1])
        return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_match_replace: not a successful match");
    gwr_status s = gwr_match_replace_layer(m->layers[m->nlayers - 1], n, outs);
    for (int i = 0; !s && i < m->nlayers - 1; i++)
        if (m->layers[i]) s = gwr_layer_mark_as_removed(m->layers[i]);
    return s;
}

/* ---- attributes and graphs ----------------------------------------------------- */

static gwr_status copy_attrs(gwr_layer *to, const gwr_layer *from, gwr_ptrmap *map);

static gwr_tensor *mapped(gwr_ptrmap *map, gwr_tensor *t) {
    gwr_tensor *m = t && map ? gwr_ptrmap_get(map, t) : NULL;
    return m ? m : t;
}

/* The body of one layer of g, copied into ng. */
static gwr_status clone_body_layer(gwr_network *ng, gwr_layer *ol, gwr_ptrmap *map) {
    int nin = gwr_layer_num_inputs(ol), nout = gwr_layer_num_outputs(ol);
    gwr_tensor **ins = gwr_calloc((size_t)nin + 1, sizeof *ins);
    if (!ins) return gwr_set_last_error(GWR_ERR_NOMEM, "cloning a graph: out of memory");
    for (int i = 0; i < nin; i++) ins[i] = mapped(map, gwr_layer_input(ol, i));
    gwr_layer *nl = gwr_network_add_layer(ng, gwr_layer_op(ol), gwr_layer_domain(ol), NULL, nin, ins, nout, NULL);
    gwr_free(ins);
    if (!nl) return gwr_set_last_error(GWR_ERR_INVALID_GRAPH, "cloning a graph: %s", gwr_network_errmsg(ng));
    gwr_status s = copy_attrs(nl, ol, map);
    if (!s && *gwr_layer_doc(ol)) s = gwr_layer_set_doc(nl, gwr_layer_doc(ol));
    for (int o = 0; o < nout && !s; o++) {
        gwr_type ty;
        gwr_tensor *t = gwr_layer_output(ol, o), *nt = gwr_layer_output(nl, o);
        if (!(s = gwr_tensor_value_type(t, &ty))) s = gwr_tensor_set_value_type(nt, &ty);
        if (!s && gwr_ptrmap_put(map, t, nt)) s = GWR_ERR_NOMEM;
    }
    return s ? gwr_set_last_error(s, "cloning a graph: %s", gwr_network_errmsg(ng)) : GWR_OK;
}

static gwr_status clone_graph(gwr_network *g, gwr_network *parent, gwr_ptrmap *map, gwr_network **out) {
    gwr_network *ng = gwr_network_new_subgraph(parent, gwr_network_name(g));
    if (!ng) return gwr_set_last_error(GWR_ERR_NOMEM, "cloning a graph: out of memory");
    gwr_status s = GWR_OK;
    for (int i = 0; i < gwr_network_num_inputs(g) && !s; i++) {
        gwr_tensor *t = gwr_network_input(g, i), *nt;
        gwr_type ty;
        if ((s = gwr_tensor_value_type(t, &ty))) break;
        if (!(nt = gwr_network_add_input(ng, gwr_tensor_name(t), GWR_UNDEFINED, -1, NULL))) s = GWR_ERR_INVALID_GRAPH;
        else if (!(s = gwr_tensor_set_value_type(nt, &ty)) && gwr_tensor_default(t)) s = gwr_tensor_set_default(nt, gwr_tensor_default(t));
        if (!s && gwr_ptrmap_put(map, t, nt)) s = GWR_ERR_NOMEM;
    }
    int64_t nl = gwr_network_num_layers(g);
    gwr_layer **order = s ? NULL : gwr_calloc((size_t)nl + 1, sizeof *order);
    if (!s && !order) s = GWR_ERR_NOMEM;
    if (!s) s = gwr_network_topo_order(g, order);
    for (int64_t i = 0; i < nl && !s; i++)
        if (!gwr_layer_is_removed(order[i])) s = clone_body_layer(ng, order[i], map);
    gwr_free(order);
    for (int i = 0; i < gwr_network_num_outputs(g) && !s; i++) s = gwr_network_mark_output(ng, mapped(map, gwr_network_output(g, i)));
    if (s) {
        gwr_network_free(ng);
        return gwr_set_last_error(s, "cloning graph '%s': %s", gwr_network_name(g), gwr_last_errmsg());
    }
    *out = ng;
    return GWR_OK;
}

static gwr_status copy_graphs(gwr_layer *to, const char *name, gwr_network *const *gs, int64_t n, int one,
                              gwr_ptrmap *map) {
    gwr_network **ng = gwr_calloc((size_t)n + 1, sizeof *ng);
    if (!ng) return gwr_set_last_error(GWR_ERR_NOMEM, "copying attribute '%s': out of memory", name);
    gwr_status s = GWR_OK;
    int64_t k = 0;
    for (; k < n && !s; k++) s = clone_graph(gs[k], gwr_layer_network(to), map, &ng[k]);
    if (!s) s = one ? gwr_layer_set_graph(to, name, ng[0]) : gwr_layer_set_graphs(to, name, ng, n);
    if (s)
        for (int64_t i = 0; i < k; i++) gwr_network_free(ng[i]);
    gwr_free(ng);
    return s;
}

static gwr_status copy_attr(gwr_layer *to, const gwr_layer *from, int a, gwr_ptrmap *map) {
    const char *nm = gwr_layer_attr_name(from, a);
    int64_t n, i;
    float f;
    size_t len;
    const char *str;
    const int64_t *is;
    const float *fs;
    const gwr_bytes *bs;
    const gwr_weights *w;
    gwr_network *g;
    gwr_network *const *gs;
    switch (gwr_layer_attr_type(from, a)) {
    case GWR_ATTR_INT: return gwr_layer_get_int(from, nm, &i) ? GWR_ERR_TYPE : gwr_layer_set_int(to, nm, i);
    case GWR_ATTR_FLOAT: return gwr_layer_get_float(from, nm, &f) ? GWR_ERR_TYPE : gwr_layer_set_float(to, nm, f);
    case GWR_ATTR_STRING:
        return gwr_layer_get_string(from, nm, &str, &len) ? GWR_ERR_TYPE : gwr_layer_set_bytes(to, nm, str, len);
    case GWR_ATTR_INTS: return gwr_layer_get_ints(from, nm, &is, &n) ? GWR_ERR_TYPE : gwr_layer_set_ints(to, nm, is, n);
    case GWR_ATTR_FLOATS:
        return gwr_layer_get_floats(from, nm, &fs, &n) ? GWR_ERR_TYPE : gwr_layer_set_floats(to, nm, fs, n);
    case GWR_ATTR_STRINGS:
        return gwr_layer_get_strings(from, nm, &bs, &n) ? GWR_ERR_TYPE : gwr_layer_set_bytes_list(to, nm, bs, n);
    case GWR_ATTR_TENSOR: return gwr_layer_get_tensor(from, nm, &w) ? GWR_ERR_TYPE : gwr_layer_set_tensor(to, nm, w);
    case GWR_ATTR_TENSORS:
        return gwr_layer_get_tensors(from, nm, &w, &n) ? GWR_ERR_TYPE : gwr_layer_set_tensors(to, nm, w, n);
    case GWR_ATTR_GRAPH:
        if (gwr_layer_get_graph(from, nm, &g)) return GWR_ERR_TYPE;
        return copy_graphs(to, nm, &g, 1, 1, map);
    case GWR_ATTR_GRAPHS:
        if (gwr_layer_get_graphs(from, nm, &gs, &n)) return GWR_ERR_TYPE;
        return copy_graphs(to, nm, gs, n, 0, map);
    default:
        return gwr_set_last_error(GWR_ERR_UNSUPPORTED, "attribute '%s' of layer '%s' has no type", nm, gwr_layer_name(from));
    }
}

static gwr_status copy_attrs(gwr_layer *to, const gwr_layer *from, gwr_ptrmap *map) {
    for (int a = 0; a < gwr_layer_num_attrs(from); a++) {
        gwr_status s = copy_attr(to, from, a, map);
        if (s) return s;
    }
    return GWR_OK;
}

gwr_status gwr_match_copy_attrs(gwr_layer *to, const gwr_layer *from) {
    if (!to || !from || to == from)
        return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_match_copy_attrs: %s", to == from && to ? "the same layer" : "NULL layer");
    gwr_ptrmap map = {0};
    gwr_status s = copy_attrs(to, from, &map);
    gwr_ptrmap_free(&map);
    if (s && s != GWR_ERR_NOMEM && s != GWR_ERR_UNSUPPORTED)
        gwr_set_last_error(s, "copying the attributes of '%s': %s", gwr_layer_name(from), gwr_network_errmsg(gwr_layer_network(to)));
    return s;
}

gwr_layer *gwr_match_clone_layer(gwr_layer *l, int ninputs, gwr_tensor *const *inputs) {
    if (!l || ninputs < 0 || (ninputs && !inputs)) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_match_clone_layer: %s", l ? "bad inputs" : "NULL layer");
        return NULL;
    }
    gwr_network *net = gwr_layer_network(l);
    gwr_layer *nl = gwr_network_add_layer(net, gwr_layer_op(l), gwr_layer_domain(l), NULL, ninputs, inputs,
                                          gwr_layer_num_outputs(l), NULL);
    if (!nl) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "cloning '%s': %s", gwr_layer_name(l), gwr_network_errmsg(net));
        return NULL;
    }
    gwr_status s = gwr_match_copy_attrs(nl, l);
    if (!s && (s = gwr_layer_infer(nl))) gwr_set_last_error(s, "cloning '%s': %s", gwr_layer_name(l), gwr_network_errmsg(net));
    if (s) {
        gwr_layer_mark_as_removed(nl);
        return NULL;
    }
    return nl;
}
