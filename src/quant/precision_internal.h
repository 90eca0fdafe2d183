/* precision_internal.h - what precision.c (the conversion) and
 * auto_mixed.c (--auto) share. Private to the quant room. */
#ifndef GWR_PRECISION_INTERNAL_H
#define GWR_PRECISION_INTERNAL_H

#include "quant/quant_internal.h"

/* Why layer l of a root network stays float32 whatever --auto decides:
 * the built-in table, --keep, --keep-node, another domain, a body, a
 * schema without the type at the model's opset (written in buf); NULL
 * when it may be converted. */
const char *gwr_q_prec_kept_reason(const gwr_layer *l, const gwr_precision_options *o, char *buf, size_t size);
/* 1 when l reads or writes a float32 tensor (converting it changes
 * something). */
int gwr_q_prec_touches_float(const gwr_layer *l);
/* 1 when a converted layer of op reads its input `slot` in half (not a
 * slot that reads any dtype, as Cast's, nor one the spec types float32,
 * as Resize's scales). */
int gwr_q_prec_half_slot(gwr_op_id op, int slot);
/* 1 when a converted layer of op writes its float32 output `slot` in half
 * (LayerNormalization's Mean and InvStdDev stay float32). */
int gwr_q_prec_half_output(gwr_op_id op, int slot);
/* Converts root network net to o->to, keeping float32 the layers that
 * gwr_q_prec_kept_reason names (a message in buf, or a static one) and those whose index (gwr_layer_index,
 * below nmask) has mask[i] set (--auto's choice; the reason written is
 * mask_why[i] when given, else "auto"). rep (may be NULL) gets one entry
 * per layer that touches float32. Errors on net. */
gwr_status gwr_q_prec_convert(gwr_network *net, const gwr_precision_options *o, const uint8_t *mask, int64_t nmask,
                              char *const *mask_why, gwr_quant_report *rep);
/* --auto: fills mask (num_layers(net) entries, zeroed by the caller) with
 * the layers to keep in float32 and mask_why[i] (malloc'd, the caller
 * frees) with why. net is only read (cloned for each candidate). */
gwr_status gwr_q_prec_auto(gwr_network *net, const gwr_precision_options *o, uint8_t *mask, char **mask_why);

/* What a slot wants of a value: anything, the half type, float32. */
enum { WANT_ANY = 0, WANT_HALF, WANT_FLOAT };

/* precision_ops.c: l holds If/Loop/Scan bodies; input slot `slot` of op
 * is no data (a shape, an index) or is float32 whatever the data type
 * (Resize's scales); output `slot` keeps its type; l computes on float32
 * data. */
int gwr_q_prec_has_bodies(const gwr_layer *l);
int gwr_q_prec_slot_agnostic(gwr_op_id op, int slot);
int gwr_q_prec_slot_float32(gwr_op_id op, int slot);
int gwr_q_prec_output_stays(gwr_op_id op, int slot);
int gwr_q_prec_touches_data(const gwr_layer *l);

#endif
