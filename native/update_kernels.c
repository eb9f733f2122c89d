/* Optimizer update kernels (update_kernels.h). */
#include "update_kernels.h"

/* The module is built at -O2, whose cost model (GCC) leaves loops of unknown length scalar: these
 * loops are the whole point of the file, so they are vectorized.  Vectorizing keeps each element's
 * operations and their float32 rounding as written (no reassociation, no contraction). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

static inline float clipped(float s, float clip) {
    if (clip < 0) return s;
    return s < -clip ? -clip : (s > clip ? clip : s); /* a NaN compares false: kept, as numpy's clip */
}

/* The loops take restrict pointers (the in-place form reads and writes through one), so the
 * compiler vectorizes them without run-time overlap checks. */
static void sgd_in_place(float *restrict w, const float *restrict g, int64_t n, float a, float b, float clip,
                         float keep) {
    if (b == 1.0f && clip < 0 && keep == 1.0f) {
        for (int64_t i = 0; i < n; i++) w[i] = w[i] - g[i] * a;
    } else if (b == 1.0f && clip < 0) {
        for (int64_t i = 0; i < n; i++) w[i] = w[i] * keep - g[i] * a;
    } else {
        for (int64_t i = 0; i < n; i++) w[i] = (keep == 1.0f ? w[i] : w[i] * keep) - clipped(g[i] * a, clip) * b;
    }
}

static void sgd_apart(const float *restrict w, const float *restrict g, float *restrict out, int64_t n, float a,
                      float b, float clip, float keep) {
    if (b == 1.0f && clip < 0 && keep == 1.0f) {
        for (int64_t i = 0; i < n; i++) out[i] = w[i] - g[i] * a;
    } else if (b == 1.0f && clip < 0) {
        for (int64_t i = 0; i < n; i++) out[i] = w[i] * keep - g[i] * a;
    } else {
        for (int64_t i = 0; i < n; i++) out[i] = (keep == 1.0f ? w[i] : w[i] * keep) - clipped(g[i] * a, clip) * b;
    }
}

void ember_sgd_f32(const float *w, const float *g, float *out, int64_t n, float a, float b, float clip, float keep) {
    if (out == w)
        sgd_in_place(out, g, n, a, b, clip, keep);
    else
        sgd_apart(w, g, out, n, a, b, clip, keep);
}
