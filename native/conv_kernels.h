/* The window copies of a convolution on CPU: im2col (every window of the input as the columns of
 * one matrix) and col2im (those columns summed back onto the input: the data gradient).
 *
 * numpy does each as one strided pass per kernel position over the whole array (col2im: a
 * read-modify-write of the input for each of a 3x3 kernel's nine positions); here one loop walks
 * each channel's windows while its plane is in cache.  The results are the numpy code's bit for
 * bit: im2col is a copy, and col2im adds each position's contributions in kernel-position order,
 * as numpy's passes did.
 *
 * Arrays are float32, C-contiguous, channel-first: the input x (C, outer, h, w, inner), with the
 * batch axis either before the map (outer = N, inner = 1: "CNHW") or after it (outer = 1, inner
 * = N: "CHWN"), already padded; the columns (C, kh, kw, outer, oh, ow, inner).  Window (oy, ox) at
 * kernel position (i, j) reads x[.., i * dh + oy * sh, j * dw + ox * sw, ..].
 */
#ifndef EMBER_CONV_KERNELS_H
#define EMBER_CONV_KERNELS_H

#include <stdint.h>

typedef struct {
    int64_t channels, outer, inner; /* C, and the batch axis before or after the map */
    int64_t h, w;                   /* the (padded) input map */
    int64_t oh, ow;                 /* windows along each axis */
    int64_t kh, kw, sh, sw, dh, dw; /* kernel, stride, dilation */
} ember_conv_windows;

/* cols = every window of x. */
void ember_im2col_f32(const ember_conv_windows *g, const float *x, float *cols);

/* x += cols summed back onto their windows (x and cols do not overlap). */
void ember_col2im_f32(const ember_conv_windows *g, const float *cols, float *x);

#endif
