/* An LSTM direction over a sequence (lstm_kernels.h). */
#include "lstm_kernels.h"

#include <stdlib.h>

#include "fast_math.h"
#include "gemm.h"
#include "thread_pool.h"

/* The module is built at -O2, whose cost model (GCC) leaves these loops scalar: vectorized. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#define IVDEP _Pragma("GCC ivdep") /* the rows of different arrays never overlap (lstm_kernels.h) */
#else
#define IVDEP
#endif

#define TILE 16 /* pre-activation rows of a_t read together: their lines stay in L1 across the batch */

/* The steps run their batch rows in parallel (thread_pool.h): rows with at least this many cells a
 * chunk (a cell: four gates and two tanh, a few tens of nanoseconds). */
#define CELL_GRAIN 2048

typedef struct {
    const float *a_t, *pre, *bias, *c_prev, *dh, *d_out;
    int64_t n, h;
    float *a, *gates, *c, *tc, *h_out, *dc, *d_a;
} step_job;

/* a = a_t^T + pre + bias, tile by tile.  The op passes pre in the gates' memory, laid out
 * differently: every row of pre is read (this region ends) before any gate is written. */
static void sum_rows(void *ctx, size_t first, size_t end, int chunk) {
    const step_job *s = ctx;
    const int64_t n = s->n, width = 4 * s->h;
    (void)chunk;
    for (int64_t k0 = 0; k0 < width; k0 += TILE) {
        const int64_t kn = width - k0 < TILE ? width - k0 : TILE;
        for (int64_t row = (int64_t)first; row < (int64_t)end; row++) {
            float *ar = s->a + row * width + k0;
            const float *pr = s->pre + row * width + k0, *at = s->a_t + k0 * n + row, *bs = s->bias + k0;
            IVDEP for (int64_t k = 0; k < kn; k++) ar[k] = at[k * n] + pr[k] + bs[k];
        }
    }
}

FM_CLONES
static void gate_rows(void *ctx, size_t first, size_t end, int chunk) {
    const step_job *s = ctx;
    const int64_t h = s->h, plane = s->n * h;
    (void)chunk;
    for (int64_t row = (int64_t)first; row < (int64_t)end; row++) {
        const float *ai = s->a + row * 4 * h, *af = ai + h, *ag = af + h, *ao = ag + h;
        float *gi = s->gates + row * h, *gf = gi + plane, *gg = gf + plane, *go = gg + plane;
        const float *cp = s->c_prev + row * h;
        float *cr = s->c + row * h, *tr = s->tc + row * h, *hr = s->h_out + row * h;
        IVDEP for (int64_t j = 0; j < h; j++) {
            float i = sigmoid_f32(ai[j]), f = sigmoid_f32(af[j]), g = tanh_f32(ag[j]), o = sigmoid_f32(ao[j]);
            float cn = f * cp[j] + i * g, t = tanh_f32(cn);
            gi[j] = i;
            gf[j] = f;
            gg[j] = g;
            go[j] = o;
            cr[j] = cn;
            tr[j] = t;
            hr[j] = o * t;
        }
    }
}

/* One step forward.  a_t (4h, n): the recurrent part W_h h_prev^T; pre (n, 4h): the input projection,
 * read whole before `gates` (4, n, h), in the same memory, is written; a (n, 4h): scratch for the summed
 * pre-activations; c may be c_prev's memory (each cell is read before it is written). */
static void step_forward(const float *a_t, const float *pre, const float *bias, const float *c_prev, int64_t n,
                         int64_t h, float *a, float *gates, float *c, float *tc, float *h_out) {
    step_job job = {.a_t = a_t, .pre = pre, .bias = bias, .c_prev = c_prev, .n = n, .h = h, .a = a, .gates = gates,
                    .c = c, .tc = tc, .h_out = h_out};
    ember_parallel_for((size_t)n, ember_pool_grain(h, CELL_GRAIN), 0, sum_rows, &job);
    ember_parallel_for((size_t)n, ember_pool_grain(h, CELL_GRAIN), 0, gate_rows, &job);
}

FM_CLONES
static void step_backward_rows(void *ctx, size_t first, size_t end, int chunk) {
    const step_job *s = ctx;
    const int64_t h = s->h, plane = s->n * h;
    (void)chunk;
    for (int64_t row = (int64_t)first; row < (int64_t)end; row++) {
        const float *gi = s->gates + row * h, *gf = gi + plane, *gg = gf + plane, *go = gg + plane;
        const float *cp = s->c_prev + row * h, *tr = s->tc + row * h, *dhr = s->dh + row * h;
        const float *dor = s->d_out + row * h;
        float *dcr = s->dc + row * h, *di = s->d_a + row * 4 * h, *df = di + h, *dg = df + h, *dout = dg + h;
        IVDEP for (int64_t j = 0; j < h; j++) {
            float i = gi[j], f = gf[j], g = gg[j], o = go[j], t = tr[j];
            float dhv = dhr[j] + dor[j];
            float dcv = dcr[j] + dhv * (o * (1.0f - t * t));
            di[j] = dcv * (g * (i * (1.0f - i)));
            df[j] = dcv * (cp[j] * (f * (1.0f - f)));
            dg[j] = dcv * (i * (1.0f - g * g));
            dout[j] = dhv * (t * (o * (1.0f - o)));
            dcr[j] = dcv * f;
        }
    }
}

/* One step backward: d_a (n, 4h) from dh + d_out (the step output's gradient) and dc (the new cell
 * state's, replaced by c_prev's). */
static void step_backward(const float *gates, const float *c_prev, const float *tc, const float *dh,
                          const float *d_out, int64_t n, int64_t h, float *dc, float *d_a) {
    step_job job = {.gates = (float *)gates, .c_prev = c_prev, .tc = (float *)tc, .dh = dh, .d_out = d_out, .n = n,
                    .h = h, .dc = dc, .d_a = d_a};
    ember_parallel_for((size_t)n, ember_pool_grain(h, CELL_GRAIN), 0, step_backward_rows, &job);
}

/* Step number s (0 first) in the order a pass takes them, and the state entries around step t. */
static int64_t step_at(int64_t s, int64_t t_len, int in_time_order) { return in_time_order ? s : t_len - 1 - s; }
static int64_t before(int64_t t, int reverse) { return reverse ? t + 1 : t; }
static int64_t after(int64_t t, int reverse) { return reverse ? t : t + 1; }

int ember_lstm_forward_f32(int64_t t_len, int64_t n, int64_t h, int reverse, const float *wh, const float *bias,
                           float *gates, float *c_seq, float *tc, float *h_seq) {
    const int64_t state = n * h, all = 4 * state;
    if (t_len < 1 || n < 1 || h < 1) return 0;
    /* a_t and a on 64-byte lines, a one line further than a_t's end: with the two a whole number of
     * pages apart each load of a_t waited on the store to a before it (4K aliasing: the forward ran
     * ~35% slower in some processes) */
    size_t bytes = ((size_t)(2 * all + 16) * sizeof(float) + 63) / 64 * 64; /* aligned_alloc: a multiple of 64 */
    float *a_t = aligned_alloc(64, bytes);
    if (!a_t) return -1;
    float *a = a_t + all + 16;
    for (int64_t s = 0; s < t_len; s++) {
        int64_t t = step_at(s, t_len, !reverse), b = before(t, reverse) * state, e = after(t, reverse) * state;
        /* W_h h^T (4h, n): with the batch as the product's short side it runs ~1.5x faster than h W_h^T
         * (32 x 256 by 256 x 1024: 145 -> 98 us); the step reads it transposed */
        ember_sgemm(0, 1, 4 * h, n, h, wh, h, h_seq + b, h, 0.0f, a_t, n);
        step_forward(a_t, gates + t * all, bias, c_seq + b, n, h, a, gates + t * all, c_seq + e, tc + t * state,
                     h_seq + e);
    }
    free(a_t);
    return 0;
}

void ember_lstm_backward_f32(int64_t t_len, int64_t n, int64_t h, int reverse, const float *wh, const float *gates,
                             const float *c_seq, const float *tc, const float *d_out, float *dh, float *dc,
                             float *d_a) {
    const int64_t state = n * h, all = 4 * state;
    if (t_len < 1 || n < 1 || h < 1) return;
    for (int64_t s = 0; s < t_len; s++) {
        int64_t t = step_at(s, t_len, reverse);
        step_backward(gates + t * all, c_seq + before(t, reverse) * state, tc + t * state, dh, d_out + t * state, n,
                      h, dc, d_a + t * all);
        ember_sgemm(0, 0, n, h, 4 * h, d_a + t * all, 4 * h, wh, h, 0.0f, dh, h); /* d_a W_h: the state it read */
    }
}
