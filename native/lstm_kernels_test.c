/* lstm_kernels.h against double-precision loops, one and both directions, for batch and unit counts
 * around the vector widths and large enough to split over a team of 3, on heap buffers of exactly
 * their size (run under ASan + UBSan by `make memcheck`: an access past a buffer fails the run).  The
 * GEMM is a plain loop installed through gemm.h, once with 64-bit and once with 32-bit sizes, and once
 * split over the team (ember_gemm_split_on_team: every product against the unsplit one). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gemm.h"
#include "lstm_kernels.h"
#include "thread_pool.h"

enum { TRANS = 112 };

/* CBLAS's sgemm, row-major only, as a loop in double */
#define REFERENCE_GEMM(name, I)                                                                                    \
    static void name(int order, int ta, int tb, I m, I n, I k, float alpha, const float *a, I lda, const float *b, \
                     I ldb, float beta, float *c, I ldc) {                                                         \
        (void)order;                                                                                               \
        for (I i = 0; i < m; i++)                                                                                  \
            for (I j = 0; j < n; j++) {                                                                            \
                double s = 0;                                                                                      \
                for (I p = 0; p < k; p++)                                                                          \
                    s += (double)(ta == TRANS ? a[p * lda + i] : a[i * lda + p]) *                                 \
                         (tb == TRANS ? b[j * ldb + p] : b[p * ldb + j]);                                          \
                c[i * ldc + j] = (float)(alpha * s + (beta == 0 ? 0.0 : (double)beta * c[i * ldc + j]));          \
            }                                                                                                      \
    }
REFERENCE_GEMM(gemm64, int64_t)
REFERENCE_GEMM(gemm32, int)

static float *floats(int64_t n) { return malloc((size_t)(n ? n : 1) * sizeof(float)); }
static double *doubles(int64_t n) { return calloc((size_t)(n ? n : 1), sizeof(double)); }

static float uniform(float lo, float hi) { return lo + (hi - lo) * (float)rand() / (float)RAND_MAX; }

static int close_to(double got, double want) { return fabs(got - want) <= 2e-5 * (1 + fabs(want)); }

static double sig(double a) { return 1 / (1 + exp(-a)); }

/* Each step is checked from the kernel's own states before it, so errors do not compound. */
static int check(int64_t tl, int64_t n, int64_t h, int reverse, unsigned seed) {
    const int64_t st = n * h, g4 = 4 * h, all = 4 * st;
    float *wh = floats(g4 * h), *bias = floats(g4), *pre = floats(all * tl), *gates = floats(all * tl);
    float *cs = floats(st * (tl + 1)), *tc = floats(st * tl), *hs = floats(st * (tl + 1));
    float *dout = floats(st * tl), *dh = floats(st), *dc = floats(st), *da = floats(all * tl);
    double *a = doubles(g4), *dhr = doubles(st), *dcr = doubles(st), *dar = doubles(g4);
    srand(seed);
    for (int64_t i = 0; i < g4 * h; i++) wh[i] = uniform(-0.5f, 0.5f);
    for (int64_t i = 0; i < g4; i++) bias[i] = uniform(-1, 1);
    for (int64_t i = 0; i < all * tl; i++) gates[i] = pre[i] = uniform(-2, 2); /* x_t W_x^T, (n, 4h) a step */
    const int64_t first = reverse ? tl : 0;
    for (int64_t i = 0; i < st; i++) {
        hs[first * st + i] = uniform(-1, 1);
        cs[first * st + i] = uniform(-2, 2);
    }
    int bad = ember_lstm_forward_f32(tl, n, h, reverse, wh, bias, gates, cs, tc, hs) != 0;
    for (int64_t s = 0; s < tl && !bad; s++) {
        int64_t t = reverse ? tl - 1 - s : s, b = (reverse ? t + 1 : t) * st, e = (reverse ? t : t + 1) * st;
        for (int64_t r = 0; r < n && !bad; r++) {
            for (int64_t q = 0; q < g4; q++) {
                double v = (double)pre[t * all + r * g4 + q] + bias[q];
                for (int64_t p = 0; p < h; p++) v += (double)wh[q * h + p] * hs[b + r * h + p];
                a[q] = v;
            }
            for (int64_t j = 0; j < h; j++) {
                double i = sig(a[j]), f = sig(a[h + j]), g = tanh(a[2 * h + j]), o = sig(a[3 * h + j]);
                double want[4] = {i, f, g, o}, cn = f * cs[b + r * h + j] + i * g;
                for (int k = 0; k < 4; k++) bad |= !close_to(gates[t * all + k * st + r * h + j], want[k]);
                bad |= !close_to(cs[e + r * h + j], cn) || !close_to(tc[t * st + r * h + j], tanh(cn)) ||
                       !close_to(hs[e + r * h + j], o * tanh(cn));
            }
        }
    }
    for (int64_t i = 0; i < st * tl; i++) dout[i] = uniform(-1, 1);
    for (int64_t i = 0; i < st; i++) {
        dhr[i] = dh[i] = uniform(-1, 1);
        dcr[i] = dc[i] = uniform(-1, 1);
    }
    ember_lstm_backward_f32(tl, n, h, reverse, wh, gates, cs, tc, dout, dh, dc, da);
    for (int64_t s = 0; s < tl && !bad; s++) {
        int64_t t = reverse ? s : tl - 1 - s, b = (reverse ? t + 1 : t) * st;
        const float *gt = gates + t * all;
        for (int64_t r = 0; r < n; r++) {
            for (int64_t j = 0; j < h; j++) {
                int64_t at = r * h + j;
                double i = gt[at], f = gt[st + at], g = gt[2 * st + at], o = gt[3 * st + at], tv = tc[t * st + at];
                double dhv = dhr[at] + dout[t * st + at], dcv = dcr[at] + dhv * o * (1 - tv * tv);
                dar[j] = dcv * g * i * (1 - i);
                dar[h + j] = dcv * cs[b + at] * f * (1 - f);
                dar[2 * h + j] = dcv * i * (1 - g * g);
                dar[3 * h + j] = dhv * tv * o * (1 - o);
                dcr[at] = dcv * f;
            }
            for (int64_t q = 0; q < g4; q++) bad |= !close_to(da[t * all + r * g4 + q], dar[q]);
            for (int64_t p = 0; p < h; p++) { /* the state the step read: from the kernel's own d_a */
                double v = 0;
                for (int64_t q = 0; q < g4; q++) v += (double)da[t * all + r * g4 + q] * wh[q * h + p];
                dhr[r * h + p] = v;
            }
        }
    }
    for (int64_t i = 0; i < st && !bad; i++) bad |= !close_to(dh[i], dhr[i]) || !close_to(dc[i], dcr[i]);
    void *bufs[] = {wh, bias, pre, gates, cs, tc, hs, dout, dh, dc, da, a, dhr, dcr, dar};
    for (size_t k = 0; k < sizeof bufs / sizeof *bufs; k++) free(bufs[k]);
    if (bad)
        fprintf(stderr, "lstm_kernels_test: mismatch at t=%lld n=%lld h=%lld reverse=%d\n", (long long)tl,
                (long long)n, (long long)h, reverse);
    return bad;
}

/* ember_sgemm split over the team against the same product unsplit, bit for bit: rows of C split (m >= n)
 * and columns, each operand plain and transposed, leading dimensions wider than the operands (the parts
 * are sub-matrices), beta 0 and 1 onto a filled C; and ember_sgemm_bias split against the unsplit product
 * followed by a plain loop adding the bias to every row. */
static int check_split(int64_t m, int64_t n, int64_t k, unsigned seed) {
    int bad = 0;
    const int64_t pad = 3, lda_max = (m > k ? m : k) + pad, ldb_max = (n > k ? n : k) + pad, ldc = n + pad;
    float *a = malloc(sizeof(float) * (size_t)(lda_max * (m > k ? m : k)));
    float *b = malloc(sizeof(float) * (size_t)(ldb_max * (n > k ? n : k)));
    float *c0 = malloc(sizeof(float) * (size_t)(m * ldc)), *c1 = malloc(sizeof(float) * (size_t)(m * ldc));
    float *bias = malloc(sizeof(float) * (size_t)n);
    srand(seed);
    for (int64_t j = 0; j < n; j++) bias[j] = (float)rand() / RAND_MAX - 0.5f;
    for (int64_t i = 0; i < lda_max * (m > k ? m : k); i++) a[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int64_t i = 0; i < ldb_max * (n > k ? n : k); i++) b[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int one = 0; one < 2; one++) {
                int64_t lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad;
                for (int64_t i = 0; i < m * ldc; i++) c0[i] = c1[i] = (float)(i % 7);
                ember_gemm_split_on_team(0);
                ember_sgemm(ta, tb, m, n, k, a, lda, b, ldb, (float)one, c0, ldc);
                ember_gemm_split_on_team(1);
                bad |= !ember_gemm_splits();
                ember_sgemm(ta, tb, m, n, k, a, lda, b, ldb, (float)one, c1, ldc);
                for (int64_t i = 0; i < m * ldc; i++) bad |= c0[i] != c1[i];
                for (int64_t i = 0; i < m; i++)
                    for (int64_t j = 0; j < n; j++) c0[i * ldc + j] += bias[j];
                for (int64_t i = 0; i < m * ldc; i++) c1[i] = (float)(i % 7); /* (still split) */
                ember_sgemm_bias(ta, tb, m, n, k, a, lda, b, ldb, (float)one, c1, ldc, bias);
                for (int64_t i = 0; i < m * ldc; i++) bad |= c0[i] != c1[i];
            }
    ember_gemm_split_on_team(0);
    free(a), free(b), free(c0), free(c1), free(bias);
    if (bad)
        fprintf(stderr, "lstm_kernels_test: split GEMM differs at m=%lld n=%lld k=%lld\n", (long long)m,
                (long long)n, (long long)k);
    return bad;
}

int main(void) {
    int bad = 0;
    const int64_t sizes[][3] = {{1, 1, 1}, {3, 2, 3}, {2, 3, 7}, {2, 1, 16}, {3, 2, 17}, {2, 3, 33}, {4, 2, 64}};
    ember_gemm_install((void *)gemm64, 1);
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
        for (int rev = 0; rev < 2; rev++)
            bad |= check(sizes[k][0], sizes[k][1], sizes[k][2], rev, (unsigned)(k * 10 + rev));
    ember_gemm_install((void *)gemm32, 0);
    ember_pool_set_threads(3); /* rows split over a team: 32 rows of 256 cells, 37 of 100 */
    bad |= check(3, 32, 256, 0, 7u);
    bad |= check(2, 37, 100, 1, 8u);
    bad |= check_split(1024, 32, 256, 9u) | check_split(32, 256, 1024, 10u) | check_split(97, 70, 90, 11u);
    ember_gemm_split_on_team(1); /* an LSTM on split products */
    bad |= check(3, 32, 256, 0, 12u);
    ember_gemm_install((void *)gemm32, 0); /* installing turns the split off */
    bad |= ember_gemm_splits();
    ember_pool_shutdown();
    bad |= !ember_gemm_fits((1LL << 31) - 1) || ember_gemm_fits(1LL << 31); /* the 32-bit GEMM's limit */
    ember_gemm_install((void *)gemm64, 1);
    bad |= !ember_gemm_fits(1LL << 40);
    ember_gemm_install(NULL, 0);
    bad |= ember_gemm_ready() || ember_gemm_fits(1);
    if (!bad) printf("lstm_kernels_test: ok\n");
    return bad;
}
