/* update_kernels.h against a plain reference loop (volatile temporaries: each product and the
 * difference rounded to float, in numpy's order), in place and apart, on heap buffers of exactly n
 * floats (run under ASan + UBSan by `make memcheck`: an access past a buffer fails the run). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "update_kernels.h"
#include "thread_pool.h"

static float reference(float w, float g, float a, float b, float clip, float keep) {
    volatile float s = g * a;
    if (clip >= 0) s = s < -clip ? -clip : (s > clip ? clip : s);
    volatile float step = b == 1.0f && clip < 0 ? s : s * b;
    volatile float kept = keep == 1.0f ? w : w * keep;
    return kept - step;
}

static int same(float x, float y) { return memcmp(&x, &y, sizeof x) == 0 || (isnan(x) && isnan(y)); }

static int check(int64_t n, float a, float b, float clip, float keep, unsigned seed) {
    float *w = malloc((size_t)(n ? n : 1) * sizeof *w), *g = malloc((size_t)(n ? n : 1) * sizeof *g);
    float *out = malloc((size_t)(n ? n : 1) * sizeof *out), *want = malloc((size_t)(n ? n : 1) * sizeof *want);
    const float special[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, -3e-39f, 3.4e38f};
    srand(seed);
    for (int64_t i = 0; i < n; i++) {
        w[i] = i % 37 == 5 ? special[i % 8] : (float)rand() / RAND_MAX * 20.0f - 10.0f;
        g[i] = i % 41 == 3 ? special[(i + 3) % 8] : (float)rand() / RAND_MAX * 2.0f - 1.0f;
        want[i] = reference(w[i], g[i], a, b, clip, keep);
    }
    int bad = 0;
    ember_sgd_f32(w, g, out, n, a, b, clip, keep); /* apart */
    for (int64_t i = 0; i < n; i++) bad |= !same(out[i], want[i]);
    ember_sgd_f32(w, g, w, n, a, b, clip, keep); /* in place */
    for (int64_t i = 0; i < n; i++) bad |= !same(w[i], want[i]);
    free(w);
    free(g);
    free(out);
    free(want);
    if (bad) fprintf(stderr, "sgd_f32 wrong for n=%ld a=%g b=%g clip=%g keep=%g\n", (long)n, a, b, clip, keep);
    return bad;
}

int main(void) {
    int bad = 0;
    ember_pool_set_threads(3); /* loops past EMBER_PARALLEL_GRAIN run split over a team */
    const int64_t sizes[] = {0, 1, 3, 4, 7, 16, 17, 1000, 65537};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        int64_t n = sizes[k];
        bad |= check(n, 0.01f / 128, 1.0f, -1.0f, 1.0f, 1u);     /* one factor */
        bad |= check(n, 1.0f / 3, 0.1f, -1.0f, 1.0f, 2u);        /* rescale, then lr */
        bad |= check(n, 0.01f / 64, 1.0f, -1.0f, 0.999f, 3u);    /* weight decay */
        bad |= check(n, 0.01f, 1.0f / 128, -1.0f, 0.999f, 6u);   /* rescale and weight decay */
        bad |= check(n, 0.25f, 0.5f, 0.3f, 1.0f, 4u);            /* clipping */
        bad |= check(n, 0.7f, 0.5f, 2.0f, 0.995f, 5u);           /* clipping and decay */
    }
    ember_pool_shutdown();
    if (bad) return 1;
    printf("update kernels: ok\n");
    return 0;
}
