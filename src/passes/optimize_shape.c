/* optimize_shape.c - what gwr_optimize does around the passes for shapes:
 * binding symbolic dims before they run (--shape), and the report's note
 * on the shapes left to compute at run time (the skip, with its reason,
 * that fold_shape_dims could not fold). */
#include <stdio.h>
#include <string.h>

#include "gwr/match.h"
#include "gwr/optimize.h"
#include "ir/ir_api.h"
#include "optimize_internal.h"
#include "util/util.h"

/* ---- binding ------------------------------------------------------------------ */

/* A dim named as a sum of bound names and integers ("past_sequence_length
 * + sequence_length", as optimum names an attention mask's dim): 1 and its
 * value in *v when every term is bound (or a non-negative integer). */
static int bound_sum(const char *name, const gwr_dim_binding *b, int nb, int64_t *v) {
    int64_t sum = 0;
    int terms = 0;
    for (const char *p = name; *p;) {
        while (*p == ' ') p++;
        const char *e = p;
        while (*e && *e != '+') e++;
        const char *t = e;
        while (t > p && t[-1] == ' ') t--;
        size_t n = (size_t)(t - p);
        int found = 0;
        if (n && strspn(p, "0123456789") == n && n < 18) {
            int64_t k = 0;
            for (size_t i = 0; i < n; i++) k = 10 * k + (p[i] - '0');
            sum += k, found = 1;
        }
        for (int k = 0; !found && n && k < nb; k++)
            if (strlen(b[k].name) == n && !strncmp(b[k].name, p, n) && b[k].value >= 0) sum += b[k].value, found = 1;
        if (!found) return 0;
        terms++;
        p = *e ? e + 1 : e;
    }
    return terms > 1 ? (*v = sum, 1) : 0;
}

/* Gives t's dims bound in b their values (and the dims named as a sum of
 * bound ones, bound_sum). */
static gwr_status bind_tensor(gwr_network *root, gwr_tensor *t, const gwr_dim_binding *b, int nb) {
    int r = gwr_tensor_rank(t), hit = 0;
    if (r <= 0 || gwr_tensor_kind(t) != GWR_VALUE_TENSOR) return GWR_OK;
    gwr_dim d[GWR_MAX_RANK];
    for (int i = 0; i < r && i < GWR_MAX_RANK; i++) {
        d[i] = gwr_tensor_dim(t, i);
        const char *name = d[i] <= GWR_DIM_SYM_BASE ? gwr_network_dim_name(root, d[i]) : NULL;
        int64_t v;
        for (int k = 0; name && k < nb; k++)
            if (!strcmp(name, b[k].name)) d[i] = b[k].value, hit = 1;
        if (name && d[i] <= GWR_DIM_SYM_BASE && strchr(name, '+') && bound_sum(name, b, nb, &v)) d[i] = v, hit = 1;
    }
    return hit ? gwr_tensor_set_type(t, gwr_tensor_dtype(t), r, d) : GWR_OK;
}

static gwr_status bind_net(gwr_network *root, gwr_network *g, const gwr_dim_binding *b, int nb, int depth) {
    gwr_status s = GWR_OK;
    if (depth > 64) return gwr_ir_error(root, GWR_ERR_UNSUPPORTED, "gwr_optimize: bodies nested over 64 deep");
    for (int i = 0; !s && i < gwr_network_num_inputs(g); i++) s = bind_tensor(root, gwr_network_input(g, i), b, nb);
    for (int64_t i = 0; !s && i < gwr_network_num_layers(g); i++) {
        gwr_layer *l = gwr_network_layer(g, i);
        for (int o = 0; !s && o < gwr_layer_num_outputs(l); o++) s = bind_tensor(root, gwr_layer_output(l, o), b, nb);
        for (int a = 0; !s && a < gwr_layer_num_attrs(l); a++) {
            gwr_attr_type t = gwr_layer_attr_type(l, a);
            gwr_network *one = NULL, *const *gs = NULL;
            int64_t n = 0;
            if (t == GWR_ATTR_GRAPH && !gwr_layer_get_graph(l, gwr_layer_attr_name(l, a), &one)) gs = &one, n = 1;
            else if (t == GWR_ATTR_GRAPHS) gwr_layer_get_graphs(l, gwr_layer_attr_name(l, a), &gs, &n);
            for (int64_t k = 0; !s && k < n; k++) s = bind_net(root, gs[k], b, nb, depth + 1);
        }
    }
    return s;
}

gwr_status gwr_opt_bind_dims(gwr_network *net, const gwr_dim_binding *b, int nb) {
    gwr_status s = nb ? bind_net(net, net, b, nb, 0) : GWR_OK;
    return s ? gwr_ir_error(net, s, "gwr_optimize: binding dims: %s", gwr_network_errmsg(net)) : GWR_OK;
}

/* ---- the note on shapes left dynamic ------------------------------------------ */

/* Appends to buf the names of the symbolic dims of the Shape layers that
 * t's value depends on (a walk up at most 16 layers deep). */
static void dynamic_dims(const gwr_network *root, const gwr_tensor *t, char *buf, size_t size, int depth) {
    gwr_layer *l = t ? gwr_tensor_parent(t) : NULL;
    if (!l || depth > 16 || gwr_layer_type(l) == GWR_LAYER_CONSTANT) return;
    if (gwr_layer_op_id(l) == GWR_OP_Shape) {
        const gwr_tensor *x = gwr_layer_input(l, 0);
        for (int i = 0; i < gwr_tensor_rank(x); i++) {
            gwr_dim d = gwr_tensor_dim(x, i);
            if (GWR_DIM_IS_KNOWN(d)) continue;
            const char *name = gwr_network_dim_name(root, d);
            char item[80];
            snprintf(item, sizeof item, "%s%s", *buf ? ", " : "", name ? name : "?");
            if (!strstr(buf, name ? name : "?") && strlen(buf) + strlen(item) + 1 < size) strcat(buf, item);
        }
        return;
    }
    for (int i = 0; i < gwr_layer_num_inputs(l); i++) dynamic_dims(root, gwr_layer_input(l, i), buf, size, depth + 1);
}

void gwr_opt_dynamic_note(gwr_network *net, char *note, size_t size) {
    int64_t nshape = 0, nreshape = 0;
    const gwr_layer *first = NULL;
    char dims[160] = "";
    note[0] = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        gwr_match_const k;
        if (gwr_layer_is_removed(l) || *gwr_layer_domain(l)) continue;
        if (gwr_layer_op_id(l) == GWR_OP_Shape) {
            if (!nshape++ && !first) first = l;
            dynamic_dims(net, gwr_layer_output(l, 0), dims, sizeof dims, 0);
        } else if (gwr_layer_op_id(l) == GWR_OP_Reshape && gwr_layer_num_inputs(l) == 2 &&
                   !gwr_match_const_get(gwr_layer_input(l, 1), &k)) {
            if (!nreshape++) first = l;
        }
    }
    if (nshape || nreshape)
        snprintf(note, size, "%lld Shape and %lld Reshape layer%s left computing shapes at run time (first '%s')%s%s%s",
                 (long long)nshape, (long long)nreshape, nshape + nreshape == 1 ? "" : "s", gwr_layer_name(first),
                 *dims ? ": dims not known: " : "", dims, *dims ? " (bind with --shape)" : "");
}

/* ---- types made known by the rewrites ------------------------------------------ */

/* Does t hold less than inference may know: an unknown dtype, rank or dim? */
static int incomplete(const gwr_tensor *t) {
    if (gwr_tensor_kind(t) != GWR_VALUE_TENSOR) return 0;
    if (gwr_tensor_dtype(t) == GWR_UNDEFINED || gwr_tensor_rank(t) < 0) return 1;
    for (int i = 0; i < gwr_tensor_rank(t); i++)
        if (gwr_tensor_dim(t, i) == GWR_DIM_UNKNOWN) return 1;
    return 0;
}

typedef struct saved_type {
    gwr_dtype dt;
    int rank;
    const gwr_dim *dims; /* interned: valid as long as the network */
} saved_type;

/* Is `now` (what inference gives) old with unknowns filled and nothing else
 * changed, and does it fill at least one? */
static int refines(const saved_type *old, const gwr_tensor *now) {
    gwr_dtype dt = gwr_tensor_dtype(now);
    int r = gwr_tensor_rank(now), more = 0;
    if (old->dt != GWR_UNDEFINED && dt != old->dt) return 0;
    more |= old->dt == GWR_UNDEFINED && dt != GWR_UNDEFINED;
    if (old->rank >= 0 && r != old->rank) return 0;
    if (old->rank < 0) return more | (r >= 0);
    for (int i = 0; i < r; i++) {
        gwr_dim a = old->dims[i], b = gwr_tensor_dim(now, i);
        if (a == GWR_DIM_UNKNOWN) more |= b != GWR_DIM_UNKNOWN;
        else if (b != a) return 0;
    }
    return more;
}

/* Can inference tell l more than it did: an input whose type is complete
 * (a constant a rewrite made, a layer a rewrite built) or refined in this
 * pass? A layer reading only incomplete types it had already seen cannot
 * learn anything: skipping it keeps the pass cheap on models whose types
 * stay unknown. */
static int worth_inferring(const gwr_layer *l, const gwr_ptrmap *refined) {
    for (int i = 0; i < gwr_layer_num_inputs(l); i++) {
        const gwr_tensor *t = gwr_layer_input(l, i);
        if (t && (!incomplete(t) || gwr_ptrmap_get(refined, t))) return 1;
    }
    return 0;
}

/* Infers again the layers of g (in topological order) with an output whose
 * type is incomplete and an input that may tell more; keeps what fills
 * unknowns without changing anything known, gives the rest back (refined
 * gets the tensors that changed). The count of outputs refined, or -1 when
 * out of memory. */
static int64_t refine_net(gwr_network *g, gwr_ptrmap *done, int depth) {
    int64_t n = gwr_network_num_layers(g), refined = 0;
    gwr_layer **order = gwr_malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!order || depth > 64) {
        gwr_free(order);
        return -1;
    }
    if (gwr_network_topo_order(g, order))
        for (int64_t i = 0; i < n; i++) order[i] = gwr_network_layer(g, i);
    saved_type sv[64];
    for (int64_t i = 0; i < n && refined >= 0; i++) {
        gwr_layer *l = order[i];
        int nout = gwr_layer_num_outputs(l), want = 0;
        if (gwr_layer_is_removed(l) || gwr_layer_type(l) == GWR_LAYER_CONSTANT) continue;
        for (int a = 0; a < gwr_layer_num_attrs(l) && refined >= 0; a++) {
            gwr_attr_type t = gwr_layer_attr_type(l, a);
            gwr_network *one = NULL, *const *gs = NULL;
            int64_t k = 0;
            if (t == GWR_ATTR_GRAPH && !gwr_layer_get_graph(l, gwr_layer_attr_name(l, a), &one)) gs = &one, k = 1;
            else if (t == GWR_ATTR_GRAPHS) gwr_layer_get_graphs(l, gwr_layer_attr_name(l, a), &gs, &k);
            for (int64_t j = 0; j < k && refined >= 0; j++) {
                int64_t r = refine_net(gs[j], done, depth + 1);
                refined = r < 0 ? -1 : refined + r;
            }
        }
        if (refined < 0 || nout > 64) continue;
        for (int o = 0; o < nout; o++) {
            gwr_tensor *t = gwr_layer_output(l, o);
            want |= incomplete(t);
            sv[o] = (saved_type){gwr_tensor_dtype(t), gwr_tensor_rank(t), gwr_tensor_dims(t)};
        }
        if (!want || !worth_inferring(l, done)) continue;
        int failed = gwr_layer_infer(l) != GWR_OK;
        for (int o = 0; o < nout; o++) {
            gwr_tensor *t = gwr_layer_output(l, o);
            if (!failed && refines(&sv[o], t)) {
                refined++;
                if (gwr_ptrmap_put(done, t, t)) refined = -1;
            } else {
                (void)gwr_tensor_set_type(t, sv[o].dt, sv[o].rank, sv[o].dims);
            }
        }
    }
    gwr_free(order);
    return refined;
}

int64_t gwr_opt_refine_types(gwr_network *net) {
    gwr_ptrmap done = {0};
    int64_t n = refine_net(net, &done, 0);
    gwr_ptrmap_free(&done);
    return n;
}
