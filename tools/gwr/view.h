/* view.h - `gwr view`'s page (view.c): one self-contained HTML file, the
 * template tools/view/view.html with its three marker lines replaced by
 * the style, the data (JSON, docs/cli.md "gwr view") and the scripts
 * (dagre and tools/view/view.js). Used by `gwr view` (cmd_view.c) and by
 * `gwr rewrite --view` and `gwr optimize --view`. */
#ifndef GWR_CLI_VIEW_H
#define GWR_CLI_VIEW_H

#include "cli.h"

/* The page's parts, embedded at build time (cmake/embed_view.cmake). */
extern const char gwr_view_html[], gwr_view_css[], gwr_view_js[], gwr_view_dagre[];
/* 0 when node_modules' dagre was missing at build time. */
extern const int gwr_view_have_dagre;
/* CLI_OK when the page can be made; else CLI_FAIL after the one line
 * saying how to get the layout library (checked before any work). */
int view_available(void);

/* A rewrite trace: the rewrites of a run, in order, numbered 1.. (seq). */
typedef struct view_trace view_trace;
view_trace *view_trace_new(void);
void view_trace_free(view_trace *t);
/* Reads the JSON lines of `gwr rewrite --trace-json` (no_match lines
 * skipped). CLI_OK, or CLI_USAGE after one line naming path and the
 * problem (CLI_FAIL: out of memory). */
int view_trace_read(view_trace *t, const char *path);
/* A listener that records each rewrite of a run into t (for --view). */
gwr_rewrite_listener view_trace_listener(view_trace *t);
/* CLI_OK when t is empty or names a layer of one of the models; else
 * CLI_USAGE after one line naming path. */
int view_trace_check(const view_trace *t, gwr_network *const *models, int nmodels, const char *path);

/* Reads a Chrome trace of `gwr run --profile` (per-layer "X" events) or
 * `gwr optimize --profile` ("pass" events) into the page's "profile"
 * JSON text (malloc'd). NULL with *rc set after one line naming path. */
char *view_profile_read(const char *path, int *rc);

typedef struct view_page {
    gwr_network *models[2];
    const char *files[2];
    int nmodels;
    const view_trace *trace;  /* NULL: "trace":null */
    const char *profile;      /* view_profile_read's text, or NULL */
} view_page;

/* Writes the page to file atomically (temporary name, renamed). A CLI_*
 * code, the failure printed as one line naming file (or the model). */
int view_write(const char *file, const view_page *pg);

#endif
