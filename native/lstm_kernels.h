/* One direction of an LSTM layer over a whole sequence on CPU, forward and backward, float32 arrays,
 * C-contiguous (the fused RNN operator's, ember/ops/nn_rnn.py, in its reserve's layouts; gate order
 * i, f, g, o as MXNet's): every time step's recurrent GEMM (gemm.h) and its element-wise part, in one
 * call from Python instead of two a step.
 *
 * numpy takes about ten passes a step for the element-wise part (adds, the activations, the gate
 * transpose, the cell update, each a call and a pass over the step's arrays); a step here takes one
 * over the pre-activations and one over the states, split over the CPU team by batch rows, with the
 * activations from fast_math.h (vectorized; within a few ulp of libm's).  The backward needs no
 * transcendental: the gates and tanh(c) are kept from the forward.
 *
 * Steps run in time order, or from the last one (reverse).  With `seq` a state sequence of t_len + 1
 * entries (n, h), step t reads seq[t] and writes seq[t + 1] (seq[t + 1] and seq[t] in reverse), as
 * nn_rnn.py's _seq_views: the initial state sits at entry 0 (entry t_len in reverse).  Both need
 * ember_gemm_ready(); without a step, a sequence or a unit they do nothing. */
#ifndef EMBER_LSTM_KERNELS_H
#define EMBER_LSTM_KERNELS_H

#include <stdint.h>

/* The forward for n sequences of h units.  wh (4h, h): the recurrent weights; bias (4h): b_x + b_h.
 * gates (t_len, 4, n, h): on entry step t's region holds its input projection x_t W_x^T laid out
 * (n, 4h); the step replaces it by its activated gates (4, n, h).  c_seq, h_seq (t_len + 1, n, h): the
 * cell and hidden states, the initial ones given.  tc (t_len, n, h): written, tanh of each new cell
 * state.  No array overlaps another.  0, or -1 when the scratch (8 n h floats) could not be
 * allocated (nothing written then). */
int ember_lstm_forward_f32(int64_t t_len, int64_t n, int64_t h, int reverse, const float *wh, const float *bias,
                           float *gates, float *c_seq, float *tc, float *h_seq);

/* The backward through time from the forward's gates, c_seq and tc.  d_out (t_len, n, h): the gradient
 * of every step's output from the layer above.  dh, dc (n, h): the gradients of the final hidden and
 * cell states, replaced by the initial ones'.  Writes d_a (t_len, n, 4h), the gradient of every step's
 * summed pre-activations (i, f, g, o): the weight, bias and input gradients are GEMMs and sums over
 * it.  No written array overlaps another. */
void ember_lstm_backward_f32(int64_t t_len, int64_t n, int64_t h, int reverse, const float *wh, const float *gates,
                             const float *c_seq, const float *tc, const float *d_out, float *dh, float *dc,
                             float *d_a);

#endif
