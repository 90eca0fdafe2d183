/* infer_internal.h - what the shape rules of src/functional/infer/ share:
 * the inference context and its error, attribute readers, shapes and dim
 * arithmetic (broadcasting, merging, axis normalization), the checks many
 * rules make, small integer values known at build time ("ivals"), the
 * spatial parameters of convolutions and pools, and the rule table type.
 * Everything is defined in common.c; each family file (elementwise.c,
 * conv.c, ...) exports one table of rules, which infer.c merges into an
 * array indexed by op id.
 *
 * Conventions: a dim that cannot be known is GWR_DIM_UNKNOWN, a rank that
 * cannot be known is -1. Only a definite contradiction (two known extents
 * that differ, an axis out of range, a wrong dtype) is an error; anything
 * merely unknown stays unknown. */
#ifndef GWR_FUNCTIONAL_INFER_INTERNAL_H
#define GWR_FUNCTIONAL_INFER_INTERNAL_H

#include "functional/functional_internal.h"

/* ---- context and errors ---- */

typedef struct ictx {
    gwr_layer *l;
    gwr_network *net;
    gwr_op_id id;
    int nin, nout;
    gwr_status st; /* the first error; later ones are dropped */
} ictx;

/* Records "<Op> '<layer>': <message>" on the network and returns s; after
 * a first error, only returns that one's status. */
gwr_status gwr_fi_fail(ictx *c, gwr_status s, const char *fmt, ...) GWR_PRINTF(3, 4);

/* ---- rules and their tables ---- */

/* A rule sets the types of c->l's outputs, or fails through gwr_fi_fail. */
typedef gwr_status (*gwr_fi_rule)(ictx *c);

/* One row of a family's table; a table ends with a NULL rule. */
typedef struct gwr_fi_entry {
    gwr_op_id op;
    gwr_fi_rule rule;
} gwr_fi_entry;

/* The generic rule: every output of the first input's dtype that is known,
 * with an unknown rank. Ops without a rule get it too (infer.c). */
gwr_status gwr_fi_rule_generic(ictx *c);
/* Output 0 of input 0's dtype and shape. */
gwr_status gwr_fi_rule_same(ictx *c);
/* The rules of Conv (conv.c) and Gemm (linalg.c), which the fused ops of
 * fused_cnn.c extend. */
gwr_status gwr_fi_rule_conv(ictx *c);
gwr_status gwr_fi_rule_gemm(ictx *c);

/* ---- attributes: absent -> def; present with another type -> an error
 * (GWR_ERR_TYPE) recorded and def ---- */

int64_t gwr_fi_aint(ictx *c, const char *name, int64_t def);
float gwr_fi_afloat(ictx *c, const char *name, float def);
const char *gwr_fi_astr(ictx *c, const char *name, const char *def);
/* 1 and *v, *n when present as INTS; 0 when absent (*n = -1, *v = NULL)
 * or of another type (then an error is recorded). */
int gwr_fi_aints(ictx *c, const char *name, const int64_t **v, int64_t *n);

/* ---- shapes and dims ---- */

typedef struct shp {
    int rank; /* -1: unknown rank */
    gwr_dim d[GWR_MAX_RANK];
} shp;

/* Input i, or NULL when absent or out of range. */
static inline gwr_tensor *inp(const ictx *c, int i) { return (i >= 0 && i < c->nin) ? gwr_layer_input(c->l, i) : NULL; }

static inline gwr_dtype dt_of(const gwr_tensor *t) { return t ? gwr_tensor_dtype(t) : GWR_UNDEFINED; }

/* t's shape; rank -1 when t is absent, not a tensor, or of unknown rank. */
void gwr_fi_shp_get(const gwr_tensor *t, shp *s);
void gwr_fi_shp_unknown_dims(shp *s, int rank);
int gwr_fi_shp_all_known(const shp *s);
/* Sets output i (an absent optional output is skipped); s NULL: unknown
 * rank. */
gwr_status gwr_fi_put(ictx *c, int i, gwr_dtype dt, const shp *s);
/* Every output: this dtype, unknown rank. */
gwr_status gwr_fi_put_all_unknown(ictx *c, gwr_dtype dt);
/* Output 0 takes input 0's shape, with dtype dt (UNDEFINED: input 0's). */
gwr_status gwr_fi_same_as_input(ictx *c, gwr_dtype dt);

/* Text for messages. */
typedef struct sbuf {
    char s[256];
} sbuf;
const char *gwr_fi_tstr(const gwr_tensor *t, sbuf *b);
const char *gwr_fi_shp_str(const ictx *c, const shp *s, sbuf *b);

/* Product of two dims: known when both are (overflow -> unknown), 0 when
 * either is 0, the other one when either is 1. */
gwr_dim gwr_fi_dmul(gwr_dim a, gwr_dim b);
gwr_dim gwr_fi_dadd(gwr_dim a, gwr_dim b);
/* Multidirectional broadcast of a and b into out (may alias either); 0 on
 * a definite mismatch. An unknown rank gives an unknown rank. */
int gwr_fi_bcast(const shp *a, const shp *b, shp *out);
/* src broadcasts to target without changing it (ONNX unidirectional). */
int gwr_fi_ubcast_ok(const shp *target, const shp *src);
/* Two dims that must be equal: 0 on a definite mismatch, else the most
 * precise of the two in *out. */
int gwr_fi_dmerge(gwr_dim a, gwr_dim b, gwr_dim *out);
/* Normalizes axis against [-rank, rank-1] (or [-rank-1, rank] when
 * `extra`): 0 and an error when out of range. */
int gwr_fi_norm_axis(ictx *c, int64_t axis, int rank, int extra, int64_t *out);

/* ---- checks shared by many rules: 0 (or NULL) and an error on failure ---- */

/* Input i must be present. */
gwr_tensor *gwr_fi_need(ictx *c, int i, const char *what);
/* a and b have the same dtype where both are known. */
int gwr_fi_same_dtype(ictx *c, const gwr_tensor *a, const gwr_tensor *b);
/* t's dtype, where known, is `want`. */
int gwr_fi_want_dtype(ictx *c, const gwr_tensor *t, gwr_dtype want, const char *what);
int gwr_fi_want_index_dtype(ictx *c, const gwr_tensor *t, const char *what);
/* Known rank of t, where known, is within [lo, hi]. */
int gwr_fi_want_rank(ictx *c, const gwr_tensor *t, const shp *s, int lo, int hi, const char *what);
/* A 1-D parameter (scale, bias, mean ...) of length n where known. */
int gwr_fi_want_vec(ictx *c, const gwr_tensor *t, gwr_dim n, const char *what);

/* ---- small integer values known at build time ---- */

enum { IV_UNK = 0, IV_VAL, IV_SYM };
#define IV_MAX                                                                                                         \
    GWR_MAX_RANK    /* longer values are treated as unknown (keeps the                                                 \
                     * recursion's stack use to a few KiB a level) */
#define IV_DEPTH 12 /* how far back through producers to look */

/* A scalar or 1-D int value: rank 0/1 (-1 unknown), n elements (-1
 * unknown), and per element a kind: an exact value, a symbolic dim (v holds
 * the gwr_dim: the element is a dim of some tensor), or unknown. */
typedef struct ival {
    int rank;
    int n;
    int64_t v[IV_MAX];
    unsigned char k[IV_MAX];
} ival;

void gwr_fi_iv_unknown(ival *o, int rank, int n);
int gwr_fi_iv_exact(const ival *v);
void gwr_fi_iv_from_ints(ival *o, const int64_t *v, int64_t n);
/* What is known of the integer value of t: at least its rank and length
 * from its type; the elements where the producers tell. */
void gwr_fi_iv_eval(const gwr_tensor *t, ival *o, int depth);
/* The value of input i. */
void gwr_fi_iv_in(const ictx *c, int i, ival *o);
/* Integer parameters from input i when present, else from attribute
 * `attr` (the older opset form). Returns 0 when neither is given. */
int gwr_fi_iv_param(ictx *c, int i, const char *attr, ival *o);
/* A 1-D input i whose declared length exceeds the rank limit (so its value
 * is not read, and as a shape or axes list it cannot fit): 1 and an
 * error. */
int gwr_fi_too_long(ictx *c, int i, const char *what);
/* Axes from an ival, normalized against rank, checked for duplicates. 0
 * and an error when invalid. */
int gwr_fi_norm_axes(ictx *c, const ival *v, int rank, int64_t *axes);
/* Up to max doubles from a CONSTANT producer of t (float or integer data,
 * or the value_float(s)/value_int(s) forms); -1 when not constant. */
int gwr_fi_const_f64s(const gwr_tensor *t, double *out, int max);
/* ONNX Shape's start/end, clamped to [0, rank]. */
void gwr_fi_shape_range(const gwr_layer *p, int rank, int64_t *start, int64_t *end);
/* The extent of one sliced axis of a known extent dim (ONNX clamping), and
 * in *first the first index taken. step != 0. */
int64_t gwr_fi_slice_len(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t *first);

/* ---- spatial parameters of convolutions and pools ---- */

enum { PAD_NOTSET, PAD_SAME_UPPER, PAD_SAME_LOWER, PAD_VALID };

/* Spatial parameters of a conv or pool over n spatial dims. */
typedef struct spatial {
    int n;
    int64_t k[GWR_MAX_RANK], s[GWR_MAX_RANK], d[GWR_MAX_RANK], pads[2 * GWR_MAX_RANK];
    int64_t op[GWR_MAX_RANK]; /* output_padding */
    int mode, ceil_mode;
} spatial;

/* A list attribute of exactly `want` values >= lo, or def everywhere. */
int gwr_fi_read_ints_n(ictx *c, const char *name, int want, int64_t lo, int64_t def, int64_t *out);
/* Reads strides, dilations, pads, auto_pad, ceil_mode (kernel already in
 * sp->k). */
int gwr_fi_read_spatial(ictx *c, spatial *sp);
/* Output extent of spatial dim i of a conv or pool over `in`. */
gwr_dim gwr_fi_conv_out(ictx *c, const spatial *sp, int i, gwr_dim in, int is_pool);

#endif
