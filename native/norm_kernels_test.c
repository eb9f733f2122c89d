/* norm_kernels.h against double-precision loops, for runs of every length around the kernels' lane
 * count, on heap buffers of exactly their size (run under ASan + UBSan by `make memcheck`: an access
 * past a buffer fails the run), the affine pass also in place. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "norm_kernels.h"
#include "thread_pool.h"

static int close_to(double got, double want, double scale) { return fabs(got - want) <= 1e-5 * (scale + fabs(want)); }

static float *floats(int64_t n) { return malloc((size_t)(n ? n : 1) * sizeof(float)); }

static int check(int64_t outer, int64_t channels, int64_t inner, unsigned seed) {
    int64_t n = outer * channels * inner;
    float *x = floats(n), *dy = floats(n), *out = floats(n), *again = floats(n);
    float *mean = floats(channels), *var = floats(channels), *s1 = floats(channels), *s2 = floats(channels);
    float *a = floats(channels), *b = floats(channels), *d = floats(channels);
    srand(seed);
    for (int64_t i = 0; i < n; i++) {
        x[i] = (float)rand() / RAND_MAX * 4.0f + 10.0f;
        dy[i] = (float)rand() / RAND_MAX - 0.5f;
    }
    for (int64_t c = 0; c < channels; c++) {
        a[c] = (float)rand() / RAND_MAX;
        b[c] = (float)rand() / RAND_MAX - 0.5f;
        d[c] = (float)rand() / RAND_MAX;
    }
    int bad = ember_channel_mean_var_f32(x, outer, channels, inner, mean, var) != 0 ||
              ember_channel_grad_sums_f32(dy, x, mean, outer, channels, inner, s1, s2) != 0;
    for (int64_t c = 0; c < channels && !bad; c++) {
        double sum = 0, sq = 0, sdy = 0, sdx = 0, count = (double)(outer * inner);
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < inner; i++) sum += x[(o * channels + c) * inner + i];
        double m = count ? sum / count : 0;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < inner; i++) {
                int64_t at = (o * channels + c) * inner + i;
                sq += (x[at] - m) * (x[at] - m);
                sdy += dy[at];
                sdx += dy[at] * (x[at] - (double)mean[c]);
            }
        bad |= !close_to(mean[c], m, 0) || !close_to(var[c], count ? sq / count : 0, 1e-3);
        bad |= !close_to(s1[c], sdy, count) || !close_to(s2[c], sdx, count);
    }
    ember_channel_affine_f32(dy, a, x, mean, b, d, outer, channels, inner, out);
    memcpy(again, dy, (size_t)n * sizeof *again);
    ember_channel_affine_f32(again, a, x, mean, b, d, outer, channels, inner, again); /* in place on dy */
    for (int64_t i = 0; i < n && !bad; i++) {
        int64_t c = i / inner % channels;
        double want = (double)dy[i] * a[c] + ((double)x[i] - mean[c]) * b[c] + d[c];
        bad |= !close_to(out[i], want, 1) || memcmp(&out[i], &again[i], sizeof out[i]) != 0;
    }
    memcpy(again, x, (size_t)n * sizeof *again);
    ember_channel_affine_f32(NULL, NULL, again, mean, b, d, outer, channels, inner, again); /* in place on x */
    for (int64_t i = 0; i < n && !bad; i++) {
        int64_t c = i / inner % channels;
        bad |= !close_to(again[i], ((double)x[i] - mean[c]) * b[c] + d[c], 1);
    }
    if (bad) fprintf(stderr, "norm kernels wrong: outer %ld channels %ld inner %ld\n", (long)outer, (long)channels,
                     (long)inner);
    float *all[] = {x, dy, out, again, mean, var, s1, s2, a, b, d};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++) free(all[k]);
    return bad;
}

int main(void) {
    int bad = 0;
    ember_pool_set_threads(3); /* loops past EMBER_PARALLEL_GRAIN run split over a team */
    for (int64_t inner = 1; inner <= 19; inner++) bad |= check(3, 4, inner, (unsigned)inner);
    bad |= check(8, 64, 256, 1u); /* a ResNet stage */
    bad |= check(1000, 7, 1, 2u); /* channel last */
    bad |= check(0, 3, 5, 3u);    /* nothing to sum */
    bad |= check(2, 0, 5, 4u);    /* no channels */
    ember_pool_shutdown();
    if (bad) return 1;
    printf("norm kernels: ok\n");
    return 0;
}
