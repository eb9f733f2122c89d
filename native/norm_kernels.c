/* BatchNorm's per-channel kernels (norm_kernels.h). */
#include "norm_kernels.h"

#include <stdlib.h>

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

int ember_channel_mean_var_f32(const float *x, int64_t outer, int64_t channels, int64_t inner, float *mean,
                               float *var) {
    double *acc = calloc((size_t)(channels > 0 ? channels : 1), sizeof *acc);
    if (!acc) return -1;
    const double count = (double)outer * (double)inner;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t c = 0; c < channels; c++) acc[c] += run_sum(x + (o * channels + c) * inner, inner);
    for (int64_t c = 0; c < channels; c++) {
        mean[c] = count > 0 ? (float)(acc[c] / count) : 0.0f;
        acc[c] = 0;
    }
    for (int64_t o = 0; o < outer; o++)
        for (int64_t c = 0; c < channels; c++) acc[c] += run_sq_dev(x + (o * channels + c) * inner, inner, mean[c]);
    for (int64_t c = 0; c < channels; c++) var[c] = count > 0 ? (float)(acc[c] / count) : 0.0f;
    free(acc);
    return 0;
}

int ember_channel_grad_sums_f32(const float *dy, const float *x, const float *mean, int64_t outer, int64_t channels,
                                int64_t inner, float *sum_dy, float *sum_dy_xc) {
    double *acc = calloc((size_t)(channels > 0 ? 2 * channels : 1), sizeof *acc);
    if (!acc) return -1;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t c = 0; c < channels; c++) {
            int64_t at = (o * channels + c) * inner;
            acc[c] += run_sum(dy + at, inner);
            acc[channels + c] += run_dot_dev(dy + at, x + at, inner, mean[c]);
        }
    for (int64_t c = 0; c < channels; c++) {
        sum_dy[c] = (float)acc[c];
        sum_dy_xc[c] = (float)acc[channels + c];
    }
    free(acc);
    return 0;
}

void ember_channel_affine_f32(const float *dy, const float *a, const float *x, const float *m, const float *b,
                              const float *d, int64_t outer, int64_t channels, int64_t inner, float *out) {
    for (int64_t o = 0; o < outer; o++)
        for (int64_t c = 0; c < channels; c++) {
            int64_t at = (o * channels + c) * inner;
            const float *xs = x + at;
            float *os = out + at;
            const float mc = m[c], bc = b[c], dc = d[c];
            /* out may be dy or x: element i is read, then written, never another one (ivdep) */
            if (dy) {
                const float *ys = dy + at;
                const float ac = a[c];
IVDEP
                for (int64_t i = 0; i < inner; i++) os[i] = ys[i] * ac + (xs[i] - mc) * bc + dc;
            } else {
IVDEP
                for (int64_t i = 0; i < inner; i++) os[i] = (xs[i] - mc) * bc + dc;
            }
        }
}
