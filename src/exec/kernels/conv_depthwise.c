/* conv_depthwise.c - direct depthwise convolution, float32: one input
 * plane correlated with one k x k window, no im2col.
 *
 * A depthwise layer's GEMM has one output row (M = 1 per group), so
 * im2col + GEMM copies each input element k*k times to do k*k
 * multiply-adds with it: the copy costs as much as the arithmetic. Here
 * each output is the k*k taps summed straight from the input plane.
 *
 * The plane is first staged into a buffer whose border stays zero (the
 * caller's, zeroed once per layer): the pads become zeros, so every
 * output runs the same unchecked loop, and the rows get slack at the end
 * so that a row of fewer than eight outputs still reads whole vectors.
 * For stride 2 the staging splits each row into its even columns, then
 * its odd ones: a tap of even column offset reads the evens, an odd one
 * the odds, both at consecutive addresses, so the inner loop has no
 * shuffles (the split is done once per input instead of once per tap).
 *
 * Outputs go eight at a time (one AVX2 register; two SSE2 / NEON ones on
 * the portable path) for two output rows per pass, so each staged input
 * row loaded serves the taps of both rows. The last vector of a row (and
 * the last pair of rows) overlaps the one before instead of running a
 * scalar tail: the overlapped outputs are computed again, to the same
 * bits. The taps are summed in one order (window row, then column, from
 * 0) on every path; the AVX2 path fuses each multiply-add (FMA, one
 * rounding), the portable one multiplies then adds, so the two differ in
 * the last bits (by the sums' rounding, no more). Only the sums fuse:
 * the epilogue's a * y + b stays two roundings as in act_rows.c.
 *
 * The bias and the common CNN activations (Relu, Clip, HardSwish) run
 * on the vectors before they are stored,
 * with act_rows.c's expressions (same bits as the separate layers); Z and
 * the activations that need exp stay with the caller's pass over the
 * plane. */
#include <stdint.h>
#include <string.h>

/* fp-contract=off (the exec room is built with fp-contract=fast): the
 * epilogue must round as act_rows.c's rows do; the sums' FMAs are written
 * out (__builtin_fmaf), so they stay fused. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "fp-contract=off")
#endif
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#include "exec/kernels/cnn_isa.h"
#include "exec/kernels/kernel_util.h"

#include "exec/kernels/vec8.h"

#define DW_INLINE V8_INLINE

/* ---- the CPU check ------------------------------------------------------- */

static int force_portable;

void gwr_ku_cnn_force_portable(int on) { force_portable = on != 0; }

int gwr_ku_cnn_avx2(void) {
#ifdef GWR_VEC8_X86
    return !force_portable && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

/* ---- geometry and staging ------------------------------------------------- */

int gwr_ku_dw_supports(const gwr_ku_window *g) {
    if (g->nsp != 2 || g->k[1] != g->k[2] || (g->k[1] != 3 && g->k[1] != 5)) return 0;
    if (g->s[1] != g->s[2] || (g->s[1] != 1 && g->s[1] != 2)) return 0;
    return g->d[1] == 1 && g->d[2] == 1;
}

/* The staged plane: Hp rows of ld floats, the input at row pb[1], column
 * pb[2] of the padded plane; stride 2 holds padded column j at j / 2,
 * plus `odd` for odd j. */
typedef struct dwstage {
    int64_t Hp, ld, odd;
} dwstage;

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static void stage_geom(const gwr_ku_window *g, dwstage *s) {
    int64_t K = g->k[2], Wp = g->in[2] + g->pb[2] + g->pe[2];
    int64_t span = max64(g->out[2], 8); /* outputs the vectors of a row cover */
    s->Hp = g->in[1] + g->pb[1] + g->pe[1];
    if (g->s[2] == 1) {
        s->odd = 0;
        s->ld = max64(Wp, span + K - 1);
    } else {
        s->odd = max64((Wp + 1) / 2, span + (K - 1) / 2);
        s->ld = 2 * s->odd;
    }
}

int64_t gwr_ku_dw_scratch(const gwr_ku_window *g) {
    dwstage s;
    stage_geom(g, &s);
    return s.Hp * s.ld;
}

/* n floats from src to dst: whole vectors, the last one overlapping
 * (under eight, one at a time); rows are short, a memcpy call costs more. */
DW_INLINE void copy_row(const float *src, int64_t n, float *dst) {
    if (n < 8) {
        for (int64_t i = 0; i < n; i++) dst[i] = src[i];
        return;
    }
    for (int64_t i = 0; i < n; i += 8) {
        int64_t j = i + 8 <= n ? i : n - 8;
        st8(dst + j, ld8(src + j));
    }
}

/* Row r of x into staged row dst: its element i to padded column pl + i
 * (stride 1), or split by column parity (stride 2), sixteen inputs a
 * step, the last step overlapping the one before at an even offset (so
 * that evens stay evens). */
DW_INLINE void stage_row(const float *src, int64_t W, int64_t pl, const dwstage *s, int S, float *dst) {
    if (S == 1) {
        copy_row(src, W, dst + pl);
        return;
    }
    float *de = dst + ((pl & 1) ? s->odd : 0) + pl / 2;        /* src's even elements */
    float *dd = dst + ((pl & 1) ? 0 : s->odd) + (pl + 1) / 2;  /* its odd ones */
    if (W < 16) {
        for (int64_t i = 0; i < W; i++) (i & 1 ? dd : de)[i / 2] = src[i];
        return;
    }
    for (int64_t i = 0; i < W; i += 16) {
        int64_t j = i + 16 <= W ? i : (W - 16) & ~(int64_t)1;
        v8f a = ld8(src + j), b = ld8(src + j + 8);
        st8(de + j / 2, evens8(a, b));
        st8(dd + j / 2, odds8(a, b));
    }
    if (W & 1) de[W / 2] = src[W - 1]; /* odd W: the last step stops one short */
}

/* ---- the epilogue ----------------------------------------------------------- */

/* y + b, then the activation, on eight outputs (act_rows.c's expressions
 * as lane masks: a NaN fails every compare and stays NaN). */
typedef struct dwepi {
    int kind, bias;
    v8f b, A, B;
} dwepi;

DW_INLINE v8f sel(v8i m, v8f a, v8f b) { return (v8f)((m & (v8i)a) | (~m & (v8i)b)); }
DW_INLINE v8f clamp01(v8f t) {
    const v8f zero = {0}, one = {1, 1, 1, 1, 1, 1, 1, 1};
    return sel(t < zero, zero, sel(t > one, one, t));
}

/* ACT: a constant after inlining, so each kernel has its activation's
 * code alone (a switch per vector cost more than the pass it saves). */
DW_INLINE v8f epi8(v8f y, const dwepi *e, const int ACT) {
    const v8f zero = {0};
    if (e->bias) y = y + e->b;
    switch (ACT) {
    case GWR_KU_ACT_RELU: return sel(y < zero, zero, y);
    case GWR_KU_ACT_CLIP: {
        v8f v = sel(y < e->A, e->A, y);
        return sel(v > e->B, e->B, v);
    }
    case GWR_KU_ACT_HSWISH: {
        const float c = (float)(1.0 / 6.0);
        const v8f sixth = {c, c, c, c, c, c, c, c}, half = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
        return y * clamp01(sixth * y + half);
    }
    default: return y;
    }
}

int gwr_ku_dw_epi_supports(const gwr_ku_act *a) {
    return !a || a->kind == GWR_KU_ACT_NONE || a->kind == GWR_KU_ACT_RELU || a->kind == GWR_KU_ACT_CLIP ||
           a->kind == GWR_KU_ACT_HSWISH;
}

/* ---- the kernel ------------------------------------------------------------ */

/* acc + v w: fused (one rounding, __builtin_fmaf lane by lane, which
 * GCC and clang compile to one vfmadd where the function has FMA) when F,
 * else a multiply then an add. A constant after inlining. */
DW_INLINE v8f madd8(v8f acc, v8f v, v8f w, const int F) {
    if (!F) return acc + v * w;
    v8f r;
    for (int l = 0; l < 8; l++) r[l] = __builtin_fmaf(v[l], w[l], acc[l]);
    return r;
}

/* Output rows [oy, oy + R) of y (OW wide) from the staged plane: vectors
 * of eight outputs, the last one overlapping; a row under eight wide
 * stores a whole vector into the rows after it (rows run in order and
 * write theirs later) but at the plane's end, which goes through a
 * buffer. */
DW_INLINE void dw_rows(const float *pad, const dwstage *s, const v8f *wv, const dwepi *e, int64_t oy, int64_t OH, int64_t OW, float *y,
                       const int K, const int S, const int R, const int ACT, const int F) {
    const int NI = (R - 1) * S + K; /* staged rows the R output rows read */
    const float *in[8];
    for (int i = 0; i < NI; i++) in[i] = pad + (oy * S + i) * s->ld;
    for (int64_t o = 0; o < OW; o += 8) {
        int64_t o0 = o + 8 <= OW ? o : OW >= 8 ? OW - 8 : 0;
        v8f acc[2] = {{0}, {0}};
#pragma GCC unroll 8
        for (int i = 0; i < NI; i++) {
#pragma GCC unroll 5
            for (int kx = 0; kx < K; kx++) {
                v8f v = ld8(S == 1 ? in[i] + o0 + kx : in[i] + (kx & 1 ? s->odd : 0) + o0 + kx / 2);
                for (int r = 0; r < R; r++) {
                    int ky = i - r * S;
                    if (ky >= 0 && ky < K) acc[r] = madd8(acc[r], v, wv[ky * K + kx], F);
                }
            }
        }
        for (int r = 0; r < R; r++) {
            float *yr = y + (oy + r) * OW;
            acc[r] = epi8(acc[r], e, ACT);
            if (OW >= 8 || (oy + r) * OW + 8 <= OH * OW) {
                st8(yr + o0, acc[r]); /* under eight: into the next rows, written after it */
            } else {
                float t[8];
                st8(t, acc[r]);
                for (int64_t i = 0; i < OW; i++) yr[i] = t[i];
            }
        }
    }
}

/* Every output row of the staged plane, two at a time (the last pair
 * overlapping the one before). */
DW_INLINE void dw_plane(const float *w, const gwr_ku_window *g, const dwstage *s, const dwepi *e, const float *pad, float *y, const int K,
                        const int S, const int ACT, const int F) {
    int64_t OH = g->out[1], OW = g->out[2];
    v8f wv[25];
    for (int t = 0; t < K * K; t++) {
        float c = w[t];
        wv[t] = (v8f){c, c, c, c, c, c, c, c};
    }
    if (OH < 2) {
        dw_rows(pad, s, wv, e, 0, OH, OW, y, K, S, 1, ACT, F);
        return;
    }
    for (int64_t oy = 0; oy < OH; oy += 2) dw_rows(pad, s, wv, e, oy + 2 <= OH ? oy : OH - 2, OH, OW, y, K, S, 2, ACT, F);
}

/* Stages x, then computes the plane. */
DW_INLINE void dw_stage_plane(const float *x, const float *w, const gwr_ku_window *g, const dwstage *s, const dwepi *e, float *pad, float *y,
                              const int K, const int S, const int ACT, const int F) {
    int64_t H = g->in[1], W = g->in[2];
    for (int64_t r = 0; r < H; r++) stage_row(x + r * W, W, g->pb[2], s, S, pad + (r + g->pb[1]) * s->ld);
    dw_plane(w, g, s, e, pad, y, K, S, ACT, F);
}

/* The four windows and strides of one activation. */
DW_INLINE void dw_any(const float *x, const float *w, const gwr_ku_window *g, const dwstage *s, const dwepi *e, float *pad, float *y,
                      const int ACT, const int F) {
    int K = (int)g->k[1], S = (int)g->s[1];
    if (K == 3 && S == 1) dw_stage_plane(x, w, g, s, e, pad, y, 3, 1, ACT, F);
    else if (K == 3) dw_stage_plane(x, w, g, s, e, pad, y, 3, 2, ACT, F);
    else if (S == 1) dw_stage_plane(x, w, g, s, e, pad, y, 5, 1, ACT, F);
    else dw_stage_plane(x, w, g, s, e, pad, y, 5, 2, ACT, F);
}

/* One function per instruction set, each with the sixteen kernels
 * (window, stride, activation) inlined. */
#define DW_DISPATCH(name, attr, F)                                                                                \
    attr static void name(const float *x, const float *w, const gwr_ku_window *g, const dwstage *s, const dwepi *e, \
                          float *pad, float *y) {                                                                \
        switch (e->kind) {                                                                                       \
        case GWR_KU_ACT_RELU: dw_any(x, w, g, s, e, pad, y, GWR_KU_ACT_RELU, F); break;                             \
        case GWR_KU_ACT_CLIP: dw_any(x, w, g, s, e, pad, y, GWR_KU_ACT_CLIP, F); break;                             \
        case GWR_KU_ACT_HSWISH: dw_any(x, w, g, s, e, pad, y, GWR_KU_ACT_HSWISH, F); break;                         \
        default: dw_any(x, w, g, s, e, pad, y, GWR_KU_ACT_NONE, F); break;                                          \
        }                                                                                                        \
    }
DW_DISPATCH(dw_portable, , 0)
#ifdef GWR_VEC8_X86
DW_DISPATCH(dw_avx2, GWR_AVX2_FN, 1)
#endif

void gwr_ku_dw_plane_epi_f32(const float *x, const float *w, const gwr_ku_window *g, const float *b, const gwr_ku_act *act, float *pad,
                             float *y) {
    dwstage s;
    stage_geom(g, &s);
    dwepi e = {act ? (int)act->kind : GWR_KU_ACT_NONE, b != NULL, splat8(b ? *b : 0.0f), splat8(act ? act->p[0] : 0.0f),
               splat8(act ? act->p[1] : 0.0f)};
#ifdef GWR_VEC8_X86
    if (gwr_ku_cnn_avx2()) {
        dw_avx2(x, w, g, &s, &e, pad, y);
        return;
    }
#endif
    dw_portable(x, w, g, &s, &e, pad, y);
}

void gwr_ku_dw_plane_f32(const float *x, const float *w, const gwr_ku_window *g, float *pad, float *y) {
    gwr_ku_dw_plane_epi_f32(x, w, g, NULL, NULL, pad, y);
}

/* ---- channel-blocked: eight planes at a time, small planes ---------------- */

/* On a 7- or 14-wide plane a row is one vector or less, mostly overlap
 * or slack; here the vectors run across eight channels instead: the
 * block's planes are staged transposed, [Hp][Wp][8] (a padded position's
 * eight channels in one vector, the border zero), each output position
 * is its taps' vector FMAs, and the outputs go back transposed. Eight
 * consecutive positions of the plane (rows run on: position q is row
 * q / W, column q % W) go through one 8x8 transpose each way, the last
 * eight overlapping the ones before (the same bits again), so no row is
 * too short for the vectors. The taps are summed in the row kernel's
 * order with the same rounding (FMA on the AVX2 path), the epilogue is
 * epi8's with a bias per lane: the two kernels give the same bits. */

/* Widest output plane (in columns) the blocked kernel takes: on mbv3_bn
 * (Zen 4, one thread) 7 and 14 wide gained most, 28 a little more, 56
 * and wider no more than noise. */
static int64_t dwc_max_ow = 28;

void gwr_ku_dwc_set_max_ow(int64_t w) { dwc_max_ow = w; }

int gwr_ku_dwc_wanted(const gwr_ku_window *g) { return g->out[2] <= dwc_max_ow; }

int64_t gwr_ku_dwc_scratch(const gwr_ku_window *g) {
    return 8 * (g->in[1] + g->pb[1] + g->pe[1]) * (g->in[2] + g->pb[2] + g->pe[2]);
}

/* The transpose of the 8x8 block v (v[i] lane j -> t[j] lane i): three
 * rounds of interleaving halves. */
DW_INLINE void tr8(const v8f *v, v8f *t) {
    v8f a[8], b[8];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) a[2 * i] = zip_lo8(v[i], v[i + 4]), a[2 * i + 1] = zip_hi8(v[i], v[i + 4]);
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) b[2 * i] = zip_lo8(a[i], a[i + 4]), b[2 * i + 1] = zip_hi8(a[i], a[i + 4]);
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) t[2 * i] = zip_lo8(b[i], b[i + 4]), t[2 * i + 1] = zip_hi8(b[i], b[i + 4]);
}

/* The block's nc planes of x into pad, transposed; lanes from nc on are
 * zeros (or, under eight positions, left as they were: never stored). */
DW_INLINE void dwc_stage(const float *const *x, int nc, const gwr_ku_window *g, int64_t Wp, float *pad) {
    int64_t W = g->in[2], P = g->in[1] * W, org = g->pb[1] * Wp + g->pb[2];
    if (P < 8) {
        for (int64_t q = 0; q < P; q++)
            for (int c = 0; c < nc; c++) pad[(org + q / W * Wp + q % W) * 8 + c] = x[c][q];
        return;
    }
    v8f v[8], t[8];
    for (int64_t q = 0; q < P; q += 8) {
        int64_t q0 = q + 8 <= P ? q : P - 8, r = q0 / W, i = q0 - r * W;
#pragma GCC unroll 8
        for (int c = 0; c < 8; c++) v[c] = c < nc ? ld8(x[c] + q0) : (v8f){0};
        tr8(v, t);
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) {
            st8(pad + (org + r * Wp + i) * 8, t[j]);
            if (++i == W) i = 0, r++;
        }
    }
}

/* Eight output positions from q0 (under eight: the P there are, the rest
 * repeating the last), their epilogue, transposed into the nc planes. */
DW_INLINE void dwc_pos8(const float *pad, int64_t Wp, const v8f *wv, const dwepi *e, int64_t q0, int64_t P, int64_t OW, float *const *y,
                        int nc, const int K, const int S, const int ACT, const int F) {
    const float *base[8];
    int64_t oy = q0 / OW, ox = q0 - oy * OW;
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
        base[j] = pad + (oy * S * Wp + ox * S) * 8;
        if (q0 + j + 1 < P && ++ox == OW) ox = 0, oy++;
    }
    v8f acc[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) acc[j] = (v8f){0};
#pragma GCC unroll 5
    for (int ky = 0; ky < K; ky++)
#pragma GCC unroll 5
        for (int kx = 0; kx < K; kx++) {
            int64_t off = (ky * Wp + kx) * 8;
            v8f w = wv[ky * K + kx];
#pragma GCC unroll 8
            for (int j = 0; j < 8; j++) acc[j] = madd8(acc[j], ld8(base[j] + off), w, F);
        }
    v8f t[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) acc[j] = epi8(acc[j], e, ACT);
    tr8(acc, t);
    if (P >= 8) {
        for (int c = 0; c < nc; c++) st8(y[c] + q0, t[c]);
        return;
    }
    for (int c = 0; c < nc; c++)
        for (int64_t j = 0; j < P; j++) y[c][j] = t[c][j];
}

DW_INLINE void dwc_block(const float *const *x, const float *const *w, const gwr_ku_window *g, const dwepi *e, int nc, float *pad,
                         float *const *y, const int K, const int S, const int ACT, const int F) {
    int64_t Wp = g->in[2] + g->pb[2] + g->pe[2], OW = g->out[2], P = g->out[1] * OW;
    v8f wv[25], v[8], t[8];
    for (int t0 = 0; t0 < K * K; t0 += 8) { /* taps 8 at a time, the last 8 overlapping */
        int s0 = t0 + 8 <= K * K ? t0 : K * K - 8;
#pragma GCC unroll 8
        for (int c = 0; c < 8; c++) v[c] = c < nc ? ld8(w[c] + s0) : (v8f){0};
        tr8(v, t);
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) wv[s0 + j] = t[j];
    }
    dwc_stage(x, nc, g, Wp, pad);
    for (int64_t q = 0; q < P; q += 8) dwc_pos8(pad, Wp, wv, e, q + 8 <= P || P < 8 ? q : P - 8, P, OW, y, nc, K, S, ACT, F);
}

DW_INLINE void dwc_any(const float *const *x, const float *const *w, const gwr_ku_window *g, const dwepi *e, int nc, float *pad,
                       float *const *y, const int ACT, const int F) {
    int K = (int)g->k[1], S = (int)g->s[1];
    if (K == 3 && S == 1) dwc_block(x, w, g, e, nc, pad, y, 3, 1, ACT, F);
    else if (K == 3) dwc_block(x, w, g, e, nc, pad, y, 3, 2, ACT, F);
    else if (S == 1) dwc_block(x, w, g, e, nc, pad, y, 5, 1, ACT, F);
    else dwc_block(x, w, g, e, nc, pad, y, 5, 2, ACT, F);
}

#define DWC_DISPATCH(name, attr, F)                                                                                          \
    attr static void name(const float *const *x, const float *const *w, const gwr_ku_window *g, const dwepi *e, int nc,     \
                          float *pad, float *const *y) {                                                                    \
        switch (e->kind) {                                                                                                  \
        case GWR_KU_ACT_RELU: dwc_any(x, w, g, e, nc, pad, y, GWR_KU_ACT_RELU, F); break;                                      \
        case GWR_KU_ACT_CLIP: dwc_any(x, w, g, e, nc, pad, y, GWR_KU_ACT_CLIP, F); break;                                      \
        case GWR_KU_ACT_HSWISH: dwc_any(x, w, g, e, nc, pad, y, GWR_KU_ACT_HSWISH, F); break;                                  \
        default: dwc_any(x, w, g, e, nc, pad, y, GWR_KU_ACT_NONE, F); break;                                                   \
        }                                                                                                                   \
    }
DWC_DISPATCH(dwc_portable, , 0)
#ifdef GWR_VEC8_X86
DWC_DISPATCH(dwc_avx2, GWR_AVX2_FN, 1)
#endif

void gwr_ku_dwc_block_f32(const float *const *x, const float *const *w, int nc, const gwr_ku_window *g, const float *b, const gwr_ku_act *act,
                          float *pad, float *const *y) {
    dwepi e = {act ? (int)act->kind : GWR_KU_ACT_NONE, b != NULL, splat8(0.0f), splat8(act ? act->p[0] : 0.0f),
               splat8(act ? act->p[1] : 0.0f)};
    for (int c = 0; b && c < nc; c++) e.b[c] = b[c];
#ifdef GWR_VEC8_X86
    if (gwr_ku_cnn_avx2()) {
        dwc_avx2(x, w, g, &e, nc, pad, y);
        return;
    }
#endif
    dwc_portable(x, w, g, &e, nc, pad, y);
}
