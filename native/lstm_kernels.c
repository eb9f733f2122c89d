/* The LSTM step kernels (lstm_kernels.h). */
#include "lstm_kernels.h"

#include "fast_math.h"

/* The module is built at -O2, whose cost model (GCC) leaves these loops scalar: vectorized. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#define IVDEP _Pragma("GCC ivdep") /* the rows of different arrays never overlap (lstm_kernels.h) */
#else
#define IVDEP
#endif

#define TILE 16 /* pre-activation rows of a_t read together: their lines stay in L1 across the batch */

FM_CLONES
void ember_lstm_step_f32(const float *a_t, const float *pre, const float *bias, const float *c_prev, int64_t n,
                         int64_t h, float *a, float *gates, float *c, float *tc, float *h_out) {
    const int64_t plane = n * h, width = 4 * h;
    /* a = a_t^T + pre + bias, tile by tile; all of pre is read before gates is written */
    for (int64_t k0 = 0; k0 < width; k0 += TILE) {
        const int64_t kn = width - k0 < TILE ? width - k0 : TILE;
        for (int64_t row = 0; row < n; row++) {
            float *ar = a + row * width + k0;
            const float *pr = pre + row * width + k0, *at = a_t + k0 * n + row, *bs = bias + k0;
            IVDEP for (int64_t k = 0; k < kn; k++) ar[k] = at[k * n] + pr[k] + bs[k];
        }
    }
    for (int64_t row = 0; row < n; row++) {
        const float *ai = a + row * 4 * h, *af = ai + h, *ag = af + h, *ao = ag + h;
        float *gi = gates + row * h, *gf = gi + plane, *gg = gf + plane, *go = gg + plane;
        const float *cp = c_prev + row * h;
        float *cr = c + row * h, *tr = tc + row * h, *hr = h_out + row * h;
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

FM_CLONES
void ember_lstm_step_backward_f32(const float *gates, const float *c_prev, const float *tc, const float *dh,
                                  const float *d_out, int64_t n, int64_t h, float *dc, float *d_a) {
    const int64_t plane = n * h;
    for (int64_t row = 0; row < n; row++) {
        const float *gi = gates + row * h, *gf = gi + plane, *gg = gf + plane, *go = gg + plane;
        const float *cp = c_prev + row * h, *tr = tc + row * h, *dhr = dh + row * h;
        const float *dor = d_out + row * h;
        float *dcr = dc + row * h, *di = d_a + row * 4 * h, *df = di + h, *dg = df + h, *dout = dg + h;
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
