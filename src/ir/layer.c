/* layer.c - layers: adding one (gwr_network_add_layer, in named steps),
 * constants, undoing an add, accessors, removal marks, doc strings. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir_internal.h"

/* ---- layers ---- */

/* The interned table entry of an op the table does not know: class PLUGIN,
 * any arity. */
static const gwr_op_info *custom_op(gwr_network *net, const char *domain, const char *op) {
    gwr_network *r = net->root;
    size_t dl = strlen(domain), ol = strlen(op);
    char *key = gwr_malloc(dl + ol + 2);
    if (!key) return NULL;
    memcpy(key, domain, dl);
    key[dl] = '\x1f';
    memcpy(key + dl + 1, op, ol + 1);
    gwr_op_info *info = gwr_strmap_get(&r->custom_ops, key);
    if (!info) {
        const char *k = gwr_ir_intern(net, key), *d = gwr_ir_intern(net, domain), *o = gwr_ir_intern(net, op);
        info = k && d && o ? gwr_arena_alloc(&r->arena, sizeof *info) : NULL;
        if (info) {
            *info = (gwr_op_info){GWR_OP_CUSTOM, o, d, GWR_LAYER_PLUGIN, GWR_EW_NONE, 0, -1, 0, -1, GWR_OPF_VARIADIC, 1};
            if (gwr_strmap_put(&r->custom_ops, k, info)) info = NULL;
        }
    }
    gwr_free(key);
    return info;
}

/* Gives up a layer being added whose first n outputs are named: takes
 * their names and the layer's (hash hl; absent is fine) back out of where
 * lookups find them, frees the names they own and the block. */
static void add_undo(gwr_network *net, gwr_layer *l, int n, uint32_t hl) {
    gwr_tensor *outs = gwr_ir_outputs(l);
    for (int j = 0; j < n; j++) {
        gwr_ir_unname_tensor(net, &outs[j], 0);
        if (outs[j].flags & TF_OWN_NAME) gwr_free((void *)outs[j].name);
    }
    gwr_ir_unname_layer(net, l, hl);
    gwr_free(l);
}

/* What naming a new layer decided, for the steps after it. */
typedef struct add_name {
    const char *name;             /* the layer's name: given, or in buf */
    uint32_t hash;                /* gwr_ir_name_hash(name) */
    int generated;                /* no name was given */
    int fresh;                    /* a generated name known to be free (gwr_ir_next_name) */
    int fresh_outs;               /* "<name>:<i>" are too (name not cut by them) */
    int64_t gen_n;                /* the name's slot in net->gen, or -1: it goes to the map */
    size_t len;                   /* strlen(name) */
    char buf[160];                /* generated names; later gwr_ir_unique_tensor_name's */
} add_name;

/* The arguments, apart from names: message on net (the thread's for a
 * NULL net); 0 when they are wrong. */
static int add_check_args(gwr_network *net, const char *op, int ninputs, gwr_tensor *const *inputs, int noutputs) {
    if (!net) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_add_layer: NULL network");
        return 0;
    }
    if (!op || !*op) {
        gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_network_add_layer: empty op");
        return 0;
    }
    if (ninputs < 0 || noutputs < 0 || (ninputs && !inputs) || ninputs > (1 << 24) || noutputs > (1 << 24)) {
        gwr_ir_error(net, GWR_ERR_INVALID_ARG, "%s: bad counts (%d inputs, %d outputs)", op, ninputs, noutputs);
        return 0;
    }
    for (int i = 0; i < ninputs; i++) {
        gwr_tensor *t = inputs[i];
        if (!t) continue;
        if (!gwr_ir_in_scope(gwr_ir_tnet(t), net) || (t->producer && (t->producer->flags & LF_DROPPED))) {
            gwr_ir_error(net, GWR_ERR_INVALID_ARG, "%s: input %d ('%s') is not a tensor of this network or an enclosing one",
                         op, i, t->name);
            return 0;
        }
    }
    return 1;
}

/* Reading a tensor of an enclosing network from an attached subgraph adds
 * an edge to the subgraph's owner, which can close a cycle: 0 if one would. */
static int add_check_captures(gwr_network *net, const char *op, int ninputs, gwr_tensor *const *inputs) {
    for (int i = 0; i < ninputs; i++) {
        gwr_tensor *t = inputs[i];
        if (!t || gwr_ir_tnet(t) == net || !t->producer || !net->owner) continue;
        gwr_network *g = net;
        while (g->owner && g->owner->net != gwr_ir_tnet(t)) g = g->owner->net;
        if (g->owner && gwr_ir_would_cycle(t->producer, g->owner)) {
            gwr_ir_error(net, GWR_ERR_CYCLE, "%s: reading '%s' here would create a cycle through '%s'", op, t->name,
                         g->owner->name);
            return 0;
        }
    }
    return 1;
}

/* The layer's name, given or the next from the counter (not yet known to
 * be free unless nm->fresh). A fresh counter name gets a slot in net->gen;
 * any other starts loading the name maps' slots it will be looked up in. */
static int add_pick_name(gwr_network *net, const char *op, const char *name, add_name *nm) {
    uint64_t n = 0;
    nm->generated = !name;
    nm->fresh = 0;
    if (name) {
        if (!gwr_ir_name_ok(net, name, "layer")) return 0;
        nm->name = name;
        nm->hash = gwr_ir_name_hash(name);
    } else {
        nm->name = gwr_ir_next_name(net, op, nm->buf, &nm->hash, &nm->fresh, &n);
    }
    /* The counter is the whole tree's: a body's numbers are sparse, and its
     * names go to its maps rather than into a gen array as long as the
     * outermost network's. */
    nm->gen_n = nm->generated && nm->fresh && !net->parent && n < (uint64_t)GWR_GEN_MAX ? (int64_t)n : -1;
    if (nm->gen_n < 0) {
        gwr_ir_namemap_prefetch(&net->layer_names, nm->hash);
        gwr_ir_namemap_prefetch(&net->tensor_names, nm->hash); /* output 0 is usually named after the layer */
    } else if (nm->gen_n >= net->gen_cap) {
        int64_t old = net->gen_cap;
        if (gwr_grow((void **)&net->gen, sizeof *net->gen, &net->gen_cap, nm->gen_n + 1)) {
            gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
            return 0;
        }
        memset(net->gen + old, 0, (size_t)(net->gen_cap - old) * sizeof *net->gen);
    }
    return 1;
}

/* A given name must be free; a generated one is drawn again until it is. */
static int add_claim_name(gwr_network *net, const char *op, add_name *nm) {
    if (!nm->generated) {
        if (!gwr_ir_find_layer_h(net, nm->name, nm->hash)) return 1;
        gwr_ir_error(net, GWR_ERR_DUPLICATE, "layer name '%s' is already taken", nm->name);
        return 0;
    }
    while (!nm->fresh && gwr_ir_find_layer_h(net, nm->name, nm->hash))
        nm->name = gwr_ir_next_name(net, op, nm->buf, &nm->hash, &nm->fresh, NULL);
    return 1;
}

/* Given output names must be free and distinct. They are checked against
 * the maps only, not against the names made for the other outputs: those
 * are then looked up (nm->fresh cleared). */
static int add_check_output_names(gwr_network *net, int noutputs, const char *const *output_names, add_name *nm) {
    if (!output_names) return 1;
    nm->fresh = 0;
    for (int i = 0; i < noutputs; i++) {
        if (!output_names[i]) continue;
        if (!gwr_ir_name_ok(net, output_names[i], "tensor")) return 0;
        if (gwr_ir_find_tensor(net, output_names[i])) {
            gwr_ir_error(net, GWR_ERR_DUPLICATE, "tensor name '%s' is already taken", output_names[i]);
            return 0;
        }
        for (int j = 0; j < i; j++)
            if (output_names[j] && !strcmp(output_names[j], output_names[i])) {
                gwr_ir_error(net, GWR_ERR_DUPLICATE, "output name '%s' given twice", output_names[i]);
                return 0;
            }
    }
    return 1;
}

/* One block for the layer, its outputs, its input slots and its name, and
 * a place in net->layers; the layer's fields from the op table. A layer
 * with a slot in net->gen is put there now: lookups of its outputs' names,
 * made next, go through it. */
static gwr_layer *add_alloc(gwr_network *net, const char *op, const char *domain, gwr_op_id id, add_name *nm,
                            int ninputs, int noutputs) {
    nm->len = strlen(nm->name);
    size_t namelen = nm->len + 1;
    /* "<layer>:<i>" keeps the layer's number only when not cut below. */
    nm->fresh_outs = nm->fresh && nm->len <= 120;
    size_t size = sizeof(gwr_layer) + (size_t)noutputs * sizeof(gwr_tensor) + (size_t)ninputs * sizeof(gwr_tensor *) +
                  namelen;
    if (net->nlayers >= INT32_MAX - 1) {
        gwr_ir_error(net, GWR_ERR_UNSUPPORTED, "a network holds at most %d layers", INT32_MAX - 1);
        return NULL;
    }
    gwr_layer *l = gwr_malloc(size);
    if (!l || gwr_grow((void **)&net->layers, sizeof *net->layers, &net->layers_cap, net->nlayers + 1)) {
        gwr_free(l);
        gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
        return NULL;
    }
    memset(l, 0, sizeof *l + (size_t)noutputs * sizeof(gwr_tensor));
    l->inputs = (gwr_tensor **)((char *)l + sizeof *l + (size_t)noutputs * sizeof(gwr_tensor));
    char *lname = (char *)(l->inputs + ninputs);
    memcpy(lname, nm->name, namelen);
    l->name = nm->name = lname; /* nm->buf is free for gwr_ir_unique_tensor_name */
    l->net = net;
    l->op_id = (uint16_t)id;
    l->info = id != GWR_OP_CUSTOM ? gwr_op_info_get(id) : custom_op(net, domain, op);
    if (!l->info) {
        gwr_free(l);
        gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
        return NULL;
    }
    l->type = (uint8_t)l->info->layer_type;
    l->ninputs = l->incap = ninputs;
    l->noutputs = noutputs;
    if (nm->gen_n >= 0) {
        l->flags |= LF_GEN_NAME;
        net->ngen_layers++;
        net->gen[nm->gen_n] = l;
    }
    return l;
}

/* The name made for output i of l when none is given: the layer's for
 * output 0, "<layer>:<i>" (in tbuf) for the others, another from the
 * counter (in nm->buf) when that one is taken. *th gets its hash (0 when
 * nothing will need it). */
static const char *add_output_name(gwr_network *net, const gwr_layer *l, int i, add_name *nm, char *tbuf,
                                   uint32_t *th) {
    const char *tn;
    if (i == 0) {
        tn = l->name, *th = nm->hash;
    } else {
        /* "%.120s:%d", without printf's cost (plugins have two outputs) */
        size_t n = nm->len < 120 ? nm->len : 120;
        memcpy(tbuf, l->name, n);
        tbuf[n++] = ':';
        char digits[12];
        int k = 0;
        for (int v = i; k == 0 || v; v /= 10) digits[k++] = (char)('0' + v % 10);
        while (k) tbuf[n++] = digits[--k];
        tbuf[n] = 0;
        tn = tbuf, *th = nm->gen_n >= 0 && nm->fresh_outs ? 0 : gwr_ir_name_hash(tn);
    }
    if (!(i ? nm->fresh_outs : nm->fresh) && gwr_ir_find_tensor_h(net, tn, *th))
        tn = gwr_ir_unique_tensor_name(net, tn, nm->buf, th);
    return tn;
}

/* Names output i of the new layer l (given: its name or NULL) and puts the
 * name where lookups find it. *made: an earlier output's name was made
 * here, and a given name may equal it. On failure the layer is given up. */
static int add_name_output(gwr_network *net, gwr_layer *l, int i, add_name *nm, const char *given, int *made) {
    gwr_tensor *t = &gwr_ir_outputs(l)[i];
    t->producer = l;
    t->out_index = i;
    t->output_index = -1;
    char tbuf[160];
    uint32_t th;
    const char *tn = given;
    if (!tn) {
        tn = add_output_name(net, l, i, nm, tbuf, &th);
        *made = 1;
    } else {
        th = gwr_ir_name_hash(tn);
        /* Checked against the map before, not against the names made here. */
        if (*made && gwr_ir_find_tensor_h(net, tn, th)) {
            add_undo(net, l, i, nm->hash);
            gwr_ir_error(net, GWR_ERR_DUPLICATE, "output name '%s' is also the name made for another output", tn);
            return 0;
        }
    }
    int failed = 0;
    if (tn == l->name) t->name = l->name; /* shares the block's copy */
    else if (!(t->name = gwr_strdup(tn))) failed = 1;
    else t->flags |= TF_OWN_NAME;
    /* Names from the counter (a generated layer name and those made from
     * it, or gwr_ir_unique_tensor_name's) need no note (see gwr_ir_next_name). */
    int from_counter = !given && (nm->generated || tn == nm->buf);
    /* Named after a layer in net->gen, with its number: found through it. */
    int gen_out = nm->gen_n >= 0 && !given && (i ? nm->fresh_outs && tn == tbuf : tn == l->name);
    if (failed || (!gen_out && (from_counter ? gwr_ir_namemap_put_h(&net->tensor_names, t, th)
                                             : gwr_ir_name_put(net, &net->tensor_names, t, th)))) {
        if (t->flags & TF_OWN_NAME) gwr_free((void *)t->name); /* not in the map */
        add_undo(net, l, i, nm->hash);
        gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
        return 0;
    }
    if (gen_out) {
        t->flags |= TF_GEN_NAME;
        net->ngen_tensors++;
    }
    return 1;
}

/* Puts the layer's name where lookups find it (a slot of net->gen already
 * holds it). On failure the layer is given up. */
static int add_name_layer(gwr_network *net, gwr_layer *l, const add_name *nm) {
    if (nm->gen_n >= 0) return 1;
    if (!(nm->generated ? gwr_ir_namemap_put_h(&net->layer_names, l, nm->hash)
                        : gwr_ir_name_put(net, &net->layer_names, l, nm->hash)))
        return 1;
    add_undo(net, l, l->noutputs, nm->hash);
    gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
    return 0;
}

/* Adds l to its inputs' use lists and ranks it GWR_RANK_STEP above its
 * highest producer in net. A new layer cannot close a cycle (nothing
 * reads its outputs yet), so only ranks need care. On failure the layer
 * is given up. */
static int add_wire_inputs(gwr_network *net, gwr_layer *l, gwr_tensor *const *inputs, const add_name *nm) {
    int64_t rank = 0;
    for (int i = 0; i < l->ninputs; i++) {
        gwr_tensor *t = inputs[i];
        l->inputs[i] = t;
        if (!t) continue;
        if (gwr_ir_use_add(t, l, i)) {
            for (int j = 0; j < i; j++)
                if (l->inputs[j]) gwr_ir_use_del(l->inputs[j], l, j);
            add_undo(net, l, l->noutputs, nm->hash);
            gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
            return 0;
        }
        if (t->producer && gwr_ir_tnet(t) == net && t->producer->rank + (int64_t)GWR_RANK_STEP > rank)
            rank = t->producer->rank + (int64_t)GWR_RANK_STEP;
    }
    l->rank = (int32_t)(rank < INT32_MAX - 1 ? rank : INT32_MAX - 1);
    return 1;
}

/* Puts l last in net's layers and tells the listeners. A layer in an
 * attached subgraph that reads an outer tensor makes its owner depend on
 * that tensor's producer. */
static void add_append(gwr_network *net, gwr_layer *l) {
    l->index = (int32_t)net->nlayers;
    net->layers[net->nlayers++] = l;
    if (l->rank >= INT32_MAX - 2 * (int64_t)GWR_RANK_STEP) gwr_ir_retighten_ranks(net);
    net->last_added = l;
    for (int i = 0; i < l->ninputs; i++)
        if (l->inputs[i] && gwr_ir_tnet(l->inputs[i]) != net) gwr_ir_capture_edge(l->inputs[i], l);
    GWR_IR_NOTIFY(net, layer_added, l);
}

/* The steps above, in order. Each leaves a message and returns 0 (NULL)
 * when it fails; from add_alloc on, a failing step has given the layer
 * up already (add_undo). */
gwr_layer *gwr_network_add_layer(gwr_network *net, const char *op, const char *domain, const char *name,
                                 int ninputs, gwr_tensor *const *inputs, int noutputs,
                                 const char *const *output_names) {
    if (!add_check_args(net, op, ninputs, inputs, noutputs) || !add_check_captures(net, op, ninputs, inputs))
        return NULL;
    if (!domain || !strcmp(domain, "ai.onnx")) domain = "";
    add_name nm;
    if (!add_pick_name(net, op, name, &nm)) return NULL;
    gwr_op_id id = gwr_op_lookup(domain, op); /* while the slots add_pick_name prefetched load */
    if (!add_claim_name(net, op, &nm) || !add_check_output_names(net, noutputs, output_names, &nm)) return NULL;
    gwr_layer *l = add_alloc(net, op, domain, id, &nm, ninputs, noutputs);
    if (!l) return NULL;
    int made = 0;
    for (int i = 0; i < noutputs; i++)
        if (!add_name_output(net, l, i, &nm, output_names ? output_names[i] : NULL, &made)) return NULL;
    if (!add_name_layer(net, l, &nm) || !add_wire_inputs(net, l, inputs, &nm)) return NULL;
    add_append(net, l);
    return l;
}

gwr_tensor *gwr_network_add_constant(gwr_network *net, const char *name, const gwr_weights *w) {
    if (!net || !w) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_network_add_constant: NULL argument");
        return NULL;
    }
    gwr_status st = gwr_ir_weights_check(net, w);
    if (st) return NULL;
    gwr_layer *l = gwr_network_add_layer(net, "Constant", "", name, 0, NULL, 1, NULL);
    if (!l) return NULL;
    if (gwr_layer_set_tensor(l, "value", w) != GWR_OK ||
        gwr_tensor_set_type(gwr_ir_outputs(l), w->dtype, w->rank, w->dims) != GWR_OK) {
        gwr_ir_discard_new_layer(l);
        return NULL;
    }
    return gwr_ir_outputs(l);
}

void gwr_ir_discard_new_layer(gwr_layer *l) {
    gwr_network *net = l->net;
    GWR_IR_NOTIFY(net, layer_dropped, l);
    for (int s = 0; s < l->ninputs; s++)
        if (l->inputs[s]) gwr_ir_use_del(l->inputs[s], l, s);
    gwr_ir_unname_layer(net, l, 0);
    for (int o = 0; o < l->noutputs; o++) gwr_ir_unname_tensor(net, &gwr_ir_outputs(l)[o], 0);
    if (net->layers[net->nlayers - 1] == l) net->nlayers--;
    if (net->last_added == l) net->last_added = NULL;
    gwr_ir_layer_props_drop(net, l);
    for (int o = 0; o < l->noutputs; o++) gwr_ir_props_drop(net, &gwr_ir_outputs(l)[o]);
    gwr_ir_layer_free(l);
}

/* ---- layer accessors ---- */

gwr_network *gwr_layer_network(const gwr_layer *l) { return l ? l->net : NULL; }
const char *gwr_layer_name(const gwr_layer *l) { return l ? l->name : NULL; }
gwr_layer_type gwr_layer_type_of(const gwr_layer *l) { return l ? (gwr_layer_type)l->type : GWR_LAYER_PLUGIN; }
const char *gwr_layer_op(const gwr_layer *l) { return l ? l->info->name : NULL; }
const char *gwr_layer_domain(const gwr_layer *l) { return l ? l->info->domain : NULL; }
gwr_op_id gwr_layer_op_id(const gwr_layer *l) { return l ? (gwr_op_id)l->op_id : GWR_OP_CUSTOM; }
gwr_ew_op gwr_layer_ew_op(const gwr_layer *l) { return l ? l->info->ew_op : GWR_EW_NONE; }
int64_t gwr_layer_index(const gwr_layer *l) { return l ? l->index : -1; }
int gwr_layer_num_inputs(const gwr_layer *l) { return l ? l->ninputs : -1; }
int gwr_layer_num_outputs(const gwr_layer *l) { return l ? l->noutputs : -1; }

gwr_tensor *gwr_layer_input(const gwr_layer *l, int i) {
    if (!l) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_layer_input: NULL layer");
        return NULL;
    }
    if (i < 0 || i >= l->ninputs) {
        gwr_ir_error(l->net, GWR_ERR_INVALID_ARG, "layer '%s' has no input %d (it has %d)", l->name, i,
                     l->ninputs);
        return NULL;
    }
    return l->inputs[i];
}

gwr_tensor *gwr_layer_output(const gwr_layer *l, int i) {
    if (!l) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_layer_output: NULL layer");
        return NULL;
    }
    if (i < 0 || i >= l->noutputs) {
        gwr_ir_error(l->net, GWR_ERR_INVALID_ARG, "layer '%s' has no output %d (it has %d)", l->name, i,
                     l->noutputs);
        return NULL;
    }
    return &gwr_ir_outputs(l)[i];
}

gwr_status gwr_layer_mark_as_removed(gwr_layer *l) {
    if (!l) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_layer_mark_as_removed: NULL layer");
    if (l->flags & LF_REMOVED) return GWR_OK;
    l->flags |= LF_REMOVED;
    l->net->nremoved++;
    GWR_IR_NOTIFY(l->net, layer_removed, l);
    return GWR_OK;
}

int gwr_layer_is_removed(const gwr_layer *l) { return l ? (l->flags & LF_REMOVED) != 0 : 0; }

const char *gwr_layer_doc(const gwr_layer *l) {
    const char *d = gwr_layer_prop(l, "doc", NULL);
    return d ? d : "";
}

gwr_status gwr_layer_set_doc(gwr_layer *l, const char *doc) {
    if (!l || !doc) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_layer_set_doc: NULL argument");
    if (!*doc) {
        gwr_layer_remove_prop(l, "doc");
        return GWR_OK;
    }
    return gwr_layer_set_prop(l, "doc", doc, strlen(doc));
}
