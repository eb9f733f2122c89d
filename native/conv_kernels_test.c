/* conv_kernels.h against plain loops over every index (the columns' element for each channel,
 * kernel position and window; col2im's sums in kernel-position order), both batch placements,
 * strides, dilations, on heap buffers of exactly their size (run under ASan + UBSan by
 * `make memcheck`: an access past a buffer fails the run). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv_kernels.h"

static int64_t x_at(const ember_conv_windows *g, int64_t c, int64_t p, int64_t y, int64_t x, int64_t q) {
    return (((c * g->outer + p) * g->h + y) * g->w + x) * g->inner + q;
}

static int64_t col_at(const ember_conv_windows *g, int64_t c, int64_t i, int64_t j, int64_t p, int64_t oy, int64_t ox,
                      int64_t q) {
    return (((((c * g->kh + i) * g->kw + j) * g->outer + p) * g->oh + oy) * g->ow + ox) * g->inner + q;
}

static int check(ember_conv_windows g, unsigned seed) {
    int64_t nx = g.channels * g.outer * g.h * g.w * g.inner, nc = g.channels * g.kh * g.kw * g.outer * g.oh * g.ow * g.inner;
    float *x = malloc((size_t)(nx ? nx : 1) * sizeof *x), *cols = malloc((size_t)(nc ? nc : 1) * sizeof *cols);
    float *want = malloc((size_t)(nc ? nc : 1) * sizeof *want), *back = malloc((size_t)(nx ? nx : 1) * sizeof *back);
    float *want_back = malloc((size_t)(nx ? nx : 1) * sizeof *want_back);
    srand(seed);
    for (int64_t k = 0; k < nx; k++) back[k] = want_back[k] = x[k] = (float)rand() / RAND_MAX - 0.5f;
    for (int64_t c = 0; c < g.channels; c++)
        for (int64_t i = 0; i < g.kh; i++)
            for (int64_t j = 0; j < g.kw; j++)
                for (int64_t p = 0; p < g.outer; p++)
                    for (int64_t oy = 0; oy < g.oh; oy++)
                        for (int64_t ox = 0; ox < g.ow; ox++)
                            for (int64_t q = 0; q < g.inner; q++) {
                                int64_t at = x_at(&g, c, p, i * g.dh + oy * g.sh, j * g.dw + ox * g.sw, q);
                                want[col_at(&g, c, i, j, p, oy, ox, q)] = x[at];
                                want_back[at] += x[at] * 0.25f; /* cols added back: here cols = x * 0.25 */
                            }
    ember_im2col_f32(&g, x, cols);
    int bad = nc && memcmp(cols, want, (size_t)nc * sizeof *cols) != 0;
    for (int64_t k = 0; k < nc; k++) cols[k] = want[k] * 0.25f;
    ember_col2im_f32(&g, cols, back);
    bad |= nx && memcmp(back, want_back, (size_t)nx * sizeof *back) != 0;
    if (bad)
        fprintf(stderr, "conv windows wrong: C %ld outer %ld inner %ld map %ldx%ld windows %ldx%ld kernel %ldx%ld "
                        "stride %ldx%ld dilate %ldx%ld\n", (long)g.channels, (long)g.outer, (long)g.inner, (long)g.h,
                (long)g.w, (long)g.oh, (long)g.ow, (long)g.kh, (long)g.kw, (long)g.sh, (long)g.sw, (long)g.dh, (long)g.dw);
    free(x);
    free(cols);
    free(want);
    free(back);
    free(want_back);
    return bad;
}

int main(void) {
    /* channels, outer, inner, h, w, oh, ow, kh, kw, sh, sw, dh, dw */
    const ember_conv_windows cases[] = {
        {3, 2, 1, 6, 6, 4, 4, 3, 3, 1, 1, 1, 1},  /* CNHW, stride 1 */
        {3, 1, 4, 6, 6, 4, 4, 3, 3, 1, 1, 1, 1},  /* CHWN, stride 1: one run of ow * N */
        {2, 3, 1, 9, 9, 4, 3, 3, 3, 2, 3, 1, 1},  /* strided, N first */
        {2, 1, 3, 9, 9, 4, 3, 3, 3, 2, 3, 1, 1},  /* strided, N last */
        {2, 2, 1, 9, 9, 3, 3, 3, 3, 2, 2, 2, 2},  /* dilated */
        {1, 1, 5, 1, 7, 1, 3, 1, 3, 1, 2, 1, 1},  /* one row (1-D) */
        {4, 2, 1, 5, 5, 1, 1, 5, 5, 1, 1, 1, 1},  /* one window */
        {0, 2, 1, 4, 4, 2, 2, 3, 3, 1, 1, 1, 1},  /* no channels */
    };
    int bad = 0;
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
        for (unsigned seed = 1; seed <= 5; seed++) bad |= check(cases[k], seed);
    if (bad) return 1;
    printf("conv kernels: ok\n");
    return 0;
}
