/* Optimizer update kernels (update_kernels.h). */
#include "update_kernels.h"
#include "thread_pool.h"

/* The module is built at -O2, whose cost model (GCC) leaves loops of unknown length scalar: these
 * loops are the whole point of the file, so they are vectorized.  Vectorizing keeps each element's
 * operations and their float32 rounding as written (no reassociation, no contraction). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

/* s clipped to [-clip, clip] (clip >= 0); a NaN compares false: kept, as numpy's clip */
static inline float clipped(float s, float clip) { return s < -clip ? -clip : (s > clip ? clip : s); }

/* g is restrict (it never overlaps out); w may be out itself: the compiler checks that at run time
 * and vectorizes both forms (measured: the in-place call as fast as one on restrict pointers). */
static void sgd_run(const float *w, const float *restrict g, float *out, int64_t n, float a, float b, float clip,
                    float keep) {
    /* the common cases get loops of their own, so each vectorizes without branches */
    if (b == 1.0f && clip < 0 && keep == 1.0f) {
        for (int64_t i = 0; i < n; i++) out[i] = w[i] - g[i] * a;
    } else if (b == 1.0f && clip < 0) {
        for (int64_t i = 0; i < n; i++) out[i] = w[i] * keep - g[i] * a;
    } else if (clip < 0 && keep == 1.0f) { /* Gluon's Trainer: b = 1 / batch size, no weight decay */
        for (int64_t i = 0; i < n; i++) out[i] = w[i] - (g[i] * a) * b;
    } else if (clip < 0) {
        for (int64_t i = 0; i < n; i++) out[i] = w[i] * keep - (g[i] * a) * b;
    } else if (keep == 1.0f) {
        for (int64_t i = 0; i < n; i++) out[i] = w[i] - clipped(g[i] * a, clip) * b;
    } else {
        for (int64_t i = 0; i < n; i++) out[i] = w[i] * keep - clipped(g[i] * a, clip) * b;
    }
}

typedef struct {
    const float *w, *g;
    float *out;
    float a, b, clip, keep;
} sgd_job;

static void sgd_range(void *ctx, size_t first, size_t end, int chunk) {
    const sgd_job *j = ctx;
    (void)chunk;
    sgd_run(j->w + first, j->g + first, j->out + first, (int64_t)(end - first), j->a, j->b, j->clip, j->keep);
}

void ember_sgd_f32(const float *w, const float *restrict g, float *out, int64_t n, float a, float b, float clip,
                   float keep) {
    sgd_job job = {w, g, out, a, b, clip, keep};
    ember_parallel_for((size_t)n, EMBER_PARALLEL_GRAIN, 0, sgd_range, &job);
}
