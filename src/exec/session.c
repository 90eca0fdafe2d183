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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/blas.h"
#include "exec/exec_internal.h"

/* ---- the memory pool ----------------------------------------------------- */

/* Freed blocks by power-of-two size class, reused by later allocations.
 * Buffers keep the pool alive (refs); the session's free closes it. */
#define POOL_CLASSES 48
#define POOL_MIN_LOG2 6

struct gwr_exec_pool {
    atomic_long refs;
    int closed;
    void *free_list[POOL_CLASSES];
    int64_t live, peak, total; /* bytes handed out: now, at most, this run */
};

static int size_class(size_t n) {
    int c = POOL_MIN_LOG2;
    while (c < POOL_CLASSES - 1 && ((size_t)1 << c) < n) c++;
    return c;
}

static void pool_unref(gwr_exec_pool *p) {
    if (atomic_fetch_sub(&p->refs, 1) != 1) return;
    for (int c = 0; c < POOL_CLASSES; c++)
        while (p->free_list[c]) {
            void *b = p->free_list[c];
            p->free_list[c] = *(void **)b;
            free(b);
        }
    free(p);
}

static void pool_release(void *ctx, const void *data, size_t size) {
    gwr_exec_pool *p = ctx;
    void *b = (void *)(uintptr_t)data;
    p->live -= (int64_t)size;
    if (p->closed) {
        free(b);
    } else {
        int c = size_class(size);
        *(void **)b = p->free_list[c];
        p->free_list[c] = b;
    }
    pool_unref(p);
}

static gwr_buffer *pool_alloc(gwr_exec_pool *p, size_t n) {
    int c = size_class(n);
    if ((size_t)1 << c < n) return NULL; /* beyond the largest class */
    void *b = p->free_list[c];
    if (b) p->free_list[c] = *(void **)b;
    else if (!(b = aligned_alloc(64, (size_t)1 << c))) return NULL;
    gwr_buffer *buf = gwr_buffer_wrap(b, n, pool_release, p);
    if (!buf) {
        free(b);
        return NULL;
    }
    atomic_fetch_add(&p->refs, 1);
    p->live += (int64_t)n;
    p->total += (int64_t)n;
    if (p->live > p->peak) p->peak = p->live;
    return buf;
}

/* ---- plans --------------------------------------------------------------- */

/* An input of a step: a slot of this frame, absent, or a tensor of an
 * enclosing graph. */
enum { IN_ABSENT = -1 };

typedef struct step {
    gwr_layer *l;
    gwr_kernel_fn fn;
    int64_t opset;
    int nin, nout;
    int64_t *in;       /* slot, IN_ABSENT, or -2 - k for outer[k] */
    int64_t *out;      /* slot of each output */
    int64_t *release;  /* slots dead after this step */
    int64_t nrelease;
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

struct gwr_frame {
    gplan *p;
    gwr_value **vals;
    gwr_frame *parent;
};

struct gwr_session {
    gwr_network *net;
    gplan *root;
    gwr_ptrmap subplans;    /* subgraph network -> gplan */
    gwr_exec_pool *pool;
    int threads;
    int64_t peak, total;
    char errmsg[GWR_ERRMSG_MAX];
    char kmsg[GWR_ERRMSG_MAX];
    gwr_status kstatus; /* of the kernel's last gwr_k_fail: what it reports */
};

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
    for (int64_t i = 0; i < p->nsteps; i++) free(p->steps[i].in), free(p->steps[i].out), free(p->steps[i].release);
    free(p->steps), free(p->input_slot), free(p->output_slot), free(p->outer), free(p->used);
    gwr_ptrmap_free(&p->slot_of);
    free(p);
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

static gplan *plan_new(gwr_session *s, gwr_network *net) {
    gplan *p = calloc(1, sizeof *p);
    gwr_layer **order = NULL;
    int64_t *last = NULL, nl = gwr_network_num_layers(net);
    if (!p) goto nomem;
    p->net = net;
    int ni = gwr_network_num_inputs(net), no = gwr_network_num_outputs(net);
    order = malloc((size_t)(nl ? nl : 1) * sizeof *order);
    p->steps = calloc((size_t)(nl ? nl : 1), sizeof *p->steps);
    p->input_slot = malloc((size_t)(ni ? ni : 1) * sizeof *p->input_slot);
    p->output_slot = malloc((size_t)(no ? no : 1) * sizeof *p->output_slot);
    if (!order || !p->steps || !p->input_slot || !p->output_slot) goto nomem;
    if (gwr_network_topo_order(net, order)) {
        sess_error(s, GWR_ERR_CYCLE, "%s", gwr_network_errmsg(net));
        goto fail;
    }
    for (int i = 0; i < ni; i++)
        if ((p->input_slot[i] = new_slot(p, gwr_network_input(net, i))) < 0) goto nomem;
    gwr_network *root = root_of(net);
    for (int64_t i = 0; i < nl; i++) {
        gwr_layer *l = order[i];
        if (gwr_layer_is_removed(l)) continue;
        step *st = &p->steps[p->nsteps++];
        st->l = l;
        int blas = 0;
        const char *why = NULL;
        if (!(st->fn = gwr_kernel_find(gwr_layer_domain(l), gwr_layer_op(l), &blas))) {
            sess_error(s, GWR_ERR_UNSUPPORTED, "layer '%s': no kernel for %s%s%s", gwr_layer_name(l),
                       *gwr_layer_domain(l) ? gwr_layer_domain(l) : "", *gwr_layer_domain(l) ? "::" : "",
                       gwr_layer_op(l));
            goto fail;
        }
        if (blas && gwr_blas_load(&why)) {
            sess_error(s, GWR_ERR_UNSUPPORTED, "layer '%s' (%s): %s", gwr_layer_name(l), gwr_layer_op(l), why);
            goto fail;
        }
        st->opset = gwr_network_opset(root, gwr_layer_domain(l));
        if (st->opset < 0) st->opset = 0; /* no import: 0, "the newest", as kernels read it */
        st->nin = gwr_layer_num_inputs(l), st->nout = gwr_layer_num_outputs(l);
        st->in = malloc((size_t)(st->nin ? st->nin : 1) * sizeof *st->in);
        st->out = malloc((size_t)(st->nout ? st->nout : 1) * sizeof *st->out);
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
    }
    for (int i = 0; i < no; i++) p->output_slot[i] = slot_of(p, gwr_network_output(net, i));
    /* Lifetimes: the last step reading each slot; outputs live on. */
    last = malloc((size_t)(p->nslots ? p->nslots : 1) * sizeof *last);
    p->used = calloc((size_t)(p->nslots ? p->nslots : 1), 1);
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
    for (int64_t sl = 0; sl < p->nslots; sl++) {
        if (last[sl] < 0 || last[sl] >= p->nsteps) continue;
        step *st = &p->steps[last[sl]];
        int64_t *r = realloc(st->release, (size_t)(st->nrelease + 1) * sizeof *r);
        if (!r) goto nomem;
        st->release = r;
        r[st->nrelease++] = sl;
    }
    free(order), free(last);
    return p;
nomem:
    sess_error(s, GWR_ERR_NOMEM, "out of memory");
fail:
    free(order), free(last);
    plan_free(p);
    return NULL;
}

/* ---- sessions ------------------------------------------------------------ */

gwr_session *gwr_session_new(gwr_network *net, const gwr_session_options *opt) {
    if (!net) {
        gwr_set_last_error(GWR_ERR_INVALID_ARG, "gwr_session_new: NULL network");
        return NULL;
    }
    gwr_session *s = calloc(1, sizeof *s);
    if (!s || !(s->pool = calloc(1, sizeof *s->pool))) {
        free(s);
        gwr_set_last_error(GWR_ERR_NOMEM, "gwr_session_new: out of memory");
        return NULL;
    }
    atomic_init(&s->pool->refs, 1);
    s->net = net;
    s->threads = opt && opt->threads > 0 ? opt->threads : 1;
    if (!(s->root = plan_new(s, net))) {
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
    if (s->pool) {
        s->pool->closed = 1;
        pool_unref(s->pool);
    }
    free(s);
}

const char *gwr_session_errmsg(const gwr_session *s) { return s ? s->errmsg : gwr_last_errmsg(); }
int64_t gwr_session_peak_bytes(const gwr_session *s) { return s ? s->peak : 0; }
int64_t gwr_session_total_bytes(const gwr_session *s) { return s ? s->total : 0; }
int gwr_exec_has_kernel(const char *domain, const char *op) {
    return op && gwr_kernel_find(domain ? domain : "", op, NULL) != NULL;
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

/* Does v fit tensor t's declared type (dtype, rank, known dims)? */
static int fits(const gwr_tensor *t, const gwr_value *v, char *why, size_t size) {
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
    free(f->vals);
    f->vals = NULL;
}

static gwr_status run_steps(gwr_session *s, gwr_frame *f) {
    gplan *p = f->p;
    gwr_value *inb[16], *outb[16];
    for (int64_t k = 0; k < p->nsteps; k++) {
        step *st = &p->steps[k];
        gwr_value **in = st->nin <= 16 ? inb : calloc((size_t)st->nin, sizeof *in);
        gwr_value **out = st->nout <= 16 ? outb : calloc((size_t)st->nout, sizeof *out);
        if (!in || !out) {
            if (in != inb) free(in);
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
        if (!rc) {
            gwr_kctx kc = {st->l, st->opset, st->nin, st->nout, in, out, s, f, s->pool, s->threads, st};
            s->kmsg[0] = 0;
            s->kstatus = GWR_OK;
            rc = st->fn(&kc);
            /* The status gwr_k_fail recorded wins: a kernel that returns
             * NOMEM after gwr_k_out refused a bad shape reports the shape. */
            if (rc && s->kstatus) rc = s->kstatus;
            if (rc) {
                sess_error(s, rc, "layer '%s' (%s): %s", gwr_layer_name(st->l), gwr_layer_op(st->l),
                           s->kmsg[0] ? s->kmsg : gwr_status_name(rc));
            } else {
                for (int o = 0; o < st->nout && !rc; o++)
                    if (!out[o] && p->used[st->out[o]])
                        rc = sess_error(s, GWR_ERR_STATE, "layer '%s' (%s): kernel gave no value for output %d",
                                        gwr_layer_name(st->l), gwr_layer_op(st->l), o);
            }
        }
        for (int o = 0; o < st->nout; o++) {
            if (!rc) gwr_value_release(f->vals[st->out[o]]), f->vals[st->out[o]] = out[o];
            else gwr_value_release(out[o]);
        }
        if (in != inb) free(in);
        if (out != outb) free(out);
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
    gwr_frame f = {p, calloc((size_t)(p->nslots ? p->nslots : 1), sizeof(gwr_value *)), parent};
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
        else if (!rc && !fits(t, v, why, sizeof why))
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
    gwr_value **ins = calloc((size_t)(ni ? ni : 1), sizeof *ins), **outs = calloc((size_t)(no ? no : 1), sizeof *outs);
    gwr_status rc = ins && outs ? GWR_OK : sess_error(s, GWR_ERR_NOMEM, "out of memory");
    for (int k = 0; k < nin && !rc; k++) {
        int i = 0;
        while (i < ni && strcmp(gwr_tensor_name(gwr_network_input(net, i)), in_names[k] ? in_names[k] : "")) i++;
        if (i == ni) rc = sess_error(s, GWR_ERR_NOT_FOUND, "'%s' is not an input of the network", in_names[k] ? in_names[k] : "(null)");
        else if (!in_values[k]) rc = sess_error(s, GWR_ERR_INVALID_ARG, "input '%s': NULL value", in_names[k]);
        else ins[i] = in_values[k];
    }
    int *pick = calloc((size_t)(nout ? nout : 1), sizeof *pick);
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
        if (!ins[i] || gwr_tensor_rank(t) != ins[i]->rank) continue; /* run_plan reports it */
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
    s->pool->total = 0;
    s->pool->peak = s->pool->live;
    if (!rc) rc = run_plan(s, s->root, NULL, ins, outs);
    s->peak = s->pool->peak, s->total = s->pool->total;
    for (int k = 0; k < nout && !rc; k++) out_values[k] = gwr_value_retain(outs[pick[k]]);
    for (int i = 0; outs && i < no; i++) gwr_value_release(outs[i]);
    free(ins), free(outs), free(pick);
    return rc;
}

/* ---- the kernels' side --------------------------------------------------- */

gwr_status gwr_k_fail(gwr_kctx *k, gwr_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->session->kmsg, sizeof k->session->kmsg, fmt, ap);
    va_end(ap);
    k->session->kstatus = st;
    return st;
}

gwr_value *gwr_k_out(gwr_kctx *k, int i, gwr_dtype dtype, int rank, const int64_t *dims) {
    if (i < 0 || i >= k->nout) {
        gwr_k_fail(k, GWR_ERR_INVALID_ARG, "internal: output %d of %d", i, k->nout);
        return NULL;
    }
    gwr_value *v;
    if (dtype == GWR_STRING) {
        v = gwr_value_over(NULL, NULL, dtype, rank, dims);
    } else {
        int64_t n = gwr_shape_numel(rank, dims);
        int bits = gwr_dtype_bits(dtype);
        if (n < 0 || !bits || (uint64_t)n > ((uint64_t)1 << 56) / (uint64_t)bits) {
            gwr_k_fail(k, GWR_ERR_INVALID_ARG, "output %d: bad shape or dtype", i);
            return NULL;
        }
        gwr_buffer *b = pool_alloc(k->pool, (size_t)(((uint64_t)n * (uint64_t)bits + 7) / 8));
        v = b ? gwr_value_over(b, (void *)(uintptr_t)gwr_buffer_data(b), dtype, rank, dims) : NULL;
        gwr_buffer_release(b);
    }
    if (!v) {
        gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory for output %d", i);
        return NULL;
    }
    gwr_value_release(k->out[i]);
    k->out[i] = v;
    return v;
}

void gwr_k_set_out(gwr_kctx *k, int i, gwr_value *v) {
    gwr_value_retain(v);
    gwr_value_release(k->out[i]);
    k->out[i] = v;
}

gwr_status gwr_k_alias(gwr_kctx *k, int i, gwr_value *v, int rank, const int64_t *dims) {
    if (gwr_shape_numel(rank, dims) != v->numel)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "cannot view %lld elements as %lld", (long long)v->numel,
                          (long long)gwr_shape_numel(rank, dims));
    gwr_value *o;
    if (v->dtype == GWR_STRING) {
        o = gwr_value_over(NULL, NULL, v->dtype, rank, dims);
        const gwr_bytes *b = v->data;
        for (int64_t j = 0; o && j < o->numel; j++)
            if (gwr_value_set_string(o, j, b[j].data, b[j].len)) gwr_value_release(o), o = NULL;
    } else {
        o = gwr_value_over(v->buf, v->data, v->dtype, rank, dims);
    }
    if (!o) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    gwr_value_release(k->out[i]);
    k->out[i] = o;
    return GWR_OK;
}

int gwr_k_out_used(const gwr_kctx *k, int i) {
    const step *st = k->step;
    if (!st) return 1; /* gwr_exec_layer: every output is wanted */
    return i >= 0 && i < st->nout && k->frame->p->used[st->out[i]];
}

int64_t gwr_k_int(const gwr_kctx *k, const char *name, int64_t def) {
    int64_t v;
    return gwr_layer_get_int(k->layer, name, &v) ? def : v;
}

float gwr_k_float(const gwr_kctx *k, const char *name, float def) {
    float v;
    return gwr_layer_get_float(k->layer, name, &v) ? def : v;
}

const char *gwr_k_string(const gwr_kctx *k, const char *name, const char *def) {
    const char *v;
    size_t n;
    return gwr_layer_get_string(k->layer, name, &v, &n) ? def : v;
}

int64_t gwr_k_ints(const gwr_kctx *k, const char *name, const int64_t **v) {
    int64_t n;
    return gwr_layer_get_ints(k->layer, name, v, &n) ? -1 : n;
}

int64_t gwr_k_floats(const gwr_kctx *k, const char *name, const float **v) {
    int64_t n;
    return gwr_layer_get_floats(k->layer, name, v, &n) ? -1 : n;
}

int64_t gwr_k_in_ints(gwr_kctx *k, int i, int64_t *out, int64_t max) {
    const gwr_value *v = i < k->nin ? k->in[i] : NULL;
    if (!v) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %d is missing", i), -1;
    if ((v->dtype != GWR_INT64 && v->dtype != GWR_INT32) || v->rank > 1)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %d must be a 1-D int32 or int64 tensor", i), -1;
    if (v->numel > max) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %d has more than %lld values", i, (long long)max), -1;
    for (int64_t j = 0; j < v->numel; j++) out[j] = gwr_v_get_i64(v, j);
    return v->numel;
}

gwr_status gwr_k_run_graph(gwr_kctx *k, gwr_network *g, int nin, gwr_value *const *in, int nout, gwr_value **out) {
    gwr_session *s = k->session;
    if (!k->frame) return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "subgraphs run only in a session");
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
    char saved[GWR_ERRMSG_MAX];
    memcpy(saved, s->kmsg, sizeof saved);
    gwr_status rc = run_plan(s, p, k->frame, in, out);
    if (rc) {
        char inner[GWR_ERRMSG_MAX];
        memcpy(inner, s->errmsg, sizeof inner);
        return gwr_k_fail(k, rc, "in subgraph '%s': %s", gwr_network_name(g), inner);
    }
    memcpy(s->kmsg, saved, sizeof saved);
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
    int blas = 0;
    const char *why = NULL;
    gwr_kernel_fn fn = gwr_kernel_find(gwr_layer_domain(l), gwr_layer_op(l), &blas);
    if (!fn)
        return gwr_set_last_error(GWR_ERR_UNSUPPORTED, "layer '%s': no kernel for %s", gwr_layer_name(l),
                                  gwr_layer_op(l));
    if (blas && gwr_blas_load(&why))
        return gwr_set_last_error(GWR_ERR_UNSUPPORTED, "layer '%s' (%s): %s", gwr_layer_name(l), gwr_layer_op(l), why);
    /* A session without a plan: the message buffer and a pool. */
    gwr_session *s = calloc(1, sizeof *s);
    if (!s || !(s->pool = calloc(1, sizeof *s->pool))) {
        free(s);
        return gwr_set_last_error(GWR_ERR_NOMEM, "gwr_exec_layer: out of memory");
    }
    atomic_init(&s->pool->refs, 1);
    gwr_network *root = root_of(gwr_layer_network(l));
    int64_t opset = gwr_network_opset(root, gwr_layer_domain(l));
    gwr_kctx kc = {l, opset < 0 ? 0 : opset, nin, nout, inputs, outputs, s, NULL, s->pool, 1, NULL};
    gwr_status rc = fn(&kc);
    if (rc && s->kstatus) rc = s->kstatus;
    if (rc) {
        for (int o = 0; o < nout; o++) gwr_value_release(outputs[o]), outputs[o] = NULL;
        gwr_set_last_error(rc, "layer '%s' (%s): %s", gwr_layer_name(l), gwr_layer_op(l),
                           s->kmsg[0] ? s->kmsg : gwr_status_name(rc));
    }
    s->pool->closed = 1;
    pool_unref(s->pool);
    free(s);
    return rc;
}
