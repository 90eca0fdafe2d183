/* cmd_run.c - `gwr run MODEL` (run a model on the executor and show or
 * save its outputs) and `gwr verify A B` (run two models on the same
 * inputs and compare their outputs): the proof that a rewrite changed no
 * output. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- inputs -------------------------------------------------------------- */

/* Splits "NAME=REST" (NAME non-empty); -1 on a bad form. */
static int split_named(const char *arg, cli_named *out) {
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1]) return -1;
    *out = (cli_named){arg, (size_t)(eq - arg), eq + 1, 0};
    return 0;
}

static cli_named *find_named(cli_named *v, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strlen(name) == v[i].namelen && !strncmp(v[i].arg, name, v[i].namelen)) return &v[i];
    return NULL;
}

void cli_inputs_free(cli_inputs *in) {
    gwr_inputs_free(&in->in);
    for (int i = 0; i < in->nfiles; i++) gwr_value_release(in->files[i]), free(in->file_names[i]);
    free(in->files), free(in->file_names);
    memset(in, 0, sizeof *in);
}

static char *name_of(const cli_named *nm) {
    char *s = malloc(nm->namelen + 1);
    if (s) memcpy(s, nm->arg, nm->namelen), s[nm->namelen] = 0;
    return s;
}

/* Values for every input of net without a default (and those given), made
 * by gwr_exec_make_inputs: from --input files, else random of the --shape
 * given (whole shapes, symbolic dims bound) or the declared dims (unbound
 * symbols 1; an unknown unnamed dim is refused, naming the input and the
 * dim). One line on error. */
int cli_make_inputs(const char *cmd, gwr_network *net, cli_input_spec *spec, cli_inputs *out) {
    out->nfiles = spec->nfiles;
    out->files = calloc((size_t)spec->nfiles + 1, sizeof *out->files);
    out->file_names = calloc((size_t)spec->nfiles + 1, sizeof *out->file_names);
    if (!out->files || !out->file_names) {
        cli_error(cmd, "out of memory");
        return CLI_FAIL;
    }
    cli_shapes *sh = &spec->shapes;
    int rc = cli_shapes_resolve(sh, cmd, net, NULL);
    if (rc) return rc;
    /* The files of inputs the model has, in the model's input order; the
     * library reports the others. */
    for (int i = 0; i < spec->nfiles; i++) {
        if (!(out->file_names[i] = name_of(&spec->files[i]))) {
            cli_error(cmd, "out of memory");
            return CLI_FAIL;
        }
        const gwr_input_shape *whole = cli_shapes_input(sh, out->file_names[i]);
        if (whole)
            return cli_usage(cmd, "--shape '%s': input '%s' comes from --input '%s'", sh->input_arg[whole - sh->inputs],
                             whole->name, spec->files[i].arg);
    }
    if ((rc = cli_shapes_need_known(sh, cmd, net, (const char *const *)out->file_names, spec->nfiles))) return rc;
    for (int k = 0; k < gwr_network_num_inputs(net); k++) {
        const char *name = gwr_tensor_name(gwr_network_input(net, k));
        cli_named *f = find_named(spec->files, spec->nfiles, name);
        if (!f) continue;
        int read_failed;
        gwr_value *v = cli_read_value(f->rest, NULL, gwr_network_input(net, k), NULL, &read_failed);
        if (!v) {
            cli_error(read_failed ? f->rest : cmd, gwr_last_errmsg());
            return CLI_FAIL;
        }
        out->files[f - spec->files] = v;
        /* A file of another dtype or shape than the input is bad usage,
         * named here rather than by the session at run time. */
        char why[160], have[256], want[256];
        if (!gwr_value_fits(gwr_network_input(net, k), v, why, sizeof why)) {
            gwr_value_type_str(v, have, sizeof have);
            gwr_tensor_type_str(gwr_network_input(net, k), want, sizeof want);
            return cli_usage(cmd, "--input '%s': the file holds %s, input '%s' is %s: %s", f->arg, have, name, want, why);
        }
    }
    gwr_input_options io = {.seed = spec->seed, .ngiven = spec->nfiles, .given_names = (const char *const *)out->file_names,
                            .given_values = out->files, .nshapes = sh->ninputs, .shapes = sh->inputs,
                            .nbind = sh->nbind, .bind = sh->bind};
    gwr_status st = gwr_exec_make_inputs(net, &io, &out->in);
    if (!st) return CLI_OK;
    if (out->in.bad_given >= 0) return cli_usage(cmd, "--input '%s': %s", spec->files[out->in.bad_given].arg, gwr_last_errmsg());
    if (out->in.bad_shape >= 0) return cli_usage(cmd, "--shape '%s': %s", sh->input_arg[out->in.bad_shape], gwr_last_errmsg());
    if (st == GWR_ERR_TYPE && out->in.bad_input) {
        fprintf(stderr, "gwr: %s: input '%s' has no tensor type: give its data with --input %s=FILE.pb\n", cmd,
                out->in.bad_input, out->in.bad_input);
        return CLI_FAIL;
    }
    cli_error(cmd, gwr_last_errmsg());
    return CLI_FAIL;
}

/* Parses the options run and verify share; 1 when argv[*i] was one. */
int cli_input_option(const char *cmd, int argc, char **argv, int *i, cli_input_spec *spec, int *rc) {
    const char *a = argv[*i];
    int more = *i + 1 < argc;
    if (!strcmp(a, "--shape") && more) {
        *rc = cli_shapes_add(&spec->shapes, cmd, argv[++*i]);
        return 1;
    }
    if (!strcmp(a, "--input") && more) {
        cli_named nm;
        if (split_named(argv[++*i], &nm)) {
            *rc = cli_usage(cmd, "--input '%s': expected NAME=FILE.pb", argv[*i]);
            return 1;
        }
        for (int k = 0; k < spec->nfiles; k++)
            if (spec->files[k].namelen == nm.namelen && !strncmp(spec->files[k].arg, nm.arg, nm.namelen)) {
                *rc = cli_usage(cmd, "--input '%s': input given twice", nm.arg);
                return 1;
            }
        cli_named *nv = realloc(spec->files, (size_t)(spec->nfiles + 1) * sizeof *nv);
        if (!nv) {
            cli_error(cmd, "out of memory");
            *rc = CLI_FAIL;
            return 1;
        }
        spec->files = nv;
        nv[spec->nfiles++] = nm;
        return 1;
    }
    if ((!strcmp(a, "--random") || !strcmp(a, "--seed")) && more) {
        char *end;
        errno = 0;
        unsigned long long s = strtoull(argv[++*i], &end, 10);
        if (!*argv[*i] || *end || errno || argv[*i][0] == '-') *rc = cli_usage(cmd, "%s needs an integer >= 0", a);
        spec->seed = s;
        return 1;
    }
    return 0;
}

/* ---- printing ------------------------------------------------------------ */

static void print_values(const gwr_value *v, FILE *out) {
    if (gwr_value_get_kind(v) != GWR_VALUE_TENSOR) { /* a sequence or an optional: its tensors' types */
        int64_t n = gwr_value_length(v), show = n < 8 ? n : 8;
        fputs(" [", out);
        for (int64_t i = 0; i < show; i++) {
            char ty[160];
            gwr_value_type_str(gwr_value_element(v, i), ty, sizeof ty);
            fprintf(out, "%s%s", i ? ", " : "", ty);
        }
        fprintf(out, "%s]", n > show ? ", ..." : "");
        return;
    }
    int64_t n = gwr_value_numel(v), show = n < 8 ? n : 8;
    gwr_dtype dt = gwr_value_dtype(v);
    fputs(" [", out);
    for (int64_t i = 0; i < show; i++) {
        if (i) fputs(", ", out);
        if (dt == GWR_STRING) {
            const gwr_bytes *b = (const gwr_bytes *)gwr_value_cdata(v) + i;
            fprintf(out, "\"%.*s\"", (int)(b->len < 40 ? b->len : 40), b->data);
        } else if (dt == GWR_FLOAT32 || dt == GWR_FLOAT64 || dt == GWR_FLOAT16 || dt == GWR_BFLOAT16) {
            fprintf(out, "%.6g", gwr_value_get_f64(v, i));
        } else {
            fprintf(out, "%lld", (long long)gwr_value_get_i64(v, i));
        }
    }
    fprintf(out, "%s]", n > show ? ", ..." : "");
}

/* ---- gwr run ------------------------------------------------------------- */

static void run_help(FILE *out) {
    fprintf(out,
            "usage: gwr run MODEL [--input NAME=FILE.pb ...] [--random SEED] [--shape INPUT=D0,D1,... | SYM=N]\n"
            "               [-o DIR] [--threads N] [--repeat N] [--no-optimize] [--profile FILE.json]\n"
            "\n"
            "Runs an ONNX model on gwr's CPU executor. Inputs come from TensorProto files\n"
            "(--input); the others get seeded random data (floats in [-1, 1), integers in\n"
            "[0, 3]) of the shape given with --shape, or of the declared shape with\n"
            "symbolic dims 1 unless bound (an unknown unnamed dim must be given). Prints each output's name, type and first values, the time of\n"
            "the run and the memory plan's peak against the sum of all tensor sizes.\n"
            "The session optimizes a private copy of the model first (the passes that make\n"
            "gwr's executor faster); the planning time printed includes that.\n"
            "\n"
            "  --input NAME=FILE.pb  input NAME from a serialized TensorProto\n"
            "  --random SEED         seed of the random inputs (default 0)\n"
            "  --shape INPUT=DIMS    the whole shape of random input INPUT, e.g. x=1,128,256\n"
            "                        (x=scalar for rank 0); its symbolic dims are bound too\n"
            "  --shape SYM=N         the extent of symbolic dim SYM in every input, e.g. batch=4\n"
            "                        (the name decides: an input's or a symbolic dim's)\n"
            "  -o DIR                write DIR/input_0.pb, ..., output_0.pb, ... (TensorProto,\n"
            "                        named): ONNX's test-case layout\n"
            "  --threads N           intra-op threads (default 1)\n"
            "  --repeat N            run N times, report the best and the median time\n"
            "  --no-optimize         run the model as written\n"
            "  --profile FILE.json   time every layer of every run and the phases (load,\n"
            "                        optimize, plan): FILE.json in Chrome's trace format\n"
            "                        (chrome://tracing, Perfetto); the 10 costliest op types\n"
            "                        and layers on stdout (total ms, %% of the layers' time,\n"
            "                        calls)\n"
            "\n"
            "Exit status: 0 success, 1 the model cannot be read or run, 2 bad usage.\n");
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int cli_mkdir_p(const char *dir) {
    char *p = gwr_strdup(dir);
    if (!p) return -1;
    for (char *q = p + 1; *q; q++)
        if (*q == '/') {
            *q = 0;
            if (mkdir(p, 0777) && errno != EEXIST) return free(p), -1;
            *q = '/';
        }
    int r = mkdir(p, 0777) && errno != EEXIST ? -1 : 0;
    free(p);
    return r;
}

/* The shapes of the inputs about to run, made known to the session before
 * it optimizes (`gwr run` runs nothing else): each symbolic dim of an input
 * is bound to the extent its value has (a symbol two inputs give different
 * extents stays unbound), and unknown unnamed dims are written into the
 * inputs (cli_shapes_apply). The passes that need known dims then fire
 * (magika's GELU chains became gwr::ElementwiseChains only so). The
 * bindings' names point into the network. */
static int specialize(const char *model, gwr_network *net, const cli_inputs *in, cli_shapes *sh) {
    int n = in->in.n;
    sh->inputs = calloc((size_t)n + 1, sizeof *sh->inputs);
    sh->bind = calloc((size_t)n * GWR_MAX_RANK + 1, sizeof *sh->bind);
    if (!sh->inputs || !sh->bind) {
        cli_error("run", "out of memory");
        return CLI_FAIL;
    }
    for (int i = 0; i < n; i++) {
        gwr_tensor *t = NULL;
        for (int k = 0; k < gwr_network_num_inputs(net); k++)
            if (!strcmp(gwr_tensor_name(gwr_network_input(net, k)), in->in.names[i])) t = gwr_network_input(net, k);
        const gwr_value *v = in->in.values[i];
        int r = gwr_value_rank(v);
        if (!t || r < 0 || gwr_tensor_rank(t) != r) continue;
        const int64_t *d = gwr_value_dims(v);
        sh->inputs[sh->ninputs++] = (gwr_input_shape){in->in.names[i], r, d};
        for (int a = 0; a < r; a++) {
            gwr_dim x = gwr_tensor_dim(t, a);
            const char *sym = GWR_DIM_IS_SYM(x) ? gwr_network_dim_name(net, x) : NULL;
            if (!sym) continue;
            int j = 0;
            while (j < sh->nbind && strcmp(sh->bind[j].name, sym)) j++;
            if (j == sh->nbind) sh->bind[sh->nbind++] = (gwr_dim_binding){sym, d[a]};
            else if (sh->bind[j].value != d[a]) sh->bind[j].value = -1; /* two extents: left unbound */
        }
    }
    int m = 0;
    for (int j = 0; j < sh->nbind; j++)
        if (sh->bind[j].value >= 0) sh->bind[m++] = sh->bind[j];
    sh->nbind = m;
    return cli_shapes_apply(sh, "run", model, net);
}

static int run_cmd(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        run_help(stdout);
        return CLI_OK;
    }
    const char *model = NULL, *odir = NULL, *profile = NULL;
    cli_input_spec spec = {0};
    int threads = 1, repeat = 1, rc = CLI_OK, raw = 0;
    for (int i = 1; i < argc && rc == CLI_OK; i++) {
        const char *a = argv[i];
        if (cli_input_option("run", argc, argv, &i, &spec, &rc)) continue;
        if (!strcmp(a, "-o") && i + 1 < argc) odir = argv[++i];
        else if (!strcmp(a, "--profile") && i + 1 < argc) profile = argv[++i];
        else if (!strcmp(a, "--no-optimize")) raw = 1;
        else if ((!strcmp(a, "--threads") || !strcmp(a, "--repeat")) && i + 1 < argc) {
            int64_t v = 0;
            const char *why = "below 1";
            int64_t most = a[2] == 't' ? GWR_SESSION_MAX_THREADS : 1000000;
            if (cli_parse_int(argv[++i], &v, &why) || v < 1)
                rc = cli_usage("run", "%s '%s': %s; an integer >= 1", a, argv[i], why);
            else if (v > most)
                rc = cli_usage("run", "%s '%s': at most %lld%s", a, argv[i], (long long)most,
                               a[2] == 't' ? " threads (GWR_SESSION_MAX_THREADS)" : " runs");
            else if (a[2] == 't') threads = (int)v;
            else repeat = (int)v;
        } else if (a[0] == '-' && a[1]) rc = cli_usage("run", "unknown option or missing value: '%s'", a);
        else if (!model) model = a;
        else rc = cli_usage("run", "unexpected argument '%s': one MODEL", a);
    }
    if (rc == CLI_OK && !model) rc = cli_usage("run", "no MODEL given");
    gwr_network *net = NULL;
    gwr_session *s = NULL;
    cli_inputs in = {0};
    cli_shapes known = {0}; /* the inputs' shapes, for the session (specialize) */
    gwr_value **outs = NULL;
    double *times = NULL;
    if (rc) goto done;
    rc = CLI_FAIL;
    gwr_onnx_load_options lo = {.infer_shapes = 1};
    int64_t load_start = gwr_clock_ns();
    if (!(net = cli_load(model, &lo))) goto done;
    int64_t load_end = gwr_clock_ns();
    if ((rc = cli_make_inputs("run", net, &spec, &in))) goto done;
    rc = CLI_FAIL;
    if (!raw && specialize(model, net, &in, &known)) goto done;
    double t0 = now_s();
    int64_t new_start = gwr_clock_ns();
    gwr_session_options so = {.threads = threads, .optimize = raw ? GWR_SESSION_RAW : GWR_SESSION_OPTIMIZE,
                              .nbind = known.nbind, .bind = known.bind};
    if (!(s = gwr_session_new(net, &so))) {
        cli_error(model, gwr_last_errmsg());
        goto done;
    }
    double plan_s = now_s() - t0;
    if (profile && cli_profile_start(s, model, load_start, load_end, new_start))
        goto done;
    if (!raw && !gwr_session_optimized(s))
        fprintf(stderr, "gwr: %s: running the model as written: %s\n", model, gwr_session_optimize_msg(s));
    int no = gwr_network_num_outputs(net);
    outs = calloc((size_t)no + 1, sizeof *outs);
    times = calloc((size_t)repeat, sizeof *times);
    if (!outs || !times) goto done;
    for (int r = 0; r < repeat; r++) {
        for (int i = 0; i < no; i++) gwr_value_release(outs[i]), outs[i] = NULL;
        double a = now_s();
        if (gwr_session_run(s, in.in.n, in.in.names, in.in.values, no, NULL, outs)) {
            cli_error(model, gwr_session_errmsg(s));
            goto done;
        }
        times[r] = now_s() - a;
    }
    for (int i = 0; i < no; i++) {
        char ty[256];
        gwr_value_type_str(outs[i], ty, sizeof ty);
        printf("%s: %s", gwr_tensor_name(gwr_network_output(net, i)), ty);
        print_values(outs[i], stdout);
        putchar('\n');
    }
    qsort(times, (size_t)repeat, sizeof *times, cmp_d);
    const char *how = gwr_session_optimized(s) ? "optimized" : "as written";
    if (repeat > 1) printf("run: best %.3f ms, median %.3f ms of %d (plan %.3f ms %s, %d thread%s)\n", times[0] * 1e3,
                           times[repeat / 2] * 1e3, repeat, plan_s * 1e3, how, threads, threads > 1 ? "s" : "");
    else printf("run: %.3f ms (plan %.3f ms %s, %d thread%s)\n", times[0] * 1e3, plan_s * 1e3, how, threads,
                threads > 1 ? "s" : "");
    printf("memory: peak %lld bytes of intermediate values; %lld bytes if none were reused\n",
           (long long)gwr_session_peak_bytes(s), (long long)gwr_session_total_bytes(s));
    if (profile && cli_profile_finish(s, profile, 10)) goto done;
    if (odir) {
        if (cli_mkdir_p(odir)) {
            char m[300];
            snprintf(m, sizeof m, "cannot create the directory: %s", strerror(errno));
            cli_error(odir, m);
            goto done;
        }
        /* The inputs too: DIR is then a test case of ONNX's layout. */
        for (int i = 0; i < in.in.n + no; i++) {
            char path[4096];
            int io = i >= in.in.n;
            snprintf(path, sizeof path, "%s/%s_%d.pb", odir, io ? "output" : "input", io ? i - in.in.n : i);
            gwr_weights w;
            if (gwr_value_to_weights(io ? outs[i - in.in.n] : in.in.values[i], &w)) { /* a sequence or an optional */
                cli_error(path, gwr_last_errmsg());
                goto done;
            }
            gwr_status st = gwr_onnx_write_tensor(
                path, io ? gwr_tensor_name(gwr_network_output(net, i - in.in.n)) : in.in.names[i], &w);
            gwr_buffer_release(w.buffer);
            if (st) {
                cli_error(path, gwr_last_errmsg());
                goto done;
            }
        }
        printf("wrote %d input%s and %d output%s to %s\n", in.in.n, in.in.n == 1 ? "" : "s", no, no == 1 ? "" : "s", odir);
    }
    rc = CLI_OK;
done:
    for (int i = 0; outs && net && i < gwr_network_num_outputs(net); i++) gwr_value_release(outs[i]);
    free(outs), free(times);
    free(known.inputs), free(known.bind); /* names and dims point into the network and the inputs */
    cli_inputs_free(&in);
    gwr_session_free(s);
    gwr_network_free(net);
    free(spec.files), cli_shapes_free(&spec.shapes);
    return rc;
}

/* ---- gwr verify ---------------------------------------------------------- */

static void verify_help(FILE *out) {
    fprintf(out,
            "usage: gwr verify A B [--input NAME=FILE.pb ...] [--random SEED] [--shape INPUT=D0,D1,... | SYM=N]\n"
            "                  [--rtol R] [--atol A] [--no-optimize]\n"
            "\n"
            "Runs two ONNX models (a model and its rewrite, say) on the same inputs (as gwr run\n"
            "makes them) and compares their outputs by name: prints the largest absolute and\n"
            "relative error of each. An output is within tolerance when every element has\n"
            "|a - b| <= atol + rtol * |b| (NaN matching NaN).\n"
            "\n"
            "  --rtol R   relative tolerance (default 1e-4)\n"
            "  --atol A   absolute tolerance (default 1e-5)\n"
            "  --no-optimize  run both models as written (by default each session runs an\n"
            "             optimized copy, as gwr run does)\n"
            "\n"
            "Exit status: 0 all outputs within tolerance, 1 an output differs (or a model\n"
            "cannot be read or run), 2 bad usage.\n");
}

static int verify_cmd(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        verify_help(stdout);
        return CLI_OK;
    }
    const char *pa = NULL, *pb = NULL;
    cli_input_spec spec = {0};
    double rtol = 1e-4, atol = 1e-5;
    int rc = CLI_OK, raw = 0;
    for (int i = 1; i < argc && rc == CLI_OK; i++) {
        const char *a = argv[i];
        if (cli_input_option("verify", argc, argv, &i, &spec, &rc)) continue;
        if (!strcmp(a, "--no-optimize")) raw = 1;
        else if ((!strcmp(a, "--rtol") || !strcmp(a, "--atol")) && i + 1 < argc) {
            char *end;
            double v = strtod(argv[++i], &end);
            if (*end || !(v >= 0)) rc = cli_usage("verify", "%s needs a number >= 0, not '%s'", a, argv[i]);
            else if (a[2] == 'r') rtol = v;
            else atol = v;
        } else if (a[0] == '-' && a[1]) rc = cli_usage("verify", "unknown option or missing value: '%s'", a);
        else if (!pa) pa = a;
        else if (!pb) pb = a;
        else rc = cli_usage("verify", "unexpected argument '%s': two models", a);
    }
    if (rc == CLI_OK && !pb) rc = cli_usage("verify", "two models needed, A and B");
    gwr_network *na = NULL, *nb = NULL;
    cli_inputs in = {0};
    gwr_compare_report rep = {0};
    if (rc) goto done;
    rc = CLI_FAIL;
    gwr_onnx_load_options lo = {.infer_shapes = 1};
    if (!(na = cli_load(pa, &lo)) || !(nb = cli_load(pb, &lo))) goto done;
    if ((rc = cli_make_inputs("verify", na, &spec, &in))) goto done;
    rc = CLI_FAIL;
    /* Every input made: the library runs both on exactly these. */
    gwr_compare_options co = {.atol = atol, .rtol = rtol,
                              .inputs = {.ngiven = in.in.n, .given_names = in.in.names, .given_values = in.in.values},
                              .session_new = raw ? NULL : gwr_session_new};
    if (gwr_exec_compare(na, nb, &co, &rep)) {
        if (rep.error_in) cli_error(rep.error_in == 1 ? pa : pb, gwr_last_errmsg());
        else fprintf(stderr, "gwr: verify %s %s: %s\n", pa, pb, gwr_last_errmsg());
        goto done;
    }
    for (int i = 0; i < rep.noutputs; i++) {
        const gwr_compare_output *o = &rep.outputs[i];
        char tx[256], ty[256];
        gwr_value_type_str(o->a, tx, sizeof tx);
        gwr_value_type_str(o->b, ty, sizeof ty);
        if (!o->same_type) {
            printf("%s: %s in %s, %s in %s\n", o->name, tx, pa, ty, pb);
            continue;
        }
        printf("%s: %s, max abs error %.3g, max rel error %.3g%s\n", o->name, tx, o->max_abs, o->max_rel,
               o->nbad ? " -> beyond tolerance" : "");
        if (o->nbad) printf("  %lld of %lld elements beyond atol %.3g + rtol %.3g * |b|\n", (long long)o->nbad,
                            (long long)o->numel, atol, rtol);
    }
    printf("%s\n", rep.pass ? "outputs match" : "outputs differ");
    rc = rep.pass ? CLI_OK : CLI_FAIL;
done:
    gwr_compare_report_free(&rep);
    cli_inputs_free(&in);
    gwr_network_free(na), gwr_network_free(nb);
    free(spec.files), cli_shapes_free(&spec.shapes);
    return rc;
}

const cli_command cli_run = {"run", "run a model on the CPU executor", run_cmd, run_help};
const cli_command cli_verify = {"verify", "run two models on the same inputs and compare the outputs", verify_cmd,
                                verify_help};
