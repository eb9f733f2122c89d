/* pool_kernels.h against a reference that pads a copy of each map with -inf and compares window by
 * window (forward: numpy's maximum in column-major window order; backward: the first equal position
 * in row-major order, added output by output in kernel-position order), on heap buffers of exactly
 * their size (run under ASan + UBSan by `make memcheck`: an access past a buffer fails the run). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool_kernels.h"
#include "thread_pool.h"

static int same(float x, float y) { return memcmp(&x, &y, sizeof x) == 0 || (isnan(x) && isnan(y)); }

/* the map with `ph`/`pw` -inf rows/columns before and enough after for every window */
static float *padded(const ember_pool2d *g, const float *map, int64_t *hp, int64_t *wp) {
    *hp = (g->oh - 1) * g->sh + g->kh > g->ph + g->h ? (g->oh - 1) * g->sh + g->kh : g->ph + g->h;
    *wp = (g->ow - 1) * g->sw + g->kw > g->pw + g->w ? (g->ow - 1) * g->sw + g->kw : g->pw + g->w;
    float *p = malloc((size_t)(*hp * *wp) * sizeof *p);
    for (int64_t i = 0; i < *hp * *wp; i++) p[i] = -INFINITY;
    for (int64_t r = 0; r < g->h; r++)
        for (int64_t c = 0; c < g->w; c++) p[(r + g->ph) * *wp + c + g->pw] = map[r * g->w + c];
    return p;
}

static void reference(const ember_pool2d *g, const float *x, const float *dy, float *y, float *dx) {
    memset(dx, 0, (size_t)(g->planes * g->h * g->w) * sizeof *dx);
    for (int64_t p = 0; p < g->planes; p++) {
        int64_t hp, wp;
        float *pad = padded(g, x + p * g->h * g->w, &hp, &wp);
        float *canvas = calloc((size_t)(hp * wp), sizeof *canvas);
        float *out = y + p * g->oh * g->ow;
        for (int64_t o = 0; o < g->oh * g->ow; o++) {
            int64_t top = o / g->ow * g->sh, left = o % g->ow * g->sw;
            float r = pad[top * wp + left];
            for (int64_t j = 0; j < g->kw; j++)
                for (int64_t i = 0; i < g->kh; i++) {
                    float v = pad[(top + i) * wp + left + j];
                    r = (r > v || r != r) ? r : v;
                }
            out[o] = r;
        }
        for (int64_t i = 0; i < g->kh; i++) /* one pass per kernel position, as the numpy code */
            for (int64_t j = 0; j < g->kw; j++)
                for (int64_t o = 0; o < g->oh * g->ow; o++) {
                    int64_t top = o / g->ow * g->sh, left = o % g->ow * g->sw, first = 1;
                    for (int64_t t = 0; t < i * g->kw + j; t++) /* an earlier position equal to the output? */
                        if (pad[(top + t / g->kw) * wp + left + t % g->kw] == out[o]) first = 0;
                    if (first && pad[(top + i) * wp + left + j] == out[o])
                        canvas[(top + i) * wp + left + j] += dy[p * g->oh * g->ow + o];
                }
        for (int64_t r = 0; r < g->h; r++)
            for (int64_t c = 0; c < g->w; c++) dx[p * g->h * g->w + r * g->w + c] = canvas[(r + g->ph) * wp + c + g->pw];
        free(pad);
        free(canvas);
    }
}

static int check(ember_pool2d g, unsigned seed) {
    int64_t nx = g.planes * g.h * g.w, ny = g.planes * g.oh * g.ow;
    float *x = malloc((size_t)nx * sizeof *x), *dy = malloc((size_t)ny * sizeof *dy);
    float *y = malloc((size_t)ny * sizeof *y), *want_y = malloc((size_t)ny * sizeof *want_y);
    float *dx = malloc((size_t)nx * sizeof *dx), *want_dx = malloc((size_t)nx * sizeof *want_dx);
    const float special[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f};
    srand(seed);
    for (int64_t i = 0; i < nx; i++) x[i] = rand() % 7 == 0 ? special[rand() % 5] : (float)(rand() % 5 - 2);
    for (int64_t i = 0; i < ny; i++) dy[i] = (float)rand() / RAND_MAX - 0.5f;
    reference(&g, x, dy, want_y, want_dx);
    ember_max_pool2d_f32(&g, x, y);
    ember_max_pool2d_backward_f32(&g, x, want_y, dy, dx);
    int bad = 0;
    for (int64_t i = 0; i < ny; i++) bad |= !same(y[i], want_y[i]);
    for (int64_t i = 0; i < nx; i++) bad |= !same(dx[i], want_dx[i]);
    if (bad)
        fprintf(stderr, "max pooling wrong: %ldx%ld -> %ldx%ld, window %ldx%ld step %ldx%ld pad %ldx%ld\n", (long)g.h,
                (long)g.w, (long)g.oh, (long)g.ow, (long)g.kh, (long)g.kw, (long)g.sh, (long)g.sw, (long)g.ph,
                (long)g.pw);
    free(x);
    free(dy);
    free(y);
    free(want_y);
    free(dx);
    free(want_dx);
    return bad;
}

int main(void) {
    ember_pool_set_threads(3); /* loops past EMBER_PARALLEL_GRAIN run split over a team */
    /* planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw */
    const ember_pool2d cases[] = {
        {3, 8, 8, 4, 4, 3, 3, 2, 2, 1, 1},  /* a ResNet stem */
        {2, 7, 9, 3, 4, 2, 2, 2, 2, 0, 0},  /* a remainder row and column left out */
        {2, 7, 7, 4, 4, 3, 3, 2, 2, 0, 0},  /* 'full': the last windows hang off the map */
        {1, 5, 6, 5, 6, 3, 3, 1, 1, 1, 1},  /* overlapping windows */
        {2, 6, 5, 4, 3, 3, 2, 2, 3, 2, 1},
        {1, 4, 4, 1, 1, 4, 4, 1, 1, 0, 0},  /* global */
        {4, 1, 11, 1, 6, 1, 3, 1, 2, 0, 1}, /* 1-D as one-row maps */
        {1, 3, 3, 3, 3, 1, 1, 1, 1, 0, 0},
        {0, 4, 4, 2, 2, 2, 2, 2, 2, 0, 0},  /* no planes */
        {150, 32, 32, 16, 16, 3, 3, 2, 2, 1, 1}, /* planes split over the team */
    };
    int bad = 0;
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
        for (unsigned seed = 1; seed <= 20; seed++) bad |= check(cases[k], seed);
    ember_pool_shutdown();
    if (bad) return 1;
    printf("pool kernels: ok\n");
    return 0;
}
