/* conv_kernels.h against plain loops over every index (the columns' element for each channel,
 * kernel position and window; col2im's sums in kernel-position order), both batch placements,
 * strides, dilations; the Winograd transforms chained into a 3x3 convolution, its data gradient and
 * its weight gradient against double-precision direct loops, odd and even map sizes; all on heap
 * buffers of exactly their size (run under ASan + UBSan by `make memcheck`: an access past a buffer
 * fails the run). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv_kernels.h"
#include "thread_pool.h"

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


/* ---- Winograd: the three products done naively (m[q] = v[q] u[q]) between the transforms ---------- */
static float *buf(int64_t n) { return malloc((size_t)(n ? n : 1) * sizeof(float)); }

/* m (16, t, co) = v (16, t, ci) u (16, ci, co); du (16, ci, co) = v^T dm when transpose */
static void products(const float *a, const float *b, int64_t t, int64_t ci, int64_t co, float *out, int transpose) {
    for (int q = 0; q < 16; q++)
        if (!transpose) {
            for (int64_t i = 0; i < t; i++)
                for (int64_t o = 0; o < co; o++) {
                    double s = 0;
                    for (int64_t k = 0; k < ci; k++) s += (double)a[(q * t + i) * ci + k] * b[(q * ci + k) * co + o];
                    out[(q * t + i) * co + o] = (float)s;
                }
        } else {
            for (int64_t k = 0; k < ci; k++)
                for (int64_t o = 0; o < co; o++) {
                    double s = 0;
                    for (int64_t i = 0; i < t; i++) s += (double)a[(q * t + i) * ci + k] * b[(q * t + i) * co + o];
                    out[(q * ci + k) * co + o] = (float)s;
                }
        }
}

static double at_or_zero(const float *x, int64_t c, int64_t h, int64_t w, int64_t i, int64_t ch, int64_t y, int64_t q) {
    return y < 0 || y >= h || q < 0 || q >= w ? 0.0 : x[((i * c + ch) * h + y) * w + q];
}

static int close_enough(float got, double want, double scale) { return fabs(got - want) <= 1e-4 * (1 + scale); }

static int check_winograd(int64_t n, int64_t c, int64_t f, int64_t h, int64_t w, int relu, unsigned seed) {
    const int64_t t = n * ((h + 1) / 2) * ((w + 1) / 2);
    float *x = buf(n * c * h * w), *k = buf(f * c * 9), *shift = buf(f), *dy = buf(n * f * h * w);
    float *u = buf(16 * c * f), *v = buf(16 * t * c), *m = buf(16 * t * f), *y = buf(n * f * h * w);
    float *ud = buf(16 * f * c), *vd = buf(16 * t * f), *md = buf(16 * t * c), *dx = buf(n * c * h * w);
    float *dm = buf(16 * t * f), *du = buf(16 * c * f), *dw = buf(f * c * 9);
    srand(seed);
    for (int64_t i = 0; i < n * c * h * w; i++) x[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int64_t i = 0; i < f * c * 9; i++) k[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int64_t i = 0; i < f; i++) shift[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int64_t i = 0; i < n * f * h * w; i++) dy[i] = (float)rand() / RAND_MAX - 0.5f;
    int bad = !ember_winograd_weights_f32(k, f, c, 0, u) || !ember_winograd_input_f32(x, n, c, h, w, v);
    products(v, u, t, c, f, m, 0);
    bad |= !ember_winograd_output_f32(m, n, f, h, w, shift, relu, y);
    bad |= !ember_winograd_weights_f32(k, f, c, 1, ud) || !ember_winograd_input_f32(dy, n, f, h, w, vd);
    products(vd, ud, t, f, c, md, 0);
    bad |= !ember_winograd_output_f32(md, n, c, h, w, NULL, 0, dx);
    bad |= !ember_winograd_grad_output_f32(dy, n, f, h, w, dm);
    products(v, dm, t, c, f, du, 1);
    bad |= !ember_winograd_grad_weights_f32(du, f, c, dw);
    for (int64_t i = 0; i < n && !bad; i++)
        for (int64_t yy = 0; yy < h; yy++)
            for (int64_t q = 0; q < w; q++) {
                for (int64_t o = 0; o < f; o++) { /* the convolution, shifted, relu */
                    double s = shift[o];
                    for (int64_t ch = 0; ch < c; ch++)
                        for (int a = 0; a < 3; a++)
                            for (int b = 0; b < 3; b++)
                                s += at_or_zero(x, c, h, w, i, ch, yy + a - 1, q + b - 1) * k[((o * c + ch) * 3 + a) * 3 + b];
                    if (relu && s < 0) s = 0;
                    bad |= !close_enough(y[((i * f + o) * h + yy) * w + q], s, c);
                }
                for (int64_t ch = 0; ch < c; ch++) { /* the data gradient: dy through the flipped kernels */
                    double s = 0;
                    for (int64_t o = 0; o < f; o++)
                        for (int a = 0; a < 3; a++)
                            for (int b = 0; b < 3; b++)
                                s += at_or_zero(dy, f, h, w, i, o, yy - a + 1, q - b + 1) * k[((o * c + ch) * 3 + a) * 3 + b];
                    bad |= !close_enough(dx[((i * c + ch) * h + yy) * w + q], s, f);
                }
            }
    for (int64_t o = 0; o < f && !bad; o++) /* the weight gradient */
        for (int64_t ch = 0; ch < c; ch++)
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++) {
                    double s = 0;
                    for (int64_t i = 0; i < n; i++)
                        for (int64_t yy = 0; yy < h; yy++)
                            for (int64_t q = 0; q < w; q++)
                                s += at_or_zero(x, c, h, w, i, ch, yy + a - 1, q + b - 1) * dy[((i * f + o) * h + yy) * w + q];
                    bad |= !close_enough(dw[((o * c + ch) * 3 + a) * 3 + b], s, (double)n * h * w / 4);
                }
    float *all[] = {x, k, shift, dy, u, v, m, y, ud, vd, md, dx, dm, du, dw};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
    if (bad)
        fprintf(stderr, "winograd: mismatch n=%lld c=%lld f=%lld h=%lld w=%lld\n", (long long)n, (long long)c,
                (long long)f, (long long)h, (long long)w);
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
    /* n, c, f, h, w: even and odd maps, one pixel, channel counts off the 64-kernel weight blocks */
    const int64_t wino[][5] = {{1, 1, 1, 1, 1}, {2, 3, 4, 4, 4}, {1, 2, 3, 5, 7}, {3, 5, 2, 6, 3}, {1, 9, 8, 2, 9},
                               {2, 13, 7, 3, 4}};
    for (int team = 1; team <= 3; team += 2) { /* serially, then images split over a team of 3 */
        ember_pool_set_threads(team);
        /* an RGB stem (7x7, stride 2): the copies split by channel and kernel row, the sums by channel */
        const ember_conv_windows stem = {3, 8, 1, 70, 70, 32, 32, 7, 7, 2, 2, 1, 1};
        bad |= check(stem, 6);
        for (size_t k = 0; k < sizeof wino / sizeof *wino; k++)
            for (int relu = 0; relu <= 1; relu++)
                bad |= check_winograd(wino[k][0], wino[k][1], wino[k][2], wino[k][3], wino[k][4], relu, (unsigned)(k + 1));
        bad |= check_winograd(7, 3, 5, 4, 6, 1, 99); /* more images than threads */
        bad |= check_winograd(2, 64, 97, 4, 4, 0, 98); /* kernel blocks split over the team (with a last short one) */
    }
    /* a NaN or an infinity in w, x or dy: refused, nothing else to check */
    float ok3[9] = {0}, odd[9] = {0}, u[16], v[16 * 4], dm[16 * 4];
    odd[4] = NAN;
    bad |= !ember_winograd_weights_f32(ok3, 1, 1, 0, u) || ember_winograd_weights_f32(odd, 1, 1, 0, u);
    odd[4] = INFINITY;
    bad |= ember_winograd_input_f32(odd, 1, 1, 3, 3, v) || ember_winograd_grad_output_f32(odd, 1, 1, 3, 3, dm);
    odd[4] = -INFINITY;
    bad |= ember_winograd_input_f32(odd, 1, 1, 3, 3, v) || !ember_winograd_input_f32(ok3, 1, 1, 3, 3, v);
    /* a NaN far into a large input, in the last chunk of a split scan: still refused */
    float *xb = calloc(4 * 16 * 64 * 64, sizeof *xb), *vb = malloc((size_t)16 * 4096 * 16 * sizeof *vb);
    bad |= !ember_winograd_input_f32(xb, 4, 16, 64, 64, vb);
    xb[4 * 16 * 64 * 64 - 5] = NAN;
    bad |= ember_winograd_input_f32(xb, 4, 16, 64, 64, vb);
    free(xb);
    free(vb);
    ember_pool_shutdown();
    if (bad) return 1;
    printf("conv kernels: ok\n");
    return 0;
}
