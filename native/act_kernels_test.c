/* act_kernels.h against numpy's and MXNet's definitions (maximum(x, 0); dy * relu_grad(y)), bit for bit,
 * in place and apart, on heap buffers of exactly n floats (run under ASan + UBSan by `make memcheck`:
 * an access past a buffer fails the run), with NaN, infinities, signed zeros and subnormals. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "act_kernels.h"
#include "thread_pool.h"

static int same(float x, float y) { return memcmp(&x, &y, sizeof x) == 0 || (isnan(x) && isnan(y)); }

/* numpy's maximum(x, 0.0f): x when x > 0 or x is NaN, else +0 (-0.0 included) */
static float relu_reference(float x) {
    if (isnan(x)) return x;
    return x > 0.0f ? x : 0.0f;
}

/* MXNet's relu_grad (1 above 0, NaN at NaN, else 0) times dy */
static float grad_reference(float dy, float y) {
    volatile float d = isnan(y) ? y : (y > 0.0f ? 1.0f : 0.0f);
    return dy * d;
}

static float *floats(int64_t n) { return malloc((size_t)(n ? n : 1) * sizeof(float)); }

static int check(int64_t n, unsigned seed) {
    float *x = floats(n), *y = floats(n), *dy = floats(n), *dx = floats(n), *want = floats(n), *gwant = floats(n);
    const float special[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, -3e-39f, 3.4e38f};
    srand(seed);
    for (int64_t i = 0; i < n; i++) {
        x[i] = i % 13 == 5 ? special[i % 8] : (float)rand() / RAND_MAX * 2.0f - 1.0f;
        dy[i] = i % 17 == 3 ? special[(i + 3) % 8] : (float)rand() / RAND_MAX * 2.0f - 1.0f;
        want[i] = relu_reference(x[i]);
        gwant[i] = grad_reference(dy[i], x[i]);
    }
    int bad = 0;
    ember_relu_f32(x, y, n); /* apart */
    for (int64_t i = 0; i < n; i++) bad |= !same(y[i], want[i]);
    ember_relu_backward_f32(dy, x, dx, n); /* apart (the mask of x: y > 0 is x > 0) */
    for (int64_t i = 0; i < n; i++) bad |= !same(dx[i], gwant[i]);
    memcpy(dx, dy, (size_t)n * sizeof(float));
    ember_relu_backward_f32(dx, x, dx, n); /* dx is dy */
    for (int64_t i = 0; i < n; i++) bad |= !same(dx[i], gwant[i]);
    memcpy(dx, x, (size_t)n * sizeof(float));
    ember_relu_backward_f32(dy, dx, dx, n); /* dx is y */
    for (int64_t i = 0; i < n; i++) bad |= !same(dx[i], gwant[i]);
    ember_relu_f32(x, x, n); /* in place */
    for (int64_t i = 0; i < n; i++) bad |= !same(x[i], want[i]);
    free(x);
    free(y);
    free(dy);
    free(dx);
    free(want);
    free(gwant);
    if (bad) fprintf(stderr, "relu kernels wrong for n=%ld\n", (long)n);
    return bad;
}

int main(void) {
    int bad = 0;
    ember_pool_set_threads(3); /* loops past EMBER_PARALLEL_GRAIN run split over a team */
    const int64_t sizes[] = {0, 1, 3, 4, 7, 16, 17, 1000, 65537};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) bad |= check(sizes[k], (unsigned)k + 1);
    ember_pool_shutdown();
    if (!bad) printf("act kernels ok\n");
    return bad;
}
