/* signal.c - the signal kernel family: DFT, STFT, MelWeightMatrix and
 * the window functions (HannWindow, HammingWindow, BlackmanWindow).
 *
 * Every transform runs in double whatever the tensors' dtype: a radix-2
 * FFT for power-of-two lengths, the direct sum for short other lengths,
 * and Bluestein's chirp-z (a power-of-two convolution) for long ones.
 * Complex values are interleaved doubles (re, im), as ONNX lays them out
 * in its trailing dim of 2. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/kernels/kernel_util.h"

/* The longest transform (points); Bluestein needs 4 times as many doubles
 * in its convolution buffers. */
#define DFT_MAX ((int64_t)1 << 22)
/* Below this, a length that is not a power of two uses the direct sum. */
#define DFT_DIRECT_MAX 128

static const double PI = 3.14159265358979323846;

static int is_pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

/* ---- the transform ------------------------------------------------------- */

enum { FFT_RADIX2, FFT_DIRECT, FFT_BLUESTEIN };

typedef struct fft {
    int64_t n;     /* transform length */
    int mode;
    int64_t m;     /* radix-2 length: n, or the convolution length of Bluestein */
    double *tw;    /* radix-2: m/2 twiddles exp(-2 pi i k / m); direct: n of exp(-2 pi i k / n) */
    double *chirp; /* Bluestein: exp(-pi i t^2 / n), t < n */
    double *filt;  /* Bluestein: the FFT of the conjugate chirp, divided by m */
    double *work;  /* scratch: m (Bluestein) or n (direct) complex values */
} fft;

static void fft_free(fft *f) {
    gwr_free(f->tw), gwr_free(f->chirp), gwr_free(f->filt), gwr_free(f->work);
    memset(f, 0, sizeof *f);
}

/* exp(-2 pi i k / n) for k < count into tw (interleaved). */
static void twiddles(double *tw, int64_t count, int64_t n) {
    for (int64_t k = 0; k < count; k++) {
        double a = -2.0 * PI * (double)k / (double)n;
        tw[2 * k] = cos(a), tw[2 * k + 1] = sin(a);
    }
}

/* In-place forward FFT of m (a power of two) complex values; tw holds
 * exp(-2 pi i k / m) for k < m/2. */
static void radix2(double *x, int64_t m, const double *tw) {
    for (int64_t i = 1, j = 0; i < m; i++) { /* bit-reversal permutation */
        int64_t bit = m >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j ^= bit;
        if (i < j) {
            double r = x[2 * i], im = x[2 * i + 1];
            x[2 * i] = x[2 * j], x[2 * i + 1] = x[2 * j + 1];
            x[2 * j] = r, x[2 * j + 1] = im;
        }
    }
    for (int64_t len = 2; len <= m; len <<= 1) {
        int64_t half = len / 2, step = m / len;
        for (int64_t s = 0; s < m; s += len)
            for (int64_t j = 0; j < half; j++) {
                double wr = tw[2 * j * step], wi = tw[2 * j * step + 1];
                double *a = x + 2 * (s + j), *b = x + 2 * (s + j + half);
                double tr = b[0] * wr - b[1] * wi, ti = b[0] * wi + b[1] * wr;
                b[0] = a[0] - tr, b[1] = a[1] - ti;
                a[0] += tr, a[1] += ti;
            }
    }
}

/* Plans a transform of n points (1 <= n <= DFT_MAX); -1 when out of
 * memory (f is then freed). */
static int fft_init(fft *f, int64_t n) {
    memset(f, 0, sizeof *f);
    f->n = n;
    if (is_pow2(n)) {
        f->mode = FFT_RADIX2, f->m = n;
        if (!(f->tw = gwr_malloc((size_t)(n / 2 + 1) * 2 * sizeof(double)))) return -1;
        twiddles(f->tw, n / 2, n);
        return 0;
    }
    if (n <= DFT_DIRECT_MAX) {
        f->mode = FFT_DIRECT;
        f->tw = gwr_malloc((size_t)n * 2 * sizeof(double));
        f->work = gwr_malloc((size_t)n * 2 * sizeof(double));
        if (!f->tw || !f->work) return fft_free(f), -1;
        twiddles(f->tw, n, n);
        return 0;
    }
    f->mode = FFT_BLUESTEIN;
    int64_t m = 1;
    while (m < 2 * n - 1) m <<= 1;
    f->m = m;
    f->tw = gwr_malloc((size_t)(m / 2) * 2 * sizeof(double));
    f->chirp = gwr_malloc((size_t)n * 2 * sizeof(double));
    f->filt = gwr_calloc((size_t)m * 2, sizeof(double));
    f->work = gwr_malloc((size_t)m * 2 * sizeof(double));
    if (!f->tw || !f->chirp || !f->filt || !f->work) return fft_free(f), -1;
    twiddles(f->tw, m / 2, m);
    for (int64_t t = 0; t < n; t++) {
        /* t^2 mod 2n keeps the angle exact for long transforms */
        double a = -PI * (double)((t * t) % (2 * n)) / (double)n;
        f->chirp[2 * t] = cos(a), f->chirp[2 * t + 1] = sin(a);
    }
    double *b = f->filt;
    b[0] = 1, b[1] = 0;
    for (int64_t t = 1; t < n; t++) {
        b[2 * t] = b[2 * (m - t)] = f->chirp[2 * t];
        b[2 * t + 1] = b[2 * (m - t) + 1] = -f->chirp[2 * t + 1];
    }
    radix2(b, m, f->tw);
    for (int64_t i = 0; i < 2 * m; i++) b[i] /= (double)m;
    return 0;
}

/* In place: x (n complex values) becomes sum_t x[t] exp(-+2 pi i k t / n),
 * the sign + when inverse; not normalized. */
static void fft_run(fft *f, double *x, int inverse) {
    int64_t n = f->n;
    if (inverse)
        for (int64_t i = 0; i < n; i++) x[2 * i + 1] = -x[2 * i + 1];
    if (f->mode == FFT_RADIX2) {
        radix2(x, n, f->tw);
    } else if (f->mode == FFT_DIRECT) {
        double *y = f->work;
        for (int64_t k = 0; k < n; k++) {
            double re = 0, im = 0;
            for (int64_t t = 0; t < n; t++) {
                const double *w = f->tw + 2 * ((k * t) % n);
                re += x[2 * t] * w[0] - x[2 * t + 1] * w[1];
                im += x[2 * t] * w[1] + x[2 * t + 1] * w[0];
            }
            y[2 * k] = re, y[2 * k + 1] = im;
        }
        memcpy(x, y, (size_t)n * 2 * sizeof(double));
    } else {
        /* X[k] = c[k] * sum_t (x[t] c[t]) conj(c[k - t]): a circular
         * convolution of length m, done with two FFTs. */
        int64_t m = f->m;
        double *w = f->work;
        const double *c = f->chirp, *b = f->filt;
        for (int64_t t = 0; t < n; t++) {
            w[2 * t] = x[2 * t] * c[2 * t] - x[2 * t + 1] * c[2 * t + 1];
            w[2 * t + 1] = x[2 * t] * c[2 * t + 1] + x[2 * t + 1] * c[2 * t];
        }
        memset(w + 2 * n, 0, (size_t)(m - n) * 2 * sizeof(double));
        radix2(w, m, f->tw);
        for (int64_t i = 0; i < m; i++) { /* the product, conjugated for the inverse FFT */
            double re = w[2 * i] * b[2 * i] - w[2 * i + 1] * b[2 * i + 1];
            double im = w[2 * i] * b[2 * i + 1] + w[2 * i + 1] * b[2 * i];
            w[2 * i] = re, w[2 * i + 1] = -im;
        }
        radix2(w, m, f->tw);
        for (int64_t k = 0; k < n; k++) {
            double re = w[2 * k], im = -w[2 * k + 1];
            x[2 * k] = re * c[2 * k] - im * c[2 * k + 1];
            x[2 * k + 1] = re * c[2 * k + 1] + im * c[2 * k];
        }
    }
    if (inverse)
        for (int64_t i = 0; i < n; i++) x[2 * i + 1] = -x[2 * i + 1];
}

/* A scalar (or one-element 1-D) int32/int64 input i into *v: 0, or the
 * status after gwr_k_fail. */
static gwr_status scalar_int(gwr_kctx *k, int i, const char *name, int64_t *v) {
    const gwr_value *x = i < k->nin ? k->in[i] : NULL;
    if (!x) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s (input %d) is missing", name, i);
    if ((x->dtype != GWR_INT32 && x->dtype != GWR_INT64) || x->rank > 1 || x->numel != 1)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s (input %d) must be an int32 or int64 scalar", name, i);
    *v = gwr_v_get_i64(x, 0);
    return GWR_OK;
}

/* A 0/1 attribute into *v. */
static gwr_status flag(gwr_kctx *k, const char *name, int64_t def, int *v) {
    int64_t a = gwr_k_int(k, name, def);
    if (a != 0 && a != 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s must be 0 or 1, not %lld", name, (long long)a);
    *v = (int)a;
    return GWR_OK;
}

/* ---- DFT ----------------------------------------------------------------- */

/* The DFT axis: the attribute (opset 17 to 19) or input 2 (opset 20 on;
 * a model that imports no opset takes either), normalized into [0, r-2]. */
static gwr_status dft_axis(gwr_kctx *k, int rank, int *axis) {
    int newest = k->opset == 0 || k->opset >= 20;
    const gwr_value *ain = k->nin > 2 ? k->in[2] : NULL;
    int64_t a, attr;
    int has_attr = gwr_layer_get_int(k->layer, "axis", &attr) == GWR_OK;
    if (ain && !newest)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis is an input only from opset 20 (the model imports opset %lld)",
                          (long long)k->opset);
    if (has_attr && k->opset >= 20)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis is an input from opset 20 on, not an attribute");
    if (ain && has_attr) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis is given both as an attribute and as input 2");
    if (ain) {
        gwr_status s = scalar_int(k, 2, "axis", &a);
        if (s) return s;
    } else {
        a = has_attr ? attr : newest ? -2 : 1;
    }
    if (!((a >= 0 && a <= rank - 2) || (a >= -rank && a <= -2)))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG,
                          "axis %lld is out of range for an input of rank %d (the last dim holds the real and imaginary "
                          "parts)",
                          (long long)a, rank);
    *axis = (int)(a < 0 ? a + rank : a);
    return GWR_OK;
}

static gwr_status k_dft(gwr_kctx *k) {
    const gwr_value *x = k->nin > 0 ? k->in[0] : NULL;
    if (!x) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "needs an input");
    if (!gwr_ku_is_float(x->dtype))
        return gwr_k_fail(k, GWR_ERR_TYPE, "input must be float16, float, double or bfloat16, not %s",
                          gwr_dtype_name(x->dtype));
    int r = x->rank;
    if (r < 2) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "input must be [batch, ..., signal_dim, 1 or 2], not rank %d", r);
    int64_t c = x->dims[r - 1];
    if (c != 1 && c != 2)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "the last dim of the input must be 1 (real) or 2 (complex), not %lld",
                          (long long)c);
    int inverse = 0, onesided = 0, axis = 0;
    gwr_status s;
    if ((s = flag(k, "inverse", 0, &inverse)) || (s = flag(k, "onesided", 0, &onesided)) || (s = dft_axis(k, r, &axis)))
        return s;
    int irfft = inverse && onesided;
    if (onesided && !inverse && c == 2)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "onesided needs a real input (last dim 1): a complex signal has no "
                                                  "one-sided spectrum");
    if (irfft && c == 1)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "an inverse onesided DFT (IRFFT) needs a complex input (last dim 2)");
    int64_t len = x->dims[axis], n;
    if (k->nin > 1 && k->in[1]) {
        if ((s = scalar_int(k, 1, "dft_length", &n))) return s;
        if (n < 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "dft_length must be positive, not %lld", (long long)n);
    } else {
        n = irfft ? 2 * (len - 1) : len;
        if (n < 1)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "axis %d has %lld points: no DFT length to infer", axis,
                              (long long)len);
    }
    if (n > DFT_MAX)
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "dft_length %lld is over the limit of %lld", (long long)n,
                          (long long)DFT_MAX);
    int64_t olen = onesided && !inverse ? n / 2 + 1 : n, oc = irfft ? 1 : 2;
    int64_t od[GWR_MAX_RANK];
    memcpy(od, x->dims, (size_t)r * sizeof *od);
    od[axis] = olen, od[r - 1] = oc;
    if (gwr_shape_numel(r, od) < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "the output shape overflows");
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++) outer *= od[i];
    for (int i = axis + 1; i < r - 1; i++) inner *= od[i];
    /* the points read: IRFFT reads the n/2 + 1 non-redundant bins */
    int64_t take = irfft ? n / 2 + 1 : n;
    if (take > len) take = len;

    gwr_value *y = gwr_k_out(k, 0, x->dtype, r, od);
    if (!y) return GWR_ERR_NOMEM;
    fft f;
    double *buf = gwr_malloc((size_t)n * 2 * sizeof(double));
    if (!buf || fft_init(&f, n)) {
        gwr_free(buf);
        return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory for a DFT of %lld points", (long long)n);
    }
    double scale = inverse ? 1.0 / (double)n : 1.0;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            memset(buf, 0, (size_t)n * 2 * sizeof(double));
            for (int64_t t = 0; t < take; t++) {
                int64_t at = ((o * len + t) * inner + j) * c;
                buf[2 * t] = gwr_v_get_f64(x, at);
                if (c == 2) buf[2 * t + 1] = gwr_v_get_f64(x, at + 1);
            }
            if (irfft) /* the Hermitian rest of the spectrum */
                for (int64_t t = n / 2 + 1; t < n; t++) buf[2 * t] = buf[2 * (n - t)], buf[2 * t + 1] = -buf[2 * (n - t) + 1];
            fft_run(&f, buf, inverse);
            for (int64_t q = 0; q < olen; q++) {
                int64_t at = ((o * olen + q) * inner + j) * oc;
                gwr_v_set_f64(y, at, buf[2 * q] * scale);
                if (oc == 2) gwr_v_set_f64(y, at + 1, buf[2 * q + 1] * scale);
            }
        }
    fft_free(&f);
    gwr_free(buf);
    return GWR_OK;
}

/* ---- STFT ---------------------------------------------------------------- */

/* signal [batch, length, 1 or 2] -> [batch, frames, bins, 2]: frame f is
 * the DFT of signal[f * step + t] * window[t], t < frame_length. */
static gwr_status k_stft(gwr_kctx *k) {
    const gwr_value *x = k->nin > 0 ? k->in[0] : NULL, *win = k->nin > 2 ? k->in[2] : NULL;
    if (!x) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "needs a signal");
    if (!gwr_ku_is_float(x->dtype))
        return gwr_k_fail(k, GWR_ERR_TYPE, "signal must be float16, float, double or bfloat16, not %s",
                          gwr_dtype_name(x->dtype));
    if (x->rank != 3 || (x->dims[2] != 1 && x->dims[2] != 2))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "signal must be [batch, length, 1 or 2], not rank %d%s", x->rank,
                          x->rank == 3 ? " with a last dim other than 1 or 2" : "");
    int64_t c = x->dims[2], len = x->dims[1], batch = x->dims[0], step, fl = -1;
    gwr_status s;
    if ((s = scalar_int(k, 1, "frame_step", &step))) return s;
    if (step < 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "frame_step must be positive, not %lld", (long long)step);
    if (win) {
        if (win->dtype != x->dtype)
            return gwr_k_fail(k, GWR_ERR_TYPE, "window must be %s like the signal, not %s", gwr_dtype_name(x->dtype),
                              gwr_dtype_name(win->dtype));
        if (win->rank != 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "window must be 1-D, not rank %d", win->rank);
    }
    if (k->nin > 3 && k->in[3]) {
        if ((s = scalar_int(k, 3, "frame_length", &fl))) return s;
        if (fl < 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "frame_length must be positive, not %lld", (long long)fl);
        if (win && win->dims[0] != fl)
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "the window has %lld points but frame_length is %lld",
                              (long long)win->dims[0], (long long)fl);
    } else {
        fl = win ? win->dims[0] : len; /* neither: one frame of the whole signal */
        if (fl < 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "the %s is empty: no frame length", win ? "window" : "signal");
    }
    if (fl > len)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "frame_length %lld is longer than the signal (%lld samples)",
                          (long long)fl, (long long)len);
    if (fl > DFT_MAX)
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "frame_length %lld is over the limit of %lld", (long long)fl,
                          (long long)DFT_MAX);
    int onesided = 1;
    if ((s = flag(k, "onesided", 1, &onesided))) return s;
    if (onesided && c == 2)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "onesided needs a real signal (last dim 1): set onesided=0 for a "
                                                  "complex one");
    int64_t frames = 1 + (len - fl) / step, bins = onesided ? fl / 2 + 1 : fl;
    int64_t od[4] = {batch, frames, bins, 2};
    if (gwr_shape_numel(4, od) < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "the output shape overflows");
    gwr_value *y = gwr_k_out(k, 0, x->dtype, 4, od);
    if (!y) return GWR_ERR_NOMEM;
    fft f;
    double *buf = gwr_malloc((size_t)fl * 2 * sizeof(double)), *w = gwr_malloc((size_t)fl * sizeof(double));
    if (!buf || !w || fft_init(&f, fl)) {
        gwr_free(buf), gwr_free(w);
        return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory for frames of %lld points", (long long)fl);
    }
    for (int64_t t = 0; t < fl; t++) w[t] = win ? gwr_v_get_f64(win, t) : 1.0;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t fr = 0; fr < frames; fr++) {
            for (int64_t t = 0; t < fl; t++) {
                int64_t at = (b * len + fr * step + t) * c;
                buf[2 * t] = gwr_v_get_f64(x, at) * w[t];
                buf[2 * t + 1] = c == 2 ? gwr_v_get_f64(x, at + 1) * w[t] : 0;
            }
            fft_run(&f, buf, 0);
            for (int64_t q = 0; q < bins; q++) {
                int64_t at = ((b * frames + fr) * bins + q) * 2;
                gwr_v_set_f64(y, at, buf[2 * q]);
                gwr_v_set_f64(y, at + 1, buf[2 * q + 1]);
            }
        }
    fft_free(&f);
    gwr_free(buf), gwr_free(w);
    return GWR_OK;
}

/* ---- MelWeightMatrix ----------------------------------------------------- */

/* A float scalar input into *v. */
static gwr_status scalar_float(gwr_kctx *k, int i, const char *name, double *v) {
    const gwr_value *x = i < k->nin ? k->in[i] : NULL;
    if (!x) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s (input %d) is missing", name, i);
    if (!gwr_ku_is_float(x->dtype) || x->rank > 1 || x->numel != 1)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s (input %d) must be a float scalar", name, i);
    *v = gwr_v_get_f64(x, 0);
    if (!isfinite(*v)) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "%s is not finite", name);
    return GWR_OK;
}

/* a // b of Python for floats (b > 0): floor of the exact quotient. */
static double py_floordiv(double a, double b) {
    double mod = fmod(a, b), div = (a - mod) / b;
    if (mod != 0 && (mod < 0) != (b < 0)) div -= 1;
    double fl = floor(div);
    return div - fl > 0.5 ? fl + 1 : fl;
}

static double hz_to_mel(double hz) { return 2595.0 * log10(1.0 + hz / 700.0); }

/* [dft_length/2 + 1, num_mel_bins]: num_mel_bins triangles with corners
 * at num_mel_bins + 2 points equally spaced in mel from lower_edge_hertz
 * (spaced over (high - low) / (num_mel_bins + 2), as ONNX's reference
 * does), each mapped to the spectrogram bin floor((dft_length + 1) * hz /
 * sample_rate); peaks of 1. */
static gwr_status k_mel_weight_matrix(gwr_kctx *k) {
    int64_t nmel, dftlen, rate;
    double lo, hi;
    gwr_status s;
    if ((s = scalar_int(k, 0, "num_mel_bins", &nmel)) || (s = scalar_int(k, 1, "dft_length", &dftlen)) ||
        (s = scalar_int(k, 2, "sample_rate", &rate)) || (s = scalar_float(k, 3, "lower_edge_hertz", &lo)) ||
        (s = scalar_float(k, 4, "upper_edge_hertz", &hi)))
        return s;
    if (nmel < 1 || nmel > ((int64_t)1 << 20))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "num_mel_bins %lld is out of range [1, 2^20]", (long long)nmel);
    if (dftlen < 1 || dftlen > ((int64_t)1 << 30))
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "dft_length %lld is out of range [1, 2^30]", (long long)dftlen);
    if (rate < 1) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "sample_rate must be positive, not %lld", (long long)rate);
    if (lo < 0) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "lower_edge_hertz %g is negative", lo);
    if (lo > hi)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "lower_edge_hertz %g is above upper_edge_hertz %g", lo, hi);
    gwr_dtype ot = (gwr_dtype)gwr_k_int(k, "output_datatype", GWR_FLOAT32);
    switch (ot) {
    case GWR_UINT8: case GWR_UINT16: case GWR_UINT32: case GWR_UINT64: case GWR_INT8: case GWR_INT16:
    case GWR_INT32: case GWR_INT64: case GWR_FLOAT16: case GWR_FLOAT32: case GWR_FLOAT64: case GWR_BFLOAT16: break;
    default:
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "output_datatype %d is not an integer or float type", (int)ot);
    }
    int64_t nbins = dftlen / 2 + 1;
    if (nbins * nmel > ((int64_t)1 << 32))
        return gwr_k_fail(k, GWR_ERR_UNSUPPORTED, "a %lld x %lld matrix is too large", (long long)nbins, (long long)nmel);
    int64_t *edge = gwr_malloc((size_t)(nmel + 2) * sizeof *edge);
    if (!edge) return gwr_k_fail(k, GWR_ERR_NOMEM, "out of memory");
    double lo_mel = hz_to_mel(lo), mel_step = (hz_to_mel(hi) - lo_mel) / (double)(nmel + 2);
    for (int64_t i = 0; i < nmel + 2; i++) {
        double hz = 700.0 * (pow(10.0, ((double)i * mel_step + lo_mel) / 2595.0) - 1.0);
        double bin = py_floordiv((double)(dftlen + 1) * hz, (double)rate);
        /* the last corner only bounds a half-open range */
        if (!(bin >= 0 && bin < (double)(i == nmel + 1 ? nbins + 1 : nbins))) {
            gwr_free(edge);
            return gwr_k_fail(k, GWR_ERR_INVALID_ARG,
                              "upper_edge_hertz %g reaches past the %lld bins of a %lld-point DFT at sample_rate %lld",
                              hi, (long long)nbins, (long long)dftlen, (long long)rate);
        }
        edge[i] = (int64_t)bin;
    }
    int64_t od[2] = {nbins, nmel};
    gwr_value *y = gwr_k_out(k, 0, ot, 2, od);
    if (!y) {
        gwr_free(edge);
        return GWR_ERR_NOMEM;
    }
    memset(y->data, 0, y->nbytes); /* all-zero bytes are 0 in every allowed dtype */
    for (int64_t i = 0; i < nmel; i++) {
        int64_t left = edge[i], center = edge[i + 1], right = edge[i + 2];
        if (center == left)
            gwr_v_set_f64(y, center * nmel + i, 1.0);
        else
            for (int64_t j = left; j <= center; j++)
                gwr_v_set_f64(y, j * nmel + i, (double)(j - left) / (double)(center - left));
        for (int64_t j = center; j < right; j++)
            gwr_v_set_f64(y, j * nmel + i, (double)(right - j) / (double)(right - center));
    }
    gwr_free(edge);
    return GWR_OK;
}

/* ---- windows ------------------------------------------------------------- */

/* w[n] = a0 - a1 cos(2 pi n / D) + a2 cos(4 pi n / D), D = N (periodic) or
 * N - 1 (symmetric). */
static gwr_status window(gwr_kctx *k, double a0, double a1, double a2) {
    int64_t size;
    if (gwr_k_in_ints(k, 0, &size, 1) != 1) return GWR_ERR_INVALID_ARG;
    if (size < 0 || size > ((int64_t)1 << 31)) return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "size %lld is out of range", (long long)size);
    gwr_dtype ot = (gwr_dtype)gwr_k_int(k, "output_datatype", GWR_FLOAT32);
    if (!gwr_dtype_is_valid(ot) || ot == GWR_STRING || ot == GWR_UNDEFINED || gwr_dtype_bits(ot) < 8 || ot >= GWR_FLOAT8E4M3FN)
        return gwr_k_fail(k, GWR_ERR_INVALID_ARG, "output_datatype %d is not a numeric type", (int)ot);
    double d = gwr_k_int(k, "periodic", 1) ? (double)size : (double)size - 1;
    gwr_value *y = gwr_k_out(k, 0, ot, 1, &size);
    if (!y) return GWR_ERR_NOMEM;
    const double pi = 3.14159265358979323846;
    for (int64_t i = 0; i < size; i++) {
        double t = d > 0 ? 2.0 * pi * (double)i / d : 0;
        gwr_v_set_f64(y, i, a0 - a1 * cos(t) + a2 * cos(2 * t));
    }
    return GWR_OK;
}

static gwr_status k_hann(gwr_kctx *k) { return window(k, 0.5, 0.5, 0); }
static gwr_status k_hamming(gwr_kctx *k) { return window(k, 25.0 / 46.0, 21.0 / 46.0, 0); }
static gwr_status k_blackman(gwr_kctx *k) { return window(k, 0.42, 0.5, 0.08); }

const gwr_kernel_entry gwr_kernels_signal[] = {
    GWR_KERNEL(DFT, k_dft),
    GWR_KERNEL(STFT, k_stft),
    GWR_KERNEL(MelWeightMatrix, k_mel_weight_matrix),
    GWR_KERNEL(HannWindow, k_hann),
    GWR_KERNEL(HammingWindow, k_hamming),
    GWR_KERNEL(BlackmanWindow, k_blackman),
    {.fn = NULL},
};
