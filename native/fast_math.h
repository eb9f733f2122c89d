/* e^x, tanh and the logistic sigmoid on float32, written so that a compiler vectorizes a loop over
 * them: branch-free (both sides of every case are computed and one is selected), no library call,
 * the exponent built from integer bits.  Included by the kernels that need them (lstm_kernels.c,
 * softmax_kernels.c), whose loops then run 8 or 16 lanes wide where libm's expf would run one.
 *
 * Accuracy (checked against double precision in tests/ops/test_fast_math_kernels.py): exp_f32
 * within 2 ulp over its whole range, tanh_f32 and sigmoid_f32 within 4 ulp; NaN in gives NaN, the
 * infinities give their limits; results below float32's normal range may round differently from
 * libm's in their last subnormal bits.  The polynomials' fused multiply-adds are written out (fmaf:
 * one instruction where the CPU has FMA, libm's exact emulation where not), and nothing else is
 * contracted (the module is built as ISO C), so every instruction set gives the same bits.
 *
 * exp: n = round(x / ln 2), r = x - n ln 2 (ln 2 in two parts, so r is exact), e^r by a degree-6
 * polynomial on |r| <= ln 2 / 2, times 2^n made as two powers of two (n may be 128 or -150).  The
 * coefficients are the classic minimax ones for this reduction (as in the Cephes library's expf).
 * tanh: for |x| < 0.625 an odd polynomial (Cephes' tanhf coefficients), where 1 - 2 / (e^2x + 1)
 * would lose digits to cancellation; elsewhere that expression. */
#ifndef EMBER_FAST_MATH_H
#define EMBER_FAST_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float fm_from_bits(int32_t b) {
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static inline int32_t fm_bits(float f) {
    int32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

/* A loop over these functions is compiled for three instruction sets (AVX-512, AVX2, the base
 * one) and the best the CPU has is picked when the module loads (GCC on x86-64 Linux; elsewhere
 * one build).  Without FMA instructions fmaf is a library call, which keeps the loops scalar and
 * ~10x slower than numpy's: callers ask fm_fast() first and leave such CPUs to numpy. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define FM_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
static inline int fm_fast(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
#elif defined(__x86_64__) && !defined(__FMA__)
#define FM_CLONES
static inline int fm_fast(void) { return 0; }
#else
#define FM_CLONES
static inline int fm_fast(void) { return 1; } /* FMA in the base instruction set (AArch64) or built in */
#endif

/* e^x */
static inline float exp_f32(float x) {
    const float hi = 88.72283935546875f;   /* above: +inf */
    const float lo = -103.97208404541016f; /* below: 0 */
    const float shifter = 12582912.0f;     /* 1.5 * 2^23: adding it rounds a float to an integer */
    float xc = x < lo ? lo : (x > hi ? hi : x);
    float t = xc * 1.44269504088896341f + shifter;
    int32_t n = fm_bits(t) - fm_bits(shifter);
    float nf = t - shifter;
    float r = fmaf(nf, -0.693359375f, xc);
    r = fmaf(nf, 2.12194440e-4f, r);
    float p = 1.9875691500e-4f;
    p = fmaf(p, r, 1.3981999507e-3f);
    p = fmaf(p, r, 8.3334519073e-3f);
    p = fmaf(p, r, 4.1665795894e-2f);
    p = fmaf(p, r, 1.6666665459e-1f);
    p = fmaf(p, r, 5.0000001201e-1f);
    p = fmaf(p, r * r, r) + 1.0f;
    int32_t n1 = n >> 1, n2 = n - n1; /* each in [-75, 64]: a normal power of two */
    float y = p * fm_from_bits((n1 + 127) << 23) * fm_from_bits((n2 + 127) << 23);
    y = x > hi ? __builtin_inff() : y;
    y = x < lo ? 0.0f : y;
    return x != x ? x : y;
}

/* tanh x */
static inline float tanh_f32(float x) {
    float a = x < 0 ? -x : x;
    float z = x * x;
    float q = fmaf(-5.70498872745e-3f, z, 2.06390887954e-2f);
    q = fmaf(q, z, -5.37397155531e-2f);
    q = fmaf(q, z, 1.33314422036e-1f);
    q = fmaf(q, z, -3.33332819422e-1f);
    float small = fmaf(q * z, x, x);
    float large = 1.0f - 2.0f / (exp_f32(a + a) + 1.0f); /* e^2a = inf gives 1 */
    large = x < 0 ? -large : large;
    float y = a < 0.625f ? small : large;
    return x != x ? x : y;
}

/* 1 / (1 + e^-x) */
static inline float sigmoid_f32(float x) { return 1.0f / (1.0f + exp_f32(-x)); }

#endif
