/* sequence.c - ONNX's sequence and optional ops: SequenceConstruct,
 * SequenceEmpty, SequenceAt, SequenceInsert, SequenceErase,
 * SequenceLength, ConcatFromSequence, SplitToSequence, SequenceMap (its
 * body run once per element, through gwr_k_run_graph as Loop runs its
 * body), Optional, OptionalHasElement and OptionalGetElement.
 *
 * A sequence holds references to its tensors (value.c): ops that change a
 * sequence build a new one sharing the tensors they keep, and a tensor
 * taken out of a sequence is the same value, never a copy. Every kernel
 * here is flagged GWR_KF_VALUES and checks the kinds it is given itself:
 * a tensor where a sequence belongs, a position out of range, a tensor of
 * another dtype are errors with a message. */
#include <stdlib.h>
#include <string.h>

#include "exec/kernels/kernel_util.h"

/* ---- helpers --------------------------------------------------------------- */

static const gwr_value *need_kind(gwr_kctx *k, int i, const char *name, gwr_value_kind kind) {
    const gwr_value *v = gwr_ku_opt(k, i);
    if (!v) {
        gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %d (%s) is missing", i, name);
        return NULL;
    }
    if (v->kind != kind) {
        gwr_k_fail(k, GWR_ERR_TYPE, "input %d (%s) is a %s, not a %s", i, name, gwr_value_kind_name(v->kind), gwr_value_kind_name(kind));
        return NULL;
    }
    return v;
}

static const gwr_value *need_seq(gwr_kctx *k, int i) { return need_kind(k, i, i ? "sequence" : "input_sequence", GWR_VALUE_SEQUENCE); }

/* Sets output i to v (its reference taken over; NULL: out of memory, with
 * the message of gwr_last_errmsg). */
static gwr_status out_owned(gwr_kctx *k, int i, gwr_value *v) {
    if (!v) return gwr_k_fail(k, GWR_ERR_NOMEM, "%s", gwr_last_errmsg());
    gwr_k_set_out(k, i, v);
    gwr_value_release(v);
    return GWR_OK;
}

/* A scalar (or one-element) int32/int64 position input i into *pos,
 * normalized against [-n, n + extra) (extra 1: one past the end allowed).
 * Absent: def. */
static gwr_status read_position(gwr_kctx *k, int i, int64_t n, int extra, int64_t def, int64_t *pos) {
    const gwr_value *p = gwr_ku_opt(k, i);
    if (!p) {
        *pos = def;
        return GWR_OK;
    }
    if (!gwr_value_is_tensor(p) || (p->dtype != GWR_INT64 && p->dtype != GWR_INT32) || p->numel != 1 || p->rank > 1)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "position must be a scalar int32 or int64 tensor");
    int64_t v = gwr_v_get_i64(p, 0);
    if (v < -n || v >= n + extra)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "position %lld is out of range for a sequence of %lld", (long long)v, (long long)n);
    *pos = v < 0 ? v + n : v;
    return GWR_OK;
}

/* A sequence of the n values at v[] with x inserted at pos (x NULL: with
 * element `skip` left out, skip < 0: none). */
static gwr_value *seq_edit(const gwr_value *s, int64_t pos, gwr_value *x, int64_t skip) {
    int64_t n = s->nelems, m = n + (x != NULL) - (skip >= 0);
    gwr_value **e = gwr_calloc((size_t)(m > 0 ? m : 1), sizeof *e);
    if (!e) {
        gwr_set_last_error(GWR_ERR_NOMEM, "out of memory");
        return NULL;
    }
    int64_t j = 0;
    for (int64_t i = 0; i <= n; i++) {
        if (x && i == pos) e[j++] = x;
        if (i < n && i != skip) e[j++] = s->elems[i];
    }
    gwr_value *r = gwr_value_new_sequence(x ? x->dtype : s->dtype, m, e);
    gwr_free(e);
    return r;
}

/* ---- SequenceConstruct, SequenceEmpty, SequenceLength, SequenceAt ----------- */

static gwr_status k_seq_construct(gwr_kctx *k) {
    for (int i = 0; i < k->nin; i++) {
        if (!need_kind(k, i, "inputs", GWR_VALUE_TENSOR)) return GWR_ERR_INVALID_ARG;
        if (k->in[i]->dtype != k->in[0]->dtype)
            return gwr_k_fail(k, GWR_ERR_TYPE, "input %d is %s but input 0 is %s: a sequence holds one dtype", i,
                              gwr_dtype_name(k->in[i]->dtype), gwr_dtype_name(k->in[0]->dtype));
    }
    return out_owned(k, 0, gwr_value_new_sequence(k->nin ? k->in[0]->dtype : GWR_UNDEFINED, k->nin, (gwr_value *const *)k->in));
}

static gwr_status k_seq_empty(gwr_kctx *k) {
    int64_t dt = gwr_k_int(k, "dtype", GWR_FLOAT32);
    if (dt <= GWR_UNDEFINED || !gwr_dtype_is_valid((gwr_dtype)dt))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "dtype %lld is not a tensor element type", (long long)dt);
    return out_owned(k, 0, gwr_value_new_sequence((gwr_dtype)dt, 0, NULL));
}

static gwr_status k_seq_length(gwr_kctx *k) {
    const gwr_value *s = need_seq(k, 0);
    if (!s) return GWR_ERR_INVALID_ARG;
    gwr_value *y = gwr_k_out(k, 0, GWR_INT64, 0, NULL);
    if (!y) return GWR_ERR_NOMEM;
    *(int64_t *)y->data = s->nelems;
    return GWR_OK;
}

static gwr_status k_seq_at(gwr_kctx *k) {
    const gwr_value *s = need_seq(k, 0);
    if (!s) return GWR_ERR_INVALID_ARG;
    if (!gwr_ku_opt(k, 1)) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input 1 (position) is missing");
    int64_t pos;
    gwr_status st = read_position(k, 1, s->nelems, 0, 0, &pos);
    if (st) return st;
    gwr_k_set_out(k, 0, s->elems[pos]);
    return GWR_OK;
}

/* ---- SequenceInsert, SequenceErase -------------------------------------------- */

static gwr_status k_seq_insert(gwr_kctx *k) {
    const gwr_value *s = need_seq(k, 0), *x = s ? need_kind(k, 1, "tensor", GWR_VALUE_TENSOR) : NULL;
    if (!x) return GWR_ERR_INVALID_ARG;
    if (s->dtype != GWR_UNDEFINED && x->dtype != s->dtype)
        return gwr_k_fail(k, GWR_ERR_TYPE, "a %s tensor cannot go into a sequence of %s", gwr_dtype_name(x->dtype),
                          gwr_dtype_name(s->dtype));
    int64_t pos;
    gwr_status st = read_position(k, 2, s->nelems, 1, s->nelems, &pos);
    return st ? st : out_owned(k, 0, seq_edit(s, pos, (gwr_value *)(uintptr_t)x, -1));
}

static gwr_status k_seq_erase(gwr_kctx *k) {
    const gwr_value *s = need_seq(k, 0);
    if (!s) return GWR_ERR_INVALID_ARG;
    if (!s->nelems) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "cannot erase from an empty sequence");
    int64_t pos;
    gwr_status st = read_position(k, 1, s->nelems, 0, s->nelems - 1, &pos);
    return st ? st : out_owned(k, 0, seq_edit(s, 0, NULL, pos));
}

/* ---- ConcatFromSequence ------------------------------------------------------- */

static gwr_status k_concat_from_seq(gwr_kctx *k) {
    const gwr_value *s = need_seq(k, 0);
    if (!s) return GWR_ERR_INVALID_ARG;
    if (!s->nelems) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "the sequence is empty: nothing to concatenate");
    int64_t new_axis = gwr_k_int(k, "new_axis", 0), a = gwr_k_int(k, "axis", INT64_MIN);
    if (a == INT64_MIN) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attribute 'axis' is required");
    if (new_axis != 0 && new_axis != 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "new_axis must be 0 or 1, not %lld", (long long)new_axis);
    const gwr_value *f = s->elems[0];
    int r = f->rank, orank = r + (int)new_axis;
    if (orank < 1 || orank > GWR_MAX_RANK) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "cannot concatenate rank-%d tensors%s", r, new_axis ? " on a new axis" : "");
    int axis = gwr_axis(a, orank);
    if (axis < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)a, orank);
    int64_t esz = gwr_ku_elem_size(k, f->dtype);
    if (esz < 0) return GWR_ERR_TYPE;
    /* Every element's shape with the new axis (of 1) inserted, if any. */
    int64_t od[GWR_MAX_RANK], total = 0;
    for (int64_t e = 0; e < s->nelems; e++) {
        const gwr_value *v = s->elems[e];
        int same = v->rank == r && v->dtype == f->dtype;
        for (int d = 0, j = 0; same && d < orank; d++) {
            int64_t vd = new_axis && d == axis ? 1 : v->dims[j], fd = new_axis && d == axis ? 1 : f->dims[j];
            if (!(new_axis && d == axis)) j++;
            if (d == axis) total += vd;
            else same = vd == fd;
            od[d] = fd;
        }
        if (!same) {
            char a1[96], a2[96];
            gwr_value_type_str(f, a1, sizeof a1), gwr_value_type_str(v, a2, sizeof a2);
            return gwr_k_fail(k, GWR_ERR_SHAPE, "element %lld is %s, element 0 %s: they do not concatenate on axis %d", (long long)e, a2, a1, axis);
        }
    }
    od[axis] = total;
    gwr_value *y = gwr_k_out(k, 0, f->dtype, orank, od);
    if (!y) return GWR_ERR_NOMEM;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= od[d];
    for (int d = axis + 1; d < orank; d++) inner *= od[d];
    for (int64_t o = 0, at = 0; o < outer; o++)
        for (int64_t e = 0; e < s->nelems; e++) {
            const gwr_value *v = s->elems[e];
            int64_t run = (new_axis ? 1 : v->dims[axis]) * inner;
            gwr_status st = gwr_ku_copy_run(k, y, at, v, o * run, run, esz);
            if (st) return st;
            at += run;
        }
    return GWR_OK;
}

/* ---- SplitToSequence ---------------------------------------------------------- */

static gwr_status k_split_to_seq(gwr_kctx *k) {
    const gwr_value *x = need_kind(k, 0, "input", GWR_VALUE_TENSOR);
    if (!x) return GWR_ERR_INVALID_ARG;
    if (x->rank < 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "cannot split a scalar");
    int axis = gwr_axis(gwr_k_int(k, "axis", 0), x->rank);
    if (axis < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)gwr_k_int(k, "axis", 0), x->rank);
    int64_t keep = gwr_k_int(k, "keepdims", 1), len = x->dims[axis];
    const gwr_value *sp = gwr_ku_opt(k, 1);
    int64_t n, chunk = 1;
    if (sp) {
        if (!gwr_value_is_tensor(sp) || (sp->dtype != GWR_INT64 && sp->dtype != GWR_INT32) || sp->rank > 1)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "split must be an int32 or int64 scalar or 1-D tensor");
        if (sp->rank == 0) {
            chunk = gwr_v_get_i64(sp, 0);
            if (chunk <= 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "split %lld must be positive", (long long)chunk);
            n = len ? (len + chunk - 1) / chunk : 0;
        } else {
            int64_t sum = 0;
            n = sp->numel;
            for (int64_t i = 0; i < n; i++) {
                int64_t c = gwr_v_get_i64(sp, i);
                if (c < 0 || c > len - sum)
                    return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "split sizes must be non-negative and add up to %lld", (long long)len);
                sum += c;
            }
            if (sum != len) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "split sizes add up to %lld, not the axis' %lld", (long long)sum, (long long)len);
        }
    } else {
        if (keep != 0 && keep != 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "keepdims must be 0 or 1, not %lld", (long long)keep);
        n = len;
    }
    int64_t esz = gwr_ku_elem_size(k, x->dtype);
    if (esz < 0) return GWR_ERR_TYPE;
    gwr_value **e = gwr_calloc((size_t)(n ? n : 1), sizeof *e);
    if (!e) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
    gwr_status st = GWR_OK;
    for (int64_t i = 0, start = 0; i < n && !st; i++) {
        int64_t c = sp ? (sp->rank ? gwr_v_get_i64(sp, i) : (len - start < chunk ? len - start : chunk)) : 1;
        int64_t d[GWR_MAX_RANK];
        int r = 0;
        for (int q = 0; q < x->rank; q++) {
            if (q == axis && !sp && !keep) continue; /* squeezed */
            d[r++] = q == axis ? c : x->dims[q];
        }
        if (!(e[i] = gwr_k_value(k, x->dtype, r, d))) {
            st = GWR_ERR_NOMEM;
            break;
        }
        for (int64_t o = 0; o < outer && !st; o++) st = gwr_ku_copy_run(k, e[i], o * c * inner, x, (o * len + start) * inner, c * inner, esz);
        start += c;
    }
    if (!st) st = out_owned(k, 0, gwr_value_new_sequence(x->dtype, n, e));
    for (int64_t i = 0; i < n; i++) gwr_value_release(e[i]);
    gwr_free(e);
    return st;
}

/* ---- SequenceMap ------------------------------------------------------------ */

/* The element dtype declared for output o (a sequence), GWR_UNDEFINED when
 * not known: what an empty result carries. */
static gwr_dtype declared_elem(gwr_kctx *k, int o) {
    gwr_type ty;
    if (gwr_tensor_value_type(gwr_layer_output(k->layer, o), &ty) || ty.kind != GWR_VALUE_SEQUENCE || !ty.elem) return GWR_UNDEFINED;
    return ty.elem->kind == GWR_VALUE_TENSOR ? ty.elem->dtype : GWR_UNDEFINED;
}

static gwr_status k_seq_map(gwr_kctx *k) {
    const gwr_value *s0 = need_seq(k, 0);
    if (!s0) return GWR_ERR_INVALID_ARG;
    gwr_network *g;
    gwr_status st = gwr_layer_get_graph(k->layer, "body", &g);
    if (st || !g) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "attribute 'body' (a graph) is missing");
    int nin = k->nin, nout = k->nout, n = (int)s0->nelems;
    if (gwr_network_num_inputs(g) != nin || gwr_network_num_outputs(g) != nout)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "body '%s' takes %d inputs and gives %d outputs; the layer has %d and %d",
                          gwr_network_name(g), gwr_network_num_inputs(g), gwr_network_num_outputs(g), nin, nout);
    for (int j = 1; j < nin; j++) {
        const gwr_value *v = k->in[j];
        if (!v) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %d is missing", j);
        if (v->kind == GWR_VALUE_SEQUENCE && v->nelems != s0->nelems)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input %d is a sequence of %lld, input 0 of %lld: they must be as long", j,
                              (long long)v->nelems, (long long)s0->nelems);
        if (v->kind != GWR_VALUE_SEQUENCE && v->kind != GWR_VALUE_TENSOR)
            return gwr_k_fail(k, GWR_ERR_TYPE, "input %d is a %s: SequenceMap takes sequences and tensors", j, gwr_value_kind_name(v->kind));
    }
    /* res[o * n + i]: output o of iteration i */
    gwr_value **bi = gwr_calloc((size_t)nin, sizeof *bi), **res = gwr_calloc((size_t)nout * (size_t)(n ? n : 1), sizeof *res);
    if (!bi || !res) {
        gwr_free(bi), gwr_free(res);
        return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    }
    gwr_value *bob[8], **bo = nout <= 8 ? bob : gwr_calloc((size_t)nout, sizeof *bo);
    if (!bo) st = gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n && !st; i++) {
        for (int j = 0; j < nin; j++) bi[j] = k->in[j]->kind == GWR_VALUE_SEQUENCE ? k->in[j]->elems[i] : k->in[j];
        memset(bo, 0, (size_t)nout * sizeof *bo);
        st = gwr_k_run_graph(k, g, nin, bi, nout, bo);
        for (int o = 0; o < nout; o++) {
            if (!st && !gwr_value_is_tensor(bo[o]))
                st = gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "body output %d is a %s: sequences of tensors only", o, gwr_value_kind_name(bo[o]->kind));
            res[(size_t)o * (size_t)n + (size_t)i] = bo[o];
        }
    }
    for (int o = 0; o < nout && !st; o++) {
        gwr_value **e = res + (size_t)o * (size_t)n;
        st = out_owned(k, o, gwr_value_new_sequence(n ? e[0]->dtype : declared_elem(k, o), n, e));
    }
    for (size_t i = 0; i < (size_t)nout * (size_t)n; i++) gwr_value_release(res[i]);
    if (bo != bob) gwr_free(bo);
    gwr_free(bi), gwr_free(res);
    return st;
}

/* ---- Optional, OptionalHasElement, OptionalGetElement ---------------------- */

static gwr_status k_optional(gwr_kctx *k) {
    gwr_value *x = (gwr_value *)(uintptr_t)gwr_ku_opt(k, 0);
    if (x && x->kind != GWR_VALUE_TENSOR && x->kind != GWR_VALUE_SEQUENCE)
        return gwr_k_fail(k, GWR_ERR_TYPE, "input is a %s: an optional holds a tensor or a sequence", gwr_value_kind_name(x->kind));
    gwr_dtype dt = GWR_UNDEFINED;
    if (!x) {
        gwr_type ty;
        if (gwr_layer_find_attr(k->layer, "type") < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "with no input, attribute 'type' is required");
        if (!gwr_tensor_value_type(gwr_layer_output(k->layer, 0), &ty) && ty.kind == GWR_VALUE_OPTIONAL && ty.elem) dt = ty.elem->dtype;
    }
    return out_owned(k, 0, gwr_value_new_optional(x, dt));
}

static gwr_status k_optional_has(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_opt(k, 0);
    gwr_value *y = gwr_k_out(k, 0, GWR_BOOL, 0, NULL);
    if (!y) return GWR_ERR_NOMEM;
    /* an absent input is an empty optional; a tensor or a sequence, a full one (opset 18) */
    *(uint8_t *)y->data = x && (x->kind != GWR_VALUE_OPTIONAL || x->nelems > 0);
    return GWR_OK;
}

static gwr_status k_optional_get(gwr_kctx *k) {
    const gwr_value *x = gwr_ku_opt(k, 0);
    if (!x) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input 0 is missing");
    if (x->kind != GWR_VALUE_OPTIONAL) { /* opset 18: a tensor or a sequence is its own element */
        gwr_k_set_out(k, 0, (gwr_value *)(uintptr_t)x);
        return GWR_OK;
    }
    if (!x->nelems) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "the optional is empty: it has no element to get");
    gwr_k_set_out(k, 0, x->elems[0]);
    return GWR_OK;
}

#define SEQ(id, fn) GWR_KERNEL(id, fn, .flags = GWR_KF_VALUES | GWR_KF_ALIAS)
const gwr_kernel_entry gwr_kernels_sequence[] = {
    SEQ(SequenceConstruct, k_seq_construct),
    SEQ(SequenceEmpty, k_seq_empty),
    SEQ(SequenceLength, k_seq_length),
    SEQ(SequenceAt, k_seq_at),
    SEQ(SequenceInsert, k_seq_insert),
    SEQ(SequenceErase, k_seq_erase),
    SEQ(ConcatFromSequence, k_concat_from_seq),
    SEQ(SplitToSequence, k_split_to_seq),
    SEQ(SequenceMap, k_seq_map),
    SEQ(Optional, k_optional),
    SEQ(OptionalHasElement, k_optional_has),
    SEQ(OptionalGetElement, k_optional_get),
    {0},
};
