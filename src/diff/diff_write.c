/* diff_write.c - gwr_diff_write: the text summary and the JSON object that
 * `gwr diff` prints (docs/cli.md, docs/api.md). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "diff/diff_internal.h"

/* How many layer names a provenance line lists before "... (N more)". */
#define FROM_SHOWN 8

static const char *const kind_name[] = {"same", "changed", "removed", "added"};

/* The type text of weight layer l's output. */
static void wtype(const gwr_layer *l, char *buf, size_t size) { gwr_tensor_type_str(&gwr_ir_outputs(l)[0], buf, size); }

/* ---- text ---- */

static void text_prov(const gwr_diff *d, const gwr_df_prov *p, FILE *out) {
    fprintf(out, " made by %s from ", p->rule);
    for (int64_t k = 0; k < p->nfrom && k < FROM_SHOWN; k++)
        fprintf(out, "%s%s", k ? ", " : "", d->a->layers[p->from[k]]->name);
    if (p->nfrom > FROM_SHOWN) fprintf(out, ", ... (%" PRId64 " more)", p->nfrom - FROM_SHOWN);
}

static void text_layers(const gwr_diff *d, FILE *out) {
    if (d->counts[GWR_DIFF_ADDED]) fprintf(out, "added (%" PRId64 "):\n", d->counts[GWR_DIFF_ADDED]);
    for (int64_t j = 0; j < d->nb; j++) {
        const gwr_layer *l = d->b->layers[j];
        if (d->kind_b[j] != GWR_DIFF_ADDED || (l->flags & LF_REMOVED) || gwr_df_is_weight(l)) continue;
        fprintf(out, "  + %s (%s)", l->name, l->info->name);
        if (d->prov_b[j] >= 0) text_prov(d, &d->prov[d->prov_b[j]], out);
        else fprintf(out, " %s", d->why_b[j]);
        fputc('\n', out);
    }
    if (d->counts[GWR_DIFF_REMOVED]) fprintf(out, "removed (%" PRId64 "):\n", d->counts[GWR_DIFF_REMOVED]);
    for (int64_t i = 0; i < d->na; i++) {
        const gwr_layer *l = d->a->layers[i];
        if (d->kind_a[i] != GWR_DIFF_REMOVED || (l->flags & LF_REMOVED) || gwr_df_is_weight(l)) continue;
        fprintf(out, "  - %s (%s) %s\n", l->name, l->info->name, d->why_a[i]);
    }
    if (d->counts[GWR_DIFF_CHANGED]) fprintf(out, "changed (%" PRId64 "):\n", d->counts[GWR_DIFF_CHANGED]);
    for (int64_t j = 0; j < d->nb; j++) {
        const gwr_layer *l = d->b->layers[j];
        if (d->kind_b[j] != GWR_DIFF_CHANGED || gwr_df_is_weight(l)) continue;
        const gwr_layer *la = d->a->layers[d->match_b[j]];
        fprintf(out, "  ~ %s (%s)", l->name, l->info->name);
        if (strcmp(la->name, l->name) || strcmp(la->info->name, l->info->name))
            fprintf(out, " was %s (%s)", la->name, la->info->name);
        fprintf(out, ": %s\n", d->why_b[j]);
    }
}

static void text_weights(const gwr_diff *d, FILE *out) {
    if (!d->nw) return;
    fprintf(out, "weights (%" PRId64 "):\n", d->nw);
    for (int64_t k = 0; k < d->nw; k++) {
        const gwr_df_weight *w = &d->w[k];
        const gwr_layer *la = w->ia >= 0 ? d->a->layers[w->ia] : NULL, *lb = w->ib >= 0 ? d->b->layers[w->ib] : NULL;
        char ta[200], tb[200];
        if (la) wtype(la, ta, sizeof ta);
        if (lb) wtype(lb, tb, sizeof tb);
        const char *name = gwr_ir_outputs(lb ? lb : la)[0].name;
        if (!la) fprintf(out, "  + %s %s added\n", name, tb);
        else if (!lb) fprintf(out, "  - %s %s removed\n", name, ta);
        else if (!strcmp(w->why, "values") && w->nbad)
            fprintf(out, "  ~ %s %s: %" PRId64 " value%s beyond tolerance, max abs diff %g\n", name, tb, w->nbad,
                    w->nbad == 1 ? "" : "s", w->max_abs);
        else if (!strcmp(w->why, "values")) fprintf(out, "  ~ %s %s: values\n", name, tb);
        else fprintf(out, "  ~ %s: %s %s -> %s\n", name, w->why, ta, tb);
    }
}

static void text_io(const gwr_diff *d, FILE *out) {
    if (!d->nio) return;
    fprintf(out, "interface (%" PRId64 "):\n", d->nio);
    for (int64_t k = 0; k < d->nio; k++) {
        const gwr_df_io *e = &d->io[k];
        const char *io = e->output ? "output" : "input";
        if (!strcmp(e->change, "added")) fprintf(out, "  + %s %s %s\n", io, e->name, e->tb);
        else if (!strcmp(e->change, "removed")) fprintf(out, "  - %s %s %s\n", io, e->name, e->ta);
        else if (!strcmp(e->change, "moved"))
            fprintf(out, "  ~ %s %s: moved from position %" PRId64 " to %" PRId64 "\n", io, e->name, e->pa, e->pb);
        else if (!strcmp(e->change, "default")) fprintf(out, "  ~ %s %s: default value\n", io, e->name);
        else fprintf(out, "  ~ %s %s: %s -> %s\n", io, e->name, e->ta, e->tb);
    }
}

static void write_text(const gwr_diff *d, FILE *out) {
    fprintf(out, "layers: %" PRId64 " same, %" PRId64 " changed, %" PRId64 " removed, %" PRId64 " added\n",
            d->counts[GWR_DIFF_SAME], d->counts[GWR_DIFF_CHANGED], d->counts[GWR_DIFF_REMOVED],
            d->counts[GWR_DIFF_ADDED]);
    if (gwr_diff_identical(d)) {
        fprintf(out, "identical\n");
        return;
    }
    text_io(d, out);
    text_layers(d, out);
    text_weights(d, out);
}

/* ---- JSON ---- */

static void jstr(FILE *out, const char *s) { gwr_json_str(out, s, strlen(s)); }

static void jnum(FILE *out, double v) {
    if (isfinite(v)) fprintf(out, "%.9g", v);
    else fputs("null", out);
}

static void json_layer(const gwr_diff *d, FILE *out, int side_b, int64_t k, int *first) {
    const gwr_layer *l = side_b ? d->b->layers[k] : d->a->layers[k];
    int64_t m = side_b ? d->match_b[k] : d->match_a[k];
    int kind = side_b ? d->kind_b[k] : d->kind_a[k];
    fprintf(out, "%s\n    {\"kind\":\"%s\",\"name\":", *first ? "" : ",", kind_name[kind]);
    *first = 0;
    jstr(out, l->name);
    fputs(",\"op\":", out);
    jstr(out, l->info->name);
    fputs(",\"domain\":", out);
    jstr(out, l->info->domain);
    fputs(",\"match\":", out);
    if (m >= 0) jstr(out, (side_b ? d->a->layers[m] : d->b->layers[m])->name);
    else fputs("null", out);
    fputs(",\"why\":", out);
    jstr(out, side_b ? d->why_b[k] : d->why_a[k]);
    const gwr_df_prov *p = side_b && d->prov_b[k] >= 0 ? &d->prov[d->prov_b[k]]
                           : !side_b && d->prov_a[k] >= 0 ? &d->prov[d->prov_a[k]] : NULL;
    if (p && side_b) {
        fputs(",\"rule\":", out);
        jstr(out, p->rule);
        fputs(",\"from\":[", out);
        for (int64_t f = 0; f < p->nfrom; f++) {
            if (f) fputc(',', out);
            jstr(out, d->a->layers[p->from[f]]->name);
        }
        fputc(']', out);
    } else if (p) {
        fputs(",\"rule\":", out);
        jstr(out, p->rule);
        fputs(",\"by\":", out);
        jstr(out, d->b->layers[p->b]->name);
    }
    fputc('}', out);
}

static void json_layers(const gwr_diff *d, FILE *out) {
    int first = 1;
    fputs("  \"layers\": [", out);
    for (int64_t j = 0; j < d->nb; j++) {
        const gwr_layer *l = d->b->layers[j];
        if (d->kind_b[j] == GWR_DIFF_ADDED && !(l->flags & LF_REMOVED) && !gwr_df_is_weight(l))
            json_layer(d, out, 1, j, &first);
    }
    for (int64_t i = 0; i < d->na; i++) {
        const gwr_layer *l = d->a->layers[i];
        if (d->kind_a[i] == GWR_DIFF_REMOVED && !(l->flags & LF_REMOVED) && !gwr_df_is_weight(l))
            json_layer(d, out, 0, i, &first);
    }
    for (int64_t j = 0; j < d->nb; j++)
        if (d->kind_b[j] == GWR_DIFF_CHANGED && !gwr_df_is_weight(d->b->layers[j])) json_layer(d, out, 1, j, &first);
    fputs(first ? "],\n" : "\n  ],\n", out);
}

static void json_io(const gwr_diff *d, FILE *out) {
    fputs("  \"interface\": {", out);
    for (int output = 0; output < 2; output++) {
        int first = 1;
        fprintf(out, "%s\"%s\": [", output ? ", " : "", output ? "outputs" : "inputs");
        for (int64_t k = 0; k < d->nio; k++) {
            const gwr_df_io *e = &d->io[k];
            if (e->output != output) continue;
            fprintf(out, "%s{\"name\":", first ? "" : ", ");
            first = 0;
            jstr(out, e->name);
            fprintf(out, ",\"change\":\"%s\",\"a\":", e->change);
            if (e->ta) jstr(out, e->ta);
            else fputs("null", out);
            fputs(",\"b\":", out);
            if (e->tb) jstr(out, e->tb);
            else fputs("null", out);
            fprintf(out, ",\"position_a\":%" PRId64 ",\"position_b\":%" PRId64 "}", e->pa, e->pb);
        }
        fputc(']', out);
    }
    fputs("},\n", out);
}

static void json_weights(const gwr_diff *d, FILE *out) {
    fputs("  \"weights\": [", out);
    for (int64_t k = 0; k < d->nw; k++) {
        const gwr_df_weight *w = &d->w[k];
        const gwr_layer *la = w->ia >= 0 ? d->a->layers[w->ia] : NULL, *lb = w->ib >= 0 ? d->b->layers[w->ib] : NULL;
        char t[200];
        fprintf(out, "%s\n    {\"name\":", k ? "," : "");
        jstr(out, gwr_ir_outputs(lb ? lb : la)[0].name);
        fprintf(out, ",\"change\":\"%s\",\"a\":", w->why);
        if (la) wtype(la, t, sizeof t), jstr(out, t);
        else fputs("null", out);
        fputs(",\"b\":", out);
        if (lb) wtype(lb, t, sizeof t), jstr(out, t);
        else fputs("null", out);
        fputs(",\"max_abs\":", out);
        jnum(out, w->max_abs);
        fprintf(out, ",\"beyond\":%" PRId64 "}", w->nbad);
    }
    fputs(d->nw ? "\n  ]\n" : "]\n", out);
}

static void write_json(const gwr_diff *d, FILE *out) {
    fprintf(out, "{\n  \"identical\": %s,\n", gwr_diff_identical(d) ? "true" : "false");
    fprintf(out, "  \"counts\": {\"same\": %" PRId64 ", \"changed\": %" PRId64 ", \"removed\": %" PRId64
                 ", \"added\": %" PRId64 ", \"weights\": %" PRId64 "},\n",
            d->counts[GWR_DIFF_SAME], d->counts[GWR_DIFF_CHANGED], d->counts[GWR_DIFF_REMOVED],
            d->counts[GWR_DIFF_ADDED], d->nw);
    fprintf(out, "  \"tolerance\": {\"rtol\": ");
    jnum(out, d->o.rtol);
    fputs(", \"atol\": ", out);
    jnum(out, d->o.atol);
    fputs("},\n", out);
    json_io(d, out);
    json_layers(d, out);
    json_weights(d, out);
    fputs("}\n", out);
}

gwr_status gwr_diff_write(const gwr_diff *d, FILE *out, int json) {
    if (!d || !out) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_diff_write: NULL argument");
    if (json) write_json(d, out);
    else write_text(d, out);
    if (fflush(out) || ferror(out)) return gwr_set_last_error(GWR_ERR_IO, "gwr_diff_write: write failed");
    return GWR_OK;
}
