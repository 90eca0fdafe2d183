/* network.c - networks: creation and freeing (layers, their attributes
 * and subgraphs with them), name, listeners, inputs and outputs. Names
 * are in names.c, layers in layer.c, graph algorithms in order.c and
 * graph.c. */
#include <stdlib.h>
#include <string.h>

#include "ir/ir_internal.h"

/* ---- networks ---- */

static gwr_network *network_alloc(const char *name) {
    gwr_network *net = gwr_calloc(1, sizeof *net);
    if (!net) {
        gwr_set_last_error(GWR_ERR_NOMEM, "gwr_network_new: out of memory");
        return NULL;
    }
    net->name = gwr_strdup(name ? name : "");
    if (!net->name) {
        gwr_free(net);
        gwr_set_last_error(GWR_ERR_NOMEM, "gwr_network_new: out of memory");
        return NULL;
    }
    net->root = net;
    gwr_arena_init(&net->arena);
    return net;
}

gwr_network *gwr_network_new(const char *name) { return network_alloc(name); }

gwr_network *gwr_network_new_subgraph(gwr_network *parent, const char *name) {
    if (!parent) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_new_subgraph: NULL parent");
        return NULL;
    }
    gwr_network *net = network_alloc(name);
    if (!net) return NULL;
    net->parent = parent;
    net->root = parent->root;
    return net;
}

/* ---- freeing: a layer with its outputs and attributes, a network with
 * its layers and subgraphs (an attribute's graph is a network) ---- */

static void tensor_free_fields(gwr_tensor *t) {
    if (t->cap > 1) gwr_free(t->uses.many);
    gwr_ir_tensor_drop_vtype(t);
    if (t->flags & TF_OWN_NAME) gwr_free((void *)t->name);
}

void gwr_ir_attr_clear(gwr_network *net, gwr_attr *a) {
    switch (a->type) {
    case GWR_ATTR_STRING: gwr_free(a->v.s); break;
    case GWR_ATTR_INTS: gwr_free(a->v.ints); break;
    case GWR_ATTR_FLOATS: gwr_free(a->v.floats); break;
    case GWR_ATTR_STRINGS:
        for (int64_t i = 0; i < a->n; i++) gwr_free((void *)a->v.strings[i].data);
        gwr_free(a->v.strings);
        break;
    case GWR_ATTR_TENSOR:
    case GWR_ATTR_TENSORS:
        for (int64_t i = 0; i < a->n; i++) gwr_ir_weights_clear(&a->v.tensors[i]);
        gwr_free(a->v.tensors);
        break;
    case GWR_ATTR_GRAPH:
    case GWR_ATTR_GRAPHS:
        for (int64_t i = 0; i < a->n; i++) {
            gwr_network *g = a->v.graphs[i];
            g->owner = NULL;
            gwr_ir_network_destroy(g);
        }
        gwr_free(a->v.graphs);
        net->ngraph_attrs--;
        break;
    default: break;
    }
    a->type = GWR_ATTR_UNDEFINED;
}

void gwr_ir_attrs_free(gwr_layer *l) {
    for (int i = 0; i < l->nattrs; i++) gwr_ir_attr_clear(l->net, &l->attrs[i]);
    gwr_free(l->attrs);
    l->attrs = NULL;
    l->nattrs = 0;
}

void gwr_ir_layer_free(gwr_layer *l) {
    gwr_ir_attrs_free(l);
    for (int i = 0; i < l->noutputs; i++) tensor_free_fields(&gwr_ir_outputs(l)[i]);
    if (l->flags & LF_OWN_NAME) gwr_free((void *)l->name);
    if (l->flags & LF_OWN_INPUTS) gwr_free(l->inputs);
    gwr_free(l);
}

void gwr_network_free(gwr_network *net) {
    if (!net) return;
    if (net->driven) {
        gwr_ir_error(net, GWR_ERR_STATE, "gwr_network_free: network '%s' is being rewritten", net->name);
        return;
    }
    if (net->owner) {
        gwr_ir_error(net, GWR_ERR_STATE,
                     "gwr_network_free: subgraph '%s' is owned by layer '%s'; free its network",
                     net->name, net->owner->name);
        return;
    }
    gwr_ir_network_destroy(net);
}

/* Frees everything. A subgraph detaches its layers' uses of tensors of
 * enclosing networks, unless those are being torn down too. */
void gwr_ir_network_destroy(gwr_network *net) {
    int outer = net->parent != NULL;
    net->tearing_down = 1;
    for (int e = 0; e < GWR_EXT_COUNT; e++)
        if (net->ext[e] && net->ext_free[e]) net->ext_free[e](net->ext[e]);
    for (int64_t i = 0; i < net->nlayers; i++) {
        gwr_layer *l = net->layers[i];
        if (outer)
            for (int s = 0; s < l->ninputs; s++) {
                gwr_tensor *t = l->inputs[s];
                if (t && gwr_ir_tnet(t) != net && !gwr_ir_tnet(t)->tearing_down) gwr_ir_use_del(t, l, s);
            }
    }
    /* Subgraphs first, while every tensor they read is still alive. */
    for (int64_t i = 0; i < net->nlayers; i++) gwr_ir_attrs_free(net->layers[i]);
    for (int64_t i = 0; i < net->nlayers; i++) gwr_ir_layer_free(net->layers[i]);
    for (int64_t i = 0; i < net->ninputs; i++) {
        tensor_free_fields(net->inputs[i]);
        gwr_free(net->inputs[i]);
    }
    gwr_ir_props_destroy(net);
    for (int64_t i = 0; i < net->vtypes.cap; i++)
        if (net->vtypes.keys[i]) gwr_ir_type_free(net->vtypes.vals[i]);
    gwr_ptrmap_free(&net->vtypes);
    gwr_free(net->layers), gwr_free(net->inputs), gwr_free(net->outputs), gwr_free(net->listeners);
    gwr_free(net->layer_names.slots), gwr_free(net->tensor_names.slots), gwr_free(net->gen);
    if (net->root == net) {
        gwr_arena_free(&net->arena);
        gwr_strmap_free(&net->strings);
        gwr_strmap_free(&net->custom_ops);
        gwr_strmap_free(&net->sym_index);
        gwr_free(net->shapes);
        gwr_free(net->syms);
    }
    gwr_free(net->name);
    gwr_free(net);
}

const char *gwr_network_name(const gwr_network *net) { return net ? net->name : NULL; }

gwr_status gwr_network_set_name(gwr_network *net, const char *name) {
    if (!net || !name) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_set_name: NULL argument");
    char *d = gwr_strdup(name);
    if (!d) return gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
    gwr_free(net->name);
    net->name = d;
    return GWR_OK;
}

gwr_network *gwr_network_parent(const gwr_network *net) { return net ? net->parent : NULL; }
gwr_layer *gwr_network_owner(const gwr_network *net) { return net ? net->owner : NULL; }

void gwr_ir_network_set_driven(gwr_network *net, int on) { net->driven = on != 0; }

/* ---- listeners ---- */

int gwr_network_add_listener(gwr_network *net, const gwr_listener *ls) {
    if (!net || !ls) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_add_listener: NULL argument");
        return -1;
    }
    if (gwr_grow((void **)&net->listeners, sizeof *net->listeners, &net->listeners_cap,
                 net->nlisteners + 1)) {
        gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
        return -1;
    }
    net->listeners[net->nlisteners].ls = *ls;
    net->listeners[net->nlisteners].id = net->next_listener_id;
    net->nlisteners++;
    return net->next_listener_id++;
}

gwr_status gwr_network_remove_listener(gwr_network *net, int id) {
    if (!net) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_remove_listener: NULL network");
    for (int64_t i = 0; i < net->nlisteners; i++)
        if (net->listeners[i].id == id) {
            memmove(&net->listeners[i], &net->listeners[i + 1],
                    (size_t)(net->nlisteners - i - 1) * sizeof *net->listeners);
            net->nlisteners--;
            return GWR_OK;
        }
    return gwr_ir_error(net, GWR_ERR_NOT_FOUND, "no listener with id %d", id);
}

/* ---- inputs and outputs ---- */

gwr_tensor *gwr_network_add_input(gwr_network *net, const char *name, gwr_dtype dtype, int rank,
                                  const gwr_dim *dims) {
    if (!net) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_add_input: NULL network");
        return NULL;
    }
    if (!name) {
        gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_network_add_input: a graph input needs a name");
        return NULL;
    }
    if (!gwr_ir_name_ok(net, name, "input")) return NULL;
    if (gwr_ir_find_tensor(net, name)) {
        gwr_ir_error(net, GWR_ERR_DUPLICATE, "input name '%s' is already taken", name);
        return NULL;
    }
    gwr_input_tensor *it = gwr_calloc(1, sizeof *it);
    char *d = gwr_strdup(name);
    if (!it || !d || gwr_grow((void **)&net->inputs, sizeof *net->inputs, &net->inputs_cap, net->ninputs + 1)) {
        gwr_free(it), gwr_free(d);
        gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
        return NULL;
    }
    gwr_tensor *t = &it->t;
    t->name = d;
    it->net = net;
    t->flags = TF_INPUT | TF_OWN_NAME;
    t->output_index = -1;
    if (gwr_tensor_set_type(t, dtype, rank, dims) != GWR_OK) {
        gwr_free(d), gwr_free(t);
        return NULL;
    }
    if (gwr_ir_name_put(net, &net->tensor_names, t, gwr_ir_name_hash(d))) {
        gwr_free(d), gwr_free(t);
        gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
        return NULL;
    }
    t->out_index = (int32_t)net->ninputs;
    net->inputs[net->ninputs++] = t;
    return t;
}

/* Is i a valid index among n things of net? Leaves a message if not. */
static int index_ok(const gwr_network *net, const char *what, int64_t i, int64_t n) {
    if (i >= 0 && i < n) return 1;
    gwr_ir_error((gwr_network *)net, GWR_ERR_INVALID_ARG, "%s index %lld out of range [0, %lld)", what, (long long)i,
                 (long long)n);
    return 0;
}

int gwr_network_num_inputs(const gwr_network *net) { return net ? (int)net->ninputs : -1; }

gwr_tensor *gwr_network_input(const gwr_network *net, int i) {
    return net && index_ok(net, "input", i, net->ninputs) ? net->inputs[i] : NULL;
}

/* Frees graph input t once nothing reads it (gwr_tensor_num_users 0: a
 * replace_all_uses_with moves removed readers too) and it is no output;
 * the later inputs move up one place. */
gwr_status gwr_network_remove_input(gwr_network *net, gwr_tensor *t) {
    if (!net || !t) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_remove_input: NULL argument");
    if (!(t->flags & TF_INPUT) || gwr_ir_tnet(t) != net || t->out_index >= net->ninputs ||
        net->inputs[t->out_index] != t)
        return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "tensor '%s' is not an input of network '%s'", t->name,
                            net->name);
    if (t->nuses || t->output_index >= 0)
        return gwr_ir_error(net, GWR_ERR_STATE, "input '%s' is still %s", t->name,
                            t->nuses ? "read by a layer" : "a network output");
    gwr_status s = gwr_tensor_set_default(t, NULL);
    if (s) return s;
    GWR_IR_NOTIFY(net, input_removed, t);
    gwr_ir_props_drop(net, t);
    gwr_ir_unname_tensor(net, t, 0);
    for (int64_t i = t->out_index; i + 1 < net->ninputs; i++) {
        net->inputs[i] = net->inputs[i + 1];
        net->inputs[i]->out_index = (int32_t)i;
    }
    net->ninputs--;
    tensor_free_fields(t);
    gwr_free(t);
    return GWR_OK;
}

static gwr_status gwr_network_mark_output_impl(gwr_network *net, gwr_tensor *t) {
    if (!net || !t) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_mark_output: NULL argument");
    if (gwr_ir_tnet(t) != net)
        return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "tensor '%s' belongs to another network", t->name);
    if (t->output_index >= 0)
        return gwr_ir_error(net, GWR_ERR_DUPLICATE, "tensor '%s' is already output %d", t->name, t->output_index);
    if (t->producer && (t->producer->flags & LF_REMOVED))
        return gwr_ir_error(net, GWR_ERR_STATE, "tensor '%s' is produced by removed layer '%s'", t->name,
                            t->producer->name);
    if (gwr_grow((void **)&net->outputs, sizeof *net->outputs, &net->outputs_cap, net->noutputs + 1))
        return gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
    t->output_index = (int32_t)net->noutputs;
    net->outputs[net->noutputs++] = t;
    return GWR_OK;
}

gwr_status gwr_network_mark_output(gwr_network *net, gwr_tensor *t) {
    gwr_status s = gwr_network_mark_output_impl(net, t);
    if (s == GWR_OK) GWR_IR_NOTIFY(net, tensor_modified, t);
    return s;
}

static gwr_status gwr_network_unmark_output_impl(gwr_network *net, gwr_tensor *t) {
    if (!net || !t) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_unmark_output: NULL argument");
    if (gwr_ir_tnet(t) != net || t->output_index < 0)
        return gwr_ir_error(net, GWR_ERR_NOT_FOUND, "tensor '%s' is not an output of this network", t->name);
    int64_t k = t->output_index;
    memmove(&net->outputs[k], &net->outputs[k + 1], (size_t)(net->noutputs - k - 1) * sizeof *net->outputs);
    net->noutputs--;
    for (int64_t i = k; i < net->noutputs; i++) net->outputs[i]->output_index = (int32_t)i;
    t->output_index = -1;
    return GWR_OK;
}

gwr_status gwr_network_unmark_output(gwr_network *net, gwr_tensor *t) {
    gwr_status s = gwr_network_unmark_output_impl(net, t);
    if (s == GWR_OK) GWR_IR_NOTIFY(net, tensor_modified, t);
    return s;
}

int gwr_network_num_outputs(const gwr_network *net) { return net ? (int)net->noutputs : -1; }

gwr_tensor *gwr_network_output(const gwr_network *net, int i) {
    return net && index_ok(net, "output", i, net->noutputs) ? net->outputs[i] : NULL;
}

int64_t gwr_network_num_layers(const gwr_network *net) { return net ? net->nlayers : -1; }
int64_t gwr_network_num_live_layers(const gwr_network *net) {
    return net ? net->nlayers - net->nremoved : -1;
}

gwr_layer *gwr_network_layer(const gwr_network *net, int64_t i) {
    return net && index_ok(net, "layer", i, net->nlayers) ? net->layers[i] : NULL;
}
