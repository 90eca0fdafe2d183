/* verify.c - gwr_exec_compare: two networks run on the same inputs, their
 * outputs compared by name within a tolerance (`gwr verify` as a
 * function, and the numeric check of the rewrite tests). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec_internal.h"

/* ---- the interface ---- */

static gwr_tensor *find_input(gwr_network *net, const char *name) {
    gwr_tensor *t = gwr_network_find_tensor(net, name);
    return t && gwr_tensor_is_input(t) ? t : NULL;
}

static int find_output(gwr_network *net, const char *name) {
    for (int j = 0; j < gwr_network_num_outputs(net); j++)
        if (!strcmp(gwr_tensor_name(gwr_network_output(net, j)), name)) return j;
    return -1;
}

static int dtypes_differ(const gwr_tensor *x, const gwr_tensor *y) {
    gwr_dtype a = gwr_tensor_dtype(x), b = gwr_tensor_dtype(y);
    return a != GWR_UNDEFINED && b != GWR_UNDEFINED && a != b;
}

/* Every input of `from` without a default is an input of `to` of the same
 * dtype (where both are known). */
static gwr_status inputs_agree(gwr_network *from, gwr_network *to, const char *fw, const char *tw) {
    for (int i = 0; i < gwr_network_num_inputs(from); i++) {
        gwr_tensor *x = gwr_network_input(from, i), *y = find_input(to, gwr_tensor_name(x));
        if (!y && !gwr_tensor_default(x))
            return gwr_set_last_error(GWR_ERR_TYPE, "the %s network has no input '%s' (which the %s has)", tw,
                                      gwr_tensor_name(x), fw);
        if (y && dtypes_differ(x, y))
            return gwr_set_last_error(GWR_ERR_TYPE, "input '%s' is %s in the %s network, %s in the %s",
                                      gwr_tensor_name(x), gwr_dtype_name(gwr_tensor_dtype(x)), fw,
                                      gwr_dtype_name(gwr_tensor_dtype(y)), tw);
    }
    return GWR_OK;
}

static gwr_status interface_agrees(gwr_network *a, gwr_network *b) {
    gwr_status st = inputs_agree(a, b, "first", "second");
    if (!st) st = inputs_agree(b, a, "second", "first");
    if (st) return st;
    for (int i = 0; i < gwr_network_num_outputs(a); i++) {
        gwr_tensor *x = gwr_network_output(a, i);
        int j = find_output(b, gwr_tensor_name(x));
        if (j < 0)
            return gwr_set_last_error(GWR_ERR_TYPE, "output '%s' of the first network is not an output of the second",
                                      gwr_tensor_name(x));
        gwr_tensor *y = gwr_network_output(b, j);
        if (dtypes_differ(x, y))
            return gwr_set_last_error(GWR_ERR_TYPE, "output '%s' is %s in the first network, %s in the second",
                                      gwr_tensor_name(x), gwr_dtype_name(gwr_tensor_dtype(x)),
                                      gwr_dtype_name(gwr_tensor_dtype(y)));
    }
    for (int j = 0; j < gwr_network_num_outputs(b); j++) {
        const char *name = gwr_tensor_name(gwr_network_output(b, j));
        if (find_output(a, name) < 0)
            return gwr_set_last_error(GWR_ERR_TYPE, "output '%s' of the second network is not an output of the first",
                                      name);
    }
    return GWR_OK;
}

/* ---- running ---- */

/* Runs net on in, asking for `names` (n outputs) into outs. On failure the
 * session's message is the thread's. */
static gwr_status run_one(gwr_network *net, const gwr_compare_options *o, const gwr_inputs *in, int n,
                          const char **names, gwr_value **outs) {
    gwr_session_options so = {.threads = o->threads};
    gwr_session *s = o->session_new ? o->session_new(net, &so) : gwr_session_new_raw(net, &so);
    if (!s) return GWR_ERR_INVALID_GRAPH; /* gwr_last_errmsg says why */
    gwr_status st = gwr_session_run(s, in->n, in->names, in->values, n, names, outs);
    if (st) gwr_set_last_error(st, "%s", gwr_session_errmsg(s));
    gwr_session_free(s);
    return st;
}

/* ---- comparing ---- */

/* Same kind, dtype and dims; sequences and optionals of as many
 * elements, each of the same type. */
static int same_type(const gwr_value *x, const gwr_value *y) {
    if (gwr_value_get_kind(x) != gwr_value_get_kind(y) || gwr_value_length(x) != gwr_value_length(y)) return 0;
    for (int64_t i = 0; i < gwr_value_length(x); i++)
        if (!same_type(gwr_value_element(x, i), gwr_value_element(y, i))) return 0;
    if (gwr_value_dtype(x) != gwr_value_dtype(y) || gwr_value_rank(x) != gwr_value_rank(y)) return 0;
    int r = gwr_value_rank(x);
    return !r || !memcmp(gwr_value_dims(x), gwr_value_dims(y), (size_t)r * sizeof(int64_t));
}

/* The element-wise comparison of x and y (of the same type) into o's
 * figures; the tensors of sequences and optionals one after the other. */
static void compare_values(gwr_compare_output *o, const gwr_value *x, const gwr_value *y, double atol, double rtol) {
    for (int64_t i = 0; i < gwr_value_length(x); i++)
        compare_values(o, gwr_value_element(x, i), gwr_value_element(y, i), atol, rtol);
    int64_t n = gwr_value_numel(x);
    o->numel += n;
    if (gwr_value_dtype(x) == GWR_STRING) {
        const gwr_bytes *bx = gwr_value_cdata(x), *by = gwr_value_cdata(y);
        for (int64_t e = 0; e < n; e++)
            o->nbad += bx[e].len != by[e].len || (bx[e].len && memcmp(bx[e].data, by[e].data, bx[e].len));
        if (o->nbad) o->excess = INFINITY;
        return;
    }
    for (int64_t e = 0; e < n; e++) {
        double u = gwr_value_get_f64(x, e), v = gwr_value_get_f64(y, e);
        if ((isnan(u) && isnan(v)) || u == v) continue;
        double d = fabs(u - v), r = d / (fabs(v) > 1e-30 ? fabs(v) : 1e-30);
        if (isnan(d)) d = INFINITY, r = INFINITY;
        double tol = atol + rtol * fabs(v);
        double ex = tol > 0 ? d / tol : INFINITY;
        if (isnan(ex)) ex = INFINITY;
        if (d > o->max_abs) o->max_abs = d;
        if (r > o->max_rel) o->max_rel = r;
        if (ex > o->excess) o->excess = ex;
        if (!(d <= tol)) o->nbad++;
    }
}

void gwr_compare_report_free(gwr_compare_report *rep) {
    if (!rep) return;
    for (int i = 0; i < rep->noutputs; i++) {
        gwr_free(rep->outputs[i].name);
        gwr_value_release(rep->outputs[i].a);
        gwr_value_release(rep->outputs[i].b);
    }
    gwr_free(rep->outputs);
    memset(rep, 0, sizeof *rep);
    rep->worst = -1;
}

/* Fills rep from the outputs of both runs (references moved into it). */
static void fill_report(gwr_compare_report *rep, double atol, double rtol) {
    rep->pass = 1;
    for (int i = 0; i < rep->noutputs; i++) {
        gwr_compare_output *o = &rep->outputs[i];
        o->same_type = same_type(o->a, o->b);
        if (o->same_type) compare_values(o, o->a, o->b, atol, rtol);
        else o->excess = INFINITY;
        o->pass = o->same_type && !o->nbad;
        rep->pass &= o->pass;
        if (o->max_abs > rep->max_abs) rep->max_abs = o->max_abs;
        if (o->max_rel > rep->max_rel) rep->max_rel = o->max_rel;
        int differs = !o->same_type || o->excess > 0;
        gwr_compare_output *w = rep->worst >= 0 ? &rep->outputs[rep->worst] : NULL;
        if (differs && (!w || o->excess > w->excess || (o->excess == w->excess && o->max_abs > w->max_abs)))
            rep->worst = i;
    }
    rep->worst_name = rep->worst >= 0 ? rep->outputs[rep->worst].name : NULL;
}

gwr_status gwr_exec_compare(gwr_network *a, gwr_network *b, const gwr_compare_options *opt, gwr_compare_report *rep) {
    if (!rep) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_exec_compare: NULL report");
    memset(rep, 0, sizeof *rep);
    rep->worst = -1;
    if (!a || !b) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_exec_compare: NULL network");
    static const gwr_compare_options defaults = GWR_COMPARE_DEFAULTS;
    const gwr_compare_options *o = opt ? opt : &defaults;
    if (!(o->atol >= 0) || !(o->rtol >= 0))
        return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_exec_compare: tolerances must be numbers >= 0");
    gwr_status st = interface_agrees(a, b);
    if (st) return st;
    gwr_inputs in;
    if ((st = gwr_exec_make_inputs(a, &o->inputs, &in))) return st;
    int n = gwr_network_num_outputs(a);
    const char **names = gwr_calloc((size_t)n + 1, sizeof *names);
    gwr_value **va = gwr_calloc((size_t)n + 1, sizeof *va), **vb = gwr_calloc((size_t)n + 1, sizeof *vb);
    rep->outputs = gwr_calloc((size_t)n + 1, sizeof *rep->outputs);
    if (!names || !va || !vb || !rep->outputs) st = gwr_set_last_error(GWR_ERR_NOMEM, "gwr_exec_compare: out of memory");
    for (int i = 0; !st && i < n; i++)
        if (!(rep->outputs[i].name = gwr_strdup(names[i] = gwr_tensor_name(gwr_network_output(a, i)))))
            st = gwr_set_last_error(GWR_ERR_NOMEM, "gwr_exec_compare: out of memory");
    if (!st && (st = run_one(a, o, &in, n, names, va))) rep->error_in = 1;
    if (!st && (st = run_one(b, o, &in, n, names, vb))) rep->error_in = 2;
    if (!st) {
        rep->noutputs = n;
        for (int i = 0; i < n; i++) rep->outputs[i].a = va[i], rep->outputs[i].b = vb[i];
        fill_report(rep, o->atol, o->rtol);
    } else {
        for (int i = 0; i < n; i++) gwr_value_release(va ? va[i] : NULL), gwr_value_release(vb ? vb[i] : NULL);
        int err = rep->error_in;
        for (int i = 0; rep->outputs && i < n; i++) gwr_free(rep->outputs[i].name);
        gwr_free(rep->outputs);
        rep->outputs = NULL;
        rep->error_in = err;
    }
    gwr_free(names), gwr_free(va), gwr_free(vb);
    gwr_inputs_free(&in);
    return st;
}
