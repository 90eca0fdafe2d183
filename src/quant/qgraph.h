/* qgraph.h - what the weight-quantizing modes (dynamic.c, weight_only.c,
 * smoothquant.c) share: finding the linear layers with a constant float32
 * weight, building the layers that replace them, and putting the result in
 * the old layer's place under its names. Private to src/quant. */
#ifndef GWR_QUANT_QGRAPH_H
#define GWR_QUANT_QGRAPH_H

#include "gwr/match.h"
#include "quant/quant_internal.h"

/* A MatMul, Gemm or Conv whose weight is a float32 constant. */
typedef enum { GWR_QL_MATMUL = 1, GWR_QL_GEMM, GWR_QL_CONV } gwr_q_kind;
typedef struct gwr_q_linear {
    gwr_layer *l;
    gwr_q_kind kind;
    gwr_tensor *x;        /* the activation (input 0) */
    gwr_tensor *w;        /* the constant weight (input 1) */
    gwr_match_const wk;   /* its data: float32, MatMul/Gemm 2-D, Conv rank >= 3 */
    /* MatMul, Gemm: the weight as [K, N] (Gemm's B transposed when
     * trans_b); Conv: N output channels of K = numel / N weights each */
    int64_t K, N;
    int trans_a, trans_b; /* Gemm's */
    float alpha, beta;    /* Gemm's, else 1 */
    gwr_tensor *c;        /* Gemm's C, Conv's bias, or NULL */
} gwr_q_linear;

/* 1 and *q filled when l (live) is a MatMul with a constant float32 2-D B,
 * a Gemm with a constant float32 2-D B, or a Conv with a constant float32
 * W of rank >= 3, x float32 or untyped; else 0. */
int gwr_q_linear_of(gwr_layer *l, gwr_q_linear *q);
/* Types an untyped x float32 (what the op's type constraint makes it),
 * before layers that need its dtype read it. */
gwr_status gwr_q_type_x(const gwr_q_linear *q);
/* The weight of a MatMul or Gemm as a new float [K, N] array (Gemm's B
 * transposed when trans_b); NULL when out of memory. */
float *gwr_q_weight_kn(const gwr_q_linear *q);
/* Bytes of q's float32 weight. */
static inline int64_t gwr_q_weight_bytes(const gwr_q_linear *q) { return q->wk.numel * 4; }

/* A constant holding a copy of data, its tensor named base + suffix when
 * that name is free (else the generated one); NULL with the message on net. */
gwr_tensor *gwr_q_const(gwr_network *net, const char *base, const char *suffix, gwr_dtype dt, int rank,
                        const int64_t *dims, const void *data);
/* new_out (the output of the layers built for old) takes old's output's
 * place: its readers and its place among the network's outputs, and its
 * name; old is marked removed and `main` (the new layer that stands for
 * old, may be NULL) takes old's layer name. */
gwr_status gwr_q_take_place(gwr_layer *old, gwr_tensor *new_out, gwr_layer *main);
/* nl takes old's layer name (old renamed aside, NAME.float32); a name
 * that cannot move leaves both as they are. */
void gwr_q_rename_as(gwr_layer *old, gwr_layer *nl);
/* Puts "CONTEXT: <net's message>" on net (CONTEXT formatted from fmt) and
 * returns s, or the status of the failure that left the message when s is
 * GWR_OK. */
gwr_status gwr_q_fail(gwr_network *net, gwr_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Raises net's default-domain opset to at least v (set when the model
 * imports none) for `what`, before anything else changes: refused with the
 * message on net, and net unchanged, when an op of net cannot be converted
 * (gwr_opt_raise_opset). */
gwr_status gwr_q_need_opset(gwr_network *net, int64_t v, const char *what);
/* After a mode rewrote net: drops the replaced layers and the constants
 * no one reads any more, and puts the layers back in topological order. */
gwr_status gwr_q_finish(gwr_network *net);

/* Symmetric int8 codes of nch channels of cnt weights each (channel c's
 * element e at w[c * cs + e * es], its code at the same place of q):
 * scale[c] = max|w| / qmax (1 for an all-zero channel), codes rounded to
 * nearest even within [-qmax, qmax]. The one weight quantizer of the
 * dynamic and static modes. */
void gwr_q_sym8(const float *w, int64_t nch, int64_t cnt, int64_t cs, int64_t es, int qmax, int8_t *q, float *scale);

#endif
