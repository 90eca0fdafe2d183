/* analysis.c - the analysis manager: offers every live layer, in network
 * order, to the analyzers that root on it and hands each match to
 * analyze. A listener on the network catches an analyzer that changes it. */
#include <stdlib.h>
#include <string.h>

#include "rewrite/rewrite_internal.h"

struct gwr_analysis_manager {
    rw_table table;
    int running;
    char errmsg[GWR_ERRMSG_MAX];
};

gwr_analysis_manager *gwr_analysis_manager_new(void) {
    gwr_analysis_manager *m = gwr_calloc(1, sizeof *m);
    if (!m) gwr_set_last_error(GWR_ERR_NOMEM, "out of memory");
    return m;
}

void gwr_analysis_manager_free(gwr_analysis_manager *m) {
    if (!m) return;
    if (m->running) { /* from one of its own callbacks: refused */
        gwr_fmt_error(m->errmsg, GWR_ERR_STATE, "gwr_analysis_manager_free: the manager is running");
        return;
    }
    rw_table_free(&m->table);
    gwr_free(m);
}

const char *gwr_analysis_manager_errmsg(const gwr_analysis_manager *m) { return m ? m->errmsg : ""; }

gwr_status gwr_analysis_manager_add(gwr_analysis_manager *m, const char *label, const gwr_pattern_analyzer *p,
                                    int benefit) {
    if (!m) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_analysis_manager_add: NULL manager");
    if (m->running) return gwr_fmt_error(m->errmsg, GWR_ERR_STATE, "gwr_analysis_manager_add: the manager is running");
    if (!p || !p->analyze)
        return gwr_fmt_error(m->errmsg, GWR_ERR_INVALID_ARG, "analyzer '%s': needs an analyze callback",
                             label ? label : "?");
    if (!p->root_classes && !(p->root_ops && p->root_ops[0]))
        return gwr_fmt_error(m->errmsg, GWR_ERR_INVALID_ARG,
                             "analyzer '%s': root classes (or root ops) are required (GWR_ROOT_ANY for every layer)",
                             label ? label : "?");
    rw_pattern *r;
    gwr_status s = rw_table_add(&m->table, m->errmsg, "gwr_analysis_manager_add", label, p->name, p->root_classes,
                                p->root_ops, benefit, &r);
    if (s) return s;
    r->an = *p;
    r->an.name = r->name;
    r->an.root_ops = rw_pattern_ops(r);
    return GWR_OK;
}

const gwr_pattern_analyzer *gwr_analysis_manager_get(const gwr_analysis_manager *m, const char *label) {
    rw_pattern *p = m ? rw_table_find(&m->table, label) : NULL;
    return p ? &p->an : NULL;
}

int gwr_analysis_manager_count(const gwr_analysis_manager *m) { return m ? (int)m->table.n : 0; }

const char *gwr_analysis_manager_label(const gwr_analysis_manager *m, int i) {
    rw_pattern *p = rw_table_at(m ? &m->table : NULL, i);
    return p ? p->label : NULL;
}

gwr_status gwr_analysis_manager_stats(const gwr_analysis_manager *m, int i, gwr_pattern_stats *out) {
    rw_pattern *p = rw_table_at(m ? &m->table : NULL, i);
    if (!p || !out) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_analysis_manager_stats: bad argument");
    *out = p->stats;
    return GWR_OK;
}

/* Listener callbacks: any change bumps the counter in ctx. */
static void on_layer(void *ctx, gwr_layer *l) {
    (void)l;
    ++*(int64_t *)ctx;
}
static void on_tensor(void *ctx, gwr_tensor *a, gwr_tensor *b) {
    (void)a, (void)b;
    ++*(int64_t *)ctx;
}
static void on_tmod(void *ctx, gwr_tensor *t) {
    (void)t;
    ++*(int64_t *)ctx;
}
static void on_input(void *ctx, gwr_layer *l, int s, gwr_tensor *t) {
    (void)l, (void)s, (void)t;
    ++*(int64_t *)ctx;
}

gwr_status gwr_analysis_manager_analyze(gwr_analysis_manager *m, gwr_network *net, const gwr_args *args) {
    if (!m) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_analysis_manager_analyze: NULL manager");
    if (m->running) return gwr_fmt_error(m->errmsg, GWR_ERR_STATE, "gwr_analysis_manager_analyze: already running");
    if (!net) return gwr_fmt_error(m->errmsg, GWR_ERR_INVALID_ARG, "gwr_analysis_manager_analyze: NULL network");
    m->errmsg[0] = 0;
    rw_table_reset_stats(&m->table);
    gwr_status s = rw_table_freeze(&m->table, m->errmsg);
    if (s) return s;
    int64_t changes = 0;
    gwr_listener ls = {.layer_added = on_layer,
                       .layer_removed = on_layer,
                       .tensor_replaced = on_tensor,
                       .input_changed = on_input,
                       .layer_modified = on_layer,
                       .tensor_modified = on_tmod,
                       .ctx = &changes};
    int id = gwr_network_add_listener(net, &ls);
    if (id < 0) {
        rw_table_thaw(&m->table);
        return gwr_fmt_error(m->errmsg, GWR_ERR_NOMEM, "cannot listen to the network: %s", gwr_network_errmsg(net));
    }
    if (net->driven) {
        gwr_network_remove_listener(net, id);
        rw_table_thaw(&m->table);
        return gwr_fmt_error(m->errmsg, GWR_ERR_STATE, "network '%s' is being rewritten or analyzed", net->name);
    }
    m->running = 1;
    gwr_ir_network_set_driven(net, 1);
    gwr_rewrite_ctx c = {.net = net, .args = args, .analyzing = 1};
    for (int64_t i = 0; i < net->nlayers && !s; i++) {
        gwr_layer *l = net->layers[i];
        if (l->flags & LF_REMOVED) continue;
        rw_pattern *const *cands = rw_candidates(&m->table, l);
        if (!cands) {
            s = gwr_fmt_error(m->errmsg, GWR_ERR_NOMEM, "out of memory");
            break;
        }
        for (; *cands && !s; cands++) {
            rw_pattern *p = *cands;
            rw_ctx_begin(&c, p, l);
            p->stats.attempts++;
            if (gwr_rewrite_ctx_add_match(&c, l)) {
                s = gwr_fmt_error(m->errmsg, GWR_ERR_NOMEM, "out of memory");
                break;
            }
            int ret = p->an.match ? p->an.match(&c, l) : 1;
            gwr_status as = GWR_OK;
            if (ret > 0) {
                p->stats.matches++;
                as = p->an.analyze(&c, c.match, (int)c.nmatch);
                ret = as ? -1 : 1;
            }
            if (ret < 0) {
                gwr_status fs;
                const char *msg = rw_ctx_failure(&c, as, &fs);
                s = gwr_fmt_error(m->errmsg, fs, "analyzer '%s' failed at layer '%s' (%s): %s", p->label, l->name,
                                  l->info->name, msg);
            } else if (changes) {
                s = gwr_fmt_error(m->errmsg, GWR_ERR_STATE, "analyzer '%s' changed the network at layer '%s' (%s)",
                                  p->label, l->name, l->info->name);
            }
        }
    }
    m->running = 0;
    gwr_ir_network_set_driven(net, 0);
    gwr_free(c.match);
    gwr_network_remove_listener(net, id);
    rw_table_thaw(&m->table);
    return s;
}
