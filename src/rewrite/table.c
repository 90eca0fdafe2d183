/* table.c - the pattern table of both managers: copies of the patterns in
 * priority order, and the dispatch index built when a run starts, so that
 * a layer is offered only the patterns that can root on it, in O(1). Also
 * the gwr_rewrite_ctx calls a callback makes. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rewrite/rewrite_internal.h"

double rw_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void pattern_free(rw_pattern *p) {
    if (!p) return;
    gwr_free(p->label);
    gwr_free(p->name);
    for (int i = 0; i < p->nops; i++) {
        gwr_free(p->ops[i]);
        gwr_free(p->op_domain[i]);
        gwr_free(p->op_name[i]);
    }
    gwr_free(p->ops);
    gwr_free(p->op_domain);
    gwr_free(p->op_name);
    gwr_free(p->op_id);
    gwr_free(p);
}

/* "Op" or "domain::Op" into its parts; -1 when malformed. */
static int parse_op(const char *s, char **domain, char **name) {
    const char *sep = strstr(s, "::");
    const char *n = sep ? sep + 2 : s;
    if (!*n || strstr(n, "::") || (sep && sep == s)) return -1;
    *domain = sep ? gwr_memdup(s, (size_t)(sep - s) + 1) : gwr_strdup("");
    if (*domain && sep) (*domain)[sep - s] = 0;
    *name = gwr_strdup(n);
    return *domain && *name ? 0 : -2;
}

rw_pattern *rw_table_find(const rw_table *t, const char *label) {
    for (int64_t i = 0; label && i < t->n; i++)
        if (!strcmp(t->v[i]->label, label)) return t->v[i];
    return NULL;
}

rw_pattern *rw_table_at(const rw_table *t, int i) { return t && i >= 0 && i < t->n ? t->v[i] : NULL; }

void rw_table_reset_stats(rw_table *t) {
    for (int64_t i = 0; i < t->n; i++) memset(&t->v[i]->stats, 0, sizeof t->v[i]->stats);
}

gwr_status rw_table_add(rw_table *t, char *errbuf, const char *what, const char *label, const char *name,
                        uint64_t classes, const char *const *root_ops, int benefit, rw_pattern **out) {
    if (!label || !*label) return gwr_fmt_error(errbuf, GWR_ERR_INVALID_ARG, "%s: a pattern needs a label", what);
    if (rw_table_find(t, label))
        return gwr_fmt_error(errbuf, GWR_ERR_DUPLICATE, "%s: label '%s' is already taken", what, label);
    rw_pattern *p = gwr_calloc(1, sizeof *p);
    if (!p) return gwr_fmt_error(errbuf, GWR_ERR_NOMEM, "out of memory");
    int nops = 0;
    while (root_ops && root_ops[nops]) nops++;
    p->label = gwr_strdup(label);
    p->name = gwr_strdup(name && *name ? name : label);
    p->ops = gwr_calloc((size_t)nops + 1, sizeof *p->ops);
    p->op_domain = gwr_calloc((size_t)nops + 1, sizeof *p->op_domain);
    p->op_name = gwr_calloc((size_t)nops + 1, sizeof *p->op_name);
    p->op_id = gwr_calloc((size_t)nops + 1, sizeof *p->op_id);
    if (!p->label || !p->name || !p->ops || !p->op_domain || !p->op_name || !p->op_id) goto nomem;
    for (int i = 0; i < nops; i++) {
        p->nops = i + 1;
        int r = parse_op(root_ops[i], &p->op_domain[i], &p->op_name[i]);
        if (r == -1) {
            gwr_status s = gwr_fmt_error(errbuf, GWR_ERR_INVALID_ARG,
                                         "%s: pattern '%s': root op '%s' is not \"Op\" or \"domain::Op\"", what,
                                         label, root_ops[i]);
            pattern_free(p);
            return s;
        }
        if (r || !(p->ops[i] = gwr_strdup(root_ops[i]))) goto nomem;
        p->op_id[i] = gwr_op_lookup(p->op_domain[i], p->op_name[i]);
    }
    p->classes = classes;
    p->any = !classes && !nops;
    p->benefit = benefit;
    p->order = t->next_order++;
    /* Insert after every pattern of higher or equal benefit. */
    if (gwr_grow((void **)&t->v, sizeof *t->v, &t->cap, t->n + 1)) goto nomem;
    int64_t at = t->n;
    while (at > 0 && t->v[at - 1]->benefit < benefit) at--;
    memmove(&t->v[at + 1], &t->v[at], (size_t)(t->n - at) * sizeof *t->v);
    t->v[at] = p;
    t->n++;
    for (int64_t i = 0; i < t->n; i++) t->v[i]->index = (int)i;
    rw_table_thaw(t);
    *out = p;
    return GWR_OK;
nomem:
    pattern_free(p);
    return gwr_fmt_error(errbuf, GWR_ERR_NOMEM, "out of memory");
}

static int op_matches(const rw_pattern *p, gwr_op_id id, const gwr_op_info *info) {
    for (int i = 0; i < p->nops; i++) {
        if (id != GWR_OP_CUSTOM ? p->op_id[i] == id
                                : p->op_id[i] == GWR_OP_CUSTOM && !strcmp(p->op_name[i], info->name) &&
                                      !strcmp(p->op_domain[i], info->domain))
            return 1;
    }
    return 0;
}

/* The patterns (priority order) that root on class cls or on the op. */
static rw_pattern **make_list(rw_table *t, int cls, gwr_op_id id, const gwr_op_info *info) {
    rw_pattern **l = gwr_calloc((size_t)t->n + 1, sizeof *l);
    if (!l) return NULL;
    int64_t k = 0;
    for (int64_t i = 0; i < t->n; i++) {
        rw_pattern *p = t->v[i];
        if (p->any || (cls >= 0 && cls < 64 && (p->classes >> cls & 1)) || ((id != GWR_OP_CUSTOM || info) && op_matches(p, id, info)))
            l[k++] = p;
    }
    /* Phase by phase (the driver offers one phase's at a time), each in
     * priority order: a stable insertion sort of a short list. */
    for (int64_t i = 1; i < k; i++) {
        rw_pattern *p = l[i];
        int64_t j = i;
        for (; j > 0 && l[j - 1]->phase > p->phase; j--) l[j] = l[j - 1];
        l[j] = p;
    }
    return l;
}

/* The phases of list l (sorted by phase) and where each starts. */
static rw_list_index index_list(rw_pattern *const *l) {
    rw_list_index x = {.phases = 0};
    int32_t n = 0;
    for (int ph = 0; ph < RW_MAX_PHASES; ph++) {
        x.start[ph] = n;
        for (; l[n] && l[n]->phase == ph; n++) x.phases |= (uint8_t)(1u << ph);
    }
    return x;
}

gwr_status rw_table_freeze(rw_table *t, char *errbuf) {
    if (t->frozen) return GWR_OK;
    for (int c = 0; c < GWR_LAYER_TYPE_COUNT; c++) {
        if (!(t->class_lists[c] = make_list(t, c, GWR_OP_CUSTOM, NULL))) goto nomem;
        t->class_index[c] = index_list(t->class_lists[c]);
    }
    t->has_custom_ops = 0;
    int named = 0;
    for (int64_t i = 0; i < t->n; i++)
        for (int k = 0; k < t->v[i]->nops; k++) {
            if (t->v[i]->op_id[k] == GWR_OP_CUSTOM) t->has_custom_ops = 1;
            else named = 1;
        }
    if (named) {
        if (!(t->op_lists = gwr_calloc(GWR_OP_COUNT, sizeof *t->op_lists)) ||
            !(t->op_index = gwr_calloc(GWR_OP_COUNT, sizeof *t->op_index)))
            goto nomem;
        for (int64_t i = 0; i < t->n; i++)
            for (int k = 0; k < t->v[i]->nops; k++) {
                gwr_op_id id = t->v[i]->op_id[k];
                if (id == GWR_OP_CUSTOM || t->op_lists[id]) continue;
                const gwr_op_info *info = gwr_op_info_get(id);
                if (!(t->op_lists[id] = make_list(t, (int)info->layer_type, id, NULL))) goto nomem;
                t->op_index[id] = index_list(t->op_lists[id]);
            }
    }
    t->frozen = 1;
    return GWR_OK;
nomem:
    rw_table_thaw(t);
    return gwr_fmt_error(errbuf, GWR_ERR_NOMEM, "out of memory");
}

rw_pattern *const *rw_custom_candidates(rw_table *t, const gwr_layer *l) {
    rw_pattern **list = gwr_ptrmap_get(&t->custom, l->info);
    if (list) return list;
    list = make_list(t, l->type, GWR_OP_CUSTOM, l->info);
    if (list && gwr_ptrmap_put(&t->custom, l->info, list)) {
        gwr_free(list);
        list = NULL;
    }
    return list;
}

void rw_table_thaw(rw_table *t) {
    for (int c = 0; c < GWR_LAYER_TYPE_COUNT; c++) {
        gwr_free(t->class_lists[c]);
        t->class_lists[c] = NULL;
    }
    if (t->op_lists)
        for (int i = 0; i < GWR_OP_COUNT; i++) gwr_free(t->op_lists[i]);
    gwr_free(t->op_lists);
    t->op_lists = NULL;
    gwr_free(t->op_index);
    t->op_index = NULL;
    for (int64_t i = 0; i < t->custom.cap; i++)
        if (t->custom.keys[i]) gwr_free(t->custom.vals[i]);
    gwr_ptrmap_free(&t->custom);
    memset(&t->custom, 0, sizeof t->custom);
    t->frozen = 0;
}

void rw_table_free(rw_table *t) {
    rw_table_thaw(t);
    for (int64_t i = 0; i < t->n; i++) pattern_free(t->v[i]);
    gwr_free(t->v);
    memset(t, 0, sizeof *t);
}

/* ---- gwr_rewrite_ctx ---- */

const gwr_args *gwr_rewrite_ctx_args(const gwr_rewrite_ctx *c) { return c ? c->args : NULL; }
void *gwr_rewrite_ctx_user(const gwr_rewrite_ctx *c) {
    if (!c || !c->cur) return NULL;
    return c->analyzing ? c->cur->an.user : c->cur->rw.user;
}
const char *gwr_rewrite_ctx_label(const gwr_rewrite_ctx *c) { return c && c->cur ? c->cur->label : ""; }
gwr_network *gwr_rewrite_ctx_network(const gwr_rewrite_ctx *c) { return c ? c->net : NULL; }

int rw_ctx_wants_reason(const gwr_rewrite_ctx *c) { return c && c->want_reason; }

int gwr_rewrite_no_match(gwr_rewrite_ctx *c, const char *fmt, ...) {
    if (c && c->want_reason && fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->reason, sizeof c->reason, fmt, ap);
        va_end(ap);
    }
    return 0;
}

int gwr_rewrite_fail(gwr_rewrite_ctx *c, gwr_status s, const char *fmt, ...) {
    if (s == GWR_OK) s = GWR_ERR_STATE;
    if (c) {
        va_list ap;
        va_start(ap, fmt);
        gwr_vfmt_error(c->fail_msg, s, fmt ? fmt : "failed", ap);
        va_end(ap);
        c->failed = 1;
        c->fail_status = s;
    }
    return -(int)s;
}

gwr_status gwr_rewrite_ctx_add_match(gwr_rewrite_ctx *c, gwr_layer *l) {
    if (!c || !l) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_rewrite_ctx_add_match: NULL argument");
    if (!c->analyzing) return gwr_rewrite_fail(c, GWR_ERR_STATE, "add_match is for analyzers"), GWR_ERR_STATE;
    if (gwr_grow((void **)&c->match, sizeof *c->match, &c->match_cap, c->nmatch + 1))
        return gwr_rewrite_fail(c, GWR_ERR_NOMEM, "out of memory"), GWR_ERR_NOMEM;
    c->match[c->nmatch++] = l;
    return GWR_OK;
}

const char *rw_ctx_failure(const gwr_rewrite_ctx *c, gwr_status returned, gwr_status *status) {
    if (c->failed) {
        *status = c->fail_status;
        return c->fail_msg;
    }
    /* A status a rewrite or analyze callback returned; a bare negative int
     * from match is GWR_ERR_STATE. */
    *status = returned ? returned : GWR_ERR_STATE;
    const char *m = gwr_network_errmsg(c->net);
    return *m ? m : "the callback reported a failure without a message";
}
