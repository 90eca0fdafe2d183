/* rnn.c - the shape rule of the recurrent layers LSTM, GRU and RNN: Y,
 * Y_h (and LSTM's Y_c) from the sequence and batch of X, the direction and
 * the hidden size; com.microsoft's DynamicQuantizeLSTM as LSTM. As in
 * exec/kernels/rnn.c. */

#include <string.h>

#include "functional/infer/infer_internal.h"

/* LSTM, GRU, RNN: Y, Y_h (and Y_c for LSTM). */
static gwr_status infer_rnn(ictx *c) {
    gwr_tensor *x = gwr_fi_need(c, 0, "X"), *w = gwr_fi_need(c, 1, "W"), *r = gwr_fi_need(c, 2, "R");
    const char *dir;
    int64_t hidden, layout, nd;
    shp xs, rs, y, yh;
    gwr_dim seq, batch;
    int dq = c->id == GWR_OP_MS_DynamicQuantizeLSTM; /* W [D, I, 4H], R [D, H, 4H] int8/uint8 */
    if (!x || !w || !r || (!dq && (!gwr_fi_same_dtype(c, x, w) || !gwr_fi_same_dtype(c, x, r)))) return c->st;
    dir = gwr_fi_astr(c, "direction", "forward");
    layout = gwr_fi_aint(c, "layout", 0);
    hidden = gwr_fi_aint(c, "hidden_size", GWR_DIM_UNKNOWN);
    if (c->st) return c->st;
    if (!strcmp(dir, "forward") || !strcmp(dir, "reverse"))
        nd = 1;
    else if (!strcmp(dir, "bidirectional"))
        nd = 2;
    else
        return gwr_fi_fail(c, GWR_ERR_INVALID_ARG, "unknown direction \"%s\"", dir);
    gwr_fi_shp_get(x, &xs);
    gwr_fi_shp_get(r, &rs);
    if (!gwr_fi_want_rank(c, x, &xs, 3, 3, "X") || !gwr_fi_want_rank(c, r, &rs, 3, 3, "R")) return c->st;
    if (hidden == GWR_DIM_UNKNOWN && rs.rank == 3) hidden = rs.d[dq ? 1 : 2];
    if (hidden < 0 && hidden != GWR_DIM_UNKNOWN && !GWR_DIM_IS_SYM(hidden))
        return gwr_fi_fail(c, GWR_ERR_SHAPE, "hidden_size %lld is invalid", (long long)hidden);
    seq = xs.rank == 3 ? xs.d[layout ? 1 : 0] : GWR_DIM_UNKNOWN;
    batch = xs.rank == 3 ? xs.d[layout ? 0 : 1] : GWR_DIM_UNKNOWN;
    y.rank = 4;
    yh.rank = 3;
    if (layout) {
        y.d[0] = batch, y.d[1] = seq, y.d[2] = nd, y.d[3] = hidden;
        yh.d[0] = batch, yh.d[1] = nd, yh.d[2] = hidden;
    } else {
        y.d[0] = seq, y.d[1] = nd, y.d[2] = batch, y.d[3] = hidden;
        yh.d[0] = nd, yh.d[1] = batch, yh.d[2] = hidden;
    }
    if (gwr_fi_put(c, 0, dt_of(x), &y) || gwr_fi_put(c, 1, dt_of(x), &yh)) return c->st;
    return gwr_fi_put(c, 2, dt_of(x), &yh);
}

const gwr_fi_entry gwr_fi_rules_rnn[] = {
    {GWR_OP_LSTM, infer_rnn},
    {GWR_OP_MS_DynamicQuantizeLSTM, infer_rnn}, /* com.microsoft: LSTM with int8 W, R and their scales */
    {GWR_OP_GRU, infer_rnn},
    {GWR_OP_RNN, infer_rnn},
    {GWR_OP_CUSTOM, NULL},
};
