/* functional.c - gwr.functional's builders, FLayerInfo, and the C side of
 * record_signature (Python functionals registered with gwr).
 *
 * The builders here take Tensors only: python/gwr/functional.py turns
 * Python scalars and array-likes into constants first, and picks the
 * keyword arguments. Every builder finds its network with pg_network_for
 * and refuses a Tensor of another network. */
#include "pygwr.h"

#include <string.h>

#define MAX_OUTS 64

/* ---- helpers ---------------------------------------------------------------- */

/* After "no network": a dead Tensor among the arguments is a LifetimeError,
 * another object where a Tensor could be a TypeError; both say more. */
static int explain_no_network(PyObject *o) {
    if (pg_is_tensor(o)) {
        PyErr_Clear();
        if (!pg_tensor_get(o)) return 1; /* LifetimeError set */
        pg_raise(GWR_ERR_STATE, "no network for this builder");
        return 1;
    }
    if (o == Py_None || PyUnicode_Check(o) || PyLong_Check(o) || PyFloat_Check(o) || PyList_Check(o) ||
        PyTuple_Check(o) || PyDict_Check(o) || pg_is_layer(o))
        return 0;
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "expected a gwr.Tensor, got %.100s", Py_TYPE(o)->tp_name);
    return 1;
}

static gwr_network *builder_net(PyObject *args, PyObject *kwargs) {
    PyObject *n = pg_network_for(args, kwargs);
    if (n) return pg_network_get(n);
    if (!PyErr_ExceptionMatches(pg_error_class(GWR_ERR_STATE))) return NULL;
    for (Py_ssize_t i = 0; args && i < PyTuple_GET_SIZE(args); i++)
        if (explain_no_network(PyTuple_GET_ITEM(args, i))) return NULL;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (kwargs && PyDict_Next(kwargs, &pos, &k, &v))
        if (explain_no_network(v)) return NULL;
    return NULL;
}

/* The handle of Tensor o of net (None allowed when optional). */
static int get_tensor(PyObject *o, gwr_network *net, int optional, const char *what, gwr_tensor **out) {
    if (o == Py_None && optional) {
        *out = NULL;
        return 0;
    }
    if (!pg_is_tensor(o)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a gwr.Tensor, got %.100s", what, Py_TYPE(o)->tp_name);
        return -1;
    }
    gwr_tensor *t = pg_tensor_get(o);
    if (!t) return -1;
    if (gwr_tensor_network(t) != net) {
        pg_raisef(GWR_ERR_INVALID_ARG, "%s: tensor '%s' belongs to another network", what, gwr_tensor_name(t));
        return -1;
    }
    *out = t;
    return 0;
}

/* A sequence of ints into buf (at most max). None gives *n = -1 when
 * allow_none. */
static int get_ints(PyObject *o, int64_t *buf, int max, int *n, int allow_none, const char *what) {
    if (o == Py_None && allow_none) {
        *n = -1;
        return 0;
    }
    PyObject *seq = PySequence_Fast(o, "expected a sequence of ints");
    if (!seq) {
        PyErr_Format(PyExc_TypeError, "%s: expected a sequence of ints, got %.100s", what, Py_TYPE(o)->tp_name);
        return -1;
    }
    Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
    if (k > max) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "%s: at most %d values", what, max);
        return -1;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(seq, i);
        PyObject *idx = PyNumber_Index(it);
        if (!idx) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_TypeError, "%s: element %zd is not an int", what, i);
            return -1;
        }
        long long v = PyLong_AsLongLong(idx);
        Py_DECREF(idx);
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        buf[i] = (int64_t)v;
    }
    *n = (int)k;
    Py_DECREF(seq);
    return 0;
}

/* A builder's failure. Builders return NULL; gwr_last_status() is the
 * status that went with the message they left on the network. */
static PyObject *builder_error(gwr_network *net) {
    gwr_status s = gwr_last_status();
    return pg_raise_net(s != GWR_OK ? s : GWR_ERR_SHAPE, net);
}

/* The Tensor object of a builder's result, or the network's message. */
static PyObject *result(gwr_tensor *t, gwr_network *net) {
    return t ? pg_tensor_wrap(t) : builder_error(net);
}

static PyObject *tensor_list(gwr_tensor *const *ts, int n, int as_tuple) {
    PyObject *l = pg_tensor_list(ts, n);
    if (!l || !as_tuple) return l;
    PyObject *t = PyList_AsTuple(l);
    Py_DECREF(l);
    return t;
}

/* ---- element-wise and unary builders ------------------------------------- */

typedef gwr_tensor *(*binary_fn)(gwr_network *, gwr_tensor *, gwr_tensor *);
typedef gwr_tensor *(*unary_fn)(gwr_network *, gwr_tensor *);

static const struct {
    const char *name;
    binary_fn fn;
} BINARY[] = {
    {"add", gwr_add},         {"sub", gwr_sub},     {"mul", gwr_mul},
    {"div", gwr_div},         {"pow", gwr_pow},     {"maximum", gwr_max},
    {"minimum", gwr_min},     {"mod", gwr_mod},     {"equal", gwr_equal},
    {"less", gwr_less},       {"less_equal", gwr_less_equal},
    {"greater", gwr_greater}, {"greater_equal", gwr_greater_equal},
    {"logical_and", gwr_and}, {"logical_or", gwr_or}, {"logical_xor", gwr_xor},
    {"matmul", gwr_matmul},
};

static const struct {
    const char *name;
    unary_fn fn;
} UNARY[] = {
    {"abs", gwr_abs},   {"neg", gwr_neg},         {"exp", gwr_exp},         {"log", gwr_log},
    {"sqrt", gwr_sqrt}, {"reciprocal", gwr_reciprocal}, {"floor", gwr_floor}, {"ceil", gwr_ceil},
    {"sin", gwr_sin},   {"cos", gwr_cos},         {"erf", gwr_erf},         {"relu", gwr_relu},
    {"sigmoid", gwr_sigmoid}, {"tanh", gwr_tanh}, {"softplus", gwr_softplus},
    {"hard_swish", gwr_hard_swish}, {"silu", gwr_silu}, {"logical_not", gwr_not},
    {"global_avg_pool", gwr_global_avg_pool}, {"global_max_pool", gwr_global_max_pool},
    {"shape_of", gwr_shape_of},
};

static PyObject *f_binary(PyObject *self, PyObject *args) {
    (void)self;
    const char *name;
    PyObject *a, *b;
    if (!PyArg_ParseTuple(args, "sOO:_f_binary", &name, &a, &b)) return NULL;
    binary_fn fn = NULL;
    for (size_t i = 0; i < sizeof BINARY / sizeof *BINARY && !fn; i++)
        if (!strcmp(BINARY[i].name, name)) fn = BINARY[i].fn;
    if (!fn) return PyErr_Format(PyExc_ValueError, "unknown binary builder '%s'", name);
    gwr_network *net = builder_net(args, NULL);
    gwr_tensor *ta, *tb;
    if (!net || get_tensor(a, net, 0, name, &ta) || get_tensor(b, net, 0, name, &tb)) return NULL;
    return result(fn(net, ta, tb), net);
}

static PyObject *f_unary(PyObject *self, PyObject *args) {
    (void)self;
    const char *name;
    PyObject *x;
    if (!PyArg_ParseTuple(args, "sO:_f_unary", &name, &x)) return NULL;
    unary_fn fn = NULL;
    for (size_t i = 0; i < sizeof UNARY / sizeof *UNARY && !fn; i++)
        if (!strcmp(UNARY[i].name, name)) fn = UNARY[i].fn;
    if (!fn) return PyErr_Format(PyExc_ValueError, "unknown unary builder '%s'", name);
    gwr_network *net = builder_net(args, NULL);
    gwr_tensor *tx;
    if (!net || get_tensor(x, net, 0, name, &tx)) return NULL;
    return result(fn(net, tx), net);
}

static PyObject *f_leaky(PyObject *self, PyObject *args) {
    (void)self;
    const char *name;
    PyObject *x;
    double alpha;
    if (!PyArg_ParseTuple(args, "sOd:_f_alpha", &name, &x, &alpha)) return NULL;
    gwr_network *net = builder_net(args, NULL);
    gwr_tensor *tx;
    if (!net || get_tensor(x, net, 0, name, &tx)) return NULL;
    if (!strcmp(name, "elu")) return result(gwr_elu(net, tx, (float)alpha), net);
    if (!strcmp(name, "leaky_relu")) return result(gwr_leaky_relu(net, tx, (float)alpha), net);
    return PyErr_Format(PyExc_ValueError, "unknown builder '%s'", name);
}

static PyObject *f_gelu(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *x;
    const char *approx;
    if (!PyArg_ParseTuple(args, "Os:gelu", &x, &approx)) return NULL;
    gwr_network *net = builder_net(args, NULL);
    gwr_tensor *tx;
    if (!net || get_tensor(x, net, 0, "gelu", &tx)) return NULL;
    return result(gwr_gelu(net, tx, approx), net);
}

static PyObject *f_softmax(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *x;
    long long axis;
    if (!PyArg_ParseTuple(args, "OL:softmax", &x, &axis)) return NULL;
    gwr_network *net = builder_net(args, NULL);
    gwr_tensor *tx;
    if (!net || get_tensor(x, net, 0, "softmax", &tx)) return NULL;
    return result(gwr_softmax(net, tx, axis), net);
}

static PyObject *f_layer_norm(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *x, *s, *b;
    long long axis;
    double eps;
    if (!PyArg_ParseTuple(args, "OOOLd:layer_norm", &x, &s, &b, &axis, &eps)) return NULL;
    gwr_network *net = builder_net(args, NULL);
    gwr_tensor *tx, *ts, *tb;
    if (!net || get_tensor(x, net, 0, "layer_norm", &tx) || get_tensor(s, net, 0, "layer_norm", &ts) ||
        get_tensor(b, net, 1, "layer_norm", &tb))
        return NULL;
    return result(gwr_layer_norm(net, tx, ts, tb, axis, (float)eps), net);
}

static PyObject *f_gemm(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *a, *b, *c;
    double alpha, beta;
    int ta, tb;
    if (!PyArg_ParseTuple(args, "OOOddpp:gemm", &a, &b, &c, &alpha, &beta, &ta, &tb)) return NULL;
    gwr_network *net = builder_net(args, NULL);
    gwr_tensor *xa, *xb, *xc;
    if (!net || get_tensor(a, net, 0, "gemm", &xa) || get_tensor(b, net, 0, "gemm", &xb) ||
        get_tensor(c, net, 1, "gemm", &xc))
        return NULL;
    return result(gwr_gemm(net, xa, xb, xc, (float)alpha, (float)beta, ta, tb), net);
}

static PyObject *f_where(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *c, *x, *y;
    if (!PyArg_ParseTuple(args, "OOO:where", &c, &x, &y)) return NULL;
    gwr_network *net = builder_net(args, NULL);
    gwr_tensor *tc, *tx, *ty;
    if (!net || get_tensor(c, net, 0, "where", &tc) || get_tensor(x, net, 0, "where", &tx) ||
        get_tensor(y, net, 0, "where", &ty))
        return NULL;
    return result(gwr_where(net, tc, tx, ty), net);
}

/* ---- shape builders --------------------------------------------------------- */

static PyObject *f_reshape(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *x, *shape;
    if (!PyArg_ParseTuple(args, "OO:reshape", &x, &shape)) return NULL;
    gwr_network *net = builder_net(args, NULL);
    gwr_tensor *tx;
    int64_t dims[GWR_MAX_RANK];
    int n;
    if (!net || get_tensor(x, net, 0, "reshape", &tx) || get_ints(shape, dims, GWR_MAX_RANK, &n, 0, "reshape"))
        return NULL;
    return result(gwr_reshape(net, tx, n, dims), net);
}

/* transpose, squeeze, unsqueeze, expand: a tensor and an int list (None:
 * the builder's default). */
static PyObject *f_ints_op(PyObject *self, PyObject *args) {
    (void)self;
    const char *name;
    PyObject *x, *ints;
    if (!PyArg_ParseTuple(args, "sOO:_f_ints", &name, &x, &ints)) return NULL;
    gwr_network *net = builder_net(args, NULL);
    gwr_tensor *tx;
    int64_t v[GWR_MAX_RANK];
    int n;
    if (!net || get_tensor(x, net, 0, name, &tx) || get_ints(ints, v, GWR_MAX_RANK, &n, 1, name)) return NULL;
    if (!strcmp(name, "transpose")) return result(gwr_transpose(net, tx, n < 0 ? 0 : n, n < 0 ? NULL : v), net);
    if (!strcmp(name, "squeeze")) return result(gwr_squeeze(net, tx, n < 0 ? 0 : n, v), net);
    if (n < 0) return PyErr_Format(PyExc_TypeError, "%s: a sequence of ints is required", name);
    if (!strcmp(name, "unsqueeze")) return result(gwr_unsqueeze(net, tx, n, v), net);
    if (!strcmp(name, "expand")) return result(gwr_expand(net, tx, n, v), net);
    return PyErr_Format(PyExc_ValueError, "unknown builder '%s'", name);
}

static PyObject *f_concat(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *xs;
    long long axis;
    if (!PyArg_ParseTuple(args, "OL:concat", &xs, &axis)) return NULL;
    if (PySequence_Check(xs) && PySequence_Size(xs) == 0) return PyErr_Format(PyExc_ValueError, "concat: no tensors");
    gwr_network *net = builder_net(args, NULL);
    if (!net) return NULL;
    PyObject *seq = PySequence_Fast(xs, "concat: expected a sequence of Tensors");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    gwr_tensor **ts = PyMem_Calloc(n ? (size_t)n : 1, sizeof *ts);
    PyObject *r = NULL;
    if (!ts) {
        PyErr_NoMemory();
        goto done;
    }
    if (n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "concat: too many tensors");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (get_tensor(PySequence_Fast_GET_ITEM(seq, i), net, 0, "concat", &ts[i])) goto done;
    r = result(gwr_concat(net, (int)n, ts, axis), net);
done:
    PyMem_Free(ts);
    Py_DECREF(seq);
    return r;
}

static PyObject *f_split(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *x, *sizes;
    long long axis;
    int n;
    if (!PyArg_ParseTuple(args, "OLiO:split", &x, &axis, &n, &sizes)) return NULL;
    gwr_network *net = builder_net(args, NULL);
    gwr_tensor *tx;
    int64_t sz[MAX_OUTS];
    int ns;
    if (!net || get_tensor(x, net, 0, "split", &tx) || get_ints(sizes, sz, MAX_OUTS, &ns, 1, "split")) return NULL;
    if (ns >= 0) n = ns;
    if (n < 1 || n > MAX_OUTS) return PyErr_Format(PyExc_ValueError, "split: between 1 and %d parts", MAX_OUTS);
    gwr_tensor *outs[MAX_OUTS];
    if (!gwr_split(net, tx, axis, n, ns >= 0 ? sz : NULL, outs)) return builder_error(net);
    return tensor_list(outs, n, 0);
}

static PyObject *f_slice(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *x, *st, *en, *ax, *sp;
    if (!PyArg_ParseTuple(args, "OOOOO:slice", &x, &st, &en, &ax, &sp)) return NULL;
    gwr_network *net = builder_net(args, NULL);
    gwr_tensor *tx;
    int64_t s[GWR_MAX_RANK], e[GWR_MAX_RANK], a[GWR_MAX_RANK], p[GWR_MAX_RANK];
    int ns, ne, na, np;
    if (!net || get_tensor(x, net, 0, "slice", &tx) || get_ints(st, s, GWR_MAX_RANK, &ns, 0, "slice starts") ||
        get_ints(en, e, GWR_MAX_RANK, &ne, 0, "slice ends") || get_ints(ax, a, GWR_MAX_RANK, &na, 1, "slice axes") ||
        get_ints(sp, p, GWR_MAX_RANK, &np, 1, "slice steps"))
        return NULL;
    if (ne != ns || (na >= 0 && na != ns) || (np >= 0 && np != ns))
        return PyErr_Format(PyExc_ValueError, "slice: starts, ends, axes and steps need the same length");
    return result(gwr_slice(net, tx, ns, s, e, na < 0 ? NULL : a, np < 0 ? NULL : p), net);
}

static PyObject *f_gather(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *x, *idx;
    long long axis;
    if (!PyArg_ParseTuple(args, "OOL:gather", &x, &idx, &axis)) return NULL;
    gwr_network *net = builder_net(args, NULL);
    gwr_tensor *tx, *ti;
    if (!net || get_tensor(x, net, 0, "gather", &tx) || get_tensor(idx, net, 0, "gather", &ti)) return NULL;
    return result(gwr_gather(net, tx, ti, axis), net);
}

static PyObject *f_cast(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *x, *dt;
    if (!PyArg_ParseTuple(args, "OO:cast", &x, &dt)) return NULL;
    gwr_network *net = builder_net(args, NULL);
    gwr_tensor *tx;
    gwr_dtype to;
    if (!net || get_tensor(x, net, 0, "cast", &tx) || pg_dtype_from_py(dt, &to)) return NULL;
    return result(gwr_cast(net, tx, to), net);
}

static PyObject *f_reduce(PyObject *self, PyObject *args) {
    (void)self;
    const char *name;
    PyObject *x, *axes;
    int keep;
    if (!PyArg_ParseTuple(args, "sOOp:reduce", &name, &x, &axes, &keep)) return NULL;
    gwr_network *net = builder_net(args, NULL);
    gwr_tensor *tx;
    int64_t a[GWR_MAX_RANK];
    int n;
    if (!net || get_tensor(x, net, 0, name, &tx) || get_ints(axes, a, GWR_MAX_RANK, &n, 1, name)) return NULL;
    if (n < 0) n = 0;
    if (!strcmp(name, "reduce_sum")) return result(gwr_reduce_sum(net, tx, n, a, keep), net);
    if (!strcmp(name, "reduce_mean")) return result(gwr_reduce_mean(net, tx, n, a, keep), net);
    if (!strcmp(name, "reduce_max")) return result(gwr_reduce_max(net, tx, n, a, keep), net);
    return PyErr_Format(PyExc_ValueError, "unknown reduction '%s'", name);
}

static PyObject *f_conv(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *x, *w, *b, *strides, *pads, *dil;
    long long group;
    const char *auto_pad;
    if (!PyArg_ParseTuple(args, "OOOOOOLz:conv", &x, &w, &b, &strides, &pads, &dil, &group, &auto_pad)) return NULL;
    gwr_network *net = builder_net(args, NULL);
    gwr_tensor *tx, *tw, *tb;
    int64_t s[GWR_MAX_RANK], p[2 * GWR_MAX_RANK], d[GWR_MAX_RANK];
    int ns, np, nd;
    if (!net || get_tensor(x, net, 0, "conv", &tx) || get_tensor(w, net, 0, "conv", &tw) ||
        get_tensor(b, net, 1, "conv", &tb) || get_ints(strides, s, GWR_MAX_RANK, &ns, 1, "conv strides") ||
        get_ints(pads, p, 2 * GWR_MAX_RANK, &np, 1, "conv pads") ||
        get_ints(dil, d, GWR_MAX_RANK, &nd, 1, "conv dilations"))
        return NULL;
    int rank = gwr_tensor_rank(tx);
    if (rank < 3) return pg_raisef(GWR_ERR_SHAPE, "conv: the input '%s' needs a known rank of at least 3", gwr_tensor_name(tx));
    int sp = rank - 2;
    if ((ns >= 0 && ns != sp) || (nd >= 0 && nd != sp) || (np >= 0 && np != 2 * sp))
        return PyErr_Format(PyExc_ValueError, "conv: strides and dilations need %d values, pads %d", sp, 2 * sp);
    gwr_conv_params cp = {.nspatial = sp,
                          .strides = ns < 0 ? NULL : s,
                          .pads = np < 0 ? NULL : p,
                          .dilations = nd < 0 ? NULL : d,
                          .group = group,
                          .auto_pad = auto_pad};
    return result(gwr_conv(net, tx, tw, tb, &cp), net);
}

/* ---- constants ------------------------------------------------------------ */

/* _f_constant(data, dtype, shape, network): data is a C-contiguous buffer
 * (functional.py prepares it with numpy) or, for strings, a flat list of
 * str. */
static PyObject *f_constant(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *data, *dt, *shape, *netobj;
    if (!PyArg_ParseTuple(args, "OOOO:constant", &data, &dt, &shape, &netobj)) return NULL;
    if (netobj == Py_None && !(netobj = pg_current_network()))
        return pg_raise(GWR_ERR_STATE, "constant: no network: pass network= or use `with gwr.net_guard(net):`");
    gwr_network *net = pg_network_get(netobj);
    gwr_dtype dtype;
    int64_t dims[GWR_MAX_RANK];
    int rank;
    if (!net || pg_dtype_from_py(dt, &dtype) || get_ints(shape, dims, GWR_MAX_RANK, &rank, 0, "constant shape"))
        return NULL;
    int64_t numel = gwr_shape_numel(rank, dims);
    if (numel < 0) return PyErr_Format(PyExc_ValueError, "constant: bad shape");
    if (dtype == GWR_STRING) {
        PyObject *seq = PySequence_Fast(data, "constant: strings need a list of str");
        if (!seq) return NULL;
        if (PySequence_Fast_GET_SIZE(seq) != numel) {
            Py_DECREF(seq);
            return PyErr_Format(PyExc_ValueError, "constant: %lld strings for %lld elements",
                                (long long)PySequence_Fast_GET_SIZE(seq), (long long)numel);
        }
        const char **strs = PyMem_Calloc(numel ? (size_t)numel : 1, sizeof *strs);
        PyObject *r = NULL;
        if (!strs) {
            Py_DECREF(seq);
            return PyErr_NoMemory();
        }
        for (int64_t i = 0; i < numel; i++) {
            PyObject *it = PySequence_Fast_GET_ITEM(seq, i);
            /* UTF-8 kept alive by the str object, which seq holds. */
            if (!PyUnicode_Check(it) || !(strs[i] = PyUnicode_AsUTF8(it))) {
                if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "constant: element %lld is not a str", (long long)i);
                goto sdone;
            }
        }
        r = result(gwr_constant(net, dtype, rank, dims, strs), net);
    sdone:
        PyMem_Free(strs);
        Py_DECREF(seq);
        return r;
    }
    size_t esize = gwr_dtype_size(dtype);
    if (!esize || gwr_dtype_bits(dtype) % 8)
        return pg_raisef(GWR_ERR_UNSUPPORTED, "constant: dtype %s cannot be built from Python data", gwr_dtype_name(dtype));
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    PyObject *r = NULL;
    if ((size_t)view.len != (size_t)numel * esize)
        PyErr_Format(PyExc_ValueError, "constant: %zd bytes for %lld elements of %s", view.len, (long long)numel,
                     gwr_dtype_name(dtype));
    else
        r = result(gwr_constant(net, dtype, rank, dims, view.buf), net);
    PyBuffer_Release(&view);
    return r;
}

static PyObject *f_dtype(PyObject *self, PyObject *o) {
    (void)self;
    gwr_dtype t;
    return pg_dtype_from_py(o, &t) ? NULL : pg_dtype_to_py(t);
}

/* ---- op and call ------------------------------------------------------------ */

/* The inputs (a sequence of Tensors, None for an absent slot) and the
 * attributes (a dict or None) of a layer to make, as C sees them: the
 * network (of the tensors, or the current one), the handles, the
 * attributes as gwr_args. 0, or -1 with an exception; layer_inputs_free
 * either way. */
typedef struct {
    gwr_network *net;
    gwr_tensor **ts;
    Py_ssize_t n;
    gwr_args *attrs;
} layer_inputs;

static int layer_inputs_get(layer_inputs *li, PyObject *inputs, PyObject *attrs, const char *what) {
    memset(li, 0, sizeof *li);
    PyObject *seq = PySequence_Fast(inputs, "inputs must be a sequence of Tensors (or None)");
    if (!seq) return -1;
    PyObject *targs = PyTuple_Pack(1, seq);
    li->net = targs ? builder_net(targs, NULL) : NULL;
    Py_XDECREF(targs);
    li->n = PySequence_Fast_GET_SIZE(seq);
    int r = -1;
    if (!li->net) goto done;
    if (li->n > 1 << 20) {
        PyErr_Format(PyExc_ValueError, "%s: too many inputs", what);
        goto done;
    }
    if (!(li->ts = PyMem_Calloc(li->n ? (size_t)li->n : 1, sizeof *li->ts))) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < li->n; i++)
        if (get_tensor(PySequence_Fast_GET_ITEM(seq, i), li->net, 1, what, &li->ts[i])) goto done;
    if (attrs != Py_None && !PyDict_Check(attrs)) {
        PyErr_Format(PyExc_TypeError, "%s: attributes must be a dict or None", what);
        goto done;
    }
    if ((li->attrs = pg_args_from_dict(attrs))) r = 0;
done:
    Py_DECREF(seq);
    return r;
}

static void layer_inputs_free(layer_inputs *li) {
    gwr_args_free(li->attrs);
    PyMem_Free(li->ts);
}

static PyObject *f_op(PyObject *self, PyObject *args) {
    (void)self;
    const char *op, *domain;
    PyObject *inputs, *attrs;
    int nout;
    if (!PyArg_ParseTuple(args, "sOOsi:op", &op, &inputs, &attrs, &domain, &nout)) return NULL;
    if (nout < 0 || nout > MAX_OUTS) return PyErr_Format(PyExc_ValueError, "op: noutputs must be 0..%d", MAX_OUTS);
    layer_inputs li;
    PyObject *r = NULL;
    gwr_tensor *outs[MAX_OUTS];
    if (layer_inputs_get(&li, inputs, attrs, op) == 0) {
        if (gwr_op_call(li.net, domain, op, (int)li.n, li.ts, li.attrs, nout, outs))
            r = tensor_list(outs, nout, 0);
        else
            builder_error(li.net);
    }
    layer_inputs_free(&li);
    return r;
}

/* Set by the trampoline after a Python functional returned: 1 when it
 * returned one Tensor (not a tuple). Read by f_call right after gwr_call;
 * nested calls finish before the outer trampoline writes it. GIL-guarded. */
static int last_single;

/* _call(kind, args: dict) -> tuple of outputs (a Tensor when a Python
 * functional returned one). */
static PyObject *f_call(PyObject *self, PyObject *args) {
    (void)self;
    const char *kind;
    PyObject *dict;
    if (!PyArg_ParseTuple(args, "sO!:call", &kind, &PyDict_Type, &dict)) return NULL;
    PyObject *empty = PyTuple_New(0);
    if (!empty) return NULL;
    gwr_network *net = builder_net(empty, dict);
    Py_DECREF(empty);
    if (!net) return NULL;
    gwr_args *a = pg_args_from_dict(dict);
    if (!a) return NULL;
    gwr_tensor *outs[MAX_OUTS];
    int n = 0;
    last_single = 0;
    gwr_status s = gwr_call(net, kind, a, outs, MAX_OUTS, &n);
    int single = last_single;
    gwr_args_free(a);
    if (s) {
        /* A Python functional's own exception goes through unchanged. */
        if (PyErr_Occurred()) return NULL;
        return pg_raise_net(s, net);
    }
    if (single && n == 1) return pg_tensor_wrap(outs[0]);
    return tensor_list(outs, n, 1);
}

/* ---- record_signature: Python functionals ----------------------------------- */

typedef struct pyfunctional {
    char *kind;
    PyObject *fn; /* strong, never released: registrations are process-wide */
} pyfunctional;

static pyfunctional **pyfns;
static Py_ssize_t npyfns;

static gwr_status py_trampoline(gwr_network *net, const gwr_args *args, gwr_tensor **outs, int max_outs, int *nouts,
                                void *user) {
    pyfunctional *pf = user;
    /* gwr_call may come from C code (a built-in pass re-creating the layer)
     * run from a thread that does not hold the GIL. */
    PyGILState_STATE g = PyGILState_Ensure();
    gwr_status st = GWR_ERR_INVALID_ARG;
    PyObject *kw = pg_args_to_dict(args), *empty = PyTuple_New(0), *res = NULL;
    if (!kw || !empty) goto done;
    res = PyObject_Call(pf->fn, empty, kw);
    if (!res) goto done;
    int single = pg_is_tensor(res);
    PyObject *seq = single ? PyTuple_Pack(1, res) : PySequence_Check(res) ? PySequence_Tuple(res) : NULL;
    if (!seq) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "functional '%s' must return a Tensor or a tuple of Tensors, not %.100s",
                         pf->kind, Py_TYPE(res)->tp_name);
        goto done;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    if (n > max_outs) {
        PyErr_Format(PyExc_ValueError, "functional '%s' returned %zd outputs (at most %d)", pf->kind, n, max_outs);
        Py_DECREF(seq);
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PyTuple_GET_ITEM(seq, i);
        if (!pg_is_tensor(it)) {
            PyErr_Format(PyExc_TypeError, "functional '%s' returned a %.100s among its outputs (Tensors only)", pf->kind,
                         Py_TYPE(it)->tp_name);
            Py_DECREF(seq);
            goto done;
        }
        if (get_tensor(it, net, 0, pf->kind, &outs[i])) {
            Py_DECREF(seq);
            goto done;
        }
    }
    Py_DECREF(seq);
    *nouts = (int)n;
    last_single = single;
    st = GWR_OK;
done:
    Py_XDECREF(res);
    Py_XDECREF(kw);
    Py_XDECREF(empty);
    PyGILState_Release(g);
    return st;
}

/* Where fn was defined: a module reloaded defines the "same" function anew. */
static int same_definition(PyObject *a, PyObject *b) {
    if (a == b) return 1;
    PyObject *ca = PyObject_GetAttrString(a, "__code__"), *cb = PyObject_GetAttrString(b, "__code__");
    int same = 0;
    if (ca && cb && PyCode_Check(ca) && PyCode_Check(cb)) {
        PyCodeObject *x = (PyCodeObject *)ca, *y = (PyCodeObject *)cb;
        same = x->co_firstlineno == y->co_firstlineno &&
               PyObject_RichCompareBool(x->co_filename, y->co_filename, Py_EQ) == 1 &&
               PyObject_RichCompareBool(x->co_qualname, y->co_qualname, Py_EQ) == 1;
    }
    PyErr_Clear();
    Py_XDECREF(ca);
    Py_XDECREF(cb);
    return same;
}

/* _register_functional(kind, fn, params: dict name -> default) */
static PyObject *f_register(PyObject *self, PyObject *args) {
    (void)self;
    const char *kind;
    PyObject *fn, *params;
    if (!PyArg_ParseTuple(args, "sOO!:_register_functional", &kind, &fn, &PyDict_Type, &params)) return NULL;
    if (!PyCallable_Check(fn)) return PyErr_Format(PyExc_TypeError, "record_signature: %R is not callable", fn);
    for (Py_ssize_t i = 0; i < npyfns; i++) {
        if (strcmp(pyfns[i]->kind, kind)) continue;
        if (!same_definition(pyfns[i]->fn, fn)) break; /* gwr refuses it below, with its message */
        /* The same function, or its redefinition by a reload: the newest runs. */
        Py_INCREF(fn);
        Py_SETREF(pyfns[i]->fn, fn);
        Py_RETURN_NONE;
    }
    gwr_args *p = pg_args_from_dict(params);
    if (!p) return NULL;
    pyfunctional *pf = PyMem_RawCalloc(1, sizeof *pf);
    pyfunctional **grown = pf ? PyMem_RawRealloc(pyfns, (size_t)(npyfns + 1) * sizeof *pyfns) : NULL;
    size_t klen = strlen(kind) + 1;
    if (grown) pyfns = grown;
    if (!pf || !grown || !(pf->kind = PyMem_RawMalloc(klen))) {
        gwr_args_free(p);
        PyMem_RawFree(pf);
        return PyErr_NoMemory();
    }
    memcpy(pf->kind, kind, klen);
    gwr_status s = gwr_functional_register(kind, py_trampoline, p, pf);
    gwr_args_free(p);
    if (s) {
        PyMem_RawFree(pf->kind);
        PyMem_RawFree(pf);
        return pg_raise(s, gwr_last_errmsg());
    }
    Py_INCREF(fn);
    pf->fn = fn;
    pyfns[npyfns++] = pf;
    Py_RETURN_NONE;
}

/* ---- FLayerInfo ------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *layer; /* the Layer object */
} FLayerInfo;

static PyTypeObject FLayerInfo_Type;

/* The live gwr_flayer, or NULL with LifetimeError. */
static gwr_flayer *fl_get(FLayerInfo *self) {
    gwr_layer *l = pg_layer_get(self->layer);
    if (!l) return NULL;
    gwr_flayer *f = gwr_flayer_get(gwr_layer_network(l), l);
    if (!f) {
        PyErr_Format(pg_LifetimeError, "FLayerInfo of layer '%s': the layer was removed", gwr_layer_name(l));
        return NULL;
    }
    return f;
}

static void fl_dealloc(FLayerInfo *self) {
    Py_XDECREF(self->layer);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *fl_wrap(PyObject *layer) {
    FLayerInfo *o = PyObject_New(FLayerInfo, &FLayerInfo_Type);
    if (!o) return NULL;
    Py_INCREF(layer);
    o->layer = layer;
    return (PyObject *)o;
}

static PyObject *fl_kind(FLayerInfo *self, void *c) {
    (void)c;
    gwr_flayer *f = fl_get(self);
    return f ? PyUnicode_FromString(gwr_flayer_kind(f)) : NULL;
}

static PyObject *fl_layer(FLayerInfo *self, void *c) {
    (void)c;
    if (!fl_get(self)) return NULL;
    Py_INCREF(self->layer);
    return self->layer;
}

static PyObject *fl_inputs(FLayerInfo *self, void *c) {
    (void)c;
    gwr_flayer *f = fl_get(self);
    return f ? pg_args_to_dict(gwr_flayer_inputs(f)) : NULL;
}

static PyObject *fl_outputs(FLayerInfo *self, void *c) {
    (void)c;
    gwr_flayer *f = fl_get(self);
    if (!f) return NULL;
    int n = gwr_flayer_num_outputs(f);
    gwr_tensor *outs[MAX_OUTS];
    if (n > MAX_OUTS) n = MAX_OUTS;
    for (int i = 0; i < n; i++) outs[i] = gwr_flayer_output(f, i);
    return tensor_list(outs, n, 0);
}

static PyObject *fl_clone_inputs(FLayerInfo *self, PyObject *unused) {
    (void)unused;
    return fl_inputs(self, NULL); /* pg_args_to_dict makes a fresh dict every time */
}

static PyObject *fl_get_input(FLayerInfo *self, PyObject *name) {
    if (!PyUnicode_Check(name)) return PyErr_Format(PyExc_TypeError, "get_input: name must be a str");
    const char *s = PyUnicode_AsUTF8(name);
    gwr_flayer *f = s ? fl_get(self) : NULL;
    if (!f) return NULL;
    return pg_tensor_wrap(gwr_flayer_get_input(f, s));
}

static PyObject *fl_replace_input_with(FLayerInfo *self, PyObject *args) {
    PyObject *src, *dst;
    if (!PyArg_ParseTuple(args, "OO:replace_input_with", &src, &dst)) return NULL;
    gwr_flayer *f = fl_get(self);
    if (!f) return NULL;
    gwr_network *net = gwr_layer_network(gwr_flayer_layer(f));
    gwr_tensor *ts, *td;
    if (get_tensor(src, net, 0, "replace_input_with", &ts) || get_tensor(dst, net, 0, "replace_input_with", &td))
        return NULL;
    gwr_status s = gwr_flayer_replace_input_with(f, ts, td);
    if (s) return pg_raise_net(s, net);
    Py_RETURN_NONE;
}

static PyObject *fl_replace_outputs(FLayerInfo *self, PyObject *args) {
    PyObject *outs;
    Py_ssize_t na = PyTuple_GET_SIZE(args);
    if (na == 1)
        outs = PyTuple_GET_ITEM(args, 0);
    else if (na == 2)
        outs = PyTuple_GET_ITEM(args, 1); /* the seed's (network, new_outs) */
    else
        return PyErr_Format(PyExc_TypeError, "replace_outputs_uses_with([network,] new_outs): %zd arguments", na);
    gwr_flayer *f = fl_get(self);
    if (!f) return NULL;
    gwr_network *net = gwr_layer_network(gwr_flayer_layer(f));
    if (na == 2) {
        gwr_network *given = pg_network_get(PyTuple_GET_ITEM(args, 0));
        if (!given) return NULL;
        if (given != net) return pg_raise(GWR_ERR_INVALID_ARG, "replace_outputs_uses_with: the network is not the layer's");
    }
    PyObject *seq = pg_is_tensor(outs) ? PyTuple_Pack(1, outs)
                                       : PySequence_Fast(outs, "replace_outputs_uses_with: new_outs must be Tensors");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    gwr_tensor *ts[MAX_OUTS];
    PyObject *r = NULL;
    if (n > MAX_OUTS) {
        PyErr_SetString(PyExc_ValueError, "replace_outputs_uses_with: too many tensors");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (get_tensor(PySequence_Fast_GET_ITEM(seq, i), net, 0, "replace_outputs_uses_with", &ts[i])) goto done;
    gwr_status s = gwr_flayer_replace_outputs_uses_with(f, (int)n, ts);
    if (s)
        pg_raise_net(s, net);
    else
        r = Py_NewRef(Py_None);
done:
    Py_DECREF(seq);
    return r;
}

static PyObject *fl_repr(FLayerInfo *self) {
    gwr_layer *l = pg_layer_get(self->layer);
    gwr_flayer *f = l ? gwr_flayer_get(gwr_layer_network(l), l) : NULL;
    PyErr_Clear();
    if (!f) return PyUnicode_FromString("<gwr.FLayerInfo (dead)>");
    return PyUnicode_FromFormat("<gwr.FLayerInfo '%s' on '%s'>", gwr_flayer_kind(f), gwr_layer_name(l));
}

static PyGetSetDef fl_getset[] = {
    {"kind", (getter)fl_kind, NULL, "The functional's kind (\"gpt_attention\", a decorated function's name).", NULL},
    {"layer", (getter)fl_layer, NULL, "The Layer the call was recorded on (the last one it created).", NULL},
    {"raw_inputs", (getter)fl_inputs, NULL,
     "A snapshot dict of every bound argument (defaults included), in signature order.", NULL},
    {"outputs", (getter)fl_outputs, NULL, "The functional's outputs, a list of Tensors.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef fl_methods[] = {
    {"get_input", (PyCFunction)fl_get_input, METH_O,
     "get_input(name) -> Tensor | None\n\nThe tensor bound to parameter `name` (None when it is none or not a tensor)."},
    {"clone_inputs", (PyCFunction)fl_clone_inputs, METH_NOARGS,
     "clone_inputs() -> dict\n\nA fresh dict of the bound arguments (Tensors shared): edit it and pass it back\n"
     "to the functional (`fn(**d)`) to create a new layer."},
    {"replace_input_with", (PyCFunction)fl_replace_input_with, METH_VARARGS,
     "replace_input_with(src, dst)\n\nReplaces Tensor src by dst in the recorded arguments and the layer's inputs."},
    {"replace_outputs_uses_with", (PyCFunction)fl_replace_outputs, METH_VARARGS,
     "replace_outputs_uses_with([network,] new_outs)\n\nRedirects every user (and output mark) of each output\n"
     "to the matching tensor of new_outs (same count, same dtypes); nothing changes on error."},
    {"replace_output_uses_with", (PyCFunction)fl_replace_outputs, METH_VARARGS,
     "replace_output_uses_with([network,] new_outs)\n\nAn alias of replace_outputs_uses_with."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject FLayerInfo_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gwr.FLayerInfo",
    .tp_basicsize = sizeof(FLayerInfo),
    .tp_dealloc = (destructor)fl_dealloc,
    .tp_repr = (reprfunc)fl_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The recorded call of a functional (gwr_call / @record_signature) on the layer it created.\n\n"
              "Get one with gwr.FLayerInfoMemo.instance().get(layer_or_name). It follows the layer: once the\n"
              "layer is removed or pruned, every use raises gwr.LifetimeError.",
    .tp_methods = fl_methods,
    .tp_getset = fl_getset,
};

/* _flayer_get(layer_or_name, network=None) -> FLayerInfo | None */
static PyObject *f_flayer_get(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    static char *kw[] = {"layer", "network", NULL};
    PyObject *what, *netobj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:get", kw, &what, &netobj)) return NULL;
    PyObject *layer;
    if (pg_is_layer(what)) {
        gwr_layer *l = pg_layer_get(what);
        if (!l) return NULL;
        if (!gwr_flayer_get(gwr_layer_network(l), l)) Py_RETURN_NONE;
        return fl_wrap(what);
    }
    if (!PyUnicode_Check(what))
        return PyErr_Format(PyExc_TypeError, "FLayerInfoMemo.get: a Layer or a layer name, not %.100s",
                            Py_TYPE(what)->tp_name);
    const char *name = PyUnicode_AsUTF8(what);
    if (!name) return NULL;
    if (netobj == Py_None) netobj = pg_current_network();
    if (!netobj)
        return pg_raise(GWR_ERR_STATE, "FLayerInfoMemo.get: no network: pass network= or use `with gwr.net_guard(net):`");
    gwr_network *net = pg_network_get(netobj);
    if (!net) return NULL;
    gwr_layer *l = gwr_network_find_layer(net, name);
    if (!l || !gwr_flayer_get(net, l)) Py_RETURN_NONE;
    if (!(layer = pg_layer_wrap(l))) return NULL;
    PyObject *r = fl_wrap(layer);
    Py_DECREF(layer);
    return r;
}

static PyObject *f_memo_size(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *netobj = Py_None;
    if (!PyArg_ParseTuple(args, "|O:size", &netobj)) return NULL;
    if (netobj == Py_None) netobj = pg_current_network();
    if (!netobj) return pg_raise(GWR_ERR_STATE, "FLayerInfoMemo.size: no network: pass one or use `with gwr.net_guard(net):`");
    gwr_network *net = pg_network_get(netobj);
    return net ? PyLong_FromLongLong(gwr_flayer_memo_size(net)) : NULL;
}

/* ---- module ------------------------------------------------------------------ */

/* ---- plugins registered from Python --------------------------------------------- */

/* A plugin kind whose shape function is Python; kept for the process's life,
 * as gwr's registry keeps the kind. */
typedef struct {
    char *name;       /* "domain::type", for messages */
    PyObject *infer;  /* infer(inputs, fields) -> [(dtype, shape), ...] */
    int noutputs;
} pyplugin;

/* The status an exception stands for: a gwr.Error's own, else INVALID_ARG. */
static gwr_status status_of_exception(PyObject *v) {
    if (v && PyObject_IsInstance(v, pg_Error) == 1) {
        PyObject *st = PyObject_GetAttrString(v, "status");
        const char *name = st && PyUnicode_Check(st) ? PyUnicode_AsUTF8(st) : NULL;
        for (int s = GWR_ERR_INVALID_ARG; name && s <= GWR_ERR_STATE; s++)
            if (!strcmp(name, gwr_status_name((gwr_status)s))) {
                Py_DECREF(st);
                return (gwr_status)s;
            }
        Py_XDECREF(st);
    }
    PyErr_Clear();
    return GWR_ERR_INVALID_ARG;
}

/* Sets output i from one (dtype, shape) pair the Python function gave. */
static int set_output_type(gwr_layer *l, int i, PyObject *item, const char *kind) {
    gwr_network *net = gwr_layer_network(l);
    PyObject *pair = PySequence_Check(item) ? PySequence_Tuple(item) : NULL;
    if (!pair || PyTuple_GET_SIZE(pair) != 2) {
        Py_XDECREF(pair);
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "plugin %s: infer must give a (dtype, shape) pair per output; output %d is %R",
                     kind, i, item);
        return -1;
    }
    gwr_dtype dt;
    gwr_dim dims[GWR_MAX_RANK];
    int rank;
    int r = pg_dtype_from_py(PyTuple_GET_ITEM(pair, 0), &dt) < 0 || pg_dims_from_py(net, PyTuple_GET_ITEM(pair, 1), &rank, dims) < 0;
    Py_DECREF(pair);
    if (r) return -1;
    gwr_status st = gwr_tensor_set_type(gwr_layer_output(l, i), dt, rank, rank >= 0 ? dims : NULL);
    if (st) return pg_raise_net(st, net), -1;
    return 0;
}

/* gwr_plugin_infer_fn of a Python kind: infer(inputs, fields) with inputs a
 * list of (DataType, shape) or None per slot and fields the attributes. It
 * may run anywhere gwr infers types (a builder, ONNX load with
 * infer_shapes while the GIL is released, a pass): the GIL is taken, and a
 * Python exception becomes the network's message (with the status of a
 * gwr.Error), so that every caller reports it as it reports gwr's own. */
static gwr_status py_plugin_infer(gwr_layer *l, void *user) {
    pyplugin *pp = user;
    PyGILState_STATE g = PyGILState_Ensure();
    gwr_network *net = gwr_layer_network(l);
    int n = gwr_layer_num_inputs(l);
    PyObject *ins = PyList_New(n), *fields = NULL, *res = NULL, *seq = NULL;
    gwr_status st = GWR_OK;
    for (int i = 0; ins && i < n; i++) {
        gwr_tensor *t = gwr_layer_input(l, i);
        PyObject *e = t ? Py_BuildValue("(NN)", pg_dtype_to_py(gwr_tensor_dtype(t)), pg_tensor_shape(t))
                        : Py_NewRef(Py_None);
        if (!e) {
            Py_CLEAR(ins);
            break;
        }
        PyList_SET_ITEM(ins, i, e);
    }
    if (!ins || !(fields = pg_layer_attrs(l)) || !(res = PyObject_CallFunctionObjArgs(pp->infer, ins, fields, NULL)))
        goto fail;
    if (!(seq = PySequence_Fast(res, "")) || PySequence_Fast_GET_SIZE(seq) != pp->noutputs) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "plugin %s: infer must return a list of %d (dtype, shape) pairs, got %R",
                     pp->name, pp->noutputs, res);
        goto fail;
    }
    for (int i = 0; i < pp->noutputs; i++)
        if (set_output_type(l, i, PySequence_Fast_GET_ITEM(seq, i), pp->name) < 0) goto fail;
    goto done;
fail: {
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    PyObject *text = v ? PyObject_Str(v) : NULL;
    const char *msg = text ? PyUnicode_AsUTF8(text) : NULL;
    st = status_of_exception(v);
    gwr_network_error(net, st, "plugin %s '%s': infer raised %s: %s", pp->name, gwr_layer_name(l),
                      t ? ((PyTypeObject *)t)->tp_name : "an error", msg ? msg : "?");
    PyErr_Clear();
    Py_XDECREF(text);
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
}
done:
    Py_XDECREF(seq);
    Py_XDECREF(res);
    Py_XDECREF(fields);
    Py_XDECREF(ins);
    PyGILState_Release(g);
    return st;
}

/* _register_plugin(domain, type, noutputs, infer) */
static PyObject *f_register_plugin(PyObject *self, PyObject *args) {
    (void)self;
    const char *domain, *type;
    int nout;
    PyObject *infer;
    if (!PyArg_ParseTuple(args, "ssiO:register_plugin", &domain, &type, &nout, &infer)) return NULL;
    if (!PyCallable_Check(infer)) return PyErr_Format(PyExc_TypeError, "register_plugin: infer must be callable, not %R", infer);
    if (nout < 0 || nout > MAX_OUTS) return PyErr_Format(PyExc_ValueError, "register_plugin: noutputs must be 0..%d", MAX_OUTS);
    if (!*domain) return pg_raise(GWR_ERR_INVALID_ARG, "register_plugin: a plugin lives in a domain of its own (not \"\", ONNX's)");
    pyplugin *pp = PyMem_RawCalloc(1, sizeof *pp);
    size_t len = strlen(domain) + strlen(type) + 3;
    if (!pp || !(pp->name = PyMem_RawMalloc(len))) {
        PyMem_RawFree(pp);
        return PyErr_NoMemory();
    }
    snprintf(pp->name, len, "%s::%s", domain, type);
    pp->noutputs = nout;
    pp->infer = Py_NewRef(infer);
    gwr_status st = gwr_plugin_register(domain, type, nout, py_plugin_infer, pp);
    if (st) {
        Py_DECREF(pp->infer);
        PyMem_RawFree(pp->name);
        PyMem_RawFree(pp);
        return pg_raise(st, gwr_last_errmsg());
    }
    Py_RETURN_NONE; /* pp stays: gwr's registry points at it */
}

/* _plugin(domain, type, inputs, fields, name) -> tuple of Tensors */
static PyObject *f_plugin(PyObject *self, PyObject *args) {
    (void)self;
    const char *domain, *type, *name = NULL;
    PyObject *inputs, *fields;
    if (!PyArg_ParseTuple(args, "ssOOz:plugin", &domain, &type, &inputs, &fields, &name)) return NULL;
    layer_inputs li;
    PyObject *r = NULL;
    if (layer_inputs_get(&li, inputs, fields, type) == 0) {
        gwr_layer *l = gwr_plugin_create(li.net, domain, type, name, (int)li.n, li.ts, li.attrs);
        if (l) {
            gwr_tensor *outs[MAX_OUTS];
            int k = gwr_layer_num_outputs(l) < MAX_OUTS ? gwr_layer_num_outputs(l) : MAX_OUTS;
            for (int i = 0; i < k; i++) outs[i] = gwr_layer_output(l, i);
            r = tensor_list(outs, k, 1);
        } else {
            builder_error(li.net);
        }
    }
    layer_inputs_free(&li);
    return r;
}

/* _build_gpt(net, blocks, hidden, heads, ffn, use_plugin, share_weights, seed) -> Tensor */
static PyObject *f_build_gpt(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *netobj;
    gwr_gpt_config c = {0};
    int plugin, share;
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "OiiiippK:_build_gpt", &netobj, &c.blocks, &c.hidden, &c.heads, &c.ffn, &plugin,
                          &share, &seed))
        return NULL;
    gwr_network *net = pg_network_get(netobj);
    if (!net) return NULL;
    c.use_plugin = plugin;
    c.share_weights = share;
    c.seed = seed;
    gwr_tensor *y = gwr_build_gpt(net, &c);
    if (!y) {
        gwr_status st = gwr_last_status();
        return pg_raise_net(st != GWR_OK ? st : GWR_ERR_INVALID_ARG, net);
    }
    return pg_tensor_wrap(y);
}

static PyMethodDef functional_methods[] = {
    {"_f_binary", f_binary, METH_VARARGS, "_f_binary(name, a, b): a two-Tensor builder (gwr.functional wraps it)."},
    {"_f_unary", f_unary, METH_VARARGS, "_f_unary(name, x): a one-Tensor builder (gwr.functional wraps it)."},
    {"_f_alpha", f_leaky, METH_VARARGS, "_f_alpha(name, x, alpha): elu / leaky_relu."},
    {"_f_gelu", f_gelu, METH_VARARGS, "_f_gelu(x, approximate)."},
    {"_f_softmax", f_softmax, METH_VARARGS, "_f_softmax(x, axis)."},
    {"_f_layer_norm", f_layer_norm, METH_VARARGS, "_f_layer_norm(x, scale, bias, axis, epsilon)."},
    {"_f_gemm", f_gemm, METH_VARARGS, "_f_gemm(a, b, c, alpha, beta, trans_a, trans_b)."},
    {"_f_where", f_where, METH_VARARGS, "_f_where(cond, x, y)."},
    {"_f_reshape", f_reshape, METH_VARARGS, "_f_reshape(x, shape)."},
    {"_f_ints", f_ints_op, METH_VARARGS, "_f_ints(name, x, ints|None): transpose, squeeze, unsqueeze, expand."},
    {"_f_concat", f_concat, METH_VARARGS, "_f_concat(xs, axis)."},
    {"_f_split", f_split, METH_VARARGS, "_f_split(x, axis, n, sizes|None) -> list."},
    {"_f_slice", f_slice, METH_VARARGS, "_f_slice(x, starts, ends, axes|None, steps|None)."},
    {"_f_gather", f_gather, METH_VARARGS, "_f_gather(x, indices, axis)."},
    {"_f_cast", f_cast, METH_VARARGS, "_f_cast(x, dtype)."},
    {"_f_reduce", f_reduce, METH_VARARGS, "_f_reduce(name, x, axes|None, keepdims)."},
    {"_f_conv", f_conv, METH_VARARGS, "_f_conv(x, w, b, strides, pads, dilations, group, auto_pad)."},
    {"_f_constant", f_constant, METH_VARARGS, "_f_constant(buffer|strs, dtype, shape, network|None)."},
    {"_f_dtype", f_dtype, METH_O, "_f_dtype(o) -> DataType: any dtype spelling gwr accepts."},
    {"_f_op", f_op, METH_VARARGS, "_f_op(op, inputs, attrs, domain, noutputs) -> list (gwr_op_call)."},
    {"_register_plugin", f_register_plugin, METH_VARARGS, "_register_plugin(domain, type, noutputs, infer)."},
    {"_plugin", f_plugin, METH_VARARGS, "_plugin(domain, type, inputs, fields, name) -> tuple of Tensors."},
    {"_build_gpt", f_build_gpt, METH_VARARGS, "_build_gpt(net, blocks, hidden, heads, ffn, use_plugin, share_weights, seed) -> Tensor."},
    {"_call", f_call, METH_VARARGS, "_call(kind, args: dict) -> tuple | Tensor: gwr_call of a registered functional."},
    {"_register_functional", f_register, METH_VARARGS,
     "_register_functional(kind, fn, params): registers a Python functional with gwr (record_signature)."},
    {"_flayer_get", (PyCFunction)(void (*)(void))f_flayer_get, METH_VARARGS | METH_KEYWORDS,
     "_flayer_get(layer_or_name, network=None) -> FLayerInfo | None."},
    {"_flayer_memo_size", f_memo_size, METH_VARARGS, "_flayer_memo_size(network=None) -> int."},
    {NULL, NULL, 0, NULL}};

int pg_init_functional(PyObject *m) {
    if (PyType_Ready(&FLayerInfo_Type) < 0) return -1;
    if (PyModule_AddObjectRef(m, "FLayerInfo", (PyObject *)&FLayerInfo_Type) < 0) return -1;
    return PyModule_AddFunctions(m, functional_methods);
}
