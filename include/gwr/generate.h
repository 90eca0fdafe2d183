/* gwr/generate.h - greedy decoding over a decoder with a KV cache, on a
 * session of the executor (gwr/exec.h): token ids in, token ids out, no
 * tokenizer.
 *
 * The model is a decoder exported with the interface of Hugging Face
 * transformers / optimum (task text-generation-with-past):
 *   inputs   input_ids                     int64 [B, S]
 *            attention_mask                int64 [B, P + S]
 *            position_ids (when it has it) int64 [B, S]
 *            past_key_values.N.key/.value  float32 or float16 [B, kvh, P, D]
 *   outputs  logits                        [B, S, vocab]
 *            present.N.key/.value          [B, kvh, P + S, D]
 * for layers N = 0 .. L-1, with kvh and D known. B is 1. Anything else is
 * refused with a message naming what does not fit. */
#ifndef GWR_GENERATE_H
#define GWR_GENERATE_H

#include "gwr/exec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gwr_generate_options {
    int64_t max_new;  /* tokens to generate, >= 1 */
    int stop_at_eos;  /* 1: stop after generating eos (it is returned) */
    int64_t eos;      /* the end-of-sequence id, when stop_at_eos */
    /* Called after each generated token (may be NULL): index 0 is the
     * token the prefill chose, ms the time of the run (and argmax) that
     * chose it. A nonzero return stops the loop there (not an error). */
    int (*on_token)(void *user, int64_t index, int64_t id, double ms);
    void *user;
    /* May be NULL: room for max_new * vocab floats (vocab as
     * gwr_generate_check gives it; a model that does not declare it is
     * refused), row i the last logits row, as float32, of the run that
     * chose new token i. */
    float *logits;
} gwr_generate_options;

typedef struct gwr_generate_stats {
    int64_t prompt_tokens;  /* n */
    int64_t new_tokens;     /* ids written to out */
    int stopped_at_eos;     /* the last id is eos */
    /* Prefill: the one run over the whole prompt (past length 0) and the
     * argmax of its last row, which gives the first new token. Decode: the
     * runs of one token each that give the others (new_tokens - 1). */
    double prefill_ms, decode_ms;
    double prefill_tokens_per_s; /* prompt_tokens / prefill time */
    double decode_tokens_per_s;  /* (new_tokens - 1) / decode time; 0 when there was no decode run */
} gwr_generate_stats;

/* Is net a decoder gwr_generate runs (net: a model as loaded, or
 * gwr_session_network of a session)? GWR_OK, or GWR_ERR_UNSUPPORTED with
 * the reason in gwr_last_errmsg() ("input 'token_type_ids' is not one of a
 * KV-cache decoder's ..."). *vocab (may be NULL) gets the logits' last
 * dim, or -1 when the model does not say. */
GWR_API gwr_status gwr_generate_check(gwr_network *net, int64_t *vocab);

/* Greedy decoding: runs the prompt's n ids (n >= 1, each in [0, vocab))
 * in one run with an empty cache, then one token per run, each time the
 * argmax (the first, on ties) of the last row of logits, until
 * opt->max_new ids are written to out (room for max_new of them) or eos is
 * generated. The present values of a run are the next run's past values
 * as they are (never copied by the loop): the cache starts as empty values
 * of room prompt + max_new. The session is the caller's (its threads,
 * optimized or not); it runs one call at a time. stats may be NULL. On
 * error (a model that does not fit, a bad argument, a failed run)
 * gwr_last_errmsg() says why, and out and stats->new_tokens hold what was
 * generated before it. */
GWR_API gwr_status gwr_generate(gwr_session *s, const gwr_generate_options *opt, const int64_t *prompt, int64_t n,
                                int64_t *out, gwr_generate_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
