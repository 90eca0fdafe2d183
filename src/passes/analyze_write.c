/* analyze_write.c - gwr_analysis_write: a report as text or as one JSON
 * object. Names print safely: in text, control characters, backslashes
 * and bytes that are not UTF-8 are escaped; in JSON, strings are escaped
 * and bytes that are not UTF-8 become U+FFFD, so the output always
 * parses. */
#include <stdlib.h>
#include <string.h>

#include "passes/analyze_internal.h"

/* Prints str escaped; returns the columns it took (a UTF-8 character is one). */
static int text_str(FILE *out, const char *str) {
    const unsigned char *s = (const unsigned char *)(str ? str : "");
    size_t len = strlen((const char *)s);
    int cols = 0;
    for (size_t i = 0; i < len;) {
        size_t n = gwr_utf8_len((const char *)s + i, len - i);
        if (s[i] == '\\') cols += fputs("\\\\", out) >= 0 ? 2 : 0;
        else if (s[i] == '\n') cols += fputs("\\n", out) >= 0 ? 2 : 0;
        else if (s[i] < 0x20 || s[i] == 0x7f || n == 0) cols += fprintf(out, "\\x%02x", s[i]) > 0 ? 4 : 0;
        else {
            fwrite(s + i, 1, n, out);
            cols++;
            i += n;
            continue;
        }
        i++;
    }
    return cols;
}

static void json_str(FILE *out, const char *str) { gwr_json_str(out, str ? str : "", str ? strlen(str) : 0); }

/* "4240 bytes (4.1 KiB)" */
static void human_bytes(FILE *out, int64_t b) {
    static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    fprintf(out, "%lld bytes", (long long)b);
    if (b < 1024) return;
    double v = (double)b / 1024;
    int u = 0;
    while (v >= 1024 && u < 5) v /= 1024, u++;
    fprintf(out, " (%.1f %s)", v, unit[u]);
}

/* "123456789 (123.5 MFLOP)" */
static void human_flops(FILE *out, int64_t f) {
    static const char *const unit[] = {"KFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP"};
    fprintf(out, "%lld", (long long)f);
    if (f < 1000) return;
    double v = (double)f / 1000;
    int u = 0;
    while (v >= 1000 && u < 5) v /= 1000, u++;
    fprintf(out, " (%.1f %s)", v, unit[u]);
}

static int op_key(FILE *out, const char *domain, const char *op) {
    int cols = 0;
    if (*domain) {
        cols += text_str(out, domain);
        fputs("::", out);
        cols += 2;
    }
    return cols + text_str(out, op);
}

/* The indices of the layers to list; *n in: wanted (< 0 all), out: got.
 * NULL on allocation failure. */
static int64_t *top_list(const gwr_analysis *a, int64_t *n) {
    int64_t want = *n < 0 || *n > a->ncost ? a->ncost : *n;
    int64_t *idx = gwr_malloc((size_t)(want ? want : 1) * sizeof *idx);
    if (!idx) return NULL;
    if ((*n = gwr_analysis_top_layers(a, want, idx)) < 0) {
        gwr_free(idx);
        return NULL;
    }
    return idx;
}

static void write_text(const gwr_analysis *a, FILE *out, const int64_t *idx, int64_t ntop) {
    const gwr_cost_totals *t = &a->totals;
    const gwr_param_stats *p = &a->params;
    fputs("network:        ", out);
    text_str(out, gwr_network_name(a->net));
    fprintf(out, "\nlayers:         %lld (%lld with every dim known or bound)\n", (long long)t->layers,
            (long long)t->known_layers);
    fprintf(out, "ops:            %lld distinct\n", (long long)a->nops);
    for (int64_t i = 0; i < a->nops; i++) {
        fprintf(out, "  %8lld  ", (long long)a->ops[i].count);
        op_key(out, a->ops[i].domain, a->ops[i].op);
        fputc('\n', out);
    }
    fprintf(out, "parameters:     %lld tensor%s, %lld elements, ", (long long)p->tensors, p->tensors == 1 ? "" : "s",
            (long long)p->elements);
    human_bytes(out, p->bytes);
    fputc('\n', out);
    if (p->shared_tensors) {
        fprintf(out, "shared data:    %lld tensor%s reuse%s data counted already (", (long long)p->shared_tensors,
                p->shared_tensors == 1 ? "" : "s", p->shared_tensors == 1 ? "s" : "");
        human_bytes(out, p->shared_bytes);
        fputs(" not counted again)\n", out);
    }
    fputs("FLOPs:          ", out);
    human_flops(out, t->flops);
    fputs("\nbytes moved:    ", out);
    human_bytes(out, an_add(t->bytes_read, t->bytes_written));
    fputs(": read ", out);
    human_bytes(out, t->bytes_read);
    fputs(", written ", out);
    human_bytes(out, t->bytes_written);
    fputc('\n', out);
    if (t->body_layers) {
        fprintf(out, "subgraphs:      %lld layer%s in If/Loop/Scan bodies, ", (long long)t->body_layers,
                t->body_layers == 1 ? "" : "s");
        human_flops(out, t->body_flops);
        fputs(" FLOPs of them in the totals (both If branches, Loop bodies times a constant trip count)", out);
        if (t->loops_counted_once)
            fprintf(out, "; %lld loop%s without a constant trip count counted once", (long long)t->loops_counted_once,
                    t->loops_counted_once == 1 ? "" : "s");
        fputc('\n', out);
    }
    if (ntop > 0) {
        fprintf(out, "top %lld layer%s by FLOPs:\n", (long long)ntop, ntop == 1 ? "" : "s");
        fprintf(out, "  %6s  %-28s %-20s %16s %14s %14s  %s\n", "#", "layer", "op", "FLOPs", "bytes read",
                "bytes written", "dims");
        for (int64_t i = 0; i < ntop; i++) {
            const gwr_layer_cost *r = &a->cost[idx[i]];
            fprintf(out, "  %6lld  ", (long long)idx[i]);
            int w = text_str(out, gwr_layer_name(r->layer));
            fprintf(out, "%*s ", w < 28 ? 28 - w : 0, "");
            w = op_key(out, gwr_layer_domain(r->layer), gwr_layer_op(r->layer));
            fprintf(out, "%*s %16lld %14lld %14lld  %s\n", w < 20 ? 20 - w : 0, "", (long long)r->flops,
                    (long long)r->bytes_read, (long long)r->bytes_written, r->known ? "known" : "assumed");
        }
    }
    const gwr_memory_stats *m = &a->mem;
    fputs("peak memory:    ", out);
    human_bytes(out, m->peak_bytes);
    if (m->peak_layer) {
        fputs(" at layer '", out);
        text_str(out, gwr_layer_name(m->peak_layer));
        fprintf(out, "' (position %lld of %lld, %s order)", (long long)m->peak_index, (long long)t->layers,
                m->network_order ? "network" : "topological");
    }
    fputs("; weights apart: ", out);
    human_bytes(out, m->weight_bytes);
    fputs("\nbound dims:     ", out);
    for (int64_t i = 0; i < a->dims.nbind; i++) {
        if (i) fputs(", ", out);
        text_str(out, a->dims.bind[i].name);
        fprintf(out, "=%lld", (long long)a->dims.bind[i].value);
    }
    if (!a->dims.nbind) fputs("(none)", out);
    fputs("\nassumed dims:   ", out);
    for (int64_t i = 0; i < a->dims.nassumed; i++) {
        if (i) fputs(", ", out);
        text_str(out, a->dims.assumed[i]);
    }
    fputs(a->dims.nassumed ? " (unbound, counted as 1)" : "(none)", out);
    fprintf(out, "\nunknown dims:   %lld tensor%s (unknown dims counted as 1)\n", (long long)a->dims.unknown.count,
            a->dims.unknown.count == 1 ? "" : "s");
    if (gwr_analysis_num_unused(a) > 0) {
        fputs("unused dims:    ", out);
        for (int64_t i = 0; i < gwr_analysis_num_unused(a); i++) {
            if (i) fputs(", ", out);
            text_str(out, gwr_analysis_unused(a, i));
        }
        fputs(" (no tensor has them)\n", out);
    }
}

static void write_json(const gwr_analysis *a, FILE *out, const int64_t *idx, int64_t ntop) {
    const gwr_cost_totals *t = &a->totals;
    const gwr_param_stats *p = &a->params;
    const gwr_memory_stats *m = &a->mem;
    fputs("{\n  \"network\": ", out);
    json_str(out, gwr_network_name(a->net));
    fprintf(out, ",\n  \"layers\": %lld,\n  \"known_layers\": %lld,\n  \"ops\": [", (long long)t->layers,
            (long long)t->known_layers);
    for (int64_t i = 0; i < a->nops; i++) {
        fputs(i ? ",\n    {\"domain\": " : "\n    {\"domain\": ", out);
        json_str(out, a->ops[i].domain);
        fputs(", \"op\": ", out);
        json_str(out, a->ops[i].op);
        fprintf(out, ", \"count\": %lld}", (long long)a->ops[i].count);
    }
    fprintf(out,
            "%s],\n  \"parameters\": {\"tensors\": %lld, \"elements\": %lld, \"bytes\": %lld, "
            "\"shared_tensors\": %lld, \"shared_bytes\": %lld},\n",
            a->nops ? "\n  " : "", (long long)p->tensors, (long long)p->elements, (long long)p->bytes,
            (long long)p->shared_tensors, (long long)p->shared_bytes);
    fprintf(out, "  \"flops\": %lld,\n  \"bytes_read\": %lld,\n  \"bytes_written\": %lld,\n", (long long)t->flops,
            (long long)t->bytes_read, (long long)t->bytes_written);
    fprintf(out, "  \"subgraphs\": {\"layers\": %lld, \"flops\": %lld, \"loops_counted_once\": %lld},\n  \"top_layers\": [",
            (long long)t->body_layers, (long long)t->body_flops, (long long)t->loops_counted_once);
    for (int64_t i = 0; i < ntop; i++) {
        const gwr_layer_cost *r = &a->cost[idx[i]];
        fprintf(out, "%s{\"index\": %lld, \"name\": ", i ? ",\n    " : "\n    ", (long long)idx[i]);
        json_str(out, gwr_layer_name(r->layer));
        fputs(", \"domain\": ", out);
        json_str(out, gwr_layer_domain(r->layer));
        fputs(", \"op\": ", out);
        json_str(out, gwr_layer_op(r->layer));
        fprintf(out, ", \"flops\": %lld, \"bytes_read\": %lld, \"bytes_written\": %lld, \"known\": %s}",
                (long long)r->flops, (long long)r->bytes_read, (long long)r->bytes_written,
                r->known ? "true" : "false");
    }
    fprintf(out, "%s],\n  \"memory\": {\"peak_bytes\": %lld, \"peak_index\": %lld, \"peak_layer\": ",
            ntop ? "\n  " : "", (long long)m->peak_bytes, (long long)m->peak_index);
    if (m->peak_layer) json_str(out, gwr_layer_name(m->peak_layer));
    else fputs("null", out);
    fprintf(out, ", \"order\": \"%s\", \"weight_bytes\": %lld},\n  \"dims\": {\"bound\": {",
            m->network_order ? "network" : "topological", (long long)m->weight_bytes);
    for (int64_t i = 0; i < a->dims.nbind; i++) {
        if (i) fputs(", ", out);
        json_str(out, a->dims.bind[i].name);
        fprintf(out, ": %lld", (long long)a->dims.bind[i].value);
    }
    fputs("}, \"assumed\": [", out);
    for (int64_t i = 0; i < a->dims.nassumed; i++) {
        if (i) fputs(", ", out);
        json_str(out, a->dims.assumed[i]);
    }
    fprintf(out, "], \"unknown_tensors\": %lld, \"unused\": [", (long long)a->dims.unknown.count);
    for (int64_t i = 0; i < gwr_analysis_num_unused(a); i++) {
        if (i) fputs(", ", out);
        json_str(out, gwr_analysis_unused(a, i));
    }
    fputs("]}\n}\n", out);
}

gwr_status gwr_analysis_write(const gwr_analysis *a, FILE *out, int json, int64_t top) {
    if (!a || !out) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_analysis_write: NULL argument");
    /* The message is the report's only mutable part. */
    char *errmsg = ((gwr_analysis *)(void *)a)->errmsg;
    int64_t ntop = top;
    int64_t *idx = top_list(a, &ntop);
    if (!idx) return gwr_fmt_error(errmsg, GWR_ERR_NOMEM, "gwr_analysis_write: out of memory");
    if (json) write_json(a, out, idx, ntop);
    else write_text(a, out, idx, ntop);
    gwr_free(idx);
    if (fflush(out) || ferror(out)) return gwr_fmt_error(errmsg, GWR_ERR_IO, "gwr_analysis_write: cannot write the report");
    return GWR_OK;
}
