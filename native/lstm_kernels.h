/* The element-wise part of one LSTM time step on CPU, forward and backward, over float32 arrays,
 * C-contiguous (the fused RNN operator's, ember/ops/nn_rnn.py; gate order i, f, g, o as MXNet's).
 *
 * numpy takes about ten passes a step (adds, the activations, the gate transpose, the cell update,
 * each a call and a pass over the step's arrays); these take one over the pre-activations and one
 * over the states, with the activations from fast_math.h (vectorized; within a few ulp of libm's).
 * The backward needs no transcendental: the gates and tanh(c) are kept from the forward. */
#ifndef EMBER_LSTM_KERNELS_H
#define EMBER_LSTM_KERNELS_H

#include <stdint.h>

/* One step forward for n sequences of h units.  a_t (4h, n): this step's pre-activations from the
 * recurrent state, transposed (W_h h_prev^T: the GEMM runs ~1.5x faster with the batch as its short
 * side).  pre (n, 4h): the input projection; it may be the very memory of `gates` (it is read whole
 * before gates is written).  bias (4h), c_prev (n, h).  Writes a (n, 4h) = a_t^T + pre + bias, the
 * summed pre-activations (i, f, g, o), gates (4, n, h) = sigmoid / tanh / sigmoid / sigmoid of them,
 * c (n, h) = f c_prev + i g, tc (n, h) = tanh(c) and h_out (n, h) = o tc.  c may be c_prev itself. */
void ember_lstm_step_f32(const float *a_t, const float *pre, const float *bias, const float *c_prev, int64_t n,
                         int64_t h, float *a, float *gates, float *c, float *tc, float *h_out);

/* One step backward (the step's gates (4, n, h), c_prev, tc as the forward left them).  dh (n, h):
 * the gradient of the step's output h from the later steps; d_out (n, h): from the layer above.
 * dc (n, h): the gradient of the step's cell state c, replaced by that of c_prev.  Writes d_a (n, 4h),
 * the gradient of the step's summed pre-activations (i, f, g, o). */
void ember_lstm_step_backward_f32(const float *gates, const float *c_prev, const float *tc, const float *dh,
                                  const float *d_out, int64_t n, int64_t h, float *dc, float *d_a);

#endif
