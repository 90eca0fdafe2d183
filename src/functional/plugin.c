/* plugin.c - the process-wide registries of plugin kinds and of recorded
 * functionals (like TensorRT's plugin registry), and the built-in
 * GPTAttention plugin with its gpt_attention functional. */
#include <stdlib.h>
#include <string.h>
#include <threads.h>

#include "functional/functional_api.h"
#include "functional/functional_internal.h"
#include "ir/ir_api.h"

typedef struct plugin_kind {
    char *domain, *type;
    int noutputs;
    gwr_plugin_infer_fn infer;
    void *user;
} plugin_kind;

/* Entries are appended and never removed or moved (arrays of pointers),
 * so a found entry stays valid without holding the lock. */
static struct {
    mtx_t lock;
    plugin_kind **plugins;
    int64_t nplugins, plugins_cap;
    gwr_fn_functional **fns;
    int64_t nfns, fns_cap;
} reg;
static once_flag reg_once = ONCE_FLAG_INIT;
/* Set once every built-in is registered; until then each use of the
 * registry tries again, so that an allocation failing in the first try
 * does not lose a built-in for the life of the process. */
static int builtins_done;

static gwr_status register_builtins(void);

static void reg_init(void) { mtx_init(&reg.lock, mtx_plain); }

static void reg_lock(void) {
    call_once(&reg_once, reg_init);
    mtx_lock(&reg.lock);
    if (!builtins_done) builtins_done = register_builtins() == GWR_OK;
}

static plugin_kind *plugin_find_locked(const char *domain, const char *type) {
    for (int64_t i = 0; i < reg.nplugins; i++)
        if (!strcmp(reg.plugins[i]->domain, domain) && !strcmp(reg.plugins[i]->type, type)) return reg.plugins[i];
    return NULL;
}

static plugin_kind *plugin_find(const char *domain, const char *type) {
    reg_lock();
    plugin_kind *k = plugin_find_locked(domain, type);
    mtx_unlock(&reg.lock);
    return k;
}

static gwr_status plugin_register_locked(const char *domain, const char *type, int noutputs,
                                         gwr_plugin_infer_fn infer, void *user) {
    if (plugin_find_locked(domain, type))
        return gwr_set_last_error(GWR_ERR_DUPLICATE, "plugin %s::%s is already registered", domain, type);
    plugin_kind *k = gwr_calloc(1, sizeof *k);
    if (!k || !(k->domain = gwr_strdup(domain)) || !(k->type = gwr_strdup(type)) ||
        gwr_grow((void **)&reg.plugins, sizeof *reg.plugins, &reg.plugins_cap, reg.nplugins + 1)) {
        if (k) gwr_free(k->domain), gwr_free(k->type);
        gwr_free(k);
        return gwr_set_last_error(GWR_ERR_NOMEM, "out of memory");
    }
    k->noutputs = noutputs, k->infer = infer, k->user = user;
    reg.plugins[reg.nplugins++] = k;
    return GWR_OK;
}

gwr_status gwr_plugin_register(const char *domain, const char *type, int noutputs, gwr_plugin_infer_fn infer,
                               void *user) {
    if (!domain || !type || !*type || !infer || noutputs < 0)
        return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_plugin_register: bad argument");
    if (gwr_op_lookup(domain, type) != GWR_OP_CUSTOM)
        return gwr_set_last_error(GWR_ERR_DUPLICATE, "gwr_plugin_register: %s::%s is an op of the table",
                                  domain, type);
    reg_lock();
    gwr_status s = plugin_register_locked(domain, type, noutputs, infer, user);
    mtx_unlock(&reg.lock);
    return s;
}

int gwr_plugin_is_registered(const char *domain, const char *type) {
    return domain && type && plugin_find(domain, type) != NULL;
}

gwr_status gwr_fn_infer_plugin(gwr_layer *l, int *found) {
    plugin_kind *k = plugin_find(gwr_layer_domain(l), gwr_layer_op(l));
    *found = k != NULL;
    if (!k) return GWR_OK;
    if (gwr_layer_num_outputs(l) != k->noutputs)
        return gwr_ir_error(gwr_layer_network(l), GWR_ERR_INVALID_ARG, "plugin %s::%s '%s' has %d outputs, needs %d",
                            k->domain, k->type, gwr_layer_name(l), gwr_layer_num_outputs(l), k->noutputs);
    return k->infer(l, k->user);
}

/* gwr_plugin_create with the status kept. */
static gwr_status plugin_create(gwr_network *net, const char *domain, const char *type, const char *name,
                                int ninputs, gwr_tensor *const *inputs, const gwr_args *fields, gwr_layer **out) {
    *out = NULL;
    if (!net || !domain || !type) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_plugin_create: NULL argument");
    plugin_kind *k = plugin_find(domain, type);
    if (!k)
        return gwr_ir_error(net, GWR_ERR_NOT_FOUND,
                            "plugin %s::%s is not registered (gwr_op_call creates unknown ops)", domain, type);
    gwr_layer *l = gwr_network_add_layer(net, type, domain, name, ninputs, inputs, k->noutputs, NULL);
    if (!l) return GWR_ERR_INVALID_ARG;
    gwr_status s = gwr_fn_set_attrs(l, fields);
    if (!s) s = k->infer(l, k->user);
    if (s) {
        gwr_ir_discard_new_layer(l);
        return s;
    }
    *out = l;
    return GWR_OK;
}

gwr_layer *gwr_plugin_create(gwr_network *net, const char *domain, const char *type, const char *name,
                             int ninputs, gwr_tensor *const *inputs, const gwr_args *fields) {
    gwr_layer *l;
    plugin_create(net, domain, type, name, ninputs, inputs, fields, &l);
    return l;
}

/* ---- functionals ---- */

static gwr_status functional_register_locked(const char *kind, gwr_functional_fn fn, const gwr_args *params,
                                             void *user) {
    for (int64_t i = 0; i < reg.nfns; i++)
        if (!strcmp(reg.fns[i]->kind, kind))
            return gwr_set_last_error(GWR_ERR_DUPLICATE, "functional '%s' is already registered", kind);
    gwr_fn_functional *f = gwr_calloc(1, sizeof *f);
    if (!f || !(f->kind = gwr_strdup(kind)) || !(f->params = params ? gwr_args_clone(params) : gwr_args_new()) ||
        gwr_grow((void **)&reg.fns, sizeof *reg.fns, &reg.fns_cap, reg.nfns + 1)) {
        if (f) gwr_free(f->kind), gwr_args_free(f->params);
        gwr_free(f);
        return gwr_set_last_error(GWR_ERR_NOMEM, "out of memory");
    }
    f->fn = fn, f->user = user;
    reg.fns[reg.nfns++] = f;
    return GWR_OK;
}

gwr_status gwr_functional_register(const char *kind, gwr_functional_fn fn, const gwr_args *params, void *user) {
    if (!kind || !*kind || !fn) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_functional_register: bad argument");
    reg_lock();
    gwr_status s = functional_register_locked(kind, fn, params, user);
    mtx_unlock(&reg.lock);
    return s;
}

const gwr_fn_functional *gwr_fn_functional_find(const char *kind) {
    reg_lock();
    gwr_fn_functional *f = NULL;
    for (int64_t i = 0; i < reg.nfns && !f; i++)
        if (!strcmp(reg.fns[i]->kind, kind)) f = reg.fns[i];
    mtx_unlock(&reg.lock);
    return f;
}

/* ---- built-in: GPTAttention ---- */

static int64_t field_int(gwr_layer *l, const char *name, int64_t dflt) {
    int64_t v;
    gwr_layer_attr_int(l, name, dflt, &v); /* another type: dflt */
    return v;
}

static int dim_is(gwr_dim d, int64_t v) { return !GWR_DIM_IS_KNOWN(d) || d == v; }

static gwr_status gpt_attention_infer(gwr_layer *l, void *user) {
    (void)user;
    gwr_network *net = gwr_layer_network(l);
    const char *nm = gwr_layer_name(l);
    int64_t heads = field_int(l, "num_heads", -1), hs = field_int(l, "head_size", -1);
    int64_t rp = field_int(l, "remove_padding", 0);
    if (heads <= 0 || hs <= 0 || heads > (1 << 20) || hs > (1 << 20))
        return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "GPTAttention '%s': num_heads and head_size must be positive", nm);
    if (gwr_layer_num_inputs(l) != 3)
        return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "GPTAttention '%s': needs 3 input slots (qkv, qkv_bias, attention_mask)", nm);
    gwr_tensor *qkv = gwr_layer_input(l, 0), *bias = gwr_layer_input(l, 1);
    char ty[128];
    int64_t hidden = heads * hs;
    if (!qkv) return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "GPTAttention '%s': qkv is required", nm);
    /* Type strings are formatted only for a message: this runs for every
     * plugin a rewrite re-creates. */
    if (!gwr_dtype_is_float(gwr_tensor_dtype(qkv)) || gwr_tensor_rank(qkv) != 3 ||
        !dim_is(gwr_tensor_dim(qkv, 2), 3 * hidden)) {
        gwr_tensor_type_str(qkv, ty, sizeof ty);
        return gwr_ir_error(net, GWR_ERR_SHAPE, "GPTAttention '%s': qkv must be float [batch, seq, %lld], got %s", nm,
                            (long long)(3 * hidden), ty);
    }
    if (rp && !dim_is(gwr_tensor_dim(qkv, 0), 1)) {
        gwr_tensor_type_str(qkv, ty, sizeof ty);
        return gwr_ir_error(net, GWR_ERR_SHAPE, "GPTAttention '%s': with remove_padding qkv must be [1, tokens, %lld], got %s",
                            nm, (long long)(3 * hidden), ty);
    }
    if (bias && (gwr_tensor_dtype(bias) != gwr_tensor_dtype(qkv) || gwr_tensor_rank(bias) != 1 ||
                 !dim_is(gwr_tensor_dim(bias, 0), 3 * hidden))) {
        gwr_tensor_type_str(bias, ty, sizeof ty);
        return gwr_ir_error(net, GWR_ERR_SHAPE, "GPTAttention '%s': qkv_bias must be [%lld] of qkv's dtype, got %s", nm,
                            (long long)(3 * hidden), ty);
    }
    gwr_dim b = gwr_tensor_dim(qkv, 0), s = gwr_tensor_dim(qkv, 1);
    gwr_dtype dt = gwr_tensor_dtype(qkv);
    gwr_dim ctx[3] = {b, s, hidden};
    gwr_dim present[5] = {b, 2, heads, s, hs};
    gwr_status st = gwr_tensor_set_type(gwr_layer_output(l, 0), dt, 3, ctx);
    if (!st) st = gwr_tensor_set_type(gwr_layer_output(l, 1), dt, 5, present);
    return st;
}

static gwr_status gpt_attention_fn(gwr_network *net, const gwr_args *args, gwr_tensor **outs, int max_outs,
                                   int *nouts, void *user) {
    (void)user;
    gwr_tensor *in[3] = {NULL, NULL, NULL};
    static const char *const names[3] = {"qkv", "qkv_bias", "attention_mask"};
    for (int i = 0; i < 3; i++)
        if (gwr_args_get_tensor(args, names[i], &in[i]))
            return gwr_ir_error(net, GWR_ERR_TYPE, "gpt_attention: %s must be a tensor or none: %s", names[i],
                                gwr_args_errmsg(args));
    if (!in[0]) return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gpt_attention: qkv is required");
    if (in[1] && gwr_layer_type(gwr_tensor_parent(in[1])) != GWR_LAYER_CONSTANT)
        return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gpt_attention: qkv_bias '%s' must be a constant",
                            gwr_tensor_name(in[1]));
    int64_t v;
    static const char *const ints[] = {"num_heads", "head_size", "remove_padding"};
    gwr_args *fields = gwr_args_new();
    if (!fields) return gwr_ir_error(net, GWR_ERR_NOMEM, "out of memory");
    for (int i = 0; i < 3; i++) {
        if (gwr_args_get_int(args, ints[i], &v)) {
            gwr_status s = gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gpt_attention: %s must be an int: %s", ints[i],
                                        gwr_args_errmsg(args));
            gwr_args_free(fields);
            return s;
        }
        gwr_args_set_int(fields, ints[i], v);
    }
    gwr_layer *l;
    gwr_status s = plugin_create(net, GWR_PLUGIN_DOMAIN, "GPTAttention", NULL, 3, in, fields, &l);
    gwr_args_free(fields);
    if (s) return s;
    int n = max_outs < 2 ? max_outs : 2;
    for (int i = 0; i < n; i++) outs[i] = gwr_layer_output(l, i);
    if (nouts) *nouts = n;
    return GWR_OK;
}

/* Under the lock; what an earlier, failed call registered stays. */
static gwr_status register_builtins(void) {
    if (!plugin_find_locked(GWR_PLUGIN_DOMAIN, "GPTAttention") &&
        plugin_register_locked(GWR_PLUGIN_DOMAIN, "GPTAttention", 2, gpt_attention_infer, NULL))
        return GWR_ERR_NOMEM;
    if (!plugin_find_locked(GWR_PLUGIN_DOMAIN, "ElementwiseChain") &&
        plugin_register_locked(GWR_PLUGIN_DOMAIN, "ElementwiseChain", 1, gwr_fn_ew_chain_infer, NULL))
        return GWR_ERR_NOMEM;
    if (!plugin_find_locked(GWR_PLUGIN_DOMAIN, GWR_SWIGLU_OP) &&
        plugin_register_locked(GWR_PLUGIN_DOMAIN, GWR_SWIGLU_OP, 1, gwr_fn_swiglu_infer, NULL))
        return GWR_ERR_NOMEM;
    for (int64_t i = 0; i < reg.nfns; i++)
        if (!strcmp(reg.fns[i]->kind, GWR_GPT_ATTENTION)) return GWR_OK;
    gwr_args *p = gwr_args_new();
    gwr_status s = p ? GWR_OK : GWR_ERR_NOMEM;
    static const char *const none[] = {"qkv", "qkv_bias", "attention_mask", "num_heads", "head_size"};
    for (size_t i = 0; i < sizeof none / sizeof *none && !s; i++) s = gwr_args_set_none(p, none[i]);
    if (!s) s = gwr_args_set_int(p, "remove_padding", 0);
    if (!s) s = functional_register_locked(GWR_GPT_ATTENTION, gpt_attention_fn, p, NULL);
    gwr_args_free(p);
    return s;
}
