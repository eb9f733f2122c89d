/* Convolution window copies (conv_kernels.h). */
#include "conv_kernels.h"
#include "thread_pool.h"

#include <stdlib.h>
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
                if (to_cols && step == 2) /* a stem's or a downsampling layer's: a constant stride vectorizes */
                    for (int64_t ox = 0; ox < g->ow; ox++) b[ox] = m[2 * ox];
                else if (to_cols)
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

typedef struct {
    const ember_conv_windows *g;
    float *x, *cols;
    int to_cols;
} window_job;

/* Items [first, end): (channel, kernel row) pairs when copying into the columns, whole channels when
 * adding back (a channel's kernel rows add onto the same map).  Each writes only its own blocks or map. */
static void window_items(void *ctx, size_t first, size_t end, int chunk) {
    const window_job *job = ctx;
    const ember_conv_windows *g = job->g;
    const int64_t map = g->outer * g->h * g->w * g->inner, block = g->outer * g->oh * g->ow * g->inner;
    const int64_t rows = job->to_cols ? 1 : g->kh; /* kernel rows an item holds */
    (void)chunk;
    for (int64_t item = (int64_t)first; item < (int64_t)end; item++) {
        const int64_t c = item * rows / g->kh, i0 = item * rows % g->kh;
        for (int64_t i = i0; i < i0 + rows; i++)
            for (int64_t j = 0; j < g->kw; j++)
                windows(g, i, j, job->x + c * map, job->cols + ((c * g->kh + i) * g->kw + j) * block, job->to_cols);
    }
}

static void each_window(const ember_conv_windows *g, float *x, float *cols, int to_cols) {
    /* a few channels (an RGB stem's 3) would split unevenly: the copies split by kernel rows too */
    const int64_t rows = to_cols ? 1 : g->kh, items = g->channels * (g->kh / rows);
    const int64_t per_item = rows * g->kw * g->outer * g->oh * g->ow * g->inner;
    window_job job = {g, x, cols, to_cols};
    ember_parallel_for((size_t)items, ember_pool_grain(per_item, EMBER_PARALLEL_GRAIN), 0, window_items, &job);
}

void ember_im2col_f32(const ember_conv_windows *g, const float *x, float *cols) {
    each_window(g, (float *)x, cols, 1); /* (x is only read when copying into the columns) */
}

void ember_col2im_f32(const ember_conv_windows *g, const float *cols, float *x) {
    each_window(g, x, (float *)cols, 0); /* (the columns are only read when adding back) */
}

/* ---- Winograd F(2x2, 3x3) transforms ---------------------------------------------------------------
 * G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1], B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1] and
 * A^T = [1 1 1 0; 0 1 -1 -1].  Channels are innermost in v and m, so each tile's arithmetic is a loop
 * over the channels (long, contiguous: it vectorizes); each image is turned to (h, w, c) in a buffer
 * that stays in cache, and back. */

#if defined(__GNUC__) && !defined(__clang__)
#define IVDEP _Pragma("GCC ivdep") /* the streams of these loops never overlap: vectorize without checks */
#else
#define IVDEP
#endif

#define WEIGHT_BLOCK 64 /* kernels transformed together, each step a vector op across them */

/* 1 if no value is NaN or infinite (exponent bits not all ones).  The transforms add and subtract
 * neighbouring values, so one such value would reach outputs that do not depend on it: the callers
 * refuse those arrays (the direct form then keeps a NaN where it belongs). */
typedef struct {
    const float *x;
    uint32_t bad[64]; /* per chunk (thread_pool.h: chunk < 64) */
} finite_job;

static void finite_range(void *ctx, size_t first, size_t end, int chunk) {
    finite_job *j = ctx;
    uint32_t bad = 0;
    for (size_t i = first; i < end; i++) {
        uint32_t bits;
        memcpy(&bits, j->x + i, sizeof bits);
        bad |= (uint32_t)((bits & 0x7f800000u) == 0x7f800000u);
    }
    j->bad[chunk] |= bad;
}

static int all_finite(const float *x, int64_t count) {
    finite_job job = {.x = x};
    ember_parallel_for((size_t)count, EMBER_PARALLEL_GRAIN * 4, 64, finite_range, &job); /* a light loop */
    uint32_t bad = 0;
    for (int k = 0; k < 64; k++) bad |= job.bad[k];
    return !bad;
}

/* The kernel transforms run blocks of WEIGHT_BLOCK kernels in parallel (thread_pool.h). */
typedef struct {
    const float *src;
    float *dst;
    int64_t f, c;
    int data_grad;
} weight_job;

#define WEIGHT_GRAIN (EMBER_PARALLEL_GRAIN / (16 * WEIGHT_BLOCK)) /* blocks: 16 floats out per kernel */

static void weight_blocks(void *ctx, size_t first, size_t end, int chunk) {
    const weight_job *j = ctx;
    const int64_t f = j->f, c = j->c, pairs = f * c;
    const int data_grad = j->data_grad;
    float g[9][WEIGHT_BLOCK], gg[4][3][WEIGHT_BLOCK];
    (void)chunk;
    for (int64_t p0 = (int64_t)first * WEIGHT_BLOCK; p0 < pairs && p0 < (int64_t)end * WEIGHT_BLOCK; p0 += WEIGHT_BLOCK) {
        const int64_t nb = pairs - p0 < WEIGHT_BLOCK ? pairs - p0 : WEIGHT_BLOCK;
        /* output position p0 + i is (f, c) with data_grad, else (c, f): stepped, not divided, per kernel */
        int64_t fi = data_grad ? p0 / c : p0 % f, ci = data_grad ? p0 % c : p0 / f;
        for (int64_t i = 0; i < nb; i++) {
            const float *k = j->src + (fi * c + ci) * 9;
            if (data_grad) { /* rotated by 180 degrees */
                for (int q = 0; q < 9; q++) g[q][i] = k[8 - q];
                if (++ci == c) ci = 0, fi++;
            } else {
                for (int q = 0; q < 9; q++) g[q][i] = k[q];
                if (++fi == f) fi = 0, ci++;
            }
        }
        for (int col = 0; col < 3; col++) { /* G g: G down each column */
            const float *a = g[col], *b = g[3 + col], *cc = g[6 + col];
            IVDEP for (int64_t i = 0; i < nb; i++) {
                gg[0][col][i] = a[i];
                gg[1][col][i] = 0.5f * (a[i] + b[i] + cc[i]);
                gg[2][col][i] = 0.5f * (a[i] - b[i] + cc[i]);
                gg[3][col][i] = cc[i];
            }
        }
        for (int r = 0; r < 4; r++) { /* (G g) G^T: across each row */
            const float *a = gg[r][0], *b = gg[r][1], *cc = gg[r][2];
            float *o0 = j->dst + (4 * r) * pairs + p0, *o1 = o0 + pairs, *o2 = o1 + pairs, *o3 = o2 + pairs;
            IVDEP for (int64_t i = 0; i < nb; i++) {
                o0[i] = a[i];
                o1[i] = 0.5f * (a[i] + b[i] + cc[i]);
                o2[i] = 0.5f * (a[i] - b[i] + cc[i]);
                o3[i] = cc[i];
            }
        }
    }
}

int ember_winograd_weights_f32(const float *w, int64_t f, int64_t c, int data_grad, float *u) {
    const int64_t pairs = f * c;
    if (!all_finite(w, pairs * 9)) return 0;
    weight_job job = {w, u, f, c, data_grad};
    ember_parallel_for((size_t)((pairs + WEIGHT_BLOCK - 1) / WEIGHT_BLOCK), WEIGHT_GRAIN, 0, weight_blocks, &job);
    return 1;
}

/* One image (c, h, w) into dst as (h, row, c): dst[(y * row + x) * c + ch] = map[ch][y][x], x < w <= row. */
static void image_to_hwc(const float *map, int64_t c, int64_t h, int64_t w, int64_t row, float *dst) {
    for (int64_t ch = 0; ch < c; ch++)
        for (int64_t y = 0; y < h; y++) {
            const float *src = map + (ch * h + y) * w;
            float *out = dst + y * row * c + ch;
            for (int64_t q = 0; q < w; q++) out[q * c] = src[q];
        }
}

/* The image transforms run their images in parallel (thread_pool.h), each chunk of images with a
 * scratch buffer of its own: one image as (h, w, c), which stays in cache. */
typedef struct {
    const float *src, *shift;
    float *dst;
    int64_t c, h, w, plane; /* plane: tiles * channels, the stride between the 16 planes of v, m, dm */
    int relu;
    float *scratch;
    int64_t scratch_floats; /* per chunk */
} image_job;

/* Runs body over n images, each chunk with a buffer of `floats` floats (zeroed if `zero`); 0 with
 * nothing run when the buffers cannot be had. */
static int each_image(image_job *job, int64_t n, int64_t floats, int zero, ember_range_fn body) {
    int chunks = ember_pool_threads();
    if (chunks > n) chunks = n < 1 ? 1 : (int)n;
    size_t count = (size_t)(floats * chunks);
    job->scratch_floats = floats;
    job->scratch = zero ? calloc(count, sizeof(float)) : malloc(count * sizeof(float));
    if (!job->scratch) return 0;
    ember_parallel_for((size_t)n, 1, chunks, body, job);
    free(job->scratch);
    return 1;
}

static void input_images(void *ctx, size_t first, size_t end, int chunk) {
    const image_job *j = ctx;
    const int64_t c = j->c, h = j->h, w = j->w, th = (h + 1) / 2, tw = (w + 1) / 2, wp = 2 * tw + 2, plane = j->plane;
    float *img = j->scratch + chunk * j->scratch_floats; /* padded (h, w, c): the border stays 0 */
    for (int64_t i = (int64_t)first; i < (int64_t)end; i++) {
        image_to_hwc(j->src + i * c * h * w, c, h, w, wp, img + (wp + 1) * c);
        for (int64_t ty = 0; ty < th; ty++)
            for (int64_t tx = 0; tx < tw; tx++) {
                const float *d = img + (2 * ty * wp + 2 * tx) * c;
                float *o = j->dst + ((i * th + ty) * tw + tx) * c;
                const float *r0 = d, *r1 = d + wp * c, *r2 = d + 2 * wp * c, *r3 = d + 3 * wp * c;
                for (int a = 0; a < 4; a++) {
                    /* row a of B^T d is ra = (r0 - r2, r1 + r2, r2 - r1, r1 - r3)[a], per column l */
                    const float *p = a == 0 ? r0 : r1, *q = a == 0 ? r2 : a == 3 ? r3 : r2;
                    const float sp = a == 2 ? -1.0f : 1.0f, sq = a == 1 || a == 2 ? 1.0f : -1.0f;
                    float *o0 = o + (4 * a) * plane, *o1 = o0 + plane, *o2 = o1 + plane, *o3 = o2 + plane;
                    IVDEP for (int64_t ch = 0; ch < c; ch++) {
                        const float t0 = sp * p[ch] + sq * q[ch], t1 = sp * p[c + ch] + sq * q[c + ch];
                        const float t2 = sp * p[2 * c + ch] + sq * q[2 * c + ch];
                        const float t3 = sp * p[3 * c + ch] + sq * q[3 * c + ch];
                        o0[ch] = t0 - t2;
                        o1[ch] = t1 + t2;
                        o2[ch] = t2 - t1;
                        o3[ch] = t1 - t3;
                    }
                }
            }
    }
}

int ember_winograd_input_f32(const float *x, int64_t n, int64_t c, int64_t h, int64_t w, float *v) {
    const int64_t th = (h + 1) / 2, tw = (w + 1) / 2;
    if (!all_finite(x, n * c * h * w)) return 0;
    image_job job = {.src = x, .dst = v, .c = c, .h = h, .w = w, .plane = n * th * tw * c};
    return each_image(&job, n, (2 * th + 2) * (2 * tw + 2) * c, 1, input_images);
}

static void output_images(void *ctx, size_t first, size_t end, int chunk) {
    const image_job *j = ctx;
    const int64_t f = j->c, h = j->h, w = j->w, th = (h + 1) / 2, tw = (w + 1) / 2, w2 = 2 * tw, plane = j->plane;
    float *img = j->scratch + chunk * j->scratch_floats; /* one image (2 th, 2 tw, f), then 3 rows of f */
    float *add = img + 2 * th * w2 * f, *s0 = add + f, *s1 = s0 + f;
    for (int64_t ch = 0; ch < f; ch++) add[ch] = j->shift ? j->shift[ch] : 0.0f;
    for (int64_t i = (int64_t)first; i < (int64_t)end; i++) {
        for (int64_t ty = 0; ty < th; ty++)
            for (int64_t tx = 0; tx < tw; tx++) {
                const float *p = j->src + ((i * th + ty) * tw + tx) * f;
                float *o00 = img + (2 * ty * w2 + 2 * tx) * f, *o01 = o00 + f, *o10 = o00 + w2 * f, *o11 = o10 + f;
                IVDEP for (int64_t ch = 0; ch < f; ch++) {
                    o00[ch] = add[ch];
                    o01[ch] = add[ch];
                    o10[ch] = add[ch];
                    o11[ch] = add[ch];
                }
                for (int b = 0; b < 4; b++) { /* column b of A^T m, then its share of each output */
                    const float *p0 = p + b * plane, *p1 = p0 + 4 * plane, *p2 = p1 + 4 * plane, *p3 = p2 + 4 * plane;
                    IVDEP for (int64_t ch = 0; ch < f; ch++) {
                        s0[ch] = p0[ch] + p1[ch] + p2[ch];
                        s1[ch] = p1[ch] - p2[ch] - p3[ch];
                    }
                    /* A's column b: (1, 0) for b = 0, (1, 1) for 1, (1, -1) for 2, (0, -1) for 3 */
                    const float e0 = b == 3 ? 0.0f : 1.0f, e1 = b == 0 ? 0.0f : b == 1 ? 1.0f : -1.0f;
                    IVDEP for (int64_t ch = 0; ch < f; ch++) {
                        o00[ch] += e0 * s0[ch];
                        o01[ch] += e1 * s0[ch];
                        o10[ch] += e0 * s1[ch];
                        o11[ch] += e1 * s1[ch];
                    }
                }
                if (j->relu)
                    IVDEP for (int64_t ch = 0; ch < f; ch++) { /* max(., 0) with NaN kept, as numpy's maximum */
                        o00[ch] = o00[ch] < 0.0f ? 0.0f : o00[ch];
                        o01[ch] = o01[ch] < 0.0f ? 0.0f : o01[ch];
                        o10[ch] = o10[ch] < 0.0f ? 0.0f : o10[ch];
                        o11[ch] = o11[ch] < 0.0f ? 0.0f : o11[ch];
                    }
            }
        for (int64_t ch = 0; ch < f; ch++) /* back to (f, h, w), cropped */
            for (int64_t yy = 0; yy < h; yy++) {
                float *dst = j->dst + ((i * f + ch) * h + yy) * w;
                const float *src = img + yy * w2 * f + ch;
                for (int64_t q = 0; q < w; q++) dst[q] = src[q * f];
            }
    }
}

int ember_winograd_output_f32(const float *m, int64_t n, int64_t f, int64_t h, int64_t w, const float *shift,
                              int relu, float *y) {
    const int64_t th = (h + 1) / 2, tw = (w + 1) / 2;
    image_job job = {.src = m, .shift = shift, .dst = y, .c = f, .h = h, .w = w, .plane = n * th * tw * f, .relu = relu};
    return each_image(&job, n, 2 * th * 2 * tw * f + 3 * f, 0, output_images);
}

static void grad_output_images(void *ctx, size_t first, size_t end, int chunk) {
    const image_job *j = ctx;
    const int64_t f = j->c, h = j->h, w = j->w, th = (h + 1) / 2, tw = (w + 1) / 2, w2 = 2 * tw, plane = j->plane;
    float *img = j->scratch + chunk * j->scratch_floats; /* one image (2 th, 2 tw, f): odd edges 0 */
    for (int64_t i = (int64_t)first; i < (int64_t)end; i++) {
        image_to_hwc(j->src + i * f * h * w, f, h, w, w2, img);
        for (int64_t ty = 0; ty < th; ty++)
            for (int64_t tx = 0; tx < tw; tx++) {
                const float *d00 = img + (2 * ty * w2 + 2 * tx) * f, *d01 = d00 + f, *d10 = d00 + w2 * f,
                            *d11 = d10 + f;
                float *o = j->dst + ((i * th + ty) * tw + tx) * f;
                /* A dY A^T, A = [1 0; 1 1; 1 -1; 0 -1]: row a of A dY is (r0, r0 + r1, r0 - r1, -r1)[a] */
                for (int a = 0; a < 4; a++) {
                    const float e0 = a == 3 ? 0.0f : 1.0f, e1 = a == 0 ? 0.0f : a == 1 ? 1.0f : -1.0f;
                    float *o0 = o + (4 * a) * plane, *o1 = o0 + plane, *o2 = o1 + plane, *o3 = o2 + plane;
                    IVDEP for (int64_t ch = 0; ch < f; ch++) {
                        const float c0 = e0 * d00[ch] + e1 * d10[ch], c1 = e0 * d01[ch] + e1 * d11[ch];
                        o0[ch] = c0;
                        o1[ch] = c0 + c1;
                        o2[ch] = c0 - c1;
                        o3[ch] = -c1;
                    }
                }
            }
    }
}

int ember_winograd_grad_output_f32(const float *dy, int64_t n, int64_t f, int64_t h, int64_t w, float *dm) {
    const int64_t th = (h + 1) / 2, tw = (w + 1) / 2;
    if (!all_finite(dy, n * f * h * w)) return 0;
    image_job job = {.src = dy, .dst = dm, .c = f, .h = h, .w = w, .plane = n * th * tw * f};
    return each_image(&job, n, 2 * th * 2 * tw * f, 1, grad_output_images);
}

static void grad_weight_blocks(void *ctx, size_t first, size_t end, int chunk) {
    const weight_job *j = ctx;
    const int64_t f = j->f, c = j->c, pairs = f * c;
    float gt[4][3][WEIGHT_BLOCK], out[9][WEIGHT_BLOCK];
    (void)chunk;
    /* pair p = ci * f + fi, as du's planes hold them */
    for (int64_t p0 = (int64_t)first * WEIGHT_BLOCK; p0 < pairs && p0 < (int64_t)end * WEIGHT_BLOCK; p0 += WEIGHT_BLOCK) {
        const int64_t nb = pairs - p0 < WEIGHT_BLOCK ? pairs - p0 : WEIGHT_BLOCK;
        for (int r = 0; r < 4; r++) { /* du G: G^T across each row, u -> (u0 + (u1 + u2) / 2, (u1 - u2) / 2, ...) */
            const float *u0 = j->src + (4 * r) * pairs + p0, *u1 = u0 + pairs, *u2 = u1 + pairs, *u3 = u2 + pairs;
            IVDEP for (int64_t i = 0; i < nb; i++) {
                gt[r][0][i] = u0[i] + 0.5f * (u1[i] + u2[i]);
                gt[r][1][i] = 0.5f * (u1[i] - u2[i]);
                gt[r][2][i] = 0.5f * (u1[i] + u2[i]) + u3[i];
            }
        }
        for (int col = 0; col < 3; col++) { /* G^T (du G): down each column */
            const float *a = gt[0][col], *b = gt[1][col], *cc = gt[2][col], *d = gt[3][col];
            IVDEP for (int64_t i = 0; i < nb; i++) {
                out[col][i] = a[i] + 0.5f * (b[i] + cc[i]);
                out[3 + col][i] = 0.5f * (b[i] - cc[i]);
                out[6 + col][i] = 0.5f * (b[i] + cc[i]) + d[i];
            }
        }
        int64_t fi = p0 % f, ci = p0 / f; /* stepped, not divided, per kernel */
        for (int64_t i = 0; i < nb; i++) {
            float *k = j->dst + (fi * c + ci) * 9;
            for (int q = 0; q < 9; q++) k[q] = out[q][i];
            if (++fi == f) fi = 0, ci++;
        }
    }
}

int ember_winograd_grad_weights_f32(const float *du, int64_t f, int64_t c, float *dw) {
    const int64_t pairs = f * c;
    weight_job job = {du, dw, f, c, 0};
    ember_parallel_for((size_t)((pairs + WEIGHT_BLOCK - 1) / WEIGHT_BLOCK), WEIGHT_GRAIN, 0, grad_weight_blocks, &job);
    return 1;
}
