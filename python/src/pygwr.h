/* pygwr.h - what the C files of the gwr Python extension (gwr._gwr) share.
 *
 * The extension uses gwr's public API only (docs/design.md: python uses the
 * public API). Each file adds its types and functions to the module through
 * one pg_init_<part>(module) call made by PyInit__gwr (module.c).
 *
 * Lifetimes. A Network object owns its gwr_network (or, for networks made
 * by a session, nothing: see pg_network_adopt). Layer and Tensor objects
 * hold a strong reference to their Network object, so a network lives as
 * long as anything from it is reachable in Python, unless it is closed
 * (Network.close(), or leaving `with Network() as net:`). Each Network
 * keeps a table from gwr_layer* / gwr_tensor* to the one Python object
 * that wraps it (so `t.get_parent() is t.get_parent()`), and a gwr
 * listener that, when prune drops a layer, marks that layer's object and
 * its outputs' objects dead. Using a dead or closed object raises
 * gwr.LifetimeError; it never touches freed memory.
 *
 * Every function that returns PyObject* returns a new reference, or NULL
 * with a Python exception set. Functions returning a C pointer return NULL
 * with an exception set on failure unless said otherwise. All of them
 * need the GIL. */
#ifndef PYGWR_H
#define PYGWR_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "gwr/gwr.h"

/* ---- errors (module.c) ----------------------------------------------------- */

/* gwr.Error and its subclasses, one per gwr_status (GWR_OK has none), and
 * gwr.LifetimeError (a dead Layer/Tensor, a closed Network). */
extern PyObject *pg_Error;
extern PyObject *pg_LifetimeError;
/* The exception class for a status (borrowed). */
PyObject *pg_error_class(gwr_status s);
/* Raises the class of s with msg (the C library's message; "" becomes the
 * status name). Returns NULL, so `return pg_raise(s, msg);` works. The
 * exception carries .status ("GWR_ERR_SHAPE") and .message. */
PyObject *pg_raise(gwr_status s, const char *msg);
/* The same with printf formatting. */
PyObject *pg_raisef(gwr_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Raises with the message of net (gwr_network_errmsg), or gwr_last_errmsg()
 * when net is NULL or has none. For calls that return NULL/status without
 * a status (builders), pass GWR_ERR_INVALID_ARG or the known status. */
PyObject *pg_raise_net(gwr_status s, gwr_network *net);

/* ---- enums (module.c) ------------------------------------------------------ */

/* gwr.DataType (IntEnum, ONNX numbering), gwr.LayerType (IntEnum,
 * gwr_layer_type), gwr.ElementWiseOperation (IntEnum, gwr_ew_op). */
PyObject *pg_dtype_to_py(gwr_dtype t);               /* a DataType member */
/* Accepts a DataType, an int, a str ("float32", "float", "half", ...), a
 * numpy dtype or scalar type (np.float32). -1 with TypeError/ValueError. */
int pg_dtype_from_py(PyObject *o, gwr_dtype *out);
PyObject *pg_layer_type_to_py(gwr_layer_type t);     /* a LayerType member */
int pg_layer_type_from_py(PyObject *o, gwr_layer_type *out); /* LayerType, int or its name */
PyObject *pg_ew_op_to_py(gwr_ew_op op);              /* None for GWR_EW_NONE */

/* ---- networks, layers, tensors (network.c) --------------------------------- */

typedef struct pg_network pg_network;  /* the Network object */
extern PyTypeObject pg_Network_Type, pg_Layer_Type, pg_Tensor_Type;

/* A new Network object that owns net (frees it when closed or collected).
 * On failure net is freed. */
PyObject *pg_network_adopt(gwr_network *net);
/* The Network object that wraps net (borrowed), or NULL with LifetimeError
 * when none does (a network gwr made for itself, a subgraph). */
pg_network *pg_network_find(gwr_network *net);
/* The gwr_network of a Network object; NULL with TypeError (not a Network)
 * or LifetimeError (closed). */
gwr_network *pg_network_get(PyObject *o);
/* Counts every change made to the network (layers added, removed or
 * dropped, inputs changed, uses replaced, attributes or tensors modified):
 * a session planned on the network as written compares it before running. */
uint64_t pg_network_generation(PyObject *o);
/* A manager or a session runs on the network: close() is refused with
 * StateError meanwhile. Nestable. */
void pg_network_busy(PyObject *o, int delta);

/* The one Layer / Tensor object of a handle; Py_None (new reference) for
 * NULL. Its network must be wrapped (pg_network_find). */
PyObject *pg_layer_wrap(gwr_layer *l);
PyObject *pg_tensor_wrap(gwr_tensor *t);
/* A new list of the objects of n handles (None for NULL entries). */
PyObject *pg_tensor_list(gwr_tensor *const *ts, Py_ssize_t n);
PyObject *pg_layer_list(gwr_layer *const *ls, Py_ssize_t n);
int pg_is_layer(PyObject *o);
int pg_is_tensor(PyObject *o);
/* The handle of a Layer / Tensor object; NULL with TypeError (wrong type)
 * or LifetimeError (its network closed, its layer pruned). */
gwr_layer *pg_layer_get(PyObject *o);
gwr_tensor *pg_tensor_get(PyObject *o);
/* A tensor's shape as Tensor.shape gives it: a tuple of ints, names of
 * symbolic dims and None for unknown ones; None for an unknown rank. */
PyObject *pg_tensor_shape(gwr_tensor *t);
/* The reverse, for shapes given by Python: ints >= 0, None or -1
 * (unknown), str (a symbolic dim, interned in net); None is an unknown
 * rank (*rank = -1). dims has room for GWR_MAX_RANK. 0, or -1 with an
 * exception. */
int pg_dims_from_py(gwr_network *net, PyObject *shape, int *rank, gwr_dim *dims);
/* A layer's attributes as Layer.attrs gives them (a new dict); works on
 * layers of networks without a Python object too (a plugin's infer). */
PyObject *pg_layer_attrs(gwr_layer *l);
/* The Network object of a live Layer / Tensor (borrowed). */
PyObject *pg_layer_network_obj(PyObject *layer);
PyObject *pg_tensor_network_obj(PyObject *tensor);

/* ---- the current network (network.c) -------------------------------------- */

/* net_guard(net) pushes, its exit pops; a manager pushes the network it
 * runs on for the duration of the run, so that builders and
 * FLayerInfoMemo.instance().get(name) called from a pattern find it.
 * pg_current_network returns the top (borrowed), or NULL with NO exception
 * set when the stack is empty. */
int pg_push_network(PyObject *net);
void pg_pop_network(void);
PyObject *pg_current_network(void);
/* The network a builder should use: the network of the first live
 * Tensor in args (a tuple and/or dict values, lists searched one level
 * deep), else the current one; NULL with StateError ("no network: pass a
 * Tensor or use `with gwr.net_guard(net):`") when neither. Borrowed. */
PyObject *pg_network_for(PyObject *args, PyObject *kwargs);

/* ---- argument lists (network.c) ------------------------------------------- */

/* A dict (or NULL/None: an empty list) as a gwr_args: Tensor, None,
 * bool/int, float, str, a list/tuple of Tensors, of ints or of floats. Any
 * other value is a TypeError naming the key. The caller frees the list. */
gwr_args *pg_args_from_dict(PyObject *dict);
/* The Python form of a gwr_args: a new dict in the list's order (TENSORS
 * and INTS/FLOATS as lists). */
PyObject *pg_args_to_dict(const gwr_args *a);

/* ---- parts: each adds its types and functions to the module ---------------- */
int pg_init_errors(PyObject *m);     /* module.c */
int pg_init_core(PyObject *m);       /* network.c */
int pg_init_patterns(PyObject *m);   /* patterns.c */
int pg_init_functional(PyObject *m); /* functional.c (builders, FLayerInfo, record_signature) */
int pg_init_session(PyObject *m);    /* session.c (numpy, Session, onnx) */
int pg_init_analysis(PyObject *m);   /* analysis.c (gwr.analyze) */
int pg_init_rules(PyObject *m);      /* rules.c (RuleSet, CompiledRule) */
int pg_init_quant(PyObject *m);      /* quant.c (gwr.quantize, gwr.precision) */
int pg_init_generate(PyObject *m);   /* generate.c (gwr.generate) */
/* 0 when threads is from 1 to GWR_SESSION_MAX_THREADS; else -1 with
 * InvalidArgumentError naming fn (quant.c). */
int pg_check_threads(int threads, const char *fn);
/* A Session object's session, marked running until pg_session_release
 * (session.c): NULL without an exception when o is not a Session; NULL
 * with one (naming fn) when it cannot run now (running, its network
 * closed or changed). *on_user_net: it planned the caller's network as
 * written (run it with the GIL held). */
gwr_session *pg_session_acquire(PyObject *o, const char *fn, int *on_user_net);
void pg_session_release(PyObject *o);

#endif
