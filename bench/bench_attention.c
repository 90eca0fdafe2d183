/* bench_attention.c - the decode step of one ONNX Attention layer on gwr's
 * executor (bench/llm/attention_bench.py runs it beside onnxruntime):
 *
 *   bench_attention MODEL P THREADS [STEPS [REPS [dense]]]
 *
 * MODEL: one Attention (opset 23), float32 or float16, with inputs Q (1, qh, 1, D), K and V
 * (1, kvh, 1, D), past_key and past_value (1, kvh, P, D) and outputs Y,
 * present_key, present_value. Each rep starts a cache of length P - STEPS/2
 * (capacity P + STEPS, random rows) and runs STEPS decode steps, feeding
 * present back as past: the cache is appended in place, and the steps see
 * lengths around P. `dense` passes plain tensors of length P instead (the
 * kernel copies the past into a new cache each step: what a caller that
 * does not keep gwr's values pays). Prints the median and best step in
 * microseconds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec_internal.h"
#include "gwr/gwr.h"

static uint64_t rng = 0x853c49e6748fea9bULL;
static float urand(void) {
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return (float)((rng * 0x2545f4914f6cdd1dULL) >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}

static void fill(gwr_value *v, int64_t n) { /* the storage's first n elements (float32 or float16) */
    for (int64_t i = 0; i < n; i++)
        if (v->dtype == GWR_FLOAT32) ((float *)v->data)[i] = urand();
        else ((uint16_t *)v->data)[i] = gwr_f32_to_f16(urand());
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: bench_attention MODEL P THREADS [STEPS [REPS [dense]]]\n");
        return 2;
    }
    int64_t P = atoll(argv[2]), steps = argc > 4 ? atoll(argv[4]) : 32, reps = argc > 5 ? atoll(argv[5]) : 20;
    int threads = atoi(argv[3]), dense = argc > 6 && !strcmp(argv[6], "dense");
    gwr_network *net = gwr_onnx_load(argv[1], NULL);
    if (!net) return fprintf(stderr, "bench_attention: %s\n", gwr_last_errmsg()), 1;
    gwr_tensor *q = gwr_network_input(net, 0), *pk = gwr_network_input(net, 3);
    int64_t qh = gwr_tensor_dim(q, 1), D = gwr_tensor_dim(q, 3), kvh = gwr_tensor_dim(pk, 1);
    gwr_dtype dt = gwr_tensor_dtype(q);
    gwr_session_options so = {.threads = threads};
    gwr_session *s = gwr_session_new_raw(net, &so);
    if (!s) return fprintf(stderr, "bench_attention: %s\n", gwr_last_errmsg()), 1;
    const char *names[5] = {"Q", "K", "V", "past_key", "past_value"};
    int64_t qd[4] = {1, qh, 1, D}, kd[4] = {1, kvh, 1, D};
    gwr_value *qv = gwr_value_new(dt, 4, qd), *kv = gwr_value_new(dt, 4, kd), *vv = gwr_value_new(dt, 4, kd);
    fill(qv, qh * D), fill(kv, kvh * D), fill(vv, kvh * D);
    double *t = malloc((size_t)(steps * reps) * sizeof *t);
    int64_t nt = 0;
    for (int64_t r = 0; r < reps; r++) {
        int64_t p0 = dense ? P : P - steps / 2, pd[4] = {1, kvh, p0, D};
        gwr_value *k0 = dense ? gwr_value_new(dt, 4, pd) : gwr_value_new_cache(dt, pd, P + steps);
        gwr_value *v0 = dense ? gwr_value_new(dt, 4, pd) : gwr_value_new_cache(dt, pd, P + steps);
        fill(k0, kvh * (dense ? P : P + steps) * D), fill(v0, kvh * (dense ? P : P + steps) * D);
        for (int64_t i = 0; i < steps; i++) {
            gwr_value *in[5] = {qv, kv, vv, k0, v0}, *out[3];
            int64_t a = gwr_clock_ns();
            if (gwr_session_run(s, 5, names, in, 3, NULL, out))
                return fprintf(stderr, "bench_attention: %s\n", gwr_session_errmsg(s)), 1;
            t[nt++] = (double)(gwr_clock_ns() - a) / 1e3;
            gwr_value_release(out[0]);
            if (dense) {
                gwr_value_release(out[1]), gwr_value_release(out[2]);
            } else {
                gwr_value_release(k0), gwr_value_release(v0);
                k0 = out[1], v0 = out[2];
            }
        }
        gwr_value_release(k0), gwr_value_release(v0);
    }
    qsort(t, (size_t)nt, sizeof *t, cmp);
    printf("median %.2f us, best %.2f us (%lld steps, cache %lld, %d threads%s)\n", t[nt / 2], t[0], (long long)nt,
           (long long)P, threads, dense ? ", dense past" : "");
    free(t);
    gwr_value_release(qv), gwr_value_release(kv), gwr_value_release(vv);
    gwr_session_free(s);
    gwr_network_free(net);
    return 0;
}
