/* pass_util.c - see pass_util.h. */
#include "passes/pass_util.h"

#include "gwr/passes.h"


int gwr_ps_transpose_perm(const gwr_layer *l, int r, int64_t *p) {
    const int64_t *v;
    int64_t n;
    if (gwr_layer_get_ints(l, "perm", &v, &n)) {
        if (r < 0) return -1;
        for (int i = 0; i < r; i++) p[i] = r - 1 - i;
        return r;
    }
    if (n > GWR_MAX_RANK || (r >= 0 && n != r)) return -1;
    for (int64_t i = 0; i < n; i++) {
        if (v[i] < 0 || v[i] >= n) return -1;
        p[i] = v[i];
    }
    return (int)n;
}

int64_t gwr_ps_weight_channel(int kind, const int64_t *d, int64_t n, int64_t group, int trans_b, int64_t i) {
    switch (kind) {
    case GWR_PS_W_CONV: return i / (n / d[0]);
    case GWR_PS_W_CONVT: {
        int64_t inner = n / (d[0] * d[1]), j = (i / inner) % d[1], ci = i / (d[1] * inner);
        return ci / (d[0] / group) * d[1] + j;
    }
    case GWR_PS_W_GEMM: return trans_b ? i / d[1] : i % d[1];
    default: return i % d[1];
    }
}

const char *gwr_ps_weight_layout(int kind, const gwr_layer *p, const gwr_match_const *w, const gwr_tensor *bias,
                                 gwr_ps_layout *lo) {
    const int64_t *d = w->dims;
    *lo = (gwr_ps_layout){.group = 1, .trans_b = 0, .beta = 1};
    switch (kind) {
    case GWR_PS_W_CONV:
        if (w->rank < 3) return "Conv weights of rank < 3";
        lo->nch = d[0];
        return NULL;
    case GWR_PS_W_CONVT:
        if (w->rank < 3) return "ConvTranspose weights of rank < 3";
        gwr_layer_attr_int(p, "group", 1, &lo->group);
        if (lo->group < 1 || d[0] % lo->group) return "C_in is not a multiple of group";
        lo->nch = lo->group * d[1];
        return NULL;
    case GWR_PS_W_GEMM:
        if (w->rank != 2) return "Gemm's B is not 2-D";
        gwr_layer_attr_int(p, "transB", 0, &lo->trans_b);
        gwr_layer_attr_float(p, "beta", 1.0f, &lo->beta);
        lo->nch = lo->trans_b ? d[0] : d[1];
        if (bias) {
            int64_t ch = 0;
            if (!gwr_match_const_per_channel(bias, 2, 1, &ch) || (ch != 1 && ch != lo->nch))
                return "Gemm's C varies along M";
        }
        return NULL;
    default:
        if (w->rank != 2) return "MatMul's weight is not 2-D";
        lo->nch = d[1];
        return NULL;
    }
}

int gwr_ps_reduces_last_axis(const gwr_layer *l, const gwr_tensor *axes_in, int r) {
    const int64_t *ax;
    int64_t n = 0;
    double v;
    int has_attr = gwr_layer_find_attr(l, "axes") >= 0;
    if (has_attr == (axes_in != NULL)) return 0; /* none (all axes), or both */
    if (has_attr) return !gwr_layer_get_ints(l, "axes", &ax, &n) && n == 1 && (ax[0] == -1 || ax[0] == r - 1);
    gwr_dtype t = gwr_tensor_dtype(axes_in);
    return (t == GWR_INT64 || t == GWR_INT32) && gwr_match_const_scalar(axes_in, &v) && (v == -1 || v == r - 1);
}
