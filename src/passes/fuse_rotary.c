/* fuse_rotary.c - the exporters' rotary position embedding as one layer.
 *
 * fuse_rotary (phase fuse), at the Add of Hugging Face's apply_rotary_pos_emb (rotate-half):
 *
 *   y = x * C + Concat(Neg(x2), x1, axis -1) * S     (either operand order of the Add and Muls)
 *   x1, x2 = the two halves of x's last axis          (Split into two equal parts, or two Slices
 *                                                      with constant bounds [0, D/2) and [D/2, D))
 *   C = Unsqueeze(c, axes [1]),  c = [Cast(] [Mul(] Cos(Concat(F, F, axis -1)) [, k)] [)]
 *   S = the same over Sin, from the same F (and k, and Cast)
 *
 * with x (B, N, S, D) and F (B, S, D/2) (the position ids times inv_freq, as the exporter computes
 * them in the graph), becomes ONNX RotaryEmbedding(x, cos_half, sin_half; interleaved 0) (opset
 * 23 semantics, no position_ids: the caches are per batch row and position), cos_half =
 * [Cast(] [Mul(] Cos(F) [, k)] [)], the model's own computation before its Concat, built once
 * per F and shared by every layer (found by name). For target onnx only at opset >= 23; targets
 * ort and gwr at any opset, as fuse_attention does (gwr's executor runs it at every opset).
 *
 * lower_rotary (phase kernel, after the attention lowering has had its chance; target ort below
 * opset 23: onnxruntime has no RotaryEmbedding before 23 in the ONNX domain) makes com.microsoft
 * RotaryEmbedding(x, position_ids, cos_cache, sin_cache): the (B, S, D/2) caches reshaped to
 * (B * S, D/2) rows and position_ids = Range(0, B * S) as (B, S), row b * S + s for token (b, s),
 * built once per cache and shared; the cached form's (max, D/2) tables and position_ids as they
 * are; a partial rotation with num_heads.
 *
 * The cached form (older exports): C = Unsqueeze([Cast(] Gather(T, position_ids) [)], axes [1]) with T
 * a constant table (max, D) whose halves are equal -> RotaryEmbedding(x, T_cos[:, :D/2],
 * T_sin[:, :D/2], position_ids).
 *
 * Partial rotary (GPT-NeoX, Phi): Concat(RotaryEmbedding(x[..., :R], ...), x[..., R:], axis -1) ->
 * RotaryEmbedding(x, ...; rotary_embedding_dim R).
 *
 * The interleaved form (GPT-J's rotate_every_two, as torch exports it):
 *
 *   y = x * Rep(c) + Reshape(Concat(Unsqueeze(Neg(x[..., 1::2]), -1), Unsqueeze(x[..., 0::2], -1), axis -1)) * Rep(s)
 *   Rep(c) = Reshape(Tile(Unsqueeze(c, [a, 4]), [1, 1, 1, 1, 2]))   (repeat_interleave; the Reshapes merge
 *            the last two axes: a constant (0 | d, 0 | d, 0 | d, -1) or Concat(Slice(Shape(.), 0, 3 | -2), [-1]))
 *
 * c, s (B, S, R/2) whatever computes them (GPT-J gathers them from a sin|cos table by position_ids)
 * -> RotaryEmbedding(x, c, s; interleaved 1): a = 1, x (B, N, S, R) as it is; a = 2, x (B, S, N, R)
 * (GPT-J rotates before its head Transpose) as Reshape(RotaryEmbedding(Reshape(x, (0, 0, N * R));
 * num_heads N), (0, 0, N, R)), whose partial Concat becomes rotary_embedding_dim over the whole
 * head the same way. The layers left dead are dropped at once (drop_dead) so that the partial
 * rule sees single readers.
 *
 * Not a rule file: the halves are checked against D (Slice bounds or Split sizes), the trig
 * chain is walked through optional layers and rebuilt on F, and the caches are shared by name.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gwr/match.h"
#include "gwr/passes.h"
#include "passes/pass_util.h"
#include "util/util.h"

#define MS "com.microsoft"

/* t's producer when it is a live default-domain `op` with one output. */
static gwr_layer *prod(const gwr_tensor *t, const char *op) {
    gwr_layer *p = t ? gwr_tensor_parent(t) : NULL;
    return gwr_match_is_op(p, op) && gwr_layer_num_outputs(p) == 1 ? p : NULL;
}

/* Is the axis attribute (default def) of l the last of rank r? */
static int last_axis_attr(const gwr_layer *l, int64_t def, int r) {
    int64_t a = def;
    return !gwr_layer_attr_int(l, "axis", def, &a) && (a == -1 || a == r - 1);
}

/* The one axis of Unsqueeze u (attribute or constant input), or -100. */
static int64_t unsqueeze_axis(const gwr_layer *u) {
    int64_t ax[2];
    const int64_t *pa;
    int64_t n = 0;
    if (gwr_layer_num_inputs(u) > 1) return gwr_match_const_ints(gwr_layer_input(u, 1), ax, 2) == 1 ? ax[0] : -100;
    return !gwr_layer_attr_ints(u, "axes", &pa, &n) && n == 1 ? pa[0] : -100;
}

/* The trig chain: t = Unsqueeze([Cast(][Mul(] trig(Concat(F, F)) [, k)][)], axis 1), or
 * Unsqueeze([Cast(] Gather(T, position_ids, axis 0) [)], axis 1) with T a constant table
 * (max_position, D) whose two halves are equal (the cached form). */
typedef struct trig {
    gwr_tensor *table, *pos; /* the cached form: T, position_ids (else NULL) */
    gwr_tensor *f, *k;  /* F (B, S, D/2); the scale constant or NULL */
    gwr_layer *cast;    /* the Cast or NULL */
    gwr_layer *mul;     /* the Mul by k or NULL */
    gwr_layer *fn;      /* the Cos or Sin */
    gwr_tensor *out;    /* the chain's (B, S, D) result (before the Unsqueeze) */
} trig;

static int trig_chain(gwr_tensor *t, const char *fn, trig *tr) {
    memset(tr, 0, sizeof *tr);
    gwr_layer *u = prod(t, "Unsqueeze");
    if (!u || unsqueeze_axis(u) != 1) return 0;
    gwr_tensor *v = tr->out = gwr_layer_input(u, 0);
    if ((tr->cast = prod(v, "Cast"))) v = gwr_layer_input(tr->cast, 0);
    gwr_layer *g = prod(v, "Gather");
    if (g) { /* the cached form */
        int64_t ax = 0;
        gwr_match_const k;
        tr->table = gwr_layer_input(g, 0), tr->pos = gwr_layer_input(g, 1);
        return !gwr_layer_attr_int(g, "axis", 0, &ax) && ax == 0 && gwr_match_const_get(tr->table, &k) && k.rank == 2 &&
               k.dims[1] >= 2 && k.dims[1] % 2 == 0 && gwr_tensor_rank(tr->pos) == 2 &&
               (gwr_tensor_dtype(tr->pos) == GWR_INT64 || gwr_tensor_dtype(tr->pos) == GWR_INT32);
    }
    if ((tr->mul = prod(v, "Mul"))) {
        for (int i = 0; i < 2 && !tr->k; i++) {
            double k;
            gwr_tensor *a = gwr_layer_input(tr->mul, i), *b = gwr_layer_input(tr->mul, 1 - i);
            if (gwr_match_const_scalar(b, &k) && gwr_tensor_rank(b) <= 3 && prod(a, fn)) tr->k = b, v = a;
        }
        if (!tr->k) return 0;
    }
    if (!(tr->fn = prod(v, fn))) return 0;
    gwr_layer *cat = prod(gwr_layer_input(tr->fn, 0), "Concat");
    if (!cat || gwr_layer_num_inputs(cat) != 2 || gwr_layer_input(cat, 0) != gwr_layer_input(cat, 1)) return 0;
    tr->f = gwr_layer_input(cat, 0);
    return gwr_tensor_rank(tr->f) == 3 && last_axis_attr(cat, 0, 3);
}

/* x1 and x2 are the first len and the remaining elements of one x's last
 * axis (D known; len = D/2 when *len is -1 on entry, D even; any 0 < len <
 * D otherwise, set in *len): outputs 0 and 1 of a two-way Split, or two
 * Slices with constant bounds. x in *x, the layers in dead[] (*n). */
static int parts(gwr_tensor *x1, gwr_tensor *x2, int64_t *len, gwr_tensor **x, gwr_layer **dead, int *n) {
    gwr_layer *p1 = x1 ? gwr_tensor_parent(x1) : NULL, *p2 = x2 ? gwr_tensor_parent(x2) : NULL;
    if (!p1 || !p2) return 0;
    gwr_tensor *src = gwr_layer_input(p1, 0);
    int r = gwr_tensor_rank(src), half = *len < 0;
    gwr_dim d = r > 0 ? gwr_tensor_dim(src, r - 1) : GWR_DIM_UNKNOWN;
    if (r < 1 || !GWR_DIM_IS_KNOWN(d) || d < 2 || (half && d % 2)) return 0;
    int64_t l1 = half ? d / 2 : -1;
    if (p1 == p2 && gwr_match_is_op(p1, "Split")) {
        int64_t sz[3];
        const int64_t *ps;
        int64_t ns = 0;
        if (gwr_layer_num_outputs(p1) != 2 || gwr_tensor_parent_output_index(x1) != 0 || gwr_tensor_parent_output_index(x2) != 1 ||
            !last_axis_attr(p1, 0, r))
            return 0;
        if (gwr_layer_num_inputs(p1) > 1 && gwr_layer_input(p1, 1)) {
            if (gwr_match_const_ints(gwr_layer_input(p1, 1), sz, 3) != 2) return 0;
        } else if (gwr_layer_find_attr(p1, "split") >= 0) {
            if (gwr_layer_attr_ints(p1, "split", &ps, &ns) || ns != 2) return 0;
            sz[0] = ps[0], sz[1] = ps[1];
        } else if (d % 2) {
            return 0;
        } else {
            sz[0] = sz[1] = d / 2; /* equal parts */
        }
        if (sz[0] + sz[1] != d || sz[0] <= 0 || sz[1] <= 0 || (half && sz[0] != l1)) return 0;
        *x = src, *len = sz[0], dead[(*n)++] = p1;
        return 1;
    }
    if (!gwr_match_is_op(p1, "Slice") || !gwr_match_is_op(p2, "Slice") || gwr_layer_input(p2, 0) != src) return 0;
    for (int k = 0; k < 2; k++) {
        gwr_layer *s = k ? p2 : p1;
        int64_t st, en, ax, step = 1;
        int ni = gwr_layer_num_inputs(s);
        if (ni < 4 || gwr_match_const_ints(gwr_layer_input(s, 1), &st, 1) != 1 ||
            gwr_match_const_ints(gwr_layer_input(s, 2), &en, 1) != 1 || gwr_match_const_ints(gwr_layer_input(s, 3), &ax, 1) != 1 ||
            (ni > 4 && gwr_layer_input(s, 4) && gwr_match_const_ints(gwr_layer_input(s, 4), &step, 1) != 1))
            return 0;
        if ((ax != -1 && ax != r - 1) || step != 1) return 0;
        if (k == 0 && !(st == 0 && en > 0 && en < d && (!half || en == l1))) return 0;
        if (k == 0) l1 = en;
        if (k == 1 && !(st == l1 && en >= d)) return 0;
    }
    *x = src, *len = l1, dead[(*n)++] = p1, dead[(*n)++] = p2;
    return 1;
}

/* The same dim, or both symbolic (the exporter's names for B and S may
 * differ between position_ids and input_ids). */
static int dim_fits(gwr_dim a, gwr_dim b) {
    return a == b || (!GWR_DIM_IS_KNOWN(a) && !GWR_DIM_IS_KNOWN(b) && a != GWR_DIM_UNKNOWN && b != GWR_DIM_UNKNOWN);
}

/* x (B, N, S, D) is the result's shape (y's dims where known) and F's
 * (B, S, D/2) fits it (an unknown dim of F's, as an exporter's Expand to a
 * computed shape leaves its batch, fits). */
static int fits_x(const gwr_tensor *x, const gwr_tensor *y, const gwr_tensor *f, gwr_dim d) {
    if (gwr_tensor_dtype(x) != gwr_tensor_dtype(y) || gwr_tensor_rank(y) != 4 || !gwr_match_dtype_real_float(gwr_tensor_dtype(x)))
        return 0;
    for (int i = 0; i < 4; i++)
        if (gwr_tensor_dim(y, i) != GWR_DIM_UNKNOWN && !dim_fits(gwr_tensor_dim(y, i), gwr_tensor_dim(x, i))) return 0;
    gwr_dim fb = gwr_tensor_dim(f, 0), fs = gwr_tensor_dim(f, 1);
    return gwr_tensor_dim(f, 2) == d / 2 && (fb == GWR_DIM_UNKNOWN || dim_fits(fb, gwr_tensor_dim(x, 0))) &&
           (fs == GWR_DIM_UNKNOWN || dim_fits(fs, gwr_tensor_dim(x, 2)));
}

/* The live tensor an earlier rewrite built and named `name`, or NULL. */
static gwr_tensor *shared(gwr_network *net, const char *name) {
    gwr_tensor *t = gwr_network_find_tensor(net, name);
    gwr_layer *p = t ? gwr_tensor_parent(t) : NULL;
    return p && !gwr_layer_is_removed(p) ? t : NULL;
}

/* Names t `name` for the next rewrite to share, unless the name is taken
 * (it is then not shared); t. */
static gwr_tensor *named(gwr_network *net, gwr_tensor *t, const char *name) {
    if (t && !gwr_network_find_tensor(net, name)) gwr_tensor_set_name(t, name);
    return t;
}

/* cos_half (or sin_half) for chain tr: [Cast(][Mul(] fn(F) [, k)][)], one
 * per chain output, found by its name when an earlier rewrite built it. */
static gwr_tensor *half_cache(gwr_network *net, const trig *tr, const char *fn) {
    char name[512];
    snprintf(name, sizeof name, "%s/rotary_half", gwr_tensor_name(tr->out));
    gwr_tensor *t = shared(net, name);
    if (t) return t;
    t = !strcmp(fn, "Cos") ? gwr_cos(net, tr->f) : gwr_sin(net, tr->f);
    if (t && tr->k) t = gwr_mul(net, t, tr->k);
    if (t && tr->cast) {
        int64_t to = 0;
        t = gwr_layer_attr_int(tr->cast, "to", 0, &to) ? NULL : gwr_cast(net, t, (gwr_dtype)to);
    }
    return named(net, t, name);
}

/* The cached form's table T (max, D) as doubles, *err on a failure to
 * allocate; NULL (no error) unless its two halves are equal (bit for bit). */
static double *table_values(const gwr_tensor *table, gwr_match_const *k, int *err) {
    if (!gwr_match_const_get(table, k) || k->rank != 2 || k->numel > ((int64_t)1 << 26)) return NULL;
    int64_t rows = k->dims[0], d = k->dims[1], h = d / 2;
    double *v = gwr_calloc((size_t)k->numel, sizeof *v);
    int same = v && !gwr_match_const_f64(table, v, k->numel, NULL, NULL, NULL);
    for (int64_t r = 0; same && r < rows; r++)
        for (int64_t j = 0; same && j < h; j++) same = v[r * d + j] == v[r * d + h + j];
    if (!v) *err = 1;
    if (!same) gwr_free(v), v = NULL;
    return v;
}

/* The first half of the cached form's table T (max, D) as a constant (max,
 * D/2) of dtype dt from its values v (table_values); one per table and
 * dtype (by name). */
static gwr_tensor *half_table(gwr_network *net, const gwr_tensor *table, const gwr_match_const *k, double *v, gwr_dtype dt) {
    char name[512];
    snprintf(name, sizeof name, "%s/rotary_half_%d", gwr_tensor_name(table), (int)dt);
    gwr_tensor *t = shared(net, name);
    if (t) return t;
    int64_t rows = k->dims[0], d = k->dims[1], h = d / 2, dims[2] = {rows, h};
    for (int64_t r = 0; r < rows; r++) memmove(v + r * h, v + r * d, (size_t)h * sizeof *v);
    return named(net, gwr_ps_const_new(net, dt, 2, dims, v, 0), name);
}

/* t (B, S, H) as (B * S, H) rows, and *pos = Range(0, B * S) as (B, S);
 * both built once per t (by name). */
static gwr_tensor *rows_of(gwr_network *net, gwr_tensor *t, gwr_tensor **pos, int want_pos) {
    char name[512], pname[512];
    snprintf(name, sizeof name, "%s/rows", gwr_tensor_name(t));
    snprintf(pname, sizeof pname, "%s/row_ids", gwr_tensor_name(t));
    gwr_tensor *r = shared(net, name);
    if (!r) {
        int64_t shp[2] = {-1, gwr_tensor_dim(t, 2)};
        if (!(r = named(net, gwr_reshape(net, t, 2, shp), name))) return NULL;
    }
    if (!want_pos) return r;
    if ((*pos = shared(net, pname))) return r;
    static const int64_t zero = 0, one = 1, two = 2;
    gwr_tensor *shape = gwr_shape_of(net, r), *n = NULL, *rg = NULL;
    gwr_tensor *gi[2] = {shape, gwr_ps_const_new(net, GWR_INT64, 0, NULL, NULL, 0)};
    gwr_args *a = gwr_args_new();
    if (gi[1] && a && !gwr_args_set_int(a, "axis", 0)) gwr_op_call(net, "", "Gather", 2, gi, a, 1, &n);
    gwr_args_free(a);
    gwr_tensor *ri[3] = {gwr_ps_const_new(net, GWR_INT64, 0, NULL, NULL, 0), n, gwr_ps_const_new(net, GWR_INT64, 0, NULL, NULL, 1)};
    if (n && ri[0] && ri[2]) gwr_op_call(net, "", "Range", 3, ri, NULL, 1, &rg);
    gwr_tensor *bs = gwr_slice(net, gwr_shape_of(net, t), 1, &zero, &two, &zero, &one), *p = NULL;
    gwr_tensor *pi[2] = {rg, bs};
    if (rg && bs) gwr_op_call(net, "", "Reshape", 2, pi, NULL, 1, &p);
    if (!(*pos = named(net, p, pname))) return NULL;
    return r;
}

/* The cached form: x (B, N, S, D) is the result's shape, position_ids (B, S) fits it, the table's D. */
static int fits_pos(const gwr_tensor *x, const gwr_tensor *y, const gwr_tensor *pos, const gwr_tensor *table, gwr_dim d) {
    if (gwr_tensor_dtype(x) != gwr_tensor_dtype(y) || gwr_tensor_rank(y) != 4 || !gwr_match_dtype_real_float(gwr_tensor_dtype(x)) ||
        gwr_tensor_dim(table, 1) != d)
        return 0;
    for (int i = 0; i < 4; i++)
        if (gwr_tensor_dim(y, i) != GWR_DIM_UNKNOWN && !dim_fits(gwr_tensor_dim(y, i), gwr_tensor_dim(x, i))) return 0;
    return dim_fits(gwr_tensor_dim(pos, 0), gwr_tensor_dim(x, 0)) && dim_fits(gwr_tensor_dim(pos, 1), gwr_tensor_dim(x, 2));
}

/* The root's readers read out; the rotation's layers go. */
static int replace_rotation(gwr_rewrite_ctx *c, gwr_layer *l, gwr_tensor *out, gwr_layer *ma, gwr_layer *mb, gwr_layer *cat,
                            gwr_layer *neg, gwr_layer *const *dead, int nd) {
    if (!out) return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "fuse_rotary: %s", gwr_network_errmsg(gwr_rewrite_ctx_network(c)));
    gwr_status st = gwr_match_replace_layer(l, 1, &out);
    gwr_layer *more[4] = {ma, mb, cat, neg};
    for (int k = 0; !st && k < 4; k++) st = gwr_layer_mark_as_removed(more[k]);
    for (int k = 0; !st && k < nd; k++) st = gwr_layer_mark_as_removed(dead[k]);
    return st ? gwr_rewrite_fail(c, st, "%s", gwr_last_errmsg()) : 1;
}

/* ---- the interleaved form (GPT-J's rotate_every_two) ---------------------------------- */

/* Does nothing live read l's outputs (readers only dead themselves: an exporter's shape
 * subgraph whose Reshape an earlier rewrite replaced stays until the prune)? */
static int is_dead(const gwr_layer *l, int depth) {
    if (gwr_layer_is_removed(l)) return 1;
    if (depth > 8) return 0;
    for (int o = 0; o < gwr_layer_num_outputs(l); o++) {
        gwr_tensor *u = gwr_layer_output(l, o);
        if (gwr_tensor_output_index(u) >= 0) return 0;
        for (int64_t k = 0; k < gwr_tensor_num_users(u); k++)
            if (!is_dead(gwr_tensor_user(u, k, NULL), depth + 1)) return 0;
    }
    return 1;
}

/* Marks l (dead: is_dead) removed, its readers first. */
static gwr_status remove_dead(gwr_layer *l) {
    gwr_status st = GWR_OK;
    for (int o = 0; !st && o < gwr_layer_num_outputs(l); o++) {
        gwr_tensor *u = gwr_layer_output(l, o);
        for (int64_t k = 0; !st && k < gwr_tensor_num_users(u); k++)
            if (!gwr_layer_is_removed(gwr_tensor_user(u, k, NULL))) st = remove_dead(gwr_tensor_user(u, k, NULL));
    }
    return st || gwr_layer_is_removed(l) ? st : gwr_layer_mark_as_removed(l);
}

/* Marks l removed and then every producer of its inputs that nothing live reads any more, so
 * that a later match sees the single readers the rewrite left. */
static gwr_status drop_dead(gwr_layer *l, int depth) {
    gwr_status st = remove_dead(l);
    for (int i = 0; !st && depth < 64 && i < gwr_layer_num_inputs(l); i++) {
        gwr_tensor *t = gwr_layer_input(l, i);
        gwr_layer *p = t ? gwr_tensor_parent(t) : NULL;
        if (p && !gwr_layer_is_removed(p) && is_dead(p, 0)) st = drop_dead(p, depth + 1);
    }
    return st;
}

/* t = Slice(x, start, end >= D, last axis, step 2), x's last dim D known: x, else NULL. */
static gwr_tensor *every_two(gwr_tensor *t, int64_t start) {
    gwr_layer *s = prod(t, "Slice");
    if (!s || gwr_layer_num_inputs(s) < 5) return NULL;
    gwr_tensor *x = gwr_layer_input(s, 0);
    int r = gwr_tensor_rank(x);
    gwr_dim d = r > 0 ? gwr_tensor_dim(x, r - 1) : GWR_DIM_UNKNOWN;
    int64_t st, en, ax, step;
    if (!GWR_DIM_IS_KNOWN(d) || gwr_match_const_ints(gwr_layer_input(s, 1), &st, 1) != 1 ||
        gwr_match_const_ints(gwr_layer_input(s, 2), &en, 1) != 1 || gwr_match_const_ints(gwr_layer_input(s, 3), &ax, 1) != 1 ||
        gwr_match_const_ints(gwr_layer_input(s, 4), &step, 1) != 1)
        return NULL;
    return st == start && en >= d && (ax == -1 || ax == r - 1) && step == 2 ? x : NULL;
}

/* t = Unsqueeze(a, the new last axis): a, else NULL. */
static gwr_tensor *unsqueeze_last(gwr_tensor *t) {
    gwr_layer *u = prod(t, "Unsqueeze");
    int64_t ax = u ? unsqueeze_axis(u) : -100;
    gwr_tensor *a = u ? gwr_layer_input(u, 0) : NULL;
    return a && (ax == -1 || (gwr_tensor_rank(a) >= 0 && ax == gwr_tensor_rank(a))) ? a : NULL;
}

/* The 4-D t's dims fit x's (known ones equal, symbolic ones of the same name; t's first three
 * may be unknown when `loose`, an exporter's Reshape to a computed shape leaving them so); the
 * last is x's known D. */
static int dims_fit(const gwr_tensor *t, const gwr_tensor *x, int loose) {
    if (gwr_tensor_rank(t) != 4 || gwr_tensor_rank(x) != 4 || !GWR_DIM_IS_KNOWN(gwr_tensor_dim(x, 3)) ||
        gwr_tensor_dim(t, 3) != gwr_tensor_dim(x, 3))
        return 0;
    for (int i = 0; i < 3; i++)
        if (!(loose && gwr_tensor_dim(t, i) == GWR_DIM_UNKNOWN) && !dim_fits(gwr_tensor_dim(t, i), gwr_tensor_dim(x, i))) return 0;
    return 1;
}

/* rs = Reshape(a, shape) with a rank 5 merges a's last two axes: shape the constant
 * (d0, d1, d2, -1) with each di 0 or a's known dim i (allowzero 0), or the exporter's
 * Concat(Slice(Shape(a), 0, 3 or -2), [-1]). */
static int merges_last(const gwr_layer *rs) {
    gwr_tensor *a = gwr_layer_input(rs, 0), *shape = gwr_layer_input(rs, 1);
    int64_t v[5], az = 0;
    if (gwr_tensor_rank(a) != 5 || gwr_layer_attr_int(rs, "allowzero", 0, &az) || az) return 0;
    if (gwr_match_const_ints(shape, v, 5) == 4) {
        for (int i = 0; i < 3; i++)
            if (v[i] != 0 && !(GWR_DIM_IS_KNOWN(gwr_tensor_dim(a, i)) && v[i] == gwr_tensor_dim(a, i))) return 0;
        return v[3] == -1 || (GWR_DIM_IS_KNOWN(gwr_tensor_dim(a, 3)) && GWR_DIM_IS_KNOWN(gwr_tensor_dim(a, 4)) &&
                              v[3] == gwr_tensor_dim(a, 3) * gwr_tensor_dim(a, 4));
    }
    gwr_layer *cat = prod(shape, "Concat"), *sl = cat && gwr_layer_num_inputs(cat) == 2 ? prod(gwr_layer_input(cat, 0), "Slice") : NULL;
    gwr_layer *sh = sl && gwr_layer_num_inputs(sl) >= 3 ? prod(gwr_layer_input(sl, 0), "Shape") : NULL;
    int64_t st = -1, en = 0, ax = 0, step = 1, m1 = 0;
    int ni = sl ? gwr_layer_num_inputs(sl) : 0;
    if (!sh || gwr_layer_input(sh, 0) != a || gwr_layer_num_inputs(sh) != 1 || gwr_layer_find_attr(sh, "start") >= 0 ||
        gwr_layer_find_attr(sh, "end") >= 0 || gwr_match_const_ints(gwr_layer_input(cat, 1), &m1, 1) != 1 || m1 != -1 ||
        gwr_match_const_ints(gwr_layer_input(sl, 1), &st, 1) != 1 || gwr_match_const_ints(gwr_layer_input(sl, 2), &en, 1) != 1 ||
        (ni > 3 && gwr_layer_input(sl, 3) && gwr_match_const_ints(gwr_layer_input(sl, 3), &ax, 1) != 1) ||
        (ni > 4 && gwr_layer_input(sl, 4) && gwr_match_const_ints(gwr_layer_input(sl, 4), &step, 1) != 1))
        return 0;
    return st == 0 && (en == 3 || en == -2) && ax == 0 && step == 1;
}

/* The axes of Unsqueeze u (attribute or constant input), sorted, in ax[] (at most 2); how many, or 0. */
static int unsqueeze_axes(const gwr_layer *u, int64_t ax[2]) {
    const int64_t *pa;
    int64_t n = 0, v[3];
    if (gwr_layer_num_inputs(u) > 1) {
        n = gwr_match_const_ints(gwr_layer_input(u, 1), v, 3);
    } else if (!gwr_layer_attr_ints(u, "axes", &pa, &n) && n >= 1 && n <= 2) {
        for (int i = 0; i < n; i++) v[i] = pa[i];
    } else {
        n = 0;
    }
    if (n < 1 || n > 2) return 0;
    int r = gwr_tensor_rank(gwr_layer_output(u, 0));
    for (int i = 0; i < n; i++) ax[i] = v[i] < 0 && r > 0 ? v[i] + r : v[i];
    if (n == 2 && ax[0] > ax[1]) v[0] = ax[0], ax[0] = ax[1], ax[1] = v[0];
    return (int)n;
}

/* rot = Reshape(Concat(Unsqueeze(Neg(x[..., 1::2]), -1), Unsqueeze(x[..., 0::2], -1), axis -1), x's shape): x, else NULL. */
static gwr_tensor *rotate_every_two(gwr_tensor *rot) {
    gwr_layer *rs = prod(rot, "Reshape"), *cat = rs ? prod(gwr_layer_input(rs, 0), "Concat") : NULL, *neg;
    if (!cat || gwr_layer_num_inputs(cat) != 2 || !last_axis_attr(cat, 0, 5) || !merges_last(rs)) return NULL;
    gwr_tensor *no = unsqueeze_last(gwr_layer_input(cat, 0)), *xe = unsqueeze_last(gwr_layer_input(cat, 1));
    if (!no || !xe || !(neg = prod(no, "Neg"))) return NULL;
    gwr_tensor *x = every_two(xe, 0);
    /* (B, S, N, D / 2, 2) merged back: x's shape for an even D */
    if (!x || every_two(gwr_layer_input(neg, 0), 1) != x || gwr_tensor_rank(x) != 4 || gwr_tensor_dim(x, 3) % 2) return NULL;
    return x;
}

/* t = Reshape(Tile(Unsqueeze(c, [axis, 4]), [1, 1, 1, 1, 2]), merging the last two axes) (the
 * Unsqueeze possibly two), Torch's repeat_interleave(c[:, :, None, :], 2, 3) (axis 2: x (B, S,
 * N, R)) or of c[:, None] (axis 1: x (B, N, S, R)), c (B, S, R/2): c and *axis, else NULL. */
static gwr_tensor *repeat_two(gwr_tensor *t, const gwr_tensor *x, int64_t *axis) {
    gwr_layer *rs = prod(t, "Reshape"), *tile = rs ? prod(gwr_layer_input(rs, 0), "Tile") : NULL;
    int64_t reps[6], ax[2];
    if (!tile || !merges_last(rs) || gwr_match_const_ints(gwr_layer_input(tile, 1), reps, 6) != 5 || reps[0] != 1 || reps[1] != 1 ||
        reps[2] != 1 || reps[3] != 1 || reps[4] != 2)
        return NULL;
    gwr_layer *u = prod(gwr_layer_input(tile, 0), "Unsqueeze"), *u2;
    int n = u ? unsqueeze_axes(u, ax) : 0;
    if (n == 1 && ax[0] == 4 && (u2 = prod(gwr_layer_input(u, 0), "Unsqueeze")) && unsqueeze_axes(u2, ax) == 1) ax[1] = 4, u = u2;
    else if (n != 2 || ax[1] != 4) return NULL;
    gwr_tensor *c = gwr_layer_input(u, 0);
    if (gwr_tensor_rank(c) != 3 || (ax[0] != 1 && ax[0] != 2) || gwr_tensor_rank(t) != 4 || gwr_tensor_rank(x) != 4 ||
        !GWR_DIM_IS_KNOWN(gwr_tensor_dim(c, 2)) || gwr_tensor_dim(c, 2) * 2 != gwr_tensor_dim(x, 3))
        return NULL;
    /* c's (B, S) are x's dims 0 and 3 - axis where known */
    gwr_dim cb = gwr_tensor_dim(c, 0), cs = gwr_tensor_dim(c, 1);
    if ((cb != GWR_DIM_UNKNOWN && !dim_fits(cb, gwr_tensor_dim(x, 0))) || (cs != GWR_DIM_UNKNOWN && !dim_fits(cs, gwr_tensor_dim(x, 3 - ax[0]))))
        return NULL;
    *axis = ax[0];
    return c;
}

/* y = x * repeat_two(c) + rotate_every_two(x) * repeat_two(s) -> RotaryEmbedding(x, c, s; interleaved 1); x (B, S, N, D)
 * through Reshape to (B, S, N * D) and num_heads N (ONNX RotaryEmbedding's 4-D input is (B, N, S, D)). */
static int interleaved(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    gwr_tensor *y = gwr_layer_output(l, 0);
    for (int side = 0; side < 2; side++) {
        gwr_tensor *ta = gwr_layer_input(l, side), *tb = gwr_layer_input(l, 1 - side);
        gwr_layer *ma = prod(ta, "Mul"), *mb = prod(tb, "Mul");
        if (!ma || !mb || gwr_match_sole_reader(ta) != l || gwr_match_sole_reader(tb) != l) continue;
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) {
                gwr_tensor *x = gwr_layer_input(ma, i), *rot = gwr_layer_input(mb, j), *cs, *sn, *out = NULL;
                int64_t axc = 0, axs = 0;
                if (gwr_match_sole_reader(rot) != mb || rotate_every_two(rot) != x || !(cs = repeat_two(gwr_layer_input(ma, 1 - i), x, &axc)) ||
                    !(sn = repeat_two(gwr_layer_input(mb, 1 - j), x, &axs)) || axc != axs)
                    continue;
                if (gwr_tensor_dtype(x) != gwr_tensor_dtype(y) || !gwr_match_dtype_real_float(gwr_tensor_dtype(x)) ||
                    gwr_tensor_dtype(cs) != gwr_tensor_dtype(x) || gwr_tensor_dtype(sn) != gwr_tensor_dtype(x) || !dims_fit(y, x, 1) ||
                    (axc == 2 && !GWR_DIM_IS_KNOWN(gwr_tensor_dim(x, 2))))
                    return gwr_rewrite_no_match(c, "x is not (B, N, S, D) or (B, S, N, D) with N known, of the caches' and result's type");
                int64_t nh = gwr_tensor_dim(x, 2), d = gwr_tensor_dim(x, 3), flat[3] = {0, 0, nh * d}, back[4] = {0, 0, nh, d};
                gwr_tensor *in[3] = {axc == 2 ? gwr_reshape(net, x, 3, flat) : x, cs, sn};
                gwr_args *a = in[0] ? gwr_args_new() : NULL;
                if (a && !gwr_args_set_int(a, "interleaved", 1) && (axc == 1 || !gwr_args_set_int(a, "num_heads", nh)))
                    gwr_op_call(net, "", "RotaryEmbedding", 3, in, a, 1, &out);
                gwr_args_free(a);
                if (out && axc == 2) out = gwr_reshape(net, out, 4, back);
                if (!out) return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "fuse_rotary: %s", gwr_network_errmsg(net));
                gwr_status st = gwr_match_replace_layer(l, 1, &out);
                if (!st) st = drop_dead(ma, 0);
                if (!st) st = drop_dead(mb, 0);
                return st ? gwr_rewrite_fail(c, st, "%s", gwr_last_errmsg()) : 1;
            }
    }
    return gwr_rewrite_no_match(c, "not x * repeat_interleave(cos) + stack(-x[..., 1::2], x[..., 0::2]).flatten(-2) * repeat_interleave(sin)");
}

static int rotate_half(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    int64_t opset = gwr_network_opset(net, "");
    if (opset >= 0 && opset < 23 && !gwr_ps_target_contrib(c))
        return gwr_rewrite_no_match(c, "ONNX RotaryEmbedding needs opset 23 (target onnx)");
    if (*gwr_layer_domain(l) || gwr_layer_num_inputs(l) != 2) return gwr_rewrite_no_match(c, "not an ONNX Add");
    gwr_tensor *y = gwr_layer_output(l, 0);
    for (int side = 0; side < 2; side++) {
        gwr_tensor *ta = gwr_layer_input(l, side), *tb = gwr_layer_input(l, 1 - side);
        gwr_layer *ma = prod(ta, "Mul"), *mb = prod(tb, "Mul");
        if (!ma || !mb || gwr_match_sole_reader(ta) != l || gwr_match_sole_reader(tb) != l) continue;
        for (int i = 0; i < 2; i++) {
            for (int j = 0; j < 2; j++) {
                trig tc, ts;
                gwr_tensor *x = gwr_layer_input(ma, i), *rot = gwr_layer_input(mb, j);
                if (!trig_chain(gwr_layer_input(ma, 1 - i), "Cos", &tc) || !trig_chain(gwr_layer_input(mb, 1 - j), "Sin", &ts))
                    continue;
                if (tc.f != ts.f || tc.pos != ts.pos || !tc.table != !ts.table || !tc.cast != !ts.cast) continue;
                gwr_layer *cat = prod(rot, "Concat"), *neg, *dead[8];
                int nd = 0;
                gwr_tensor *xs = NULL;
                int r = gwr_tensor_rank(x);
                if (!cat || gwr_layer_num_inputs(cat) != 2 || gwr_match_sole_reader(rot) != mb || !last_axis_attr(cat, 0, r)) continue;
                gwr_tensor *nx2 = gwr_layer_input(cat, 0), *x1 = gwr_layer_input(cat, 1);
                if (!(neg = prod(nx2, "Neg")) || gwr_match_sole_reader(nx2) != cat) continue;
                gwr_tensor *x2 = gwr_layer_input(neg, 0);
                int64_t hl = -1;
                if (!parts(x1, x2, &hl, &xs, dead, &nd) || xs != x) continue;
                if (gwr_match_sole_reader(x1) != cat || gwr_match_sole_reader(x2) != neg) continue;
                gwr_dim d = gwr_tensor_dim(x, 3);
                if (tc.table) {
                    int err = 0;
                    if (r != 4 || !fits_pos(x, y, tc.pos, tc.table, d))
                        return gwr_rewrite_no_match(c, "x is not (B, N, S, D) with position_ids (B, S) and tables (max, D)");
                    gwr_match_const kc, ks;
                    double *vc = table_values(tc.table, &kc, &err), *vs = vc ? table_values(ts.table, &ks, &err) : NULL;
                    gwr_tensor *tin[4] = {x, vs ? half_table(net, tc.table, &kc, vc, gwr_tensor_dtype(x)) : NULL,
                                          vs ? half_table(net, ts.table, &ks, vs, gwr_tensor_dtype(x)) : NULL, tc.pos}, *tout = NULL;
                    gwr_free(vc), gwr_free(vs);
                    if (err || (vs && (!tin[1] || !tin[2])))
                        return gwr_rewrite_fail(c, GWR_ERR_NOMEM, "fuse_rotary: %s", gwr_network_errmsg(net));
                    if (!vs) return gwr_rewrite_no_match(c, "a table's two halves differ (not rotate-half's)");
                    gwr_args *a = gwr_args_new();
                    if (a && !gwr_args_set_int(a, "interleaved", 0)) gwr_op_call(net, "", "RotaryEmbedding", 4, tin, a, 1, &tout);
                    gwr_args_free(a);
                    return replace_rotation(c, l, tout, ma, mb, cat, neg, dead, nd);
                }
                if (r != 4 || !fits_x(x, y, tc.f, d))
                    return gwr_rewrite_no_match(c, "x is not (B, N, S, D) with the caches (B, S, D/2) and the result of its shape");
                gwr_tensor *in[3] = {x, half_cache(net, &tc, "Cos"), half_cache(net, &ts, "Sin")}, *out = NULL;
                if (!in[1] || !in[2]) return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "fuse_rotary: %s", gwr_network_errmsg(net));
                if (gwr_tensor_dtype(in[1]) != gwr_tensor_dtype(x))
                    return gwr_rewrite_no_match(c, "the caches are not of x's dtype");
                gwr_args *a = gwr_args_new();
                if (a && !gwr_args_set_int(a, "interleaved", 0)) gwr_op_call(net, "", "RotaryEmbedding", 3, in, a, 1, &out);
                gwr_args_free(a);
                return replace_rotation(c, l, out, ma, mb, cat, neg, dead, nd);
            }
        }
    }
    return gwr_rewrite_no_match(c, "not x * Unsqueeze(cos) + Concat(-x2, x1) * Unsqueeze(sin) over the model's Cos/Sin(Concat(F, F))");
}

/* Partial rotary over heads (B, S, N, D) (GPT-J: the interleaved form fused through the 3-D
 * input): Concat(Reshape(RotaryEmbedding(Reshape(x_rot, (0, 0, N * R)); num_heads N), (0, 0, N,
 * R)), x_pass, axis -1) -> Reshape(RotaryEmbedding(Reshape(x, (0, 0, N * D)); num_heads N,
 * rotary_embedding_dim R), (0, 0, N, D)). */
static int partial_heads(gwr_rewrite_ctx *c, gwr_layer *l, gwr_layer *back) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    gwr_tensor *rot = gwr_layer_input(l, 0), *pass = gwr_layer_input(l, 1), *y = gwr_layer_output(l, 0), *x = NULL;
    gwr_layer *re = prod(gwr_layer_input(back, 0), "RotaryEmbedding"), *flat, *dead[2];
    int64_t nh = 0, rd = 0, v[5], len = 0;
    int nd = 0;
    if (!re || gwr_ps_sole_reader(rot) != l || gwr_ps_sole_reader(gwr_layer_input(back, 0)) != back || gwr_layer_num_inputs(re) != 3 ||
        gwr_layer_attr_int(re, "num_heads", 0, &nh) || nh <= 0 || gwr_layer_attr_int(re, "rotary_embedding_dim", 0, &rd) || rd ||
        !(flat = prod(gwr_layer_input(re, 0), "Reshape")) || gwr_ps_sole_reader(gwr_layer_input(re, 0)) != re ||
        !last_axis_attr(l, 0, gwr_tensor_rank(y)))
        return gwr_rewrite_no_match(c, "not Reshape(a whole 3-D RotaryEmbedding of Reshape(x_rot)) read only by a Concat over the last axis");
    gwr_tensor *xr = gwr_layer_input(flat, 0);
    gwr_dim r = gwr_tensor_rank(xr) == 4 ? gwr_tensor_dim(xr, 3) : GWR_DIM_UNKNOWN;
    if (!GWR_DIM_IS_KNOWN(r) || gwr_tensor_dim(xr, 2) != nh || gwr_match_const_ints(gwr_layer_input(flat, 1), v, 5) != 3 || v[0] ||
        v[1] || v[2] != nh * r || gwr_match_const_ints(gwr_layer_input(back, 1), v, 5) != 4 || v[0] || v[1] || v[2] != nh || v[3] != r)
        return gwr_rewrite_no_match(c, "the Reshapes around the RotaryEmbedding are not (B, S, N, R) <-> (B, S, N * R)");
    if (!parts(xr, pass, &len, &x, dead, &nd) || gwr_ps_sole_reader(xr) != flat || gwr_ps_sole_reader(pass) != l || len != r)
        return gwr_rewrite_no_match(c, "the rotated part and the rest are not the first R and the last D - R of one x, read only here");
    gwr_dim d = gwr_tensor_dim(x, 3);
    if (gwr_tensor_rank(x) != 4 || !gwr_match_same_type(x, y) || gwr_tensor_dim(x, 2) != nh || !GWR_DIM_IS_KNOWN(d))
        return gwr_rewrite_no_match(c, "x is not (B, S, N, D) of the result's type");
    int64_t fs[3] = {0, 0, nh * d}, bs[4] = {0, 0, nh, d};
    gwr_tensor *in[3] = {gwr_reshape(net, x, 3, fs), gwr_layer_input(re, 1), gwr_layer_input(re, 2)}, *out = NULL;
    gwr_layer *f = in[0] ? gwr_match_clone_layer(re, 3, in) : NULL;
    gwr_status st = f ? gwr_layer_set_int(f, "rotary_embedding_dim", r) : GWR_ERR_NOMEM;
    if (!st) st = gwr_layer_infer(f);
    if (!st && !(out = gwr_reshape(net, gwr_layer_output(f, 0), 4, bs))) st = GWR_ERR_SHAPE;
    if (!st) st = gwr_match_replace_layer(l, 1, &out);
    if (!st) st = drop_dead(back, 0);
    return st ? gwr_rewrite_fail(c, st, "fuse_rotary: %s", gwr_last_errmsg()) : 1;
}

/* Partial rotary (GPT-NeoX, Phi): Concat(RotaryEmbedding(x_rot, ...), x_pass, axis -1) with x_rot,
 * x_pass the first R and the remaining elements of x's last axis -> RotaryEmbedding(x, ...;
 * rotary_embedding_dim R); the com.microsoft form (target ort below opset 23) with num_heads too. */
static int partial(gwr_rewrite_ctx *c, gwr_layer *l) {
    if (*gwr_layer_domain(l) || gwr_layer_num_inputs(l) != 2) return gwr_rewrite_no_match(c, "not a two-input ONNX Concat");
    gwr_tensor *rot = gwr_layer_input(l, 0), *pass = gwr_layer_input(l, 1), *x = NULL, *y = gwr_layer_output(l, 0);
    gwr_layer *re = gwr_tensor_parent(rot), *dead[2];
    if (prod(rot, "Reshape")) return partial_heads(c, l, re);
    int ms = gwr_match_is_op(re, "com.microsoft::RotaryEmbedding"), nd = 0;
    int64_t rd = 0, len = 0;
    if (!ms && !gwr_match_is_op(re, "RotaryEmbedding")) return gwr_rewrite_no_match(c, "input 0 is not a RotaryEmbedding's");
    if (gwr_ps_sole_reader(rot) != l || gwr_layer_num_outputs(re) != 1 || gwr_layer_attr_int(re, "rotary_embedding_dim", 0, &rd) || rd ||
        (!ms && gwr_layer_num_inputs(re) != 3) || !last_axis_attr(l, 0, gwr_tensor_rank(y)))
        return gwr_rewrite_no_match(c, "not a whole RotaryEmbedding read only by a Concat over the last axis");
    gwr_tensor *xr = gwr_layer_input(re, 0);
    if (!parts(xr, pass, &len, &x, dead, &nd) || gwr_ps_sole_reader(xr) != re || gwr_ps_sole_reader(pass) != l)
        return gwr_rewrite_no_match(c, "the rotated part and the rest are not the first R and the last D - R of one x, read only here");
    if (gwr_tensor_rank(x) != 4 || !gwr_match_same_type(x, y) || len % 2 || (ms && !GWR_DIM_IS_KNOWN(gwr_tensor_dim(x, 1))))
        return gwr_rewrite_no_match(c, "x is not (B, N, S, D) of the result's type with an even R");
    gwr_tensor *in[4];
    for (int i = 0; i < gwr_layer_num_inputs(re); i++) in[i] = gwr_layer_input(re, i);
    in[0] = x;
    gwr_layer *f = gwr_match_clone_layer(re, gwr_layer_num_inputs(re), in);
    gwr_status st = f ? gwr_layer_set_int(f, "rotary_embedding_dim", len) : GWR_ERR_NOMEM;
    if (!st && ms) st = gwr_layer_set_int(f, "num_heads", gwr_tensor_dim(x, 1));
    if (!st) st = gwr_layer_infer(f);
    gwr_tensor *out = f ? gwr_layer_output(f, 0) : NULL;
    if (!st) st = gwr_match_replace_layer(l, 1, &out);
    if (!st) st = gwr_layer_mark_as_removed(re);
    for (int k = 0; !st && k < nd; k++) st = gwr_layer_mark_as_removed(dead[k]);
    return st ? gwr_rewrite_fail(c, st, "%s", gwr_last_errmsg()) : 1;
}

static int fuse_rotary(gwr_rewrite_ctx *c, gwr_layer *l) {
    if (gwr_match_is_op(l, "Concat")) return partial(c, l);
    int r = rotate_half(c, l);
    int64_t opset = gwr_network_opset(gwr_rewrite_ctx_network(c), "");
    if (r || *gwr_layer_domain(l) || gwr_layer_num_inputs(l) != 2 || (opset >= 0 && opset < 23 && !gwr_ps_target_contrib(c))) return r;
    return interleaved(c, l);
}

/* ---- lower_rotary ---------------------------------------------------------------- */

static int lower_rotary(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    int64_t opset = gwr_network_opset(net, ""), il = 0, rd = 0;
    if (opset < 0 || opset >= 23) return gwr_rewrite_no_match(c, "onnxruntime runs ONNX RotaryEmbedding at this opset");
    if (*gwr_layer_domain(l) || gwr_layer_num_inputs(l) < 3 || gwr_layer_num_outputs(l) != 1)
        return gwr_rewrite_no_match(c, "not an ONNX RotaryEmbedding");
    gwr_tensor *x = gwr_layer_input(l, 0), *cs = gwr_layer_input(l, 1), *sn = gwr_layer_input(l, 2);
    gwr_tensor *pos = gwr_layer_num_inputs(l) > 3 ? gwr_layer_input(l, 3) : NULL;
    /* (B, N, S, D) without num_heads, or (B, S, N * D) with it (lower_attention moves a
     * rotary to that side for GroupQueryAttention) */
    int r = gwr_tensor_rank(x);
    int64_t nh = r == 4 ? gwr_tensor_dim(x, 1) : 0;
    if (gwr_layer_attr_int(l, "interleaved", 0, &il) || gwr_layer_attr_int(l, "rotary_embedding_dim", 0, &rd) ||
        (r == 4 ? gwr_layer_find_attr(l, "num_heads") >= 0 || (rd && !GWR_DIM_IS_KNOWN(nh))
                : r != 3 || gwr_layer_attr_int(l, "num_heads", 0, &nh) || nh <= 0))
        return gwr_rewrite_no_match(c, "not the 4-D form (with its heads known for a partial rotation) or the 3-D one with num_heads");
    int rows = !pos;
    if (rows ? gwr_tensor_rank(cs) != 3 || gwr_tensor_rank(sn) != 3 || !GWR_DIM_IS_KNOWN(gwr_tensor_dim(cs, 2))
             : gwr_tensor_rank(cs) != 2 || gwr_tensor_rank(sn) != 2 || gwr_tensor_rank(pos) != 2 || gwr_tensor_dtype(pos) != GWR_INT64)
        return gwr_rewrite_no_match(c, "not caches (B, S, R/2), or (max, R/2) with int64 position_ids (B, S)");
    gwr_tensor *cr = rows ? rows_of(net, cs, &pos, 1) : cs, *sr = !cr ? NULL : rows ? rows_of(net, sn, NULL, 0) : sn, *out = NULL;
    gwr_tensor *in[4] = {x, pos, cr, sr};
    gwr_args *a = sr ? gwr_args_new() : NULL;
    if (a && !gwr_args_set_int(a, "interleaved", il) &&
        (!rd || !gwr_args_set_int(a, "rotary_embedding_dim", rd)) && ((!rd && r == 4) || !gwr_args_set_int(a, "num_heads", nh)))
        gwr_op_call(net, MS, "RotaryEmbedding", 4, in, a, 1, &out);
    gwr_args_free(a);
    if (!out) return gwr_rewrite_fail(c, GWR_ERR_SHAPE, "lower_rotary: %s", gwr_network_errmsg(net));
    gwr_tensor_set_type(out, gwr_tensor_dtype(x), r, gwr_tensor_dims(x)); /* the contrib op has no shape rule */
    gwr_status st = gwr_match_replace_layer(l, 1, &out);
    return st ? gwr_rewrite_fail(c, st, "%s", gwr_last_errmsg()) : 1;
}

static const char *const lower_roots[] = {"RotaryEmbedding", NULL};

static const gwr_pattern_rewriter gwr_pattern_lower_rotary = {
    .name = "lower_rotary",
    .root_ops = lower_roots,
    .match_and_rewrite = lower_rotary,
};

static const char *const fuse_roots[] = {"Add", "Concat", NULL};

static const gwr_pattern_rewriter gwr_pattern_fuse_rotary = {
    .name = "fuse_rotary",
    .root_ops = fuse_roots,
    .match_and_rewrite = fuse_rotary,
};

/* ---- the pass table's rows (pass_table.h) ---- */
#include "passes/pass_table.h"

GWR_PASS(fuse_rotary, FUSE, .pattern = &gwr_pattern_fuse_rotary, .level = GWR_LEVEL_EXTENDED, .targets = GWR_TARGET_ANY,
         .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-5,
         .summary = "turn the exporters' rotate-half rotary embedding x * cos + Concat(-x2, x1) * sin, cos/sin computed "
                    "in the graph from Concat(F, F), into ONNX RotaryEmbedding(x, cos(F), sin(F)) (opset >= 23; any "
                    "opset for targets ort and gwr; lower_rotary then makes it onnxruntime's below 23), the caches built once and shared; "
                    "partial rotary (the rest of x Concat'ed back) as rotary_embedding_dim; cos/sin tables gathered by "
                    "position_ids as position_ids; the interleaved form (GPT-J's rotate_every_two: stack(-x_odd, x_even) "
                    "times repeat_interleave(sin)) as interleaved 1, over (B, S, N, D) heads through the 3-D form with num_heads");

/* in kernel, after lower: the attention lowering (lower_attention) may take the ONNX RotaryEmbedding first */
GWR_PASS(lower_rotary, KERNEL, .pattern = &gwr_pattern_lower_rotary, .level = GWR_LEVEL_EXTENDED, .targets = GWR_TARGET_ORT,
         .numerics = GWR_NUMERICS_EXACT,
         .summary = "below opset 23 (onnxruntime has no ONNX RotaryEmbedding there), turn RotaryEmbedding into "
                    "com.microsoft RotaryEmbedding: (B, S, R/2) caches as (B * S) rows with position_ids their row "
                    "numbers, built once; (max, R/2) caches with their position_ids as they are");
