/* Per-channel kernels of BatchNorm on CPU: the batch statistics, the gradient's two sums and the
 * per-channel affine passes, over float32 data viewed as (outer, channels, inner), C-contiguous
 * (NCHW: outer = N, inner = H * W; any channel axis the same way).
 *
 * numpy needs a full-size temporary and a pass for each of mean, centring, squaring and summing
 * (the backward: centring, two products, two sums, four passes to combine), and its reductions over
 * the batch and the map together crawl on small maps; here the statistics take two reading passes,
 * the gradient's sums one, and each output one pass.  Sums run in float32 lanes along each run
 * of `inner` values and in double across runs, so they are at least as accurate as numpy's; the
 * results differ from the numpy code's in the last bits.
 */
#ifndef EMBER_NORM_KERNELS_H
#define EMBER_NORM_KERNELS_H

#include <stdint.h>

/* mean[c] and the biased variance var[c] of channel c (the variance as the mean of the squared
 * deviations from the mean, a second pass); channels run in parallel (thread_pool.h), each summed
 * in the same order whatever the split.  Returns 0 (nothing is allocated: it cannot fail). */
int ember_channel_mean_var_f32(const float *x, int64_t outer, int64_t channels, int64_t inner, float *mean,
                               float *var);

/* sum_dy[c] = the sum of dy over channel c; sum_dy_xc[c] = the sum of dy * (x - mean[c]); 0 (as above) */
int ember_channel_grad_sums_f32(const float *dy, const float *x, const float *mean, int64_t outer, int64_t channels,
                                int64_t inner, float *sum_dy, float *sum_dy_xc);

/* out = dy * a[c] + (x - m[c]) * b[c] + d[c], or without the dy term when dy (and a) are NULL; out
 * may be dy or x itself (each element is read before it is written). */
void ember_channel_affine_f32(const float *dy, const float *a, const float *x, const float *m, const float *b,
                              const float *d, int64_t outer, int64_t channels, int64_t inner, float *out);

#endif
