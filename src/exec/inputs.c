/* inputs.c - a network's inputs for a run: given values, or seeded random
 * data of the declared (or a given) shape. What `gwr run --random`,
 * `gwr verify` and gwr_exec_compare share, so that the same seed gives the
 * same values everywhere. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec_internal.h"

static uint64_t next_rand(uint64_t *s) {
    *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1dULL;
}

gwr_value *gwr_value_random(gwr_dtype dt, int rank, const int64_t *dims, uint64_t *state) {
    if (!state) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_value_random: NULL state");
        return NULL;
    }
    gwr_value *v = gwr_value_new(dt, rank, dims);
    if (!v) return NULL;
    int64_t n = gwr_value_numel(v);
    int is_float = dt == GWR_FLOAT32 || dt == GWR_FLOAT64 || dt == GWR_FLOAT16 || dt == GWR_BFLOAT16;
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = next_rand(state);
        if (dt == GWR_STRING) {
            char s[4] = {'s', (char)('0' + (r & 3)), 0, 0};
            if (gwr_value_set_string(v, i, s, 2)) {
                gwr_value_release(v);
                return NULL;
            }
        } else if (is_float) {
            gwr_value_set_f64(v, i, (double)(r >> 11) * (2.0 / 9007199254740992.0) - 1.0);
        } else if (dt == GWR_BOOL) {
            gwr_value_set_f64(v, i, (double)(r & 1));
        } else {
            gwr_value_set_f64(v, i, (double)(r & 3));
        }
    }
    return v;
}

void gwr_inputs_free(gwr_inputs *in) {
    if (!in) return;
    for (int i = 0; i < in->n; i++) gwr_value_release(in->values[i]);
    gwr_free(in->names), gwr_free(in->values);
    in->n = 0, in->names = NULL, in->values = NULL;
}

/* The extent of declared dim d: known, bound by name, or the default. */
static int64_t bound_dim(const gwr_network *net, gwr_dim d, const gwr_input_options *o) {
    if (GWR_DIM_IS_KNOWN(d)) return d;
    const char *sym = gwr_network_dim_name(net, d);
    for (int i = 0; sym && i < o->nbind; i++)
        if (o->bind[i].name && !strcmp(o->bind[i].name, sym)) return o->bind[i].value;
    return o->default_dim > 0 ? o->default_dim : 1;
}

/* The dims of input t's random value into dims (*rank): the shape given
 * (checked against the declared one) or the declared shape bound. */
static gwr_status input_dims(gwr_network *net, gwr_tensor *t, const gwr_input_shape *sh, const gwr_input_options *o,
                             int64_t *dims, int *rank) {
    const char *name = gwr_tensor_name(t);
    int r = gwr_tensor_rank(t);
    if (!sh) {
        *rank = r < 0 ? 1 : r;
        for (int d = 0; d < *rank; d++) dims[d] = bound_dim(net, gwr_tensor_dim(t, d), o);
        return GWR_OK;
    }
    if (sh->rank < 0 || sh->rank > GWR_MAX_RANK || (sh->rank && !sh->dims))
        return gwr_set_last_error(GWR_ERR_INVALID_ARG, "bad rank %d for input '%s'", sh->rank, name);
    for (int d = 0; d < sh->rank; d++)
        if (sh->dims[d] < 0) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "dim %d of '%s' is negative", d, name);
    if (r >= 0 && sh->rank != r) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "input '%s' has rank %d", name, r);
    for (int d = 0; d < sh->rank && r >= 0; d++) {
        gwr_dim dd = gwr_tensor_dim(t, d);
        if (GWR_DIM_IS_KNOWN(dd) && dd != sh->dims[d])
            return gwr_set_last_error(GWR_ERR_INVALID_ARG, "dim %d of '%s' is %lld", d, name, (long long)dd);
    }
    *rank = sh->rank;
    if (sh->rank) memcpy(dims, sh->dims, (size_t)sh->rank * sizeof *dims);
    return GWR_OK;
}

/* The given names and shapes that name no input of net (given first, as
 * `gwr run` reports them); shapes not used (an input also given a value)
 * count too. */
static gwr_status check_unused(gwr_network *net, const gwr_input_options *o, const char *shape_used, gwr_inputs *out) {
    for (int i = 0; i < o->ngiven; i++) {
        gwr_tensor *t = o->given_names[i] ? gwr_network_find_tensor(net, o->given_names[i]) : NULL;
        if (!t || !gwr_tensor_is_input(t)) {
            out->bad_given = i;
            return gwr_set_last_error(GWR_ERR_INVALID_ARG, "the model has no such input");
        }
    }
    for (int i = 0; i < o->nshapes; i++)
        if (!shape_used[i]) {
            out->bad_shape = i;
            return gwr_set_last_error(GWR_ERR_INVALID_ARG, "the model has no such input");
        }
    return GWR_OK;
}

static int find_given(const gwr_input_options *o, const char *name) {
    for (int i = 0; i < o->ngiven; i++)
        if (o->given_names[i] && !strcmp(o->given_names[i], name)) return i;
    return -1;
}

static int find_shape(const gwr_input_options *o, const char *name) {
    for (int i = 0; i < o->nshapes; i++)
        if (o->shapes[i].name && !strcmp(o->shapes[i].name, name)) return i;
    return -1;
}

gwr_status gwr_exec_make_inputs(gwr_network *net, const gwr_input_options *opt, gwr_inputs *out) {
    if (!out) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_exec_make_inputs: NULL output");
    memset(out, 0, sizeof *out);
    out->bad_shape = out->bad_given = -1;
    if (!net) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_exec_make_inputs: NULL network");
    static const gwr_input_options none = {0};
    const gwr_input_options *o = opt ? opt : &none;
    if ((o->ngiven && (!o->given_names || !o->given_values)) || (o->nshapes && !o->shapes) || (o->nbind && !o->bind))
        return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_exec_make_inputs: NULL array with a count");
    for (int i = 0; i < o->nbind; i++)
        if (!o->bind[i].name || o->bind[i].value < 0)
            return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_exec_make_inputs: bad binding %d", i);
    int ni = gwr_network_num_inputs(net);
    out->names = gwr_calloc((size_t)ni + 1, sizeof *out->names);
    out->values = gwr_calloc((size_t)ni + 1, sizeof *out->values);
    char *shape_used = gwr_calloc((size_t)o->nshapes + 1, 1);
    gwr_status st = out->names && out->values && shape_used
                        ? GWR_OK
                        : gwr_set_last_error(GWR_ERR_NOMEM, "gwr_exec_make_inputs: out of memory");
    uint64_t state = o->seed * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL;
    for (int i = 0; i < ni && !st; i++) {
        gwr_tensor *t = gwr_network_input(net, i);
        const char *name = gwr_tensor_name(t);
        int g = find_given(o, name), s = find_shape(o, name);
        gwr_value *v = NULL;
        if (g >= 0) {
            if (!(v = gwr_value_retain(o->given_values[g]))) {
                out->bad_given = g;
                st = gwr_set_last_error(GWR_ERR_INVALID_ARG, "NULL value given for input '%s'", name);
                break;
            }
        } else if (gwr_tensor_default(t) && s < 0) {
            continue; /* the initializer's value */
        } else {
            gwr_dtype dt = gwr_tensor_dtype(t);
            if (dt == GWR_UNDEFINED || gwr_tensor_kind(t) != GWR_VALUE_TENSOR) {
                out->bad_input = name;
                st = gwr_set_last_error(GWR_ERR_TYPE, "input '%s' has no tensor type", name);
                break;
            }
            int64_t dims[GWR_MAX_RANK];
            int rank = 0;
            if (s >= 0) shape_used[s] = 1;
            if ((st = input_dims(net, t, s >= 0 ? &o->shapes[s] : NULL, o, dims, &rank))) {
                out->bad_shape = s;
                out->bad_input = name;
                break;
            }
            if (!(v = gwr_value_random(dt, rank, dims, &state))) {
                out->bad_input = name;
                st = GWR_ERR_NOMEM;
                break;
            }
        }
        out->names[out->n] = name;
        out->values[out->n++] = v;
    }
    if (!st) st = check_unused(net, o, shape_used, out);
    gwr_free(shape_used);
    if (st) {
        int bs = out->bad_shape, bg = out->bad_given;
        const char *bi = out->bad_input;
        gwr_inputs_free(out);
        out->bad_shape = bs, out->bad_given = bg, out->bad_input = bi;
    }
    return st;
}
