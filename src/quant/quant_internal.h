/* quant_internal.h - the quant room (src/quant): gwr_precision and
 * gwr_quantize, above passes and exec (it runs sessions to calibrate and
 * to measure) and onnx (it reads calibration files). Private to the room.
 *
 * Files: calib.c (calibration sets), calib_files.c (gwr_calib_load),
 * collect.c (running a network and handing intermediate values to a
 * callback), report.c (gwr_quant_report), quantize.c (gwr_quantize: options,
 * dispatch), dynamic.c, static.c, observers.c, weight_only.c,
 * smoothquant.c, layer_error.c (the modes), precision.c, auto_mixed.c
 * (gwr_precision). */
#ifndef GWR_QUANT_INTERNAL_H
#define GWR_QUANT_INTERNAL_H

#include <stdint.h>

#include "gwr/gwr.h"
#include "gwr/optimize.h"
#include "gwr/quantize.h"
#include "ir/ir_api.h"
#include "util/util.h"

/* ---- calibration (calib.c) ---- */
struct gwr_calib {
    int n, cap;
    struct gwr_calib_sample {
        int n;
        char **names;
        gwr_value **values;
    } *s;
};
/* opt->calib when given (checked against net with gwr_calib_fits: the
 * message on net); else nrandom seeded random samples in *owned (freed by
 * the caller). NULL with the message on net. */
const gwr_calib *gwr_q_calib_or_random(gwr_network *net, const gwr_calib *given, int nrandom, gwr_calib **owned);

/* ---- running (collect.c) ---- */
/* Called once per sample and requested tensor with its value (borrowed:
 * retain it to keep it). sample: the sample's index; idx: the tensor's
 * index in the request. Nonzero stops the run with that status (the
 * callback leaves its message on net with gwr_ir_error). */
typedef gwr_status (*gwr_q_collect_fn)(void *ctx, int sample, int idx, gwr_value *v);
/* Runs net (as written: a raw session of a clone in which the requested
 * tensors are marked outputs) on every sample of c, sample by sample
 * (values not kept between samples: memory is one sample's), calling fn
 * for each of the n tensors named in names (tensors of net, a network
 * output or not). threads: the session's. Errors on net. */
gwr_status gwr_q_collect(gwr_network *net, const gwr_calib *c, int n, const char *const *names, gwr_q_collect_fn fn,
                         void *ctx, int threads);
/* net's outputs (in order) on sample i of c: out[k] new references,
 * gwr_network_num_outputs(net) of them, the caller releases. A session is
 * planned each call; for many samples use gwr_q_collect over the output
 * names. Errors on net. */
gwr_status gwr_q_run_sample(gwr_network *net, const gwr_calib *c, int i, int threads, gwr_value **out);

/* ---- reports (report.c) ---- */
struct gwr_quant_report {
    int n, cap;
    gwr_quant_entry *e; /* strings owned (gwr_strdup) */
    int64_t bytes_before, bytes_after;
    int measured;       /* entries carry errors: sort worst first when written */
};
gwr_quant_report *gwr_q_report_new(void);
/* Adds an entry (strings copied; NULL what is ""); -1 when out of memory. */
int gwr_q_report_add(gwr_quant_report *r, const char *layer, const char *op, const char *what, double rel_error,
                     double cosine);

/* ---- shared arithmetic (collect.c) ---- */
/* Relative RMS error ||a - b|| / ||b|| and cosine similarity of two float
 * arrays of n elements (b the reference). */
void gwr_q_error(const float *a, const float *b, int64_t n, double *rel, double *cosine);
/* 1 when layer l's op is in the comma-separated list `ops` (op names) or
 * its name is in it (exclusion lists mix both). */
int gwr_q_listed(const char *list, const gwr_layer *l);
/* 1 when pred holds for a live layer of net or of the If/Loop/Scan
 * bodies in it. */
int gwr_q_any_layer(const gwr_network *net, int (*pred)(const gwr_layer *));
/* 1 when net already holds quantized layers (QuantizeLinear,
 * DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, ConvInteger,
 * QLinear*, MatMulNBits, ...), in its bodies too. */
int gwr_q_is_quantized(const gwr_network *net);

/* The largest int8 weight code for o's target: 127 (the spec's exact
 * sums: targets gwr and onnx), or 64 for target ort. onnxruntime's u8 x s8
 * kernels on x86 CPUs without VNNI (vpmaddubsw) add pairs of products in
 * int16 with saturation: 255 * 127 * 2 overflows, 255 * 64 * 2 = 32640
 * does not, so weights within [-64, 64] give the spec's bits on every CPU
 * (onnxruntime's own reduce_range). */
static inline int gwr_q_weight_qmax(const gwr_quantize_options *o) { return o->target == GWR_TARGET_ORT ? 64 : 127; }

/* ---- the modes (each file one; net is checked and options validated by
 * gwr_quantize before they run; each fills rep when non-NULL) ---- */
gwr_status gwr_q_dynamic(gwr_network *net, const gwr_quantize_options *o, gwr_quant_report *rep);
gwr_status gwr_q_static(gwr_network *net, const gwr_quantize_options *o, gwr_quant_report *rep);
gwr_status gwr_q_weight_only(gwr_network *net, const gwr_quantize_options *o, gwr_quant_report *rep);
/* SmoothQuant before the mode: scales folded into the layer before each
 * MatMul; calibrated on o->calib. */
gwr_status gwr_q_smoothquant(gwr_network *net, const gwr_quantize_options *o, gwr_quant_report *rep);
/* --report: each quantized layer's output error against the float32
 * network fp32 (an unchanged copy), measured on o->calib; entries added to
 * rep (layer_error.c). */
gwr_status gwr_q_layer_errors(gwr_network *fp32, gwr_network *quant, const gwr_quantize_options *o,
                              gwr_quant_report *rep);

/* ---- activation range observers (observers.c) ---- */
/* A range estimator of one tensor, fed sample by sample (memory is its
 * histogram, never the samples): minmax keeps the extremes; percentile,
 * entropy and mse keep a histogram of 2048 bins per sign over [-T, T]
 * (T doubled, pairs of bins merged, when a value falls outside) and choose
 * the clip range from it. symmetric: the range is [-t, t] (int8
 * activations); else [lo, hi] (uint8 activations). */
typedef struct gwr_q_observer gwr_q_observer;
#define GWR_Q_HIST_BINS 2048 /* per sign */
gwr_q_observer *gwr_q_observer_new(gwr_calib_method method, double percentile, int symmetric);
/* Feeds n values (NaN and infinities are skipped). */
void gwr_q_observer_add(gwr_q_observer *ob, const float *x, int64_t n);
/* The range chosen so far, lo <= 0 <= hi (zero always representable);
 * 0 when nothing finite was fed (*lo = *hi = 0). */
int gwr_q_observer_range(const gwr_q_observer *ob, double *lo, double *hi);
void gwr_q_observer_free(gwr_q_observer *ob);
/* Scale and zero point of an activation range [lo, hi] (lo <= 0 <= hi):
 * uint8 asymmetric, or int8 symmetric (zero point 0). */
void gwr_q_act_params(double lo, double hi, int int8, float *scale, int *zero_point);


#endif
