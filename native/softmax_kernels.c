/* The softmax row kernels (softmax_kernels.h). */
#include "softmax_kernels.h"

#include <math.h>

#include "fast_math.h"
#include "thread_pool.h"

/* The module is built at -O2, whose cost model (GCC) leaves these loops scalar: vectorized. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

#define LANES 16 /* independent float sums per row: no chain of dependent adds */

/* Rows run in parallel (thread_pool.h), at least this many values a chunk: an exponential and a few
 * passes each, ~1 ns a value. */
#define SOFTMAX_GRAIN 8192

typedef struct {
    const float *x, *y; /* forward: x; backward: dy, y */
    int64_t n;
    int take_log;
    float *out;
} rows_job;

/* the row's maximum; NaN if any value is NaN (as numpy's max) */
FM_CLONES
static float row_max(const float *x, int64_t n) {
    float lane[LANES], probe[LANES] = {0}; /* probe: NaN once a NaN or an infinity went by */
    for (int k = 0; k < LANES; k++) lane[k] = -__builtin_inff();
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) {
            float v = x[i + k];
            lane[k] = v > lane[k] ? v : lane[k];
            probe[k] += v * 0.0f;
        }
    float m = lane[0], p = probe[0];
    for (int k = 1; k < LANES; k++) {
        m = lane[k] > m ? lane[k] : m;
        p += probe[k];
    }
    for (; i < n; i++) {
        m = x[i] > m ? x[i] : m;
        p += x[i] * 0.0f;
    }
    if (p == p) return m;
    for (i = 0; i < n; i++) /* an infinity or a NaN: which */
        if (x[i] != x[i]) return x[i];
    return m;
}

/* y[i] = e^(x[i] - m); returns their sum */
FM_CLONES
static double row_exp_sum(const float *x, int64_t n, float m, float *y) {
    float lane[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) {
            float e = exp_f32(x[i + k] - m);
            y[i + k] = e;
            lane[k] += e;
        }
    double s = 0;
    for (int k = 0; k < LANES; k++) s += lane[k];
    for (; i < n; i++) {
        y[i] = exp_f32(x[i] - m);
        s += y[i];
    }
    return s;
}

/* e^x[k] for the k < n < LANES values of a short row, computed in one vector over the row padded
 * with its first value (a row shorter than the lanes would otherwise take every exponential alone) */
static inline void short_row_exp(const float *x, int64_t n, float m, float e[LANES]) {
    float buf[LANES];
    for (int64_t k = 0; k < LANES; k++) buf[k] = x[k < n ? k : 0];
    for (int k = 0; k < LANES; k++) e[k] = exp_f32(buf[k] - m);
}

/* the sum of e^(x[i] - m) */
FM_CLONES
static double row_exp_total(const float *x, int64_t n, float m) {
    if (n < LANES) { /* the same sum, in the same order, as the tail loop below */
        float e[LANES];
        short_row_exp(x, n, m, e);
        double s = 0;
        for (int64_t i = 0; i < n; i++) s += e[i];
        return s;
    }
    float lane[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) lane[k] += exp_f32(x[i + k] - m);
    double s = 0;
    for (int k = 0; k < LANES; k++) s += lane[k];
    for (; i < n; i++) s += exp_f32(x[i] - m);
    return s;
}

/* the sum of a[i] */
FM_CLONES
static double row_sum(const float *a, int64_t n) {
    float lane[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) lane[k] += a[i + k];
    double s = 0;
    for (int k = 0; k < LANES; k++) s += lane[k];
    for (; i < n; i++) s += a[i];
    return s;
}

/* the sum of a[i] * b[i] */
FM_CLONES
static double row_dot(const float *a, const float *b, int64_t n) {
    float lane[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) lane[k] += a[i + k] * b[i + k];
    double s = 0;
    for (int k = 0; k < LANES; k++) s += lane[k];
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

/* one row of the forward (inlined into each instruction set's clone of its caller) */
static inline void forward_row(const float *xr, int64_t n, int take_log, float *yr) {
    float m = row_max(xr, n);
    if (!isfinite(m)) m = 0; /* a row of -inf stays finite where it can; NaN spreads below */
    if (take_log) { /* (x - m) - log(s), as numpy: x - m first, so large x keep their digits */
        float ls = (float)log(row_exp_total(xr, n, m));
        for (int64_t i = 0; i < n; i++) yr[i] = (xr[i] - m) - ls;
    } else {
        float s = (float)row_exp_sum(xr, n, m, yr);
        for (int64_t i = 0; i < n; i++) yr[i] /= s;
    }
}

FM_CLONES
static void forward_rows(void *ctx, size_t first, size_t end, int chunk) {
    const rows_job *j = ctx;
    const int64_t n = j->n;
    (void)chunk;
    for (int64_t r = (int64_t)first; r < (int64_t)end; r++) forward_row(j->x + r * n, n, j->take_log, j->out + r * n);
}

void ember_softmax_rows_f32(const float *x, int64_t rows, int64_t n, int take_log, float *y) {
    rows_job job = {.x = x, .n = n, .take_log = take_log, .out = y};
    ember_parallel_for((size_t)rows, ember_pool_grain(n, SOFTMAX_GRAIN), 0, forward_rows, &job);
}

/* one row of the backward (inlined likewise) */
static inline void backward_row(const float *dyr, const float *yr, int64_t n, int take_log, float *dxr) {
    if (take_log && n < LANES) { /* the loop below, its exponentials as one vector */
        float s = (float)row_sum(dyr, n), e[LANES];
        short_row_exp(yr, n, 0.0f, e);
        for (int64_t i = 0; i < n; i++) dxr[i] = dyr[i] - e[i] * s;
    } else if (take_log) { /* dx = dy - e^y sum(dy) */
        float s = (float)row_sum(dyr, n);
        for (int64_t i = 0; i < n; i++) dxr[i] = dyr[i] - exp_f32(yr[i]) * s;
    } else { /* dx = y (dy - sum(dy y)) */
        float s = (float)row_dot(dyr, yr, n);
        for (int64_t i = 0; i < n; i++) dxr[i] = yr[i] * (dyr[i] - s);
    }
}

FM_CLONES
static void backward_rows(void *ctx, size_t first, size_t end, int chunk) {
    const rows_job *j = ctx;
    const int64_t n = j->n;
    (void)chunk;
    for (int64_t r = (int64_t)first; r < (int64_t)end; r++)
        backward_row(j->x + r * n, j->y + r * n, n, j->take_log, j->out + r * n);
}

void ember_softmax_rows_backward_f32(const float *dy, const float *y, int64_t rows, int64_t n, int take_log,
                                     float *dx) {
    rows_job job = {.x = dy, .y = y, .n = n, .take_log = take_log, .out = dx};
    ember_parallel_for((size_t)rows, ember_pool_grain(n, SOFTMAX_GRAIN), 0, backward_rows, &job);
}

/* -- softmax cross-entropy per row ------------------------------------------------------------------ */
typedef struct {
    const float *x, *label, *g; /* forward: x; backward: g and the log-probabilities in x */
    int64_t n;
    float *logp, *out; /* forward: the log-probabilities and the losses; backward: out = dx */
} ce_job;

/* 1 when every label can be truncated to an integer exactly (finite, within +-4.6e18) */
static int labels_fit(const float *label, int64_t rows) {
    for (int64_t r = 0; r < rows; r++)
        if (!(label[r] > -4.6e18f && label[r] < 4.6e18f)) return 0;
    return 1;
}

/* the class of a label as pick's clip mode takes it: numpy's astype(int64), then clipped into [0, n) */
static inline int64_t class_of(float label, int64_t n) {
    int64_t i = (int64_t)label;
    return i < 0 ? 0 : (i > n - 1 ? n - 1 : i);
}

FM_CLONES
static void ce_forward_rows(void *ctx, size_t first, size_t end, int chunk) {
    const ce_job *j = ctx;
    const int64_t n = j->n;
    (void)chunk;
    for (int64_t r = (int64_t)first; r < (int64_t)end; r++) {
        float *yr = j->logp + r * n;
        forward_row(j->x + r * n, n, 1, yr);
        j->out[r] = -yr[class_of(j->label[r], n)];
    }
}

FM_CLONES
static void ce_backward_rows(void *ctx, size_t first, size_t end, int chunk) {
    const ce_job *j = ctx;
    const int64_t n = j->n;
    (void)chunk;
    for (int64_t r = (int64_t)first; r < (int64_t)end; r++) {
        float *dxr = j->out + r * n;
        for (int64_t i = 0; i < n; i++) dxr[i] = 0.0f; /* pick's gradient of -g: -g at the label */
        dxr[class_of(j->label[r], n)] = -j->g[r];
        backward_row(dxr, j->x + r * n, n, 1, dxr);
    }
}

int ember_softmax_ce_rows_f32(const float *x, const float *label, int64_t rows, int64_t n, float *logp, float *loss) {
    if (!labels_fit(label, rows)) return 0;
    ce_job job = {.x = x, .label = label, .n = n, .logp = logp, .out = loss};
    ember_parallel_for((size_t)rows, ember_pool_grain(n, SOFTMAX_GRAIN), 0, ce_forward_rows, &job);
    return 1;
}

int ember_softmax_ce_rows_backward_f32(const float *g, const float *logp, const float *label, int64_t rows, int64_t n,
                                       float *dx) {
    if (!labels_fit(label, rows)) return 0;
    ce_job job = {.x = logp, .label = label, .g = g, .n = n, .out = dx};
    ember_parallel_for((size_t)rows, ember_pool_grain(n, SOFTMAX_GRAIN), 0, ce_backward_rows, &job);
    return 1;
}
