/* generate.c - greedy decoding over a KV-cache decoder (gwr/generate.h):
 * the loop of onnxruntime-genai's or transformers' generate() without the
 * sampling, on the public session API. Each run's present values become
 * the next run's past values as they are. */
#include "gwr/generate.h"

#include <stdlib.h>
#include <string.h>

#include "exec_api.h" /* gwr_f16_to_f32 */
#include "util/util.h"

/* What the loop feeds and reads, found by name in the session's network. */
typedef struct decoder {
    int nlayers;
    int has_mask, has_pos;
    int64_t vocab; /* -1: not declared */
    /* inputs: input_ids, [attention_mask], [position_ids], then layer by
     * layer past key, past value; outputs: logits, then present key, value */
    int nin, nout, past0;
    const char **in_names, **out_names;
    gwr_dtype *past_dtype; /* per cache entry (2 per layer) */
    int64_t (*past_dims)[4];
} decoder;

static void decoder_free(decoder *d) {
    gwr_free(d->in_names), gwr_free(d->out_names), gwr_free(d->past_dtype), gwr_free(d->past_dims);
    memset(d, 0, sizeof *d);
}

static gwr_status unsupported(const char *fmt, const char *a, const char *b) {
    return gwr_set_last_error(GWR_ERR_UNSUPPORTED, fmt, a, b);
}

/* "PREFIX<N>.key" / "PREFIX<N>.value": N, and *kind 0 (key) or 1 (value);
 * -1 when name is not of the form. */
static int64_t cache_layer(const char *name, const char *prefix, int *kind) {
    size_t n = strlen(prefix);
    if (strncmp(name, prefix, n)) return -1;
    const char *p = name + n;
    int64_t v = 0;
    if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] >= '0' && p[1] <= '9')) return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > 100000) return -1;
        v = v * 10 + (*p - '0');
    }
    if (!strcmp(p, ".key")) *kind = 0;
    else if (!strcmp(p, ".value")) *kind = 1;
    else return -1;
    return v;
}

static int is_int64_matrix(const gwr_tensor *t) {
    return gwr_tensor_dtype(t) == GWR_INT64 && gwr_tensor_rank(t) == 2;
}

static gwr_status decoder_find(gwr_network *net, decoder *d) {
    memset(d, 0, sizeof *d);
    const char *want = "a KV-cache decoder's (input_ids, attention_mask, position_ids, past_key_values.N.key/.value)";
    int ni = gwr_network_num_inputs(net), no = gwr_network_num_outputs(net);
    const gwr_tensor *ids = NULL, *mask = NULL, *pos = NULL;
    int npast = 0;
    for (int i = 0; i < ni; i++) {
        const gwr_tensor *t = gwr_network_input(net, i);
        const char *name = gwr_tensor_name(t);
        int kind;
        int64_t layer = cache_layer(name, "past_key_values.", &kind);
        if (!strcmp(name, "input_ids")) ids = t;
        else if (!strcmp(name, "attention_mask")) mask = t;
        else if (!strcmp(name, "position_ids")) pos = t;
        else if (layer >= 0) {
            npast++;
            if (layer + 1 > d->nlayers) d->nlayers = (int)layer + 1;
        } else return unsupported("input '%s' is not one of %s", name, want);
    }
    if (!ids) return unsupported("no input 'input_ids': not %s%s", want, "");
    if (!is_int64_matrix(ids)) return unsupported("input '%s' is not int64 [batch, sequence]%s", "input_ids", "");
    if (mask && !is_int64_matrix(mask)) return unsupported("input '%s' is not int64 [batch, sequence]%s", "attention_mask", "");
    if (pos && !is_int64_matrix(pos)) return unsupported("input '%s' is not int64 [batch, sequence]%s", "position_ids", "");
    if (!d->nlayers) return unsupported("no input 'past_key_values.0.key': not %s%s", want, "");
    d->has_mask = mask != NULL, d->has_pos = pos != NULL;
    d->past0 = 1 + d->has_mask + d->has_pos;
    d->nin = d->past0 + 2 * d->nlayers;
    d->nout = 1 + 2 * d->nlayers;
    d->in_names = gwr_calloc((size_t)d->nin, sizeof *d->in_names);
    d->out_names = gwr_calloc((size_t)d->nout, sizeof *d->out_names);
    d->past_dtype = gwr_calloc((size_t)(2 * d->nlayers), sizeof *d->past_dtype);
    d->past_dims = gwr_calloc((size_t)(2 * d->nlayers), sizeof *d->past_dims);
    if (!d->in_names || !d->out_names || !d->past_dtype || !d->past_dims)
        return gwr_set_last_error(GWR_ERR_NOMEM, "gwr_generate: out of memory");
    d->in_names[0] = "input_ids";
    if (mask) d->in_names[1] = "attention_mask";
    if (pos) d->in_names[1 + d->has_mask] = "position_ids";
    for (int i = 0; i < ni; i++) {
        const gwr_tensor *t = gwr_network_input(net, i);
        const char *name = gwr_tensor_name(t);
        int kind;
        int64_t layer = cache_layer(name, "past_key_values.", &kind);
        if (layer < 0) continue;
        int e = (int)(2 * layer + kind);
        if (d->in_names[d->past0 + e]) return unsupported("input '%s' is given twice%s", name, "");
        d->in_names[d->past0 + e] = name;
        gwr_dtype dt = gwr_tensor_dtype(t);
        if (!gwr_dtype_is_float(dt) || gwr_tensor_rank(t) != 4)
            return unsupported("input '%s' is not a floating-point [batch, kv_heads, past, head_size] tensor%s", name, "");
        for (int a = 1; a < 4; a += 2)
            if (!GWR_DIM_IS_KNOWN(gwr_tensor_dim(t, a)))
                return unsupported("input '%s': its %s is not known (a fixed dim expected)", name,
                                   a == 1 ? "number of kv heads (dim 1)" : "head size (dim 3)");
        gwr_dim b = gwr_tensor_dim(t, 0);
        if (GWR_DIM_IS_KNOWN(b) && b != 1) return unsupported("input '%s': batch (dim 0) is not 1%s", name, "");
        d->past_dtype[e] = dt;
        d->past_dims[e][0] = 1, d->past_dims[e][1] = gwr_tensor_dim(t, 1);
        d->past_dims[e][2] = 0, d->past_dims[e][3] = gwr_tensor_dim(t, 3);
    }
    if (npast != 2 * d->nlayers)
        for (int e = 0; e < 2 * d->nlayers; e++)
            if (!d->in_names[d->past0 + e]) {
                char need[48];
                snprintf(need, sizeof need, "past_key_values.%d.%s", e / 2, e % 2 ? "value" : "key");
                return unsupported("no input '%s' (layers 0 to the last past_key_values.N need a key and a value)%s",
                                   need, "");
            }
    const gwr_tensor *logits = NULL;
    for (int i = 0; i < no; i++) {
        const gwr_tensor *t = gwr_network_output(net, i);
        const char *name = gwr_tensor_name(t);
        int kind;
        int64_t layer = cache_layer(name, "present.", &kind);
        if (!strcmp(name, "logits")) logits = t, d->out_names[0] = name;
        else if (layer >= 0 && layer < d->nlayers) d->out_names[1 + 2 * layer + kind] = name;
    }
    if (!logits) return unsupported("no output 'logits': not %s%s", "a KV-cache decoder", "");
    if (!gwr_dtype_is_float(gwr_tensor_dtype(logits)) || gwr_tensor_rank(logits) != 3)
        return unsupported("output '%s' is not a floating-point [batch, sequence, vocab] tensor%s", "logits", "");
    gwr_dim v = gwr_tensor_dim(logits, 2);
    d->vocab = GWR_DIM_IS_KNOWN(v) ? v : -1;
    for (int e = 0; e < 2 * d->nlayers; e++)
        if (!d->out_names[1 + e]) {
            char need[48];
            snprintf(need, sizeof need, "present.%d.%s", e / 2, e % 2 ? "value" : "key");
            return unsupported("no output '%s' for input '%s'", need, d->in_names[d->past0 + e]);
        }
    return GWR_OK;
}

gwr_status gwr_generate_check(gwr_network *net, int64_t *vocab) {
    if (vocab) *vocab = -1;
    if (!net) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_generate_check: no network");
    decoder d;
    gwr_status st = decoder_find(net, &d);
    if (!st && vocab) *vocab = d.vocab;
    decoder_free(&d);
    return st;
}

/* The cache entries a decoder starts from: empty along axis 2, with room
 * for cap entries. The one place that makes them. */
static gwr_value *new_past(gwr_dtype dtype, const int64_t dims[4], int64_t cap) {
    return gwr_value_new_cache(dtype, dims, cap);
}

/* [1, n] int64 of start, start + step, ... */
static gwr_value *new_row(int64_t n, const int64_t *src, int64_t start, int64_t step) {
    int64_t dims[2] = {1, n};
    gwr_value *v = gwr_value_new(GWR_INT64, 2, dims);
    if (!v) return NULL;
    int64_t *p = gwr_value_data(v);
    for (int64_t i = 0; i < n; i++) p[i] = src ? src[i] : start + step * i;
    return v;
}

/* logits' last row as float32 into row (v of them). */
static void copy_last(const gwr_value *logits, float *row) {
    const int64_t *dims = gwr_value_dims(logits);
    int64_t v = dims[2], off = (dims[1] - 1) * v;
    gwr_dtype dt = gwr_value_dtype(logits);
    const void *base = gwr_value_cdata(logits);
    for (int64_t i = 0; i < v; i++)
        row[i] = dt == GWR_FLOAT32   ? ((const float *)base)[off + i]
                 : dt == GWR_FLOAT16 ? gwr_f16_to_f32(((const uint16_t *)base)[off + i])
                                     : (float)gwr_value_get_f64(logits, off + i);
}

/* The first index of the largest element of logits' last row (NaN counts
 * as largest, as numpy's argmax has it); -1 on a bad shape (not [1, len,
 * vocab] with vocab as declared, when it is). */
static int64_t argmax_last(const gwr_value *logits, int64_t len, int64_t vocab) {
    const int64_t *dims = gwr_value_dims(logits);
    if (gwr_value_rank(logits) != 3 || dims[0] != 1 || dims[1] != len || dims[2] < 1 || (vocab >= 0 && dims[2] != vocab))
        return -1;
    int64_t v = dims[2], off = (dims[1] - 1) * v, best = 0;
    gwr_dtype dt = gwr_value_dtype(logits);
    const void *base = gwr_value_cdata(logits);
    float m;
    if (dt == GWR_FLOAT32) {
        const float *x = (const float *)base + off;
        m = x[0];
        for (int64_t i = 1; i < v && m == m; i++)
            if (x[i] > m || x[i] != x[i]) m = x[i], best = i;
    } else if (dt == GWR_FLOAT16) {
        const uint16_t *x = (const uint16_t *)base + off;
        m = gwr_f16_to_f32(x[0]);
        for (int64_t i = 1; i < v && m == m; i++) {
            float f = gwr_f16_to_f32(x[i]);
            if (f > m || f != f) m = f, best = i;
        }
    } else {
        double dm = gwr_value_get_f64(logits, off);
        for (int64_t i = 1; i < v && dm == dm; i++) {
            double f = gwr_value_get_f64(logits, off + i);
            if (f > dm || f != f) dm = f, best = i;
        }
    }
    return best;
}

gwr_status gwr_generate(gwr_session *s, const gwr_generate_options *opt, const int64_t *prompt, int64_t n,
                        int64_t *out, gwr_generate_stats *stats) {
    if (stats) memset(stats, 0, sizeof *stats);
    if (!s || !opt || !prompt || !out)
        return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_generate: %s is NULL",
                                  !s ? "the session" : !opt ? "the options" : !prompt ? "the prompt" : "out");
    if (n < 1) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_generate: an empty prompt (at least one token id)");
    if (opt->max_new < 1)
        return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_generate: max_new %lld: at least 1 token to generate",
                                  (long long)opt->max_new);
    if (n > INT64_MAX / 2 - opt->max_new)
        return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_generate: prompt + max_new past int64");
    decoder d;
    gwr_status st = decoder_find(gwr_session_network(s), &d);
    if (st) {
        decoder_free(&d);
        return st;
    }
    for (int64_t i = 0; i < n; i++)
        if (prompt[i] < 0 || (d.vocab >= 0 && prompt[i] >= d.vocab)) {
            if (prompt[i] < 0)
                st = gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_generate: token %lld (prompt entry %lld) is negative",
                                        (long long)prompt[i], (long long)i);
            else
                st = gwr_set_last_error(GWR_ERR_INVALID_ARG,
                                        "gwr_generate: token %lld (prompt entry %lld) is not below the vocabulary size %lld",
                                        (long long)prompt[i], (long long)i, (long long)d.vocab);
            decoder_free(&d);
            return st;
        }
    if (opt->logits && d.vocab < 0) {
        decoder_free(&d);
        return gwr_set_last_error(GWR_ERR_INVALID_ARG,
                                  "gwr_generate: logits asked for, but the model does not declare its vocabulary size");
    }
    int ncache = 2 * d.nlayers;
    int64_t cap = n + opt->max_new;
    gwr_value **in = gwr_calloc((size_t)d.nin, sizeof *in);
    gwr_value **res = gwr_calloc((size_t)d.nout, sizeof *res);
    if (!in || !res) {
        st = gwr_set_last_error(GWR_ERR_NOMEM, "gwr_generate: out of memory");
        goto done;
    }
    for (int e = 0; e < ncache; e++)
        if (!(in[d.past0 + e] = new_past(d.past_dtype[e], d.past_dims[e], cap))) {
            st = gwr_last_status() ? gwr_last_status() : GWR_ERR_NOMEM;
            goto done;
        }
    int64_t made = 0, past = 0;
    double prefill_ms = 0, decode_ms = 0;
    int eos = 0;
    while (made < opt->max_new && !eos) {
        int64_t len = made ? 1 : n; /* the tokens of this run */
        in[0] = made ? new_row(1, &out[made - 1], 0, 0) : new_row(n, prompt, 0, 0);
        if (d.has_mask) in[1] = new_row(past + len, NULL, 1, 0);
        if (d.has_pos) in[1 + d.has_mask] = new_row(len, NULL, past, 1);
        if (!in[0] || (d.has_mask && !in[1]) || (d.has_pos && !in[1 + d.has_mask])) {
            st = GWR_ERR_NOMEM;
            gwr_set_last_error(st, "gwr_generate: out of memory");
            goto done;
        }
        int64_t t0 = gwr_clock_ns();
        st = gwr_session_run(s, d.nin, d.in_names, in, d.nout, d.out_names, res);
        if (st) goto done; /* the session's message is gwr_last_errmsg() */
        int64_t tok = argmax_last(res[0], len, d.vocab);
        double ms = (double)(gwr_clock_ns() - t0) * 1e-6;
        if (tok < 0) {
            char ty[128];
            gwr_value_type_str(res[0], ty, sizeof ty);
            st = gwr_set_last_error(GWR_ERR_SHAPE, "gwr_generate: the logits are %s, not [1, %lld, vocab]", ty,
                                    (long long)len);
            goto done;
        }
        if (opt->logits) copy_last(res[0], opt->logits + made * d.vocab);
        if (made) decode_ms += ms;
        else prefill_ms = ms;
        /* present becomes past; the run's inputs and logits go */
        for (int i = 0; i < d.past0; i++) gwr_value_release(in[i]), in[i] = NULL;
        for (int e = 0; e < ncache; e++) {
            gwr_value_release(in[d.past0 + e]);
            in[d.past0 + e] = res[1 + e], res[1 + e] = NULL;
        }
        gwr_value_release(res[0]), res[0] = NULL;
        past += len;
        out[made++] = tok;
        if (stats) stats->new_tokens = made;
        eos = opt->stop_at_eos && tok == opt->eos;
        if (opt->on_token && opt->on_token(opt->user, made - 1, tok, ms)) break;
    }
    if (stats) {
        stats->prompt_tokens = n;
        stats->new_tokens = made;
        stats->stopped_at_eos = eos;
        stats->prefill_ms = prefill_ms;
        stats->decode_ms = decode_ms;
        stats->prefill_tokens_per_s = prefill_ms > 0 ? (double)n / (prefill_ms * 1e-3) : 0;
        stats->decode_tokens_per_s = made > 1 && decode_ms > 0 ? (double)(made - 1) / (decode_ms * 1e-3) : 0;
    }
done:
    for (int i = 0; in && i < d.nin; i++) gwr_value_release(in[i]);
    for (int i = 0; res && i < d.nout; i++) gwr_value_release(res[i]);
    gwr_free(in), gwr_free(res);
    decoder_free(&d);
    return st;
}
