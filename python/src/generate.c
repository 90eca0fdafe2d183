/* generate.c - gwr.generate: greedy decoding over a decoder with a KV cache
 * (gwr/generate.h) from Python, on a model file, a Network or a Session. */
#include "pygwr.h"

#include <stdlib.h>
#include <string.h>

/* The prompt as int64 ids (PyMem); NULL with an exception. */
static int64_t *prompt_of(PyObject *tokens, Py_ssize_t *n) {
    PyObject *seq = PySequence_Fast(tokens, "generate: tokens must be a sequence of ints");
    if (!seq) return NULL;
    *n = PySequence_Fast_GET_SIZE(seq);
    int64_t *ids = PyMem_Calloc((size_t)*n + 1, sizeof *ids);
    if (!ids) {
        Py_DECREF(seq);
        return (int64_t *)PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < *n; i++) {
        PyObject *t = PySequence_Fast_GET_ITEM(seq, i);
        long long v = PyLong_Check(t) ? PyLong_AsLongLong(t) : -1;
        if (!PyLong_Check(t) || (v == -1 && PyErr_Occurred()) || v < 0) {
            PyErr_Clear();
            pg_raisef(GWR_ERR_INVALID_ARG, "generate: tokens[%zd] must be an int >= 0 (a token id), not %s", i,
                      PyLong_Check(t) ? "a negative or huge int" : Py_TYPE(t)->tp_name);
            PyMem_Free(ids);
            Py_DECREF(seq);
            return NULL;
        }
        ids[i] = (int64_t)v;
    }
    Py_DECREF(seq);
    return ids;
}

static PyObject *result_dict(const int64_t *out, const gwr_generate_stats *st) {
    PyObject *toks = PyList_New((Py_ssize_t)st->new_tokens);
    if (!toks) return NULL;
    for (int64_t i = 0; i < st->new_tokens; i++) {
        PyObject *v = PyLong_FromLongLong((long long)out[i]);
        if (!v) {
            Py_DECREF(toks);
            return NULL;
        }
        PyList_SET_ITEM(toks, (Py_ssize_t)i, v);
    }
    return Py_BuildValue("{s:N,s:L,s:L,s:O,s:d,s:d,s:d,s:d}", "tokens", toks, "prompt_tokens",
                         (long long)st->prompt_tokens, "new_tokens", (long long)st->new_tokens, "stopped_at_eos",
                         st->stopped_at_eos ? Py_True : Py_False, "prefill_ms", st->prefill_ms, "decode_ms",
                         st->decode_ms, "prefill_tokens_per_s", st->prefill_tokens_per_s, "decode_tokens_per_s",
                         st->decode_tokens_per_s);
}

static PyObject *py_generate(PyObject *mod, PyObject *args, PyObject *kw) {
    (void)mod;
    static char *kwlist[] = {"model", "tokens", "max_new", "threads", "eos", "optimize", NULL};
    const char *fn = "generate";
    PyObject *model, *tokens, *eosobj = Py_None;
    long long max_new;
    int threads = 1, optimize = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOL|iOp:generate", kwlist, &model, &tokens, &max_new, &threads,
                                     &eosobj, &optimize))
        return NULL;
    if (max_new < 1) return pg_raisef(GWR_ERR_INVALID_ARG, "generate: max_new must be >= 1, not %lld", max_new);
    if (pg_check_threads(threads, fn) < 0) return NULL;
    gwr_generate_options go = {.max_new = max_new};
    if (eosobj != Py_None) {
        long long e = PyLong_Check(eosobj) ? PyLong_AsLongLong(eosobj) : -1;
        if (!PyLong_Check(eosobj) || (e == -1 && PyErr_Occurred()) || e < 0) {
            PyErr_Clear();
            return pg_raisef(GWR_ERR_INVALID_ARG, "generate: eos must be None or an int >= 0 (a token id), not %s",
                             PyLong_Check(eosobj) ? "a negative or huge int" : Py_TYPE(eosobj)->tp_name);
        }
        go.stop_at_eos = 1, go.eos = e;
    }
    Py_ssize_t n = 0;
    int64_t *prompt = prompt_of(tokens, &n), *out = NULL;
    if (!prompt) return NULL;
    gwr_network *owned = NULL, *net = NULL;
    gwr_session *s = NULL;
    PyObject *res = NULL, *path = NULL;
    int on_user_net = 0, session_given = 0;
    /* model: a Session (planned by the caller), a Network or a path */
    if ((s = pg_session_acquire(model, fn, &on_user_net))) {
        session_given = 1;
        net = gwr_session_network(s);
    } else if (PyErr_Occurred()) {
        goto done;
    } else if (PyObject_TypeCheck(model, &pg_Network_Type)) {
        if (!(net = pg_network_get(model))) goto done;
    } else {
        if (!PyUnicode_FSConverter(model, &path)) {
            PyErr_Clear();
            pg_raisef(GWR_ERR_INVALID_ARG, "generate: model must be a path, a Network or a Session, not %.100s",
                      Py_TYPE(model)->tp_name);
            goto done;
        }
        gwr_onnx_load_options lo = {.infer_shapes = 1};
        Py_BEGIN_ALLOW_THREADS
        owned = gwr_onnx_load(PyBytes_AS_STRING(path), &lo);
        Py_END_ALLOW_THREADS
        if (!owned) {
            gwr_status st = gwr_last_status();
            pg_raise(st ? st : GWR_ERR_PARSE, gwr_last_errmsg());
            goto done;
        }
        net = owned;
    }
    if (gwr_generate_check(net, NULL)) {
        pg_raise(gwr_last_status(), gwr_last_errmsg());
        goto done;
    }
    if (!session_given) {
        gwr_session_options so = {.threads = threads, .optimize = optimize ? GWR_SESSION_OPTIMIZE : GWR_SESSION_RAW};
        if (!(s = gwr_session_new(net, &so))) {
            gwr_status st = gwr_last_status();
            pg_raise(st ? st : GWR_ERR_INVALID_ARG, gwr_last_errmsg());
            goto done;
        }
        /* A session on the caller's Network as written reads it while it
         * runs: keep the GIL then, so no other thread changes it. */
        on_user_net = !owned && gwr_session_network(s) == net;
        if (owned && gwr_session_optimized(s)) {
            /* the session runs its own copy: the weights it replaced go now */
            gwr_network_free(owned);
            owned = net = NULL;
        }
    }
    if (!(out = PyMem_Calloc((size_t)max_new, sizeof *out))) {
        PyErr_NoMemory();
        goto done;
    }
    gwr_generate_stats st;
    gwr_status rc;
    if (on_user_net) {
        rc = gwr_generate(s, &go, prompt, n, out, &st);
    } else {
        Py_BEGIN_ALLOW_THREADS
        rc = gwr_generate(s, &go, prompt, n, out, &st);
        Py_END_ALLOW_THREADS
    }
    if (rc) pg_raise(rc, gwr_last_errmsg());
    else res = result_dict(out, &st);
done:
    if (session_given) pg_session_release(model);
    else gwr_session_free(s);
    gwr_network_free(owned);
    Py_XDECREF(path);
    PyMem_Free(prompt), PyMem_Free(out);
    return res;
}

static PyMethodDef generate_functions[] = {
    {"generate", (PyCFunction)(void (*)(void))py_generate, METH_VARARGS | METH_KEYWORDS,
     "generate(model, tokens, max_new, threads=1, eos=None, optimize=True) -> dict\n\n"
     "Greedy decoding over a decoder with a KV cache exported the Hugging Face way (input_ids,\n"
     "attention_mask, position_ids, past_key_values.N.key/.value -> logits, present.N.key/.value), as\n"
     "`gwr generate` does (docs/llm.md). model: a path to an ONNX file, a Network (an optimized copy\n"
     "is planned; optimize=False plans it as written) or a Session (planned by the caller: its threads\n"
     "and optimization; threads and optimize are then ignored). tokens: the prompt's ids; max_new: ids\n"
     "to generate (>= 1); eos: stop after generating it. Returns {'tokens': [ids], 'prompt_tokens',\n"
     "'new_tokens', 'stopped_at_eos', 'prefill_ms', 'decode_ms', 'prefill_tokens_per_s',\n"
     "'decode_tokens_per_s'}. A model that is not such a decoder raises UnsupportedError; a token id\n"
     "not below the vocabulary, max_new < 1 or bad arguments InvalidArgumentError."},
    {NULL, NULL, 0, NULL}};

int pg_init_generate(PyObject *m) { return PyModule_AddFunctions(m, generate_functions); }
