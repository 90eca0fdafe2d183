/* functional_internal.h - what the files of src/functional share. */
#ifndef GWR_FUNCTIONAL_INTERNAL_H
#define GWR_FUNCTIONAL_INTERNAL_H

#include "gwr/functional.h"
#include "ir/ir_api.h"

/* infer.c: dtype and shape inference for the ops of the table, by op id
 * (the rules are in infer/, one file per op family). Sets the types of l's
 * outputs from its inputs and attributes. Ops without a rule get outputs
 * of the first input's dtype and unknown rank. On a mismatch: an error
 * status and a message naming the op and the shapes on the layer's
 * network. */
gwr_status gwr_fn_infer_op(gwr_layer *l);
/* infer.c: 1 when op `id` has a shape rule of its own, named in a family's
 * table (the generic rule named on purpose counts); 0 when it falls to the
 * generic rule by default, and for GWR_OP_CUSTOM or an id out of range. */
int gwr_fn_infer_has_rule(gwr_op_id id);

/* plugin.c: inference through the plugin registry. *found is set to 1 when
 * (domain, op) is a registered plugin kind (its status is returned), to 0
 * otherwise (GWR_OK returned, nothing done). */
gwr_status gwr_fn_infer_plugin(gwr_layer *l, int *found);
/* ew_chain.c: the shape rule of the built-in plugin gwr::ElementwiseChain. */
gwr_status gwr_fn_ew_chain_infer(gwr_layer *l, void *user);
/* swiglu.c: the shape rule of the built-in plugin gwr::SwiGLU. */
gwr_status gwr_fn_swiglu_infer(gwr_layer *l, void *user);

/* args.c: copies every INT, FLOAT, STRING, INTS, FLOATS value of `attrs`
 * to a layer attribute of the same name (FLOAT -> float32). A NONE value
 * is skipped; a TENSOR or TENSORS value is GWR_ERR_TYPE. */
gwr_status gwr_fn_set_attrs(gwr_layer *l, const gwr_args *attrs);

/* args.c: replaces every reference to `from` by `to` (NULL makes a
 * single-tensor value NONE); returns how many were replaced. */
int gwr_fn_args_replace_tensor(gwr_args *a, gwr_tensor *from, gwr_tensor *to);
/* args.c: sets item j of dst (keeping its name) to a deep copy of the
 * value of item i of src; j must be in range. */
gwr_status gwr_fn_args_set_item(gwr_args *dst, int j, const gwr_args *src, int i);
/* args.c: calls fn for every tensor the list references. */
void gwr_fn_args_each_tensor(const gwr_args *a, void (*fn)(gwr_tensor *t, void *ctx), void *ctx);

/* plugin.c: the registered functional of `kind`, or NULL. */
typedef struct gwr_fn_functional {
    char *kind;
    gwr_functional_fn fn;
    gwr_args *params;
    void *user;
} gwr_fn_functional;
const gwr_fn_functional *gwr_fn_functional_find(const char *kind);

#endif
