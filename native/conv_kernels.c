/* Convolution window copies (conv_kernels.h). */
#include "conv_kernels.h"

#include <string.h>

/* Inner loops of unknown length are the point of this file: vectorized (GCC leaves them scalar at -O2). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

/* One kernel position's windows of one channel: the rows of `map` (outer, h, w, inner) that position
 * reads, against the block (outer, oh, ow, inner) of the columns that holds them; `to_cols` copies
 * the map into the block, otherwise the block is added onto the map. */
static void windows(const ember_conv_windows *g, int64_t i, int64_t j, float *map, float *block, int to_cols) {
    const int64_t in = g->inner, row = g->w * in, plane = g->h * row, orow = g->ow * in;
    for (int64_t p = 0; p < g->outer; p++)
        for (int64_t oy = 0; oy < g->oh; oy++) {
            float *m = map + p * plane + (i * g->dh + oy * g->sh) * row + j * g->dw * in;
            float *b = block + (p * g->oh + oy) * orow;
            if (g->sw == 1) { /* one contiguous run of ow * inner */
                const int64_t n = g->ow * in;
                if (to_cols)
                    memcpy(b, m, (size_t)n * sizeof *b);
                else
                    for (int64_t k = 0; k < n; k++) m[k] += b[k];
            } else if (in == 1) {
                const int64_t step = g->sw;
                if (to_cols)
                    for (int64_t ox = 0; ox < g->ow; ox++) b[ox] = m[ox * step];
                else
                    for (int64_t ox = 0; ox < g->ow; ox++) m[ox * step] += b[ox];
            } else {
                for (int64_t ox = 0; ox < g->ow; ox++) {
                    float *mm = m + ox * g->sw * in, *bb = b + ox * in;
                    if (to_cols)
                        memcpy(bb, mm, (size_t)in * sizeof *bb);
                    else
                        for (int64_t q = 0; q < in; q++) mm[q] += bb[q];
                }
            }
        }
}

static void each_window(const ember_conv_windows *g, float *x, float *cols, int to_cols) {
    const int64_t map = g->outer * g->h * g->w * g->inner, block = g->outer * g->oh * g->ow * g->inner;
    for (int64_t c = 0; c < g->channels; c++)
        for (int64_t i = 0; i < g->kh; i++)
            for (int64_t j = 0; j < g->kw; j++)
                windows(g, i, j, x + c * map, cols + ((c * g->kh + i) * g->kw + j) * block, to_cols);
}

void ember_im2col_f32(const ember_conv_windows *g, const float *x, float *cols) {
    each_window(g, (float *)x, cols, 1); /* (x is only read when copying into the columns) */
}

void ember_col2im_f32(const ember_conv_windows *g, const float *cols, float *x) {
    each_window(g, x, (float *)cols, 0); /* (the columns are only read when adding back) */
}
