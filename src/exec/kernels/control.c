/* control.c - the control-flow ops of ONNX: If, Loop and Scan. Each runs
 * subgraphs of its layer through gwr_k_run_graph (which resolves the
 * names of enclosing graphs through the frame) and releases every value
 * those runs return. Loop and Scan stack their per-iteration outputs once
 * the iterations are done, so an iteration's output may have any shape
 * as long as all of them agree. If's branches and Loop's carried values
 * may be sequences and optionals (the values pass through as they are);
 * what Loop and Scan stack, and what Scan carries, are tensors only: a
 * layer or body that has other kinds there fails with a clear message. */
#include <stdlib.h>
#include <string.h>

#include "exec/exec_internal.h"

/* Bounds that turn a runaway loop into an error instead of an endless run
 * or an exhausted machine. */
#define LOOP_MAX_ITERS (INT64_C(1) << 31)
#define STACK_MAX_BYTES (INT64_C(1) << 32)

/* ---- helpers ----------------------------------------------------------------- */

static int is_plain(const gwr_tensor *t) {
    if (!t) return 1;
    gwr_value_kind kd = gwr_tensor_kind(t);
    return kd == GWR_VALUE_TENSOR;
}

/* Fails when a tensor the layer or its body exchanges is not a plain tensor. */
static gwr_status check_plain(gwr_kctx *k, const gwr_network *body) {
    for (int i = 0; i < gwr_layer_num_inputs(k->layer); i++)
        if (!is_plain(gwr_layer_input(k->layer, i)))
            return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "input %d ('%s') is a %s: sequence values are not supported", i,
                              gwr_tensor_name(gwr_layer_input(k->layer, i)),
                              gwr_value_kind_name(gwr_tensor_kind(gwr_layer_input(k->layer, i))));
    for (int i = 0; i < gwr_layer_num_outputs(k->layer); i++)
        if (!is_plain(gwr_layer_output(k->layer, i)))
            return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "output %d ('%s') is a %s: sequence values are not supported", i,
                              gwr_tensor_name(gwr_layer_output(k->layer, i)),
                              gwr_value_kind_name(gwr_tensor_kind(gwr_layer_output(k->layer, i))));
    if (body) {
        for (int i = 0; i < gwr_network_num_inputs(body); i++)
            if (!is_plain(gwr_network_input(body, i)))
                return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "subgraph '%s' input '%s' is a %s: sequence values are not supported",
                                  gwr_network_name(body), gwr_tensor_name(gwr_network_input(body, i)),
                                  gwr_value_kind_name(gwr_tensor_kind(gwr_network_input(body, i))));
        for (int i = 0; i < gwr_network_num_outputs(body); i++)
            if (!is_plain(gwr_network_output(body, i)))
                return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "subgraph '%s' output '%s' is a %s: sequence values are not supported",
                                  gwr_network_name(body), gwr_tensor_name(gwr_network_output(body, i)),
                                  gwr_value_kind_name(gwr_tensor_kind(gwr_network_output(body, i))));
    }
    return GWR_OK;
}

static gwr_status get_body(gwr_kctx *k, const char *name, gwr_network **g) {
    gwr_status st = gwr_layer_get_graph(k->layer, name, g);
    if (st == GWR_ERR_NOT_FOUND) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attribute '%s' (a graph) is missing", name);
    if (st || !*g) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attribute '%s' is not a graph", name);
    return GWR_OK;
}

static void release_all(gwr_value **v, int64_t n) {
    for (int64_t i = 0; v && i < n; i++) gwr_value_release(v[i]), v[i] = NULL;
}

/* A scalar truth value: a one-element bool (or numeric) tensor. */
static int read_bool(gwr_kctx *k, const gwr_value *v, const char *what, int *out) {
    if (!v || v->numel != 1 || v->dtype == GWR_STRING || !gwr_dtype_bits(v->dtype)) {
        char ty[96] = "nothing";
        if (v) gwr_value_type_str(v, ty, sizeof ty);
        gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s must be a one-element bool tensor, got %s", what, ty);
        return -1;
    }
    *out = v->dtype == GWR_BOOL ? ((const uint8_t *)v->data)[0] != 0 : gwr_v_get_f64(v, 0) != 0;
    return 0;
}

static gwr_value *scalar_new(gwr_dtype dt) {
    return gwr_value_new(dt, 0, NULL);
}

static size_t elem_size(gwr_dtype dt) { return (size_t)gwr_dtype_bits(dt) / 8; }

/* Can values of this dtype be sliced and stacked byte-wise? */
static int bytewise(gwr_dtype dt) { return dt != GWR_STRING && gwr_dtype_bits(dt) >= 8 && gwr_dtype_bits(dt) % 8 == 0; }

/* A growing list of per-iteration values for one stacked output. */
typedef struct stack {
    gwr_value **v;
    int64_t n, cap;
    int64_t bytes;
} stack;

static void stack_free(stack *s) {
    release_all(s->v, s->n);
    gwr_free(s->v);
    memset(s, 0, sizeof *s);
}

/* Appends v (a new reference taken); checks that it agrees with the first
 * one. */
static gwr_status stack_push(gwr_kctx *k, stack *s, gwr_value *v, int which) {
    if (!gwr_value_is_tensor(v))
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "scan output %d is a %s: only tensors are stacked", which,
                          gwr_value_kind_name(v->kind));
    if (s->n) {
        const gwr_value *f = s->v[0];
        int same = f->dtype == v->dtype && f->rank == v->rank;
        for (int i = 0; same && i < f->rank; i++) same = f->dims[i] == v->dims[i];
        if (!same) {
            char a[96], b[96];
            gwr_value_type_str(f, a, sizeof a);
            gwr_value_type_str(v, b, sizeof b);
            return gwr_k_fail(k, GWR_ERR_SHAPE, "scan output %d changes type between iterations: %s, then %s", which, a, b);
        }
    } else if (!bytewise(v->dtype)) {
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "scan output %d: %s elements cannot be stacked", which,
                          gwr_dtype_name(v->dtype));
    }
    s->bytes += (int64_t)v->nbytes;
    if (s->bytes > STACK_MAX_BYTES)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "scan output %d grows past %lld bytes after %lld iterations", which,
                          (long long)STACK_MAX_BYTES, (long long)s->n);
    if (gwr_grow((void **)&s->v, sizeof *s->v, &s->cap, s->n + 1)) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    s->v[s->n++] = gwr_value_retain(v);
    return GWR_OK;
}

/* The declared element type and dims of a body output, for a stack that got
 * no value (zero iterations): unknown dims count as 0. */
static void declared(const gwr_tensor *t, const gwr_tensor *alt, gwr_dtype *dt, int *rank, int64_t *dims) {
    if (!t) t = alt;
    *dt = t ? gwr_tensor_dtype(t) : GWR_UNDEFINED;
    if (*dt == GWR_UNDEFINED && alt) *dt = gwr_tensor_dtype(alt);
    if (*dt == GWR_UNDEFINED) *dt = GWR_FLOAT32;
    int r = t ? gwr_tensor_rank(t) : 0;
    if (r < 0 || r >= GWR_MAX_RANK) r = 0;
    *rank = r;
    for (int i = 0; i < r; i++) {
        gwr_dim d = gwr_tensor_dim(t, i);
        dims[i] = GWR_DIM_IS_KNOWN(d) && d >= 0 ? d : 0;
    }
}

/* Output o of k: the n values of s stacked along `axis` (in [0, rank]) of
 * the per-iteration shape, in reverse order when rev. With no values, the
 * per-iteration shape is the declared one of body output t. */
static gwr_status stack_out(gwr_kctx *k, int o, stack *s, int64_t axis, int rev, const gwr_tensor *t) {
    gwr_dtype dt;
    int r;
    int64_t dims[GWR_MAX_RANK + 1], odims[GWR_MAX_RANK + 1];
    if (s->n) {
        dt = s->v[0]->dtype, r = s->v[0]->rank;
        if (r >= GWR_MAX_RANK) return gwr_k_fail(k, GWR_ERR_SHAPE, "scan output %d: rank %d is too large to stack", o, r);
        memcpy(dims, s->v[0]->dims, (size_t)r * sizeof *dims);
    } else {
        declared(t, gwr_layer_output(k->layer, o), &dt, &r, dims);
    }
    if (axis < 0 || axis > r) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "output %d: axis %lld is outside [0, %d]", o, (long long)axis, r);
    for (int i = 0, j = 0; i <= r; i++) odims[i] = i == axis ? s->n : dims[j++];
    gwr_value *v = gwr_k_out(k, o, dt, r + 1, odims);
    if (!v) return GWR_ERR_NOMEM;
    if (!s->n) return GWR_OK;
    int64_t outer = 1;
    for (int i = 0; i < axis; i++) outer *= dims[i];
    size_t inner = elem_size(dt);
    for (int i = (int)axis; i < r; i++) inner *= (size_t)dims[i];
    uint8_t *dst = v->data;
    for (int64_t it = 0; it < s->n; it++) {
        int64_t pos = rev ? s->n - 1 - it : it;
        const uint8_t *src = s->v[it]->data;
        for (int64_t q = 0; q < outer; q++) memcpy(dst + ((size_t)(q * s->n + pos)) * inner, src + (size_t)q * inner, inner);
    }
    return GWR_OK;
}

/* ---- If ------------------------------------------------------------------------ */

static gwr_status k_if(gwr_kctx *k) {
    if (k->nin != 1 || !k->in[0]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "If takes one input, cond");
    int c;
    if (read_bool(k, k->in[0], "cond", &c)) return GWR_ERR_INVALID_ARG;
    gwr_network *g;
    gwr_status st = get_body(k, c ? "then_branch" : "else_branch", &g);
    if (st) return st;
    if (gwr_network_num_inputs(g))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s branch '%s' takes %d inputs; If branches take none", c ? "then" : "else",
                          gwr_network_name(g), gwr_network_num_inputs(g));
    int no = gwr_network_num_outputs(g);
    if (no != k->nout)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s branch '%s' gives %d outputs; the If has %d", c ? "then" : "else",
                          gwr_network_name(g), no, k->nout);
    gwr_value *outb[8], **outs = no <= 8 ? outb : gwr_calloc((size_t)no, sizeof *outs);
    if (!outs) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    memset(outs, 0, (size_t)no * sizeof *outs);
    st = gwr_k_run_graph(k, g, 0, NULL, no, outs);
    for (int i = 0; !st && i < no; i++) gwr_k_set_out(k, i, outs[i]);
    release_all(outs, no);
    if (outs != outb) gwr_free(outs);
    return st;
}

/* ---- Loop ---------------------------------------------------------------------- */

static gwr_status k_loop(gwr_kctx *k) {
    gwr_network *g;
    gwr_status st = get_body(k, "body", &g);
    if (st) return st;
    if (k->nin < 2) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "Loop takes M, cond and the loop-carried values (%d inputs given)", k->nin);
    int N = k->nin - 2, bin = gwr_network_num_inputs(g), bout = gwr_network_num_outputs(g);
    if (bin != N + 2)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "body '%s' takes %d inputs; it must take 2 + %d (iteration, cond, carried)",
                          gwr_network_name(g), bin, N);
    if (bout < N + 1)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "body '%s' gives %d outputs; it must give at least 1 + %d (cond, carried)",
                          gwr_network_name(g), bout, N);
    int K = bout - 1 - N;
    if (k->nout != N + K)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "Loop has %d outputs; its body gives %d carried and %d scan outputs", k->nout,
                          N, K);
    for (int i = 0; i < N; i++)
        if (!k->in[2 + i]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "loop-carried input %d is missing", i);
    int64_t M = -1; /* no trip count */
    const gwr_value *mv = k->in[0];
    if (mv) {
        if ((mv->dtype != GWR_INT64 && mv->dtype != GWR_INT32) || mv->numel != 1) {
            char ty[96];
            gwr_value_type_str(mv, ty, sizeof ty);
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "M must be a one-element int64 tensor, got %s", ty);
        }
        M = gwr_v_get_i64(mv, 0);
        if (M < 0) M = 0;
    }
    int has_cond = k->in[1] != NULL, cond = 1;
    if (has_cond && read_bool(k, k->in[1], "cond", &cond)) return GWR_ERR_INVALID_ARG;
    /* With neither M nor cond (ONNX's "infinite loop") only the body's
     * failure or the bounds below stop it. */
    gwr_value **cur = gwr_calloc((size_t)N + 1, sizeof *cur);
    gwr_value **bi = gwr_calloc((size_t)bin, sizeof *bi), **bo = gwr_calloc((size_t)bout, sizeof *bo);
    stack *stk = gwr_calloc((size_t)K + 1, sizeof *stk);
    if (!cur || !bi || !bo || !stk) {
        gwr_free(cur), gwr_free(bi), gwr_free(bo), gwr_free(stk);
        return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < N; i++) cur[i] = gwr_value_retain(k->in[2 + i]);
    int64_t it = 0;
    while (!st && (M < 0 || it < M) && cond) {
        if (it >= LOOP_MAX_ITERS) {
            st = gwr_k_fail(k, GWR_ERR_INVALID_ARG, "more than %lld iterations: stopped", (long long)LOOP_MAX_ITERS);
            break;
        }
        gwr_value *iv = scalar_new(GWR_INT64), *cv = scalar_new(GWR_BOOL);
        if (!iv || !cv) {
            gwr_value_release(iv), gwr_value_release(cv);
            st = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
            break;
        }
        *(int64_t *)iv->data = it;
        *(uint8_t *)cv->data = (uint8_t)cond;
        bi[0] = iv, bi[1] = cv;
        for (int i = 0; i < N; i++) bi[2 + i] = cur[i];
        st = gwr_k_run_graph(k, g, bin, bi, bout, bo);
        gwr_value_release(iv), gwr_value_release(cv);
        if (st) break;
        int c2;
        if (read_bool(k, bo[0], "the body's cond output", &c2)) {
            st = GWR_ERR_INVALID_ARG;
        } else {
            if (has_cond) cond = c2;
            for (int i = 0; i < N; i++) {
                gwr_value_release(cur[i]);
                cur[i] = bo[1 + i], bo[1 + i] = NULL;
            }
            for (int j = 0; j < K && !st; j++) st = stack_push(k, &stk[j], bo[1 + N + j], j);
        }
        release_all(bo, bout);
        it++;
    }
    for (int i = 0; i < N && !st; i++) gwr_k_set_out(k, i, cur[i]);
    for (int j = 0; j < K && !st; j++) st = stack_out(k, N + j, &stk[j], 0, 0, gwr_network_output(g, 1 + N + j));
    release_all(cur, N);
    for (int j = 0; j < K; j++) stack_free(&stk[j]);
    gwr_free(cur), gwr_free(bi), gwr_free(bo), gwr_free(stk);
    return st;
}

/* ---- Scan ---------------------------------------------------------------------- */

/* Slice `pos` of v along axis (removed) into a new value. */
static gwr_value *slice_axis(const gwr_value *v, int axis, int64_t pos) {
    int64_t dims[GWR_MAX_RANK];
    for (int i = 0, j = 0; i < v->rank; i++)
        if (i != axis) dims[j++] = v->dims[i];
    gwr_value *s = gwr_value_new(v->dtype, v->rank - 1, dims);
    if (!s) return NULL;
    int64_t outer = 1, n = v->dims[axis];
    for (int i = 0; i < axis; i++) outer *= v->dims[i];
    size_t inner = elem_size(v->dtype);
    for (int i = axis + 1; i < v->rank; i++) inner *= (size_t)v->dims[i];
    const uint8_t *src = v->data;
    uint8_t *dst = s->data;
    for (int64_t q = 0; q < outer && inner; q++) memcpy(dst + (size_t)q * inner, src + (size_t)(q * n + pos) * inner, inner);
    return s;
}

/* Reads an INTS attribute of n entries (absent: all def). */
static gwr_status read_ints_attr(gwr_kctx *k, const char *name, int64_t n, int64_t def, int64_t *out) {
    const int64_t *v;
    int64_t c = gwr_k_ints(k, name, &v);
    for (int64_t i = 0; i < n; i++) out[i] = c < 0 ? def : v[i];
    if (c >= 0 && c != n)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attribute '%s' has %lld values, expected %lld", name, (long long)c, (long long)n);
    return GWR_OK;
}

/* One Scan over state values st[N] and scan inputs xs[M] (opset 9 form);
 * final states into fin[N], stacked outputs into stk[K]. */
typedef struct scan_cfg {
    gwr_network *g;
    int N, M, K;
    int64_t *in_axes, *in_dirs, *out_axes, *out_dirs;
} scan_cfg;

static gwr_status scan_run(gwr_kctx *k, const scan_cfg *c, gwr_value *const *st0, gwr_value *const *xs, gwr_value **fin,
                           stack *stk) {
    int N = c->N, M = c->M, K = c->K, bin = N + M, bout = N + K;
    int64_t T = -1;
    for (int j = 0; j < M; j++) {
        const gwr_value *x = xs[j];
        int64_t ax = c->in_axes[j];
        if (ax < -x->rank || ax >= x->rank)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "scan input %d: axis %lld is outside rank %d", j, (long long)ax, x->rank);
        if (ax < 0) ax += x->rank;
        if (!bytewise(x->dtype))
            return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "scan input %d: %s elements cannot be sliced", j, gwr_dtype_name(x->dtype));
        if (T >= 0 && x->dims[ax] != T)
            return gwr_k_fail(k, GWR_ERR_SHAPE, "scan input %d has %lld steps along axis %lld, another has %lld", j,
                              (long long)x->dims[ax], (long long)ax, (long long)T);
        T = x->dims[ax];
    }
    if (T < 0) T = 0;
    gwr_value **bi = gwr_calloc((size_t)bin + 1, sizeof *bi), **bo = gwr_calloc((size_t)bout + 1, sizeof *bo);
    if (!bi || !bo) {
        gwr_free(bi), gwr_free(bo);
        return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    }
    gwr_status st = GWR_OK;
    for (int i = 0; i < N; i++) fin[i] = gwr_value_retain(st0[i]);
    for (int64_t t = 0; t < T && !st; t++) {
        for (int i = 0; i < N; i++) bi[i] = fin[i];
        for (int j = 0; j < M && !st; j++) {
            const gwr_value *x = xs[j];
            int ax = (int)(c->in_axes[j] < 0 ? c->in_axes[j] + x->rank : c->in_axes[j]);
            if (!(bi[N + j] = slice_axis(x, ax, c->in_dirs[j] ? T - 1 - t : t))) st = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
        }
        if (!st) st = gwr_k_run_graph(k, c->g, bin, bi, bout, bo);
        for (int j = 0; j < M; j++) gwr_value_release(bi[N + j]), bi[N + j] = NULL;
        if (st) break;
        for (int i = 0; i < N; i++) {
            gwr_value_release(fin[i]);
            fin[i] = bo[i], bo[i] = NULL;
        }
        for (int j = 0; j < K && !st; j++) st = stack_push(k, &stk[j], bo[N + j], j);
        release_all(bo, bout);
    }
    gwr_free(bi), gwr_free(bo);
    return st;
}

static gwr_status scan_cfg_read(gwr_kctx *k, scan_cfg *c, int nstate_in, int nscan_in) {
    int64_t Mi = gwr_k_int(k, "num_scan_inputs", -1);
    if (Mi < 1 || Mi > nscan_in)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "num_scan_inputs is %lld; it must be in [1, %d]", (long long)Mi, nscan_in);
    c->M = (int)Mi;
    c->N = nstate_in + nscan_in - c->M;
    (void)nstate_in;
    int bin = gwr_network_num_inputs(c->g), bout = gwr_network_num_outputs(c->g);
    if (bin != c->N + c->M)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "body '%s' takes %d inputs; it must take %d states + %d scan inputs",
                          gwr_network_name(c->g), bin, c->N, c->M);
    if (bout < c->N)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "body '%s' gives %d outputs; it must give at least the %d states",
                          gwr_network_name(c->g), bout, c->N);
    c->K = bout - c->N;
    if (k->nout != c->N + c->K)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "Scan has %d outputs; its body gives %d states and %d scan outputs", k->nout,
                          c->N, c->K);
    c->in_axes = gwr_calloc((size_t)c->M + 1, sizeof(int64_t));
    c->in_dirs = gwr_calloc((size_t)c->M + 1, sizeof(int64_t));
    c->out_axes = gwr_calloc((size_t)c->K + 1, sizeof(int64_t));
    c->out_dirs = gwr_calloc((size_t)c->K + 1, sizeof(int64_t));
    if (!c->in_axes || !c->in_dirs || !c->out_axes || !c->out_dirs) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    gwr_status st;
    if ((st = read_ints_attr(k, "scan_input_directions", c->M, 0, c->in_dirs)) ||
        (st = read_ints_attr(k, "scan_output_directions", c->K, 0, c->out_dirs)))
        return st;
    for (int j = 0; j < c->M; j++)
        if (c->in_dirs[j] != 0 && c->in_dirs[j] != 1)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "scan_input_directions[%d] must be 0 or 1", j);
    for (int j = 0; j < c->K; j++)
        if (c->out_dirs[j] != 0 && c->out_dirs[j] != 1)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "scan_output_directions[%d] must be 0 or 1", j);
    return GWR_OK;
}

static void scan_cfg_free(scan_cfg *c) { gwr_free(c->in_axes), gwr_free(c->in_dirs), gwr_free(c->out_axes), gwr_free(c->out_dirs); }

/* Opset 9 and later: inputs are the N initial states then the M scan inputs. */
static gwr_status scan9(gwr_kctx *k, scan_cfg *c) {
    gwr_status st = scan_cfg_read(k, c, 0, k->nin);
    if (st) return st;
    if ((st = read_ints_attr(k, "scan_input_axes", c->M, 0, c->in_axes)) ||
        (st = read_ints_attr(k, "scan_output_axes", c->K, 0, c->out_axes)))
        return st;
    for (int i = 0; i < k->nin; i++)
        if (!k->in[i]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %d is missing", i);
    int N = c->N, K = c->K;
    gwr_value **fin = gwr_calloc((size_t)N + 1, sizeof *fin);
    stack *stk = gwr_calloc((size_t)K + 1, sizeof *stk);
    if (!fin || !stk) st = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    if (!st) st = scan_run(k, c, k->in, k->in + N, fin, stk);
    for (int i = 0; i < N && !st; i++) gwr_k_set_out(k, i, fin[i]);
    for (int j = 0; j < K && !st; j++) {
        int r = stk[j].n ? stk[j].v[0]->rank : gwr_tensor_rank(gwr_network_output(c->g, N + j));
        if (r < 0) r = 0;
        int64_t ax = c->out_axes[j];
        if (ax < -(r + 1) || ax > r) {
            st = gwr_k_fail(k, GWR_ERR_INVALID_ARG, "scan_output_axes[%d] = %lld is outside [%d, %d]", j, (long long)ax, -(r + 1), r);
            break;
        }
        if (ax < 0) ax += r + 1;
        st = stack_out(k, N + j, &stk[j], ax, (int)c->out_dirs[j], gwr_network_output(c->g, N + j));
    }
    if (fin) release_all(fin, N);
    for (int j = 0; stk && j < K; j++) stack_free(&stk[j]);
    gwr_free(fin), gwr_free(stk);
    return st;
}

/* Opset 8: input 0 is sequence_lens (optional), every other input has a
 * leading batch axis, scanning is along axis 1, and the outputs are
 * stacked per batch entry. */
static gwr_status scan8(gwr_kctx *k, scan_cfg *c) {
    if (k->nin < 2) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "Scan-8 takes sequence_lens and at least one scan input");
    gwr_status st = scan_cfg_read(k, c, 0, k->nin - 1);
    if (st) return st;
    int N = c->N, M = c->M, K = c->K;
    for (int i = 1; i < k->nin; i++)
        if (!k->in[i]) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %d is missing", i);
    int64_t B = -1;
    for (int i = 1; i < k->nin; i++) {
        const gwr_value *v = k->in[i];
        if (v->rank < (i > N ? 2 : 1) || !bytewise(v->dtype))
            return gwr_k_fail(k, GWR_ERR_SHAPE, "input %d must have a batch axis%s and fixed-size elements", i,
                              i > N ? " and a sequence axis" : "");
        if (B >= 0 && v->dims[0] != B) return gwr_k_fail(k, GWR_ERR_SHAPE, "inputs disagree on the batch size");
        B = v->dims[0];
    }
    const gwr_value *sl = k->in[0];
    if (sl && ((sl->dtype != GWR_INT64 && sl->dtype != GWR_INT32) || sl->numel != B))
        return gwr_k_fail(k, GWR_ERR_SHAPE, "sequence_lens must be int64 [%lld]", (long long)B);
    for (int j = 0; j < M; j++) c->in_axes[j] = 0;
    int64_t Tfull = k->in[1 + N]->dims[1];
    for (int j = 0; j < M; j++)
        if (k->in[1 + N + j]->dims[1] != Tfull) return gwr_k_fail(k, GWR_ERR_SHAPE, "scan inputs disagree on the sequence length");
    for (int64_t b = 0; sl && b < B; b++)
        if (gwr_v_get_i64(sl, b) != Tfull)
            return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "sequence_lens shorter than the scan inputs are not supported");
    gwr_value **st0 = gwr_calloc((size_t)(N + M) + 1, sizeof *st0), **fin = gwr_calloc((size_t)N + 1, sizeof *fin);
    stack *per = gwr_calloc((size_t)(N + K) + 1, sizeof *per); /* per output: one value per batch entry */
    stack *stk = gwr_calloc((size_t)K + 1, sizeof *stk);
    if (!st0 || !fin || !per || !stk) st = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    for (int64_t b = 0; b < B && !st; b++) {
        for (int i = 0; i < N + M && !st; i++)
            if (!(st0[i] = slice_axis(k->in[1 + i], 0, b))) st = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
        if (!st) st = scan_run(k, c, st0, st0 + N, fin, stk);
        for (int i = 0; i < N && !st; i++) st = stack_push(k, &per[i], fin[i], i);
        for (int j = 0; j < K && !st; j++) {
            /* this entry's scan output: stacked along axis 0 */
            gwr_value *tmpv = NULL;
            gwr_value *saved = k->out[N + j];
            k->out[N + j] = NULL;
            st = stack_out(k, N + j, &stk[j], 0, (int)c->out_dirs[j], gwr_network_output(c->g, N + j));
            tmpv = k->out[N + j];
            k->out[N + j] = saved;
            if (!st) st = stack_push(k, &per[N + j], tmpv, N + j);
            gwr_value_release(tmpv);
        }
        release_all(st0, N + M);
        release_all(fin, N);
        for (int j = 0; j < K; j++) stack_free(&stk[j]);
    }
    for (int o = 0; o < N + K && !st; o++) st = stack_out(k, o, &per[o], 0, 0, o < N ? gwr_network_output(c->g, o) : NULL);
    if (st0) release_all(st0, N + M);
    if (fin) release_all(fin, N);
    for (int o = 0; per && o < N + K; o++) stack_free(&per[o]);
    for (int j = 0; stk && j < K; j++) stack_free(&stk[j]);
    gwr_free(st0), gwr_free(fin), gwr_free(per), gwr_free(stk);
    return st;
}

static gwr_status k_scan(gwr_kctx *k) {
    scan_cfg c;
    memset(&c, 0, sizeof c);
    gwr_status st = get_body(k, "body", &c.g);
    if (st || (st = check_plain(k, c.g))) return st;
    st = k->opset > 0 && k->opset < 9 ? scan8(k, &c) : scan9(k, &c);
    scan_cfg_free(&c);
    return st;
}

const gwr_kernel_entry gwr_kernels_control[] = {
    GWR_KERNEL(If, k_if, .flags = GWR_KF_ALIAS | GWR_KF_VALUES),
    GWR_KERNEL(Loop, k_loop, .flags = GWR_KF_ALIAS | GWR_KF_VALUES),
    GWR_KERNEL(Scan, k_scan, .flags = GWR_KF_ALIAS),
    {.fn = NULL},
};
