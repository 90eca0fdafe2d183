/* precision.c - gwr_precision: float32 networks to float16 or bfloat16.
 *
 * Every layer is converted unless the table below, --keep, --keep-node or
 * --auto keeps it in float32. A converted layer computes in half: its
 * float32 outputs become half, its dtype attributes (Cast's `to`,
 * ConstantOfShape's value, the Random ops' and EyeLike's `dtype`) that
 * name float32 name half, and the float32 constants it reads are stored
 * half (a constant read by both a converted and a kept layer is stored
 * both ways). Casts go only where a value crosses between the two
 * regions, and at the interface under --keep-io; then Cast pairs that
 * undo each other (float32 -> half -> float32 of a float32 tensor, or
 * half -> float32 -> half) and Casts to a tensor's own dtype are removed.
 * Inputs that the ONNX spec types float32 whatever the data type (Resize's
 * roi and scales, Upsample's scales) stay float32.
 *
 * If, Loop and Scan are kept float32 whole, bodies included: a body reads
 * float32 from the enclosing network through a Cast there. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec_api.h"
#include "quant/precision_internal.h"

/* Swaps the names of tensors a and b of one network through the public
 * setters (a free temporary name between). 0, or -1 when out of memory. */
static int swap_names(gwr_tensor *a, gwr_tensor *b) {
    char *na = gwr_strdup(gwr_tensor_name(a)), *nb = gwr_strdup(gwr_tensor_name(b)), tmp[64];
    int rc = -1;
    if (na && nb) {
        gwr_network *net = gwr_tensor_network(a);
        for (unsigned i = 0;; i++) {
            snprintf(tmp, sizeof tmp, "gwr_precision_swap_%u", i);
            if (!gwr_network_find_tensor(net, tmp)) break;
        }
        rc = gwr_tensor_set_name(a, tmp) || gwr_tensor_set_name(b, na) || gwr_tensor_set_name(a, nb) ? -1 : 0;
    }
    gwr_free(na), gwr_free(nb);
    return rc;
}

/* ---- data ------------------------------------------------------------------ */

static uint16_t to_half(float x, gwr_dtype to) {
    if (to == GWR_FLOAT16) {
        /* finite values past float16's range saturate (as onnxconverter-common
         * clips them) rather than becoming infinities */
        if (x > 65504.0f) x = 65504.0f;
        else if (x < -65504.0f) x = -65504.0f;
        return gwr_f32_to_f16(x);
    }
    return gwr_f32_to_bf16(x);
}

/* A half copy of float32 weights w (dims and name shared with w: the
 * setter copies them). *buf gets the new buffer (the caller releases). */
static gwr_status half_weights(gwr_network *net, const gwr_weights *w, gwr_dtype to, gwr_weights *out,
                               gwr_buffer **buf) {
    size_t n = w->nbytes / 4;
    *buf = gwr_buffer_new_copy(NULL, n > 0 ? n * 2 : 2);
    if (!*buf) return gwr_ir_error(net, GWR_ERR_NOMEM, "precision: out of memory");
    uint16_t *h = (uint16_t *)gwr_buffer_data(*buf);
    const float *f = (const float *)w->data;
    for (size_t i = 0; i < n; i++) {
        float x;
        memcpy(&x, f + i, 4);
        h[i] = to_half(x, to);
    }
    *out = *w;
    out->dtype = to, out->data = h, out->nbytes = n * 2, out->buffer = *buf;
    return GWR_OK;
}

/* ---- the conversion ---------------------------------------------------------- */

typedef struct cast_memo {
    gwr_tensor *from;
    int want;
    gwr_tensor *to;
} cast_memo;

typedef struct conv_ctx {
    gwr_network *net;
    gwr_dtype half;
    cast_memo *casts;
    int64_t ncasts, capcasts;
    int64_t nbase; /* layers before the conversion added any */
} conv_ctx;

/* The Cast of t to `want` in the root network, one per tensor and dtype. */
static gwr_tensor *cast_of(conv_ctx *c, gwr_tensor *t, int want) {
    for (int64_t i = 0; i < c->ncasts; i++)
        if (c->casts[i].from == t && c->casts[i].want == want) return c->casts[i].to;
    gwr_dtype to = want == WANT_HALF ? c->half : GWR_FLOAT32;
    char name[96];
    snprintf(name, sizeof name, "%s_to_%s", gwr_tensor_name(t), to == GWR_FLOAT32 ? "fp32" : to == GWR_FLOAT16 ? "fp16" : "bf16");
    gwr_layer *l = gwr_network_add_layer(c->net, "Cast", "", NULL, 1, &t, 1, NULL);
    if (!l || gwr_layer_set_int(l, "to", to)) return NULL;
    gwr_tensor *o = gwr_layer_output(l, 0);
    if (gwr_tensor_set_type(o, to, gwr_tensor_rank(t), gwr_tensor_dims(t))) return NULL;
    if (!gwr_network_find_tensor(c->net, name)) gwr_tensor_set_name(o, name);
    if (gwr_grow((void **)&c->casts, sizeof *c->casts, &c->capcasts, c->ncasts + 1)) return NULL;
    c->casts[c->ncasts++] = (cast_memo){t, want, o};
    return o;
}

/* A pending rewire: layer l's input slot to the `want` form. */
typedef struct rewire {
    gwr_layer *l;
    int slot, want;
    gwr_tensor *t;
} rewire;

typedef struct rewires {
    rewire *v;
    int64_t n, cap;
} rewires;

static int rw_add(rewires *r, gwr_layer *l, int slot, int want, gwr_tensor *t) {
    if (gwr_grow((void **)&r->v, sizeof *r->v, &r->cap, r->n + 1)) return -1;
    r->v[r->n++] = (rewire){l, slot, want, t};
    return 0;
}

/* Body layers (of a kept If/Loop/Scan, at any depth) that read float32
 * tensors of root: they get the float32 form. */
static int body_reads(gwr_network *root, gwr_network *g, rewires *rw) {
    for (int64_t i = 0; i < gwr_network_num_layers(g); i++) {
        gwr_layer *l = gwr_network_layer(g, i);
        if (gwr_layer_is_removed(l)) continue;
        for (int s = 0; s < gwr_layer_num_inputs(l); s++) {
            gwr_tensor *t = gwr_layer_input(l, s);
            if (t && gwr_tensor_network(t) == root && gwr_tensor_dtype(t) == GWR_FLOAT32 && rw_add(rw, l, s, WANT_FLOAT, t))
                return -1;
        }
        for (int a = 0; a < gwr_layer_num_attrs(l); a++) {
            const char *an = gwr_layer_attr_name(l, a);
            gwr_network *sg = NULL;
            gwr_network *const *gs = NULL;
            int64_t ng = 0;
            if (gwr_layer_attr_type(l, a) == GWR_ATTR_GRAPH && !gwr_layer_get_graph(l, an, &sg) && sg &&
                body_reads(root, sg, rw))
                return -1;
            if (gwr_layer_attr_type(l, a) == GWR_ATTR_GRAPHS && !gwr_layer_get_graphs(l, an, &gs, &ng))
                for (int64_t k = 0; k < ng; k++)
                    if (gs[k] && body_reads(root, gs[k], rw)) return -1;
        }
    }
    return 0;
}

static int set_half_type(gwr_tensor *t, gwr_dtype half) {
    return gwr_tensor_set_type(t, half, gwr_tensor_rank(t), gwr_tensor_dims(t)) ? -1 : 0;
}

/* A converted layer's attributes that name float32. */
static gwr_status convert_attrs(conv_ctx *c, gwr_layer *l) {
    gwr_op_id op = gwr_layer_op_id(l);
    int64_t v;
    switch (op) {
    case GWR_OP_Cast:
        if (!gwr_layer_get_int(l, "to", &v) && v == GWR_FLOAT32) return gwr_layer_set_int(l, "to", c->half);
        return GWR_OK;
    case GWR_OP_RandomNormal:
    case GWR_OP_RandomUniform:
        if (gwr_layer_attr_int(l, "dtype", GWR_FLOAT32, &v)) return GWR_OK;
        return v == GWR_FLOAT32 ? gwr_layer_set_int(l, "dtype", c->half) : GWR_OK;
    case GWR_OP_RandomNormalLike:
    case GWR_OP_RandomUniformLike:
    case GWR_OP_EyeLike:
    case GWR_OP_Bernoulli:
        /* the output is `dtype` or the input's: made explicit, so that the
         * input may be read in whatever form it has */
        if (gwr_layer_get_int(l, "dtype", &v)) {
            gwr_tensor *in = gwr_layer_input(l, 0);
            v = in ? gwr_tensor_dtype(in) : GWR_UNDEFINED;
            if (v != GWR_UNDEFINED && v != GWR_FLOAT32) return gwr_layer_set_int(l, "dtype", v);
        }
        return v == GWR_FLOAT32 ? gwr_layer_set_int(l, "dtype", c->half) : GWR_OK;
    case GWR_OP_ConstantOfShape: {
        float zero = 0;
        gwr_weights z = {.dtype = GWR_FLOAT32, .rank = 1, .dims = (const int64_t[]){1}, .data = &zero, .nbytes = 4};
        const gwr_weights *w = NULL;
        if (gwr_layer_get_tensor(l, "value", &w)) w = &z; /* absent: a float32 0 */
        if (w->dtype != GWR_FLOAT32) return GWR_OK;
        gwr_weights h;
        gwr_buffer *b;
        gwr_status s = half_weights(c->net, w, c->half, &h, &b);
        if (!s) s = gwr_layer_set_tensor(l, "value", &h);
        gwr_buffer_release(b);
        return s;
    }
    default: return GWR_OK;
    }
}

/* The float32 constant of a Constant layer (attribute value), or NULL. */
static const gwr_weights *const_value(const gwr_layer *l) {
    const gwr_weights *w = NULL;
    if (gwr_layer_op_id(l) != GWR_OP_Constant || gwr_layer_get_tensor(l, "value", &w) || w->dtype != GWR_FLOAT32)
        return NULL;
    return w;
}

static int is_cast_to(const gwr_layer *l, gwr_dtype *to) {
    int64_t v;
    if (gwr_layer_is_removed(l) || gwr_layer_op_id(l) != GWR_OP_Cast || gwr_layer_get_int(l, "to", &v)) return 0;
    *to = (gwr_dtype)v;
    return 1;
}

static int is_floaty(gwr_dtype t) { return t == GWR_FLOAT32 || t == GWR_FLOAT16 || t == GWR_BFLOAT16; }

/* Casts to a tensor's own dtype, and Cast pairs that come back to where
 * they started (float32 -> half -> float32, half -> float32 -> half),
 * removed. */
static gwr_status drop_casts(gwr_network *net) {
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        gwr_dtype to, mid;
        if (!is_cast_to(l, &to)) continue;
        gwr_tensor *in = gwr_layer_input(l, 0), *out = gwr_layer_output(l, 0);
        if (!in) continue;
        gwr_tensor *src = NULL;
        if (gwr_tensor_dtype(in) == to) src = in;
        else {
            gwr_layer *p = gwr_tensor_parent(in);
            gwr_tensor *pin = p ? gwr_layer_input(p, 0) : NULL;
            if (p && pin && is_cast_to(p, &mid) && is_floaty(mid) && gwr_tensor_dtype(pin) == to && is_floaty(to))
                src = pin;
        }
        if (!src) continue;
        /* out's readers read src; an output keeps its name (the IR swaps
         * names or puts an Identity) */
        if (gwr_tensor_output_index(out) >= 0 && (gwr_tensor_output_index(src) >= 0 || gwr_tensor_is_input(src)))
            continue; /* would need an Identity: the Cast is as cheap */
        gwr_status s = gwr_tensor_replace_all_uses_with(out, src);
        if (s) return s;
        gwr_layer_mark_as_removed(l);
    }
    return gwr_network_prune(net, NULL);
}

static int64_t mm_weight_bytes(gwr_network *net) {
    int64_t b = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        gwr_op_id op = gwr_layer_op_id(l);
        if (gwr_layer_is_removed(l) || (op != GWR_OP_MatMul && op != GWR_OP_Gemm && op != GWR_OP_Conv &&
                                        op != GWR_OP_ConvTranspose))
            continue;
        for (int s = 1; s < gwr_layer_num_inputs(l); s++) {
            gwr_tensor *t = gwr_layer_input(l, s);
            gwr_layer *p = t ? gwr_tensor_parent(t) : NULL;
            /* through a Cast of a constant (a kept layer's weights) */
            if (p && gwr_layer_op_id(p) == GWR_OP_Cast && gwr_layer_input(p, 0)) {
                t = gwr_layer_input(p, 0);
                p = gwr_tensor_parent(t);
            }
            const gwr_weights *w = NULL;
            if (p && gwr_layer_op_id(p) == GWR_OP_Constant && !gwr_layer_get_tensor(p, "value", &w)) b += (int64_t)w->nbytes;
            else if (t && gwr_tensor_default(t)) b += (int64_t)gwr_tensor_default(t)->nbytes;
        }
    }
    return b;
}

/* The network's float32 inputs made half (not under --keep-io), and
 * inputs with a default value (initializers listed as inputs: weights)
 * converted even under --keep-io. */
static gwr_status half_inputs(gwr_network *net, const gwr_precision_options *o) {
    gwr_status s = GWR_OK;
    for (int k = 0; k < gwr_network_num_inputs(net) && !s; k++) {
        gwr_tensor *t = gwr_network_input(net, k);
        const gwr_weights *d = gwr_tensor_default(t);
        if (gwr_tensor_dtype(t) != GWR_FLOAT32 || (o->keep_io && !d)) continue;
        if (d) {
            gwr_weights h;
            gwr_buffer *b;
            if ((s = half_weights(net, d, o->to, &h, &b))) break;
            gwr_weights keep = h;
            if (set_half_type(t, o->to) || gwr_tensor_set_default(t, &keep))
                s = gwr_ir_error(net, GWR_ERR_STATE, "precision: %s", gwr_network_errmsg(net));
            gwr_buffer_release(b);
        } else if (set_half_type(t, o->to)) {
            s = gwr_ir_error(net, GWR_ERR_STATE, "precision: %s", gwr_network_errmsg(net));
        }
    }

    return s;
}

/* The outputs in the form the interface asks: a Cast takes the output's
 * name and place. */
static gwr_status cast_outputs(conv_ctx *c, gwr_tensor **outs, const int *out_want, int nout, gwr_dtype half) {
    gwr_network *net = c->net;
    gwr_status s = GWR_OK;
    int changed = 0;
    for (int k = 0; k < nout && !s; k++) {
        gwr_tensor *t = outs[k];
        if (!out_want[k] || gwr_tensor_dtype(t) == (out_want[k] == WANT_HALF ? half : GWR_FLOAT32)) continue;
        gwr_tensor *ct = cast_of(c, t, out_want[k]);
        if (!ct) {
            s = gwr_ir_error(net, GWR_ERR_STATE, "precision: casting output '%s': %s", gwr_tensor_name(t),
                             gwr_network_errmsg(net));
            break;
        }
        if (swap_names(t, ct)) {
            s = gwr_ir_error(net, GWR_ERR_NOMEM, "precision: out of memory");
            break;
        }
        outs[k] = ct, changed = 1;
    }
    if (!s && changed) {
        while (gwr_network_num_outputs(net)) gwr_network_unmark_output(net, gwr_network_output(net, 0));
        for (int k = 0; k < nout && !s; k++)
            if (gwr_network_mark_output(net, outs[k])) s = gwr_ir_error(net, GWR_ERR_STATE, "precision: %s", gwr_network_errmsg(net));
    }
    return s;
}

gwr_status gwr_q_prec_convert(gwr_network *net, const gwr_precision_options *o, const uint8_t *mask, int64_t nmask,
                              char *const *mask_why, gwr_quant_report *rep) {
    conv_ctx c = {.net = net, .half = o->to, .nbase = gwr_network_num_layers(net)};
    int64_t n = c.nbase;
    const char *hname = o->to == GWR_FLOAT16 ? "float16" : "bfloat16";
    uint8_t *conv = gwr_calloc((size_t)n + 1, 1);
    rewires rw = {0};
    gwr_tensor **outs = NULL;
    gwr_status s = GWR_OK;
    if (!conv) return gwr_ir_error(net, GWR_ERR_NOMEM, "precision: out of memory");
    if (rep) rep->bytes_before = mm_weight_bytes(net);

    /* 1. which layers convert */
    for (int64_t i = 0; i < n; i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (gwr_layer_is_removed(l)) continue;
        char buf[320], rbuf[160];
        const char *why = gwr_q_prec_kept_reason(l, o, rbuf, sizeof rbuf);
        if (!why && mask && i < nmask && mask[i]) why = mask_why && mask_why[i] ? mask_why[i] : "auto";
        conv[i] = !why;
        if (rep && gwr_q_prec_touches_data(l) && gwr_layer_op_id(l) != GWR_OP_Constant) {
            if (why) snprintf(buf, sizeof buf, "kept float32: %s", why);
            else snprintf(buf, sizeof buf, "%s", hname);
            if (gwr_q_report_add(rep, gwr_layer_name(l), gwr_layer_op(l), buf, -1, -1)) {
                s = gwr_ir_error(net, GWR_ERR_NOMEM, "precision: out of memory");
                goto done;
            }
        }
    }

    /* 2. what each reader wants, from the dtypes before any change */
    for (int64_t i = 0; i < n && !s; i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (gwr_layer_is_removed(l)) continue;
        gwr_op_id op = gwr_layer_op_id(l);
        for (int k = 0; k < gwr_layer_num_inputs(l); k++) {
            gwr_tensor *t = gwr_layer_input(l, k);
            if (!t || gwr_tensor_dtype(t) != GWR_FLOAT32 || gwr_q_prec_slot_agnostic(op, k)) continue;
            int want = conv[i] && !gwr_q_prec_slot_float32(op, k) ? WANT_HALF : WANT_FLOAT;
            if (rw_add(&rw, l, k, want, t)) s = gwr_ir_error(net, GWR_ERR_NOMEM, "precision: out of memory");
        }
        if (!conv[i] && gwr_q_prec_has_bodies(l)) {
            for (int a = 0; a < gwr_layer_num_attrs(l) && !s; a++) {
                const char *an = gwr_layer_attr_name(l, a);
                gwr_network *g = NULL;
                gwr_network *const *gs = NULL;
                int64_t ng = 0;
                int bad = 0;
                if (gwr_layer_attr_type(l, a) == GWR_ATTR_GRAPH && !gwr_layer_get_graph(l, an, &g) && g)
                    bad = body_reads(net, g, &rw);
                if (gwr_layer_attr_type(l, a) == GWR_ATTR_GRAPHS && !gwr_layer_get_graphs(l, an, &gs, &ng))
                    for (int64_t q = 0; q < ng && !bad; q++) bad = gs[q] && body_reads(net, gs[q], &rw);
                if (bad) s = gwr_ir_error(net, GWR_ERR_NOMEM, "precision: out of memory");
            }
        }
    }
    int nout = gwr_network_num_outputs(net);
    int *out_want = gwr_calloc((size_t)nout + 1, sizeof *out_want);
    outs = gwr_calloc((size_t)nout + 1, sizeof *outs);
    if (!s && (!out_want || !outs)) s = gwr_ir_error(net, GWR_ERR_NOMEM, "precision: out of memory");
    for (int k = 0; k < nout && !s; k++) {
        outs[k] = gwr_network_output(net, k);
        if (gwr_tensor_dtype(outs[k]) == GWR_FLOAT32) out_want[k] = o->keep_io ? WANT_FLOAT : WANT_HALF;
    }
    if (s) {
        gwr_free(out_want);
        goto done;
    }

    /* 3. the new dtypes: converted layers' float32 outputs, constants that
     * converted layers read, and the inputs unless --keep-io */
    for (int64_t i = 0; i < n && !s; i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (gwr_layer_is_removed(l)) continue;
        const gwr_weights *w = const_value(l);
        if (w) {
            /* a weight: half when every reader wants half */
            gwr_tensor *t = gwr_layer_output(l, 0);
            int half = 0, full = 0;
            for (int64_t r = 0; r < rw.n; r++)
                if (rw.v[r].t == t) half += rw.v[r].want == WANT_HALF, full += rw.v[r].want == WANT_FLOAT;
            for (int k = 0; k < nout; k++)
                if (outs[k] == t) half += out_want[k] == WANT_HALF, full += out_want[k] == WANT_FLOAT;
            if (!half) continue;
            gwr_weights h;
            gwr_buffer *b;
            if ((s = half_weights(net, w, o->to, &h, &b))) break;
            if (!full) {
                /* stored half in place */
                s = gwr_layer_set_tensor(l, "value", &h);
                if (!s && set_half_type(t, o->to)) s = gwr_ir_error(net, GWR_ERR_STATE, "precision: %s", gwr_network_errmsg(net));
            } else {
                /* both forms: a half copy for the converted readers */
                char name[96];
                snprintf(name, sizeof name, "%s_%s", gwr_tensor_name(t), o->to == GWR_FLOAT16 ? "fp16" : "bf16");
                h.name = NULL;
                gwr_tensor *ht = gwr_network_add_constant(net, gwr_network_find_tensor(net, name) ? NULL : name, &h);
                if (!ht) s = gwr_ir_error(net, GWR_ERR_NOMEM, "precision: %s", gwr_network_errmsg(net));
                if (gwr_grow((void **)&c.casts, sizeof *c.casts, &c.capcasts, c.ncasts + 1))
                    s = gwr_ir_error(net, GWR_ERR_NOMEM, "precision: out of memory");
                else c.casts[c.ncasts++] = (cast_memo){t, WANT_HALF, ht};
            }
            gwr_buffer_release(b);
            continue;
        }
        if (!conv[i]) continue;
        if ((s = convert_attrs(&c, l))) break;
        for (int k = 0; k < gwr_layer_num_outputs(l); k++) {
            gwr_tensor *t = gwr_layer_output(l, k);
            if (gwr_tensor_dtype(t) == GWR_FLOAT32 && !gwr_q_prec_output_stays(gwr_layer_op_id(l), k) && set_half_type(t, o->to))
                s = gwr_ir_error(net, GWR_ERR_STATE, "precision: %s", gwr_network_errmsg(net));
        }
    }
    if (!s) s = half_inputs(net, o);

    /* 4. Casts where a reader wants the other form */
    for (int64_t r = 0; r < rw.n && !s; r++) {
        rewire *x = &rw.v[r];
        gwr_dtype have = gwr_tensor_dtype(x->t), need = x->want == WANT_HALF ? o->to : GWR_FLOAT32;
        if (have == need) continue;
        gwr_tensor *ct = cast_of(&c, x->t, x->want);
        if (!ct || gwr_layer_set_input(x->l, x->slot, ct))
            s = gwr_ir_error(net, GWR_ERR_STATE, "precision: casting '%s': %s", gwr_tensor_name(x->t),
                             gwr_network_errmsg(net));
    }
    if (!s) s = cast_outputs(&c, outs, out_want, nout, o->to);
    gwr_free(out_want);
    if (!s) s = gwr_network_toposort(net);
    if (!s) s = drop_casts(net);
    if (!s) s = gwr_network_verify(net);
    if (rep && !s) rep->bytes_after = mm_weight_bytes(net);
done:
    gwr_free(conv);
    gwr_free(rw.v);
    gwr_free(outs);
    gwr_free(c.casts);
    return s;
}

static int half_output(const gwr_layer *l) {
    for (int k = 0; k < gwr_layer_num_outputs(l); k++) {
        gwr_dtype t = gwr_tensor_dtype(gwr_layer_output(l, k));
        if (t == GWR_FLOAT16 || t == GWR_BFLOAT16) return 1;
    }
    return 0;
}

/* 1 when an input of net or a layer output of net or its bodies is
 * already half. */
static int is_half(const gwr_network *net) {
    for (int k = 0; k < gwr_network_num_inputs(net); k++) {
        gwr_dtype t = gwr_tensor_dtype(gwr_network_input(net, k));
        if (t == GWR_FLOAT16 || t == GWR_BFLOAT16) return 1;
    }
    return gwr_q_any_layer(net, half_output);
}

gwr_status gwr_precision(gwr_network *net, const gwr_precision_options *opt, gwr_quant_report **rep) {
    if (rep) *rep = NULL;
    if (!net || !opt) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_precision: NULL network or options");
    if (gwr_network_parent(net)) return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_precision: a body, not a model");
    if (opt->to != GWR_FLOAT16 && opt->to != GWR_BFLOAT16)
        return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_precision: the target type must be float16 or bfloat16, not %s",
                            gwr_dtype_name(opt->to));
    if (!(opt->auto_tol >= 0) || !isfinite(opt->auto_tol))
        return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_precision: the tolerance must be a finite number >= 0");
    if (opt->threads < 0 || opt->threads > GWR_SESSION_MAX_THREADS)
        return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_precision: threads out of range");
    if (is_half(net))
        return gwr_ir_error(net, GWR_ERR_UNSUPPORTED, "gwr_precision: the model already holds float16 or bfloat16 tensors");
    int64_t opset = gwr_network_opset(net, "");
    if (opt->to == GWR_BFLOAT16 && opset >= 0 && opset < 13)
        return gwr_ir_error(net, GWR_ERR_UNSUPPORTED,
                            "gwr_precision: bfloat16 needs opset 13 or later (Cast and Constant take it from 13); the "
                            "model imports opset %lld: raise it first (gwr optimize --opset 13)",
                            (long long)opset);
    char why[320];
    if (opt->auto_tol > 0 && opt->calib && !gwr_calib_fits(opt->calib, net, why, sizeof why))
        return gwr_ir_error(net, GWR_ERR_INVALID_ARG, "gwr_precision: calibration: %s", why);
    gwr_quant_report *r = gwr_q_report_new();
    if (!r) return gwr_ir_error(net, GWR_ERR_NOMEM, "gwr_precision: out of memory");
    int64_t n = gwr_network_num_layers(net);
    uint8_t *mask = NULL;
    char **mwhy = NULL;
    gwr_status s = GWR_OK;
    if (opt->auto_tol > 0) {
        mask = gwr_calloc((size_t)n + 1, 1);
        mwhy = gwr_calloc((size_t)n + 1, sizeof *mwhy);
        if (!mask || !mwhy) s = gwr_ir_error(net, GWR_ERR_NOMEM, "gwr_precision: out of memory");
        else s = gwr_q_prec_auto(net, opt, mask, mwhy);
    }
    if (!s) s = gwr_q_prec_convert(net, opt, mask, mask ? n : 0, mwhy, r);
    for (int64_t i = 0; mwhy && i < n; i++) gwr_free(mwhy[i]);
    gwr_free(mwhy);
    gwr_free(mask);
    if (s || !rep) gwr_quant_report_free(r);
    else *rep = r;
    return s;
}
