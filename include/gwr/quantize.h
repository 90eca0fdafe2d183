/* gwr/quantize.h - precision: fp16/bf16 conversion with automatic mixed
 * precision (gwr_precision, `gwr precision`) and int8/int4 quantization
 * (gwr_quantize, `gwr quantize`), both proven on the executor: the
 * calibration runs, the automatic mixed precision and the per-layer error
 * report run the network on gwr's own sessions. docs/quantize.md has the
 * formats written, the tables of kept ops and the measurements. */
#ifndef GWR_QUANTIZE_H
#define GWR_QUANTIZE_H

#include "gwr/exec.h"
#include "gwr/passes.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- calibration sets ----------------------------------------------------- */

/* Samples of a network's inputs: each sample gives a value for every input
 * without a default (by name). Owned by the caller (gwr_calib_free). */
typedef struct gwr_calib gwr_calib;

/* An empty set; NULL (gwr_last_errmsg) when out of memory. */
GWR_API gwr_calib *gwr_calib_new(void);
/* Adds one sample of n named values (retained, not copied). */
GWR_API gwr_status gwr_calib_add(gwr_calib *c, int n, const char *const *names, gwr_value *const *values);
/* count samples of seeded random inputs as gwr_exec_make_inputs makes them
 * (opt: shapes, bindings; its seed is advanced per sample). */
GWR_API gwr_calib *gwr_calib_random(gwr_network *net, int count, const gwr_input_options *opt);
/* A directory of samples, in either layout (docs/quantize.md):
 *   - ONNX's test-data layout: one sub-directory per sample holding one
 *     TensorProto file per input (input_0.pb ..., the tensor's name the
 *     input's, else the file's order the network's input order);
 *     TensorProto files directly in DIR make one sample;
 *   - NumPy .npz files (numpy.savez or savez_compressed), one sample each,
 *     arrays named as the inputs.
 * Samples are read in file-name order. NULL with gwr_last_errmsg ("DIR: no
 * calibration samples", "DIR/x.npz: input 'ids' is int32, the model takes
 * int64", ...) when the directory is empty or a sample does not fit net:
 * an unknown name, a missing input, another dtype, rank or known dim. */
GWR_API gwr_calib *gwr_calib_load(const char *dir, gwr_network *net);
GWR_API int gwr_calib_count(const gwr_calib *c);
/* Sample i's values, names and count (borrowed). */
GWR_API int gwr_calib_sample(const gwr_calib *c, int i, const char *const **names, gwr_value *const **values);
/* 1 when every sample fits net's inputs (names, dtypes, ranks, known
 * dims); else 0 with why (a one-line message) filled. */
GWR_API int gwr_calib_fits(const gwr_calib *c, gwr_network *net, char *why, size_t size);
GWR_API void gwr_calib_free(gwr_calib *c);

/* ---- reports ---------------------------------------------------------------- */

/* What gwr_precision or gwr_quantize did, layer by layer. Owned by the
 * caller (gwr_quant_report_free). */
typedef struct gwr_quant_report gwr_quant_report;
typedef struct gwr_quant_entry {
    const char *layer;    /* the layer's name in the input network */
    const char *op;
    /* What happened to it: "int8 per-channel weights", "4-bit block 32",
     * "kept float32: --keep", "kept float32: Range computes shapes",
     * "kept float32: auto (output error 3.1e-3 > tol)", ... */
    const char *what;
    /* Measured error of its output against the float32 network (report
     * and --auto only; else -1): relative RMS error, cosine similarity. */
    double rel_error, cosine;
} gwr_quant_entry;
GWR_API int gwr_quant_report_count(const gwr_quant_report *r);
GWR_API const gwr_quant_entry *gwr_quant_report_entry(const gwr_quant_report *r, int i);
/* Bytes of the weights of MatMul/Gemm/Conv (and of their quantized forms)
 * before and after. */
GWR_API int64_t gwr_quant_report_weight_bytes(const gwr_quant_report *r, int after);
/* The report as text (one line per entry, errors sorted worst first when
 * measured) or JSON. */
GWR_API gwr_status gwr_quant_report_write(const gwr_quant_report *r, FILE *out, int json);
GWR_API void gwr_quant_report_free(gwr_quant_report *r);

/* ---- fp16 / bf16 -------------------------------------------------------------- */

typedef struct gwr_precision_options {
    gwr_dtype to;            /* GWR_FLOAT16 or GWR_BFLOAT16 */
    const char *keep_ops;    /* comma-separated ops kept in float32 (besides the built-in table) */
    const char *keep_nodes;  /* comma-separated layer names kept in float32 */
    int keep_io;             /* the network's inputs and outputs stay float32 */
    /* > 0: automatic mixed precision. The float32 network and the
     * converted one run on calib (NULL: 8 seeded random samples), and the
     * fewest layers are kept in float32 that hold every output within
     * tol (max |a - b| <= tol * max(1, max |a|)). */
    double auto_tol;
    const gwr_calib *calib;
    int threads;             /* of the sessions that --auto runs */
} gwr_precision_options;

/* Converts net in place; rep (may be NULL) gets what was kept and why.
 * GWR_ERR_INVALID_ARG for a bad option, GWR_ERR_UNSUPPORTED for a network
 * already in half precision; the message is on net. */
GWR_API gwr_status gwr_precision(gwr_network *net, const gwr_precision_options *opt, gwr_quant_report **rep);

/* ---- int8 / int4 ---------------------------------------------------------------- */

typedef enum gwr_quant_mode {
    GWR_QUANT_DYNAMIC = 1, /* int8 weights per channel, activations quantized at run time */
    GWR_QUANT_STATIC,      /* weights and activations, activation ranges from calibration */
    GWR_QUANT_WEIGHT_ONLY  /* MatMul weights in 4 or 8 bits, blockwise */
} gwr_quant_mode;

typedef enum gwr_calib_method {
    GWR_CALIB_MINMAX = 0,
    GWR_CALIB_PERCENTILE,
    GWR_CALIB_ENTROPY,
    GWR_CALIB_MSE
} gwr_calib_method;

typedef enum gwr_quant_format {
    GWR_QFORMAT_QDQ = 0,   /* QuantizeLinear / DequantizeLinear around float ops */
    GWR_QFORMAT_QOPERATOR  /* QLinearConv, QLinearMatMul, MatMulInteger, ConvInteger */
} gwr_quant_format;

typedef enum gwr_wo_method {
    GWR_WO_RTN = 0,        /* round to nearest */
    GWR_WO_GPTQ            /* calibrated: error-compensating rounding from the inputs' Hessian */
} gwr_wo_method;

typedef struct gwr_quantize_options {
    gwr_quant_mode mode;
    unsigned target;           /* GWR_TARGET_*; 0: ORT. Weight-only: MatMulNBits (ort, gwr) or
                                * DequantizeLinear with block_size (onnx, opset 21+) */
    gwr_quant_format format;   /* dynamic and static */
    gwr_calib_method method;   /* static */
    double percentile;         /* GWR_CALIB_PERCENTILE; 0: 99.999 */
    int act_int8;              /* static: activations int8 symmetric; 0: uint8 asymmetric */
    int per_tensor;            /* weights per tensor; 0: per output channel */
    int bits;                  /* weight-only: 4 or 8; 0: 4 */
    int block_size;            /* weight-only: a power of two >= 16; 0: 32 */
    gwr_wo_method wo_method;
    double smoothquant_alpha;  /* > 0: SmoothQuant with this migration strength (0..1] */
    const char *exclude;       /* comma-separated ops or layer names left in float */
    /* Calibration samples (static, GPTQ, SmoothQuant, report); NULL: 8
     * seeded random samples where needed. */
    const gwr_calib *calib;
    int report;                /* measure each quantized layer's output error (rep entries) */
    int threads;
} gwr_quantize_options;

/* Quantizes net in place; rep (may be NULL) gets what was done per layer,
 * the weight bytes, and the measured errors when opt->report. Refused,
 * with the message on net and net unchanged: a bad option (bits 3, block
 * size 24, alpha 2), a calibration set that does not fit
 * (gwr_calib_fits), a network already quantized (GWR_ERR_UNSUPPORTED).
 * An error after those checks (out of memory) may leave net part done. */
GWR_API gwr_status gwr_quantize(gwr_network *net, const gwr_quantize_options *opt, gwr_quant_report **rep);

#ifdef __cplusplus
}
#endif

#endif
