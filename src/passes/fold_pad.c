/* fold_pad.c - fold_pad_into_conv: a Pad by zeros on the spatial axes only,
 * read by a Conv or an AveragePool, becomes part of that layer's pads:
 *
 *   Conv(Pad(x, [0,0,t,l, 0,0,b,r]), W, B; pads p) = Conv(x, W, B; pads p + (t,l,b,r))
 *
 * since Conv's own padding is zeros. The Pad: mode "constant" (or absent),
 * the value 0 (absent, or a constant equal to 0), the pads constant and
 * non-negative (a negative pad crops, which Conv's pads cannot), zero on
 * the batch and channel axes. Its three forms: the attributes "paddings"
 * (opset 1) or "pads" and "value" (opset 2-10), the inputs pads and
 * constant_value (opset 11), and the optional axes input (opset 18).
 * The reader:
 *   Conv           auto_pad NOTSET (explicit pads).
 *   AveragePool    auto_pad NOTSET, count_include_pad 1 (with 0 the padded
 *                  zeros would stop counting in the mean), ceil_mode 0
 *                  (with ceil_mode 1 whether a last window starting in the
 *                  right padding is kept depends on where the padding came
 *                  from), and every new pad smaller than the kernel
 *                  (onnxruntime refuses a pool pad >= its kernel).
 *   MaxPool        refused: its padding is -inf where a Pad's is a value;
 *                  a Pad by -inf would still differ where a window lies in
 *                  the padding only (onnxruntime gives the lowest float)
 *                  and in the Indices output.
 *   ConvTranspose  refused: its pads crop the output, not pad the input.
 *
 * Not a rule file: the Pad's pads (input or attribute, per opset) are added axis by axis into the
 * reader's pads after checking its auto_pad and count_include_pad.
 */
#include <math.h>
#include <string.h>

#include "gwr/match.h"
#include "gwr/passes.h"
#include "util/util.h"

enum { X, NCAP };

static int fold_pad_into_conv(gwr_rewrite_ctx *c, const gwr_match *m);

static const char *const pad_readers[] = {"Conv", "AveragePool", NULL};
static const gwr_match_node pad_nodes[] = {
    GWR_M_OP("Pad", GWR_M_CAP(X), GWR_M_REST),
    {.ops = pad_readers, .in = {GWR_M_NODE(0), GWR_M_REST}}, /* the Conv's W, B (an AveragePool has none) */
};
static const gwr_match_pattern pad_p = {"fold_pad_into_conv", GWR_M_NODES(pad_nodes), fold_pad_into_conv, NULL};


static gwr_tensor *opt_input(const gwr_layer *l, int i) {
    return i < gwr_layer_num_inputs(l) ? gwr_layer_input(l, i) : NULL;
}

/* The Pad's begin and end pads per axis of a rank-r input into lo, hi;
 * NULL when it is a foldable zero Pad, else why not. */
static const char *read_pad(const gwr_layer *pad, int r, int64_t *lo, int64_t *hi) {
    const char *mode = "constant";
    gwr_layer_attr_string(pad, "mode", "constant", &mode);
    if (strcmp(mode, "constant")) return "a Pad in another mode than constant";
    int64_t p[2 * GWR_MAX_RANK], axes[GWR_MAX_RANK];
    int np = -1, nax = r;
    if (gwr_layer_num_inputs(pad) == 1) {
        const int64_t *a = NULL;
        int64_t n = -1;
        if (gwr_layer_get_ints(pad, "pads", &a, &n) && gwr_layer_get_ints(pad, "paddings", &a, &n))
            return "a Pad without pads";
        if (n > 2 * GWR_MAX_RANK) return "too many pads";
        for (np = 0; np < n; np++) p[np] = a[np];
        float value = 0;
        gwr_layer_attr_float(pad, "value", 0.0f, &value);
        if (value != 0) return "a Pad value other than 0";
    } else {
        np = gwr_match_const_ints(gwr_layer_input(pad, 1), p, 2 * GWR_MAX_RANK);
        if (np < 0) return "the pads are not a constant";
        gwr_tensor *cv = opt_input(pad, 2);
        double v = 0;
        if (cv && !gwr_match_const_scalar(cv, &v)) return "the Pad value is not a constant scalar";
        if (v != 0) return "a Pad value other than 0";
        gwr_tensor *at = opt_input(pad, 3);
        if (at && (nax = gwr_match_const_ints(at, axes, GWR_MAX_RANK)) < 0) return "the axes are not a constant";
    }
    if (np != 2 * nax) return "the pads do not match the axes";
    for (int a = 0; a < r; a++) lo[a] = hi[a] = 0;
    for (int j = 0; j < nax; j++) {
        int64_t a = opt_input(pad, 3) ? axes[j] : j;
        if (a < 0) a += r;
        if (a < 0 || a >= r) return "an axis out of range";
        if (__builtin_add_overflow(lo[a], p[j], &lo[a]) || __builtin_add_overflow(hi[a], p[j + nax], &hi[a]))
            return "pads past int64";
    }
    for (int a = 0; a < r; a++) {
        if (lo[a] < 0 || hi[a] < 0) return "a negative pad (a crop)";
        if (a < 2 && (lo[a] || hi[a])) return "a pad on the batch or channel axis";
    }
    return NULL;
}

/* The reader's rules and its new pads (2 * ns values) into np. */
static const char *new_pads(const gwr_layer *rd, int is_pool, int ns, const int64_t *lo, const int64_t *hi,
                            int64_t *np) {
    const char *ap = "NOTSET";
    gwr_layer_attr_string(rd, "auto_pad", "NOTSET", &ap);
    if (strcmp(ap, "NOTSET")) return "auto_pad is not NOTSET";
    const int64_t *old = NULL, *kern = NULL;
    int64_t nold = -1, nk = -1, cip = 0, ceil = 0;
    gwr_layer_attr_ints(rd, "pads", &old, &nold);
    if (nold >= 0 && nold != 2 * ns) return "the pads do not match the spatial rank";
    if (is_pool) {
        gwr_layer_attr_int(rd, "count_include_pad", 0, &cip);
        gwr_layer_attr_int(rd, "ceil_mode", 0, &ceil);
        gwr_layer_attr_ints(rd, "kernel_shape", &kern, &nk);
        if (!cip) return "count_include_pad 0 (the padded zeros would stop counting)";
        if (ceil) return "ceil_mode 1";
        if (nk != ns) return "the kernel_shape does not match the spatial rank";
    }
    for (int i = 0; i < ns; i++) {
        if (__builtin_add_overflow(nold > 0 ? old[i] : 0, lo[i + 2], &np[i]) ||
            __builtin_add_overflow(nold > 0 ? old[i + ns] : 0, hi[i + 2], &np[i + ns]))
            return "pads past int64";
        if (is_pool && (np[i] >= kern[i] || np[i + ns] >= kern[i])) return "a pool pad would reach its kernel";
    }
    return NULL;
}

static int fold_pad_into_conv(gwr_rewrite_ctx *c, const gwr_match *m) {
    gwr_layer *l = m->layers[1];
    int is_pool = gwr_match_is_op(l, "AveragePool");
    /* The rank: the Pad's input's, else the Conv weights'. */
    int r = gwr_tensor_rank(m->captures[X]);
    if (r < 0 && !is_pool && gwr_layer_num_inputs(l) > 1) r = gwr_tensor_rank(gwr_layer_input(l, 1));
    if (r < 3 || r > GWR_MAX_RANK) return gwr_rewrite_no_match(c, "the input's rank is not known to be >= 3");
    int64_t lo[GWR_MAX_RANK], hi[GWR_MAX_RANK], np[2 * GWR_MAX_RANK];
    const char *why = read_pad(m->layers[0], r, lo, hi);
    if (!why) why = new_pads(l, is_pool, r - 2, lo, hi, np);
    if (why) return gwr_rewrite_no_match(c, "%s", why);
    gwr_tensor *in[3] = {m->captures[X], NULL, NULL};
    int nin = gwr_layer_num_inputs(l);
    for (int i = 1; i < nin && i < 3; i++) in[i] = gwr_layer_input(l, i);
    gwr_layer *nl = gwr_match_clone_layer(l, nin, in);
    gwr_status s = nl ? gwr_layer_set_ints(nl, "pads", np, 2 * (int64_t)(r - 2)) : GWR_ERR_NOMEM;
    if (!s) s = gwr_layer_infer(nl);
    gwr_tensor *y = s ? NULL : gwr_layer_output(nl, 0);
    if (!s) s = gwr_match_replace(m, 1, &y);
    if (s && nl) gwr_layer_mark_as_removed(nl);
    return s ? gwr_rewrite_fail(c, s, "%s", gwr_last_errmsg()) : 1;
}

const gwr_pattern_rewriter gwr_pattern_fold_pad_into_conv = GWR_MATCH_PASS("fold_pad_into_conv", pad_readers, &pad_p);

/* ---- the pass table's row (pass_table.h) ---- */
#include "passes/pass_table.h"

GWR_PASS(fold_pad_into_conv, FOLD, .pattern = &gwr_pattern_fold_pad_into_conv, .level = GWR_LEVEL_BASIC,
         .targets = GWR_TARGET_ANY, .numerics = GWR_NUMERICS_APPROX, .tolerance = 1e-5,
         .summary = "fold a zero Pad of the spatial axes into the pads of the Conv or AveragePool (count_include_pad "
                    "1) reading it");
