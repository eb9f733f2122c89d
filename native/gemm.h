/* The BLAS single-precision GEMM, for kernels that interleave products with loops of their own (an
 * LSTM's time steps: a whole sequence in one call, without going back to Python between steps).
 *
 * ember links no BLAS of its own: at import, ember/engine/cpu_team.py installs oneMKL's sequential
 * cblas_sgemm when the optional `mkl` wheel is there (each product then split over the CPU team,
 * thread_pool.h: ~1.4x OpenBLAS on an LSTM step's product on an AVX-512 Xeon), else the cblas_sgemm of
 * the OpenBLAS numpy loaded (whose parallel regions already run on the team).  Without one (numpy on
 * another BLAS) ember_gemm_ready() is 0 and callers keep their numpy code. */
#ifndef EMBER_GEMM_H
#define EMBER_GEMM_H

#include <stdint.h>

/* Installs `cblas_sgemm`, a pointer to a CBLAS sgemm taking 64-bit (ilp64 = 1) or 32-bit integer
 * sizes; NULL uninstalls. */
void ember_gemm_install(void *cblas_sgemm, int ilp64);

/* With `on`, ember_sgemm splits each product large enough over the CPU team (thread_pool.h): for a
 * sequential BLAS (MKL's sequential layer), which would otherwise run on one core.  Install resets it. */
void ember_gemm_split_on_team(int on);

/* 1 while products are split over the team. */
int ember_gemm_splits(void);

/* 1 when a GEMM is installed. */
int ember_gemm_ready(void);

/* 1 when the installed GEMM takes sizes and leading dimensions up to `largest` (a 32-bit BLAS: 2^31 - 1). */
int ember_gemm_fits(int64_t largest);

/* C (m, n) = op(A) op(B) + beta C, row-major, op(X) = X^T where trans_x; A is (m, k) or, transposed,
 * (k, m) with rows lda apart, likewise B and C.  Needs ember_gemm_ready() (sizes beyond 32 bits need
 * an ilp64 BLAS: ember_gemm_fits). */
void ember_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                 const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

/* ember_sgemm, then C[i][j] += bias[j] (bias: n floats; NULL: none), each part of a split product
 * adding to its own block right after computing it (a FullyConnected layer's bias). */
void ember_sgemm_bias(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                      const float *b, int64_t ldb, float beta, float *c, int64_t ldc, const float *bias);

#endif
