/* Max pooling kernels (pool_kernels.h). */
#include "pool_kernels.h"
#include "thread_pool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The module is built at -O2, whose cost model (GCC) leaves loops of unknown length scalar: the
 * row folds below are vectorized (compare and select, each element's result as written). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

/* numpy's maximum(r, v): r if r > v or r is NaN, else v (so of equal values the second) */
static inline float np_maximum(float r, float v) {
    float m = r > v ? r : v; /* (written as two selects so the compiler emits max and blend, not branches:
                                on pooled data the comparisons are coin flips) */
    return r != r ? r : m;
}

/* The rows [*lo, *hi) of a window starting at `start` (maybe negative) that lie inside 0..n-1. */
static inline void clip_window(int64_t start, int64_t k, int64_t n, int64_t *lo, int64_t *hi) {
    *lo = start < 0 ? 0 : start;
    *hi = start + k > n ? n : start + k;
}

/* numpy reduces the window's rows first, then its columns: so does this, one output row at a time
 * (`rows` holds the folded rows of the map; positions outside the map, at -inf, never change a fold) */
static void max_pool_plane(const ember_pool2d *g, const float *map, float *out, float *rows) {
    for (int64_t oy = 0; oy < g->oh; oy++) {
        int64_t r0, r1;
        clip_window(oy * g->sh - g->ph, g->kh, g->h, &r0, &r1);
        for (int64_t c = 0; c < g->w; c++) rows[c] = -INFINITY;
        for (int64_t r = r0; r < r1; r++) {
            const float *line = map + r * g->w;
            for (int64_t c = 0; c < g->w; c++) rows[c] = np_maximum(rows[c], line[c]);
        }
        for (int64_t ox = 0; ox < g->ow; ox++) {
            int64_t c0, c1;
            clip_window(ox * g->sw - g->pw, g->kw, g->w, &c0, &c1);
            float r = -INFINITY;
            for (int64_t c = c0; c < c1; c++) r = np_maximum(r, rows[c]);
            out[oy * g->ow + ox] = r;
        }
    }
}

typedef struct {
    const ember_pool2d *g;
    const float *x, *y, *dy;
    float *out;   /* y, or dx */
    float *rows;  /* the forward's folded rows: w floats per chunk */
} pool_job;

static void pool_planes(void *ctx, size_t first, size_t end, int chunk) {
    const pool_job *j = ctx;
    const ember_pool2d *g = j->g;
    float *rows = j->rows + chunk * (g->w > 0 ? g->w : 1);
    for (int64_t p = (int64_t)first; p < (int64_t)end; p++)
        max_pool_plane(g, j->x + p * g->h * g->w, j->out + p * g->oh * g->ow, rows);
}

int ember_max_pool2d_f32(const ember_pool2d *g, const float *x, float *y) {
    int chunks = ember_pool_threads();
    float *rows = malloc((size_t)((g->w > 0 ? g->w : 1) * chunks) * sizeof *rows);
    if (!rows) return -1;
    pool_job job = {.g = g, .x = x, .out = y, .rows = rows};
    ember_parallel_for((size_t)g->planes, ember_pool_grain(g->h * g->w, EMBER_PARALLEL_GRAIN), chunks, pool_planes, &job);
    free(rows);
    return 0;
}

/* The first window position in row-major order whose value equals `target`, as an index into the
 * map, or -1 (none, or a position outside the map, at -inf, came first). */
static int64_t first_equal(const ember_pool2d *g, const float *map, int64_t oy, int64_t ox, float target) {
    int64_t y0 = oy * g->sh - g->ph, x0 = ox * g->sw - g->pw;
    if (target != -INFINITY) { /* outside positions never equal it: scan the window's part in the map */
        int64_t r0, r1, c0, c1;
        clip_window(y0, g->kh, g->h, &r0, &r1);
        clip_window(x0, g->kw, g->w, &c0, &c1);
        int64_t at = -1; /* last to first, every position: selects rather than a branch per position */
        for (int64_t row = r1 - 1; row >= r0; row--)
            for (int64_t col = c1 - 1; col >= c0; col--) at = map[row * g->w + col] == target ? row * g->w + col : at;
        return at;
    }
    for (int64_t i = 0; i < g->kh; i++) {
        int64_t row = y0 + i;
        for (int64_t j = 0; j < g->kw; j++) {
            int64_t col = x0 + j;
            int inside = row >= 0 && row < g->h && col >= 0 && col < g->w;
            if (!inside) return -1;
            if (map[row * g->w + col] == target) return row * g->w + col;
        }
    }
    return -1;
}

static void pool_backward_planes(void *ctx, size_t first, size_t end, int chunk) {
    const pool_job *j = ctx;
    const ember_pool2d *g = j->g;
    const float *x = j->x, *y = j->y, *dy = j->dy;
    float *dx = j->out;
    (void)chunk;
    memset(dx + first * g->h * g->w, 0, (end - first) * (size_t)(g->h * g->w) * sizeof *dx);
    for (int64_t p = (int64_t)first; p < (int64_t)end; p++) {
        const float *map = x + p * g->h * g->w, *out = y + p * g->oh * g->ow, *grad = dy + p * g->oh * g->ow;
        float *acc = dx + p * g->h * g->w;
        /* outputs last to first: an input position then receives its gradients in kernel-position
         * order, the order numpy's one pass per kernel position added them */
        for (int64_t oy = g->oh - 1; oy >= 0; oy--)
            for (int64_t ox = g->ow - 1; ox >= 0; ox--) {
                int64_t at = first_equal(g, map, oy, ox, out[oy * g->ow + ox]);
                if (at >= 0) acc[at] += grad[oy * g->ow + ox];
            }
    }
}

void ember_max_pool2d_backward_f32(const ember_pool2d *g, const float *x, const float *y, const float *dy, float *dx) {
    pool_job job = {.g = g, .x = x, .y = y, .dy = dy, .out = dx};
    ember_parallel_for((size_t)g->planes, ember_pool_grain(g->h * g->w, EMBER_PARALLEL_GRAIN), 0, pool_backward_planes, &job);
}
