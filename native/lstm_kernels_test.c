/* lstm_kernels.h against double-precision loops, for unit counts around the vector widths, on heap
 * buffers of exactly their size (run under ASan + UBSan by `make memcheck`: an access past a buffer
 * fails the run), the forward also with pre in the gates' memory and c in c_prev's, as the op calls it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lstm_kernels.h"
#include "thread_pool.h"

static float *floats(int64_t n) { return malloc((size_t)(n ? n : 1) * sizeof(float)); }

static float uniform(float lo, float hi) { return lo + (hi - lo) * (float)rand() / (float)RAND_MAX; }

static int close_to(double got, double want) { return fabs(got - want) <= 1e-5 * (1 + fabs(want)); }

static double sig(double a) { return 1 / (1 + exp(-a)); }

static int check(int64_t n, int64_t h, unsigned seed) {
    int64_t all = n * 4 * h, st = n * h;
    float *a = floats(all), *a_t = floats(all), *pre = floats(all), *bias = floats(4 * h), *cp = floats(st);
    float *gates = floats(all), *c = floats(st), *tc = floats(st), *ho = floats(st);
    float *shared = floats(all), *c_in_place = floats(st), *dh = floats(st), *dout = floats(st), *dc = floats(st);
    float *dc0 = floats(st), *da = floats(all), *a2 = floats(all);
    srand(seed);
    for (int64_t i = 0; i < all; i++) {
        a_t[i] = uniform(-4, 4); /* (4h, n) */
        shared[i] = pre[i] = uniform(-4, 4);
    }
    for (int64_t i = 0; i < 4 * h; i++) bias[i] = uniform(-1, 1);
    for (int64_t i = 0; i < st; i++) {
        c_in_place[i] = cp[i] = uniform(-2, 2);
        dh[i] = uniform(-1, 1);
        dout[i] = uniform(-1, 1);
        dc0[i] = dc[i] = uniform(-1, 1);
    }
    ember_lstm_step_f32(a_t, pre, bias, cp, n, h, a, gates, c, tc, ho);
    int bad = 0;
    for (int64_t r = 0; r < n && !bad; r++)
        for (int64_t j = 0; j < h && !bad; j++) {
            double s[4];
            for (int k = 0; k < 4; k++) {
                int64_t at = r * 4 * h + k * h + j;
                s[k] = (double)a_t[(k * h + j) * n + r] + pre[at] + bias[k * h + j];
                bad |= !close_to(a[at], s[k]);
            }
            double i = sig(s[0]), f = sig(s[1]), g = tanh(s[2]), o = sig(s[3]), cn = f * cp[r * h + j] + i * g;
            double want[4] = {i, f, g, o};
            for (int k = 0; k < 4; k++) bad |= !close_to(gates[k * st + r * h + j], want[k]);
            bad |= !close_to(c[r * h + j], cn) || !close_to(tc[r * h + j], tanh(cn)) ||
                   !close_to(ho[r * h + j], o * tanh(cn));
        }
    ember_lstm_step_f32(a_t, shared, bias, c_in_place, n, h, a2, shared, c_in_place, tc, ho); /* as the op calls it */
    bad |= memcmp(shared, gates, (size_t)all * sizeof *shared) != 0;
    bad |= memcmp(c_in_place, c, (size_t)st * sizeof *c) != 0;
    bad |= memcmp(a2, a, (size_t)all * sizeof *a) != 0;
    ember_lstm_step_backward_f32(gates, cp, tc, dh, dout, n, h, dc, da);
    for (int64_t r = 0; r < n && !bad; r++)
        for (int64_t j = 0; j < h && !bad; j++) {
            int64_t at = r * h + j;
            double i = gates[at], f = gates[st + at], g = gates[2 * st + at], o = gates[3 * st + at], t = tc[at];
            double dhv = (double)dh[at] + dout[at], dcv = dc0[at] + dhv * o * (1 - t * t);
            double want[4] = {dcv * g * i * (1 - i), dcv * cp[at] * f * (1 - f), dcv * i * (1 - g * g),
                              dhv * t * o * (1 - o)};
            for (int k = 0; k < 4; k++) bad |= !close_to(da[r * 4 * h + k * h + j], want[k]);
            bad |= !close_to(dc[at], dcv * f);
        }
    float *all_bufs[] = {a, a_t, pre, bias, cp, gates, c, tc, ho, shared, c_in_place, dh, dout, dc, dc0, da, a2};
    for (size_t k = 0; k < sizeof all_bufs / sizeof *all_bufs; k++) free(all_bufs[k]);
    if (bad) fprintf(stderr, "lstm_kernels_test: mismatch at n=%lld h=%lld\n", (long long)n, (long long)h);
    return bad;
}

int main(void) {
    int bad = 0;
    const int64_t hs[] = {1, 3, 7, 8, 15, 16, 17, 31, 33, 64};
    for (int64_t n = 1; n <= 3; n++)
        for (size_t k = 0; k < sizeof hs / sizeof *hs; k++) bad |= check(n, hs[k], (unsigned)(n * 100 + k));
    ember_pool_set_threads(3); /* rows split over a team: 32 rows of 256 cells, 37 of 100 */
    bad |= check(32, 256, 7u);
    bad |= check(37, 100, 8u);
    ember_pool_shutdown();
    if (!bad) printf("lstm_kernels_test: ok\n");
    return bad;
}
