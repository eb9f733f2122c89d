/* BatchNorm's per-channel kernels (norm_kernels.h). */
#include "norm_kernels.h"
#include "thread_pool.h"


/* The module is built at -O2, whose cost model (GCC) leaves these loops scalar: vectorized. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

#if defined(__GNUC__) && !defined(__clang__)
#define IVDEP _Pragma("GCC ivdep")
#else
#define IVDEP
#endif

#define LANES 8 /* independent float sums per run: one vector register, no chain of dependent adds */

static double run_sum(const float *x, int64_t n) {
    float lane[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) lane[k] += x[i + k];
    double s = 0;
    for (int k = 0; k < LANES; k++) s += lane[k];
    for (; i < n; i++) s += x[i];
    return s;
}

static double run_sq_dev(const float *x, int64_t n, float m) {
    float lane[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) {
            float d = x[i + k] - m;
            lane[k] += d * d;
        }
    double s = 0;
    for (int k = 0; k < LANES; k++) s += lane[k];
    for (; i < n; i++) s += (double)(x[i] - m) * (x[i] - m);
    return s;
}

static double run_dot_dev(const float *y, const float *x, int64_t n, float m) {
    float lane[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) lane[k] += y[i + k] * (x[i + k] - m);
    double s = 0;
    for (int k = 0; k < LANES; k++) s += lane[k];
    for (; i < n; i++) s += (double)y[i] * (x[i] - m);
    return s;
}

/* The statistics run their channels in parallel (thread_pool.h); each channel sums its runs in
 * the order of `outer`, whatever the split, so results do not depend on the team's size. */
typedef struct {
    const float *x, *dy, *mean_in;
    int64_t outer, channels, inner;
    float *mean, *var, *sum_dy, *sum_dy_xc;
} stats_job;

static void mean_var_channels(void *ctx, size_t first, size_t end, int chunk) {
    const stats_job *j = ctx;
    const double count = (double)j->outer * (double)j->inner;
    (void)chunk;
    for (int64_t c = (int64_t)first; c < (int64_t)end; c++) {
        double s = 0, q = 0;
        for (int64_t o = 0; o < j->outer; o++) s += run_sum(j->x + (o * j->channels + c) * j->inner, j->inner);
        j->mean[c] = count > 0 ? (float)(s / count) : 0.0f;
        for (int64_t o = 0; o < j->outer; o++)
            q += run_sq_dev(j->x + (o * j->channels + c) * j->inner, j->inner, j->mean[c]);
        j->var[c] = count > 0 ? (float)(q / count) : 0.0f;
    }
}

int ember_channel_mean_var_f32(const float *x, int64_t outer, int64_t channels, int64_t inner, float *mean,
                               float *var) {
    stats_job job = {.x = x, .outer = outer, .channels = channels, .inner = inner, .mean = mean, .var = var};
    ember_parallel_for((size_t)channels, ember_pool_grain(outer * inner, EMBER_PARALLEL_GRAIN), 0, mean_var_channels, &job);
    return 0;
}

static void grad_sum_channels(void *ctx, size_t first, size_t end, int chunk) {
    const stats_job *j = ctx;
    (void)chunk;
    for (int64_t c = (int64_t)first; c < (int64_t)end; c++) {
        double s = 0, d = 0;
        for (int64_t o = 0; o < j->outer; o++) {
            int64_t at = (o * j->channels + c) * j->inner;
            s += run_sum(j->dy + at, j->inner);
            d += run_dot_dev(j->dy + at, j->x + at, j->inner, j->mean_in[c]);
        }
        j->sum_dy[c] = (float)s;
        j->sum_dy_xc[c] = (float)d;
    }
}

int ember_channel_grad_sums_f32(const float *dy, const float *x, const float *mean, int64_t outer, int64_t channels,
                                int64_t inner, float *sum_dy, float *sum_dy_xc) {
    stats_job job = {.x = x, .dy = dy, .mean_in = mean, .outer = outer, .channels = channels, .inner = inner,
                     .sum_dy = sum_dy, .sum_dy_xc = sum_dy_xc};
    ember_parallel_for((size_t)channels, ember_pool_grain(outer * inner, EMBER_PARALLEL_GRAIN), 0, grad_sum_channels, &job);
    return 0;
}

typedef struct {
    const float *dy, *a, *x, *m, *b, *d;
    int64_t channels, inner;
    float *out;
} affine_job;

/* Rows [first, end) of (outer * channels) rows of `inner` elements. */
static void affine_rows(void *ctx, size_t first, size_t end, int chunk) {
    const affine_job *j = ctx;
    const int64_t inner = j->inner;
    (void)chunk;
    for (int64_t r = (int64_t)first; r < (int64_t)end; r++) {
        const int64_t c = r % j->channels, at = r * inner;
        const float *xs = j->x + at;
        float *os = j->out + at;
        const float mc = j->m[c], bc = j->b[c], dc = j->d[c];
        /* out may be dy or x: element i is read, then written, never another one (ivdep) */
        if (j->dy) {
            const float *ys = j->dy + at;
            const float ac = j->a[c];
IVDEP
            for (int64_t i = 0; i < inner; i++) os[i] = ys[i] * ac + (xs[i] - mc) * bc + dc;
        } else {
IVDEP
            for (int64_t i = 0; i < inner; i++) os[i] = (xs[i] - mc) * bc + dc;
        }
    }
}

void ember_channel_affine_f32(const float *dy, const float *a, const float *x, const float *m, const float *b,
                              const float *d, int64_t outer, int64_t channels, int64_t inner, float *out) {
    affine_job job = {dy, a, x, m, b, d, channels, inner, out};
    ember_parallel_for((size_t)(outer * channels), ember_pool_grain(inner, EMBER_PARALLEL_GRAIN), 0, affine_rows, &job);
}
