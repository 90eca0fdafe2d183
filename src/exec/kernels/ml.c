/* ml.c - ops of the ai.onnx.ml domain: Binarizer, ArrayFeatureExtractor,
 * LabelEncoder (opsets 1-4: keys and values as lists or, from 4, as
 * tensors) and TreeEnsemble (opset 5).
 *
 * Semantics follow ONNX's operator specification and, where it is silent,
 * ONNX's reference implementation. Every input, attribute and index is
 * checked first. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/kernels/kernel_util.h"

/* ---- Binarizer ------------------------------------------------------------- */

static gwr_status k_binarizer(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_named(k, 0, "X");
    if (!x) return GWR_ERR_INVALID_ARG;
    if (x->dtype == GWR_STRING || x->dtype == GWR_BOOL || gwr_dtype_bits(x->dtype) < 8)
        return gwr_k_fail(k, GWR_ERR_TYPE, "X must be a numeric tensor, not %s", gwr_dtype_name(x->dtype));
    double t = gwr_k_float(k, "threshold", 0.0f);
    gwr_value *y = gwr_k_out(k, 0, x->dtype, x->rank, x->dims);
    if (!y) return GWR_ERR_NOMEM;
    for (int64_t i = 0; i < x->numel; i++) gwr_v_set_f64(y, i, gwr_v_get_f64(x, i) > t ? 1.0 : 0.0);
    return GWR_OK;
}

/* ---- ArrayFeatureExtractor ------------------------------------------------- */

/* Y[..., j] = X[..., indices[j]] along the last axis; a 1-D X gives [1, m]. */
static gwr_status k_array_feature_extractor(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_named(k, 0, "X"), *ix = x ? gwr_ku_need_named(k, 1, "Y") : NULL;
    if (!ix) return GWR_ERR_INVALID_ARG;
    if (ix->dtype != GWR_INT64) return gwr_k_fail(k, GWR_ERR_TYPE, "indices must be int64, not %s", gwr_dtype_name(ix->dtype));
    if (x->rank < 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "X must have at least one axis");
    int64_t esz = gwr_ku_elem_size(k, x->dtype);
    if (esz < 0) return GWR_ERR_TYPE;
    int64_t last = x->dims[x->rank - 1], m = ix->numel;
    const int64_t *idx = ix->data;
    for (int64_t j = 0; j < m; j++)
        if (idx[j] < 0 || idx[j] >= last)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "index %lld is out of range for a last axis of %lld", (long long)idx[j],
                              (long long)last);
    int64_t od[GWR_MAX_RANK];
    int r = x->rank == 1 ? 2 : x->rank;
    if (x->rank == 1) od[0] = 1;
    else memcpy(od, x->dims, (size_t)(x->rank - 1) * sizeof *od);
    od[r - 1] = m;
    gwr_value *y = gwr_k_out(k, 0, x->dtype, r, od);
    if (!y) return GWR_ERR_NOMEM;
    int64_t rows = last ? x->numel / last : gwr_shape_numel(x->rank - 1, x->dims);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < m; j++) {
            gwr_status st = gwr_ku_copy_run(k, y, i * m + j, x, i * last + idx[j], 1, esz);
            if (st) return st;
        }
    return GWR_OK;
}

/* ---- LabelEncoder ---------------------------------------------------------- */

/* The keys or values of a LabelEncoder as one value (a new reference):
 * from <prefix>_tensor, _strings, _int64s or _floats, exactly one of them.
 * NULL and *why set when none or several are given. */
static gwr_value *le_list(gwr_kctx *k, const char *prefix, const char **why) {
    char name[32];
    const gwr_weights *w = NULL;
    const gwr_bytes *s = NULL;
    const int64_t *iv = NULL;
    const float *fv = NULL;
    int64_t ns = -1, ni = -1, nf = -1;
    snprintf(name, sizeof name, "%s_tensor", prefix);
    if (gwr_layer_get_tensor(k->layer, name, &w)) w = NULL;
    snprintf(name, sizeof name, "%s_strings", prefix);
    if (gwr_layer_get_strings(k->layer, name, &s, &ns)) ns = -1;
    snprintf(name, sizeof name, "%s_int64s", prefix);
    if (gwr_layer_get_ints(k->layer, name, &iv, &ni)) ni = -1;
    snprintf(name, sizeof name, "%s_floats", prefix);
    if (gwr_layer_get_floats(k->layer, name, &fv, &nf)) nf = -1;
    if ((w != NULL) + (ns >= 0) + (ni >= 0) + (nf >= 0) != 1) {
        *why = "exactly one of its _tensor, _strings, _int64s and _floats attributes must be set";
        return NULL;
    }
    *why = "out of memory";
    if (w) {
        if (w->rank != 1) {
            *why = "its _tensor attribute must be 1-D";
            return NULL;
        }
        return gwr_value_from_weights(w);
    }
    int64_t n = ns >= 0 ? ns : ni >= 0 ? ni : nf;
    gwr_value *v = gwr_value_new(ns >= 0 ? GWR_STRING : ni >= 0 ? GWR_INT64 : GWR_FLOAT32, 1, &n);
    if (!v) return NULL;
    for (int64_t i = 0; i < n; i++) {
        if (ns >= 0 && gwr_value_set_string(v, i, s[i].data, s[i].len)) {
            gwr_value_release(v);
            return NULL;
        }
        if (ni >= 0) ((int64_t *)v->data)[i] = iv[i];
        if (nf >= 0) ((float *)v->data)[i] = fv[i];
    }
    return v;
}

static int le_is_int(gwr_dtype t) { return gwr_ku_is_int(t); }

/* Does element i of x equal element j of keys? Float keys NaN match NaN. */
static int le_match(const gwr_value *x, int64_t i, const gwr_value *keys, int64_t j) {
    if (x->dtype == GWR_STRING) {
        const gwr_bytes *a = &((const gwr_bytes *)x->data)[i], *b = &((const gwr_bytes *)keys->data)[j];
        return a->len == b->len && (!a->len || !memcmp(a->data, b->data, a->len));
    }
    if (le_is_int(x->dtype) && le_is_int(keys->dtype)) return gwr_v_get_i64(x, i) == gwr_v_get_i64(keys, j);
    double a = gwr_v_get_f64(x, i), b = gwr_v_get_f64(keys, j);
    return a == b || (isnan(a) && isnan(b));
}

/* The default value as a 1-element value of the values' dtype. */
static gwr_value *le_default(gwr_kctx *k, gwr_dtype dt) {
    const gwr_weights *w = NULL;
    if (!gwr_layer_get_tensor(k->layer, "default_tensor", &w)) {
        gwr_value *d = gwr_value_from_weights(w);
        if (d && (d->numel != 1 || d->dtype != dt)) {
            gwr_k_fail(k, GWR_ERR_INVALID_ARG, "default_tensor must hold one %s, not %lld of %s", gwr_dtype_name(dt),
                       (long long)d->numel, gwr_dtype_name(d->dtype));
            gwr_value_release(d);
            return NULL;
        }
        if (!d) gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
        return d;
    }
    gwr_value *d = gwr_value_new(dt, 0, NULL);
    if (!d) {
        gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
        return NULL;
    }
    if (dt == GWR_STRING) {
        const char *s = gwr_k_string(k, "default_string", "_Unused");
        if (gwr_value_set_string(d, 0, s, strlen(s))) {
            gwr_value_release(d);
            gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
            return NULL;
        }
    } else if (dt == GWR_INT64) {
        *(int64_t *)d->data = gwr_k_int(k, "default_int64", -1);
    } else if (dt == GWR_FLOAT32) {
        *(float *)d->data = gwr_k_float(k, "default_float", -0.0f);
    } else {
        gwr_v_set_f64(d, 0, 0.0);
    }
    return d;
}

static gwr_status k_label_encoder(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_named(k, 0, "X");
    if (!x) return GWR_ERR_INVALID_ARG;
    const char *why = NULL;
    gwr_value *keys = le_list(k, "keys", &why), *vals = NULL, *def = NULL;
    gwr_status st = GWR_OK;
    if (!keys) {
        st = gwr_k_fail(k, GWR_ERR_INVALID_ARG, "keys: %s", why);
    } else if (!(vals = le_list(k, "values", &why))) {
        st = gwr_k_fail(k, GWR_ERR_INVALID_ARG, "values: %s", why);
    } else if (keys->numel != vals->numel) {
        st = gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%lld keys for %lld values", (long long)keys->numel, (long long)vals->numel);
    } else if ((x->dtype == GWR_STRING) != (keys->dtype == GWR_STRING) || (x->dtype != GWR_STRING && gwr_ku_elem_size(k, x->dtype) <= 0)) {
        st = gwr_k_fail(k, GWR_ERR_TYPE, "input of %s for keys of %s", gwr_dtype_name(x->dtype), gwr_dtype_name(keys->dtype));
    } else if (!(def = le_default(k, vals->dtype))) {
        st = GWR_ERR_INVALID_ARG;
    }
    int64_t esz = st ? 0 : gwr_ku_elem_size(k, vals->dtype);
    gwr_value *y = st || esz < 0 ? NULL : gwr_k_out(k, 0, vals->dtype, x->rank, x->dims);
    if (!st && !y) st = esz < 0 ? GWR_ERR_TYPE : GWR_ERR_NOMEM;
    /* Repeated keys: the last one wins, so search from the end. */
    for (int64_t i = 0; !st && i < x->numel; i++) {
        int64_t j = keys->numel - 1;
        while (j >= 0 && !le_match(x, i, keys, j)) j--;
        st = j >= 0 ? gwr_ku_copy_run(k, y, i, vals, j, 1, esz) : gwr_ku_copy_run(k, y, i, def, 0, 1, esz);
    }
    gwr_value_release(keys), gwr_value_release(vals), gwr_value_release(def);
    return st;
}

/* ---- TreeEnsemble ---------------------------------------------------------- */

enum { TE_LEQ, TE_LT, TE_GTE, TE_GT, TE_EQ, TE_NEQ, TE_MEMBER };
enum { TE_AVERAGE, TE_SUM, TE_MIN, TE_MAX };

typedef struct te_model {
    int64_t nnodes, nleaves, ntrees, ntargets;
    const int64_t *feat, *tnode, *fnode, *tleaf, *fleaf, *missing, *roots, *target;
    int64_t nmissing;
    gwr_value *modes, *splits, *weights, *members;
    int64_t *mstart; /* per node: where its set begins in members (MEMBER nodes) */
} te_model;

static void te_free(te_model *m) {
    gwr_value_release(m->modes), gwr_value_release(m->splits), gwr_value_release(m->weights), gwr_value_release(m->members);
    gwr_free(m->mstart);
}

static gwr_value *te_tensor(gwr_kctx *k, const char *name, int required) {
    const gwr_weights *w = NULL;
    if (gwr_layer_get_tensor(k->layer, name, &w)) {
        if (required) gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attribute '%s' (a tensor) is required", name);
        return NULL;
    }
    gwr_value *v = gwr_value_from_weights(w);
    if (!v) gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attribute '%s': %s", name, gwr_last_errmsg());
    else if (v->dtype == GWR_STRING || v->dtype == GWR_BOOL || gwr_dtype_bits(v->dtype) < 8) {
        gwr_k_fail(k, GWR_ERR_TYPE, "attribute '%s' must be numeric, not %s", name, gwr_dtype_name(v->dtype));
        gwr_value_release(v);
        v = NULL;
    }
    return v;
}

static gwr_status te_ints(gwr_kctx *k, const char *name, int64_t n, const int64_t **v) {
    int64_t c = gwr_k_ints(k, name, v);
    if (c != n) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attribute '%s' has %lld entries, not %lld", name, (long long)c, (long long)n);
    return GWR_OK;
}

/* Reads and checks the ensemble: every index in range, so that a walk
 * cannot leave the arrays; cycles are caught by the walk's step limit. */
static gwr_status te_load(gwr_kctx *k, te_model *m, int64_t nfeat) {
    memset(m, 0, sizeof *m);
    if (!(m->modes = te_tensor(k, "nodes_modes", 1)) || !(m->splits = te_tensor(k, "nodes_splits", 1)) ||
        !(m->weights = te_tensor(k, "leaf_weights", 1)))
        return GWR_ERR_INVALID_ARG;
    m->nnodes = m->splits->numel, m->nleaves = m->weights->numel;
    m->ntargets = gwr_k_int(k, "n_targets", -1);
    if (m->ntargets < 1 || m->ntargets > ((int64_t)1 << 32))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "n_targets must be given and positive, not %lld", (long long)m->ntargets);
    if (m->modes->numel != m->nnodes)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "nodes_modes has %lld entries for %lld nodes", (long long)m->modes->numel,
                          (long long)m->nnodes);
    gwr_status st;
    if ((st = te_ints(k, "nodes_featureids", m->nnodes, &m->feat)) || (st = te_ints(k, "nodes_truenodeids", m->nnodes, &m->tnode)) ||
        (st = te_ints(k, "nodes_falsenodeids", m->nnodes, &m->fnode)) || (st = te_ints(k, "nodes_trueleafs", m->nnodes, &m->tleaf)) ||
        (st = te_ints(k, "nodes_falseleafs", m->nnodes, &m->fleaf)) || (st = te_ints(k, "leaf_targetids", m->nleaves, &m->target)))
        return st;
    m->ntrees = gwr_k_ints(k, "tree_roots", &m->roots);
    if (m->ntrees < 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "tree_roots must name at least one tree");
    m->nmissing = gwr_k_ints(k, "nodes_missing_value_tracks_true", &m->missing);
    if (m->nmissing >= 0 && m->nmissing != m->nnodes)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "nodes_missing_value_tracks_true has %lld entries for %lld nodes",
                          (long long)m->nmissing, (long long)m->nnodes);
    for (int64_t i = 0; i < m->ntrees; i++)
        if (m->roots[i] < 0 || m->roots[i] >= m->nnodes)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "tree root %lld is not a node", (long long)m->roots[i]);
    for (int64_t i = 0; i < m->nleaves; i++)
        if (m->target[i] < 0 || m->target[i] >= m->ntargets)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "leaf %lld's target %lld is out of range", (long long)i, (long long)m->target[i]);
    int64_t nmember = 0;
    for (int64_t i = 0; i < m->nnodes; i++) {
        int64_t mode = gwr_v_get_i64(m->modes, i);
        if (mode < TE_LEQ || mode > TE_MEMBER) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "node %lld has mode %lld", (long long)i, (long long)mode);
        nmember += mode == TE_MEMBER;
        if (m->feat[i] < 0 || m->feat[i] >= nfeat)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "node %lld reads feature %lld of %lld", (long long)i, (long long)m->feat[i], (long long)nfeat);
        if (m->tnode[i] < 0 || m->tnode[i] >= (m->tleaf[i] ? m->nleaves : m->nnodes) || m->fnode[i] < 0 ||
            m->fnode[i] >= (m->fleaf[i] ? m->nleaves : m->nnodes))
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "node %lld has a branch out of range", (long long)i);
    }
    if (nmember) {
        /* membership_values: one set per MEMBER node, in node order, each ended by NaN */
        if (!(m->members = te_tensor(k, "membership_values", 1))) return GWR_ERR_INVALID_ARG;
        if (!(m->mstart = gwr_calloc((size_t)m->nnodes, sizeof *m->mstart))) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
        int64_t pos = 0;
        for (int64_t i = 0; i < m->nnodes; i++) {
            if (gwr_v_get_i64(m->modes, i) != TE_MEMBER) continue;
            m->mstart[i] = pos;
            while (pos < m->members->numel && !isnan(gwr_v_get_f64(m->members, pos))) pos++;
            if (pos == m->members->numel)
                return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "membership_values has fewer NaN-ended sets than the %lld MEMBER nodes",
                                  (long long)nmember);
            pos++;
        }
    }
    return GWR_OK;
}

static int te_true(const te_model *m, int64_t node, double x) {
    if (isnan(x) && m->missing && m->missing[node]) return 1;
    double s = gwr_v_get_f64(m->splits, node);
    switch ((int)gwr_v_get_i64(m->modes, node)) {
    case TE_LEQ: return x <= s;
    case TE_LT: return x < s;
    case TE_GTE: return x >= s;
    case TE_GT: return x > s;
    case TE_EQ: return x == s;
    case TE_NEQ: return x != s;
    default:
        for (int64_t p = m->mstart[node]; !isnan(gwr_v_get_f64(m->members, p)); p++)
            if (gwr_v_get_f64(m->members, p) == x) return 1;
        return 0;
    }
}

static gwr_status k_tree_ensemble(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_need_float(k, 0, "X");
    if (!x) return GWR_ERR_INVALID_ARG;
    if (x->rank != 2) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "X must be [N, F], not of rank %d", x->rank);
    int64_t post = gwr_k_int(k, "post_transform", 0), agg = gwr_k_int(k, "aggregate_function", TE_SUM);
    if (post != 0) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "post_transform %lld (only 0, NONE, is implemented)", (long long)post);
    if (agg < TE_AVERAGE || agg > TE_MAX) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "aggregate_function %lld is not 0-3", (long long)agg);
    te_model m;
    int64_t n = x->dims[0], nf = x->dims[1];
    gwr_status st = te_load(k, &m, nf);
    int64_t od[2] = {n, m.ntargets};
    gwr_value *y = st ? NULL : gwr_k_out(k, 0, x->dtype, 2, od);
    double *acc = y ? gwr_ku_scratch(k, m.ntargets, sizeof *acc) : NULL;
    if (!st && !acc) st = GWR_ERR_NOMEM;
    /* MIN / MAX start from the dtype's largest / smallest finite value, as
     * the reference does (a target no tree reaches keeps it). */
    double big = x->dtype == GWR_FLOAT64 ? 1.7976931348623157e308 : x->dtype == GWR_FLOAT16 ? 65504.0
                 : x->dtype == GWR_BFLOAT16 ? 3.3895313892515355e38 : 3.4028234663852886e38;
    for (int64_t r = 0; !st && r < n; r++) {
        for (int64_t t = 0; t < m.ntargets; t++) acc[t] = agg == TE_MIN ? big : agg == TE_MAX ? -big : 0.0;
        for (int64_t tr = 0; !st && tr < m.ntrees; tr++) {
            int64_t node = m.roots[tr], steps = 0;
            for (;;) {
                if (++steps > m.nnodes) {
                    st = gwr_k_fail(k, GWR_ERR_INVALID_ARG, "tree %lld has a cycle", (long long)tr);
                    break;
                }
                int go = te_true(&m, node, gwr_v_get_f64(x, r * nf + m.feat[node]));
                int64_t next = go ? m.tnode[node] : m.fnode[node];
                if (go ? m.tleaf[node] : m.fleaf[node]) {
                    double w = gwr_v_get_f64(m.weights, next);
                    double *a = &acc[m.target[next]];
                    if (agg == TE_SUM) *a += w;
                    else if (agg == TE_AVERAGE) *a += w / (double)m.ntrees;
                    else if (agg == TE_MIN) *a = w < *a ? w : *a;
                    else *a = w > *a ? w : *a;
                    break;
                }
                node = next;
            }
        }
        for (int64_t t = 0; !st && t < m.ntargets; t++) gwr_v_set_f64(y, r * m.ntargets + t, acc[t]);
    }
    gwr_free(acc);
    te_free(&m);
    return st;
}

const gwr_kernel_entry gwr_kernels_ml[] = {
    GWR_KERNEL(ML_Binarizer, k_binarizer),
    GWR_KERNEL(ML_ArrayFeatureExtractor, k_array_feature_extractor),
    GWR_KERNEL(ML_LabelEncoder, k_label_encoder),
    GWR_KERNEL_CUSTOM("ai.onnx.ml", "TreeEnsemble", k_tree_ensemble, .first_opset = 5),
    {0},
};
