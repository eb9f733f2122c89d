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

/* Winograd F(2x2, 3x3): a 3x3 convolution with stride 1 and padding 1 (output maps of the input's
 * size) as 16 matrix products over 4x4 input tiles taken every 2 pixels, each giving a 2x2 output
 * tile, with 2.25x fewer multiplications than the direct form (Lavin and Gray, 2015):
 * m[q] = v[q] u[q] for q < 16, v (16, t, c_in), u (16, c_in, c_out), m (16, t, c_out); these are the
 * three transforms around those products.  Arrays float32, C-contiguous; t = n * th * tw tiles,
 * th = (h + 1) / 2, tw = (w + 1) / 2, tile (image, ty, tx) at index (image * th + ty) * tw + tx.
 * Each returns 1, or 0 with nothing written when its buffer (one image) cannot be had or, for the
 * transforms of w, x and dy, when one of their values is NaN or infinite (the transforms would carry it
 * to outputs of the tile that do not depend on it: the caller computes those in the direct form). */

/* u[4a + b] = (G g G^T)[a][b] for every 3x3 kernel g of w (f, c, 3, 3): u (16, c, f) for the
 * convolution itself; with data_grad, u (16, f, c) of the kernels rotated by 180 degrees, for the data
 * gradient (the convolution of dy (n, f, h, w) giving (n, c, h, w)). */
int ember_winograd_weights_f32(const float *w, int64_t f, int64_t c, int data_grad, float *u);

/* v[4a + b][tile][ch] = (B^T d B)[a][b], d the tile's 4x4 window of x (n, c, h, w) zero-padded by 1,
 * its top left corner at input pixel (2 ty - 1, 2 tx - 1). */
int ember_winograd_input_f32(const float *x, int64_t n, int64_t c, int64_t h, int64_t w, float *v);

/* y (n, f, h, w) = A^T m A per tile (m (16, t, f)), cropped to the map, plus shift[f] (shift may be
 * NULL), then max(., 0) when relu (NaN stays NaN). */
int ember_winograd_output_f32(const float *m, int64_t n, int64_t f, int64_t h, int64_t w, const float *shift,
                              int relu, float *y);

/* The weight gradient in the same form: dM = A dY A^T per tile, dU[q] = v[q]^T dM[q], dW = G^T dU G.
 * dm (16, t, f) from dy (n, f, h, w) (the tiles' 2x2 blocks of dy; past an odd edge 0). */
int ember_winograd_grad_output_f32(const float *dy, int64_t n, int64_t f, int64_t h, int64_t w, float *dm);

/* dw (f, c, 3, 3) = G^T dU G for every (channel, filter) plane of du (16, c, f). */
int ember_winograd_grad_weights_f32(const float *du, int64_t f, int64_t c, float *dw);

#endif
