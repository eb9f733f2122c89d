/* softmax and log_softmax along the last axis of float32 rows on CPU, forward and backward, as the
 * registry's numpy code computes them (ember/ops/nn_softmax.py): rows shifted by their maximum (by 0
 * where that maximum is not finite), exponentials from fast_math.h, each row's sum in float lanes
 * and double.  numpy takes six passes over the whole array and two full-size temporaries; these
 * take three passes over each row while it is in cache, the rows split over the CPU team
 * (thread_pool.h; the same bits whatever its size).  Results differ from the numpy code's in the
 * last bits. */
#ifndef EMBER_SOFTMAX_KERNELS_H
#define EMBER_SOFTMAX_KERNELS_H

#include <stdint.h>

/* y = softmax(x) (take_log: log_softmax(x)) over each of `rows` rows of `n` values; y may be x itself */
void ember_softmax_rows_f32(const float *x, int64_t rows, int64_t n, int take_log, float *y);

/* dx, the gradient of x given dy and y = softmax(x) (take_log: log_softmax(x)), per row; dx may be dy
 * itself */
void ember_softmax_rows_backward_f32(const float *dy, const float *y, int64_t rows, int64_t n, int take_log, float *dx);

/* Softmax cross-entropy of each row against a class label (Gluon's SoftmaxCrossEntropyLoss as
 * log_softmax, pick, negative and mean, in one pass per row with those ops' bits): logp = the rows'
 * log_softmax, loss[r] = -logp[r][c_r] where c_r is label[r] truncated to an integer and clipped into
 * [0, n) (pick's clip mode).  Returns 0, nothing written, when a label is not finite or beyond +-4.6e18. */
int ember_softmax_ce_rows_f32(const float *x, const float *label, int64_t rows, int64_t n, float *logp, float *loss);

/* Its gradient w.r.t. x given g, the gradient of each row's loss: log_softmax's gradient of the row
 * holding -g[r] at the label's class and zeros elsewhere (the four ops' chain, bit for bit).  dx does
 * not overlap logp.  Returns 0, nothing written, as above. */
int ember_softmax_ce_rows_backward_f32(const float *g, const float *logp, const float *label, int64_t rows, int64_t n,
                                       float *dx);

#endif
