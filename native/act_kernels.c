/* Activation kernels (act_kernels.h). */
#include "act_kernels.h"
#include "thread_pool.h"

#include <stddef.h>

/* The module is built at -O2, whose cost model (GCC) leaves loops of unknown length scalar: these
 * loops are the whole point of the file, so they are vectorized (each element's result as written). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

typedef struct {
    const float *a, *b; /* x, or dy and y */
    float *out;
} act_job;

/* x may be y: each element is read before it is written, at the same index. */
static void relu_range(void *ctx, size_t first, size_t end, int chunk) {
    const act_job *j = ctx;
    const float *x = j->a;
    float *y = j->out;
    (void)chunk;
    for (size_t i = first; i < end; i++) y[i] = (x[i] > 0.0f || x[i] != x[i]) ? x[i] : 0.0f;
}

void ember_relu_f32(const float *x, float *y, int64_t n) {
    act_job job = {x, NULL, y};
    ember_parallel_for((size_t)n, EMBER_PARALLEL_GRAIN, 0, relu_range, &job);
}

/* the derivative as two selects of its own (written nested, GCC leaves the loop scalar: 16x slower) */
static void relu_backward_range(void *ctx, size_t first, size_t end, int chunk) {
    const act_job *j = ctx;
    const float *dy = j->a, *y = j->b;
    float *dx = j->out;
    (void)chunk;
    for (size_t i = first; i < end; i++) {
        float yi = y[i];
        float d = yi > 0.0f ? 1.0f : 0.0f;
        d = yi != yi ? yi : d;
        dx[i] = dy[i] * d;
    }
}

void ember_relu_backward_f32(const float *dy, const float *y, float *dx, int64_t n) {
    act_job job = {dy, y, dx};
    ember_parallel_for((size_t)n, EMBER_PARALLEL_GRAIN, 0, relu_backward_range, &job);
}
