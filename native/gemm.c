/* The installed BLAS GEMM (gemm.h). */
#include "gemm.h"

#include <limits.h>
#include <stddef.h>

enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 }; /* CBLAS's enumerations */

typedef void (*sgemm64_fn)(int, int, int, int64_t, int64_t, int64_t, float, const float *, int64_t, const float *,
                           int64_t, float, float *, int64_t);
typedef void (*sgemm32_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float, float *,
                           int);

static void *installed;
static int wide;

void ember_gemm_install(void *cblas_sgemm, int ilp64) {
    wide = ilp64 != 0;
    installed = cblas_sgemm;
}

int ember_gemm_ready(void) { return installed != NULL; }

int ember_gemm_fits(int64_t largest) { return installed != NULL && (wide || largest <= INT_MAX); }

void ember_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                 const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    int ta = trans_a ? TRANS : NO_TRANS, tb = trans_b ? TRANS : NO_TRANS;
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
