/* precision_ops.c - what gwr_precision knows of ops: the table of ops kept
 * in float32 and why, the schemas' half types (precision_types.inc), and
 * which input and output slots carry data that converts. Shared by the
 * conversion (precision.c) and the automatic mixed precision
 * (auto_mixed.c). */
#include <stdlib.h>
#include <string.h>

#include "quant/precision_internal.h"

/* ---- the table of ops kept in float32 ------------------------------------- */

typedef struct kept_op {
    const char *op;
    const char *why;
} kept_op;

/* Ops of the default domain that stay float32, and why. The guide was
 * which ops have no half kernel in the ONNX spec or in onnxruntime's CPU
 * provider, and which are numerically unsafe whatever the data (an
 * overflow of float16's 65504 or a loss of integers past 2048). Ops whose
 * overflow depends on the values (Exp, Pow, Softmax) are
 * converted: --auto measures them. ReduceMean is converted (its output is
 * an average; the executor and onnxruntime sum in float32). */

static const kept_op kept_table[] = {
    {"Range", "Range computes shapes and indices (float16 holds integers only up to 2048; the spec's Range has no "
              "float16)"},
    {"CumSum", "running sums grow with the length and lose their low bits in half"},
    {"ReduceSum", "sums over many elements overflow float16 (max 65504; a LayerNorm's sum of squares does)"},
    {"ReduceL1", "sums over many elements overflow float16 (max 65504)"},
    {"ReduceProd", "products overflow float16 (max 65504)"},
    {"ReduceSumSquare", "sums of squares overflow float16 (max 65504)"},
    {"ReduceL2", "sums of squares overflow float16 (max 65504)"},
    {"ReduceLogSumExp", "exponentials overflow float16 (max 65504)"},
    {"NonMaxSuppression", "boxes and scores are float32 only in the ONNX spec"},
    {"RoiAlign", "box coordinates in pixels lose their fraction in half"},
    {"MaxRoiPool", "box coordinates in pixels lose their fraction in half"},
    {"Det", "determinants are products: they overflow float16"},
    {"DFT", "spectral ops: phases and frequency bins lose precision in half"},
    {"STFT", "spectral ops: phases and frequency bins lose precision in half"},
    {"MelWeightMatrix", "spectral ops: phases and frequency bins lose precision in half"},
    {"HannWindow", "spectral ops: phases and frequency bins lose precision in half"},
    {"HammingWindow", "spectral ops: phases and frequency bins lose precision in half"},
    {"BlackmanWindow", "spectral ops: phases and frequency bins lose precision in half"},
    {"SoftmaxCrossEntropyLoss", "losses reduce over the batch: sums lose precision in half"},
    {"NegativeLogLikelihoodLoss", "losses reduce over the batch: sums lose precision in half"},
    {NULL, NULL}};

static const char *table_reason(const gwr_layer *l) {
    const char *op = gwr_layer_op(l);
    for (const kept_op *k = kept_table; k->op; k++)
        if (!strcmp(k->op, op)) return k->why;
    return NULL;
}

/* A Mul or Div of a ReduceSum (kept: its sum overflows) by a constant:
 * the mean idiom. Kept float32 with the sum, so that the boundary Cast
 * carries the mean, which fits. */
static int scales_a_sum(const gwr_layer *l) {
    gwr_op_id op = gwr_layer_op_id(l);
    if ((op != GWR_OP_Mul && op != GWR_OP_Div) || gwr_layer_num_inputs(l) != 2) return 0;
    for (int k = 0; k < 2; k++) {
        gwr_tensor *a = gwr_layer_input(l, k), *b = gwr_layer_input(l, 1 - k);
        gwr_layer *p = a ? gwr_tensor_parent(a) : NULL, *q = b ? gwr_tensor_parent(b) : NULL;
        if (!p || !b || (op == GWR_OP_Div && k == 1)) continue;
        gwr_op_id po = gwr_layer_op_id(p);
        if (po != GWR_OP_ReduceSum && po != GWR_OP_ReduceL1 && po != GWR_OP_ReduceSumSquare) continue;
        if ((q && gwr_layer_op_id(q) == GWR_OP_Constant) || (!q && gwr_tensor_default(b))) return 1;
    }
    return 0;
}

int gwr_q_prec_has_bodies(const gwr_layer *l) {
    for (int a = 0; a < gwr_layer_num_attrs(l); a++) {
        gwr_attr_type t = gwr_layer_attr_type(l, a);
        if (t == GWR_ATTR_GRAPH || t == GWR_ATTR_GRAPHS) return 1;
    }
    return 0;
}

static int default_domain(const gwr_layer *l) {
    const char *d = gwr_layer_domain(l);
    return !*d || !strcmp(d, "ai.onnx");
}

/* The versions of the schema of each default-domain op typed on float32,
 * and whether each takes float16 (h) and bfloat16 (b): generated from
 * onnx's schemas (tests/cli/precision_types.py). */
typedef struct op_types {
    const char *op, *versions;
} op_types;
static const op_types op_types_table[] = {
#define PT(op, versions) {op, versions},
#include "quant/precision_types.inc"
#undef PT
};

/* 1 when s is an item of the comma-separated list (gwr_q_listed mixes ops
 * and names; --keep and --keep-node are apart). */
static int in_list(const char *list, const char *s) {
    if (!list || !s) return 0;
    size_t n = strlen(s);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, s, len)) return 1;
        p += len + (e != NULL);
    }
    return 0;
}

static int by_op(const void *k, const void *e) { return strcmp((const char *)k, ((const op_types *)e)->op); }

/* 0 when the schema of op at `opset` takes `to` where it takes float32 (or
 * op is not in the table); else the version of that schema, for the
 * message. */
static int64_t no_half_schema(const char *op, int64_t opset, gwr_dtype to) {
    const op_types *e = bsearch(op, op_types_table, sizeof op_types_table / sizeof *op_types_table, sizeof *e, by_op);
    if (!e) return 0;
    int64_t ver = 0;
    const char *flags = NULL;
    for (const char *p = e->versions; *p;) {
        char *end;
        int64_t v = strtoll(p, &end, 10);
        if (*end != ':' || v > opset) break;
        ver = v, flags = end + 1;
        p = strchr(end, ' ');
        if (!p) break;
        p++;
    }
    if (!flags) return 0; /* the op is newer than the opset: nothing to say */
    char want = to == GWR_FLOAT16 ? 'h' : 'b';
    for (const char *f = flags; *f && *f != ' '; f++)
        if (*f == want) return 0;
    return ver;
}

const char *gwr_q_prec_kept_reason(const gwr_layer *l, const gwr_precision_options *o, char *buf, size_t size) {
    if (in_list(o->keep_nodes, gwr_layer_name(l))) return "--keep-node";
    if (in_list(o->keep_ops, gwr_layer_op(l))) return "--keep";
    if (!default_domain(l)) return "not an ONNX op of the default domain: no half form known";
    if (gwr_q_prec_has_bodies(l)) return "has bodies (If, Loop, Scan are kept float32 whole)";
    const char *why = table_reason(l);
    if (why) return why;
    if (scales_a_sum(l)) return "scales a float32 sum into a mean (the sum overflows float16; the mean need not)";
    gwr_network *root = gwr_layer_network(l);
    while (gwr_network_parent(root)) root = gwr_network_parent(root);
    int64_t opset = gwr_network_opset(root, "");
    int64_t ver = no_half_schema(gwr_layer_op(l), opset < 0 ? 1 : opset, o->to);
    if (ver) {
        snprintf(buf, size, "the ONNX spec's %s-%lld (opset %lld) has no %s", gwr_layer_op(l), (long long)ver,
                 (long long)opset, o->to == GWR_FLOAT16 ? "float16" : "bfloat16");
        return buf;
    }
    return NULL;
}

int gwr_q_prec_touches_float(const gwr_layer *l) {
    for (int i = 0; i < gwr_layer_num_inputs(l); i++) {
        gwr_tensor *t = gwr_layer_input(l, i);
        if (t && gwr_tensor_dtype(t) == GWR_FLOAT32) return 1;
    }
    for (int i = 0; i < gwr_layer_num_outputs(l); i++)
        if (gwr_tensor_dtype(gwr_layer_output(l, i)) == GWR_FLOAT32) return 1;
    return 0;
}

/* ---- input slots ---------------------------------------------------------- */

/* Slots that read any dtype without typing the layer (Shape, Cast, ...):
 * no Cast is put before them. */
int gwr_q_prec_slot_agnostic(gwr_op_id op, int slot) {
    switch (op) {
    case GWR_OP_Shape:
    case GWR_OP_Size:
    case GWR_OP_Cast:
    case GWR_OP_EyeLike:
    case GWR_OP_RandomNormalLike:
    case GWR_OP_RandomUniformLike:
    case GWR_OP_Bernoulli: return slot == 0;
    case GWR_OP_CastLike: return slot == 0;
    default: return 0;
    }
}

/* Slots the spec types float32 whatever the data's type. */
int gwr_q_prec_slot_float32(gwr_op_id op, int slot) {
    return (op == GWR_OP_Resize && (slot == 1 || slot == 2)) || (op == GWR_OP_Upsample && slot == 1);
}

/* Outputs of a converted layer that stay float32 (LayerNormalization's
 * Mean and InvStdDev are of its stash type). */
int gwr_q_prec_output_stays(gwr_op_id op, int slot) { return op == GWR_OP_LayerNormalization && slot > 0; }

int gwr_q_prec_half_slot(gwr_op_id op, int slot) { return !gwr_q_prec_slot_agnostic(op, slot) && !gwr_q_prec_slot_float32(op, slot); }
int gwr_q_prec_half_output(gwr_op_id op, int slot) { return !gwr_q_prec_output_stays(op, slot); }

/* 1 when l computes on float32 data: a float32 output, or a float32
 * input it reads as data (not Shape's). */
int gwr_q_prec_touches_data(const gwr_layer *l) {
    for (int i = 0; i < gwr_layer_num_inputs(l); i++) {
        gwr_tensor *t = gwr_layer_input(l, i);
        if (t && gwr_tensor_dtype(t) == GWR_FLOAT32 && !gwr_q_prec_slot_agnostic(gwr_layer_op_id(l), i)) return 1;
    }
    for (int i = 0; i < gwr_layer_num_outputs(l); i++)
        if (gwr_tensor_dtype(gwr_layer_output(l, i)) == GWR_FLOAT32) return 1;
    return 0;
}

