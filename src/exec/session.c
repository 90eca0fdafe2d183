/* session.c - plans a network once and runs it.
 *
 * The plan of a network (and, on first use, of each subgraph) is: the live
 * layers in a topological order, each with its kernel and its inputs and
 * outputs as slots; for every slot, the step after which nothing reads it
 * any more (a read from inside a subgraph counts as a read by the layer
 * that owns the subgraph). A run is a frame: one value per slot, set by
 * the kernels and released at the slot's last read, so the memory of a
 * dead tensor is reused by the next one of its size class (the pool).
 * Names of enclosing graphs are found through the parent frames. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/blas.h"
#include "exec/exec_api.h"
#include "exec/exec_internal.h"

/* ---- plans --------------------------------------------------------------- */

/* An input of a step: a slot of this frame, absent, or a tensor of an
 * enclosing graph. */
enum { IN_ABSENT = -1 };

typedef struct step {
    gwr_layer *l;
    gwr_kernel_fn fn;
    unsigned flags;    /* the kernel's GWR_KF_* */
    int64_t opset;
    int nin, nout;
    int64_t *in;       /* slot, IN_ABSENT, or -2 - k for outer[k] */
    int64_t *out;      /* slot of each output */
    int64_t *release;  /* slots dead after this step */
    int64_t nrelease;
    uint8_t *out_used; /* per output: read by a step, a subgraph or the caller */
    uint32_t in_last;  /* bit j: input j's slot dies here and no other input reads it */
    void *prep;        /* the kernel's prepared state (k->prep), freed by prep_free */
    gwr_kprep_free_fn prep_free;
} step;

typedef struct gplan {
    gwr_network *net;
    gwr_ptrmap slot_of;     /* tensor -> slot + 1 */
    int64_t nslots;
    step *steps;
    int64_t nsteps;
    int64_t *input_slot;    /* per network input */
    int64_t *output_slot;   /* per network output */
    gwr_tensor **outer;     /* tensors of enclosing graphs read here */
    int64_t nouter, outer_cap;
    uint8_t *used;          /* per slot: read by a step, a subgraph or the caller */
} gplan;

typedef struct gwr_frame gwr_frame;
struct gwr_frame {
    gwr_session *s;
    gplan *p;
    gwr_value **vals;
    gwr_frame *parent;
};

struct gwr_session {
    gwr_network *net;
    gwr_network *owned;     /* the optimized copy planned, freed with the session */
    char optimize_msg[GWR_ERRMSG_MAX]; /* why not optimized; "" when optimized */
    gplan *root;
    gwr_ptrmap subplans;    /* subgraph network -> gplan */
    gwr_exec_pool *pool;
    int threads;
    gwr_tpool *tpool;       /* threads-1 workers for the kernels' loops; NULL: threads 1 */
    int64_t peak, total;
    char errmsg[GWR_ERRMSG_MAX];
    gwr_kmsg kmsg;      /* the running kernel's gwr_k_fail: what it reports */
    /* Profiling (gwr_session_profile): off, the run loop tests one flag. */
    int profiling;
    int64_t plan_start_ns, plan_dur_ns; /* always timed: two clock reads per session */
    gwr_profile_event *events;
    int64_t nevents, events_cap;
};

/* ---- profiling ----------------------------------------------------------- */

static gwr_status sess_error(gwr_session *s, gwr_status st, const char *fmt, ...) GWR_PRINTF(3, 4);

int64_t gwr_clock_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void events_clear(gwr_session *s) {
    for (int64_t i = 0; i < s->nevents; i++) gwr_free((char *)s->events[i].shapes), gwr_free((char *)s->events[i].name);
    s->nevents = 0;
}

/* A new event (name and shapes copied; shapes may be NULL), or NULL when
 * out of memory (the profile then lacks it, the run goes on). */
static gwr_profile_event *event_add(gwr_session *s, const char *name, const char *op, const char *cat, int64_t start,
                                    int64_t dur, int depth, char *shapes) {
    char *nm = gwr_strdup(name ? name : "");
    if (!nm || gwr_grow((void **)&s->events, sizeof *s->events, &s->events_cap, s->nevents + 1)) {
        gwr_free(nm), gwr_free(shapes);
        return NULL;
    }
    gwr_profile_event *e = &s->events[s->nevents++];
    *e = (gwr_profile_event){nm, op ? op : "", cat, start, dur < 0 ? 0 : dur, depth, shapes ? shapes : NULL};
    return e;
}

/* "float32[1,3,8,8], float32[4,3,3,3] -> float32[1,4,6,6]": what a layer
 * read and wrote (absent inputs as "-"); malloc'd, NULL when out of memory. */
static char *step_shapes(int nin, gwr_value *const *in, int nout, gwr_value *const *out) {
    size_t cap = 64, n = 0;
    char *b = gwr_malloc(cap);
    for (int k = 0; b && k < nin + nout; k++) {
        const gwr_value *v = k < nin ? in[k] : out[k - nin];
        char ty[160] = "-";
        if (v) gwr_value_type_str(v, ty, sizeof ty);
        const char *sep = k == 0 ? "" : k == nin ? " -> " : ", ";
        if (k == nin && nin == 0) sep = "-> ";
        size_t need = n + strlen(sep) + strlen(ty) + 1;
        if (need > cap) {
            char *nb = gwr_realloc(b, cap = need * 2);
            if (!nb) return gwr_free(b), NULL;
            b = nb;
        }
        n += (size_t)snprintf(b + n, cap - n, "%s%s", sep, ty);
    }
    return b;
}

gwr_status gwr_session_profile(gwr_session *s, int on) {
    if (!s) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_session_profile: NULL session");
    if (!on) {
        s->profiling = 0;
        return GWR_OK;
    }
    events_clear(s);
    if (!event_add(s, "plan", "", "phase", s->plan_start_ns, s->plan_dur_ns, 0, NULL))
        return sess_error(s, GWR_ERR_NOMEM, "gwr_session_profile: out of memory");
    s->profiling = 1;
    return GWR_OK;
}

gwr_status gwr_session_profile_phase(gwr_session *s, const char *name, int64_t start_ns, int64_t dur_ns) {
    if (!s || !name || !*name) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_session_profile_phase: NULL argument");
    if (dur_ns < 0) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_session_profile_phase: negative duration");
    if (!event_add(s, name, "", "phase", start_ns, dur_ns, 0, NULL))
        return sess_error(s, GWR_ERR_NOMEM, "gwr_session_profile_phase: out of memory");
    return GWR_OK;
}

gwr_status gwr_session_profile_optimize(gwr_session *s, int64_t new_start_ns) {
    if (!s) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_session_profile_optimize: NULL session");
    if (!s->owned || new_start_ns > s->plan_start_ns) return GWR_OK; /* as written: no optimize phase */
    return gwr_session_profile_phase(s, "optimize", new_start_ns, s->plan_start_ns - new_start_ns);
}

int64_t gwr_session_profile_count(const gwr_session *s) { return s ? s->nevents : 0; }

const gwr_profile_event *gwr_session_profile_event(const gwr_session *s, int64_t i) {
    return s && i >= 0 && i < s->nevents ? &s->events[i] : NULL;
}

static void json_cstr(FILE *f, const char *str) { gwr_json_str(f, str, strlen(str)); }

gwr_status gwr_session_profile_write(const gwr_session *s, FILE *f) {
    if (!s || !f) return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_session_profile_write: NULL argument");
    /* Times in microseconds from the earliest event (Chrome's trace format:
     * complete events, "ph":"X"); phases on thread 0, the runs and their
     * layers on thread 1, so that a viewer nests layers under runs. */
    int64_t t0 = INT64_MAX;
    for (int64_t i = 0; i < s->nevents; i++)
        if (s->events[i].start_ns < t0) t0 = s->events[i].start_ns;
    fputs("{\"traceEvents\":[", f);
    for (int64_t i = 0; i < s->nevents; i++) {
        const gwr_profile_event *e = &s->events[i];
        fputs(i ? ",\n{\"name\":" : "\n{\"name\":", f);
        json_cstr(f, e->name);
        fputs(",\"cat\":", f);
        json_cstr(f, e->cat);
        fprintf(f, ",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":1,\"tid\":%d,\"args\":{",
                (double)(e->start_ns - t0) / 1e3, (double)e->dur_ns / 1e3, strcmp(e->cat, "phase") ? 1 : 0);
        if (!strcmp(e->cat, "layer")) {
            fputs("\"op\":", f);
            json_cstr(f, e->op);
            fputs(",\"shapes\":", f);
            json_cstr(f, e->shapes ? e->shapes : "");
            fprintf(f, ",\"depth\":%d", e->depth);
        }
        fputs("}}", f);
    }
    fputs("\n],\"displayTimeUnit\":\"ms\"}\n", f);
    return ferror(f) ? gwr_set_last_error(GWR_ERR_IO, "gwr_session_profile_write: cannot write") : GWR_OK;
}

static gwr_status sess_error(gwr_session *s, gwr_status st, const char *fmt, ...) GWR_PRINTF(3, 4);
static gwr_status sess_error(gwr_session *s, gwr_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->errmsg, sizeof s->errmsg, fmt, ap);
    va_end(ap);
    gwr_set_last_error(st, "%s", s->errmsg);
    return st;
}

static void plan_free(gplan *p) {
    if (!p) return;
    for (int64_t i = 0; i < p->nsteps; i++) {
        step *st = &p->steps[i];
        if (st->prep) st->prep_free(st->prep);
        gwr_free(st->in), gwr_free(st->out), gwr_free(st->release), gwr_free(st->out_used);
    }
    gwr_free(p->steps), gwr_free(p->input_slot), gwr_free(p->output_slot), gwr_free(p->outer), gwr_free(p->used);
    gwr_ptrmap_free(&p->slot_of);
    gwr_free(p);
}

static int64_t slot_of(const gplan *p, const gwr_tensor *t) {
    return (int64_t)(intptr_t)gwr_ptrmap_get(&p->slot_of, t) - 1;
}

static int64_t new_slot(gplan *p, gwr_tensor *t) {
    if (gwr_ptrmap_put(&p->slot_of, t, (void *)(intptr_t)(p->nslots + 1))) return -1;
    return p->nslots++;
}

/* Marks every tensor of `net` read inside subgraph g (at any depth) as
 * read at step k of p (last[slot] = k). */
static void capture_reads(gplan *p, gwr_network *g, int64_t k, int64_t *last) {
    for (int64_t i = 0; i < gwr_network_num_layers(g); i++) {
        gwr_layer *l = gwr_network_layer(g, i);
        if (gwr_layer_is_removed(l)) continue;
        for (int j = 0; j < gwr_layer_num_inputs(l); j++) {
            gwr_tensor *t = gwr_layer_input(l, j);
            int64_t sl = t && gwr_tensor_network(t) == p->net ? slot_of(p, t) : -1;
            if (sl >= 0) last[sl] = k, p->used[sl] = 1;
        }
        for (int a = 0; a < gwr_layer_num_attrs(l); a++) {
            gwr_network *sub, *const *subs;
            int64_t n;
            const char *an = gwr_layer_attr_name(l, a);
            if (gwr_layer_attr_type(l, a) == GWR_ATTR_GRAPH && !gwr_layer_get_graph(l, an, &sub))
                capture_reads(p, sub, k, last);
            if (gwr_layer_attr_type(l, a) == GWR_ATTR_GRAPHS && !gwr_layer_get_graphs(l, an, &subs, &n))
                for (int64_t q = 0; q < n; q++) capture_reads(p, subs[q], k, last);
        }
    }
}

static gwr_network *root_of(gwr_network *n) {
    while (gwr_network_parent(n)) n = gwr_network_parent(n);
    return n;
}

/* The opset of l's domain the root network imports; 0, "the newest" as
 * kernels read it, when it imports none. */
static int64_t layer_opset(const gwr_layer *l) {
    int64_t v = gwr_network_opset(root_of(gwr_layer_network(l)), gwr_layer_domain(l));
    return v < 0 ? 0 : v;
}

/* The kernel for l at opset `opset`, OpenBLAS loaded when it needs it; NULL
 * with a message naming the layer in msg. */
static const gwr_kernel_entry *layer_kernel(const gwr_layer *l, int64_t opset, char *msg, size_t size) {
    const char *dom = gwr_layer_domain(l), *why = NULL;
    const gwr_kernel_entry *e = gwr_kernel_for_layer(l);
    if (!e) {
        snprintf(msg, size, "layer '%s': no kernel for %s%s%s", gwr_layer_name(l), dom, *dom ? "::" : "", gwr_layer_op(l));
    } else if (!gwr_kernel_supports(e, opset)) {
        char last[24] = "";
        if (e->last_opset != INT_MAX) snprintf(last, sizeof last, "%d", e->last_opset);
        snprintf(msg, size, "layer '%s' (%s): the kernel implements opsets %d to %s of domain '%s', not opset %lld",
                 gwr_layer_name(l), gwr_layer_op(l), e->first_opset, *last ? last : "the newest",
                 *dom ? dom : "ai.onnx", (long long)opset);
        e = NULL;
    } else if ((e->flags & GWR_KF_BLAS) && gwr_blas_load(&why)) {
        snprintf(msg, size, "layer '%s' (%s): %s", gwr_layer_name(l), gwr_layer_op(l), why);
        e = NULL;
    }
    return e;
}

/* Which inputs of st are slots it releases, each read by one input only:
 * a kernel may write its output over them (gwr_k_out_over). */
static void mark_last_reads(step *st) {
    for (int64_t r = 0; r < st->nrelease; r++) {
        int at = -1, n = 0;
        for (int j = 0; j < st->nin; j++)
            if (st->in[j] == st->release[r]) at = j, n++;
        if (n == 1 && at < 32) st->in_last |= 1u << at;
    }
}

/* The value of t when a Constant layer (attribute "value") produces it:
 * what a kernel may prepare from; NULL otherwise. *nomem set when the
 * value could not be made. */
static gwr_value *constant_value(const gwr_tensor *t, int *nomem) {
    gwr_layer *c = t ? gwr_tensor_parent(t) : NULL;
    const gwr_weights *w;
    if (!c || gwr_layer_is_removed(c) || gwr_layer_op_id(c) != GWR_OP_Constant || gwr_layer_get_tensor(c, "value", &w))
        return NULL;
    gwr_value *v = gwr_value_from_weights(w);
    if (!v) *nomem = 1;
    return v;
}

/* Runs e's prepare for step st (its layer's constant inputs bound, the
 * others NULL); its state goes to st->prep. */
static gwr_status step_prepare(gwr_session *s, step *st, const gwr_kernel_entry *e) {
    gwr_value *inb[16] = {0}, **in = st->nin <= 16 ? inb : gwr_calloc((size_t)st->nin, sizeof *in);
    if (!in) return sess_error(s, GWR_ERR_NOMEM, "out of memory");
    int nomem = 0;
    for (int j = 0; j < st->nin; j++) in[j] = constant_value(gwr_layer_input(st->l, j), &nomem);
    gwr_status rc = GWR_OK;
    if (nomem) {
        rc = sess_error(s, GWR_ERR_NOMEM, "layer '%s' (%s): out of memory", gwr_layer_name(st->l), gwr_layer_op(st->l));
    } else {
        gwr_kctx kc = {.layer = st->l, .opset = st->opset, .nin = st->nin, .in = in, .threads = s->threads,
                       .pool = s->pool, .msg = &s->kmsg, .out_used = st->out_used, .tpool = s->tpool};
        s->kmsg.text[0] = 0;
        s->kmsg.status = GWR_OK;
        void *state = NULL;
        rc = e->prepare(&kc, &state);
        if (rc && s->kmsg.status) rc = s->kmsg.status;
        if (rc) {
            if (state) e->prep_free(state);
            sess_error(s, rc, "layer '%s' (%s): %s", gwr_layer_name(st->l), gwr_layer_op(st->l),
                       s->kmsg.text[0] ? s->kmsg.text : gwr_status_name(rc));
        } else {
            st->prep = state, st->prep_free = e->prep_free;
        }
    }
    for (int j = 0; j < st->nin; j++) gwr_value_release(in[j]);
    if (in != inb) gwr_free(in);
    return rc;
}

static gplan *plan_new(gwr_session *s, gwr_network *net) {
    gplan *p = gwr_calloc(1, sizeof *p);
    gwr_layer **order = NULL;
    int64_t *last = NULL, nl = gwr_network_num_layers(net);
    if (!p) goto nomem;
    p->net = net;
    int ni = gwr_network_num_inputs(net), no = gwr_network_num_outputs(net);
    order = gwr_malloc((size_t)(nl ? nl : 1) * sizeof *order);
    p->steps = gwr_calloc((size_t)(nl ? nl : 1), sizeof *p->steps);
    p->input_slot = gwr_malloc((size_t)(ni ? ni : 1) * sizeof *p->input_slot);
    p->output_slot = gwr_malloc((size_t)(no ? no : 1) * sizeof *p->output_slot);
    if (!order || !p->steps || !p->input_slot || !p->output_slot) goto nomem;
    if (gwr_network_topo_order(net, order)) {
        sess_error(s, GWR_ERR_CYCLE, "%s", gwr_network_errmsg(net));
        goto fail;
    }
    for (int i = 0; i < ni; i++)
        if ((p->input_slot[i] = new_slot(p, gwr_network_input(net, i))) < 0) goto nomem;
    for (int64_t i = 0; i < nl; i++) {
        gwr_layer *l = order[i];
        if (gwr_layer_is_removed(l)) continue;
        step *st = &p->steps[p->nsteps++];
        st->l = l;
        st->opset = layer_opset(l);
        char msg[GWR_ERRMSG_MAX];
        const gwr_kernel_entry *e = layer_kernel(l, st->opset, msg, sizeof msg);
        if (!e) {
            sess_error(s, GWR_ERR_UNSUPPORTED, "%s", msg);
            goto fail;
        }
        st->fn = e->fn;
        st->flags = e->flags;
        st->nin = gwr_layer_num_inputs(l), st->nout = gwr_layer_num_outputs(l);
        st->in = gwr_malloc((size_t)(st->nin ? st->nin : 1) * sizeof *st->in);
        st->out = gwr_malloc((size_t)(st->nout ? st->nout : 1) * sizeof *st->out);
        if (!st->in || !st->out) goto nomem;
        for (int j = 0; j < st->nin; j++) {
            gwr_tensor *t = gwr_layer_input(l, j);
            if (!t) {
                st->in[j] = IN_ABSENT;
            } else if (gwr_tensor_network(t) == net) {
                st->in[j] = slot_of(p, t);
            } else {
                int64_t k = 0;
                while (k < p->nouter && p->outer[k] != t) k++;
                if (k == p->nouter) {
                    if (gwr_grow((void **)&p->outer, sizeof *p->outer, &p->outer_cap, p->nouter + 1)) goto nomem;
                    p->outer[p->nouter++] = t;
                }
                st->in[j] = -2 - k;
            }
        }
        for (int o = 0; o < st->nout; o++)
            if ((st->out[o] = new_slot(p, gwr_layer_output(l, o))) < 0) goto nomem;
        if (e->prepare && step_prepare(s, st, e)) goto fail;
    }
    for (int i = 0; i < no; i++) p->output_slot[i] = slot_of(p, gwr_network_output(net, i));
    /* Lifetimes: the last step reading each slot; outputs live on. */
    last = gwr_malloc((size_t)(p->nslots ? p->nslots : 1) * sizeof *last);
    p->used = gwr_calloc((size_t)(p->nslots ? p->nslots : 1), 1);
    if (!last || !p->used) goto nomem;
    for (int64_t k = 0; k < p->nslots; k++) last[k] = -1;
    for (int64_t k = 0; k < p->nsteps; k++) {
        step *st = &p->steps[k];
        for (int o = 0; o < st->nout; o++) last[st->out[o]] = k; /* unread: dead at once */
        for (int j = 0; j < st->nin; j++)
            if (st->in[j] >= 0) last[st->in[j]] = k, p->used[st->in[j]] = 1;
        for (int a = 0; a < gwr_layer_num_attrs(st->l); a++) {
            gwr_network *sub, *const *subs;
            int64_t n;
            const char *an = gwr_layer_attr_name(st->l, a);
            if (gwr_layer_attr_type(st->l, a) == GWR_ATTR_GRAPH && !gwr_layer_get_graph(st->l, an, &sub))
                capture_reads(p, sub, k, last);
            if (gwr_layer_attr_type(st->l, a) == GWR_ATTR_GRAPHS && !gwr_layer_get_graphs(st->l, an, &subs, &n))
                for (int64_t q = 0; q < n; q++) capture_reads(p, subs[q], k, last);
        }
    }
    for (int i = 0; i < no; i++)
        if (p->output_slot[i] >= 0) last[p->output_slot[i]] = p->nsteps, p->used[p->output_slot[i]] = 1;
    for (int64_t k = 0; k < p->nsteps; k++) {
        step *st = &p->steps[k];
        if (!(st->out_used = gwr_malloc((size_t)(st->nout ? st->nout : 1)))) goto nomem;
        for (int o = 0; o < st->nout; o++) st->out_used[o] = p->used[st->out[o]];
    }
    for (int64_t sl = 0; sl < p->nslots; sl++) {
        if (last[sl] < 0 || last[sl] >= p->nsteps) continue;
        step *st = &p->steps[last[sl]];
        int64_t *r = gwr_realloc(st->release, (size_t)(st->nrelease + 1) * sizeof *r);
        if (!r) goto nomem;
        st->release = r;
        r[st->nrelease++] = sl;
    }
    for (int64_t k = 0; k < p->nsteps; k++) mark_last_reads(&p->steps[k]);
    gwr_free(order), gwr_free(last);
    return p;
nomem:
    sess_error(s, GWR_ERR_NOMEM, "out of memory");
fail:
    gwr_free(order), gwr_free(last);
    plan_free(p);
    return NULL;
}

/* ---- sessions ------------------------------------------------------------ */

gwr_session *gwr_session_new_raw(gwr_network *net, const gwr_session_options *opt) {
    if (!net) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_session_new: NULL network");
        return NULL;
    }
    if (opt && opt->threads > GWR_SESSION_MAX_THREADS) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_session_new: %d threads: at most %d (GWR_SESSION_MAX_THREADS)",
                           opt->threads, GWR_SESSION_MAX_THREADS);
        return NULL;
    }
    gwr_session *s = gwr_calloc(1, sizeof *s);
    if (!s || !(s->pool = gwr_exec_pool_new())) {
        gwr_free(s);
        gwr_set_last_error(GWR_ERR_NOMEM, "gwr_session_new: out of memory");
        return NULL;
    }
    s->net = net;
    snprintf(s->optimize_msg, sizeof s->optimize_msg, "planned as written");
    s->threads = opt && opt->threads > 0 ? opt->threads : 1;
    s->plan_start_ns = gwr_clock_ns();
    s->tpool = gwr_tpool_new(s->threads); /* NULL (loops run serially) when it cannot start */
    s->root = plan_new(s, net);
    s->plan_dur_ns = gwr_clock_ns() - s->plan_start_ns;
    if (!s->root) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "%s", s->errmsg);
        gwr_session_free(s);
        return NULL;
    }
    return s;
}

void gwr_session_free(gwr_session *s) {
    if (!s) return;
    plan_free(s->root);
    for (int64_t i = 0; i < s->subplans.cap; i++)
        if (s->subplans.keys && s->subplans.keys[i]) plan_free(s->subplans.vals[i]);
    gwr_ptrmap_free(&s->subplans);
    gwr_exec_pool_close(s->pool);
    gwr_tpool_free(s->tpool);
    gwr_network_free(s->owned);
    events_clear(s);
    gwr_free(s->events);
    gwr_free(s);
}

void gwr_session_set_origin(gwr_session *s, gwr_network *owned, const char *why) {
    s->owned = owned;
    snprintf(s->optimize_msg, sizeof s->optimize_msg, "%s", why ? why : "");
}

int gwr_session_optimized(const gwr_session *s) { return s && s->owned; }
const char *gwr_session_optimize_msg(const gwr_session *s) { return s ? s->optimize_msg : ""; }
gwr_network *gwr_session_network(gwr_session *s) { return s ? s->net : NULL; }

const char *gwr_session_errmsg(const gwr_session *s) { return s ? s->errmsg : gwr_last_errmsg(); }
int64_t gwr_session_peak_bytes(const gwr_session *s) { return s ? s->peak : 0; }
int64_t gwr_session_total_bytes(const gwr_session *s) { return s ? s->total : 0; }
static int64_t plan_prepared(const gplan *p) {
    int64_t n = 0;
    for (int64_t i = 0; p && i < p->nsteps; i++) n += p->steps[i].prep != NULL;
    return n;
}

int64_t gwr_session_prepared_layers(const gwr_session *s) {
    if (!s) return 0;
    int64_t n = plan_prepared(s->root);
    for (int64_t i = 0; i < s->subplans.cap; i++)
        if (s->subplans.keys && s->subplans.keys[i]) n += plan_prepared(s->subplans.vals[i]);
    return n;
}

int gwr_exec_has_kernel(const char *domain, const char *op) {
    return gwr_kernel_find(domain, op) != NULL;
}

/* A kernel without GWR_KF_VALUES is given tensors only: the index of its
 * first input that is a sequence or an optional, else -1. */
static int first_non_tensor(unsigned flags, int nin, gwr_value *const *in) {
    if (flags & GWR_KF_VALUES) return -1;
    for (int j = 0; j < nin; j++)
        if (in[j] && !gwr_value_is_tensor(in[j])) return j;
    return -1;
}

/* ---- running ------------------------------------------------------------- */

static gwr_value *find_outer(gwr_frame *f, const gwr_tensor *t) {
    gwr_network *n = gwr_tensor_network(t);
    for (; f; f = f->parent) {
        if (f->p->net != n) continue;
        int64_t sl = slot_of(f->p, t);
        return sl >= 0 ? f->vals[sl] : NULL;
    }
    return NULL;
}

int gwr_value_fits(const gwr_tensor *t, const gwr_value *v, char *why, size_t size) {
    char none[1];
    if (!why) why = none, size = sizeof none;
    if (!t || !v) {
        snprintf(why, size, "NULL tensor or value");
        return 0;
    }
    gwr_value_kind tk = gwr_tensor_kind(t);
    if (tk != v->kind) {
        /* An untyped tensor (no dtype, no rank) takes any value. */
        if (tk == GWR_VALUE_TENSOR && gwr_tensor_dtype(t) == GWR_UNDEFINED && gwr_tensor_rank(t) < 0) return 1;
        /* A tensor or a sequence where an optional is declared: a full
         * optional (a Loop carrying optional(sequence) gets the sequence
         * its body made; the Optional* ops take both forms). */
        if (tk == GWR_VALUE_OPTIONAL && (v->kind == GWR_VALUE_TENSOR || v->kind == GWR_VALUE_SEQUENCE)) return 1;
        snprintf(why, size, "a %s, expected a %s", gwr_value_kind_name(v->kind), gwr_value_kind_name(tk));
        return 0;
    }
    if (tk != GWR_VALUE_TENSOR) return 1; /* element types are the kernels' to check */
    gwr_dtype dt = gwr_tensor_dtype(t);
    if (dt != GWR_UNDEFINED && dt != v->dtype) {
        snprintf(why, size, "dtype %s, expected %s", gwr_dtype_name(v->dtype), gwr_dtype_name(dt));
        return 0;
    }
    int r = gwr_tensor_rank(t);
    if (r < 0) return 1;
    if (r != v->rank) {
        snprintf(why, size, "rank %d, expected %d", v->rank, r);
        return 0;
    }
    for (int i = 0; i < r; i++) {
        gwr_dim d = gwr_tensor_dim(t, i);
        if (GWR_DIM_IS_KNOWN(d) && d != v->dims[i]) {
            snprintf(why, size, "dim %d is %lld, expected %lld", i, (long long)v->dims[i], (long long)d);
            return 0;
        }
    }
    return 1;
}

static void frame_clear(gwr_frame *f) {
    for (int64_t i = 0; i < f->p->nslots; i++) gwr_value_release(f->vals[i]);
    gwr_free(f->vals);
    f->vals = NULL;
}

static gwr_status run_subgraph(gwr_kctx *k, gwr_network *g, int nin, gwr_value *const *in, int nout, gwr_value **out);

static gwr_status run_steps(gwr_session *s, gwr_frame *f) {
    gplan *p = f->p;
    gwr_value *inb[16], *outb[16];
    for (int64_t k = 0; k < p->nsteps; k++) {
        step *st = &p->steps[k];
        gwr_value **in = st->nin <= 16 ? inb : gwr_calloc((size_t)st->nin, sizeof *in);
        gwr_value **out = st->nout <= 16 ? outb : gwr_calloc((size_t)st->nout, sizeof *out);
        if (!in || !out) {
            if (in != inb) gwr_free(in);
            return sess_error(s, GWR_ERR_NOMEM, "out of memory");
        }
        memset(out, 0, (size_t)st->nout * sizeof *out);
        gwr_status rc = GWR_OK;
        for (int j = 0; j < st->nin && !rc; j++) {
            int64_t x = st->in[j];
            in[j] = x == IN_ABSENT ? NULL : x >= 0 ? f->vals[x] : find_outer(f->parent, p->outer[-2 - x]);
            if (x != IN_ABSENT && !in[j])
                rc = sess_error(s, GWR_ERR_STATE, "layer '%s' (%s): input %d ('%s') has no value", gwr_layer_name(st->l),
                                gwr_layer_op(st->l), j, gwr_tensor_name(gwr_layer_input(st->l, j)));
        }
        /* A KV-cache view whose rows lie apart goes to a kernel that does
         * not take them (GWR_KF_CACHE) as a dense copy, released after the
         * step; the frame keeps the view. */
        int ndense = 0;
        for (int j = 0; j < st->nin && !rc && !(st->flags & GWR_KF_CACHE); j++)
            if (in[j] && gwr_value_strided(in[j])) {
                if (!(in[j] = gwr_value_dense(in[j], s->pool)))
                    rc = sess_error(s, GWR_ERR_NOMEM, "layer '%s' (%s): out of memory", gwr_layer_name(st->l), gwr_layer_op(st->l));
                else ndense++;
            }
        int bad = rc ? -1 : first_non_tensor(st->flags, st->nin, in);
        if (bad >= 0)
            rc = sess_error(s, GWR_ERR_TYPE, "layer '%s' (%s): input %d ('%s') is a %s; the kernel takes tensors only",
                            gwr_layer_name(st->l), gwr_layer_op(st->l), bad, gwr_tensor_name(gwr_layer_input(st->l, bad)),
                            gwr_value_kind_name(in[bad]->kind));
        if (!rc) {
            gwr_kctx kc = {.layer = st->l, .opset = st->opset, .nin = st->nin, .nout = st->nout, .in = in, .out = out,
                           .threads = s->threads, .pool = s->pool, .msg = &s->kmsg, .out_used = st->out_used,
                           .in_last = st->in_last,
                           .run_graph = run_subgraph, .run_ctx = f, .prep = st->prep, .tpool = s->tpool};
            s->kmsg.text[0] = 0;
            s->kmsg.status = GWR_OK;
            if (s->profiling) {
                int64_t t = gwr_clock_ns();
                rc = st->fn(&kc);
                int64_t d = gwr_clock_ns() - t, depth = 0;
                for (gwr_frame *q = f->parent; q; q = q->parent) depth++;
                if (!rc)
                    event_add(s, gwr_layer_name(st->l), gwr_layer_op(st->l), "layer", t, d, (int)depth,
                              step_shapes(st->nin, in, st->nout, out));
            } else {
                rc = st->fn(&kc);
            }
            /* The status gwr_k_fail recorded wins: a kernel that returns
             * NOMEM after gwr_k_out refused a bad shape reports the shape. */
            if (rc && s->kmsg.status) rc = s->kmsg.status;
            if (rc) {
                sess_error(s, rc, "layer '%s' (%s): %s", gwr_layer_name(st->l), gwr_layer_op(st->l),
                           s->kmsg.text[0] ? s->kmsg.text : gwr_status_name(rc));
            } else {
                for (int o = 0; o < st->nout && !rc; o++)
                    if (!out[o] && p->used[st->out[o]])
                        rc = sess_error(s, GWR_ERR_STATE, "layer '%s' (%s): kernel gave no value for output %d",
                                        gwr_layer_name(st->l), gwr_layer_op(st->l), o);
            }
        }
        for (int j = 0; ndense && j < st->nin; j++) /* the dense copies: the values the slots do not hold */
            if (in[j] && st->in[j] != IN_ABSENT &&
                in[j] != (st->in[j] >= 0 ? f->vals[st->in[j]] : find_outer(f->parent, p->outer[-2 - st->in[j]])))
                gwr_value_release(in[j]);
        for (int o = 0; o < st->nout; o++) {
            if (!rc) gwr_value_release(f->vals[st->out[o]]), f->vals[st->out[o]] = out[o];
            else gwr_value_release(out[o]);
        }
        if (in != inb) gwr_free(in);
        if (out != outb) gwr_free(out);
        if (rc) return rc;
        for (int64_t r = 0; r < st->nrelease; r++) {
            gwr_value_release(f->vals[st->release[r]]);
            f->vals[st->release[r]] = NULL;
        }
    }
    return GWR_OK;
}

/* Runs plan p with its inputs (one per network input, NULL: the input's
 * default) under parent; outputs get new references. */
static gwr_status run_plan(gwr_session *s, gplan *p, gwr_frame *parent, gwr_value *const *inputs, gwr_value **outputs) {
    gwr_frame f = {s, p, gwr_calloc((size_t)(p->nslots ? p->nslots : 1), sizeof(gwr_value *)), parent};
    if (!f.vals) return sess_error(s, GWR_ERR_NOMEM, "out of memory");
    gwr_status rc = GWR_OK;
    int ni = gwr_network_num_inputs(p->net), no = gwr_network_num_outputs(p->net);
    for (int i = 0; i < ni && !rc; i++) {
        gwr_tensor *t = gwr_network_input(p->net, i);
        gwr_value *v = inputs[i] ? gwr_value_retain(inputs[i]) : NULL;
        if (!v && gwr_tensor_default(t) && !(v = gwr_value_from_weights(gwr_tensor_default(t))))
            rc = sess_error(s, GWR_ERR_NOMEM, "out of memory");
        char why[160];
        if (!rc && !v) rc = sess_error(s, GWR_ERR_INVALID_ARG, "input '%s' is missing", gwr_tensor_name(t));
        else if (!rc && !gwr_value_fits(t, v, why, sizeof why))
            rc = sess_error(s, GWR_ERR_INVALID_ARG, "input '%s': %s", gwr_tensor_name(t), why);
        f.vals[p->input_slot[i]] = v;
    }
    if (!rc) rc = run_steps(s, &f);
    for (int i = 0; i < no && !rc; i++) {
        gwr_tensor *t = gwr_network_output(p->net, i);
        int64_t sl = p->output_slot[i];
        gwr_value *v = sl >= 0 ? f.vals[sl] : find_outer(parent, t);
        if (!v) rc = sess_error(s, GWR_ERR_STATE, "output '%s' has no value", gwr_tensor_name(t));
        else outputs[i] = gwr_value_retain(v);
    }
    if (rc)
        for (int i = 0; i < no; i++) gwr_value_release(outputs[i]), outputs[i] = NULL;
    frame_clear(&f);
    return rc;
}

gwr_status gwr_session_run(gwr_session *s, int nin, const char *const *in_names, gwr_value *const *in_values, int nout,
                           const char *const *out_names, gwr_value **out_values) {
    if (!s || nin < 0 || nout < 0 || (nin && (!in_names || !in_values)) || (nout && !out_values))
        return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_session_run: bad argument");
    gwr_network *net = s->net;
    int ni = gwr_network_num_inputs(net), no = gwr_network_num_outputs(net);
    for (int i = 0; i < nout; i++) out_values[i] = NULL;
    if (!out_names && nout != no)
        return sess_error(s, GWR_ERR_INVALID_ARG, "the network has %d outputs, %d asked for", no, nout);
    gwr_value **ins = gwr_calloc((size_t)(ni ? ni : 1), sizeof *ins), **outs = gwr_calloc((size_t)(no ? no : 1), sizeof *outs);
    gwr_status rc = ins && outs ? GWR_OK : sess_error(s, GWR_ERR_NOMEM, "out of memory");
    for (int k = 0; k < nin && !rc; k++) {
        int i = 0;
        while (i < ni && strcmp(gwr_tensor_name(gwr_network_input(net, i)), in_names[k] ? in_names[k] : "")) i++;
        if (i == ni) rc = sess_error(s, GWR_ERR_NOT_FOUND, "'%s' is not an input of the network", in_names[k] ? in_names[k] : "(null)");
        else if (!in_values[k]) rc = sess_error(s, GWR_ERR_INVALID_ARG, "input '%s': NULL value", in_names[k]);
        else ins[i] = in_values[k];
    }
    int *pick = gwr_calloc((size_t)(nout ? nout : 1), sizeof *pick);
    if (!rc && !pick) rc = sess_error(s, GWR_ERR_NOMEM, "out of memory");
    for (int k = 0; k < nout && !rc; k++) {
        if (!out_names) {
            pick[k] = k;
            continue;
        }
        int i = 0;
        while (i < no && strcmp(gwr_tensor_name(gwr_network_output(net, i)), out_names[k] ? out_names[k] : "")) i++;
        if (i == no) rc = sess_error(s, GWR_ERR_NOT_FOUND, "'%s' is not an output of the network", out_names[k] ? out_names[k] : "(null)");
        pick[k] = i;
    }
    /* A symbolic dim ("batch") takes one value across all inputs. */
    struct binding {
        gwr_dim sym;
        int64_t v;
        int input;
    } bound[32];
    int nbound = 0;
    for (int i = 0; i < ni && !rc; i++) {
        gwr_tensor *t = gwr_network_input(net, i);
        if (!ins[i] || !gwr_value_is_tensor(ins[i]) || gwr_tensor_rank(t) != ins[i]->rank) continue; /* run_plan reports it */
        for (int d = 0; d < ins[i]->rank && !rc; d++) {
            gwr_dim sym = gwr_tensor_dim(t, d);
            if (!GWR_DIM_IS_SYM(sym)) continue;
            int b = 0;
            while (b < nbound && bound[b].sym != sym) b++;
            if (b == nbound && nbound < 32) bound[nbound++] = (struct binding){sym, ins[i]->dims[d], i};
            else if (b < nbound && bound[b].v != ins[i]->dims[d])
                rc = sess_error(s, GWR_ERR_INVALID_ARG, "dim '%s' is %lld in input '%s' but %lld in input '%s'",
                                gwr_network_dim_name(net, sym), (long long)bound[b].v,
                                gwr_tensor_name(gwr_network_input(net, bound[b].input)), (long long)ins[i]->dims[d],
                                gwr_tensor_name(t));
        }
    }
    gwr_exec_pool_begin_run(s->pool);
    int cap_prev = gwr_blas_cap(s->tpool ? 1 : 0); /* the pool splits (blas.h) */
    int blas_prev = gwr_blas_run_begin(s->threads);
    gwr_tpool *tp_prev = gwr_tpool_run_set(s->tpool);
    int64_t run_t = s->profiling ? gwr_clock_ns() : 0;
    if (!rc) rc = run_plan(s, s->root, NULL, ins, outs);
    if (s->profiling && !rc) event_add(s, "run", "", "run", run_t, gwr_clock_ns() - run_t, 0, NULL);
    gwr_tpool_run_set(tp_prev);
    gwr_blas_cap(cap_prev); /* first: the count given back is not capped */
    gwr_blas_run_end(blas_prev);
    gwr_exec_pool_stats(s->pool, &s->peak, &s->total);
    for (int k = 0; k < nout && !rc; k++) out_values[k] = gwr_value_retain(outs[pick[k]]);
    for (int i = 0; outs && i < no; i++) gwr_value_release(outs[i]);
    gwr_free(ins), gwr_free(outs), gwr_free(pick);
    return rc;
}

/* ---- subgraphs (k->run_graph) ------------------------------------------- */

/* Plans subgraph g on first use (kept in the session) and runs it in a
 * frame under the kernel's, so that its names of enclosing graphs resolve. */
static gwr_status run_subgraph(gwr_kctx *k, gwr_network *g, int nin, gwr_value *const *in, int nout, gwr_value **out) {
    gwr_frame *f = k->run_ctx;
    gwr_session *s = f->s;
    gplan *p = gwr_ptrmap_get(&s->subplans, g);
    if (!p) {
        if (!(p = plan_new(s, g))) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "in subgraph '%s': %s", gwr_network_name(g), s->errmsg);
        if (gwr_ptrmap_put(&s->subplans, g, p)) {
            plan_free(p);
            return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
        }
    }
    if (nin != gwr_network_num_inputs(g) || nout != gwr_network_num_outputs(g))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "subgraph '%s' takes %d inputs and gives %d outputs (%d and %d here)",
                          gwr_network_name(g), gwr_network_num_inputs(g), gwr_network_num_outputs(g), nin, nout);
    gwr_kmsg saved = s->kmsg; /* the steps of g write their own */
    gwr_status rc = run_plan(s, p, f, in, out);
    if (rc) {
        char inner[GWR_ERRMSG_MAX];
        memcpy(inner, s->errmsg, sizeof inner);
        return gwr_k_fail(k, rc, "in subgraph '%s': %s", gwr_network_name(g), inner);
    }
    s->kmsg = saved;
    return GWR_OK;
}

gwr_status gwr_exec_layer(gwr_layer *l, gwr_value *const *inputs, gwr_value **outputs) {
    if (!l || !outputs || (gwr_layer_num_inputs(l) && !inputs))
        return gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_exec_layer: NULL argument");
    int nin = gwr_layer_num_inputs(l), nout = gwr_layer_num_outputs(l);
    for (int o = 0; o < nout; o++) outputs[o] = NULL;
    for (int a = 0; a < gwr_layer_num_attrs(l); a++)
        if (gwr_layer_attr_type(l, a) == GWR_ATTR_GRAPH || gwr_layer_attr_type(l, a) == GWR_ATTR_GRAPHS)
            return gwr_set_last_error(GWR_ERR_UNSUPPORTED, "layer '%s' (%s): has a subgraph", gwr_layer_name(l),
                                      gwr_layer_op(l));
    int64_t opset = layer_opset(l);
    char msg[GWR_ERRMSG_MAX];
    const gwr_kernel_entry *e = layer_kernel(l, opset, msg, sizeof msg);
    if (!e) return gwr_set_last_error(GWR_ERR_UNSUPPORTED, "%s", msg);
    int bad = first_non_tensor(e->flags, nin, inputs);
    if (bad >= 0)
        return gwr_set_last_error(GWR_ERR_TYPE, "layer '%s' (%s): input %d is a %s; the kernel takes tensors only", gwr_layer_name(l),
                                  gwr_layer_op(l), bad, gwr_value_kind_name(inputs[bad]->kind));
    /* No session: a pool and a message of its own. */
    gwr_exec_pool *pool = gwr_exec_pool_new();
    if (!pool) return gwr_set_last_error(GWR_ERR_NOMEM, "gwr_exec_layer: out of memory");
    gwr_kmsg km = {GWR_OK, ""};
    /* strided KV-cache views as dense copies, as a session gives them */
    gwr_value **in = nin ? gwr_calloc((size_t)nin, sizeof *in) : NULL;
    gwr_status rc = nin && !in ? GWR_ERR_NOMEM : GWR_OK;
    for (int j = 0; j < nin && !rc; j++)
        if (inputs[j] && !(in[j] = e->flags & GWR_KF_CACHE ? gwr_value_retain(inputs[j]) : gwr_value_dense(inputs[j], pool)))
            rc = GWR_ERR_NOMEM;
    gwr_kctx kc = {.layer = l, .opset = opset, .nin = nin, .nout = nout, .in = in, .out = outputs,
                   .threads = 1, .pool = pool, .msg = &km};
    if (rc) snprintf(km.text, sizeof km.text, "out of memory");
    else rc = e->fn(&kc);
    for (int j = 0; in && j < nin; j++) gwr_value_release(in[j]);
    gwr_free(in);
    if (rc && km.status) rc = km.status;
    if (rc) {
        for (int o = 0; o < nout; o++) gwr_value_release(outputs[o]), outputs[o] = NULL;
        gwr_set_last_error(rc, "layer '%s' (%s): %s", gwr_layer_name(l), gwr_layer_op(l),
                           km.text[0] ? km.text : gwr_status_name(rc));
    }
    gwr_exec_pool_close(pool);
    return rc;
}
