/* smalltype.c - float8 / float4 / e8m0 and 4 / 2-bit integer elements to
 * and from double (smalltype.h). The minifloats are described by their
 * exponent and mantissa widths, bias and how they spell NaN and infinity
 * (the tables of ONNX's Cast spec and docs/technical/float8.md); rounding
 * is done on the type's grid in double, where every step is exact. */
#include "util/smalltype.h"

#include <math.h>

enum { SPEC_NONE, SPEC_FN, SPEC_FNUZ, SPEC_IEEE };

typedef struct mini {
    int ebits, mbits, bias, special;
} mini;

static int mini_of(gwr_dtype t, mini *f) {
    switch (t) {
    case GWR_FLOAT8E4M3FN: *f = (mini){4, 3, 7, SPEC_FN}; return 1;
    case GWR_FLOAT8E4M3FNUZ: *f = (mini){4, 3, 8, SPEC_FNUZ}; return 1;
    case GWR_FLOAT8E5M2: *f = (mini){5, 2, 15, SPEC_IEEE}; return 1;
    case GWR_FLOAT8E5M2FNUZ: *f = (mini){5, 2, 16, SPEC_FNUZ}; return 1;
    case GWR_FLOAT4E2M1: *f = (mini){2, 1, 1, SPEC_NONE}; return 1;
    default: return 0;
    }
}

int gwr_small_is_float(gwr_dtype t) {
    mini f;
    return mini_of(t, &f) || t == GWR_FLOAT8E8M0;
}

int gwr_small_is_small(gwr_dtype t) {
    return gwr_small_is_float(t) || t == GWR_INT4 || t == GWR_UINT4 || t == GWR_INT2 || t == GWR_UINT2;
}

/* The largest finite value's exponent field and mantissa. */
static void mini_max(const mini *f, unsigned *e, unsigned *m) {
    unsigned em = (1u << f->ebits) - 1, mm = (1u << f->mbits) - 1;
    switch (f->special) {
    case SPEC_FN: *e = em, *m = mm - 1; break; /* all ones is NaN */
    case SPEC_IEEE: *e = em - 1, *m = mm; break; /* the top exponent is inf / NaN */
    default: *e = em, *m = mm; break;
    }
}

static double mini_value(const mini *f, unsigned e, unsigned m) {
    if (e == 0) return ldexp((double)m, 1 - f->bias - f->mbits);
    return ldexp((double)((1u << f->mbits) | m), (int)e - f->bias - f->mbits);
}

double gwr_small_decode(gwr_dtype t, unsigned bits) {
    mini f;
    if (mini_of(t, &f)) {
        int w = 1 + f.ebits + f.mbits;
        bits &= (1u << w) - 1;
        unsigned s = bits >> (w - 1), e = (bits >> f.mbits) & ((1u << f.ebits) - 1), m = bits & ((1u << f.mbits) - 1);
        unsigned em = (1u << f.ebits) - 1, mm = (1u << f.mbits) - 1;
        if (f.special == SPEC_FNUZ && bits == 1u << (w - 1)) return NAN;
        if (f.special == SPEC_FN && e == em && m == mm) return s ? -NAN : NAN;
        if (f.special == SPEC_IEEE && e == em) return m ? (s ? -NAN : NAN) : (s ? -INFINITY : INFINITY);
        double v = mini_value(&f, e, m);
        return s ? -v : v;
    }
    switch (t) {
    case GWR_FLOAT8E8M0: return (bits & 0xff) == 0xff ? NAN : ldexp(1.0, (int)(bits & 0xff) - 127);
    case GWR_UINT4: return bits & 0xf;
    case GWR_INT4: return (double)((int)(bits & 0xf) - (bits & 0x8 ? 16 : 0));
    case GWR_UINT2: return bits & 0x3;
    case GWR_INT2: return (double)((int)(bits & 0x3) - (bits & 0x2 ? 4 : 0));
    default: return NAN;
    }
}

static unsigned mini_nan(const mini *f, unsigned s) {
    int w = 1 + f->ebits + f->mbits;
    switch (f->special) {
    case SPEC_FNUZ: return 1u << (w - 1);
    case SPEC_FN: return (s << (w - 1)) | ((1u << (w - 1)) - 1);
    case SPEC_IEEE: return (s << (w - 1)) | (((1u << f->ebits) - 1) << f->mbits) | (1u << (f->mbits - 1));
    default: return 1u << (w - 1); /* float4 has no NaN: -0, as onnx's test data has it */
    }
}

static unsigned mini_encode(const mini *f, double x, int saturate) {
    int w = 1 + f->ebits + f->mbits;
    unsigned s = signbit(x) ? 1u : 0u, emax, mmax;
    mini_max(f, &emax, &mmax);
    unsigned maxbits = (s << (w - 1)) | (emax << f->mbits) | mmax;
    if (isnan(x)) return mini_nan(f, s);
    double a = fabs(x);
    /* on the grid: the quantum of a's binade (the subnormal one below the
     * smallest normal), round half to even (rint in the default mode) */
    int ex;
    (void)frexp(a, &ex); /* a = frac * 2^ex, frac in [0.5, 1) */
    int e_unb = ex - 1;
    if (e_unb < 1 - f->bias) e_unb = 1 - f->bias;
    double r = isinf(a) ? a : ldexp(rint(ldexp(a, f->mbits - e_unb)), e_unb - f->mbits);
    double maxv = mini_value(f, emax, mmax);
    if (r > maxv) {
        if (saturate || f->special == SPEC_NONE) return maxbits;
        if (f->special == SPEC_IEEE) return (s << (w - 1)) | (((1u << f->ebits) - 1) << f->mbits);
        return mini_nan(f, s);
    }
    if (r == 0) return f->special == SPEC_FNUZ ? 0 : s << (w - 1);
    unsigned e, m;
    double lowest_normal = ldexp(1.0, 1 - f->bias);
    if (r < lowest_normal) {
        e = 0, m = (unsigned)ldexp(r, f->bias - 1 + f->mbits);
    } else {
        (void)frexp(r, &ex);
        e = (unsigned)(ex - 1 + f->bias);
        m = (unsigned)(ldexp(r, f->mbits - (ex - 1))) - (1u << f->mbits);
    }
    return (s << (w - 1)) | (e << f->mbits) | m;
}

static unsigned e8m0_encode(double x, int saturate, int round_mode) {
    /* Negative values are unspecified in the spec: their magnitude is used. */
    if (isnan(x)) return 0xff;
    double a = fabs(x);
    if (isinf(a)) return saturate ? 0xfe : 0xff;
    if (a == 0) return saturate ? 0x00 : 0xff;
    int ex;
    double frac = frexp(a, &ex) * 2; /* a = frac * 2^(ex - 1), frac in [1, 2) */
    int e = ex - 1;
    if ((round_mode == GWR_E8M0_UP && frac > 1) || (round_mode == GWR_E8M0_NEAREST && frac >= 1.5)) e++;
    int b = e + 127;
    if (b > 254) return saturate ? 0xfe : 0xff;
    if (b < 0) return saturate ? 0x00 : 0xff;
    return (unsigned)b;
}

static unsigned int_bits(gwr_dtype t) { return t == GWR_INT4 || t == GWR_UINT4 ? 4 : 2; }

unsigned gwr_small_encode_int(gwr_dtype t, int64_t x, int saturate, int round_mode) {
    if (t == GWR_INT4 || t == GWR_UINT4 || t == GWR_INT2 || t == GWR_UINT2)
        return (unsigned)((uint64_t)x & ((1u << int_bits(t)) - 1));
    return gwr_small_encode(t, (double)x, saturate, round_mode);
}

unsigned gwr_small_encode(gwr_dtype t, double x, int saturate, int round_mode) {
    mini f;
    if (mini_of(t, &f)) return mini_encode(&f, x, saturate);
    if (t == GWR_FLOAT8E8M0) return e8m0_encode(x, saturate, round_mode);
    if (t == GWR_INT4 || t == GWR_UINT4 || t == GWR_INT2 || t == GWR_UINT2) {
        /* truncation toward zero; NaN and values past int64 give 0 */
        int64_t i = x != x || fabs(x) >= 9.2e18 ? 0 : (int64_t)x;
        return gwr_small_encode_int(t, i, saturate, round_mode);
    }
    return 0;
}
