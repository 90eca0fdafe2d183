/* cmd_generate.c - `gwr generate MODEL --tokens 1,2,3 --max-new N`: greedy
 * decoding over a decoder with a KV cache (gwr/generate.h), token ids in
 * and out, with the prefill and decode speeds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"

static void help(FILE *out) {
    fprintf(out,
            "usage: gwr generate MODEL --tokens ID,ID,... --max-new N [--threads N] [--eos ID]\n"
            "                    [--warmup N] [--no-optimize] [--json] [--logits FILE.npy]\n"
            "\n"
            "Greedy decoding on gwr's CPU executor over a decoder with a KV cache exported\n"
            "the Hugging Face way (inputs input_ids, attention_mask, position_ids,\n"
            "past_key_values.N.key/.value; outputs logits, present.N.key/.value): the prompt's\n"
            "ids run at once (prefill), then one token per run, each the argmax of the last\n"
            "logits, the present values fed back as the next past. Token ids in, ids out (no\n"
            "tokenizer). docs/llm.md is the guide.\n"
            "\n"
            "  --tokens IDS     the prompt's token ids, comma-separated (each below the\n"
            "                   vocabulary size)\n"
            "  --max-new N      tokens to generate, >= 1\n"
            "  --threads N      intra-op threads (default 1)\n"
            "  --eos ID         stop after generating ID\n"
            "  --warmup N       first run the whole generation N times untimed in the same\n"
            "                   session (a server's warm session; default 0: the times are\n"
            "                   of the session's first runs)\n"
            "  --no-optimize    run the model as written (default: the session optimizes a\n"
            "                   private copy, as gwr run does)\n"
            "  --json           one JSON object: the ids, the times, per decode step its\n"
            "                   time, and the process's resident and peak memory after each\n"
            "                   new token (/proc/self/statm, VmHWM of /proc/self/status)\n"
            "  --logits FILE.npy  write the last logits row of every run, float32 [new\n"
            "                   tokens, vocab], as a NumPy .npy file\n"
            "\n"
            "Prints the generated ids (comma-separated), then the prefill's and the decode's\n"
            "tokens per second: prefill = the run over the prompt (which gives the first new\n"
            "token), decode = the runs of one token that give the others.\n"
            "Exit status: 0 success, 1 the model cannot be read or run, 2 bad usage or bad\n"
            "input (not a decoder with a KV cache, a token id not below the vocabulary).\n");
}

/* "1,2,3" into a malloc'd array; -1 with a usage message. */
static int parse_ids(const char *s, int64_t **ids, int64_t *n) {
    *ids = NULL, *n = 0;
    size_t cap = 1;
    for (const char *p = s; *p; p++) cap += *p == ',';
    int64_t *v = malloc(cap * sizeof *v);
    char *buf = gwr_strdup(s);
    if (!v || !buf) {
        free(v), free(buf);
        cli_error("generate", "out of memory");
        return CLI_FAIL;
    }
    char *p = buf;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma) *comma = 0;
        const char *why = "empty";
        if (!*p || cli_parse_int(p, &v[*n], &why)) {
            int rc = cli_usage("generate", "--tokens '%s': entry %lld '%s' is %s; token ids are integers >= 0", s,
                               (long long)*n, p, why);
            free(v), free(buf);
            return rc;
        }
        ++*n;
        if (!comma) break;
        p = comma + 1;
    }
    free(buf);
    *ids = v;
    return CLI_OK;
}

/* The process's resident memory now, in kB (Linux /proc/self/statm); -1
 * where there is none. */
static long rss_now_kb(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = -1, res = -1;
    if (!f) return -1;
    if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = -1;
    fclose(f);
    return res < 0 ? -1 : res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* The process's peak resident memory, in kB: VmHWM of /proc/self/status
 * (this process's own: getrusage's ru_maxrss keeps the parent's peak
 * across exec, which a benchmark's Python parent inflates), else
 * getrusage's; -1 where there is neither. */
static long rss_peak_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) {
            kb = strtol(line + 6, NULL, 10);
            break;
        }
    if (f) fclose(f);
    struct rusage ru;
    if (kb < 0 && !getrusage(RUSAGE_SELF, &ru)) kb = ru.ru_maxrss; /* kB on Linux */
    return kb;
}

/* What --json records per new token. */
typedef struct trace {
    double *ms;
    long *rss, *peak;
} trace;

static int on_token(void *user, int64_t i, int64_t id, double ms) {
    (void)id;
    trace *t = user;
    t->ms[i] = ms;
    t->rss[i] = rss_now_kb();
    t->peak[i] = rss_peak_kb();
    return 0;
}

/* rows x cols float32 as a NumPy .npy file (format 1.0, little-endian),
 * written atomically; CLI_OK, or CLI_FAIL after one line naming path. */
static int write_npy(const char *path, const float *v, int64_t rows, int64_t cols) {
    char hdr[128];
    int n = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (%lld, %lld), }",
                     (long long)rows, (long long)cols);
    int total = (10 + n + 1 + 63) / 64 * 64; /* magic, version, length, header, '\n': a multiple of 64 */
    while (10 + n + 1 < total) hdr[n++] = ' ';
    hdr[n++] = '\n';
    char *tmp = cli_temp_name(path);
    FILE *f = tmp ? fopen(tmp, "wb") : NULL;
    size_t count = (size_t)(rows * cols);
    int ok = f && fwrite("\x93NUMPY\x01\x00", 1, 8, f) == 8 && fputc(n & 0xff, f) != EOF && fputc(n >> 8, f) != EOF &&
             fwrite(hdr, 1, (size_t)n, f) == (size_t)n && fwrite(v, sizeof *v, count, f) == count;
    if (f && fclose(f)) ok = 0;
    if (ok && rename(tmp, path)) ok = 0;
    if (!ok) {
        if (tmp) remove(tmp);
        cli_error(path, "cannot write the logits file");
    }
    free(tmp);
    return ok ? CLI_OK : CLI_FAIL;
}

static void json_array_d(const char *name, const double *v, int64_t from, int64_t n) {
    printf(",\"%s\":[", name);
    for (int64_t i = from; i < n; i++) printf("%s%.4f", i > from ? "," : "", v[i]);
    putchar(']');
}

static void json_array_l(const char *name, const long *v, int64_t n) {
    printf(",\"%s\":[", name);
    for (int64_t i = 0; i < n; i++) printf("%s%ld", i ? "," : "", v[i]);
    putchar(']');
}

static int generate_cmd(int argc, char **argv) {
    const char *model = NULL, *tokens = NULL, *logits_file = NULL;
    int64_t max_new = -1, eos = -1, threads = 1, warmup = 0;
    int json = 0, raw = 0, rc = CLI_OK;
    for (int i = 1; i < argc && rc == CLI_OK; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "--no-optimize")) raw = 1;
        else if (!strcmp(a, "--tokens") && i + 1 < argc) tokens = argv[++i];
        else if (!strcmp(a, "--logits") && i + 1 < argc) logits_file = argv[++i];
        else if ((!strcmp(a, "--max-new") || !strcmp(a, "--threads") || !strcmp(a, "--eos") || !strcmp(a, "--warmup")) &&
                 i + 1 < argc) {
            int64_t v = 0;
            const char *why = "below 1";
            int is_eos = a[2] == 'e', from0 = is_eos || a[2] == 'w';
            if (cli_parse_int(argv[++i], &v, &why) || (!from0 && v < 1) || v < 0)
                rc = cli_usage("generate", "%s '%s': %s; an integer >= %d", a, argv[i], v < 0 ? "negative" : why, from0 ? 0 : 1);
            else if (a[2] == 't' && v > GWR_SESSION_MAX_THREADS)
                rc = cli_usage("generate", "--threads '%s': at most %d threads (GWR_SESSION_MAX_THREADS)", argv[i],
                               GWR_SESSION_MAX_THREADS);
            else if (a[2] == 't') threads = v;
            else if (is_eos) eos = v;
            else if (a[2] == 'w') warmup = v;
            else max_new = v;
        } else if (a[0] == '-' && a[1]) rc = cli_usage("generate", "unknown option or missing value: '%s'", a);
        else if (!model) model = a;
        else rc = cli_usage("generate", "unexpected argument '%s': one MODEL", a);
    }
    if (rc == CLI_OK && !model) rc = cli_usage("generate", "no MODEL given");
    if (rc == CLI_OK && !tokens) rc = cli_usage("generate", "no --tokens given (the prompt's ids, e.g. --tokens 1,2,3)");
    if (rc == CLI_OK && max_new < 0) rc = cli_usage("generate", "no --max-new given (tokens to generate)");
    int64_t *prompt = NULL, n = 0, *out = NULL;
    float *logits = NULL;
    trace tr = {0};
    gwr_network *net = NULL;
    gwr_session *s = NULL;
    if (rc == CLI_OK) rc = parse_ids(tokens, &prompt, &n);
    if (rc) goto done;
    rc = CLI_FAIL;
    gwr_onnx_load_options lo = {.infer_shapes = 1};
    if (!(net = cli_load(model, &lo))) goto done;
    int64_t vocab;
    if (gwr_generate_check(net, &vocab)) {
        cli_error(model, gwr_last_errmsg());
        rc = CLI_USAGE;
        goto done;
    }
    for (int64_t i = 0; i < n; i++)
        if (vocab >= 0 && prompt[i] >= vocab) {
            fprintf(stderr, "gwr: %s: token %lld (entry %lld of --tokens) is not below the vocabulary size %lld\n",
                    model, (long long)prompt[i], (long long)i, (long long)vocab);
            rc = CLI_USAGE;
            goto done;
        }
    gwr_session_options so = {.threads = (int)threads, .optimize = raw ? GWR_SESSION_RAW : GWR_SESSION_OPTIMIZE};
    if (!(s = gwr_session_new(net, &so))) {
        cli_error(model, gwr_last_errmsg());
        goto done;
    }
    if (!raw && !gwr_session_optimized(s))
        fprintf(stderr, "gwr: %s: running the model as written: %s\n", model, gwr_session_optimize_msg(s));
    if (gwr_session_optimized(s)) {
        /* The session runs its own optimized copy, which shares the weights
         * it kept with net; the ones it replaced (merged Q/K/V, gate/up, ...)
         * would stay resident with net for the whole loop. */
        gwr_network_free(net);
        net = NULL;
    }
    out = calloc((size_t)max_new, sizeof *out);
    tr.ms = calloc((size_t)max_new, sizeof *tr.ms);
    tr.rss = calloc((size_t)max_new, sizeof *tr.rss);
    tr.peak = calloc((size_t)max_new, sizeof *tr.peak);
    if (logits_file && vocab < 0) {
        cli_error(model, "--logits: the model does not declare its vocabulary size (the logits' last dim)");
        rc = CLI_USAGE;
        goto done;
    }
    if (logits_file) logits = malloc((size_t)max_new * (size_t)vocab * sizeof *logits);
    if (!out || !tr.ms || !tr.rss || !tr.peak || (logits_file && !logits)) {
        cli_error(model, "out of memory");
        goto done;
    }
    gwr_generate_options go = {.max_new = max_new, .stop_at_eos = eos >= 0, .eos = eos,
                               .on_token = json ? on_token : NULL, .user = &tr, .logits = logits};
    gwr_generate_stats st;
    gwr_generate_options wo = {.max_new = max_new, .stop_at_eos = eos >= 0, .eos = eos};
    for (int64_t w = 0; w < warmup; w++)
        if (gwr_generate(s, &wo, prompt, n, out, &st)) {
            cli_error(model, gwr_last_errmsg());
            goto done;
        }
    if (gwr_generate(s, &go, prompt, n, out, &st)) {
        cli_error(model, gwr_last_errmsg());
        goto done;
    }
    if (logits_file && write_npy(logits_file, logits, st.new_tokens, vocab)) goto done;
    if (json) {
        printf("{\"model\":");
        gwr_json_str(stdout, model, strlen(model));
        printf(",\"threads\":%lld,\"optimized\":%s,\"prompt_tokens\":%lld,\"new_tokens\":%lld,\"stopped_at_eos\":%s",
               (long long)threads, gwr_session_optimized(s) ? "true" : "false", (long long)n, (long long)st.new_tokens,
               st.stopped_at_eos ? "true" : "false");
        printf(",\"tokens\":[");
        for (int64_t i = 0; i < st.new_tokens; i++) printf("%s%lld", i ? "," : "", (long long)out[i]);
        printf("],\"prefill_ms\":%.4f,\"decode_ms\":%.4f,\"prefill_tokens_per_s\":%.2f,\"decode_tokens_per_s\":%.2f",
               st.prefill_ms, st.decode_ms, st.prefill_tokens_per_s, st.decode_tokens_per_s);
        json_array_d("decode_step_ms", tr.ms, 1, st.new_tokens);
        json_array_l("rss_kb", tr.rss, st.new_tokens);
        json_array_l("peak_rss_kb", tr.peak, st.new_tokens);
        printf("}\n");
    } else {
        printf("tokens: ");
        for (int64_t i = 0; i < st.new_tokens; i++) printf("%s%lld", i ? "," : "", (long long)out[i]);
        printf("%s\n", st.stopped_at_eos ? " (eos)" : "");
        printf("prefill: %lld token%s in %.3f ms, %.1f tokens/s\n", (long long)n, n > 1 ? "s" : "", st.prefill_ms,
               st.prefill_tokens_per_s);
        if (st.new_tokens > 1)
            printf("decode: %lld token%s in %.3f ms, %.1f tokens/s (%.3f ms a token)\n", (long long)(st.new_tokens - 1),
                   st.new_tokens > 2 ? "s" : "", st.decode_ms, st.decode_tokens_per_s,
                   st.decode_ms / (double)(st.new_tokens - 1));
        else printf("decode: no decode step (one new token comes from the prefill)\n");
        printf("(%lld thread%s, %s)\n", (long long)threads, threads > 1 ? "s" : "",
               gwr_session_optimized(s) ? "optimized" : "as written");
    }
    rc = fflush(stdout) || ferror(stdout) ? CLI_FAIL : CLI_OK;
done:
    free(prompt), free(out), free(logits), free(tr.ms), free(tr.rss), free(tr.peak);
    gwr_session_free(s);
    cli_free_at_exit(net);
    return rc;
}

const cli_command cli_generate = {"generate", "greedy decoding over a decoder with a KV cache (token ids in, ids out)",
                                  generate_cmd, help};
