/* Optimizer update kernels: a plain SGD step over float32 arrays in one pass.
 *
 * numpy needs two passes (the scaled gradient into a temporary, then the weight minus it) and, for
 * a weight decay, a third; every Gluon and Module training step runs it over all parameters.  Here
 * each element is read and written once.  Each product and the difference is rounded to float32
 * in numpy's order (no fused multiply-add), so the results are the numpy code's, bit for bit.
 */
#ifndef EMBER_UPDATE_KERNELS_H
#define EMBER_UPDATE_KERNELS_H

#include <stdint.h>

/* out[i] = (keep == 1 ? w[i] : w[i] * keep) - step(g[i]), where step(x) = x * a when b == 1 (a one
 * factor: lr * rescale_grad or lr) and clip(x * a) * b otherwise (a = rescale_grad, b = lr), clip(s)
 * = s limited to [-clip, clip] when clip >= 0 (NaN kept).  out may be w itself; g must not overlap out. */
void ember_sgd_f32(const float *w, const float *restrict g, float *out, int64_t n, float a, float b, float clip,
                   float keep);

#endif
