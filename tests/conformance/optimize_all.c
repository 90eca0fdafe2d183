/* optimize_all.c - the optimizer over data nobody here wrote: every model of
 * ONNX's backend test data at every level (basic, extended, all) and every
 * target (onnx, ort, gwr), in one process.
 *
 * For every test case (a directory holding model.onnx) named on the command
 * line or found under a given root (two levels deep), and every level and
 * target:
 *   a = load(model)                      (shapes inferred, as `gwr optimize`)
 *   b = clone(a); gwr_optimize(b)        must succeed (debug: the network
 *                                        verified after every rewrite)
 *   a and b on the executor              the same outputs: bit for bit when
 *                                        only exact passes fired, else within
 *                                        1e-5 + 1e-4|b| (the --verify bound);
 *                                        inputs: test_data_set_0 where every
 *                                        input is a tensor, else seeded random
 *   save_memory(b)                       deterministic: a second clone of a,
 *                                        optimized, gives the same bytes
 *   load_memory(those bytes), optimize   idempotent: nothing rewritten, the
 *                                        same bytes again
 *   save(b, OUTDIR/<level>-<target>/<suite>/<name>/model.onnx)
 * A model the executor cannot run even alone (unsupported op, ...) is only
 * counted: its optimized form must still load, optimize and save. The onnx
 * and ort files under OUTDIR are for ort_compare.py (onnxruntime on the
 * same models); the gwr ones may hold ops only gwr runs.
 *
 * Usage: optimize_all [-o OUTDIR] [-x EXPECTED_FAILURES] [--every N]
 *                     [--min-cases N] [--min-fired N] [-v] PATH...
 * --every N: only every Nth case in sorted order (the sanitizer build's
 * subset). --min-cases, --min-fired: fail unless at least N cases ran and
 * in at least N of them some pass rewrote something (the data is there and
 * the passes do fire). Prints `FAIL suite/name: level/target: reason` per failure, the
 * counts, and last `N passed, M failed`. EXPECTED_FAILURES lists
 * `suite/name  reason` per line (# comments); a listed case that passes (or
 * was not run) is a stale entry. Exit 0 only when every failure is listed
 * and no entry is stale; 2 on bad usage. */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "gwr/gwr.h"

static const struct {
    const char *name;
    gwr_pass_level level;
    unsigned target;
} combos[] = {
    {"basic-onnx", GWR_LEVEL_BASIC, GWR_TARGET_ONNX},       {"basic-ort", GWR_LEVEL_BASIC, GWR_TARGET_ORT},
    {"extended-onnx", GWR_LEVEL_EXTENDED, GWR_TARGET_ONNX}, {"extended-ort", GWR_LEVEL_EXTENDED, GWR_TARGET_ORT},
    {"all-onnx", GWR_LEVEL_ALL, GWR_TARGET_ONNX},           {"all-ort", GWR_LEVEL_ALL, GWR_TARGET_ORT},
    /* gwr's own executor: passes that serve only it (Gelu at any opset, ...) */
    {"basic-gwr", GWR_LEVEL_BASIC, GWR_TARGET_GWR},         {"extended-gwr", GWR_LEVEL_EXTENDED, GWR_TARGET_GWR},
    {"all-gwr", GWR_LEVEL_ALL, GWR_TARGET_GWR},
};
#define NCOMBO ((int)(sizeof combos / sizeof combos[0]))

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("optimize_all: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) die("out of memory");
    return q;
}

static char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(xrealloc(NULL, n), s, n);
}

static char *join(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = xrealloc(NULL, n);
    snprintf(p, n, "%s/%s", a, b);
    return p;
}

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int make_dirs(const char *path) {
    char *p = xstrdup(path);
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s) continue;
        char c = *s;
        *s = 0;
        if (mkdir(p, 0777) && errno != EEXIST) return free(p), -1;
        if (!(*s = c)) break;
    }
    free(p);
    return 0;
}

/* ---- the cases --------------------------------------------------------- */

typedef struct strs {
    char **v;
    size_t n, cap;
} strs;

static void push(strs *s, char *x) {
    if (s->n == s->cap) s->v = xrealloc(s->v, (s->cap = s->cap ? s->cap * 2 : 256) * sizeof *s->v);
    s->v[s->n++] = x;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Case directories (absolute) under p, as roundtrip.c finds them. */
static void find_cases(strs *out, const char *p, int depth) {
    if (!is_dir(p)) die("%s: not a directory", p);
    char *model = join(p, "model.onnx");
    int has = is_file(model);
    free(model);
    if (has) {
        char *abs = realpath(p, NULL);
        if (!abs) die("%s: %s", p, strerror(errno));
        push(out, abs);
        return;
    }
    if (depth >= 2) return;
    DIR *d = opendir(p);
    if (!d) die("%s: %s", p, strerror(errno));
    strs names = {0};
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') push(&names, join(p, e->d_name));
    closedir(d);
    qsort(names.v, names.n, sizeof *names.v, cmp_str);
    for (size_t i = 0; i < names.n; i++) {
        if (is_dir(names.v[i])) find_cases(out, names.v[i], depth + 1);
        free(names.v[i]);
    }
    free(names.v);
}

/* "suite/name" of a case directory */
static char *case_key(const char *dir) {
    const char *name = strrchr(dir, '/');
    const char *suite = name;
    while (suite > dir && suite[-1] != '/') suite--;
    return xstrdup(name > dir ? suite : dir);
}

/* ---- expected failures ------------------------------------------------- */

typedef struct expected {
    strs keys, reasons;
    int *failed;
    int *seen;
} expected;

static void read_expected(expected *x, const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) die("%s: %s", path, strerror(errno));
    char line[2048];
    while (fgets(line, sizeof line, f)) {
        char *h = strchr(line, '#');
        if (h) *h = 0;
        char *k = line + strspn(line, " \t\r\n");
        if (!*k) continue;
        size_t kl = strcspn(k, " \t\r\n");
        char *r = k + kl;
        r += strspn(r, " \t");
        r[strcspn(r, "\r\n")] = 0;
        k[kl] = 0;
        if (!strchr(k, '/')) die("%s: '%s': expected 'suite/name reason'", path, k);
        push(&x->keys, xstrdup(k));
        push(&x->reasons, xstrdup(r));
    }
    fclose(f);
    x->failed = xrealloc(NULL, (x->keys.n + 1) * sizeof *x->failed);
    x->seen = xrealloc(NULL, (x->keys.n + 1) * sizeof *x->seen);
    memset(x->failed, 0, (x->keys.n + 1) * sizeof *x->failed);
    memset(x->seen, 0, (x->keys.n + 1) * sizeof *x->seen);
}

static int find_expected(const expected *x, const char *key) {
    for (size_t i = 0; i < x->keys.n; i++)
        if (!strcmp(x->keys.v[i], key)) return (int)i;
    return -1;
}

/* ---- inputs from test_data_set_0 --------------------------------------- */

typedef struct feed {
    int n;
    char **names;
    gwr_value **values;
} feed;

static void feed_free(feed *f) {
    for (int i = 0; i < f->n; i++) {
        free(f->names[i]);
        gwr_value_release(f->values[i]);
    }
    free(f->names), free(f->values);
    memset(f, 0, sizeof *f);
}

/* The name of the i-th graph input without a default value, or NULL. */
static const char *nth_feed_name(gwr_network *net, int i) {
    for (int j = 0, seen = 0; j < gwr_network_num_inputs(net); j++) {
        gwr_tensor *t = gwr_network_input(net, j);
        if (!gwr_tensor_default(t) && seen++ == i) return gwr_tensor_name(t);
    }
    return NULL;
}

/* test_data_set_0's inputs, named as the network names them. 0 when there
 * is none, or one is not a tensor or matches no input: random inputs then. */
static int read_feed(const char *dir, gwr_network *net, feed *f) {
    memset(f, 0, sizeof *f);
    char *set = join(dir, "test_data_set_0");
    for (int i = 0;; i++) {
        char fn[64];
        snprintf(fn, sizeof fn, "input_%d.pb", i);
        char *p = join(set, fn);
        int more = is_file(p);
        gwr_weights w;
        int64_t dims[GWR_MAX_RANK];
        char *nm = NULL;
        gwr_value *v = NULL;
        if (more && !gwr_onnx_read_tensor(p, &w, dims, &nm)) {
            gwr_tensor *decl = nm && *nm ? gwr_network_find_tensor(net, nm) : NULL;
            const char *name = decl ? nm : nth_feed_name(net, i);
            if (!decl && name) decl = gwr_network_find_tensor(net, name);
            /* bfloat16 data is stored as uint16 */
            if (decl && gwr_tensor_dtype(decl) == GWR_BFLOAT16 && w.dtype == GWR_UINT16) w.dtype = GWR_BFLOAT16;
            v = name ? gwr_value_from_weights(&w) : NULL;
            gwr_buffer_release(w.buffer);
            if (v) {
                f->names = xrealloc(f->names, (size_t)(f->n + 1) * sizeof *f->names);
                f->values = xrealloc(f->values, (size_t)(f->n + 1) * sizeof *f->values);
                f->names[f->n] = xstrdup(name);
                f->values[f->n++] = v;
            }
        }
        free(nm), free(p);
        if (!more) break;
        if (!v) {
            feed_free(f);
            break;
        }
    }
    free(set);
    return f->n > 0;
}

/* ---- one case ---------------------------------------------------------- */

#define MAX_PASSES 256

typedef struct counts {
    int fired_cases; /* cases where some level/target rewrote something */
    int by_pass[MAX_PASSES]; /* level/target runs where pass i rewrote */
    int cases, pass, fail, noload, norun, random_inputs, fired, exact_checks, approx_checks;
} counts;

typedef struct opts {
    const char *outdir;
    int verbose;
} opts;

/* Sum of rewrites in a report, and whether an approximate pass rewrote;
 * by_pass (may be NULL) counts the passes that rewrote. */
static int64_t rewrites(const gwr_optimize_report *r, int *approx, int *by_pass) {
    int64_t n = 0;
    for (int i = 0; i < gwr_optimize_report_count(r); i++) {
        const gwr_optimize_pass *p = gwr_optimize_report_pass(r, i);
        const gwr_pass_info *info = gwr_passes_info(i);
        n += p->rewrites;
        if (p->rewrites > 0 && by_pass && i < MAX_PASSES) by_pass[i]++;
        if (p->rewrites > 0 && approx && info && info->numerics != GWR_NUMERICS_EXACT) *approx = 1;
    }
    return n;
}

/* Clone, optimize, serialize. NULL (why) on failure. */
static void *optimized_bytes(gwr_network *a, int c, size_t *size, int64_t *nrw, int *approx, int *by_pass,
                             gwr_network **keep, char *why, size_t wsize) {
    gwr_network *b = gwr_network_clone(a);
    if (!b) return snprintf(why, wsize, "clone: %s", gwr_last_errmsg()), NULL;
    /* debug: the network verified after every rewrite */
    gwr_optimize_options o = {.level = combos[c].level, .target = combos[c].target, .debug = 1};
    gwr_optimize_report *r = NULL;
    void *data = NULL;
    if (gwr_optimize(b, &o, &r)) snprintf(why, wsize, "optimize: %s", gwr_network_errmsg(b));
    else if (gwr_onnx_save_memory(b, &data, size)) snprintf(why, wsize, "save: %s", gwr_network_errmsg(b)), data = NULL;
    if (r && nrw) *nrw = rewrites(r, approx, by_pass);
    gwr_optimize_report_free(r);
    if (data && keep) *keep = b;
    else gwr_network_free(b);
    return data;
}

/* The optimized bytes, loaded and optimized again: nothing rewritten, the
 * same bytes. 0, or 1 with why. */
static int check_idempotent(const void *bytes, size_t size, int c, const char *key, char *why, size_t wsize) {
    gwr_onnx_load_options lo = {.infer_shapes = 1};
    gwr_network *n = gwr_onnx_load_memory(bytes, size, NULL, key, &lo);
    if (!n) return snprintf(why, wsize, "reload of the optimized model: %s", gwr_last_errmsg()), 1;
    size_t size2 = 0;
    int64_t nrw = 0;
    void *again = optimized_bytes(n, c, &size2, &nrw, NULL, NULL, NULL, why, wsize);
    int bad = 1;
    if (!again) {
        /* why is set */
    } else if (nrw) {
        snprintf(why, wsize, "not idempotent: optimizing the optimized model rewrote %lld more", (long long)nrw);
    } else if (size2 != size || memcmp(again, bytes, size)) {
        snprintf(why, wsize, "not idempotent: optimizing the optimized model changed its bytes (%zu -> %zu)", size, size2);
    } else {
        bad = 0;
    }
    free(again);
    gwr_network_free(n);
    return bad;
}

/* The executor on a and b: 0 same, 1 differ or b fails (why), -1 a cannot run. */
static int check_numerics(gwr_network *a, gwr_network *b, const feed *f, int approx, char *why, size_t wsize) {
    gwr_compare_options co = GWR_COMPARE_DEFAULTS;
    if (!approx) co.atol = co.rtol = 0;
    co.inputs.ngiven = f->n;
    co.inputs.given_names = (const char *const *)f->names;
    co.inputs.given_values = f->values;
    gwr_compare_report rep;
    gwr_status s = gwr_exec_compare(a, b, &co, &rep);
    int rc = 0;
    if (s) {
        snprintf(why, wsize, "the optimized model does not run where the original does: %s", gwr_last_errmsg());
        rc = 1;
        /* Not b's failure when a cannot run against itself either (an op
         * without a kernel, a sequence input random data cannot fill). */
        gwr_compare_report self;
        if (rep.error_in != 2 && gwr_exec_compare(a, a, &co, &self)) rc = -1;
        if (rep.error_in != 2) gwr_compare_report_free(&self);
    } else if (!rep.pass) {
        snprintf(why, wsize, "output '%s' differs (max abs %g%s)", rep.worst_name ? rep.worst_name : "?", rep.max_abs,
                 approx ? "" : ", only exact passes fired");
        rc = 1;
    }
    gwr_compare_report_free(&rep);
    return rc;
}

static int save_tree(gwr_network *b, const opts *o, int c, const char *key, char *why, size_t wsize) {
    if (!o->outdir) return 0;
    size_t n = strlen(o->outdir) + strlen(combos[c].name) + strlen(key) + 32;
    char *dir = xrealloc(NULL, n);
    snprintf(dir, n, "%s/%s/%s", o->outdir, combos[c].name, key);
    int rc = 0;
    if (make_dirs(dir)) rc = 1, snprintf(why, wsize, "mkdir %s: %s", dir, strerror(errno));
    char *file = join(dir, "model.onnx");
    if (!rc && gwr_onnx_save(b, file, NULL)) rc = 1, snprintf(why, wsize, "save %s: %s", file, gwr_network_errmsg(b));
    free(file), free(dir);
    return rc;
}

/* One level/target of one case. 0 pass, 1 fail (why), -1 a cannot run. */
static int run_combo(gwr_network *a, const feed *f, int c, const opts *o, const char *key, counts *k, char *why,
                     size_t wsize) {
    size_t size = 0, size2 = 0;
    int64_t nrw = 0;
    int approx = 0;
    gwr_network *b = NULL;
    void *bytes = optimized_bytes(a, c, &size, &nrw, &approx, k->by_pass, &b, why, wsize);
    if (!bytes) return 1;
    int rc = 0;
    void *bytes2 = optimized_bytes(a, c, &size2, NULL, NULL, NULL, NULL, why, wsize);
    if (!bytes2) rc = 1;
    else if (size2 != size || memcmp(bytes, bytes2, size))
        rc = 1, snprintf(why, wsize, "not deterministic: two runs on the same model wrote other bytes");
    if (!rc) rc = check_idempotent(bytes, size, c, key, why, wsize);
    if (!rc) rc = save_tree(b, o, c, key, why, wsize);
    if (!rc && nrw) {
        k->fired++;
        rc = check_numerics(a, b, f, approx, why, wsize);
        if (!rc) approx ? k->approx_checks++ : k->exact_checks++;
    }
    free(bytes), free(bytes2);
    gwr_network_free(b);
    return rc;
}

/* Every combo of one case; returns 1 when one failed (printed). */
static int run_case(const char *dir, const char *key, const opts *o, counts *k) {
    char *path = join(dir, "model.onnx");
    gwr_onnx_load_options lo = {.infer_shapes = 1};
    gwr_network *a = gwr_onnx_load(path, &lo);
    free(path);
    if (!a) {
        k->noload++;
        if (o->verbose) printf("NOLOAD %s: %s\n", key, gwr_last_errmsg());
        return 0;
    }
    feed f;
    if (!read_feed(dir, a, &f)) k->random_inputs++;
    int failed = 0, norun = 0, fired = k->fired;
    for (int c = 0; c < NCOMBO; c++) {
        char why[1024] = "";
        int rc = run_combo(a, &f, c, o, key, k, why, sizeof why);
        if (rc < 0) norun = 1;
        if (rc > 0) {
            printf("FAIL %s: %s: %s\n", key, combos[c].name, why);
            failed = 1;
        }
    }
    if (norun) k->norun++;
    if (k->fired > fired) k->fired_cases++;
    feed_free(&f);
    gwr_network_free(a);
    return failed;
}

static void usage(void) {
    fprintf(stderr, "usage: optimize_all [-o OUTDIR] [-x EXPECTED_FAILURES] [--every N] [--min-cases N] "
                    "[--min-fired N] [-v] PATH...\n");
    exit(2);
}

/* Stale entries: listed cases that passed, or that this run did not meet
 * although their suite ran. */
static int report_stale(const expected *x, const strs *keys, int every) {
    int stale = 0;
    for (size_t i = 0; i < x->keys.n; i++) {
        if (x->failed[i]) continue;
        const char *slash = strchr(x->keys.v[i], '/');
        int suite_ran = 0;
        for (size_t j = 0; j < keys->n && !suite_ran; j++)
            suite_ran = !strncmp(keys->v[j], x->keys.v[i], (size_t)(slash - x->keys.v[i]) + 1);
        if (x->seen[i] || (suite_ran && every == 1)) {
            printf("STALE %s: listed as an expected failure but %s\n", x->keys.v[i],
                   x->seen[i] ? "it passed" : "no such case ran");
            stale++;
        }
    }
    return stale;
}

int main(int argc, char **argv) {
    opts o = {0};
    const char *xfile = NULL;
    int every = 1, min_cases = 0, min_fired = 0;
    strs paths = {0}, dirs = {0}, keys = {0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc) o.outdir = argv[++i];
        else if (!strcmp(argv[i], "-x") && i + 1 < argc) xfile = argv[++i];
        else if (!strcmp(argv[i], "--every") && i + 1 < argc) every = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--min-cases") && i + 1 < argc) min_cases = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--min-fired") && i + 1 < argc) min_fired = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-v")) o.verbose = 1;
        else if (argv[i][0] == '-') usage();
        else push(&paths, argv[i]);
    }
    if (!paths.n || every < 1) usage();
    expected x = {0};
    if (xfile) read_expected(&x, xfile);
    for (size_t i = 0; i < paths.n; i++) find_cases(&dirs, paths.v[i], 0);
    if (!dirs.n) die("no test cases under the paths given");
    clock_t t0 = clock();
    counts k = {0};
    int unexpected = 0, xfail = 0;
    for (size_t i = 0; i < dirs.n; i++) {
        char *key = case_key(dirs.v[i]);
        if (i % (size_t)every) {
            free(key);
            continue;
        }
        push(&keys, key);
        k.cases++;
        int e = find_expected(&x, key);
        if (e >= 0) x.seen[e] = 1;
        if (!run_case(dirs.v[i], key, &o, &k)) {
            k.pass++;
        } else if (e >= 0) {
            x.failed[e] = 1, xfail++;
            printf("  (expected: %s)\n", x.reasons.v[e]);
        } else {
            unexpected++;
        }
    }
    int stale = report_stale(&x, &keys, every);
    printf("%d cases (every %d of %zu) x %d levels/targets in %.1f s CPU\n", k.cases, every, dirs.n, NCOMBO,
           (double)(clock() - t0) / CLOCKS_PER_SEC);
    printf("not loadable: %d (the round trip's expected failures); not runnable by the executor: %d; "
           "test_data_set_0 inputs unusable (random inputs): %d\n", k.noload, k.norun, k.random_inputs);
    printf("cases where a pass rewrote something: %d; level/target runs where each pass rewrote:\n", k.fired_cases);
    for (int i = 0; i < gwr_passes_count() && i < MAX_PASSES; i++)
        if (k.by_pass[i]) printf("  %-34s %d\n", gwr_passes_label(i), k.by_pass[i]);
    int floors = 0;
    if (k.cases < min_cases) printf("FAIL: only %d cases ran (--min-cases %d)\n", k.cases, min_cases), floors = 1;
    if (k.fired_cases < min_fired)
        printf("FAIL: passes rewrote something in only %d cases (--min-fired %d)\n", k.fired_cases, min_fired), floors = 1;
    printf("optimizations that rewrote something: %d, checked on the executor bit for bit: %d, within 1e-5 + "
           "1e-4|b|: %d\n", k.fired, k.exact_checks, k.approx_checks);
    printf("%d expected failures (listed), %d unexpected, %d stale entries\n", xfail, unexpected, stale);
    printf("%d passed, %d failed\n", k.pass, k.cases - k.pass);
    for (size_t i = 0; i < dirs.n; i++) free(dirs.v[i]);
    for (size_t i = 0; i < keys.n; i++) free(keys.v[i]);
    for (size_t i = 0; i < x.keys.n; i++) free(x.keys.v[i]), free(x.reasons.v[i]);
    free(dirs.v), free(keys.v), free(paths.v), free(x.keys.v), free(x.reasons.v), free(x.failed), free(x.seen);
    return unexpected || stale || floors ? 1 : 0;
}
