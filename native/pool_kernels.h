/* Max pooling over 2-D maps of float32 on CPU, forward and backward.
 *
 * numpy's max pooling is a pass per kernel row and column over strided views, and its backward
 * five passes per kernel position (compare, mask, select, scatter-add, mark): a ResNet's 3x3/2 stem
 * pooling took 5 ms a step backward.  Here each is one pass over the output.  Window positions
 * outside the map (padding, the 'full' convention's extra rows) count as -inf, as in the numpy
 * code's padded copy, and the results are that code's bit for bit: the forward keeps numpy's
 * maximum (a NaN wins; of equal values the later in column-major window order, which decides the
 * sign of a zero), and the backward gives each output's gradient to the first window position in
 * row-major order whose value equals the output (none for NaN), summing into each input position
 * in the order numpy's per-position passes did.
 */
#ifndef EMBER_POOL_KERNELS_H
#define EMBER_POOL_KERNELS_H

#include <stdint.h>

/* planes (N * C) maps of h x w in, oh x ow out, C-contiguous; window kh x kw, step sh x sw, and the
 * padding before the first row / column (ph, pw). */
typedef struct {
    int64_t planes, h, w, oh, ow;
    int64_t kh, kw, sh, sw, ph, pw;
} ember_pool2d;

/* y = the maximum of each window of x; 0, or -1 when a row buffer could not be allocated (y untouched). */
int ember_max_pool2d_f32(const ember_pool2d *g, const float *x, float *y);

/* dx = the gradient of max pooling given its input x, output y and output gradient dy; dx
 * overlaps none of them. */
void ember_max_pool2d_backward_f32(const ember_pool2d *g, const float *x, const float *y, const float *dy, float *dx);

#endif
