/* roundtrip.c - the ONNX round trip over data nobody here wrote.
 *
 * For every test case (a directory holding model.onnx) named on the
 * command line or found under a given root (two levels deep, so both
 * .../data and .../data/node work):
 *   a = gwr_onnx_load(model)            must load and verify
 *   gwr_onnx_save(a, OUTDIR/<suite>/<name>/model.onnx)
 *   b = gwr_onnx_load(that)
 *   gwr_network_equal(a, b)             must be 1
 * and, as the same contract seen from the other entry points:
 *   gwr_onnx_save_memory(a)             the same bytes as the file
 *   gwr_onnx_save_memory(b)             the same bytes again (a fixpoint)
 *   gwr_onnx_load_memory(original)      equal to a
 *   save a with external data (tensors >= 16 bytes) to
 *   OUTDIR/<suite>/<name>/external/model.onnx, reload: equal to a
 * <suite> is the name of the case directory's parent. The exported models
 * stay under OUTDIR for check_exported.py and ort_compare.py.
 *
 * Usage: roundtrip [-o OUTDIR] [-x EXPECTED_FAILURES] [-v] PATH...
 * Prints `FAIL suite/name: reason` per failing case, the counts, and last a
 * line exactly `N passed, M failed`. EXPECTED_FAILURES lists
 * `suite/name  reason` per line (# comments); a listed case that fails is
 * fine, a listed case that passes is a stale entry. Exit status 0 only when
 * every failure is listed and no entry is stale; 2 on bad usage. */
/* realpath */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gwr/gwr.h"

typedef struct test_case {
    char *dir;   /* the case directory */
    char *key;   /* "suite/name" */
} test_case;

typedef struct case_list {
    test_case *v;
    size_t n, cap;
} case_list;

typedef struct expected_entry {
    char *key;
    char *reason;
    int seen;    /* the case ran */
    int failed;  /* ... and failed */
} expected_entry;

typedef struct expected_list {
    expected_entry *v;
    size_t n, cap;
} expected_list;

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("roundtrip: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        die("out of memory");
    return q;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xrealloc(NULL, n), s, n);
}

static char *path_join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *p = xrealloc(NULL, la + lb + 2);
    memcpy(p, a, la);
    p[la] = '/';
    memcpy(p + la + 1, b, lb + 1);
    return p;
}

static const char *base_name(const char *p, size_t *len)
{
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/')
        n--;
    size_t s = n;
    while (s > 0 && p[s - 1] != '/')
        s--;
    *len = n - s;
    return p + s;
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* mkdir -p */
static int make_dirs(const char *path)
{
    char *p = xstrdup(path);
    for (char *s = p + 1;; s++) {
        if (*s == '/' || *s == '\0') {
            char c = *s;
            *s = '\0';
            if (mkdir(p, 0777) != 0 && errno != EEXIST) {
                free(p);
                return -1;
            }
            *s = c;
            if (!c)
                break;
        }
    }
    free(p);
    return is_dir(path) ? 0 : -1;
}

static void add_case(case_list *cl, const char *dir)
{
    char *abs = realpath(dir, NULL);
    if (!abs)
        die("%s: %s", dir, strerror(errno));
    for (size_t i = 0; i < cl->n; i++)
        if (!strcmp(cl->v[i].dir, abs)) { /* named twice */
            free(abs);
            return;
        }
    size_t nlen, slen;
    const char *name = base_name(abs, &nlen);
    char *parent = xstrdup(abs);
    parent[name - abs > 0 ? (size_t)(name - abs) - 1 : 0] = '\0';
    const char *suite = base_name(parent[0] ? parent : "/", &slen);
    char *key = xrealloc(NULL, slen + nlen + 2);
    snprintf(key, slen + nlen + 2, "%.*s/%.*s", (int)slen, suite, (int)nlen, name);
    free(parent);
    if (cl->n == cl->cap) {
        cl->cap = cl->cap ? cl->cap * 2 : 256;
        cl->v = xrealloc(cl->v, cl->cap * sizeof *cl->v);
    }
    cl->v[cl->n].dir = abs;
    cl->v[cl->n].key = key;
    cl->n++;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void find_cases(case_list *cl, const char *p, int depth)
{
    if (!is_dir(p))
        die("%s: not a directory", p);
    char *model = path_join(p, "model.onnx");
    int has_model = is_file(model);
    free(model);
    if (has_model) {
        add_case(cl, p);
        return;
    }
    if (depth >= 2)
        return;
    DIR *d = opendir(p);
    if (!d)
        die("%s: %s", p, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            names = xrealloc(names, cap * sizeof *names);
        }
        names[n++] = xstrdup(e->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        char *q = path_join(p, names[i]);
        if (is_dir(q))
            find_cases(cl, q, depth + 1);
        free(q);
        free(names[i]);
    }
    free(names);
}

static void read_expected(expected_list *xl, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        die("%s: %s", path, strerror(errno));
    char line[4096];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *s = line;
        while (*s == ' ' || *s == '\t')
            s++;
        size_t klen = strcspn(s, " \t\r\n");
        if (!klen)
            continue;
        char *r = s + klen;
        while (*r == ' ' || *r == '\t')
            r++;
        size_t rlen = strcspn(r, "\r\n");
        while (rlen && (r[rlen - 1] == ' ' || r[rlen - 1] == '\t'))
            rlen--;
        s[klen] = '\0';
        r[rlen] = '\0';
        if (!strchr(s, '/'))
            die("%s:%d: expected 'suite/name reason'", path, lineno);
        for (size_t i = 0; i < xl->n; i++)
            if (!strcmp(xl->v[i].key, s))
                die("%s:%d: %s listed twice", path, lineno, s);
        if (xl->n == xl->cap) {
            xl->cap = xl->cap ? xl->cap * 2 : 32;
            xl->v = xrealloc(xl->v, xl->cap * sizeof *xl->v);
        }
        xl->v[xl->n++] = (expected_entry){xstrdup(s), xstrdup(r), 0, 0};
    }
    fclose(f);
}

static expected_entry *find_expected(expected_list *xl, const char *key)
{
    for (size_t i = 0; i < xl->n; i++)
        if (!strcmp(xl->v[i].key, key))
            return &xl->v[i];
    return NULL;
}

static int read_file(const char *path, void **data, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t cap = 1 << 16, n = 0;
    char *buf = xrealloc(NULL, cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap)
            buf = xrealloc(buf, cap *= 2);
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        return -1;
    }
    *data = buf;
    *size = n;
    return 0;
}

/* First differing byte of two buffers, or -1 when equal. */
static long long first_diff(const void *a, size_t na, const void *b, size_t nb)
{
    const unsigned char *x = a, *y = b;
    size_t n = na < nb ? na : nb;
    for (size_t i = 0; i < n; i++)
        if (x[i] != y[i])
            return (long long)i;
    return na == nb ? -1 : (long long)n;
}

/* Removes what an earlier run exported for a case (model.onnx, and
 * external/ with its side file), so that nothing stale stands in for this
 * run's output. 0, or -1 with a message. */
static int remove_old(const char *odir, char *msg, size_t size)
{
    static const char *const files[] = {"model.onnx", "external/model.onnx",
                                        "external/model.onnx.data"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char *p = path_join(odir, files[i]);
        int r = unlink(p);
        if (r != 0 && errno != ENOENT) {
            snprintf(msg, size, "cannot remove old %s: %s", p, strerror(errno));
            free(p);
            return -1;
        }
        free(p);
    }
    return 0;
}

/* ---- the case being run, for a crash report ---------------------------- */

static const char *volatile g_current;

static void say_current(void)
{
    const char *k = g_current;
    if (!k)
        return;
    static const char pre[] = "\nFAIL ", post[] = ": crashed (see the report below or above)\n";
    ssize_t r = write(2, pre, sizeof pre - 1);
    r = write(2, k, strlen(k));
    r = write(2, post, sizeof post - 1);
    (void)r;
}

static void on_signal(int sig)
{
    say_current();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* AddressSanitizer calls this, when defined, before it reports an error. */
void __asan_on_error(void);
void __asan_on_error(void)
{
    say_current();
}

/* ---- one case ---------------------------------------------------------- */

/* Returns NULL when the case passes, else a malloc'd reason. */
static char *run_case(const test_case *c, const char *outdir)
{
    char why[1024], msg[4096], *reason = NULL;
    gwr_network *a = NULL, *b = NULL, *m = NULL, *x = NULL;
    char *xout = NULL;
    void *file = NULL, *mem = NULL, *orig = NULL;
    size_t file_size = 0, mem_size = 0, orig_size = 0;
#define FAIL_(...)                                            \
    do {                                                      \
        snprintf(msg, sizeof msg, __VA_ARGS__);               \
        reason = xstrdup(msg);                                \
        goto done;                                            \
    } while (0)

    char *model = path_join(c->dir, "model.onnx");
    char *odir = path_join(outdir, c->key);
    char *out = path_join(odir, "model.onnx");
    /* No stale export from an earlier run may stand in for this one. */
    if (remove_old(odir, msg, sizeof msg) != 0) {
        reason = xstrdup(msg);
        goto done;
    }

    a = gwr_onnx_load(model, NULL);
    if (!a)
        FAIL_("load original: %s", gwr_last_errmsg());
    if (gwr_network_verify(a) != GWR_OK)
        FAIL_("loaded network does not verify: %s", gwr_network_errmsg(a));
    if (make_dirs(odir) != 0)
        FAIL_("mkdir -p %s: %s", odir, strerror(errno));
    gwr_status st = gwr_onnx_save(a, out, NULL);
    if (st != GWR_OK)
        FAIL_("save: %s: %s", gwr_status_name(st), gwr_network_errmsg(a));
    b = gwr_onnx_load(out, NULL);
    if (!b)
        FAIL_("load exported: %s", gwr_last_errmsg());
    why[0] = '\0';
    if (gwr_network_equal(a, b, why, sizeof why) != 1)
        FAIL_("original and exported networks differ: %s", why[0] ? why : "(no reason given)");

    if (read_file(out, &file, &file_size) != 0)
        FAIL_("cannot read back %s: %s", out, strerror(errno));
    st = gwr_onnx_save_memory(a, &mem, &mem_size);
    if (st != GWR_OK)
        FAIL_("save_memory: %s: %s", gwr_status_name(st), gwr_network_errmsg(a));
    long long d = first_diff(file, file_size, mem, mem_size);
    if (d >= 0)
        FAIL_("gwr_onnx_save_memory and gwr_onnx_save give different bytes (%zu vs %zu bytes, "
              "first difference at byte %lld)", mem_size, file_size, d);
    free(mem);
    mem = NULL;
    st = gwr_onnx_save_memory(b, &mem, &mem_size);
    if (st != GWR_OK)
        FAIL_("save_memory of the reloaded network: %s: %s", gwr_status_name(st),
              gwr_network_errmsg(b));
    d = first_diff(file, file_size, mem, mem_size);
    if (d >= 0)
        FAIL_("export is not a fixpoint: saving the reloaded network gives other bytes (%zu vs "
              "%zu bytes, first difference at byte %lld)", mem_size, file_size, d);

    if (read_file(model, &orig, &orig_size) != 0)
        FAIL_("cannot read %s: %s", model, strerror(errno));
    m = gwr_onnx_load_memory(orig, orig_size, c->dir, c->key, NULL);
    if (!m)
        FAIL_("load_memory of the original: %s", gwr_last_errmsg());
    why[0] = '\0';
    if (gwr_network_equal(a, m, why, sizeof why) != 1)
        FAIL_("gwr_onnx_load and gwr_onnx_load_memory give different networks: %s",
              why[0] ? why : "(no reason given)");

    /* The same round trip through external data: every tensor of 16 bytes
     * or more to a side file, memory-mapped on reload. */
    char *xdir = path_join(odir, "external");
    xout = path_join(xdir, "model.onnx");
    if (make_dirs(xdir) != 0) {
        snprintf(msg, sizeof msg, "mkdir -p %s: %s", xdir, strerror(errno));
        free(xdir);
        reason = xstrdup(msg);
        goto done;
    }
    free(xdir);
    gwr_onnx_save_options xo = {.external_data = 1, .external_threshold = 16};
    st = gwr_onnx_save(a, xout, &xo);
    if (st != GWR_OK)
        FAIL_("save with external data: %s: %s", gwr_status_name(st), gwr_network_errmsg(a));
    x = gwr_onnx_load(xout, NULL);
    if (!x)
        FAIL_("load exported with external data: %s", gwr_last_errmsg());
    why[0] = '\0';
    if (gwr_network_equal(a, x, why, sizeof why) != 1)
        FAIL_("original and exported-with-external-data networks differ: %s",
              why[0] ? why : "(no reason given)");
#undef FAIL_
done:
    gwr_network_free(a);
    gwr_network_free(b);
    gwr_network_free(m);
    gwr_network_free(x);
    free(xout);
    free(file);
    free(mem);
    free(orig);
    free(model);
    free(odir);
    free(out);
    return reason;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void usage(void)
{
    fprintf(stderr, "usage: roundtrip [-o OUTDIR] [-x EXPECTED_FAILURES] [-v] PATH...\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *outdir = "conformance-out", *xfile = NULL;
    int verbose = 0;
    case_list cases = {0};
    expected_list xl = {0};
    int npaths = 0;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc)
            outdir = argv[++i];
        else if (!strcmp(argv[i], "-x") && i + 1 < argc)
            xfile = argv[++i];
        else if (!strcmp(argv[i], "-v"))
            verbose = 1;
        else if (argv[i][0] == '-')
            usage();
        else {
            find_cases(&cases, argv[i], 0);
            npaths++;
        }
    }
    if (!npaths)
        usage();
    if (xfile)
        read_expected(&xl, xfile);
    if (make_dirs(outdir) != 0)
        die("mkdir -p %s: %s", outdir, strerror(errno));
    signal(SIGSEGV, on_signal);
    signal(SIGBUS, on_signal);
    signal(SIGFPE, on_signal);
    signal(SIGILL, on_signal);
    signal(SIGABRT, on_signal);

    size_t passed = 0, failed = 0, xfail = 0, unexpected = 0, stale = 0;
    double t0 = now(), slowest = 0;
    const char *slowest_key = "";
    for (size_t i = 0; i < cases.n; i++) {
        const test_case *c = &cases.v[i];
        g_current = c->key;
        double t = now();
        char *reason = run_case(c, outdir);
        t = now() - t;
        g_current = NULL;
        if (t > slowest) {
            slowest = t;
            slowest_key = c->key;
        }
        expected_entry *x = find_expected(&xl, c->key);
        if (x)
            x->seen = 1;
        if (!reason) {
            passed++;
            if (verbose)
                printf("ok %s (%.3f s)\n", c->key, t);
        } else {
            failed++;
            if (x) {
                x->failed = 1;
                xfail++;
                printf("FAIL %s: %s (expected: %s)\n", c->key, reason, x->reason);
            } else {
                unexpected++;
                printf("FAIL %s: %s\n", c->key, reason);
            }
            free(reason);
        }
        fflush(stdout);
    }
    /* Stale: listed but passing, or listed under a suite that ran but
     * naming no case in it (entries for suites not run are left alone, so
     * a subset can be run with the full list). */
    for (size_t i = 0; i < xl.n; i++) {
        expected_entry *x = &xl.v[i];
        if (x->seen && !x->failed) {
            stale++;
            printf("STALE %s: listed in %s but passes\n", x->key, xfile);
        } else if (!x->seen) {
            size_t sl = strcspn(x->key, "/");
            int suite_ran = 0;
            for (size_t j = 0; j < cases.n && !suite_ran; j++)
                suite_ran = !strncmp(cases.v[j].key, x->key, sl + 1);
            if (suite_ran) {
                stale++;
                printf("STALE %s: listed in %s but no such test case\n", x->key, xfile);
            }
        }
    }
    printf("%zu cases in %.1f s (slowest %s, %.3f s); exported models under %s\n", cases.n,
           now() - t0, slowest_key, slowest, outdir);
    printf("%zu expected failures (listed), %zu unexpected, %zu stale entries\n", xfail, unexpected,
           stale);
    printf("%zu passed, %zu failed\n", passed, failed);

    for (size_t i = 0; i < cases.n; i++) {
        free(cases.v[i].dir);
        free(cases.v[i].key);
    }
    free(cases.v);
    for (size_t i = 0; i < xl.n; i++) {
        free(xl.v[i].key);
        free(xl.v[i].reason);
    }
    free(xl.v);
    return unexpected || stale ? 1 : 0;
}
