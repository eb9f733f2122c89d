/* The BLAS single-precision GEMM, for kernels that interleave products with loops of their own (an
 * LSTM's time steps: a whole sequence in one call, without going back to Python between steps).
 *
 * ember links no BLAS of its own: at import, ember/engine/cpu_team.py finds cblas_sgemm in the
 * OpenBLAS numpy loaded (whose parallel regions already run on the CPU team, thread_pool.h) and
 * installs it here.  Without one (numpy on another BLAS) ember_gemm_ready() is 0 and callers keep
 * their numpy code. */
#ifndef EMBER_GEMM_H
#define EMBER_GEMM_H

#include <stdint.h>

/* Installs `cblas_sgemm`, a pointer to a CBLAS sgemm taking 64-bit (ilp64 = 1) or 32-bit integer
 * sizes; NULL uninstalls. */
void ember_gemm_install(void *cblas_sgemm, int ilp64);

/* 1 when a GEMM is installed. */
int ember_gemm_ready(void);

/* 1 when the installed GEMM takes sizes and leading dimensions up to `largest` (a 32-bit BLAS: 2^31 - 1). */
int ember_gemm_fits(int64_t largest);

/* C (m, n) = op(A) op(B) + beta C, row-major, op(X) = X^T where trans_x; A is (m, k) or, transposed,
 * (k, m) with rows lda apart, likewise B and C.  Needs ember_gemm_ready() (sizes beyond 32 bits need
 * an ilp64 BLAS: ember_gemm_fits). */
void ember_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                 const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

#endif
