/* registry.c - the pass table (the rows the pass files declare, in phase
 * order) and the built-in passes by label, for gwr_optimize,
 * gwr_passes_add and `gwr rewrite --pattern LABEL`. */
#include <stdio.h>
#include <string.h>

#include "gwr/passes.h"
#include "rewrite/rewrite_api.h"

/* The table: every pass file's GWR_PASS row (pass_table.h), as the build
 * collected them (cmake/pass_list.cmake): phase by phase, within a phase
 * by file, then in the file's order. */
#define GWR_PASS_ROW(label, phase) extern const gwr_pass_info gwr_pass_row_##label;
#include "pass_list.inc"
#undef GWR_PASS_ROW
#define GWR_PASS_ROW(label, phase) &gwr_pass_row_##label,
static const gwr_pass_info *const builtins[] = {
#include "pass_list.inc"
};
#undef GWR_PASS_ROW

#define NBUILTIN ((int)(sizeof builtins / sizeof builtins[0]))

const char *gwr_pass_level_name(gwr_pass_level level) {
    static const char *const names[] = {"none", "basic", "extended", "all"};
    return (unsigned)level <= GWR_LEVEL_ALL ? names[level] : "unknown";
}

const char *gwr_pass_phase_name(gwr_pass_phase phase) {
    static const char *const names[] = {"cleanup", "fold", "fuse", "lower", "kernel"};
    return (unsigned)phase < GWR_PHASE_COUNT ? names[phase] : "unknown";
}

static gwr_pass_level gwr_level_of(const gwr_pass_info *p) { return p->level_gwr ? p->level_gwr : p->level; }

gwr_pass_level gwr_pass_level_for(const gwr_pass_info *p, unsigned target) {
    if (!p) return GWR_LEVEL_NONE;
    return target == GWR_TARGET_GWR ? gwr_level_of(p) : p->level;
}

/* The level column: "all", or "all/gwr:extended" where target gwr's
 * differs (no space: scripts split the text columns). */
static void level_str(const gwr_pass_info *p, char *buf, size_t size) {
    gwr_pass_level g = gwr_level_of(p);
    if (g == p->level) snprintf(buf, size, "%s", gwr_pass_level_name(p->level));
    else snprintf(buf, size, "%s/gwr:%s", gwr_pass_level_name(p->level), gwr_pass_level_name(g));
}

const gwr_pass_info *gwr_passes_info(int i) { return i >= 0 && i < NBUILTIN ? builtins[i] : NULL; }
int gwr_passes_count(void) { return NBUILTIN; }
const char *gwr_passes_label(int i) { return i >= 0 && i < NBUILTIN ? builtins[i]->label : NULL; }
const char *gwr_passes_summary(int i) { return i >= 0 && i < NBUILTIN ? builtins[i]->summary : NULL; }
/* From the position: the first row highest. */
int gwr_passes_benefit(int i) { return i >= 0 && i < NBUILTIN ? NBUILTIN - i : 0; }

static void targets_str(unsigned t, char *buf, size_t size) {
    snprintf(buf, size, "%s%s%s%s%s", t & GWR_TARGET_ONNX ? "onnx" : "",
             (t & GWR_TARGET_ONNX) && (t & (GWR_TARGET_ORT | GWR_TARGET_GWR)) ? "," : "", t & GWR_TARGET_ORT ? "ort" : "",
             (t & GWR_TARGET_ORT) && (t & GWR_TARGET_GWR) ? "," : "", t & GWR_TARGET_GWR ? "gwr" : "");
}

static void numerics_str(const gwr_pass_info *p, char *buf, size_t size) {
    if (p->numerics == GWR_NUMERICS_EXACT) snprintf(buf, size, "exact");
    else if (p->numerics == GWR_NUMERICS_APPROX) snprintf(buf, size, "within %g", p->tolerance);
    else snprintf(buf, size, "changes");
}

void gwr_passes_print(FILE *out, int markdown) {
    if (!out) return;
    if (markdown)
        fprintf(out, "| label | phase | level | targets | numerics | what it does |\n| --- | --- | --- | --- | --- | --- |\n");
    else
        fprintf(out, "%-34s %-7s  %-8s  %-12s  %-12s  %s\n", "pattern", "phase", "level", "targets", "numerics",
                "what it does");
    for (int i = 0; i < NBUILTIN; i++) {
        const gwr_pass_info *p = builtins[i];
        char tg[32], nu[32], lv[48];
        targets_str(p->targets, tg, sizeof tg);
        numerics_str(p, nu, sizeof nu);
        level_str(p, lv, sizeof lv);
        if (markdown)
            fprintf(out, "| `%s` | %s | %s | %s | %s | %s |\n", p->label, gwr_pass_phase_name(p->phase), lv, tg, nu,
                    p->summary);
        else
            fprintf(out, "%-34s %-7s  %-8s  %-12s  %-12s  %s\n", p->label, gwr_pass_phase_name(p->phase), lv, tg, nu,
                    p->summary);
    }
}

const gwr_pattern_rewriter *gwr_passes_find(const char *label, int *benefit) {
    for (int i = 0; label && i < NBUILTIN; i++)
        if (!strcmp(builtins[i]->label, label)) {
            if (benefit) *benefit = gwr_passes_benefit(i);
            return builtins[i]->pattern;
        }
    return NULL;
}

gwr_status gwr_passes_add(gwr_rewrite_manager *m, const char *label) {
    if (!m) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_passes_add: NULL manager");
    int benefit = 0;
    const gwr_pattern_rewriter *p = gwr_passes_find(label, &benefit);
    if (!p) {
        /* As many labels as the message holds; "..." when they do not all fit. */
        char known[400] = "";
        size_t off = 0;
        for (int i = 0; i < NBUILTIN; i++) {
            size_t need = strlen(builtins[i]->label) + 2;
            if (off + need + 40 >= sizeof known) {
                snprintf(known + off, sizeof known - off, ", ... (%d in all: gwr rewrite --list)", NBUILTIN);
                break;
            }
            off += (size_t)snprintf(known + off, sizeof known - off, "%s%s", i ? ", " : "", builtins[i]->label);
        }
        return rw_manager_error(m, GWR_ERR_NOT_FOUND, "no built-in pattern '%s' (known: %s)", label ? label : "(null)",
                                known);
    }
    return gwr_rewrite_manager_add(m, label, p, benefit);
}
