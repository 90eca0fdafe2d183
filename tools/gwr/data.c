/* data.c - ONNX's test-data files (a TensorProto, a SequenceProto of
 * tensors or an OptionalProto per file) read into executor values as the
 * model declares them: what `gwr test-onnx` compares and `gwr run --input`
 * feeds. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Tensor w as a value. */
static gwr_value *tensor_value(const gwr_weights *w, gwr_dtype want) {
    gwr_weights x = *w;
    /* ONNX's test data stores bfloat16 tensors as uint16 (numpy has no
     * bfloat16): such a file is read as the bfloat16 bits it holds. */
    if (want == GWR_BFLOAT16 && x.dtype == GWR_UINT16) x.dtype = GWR_BFLOAT16;
    return gwr_value_from_weights(&x);
}

/* The value data read by gwr_onnx_read_data holds: a tensor, a sequence
 * of its tensors, or an optional. NULL with gwr_last_errmsg. */
static gwr_value *data_value(const gwr_onnx_data *d, gwr_dtype want) {
    gwr_value_kind kind = d->kind == GWR_VALUE_OPTIONAL ? d->elem_kind : d->kind;
    gwr_value *inner = NULL;
    if (d->kind == GWR_VALUE_OPTIONAL && !d->has_value) return gwr_value_new_optional(NULL, want);
    if (kind == GWR_VALUE_TENSOR) {
        inner = tensor_value(&d->w[0], want);
    } else {
        gwr_value **e = calloc((size_t)d->count + 1, sizeof *e);
        int ok = e != NULL;
        for (int64_t i = 0; ok && i < d->count; i++) ok = (e[i] = tensor_value(&d->w[i], want)) != NULL;
        if (ok) inner = gwr_value_new_sequence(d->count ? gwr_value_dtype(e[0]) : want, d->count, e);
        for (int64_t i = 0; e && i < d->count; i++) gwr_value_release(e[i]);
        free(e);
    }
    if (!inner || d->kind != GWR_VALUE_OPTIONAL) return inner;
    gwr_value *o = gwr_value_new_optional(inner, GWR_UNDEFINED);
    gwr_value_release(inner);
    return o;
}

/* The innermost element dtype of t's type (GWR_UNDEFINED: not known). */
static gwr_dtype decl_dtype(const gwr_tensor *t) {
    gwr_type ty;
    if (!t || gwr_tensor_value_type(t, &ty)) return GWR_UNDEFINED;
    const gwr_type *p = &ty;
    while (p->kind != GWR_VALUE_TENSOR && p->elem) p = p->elem;
    return p->kind == GWR_VALUE_TENSOR ? p->dtype : GWR_UNDEFINED;
}

gwr_value *cli_read_value(const char *path, gwr_network *net, gwr_tensor *decl, char **name, int *read_failed) {
    gwr_onnx_data *d = NULL;
    if (name) *name = NULL;
    *read_failed = 0;
    for (int pass = 0; pass < 2; pass++) {
        gwr_value_kind kind = decl ? gwr_tensor_kind(decl) : GWR_VALUE_TENSOR;
        if (gwr_onnx_read_data(path, kind, &d)) {
            *read_failed = 1;
            return NULL;
        }
        /* A named file names its tensor: read again if that one is of another kind. */
        gwr_tensor *named = net && d->name && *d->name ? gwr_network_find_tensor(net, d->name) : NULL;
        if (!named || named == decl) break;
        int again = gwr_tensor_kind(named) != kind;
        decl = named;
        if (!again) break;
        gwr_onnx_data_free(d), d = NULL;
    }
    gwr_value *v = data_value(d, decl_dtype(decl));
    if (v && name && d->name && !(*name = gwr_strdup(d->name))) gwr_value_release(v), v = NULL;
    gwr_onnx_data_free(d);
    return v;
}
