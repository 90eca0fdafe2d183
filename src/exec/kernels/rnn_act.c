/* rnn_act.c - the activations of the recurrent ops in double, for rnn.c's
 * double path and for rnn_f32.c's rarer activations (its own file so that
 * the two use it without using each other in a circle). */
#include <math.h>

#include "exec/kernels/rnn_internal.h"

double gwr_rnn_act_apply(const act *a, double x) {
    switch (a->kind) {
    case A_RELU: return x > 0 ? x : 0;
    case A_TANH: return tanh(x);
    case A_SIGMOID: return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
    case A_AFFINE: return a->alpha * x + a->beta;
    case A_LEAKY: return x >= 0 ? x : a->alpha * x;
    case A_THRESH: return x > a->alpha ? x : 0;
    case A_STANH: return a->alpha * tanh(a->beta * x);
    case A_HSIG: {
        double y = a->alpha * x + a->beta;
        return y < 0 ? 0 : y > 1 ? 1 : y;
    }
    case A_ELU: return x >= 0 ? x : a->alpha * (exp(x) - 1.0);
    case A_SOFTSIGN: return x / (1.0 + fabs(x));
    case A_SOFTPLUS: return x > 30 ? x : log1p(exp(x));
    }
    return x;
}
