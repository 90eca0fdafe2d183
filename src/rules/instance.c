/* instance.c - random instances of a match table (instance.h).
 *
 * One draw builds the network node by node in table order (producers
 * first, as the table reads). A node's input references are resolved in
 * order: NODE references read the layer already built, bound captures
 * their tensor, and a capture seen for the first time is made by
 * make_operand from the op and the operands known so far (MatMul's right
 * side takes the left's last dim, Conv's weight the input's channels, a
 * BatchNormalization parameter [C], Reshape's shape a valid target, an
 * elementwise constant the strategy's broadcast of the other operand).
 * A draw fails when shape inference refuses a layer or the table does not
 * match the root; the next draw takes the next strategy and new extents. */
#include "rules/instance.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gwr/exec.h"
#include "gwr/functional.h"
#include "util/util.h"

enum { ST_SAME, ST_SCALAR, ST_CHANNEL, ST_LASTDIM, ST_SQUARE, NSTRATEGIES };

static const char *const strategy_names[NSTRATEGIES] = {"same-shape", "scalar-constants", "per-channel",
                                                        "last-dim", "square"};

const char *gwr_rules_instance_strategy_name(int s) {
    return s >= 0 && s < NSTRATEGIES ? strategy_names[s] : "?";
}

uint64_t gwr_rules_rand(uint64_t *s) {
    uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ULL;
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dULL;
}

/* uniform in [lo, hi] */
static int64_t irand(uint64_t *s, int64_t lo, int64_t hi) { return lo + (int64_t)(gwr_rules_rand(s) % (uint64_t)(hi - lo + 1)); }
/* uniform in [0, 1) */
static double frand(uint64_t *s) { return (double)(gwr_rules_rand(s) >> 11) * (1.0 / 9007199254740992.0); }

/* What where clauses test constants for (`value(c) == 1`). */
static const double special_values[] = {1.0, 0.0, 2.0, -1.0, 0.5};
#define NSPECIAL ((int)(sizeof special_values / sizeof special_values[0]))

typedef struct shape {
    int rank;
    int64_t d[GWR_MAX_RANK];
} shape;

/* One operand to make: its type and how its values are drawn. */
typedef struct operand {
    gwr_dtype dtype;
    shape s;
    int as_const;        /* a constant layer rather than a network input */
    enum { V_RANDOM, V_POSITIVE, V_SPLAT, V_INTS, V_BOOL, V_INTS_RANDOM, V_SPECIAL } values;
    double splat;
    int64_t ints[GWR_MAX_RANK * 2];
    int nints;
} operand;

typedef struct draw {
    const gwr_match_pattern *p;
    const gwr_rules_instance_options *o;
    gwr_network *net;
    uint64_t rng;
    int strategy, positive;
    int special;       /* > 0: constants hold special value special - 1 everywhere */
    shape base;
    gwr_tensor *caps[GWR_MATCH_MAX_CAPTURES];
    gwr_layer *layers[GWR_MATCH_MAX_NODES];
    int ninputs, nconsts;
    char why[512];
} draw;

static int nrefs(const gwr_match_node *n) {
    int k = 0;
    while (k < GWR_MATCH_MAX_INPUTS && n->in[k].kind != GWR_MREF_END) k++;
    return k;
}

/* The node's op and domain ("any op": Relu for one operand, else Add or
 * Sum); one of its alternatives (.ops) drawn from *rng. */
static void node_op(const gwr_match_node *n, uint64_t *rng, char *dom, size_t dsz, const char **op) {
    *dom = 0;
    const char *name = n->op;
    if (n->ops && n->ops[0]) {
        int k = 0;
        while (n->ops[k]) k++;
        name = n->ops[gwr_rules_rand(rng) % (uint64_t)k];
    } else if (n->op_id != GWR_OP_CUSTOM) {
        const gwr_op_info *info = gwr_op_info_get(n->op_id);
        snprintf(dom, dsz, "%s", info->domain);
        *op = info->name;
        return;
    }
    if (!name) {
        int k = nrefs(n);
        *op = k <= 1 ? "Relu" : k == 2 ? "Add" : "Sum";
        return;
    }
    const char *sep = strstr(name, "::");
    if (!sep) {
        *op = name;
        return;
    }
    size_t dl = (size_t)(sep - name);
    if (dl >= dsz) dl = dsz - 1;
    memcpy(dom, name, dl);
    dom[dl] = 0;
    *op = sep + 2;
}

static int is_op(const char *op, const char *name) { return !strcmp(op, name); }

/* An attribute constraint of node n, or NULL. */
static const gwr_mattr *attr_of(const gwr_match_node *n, const char *name) {
    for (int a = 0; a < GWR_MATCH_MAX_ATTRS && n->attrs[a].kind != GWR_MATTR_NONE; a++)
        if (!strcmp(n->attrs[a].name, name)) return &n->attrs[a];
    return NULL;
}

static int64_t attr_int(const gwr_match_node *n, const char *name, int64_t def) {
    const gwr_mattr *a = attr_of(n, name);
    return a && a->kind == GWR_MATTR_INT ? a->i : def;
}

static shape tensor_shape(const gwr_tensor *t, int *ok) {
    shape s = {0, {0}};
    int r = t ? gwr_tensor_rank(t) : -1;
    *ok = r >= 0;
    if (r < 0) return s;
    s.rank = r;
    for (int i = 0; i < r; i++) {
        gwr_dim d = gwr_tensor_dim(t, i);
        if (d < 0) *ok = 0;
        s.d[i] = d < 0 ? 1 : d;
    }
    return s;
}

static shape shape_of(int rank, const int64_t *d) {
    shape s = {rank, {0}};
    for (int i = 0; i < rank; i++) s.d[i] = d[i];
    return s;
}

static int64_t numel(const shape *s) {
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) n *= s->d[i];
    return n;
}

/* The base shape of a draw: what a first free operand gets. */
static void draw_base(draw *w) {
    shape *b = &w->base;
    switch (w->strategy) {
    case ST_SQUARE: {
        int64_t n = irand(&w->rng, 2, 5);
        *b = shape_of(2, (int64_t[]){n, n});
        return;
    }
    case ST_CHANNEL:
        *b = shape_of(4, (int64_t[]){irand(&w->rng, 1, 2), irand(&w->rng, 2, 5), irand(&w->rng, 3, 5), irand(&w->rng, 3, 5)});
        return;
    default:
        b->rank = (int)irand(&w->rng, w->strategy == ST_SCALAR ? 1 : 2, 4);
        for (int i = 0; i < b->rank; i++) b->d[i] = irand(&w->rng, 2, 5);
    }
}

/* A constant operand broadcasting against s, by the draw's strategy. */
static shape broadcast_of(const draw *w, const shape *s) {
    switch (w->strategy) {
    case ST_SCALAR: return shape_of(0, NULL);
    case ST_CHANNEL:
        if (s->rank >= 3) {
            shape c = {s->rank - 1, {0}};
            c.d[0] = s->d[1];
            for (int i = 1; i < c.rank; i++) c.d[i] = 1;
            return c;
        }
        /* fall through */
    case ST_LASTDIM: return s->rank ? shape_of(1, &s->d[s->rank - 1]) : *s;
    default: return *s;
    }
}

static const gwr_rules_slot_hint *hint(const draw *w, int slot) {
    return w->o && w->o->hints && slot >= 0 && slot < GWR_MATCH_MAX_CAPTURES ? &w->o->hints[slot] : NULL;
}

gwr_dtype gwr_rules_pick_dtype(uint64_t mask) {
    if (!mask || mask & GWR_M_DT(GWR_FLOAT32)) return GWR_UNDEFINED;
    for (int d = 1; d < 64; d++)
        if (mask & GWR_M_DT(d) && gwr_match_dtype_real_float((gwr_dtype)d)) return (gwr_dtype)d;
    for (int d = 1; d < 64; d++)
        if (mask & GWR_M_DT(d)) return (gwr_dtype)d;
    return GWR_UNDEFINED;
}

/* What a hint (a rule's constraint) fixes of an operand. */
static void apply_hint(draw *w, const gwr_rules_slot_hint *h, operand *out) {
    if (!h) return;
    if (h->dtype != GWR_UNDEFINED) out->dtype = h->dtype;
    if (h->positive && out->values == V_RANDOM) out->values = V_POSITIVE;
    if (h->has_value) out->values = V_SPLAT, out->splat = h->value + (w->o->perturb ? (2 * frand(&w->rng) - 1) * 0.4 * h->tol : 0);
    if (h->ranked) {
        int lo = h->rank_min < 0 ? 0 : h->rank_min, hi = h->rank_max < lo || h->rank_max > GWR_MAX_RANK ? GWR_MAX_RANK : h->rank_max;
        if (out->s.rank > hi) { /* keep the trailing dims (what broadcasting aligns) */
            memmove(out->s.d, out->s.d + (out->s.rank - hi), (size_t)hi * sizeof out->s.d[0]);
            out->s.rank = hi;
        }
        while (out->s.rank < lo) {
            memmove(out->s.d + 1, out->s.d, (size_t)out->s.rank * sizeof out->s.d[0]);
            out->s.d[0] = irand(&w->rng, 2, 4), out->s.rank++;
        }
    }
    if (h->nshape > 0 && h->nshape <= GWR_MAX_RANK) {
        shape f = {h->nshape, {0}};
        for (int i = 0; i < f.rank; i++) {
            int from = out->s.rank - f.rank + i; /* right-aligned */
            f.d[i] = h->dims[i] >= 0 ? h->dims[i] : from >= 0 ? out->s.d[from] : irand(&w->rng, 2, 4);
        }
        out->s = f;
    }
}

/* Operand k of a node of op `op` (attributes in n), the operands known
 * so far in known[] (NULL: not yet), reference r. */
static void make_operand(draw *w, const gwr_match_node *n, const char *op, int k, const gwr_mref *r,
                         gwr_tensor *const *known, int nin, operand *out) {
    memset(out, 0, sizeof *out);
    out->dtype = w->o && w->o->dtype != GWR_UNDEFINED ? w->o->dtype : GWR_FLOAT32;
    out->as_const = r->kind != GWR_MREF_CAP;
    out->values = w->special ? V_SPECIAL : w->positive ? V_POSITIVE : V_RANDOM;
    if (r->kind == GWR_MREF_SPLAT) {
        out->values = V_SPLAT;
        out->splat = r->value;
        /* Within the tolerance: a declared one always; the literals' own
         * 1e-6 only for a value that is not a whole number (exporters write
         * 2.0 and 3.0 exactly; 2.0000005 as Pow's exponent is NaN for a
         * negative base, which no model holds) */
        double tol = r->tol_set ? r->tol : r->value == nearbyint(r->value) ? 0 : 1e-6 * fmax(1.0, fabs(r->value));
        if (w->o && w->o->perturb) out->splat += (2.0 * frand(&w->rng) - 1.0) * 0.4 * tol;
    }
    /* the first operand already known, preferring operand 0 */
    const gwr_tensor *ref = NULL;
    int refk = -1;
    for (int j = 0; j < nin && !ref; j++)
        if (known[j]) ref = known[j], refk = j;
    int ok = 0;
    shape rs = ref ? tensor_shape(ref, &ok) : w->base;
    if (ref && !ok) rs = w->base;
    if (ref && gwr_tensor_dtype(ref) != GWR_BOOL && gwr_tensor_dtype(ref) != GWR_UNDEFINED &&
        (gwr_match_dtype_real_float(gwr_tensor_dtype(ref)) || gwr_dtype_is_int(gwr_tensor_dtype(ref))))
        out->dtype = gwr_tensor_dtype(ref);
    int64_t last = rs.rank ? rs.d[rs.rank - 1] : 1;
    out->s = rs;

    if (is_op(op, "MatMul") || is_op(op, "Gemm")) {
        int ta = (int)attr_int(n, "transA", 0), tb = (int)attr_int(n, "transB", 0);
        int gemm = is_op(op, "Gemm");
        if (gemm && rs.rank != 2) rs = shape_of(2, (int64_t[]){irand(&w->rng, 2, 5), irand(&w->rng, 2, 5)});
        if (k == 0 && refk < 0) out->s = w->base.rank >= 2 ? w->base : shape_of(2, (int64_t[]){3, 4});
        else if (k == 0) { /* left side of a known right side [.., K, N] */
            int64_t kk = rs.rank >= 2 ? rs.d[rs.rank - 2 + (gemm && tb)] : rs.d[0];
            out->s = shape_of(2, (int64_t[]){irand(&w->rng, 2, 5), kk});
            if (gemm && ta) out->s = shape_of(2, (int64_t[]){kk, out->s.d[0]});
        } else if (k == 1) {
            int64_t kk = gemm && ta ? rs.d[0] : last, nn = irand(&w->rng, 2, 5);
            out->s = shape_of(2, gemm && tb ? (int64_t[]){nn, kk} : (int64_t[]){kk, nn});
        } else { /* Gemm's C: [N] */
            int64_t nn = known[1] ? (tensor_shape(known[1], &ok).d[tb ? 0 : 1]) : 1;
            out->s = w->strategy == ST_SCALAR ? shape_of(0, NULL) : shape_of(1, &nn);
        }
    } else if (is_op(op, "Conv")) {
        int64_t g = attr_int(n, "group", 1);
        if (k == 0) {
            out->s = w->base.rank == 4 ? w->base
                                       : shape_of(4, (int64_t[]){1, 2 * g, irand(&w->rng, 4, 6), irand(&w->rng, 4, 6)});
            out->s.d[1] = out->s.d[1] - out->s.d[1] % g + (out->s.d[1] % g ? g : 0);
        } else {
            int64_t c = rs.rank >= 2 ? rs.d[1] : 2, m = g * irand(&w->rng, 1, 3);
            const gwr_mattr *ks = attr_of(n, "kernel_shape");
            int64_t kh = ks && ks->kind == GWR_MATTR_INTS && ks->n == 2 ? ks->ints[0] : irand(&w->rng, 1, 3);
            int64_t kw = ks && ks->kind == GWR_MATTR_INTS && ks->n == 2 ? ks->ints[1] : kh;
            if (k == 1) out->s = shape_of(4, (int64_t[]){m, c / g, kh, kw});
            else out->s = shape_of(1, (int64_t[]){known[1] ? tensor_shape(known[1], &ok).d[0] : m});
        }
    } else if ((is_op(op, "BatchNormalization") || is_op(op, "InstanceNormalization")) && k >= 1) {
        out->s = shape_of(1, (int64_t[]){rs.rank >= 2 ? rs.d[1] : 1});
        if (k == 4 || (k == 1 && is_op(op, "InstanceNormalization") && 0)) out->values = V_POSITIVE;
        if (k == 4) out->values = V_POSITIVE;
    } else if ((is_op(op, "BatchNormalization") || is_op(op, "InstanceNormalization")) && k == 0) {
        out->s = w->base.rank >= 3 ? w->base : shape_of(4, (int64_t[]){1, 3, 4, 4});
    } else if (is_op(op, "LayerNormalization") && k >= 1) {
        int64_t ax = attr_int(n, "axis", -1);
        if (ax < 0) ax += rs.rank;
        out->s.rank = rs.rank - (int)ax;
        for (int i = 0; i < out->s.rank; i++) out->s.d[i] = rs.d[ax + i];
    } else if ((is_op(op, "Reshape") || is_op(op, "Expand") || is_op(op, "Tile")) && k == 1) {
        out->dtype = GWR_INT64, out->as_const = 1, out->values = V_INTS;
        out->s = shape_of(1, (int64_t[]){0});
        if (is_op(op, "Reshape")) {
            int form = (int)irand(&w->rng, 0, rs.rank >= 2 ? 2 : 0);
            if (form == 0) out->ints[0] = numel(&rs), out->nints = 1;
            else if (form == 1) out->ints[0] = rs.d[0], out->ints[1] = -1, out->nints = 2;
            else out->ints[0] = -1, out->ints[1] = last, out->nints = 2;
        } else if (is_op(op, "Expand")) {
            out->ints[0] = irand(&w->rng, 2, 3);
            for (int i = 0; i < rs.rank; i++) out->ints[i + 1] = rs.d[i];
            out->nints = rs.rank + 1;
        } else {
            for (int i = 0; i < rs.rank; i++) out->ints[i] = irand(&w->rng, 1, 2);
            out->nints = rs.rank;
        }
    } else if ((is_op(op, "Unsqueeze") || is_op(op, "Squeeze") || is_op(op, "ReduceMean") || is_op(op, "ReduceSum") ||
                is_op(op, "ReduceMax") || is_op(op, "ReduceMin") || is_op(op, "ReduceProd") ||
                is_op(op, "ReduceL2") || is_op(op, "ReduceSumSquare")) &&
               k == 1) {
        out->dtype = GWR_INT64, out->as_const = 1, out->values = V_INTS, out->nints = 1;
        out->ints[0] = is_op(op, "Unsqueeze") ? 0 : -1;
        if (is_op(op, "Squeeze")) {
            out->nints = 0;
            for (int i = 0; i < rs.rank; i++)
                if (rs.d[i] == 1) out->ints[out->nints++] = i;
        }
    } else if (is_op(op, "Slice") && k >= 1) {
        out->dtype = GWR_INT64, out->as_const = 1, out->values = V_INTS, out->nints = 1;
        out->ints[0] = k == 1 ? 0 : k == 2 ? (rs.rank ? rs.d[0] - 1 : 1) : k == 3 ? 0 : 1;
    } else if (is_op(op, "Gather") && k == 1) {
        int64_t ax = attr_int(n, "axis", 0);
        if (ax < 0) ax += rs.rank;
        out->dtype = GWR_INT64, out->as_const = 1, out->values = V_INTS, out->nints = 2;
        int64_t ext = ax >= 0 && ax < rs.rank ? rs.d[ax] : 1;
        out->ints[0] = irand(&w->rng, 0, ext - 1), out->ints[1] = irand(&w->rng, 0, ext - 1);
    } else if (is_op(op, "Pad") && k == 1) {
        out->dtype = GWR_INT64, out->as_const = 1, out->values = V_INTS, out->nints = 2 * rs.rank;
        for (int i = 0; i < out->nints; i++) out->ints[i] = irand(&w->rng, 0, 1);
    } else if (is_op(op, "Clip") && k >= 1) {
        out->s = shape_of(0, NULL);
        if (out->values != V_SPLAT) out->values = V_SPLAT, out->splat = k == 1 ? -0.5 + 0.3 * frand(&w->rng) : 0.2 + 0.3 * frand(&w->rng);
    } else if (is_op(op, "Where") && k == 0) {
        out->dtype = GWR_BOOL, out->values = V_BOOL;
        if (refk < 0) out->s = w->base;
    } else if (refk >= 0 && refk != k) {
        /* elementwise (and the rest): same shape as a variable, the strategy's broadcast as a constant */
        if (out->as_const) out->s = broadcast_of(w, &rs);
    } else {
        out->s = w->base;
    }
    if (out->values == V_INTS) out->s = shape_of(1, (int64_t[]){out->nints}); /* shapes, axes, indices: 1-D */
    /* ops of other dtypes: the logical ones read bool, the bitwise ones integers */
    if (is_op(op, "Not") || is_op(op, "And") || is_op(op, "Or") || is_op(op, "Xor"))
        out->dtype = GWR_BOOL, out->values = V_BOOL;
    else if (!strncmp(op, "Bitwise", 7) || is_op(op, "BitShift"))
        out->dtype = is_op(op, "BitShift") ? GWR_UINT32 : GWR_INT32, out->values = V_INTS_RANDOM;
    /* Dropout's ratio is a float scalar in [0, 1) (a constant: the
     * executor's random inputs could be negative), its training_mode a
     * bool scalar */
    if (is_op(op, "Dropout") && k == 1) out->s.rank = 0, out->as_const = 1, out->values = V_SPLAT, out->splat = 0.5 * frand(&w->rng);
    else if (is_op(op, "Dropout") && k == 2) out->s.rank = 0, out->dtype = GWR_BOOL, out->values = V_BOOL;
    /* what must be positive: a divisor, a root or logarithm of a constant, a power's base */
    if ((out->values == V_RANDOM || (out->values == V_SPECIAL && special_values[w->special - 1] <= 0)) &&
        ((k == 1 && (is_op(op, "Div") || is_op(op, "Mod"))) || is_op(op, "Sqrt") || is_op(op, "Log") ||
         is_op(op, "Reciprocal") || (k == 0 && is_op(op, "Pow"))))
        out->values = V_POSITIVE;
    apply_hint(w, hint(w, r->idx), out);
    /* the reference's own constraints (v2) */
    if (r->dtypes || r->rank_set) {
        gwr_rules_slot_hint rh = {.ranked = r->rank_set, .rank_min = r->rank_lo, .rank_max = r->rank_hi};
        rh.dtype = gwr_rules_pick_dtype(r->dtypes);
        apply_hint(w, &rh, out);
    }
}

static gwr_tensor *build_operand(draw *w, int slot, const operand *op) {
    const gwr_rules_slot_hint *h = hint(w, slot);
    char nm[64];
    if (!op->as_const) {
        if (h && h->name) snprintf(nm, sizeof nm, "%s", h->name);
        else if (slot >= 0) snprintf(nm, sizeof nm, "x%d", slot);
        else snprintf(nm, sizeof nm, "any%d", w->ninputs);
        if (gwr_network_find_tensor(w->net, nm)) snprintf(nm + strlen(nm), sizeof nm - strlen(nm), "_%d", w->ninputs);
        w->ninputs++;
        gwr_dim d[GWR_MAX_RANK];
        for (int i = 0; i < op->s.rank; i++) d[i] = op->s.d[i];
        return gwr_network_add_input(w->net, nm, op->dtype, op->s.rank, d);
    }
    gwr_value *v = gwr_value_new(op->dtype, op->s.rank, op->s.d);
    if (!v) return NULL;
    int64_t ne = gwr_value_numel(v);
    for (int64_t i = 0; i < ne; i++) {
        double x;
        switch (op->values) {
        case V_SPLAT: x = op->splat; break;
        case V_INTS: x = (double)op->ints[i]; break;
        case V_BOOL: x = (double)(gwr_rules_rand(&w->rng) & 1u); break;
        case V_INTS_RANDOM: x = (double)irand(&w->rng, 0, 7); break;
        case V_POSITIVE: x = 0.5 + frand(&w->rng); break;
        case V_SPECIAL: x = special_values[w->special - 1]; break;
        default: x = 2.0 * frand(&w->rng) - 1.0;
        }
        if (op->dtype == GWR_INT64 && op->values == V_INTS) ((int64_t *)gwr_value_data(v))[i] = op->ints[i];
        else gwr_value_set_f64(v, i, x);
    }
    gwr_weights wt;
    gwr_tensor *t = NULL;
    if (!gwr_value_to_weights(v, &wt)) {
        if (h && h->name) {
            snprintf(nm, sizeof nm, "%s", h->name);
            if (gwr_network_find_layer(w->net, nm) || gwr_network_find_tensor(w->net, nm)) snprintf(nm + strlen(nm), sizeof nm - strlen(nm), "_%d", w->nconsts);
        }
        t = gwr_network_add_constant(w->net, h && h->name ? nm : NULL, &wt);
        gwr_buffer_release(wt.buffer);
    }
    w->nconsts++;
    gwr_value_release(v);
    return t;
}

static int is_float_attr(const char *n) {
    static const char *const names[] = {"epsilon", "alpha", "beta", "gamma", "lambd", "bias", "momentum", "scale", "min", "max", NULL};
    for (int i = 0; names[i]; i++)
        if (!strcmp(n, names[i])) return 1;
    return 0;
}

/* A drawn value of attribute `name` for a node whose first input has shape xs. */
static gwr_status draw_attr(draw *w, const char *name, const shape *xs, gwr_args *a) {
    int r = xs->rank;
    if (!strcmp(name, "perm")) {
        int64_t p[GWR_MAX_RANK];
        for (int j = 0; j < r; j++) p[j] = j;
        for (int j = r - 1; j > 0; j--) { /* Fisher-Yates */
            int q = (int)irand(&w->rng, 0, j);
            int64_t t = p[j];
            p[j] = p[q], p[q] = t;
        }
        return gwr_args_set_ints(a, name, r, p);
    }
    if (!strcmp(name, "axes")) {
        int64_t ax = r ? irand(&w->rng, 0, r - 1) : 0;
        return gwr_args_set_ints(a, name, 1, &ax);
    }
    if (!strcmp(name, "axis")) return gwr_args_set_int(a, name, r ? irand(&w->rng, -r, r - 1) : 0);
    if (is_float_attr(name)) return gwr_args_set_float(a, name, !strcmp(name, "epsilon") ? 1e-5 : 0.25 + frand(&w->rng));
    if (!strcmp(name, "to")) return gwr_args_set_int(a, name, GWR_FLOAT32);
    /* string attributes: their ONNX default */
    static const char *const strings[][2] = {{"approximate", "none"}, {"mode", "constant"}, {"auto_pad", "NOTSET"},
                                             {"direction", "forward"}, {"reduction", "none"},
                                             {"coordinate_transformation_mode", "half_pixel"},
                                             {"nearest_mode", "round_prefer_floor"}, {"padding_mode", "zeros"}};
    for (size_t k = 0; k < sizeof strings / sizeof strings[0]; k++)
        if (!strcmp(name, strings[k][0])) return gwr_args_set_string(a, name, strings[k][1]);
    return gwr_args_set_int(a, name, 1);
}

/* Attribute `name` of table node i: the value the rule asks for, else drawn. */
static gwr_status wanted_attr(draw *w, int i, const char *name, const shape *xs, gwr_args *a) {
    for (int k = 0; w->o && k < w->o->nattrs; k++) {
        const gwr_rules_attr_draw *d = &w->o->attrs[k];
        if (d->node != i || !d->name || strcmp(d->name, name) || !d->kind) continue;
        if (d->kind == 2) return gwr_args_set_string(a, name, d->str);
        if (d->is_int && !is_float_attr(name) && d->num == nearbyint(d->num)) return gwr_args_set_int(a, name, (int64_t)d->num);
        return gwr_args_set_float(a, name, d->num);
    }
    return draw_attr(w, name, xs, a);
}

/* Draws the attributes the rule captures on table node i (not set by a
 * constraint); x is the node's first input. */
static gwr_status drawn_attrs(draw *w, int i, const gwr_match_node *n, const gwr_tensor *x, gwr_args *a) {
    int ok = 0;
    shape xs = x ? tensor_shape(x, &ok) : w->base;
    for (int k = 0; w->o && k < w->o->nattrs; k++) {
        const gwr_rules_attr_draw *d = &w->o->attrs[k];
        if (d->node != i || !d->name || attr_of(n, d->name)) continue;
        gwr_status s = wanted_attr(w, i, d->name, &xs, a);
        if (s) return s;
    }
    return GWR_OK;
}

/* Sets node n's constrained attributes (an absent_ok one: half the time; a
 * captured one drawn) and the ones the op requires; x is its first input. */
static gwr_status node_attrs(draw *w, int i, const gwr_match_node *n, const char *op, const gwr_tensor *x, gwr_args *a) {
    gwr_status s = GWR_OK;
    int ok = 0;
    shape xs = x ? tensor_shape(x, &ok) : w->base;
    for (int k = 0; k < GWR_MATCH_MAX_ATTRS && n->attrs[k].kind != GWR_MATTR_NONE && !s; k++) {
        const gwr_mattr *c = &n->attrs[k];
        if (c->absent_ok && (gwr_rules_rand(&w->rng) & 1u)) continue;
        switch (c->kind) {
        case GWR_MATTR_INT: s = gwr_args_set_int(a, c->name, c->i); break;
        case GWR_MATTR_FLOAT: s = gwr_args_set_float(a, c->name, c->f); break;
        case GWR_MATTR_STRING: s = gwr_args_set_string(a, c->name, c->s); break;
        case GWR_MATTR_INTS: s = gwr_args_set_ints(a, c->name, c->n, c->ints); break;
        case GWR_MATTR_CAPTURE: s = wanted_attr(w, i, c->name, &xs, a); break;
        default: break;
        }
    }
    if (!s && is_op(op, "Cast") && !attr_of(n, "to")) s = gwr_args_set_int(a, "to", GWR_FLOAT32);
    if (!s && is_op(op, "Concat") && !attr_of(n, "axis")) s = gwr_args_set_int(a, "axis", 0);
    return s;
}

static int mentions(const gwr_mref *r, int i) {
    for (int a = 0; a < r->nalt && a < GWR_MATCH_MAX_ALTS; a++)
        if (r->alt[a] == i) return 1;
    return 0;
}

/* Outputs node i needs: the largest output any reference reads, plus one. */
static int node_outputs(const gwr_match_pattern *p, int i, const char *dom, const char *op) {
    int n = 1;
    for (int j = i + 1; j < p->nnodes; j++)
        for (int k = 0; k < nrefs(&p->nodes[j]); k++)
            if (p->nodes[j].in[k].out + 1 > n &&
                ((p->nodes[j].in[k].kind == GWR_MREF_NODE && p->nodes[j].in[k].idx == i) ||
                 (p->nodes[j].in[k].kind == GWR_MREF_EITHER && mentions(&p->nodes[j].in[k], i))))
                n = p->nodes[j].in[k].out + 1;
    const gwr_op_info *info = gwr_op_info_get(gwr_op_lookup(dom, op));
    if (info && info->min_outputs > n) n = info->min_outputs;
    return n;
}

static int draw_fail(draw *w, const char *fmt, const char *a, const char *b) {
    snprintf(w->why, sizeof w->why, fmt, a, b);
    return 0;
}

/* One draw: 1 built and matched, 0 not (w->why), -1 out of memory. */
static int draw_once(draw *w, gwr_rules_instance *out) {
    const gwr_match_pattern *p = w->p;
    if (w->o && w->o->opset > 0 && gwr_network_set_opset(w->net, "", w->o->opset)) return -1;
    draw_base(w);
    /* the nodes the root reaches, an EITHER reference taking one of its alternatives */
    int needed[GWR_MATCH_MAX_NODES] = {0}, chosen[GWR_MATCH_MAX_NODES][GWR_MATCH_MAX_INPUTS];
    needed[p->nnodes - 1] = 1;
    for (int i = p->nnodes - 1; i >= 0; i--) {
        if (!needed[i]) continue;
        for (int k = 0; k < nrefs(&p->nodes[i]); k++) {
            const gwr_mref *r = &p->nodes[i].in[k];
            chosen[i][k] = r->kind == GWR_MREF_NODE ? r->idx
                           : r->kind == GWR_MREF_EITHER && r->nalt > 0 ? r->alt[gwr_rules_rand(&w->rng) % (uint64_t)r->nalt]
                                                                        : -1;
            if (chosen[i][k] >= 0 && chosen[i][k] < i) needed[chosen[i][k]] = 1;
        }
    }
    for (int i = 0; i < p->nnodes; i++) {
        if (!needed[i]) continue;
        const gwr_match_node *n = &p->nodes[i];
        char dom[64];
        const char *op;
        node_op(n, &w->rng, dom, sizeof dom, &op);
        int nr = nrefs(n), rest = nr && n->in[nr - 1].kind == GWR_MREF_REST;
        nr -= rest;
        gwr_tensor *in[GWR_MATCH_MAX_INPUTS] = {0};
        int skip[GWR_MATCH_MAX_INPUTS] = {0};
        /* what is known: nodes, bound captures; optional ones dropped a quarter of the time */
        for (int k = 0; k < nr; k++) {
            const gwr_mref *r = &n->in[k];
            if (r->optional && r->kind != GWR_MREF_NODE && r->kind != GWR_MREF_EITHER && !(r->idx >= 0 && w->caps[r->idx]) &&
                gwr_rules_rand(&w->rng) % 4 == 0)
                skip[k] = 1;
            else if (r->kind == GWR_MREF_ABSENT) skip[k] = 1;
            else if (r->kind == GWR_MREF_NODE || r->kind == GWR_MREF_EITHER) {
                int src = chosen[i][k];
                if (src < 0 || !w->layers[src] || r->out >= gwr_layer_num_outputs(w->layers[src]))
                    return draw_fail(w, "%s: reads an output %s of a node not built", op, "");
                in[k] = gwr_layer_output(w->layers[src], r->out);
            } else if (r->idx >= 0 && w->caps[r->idx])
                in[k] = w->caps[r->idx];
        }
        for (int k = 0; k < nr; k++) {
            const gwr_mref *r = &n->in[k];
            if (in[k] || skip[k]) continue;
            if (r->idx >= 0 && w->caps[r->idx]) { /* bound by an earlier operand of this node */
                in[k] = w->caps[r->idx];
                continue;
            }
            operand od;
            make_operand(w, n, op, k, r, in, nr, &od);
            if (!(in[k] = build_operand(w, r->idx, &od))) return draw_fail(w, "operand of %s: %s", op, gwr_last_errmsg());
            if (r->idx >= 0) w->caps[r->idx] = in[k];
        }
        int nin = nr;
        while (nin > 0 && !in[nin - 1]) nin--;
        /* `xs...`: one to three more operands (at least the minimum), inputs shaped as the first one */
        int rmin = rest ? n->in[nr].min : 0;
        for (int extra = rest ? (int)irand(&w->rng, rmin > 1 ? rmin : 1, (rmin > 1 ? rmin : 1) + 2) : 0; extra > 0 && nin < GWR_MATCH_MAX_INPUTS && nin == nr; extra--) {
            operand od;
            gwr_mref any = {.kind = GWR_MREF_CAP, .idx = -1};
            make_operand(w, n, op, nin, &any, in, nin, &od);
            if (!(in[nin] = build_operand(w, -1, &od))) return draw_fail(w, "operand of %s: %s", op, gwr_last_errmsg());
            nin++, nr++;
        }
        gwr_args *a = gwr_args_new();
        if (!a) return -1;
        gwr_layer *l = NULL;
        if (!node_attrs(w, i, n, op, nin ? in[0] : NULL, a) && !drawn_attrs(w, i, n, nin ? in[0] : NULL, a))
            l = gwr_op_call(w->net, dom, op, nin, in, a, node_outputs(p, i, dom, op), NULL);
        gwr_args_free(a);
        if (!l) return draw_fail(w, "%s: %s", op, gwr_network_errmsg(w->net));
        for (int o = 0; o < gwr_layer_num_outputs(l); o++)
            if (gwr_tensor_dtype(gwr_layer_output(l, o)) == GWR_UNDEFINED)
                return draw_fail(w, "%s: output %s has no inferred dtype", op, gwr_tensor_name(gwr_layer_output(l, o)));
        w->layers[i] = l;
    }
    gwr_layer *root = w->layers[p->nnodes - 1];
    for (int o = 0; o < gwr_layer_num_outputs(root); o++) {
        gwr_tensor *y = gwr_layer_output(root, o);
        if (w->o && w->o->tail) {
            gwr_layer *id = gwr_op_call(w->net, "", "Identity", 1, &y, NULL, 1, NULL);
            if (!id) return draw_fail(w, "Identity: %s%s", gwr_network_errmsg(w->net), "");
            y = gwr_layer_output(id, 0);
        }
        if (gwr_network_mark_output(w->net, y)) return draw_fail(w, "%s%s", gwr_network_errmsg(w->net), "");
    }
    int r = gwr_match_layer(p, root, &out->match);
    if (r < 0) return -1;
    if (!r) {
        char why[256];
        gwr_match_why(&out->match, why, sizeof why);
        return draw_fail(w, "the table does not match its instance: %s%s", why, "");
    }
    out->root = root;
    return 1;
}

gwr_status gwr_rules_instance_new(const gwr_match_pattern *p, uint64_t seed, const gwr_rules_instance_options *o,
                                  gwr_rules_instance *out) {
    if (!out) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_rules_instance_new: NULL out");
    memset(out, 0, sizeof *out);
    gwr_status s = gwr_match_check(p);
    if (s) return s;
    int tries = o && o->max_tries > 0 ? o->max_tries : 60;
    uint64_t rng = seed * 0x9e3779b97f4a7c15ULL + 0x7f4a7c159e3779b9ULL;
    char why[640] = "";
    for (int t = 0; t < tries; t++) {
        draw w;
        memset(&w, 0, sizeof w);
        w.p = p, w.o = o;
        w.rng = gwr_rules_rand(&rng) | 1u;
        w.strategy = t % NSTRATEGIES;
        w.positive = (t / NSTRATEGIES) % 2;
        /* every third round of strategies: constants of one special value (where clauses compare with them) */
        if ((t / NSTRATEGIES) % 3 == 2) w.special = 1 + (t / (3 * NSTRATEGIES)) % NSPECIAL;
        if (!(w.net = gwr_network_new(p->name))) return gwr_last_status();
        int r = draw_once(&w, out);
        if (r > 0) {
            out->net = w.net, out->strategy = w.strategy, out->tries = t + 1;
            return GWR_OK;
        }
        gwr_network_free(w.net);
        memset(&out->match, 0, sizeof out->match);
        if (r < 0) return gwr_set_last_error(GWR_ERR_NOMEM, "pattern '%s': %s", p->name ? p->name : "?", gwr_last_errmsg());
        snprintf(why, sizeof why, "%s (strategy %s)", w.why, strategy_names[w.strategy]);
    }
    return gwr_set_last_error(GWR_ERR_NOT_FOUND, "pattern '%s': no instance in %d draws; last: %s", p->name ? p->name : "?",
                              tries, why);
}

void gwr_rules_instance_free(gwr_rules_instance *inst) {
    if (!inst) return;
    gwr_network_free(inst->net);
    memset(inst, 0, sizeof *inst);
}

void gwr_rules_instance_print(gwr_network *net, FILE *out, const char *indent) {
    char buf[256];
    for (int i = 0; i < gwr_network_num_inputs(net); i++) {
        gwr_tensor *t = gwr_network_input(net, i);
        gwr_tensor_type_str(t, buf, sizeof buf);
        fprintf(out, "%sinput %s: %s\n", indent, gwr_tensor_name(t), buf);
    }
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (gwr_layer_is_removed(l)) continue;
        gwr_tensor *y = gwr_layer_output(l, 0);
        if (gwr_layer_type(l) == GWR_LAYER_CONSTANT) {
            gwr_match_const c;
            gwr_tensor_type_str(y, buf, sizeof buf);
            fprintf(out, "%s%s = Constant %s", indent, gwr_tensor_name(y), buf);
            if (gwr_match_const_get(y, &c)) {
                fputs(" {", out);
                for (int64_t k = 0; k < c.numel && k < 6; k++) fprintf(out, "%s%.9g", k ? ", " : "", gwr_match_const_at(&c, k));
                fputs(c.numel > 6 ? ", ...}" : "}", out);
            }
            fputc('\n', out);
            continue;
        }
        fputs(indent, out);
        for (int o = 0; o < gwr_layer_num_outputs(l); o++) fprintf(out, "%s%s", o ? ", " : "", gwr_tensor_name(gwr_layer_output(l, o)));
        fprintf(out, " = %s%s%s", gwr_layer_domain(l), *gwr_layer_domain(l) ? "::" : "", gwr_layer_op(l));
        for (int a = 0; a < gwr_layer_num_attrs(l); a++) {
            const char *an = gwr_layer_attr_name(l, a);
            fprintf(out, "%s%s=", a ? ", " : "<", an);
            int64_t iv, nn;
            float fv;
            const char *sv;
            const int64_t *iv_s;
            if (!gwr_layer_get_int(l, an, &iv)) fprintf(out, "%lld", (long long)iv);
            else if (!gwr_layer_get_float(l, an, &fv)) fprintf(out, "%.9g", (double)fv);
            else if (!gwr_layer_get_string(l, an, &sv, NULL)) fprintf(out, "\"%s\"", sv);
            else if (!gwr_layer_get_ints(l, an, &iv_s, &nn)) {
                fputc('[', out);
                for (int64_t k = 0; k < nn; k++) fprintf(out, "%s%lld", k ? ", " : "", (long long)iv_s[k]);
                fputc(']', out);
            } else fputs("...", out);
        }
        fputs(gwr_layer_num_attrs(l) ? ">(" : "(", out);
        for (int k = 0; k < gwr_layer_num_inputs(l); k++) {
            gwr_tensor *t = gwr_layer_input(l, k);
            if (!t) {
                fprintf(out, "%snone", k ? ", " : "");
                continue;
            }
            gwr_tensor_type_str(t, buf, sizeof buf);
            fprintf(out, "%s%s: %s", k ? ", " : "", gwr_tensor_name(t), buf);
        }
        fputs(") ->", out);
        for (int o = 0; o < gwr_layer_num_outputs(l); o++) {
            gwr_tensor_type_str(gwr_layer_output(l, o), buf, sizeof buf);
            fprintf(out, "%s %s", o ? "," : "", buf);
        }
        fputc('\n', out);
    }
}
