/* rnn_internal.h - what rnn.c (the checks, the double path) shares with
 * rnn_f32.c (the float32 path). */
#ifndef GWR_EXEC_KERNELS_RNN_INTERNAL_H
#define GWR_EXEC_KERNELS_RNN_INTERNAL_H

#include "exec/kernels/kernel_util.h"

enum cell { CELL_RNN, CELL_GRU, CELL_LSTM };

enum act_kind { A_RELU, A_TANH, A_SIGMOID, A_AFFINE, A_LEAKY, A_THRESH, A_STANH, A_HSIG, A_ELU, A_SOFTSIGN, A_SOFTPLUS };

typedef struct act {
    enum act_kind kind;
    double alpha, beta;
} act;

typedef struct rnn_args {
    enum cell cell;
    int64_t T, B, I, H, D; /* steps, batch, input size, hidden size, directions */
    int G;                 /* gates */
    int layout;
    int reverse_only;      /* direction "reverse" */
    int lbr;               /* GRU linear_before_reset */
    int input_forget;      /* LSTM */
    int has_clip;
    double clip;
    act acts[2][3];        /* per direction */
} rnn_args;

/* One activation of the recurrent ops, in double (rnn_act.c). */
double gwr_rnn_act_apply(const act *a, double x);

/* The prepare hook of RNN, GRU and LSTM (rnn_prep.c): per direction d,
 * W_d^T [I, GH] and R_d^T [H, ng] packed for sgemm.c (ng: the columns of
 * a step's product, 2H for GRU's default mode, else GH). */
struct gwr_sgemm_pack;
typedef struct gwr_rnn_prep {
    int64_t D, GH, I, H, ng;
    struct gwr_sgemm_pack *w[2], *r[2];
} gwr_rnn_prep;
gwr_status gwr_rnn_prepare(gwr_kctx *k, void **state);
void gwr_rnn_prep_free(void *state);

/* RNN, GRU and LSTM in float (rnn_f32.c): k's inputs all float32, checked by
 * rnn.c; out[] the outputs to write (NULL: unused), Y already zeroed.
 * GWR_ERR_NOMEM (with its message) when a buffer cannot be had. */
/* LSTM's kernel (DynamicQuantizeLSTM runs it on its dequantized W and R: dq_lstm.c). */
gwr_status gwr_rnn_lstm(gwr_kctx *k);
gwr_status gwr_rnn_f32(gwr_kctx *k, const rnn_args *a, gwr_value *const out[3]);

#endif
