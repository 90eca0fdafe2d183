/* calib.c - calibration sets: samples of a network's inputs, given by
 * the caller (gwr_calib_add), loaded from files (calib_files.c) or made
 * of seeded random data (gwr_calib_random). */
#include <stdio.h>
#include <string.h>

#include "quant/quant_internal.h"

gwr_calib *gwr_calib_new(void) {
    gwr_calib *c = gwr_calloc(1, sizeof *c);
    if (!c) gwr_set_last_error(GWR_ERR_NOMEM, "gwr_calib_new: out of memory");
    return c;
}

static void sample_free(struct gwr_calib_sample *s) {
    for (int i = 0; i < s->n; i++) {
        gwr_free(s->names[i]);
        gwr_value_release(s->values[i]);
    }
    gwr_free(s->names);
    gwr_free(s->values);
}

void gwr_calib_free(gwr_calib *c) {
    if (!c) return;
    for (int i = 0; i < c->n; i++) sample_free(&c->s[i]);
    gwr_free(c->s);
    gwr_free(c);
}

gwr_status gwr_calib_add(gwr_calib *c, int n, const char *const *names, gwr_value *const *values) {
    if (!c || n < 0 || (n && (!names || !values)))
        return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_calib_add: NULL set or arrays");
    for (int i = 0; i < n; i++)
        if (!names[i] || !values[i]) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_calib_add: NULL name or value %d", i);
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 8;
        struct gwr_calib_sample *s = gwr_realloc(c->s, (size_t)cap * sizeof *s);
        if (!s) return gwr_set_last_error(GWR_ERR_NOMEM, "gwr_calib_add: out of memory");
        c->s = s, c->cap = cap;
    }
    struct gwr_calib_sample smp = {0};
    smp.names = gwr_calloc((size_t)n + 1, sizeof *smp.names);
    smp.values = gwr_calloc((size_t)n + 1, sizeof *smp.values);
    if (!smp.names || !smp.values) {
        sample_free(&smp);
        return gwr_set_last_error(GWR_ERR_NOMEM, "gwr_calib_add: out of memory");
    }
    for (; smp.n < n; smp.n++) {
        if (!(smp.names[smp.n] = gwr_strdup(names[smp.n]))) {
            sample_free(&smp);
            return gwr_set_last_error(GWR_ERR_NOMEM, "gwr_calib_add: out of memory");
        }
        smp.values[smp.n] = gwr_value_retain(values[smp.n]);
    }
    c->s[c->n++] = smp;
    return GWR_OK;
}

gwr_calib *gwr_calib_random(gwr_network *net, int count, const gwr_input_options *opt) {
    if (!net || count < 1) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_calib_random: %s", net ? "count must be at least 1" : "NULL network");
        return NULL;
    }
    gwr_calib *c = gwr_calib_new();
    gwr_input_options o = opt ? *opt : (gwr_input_options){0};
    for (int i = 0; c && i < count; i++) {
        gwr_inputs in = {0};
        o.seed = (opt ? opt->seed : 0) + 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
        if (gwr_exec_make_inputs(net, &o, &in) || gwr_calib_add(c, in.n, in.names, in.values)) {
            gwr_calib_free(c);
            c = NULL;
        }
        gwr_inputs_free(&in);
    }
    return c;
}

int gwr_calib_count(const gwr_calib *c) { return c ? c->n : 0; }

int gwr_calib_sample(const gwr_calib *c, int i, const char *const **names, gwr_value *const **values) {
    if (!c || i < 0 || i >= c->n) return 0;
    if (names) *names = (const char *const *)c->s[i].names;
    if (values) *values = c->s[i].values;
    return c->s[i].n;
}

int gwr_calib_fits(const gwr_calib *c, gwr_network *net, char *why, size_t size) {
    char tmp[256];
    if (!why) why = tmp, size = sizeof tmp;
    if (!c || !net) return snprintf(why, size, "NULL calibration set or network"), 0;
    if (c->n == 0) return snprintf(why, size, "no calibration samples"), 0;
    for (int i = 0; i < c->n; i++) {
        const struct gwr_calib_sample *s = &c->s[i];
        for (int k = 0; k < s->n; k++) {
            gwr_tensor *t = NULL;
            for (int j = 0; !t && j < gwr_network_num_inputs(net); j++)
                if (!strcmp(gwr_tensor_name(gwr_network_input(net, j)), s->names[k])) t = gwr_network_input(net, j);
            if (!t) return snprintf(why, size, "sample %d: the model has no input '%s'", i, s->names[k]), 0;
            char w[160];
            if (!gwr_value_fits(t, s->values[k], w, sizeof w))
                return snprintf(why, size, "sample %d: input '%s': %s", i, s->names[k], w), 0;
        }
        for (int j = 0; j < gwr_network_num_inputs(net); j++) {
            gwr_tensor *t = gwr_network_input(net, j);
            int found = gwr_tensor_default(t) != NULL;
            for (int k = 0; !found && k < s->n; k++) found = !strcmp(gwr_tensor_name(t), s->names[k]);
            if (!found) return snprintf(why, size, "sample %d: input '%s' is missing", i, gwr_tensor_name(t)), 0;
        }
    }
    return 1;
}

const gwr_calib *gwr_q_calib_or_random(gwr_network *net, const gwr_calib *given, int nrandom, gwr_calib **owned) {
    *owned = NULL;
    char why[320];
    if (given) {
        if (!gwr_calib_fits(given, net, why, sizeof why)) {
            gwr_ir_error(net, GWR_ERR_INVALID_ARG, "calibration: %s", why);
            return NULL;
        }
        return given;
    }
    if (!(*owned = gwr_calib_random(net, nrandom, NULL))) {
        gwr_ir_error(net, GWR_ERR_INVALID_ARG, "random calibration inputs: %s", gwr_last_errmsg());
        return NULL;
    }
    return *owned;
}
