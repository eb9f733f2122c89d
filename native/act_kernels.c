/* Activation kernels (act_kernels.h). */
#include "act_kernels.h"

/* The module is built at -O2, whose cost model (GCC) leaves loops of unknown length scalar: these
 * loops are the whole point of the file, so they are vectorized (each element's result as written). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

/* x may be y: each element is read before it is written, at the same index. */
void ember_relu_f32(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = (x[i] > 0.0f || x[i] != x[i]) ? x[i] : 0.0f;
}

/* the derivative as two selects of its own (written nested, GCC leaves the loop scalar: 16x slower) */
void ember_relu_backward_f32(const float *dy, const float *y, float *dx, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float yi = y[i];
        float d = yi > 0.0f ? 1.0f : 0.0f;
        d = yi != yi ? yi : d;
        dx[i] = dy[i] * d;
    }
}
