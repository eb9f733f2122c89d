/* Optimizer update kernels (update_kernels.h). */
#include "update_kernels.h"

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
void ember_sgd_f32(const float *w, const float *restrict g, float *out, int64_t n, float a, float b, float clip,
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
