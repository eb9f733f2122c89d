/* Activation kernels: relu and its gradient over float32 arrays, each in one pass.
 *
 * numpy's maximum(x, 0) with a scalar zero runs its scalar loop (on this machine ~5x slower than the
 * maximum of two arrays), and the gradient dy * (y > 0) takes two passes and a temporary; Gluon's
 * Dense(activation='relu') and nn.Activation run both on every step.  The results are numpy's and
 * MXNet 1.9.1's bit for bit: relu(x) = x when x > 0 or x is NaN, else +0 (numpy's maximum(x, 0), MXNet's
 * NaN-passing relu: -0.0 gives +0); its derivative is 1 above 0, NaN at NaN, else 0 (MXNet's relu_grad),
 * times dy as numpy multiplies (a NaN or infinite dy where y <= 0 gives NaN). */
#ifndef EMBER_ACT_KERNELS_H
#define EMBER_ACT_KERNELS_H

#include <stdint.h>

/* y[i] = relu(x[i]) for n elements; y may be x itself (in place), otherwise they must not overlap. */
void ember_relu_f32(const float *x, float *y, int64_t n);

/* dx[i] = dy[i] * relu'(y[i]) for n elements; dx may be dy or y itself, otherwise apart. */
void ember_relu_backward_f32(const float *dy, const float *y, float *dx, int64_t n);

#endif
