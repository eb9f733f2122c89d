/* softmax_kernels.h against double-precision loops, for row lengths around the lane count, on heap
 * buffers of exactly their size (run under ASan + UBSan by `make memcheck`: an access past a buffer
 * fails the run), also in place, and with the rows split over a team of 3; the cross-entropy rows
 * against log_softmax's rows, a pick and log_softmax's backward of the picked gradient, bit for bit,
 * labels clipped into the classes, and a label that is not a class number refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "softmax_kernels.h"
#include "thread_pool.h"

static float *floats(int64_t n) { return malloc((size_t)(n ? n : 1) * sizeof(float)); }

static int close_to(double got, double want) { return fabs(got - want) <= 1e-5 * (1 + fabs(want)); }

static int check(int64_t rows, int64_t n, int take_log, unsigned seed) {
    int64_t total = rows * n;
    float *x = floats(total), *y = floats(total), *again = floats(total), *dy = floats(total), *dx = floats(total);
    srand(seed);
    for (int64_t i = 0; i < total; i++) {
        x[i] = (float)rand() / (float)RAND_MAX * 20.0f - 10.0f;
        dy[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    }
    ember_softmax_rows_f32(x, rows, n, take_log, y);
    memcpy(again, x, (size_t)total * sizeof *again);
    ember_softmax_rows_f32(again, rows, n, take_log, again);
    int bad = memcmp(again, y, (size_t)total * sizeof *y) != 0;
    ember_softmax_rows_backward_f32(dy, y, rows, n, take_log, dx);
    for (int64_t r = 0; r < rows && !bad; r++) {
        const float *xr = x + r * n, *yr = y + r * n, *dyr = dy + r * n;
        double m = xr[0], s = 0, sdy = 0, sdyy = 0;
        for (int64_t i = 1; i < n; i++) m = xr[i] > m ? xr[i] : m;
        for (int64_t i = 0; i < n; i++) s += exp((double)xr[i] - m);
        for (int64_t i = 0; i < n; i++) {
            double p = exp((double)xr[i] - m) / s;
            bad |= !close_to(yr[i], take_log ? log(p) : p);
            sdy += dyr[i];
            sdyy += (double)dyr[i] * p;
        }
        for (int64_t i = 0; i < n; i++) {
            double p = exp((double)xr[i] - m) / s;
            bad |= !close_to(dx[r * n + i], take_log ? dyr[i] - p * sdy : p * (dyr[i] - sdyy));
        }
    }
    memcpy(again, dy, (size_t)total * sizeof *again);
    ember_softmax_rows_backward_f32(again, y, rows, n, take_log, again); /* dx in dy's memory */
    bad |= memcmp(again, dx, (size_t)total * sizeof *dx) != 0;
    free(x);
    free(y);
    free(again);
    free(dy);
    free(dx);
    if (bad)
        fprintf(stderr, "softmax_kernels_test: mismatch at rows=%lld n=%lld log=%d\n", (long long)rows, (long long)n,
                take_log);
    return bad;
}

/* ember_softmax_ce_rows_f32 and its backward against the rows kernels and a pick, bit for bit */
static int check_ce(int64_t rows, int64_t n, unsigned seed) {
    int64_t total = rows * n;
    float *x = floats(total), *logp = floats(total), *want = floats(total), *dx = floats(total), *dy = floats(total);
    float *label = floats(rows), *loss = floats(rows), *g = floats(rows);
    srand(seed);
    for (int64_t i = 0; i < total; i++) x[i] = (float)rand() / (float)RAND_MAX * 20.0f - 10.0f;
    for (int64_t r = 0; r < rows; r++) {
        label[r] = (float)(rand() % (n + 4)) - 2.0f + (r % 2 ? 0.7f : 0.0f); /* some below 0 or past n - 1 */
        g[r] = (float)rand() / (float)RAND_MAX - 0.5f;
    }
    int bad = !ember_softmax_ce_rows_f32(x, label, rows, n, logp, loss);
    ember_softmax_rows_f32(x, rows, n, 1, want);
    bad |= memcmp(logp, want, (size_t)total * sizeof *want) != 0;
    for (int64_t r = 0; r < rows; r++) {
        int64_t c = (int64_t)label[r];
        c = c < 0 ? 0 : (c > n - 1 ? n - 1 : c);
        bad |= loss[r] != -want[r * n + c];
        for (int64_t i = 0; i < n; i++) dy[r * n + i] = i == c ? -g[r] : 0.0f;
    }
    bad |= !ember_softmax_ce_rows_backward_f32(g, logp, label, rows, n, dx);
    ember_softmax_rows_backward_f32(dy, logp, rows, n, 1, want);
    bad |= memcmp(dx, want, (size_t)total * sizeof *want) != 0;
    label[rows - 1] = NAN;
    loss[0] = 7.0f;
    bad |= ember_softmax_ce_rows_f32(x, label, rows, n, logp, loss) || loss[0] != 7.0f;
    label[rows - 1] = 1e30f;
    bad |= ember_softmax_ce_rows_backward_f32(g, logp, label, rows, n, dx);
    free(x), free(logp), free(want), free(dx), free(dy), free(label), free(loss), free(g);
    if (bad) fprintf(stderr, "softmax_kernels_test: cross-entropy mismatch at rows=%lld n=%lld\n", (long long)rows,
                     (long long)n);
    return bad;
}

int main(void) {
    int bad = 0;
    bad |= check_ce(7, 1, 1u) | check_ce(33, 10, 2u) | check_ce(5, 17, 3u) | check_ce(4, 1000, 4u);
    const int64_t ns[] = {1, 2, 15, 16, 17, 31, 32, 33, 100, 1000};
    for (int take_log = 0; take_log < 2; take_log++)
        for (size_t k = 0; k < sizeof ns / sizeof *ns; k++)
            bad |= check(3, ns[k], take_log, (unsigned)(k + 10 * take_log));
    ember_pool_set_threads(3); /* 40 rows of 1000 values, 100 of 300: three chunks each */
    for (int take_log = 0; take_log < 2; take_log++) {
        bad |= check(40, 1000, take_log, 50u + (unsigned)take_log);
        bad |= check(100, 300, take_log, 60u + (unsigned)take_log);
    }
    bad |= check_ce(100, 300, 70u);
    ember_pool_shutdown();
    if (!bad) printf("softmax_kernels_test: ok\n");
    return bad;
}
