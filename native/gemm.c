/* The installed BLAS GEMM (gemm.h). */
#include "gemm.h"

#include <limits.h>
#include <stddef.h>

#include "thread_pool.h"

enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 }; /* CBLAS's enumerations */

typedef void (*sgemm64_fn)(int, int, int, int64_t, int64_t, int64_t, float, const float *, int64_t, const float *,
                           int64_t, float, float *, int64_t);
typedef void (*sgemm32_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float, float *,
                           int);

static void *installed;
static int wide, split;

void ember_gemm_install(void *cblas_sgemm, int ilp64) {
    wide = ilp64 != 0;
    installed = cblas_sgemm;
    split = 0;
}

void ember_gemm_split_on_team(int on) { split = on != 0; }

int ember_gemm_splits(void) { return split; }

int ember_gemm_ready(void) { return installed != NULL; }

int ember_gemm_fits(int64_t largest) { return installed != NULL && (wide || largest <= INT_MAX); }

static void sgemm_whole(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                        const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    if (wide) {
        sgemm64_fn f;
        *(void **)&f = installed;
        f(ROW_MAJOR, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
    } else {
        sgemm32_fn f;
        *(void **)&f = installed;
        f(ROW_MAJOR, ta, tb, (int)m, (int)n, (int)k, 1.0f, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
    }
}

typedef struct {
    int ta, tb, by_rows;
    int64_t m, n, k, lda, ldb, ldc;
    const float *a, *b, *bias;
    float beta, *c;
} gemm_job;

/* c[i][j] += bias[j] for rows [0, rows) and columns [0, cols) (vectorized: -O2's cost model leaves it scalar) */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("tree-vectorize", "vect-cost-model=dynamic")))
#endif
static void add_bias(float *restrict c, int64_t ldc, int64_t rows, int64_t cols, const float *restrict bias) {
    for (int64_t i = 0; i < rows; i++) {
        float *ci = c + i * ldc;
        for (int64_t j = 0; j < cols; j++) ci[j] += bias[j];
    }
}

/* Rows [begin, end) of C (by_rows) or its columns: the matching rows (columns, when transposed) of A
 * or columns (rows) of B. */
static void gemm_part(void *ctx, size_t begin, size_t end, int chunk) {
    (void)chunk;
    const gemm_job *j = ctx;
    int64_t lo = (int64_t)begin, len = (int64_t)(end - begin);
    if (j->by_rows) {
        const float *a = j->a + (j->ta == TRANS ? lo : lo * j->lda);
        sgemm_whole(j->ta, j->tb, len, j->n, j->k, a, j->lda, j->b, j->ldb, j->beta, j->c + lo * j->ldc, j->ldc);
        if (j->bias) add_bias(j->c + lo * j->ldc, j->ldc, len, j->n, j->bias);
    } else {
        const float *b = j->b + (j->tb == TRANS ? lo * j->ldb : lo);
        sgemm_whole(j->ta, j->tb, j->m, len, j->k, j->a, j->lda, b, j->ldb, j->beta, j->c + lo, j->ldc);
        if (j->bias) add_bias(j->c + lo, j->ldc, j->m, len, j->bias + lo);
    }
}

#define SPLIT_MIN_FLOPS (1 << 18) /* below it waking a helper costs more than half the product */

void ember_sgemm_bias(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                      const float *b, int64_t ldb, float beta, float *c, int64_t ldc, const float *bias) {
    int ta = trans_a ? TRANS : NO_TRANS, tb = trans_b ? TRANS : NO_TRANS;
    if (!split || m * n * k < SPLIT_MIN_FLOPS) {
        sgemm_whole(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
        if (bias) add_bias(c, ldc, m, n, bias);
        return;
    }
    /* a sequential BLAS: the team splits the longer side of C, in blocks of 16 (whole vector rows); each
     * part adds the bias to its own block while it is in that core's cache */
    gemm_job j = {.ta = ta, .tb = tb, .by_rows = m >= n, .m = m, .n = n, .k = k, .lda = lda, .ldb = ldb,
                  .ldc = ldc, .a = a, .b = b, .bias = bias, .beta = beta, .c = c};
    ember_parallel_for((size_t)(m >= n ? m : n), 16, 0, gemm_part, &j);
}

void ember_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                 const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    ember_sgemm_bias(trans_a, trans_b, m, n, k, a, lda, b, ldb, beta, c, ldc, NULL);
}
