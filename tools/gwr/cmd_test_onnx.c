/* cmd_test_onnx.c - `gwr test-onnx DIR...`: ONNX's backend conformance
 * tests (a model.onnx beside test_data_set_N/input_K.pb and output_K.pb)
 * run on the executor and compared with ONNX's tolerances. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

typedef struct tcase {
    char *name; /* the test's directory name, e.g. test_add_bcast */
    char *dir;
    char *op;   /* the model's main op, for the per-op table */
} tcase;

typedef struct cases {
    tcase *v;
    int64_t n, cap;
} cases;

static int is_dir(const char *p) {
    struct stat st;
    return !stat(p, &st) && S_ISDIR(st.st_mode);
}

static int is_file(const char *p) {
    struct stat st;
    return !stat(p, &st) && S_ISREG(st.st_mode);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted entries of dir whose names start with prefix (NULL: all but dot
 * files); NULL-terminated, *n the count. */
static char **list_dir(const char *dir, const char *prefix, int64_t *n) {
    DIR *d = opendir(dir);
    *n = 0;
    if (!d) return NULL;
    char **v = NULL;
    int64_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || (prefix && strncmp(e->d_name, prefix, strlen(prefix)))) continue;
        if (gwr_grow((void **)&v, sizeof *v, &cap, *n + 2)) break;
        if (!(v[*n] = gwr_strdup(e->d_name))) break;
        v[++*n] = NULL;
    }
    closedir(d);
    if (v) qsort(v, (size_t)*n, sizeof *v, cmp_str);
    return v;
}

static void free_list(char **v) {
    for (int64_t i = 0; v && v[i]; i++) free(v[i]);
    free(v);
}

static char *join(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", a, b);
    return p;
}

/* Test cases under dir (itself one, or up to three levels down). */
static void find_cases(const char *dir, int depth, cases *out) {
    char *model = join(dir, "model.onnx");
    if (model && is_file(model)) {
        const char *base = strrchr(dir, '/');
        if (!gwr_grow((void **)&out->v, sizeof *out->v, &out->cap, out->n + 1))
            out->v[out->n++] = (tcase){gwr_strdup(base ? base + 1 : dir), gwr_strdup(dir), NULL};
        free(model);
        return;
    }
    free(model);
    if (depth >= 3) return;
    int64_t n;
    char **names = list_dir(dir, NULL, &n);
    for (int64_t i = 0; i < n; i++) {
        char *sub = join(dir, names[i]);
        if (sub && is_dir(sub)) find_cases(sub, depth + 1, out);
        free(sub);
    }
    free_list(names);
}

/* ---- comparison ---------------------------------------------------------- */

static int is_floatish(gwr_dtype t) {
    return t == GWR_FLOAT32 || t == GWR_FLOAT64 || t == GWR_FLOAT16 || t == GWR_BFLOAT16;
}

/* 0 when got matches want within rtol/atol; else 1 and why. Sequences
 * and optionals match element by element. */
static int compare(const gwr_value *got, const gwr_value *want, double rtol, double atol, char *why, size_t size) {
    char a[200], b[200];
    if (gwr_value_get_kind(got) != gwr_value_get_kind(want) || gwr_value_length(got) != gwr_value_length(want)) {
        gwr_value_type_str(got, a, sizeof a);
        gwr_value_type_str(want, b, sizeof b);
        snprintf(why, size, "got %.150s, expected %.150s", a, b);
        return 1;
    }
    if (gwr_value_get_kind(got) != GWR_VALUE_TENSOR) {
        for (int64_t i = 0; i < gwr_value_length(got); i++) {
            char w2[300];
            if (compare(gwr_value_element(got, i), gwr_value_element(want, i), rtol, atol, w2, sizeof w2)) {
                snprintf(why, size, "element %lld: %s", (long long)i, w2);
                return 1;
            }
        }
        return 0;
    }
    if (gwr_value_dtype(got) != gwr_value_dtype(want) || gwr_value_rank(got) != gwr_value_rank(want) ||
        memcmp(gwr_value_dims(got), gwr_value_dims(want), (size_t)gwr_value_rank(got) * sizeof(int64_t))) {
        gwr_value_type_str(got, a, sizeof a);
        gwr_value_type_str(want, b, sizeof b);
        snprintf(why, size, "got %.150s, expected %.150s", a, b);
        return 1;
    }
    gwr_dtype dt = gwr_value_dtype(got);
    int64_t n = gwr_value_numel(got);
    if (dt == GWR_STRING) {
        const gwr_bytes *x = gwr_value_cdata(got), *y = gwr_value_cdata(want);
        for (int64_t i = 0; i < n; i++)
            if (x[i].len != y[i].len || (x[i].len && memcmp(x[i].data, y[i].data, x[i].len))) {
                snprintf(why, size, "string %lld differs", (long long)i);
                return 1;
            }
        return 0;
    }
    if (dt == GWR_COMPLEX64 || dt == GWR_COMPLEX128) {
        if (memcmp(gwr_value_cdata(got), gwr_value_cdata(want), gwr_value_nbytes(got))) {
            snprintf(why, size, "%s bytes differ", gwr_dtype_name(dt));
            return 1;
        }
        return 0;
    }
    const gwr_value *g = got, *w = want;
    if (!is_floatish(dt) && !gwr_dtype_is_float(dt)) { /* the integers, the 4 and 2-bit ones too, and bool */
        for (int64_t i = 0; i < n; i++)
            if (gwr_value_get_i64(g, i) != gwr_value_get_i64(w, i)) {
                snprintf(why, size, "element %lld is %lld, expected %lld", (long long)i, (long long)gwr_value_get_i64(g, i),
                         (long long)gwr_value_get_i64(w, i));
                return 1;
            }
        return 0;
    }
    int64_t bad = 0, first = -1;
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = gwr_value_get_f64(g, i), y = gwr_value_get_f64(w, i);
        int ok = (isnan(x) && isnan(y)) || x == y || (isfinite(x) && isfinite(y) && fabs(x - y) <= atol + rtol * fabs(y));
        if (!ok) {
            if (first < 0) first = i;
            bad++;
            if (fabs(x - y) > worst || isnan(x - y)) worst = fabs(x - y);
        }
    }
    if (bad) {
        snprintf(why, size, "%lld of %lld elements differ; element %lld is %.9g, expected %.9g (max abs error %.3g)",
                 (long long)bad, (long long)n, (long long)first, gwr_value_get_f64(g, first), gwr_value_get_f64(w, first), worst);
        return 1;
    }
    return 0;
}

/* ---- one test ------------------------------------------------------------ */

/* --threads: the sessions' intra-op threads (the kernels' loops on a pool). */
static int test_threads = 1;

enum { T_PASS, T_FAIL, T_SKIP };

/* Reads a data file as the kind of value the model declares for it: the
 * declared tensor by position (the file's name may point to another). */
static gwr_value *read_value(const char *path, gwr_network *net, int is_input, int64_t idx, char **name,
                             int *not_tensor, char *why, size_t size) {
    int n = is_input ? gwr_network_num_inputs(net) : gwr_network_num_outputs(net);
    gwr_tensor *decl = idx < n ? (is_input ? gwr_network_input(net, (int)idx) : gwr_network_output(net, (int)idx)) : NULL;
    int read_failed = 0;
    gwr_value *v = cli_read_value(path, net, decl, name, &read_failed);
    if (!v) {
        *not_tensor = read_failed;
        snprintf(why, size, read_failed ? "%s" : "%s: %s", read_failed ? gwr_last_errmsg() : path, gwr_last_errmsg());
    }
    return v;
}

/* Runs every data set of a case in a session of the given optimization;
 * T_PASS, T_FAIL (why) or T_SKIP (why). */
static int run_case_as(tcase *t, gwr_session_optimize mode, double rtol, double atol, char *why, size_t size) {
    char *mpath = join(t->dir, "model.onnx");
    gwr_network *net = mpath ? gwr_onnx_load(mpath, NULL) : NULL;
    free(mpath);
    if (!net) {
        snprintf(why, size, "load: %s", gwr_last_errmsg());
        return T_FAIL;
    }
    for (int64_t i = 0; i < gwr_network_num_layers(net) && !t->op; i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        if (strcmp(gwr_layer_op(l), "Constant") || gwr_layer_prop(l, "onnx.constant_node", NULL)) t->op = gwr_strdup(gwr_layer_op(l));
    }
    int result = T_PASS;
    gwr_session_options so = {.optimize = mode, .threads = test_threads};
    gwr_session *s = gwr_session_new(net, &so);
    if (!s) {
        snprintf(why, size, "%s", gwr_last_errmsg());
        gwr_network_free(net);
        return T_FAIL;
    }
    int64_t nsets;
    char **sets = list_dir(t->dir, "test_data_set_", &nsets);
    if (!nsets) {
        snprintf(why, size, "no test_data_set_*");
        result = T_SKIP;
    }
    int no = gwr_network_num_outputs(net);
    for (int64_t k = 0; k < nsets && result == T_PASS; k++) {
        char *sdir = join(t->dir, sets[k]);
        int64_t nin = 0, nout = 0;
        char **ins = sdir ? list_dir(sdir, "input_", &nin) : NULL, **outs = sdir ? list_dir(sdir, "output_", &nout) : NULL;
        /* input_10 sorts before input_2: order by number. */
        gwr_value **iv = calloc((size_t)nin + 1, sizeof *iv), **ov = calloc((size_t)no + 1, sizeof *ov),
                  **want = calloc((size_t)nout + 1, sizeof *want);
        char **names = calloc((size_t)nin + 1, sizeof *names);
        int not_tensor = 0;
        for (int64_t i = 0; i < nin && result == T_PASS; i++) {
            char fn[64], *p;
            snprintf(fn, sizeof fn, "input_%lld.pb", (long long)i);
            if (!(p = join(sdir, fn)) || !(iv[i] = read_value(p, net, 1, i, &names[i], &not_tensor, why, size)))
                result = not_tensor ? T_SKIP : T_FAIL;
            free(p);
            /* Unnamed: the i-th graph input without a default. */
            if (result == T_PASS && (!names[i] || !*names[i])) {
                int seen = 0;
                free(names[i]);
                names[i] = NULL;
                for (int j = 0; j < gwr_network_num_inputs(net) && !names[i]; j++) {
                    gwr_tensor *x = gwr_network_input(net, j);
                    if (gwr_tensor_default(x)) continue;
                    if (seen++ == i) names[i] = gwr_strdup(gwr_tensor_name(x));
                }
                if (!names[i]) snprintf(why, size, "input_%lld.pb has no name and no graph input to match", (long long)i), result = T_FAIL;
            }
        }
        for (int64_t i = 0; i < nout && result == T_PASS; i++) {
            char fn[64], *p;
            snprintf(fn, sizeof fn, "output_%lld.pb", (long long)i);
            char *nm = NULL;
            if (!(p = join(sdir, fn)) || !(want[i] = read_value(p, net, 0, i, &nm, &not_tensor, why, size)))
                result = not_tensor ? T_SKIP : T_FAIL;
            free(p), free(nm);
        }
        if (result == T_PASS && nout != no) {
            snprintf(why, size, "%lld expected outputs for %d network outputs", (long long)nout, no);
            result = T_FAIL;
        }
        if (result == T_PASS && gwr_session_run(s, (int)nin, (const char *const *)names, iv, no, NULL, ov)) {
            snprintf(why, size, "%s", gwr_session_errmsg(s));
            result = T_FAIL;
        }
        for (int64_t i = 0; i < nout && result == T_PASS; i++) {
            char w2[400];
            if (compare(ov[i], want[i], rtol, atol, w2, sizeof w2)) {
                snprintf(why, size, "output %lld ('%s'): %s", (long long)i, gwr_tensor_name(gwr_network_output(net, (int)i)), w2);
                result = T_FAIL;
            }
        }
        for (int64_t i = 0; i < nin; i++) gwr_value_release(iv[i]), free(names[i]);
        for (int i = 0; i < no; i++) gwr_value_release(ov[i]);
        for (int64_t i = 0; i < nout; i++) gwr_value_release(want[i]);
        free(iv), free(ov), free(want), free(names);
        free_list(ins), free_list(outs), free(sdir);
        if (result == T_SKIP) {
            char w2[600];
            snprintf(w2, sizeof w2, "data is not a tensor (%s)", why);
            snprintf(why, size, "%s", w2);
        }
    }
    free_list(sets);
    gwr_session_free(s);
    gwr_network_free(net);
    return result;
}

/* A case passes when it passes as written and, unless `raw_only`, in an
 * optimized session too: the optimizer must not lose a test. */
static int run_case(tcase *t, int raw_only, double rtol, double atol, char *why, size_t size) {
    int r = run_case_as(t, GWR_SESSION_RAW, rtol, atol, why, size);
    if (r != T_PASS || raw_only) return r;
    char w[600];
    if ((r = run_case_as(t, GWR_SESSION_OPTIMIZE, rtol, atol, w, sizeof w)) != T_PASS)
        snprintf(why, size, "optimized session: %s", w);
    return r;
}

/* ---- expected failures --------------------------------------------------- */

typedef struct expected {
    char **names;
    int64_t n, cap;
    char *hit; /* per entry: the test failed */
} expected;

/* "test_name reason..." per line; '#' starts a comment. */
static int read_expected(const char *path, expected *x) {
    FILE *f = fopen(path, "r");
    if (!f) {
        char m[300];
        snprintf(m, sizeof m, "cannot open: %s", strerror(errno));
        cli_error(path, m);
        return -1;
    }
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == '#' || *p == '\n' || !*p) continue;
        size_t k = strcspn(p, " \t\n");
        if (gwr_grow((void **)&x->names, sizeof *x->names, &x->cap, x->n + 1)) break;
        x->names[x->n++] = gwr_memdup(p, k);
    }
    fclose(f);
    x->hit = calloc((size_t)x->n + 1, 1);
    return x->hit ? 0 : -1;
}

static int64_t find_expected(const expected *x, const char *name) {
    for (int64_t i = 0; i < x->n; i++)
        if (x->names[i] && !strcmp(x->names[i], name)) return i;
    return -1;
}

/* ---- the per-op table ---------------------------------------------------- */

typedef struct opcount {
    const char *op;
    int pass, fail, skip;
} opcount;

static int cmp_op(const void *a, const void *b) { return strcmp(((const opcount *)a)->op, ((const opcount *)b)->op); }

static int write_table(const char *path, const cases *cs, const int *res, const char *const *dirs, int ndirs) {
    opcount *ops = calloc((size_t)cs->n + 1, sizeof *ops);
    int64_t nops = 0;
    for (int64_t i = 0; ops && i < cs->n; i++) {
        const char *op = cs->v[i].op ? cs->v[i].op : "(none)";
        int64_t k = 0;
        while (k < nops && strcmp(ops[k].op, op)) k++;
        if (k == nops) ops[nops++].op = op;
        if (res[i] == T_PASS) ops[k].pass++;
        else if (res[i] == T_FAIL) ops[k].fail++;
        else ops[k].skip++;
    }
    char *tmp = cli_temp_name(path);
    FILE *f = tmp ? fopen(tmp, "w") : NULL;
    if (!ops || !f) {
        cli_error(path, "cannot write");
        free(ops), free(tmp);
        return -1;
    }
    qsort(ops, (size_t)nops, sizeof *ops, cmp_op);
    fprintf(f, "| op | tests | passed | failed | skipped |\n| --- | ---: | ---: | ---: | ---: |\n");
    for (int64_t k = 0; k < nops; k++)
        fprintf(f, "| %s | %d | %d | %d | %d |\n", ops[k].op, ops[k].pass + ops[k].fail + ops[k].skip, ops[k].pass,
                ops[k].fail, ops[k].skip);
    (void)dirs, (void)ndirs;
    int bad = fclose(f) || rename(tmp, path);
    if (bad) remove(tmp), cli_error(path, "cannot write");
    free(ops), free(tmp);
    return bad ? -1 : 0;
}

/* ---- the command --------------------------------------------------------- */

static void help(FILE *out) {
    fprintf(out,
            "usage: gwr test-onnx [options] DIR...\n"
            "Runs every ONNX backend test case under the directories (a model.onnx beside\n"
            "test_data_set_*/input_*.pb and output_*.pb) on gwr's executor and compares the\n"
            "outputs: |got - expected| <= atol + rtol * |expected|, NaN equal to NaN.\n"
            "Prints one line per failure and then 'N passed, M failed, K skipped'. Exits 0\n"
            "when every failure is listed in the expected-failures file and every listed\n"
            "test fails.\n"
            "  --expected FILE   expected failures: one test name (and the reason) per line\n"
            "  --filter TEXT     only tests whose name contains TEXT\n"
            "  --rtol R          relative tolerance (default 1e-3)\n"
            "  --atol A          absolute tolerance (default 1e-7)\n"
            "  --table FILE      write a Markdown table of results per op\n"
            "  --write-expected FILE  write the failures found, in the expected-failures format\n"
            "  --threads N       run the sessions with N intra-op threads (default 1)\n"
            "  --no-optimize     run each test as written only (by default each runs as\n"
            "                    written and in an optimized session, and passes when both do)\n"
            "  -v, --verbose     a line for every test\n");
}

static int run(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        help(stdout);
        return CLI_OK;
    }
    const char *exp_path = NULL, *filter = NULL, *table = NULL, *write_exp = NULL;
    double rtol = 1e-3, atol = 1e-7;
    int verbose = 0, ndirs = 0, raw_only = 0;
    const char **dirs = calloc((size_t)argc, sizeof *dirs);
    if (!dirs) return CLI_FAIL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--expected") && more) exp_path = argv[++i];
        else if (!strcmp(a, "--filter") && more) filter = argv[++i];
        else if (!strcmp(a, "--table") && more) table = argv[++i];
        else if (!strcmp(a, "--write-expected") && more) write_exp = argv[++i];
        else if ((!strcmp(a, "--rtol") || !strcmp(a, "--atol")) && more) {
            char *end;
            double v = strtod(argv[++i], &end);
            if (*end || !(v >= 0)) {
                free(dirs);
                return cli_usage("test-onnx", "%s needs a non-negative number, not '%s'", a, argv[i]);
            }
            if (a[2] == 'r') rtol = v;
            else atol = v;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) verbose = 1;
        else if (!strcmp(a, "--no-optimize")) raw_only = 1;
        else if (!strcmp(a, "--threads") && more) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 256) {
                free(dirs);
                return cli_usage("test-onnx", "--threads needs a count from 1 to 256, not '%s'", argv[i]);
            }
            test_threads = (int)v;
        }
        else if (a[0] == '-' && a[1]) {
            free(dirs);
            return cli_usage("test-onnx", "unknown option or missing value: '%s'", a);
        } else dirs[ndirs++] = a;
    }
    if (!ndirs) {
        free(dirs);
        return cli_usage("test-onnx", "no test directory given");
    }
    cases cs = {0};
    for (int d = 0; d < ndirs; d++) {
        if (!is_dir(dirs[d])) {
            cli_error(dirs[d], "not a directory");
            free(dirs);
            return CLI_FAIL;
        }
        int64_t before = cs.n;
        find_cases(dirs[d], 0, &cs);
        if (cs.n == before) fprintf(stderr, "gwr: %s: no test cases\n", dirs[d]);
    }
    expected ex = {0};
    if (exp_path && read_expected(exp_path, &ex)) {
        free(dirs);
        return CLI_FAIL;
    }
    int *res = calloc((size_t)cs.n + 1, sizeof *res);
    FILE *wf = NULL;
    char *wtmp = write_exp ? cli_temp_name(write_exp) : NULL;
    if (write_exp && (!wtmp || !(wf = fopen(wtmp, "w")))) {
        cli_error(write_exp, "cannot write");
        free(dirs), free(res), free(wtmp);
        return CLI_FAIL;
    }
    int npass = 0, nfail = 0, nskip = 0, unexpected = 0;
    for (int64_t i = 0; res && i < cs.n; i++) {
        tcase *t = &cs.v[i];
        if (filter && !strstr(t->name, filter)) {
            res[i] = -1;
            continue;
        }
        char why[1200] = "";
        res[i] = run_case(t, raw_only, rtol, atol, why, sizeof why);
        for (char *p = why; *p; p++)
            if (*p == '\n' || *p == '\t') *p = ' ';
        int64_t e = find_expected(&ex, t->name);
        if (res[i] == T_PASS) {
            npass++;
            if (verbose) printf("ok %s\n", t->name);
        } else if (res[i] == T_SKIP) {
            nskip++;
            printf("SKIP %s: %s\n", t->name, why);
        } else {
            nfail++;
            if (e >= 0) ex.hit[e] = 1;
            else unexpected++;
            printf("FAIL %s: %s%s\n", t->name, why, e >= 0 ? " (expected)" : "");
            if (wf) fprintf(wf, "%s %s\n", t->name, why);
        }
    }
    int stale = 0;
    for (int64_t e = 0; e < ex.n; e++) {
        if (ex.hit[e]) continue;
        int64_t i = 0;
        while (i < cs.n && strcmp(cs.v[i].name, ex.names[e])) i++;
        if (i < cs.n && res[i] < 0) continue; /* filtered out */
        stale++;
        printf("STALE %s: listed in %s but %s\n", ex.names[e], exp_path,
               i == cs.n ? "not found" : res[i] == T_PASS ? "passes" : "skipped");
    }
    if (wf) {
        int bad = fclose(wf) || rename(wtmp, write_exp);
        if (bad) cli_error(write_exp, "cannot write"), remove(wtmp);
    }
    if (table && res) {
        for (int64_t i = 0; i < cs.n; i++)
            if (res[i] < 0) res[i] = T_SKIP;
        write_table(table, &cs, res, dirs, ndirs);
    }
    printf("%d passed, %d failed, %d skipped\n", npass, nfail, nskip);
    if (exp_path) printf("%d unexpected failures, %d stale entries in %s\n", unexpected, stale, exp_path);
    for (int64_t i = 0; i < cs.n; i++) free(cs.v[i].name), free(cs.v[i].dir), free(cs.v[i].op);
    for (int64_t e = 0; e < ex.n; e++) free(ex.names[e]);
    free(cs.v), free(ex.names), free(ex.hit), free(res), free(dirs), free(wtmp);
    return (unexpected || stale || (!exp_path && nfail)) ? CLI_FAIL : CLI_OK;
}

const cli_command cli_test_onnx = {"test-onnx", "run ONNX backend conformance tests on the executor", run, help};
