/* test_rewrite_order.c - property test of the rewrite driver: on random
 * networks, a confluent pattern set reaches the same result whatever the
 * visiting order, and the same result as the reference's full-rescan
 * driver.
 *
 * For each seed: a random DAG (up to 3,000 layers of Add, Sub, Mul, Neg and
 * Relu reading random earlier tensors; a few outputs, some of them also
 * read by later layers). Patterns: Add -> Sub, Sub -> Mul (so every Add
 * ends as a Mul: a chain through a created layer), and Neg(Neg(x)) -> x.
 * The set is confluent, so the fixpoint is unique. Expected: the
 * computation each output denotes, as a structural hash computed by this
 * file from an independent expected rewrite of the original network
 * (Add and Sub read as Mul, Neg pairs cancelled bottom-up), equals the
 * hash of the rewritten network, for the worklist driver in network order,
 * five seeded random orders (one of them in debug mode, which verifies
 * after every rewrite) and, for small networks, the full-rescan driver.
 * Output names must be unchanged and the network must verify.
 *
 * GWR_PROP_SEED=<n> runs that seed alone. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gwr/gwr.h"
#include "unit/check.h"
#include "property/prop_rng.h"


static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

static uint64_t str_hash(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

enum { OP_ADD, OP_SUB, OP_MUL, OP_NEG, OP_RELU };
static const char *const OPS[] = {"Add", "Sub", "Mul", "Neg", "Relu"};

/* The random network, kept as a plain description so the expected result
 * can be computed without gwr. Tensor ids: 0..ninputs-1 are inputs, then
 * layer i produces tensor ninputs + i. */
typedef struct desc {
    int ninputs, nlayers, noutputs;
    int *op, *a, *b;
    int *outputs;
} desc;

static desc make_desc(uint64_t seed) {
    uint64_t s = seed;
    desc d;
    d.ninputs = 1 + (int)rng_below(&s, 3);
    d.nlayers = seed % 3 == 0 ? 3000 : 1 + (int)rng_below(&s, seed % 3 == 1 ? 40 : 800);
    d.op = malloc(sizeof(int) * (size_t)d.nlayers);
    d.a = malloc(sizeof(int) * (size_t)d.nlayers);
    d.b = malloc(sizeof(int) * (size_t)d.nlayers);
    for (int i = 0; i < d.nlayers; i++) {
        int ntensors = d.ninputs + i;
        /* Negs are common so that chains of them occur. */
        int r = (int)rng_below(&s, 10);
        d.op[i] = r < 4 ? OP_NEG : r < 6 ? OP_ADD : r < 7 ? OP_SUB : r < 8 ? OP_MUL : OP_RELU;
        /* Mostly read a recent tensor: long chains. */
        int back = (int)rng_below(&s, ntensors < 4 ? ntensors : 4);
        d.a[i] = rng_below(&s, 4) ? ntensors - 1 - back : (int)rng_below(&s, ntensors);
        d.b[i] = (int)rng_below(&s, ntensors);
    }
    d.noutputs = 1 + (int)rng_below(&s, 4);
    d.outputs = malloc(sizeof(int) * (size_t)d.noutputs);
    for (int k = 0; k < d.noutputs; k++)
        d.outputs[k] = k == 0 ? d.ninputs + d.nlayers - 1 : d.ninputs + (int)rng_below(&s, d.nlayers);
    return d;
}

static void free_desc(desc *d) {
    free(d->op);
    free(d->a);
    free(d->b);
    free(d->outputs);
}

/* The expected hashes: Add and Sub become Mul; Neg(Neg(x)) is x. A Neg's
 * "inner" tells whether its value is a Neg of something (and of what). */
static void expected_hashes(const desc *d, uint64_t *out) {
    int n = d->ninputs + d->nlayers;
    uint64_t *h = malloc(sizeof(uint64_t) * (size_t)n);
    int *neg_of = malloc(sizeof(int) * (size_t)n); /* -1, or the tensor this one negates (after rewriting) */
    for (int t = 0; t < d->ninputs; t++) {
        char name[16];
        snprintf(name, sizeof name, "in%d", t);
        h[t] = str_hash(name);
        neg_of[t] = -1;
    }
    /* value[t]: the tensor (id) that t is after rewriting (a Neg pair folds to its operand). */
    int *value = malloc(sizeof(int) * (size_t)n);
    for (int t = 0; t < d->ninputs; t++) value[t] = t;
    for (int i = 0; i < d->nlayers; i++) {
        int t = d->ninputs + i;
        int a = value[d->a[i]], b = value[d->b[i]];
        value[t] = t;
        neg_of[t] = -1;
        switch (d->op[i]) {
        case OP_NEG:
            if (neg_of[a] >= 0) {
                value[t] = neg_of[a];
                h[t] = h[value[t]];
                neg_of[t] = neg_of[value[t]];
            } else {
                h[t] = mix(str_hash("Neg"), h[a]);
                neg_of[t] = a;
            }
            break;
        case OP_RELU:
            h[t] = mix(str_hash("Relu"), h[a]);
            break;
        default: /* Add, Sub and Mul all end as Mul */
            h[t] = mix(mix(str_hash("Mul"), h[a]), h[b]);
            break;
        }
    }
    for (int k = 0; k < d->noutputs; k++) out[k] = h[value[d->outputs[k]]];
    free(h);
    free(neg_of);
    free(value);
}

static gwr_network *build(const desc *d) {
    gwr_network *net = gwr_network_new("prop");
    int n = d->ninputs + d->nlayers;
    gwr_tensor **t = malloc(sizeof(gwr_tensor *) * (size_t)n);
    gwr_dim dim[1] = {2};
    for (int i = 0; i < d->ninputs; i++) {
        char name[16];
        snprintf(name, sizeof name, "in%d", i);
        t[i] = gwr_network_add_input(net, name, GWR_FLOAT32, 1, dim);
    }
    for (int i = 0; i < d->nlayers; i++) {
        gwr_tensor *in[2] = {t[d->a[i]], t[d->b[i]]};
        int nin = d->op[i] >= OP_NEG ? 1 : 2;
        gwr_tensor *o = NULL;
        gwr_op_call(net, "", OPS[d->op[i]], nin, in, NULL, 1, &o);
        t[d->ninputs + i] = o;
    }
    for (int k = 0; k < d->noutputs; k++) {
        gwr_tensor *o = t[d->outputs[k]];
        if (gwr_tensor_output_index(o) >= 0 || gwr_tensor_is_input(o)) {
            /* marked already (or an input): mark an Identity of it */
            gwr_op_call(net, "", "Identity", 1, &o, NULL, 1, &o);
        }
        char name[16];
        snprintf(name, sizeof name, "out%d", k);
        gwr_tensor_set_name(o, name);
        gwr_network_mark_output(net, o);
    }
    free(t);
    return net;
}

/* The hash of each output's computation in the rewritten network. */
static uint64_t tensor_hash(gwr_tensor *t, gwr_network *net, uint64_t *memo, uint8_t *done) {
    gwr_layer *p = gwr_tensor_parent(t);
    if (!p) return str_hash(gwr_tensor_name(t));
    int64_t i = gwr_layer_index(p);
    if (done[i]) return memo[i];
    uint64_t h;
    if (!strcmp(gwr_layer_op(p), "Identity")) {
        h = tensor_hash(gwr_layer_input(p, 0), net, memo, done);
    } else {
        h = str_hash(gwr_layer_op(p));
        for (int k = 0; k < gwr_layer_num_inputs(p); k++) h = mix(h, tensor_hash(gwr_layer_input(p, k), net, memo, done));
    }
    memo[i] = h;
    done[i] = 1;
    return h;
}

/* The network is topologically ordered after prune? Not necessarily (new
 * layers are appended), so hash recursively; depth is bounded by the
 * network's size, which is small enough for the stack here. */
static void actual_hashes(gwr_network *net, uint64_t *out) {
    int64_t n = gwr_network_num_layers(net);
    uint64_t *memo = calloc((size_t)n + 1, sizeof *memo);
    uint8_t *done = calloc((size_t)n + 1, 1);
    for (int k = 0; k < gwr_network_num_outputs(net); k++)
        out[k] = tensor_hash(gwr_network_output(net, k), net, memo, done);
    free(memo);
    free(done);
}

static int swap_op(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_network *net = gwr_rewrite_ctx_network(c);
    gwr_tensor *ins[2] = {gwr_layer_input(l, 0), gwr_layer_input(l, 1)}, *o = NULL;
    if (!gwr_op_call(net, "", gwr_rewrite_ctx_user(c), 2, ins, NULL, 1, &o)) return -1;
    if (gwr_tensor_replace_all_uses_with(gwr_layer_output(l, 0), o)) return -1;
    return gwr_layer_mark_as_removed(l) ? -1 : 1;
}

static int neg_neg(gwr_rewrite_ctx *c, gwr_layer *l) {
    gwr_layer *inner = gwr_tensor_parent(gwr_layer_input(l, 0));
    if (!inner || strcmp(gwr_layer_op(inner), "Neg")) return gwr_rewrite_no_match(c, "not a Neg pair");
    if (gwr_tensor_replace_all_uses_with(gwr_layer_output(l, 0), gwr_layer_input(inner, 0))) return -1;
    return gwr_layer_mark_as_removed(l) ? -1 : 1;
}

static const char *const ADD[] = {"Add", NULL}, *const SUB[] = {"Sub", NULL}, *const NEG[] = {"Neg", NULL};

static int run_one(const desc *d, const uint64_t *want, gwr_rewrite_options o, const char *what, uint64_t seed) {
    gwr_network *net = build(d);
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    gwr_pattern_rewriter a = {.name = "add_to_sub", .root_ops = ADD, .match_and_rewrite = swap_op, .user = "Sub"};
    gwr_pattern_rewriter b = {.name = "sub_to_mul", .root_ops = SUB, .match_and_rewrite = swap_op, .user = "Mul"};
    gwr_pattern_rewriter n = {.name = "neg_neg", .root_ops = NEG, .match_and_rewrite = neg_neg};
    gwr_rewrite_manager_add(m, "a", &a, 1);
    gwr_rewrite_manager_add(m, "b", &b, 2);
    gwr_rewrite_manager_add(m, "n", &n, 3);
    gwr_rewrite_manager_set_options(m, &o);
    int ok = 1;
    gwr_status s = gwr_rewrite_manager_rewrite(m, net, NULL);
    if (s) {
        fprintf(stderr, "seed %#" PRIx64 " %s: %s\n", seed, what, gwr_rewrite_manager_errmsg(m));
        ok = 0;
    }
    uint64_t got[8];
    if (ok && gwr_network_num_outputs(net) != d->noutputs) ok = 0;
    if (ok) {
        actual_hashes(net, got);
        for (int k = 0; k < d->noutputs; k++) {
            char name[16];
            snprintf(name, sizeof name, "out%d", k);
            if (got[k] != want[k] || strcmp(gwr_tensor_name(gwr_network_output(net, k)), name)) {
                fprintf(stderr, "seed %#" PRIx64 " %s: output %d differs\n", seed, what, k);
                ok = 0;
            }
        }
    }
    if (ok && gwr_network_verify(net)) {
        fprintf(stderr, "seed %#" PRIx64 " %s: %s\n", seed, what, gwr_network_errmsg(net));
        ok = 0;
    }
    /* Nothing left to do: Adds, Subs and Neg pairs are gone. */
    for (int64_t i = 0; ok && i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        const char *op = gwr_layer_op(l);
        gwr_layer *in = gwr_layer_num_inputs(l) ? gwr_tensor_parent(gwr_layer_input(l, 0)) : NULL;
        if (!strcmp(op, "Add") || !strcmp(op, "Sub") ||
            (!strcmp(op, "Neg") && in && !strcmp(gwr_layer_op(in), "Neg"))) {
            fprintf(stderr, "seed %#" PRIx64 " %s: '%s' (%s) is left\n", seed, what, gwr_layer_name(l), op);
            ok = 0;
        }
    }
    gwr_rewrite_manager_free(m);
    gwr_network_free(net);
    return ok;
}

static const uint64_t SEEDS[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0xdeadbeef, 0xc0ffee, 0x31337};

int main(void) {
    const char *env = getenv("GWR_PROP_SEED");
    uint64_t only = env ? strtoull(env, NULL, 0) : 0;
    size_t nseeds = env ? 1 : sizeof SEEDS / sizeof SEEDS[0];
    for (size_t si = 0; si < nseeds; si++) {
        uint64_t seed = env ? only : SEEDS[si];
        desc d = make_desc(seed);
        uint64_t want[8];
        expected_hashes(&d, want);
        int ok = run_one(&d, want, (gwr_rewrite_options){0}, "network order", seed);
        for (uint64_t r = 1; r <= 5 && ok; r++)
            ok = run_one(&d, want, (gwr_rewrite_options){.shuffle_seed = seed * 31 + r, .debug = r == 1 && d.nlayers <= 800},
                         "random order", seed);
        if (ok && d.nlayers <= 200) ok = run_one(&d, want, (gwr_rewrite_options){.full_rescan = 1}, "full rescan", seed);
        printf("seed %#" PRIx64 ": %d layers, %d outputs: %s\n", seed, d.nlayers, d.noutputs, ok ? "ok" : "FAILED");
        CHECK(ok);
        free_desc(&d);
    }
    return check_report();
}
