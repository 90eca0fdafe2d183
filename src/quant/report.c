/* report.c - gwr_quant_report: what gwr_precision and gwr_quantize did,
 * layer by layer, with the measured errors when asked. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant_internal.h"

gwr_quant_report *gwr_q_report_new(void) { return gwr_calloc(1, sizeof(gwr_quant_report)); }

int gwr_q_report_add(gwr_quant_report *r, const char *layer, const char *op, const char *what, double rel_error,
                     double cosine) {
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 16;
        gwr_quant_entry *e = gwr_realloc(r->e, (size_t)cap * sizeof *e);
        if (!e) return -1;
        r->e = e, r->cap = cap;
    }
    gwr_quant_entry *e = &r->e[r->n];
    e->layer = gwr_strdup(layer ? layer : "");
    e->op = gwr_strdup(op ? op : "");
    e->what = gwr_strdup(what ? what : "");
    e->rel_error = rel_error, e->cosine = cosine;
    if (!e->layer || !e->op || !e->what) {
        gwr_free((char *)e->layer), gwr_free((char *)e->op), gwr_free((char *)e->what);
        return -1;
    }
    if (rel_error >= 0) r->measured = 1;
    r->n++;
    return 0;
}

int gwr_quant_report_count(const gwr_quant_report *r) { return r ? r->n : 0; }

const gwr_quant_entry *gwr_quant_report_entry(const gwr_quant_report *r, int i) {
    return r && i >= 0 && i < r->n ? &r->e[i] : NULL;
}

int64_t gwr_quant_report_weight_bytes(const gwr_quant_report *r, int after) {
    return r ? (after ? r->bytes_after : r->bytes_before) : 0;
}

void gwr_quant_report_free(gwr_quant_report *r) {
    if (!r) return;
    for (int i = 0; i < r->n; i++)
        gwr_free((char *)r->e[i].layer), gwr_free((char *)r->e[i].op), gwr_free((char *)r->e[i].what);
    gwr_free(r->e);
    gwr_free(r);
}

/* Worst error first; unmeasured entries after, in their order. */
static int by_error(const void *a, const void *b) {
    const gwr_quant_entry *x = *(const gwr_quant_entry *const *)a, *y = *(const gwr_quant_entry *const *)b;
    if ((x->rel_error < 0) != (y->rel_error < 0)) return x->rel_error < 0 ? 1 : -1;
    if (x->rel_error != y->rel_error) return x->rel_error > y->rel_error ? -1 : 1;
    return x < y ? -1 : x > y;
}

static void json_num(FILE *out, double v) {
    if (v < 0 || !isfinite(v)) fputs("null", out);
    else fprintf(out, "%.6g", v);
}

gwr_status gwr_quant_report_write(const gwr_quant_report *r, FILE *out, int json) {
    if (!r || !out) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_quant_report_write: NULL report or stream");
    const gwr_quant_entry **order = gwr_malloc(((size_t)r->n + 1) * sizeof *order);
    if (!order) return gwr_set_last_error(GWR_ERR_NOMEM, "gwr_quant_report_write: out of memory");
    for (int i = 0; i < r->n; i++) order[i] = &r->e[i];
    if (r->measured) qsort(order, (size_t)r->n, sizeof *order, by_error);
    if (json) {
        fprintf(out, "{\"weight_bytes_before\":%lld,\"weight_bytes_after\":%lld,\"layers\":[",
                (long long)r->bytes_before, (long long)r->bytes_after);
        for (int i = 0; i < r->n; i++) {
            fputs(i ? ",{\"layer\":" : "{\"layer\":", out);
            gwr_json_str(out, order[i]->layer, strlen(order[i]->layer));
            fputs(",\"op\":", out);
            gwr_json_str(out, order[i]->op, strlen(order[i]->op));
            fputs(",\"what\":", out);
            gwr_json_str(out, order[i]->what, strlen(order[i]->what));
            fputs(",\"rel_error\":", out);
            json_num(out, order[i]->rel_error);
            fputs(",\"cosine\":", out);
            json_num(out, order[i]->cosine);
            fputs("}", out);
        }
        fputs("]}\n", out);
    } else {
        if (r->bytes_before)
            fprintf(out, "weights: %lld -> %lld bytes (%.3fx)\n", (long long)r->bytes_before, (long long)r->bytes_after,
                    (double)r->bytes_after / (double)r->bytes_before);
        for (int i = 0; i < r->n; i++) {
            const gwr_quant_entry *e = order[i];
            if (e->rel_error >= 0)
                fprintf(out, "%-40s %-20s rel.err %.3e  cos %.6f  %s\n", e->layer, e->op, e->rel_error, e->cosine, e->what);
            else
                fprintf(out, "%-40s %-20s %s\n", e->layer, e->op, e->what);
        }
    }
    gwr_free(order);
    return ferror(out) ? gwr_set_last_error(GWR_ERR_IO, "gwr_quant_report_write: write error") : GWR_OK;
}
